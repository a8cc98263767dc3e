/* onednn_resize.c — the onednn module's own Resize of the two spatial
 * axes of an f32 NCHW tensor, for CPUs where oneDNN dispatches to its AVX2
 * kernels.
 *
 * Why: oneDNN 2.6's resampling maps coordinates only as half_pixel linear
 * and whole-factor nearest; align_corners (PyTorch's bilinear
 * align_corners=True), asymmetric (TensorFlow's), cubic and fractional
 * nearest went to the cpu module between two subgraphs. And a
 * segmentation head's last resize, the graph's output, ran as a
 * resampling in the channel-blocked layout and then a reorder to plain:
 * LR-ASPP's 21 classes from 16x16 to 128x128 took 0.18 ms and 0.24 ms
 * (the reorder of 21 channels, not whole blocks, on oneDNN's jit:uni).
 *
 * The kernel. The source is read as groups of 8-lane vectors at each
 * pixel (a channel block of 8 or 16, or channels-last; as the module's
 * pooling, odnn_pool_layout). Per output row and column the compile makes
 * a table of source indices and weights with the cpu module's arithmetic
 * (coordinates in double, weights in float; shape_resize.c), so both
 * agree to rounding: nearest copies a vector, linear blends 2x2, cubic
 * 4x4. A work item is one output row of one image and channel group. The
 * destination is the source's layout, or plain NCHW (a graph output):
 * eight output pixels of one vector are transposed in registers and
 * stored as eight runs of channel rows.
 *
 * Compiled for AVX2 by function attributes; used only where
 * odnn_direct_usable() says the CPU has AVX2 and oneDNN is below AVX-512. */
#include "onednn.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#define ODNN_RESIZE_RUN 64 /* pixels a plain destination's runs are made in */

/* The input coordinate of output index I on an axis of IN -> OUT at
 * SCALE, as the cpu module computes it. */
static double odnn_resize_coord(int ctm, int64_t i, int64_t in, int64_t out, double scale)
{
    switch (ctm) {
    case ODNN_CTM_HALF_PIXEL:
        return ((double)i + 0.5) / scale - 0.5;
    case ODNN_CTM_PYTORCH_HALF_PIXEL:
        return out > 1 ? ((double)i + 0.5) / scale - 0.5 : 0.0;
    case ODNN_CTM_ALIGN_CORNERS:
        return out == 1 ? 0.0 : (double)i * (double)(in - 1) / (double)(out - 1);
    case ODNN_CTM_TF_HALF_PIXEL:
        return ((double)i + 0.5) / scale;
    default: /* asymmetric */
        return (double)i / scale;
    }
}

