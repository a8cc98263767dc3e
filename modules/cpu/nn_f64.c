/* nn_f64.c — the cpu module's convolution and pooling on f64: Conv,
 * ConvTranspose, MaxPool (with Indices), AveragePool, GlobalAveragePool
 * and GlobalMaxPool computed in double. The f32 builders (nn.c, nn_pool.c) read and check
 * the node (the window, groups, pads, the output's shape) and hand an f64
 * node here with the window they read.
 *
 * These are direct loops, not the f32 paths' im2col and phase planes: f64
 * models are rare and small, and a direct loop has one rounding order that
 * is easy to reason about. Work is split over the output planes (N*M for
 * Conv, N*C for the pools) on the host's pool; each output walks its
 * window's taps, skipping those in the padding. Indices are ONNX's
 * (storage_order 0): the flat index into X of the first maximum. */
#include <math.h>
#include <string.h>

#include "nn_window.h"

typedef enum nn64_kind {
    NN64_CONV, NN64_CONVT, NN64_MAX, NN64_AVG, NN64_GMAX, NN64_GAVG
} nn64_kind;

typedef struct nn64_kernel {
    pl_kernel base;
    nn64_kind kind;
    nn_window w;
    int64_t c, m, group;    /* X's channels; Conv: W's output channels, groups */
    bool bias, include_pad;
    bool col_major; /* MaxPool's storage_order 1 */
    int64_t in_plane, out_plane, ksize, planes;
} nn64_kernel;

typedef struct nn64_call {
    const nn64_kernel *k;
    const double *x, *wt, *b;
    double *y;              /* NULL: not wanted */
    int64_t *indices;       /* NULL: not wanted */
    int add;
} nn64_call;

/* The input offset, within a plane, of tap T of output O (flat indices of
 * the output and kernel grids), or -1 when the tap is in the padding. For
 * ConvTranspose (TRANSPOSE), the input whose tap T lands on O: output
 * o = i * stride + t * dilation - pad, so i when that divides exactly. */
static int64_t nn64_tap(const nn_window *w, int64_t o, int64_t t, bool transpose)
{
    int64_t off = 0, step = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        int64_t od = o % w->out[d], td = t % w->kernel[d];
        o /= w->out[d];
        t /= w->kernel[d];
        int64_t i = od * w->stride[d] - w->pad_begin[d] + td * w->dilation[d];
        if (transpose) {
            int64_t num = od + w->pad_begin[d] - td * w->dilation[d];
            i = num >= 0 && num % w->stride[d] == 0 ? num / w->stride[d] : -1;
        }
        if (i < 0 || i >= w->in[d])
            return -1;
        off += i * step;
        step *= w->in[d];
    }
    return off;
}

/* AveragePool's divisor of output O: the product of its axes' counts. */
static double nn64_count(const nn64_kernel *k, int64_t o)
{
    double n = 1.0;
    for (int d = k->w.nsp - 1; d >= 0; d--) {
        n *= (double)nn_pool_count(&k->w, d, o % k->w.out[d], k->include_pad);
        o /= k->w.out[d];
    }
    return n;
}

/* Output O of channel M of batch entry N: W is [M, C/group, k...] for
 * Conv, [C, M/group, k...] for ConvTranspose. */
static double nn64_conv_at(const nn64_call *c, int64_t n, int64_t m, int64_t o)
{
    const nn64_kernel *k = c->k;
    const bool tr = k->kind == NN64_CONVT;
    const int64_t cg = k->c / k->group, mg = k->m / k->group, g = m / mg;
    double acc = k->bias ? c->b[m] : 0.0;
    for (int64_t ci = 0; ci < cg; ci++) {
        const double *x = c->x + (n * k->c + g * cg + ci) * k->in_plane;
        const double *wt = c->wt + (tr ? (g * cg + ci) * mg + m % mg : m * cg + ci) * k->ksize;
        for (int64_t t = 0; t < k->ksize; t++) {
            int64_t at = nn64_tap(&k->w, o, t, tr);
            if (at >= 0)
                acc += x[at] * wt[t];
        }
    }
    return acc;
}

/* Output O of plane P of a windowed pool; *ARG the max's flat index. */
static double nn64_pool_at(const nn64_call *c, int64_t p, int64_t o, int64_t *arg)
{
    const nn64_kernel *k = c->k;
    const double *x = c->x + p * k->in_plane;
    double acc = k->kind == NN64_MAX ? -INFINITY : 0.0;
    *arg = -1;
    for (int64_t t = 0; t < k->ksize; t++) {
        int64_t at = nn64_tap(&k->w, o, t, false);
        if (at < 0)
            continue;
        if (k->kind == NN64_AVG)
            acc += x[at];
        else if (x[at] > acc || *arg < 0)
            acc = x[at],
            *arg = p * k->in_plane + (k->col_major ? nn_col_major_offset(&k->w, at) : at);
    }
    return k->kind == NN64_AVG ? acc / nn64_count(k, o) : acc;
}

