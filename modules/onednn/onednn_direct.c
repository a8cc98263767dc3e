/* onednn_direct.c — the onednn module's own direct convolution, for CPUs
 * where oneDNN dispatches to its AVX2 kernels.
 *
 * Why: oneDNN 2.6's jit:avx2 direct convolution reaches a third to a half
 * of what this CPU's FMA units can do on small feature maps (and its
 * dilated convolutions with a pad wider than its register block fall to
 * im2col + GEMM, slower still). Measured at 2 threads on the AVX2 EPYC,
 * oneDNN against this kernel, standalone (median of 500, source and
 * destination nChw8c): 64->64 channels on 7x7 41 us / 31, 128->128 on 4x4
 * 67 / 50, 256->256 on 2x2 68 / 47. Inside models (`plinth bench`,
 * alternating rounds) the lead holds on small maps (deeplab_s 0.69-0.74 of
 * the time with oneDNN's kernel, resnet50_s 0.85, yolo_s 0.87) and is gone
 * at ImageNet sizes: two 128->128 layers on 28x28 3.62 ms / 3.80, two
 * 64->64 on 56x56 3.51 / 3.44.
 *
 * The kernel. Source and destination are blocked by 8 channels (oneDNN's
 * aBcd8b, nChw8c), the layout the subgraph's other convolutions already
 * use, so no reorder surrounds it. The source is first copied into a
 * zero-bordered buffer of the compiled step (its border written once, at
 * compile), so every window reads in bounds and a tap is one offset for
 * all pixels. Weights are packed at compile time as [oc/16][tap][ic][16].
 * A tile is up to six output pixels by 16 output channels: twelve 8-lane
 * accumulators, the remaining registers hold two weight vectors and a
 * broadcast input; per input channel and tap it loads 2 weight vectors and
 * broadcasts 6 inputs for 12 FMAs. A grouped 1x1 convolution whose groups
 * are whole 8-channel blocks (ShuffleNet v1) runs group by group: a group's
 * output blocks read only its own source planes and weights. Work items are (image, 16 output
 * channels, tile), tiles innermost, so a thread's consecutive items reuse
 * one channel block's weights from its cache. The stores add the bias and
 * apply a lone ReLU, clip, leaky ReLU, swish (SiLU) or sigmoid
 * (odnn_act8); any other fusion goes into the
 * binary step the compile puts after the kernel (odnn_deconv_epilogue),
 * which keeps every fusion the oneDNN convolution would have had.
 *
 * Compiled for AVX2 and FMA by function attributes; called only when
 * odnn_direct_usable() says the CPU has both and oneDNN is not on AVX-512. */
#include "onednn.h"
#include "onednn_avx2.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#define ODNN_DIRECT_TILE 6

int odnn_direct_usable(void)
{
    static int usable = -1;
    if (usable < 0) {
        __builtin_cpu_init();
        usable = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                 !onednn_has_avx512();
    }
    return usable;
}

/* Standalone at 2 threads (median of 500), this kernel against oneDNN's
 * jit:avx2: 8->16 channels on 32x32 38 us / 23, 16->16 on 16x16 18 / 14,
 * but 16->32 on 16x16 20 / 22, 16->64 on 11x11 19 / 20, 24->40 on 9x9 12 /
 * 24: with fewer than 16 input channels, or 512 channel pairs, a tap's
 * loop is too short for the loads it sets up. */
int odnn_direct_channels(int64_t ic, int64_t oc)
{
    return ic % 8 == 0 && oc % 8 == 0 && ic >= 16 && oc >= 8 && ic * oc >= 512 &&
           ic <= (1 << 20) && oc <= (1 << 20);
}

int odnn_direct_grouped(int64_t ic, int64_t oc, int64_t group)
{
    return group > 1 && ic == oc && ic % 8 == 0 && ic / group * group == ic &&
           (ic / group == 2 || ic / group == 4) && ic <= (1 << 20);
}

int odnn_direct_dense_groups(int64_t ic, int64_t oc, int64_t group)
{
    return group > 1 && ic % group == 0 && oc % group == 0 && ic / group % 8 == 0 &&
           odnn_direct_channels(ic / group, oc / group);
}

/* Groups of the dense kernel (1 when not grouped). */
static int odnn_direct_groups(const struct odnn_direct *d)
{
    return d->groups > 1 ? d->groups : 1;
}

size_t odnn_direct_packed_floats(const struct odnn_direct *d)
{
    if (d->narrow)
        return odnn_narrow_packed_floats(d);
    if (d->wm > 0)
        return odnn_wino_packed_floats(d);
    if (d->cg > 0) /* [oc/8][tap][j][8], then the bias */
        return (size_t)(d->oc / 8) * ((size_t)d->kh * (size_t)d->kw * (size_t)d->cg * 8 + 8);
    int g = odnn_direct_groups(d), icg = d->ic / g, ocg = d->oc / g;
    return (size_t)g * (size_t)((ocg + 15) / 16) *
           ((size_t)d->kh * (size_t)d->kw * (size_t)icg + 1) * 16;
}

void odnn_direct_pack(const struct odnn_direct *d, const float *oihw, const float *bias,
                      float *out)
{
    if (d->narrow) {
        odnn_narrow_pack(d, oihw, bias, out);
        return;
    }
    if (d->wm > 0) {
        odnn_wino_pack(d, oihw, bias, out);
        return;
    }
    size_t taps = (size_t)d->kh * (size_t)d->kw;
    size_t k = 0;
    if (d->cg > 0) {
        /* lane l of block ob is output channel ob * 8 + l; input channel j
         * of its group is weight column j (OIHW: [oc][cg][kh][kw]) */
        for (int ob = 0; ob < d->oc / 8; ob++)
            for (size_t t = 0; t < taps; t++)
                for (int j = 0; j < d->cg; j++)
                    for (int l = 0; l < 8; l++, k++)
                        out[k] = oihw[((size_t)(ob * 8 + l) * (size_t)d->cg + (size_t)j) * taps + t];
        for (int oc = 0; oc < d->oc; oc++, k++)
            out[k] = bias != NULL ? bias[oc] : 0.0f;
        return;
    }
    /* group g's output channel c is OIHW row g * ocg + c, its input
     * channel i column i */
    const int groups = odnn_direct_groups(d), icg = d->ic / groups, ocg = d->oc / groups;
    const int nob = (ocg + 15) / 16;
    for (int g = 0; g < groups; g++)
        for (int ob = 0; ob < nob; ob++)
            for (size_t t = 0; t < taps; t++)
                for (int i = 0; i < icg; i++)
                    for (int o = 0; o < 16; o++, k++) {
                        int c = ob * 16 + o;
                        out[k] = c < ocg ? oihw[((size_t)(g * ocg + c) * (size_t)icg + (size_t)i) *
                                                    taps + t]
                                         : 0.0f;
                    }
    for (int g = 0; g < groups; g++)
        for (int c = 0; c < nob * 16; c++, k++)
            out[k] = bias != NULL && c < ocg ? bias[g * ocg + c] : 0.0f;
}

