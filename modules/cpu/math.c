/* math.c — the cpu module's math family: its op table (elementwise math
 * with NumPy broadcasting, comparisons and Where, LogSoftmax, the
 * normalisations and the reductions) and the helpers its files share (see
 * math_internal.h). Its kernels take f32, f64 and the integer types ONNX
 * gives each op (f16 and bf16 come as f32, through dtype_wrap.c).
 *
 * Most of these kernels accept several dtypes, so their entries carry
 * CPU_OP_ANY_DTYPE: kernel.c then checks only arity and shapes, the builders
 * check dtypes, and the kernels check their run's arguments with
 * math_run_output. */
#include <string.h>

#include "math_internal.h"

#define MATH_ANY CPU_OP_ANY_DTYPE
#define MATH_MULTI (CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT)

const cpu_op_entry cpu_ops_math[] = {
    {"Sqrt", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Exp", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Log", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Neg", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Abs", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Reciprocal", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Erf", math_build_unary, 1, 1, 0, MATH_ANY},
    {"LeakyRelu", math_build_unary, 1, 1, 0, MATH_ANY},
    /* min and max: attributes before opset 11, optional inputs since. */
    {"Clip", math_build_unary, 1, 3, 0, MATH_ANY},
    {"Relu", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Sigmoid", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Tanh", math_build_unary, 1, 1, 0, MATH_ANY},
    {"Add", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Sub", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Mul", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Div", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Pow", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Equal", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Less", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Greater", math_build_broadcast, 2, 2, 0, MATH_ANY},
    {"Where", math_build_broadcast, 3, 3, 0, MATH_ANY},
    {"LogSoftmax", math_build_logsoftmax, 1, 1, 1u, CPU_OP_F64},
    {"BatchNormalization", math_build_batchnorm, 5, 5, 0, MATH_MULTI},
    {"LayerNormalization", math_build_layernorm, 2, 3, 0, MATH_MULTI},
    {"InstanceNormalization", math_build_instancenorm, 3, 3, 7u, CPU_OP_F64},
    /* axes: an attribute, or an optional input (ReduceSum from opset 13,
     * the others from 18). */
    {"ReduceMean", math_build_reduce, 1, 2, 0, MATH_ANY},
    {"ReduceSum", math_build_reduce, 1, 2, 0, MATH_ANY},
    {"ReduceMax", math_build_reduce, 1, 2, 0, MATH_ANY},
    {"Floor", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Ceil", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Round", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Sign", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Sin", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Cos", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Tan", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Asin", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Acos", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Atan", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Sinh", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Cosh", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Asinh", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Acosh", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Atanh", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Softplus", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Softsign", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Elu", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Selu", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Celu", math_build_functions, 1, 1, 0, MATH_ANY},
    {"HardSigmoid", math_build_functions, 1, 1, 0, MATH_ANY},
    {"HardSwish", math_build_functions, 1, 1, 0, MATH_ANY},
    {"ThresholdedRelu", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Shrink", math_build_functions, 1, 1, 0, MATH_ANY},
    {"IsNaN", math_build_functions, 1, 1, 0, MATH_ANY},
    {"IsInf", math_build_functions, 1, 1, 0, MATH_ANY},
    {"Not", math_build_functions, 1, 1, 0, MATH_ANY},
    {"And", math_build_nary, 2, 2, 0, MATH_ANY},
    {"Or", math_build_nary, 2, 2, 0, MATH_ANY},
    {"Xor", math_build_nary, 2, 2, 0, MATH_ANY},
    {"GreaterOrEqual", math_build_nary, 2, 2, 0, MATH_ANY},
    {"LessOrEqual", math_build_nary, 2, 2, 0, MATH_ANY},
    {"Mod", math_build_nary, 2, 2, 0, MATH_ANY},
    {"BitShift", math_build_nary, 2, 2, 0, MATH_ANY},
    {"BitwiseAnd", math_build_nary, 2, 2, 0, MATH_ANY},
    {"BitwiseOr", math_build_nary, 2, 2, 0, MATH_ANY},
    {"BitwiseXor", math_build_nary, 2, 2, 0, MATH_ANY},
    {"BitwiseNot", math_build_functions, 1, 1, 0, MATH_ANY},
    {"PRelu", math_build_nary, 2, 2, 0, MATH_ANY},
    {"Min", math_build_nary, 1, SIZE_MAX, 0, MATH_ANY},
    {"Max", math_build_nary, 1, SIZE_MAX, 0, MATH_ANY},
    {"Sum", math_build_nary, 1, SIZE_MAX, 0, MATH_ANY},
    {"Mean", math_build_nary, 1, SIZE_MAX, 0, MATH_ANY},
    {"ReduceMin", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceProd", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceL1", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceL2", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceSumSquare", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceLogSum", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ReduceLogSumExp", math_build_reduce_any, 1, 2, 0, MATH_ANY},
    {"ArgMax", math_build_arg, 1, 1, 0, MATH_ANY},
    {"ArgMin", math_build_arg, 1, 1, 0, MATH_ANY},
    /* k (Trilu) and axis (CumSum) may be computed at run time. */
    {"Trilu", math_build_trilu, 1, 2, 0, MATH_ANY},
    {"CumSum", math_build_cumsum, 2, 2, 0, MATH_ANY},
    {"CumProd", math_build_cumsum, 2, 2, 0, MATH_ANY},
    {"Size", math_build_size, 1, 1, 0, MATH_ANY},
    {NULL, NULL, 0, 0, 0, 0},
};

/* ---- dtypes -------------------------------------------------------------- */

static const struct {
    pl_dtype dt;
    const char *name;
    math_type type;
} math_dtypes[] = {
    {{PL_TYPE_FLOAT, 32, 1}, "f32", MATH_F32},   {{PL_TYPE_FLOAT, 64, 1}, "f64", MATH_F64},
    {{PL_TYPE_FLOAT, 16, 1}, "f16", MATH_OTHER}, {{PL_TYPE_BFLOAT, 16, 1}, "bf16", MATH_OTHER},
    {{PL_TYPE_UINT, 8, 1}, "u8", MATH_U8},       {{PL_TYPE_INT, 8, 1}, "i8", MATH_I8},
    {{PL_TYPE_INT, 32, 1}, "i32", MATH_I32},     {{PL_TYPE_INT, 64, 1}, "i64", MATH_I64},
    {{PL_TYPE_BOOL, 8, 1}, "bool", MATH_BOOL},
    /* computed widened (dtype_wrap.c) */
    {{PL_TYPE_INT, 16, 1}, "i16", MATH_OTHER},  {{PL_TYPE_UINT, 16, 1}, "u16", MATH_OTHER},
    {{PL_TYPE_UINT, 32, 1}, "u32", MATH_OTHER}, {{PL_TYPE_UINT, 64, 1}, "u64", MATH_OTHER},
};

const char *math_dtype_name(pl_dtype dt)
{
    for (size_t i = 0; i < sizeof math_dtypes / sizeof math_dtypes[0]; i++)
        if (PL_DTYPE_EQ(dt, math_dtypes[i].dt))
            return math_dtypes[i].name;
    return "unknown";
}

math_type math_type_of(pl_dtype dt)
{
    for (size_t i = 0; i < sizeof math_dtypes / sizeof math_dtypes[0]; i++)
        if (PL_DTYPE_EQ(dt, math_dtypes[i].dt))
            return math_dtypes[i].type;
    return MATH_OTHER;
}

pl_status *math_unsupported_dtype(const char *op, pl_dtype dt)
{
    return cpu_error(PL_CODE_UNSUPPORTED, op, "unsupported dtype %s", math_dtype_name(dt));
}

/* ---- node reading -------------------------------------------------------- */

static const pl_graph_api *math_view(const pl_node_desc *node, bool need_constants)
{
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, node_output))
        return NULL;
    if (need_constants && !PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant))
        return NULL;
    return g;
}

