/* math_unary.c — the cpu module's elementwise unary math: Sqrt Exp Log Neg
 * Abs Reciprocal Erf LeakyRelu and Clip on f32, and Neg and Abs on i32 and
 * i64 too.
 *
 * Each op is one simple loop over a chunk of the flat index, run on the
 * host's pool; the loops read an element before writing the same index, so
 * an output aliasing the input (in place) is safe. Clip's bounds come from
 * its attributes (opset < 11), fixed at get_kernel time, or from its
 * optional scalar inputs (opset >= 11), read at each run; an absent bound
 * is no bound. Clip(0, 6), ReLU6, is the same two compares and selects,
 * which the compiler vectorises. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "fastmath.h"
#include "math_internal.h"

typedef enum math_unary_op {
    MU_SQRT, MU_EXP, MU_LOG, MU_NEG, MU_ABS, MU_RECIPROCAL, MU_ERF, MU_LEAKY, MU_CLIP,
} math_unary_op;

static const char *const math_unary_names[] = {
    [MU_SQRT] = "Sqrt",       [MU_EXP] = "Exp", [MU_LOG] = "Log",         [MU_NEG] = "Neg",
    [MU_ABS] = "Abs",         [MU_RECIPROCAL] = "Reciprocal",             [MU_ERF] = "Erf",
    [MU_LEAKY] = "LeakyRelu", [MU_CLIP] = "Clip",
};

typedef struct math_unary_kernel {
    pl_kernel base;
    math_unary_op op;
    math_type type;     /* MATH_F32, or MATH_I32/MATH_I64 for Neg and Abs */
    float alpha;        /* LeakyRelu */
    float lo, hi;       /* Clip's attribute bounds (opset < 11) */
    bool min_input;     /* Clip reads its min from input 1 */
    bool max_input;     /* and its max from input 2 */
} math_unary_kernel;

typedef struct math_unary_call {
    const math_unary_kernel *k;
    const void *x;
    void *y;
    int add;
    float lo, hi;
} math_unary_call;

/* Y[i] = EXPR of x = X[i] (or += with ADD) over [begin, end). */
#define MU_LOOP(T, EXPR)                                   \
    do {                                                   \
        const T *xs = c->x;                                \
        T *ys = c->y;                                      \
        if (c->add)                                        \
            for (size_t i = begin; i < end; i++) {         \
                T x = xs[i];                               \
                ys[i] += (EXPR);                           \
            }                                              \
        else                                               \
            for (size_t i = begin; i < end; i++) {         \
                T x = xs[i];                               \
                ys[i] = (EXPR);                            \
            }                                              \
    } while (0)

/* erf without a libm call, so the loop vectorises: a Taylor series near 0
 * and Abramowitz & Stegun's 7.1.28 (1 - (1 + a1 x + ... + a6 x^6)^-16)
 * beyond. Absolute error below 9e-7 over all floats (checked against
 * double erf on a 1e-5 grid of [-6, 6]); NaN stays NaN. */
static inline float math_erf(float x)
{
    float ax = fabsf(x);
    float t = 1.0f + ax * (0.0705230784f + ax * (0.0422820123f + ax * (0.0092705272f +
              ax * (0.0001520143f + ax * (0.0002765672f + ax * 0.0000430638f)))));
    t *= t;
    t *= t;
    t *= t;
    t *= t;
    float big = 1.0f - 1.0f / t;
    float x2 = x * x;
    float small = ax * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f +
                  x2 * (-0.0268661706f + x2 * (0.0052239776f + x2 * (-0.000854846f +
                  x2 * 0.00012055f))))));
    return copysignf(ax < 0.6f ? small : big, x);
}

static void math_unary_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const math_unary_call *c = arg;
    const math_unary_kernel *k = c->k;
    if (k->type == MATH_I64) {
        if (k->op == MU_NEG)
            MU_LOOP(int64_t, (int64_t)(0u - (uint64_t)x));
        else
            MU_LOOP(int64_t, x < 0 ? (int64_t)(0u - (uint64_t)x) : x);
        return;
    }
    if (k->type == MATH_I32) {
        if (k->op == MU_NEG)
            MU_LOOP(int32_t, (int32_t)(0u - (uint32_t)x));
        else
            MU_LOOP(int32_t, x < 0 ? (int32_t)(0u - (uint32_t)x) : x);
        return;
    }
    const float alpha = k->alpha, lo = c->lo, hi = c->hi;
    switch (k->op) {
    case MU_SQRT: MU_LOOP(float, sqrtf(x)); break;
    case MU_EXP: MU_LOOP(float, cpu_expf(x)); break;
    case MU_LOG: MU_LOOP(float, logf(x)); break;
    case MU_NEG: MU_LOOP(float, -x); break;
    case MU_ABS: MU_LOOP(float, fabsf(x)); break;
    case MU_RECIPROCAL: MU_LOOP(float, 1.0f / x); break;
    case MU_ERF: MU_LOOP(float, math_erf(x)); break;
    case MU_LEAKY: MU_LOOP(float, x < 0.0f ? alpha * x : x); break;
    /* NaN fails both compares and passes through. */
    case MU_CLIP: MU_LOOP(float, x < lo ? lo : (x > hi ? hi : x)); break;
    }
}

