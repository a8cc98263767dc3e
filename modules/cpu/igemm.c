/* igemm.c — the cpu module's 8-bit integer GEMM (see igemm.h). The layout
 * of gemm.c without its K blocking (a whole column of K sums in registers:
 * 32-bit sums wrap as ONNX's do, so no slice can lose anything): B is cut
 * into blocks of IG_NC columns packed into panels of NR columns, each
 * panel holding K in groups of KG consecutive values per column (the
 * operand vpdpbusd / vpmaddwd multiplies in one lane); A is packed into
 * panels of MR rows in the same groups. A micro-kernel multiplies one
 * panel of A by one of B, keeping the MR x NR block of C in registers.
 *
 * Builds: AMX (32 x 32 in 16 x 16 tiles; A's panels in runs of 64 bytes a
 * row, B's the VNNI layout), AVX512-VNNI (8 x 32, groups of 4 bytes: A i8,
 * B u8), AVX2 (6 x 16, pairs of i16) and portable C (4 x 16, the VNNI
 * layout). Panels are zero-padded to full MR, NR and KG (K to 64 for AMX);
 * padding adds nothing to the sums. */
#define _DEFAULT_SOURCE /* syscall (AMX's permission) */
#include "igemm.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
#define IG_X86 1
#endif

/* Columns of B packed per block: K x IG_NC values stay in L2 while the
 * panels of A stream past (a multiple of every NR). */
#define IG_NC 256
#define IG_MAX_NR 32
#define IG_MAX_MR 32
#define IG_HEAD 64

/* C[ROWS x COLS] (of the panel's MR x NR) = A panel x B panel over GROUPS
 * groups of KG. */
typedef void (*ig_kernel_fn)(int64_t groups, const void *a, const void *b, int32_t *c,
                             int64_t ldc, int rows, int cols);
/* OUT[NR] = sum over K of each column of one packed B panel. */
typedef void (*ig_colsum_fn)(int64_t groups, const void *b, int32_t *out);

/* A micro-kernel for B panels of at most max_cols columns. */
typedef struct ig_sized_kernel {
    int max_cols;
    ig_kernel_fn fn;
} ig_sized_kernel;

#define IG_MAX_KERNELS 5

typedef struct ig_isa {
    const char *name;
    int mr, nr, kg, esz; /* esz: bytes per packed value (1: i8/u8, 2: i16) */
    ig_colsum_fn colsum;
    /* By ascending max_cols, the last for NR: a panel takes the first that
     * fits its columns, so that a product with a few columns (a
     * convolution's 2x2 output map) does not pay for NR. */
    ig_sized_kernel kernels[IG_MAX_KERNELS];
    /* K is padded to a multiple of this (0: of KG) */
    int kpad;
    /* AMX: A's panels hold each row's K values in runs of 64 (a tile's
     * row), and cpu_igemm configures the tiles around its kernel calls */
    bool amx;
} ig_isa;

/* What a packed A starts with (IG_HEAD bytes). */
typedef struct ig_a_head {
    int64_t m, k, kp;
    size_t panel_bytes, sums_off;
    int32_t zero_za; /* every row's shifted zero point is 0 */
} ig_a_head;

_Static_assert(sizeof(ig_a_head) <= IG_HEAD, "the packed A header fits its slot");

/* ---- portable C: 4 x 16, groups of 4 (A i8, B u8) ------------------------ */

#define IG_C_MR 4
_Static_assert(IG_C_MR <= IG_MAX_MR, "cpu_igemm_pack_a's row sums hold a panel");
#define IG_C_NR 16

static void ig_kernel_c(int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
                        int rows, int cols)
{
    uint32_t acc[IG_C_MR][IG_C_NR] = {{0}};
    const int8_t *ap = a;
    const uint8_t *bp = b;
    for (int64_t g = 0; g < groups; g++, ap += IG_C_MR * 4, bp += IG_C_NR * 4)
        for (int i = 0; i < IG_C_MR; i++)
            for (int j = 0; j < IG_C_NR; j++)
                for (int q = 0; q < 4; q++)
                    acc[i][j] += (uint32_t)((int32_t)ap[i * 4 + q] * (int32_t)bp[j * 4 + q]);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            c[i * ldc + j] = (int32_t)acc[i][j];
}

static void ig_colsum_c(int64_t groups, const void *b, int32_t *out)
{
    const uint8_t *bp = b;
    for (int j = 0; j < IG_C_NR; j++)
        out[j] = 0;
    for (int64_t g = 0; g < groups; g++, bp += IG_C_NR * 4)
        for (int j = 0; j < IG_C_NR; j++)
            out[j] += bp[j * 4] + bp[j * 4 + 1] + bp[j * 4 + 2] + bp[j * 4 + 3];
}

static const ig_isa ig_isa_c = {"c", IG_C_MR, IG_C_NR, 4, 1, ig_colsum_c,
                                {{IG_C_NR, ig_kernel_c}}, 0, false};

#ifdef IG_X86

/* ---- AVX2: 6 x 16, pairs of i16 (vpmaddwd: no saturation) ----------------- */

#define IG_A2_MR 6
_Static_assert(IG_A2_MR <= IG_MAX_MR, "cpu_igemm_pack_a's row sums hold a panel");
#define IG_A2_NR 16

__attribute__((target("avx2"))) static void ig_kernel_avx2(int64_t groups, const void *a,
                                                           const void *b, int32_t *c,
                                                           int64_t ldc, int rows, int cols)
{
    __m256i acc0[IG_A2_MR], acc1[IG_A2_MR];
#pragma GCC unroll 6
    for (int i = 0; i < IG_A2_MR; i++)
        acc0[i] = acc1[i] = _mm256_setzero_si256();
    const char *ap = a, *bp = b;
    for (int64_t g = 0; g < groups; g++, ap += IG_A2_MR * 4, bp += IG_A2_NR * 4) {
        __m256i b0 = _mm256_load_si256((const __m256i *)(const void *)bp);
        __m256i b1 = _mm256_load_si256((const __m256i *)(const void *)(bp + 32));
#pragma GCC unroll 6
        for (int i = 0; i < IG_A2_MR; i++) {
            int32_t w;
            memcpy(&w, ap + 4 * i, 4);
            __m256i av = _mm256_set1_epi32(w);
            acc0[i] = _mm256_add_epi32(acc0[i], _mm256_madd_epi16(b0, av));
            acc1[i] = _mm256_add_epi32(acc1[i], _mm256_madd_epi16(b1, av));
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < IG_A2_MR; i++) {
        if (i >= rows)
            break;
        int32_t *ci = c + i * ldc;
        if (cols == IG_A2_NR) {
            _mm256_storeu_si256((__m256i *)(void *)ci, acc0[i]);
            _mm256_storeu_si256((__m256i *)(void *)(ci + 8), acc1[i]);
        } else {
            int32_t tile[IG_A2_NR];
            _mm256_storeu_si256((__m256i *)(void *)tile, acc0[i]);
            _mm256_storeu_si256((__m256i *)(void *)(tile + 8), acc1[i]);
            memcpy(ci, tile, (size_t)cols * sizeof *ci);
        }
    }
}

/* A panel of at most 8 columns (the rest of N past a multiple of 16:
 * dddd_ocr_q's classifier multiplies 24 columns, 16 + 8, and the 6 x 16
 * kernel spent a third of its vpmaddwd on zeros there): the first half of
 * each group of the 16-wide panel, six vpmaddwd a group. */
__attribute__((target("avx2"))) static void ig_kernel_avx2_n8(int64_t groups, const void *a,
                                                              const void *b, int32_t *c,
                                                              int64_t ldc, int rows, int cols)
{
    __m256i acc[IG_A2_MR];
#pragma GCC unroll 6
    for (int i = 0; i < IG_A2_MR; i++)
        acc[i] = _mm256_setzero_si256();
    const char *ap = a, *bp = b;
    for (int64_t g = 0; g < groups; g++, ap += IG_A2_MR * 4, bp += IG_A2_NR * 4) {
        __m256i b0 = _mm256_load_si256((const __m256i *)(const void *)bp);
#pragma GCC unroll 6
        for (int i = 0; i < IG_A2_MR; i++) {
            int32_t w;
            memcpy(&w, ap + 4 * i, 4);
            acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(b0, _mm256_set1_epi32(w)));
        }
    }
    for (int i = 0; i < rows; i++) {
        int32_t tile[8];
        _mm256_storeu_si256((__m256i *)(void *)tile, acc[i]);
        memcpy(c + i * ldc, tile, (size_t)cols * sizeof *c);
    }
}

__attribute__((target("avx2"))) static void ig_colsum_avx2(int64_t groups, const void *b,
                                                           int32_t *out)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    const char *bp = b;
    for (int64_t g = 0; g < groups; g++, bp += IG_A2_NR * 4) {
        s0 = _mm256_add_epi32(
            s0, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(const void *)bp), ones));
        s1 = _mm256_add_epi32(
            s1,
            _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(const void *)(bp + 32)), ones));
    }
    _mm256_storeu_si256((__m256i *)(void *)out, s0);
    _mm256_storeu_si256((__m256i *)(void *)(out + 8), s1);
}

/* One column (a matrix-vector product: the recurrence of an int8 LSTM of
 * one batch row). The 6 x 16 kernel spent 12 vpmaddwd a group on it, 11
 * of 12 on columns of zeros (dddd_ocr_q's 512-wide bidirectional LSTM on
 * an AVX2 CPU: 1.76x ONNX Runtime's time). Here a group is one load of
 * the A panel's six pairs (and the next group's first two, whose sums are
 * not stored), one broadcast of the column's pair and one vpmaddwd; four
 * groups in flight. The last group's load is masked to its six pairs. */
__attribute__((target("avx2"))) static void ig_kernel_avx2_gemv(int64_t groups, const void *a,
                                                                const void *b, int32_t *c,
                                                                int64_t ldc, int rows, int cols)
{
    (void)cols;
    __m256i acc[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++)
        acc[u] = _mm256_setzero_si256();
    const char *ap = a, *bp = b;
    int64_t g = 0;
    for (; g + 4 < groups; g += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++) {
            int32_t w;
            memcpy(&w, bp + (g + u) * IG_A2_NR * 4, 4);
            __m256i av = _mm256_loadu_si256((const __m256i *)(const void *)(
                ap + (g + u) * IG_A2_MR * 4));
            acc[u] = _mm256_add_epi32(acc[u], _mm256_madd_epi16(av, _mm256_set1_epi32(w)));
        }
    const __m256i six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    for (; g < groups; g++) {
        int32_t w;
        memcpy(&w, bp + g * IG_A2_NR * 4, 4);
        __m256i av = _mm256_maskload_epi32((const int *)(const void *)(ap + g * IG_A2_MR * 4),
                                           six);
        acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(av, _mm256_set1_epi32(w)));
    }
    __m256i t = _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]),
                                 _mm256_add_epi32(acc[2], acc[3]));
    int32_t out[8];
    _mm256_storeu_si256((__m256i *)(void *)out, t);
    for (int i = 0; i < rows; i++)
        c[i * ldc] = out[i];
}

