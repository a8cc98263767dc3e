/* onednn_narrow.c — the onednn module's own kernel for convolutions into a
 * few output channels, on AVX-512 CPUs.
 *
 * Why: oneDNN 2.6's convolutions compute output channels in blocks of 16
 * (Acdb16a weights), so a convolution into one channel costs what one into
 * 16 does, and one into 8 twice its work. Such layers end image-to-image
 * networks (a U-Net's or a depth or matting net's 1-channel head, RGB out of
 * a super-resolution or style network) and fill small-channel audio nets:
 * Spotify's basic_pitch runs 8 -> 1 (5x5), 32 -> 1 (7x3) and 33 -> 1 (3x3)
 * layers at 6-7 GMAC/s and an 8 -> 8 one through a 3x39 kernel at 62
 * (ONEDNN_VERBOSE, 2 threads): 9 of its 15 ms.
 *
 * The kernel. In a channels-last source (or one blocked by 8 or 16
 * channels, per block) the values one output reads from one kernel row
 * are contiguous: kw pixels of cb channels. So each output value is a sum
 * over kernel rows (and channel blocks) of dot products of kw * cb floats
 * with the matching packed weights, and the next output's window starts
 * sw * cb floats further on. A tile is NB consecutive output pixels of
 * one row times the oc channels (odnn_narrow_pixels: 16 pixels of 1
 * channel, 3 of 8): NB * oc (at most 24) accumulators of 16 lanes, each
 * FMA one source vector (loaded once per pixel, used for every channel)
 * times one weight vector (loaded once per chunk, used for every pixel).
 * At the end a transposing reduction (45 shuffles and adds) turns each 16
 * accumulators into one vector whose lane p * oc + o is pixel p's channel
 * o: exactly the channels-last destination's order, stored with the bias
 * and a lone activation (clip, leaky ReLU, sigmoid, swish) in a masked
 * store. Only a row's last chunk loads masked: masked loads on every
 * chunk made the 8 -> 8 3x39 layer 2.64 -> 3.0 ms. Windows that cross the
 * left or right border (and the last, partial tile of a row) read a zero-bordered
 * copy of their span per kernel row instead (a strip of the thread's
 * scratch); kernel rows above or below the image are skipped. Each
 * output's sum runs in a fixed order: results do not depend on the thread
 * count.
 *
 * Weights are packed at compile time as [kh][channel block][oc][kp] (kp:
 * kw * cb rounded up to 16, zero filled) and then a 32-lane bias pattern
 * (lane l: bias[l % oc], for the l < NB * oc lanes a tile stores). */
#include "onednn.h"

#include <immintrin.h>
#include <omp.h>
#include <string.h>

/* The most (kernel row, channel block) pairs a tile sums over. */
#define ODNN_NARROW_ROWS 256

/* Vector operations of a tile besides its FMAs (the reduction, bias,
 * activation and store), in FMAs. */
#define ODNN_NARROW_TILE_OPS 50

/* Pixels per tile for OC channels: NB * OC accumulators, at most 24 (two
 * vectors of results), with NB source vectors and a weight vector within
 * the 32 registers; each weight vector load serves NB FMAs (8 channels: 3
 * pixels, 11 loads per 24 FMAs where 2 pixels took 10 per 16). */
static const int odnn_narrow_pixels[9] = {0, 16, 8, 7, 6, 4, 4, 3, 3};

static int odnn_narrow_nb(int64_t oc)
{
    return odnn_narrow_pixels[oc];
}

double odnn_narrow_ops(int64_t ic, int64_t oc, int64_t kh, int64_t kw)
{
    if (oc < 1 || oc > 8)
        return 0;
    double chunks = (double)((kw * ic + 15) / 16);
    int values = odnn_narrow_nb(oc) * (int)oc;
    return 16.0 * (double)kh * chunks +
           16.0 * ODNN_NARROW_TILE_OPS * (double)((values + 15) / 16) / (double)values;
}

/* Against oneDNN's blocks: IC * KH * KW multiply-adds per output value,
 * times the 16-channel padding of OC, 1.5x ahead at least (8 -> 8
 * channels 3x3 stay with oneDNN, 16 -> 8 too; 8 -> 8 through 3x39 or
 * anything into 1-4 channels come here). */
