/* math_unary.c — the cpu module's elementwise unary math: Sqrt Exp Log Neg
 * Abs Reciprocal Erf LeakyRelu Clip Relu Sigmoid Tanh on f32 and f64, and
 * the ones ONNX defines on integers on those too: Neg and Abs (i8 i32 i64,
 * Abs on u8), Relu (i8 i32 i64) and Clip (i8 u8 i32 i64). Integers wrap:
 * Neg and Abs of the lowest value give it back, as numpy does. f16 and
 * bf16 reach these kernels as f32 (dtype_wrap.c). Exp, Sigmoid and Tanh on
 * f32 use fastmath.h's expf and tanhf, which vectorise.
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
    MU_RELU, MU_SIGMOID, MU_TANH,
} math_unary_op;

static const char *const math_unary_names[] = {
    [MU_SQRT] = "Sqrt",       [MU_EXP] = "Exp", [MU_LOG] = "Log",         [MU_NEG] = "Neg",
    [MU_ABS] = "Abs",         [MU_RECIPROCAL] = "Reciprocal",             [MU_ERF] = "Erf",
    [MU_LEAKY] = "LeakyRelu", [MU_CLIP] = "Clip", [MU_RELU] = "Relu",
    [MU_SIGMOID] = "Sigmoid", [MU_TANH] = "Tanh",
};

typedef struct math_unary_kernel {
    pl_kernel base;
    math_unary_op op;
    math_type type;     /* the input's and output's */
    double alpha;       /* LeakyRelu */
    double lo, hi;      /* Clip's attribute bounds (opset < 11) */
    bool min_input;     /* Clip reads its min from input 1 */
    bool max_input;     /* and its max from input 2 */
    bool avx2;          /* f32 Exp, Log, Sigmoid, Tanh, Erf: mu_chunk_f32_avx2 */
    bool avx512;        /* f32 Exp, Sigmoid, Tanh with AVX-512: mu_chunk_f32_avx512 */
} math_unary_kernel;