/* A panel of NC = 2 to 4 columns, the lanes over A's rows as in
 * ig_kernel_avx2_gemv: a group is one load of the six rows' pairs and one
 * broadcast and vpmaddwd per column. The 8-wide kernel spent six vpmaddwd
 * a group on 8 columns of which 2 or 4 were real (a 1x1 or 3x3
 * QLinearConv on a 2x2 output map: 4 columns, resnet50_s_qop's last
 * stage); here NC do six rows each. */
__attribute__((target("avx2"), always_inline)) static inline void
ig_cols_group(__m256i av, const char *bq, __m256i *acc, const int nc)
{
#pragma GCC unroll 4
    for (int j = 0; j < nc; j++) {
        int32_t w;
        memcpy(&w, bq + j * 4, 4);
        acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(av, _mm256_set1_epi32(w)));
    }
}

__attribute__((target("avx2"), always_inline)) static inline void
ig_kernel_avx2_cols_body(int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
                         int rows, int cols, const int nc)
{
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
    const char *ap = a, *bp = b;
    int64_t g = 0;
    for (; g + 1 < groups; g++)
        ig_cols_group(_mm256_loadu_si256((const __m256i *)(const void *)(ap + g * IG_A2_MR * 4)),
                      bp + g * IG_A2_NR * 4, acc, nc);
    if (g < groups) /* the last group's load masked to its six pairs */
        ig_cols_group(_mm256_maskload_epi32((const int *)(const void *)(ap + g * IG_A2_MR * 4),
                                            _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0)),
                      bp + g * IG_A2_NR * 4, acc, nc);
    int32_t out[4][8];
#pragma GCC unroll 4
    for (int j = 0; j < nc; j++)
        _mm256_storeu_si256((__m256i *)(void *)out[j], acc[j]);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < nc && j < cols; j++)
            c[i * ldc + j] = out[j][i];
}

__attribute__((target("avx2"))) static void ig_kernel_avx2_c2(int64_t groups, const void *a,
                                                              const void *b, int32_t *c,
                                                              int64_t ldc, int rows, int cols)
{
    ig_kernel_avx2_cols_body(groups, a, b, c, ldc, rows, cols, 2);
}

__attribute__((target("avx2"))) static void ig_kernel_avx2_c4(int64_t groups, const void *a,
                                                              const void *b, int32_t *c,
                                                              int64_t ldc, int rows, int cols)
{
    ig_kernel_avx2_cols_body(groups, a, b, c, ldc, rows, cols, 4);
}

static const ig_isa ig_isa_avx2 = {"avx2", IG_A2_MR, IG_A2_NR, 2, 2, ig_colsum_avx2,
                                   {{1, ig_kernel_avx2_gemv},
                                    {2, ig_kernel_avx2_c2},
                                    {4, ig_kernel_avx2_c4},
                                    {8, ig_kernel_avx2_n8},
                                    {IG_A2_NR, ig_kernel_avx2}},
                                   0,
                                   false};

/* ---- AVX512-VNNI: 8 x 32, groups of 4 bytes (vpdpbusd: u8 x i8) ---------- */

#define IG_V_MR 8
_Static_assert(IG_V_MR <= IG_MAX_MR, "cpu_igemm_pack_a's row sums hold a panel");
#define IG_V_NR 32
#define IG_VNNI_TARGET "avx512f,avx512bw,avx512vnni"

/* ACC += B (u8) . A (i8) in groups of four, accumulated in place. GCC 12
 * carries _mm512_dpbusd_epi32's accumulators of the 8 x 32 kernel through
 * copies (two register moves per vpdpbusd and a stack spill each group:
 * 1.4 ms for a [24, 1024] x [1024, 8210] product that ONNX Runtime does
 * in 0.53); the asm ties the accumulator to its register. */
__attribute__((target(IG_VNNI_TARGET), always_inline)) static inline void
ig_dpbusd512(__m512i *acc, __m512i b, __m512i a)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(*acc) : "v"(b), "v"(a));
}

/* The same on 256 bits (the narrow kernels). */
__attribute__((target("avx512f,avx512vl,avx512vnni"), always_inline)) static inline void
ig_dpbusd256(__m256i *acc, __m256i b, __m256i a)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(*acc) : "v"(b), "v"(a));
}

/* The 8 x 32 kernel over NH halves of the panel's 16 columns: NH 2 for
 * the whole panel, NH 1 for at most 16 columns (a 4x4 output map: 8
 * vpdpbusd a group instead of 16). Inlined with NH constant. */
__attribute__((target(IG_VNNI_TARGET), always_inline)) static inline void
ig_vnni_body(int nh, int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
             int rows, int cols)
{
    __m512i acc[2][IG_V_MR];
#pragma GCC unroll 2
    for (int h = 0; h < nh; h++)
#pragma GCC unroll 8
        for (int i = 0; i < IG_V_MR; i++)
            acc[h][i] = _mm512_setzero_si512();
    const char *ap = a, *bp = b;
    for (int64_t g = 0; g < groups; g++, ap += IG_V_MR * 4, bp += IG_V_NR * 4) {
        __m512i bv[2];
#pragma GCC unroll 2
        for (int h = 0; h < nh; h++)
            bv[h] = _mm512_load_si512((const void *)(bp + 64 * h));
#pragma GCC unroll 8
        for (int i = 0; i < IG_V_MR; i++) {
            int32_t w;
            memcpy(&w, ap + 4 * i, 4);
            __m512i av = _mm512_set1_epi32(w);
#pragma GCC unroll 2
            for (int h = 0; h < nh; h++)
                ig_dpbusd512(&acc[h][i], bv[h], av);
        }
    }
#pragma GCC unroll 2
    for (int h = 0; h < nh; h++) {
        int rem = cols - 16 * h;
        __mmask16 m = rem >= 16 ? (__mmask16)0xffff
                      : rem > 0 ? (__mmask16)((1u << rem) - 1u)
                                : (__mmask16)0;
#pragma GCC unroll 8
        for (int i = 0; i < IG_V_MR; i++) {
            if (i >= rows)
                break;
            _mm512_mask_storeu_epi32(c + i * ldc + 16 * h, m, acc[h][i]);
        }
    }
}

__attribute__((target(IG_VNNI_TARGET))) static void ig_kernel_vnni(int64_t groups, const void *a,
                                                                   const void *b, int32_t *c,
                                                                   int64_t ldc, int rows,
                                                                   int cols)
{
    ig_vnni_body(2, groups, a, b, c, ldc, rows, cols);
}

__attribute__((target(IG_VNNI_TARGET))) static void ig_kernel_vnni16(int64_t groups,
                                                                     const void *a,
                                                                     const void *b, int32_t *c,
                                                                     int64_t ldc, int rows,
                                                                     int cols)
{
    ig_vnni_body(1, groups, a, b, c, ldc, rows, cols);
}

__attribute__((target(IG_VNNI_TARGET))) static void ig_colsum_vnni(int64_t groups, const void *b,
                                                                   int32_t *out)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    const __m512i ones = _mm512_set1_epi8(1);
    const char *bp = b;
    for (int64_t g = 0; g < groups; g++, bp += IG_V_NR * 4) {
        s0 = _mm512_dpbusd_epi32(s0, _mm512_load_si512((const void *)bp), ones);
        s1 = _mm512_dpbusd_epi32(s1, _mm512_load_si512((const void *)(bp + 64)), ones);
    }
    _mm512_storeu_si512((void *)out, s0);
    _mm512_storeu_si512((void *)(out + 16), s1);
}

/* At most NC columns (8 or 4): per group, the A panel's 8 rows x 4 bytes
 * are one 256-bit operand and each column's 4 bytes of B are broadcast,
 * one accumulator (8 rows) per column: NC vpdpbusd a group instead of 16.
 * U groups are in flight (U sets of accumulators, added at the end): with
 * 4 columns, U 2 gives 8 independent vpdpbusd to hide the instruction's
 * latency. Inlined with NC and U constant. */
#define IG_VNNI_VL_TARGET "avx512f,avx512bw,avx512vl,avx512vnni"

