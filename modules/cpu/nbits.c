/* nbits.c — com.microsoft MatMulNBits on its packed weights: the 4-bit
 * (and 8-bit) block-quantized products of onnxruntime-genai's LLMs and of
 * ONNX Runtime's MatMulNBitsQuantizer. The module registers the op, so
 * the core leaves it as written (its lowering, which dequantizes B to f32
 * constants at load, serves runtimes without this module).
 *
 * Y [..., N] = A [..., K] x W^T (+ bias [N]), W [N, K] the dequantized B:
 * B [N, blocks, block_size * bits / 8] u8, values of block_size along K a
 * block, 4-bit ones low nibble first; W[n, k] = scale[n, b] * (q - zero),
 * zero from zero_points (absent: 2^(bits-1); u8, packed like B for 4 bits
 * (two blocks a byte, low first), one a byte for 8; or f32, one a block),
 * as the lowering computes it. f32 A, Y, scales and bias; g_idx refused.
 * B, scales and zero points are read where they lie on each run (nothing
 * is copied: the weights stay in their 4-bit form, an eighth of f32).
 *
 * A few rows of A (a decode step): per row of W and block, the dot of the
 * block's values with A's, times the scale, minus scale x zero x the sum
 * of A's block (16 lanes; the 4-bit values dot A's even and odd entries,
 * split once a run); rows of W over the pool. More rows (a prompt): W
 * dequantized 64 rows at a time into f32 and multiplied on the module's
 * GEMM. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "gemm.h"
#include "index_kernel.h"

static pl_status *nb_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_nbits[] = {
    {"MatMulNBits", nb_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MS_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Rows of A up to which each goes through the dot products. */
#define NB_GEMV_MAX_M 4
/* Rows of W a task dequantizes for the GEMM. */
#define NB_TILE 64

enum { NB_ZP_NONE, NB_ZP_U8, NB_ZP_F32 };

typedef struct nb_kernel {
    pl_kernel base;
    int64_t k, n, bits, bs, kb, blob, m;
    int zp;        /* NB_ZP_* */
    bool bias;
    bool int8;     /* accuracy_level 4, 4 bits, whole 128-value chunks: A in int8 */
} nb_kernel;

typedef struct nb_job {
    const nb_kernel *k;
    const float *a, *scale, *zf, *bias;
    const uint8_t *b, *zu;
    float *y;
    const float *split; /* rows of A split for the dot products: per row, even then
                           odd entries (4 bits) or A padded (8 bits), then block sums */
    size_t split_row;   /* floats a row of SPLIT takes */
    int failed;         /* a tile task found no memory (atomic) */
    const float *a_packed; /* A packed for the GEMM (many rows) */
    /* the int8 path: per row of A, its blocks' even entries (QE) and odd
     * ones (QO) quantized, every block's in turn; per block the scale and
     * scale x the sum of its quantized entries (QF: SCALES then SUMS) */
    const int8_t *qe, *qo;
    const float *qf;
    size_t qrow;        /* bytes a row of QE (and QO) takes */
} nb_job;

/* The zero point of row N, block B. */
static inline float nb_zero(const nb_job *j, int64_t n, int64_t b)
{
    const nb_kernel *k = j->k;
    if (k->zp == NB_ZP_F32)
        return j->zf[n * k->kb + b];
    if (k->zp == NB_ZP_NONE)
        return (float)(1 << (k->bits - 1));
    if (k->bits == 8)
        return (float)j->zu[n * k->kb + b];
    uint8_t v = j->zu[n * ((k->kb + 1) / 2) + b / 2];
    return (float)(b % 2 ? v >> 4 : v & 15);
}

/* Rows [BEGIN, END) of W against the M split rows of A (the portable
 * loop; nb_dots_avx512 and nb_dots_avx2 below). */
