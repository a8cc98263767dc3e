/* opset_loss.c — schemas of ONNX's two loss ops, NegativeLogLikelihoodLoss
 * and SoftmaxCrossEntropyLoss (opsets 12 and 13). Both read scores of
 * shape [N, C] or [N, C, d1, .., dk], integer targets of shape [N] or
 * [N, d1, .., dk] and an optional weight per class [C]; the loss is the
 * targets' shape with reduction "none", else a scalar. SoftmaxCrossEntropy
 * may also give the log-probabilities, of the scores' shape. The values of
 * the targets (ignore_index, classes out of range) are checked by the
 * kernels at run time. */
#include <string.h>

#include "opset_internal.h"

/* Checks the shapes of scores (input 0), targets (1) and weights (2) and
 * sets output 0; output 1 (SoftmaxCrossEntropyLoss's log_prob) gets the
 * scores' shape. */
static pl_status *lo_infer(pl_infer_ctx *ctx)
{
    const char *reduction = pl_infer_attr_string(ctx, "reduction");
    bool none = strcmp(reduction, "none") == 0;
    if (!none && strcmp(reduction, "sum") != 0 && strcmp(reduction, "mean") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "reduction '%s' is none of none, sum, mean", reduction);
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *t = pl_infer_input(ctx, 1);
    const pl_graph_tensor *w = pl_infer_input(ctx, 2);
    if (x->ndim >= 0 && x->ndim < 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the scores have rank %d; they must be [N, C, d1, ...]",
                              (int)x->ndim);
    if (x->ndim >= 2 && t->ndim >= 0) {
        bool ok = t->ndim == x->ndim - 1;
        for (int32_t d = 0; ok && d < t->ndim; d++) {
            int64_t xd = x->dims[d == 0 ? 0 : d + 1], td = t->dims[d];
            ok = xd < 0 || td < 0 || xd == td;
        }
        if (!ok) {
            char a[160], b[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the targets %s do not match the scores %s (N, d1, ...)",
                                  pl_dims_format(t->dims, t->ndim, a, sizeof a),
                                  pl_dims_format(x->dims, x->ndim, b, sizeof b));
        }
    }
    if (w != NULL && w->ndim >= 0 &&
        (w->ndim != 1 || (x->ndim >= 2 && x->dims[1] >= 0 && w->dims[0] >= 0 &&
                          w->dims[0] != x->dims[1]))) {
        char a[160];
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the weights %s are not one per class",
                              pl_dims_format(w->dims, w->ndim, a, sizeof a));
    }
    if (pl_infer_output_count(ctx) > 1)
        PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 1, 0));
    if (!none)
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, 0, NULL, NULL);
    if (t->ndim >= 0)
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, t->ndim, t->dims,
                                   (const char *const *)t->dim_params);
    if (x->ndim < 2)
        return NULL;
    int64_t dims[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < x->ndim - 1; d++)
        dims[d] = x->dims[d == 0 ? 0 : d + 1];
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim - 1, dims, NULL);
}

/* ignore_index has no default: absent, no target is ignored. */
static const pl_attr_spec lo_attrs[] = {
    {.name = "ignore_index", .kind = PL_ATTR_INT}, PL_ATTR_S("reduction", "mean")};

#define LO_SCHEMA(op, since, n_out)                                              \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 2,          \
     .max_inputs = 3, .min_outputs = 1, .max_outputs = n_out,                    \
     .attrs = lo_attrs, .n_attrs = PL_COUNT(lo_attrs),                           \
     .types = {{"T", PL_TS_FLOAT}, {"Tind", PL_TS_I32 | PL_TS_I64}},             \
     .input_types = {"T", "Tind", "T"}, .output_types = {"T", "T"},              \
     .infer = lo_infer}

const pl_op_schema pl_opset_loss_schemas[] = {
    LO_SCHEMA("NegativeLogLikelihoodLoss", 12, 1),
    LO_SCHEMA("NegativeLogLikelihoodLoss", 13, 1),
    LO_SCHEMA("SoftmaxCrossEntropyLoss", 12, 2),
    LO_SCHEMA("SoftmaxCrossEntropyLoss", 13, 2),
};
const size_t pl_opset_loss_count = PL_COUNT(pl_opset_loss_schemas);