__attribute__((target(IG_VNNI_VL_TARGET), always_inline)) static inline void
ig_vnni_narrow_body(int nc, int u_n, int64_t groups, const void *a, const void *b, int32_t *c,
                    int64_t ldc, int rows, int cols)
{
    __m256i acc[2][8];
#pragma GCC unroll 2
    for (int u = 0; u < u_n; u++)
#pragma GCC unroll 8
        for (int j = 0; j < nc; j++)
            acc[u][j] = _mm256_setzero_si256();
    const char *ap = a, *bp = b;
    int64_t g = 0;
    for (; g + u_n <= groups; g += u_n, ap += u_n * IG_V_MR * 4, bp += u_n * IG_V_NR * 4)
#pragma GCC unroll 2
        for (int u = 0; u < u_n; u++) {
            __m256i av = _mm256_load_si256((const __m256i *)(const void *)(ap + u * IG_V_MR * 4));
#pragma GCC unroll 8
            for (int j = 0; j < nc; j++) {
                int32_t w;
                memcpy(&w, bp + u * IG_V_NR * 4 + 4 * j, 4);
                ig_dpbusd256(&acc[u][j], _mm256_set1_epi32(w), av);
            }
        }
    for (; g < groups; g++, ap += IG_V_MR * 4, bp += IG_V_NR * 4) {
        __m256i av = _mm256_load_si256((const __m256i *)(const void *)ap);
#pragma GCC unroll 8
        for (int j = 0; j < nc; j++) {
            int32_t w;
            memcpy(&w, bp + 4 * j, 4);
            ig_dpbusd256(&acc[0][j], _mm256_set1_epi32(w), av);
        }
    }
    int32_t tile[8][IG_V_MR];
#pragma GCC unroll 8
    for (int j = 0; j < nc; j++) {
        __m256i t = acc[0][j];
#pragma GCC unroll 2
        for (int u = 1; u < u_n; u++)
            t = _mm256_add_epi32(t, acc[u][j]);
        _mm256_storeu_si256((__m256i *)(void *)tile[j], t);
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            c[i * ldc + j] = tile[j][i];
}

__attribute__((target(IG_VNNI_VL_TARGET))) static void
ig_kernel_vnni_narrow8(int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
                       int rows, int cols)
{
    ig_vnni_narrow_body(8, 1, groups, a, b, c, ldc, rows, cols);
}

__attribute__((target(IG_VNNI_VL_TARGET))) static void
ig_kernel_vnni_narrow4(int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
                       int rows, int cols)
{
    ig_vnni_narrow_body(4, 2, groups, a, b, c, ldc, rows, cols);
}

/* One column (a matrix-vector product: the recurrence of an int8 LSTM of
 * one batch row). Its B panel is packed in pairs of groups
 * (ig_pack_b_narrow, width 1): 64 bytes a pair, the first group's word
 * in the low eight lanes and the second's in the high eight, so that one
 * 512-bit vpdpbusd takes two groups of the A panel's eight rows (64
 * bytes, contiguous) with two plain loads and no broadcast; four pairs
 * are in flight. narrow4 spent 4 vpdpbusd (and 4 broadcasts) a group on 3
 * columns of zeros: an LSTM 512 wide took 55 us a step on it. */
__attribute__((target(IG_VNNI_TARGET))) static void
ig_kernel_vnni_gemv(int64_t groups, const void *a, const void *b, int32_t *c, int64_t ldc,
                    int rows, int cols)
{
    (void)cols;
    __m512i acc[4];
    for (int u = 0; u < 4; u++)
        acc[u] = _mm512_setzero_si512();
    const char *ap = a, *bp = b;
    const int64_t pairs = groups / 2;
    int64_t q = 0;
    for (; q + 4 <= pairs; q += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            ig_dpbusd512(&acc[u], _mm512_loadu_si512((const void *)(bp + (q + u) * 64)),
                         _mm512_loadu_si512((const void *)(ap + (q + u) * 64)));
    for (; q < pairs; q++)
        ig_dpbusd512(&acc[0], _mm512_loadu_si512((const void *)(bp + q * 64)),
                     _mm512_loadu_si512((const void *)(ap + q * 64)));
    __m512i t = _mm512_add_epi32(_mm512_add_epi32(acc[0], acc[1]),
                                 _mm512_add_epi32(acc[2], acc[3]));
    __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
    if (groups & 1) {
        /* the last group alone: its A words and B's in the low lanes */
        __m512i av = _mm512_zextsi256_si512(
            _mm256_loadu_si256((const __m256i *)(const void *)(ap + pairs * 64)));
        __m512i bv = _mm512_loadu_si512((const void *)(bp + pairs * 64));
        __m512i one = _mm512_dpbusd_epi32(_mm512_setzero_si512(), bv, av);
        s = _mm256_add_epi32(s, _mm512_castsi512_si256(one));
    }
    int32_t out[IG_V_MR];
    _mm256_storeu_si256((__m256i *)(void *)out, s);
    for (int i = 0; i < rows; i++)
        c[i * ldc] = out[i];
}

static const ig_isa ig_isa_vnni = {"avx512vnni", IG_V_MR, IG_V_NR, 4, 1, ig_colsum_vnni,
                                   {{1, ig_kernel_vnni_gemv},
                                    {4, ig_kernel_vnni_narrow4},
                                    {8, ig_kernel_vnni_narrow8},
                                    {16, ig_kernel_vnni16},
                                    {IG_V_NR, ig_kernel_vnni}},
                                   0,
                                   false};

/* ---- AMX: 32 x 32, tiles of 16 x 64 bytes (tdpbsud: i8 x u8) ------------- *
 *
 * Four accumulator tiles (tmm0-3: rows 0-15 and 16-31 by columns 0-15 and
 * 16-31), two of A (tmm4-5) and two of B (tmm6-7). A's panel holds, for
 * each run of 64 values of K, its 32 rows of 64 bytes: a tile's 16 rows
 * are 1 KB at a stride of 64. B's panel is the VNNI layout (a group of 4
 * values of K, 32 columns of 4 bytes, 128 bytes a group): 16 groups of 16
 * columns are a tile at a stride of 128, 64 bytes apart for columns
 * 16-31. One tdpbsud is 16 x 16 x 64 products, 64 vpdpbusd's worth: a
 * [24, 1024] x [1024, 8210] MatMulInteger took 1.03 ms on one thread with
 * the VNNI kernel (ONNX Runtime, whose MLAS has an AMX kernel: 0.53). */
#define IG_X_MR 32
#define IG_X_NR 32
#define IG_X_KB 64 /* K values in one tile row */
#define IG_AMX_TARGET "amx-tile,amx-int8,avx512f"

/* The tile configuration (palette 1): tiles 0-7 of 16 rows x 64 bytes. */
typedef struct ig_amx_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} ig_amx_config;

__attribute__((target(IG_AMX_TARGET))) static void ig_amx_begin(void)
{
    ig_amx_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.rows[t] = 16;
        cfg.colsb[t] = 64;
    }
    /* asm reading the whole struct: GCC 12 dropped the stores of rows and
     * colsb before _tile_loadconfig (a configuration of empty tiles) */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

__attribute__((target(IG_AMX_TARGET))) static void ig_amx_end(void)
{
    _tile_release();
}

/* Tile T (16 x 16 i32) into C: straight when the block is whole, else
 * through a copy of its first ROWS x COLS, a masked store per row (GCC
 * made the memcpy of a row of a few columns a rep movsq, whose start-up
 * took most of an LSTM step's [128 x 32] x [32 x 2] product). */
#define IG_AMX_STORE(t, cp, ldc, rows, cols)                                                 \
    do {                                                                                     \
        if ((rows) >= 16 && (cols) >= 16) {                                                 \
            _tile_stored(t, (cp), (ldc) * (int64_t)sizeof(int32_t));                        \
        } else if ((rows) > 0 && (cols) > 0) {                                              \
            int32_t tile_[16][16];                                                           \
            const __mmask16 m_ = (__mmask16)((cols) >= 16 ? 0xffff : (1u << (cols)) - 1);     \
            _tile_stored(t, tile_, 16 * sizeof(int32_t));                                   \
            for (int r_ = 0; r_ < (rows) && r_ < 16; r_++)                                  \
                _mm512_mask_storeu_epi32((cp) + r_ * (ldc), m_,                             \
                                         _mm512_loadu_si512(tile_[r_]));                    \
        }                                                                                    \
    } while (0)

/* The 32 x 32 block over NRH halves of rows and NCH of columns (1 or 2
 * each, constant when inlined); the tiles are configured (ig_amx_begin). */
__attribute__((target(IG_AMX_TARGET), always_inline)) static inline void
ig_amx_body(int nrh, int nch, int64_t groups, const void *a, const void *b, int32_t *c,
            int64_t ldc, int rows, int cols)
{
    const char *ap = a, *bp = b;
    const int64_t blocks = groups / (IG_X_KB / 4);
    _tile_zero(0);
    if (nch == 2)
        _tile_zero(1);
    if (nrh == 2) {
        _tile_zero(2);
        if (nch == 2)
            _tile_zero(3);
    }
    for (int64_t kb = 0; kb < blocks; kb++, ap += IG_X_MR * IG_X_KB, bp += 16 * IG_X_NR * 4) {
        _tile_loadd(4, ap, IG_X_KB);
        _tile_loadd(6, bp, IG_X_NR * 4);
        if (nch == 2)
            _tile_loadd(7, bp + 64, IG_X_NR * 4);
        _tile_dpbsud(0, 4, 6);
        if (nch == 2)
            _tile_dpbsud(1, 4, 7);
        if (nrh == 2) {
            _tile_loadd(5, ap + 16 * IG_X_KB, IG_X_KB);
            _tile_dpbsud(2, 5, 6);
            if (nch == 2)
                _tile_dpbsud(3, 5, 7);
        }
    }
    IG_AMX_STORE(0, c, ldc, rows, cols);
    if (nch == 2)
        IG_AMX_STORE(1, c + 16, ldc, rows, cols - 16);
    if (nrh == 2) {
        IG_AMX_STORE(2, c + 16 * ldc, ldc, rows - 16, cols);
        if (nch == 2)
            IG_AMX_STORE(3, c + 16 * ldc + 16, ldc, rows - 16, cols - 16);
    }
}

__attribute__((target(IG_AMX_TARGET))) static void ig_kernel_amx(int64_t groups, const void *a,
                                                                 const void *b, int32_t *c,
                                                                 int64_t ldc, int rows, int cols)
{
    if (rows > 16 && cols > 16)
        ig_amx_body(2, 2, groups, a, b, c, ldc, rows, cols);
    else if (rows > 16)
        ig_amx_body(2, 1, groups, a, b, c, ldc, rows, cols);
    else if (cols > 16)
        ig_amx_body(1, 2, groups, a, b, c, ldc, rows, cols);
    else
        ig_amx_body(1, 1, groups, a, b, c, ldc, rows, cols);
}

/* The 16 x 16 bytes R (rows) transposed in place: four rounds of
 * interleaving row i with row i + 8 (each round a perfect shuffle of the
 * 256 bytes; four of them turn the matrix). */
__attribute__((target("ssse3"))) static void ig_transpose16(__m128i r[16])
{
    for (int round = 0; round < 4; round++) {
        __m128i t[16];
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + 8]);
            t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + 8]);
        }
        memcpy(r, t, sizeof t);
    }
}

/* One panel of up to 32 rows (ROWS) of the AMX layout: row r's values q ..
 * q + 63 are the 64 bytes at (q / 64) * 2048 + r * 64, flipped to i8;
 * values past K and rows past ROWS are 0 (the panel is cleared first).
 * Element (r, q) is D[r * RS + q * QS]; a transposed A (a MatMulInteger's
 * B, RS 1) goes through 16 x 16 byte transposes: value by value, the
 * 1024 x 8210 B of dddd_ocr_q took 17 ms of its session's creation. Each
 * row's sum is added to SUMS. */
__attribute__((target("ssse3"))) static void ig_pack_panel_amx(const uint8_t *d, int64_t rs,
                                                                int64_t qs, bool trans, int rows,
                                                                int64_t k, uint8_t flip,
                                                                int8_t *panel, uint32_t *sums)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    for (int64_t q0 = 0; q0 < k; q0 += 16) {
        const int qn = (int)(k - q0 < 16 ? k - q0 : 16);
        int8_t *o = panel + (q0 / IG_X_KB) * IG_X_MR * IG_X_KB + q0 % IG_X_KB;
        for (int r0 = 0; r0 < rows; r0 += 16) {
            const int rn = rows - r0 < 16 ? rows - r0 : 16;
            __m128i v[16];
            if (!trans) { /* rows r0 .. r0 + 15, values q0 .. q0 + 15 */
                for (int i = 0; i < 16; i++) {
                    uint8_t part[16];
                    memset(part, flip, sizeof part);
                    if (i < rn)
                        memcpy(part, d + (r0 + i) * rs + q0, (size_t)qn);
                    v[i] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)part), f);
                }
            } else { /* values q0 .. q0 + 15 of rows r0 .. r0 + 15, turned */
                for (int i = 0; i < 16; i++) {
                    const uint8_t *src = d + (q0 + i) * qs + r0;
                    if (i < qn && rn == 16) {
                        v[i] = _mm_loadu_si128((const __m128i *)(const void *)src);
                    } else {
                        uint8_t part[16];
                        memset(part, flip, sizeof part);
                        if (i < qn)
                            memcpy(part, src, (size_t)rn);
                        v[i] = _mm_loadu_si128((const __m128i *)(const void *)part);
                    }
                    v[i] = _mm_xor_si128(v[i], f);
                }
                ig_transpose16(v);
            }
            for (int i = 0; i < rn; i++)
                _mm_storeu_si128((__m128i *)(void *)(o + (r0 + i) * IG_X_KB), v[i]);
        }
    }
    /* the rows' sums, from the panel */
    const __m128i ones8 = _mm_set1_epi8(1), ones16 = _mm_set1_epi16(1);
    const int64_t blocks = (k + IG_X_KB - 1) / IG_X_KB;
    for (int r = 0; r < rows; r++) {
        __m128i s = _mm_setzero_si128();
        for (int64_t b = 0; b < blocks; b++)
            for (int c = 0; c < IG_X_KB; c += 16) {
                __m128i x = _mm_loadu_si128(
                    (const __m128i *)(const void *)(panel + b * IG_X_MR * IG_X_KB + r * IG_X_KB + c));
                s = _mm_add_epi32(s, _mm_madd_epi16(_mm_maddubs_epi16(ones8, x), ones16));
            }
        uint32_t t[4];
        _mm_storeu_si128((__m128i *)(void *)t, s);
        sums[r] += t[0] + t[1] + t[2] + t[3];
    }
}

