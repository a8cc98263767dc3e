/* math_functions.c — the cpu math family's elementwise functions of one
 * operand beyond math_unary.c's: rounding (Floor Ceil Round Sign),
 * trigonometric and hyperbolic (Sin … Atanh), activation functions
 * (Softplus Softsign Elu Selu Celu HardSigmoid HardSwish ThresholdedRelu
 * Shrink) on f32 and f64 (Sign and Shrink on integers too), and the
 * predicates IsNaN IsInf (to bool) and Not (bool).
 *
 * One loop per op and dtype over a chunk of the flat index, on the host's
 * pool; each reads an element before it writes the same index, so an
 * output aliasing the input (in place) is safe. */
#include <math.h>
#include <string.h>

#include "fastmath.h"
#include "math_wide.h"

typedef enum mu2_op {
    MU2_FLOOR, MU2_CEIL, MU2_ROUND, MU2_SIGN, MU2_SIN, MU2_COS, MU2_TAN, MU2_ASIN, MU2_ACOS,
    MU2_ATAN, MU2_SINH, MU2_COSH, MU2_ASINH, MU2_ACOSH, MU2_ATANH, MU2_SOFTPLUS, MU2_SOFTSIGN,
    MU2_ELU, MU2_SELU, MU2_CELU, MU2_HARDSIGMOID, MU2_HARDSWISH, MU2_THRESHOLDED, MU2_SHRINK,
    MU2_ISNAN, MU2_ISINF, MU2_NOT, MU2_BNOT,
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
    [MU2_BNOT] = "BitwiseNot",
};

typedef struct mu2_kernel {
    pl_kernel base;
    mu2_op op;
    wide_type type;         /* the input's */
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

/* V clamped to [0, 1]; NaN stays NaN. */
static inline float mu2_clamp01f(float v)
{
    v = v > 1.0f ? 1.0f : v;
    return v < 0.0f ? 0.0f : v;
}
static inline double mu2_clamp01(double v)
{
    v = v > 1.0 ? 1.0 : v;
    return v < 0.0 ? 0.0 : v;
}

/* The float ops on T, with libm's functions of suffix F (f or none). */
#define MU2_FLOAT_CHUNK(T, SUFFIX, F)                                                    \
    CPU_CLONES static void mu2_chunk_##SUFFIX(const mu2_call *c, size_t begin, size_t end) \
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
        /* Clamped with compares, which vectorise (fmin and fmax are      \
         * libm calls here) and let NaN through, as ONNX's reference.   \
         */                                                              \
        case MU2_HARDSIGMOID:                                                            \
            MU2_LOOP(T, T, mu2_clamp01##F(alpha * x + beta));                            \
            break;                                                                       \
        case MU2_HARDSWISH:                                                              \
            MU2_LOOP(T, T, x * mu2_clamp01##F(x / (T)6 + (T)0.5));                       \
            break;                                                                       \
        case MU2_THRESHOLDED: MU2_LOOP(T, T, x > alpha ? x : zero); break;               \
        case MU2_SHRINK:                                                                 \
            MU2_LOOP(T, T, x < -beta ? x + alpha : (x > beta ? x - alpha : zero));       \
            break;                                                                       \
        case MU2_ISNAN: MU2_LOOP(T, uint8_t, isnan(x)); break;                           \
        /* compares with the infinities detected (NaN for one not: never  \
         * equal), which vectorise where isinf and the flags' branch did not \
         */                                                              \
        case MU2_ISINF: {                                                                \
            const T pinf = k->pos ? (T)INFINITY : (T)NAN, ninf = k->neg ? -(T)INFINITY : (T)NAN; \
            MU2_LOOP(T, uint8_t, (x == pinf) | (x == ninf));                             \
            break;                                                                       \
        }                                                                                \
        case MU2_NOT: case MU2_BNOT: break;                                              \
        }                                                                                \
    }
MU2_FLOAT_CHUNK(float, f32, f)
MU2_FLOAT_CHUNK(double, f64, )

/* Sin and Cos on f32: cpu_sincosf in blocks whose every |x| is within
 * CPU_TRIG_MAX, libm's per element in the others (a block is checked
 * before it is written: the output may be the input). */
CPU_CLONES static void mu2_trig_f32(const mu2_call *c, size_t begin, size_t end, bool cos)
{
    const float *xs = c->x;
    float *ys = c->y;
    for (size_t b = begin; b < end; b += 256) {
        size_t e = end - b < 256 ? end : b + 256;
        int far = 0;
        for (size_t i = b; i < e; i++)
            far |= !(fabsf(xs[i]) <= CPU_TRIG_MAX);
        if (far) {
            for (size_t i = b; i < e; i++) {
                float v = cos ? cosf(xs[i]) : sinf(xs[i]);
                ys[i] = c->add ? ys[i] + v : v;
            }
        } else if (c->add) {
            for (size_t i = b; i < e; i++)
                ys[i] += cpu_sincosf(xs[i], cos);
        } else if (cos) {
            for (size_t i = b; i < e; i++)
                ys[i] = cpu_sincosf(xs[i], true);
        } else {
            for (size_t i = b; i < e; i++)
                ys[i] = cpu_sincosf(xs[i], false);
        }
    }
}

/* Elu, Selu and Celu on f32 with cpu_expm1f (libm's expm1f is a call).
 * Built for the baseline only: GCC 12 vectorises cpu_expf's selects four
 * lanes wide there but threads them into branches in target_clones' AVX
 * copies (scalar: 800 us for 262,144 values against 200). */
static void mu2_expm1_f32(const mu2_call *c, size_t begin, size_t end)
{
    const mu2_kernel *k = c->k;
    const float alpha = (float)k->alpha, gamma = (float)k->gamma, zero = 0.0f;
    switch (k->op) {
    case MU2_ELU: MU2_LOOP(float, float, x < zero ? alpha * cpu_expm1f(x) : x); break;
    case MU2_SELU:
        MU2_LOOP(float, float, x > zero ? gamma * x : gamma * alpha * cpu_expm1f(x));
        break;
    default: /* Celu: x / alpha as the reference divides */
        MU2_LOOP(float, float, x > zero ? x : alpha * cpu_expm1f(x / alpha));
        break;
    }
}

/* Softplus on f32: max(x, 0) + ln(1 + e^-|x|) on cpu_expf and
 * cpu_log1pf_pos, which vectorise (libm's log1pf and expf are calls:
 * 7.4 ns an element). Baseline only, as mu2_expm1_f32. */
static void mu2_softplus_f32(const mu2_call *c, size_t begin, size_t end)
{
    MU2_LOOP(float, float, (x > 0.0f ? x : 0.0f) + cpu_log1pf_pos(cpu_expf(-fabsf(x))));
}

#include "fastmath_avx2.h"
#ifdef CPU_AVX2
/* Elu, Selu and Celu in eight (AVX2) or sixteen (AVX-512) lanes with FMA
 * on cpu_exp8 and cpu_exp16: cpu_expm1f step for step (its polynomial
 * below |x| = 0.5, -0 kept), the op's select by compares. Results differ
 * from the baseline loop in the last bit or two (fused multiply-adds). */
#define MU2_EXPM1_POLY(FMA, SET, x)                                                        \
    FMA(FMA(FMA(FMA(FMA(FMA(SET(1.0f / 40320.0f), x, SET(1.0f / 5040.0f)), x,              \
                        SET(1.0f / 720.0f)), x, SET(1.0f / 120.0f)), x, SET(1.0f / 24.0f)), \
            x, SET(1.0f / 6.0f)), x, SET(0.5f))

CPU_AVX2_FN __m256 mu2_expm1_8(__m256 x)
{
    __m256 p = MU2_EXPM1_POLY(_mm256_fmadd_ps, _mm256_set1_ps, x);
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(x, x), x);
    __m256 e = _mm256_sub_ps(cpu_exp8(x), _mm256_set1_ps(1.0f));
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 r = _mm256_blendv_ps(e, p, _mm256_cmp_ps(ax, _mm256_set1_ps(0.5f), _CMP_LT_OQ));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
}

