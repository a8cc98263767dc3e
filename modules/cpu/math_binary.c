/* math_binary.c — the cpu module's broadcasting elementwise kernels: Add Sub
 * Mul Div on f32, f64, i64, i32, i8 and u8; Pow with a base of f32, f64,
 * i32 or i64 (ONNX's T) and an exponent of any of those number types;
 * Equal Less Greater giving bool (Equal on bool too); Where over any dtype.
 * f16 and bf16 reach these kernels as f32 (dtype_wrap.c). *
 * The builder precomputes, for the output's shape with its size-1 dims
 * dropped and neighbouring dims merged wherever every operand steps
 * through them as one dim, each operand's stride in each dim (0 where it
 * broadcasts). Same-shape operands then collapse to one dim, a scalar to a
 * dim of stride 0, BERT's [B,S,H] - [B,S,1] to two dims whose inner one
 * has the second operand fixed. A run walks chunks of the flat output
 * index on the host's pool and hands every span of the innermost dim to an
 * inner loop chosen at get_kernel time for the op and dtypes; the loops
 * have one branch per stride pattern, so the common ones vectorise. Every
 * loop reads an element before it writes the same index, so an output
 * aliasing input 0 (in place) is safe.
 *
 * Integer arithmetic wraps (two's complement) instead of overflowing;
 * integer Div truncates toward zero as C does, and a zero divisor anywhere
 * fails the run before anything is written (an error, never a trap: C's
 * x / 0 is undefined, numpy's gives 0 with a warning). */
#include <math.h>
#include <string.h>

#include "math_internal.h"

typedef enum mb_op {
    MB_ADD, MB_SUB, MB_MUL, MB_DIV, MB_POW, MB_EQUAL, MB_LESS, MB_GREATER, MB_WHERE,
} mb_op;

static const char *const mb_names[] = {
    [MB_ADD] = "Add",     [MB_SUB] = "Sub",   [MB_MUL] = "Mul",
    [MB_DIV] = "Div",     [MB_POW] = "Pow",   [MB_EQUAL] = "Equal",
    [MB_LESS] = "Less",   [MB_GREATER] = "Greater", [MB_WHERE] = "Where",
};

/* One span of N output elements: IN[j] is operand j's first element for
 * it, STEP[j] 1 when the operand steps with the output and 0 when it stays
 * on one element; ADD accumulates into the output. */
typedef void (*mb_inner_fn)(void *out, const void *const *in, size_t n, const int *step,
                            int add);

typedef struct mb_kernel {
    pl_kernel base;
    mb_op op;
    mb_inner_fn inner;
    int n_operands;                 /* 2, or 3 for Where */
    size_t esize[3];                /* bytes per element of each operand */
    size_t out_esize;
    bool allow_add;                 /* the output's dtype can accumulate */
    math_type div_type;             /* integer Div: the divisor's type, else MATH_OTHER */
    size_t divisor_elements;
    int ndim;                       /* >= 1 after collapsing */
    int64_t dims[CPU_MAX_RANK];
    int64_t stride[3][CPU_MAX_RANK];
} mb_kernel;

/* ---- inner loops ---------------------------------------------------------- */

#define MB_BODY(TA, TB, TO, XE, YE, EXPR)          \
    do {                                           \
        if (add)                                   \
            for (size_t i = 0; i < n; i++) {       \
                TA x = (XE);                       \
                TB y = (YE);                       \
                o[i] += (TO)(EXPR);                \
            }                                      \
        else                                       \
            for (size_t i = 0; i < n; i++) {       \
                TA x = (XE);                       \
                TB y = (YE);                       \
                o[i] = (TO)(EXPR);                 \
            }                                      \
    } while (0)