typedef struct math_unary_call {
    const math_unary_kernel *k;
    const void *x;
    void *y;
    int add;
    double lo, hi;      /* Clip on floats */
    int64_t ilo, ihi;   /* Clip on integers */
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

/* Clip as ONNX defines it, min(max(x, lo), hi): lo above hi gives hi;
 * a NaN x stays NaN. */
static inline float mu_clip_f32(float x, float lo, float hi)
{
    float t = x < lo ? lo : x;
    return t > hi ? hi : t;
}
static inline double mu_clip_f64(double x, double lo, double hi)
{
    double t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

/* The float ops on T, with libm's functions of suffix F (f or none); EXP,
 * LOG and ERF are the exponential, logarithm and erf to use, RELU Relu's
 * expression. */
#define MU_FLOAT_CHUNK(T, SUFFIX, F, EXP, LOG, ERF, TANH, RELU)                           \
    static void mu_chunk_##SUFFIX(const math_unary_call *c, size_t begin, size_t end)    \
    {                                                                                    \
        const T alpha = (T)c->k->alpha, lo = (T)c->lo, hi = (T)c->hi;                    \
        const T one = 1, zero = 0;                                                       \
        switch (c->k->op) {                                                              \
        case MU_SQRT: MU_LOOP(T, sqrt##F(x)); break;                                     \
        case MU_EXP: MU_LOOP(T, EXP(x)); break;                                          \
        case MU_LOG: MU_LOOP(T, LOG(x)); break;                                          \
        case MU_NEG: MU_LOOP(T, -x); break;                                              \
        case MU_ABS: MU_LOOP(T, fabs##F(x)); break;                                      \
        case MU_RECIPROCAL: MU_LOOP(T, one / x); break;                                  \
        case MU_ERF: MU_LOOP(T, ERF(x)); break;                                          \
        case MU_LEAKY: MU_LOOP(T, x < zero ? alpha * x : x); break;                      \
        /* NaN fails both compares and passes through. */                                \
        case MU_CLIP: MU_LOOP(T, mu_clip_##SUFFIX(x, lo, hi)); break;                     \
        case MU_RELU: MU_LOOP(T, RELU); break;                                           \
        case MU_SIGMOID: MU_LOOP(T, one / (one + EXP(-x))); break;                       \
        case MU_TANH: MU_LOOP(T, TANH(x)); break;                                        \
        }                                                                                \
    }
/* f32 Relu gives 0 for NaN, as the Relu epilogue that kernel_fuse folds
 * into Conv, Gemm and MatMul does (the two must agree); f64 passes NaN. */
MU_FLOAT_CHUNK(float, f32, f, cpu_expf, cpu_logf, math_erf, cpu_tanhf, x > zero ? x : zero)
MU_FLOAT_CHUNK(double, f64, , exp, log, erf, tanh, x < zero ? zero : x)

#include "fastmath_avx2.h"
#ifdef CPU_AVX2
/* Exp, Sigmoid and Tanh in eight lanes with FMA where the CPU has AVX2
 * (fastmath_avx2.h says why): Tanh is cpu_tanhf step for step on
 * cpu_exp8. */
#define MU_AVX2 1
#define MU_AVX2_FN CPU_AVX2_FN
MU_AVX2_FN __m256 mu_tanh8(__m256 x)
{
    __m256 sign = _mm256_and_ps(x, _mm256_set1_ps(-0.0f));
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), x2 = _mm256_mul_ps(x, x);
    __m256 p = _mm256_mul_ps(x2, _mm256_fmadd_ps(x2, _mm256_set1_ps(62.0f / 2835.0f),
                                                 _mm256_set1_ps(-17.0f / 315.0f)));
    p = _mm256_add_ps(_mm256_set1_ps(2.0f / 15.0f), p);
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-1.0f / 3.0f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(1.0f));
    p = _mm256_mul_ps(x, p);
    __m256 e = cpu_exp8(_mm256_add_ps(ax, ax));
    __m256 q = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                             _mm256_div_ps(_mm256_set1_ps(2.0f),
                                           _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    q = _mm256_or_ps(q, sign); /* q >= 0 (or NaN): the sign of x */
    return _mm256_blendv_ps(q, p, _mm256_cmp_ps(ax, _mm256_set1_ps(0.25f), _CMP_LT_OQ));
}

/* math_erf in eight lanes, step for step (FMA rounds the Horner steps
 * once where the scalar form rounds twice: within its 9e-7). */
MU_AVX2_FN __m256 mu_erf8(__m256 x)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 ax = _mm256_andnot_ps(sign, x), x2 = _mm256_mul_ps(x, x);
    __m256 t = _mm256_fmadd_ps(ax, _mm256_set1_ps(0.0000430638f), _mm256_set1_ps(0.0002765672f));
    t = _mm256_fmadd_ps(ax, t, _mm256_set1_ps(0.0001520143f));
    t = _mm256_fmadd_ps(ax, t, _mm256_set1_ps(0.0092705272f));
    t = _mm256_fmadd_ps(ax, t, _mm256_set1_ps(0.0422820123f));
    t = _mm256_fmadd_ps(ax, t, _mm256_set1_ps(0.0705230784f));
    t = _mm256_fmadd_ps(ax, t, _mm256_set1_ps(1.0f));
    t = _mm256_mul_ps(t, t);
    t = _mm256_mul_ps(t, t);
    t = _mm256_mul_ps(t, t);
    t = _mm256_mul_ps(t, t);
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(1.0f), t));
    __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(0.00012055f), _mm256_set1_ps(-0.000854846f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(0.0052239776f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-0.0268661706f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(0.1128379167f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(-0.3761263890f));
    p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(1.1283791671f));
    __m256 small = _mm256_mul_ps(ax, p);
    __m256 r = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.6f), _CMP_LT_OQ));
    /* the sign of x; a NaN x fails the compare and gives big's NaN */
    return _mm256_or_ps(r, _mm256_and_ps(x, sign));
}

