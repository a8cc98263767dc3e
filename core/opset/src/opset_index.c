/* opset_index.c — schemas of ONNX's indexing and rearranging ops:
 * GatherElements, GatherND, ScatterElements (and the deprecated Scatter),
 * ScatterND, TopK, OneHot, DepthToSpace, SpaceToDepth, EyeLike, Hardmax,
 * CastLike, ReverseSequence, MaxUnpool (a scatter by MaxPool's indices),
 * and the tensor algebra of Einsum and Det.
 *
 * Index values are data: the kernels check them at run time. Where an
 * output's shape depends on an input's value (TopK's K, OneHot's depth)
 * the value is read when it is a constant (a known value of the
 * inference); otherwise that dimension stays unknown and must come from a
 * type the graph declares, which the kernel then checks against the value
 * at run time. Ops whose output shape depends on all the data have no
 * schema: every kernel of this runtime is made for fully known output
 * shapes. NonZero and Compress are lowered to a count and a TopK whose K
 * is that count (opset_lower.c), which a staged session binds; Unique and
 * NonMaxSuppression are not supported. */
#include <string.h>

#include "opset_internal.h"

/* Formats DIMS of T into BUF (for messages). */
static const char *ix_dims(const pl_graph_tensor *t, char *buf, size_t size)
{
    return pl_dims_format(t->dims, t->ndim, buf, size);
}

/* Normalises attribute "axis" against RANK into *out_axis, or fails
 * naming it. */
static pl_status *ix_axis(pl_infer_ctx *ctx, int64_t rank, int64_t *out_axis)
{
    int64_t axis = pl_infer_attr_int(ctx, "axis");
    if (!pl_infer_axis(axis, rank, out_axis))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %lld", (long long)axis,
                              (long long)rank);
    return NULL;
}

/* The scalar value of input I when it is known: 1 read into *out, 0
 * unknown. Integer or float (truncated, as ONNX's OneHot depth). */
static int ix_known_scalar(const pl_infer_ctx *ctx, size_t i, int64_t *out)
{
    const int64_t *iv;
    const double *fv;
    uint64_t mask;
    size_t n;
    if (pl_infer_known_ints(ctx, i, &iv, &mask, &n) && n == 1 && (mask & 1)) {
        *out = iv[0];
        return 1;
    }
    if (pl_infer_known_floats(ctx, i, &fv, &n) && n == 1 && fv[0] > -9.0e18 && fv[0] < 9.0e18) {
        *out = (int64_t)fv[0];
        return 1;
    }
    return 0;
}

/* Checks a reduction attribute against the ones opset VERSION allows. */
static pl_status *ix_reduction(pl_infer_ctx *ctx)
{
    if (!pl_infer_has_attr(ctx, "reduction"))
        return NULL;
    const char *r = pl_infer_attr_string(ctx, "reduction");
    bool ok = strcmp(r, "none") == 0 || strcmp(r, "add") == 0 || strcmp(r, "mul") == 0;
    if (pl_infer_opset_version(ctx) >= 18)
        ok = ok || strcmp(r, "max") == 0 || strcmp(r, "min") == 0;
    if (!ok)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "reduction '%s' is not one opset %lld allows", r,
                              (long long)pl_infer_opset_version(ctx));
    return NULL;
}

/* ---- GatherElements, ScatterElements --------------------------------------- */

/* Data, indices (and updates) share one rank; the output of GatherElements
 * has the indices' shape. */
static pl_status *ix_infer_gather_elements(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *idx = pl_infer_input(ctx, 1);
    int64_t a;
    if (x->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "data must have rank >= 1");
    if (x->ndim > 0)
        PL_RETURN_IF_ERROR(ix_axis(ctx, x->ndim, &a));
    if (x->ndim >= 0 && idx->ndim >= 0 && x->ndim != idx->ndim) {
        char b1[160], b2[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "indices %s and data %s differ in rank", ix_dims(idx, b1, sizeof b1),
                              ix_dims(x, b2, sizeof b2));
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, idx->ndim, idx->dims,
                               (const char *const *)idx->dim_params);
}

static pl_status *ix_infer_scatter_elements(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(ix_reduction(ctx));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *idx = pl_infer_input(ctx, 1);
    const pl_graph_tensor *u = pl_infer_input(ctx, 2);
    int64_t a;
    if (x->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "data must have rank >= 1");
    if (x->ndim > 0)
        PL_RETURN_IF_ERROR(ix_axis(ctx, x->ndim, &a));
    bool ok = idx->ndim < 0 || u->ndim < 0 || idx->ndim == u->ndim;
    for (int32_t d = 0; ok && idx->ndim >= 0 && d < idx->ndim && u->ndim >= 0; d++)
        ok = idx->dims[d] < 0 || u->dims[d] < 0 || idx->dims[d] == u->dims[d];
    if (!ok || (x->ndim >= 0 && idx->ndim >= 0 && x->ndim != idx->ndim)) {
        char b1[160], b2[160], b3[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "indices %s and updates %s must have one shape, of the rank of "
                              "data %s", ix_dims(idx, b1, sizeof b1), ix_dims(u, b2, sizeof b2),
                              ix_dims(x, b3, sizeof b3));
    }
    return pl_infer_copy_input(ctx, 0, 0);
}

/* ---- GatherND, ScatterND ---------------------------------------------------- */

/* The shape GatherND gives data X and indices IDX with B batch dims into
 * DIMS; *out_rank -1 when the last dim of the indices is unknown. */
