/* opset_nn.c — schemas of the neural-network ops: MatMul and Gemm,
 * convolutions and pooling (with ONNX's auto_pad, dilations, groups and
 * ceil_mode output arithmetic), the normalisations and the reductions. */
#include <string.h>

#include <plinth/auto_pad.h>

#include "opset_internal.h"

/* ---- matrix products ---------------------------------------------------- */

static pl_status *nn_infer_matmul(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *a = pl_infer_input(ctx, 0);
    const pl_graph_tensor *b = pl_infer_input(ctx, 1);
    if (a->ndim < 0 || b->ndim < 0)
        return NULL;
    char sa[160], sb[160];
    if (a->ndim == 0 || b->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "operands must have rank >= 1, got %s and %s",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    /* Rank-1 operands are promoted to matrices, and the added dim removed. */
    int64_t k_a = a->dims[a->ndim - 1];
    int64_t k_b = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    if (k_a >= 0 && k_b >= 0 && k_a != k_b)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "inner dimensions differ: %s x %s (%lld vs %lld)",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb),
                              (long long)k_a, (long long)k_b);
    int ra = a->ndim >= 2 ? a->ndim - 2 : 0;
    int rb = b->ndim >= 2 ? b->ndim - 2 : 0;
    int64_t dims[PL_GRAPH_MAX_RANK + 2];
    const char *params[PL_GRAPH_MAX_RANK + 2] = {0};
    int rank;
    if (!pl_opset_broadcast(a->dims, ra, b->dims, rb, dims, &rank))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "batch dimensions of %s and %s cannot be broadcast",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    if (a->ndim >= 2) {
        params[rank] = a->dim_params ? a->dim_params[a->ndim - 2] : NULL;
        dims[rank++] = a->dims[a->ndim - 2];
    }
    if (b->ndim >= 2) {
        params[rank] = b->dim_params ? b->dim_params[b->ndim - 1] : NULL;
        dims[rank++] = b->dims[b->ndim - 1];
    }
    if (rank > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "result rank %d "
                              "exceeds %d", rank, PL_GRAPH_MAX_RANK);
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, params);
}

static pl_status *nn_infer_gemm(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *a = pl_infer_input(ctx, 0);
    const pl_graph_tensor *b = pl_infer_input(ctx, 1);
    const pl_graph_tensor *c = pl_infer_input(ctx, 2);
    char sa[160], sb[160];
    if ((a->ndim >= 0 && a->ndim != 2) || (b->ndim >= 0 && b->ndim != 2))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "A and B must be matrices, got %s and %s",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    bool ta = pl_infer_attr_int(ctx, "transA") != 0;
    bool tb = pl_infer_attr_int(ctx, "transB") != 0;
    int64_t m = a->ndim == 2 ? a->dims[ta ? 1 : 0] : -1;
    int64_t ka = a->ndim == 2 ? a->dims[ta ? 0 : 1] : -1;
    int64_t kb = b->ndim == 2 ? b->dims[tb ? 1 : 0] : -1;
    int64_t n = b->ndim == 2 ? b->dims[tb ? 0 : 1] : -1;
    if (ka >= 0 && kb >= 0 && ka != kb)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "inner dimensions differ: A %s%s, B %s%s (%lld vs %lld)",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              ta ? " transposed" : "",
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb),
                              tb ? " transposed" : "", (long long)ka,
                              (long long)kb);
    int64_t out[2] = {m, n};
    if (c != NULL && c->ndim >= 0) {
        /* C broadcasts one way to [M, N]. */
        bool ok = c->ndim <= 2;
        for (int d = 0; ok && d < c->ndim; d++) {
            int64_t want = out[2 - c->ndim + d], have = c->dims[d];
            ok = have < 0 || have == 1 || want < 0 || have == want;
        }
        if (!ok)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "C %s cannot be broadcast to %s",
                                  pl_dims_format(c->dims, c->ndim, sa, sizeof sa),
                                  pl_dims_format(out, 2, sb, sizeof sb));
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 2, out, NULL);
}

/* ---- sliding windows ------------------------------------------------------ */

/* The geometry of a convolution or pooling window over NSP spatial axes. */
typedef struct nn_window {
    int nsp;
    int64_t kernel[PL_GRAPH_MAX_RANK];   /* -1: unknown */
    int64_t strides[PL_GRAPH_MAX_RANK];
    int64_t dilations[PL_GRAPH_MAX_RANK];
    int64_t pads[2 * PL_GRAPH_MAX_RANK];
    pl_auto_pad auto_pad;
    bool ceil_mode;
} nn_window;

