/* blas.c — opens OpenBLAS on first use (see blas.h). */
#define _GNU_SOURCE

#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stddef.h>

#ifndef CPU_BLAS_SONAME
#define CPU_BLAS_SONAME "libopenblas.so.0"
#endif
#ifndef CPU_BLAS_FILE
#define CPU_BLAS_FILE CPU_BLAS_SONAME
#endif

static pthread_once_t cpu_blas_once = PTHREAD_ONCE_INIT;
static cpu_blas cpu_blas_fns;
static void *cpu_blas_handle;
static atomic_bool cpu_blas_ready;
static pthread_mutex_t cpu_blas_mu = PTHREAD_MUTEX_INITIALIZER;
static int cpu_blas_threads = 1; /* under cpu_blas_mu */
static char cpu_blas_why[512];

static void cpu_blas_open(void)
{
    static const char *const names[] = {CPU_BLAS_SONAME, CPU_BLAS_FILE};
    char first[256] = "";
    for (size_t i = 0; i < sizeof names / sizeof names[0] && cpu_blas_handle == NULL; i++) {
        cpu_blas_handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        const char *err = cpu_blas_handle == NULL ? dlerror() : NULL;
        if (err != NULL && first[0] == '\0')
            snprintf(first, sizeof first, "%s", err);
    }
    if (cpu_blas_handle == NULL) {
        snprintf(cpu_blas_why, sizeof cpu_blas_why, "OpenBLAS cannot be opened: %s", first);
        return;
    }
    cpu_blas f;
    const char *missing = NULL;
#define CPU_BLAS_SYM(field, sym)                                  \
    do {                                                          \
        *(void **)&f.field = dlsym(cpu_blas_handle, sym);         \
        if (f.field == NULL && missing == NULL)                   \
            missing = sym;                                        \
    } while (0)
    CPU_BLAS_SYM(sgemm, "cblas_sgemm");
    CPU_BLAS_SYM(dgemm, "cblas_dgemm");
    CPU_BLAS_SYM(set_num_threads, "openblas_set_num_threads");
    CPU_BLAS_SYM(get_config, "openblas_get_config");
    CPU_BLAS_SYM(get_corename, "openblas_get_corename");
#undef CPU_BLAS_SYM
    if (missing != NULL) {
        snprintf(cpu_blas_why, sizeof cpu_blas_why, "OpenBLAS (%s) has no %s", CPU_BLAS_SONAME,
                 missing);
        dlclose(cpu_blas_handle);
        cpu_blas_handle = NULL;
        return;
    }
    pthread_mutex_lock(&cpu_blas_mu);
    f.set_num_threads(cpu_blas_threads);
    cpu_blas_fns = f;
    atomic_store_explicit(&cpu_blas_ready, true, memory_order_release);
    pthread_mutex_unlock(&cpu_blas_mu);
}

const cpu_blas *cpu_blas_get(const char **why)
{
    pthread_once(&cpu_blas_once, cpu_blas_open);
    if (atomic_load_explicit(&cpu_blas_ready, memory_order_acquire))
        return &cpu_blas_fns;
    if (why != NULL)
        *why = cpu_blas_why;
    return NULL;
}

const cpu_blas *cpu_blas_loaded(void)
{
    return atomic_load_explicit(&cpu_blas_ready, memory_order_acquire) ? &cpu_blas_fns : NULL;
}

void cpu_blas_set_threads(int threads)
{
    pthread_mutex_lock(&cpu_blas_mu);
    cpu_blas_threads = threads;
    const cpu_blas *b = cpu_blas_loaded();
    if (b != NULL)
        b->set_num_threads(threads);
    pthread_mutex_unlock(&cpu_blas_mu);
}

/* The module's image goes at unload; OpenBLAS goes with it. */
__attribute__((destructor)) static void cpu_blas_close(void)
{
    if (cpu_blas_handle != NULL)
        dlclose(cpu_blas_handle);
}