__attribute__((target("avx2,fma"))) static void mu2_expm1_f32_avx2(const mu2_call *c,
                                                                   size_t begin, size_t end)
{
    const mu2_kernel *k = c->k;
    const float *xs = c->x;
    float *ys = c->y;
    const __m256 alpha = _mm256_set1_ps((float)k->alpha), zero = _mm256_setzero_ps();
    const __m256 gamma = _mm256_set1_ps((float)k->gamma);
    const __m256 ga = _mm256_mul_ps(gamma, alpha);
    size_t i = begin;
    for (; i + 8 <= end; i += 8) {
        __m256 x = _mm256_loadu_ps(xs + i), y;
        if (k->op == MU2_ELU) /* x < 0 ? alpha (e^x - 1) : x (NaN: x) */
            y = _mm256_blendv_ps(x, _mm256_mul_ps(alpha, mu2_expm1_8(x)),
                                 _mm256_cmp_ps(x, zero, _CMP_LT_OQ));
        else if (k->op == MU2_SELU) /* x > 0 ? gamma x : gamma alpha (e^x - 1) */
            y = _mm256_blendv_ps(_mm256_mul_ps(ga, mu2_expm1_8(x)), _mm256_mul_ps(gamma, x),
                                 _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
        else /* Celu: x > 0 ? x : alpha (e^(x / alpha) - 1) */
            y = _mm256_blendv_ps(_mm256_mul_ps(alpha, mu2_expm1_8(_mm256_div_ps(x, alpha))), x,
                                 _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
        if (c->add)
            y = _mm256_add_ps(y, _mm256_loadu_ps(ys + i));
        _mm256_storeu_ps(ys + i, y);
    }
    if (i < end)
        mu2_expm1_f32(c, i, end);
}

CPU_AVX512_FN __m512 mu2_expm1_16(__m512 x)
{
    __m512 p = MU2_EXPM1_POLY(_mm512_fmadd_ps, _mm512_set1_ps, x);
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(x, x), x);
    __m512 r = _mm512_sub_ps(cpu_exp16(x), _mm512_set1_ps(1.0f));
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(_mm512_abs_ps(x), _mm512_set1_ps(0.5f),
                                                 _CMP_LT_OQ), p);
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), x);
}

