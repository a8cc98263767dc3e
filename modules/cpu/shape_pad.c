/* shape_pad.c — the cpu module's Pad kernel, for every dtype, in modes
 * constant, reflect, edge and (opset 19) wrap. Pads come from the attribute (opset < 11) or
 * the constant second input, optionally for some axes only (opset 18's
 * fourth input); negative pads crop. A run writes output rows (the last
 * dim) in tasks: a row outside the input is the constant, any other one
 * copy of its input row between its padded edges, whose indices are
 * mapped back into the input (or to the constant) one by one. */
#include <stdint.h>
#include <string.h>

#include "shape_kernel.h"

typedef enum shp_pad_mode {
    SHP_PAD_CONSTANT, SHP_PAD_REFLECT, SHP_PAD_EDGE, SHP_PAD_WRAP
} shp_pad_mode;

typedef struct shp_pad_kernel {
    shp_kernel k;
    int rank;
    shp_pad_mode mode;
    int64_t x_dims[CPU_MAX_RANK];
    int64_t o_dims[CPU_MAX_RANK];
    int64_t begin[CPU_MAX_RANK];   /* pads before each dim */
    int64_t x_stride[CPU_MAX_RANK];
    unsigned char value[8];        /* the constant, in the data's dtype */
    bool value_at_run;             /* read the constant from input 2 */
} shp_pad_kernel;

/* The input index that output index I (of a dim padded by BEGIN, input
 * size N, output size OUT) reads, or -1 for the constant. */
static inline int64_t shp_pad_map(int64_t i, int64_t begin, int64_t n, int64_t out,
                                  shp_pad_mode mode)
{
    i -= begin;
    if (i >= 0 && i < n)
        return i;
    if (mode == SHP_PAD_CONSTANT)
        return -1;
    if (mode == SHP_PAD_WRAP) {
        /* the input tiled, after negative pads cropped it (numpy's
         * pad(mode='wrap') of the cropped data, ONNX's reference): the
         * period is the part kept, [lo, hi) */
        int64_t end = out - n - begin;
        int64_t lo = begin < 0 ? -begin : 0, hi = end < 0 ? n + end : n;
        int64_t m = hi - lo;
        if (m <= 0)
            return -1;
        int64_t j = (i - lo) % m;
        return lo + (j < 0 ? j + m : j);
    }
    if (mode == SHP_PAD_EDGE || n == 1)
        return i < 0 ? 0 : n - 1;
    int64_t period = 2 * (n - 1);
    i %= period;
    if (i < 0)
        i += period;
    return i < n ? i : period - i;
}

typedef struct shp_pad_call {
    const shp_pad_kernel *k;
    const char *x;
    char *y;
    const unsigned char *value;
} shp_pad_call;

/* COUNT copies of the ES-byte VALUE at Y. */
static void shp_pad_fill(char *y, const unsigned char *value, size_t es, int64_t count)
{
    if (count <= 0)
        return;
    if (es == 4) {
        uint32_t v;
        memcpy(&v, value, 4);
        for (int64_t j = 0; j < count; j++)
            memcpy(y + (size_t)j * 4, &v, 4);
    } else if (es == 1) {
        memset(y, value[0], (size_t)count);
    } else {
        for (int64_t j = 0; j < count; j++)
            memcpy(y + (size_t)j * es, value, es);
    }
}

/* Output columns [FROM, TO) of a row whose input row is X, one by one (the
 * padded edges). */
static void shp_pad_edge(char *y, const char *x, const shp_pad_call *c, int64_t from, int64_t to)
{
    const shp_pad_kernel *k = c->k;
    const int last = k->rank - 1;
    const size_t es = k->k.in_esize;
    for (int64_t j = from; j < to; j++) {
        int64_t s = shp_pad_map(j, k->begin[last], k->x_dims[last], k->o_dims[last], k->mode);
        memcpy(y + (size_t)j * es, s < 0 ? (const char *)c->value : x + s * (int64_t)es, es);
    }
}

static void shp_pad_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_pad_call *c = arg;
    const shp_pad_kernel *k = c->k;
    const int last = k->rank - 1;
    const size_t es = k->k.in_esize;
    const int64_t cols = k->o_dims[last], n = k->x_dims[last], b = k->begin[last];
    /* The columns that copy the input row as it is: [lo, hi). */
    const int64_t lo = b > 0 ? (b < cols ? b : cols) : 0;
    const int64_t hi = b + n < cols ? (b + n > lo ? b + n : lo) : cols;
    for (size_t row = begin; row < end; row++) {
        char *y = c->y + row * (size_t)cols * es;
        size_t rest = row;
        int64_t off = 0;
        bool outside = false;
        for (int d = last - 1; d >= 0; d--) {
            int64_t i = (int64_t)(rest % (size_t)k->o_dims[d]);
            rest /= (size_t)k->o_dims[d];
            int64_t s = shp_pad_map(i, k->begin[d], k->x_dims[d], k->o_dims[d], k->mode);
            if (s < 0)
                outside = true;
            else
                off += s * k->x_stride[d];
        }
        if (outside) {
            shp_pad_fill(y, c->value, es, cols);
            continue;
        }
        const char *x = c->x + off * (int64_t)es;
        shp_pad_edge(y, x, c, 0, lo);
        if (hi > lo)
            memcpy(y + (size_t)lo * es, x + (lo - b) * (int64_t)es, (size_t)(hi - lo) * es);
        shp_pad_edge(y, x, c, hi, cols);
    }
}

