/* index.c — the cpu module's index family: its op table and the kernels
 * that move elements by index or by a fixed rearrangement, for every dtype:
 * GatherElements, GatherND, ScatterElements (and the deprecated Scatter)
 * and ScatterND with their reductions, OneHot, EyeLike, DepthToSpace,
 * SpaceToDepth, CastLike, ReverseSequence and MaxUnpool. TopK and Hardmax
 * live in topk.c, Einsum in einsum.c, Det in det.c.
 *
 * Indices are data: every kernel checks all of them before it writes, so a
 * run with an index out of range fails with a message naming the index and
 * leaves its output untouched. Negative indices count from the end. The
 * kernels are shape-family kernels (shp_run drives them). */
#include <string.h>

#include "index_kernel.h"

#define IX_ANY CPU_OP_ANY_DTYPE

static pl_status *ix_build_gather_elements(pl_module_ctx *ctx, const pl_node_desc *node,
                                           pl_kernel **out_kernel);
static pl_status *ix_build_gather_nd(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel);
static pl_status *ix_build_scatter_elements(pl_module_ctx *ctx, const pl_node_desc *node,
                                            pl_kernel **out_kernel);
static pl_status *ix_build_scatter_nd(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel);
static pl_status *ix_build_onehot(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);
static pl_status *ix_build_eyelike(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel);
static pl_status *ix_build_blocks(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);
static pl_status *ix_build_castlike(pl_module_ctx *ctx, const pl_node_desc *node,
                                    pl_kernel **out_kernel);
static pl_status *ix_build_reverse_sequence(pl_module_ctx *ctx, const pl_node_desc *node,
                                            pl_kernel **out_kernel);
static pl_status *ix_build_max_unpool(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel);
static pl_status *ix_build_col2im(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_index[] = {
    {"GatherElements", ix_build_gather_elements, 2, 2, 0, IX_ANY},
    {"GatherND", ix_build_gather_nd, 2, 2, 0, IX_ANY},
    {"ScatterElements", ix_build_scatter_elements, 3, 3, 0, IX_ANY},
    {"Scatter", ix_build_scatter_elements, 3, 3, 0, IX_ANY},
    {"ScatterND", ix_build_scatter_nd, 3, 3, 0, IX_ANY},
    {"OneHot", ix_build_onehot, 3, 3, 0, IX_ANY},
    {"EyeLike", ix_build_eyelike, 1, 1, 0, IX_ANY},
    {"DepthToSpace", ix_build_blocks, 1, 1, 0, IX_ANY},
    {"SpaceToDepth", ix_build_blocks, 1, 1, 0, IX_ANY},
    {"CastLike", ix_build_castlike, 2, 2, 0, IX_ANY},
    {"TopK", ix_build_topk, 1, 2, 0, IX_ANY | CPU_OP_MULTI_OUTPUT},
    {"Hardmax", ix_build_hardmax, 1, 1, 0, IX_ANY},
    {"Einsum", ix_build_einsum, 1, SIZE_MAX, 0, IX_ANY},
    {"Det", ix_build_det, 1, 1, 0, IX_ANY},
    {"ReverseSequence", ix_build_reverse_sequence, 2, 2, 0, IX_ANY},
    {"MaxUnpool", ix_build_max_unpool, 2, 3, 0, IX_ANY},
    {"Col2Im", ix_build_col2im, 3, 3, 0, IX_ANY},
    {NULL, NULL, 0, 0, 0, 0},
};

/* ---- shared helpers --------------------------------------------------------- */

pl_status *ix_index_dtype(const pl_node_desc *node, size_t i, bool *out_64)
{
    pl_dtype dt = node->inputs[i].dtype;
    *out_64 = PL_DTYPE_EQ(dt, PL_DTYPE_I64);
    if (*out_64 || PL_DTYPE_EQ(dt, PL_DTYPE_I32))
        return NULL;
    return cpu_error(PL_CODE_UNSUPPORTED, node->op, "input %zu (indices) must be i64 or i32", i);
}

pl_status *ix_axis(const pl_node_desc *node, int64_t default_axis, int r, int *out_axis)
{
    int64_t axis;
    SHP_TRY(cpu_attr_int(node, "axis", default_axis, &axis));
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "axis %lld is out of range for rank %d", (long long)axis, r);
    *out_axis = (int)a;
    return NULL;
}

void ix_strides(const int64_t *dims, int r, int64_t *st)
{
    int64_t step = 1;
    for (int d = r - 1; d >= 0; d--) {
        st[d] = step;
        step *= dims[d];
    }
}

/* A refusal unless tensors A and B of NODE (descriptions) have one shape. */
static pl_status *ix_same_shape(const pl_node_desc *node, const pl_tensor *a, const char *an,
                                const pl_tensor *b, const char *bn)
{
    bool ok = a->ndim == b->ndim;
    for (int d = 0; ok && d < a->ndim; d++)
        ok = a->shape[d] == b->shape[d];
    if (ok)
        return NULL;
    char ta[128], tb[128];
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s %s and %s %s differ in shape", an,
                     cpu_dims_text(a->shape, a->ndim, ta, sizeof ta), bn,
                     cpu_dims_text(b->shape, b->ndim, tb, sizeof tb));
}

/* Checks N indices of an index tensor at P: each in [-LEN, LEN). */
static pl_status *ix_check_range(const char *op, const char *p, bool idx64, size_t n,
                                 int64_t len, int axis)
{
    for (size_t j = 0; j < n; j++) {
        int64_t i = ix_index_at(p, idx64, j);
        if (i < -len || i >= len)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "index %lld (element %zu of the indices) is out of range for axis "
                             "%d of size %lld", (long long)i, j, axis, (long long)len);
    }
    return NULL;
}

