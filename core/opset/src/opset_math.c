/* opset_math.c — schemas of ONNX's math ops past the arithmetic basics of
 * opset_elementwise.c: rounding, trigonometric and activation functions
 * (Floor … HardSwish, Sign, IsNaN, IsInf, Not), the broadcasting logical,
 * ordering and integer ops (And Or Xor GreaterOrEqual LessOrEqual Mod
 * BitShift PRelu), the variadic Min Max Sum Mean (same shapes before opset
 * 8, broadcasting since), the reductions opset_nn.c does not have
 * (ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum
 * ReduceLogSumExp), ArgMax/ArgMin, Trilu, CumSum and Size. Size carries its
 * value forward as a known value, because exported models compute shapes
 * with it. */
#include <string.h>

#include "opset_internal.h"

/* ---- broadcasting --------------------------------------------------------- */

/* Variadic and binary broadcasting ops. The output's dtype is preset: the
 * inputs' T, or bool (comparisons and logical ops, whose output constraint
 * allows bool only). */
/* Known values of an integer Min, Max or Sum (exporters take the larger of
 * two shapes' dims with Max, as tf2onnx's Einsum does): element by element
 * with broadcasting, where every input's element is known. */
static pl_status *mo_variadic_known(pl_infer_ctx *ctx, int rank, const int64_t *dims)
{
    const char *op = pl_infer_node(ctx)->op;
    int kind = strcmp(op, "Min") == 0 ? 0 : strcmp(op, "Max") == 0 ? 1
             : strcmp(op, "Sum") == 0 ? 2 : -1;
    size_t n_in = pl_infer_input_count(ctx);
    if (kind < 0 || n_in == 0 || rank > 1 || (rank == 1 && (dims[0] < 0 || dims[0] > PL_KNOWN_MAX)) ||
        !(pl_dtype_set_of(pl_infer_input_dtype(ctx, 0)) & PL_TS_INT))
        return NULL;
    size_t count = rank == 0 ? 1 : (size_t)dims[0];
    int64_t out[PL_KNOWN_MAX];
    uint64_t mask = 0;
    for (size_t e = 0; e < count; e++) {
        bool ok = true;
        int64_t r = 0;
        for (size_t i = 0; i < n_in && ok; i++) {
            const int64_t *v;
            uint64_t m;
            size_t n;
            ok = pl_infer_known_ints(ctx, i, &v, &m, &n) && n > 0;
            size_t k = ok && n == 1 ? 0 : e;
            ok = ok && k < n && ((m >> k) & 1);
            if (!ok)
                break;
            if (i == 0)
                r = v[k];
            else if (kind == 0)
                r = v[k] < r ? v[k] : r;
            else if (kind == 1)
                r = v[k] > r ? v[k] : r;
            else
                ok = !__builtin_add_overflow(r, v[k], &r);
        }
        out[e] = ok ? r : 0;
        if (ok)
            mask |= UINT64_C(1) << e;
    }
    return mask ? pl_infer_set_known_ints(ctx, 0, out, mask, count) : NULL;
}

static pl_status *mo_infer_broadcast(pl_infer_ctx *ctx)
{
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK];
    int rank;
    PL_RETURN_IF_ERROR(
        pl_opset_broadcast_inputs(ctx, pl_infer_input_count(ctx), dims, &rank, params));
    if (rank < 0)
        return NULL;
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, params));
    return mo_variadic_known(ctx, rank, dims);
}

/* Min Max Sum Mean before opset 8: every input has the output's shape (no
 * broadcasting); unknown dims are filled from the inputs that know them. */
