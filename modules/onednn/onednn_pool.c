/* onednn_pool.c — the onednn module's own max and average pooling, for
 * CPUs where oneDNN dispatches to its AVX2 kernels.
 *
 * Why: oneDNN 2.6's jit:avx2 pooling runs far below what the loads allow.
 * Standalone (1000 runs each, source and destination nChw8c), oneDNN's
 * primitive against this kernel: MaxPool 3x3 stride 2 of 32 channels at
 * 47x47 84 us / 12.6 on one thread, 42 / 7.6 on two; 2x2 stride 2 of 8
 * channels at 64x64 33 / 3.6 and 20 / 3.8; 3x3 stride 2 of 64 channels at
 * 56x56 205 / 32 and 110 / 18. In the issue zoo's small models pooling
 * was a fifth of the run (vgg11_s 52 of 282 us, squeezenet_s 70 of 350).
 *
 * The kernel. A source in a channel-blocked layout (aBcd8b, aBcd16b and
 * their 1-D forms) or channels-last with channels a multiple of 8 is read
 * as groups of 8 channels, one 8-lane vector per pixel; the destination
 * has the source's layout. A work item is one output row of one image and
 * channel block. Inside a row, the outputs whose window lies wholly in
 * the source (the interior) go four at a time with four independent
 * accumulators, so the max or add chain of one window does not wait on
 * itself (one accumulator: 3x3 windows ran latency-bound at a third of
 * the speed); windows that cross the border, and windows of 8 or more
 * columns (global pooling), go one at a time with four accumulators across
 * their columns. Average pooling multiplies by the reciprocal of the
 * count: the whole window with count_include_pad, else the cells inside
 * the source (the module refuses count_include_pad with ceil_mode, so the
 * whole window is always inside the padded source).
 *
 * Compiled for AVX2 by function attributes; used only where
 * odnn_direct_usable() says the CPU has AVX2 and oneDNN is below AVX-512. */
#include "onednn.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>

/* The first and one past the last tap of K taps (dilation D) that start
 * at source index AT and fall inside [0, N). */
static void odnn_pool_taps(int64_t at, int64_t k, int64_t d, int64_t n, int64_t *t0, int64_t *t1)
{
    int64_t a = at < 0 ? (-at + d - 1) / d : 0;
    int64_t b = at + (k - 1) * d < n ? k : (n - 1 - at >= 0 ? (n - 1 - at) / d + 1 : 0);
    *t0 = a < k ? a : k;
    *t1 = b > *t0 ? b : *t0;
}

/* A += V: the max or the sum. */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256 odnn_pool_acc(__m256 a,
                                                                                      __m256 v,
                                                                                      int max)
{
    return max ? _mm256_max_ps(a, v) : _mm256_add_ps(a, v);
}

/* One window of NH rows by NW columns from X (its first cell): the max or
 * the sum, four accumulators across the columns. */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256
odnn_pool_window(const float *x, int64_t nh, int64_t nw, int64_t row, int64_t col, int max)
{
    __m256 init = max ? _mm256_set1_ps(-INFINITY) : _mm256_setzero_ps();
    __m256 a0 = init, a1 = init, a2 = init, a3 = init;
    for (int64_t i = 0; i < nh; i++) {
        const float *r = x + i * row;
        int64_t j = 0;
        for (; j + 4 <= nw; j += 4) {
            a0 = odnn_pool_acc(a0, _mm256_loadu_ps(r + j * col), max);
            a1 = odnn_pool_acc(a1, _mm256_loadu_ps(r + (j + 1) * col), max);
            a2 = odnn_pool_acc(a2, _mm256_loadu_ps(r + (j + 2) * col), max);
            a3 = odnn_pool_acc(a3, _mm256_loadu_ps(r + (j + 3) * col), max);
        }
        for (; j < nw; j++)
            a0 = odnn_pool_acc(a0, _mm256_loadu_ps(r + j * col), max);
    }
    return odnn_pool_acc(odnn_pool_acc(a0, a1, max), odnn_pool_acc(a2, a3, max), max);
}

