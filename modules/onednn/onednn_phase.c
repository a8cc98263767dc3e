/* onednn_phase.c — the copies around a dilated convolution run by phase.
 *
 * Why: oneDNN 2.6's Winograd kernels take no dilation, so a dilated 3x3
 * layer runs on the direct kernel: FCN's and DeepLab's ResNet-50 (the last
 * two stages dilated 2 and 4, ONNX's model zoo has both), 512 -> 512 at
 * 40x40 dilated 2: 20.5 ms a run (2 threads), where the same work
 * undilated takes 7.5-7.9 ms on Winograd F(4x4, 3x3). A convolution
 * dilated by d along an axis reads, for output row y, input rows
 * y - pad + i * d: only rows of y's own residue mod d (shifted by the pad).
 * So output rows of one residue ("phase") are an undilated convolution of
 * the input rows of one residue. odnn_phase_gather copies each phase of
 * the source into an image of its own (zero where the window reaches past
 * the borders, so the convolution over them needs no padding along a split
 * axis); the undilated convolution runs over the batch of those images;
 * odnn_phase_scatter puts each phase's rows back in place.
 *
 * Layout: channels blocked by 16 (nChw16c), the layout the Winograd
 * kernels take, on both sides: a pixel is 16 floats (one 64-byte line), a
 * row of an axis not split is one contiguous run. */
#include "onednn.h"

#include <omp.h>
#include <string.h>

/* Where phase A's element J reads along an axis of dilation D and pad LO
 * before: output J * D + A reads input J * D + A - LO + i * D for kernel
 * tap i, which is element J + i of this phase image; J itself when the
 * axis is not split (the convolution pads it). */
static int64_t odnn_phase_src(int64_t j, int64_t a, int64_t d, int64_t lo)
{
    return d == 1 ? j : j * d + a - lo;
}

void odnn_phase_gather(const float *x, float *p, const struct odnn_phase *g, int threads)
{
    int64_t dh = g->d[0], dw = g->d[1], nph = dh * dw;
    int64_t eh = g->ph[0], ew = g->ph[1], h = g->in[0], w = g->in[1];
    int64_t rows = g->n * nph * g->cb * eh;
    int team = rows * ew * 16 >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t r = 0; r < rows; r++) {
        /* r = ((image * phases + phase) * cb + block) * eh + j */
        int64_t j = r % eh, rest = r / eh;
        int64_t blk = rest % g->cb;
        rest /= g->cb;
        int64_t phase = rest % nph, img = rest / nph;
        int64_t a = phase / dw, bph = phase % dw;
        float *dst = p + r * ew * 16;
        int64_t sy = odnn_phase_src(j, a, dh, g->lo[0]);
        if (sy < 0 || sy >= h) {
            memset(dst, 0, (size_t)ew * 16 * sizeof(float));
            continue;
        }
        const float *src = x + ((img * g->cb + blk) * h + sy) * w * 16;
        if (dw == 1) {
            memcpy(dst, src, (size_t)w * 16 * sizeof(float));
            continue;
        }
        for (int64_t l = 0; l < ew; l++) {
            int64_t sx = odnn_phase_src(l, bph, dw, g->lo[1]);
            if (sx < 0 || sx >= w)
                memset(dst + l * 16, 0, 16 * sizeof(float));
            else
                memcpy(dst + l * 16, src + sx * 16, 16 * sizeof(float));
        }
    }
}

/* ACT of G over N values at Y. */
static void odnn_phase_act(float *y, int64_t n, const struct odnn_phase *g)
{
    if (g->act == ODNN_ACT_CLIP) {
        float lo = g->lo_v, hi = g->hi_v;
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < lo ? lo : y[i] > hi ? hi : y[i];
    } else if (g->act == ODNN_ACT_LEAKY) {
        float a = g->alpha;
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] < 0.0f ? y[i] * a : y[i];
    }
}

void odnn_phase_scatter(const float *o, float *y, const struct odnn_phase *g, int threads)
{
    int64_t dh = g->d[0], dw = g->d[1], nph = dh * dw;
    int64_t qh = g->ph[0], qw = g->ph[1], oh = g->in[0], ow = g->in[1];
    int64_t rows = g->n * g->cb * oh;
    int team = rows * ow * 16 >= 65536 && threads > 1 ? threads : 1;
#pragma omp parallel for num_threads(team) schedule(static) if (team > 1)
    for (int64_t r = 0; r < rows; r++) {
        /* r = (image * cb + block) * oh + row */
        int64_t row = r % oh, rest = r / oh;
        int64_t blk = rest % g->cb, img = rest / g->cb;
        int64_t a = row % dh, j = row / dh;
        float *dst = y + r * ow * 16;
        /* the phase image of (a, b) and its row j */
        const float *src0 = o + (((img * nph + a * dw) * g->cb + blk) * qh + j) * qw * 16;
        if (dw == 1) {
            memcpy(dst, src0, (size_t)ow * 16 * sizeof(float));
        } else {
            size_t phase_stride = (size_t)g->cb * (size_t)qh * (size_t)qw * 16;
            for (int64_t x = 0; x < ow; x++)
                memcpy(dst + x * 16, src0 + (size_t)(x % dw) * phase_stride + (x / dw) * 16,
                       16 * sizeof(float));
        }
        if (g->act != ODNN_ACT_NONE)
            odnn_phase_act(dst, ow * 16, g);
    }
}