int odnn_narrow_takes(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t dw, int64_t group)
{
    if (!onednn_has_avx512() || group != 1 || oc < 1 || oc > 8 || ic < 1 || kh < 1 || kw < 1 ||
        (dw != 1 && kw > 1) || ic > (1 << 16) || kh > ODNN_NARROW_ROWS || kw > 4096 ||
        kh * (kw + 15) * ic > ((int64_t)1 << 22)) /* its strips (stride 1) */
        return 0;
    double padded = (double)(ic * kh * kw) * 16.0 / (double)oc;
    return 1.5 * odnn_narrow_ops(ic, oc, kh, kw) < padded;
}

static int odnn_narrow_blocks(const struct odnn_direct *d)
{
    return d->ic / d->cb;
}

size_t odnn_narrow_packed_floats(const struct odnn_direct *d)
{
    return (size_t)d->kh * (size_t)odnn_narrow_blocks(d) * (size_t)d->oc * (size_t)d->kp + 32;
}

void odnn_narrow_pack(const struct odnn_direct *d, const float *oihw, const float *bias,
                      float *out)
{
    const int ncb = odnn_narrow_blocks(d), nb = odnn_narrow_nb(d->oc);
    size_t k = 0;
    for (int r = 0; r < d->kh; r++)
        for (int cbk = 0; cbk < ncb; cbk++)
            for (int o = 0; o < d->oc; o++)
                for (int j = 0; j < d->kp; j++, k++) {
                    /* float j of a window row: pixel j / cb, channel j % cb of the block */
                    int x = j / d->cb, c = cbk * d->cb + j % d->cb;
                    out[k] = j < d->kw * d->cb
                                 ? oihw[(((size_t)o * (size_t)d->ic + (size_t)c) * (size_t)d->kh +
                                         (size_t)r) *
                                            (size_t)d->kw +
                                        (size_t)x]
                                 : 0.0f;
                }
    for (int l = 0; l < 32; l++, k++)
        out[k] = l < nb * d->oc && bias != NULL ? bias[l % d->oc] : 0.0f;
}

int64_t odnn_narrow_strip_floats(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t sw)
{
    return kh * ((int64_t)(odnn_narrow_nb(oc) - 1) * sw + kw) * ic;
}

/* The span of source pixels a tile's windows cover along a row. */
static int odnn_narrow_span(const struct odnn_direct *d)
{
    return (odnn_narrow_nb(d->oc) - 1) * d->sw + d->kw;
}

int odnn_narrow_setup(struct odnn_direct *d, pl_module_ctx *ctx)
{
    d->kp = (d->kw * d->cb + 15) / 16 * 16;
    int threads = onednn_host->thread_count(ctx->host_ctx);
    d->ws_threads = threads > 0 ? threads : 1;
    /* strips for every (kernel row, channel block), 64-byte aligned */
    size_t strip = ((size_t)odnn_narrow_span(d) * (size_t)d->cb + 15) / 16 * 16;
    d->ws_floats = (size_t)d->kh * (size_t)odnn_narrow_blocks(d) * strip + 16;
    return 1;
}

