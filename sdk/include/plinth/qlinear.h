/* plinth/qlinear.h — the arithmetic of ONNX Runtime's com.microsoft
 * QLinearAdd and QLinearMul on x86, which define these ops (ONNX has no
 * reference for them): modules that run them include it so that each
 * gives ONNX Runtime's values, not one quantization step off.
 *
 *   QLinearAdd  c = sat(rne(fma(a, rA, fma(b, rB, fixed))))
 *               rA = sa / sc, rB = sb / sc, fixed = zc - fma(rA, za, rB * zb)
 *               (an operand constant along the output's innermost run
 *               joins fixed first: fixed + x * r, rounded apart)
 *   QLinearMul  c = sat(rne((float)((a - za) * (b - zb)) * (sa * sb / sc) + zc))
 *               (the product exact in int32; a product and a sum in f32)
 *
 * rne rounds half to even; a float at or beyond 2^31, or NaN, converts to
 * INT32_MIN (cvtps2dq) and so saturates to the type's lowest. A file using
 * these must be compiled without FP contraction (-ffp-contract=off): the
 * products and sums rounded apart here must stay apart. */
#ifndef PLINTH_QLINEAR_H
#define PLINTH_QLINEAR_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_qlinear {
    bool mul, is_signed;
    float ra, rb, fixed;  /* QLinearAdd */
    float ratio, zc;      /* QLinearMul */
    int32_t za, zb;
    float lo, hi;         /* the type's range */
} pl_qlinear;

/* The constants of one run from the scales and zero points (per tensor). */
static inline pl_qlinear pl_qlinear_make(bool mul, bool is_signed, float sa, int32_t za, float sb,
                                         int32_t zb, float sc, int32_t zc)
{
    /* (members set one by one: C++ before C++20 has no designated
     * initializers, and a vendor's module may be C++) */
    pl_qlinear p;
    memset(&p, 0, sizeof p);
    p.mul = mul;
    p.is_signed = is_signed;
    p.za = za;
    p.zb = zb;
    p.zc = (float)zc;
    p.lo = is_signed ? -128.0f : 0.0f;
    p.hi = is_signed ? 127.0f : 255.0f;
    if (mul) {
        p.ratio = sa * sb / sc;
    } else {
        p.ra = sa / sc;
        p.rb = sb / sc;
        p.fixed = (float)zc - fmaf(p.ra, (float)za, p.rb * (float)zb);
    }
    return p;
}

/* cvtps2dq of T, then saturation to [LO, HI], in floats. */
static inline float pl_qlinear_round_sat(float t, float lo, float hi)
{
    float r = nearbyintf(t);
    r = r >= lo ? r : lo;
    r = r <= hi ? r : hi;
    return t < 2147483648.0f ? r : lo;
}

/* One value of C from A and B (both varying: the general form). */
static inline float pl_qlinear_value(const pl_qlinear *p, int32_t a, int32_t b)
{
    float t = p->mul ? (float)((a - p->za) * (b - p->zb)) * p->ratio + p->zc
                     : fmaf((float)a, p->ra, fmaf((float)b, p->rb, p->fixed));
    return pl_qlinear_round_sat(t, p->lo, p->hi);
}

#ifdef __cplusplus
}
#endif

#endif
