/* onednn_wino_weights.c — 3x3 convolution weights laid out in oneDNN's
 * Winograd formats by the module, in one pass.
 *
 * Why: oneDNN 2.6 makes its Winograd weight layout with a C++ reorder
 * (wino_reorder_t) that transforms every filter into a scratch copy of
 * alpha^2 * IC * OC floats, then scatters that copy into the blocked
 * layout: each weight is written twice, through a buffer the library
 * allocates and frees on every call (9.4 MB fresh pages for a 256x256
 * layer). 15-30 ms per 256x256 layer on this machine's Xeon; RetinaNet's
 * heads have sixteen of them and an 819x256 one (86 ms), most of its
 * session's time. Here each output channel block's filters are
 * transformed and written straight to their places: no buffer, one write.
 *
 * The transform is oneDNN's own (the kernels' data and output transforms
 * are made for these matrices): U = G g G^T with its G for F(2x2, 3x3)
 * (alpha 4) and its scaled G for F(4x4, 3x3) (alpha 6), summed in its
 * order (rows of g first, then columns), in float. The layouts follow the
 * descriptor's wino_desc (wino_format, ic/oc padded to their blocks,
 * ic_block, oc_block, ic2_block, oc2_block); output channel is innermost in
 * all three float formats. tests/onednn/test_wino_weights.c checks every
 * format oneDNN picks against its own reorder.
 *
 * Only float weights in plain OIHW go this way; int8 (aaOIoi, with its
 * scales and compensation) and anything unexpected return nonzero and the
 * caller runs oneDNN's reorder. */
#include "onednn.h"

#include <immintrin.h>
#include <string.h>

/* oneDNN's G (wino_reorder.hpp): rows are the alpha points, columns the
 * three filter taps. */
static const float odnn_g2[4][3] = {
    {1.0f, 0.0f, 0.0f}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0.0f, 0.0f, 1.0f}};
static const float odnn_g4[6][3] = {{1.13777777777778f, 0.f, 0.f},
                                    {-0.688403361344538f, -0.430252100840336f, -0.26890756302521f},
                                    {-0.688403361344538f, 0.430252100840336f, -0.26890756302521f},
                                    {0.119514472455649f, 0.179271708683473f, 0.26890756302521f},
                                    {0.119514472455649f, -0.179271708683473f, 0.26890756302521f},
                                    {0.f, 0.f, 1.f}};

#define ODNN_WW_MAX_OCB 64

/* The float offset of position (UH, UW), input channel IC and the first
 * output channel of block OB (OB counts oc_block blocks) in layout W. */
static size_t odnn_ww_offset(const dnnl_wino_desc_t *w, int uh, int uw, int ic, int ob)
{
    const size_t a = (size_t)w->alpha, icb = (size_t)w->ic_block, ocb = (size_t)w->oc_block;
    const size_t nb_ic = (size_t)w->ic / icb, nb_oc = (size_t)w->oc / ocb;
    const size_t ib = (size_t)ic / icb, i = (size_t)ic % icb;
    const size_t oc2 = (size_t)w->oc2_block;
    switch (w->wino_format) {
    case dnnl_wino_wei_aaOio:
        return ((((size_t)uh * a + (size_t)uw) * nb_oc + (size_t)ob) * nb_ic + ib) * icb * ocb +
               i * ocb;
    case dnnl_wino_wei_aaOBiOo: {
        const size_t occ = (size_t)ob / oc2, ob2 = (size_t)ob % oc2;
        return (((((size_t)uh * a + (size_t)uw) * (nb_oc / oc2) + occ) * nb_ic + ib) * icb + i) *
                   oc2 * ocb +
               ob2 * ocb;
    }
    case dnnl_wino_wei_OBaaIBOIio: {
        const size_t ic2 = (size_t)w->ic2_block;
        const size_t occ = (size_t)ob / oc2, ob2 = (size_t)ob % oc2;
        const size_t icc = ib / ic2, ib2 = ib % ic2;
        return ((((((occ * a + (size_t)uh) * a + (size_t)uw) * (nb_ic / ic2) + icc) * oc2 + ob2) *
                     ic2 +
                 ib2) *
                    icb +
                i) *
               ocb;
    }
    default:
        return 0;
    }
}

/* One staged channel (F: 9 taps of 16 output channels) transformed and
 * stored, with AVX-512: the scalar loop's sums in its order (a product,
 * then the sum; no fused multiply-add, so the floats are the same). */
__attribute__((target("avx512f"))) static void
odnn_ww_channel16(const dnnl_wino_desc_t *w, const float (*g)[3], const float (*f)[ODNN_WW_MAX_OCB],
                  float *y, int c, int ob)
{
    const int a = w->alpha;
    __m512 t[3][6];
    for (int kh = 0; kh < 3; kh++) {
        __m512 f0 = _mm512_loadu_ps(f[kh * 3]), f1 = _mm512_loadu_ps(f[kh * 3 + 1]),
               f2 = _mm512_loadu_ps(f[kh * 3 + 2]);
        for (int j = 0; j < a; j++) {
            __m512 v = _mm512_mul_ps(f0, _mm512_set1_ps(g[j][0]));
            v = _mm512_add_ps(v, _mm512_mul_ps(f1, _mm512_set1_ps(g[j][1])));
            t[kh][j] = _mm512_add_ps(v, _mm512_mul_ps(f2, _mm512_set1_ps(g[j][2])));
        }
    }
    for (int i = 0; i < a; i++) {
        __m512 g0 = _mm512_set1_ps(g[i][0]), g1 = _mm512_set1_ps(g[i][1]),
               g2 = _mm512_set1_ps(g[i][2]);
        for (int j = 0; j < a; j++) {
            __m512 u = _mm512_add_ps(_mm512_mul_ps(g0, t[0][j]), _mm512_mul_ps(g1, t[1][j]));
            u = _mm512_add_ps(u, _mm512_mul_ps(g2, t[2][j]));
            _mm512_storeu_ps(y + odnn_ww_offset(w, i, j, c, ob), u);
        }
    }
}