/* Copies input 0 into DST unless the run is in place (one buffer). */
static void ix_copy_data(const shp_kernel *k, const pl_run_args *args, void *dst,
                         pl_output_request req)
{
    const char *x = shp_in(args, 0);
    if (req != PL_REQ_INPLACE && x != dst)
        memcpy(dst, x, k->outs[0].elements * k->outs[0].esize);
}

/* ---- reductions of the scatters --------------------------------------------- */

typedef enum ix_reduce { IX_NONE = 0, IX_ADD, IX_MUL, IX_MAX, IX_MIN } ix_reduce;

/* The reduction attribute of NODE. */
static pl_status *ix_reduction(const pl_node_desc *node, ix_reduce *out)
{
    char r[16];
    SHP_TRY(shp_attr_string(node, "reduction", "none", r, sizeof r));
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    for (int i = 0; i < 5; i++)
        if (strcmp(r, names[i]) == 0) {
            *out = (ix_reduce)i;
            return NULL;
        }
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "reduction '%s' is not supported", r);
}

#define IX_COMBINE(type)                                  \
    do {                                                  \
        type a, b;                                        \
        memcpy(&a, dst, sizeof a);                        \
        memcpy(&b, src, sizeof b);                        \
        switch (red) {                                    \
        case IX_ADD: a = (type)(a + b); break;            \
        case IX_MUL: a = (type)(a * b); break;            \
        case IX_MAX: a = b > a ? b : a; break;            \
        case IX_MIN: a = b < a ? b : a; break;            \
        default: a = b; break;                            \
        }                                                 \
        memcpy(dst, &a, sizeof a);                        \
    } while (0)

/* Integer sums and products wrap, as two's-complement hardware does. */
#define IX_COMBINE_INT(type, utype)                                    \
    do {                                                               \
        type a, b;                                                     \
        memcpy(&a, dst, sizeof a);                                     \
        memcpy(&b, src, sizeof b);                                     \
        switch (red) {                                                 \
        case IX_ADD: a = (type)(utype)((utype)a + (utype)b); break;    \
        case IX_MUL: a = (type)(utype)((utype)a * (utype)b); break;    \
        case IX_MAX: a = b > a ? b : a; break;                         \
        case IX_MIN: a = b < a ? b : a; break;                         \
        default: a = b; break;                                         \
        }                                                              \
        memcpy(dst, &a, sizeof a);                                     \
    } while (0)

/* *DST = *DST (red) *SRC for one element of DT. */
static void ix_combine(pl_dtype dt, ix_reduce red, char *dst, const char *src)
{
    size_t es = pl_dtype_size(dt);
    if (red == IX_NONE) {
        memcpy(dst, src, es);
        return;
    }
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
        IX_COMBINE(float);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64)) {
        IX_COMBINE(double);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I64)) {
        IX_COMBINE_INT(int64_t, uint64_t);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I32)) {
        IX_COMBINE_INT(int32_t, uint32_t);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_I8)) {
        IX_COMBINE_INT(int8_t, uint8_t);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_U8)) {
        IX_COMBINE_INT(uint8_t, uint8_t);
    } else if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) {
        /* add is or, mul is and; max and min agree with them. */
        uint8_t a = *(const uint8_t *)dst != 0, b = *(const uint8_t *)src != 0;
        *(uint8_t *)dst = red == IX_ADD || red == IX_MAX ? (a | b) : (a & b);
    } else {
        /* f16, bf16: in double, rounded once. */
        double a, b;
        shp_convert(dt, dst, PL_DTYPE_F64, &a, 1);
        shp_convert(dt, src, PL_DTYPE_F64, &b, 1);
        double v = red == IX_ADD ? a + b : red == IX_MUL ? a * b
                 : red == IX_MAX ? (b > a ? b : a) : (b < a ? b : a);
        shp_convert(PL_DTYPE_F64, &v, dt, dst, 1);
    }
}

/* ---- GatherElements, ScatterElements ---------------------------------------- */

/* Both walk the indices' shape: element t of the indices addresses the
 * data (or output) at its own multi-index with the axis entry replaced by
 * the index. */
typedef struct ix_elements_kernel {
    shp_kernel k;
    int r, axis;
    int64_t idx_dims[CPU_MAX_RANK];
    int64_t data_st[CPU_MAX_RANK]; /* the data's strides, 0 on the axis */
    int64_t axis_st, axis_len;
    size_t n_idx;
    bool idx64;
    ix_reduce red;
} ix_elements_kernel;

typedef struct ix_gather_call {
    const ix_elements_kernel *k;
    const char *x, *idx;
    char *y;
} ix_gather_call;

static void ix_gather_elements_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const ix_gather_call *c = arg;
    const ix_elements_kernel *k = c->k;
    size_t es = k->k.in_esize;
    for (size_t t = begin; t < end; t++) {
        int64_t i = ix_index_at(c->idx, k->idx64, t);
        if (i < 0)
            i += k->axis_len;
        int64_t off = ix_offset(t, k->r, k->idx_dims, k->data_st) + i * k->axis_st;
        memcpy(c->y + t * es, c->x + (size_t)off * es, es);
    }
}

static pl_status *ix_gather_elements_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                           const pl_run_args *args, size_t o, void *dst,
                                           pl_output_request req)
{
    (void)o, (void)req;
    const ix_elements_kernel *k = (const ix_elements_kernel *)kernel;
    const char *idx = shp_in(args, 1);
    SHP_TRY(ix_check_range(kernel->base.op, idx, k->idx64, k->n_idx, k->axis_len, k->axis));
    ix_gather_call c = {.k = k, .x = shp_in(args, 0), .idx = idx, .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, k->n_idx, 16384, ix_gather_elements_chunk, &c);
    return NULL;
}