/* Reads an INTS attribute of NSP (or 2 * NSP for pads) positive values
 * into OUT, or fills FILL when the attribute is absent. */
static pl_status *nn_window_attr(pl_infer_ctx *ctx, const char *name,
                                 size_t want, int64_t min, int64_t fill,
                                 int64_t *out)
{
    const int64_t *v;
    size_t n;
    if (!pl_infer_attr_ints(ctx, name, &v, &n)) {
        for (size_t i = 0; i < want; i++)
            out[i] = fill;
        return NULL;
    }
    if (n != want)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "attribute '%s' has %zu values, expected %zu "
                              "(one per spatial axis%s)", name, n, want,
                              strcmp(name, "pads") == 0 ? ", begins then ends" : "");
    for (size_t i = 0; i < n; i++) {
        if (v[i] < min)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attribute '%s' value %zu is %lld, must be "
                                  ">= %lld", name, i, (long long)v[i],
                                  (long long)min);
        out[i] = v[i];
    }
    return NULL;
}

static pl_status *nn_window_read(pl_infer_ctx *ctx, int nsp, nn_window *w)
{
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    PL_RETURN_IF_ERROR(nn_window_attr(ctx, "strides", (size_t)nsp, 1, 1, w->strides));
    PL_RETURN_IF_ERROR(nn_window_attr(ctx, "dilations", (size_t)nsp, 1, 1, w->dilations));
    PL_RETURN_IF_ERROR(nn_window_attr(ctx, "pads", 2 * (size_t)nsp, 0, 0, w->pads));
    const char *ap = pl_infer_attr_string(ctx, "auto_pad");
    /* "" for an op without the attribute (DeformConv) */
    w->auto_pad = ap[0] ? pl_auto_pad_parse_cstr(ap) : PL_AUTO_PAD_NOTSET;
    if (w->auto_pad == PL_AUTO_PAD_INVALID)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "auto_pad '%s' is not NOTSET, SAME_UPPER, "
                              "SAME_LOWER or VALID", ap);
    if (w->auto_pad != PL_AUTO_PAD_NOTSET && pl_infer_has_attr(ctx, "pads")) {
        for (int i = 0; i < 2 * nsp; i++)
            if (w->pads[i] != 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "explicit pads cannot be combined with "
                                      "auto_pad '%s'", ap);
    }
    w->ceil_mode = pl_infer_attr_int(ctx, "ceil_mode") != 0;
    return NULL;
}

/* Output size of spatial axis D for input size IN (-1 unknown). */
static pl_status *nn_window_out(pl_infer_ctx *ctx, const nn_window *w, int d,
                                int64_t in, int64_t *out)
{
    *out = -1;
    int64_t k = w->kernel[d];
    if (in < 0)
        return NULL;
    int64_t s = w->strides[d];
    if (pl_auto_pad_is_same(w->auto_pad)) {
        *out = in / s + (in % s != 0);
        return NULL;
    }
    if (k < 0)
        return NULL;
    int64_t eff;
    if (__builtin_mul_overflow(k - 1, w->dilations[d], &eff) ||
        __builtin_add_overflow(eff, 1, &eff))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "window size overflows on spatial axis %d", d);
    int64_t pb = w->auto_pad == PL_AUTO_PAD_VALID ? 0 : w->pads[d];
    int64_t pe = w->auto_pad == PL_AUTO_PAD_VALID ? 0 : w->pads[d + w->nsp];
    int64_t span;
    if (__builtin_add_overflow(in, pb, &span) ||
        __builtin_add_overflow(span, pe, &span))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "padded size overflows on spatial axis %d", d);
    if (span < eff)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "window %lld (kernel %lld, dilation %lld) is "
                              "larger than the padded input %lld on spatial "
                              "axis %d", (long long)eff, (long long)k,
                              (long long)w->dilations[d], (long long)span, d);
    int64_t steps = (span - eff) / s;
    if (w->ceil_mode && (span - eff) % s != 0) {
        /* ceil_mode rounds up, but a last window starting inside the end
         * padding is dropped (as PyTorch and ONNX Runtime do). */
        steps++;
        if (steps * s >= in + pb)
            steps--;
    }
    *out = steps + 1;
    return NULL;
}

/* Checks that X and W ranks agree and returns the spatial rank. */
static pl_status *nn_spatial_rank(pl_infer_ctx *ctx, const pl_graph_tensor *x,
                                  int *out_nsp)
{
    *out_nsp = -1;
    if (x->ndim < 0)
        return NULL;
    if (x->ndim < 3) {
        char s[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "input '%s' %s must have rank >= 3 (N, C, "
                              "spatial...)", x->name,
                              pl_dims_format(x->dims, x->ndim, s, sizeof s));
    }
    *out_nsp = x->ndim - 2;
    return NULL;
}