static pl_status *ix_gather_nd_shape(pl_infer_ctx *ctx, const pl_graph_tensor *x,
                                     const pl_graph_tensor *idx, int64_t b, int64_t *dims,
                                     int32_t *out_rank)
{
    *out_rank = -1;
    if (x->ndim == 0 || idx->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "data and indices must have rank >= 1");
    if (x->ndim < 0 || idx->ndim < 0)
        return NULL;
    if (b < 0 || b >= x->ndim || b >= idx->ndim)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "batch_dims %lld must be below both ranks (%d, %d)", (long long)b,
                              (int)x->ndim, (int)idx->ndim);
    for (int64_t d = 0; d < b; d++)
        if (x->dims[d] >= 0 && idx->dims[d] >= 0 && x->dims[d] != idx->dims[d]) {
            char b1[160], b2[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the batch dims of indices %s and data %s differ",
                                  ix_dims(idx, b1, sizeof b1), ix_dims(x, b2, sizeof b2));
        }
    int64_t last = idx->dims[idx->ndim - 1];
    if (last < 0)
        return NULL;
    if (last < 1 || last > x->ndim - b)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the indices' last dim %lld must be in [1, %lld] (data rank %d, "
                              "batch_dims %lld)", (long long)last, (long long)(x->ndim - b),
                              (int)x->ndim, (long long)b);
    int64_t rank = idx->ndim - 1 + x->ndim - b - last;
    if (rank > PL_GRAPH_MAX_RANK)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "result rank %lld exceeds %d",
                              (long long)rank, PL_GRAPH_MAX_RANK);
    int32_t r = 0;
    for (int32_t d = 0; d < idx->ndim - 1; d++)
        dims[r++] = d < b && idx->dims[d] < 0 ? x->dims[d] : idx->dims[d];
    for (int64_t d = b + last; d < x->ndim; d++)
        dims[r++] = x->dims[d];
    *out_rank = r;
    return NULL;
}

static pl_status *ix_infer_gather_nd(pl_infer_ctx *ctx)
{
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t rank;
    PL_RETURN_IF_ERROR(ix_gather_nd_shape(ctx, pl_infer_input(ctx, 0), pl_infer_input(ctx, 1),
                                          pl_infer_attr_int(ctx, "batch_dims"), dims, &rank));
    return rank < 0 ? NULL : pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, NULL);
}

/* ScatterND: the updates have the shape GatherND would give. */
static pl_status *ix_infer_scatter_nd(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(ix_reduction(ctx));
    const pl_graph_tensor *u = pl_infer_input(ctx, 2);
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t rank;
    PL_RETURN_IF_ERROR(ix_gather_nd_shape(ctx, pl_infer_input(ctx, 0), pl_infer_input(ctx, 1), 0,
                                          dims, &rank));
    bool ok = rank < 0 || u->ndim < 0 || u->ndim == rank;
    for (int32_t d = 0; ok && rank >= 0 && u->ndim >= 0 && d < rank; d++)
        ok = dims[d] < 0 || u->dims[d] < 0 || dims[d] == u->dims[d];
    if (!ok) {
        char b1[160], b2[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the updates %s are not of shape %s", ix_dims(u, b1, sizeof b1),
                              pl_dims_format(dims, rank, b2, sizeof b2));
    }
    return pl_infer_copy_input(ctx, 0, 0);
}

/* ---- TopK, OneHot ----------------------------------------------------------- */

/* Values and i64 indices: X's shape with K along the axis (unknown when K
 * is computed at run time). K comes from input 1 (opset 10) or attribute
 * k (opset 1). */
static pl_status *ix_infer_topk(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t k = -1;
    if (pl_infer_input_count(ctx) > 1) {
        const pl_graph_tensor *kt = pl_infer_input(ctx, 1);
        size_t n;
        if (kt != NULL && kt->ndim >= 0 && pl_dims_elements(kt->dims, kt->ndim, &n) &&
            (n != 1 || kt->ndim > 1))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "K must be a tensor of one element");
        if (!ix_known_scalar(ctx, 1, &k))
            k = -1;
    } else {
        k = pl_infer_attr_int(ctx, "k");
    }
    if (pl_infer_input_count(ctx) > 1 && k < -1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "K is negative (%lld)",
                              (long long)k);
    if (x->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the input must have rank >= 1");
    if (x->ndim < 0)
        return NULL;
    int64_t a;
    PL_RETURN_IF_ERROR(ix_axis(ctx, x->ndim, &a));
    if (k >= 0 && x->dims[a] >= 0 && k > x->dims[a])
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "K %lld exceeds the %lld elements of axis %lld", (long long)k,
                              (long long)x->dims[a], (long long)a);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < x->ndim; d++) {
        dims[d] = d == a ? k : x->dims[d];
        params[d] = d == a || x->dim_params == NULL ? NULL : x->dim_params[d];
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, params));
    if (pl_infer_output_count(ctx) > 1)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 1, PL_DTYPE_I64, x->ndim, dims, params));
    return NULL;
}

/* ai.plinth NonMaxSuppressionPadded: ONNX's NonMaxSuppression with its
 * selection in rows of a buffer of the most it can select (batches x
 * classes x min(max_output_boxes_per_class, boxes)) and their number in a
 * second output, [1]: the lowering of NonMaxSuppression (opset_lower.c)
 * slices the rows, so a staged session plans what follows per count. */
static pl_status *ix_infer_nms_padded(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *b = pl_infer_input(ctx, 0), *s = pl_infer_input(ctx, 1);
    if (b->ndim >= 0 && (b->ndim != 3 || (b->dims[2] >= 0 && b->dims[2] != 4)))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "boxes must be [batches, boxes, 4]");
    if (s->ndim >= 0 && s->ndim != 3)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "scores must be [batches, classes, boxes]");
    int64_t m = 0; /* max_output_boxes_per_class: absent selects nothing */
    if (pl_infer_input_count(ctx) > 2 && pl_infer_input(ctx, 2) != NULL &&
        !ix_known_scalar(ctx, 2, &m))
        m = -1;
    int64_t rows = -1;
    if (s->ndim == 3 && s->dims[0] >= 0 && s->dims[1] >= 0 && s->dims[2] >= 0) {
        int64_t per = m < 0 || m > s->dims[2] ? s->dims[2] : m;
        rows = s->dims[0] * s->dims[1] * per;
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 2, (int64_t[]){rows, 3}, NULL));
    return pl_infer_set_output(ctx, 1, PL_DTYPE_I64, 1, (int64_t[]){1}, NULL);
}

/* ai.plinth TreeEnsemble(X, feature, threshold, yes, no, leaf, roots
 * [, nan_yes]): the sum over the trees (roots [T]) of the weights
 * (leaf [M, K]) of the leaf each row of X [N, C] reaches; [N, K] f32. The
 * form the core lowers ai.onnx.ml's tree ensembles to (opset_lower.c). */