static pl_status *ix_scatter_elements_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                            const pl_run_args *args, size_t o, void *dst,
                                            pl_output_request req)
{
    (void)ctx, (void)o;
    const ix_elements_kernel *k = (const ix_elements_kernel *)kernel;
    const char *idx = shp_in(args, 1), *upd = shp_in(args, 2);
    SHP_TRY(ix_check_range(kernel->base.op, idx, k->idx64, k->n_idx, k->axis_len, k->axis));
    ix_copy_data(kernel, args, dst, req);
    size_t es = kernel->outs[0].esize;
    pl_dtype dt = kernel->outs[0].dtype;
    /* In order: with duplicate indices the last update wins (or all of
     * them combine, with a reduction). Without one, the offsets of the
     * indices' positions advance as an odometer and each element is one
     * copy of its size (torchvision's MultiScaleRoIAlign scatters every
     * level's 150 x 256 x 7 x 7 results: 15% of Faster R-CNN went to the
     * per-element division and call). */
    if (k->red == IX_NONE) {
        int64_t cnt[CPU_MAX_RANK] = {0}, base = 0;
        char *d = dst;
        for (size_t t = 0; t < k->n_idx; t++) {
            int64_t i = ix_index_at(idx, k->idx64, t);
            if (i < 0)
                i += k->axis_len;
            char *at = d + (size_t)(base + i * k->axis_st) * es;
            const char *from = upd + t * es;
            cpu_copy_small(at, from, es);
            for (int dd = k->r - 1; dd >= 0; dd--) {
                base += k->data_st[dd];
                if (++cnt[dd] < k->idx_dims[dd])
                    break;
                base -= cnt[dd] * k->data_st[dd];
                cnt[dd] = 0;
            }
        }
        return NULL;
    }
    for (size_t t = 0; t < k->n_idx; t++) {
        int64_t i = ix_index_at(idx, k->idx64, t);
        if (i < 0)
            i += k->axis_len;
        int64_t off = ix_offset(t, k->r, k->idx_dims, k->data_st) + i * k->axis_st;
        ix_combine(dt, k->red, (char *)dst + (size_t)off * es, upd + t * es);
    }
    return NULL;
}

/* The kernel of both: SCATTER says whether the node is a scatter (its
 * data and output are input 0 and the updates input 2). */
static pl_status *ix_build_elements(pl_module_ctx *ctx, const pl_node_desc *node, bool scatter,
                                    pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *ix = &node->inputs[1], *o = &node->outputs[0];
    const char *op = node->op;
    const int r = x->ndim;
    if (r < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "data must have rank >= 1");
    int a = 0;
    SHP_TRY(ix_axis(node, 0, r, &a));
    bool idx64;
    SHP_TRY(ix_index_dtype(node, 1, &idx64));
    SHP_TRY(shp_same_dtype(node));
    if (ix->ndim != r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "indices have rank %d, data %d",
                         (int)ix->ndim, r);
    for (int d = 0; d < r; d++)
        if (d != a && ix->shape[d] > x->shape[d]) {
            char ti[128], tx[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "indices %s exceed data %s in dimension %d",
                             cpu_dims_text(ix->shape, r, ti, sizeof ti),
                             cpu_dims_text(x->shape, r, tx, sizeof tx), d);
        }
    ix_reduce red = IX_NONE;
    if (scatter) {
        SHP_TRY(ix_same_shape(node, ix, "indices", &node->inputs[2], "updates"));
        SHP_TRY(ix_same_shape(node, x, "data", o, "output"));
        if (!PL_DTYPE_EQ(node->inputs[2].dtype, x->dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "updates and data differ in dtype");
        SHP_TRY(ix_reduction(node, &red));
    } else {
        SHP_TRY(ix_same_shape(node, ix, "indices", o, "output"));
    }
    ix_elements_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k,
                             scatter ? ix_scatter_elements_write : ix_gather_elements_write,
                             (shp_kernel **)&k));
    k->r = r;
    k->axis = a;
    memcpy(k->idx_dims, ix->shape, (size_t)r * sizeof(int64_t));
    ix_strides(x->shape, r, k->data_st);
    k->axis_st = k->data_st[a];
    k->data_st[a] = 0;
    k->axis_len = x->shape[a];
    k->n_idx = cpu_elements(ix->shape, r);
    k->idx64 = idx64;
    k->red = red;
    k->k.base.inplace_ok = scatter;
    *out_kernel = &k->k.base;
    return NULL;
}

static pl_status *ix_build_gather_elements(pl_module_ctx *ctx, const pl_node_desc *node,
                                           pl_kernel **out_kernel)
{
    return ix_build_elements(ctx, node, false, out_kernel);
}

static pl_status *ix_build_scatter_elements(pl_module_ctx *ctx, const pl_node_desc *node,
                                            pl_kernel **out_kernel)
{
    return ix_build_elements(ctx, node, true, out_kernel);
}

/* ---- GatherND, ScatterND ------------------------------------------------------ */

/* Data [B..., X..., S...] (B the batch dims, X the LAST indexed dims, S
 * the slice); indices [B..., M..., LAST]. Tuple (b, m) addresses the
 * slice at data[b, idx(b, m), :]. */
typedef struct ix_nd_kernel {
    shp_kernel k;
    size_t n_batch, n_tuples; /* batches, tuples per batch */
    size_t last;
    int64_t idx_dims[CPU_MAX_RANK]; /* the data's indexed dims */
    int64_t idx_st[CPU_MAX_RANK];   /* their strides, in slices */
    size_t batch_slices;            /* slices per batch of the data */
    size_t slice;                   /* elements of one slice */
    ix_reduce red;
} ix_nd_kernel;