/* Clip's bound from optional input I, or DEFAULT_VALUE when the node has
 * none. */
static pl_status *math_clip_bound(const pl_kernel *kernel, const pl_run_args *args, size_t i,
                                  bool present, float default_value, float *out)
{
    *out = default_value;
    if (!present)
        return NULL;
    if (args->n_inputs <= i || args->inputs[i].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input %zu (%s) has no data", i,
                         i == 1 ? "min" : "max");
    *out = *(const float *)math_in(args, i);
    return NULL;
}

static void math_unary_go(pl_module_ctx *ctx, math_unary_call *c, size_t n)
{
    const math_unary_op op = c->k->op;
    bool heavy = op == MU_EXP || op == MU_LOG || op == MU_ERF || op == MU_SQRT;
    cpu_host->parallel_for(ctx->host_ctx, n, heavy ? MATH_GRAIN_HEAVY : MATH_GRAIN,
                           math_unary_chunk, c);
}

static pl_status *math_unary_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                 const pl_run_args *args, float *out, pl_output_request req)
{
    const math_unary_kernel *k = (const math_unary_kernel *)kernel;
    math_unary_call c = {.k = k, .x = cpu_in(args, 0), .y = out, .add = req == PL_REQ_ADD_TO,
                         .lo = k->lo, .hi = k->hi};
    if (k->op == MU_CLIP) {
        pl_status *st = math_clip_bound(kernel, args, 1, k->min_input, k->lo, &c.lo);
        if (st == NULL)
            st = math_clip_bound(kernel, args, 2, k->max_input, k->hi, &c.hi);
        if (st != NULL)
            return st;
    }
    math_unary_go(ctx, &c, kernel->out_elements);
    return NULL;
}

/* Neg and Abs on integers: kernel.c checks f32 kernels only. */
static pl_status *math_unary_run_int(pl_module_ctx *ctx, const pl_kernel *kernel,
                                     const pl_run_args *args)
{
    void *out;
    pl_output_request req;
    pl_status *st = math_run_output(kernel, args, 0, kernel->out_elements, true, &out, &req);
    if (st != NULL || out == NULL)
        return st;
    math_unary_call c = {.k = (const math_unary_kernel *)kernel, .x = math_in(args, 0),
                         .y = out, .add = req == PL_REQ_ADD_TO};
    math_unary_go(ctx, &c, kernel->out_elements);
    return NULL;
}

pl_status *math_build_unary(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    math_unary_op op = MU_SQRT;
    for (size_t i = 0; i < sizeof math_unary_names / sizeof math_unary_names[0]; i++)
        if (strcmp(node->op, math_unary_names[i]) == 0)
            op = (math_unary_op)i;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    math_type t = math_type_of(x->dtype);
    bool int_ok = op == MU_NEG || op == MU_ABS;
    if (!(t == MATH_F32 || (int_ok && (t == MATH_I32 || t == MATH_I64))))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    float lo = -INFINITY, hi = INFINITY, alpha = 0.01f;
    bool min_input = false, max_input = false;
    if (op == MU_LEAKY) {
        double a;
        if ((st = cpu_attr_float(node, "alpha", 0.01, &a)) != NULL)
            return st;
        alpha = (float)a;
    } else if (op == MU_CLIP && math_opset(node) < 11) {
        double mn, mx;
        if ((st = cpu_attr_float(node, "min", -FLT_MAX, &mn)) != NULL ||
            (st = cpu_attr_float(node, "max", FLT_MAX, &mx)) != NULL)
            return st;
        lo = (float)mn;
        hi = (float)mx;
    } else if (op == MU_CLIP) {
        for (size_t i = 1; i < node->n_inputs; i++) {
            if (!math_input_present(node, i))
                continue;
            const pl_tensor *b = &node->inputs[i];
            if (!PL_DTYPE_EQ(b->dtype, x->dtype))
                return math_unsupported_dtype(node->op, b->dtype);
            if (cpu_elements(b->shape, b->ndim) != 1)
                return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                                 "%s must be a scalar", i == 1 ? "min" : "max");
            if (i == 1)
                min_input = true;
            else
                max_input = true;
        }
    }
    math_unary_kernel *k = (math_unary_kernel *)cpu_kernel_alloc(
        ctx, sizeof *k, math_unary_names[op], t == MATH_F32 ? math_unary_run : NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    if (t != MATH_F32)
        k->base.run_any = math_unary_run_int;
    k->op = op;
    k->type = t;
    k->alpha = alpha;
    k->lo = lo;
    k->hi = hi;
    k->min_input = min_input;
    k->max_input = max_input;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    *out_kernel = &k->base;
    return NULL;
}