static pl_status *ix_infer_trees(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *leaf = pl_infer_input(ctx, 5);
    if (x->ndim >= 0 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "X must be [rows, features]");
    if (leaf->ndim >= 0 && leaf->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "leaf must be [nodes, targets]");
    int64_t dims[2] = {x->ndim == 2 ? x->dims[0] : -1, leaf->ndim == 2 ? leaf->dims[1] : -1};
    const char *params[2] = {x->ndim == 2 && x->dim_params ? x->dim_params[0] : NULL, NULL};
    return pl_infer_set_output(ctx, 0, PL_DTYPE_F32, 2, dims, params);
}

/* ai.plinth GroupQueryAttention(query, key, value, past_key, past_value,
 * seqlens_k, total_sequence_length [, cos_cache, sin_cache]): ONNX
 * Runtime's com.microsoft op of that name, which the core lowers to this
 * one (opset_lower.c; the cpu module's gqa.c runs it). output [B, S,
 * num_heads * H]; present_key and present_value [B, kv_num_heads,
 * max(total_sequence_length, past length), H], H from the query's width
 * (of num_heads heads, or of num_heads + 2 kv_num_heads when key and value
 * are packed into it). */
static pl_status *ix_infer_gqa(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *q = pl_infer_input(ctx, 0), *pk = NULL;
    int64_t n = pl_infer_attr_int(ctx, "num_heads"), kvn = pl_infer_attr_int(ctx, "kv_num_heads");
    if (n <= 0 || kvn <= 0 || n % kvn != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                              (long long)n, (long long)kvn);
    if (q->ndim >= 0 && q->ndim != 3)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "query must be [B, S, D]");
    /* key and value (packed into the query) and the caches may be absent */
    if (pl_infer_input_count(ctx) < 7 || pl_infer_input(ctx, 5) == NULL ||
        pl_infer_input(ctx, 6) == NULL)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "seqlens_k (input 5) and total_sequence_length (6) are required");
    bool packed = pl_infer_input_count(ctx) < 2 || pl_infer_input(ctx, 1) == NULL;
    int64_t heads = packed ? n + 2 * kvn : n, b = -1, s = -1, h = -1, past = 0, total;
    if (q->ndim == 3) {
        b = q->dims[0];
        s = q->dims[1];
        if (q->dims[2] >= 0) {
            if (q->dims[2] % heads != 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "query's width %lld is no multiple of %lld heads",
                                      (long long)q->dims[2], (long long)heads);
            h = q->dims[2] / heads;
        }
    }
    if (pl_infer_input_count(ctx) > 3)
        pk = pl_infer_input(ctx, 3);
    if (pk != NULL)
        past = pk->ndim == 4 ? pk->dims[2] : -1;
    int64_t len = -1;
    if (ix_known_scalar(ctx, 6, &total) && past >= 0)
        len = total > past ? total : past;
    const char *params[3] = {q->ndim == 3 && q->dim_params ? q->dim_params[0] : NULL,
                             q->ndim == 3 && q->dim_params ? q->dim_params[1] : NULL, NULL};
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, q->dtype, 3,
                                           (int64_t[]){b, s, h < 0 ? -1 : n * h}, params));
    const int64_t pd[4] = {b, kvn, len, h};
    const char *pp[4] = {params[0], NULL, NULL, NULL};
    for (size_t o = 1; o < 3 && o < pl_infer_output_count(ctx); o++)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, o, q->dtype, 4, pd, pp));
    return NULL;
}

/* ai.plinth LabelEncode(X, keys, values, default): X's shape in the
 * values' type. The form the core lowers ai.onnx.ml's LabelEncoder with
 * numeric keys and values to (opset_lower.c). */
static pl_status *ix_infer_label_encode(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *v = pl_infer_input(ctx, 2);
    return pl_infer_set_output(ctx, 0, v->dtype, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

/* ai.plinth SVMClassify(X, vectors, coefficients, rho, vectors_per_class,
 * labels [, prob_a, prob_b]): the label of each row of X [N, F] [N] i64,
 * and Z: with prob_a and prob_b the class probabilities [N, C], else the
 * pairwise decisions [N, C (C - 1) / 2] ([N, 2] for two classes). The form
 * the core lowers ai.onnx.ml's SVMClassifier to (opset_lower.c). */
static pl_status *ix_infer_svm(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *lab = pl_infer_input(ctx, 5);
    if (x->ndim >= 0 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "X must be [rows, features]");
    int64_t n = x->ndim == 2 ? x->dims[0] : -1, c = lab->ndim == 1 ? lab->dims[0] : -1;
    bool proba = pl_infer_input_count(ctx) > 7 && pl_infer_input(ctx, 6) != NULL &&
                 pl_infer_input(ctx, 7) != NULL;
    int64_t z = c < 0 ? -1 : proba ? c : c > 2 ? c * (c - 1) / 2 : 2;
    const char *params[2] = {x->ndim == 2 && x->dim_params ? x->dim_params[0] : NULL, NULL};
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 1, &n, params));
    return pl_infer_set_output(ctx, 1, PL_DTYPE_F32, 2, (int64_t[]){n, z}, params);
}

/* ai.plinth UniquePadded: ONNX's Unique with its unique values, first
 * indices and counts in buffers of the most there can be (every element,
 * or every slice along the axis) and their number in a fifth output, [1];
 * inverse_indices has its full size. flat = 1: the flattened input (ONNX's
 * Unique without an axis). The lowering of Unique slices the buffers. */
static pl_status *ix_infer_unique_padded(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    bool flat = pl_infer_attr_int(ctx, "flat") != 0;
    int64_t n = -1;
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t ndim = x->ndim;
    if (flat) {
        size_t e;
        n = pl_dims_elements(x->dims, x->ndim, &e) ? (int64_t)e : -1;
        ndim = 1;
        dims[0] = n;
    } else {
        int64_t a;
        PL_RETURN_IF_ERROR(ix_axis(ctx, x->ndim, &a));
        n = x->dims[a];
        memcpy(dims, x->dims, (size_t)ndim * sizeof *dims);
    }
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, ndim, dims, NULL));
    for (size_t o = 1; o < 4; o++)
        PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, o, PL_DTYPE_I64, 1, &n, NULL));
    return pl_infer_set_output(ctx, 4, PL_DTYPE_I64, 1, (int64_t[]){1}, NULL);
}