static const ig_isa ig_isa_amx = {"amx", IG_X_MR, IG_X_NR, 4, 1, ig_colsum_vnni,
                                  {{IG_X_NR, ig_kernel_amx}}, IG_X_KB, true};

/* Whether this CPU has AMX's tiles and int8 products and Linux lets the
 * process use them (the tile data is asked for once, process-wide: a
 * kernel before 5.16, or a signal stack too small for the tiles, says
 * no). */
static bool ig_amx_usable(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 25)))
        return false;
#ifdef __linux__
    /* ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;
#endif
}

#endif /* IG_X86 */

/* The build this CPU runs, decided once (a benign race: every thread
 * computes the same answer). CPU_IGEMM_MAX_ISA (tests only): 0 portable C,
 * 1 up to AVX2, 2 up to AVX512-VNNI, 3 all (AMX). */
#ifndef CPU_IGEMM_MAX_ISA
#define CPU_IGEMM_MAX_ISA 3
#endif

static const ig_isa *ig_isa_get(void)
{
    static const ig_isa *cached;
    const ig_isa *isa = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    if (isa != NULL)
        return isa;
    isa = &ig_isa_c;
#ifdef IG_X86
    __builtin_cpu_init();
    if (CPU_IGEMM_MAX_ISA >= 3 && __builtin_cpu_supports("avx512f") && ig_amx_usable())
        isa = &ig_isa_amx;
    else if (CPU_IGEMM_MAX_ISA >= 2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512vnni"))
        isa = &ig_isa_vnni;
    else if (CPU_IGEMM_MAX_ISA >= 1 && __builtin_cpu_supports("avx2"))
        isa = &ig_isa_avx2;
#endif
    __atomic_store_n(&cached, isa, __ATOMIC_RELEASE);
    return isa;
}

int cpu_igemm_nr(void)
{
    return ig_isa_get()->nr;
}

int cpu_igemm_mr(void)
{
    return ig_isa_get()->mr;
}

const char *cpu_igemm_isa(void)
{
    return ig_isa_get()->name;
}

size_t cpu_igemm_serial_macs(void)
{
    return ig_isa_get()->esz == 2 || ig_isa_get() == &ig_isa_c ? CPU_IGEMM_SERIAL_MACS_AVX2
                                                                : CPU_IGEMM_SERIAL_MACS;
}

static size_t ig_round64(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

static int64_t ig_kp(const ig_isa *isa, int64_t k)
{
    int64_t pad = isa->kpad > 0 ? isa->kpad : isa->kg;
    return (k + pad - 1) / pad * pad;
}

static void ig_layout(const ig_isa *isa, int64_t m, int64_t k, ig_a_head *h)
{
    int64_t panels = (m + isa->mr - 1) / isa->mr;
    h->m = m;
    h->k = k;
    h->kp = ig_kp(isa, k);
    h->panel_bytes = ig_round64((size_t)(isa->mr * h->kp * isa->esz));
    h->sums_off = IG_HEAD + (size_t)panels * h->panel_bytes;
}

size_t cpu_igemm_packed_a_bytes(int64_t m, int64_t k)
{
    const ig_isa *isa = ig_isa_get();
    ig_a_head h;
    ig_layout(isa, m, k, &h);
    int64_t rows = (m + isa->mr - 1) / isa->mr * isa->mr;
    return ig_round64(h.sums_off + 2 * (size_t)rows * sizeof(int32_t));
}

#ifdef IG_X86
/* The whole groups (GROUPS of 4 values of q) of one full 8-row panel of
 * the VNNI layout (32 bytes a group: row r's four values at r * 4), with
 * each row's sum of them (as i8) added to SUMS. Element (r, q) is
 * D[r * RS + q * QS]; TRANS (RS 1) reads each q's 8 rows as one 8-byte
 * load and transposes 4 of them, else each row's 4 bytes are one load.
 * The scalar loop took 1.6 ns an element: 20 ms of dddd_ocr_q's session
 * creation, which packs 13M weights. */
__attribute__((target("ssse3"))) static void ig_pack_panel8(const uint8_t *d, int64_t rs,
                                                             int64_t qs, bool trans,
                                                             int64_t groups, uint8_t flip,
                                                             int8_t *panel, uint32_t *sums)
{
    const __m128i f = _mm_set1_epi8((char)flip), ones8 = _mm_set1_epi8(1),
                  ones16 = _mm_set1_epi16(1);
    __m128i s0 = _mm_setzero_si128(), s1 = _mm_setzero_si128();
    for (int64_t g = 0; g < groups; g++) {
        __m128i lo, hi; /* rows 0-3 and 4-7, four bytes each */
        if (trans) {
            const uint8_t *p = d + g * 4 * qs;
            __m128i r0 = _mm_loadl_epi64((const __m128i *)(const void *)p);
            __m128i r1 = _mm_loadl_epi64((const __m128i *)(const void *)(p + qs));
            __m128i r2 = _mm_loadl_epi64((const __m128i *)(const void *)(p + 2 * qs));
            __m128i r3 = _mm_loadl_epi64((const __m128i *)(const void *)(p + 3 * qs));
            __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpacklo_epi8(r2, r3);
            lo = _mm_unpacklo_epi16(t0, t1);
            hi = _mm_unpackhi_epi16(t0, t1);
        } else {
            int32_t w[8];
            for (int r = 0; r < 8; r++)
                memcpy(&w[r], d + r * rs + g * 4, 4);
            lo = _mm_setr_epi32(w[0], w[1], w[2], w[3]);
            hi = _mm_setr_epi32(w[4], w[5], w[6], w[7]);
        }
        lo = _mm_xor_si128(lo, f);
        hi = _mm_xor_si128(hi, f);
        _mm_storeu_si128((__m128i *)(void *)(panel + g * 32), lo);
        _mm_storeu_si128((__m128i *)(void *)(panel + g * 32 + 16), hi);
        s0 = _mm_add_epi32(s0, _mm_madd_epi16(_mm_maddubs_epi16(ones8, lo), ones16));
        s1 = _mm_add_epi32(s1, _mm_madd_epi16(_mm_maddubs_epi16(ones8, hi), ones16));
    }
    uint32_t t[8];
    _mm_storeu_si128((__m128i *)(void *)t, s0);
    _mm_storeu_si128((__m128i *)(void *)(t + 4), s1);
    for (int r = 0; r < 8; r++)
        sums[r] += t[r];
}
#endif

#ifdef IG_X86
/* Twelve bytes V (rows 0-5 of one group, two values each, flipped to i8)
 * widened to i16 into PANEL, their pair sums added to S03 (rows 0-3) and
 * S45 (rows 4-5). */
__attribute__((target("avx2"))) static inline void ig_put_group6(__m128i v, int16_t *panel,
                                                                 __m128i *s03, __m128i *s45)
{
    const __m128i ones = _mm_set1_epi16(1);
    __m128i lo = _mm_cvtepi8_epi16(v), hi = _mm_cvtepi8_epi16(_mm_srli_si128(v, 8));
    _mm_storeu_si128((__m128i *)(void *)panel, lo);
    _mm_storel_epi64((__m128i *)(void *)(panel + 8), hi);
    *s03 = _mm_add_epi32(*s03, _mm_madd_epi16(lo, ones));
    *s45 = _mm_add_epi32(*s45, _mm_madd_epi16(hi, ones));
}

/* Groups 0 .. GROUPS of one panel of 6 whole rows as pairs of i16 (the
 * AVX2 layout: KG 2, ESZ 2), rows at RS, values at QS (one of them 1), the
 * flipped values' sums added to SUMS. The element loop it replaces took
 * 2 ns a value: 25 ms of an int8 OCR model's (dddd_ocr_q, 13 MB of
 * weights) session creation. */
__attribute__((target("avx2"))) static void ig_pack_panel6w(const uint8_t *d, int64_t rs,
                                                              int64_t qs, bool trans,
                                                              int64_t groups, uint8_t flip,
                                                              int16_t *panel, uint32_t *sums)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    __m128i s03 = _mm_setzero_si128(), s45 = _mm_setzero_si128();
    int64_t g = 0;
    if (trans) { /* value q of rows 0-5 lie together: two such rows a group */
        for (; g < groups; g++) {
            int64_t r0 = 0, r1 = 0;
            memcpy(&r0, d + 2 * g * qs, 6);
            memcpy(&r1, d + (2 * g + 1) * qs, 6);
            __m128i v = _mm_unpacklo_epi8(_mm_cvtsi64_si128(r0), _mm_cvtsi64_si128(r1));
            ig_put_group6(_mm_xor_si128(v, f), panel + g * 12, &s03, &s45);
        }
    } else { /* a row's two values of a group lie together: eight groups
              * of each row at once, gathered group by group */
        for (; g + 8 <= groups; g += 8) {
            __m128i r[6];
            for (int i = 0; i < 6; i++)
                r[i] = _mm_loadu_si128((const __m128i *)(const void *)(d + i * rs + 2 * g));
            uint32_t p[6][4];
            _mm_storeu_si128((__m128i *)(void *)p[0], _mm_unpacklo_epi16(r[0], r[1]));
            _mm_storeu_si128((__m128i *)(void *)p[1], _mm_unpackhi_epi16(r[0], r[1]));
            _mm_storeu_si128((__m128i *)(void *)p[2], _mm_unpacklo_epi16(r[2], r[3]));
            _mm_storeu_si128((__m128i *)(void *)p[3], _mm_unpackhi_epi16(r[2], r[3]));
            _mm_storeu_si128((__m128i *)(void *)p[4], _mm_unpacklo_epi16(r[4], r[5]));
            _mm_storeu_si128((__m128i *)(void *)p[5], _mm_unpackhi_epi16(r[4], r[5]));
            for (int j = 0; j < 8; j++) {
                int h = j / 4, l = j % 4;
                __m128i v = _mm_setr_epi32((int)p[h][l], (int)p[2 + h][l], (int)p[4 + h][l], 0);
                ig_put_group6(_mm_xor_si128(v, f), panel + (g + j) * 12, &s03, &s45);
            }
        }
        for (; g < groups; g++) {
            uint16_t w[6];
            for (int i = 0; i < 6; i++)
                memcpy(&w[i], d + i * rs + 2 * g, 2);
            __m128i v = _mm_setr_epi16((short)w[0], (short)w[1], (short)w[2], (short)w[3],
                                       (short)w[4], (short)w[5], 0, 0);
            ig_put_group6(_mm_xor_si128(v, f), panel + g * 12, &s03, &s45);
        }
    }
    uint32_t t[8];
    _mm_storeu_si128((__m128i *)(void *)t, s03);
    _mm_storeu_si128((__m128i *)(void *)(t + 4), s45);
    for (int r = 0; r < 6; r++)
        sums[r] += t[r];
}
#endif

#ifdef IG_X86
/* Rows of a transposed A that ig_pack_panels6w_t packs at once. */
#define IG_PANELS6_ROWS 48

/* ig_pack_panel6w for a transposed A, eight panels (48 rows) at once:
 * each value q of those rows is one read of 48 bytes, where a panel at a
 * time read 6 bytes of every row of A, a cache line each, and came back
 * to the same lines for the next panel (a 1024 x 8210 MatMulInteger B
 * packed at 1.8 ns a value). PANEL: the first panel, the others at
 * PANEL_BYTES; SUMS (48) receives the rows' sums. */
__attribute__((target("avx2"))) static void ig_pack_panels6w_t(const uint8_t *d, int64_t qs,
                                                                 int64_t groups, uint8_t flip,
                                                                 int16_t *panel,
                                                                 size_t panel_bytes,
                                                                 uint32_t *sums)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    __m128i s[8][2];
    for (int p = 0; p < 8; p++)
        s[p][0] = s[p][1] = _mm_setzero_si128();
    for (int64_t g = 0; g < groups; g++) {
        const uint8_t *r0 = d + 2 * g * qs, *r1 = r0 + qs;
        uint8_t mix[IG_PANELS6_ROWS * 2 + 4]; /* rows' two values side by side */
        for (int c = 0; c < IG_PANELS6_ROWS; c += 16) {
            __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)(r0 + c));
            __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(r1 + c));
            _mm_storeu_si128((__m128i *)(void *)(mix + 2 * c),
                             _mm_xor_si128(_mm_unpacklo_epi8(a0, a1), f));
            _mm_storeu_si128((__m128i *)(void *)(mix + 2 * c + 16),
                             _mm_xor_si128(_mm_unpackhi_epi8(a0, a1), f));
        }
        for (int p = 0; p < 8; p++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(mix + 12 * p));
            ig_put_group6(v, (int16_t *)(void *)((char *)panel + p * panel_bytes) + g * 12,
                          &s[p][0], &s[p][1]);
        }
    }
    for (int p = 0; p < 8; p++) {
        uint32_t t[8];
        _mm_storeu_si128((__m128i *)(void *)t, s[p][0]);
        _mm_storeu_si128((__m128i *)(void *)(t + 4), s[p][1]);
        for (int r = 0; r < 6; r++)
            sums[6 * p + r] = t[r];
    }
}
#endif