static pl_status *mo_infer_same_shape(pl_infer_ctx *ctx)
{
    int64_t dims[PL_GRAPH_MAX_RANK];
    int32_t rank = -1;
    size_t first = 0;
    for (size_t i = 0; i < pl_infer_input_count(ctx); i++) {
        const pl_graph_tensor *t = pl_infer_input(ctx, i);
        if (t == NULL || t->ndim < 0)
            continue;
        if (rank < 0) {
            rank = t->ndim;
            first = i;
            if (rank > 0) /* a scalar has no dims array */
                memcpy(dims, t->dims, (size_t)rank * sizeof *dims);
            continue;
        }
        bool same = t->ndim == rank;
        for (int32_t d = 0; same && d < rank; d++) {
            if (dims[d] < 0)
                dims[d] = t->dims[d];
            else
                same = t->dims[d] < 0 || t->dims[d] == dims[d];
        }
        if (!same) {
            char a[160], b[160];
            const pl_graph_tensor *f = pl_infer_input(ctx, first);
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "inputs %zu %s and %zu %s differ in shape; before opset 8 "
                                  "the inputs do not broadcast",
                                  first, pl_dims_format(f->dims, f->ndim, a, sizeof a), i,
                                  pl_dims_format(t->dims, t->ndim, b, sizeof b));
        }
    }
    if (rank < 0)
        return NULL;
    return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, rank, dims, NULL);
}

static pl_status *mo_infer_mod(pl_infer_ctx *ctx)
{
    pl_dtype dt = pl_infer_input_dtype(ctx, 0);
    /* before 28, fmod = 0 (floor) was defined for integers only */
    if ((pl_dtype_set_of(dt) & PL_TS_FLOAT) && pl_infer_attr_int(ctx, "fmod") != 1 &&
        pl_infer_opset_version(ctx) < 28)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "fmod must be 1 for floating-point inputs (it is %lld)",
                              (long long)pl_infer_attr_int(ctx, "fmod"));
    return mo_infer_broadcast(ctx);
}

static pl_status *mo_infer_bitshift(pl_infer_ctx *ctx)
{
    const char *dir = pl_infer_attr_string(ctx, "direction");
    if (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "direction '%s' is neither LEFT nor RIGHT", dir);
    return mo_infer_broadcast(ctx);
}

/* PRelu: the slope broadcasts to X (one way), and Y has X's shape. */
static pl_status *mo_infer_prelu(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0), *s = pl_infer_input(ctx, 1);
    if (x->ndim >= 0 && s->ndim >= 0) {
        int64_t dims[PL_GRAPH_MAX_RANK];
        int rank;
        bool ok = pl_opset_broadcast(x->dims, x->ndim, s->dims, s->ndim, dims, &rank) &&
                  rank == x->ndim;
        for (int d = 0; ok && d < rank; d++)
            ok = x->dims[d] < 0 || dims[d] == x->dims[d];
        if (!ok) {
            char a[160], b[160];
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "slope %s does not broadcast to X %s",
                                  pl_dims_format(s->dims, s->ndim, a, sizeof a),
                                  pl_dims_format(x->dims, x->ndim, b, sizeof b));
        }
    }
    return pl_infer_copy_input(ctx, 0, 0);
}

/* ---- unary ---------------------------------------------------------------- */

static pl_status *mo_infer_unary(pl_infer_ctx *ctx)
{
    return pl_infer_copy_input(ctx, 0, 0);
}

/* Not: X's type, and the known values negated (exporters write `if not
 * x.dim() == 3` as Not of an Equal of Size of Shape: an If on it is decided
 * before the run only when the Not is known). */
static pl_status *mo_infer_not(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(pl_infer_copy_input(ctx, 0, 0));
    const int64_t *v;
    uint64_t mask;
    size_t n;
    if (!pl_infer_known_ints(ctx, 0, &v, &mask, &n) || n == 0 || n > PL_KNOWN_MAX)
        return NULL;
    int64_t out[PL_KNOWN_MAX];
    for (size_t k = 0; k < n; k++)
        out[k] = v[k] == 0;
    return pl_infer_set_known_ints(ctx, 0, out, mask, n);
}

/* IsNaN, IsInf: X's shape, bool. */
static pl_status *mo_infer_is(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    return pl_infer_set_output(ctx, 0, PL_DTYPE_BOOL, x->ndim, x->dims,
                               (const char *const *)x->dim_params);
}

