/* shape_cast.c — the cpu module's dtype conversions and its Cast kernel,
 * between the thirteen dtypes of the SDK with ONNX's semantics: floats to
 * integers truncate toward zero (saturating, NaN giving 0, rather than
 * leaving it undefined), integers to narrower integers wrap, anything to
 * bool is "!= 0", and half and bfloat16 round to nearest even. Half and
 * bfloat16 are converted bit by bit here, with no compiler support needed.
 * Every element goes through int64 (integer and bool sources) or double
 * (float sources), which holds each source value exactly. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "shape_kernel.h"

typedef enum shp_type {
    SHP_F32, SHP_F64, SHP_F16, SHP_BF16, SHP_U8, SHP_I8, SHP_I32, SHP_I64, SHP_BOOL,
    SHP_I16, SHP_U16, SHP_U32, SHP_U64, SHP_NONE
} shp_type;

static shp_type shp_type_of(pl_dtype dt)
{
    if (dt.lanes != 1)
        return SHP_NONE;
    switch (dt.code) {
    case PL_TYPE_FLOAT:
        return dt.bits == 32 ? SHP_F32 : dt.bits == 64 ? SHP_F64 : dt.bits == 16 ? SHP_F16 : SHP_NONE;
    case PL_TYPE_BFLOAT:
        return dt.bits == 16 ? SHP_BF16 : SHP_NONE;
    case PL_TYPE_UINT:
        return dt.bits == 8    ? SHP_U8
               : dt.bits == 16 ? SHP_U16
               : dt.bits == 32 ? SHP_U32
               : dt.bits == 64 ? SHP_U64
                               : SHP_NONE;
    case PL_TYPE_INT:
        return dt.bits == 8    ? SHP_I8
               : dt.bits == 16 ? SHP_I16
               : dt.bits == 32 ? SHP_I32
               : dt.bits == 64 ? SHP_I64
                               : SHP_NONE;
    case PL_TYPE_BOOL:
        return dt.bits == 8 ? SHP_BOOL : SHP_NONE;
    default:
        return SHP_NONE;
    }
}

/* ---- half and bfloat16 ---------------------------------------------------- */

/* A float format of EBITS exponent and MBITS mantissa bits (at most 16 in
 * all with the sign) from double, rounding to nearest even. */
static uint16_t shp_narrow(double v, int ebits, int mbits)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 63) << (ebits + mbits));
    uint16_t exp_all = (uint16_t)(((1u << ebits) - 1u) << mbits);
    if (isnan(v))
        return (uint16_t)(sign | exp_all | (1u << (mbits - 1)));
    double a = fabs(v);
    if (isinf(a))
        return (uint16_t)(sign | exp_all);
    if (a == 0.0)
        return sign;
    const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    int e;
    frexp(a, &e);
    int exp = e - 1; /* a = 1.f * 2^exp */
    if (exp < emin) {
        /* subnormal: multiples of 2^(emin - mbits); rint rounds to even,
         * and a carry to 2^mbits is exactly the smallest normal's bits */
        double q = rint(ldexp(a, mbits - emin));
        return (uint16_t)(sign | (uint16_t)q);
    }
    double q = rint(ldexp(a, mbits - exp)); /* in [2^mbits, 2^(mbits+1)] */
    if (q >= ldexp(1.0, mbits + 1)) {
        q /= 2;
        exp++;
    }
    if (exp > bias)
        return (uint16_t)(sign | exp_all);
    uint16_t mant = (uint16_t)((uint32_t)q - (1u << mbits));
    return (uint16_t)(sign | (uint16_t)((uint32_t)(exp + bias) << mbits) | mant);
}

double shp_f16_to_double(uint16_t h)
{
    int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (exp == 0x1f)
        return mant ? NAN : sign * INFINITY;
    if (exp == 0)
        return sign * ldexp((double)mant, -24);
    return sign * ldexp((double)(mant | 0x400), exp - 25);
}

uint16_t shp_f16_from_double(double v) { return shp_narrow(v, 5, 10); }