static void nb_dots(const nb_job *j, size_t begin, size_t end)
{
    const nb_kernel *k = j->k;
    int64_t half = k->bs / 2;
    for (int64_t r = 0; r < k->m; r++) {
        const float *row = j->split + (size_t)r * j->split_row;
        const float *sums = row + k->kb * k->bs;
        for (size_t n = begin; n < end; n++) {
            const uint8_t *q = j->b + n * (size_t)(k->kb * k->blob);
            float lane[16] = {0};
            float off = 0.0f;
            for (int64_t b = 0; b < k->kb; b++, q += k->blob) {
                float s = j->scale[(int64_t)n * k->kb + b];
                off += s * nb_zero(j, (int64_t)n, b) * sums[b];
                if (k->bits == 4) {
                    const float *ev = row + b * k->bs, *od = ev + half;
                    /* blocks of 16 hold 8 bytes: a step of fewer lanes */
                    for (int64_t i = 0; i < half; i += 16) {
                        int w = half - i < 16 ? (int)(half - i) : 16;
                        for (int l = 0; l < w; l++)
                            lane[l] += s * ((float)(q[i + l] & 15) * ev[i + l] +
                                            (float)(q[i + l] >> 4) * od[i + l]);
                    }
                } else {
                    const float *av = row + b * k->bs;
                    for (int64_t i = 0; i < k->bs; i += 16) {
                        float t[16];
                        for (int l = 0; l < 16; l++)
                            t[l] = (float)q[i + l] * av[i + l];
                        for (int l = 0; l < 16; l++)
                            lane[l] += s * t[l];
                    }
                }
            }
            float v = -off;
            for (int l = 0; l < 16; l++)
                v += lane[l];
            if (j->bias != NULL)
                v += j->bias[n];
            j->y[r * k->n + (int64_t)n] = v;
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Row N's sum over blocks of scale x zero x A's block sum (SUMS): the
 * zero points' part of its dot product, in loops that vectorise (a block
 * at a time through nb_zero was 40% of a decode step). */
static inline __attribute__((always_inline)) float nb_offset(const nb_job *j, int64_t n,
                                                             const float *sums)
{
    const nb_kernel *k = j->k;
    const float *sc = j->scale + n * k->kb;
    int64_t kb = k->kb, b = 0;
    float lane[8] = {0}, v = 0.0f;
    if (k->zp == NB_ZP_U8 && k->bits == 4) {
        const uint8_t *z = j->zu + n * ((kb + 1) / 2);
        for (; b + 16 <= kb; b += 16)
            for (int l = 0; l < 8; l++)
                lane[l] += sc[b + 2 * l] * (float)(z[b / 2 + l] & 15) * sums[b + 2 * l] +
                           sc[b + 2 * l + 1] * (float)(z[b / 2 + l] >> 4) * sums[b + 2 * l + 1];
        for (; b + 2 <= kb; b += 2)
            v += sc[b] * (float)(z[b / 2] & 15) * sums[b] +
                 sc[b + 1] * (float)(z[b / 2] >> 4) * sums[b + 1];
    } else if (k->zp == NB_ZP_U8) {
        const uint8_t *z = j->zu + n * kb;
        for (; b + 8 <= kb; b += 8)
            for (int l = 0; l < 8; l++)
                lane[l] += sc[b + l] * (float)z[b + l] * sums[b + l];
    } else if (k->zp == NB_ZP_F32) {
        const float *z = j->zf + n * kb;
        for (; b + 8 <= kb; b += 8)
            for (int l = 0; l < 8; l++)
                lane[l] += sc[b + l] * z[b + l] * sums[b + l];
    } else {
        float z = (float)(1 << (k->bits - 1));
        for (; b + 8 <= kb; b += 8)
            for (int l = 0; l < 8; l++)
                lane[l] += sc[b + l] * z * sums[b + l];
    }
    for (; b < kb; b++)
        v += sc[b] * nb_zero(j, n, b) * sums[b];
    for (int l = 0; l < 8; l++)
        v += lane[l];
    return v;
}

/* Rows N.. N + 3 of W (those past END repeat row N): their weights in Q and
 * scales in SC; the count that are real. */
static inline __attribute__((always_inline)) int nb_rows4(const nb_job *j, size_t n, size_t end,
                                                         const uint8_t **q, const float **sc)
{
    const nb_kernel *k = j->k;
    int rows = end - n < 4 ? (int)(end - n) : 4;
    for (int w = 0; w < 4; w++) {
        size_t nn = n + (size_t)(w < rows ? w : 0);
        q[w] = j->b + nn * (size_t)(k->kb * k->blob);
        sc[w] = j->scale + nn * (size_t)k->kb;
    }
    return rows;
}

/* Y[R, N + w] for the ROWS real ones of four: the dot TOT[w], less the zero
 * points' part (A's block sums SUMS), plus the bias. Inlined where it is
 * called, so nb_offset vectorises for the caller's ISA (called, it cost
 * the int8 path a third of its time). */
static inline __attribute__((always_inline)) void nb_store4(const nb_job *j, int64_t r, size_t n,
                                                           int rows, const float *tot,
                                                           const float *sums)
{
    for (int w = 0; w < rows; w++) {
        float v = tot[w] - nb_offset(j, (int64_t)(n + w), sums);
        if (j->bias != NULL)
            v += j->bias[n + w];
        j->y[r * j->k->n + (int64_t)(n + w)] = v;
    }
}

/* nb_dots in AVX-512: four rows of W at a time (four chains of
 * multiply-adds in flight, A's entries loaded once for them), a block's 16
 * bytes of a row widened to 16 lanes, the low and high nibbles times A's
 * even and odd entries (or the bytes times A's for 8 bits), scaled into
 * the row's accumulator; the zero points' part after (nb_offset). Blocks
 * of 16 bytes or more (4 bits: block_size 32 and up; else the generic
 * loop). */
__attribute__((target("avx512f,avx512bw,fma"))) static void nb_dots_avx512(const nb_job *j,
                                                                          size_t begin,
                                                                          size_t end)
{
    const nb_kernel *k = j->k;
    int64_t half = k->bs / 2;
    if (k->bits == 4 && half % 16 != 0) {
        nb_dots(j, begin, end);
        return;
    }
    const __m512i low = _mm512_set1_epi32(15);
    for (int64_t r = 0; r < k->m; r++) {
        const float *row = j->split + (size_t)r * j->split_row;
        const float *sums = row + k->kb * k->bs;
        for (size_t n = begin; n < end; n += 4) {
            const uint8_t *q[4];
            const float *sc[4];
            int rows = nb_rows4(j, n, end, q, sc);
            __m512 acc[4];
            for (int w = 0; w < 4; w++)
                acc[w] = _mm512_setzero_ps();
            for (int64_t b = 0; b < k->kb; b++) {
                const float *av = row + b * k->bs;
                int64_t qb = b * k->blob;
                __m512 t[4];
                for (int w = 0; w < 4; w++)
                    t[w] = _mm512_setzero_ps();
                if (k->bits == 4) {
                    for (int64_t i = 0; i < half; i += 16) {
                        __m512 ev = _mm512_loadu_ps(av + i), od = _mm512_loadu_ps(av + half + i);
                        for (int w = 0; w < 4; w++) {
                            __m512i x = _mm512_cvtepu8_epi32(
                                _mm_loadu_si128((const __m128i *)(q[w] + qb + i)));
                            t[w] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(x, low)), ev, t[w]);
                            t[w] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(x, 4)), od, t[w]);
                        }
                    }
                } else {
                    for (int64_t i = 0; i < k->bs; i += 16) {
                        __m512 a = _mm512_loadu_ps(av + i);
                        for (int w = 0; w < 4; w++) {
                            __m512i x = _mm512_cvtepu8_epi32(
                                _mm_loadu_si128((const __m128i *)(q[w] + qb + i)));
                            t[w] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(x), a, t[w]);
                        }
                    }
                }
                for (int w = 0; w < 4; w++)
                    acc[w] = _mm512_fmadd_ps(_mm512_set1_ps(sc[w][b]), t[w], acc[w]);
            }
            float tot[4];
            for (int w = 0; w < 4; w++)
                tot[w] = _mm512_reduce_add_ps(acc[w]);
            nb_store4(j, r, n, rows, tot, sums);
        }
    }
}