int odnn_direct_setup(struct odnn_direct *d, pl_module_ctx *ctx)
{
    if (d->narrow) /* reads the source as it is */
        return odnn_narrow_setup(d, ctx);
    int need_h = (d->oh - 1) * d->sh + (d->kh - 1) * d->dh + 1;
    int need_w = (d->ow - 1) * d->sw + (d->kw - 1) * d->dw + 1;
    if (d->wm > 0 && !odnn_wino_setup(d, ctx)) /* reads the source as it is */
        return 0;
    d->hp = d->pt + d->ih > need_h ? d->pt + d->ih : need_h;
    d->wp = d->pl + d->iw > need_w ? d->pl + d->iw : need_w;
    /* grouped: no shared padded copy; each thread expands its channel
     * block into its own zero-bordered plane (the border never written) */
    size_t floats = d->cg > 0 || d->wm > 0 ? 0
                              : (size_t)d->n * (size_t)(d->ic / 8) * (size_t)d->hp *
                                    (size_t)d->wp * 8;
    if (d->cg > 0) {
        size_t plane = (size_t)d->hp * (size_t)d->wp * (size_t)d->cg * 8;
        d->xe_threads = onednn_host->thread_count(ctx->host_ctx);
        if (d->xe_threads < 1)
            d->xe_threads = 1;
        d->xe = onednn_host->host_alloc(ctx->host_ctx,
                                        plane * (size_t)d->xe_threads * sizeof(float) + 64, 64);
        if (d->xe == NULL)
            return 0;
        memset(d->xe, 0, plane * (size_t)d->xe_threads * sizeof(float));
    }
    size_t pixels = (size_t)d->oh * (size_t)d->ow;
    size_t taps = (size_t)d->kh * (size_t)d->kw;
    d->xpad = onednn_host->host_alloc(ctx->host_ctx, floats * sizeof(float) + 64, 64);
    d->poff = onednn_host->host_alloc(ctx->host_ctx, (pixels + taps) * sizeof(int) + 64, 64);
    if (d->xpad == NULL || d->poff == NULL)
        return 0;
    memset(d->xpad, 0, floats * sizeof(float));
    d->delta = d->poff + pixels;
    for (size_t p = 0; p < pixels; p++) {
        int y = (int)(p / (size_t)d->ow), x = (int)(p % (size_t)d->ow);
        d->poff[p] = (y * d->sh * d->wp + x * d->sw) * 8;
    }
    for (int i = 0; i < d->kh; i++)
        for (int j = 0; j < d->kw; j++)
            d->delta[i * d->kw + j] = (i * d->dh * d->wp + j * d->dw) * 8;
    return 1;
}

void odnn_direct_free(struct odnn_direct *d, pl_module_ctx *ctx)
{
    if (d == NULL)
        return;
    onednn_host->host_free(ctx->host_ctx, d->xpad);
    onednn_host->host_free(ctx->host_ctx, d->poff);
    onednn_host->host_free(ctx->host_ctx, d->xe);
    d->xpad = NULL;
    d->poff = NULL;
    d->xe = NULL;
}

/* ---- grouped: 2 or 4 channels per group ----------------------------------------
 *
 * An 8-channel block holds 8 / cg whole groups, so output lane l sums the
 * cg input channels of its own group: lane l of the j-th expanded vector
 * of a pixel is input channel (l / cg) * cg + j of the block. Each thread
 * expands its block's source plane once (cg permutes per pixel); then a
 * tile of 8 output pixels takes, per tap and j, one weight vector and 8
 * FMAs whose other operand is a load: no broadcasts, no shuffles in the
 * inner loop. oneDNN 2.6 runs these as im2col + a GEMM per group
 * (x64:gemm:jit): resnext50_32x4d's 128-channel layer on 24x24 took 0.59
 * ms in the model. */

#define ODNN_GROUPED_TILE 8

static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_grouped_tile(const struct odnn_direct *d, const float *xe, const float *w, const int *po,
                  const float *bias, float *out, const int cg, const int pt)
{
    const int taps = d->kh * d->kw, vs = cg * 8;
    __m256 a[ODNN_GROUPED_TILE];
    int o[ODNN_GROUPED_TILE];
#pragma GCC unroll 8
    for (int p = 0; p < ODNN_GROUPED_TILE; p++) {
        a[p] = _mm256_setzero_ps();
        o[p] = p < pt ? po[p] / 8 * vs : 0;
    }
    for (int t = 0; t < taps; t++) {
        const float *xt = xe + d->delta[t] / 8 * vs;
        for (int j = 0; j < cg; j++, w += 8) {
            const __m256 wv = _mm256_loadu_ps(w);
#pragma GCC unroll 8
            for (int p = 0; p < ODNN_GROUPED_TILE; p++)
                if (p < pt)
                    a[p] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(xt + o[p] + j * 8), a[p]);
        }
    }
    const __m256 b = _mm256_loadu_ps(bias), lo = _mm256_set1_ps(d->lo),
                 hi = _mm256_set1_ps(d->hi), slope = _mm256_set1_ps(d->alpha);
#pragma GCC unroll 8
    for (int p = 0; p < ODNN_GROUPED_TILE; p++)
        if (p < pt)
            _mm256_storeu_ps(out + 8 * p, odnn_act8(_mm256_add_ps(a[p], b), d->act, lo, hi, slope));
}

#define ODNN_GROUPED_FN(CG, PT)                                                                    \
    static __attribute__((noinline, target("avx2,fma"))) void odnn_grouped_tile_##CG##_##PT(      \
        const struct odnn_direct *d, const float *xe, const float *w, const int *po,               \
        const float *bias, float *out)                                                             \
    {                                                                                              \
        odnn_grouped_tile(d, xe, w, po, bias, out, CG, PT);                                        \
    }
ODNN_GROUPED_FN(4, 8)
ODNN_GROUPED_FN(2, 8)

/* The last tile of a plane, of fewer pixels. */
static __attribute__((noinline, target("avx2,fma"))) void
odnn_grouped_tile_any(const struct odnn_direct *d, const float *xe, const float *w, const int *po,
                      const float *bias, float *out, int pt)
{
    odnn_grouped_tile(d, xe, w, po, bias, out, d->cg, pt);
}

/* Expands block B's source plane SRC (ih x iw x 8) into XE's interior. */
static __attribute__((target("avx2,fma"))) void odnn_grouped_expand(const struct odnn_direct *d,
                                                                   const float *src, float *xe)
{
    const int cg = d->cg, vs = cg * 8;
    __m256i idx[4];
    for (int j = 0; j < cg; j++) {
        int lane[8];
        for (int l = 0; l < 8; l++)
            lane[l] = l / cg * cg + j;
        idx[j] = _mm256_loadu_si256((const __m256i *)lane);
    }
    for (int y = 0; y < d->ih; y++) {
        float *row = xe + ((size_t)(y + d->pt) * (size_t)d->wp + (size_t)d->pl) * (size_t)vs;
        const float *in = src + (size_t)y * (size_t)d->iw * 8;
        for (int x = 0; x < d->iw; x++) {
            __m256 v = _mm256_loadu_ps(in + (size_t)x * 8);
            for (int j = 0; j < cg; j++)
                _mm256_storeu_ps(row + (size_t)x * (size_t)vs + (size_t)j * 8,
                                 _mm256_permutevar8x32_ps(v, idx[j]));
        }
    }
}