double shp_bf16_to_double(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t shp_bf16_from_double(double v) { return shp_narrow(v, 8, 7); }

/* ---- element access -------------------------------------------------------- */

static bool shp_is_float(shp_type t)
{
    return t == SHP_F32 || t == SHP_F64 || t == SHP_F16 || t == SHP_BF16;
}

static double shp_load_float(shp_type t, const char *p)
{
    switch (t) {
    case SHP_F32: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    case SHP_F64: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    default: {
        uint16_t h;
        memcpy(&h, p, 2);
        return t == SHP_F16 ? shp_f16_to_double(h) : shp_bf16_to_double(h);
    }
    }
}

static int64_t shp_load_int(shp_type t, const char *p)
{
    switch (t) {
    case SHP_U8:
    case SHP_BOOL:
        return (unsigned char)*p;
    case SHP_I8:
        return (signed char)*p;
    case SHP_I16: {
        int16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case SHP_U16: {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    case SHP_U32: {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    case SHP_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default: { /* i64, and u64's bits */
        int64_t v;
        memcpy(&v, p, 8);
        return v;
    }
    }
}

static void shp_store_float(shp_type t, char *p, double v)
{
    switch (t) {
    case SHP_F32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case SHP_F64:
        memcpy(p, &v, 8);
        break;
    default: {
        uint16_t h = t == SHP_F16 ? shp_f16_from_double(v) : shp_bf16_from_double(v);
        memcpy(p, &h, 2);
        break;
    }
    }
}

/* Stores integer V wrapped to the width of T (bool: != 0). */
static void shp_store_int(shp_type t, char *p, int64_t v)
{
    switch (t) {
    case SHP_BOOL:
        *p = v != 0;
        break;
    case SHP_U8:
    case SHP_I8:
        *p = (char)(uint8_t)(uint64_t)v;
        break;
    case SHP_I16:
    case SHP_U16: {
        uint16_t w = (uint16_t)(uint64_t)v;
        memcpy(p, &w, 2);
        break;
    }
    case SHP_I32:
    case SHP_U32: {
        uint32_t w = (uint32_t)(uint64_t)v;
        memcpy(p, &w, 4);
        break;
    }
    default:
        memcpy(p, &v, 8);
        break;
    }
}

/* Float to integer: truncation toward zero, saturated to int64, NaN 0. */
static int64_t shp_trunc(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static size_t shp_type_size(shp_type t)
{
    static const size_t sizes[] = {4, 8, 2, 2, 1, 1, 4, 8, 1, 2, 2, 4, 8, 0};
    return sizes[t];
}

/* The pairs models convert most (dynamic quantization's i32 sums to f32,
 * 8-bit to f32, shapes between i64 and i32, f32 and f64) in typed loops
 * the compiler vectorises, with the values of the general loop below: an
 * integer to f32 rounds once, i64 to i32 wraps, f32 to i32 truncates
 * where it fits (else the general rule: saturate to i64, then wrap).
 * Through the general loop, a Cast of 6144 i32 to f32 took 90 us. False
 * for any other pair. */
#define SHP_FAST_LOOP(TF, TT, EXPR)                                                          \
    do {                                                                                  \
        for (size_t i_ = 0; i_ < n; i_++) {                                               \
            TF x_;                                                                        \
            memcpy(&x_, src + i_ * sizeof(TF), sizeof x_);                                \
            TT y_ = (EXPR);                                                               \
            memcpy(dst + i_ * sizeof(TT), &y_, sizeof y_);                                \
        }                                                                                 \
    } while (0)

/* f16 <-> f32 by their bits, the values shp_f16_to_double and
 * shp_f16_from_double give (round to nearest even, NaN quiet, overflow to
 * infinity): a loop the compiler vectorises. Folding an f16 model's
 * weights to f32 (widen.c) spent 54% of tv_resnet18's load in the general
 * loop's ldexp. */
static inline float shp_half_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, em = h & 0x7fffu, bits;
    float f;
    if (em >= 0x7c00u) {
        bits = sign | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13) | (em > 0x7c00u ? 0x400000u : 0);
    } else if (em >= 0x0400u) {
        bits = sign | ((em + ((127u - 15u) << 10)) << 13);
    } else {
        f = (float)em * 0x1p-24f; /* subnormal or zero: exact */
        memcpy(&bits, &f, 4);
        bits |= sign;
    }
    memcpy(&f, &bits, 4);
    return f;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
/* f16 -> f32 with F16C's vcvtph2ps, eight at a time: the same values as
 * shp_half_float (exact, NaN quiet; DAZ does not apply to a half input),
 * about ten times faster than its vectorised bit arithmetic (an f16
 * BERT-base's 110 M weights widened at load: 98 ms of its 330). */
__attribute__((target("avx,f16c"))) static void shp_half_floats_f16c(const char *src, char *dst,
                                                                     size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
        _mm256_storeu_ps((float *)(void *)(dst + 4 * i), _mm256_cvtph_ps(h));
    }
    for (; i < n; i++) {
        uint16_t x;
        memcpy(&x, src + 2 * i, 2);
        float f = shp_half_float(x);
        memcpy(dst + 4 * i, &f, 4);
    }
}

static bool shp_has_f16c(void)
{
    static int cached = -1; /* a benign race: every thread finds the same */
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        /* (clang's __builtin_cpu_supports does not know "f16c": CPUID.1:ECX
         * bit 29 says it; "avx" covers the OS saving the registers) */
        unsigned a, b, c, d;
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1u);
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v != 0;
}
#endif

static inline uint16_t shp_float_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u), o;
    x &= 0x7fffffffu;
    if (x >= 0x47800000u) { /* 2^16 and up, infinity, NaN */
        o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (x < 0x38800000u) { /* below 2^-14: subnormal or zero */
        /* adding 2^-1 aligns the f16 subnormal step (2^-24) with f32's
         * last mantissa bit, and the add rounds to nearest even */
        float a;
        memcpy(&a, &x, 4);
        a += 0.5f;
        uint32_t r;
        memcpy(&r, &a, 4);
        o = (uint16_t)(r - 0x3f000000u);
    } else {
        uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd;
        o = (uint16_t)(x >> 13);
    }
    return (uint16_t)(o | sign);
}

static bool shp_convert_fast(shp_type from, const char *src, shp_type to, char *dst, size_t n)
{
    if (from == SHP_F16 && to == SHP_F32) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
        if (shp_has_f16c()) {
            shp_half_floats_f16c(src, dst, n);
            return true;
        }
#endif
        SHP_FAST_LOOP(uint16_t, float, shp_half_float(x_));
        return true;
    }
    if (from == SHP_F32 && to == SHP_F16) {
        SHP_FAST_LOOP(float, uint16_t, shp_float_half(x_));
        return true;
    }
    if (to == SHP_F32) {
        switch (from) {
        case SHP_I32: SHP_FAST_LOOP(int32_t, float, (float)x_); return true;
        case SHP_I64: SHP_FAST_LOOP(int64_t, float, (float)x_); return true;
        case SHP_U8: SHP_FAST_LOOP(uint8_t, float, (float)x_); return true;
        case SHP_I8: SHP_FAST_LOOP(int8_t, float, (float)x_); return true;
        case SHP_F64: SHP_FAST_LOOP(double, float, (float)x_); return true;
        /* a one-hot (Equal -> Cast, as jax2tf writes it): no trip through int64 */
        case SHP_BOOL: SHP_FAST_LOOP(uint8_t, float, x_ != 0 ? 1.0f : 0.0f); return true;
        default: return false;
        }
    }
    if (from == SHP_BOOL && (to == SHP_I64 || to == SHP_I32)) {
        if (to == SHP_I64)
            SHP_FAST_LOOP(uint8_t, int64_t, x_ != 0);
        else
            SHP_FAST_LOOP(uint8_t, int32_t, x_ != 0);
        return true;
    }
    if (to == SHP_BOOL && (from == SHP_F32 || from == SHP_I64 || from == SHP_I32)) {
        if (from == SHP_F32)
            SHP_FAST_LOOP(float, uint8_t, x_ != 0);
        else if (from == SHP_I64)
            SHP_FAST_LOOP(int64_t, uint8_t, x_ != 0);
        else
            SHP_FAST_LOOP(int32_t, uint8_t, x_ != 0);
        return true;
    }
    if (from == SHP_F32 && to == SHP_F64) {
        SHP_FAST_LOOP(float, double, (double)x_);
        return true;
    }
    if (from == SHP_I32 && to == SHP_I64) {
        SHP_FAST_LOOP(int32_t, int64_t, (int64_t)x_);
        return true;
    }
    if (from == SHP_I64 && to == SHP_I32) {
        SHP_FAST_LOOP(int64_t, int32_t, (int32_t)(uint32_t)(uint64_t)x_);
        return true;
    }
    if (from == SHP_F32 && to == SHP_I32) {
        SHP_FAST_LOOP(float, int32_t,
                      x_ > -2147483904.0f && x_ < 2147483648.0f
                          ? (int32_t)x_
                          : (int32_t)(uint32_t)(uint64_t)shp_trunc((double)x_));
        return true;
    }
    return false;
}

