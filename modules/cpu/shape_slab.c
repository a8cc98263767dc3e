/* shape_slab.c — the cpu module's kernels that move whole slabs of bytes,
 * for every dtype: Concat, Split and Gather. Each sees its tensors as
 * [outer, axis, inner] and copies one contiguous run of axis-entries *
 * inner elements per task: one input's slab of one outer index (Concat),
 * one output's (Split), one gathered row (Gather, where a row of an
 * embedding table is one task). */
#include <string.h>

#include "shape_kernel.h"

/* Outer and inner element counts around axis A of DIMS (rank R). */
static void shp_around(const int64_t *dims, int r, int a, size_t *outer, size_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < r; d++) {
        if (d < a)
            *outer *= (size_t)dims[d];
        else if (d > a)
            *inner *= (size_t)dims[d];
    }
}

/* Reads and normalises the axis attribute (default DEFAULT_AXIS; INT64_MIN:
 * required) against rank R. */
static pl_status *shp_axis(const pl_node_desc *node, int64_t default_axis, int r, int *out_axis)
{
    int64_t axis;
    SHP_TRY(cpu_attr_int(node, "axis", default_axis, &axis));
    if (axis == INT64_MIN)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "attribute 'axis' is missing");
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld is out of range for rank %d",
                         (long long)axis, r);
    *out_axis = (int)a;
    return NULL;
}

/* Grain for tasks of BYTES each. */
static size_t shp_grain(size_t bytes)
{
    return bytes >= SHP_GRAIN_BYTES ? 1 : SHP_GRAIN_BYTES / (bytes + 1);
}

/* ---- Concat --------------------------------------------------------------- */

typedef struct shp_concat_kernel {
    shp_kernel k;
    size_t outer;
    size_t row;     /* bytes of one output row: its axis * inner */
    size_t n_inputs;
    size_t *slab;   /* per input: bytes of its axis * inner */
    size_t *offset; /* per input: where its slab starts in a row */
} shp_concat_kernel;

typedef struct shp_concat_call {
    const shp_concat_kernel *k;
    const pl_run_args *args;
    char *y;
} shp_concat_call;

/* Tasks BEGIN..END (input i of outer index o, task o * inputs + i). The
 * indices step along instead of being divided out per task, and slabs of
 * one 4- or 8-byte element are moved as such: a Concat of 29 one-column
 * inputs over 64 rows (scikit-learn's PolynomialFeatures) spent 8 ns a
 * task in two divisions and a call to memcpy for 4 bytes. */
static void shp_concat_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_concat_call *c = arg;
    const shp_concat_kernel *k = c->k;
    size_t i = begin % k->n_inputs, o = begin / k->n_inputs;
    for (size_t t = begin; t < end; t++) {
        size_t n = k->slab[i];
        char *dst = c->y + o * k->row + k->offset[i];
        const char *src = shp_in(c->args, i) + o * n;
        cpu_copy_small(dst, src, n);
        if (++i == k->n_inputs) {
            i = 0;
            o++;
        }
    }
}

static pl_status *shp_concat_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)o, (void)req;
    const shp_concat_kernel *k = (const shp_concat_kernel *)kernel;
    shp_concat_call c = {.k = k, .args = args, .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, k->outer * k->n_inputs,
                           shp_grain(k->row / k->n_inputs), shp_concat_chunk, &c);
    return NULL;
}

