/* gemm.c — the cpu module's SGEMM (see gemm.h): the classic layered design
 * of packed-operand GEMMs. C is cut into blocks of NC columns, K into
 * slices of KC, and each slice of op(B) (KC x NC) is packed into panels of
 * NR columns that stay in L3 / L2; each block of MC rows of op(A) is packed
 * into panels of MR rows that stay in L2; a micro-kernel then multiplies
 * one MR x KC panel of A by one KC x NR panel of B (the B panel stays in L1
 * while the A panels stream past it), keeping the MR x NR block of C in
 * registers and touching C once per slice.
 *
 * The micro-kernels come in three builds, picked once per process from
 * what the CPU reports (the module is built without -march): AVX-512
 * (12 x 32), AVX2+FMA (6 x 16) and portable C (4 x 16). Each is
 * instantiated for every panel height 1..MR so that the last rows of C cost
 * no more than they compute; the last columns go through a tile on the
 * stack. Panels kept for many products (cpu_gemm_pack_a, cpu_gemm_pack_b)
 * are zero-padded to full MR / NR; A packed for one product is not (its
 * kernels read only its rows), and a single row of A is read in place
 * (isa->vec). */
#include "gemm.h"

#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define GEMM_X86 1
#endif

/* Cache blocking: a KC x NR panel of B (16 KiB at NR 32: half of a 32 KiB
 * L1, so the A panels streaming past do not evict it — KC 256 filled L1
 * and ran 64x3136x576 at 94 GFLOP/s against 106 here) sits in L1 while
 * MC x KC of A (120 KiB) stays in L2; KC x NC of B stays in L3. MC is a
 * multiple of every MR. With AVX-512 and an L1 of 48 KiB or more
 * (Sapphire Rapids, Zen 4/5), KC is GEMM_KC_WIDE (gemm_kc): its 32 KiB panel
 * leaves room for A's, and C is read and written a pass of K half as
 * often: a transformer's products on two threads 256x768x3072 3.29 ->
 * 2.94-3.06 ms, 128x3072x768 1.91 -> 1.68-1.70 (ONNX Runtime 2.66, 1.40),
 * 3x3 convolutions alike or up to 6% faster. */
#define GEMM_KC 128
#define GEMM_KC_WIDE 256
#define GEMM_KC_WIDE_L1 (48 * 1024)
#define GEMM_MC 240
#define GEMM_NC 2048
/* The largest MR and NR of any build. */
#define GEMM_MAX_MR 12
#define GEMM_MAX_NR 32
/* B is read in place, not packed, when A has at most this many rows:
 * packing B pays off only over many rows of A (one thread, KC 128:
 * 128x784x1152 103 GFLOP/s in place against 93 packed; 256x196x2304 85
 * against 90). */
#ifndef GEMM_DIRECT_MAX_M
#define GEMM_DIRECT_MAX_M 160
#endif

/* C[R x NR] (leading dimension LDC) = ALPHA * Ap * Bp + BETA * C for one
 * panel of A (R rows used, MR per step) and one of B over KC steps (LDB
 * floats between two steps of B: NR when packed, B's own leading dimension
 * when read in place); only the first COLS (1..NR) columns of C are read and
 * written (masked vector stores); BETA 0 does not read C. EPI, when not
 * NULL (the last
 * slice of K), adds its row bias (already at the tile's first row) and
 * column bias (at its first column) and applies its activation before the
 * store. */
typedef void (*gemm_kernel_fn)(int64_t kc, const float *a, const float *b, int64_t ldb,
                               float *c, int64_t ldc, int cols, float alpha, float beta,
                               const cpu_gemm_epilogue *epi);

typedef struct gemm_isa {
    const char *name;
    int mr, nr;
    gemm_kernel_fn kernel[GEMM_MAX_MR + 1]; /* by rows used, 1..mr */
    /* One row of C from a row of A read in place (A's K values contiguous,
     * not a packed panel): the product of a vector (a dense layer at batch
     * 1), whose packing would write MR times the row, mostly zeros (half
     * of a 1x1536 by 1536x128 layer's time). NULL: pack as for any M. */
    gemm_kernel_fn vec;
} gemm_isa;

/* ---- portable C: 4 x 16 ------------------------------------------------ */

#define GEMM_C_MR 4
#define GEMM_C_NR 16

/* The epilogue of one value V of row I, column J (the scalar reference the
 * vector kernels match: Relu is V > 0 ? V : 0, Clip min(hi, max(lo, V))
 * with NaN kept). */
static inline float gemm_epi_scalar(const cpu_gemm_epilogue *e, float v, int64_t i, int64_t j)
{
    if (e->row_bias != NULL)
        v += e->row_bias[i];
    if (e->col_bias != NULL)
        v += e->col_bias[j];
    if (e->act == CPU_GEMM_ACT_RELU)
        v = v > 0.0f ? v : 0.0f;
    else if (e->act == CPU_GEMM_ACT_CLIP)
        v = v < e->lo ? e->lo : (v > e->hi ? e->hi : v);
    return v;
}

static inline void gemm_kc_body(const int rows, int64_t kc, const float *a, const float *b,
                                int64_t ldb, float *c, int64_t ldc, int cols, float alpha,
                                float beta, const cpu_gemm_epilogue *epi)
{
    float acc[GEMM_C_MR][GEMM_C_NR] = {{0}};
    for (int64_t p = 0; p < kc; p++, a += GEMM_C_MR, b += ldb)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < GEMM_C_NR; j++)
                acc[i][j] += a[i] * b[j];
    for (int i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        for (int j = 0; j < cols; j++) {
            float v = beta == 0.0f ? alpha * acc[i][j] : alpha * acc[i][j] + beta * ci[j];
            ci[j] = epi != NULL ? gemm_epi_scalar(epi, v, i, j) : v;
        }
    }
}

