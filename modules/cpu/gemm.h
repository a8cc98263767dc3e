/* gemm.h — the cpu module's own single-precision GEMM: row-major
 * C = alpha * op(A) * op(B) + beta * C on register-blocked micro-kernels
 * (AVX-512, AVX2+FMA, or portable C, chosen at run time from what the CPU
 * reports), with packing of both operands blocked for the caches.
 *
 * Every call is single-threaded and computes the block it is given: callers
 * split a product over host->parallel_for themselves (by blocks of rows or
 * columns of C) and hand each call its own scratch. Nothing here allocates,
 * keeps state between calls, or starts threads; every function may run on
 * any number of threads at once.
 *
 * A constant operand may be packed once (cpu_gemm_pack_a / cpu_gemm_pack_b,
 * at get_kernel time) into a buffer the caller owns; calls then read it
 * instead of packing it again. A packed operand is addressed in whole
 * panels: a block of rows of a packed A starts at a multiple of
 * cpu_gemm_mr(), a block of columns of a packed B at a multiple of
 * cpu_gemm_nr(). */
#ifndef PL_CPU_GEMM_H
#define PL_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One operand of a product, op(X) of R x S (A: M x K, B: K x N).
 *
 * Plain: DATA is element (0,0) of op(X)'s block, LD the leading dimension
 * of X as stored (row-major) and TRANS whether X is stored transposed
 * (op(X)[r][s] = DATA[s * LD + r]).
 *
 * Packed: PACKED is a buffer made by cpu_gemm_pack_a/_b for the whole
 * operand, PACKED_K the K it was packed with (the call's K must equal it)
 * and FIRST the first row (A) or column (B) of the block this call uses, a
 * multiple of cpu_gemm_mr() (A) or cpu_gemm_nr() (B). DATA, LD and TRANS are
 * then ignored. */
typedef struct cpu_gemm_operand {
    const float *data;
    int64_t ld;
    bool trans;
    const float *packed;
    int64_t packed_k;
    int64_t first;
} cpu_gemm_operand;

/* Rows of one packed panel of A (the micro-kernel's height), and columns
 * of one packed panel of B (its width), for the kernels this CPU runs.
 * Constant for the life of the process. */
int cpu_gemm_mr(void);
int cpu_gemm_nr(void);

/* The name of the micro-kernel this CPU runs ("avx512", "avx2", "c"). */
const char *cpu_gemm_isa(void);

/* Floats of scratch a cpu_gemm call of M x N x K needs when A and B are (or
 * are not) packed: room to pack a block of each operand that is not, at
 * most a fixed bound (about 2.3 MB) whatever M, N and K. K may be 0 (the
 * depth not known: the bound's depth); a call of a deeper K than given
 * would overrun it. (A shallow product's scratch is small: a logistic
 * regression's 64 x 10 x 2 took 80 KB a run, whose free made glibc
 * consolidate its heap.) */
size_t cpu_gemm_scratch_floats(int64_t m, int64_t n, int64_t k, bool a_packed, bool b_packed);

/* What a product may apply to each value of C as it stores it, after the
 * last slice of K: C[i][j] = act(value + row_bias[i] + col_bias[j]). Relu
 * is v > 0 ? v : 0 (NaN becomes 0), Clip min(hi, max(lo, v)) (NaN stays;
 * callers keep lo <= hi). */
typedef enum cpu_gemm_act {
    CPU_GEMM_ACT_NONE = 0,
    CPU_GEMM_ACT_RELU = 1,
    CPU_GEMM_ACT_CLIP = 2
} cpu_gemm_act;

typedef struct cpu_gemm_epilogue {
    const float *row_bias; /* M floats, or NULL */
    const float *col_bias; /* N floats, or NULL */
    cpu_gemm_act act;
    float lo, hi;          /* CPU_GEMM_ACT_CLIP */
} cpu_gemm_epilogue;

/* The dot product of A and B, N floats each, in 16 lanes of partial sums
 * (a loop GCC vectorises without reassociating). */
static inline float cpu_dot16(const float *a, const float *b, int64_t n)
{
    float lane[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int l = 0; l < 16; l++)
            lane[l] += a[i + l] * b[i + l];
    for (int l = 0; i < n; i++, l++)
        lane[l] += a[i] * b[i];
    float v = 0.0f;
    for (int l = 0; l < 16; l++)
        v += lane[l];
    return v;
}

/* C[M x N] (leading dimension LDC) = ALPHA * op(A) * op(B) + BETA * C.
 * BETA 0 writes C without reading it (NaNs there do not propagate); K 0
 * scales C by BETA. SCRATCH holds cpu_gemm_scratch_floats() floats for this
 * call's M, N, K (or 0) and packings, 64-byte aligned, private to the call (NULL when
 * that is 0). Sizes are not checked: the caller vouches for them. */
void cpu_gemm(int64_t m, int64_t n, int64_t k, float alpha, const cpu_gemm_operand *a,
              const cpu_gemm_operand *b, float beta, float *c, int64_t ldc, float *scratch);

/* Whether a product of M rows of A reads B in place whatever its size (one
 * row: a matrix-vector product bound by reading B): a constant B need not
 * be packed for it. */
bool cpu_gemm_m1_in_place(int64_t m);

/* cpu_gemm, then EPI (NULL: none) applied to every value of C as it is
 * stored: C = act(ALPHA * op(A) * op(B) + BETA * C + bias). C is written
 * once, not in a pass of its own. */
void cpu_gemm_ex(int64_t m, int64_t n, int64_t k, float alpha, const cpu_gemm_operand *a,
                 const cpu_gemm_operand *b, float beta, float *c, int64_t ldc, float *scratch,
                 const cpu_gemm_epilogue *epi);

/* Floats of the buffer that packs an M x K op(A) (or a K x N op(B)). */
size_t cpu_gemm_packed_a_floats(int64_t m, int64_t k);
size_t cpu_gemm_packed_b_floats(int64_t k, int64_t n);

/* Packs op(A), M x K (A stored with leading dimension LDA, transposed when
 * TRANS), into OUT of cpu_gemm_packed_a_floats(M, K) floats, 64-byte
 * aligned, denormal values flushed to zeros of their sign (a multiply by
 * one costs a microcode assist; see gemm.c). The caller owns OUT; it is
 * read-only for the calls that use it. */
void cpu_gemm_pack_a(int64_t m, int64_t k, const float *a, int64_t lda, bool trans, float *out);

/* The same for op(B), K x N, into cpu_gemm_packed_b_floats(K, N) floats. */
void cpu_gemm_pack_b(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans, float *out);

#endif