/* The slice offset (in slices) of tuple T (of all batches), or a status
 * for an index out of range. */
static pl_status *ix_nd_tuple(const ix_nd_kernel *k, const char *idx, size_t t,
                              size_t *out_slice)
{
    size_t b = t / k->n_tuples;
    int64_t off = 0;
    for (size_t j = 0; j < k->last; j++) {
        int64_t i = ix_index_at(idx, true, t * k->last + j), len = k->idx_dims[j];
        if (i < -len || i >= len)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->k.base.op,
                             "index %lld (element %zu of the indices) is out of range for a "
                             "dimension of size %lld", (long long)i, t * k->last + j,
                             (long long)len);
        off += (i < 0 ? i + len : i) * k->idx_st[j];
    }
    *out_slice = b * k->batch_slices + (size_t)off;
    return NULL;
}

static pl_status *ix_gather_nd_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                     const pl_run_args *args, size_t o, void *dst,
                                     pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const ix_nd_kernel *k = (const ix_nd_kernel *)kernel;
    const char *idx = shp_in(args, 1), *x = shp_in(args, 0);
    size_t row = k->slice * kernel->in_esize, n = k->n_batch * k->n_tuples, s;
    for (size_t t = 0; t < n; t++)
        SHP_TRY(ix_nd_tuple(k, idx, t, &s));
    for (size_t t = 0; t < n; t++) {
        ix_nd_tuple(k, idx, t, &s);
        memcpy((char *)dst + t * row, x + s * row, row);
    }
    return NULL;
}

static pl_status *ix_scatter_nd_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                      const pl_run_args *args, size_t o, void *dst,
                                      pl_output_request req)
{
    (void)ctx, (void)o;
    const ix_nd_kernel *k = (const ix_nd_kernel *)kernel;
    const char *idx = shp_in(args, 1), *upd = shp_in(args, 2);
    size_t es = kernel->outs[0].esize, row = k->slice * es, n = k->n_tuples, s;
    pl_dtype dt = kernel->outs[0].dtype;
    for (size_t t = 0; t < n; t++)
        SHP_TRY(ix_nd_tuple(k, idx, t, &s));
    ix_copy_data(kernel, args, dst, req);
    for (size_t t = 0; t < n; t++) {
        ix_nd_tuple(k, idx, t, &s);
        char *y = (char *)dst + s * row;
        const char *u = upd + t * row;
        if (k->red == IX_NONE)
            memcpy(y, u, row);
        else
            for (size_t e = 0; e < k->slice; e++)
                ix_combine(dt, k->red, y + e * es, u + e * es);
    }
    return NULL;
}

static pl_status *ix_build_nd(pl_module_ctx *ctx, const pl_node_desc *node, bool scatter,
                              pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *ix = &node->inputs[1], *o = &node->outputs[0];
    const char *op = node->op;
    int64_t b = 0;
    if (!scatter)
        SHP_TRY(cpu_attr_int(node, "batch_dims", 0, &b));
    if (!PL_DTYPE_EQ(ix->dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "indices must be i64");
    SHP_TRY(shp_same_dtype(node));
    const int r = x->ndim, q = ix->ndim;
    if (r < 1 || q < 1 || b < 0 || b >= r || b >= q)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "data rank %d, indices rank %d and batch_dims %lld do not fit", r, q,
                         (long long)b);
    int64_t last = ix->shape[q - 1];
    if (last < 1 || last > r - b)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the indices' last dim %lld must be in [1, %lld]", (long long)last,
                         (long long)(r - b));
    int64_t want[2 * CPU_MAX_RANK];
    int n = 0;
    for (int d = 0; d < q - 1; d++)
        want[n++] = ix->shape[d];
    for (int d = (int)(b + last); d < r; d++)
        want[n++] = x->shape[d];
    bool ok = true;
    for (int d = 0; d < b; d++)
        ok = ok && ix->shape[d] == x->shape[d];
    const pl_tensor *shaped = scatter ? &node->inputs[2] : o;
    ok = ok && shaped->ndim == n;
    for (int d = 0; ok && d < n; d++)
        ok = shaped->shape[d] == want[d];
    if (!ok) {
        char tw[256], ts[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "the %s %s are not of shape %s",
                         scatter ? "updates" : "output",
                         cpu_dims_text(shaped->shape, shaped->ndim, ts, sizeof ts),
                         cpu_dims_text(want, n, tw, sizeof tw));
    }
    ix_reduce red = IX_NONE;
    if (scatter) {
        SHP_TRY(ix_same_shape(node, x, "data", o, "output"));
        if (!PL_DTYPE_EQ(node->inputs[2].dtype, x->dtype))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "updates and data differ in dtype");
        SHP_TRY(ix_reduction(node, &red));
    }
    ix_nd_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k,
                             scatter ? ix_scatter_nd_write : ix_gather_nd_write,
                             (shp_kernel **)&k));
    k->n_batch = cpu_elements(x->shape, (int32_t)b);
    k->n_tuples = cpu_elements(ix->shape + b, (int32_t)(q - 1 - b));
    k->last = (size_t)last;
    k->slice = cpu_elements(x->shape + b + last, (int32_t)(r - b - last));
    memcpy(k->idx_dims, x->shape + b, (size_t)last * sizeof(int64_t));
    ix_strides(k->idx_dims, (int)last, k->idx_st);
    k->batch_slices = cpu_elements(k->idx_dims, (int32_t)last);
    k->red = red;
    k->k.base.inplace_ok = scatter;
    *out_kernel = &k->k.base;
    return NULL;
}