static pl_status *mo_infer_shrink(pl_infer_ctx *ctx)
{
    if (pl_infer_attr_float(ctx, "lambd") < 0.0)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "lambd %g is negative",
                              pl_infer_attr_float(ctx, "lambd"));
    return pl_infer_copy_input(ctx, 0, 0);
}

/* ---- reductions ----------------------------------------------------------- */

/* Marks the axes of the node in REDUCE (rank R): *out_all when every axis
 * is reduced, *out_noop when none is. False in *out_known when the axes
 * are a run-time input. */
static pl_status *mo_reduce_axes(pl_infer_ctx *ctx, int32_t r, bool *reduce,
                                 bool *out_known)
{
    int64_t axes[PL_KNOWN_MAX];
    size_t n_axes;
    int state;
    *out_known = true;
    PL_RETURN_IF_ERROR(pl_infer_ints_arg(ctx, 1, "axes", axes, &n_axes, &state));
    if (state < 0) {
        *out_known = false;
        return NULL;
    }
    bool noop = pl_infer_has_attr(ctx, "noop_with_empty_axes") &&
                pl_infer_attr_int(ctx, "noop_with_empty_axes") != 0;
    for (int32_t d = 0; d < r; d++)
        reduce[d] = n_axes == 0 && !noop;
    for (size_t i = 0; i < n_axes; i++) {
        int64_t a;
        if (!pl_infer_axis(axes[i], r, &a))
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is out of range for rank %d",
                                  (long long)axes[i], (int)r);
        if (reduce[a])
            return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                                  "axis %lld is given twice", (long long)axes[i]);
        reduce[a] = true;
    }
    return NULL;
}

/* The output of a reduction of X over REDUCE: kept dims, or 1 with
 * keepdims. */
static pl_status *mo_reduce_output(pl_infer_ctx *ctx, pl_dtype dt, const bool *reduce,
                                   bool keep)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t dims[PL_GRAPH_MAX_RANK];
    const char *params[PL_GRAPH_MAX_RANK] = {0};
    int32_t rank = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (reduce[d] && !keep)
            continue;
        params[rank] = !reduce[d] && x->dim_params ? x->dim_params[d] : NULL;
        dims[rank++] = reduce[d] ? 1 : x->dims[d];
    }
    return pl_infer_set_output(ctx, 0, dt, rank, dims, params);
}

static pl_status *mo_infer_reduce(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    bool keep = pl_infer_attr_int(ctx, "keepdims") != 0;
    bool reduce[PL_GRAPH_MAX_RANK] = {false}, known;
    PL_RETURN_IF_ERROR(mo_reduce_axes(ctx, x->ndim < 0 ? 0 : x->ndim, reduce, &known));
    if (x->ndim < 0)
        return NULL;
    if (!known) {
        /* Axes computed at run time: with keepdims the rank is known. */
        if (!keep)
            return NULL;
        int64_t dims[PL_GRAPH_MAX_RANK];
        for (int32_t d = 0; d < x->ndim; d++)
            dims[d] = x->dims[d] == 1 ? 1 : -1;
        return pl_infer_set_output(ctx, 0, PL_DTYPE_UNKNOWN, x->ndim, dims, NULL);
    }
    PL_RETURN_IF_ERROR(mo_reduce_output(ctx, PL_DTYPE_UNKNOWN, reduce, keep));
    return pl_infer_reduce_known(ctx, x->ndim == 0 || (x->ndim == 1 && reduce[0]));
}

/* ArgMax, ArgMin: one axis, i64 indices. */
static pl_status *mo_infer_arg(pl_infer_ctx *ctx)
{
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    int64_t axis = pl_infer_attr_int(ctx, "axis"), a;
    if (x->ndim < 0)
        return NULL;
    if (!pl_infer_axis(axis, x->ndim, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d", (long long)axis,
                              (int)x->ndim);
    bool reduce[PL_GRAPH_MAX_RANK] = {false};
    reduce[a] = true;
    return mo_reduce_output(ctx, PL_DTYPE_I64, reduce, pl_infer_attr_int(ctx, "keepdims") != 0);
}

/* ---- Trilu, CumSum, Size -------------------------------------------------- */

/* True when input I is present with a known shape of more than one
 * element (a scalar argument given as a vector of several). */
static bool mo_not_scalar(const pl_infer_ctx *ctx, size_t i, bool allow_vector)
{
    const pl_graph_tensor *t = pl_infer_input(ctx, i);
    size_t n;
    if (t == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n))
        return false;
    return n != 1 || t->ndim > (allow_vector ? 1 : 0);
}