__attribute__((target("avx2,fma"))) static void mu_chunk_f32_avx2(const math_unary_call *c,
                                                                   size_t begin, size_t end)
{
    const math_unary_op op = c->k->op;
    const float *xs = c->x;
    float *ys = c->y;
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        __m256 x = _mm256_loadu_ps(xs + i), y;
        if (op == MU_EXP)
            y = cpu_exp8(x);
        else if (op == MU_LOG)
            y = cpu_log8(x);
        else if (op == MU_TANH)
            y = mu_tanh8(x);
        else if (op == MU_ERF)
            y = mu_erf8(x);
        else /* Sigmoid */
            y = _mm256_div_ps(_mm256_set1_ps(1.0f),
                              _mm256_add_ps(_mm256_set1_ps(1.0f),
                                            cpu_exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)))));
        if (c->add)
            y = _mm256_add_ps(y, _mm256_loadu_ps(ys + i));
        _mm256_storeu_ps(ys + i, y);
    }
    if (i < end)
        mu_chunk_f32(c, i, end);
}
#endif

#ifdef CPU_AVX2
/* mu_tanh8 in sixteen lanes, step for step. */
__attribute__((target("avx512f,fma"), always_inline)) static inline __m512 mu_tanh16(__m512 x)
{
    __m512 ax = _mm512_abs_ps(x), x2 = _mm512_mul_ps(x, x);
    __m512i sign = _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000));
    __m512 p = _mm512_mul_ps(x2, _mm512_fmadd_ps(x2, _mm512_set1_ps(62.0f / 2835.0f),
                                                 _mm512_set1_ps(-17.0f / 315.0f)));
    p = _mm512_add_ps(_mm512_set1_ps(2.0f / 15.0f), p);
    p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(-1.0f / 3.0f));
    p = _mm512_fmadd_ps(x2, p, _mm512_set1_ps(1.0f));
    p = _mm512_mul_ps(x, p);
    __m512 e = cpu_exp16(_mm512_add_ps(ax, ax));
    __m512 q = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                             _mm512_div_ps(_mm512_set1_ps(2.0f),
                                           _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    q = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(q), sign));
    return _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.25f), _CMP_LT_OQ), p);
}

/* mu_chunk_f32_avx2 for Exp, Tanh and Sigmoid in sixteen lanes (the same
 * bits; a Tanh took 0.85 ns an element in eight). */
__attribute__((target("avx512f,fma"))) static void mu_chunk_f32_avx512(const math_unary_call *c,
                                                                      size_t begin, size_t end)
{
    const math_unary_op op = c->k->op;
    const float *xs = c->x;
    float *ys = c->y;
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        __m512 x = _mm512_loadu_ps(xs + i), y;
        if (op == MU_EXP)
            y = cpu_exp16(x);
        else if (op == MU_TANH)
            y = mu_tanh16(x);
        else /* Sigmoid */
            y = _mm512_div_ps(_mm512_set1_ps(1.0f),
                              _mm512_add_ps(_mm512_set1_ps(1.0f),
                                            cpu_exp16(_mm512_castsi512_ps(_mm512_xor_si512(
                                                _mm512_castps_si512(x),
                                                _mm512_set1_epi32((int)0x80000000))))));
        if (c->add)
            y = _mm512_add_ps(y, _mm512_loadu_ps(ys + i));
        _mm512_storeu_ps(ys + i, y);
    }
    if (i < end)
        mu_chunk_f32_avx2(c, i, end);
}
#endif

/* Integers, through int64: |x| and -x wrap (computed unsigned). */
static inline int64_t mu_neg(int64_t x) { return (int64_t)(0u - (uint64_t)x); }
static inline int64_t mu_abs(int64_t x) { return x < 0 ? mu_neg(x) : x; }
/* ONNX's Clip is min(max(x, lo), hi): with lo above hi every element is
 * hi. */