/* nb_dots in AVX2: eight bytes at a time. */
__attribute__((target("avx2,fma"))) static void nb_dots_avx2(const nb_job *j, size_t begin,
                                                              size_t end)
{
    const nb_kernel *k = j->k;
    int64_t half = k->bs / 2;
    const __m256i low = _mm256_set1_epi32(15);
    for (int64_t r = 0; r < k->m; r++) {
        const float *row = j->split + (size_t)r * j->split_row;
        const float *sums = row + k->kb * k->bs;
        for (size_t n = begin; n < end; n++) {
            const uint8_t *q = j->b + n * (size_t)(k->kb * k->blob);
            __m256 acc = _mm256_setzero_ps();
            float off = 0.0f;
            for (int64_t b = 0; b < k->kb; b++, q += k->blob) {
                float s = j->scale[(int64_t)n * k->kb + b];
                off += s * nb_zero(j, (int64_t)n, b) * sums[b];
                __m256 t = _mm256_setzero_ps();
                const float *av = row + b * k->bs;
                if (k->bits == 4) {
                    for (int64_t i = 0; i < half; i += 8) {
                        __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + i)));
                        __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, low));
                        __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(w, 4));
                        t = _mm256_fmadd_ps(lo, _mm256_loadu_ps(av + i), t);
                        t = _mm256_fmadd_ps(hi, _mm256_loadu_ps(av + half + i), t);
                    }
                } else {
                    for (int64_t i = 0; i < k->bs; i += 8) {
                        __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(q + i)));
                        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(w), _mm256_loadu_ps(av + i), t);
                    }
                }
                acc = _mm256_fmadd_ps(_mm256_set1_ps(s), t, acc);
            }
            __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
            h = _mm_add_ps(h, _mm_movehl_ps(h, h));
            h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
            float v = _mm_cvtss_f32(h) - off;
            if (j->bias != NULL)
                v += j->bias[n];
            j->y[r * k->n + (int64_t)n] = v;
        }
    }
}
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* Whether this CPU has AVX-512 VNNI (and BW). */
static bool nb_has_vnni(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = cpu_has_isa(CPU_ISA_AVX512_BW) && __builtin_cpu_supports("avx512vnni");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v != 0;
}

/* nb_dots for accuracy_level 4 (ONNX Runtime's int8 compute): A's blocks
 * quantized to int8 (a scale per block, max |a| / 127), W's nibbles as
 * unsigned bytes, 64 bytes of a row of W (128 values: 128 / block_size
 * blocks) against 64 of A's even and odd entries in two VNNI dot products
 * into 16 int32 lanes, block_size / 8 lanes a block, then each lane times
 * its block's two scales into f32; zero points as in nb_dots, with A's
 * quantized block sums. Four rows of W at a time. */
