/* math_more.c — the second wave of the cpu module's math family: rounding,
 * trigonometric and activation unary ops, the broadcasting logical,
 * comparison and integer ops and the variadic Min Max Sum Mean, the
 * remaining reductions, ArgMax/ArgMin, Trilu, CumSum and Size (the ops of
 * math_more.h). Every kernel here checks its own run's arguments
 * (run_any), because most take several dtypes.
 *
 * Unary ops are one loop per op and dtype over a chunk of the flat index.
 * Broadcasting ops precompute, like math_binary.c, the output's dims with
 * size-1 dims dropped and mergeable neighbours merged, and each operand's
 * stride per dim; a run walks spans of the innermost dim, where every
 * operand steps by 0 or 1. Reductions and ArgMax walk each output's
 * reduced elements, in double for floats (in int64, wrapping, for
 * integers). Every loop reads an element before it writes the same index,
 * so an output aliasing input 0 (in place) is safe where it is offered. */
#include <math.h>
#include <string.h>

#include "math_internal.h"
#include "math_more.h"

/* ---- dtypes -------------------------------------------------------------- */

/* The dtypes this file computes in (math_type lacks f64). */
typedef enum more_type {
    MT_F32, MT_F64, MT_I64, MT_I32, MT_I8, MT_U8, MT_BOOL, MT_OTHER
} more_type;

static more_type more_type_of(pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F64))
        return MT_F64;
    switch (math_type_of(dt)) {
    case MATH_F32: return MT_F32;
    case MATH_I64: return MT_I64;
    case MATH_I32: return MT_I32;
    case MATH_I8: return MT_I8;
    case MATH_U8: return MT_U8;
    case MATH_BOOL: return MT_BOOL;
    default: return MT_OTHER;
    }
}

static bool more_is_float(more_type t) { return t == MT_F32 || t == MT_F64; }
static bool more_is_int(more_type t) { return t >= MT_I64 && t <= MT_U8; }

/* Element I of X of type T, as double or as int64. */
static double more_load_f(const void *x, more_type t, size_t i)
{
    switch (t) {
    case MT_F32: return ((const float *)x)[i];
    case MT_F64: return ((const double *)x)[i];
    case MT_I64: return (double)((const int64_t *)x)[i];
    case MT_I32: return ((const int32_t *)x)[i];
    case MT_I8: return ((const int8_t *)x)[i];
    default: return ((const uint8_t *)x)[i];
    }
}

static int64_t more_load_i(const void *x, more_type t, size_t i)
{
    switch (t) {
    case MT_I64: return ((const int64_t *)x)[i];
    case MT_I32: return ((const int32_t *)x)[i];
    case MT_I8: return ((const int8_t *)x)[i];
    default: return ((const uint8_t *)x)[i];
    }
}

/* Stores V (ADD: adds it) at element I of Y of type T; integers wrap. */
static void more_store_f(void *y, more_type t, size_t i, double v, int add)
{
    if (t == MT_F32)
        ((float *)y)[i] = add ? ((float *)y)[i] + (float)v : (float)v;
    else
        ((double *)y)[i] = add ? ((double *)y)[i] + v : v;
}

static void more_store_i(void *y, more_type t, size_t i, int64_t v, int add)
{
    switch (t) {
    case MT_I64:
        ((int64_t *)y)[i] = add ? (int64_t)((uint64_t)((int64_t *)y)[i] + (uint64_t)v) : v;
        break;
    case MT_I32:
        ((int32_t *)y)[i] =
            (int32_t)(uint32_t)((add ? (uint64_t)((int32_t *)y)[i] : 0) + (uint64_t)v);
        break;
    case MT_I8:
        ((int8_t *)y)[i] = (int8_t)(uint8_t)((add ? (uint64_t)((int8_t *)y)[i] : 0) + (uint64_t)v);
        break;
    default:
        ((uint8_t *)y)[i] = (uint8_t)((add ? (uint64_t)((uint8_t *)y)[i] : 0) + (uint64_t)v);
        break;
    }
}

/* Index of NAME in NAMES (N of them), or -1. */
static int more_find(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (names[i] != NULL && strcmp(names[i], name) == 0)
            return (int)i;
    return -1;
}

#define MORE_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The output of a run_any kernel with one output: checks it, and says
 * whether there is anything to do (*out NULL: nothing). */
static pl_status *more_output(const pl_kernel *k, const pl_run_args *args, bool allow_add,
                              void **out, int *add)
{
    pl_output_request req;
    pl_status *st = math_run_output(k, args, 0, k->out_elements, allow_add, out, &req);
    *add = req == PL_REQ_ADD_TO;
    return st;
}

/* ---- unary ---------------------------------------------------------------- */

typedef enum mu2_op {
    MU2_FLOOR, MU2_CEIL, MU2_ROUND, MU2_SIGN, MU2_SIN, MU2_COS, MU2_TAN, MU2_ASIN, MU2_ACOS,
    MU2_ATAN, MU2_SINH, MU2_COSH, MU2_ASINH, MU2_ACOSH, MU2_ATANH, MU2_SOFTPLUS, MU2_SOFTSIGN,
    MU2_ELU, MU2_SELU, MU2_CELU, MU2_HARDSIGMOID, MU2_HARDSWISH, MU2_THRESHOLDED, MU2_SHRINK,
    MU2_ISNAN, MU2_ISINF, MU2_NOT,
} mu2_op;

static const char *const mu2_names[] = {
    [MU2_FLOOR] = "Floor", [MU2_CEIL] = "Ceil", [MU2_ROUND] = "Round", [MU2_SIGN] = "Sign",
    [MU2_SIN] = "Sin", [MU2_COS] = "Cos", [MU2_TAN] = "Tan", [MU2_ASIN] = "Asin",
    [MU2_ACOS] = "Acos", [MU2_ATAN] = "Atan", [MU2_SINH] = "Sinh", [MU2_COSH] = "Cosh",
    [MU2_ASINH] = "Asinh", [MU2_ACOSH] = "Acosh", [MU2_ATANH] = "Atanh",
    [MU2_SOFTPLUS] = "Softplus", [MU2_SOFTSIGN] = "Softsign", [MU2_ELU] = "Elu",
    [MU2_SELU] = "Selu", [MU2_CELU] = "Celu", [MU2_HARDSIGMOID] = "HardSigmoid",
    [MU2_HARDSWISH] = "HardSwish", [MU2_THRESHOLDED] = "ThresholdedRelu",
    [MU2_SHRINK] = "Shrink", [MU2_ISNAN] = "IsNaN", [MU2_ISINF] = "IsInf", [MU2_NOT] = "Not",
};