static void nn64_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const nn64_call *c = arg;
    const nn64_kernel *k = c->k;
    for (size_t p = begin; p < end; p++) {
        for (int64_t o = 0; o < k->out_plane; o++) {
            int64_t at = -1;
            double v;
            if (k->kind == NN64_CONV || k->kind == NN64_CONVT) {
                v = nn64_conv_at(c, (int64_t)p / k->m, (int64_t)p % k->m, o);
            } else if (k->kind == NN64_GMAX || k->kind == NN64_GAVG) {
                const double *x = c->x + (int64_t)p * k->in_plane;
                v = k->kind == NN64_GMAX ? -INFINITY : 0.0;
                for (int64_t i = 0; i < k->in_plane; i++)
                    v = k->kind == NN64_GAVG ? v + x[i] : (x[i] > v ? x[i] : v);
                v = k->kind == NN64_GAVG ? v / (double)k->in_plane : v;
            } else {
                v = nn64_pool_at(c, (int64_t)p, o, &at);
            }
            size_t e = p * (size_t)k->out_plane + (size_t)o;
            if (c->y != NULL)
                c->y[e] = c->add ? c->y[e] + v : v;
            if (c->indices != NULL)
                c->indices[e] = at;
        }
    }
}

static pl_status *nn64_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const nn64_kernel *k = (const nn64_kernel *)kernel;
    nn64_call c = {.k = k, .x = (const double *)(const void *)cpu_in(args, 0)};
    if (k->kind == NN64_CONV || k->kind == NN64_CONVT) {
        c.wt = (const double *)(const void *)cpu_in(args, 1);
        if (k->bias && (args->n_inputs < 3 || args->inputs[2].data == NULL))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 2 (B) has no data");
        c.b = k->bias ? (const double *)(const void *)cpu_in(args, 2) : NULL;
    }
    for (size_t o = 0; o < args->n_outputs && o < 2; o++) {
        pl_output_request req = args->requests[o];
        pl_tensor *t = &args->outputs[o];
        if (req == PL_REQ_NULL || t->data == NULL)
            continue;
        if ((req != PL_REQ_WRITE && req != PL_REQ_ADD_TO) || (o == 1 && req != PL_REQ_WRITE) ||
            t->ndim < 0 || cpu_elements(t->shape, t->ndim) != kernel->out_elements)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                             "output %zu of the run (request %d) does not fit the kernel", o,
                             (int)req);
        void *data = (char *)t->data + t->byte_offset;
        if (o == 0) {
            c.y = data;
            c.add = req == PL_REQ_ADD_TO;
        } else {
            c.indices = data;
        }
    }
    if (kernel->out_elements == 0 || (c.y == NULL && c.indices == NULL))
        return NULL;
    if (args->inputs[0].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 0 has no data");
    int64_t work = k->out_plane * (k->ksize > 0 ? k->ksize : 1) *
                   (k->kind == NN64_CONV || k->kind == NN64_CONVT ? k->c / k->group : 1);
    size_t grain = work > 0 && work < 16384 ? (size_t)(16384 / work) : 1;
    cpu_host->parallel_for(ctx->host_ctx, (size_t)k->planes, grain, nn64_chunk, &c);
    return NULL;
}

pl_status *nn_build_f64(pl_module_ctx *ctx, const pl_node_desc *node, const nn_window *w,
                        int64_t group, bool include_pad, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    nn64_kind kind = strcmp(node->op, "Conv") == 0                ? NN64_CONV
                     : strcmp(node->op, "ConvTranspose") == 0     ? NN64_CONVT
                     : strcmp(node->op, "MaxPool") == 0           ? NN64_MAX
                     : strcmp(node->op, "AveragePool") == 0       ? NN64_AVG
                     : strcmp(node->op, "GlobalMaxPool") == 0     ? NN64_GMAX
                                                                  : NN64_GAVG;
    for (size_t i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].ndim >= 0 && !PL_DTYPE_EQ(node->inputs[i].dtype, PL_DTYPE_F64))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "unsupported dtype of input %zu "
                             "(every input f64, or every one f32)", i);
    int64_t order = 0; /* MaxPool's storage_order (nn_build_pool checked it) */
    if (kind == NN64_MAX) {
        pl_status *st = cpu_attr_int(node, "storage_order", 0, &order);
        if (st != NULL)
            return st;
    }
    bool col_major = order == 1;
    nn64_kernel *k = (nn64_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->kind = kind;
    k->col_major = col_major;
    k->c = x->shape[1];
    k->group = group;
    k->include_pad = include_pad;
    k->in_plane = (int64_t)cpu_elements(x->shape + 2, x->ndim - 2);
    k->out_plane = k->ksize = 1;
    if (kind != NN64_GMAX && kind != NN64_GAVG) {
        k->w = *w;
        for (int d = 0; d < w->nsp; d++) {
            k->out_plane *= w->out[d];
            k->ksize *= w->kernel[d];
        }
    }
    bool conv = kind == NN64_CONV || kind == NN64_CONVT;
    k->m = kind == NN64_CONV    ? node->inputs[1].shape[0]
           : kind == NN64_CONVT ? node->inputs[1].shape[1] * group
                                : k->c;
    k->bias = conv && node->n_inputs > 2 && node->inputs[2].ndim >= 0;
    k->planes = x->shape[0] * k->m;
    k->base.run_any = nn64_run;
    k->base.n_reads = conv ? (k->bias ? 3 : 2) : 1;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    *out_kernel = &k->base;
    return NULL;
}