bool math_input_present(const pl_node_desc *node, size_t i)
{
    if (i >= node->n_inputs)
        return false;
    if (node->inputs[i].ndim >= 0)
        return true;
    const pl_graph_api *g = math_view(node, false);
    return g != NULL && g->node_input(node->graph, node->node_index, i) >= 0;
}

bool math_output_present(const pl_node_desc *node, size_t o)
{
    if (o >= node->n_outputs)
        return false;
    if (node->outputs[o].ndim >= 0)
        return true;
    const pl_graph_api *g = math_view(node, false);
    return g != NULL && g->node_output(node->graph, node->node_index, o) >= 0;
}

int math_input_constant(const pl_node_desc *node, size_t i, const void **out_data,
                        size_t *out_bytes)
{
    *out_data = NULL;
    *out_bytes = 0;
    const pl_graph_api *g = math_view(node, true);
    if (g == NULL || i >= node->n_inputs)
        return 0;
    int64_t t = g->node_input(node->graph, node->node_index, i);
    if (t < 0)
        return 0;
    return g->tensor_constant(node->graph, t, out_data, out_bytes);
}

int64_t math_opset(const pl_node_desc *node)
{
    return PL_ABI_HAS_FIELD(pl_node_desc, node, opset_version) && node->opset_version > 0
               ? node->opset_version
               : 13;
}