void cpu_igemm_pack_a(int64_t m, int64_t k, const cpu_igemm_q8 *a, const int32_t *za,
                      bool za_per_row, void *out)
{
    const ig_isa *isa = ig_isa_get();
    ig_a_head h;
    ig_layout(isa, m, k, &h);
    memset(out, 0, cpu_igemm_packed_a_bytes(m, k));
    int32_t shift = a->is_signed ? 0 : 128; /* A as i8 */
    const uint8_t flip = a->is_signed ? 0x00 : 0x80; /* u8 ^ 0x80 read as i8 is u8 - 128 */
    int32_t *rowsum = (int32_t *)(void *)((char *)out + h.sums_off);
    int32_t *zap = rowsum + (m + isa->mr - 1) / isa->mr * isa->mr;
    const int mr = isa->mr, kg = isa->kg;
    h.zero_za = 1;
    /* element (i, q) at D[i * RS + q * QS]: a panel's rows are read
     * together for each q, so a transposed A (a MatMulInteger's B, an
     * LSTM's W) is read along its rows; element by element, each row's
     * walk down a column of a 1024 x 8210 matrix took 40 ms of a session's
     * creation */
    const uint8_t *d = a->data;
    const int64_t rs = a->trans ? 1 : a->ld, qs = a->trans ? a->ld : 1;
#ifdef IG_X86
    uint32_t block_sums[IG_PANELS6_ROWS];
    int64_t block_at = -1;
#endif
    for (int64_t i0 = 0; i0 < m; i0 += mr) {
        const int rows = (int)(m - i0 < mr ? m - i0 : mr);
        char *panel = (char *)out + IG_HEAD + (size_t)(i0 / mr) * h.panel_bytes;
        uint32_t sums[IG_MAX_MR] = {0};
        int64_t q = 0;
#ifdef IG_X86
        if (isa->amx) {
            ig_pack_panel_amx(d + i0 * rs, rs, qs, a->trans, rows, k, flip, (int8_t *)panel,
                              sums);
            q = k;
        } else if (isa->esz == 1 && kg == 4 && mr == 8 && rows == 8) {
            ig_pack_panel8(d + i0 * rs, rs, qs, a->trans, k / 4, flip, (int8_t *)panel, sums);
            q = k / 4 * 4;
        } else if (isa->esz == 2 && kg == 2 && mr == 6 && rows == 6 && a->trans &&
                   i0 % IG_PANELS6_ROWS == 0 && i0 + IG_PANELS6_ROWS <= m) {
            /* eight panels at once, their sums kept until each comes */
            ig_pack_panels6w_t(d + i0, qs, k / 2, flip, (int16_t *)(void *)panel,
                               h.panel_bytes, block_sums);
            block_at = i0;
        }
        if (block_at >= 0 && i0 >= block_at && i0 < block_at + IG_PANELS6_ROWS) {
            memcpy(sums, block_sums + (i0 - block_at), 6 * sizeof *sums);
            q = k / 2 * 2;
        } else if (isa->esz == 2 && kg == 2 && mr == 6 && rows == 6) {
            ig_pack_panel6w(d + i0 * rs, rs, qs, a->trans, k / 2, flip,
                            (int16_t *)(void *)panel, sums);
            q = k / 2 * 2;
        }
#endif
        for (; q < k; q++) {
            const uint8_t *col = d + i0 * rs + q * qs;
            const int64_t base = (q / kg) * mr * kg + q % kg;
            for (int r = 0; r < rows; r++) {
                int8_t v = (int8_t)(col[r * rs] ^ flip);
                sums[r] += (uint32_t)(int32_t)v;
                if (isa->esz == 1)
                    ((int8_t *)(void *)panel)[base + r * kg] = v;
                else
                    ((int16_t *)(void *)panel)[base + r * kg] = v;
            }
        }
        for (int r = 0; r < rows; r++) {
            int64_t i = i0 + r;
            rowsum[i] = (int32_t)sums[r];
            zap[i] = (za != NULL ? za[za_per_row ? i : 0] : 0) - shift;
            h.zero_za &= zap[i] == 0;
        }
    }
    memcpy(out, &h, sizeof h);
}

size_t cpu_igemm_scratch_bytes(int64_t n, int64_t k)
{
    const ig_isa *isa = ig_isa_get();
    int64_t cols = n < IG_NC ? (n + isa->nr - 1) / isa->nr * isa->nr : IG_NC;
    return ig_round64((size_t)(cols * ig_kp(isa, k) * isa->esz)) +
           ig_round64((size_t)cols * sizeof(int32_t));
}

/* Row Q of B, not transposed (cpu_igemm_q8.row_off). */
static inline const uint8_t *ig_b_row(const cpu_igemm_q8 *b, int64_t q)
{
    return (const uint8_t *)b->data + (b->row_off != NULL ? b->row_off[q] : q * b->ld);
}

#ifdef IG_X86
/* Groups G0 .. G1 of K of one panel of 32 whole columns (J0 .. J0 + 32 of
 * B, not transposed, every row of those groups below K) as bytes, KG 4:
 * the 4 x 32 byte transpose of each group in 256-bit registers, half the
 * instructions of the 128-bit one (the packing was 18% of resnet50_s_qop's
 * time on cpu). vpunpck* works within 128-bit lanes, so the four words
 * come out as columns 0-3|16-19, 4-7|20-23, 8-11|24-27, 12-15|28-31 and
 * two lane permutes put them in order. */
__attribute__((target("avx2"))) static void ig_pack_b32_avx2(const cpu_igemm_q8 *b, int64_t g0,
                                                            int64_t g1, int64_t j0,
                                                            uint8_t flip, uint8_t *out)
{
    const __m256i f = _mm256_set1_epi8((char)flip);
    for (int64_t g = g0; g < g1; g++) {
        const uint8_t *s[4];
        for (int r = 0; r < 4; r++)
            s[r] = ig_b_row(b, g * 4 + r) + j0;
        __m256i r0 = _mm256_loadu_si256((const __m256i *)(const void *)s[0]);
        __m256i r1 = _mm256_loadu_si256((const __m256i *)(const void *)s[1]);
        __m256i r2 = _mm256_loadu_si256((const __m256i *)(const void *)s[2]);
        __m256i r3 = _mm256_loadu_si256((const __m256i *)(const void *)s[3]);
        __m256i t0 = _mm256_unpacklo_epi8(r0, r1), t1 = _mm256_unpackhi_epi8(r0, r1);
        __m256i t2 = _mm256_unpacklo_epi8(r2, r3), t3 = _mm256_unpackhi_epi8(r2, r3);
        __m256i u0 = _mm256_unpacklo_epi16(t0, t2), u1 = _mm256_unpackhi_epi16(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi16(t1, t3), u3 = _mm256_unpackhi_epi16(t1, t3);
        __m256i *d = (__m256i *)(void *)(out + g * 32 * 4);
        _mm256_storeu_si256(d, _mm256_xor_si256(_mm256_permute2x128_si256(u0, u1, 0x20), f));
        _mm256_storeu_si256(d + 1, _mm256_xor_si256(_mm256_permute2x128_si256(u2, u3, 0x20), f));
        _mm256_storeu_si256(d + 2, _mm256_xor_si256(_mm256_permute2x128_si256(u0, u1, 0x31), f));
        _mm256_storeu_si256(d + 3, _mm256_xor_si256(_mm256_permute2x128_si256(u2, u3, 0x31), f));
    }
}

/* One panel of COLS <= 16 columns (J0 .. J0 + COLS of B, not transposed)
 * for the AVX2 kernel: pairs of rows interleaved and widened to i16, 16
 * columns in 256-bit registers, every value written (a missing last row
 * and the columns past COLS are 0), so the panel is not cleared first. The
 * 128-bit path took 8 columns at a time after a memset of the panel: 18%
 * of resnet50_s_qdq's time on cpu went to this packing (perf); a panel of
 * a few columns (the last of a 7x7 or 14x14 map) went value by value, 8%
 * of resnet50_s_qop's. */
__attribute__((target("avx2"))) static void ig_pack_b16_avx2(const cpu_igemm_q8 *b, int64_t k,
                                                            int64_t j0, int cols, uint8_t flip,
                                                            int16_t *out)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    /* fewer than 16 columns: each row through a copy whose columns past
     * COLS hold FLIP, so that they pack to 0 as a cleared panel's do */
    uint8_t part[2][16];
    memset(part, flip, sizeof part);
    for (int64_t q0 = 0; q0 < k; q0 += 2, out += 32) {
        const uint8_t *p0 = ig_b_row(b, q0) + j0;
        const uint8_t *p1 = q0 + 1 < k ? ig_b_row(b, q0 + 1) + j0 : NULL;
        if (cols < IG_A2_NR) {
            memcpy(part[0], p0, (size_t)cols);
            p0 = part[0];
            if (p1 != NULL) {
                memcpy(part[1], p1, (size_t)cols);
                p1 = part[1];
            }
        }
        __m128i r0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)p0), f);
        __m128i r1 = p1 != NULL
                         ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)p1), f)
                         : _mm_setzero_si128();
        _mm256_storeu_si256((__m256i *)(void *)out, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(r0, r1)));
        _mm256_storeu_si256((__m256i *)(void *)(out + 16),
                            _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(r0, r1)));
    }
}
#endif