/* The indices' shape with depth inserted at the axis (in [-r-1, r]). */
static pl_status *ix_infer_onehot(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *idx = pl_infer_input(ctx, 0), *v = pl_infer_input(ctx, 2);
    size_t n;
    if (v->ndim >= 0 && (v->ndim != 1 || !pl_dims_elements(v->dims, v->ndim, &n) || n != 2) &&
        !(v->ndim == 1 && v->dims[0] < 0))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "values must be a vector of two elements [off, on]");
    if (idx->ndim < 0)
        return NULL;
    int64_t a;
    PL_RETURN_IF_ERROR(ix_axis(ctx, idx->ndim + 1, &a));
    int64_t depth = -1;
    if (ix_known_scalar(ctx, 1, &depth) && depth < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "depth %lld is below 1",
                              (long long)depth);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0, s = 0; d <= idx->ndim; d++) {
        if (d == a) {
            dims[d] = depth;
            params[d] = NULL;
            continue;
        }
        dims[d] = idx->dims[s];
        params[d] = idx->dim_params ? idx->dim_params[s] : NULL;
        s++;
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, idx->ndim + 1, dims, params);
}

/* ---- DepthToSpace, SpaceToDepth, EyeLike, Hardmax, CastLike ------------------ */

/* Both rearrange a 4-D [N, C, H, W]: to [N, C/b², H*b, W*b] (depth to
 * space) or [N, C*b², H/b, W/b]. */
static pl_status *ix_infer_blocks(pl_infer_ctx *ctx, bool to_space)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t b = pl_infer_attr_int(ctx, "blocksize");
    if (b < 1 || b > (INT64_C(1) << 31))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "blocksize %lld is below 1",
                              (long long)b);
    if (pl_infer_has_attr(ctx, "mode")) {
        const char *m = pl_infer_attr_string(ctx, "mode");
        if (strcmp(m, "DCR") != 0 && strcmp(m, "CRD") != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "mode '%s' is neither DCR nor CRD", m);
    }
    if (x->ndim < 0)
        return NULL;
    if (x->ndim != 4)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; it must be [N, C, H, W]", (int)x->ndim);
    int64_t dims[4] = {x->dims[0], -1, -1, -1};
    int64_t bb = b * b;
    if (to_space) {
        if (x->dims[1] >= 0 && x->dims[1] % bb != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%lld channels are not a multiple of blocksize² %lld",
                                  (long long)x->dims[1], (long long)bb);
        dims[1] = x->dims[1] < 0 ? -1 : x->dims[1] / bb;
        for (int d = 2; d < 4; d++)
            if (x->dims[d] >= 0 && __builtin_mul_overflow(x->dims[d], b, &dims[d]))
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the output is too large");
    } else {
        if (x->dims[1] >= 0 && __builtin_mul_overflow(x->dims[1], bb, &dims[1]))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the output is too large");
        for (int d = 2; d < 4; d++) {
            if (x->dims[d] >= 0 && x->dims[d] % b != 0)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "dimension %d (%lld) is not a multiple of blocksize %lld",
                                      d, (long long)x->dims[d], (long long)b);
            dims[d] = x->dims[d] < 0 ? -1 : x->dims[d] / b;
        }
    }
    const char *params[4] = {x->dim_params ? x->dim_params[0] : NULL, NULL, NULL, NULL};
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 4, dims, params);
}

static pl_status *ix_infer_depth_to_space(pl_infer_ctx *ctx)
{
    return ix_infer_blocks(ctx, true);
}

static pl_status *ix_infer_space_to_depth(pl_infer_ctx *ctx)
{
    return ix_infer_blocks(ctx, false);
}

