/* nn_vec.c — the inner loops of the direct convolution and pooling kernels,
 * written with GCC/Clang vector types of 8 floats and built twice: once for
 * the baseline x86-64 (or any other target) and once for AVX2+FMA, chosen
 * when first called from what the CPU reports. The module is built without
 * -march flags, so this is where wide vectors come from. */
#include <stdint.h>

#include "fastmath.h"
#include "nn_window.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

/* 8 floats, loadable from any float address (and aliasing floats). */
typedef float nn_v8 __attribute__((vector_size(32), aligned(4), __may_alias__));

typedef int32_t nn_v8i __attribute__((vector_size(32), aligned(4), __may_alias__));

/* The lane-wise maximum (B where A is not greater, so NaNs in A are dropped). */
#define NN_VMAX(A, B)                                                        \
    ((nn_v8)((((nn_v8i)(A)) & ((A) > (B))) | (((nn_v8i)(B)) & ~((A) > (B)))))

/* A vector of 8 copies of X (a macro: a vector return would change the
 * ABI between the two builds). */
#define nn_splat(X) ((nn_v8){(X), (X), (X), (X), (X), (X), (X), (X)})

/* The bodies, instantiated per target by NN_VEC_FUNCS. */
#define NN_VEC_FUNCS(SUFFIX, ATTR)                                                          \
    ATTR static void nn_axpy_##SUFFIX(float *acc, const float *src, float w, int64_t n)     \
    {                                                                                       \
        int64_t i = 0;                                                                      \
        nn_v8 wv = nn_splat(w);                                                             \
        for (; i + 8 <= n; i += 8)                                                          \
            *(nn_v8 *)(acc + i) += wv * *(const nn_v8 *)(src + i);                          \
        for (; i < n; i++)                                                                  \
            acc[i] += w * src[i];                                                           \
    }                                                                                       \
    ATTR static void nn_max_row_##SUFFIX(float *acc, const float *src, int64_t n)           \
    {                                                                                       \
        int64_t i = 0;                                                                      \
        for (; i + 8 <= n; i += 8) {                                                        \
            nn_v8 a = *(nn_v8 *)(acc + i), s = *(const nn_v8 *)(src + i);                   \
            *(nn_v8 *)(acc + i) = NN_VMAX(s, a);                                            \
        }                                                                                   \
        for (; i < n; i++)                                                                  \
            acc[i] = src[i] > acc[i] ? src[i] : acc[i];                                     \
    }                                                                                       \
    ATTR static void nn_add_row_##SUFFIX(float *acc, const float *src, int64_t n)           \
    {                                                                                       \
        int64_t i = 0;                                                                      \
        for (; i + 8 <= n; i += 8)                                                          \
            *(nn_v8 *)(acc + i) += *(const nn_v8 *)(src + i);                               \
        for (; i < n; i++)                                                                  \
            acc[i] += src[i];                                                               \
    }                                                                                       \
    ATTR static void nn_relu_row_##SUFFIX(float *x, int64_t n)                              \
    {                                                                                       \
        int64_t i = 0;                                                                      \
        const nn_v8 z = nn_splat(0.0f);                                                     \
        for (; i + 8 <= n; i += 8) {                                                        \
            nn_v8 v = *(nn_v8 *)(x + i);                                                    \
            *(nn_v8 *)(x + i) = (nn_v8)(((nn_v8i)v) & (v > z));                             \
        }                                                                                   \
        for (; i < n; i++)                                                                  \
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;                                               \
    }                                                                                       \
    ATTR static void nn_clip_row_##SUFFIX(float *x, int64_t n, float lo, float hi)          \
    {                                                                                       \
        int64_t i = 0;                                                                      \
        const nn_v8 l = nn_splat(lo), h = nn_splat(hi);                                     \
        for (; i + 8 <= n; i += 8) {                                                        \
            nn_v8 v = *(nn_v8 *)(x + i);                                                    \
            nn_v8i below = v < l, above = v > h;                                            \
            nn_v8 r = (nn_v8)((((nn_v8i)h) & above) | (((nn_v8i)v) & ~above));              \
            *(nn_v8 *)(x + i) = (nn_v8)((((nn_v8i)l) & below) | (((nn_v8i)r) & ~below));    \
        }                                                                                   \
        for (; i < n; i++)                                                                  \
            x[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);                                \
    }                                                                                       \
    ATTR static float nn_sum_##SUFFIX(const float *x, int64_t n)                            \
    {                                                                                       \
        nn_v8 s0 = nn_splat(0.0f), s1 = nn_splat(0.0f);                                     \
        int64_t i = 0;                                                                      \
        for (; i + 16 <= n; i += 16) {                                                      \
            s0 += *(const nn_v8 *)(x + i);                                                  \
            s1 += *(const nn_v8 *)(x + i + 8);                                              \
        }                                                                                   \
        s0 += s1;                                                                           \
        float s = 0.0f;                                                                     \
        for (int j = 0; j < 8; j++)                                                         \
            s += s0[j];                                                                     \
        for (; i < n; i++)                                                                  \
            s += x[i];                                                                      \
        return s;                                                                           \
    }                                                                                       \
    ATTR static float nn_max_##SUFFIX(const float *x, int64_t n)                            \
    {                                                                                       \
        float m = x[0];                                                                     \
        int64_t i = 0;                                                                      \
        if (n >= 8) {                                                                       \
            nn_v8 mv = *(const nn_v8 *)x;                                                   \
            for (i = 8; i + 8 <= n; i += 8) {                                               \
                nn_v8 v = *(const nn_v8 *)(x + i);                                          \
                mv = NN_VMAX(v, mv);                                                       \
            }                                                                               \
            for (int j = 0; j < 8; j++)                                                     \
                m = mv[j] > m ? mv[j] : m;                                                  \
        }                                                                                   \
        for (; i < n; i++)                                                                  \
            m = x[i] > m ? x[i] : m;                                                        \
        return m;                                                                           \
    }