static pl_status *ix_build_gather_nd(pl_module_ctx *ctx, const pl_node_desc *node,
                                     pl_kernel **out_kernel)
{
    return ix_build_nd(ctx, node, false, out_kernel);
}

static pl_status *ix_build_scatter_nd(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel)
{
    return ix_build_nd(ctx, node, true, out_kernel);
}

/* ---- OneHot ----------------------------------------------------------------- */

/* Output [outer, depth, inner] around the axis; indices [outer, inner]. */
typedef struct ix_onehot_kernel {
    shp_kernel k;
    size_t outer, inner;
    int64_t depth;
    pl_dtype idx_dt, depth_dt;
} ix_onehot_kernel;

static pl_status *ix_onehot_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const ix_onehot_kernel *k = (const ix_onehot_kernel *)kernel;
    double depth = ix_load(k->depth_dt, shp_in(args, 1), 0);
    if (!(depth >= (double)k->depth && depth < (double)k->depth + 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                         "depth %g at run time, but the output has %lld classes", depth,
                         (long long)k->depth);
    const char *values = shp_in(args, 2), *idx = shp_in(args, 0);
    size_t es = kernel->outs[0].esize;
    char *y = dst;
    for (size_t e = 0, n = k->outer * (size_t)k->depth * k->inner; e < n; e++)
        memcpy(y + e * es, values, es);
    for (size_t t = 0; t < k->outer * k->inner; t++) {
        double v = ix_load(k->idx_dt, idx, t);
        if (!(v > -(double)k->depth - 1 && v < (double)k->depth))
            continue; /* out of range: all off, as ONNX says */
        int64_t i = (int64_t)v;
        if (i < 0)
            i += k->depth;
        if (i < 0 || i >= k->depth)
            continue;
        size_t oi = t / k->inner, ii = t % k->inner;
        memcpy(y + ((oi * (size_t)k->depth + (size_t)i) * k->inner + ii) * es, values + es, es);
    }
    return NULL;
}

static pl_status *ix_build_onehot(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const pl_tensor *ix = &node->inputs[0], *dp = &node->inputs[1], *v = &node->inputs[2];
    const pl_tensor *o = &node->outputs[0];
    const char *op = node->op;
    if (cpu_elements(dp->shape, dp->ndim) != 1 || dp->ndim > 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "depth must be one value");
    if (v->ndim != 1 || v->shape[0] != 2 || !PL_DTYPE_EQ(v->dtype, o->dtype))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "values must be [off, on] of the output's dtype");
    if (PL_DTYPE_EQ(ix->dtype, PL_DTYPE_BOOL) || PL_DTYPE_EQ(dp->dtype, PL_DTYPE_BOOL))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "indices and depth must be numbers");
    int a = 0;
    SHP_TRY(ix_axis(node, -1, ix->ndim + 1, &a));
    bool ok = o->ndim == ix->ndim + 1;
    for (int d = 0, s = 0; ok && d < o->ndim; d++)
        ok = d == a || o->shape[d] == ix->shape[s++];
    if (!ok || o->shape[a] < 1) {
        char ti[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the output %s is not the indices %s with classes at axis %d",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(ix->shape, ix->ndim, ti, sizeof ti), a);
    }
    ix_onehot_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_onehot_write, (shp_kernel **)&k));
    k->outer = cpu_elements(ix->shape, a);
    k->inner = cpu_elements(ix->shape + a, ix->ndim - a);
    k->depth = o->shape[a];
    k->idx_dt = ix->dtype;
    k->depth_dt = dp->dtype;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- EyeLike ------------------------------------------------------------------ */

typedef struct ix_eyelike_kernel {
    shp_kernel k;
    int64_t rows, cols, diag;
} ix_eyelike_kernel;

static pl_status *ix_eyelike_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)ctx, (void)args, (void)o, (void)req;
    const ix_eyelike_kernel *k = (const ix_eyelike_kernel *)kernel;
    pl_dtype dt = kernel->outs[0].dtype;
    size_t es = kernel->outs[0].esize;
    memset(dst, 0, kernel->outs[0].elements * es);
    for (int64_t i = 0; i < k->rows; i++) {
        int64_t j = i + k->diag;
        if (j >= 0 && j < k->cols)
            ix_store(dt, dst, (size_t)(i * k->cols + j), 1.0);
    }
    return NULL;
}

static pl_status *ix_build_eyelike(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    if (x->ndim != 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the input must be 2-D");
    SHP_TRY(ix_same_shape(node, x, "input", &node->outputs[0], "output"));
    ix_eyelike_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_eyelike_write, (shp_kernel **)&k));
    k->rows = x->shape[0];
    k->cols = x->shape[1];
    pl_status *st = cpu_attr_int(node, "k", 0, &k->diag);
    if (st != NULL) {
        cpu_kernel_release(ctx, &k->k.base);
        return st;
    }
    k->k.base.n_reads = 0; /* only the shape matters */
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- DepthToSpace, SpaceToDepth --------------------------------------------- */

/* Both are one strided copy of rank 6 (the reshape-transpose-reshape of
 * ONNX's definition). */
typedef struct ix_blocks_kernel {
    shp_kernel k;
    shp_strided plan;
} ix_blocks_kernel;

static pl_status *ix_blocks_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)o, (void)req;
    shp_strided_run(ctx, &((const ix_blocks_kernel *)kernel)->plan, shp_in(args, 0), dst);
    return NULL;
}

