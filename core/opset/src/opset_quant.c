/* opset_quant.c — schemas of ONNX's linear quantization ops:
 * QuantizeLinear and DequantizeLinear (per tensor from opset 10, per axis
 * from 13, and before as ONNX Runtime reads them), DynamicQuantizeLinear, the integer matrix products
 * MatMulInteger and QLinearMatMul, and the integer convolutions ConvInteger
 * and QLinearConv (Conv's geometry: auto_pad, pads, strides, dilations,
 * group). Scales and zero points are a scalar, or
 * with an axis one value per entry of that axis; the kernels read them at
 * run time. */
#include <string.h>

#include <plinth/auto_pad.h>

#include "opset_internal.h"

/* A scale or zero point (input I) for data X: a scalar (or one element),
 * or a vector of X's dim at the axis (opset 13's per-axis form; ONNX
 * Runtime takes it, and the axis attribute, at opsets 10 to 12 too, and
 * its quantizer writes per-channel weights so into opset-11 models). */
static pl_status *qu_check_param(pl_infer_ctx *ctx, size_t i, const char *what)
{
    const pl_graph_tensor *p = pl_infer_input(ctx, i), *x = pl_infer_input(ctx, 0);
    size_t n;
    if (p == NULL || p->ndim < 0 || !pl_dims_elements(p->dims, p->ndim, &n))
        return NULL;
    if (p->ndim == 0 || (p->ndim == 1 && n == 1))
        return NULL;
    if (p->ndim == 1 && x->ndim > 0) {
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

/* ai.plinth TableLookup8(X, T): Y[i] = T[byte of X[i]], X's shape, T's
 * dtype; T holds 256 values, one per byte (an i8 X's -1 is byte 255).
 * What the optimiser makes of a chain of elementwise ops from one 8-bit
 * tensor to an 8-bit result (algebra.c, pl_alg_lut): the chain run once
 * on the 256 possible inputs, folded to T. */
static pl_status *qu_infer_lookup(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *t = pl_infer_input(ctx, 1);
    size_t n;
    if (t != NULL && t->ndim >= 0 && pl_dims_elements(t->dims, t->ndim, &n) && n != 256)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "the table has %zu values; it needs 256, one per byte", n);
    return pl_infer_set_output(ctx, 0, t->dtype, x->ndim, x->dims,
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

/* The output of an integer convolution of input IX by weights IW:
 * [N, M, spatial...] with Conv's arithmetic. */
static pl_status *qu_conv_shape(pl_infer_ctx *ctx, size_t ix, size_t iw, pl_dtype dt)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, ix), *w = pl_infer_input(ctx, iw);
    if (x->ndim < 0 || w->ndim < 0)
        return pl_infer_set_output(ctx, 0, dt, -1, NULL, NULL);
    int nsp = x->ndim - 2;
    int64_t group = pl_infer_attr_int(ctx, "group");
    if (nsp < 1 || w->ndim != x->ndim || group < 1 ||
        (x->dims[1] >= 0 && w->dims[1] >= 0 && x->dims[1] != w->dims[1] * group) ||
        (w->dims[0] >= 0 && w->dims[0] % group != 0))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "X [N, C, ...] and W [M, C / group, ...] do not fit (group %lld)",
                              (long long)group);
    const int64_t *ks, *pads, *strides, *dil;
    size_t nk, np, ns, nd;
    bool has_k = pl_infer_attr_ints(ctx, "kernel_shape", &ks, &nk);
    bool has_p = pl_infer_attr_ints(ctx, "pads", &pads, &np);
    bool has_s = pl_infer_attr_ints(ctx, "strides", &strides, &ns);
    bool has_d = pl_infer_attr_ints(ctx, "dilations", &dil, &nd);
    if ((has_k && nk != (size_t)nsp) || (has_p && np != 2 * (size_t)nsp) ||
        (has_s && ns != (size_t)nsp) || (has_d && nd != (size_t)nsp))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "kernel_shape, pads, strides or dilations do not have %d spatial "
                              "dims", nsp);
    const char *ap = pl_infer_attr_string(ctx, "auto_pad");
    pl_auto_pad mode = pl_auto_pad_parse_cstr(ap);
    bool same = pl_auto_pad_is_same(mode), valid = mode == PL_AUTO_PAD_VALID;
    if (mode == PL_AUTO_PAD_INVALID)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "auto_pad '%s' is unknown", ap);
    int64_t dims[PL_GRAPH_MAX_RANK];
    dims[0] = x->dims[0];
    dims[1] = w->dims[0];
    for (int d = 0; d < nsp; d++) {
        int64_t in = x->dims[d + 2], k = has_k ? ks[d] : w->dims[d + 2];
        int64_t st = has_s ? strides[d] : 1, dl = has_d ? dil[d] : 1;
        int64_t pad = has_p && !same && !valid ? pads[d] + pads[d + nsp] : 0;
        if (st < 1 || dl < 1 || (k >= 0 && k < 1))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "strides, dilations and kernel dims must be positive");
        if (in < 0 || k < 0)
            dims[d + 2] = -1;
        else if (same)
            dims[d + 2] = (in + st - 1) / st;
        else
            dims[d + 2] = (in + pad - dl * (k - 1) - 1) / st + 1;
        if (dims[d + 2] < -1 || (in >= 0 && k >= 0 && !same && in + pad < dl * (k - 1) + 1))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "the kernel does not fit spatial dim %d", d);
    }
    return pl_infer_set_output(ctx, 0, dt, x->ndim, dims, NULL);
}

