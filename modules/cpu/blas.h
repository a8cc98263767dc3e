/* blas.h — OpenBLAS, opened when a kernel first needs it.
 *
 * The module's own SGEMM (gemm.c) runs every f32 product by default, so
 * most processes never call OpenBLAS; yet linking it made every runtime pay
 * for loading it (4-5 ms of relocation and start-up on the project's 2-core
 * machines) and for the thread it starts and spins on sched_yield while
 * sessions are made. The module therefore does not link it: the first f64
 * MatMul/Gemm kernel, Einsum product or `blas_threads = pool` opens it
 * (dlopen of the soname CMake found, then of the file) and looks up the
 * functions below. A machine without it runs everything else and says why
 * those kernels are refused. */
#ifndef PLINTH_CPU_BLAS_H
#define PLINTH_CPU_BLAS_H

#include <stdbool.h>

#include <cblas.h>

typedef struct cpu_blas {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(cblas_dgemm) *dgemm;
    __typeof__(openblas_set_num_threads) *set_num_threads;
    __typeof__(openblas_get_config) *get_config;
    __typeof__(openblas_get_corename) *get_corename;
} cpu_blas;

/* The functions, opening OpenBLAS on the first call (once per process;
 * thread-safe). NULL when it cannot be opened; *WHY (may be NULL) then
 * says why, in static storage. */
const cpu_blas *cpu_blas_get(const char **why);

/* The already opened functions, or NULL: never opens anything. */
const cpu_blas *cpu_blas_loaded(void);

/* OpenBLAS's own thread count (process-wide): applied now when it is open,
 * else when it opens. */
void cpu_blas_set_threads(int threads);

#endif