__attribute__((target("avx512f,avx512bw,avx512vnni,fma"))) static void
nb_dots_vnni(const nb_job *j, size_t begin, size_t end)
{
    const nb_kernel *k = j->k;
    int64_t half = k->kb * k->bs / 2, chunks = half / 64, per = k->bs / 8;
    int64_t bpc = 128 / k->bs; /* blocks a chunk (0: a block spans chunks) */
    const __m512i low = _mm512_set1_epi8(15);
    int idx[16];
    for (int l = 0; l < 16; l++)
        idx[l] = bpc > 0 ? l / (int)per : 0;
    const __m512i lanes = _mm512_loadu_si512(idx);
    const __mmask16 bmask = (__mmask16)((1u << (bpc > 0 ? bpc : 1)) - 1);
    for (int64_t r = 0; r < k->m; r++) {
        const int8_t *qe = j->qe + (size_t)r * j->qrow, *qo = j->qo + (size_t)r * j->qrow;
        const float *as = j->qf + (size_t)r * 2 * (size_t)k->kb, *sums = as + k->kb;
        for (size_t n = begin; n < end; n += 4) {
            const uint8_t *q[4];
            const float *sc[4];
            int rows = nb_rows4(j, n, end, q, sc);
            __m512 acc[4];
            for (int w = 0; w < 4; w++)
                acc[w] = _mm512_setzero_ps();
            for (int64_t c = 0; c < chunks; c++) {
                __m512i e = _mm512_loadu_si512(qe + c * 64), o = _mm512_loadu_si512(qo + c * 64);
                int64_t b0 = bpc > 0 ? c * bpc : c * 128 / k->bs;
                /* the chunk's blocks' scales (a masked load reads no
                 * further), spread over their lanes */
                __m512 sa = bpc > 0 ? _mm512_permutexvar_ps(lanes, _mm512_maskz_loadu_ps(bmask, as + b0))
                                    : _mm512_set1_ps(as[b0]);
                for (int w = 0; w < 4; w++) {
                    __m512i x = _mm512_loadu_si512(q[w] + c * 64);
                    __m512i lo = _mm512_and_si512(x, low);
                    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
                    __m512i d = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, e);
                    d = _mm512_dpbusd_epi32(d, hi, o);
                    __m512 sw = bpc > 0 ? _mm512_permutexvar_ps(
                                              lanes, _mm512_maskz_loadu_ps(bmask, sc[w] + b0))
                                        : _mm512_set1_ps(sc[w][b0]);
                    acc[w] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(sw, sa), acc[w]);
                }
            }
            float tot[4];
            for (int w = 0; w < 4; w++)
                tot[w] = _mm512_reduce_add_ps(acc[w]);
            nb_store4(j, r, n, rows, tot, sums);
        }
    }
}
#endif

static void nb_dots_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const nb_job *j = arg;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (j->qe != NULL) {
        nb_dots_vnni(j, begin, end);
        return;
    }
    if (cpu_has_isa(CPU_ISA_AVX512_BW)) {
        nb_dots_avx512(j, begin, end);
        return;
    }
    if (cpu_has_isa(CPU_ISA_AVX2_FMA)) {
        nb_dots_avx2(j, begin, end);
        return;
    }
#endif
    nb_dots(j, begin, end);
}

/* W's rows [N0, N0 + ROWS) as the GEMM's packed B (W^T: panels of NR
 * columns, K steps of NR floats each; columns past ROWS zero), a block of
 * a row unpacked at a time (s q - s z, a byte's two values together, in
 * loops that vectorise) and written down its column of the block's
 * region of the panel (32 x NR floats, in L1). */