static void odnn_grouped_run(const struct odnn_direct *d, const float *src, const float *w,
                             float *dst, int threads)
{
    const int ocb = d->oc / 8, pixels = d->oh * d->ow;
    const int tiles = (pixels + ODNN_GROUPED_TILE - 1) / ODNN_GROUPED_TILE;
    const size_t in_plane = (size_t)d->ih * (size_t)d->iw * 8, out_plane = (size_t)pixels * 8;
    const size_t xe_plane = (size_t)d->hp * (size_t)d->wp * (size_t)d->cg * 8;
    const size_t wblock = (size_t)d->kh * (size_t)d->kw * (size_t)d->cg * 8;
    const float *bias = w + (size_t)ocb * wblock;
    const int items = d->n * ocb;
    if (threads > d->xe_threads)
        threads = d->xe_threads;
#pragma omp parallel num_threads(threads)
    {
        float *xe = d->xe + (size_t)omp_get_thread_num() * xe_plane;
#pragma omp for schedule(static)
        for (int it = 0; it < items; it++) {
            int img = it / ocb, ob = it % ocb;
            odnn_grouped_expand(d, src + ((size_t)img * (size_t)ocb + (size_t)ob) * in_plane, xe);
            float *out = dst + ((size_t)img * (size_t)ocb + (size_t)ob) * out_plane;
            for (int t = 0; t < tiles; t++) {
                int p0 = t * ODNN_GROUPED_TILE;
                int pt = pixels - p0 < ODNN_GROUPED_TILE ? pixels - p0 : ODNN_GROUPED_TILE;
                const float *wb = w + (size_t)ob * wblock;
                if (pt == ODNN_GROUPED_TILE && d->cg == 4)
                    odnn_grouped_tile_4_8(d, xe, wb, d->poff + p0, bias + ob * 8,
                                          out + (size_t)p0 * 8);
                else if (pt == ODNN_GROUPED_TILE)
                    odnn_grouped_tile_2_8(d, xe, wb, d->poff + p0, bias + ob * 8,
                                          out + (size_t)p0 * 8);
                else
                    odnn_grouped_tile_any(d, xe, wb, d->poff + p0, bias + ob * 8,
                                          out + (size_t)p0 * 8, pt);
            }
        }
    }
}

/* One tile of PT pixels (a compile-time constant after inlining) by 16
 * output channels: accumulates, adds BIAS (16 floats), applies D's
 * activation and stores channels 0-7 at OUT0 and 8-15 at OUT1 (NULL: the
 * last block of an OC that is not a multiple of 16), pixel after pixel. */
static inline __attribute__((always_inline, target("avx2,fma"))) void
odnn_direct_tile(const struct odnn_direct *d, const float *xp, size_t plane, int icb,
                 const float *w, const int *po, const float *bias, float *out0, float *out1,
                 const int pt)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    __m256 a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    const int o0 = po[0], o1 = pt > 1 ? po[1] : 0, o2 = pt > 2 ? po[2] : 0;
    const int o3 = pt > 3 ? po[3] : 0, o4 = pt > 4 ? po[4] : 0, o5 = pt > 5 ? po[5] : 0;
    const int taps = d->kh * d->kw;
    for (int t = 0; t < taps; t++) {
        const float *xt = xp + d->delta[t];
        for (int cb = 0; cb < icb; cb++) {
            const float *xb = xt + (size_t)cb * plane;
            for (int j = 0; j < 8; j++, w += 16) {
                __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + 8), x;
#define ODNN_PIX(i, o, lo, hi)                                                                     \
    if (pt > (i)) {                                                                                \
        x = _mm256_broadcast_ss(xb + (o) + j);                                                     \
        lo = _mm256_fmadd_ps(x, w0, lo);                                                           \
        hi = _mm256_fmadd_ps(x, w1, hi);                                                           \
    }
                ODNN_PIX(0, o0, a0, a1)
                ODNN_PIX(1, o1, a2, a3)
                ODNN_PIX(2, o2, a4, a5)
                ODNN_PIX(3, o3, a6, a7)
                ODNN_PIX(4, o4, a8, a9)
                ODNN_PIX(5, o5, a10, a11)
#undef ODNN_PIX
            }
        }
    }
    const __m256 b0 = _mm256_loadu_ps(bias), b1 = _mm256_loadu_ps(bias + 8);
    const __m256 lo = _mm256_set1_ps(d->lo), hi = _mm256_set1_ps(d->hi);
    const __m256 slope = _mm256_set1_ps(d->alpha);
#define ODNN_OUT(i, acc0, acc1)                                                                    \
    if (pt > (i)) {                                                                                \
        __m256 v0 = odnn_act8(_mm256_add_ps(acc0, b0), d->act, lo, hi, slope);                     \
        __m256 v1 = odnn_act8(_mm256_add_ps(acc1, b1), d->act, lo, hi, slope);                     \
        _mm256_storeu_ps(out0 + 8 * (i), v0);                                                      \
        if (out1 != NULL)                                                                          \
            _mm256_storeu_ps(out1 + 8 * (i), v1);                                                  \
    }
    ODNN_OUT(0, a0, a1)
    ODNN_OUT(1, a2, a3)
    ODNN_OUT(2, a4, a5)
    ODNN_OUT(3, a6, a7)
    ODNN_OUT(4, a8, a9)
    ODNN_OUT(5, a10, a11)
#undef ODNN_OUT
}

#define ODNN_TILE_FN(PT)                                                                           \
    static __attribute__((noinline, target("avx2,fma"))) void odnn_direct_tile##PT(               \
        const struct odnn_direct *d, const float *xp, size_t plane, int icb, const float *w,       \
        const int *po, const float *bias, float *out0, float *out1)                                \
    {                                                                                              \
        odnn_direct_tile(d, xp, plane, icb, w, po, bias, out0, out1, PT);                          \
    }
ODNN_TILE_FN(1)
ODNN_TILE_FN(2)
ODNN_TILE_FN(3)
ODNN_TILE_FN(4)
ODNN_TILE_FN(5)
ODNN_TILE_FN(6)

typedef void (*odnn_tile_fn)(const struct odnn_direct *, const float *, size_t, int,
                             const float *, const int *, const float *, float *, float *);

static const odnn_tile_fn odnn_tiles[ODNN_DIRECT_TILE + 1] = {
    NULL,           odnn_direct_tile1, odnn_direct_tile2, odnn_direct_tile3,
    odnn_direct_tile4, odnn_direct_tile5, odnn_direct_tile6};

void odnn_direct_product_desc(struct odnn_direct *p, int ic)
{
    /* one tap at offset 0, planes of 8 floats: row r's k-th value at
     * rows[r] + k; no bias, no activation */
    static int one_tap[1] = {0};
    memset(p, 0, sizeof *p);
    p->kh = p->kw = 1;
    p->ic = ic;
    p->act = ODNN_ACT_NONE;
    p->delta = one_tap;
}

void odnn_direct_product(const struct odnn_direct *p, const float *v, const int *rows,
                         const float *u, float *m0, float *m1, int pt)
{
    static const float no_bias[16] = {0};
    odnn_tiles[pt](p, v, 8, p->ic / 8, u, rows, no_bias, m0, m1);
}

/* Copies source plane PC (image * ic/8 + block) of SRC into D's
 * zero-bordered buffer. */
