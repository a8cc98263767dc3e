/* fastmath.h — expf written so that loops calling it vectorise (a libm call
 * stops GCC's vectoriser). Used by Exp, Softmax, LogSoftmax and Sigmoid. */
#ifndef PL_CPU_FASTMATH_H
#define PL_CPU_FASTMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* e^x for finite x within 2 ulp of expf (Cody-Waite reduction to
 * r = x - n ln2, a degree-6 polynomial for e^r, then 2^n from the exponent
 * bits). Inputs are clamped to [-87.3, 88.37], so results below the normal
 * range come out as ~1.2e-38 instead of a denormal or 0, and the largest
 * result is ~2.4e38 instead of inf; NaN stays NaN. */
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
    return x != x ? x : y;
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

#endif
