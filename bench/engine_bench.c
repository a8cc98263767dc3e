/* engine_bench.c — the dependency engine's costs (core/src/engine.c): the
 * overhead of one operation in a chain on one variable and among independent
 * operations, and how two threads scale real work compared with one. A
 * program, not a test; linked against the core's object library.
 *
 * Usage: engine_bench [--threads N] [--spin-us N] [--json]
 *   (a) chain: 100,000 empty ops all writing one variable, pushed, then
 *       wait_all; ns per op = total / 100,000.
 *   (b) independent: 100,000 empty ops, each writing its own variable from a
 *       pre-made array; ns per op likewise.
 *   (c) 1,000 ops of about 50 us of arithmetic on independent variables, on a
 *       one-thread and a two-thread engine: speedup = t1 / t2.
 *   (d) kernels: 2,000 ops in a chain on one variable, each a parallel_for
 *       of 8 chunks of about 5 us (a model's kernels, one after the other);
 *       us per kernel = total / 2,000.
 * (a), (b) and (d) use the threaded engine with --threads threads (default
 * 2). Idle pool threads spin --spin-us microseconds before sleeping (default
 * 100, backend.ini's default; 0 = sleep at once). Each figure is the median
 * of 5 repetitions. The last line is
 *   engine: chain_ns_per_op=<n> independent_ns_per_op=<n> speedup_2t=<x>
 *           kernel_us=<x>
 * (one line) and --json prints the same figures as one JSON object on the
 * line before. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "status.h"

enum { REPS = 5, N_EMPTY = 100000, N_WORK = 1000, N_KERNELS = 2000,
       KERNEL_CHUNKS = 8 };
#define WORK_US 50.0

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die_on(pl_status *st, const char *what)
{
    if (st != NULL) {
        fprintf(stderr, "engine_bench: %s: %s\n", what, pl_status_message(st));
        exit(1);
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int spin_us = PL_THREADPOOL_SPIN_US_DEFAULT;

static pl_engine *make_engine(int threads)
{
    pl_engine_options o = {.kind = PL_ENGINE_THREADED, .threads = threads,
                           .logger = NULL, .spin_us = spin_us};
    pl_engine *e = NULL;
    die_on(pl_engine_create(&o, &e), "pl_engine_create");
    return e;
}

static const pl_exec_ctx CPU = {PL_EXEC_CPU, 0, 0, NULL};

static pl_status *empty_fn(void *arg, const pl_run_context *rc)
{
    (void)arg;
    (void)rc;
    return NULL;
}

/* ---- real work: a calibrated arithmetic loop --------------------------- */

static volatile uint64_t sink;
static uint64_t work_iters = 1000;

static uint64_t busy(uint64_t iters, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        x ^= x >> 29;
    }
    return x;
}

/* Sets work_iters so that busy() takes about WORK_US microseconds. */
static void calibrate(void)
{
    uint64_t iters = 1000;
    for (;;) {
        double t0 = now_s();
        sink = busy(iters, 1);
        double dt = now_s() - t0;
        if (dt > 0.02 || iters > (1ull << 40)) {
            double per = dt / (double)iters;
            double runs[REPS];
            uint64_t guess = (uint64_t)(WORK_US * 1e-6 / per);
            if (guess == 0)
                guess = 1;
            for (int r = 0; r < REPS; r++) {
                t0 = now_s();
                for (int k = 0; k < 100; k++)
                    sink = busy(guess, (uint64_t)k);
                runs[r] = (now_s() - t0) / 100;
            }
            double m = median(runs, REPS);
            work_iters = (uint64_t)((double)guess * (WORK_US * 1e-6) / m);
            if (work_iters == 0)
                work_iters = 1;
            return;
        }
        iters *= 4;
    }
}

typedef struct work_arg {
    uint64_t seed;
    uint64_t out;
} work_arg;

static pl_status *work_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    work_arg *w = arg;
    w->out = busy(work_iters, w->seed);
    return NULL;
}