static void odnn_direct_copy_plane(const struct odnn_direct *d, const float *src, int pc)
{
    const size_t plane = (size_t)d->hp * (size_t)d->wp * 8;
    const size_t in_plane = (size_t)d->ih * (size_t)d->iw * 8;
    const int rows = d->hp - d->pt < d->ih ? d->hp - d->pt : d->ih;
    const int cols = d->wp - d->pl < d->iw ? d->wp - d->pl : d->iw;
    for (int y = 0; y < rows; y++)
        memcpy(d->xpad + (size_t)pc * plane +
                   ((size_t)(y + d->pt) * (size_t)d->wp + (size_t)d->pl) * 8,
               src + (size_t)pc * in_plane + (size_t)y * (size_t)d->iw * 8,
               (size_t)cols * 8 * sizeof(float));
}

size_t odnn_direct_scratch_bytes(const struct odnn_direct *d)
{
    return d->wm > 0 || d->narrow ? d->ws_floats * (size_t)d->ws_threads * sizeof(float) : 0;
}

void odnn_direct_run(const struct odnn_direct *d, const float *src, const float *w, float *dst,
                     int threads, float *scratch)
{
    if (d->narrow) {
        odnn_narrow_run(d, src, w, dst, threads, scratch);
        return;
    }
    if (d->cg > 0) {
        odnn_grouped_run(d, src, w, dst, threads);
        return;
    }
    if (d->wm > 0) {
        odnn_wino_run(d, src, w, dst, threads, scratch);
        return;
    }
    /* a block ob of 16 output channels counts across the groups: group
     * ob / nobg, its channels (ob % nobg) * 16 on, reading the group's
     * icg / 8 source planes */
    const int groups = odnn_direct_groups(d);
    const int icb = d->ic / 8, ocb8 = d->oc / 8, icbg = icb / groups, ocbg = ocb8 / groups;
    const int nobg = (ocbg + 1) / 2, nob = groups * nobg;
    const int pixels = d->oh * d->ow, tiles = (pixels + ODNN_DIRECT_TILE - 1) / ODNN_DIRECT_TILE;
    const size_t plane = (size_t)d->hp * (size_t)d->wp * 8;
    const size_t out_plane = (size_t)pixels * 8;
    const size_t wblock = (size_t)d->kh * (size_t)d->kw * (size_t)icbg * 8 * 16;
    const float *bias = w + odnn_direct_packed_floats(d) - (size_t)nob * 16;
    const int planes = d->n * icb, items = d->n * nob * tiles;
    float *xpad = d->xpad;
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
        for (int pc = 0; pc < planes; pc++)
            odnn_direct_copy_plane(d, src, pc);
#pragma omp for schedule(static)
        for (int it = 0; it < items; it++) {
            int img = it / (nob * tiles), rest = it % (nob * tiles);
            int ob = rest / tiles, t = rest % tiles;
            int g = ob / nobg, obg = ob % nobg;
            int p0 = t * ODNN_DIRECT_TILE;
            int pt = pixels - p0 < ODNN_DIRECT_TILE ? pixels - p0 : ODNN_DIRECT_TILE;
            float *out = dst + (size_t)img * (size_t)ocb8 * out_plane + (size_t)p0 * 8;
            float *out0 = out + (size_t)(g * ocbg + obg * 2) * out_plane;
            float *out1 = obg * 2 + 1 < ocbg ? out0 + out_plane : NULL;
            odnn_tiles[pt](d, xpad + ((size_t)img * (size_t)icb + (size_t)(g * icbg)) * plane,
                           plane, icbg, w + (size_t)ob * wblock, d->poff + p0,
                           bias + (size_t)ob * 16, out0, out1);
        }
    }
}

/* ---- RMSNorm ------------------------------------------------------------------
 *
 * oneDNN 2.6 has no RMS normalization: its layer normalization always takes
 * the mean off, its reduction computes a sum of squares only with its
 * reference kernel (norm_lp_power_p_sum: 205 us for [64, 256] at 2
 * threads, where the whole layer normalization takes 3.7), and the pieces
 * (a square, a mean, a rsqrt, two broadcast products) were six primitives
 * and 32 us a norm in T5's encoder. One pass per row here: the sum of
 * squares in 16 partial sums (a fixed order: results do not depend on the
 * thread count), then y = x * (1 / sqrt(sum / C + eps)) * gamma. */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ODNN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ODNN_CLONES
#endif

ODNN_CLONES static void odnn_rms_row(const float *x, const float *g, float *y, int64_t c,
                                     float eps)
{
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= c; i += 16)
        for (int k = 0; k < 16; k++)
            acc[k] += x[i + k] * x[i + k];
    float tail = 0.0f;
    for (; i < c; i++)
        tail += x[i] * x[i];
    for (int k = 0; k < 8; k++)
        acc[k] += acc[k + 8];
    float sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    sum += tail;
    float r = 1.0f / sqrtf(sum / (float)c + eps);
    if (g != NULL)
        for (int64_t j = 0; j < c; j++)
            y[j] = x[j] * r * g[j];
    else
        for (int64_t j = 0; j < c; j++)
            y[j] = x[j] * r;
}

void odnn_rms_run(const float *x, const float *g, float *y, int64_t rows, int64_t cols,
                  float eps, int threads)
{
    /* below ~32K values a team's wake-up costs more than the rows */
    int team = rows * cols >= 32768 && threads > 1 ? threads : 1;
    if (team > rows)
        team = (int)rows;
    if (team <= 1) {
        for (int64_t r = 0; r < rows; r++)
            odnn_rms_row(x + r * cols, g, y + r * cols, cols, eps);
        return;
    }
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t r = 0; r < rows; r++)
        odnn_rms_row(x + r * cols, g, y + r * cols, cols, eps);
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------
 *
 * onnxruntime.quantization.quantize_dynamic writes every product of a
 * transformer as DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul; the
 * int8 product runs as a oneDNN matmul (odnn_qmm_emit) and the quantizer
 * here: the range of x (with 0 in it), its u8 scale and zero point as
 * ONNX's reference computes them in f32, then y = saturate(round_even(x /
 * scale) + zp), NaN to 0 -- the cpu module's arithmetic step for step, so
 * both give the same bytes. Two passes over x, each on the team from 32K
 * values. */

#if defined(__x86_64__) && defined(__GNUC__)
#define ODNN_AVX512 __attribute__((target("avx512f,avx512bw")))

ODNN_AVX512 static void odnn_range_avx512(const float *x, int64_t n, float *lo, float *hi)
{
    __m512 l = _mm512_setzero_ps(), h = _mm512_setzero_ps();
    int64_t i = 0;
    /* minps/maxps keep their second operand when the first is NaN: NaNs
     * are skipped, as the scalar comparisons skip them */
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        l = _mm512_min_ps(v, l);
        h = _mm512_max_ps(v, h);
    }
    float a = _mm512_reduce_min_ps(l), b = _mm512_reduce_max_ps(h);
    for (; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
    }
    *lo = a;
    *hi = b;
}

ODNN_AVX512 static void odnn_quantize_avx512(const float *x, int64_t n, float s, float zf,
                                             uint8_t *y)
{
    const __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(zf);
    const __m512 lo = _mm512_setzero_ps(), hi = _mm512_set1_ps(255.0f);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        /* lanes past N divide 1 by S: no exception from a float op */
        __m512 v = _mm512_div_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), m, x + j), vs);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          vz);
        __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
        v = _mm512_maskz_mov_ps(num, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
        _mm512_mask_cvtusepi32_storeu_epi8(y + j, m, _mm512_cvtps_epi32(v));
    }
}
#endif