static pl_status *shp_pad_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                const pl_run_args *args, size_t o, void *dst,
                                pl_output_request req)
{
    (void)o, (void)req;
    const shp_pad_kernel *k = (const shp_pad_kernel *)kernel;
    shp_pad_call c = {.k = k, .x = shp_in(args, 0), .y = dst, .value = k->value};
    if (k->value_at_run) {
        const pl_tensor *v = &args->inputs[2];
        if (v->data == NULL)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op, "constant_value has no data");
        c.value = (const unsigned char *)shp_in(args, 2);
    }
    if (k->rank == 0) {
        memcpy(dst, c.x, kernel->in_esize);
        return NULL;
    }
    int64_t cols = k->o_dims[k->rank - 1];
    size_t rows = kernel->base.out_elements / (size_t)cols;
    size_t row_bytes = (size_t)cols * kernel->in_esize;
    size_t grain = row_bytes >= SHP_GRAIN_BYTES ? 1 : SHP_GRAIN_BYTES / row_bytes;
    cpu_host->parallel_for(ctx->host_ctx, rows, grain, shp_pad_chunk, &c);
    return NULL;
}

pl_status *shp_build_pad(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    const int r = x->ndim;
    SHP_TRY(shp_same_dtype(node));
    char mode_name[32];
    SHP_TRY(shp_attr_string(node, "mode", "constant", mode_name, sizeof mode_name));
    shp_pad_mode mode;
    if (strcmp(mode_name, "constant") == 0)
        mode = SHP_PAD_CONSTANT;
    else if (strcmp(mode_name, "reflect") == 0)
        mode = SHP_PAD_REFLECT;
    else if (strcmp(mode_name, "edge") == 0)
        mode = SHP_PAD_EDGE;
    else if (strcmp(mode_name, "wrap") == 0 && shp_opset(node) >= 19)
        mode = SHP_PAD_WRAP;
    else
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "mode '%s' (constant, reflect, edge, or from opset 19 wrap)", mode_name);
    bool v11 = shp_opset(node) >= 11;
    int64_t pads[SHP_MAX_INTS], axes[SHP_MAX_INTS];
    size_t np, na;
    int sp, sa;
    if (v11 && !shp_input_present(node, 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "pads (input 1) is missing");
    SHP_TRY(shp_ints_arg(node, v11 ? 1 : SIZE_MAX, v11 ? NULL : "pads", pads, &np,
                                    &sp));
    SHP_TRY(shp_ints_arg(node, v11 ? 3 : SIZE_MAX, NULL, axes, &na, &sa));
    if (sp < 0 || sa < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "%s is not a constant: it must be known when the kernel is made",
                         sp < 0 ? "pads" : "axes");
    if (sp == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "pads are missing");
    if (sa == 0) {
        na = (size_t)r;
        for (int d = 0; d < r; d++)
            axes[d] = d;
    }
    if (np != 2 * na)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "pads has %zu values for %zu axes", np,
                         na);
    int64_t begin[CPU_MAX_RANK] = {0}, end[CPU_MAX_RANK] = {0};
    for (size_t i = 0; i < na; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "axis %lld is out of range for rank %d",
                             (long long)axes[i], r);
        begin[a] = pads[i];
        end[a] = pads[i + na];
    }
    bool ok = o->ndim == r;
    for (int d = 0; d < r && ok; d++) {
        ok = o->shape[d] == x->shape[d] + begin[d] + end[d];
        if (ok && mode != SHP_PAD_CONSTANT && x->shape[d] == 0 && o->shape[d] > 0)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "cannot pad an empty axis %d in mode %s", d, mode_name);
    }
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %s padded does not give the output %s",
                         cpu_dims_text(x->shape, r, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    shp_pad_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_pad_write, (shp_kernel **)&k));
    k->rank = r;
    k->mode = mode;
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        k->x_dims[d] = x->shape[d];
        k->o_dims[d] = o->shape[d];
        k->begin[d] = begin[d];
        k->x_stride[d] = step;
        step *= x->shape[d];
    }
    size_t es = k->k.in_esize;
    if (v11 && shp_input_present(node, 2)) {
        const pl_tensor *cv = &node->inputs[2];
        size_t bytes;
        const void *data = shp_constant(node, 2, &bytes);
        if (!PL_DTYPE_EQ(cv->dtype, x->dtype) || cpu_elements(cv->shape, cv->ndim) != 1) {
            cpu_kernel_release(ctx, &k->k.base);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "constant_value is not one value of the data's dtype");
        }
        if (data != NULL && bytes >= es)
            memcpy(k->value, data, es);
        else
            k->value_at_run = mode == SHP_PAD_CONSTANT;
    } else if (!v11) {
        double value;
        pl_status *st = cpu_attr_float(node, "value", 0.0, &value);
        if (st != NULL) {
            cpu_kernel_release(ctx, &k->k.base);
            return st;
        }
        shp_convert(PL_DTYPE_F64, &value, x->dtype, k->value, 1);
    }
    k->k.base.n_reads = k->value_at_run ? 3 : 1;
    *out_kernel = &k->k.base;
    return NULL;
}