static void shp_convert_types(shp_type from, const char *src, shp_type to, char *dst, size_t n)
{
    const size_t fs = shp_type_size(from), ts = shp_type_size(to);
    if (from == to) {
        memcpy(dst, src, n * fs);
        return;
    }
    if (shp_convert_fast(from, src, to, dst, n))
        return;
    for (size_t i = 0; i < n; i++, src += fs, dst += ts) {
        if (shp_is_float(from)) {
            double v = shp_load_float(from, src);
            if (shp_is_float(to))
                shp_store_float(to, dst, v);
            else if (to == SHP_BOOL)
                *dst = v != 0.0;
            else if (to == SHP_U64 && v >= 9223372036854775808.0)
                /* beyond int64: u64's own range, saturated */
                shp_store_int(to, dst, (int64_t)(v >= 18446744073709551616.0 ? UINT64_MAX
                                                                              : (uint64_t)v));
            else
                shp_store_int(to, dst, shp_trunc(v));
        } else {
            int64_t v = shp_load_int(from, src);
            if (to == SHP_F32) {
                /* one rounding, from the integer (u64 read unsigned) */
                float f = from == SHP_U64 ? (float)(uint64_t)v : (float)v;
                memcpy(dst, &f, 4);
            } else if (shp_is_float(to)) {
                shp_store_float(to, dst, from == SHP_U64 ? (double)(uint64_t)v : (double)v);
            } else {
                shp_store_int(to, dst, v);
            }
        }
    }
}