pl_status *shp_build_concat(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    const int r = o->ndim;
    int a = 0;
    SHP_TRY(shp_axis(node, INT64_MIN, r, &a));
    int64_t total = 0;
    for (size_t i = 0; i < node->n_inputs; i++) {
        const pl_tensor *x = &node->inputs[i];
        bool ok = x->ndim == r && PL_DTYPE_EQ(x->dtype, o->dtype);
        for (int d = 0; d < r && ok; d++)
            ok = d == a || x->shape[d] == o->shape[d];
        if (!ok) {
            char tx[128], to[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu %s does not fit the output %s along axis %d (or differs "
                             "in dtype)", i, cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                             cpu_dims_text(o->shape, r, to, sizeof to), a);
        }
        total += x->shape[a];
    }
    if (total != o->shape[a])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "inputs sum to %lld along axis %d, the output has %lld",
                         (long long)total, a, (long long)o->shape[a]);
    size_t n = node->n_inputs;
    shp_concat_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + 2 * n * sizeof(size_t),
                                        shp_concat_write, (shp_kernel **)&k));
    k->slab = (size_t *)(void *)(k + 1);
    k->offset = k->slab + n;
    k->n_inputs = n;
    size_t inner, es = k->k.outs[0].esize;
    shp_around(o->shape, r, a, &k->outer, &inner);
    k->row = (size_t)o->shape[a] * inner * es;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        k->slab[i] = (size_t)node->inputs[i].shape[a] * inner * es;
        k->offset[i] = at;
        at += k->slab[i];
    }
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Split ---------------------------------------------------------------- */

typedef struct shp_split_kernel {
    shp_kernel k;
    size_t outer;
    size_t row;     /* bytes of one input row */
    size_t *slab;   /* per output: bytes of its axis * inner */
    size_t *offset; /* per output: where it starts in an input row */
} shp_split_kernel;

typedef struct shp_split_call {
    const char *x;
    char *y;
    size_t row, slab, offset;
} shp_split_call;

static void shp_split_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_split_call *c = arg;
    for (size_t o = begin; o < end; o++)
        memcpy(c->y + o * c->slab, c->x + o * c->row + c->offset, c->slab);
}

static pl_status *shp_split_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)req;
    const shp_split_kernel *k = (const shp_split_kernel *)kernel;
    shp_split_call c = {.x = shp_in(args, 0), .y = dst, .row = k->row, .slab = k->slab[o],
                        .offset = k->offset[o]};
    cpu_host->parallel_for(ctx->host_ctx, k->outer, shp_grain(c.slab), shp_split_chunk, &c);
    return NULL;
}

pl_status *shp_build_split(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    const int r = x->ndim;
    const char *op = node->op;
    int a = 0;
    SHP_TRY(shp_axis(node, 0, r, &a));
    int64_t split[SHP_MAX_INTS];
    size_t n_split;
    int state;
    bool v13 = shp_opset(node) >= 13;
    if (v13 && shp_input_present(node, 1) && !PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "split is not i64");
    if (node->n_outputs > SHP_MAX_INTS)
        return cpu_error(PL_CODE_UNSUPPORTED, op, "%zu outputs (at most %d)", node->n_outputs,
                         SHP_MAX_INTS);
    SHP_TRY(shp_ints_arg(node, v13 ? 1 : SIZE_MAX, v13 ? NULL : "split", split,
                                    &n_split, &state));
    if (state < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "split (input 1) is not a constant: the sizes must be known when the "
                         "kernel is made");
    if (state == 1 && n_split != node->n_outputs)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "split has %zu sizes for %zu outputs",
                         n_split, node->n_outputs);
    int64_t total = 0;
    for (size_t o = 0; o < node->n_outputs; o++) {
        const pl_tensor *y = &node->outputs[o];
        if (!shp_output_present(node, o))
            return cpu_error(PL_CODE_UNSUPPORTED, op, "output %zu is absent", o);
        bool ok = y->ndim == r && PL_DTYPE_EQ(y->dtype, x->dtype);
        for (int d = 0; d < r && ok; d++)
            ok = d == a ? (state != 1 || y->shape[d] == split[o]) : y->shape[d] == x->shape[d];
        if (!ok) {
            char tx[128], ty[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "output %zu %s is not a part of the input %s along axis %d", o,
                             cpu_dims_text(y->shape, y->ndim, ty, sizeof ty),
                             cpu_dims_text(x->shape, r, tx, sizeof tx), a);
        }
        total += y->shape[a];
    }
    if (total != x->shape[a])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "outputs sum to %lld along axis %d, the input has %lld",
                         (long long)total, a, (long long)x->shape[a]);
    size_t n = node->n_outputs;
    shp_split_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k + 2 * n * sizeof(size_t),
                                        shp_split_write, (shp_kernel **)&k));
    k->slab = (size_t *)(void *)(k + 1);
    k->offset = k->slab + n;
    size_t inner, es = k->k.in_esize;
    shp_around(x->shape, r, a, &k->outer, &inner);
    k->row = (size_t)x->shape[a] * inner * es;
    size_t at = 0;
    for (size_t o = 0; o < n; o++) {
        k->slab[o] = (size_t)node->outputs[o].shape[a] * inner * es;
        k->offset[o] = at;
        at += k->slab[o];
    }
    k->k.base.n_reads = 1;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Gather --------------------------------------------------------------- */