/* Shared by Conv, ConvTranspose and DeformConv: X and W ranks,
 * kernel_shape against W, the shape of the bias (input BIAS_IN). *out_nsp
 * is -1 when it cannot be known. */
static pl_status *nn_conv_common(pl_infer_ctx *ctx, nn_window *w, size_t bias_in,
                                 int64_t bias_channels, int *out_nsp)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *wt = pl_infer_input(ctx, 1);
    const pl_graph_tensor *b = pl_infer_input(ctx, bias_in);
    char sx[160], sw[160];
    int nsp;
    PL_RETURN_IF_ERROR(nn_spatial_rank(ctx, x, &nsp));
    if (nsp < 0 && wt->ndim >= 3)
        nsp = wt->ndim - 2;
    if (x->ndim >= 0 && wt->ndim >= 0 && wt->ndim != x->ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X %s and W %s must have the same rank",
                              pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                              pl_dims_format(wt->dims, wt->ndim, sw, sizeof sw));
    if (pl_infer_attr_int(ctx, "group") < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "group %lld must be >= 1",
                              (long long)pl_infer_attr_int(ctx, "group"));
    *out_nsp = nsp;
    if (nsp < 0)
        return NULL;
    PL_RETURN_IF_ERROR(nn_window_read(ctx, nsp, w));
    for (int d = 0; d < nsp; d++)
        w->kernel[d] = wt->ndim >= 0 ? wt->dims[d + 2] : -1;
    const int64_t *ks;
    size_t nk;
    if (pl_infer_attr_ints(ctx, "kernel_shape", &ks, &nk)) {
        if (nk != (size_t)nsp)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "attribute 'kernel_shape' has %zu values, "
                                  "expected %d", nk, nsp);
        for (int d = 0; d < nsp; d++) {
            if (ks[d] < 1 || (w->kernel[d] >= 0 && w->kernel[d] != ks[d]))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "kernel_shape value %d is %lld but W %s "
                                      "has %lld", d, (long long)ks[d],
                                      pl_dims_format(wt->dims, wt->ndim, sw, sizeof sw),
                                      (long long)w->kernel[d]);
            w->kernel[d] = ks[d];
        }
    }
    if (b != NULL && b->ndim >= 0) {
        if (b->ndim != 1 || (bias_channels >= 0 && b->dims[0] >= 0 &&
                             b->dims[0] != bias_channels))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "bias %s must be [%lld] (one per output "
                                  "channel)",
                                  pl_dims_format(b->dims, b->ndim, sx, sizeof sx),
                                  (long long)bias_channels);
    }
    return NULL;
}

/* Conv, and DeformConv (BIAS_IN 3: its input 2 is the offsets). */
static pl_status *nn_infer_conv_bias(pl_infer_ctx *ctx, size_t bias_in)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *wt = pl_infer_input(ctx, 1);
    int64_t group = pl_infer_attr_int(ctx, "group");
    int64_t m = wt->ndim >= 1 ? wt->dims[0] : -1;
    nn_window w;
    int nsp;
    PL_RETURN_IF_ERROR(nn_conv_common(ctx, &w, bias_in, m, &nsp));
    if (nsp < 0)
        return NULL;
    char sx[160], sw[160];
    int64_t c = x->ndim >= 0 ? x->dims[1] : -1;
    int64_t cw = wt->ndim >= 0 ? wt->dims[1] : -1;
    if (c >= 0 && cw >= 0 && c != cw * group)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X %s has %lld channels but W %s with group %lld "
                              "expects %lld",
                              pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                              (long long)c,
                              pl_dims_format(wt->dims, wt->ndim, sw, sizeof sw),
                              (long long)group, (long long)(cw * group));
    if (m >= 0 && m % group != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%lld output channels are not divisible by "
                              "group %lld", (long long)m, (long long)group);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    dims[0] = x->ndim >= 0 ? x->dims[0] : -1;
    params[0] = x->ndim >= 0 && x->dim_params ? x->dim_params[0] : NULL;
    dims[1] = m;
    for (int d = 0; d < nsp; d++)
        PL_RETURN_IF_ERROR(nn_window_out(ctx, &w, d,
                                         x->ndim >= 0 ? x->dims[d + 2] : -1,
                                         &dims[d + 2]));
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, nsp + 2, dims, params);
}

static pl_status *nn_infer_conv(pl_infer_ctx *ctx)
{
    return nn_infer_conv_bias(ctx, 2);
}

