/* half.h — the cpu module's conversions between f32 and the two 16-bit
 * float formats of ABI 1, IEEE half (f16) and bfloat16 (bf16), bit by bit
 * (no compiler support for _Float16 needed). Widening is exact; narrowing
 * rounds once to nearest, ties to even, overflows to infinity, keeps
 * subnormals (f16) and turns every NaN into a quiet NaN of the same sign.
 * The f16/bf16 wrapper (dtype_wrap.c) computes every op of those dtypes in
 * f32 through these. */
#ifndef PL_CPU_HALF_H
#define PL_CPU_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline float cpu_f32_from_bits(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static inline uint32_t cpu_f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* Half to float: normals rebias the exponent, subnormals are mant * 2^-24. */
static inline float cpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f)
        return cpu_f32_from_bits(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return cpu_f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

/* Float to half. Below the smallest normal (2^-14), adding 0.5 makes the
 * FPU round at the subnormals' step 2^-24 (ties to even, the default
 * mode); above, the 13 dropped mantissa bits round by integer addition,
 * a carry moving into the exponent as it should. 65520 and beyond, the
 * midpoint between the largest half and 2^16, round to infinity. */
static inline uint16_t cpu_f32_to_f16(float f)
{
    uint32_t x = cpu_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        float r = cpu_f32_from_bits(ax) + 0.5f;
        return (uint16_t)(sign | (uint16_t)(cpu_f32_bits(r) - 0x3f000000u));
    }
    uint32_t odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + odd; /* exponent 127 -> 15 bias, and rounding */
    return (uint16_t)(sign | (uint16_t)(ax >> 13));
}

static inline float cpu_bf16_to_f32(uint16_t h)
{
    return cpu_f32_from_bits((uint32_t)h << 16);
}

/* Float to bfloat16: the upper half of the bits, rounded on the lower. */
static inline uint16_t cpu_f32_to_bf16(float f)
{
    uint32_t x = cpu_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* N elements of SRC (f16 when F16, else bf16) widened into DST. */
static inline void cpu_half_widen(const uint16_t *src, float *dst, size_t n, int f16)
{
    if (f16)
        for (size_t i = 0; i < n; i++)
            dst[i] = cpu_f16_to_f32(src[i]);
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = cpu_bf16_to_f32(src[i]);
}

/* N floats of SRC narrowed into DST (f16 when F16, else bf16); with ADD,
 * DST's own values are widened, added, and the sum narrowed once. */
static inline void cpu_half_narrow(const float *src, uint16_t *dst, size_t n, int f16, int add)
{
    if (f16)
        for (size_t i = 0; i < n; i++)
            dst[i] = cpu_f32_to_f16(add ? cpu_f16_to_f32(dst[i]) + src[i] : src[i]);
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = cpu_f32_to_bf16(add ? cpu_bf16_to_f32(dst[i]) + src[i] : src[i]);
}

#endif