/* EyeLike: a 2-D input's shape, of attribute dtype or else the input's. */
static pl_status *ix_infer_eyelike(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    pl_dtype dt = x->dtype;
    if (pl_infer_has_attr(ctx, "dtype")) {
        int64_t code = pl_infer_attr_int(ctx, "dtype");
        if (!pl_onnx_dtype(code, &dt) || !(pl_dtype_set_of(dt) & (PL_TS_NUM | PL_TS_BOOL)))
            return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                                  "dtype %lld is not a dtype this runtime has", (long long)code);
    }
    if (x->ndim >= 0 && x->ndim != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; EyeLike needs 2", (int)x->ndim);
    return pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

static pl_status *ix_infer_hardmax(pl_infer_ctx *ctx)
{
    int32_t r = pl_infer_input_rank(ctx, 0);
    int64_t a;
    if (r == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the input must have rank >= 1");
    if (r > 0)
        PL_RETURN_IF_ERROR(ix_axis(ctx, r, &a));
    return pl_infer_copy_input(ctx, 0, 0);
}

/* CastLike: input 0's shape, input 1's dtype. */
static pl_status *ix_infer_castlike(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *like = pl_infer_input(ctx, 1);
    return pl_infer_set_output(ctx, 0, like->dtype, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

/* ---- Einsum ------------------------------------------------------------------- */

/* One term of an equation: its labels ('.' stands for the ellipsis) and
 * whether it has one. */
typedef struct ix_term {
    char labels[PL_GRAPH_MAX_RANK + 1];
    int n;
    bool ellipsis;
} ix_term;

/* Parses the next term of EQ at *POS (up to ',' or '-' or the end),
 * skipping spaces. False on a malformed term. */
static bool ix_parse_term(const char *eq, size_t *pos, ix_term *t)
{
    memset(t, 0, sizeof *t);
    size_t i = *pos;
    for (;; i++) {
        char c = eq[i];
        if (c == ' ')
            continue;
        if (c == '\0' || c == ',' || c == '-')
            break;
        if (c == '.') {
            if (t->ellipsis || eq[i + 1] != '.' || eq[i + 2] != '.')
                return false;
            t->ellipsis = true;
            i += 2;
        } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) {
            return false;
        }
        if (t->n >= PL_GRAPH_MAX_RANK)
            return false;
        t->labels[t->n++] = c;
    }
    *pos = i;
    return true;
}

/* Labels in ASCII order (A-Z, then a-z): the implicit output's order. */
static int ix_label_slot(char c)
{
    return c >= 'a' ? 26 + (c - 'a') : c - 'A';
}

static pl_status *ix_infer_einsum(pl_infer_ctx *ctx)
{
    const char *eq = pl_infer_attr_string(ctx, "equation");
    size_t n_in = pl_infer_input_count(ctx), pos = 0;
    int64_t label_dim[52];
    int label_count[52] = {0};
    for (int l = 0; l < 52; l++)
        label_dim[l] = -2; /* not seen */
    int64_t ell[PL_GRAPH_MAX_RANK];
    int ell_rank = 0;
    bool ranks_known = true;
    for (size_t i = 0; i < n_in; i++) {
        ix_term t;
        if (!ix_parse_term(eq, &pos, &t) || (i + 1 < n_in && eq[pos] != ','))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "equation '%s' does not have %zu well-formed input terms", eq,
                                  n_in);
        if (eq[pos] == ',')
            pos++;
        const pl_graph_tensor *x = pl_infer_input(ctx, i);
        int letters = t.n - (t.ellipsis ? 1 : 0);
        if (x->ndim < 0) {
            ranks_known = false;
            for (int j = 0; j < t.n; j++)
                if (t.labels[j] != '.')
                    label_count[ix_label_slot(t.labels[j])]++;
            continue;
        }
        if (t.ellipsis ? x->ndim < letters : x->ndim != letters)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input %zu has rank %d but its term has %d labels%s", i,
                                  (int)x->ndim, letters, t.ellipsis ? " and an ellipsis" : "");
        int ne = x->ndim - letters, d = 0;
        for (int j = 0; j < t.n; j++) {
            if (t.labels[j] == '.') {
                /* Ellipsis dims broadcast against each other, right-aligned. */
                int64_t tmp[PL_GRAPH_MAX_RANK];
                int r;
                if (!pl_opset_broadcast(ell, ell_rank, x->dims + d, ne, tmp, &r))
                    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                          "the ellipsis dims of input %zu do not broadcast", i);
                memcpy(ell, tmp, (size_t)r * sizeof *tmp);
                ell_rank = r;
                d += ne;
                continue;
            }
            int s = ix_label_slot(t.labels[j]);
            int64_t dim = x->dims[d++];
            label_count[s]++;
            /* a size of 1 broadcasts, as numpy's einsum and ONNX Runtime
             * take it (jax2onnx writes "...BTNH,...BSNH" with one B of 1) */
            if (label_dim[s] >= 0 && dim >= 0 && label_dim[s] != dim && label_dim[s] != 1 &&
                dim != 1)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "label '%c' has sizes %lld and %lld", t.labels[j],
                                      (long long)label_dim[s], (long long)dim);
            if (label_dim[s] < 0 || label_dim[s] == 1)
                label_dim[s] = dim;
        }
    }
    bool explicit_out = eq[pos] == '-';
    if (!explicit_out && eq[pos] != '\0')
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "equation '%s' has more terms than the %zu inputs", eq, n_in);
    ix_term out;
    if (explicit_out) {
        pos++;
        if (eq[pos] != '>')
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "equation '%s': '-' not followed by '>'", eq);
        pos++;
        if (!ix_parse_term(eq, &pos, &out) || eq[pos] != '\0')
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "equation '%s' has a malformed output term", eq);
        bool seen[52] = {false};
        for (int j = 0; j < out.n; j++) {
            if (out.labels[j] == '.')
                continue;
            int s = ix_label_slot(out.labels[j]);
            if (label_count[s] == 0 || seen[s])
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "output label '%c' is %s", out.labels[j],
                                      seen[s] ? "repeated" : "in no input");
            seen[s] = true;
        }
    } else {
        /* Implicit: the ellipsis, then the labels seen once, sorted. */
        memset(&out, 0, sizeof out);
        out.ellipsis = true;
        out.labels[out.n++] = '.';
        for (int s = 0; s < 52 && out.n < PL_GRAPH_MAX_RANK; s++)
            if (label_count[s] == 1)
                out.labels[out.n++] = (char)(s < 26 ? 'A' + s : 'a' + (s - 26));
    }
    if (!ranks_known)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    int r = 0;
    for (int j = 0; j < out.n; j++) {
        if (out.labels[j] == '.') {
            if (r + ell_rank > PL_GRAPH_MAX_RANK)
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the output rank is too high");
            for (int e = 0; e < ell_rank; e++)
                dims[r++] = ell[e];
            continue;
        }
        int64_t dim = label_dim[ix_label_slot(out.labels[j])];
        dims[r++] = dim < 0 ? -1 : dim;
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, r, dims, NULL);
}

/* ---- ReverseSequence, MaxUnpool, Det ------------------------------------------ */

/* ReverseSequence: X's shape; batch and time are two distinct axes of the
 * first two, and the lengths one per batch entry. */
static pl_status *ix_infer_reverse_sequence(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *l = pl_infer_input(ctx, 1);
    int64_t b = pl_infer_attr_int(ctx, "batch_axis"), t = pl_infer_attr_int(ctx, "time_axis");
    if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "batch_axis %lld and time_axis %lld must be 0 and 1 in some order",
                              (long long)b, (long long)t);
    if (x->ndim >= 0 && x->ndim < 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "the input must have rank >= 2");
    if (l->ndim >= 0 && (l->ndim != 1 || (x->ndim >= 2 && l->dims[0] >= 0 &&
                                           x->dims[b] >= 0 && l->dims[0] != x->dims[b])))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "sequence_lens must hold one length per batch entry");
    return pl_infer_copy_input(ctx, 0, 0);
}

/* MaxUnpool: [N, C, spatial...] from output_shape when known, else
 * (in - 1) * stride - pads + kernel per spatial dim. */
static pl_status *ix_infer_max_unpool(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *idx = pl_infer_input(ctx, 1);
    const int64_t *ks, *pads, *strides;
    size_t nk, np, ns;
    pl_infer_attr_ints(ctx, "kernel_shape", &ks, &nk);
    bool has_pads = pl_infer_attr_ints(ctx, "pads", &pads, &np);
    bool has_strides = pl_infer_attr_ints(ctx, "strides", &strides, &ns);
    if (x->ndim >= 0 && (x->ndim < 3 || nk != (size_t)(x->ndim - 2) ||
                         (has_pads && np != 2 * nk) || (has_strides && ns != nk)))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "kernel_shape, pads and strides do not fit an input of rank %d",
                              (int)x->ndim);
    bool same = x->ndim < 0 || idx->ndim < 0 || x->ndim == idx->ndim;
    for (int32_t d = 0; same && x->ndim >= 0 && d < x->ndim; d++)
        same = x->dims[d] < 0 || idx->dims[d] < 0 || x->dims[d] == idx->dims[d];
    if (!same)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "X and I differ in shape");
    if (x->ndim < 0)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = x->dims[1];
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (pl_infer_input(ctx, 2) != NULL) {
        bool known = pl_infer_known_ints(ctx, 2, &v, &mask, &n) && n == (size_t)x->ndim;
        for (int32_t d = 2; d < x->ndim; d++)
            dims[d] = known && ((mask >> d) & 1) ? v[d] : -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
    }
    for (size_t d = 0; d < nk; d++) {
        int64_t in = x->dims[d + 2], st = has_strides ? strides[d] : 1;
        int64_t pad = has_pads ? pads[d] + pads[d + nk] : 0;
        if (ks[d] < 1 || st < 1)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "kernel_shape and strides must be positive");
        dims[d + 2] = in < 0 ? -1 : (in - 1) * st - pad + ks[d];
        if (in >= 0 && dims[d + 2] < 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the pads leave spatial dim %zu negative", d);
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
}

