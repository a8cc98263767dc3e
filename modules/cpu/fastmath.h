/* fastmath.h — expf written so that loops calling it vectorise (a libm call
 * stops GCC's vectoriser). Used by Exp, Softmax, LogSoftmax and Sigmoid. */
#ifndef PL_CPU_FASTMATH_H
#define PL_CPU_FASTMATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* e^x within 2 ulp of expf (Cody-Waite reduction to r = x - n ln2, a
 * degree-6 polynomial for e^r, then 2^n from the exponent bits). Below
 * -87.3 (where e^x leaves the normal range) the result is 0, not a
 * denormal: a causal mask's -inf or -1e9 then gives exact zeros, and the
 * products that read a Softmax of it never meet denormal operands (each
 * costs a microcode assist: a masked [8,24,24] attention's MatMul ran at
 * 78 us against 9). Above 88.72 it is +inf, as expf's; between 88.37 and
 * 88.72, ~2.4e38. NaN stays NaN. */
static inline float cpu_expf(float x)
{
    /* NaN takes the low bound here (the result is x again below), so the
     * conversion to int and the shift never see it: both are undefined
     * behaviour for a NaN (UBSan: "left shift of negative value"). */
    float c = x > -87.33654f ? (x < 88.37626f ? x : 88.37626f) : -87.33654f;
    float fx = c * 1.44269504088896341f;
    int32_t n = (int32_t)(fx + (fx >= 0.0f ? 0.5f : -0.5f));
    float fn = (float)n;
    float r = c - fn * 0.693359375f + fn * 2.12194440e-4f;
    float z = r * r;
    float p = ((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                4.1665795894e-2f) * r + 1.6666665459e-1f) * r + 5.0000001201e-1f;
    p = p * z + r + 1.0f;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float y = p * scale;
    y = x < -87.33654f ? 0.0f : x > 88.72284f ? INFINITY : y;
    return x != x ? x : y;
}

/* ln x for f32 (Cephes' logf: x = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * a degree-9 polynomial in m - 1, e ln 2 added in two parts), written with
 * selects so that loops calling it vectorise (libm's logf is a call, 5 ns
 * an element); within 2 ulp of logf, log(1) = 0 exactly. Subnormals are
 * scaled first; 0 gives -inf, a negative number NaN, +inf itself, NaN
 * itself. */
static inline float cpu_logf(float x)
{
    const float tiny = 1.17549435e-38f; /* FLT_MIN */
    float xs = x < tiny ? x * 33554432.0f : x; /* 2^25 */
    int32_t bits;
    memcpy(&bits, &xs, sizeof bits);
    int32_t e = ((bits >> 23) & 0xff) - 126 - (x < tiny ? 25 : 0);
    bits = (bits & (int32_t)0x807fffff) | 0x3f000000;
    float m;
    memcpy(&m, &bits, sizeof m);
    int32_t below = m < 0.707106781186547524f;
    e -= below;
    float f = below ? m + m - 1.0f : m - 1.0f;
    float z = f * f;
    float y = ((((((((7.0376836292e-2f * f - 1.1514610310e-1f) * f + 1.1676998740e-1f) * f -
                    1.2420140846e-1f) * f + 1.4249322787e-1f) * f - 1.6668057665e-1f) * f +
                 2.0000714765e-1f) * f - 2.4999993993e-1f) * f + 3.3333331174e-1f) * f * z;
    float fe = (float)e;
    y += -2.12194440e-4f * fe;
    y += -0.5f * z;
    float r = f + y + 0.693359375f * fe;
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? NAN : r;
    r = x == INFINITY ? x : r;
    return x != x ? x : r;
}

/* tanh built on cpu_expf, so that it vectorises where libm's tanhf does not
 * (a loop of tanhf ran at about 11 ns an element): an odd Taylor polynomial
 * near 0 (relative error below 1e-8 for |x| < 0.25), else
 * 1 - 2 / (e^2|x| + 1) with the sign of x (cpu_expf saturates, so large |x|
 * gives exactly +-1; NaN stays NaN). */
static inline float cpu_tanhf(float x)
{
    float ax = fabsf(x), x2 = x * x;
    float p = x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f));
    p = x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + p)));
    float q = 1.0f - 2.0f / (cpu_expf(2.0f * ax) + 1.0f);
    q = x < 0.0f ? -q : q;
    return ax < 0.25f ? p : q;
}

/* e^x - 1 built on cpu_expf, so that it vectorises where libm's expm1f does
 * not (Elu, Selu and Celu called it per element): a Taylor polynomial to
 * x^8 for |x| < 0.5 (relative error below 1e-8 there, where e^x - 1 would
 * lose the low bits), else cpu_expf(x) - 1 (within 4 ulp; -1 below
 * -87.3, +inf above 88.7); -0 gives -0, NaN NaN. */
