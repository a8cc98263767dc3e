/* opset_elementwise.c — schemas of the elementwise ops: NumPy-broadcasting
 * binary ops (arithmetic, comparisons, Where), unary math and activations,
 * Clip, Softmax/LogSoftmax, Cast, Identity and Dropout (inference). Integer
 * arithmetic, comparisons, Where, Cast and Identity also carry known values
 * forward, because exported models compute shapes with them. */
#include <string.h>

#include "opset_internal.h"

/* ---- broadcasting --------------------------------------------------------- */

pl_status *pl_opset_broadcast_inputs(pl_infer_ctx *ctx, size_t n, int64_t *dims, int *out_rank,
                                     const char **params)
{
    *out_rank = -1;
    for (size_t i = 0; i < n; i++)
        if (pl_infer_input(ctx, i) != NULL && pl_infer_input_rank(ctx, i) < 0)
            return NULL;
    int rank = 0;
    for (size_t i = 0; i < n; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        if (t == NULL)
            continue;
        int64_t prev[PL_GRAPH_MAX_RANK];
        memcpy(prev, dims, (size_t)rank * sizeof *dims);
        int prev_rank = rank;
        if (!pl_opset_broadcast(prev, prev_rank, t->dims, t->ndim, dims, &rank)) {
            char a[160], b[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "shapes %s and %s cannot be broadcast",
                                  pl_dims_format(prev, prev_rank, a, sizeof a),
                                  pl_dims_format(t->dims, t->ndim, b, sizeof b));
        }
    }
    /* A symbolic dim survives where every input that has it agrees. */
    for (int d = 0; d < rank; d++) {
        params[d] = NULL;
        if (dims[d] >= 0)
            continue;
        bool conflict = false;
        for (size_t i = 0; i < n; i++) {
            const pl_graph_tensor *t = pl_infer_input(ctx, i);
            int k = t ? d - (rank - t->ndim) : -1;
            if (k < 0 || t->dims[k] != -1)
                continue;
            const char *p = t->dim_params ? t->dim_params[k] : NULL;
            if (p == NULL || (params[d] && strcmp(params[d], p) != 0))
                conflict = true;
            else
                params[d] = p;
        }
        if (conflict)
            params[d] = NULL;
    }
    *out_rank = rank;
    return NULL;
}

/* Number of elements of a known-value result of rank <= 1, or -1. */
static int64_t ew_known_count(int rank, const int64_t *dims)
{
    if (rank == 0)
        return 1;
    if (rank == 1 && dims[0] >= 0 && dims[0] <= PL_KNOWN_MAX)
        return dims[0];
    return -1;
}

typedef enum ew_op {
    EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_EQUAL, EW_LESS, EW_GREATER, EW_WHERE,
    EW_OTHER
} ew_op;

static ew_op ew_op_of(const char *op)
{
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Equal",
                                        "Less", "Greater", "Where"};
    for (size_t i = 0; i < PL_COUNT(names); i++)
        if (strcmp(op, names[i]) == 0)
            return (ew_op)i;
    return EW_OTHER;
}

/* Element E of known input I broadcast to COUNT elements; false when
 * unknown. */
static bool ew_known_at(const pl_infer_ctx *ctx, size_t i, int64_t e,
                        int64_t *out)
{
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (!pl_infer_known_ints(ctx, i, &v, &mask, &n) || n == 0)
        return false;
    size_t k = n == 1 ? 0 : (size_t)e;
    if (k >= n || !((mask >> k) & 1))
        return false;
    *out = v[k];
    return true;
}