typedef struct mu2_kernel {
    pl_kernel base;
    mu2_op op;
    more_type type;         /* the input's */
    double alpha, beta, gamma; /* Elu Selu Celu HardSigmoid ThresholdedRelu; Shrink's
                                  bias (alpha) and lambd (beta) */
    bool neg, pos;          /* IsInf's detect_negative, detect_positive */
} mu2_kernel;

typedef struct mu2_call {
    const mu2_kernel *k;
    const void *x;
    void *y;
    int add;
} mu2_call;

/* Y[i] = EXPR of x = X[i] (or += with ADD) over [begin, end). */
#define MU2_LOOP(T, TO, EXPR)                              \
    do {                                                   \
        const T *xs = c->x;                                \
        TO *ys = c->y;                                     \
        if (c->add)                                        \
            for (size_t i = begin; i < end; i++) {         \
                T x = xs[i];                               \
                ys[i] += (TO)(EXPR);                       \
            }                                              \
        else                                               \
            for (size_t i = begin; i < end; i++) {         \
                T x = xs[i];                               \
                ys[i] = (TO)(EXPR);                        \
            }                                              \
    } while (0)

/* The float ops on T, with libm's functions of suffix F (f or none). */
#define MU2_FLOAT_CHUNK(T, SUFFIX, F)                                                    \
    static void mu2_chunk_##SUFFIX(const mu2_call *c, size_t begin, size_t end)          \
    {                                                                                    \
        const mu2_kernel *k = c->k;                                                      \
        const T alpha = (T)k->alpha, beta = (T)k->beta, gamma = (T)k->gamma;            \
        const T one = 1, zero = 0;                                                       \
        switch (k->op) {                                                                 \
        case MU2_FLOOR: MU2_LOOP(T, T, floor##F(x)); break;                              \
        case MU2_CEIL: MU2_LOOP(T, T, ceil##F(x)); break;                                \
        /* Halves to even: the default rounding mode. */                                 \
        case MU2_ROUND: MU2_LOOP(T, T, nearbyint##F(x)); break;                          \
        case MU2_SIGN: MU2_LOOP(T, T, x > zero ? one : (x < zero ? -one : x)); break;    \
        case MU2_SIN: MU2_LOOP(T, T, sin##F(x)); break;                                  \
        case MU2_COS: MU2_LOOP(T, T, cos##F(x)); break;                                  \
        case MU2_TAN: MU2_LOOP(T, T, tan##F(x)); break;                                  \
        case MU2_ASIN: MU2_LOOP(T, T, asin##F(x)); break;                                \
        case MU2_ACOS: MU2_LOOP(T, T, acos##F(x)); break;                                \
        case MU2_ATAN: MU2_LOOP(T, T, atan##F(x)); break;                                \
        case MU2_SINH: MU2_LOOP(T, T, sinh##F(x)); break;                                \
        case MU2_COSH: MU2_LOOP(T, T, cosh##F(x)); break;                                \
        case MU2_ASINH: MU2_LOOP(T, T, asinh##F(x)); break;                              \
        case MU2_ACOSH: MU2_LOOP(T, T, acosh##F(x)); break;                              \
        case MU2_ATANH: MU2_LOOP(T, T, atanh##F(x)); break;                              \
        /* log(1 + e^x) without overflowing e^x. */                                      \
        case MU2_SOFTPLUS:                                                               \
            MU2_LOOP(T, T, x > zero ? x + log1p##F(exp##F(-x)) : log1p##F(exp##F(x)));   \
            break;                                                                       \
        case MU2_SOFTSIGN: MU2_LOOP(T, T, x / (one + fabs##F(x))); break;                \
        case MU2_ELU: MU2_LOOP(T, T, x < zero ? alpha * expm1##F(x) : x); break;         \
        case MU2_SELU:                                                                   \
            MU2_LOOP(T, T, x > zero ? gamma * x : gamma * alpha * expm1##F(x));          \
            break;                                                                       \
        case MU2_CELU:                                                                   \
            MU2_LOOP(T, T, x > zero ? x : alpha * expm1##F(x / alpha));                  \
            break;                                                                       \
        case MU2_HARDSIGMOID:                                                            \
            MU2_LOOP(T, T, fmax##F(zero, fmin##F(one, alpha * x + beta)));               \
            break;                                                                       \
        case MU2_HARDSWISH:                                                              \
            MU2_LOOP(T, T, x * fmax##F(zero, fmin##F(one, x / (T)6 + (T)0.5)));          \
            break;                                                                       \
        case MU2_THRESHOLDED: MU2_LOOP(T, T, x > alpha ? x : zero); break;               \
        case MU2_SHRINK:                                                                 \
            MU2_LOOP(T, T, x < -beta ? x + alpha : (x > beta ? x - alpha : zero));       \
            break;                                                                       \
        case MU2_ISNAN: MU2_LOOP(T, uint8_t, isnan(x)); break;                           \
        case MU2_ISINF:                                                                  \
            MU2_LOOP(T, uint8_t, isinf(x) && (x > zero ? k->pos : k->neg));              \
            break;                                                                       \
        case MU2_NOT: break;                                                             \
        }                                                                                \
    }
MU2_FLOAT_CHUNK(float, f32, f)
MU2_FLOAT_CHUNK(double, f64, )

static inline int64_t mu2_sign(int64_t v) { return (v > 0) - (v < 0); }

/* Sign and Shrink on integers of type T (Shrink computes in double). */
#define MU2_INT_CHUNK(T, SUFFIX)                                                         \
    static void mu2_chunk_##SUFFIX(const mu2_call *c, size_t begin, size_t end)          \
    {                                                                                    \
        const mu2_kernel *k = c->k;                                                      \
        const double bias = k->alpha, lambd = k->beta;                                   \
        if (k->op == MU2_SIGN)                                                           \
            MU2_LOOP(T, T, mu2_sign(x));                                                 \
        else                                                                             \
            MU2_LOOP(T, T, (double)x < -lambd ? (T)((double)x + bias)                    \
                           : ((double)x > lambd ? (T)((double)x - bias) : 0));          \
    }
MU2_INT_CHUNK(int64_t, i64)
MU2_INT_CHUNK(int32_t, i32)
MU2_INT_CHUNK(int8_t, i8)
MU2_INT_CHUNK(uint8_t, u8)

static void mu2_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mu2_call *c = arg;
    switch (c->k->type) {
    case MT_F32: mu2_chunk_f32(c, begin, end); break;
    case MT_F64: mu2_chunk_f64(c, begin, end); break;
    case MT_I64: mu2_chunk_i64(c, begin, end); break;
    case MT_I32: mu2_chunk_i32(c, begin, end); break;
    case MT_I8: mu2_chunk_i8(c, begin, end); break;
    case MT_U8: mu2_chunk_u8(c, begin, end); break;
    case MT_BOOL: MU2_LOOP(uint8_t, uint8_t, !x); break;
    case MT_OTHER: break;
    }
}

static pl_status *mu2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mu2_kernel *k = (const mu2_kernel *)kernel;
    bool to_bool = k->op == MU2_ISNAN || k->op == MU2_ISINF || k->op == MU2_NOT;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, !to_bool, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mu2_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add};
    bool cheap = k->op <= MU2_SIGN || k->op >= MU2_HARDSIGMOID;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements,
                           cheap ? MATH_GRAIN : MATH_GRAIN_HEAVY, mu2_chunk, &c);
    return NULL;
}

pl_status *more_build_unary(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    int found = more_find(mu2_names, MORE_COUNT(mu2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a unary op of this family");
    mu2_op op = (mu2_op)found;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    more_type t = more_type_of(x->dtype);
    bool ok = op == MU2_NOT ? t == MT_BOOL
              : op == MU2_SIGN || op == MU2_SHRINK ? (more_is_float(t) || more_is_int(t))
                                                    : more_is_float(t);
    if (!ok)
        return math_unsupported_dtype(node->op, x->dtype);
    bool to_bool = op == MU2_ISNAN || op == MU2_ISINF;
    if (!PL_DTYPE_EQ(o->dtype, to_bool ? PL_DTYPE_BOOL : x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    double alpha = 1.0, beta = 0.0, gamma = 0.0;
    int64_t neg = 1, pos = 1;
    switch (op) {
    case MU2_ELU: case MU2_CELU: case MU2_THRESHOLDED:
        st = cpu_attr_float(node, "alpha", 1.0, &alpha);
        break;
    case MU2_SELU:
        st = cpu_attr_float(node, "alpha", 1.67326319217681884765625, &alpha);
        if (st == NULL)
            st = cpu_attr_float(node, "gamma", 1.05070102214813232421875, &gamma);
        break;
    case MU2_HARDSIGMOID:
        st = cpu_attr_float(node, "alpha", 0.2, &alpha);
        if (st == NULL)
            st = cpu_attr_float(node, "beta", 0.5, &beta);
        break;
    case MU2_SHRINK:
        st = cpu_attr_float(node, "bias", 0.0, &alpha);
        if (st == NULL)
            st = cpu_attr_float(node, "lambd", 0.5, &beta);
        break;
    case MU2_ISINF:
        st = cpu_attr_int(node, "detect_negative", 1, &neg);
        if (st == NULL)
            st = cpu_attr_int(node, "detect_positive", 1, &pos);
        break;
    default:
        break;
    }
    if (st != NULL)
        return st;
    if (op == MU2_CELU && alpha == 0.0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "alpha must not be 0");
    if (t == MT_F32) {
        /* The attributes as the f32 the reference computes with. */
        alpha = (float)alpha;
        beta = (float)beta;
        gamma = (float)gamma;
    }
    mu2_kernel *k = (mu2_kernel *)cpu_kernel_alloc(ctx, sizeof *k, mu2_names[op], NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mu2_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = !to_bool;
    k->op = op;
    k->type = t;
    k->alpha = alpha;
    k->beta = beta;
    k->gamma = gamma;
    k->neg = neg != 0;
    k->pos = pos != 0;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- broadcasting --------------------------------------------------------- */

typedef enum mb2_op {
    MB2_AND, MB2_OR, MB2_XOR, MB2_GE, MB2_LE, MB2_MOD, MB2_BITSHIFT, MB2_PRELU,
    MB2_MIN, MB2_MAX, MB2_SUM, MB2_MEAN,
} mb2_op;

static const char *const mb2_names[] = {
    [MB2_AND] = "And", [MB2_OR] = "Or", [MB2_XOR] = "Xor", [MB2_GE] = "GreaterOrEqual",
    [MB2_LE] = "LessOrEqual", [MB2_MOD] = "Mod", [MB2_BITSHIFT] = "BitShift",
    [MB2_PRELU] = "PRelu", [MB2_MIN] = "Min", [MB2_MAX] = "Max", [MB2_SUM] = "Sum",
    [MB2_MEAN] = "Mean",
};

/* Operands a node may have (the walk keeps an offset per operand). */
#define MB2_MAX_OPERANDS 64

typedef struct mb2_kernel mb2_kernel;

/* One span of N output elements: IN[j] is operand j's first element, STEP[j]
 * 1 when it steps with the output and 0 when it stays. */
typedef void (*mb2_inner_fn)(const mb2_kernel *k, void *out, const void *const *in,
                             const size_t *step, size_t n, int add);

struct mb2_kernel {
    pl_kernel base;
    mb2_op op;
    mb2_inner_fn inner;
    bool allow_add;
    more_type type;          /* the operands' */
    bool check_zero;         /* integer Mod: refuse a zero divisor */
    size_t divisor_elements;
    size_t esize;            /* bytes per operand element */
    size_t out_esize;
    int n_operands;
    int ndim;                /* >= 1 after collapsing */
    int64_t dims[CPU_MAX_RANK];
    int64_t stride[][CPU_MAX_RANK]; /* one row per operand */
};

/* An inner loop for two operands of TA and an output of TO. */
#define MB2_BIN(NAME, TA, TO, EXPR)                                                      \
    static void NAME(const mb2_kernel *k, void *out, const void *const *in,              \
                     const size_t *st, size_t n, int add)                                \
    {                                                                                    \
        (void)k;                                                                         \
        TO *o = out;                                                                     \
        const TA *a = in[0], *b = in[1];                                                 \
        const size_t sa = st[0], sb = st[1];                                             \
        if (add)                                                                         \
            for (size_t i = 0; i < n; i++) {                                             \
                TA x = a[i * sa], y = b[i * sb];                                         \
                o[i] += (TO)(EXPR);                                                      \
            }                                                                            \
        else                                                                             \
            for (size_t i = 0; i < n; i++) {                                             \
                TA x = a[i * sa], y = b[i * sb];                                         \
                o[i] = (TO)(EXPR);                                                       \
            }                                                                            \
    }

MB2_BIN(mb2_and, uint8_t, uint8_t, (x != 0) & (y != 0))
MB2_BIN(mb2_or, uint8_t, uint8_t, (x != 0) | (y != 0))
MB2_BIN(mb2_xor, uint8_t, uint8_t, (x != 0) ^ (y != 0))
MB2_BIN(mb2_shl_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x << y) : 0)
MB2_BIN(mb2_shr_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x >> y) : 0)

/* Comparisons, PRelu and Mod per operand type. Integer Mod takes the sign
 * of the divisor (Python's %), or of the dividend with fmod (C's %);
 * divisors were checked for zero before the run. */
#define MB2_TYPED(T, SUFFIX)                                                             \
    MB2_BIN(mb2_ge_##SUFFIX, T, uint8_t, x >= y)                                         \
    MB2_BIN(mb2_le_##SUFFIX, T, uint8_t, x <= y)
#define MB2_PRELU(T, SUFFIX) MB2_BIN(mb2_prelu_##SUFFIX, T, T, x < 0 ? y * x : x)
#define MB2_INT_MOD(T, SUFFIX)                                                           \
    MB2_BIN(mb2_fmod_##SUFFIX, T, T, y == -1 ? 0 : x % y)                                \
    MB2_BIN(mb2_mod_##SUFFIX, T, T,                                                      \
            y == -1 ? 0 : (x % y != 0 && ((x % y < 0) != (y < 0)) ? x % y + y : x % y))
MB2_TYPED(float, f32)
MB2_TYPED(double, f64)
MB2_TYPED(int64_t, i64)
MB2_TYPED(int32_t, i32)
MB2_TYPED(int8_t, i8)
MB2_TYPED(uint8_t, u8)
MB2_PRELU(float, f32)
MB2_PRELU(double, f64)
MB2_PRELU(int64_t, i64)
MB2_PRELU(int32_t, i32)
MB2_BIN(mb2_fmod_f32, float, float, fmodf(x, y))
MB2_BIN(mb2_fmod_f64, double, double, fmod(x, y))
MB2_INT_MOD(int64_t, i64)
MB2_INT_MOD(int32_t, i32)
MB2_INT_MOD(int8_t, i8)
MB2_BIN(mb2_fmod_u8, uint8_t, uint8_t, x % y)
MB2_BIN(mb2_mod_u8, uint8_t, uint8_t, x % y)

/* Min Max Sum Mean over every operand: COMBINE folds x into acc; NAN_OF
 * says whether x is NaN (Min and Max propagate NaN, as NumPy does). */
#define MB2_FOLD(NAME, T, COMBINE, FINISH)                                               \
    static void NAME(const mb2_kernel *k, void *out, const void *const *in,              \
                     const size_t *st, size_t n, int add)                                \
    {                                                                                    \
        T *o = out;                                                                      \
        const int m = k->n_operands;                                                     \
        for (size_t i = 0; i < n; i++) {                                                 \
            T acc = ((const T *)in[0])[i * st[0]];                                       \
            for (int j = 1; j < m; j++) {                                                \
                T x = ((const T *)in[j])[i * st[j]];                                     \
                acc = (COMBINE);                                                         \
            }                                                                            \
            acc = (FINISH);                                                              \
            if (add)                                                                     \
                o[i] += acc;                                                             \
            else                                                                         \
                o[i] = acc;                                                              \
        }                                                                                \
    }
#define MB2_FOLD_FLOAT(T, SUFFIX)                                                        \
    MB2_FOLD(mb2_min_##SUFFIX, T, (x < acc || isnan(x)) ? x : acc, acc)                  \
    MB2_FOLD(mb2_max_##SUFFIX, T, (x > acc || isnan(x)) ? x : acc, acc)                  \
    MB2_FOLD(mb2_sum_##SUFFIX, T, acc + x, acc)                                          \
    MB2_FOLD(mb2_mean_##SUFFIX, T, acc + x, acc / (T)m)
#define MB2_FOLD_INT(T, SUFFIX)                                                          \
    MB2_FOLD(mb2_min_##SUFFIX, T, x < acc ? x : acc, acc)                                \
    MB2_FOLD(mb2_max_##SUFFIX, T, x > acc ? x : acc, acc)
MB2_FOLD_FLOAT(float, f32)
MB2_FOLD_FLOAT(double, f64)
MB2_FOLD_INT(int64_t, i64)
MB2_FOLD_INT(int32_t, i32)
MB2_FOLD_INT(int8_t, i8)
MB2_FOLD_INT(uint8_t, u8)

/* The inner loop of OP on operands of type T (FMOD: Mod's attribute, LEFT:
 * BitShift's direction), or NULL when unsupported. */
static mb2_inner_fn mb2_pick(mb2_op op, more_type t, bool fmod, bool left)
{
#define MB2_BY_TYPE(PREFIX)                                                              \
    {[MT_F32] = PREFIX##_f32, [MT_F64] = PREFIX##_f64, [MT_I64] = PREFIX##_i64,          \
     [MT_I32] = PREFIX##_i32, [MT_I8] = PREFIX##_i8, [MT_U8] = PREFIX##_u8}
    static const mb2_inner_fn ge[MT_OTHER] = MB2_BY_TYPE(mb2_ge);
    static const mb2_inner_fn le[MT_OTHER] = MB2_BY_TYPE(mb2_le);
    static const mb2_inner_fn min[MT_OTHER] = MB2_BY_TYPE(mb2_min);
    static const mb2_inner_fn max[MT_OTHER] = MB2_BY_TYPE(mb2_max);
    static const mb2_inner_fn fmods[MT_OTHER] = MB2_BY_TYPE(mb2_fmod);
    static const mb2_inner_fn mods[MT_OTHER] = {
        [MT_I64] = mb2_mod_i64, [MT_I32] = mb2_mod_i32, [MT_I8] = mb2_mod_i8,
        [MT_U8] = mb2_mod_u8};
    static const mb2_inner_fn prelu[MT_OTHER] = {
        [MT_F32] = mb2_prelu_f32, [MT_F64] = mb2_prelu_f64, [MT_I64] = mb2_prelu_i64,
        [MT_I32] = mb2_prelu_i32};
#undef MB2_BY_TYPE
    if (t == MT_OTHER)
        return NULL;
    switch (op) {
    case MB2_AND: return t == MT_BOOL ? mb2_and : NULL;
    case MB2_OR: return t == MT_BOOL ? mb2_or : NULL;
    case MB2_XOR: return t == MT_BOOL ? mb2_xor : NULL;
    case MB2_GE: return ge[t];
    case MB2_LE: return le[t];
    case MB2_MOD: return fmod ? fmods[t] : mods[t];
    case MB2_BITSHIFT: return t == MT_U8 ? (left ? mb2_shl_u8 : mb2_shr_u8) : NULL;
    case MB2_PRELU: return prelu[t];
    case MB2_MIN: return min[t];
    case MB2_MAX: return max[t];
    case MB2_SUM: return t == MT_F32 ? mb2_sum_f32 : t == MT_F64 ? mb2_sum_f64 : NULL;
    case MB2_MEAN: return t == MT_F32 ? mb2_mean_f32 : t == MT_F64 ? mb2_mean_f64 : NULL;
    }
    return NULL;
}

typedef struct mb2_call {
    const mb2_kernel *k;
    const char *in[MB2_MAX_OPERANDS];
    char *out;
    int add;
} mb2_call;

/* Output elements [begin, end): the multi-index of begin, then whole or
 * partial spans of the innermost dim. */
static void mb2_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mb2_call *c = arg;
    const mb2_kernel *k = c->k;
    const int last = k->ndim - 1, m = k->n_operands;
    int64_t idx[CPU_MAX_RANK], off[MB2_MAX_OPERANDS];
    size_t step[MB2_MAX_OPERANDS];
    const void *in[MB2_MAX_OPERANDS];
    for (int j = 0; j < m; j++)
        step[j] = k->stride[j][last] != 0;
    math_walk_start(k->ndim, k->dims, m, k->stride, begin, idx, off);
    size_t pos = begin;
    while (pos < end) {
        size_t span = math_walk_span(k->ndim, k->dims, idx, end - pos);
        for (int j = 0; j < m; j++)
            in[j] = c->in[j] + (size_t)off[j] * k->esize;
        k->inner(k, c->out + pos * k->out_esize, in, step, span, c->add);
        pos += span;
        math_walk_advance(k->ndim, k->dims, m, k->stride, span, idx, off);
    }
}

static bool mb2_has_zero(const void *b, more_type t, size_t n)
{
    bool zero = false;
    for (size_t i = 0; i < n; i++)
        zero |= more_load_i(b, t, i) == 0;
    return zero;
}

static pl_status *mb2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mb2_kernel *k = (const mb2_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, k->allow_add, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    if (k->check_zero && mb2_has_zero(math_in(args, 1), k->type, k->divisor_elements))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "integer modulo by zero");
    mb2_call c = {.k = k, .out = out, .add = add};
    for (int j = 0; j < k->n_operands; j++)
        c.in[j] = math_in(args, (size_t)j);
    size_t grain = MATH_GRAIN / (size_t)(k->n_operands > 2 ? k->n_operands : 1);
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, mb2_chunk, &c);
    return NULL;
}

/* Contiguous strides of SHAPE (rank R) aligned to the right of an output of
 * rank OUT_R; 0 where the operand has size 1 or no dim. False when a dim
 * neither matches the output nor is 1. */

/* Reads Mod's fmod and BitShift's direction. */
static pl_status *mb2_attrs(const pl_node_desc *node, mb2_op op, more_type t, bool *fmod,
                            bool *left)
{
    *fmod = false;
    *left = true;
    if (op == MB2_MOD) {
        int64_t v;
        pl_status *st = cpu_attr_int(node, "fmod", 0, &v);
        if (st != NULL)
            return st;
        if (v == 0 && more_is_float(t))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "fmod must be 1 for floating-point inputs");
        *fmod = v != 0;
    } else if (op == MB2_BITSHIFT) {
        const pl_graph_api *g = cpu_host->graph;
        const char *s = NULL;
        size_t len = 0;
        if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_string) ||
            g->attr_string(node->graph, node->node_index, "direction", &s, &len) != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "cannot read the attribute 'direction'");
        if (len == 4 && memcmp(s, "LEFT", 4) == 0)
            *left = true;
        else if (len == 5 && memcmp(s, "RIGHT", 5) == 0)
            *left = false;
        else
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "direction '%.*s' is neither LEFT nor RIGHT", (int)len, s);
    }
    return NULL;
}

pl_status *more_build_broadcast(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    int found = more_find(mb2_names, MORE_COUNT(mb2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a broadcasting op of this family");
    mb2_op op = (mb2_op)found;
    const pl_tensor *o = &node->outputs[0];
    size_t m = node->n_inputs;
    if (m > MB2_MAX_OPERANDS)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%zu inputs (at most %d are supported)",
                         m, MB2_MAX_OPERANDS);
    pl_dtype dt = node->inputs[0].dtype;
    more_type t = more_type_of(dt);
    for (size_t j = 0; j < m; j++) {
        if (!math_input_present(node, j))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %zu is absent", j);
        if (!PL_DTYPE_EQ(node->inputs[j].dtype, dt))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "operands of dtypes %s and %s",
                             math_dtype_name(dt), math_dtype_name(node->inputs[j].dtype));
    }
    bool fmod, left;
    pl_status *st = mb2_attrs(node, op, t, &fmod, &left);
    if (st != NULL)
        return st;
    mb2_inner_fn inner = mb2_pick(op, t, fmod, left);
    if (inner == NULL)
        return math_unsupported_dtype(node->op, dt);
    bool to_bool = op <= MB2_LE;
    if (!PL_DTYPE_EQ(o->dtype, to_bool ? PL_DTYPE_BOOL : dt))
        return math_unsupported_dtype(node->op, o->dtype);
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    int64_t (*s)[CPU_MAX_RANK] = cpu_host->host_alloc(ctx->host_ctx, m * sizeof *s, 0);
    if (s == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    for (size_t j = 0; j < m; j++) {
        const pl_tensor *in = &node->inputs[j];
        if (!cpu_broadcast_strides(in->shape, in->ndim, o->shape, o->ndim, s[j])) {
            char ti[128], to[128];
            cpu_host->host_free(ctx->host_ctx, s);
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu's shape %s does not broadcast to the output's %s", j,
                             cpu_dims_text(in->shape, in->ndim, ti, sizeof ti),
                             cpu_dims_text(o->shape, o->ndim, to, sizeof to));
        }
    }
    mb2_kernel *k = (mb2_kernel *)cpu_kernel_alloc(
        ctx, sizeof *k + m * sizeof k->stride[0], mb2_names[op], NULL);
    if (k == NULL) {
        cpu_host->host_free(ctx->host_ctx, s);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    }
    k->base.run_any = mb2_run;
    k->base.n_reads = m;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = !to_bool;
    k->op = op;
    k->inner = inner;
    k->type = t;
    k->allow_add = !to_bool && op != MB2_BITSHIFT && t != MT_BOOL;
    k->esize = pl_dtype_size(dt);
    k->out_esize = pl_dtype_size(o->dtype);
    k->n_operands = (int)m;
    if (op == MB2_MOD && more_is_int(t)) {
        k->check_zero = true;
        k->divisor_elements = cpu_elements(node->inputs[1].shape, node->inputs[1].ndim);
    }
    k->ndim = math_merge_dims(o->shape, o->ndim, m, s, k->dims, k->stride);
    cpu_host->host_free(ctx->host_ctx, s);
    *out_kernel = &k->base;
    return NULL;
}

/* ---- reductions ----------------------------------------------------------- */

typedef enum mr2_op {
    MR2_MIN, MR2_PROD, MR2_L1, MR2_L2, MR2_SUMSQUARE, MR2_LOGSUM, MR2_LOGSUMEXP,
} mr2_op;

static const char *const mr2_names[] = {
    [MR2_MIN] = "ReduceMin", [MR2_PROD] = "ReduceProd", [MR2_L1] = "ReduceL1",
    [MR2_L2] = "ReduceL2", [MR2_SUMSQUARE] = "ReduceSumSquare",
    [MR2_LOGSUM] = "ReduceLogSum", [MR2_LOGSUMEXP] = "ReduceLogSumExp",
};

/* The input's dims split into kept ones (giving the output's flat index)
 * and reduced ones, each with its element stride in the input. */
typedef struct mr2_kernel {
    pl_kernel base;
    mr2_op op;
    more_type type;
    int n_kept, n_red;
    int64_t kept_extent[CPU_MAX_RANK], kept_stride[CPU_MAX_RANK];
    int64_t red_extent[CPU_MAX_RANK], red_stride[CPU_MAX_RANK];
    size_t len;              /* elements reduced into each output */
} mr2_kernel;

typedef struct mr2_call {
    const mr2_kernel *k;
    const void *x;
    void *y;
    int add;
} mr2_call;

/* The input offset of output E's first reduced element. */
static size_t mr2_base(const mr2_kernel *k, size_t e)
{
    size_t base = 0;
    for (int g = k->n_kept - 1; g >= 0; g--) {
        base += (e % (size_t)k->kept_extent[g]) * (size_t)k->kept_stride[g];
        e /= (size_t)k->kept_extent[g];
    }
    return base;
}

/* Calls BODY with `off` at every reduced element of the output at BASE. */
#define MR2_EACH(k, base, BODY)                                                          \
    do {                                                                                 \
        int64_t idx_[CPU_MAX_RANK] = {0};                                                \
        size_t off = (base);                                                             \
        if ((k)->len == 0)                                                               \
            break;                                                                       \
        for (;;) {                                                                       \
            BODY;                                                                        \
            int r_ = (k)->n_red - 1;                                                     \
            for (; r_ >= 0; r_--) {                                                      \
                if (++idx_[r_] < (k)->red_extent[r_]) {                                  \
                    off += (size_t)(k)->red_stride[r_];                                  \
                    break;                                                               \
                }                                                                        \
                off -= (size_t)((idx_[r_] - 1) * (k)->red_stride[r_]);                   \
                idx_[r_] = 0;                                                            \
            }                                                                            \
            if (r_ < 0)                                                                  \
                break;                                                                   \
        }                                                                                \
    } while (0)

static double mr2_float(const mr2_kernel *k, const void *x, size_t base)
{
    const more_type t = k->type;
    double acc;
    switch (k->op) {
    case MR2_MIN:
        acc = INFINITY;
        MR2_EACH(k, base, {
            double v = more_load_f(x, t, off);
            acc = (v < acc || isnan(v)) ? v : acc;
        });
        return acc;
    case MR2_PROD:
        acc = 1.0;
        MR2_EACH(k, base, acc *= more_load_f(x, t, off));
        return acc;
    case MR2_L1:
        acc = 0.0;
        MR2_EACH(k, base, acc += fabs(more_load_f(x, t, off)));
        return acc;
    case MR2_L2:
    case MR2_SUMSQUARE:
        acc = 0.0;
        MR2_EACH(k, base, {
            double v = more_load_f(x, t, off);
            acc += v * v;
        });
        return k->op == MR2_L2 ? sqrt(acc) : acc;
    case MR2_LOGSUM:
        acc = 0.0;
        MR2_EACH(k, base, acc += more_load_f(x, t, off));
        return log(acc);
    case MR2_LOGSUMEXP: {
        /* Shifted by the largest element, so exp cannot overflow. */
        double top = -INFINITY;
        MR2_EACH(k, base, {
            double v = more_load_f(x, t, off);
            top = v > top || isnan(v) ? v : top;
        });
        if (isinf(top) || isnan(top))
            return top;
        acc = 0.0;
        MR2_EACH(k, base, acc += exp(more_load_f(x, t, off) - top));
        return top + log(acc);
    }
    }
    return 0.0;
}

/* Integers wrap, as the integer sums of math_reduce.c do. */
static int64_t mr2_int(const mr2_kernel *k, const void *x, size_t base)
{
    const more_type t = k->type;
    uint64_t acc = k->op == MR2_PROD ? 1 : 0;
    int64_t least = INT64_MAX;
    switch (k->op) {
    case MR2_MIN:
        MR2_EACH(k, base, {
            int64_t v = more_load_i(x, t, off);
            least = v < least ? v : least;
        });
        /* An empty reduction gives the type's largest value. */
        if (k->len == 0)
            return t == MT_I32 ? INT32_MAX : t == MT_I8 ? INT8_MAX : t == MT_U8 ? UINT8_MAX
                                                                                : INT64_MAX;
        return least;
    case MR2_PROD:
        MR2_EACH(k, base, acc *= (uint64_t)more_load_i(x, t, off));
        break;
    case MR2_L1:
        MR2_EACH(k, base, {
            int64_t v = more_load_i(x, t, off);
            acc += v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
        });
        break;
    default: /* MR2_SUMSQUARE */
        MR2_EACH(k, base, {
            uint64_t v = (uint64_t)more_load_i(x, t, off);
            acc += v * v;
        });
        break;
    }
    return (int64_t)acc;
}

static void mr2_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mr2_call *c = arg;
    const mr2_kernel *k = c->k;
    for (size_t e = begin; e < end; e++) {
        size_t base = mr2_base(k, e);
        if (more_is_float(k->type))
            more_store_f(c->y, k->type, e, mr2_float(k, c->x, base), c->add);
        /* ReduceL2, ReduceLogSum and ReduceLogSumExp on integers: in double,
         * truncated (numpy's result cast back to the type). */
        else if (k->op == MR2_L2 || k->op == MR2_LOGSUM || k->op == MR2_LOGSUMEXP)
            more_store_i(c->y, k->type, e, math_trunc_i64(mr2_float(k, c->x, base)), c->add);
        else
            more_store_i(c->y, k->type, e, mr2_int(k, c->x, base), c->add);
    }
}

static pl_status *mr2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mr2_kernel *k = (const mr2_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mr2_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add};
    size_t grain = k->len >= MATH_GRAIN_HEAVY ? 1 : MATH_GRAIN_HEAVY / (k->len ? k->len : 1);
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, mr2_chunk, &c);
    return NULL;
}

/* Reads the axes of NODE into REDUCE (one flag per dim of X, rank R):
 * the attribute before opset 18, the constant optional input from 18. */
static pl_status *mr2_axes(const pl_node_desc *node, int32_t r, bool *reduce)
{
    return math_reduce_axes(node, math_opset(node) >= 18, r, reduce);
}

pl_status *more_build_reduce(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel)
{
    int found = more_find(mr2_names, MORE_COUNT(mr2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a reduction of this family");
    mr2_op op = (mr2_op)found;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    more_type t = more_type_of(x->dtype);
    /* Every reduction of this file on i32 and i64 (ONNX's types), ReduceMin
     * on every integer type. */
    if (!(more_is_float(t) || t == MT_I64 || t == MT_I32 ||
          (op == MR2_MIN && more_is_int(t))))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    bool reduce[CPU_MAX_RANK];
    pl_status *st = mr2_axes(node, x->ndim, reduce);
    if (st != NULL)
        return st;
    mr2_kernel *k = (mr2_kernel *)cpu_kernel_alloc(ctx, sizeof *k, mr2_names[op], NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    size_t out_elements = 1, len = 1;
    int64_t step = 1;
    int nk = 0, nr = 0;
    /* Innermost first, then reversed so the outermost comes first. */
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        int64_t e = x->shape[d];
        if (reduce[d]) {
            len *= (size_t)e;
            if (e != 1) {
                k->red_extent[nr] = e;
                k->red_stride[nr++] = step;
            }
        } else {
            out_elements *= (size_t)e;
            if (e != 1) {
                k->kept_extent[nk] = e;
                k->kept_stride[nk++] = step;
            }
        }
        step *= e;
    }
    for (int i = 0; i < nk / 2; i++) {
        int64_t a = k->kept_extent[i], b = k->kept_stride[i];
        k->kept_extent[i] = k->kept_extent[nk - 1 - i];
        k->kept_stride[i] = k->kept_stride[nk - 1 - i];
        k->kept_extent[nk - 1 - i] = a;
        k->kept_stride[nk - 1 - i] = b;
    }
    for (int i = 0; i < nr / 2; i++) {
        int64_t a = k->red_extent[i], b = k->red_stride[i];
        k->red_extent[i] = k->red_extent[nr - 1 - i];
        k->red_stride[i] = k->red_stride[nr - 1 - i];
        k->red_extent[nr - 1 - i] = a;
        k->red_stride[nr - 1 - i] = b;
    }
    if (out_elements != cpu_elements(o->shape, o->ndim)) {
        char tx[128], to[128];
        cpu_kernel_release(ctx, &k->base);
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "output %s does not match reducing input %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    }
    k->base.run_any = mr2_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = out_elements;
    k->op = op;
    k->type = t;
    k->n_kept = nk;
    k->n_red = nr;
    k->len = len;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- ArgMax, ArgMin ------------------------------------------------------- */

typedef struct ma_kernel {
    pl_kernel base;
    bool max;                /* ArgMax, else ArgMin */
    bool last;               /* select_last_index */
    more_type type;
    size_t outer, len, inner;
} ma_kernel;

typedef struct ma_call {
    const ma_kernel *k;
    const void *x;
    int64_t *y;
} ma_call;

/* Whether V beats BEST: strictly, or also on ties with select_last_index. */
#define MA_BETTER(k, v, best)                                  \
    ((k)->max ? ((k)->last ? (v) >= (best) : (v) > (best))     \
              : ((k)->last ? (v) <= (best) : (v) < (best)))

static void ma_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const ma_call *c = arg;
    const ma_kernel *k = c->k;
    for (size_t e = begin; e < end; e++) {
        size_t base = (e / k->inner) * k->len * k->inner + e % k->inner;
        int64_t at = 0;
        if (more_is_float(k->type)) {
            double best = more_load_f(c->x, k->type, base);
            for (size_t l = 1; l < k->len && !isnan(best); l++) {
                double v = more_load_f(c->x, k->type, base + l * k->inner);
                /* The first NaN wins, as in NumPy. */
                if (isnan(v) || MA_BETTER(k, v, best)) {
                    best = v;
                    at = (int64_t)l;
                }
            }
        } else {
            int64_t best = more_load_i(c->x, k->type, base);
            for (size_t l = 1; l < k->len; l++) {
                int64_t v = more_load_i(c->x, k->type, base + l * k->inner);
                if (MA_BETTER(k, v, best)) {
                    best = v;
                    at = (int64_t)l;
                }
            }
        }
        c->y[e] = at;
    }
}

static pl_status *ma_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const ma_kernel *k = (const ma_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, false, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    ma_call c = {.k = k, .x = math_in(args, 0), .y = out};
    size_t grain = k->len >= MATH_GRAIN ? 1 : MATH_GRAIN / k->len;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, ma_chunk, &c);
    return NULL;
}

pl_status *more_build_arg(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    more_type t = more_type_of(x->dtype);
    if (!more_is_float(t) && !more_is_int(t))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64))
        return math_unsupported_dtype(node->op, o->dtype);
    int64_t axis, keep, last = 0;
    pl_status *st = cpu_attr_int(node, "axis", 0, &axis);
    if (st == NULL)
        st = cpu_attr_int(node, "keepdims", 1, &keep);
    if (st == NULL && math_opset(node) >= 12)
        st = cpu_attr_int(node, "select_last_index", 0, &last);
    if (st != NULL)
        return st;
    int64_t a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, (int)x->ndim);
    if (x->shape[a] == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld has no elements",
                         (long long)axis);
    size_t outer = cpu_elements(x->shape, (int32_t)a);
    size_t inner = cpu_elements(x->shape + a + 1, x->ndim - (int32_t)a - 1);
    if (outer * inner != cpu_elements(o->shape, o->ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "output does not match the input");
    bool max = strcmp(node->op, "ArgMax") == 0;
    ma_kernel *k = (ma_kernel *)cpu_kernel_alloc(ctx, sizeof *k, max ? "ArgMax" : "ArgMin", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = ma_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = outer * inner;
    k->max = max;
    k->last = last != 0;
    k->type = t;
    k->outer = outer;
    k->len = (size_t)x->shape[a];
    k->inner = inner;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Trilu ---------------------------------------------------------------- */

typedef struct mt_kernel {
    pl_kernel base;
    bool upper;
    bool k_input;            /* k is read from input 1 at each run */
    size_t esize;
    size_t rows, cols;       /* of each matrix (the last two dims) */
} mt_kernel;

typedef struct mt_call {
    const mt_kernel *k;
    const char *x;
    char *y;
    int64_t diag;
} mt_call;

/* Rows [begin, end) of the stacked matrices. */
static void mt_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mt_call *c = arg;
    const mt_kernel *k = c->k;
    const size_t es = k->esize, row_bytes = k->cols * es;
    for (size_t r = begin; r < end; r++) {
        int64_t i = (int64_t)(r % k->rows);
        /* Columns j kept: j - i >= diag (upper) or j - i <= diag (lower). */
        const int64_t cols = (int64_t)k->cols, diag = c->diag;
        int64_t lo = 0, hi = cols;
        if (k->upper)
            lo = diag >= cols - i ? cols : (diag <= -i ? 0 : i + diag);
        else
            hi = diag < -i ? 0 : (diag >= cols - i - 1 ? cols : i + diag + 1);
        if (lo > hi)
            lo = hi;
        const char *xr = c->x + r * row_bytes;
        char *yr = c->y + r * row_bytes;
        if (yr != xr)
            memcpy(yr + (size_t)lo * es, xr + (size_t)lo * es, (size_t)(hi - lo) * es);
        memset(yr, 0, (size_t)lo * es);
        memset(yr + (size_t)hi * es, 0, ((size_t)k->cols - (size_t)hi) * es);
    }
}

static pl_status *mt_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mt_kernel *k = (const mt_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, false, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mt_call c = {.k = k, .x = math_in(args, 0), .y = out, .diag = 0};
    if (k->k_input) {
        if (args->n_inputs < 2 || args->inputs[1].data == NULL)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 1 (k) has no data");
        c.diag = *(const int64_t *)math_in(args, 1);
    }
    size_t rows = kernel->out_elements / k->cols;
    size_t grain = MATH_GRAIN / k->cols ? MATH_GRAIN / k->cols : 1;
    cpu_host->parallel_for(ctx->host_ctx, rows, grain, mt_chunk, &c);
    return NULL;
}

pl_status *more_build_trilu(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    size_t es = pl_dtype_size(x->dtype);
    if (more_type_of(x->dtype) == MT_OTHER && es != 2)
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (x->ndim < 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input has rank %d, at least 2 needed",
                         (int)x->ndim);
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    bool k_input = math_input_present(node, 1);
    if (k_input && (!PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64) ||
                    cpu_elements(node->inputs[1].shape, node->inputs[1].ndim) != 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "k must be an i64 scalar");
    int64_t upper;
    if ((st = cpu_attr_int(node, "upper", 1, &upper)) != NULL)
        return st;
    mt_kernel *k = (mt_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "Trilu", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mt_run;
    k->base.n_reads = k_input ? 2 : 1;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    k->upper = upper != 0;
    k->k_input = k_input;
    k->esize = es;
    k->rows = (size_t)x->shape[x->ndim - 2];
    k->cols = (size_t)x->shape[x->ndim - 1];
    *out_kernel = &k->base;
    return NULL;
}

/* ---- CumSum --------------------------------------------------------------- */

typedef struct mc_kernel {
    pl_kernel base;
    more_type type;
    bool exclusive, reverse;
    more_type axis_type;     /* i32 or i64 */
    int32_t ndim;
    int64_t dims[CPU_MAX_RANK];
} mc_kernel;

typedef struct mc_call {
    const mc_kernel *k;
    const void *x;
    void *y;
    int add;
    size_t len, inner;
} mc_call;

/* Scans the lines [begin, end) (outer x inner positions) along the axis,
 * in the input's type as NumPy does. */
#define MC_SCAN(T)                                                                       \
    do {                                                                                 \
        const T *xs = c->x;                                                              \
        T *ys = c->y;                                                                    \
        for (size_t line = begin; line < end; line++) {                                  \
            size_t base = (line / c->inner) * c->len * c->inner + line % c->inner;       \
            T acc = 0;                                                                   \
            for (size_t s = 0; s < c->len; s++) {                                        \
                size_t l = k->reverse ? c->len - 1 - s : s;                              \
                size_t p = base + l * c->inner;                                          \
                T v = xs[p];                                                             \
                T r = k->exclusive ? acc : (T)(acc + v);                                 \
                acc = (T)(acc + v);                                                      \
                ys[p] = c->add ? (T)(ys[p] + r) : r;                                     \
            }                                                                            \
        }                                                                                \
    } while (0)

static void mc_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mc_call *c = arg;
    const mc_kernel *k = c->k;
    switch (k->type) {
    case MT_F32: MC_SCAN(float); break;
    case MT_F64: MC_SCAN(double); break;
    /* Integers wrap: sums in the unsigned type of the same width. */
    case MT_I64: MC_SCAN(uint64_t); break;
    default: MC_SCAN(uint32_t); break;
    }
}

static pl_status *mc_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mc_kernel *k = (const mc_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    const pl_tensor *at = &args->inputs[1];
    if (at->data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 1 (axis) has no data");
    int64_t axis = k->axis_type == MT_I64 ? *(const int64_t *)math_in(args, 1)
                                          : *(const int32_t *)math_in(args, 1);
    int64_t a = axis < 0 ? axis + k->ndim : axis;
    if (a < 0 || a >= k->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                         "axis %lld out of range for rank %d", (long long)axis, (int)k->ndim);
    mc_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add,
                 .len = (size_t)k->dims[a],
                 .inner = cpu_elements(k->dims + a + 1, k->ndim - (int32_t)a - 1)};
    if (c.len == 0 || c.inner == 0)
        return NULL;
    size_t lines = kernel->out_elements / c.len;
    size_t grain = c.len >= MATH_GRAIN ? 1 : MATH_GRAIN / c.len;
    cpu_host->parallel_for(ctx->host_ctx, lines, grain, mc_chunk, &c);
    return NULL;
}

pl_status *more_build_cumsum(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *ax = &node->inputs[1], *o = &node->outputs[0];
    more_type t = more_type_of(x->dtype), at = more_type_of(ax->dtype);
    if (!(more_is_float(t) || t == MT_I64 || t == MT_I32))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (at != MT_I64 && at != MT_I32)
        return math_unsupported_dtype(node->op, ax->dtype);
    if (cpu_elements(ax->shape, ax->ndim) != 1 || ax->ndim > 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis must be a scalar");
    if (x->ndim < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input must have rank 1 or more");
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    int64_t excl, rev;
    if ((st = cpu_attr_int(node, "exclusive", 0, &excl)) != NULL ||
        (st = cpu_attr_int(node, "reverse", 0, &rev)) != NULL)
        return st;
    mc_kernel *k = (mc_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "CumSum", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mc_run;
    k->base.n_reads = 2;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    k->type = t;
    k->axis_type = at;
    k->exclusive = excl != 0;
    k->reverse = rev != 0;
    k->ndim = x->ndim;
    memcpy(k->dims, x->shape, (size_t)x->ndim * sizeof *x->shape);
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Size ----------------------------------------------------------------- */

typedef struct ms_kernel {
    pl_kernel base;
    int64_t size;
} ms_kernel;

static pl_status *ms_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    (void)ctx;
    void *out;
    int add;
    pl_status *st = more_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    int64_t *y = out, v = ((const ms_kernel *)kernel)->size;
    *y = add ? (int64_t)((uint64_t)*y + (uint64_t)v) : v;
    return NULL;
}

pl_status *more_build_size(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64))
        return math_unsupported_dtype(node->op, o->dtype);
    if (cpu_elements(o->shape, o->ndim) != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the output must be a scalar");
    ms_kernel *k = (ms_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "Size", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = ms_run;
    k->base.n_reads = 0; /* only the input's shape matters, known now */
    k->base.n_outputs = 1;
    k->base.out_elements = 1;
    k->size = (int64_t)cpu_elements(x->shape, x->ndim);
    *out_kernel = &k->base;
    return NULL;
}