/* DeformConv 19: Conv's output; the offsets [N, offset_group x 2 x taps,
 * out...] and the mask [N, offset_group x taps, out...] where their dims
 * are known. */
static pl_status *nn_infer_deform_conv(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(nn_infer_conv_bias(ctx, 3));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *wt = pl_infer_input(ctx, 1);
    int64_t og = pl_infer_attr_int(ctx, "offset_group");
    if (og < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "offset_group %lld must be >= 1",
                              (long long)og);
    if (x->ndim >= 2 && x->dims[1] >= 0 && x->dims[1] % og != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%lld input channels are not divisible by offset_group %lld",
                              (long long)x->dims[1], (long long)og);
    if (wt->ndim < 3)
        return NULL;
    int64_t taps = 1;
    for (int32_t d = 2; d < wt->ndim; d++)
        taps = wt->dims[d] >= 0 && taps >= 0 ? taps * wt->dims[d] : -1;
    for (size_t in = 2; in <= 4; in += 2) {
        const pl_graph_tensor *t = pl_infer_input(ctx, in);
        if (t == NULL || t->ndim < 0)
            continue;
        int64_t ch = taps < 0 ? -1 : og * taps * (in == 2 ? 2 : 1);
        if (t->ndim != wt->ndim || (ch >= 0 && t->dims[1] >= 0 && t->dims[1] != ch)) {
            char sb[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%s %s must be [N, %lld, output dims...]",
                                  in == 2 ? "offset" : "mask",
                                  pl_dims_format(t->dims, t->ndim, sb, sizeof sb),
                                  (long long)ch);
        }
    }
    return NULL;
}

static pl_status *nn_infer_conv_transpose(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    const pl_graph_tensor *wt = pl_infer_input(ctx, 1);
    int64_t group = pl_infer_attr_int(ctx, "group");
    int64_t m = wt->ndim >= 2 && wt->dims[1] >= 0 ? wt->dims[1] * group : -1;
    nn_window w;
    int nsp;
    PL_RETURN_IF_ERROR(nn_conv_common(ctx, &w, 2, m, &nsp));
    if (nsp < 0)
        return NULL;
    char sx[160], sw[160];
    int64_t c = x->ndim >= 0 ? x->dims[1] : -1;
    int64_t cw = wt->ndim >= 0 ? wt->dims[0] : -1;
    if (c >= 0 && cw >= 0 && c != cw)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X %s has %lld channels but W %s expects %lld",
                              pl_dims_format(x->dims, x->ndim, sx, sizeof sx),
                              (long long)c,
                              pl_dims_format(wt->dims, wt->ndim, sw, sizeof sw),
                              (long long)cw);
    if (cw >= 0 && cw % group != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%lld input channels are not divisible by group "
                              "%lld", (long long)cw, (long long)group);
    int64_t opad[PL_GRAPH_MAX_RANK];
    PL_RETURN_IF_ERROR(nn_window_attr(ctx, "output_padding", (size_t)nsp, 0, 0, opad));
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    dims[0] = x->ndim >= 0 ? x->dims[0] : -1;
    params[0] = x->ndim >= 0 && x->dim_params ? x->dim_params[0] : NULL;
    dims[1] = m;
    const int64_t *os;
    size_t nos;
    bool has_os = pl_infer_attr_ints(ctx, "output_shape", &os, &nos);
    if (has_os && nos != (size_t)nsp && nos != (size_t)nsp + 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "attribute 'output_shape' has %zu values, "
                              "expected %d", nos, nsp);
    for (int d = 0; d < nsp; d++) {
        int64_t in = x->ndim >= 0 ? x->dims[d + 2] : -1;
        int64_t k = w.kernel[d], s = w.strides[d];
        if (opad[d] >= s && opad[d] >= w.dilations[d])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "output_padding %lld on spatial axis %d "
                                  "must be smaller than the stride or the "
                                  "dilation", (long long)opad[d], d);
        if (has_os) {
            dims[d + 2] = os[nos - (size_t)nsp + (size_t)d];
        } else if (in < 0) {
            dims[d + 2] = -1;
        } else if (pl_auto_pad_is_same(w.auto_pad)) {
            dims[d + 2] = in * s;
        } else if (k < 0) {
            dims[d + 2] = -1;
        } else {
            int64_t pb = w.auto_pad == PL_AUTO_PAD_VALID ? 0 : w.pads[d];
            int64_t pe = w.auto_pad == PL_AUTO_PAD_VALID ? 0 : w.pads[d + nsp];
            int64_t out = s * (in - 1) + opad[d] + (k - 1) * w.dilations[d] + 1 -
                          pb - pe;
            if (out <= 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "output size %lld on spatial axis %d is "
                                      "not positive (pads too large)",
                                      (long long)out, d);
            dims[d + 2] = out;
        }
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, nsp + 2, dims, params);
}