/* Lane l of the result: the sum of A[l]'s 16 lanes. */
static inline __attribute__((always_inline, target("avx512f"))) __m512
odnn_narrow_hsum(const __m512 *a)
{
    __m512 t[8], u[4];
    for (int i = 0; i < 8; i++) /* per 128 bits: [a0+a2, b0+b2, a1+a3, b1+b3] */
        t[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]),
                             _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
    for (int i = 0; i < 4; i++) { /* per 128 bits: the 4 sums of a[4i .. 4i + 3] */
        __m512d p = _mm512_castps_pd(t[2 * i]), q = _mm512_castps_pd(t[2 * i + 1]);
        u[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(p, q)),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(p, q)));
    }
    __m512 x01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(u[0], u[1], _MM_SHUFFLE(3, 1, 3, 1)));
    __m512 x23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(u[2], u[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(x01, x23, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* 16 floats at P into a register. Written as the instruction: the
 * compiler folds a load used by several FMAs into each of them as a memory
 * operand, which puts OC * NB loads instead of OC on the load ports. */
static inline __attribute__((always_inline, target("avx512f"))) __m512
odnn_narrow_load(const float *p)
{
    __m512 v;
    __asm__("vmovups %1, %0" : "=v"(v) : "m"(*(const struct { float f[16]; } *)p));
    return v;
}

/* The tile's accumulators are named variables, a_P_O for pixel P and
 * channel O (those past NB or OC are dead code once the tile function is
 * specialised): in an array indexed by loop counters, GCC keeps them in
 * memory and stores all of them back at every chunk. */
#define ODNN_NARROW_P16(M, o)                                                                  \
    M(0, o) M(1, o) M(2, o) M(3, o) M(4, o) M(5, o) M(6, o) M(7, o) M(8, o) M(9, o) M(10, o)    \
        M(11, o) M(12, o) M(13, o) M(14, o) M(15, o)
#define ODNN_NARROW_ALL(M)                                                                     \
    ODNN_NARROW_P16(M, 0)                                                                      \
    ODNN_NARROW_P16(M, 1)                                                                      \
    ODNN_NARROW_P16(M, 2)                                                                      \
    ODNN_NARROW_P16(M, 3)                                                                      \
    ODNN_NARROW_P16(M, 4)                                                                      \
    ODNN_NARROW_P16(M, 5)                                                                      \
    ODNN_NARROW_P16(M, 6)                                                                      \
    ODNN_NARROW_P16(M, 7)
#define ODNN_NARROW_ZERO(p, o) __m512 a_##p##_##o = _mm512_setzero_ps();
#define ODNN_NARROW_FMA(p, o)                                                                  \
    if (p < NB)                                                                                \
        a_##p##_##o = _mm512_fmadd_ps(x##p, wv, a_##p##_##o);
#define ODNN_NARROW_CHANNEL(o)                                                                 \
    if (o < OC) {                                                                              \
        __m512 wv = odnn_narrow_load(wr + o * kp + k);                                         \
        ODNN_NARROW_P16(ODNN_NARROW_FMA, o)                                                    \
    }
#define ODNN_NARROW_X(p)                                                                       \
    __m512 x##p = p >= NB ? _mm512_setzero_ps()                                                \
                  : full  ? _mm512_loadu_ps(s + p * step + k)                                  \
                          : _mm512_maskz_loadu_ps(m, s + p * step + k);
#define ODNN_NARROW_OUT(p, o)                                                                  \
    if (p < NB && o < OC)                                                                      \
        acc[p * OC + o] = a_##p##_##o;

/* exp(A) for A in [-87, 87] (the callers clamp), as onednn_avx2.h's
 * odnn_exp8 computes it: 2^n e^r, n = round(A / ln 2), r = A - n ln 2 in
 * two parts, e^r by its Taylor polynomial to r^7. */
static inline __attribute__((always_inline, target("avx512f"))) __m512 odnn_exp16(__m512 a)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693359375f), a);
    r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_fmadd_ps(p, r, one);
    __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(nf), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

/* D's activation (ODNN_ACT_*) of V, as odnn_act8 applies it: a clip, a
 * leaky ReLU, sigmoid 1 / (1 + exp(-x)) with exp's argument clamped to
 * [-87, 87], swish x * sigmoid(alpha x). */
static inline __attribute__((always_inline, target("avx512f"))) __m512
odnn_narrow_act(const struct odnn_direct *d, __m512 v)
{
    if (d->act == ODNN_ACT_CLIP)
        return _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(d->lo)), _mm512_set1_ps(d->hi));
    if (d->act == ODNN_ACT_LEAKY)
        return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LE_OQ), v,
                                  _mm512_set1_ps(d->alpha));
    if (d->act == ODNN_ACT_SWISH || d->act == ODNN_ACT_SIGMOID) {
        const __m512 one = _mm512_set1_ps(1.0f), lim = _mm512_set1_ps(87.0f);
        __m512 a = d->act == ODNN_ACT_SWISH ? _mm512_mul_ps(v, _mm512_set1_ps(d->alpha)) : v;
        __m512 na = _mm512_sub_ps(_mm512_setzero_ps(), a);
        __m512 e = odnn_exp16(_mm512_min_ps(_mm512_max_ps(na, _mm512_sub_ps(_mm512_setzero_ps(),
                                                                             lim)),
                                            lim));
        __m512 sg = _mm512_div_ps(one, _mm512_add_ps(one, e));
        return d->act == ODNN_ACT_SWISH ? _mm512_mul_ps(v, sg) : sg;
    }
    return v;
}