static int odnn_avx512bw(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
#else
    return 0;
#endif
}

static void odnn_range(const float *x, int64_t n, float *lo, float *hi)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (odnn_avx512bw()) {
        odnn_range_avx512(x, n, lo, hi);
        return;
    }
#endif
    float a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        a = x[i] < a ? x[i] : a;
        b = x[i] > b ? x[i] : b;
    }
    *lo = a;
    *hi = b;
}

static void odnn_quantize(const float *x, int64_t n, float s, float zf, uint8_t *y)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (odnn_avx512bw()) {
        odnn_quantize_avx512(x, n, s, zf, y);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++) {
        float v = nearbyintf(x[j] / s) + zf;
        v = v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v;
        y[j] = v == v ? (uint8_t)(int32_t)v : 0;
    }
}

void odnn_dql_run(const float *x, int64_t n, uint8_t *y, float *scale, uint8_t *zp,
                  int32_t *zp32, int threads)
{
    int team = n >= 32768 && threads > 1 ? threads : 1;
    float lo = 0, hi = 0;
    if (team <= 1) {
        odnn_range(x, n, &lo, &hi);
    } else {
        float part[2 * 64];
        if (team > 64)
            team = 64;
#pragma omp parallel num_threads(team)
        {
            int t = omp_get_thread_num(), k = omp_get_num_threads();
            int64_t b = n * t / k, e = n * (t + 1) / k;
            odnn_range(x + b, e - b, &part[2 * t], &part[2 * t + 1]);
            if (t == 0)
                for (int i = k; i < team; i++) /* a smaller team than asked */
                    part[2 * i] = part[2 * i + 1] = 0;
        }
        for (int t = 0; t < team; t++) {
            lo = part[2 * t] < lo ? part[2 * t] : lo;
            hi = part[2 * t + 1] > hi ? part[2 * t + 1] : hi;
        }
    }
    float s = (hi - lo) / 255.0f;
    uint8_t z = 0;
    if (s > 0 && isfinite(s)) {
        float zf = 0.0f - lo / s;
        zf = zf < 0 ? 0 : zf > 255 ? 255 : zf;
        z = (uint8_t)nearbyintf(zf);
    }
    *scale = s;
    *zp = z;
    *zp32 = z;
    if (!(s > 0)) {
        memset(y, 0, (size_t)n);
        return;
    }
    if (team <= 1) {
        odnn_quantize(x, n, s, (float)z, y);
        return;
    }
#pragma omp parallel num_threads(team)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        /* chunks of 64 values, so no two threads write one cache line */
        int64_t blocks = (n + 63) / 64;
        int64_t b = blocks * t / k * 64, e = blocks * (t + 1) / k * 64;
        if (e > n)
            e = n;
        if (b < e)
            odnn_quantize(x + b, e - b, s, (float)z, y + b);
    }
}

/* ---- Erf ----------------------------------------------------------------------
 *
 * oneDNN 2.6 has no erf eltwise, so an Erf outside a GELU pattern (ONNX
 * Runtime's QDQ models put a QuantizeLinear -> DequantizeLinear pair after
 * it, which splits the pattern) was left to cpu and split the subgraph
 * around it: wav2vec_fe_qdq ran as four onednn subgraphs with cpu steps
 * between. The cpu module's erf, lane for lane: a Taylor series below 0.6,
 * Abramowitz & Stegun 7.1.28 above (absolute error below 9e-7), Horner
 * steps fused (FMA) as its AVX2 loop does them. */

static inline float odnn_erf1(float x)
{
    float ax = fabsf(x);
    float t = 1.0f + ax * (0.0705230784f + ax * (0.0422820123f + ax * (0.0092705272f +
              ax * (0.0001520143f + ax * (0.0002765672f + ax * 0.0000430638f)))));
    t *= t;
    t *= t;
    t *= t;
    t *= t;
    float big = 1.0f - 1.0f / t;
    float x2 = x * x;
    float small = ax * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f +
                  x2 * (-0.0268661706f + x2 * (0.0052239776f + x2 * (-0.000854846f +
                  x2 * 0.00012055f))))));
    return copysignf(ax < 0.6f ? small : big, x);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* odnn_erf1's two branches on vectors of type T (intrinsics prefix P):
 * BIG and SMALL from AX = |v| (and v), ONE set. */
#define ODNN_ERF_STEPS(T, P)                                                                \
    T x2 = P##_mul_ps(v, v);                                                                \
    T t = P##_fmadd_ps(ax, P##_set1_ps(0.0000430638f), P##_set1_ps(0.0002765672f));         \
    t = P##_fmadd_ps(ax, t, P##_set1_ps(0.0001520143f));                                    \
    t = P##_fmadd_ps(ax, t, P##_set1_ps(0.0092705272f));                                    \
    t = P##_fmadd_ps(ax, t, P##_set1_ps(0.0422820123f));                                    \
    t = P##_fmadd_ps(ax, t, P##_set1_ps(0.0705230784f));                                    \
    t = P##_fmadd_ps(ax, t, one);                                                           \
    t = P##_mul_ps(t, t);                                                                   \
    t = P##_mul_ps(t, t);                                                                   \
    t = P##_mul_ps(t, t);                                                                   \
    t = P##_mul_ps(t, t);                                                                   \
    T big = P##_sub_ps(one, P##_div_ps(one, t));                                            \
    T p = P##_fmadd_ps(x2, P##_set1_ps(0.00012055f), P##_set1_ps(-0.000854846f));           \
    p = P##_fmadd_ps(x2, p, P##_set1_ps(0.0052239776f));                                    \
    p = P##_fmadd_ps(x2, p, P##_set1_ps(-0.0268661706f));                                   \
    p = P##_fmadd_ps(x2, p, P##_set1_ps(0.1128379167f));                                    \
    p = P##_fmadd_ps(x2, p, P##_set1_ps(-0.3761263890f));                                   \
    p = P##_fmadd_ps(x2, p, P##_set1_ps(1.1283791671f));                                    \
    T small = P##_mul_ps(ax, p);

ODNN_AVX512 static void odnn_erf_avx512(const float *x, float *y, int64_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    for (int64_t j = 0; j < n; j += 16) {
        __mmask16 m = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + j);
        __m512i vi = _mm512_castps_si512(v);
        __m512 ax = _mm512_castsi512_ps(_mm512_andnot_si512(sign, vi));
        ODNN_ERF_STEPS(__m512, _mm512)
        /* a NaN x fails the compare and gives big's NaN */
        __mmask16 lt = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.6f), _CMP_LT_OQ);
        __m512 r = _mm512_mask_blend_ps(lt, big, small);
        r = _mm512_castsi512_ps(
            _mm512_or_si512(_mm512_castps_si512(r), _mm512_and_si512(vi, sign)));
        _mm512_mask_storeu_ps(y + j, m, r);
    }
}
#endif

/* The AVX-512 loop's steps 8 lanes at a time, the tail by the scalar form.
 * GCC left the scalar form's AVX2 clone scalar: 26% of wav2vec_fe_qdq's
 * time on this module (perf, 1 thread). */