void shp_convert(pl_dtype from, const void *src, pl_dtype to, void *dst, size_t n)
{
    shp_convert_types(shp_type_of(from), src, shp_type_of(to), dst, n);
}

void shp_accumulate(pl_dtype dtype, void *dst, const void *src, size_t n)
{
    shp_type t = shp_type_of(dtype);
    const size_t es = shp_type_size(t);
    char *y = dst;
    const char *x = src;
    for (size_t i = 0; i < n; i++, y += es, x += es) {
        if (t == SHP_BOOL)
            *y = (*y | *x) != 0;
        else if (t == SHP_F32) {
            float a, b;
            memcpy(&a, y, 4);
            memcpy(&b, x, 4);
            a += b;
            memcpy(y, &a, 4);
        } else if (shp_is_float(t))
            shp_store_float(t, y, shp_load_float(t, y) + shp_load_float(t, x));
        else
            shp_store_int(t, y, (int64_t)((uint64_t)shp_load_int(t, y) +
                                          (uint64_t)shp_load_int(t, x)));
    }
}

/* ---- Cast ------------------------------------------------------------------ */

typedef struct shp_cast_kernel {
    shp_kernel k;
    shp_type from, to;
} shp_cast_kernel;

typedef struct shp_cast_call {
    const shp_cast_kernel *k;
    const char *x;
    char *y;
} shp_cast_call;

static void shp_cast_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shp_cast_call *c = arg;
    const shp_cast_kernel *k = c->k;
    shp_convert_types(k->from, c->x + begin * shp_type_size(k->from), k->to,
                      c->y + begin * shp_type_size(k->to), end - begin);
}

static pl_status *shp_cast_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                                 const pl_run_args *args, size_t o, void *dst,
                                 pl_output_request req)
{
    (void)o, (void)req;
    const shp_cast_kernel *k = (const shp_cast_kernel *)kernel;
    shp_cast_call c = {.k = k, .x = shp_in(args, 0), .y = dst};
    cpu_host->parallel_for(ctx->host_ctx, kernel->base.out_elements, 16384, shp_cast_chunk, &c);
    return NULL;
}

pl_status *shp_build_cast(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    shp_type from = shp_type_of(x->dtype), to = shp_type_of(o->dtype);
    if (from == SHP_NONE || to == SHP_NONE)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "unsupported dtype (code %u, %u bits)",
                         from == SHP_NONE ? x->dtype.code : o->dtype.code,
                         from == SHP_NONE ? x->dtype.bits : o->dtype.bits);
    if (o->ndim < 0 || cpu_elements(x->shape, x->ndim) != cpu_elements(o->shape, o->ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input and output differ in size");
    shp_cast_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, shp_cast_write,
                                        (shp_kernel **)&k));
    k->from = from;
    k->to = to;
    *out_kernel = &k->k.base;
    return NULL;
}