static inline __attribute__((always_inline)) void nb_dequant_body(const nb_job *j, int64_t n0,
                                                                  int64_t rows, float *out)
{
    const nb_kernel *k = j->k;
    int64_t nr = cpu_gemm_nr(), panels = (rows + nr - 1) / nr;
    float tmp[256];
    for (int64_t pn = 0; pn < panels; pn++) {
        float *panel = out + pn * nr * k->k;
        for (int64_t b = 0; b < k->kb; b++) {
            int64_t base = b * k->bs, cnt = k->k - base < k->bs ? k->k - base : k->bs;
            for (int64_t c0 = 0; c0 < cnt; c0 += 256) {
                int64_t part = cnt - c0 < 256 ? cnt - c0 : 256;
                float *dst = panel + (base + c0) * nr;
                for (int64_t c = 0; c < nr; c++) {
                    int64_t r = pn * nr + c, n = n0 + r;
                    if (r >= rows) {
                        for (int64_t i = 0; i < part; i++)
                            dst[i * nr + c] = 0.0f;
                        continue;
                    }
                    const uint8_t *q = j->b + (n * k->kb + b) * k->blob;
                    float s = j->scale[n * k->kb + b], sz = s * nb_zero(j, n, b);
                    if (k->bits == 4) {
                        const uint8_t *qq = q + c0 / 2;
                        for (int64_t i = 0; i < part / 2; i++) {
                            tmp[2 * i] = s * (float)(qq[i] & 15) - sz;
                            tmp[2 * i + 1] = s * (float)(qq[i] >> 4) - sz;
                        }
                        if (part % 2)
                            tmp[part - 1] = s * (float)(qq[part / 2] & 15) - sz;
                    } else {
                        for (int64_t i = 0; i < part; i++)
                            tmp[i] = s * (float)q[c0 + i] - sz;
                    }
                    for (int64_t i = 0; i < part; i++)
                        dst[i * nr + c] = tmp[i];
                }
            }
        }
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* Transposes the 16 x 16 floats at SRC (rows of LD floats) into DST (rows
 * of LDD floats). */
__attribute__((target("avx512f"))) static inline void nb_t16(const float *src, int64_t ld,
                                                             float *dst, int64_t ldd)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(src + i * ld);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    /* 4 x 4 blocks of 128-bit lanes, regrouped in two rounds */
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
    for (int i = 0; i < 16; i++)
        _mm512_storeu_ps(dst + i * ldd, r[i]);
}
#endif

static void nb_dequant_plain(const nb_job *j, int64_t n0, int64_t rows, float *out)
{
    nb_dequant_body(j, n0, rows, out);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* nb_dequant_body in AVX-512: 16 rows of a block unpacked into rows of
 * floats, then written into the panel 16 x 16 at a time, transposed in
 * registers (nb_t16): the scalar stores down the columns took 70% of a
 * 64-row prompt's product. Blocks of 16 bytes or more, whole (4 bits:
 * block_size 32 and up; 8 bits: 16 and up); the rest (a last block cut by
 * K, NR not a multiple of 16, 4-bit blocks of 16, whose 8 bytes a 16-byte
 * load overruns) the portable way. */
__attribute__((target("avx512f,avx512bw,fma"))) static void nb_dequant_avx512(const nb_job *j,
                                                                             int64_t n0,
                                                                             int64_t rows,
                                                                             float *out)
{
    const nb_kernel *k = j->k;
    int64_t nr = cpu_gemm_nr(), panels = (rows + nr - 1) / nr, bs = k->bs;
    if (nr % 16 != 0 || bs > 256 || k->k % bs != 0 || (k->bits == 4 && bs % 32 != 0)) {
        nb_dequant_body(j, n0, rows, out);
        return;
    }
    float tmp[16 * 256];
    const __m512i low = _mm512_set1_epi32(15);
    for (int64_t pn = 0; pn < panels; pn++) {
        float *panel = out + pn * nr * k->k;
        for (int64_t b = 0; b < k->kb; b++) {
            for (int64_t g = 0; g < nr; g += 16) {
                for (int64_t c = 0; c < 16; c++) {
                    int64_t r = pn * nr + g + c, n = n0 + r;
                    float *t = tmp + c * bs;
                    if (r >= rows) {
                        memset(t, 0, (size_t)bs * sizeof(float));
                        continue;
                    }
                    const uint8_t *q = j->b + (n * k->kb + b) * k->blob;
                    float sc = j->scale[n * k->kb + b];
                    __m512 vs = _mm512_set1_ps(sc), vsz = _mm512_set1_ps(sc * nb_zero(j, n, b));
                    if (k->bits == 4) {
                        /* 16 bytes: 32 values, low nibble first */
                        for (int64_t i = 0; i < bs / 2; i += 16) {
                            __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q + i)));
                            __m512 lo = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_and_si512(x, low)), vs, vsz);
                            __m512 hi = _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(x, 4)), vs, vsz);
                            /* interleave: value 2m is lo[m], 2m + 1 is hi[m] */
                            __m512i idx0 = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
                            __m512i idx1 = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
                            _mm512_storeu_ps(t + 2 * i, _mm512_permutex2var_ps(lo, idx0, hi));
                            _mm512_storeu_ps(t + 2 * i + 16, _mm512_permutex2var_ps(lo, idx1, hi));
                        }
                    } else {
                        for (int64_t i = 0; i < bs; i += 16) {
                            __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(q + i)));
                            _mm512_storeu_ps(t + i, _mm512_fmsub_ps(_mm512_cvtepi32_ps(x), vs, vsz));
                        }
                    }
                }
                for (int64_t kk = 0; kk < bs; kk += 16)
                    nb_t16(tmp + kk, bs, panel + (b * bs + kk) * nr + g, nr);
            }
        }
    }
}