#define GEMM_KC_ROWS(R)                                                                     \
    static void gemm_kc_##R(int64_t kc, const float *a, const float *b, int64_t ldb,        \
                            float *c, int64_t ldc, int cols, float alpha, float beta,       \
                            const cpu_gemm_epilogue *epi)                                   \
    {                                                                                       \
        gemm_kc_body(R, kc, a, b, ldb, c, ldc, cols, alpha, beta, epi);                     \
    }
GEMM_KC_ROWS(1)
GEMM_KC_ROWS(2)
GEMM_KC_ROWS(3)
GEMM_KC_ROWS(4)

static const gemm_isa gemm_isa_c = {
    "c", GEMM_C_MR, GEMM_C_NR, {NULL, gemm_kc_1, gemm_kc_2, gemm_kc_3, gemm_kc_4}, NULL};

#ifdef GEMM_X86

/* ---- AVX2 + FMA: 6 x 16 ------------------------------------------------- */

#define GEMM_K2_MR 6

/* The epilogue on 8 values of row I (VB: the column bias, loaded once). */
__attribute__((always_inline, target("avx2,fma"))) static inline __m256
gemm_k2_epi(const cpu_gemm_epilogue *e, __m256 v, int i, __m256 vb)
{
    if (e->row_bias != NULL)
        v = _mm256_add_ps(v, _mm256_set1_ps(e->row_bias[i]));
    if (e->col_bias != NULL)
        v = _mm256_add_ps(v, vb);
    if (e->act == CPU_GEMM_ACT_RELU)
        v = _mm256_max_ps(v, _mm256_setzero_ps()); /* NaN -> 0, as Relu */
    else if (e->act == CPU_GEMM_ACT_CLIP)
        v = _mm256_min_ps(_mm256_set1_ps(e->hi), _mm256_max_ps(_mm256_set1_ps(e->lo), v));
    return v;
}

/* C's ROWS rows of up to 16 columns from the sums C0, C1: times alpha,
 * plus beta times C, the epilogue, stored. */
__attribute__((always_inline, target("avx2,fma"))) static inline void
gemm_k2_store(const int rows, const __m256 *c0, const __m256 *c1, float *c, int64_t ldc,
              int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
    const bool full = cols == 16;
    __m256 cb0 = _mm256_setzero_ps(), cb1 = _mm256_setzero_ps();
    if (epi != NULL && epi->col_bias != NULL) {
        cb0 = _mm256_maskload_ps(epi->col_bias, m0);
        cb1 = _mm256_maskload_ps(epi->col_bias + 8, m1);
    }
#pragma GCC unroll 6
    for (int i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        __m256 r0 = _mm256_mul_ps(c0[i], va), r1 = _mm256_mul_ps(c1[i], va);
        if (beta != 0.0f) {
            r0 = _mm256_fmadd_ps(vb, full ? _mm256_loadu_ps(ci) : _mm256_maskload_ps(ci, m0), r0);
            r1 = _mm256_fmadd_ps(vb, full ? _mm256_loadu_ps(ci + 8)
                                          : _mm256_maskload_ps(ci + 8, m1), r1);
        }
        if (epi != NULL) {
            r0 = gemm_k2_epi(epi, r0, i, cb0);
            r1 = gemm_k2_epi(epi, r1, i, cb1);
        }
        if (full) {
            _mm256_storeu_ps(ci, r0);
            _mm256_storeu_ps(ci + 8, r1);
        } else {
            _mm256_maskstore_ps(ci, m0, r0);
            _mm256_maskstore_ps(ci + 8, m1, r1);
        }
    }
}

__attribute__((always_inline, target("avx2,fma"))) static inline void
gemm_k2_body(const int rows, int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
             int64_t ldc, int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m256 c0[GEMM_K2_MR], c1[GEMM_K2_MR];
#pragma GCC unroll 6
    for (int i = 0; i < rows; i++) {
        c0[i] = _mm256_setzero_ps();
        c1[i] = _mm256_setzero_ps();
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 15), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; p++, a += GEMM_K2_MR, b += ldb) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int i = 0; i < rows; i++) {
            __m256 ai = _mm256_broadcast_ss(a + i);
            c0[i] = _mm256_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm256_fmadd_ps(ai, b1, c1[i]);
        }
    }
    gemm_k2_store(rows, c0, c1, c, ldc, cols, alpha, beta, epi);
}

/* isa->vec: one row, A contiguous; four steps of K at a time into
 * separate sums, so that the FMAs do not wait on each other. */
__attribute__((target("avx2,fma"))) static void
gemm_k2_vec(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc,
            int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m256 s0[4], s1[4];
    for (int u = 0; u < 4; u++)
        s0[u] = s1[u] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, b += 4 * ldb)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m256 ai = _mm256_broadcast_ss(a + p + u);
            s0[u] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b + u * ldb), s0[u]);
            s1[u] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b + u * ldb + 8), s1[u]);
        }
    for (; p < kc; p++, b += ldb) {
        __m256 ai = _mm256_broadcast_ss(a + p);
        s0[0] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b), s0[0]);
        s1[0] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b + 8), s1[0]);
    }
    __m256 c0 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), _mm256_add_ps(s0[2], s0[3]));
    __m256 c1 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), _mm256_add_ps(s1[2], s1[3]));
    gemm_k2_store(1, &c0, &c1, c, ldc, cols, alpha, beta, epi);
}