NN_VEC_FUNCS(base, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
NN_VEC_FUNCS(avx2, __attribute__((target("avx2,fma"))))
#define NN_HAVE_AVX2 1
#endif

#ifdef NN_HAVE_AVX2
#define NN_DISPATCH(NAME, ...) \
    (cpu_has_isa(CPU_ISA_AVX2_FMA) ? NAME##_avx2(__VA_ARGS__) : NAME##_base(__VA_ARGS__))
#else
#define NN_DISPATCH(NAME, ...) NAME##_base(__VA_ARGS__)
#endif

void nn_axpy(float *acc, const float *src, float w, int64_t n)
{
    NN_DISPATCH(nn_axpy, acc, src, w, n);
}

void nn_max_row(float *acc, const float *src, int64_t n)
{
    NN_DISPATCH(nn_max_row, acc, src, n);
}

void nn_add_row(float *acc, const float *src, int64_t n)
{
    NN_DISPATCH(nn_add_row, acc, src, n);
}

float nn_sum(const float *x, int64_t n)
{
    return NN_DISPATCH(nn_sum, x, n);
}

float nn_max(const float *x, int64_t n)
{
    return NN_DISPATCH(nn_max, x, n);
}

void cpu_epilogue_rows(const cpu_epilogue *e, float *c, int64_t ldc, int64_t rows,
                       int64_t cols, int64_t col0)
{
    if (e->col_add != NULL)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < cols; j++)
                c[r * ldc + j] += e->col_add[col0 + j];
    if (e->kind == CPU_EPI_NONE)
        return;
    for (int64_t r = 0; r < rows; r++, c += ldc) {
        if (e->kind == CPU_EPI_RELU)
            NN_DISPATCH(nn_relu_row, c, cols);
        else
            NN_DISPATCH(nn_clip_row, c, cols, e->lo, e->hi);
    }
}

/* ---- transposed copies ----------------------------------------------------- */

/* OUT[j * ld_out + i] (+)= SRC[i * ld_src + j] for i < rows, j < cols. */
static void nn_transpose_base(float *out, int64_t ld_out, const float *src, int64_t ld_src,
                              int64_t rows, int64_t cols, bool add)
{
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
        int64_t je = cols - j0 < 16 ? cols - j0 : 16;
        for (int64_t i = 0; i < rows; i++) {
            const float *s = src + i * ld_src + j0;
            float *o = out + j0 * ld_out + i;
            if (add)
                for (int64_t j = 0; j < je; j++)
                    o[j * ld_out] += s[j];
            else
                for (int64_t j = 0; j < je; j++)
                    o[j * ld_out] = s[j];
        }
    }
}