__attribute__((target("avx2,fma"))) static void nb_dequant_avx2(const nb_job *j, int64_t n0,
                                                                 int64_t rows, float *out)
{
    nb_dequant_body(j, n0, rows, out);
}
#endif

static void nb_dequant(const nb_job *j, int64_t n0, int64_t rows, float *out)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (cpu_has_isa(CPU_ISA_AVX512_BW)) {
        nb_dequant_avx512(j, n0, rows, out);
        return;
    }
    if (cpu_has_isa(CPU_ISA_AVX2_FMA)) {
        nb_dequant_avx2(j, n0, rows, out);
        return;
    }
#endif
    nb_dequant_plain(j, n0, rows, out);
}

/* Tasks of NB_TILE rows of W: dequantized into the GEMM's packed B, then
 * Y[:, tile] = A W_tile^T against A packed once for the run (a chunk whose
 * buffer cannot be had sets FAILED: the run then fails). */
static void nb_tiles_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const nb_job *j = arg;
    const nb_kernel *k = j->k;
    size_t wfl = cpu_gemm_packed_b_floats(k->k, NB_TILE);
    float *w = aligned_alloc(64, (wfl * sizeof(float) + 63) / 64 * 64);
    if (w == NULL) {
        __atomic_store_n(&((nb_job *)arg)->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (size_t t = begin; t < end; t++) {
        int64_t n0 = (int64_t)t * NB_TILE, rows = k->n - n0 < NB_TILE ? k->n - n0 : NB_TILE;
        nb_dequant(j, n0, rows, w);
        cpu_gemm_operand a = {.packed = j->a_packed, .packed_k = k->k};
        cpu_gemm_operand b = {.packed = w, .packed_k = k->k};
        cpu_gemm(k->m, rows, k->k, 1.0f, &a, &b, 0.0f, j->y + n0, k->n, NULL);
        if (j->bias != NULL)
            for (int64_t r = 0; r < k->m; r++)
                for (int64_t c = 0; c < rows; c++)
                    j->y[r * k->n + n0 + c] += j->bias[n0 + c];
    }
    free(w);
}

static const void *nb_in(const pl_run_args *args, size_t i)
{
    return i < args->n_inputs && args->inputs[i].data != NULL ? (const void *)cpu_in(args, i)
                                                                : NULL;
}

/* Block B of A's row A quantized as ONNX Runtime's CompInt8 does it: max
 * |a| / 127 the scale (returned), each entry rounded to nearest even into
 * Q (zeros past K). The int8 path (VNNI) and the f32 one at
 * accuracy_level 4 both take A through here, so every ISA computes with
 * the same A. */
static float nb_quant_block(const nb_kernel *k, const float *a, int64_t b, int8_t *q)
{
    int64_t base = b * k->bs;
    float amax = 0.0f;
    for (int64_t i = 0; i < k->bs && base + i < k->k; i++)
        amax = fabsf(a[base + i]) > amax ? fabsf(a[base + i]) : amax;
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    for (int64_t i = 0; i < k->bs; i++) {
        float v = base + i < k->k ? a[base + i] * inv : 0.0f;
        int32_t qv = (int32_t)nearbyintf(v);
        q[i] = (int8_t)(qv > 127 ? 127 : qv < -127 ? -127 : qv);
    }
    return amax / 127.0f;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The dot products in int8 (nb_dots_vnni): A's rows quantized per block,
 * max |a| / 127 its scale, rounded to nearest, each block's even entries
 * and odd ones apart as W's nibbles hold them. */
static pl_status *nb_run_int8(pl_module_ctx *ctx, const nb_kernel *k, nb_job *j)
{
    size_t half = (size_t)(k->kb * k->bs / 2);
    j->qrow = (half + 63) / 64 * 64;
    int8_t *q = aligned_alloc(64, (size_t)k->m * 2 * j->qrow);
    float *f = malloc(sizeof(float) * 2 * (size_t)(k->m * k->kb));
    int8_t *bq = malloc((size_t)k->bs);
    if (q == NULL || f == NULL || bq == NULL) {
        free(q);
        free(f);
        free(bq);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, k->base.op, "out of memory for A in int8");
    }
    for (int64_t r = 0; r < k->m; r++) {
        const float *a = j->a + r * k->k;
        int8_t *qe = q + (size_t)r * 2 * j->qrow, *qo = qe + j->qrow;
        float *as = f + (size_t)r * 2 * (size_t)k->kb, *sums = as + k->kb;
        for (int64_t b = 0; b < k->kb; b++) {
            int64_t base = b * k->bs;
            float scale = nb_quant_block(k, a, b, bq);
            int32_t sum = 0;
            for (int64_t i = 0; i < k->bs; i++) {
                sum += bq[i];
                (i % 2 ? qo : qe)[base / 2 + i / 2] = bq[i];
            }
            as[b] = scale;
            sums[b] = scale * (float)sum;
        }
    }
    j->qe = q;
    j->qo = q + j->qrow;
    j->qf = f;
    j->qrow *= 2; /* a row's QE and QO together */
    size_t grain = (size_t)(16384 / (k->k > 0 ? k->k : 1)) + 1;
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->n, grain, nb_dots_chunk, j);
    free(q);
    free(f);
    free(bq);
    return NULL;
}
#endif