/* One row (a matrix-vector product: an LSTM's recurrence at batch 1):
 * gemm_k2_body's two sums were two chains of dependent FMAs, one step of
 * K per FMA latency (1 x 256 x 512 at 38 GB/s of B from L2 on an AMD EPYC
 * with AVX2); here four steps of K are in flight, their sums added at the
 * end. */
__attribute__((target("avx2,fma"))) static void gemm_k2_1(int64_t kc, const float *a,
                                                         const float *b, int64_t ldb, float *c,
                                                         int64_t ldc, int cols, float alpha,
                                                         float beta,
                                                         const cpu_gemm_epilogue *epi)
{
    __m256 s0[4], s1[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++)
        s0[u] = s1[u] = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            const float *bp = b + (p + u) * ldb;
            _mm_prefetch((const char *)(bp + 8 * ldb), _MM_HINT_T0);
            __m256 ai = _mm256_broadcast_ss(a + (p + u) * GEMM_K2_MR);
            s0[u] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(bp), s0[u]);
            s1[u] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(bp + 8), s1[u]);
        }
    for (; p < kc; p++) {
        __m256 ai = _mm256_broadcast_ss(a + p * GEMM_K2_MR);
        s0[0] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b + p * ldb), s0[0]);
        s1[0] = _mm256_fmadd_ps(ai, _mm256_loadu_ps(b + p * ldb + 8), s1[0]);
    }
    __m256 c0 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), _mm256_add_ps(s0[2], s0[3]));
    __m256 c1 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), _mm256_add_ps(s1[2], s1[3]));
    gemm_k2_store(1, &c0, &c1, c, ldc, cols, alpha, beta, epi);
}

#define GEMM_K2_ROWS(R)                                                                     \
    __attribute__((target("avx2,fma"))) static void gemm_k2_##R(                           \
        int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc,     \
        int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)                    \
    {                                                                                       \
        gemm_k2_body(R, kc, a, b, ldb, c, ldc, cols, alpha, beta, epi);                     \
    }
GEMM_K2_ROWS(2)
GEMM_K2_ROWS(3)
GEMM_K2_ROWS(4)
GEMM_K2_ROWS(5)
GEMM_K2_ROWS(6)

static const gemm_isa gemm_isa_avx2 = {
    "avx2",
    GEMM_K2_MR,
    16,
    {NULL, gemm_k2_1, gemm_k2_2, gemm_k2_3, gemm_k2_4, gemm_k2_5, gemm_k2_6},
    gemm_k2_vec};

/* ---- AVX-512: 12 x 32 ---------------------------------------------------- */

#define GEMM_K5_MR 12

__attribute__((always_inline, target("avx512f"))) static inline __m512
gemm_k5_epi(const cpu_gemm_epilogue *e, __m512 v, int i, __m512 vb)
{
    if (e->row_bias != NULL)
        v = _mm512_add_ps(v, _mm512_set1_ps(e->row_bias[i]));
    if (e->col_bias != NULL)
        v = _mm512_add_ps(v, vb);
    if (e->act == CPU_GEMM_ACT_RELU)
        v = _mm512_max_ps(v, _mm512_setzero_ps()); /* NaN -> 0, as Relu */
    else if (e->act == CPU_GEMM_ACT_CLIP)
        v = _mm512_min_ps(_mm512_set1_ps(e->hi), _mm512_max_ps(_mm512_set1_ps(e->lo), v));
    return v;
}

/* C's ROWS rows of up to 32 columns from the sums C0, C1: times alpha,
 * plus beta times C, the epilogue, stored. */
__attribute__((always_inline, target("avx512f"))) static inline void
gemm_k5_store(const int rows, const __m512 *c0, const __m512 *c1, float *c, int64_t ldc,
              int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    const __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1u);
    const __mmask16 m1 = cols >= 32   ? (__mmask16)0xffff
                         : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1u)
                                     : (__mmask16)0;
    __m512 cb0 = _mm512_setzero_ps(), cb1 = _mm512_setzero_ps();
    if (epi != NULL && epi->col_bias != NULL) {
        cb0 = _mm512_maskz_loadu_ps(m0, epi->col_bias);
        cb1 = _mm512_maskz_loadu_ps(m1, epi->col_bias + 16);
    }
#pragma GCC unroll 12
    for (int i = 0; i < rows; i++) {
        float *ci = c + i * ldc;
        __m512 r0 = _mm512_mul_ps(c0[i], va), r1 = _mm512_mul_ps(c1[i], va);
        if (beta != 0.0f) {
            r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, ci), r0);
            r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, ci + 16), r1);
        }
        if (epi != NULL) {
            r0 = gemm_k5_epi(epi, r0, i, cb0);
            r1 = gemm_k5_epi(epi, r1, i, cb1);
        }
        _mm512_mask_storeu_ps(ci, m0, r0);
        _mm512_mask_storeu_ps(ci + 16, m1, r1);
    }
}