static inline float cpu_expm1f(float x)
{
    float p = 1.0f / 40320.0f;
    p = p * x + 1.0f / 5040.0f;
    p = p * x + 1.0f / 720.0f;
    p = p * x + 1.0f / 120.0f;
    p = p * x + 1.0f / 24.0f;
    p = p * x + 1.0f / 6.0f;
    p = p * x + 0.5f;
    p = p * (x * x) + x;
    float e = cpu_expf(x) - 1.0f;
    p = x == 0.0f ? x : p; /* -0 stays -0 */
    return fabsf(x) < 0.5f ? p : e;
}

/* ln(1 + t) for t >= 0 (or NaN) on cpu_logf, vectorisable: Goldberg's
 * log(u) t / (u - 1) with u = 1 + t rounded, which cancels u's rounding
 * (within a few ulp), and t itself where u rounds to 1. */
static inline float cpu_log1pf_pos(float t)
{
    float u = 1.0f + t;
    float d = u - 1.0f;
    float r = cpu_logf(u) * (t / (d == 0.0f ? 1.0f : d));
    return d == 0.0f ? t : r;
}

/* Where cpu_sincosf holds (Cody-Waite reduction by pi/4 in three parts is
 * exact enough below this); larger |x|, infinities and NaN take libm's. */
#define CPU_TRIG_MAX 8192.0f

/* sin x (COS false) or cos x (COS true) for |x| <= CPU_TRIG_MAX, written
 * with selects so that loops calling it vectorise (libm's sinf and cosf
 * are calls): Cephes' reduction to r = |x| - j pi/4 with j even, its
 * minimax polynomials for sin r and cos r on [-pi/4, pi/4], the octant
 * (j, plus 2 for cos: cos x = sin(|x| + pi/2)) picking the polynomial and
 * the sign; within 2 ulp of sinf and cosf there. Outside the range the
 * result is meaningless: callers check the range first. */
static inline float cpu_sincosf(float x, bool cos)
{
    float ax = fabsf(x);
    ax = ax <= CPU_TRIG_MAX ? ax : 0.0f; /* NaN too: the conversion below never sees it */
    int32_t j = (int32_t)(ax * 1.27323954473516268615f);
    j = (j + 1) & ~1;
    float y = (float)j;
    float r = ((ax - y * 0.78515625f) - y * 2.4187564849853515625e-4f) -
              y * 3.77489497744594108e-8f;
    uint32_t q = (uint32_t)j + (cos ? 2u : 0u);
    float z = r * r;
    float ps = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
    float pc = ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z +
                4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
    float v = (q & 2u) ? pc : ps;
    uint32_t xbits, vbits;
    memcpy(&xbits, &x, sizeof xbits);
    memcpy(&vbits, &v, sizeof vbits);
    vbits ^= (q & 4u) << 29;               /* octants 4 to 7: negated */
    vbits ^= cos ? 0u : xbits & 0x80000000u; /* sin is odd */
    memcpy(&v, &vbits, sizeof v);
    return v;
}

/* V rounded half to even, as nearbyintf in the default rounding mode,
 * without the libm call that stops the vectoriser: adding and taking off
 * 1.5 * 2^23 leaves the rounded value for |V| < 2^22; larger values are
 * clamped to +-2^22 first (callers saturate to 8 or 16 bits after, so
 * their side is all that counts). NaN stays NaN. */
static inline float cpu_round_even(float v)
{
    v = v < -4194304.0f ? -4194304.0f : v > 4194304.0f ? 4194304.0f : v;
    return (v + 12582912.0f) - 12582912.0f;
}

/* A loop function built for AVX-512, AVX2 and the baseline, the build
 * picked when the module loads (GCC's target_clones: the module itself is
 * built without -march). For elementwise loops whose results are the same
 * on every build. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CPU_CLONES
#endif

/* Whether this CPU runs the module's hand-written loops of one kind:
 * CPU_ISA_AVX2_FMA (AVX2 and FMA) or CPU_ISA_AVX512_BW (AVX-512 F and
 * BW). Decided once per file that asks (a benign race: every thread
 * computes the same answer); false off x86-64. */
enum { CPU_ISA_AVX2_FMA = 0, CPU_ISA_AVX512_BW = 1 };

static inline bool cpu_has_isa(int which)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    static int cached[2] = {-1, -1};
    int v = __atomic_load_n(&cached[which], __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = which == CPU_ISA_AVX512_BW
                ? __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached[which], v, __ATOMIC_RELAXED);
    }
    return v != 0;
#else
    (void)which;
    return false;
#endif
}

#endif