/* Det: [*, M, M] to [*]. */
static pl_status *ix_infer_det(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 0)
        return NULL;
    if (x->ndim < 2 || (x->dims[x->ndim - 1] >= 0 && x->dims[x->ndim - 2] >= 0 &&
                        x->dims[x->ndim - 1] != x->dims[x->ndim - 2])) {
        char b[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input %s is not a (batch of) square matrices",
                              ix_dims(x, b, sizeof b));
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim - 2, x->dims,
                               (const char *const *)x->dim_params);
}

/* ---- the schemas ---------------------------------------------------------------- */

#define IX_IND (PL_TS_I32 | PL_TS_I64)

static const pl_attr_spec ix_axis0_attrs[] = {PL_ATTR_I("axis", 0)};
static const pl_attr_spec ix_scatter16_attrs[] = {PL_ATTR_I("axis", 0),
                                                  PL_ATTR_S("reduction", "none")};
static const pl_attr_spec ix_batch_dims_attrs[] = {PL_ATTR_I("batch_dims", 0)};
static const pl_attr_spec ix_reduction_attrs[] = {PL_ATTR_S("reduction", "none")};
static const pl_attr_spec ix_topk1_attrs[] = {PL_ATTR_I("axis", -1),
                                              PL_ATTR_REQ("k", PL_ATTR_INT)};
static const pl_attr_spec ix_topk10_attrs[] = {PL_ATTR_I("axis", -1)};
static const pl_attr_spec ix_nms_attrs[] = {PL_ATTR_I("center_point_box", 0)};
static const pl_attr_spec ix_unique_attrs[] = {PL_ATTR_I("axis", 0), PL_ATTR_I("flat", 1),
                                               PL_ATTR_I("sorted", 1)};
static const pl_attr_spec ix_topk11_attrs[] = {PL_ATTR_I("axis", -1), PL_ATTR_I("largest", 1),
                                               PL_ATTR_I("sorted", 1)};
static const pl_attr_spec ix_onehot_attrs[] = {PL_ATTR_I("axis", -1)};
static const pl_attr_spec ix_d2s1_attrs[] = {PL_ATTR_REQ("blocksize", PL_ATTR_INT)};
static const pl_attr_spec ix_d2s11_attrs[] = {PL_ATTR_REQ("blocksize", PL_ATTR_INT),
                                              PL_ATTR_S("mode", "DCR")};
static const pl_attr_spec ix_eyelike_attrs[] = {{.name = "dtype", .kind = PL_ATTR_INT},
                                                PL_ATTR_I("k", 0)};
static const pl_attr_spec ix_hardmax1_attrs[] = {PL_ATTR_I("axis", 1)};
static const pl_attr_spec ix_hardmax13_attrs[] = {PL_ATTR_I("axis", -1)};
static const pl_attr_spec ix_einsum_attrs[] = {PL_ATTR_REQ("equation", PL_ATTR_STRING)};
static const pl_attr_spec ix_reverse_attrs[] = {PL_ATTR_I("batch_axis", 1),
                                                PL_ATTR_I("time_axis", 0)};
/* Col2Im 18: input [N, C * prod(block_shape), L] into [N, C,
 * image_shape...]; C needs block_shape's values, the spatial dims
 * image_shape's. */
static pl_status *ix_infer_col2im(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim >= 0 && x->ndim != 3)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; it must be [N, C * prod(block), L]",
                              (int)x->ndim);
    const int64_t *img, *blk;
    uint64_t img_mask, blk_mask;
    size_t n_img, n_blk;
    bool img_known = pl_infer_known_ints(ctx, 1, &img, &img_mask, &n_img);
    bool blk_known = pl_infer_known_ints(ctx, 2, &blk, &blk_mask, &n_blk);
    if (!img_known)
        return NULL;
    if (n_img < 1 || n_img + 2 > PL_GRAPH_MAX_RANK || (blk_known && n_blk != n_img))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "image_shape has %zu values and block_shape %zu; they must "
                              "agree, one per spatial axis",
                              n_img, blk_known ? n_blk : n_img);
    int64_t dims[PL_GRAPH_MAX_RANK], block = 1;
    bool blocks = blk_known;
    for (size_t d = 0; d < n_img; d++) {
        dims[d + 2] = (img_mask >> d) & 1 ? img[d] : -1;
        if (blk_known && ((blk_mask >> d) & 1) && blk[d] >= 1)
            block *= blk[d];
        else
            blocks = false;
    }
    dims[0] = x->ndim == 3 ? x->dims[0] : -1;
    dims[1] = -1;
    if (x->ndim == 3 && x->dims[1] >= 0 && blocks) {
        if (x->dims[1] % block != 0)
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "input dim 1 (%lld) is not a multiple of the block's %lld "
                                  "elements",
                                  (long long)x->dims[1], (long long)block);
        dims[1] = x->dims[1] / block;
    }
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, (int32_t)n_img + 2, dims, NULL);
}

static const pl_attr_spec ix_col2im_attrs[] = {PL_ATTR_IS("dilations"), PL_ATTR_IS("pads"),
                                               PL_ATTR_IS("strides")};
static const pl_attr_spec ix_unpool_attrs[] = {PL_ATTR_REQ("kernel_shape", PL_ATTR_INTS),
                                               PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};