__attribute__((target("avx2,fma"))) static void odnn_erf_avx2(const float *x, float *y,
                                                              int64_t n)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256 ax = _mm256_andnot_ps(sign, v);
        ODNN_ERF_STEPS(__m256, _mm256)
        /* a NaN x fails the compare and gives big's NaN */
        __m256 lt = _mm256_cmp_ps(ax, _mm256_set1_ps(0.6f), _CMP_LT_OQ);
        __m256 r = _mm256_blendv_ps(big, small, lt);
        _mm256_storeu_ps(y + j, _mm256_or_ps(r, _mm256_and_ps(v, sign)));
    }
    for (; j < n; j++)
        y[j] = odnn_erf1(x[j]);
}

/* Without AVX2: the scalar form. */
static void odnn_erf_loop(const float *x, float *y, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        y[j] = odnn_erf1(x[j]);
}

static void odnn_erf_chunk(const float *x, float *y, int64_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (odnn_avx512bw()) {
        odnn_erf_avx512(x, y, n);
        return;
    }
    if (odnn_direct_usable()) {
        odnn_erf_avx2(x, y, n);
        return;
    }
#endif
    odnn_erf_loop(x, y, n);
}

/* Runs CHUNK over N values of X into Y: alone below 16K values (about 20
 * flops a value: a team's wake-up costs more), else split between a team
 * of THREADS in whole blocks of 16. */
static void odnn_values_run(const float *x, float *y, int64_t n, int threads,
                            void (*chunk)(const float *, float *, int64_t))
{
    int team = n >= 16384 && threads > 1 ? threads : 1;
    if (team <= 1) {
        chunk(x, y, n);
        return;
    }
#pragma omp parallel num_threads(team)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t blocks = (n + 15) / 16;
        int64_t b = blocks * t / k * 16, e = blocks * (t + 1) / k * 16;
        if (e > n)
            e = n;
        if (b < e)
            chunk(x + b, y + b, e - b);
    }
}

void odnn_erf_run(const float *x, float *y, int64_t n, int threads)
{
    odnn_values_run(x, y, n, threads, odnn_erf_chunk);
}

void odnn_nan_fill_run(const float *x, float *y, int64_t n, float fill, int threads)
{
    int team = n >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel num_threads(team) if (team > 1)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t b = n * t / k, e = n * (t + 1) / k;
        for (int64_t i = b; i < e; i++)
            y[i] = x[i] != x[i] ? fill : x[i];
    }
}

/* TableLookup8: Y[i] = T[X[i]] over N bytes (any layout: X and Y share
 * it, padding included), split as odnn_values_run splits values. */
void odnn_lut_run(const uint8_t *x, const uint8_t *table, uint8_t *y, int64_t n, int threads)
{
    int team = n >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel num_threads(team) if (team > 1)
    {
        int t = omp_get_thread_num(), k = omp_get_num_threads();
        int64_t b = n * t / k, e = n * (t + 1) / k;
        for (int64_t i = b; i < e; i++)
            y[i] = table[x[i]];
    }
}

/* ---- GELU, tanh form -------------------------------------------------------------
 *
 * 0.5 x (1 + tanh(z)) = x sigmoid(2 z) = x / (1 + exp(-2 z)) with
 * z = sqrt(2/pi) (x + 0.044715 x^3): one exponential a value. Below
 * AVX-512 oneDNN 2.6's gelu_tanh eltwise and the pattern's own pieces are
 * slow (odnn_match_gelu_tanh); this loop is a few FMAs and a division per
 * 8 values. exp: 2^n e^r with n = round(a / ln 2), r = a - n ln 2 in two
 * parts (Cody-Waite) and e^r by its Taylor polynomial to r^7 (|r| <=
 * ln 2 / 2: relative error below 2e-8 before rounding); the argument is
 * clamped to [-87, 87], where 1 + exp is finite and x / it is x or 0 to
 * float precision. */

static inline float odnn_gelu_tanh1(float x)
{
    float z = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + expf(-2.0f * z));
}

#if defined(__x86_64__) && defined(__GNUC__)
static __attribute__((target("avx2,fma"))) void odnn_gelu_tanh_avx2(const float *x, float *y,
                                                                    int64_t n)
{
    const __m256 c0 = _mm256_set1_ps(-2.0f * 0.7978845608028654f),
                 c1 = _mm256_set1_ps(0.044715f), one = _mm256_set1_ps(1.0f),
                 lo = _mm256_set1_ps(-87.0f), hi = _mm256_set1_ps(87.0f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256 v2 = _mm256_mul_ps(v, v);
        /* a = -2 sqrt(2/pi) (x + 0.044715 x^3) */
        __m256 a = _mm256_mul_ps(c0, _mm256_fmadd_ps(_mm256_mul_ps(c1, v2), v, v));
        __m256 ex = odnn_exp8(_mm256_min_ps(_mm256_max_ps(a, lo), hi));
        _mm256_storeu_ps(y + j, _mm256_div_ps(v, _mm256_add_ps(one, ex)));
    }
    for (; j < n; j++)
        y[j] = odnn_gelu_tanh1(x[j]);
}

/* tanh below |x| = 1/2 by its odd Taylor series to x^15 (the next term is
 * below 5e-9 relative there), else 1 - 2 / (exp(2|x|) + 1) (exp clamped:
 * 1 from |x| = 43 on), the sign put back: within 2e-7 relative of tanh in
 * double over [-12, 12], NaN kept. */
static __attribute__((target("avx2,fma"))) void odnn_tanh_avx2(const float *x, float *y,
                                                               int64_t n)
{
    const __m256 signbit = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f),
                 half = _mm256_set1_ps(0.5f), two = _mm256_set1_ps(2.0f),
                 hi = _mm256_set1_ps(87.0f);
    static const float taylor[7] = {-0.33333333333333333f, 0.13333333333333333f,
                                    -0.05396825396825397f, 0.02186948853615520f,
                                    -0.00886323552990220f, 0.00359212803657248f,
                                    -0.00145583438705132f};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 v = _mm256_loadu_ps(x + j);
        __m256 sign = _mm256_and_ps(v, signbit), a = _mm256_andnot_ps(signbit, v);
        __m256 z = _mm256_mul_ps(a, a), p = _mm256_set1_ps(taylor[6]);
        for (int k = 5; k >= 0; k--)
            p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(taylor[k]));
        __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), a, a);
        __m256 e = odnn_exp8(_mm256_min_ps(_mm256_add_ps(a, a), hi));
        __m256 big = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(e, one)));
        __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, half, _CMP_LT_OQ));
        /* NaN: neither compare holds; keep the input */
        r = _mm256_blendv_ps(v, r, _mm256_cmp_ps(a, a, _CMP_ORD_Q));
        _mm256_storeu_ps(y + j, _mm256_or_ps(r, sign));
    }
    for (; j < n; j++)
        y[j] = tanhf(x[j]);
}
#endif

static void odnn_tanh_chunk(const float *x, float *y, int64_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (odnn_direct_usable()) {
        odnn_tanh_avx2(x, y, n);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++)
        y[j] = tanhf(x[j]);
}

void odnn_tanh_run(const float *x, float *y, int64_t n, int threads)
{
    odnn_values_run(x, y, n, threads, odnn_tanh_chunk);
}

static void odnn_gelu_tanh_chunk(const float *x, float *y, int64_t n)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (odnn_direct_usable()) { /* AVX2 and FMA (and no AVX-512) */
        odnn_gelu_tanh_avx2(x, y, n);
        return;
    }