/* Packs columns J0 .. J0 + COLS of op(B) (K x N) into one panel of NR
 * columns at OUT: u8 values (B shifted by 128 when i8) in groups of KG per
 * column, as bytes (esz 1) or i16 (esz 2); columns past COLS and rows past
 * K are zero. */
static void ig_pack_b(const ig_isa *isa, const cpu_igemm_q8 *b, int64_t k, int64_t j0, int cols,
                      void *out)
{
    const int nr = isa->nr, kg = isa->kg;
    const int64_t groups = ig_kp(isa, k) / kg;
    const uint8_t flip = b->is_signed ? 0x80 : 0x00;
    const uint8_t *data = b->data;
#ifdef IG_X86
    /* a whole panel of bytes: every value is written, nothing to clear
     * but the last group's rows past K */
    if (!b->trans && isa->esz == 1 && kg == 4 && nr == 32 && cols == 32 &&
        (isa == &ig_isa_vnni || isa == &ig_isa_amx)) {
        int64_t whole = k / 4;
        ig_pack_b32_avx2(b, 0, whole, j0, flip, out);
        if (whole < groups) {
            uint8_t *o = (uint8_t *)out + whole * 32 * 4;
            memset(o, 0, (size_t)(groups - whole) * 32 * 4);
            for (int j = 0; j < 32; j++)
                for (int64_t q = whole * 4; q < k; q++)
                    o[j * 4 + (q - whole * 4)] = (uint8_t)(ig_b_row(b, q)[j0 + j] ^ flip);
        }
        return;
    }
    if (!b->trans && isa == &ig_isa_avx2) {
        ig_pack_b16_avx2(b, k, j0, cols, flip, out);
        return;
    }
#endif
    memset(out, 0, (size_t)(groups * kg * nr * isa->esz));
/* Value (q, j) of the panel, from byte V of B. */
#define IG_PUT(q, j, v)                                                                     \
    do {                                                                                    \
        size_t at_ = (size_t)((((q) / kg) * nr + (j)) * kg + (q) % kg);                    \
        uint8_t v_ = (uint8_t)((v) ^ flip);                                                 \
        if (isa->esz == 1)                                                                  \
            ((uint8_t *)out)[at_] = v_;                                                     \
        else                                                                                \
            ((int16_t *)out)[at_] = (int16_t)v_;                                            \
    } while (0)
    if (b->trans) {
        /* a column's K values are contiguous: one group of KG values is one
         * 32-bit word of the panel (KG bytes, or KG i16 as esz 2 has), so
         * four columns' words for four groups are a 4 x 4 transpose */
        int j = 0;
#ifdef IG_X86
        const int64_t whole = k / (4 * kg); /* blocks of four whole groups */
        const __m128i f = _mm_set1_epi8((char)flip), z = _mm_setzero_si128();
        for (; j + 4 <= cols && whole > 0; j += 4) {
            const uint8_t *s[4];
            for (int c = 0; c < 4; c++)
                s[c] = data + (j0 + j + c) * b->ld;
            for (int64_t gb = 0; gb < whole; gb++) {
                __m128i r[4];
                for (int c = 0; c < 4; c++) {
                    const uint8_t *at = s[c] + gb * 4 * kg;
                    r[c] = isa->esz == 1
                               ? _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)at), f)
                               : _mm_unpacklo_epi8(
                                     _mm_xor_si128(_mm_loadl_epi64((const __m128i *)(const void *)at), f),
                                     z);
                }
                __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpacklo_epi32(r[2], r[3]);
                __m128i t2 = _mm_unpackhi_epi32(r[0], r[1]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
                __m128i o[4] = {_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1),
                                _mm_unpacklo_epi64(t2, t3), _mm_unpackhi_epi64(t2, t3)};
                for (int i = 0; i < 4; i++)
                    _mm_storeu_si128((__m128i *)(void *)((char *)out +
                                                         (size_t)((gb * 4 + i) * nr + j) * 4),
                                     o[i]);
            }
            for (int c = 0; c < 4; c++)
                for (int64_t q = whole * 4 * kg; q < k; q++)
                    IG_PUT(q, j + c, s[c][q]);
        }
#endif
        for (; j < cols; j++) {
            const uint8_t *src = data + (j0 + j) * b->ld;
            for (int64_t q = 0; q < k; q++)
                IG_PUT(q, j, src[q]);
        }
        return;
    }
    /* groups past K (AMX pads K to 64) stay as cleared: their rows are
     * not B's (an implicit im2col's row_off has K entries) */
    for (int64_t g = 0; g < groups && g * kg < k; g++) {
        const int64_t q0 = g * kg;
        int j = 0;
#ifdef IG_X86
        /* whole groups of rows: interleaved 16 (bytes) or 8 (i16) columns at a time */
        const uint8_t *s0 = ig_b_row(b, q0) + j0;
        /* the next rows' distances from row q0 (rows past K are not read) */
        const ptrdiff_t d1 = q0 + 1 < k ? ig_b_row(b, q0 + 1) - ig_b_row(b, q0) : 0,
                        d2 = q0 + 2 < k ? ig_b_row(b, q0 + 2) - ig_b_row(b, q0) : 0,
                        d3 = q0 + 3 < k ? ig_b_row(b, q0 + 3) - ig_b_row(b, q0) : 0;
        const __m128i f = _mm_set1_epi8((char)flip);
        if (isa->esz == 1 && q0 + 3 < k) {
            uint8_t *o = out;
            for (; j < cols; j += 16) {
                const uint8_t *s = s0 + j;
                __m128i r0, r1, r2, r3;
                if (j + 16 <= cols) {
                    r0 = _mm_loadu_si128((const __m128i *)(const void *)s);
                    r1 = _mm_loadu_si128((const __m128i *)(const void *)(s + d1));
                    r2 = _mm_loadu_si128((const __m128i *)(const void *)(s + d2));
                    r3 = _mm_loadu_si128((const __m128i *)(const void *)(s + d3));
                } else {
                    /* the last columns, through rows of 16 (the panel's
                     * columns past COLS are never stored) */
                    uint8_t part[4][16] = {{0}};
                    for (int r = 0; r < 4; r++) {
                        const uint8_t *sr = s + (r == 0 ? 0 : r == 1 ? d1 : r == 2 ? d2 : d3);
                        for (int t = 0; t < cols - j; t++) /* under 16: no call */
                            part[r][t] = sr[t];
                    }
                    r0 = _mm_loadu_si128((const __m128i *)(const void *)part[0]);
                    r1 = _mm_loadu_si128((const __m128i *)(const void *)part[1]);
                    r2 = _mm_loadu_si128((const __m128i *)(const void *)part[2]);
                    r3 = _mm_loadu_si128((const __m128i *)(const void *)part[3]);
                }
                __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
                __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
                __m128i *d = (__m128i *)(void *)(o + (g * nr + j) * 4);
                _mm_storeu_si128(d, _mm_xor_si128(_mm_unpacklo_epi16(t0, t2), f));
                _mm_storeu_si128(d + 1, _mm_xor_si128(_mm_unpackhi_epi16(t0, t2), f));
                _mm_storeu_si128(d + 2, _mm_xor_si128(_mm_unpacklo_epi16(t1, t3), f));
                _mm_storeu_si128(d + 3, _mm_xor_si128(_mm_unpackhi_epi16(t1, t3), f));
            }
        } else if (isa->esz == 2 && q0 + 1 < k) {
            int16_t *o = out;
            const __m128i z = _mm_setzero_si128();
            for (; j + 8 <= cols; j += 8) {
                const uint8_t *s = s0 + j;
                __m128i r0 = _mm_loadl_epi64((const __m128i *)(const void *)s);
                __m128i r1 = _mm_loadl_epi64((const __m128i *)(const void *)(s + d1));
                __m128i t = _mm_xor_si128(_mm_unpacklo_epi8(r0, r1), f);
                __m128i *d = (__m128i *)(void *)(o + (g * nr + j) * 2);
                _mm_storeu_si128(d, _mm_unpacklo_epi8(t, z));
                _mm_storeu_si128(d + 1, _mm_unpackhi_epi8(t, z));
            }
        }
#endif
        for (; j < cols; j++)
            for (int64_t q = q0; q < q0 + kg && q < k; q++)
                IG_PUT(q, j, ig_b_row(b, q)[j0 + j]);
    }
#undef IG_PUT
}

/* ig_pack_b for a panel the narrow kernels read (at most WIDTH < NR
 * columns, KG 4 of bytes, B not transposed): only WIDTH columns' words of
 * each group are written (zeros past COLS and past K), the rest of the
 * panel untouched, so nothing is cleared first. A product of 4 columns
 * (the 2x2 maps of yolo_s_qop's deepest convolutions) otherwise cleared
 * and walked a panel 8 times as wide, and filled its last group of
 * columns through a 16-byte staging row per group. */
static void ig_pack_b_narrow(const cpu_igemm_q8 *b, int64_t k, int64_t groups, int nr, int64_t j0,
                             int cols, int width, uint8_t *out)
{
    const uint8_t flip = b->is_signed ? 0x80 : 0x00;
    int64_t g = 0;
    if (width == 1) {
        /* ig_kernel_vnni_gemv's pairs: group g's word eight times at
         * (g / 2) * 64 + (g % 2) * 32; an odd count's last pair has zeros
         * in its high half */
        for (; g < (groups + 1) / 2 * 2; g++) {
            uint8_t word[4];
            for (int r = 0; r < 4; r++) {
                int64_t q = g * 4 + r;
                word[r] = 0;
                if (g < groups && q < k)
                    word[r] = (uint8_t)((b->trans ? ((const uint8_t *)b->data)[j0 * b->ld + q]
                                                  : ig_b_row(b, q)[j0]) ^
                                        flip);
            }
            uint8_t *o = out + g / 2 * 64 + g % 2 * 32;
            for (int i = 0; i < 8; i++)
                memcpy(o + 4 * i, word, 4);
        }
        return;
    }
#ifdef IG_X86
    const __m128i f = _mm_set1_epi8((char)flip);
    for (; g * 4 + 3 < k && (width == 4 || width == 8 || width == 16); g++) {
        /* the group's four rows, WIDTH bytes each (zeros past COLS) */
        const uint8_t *src[4];
        uint8_t part[4][16];
        for (int i = 0; i < 4; i++) {
            src[i] = ig_b_row(b, g * 4 + i) + j0;
            if (cols < width) {
                memset(part[i], 0, sizeof part[i]);
                memcpy(part[i], src[i], (size_t)cols);
                src[i] = part[i];
            }
        }
        __m128i *d = (__m128i *)(void *)(out + g * nr * 4);
        if (width == 4) { /* a 4 x 4 byte transpose */
            int32_t r[4];
            for (int i = 0; i < 4; i++)
                memcpy(&r[i], src[i], 4);
            __m128i t0 = _mm_unpacklo_epi8(_mm_cvtsi32_si128(r[0]), _mm_cvtsi32_si128(r[1]));
            __m128i t1 = _mm_unpacklo_epi8(_mm_cvtsi32_si128(r[2]), _mm_cvtsi32_si128(r[3]));
            _mm_storeu_si128(d, _mm_xor_si128(_mm_unpacklo_epi16(t0, t1), f));
        } else if (width == 8) {
            __m128i r[4];
            for (int i = 0; i < 4; i++)
                r[i] = _mm_loadl_epi64((const __m128i *)(const void *)src[i]);
            __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpacklo_epi8(r[2], r[3]);
            _mm_storeu_si128(d, _mm_xor_si128(_mm_unpacklo_epi16(t0, t1), f));
            _mm_storeu_si128(d + 1, _mm_xor_si128(_mm_unpackhi_epi16(t0, t1), f));
        } else {
            __m128i r[4];
            for (int i = 0; i < 4; i++)
                r[i] = _mm_loadu_si128((const __m128i *)(const void *)src[i]);
            __m128i t0 = _mm_unpacklo_epi8(r[0], r[1]), t1 = _mm_unpackhi_epi8(r[0], r[1]);
            __m128i t2 = _mm_unpacklo_epi8(r[2], r[3]), t3 = _mm_unpackhi_epi8(r[2], r[3]);
            _mm_storeu_si128(d, _mm_xor_si128(_mm_unpacklo_epi16(t0, t2), f));
            _mm_storeu_si128(d + 1, _mm_xor_si128(_mm_unpackhi_epi16(t0, t2), f));
            _mm_storeu_si128(d + 2, _mm_xor_si128(_mm_unpacklo_epi16(t1, t3), f));
            _mm_storeu_si128(d + 3, _mm_xor_si128(_mm_unpackhi_epi16(t1, t3), f));
        }
    }
#endif
    for (; g < groups; g++) {
        uint8_t *o = out + g * nr * 4;
        for (int j = 0; j < width; j++)
            for (int r = 0; r < 4; r++) {
                int64_t q = g * 4 + r;
                o[j * 4 + r] = j < cols && q < k ? (uint8_t)(ig_b_row(b, q)[j0 + j] ^ flip) : 0;
            }
    }
}