static pl_status *nn_infer_pool(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int nsp;
    PL_RETURN_IF_ERROR(nn_spatial_rank(ctx, x, &nsp));
    const int64_t *ks;
    size_t nk;
    pl_infer_attr_ints(ctx, "kernel_shape", &ks, &nk);
    if (nsp < 0) {
        if (nk > 0 && nk + 2 <= PL_GRAPH_MAX_RANK)
            nsp = (int)nk;
        else
            return NULL;
    }
    if (nk != (size_t)nsp)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "attribute 'kernel_shape' has %zu values, "
                              "expected %d (one per spatial axis)", nk, nsp);
    nn_window w;
    PL_RETURN_IF_ERROR(nn_window_read(ctx, nsp, &w));
    for (int d = 0; d < nsp; d++) {
        if (ks[d] < 1)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "kernel_shape value %d is %lld, must be >= 1",
                                  d, (long long)ks[d]);
        w.kernel[d] = ks[d];
        if (w.pads[d] >= ks[d] || w.pads[d + nsp] >= ks[d])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "pads on spatial axis %d must be smaller "
                                  "than the kernel (%lld)", d, (long long)ks[d]);
    }
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    for (int d = 0; d < 2; d++) {
        dims[d] = x->ndim >= 0 ? x->dims[d] : -1;
        params[d] = x->ndim >= 0 && x->dim_params ? x->dim_params[d] : NULL;
    }
    for (int d = 0; d < nsp; d++)
        PL_RETURN_IF_ERROR(nn_window_out(ctx, &w, d,
                                         x->ndim >= 0 ? x->dims[d + 2] : -1,
                                         &dims[d + 2]));
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, nsp + 2,
                                           dims, params));
    if (pl_infer_output_count(ctx) > 1)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 1, PL_DTYPE_I64, nsp + 2,
                                               dims, params));
    return NULL;
}

static pl_status *nn_infer_global_pool(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int nsp;
    PL_RETURN_IF_ERROR(nn_spatial_rank(ctx, x, &nsp));
    if (nsp < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    for (int d = 0; d < x->ndim; d++) {
        dims[d] = d < 2 ? x->dims[d] : 1;
        params[d] = d < 2 && x->dim_params ? x->dim_params[d] : NULL;
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params);
}

/* ---- normalisations ----------------------------------------------------------- */

/* Input I must be a vector of C elements (C -1: unknown). */
static pl_status *nn_check_channel_vector(pl_infer_ctx *ctx, size_t i,
                                          const char *what, int64_t c)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    if (t == NULL || t->ndim < 0)
        return NULL;
    if (t->ndim != 1 || (c >= 0 && t->dims[0] >= 0 && t->dims[0] != c)) {
        char s[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s ('%s') is %s, expected [%lld] (one per "
                              "channel)", what, t->name,
                              pl_dims_format(t->dims, t->ndim, s, sizeof s),
                              (long long)c);
    }
    return NULL;
}

static pl_status *nn_infer_batchnorm(pl_infer_ctx *ctx)
{
    static const char *const names[] = {"", "scale", "B", "mean", "var"};
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim >= 0 && x->ndim < 2) {
        char s[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X %s must have rank >= 2 (N, C, ...)",
                              pl_dims_format(x->dims, x->ndim, s, sizeof s));
    }
    int64_t c = x->ndim >= 2 ? x->dims[1] : -1;
    for (size_t i = 1; i < 5; i++)
        PL_RETURN_IF_ERROR(nn_check_channel_vector(ctx, i, names[i], c));
    PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 0, 0));
    for (size_t o = 1; o < pl_infer_output_count(ctx); o++) {
        const pl_graph_tensor *mean = pl_infer_input(ctx, 3);
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, o, mean->dtype, 1, &c, NULL));
    }
    return NULL;
}