typedef struct shp_gather_kernel {
    shp_kernel k;
    size_t outer;
    int64_t axis_len;
    size_t n_idx;
    size_t row;     /* bytes of one gathered row: inner elements */
    bool idx64;
    int axis;
} shp_gather_kernel;

typedef struct shp_gather_call {
    const shp_gather_kernel *k;
    const char *x;
    const char *idx;
    char *y;
} shp_gather_call;

static inline int64_t shp_index(const char *idx, bool idx64, size_t i)
{
    if (idx64) {
        int64_t v;
        memcpy(&v, idx + i * 8, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, idx + i * 4, 4);
    return v;
}

static void shp_gather_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_gather_call *c = arg;
    const shp_gather_kernel *k = c->k;
    const size_t row = k->row;
    size_t o = begin / k->n_idx, j = begin % k->n_idx;
    for (size_t t = begin; t < end; t++) {
        int64_t i = shp_index(c->idx, k->idx64, j);
        if (i < 0)
            i += k->axis_len;
        char *dst = c->y + t * row;
        const char *src = c->x + (o * (size_t)k->axis_len + (size_t)i) * row;
        /* (columns of a 2-D table, an ArrayFeatureExtractor's: one element
         * a row) */
        cpu_copy_small(dst, src, row);
        if (++j == k->n_idx) {
            j = 0;
            o++;
        }
    }
}

static pl_status *shp_gather_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)o, (void)req;
    const shp_gather_kernel *k = (const shp_gather_kernel *)kernel;
    const char *idx = shp_in(args, 1);
    for (size_t j = 0; j < k->n_idx; j++) {
        int64_t i = shp_index(idx, k->idx64, j);
        if (i < -k->axis_len || i >= k->axis_len)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "index %lld (element %zu of the indices) is out of range for axis "
                             "%d of size %lld", (long long)i, j, k->axis, (long long)k->axis_len);
    }
    shp_gather_call c = {.k = k, .x = shp_in(args, 0), .idx = idx, .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, k->outer * k->n_idx, shp_grain(k->row),
                           shp_gather_chunk, &c);
    return NULL;
}

pl_status *shp_build_gather(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *ix = &node->inputs[1], *o = &node->outputs[0];
    const char *op = node->op;
    const int r = x->ndim;
    if (r < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "data must have rank >= 1");
    int a = 0;
    SHP_TRY(shp_axis(node, 0, r, &a));
    bool idx64 = PL_DTYPE_EQ(ix->dtype, PL_DTYPE_I64);
    if (!idx64 && !PL_DTYPE_EQ(ix->dtype, PL_DTYPE_I32))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "indices must be i64 or i32");
    SHP_TRY(shp_same_dtype(node));
    int64_t want[2 * CPU_MAX_RANK];
    int n = 0;
    for (int d = 0; d < r; d++) {
        if (d != a) {
            want[n++] = x->shape[d];
            continue;
        }
        for (int q = 0; q < ix->ndim; q++)
            want[n++] = ix->shape[q];
    }
    bool ok = o->ndim == n;
    for (int d = 0; d < n && ok; d++)
        ok = o->shape[d] == want[d];
    if (!ok) {
        char tw[256], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the output %s is not the gathered %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(want, n, tw, sizeof tw));
    }
    shp_gather_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_gather_write,
                                        (shp_kernel **)&k));
    size_t inner;
    shp_around(x->shape, r, a, &k->outer, &inner);
    k->axis_len = x->shape[a];
    k->n_idx = cpu_elements(ix->shape, ix->ndim);
    k->row = inner * k->k.in_esize;
    k->idx64 = idx64;
    k->axis = a;
    *out_kernel = &k->k.base;
    return NULL;
}