__attribute__((always_inline, target("avx512f"))) static inline void
gemm_k5_body(const int rows, int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
             int64_t ldc, int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m512 c0[GEMM_K5_MR], c1[GEMM_K5_MR];
#pragma GCC unroll 12
    for (int i = 0; i < rows; i++) {
        c0[i] = _mm512_setzero_ps();
        c1[i] = _mm512_setzero_ps();
        _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *)(c + i * ldc + 31), _MM_HINT_T0);
    }
    for (int64_t p = 0; p < kc; p++, a += GEMM_K5_MR, b += ldb) {
        __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
#pragma GCC unroll 12
        for (int i = 0; i < rows; i++) {
            __m512 ai = _mm512_set1_ps(a[i]);
            c0[i] = _mm512_fmadd_ps(ai, b0, c0[i]);
            c1[i] = _mm512_fmadd_ps(ai, b1, c1[i]);
        }
    }
    gemm_k5_store(rows, c0, c1, c, ldc, cols, alpha, beta, epi);
}

/* isa->vec: one row, A contiguous; four steps of K at a time into
 * separate sums, so that the FMAs do not wait on each other. */
__attribute__((target("avx512f"))) static void
gemm_k5_vec(int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc,
            int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)
{
    __m512 s0[4], s1[4];
    for (int u = 0; u < 4; u++)
        s0[u] = s1[u] = _mm512_setzero_ps();
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, b += 4 * ldb)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            __m512 ai = _mm512_set1_ps(a[p + u]);
            s0[u] = _mm512_fmadd_ps(ai, _mm512_loadu_ps(b + u * ldb), s0[u]);
            s1[u] = _mm512_fmadd_ps(ai, _mm512_loadu_ps(b + u * ldb + 16), s1[u]);
        }
    for (; p < kc; p++, b += ldb) {
        __m512 ai = _mm512_set1_ps(a[p]);
        s0[0] = _mm512_fmadd_ps(ai, _mm512_loadu_ps(b), s0[0]);
        s1[0] = _mm512_fmadd_ps(ai, _mm512_loadu_ps(b + 16), s1[0]);
    }
    __m512 c0 = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), _mm512_add_ps(s0[2], s0[3]));
    __m512 c1 = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), _mm512_add_ps(s1[2], s1[3]));
    gemm_k5_store(1, &c0, &c1, c, ldc, cols, alpha, beta, epi);
}

#define GEMM_K5_ROWS(R)                                                                     \
    __attribute__((target("avx512f"))) static void gemm_k5_##R(                             \
        int64_t kc, const float *a, const float *b, int64_t ldb, float *c, int64_t ldc,     \
        int cols, float alpha, float beta, const cpu_gemm_epilogue *epi)                    \
    {                                                                                       \
        gemm_k5_body(R, kc, a, b, ldb, c, ldc, cols, alpha, beta, epi);                     \
    }
GEMM_K5_ROWS(1)
GEMM_K5_ROWS(2)
GEMM_K5_ROWS(3)
GEMM_K5_ROWS(4)
GEMM_K5_ROWS(5)
GEMM_K5_ROWS(6)
GEMM_K5_ROWS(7)
GEMM_K5_ROWS(8)
GEMM_K5_ROWS(9)
GEMM_K5_ROWS(10)
GEMM_K5_ROWS(11)
GEMM_K5_ROWS(12)

static const gemm_isa gemm_isa_avx512 = {
    "avx512",
    GEMM_K5_MR,
    32,
    {NULL, gemm_k5_1, gemm_k5_2, gemm_k5_3, gemm_k5_4, gemm_k5_5, gemm_k5_6, gemm_k5_7,
     gemm_k5_8, gemm_k5_9, gemm_k5_10, gemm_k5_11, gemm_k5_12},
    gemm_k5_vec};

#endif /* GEMM_X86 */

static int64_t gemm_kc_cached; /* gemm_kc's answer, set with the ISA */

/* The build this CPU runs, decided once (a benign race: every thread
 * computes the same answer). */
static const gemm_isa *gemm_isa_get(void)
{
    static const gemm_isa *cached;
    const gemm_isa *isa = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (isa != NULL)
        return isa;
    isa = &gemm_isa_c;
#ifdef GEMM_X86
    /* CPU_GEMM_MAX_ISA (tests only): 0 portable C, 1 up to AVX2, 2 all. */
#ifndef CPU_GEMM_MAX_ISA
#define CPU_GEMM_MAX_ISA 2
#endif
    __builtin_cpu_init();
    if (CPU_GEMM_MAX_ISA >= 2 && __builtin_cpu_supports("avx512f")) {
        isa = &gemm_isa_avx512;
#ifdef _SC_LEVEL1_DCACHE_SIZE
        long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        if (l1 >= GEMM_KC_WIDE_L1)
            __atomic_store_n(&gemm_kc_cached, (int64_t)GEMM_KC_WIDE, __ATOMIC_RELAXED);
#endif
    }
    else if (CPU_GEMM_MAX_ISA >= 1 && __builtin_cpu_supports("avx2") &&
             __builtin_cpu_supports("fma"))
        isa = &gemm_isa_avx2;
#endif
    __atomic_store_n(&cached, isa, __ATOMIC_RELEASE);
    return isa;
}

int cpu_gemm_mr(void)
{
    return gemm_isa_get()->mr;
}

int cpu_gemm_nr(void)
{
    return gemm_isa_get()->nr;
}

const char *cpu_gemm_isa(void)
{
    return gemm_isa_get()->name;
}

/* The depth of K a block of the product takes (GEMM_KC; see there). */
static int64_t gemm_kc(void)
{
    (void)gemm_isa_get();
    int64_t kc = __atomic_load_n(&gemm_kc_cached, __ATOMIC_RELAXED);
    return kc > 0 ? kc : GEMM_KC;
}