/* One tile: NR window rows, row r's first output at SRC[r] (the next
 * output STEP floats on) with its packed weights at W[r]; K floats a row.
 * Stores the first NV pixels' OC channels at OUT. Each source vector is
 * loaded once for the OC channels, each weight vector once for the NB
 * pixels: NB + OC loads per NB * OC FMAs. The last chunk of a row masks
 * the source floats past K (the weights there are zeros). */
static inline __attribute__((always_inline, target("avx512f"))) void
odnn_narrow_tile(const int OC, const int NB, const struct odnn_direct *d,
                 const float *const *src, const float *const *w, int nr, int step,
                 const float *bias, float *out, int nv)
{
    const int K = d->kw * d->cb, kp = d->kp;
    const __mmask16 tail = (__mmask16)((1u << (K & 15)) - 1u);
    ODNN_NARROW_ALL(ODNN_NARROW_ZERO)
    for (int r = 0; r < nr; r++) {
        const float *s = src[r], *wr = w[r];
        for (int k = 0; k < K; k += 16) {
            const int full = K - k >= 16;
            const __mmask16 m = full ? (__mmask16)0xffffu : tail;
            ODNN_NARROW_X(0) ODNN_NARROW_X(1) ODNN_NARROW_X(2) ODNN_NARROW_X(3)
            ODNN_NARROW_X(4) ODNN_NARROW_X(5) ODNN_NARROW_X(6) ODNN_NARROW_X(7)
            ODNN_NARROW_X(8) ODNN_NARROW_X(9) ODNN_NARROW_X(10) ODNN_NARROW_X(11)
            ODNN_NARROW_X(12) ODNN_NARROW_X(13) ODNN_NARROW_X(14) ODNN_NARROW_X(15)
            ODNN_NARROW_CHANNEL(0) ODNN_NARROW_CHANNEL(1) ODNN_NARROW_CHANNEL(2)
            ODNN_NARROW_CHANNEL(3) ODNN_NARROW_CHANNEL(4) ODNN_NARROW_CHANNEL(5)
            ODNN_NARROW_CHANNEL(6) ODNN_NARROW_CHANNEL(7)
        }
    }
    __m512 acc[32];
    for (int i = 0; i < 32; i++)
        acc[i] = _mm512_setzero_ps();
    ODNN_NARROW_ALL(ODNN_NARROW_OUT)
    int lanes = nv * OC;
    if (NB * OC > 16) { /* the pixels past lane 16 */
        __m512 y1 = odnn_narrow_act(
            d, _mm512_add_ps(odnn_narrow_hsum(acc + 16), _mm512_loadu_ps(bias + 16)));
        if (lanes > 16)
            _mm512_mask_storeu_ps(out + 16, (__mmask16)((1u << (lanes - 16)) - 1u), y1);
    }
    __m512 y = odnn_narrow_act(d, _mm512_add_ps(odnn_narrow_hsum(acc), _mm512_loadu_ps(bias)));
    _mm512_mask_storeu_ps(out, (__mmask16)(lanes >= 16 ? 0xffffu : (1u << lanes) - 1u), y);
}

typedef void (*odnn_narrow_fn)(const struct odnn_direct *, const float *const *,
                               const float *const *, int, int, const float *, float *, int);

#define ODNN_NARROW_FN(OC)                                                                  \
    static __attribute__((noinline, target("avx512f"))) void odnn_narrow_tile##OC(          \
        const struct odnn_direct *d, const float *const *src, const float *const *w, int nr, \
        int step, const float *bias, float *out, int nv)                                    \
    {                                                                                       \
        odnn_narrow_tile(OC, odnn_narrow_pixels[OC], d, src, w, nr, step, bias, out, nv);   \
    }