pl_status *math_same_size(const pl_node_desc *node, size_t i)
{
    const pl_tensor *x = &node->inputs[i], *o = &node->outputs[0];
    if (o->ndim >= 0 && cpu_elements(x->shape, x->ndim) == cpu_elements(o->shape, o->ndim))
        return NULL;
    char tx[128], to[128];
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s and output %s differ in size",
                     cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                     o->ndim >= 0 ? cpu_dims_text(o->shape, o->ndim, to, sizeof to) : "(unknown)");
}

/* ---- run-time checks ----------------------------------------------------- */

static bool math_tensor_empty(const pl_tensor *t)
{
    if (t->ndim <= 0 || t->shape == NULL)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] == 0)
            return true;
    return false;
}

pl_status *math_run_output(const pl_kernel *k, const pl_run_args *args, size_t o,
                           size_t elements, bool allow_add, void **out_data,
                           pl_output_request *out_req)
{
    *out_data = NULL;
    pl_output_request req = args->requests[o];
    *out_req = req;
    if (req == PL_REQ_NULL)
        return NULL;
    if (req != PL_REQ_WRITE && req != PL_REQ_INPLACE && req != PL_REQ_ADD_TO)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->op, "unknown output request %d", (int)req);
    if (req == PL_REQ_INPLACE && (o != 0 || !k->inplace_ok))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->op,
                         "in-place output %zu requested, but this op writes no output in place",
                         o);
    if (req == PL_REQ_ADD_TO && !allow_add)
        return cpu_error(PL_CODE_UNSUPPORTED, k->op,
                         "cannot accumulate into output %zu (PL_REQ_ADD_TO) of this dtype", o);
    const pl_tensor *out = &args->outputs[o];
    if (out->ndim < 0 || (out->ndim > 0 && out->shape == NULL) ||
        cpu_elements(out->shape, out->ndim) != elements)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->op,
                         "output %zu of the run does not have the %zu elements of the kernel", o,
                         elements);
    if (elements == 0)
        return NULL;
    for (size_t i = 0; i < k->n_reads; i++)
        if (args->inputs[i].data == NULL && !math_tensor_empty(&args->inputs[i]))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->op, "input %zu has no data", i);
    if (out->data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->op, "output %zu has no data", o);
    *out_data = (char *)out->data + out->byte_offset;
    return NULL;
}

/* ---- shared arithmetic --------------------------------------------------- */

float math_sum_f32(const float *x, size_t n)
{
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            acc[j] += x[i + (size_t)j];
    float tail = 0.0f;
    for (; i < n; i++)
        tail += x[i];
    for (int j = 0; j < 8; j++)
        acc[j] += acc[j + 8];
    for (int j = 0; j < 4; j++)
        acc[j] += acc[j + 4];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail;
}

int math_merge_dims(const int64_t *out_dims, int out_r, size_t n, int64_t (*s)[CPU_MAX_RANK],
                    int64_t *dims, int64_t (*stride)[CPU_MAX_RANK])
{
    int r = 0;
    for (int d = 0; d < out_r; d++) {
        if (out_dims[d] == 1)
            continue;
        bool merge = r > 0;
        for (size_t j = 0; merge && j < n; j++)
            merge = stride[j][r - 1] == s[j][d] * out_dims[d];
        if (merge) {
            dims[r - 1] *= out_dims[d];
            for (size_t j = 0; j < n; j++)
                stride[j][r - 1] = s[j][d];
            continue;
        }
        dims[r] = out_dims[d];
        for (size_t j = 0; j < n; j++)
            stride[j][r] = s[j][d];
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        for (size_t j = 0; j < n; j++)
            stride[j][0] = 1;
        r = 1;
    }
    return r;
}

pl_status *math_reduce_axes(const pl_node_desc *node, bool from_input, int32_t r, bool *reduce)
{
    const int64_t *axes = NULL;
    size_t n_axes = 0;
    int64_t noop = 0;
    pl_status *st;
    if (from_input) {
        if ((st = cpu_attr_int(node, "noop_with_empty_axes", 0, &noop)) != NULL)
            return st;
        if (math_input_present(node, 1)) {
            const void *data;
            size_t bytes;
            if (!PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64))
                return math_unsupported_dtype(node->op, node->inputs[1].dtype);
            if (!math_input_constant(node, 1, &data, &bytes))
                return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                                 "axes (input 1) computed at run time are not supported, "
                                 "only constant axes");
            axes = data;
            n_axes = bytes / sizeof(int64_t);
        }
    } else if ((st = cpu_attr_ints(node, "axes", &axes, &n_axes)) != NULL) {
        return st;
    }
    for (int32_t d = 0; d < r; d++)
        reduce[d] = n_axes == 0 && !noop;
    for (size_t i = 0; i < n_axes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "axis %lld out of range for rank %d", (long long)axes[i], (int)r);
        reduce[a] = true;
    }
    return NULL;
}