static pl_status *mo_infer_trilu(pl_infer_ctx *ctx)
{
    int32_t rank = pl_infer_input_rank(ctx, 0);
    if (rank >= 0 && rank < 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "input has rank %d, Trilu needs at least 2", (int)rank);
    if (mo_not_scalar(ctx, 1, false))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "k must be a scalar");
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *mo_infer_cumsum(pl_infer_ctx *ctx)
{
    int32_t rank = pl_infer_input_rank(ctx, 0);
    if (mo_not_scalar(ctx, 1, true))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "axis must be a scalar");
    const int64_t *v;
    uint64_t mask;
    size_t n;
    int64_t a;
    if (rank >= 0 && pl_infer_known_ints(ctx, 1, &v, &mask, &n) && n == 1 && (mask & 1) &&
        !pl_infer_axis(v[0], rank, &a))
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT,
                              "axis %lld is out of range for rank %d", (long long)v[0],
                              (int)rank);
    return pl_infer_copy_input(ctx, 0, 0);
}

static pl_status *mo_infer_size(pl_infer_ctx *ctx)
{
    PL_RETURN_IF_ERROR(pl_infer_set_output(ctx, 0, PL_DTYPE_I64, 0, NULL, NULL));
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    size_t n;
    if (x->ndim < 0 || !pl_dims_elements(x->dims, x->ndim, &n) || n > (size_t)INT64_MAX)
        return NULL;
    int64_t v = (int64_t)n;
    return pl_infer_set_known_ints(ctx, 0, &v, 1, 1);
}

/* ---- the schemas ------------------------------------------------------------ */

static const pl_attr_spec mo_alpha1_attrs[] = {PL_ATTR_F("alpha", 1.0)};
static const pl_attr_spec mo_selu_attrs[] = {
    PL_ATTR_F("alpha", 1.67326319217681884765625),
    PL_ATTR_F("gamma", 1.05070102214813232421875)};
static const pl_attr_spec mo_hardsigmoid_attrs[] = {
    PL_ATTR_F("alpha", 0.2), PL_ATTR_F("beta", 0.5)};
static const pl_attr_spec mo_shrink_attrs[] = {
    PL_ATTR_F("bias", 0.0), PL_ATTR_F("lambd", 0.5)};
static const pl_attr_spec mo_isinf_attrs[] = {
    PL_ATTR_I("detect_negative", 1), PL_ATTR_I("detect_positive", 1)};
static const pl_attr_spec mo_mod_attrs[] = {PL_ATTR_I("fmod", 0)};
static const pl_attr_spec mo_bitshift_attrs[] = {PL_ATTR_REQ("direction", PL_ATTR_STRING)};
static const pl_attr_spec mo_reduce_attr_axes[] = {
    PL_ATTR_IS("axes"), PL_ATTR_I("keepdims", 1)};
static const pl_attr_spec mo_reduce_input_axes[] = {
    PL_ATTR_I("keepdims", 1), PL_ATTR_I("noop_with_empty_axes", 0)};
static const pl_attr_spec mo_arg7_attrs[] = {PL_ATTR_I("axis", 0), PL_ATTR_I("keepdims", 1)};
static const pl_attr_spec mo_arg12_attrs[] = {
    PL_ATTR_I("axis", 0), PL_ATTR_I("keepdims", 1), PL_ATTR_I("select_last_index", 0)};
static const pl_attr_spec mo_trilu_attrs[] = {PL_ATTR_I("upper", 1)};
static const pl_attr_spec mo_cumsum_attrs[] = {
    PL_ATTR_I("exclusive", 0), PL_ATTR_I("reverse", 0)};

#define MO_NUM (PL_TS_FLOAT | PL_TS_INT)