ODNN_NARROW_FN(1)
ODNN_NARROW_FN(2)
ODNN_NARROW_FN(3)
ODNN_NARROW_FN(4)
ODNN_NARROW_FN(5)
ODNN_NARROW_FN(6)
ODNN_NARROW_FN(7)
ODNN_NARROW_FN(8)

static const odnn_narrow_fn odnn_narrow_tiles[9] = {
    NULL,
    odnn_narrow_tile1,
    odnn_narrow_tile2,
    odnn_narrow_tile3,
    odnn_narrow_tile4,
    odnn_narrow_tile5,
    odnn_narrow_tile6,
    odnn_narrow_tile7,
    odnn_narrow_tile8,
};

/* STRIP: source pixels X0 .. X0 + SPAN - 1 of ROW (a row of IW pixels of
 * CB floats), zeros outside the row. */
static void odnn_narrow_strip(const float *row, int iw, int cb, int x0, int span, float *strip)
{
    int lo = x0 < 0 ? -x0 : 0, hi = iw - x0 < span ? iw - x0 : span;
    if (hi < lo)
        hi = lo;
    memset(strip, 0, (size_t)lo * (size_t)cb * sizeof *strip);
    if (hi > lo)
        memcpy(strip + (size_t)lo * (size_t)cb, row + (size_t)(x0 + lo) * (size_t)cb,
               (size_t)(hi - lo) * (size_t)cb * sizeof *strip);
    memset(strip + (size_t)hi * (size_t)cb, 0, (size_t)(span - hi) * (size_t)cb * sizeof *strip);
}

void odnn_narrow_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                     int threads, float *scratch)
{
    const int nb = odnn_narrow_nb(d->oc), ncb = odnn_narrow_blocks(d), span = odnn_narrow_span(d);
    const int tiles = (d->ow + nb - 1) / nb, items = d->n * d->oh * tiles;
    const size_t strip = ((size_t)span * (size_t)d->cb + 15) / 16 * 16;
    const size_t plane = (size_t)d->ih * (size_t)d->iw * (size_t)d->cb;
    const float *bias = w + odnn_narrow_packed_floats(d) - 32;
    const odnn_narrow_fn tile = odnn_narrow_tiles[d->oc];
    const int step = d->sw * d->cb;
    if (threads > d->ws_threads)
        threads = d->ws_threads;
    if (threads < 1)
        threads = 1;
#pragma omp parallel num_threads(threads)
    {
        float *ws = scratch + (size_t)omp_get_thread_num() * d->ws_floats;
        const float *rows[ODNN_NARROW_ROWS], *wrows[ODNN_NARROW_ROWS];
#pragma omp for schedule(static)
        for (int it = 0; it < items; it++) {
            int img = it / (d->oh * tiles), rest = it % (d->oh * tiles);
            int oy = rest / tiles, ox = rest % tiles * nb;
            int nv = d->ow - ox < nb ? d->ow - ox : nb;
            int x0 = ox * d->sw - d->pl;
            int inside = nv == nb && x0 >= 0 && x0 + span <= d->iw;
            int nr = 0;
            for (int r = 0; r < d->kh; r++) {
                int y = oy * d->sh - d->pt + r * d->dh;
                if (y < 0 || y >= d->ih)
                    continue;
                for (int c = 0; c < ncb; c++, nr++) {
                    const float *row = src + ((size_t)img * (size_t)ncb + (size_t)c) * plane +
                                       (size_t)y * (size_t)d->iw * (size_t)d->cb;
                    wrows[nr] = w + ((size_t)r * (size_t)ncb + (size_t)c) * (size_t)d->oc *
                                        (size_t)d->kp;
                    if (inside) {
                        rows[nr] = row + (size_t)x0 * (size_t)d->cb;
                    } else {
                        float *s = ws + (size_t)nr * strip;
                        odnn_narrow_strip(row, d->iw, d->cb, x0, span, s);
                        rows[nr] = s;
                    }
                }
            }
            float *out = dst + (((size_t)img * (size_t)d->oh + (size_t)oy) * (size_t)d->ow +
                                (size_t)ox) *
                                   (size_t)d->oc;
            tile(d, rows, wrows, nr, step, bias, out, nv);
        }
    }
}