/* Computes the known values of an integer binary op, comparison or Where. */
static pl_status *ew_propagate(pl_infer_ctx *ctx, int rank, const int64_t *dims)
{
    ew_op op = ew_op_of(pl_infer_node(ctx)->op);
    int64_t count = ew_known_count(rank, dims);
    if (op == EW_OTHER || count < 0)
        return NULL;
    /* Arithmetic and comparisons on floats have no integer known values. */
    size_t first = op == EW_WHERE ? 1 : 0;
    if (!(pl_dtype_set_of(pl_infer_input_dtype(ctx, first)) &
          (PL_TS_INT | PL_TS_BOOL)))
        return NULL;
    int64_t out[PL_KNOWN_MAX];
    uint64_t mask = 0;
    for (int64_t e = 0; e < count; e++) {
        int64_t a, b, c, r = 0;
        bool ok;
        if (op == EW_WHERE) {
            ok = ew_known_at(ctx, 0, e, &c) && ew_known_at(ctx, c ? 1 : 2, e, &r);
        } else {
            ok = ew_known_at(ctx, 0, e, &a) && ew_known_at(ctx, 1, e, &b);
            if (ok) {
                switch (op) {
                case EW_ADD: ok = !__builtin_add_overflow(a, b, &r); break;
                case EW_SUB: ok = !__builtin_sub_overflow(a, b, &r); break;
                case EW_MUL: ok = !__builtin_mul_overflow(a, b, &r); break;
                case EW_DIV:
                    ok = b != 0 && !(a == INT64_MIN && b == -1);
                    r = ok ? a / b : 0;
                    break;
                case EW_EQUAL: r = a == b; break;
                case EW_LESS: r = a < b; break;
                case EW_GREATER: r = a > b; break;
                default: ok = false; break;
                }
            }
        }
        if (ok) {
            out[e] = r;
            mask |= UINT64_C(1) << e;
        } else {
            out[e] = 0;
        }
    }
    if (mask == 0)
        return NULL;
    return pl_infer_set_known_ints(ctx, 0, out, mask, (size_t)count);
}

static pl_status *ew_infer_broadcast(pl_infer_ctx *ctx)
{
    size_t n = ew_op_of(pl_infer_node(ctx)->op) == EW_WHERE ? 3 : 2;
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    int rank;
    PL_RETURN_IF_ERROR(pl_opset_broadcast_inputs(ctx, n, dims, &rank, params));
    if (rank < 0)
        return NULL;
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank,
                                           dims, params));
    return ew_propagate(ctx, rank, dims);
}

/* ---- unary ---------------------------------------------------------------- */

static pl_status *ew_infer_unary(pl_infer_ctx *ctx)
{
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *ew_infer_identity(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 0, 0));
    const int64_t *v;
    const double *f;
    uint64_t mask;
    size_t n;
    if (pl_infer_known_ints(ctx, 0, &v, &mask, &n))
        return pl_infer_set_known_ints(ctx, 0, v, mask, n);
    if (pl_infer_known_floats(ctx, 0, &f, &n))
        return pl_infer_set_known_floats(ctx, 0, f, n);
    return NULL;
}

static pl_status *ew_infer_clip(pl_infer_ctx *ctx)
{
    /* Opset 11 moved min and max to optional scalar inputs. */
    for (size_t i = 1; i < 3; i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        size_t n;
        if (t == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n))
            continue;
        if (n != 1) {
            char a[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "%s ('%s') must be a scalar, its shape is %s",
                                  i == 1 ? "min" : "max", t->name,
                                  pl_dims_format(t->dims, t->ndim, a, sizeof a));
        }
    }
    if (pl_infer_has_attr(ctx, "min") && pl_infer_has_attr(ctx, "max") &&
        pl_infer_attr_float(ctx, "min") > pl_infer_attr_float(ctx, "max"))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "min %g is greater than max %g",
                              pl_infer_attr_float(ctx, "min"),
                              pl_infer_attr_float(ctx, "max"));
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *ew_infer_softmax(pl_infer_ctx *ctx)
{
    int32_t rank = pl_infer_input_rank(ctx, 0);
    int64_t axis = pl_infer_attr_int(ctx, "axis"), norm;
    if (rank >= 0 && !pl_infer_axis(axis, rank, &norm))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d",
                              (long long)axis, (int)rank);
    return pl_infer_copy_input(ctx, 0, 0);
}