static inline int64_t mu_clamp(int64_t x, int64_t lo, int64_t hi)
{
    int64_t t = x < lo ? lo : x;
    return t > hi ? hi : t;
}

#define MU_INT_CHUNK(T, SUFFIX)                                                          \
    static void mu_chunk_##SUFFIX(const math_unary_call *c, size_t begin, size_t end)    \
    {                                                                                    \
        const int64_t lo = c->ilo, hi = c->ihi;                                          \
        switch (c->k->op) {                                                              \
        case MU_NEG: MU_LOOP(T, (T)mu_neg(x)); break;                                    \
        case MU_ABS: MU_LOOP(T, (T)mu_abs(x)); break;                                    \
        case MU_CLIP: MU_LOOP(T, (T)mu_clamp(x, lo, hi)); break;                         \
        case MU_RELU: MU_LOOP(T, (T)mu_clamp(x, 0, INT64_MAX)); break;                   \
        default: break;                                                                  \
        }                                                                                \
    }
MU_INT_CHUNK(int64_t, i64)
MU_INT_CHUNK(int32_t, i32)
MU_INT_CHUNK(int8_t, i8)
MU_INT_CHUNK(uint8_t, u8)

static void math_unary_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const math_unary_call *c = arg;
    switch (c->k->type) {
    case MATH_F32:
#ifdef MU_AVX2
        if (c->k->avx512) {
            mu_chunk_f32_avx512(c, begin, end);
            return;
        }
        if (c->k->avx2) {
            mu_chunk_f32_avx2(c, begin, end);
            break;
        }
#endif
        mu_chunk_f32(c, begin, end);
        break;
    case MATH_F64: mu_chunk_f64(c, begin, end); break;
    case MATH_I64: mu_chunk_i64(c, begin, end); break;
    case MATH_I32: mu_chunk_i32(c, begin, end); break;
    case MATH_I8: mu_chunk_i8(c, begin, end); break;
    case MATH_U8: mu_chunk_u8(c, begin, end); break;
    default: break;
    }
}

/* Clip's bound from optional input I (of the kernel's type) into *F (a
 * float type) or *I (an integer type); unchanged when the node has none. */
static pl_status *math_clip_bound(const math_unary_kernel *k, const pl_run_args *args, size_t i,
                                  bool present, double *f, int64_t *n)
{
    if (!present)
        return NULL;
    if (args->n_inputs <= i || args->inputs[i].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op, "input %zu (%s) has no data", i,
                         i == 1 ? "min" : "max");
    const void *p = math_in(args, i);
    switch (k->type) {
    case MATH_F32: *f = *(const float *)p; break;
    case MATH_F64: *f = *(const double *)p; break;
    case MATH_I64: *n = *(const int64_t *)p; break;
    case MATH_I32: *n = *(const int32_t *)p; break;
    case MATH_I8: *n = *(const int8_t *)p; break;
    default: *n = *(const uint8_t *)p; break;
    }
    return NULL;
}

static void math_unary_go(pl_module_ctx *ctx, math_unary_call *c, size_t n)
{
    const math_unary_op op = c->k->op;
    bool heavy = op == MU_EXP || op == MU_LOG || op == MU_ERF || op == MU_SQRT ||
                 op == MU_SIGMOID || op == MU_TANH;
    size_t grain = !heavy             ? MATH_GRAIN
                   : c->k->avx512     ? MATH_GRAIN_VEC_AVX512
                   : c->k->avx2       ? MATH_GRAIN_VEC_AVX2
                                      : MATH_GRAIN_HEAVY;
    cpu_host->parallel_for(ctx->host_ctx, n, grain, math_unary_chunk, c);
}