/* C's row CI (NC values) += ROW - ZA * COLSUM (NULL: no column term), in
 * wrapping 32-bit arithmetic: a pass over every sum of the product, 9% of
 * resnet50_s_qdq's time on cpu in 128-bit registers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
static void ig_fix_row(uint32_t *ci, const int32_t *colsum, int64_t nc, uint32_t row, uint32_t za)
{
    if (colsum == NULL)
        for (int64_t j = 0; j < nc; j++)
            ci[j] += row;
    else
        for (int64_t j = 0; j < nc; j++)
            ci[j] += row - za * (uint32_t)colsum[j];
}

void cpu_igemm(int64_t m, int64_t n, int64_t k, const void *packed_a, int64_t first_row,
               const cpu_igemm_q8 *b, const int32_t *zb, bool zb_per_col, int32_t *c,
               int64_t ldc, void *scratch)
{
    const ig_isa *isa = ig_isa_get();
    ig_a_head h;
    memcpy(&h, packed_a, sizeof h);
    const int mr = isa->mr, nr = isa->nr;
    const int64_t groups = h.kp / isa->kg;
    const size_t bpanel = (size_t)(h.kp * nr * isa->esz);
    const int64_t block = n < IG_NC ? (n + nr - 1) / nr * nr : IG_NC;
    char *bp = scratch;
    int32_t *colsum = (int32_t *)(void *)(bp + ig_round64((size_t)block / (size_t)nr * bpanel));
    const int32_t *rowsum = (const int32_t *)(const void *)((const char *)packed_a + h.sums_off);
    const int32_t *zap = rowsum + (h.m + mr - 1) / mr * mr;
    const uint32_t bshift = b->is_signed ? 128u : 0u;
    for (int64_t j0 = 0; j0 < n; j0 += IG_NC) {
        int64_t nc = n - j0 < IG_NC ? n - j0 : IG_NC;
        int64_t np = (nc + nr - 1) / nr;
        for (int64_t p = 0; p < np; p++) {
            int cols = (int)(nc - p * nr < nr ? nc - p * nr : nr);
            const ig_sized_kernel *kern = isa->kernels;
            while (cols > kern->max_cols)
                kern++;
            char *panel = bp + (size_t)p * bpanel;
            if (kern->max_cols < nr && isa->esz == 1 && isa->kg == 4 &&
                (!b->trans || kern->max_cols == 1)) {
                ig_pack_b_narrow(b, k, groups, nr, j0 + p * nr, cols, kern->max_cols,
                                 (uint8_t *)panel);
                for (int j = 0; j < cols && !h.zero_za; j++) {
                    uint32_t sum = 0;
                    for (int64_t g = 0; g < groups; g++)
                        for (int r = 0; r < 4; r++)
                            sum += ((const uint8_t *)panel)[kern->max_cols == 1
                                                                ? g / 2 * 64 + g % 2 * 32 + r
                                                                : (g * nr + j) * 4 + r];
                    colsum[p * nr + j] = (int32_t)sum;
                }
                continue;
            }
            ig_pack_b(isa, b, k, j0 + p * nr, cols, panel);
            if (!h.zero_za)
                isa->colsum(groups, panel, colsum + p * nr);
        }
        /* each B panel stays in L1 while the (smaller) A panels pass it:
         * the other order streamed a whole B panel from L2 per call. When
         * A is the bigger side (a classifier's weights by a few rows:
         * dddd_ocr_q's 8210 x 1024 by 24, 16.8 MB packed), its panels go
         * past the block's B panels once, not once per B panel. */
        const bool a_outer = (size_t)m * (size_t)h.kp * (size_t)isa->esz > (size_t)np * bpanel;
        const int64_t n_outer = a_outer ? (m + mr - 1) / mr : np;
        const int64_t n_inner = a_outer ? np : (m + mr - 1) / mr;
#ifdef IG_X86
        if (isa->amx)
            ig_amx_begin();
#endif
        for (int64_t u = 0; u < n_outer; u++)
            for (int64_t w = 0; w < n_inner; w++) {
                int64_t p = a_outer ? w : u, i0 = (a_outer ? u : w) * mr;
                int cols = (int)(nc - p * nr < nr ? nc - p * nr : nr);
                const ig_sized_kernel *kern = isa->kernels;
                while (cols > kern->max_cols)
                    kern++;
                int rows = (int)(m - i0 < mr ? m - i0 : mr);
                const char *ap = (const char *)packed_a + IG_HEAD +
                                 (size_t)((first_row + i0) / mr) * h.panel_bytes;
                kern->fn(groups, ap, bp + (size_t)p * bpanel, c + i0 * ldc + j0 + p * nr, ldc,
                         rows, cols);
            }
#ifdef IG_X86
        if (isa->amx)
            ig_amx_end();
#endif
        /* the zero points: - zb * rowsum - za * colsum + K * za * zb */
        if (nc == 1) {
            /* a matrix-vector product: one loop down the column */
            const uint32_t zbv =
                (uint32_t)(zb == NULL ? 0 : zb_per_col ? zb[j0] : zb[0]) + bshift;
            const uint32_t cs = h.zero_za ? 0u : (uint32_t)colsum[0], kz = (uint32_t)k * zbv;
            const uint32_t *rs = (const uint32_t *)(const void *)(rowsum + first_row);
            const uint32_t *za = (const uint32_t *)(const void *)(zap + first_row);
            uint32_t *ci = (uint32_t *)(void *)(c + j0);
            if (ldc == 1)
                for (int64_t i = 0; i < m; i++)
                    ci[i] += za[i] * (kz - cs) - zbv * rs[i];
            else
                for (int64_t i = 0; i < m; i++)
                    ci[i * ldc] += za[i] * (kz - cs) - zbv * rs[i];
            continue;
        }
        for (int64_t i = 0; i < m; i++) {
            uint32_t rs = (uint32_t)rowsum[first_row + i], za = (uint32_t)zap[first_row + i];
            uint32_t *ci = (uint32_t *)(void *)(c + i * ldc + j0);
            if (!zb_per_col) {
                uint32_t zbv = (uint32_t)(zb != NULL ? zb[0] : 0) + bshift;
                ig_fix_row(ci, h.zero_za ? NULL : colsum, nc, (uint32_t)k * za * zbv - zbv * rs,
                           za);
                continue;
            }
            for (int64_t j = 0; j < nc; j++) {
                uint32_t zbv = (uint32_t)zb[j0 + j] + bshift;
                uint32_t cs = h.zero_za ? 0u : (uint32_t)colsum[j];
                ci[j] += (uint32_t)k * za * zbv - zbv * rs - za * cs;
            }
        }
    }
}

/* ---- a matrix-vector product by a packed matrix (igemm.h) ---------------- */

/* What a packed matrix starts with (IG_HEAD bytes), then ZA and the row
 * sums (M rounded up to 8, i32 each), then the panels. */
typedef struct ig_v_head {
    int64_t m, k, groups;
    int32_t a_signed;
} ig_v_head;

_Static_assert(sizeof(ig_v_head) <= IG_HEAD, "the packed matrix header fits its slot");

#define IG_V_ROWS 8

static size_t ig_v_rows8(int64_t m)
{
    return (size_t)((m + IG_V_ROWS - 1) / IG_V_ROWS * IG_V_ROWS);
}

size_t cpu_igemv_packed_bytes(int64_t m, int64_t k)
{
    if (ig_isa_get()->esz != 2 || m <= 0 || k <= 0)
        return 0;
    size_t groups = (size_t)(k + 1) / 2;
    return IG_HEAD + ig_round64(2 * ig_v_rows8(m) * sizeof(int32_t)) +
           ig_v_rows8(m) / IG_V_ROWS * groups * 16;
}

void cpu_igemv_pack(int64_t m, int64_t k, const cpu_igemm_q8 *a, const int32_t *za,
                    bool za_per_row, void *out)
{
    ig_v_head h = {.m = m, .k = k, .groups = (k + 1) / 2, .a_signed = a->is_signed};
    memcpy(out, &h, sizeof h);
    const size_t rows8 = ig_v_rows8(m);
    int32_t *zap = (int32_t *)(void *)((char *)out + IG_HEAD), *rowsum = zap + rows8;
    uint8_t *panels = (uint8_t *)out + IG_HEAD + ig_round64(2 * rows8 * sizeof(int32_t));
    const uint8_t *src = a->data;
    for (size_t i = 0; i < rows8; i++) {
        int32_t sum = 0;
        for (int64_t q = 0; (int64_t)i < m && q < k; q++) {
            size_t at = a->trans ? (size_t)(q * a->ld) + i : i * (size_t)a->ld + (size_t)q;
            sum += a->is_signed ? (int32_t)(int8_t)src[at] : (int32_t)src[at];
        }
        zap[i] = (int64_t)i < m && za != NULL ? za[za_per_row ? i : 0] : 0;
        rowsum[i] = sum;
        uint8_t *panel = panels + i / IG_V_ROWS * (size_t)h.groups * 16 + i % IG_V_ROWS * 2;
        for (int64_t g = 0; g < h.groups; g++)
            for (int64_t q = 2 * g; q < 2 * g + 2; q++) {
                size_t at = a->trans ? (size_t)(q * a->ld) + i : i * (size_t)a->ld + (size_t)q;
                panel[g * 16 + (q - 2 * g)] = (int64_t)i < m && q < k ? src[at] : 0;
            }
    }
}

size_t cpu_igemv_scratch_bytes(int64_t k)
{
    return (size_t)((k + 1) / 2 + 1) * sizeof(int32_t);
}

#ifdef IG_X86
/* One group of eight rows' pairs at P, widened to i16 (sign-extended when
 * SIGNED, a constant where it is inlined). */
