/* fastmath_avx2.h — e^x in eight AVX2 lanes with FMA (cpu_expf of
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

#define CPU_AVX2_FN __attribute__((target("avx2,fma"), always_inline)) static inline

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
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); /* NaN stays NaN */
}

/* Whether this CPU runs the AVX2 + FMA loops. */
static inline int cpu_has_avx2_fma(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

#endif
