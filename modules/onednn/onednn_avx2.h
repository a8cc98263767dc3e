/* onednn_avx2.h — inline AVX2 pieces the onednn module's own kernels
 * share (compiled into each by function attributes; included only by
 * files that run them where odnn_direct_usable() says AVX2 and FMA are
 * there). */
#ifndef PLINTH_ONEDNN_AVX2_H
#define PLINTH_ONEDNN_AVX2_H

#include <immintrin.h>

#include "onednn.h"

/* exp(A) for A in [-87, 87] (the callers clamp): 2^n e^r, n = round(A /
 * ln 2), r = A - n ln 2 in two parts (Cody-Waite), e^r by its Taylor
 * polynomial to r^7 (relative error below 2e-8 before rounding). */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256 odnn_exp8(__m256 a)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 nf = _mm256_round_ps(_mm256_mul_ps(a, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(0.693359375f), a);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, one);
    p = _mm256_fmadd_ps(p, r, one);
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(nf), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

/* A convolution's epilogue after the bias: ACT (ODNN_ACT_*) with its clip
 * bounds LO, HI, or SLOPE (a leaky ReLU's slope; swish's alpha in x *
 * sigmoid(alpha x)). Sigmoid is 1 / (1 + exp(-x)), exp's argument clamped
 * to [-87, 87] (0 and 1 beyond, to float precision). */
static inline __attribute__((always_inline, target("avx2,fma"))) __m256
odnn_act8(__m256 v, int act, __m256 lo, __m256 hi, __m256 slope)
{
    if (act == ODNN_ACT_CLIP)
        return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    if (act == ODNN_ACT_LEAKY)
        return _mm256_blendv_ps(_mm256_mul_ps(v, slope), v,
                                _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
    if (act == ODNN_ACT_SWISH || act == ODNN_ACT_SIGMOID) {
        const __m256 one = _mm256_set1_ps(1.0f), lim = _mm256_set1_ps(87.0f);
        __m256 a = act == ODNN_ACT_SWISH ? _mm256_mul_ps(v, slope) : v;
        __m256 e = odnn_exp8(_mm256_min_ps(_mm256_max_ps(_mm256_sub_ps(_mm256_setzero_ps(), a),
                                                         _mm256_sub_ps(_mm256_setzero_ps(), lim)),
                                           lim));
        __m256 s = _mm256_div_ps(one, _mm256_add_ps(one, e));
        return act == ODNN_ACT_SWISH ? _mm256_mul_ps(v, s) : s;
    }
    return v;
}

#endif