static pl_status *ix_build_blocks(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    bool to_space = strcmp(op, "DepthToSpace") == 0;
    int64_t b;
    char mode[8];
    SHP_TRY(cpu_attr_int(node, "blocksize", 0, &b));
    SHP_TRY(shp_attr_string(node, "mode", "DCR", mode, sizeof mode));
    bool crd = strcmp(mode, "CRD") == 0;
    if (!crd && strcmp(mode, "DCR") != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "mode '%s' is neither DCR nor CRD", mode);
    SHP_TRY(shp_same_dtype(node));
    if (x->ndim != 4 || o->ndim != 4 || b < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "needs a 4-D input and output and a blocksize >= 1");
    int64_t n = x->shape[0], c = x->shape[1], h = x->shape[2], w = x->shape[3];
    int64_t want[4];
    if (to_space)
        want[0] = n, want[1] = c / (b * b), want[2] = h * b, want[3] = w * b;
    else
        want[0] = n, want[1] = c * b * b, want[2] = h / b, want[3] = w / b;
    bool ok = to_space ? c % (b * b) == 0 : h % b == 0 && w % b == 0;
    for (int d = 0; ok && d < 4; d++)
        ok = o->shape[d] == want[d];
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "input %s does not rearrange to output %s with blocksize %lld",
                         cpu_dims_text(x->shape, 4, tx, sizeof tx),
                         cpu_dims_text(o->shape, 4, to, sizeof to), (long long)b);
    }
    ix_blocks_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_blocks_write, (shp_kernel **)&k));
    shp_strided *p = &k->plan;
    int64_t hw = h * w, chw = c * hw;
    p->ndim = 6;
    if (to_space) {
        /* Output walked as [n, c', h, b1, w, b2]. DCR: input channel
         * (b1 * b + b2) * c' + c; CRD: c * b² + b1 * b + b2. */
        int64_t cc = c / (b * b);
        int64_t dims[6] = {n, cc, h, b, w, b};
        int64_t st_dcr[6] = {chw, hw, w, b * cc * hw, 1, cc * hw};
        int64_t st_crd[6] = {chw, b * b * hw, w, b * hw, 1, hw};
        memcpy(p->dims, dims, sizeof dims);
        memcpy(p->stride, crd ? st_crd : st_dcr, sizeof st_dcr);
    } else if (!crd) {
        /* Output walked as [n, b1, b2, c, h', w']: input
         * [n, c, h' * b + b1, w' * b + b2]. */
        int64_t dims[6] = {n, b, b, c, h / b, w / b};
        int64_t st[6] = {chw, w, 1, hw, b * w, b};
        memcpy(p->dims, dims, sizeof dims);
        memcpy(p->stride, st, sizeof st);
    } else {
        /* CRD (SpaceToDepth 28): output channel c * b² + b1 * b + b2, the
         * output walked as [n, c, b1, b2, h', w']. */
        int64_t dims[6] = {n, c, b, b, h / b, w / b};
        int64_t st[6] = {chw, hw, w, 1, b * w, b};
        memcpy(p->dims, dims, sizeof dims);
        memcpy(p->stride, st, sizeof st);
    }
    p->base = 0;
    p->esize = k->k.in_esize;
    shp_strided_collapse(p);
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- CastLike ---------------------------------------------------------------- */

typedef struct ix_castlike_kernel {
    shp_kernel k;
    pl_dtype from;
} ix_castlike_kernel;

static pl_status *ix_castlike_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                    const pl_run_args *args, size_t o, void *dst,
                                    pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    shp_convert(((const ix_castlike_kernel *)kernel)->from, shp_in(args, 0),
                kernel->outs[0].dtype, dst, kernel->outs[0].elements);
    return NULL;
}

/* CastLike: Cast to the dtype of input 1, whose values are not read. */
static pl_status *ix_build_castlike(pl_module_ctx *ctx, const pl_node_desc *node,
                                    pl_kernel **out_kernel)
{
    if (!PL_DTYPE_EQ(node->inputs[1].dtype, node->outputs[0].dtype))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "the output's dtype is not the one of input 1");
    SHP_TRY(ix_same_shape(node, &node->inputs[0], "input", &node->outputs[0], "output"));
    ix_castlike_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_castlike_write, (shp_kernel **)&k));
    k->from = node->inputs[0].dtype;
    k->k.base.n_reads = 1;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- ReverseSequence ---------------------------------------------------------- */

/* X seen as [t0, b0, inner] or [b0, t0, inner] (time, batch first or
 * second): entry (b, t) with t < lens[b] comes from (b, lens[b] - 1 - t). */
typedef struct ix_reverse_kernel {
    shp_kernel k;
    size_t time, batch, inner;
    bool batch_first;
} ix_reverse_kernel;

static pl_status *ix_reverse_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const ix_reverse_kernel *k = (const ix_reverse_kernel *)kernel;
    const int64_t *lens = (const int64_t *)(const void *)shp_in(args, 1);
    for (size_t b = 0; b < k->batch; b++)
        if (lens[b] < 0 || (uint64_t)lens[b] > k->time)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "sequence length %lld (batch entry %zu) is outside [0, %zu]",
                             (long long)lens[b], b, k->time);
    const char *x = shp_in(args, 0);
    size_t row = k->inner * kernel->in_esize;
    for (size_t b = 0; b < k->batch; b++)
        for (size_t t = 0; t < k->time; t++) {
            size_t from = t < (size_t)lens[b] ? (size_t)lens[b] - 1 - t : t;
            size_t yo = k->batch_first ? b * k->time + t : t * k->batch + b;
            size_t xo = k->batch_first ? b * k->time + from : from * k->batch + b;
            memcpy((char *)dst + yo * row, x + xo * row, row);
        }
    return NULL;
}

