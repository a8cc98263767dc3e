/* math_nary.c — the cpu math family's broadcasting ops of any number of
 * operands: the variadic Min Max Sum Mean (same shapes before opset 8,
 * NumPy broadcasting since), and on the same walk the two-operand logical,
 * ordering and integer ops And Or Xor GreaterOrEqual LessOrEqual Mod
 * BitShift BitwiseAnd BitwiseOr BitwiseXor and PRelu.
 *
 * Like math_binary.c, the builder precomputes the output's dims with size-1
 * dims dropped and mergeable neighbours merged, and each operand's stride
 * per dim; a run walks spans of the innermost dim, where every operand
 * steps by 0 or 1. Loops read an element before they write the same index,
 * so an output aliasing input 0 (in place) is safe where it is offered. */
#include <math.h>
#include <string.h>

#include "math_wide.h"

typedef enum mb2_op {
    MB2_AND, MB2_OR, MB2_XOR, MB2_GE, MB2_LE, MB2_MOD, MB2_BITSHIFT, MB2_PRELU,
    MB2_MIN, MB2_MAX, MB2_SUM, MB2_MEAN, MB2_BAND, MB2_BOR, MB2_BXOR,
} mb2_op;

static const char *const mb2_names[] = {
    [MB2_AND] = "And", [MB2_OR] = "Or", [MB2_XOR] = "Xor", [MB2_GE] = "GreaterOrEqual",
    [MB2_LE] = "LessOrEqual", [MB2_MOD] = "Mod", [MB2_BITSHIFT] = "BitShift",
    [MB2_PRELU] = "PRelu", [MB2_MIN] = "Min", [MB2_MAX] = "Max", [MB2_SUM] = "Sum",
    [MB2_MEAN] = "Mean", [MB2_BAND] = "BitwiseAnd", [MB2_BOR] = "BitwiseOr",
    [MB2_BXOR] = "BitwiseXor",
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
    wide_type type;          /* the operands' */
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
        else if (sa == 1 && sb == 1)                                                     \
            MB2_SPAN(TA, TO, a[i], b[i], EXPR)                                           \
        else if (sa == 1)                                                                \
            MB2_SPAN(TA, TO, a[i], b[0], EXPR)                                           \
        else if (sb == 1)                                                                \
            MB2_SPAN(TA, TO, a[0], b[i], EXPR)                                           \
        else                                                                             \
            MB2_SPAN(TA, TO, a[0], b[0], EXPR)                                           \
    }

/* One span's loop with X and Y read as given: a stepping operand is a[i]
 * or b[i], a fixed one a[0] or b[0], so that each of the four forms is its
 * own loop GCC vectorises (read through a runtime step of 0 or 1, a
 * comparison of a [450, 64] tensor with a [450, 1] column took 1.25 ns an
 * element: Hummingbird's GEMM forests). */
#define MB2_SPAN(TA, TO, XS, YS, EXPR)                                                   \
    for (size_t i = 0; i < n; i++) {                                                     \
        TA x = (XS), y = (YS);                                                           \
        o[i] = (TO)(EXPR);                                                               \
    }

MB2_BIN(mb2_and, uint8_t, uint8_t, (x != 0) & (y != 0))
MB2_BIN(mb2_or, uint8_t, uint8_t, (x != 0) | (y != 0))
MB2_BIN(mb2_xor, uint8_t, uint8_t, (x != 0) ^ (y != 0))
MB2_BIN(mb2_shl_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x << y) : 0)
MB2_BIN(mb2_shr_u8, uint8_t, uint8_t, y < 8 ? (uint8_t)(x >> y) : 0)
/* Signed BitShift (opset 28): the left shift in the unsigned type (bits
 * past the sign bit are dropped), the right one arithmetic; a shift below
 * zero or of the width or more leaves only the sign: -1 right of a
 * negative X, else 0. */
