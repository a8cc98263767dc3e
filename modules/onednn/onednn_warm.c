/* onednn_warm.c — oneDNN's JIT GEMM kernels generated in the background
 * (onednn.h: odnn_gemm_warm_start).
 *
 * Why: the gemm:jit implementations (matmuls whose operands are permuted
 * views, as a transformer's attention products are, which brgemm does not
 * take; gemm inner products; im2col convolutions) share one set of
 * kernels that oneDNN generates the first time any of them runs in the
 * process: 24 ms on this machine, which was all of a first run's excess (a
 * first BERT or YOLO11 run 30-45 ms against 4-10 after). Made during the
 * compile instead, in a thread of its own, the generation overlaps the rest
 * of session creation (from the first step that runs on gemm:jit, not
 * before: a session that never runs it would pay in its first runs); a
 * run that comes sooner waits for it inside oneDNN, as it waited for its
 * own generation before. The thread is joined when the compile that
 * started it returns (onednn_compiled), so no thread of the module is in
 * oneDNN once the call is over: an application that exit()s with its
 * runtime alive ran oneDNN's static destructors while the thread still
 * generated, and crashed (SIGSEGV or a heap check's abort, 30 of 30
 * processes with timm's coat_lite_tiny; the generation then overlaps the
 * rest of that compile only: levit_128s' session 35-55 -> 64-73 ms, its
 * first run no slower). Also when a context shuts down, when the process
 * exits, and before a fork (a child must not inherit the locks it
 * holds). */
#define _GNU_SOURCE /* pthread_setname_np */
#include "onednn.h"

#include <pthread.h>
#include <string.h>

static pthread_mutex_t odnn_warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t odnn_warm_thread;
static int odnn_warm_state; /* 0: not started; 1: running or done, not joined; 2: joined */

static void *odnn_warm_main(void *arg)
{
    (void)arg;
    /* an 8x8x8 product: one thread, every kernel of the driver generated */
    float a[64] = {0}, b[64] = {0}, y[64];
    dnnl_sgemm('N', 'N', 8, 8, 8, 1.0f, a, 8, b, 8, 0.0f, y, 8);
    return NULL;
}

/* A fork waits for the thread: a child forked while it ran inherited
 * whatever lock it held at that instant (oneDNN's, or the dynamic loader's
 * while its first kernel dlopens the profiling collector) with no thread
 * left to release it, and its exit() could hang there (onednn.gemm_warm's
 * child, once in a CI run on an AVX2 EPYC). The generation takes tens of
 * milliseconds, once a process. */
static void odnn_warm_before_fork(void)
{
    odnn_gemm_warm_join();
}

/* The child has no such thread: nothing to join at its exit (waiting on
 * the parent's thread would never end). */
static void odnn_warm_forked(void)
{
    pthread_mutex_init(&odnn_warm_lock, NULL);
    odnn_warm_state = 2;
}

int odnn_gemm_warm_start(void)
{
    if (__atomic_load_n(&odnn_warm_state, __ATOMIC_ACQUIRE) != 0)
        return 0;
    int started = 0;
    pthread_mutex_lock(&odnn_warm_lock);
    if (odnn_warm_state == 0) {
        if (pthread_atfork(odnn_warm_before_fork, NULL, odnn_warm_forked) == 0 &&
            pthread_create(&odnn_warm_thread, NULL, odnn_warm_main, NULL) == 0) {
            pthread_setname_np(odnn_warm_thread, "pl-onednn-warm");
            __atomic_store_n(&odnn_warm_state, 1, __ATOMIC_RELEASE);
            started = 1;
        } else {
            __atomic_store_n(&odnn_warm_state, 2, __ATOMIC_RELEASE); /* the first run generates them */
        }
    }
    pthread_mutex_unlock(&odnn_warm_lock);
    return started;
}

int odnn_gemm_warm_impl(const char *impl)
{
    return impl != NULL && strncmp(impl, "gemm:jit", 8) == 0;
}

/* Joined when a context shuts down, before the core unloads the module:
 * not in the module's destructor, which dlclose runs holding the dynamic
 * loader's lock while the thread may still want it (oneDNN's first JIT
 * kernel opens its profiling collector, libJitPI.so, with dlopen: a
 * runtime destroyed right after its first session hung in both threads'
 * waits on an AVX2 EPYC, 14 of 20 times). The destructor still joins a
 * thread left running at process exit, where the loader calls
 * destructors without that lock. */
void odnn_gemm_warm_join(void)
{
    pthread_mutex_lock(&odnn_warm_lock);
    if (odnn_warm_state == 1) {
        pthread_join(odnn_warm_thread, NULL);
        odnn_warm_state = 2;
    }
    pthread_mutex_unlock(&odnn_warm_lock);
}

__attribute__((destructor)) static void odnn_gemm_warm_at_exit(void)
{
    odnn_gemm_warm_join();
}