/* The deepest slice of K a product of depth K packs: gemm_kc(), or K when
 * shallower (K 0 or less: not known, gemm_kc()). */
static int64_t gemm_kc_max(int64_t k)
{
    int64_t kc = gemm_kc();
    return k > 0 && k < kc ? k : kc;
}

/* Floats of the A block of the scratch (then B's): a multiple of 16, so
 * B's block stays 64-byte aligned. */
static size_t gemm_scratch_a(int64_t m, int64_t k, bool a_packed)
{
    int64_t mr = cpu_gemm_mr(), mc = m < GEMM_MC ? (m > 0 ? m : 0) : GEMM_MC;
    if (a_packed)
        return 0;
    return ((size_t)((mc + mr - 1) / mr * mr) * (size_t)gemm_kc_max(k) + 15) / 16 * 16;
}

size_t cpu_gemm_scratch_floats(int64_t m, int64_t n, int64_t k, bool a_packed, bool b_packed)
{
    int64_t nr = cpu_gemm_nr(), nc = n < GEMM_NC ? (n > 0 ? n : 0) : GEMM_NC;
    size_t b = b_packed ? 0 : (size_t)gemm_kc_max(k) * (size_t)((nc + nr - 1) / nr * nr);
    return gemm_scratch_a(m, k, a_packed) + b;
}

/* ---- packing ------------------------------------------------------------- */

/* Packs op(A)[0..rows) x [0..kc) (rows <= MR) into one panel: OUT[p*MR + i];
 * rows past ROWS are zeroed when PAD (a panel kept, whose every byte is
 * read once: cpu_gemm_pack_a), else left as they were (the kernels read
 * only the rows they are told: zeroing them was a third of a 6-row
 * product's time). */
static void gemm_pack_a_panel(int mr, int64_t rows, int64_t kc, const float *a, int64_t lda,
                              bool trans, bool pad, float *out)
{
    const int64_t fill = pad ? mr : rows;
    if (trans) {
        for (int64_t p = 0; p < kc; p++, out += mr) {
            const float *src = a + p * lda;
            int64_t i = 0;
            for (; i < rows; i++)
                out[i] = src[i];
            for (; i < fill; i++)
                out[i] = 0.0f;
        }
        return;
    }
    /* Four k at a time, so each row is read in short runs. */
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, out += 4 * mr) {
        int64_t i = 0;
        for (; i < rows; i++) {
            const float *src = a + i * lda + p;
            out[i] = src[0];
            out[mr + i] = src[1];
            out[2 * mr + i] = src[2];
            out[3 * mr + i] = src[3];
        }
        for (; i < fill; i++)
            out[i] = out[mr + i] = out[2 * mr + i] = out[3 * mr + i] = 0.0f;
    }
    for (; p < kc; p++, out += mr) {
        int64_t i = 0;
        for (; i < rows; i++)
            out[i] = a[i * lda + p];
        for (; i < fill; i++)
            out[i] = 0.0f;
    }
}

/* Packs op(B)[0..kc) x [0..cols) (cols <= NR) into one panel: OUT[p*NR + j],
 * columns past COLS zero. */
static void gemm_pack_b_panel(int nr, int64_t cols, int64_t kc, const float *b, int64_t ldb,
                              bool trans, float *out)
{
    if (!trans) {
        for (int64_t p = 0; p < kc; p++, out += nr) {
            const float *src = b + p * ldb;
            if (cols == nr) {
                memcpy(out, src, (size_t)nr * sizeof(float));
            } else {
                int64_t j = 0;
                for (; j < cols; j++)
                    out[j] = src[j];
                for (; j < nr; j++)
                    out[j] = 0.0f;
            }
        }
        return;
    }
    /* op(B)[p][j] = B[j][p]: read each stored row in runs of 8 k. */
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8, out += 8 * nr) {
        int64_t j = 0;
        for (; j < cols; j++) {
            const float *src = b + j * ldb + p;
            for (int q = 0; q < 8; q++)
                out[q * nr + j] = src[q];
        }
        for (; j < nr; j++)
            for (int q = 0; q < 8; q++)
                out[q * nr + j] = 0.0f;
    }
    for (; p < kc; p++, out += nr) {
        int64_t j = 0;
        for (; j < cols; j++)
            out[j] = b[j * ldb + p];
        for (; j < nr; j++)
            out[j] = 0.0f;
    }
}

/* Packs op(A)[0..m) x [0..kc) into panels of MR rows, PANEL floats apart. */
static void gemm_pack_a_block(int mr, int64_t m, int64_t kc, const float *a, int64_t lda,
                              bool trans, bool pad, float *out, int64_t panel)
{
    for (int64_t i = 0; i < m; i += mr, out += panel) {
        int64_t rows = m - i < mr ? m - i : mr;
        const float *src = trans ? a + i : a + i * lda;
        gemm_pack_a_panel(mr, rows, kc, src, lda, trans, pad, out);
    }
}

static void gemm_pack_b_block(int nr, int64_t kc, int64_t n, const float *b, int64_t ldb,
                              bool trans, float *out, int64_t panel)
{
    for (int64_t j = 0; j < n; j += nr, out += panel) {
        int64_t cols = n - j < nr ? n - j : nr;
        const float *src = trans ? b + j * ldb : b + j;
        gemm_pack_b_panel(nr, cols, kc, src, ldb, trans, out);
    }
}