#define MB2_SIGNED_SHIFT(T, UT, W, SUFFIX)                                               \
    MB2_BIN(mb2_shl_##SUFFIX, T, T, y >= 0 && y < (W) ? (T)((UT)x << y) : 0)              \
    MB2_BIN(mb2_shr_##SUFFIX, T, T, y >= 0 && y < (W) ? (T)(x >> y) : (x < 0 ? -1 : 0))
MB2_SIGNED_SHIFT(int8_t, uint8_t, 8, i8)
MB2_SIGNED_SHIFT(int32_t, uint32_t, 32, i32)
MB2_SIGNED_SHIFT(int64_t, uint64_t, 64, i64)

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

/* Mod 28's fmod = 0 on floats, x - floor(x / y) * y with the sign of y:
 * fmod's remainder moved by y when their signs differ, and a zero given
 * y's sign. fmod already gives NaN for an infinite x or a zero y, and x for
 * an infinite y (then x + y = y when the signs differ), as ONNX wants. */
static inline float mb2_floor_mod_f(float x, float y)
{
    float r = fmodf(x, y);
    if (r == 0)
        return copysignf(0.0f, y);
    return (r < 0) != (y < 0) ? r + y : r;
}
static inline double mb2_floor_mod_d(double x, double y)
{
    double r = fmod(x, y);
    if (r == 0)
        return copysign(0.0, y);
    return (r < 0) != (y < 0) ? r + y : r;
}
MB2_BIN(mb2_mod_f32, float, float, mb2_floor_mod_f(x, y))
MB2_BIN(mb2_mod_f64, double, double, mb2_floor_mod_d(x, y))
MB2_INT_MOD(int64_t, i64)
MB2_INT_MOD(int32_t, i32)
MB2_INT_MOD(int8_t, i8)
MB2_BIN(mb2_fmod_u8, uint8_t, uint8_t, x % y)
#define MB2_BITWISE(T, SUFFIX)                                                           \
    MB2_BIN(mb2_band_##SUFFIX, T, T, x & y)                                              \
    MB2_BIN(mb2_bor_##SUFFIX, T, T, x | y)                                               \
    MB2_BIN(mb2_bxor_##SUFFIX, T, T, x ^ y)
MB2_BITWISE(int64_t, i64)
MB2_BITWISE(int32_t, i32)
MB2_BITWISE(int8_t, i8)
MB2_BITWISE(uint8_t, u8)
MB2_BIN(mb2_mod_u8, uint8_t, uint8_t, x % y)

/* Min Max Sum Mean over every operand: COMBINE folds x into acc; NAN_OF
 * says whether x is NaN (Min and Max propagate NaN, as NumPy does). */
#define MB2_FOLD(NAME, T, COMBINE, FINISH)                                               \
    static void NAME(const mb2_kernel *k, void *out, const void *const *in,              \
                     const size_t *st, size_t n, int add)                                \
    {                                                                                    \
        T *o = out;                                                                      \
        const int m = k->n_operands;                                                     \
        if (m == 2 && !add) { /* two operands: one loop per form, as MB2_BIN */         \
            const T *a = in[0], *b = in[1];                                              \
            if (st[0] == 1 && st[1] == 1)                                                \
                MB2_FOLD2(T, a[i], b[i], COMBINE, FINISH)                                \
            else if (st[0] == 1)                                                         \
                MB2_FOLD2(T, a[i], b[0], COMBINE, FINISH)                                \
            else if (st[1] == 1)                                                         \
                MB2_FOLD2(T, a[0], b[i], COMBINE, FINISH)                                \
            else                                                                         \
                MB2_FOLD2(T, a[0], b[0], COMBINE, FINISH)                                \
            return;                                                                      \
        }                                                                                \
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
/* MB2_FOLD's loop over two operands read as ACC0 and X0 (a[i] or a[0], b[i]
 * or b[0]): a Max or Min of a [450, 64] tensor and a [450, 1] column took 96
 * us through the general loop's runtime steps, an Add of the same 5. */
#define MB2_FOLD2(T, ACC0, X0, COMBINE, FINISH)                                          \
    for (size_t i = 0; i < n; i++) {                                                     \
        T acc = (ACC0), x = (X0);                                                        \
        acc = (COMBINE);                                                                 \
        acc = (FINISH);                                                                  \
        o[i] = acc;                                                                      \
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
static mb2_inner_fn mb2_pick(mb2_op op, wide_type t, bool fmod, bool left)
{
#define MB2_BY_TYPE(PREFIX)                                                              \
    {[WT_F32] = PREFIX##_f32, [WT_F64] = PREFIX##_f64, [WT_I64] = PREFIX##_i64,          \
     [WT_I32] = PREFIX##_i32, [WT_I8] = PREFIX##_i8, [WT_U8] = PREFIX##_u8}
    static const mb2_inner_fn ge[WT_OTHER] = MB2_BY_TYPE(mb2_ge);
    static const mb2_inner_fn le[WT_OTHER] = MB2_BY_TYPE(mb2_le);
    static const mb2_inner_fn min[WT_OTHER] = MB2_BY_TYPE(mb2_min);
    static const mb2_inner_fn max[WT_OTHER] = MB2_BY_TYPE(mb2_max);
    static const mb2_inner_fn fmods[WT_OTHER] = MB2_BY_TYPE(mb2_fmod);
    static const mb2_inner_fn mods[WT_OTHER] = {
        [WT_F32] = mb2_mod_f32, [WT_F64] = mb2_mod_f64, [WT_I64] = mb2_mod_i64,
        [WT_I32] = mb2_mod_i32, [WT_I8] = mb2_mod_i8, [WT_U8] = mb2_mod_u8};
#define MB2_BY_INT(PREFIX)                                                               \
    {[WT_I64] = PREFIX##_i64, [WT_I32] = PREFIX##_i32, [WT_I8] = PREFIX##_i8,             \
     [WT_U8] = PREFIX##_u8}
    static const mb2_inner_fn band[WT_OTHER] = MB2_BY_INT(mb2_band);
    static const mb2_inner_fn bor[WT_OTHER] = MB2_BY_INT(mb2_bor);
    static const mb2_inner_fn bxor[WT_OTHER] = MB2_BY_INT(mb2_bxor);
#undef MB2_BY_INT
    static const mb2_inner_fn prelu[WT_OTHER] = {
        [WT_F32] = mb2_prelu_f32, [WT_F64] = mb2_prelu_f64, [WT_I64] = mb2_prelu_i64,
        [WT_I32] = mb2_prelu_i32};
#undef MB2_BY_TYPE
    if (t == WT_OTHER)
        return NULL;
    switch (op) {
    case MB2_AND: return t == WT_BOOL ? mb2_and : NULL;
    case MB2_OR: return t == WT_BOOL ? mb2_or : NULL;
    case MB2_XOR: return t == WT_BOOL ? mb2_xor : NULL;
    case MB2_GE: return ge[t];
    case MB2_LE: return le[t];
    case MB2_MOD: return fmod ? fmods[t] : mods[t];
    case MB2_BITSHIFT:
        switch (t) {
        case WT_U8: return left ? mb2_shl_u8 : mb2_shr_u8;
        case WT_I8: return left ? mb2_shl_i8 : mb2_shr_i8;
        case WT_I32: return left ? mb2_shl_i32 : mb2_shr_i32;
        case WT_I64: return left ? mb2_shl_i64 : mb2_shr_i64;
        default: return NULL;
        }
    case MB2_PRELU: return prelu[t];
    case MB2_MIN: return min[t];
    case MB2_MAX: return max[t];
    case MB2_SUM: return t == WT_F32 ? mb2_sum_f32 : t == WT_F64 ? mb2_sum_f64 : NULL;
    case MB2_MEAN: return t == WT_F32 ? mb2_mean_f32 : t == WT_F64 ? mb2_mean_f64 : NULL;
    case MB2_BAND: return band[t];
    case MB2_BOR: return bor[t];
    case MB2_BXOR: return bxor[t];
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

static bool mb2_has_zero(const void *b, wide_type t, size_t n)
{
    bool zero = false;
    for (size_t i = 0; i < n; i++)
        zero |= wide_load_i(b, t, i) == 0;
    return zero;
}

static pl_status *mb2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mb2_kernel *k = (const mb2_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, k->allow_add, &out, &add);
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
static pl_status *mb2_attrs(const pl_node_desc *node, mb2_op op, wide_type t, bool *fmod,
                            bool *left)
{
    *fmod = false;
    *left = true;
    if (op == MB2_MOD) {
        int64_t v;
        pl_status *st = cpu_attr_int(node, "fmod", 0, &v);
        if (st != NULL)
            return st;
        /* floats with fmod = 0 are defined from opset 28 (floor modulo) */
        if (v == 0 && wide_is_float(t) &&
            !(PL_ABI_HAS_FIELD(pl_node_desc, node, opset_version) && node->opset_version >= 28))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "fmod must be 1 for floating-point inputs before opset 28");
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

pl_status *math_build_nary(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    int found = wide_find(mb2_names, WIDE_COUNT(mb2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a broadcasting op of this family");
    mb2_op op = (mb2_op)found;
    const pl_tensor *o = &node->outputs[0];
    size_t m = node->n_inputs;
    if (m > MB2_MAX_OPERANDS)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%zu inputs (at most %d are supported)",
                         m, MB2_MAX_OPERANDS);
    pl_dtype dt = node->inputs[0].dtype;
    wide_type t = wide_type_of(dt);
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
    k->allow_add = !to_bool && op != MB2_BITSHIFT && op < MB2_BAND && t != WT_BOOL;
    k->esize = pl_dtype_size(dt);
    k->out_esize = pl_dtype_size(o->dtype);
    k->n_operands = (int)m;
    if (op == MB2_MOD && wide_is_int(t)) {
        k->check_zero = true;
        k->divisor_elements = cpu_elements(node->inputs[1].shape, node->inputs[1].ndim);
    }
    k->ndim = math_merge_dims(o->shape, o->ndim, m, s, k->dims, k->stride);
    cpu_host->host_free(ctx->host_ctx, s);
    *out_kernel = &k->base;
    return NULL;
}