#define MO_UNARY_FN(op, since, set, attr_table, n_attr, fn)                   \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = attr_table, .n_attrs = n_attr,                                  \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     PL_INPLACE_0, .infer = fn}
#define MO_UNARY(op, since, set) MO_UNARY_FN(op, since, set, NULL, 0, mo_infer_unary)
#define MO_UNARY_ATTRS(op, since, set, attr_table)                            \
    MO_UNARY_FN(op, since, set, attr_table, PL_COUNT(attr_table), mo_infer_unary)
#define MO_IS(op, since, attr_table, n_attr)                                  \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = attr_table, .n_attrs = n_attr,                                  \
     .types = {{"T1", PL_TS_FLOAT}, {"T2", PL_TS_BOOL}},                      \
     .input_types = {"T1"}, .output_types = {"T2"}, .infer = mo_infer_is}
#define MO_BINARY(op, since, set, attr_table, n_attr, fn)                     \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 2,       \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = attr_table, .n_attrs = n_attr,                                  \
     .types = {{"T", set}}, .input_types = {"T", "T"}, .output_types = {"T"}, \
     PL_INPLACE_0, .infer = fn}
#define MO_TO_BOOL(op, since, set)                                            \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 2,       \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                     \
     .types = {{"T", set}, {"T1", PL_TS_BOOL}}, .input_types = {"T", "T"},    \
     .output_types = {"T1"}, .infer = mo_infer_broadcast}
#define MO_VARIADIC(op, since, set)                                           \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = PL_OP_VARIADIC, .min_outputs = 1, .max_outputs = 1,        \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     PL_INPLACE_0, .infer = mo_infer_broadcast}
#define MO_VARIADIC_SAME(op, since, set)                                      \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = PL_OP_VARIADIC, .min_outputs = 1, .max_outputs = 1,        \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     PL_INPLACE_0, .infer = mo_infer_same_shape}
#define MO_REDUCE_ATTR(op, set)                                               \
    {.name = op, .domain = "", .since_version = 7, .min_inputs = 1,           \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = mo_reduce_attr_axes, .n_attrs = PL_COUNT(mo_reduce_attr_axes),  \
     .types = {{"T", set}}, .input_types = {"T"}, .output_types = {"T"},      \
     .infer = mo_infer_reduce}
#define MO_REDUCE_INPUT(op, set)                                              \
    {.name = op, .domain = "", .since_version = 18, .min_inputs = 1,          \
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = mo_reduce_input_axes, .n_attrs = PL_COUNT(mo_reduce_input_axes), \
     .types = {{"T", set}, {"I", PL_TS_I64}}, .input_types = {"T", "I"},      \
     .output_types = {"T"}, .infer = mo_infer_reduce}
#define MO_REDUCE(op, set) MO_REDUCE_ATTR(op, set), MO_REDUCE_INPUT(op, set)
#define MO_ARG(op, since, attr_table)                                         \
    {.name = op, .domain = "", .since_version = since, .min_inputs = 1,       \
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,                     \
     .attrs = attr_table, .n_attrs = PL_COUNT(attr_table),                    \
     .types = {{"T", MO_NUM}, {"I", PL_TS_I64}}, .input_types = {"T"},        \
     .output_types = {"I"}, .infer = mo_infer_arg}