__attribute__((target("avx512f,fma"))) static void mu2_expm1_f32_avx512(const mu2_call *c,
                                                                       size_t begin,
                                                                       size_t end)
{
    const mu2_kernel *k = c->k;
    const float *xs = c->x;
    float *ys = c->y;
    const __m512 alpha = _mm512_set1_ps((float)k->alpha), zero = _mm512_setzero_ps();
    const __m512 gamma = _mm512_set1_ps((float)k->gamma);
    const __m512 ga = _mm512_mul_ps(gamma, alpha);
    size_t i = begin;
    for (; i + 16 <= end; i += 16) {
        __m512 x = _mm512_loadu_ps(xs + i), y;
        if (k->op == MU2_ELU)
            y = _mm512_mask_mov_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ),
                                   _mm512_mul_ps(alpha, mu2_expm1_16(x)));
        else if (k->op == MU2_SELU)
            y = _mm512_mask_mov_ps(_mm512_mul_ps(ga, mu2_expm1_16(x)),
                                   _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ),
                                   _mm512_mul_ps(gamma, x));
        else
            y = _mm512_mask_mov_ps(_mm512_mul_ps(alpha, mu2_expm1_16(_mm512_div_ps(x, alpha))),
                                   _mm512_cmp_ps_mask(x, zero, _CMP_GT_OQ), x);
        if (c->add)
            y = _mm512_add_ps(y, _mm512_loadu_ps(ys + i));
        _mm512_storeu_ps(ys + i, y);
    }
    if (i < end)
        mu2_expm1_f32(c, i, end);
}
#endif

static inline int64_t mu2_sign(int64_t v) { return (v > 0) - (v < 0); }

/* Sign and Shrink on integers of type T (Shrink computes in double). */
#define MU2_INT_CHUNK(T, SUFFIX)                                                         \
    static void mu2_chunk_##SUFFIX(const mu2_call *c, size_t begin, size_t end)          \
    {                                                                                    \
        const mu2_kernel *k = c->k;                                                      \
        const double bias = k->alpha, lambd = k->beta;                                   \
        if (k->op == MU2_SIGN)                                                           \
            MU2_LOOP(T, T, mu2_sign(x));                                                 \
        else if (k->op == MU2_BNOT)                                                      \
            MU2_LOOP(T, T, (T)~x);                                                       \
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
    case WT_F32:
        if (c->k->op == MU2_SIN || c->k->op == MU2_COS)
            mu2_trig_f32(c, begin, end, c->k->op == MU2_COS);
        else if (c->k->op == MU2_SOFTPLUS)
            mu2_softplus_f32(c, begin, end);
        else if (c->k->op == MU2_ELU || c->k->op == MU2_SELU || c->k->op == MU2_CELU)
#ifdef CPU_AVX2
            if (cpu_has_isa(CPU_ISA_AVX512_BW))
                mu2_expm1_f32_avx512(c, begin, end);
            else if (cpu_has_isa(CPU_ISA_AVX2_FMA))
                mu2_expm1_f32_avx2(c, begin, end);
            else
#endif
                mu2_expm1_f32(c, begin, end);
        else
            mu2_chunk_f32(c, begin, end);
        break;
    case WT_F64: mu2_chunk_f64(c, begin, end); break;
    case WT_I64: mu2_chunk_i64(c, begin, end); break;
    case WT_I32: mu2_chunk_i32(c, begin, end); break;
    case WT_I8: mu2_chunk_i8(c, begin, end); break;
    case WT_U8: mu2_chunk_u8(c, begin, end); break;
    case WT_BOOL: MU2_LOOP(uint8_t, uint8_t, !x); break;
    case WT_OTHER: break;
    }
}

static pl_status *mu2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mu2_kernel *k = (const mu2_kernel *)kernel;
    bool to_bool = k->op == MU2_ISNAN || k->op == MU2_ISINF || k->op == MU2_NOT;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, !to_bool && k->op != MU2_BNOT, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mu2_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add};
    bool cheap = k->op <= MU2_SIGN || k->op >= MU2_HARDSIGMOID;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements,
                           cheap ? MATH_GRAIN : MATH_GRAIN_HEAVY, mu2_chunk, &c);
    return NULL;
}

pl_status *math_build_functions(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    int found = wide_find(mu2_names, WIDE_COUNT(mu2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a unary op of this family");
    mu2_op op = (mu2_op)found;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    wide_type t = wide_type_of(x->dtype);
    bool ok = op == MU2_NOT    ? t == WT_BOOL
              : op == MU2_BNOT ? wide_is_int(t)
              : op == MU2_SIGN || op == MU2_SHRINK ? (wide_is_float(t) || wide_is_int(t))
                                                    : wide_is_float(t);
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
    if (t == WT_F32) {
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