size_t cpu_gemm_packed_a_floats(int64_t m, int64_t k)
{
    int64_t mr = cpu_gemm_mr();
    return (size_t)((m + mr - 1) / mr * mr) * (size_t)k;
}

size_t cpu_gemm_packed_b_floats(int64_t k, int64_t n)
{
    int64_t nr = cpu_gemm_nr();
    return (size_t)((n + nr - 1) / nr * nr) * (size_t)k;
}

/* Denormal values among N packed floats become zeros of their sign. The
 * whole-operand packers are what kernels call for their weights, and
 * models trained with weight decay keep denormal ones (paddle's PP-OCRv5
 * detector: 63% of one 1x1 convolution's weights), each multiply by which
 * takes a microcode assist: two convolutions of 82 MFLOP took 30 and 13 ms.
 * A denormal weight adds less than 1.2e-38 times its input to a sum. */
static void gemm_flush_denormals(float *v, size_t n)
{
    uint32_t *u = (uint32_t *)(void *)v;
    for (size_t i = 0; i < n; i++)
        u[i] = (u[i] & 0x7f800000u) != 0 ? u[i] : (u[i] & 0x80000000u);
}

/* A whole packed operand is one block with K steps per panel. */
void cpu_gemm_pack_a(int64_t m, int64_t k, const float *a, int64_t lda, bool trans, float *out)
{
    int mr = cpu_gemm_mr();
    gemm_pack_a_block(mr, m, k, a, lda, trans, true, out, mr * k);
    gemm_flush_denormals(out, cpu_gemm_packed_a_floats(m, k));
}

void cpu_gemm_pack_b(int64_t k, int64_t n, const float *b, int64_t ldb, bool trans, float *out)
{
    int nr = cpu_gemm_nr();
    gemm_pack_b_block(nr, k, n, b, ldb, trans, out, nr * k);
    gemm_flush_denormals(out, cpu_gemm_packed_b_floats(k, n));
}

/* ---- the product ----------------------------------------------------------- */

/* C = BETA * C over M x N: the whole product when K or ALPHA is 0. */
static void gemm_scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    if (beta == 1.0f)
        return;
    for (int64_t i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (beta == 0.0f)
            memset(row, 0, (size_t)n * sizeof(float));
        else
            for (int64_t j = 0; j < n; j++)
                row[j] *= beta;
    }
}

/* Where the panels of B come from for one slice of K: packed panels
 * PANEL floats apart (LD = NR), or B itself, read in place (DIRECT: panel j
 * starts NR columns after panel j-1 and LD is B's leading dimension; the
 * last, partial panel is packed at TAIL, since a kernel reads whole
 * panels). */
typedef struct gemm_bsrc {
    const float *p;
    int64_t panel;
    int64_t ld;
    bool direct;
    const float *tail;
} gemm_bsrc;

/* The epilogue of the tile at row I, column J of the block. */
static cpu_gemm_epilogue gemm_epi_at(const cpu_gemm_epilogue *e, int64_t i, int64_t j)
{
    cpu_gemm_epilogue t = *e;
    if (t.row_bias != NULL)
        t.row_bias += i;
    if (t.col_bias != NULL)
        t.col_bias += j;
    return t;
}

/* The macro-kernel: the MC x NC block of C at C from packed panels of A
 * (A_PANEL floats apart; 0: one row of A read in place, isa->vec) and the
 * panels of B; EPI (NULL but on the last
 * slice of K) at the block's first row and column. */
static void gemm_block(const gemm_isa *isa, int64_t mc, int64_t nc, int64_t kc, float alpha,
                       const float *ap, int64_t a_panel, const gemm_bsrc *bs, float beta,
                       float *c, int64_t ldc, const cpu_gemm_epilogue *epi)
{
    const int mr = isa->mr, nr = isa->nr;
    const float *bp = bs->p;
    for (int64_t jr = 0; jr < nc; jr += nr, bp += bs->panel) {
        int cols = (int)(nc - jr < nr ? nc - jr : nr);
        const float *b = bp;
        int64_t ldb = bs->ld;
        if (bs->direct && cols < nr) {
            b = bs->tail;
            ldb = nr;
        }
        const float *a = ap;
        for (int64_t ir = 0; ir < mc; ir += mr, a += a_panel) {
            int rows = (int)(mc - ir < mr ? mc - ir : mr);
            float *cc = c + ir * ldc + jr;
            cpu_gemm_epilogue e;
            if (epi != NULL)
                e = gemm_epi_at(epi, ir, jr);
            gemm_kernel_fn fn = a_panel == 0 ? isa->vec : isa->kernel[rows];
            fn(kc, a, b, ldb, cc, ldc, cols, alpha, beta, epi ? &e : NULL);
        }
    }
}

/* C = EPI(C) over M x N, for products with nothing to multiply. */
static void gemm_epi_all(const cpu_gemm_epilogue *epi, int64_t m, int64_t n, float *c,
                         int64_t ldc)
{
    if (epi == NULL)
        return;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
            c[i * ldc + j] = gemm_epi_scalar(epi, c[i * ldc + j], i, j);
}

/* C[M x 1] = op(A) x a contiguous column X of K: a matrix-vector product,
 * each row of A a dot product (16 lanes of partial sums), or with A
 * transposed its columns scaled and added. The micro-kernels pad B to a
 * panel of NR columns and pack A first: 16 times the multiplies, and an
 * SVR's decision (64 x 300 by 300 x 1) took 21 us where this takes about
 * 1 (the cpu module leaves such a B unpacked: matmul.c). */