static pl_status *nn_infer_instancenorm(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int nsp;
    PL_RETURN_IF_ERROR(nn_spatial_rank(ctx, x, &nsp));
    int64_t c = x->ndim >= 2 ? x->dims[1] : -1;
    PL_RETURN_IF_ERROR(nn_check_channel_vector(ctx, 1, "scale", c));
    PL_RETURN_IF_ERROR(nn_check_channel_vector(ctx, 2, "B", c));
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *nn_infer_layernorm(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a;
    if (!pl_infer_axis(axis, x->ndim, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)x->ndim);
    /* Scale and B broadcast one way to the normalised shape X[axis:]. */
    const int64_t *norm = x->dims + a;
    int32_t nr = x->ndim - (int32_t)a;
    for (size_t i = 1; i < 3; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        if (t == NULL || t->ndim < 0)
            continue;
        bool ok = t->ndim <= nr;
        for (int32_t d = 0; ok && d < t->ndim; d++) {
            int64_t have = t->dims[d], want = norm[nr - t->ndim + d];
            ok = have < 0 || want < 0 || have == 1 || have == want;
        }
        if (!ok) {
            char s1[160], s2[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%s ('%s') %s does not match the normalised "
                                  "shape %s", i == 1 ? "scale" : "B", t->name,
                                  pl_dims_format(t->dims, t->ndim, s1, sizeof s1),
                                  pl_dims_format(norm, nr, s2, sizeof s2));
        }
    }
    PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 0, 0));
    int64_t stash = pl_infer_attr_int(ctx, "stash_type");
    pl_dtype u;
    if (!pl_onnx_dtype(stash, &u) || !(pl_dtype_set_of(u) & PL_TS_FLOAT))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "stash_type %lld is not a floating type",
                              (long long)stash);
    int64_t dims[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < x->ndim; d++)
        dims[d] = d < a ? x->dims[d] : 1;
    for (size_t o = 1; o < pl_infer_output_count(ctx); o++)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, o, u, x->ndim, dims,
                                               (const char *const *)x->dim_params));
    return NULL;
}

/* ---- reductions ------------------------------------------------------------------ */

static pl_status *nn_infer_reduce(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    bool keep = pl_infer_attr_int(ctx, "keepdims") != 0;
    bool noop = pl_infer_attr_int(ctx, "noop_with_empty_axes") != 0;
    int64_t axes[PL_KNOWN_MAX];
    size_t n_axes;
    int state;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "axes", axes, &n_axes, &state));
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    if (state < 0) {
        /* Axes computed at run time: with keepdims the rank is known. */
        if (!keep)
            return NULL;
        for (int32_t d = 0; d < x->ndim; d++)
            dims[d] = x->dims[d] == 1 ? 1 : -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
    }
    bool reduce[PL_GRAPH_MAX_RANK] = {false};
    if (n_axes == 0 && noop)
        return pl_infer_copy_input(ctx, 0, 0);
    for (size_t i = 0; i < n_axes; i++) {
        int64_t a;
        if (!pl_infer_axis(axes[i], x->ndim, &a))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for rank %d",
                                  (long long)axes[i], (int)x->ndim);
        if (reduce[a])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is given twice", (long long)axes[i]);
        reduce[a] = true;
    }
    int32_t rank = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        bool r = n_axes == 0 || reduce[d];
        if (r && !keep)
            continue;
        params[rank] = !r && x->dim_params ? x->dim_params[d] : NULL;
        dims[rank++] = r ? 1 : x->dims[d];
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, params));
    return pl_infer_reduce_known(ctx, x->ndim == 0 || (x->ndim == 1 && (n_axes == 0 || reduce[0])));
}

/* ---- the schemas ----------------------------------------------------------------- */

static const pl_attr_spec nn_gemm_attrs[] = {
    PL_ATTR_F("alpha", 1.0), PL_ATTR_F("beta", 1.0), PL_ATTR_I("transA", 0),
    PL_ATTR_I("transB", 0)};
static const pl_attr_spec nn_conv_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_IS("dilations"),
    PL_ATTR_I("group", 1), PL_ATTR_IS("kernel_shape"), PL_ATTR_IS("pads"),
    PL_ATTR_IS("strides")};
static const pl_attr_spec nn_deform_attrs[] = {
    PL_ATTR_IS("dilations"), PL_ATTR_I("group", 1), PL_ATTR_IS("kernel_shape"),
    PL_ATTR_I("offset_group", 1), PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_convt_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_IS("dilations"),
    PL_ATTR_I("group", 1), PL_ATTR_IS("kernel_shape"),
    PL_ATTR_IS("output_padding"), PL_ATTR_IS("output_shape"),
    PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_maxpool7_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS),
    PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_maxpool8_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS),
    PL_ATTR_IS("pads"), PL_ATTR_I("storage_order", 0), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_maxpool10_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_I("ceil_mode", 0),
    PL_ATTR_IS("dilations"), PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS),
    PL_ATTR_IS("pads"), PL_ATTR_I("storage_order", 0), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_avgpool7_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_I("count_include_pad", 0),
    PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS), PL_ATTR_IS("pads"),
    PL_ATTR_IS("strides")};
static const pl_attr_spec nn_avgpool10_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_I("ceil_mode", 0),
    PL_ATTR_I("count_include_pad", 0),
    PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS), PL_ATTR_IS("pads"),
    PL_ATTR_IS("strides")};