/* Runs C over the kernel's elements, Clip's bounds read first. */
static pl_status *math_unary_go_call(pl_module_ctx *ctx, const pl_run_args *args,
                                     math_unary_call *c)
{
    const math_unary_kernel *k = c->k;
    c->lo = k->lo;
    c->hi = k->hi;
    c->ilo = INT64_MIN;
    c->ihi = INT64_MAX;
    if (k->op == MU_CLIP) {
        pl_status *st = math_clip_bound(k, args, 1, k->min_input, &c->lo, &c->ilo);
        if (st == NULL)
            st = math_clip_bound(k, args, 2, k->max_input, &c->hi, &c->ihi);
        if (st != NULL)
            return st;
    }
    math_unary_go(ctx, c, k->base.out_elements);
    return NULL;
}

static pl_status *math_unary_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                 const pl_run_args *args, float *out, pl_output_request req)
{
    math_unary_call c = {.k = (const math_unary_kernel *)kernel, .x = cpu_in(args, 0),
                         .y = out, .add = req == PL_REQ_ADD_TO};
    return math_unary_go_call(ctx, args, &c);
}

/* Other dtypes than f32: kernel.c checks f32 kernels only. */
static pl_status *math_unary_run_any(pl_module_ctx *ctx, const pl_kernel *kernel,
                                     const pl_run_args *args)
{
    void *out;
    pl_output_request req;
    pl_status *st = math_run_output(kernel, args, 0, kernel->out_elements, true, &out, &req);
    if (st != NULL || out == NULL)
        return st;
    math_unary_call c = {.k = (const math_unary_kernel *)kernel, .x = math_in(args, 0),
                         .y = out, .add = req == PL_REQ_ADD_TO};
    return math_unary_go_call(ctx, args, &c);
}

/* Whether ONNX defines OP on integers of type T. */
static bool math_unary_int_ok(math_unary_op op, math_type t)
{
    switch (op) {
    case MU_ABS: case MU_CLIP:
        return t == MATH_I64 || t == MATH_I32 || t == MATH_I8 || t == MATH_U8;
    case MU_NEG: case MU_RELU:
        return t == MATH_I64 || t == MATH_I32 || t == MATH_I8;
    default:
        return false;
    }
}

pl_status *math_build_unary(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    math_unary_op op = MU_SQRT;
    for (size_t i = 0; i < sizeof math_unary_names / sizeof math_unary_names[0]; i++)
        if (strcmp(node->op, math_unary_names[i]) == 0)
            op = (math_unary_op)i;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    math_type t = math_type_of(x->dtype);
    if (!(t == MATH_F32 || t == MATH_F64 || math_unary_int_ok(op, t)))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    double lo = -INFINITY, hi = INFINITY, alpha = 0.01f;
    bool min_input = false, max_input = false;
    if (op == MU_LEAKY) {
        double a;
        if ((st = cpu_attr_float(node, "alpha", 0.01, &a)) != NULL)
            return st;
        alpha = t == MATH_F32 ? (float)a : a;
    } else if (op == MU_CLIP && math_opset(node) < 11) {
        double mn, mx;
        if ((st = cpu_attr_float(node, "min", -FLT_MAX, &mn)) != NULL ||
            (st = cpu_attr_float(node, "max", FLT_MAX, &mx)) != NULL)
            return st;
        lo = t == MATH_F32 ? (float)mn : mn;
        hi = t == MATH_F32 ? (float)mx : mx;
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
        k->base.run_any = math_unary_run_any;
    k->op = op;
    k->type = t;
#ifdef MU_AVX2
    k->avx2 = t == MATH_F32 &&
              (op == MU_EXP || op == MU_LOG || op == MU_SIGMOID || op == MU_TANH ||
               op == MU_ERF) &&
              cpu_has_avx2_fma();
    k->avx512 = k->avx2 && (op == MU_EXP || op == MU_SIGMOID || op == MU_TANH) &&
                cpu_has_isa(CPU_ISA_AVX512_BW);
#endif
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