static void gemm_n1(int64_t m, int64_t k, float alpha, const cpu_gemm_operand *a,
                    const float *x, float beta, float *c, int64_t ldc,
                    const cpu_gemm_epilogue *epi)
{
    for (int64_t i = 0; i < m; i++) {
        float v;
        if (!a->trans) {
            v = cpu_dot16(a->data + i * a->ld, x, k);
        } else {
            v = 0.0f;
            for (int64_t p = 0; p < k; p++)
                v += a->data[p * a->ld + i] * x[p];
        }
        v *= alpha;
        if (beta != 0.0f)
            v += beta * c[i * ldc];
        c[i * ldc] = epi != NULL ? gemm_epi_scalar(epi, v, i, 0) : v;
    }
}

/* C[1 x N] = alpha * x[1 x K] x op(B) + beta * C with B in place: one
 * row of A (a batch-1 dense layer, a decoder's step), bound by reading
 * B. B row-major: C's columns in blocks of GEMM_M1_NB that stay in cache
 * while eight rows of B at a time stream through them, each row's block
 * contiguous (four rows a step stored C's block twice as often: GPT-2
 * base's 48 layer products at M = 1, two threads, 7.4 -> 6.9 ms, ONNX
 * Runtime 6.6-6.9); B transposed ([N, K], a Linear layer's weight): each column
 * of C the dot product of x and a row of B, four rows at a time. Packing B
 * for one row reads and writes all of it once more than the product does
 * (GPT-2 base's weights, 497 MB, packed for a decoder's first cpu step:
 * 400 ms), and the packed panels' product at M = 1 streamed B at 27-37 GB/s
 * against oneDNN's 35. */
#define GEMM_M1_NB 16384

#if defined(__GNUC__) && !defined(__clang__) && defined(GEMM_X86)
#define GEMM_M1_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GEMM_M1_CLONES
#endif

GEMM_M1_CLONES static void gemm_m1_rows(int64_t n, int64_t k, const float *x, float alpha,
                                        const float *b, int64_t ldb, float beta, float *c)
{
    for (int64_t j0 = 0; j0 < n; j0 += GEMM_M1_NB) {
        const int64_t jn = n - j0 < GEMM_M1_NB ? n - j0 : GEMM_M1_NB;
        float *restrict y = c + j0;
        if (beta == 0.0f)
            for (int64_t j = 0; j < jn; j++)
                y[j] = 0.0f;
        else if (beta != 1.0f)
            for (int64_t j = 0; j < jn; j++)
                y[j] *= beta;
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
            const float x0 = alpha * x[p], x1 = alpha * x[p + 1];
            const float x2 = alpha * x[p + 2], x3 = alpha * x[p + 3];
            const float x4 = alpha * x[p + 4], x5 = alpha * x[p + 5];
            const float x6 = alpha * x[p + 6], x7 = alpha * x[p + 7];
            const float *restrict b0 = b + p * ldb + j0, *restrict b1 = b0 + ldb;
            const float *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
            const float *restrict b4 = b3 + ldb, *restrict b5 = b4 + ldb;
            const float *restrict b6 = b5 + ldb, *restrict b7 = b6 + ldb;
            for (int64_t j = 0; j < jn; j++)
                y[j] += ((x0 * b0[j] + x1 * b1[j]) + (x2 * b2[j] + x3 * b3[j])) +
                        ((x4 * b4[j] + x5 * b5[j]) + (x6 * b6[j] + x7 * b7[j]));
        }
        for (; p + 4 <= k; p += 4) {
            const float x0 = alpha * x[p], x1 = alpha * x[p + 1];
            const float x2 = alpha * x[p + 2], x3 = alpha * x[p + 3];
            const float *restrict b0 = b + p * ldb + j0, *restrict b1 = b0 + ldb;
            const float *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
            for (int64_t j = 0; j < jn; j++)
                y[j] += (x0 * b0[j] + x1 * b1[j]) + (x2 * b2[j] + x3 * b3[j]);
        }
        for (; p < k; p++) {
            const float xp = alpha * x[p];
            const float *restrict bp = b + p * ldb + j0;
            for (int64_t j = 0; j < jn; j++)
                y[j] += xp * bp[j];
        }
    }
}

GEMM_M1_CLONES static void gemm_m1_dots(int64_t n, int64_t k, const float *x, float alpha,
                                        const float *b, int64_t ldb, float beta, float *c)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float *restrict r0 = b + j * ldb, *restrict r1 = r0 + ldb;
        const float *restrict r2 = r1 + ldb, *restrict r3 = r2 + ldb;
        float l0[16] = {0}, l1[16] = {0}, l2[16] = {0}, l3[16] = {0};
        int64_t p = 0;
        for (; p + 16 <= k; p += 16)
            for (int l = 0; l < 16; l++) {
                const float xv = x[p + l];
                l0[l] += xv * r0[p + l];
                l1[l] += xv * r1[p + l];
                l2[l] += xv * r2[p + l];
                l3[l] += xv * r3[p + l];
            }
        float v[4] = {0, 0, 0, 0};
        for (int l = 0; l < 16; l++) {
            v[0] += l0[l];
            v[1] += l1[l];
            v[2] += l2[l];
            v[3] += l3[l];
        }
        for (; p < k; p++) {
            v[0] += x[p] * r0[p];
            v[1] += x[p] * r1[p];
            v[2] += x[p] * r2[p];
            v[3] += x[p] * r3[p];
        }
        for (int q = 0; q < 4; q++)
            c[j + q] = alpha * v[q] + (beta == 0.0f ? 0.0f : beta * c[j + q]);
    }
    for (; j < n; j++) {
        float v = alpha * cpu_dot16(x, b + j * ldb, k);
        c[j] = beta == 0.0f ? v : v + beta * c[j];
    }
}