static pl_status *ix_build_reverse_sequence(pl_module_ctx *ctx, const pl_node_desc *node,
                                            pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *l = &node->inputs[1];
    int64_t ba, ta;
    SHP_TRY(cpu_attr_int(node, "batch_axis", 1, &ba));
    SHP_TRY(cpu_attr_int(node, "time_axis", 0, &ta));
    SHP_TRY(shp_same_dtype(node));
    if (x->ndim < 2 || !((ba == 0 && ta == 1) || (ba == 1 && ta == 0)) ||
        !PL_DTYPE_EQ(l->dtype, PL_DTYPE_I64) || l->ndim != 1 || l->shape[0] != x->shape[ba])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "needs rank >= 2, batch and time axes 0 and 1, and one i64 length per "
                         "batch entry");
    ix_reverse_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_reverse_write, (shp_kernel **)&k));
    k->time = (size_t)x->shape[ta];
    k->batch = (size_t)x->shape[ba];
    k->inner = cpu_elements(x->shape + 2, x->ndim - 2);
    k->batch_first = ba == 0;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- MaxUnpool ------------------------------------------------------------------ */

/* Zeros, and X[e] where index I[e] points. The indices are MaxPool's: flat
 * positions in [N, C, inferred...], the shape the attributes give
 * ((in - 1) * stride - pads + kernel). An output_shape larger than that
 * keeps every position's coordinates and pads at the end, as ONNX's test
 * data has it (with output_shape, ONNX says, the pads are generated). With
 * duplicate indices the last wins. */
typedef struct ix_unpool_kernel {
    shp_kernel k;
    int r;
    int64_t grid[CPU_MAX_RANK];   /* [N, C, inferred...] */
    int64_t out_st[CPU_MAX_RANK]; /* the output's strides */
    int64_t out_dims[CPU_MAX_RANK];
} ix_unpool_kernel;

static pl_status *ix_unpool_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const ix_unpool_kernel *k = (const ix_unpool_kernel *)kernel;
    const char *x = shp_in(args, 0), *idx = shp_in(args, 1);
    size_t n = cpu_elements(args->inputs[0].shape, args->inputs[0].ndim);
    size_t es = kernel->outs[0].esize, total = kernel->outs[0].elements;
    int64_t grid = (int64_t)cpu_elements(k->grid, k->r);
    for (size_t e = 0; e < n; e++) {
        int64_t i = ix_index_at(idx, true, e);
        bool ok = i >= 0 && i < grid;
        for (int d = k->r - 1; ok && d >= 0; d--) {
            int64_t c = i % k->grid[d];
            i /= k->grid[d];
            ok = c < k->out_dims[d];
        }
        if (!ok)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->base.op,
                             "index %lld (element %zu of I) is outside the unpooled tensor",
                             (long long)ix_index_at(idx, true, e), e);
    }
    memset(dst, 0, total * es);
    for (size_t e = 0; e < n; e++) {
        size_t at = (size_t)ix_offset((size_t)ix_index_at(idx, true, e), k->r, k->grid,
                                      k->out_st);
        memcpy((char *)dst + at * es, x + e * es, es);
    }
    return NULL;
}

static pl_status *ix_build_max_unpool(pl_module_ctx *ctx, const pl_node_desc *node,
                                      pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    SHP_TRY(shp_same_dtype(node));
    if (!PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "I must be i64");
    SHP_TRY(ix_same_shape(node, x, "X", &node->inputs[1], "I"));
    int r = x->ndim;
    if (o->ndim != r || r < 3 || o->shape[0] != x->shape[0] || o->shape[1] != x->shape[1])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "the output must be [N, C, spatial...] of X's N and C");
    const int64_t *ks, *pads, *strides;
    size_t nk, np, ns;
    SHP_TRY(cpu_attr_ints(node, "kernel_shape", &ks, &nk));
    SHP_TRY(cpu_attr_ints(node, "pads", &pads, &np));
    SHP_TRY(cpu_attr_ints(node, "strides", &strides, &ns));
    if (nk != (size_t)(r - 2) || (pads != NULL && np != 2 * nk) || (strides != NULL && ns != nk))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "kernel_shape, pads and strides do not fit an input of rank %d", r);
    ix_unpool_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_unpool_write, (shp_kernel **)&k));
    k->r = r;
    k->grid[0] = x->shape[0];
    k->grid[1] = x->shape[1];
    for (size_t d = 0; d < nk; d++) {
        int64_t st = strides != NULL ? strides[d] : 1;
        int64_t pad = pads != NULL ? pads[d] + pads[d + nk] : 0;
        k->grid[d + 2] = (x->shape[d + 2] - 1) * st - pad + ks[d];
        if (k->grid[d + 2] < 1) {
            cpu_kernel_release(ctx, &k->k.base);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "the attributes give an empty unpooled dim %zu", d);
        }
    }
    memcpy(k->out_dims, o->shape, (size_t)r * sizeof(int64_t));
    ix_strides(o->shape, r, k->out_st);
    /* output_shape (input 2) only shaped the output: it is not read. */
    k->k.base.n_reads = 2;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- Col2Im -------------------------------------------------------------------- */

/* Col2Im: the inverse of im2col. Input [N, C * prod(B), L], column l one
 * block position (the positions of a convolution of kernel B with these
 * strides, pads and dilations over image_shape, row-major), row c * prod(B)
 * + k its tap k of channel c; every tap inside the image adds into the
 * [N, C, image_shape...] output, those in the padding are dropped. The
 * output's shape comes from the node; block_shape is read at each run
 * and must fit the input's L. f32 and f64. */
