/* opset_norm.c — schemas of ONNX's local normalizations: LRN (across
 * channels), MeanVarianceNormalization (over a set of axes, by default
 * [0, 2, 3]) and LpNormalization (along one axis), which keep their
 * input's shape, and GlobalLpPool, the p-norm over all spatial dims. */
#include "opset_internal.h"

static pl_status *nm_infer_lrn(pl_infer_ctx *ctx)
{
    int32_t r = pl_infer_input_rank(ctx, 0);
    if (r >= 0 && r < 3)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; LRN needs [N, C, D1, ...]", (int)r);
    if (pl_infer_attr_int(ctx, "size") < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "size %lld is below 1",
                              (long long)pl_infer_attr_int(ctx, "size"));
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *nm_infer_mvn(pl_infer_ctx *ctx)
{
    int32_t r = pl_infer_input_rank(ctx, 0);
    const int64_t *axes;
    size_t n;
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    if (r >= 0 && pl_infer_attr_ints(ctx, "axes", &axes, &n))
        for (size_t i = 0; i < n; i++) {
            int64_t a;
            if (!pl_infer_axis(axes[i], r, &a) || seen[a])
                return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                      "axis %lld is out of range for rank %d or repeated",
                                      (long long)axes[i], (int)r);
            seen[a] = true;
        }
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *nm_infer_lp_norm(pl_infer_ctx *ctx)
{
    int32_t r = pl_infer_input_rank(ctx, 0);
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a, p = pl_infer_attr_int(ctx, "p");
    if (p != 1 && p != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "p is %lld; it must be 1 or 2",
                              (long long)p);
    if (r >= 0 && !pl_infer_axis(axis, r, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d", (long long)axis, (int)r);
    return pl_infer_copy_input(ctx, 0, 0);
}

/* GlobalLpPool: [N, C, 1, ...] of [N, C, spatial...]. */
static pl_status *nm_infer_global_lp_pool(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (pl_infer_attr_int(ctx, "p") < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "p %lld is below 1",
                              (long long)pl_infer_attr_int(ctx, "p"));
    if (x->ndim < 0)
        return NULL;
    if (x->ndim < 3)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the input has rank %d; it must be [N, C, D1, ...]", (int)x->ndim);
    int64_t dims[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < x->ndim; d++)
        dims[d] = d < 2 ? x->dims[d] : 1;
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
}

static const pl_attr_spec nm_lp_norm_attrs[] = {PL_ATTR_I("axis", -1), PL_ATTR_I("p", 2)};
static const pl_attr_spec nm_lp_pool_attrs[] = {PL_ATTR_I("p", 2)};
static const pl_attr_spec nm_lrn_attrs[] = {
    PL_ATTR_F("alpha", 0.0001), PL_ATTR_F("beta", 0.75), PL_ATTR_F("bias", 1.0),
    PL_ATTR_REQ("size", PL_ATTR_INT)};
static const int64_t nm_mvn_default_axes[] = {0, 2, 3};
static const pl_attr_spec nm_mvn_attrs[] = {
    {.name = "axes", .kind = PL_ATTR_INTS, .default_ints = nm_mvn_default_axes,
     .n_default_ints = PL_COUNT(nm_mvn_default_axes)}};

#define NM_SCHEMA(op, since, attr_table, fn)                                      \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,           \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .attrs = attr_table,    \
     .n_attrs = PL_COUNT(attr_table), .types = {{"T", PL_TS_FLOAT}},              \
     .input_types = {"T"}, .output_types = {"T"}, .infer = fn}

const pl_op_schema pl_opset_norm_schemas[] = {
    NM_SCHEMA("LRN", 1, nm_lrn_attrs, nm_infer_lrn),
    NM_SCHEMA("LRN", 13, nm_lrn_attrs, nm_infer_lrn),
    NM_SCHEMA("MeanVarianceNormalization", 9, nm_mvn_attrs, nm_infer_mvn),
    NM_SCHEMA("MeanVarianceNormalization", 13, nm_mvn_attrs, nm_infer_mvn),
    NM_SCHEMA("LpNormalization", 1, nm_lp_norm_attrs, nm_infer_lp_norm),
    NM_SCHEMA("GlobalLpPool", 2, nm_lp_pool_attrs, nm_infer_global_lp_pool),
};
const size_t pl_opset_norm_count = PL_COUNT(pl_opset_norm_schemas);