#define IX_SCHEMA(op, since, in_min, in_max, out_max, attr_table, fn, ...)        \
    {.name = op, .domain = "", .since_version = since, .min_inputs = in_min,      \
     .max_inputs = in_max, .min_outputs = 1, .max_outputs = out_max,              \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table), .infer = fn, __VA_ARGS__}
#define IX_GATHER_EL(since)                                                       \
    IX_SCHEMA("GatherElements", since, 2, 2, 1, ix_axis0_attrs,                   \
              ix_infer_gather_elements, .types = {{"T", PL_TS_ALL}, {"Tind", IX_IND}}, \
              .input_types = {"T", "Tind"}, .output_types = {"T"})
#define IX_SCATTER_EL(op, since, attr_table)                                      \
    IX_SCHEMA(op, since, 3, 3, 1, attr_table, ix_infer_scatter_elements,          \
              .types = {{"T", PL_TS_ALL}, {"Tind", IX_IND}},                      \
              .input_types = {"T", "Tind", "T"}, .output_types = {"T"}, PL_INPLACE_0)
#define IX_GATHER_ND(since, attr_table, n)                                        \
    {.name = "GatherND", .domain = "", .since_version = since, .min_inputs = 2,   \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,    \
     .n_attrs = n,                                                                \
     .infer = ix_infer_gather_nd, .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}},  \
     .input_types = {"T", "I"}, .output_types = {"T"}}
#define IX_SCATTER_ND(since, attr_table, n)                                       \
    {.name = "ScatterND", .domain = "", .since_version = since, .min_inputs = 3,  \
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,    \
     .n_attrs = n, .infer = ix_infer_scatter_nd,                                  \
     .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}},                               \
     .input_types = {"T", "I", "T"}, .output_types = {"T"}, PL_INPLACE_0}
#define IX_TOPK(since, n_in, attr_table)                                          \
    IX_SCHEMA("TopK", since, n_in, n_in, 2, attr_table, ix_infer_topk,            \
              .types = {{"T", PL_TS_NUM}, {"I", PL_TS_I64}},                      \
              .input_types = {"T", "I"}, .output_types = {"T", "I"})
#define IX_BLOCKS(op, since, attr_table, fn)                                      \
    IX_SCHEMA(op, since, 1, 1, 1, attr_table, fn, .types = {{"T", PL_TS_ALL}},    \
              .input_types = {"T"}, .output_types = {"T"})