static int64_t odnn_resize_clamp(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

static int64_t odnn_resize_nearest(int mode, double x)
{
    switch (mode) {
    case ODNN_NEAREST_PREFER_FLOOR:
        return (int64_t)ceil(x - 0.5);
    case ODNN_NEAREST_PREFER_CEIL:
        return (int64_t)floor(x + 0.5);
    case ODNN_NEAREST_FLOOR:
        return (int64_t)floor(x);
    default:
        return (int64_t)ceil(x);
    }
}

/* The table of one axis IN -> OUT at SCALE: TAPS indices and weights per
 * output index. */
static void odnn_resize_axis(const struct odnn_resize *r, int64_t in, int64_t out, double scale,
                             int32_t *idx, float *wt)
{
    int taps = r->taps;
    int same = in == out && scale == 1.0;
    for (int64_t i = 0; i < out; i++) {
        int32_t *ix = idx + i * taps;
        float *w = wt + i * taps;
        for (int t = 0; t < taps; t++)
            w[t] = 0.0f;
        if (same || taps == 1) {
            int64_t j = same ? i
                             : odnn_resize_clamp(odnn_resize_nearest(r->nearest,
                                                                     odnn_resize_coord(r->ctm, i,
                                                                                       in, out,
                                                                                       scale)),
                                                 in);
            for (int t = 0; t < taps; t++)
                ix[t] = (int32_t)j;
            w[0] = 1.0f;
            continue;
        }
        double c = odnn_resize_coord(r->ctm, i, in, out, scale);
        double f = floor(c), t = c - f;
        int64_t x0 = (int64_t)f;
        if (taps == 2) {
            ix[0] = (int32_t)odnn_resize_clamp(x0, in);
            ix[1] = (int32_t)odnn_resize_clamp(x0 + 1, in);
            w[1] = (float)t;
            w[0] = 1.0f - w[1];
            continue;
        }
        /* cubic: Keys' weights for inputs x0 - 1 .. x0 + 2; a tap outside
         * reads the edge, or with exclude_outside weighs 0 and the rest
         * are scaled to sum to 1 */
        double a = r->cubic_a, s = t + 1, u = 1 - t, v = 2 - t;
        double cw[4] = {((a * s - 5 * a) * s + 8 * a) * s - 4 * a,
                        ((a + 2) * t - (a + 3)) * t * t + 1, ((a + 2) * u - (a + 3)) * u * u + 1,
                        ((a * v - 5 * a) * v + 8 * a) * v - 4 * a};
        double sum = 0;
        for (int k = 0; k < 4; k++) {
            int64_t j = x0 - 1 + k;
            if (r->exclude_outside && (j < 0 || j >= in))
                cw[k] = 0;
            sum += cw[k];
        }
        for (int k = 0; k < 4; k++) {
            ix[k] = (int32_t)odnn_resize_clamp(x0 - 1 + k, in);
            w[k] = (float)(r->exclude_outside && sum != 0 ? cw[k] / sum : cw[k]);
        }
    }
}

size_t odnn_resize_table_bytes(const struct odnn_resize *r)
{
    return (size_t)(r->oh + r->ow) * (size_t)r->taps * (sizeof(int32_t) + sizeof(float));
}

void odnn_resize_tables(struct odnn_resize *r, void *block)
{
    size_t rows = (size_t)r->oh * (size_t)r->taps, cols = (size_t)r->ow * (size_t)r->taps;
    r->hi = block;
    r->wi = r->hi + rows;
    r->hw = (float *)(void *)(r->wi + cols);
    r->ww = r->hw + rows;
    odnn_resize_axis(r, r->ih, r->oh, r->scale_h, r->hi, r->hw);
    odnn_resize_axis(r, r->iw, r->ow, r->scale_w, r->wi, r->ww);
    for (size_t i = 0; i < cols; i++) /* columns as offsets in floats */
        r->wi[i] = (int32_t)(r->wi[i] * r->xs_w);
}

/* Output pixel O of a row: the blend of the source rows ROW[] (weights
 * HW[]) at the columns of O's entry (offsets in floats: WO, weights WW). */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256
odnn_resize_pixel(int taps, const float *const *row, const __m256 *hw, const int32_t *wo,
                  const float *ww, int64_t o)
{
    wo += o * taps;
    ww += o * taps;
    if (taps == 1)
        return _mm256_loadu_ps(row[0] + wo[0]);
    if (taps == 2) {
        __m256 w0 = _mm256_broadcast_ss(ww), w1 = _mm256_broadcast_ss(ww + 1);
        __m256 a = _mm256_fmadd_ps(w1, _mm256_loadu_ps(row[0] + wo[1]),
                                   _mm256_mul_ps(w0, _mm256_loadu_ps(row[0] + wo[0])));
        __m256 b = _mm256_fmadd_ps(w1, _mm256_loadu_ps(row[1] + wo[1]),
                                   _mm256_mul_ps(w0, _mm256_loadu_ps(row[1] + wo[0])));
        return _mm256_fmadd_ps(hw[1], b, _mm256_mul_ps(hw[0], a));
    }
    __m256 acc = _mm256_setzero_ps();
    for (int p = 0; p < 4; p++) {
        const float *x = row[p];
        __m256 s = _mm256_mul_ps(_mm256_broadcast_ss(ww), _mm256_loadu_ps(x + wo[0]));
        s = _mm256_fmadd_ps(_mm256_broadcast_ss(ww + 1), _mm256_loadu_ps(x + wo[1]), s);
        s = _mm256_fmadd_ps(_mm256_broadcast_ss(ww + 2), _mm256_loadu_ps(x + wo[2]), s);
        s = _mm256_fmadd_ps(_mm256_broadcast_ss(ww + 3), _mm256_loadu_ps(x + wo[3]), s);
        acc = _mm256_fmadd_ps(hw[p], s, acc);
    }
    return acc;
}

/* Eight vectors of eight lanes transposed: lane l of R[k] goes to lane k
 * of R[l]. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_transpose8(__m256 *r)
{
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20), r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20), r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
    r[4] = _mm256_permute2f128_ps(u0, u4, 0x31), r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[6] = _mm256_permute2f128_ps(u2, u6, 0x31), r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* The source rows output row OH blends, from BASE (pixel (0, 0) of the
 * vector read), and their weights. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_resize_rows_of(const struct odnn_resize *r, int taps, const float *base, int64_t oh,
                    const float **row, __m256 *hw)
{
    for (int t = 0; t < taps; t++) {
        row[t] = base + (int64_t)r->hi[oh * taps + t] * r->xs_h;
        hw[t] = _mm256_set1_ps(r->hw[oh * taps + t]);
    }
}

/* Output row OH of every channel vector of group G of image IMG in the
 * source's layout: pixel by pixel, a pixel's vectors in turn (the
 * channels of a channels-last pixel are adjacent). TAPS is a constant in
 * each caller, so that the pixel loop is made for it. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_resize_row_vecs(const struct odnn_resize *r, int taps, const float *x, float *y,
                     int64_t img, int64_t g, int64_t oh)
{
    const float *row[4] = {NULL, NULL, NULL, NULL};
    __m256 hw[4];
    odnn_resize_rows_of(r, taps, x + img * r->xs_n + g * r->xs_g, oh, row, hw);
    const int32_t *wo = r->wi;
    const float *ww = r->ww;
    int64_t ow = r->ow, vecs = r->vecs, ys = r->ys_w;
    float *yr = y + img * r->ys_n + g * r->ys_g + oh * r->ys_h;
    for (int64_t o = 0; o < ow; o++) {
        const float *rv[4] = {row[0], row[1], row[2], row[3]};
        for (int64_t v = 0; v < vecs; v++) {
            _mm256_storeu_ps(yr + o * ys + v * 8, odnn_resize_pixel(taps, rv, hw, wo, ww, o));
            for (int t = 0; t < taps; t++)
                rv[t] += 8;
        }
    }
}

/* Output row OH of channel vector V of group G of image IMG, into the
 * source's layout or plain NCHW. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_resize_row(const struct odnn_resize *r, int taps, const float *x, float *y, int64_t img,
                int64_t g, int64_t v, int64_t oh)
{
    const float *row[4] = {NULL, NULL, NULL, NULL};
    __m256 hw[4];
    odnn_resize_rows_of(r, taps, x + img * r->xs_n + g * r->xs_g + v * 8, oh, row, hw);
    const int32_t *wo = r->wi;
    const float *ww = r->ww;
    int64_t ow = r->ow;
    if (!r->plain) {
        float *yr = y + img * r->ys_n + g * r->ys_g + v * 8 + oh * r->ys_h;
        int64_t ys = r->ys_w;
        for (int64_t o = 0; o < ow; o++)
            _mm256_storeu_ps(yr + o * ys, odnn_resize_pixel(taps, row, hw, wo, ww, o));
        return;
    }
    /* plain NCHW: channel c's row at y + c * plane. Runs of 64 pixels are
     * made, transposed eight by eight into channel-major order, then
     * written as one run per channel: eight pixels stored straight into
     * eight planes (a multiple of 4 KiB apart) ran at half the speed. */
    int64_t c0 = (g * r->vecs + v) * 8, plane = r->oh * ow;
    int nc = r->ch - c0 < 8 ? (int)(r->ch - c0) : 8;
    float *yr = y + img * r->ys_n + c0 * plane + oh * ow;
    float run[8][ODNN_RESIZE_RUN] __attribute__((aligned(32)));
    for (int64_t o0 = 0; o0 < ow; o0 += ODNN_RESIZE_RUN) {
        int64_t len = ow - o0 < ODNN_RESIZE_RUN ? ow - o0 : ODNN_RESIZE_RUN, o = 0;
        for (; o + 8 <= len; o += 8) {
            __m256 p[8];
            for (int k = 0; k < 8; k++)
                p[k] = odnn_resize_pixel(taps, row, hw, wo, ww, o0 + o + k);
            odnn_transpose8(p);
            for (int k = 0; k < 8; k++)
                _mm256_store_ps(&run[k][o], p[k]);
        }
        for (; o < len; o++) {
            float lanes[8];
            _mm256_storeu_ps(lanes, odnn_resize_pixel(taps, row, hw, wo, ww, o0 + o));
            for (int k = 0; k < 8; k++)
                run[k][o] = lanes[k];
        }
        for (int k = 0; k < nc; k++) {
            float *to = yr + k * plane + o0;
            int64_t i = 0;
            for (; i + 8 <= len; i += 8) {
                /* the empty asm keeps the compiler from making this loop a
                 * memcpy (rep movsq: a third of the time on 256 bytes) */
                __m256 t = _mm256_load_ps(&run[k][i]);
                __asm__("" : "+x"(t));
                _mm256_storeu_ps(to + i, t);
            }
            for (; i < len; i++)
                to[i] = run[k][i];
        }
    }
}