/* AveragePool 19 added dilations (the kernels read them as MaxPool's). */
static const pl_attr_spec nn_avgpool19_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_I("ceil_mode", 0),
    PL_ATTR_I("count_include_pad", 0), PL_ATTR_IS("dilations"),
    PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS), PL_ATTR_IS("pads"),
    PL_ATTR_IS("strides")};
/* LpPool 2 and 11 (p an int; 1's float p is not taken); 18 added
 * ceil_mode and dilations. */
static const pl_attr_spec nn_lppool2_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS),
    PL_ATTR_I("p", 2), PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};
static const pl_attr_spec nn_lppool18_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_I("ceil_mode", 0), PL_ATTR_IS("dilations"),
    PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS), PL_ATTR_I("p", 2), PL_ATTR_IS("pads"),
    PL_ATTR_IS("strides")};
static const pl_attr_spec nn_bn7_attrs[] = {
    PL_ATTR_F("epsilon", 1e-5), PL_ATTR_F("momentum", 0.9),
    PL_ATTR_I("spatial", 1)};
static const pl_attr_spec nn_bn9_attrs[] = {
    PL_ATTR_F("epsilon", 1e-5), PL_ATTR_F("momentum", 0.9)};
static const pl_attr_spec nn_bn14_attrs[] = {
    PL_ATTR_F("epsilon", 1e-5), PL_ATTR_F("momentum", 0.9),
    PL_ATTR_I("training_mode", 0)};
static const pl_attr_spec nn_ln_attrs[] = {
    PL_ATTR_I("axis", -1), PL_ATTR_F("epsilon", 1e-5),
    PL_ATTR_I("stash_type", 1)};
static const pl_attr_spec nn_in_attrs[] = {PL_ATTR_F("epsilon", 1e-5)};
static const pl_attr_spec nn_reduce_attr_axes[] = {
    PL_ATTR_IS("axes"), PL_ATTR_I("keepdims", 1)};
static const pl_attr_spec nn_reduce_input_axes[] = {
    PL_ATTR_I("keepdims", 1), PL_ATTR_I("noop_with_empty_axes", 0)};

#define NN_FLOAT_NUM (PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64 | PL_TS_U8 | PL_TS_I8)

#define NN_SCHEMA(op, since, in_min, in_max, out_max, attr_table, fn, ...)     \
    {.name = op, .domain = "", .since_version = since, .min_inputs = in_min,  \
     .max_inputs = in_max, .min_outputs = 1, .max_outputs = out_max,          \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table), .infer = fn,       \
     __VA_ARGS__}
#define NN_REDUCE_ATTR(op, since)                                            \
    NN_SCHEMA(op, since, 1, 1, 1, nn_reduce_attr_axes, nn_infer_reduce,      \
              .types = {{"T", NN_FLOAT_NUM}}, .input_types = {"T"},          \
              .output_types = {"T"})
#define NN_REDUCE_INPUT(op, since)                                           \
    NN_SCHEMA(op, since, 1, 2, 1, nn_reduce_input_axes, nn_infer_reduce,     \
              .types = {{"T", NN_FLOAT_NUM}, {"I", PL_TS_I64}},              \
              .input_types = {"T", "I"}, .output_types = {"T"})