/* BitCast (26): the input's bits as the 'to' type, of the same width; the
 * input's shape. */
static pl_status *ew_infer_bitcast(pl_infer_ctx *ctx)
{
    int64_t to = pl_infer_attr_int(ctx, "to");
    pl_dtype dt;
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (!pl_onnx_dtype(to, &dt))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "a bit cast to ONNX data type %lld is not supported", (long long)to);
    if (x->dtype.lanes != 0 && pl_dtype_size(x->dtype) != pl_dtype_size(dt))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "%s and %s differ in width; a bit cast keeps it",
                              pl_dtype_name(x->dtype), pl_dtype_name(dt));
    return pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims, (const char *const *)x->dim_params);
}

static pl_status *ew_infer_cast(pl_infer_ctx *ctx)
{
    int64_t to = pl_infer_attr_int(ctx, "to");
    pl_dtype dt;
    if (!pl_onnx_dtype(to, &dt))
        return pl_infer_error(ctx, PL_CODE_UNSUPPORTED,
                              "cast to ONNX data type %lld is not supported "
                              "(supported: float, double, float16, bfloat16, "
                              "uint8, int8, int32, int64, bool)",
                              (long long)to);
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, dt, x->ndim, x->dims,
                                           (const char *const *)x->dim_params));
    pl_dtype_set to_bit = pl_dtype_set_of(dt);
    const int64_t *v;
    const double *f;
    uint64_t mask;
    size_t n;
    int64_t out[PL_KNOWN_MAX];
    if (pl_infer_known_ints(ctx, 0, &v, &mask, &n)) {
        if (to_bit & PL_TS_FLOAT) {
            double fo[PL_KNOWN_MAX];
            if (mask != (n < 64 ? (UINT64_C(1) << n) - 1 : UINT64_MAX))
                return NULL;
            for (size_t e = 0; e < n; e++)
                fo[e] = (double)v[e];
            return pl_infer_set_known_floats(ctx, 0, fo, n);
        }
        for (size_t e = 0; e < n; e++) {
            switch (to_bit) {
            case PL_TS_I32: out[e] = (int32_t)v[e]; break;
            case PL_TS_I8: out[e] = (int8_t)v[e]; break;
            case PL_TS_U8: out[e] = (uint8_t)v[e]; break;
            case PL_TS_BOOL: out[e] = v[e] != 0; break;
            default: out[e] = v[e]; break;
            }
        }
        return pl_infer_set_known_ints(ctx, 0, out, mask, n);
    }
    if (pl_infer_known_floats(ctx, 0, &f, &n) && (to_bit & (PL_TS_INT | PL_TS_BOOL))) {
        for (size_t e = 0; e < n; e++) {
            if (!(f[e] > -9.0e18 && f[e] < 9.0e18))   /* NaN fails too */
                return NULL;
            out[e] = to_bit == PL_TS_BOOL ? f[e] != 0.0 : (int64_t)f[e];
        }
        return pl_infer_set_known_ints(ctx, 0, out,
                                       n < 64 ? (UINT64_C(1) << n) - 1 : UINT64_MAX,
                                       n);
    }
    return NULL;
}