__attribute__((target("avx2"), always_inline)) static inline __m256i
ig_v_load(const uint8_t *p, bool is_signed)
{
    __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)p);
    return is_signed ? _mm256_cvtepi8_epi16(raw) : _mm256_cvtepu8_epi16(raw);
}

/* One panel of eight rows: a group is one 16-byte load of the rows' pairs,
 * widened to i16, one broadcast of X's pair and one vpmaddwd; four groups
 * in flight. */
__attribute__((target("avx2"), always_inline)) static inline void
ig_v_panel_body(const uint8_t *panel, int64_t groups, const int32_t *xp, bool is_signed,
                int32_t *out)
{
    __m256i acc[4];
#pragma GCC unroll 4
    for (int u = 0; u < 4; u++)
        acc[u] = _mm256_setzero_si256();
    int64_t g = 0;
    for (; g + 4 <= groups; g += 4)
#pragma GCC unroll 4
        for (int u = 0; u < 4; u++)
            acc[u] = _mm256_add_epi32(acc[u],
                                      _mm256_madd_epi16(ig_v_load(panel + (g + u) * 16, is_signed),
                                                        _mm256_set1_epi32(xp[g + u])));
    for (; g < groups; g++)
        acc[0] = _mm256_add_epi32(acc[0], _mm256_madd_epi16(ig_v_load(panel + g * 16, is_signed),
                                                            _mm256_set1_epi32(xp[g])));
    __m256i t = _mm256_add_epi32(_mm256_add_epi32(acc[0], acc[1]),
                                 _mm256_add_epi32(acc[2], acc[3]));
    _mm256_storeu_si256((__m256i *)(void *)out, t);
}

__attribute__((target("avx2"))) static void ig_v_panel_avx2(const uint8_t *panel, int64_t groups,
                                                           const int32_t *xp, bool a_signed,
                                                           int32_t *out)
{
    if (a_signed)
        ig_v_panel_body(panel, groups, xp, true, out);
    else
        ig_v_panel_body(panel, groups, xp, false, out);
}
#endif

/* The parts of a cpu_igemv_pack'ed matrix: its header into *H, the rows'
 * zero points and sums, and (returned) the panels. */
static const uint8_t *ig_v_open(const void *packed, ig_v_head *h, const int32_t **zap,
                                const int32_t **rowsum)
{
    memcpy(h, packed, sizeof *h);
    const size_t rows8 = ig_v_rows8(h->m);
    *zap = (const int32_t *)(const void *)((const char *)packed + IG_HEAD);
    *rowsum = *zap + rows8;
    return (const uint8_t *)packed + IG_HEAD + ig_round64(2 * rows8 * sizeof(int32_t));
}

#ifdef IG_X86
/* Up to four columns of one panel of eight rows: a group is one 16-byte
 * load of the rows' pairs, widened to i16, and per column one broadcast
 * of its pair and one vpmaddwd. OUT[j][r]: column j, row r. */
__attribute__((target("avx2"), always_inline)) static inline void
ig_v_cols_body(const uint8_t *panel, int64_t groups, const int32_t *xp, int nc, bool is_signed,
               int32_t out[4][IG_V_ROWS])
{
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
    for (int64_t g = 0; g < groups; g++) {
        __m256i av = ig_v_load(panel + g * 16, is_signed);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++)
            if (j < nc)
                acc[j] = _mm256_add_epi32(
                    acc[j], _mm256_madd_epi16(av, _mm256_set1_epi32(xp[j * groups + g])));
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        _mm256_storeu_si256((__m256i *)(void *)out[j], acc[j]);
}

/* XP[g] for g < GROUPS (a multiple of 8): bytes 2g and 2g + 1 of SRC as
 * two i16 in an i32, widened 16 bytes a load; their sum added to *SUM.
 * Returns GROUPS. */
__attribute__((target("avx2"))) static int64_t ig_v_pairs_avx2(const uint8_t *src, int64_t groups,
                                                              bool is_signed, int32_t *xp,
                                                              uint32_t *sum)
{
    __m256i s = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t g = 0; g < groups; g += 8) {
        __m256i w = ig_v_load(src + 2 * g, is_signed);
        _mm256_storeu_si256((__m256i *)(void *)(xp + g), w);
        s = _mm256_add_epi32(s, _mm256_madd_epi16(w, ones));
    }
    int32_t t[8];
    _mm256_storeu_si256((__m256i *)(void *)t, s);
    for (int i = 0; i < 8; i++)
        *sum += (uint32_t)t[i];
    return groups;
}

__attribute__((target("avx2"))) static void ig_v_cols_avx2(const uint8_t *panel, int64_t groups,
                                                          const int32_t *xp, int nc,
                                                          bool a_signed, int32_t out[4][IG_V_ROWS])
{
    /* NC and the sign as constants: four bodies */
    if (a_signed)
        nc <= 2 ? ig_v_cols_body(panel, groups, xp, 2, true, out)
                : ig_v_cols_body(panel, groups, xp, 4, true, out);
    else
        nc <= 2 ? ig_v_cols_body(panel, groups, xp, 2, false, out)
                : ig_v_cols_body(panel, groups, xp, 4, false, out);
}
#endif

size_t cpu_igemv_cols_scratch_bytes(int64_t k)
{
    return (size_t)((k + 1) / 2 + 1) * 4 * sizeof(int32_t);
}

int cpu_igemv_rows(void)
{
    return IG_V_ROWS;
}

void cpu_igemv_cols(const void *packed, int64_t first_row, int64_t m, int64_t n,
                    const cpu_igemm_q8 *b, int32_t zb, int32_t *c, int64_t ldc, void *scratch)
{
    ig_v_head h;
    const int32_t *zap, *rowsum;
    const uint8_t *panels = ig_v_open(packed, &h, &zap, &rowsum);
    const uint8_t *bd = b->data;
    int32_t *xp = scratch; /* [4 columns][group]: each column's pair as two i16 */
    for (int64_t j0 = 0; j0 < n; j0 += 4) {
        const int nc = n - j0 < 4 ? (int)(n - j0) : 4;
        uint32_t sumx[4] = {0, 0, 0, 0};
        for (int j = 0; j < 4; j++) {
            int64_t g = 0, col = j0 + j;
            int32_t *xj = xp + j * h.groups;
#ifdef IG_X86
            /* a column of a transposed B is contiguous: 8 pairs a load */
            if (j < nc && b->trans)
                g = ig_v_pairs_avx2(bd + col * b->ld, h.k / 16 * 8, b->is_signed, xj, &sumx[j]);
#endif
            for (; g < h.groups; g++) {
                int32_t v[2] = {0, 0};
                for (int q = 0; q < 2 && j < nc && 2 * g + q < h.k; q++) {
                    int64_t r = 2 * g + q;
                    size_t at = b->trans ? (size_t)(col * b->ld + r)
                                : b->row_off != NULL ? (size_t)(b->row_off[r] + col)
                                                     : (size_t)(r * b->ld + col);
                    v[q] = b->is_signed ? (int32_t)(int8_t)bd[at] : (int32_t)bd[at];
                    sumx[j] += (uint32_t)v[q];
                }
                xj[g] = (int32_t)(((uint32_t)v[0] & 0xffffu) | ((uint32_t)v[1] << 16));
            }
        }
        for (int64_t p = first_row / IG_V_ROWS; p * IG_V_ROWS < first_row + m; p++) {
            int32_t sums[4][IG_V_ROWS];
            const uint8_t *panel = panels + (size_t)p * (size_t)h.groups * 16;
#ifdef IG_X86
            ig_v_cols_avx2(panel, h.groups, xp, nc, h.a_signed != 0, sums);
#else
            memset(sums, 0, sizeof sums);
            for (int64_t g = 0; g < h.groups; g++)
                for (int j = 0; j < nc; j++)
                    for (int r = 0; r < IG_V_ROWS; r++)
                        for (int q = 0; q < 2; q++) {
                            int32_t a = h.a_signed ? (int32_t)(int8_t)panel[g * 16 + 2 * r + q]
                                                   : (int32_t)panel[g * 16 + 2 * r + q];
                            uint32_t w = (uint32_t)xp[j * h.groups + g];
                            int32_t xv = (int16_t)(q ? w >> 16 : w);
                            sums[j][r] = (int32_t)((uint32_t)sums[j][r] + (uint32_t)(a * xv));
                        }
#endif
            for (int r = 0; r < IG_V_ROWS; r++) {
                int64_t i = p * IG_V_ROWS + r;
                if (i < first_row || i >= first_row + m)
                    continue;
                uint32_t za = (uint32_t)zap[i], z = (uint32_t)zb;
                for (int j = 0; j < nc; j++)
                    c[(i - first_row) * ldc + j0 + j] =
                        (int32_t)((uint32_t)sums[j][r] - z * (uint32_t)rowsum[i] -
                                  za * sumx[j] + (uint32_t)h.k * za * z);
            }
        }
    }
}

void cpu_igemv(const void *packed, const void *x, bool x_signed, int32_t zx, int32_t *y,
               void *scratch)
{
    ig_v_head h;
    const int32_t *zap, *rowsum;
    const uint8_t *panels = ig_v_open(packed, &h, &zap, &rowsum);
    /* X's pairs as two i16 in an i32, and their sum */
    int32_t *xp = scratch;
    uint32_t sumx = 0;
    for (int64_t g = 0; g < h.groups; g++) {
        int32_t v[2] = {0, 0};
        for (int q = 0; q < 2 && 2 * g + q < h.k; q++) {
            v[q] = x_signed ? (int32_t)((const int8_t *)x)[2 * g + q]
                            : (int32_t)((const uint8_t *)x)[2 * g + q];
            sumx += (uint32_t)v[q];
        }
        xp[g] = (int32_t)(((uint32_t)v[0] & 0xffffu) | ((uint32_t)v[1] << 16));
    }
    for (size_t p = 0; p < ig_v_rows8(h.m) / IG_V_ROWS; p++) {
        int32_t sums[IG_V_ROWS] = {0};
        const uint8_t *panel = panels + p * (size_t)h.groups * 16;
#ifdef IG_X86
        ig_v_panel_avx2(panel, h.groups, xp, h.a_signed != 0, sums);
#else
        for (int64_t g = 0; g < h.groups; g++)
            for (int r = 0; r < IG_V_ROWS; r++)
                for (int q = 0; q < 2; q++) {
                    int32_t a = h.a_signed ? (int32_t)(int8_t)panel[g * 16 + 2 * r + q]
                                           : (int32_t)panel[g * 16 + 2 * r + q];
                    int32_t xv = (int16_t)(q ? (uint32_t)xp[g] >> 16 : (uint32_t)xp[g]);
                    sums[r] = (int32_t)((uint32_t)sums[r] + (uint32_t)(a * xv));
                }
#endif
        for (int r = 0; r < IG_V_ROWS; r++) {
            size_t i = p * IG_V_ROWS + (size_t)r;
            if ((int64_t)i >= h.m)
                break;
            uint32_t za = (uint32_t)zap[i], z = (uint32_t)zx;
            y[i] = (int32_t)((uint32_t)sums[r] - z * (uint32_t)rowsum[i] - za * sumx +
                             (uint32_t)h.k * za * z);
        }
    }
}