static pl_status *nb_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const nb_kernel *k = (const nb_kernel *)kernel;
    const char *op = kernel->op;
    if (args->requests[0] != PL_REQ_WRITE || args->outputs[0].data == NULL)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the output must be written in full");
    nb_job j = {.k = k,
                .a = nb_in(args, 0),
                .b = nb_in(args, 1),
                .scale = nb_in(args, 2),
                .zu = k->zp == NB_ZP_U8 ? nb_in(args, 3) : NULL,
                .zf = k->zp == NB_ZP_F32 ? nb_in(args, 3) : NULL,
                .bias = k->bias ? nb_in(args, 5) : NULL,
                .y = (float *)(void *)((char *)args->outputs[0].data +
                                       args->outputs[0].byte_offset)};
    if ((j.a == NULL && k->m > 0) || j.b == NULL || j.scale == NULL ||
        (k->zp == NB_ZP_U8 && j.zu == NULL) || (k->zp == NB_ZP_F32 && j.zf == NULL) ||
        (k->bias && j.bias == NULL))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "an input has no data");
    if (k->m == 0)
        return NULL;
    if (k->m > NB_GEMV_MAX_M) {
        size_t tiles = (size_t)((k->n + NB_TILE - 1) / NB_TILE);
        float *pa = aligned_alloc(
            64, (cpu_gemm_packed_a_floats(k->m, k->k) * sizeof(float) + 63) / 64 * 64);
        if (pa == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for A packed");
        cpu_gemm_pack_a(k->m, k->k, j.a, k->k, false, pa);
        j.a_packed = pa;
        cpu_host->parallel_for(ctx->host_ctx, tiles, 1, nb_tiles_chunk, &j);
        free(pa);
        if (__atomic_load_n(&j.failed, __ATOMIC_RELAXED))
            return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for a tile of W");
        return NULL;
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (k->int8 && nb_has_vnni())
        return nb_run_int8(ctx, k, &j);
#endif
    /* A's rows split: 4 bits, each block's even entries then its odd ones
     * (zeros past K); 8 bits, A padded to whole blocks; then per block the
     * sum of its entries */
    size_t padded = (size_t)(k->kb * k->bs);
    j.split_row = (padded + (size_t)k->kb + 15) / 16 * 16;
    float *split = aligned_alloc(64, ((size_t)k->m * j.split_row * sizeof(float) + 63) / 64 * 64);
    /* accuracy_level 4 without VNNI: A quantized as the int8 path does,
     * its products in f32 (ONNX Runtime quantizes A on every ISA) */
    int8_t *bq = k->int8 ? malloc((size_t)k->bs) : NULL;
    if (split == NULL || (k->int8 && bq == NULL)) {
        free(split);
        free(bq);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for A's split rows");
    }
    for (int64_t r = 0; r < k->m; r++) {
        const float *a = j.a + r * k->k;
        float *row = split + (size_t)r * j.split_row, *sums = row + padded;
        for (int64_t b = 0; b < k->kb; b++) {
            float *dst = row + b * k->bs, sum = 0.0f;
            float scale = bq != NULL ? nb_quant_block(k, a, b, bq) : 0.0f;
            for (int64_t i = 0; i < k->bs; i++) {
                int64_t at = b * k->bs + i;
                float v = bq != NULL ? (float)bq[i] * scale : at < k->k ? a[at] : 0.0f;
                sum += v;
                if (k->bits == 4)
                    dst[i % 2 ? k->bs / 2 + i / 2 : i / 2] = v;
                else
                    dst[i] = v;
            }
            sums[b] = sum;
        }
    }
    j.split = split;
    size_t grain = (size_t)(16384 / (k->k > 0 ? k->k : 1)) + 1;
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->n, grain, nb_dots_chunk, &j);
    free(split);
    free(bq);
    return NULL;
}