/* Four neighbouring interior windows from X (the first one's first cell,
 * the next ones STEP floats on): NH rows of all KW columns. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_pool_four(const float *x, int64_t step, int64_t nh, int64_t kw, int64_t row, int64_t col,
               int max, __m256 scale, float *y, int64_t ystep)
{
    __m256 init = max ? _mm256_set1_ps(-INFINITY) : _mm256_setzero_ps();
    __m256 a0 = init, a1 = init, a2 = init, a3 = init;
    for (int64_t i = 0; i < nh; i++) {
        const float *r = x + i * row;
        for (int64_t j = 0; j < kw; j++) {
            const float *c = r + j * col;
            a0 = odnn_pool_acc(a0, _mm256_loadu_ps(c), max);
            a1 = odnn_pool_acc(a1, _mm256_loadu_ps(c + step), max);
            a2 = odnn_pool_acc(a2, _mm256_loadu_ps(c + 2 * step), max);
            a3 = odnn_pool_acc(a3, _mm256_loadu_ps(c + 3 * step), max);
        }
    }
    if (!max) {
        a0 = _mm256_mul_ps(a0, scale), a1 = _mm256_mul_ps(a1, scale);
        a2 = _mm256_mul_ps(a2, scale), a3 = _mm256_mul_ps(a3, scale);
    }
    _mm256_storeu_ps(y, a0);
    _mm256_storeu_ps(y + ystep, a1);
    _mm256_storeu_ps(y + 2 * ystep, a2);
    _mm256_storeu_ps(y + 3 * ystep, a3);
}

/* Output row OH of one 8-channel vector: X the source plane's pixel (0, 0)
 * of it, Y the destination plane's. */
static __attribute__((noinline, target("avx2,fma"))) void
odnn_pool_row(const struct odnn_pool *p, const float *x, float *y, int64_t oh)
{
    int64_t h0 = oh * p->sh - p->ph, k0, k1;
    odnn_pool_taps(h0, p->kh, p->dh, p->ih, &k0, &k1);
    int64_t nh = k1 - k0, row = p->dh * p->xs_h, col = p->dw * p->xs_w;
    const float *xr = x + (h0 + k0 * p->dh) * p->xs_h;
    float *yr = y + oh * p->ys_h;
    /* the outputs whose window is inside the source's columns */
    int64_t lo = p->pw > 0 ? (p->pw + p->sw - 1) / p->sw : 0;
    int64_t span = (p->kw - 1) * p->dw, top = p->iw - 1 - span + p->pw;
    int64_t hi = top >= 0 ? top / p->sw + 1 : 0;
    if (hi > p->ow)
        hi = p->ow;
    if (lo > hi)
        lo = hi;
    int max = p->max;
    int64_t done = lo; /* [lo, done) went four at a time */
    if (p->kw < 8) {
        float count = (float)((p->include_pad ? p->kh : nh) * p->kw);
        __m256 scale = _mm256_set1_ps(count > 0 ? 1.0f / count : 0.0f);
        for (; done + 4 <= hi; done += 4)
            odnn_pool_four(xr + (done * p->sw - p->pw) * p->xs_w, p->sw * p->xs_w, nh, p->kw,
                           row, col, max, scale, yr + done * p->ys_w, p->ys_w);
    }
    for (int64_t o = 0; o < p->ow; o++) {
        if (o == lo && done > lo) {
            o = done - 1;
            continue;
        }
        int64_t w0 = o * p->sw - p->pw, j0, j1;
        odnn_pool_taps(w0, p->kw, p->dw, p->iw, &j0, &j1);
        __m256 v = odnn_pool_window(xr + (w0 + j0 * p->dw) * p->xs_w, nh, j1 - j0, row, col, max);
        if (!max) {
            float count = (float)(p->include_pad ? p->kh * p->kw : nh * (j1 - j0));
            v = _mm256_mul_ps(v, _mm256_set1_ps(count > 0 ? 1.0f / count : 0.0f));
        }
        _mm256_storeu_ps(yr + o * p->ys_w, v);
    }
}

void odnn_pool_run(const struct odnn_pool *p, const float *x, float *y, int threads)
{
    int64_t items = p->n * p->groups * p->oh;
    int team = threads > 1 && items > 1 ? threads : 1;
#pragma omp parallel num_threads(team)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t b = items * t / k, e = items * (t + 1) / k;
        for (int64_t it = b; it < e; it++) {
            int64_t oh = it % p->oh, ig = it / p->oh, g = ig % p->groups, img = ig / p->groups;
            for (int64_t v = 0; v < p->vecs; v++)
                odnn_pool_row(p, x + img * p->xs_n + g * p->xs_g + v * 8,
                              y + img * p->ys_n + g * p->ys_g + v * 8, oh);
        }
    }
}
