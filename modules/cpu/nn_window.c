/* nn_window.c — the sliding-window geometry the convolution and pooling
 * kernels share: ONNX's attributes (strides, dilations, pads, auto_pad,
 * kernel_shape, ceil_mode) read with their defaults and turned into output
 * sizes and explicit pads, the same arithmetic as the core's shape
 * inference, so a kernel can check the node's output against it. Also the
 * run's workspace and the padded phase planes of 2-D windows. */
#include <string.h>

#include "nn_window.h"

pl_status *nn_attr_string(const pl_node_desc *node, const char *name,
                          const char *default_value, const char **out, size_t *out_len)
{
    *out = default_value;
    *out_len = strlen(default_value);
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_string))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read attribute '%s' from", name);
    pl_graph_attr_kind have = g->attr_kind(node->graph, node->node_index, name);
    if (have == PL_GRAPH_ATTR_NONE)
        return NULL;
    if (have != PL_GRAPH_ATTR_STRING)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "attribute '%s' is not a string", name);
    g->attr_string(node->graph, node->node_index, name, out, out_len);
    return NULL;
}

/* Reads ints attribute NAME of WANT values, each >= MIN, into OUT, or
 * FILL in every value when absent. */
static pl_status *nn_ints(const pl_node_desc *node, const char *name, size_t want, int64_t min,
                          int64_t fill, int64_t *out, bool *out_present)
{
    const int64_t *v;
    size_t n;
    NN_TRY(cpu_attr_ints(node, name, &v, &n));
    if (out_present != NULL)
        *out_present = v != NULL;
    if (v == NULL) {
        for (size_t i = 0; i < want; i++)
            out[i] = fill;
        return NULL;
    }
    if (n != want)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "attribute '%s' has %zu values, expected %zu", name, n, want);
    for (size_t i = 0; i < n; i++) {
        /* Far beyond any real window: keeps the arithmetic below exact. */
        if (v[i] < min || v[i] > ((int64_t)1 << 31))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "attribute '%s' value %zu is %lld", name, i, (long long)v[i]);
        out[i] = v[i];
    }
    return NULL;
}

pl_status *nn_window_read(const pl_node_desc *node, nn_window_kind kind, const pl_tensor *x,
                          const int64_t *kernel, nn_window *w)
{
    memset(w, 0, sizeof *w);
    const char *op = node->op;
    char tx[128];
    if (x->ndim < 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "input %s needs rank 3 or more (N, C, spatial...)",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    int nsp = x->ndim - 2;
    if (nsp > NN_MAX_SP)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%d spatial axes (1 to %d supported)", nsp,
                         NN_MAX_SP);
    w->nsp = nsp;
    for (int d = 0; d < nsp; d++)
        w->in[d] = x->shape[d + 2];
    int64_t pads[2 * NN_MAX_SP];
    bool has_ks;
    int64_t ks[NN_MAX_SP];
    NN_TRY(nn_ints(node, "strides", (size_t)nsp, 1, 1, w->stride, NULL));
    NN_TRY(nn_ints(node, "dilations", (size_t)nsp, 1, 1, w->dilation, NULL));
    NN_TRY(nn_ints(node, "pads", 2 * (size_t)nsp, 0, 0, pads, NULL));
    NN_TRY(nn_ints(node, "kernel_shape", (size_t)nsp, 1, 1, ks, &has_ks));
    for (int d = 0; d < nsp; d++) {
        if (kernel != NULL && has_ks && ks[d] != kernel[d])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "kernel_shape value %d is %lld but W has %lld", d, (long long)ks[d],
                             (long long)kernel[d]);
        w->kernel[d] = kernel != NULL ? kernel[d] : ks[d];
    }
    if (kernel == NULL && !has_ks)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "attribute 'kernel_shape' is required");
    int64_t ceil_mode = 0;
    if (kind == NN_WINDOW_POOL)
        NN_TRY(cpu_attr_int(node, "ceil_mode", 0, &ceil_mode));
    const char *ap;
    size_t ap_len;
    NN_TRY(nn_attr_string(node, "auto_pad", "NOTSET", &ap, &ap_len));
    pl_auto_pad auto_pad = pl_auto_pad_parse(ap, ap_len);
    if (auto_pad == PL_AUTO_PAD_INVALID)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "auto_pad '%.*s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                         (int)(ap_len < 32 ? ap_len : 32), ap);
    for (int d = 0; d < nsp && kind != NN_WINDOW_TRANSPOSE; d++) {
        int64_t in = w->in[d], s = w->stride[d];
        int64_t eff = (w->kernel[d] - 1) * w->dilation[d] + 1;
        if (pl_auto_pad_is_same(auto_pad)) {
            w->out[d] = pl_auto_pad_same(auto_pad, in, s, eff, &w->pad_begin[d], &w->pad_end[d]);
            continue;
        }
        bool valid = auto_pad == PL_AUTO_PAD_VALID;
        int64_t pb = valid ? 0 : pads[d], pe = valid ? 0 : pads[d + nsp];
        int64_t span = in + pb + pe;
        if (span < eff)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "window %lld is larger than the padded input %lld on spatial "
                             "axis %d", (long long)eff, (long long)span, d);
        int64_t steps = (span - eff) / s;
        if (ceil_mode && (span - eff) % s != 0) {
            /* A last window starting inside the end padding is dropped, as
             * the core's shape inference (and ONNX Runtime) do. */
            steps++;
            if (steps * s >= in + pb)
                steps--;
        }
        w->out[d] = steps + 1;
        w->pad_begin[d] = pb;
        w->pad_end[d] = pe;
    }
    return NULL;
}

