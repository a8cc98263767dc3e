/* opset_quant.c — schemas of ONNX's linear quantization ops:
 * QuantizeLinear and DequantizeLinear (per tensor from opset 10, per axis
 * from 13), DynamicQuantizeLinear, and the integer matrix products
 * MatMulInteger and QLinearMatMul. Scales and zero points are a scalar, or
 * with an axis one value per entry of that axis; the kernels read them at
 * run time. */
#include <string.h>

#include "opset_internal.h"

/* A scale or zero point (input I) for data X: a scalar (or one element),
 * or a vector of X's dim at the axis (opset 13's per-axis form). */
static pl_status *qu_check_param(pl_infer_ctx *ctx, size_t i, const char *what)
{
    const pl_graph_tensor *p = pl_infer_input(ctx, i), *x = pl_infer_input(ctx, 0);
    size_t n;
    if (p == NULL || p->ndim < 0 || !pl_dims_elements(p->dims, p->ndim, &n))
        return NULL;
    if (p->ndim == 0 || (p->ndim == 1 && n == 1))
        return NULL;
    if (p->ndim == 1 && pl_infer_opset_version(ctx) >= 13 && x->ndim > 0) {
        int64_t a;
        if (!pl_infer_axis(pl_infer_attr_int(ctx, "axis"), x->ndim, &a))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for rank %d",
                                  (long long)pl_infer_attr_int(ctx, "axis"), (int)x->ndim);
        if (x->dims[a] < 0 || p->dims[0] < 0 || x->dims[a] == p->dims[0])
            return NULL;
    }
    char b1[160], b2[160];
    return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                          "%s %s is neither a scalar nor one per entry of the axis of %s", what,
                          pl_dims_format(p->dims, p->ndim, b1, sizeof b1),
                          pl_dims_format(x->dims, x->ndim, b2, sizeof b2));
}

/* QuantizeLinear: x's shape, the zero point's dtype (u8 without one). */
static pl_status *qu_infer_quantize(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(qu_check_param(ctx, 1, "the scale"));
    PL_RETURN_IF_ERROR(qu_check_param(ctx, 2, "the zero point"));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *zp = pl_infer_input(ctx, 2);
    pl_dtype dt = zp != NULL ? zp->dtype : PL_DTYPE_U8;
    return pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims, (const char *const *)x->dim_params);
}

/* DequantizeLinear: x's shape, f32. */
static pl_status *qu_infer_dequantize(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(qu_check_param(ctx, 1, "the scale"));
    PL_RETURN_IF_ERROR(qu_check_param(ctx, 2, "the zero point"));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *zp = pl_infer_input(ctx, 2);
    if (zp != NULL && zp->dtype.lanes != 0 && x->dtype.lanes != 0 &&
        !PL_DTYPE_EQ(zp->dtype, x->dtype))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the zero point is %s but x is %s", pl_dtype_name(zp->dtype),
                              pl_dtype_name(x->dtype));
    return pl_infer_set_output(ctx, 0, PL_DTYPE_F32, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

/* DynamicQuantizeLinear: y of x's shape, scalar scale and zero point. */
static pl_status *qu_infer_dynamic(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_U8, x->ndim, x->dims,
                                           (const char *const *)x->dim_params));
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 1, PL_DTYPE_F32, 0, NULL, NULL));
    return pl_infer_set_output(ctx, 2, PL_DTYPE_U8, 0, NULL, NULL);
}

