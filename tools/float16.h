/* float16.h — the CLI's conversions between float and the two 16-bit float
 * formats of the runtime's dtypes: IEEE 754 binary16 (f16) and bfloat16
 * (bf16, the upper half of a binary32). Encoding rounds to nearest, ties to
 * even, and keeps infinities and NaNs; decoding is exact. Header-only: the
 * CLI's random inputs, its printing and its .npy files use them. */
#ifndef PLINTH_TOOLS_FLOAT16_H
#define PLINTH_TOOLS_FLOAT16_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The binary16 encoding of F. */
static inline uint16_t cli_f16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu;
    uint32_t mant = x & 0x7fffffu;
    if (exp == 0xffu) /* infinity, or NaN kept quiet */
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    uint32_t shift, bits;
    if (e <= 0) {
        /* A subnormal half: mant with its implicit bit, shifted down. */
        if (e < -10)
            return sign;
        mant |= 0x800000u;
        shift = (uint32_t)(14 - e);
        bits = mant >> shift;
    } else {
        shift = 13;
        bits = ((uint32_t)e << 10) | (mant >> 13);
    }
    uint32_t rem = mant & ((1u << shift) - 1u), mid = 1u << (shift - 1u);
    /* A carry out of the mantissa raises the exponent, up to infinity. */
    if (rem > mid || (rem == mid && (bits & 1u)))
        bits++;
    return (uint16_t)(sign | bits);
}

/* The float that binary16 H encodes. */
static inline float cli_f16_to_float(uint16_t h)
{
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400u), (int)exp - 25);
    return (h & 0x8000u) ? -v : v;
}

/* The bfloat16 encoding of F. */
static inline uint16_t cli_bf16_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it one */
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* The float that bfloat16 B encodes. */
static inline float cli_bf16_to_float(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

#endif