/* One kernel: a parallel_for of KERNEL_CHUNKS chunks of WORK_US / 10. */
typedef struct kernel_arg {
    pl_threadpool *pool;
    uint64_t out[KERNEL_CHUNKS];
} kernel_arg;

static void kernel_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    kernel_arg *k = arg;
    for (size_t i = begin; i < end; i++)
        k->out[i] = busy(work_iters / 10, (uint64_t)i);
}

static pl_status *kernel_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    kernel_arg *k = arg;
    pl_threadpool_parallel_for(k->pool, KERNEL_CHUNKS, 1, kernel_chunk, k);
    return NULL;
}

/* ---- the measurements -------------------------------------------------- */

static double run_chain(pl_engine *e)
{
    pl_var *v = pl_engine_new_var(e);
    if (v == NULL)
        die_on(pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory"), "new_var");
    double t0 = now_s();
    for (int i = 0; i < N_EMPTY; i++)
        die_on(pl_engine_push(e, empty_fn, NULL, CPU, NULL, 0, &v, 1, 0, "chain"),
               "push");
    die_on(pl_engine_wait_all(e), "wait_all");
    double dt = now_s() - t0;
    pl_engine_delete_var(e, v);
    die_on(pl_engine_wait_all(e), "wait_all");
    return dt;
}

static double run_independent(pl_engine *e, pl_var **vars)
{
    for (int i = 0; i < N_EMPTY; i++) {
        vars[i] = pl_engine_new_var(e);
        if (vars[i] == NULL)
            die_on(pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory"),
                   "new_var");
    }
    double t0 = now_s();
    for (int i = 0; i < N_EMPTY; i++)
        die_on(pl_engine_push(e, empty_fn, NULL, CPU, NULL, 0, &vars[i], 1, 0,
                              "independent"), "push");
    die_on(pl_engine_wait_all(e), "wait_all");
    double dt = now_s() - t0;
    for (int i = 0; i < N_EMPTY; i++)
        pl_engine_delete_var(e, vars[i]);
    die_on(pl_engine_wait_all(e), "wait_all");
    return dt;
}

static double run_work(pl_engine *e, pl_var **vars, work_arg *args)
{
    for (int i = 0; i < N_WORK; i++) {
        args[i].seed = (uint64_t)i;
        vars[i] = pl_engine_new_var(e);
        if (vars[i] == NULL)
            die_on(pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory"),
                   "new_var");
    }
    double t0 = now_s();
    for (int i = 0; i < N_WORK; i++)
        die_on(pl_engine_push(e, work_fn, &args[i], CPU, NULL, 0, &vars[i], 1, 0,
                              "work"), "push");
    die_on(pl_engine_wait_all(e), "wait_all");
    double dt = now_s() - t0;
    for (int i = 0; i < N_WORK; i++)
        pl_engine_delete_var(e, vars[i]);
    die_on(pl_engine_wait_all(e), "wait_all");
    return dt;
}

static double run_kernels(pl_engine *e)
{
    pl_var *v = pl_engine_new_var(e);
    if (v == NULL)
        die_on(pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory"), "new_var");
    kernel_arg k = {.pool = pl_engine_cpu_pool(e)};
    double t0 = now_s();
    for (int i = 0; i < N_KERNELS; i++)
        die_on(pl_engine_push(e, kernel_fn, &k, CPU, NULL, 0, &v, 1, 0,
                              "kernel"), "push");
    die_on(pl_engine_wait_all(e), "wait_all");
    double dt = now_s() - t0;
    pl_engine_delete_var(e, v);
    die_on(pl_engine_wait_all(e), "wait_all");
    return dt;
}

int main(int argc, char **argv)
{
    int threads = 2;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            char *end = NULL;
            long t = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || t < 1 || t > 1024) {
                fprintf(stderr, "engine_bench: --threads wants 1..1024\n");
                return 2;
            }
            threads = (int)t;
        } else if (strcmp(argv[i], "--spin-us") == 0 && i + 1 < argc) {
            char *end = NULL;
            long t = strtol(argv[++i], &end, 10);
            if (end == argv[i] || *end != '\0' || t < 0 ||
                t > PL_THREADPOOL_SPIN_US_MAX) {
                fprintf(stderr, "engine_bench: --spin-us wants 0..%d\n",
                        PL_THREADPOOL_SPIN_US_MAX);
                return 2;
            }
            spin_us = (int)t;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--spin-us N] [--json]\n",
                    argv[0]);
            return 2;
        }
    }

    pl_var **vars = malloc(N_EMPTY * sizeof *vars);
    work_arg *args = calloc(N_WORK, sizeof *args);
    if (vars == NULL || args == NULL) {
        fprintf(stderr, "engine_bench: out of memory\n");
        return 1;
    }

    double chain[REPS], indep[REPS], t1[REPS], t2[REPS], kern[REPS];
    pl_engine *e = make_engine(threads);
    run_chain(e); /* warm-up */
    for (int r = 0; r < REPS; r++)
        chain[r] = run_chain(e);
    run_independent(e, vars);
    for (int r = 0; r < REPS; r++)
        indep[r] = run_independent(e, vars);
    pl_engine_destroy(e);

    calibrate();
    pl_engine *e1 = make_engine(1), *e2 = make_engine(2);
    run_work(e1, vars, args);
    run_work(e2, vars, args);
    for (int r = 0; r < REPS; r++) {
        t1[r] = run_work(e1, vars, args);
        t2[r] = run_work(e2, vars, args);
    }
    pl_engine_destroy(e1);
    pl_engine_destroy(e2);

    e = make_engine(threads);
    run_kernels(e); /* warm-up */
    for (int r = 0; r < REPS; r++)
        kern[r] = run_kernels(e);
    pl_engine_destroy(e);

    double chain_s = median(chain, REPS), indep_s = median(indep, REPS);
    double t1_s = median(t1, REPS), t2_s = median(t2, REPS);
    long long chain_ns = (long long)(chain_s * 1e9 / N_EMPTY + 0.5);
    long long indep_ns = (long long)(indep_s * 1e9 / N_EMPTY + 0.5);
    double speedup = t1_s / t2_s;
    double kernel_us = median(kern, REPS) * 1e6 / N_KERNELS;

    printf("spin_us %d\n", spin_us);
    printf("(a) chain of %d empty ops on one var, %d threads: %.3f ms, "
           "%lld ns/op\n", N_EMPTY, threads, chain_s * 1e3, chain_ns);
    printf("(b) %d independent empty ops, %d threads: %.3f ms, %lld ns/op\n",
           N_EMPTY, threads, indep_s * 1e3, indep_ns);
    printf("(c) %d ops of %.0f us work (%llu iterations): 1 thread %.3f ms, "
           "2 threads %.3f ms, speedup %.2f\n", N_WORK, WORK_US,
           (unsigned long long)work_iters, t1_s * 1e3, t2_s * 1e3, speedup);
    printf("(d) %d kernels of %d x %.0f us in a chain, %d threads: %.2f us "
           "per kernel\n", N_KERNELS, KERNEL_CHUNKS, WORK_US / 10, threads,
           kernel_us);
    if (json)
        printf("{\"threads\": %d, \"spin_us\": %d, \"chain_ns_per_op\": "
               "%lld, \"independent_ns_per_op\": %lld, \"work_us\": %.0f, "
               "\"work_1t_ms\": %.3f, \"work_2t_ms\": %.3f, "
               "\"speedup_2t\": %.2f, \"kernel_us\": %.2f, "
               "\"repetitions\": %d}\n",
               threads, spin_us, chain_ns, indep_ns, WORK_US, t1_s * 1e3,
               t2_s * 1e3, speedup, kernel_us, REPS);
    printf("engine: chain_ns_per_op=%lld independent_ns_per_op=%lld "
           "speedup_2t=%.2f kernel_us=%.2f\n", chain_ns, indep_ns, speedup,
           kernel_us);
    free(args);
    free(vars);
    return 0;
}