pl_status *nn_window_check_output(const pl_node_desc *node, const pl_tensor *o, int64_t n,
                                  int64_t c, const nn_window *w)
{
    int64_t want[NN_MAX_SP + 2] = {n, c};
    for (int d = 0; d < w->nsp; d++)
        want[d + 2] = w->out[d];
    int r = w->nsp + 2;
    if (o->ndim == r && memcmp(o->shape, want, (size_t)r * sizeof(int64_t)) == 0)
        return NULL;
    char tw[128], to[128];
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                     "the attributes give an output of %s but the node's output is %s",
                     cpu_dims_text(want, r, tw, sizeof tw),
                     cpu_dims_text(o->shape, o->ndim, to, sizeof to));
}

/* ---- workspace ----------------------------------------------------------- */

size_t nn_slice_bytes(size_t floats)
{
    return (floats * sizeof(float) + 63) & ~(size_t)63;
}

void *nn_workspace_acquire(pl_module_ctx *ctx, const pl_run_args *args, size_t bytes,
                           nn_workspace *ws)
{
    ws->base = NULL;
    ws->owned = false;
    if (bytes == 0)
        return ws;
    if (args->workspace != NULL && args->workspace_bytes >= bytes) {
        ws->base = args->workspace;
        return ws->base;
    }
    /* The core handed less than asked (the op table's builders cannot yet
     * report workspace through get_kernel): borrow it for this run. */
    ws->base = cpu_host->host_alloc(ctx->host_ctx, bytes, 64);
    ws->owned = ws->base != NULL;
    return ws->base;
}

void nn_workspace_release(pl_module_ctx *ctx, nn_workspace *ws)
{
    if (ws->owned)
        cpu_host->host_free(ctx->host_ctx, ws->base);
    ws->base = NULL;
    ws->owned = false;
}

/* ---- phase planes ---------------------------------------------------------- */

bool nn_phase_plan_make(const nn_window *w, nn_phase_plan *p)
{
    memset(p, 0, sizeof *p);
    int64_t sw = w->stride[1], dw = w->dilation[1], kw = w->kernel[1];
    if (w->nsp != 2 || kw > 64 || sw > 16)
        return false;
    p->rows = (w->out[0] - 1) * w->stride[0] + (w->kernel[0] - 1) * w->dilation[0] + 1;
    p->cols = (w->out[1] - 1) * sw + (kw - 1) * dw + 1;
    int64_t start = 0;
    for (int64_t ph = 0; ph < sw; ph++) {
        p->phase_start[ph] = start;
        if (ph < p->cols)
            start += (p->cols - ph + sw - 1) / sw;
    }
    for (int64_t k = 0; k < kw; k++)
        p->tap_col[k] = p->phase_start[(k * dw) % sw] + (k * dw) / sw;
    return true;
}

void nn_phase_fill(const nn_window *w, const nn_phase_plan *p, const float *src, float fill,
                   float *dst)
{
    const int64_t h = w->in[0], wd = w->in[1], pt = w->pad_begin[0], pl = w->pad_begin[1];
    const int64_t s = w->stride[1], cols = p->cols;
    /* Columns [x0, x1) of a padded row hold input columns. */
    int64_t x0 = pl < cols ? pl : cols;
    int64_t x1 = pl + wd < cols ? pl + wd : cols;
    for (int64_t y = 0; y < p->rows; y++) {
        float *row = dst + y * cols;
        int64_t iy = y - pt;
        if (iy < 0 || iy >= h || x1 <= x0) {
            for (int64_t x = 0; x < cols; x++)
                row[x] = fill;
            continue;
        }
        /* Padded column x holds in[x - pl]. */
        const float *in = src + iy * wd;
        if (s == 1) {
            for (int64_t x = 0; x < x0; x++)
                row[x] = fill;
            memcpy(row + x0, in + (x0 - pl), (size_t)(x1 - x0) * sizeof(float));
            for (int64_t x = x1; x < cols; x++)
                row[x] = fill;
            continue;
        }
        for (int64_t ph = 0; ph < s && ph < cols; ph++) {
            /* Phase ph holds columns x = j*s + ph: input where x0 <= x < x1. */
            float *out = row + p->phase_start[ph];
            int64_t n = (cols - ph + s - 1) / s;
            int64_t lo = x0 > ph ? (x0 - ph + s - 1) / s : 0;
            int64_t hi = x1 > ph ? (x1 - ph + s - 1) / s : 0;
            if (lo > n)
                lo = n;
            if (hi > n)
                hi = n;
            if (hi < lo)
                hi = lo;
            const int64_t shift = ph - pl;
            for (int64_t j = 0; j < lo; j++)
                out[j] = fill;
            for (int64_t j = lo; j < hi; j++)
                out[j] = in[j * s + shift];
            for (int64_t j = hi; j < n; j++)
                out[j] = fill;
        }
    }
}
