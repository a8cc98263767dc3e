/* onednn_winograd.c — the direct convolution's Winograd variant: 3x3,
 * stride 1, one group, on CPUs where oneDNN runs AVX2 (oneDNN 2.6 has
 * Winograd kernels for AVX-512 only).
 *
 * Why: a 3x3 layer is most of a ResNet's, VGG's or U-Net's time, and the
 * direct kernel (onednn_direct.c) spends 9 multiplies per output, input
 * and output channel. Winograd's F(m x m, 3x3) computes an m x m output
 * tile from an (m + 2)^2 input tile with (m + 2)^2 multiplies per channel
 * pair instead of 9 m^2: 2.25x fewer for m = 2, 4x fewer for m = 4. The
 * transforms cost in proportion to the channels in plus out, the products
 * to their product, and the transformed weights are (m + 2)^2 / 9 times
 * the size of the plain ones, so small maps with many channels (few tiles,
 * large weights read once) stay on the direct kernel: odnn_wino_tile
 * chooses.
 *
 * The computation, per work item of TBLOCK tiles of one image and a range
 * of 16-channel output blocks, all in the calling thread's scratch:
 *  1. the input transform V = B^T d B of every tile and 8-channel input
 *     block, read from the source in place (tiles over the border load
 *     only their part inside the map; a zero-bordered copy cost 6% of the
 *     time on 64 channels at 56x56), stored as V[a][tile][ic] for each of
 *     the (m + 2)^2 positions a;
 *  2. per position and output block, a product of V[a] (tiles x IC) by
 *     the weights transformed at compile, U[ob][a] (IC x 16), in the
 *     direct kernel's register tile (6 rows by 16 channels, twelve
 *     accumulators: odnn_direct_product), into M[a][tile] as two halves
 *     of 8 channels;
 *  3. the output transform Y = A^T M A of each tile, plus the bias and the
 *     lone activation, stored to the destination's pixels inside the map.
 * The matrices are Lavin and Gray's (points 0, +-1, +-2 for m = 4); the
 * weights are transformed at compile, in float. Each output comes from one work item
 * with a fixed order of sums: results do not depend on the thread count.
 *
 * Compiled for AVX2 and FMA by function attributes, like the direct
 * kernel, and called only where odnn_direct_usable() holds. */
#include "onednn.h"
#include "onednn_avx2.h"

#include <immintrin.h>
#include <omp.h>
#include <string.h>

#define ODNN_WINO_ROWS 6 /* tiles per register tile */

/* V per work item in a thread's scratch: about half of a core's L2, so
 * that a block's transformed tiles and one output block's weights stay
 * there through the products. */
#define ODNN_WINO_V_BYTES (128 * 1024)

int odnn_wino_tile(const struct odnn_direct *d)
{
    /* 16 channels in: even with the direct kernel (at 28x28 to 112x112) */
    if (d->cg != 0 || d->groups > 1 || d->kh != 3 || d->kw != 3 || d->sh != 1 || d->sw != 1 || d->dh != 1 ||
        d->dw != 1 || d->oh < 2 || d->ow < 2 || d->ic < 24 || d->oc < 16)
        return 0;
    /* Four stacked layers against the direct kernel (transformed weights
     * U; F(4x4) / F(2x2)): 64 channels at 56x56 0.46 / 0.77, 128 at 16x16
     * 0.57 / 0.65, 256 at 28x28 0.51 / 0.70, 512 at 14x14 0.71 / 0.62, 256
     * at 8x8 1.1 / 0.8-1.06, 512 at 7x7 1.3 / 0.9, 512 at 4x4 1.8 / 1.0, 24
     * at 56x56 and 28x28 0.77 (F(4x4)).
     * F(4x4) from 16x16 outputs where U fits 4 MiB, and on any U from 24x24
     * (where it streams, the products outweigh it); F(2x2) from 7x7. */
    const int64_t pixels = (int64_t)d->oh * d->ow, pairs = (int64_t)d->ic * d->oc;
    const int64_t u4 = 36 * pairs * (int64_t)sizeof(float);
    const int64_t u2 = 16 * pairs * (int64_t)sizeof(float);
    if (pixels >= 256 && (u4 <= (4 << 20) || (pixels >= 576 && u4 <= (64 << 20))))
        return 4;
    if (pixels >= 49 && u2 <= (32 << 20))
        return 2;
    return 0;
}