#endif
    for (int64_t j = 0; j < n; j++)
        y[j] = odnn_gelu_tanh1(x[j]);
}

void odnn_gelu_tanh_run(const float *x, float *y, int64_t n, int threads)
{
    odnn_values_run(x, y, n, threads, odnn_gelu_tanh_chunk);
}

/* ---- InstanceNormalization ----------------------------------------------------
 *
 * oneDNN 2.6 has no instance (or group) normalization primitive, and
 * exporters write GroupNorm as Reshape -> InstanceNormalization -> Reshape
 * -> Mul -> Add (PoolFormer, wav2vec2's feature extractor): each was a cpu
 * step between two onednn subgraphs (poolformer: 8 subgraphs and 30 cpu
 * steps). Statistics per plane (a row of COLS values; its channel is the
 * row's index modulo CHANS) in 16 partial sums combined in double, the
 * deviations in a second pass, then y = x * mul + shift with mul = scale /
 * sqrt(var + eps) and shift = bias - mean * mul, as the cpu module writes
 * it. Rows spread over the team; a row longer than the team's share (a
 * GroupNorm of one group: one row of C*H*W) is cut into chunks whose
 * partial sums are added in chunk order, so results do not depend on the
 * thread count. */

ODNN_CLONES static double odnn_sum16(const float *x, int64_t n)
{
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++)
            acc[k] += x[i + k];
    double s = 0;
    for (; i < n; i++)
        s += x[i];
    for (int k = 0; k < 16; k++)
        s += acc[k];
    return s;
}

/* The sum of (x - MEAN)^2 over N values, as odnn_sum16 adds. */
ODNN_CLONES static double odnn_sqdev16(const float *x, int64_t n, float mean)
{
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++) {
            float d = x[i + k] - mean;
            acc[k] += d * d;
        }
    double s = 0;
    for (; i < n; i++) {
        float d = x[i] - mean;
        s += d * d;
    }
    for (int k = 0; k < 16; k++)
        s += acc[k];
    return s;
}

ODNN_CLONES static void odnn_affine_span(const float *x, float *y, int64_t n, float s,
                                         float t, int relu)
{
    if (relu)
        for (int64_t i = 0; i < n; i++) {
            float v = x[i] * s + t;
            y[i] = v > 0.0f ? v : 0.0f;
        }
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = x[i] * s + t;
}

/* Each thread takes one contiguous range of the ROWS x COLS values, so
 * a few large planes split as evenly as many small ones; alone below
 * 32K values (one pass over memory: a team's wake-up costs more). */
void odnn_affine_run(const float *x, const float *scale, const float *shift, float *y,
                     int64_t rows, int64_t cols, int64_t chans, int relu, int threads)
{
    int64_t total = rows * cols;
    int team = total >= 32768 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int p = 0; p < team; p++) {
        int64_t lo = total * p / team, hi = total * (p + 1) / team;
        while (lo < hi) {
            int64_t r = lo / cols, end = (r + 1) * cols < hi ? (r + 1) * cols : hi;
            odnn_affine_span(x + lo, y + lo, end - lo, scale[r % chans], shift[r % chans],
                             relu);
            lo = end;
        }
    }
}

#define ODNN_INORM_CHUNK 4096
#define ODNN_INORM_MAX_PARTS 256

void odnn_inorm_run(const float *x, const float *scale, const float *bias, float *y,
                    int64_t rows, int64_t cols, int64_t chans, float eps, int threads)
{
    int team = rows * cols >= 16384 && threads > 1 ? threads : 1;
    /* chunks per row: enough for the team when rows are few */
    int64_t per = 1;
    if (rows < team) {
        per = (team + rows - 1) / rows;
        int64_t most = (cols + ODNN_INORM_CHUNK - 1) / ODNN_INORM_CHUNK;
        per = per > most ? most : per;
        if (per < 1)
            per = 1;
        if (rows * per > ODNN_INORM_MAX_PARTS)
            per = ODNN_INORM_MAX_PARTS / rows > 0 ? ODNN_INORM_MAX_PARTS / rows : 1;
    }
    if (per == 1) {
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols;
            float *yr = y + r * cols;
            int64_t ch = r % chans;
            float mean = cols ? (float)(odnn_sum16(xr, cols) / (double)cols) : 0.0f;
            float var = cols ? (float)(odnn_sqdev16(xr, cols, mean) / (double)cols) : 0.0f;
            float mul = scale[ch] / sqrtf(var + eps), shift = bias[ch] - mean * mul;
            for (int64_t i = 0; i < cols; i++)
                yr[i] = xr[i] * mul + shift;
        }
        return;
    }
    /* few long rows: ROWS * PER chunks */
    double part[ODNN_INORM_MAX_PARTS];
    float mean[ODNN_INORM_MAX_PARTS], mul[ODNN_INORM_MAX_PARTS], shift[ODNN_INORM_MAX_PARTS];
    int64_t items = rows * per, len = (cols + per - 1) / per;
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; it++) {
            int64_t r = it / per, b = it % per * len, e = b + len < cols ? b + len : cols;
            part[it] = b < e ? odnn_sum16(x + r * cols + b, e - b) : 0.0;
        }
#pragma omp single
        for (int64_t r = 0; r < rows; r++) {
            double s = 0;
            for (int64_t k = 0; k < per; k++)
                s += part[r * per + k];
            mean[r] = (float)(s / (double)cols);
        }
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; it++) {
            int64_t r = it / per, b = it % per * len, e = b + len < cols ? b + len : cols;
            part[it] = b < e ? odnn_sqdev16(x + r * cols + b, e - b, mean[r]) : 0.0;
        }
#pragma omp single
        for (int64_t r = 0; r < rows; r++) {
            double s = 0;
            for (int64_t k = 0; k < per; k++)
                s += part[r * per + k];
            float var = (float)(s / (double)cols);
            int64_t ch = r % chans;
            mul[r] = scale[ch] / sqrtf(var + eps);
            shift[r] = bias[ch] - mean[r] * mul[r];
        }
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; it++) {
            int64_t r = it / per, b = it % per * len, e = b + len < cols ? b + len : cols;
            const float *xr = x + r * cols;
            float *yr = y + r * cols;
            for (int64_t i = b; i < e; i++)
                yr[i] = xr[i] * mul[r] + shift[r];
        }
    }
}

/* ---- Expand -------------------------------------------------------------------
 *
 * Grouped-query attention (Mistral, Llama 2/3, Qwen2) repeats each key and
 * value head with an Expand ([B, KV, 1, S, D] -> [B, KV, R, S, D]); oneDNN
 * 2.6 has no broadcast copy, so each Expand was a cpu step splitting the
 * layer's subgraph (mistral: three subgraphs and four cpu steps). Dense
 * row-major X of dims XD (right-aligned, 1 where it broadcasts) into Y of
 * dims YD: the trailing dims X and Y share are copied as blocks, the rest
 * indexed; outer blocks over the team from 64K values. */
/* The strides ST of a dense tensor of dims D (ND of them) as read by a
 * broadcast: 0 along a dim of 1, which does not move. */
static void odnn_bcast_strides(int nd, const int64_t *d, int64_t *st)
{
    int64_t stride = 1;
    for (int k = nd - 1; k >= 0; k--) {
        st[k] = d[k] == 1 ? 0 : stride;
        stride *= d[k];
    }
}