#ifdef NN_HAVE_AVX2
/* 8 x 8 blocks transposed in registers; the edges as above. */
__attribute__((target("avx2,fma"))) static void
nn_transpose_avx2(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                  int64_t cols, bool add)
{
    const int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t i = 0; i < r8; i += 8)
        for (int64_t j = 0; j < c8; j += 8) {
            const float *s = src + i * ld_src + j;
            __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld_src);
            __m256 r2 = _mm256_loadu_ps(s + 2 * ld_src), r3 = _mm256_loadu_ps(s + 3 * ld_src);
            __m256 r4 = _mm256_loadu_ps(s + 4 * ld_src), r5 = _mm256_loadu_ps(s + 5 * ld_src);
            __m256 r6 = _mm256_loadu_ps(s + 6 * ld_src), r7 = _mm256_loadu_ps(s + 7 * ld_src);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
            __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
            __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
            __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
            __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
            __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
            __m256 v[8] = {_mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
                           _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
                           _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
                           _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31)};
            float *o = out + j * ld_out + i;
            for (int q = 0; q < 8; q++) {
                float *oq = o + q * ld_out;
                __m256 r = add ? _mm256_add_ps(_mm256_loadu_ps(oq), v[q]) : v[q];
                _mm256_storeu_ps(oq, r);
            }
        }
    if (c8 < cols)
        nn_transpose_base(out + c8 * ld_out, ld_out, src + c8, ld_src, r8, cols - c8, add);
    if (r8 < rows)
        nn_transpose_base(out + r8, ld_out, src + r8 * ld_src, ld_src, rows - r8, cols, add);
}
#endif

void nn_transpose(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                  int64_t cols, bool add)
{
    NN_DISPATCH(nn_transpose, out, ld_out, src, ld_src, rows, cols, add);
}

/* ---- depthwise rows ------------------------------------------------------ */

static inline float nn_act1(const cpu_epilogue *e, float v)
{
    if (e->kind == CPU_EPI_RELU)
        return v > 0.0f ? v : 0.0f;
    if (e->kind == CPU_EPI_CLIP)
        return v < e->lo ? e->lo : (v > e->hi ? e->hi : v);
    return v;
}

static void nn_dw_rows_base(float *out, int64_t ld_out, const float *src, int64_t ld_src,
                            int64_t rows, const int64_t *off, const float *w, int taps, float b,
                            int64_t n, const cpu_epilogue *e, bool add)
{
    for (int64_t r = 0; r < rows; r++, out += ld_out, src += ld_src)
        for (int64_t i = 0; i < n; i++) {
            float a = b;
            for (int t = 0; t < taps; t++)
                a += w[t] * src[off[t] + i];
            a = nn_act1(e, a);
            out[i] = add ? out[i] + a : a;
        }
}

#ifdef NN_HAVE_AVX2
/* The activation on 8 lanes: max/min forms equal to nn_act1 for lo <= hi
 * (kernel_fuse refuses other Clips), NaN -> 0 for Relu, kept for Clip. */
__attribute__((always_inline, target("avx2,fma"))) static inline __m256
nn_act8(const cpu_epilogue *e, __m256 v)
{
    if (e->kind == CPU_EPI_RELU)
        return _mm256_max_ps(v, _mm256_setzero_ps());
    if (e->kind == CPU_EPI_CLIP)
        return _mm256_min_ps(_mm256_set1_ps(e->hi), _mm256_max_ps(_mm256_set1_ps(e->lo), v));
    return v;
}

__attribute__((always_inline, target("avx2,fma"))) static inline void
nn_store8(float *o, __m256 v, bool add, __m256i mask, bool masked)
{
    if (masked) {
        if (add)
            v = _mm256_add_ps(_mm256_maskload_ps(o, mask), v);
        _mm256_maskstore_ps(o, mask, v);
    } else {
        if (add)
            v = _mm256_add_ps(_mm256_loadu_ps(o), v);
        _mm256_storeu_ps(o, v);
    }
}

/* Per row: vectors of 16 and 8, then one vector whose store is masked to
 * the last n % 8 outputs, so rows of 7 or 14 never fall to scalar code.
 * The loads of that last vector run past the row (callers leave 8 floats
 * of slack after the planes). */