#define IX_HARDMAX(since, attr_table)                                             \
    IX_SCHEMA("Hardmax", since, 1, 1, 1, attr_table, ix_infer_hardmax,            \
              .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"}, .output_types = {"T"})

/* CastLike 19's saturate and 24's round_mode act on float8 targets only
 * (as Cast's, opset_elementwise.c): read and ignored. */
static const pl_attr_spec ix_castlike19_attrs[] = {PL_ATTR_I("saturate", 1)};
static const pl_attr_spec ix_castlike24_attrs[] = {PL_ATTR_I("saturate", 1),
                                                   PL_ATTR_S("round_mode", "up")};

static const pl_attr_spec ix_trees_attrs[] = {PL_ATTR_S("mode", "BRANCH_LEQ")};
static const pl_attr_spec ix_gqa_attrs[] = {
    PL_ATTR_I("num_heads", 0),          PL_ATTR_I("kv_num_heads", 0),
    PL_ATTR_F("scale", 0.0),            PL_ATTR_I("local_window_size", -1),
    PL_ATTR_I("do_rotary", 0),          PL_ATTR_I("rotary_interleaved", 0),
    PL_ATTR_F("softcap", 0.0),          PL_ATTR_I("smooth_softmax", 0)};
static const pl_attr_spec ix_le_attrs[] = {PL_ATTR_I("nan_matches", 0)};
static const pl_attr_spec ix_svm_attrs[] = {PL_ATTR_S("kernel_type", "LINEAR"),
                                            PL_ATTR_F("gamma", 0.0), PL_ATTR_F("coef0", 0.0),
                                            PL_ATTR_F("degree", 0.0)};

const pl_op_schema pl_opset_index_schemas[] = {
    IX_GATHER_EL(11),
    IX_GATHER_EL(13),
    IX_GATHER_ND(11, NULL, 0),
    IX_GATHER_ND(12, ix_batch_dims_attrs, PL_COUNT(ix_batch_dims_attrs)),
    IX_GATHER_ND(13, ix_batch_dims_attrs, PL_COUNT(ix_batch_dims_attrs)),
    IX_SCATTER_EL("Scatter", 9, ix_axis0_attrs),
    IX_SCATTER_EL("ScatterElements", 11, ix_axis0_attrs),
    IX_SCATTER_EL("ScatterElements", 13, ix_axis0_attrs),
    IX_SCATTER_EL("ScatterElements", 16, ix_scatter16_attrs),
    IX_SCATTER_EL("ScatterElements", 18, ix_scatter16_attrs),
    IX_SCATTER_ND(11, NULL, 0),
    IX_SCATTER_ND(13, NULL, 0),
    IX_SCATTER_ND(16, ix_reduction_attrs, PL_COUNT(ix_reduction_attrs)),
    IX_SCATTER_ND(18, ix_reduction_attrs, PL_COUNT(ix_reduction_attrs)),
    {.name = "NonMaxSuppressionPadded", .domain = "ai.plinth", .since_version = 1,
     .min_inputs = 2, .max_inputs = 5, .min_outputs = 2, .max_outputs = 2,
     .attrs = ix_nms_attrs, .n_attrs = PL_COUNT(ix_nms_attrs), .infer = ix_infer_nms_padded,
     .types = {{"T", PL_TS_F32}, {"I", PL_TS_I64}},
     .input_types = {"T", "T", "I", "T", "T"}, .output_types = {"I", "I"}},
    {.name = "TreeEnsemble", .domain = "ai.plinth", .since_version = 1, .min_inputs = 7,
     .max_inputs = 8, .min_outputs = 1, .max_outputs = 1, .attrs = ix_trees_attrs,
     .n_attrs = PL_COUNT(ix_trees_attrs), .infer = ix_infer_trees,
     .types = {{"T", PL_TS_F32}, {"I", PL_TS_I64}, {"B", PL_TS_BOOL}},
     .input_types = {"T", "I", "T", "I", "I", "T", "I", "B"}, .output_types = {"T"}},
    {.name = "GroupQueryAttention", .domain = "ai.plinth", .since_version = 1, .min_inputs = 1,
     .max_inputs = 9, .min_outputs = 1, .max_outputs = 3, .attrs = ix_gqa_attrs,
     .n_attrs = PL_COUNT(ix_gqa_attrs), .infer = ix_infer_gqa,
     .types = {{"T", PL_TS_F32 | PL_TS_F16}, {"M", PL_TS_I32}},
     .input_types = {"T", "T", "T", "T", "T", "M", "M", "T"},
     .output_types = {"T", "T", "T"}},
    {.name = "LabelEncode", .domain = "ai.plinth", .since_version = 1, .min_inputs = 4,
     .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .attrs = ix_le_attrs,
     .n_attrs = PL_COUNT(ix_le_attrs), .infer = ix_infer_label_encode,
     .types = {{"K", PL_TS_F32 | PL_TS_I64}, {"V", PL_TS_F32 | PL_TS_I64}},
     .input_types = {"K", "K", "V", "V"}, .output_types = {"V"}},
    {.name = "SVMClassify", .domain = "ai.plinth", .since_version = 1, .min_inputs = 6,
     .max_inputs = 8, .min_outputs = 2, .max_outputs = 2, .attrs = ix_svm_attrs,
     .n_attrs = PL_COUNT(ix_svm_attrs), .infer = ix_infer_svm,
     .types = {{"T", PL_TS_F32}, {"I", PL_TS_I64}},
     .input_types = {"T", "T", "T", "T", "I", "I", "T", "T"}, .output_types = {"I", "T"}},
    {.name = "UniquePadded", .domain = "ai.plinth", .since_version = 1, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 5, .max_outputs = 5, .attrs = ix_unique_attrs,
     .n_attrs = PL_COUNT(ix_unique_attrs), .infer = ix_infer_unique_padded,
     .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}}, .input_types = {"T"},
     .output_types = {"T", "I", "I", "I", "I"}},
    IX_TOPK(1, 1, ix_topk1_attrs),
    IX_TOPK(10, 2, ix_topk10_attrs),
    IX_TOPK(11, 2, ix_topk11_attrs),
    IX_SCHEMA("OneHot", 9, 3, 3, 1, ix_onehot_attrs, ix_infer_onehot,
              .types = {{"T1", PL_TS_NUM}, {"T2", PL_TS_NUM}, {"T3", PL_TS_ALL}},
              .input_types = {"T1", "T2", "T3"}, .output_types = {"T3"}),
    IX_SCHEMA("OneHot", 11, 3, 3, 1, ix_onehot_attrs, ix_infer_onehot,
              .types = {{"T1", PL_TS_NUM}, {"T2", PL_TS_NUM}, {"T3", PL_TS_ALL}},
              .input_types = {"T1", "T2", "T3"}, .output_types = {"T3"}),
    IX_BLOCKS("DepthToSpace", 1, ix_d2s1_attrs, ix_infer_depth_to_space),
    IX_BLOCKS("DepthToSpace", 11, ix_d2s11_attrs, ix_infer_depth_to_space),
    IX_BLOCKS("DepthToSpace", 13, ix_d2s11_attrs, ix_infer_depth_to_space),
    IX_BLOCKS("SpaceToDepth", 1, ix_d2s1_attrs, ix_infer_space_to_depth),
    IX_BLOCKS("SpaceToDepth", 13, ix_d2s1_attrs, ix_infer_space_to_depth),
    /* 28 added mode; opset_lower.c refuses CRD and removes DCR, the order
     * of the versions before */
    IX_BLOCKS("SpaceToDepth", 28, ix_d2s11_attrs, ix_infer_space_to_depth),
    IX_SCHEMA("EyeLike", 9, 1, 1, 1, ix_eyelike_attrs, ix_infer_eyelike,
              .types = {{"T1", PL_TS_NUM | PL_TS_BOOL}, {"T2", PL_TS_NUM | PL_TS_BOOL}},
              .input_types = {"T1"}, .output_types = {"T2"}),
    IX_HARDMAX(1, ix_hardmax1_attrs),
    IX_HARDMAX(11, ix_hardmax1_attrs),
    IX_HARDMAX(13, ix_hardmax13_attrs),
#define IX_CASTLIKE(since, attr_table, n_attr)                                          \
    {.name = "CastLike", .domain = "", .since_version = since, .min_inputs = 2,         \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,          \
     .n_attrs = n_attr, .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_ALL}},                \
     .input_types = {"T1", "T2"}, .output_types = {"T2"}, .infer = ix_infer_castlike}
    IX_CASTLIKE(15, NULL, 0),
    IX_CASTLIKE(19, ix_castlike19_attrs, PL_COUNT(ix_castlike19_attrs)),
    IX_CASTLIKE(24, ix_castlike24_attrs, PL_COUNT(ix_castlike24_attrs)),
    IX_SCHEMA("Einsum", 12, 1, PL_OP_VARIADIC, 1, ix_einsum_attrs, ix_infer_einsum,
              .types = {{"T", PL_TS_NUM}}, .input_types = {"T"}, .output_types = {"T"}),
    IX_SCHEMA("ReverseSequence", 10, 2, 2, 1, ix_reverse_attrs, ix_infer_reverse_sequence,
              .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}}, .input_types = {"T", "I"},
              .output_types = {"T"}),
    IX_SCHEMA("MaxUnpool", 9, 2, 2, 1, ix_unpool_attrs, ix_infer_max_unpool,
              .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I64}}, .input_types = {"T1", "T2"},
              .output_types = {"T1"}),
    IX_SCHEMA("MaxUnpool", 11, 2, 3, 1, ix_unpool_attrs, ix_infer_max_unpool,
              .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_I64}},
              .input_types = {"T1", "T2", "T2"}, .output_types = {"T1"}),
    IX_SCHEMA("Col2Im", 18, 3, 3, 1, ix_col2im_attrs, ix_infer_col2im,
              .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}},
              .input_types = {"T", "I", "I"}, .output_types = {"T"}),
    {.name = "Det", .domain = "", .since_version = 11, .min_inputs = 1, .max_inputs = 1,
     .min_outputs = 1, .max_outputs = 1, .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
     .output_types = {"T"}, .infer = ix_infer_det},
};
const size_t pl_opset_index_count = PL_COUNT(pl_opset_index_schemas);