/* An inner loop for operands of types TA and TB and an output of TO. */
#define MB_INNER(NAME, TA, TB, TO, EXPR)                                     \
    static void NAME(void *out, const void *const *in, size_t n,             \
                     const int *step, int add)                               \
    {                                                                        \
        TO *o = out;                                                         \
        const TA *a = in[0];                                                 \
        const TB *b = in[1];                                                 \
        if (step[0] && step[1]) {                                            \
            MB_BODY(TA, TB, TO, a[i], b[i], EXPR);                           \
        } else if (step[1]) {                                                \
            const TA av = a[0];                                              \
            MB_BODY(TA, TB, TO, av, b[i], EXPR);                             \
        } else if (step[0]) {                                                \
            const TB bv = b[0];                                              \
            MB_BODY(TA, TB, TO, a[i], bv, EXPR);                             \
        } else {                                                             \
            const TA av = a[0];                                              \
            const TB bv = b[0];                                              \
            MB_BODY(TA, TB, TO, av, bv, EXPR);                               \
        }                                                                    \
    }

/* Integers wrap (computed in the unsigned type UT); INT_MIN / -1 wraps to
 * INT_MIN, and Div truncates toward zero as C, numpy's int(a / b) and
 * ONNX's reference do. Divisors were checked for zero before the run. */