typedef struct ix_col2im_kernel {
    shp_kernel k;
    int nsp;
    int64_t img[CPU_MAX_RANK], stride[CPU_MAX_RANK], dil[CPU_MAX_RANK], pad_b[CPU_MAX_RANK],
        pad_e[CPU_MAX_RANK];
    int64_t batch, channels, cols;
} ix_col2im_kernel;

static pl_status *ix_col2im_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                  const pl_run_args *args, size_t o, void *dst,
                                  pl_output_request req)
{
    (void)ctx, (void)o, (void)req;
    const ix_col2im_kernel *k = (const ix_col2im_kernel *)kernel;
    const char *op = kernel->base.op;
    const int64_t *bs = (const int64_t *)(const void *)shp_in(args, 2);
    if (cpu_elements(args->inputs[2].shape, args->inputs[2].ndim) != (size_t)k->nsp)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "block_shape must have %d values",
                         k->nsp);
    int64_t blocks[CPU_MAX_RANK], taps = 1, positions = 1;
    for (int d = 0; d < k->nsp; d++) {
        int64_t span = k->dil[d] * (bs[d] - 1) + 1, room = k->img[d] + k->pad_b[d] + k->pad_e[d];
        if (bs[d] < 1 || span > room)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "block_shape[%d] = %lld does not fit the padded image (%lld)", d,
                             (long long)bs[d], (long long)room);
        blocks[d] = (room - span) / k->stride[d] + 1;
        taps *= bs[d];
        positions *= blocks[d];
    }
    if (taps * k->channels != args->inputs[0].shape[1] || positions != k->cols)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "input [%lld, %lld, %lld] is not C x prod(block) = %lld x %lld rows "
                         "of %lld block positions",
                         (long long)k->batch, (long long)args->inputs[0].shape[1],
                         (long long)k->cols, (long long)k->channels, (long long)taps,
                         (long long)positions);
    bool f64 = PL_DTYPE_EQ(kernel->outs[0].dtype, PL_DTYPE_F64);
    const void *x = shp_in(args, 0);
    size_t plane = 1;
    for (int d = 0; d < k->nsp; d++)
        plane *= (size_t)k->img[d];
    memset(dst, 0, kernel->outs[0].elements * kernel->outs[0].esize);
    for (int64_t nc = 0; nc < k->batch * k->channels; nc++)
        for (int64_t t = 0; t < taps; t++) {
            int64_t tap[CPU_MAX_RANK], rest_t = t;
            for (int d = k->nsp - 1; d >= 0; d--) { /* t's offset in the block, per axis */
                tap[d] = rest_t % bs[d];
                rest_t /= bs[d];
            }
            size_t row = (size_t)((nc * taps + t) * k->cols);
            for (int64_t l = 0; l < k->cols; l++) {
                int64_t rest = l, at = 0, step = 1;
                bool inside = true;
                for (int d = k->nsp - 1; d >= 0; d--) {
                    int64_t b = rest % blocks[d];
                    rest /= blocks[d];
                    int64_t i = b * k->stride[d] - k->pad_b[d] + tap[d] * k->dil[d];
                    if (i < 0 || i >= k->img[d]) {
                        inside = false;
                        break;
                    }
                    at += i * step;
                    step *= k->img[d];
                }
                if (!inside)
                    continue;
                size_t to = (size_t)nc * plane + (size_t)at;
                if (f64)
                    ((double *)dst)[to] += ((const double *)x)[row + (size_t)l];
                else
                    ((float *)dst)[to] += ((const float *)x)[row + (size_t)l];
            }
        }
    return NULL;
}

static pl_status *ix_build_col2im(pl_module_ctx *ctx, const pl_node_desc *node,
                                  pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const char *op = node->op;
    if (!(PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) || PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64)) ||
        !PL_DTYPE_EQ(o->dtype, x->dtype))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "only f32 and f64");
    if (!PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64) ||
        !PL_DTYPE_EQ(node->inputs[2].dtype, PL_DTYPE_I64))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "image_shape and block_shape must be i64");
    int nsp = o->ndim - 2;
    if (x->ndim != 3 || nsp < 1 || nsp > CPU_MAX_RANK - 2 || o->shape[0] != x->shape[0] ||
        o->shape[1] < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "needs an input [N, C * prod(block), L] and an output [N, C, image...] "
                         "of known shape");
    const int64_t *pads, *strides, *dils;
    size_t np, ns, nd;
    SHP_TRY(cpu_attr_ints(node, "pads", &pads, &np));
    SHP_TRY(cpu_attr_ints(node, "strides", &strides, &ns));
    SHP_TRY(cpu_attr_ints(node, "dilations", &dils, &nd));
    if ((pads != NULL && np != 2 * (size_t)nsp) || (strides != NULL && ns != (size_t)nsp) ||
        (dils != NULL && nd != (size_t)nsp))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "pads, strides and dilations do not fit %d spatial axes", nsp);
    ix_col2im_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, ix_col2im_write, (shp_kernel **)&k));
    k->nsp = nsp;
    k->batch = x->shape[0];
    k->channels = o->shape[1];
    k->cols = x->shape[2];
    for (int d = 0; d < nsp; d++) {
        k->img[d] = o->shape[d + 2];
        k->stride[d] = strides != NULL ? strides[d] : 1;
        k->dil[d] = dils != NULL ? dils[d] : 1;
        k->pad_b[d] = pads != NULL ? pads[d] : 0;
        k->pad_e[d] = pads != NULL ? pads[d + nsp] : 0;
        if (k->stride[d] < 1 || k->dil[d] < 1 || k->pad_b[d] < 0 || k->pad_e[d] < 0) {
            cpu_kernel_release(ctx, &k->k.base);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "strides and dilations must be positive, pads not negative");
        }
    }
    *out_kernel = &k->k.base;
    return NULL;
}