const pl_op_schema pl_opset_math_schemas[] = {
    /* Rounding and trigonometry (ONNX 6 and 7 are both served from 7). */
    MO_UNARY("Floor", 7, PL_TS_FLOAT),
    MO_UNARY("Ceil", 7, PL_TS_FLOAT),
    MO_UNARY("Round", 11, PL_TS_FLOAT),
    MO_UNARY("Sign", 9, MO_NUM),
    MO_UNARY("Sin", 7, PL_TS_FLOAT),
    MO_UNARY("Cos", 7, PL_TS_FLOAT),
    MO_UNARY("Tan", 7, PL_TS_FLOAT),
    MO_UNARY("Asin", 7, PL_TS_FLOAT),
    MO_UNARY("Acos", 7, PL_TS_FLOAT),
    MO_UNARY("Atan", 7, PL_TS_FLOAT),
    MO_UNARY("Sinh", 9, PL_TS_FLOAT),
    MO_UNARY("Cosh", 9, PL_TS_FLOAT),
    MO_UNARY("Asinh", 9, PL_TS_FLOAT),
    MO_UNARY("Acosh", 9, PL_TS_FLOAT),
    MO_UNARY("Atanh", 9, PL_TS_FLOAT),
    /* Activations. */
    MO_UNARY("Softplus", 7, PL_TS_FLOAT),
    MO_UNARY("Softsign", 7, PL_TS_FLOAT),
    MO_UNARY_ATTRS("Elu", 7, PL_TS_FLOAT, mo_alpha1_attrs),
    MO_UNARY_ATTRS("Selu", 7, PL_TS_FLOAT, mo_selu_attrs),
    MO_UNARY_ATTRS("Celu", 12, PL_TS_F32, mo_alpha1_attrs),
    /* 28 admits f16, bf16 and f64 (the cpu module computes the 16-bit
     * ones in f32, dtype_wrap.c) */
    MO_UNARY_ATTRS("Celu", 28, PL_TS_F32 | PL_TS_F16 | PL_TS_BF16 | PL_TS_F64, mo_alpha1_attrs),
    MO_UNARY_ATTRS("HardSigmoid", 7, PL_TS_FLOAT, mo_hardsigmoid_attrs),
    MO_UNARY("HardSwish", 14, PL_TS_FLOAT),
    MO_UNARY_ATTRS("ThresholdedRelu", 10, PL_TS_FLOAT, mo_alpha1_attrs),
    MO_UNARY_FN("Shrink", 9, MO_NUM, mo_shrink_attrs, PL_COUNT(mo_shrink_attrs),
                mo_infer_shrink),
    MO_IS("IsNaN", 9, NULL, 0),
    MO_IS("IsInf", 10, mo_isinf_attrs, PL_COUNT(mo_isinf_attrs)),
    MO_UNARY_FN("Not", 7, PL_TS_BOOL, NULL, 0, mo_infer_not),
    /* Broadcasting binary ops. */
    MO_TO_BOOL("And", 7, PL_TS_BOOL),
    MO_TO_BOOL("Or", 7, PL_TS_BOOL),
    MO_TO_BOOL("Xor", 7, PL_TS_BOOL),
    MO_TO_BOOL("GreaterOrEqual", 12, MO_NUM),
    MO_TO_BOOL("LessOrEqual", 12, MO_NUM),
    MO_BINARY("Mod", 10, MO_NUM, mo_mod_attrs, PL_COUNT(mo_mod_attrs), mo_infer_mod),
    /* 28 defined fmod = 0 (floor, the sign of the divisor) for floats */
    MO_BINARY("Mod", 28, MO_NUM, mo_mod_attrs, PL_COUNT(mo_mod_attrs), mo_infer_mod),
    /* Bitwise ops of opset 18, on the integer types Plinth has */
    MO_BINARY("BitwiseAnd", 18, PL_TS_INT, NULL, 0, mo_infer_broadcast),
    MO_BINARY("BitwiseOr", 18, PL_TS_INT, NULL, 0, mo_infer_broadcast),
    MO_BINARY("BitwiseXor", 18, PL_TS_INT, NULL, 0, mo_infer_broadcast),
    MO_UNARY("BitwiseNot", 18, PL_TS_INT),
    MO_BINARY("BitShift", 11, PL_TS_UINT, mo_bitshift_attrs, PL_COUNT(mo_bitshift_attrs),
              mo_infer_bitshift),
    /* 28 admits signed integers (arithmetic right shift; a shift below 0 or
     * of the width or more leaves only the sign) */
    MO_BINARY("BitShift", 28, PL_TS_INT, mo_bitshift_attrs, PL_COUNT(mo_bitshift_attrs),
              mo_infer_bitshift),
    MO_BINARY("PRelu", 7, PL_TS_FLOAT, NULL, 0, mo_infer_prelu),
    MO_BINARY("PRelu", 9, PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64, NULL, 0, mo_infer_prelu),
    /* Variadic: same shapes at opset 6 and 7 (ONNX's version 6; a model of
     * opset 1 to 5 is converted to 7 first), broadcasting from opset 8,
     * every numeric type from 12. */
    MO_VARIADIC_SAME("Min", 6, PL_TS_FLOAT),
    MO_VARIADIC_SAME("Max", 6, PL_TS_FLOAT),
    MO_VARIADIC_SAME("Sum", 6, PL_TS_FLOAT),
    MO_VARIADIC_SAME("Mean", 6, PL_TS_FLOAT),
    MO_VARIADIC("Min", 8, PL_TS_FLOAT),
    MO_VARIADIC("Min", 12, MO_NUM),
    MO_VARIADIC("Max", 8, PL_TS_FLOAT),
    MO_VARIADIC("Max", 12, MO_NUM),
    MO_VARIADIC("Sum", 8, PL_TS_FLOAT),
    MO_VARIADIC("Mean", 8, PL_TS_FLOAT),
    /* Reductions: axes an attribute, an optional input from opset 18. */
    MO_REDUCE("ReduceMin", MO_NUM),
    /* 20 admits bool */
    {.name = "ReduceMin", .domain = "", .since_version = 20, .min_inputs = 1,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1, .attrs = mo_reduce_input_axes,
     .n_attrs = PL_COUNT(mo_reduce_input_axes), .types = {{"T", MO_NUM | PL_TS_BOOL}, {"I", PL_TS_I64}},
     .input_types = {"T", "I"}, .output_types = {"T"}, .infer = mo_infer_reduce},
    MO_REDUCE("ReduceProd", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_REDUCE("ReduceL1", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_REDUCE("ReduceL2", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_REDUCE("ReduceSumSquare", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_REDUCE("ReduceLogSum", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_REDUCE("ReduceLogSumExp", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64),
    MO_ARG("ArgMax", 7, mo_arg7_attrs),
    MO_ARG("ArgMax", 12, mo_arg12_attrs),
    MO_ARG("ArgMin", 7, mo_arg7_attrs),
    MO_ARG("ArgMin", 12, mo_arg12_attrs),
    /* Matrices, scans and sizes. */
    {.name = "Trilu", .domain = "", .since_version = 14, .min_inputs = 1,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .attrs = mo_trilu_attrs, .n_attrs = PL_COUNT(mo_trilu_attrs),
     .types = {{"T", PL_TS_ALL}, {"I", PL_TS_I64}}, .input_types = {"T", "I"},
     .output_types = {"T"}, PL_INPLACE_0, .infer = mo_infer_trilu},
    {.name = "CumSum", .domain = "", .since_version = 11, .min_inputs = 2,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .attrs = mo_cumsum_attrs, .n_attrs = PL_COUNT(mo_cumsum_attrs),
     .types = {{"T", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64}, {"T2", PL_TS_I32 | PL_TS_I64}},
     .input_types = {"T", "T2"}, .output_types = {"T"}, .infer = mo_infer_cumsum},
    {.name = "CumProd", .domain = "", .since_version = 26, .min_inputs = 2,
     .max_inputs = 2, .min_outputs = 1, .max_outputs = 1,
     .attrs = mo_cumsum_attrs, .n_attrs = PL_COUNT(mo_cumsum_attrs),
     .types = {{"T", PL_TS_FLOAT | PL_TS_I32 | PL_TS_I64}, {"T2", PL_TS_I32 | PL_TS_I64}},
     .input_types = {"T", "T2"}, .output_types = {"T"}, .infer = mo_infer_cumsum},
    {.name = "Size", .domain = "", .since_version = 7, .min_inputs = 1,
     .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
     .types = {{"T", PL_TS_ALL}, {"T1", PL_TS_I64}}, .input_types = {"T"},
     .output_types = {"T1"}, .infer = mo_infer_size},
};
const size_t pl_opset_math_count = PL_COUNT(pl_opset_math_schemas);