__attribute__((target("avx2,fma"))) static void
nn_dw_rows_avx2(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                const int64_t *off, const float *w, int taps, float b, int64_t n,
                const cpu_epilogue *e, bool add)
{
    const __m256 bv = _mm256_set1_ps(b);
    const __m256i none = _mm256_setzero_si256();
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n % 8)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const int64_t n8 = n / 8 * 8;
    if (taps == 9) {
        const __m256 w0 = _mm256_set1_ps(w[0]), w1 = _mm256_set1_ps(w[1]);
        const __m256 w2 = _mm256_set1_ps(w[2]), w3 = _mm256_set1_ps(w[3]);
        const __m256 w4 = _mm256_set1_ps(w[4]), w5 = _mm256_set1_ps(w[5]);
        const __m256 w6 = _mm256_set1_ps(w[6]), w7 = _mm256_set1_ps(w[7]);
        const __m256 w8 = _mm256_set1_ps(w[8]);
        for (int64_t r = 0; r < rows; r++, out += ld_out, src += ld_src) {
            const float *s0 = src + off[0], *s1 = src + off[1], *s2 = src + off[2];
            const float *s3 = src + off[3], *s4 = src + off[4], *s5 = src + off[5];
            const float *s6 = src + off[6], *s7 = src + off[7], *s8 = src + off[8];
#define NN_DW9(I, ACC)                                                       \
    ACC = _mm256_fmadd_ps(w0, _mm256_loadu_ps(s0 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w1, _mm256_loadu_ps(s1 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w2, _mm256_loadu_ps(s2 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w3, _mm256_loadu_ps(s3 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w4, _mm256_loadu_ps(s4 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w5, _mm256_loadu_ps(s5 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w6, _mm256_loadu_ps(s6 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w7, _mm256_loadu_ps(s7 + (I)), ACC);               \
    ACC = _mm256_fmadd_ps(w8, _mm256_loadu_ps(s8 + (I)), ACC)
            int64_t i = 0;
            for (; i + 16 <= n; i += 16) {
                __m256 a = bv, c = bv;
                NN_DW9(i, a);
                NN_DW9(i + 8, c);
                nn_store8(out + i, nn_act8(e, a), add, none, false);
                nn_store8(out + i + 8, nn_act8(e, c), add, none, false);
            }
            for (; i < n8; i += 8) {
                __m256 a = bv;
                NN_DW9(i, a);
                nn_store8(out + i, nn_act8(e, a), add, none, false);
            }
            if (i < n) {
                __m256 a = bv;
                NN_DW9(i, a);
                nn_store8(out + i, nn_act8(e, a), add, mask, true);
            }
#undef NN_DW9
        }
        return;
    }
    /* Other tap counts: 32 outputs at a time in four accumulators (one
     * would wait on each product's latency: a 256-tap filter ran at a
     * quarter of the FMA rate); each output's sum in the same order. */
    for (int64_t r = 0; r < rows; r++, out += ld_out, src += ld_src) {
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
            __m256 a0 = bv, a1 = bv, a2 = bv, a3 = bv;
            for (int t = 0; t < taps; t++) {
                const __m256 wt = _mm256_set1_ps(w[t]);
                const float *p = src + off[t] + i;
                a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(p), a0);
                a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(p + 8), a1);
                a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(p + 16), a2);
                a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(p + 24), a3);
            }
            nn_store8(out + i, nn_act8(e, a0), add, none, false);
            nn_store8(out + i + 8, nn_act8(e, a1), add, none, false);
            nn_store8(out + i + 16, nn_act8(e, a2), add, none, false);
            nn_store8(out + i + 24, nn_act8(e, a3), add, none, false);
        }
        for (; i < n8; i += 8) {
            __m256 a = bv;
            for (int t = 0; t < taps; t++)
                a = _mm256_fmadd_ps(_mm256_set1_ps(w[t]), _mm256_loadu_ps(src + off[t] + i), a);
            nn_store8(out + i, nn_act8(e, a), add, none, false);
        }
        if (i < n) {
            __m256 a = bv;
            for (int t = 0; t < taps; t++)
                a = _mm256_fmadd_ps(_mm256_set1_ps(w[t]), _mm256_loadu_ps(src + off[t] + i), a);
            nn_store8(out + i, nn_act8(e, a), add, mask, true);
        }
    }
}
#endif

void nn_dw_rows(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                const int64_t *off, const float *w, int taps, float b, int64_t n,
                const cpu_epilogue *e, bool add)
{
    NN_DISPATCH(nn_dw_rows, out, ld_out, src, ld_src, rows, off, w, taps, b, n, e, add);
}