#define ODNN_RESIZE_ROWS(TAPS)                                                                  \
    static __attribute__((noinline, target("avx2,fma"))) void odnn_resize_rows##TAPS(           \
        const struct odnn_resize *r, const float *x, float *y, int64_t b, int64_t e)            \
    {                                                                                           \
        for (int64_t it = b; it < e; it++) {                                                    \
            int64_t oh = it % r->oh, ig = it / r->oh, g = ig % r->groups, img = ig / r->groups; \
            if (!r->plain && r->vecs > 1) {                                                     \
                odnn_resize_row_vecs(r, TAPS, x, y, img, g, oh);                                \
                continue;                                                                       \
            }                                                                                   \
            for (int64_t v = 0; v < r->vecs; v++)                                               \
                odnn_resize_row(r, TAPS, x, y, img, g, v, oh);                                  \
        }                                                                                       \
    }
ODNN_RESIZE_ROWS(1)
ODNN_RESIZE_ROWS(2)
ODNN_RESIZE_ROWS(4)

void odnn_resize_run(const struct odnn_resize *r, const float *x, float *y, int threads)
{
    int64_t items = r->n * r->groups * r->oh;
    int team = threads > 1 && items > 1 ? threads : 1;
#pragma omp parallel num_threads(team)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t b = items * t / k, e = items * (t + 1) / k;
        if (r->taps == 1)
            odnn_resize_rows1(r, x, y, b, e);
        else if (r->taps == 2)
            odnn_resize_rows2(r, x, y, b, e);
        else
            odnn_resize_rows4(r, x, y, b, e);
    }
}