static pl_status *nb_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *in = node->inputs, *y = &node->outputs[0];
    int64_t kk, n, bits, bs;
    SHP_TRY(cpu_attr_int(node, "K", 0, &kk));
    SHP_TRY(cpu_attr_int(node, "N", 0, &n));
    SHP_TRY(cpu_attr_int(node, "bits", 4, &bits));
    SHP_TRY(cpu_attr_int(node, "block_size", 0, &bs));
    if (bits != 4 && bits != 8)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "bits = %lld (4 or 8)", (long long)bits);
    if (kk <= 0 || n <= 0 || bs < 16 || bs % 16 != 0 || (bs & (bs - 1)) != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "K and N positive and a block_size that is a power of 2 from 16 "
                         "(K %lld, N %lld, block_size %lld)",
                         (long long)kk, (long long)n, (long long)bs);
    if (node->n_inputs > 4 && shp_input_present(node, 4))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "g_idx (act-order) is not supported");
    int64_t kb = (kk + bs - 1) / bs, blob = bs * bits / 8;
    bool zp_present = node->n_inputs > 3 && shp_input_present(node, 3);
    bool bias = node->n_inputs > 5 && shp_input_present(node, 5);
    int zp = !zp_present                               ? NB_ZP_NONE
             : PL_DTYPE_EQ(in[3].dtype, PL_DTYPE_U8)   ? NB_ZP_U8
             : PL_DTYPE_EQ(in[3].dtype, PL_DTYPE_F32) ? NB_ZP_F32
                                                       : -1;
    size_t want_zp = zp == NB_ZP_U8 && bits == 4 ? (size_t)(n * ((kb + 1) / 2)) : (size_t)(n * kb);
    bool ok = PL_DTYPE_EQ(in[0].dtype, PL_DTYPE_F32) && PL_DTYPE_EQ(y->dtype, PL_DTYPE_F32) &&
              PL_DTYPE_EQ(in[1].dtype, PL_DTYPE_U8) && PL_DTYPE_EQ(in[2].dtype, PL_DTYPE_F32) &&
              zp >= 0 && (!bias || PL_DTYPE_EQ(in[5].dtype, PL_DTYPE_F32));
    if (!ok)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "f32 A, scales, bias and Y, u8 B, zero points u8 or f32");
    ok = cpu_shape_known(&in[0]) && in[0].ndim >= 1 && in[0].shape[in[0].ndim - 1] == kk &&
         cpu_elements(in[1].shape, in[1].ndim) == (size_t)(n * kb * blob) &&
         cpu_elements(in[2].shape, in[2].ndim) == (size_t)(n * kb) &&
         (!zp_present || cpu_elements(in[3].shape, in[3].ndim) == want_zp) &&
         (!bias || cpu_elements(in[5].shape, in[5].ndim) == (size_t)n) && y->ndim == in[0].ndim &&
         y->shape[y->ndim - 1] == n;
    size_t rows = ok ? cpu_elements(in[0].shape, in[0].ndim) / (size_t)kk : 0;
    ok = ok && cpu_elements(y->shape, y->ndim) == rows * (size_t)n;
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "A [..., %lld], B [%lld, %lld, %lld], scales of %lld, zero points, bias "
                         "[%lld] and Y [..., %lld] do not fit",
                         (long long)kk, (long long)n, (long long)kb, (long long)blob,
                         (long long)(n * kb), (long long)n, (long long)n);
    int64_t level;
    SHP_TRY(cpu_attr_int(node, "accuracy_level", 0, &level));
    nb_kernel *k = (nb_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "MatMulNBits", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for the kernel");
    k->base.run_any = nb_run;
    k->base.n_reads = node->n_inputs;
    k->base.n_outputs = 1;
    k->base.out_elements = rows * (size_t)n;
    k->k = kk;
    k->n = n;
    k->bits = bits;
    k->bs = bs;
    k->kb = kb;
    k->blob = blob;
    k->m = (int64_t)rows;
    k->zp = zp;
    k->bias = bias;
    /* ONNX Runtime computes these with A in int8 too (its CompInt8) */
    k->int8 = level == 4 && bits == 4 && bs >= 32 && (kb * bs) % 128 == 0 &&
              rows <= NB_GEMV_MAX_M;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- the schema ---------------------------------------------------------------- */

/* MatMulNBits' output: A's shape with N last, A's dtype. */
static pl_status *nb_shape(void *user, pl_shape_ctx *sc)
{
    (void)user;
    pl_dtype at;
    int32_t an = -1;
    const int64_t *ad = NULL;
    if (!cpu_host->shape_input(sc, 0, &at, &an, &ad))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "MatMulNBits needs A");
    size_t node = 0;
    const pl_graph_view *view = cpu_host->shape_node(sc, &node);
    int64_t n = -1;
    if (view != NULL)
        cpu_host->graph->attr_int(view, node, "N", &n);
    if (n <= 0)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "MatMulNBits needs a positive N attribute");
    if (an < 1)
        return cpu_host->shape_set_output(sc, 0, at, -1, NULL);
    int64_t dims[CPU_MAX_RANK];
    if (an > CPU_MAX_RANK)
        return cpu_host->status_create(PL_CODE_UNSUPPORTED, "A of rank %d", (int)an);
    memcpy(dims, ad, sizeof(int64_t) * (size_t)an);
    dims[an - 1] = n;
    return cpu_host->shape_set_output(sc, 0, at, an, dims);
}

pl_status *nb_register(pl_host_ctx *host_ctx)
{
    /* an older core dequantizes B through its lowering */
    return cpu_register_ms_op(host_ctx, "MatMulNBits", 3, 6, 1, 1, nb_shape);
}
