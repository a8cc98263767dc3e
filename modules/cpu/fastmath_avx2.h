/* fastmath_avx2.h — e^x and ln x in eight AVX2 lanes with FMA (cpu_expf of
 * fastmath.h step for step: the same clamp, reduction, polynomial and NaN
 * rule, rounding n to even instead of away from zero, and with fused
 * multiply-adds, so results differ in the last bit or two). For kernels
 * that pick an AVX2 loop at run time (__builtin_cpu_supports): the module
 * is built for baseline x86-64, where GCC vectorises cpu_expf's loops four
 * lanes wide, and a target("avx2") copy of those loops does not vectorise
 * at all with GCC 12, which threads the clamp into branches. Defines
 * CPU_AVX2 where it is available. */
#ifndef PL_CPU_FASTMATH_AVX2_H
#define PL_CPU_FASTMATH_AVX2_H

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CPU_AVX2 1
#include <immintrin.h>
#include <math.h>

#define CPU_AVX2_FN __attribute__((target("avx2,fma"), always_inline)) static inline
#define CPU_AVX512_FN __attribute__((target("avx512f,fma"), always_inline)) static inline

CPU_AVX2_FN __m256 cpu_exp8(__m256 x)
{
    __m256 c = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.33654f)),
                             _mm256_set1_ps(88.37626f));
    __m256 fn = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(0.693359375f), c);
    r = _mm256_fmadd_ps(fn, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 z = _mm256_mul_ps(r, r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, z, r), _mm256_set1_ps(1.0f));
    __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fn),
                                                      _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
    y = _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_set1_ps(-87.33654f), _CMP_LT_OQ), y);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                         _mm256_cmp_ps(x, _mm256_set1_ps(88.72284f), _CMP_GT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); /* NaN stays NaN */
}

/* cpu_exp8 in sixteen AVX-512 lanes, step for step (the same clamp,
 * reduction, polynomial and NaN rule: lanes give the bits cpu_exp8's do). */
CPU_AVX512_FN __m512 cpu_exp16(__m512 x)
{
    __m512 c = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.33654f)),
                             _mm512_set1_ps(88.37626f));
    __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(c, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), c);
    r = _mm512_fmadd_ps(fn, _mm512_set1_ps(2.12194440e-4f), r);
    __m512 z = _mm512_mul_ps(r, r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_add_ps(_mm512_fmadd_ps(p, z, r), _mm512_set1_ps(1.0f));
    __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fn),
                                                      _mm512_set1_epi32(127)), 23);
    __m512 y = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
    y = _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_LT_OQ), y);
    y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.72284f), _CMP_GT_OQ),
                           _mm512_set1_ps(INFINITY));
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* cpu_logf (fastmath.h) in eight lanes, step for step, with fused
 * multiply-adds. */
CPU_AVX2_FN __m256 cpu_log8(__m256 x)
{
    const __m256 tiny = _mm256_set1_ps(1.17549435e-38f);
    __m256 sub = _mm256_cmp_ps(x, tiny, _CMP_LT_OQ);
    __m256 xs = _mm256_blendv_ps(x, _mm256_mul_ps(x, _mm256_set1_ps(33554432.0f)), sub);
    __m256i bits = _mm256_castps_si256(xs);
    __m256i e = _mm256_sub_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23),
                                                  _mm256_set1_epi32(0xff)),
                                 _mm256_set1_epi32(126));
    e = _mm256_sub_epi32(e, _mm256_and_si256(_mm256_castps_si256(sub), _mm256_set1_epi32(25)));
    bits = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32((int)0x807fffff)),
                           _mm256_set1_epi32(0x3f000000));
    __m256 m = _mm256_castsi256_ps(bits);
    __m256 below = _mm256_cmp_ps(m, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OQ);
    e = _mm256_add_epi32(e, _mm256_castps_si256(below)); /* -1 where below */
    __m256 f = _mm256_sub_ps(_mm256_blendv_ps(m, _mm256_add_ps(m, m), below),
                             _mm256_set1_ps(1.0f));
    __m256 z = _mm256_mul_ps(f, f);
    __m256 y = _mm256_set1_ps(7.0376836292e-2f);
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(-1.1514610310e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.1676998740e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(-1.2420140846e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(1.4249322787e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(-1.6668057665e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(2.0000714765e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(-2.4999993993e-1f));
    y = _mm256_fmadd_ps(y, f, _mm256_set1_ps(3.3333331174e-1f));
    y = _mm256_mul_ps(_mm256_mul_ps(y, f), z);
    __m256 fe = _mm256_cvtepi32_ps(e);
    y = _mm256_fmadd_ps(fe, _mm256_set1_ps(-2.12194440e-4f), y);
    y = _mm256_fmadd_ps(z, _mm256_set1_ps(-0.5f), y);
    __m256 r = _mm256_fmadd_ps(fe, _mm256_set1_ps(0.693359375f), _mm256_add_ps(f, y));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(-INFINITY),
                         _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_EQ_OQ));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(NAN), _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, _mm256_set1_ps(INFINITY), _CMP_EQ_OQ));
    return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); /* NaN stays NaN */
}

/* Whether this CPU runs the AVX2 + FMA loops. */
static inline int cpu_has_avx2_fma(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

#endif