void odnn_expand_run(const void *x, void *y, size_t esize, int nd, const int64_t *xd,
                     const int64_t *yd, int threads)
{
    int64_t xs[8], total;
    int k = nd; /* the trailing dims from K on are the same in X and Y */
    while (k > 0 && xd[k - 1] == yd[k - 1])
        k--;
    int64_t block = 1;
    for (int d = k; d < nd; d++)
        block *= yd[d];
    odnn_bcast_strides(nd, xd, xs);
    int64_t outer = 1;
    for (int d = 0; d < k; d++)
        outer *= yd[d];
    total = outer * block;
    int team = total >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t o = 0; o < outer; o++) {
        int64_t rest = o, off = 0;
        for (int d = k - 1; d >= 0; d--) {
            off += rest % yd[d] * xs[d];
            rest /= yd[d];
        }
        /* from K on the dims are X's own: the block is contiguous there */
        memcpy((char *)y + (size_t)(o * block) * esize, (const char *)x + (size_t)off * esize,
               (size_t)block * esize);
    }
}

/* ---- Where -----------------------------------------------------------------
 *
 * oneDNN 2.6 has no select primitive. Y is walked in rows of its last dim;
 * each input's row starts where its strides (0 along a broadcast dim) put
 * it, and moves by 1 or 0 along the row. Rows go over the team from 64K
 * values. */
void odnn_where_run(const uint8_t *cond, const float *x, const float *e, float *y, int nd,
                    const int64_t *cd, const int64_t *xd, const int64_t *ed, const int64_t *yd,
                    int threads)
{
    int64_t cs[8], xs[8], es[8], rows = 1, len = yd[nd - 1];
    odnn_bcast_strides(nd, cd, cs);
    odnn_bcast_strides(nd, xd, xs);
    odnn_bcast_strides(nd, ed, es);
    for (int d = 0; d < nd - 1; d++)
        rows *= yd[d];
    int64_t cj = cs[nd - 1], xj = xs[nd - 1], ej = es[nd - 1];
    int team = rows * len >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t r = 0; r < rows; r++) {
        int64_t rest = r, co = 0, xo = 0, eo = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rest % yd[d];
            rest /= yd[d];
            co += i * cs[d];
            xo += i * xs[d];
            eo += i * es[d];
        }
        const uint8_t *c = cond + co;
        const float *xr = x + xo, *er = e + eo;
        float *yr = y + r * len;
        if (cj == 1 && xj == 1 && ej == 0) { /* a mask's fill value: the common case */
            float f = er[0];
            for (int64_t j = 0; j < len; j++)
                yr[j] = c[j] ? xr[j] : f;
        } else if (cj == 1 && xj == 0 && ej == 1) {
            float f = xr[0];
            for (int64_t j = 0; j < len; j++)
                yr[j] = c[j] ? f : er[j];
        } else {
            for (int64_t j = 0; j < len; j++)
                yr[j] = c[j * cj] ? xr[j * xj] : er[j * ej];
        }
    }
}

static inline float odnn_bop(int op, float x, float y)
{
    switch (op) {
    case 0: return x + y;
    case 1: return x - y;
    case 2: return x * y;
    case 3: return x / y;
    case 4: return x != x || y != y ? NAN : x > y ? x : y;
    default: return x != x || y != y ? NAN : x < y ? x : y;
    }
}

/* Rows of Y's last dim, each source walked by broadcast strides (0 where
 * its dim is 1); the rows over the team from 64K values. */
void odnn_bbin_run(int op, const float *a, const float *b, float *y, int nd, const int64_t *ad,
                   const int64_t *bd, const int64_t *yd, int threads)
{
    int64_t as[8], bs[8], rows = 1, len = yd[nd - 1];
    odnn_bcast_strides(nd, ad, as);
    odnn_bcast_strides(nd, bd, bs);
    for (int d = 0; d < nd - 1; d++)
        rows *= yd[d];
    int64_t aj = as[nd - 1], bj = bs[nd - 1];
    int team = rows * len >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t r = 0; r < rows; r++) {
        int64_t rest = r, ao = 0, bo = 0;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rest % yd[d];
            rest /= yd[d];
            ao += i * as[d];
            bo += i * bs[d];
        }
        const float *ar = a + ao, *br = b + bo;
        float *yr = y + r * len;
        if (aj == 1 && bj == 1) {
            for (int64_t j = 0; j < len; j++)
                yr[j] = odnn_bop(op, ar[j], br[j]);
        } else {
            for (int64_t j = 0; j < len; j++)
                yr[j] = odnn_bop(op, ar[j * aj], br[j * bj]);
        }
    }
}

/* ---- Pad -------------------------------------------------------------------
 *
 * Keras' ZeroPadding2D and explicit paddings in other exporters' graphs that
 * no convolution or pooling took into its own padding (core/src/optimize.c
 * folds those): oneDNN 2.6 has no pad primitive, so each was a cpu step
 * splitting the subgraph (tf_unet: one subgraph became two). Rows of X's
 * last dim are copied into place; the rows of Y between and around them
 * are filled, each row of Y written once, over the team from 64K values. */
void odnn_pad_run(const float *x, float *y, int nd, const int64_t *xd, const int64_t *yd,
                  const int64_t *begin, float value, int threads)
{
    /* trailing dims the pad leaves alone join the rows: a row per value
     * of a [1, 172, 309, 1] tensor (basic_pitch's harmonic stacking) took
     * 0.2 ms a Pad */
    int64_t inner = 1;
    while (nd > 1 && yd[nd - 1] == xd[nd - 1] && begin[nd - 1] == 0)
        inner *= yd[--nd];
    if (inner > 1) {
        int64_t xd2[8], yd2[8], begin2[8];
        for (int d = 0; d < nd; d++)
            xd2[d] = xd[d], yd2[d] = yd[d], begin2[d] = begin[d];
        xd2[nd - 1] *= inner, yd2[nd - 1] *= inner, begin2[nd - 1] *= inner;
        odnn_pad_run(x, y, nd, xd2, yd2, begin2, value, threads);
        return;
    }
    int64_t rows = 1, ys[8];
    ys[nd - 1] = 1;
    for (int d = nd - 2; d >= 0; d--)
        ys[d] = ys[d + 1] * yd[d + 1];
    for (int d = 0; d < nd - 1; d++)
        rows *= yd[d];
    int64_t xlen = xd[nd - 1], ylen = yd[nd - 1], lead = begin[nd - 1];
    int team = rows * ylen >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * ylen;
        /* the row of X this row of Y holds, if any */
        int64_t rest = r, xoff = 0, xs = xlen;
        int inside = 1;
        for (int d = nd - 2; d >= 0; d--) {
            int64_t i = rest % yd[d] - begin[d];
            rest /= yd[d];
            if (i < 0 || i >= xd[d])
                inside = 0;
            xoff += i * xs;
            xs *= xd[d];
        }
        if (!inside) {
            for (int64_t i = 0; i < ylen; i++)
                yr[i] = value;
            continue;
        }
        for (int64_t i = 0; i < lead; i++)
            yr[i] = value;
        memcpy(yr + lead, x + xoff, (size_t)xlen * sizeof(float));
        for (int64_t i = lead + xlen; i < ylen; i++)
            yr[i] = value;
    }
}