/* Whether cpu_gemm_ex reads B in place for M rows of A (gemm_m1_rows,
 * gemm_m1_dots): a caller with a constant B then need not pack it. */
bool cpu_gemm_m1_in_place(int64_t m)
{
    return m == 1;
}

void cpu_gemm(int64_t m, int64_t n, int64_t k, float alpha, const cpu_gemm_operand *a,
              const cpu_gemm_operand *b, float beta, float *c, int64_t ldc, float *scratch)
{
    cpu_gemm_ex(m, n, k, alpha, a, b, beta, c, ldc, scratch, NULL);
}

void cpu_gemm_ex(int64_t m, int64_t n, int64_t k, float alpha, const cpu_gemm_operand *a,
                 const cpu_gemm_operand *b, float beta, float *c, int64_t ldc, float *scratch,
                 const cpu_gemm_epilogue *epi)
{
    if (m <= 0 || n <= 0)
        return;
    if (epi != NULL && epi->row_bias == NULL && epi->col_bias == NULL &&
        epi->act == CPU_GEMM_ACT_NONE)
        epi = NULL;
    if (k <= 0 || alpha == 0.0f) {
        gemm_scale_c(m, n, beta, c, ldc);
        gemm_epi_all(epi, m, n, c, ldc);
        return;
    }
    /* one column of B, contiguous: B^T's row, or a column of stride 1 */
    if (n == 1 && a->packed == NULL && b->packed == NULL && (b->trans || b->ld == 1)) {
        gemm_n1(m, k, alpha, a, b->data, beta, c, ldc, epi);
        return;
    }
    if (cpu_gemm_m1_in_place(m) && a->packed == NULL && b->packed == NULL &&
        (!a->trans || a->ld == 1)) {
        if (b->trans)
            gemm_m1_dots(n, k, a->data, alpha, b->data, b->ld, beta, c);
        else
            gemm_m1_rows(n, k, a->data, alpha, b->data, b->ld, beta, c);
        gemm_epi_all(epi, 1, n, c, ldc);
        return;
    }
    const gemm_isa *isa = gemm_isa_get();
    const int mr = isa->mr, nr = isa->nr;
    const int64_t kc_step = gemm_kc();
    float *a_buf = scratch, *b_buf = scratch + gemm_scratch_a(m, k, a->packed != NULL);
    /* B in place: a plain B feeding few rows of A, where packing it would
     * cost about as much as the product (1x1 convolutions). */
    const bool direct = b->packed == NULL && !b->trans && m <= GEMM_DIRECT_MAX_M;
    /* One row of A, contiguous: read in place (isa->vec). */
    const bool a_vec = m == 1 && a->packed == NULL && isa->vec != NULL && (!a->trans || a->ld == 1);
    for (int64_t jc = 0; jc < n; jc += GEMM_NC) {
        int64_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
        for (int64_t pc = 0; pc < k; pc += kc_step) {
            int64_t kc = k - pc < kc_step ? k - pc : kc_step;
            float beta_pc = pc == 0 ? beta : 1.0f;
            const cpu_gemm_epilogue *epi_pc = pc + kc >= k ? epi : NULL;
            gemm_bsrc bs = {.ld = nr};
            if (b->packed != NULL) {
                bs.panel = nr * b->packed_k;
                bs.p = b->packed + (b->first + jc) / nr * bs.panel + pc * nr;
            } else if (direct) {
                bs.direct = true;
                bs.p = b->data + pc * b->ld + jc;
                bs.panel = nr;
                bs.ld = b->ld;
                int64_t full = nc / nr * nr;
                if (full < nc) {
                    gemm_pack_b_panel(nr, nc - full, kc, bs.p + full, b->ld, false, b_buf);
                    bs.tail = b_buf;
                }
            } else {
                bs.panel = nr * kc;
                const float *src = b->trans ? b->data + jc * b->ld + pc
                                            : b->data + pc * b->ld + jc;
                gemm_pack_b_block(nr, kc, nc, src, b->ld, b->trans, b_buf, bs.panel);
                bs.p = b_buf;
            }
            for (int64_t ic = 0; ic < m; ic += GEMM_MC) {
                int64_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
                const float *ap;
                int64_t a_panel;
                if (a->packed != NULL) {
                    a_panel = mr * a->packed_k;
                    ap = a->packed + (a->first + ic) / mr * a_panel + pc * mr;
                } else if (a_vec) {
                    a_panel = 0;
                    ap = a->data + pc;
                } else {
                    a_panel = mr * kc;
                    const float *src = a->trans ? a->data + pc * a->ld + ic
                                                : a->data + ic * a->ld + pc;
                    gemm_pack_a_block(mr, mc, kc, src, a->ld, a->trans, false, a_buf, a_panel);
                    ap = a_buf;
                }
                cpu_gemm_epilogue e;
                if (epi_pc != NULL)
                    e = gemm_epi_at(epi_pc, ic, jc);
                gemm_block(isa, mc, nc, kc, alpha, ap, a_panel, &bs, beta_pc, c + ic * ldc + jc,
                           ldc, epi_pc ? &e : NULL);
            }
        }
    }
}