static pl_status *ew_infer_dropout(pl_infer_ctx *ctx)
{
    if (pl_infer_has_attr(ctx, "ratio")) {
        double r = pl_infer_attr_float(ctx, "ratio");
        if (!(r >= 0.0 && r < 1.0))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "ratio %g is outside [0, 1)", r);
    }
    PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 0, 0));
    if (pl_infer_output_count(ctx) < 2)
        return NULL;
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    /* Dropout-7 returns the mask in the data's type, later versions bool. */
    pl_dtype mask = pl_infer_opset_version(ctx) >= 10 ? PL_DTYPE_BOOL : x->dtype;
    return pl_infer_set_output(ctx, 1, mask, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

/* ---- the schemas ------------------------------------------------------------ */

static const pl_attr_spec ew_leaky_attrs[] = {PL_ATTR_F("alpha", 0.01)};
static const pl_attr_spec ew_clip6_attrs[] = {
    PL_ATTR_F("min", -3.402823e+38), PL_ATTR_F("max", 3.402823e+38)};
static const pl_attr_spec ew_softmax1_attrs[] = {PL_ATTR_I("axis", 1)};
static const pl_attr_spec ew_softmax13_attrs[] = {PL_ATTR_I("axis", -1)};
static const pl_attr_spec ew_cast_attrs[] = {PL_ATTR_REQ("to", PL_ATTR_INT)};
/* Cast 19 added saturate and 24 round_mode; both act on float8 targets
 * only, which Plinth has no dtype for, so they are read and ignored. */
static const pl_attr_spec ew_cast19_attrs[] = {PL_ATTR_REQ("to", PL_ATTR_INT),
                                               PL_ATTR_I("saturate", 1)};
static const pl_attr_spec ew_cast24_attrs[] = {PL_ATTR_REQ("to", PL_ATTR_INT),
                                               PL_ATTR_I("saturate", 1),
                                               PL_ATTR_S("round_mode", "up")};
static const pl_attr_spec ew_dropout7_attrs[] = {PL_ATTR_F("ratio", 0.5)};
static const pl_attr_spec ew_dropout12_attrs[] = {PL_ATTR_I("seed", 0)};

#define EW_BINARY(op, set)                                                    \
    {.name = op, .domain = "", .since_version = 7, .min_inputs = 2,           \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                     \
     .types = {{"T", set}}, .input_types = {"T", "T"}, .output_types = {"T"}, \
     PL_INPLACE_0, .infer = ew_infer_broadcast}
#define EW_COMPARE(op, set)                                                   \
    {.name = op, .domain = "", .since_version = 7, .min_inputs = 2,           \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                     \
     .types = {{"T", set}, {"T1", PL_TS_BOOL}}, .input_types = {"T", "T"},    \
     .output_types = {"T1"}, .infer = ew_infer_broadcast}
#define EW_UNARY_ATTRS(op, since, set, attr_table, fn)                        \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table),                    \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     PL_INPLACE_0, .infer = fn}
#define EW_UNARY(op, since, set)                                              \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     PL_INPLACE_0, .infer = ew_infer_unary}

const pl_op_schema pl_opset_elementwise_schemas[] = {
    EW_BINARY("Add", PL_TS_NUM),
    EW_BINARY("Sub", PL_TS_NUM),
    EW_BINARY("Mul", PL_TS_NUM),
    EW_BINARY("Div", PL_TS_NUM),
    {.name = "Pow", .domain = "", .since_version = 7, .min_inputs = 2,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64}, {"T1", PL_TS_NUM}},
     .input_types = {"T", "T1"}, .output_types = {"T"}, PL_INPLACE_0,
     .infer = ew_infer_broadcast},
    EW_COMPARE("Equal", PL_TS_ALL),
    EW_COMPARE("Less", PL_TS_NUM),
    EW_COMPARE("Greater", PL_TS_NUM),
    {.name = "Where", .domain = "", .since_version = 9, .min_inputs = 3,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .types = {{"B", PL_TS_BOOL}, {"T", PL_TS_ALL}},
     .input_types = {"B", "T", "T"}, .output_types = {"T"},
     .infer = ew_infer_broadcast},

    EW_UNARY("Sqrt", 7, PL_TS_FLOAT),
    EW_UNARY("Exp", 7, PL_TS_FLOAT),
    EW_UNARY("Log", 7, PL_TS_FLOAT),
    EW_UNARY("Reciprocal", 7, PL_TS_FLOAT),
    EW_UNARY("Sigmoid", 7, PL_TS_FLOAT),
    EW_UNARY("Tanh", 7, PL_TS_FLOAT),
    EW_UNARY("Erf", 9, PL_TS_NUM),
    EW_UNARY("Relu", 7, PL_TS_FLOAT | PL_TS_SINT),
    EW_UNARY("Neg", 7, PL_TS_FLOAT | PL_TS_SINT),
    EW_UNARY("Abs", 7, PL_TS_NUM),
    EW_UNARY_ATTRS("LeakyRelu", 7, PL_TS_FLOAT, ew_leaky_attrs, ew_infer_unary),
    EW_UNARY_ATTRS("Clip", 7, PL_TS_FLOAT, ew_clip6_attrs, ew_infer_clip),
    {.name = "Clip", .domain = "", .since_version = 11, .min_inputs = 1,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_NUM}}, .input_types = {"T", "T", "T"},
     .output_types = {"T"}, PL_INPLACE_0, .infer = ew_infer_clip},
    EW_UNARY_ATTRS("Softmax", 7, PL_TS_FLOAT, ew_softmax1_attrs, ew_infer_softmax),
    EW_UNARY_ATTRS("Softmax", 13, PL_TS_FLOAT, ew_softmax13_attrs, ew_infer_softmax),
    EW_UNARY_ATTRS("LogSoftmax", 7, PL_TS_FLOAT, ew_softmax1_attrs, ew_infer_softmax),
    EW_UNARY_ATTRS("LogSoftmax", 13, PL_TS_FLOAT, ew_softmax13_attrs, ew_infer_softmax),
    {.name = "Identity", .domain = "", .since_version = 7, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_ALL}}, .input_types = {"T"}, .output_types = {"T"},
     PL_INPLACE_0, .infer = ew_infer_identity},