static pl_status *qu_infer_conv_integer(pl_infer_ctx *ctx)
{
    return qu_conv_shape(ctx, 0, 1, PL_DTYPE_I32);
}

/* QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B. */
static pl_status *qu_infer_qlinear_conv(pl_infer_ctx *ctx)
{
    return qu_conv_shape(ctx, 0, 3, pl_infer_input_dtype(ctx, 7));
}

#define QU_Q8 (PL_TS_U8 | PL_TS_I8)
/* What QuantizeLinear and DequantizeLinear quantise to: 8-bit, and 16-bit
 * (ONNX 21; ONNX Runtime's quantizer writes it at every opset for its
 * 16-bit activations, through com.microsoft's ops, which lower to these). */
#define QU_QX (QU_Q8 | PL_TS_I16 | PL_TS_U16)

static const pl_attr_spec qu_axis_attrs[] = {PL_ATTR_I("axis", 1)};
static const pl_attr_spec qu_conv_attrs[] = {
    PL_ATTR_S("auto_pad", "NOTSET"), PL_ATTR_IS("dilations"), PL_ATTR_I("group", 1),
    PL_ATTR_IS("kernel_shape"), PL_ATTR_IS("pads"), PL_ATTR_IS("strides")};

#define QU_QUANTIZE(since)                                                                \
    {.name = "QuantizeLinear", .domain = "", .since_version = since, .min_inputs = 2,      \
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,          \
     .n_attrs = PL_COUNT(qu_axis_attrs),                                                   \
     .types = {{"T1", PL_TS_F32 | PL_TS_I32}, {"S", PL_TS_F32}, {"T2", QU_QX}},            \
     .input_types = {"T1", "S", "T2"}, .output_types = {"T2"}, .infer = qu_infer_quantize}
#define QU_DEQUANTIZE(since)                                                              \
    {.name = "DequantizeLinear", .domain = "", .since_version = since, .min_inputs = 2,    \
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,          \
     .n_attrs = PL_COUNT(qu_axis_attrs),                                                   \
     .types = {{"T", QU_QX | PL_TS_I32}, {"S", PL_TS_F32}},                                \
     .input_types = {"T", "S", "T"}, .output_types = {"S"}, .infer = qu_infer_dequantize}

const pl_op_schema pl_opset_quant_schemas[] = {
    /* 19, 21 and 23: 13's, once opset_lower.c has checked and removed
     * saturate, block_size, output_dtype and precision. */
    QU_QUANTIZE(19), QU_QUANTIZE(21), QU_QUANTIZE(23),
    QU_DEQUANTIZE(19), QU_DEQUANTIZE(21), QU_DEQUANTIZE(23),
    {.name = "QuantizeLinear", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T1", PL_TS_F32 | PL_TS_I32}, {"S", PL_TS_F32}, {"T2", QU_QX}},
     .input_types = {"T1", "S", "T2"}, .output_types = {"T2"}, .infer = qu_infer_quantize},
    {.name = "QuantizeLinear", .domain = "", .since_version = 13, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T1", PL_TS_F32 | PL_TS_I32}, {"S", PL_TS_F32}, {"T2", QU_QX}},
     .input_types = {"T1", "S", "T2"}, .output_types = {"T2"}, .infer = qu_infer_quantize},
    {.name = "DequantizeLinear", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T", QU_QX | PL_TS_I32}, {"S", PL_TS_F32}},
     .input_types = {"T", "S", "T"}, .output_types = {"S"}, .infer = qu_infer_dequantize},
    {.name = "DequantizeLinear", .domain = "", .since_version = 13, .min_inputs = 2,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1, .attrs = qu_axis_attrs,
     .n_attrs = PL_COUNT(qu_axis_attrs),
     .types = {{"T", QU_QX | PL_TS_I32}, {"S", PL_TS_F32}},
     .input_types = {"T", "S", "T"}, .output_types = {"S"}, .infer = qu_infer_dequantize},
    {.name = "TableLookup8", .domain = "ai.plinth", .since_version = 1, .min_inputs = 2,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T1", QU_Q8}, {"T2", QU_Q8}},
     .input_types = {"T1", "T2"}, .output_types = {"T2"}, .infer = qu_infer_lookup},
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
    {.name = "ConvInteger", .domain = "", .since_version = 10, .min_inputs = 2,
     .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .attrs = qu_conv_attrs,
     .n_attrs = PL_COUNT(qu_conv_attrs),
     .types = {{"T1", QU_Q8}, {"T2", QU_Q8}, {"T3", PL_TS_I32}},
     .input_types = {"T1", "T2", "T1", "T2"}, .output_types = {"T3"},
     .infer = qu_infer_conv_integer},
    /* Nine inputs, one more than a schema describes: the last described
     * type, which the rest repeat, names no constraint ("-"), so y_zero_point
     * and the i32 bias are typed by the inference (the output, of y's zero
     * point's dtype, must be T3) and the kernel. */
    {.name = "QLinearConv", .domain = "", .since_version = 10, .min_inputs = 8,
     .max_inputs = 9, .min_outputs = 1, .max_outputs = 1, .attrs = qu_conv_attrs,
     .n_attrs = PL_COUNT(qu_conv_attrs),
     .types = {{"T1", QU_Q8}, {"S", PL_TS_F32}, {"T2", QU_Q8}, {"T3", QU_Q8}},
     .input_types = {"T1", "S", "T1", "T2", "S", "T2", "S", "-"}, .output_types = {"T3"},
     .infer = qu_infer_qlinear_conv},
};
const size_t pl_opset_quant_count = PL_COUNT(pl_opset_quant_schemas);