#define MB_ARITH_OPS(T, UT, SUFFIX, DIV)                                                 \
    MB_INNER(mb_add_##SUFFIX, T, T, T, (T)((UT)x + (UT)y))                               \
    MB_INNER(mb_sub_##SUFFIX, T, T, T, (T)((UT)x - (UT)y))                               \
    MB_INNER(mb_mul_##SUFFIX, T, T, T, (T)((UT)x * (UT)y))                               \
    MB_INNER(mb_div_##SUFFIX, T, T, T, DIV)
#define MB_SIGNED_DIV(T, UT) (y == -1 ? (T)((UT)0 - (UT)x) : (T)(x / y))
MB_ARITH_OPS(float, float, f32, x / y)
MB_ARITH_OPS(double, double, f64, x / y)
MB_ARITH_OPS(int64_t, uint64_t, i64, MB_SIGNED_DIV(int64_t, uint64_t))
MB_ARITH_OPS(int32_t, uint32_t, i32, MB_SIGNED_DIV(int32_t, uint32_t))
/* int8 arithmetic in unsigned int: products fit, and the narrowing wraps. */
MB_ARITH_OPS(int8_t, unsigned, i8, MB_SIGNED_DIV(int8_t, unsigned))
MB_ARITH_OPS(uint8_t, unsigned, u8, (uint8_t)(x / y))

#define MB_COMPARE_OPS(T, SUFFIX)                                  \
    MB_INNER(mb_eq_##SUFFIX, T, T, uint8_t, x == y)                \
    MB_INNER(mb_lt_##SUFFIX, T, T, uint8_t, x < y)                 \
    MB_INNER(mb_gt_##SUFFIX, T, T, uint8_t, x > y)
MB_COMPARE_OPS(float, f32)
MB_COMPARE_OPS(double, f64)
MB_COMPARE_OPS(int64_t, i64)
MB_COMPARE_OPS(int32_t, i32)
MB_COMPARE_OPS(uint8_t, u8)
MB_COMPARE_OPS(int8_t, i8)

/* Pow of an integer base: by squaring, wrapping, for an integer exponent
 * (numpy's integer power; a negative one gives 1/x^-y truncated: 0 unless
 * x is 1 or -1), else in double and truncated toward zero, saturating. */
static inline int64_t mb_ipow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (uint64_t e = (uint64_t)y; e != 0; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return (int64_t)r;
}

#define MB_IS_INT(v) _Generic((v), float: 0, double: 0, default: 1)
#define MB_POW_OF_INT(T)                                                                 \
    (T)(MB_IS_INT(y) ? mb_ipow((int64_t)x, (int64_t)y) : math_trunc_i64(pow((double)x, (double)y)))
/* Pow's inner loops for a base of T (suffix S) over every exponent type. */
#define MB_POW_ALL(T, S, EXPR)                                                           \
    MB_INNER(mb_pow_##S##_f64, T, double, T, EXPR)                                       \
    MB_INNER(mb_pow_##S##_i8, T, int8_t, T, EXPR)                                        \
    MB_INNER(mb_pow_##S##_u8, T, uint8_t, T, EXPR)
#define MB_POW_MORE(T, S, EXPR)                                                          \
    MB_POW_ALL(T, S, EXPR)                                                               \
    MB_INNER(mb_pow_##S##_f32, T, float, T, EXPR)                                        \
    MB_INNER(mb_pow_##S##_i32, T, int32_t, T, EXPR)                                      \
    MB_INNER(mb_pow_##S##_i64, T, int64_t, T, EXPR)
MB_POW_ALL(float, f32, powf(x, (float)y))
MB_POW_MORE(double, f64, pow(x, (double)y))
MB_POW_MORE(int32_t, i32, MB_POW_OF_INT(int32_t))
MB_POW_MORE(int64_t, i64, MB_POW_OF_INT(int64_t))

/* Pow with one exponent Y over the span: squares and square roots (the
 * usual exponents of a decomposed LayerNorm) and cubes (GPT-2's and BERT's
 * tanh GELU, 0.044715 * x^3: powf took 0.33 ms of each of gpt2_dq's
 * layers on cpu) skip powf; a cube is (x * x) * x, as ONNX Runtime
 * computes it. */
static void mb_pow_fixed(float *o, const float *a, int a_step, float y, size_t n, int add)
{
    if (!a_step) {
        float v = powf(a[0], y);
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += v;
        else
            for (size_t i = 0; i < n; i++)
                o[i] = v;
        return;
    }
    if (y == 2.0f) {
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += a[i] * a[i];
        else
            for (size_t i = 0; i < n; i++)
                o[i] = a[i] * a[i];
    } else if (y == 3.0f) {
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += a[i] * a[i] * a[i];
        else
            for (size_t i = 0; i < n; i++)
                o[i] = a[i] * a[i] * a[i];
    } else if (y == 0.5f) {
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += sqrtf(a[i]);
        else
            for (size_t i = 0; i < n; i++)
                o[i] = sqrtf(a[i]);
    } else if (y == 1.0f) {
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += a[i];
        else
            for (size_t i = 0; i < n; i++)
                o[i] = a[i];
    } else {
        if (add)
            for (size_t i = 0; i < n; i++)
                o[i] += powf(a[i], y);
        else
            for (size_t i = 0; i < n; i++)
                o[i] = powf(a[i], y);
    }
}

#define MB_POW(NAME, TE)                                                     \
    static void NAME(void *out, const void *const *in, size_t n,             \
                     const int *step, int add)                               \
    {                                                                        \
        float *o = out;                                                      \
        const float *a = in[0];                                              \
        const TE *b = in[1];                                                 \
        if (!step[1]) {                                                      \
            mb_pow_fixed(o, a, step[0], (float)b[0], n, add);                \
            return;                                                          \
        }                                                                    \
        const size_t sa = (size_t)step[0];                                   \
        if (add)                                                             \
            for (size_t i = 0; i < n; i++)                                   \
                o[i] += powf(a[i * sa], (float)b[i]);                        \
        else                                                                 \
            for (size_t i = 0; i < n; i++)                                   \
                o[i] = powf(a[i * sa], (float)b[i]);                         \
    }
MB_POW(mb_pow_f32_f32, float)
MB_POW(mb_pow_f32_i32, int32_t)
MB_POW(mb_pow_f32_i64, int64_t)

/* Where: operand 0 is the bool condition. */
#define MB_WHERE(NAME, T)                                                    \
    static void NAME(void *out, const void *const *in, size_t n,             \
                     const int *step, int add)                               \
    {                                                                        \
        T *o = out;                                                          \
        const uint8_t *c = in[0];                                            \
        const T *x = in[1], *y = in[2];                                      \
        if (step[0] && !add) {                                               \
            /* a contiguous condition; x and y each contiguous or one     \
             * value (a mask against a constant): loops that vectorise */   \
            /* (both sides read unconditionally, so the select is a     \
             * blend, not a branch) */                                      \
            const T xv = x[0], yv = y[0];                                    \
            if (step[1] && step[2])                                          \
                for (size_t i = 0; i < n; i++) {                             \
                    const T a = x[i], b = y[i];                              \
                    o[i] = c[i] ? a : b;                                     \
                }                                                            \
            else if (step[1])                                                \
                for (size_t i = 0; i < n; i++) {                             \
                    const T a = x[i];                                        \
                    o[i] = c[i] ? a : yv;                                    \
                }                                                            \
            else if (step[2])                                                \
                for (size_t i = 0; i < n; i++) {                             \
                    const T b = y[i];                                        \
                    o[i] = c[i] ? xv : b;                                    \
                }                                                            \
            else                                                             \
                for (size_t i = 0; i < n; i++)                               \
                    o[i] = c[i] ? xv : yv;                                   \
            return;                                                          \
        }                                                                    \
        const size_t sc = (size_t)step[0], sx = (size_t)step[1],             \
                     sy = (size_t)step[2];                                   \
        if (add)                                                             \
            for (size_t i = 0; i < n; i++)                                   \
                o[i] += c[i * sc] ? x[i * sx] : y[i * sy];                   \
        else                                                                 \
            for (size_t i = 0; i < n; i++)                                   \
                o[i] = c[i * sc] ? x[i * sx] : y[i * sy];                    \
    }
MB_WHERE(mb_where_f32, float)
MB_WHERE(mb_where_i64, int64_t)
MB_WHERE(mb_where_i32, int32_t)
MB_WHERE(mb_where_f64, double)
MB_WHERE(mb_where_i8, int8_t)
/* Dtypes that are only copied (add is refused for them): by size. */
MB_WHERE(mb_where_b8, uint8_t)
MB_WHERE(mb_where_b16, uint16_t)
MB_WHERE(mb_where_b64, uint64_t)

/* ---- the walk ------------------------------------------------------------- */

typedef struct mb_call {
    const mb_kernel *k;
    const char *in[3];
    char *out;
    int add;
} mb_call;

/* Output elements [begin, end): the multi-index of begin, then whole or
 * partial spans of the innermost dim. */
static void mb_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mb_call *c = arg;
    const mb_kernel *k = c->k;
    const int last = k->ndim - 1, n_ops = k->n_operands;
    int64_t idx[CPU_MAX_RANK], off[3];
    math_walk_start(k->ndim, k->dims, n_ops, k->stride, begin, idx, off);
    int step[3] = {0, 0, 0};
    for (int j = 0; j < n_ops; j++)
        step[j] = k->stride[j][last] != 0;
    const void *in[3] = {NULL, NULL, NULL};
    size_t pos = begin;
    while (pos < end) {
        size_t span = math_walk_span(k->ndim, k->dims, idx, end - pos);
        for (int j = 0; j < n_ops; j++)
            in[j] = c->in[j] + (size_t)off[j] * k->esize[j];
        k->inner(c->out + pos * k->out_esize, in, span, step, c->add);
        pos += span;
        math_walk_advance(k->ndim, k->dims, n_ops, k->stride, span, idx, off);
    }
}

/* True when an integer divisor holds a zero. */
static bool mb_has_zero(const void *b, size_t esize, size_t n)
{
    const unsigned char *p = b;
    for (size_t i = 0; i < n; i++, p += esize) {
        unsigned char any = 0;
        for (size_t j = 0; j < esize; j++)
            any |= p[j];
        if (any == 0)
            return true;
    }
    return false;
}

static pl_status *mb_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mb_kernel *k = (const mb_kernel *)kernel;
    void *out;
    pl_output_request req;
    pl_status *st = math_run_output(kernel, args, 0, kernel->out_elements, k->allow_add, &out,
                                    &req);
    if (st != NULL || out == NULL)
        return st;
    if (k->div_type != MATH_OTHER && mb_has_zero(math_in(args, 1), k->esize[1],
                                                 k->divisor_elements))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "integer division by zero");
    mb_call c = {.k = k, .out = out, .add = req == PL_REQ_ADD_TO};
    for (int j = 0; j < k->n_operands; j++)
        c.in[j] = math_in(args, (size_t)j);
    size_t grain = k->op == MB_POW ? MATH_GRAIN_HEAVY : MATH_GRAIN;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, mb_chunk, &c);
    return NULL;
}

/* ---- the builder ---------------------------------------------------------- */

/* Contiguous strides of SHAPE (rank R) aligned to the right of an output of
 * rank OUT_R; 0 where the operand has size 1 or no dim. False when a dim
 * neither matches the output nor is 1. */

/* The inner loop of OP on operands of types A and B (Where: x's type, and
 * the size of its elements in BYTES), or NULL when unsupported; *bad says
 * which operand's dtype is to blame (0, 1 or 2). */
static mb_inner_fn mb_pick(mb_op op, math_type a, math_type b, size_t bytes, int *bad)
{
    *bad = 0;
#define MB_BY_TYPE(PREFIX)                                                               \
    {[MATH_F32] = PREFIX##_f32, [MATH_F64] = PREFIX##_f64, [MATH_I64] = PREFIX##_i64,    \
     [MATH_I32] = PREFIX##_i32, [MATH_I8] = PREFIX##_i8, [MATH_U8] = PREFIX##_u8}
    static const mb_inner_fn arith[4][MATH_TYPE_COUNT] = {
        [MB_ADD] = MB_BY_TYPE(mb_add), [MB_SUB] = MB_BY_TYPE(mb_sub),
        [MB_MUL] = MB_BY_TYPE(mb_mul), [MB_DIV] = MB_BY_TYPE(mb_div),
    };
    static const mb_inner_fn compare[3][MATH_TYPE_COUNT] = {
        MB_BY_TYPE(mb_eq), MB_BY_TYPE(mb_lt), MB_BY_TYPE(mb_gt),
    };
    /* Pow: bases f32 f64 i32 i64 (ONNX's T), exponents of any number type. */
    static const mb_inner_fn pow[MATH_TYPE_COUNT][MATH_TYPE_COUNT] = {
        [MATH_F32] = MB_BY_TYPE(mb_pow_f32), [MATH_F64] = MB_BY_TYPE(mb_pow_f64),
        [MATH_I32] = MB_BY_TYPE(mb_pow_i32), [MATH_I64] = MB_BY_TYPE(mb_pow_i64),
    };
#undef MB_BY_TYPE
    if (a == MATH_OTHER)
        return NULL;
    switch (op) {
    case MB_ADD: case MB_SUB: case MB_MUL: case MB_DIV:
        return arith[op][a];
    case MB_POW:
        if (pow[a][MATH_F32] == NULL)
            return NULL;
        *bad = 1;
        return b == MATH_OTHER ? NULL : pow[a][b];
    case MB_EQUAL: case MB_LESS: case MB_GREATER:
        /* bool: Equal only (the table's bool row is u8's). */
        if (a == MATH_BOOL)
            return op == MB_EQUAL ? mb_eq_u8 : NULL;
        return compare[op - MB_EQUAL][a];
    case MB_WHERE:
        *bad = 1;
        switch (a) {
        case MATH_F32: return mb_where_f32;
        case MATH_F64: return mb_where_f64;
        case MATH_I64: return mb_where_i64;
        case MATH_I32: return mb_where_i32;
        case MATH_I8: return mb_where_i8;
        case MATH_U8: return mb_where_b8;
        default: break;
        }
        return bytes == 1 ? mb_where_b8 : bytes == 2 ? mb_where_b16
                                        : bytes == 4 ? mb_where_i32
                                        : bytes == 8 ? mb_where_b64 : NULL;
    }
    return NULL;
}

/* Checks the dtypes of NODE for OP and picks its inner loop. */
static pl_status *mb_check_dtypes(const pl_node_desc *node, mb_op op, mb_inner_fn *out_inner)
{
    const pl_tensor *in = node->inputs, *o = &node->outputs[0];
    *out_inner = NULL;
    size_t first = op == MB_WHERE ? 1 : 0;
    if (op == MB_WHERE && !PL_DTYPE_EQ(in[0].dtype, PL_DTYPE_BOOL))
        return math_unsupported_dtype(node->op, in[0].dtype);
    pl_dtype a = in[first].dtype, b = in[first + 1].dtype;
    int bad;
    mb_inner_fn f = mb_pick(op, math_type_of(a), math_type_of(b), pl_dtype_size(a), &bad);
    if (f == NULL)
        return math_unsupported_dtype(node->op, bad ? b : a);
    /* Operands of one type T (Pow's exponent excepted). */
    if (op != MB_POW && !PL_DTYPE_EQ(a, b))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "operands of dtypes %s and %s",
                         math_dtype_name(a), math_dtype_name(b));
    bool compare = op == MB_EQUAL || op == MB_LESS || op == MB_GREATER;
    pl_dtype want = compare ? PL_DTYPE_BOOL : a;
    if (!PL_DTYPE_EQ(o->dtype, want))
        return math_unsupported_dtype(node->op, o->dtype);
    *out_inner = f;
    return NULL;
}

pl_status *math_build_broadcast(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    mb_op op = MB_ADD;
    for (size_t i = 0; i < sizeof mb_names / sizeof mb_names[0]; i++)
        if (strcmp(node->op, mb_names[i]) == 0)
            op = (mb_op)i;
    const int n_ops = op == MB_WHERE ? 3 : 2;
    const pl_tensor *o = &node->outputs[0];
    mb_inner_fn inner;
    pl_status *st = mb_check_dtypes(node, op, &inner);
    if (st != NULL)
        return st;
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    int64_t s[3][CPU_MAX_RANK];
    for (int j = 0; j < n_ops; j++) {
        const pl_tensor *t = &node->inputs[j];
        if (!cpu_broadcast_strides(t->shape, t->ndim, o->shape, o->ndim, s[j])) {
            char ti[128], to[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %d's shape %s does not broadcast to the output's %s", j,
                             cpu_dims_text(t->shape, t->ndim, ti, sizeof ti),
                             cpu_dims_text(o->shape, o->ndim, to, sizeof to));
        }
    }
    mb_kernel *k = (mb_kernel *)cpu_kernel_alloc(ctx, sizeof *k, mb_names[op], NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mb_run;
    k->base.n_reads = (size_t)n_ops;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = op <= MB_POW;
    k->op = op;
    k->inner = inner;
    k->n_operands = n_ops;
    for (int j = 0; j < n_ops; j++)
        k->esize[j] = pl_dtype_size(node->inputs[j].dtype);
    k->out_esize = pl_dtype_size(o->dtype);
    math_type ot = math_type_of(o->dtype);
    k->allow_add = ot != MATH_OTHER && ot != MATH_BOOL;
    k->div_type = MATH_OTHER;
    if (op == MB_DIV && ot != MATH_F32 && ot != MATH_F64) {
        k->div_type = ot;
        k->divisor_elements = cpu_elements(node->inputs[1].shape, node->inputs[1].ndim);
    }

    k->ndim = math_merge_dims(o->shape, o->ndim, (size_t)n_ops, s, k->dims, k->stride);
    *out_kernel = &k->base;
    return NULL;
}