const pl_op_schema pl_opset_nn_schemas[] = {
    {.name = "MatMul", .domain = "", .since_version = 7, .min_inputs = 2,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", NN_FLOAT_NUM}}, .input_types = {"T", "T"},
     .output_types = {"T"}, .infer = nn_infer_matmul},
    NN_SCHEMA("Gemm", 7, 3, 3, 1, nn_gemm_attrs, nn_infer_gemm,
              .types = {{"T", NN_FLOAT_NUM}}, .input_types = {"T", "T", "T"},
              .output_types = {"T"}),
    NN_SCHEMA("Gemm", 11, 2, 3, 1, nn_gemm_attrs, nn_infer_gemm,
              .types = {{"T", NN_FLOAT_NUM}}, .input_types = {"T", "T", "T"},
              .output_types = {"T"}),
    NN_SCHEMA("Conv", 7, 2, 3, 1, nn_conv_attrs, nn_infer_conv,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T", "T", "T"},
              .output_types = {"T"}),
    /* 22 only admits bfloat16 */
    NN_SCHEMA("DeformConv", 19, 3, 5, 1, nn_deform_attrs, nn_infer_deform_conv,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T", "T", "T", "T", "T"},
              .output_types = {"T"}),
    NN_SCHEMA("ConvTranspose", 7, 2, 3, 1, nn_convt_attrs, nn_infer_conv_transpose,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T", "T", "T"},
              .output_types = {"T"}),
    NN_SCHEMA("MaxPool", 7, 1, 1, 1, nn_maxpool7_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("MaxPool", 8, 1, 1, 2, nn_maxpool8_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}, {"I", PL_TS_I64}},
              .input_types = {"T"}, .output_types = {"T", "I"}),
    NN_SCHEMA("MaxPool", 10, 1, 1, 2, nn_maxpool10_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT | PL_TS_I8 | PL_TS_U8}, {"I", PL_TS_I64}},
              .input_types = {"T"}, .output_types = {"T", "I"}),
    NN_SCHEMA("AveragePool", 7, 1, 1, 1, nn_avgpool7_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("AveragePool", 10, 1, 1, 1, nn_avgpool10_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("AveragePool", 19, 1, 1, 1, nn_avgpool19_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("LpPool", 2, 1, 1, 1, nn_lppool2_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("LpPool", 11, 1, 1, 1, nn_lppool2_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    NN_SCHEMA("LpPool", 18, 1, 1, 1, nn_lppool18_attrs, nn_infer_pool,
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
              .output_types = {"T"}),
    {.name = "GlobalAveragePool", .domain = "", .since_version = 7,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
     .output_types = {"T"}, .infer = nn_infer_global_pool},
    {.name = "GlobalMaxPool", .domain = "", .since_version = 7,
     .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
     .output_types = {"T"}, .infer = nn_infer_global_pool},
    NN_SCHEMA("BatchNormalization", 7, 5, 5, 5, nn_bn7_attrs, nn_infer_batchnorm,
              .types = {{"T", PL_TS_FLOAT}},
              .input_types = {"T", "T", "T", "T", "T"}, .output_types = {"T"},
              PL_INPLACE_0),
    NN_SCHEMA("BatchNormalization", 9, 5, 5, 5, nn_bn9_attrs, nn_infer_batchnorm,
              .types = {{"T", PL_TS_FLOAT}},
              .input_types = {"T", "T", "T", "T", "T"}, .output_types = {"T"},
              PL_INPLACE_0),
    NN_SCHEMA("BatchNormalization", 14, 5, 5, 3, nn_bn14_attrs, nn_infer_batchnorm,
              .types = {{"T", PL_TS_FLOAT}, {"U", PL_TS_FLOAT}},
              .input_types = {"T", "T", "T", "U", "U"},
              .output_types = {"T", "U", "U"}, PL_INPLACE_0),
    NN_SCHEMA("BatchNormalization", 15, 5, 5, 3, nn_bn14_attrs, nn_infer_batchnorm,
              .types = {{"T", PL_TS_FLOAT}, {"T1", PL_TS_FLOAT}, {"T2", PL_TS_FLOAT}},
              .input_types = {"T", "T1", "T1", "T2", "T2"},
              .output_types = {"T", "T2", "T2"}, PL_INPLACE_0),
    /* LayerNormalization entered ai.onnx at opset 17; Plinth accepts it at
     * any version because frontends emit it for fused patterns. */
    NN_SCHEMA("LayerNormalization", 1, 2, 3, 3, nn_ln_attrs, nn_infer_layernorm,
              .types = {{"T", PL_TS_FLOAT}, {"U", PL_TS_FLOAT}},
              .input_types = {"T", "T", "T"}, .output_types = {"T", "U", "U"}),
    NN_SCHEMA("InstanceNormalization", 7, 3, 3, 1, nn_in_attrs,
              nn_infer_instancenorm, .types = {{"T", PL_TS_FLOAT}},
              .input_types = {"T", "T", "T"}, .output_types = {"T"},
              PL_INPLACE_0),
    NN_REDUCE_ATTR("ReduceMean", 7),
    NN_REDUCE_INPUT("ReduceMean", 18),
    NN_REDUCE_ATTR("ReduceMax", 7),
    NN_REDUCE_INPUT("ReduceMax", 18),
    /* 20 admits bool (and, refused by the dtype check, Plinth's missing
     * narrow integers) */
    NN_SCHEMA("ReduceMax", 20, 1, 2, 1, nn_reduce_input_axes, nn_infer_reduce,
              .types = {{"T", NN_FLOAT_NUM | PL_TS_BOOL}, {"I", PL_TS_I64}},
              .input_types = {"T", "I"}, .output_types = {"T"}),
    NN_REDUCE_ATTR("ReduceSum", 7),
    NN_REDUCE_INPUT("ReduceSum", 13),
};
const size_t pl_opset_nn_count = PL_COUNT(pl_opset_nn_schemas);