int odnn_wino_weights(const dnnl_memory_desc_t *src_md, const void *src,
                      const dnnl_memory_desc_t *md, void *dst)
{
    if (md->format_kind != dnnl_format_kind_wino || md->data_type != dnnl_f32 ||
        src_md->data_type != dnnl_f32 || src_md->format_kind != dnnl_blocked || src_md->ndims != 4)
        return -1;
    const dnnl_wino_desc_t *w = &md->format_desc.wino_desc;
    const float(*g)[3];
    if (w->wino_format == dnnl_wino_wei_aaOio || w->wino_format == dnnl_wino_wei_aaOBiOo) {
        if (w->alpha != 4)
            return -1;
        g = odnn_g2;
    } else if (w->wino_format == dnnl_wino_wei_OBaaIBOIio) {
        if (w->alpha != 6)
            return -1;
        g = odnn_g4;
    } else {
        return -1;
    }
    /* plain, dense OIHW 3x3 filters, fewer channels than the padded ones */
    const dnnl_dim_t *d = src_md->dims;
    const dnnl_blocking_desc_t *bk = &src_md->format_desc.blocking;
    const int64_t oc = d[0], ic = d[1];
    if (w->r != 3 || d[2] != 3 || d[3] != 3 || bk->inner_nblks != 0 || bk->strides[3] != 1 ||
        bk->strides[2] != 3 || bk->strides[1] != 9 || bk->strides[0] != 9 * ic ||
        src_md->offset0 != 0 || oc > w->oc || ic > w->ic)
        return -1;
    if (w->ic_block <= 0 || w->oc_block <= 0 || w->oc_block > ODNN_WW_MAX_OCB ||
        w->ic % w->ic_block != 0 || w->oc % w->oc_block != 0 || w->oc2_block <= 0 ||
        (w->oc / w->oc_block) % w->oc2_block != 0)
        return -1;
    if (w->wino_format == dnnl_wino_wei_OBaaIBOIio &&
        (w->ic2_block <= 0 || (w->ic / w->ic_block) % w->ic2_block != 0))
        return -1;
    const int a = w->alpha, ocb = w->oc_block;
    if (w->size != (size_t)a * (size_t)a * (size_t)w->ic * (size_t)w->oc * sizeof(float) ||
        dnnl_memory_desc_get_size(md) != w->size)
        return -1;
    const float *x = src;
    float *y = dst;
    /* Per output block, CHUNK input channels at a time: their filters
     * staged as [channel][tap][output channel] (zeros past the real
     * channels), so that the sums below run across the block's output
     * channels side by side; then per channel t = g G^T over the taps of
     * each filter row and U = G t, each position's ocb floats stored. */
    enum { CHUNK = 16 };
    float stage[CHUNK][9][ODNN_WW_MAX_OCB];
    float t[3][6][ODNN_WW_MAX_OCB], u[ODNN_WW_MAX_OCB];
    const int wide = ocb == 16 && __builtin_cpu_supports("avx512f");
    for (int ob = 0; ob < w->oc / ocb; ob++) {
        int64_t real = oc - (int64_t)ob * ocb; /* output channels of the block that exist */
        if (real > ocb)
            real = ocb;
        for (int c0 = 0; c0 < w->ic; c0 += CHUNK) {
            int n = w->ic - c0 < CHUNK ? w->ic - c0 : CHUNK;
            memset(stage, 0, sizeof stage);
            for (int64_t o = 0; o < real; o++)
                for (int cc = 0; cc < n && c0 + cc < ic; cc++) {
                    const float *f = x + (((int64_t)ob * ocb + o) * ic + c0 + cc) * 9;
                    for (int k = 0; k < 9; k++)
                        stage[cc][k][o] = f[k];
                }
            for (int cc = 0; cc < n; cc++) {
                if (wide) {
                    odnn_ww_channel16(w, g, (const float(*)[ODNN_WW_MAX_OCB])stage[cc], y, c0 + cc,
                                      ob);
                    continue;
                }
                for (int kh = 0; kh < 3; kh++)
                    for (int j = 0; j < a; j++) {
                        const float *f0 = stage[cc][kh * 3], *f1 = stage[cc][kh * 3 + 1],
                                    *f2 = stage[cc][kh * 3 + 2];
                        for (int o = 0; o < ocb; o++) {
                            float v = 0.0f;
                            v = v + f0[o] * g[j][0];
                            v = v + f1[o] * g[j][1];
                            v = v + f2[o] * g[j][2];
                            t[kh][j][o] = v;
                        }
                    }
                for (int i = 0; i < a; i++)
                    for (int j = 0; j < a; j++) {
                        for (int o = 0; o < ocb; o++)
                            u[o] = g[i][0] * t[0][j][o] + g[i][1] * t[1][j][o] +
                                   g[i][2] * t[2][j][o];
                        memcpy(y + odnn_ww_offset(w, i, j, c0 + cc, ob), u,
                               sizeof(float) * (size_t)ocb);
                    }
            }
        }
    }
    return 0;
}