size_t odnn_wino_packed_floats(const struct odnn_direct *d)
{
    size_t a = (size_t)(d->wm + 2), nob = (size_t)(d->oc + 15) / 16;
    return nob * (a * a * (size_t)d->ic + 1) * 16;
}

/* G for F(2x2, 3x3) and F(4x4, 3x3): (m + 2) rows of 3. */
static const float odnn_wino_g2[4][3] = {
    {1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
static const float odnn_wino_g4[6][3] = {{1.0f / 4, 0, 0},
                                         {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                         {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                         {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                         {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                         {0, 0, 1}};

/* U = G k G^T for the 16 output channels of block OB and input channel I,
 * lane by lane (the loops over the 16 lanes vectorize), each position's
 * 16 floats stored as one run of OUT's [ob][pos][ic][16]. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_pack_run(const struct odnn_direct *d, const float *oihw, int ob, int i, float *out,
                   const int a)
{
    const int aa = a * a;
    const float(*g)[3] = a == 4 ? odnn_wino_g2 : odnn_wino_g4;
    float k[9][16], t[6][3][16], u[36][16];
    for (int o = 0; o < 16; o++) {
        int oc = ob * 16 + o;
        const float *src = oihw + ((size_t)oc * (size_t)d->ic + (size_t)i) * 9;
        for (int e = 0; e < 9; e++)
            k[e][o] = oc < d->oc ? src[e] : 0.0f;
    }
    for (int r = 0; r < a; r++) /* t = G k */
        for (int c = 0; c < 3; c++)
            for (int o = 0; o < 16; o++)
                t[r][c][o] = g[r][0] * k[c][o] + g[r][1] * k[3 + c][o] + g[r][2] * k[6 + c][o];
    for (int r = 0; r < a; r++) /* u = t G^T */
        for (int c = 0; c < a; c++)
            for (int o = 0; o < 16; o++)
                u[r * a + c][o] = t[r][0][o] * g[c][0] + t[r][1][o] * g[c][1] + t[r][2][o] * g[c][2];
    for (int p = 0; p < aa; p++)
        memcpy(out + (((size_t)ob * (size_t)aa + (size_t)p) * (size_t)d->ic + (size_t)i) * 16, u[p],
               sizeof u[p]);
}

__attribute__((target("avx2,fma"))) void odnn_wino_pack(const struct odnn_direct *d,
                                                         const float *oihw, const float *bias,
                                                         float *out)
{
    const int aa = (d->wm + 2) * (d->wm + 2), nob = (d->oc + 15) / 16;
    /* [ob][pos][ic][16], then the bias; on the compiling thread alone (an
     * OpenMP team started there costs the running thread's team its
     * spinning: odnn_weight) */
    for (int ob = 0; ob < nob; ob++)
        for (int i = 0; i < d->ic; i++)
            if (d->wm == 2)
                odnn_wino_pack_run(d, oihw, ob, i, out, 4);
            else
                odnn_wino_pack_run(d, oihw, ob, i, out, 6);
    float *b = out + (size_t)nob * (size_t)aa * (size_t)d->ic * 16;
    for (int oc = 0; oc < nob * 16; oc++)
        b[oc] = bias != NULL && oc < d->oc ? bias[oc] : 0.0f;
}

int odnn_wino_setup(struct odnn_direct *d, pl_module_ctx *ctx)
{
    const int a = d->wm + 2, aa = a * a;
    d->th = (d->oh + d->wm - 1) / d->wm;
    d->tw = (d->ow + d->wm - 1) / d->wm;
    int tiles = d->th * d->tw;
    /* Tiles per block, output blocks per item. The transformed weights U
     * are read once per block of tiles. Up to 4 MiB they stay in cache:
     * small blocks, whose V (the transformed tiles) stays within half an
     * L2 (ODNN_WINO_V_BYTES), all output blocks per item. Beyond, U
     * streams from memory: blocks as large as keep one position's V (what
     * a product sweeps for each output block) within 256 KiB, 4 output
     * blocks per item (enough products to hide the input transform each
     * item repeats). Four stacked layers against the direct kernel: 512
     * channels at 28x28 0.42 of its time, at 14x14 0.62, 256 at 28x28
     * 0.51. */
    const size_t u_bytes = (size_t)aa * (size_t)d->ic * (size_t)d->oc * sizeof(float);
    const int nob = (d->oc + 15) / 16, streamed = u_bytes > ((size_t)4 << 20);
    int t = streamed ? (int)(2 * ODNN_WINO_V_BYTES / ((size_t)d->ic * sizeof(float)))
                     : (int)(ODNN_WINO_V_BYTES / ((size_t)aa * (size_t)d->ic * sizeof(float)));
    t = t / ODNN_WINO_ROWS * ODNN_WINO_ROWS;
    if (t < ODNN_WINO_ROWS)
        t = ODNN_WINO_ROWS;
    if (t > 240)
        t = 240;
    /* blocks of even size (a last short block would leave a thread
     * idle), a multiple of the threads where there are more blocks than
     * threads (17 blocks on 2 threads kept one waiting an eighth of the
     * time: 64 channels at 56x56), in whole register tiles where that
     * stays under T */
    int threads = onednn_host->thread_count(ctx->host_ctx);
    if (threads < 1)
        threads = 1;
    int blocks = (tiles + t - 1) / t;
    if (blocks > threads && blocks % threads != 0 && blocks + threads <= tiles)
        blocks += threads - blocks % threads;
    int even = (tiles + blocks - 1) / blocks;
    int rounded = (even + ODNN_WINO_ROWS - 1) / ODNN_WINO_ROWS * ODNN_WINO_ROWS;
    d->tblock = rounded <= t && (tiles + rounded - 1) / rounded == blocks ? rounded : even;
    blocks = (tiles + d->tblock - 1) / d->tblock;
    /* fewer output blocks per item where the items would leave threads
     * idle, and at most what keeps an item's products M within 512 KiB */
    int obs = streamed && nob > 4 ? 4 : nob;
    int chunks = (nob + obs - 1) / obs, base = d->n * blocks;
    if (base * chunks < 4 * threads) {
        chunks = (4 * threads + base - 1) / base;
        if (chunks > nob)
            chunks = nob;
        obs = (nob + chunks - 1) / chunks;
    }
    int cap = (int)(4 * ODNN_WINO_V_BYTES / ((size_t)aa * (size_t)d->tblock * 16 * sizeof(float)));
    d->obs = obs < cap ? obs : cap > 1 ? cap : 1;
    d->ws_floats = (size_t)aa * (size_t)d->tblock * ((size_t)d->ic + 16 * (size_t)d->obs) + 16;
    d->ws_threads = threads;
    return 1;
}

/* ---- transforms, on 8 channels at a time ---------------------------------------- */

#define ODNN_LD(p) _mm256_loadu_ps(p)

/* B^T x for one column of A values (stride S vectors apart, in place). */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_bt2(__m256 *x, int s)
{
    __m256 d0 = x[0], d1 = x[s], d2 = x[2 * s], d3 = x[3 * s];
    x[0] = _mm256_sub_ps(d0, d2);
    x[s] = _mm256_add_ps(d1, d2);
    x[2 * s] = _mm256_sub_ps(d2, d1);
    x[3 * s] = _mm256_sub_ps(d1, d3);
}

static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_bt4(__m256 *x, int s)
{
    const __m256 c4 = _mm256_set1_ps(4.0f), c5 = _mm256_set1_ps(5.0f),
                 c2 = _mm256_set1_ps(2.0f);
    __m256 d0 = x[0], d1 = x[s], d2 = x[2 * s], d3 = x[3 * s], d4 = x[4 * s], d5 = x[5 * s];
    __m256 t1 = _mm256_fnmadd_ps(c4, d2, d4);   /* d4 - 4 d2 */
    __m256 t2 = _mm256_fnmadd_ps(c4, d1, d3);   /* d3 - 4 d1 */
    __m256 t3 = _mm256_sub_ps(d4, d2);          /* d4 - d2 */
    __m256 t4 = _mm256_mul_ps(c2, _mm256_sub_ps(d3, d1)); /* 2 (d3 - d1) */
    x[0] = _mm256_add_ps(_mm256_fnmadd_ps(c5, d2, _mm256_mul_ps(c4, d0)), d4);
    x[s] = _mm256_add_ps(t1, t2);
    x[2 * s] = _mm256_sub_ps(t1, t2);
    x[3 * s] = _mm256_add_ps(t3, t4);
    x[4 * s] = _mm256_sub_ps(t3, t4);
    x[5 * s] = _mm256_add_ps(_mm256_fnmadd_ps(c5, d3, _mm256_mul_ps(c4, d1)), d5);
}

/* A^T m: from A values at stride S to M (2 or 4) values at stride S. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_at2(const __m256 *m, int s, __m256 *y, int ys)
{
    __m256 m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s];
    y[0] = _mm256_add_ps(_mm256_add_ps(m0, m1), m2);
    y[ys] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m3);
}

static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_at4(const __m256 *m, int s, __m256 *y, int ys)
{
    const __m256 c2 = _mm256_set1_ps(2.0f), c4 = _mm256_set1_ps(4.0f),
                 c8 = _mm256_set1_ps(8.0f);
    __m256 m0 = m[0], m1 = m[s], m2 = m[2 * s], m3 = m[3 * s], m4 = m[4 * s], m5 = m[5 * s];
    __m256 p12 = _mm256_add_ps(m1, m2), d12 = _mm256_sub_ps(m1, m2);
    __m256 p34 = _mm256_add_ps(m3, m4), d34 = _mm256_sub_ps(m3, m4);
    y[0] = _mm256_add_ps(_mm256_add_ps(m0, p12), p34);
    y[ys] = _mm256_fmadd_ps(c2, d34, d12);
    y[2 * ys] = _mm256_fmadd_ps(c4, p34, p12);
    y[3 * ys] = _mm256_add_ps(_mm256_fmadd_ps(c8, d34, d12), m5);
}

/* Transforms tile TT's input in each 8-channel block into V[pos][T][ic]. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_in(const struct odnn_direct *d, const float *xs, size_t plane, int tt, float *v,
             int t, int tb, const int m)
{
    const int a = m + 2, icb = d->ic / 8;
    const int ty = tt / d->tw, tx = tt % d->tw;
    /* the tile's window in the unpadded source: rows r0 .. r1 and columns
     * c0 .. c1 of it are inside, the rest is padding (zeros) */
    const int y0 = ty * m - d->pt, x0 = tx * m - d->pl;
    const int r0 = y0 < 0 ? -y0 : 0, c0 = x0 < 0 ? -x0 : 0;
    const int r1 = d->ih - y0 < a ? d->ih - y0 : a, c1 = d->iw - x0 < a ? d->iw - x0 : a;
    const int inside = r0 == 0 && c0 == 0 && r1 == a && c1 == a;
    /* (y0 + r) * iw + x0 + c, pixel (r, c) of the window; formed only
     * for pixels inside, so no pointer leaves the source */
    const ptrdiff_t corner = (ptrdiff_t)y0 * d->iw + x0;
    /* a border tile's window, its padding zero, a rows of a pixels */
    float patch[36 * 8] __attribute__((aligned(32)));
    if (!inside)
        memset(patch, 0, sizeof patch);
    for (int cb = 0; cb < icb; cb++) {
        const float *p = xs + (size_t)cb * plane;
        size_t stride = (size_t)d->iw; /* pixels from one row of the window to the next */
        if (inside) {
            p += corner * 8;
        } else {
            for (int r = r0; r < r1; r++)
                memcpy(patch + ((size_t)r * (size_t)a + (size_t)c0) * 8,
                       p + (corner + (ptrdiff_t)r * d->iw + c0) * 8,
                       (size_t)(c1 - c0) * 8 * sizeof(float));
            p = patch;
            stride = (size_t)a;
        }
        __m256 x[36];
#pragma GCC unroll 6
        for (int r = 0; r < a; r++)
#pragma GCC unroll 6
            for (int c = 0; c < a; c++)
                x[r * a + c] = ODNN_LD(p + ((size_t)r * stride + (size_t)c) * 8);
#pragma GCC unroll 6
        for (int c = 0; c < a; c++)
            m == 2 ? odnn_wino_bt2(x + c, a) : odnn_wino_bt4(x + c, a);
#pragma GCC unroll 6
        for (int r = 0; r < a; r++)
            m == 2 ? odnn_wino_bt2(x + r * a, 1) : odnn_wino_bt4(x + r * a, 1);
#pragma GCC unroll 36
        for (int q = 0; q < a * a; q++)
            _mm256_storeu_ps(v + ((size_t)q * (size_t)tb + (size_t)t) * (size_t)d->ic +
                                 (size_t)cb * 8,
                             x[q]);
    }
}

/* Output transform of tile TT of 8 output channels from their products
 * MB[pos][T][8]: bias, activation, stores inside the map. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_out(const struct odnn_direct *d, const float *mb, int t, int tb, int tt,
              const float *bias, float *out, const int m)
{
    const int a = m + 2;
    __m256 x[36], s[24], y[16];
#pragma GCC unroll 36
    for (int q = 0; q < a * a; q++)
        x[q] = ODNN_LD(mb + ((size_t)q * (size_t)tb + (size_t)t) * 8);
#pragma GCC unroll 6
    for (int c = 0; c < a; c++) /* columns: a x a -> m x a */
        m == 2 ? odnn_wino_at2(x + c, a, s + c, a) : odnn_wino_at4(x + c, a, s + c, a);
#pragma GCC unroll 4
    for (int r = 0; r < m; r++) /* rows: m x a -> m x m */
        m == 2 ? odnn_wino_at2(s + r * a, 1, y + r * m, 1) : odnn_wino_at4(s + r * a, 1, y + r * m, 1);
    const int ty = tt / d->tw, tx = tt % d->tw;
    const int rows = d->oh - ty * m < m ? d->oh - ty * m : m;
    const int cols = d->ow - tx * m < m ? d->ow - tx * m : m;
    const __m256 b = ODNN_LD(bias), lo = _mm256_set1_ps(d->lo), hi = _mm256_set1_ps(d->hi),
                 slope = _mm256_set1_ps(d->alpha);
    for (int r = 0; r < rows; r++) {
        float *o = out + ((size_t)(ty * m + r) * (size_t)d->ow + (size_t)(tx * m)) * 8;
        for (int c = 0; c < cols; c++)
            _mm256_storeu_ps(o + (size_t)c * 8,
                             odnn_act8(_mm256_add_ps(y[r * m + c], b), d->act, lo, hi, slope));
    }
}

/* One work item: tiles T0 .. T0 + NT of image IMG, output blocks OB0 ..
 * OB1 (at most d->obs). Per position, one V[pos] times each output
 * block's weights, so V[pos] is read from cache for all of them. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_wino_item(const struct odnn_direct *d, const float *xp, const float *w, float *dst,
               float *ws, int t0, int nt, int ob0, int ob1, const int m)
{
    const int a = m + 2, aa = a * a, tb = d->tblock, ic = d->ic, ocb8 = d->oc / 8;
    const int nob = (d->oc + 15) / 16;
    const size_t plane = (size_t)d->ih * (size_t)d->iw * 8;
    const size_t out_plane = (size_t)d->oh * (size_t)d->ow * 8;
    const size_t half = (size_t)aa * (size_t)tb * 8; /* per output block: 0-7, then 8-15 */
    float *v = ws, *mb = ws + (size_t)aa * (size_t)tb * (size_t)ic;
    int rows[ODNN_WINO_ROWS];
    for (int r = 0; r < ODNN_WINO_ROWS; r++)
        rows[r] = r * ic;
    struct odnn_direct prod;
    odnn_direct_product_desc(&prod, ic);
    for (int t = 0; t < nt; t++)
        odnn_wino_in(d, xp, plane, t0 + t, v, t, tb, m);
    for (int q = 0; q < aa; q++)
        for (int ob = ob0; ob < ob1; ob++) {
            const float *u = w + ((size_t)ob * (size_t)aa + (size_t)q) * (size_t)ic * 16;
            float *mo = mb + (size_t)(ob - ob0) * 2 * half;
            for (int r = 0; r < nt; r += ODNN_WINO_ROWS) {
                int pt = nt - r < ODNN_WINO_ROWS ? nt - r : ODNN_WINO_ROWS;
                size_t at = (size_t)q * (size_t)tb + (size_t)r;
                odnn_direct_product(&prod, v + at * (size_t)ic, rows, u, mo + at * 8,
                                    mo + half + at * 8, pt);
            }
        }
    const float *bias = w + (size_t)nob * (size_t)aa * (size_t)ic * 16;
    for (int ob = ob0; ob < ob1; ob++)
        for (int h = 0; h < 2 && ob * 2 + h < ocb8; h++) {
            float *out = dst + (size_t)(ob * 2 + h) * out_plane;
            const float *mo = mb + ((size_t)(ob - ob0) * 2 + (size_t)h) * half;
            for (int t = 0; t < nt; t++)
                odnn_wino_out(d, mo, t, tb, t0 + t, bias + ob * 16 + h * 8, out, m);
        }
}

static __attribute__((noinline, target("avx2,fma"))) void
odnn_wino_item2(const struct odnn_direct *d, const float *xp, const float *w, float *dst,
                float *ws, int t0, int nt, int ob0, int ob1)
{
    odnn_wino_item(d, xp, w, dst, ws, t0, nt, ob0, ob1, 2);
}

static __attribute__((noinline, target("avx2,fma"))) void
odnn_wino_item4(const struct odnn_direct *d, const float *xp, const float *w, float *dst,
                float *ws, int t0, int nt, int ob0, int ob1)
{
    odnn_wino_item(d, xp, w, dst, ws, t0, nt, ob0, ob1, 4);
}

void odnn_wino_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                   int threads, float *scratch)
{
    const int icb = d->ic / 8, ocb8 = d->oc / 8, nob = (d->oc + 15) / 16;
    const int tiles = d->th * d->tw, tblocks = (tiles + d->tblock - 1) / d->tblock;
    const size_t plane = (size_t)d->ih * (size_t)d->iw * 8;
    const size_t out_plane = (size_t)d->oh * (size_t)d->ow * 8;
    if (threads > d->ws_threads)
        threads = d->ws_threads;
    if (threads < 1)
        threads = 1;
    const int base = d->n * tblocks, chunks = (nob + d->obs - 1) / d->obs;
    const int items = base * chunks;
#pragma omp parallel num_threads(threads)
    {
        float *ws = scratch + (size_t)omp_get_thread_num() * d->ws_floats;
#pragma omp for schedule(static)
        for (int it = 0; it < items; it++) {
            int img = it / (tblocks * chunks), rest = it % (tblocks * chunks);
            int blk = rest / chunks, ch = rest % chunks;
            int t0 = blk * d->tblock;
            int nt = tiles - t0 < d->tblock ? tiles - t0 : d->tblock;
            int ob0 = ch * d->obs, ob1 = ob0 + d->obs < nob ? ob0 + d->obs : nob;
            const float *xp = src + (size_t)img * (size_t)icb * plane;
            float *out = dst + (size_t)img * (size_t)ocb8 * out_plane;
            if (d->wm == 2)
                odnn_wino_item2(d, xp, w, out, ws, t0, nt, ob0, ob1);
            else
                odnn_wino_item4(d, xp, w, out, ws, t0, nt, ob0, ob1);
        }
    }
}