/* The shape of a NumPy matmul of inputs IA and IB (MatMul's rules). */
static pl_status *qu_matmul_shape(pl_infer_ctx *ctx, size_t ia, size_t ib, pl_dtype dt)
{
    const pl_graph_tensor *a = pl_infer_input(ctx, ia), *b = pl_infer_input(ctx, ib);
    if (a->ndim < 0 || b->ndim < 0)
        return pl_infer_set_output(ctx, 0, dt, -1, NULL, NULL);
    char sa[160], sb[160];
    if (a->ndim == 0 || b->ndim == 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "operands must have rank >= 1, got %s and %s",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    int64_t k_a = a->dims[a->ndim - 1];
    int64_t k_b = b->ndim == 1 ? b->dims[0] : b->dims[b->ndim - 2];
    int64_t dims[PL_GRAPH_MAX_RANK + 2];
    int rank;
    if ((k_a >= 0 && k_b >= 0 && k_a != k_b) ||
        !pl_opset_broadcast(a->dims, a->ndim >= 2 ? a->ndim - 2 : 0, b->dims,
                            b->ndim >= 2 ? b->ndim - 2 : 0, dims, &rank))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "%s and %s do not multiply",
                              pl_dims_format(a->dims, a->ndim, sa, sizeof sa),
                              pl_dims_format(b->dims, b->ndim, sb, sizeof sb));
    if (a->ndim >= 2)
        dims[rank++] = a->dims[a->ndim - 2];
    if (b->ndim >= 2)
        dims[rank++] = b->dims[b->ndim - 1];
    return pl_infer_set_output(ctx, 0, dt, rank, dims, NULL);
}

static pl_status *qu_infer_matmul_integer(pl_infer_ctx *ctx)
{
    return qu_matmul_shape(ctx, 0, 1, PL_DTYPE_I32);
}

/* QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp. */
static pl_status *qu_infer_qlinear_matmul(pl_infer_ctx *ctx)
{
    return qu_matmul_shape(ctx, 0, 3, pl_infer_input_dtype(ctx, 7));
}

#define QU_Q8 (PL_TS_U8 | PL_TS_I8)

static const pl_attr_spec qu_axis_attrs[] = {PL_ATTR_I("axis", 1)};

const pl_op_schema pl_opset_quant_schemas[] = {
    {.name = "QuantizeLinear", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T1", PL_TS_F32 | PL_TS_I32}, {"S", PL_TS_F32}, {"T2", QU_Q8}},
     .input_types = {"T1", "S", "T2"}, .output_types = {"T2"}, .infer = qu_infer_quantize},
    {.name = "QuantizeLinear", .domain = "", .since_version = 13, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T1", PL_TS_F32 | PL_TS_I32}, {"S", PL_TS_F32}, {"T2", QU_Q8}},
     .input_types = {"T1", "S", "T2"}, .output_types = {"T2"}, .infer = qu_infer_quantize},
    {.name = "DequantizeLinear", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", QU_Q8 | PL_TS_I32}, {"S", PL_TS_F32}},
     .input_types = {"T", "S", "T"}, .output_types = {"S"}, .infer = qu_infer_dequantize},
    {.name = "DequantizeLinear", .domain = "", .since_version = 13, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T", QU_Q8 | PL_TS_I32}, {"S", PL_TS_F32}},
     .input_types = {"T", "S", "T"}, .output_types = {"S"}, .infer = qu_infer_dequantize},
    {.name = "DynamicQuantizeLinear", .domain = "", .since_version = 11, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 3, .max_outputs = 3,
     .types = {{"T1", PL_TS_F32}, {"T2", PL_TS_U8}},
     .input_types = {"T1"}, .output_types = {"T2", "T1", "T2"}, .infer = qu_infer_dynamic},
    {.name = "MatMulInteger", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 4, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T1", QU_Q8}, {"T2", QU_Q8}, {"T3", PL_TS_I32}},
     .input_types = {"T1", "T2", "T1", "T2"}, .output_types = {"T3"},
     .infer = qu_infer_matmul_integer},
    {.name = "QLinearMatMul", .domain = "", .since_version = 10, .min_inputs = 8,
     .max_inputs = 8, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T1", QU_Q8}, {"S", PL_TS_F32}, {"T2", QU_Q8}, {"T3", QU_Q8}},
     .input_types = {"T1", "S", "T1", "T2", "S", "T2", "S", "T3"}, .output_types = {"T3"},
     .infer = qu_infer_qlinear_matmul},
};
const size_t pl_opset_quant_count = PL_COUNT(pl_opset_quant_schemas);