#define EW_CAST(since, attr_table)                                             \
    {.name = "Cast", .domain = "", .since_version = since, .min_inputs = 1,    \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                      \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table),                     \
     .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_ALL}}, .input_types = {"T1"},   \
     .output_types = {"T2"}, .infer = ew_infer_cast}
    EW_CAST(7, ew_cast_attrs),
    EW_CAST(19, ew_cast19_attrs),
    EW_CAST(24, ew_cast24_attrs),
    {.name = "BitCast", .domain = "", .since_version = 26, .min_inputs = 1, .max_inputs = 1,
     .min_outputs = 1, .max_outputs = 1, .attrs = ew_cast_attrs,
     .n_attrs = PL_COUNT(ew_cast_attrs), .types = {{"T1", PL_TS_ALL}, {"T2", PL_TS_ALL}},
     .input_types = {"T1"}, .output_types = {"T2"}, .infer = ew_infer_bitcast},
    {.name = "Dropout", .domain = "", .since_version = 7, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
     .attrs = ew_dropout7_attrs, .n_attrs = PL_COUNT(ew_dropout7_attrs),
     .types = {{"T", PL_TS_FLOAT}}, .input_types = {"T"},
     .output_types = {"T"}, PL_INPLACE_0, .infer = ew_infer_dropout},
    {.name = "Dropout", .domain = "", .since_version = 10, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 2,
     .attrs = ew_dropout7_attrs, .n_attrs = PL_COUNT(ew_dropout7_attrs),
     .types = {{"T", PL_TS_FLOAT}, {"T1", PL_TS_BOOL}}, .input_types = {"T"},
     .output_types = {"T", "T1"}, PL_INPLACE_0, .infer = ew_infer_dropout},
    {.name = "Dropout", .domain = "", .since_version = 12, .min_inputs = 1,
     .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
     .attrs = ew_dropout12_attrs, .n_attrs = PL_COUNT(ew_dropout12_attrs),
     .types = {{"T", PL_TS_FLOAT}, {"T1", PL_TS_FLOAT}, {"T2", PL_TS_BOOL}},
     .input_types = {"T", "T1", "T2"}, .output_types = {"T", "T2"},
     PL_INPLACE_0, .infer = ew_infer_dropout},
};
const size_t pl_opset_elementwise_count = PL_COUNT(pl_opset_elementwise_schemas);
