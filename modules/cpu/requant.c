/* requant.c — see requant.h. The AVX-512 loops round with vrndscaleps in
 * round-to-nearest-even (the magic-number rounding of cpu_round_even gives
 * the same integer below 2^22, and past that both saturate), clamp in
 * float and narrow with the saturating vpmov[u]sdb: the portable loops'
 * arithmetic step for step, 16 values at a time. GCC had vectorised the
 * portable requantization of quant_conv.c into 256-bit blends with
 * spills: 19% of squeezenet_s_qop on cpu. The AVX2 loops do the same 8
 * values at a time (vroundps, a NaN mask, vpackss/vpackus): GCC's clone of
 * the portable loop still blended and spilled, 13% of resnet50_s_qop. */
#include "requant.h"

#include "fastmath.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RQ_X86 1
#define RQ_TARGET __attribute__((target("avx512f,avx512bw")))
#define RQ_TARGET2 __attribute__((target("avx2")))
#endif

static inline float rq_sat(float v, bool y_signed)
{
    float lo = y_signed ? -128.0f : 0.0f, hi = y_signed ? 127.0f : 255.0f;
    v = v < lo ? lo : v > hi ? hi : v;
    return v == v ? v : 0.0f;
}

static inline void rq_put(void *y, size_t j, float v, bool y_signed)
{
    if (y_signed)
        ((int8_t *)y)[j] = (int8_t)(int32_t)v;
    else
        ((uint8_t *)y)[j] = (uint8_t)(int32_t)v;
}

CPU_CLONES static void rq_requant_c(const int32_t *a, size_t n, uint32_t b, float m, float yz,
                                    bool y_signed, void *y)
{
    for (size_t j = 0; j < n; j++) {
        float v = cpu_round_even((float)(int32_t)((uint32_t)a[j] + b) * m) + yz;
        rq_put(y, j, rq_sat(v, y_signed), y_signed);
    }
}

CPU_CLONES static void rq_quantize_c(const float *x, size_t n, float s, float zf,
                                     bool y_signed, void *y)
{
    for (size_t j = 0; j < n; j++)
        rq_put(y, j, rq_sat(cpu_round_even(x[j] / s) + zf, y_signed), y_signed);
}

#ifdef RQ_X86
/* Clamps V to the 8-bit range, NaN to 0, and stores its 16 integers (the
 * lanes of MASK) as bytes at Y. */
RQ_TARGET static inline void rq_store16(__m512 v, bool y_signed, __mmask16 mask, void *y)
{
    const __m512 lo = _mm512_set1_ps(y_signed ? -128.0f : 0.0f);
    const __m512 hi = _mm512_set1_ps(y_signed ? 127.0f : 255.0f);
    __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
    v = _mm512_maskz_mov_ps(num, _mm512_min_ps(_mm512_max_ps(v, lo), hi));
    __m512i i = _mm512_cvtps_epi32(v); /* whole numbers: exact */
    if (y_signed)
        _mm512_mask_cvtsepi32_storeu_epi8(y, mask, i);
    else
        _mm512_mask_cvtusepi32_storeu_epi8(y, mask, i);
}

RQ_TARGET static void rq_requant_avx512(const int32_t *a, size_t n, uint32_t b, float m,
                                        float yz, bool y_signed, void *y)
{
    const __m512i vb = _mm512_set1_epi32((int32_t)b);
    const __m512 vm = _mm512_set1_ps(m), vz = _mm512_set1_ps(yz);
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 mask = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        __m512i s = _mm512_add_epi32(_mm512_maskz_loadu_epi32(mask, a + j), vb);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(s), vm);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          vz);
        rq_store16(v, y_signed, mask, (char *)y + j);
    }
}

RQ_TARGET static void rq_quantize_avx512(const float *x, size_t n, float s, float zf,
                                         bool y_signed, void *y)
{
    const __m512 vs = _mm512_set1_ps(s), vz = _mm512_set1_ps(zf);
    for (size_t j = 0; j < n; j += 16) {
        __mmask16 mask = n - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j)) - 1u);
        /* lanes past N divide 1 by S: no exception is raised by a float op */
        __m512 v = _mm512_div_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(1.0f), mask, x + j), vs);
        v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                          vz);
        rq_store16(v, y_signed, mask, (char *)y + j);
    }
}


/* Clamps V to the 8-bit range, NaN to 0 (the portable rq_sat's order:
 * vmaxps gives LO for NaN, the mask then makes it 0), and stores its 8
 * integers as bytes at Y. */
RQ_TARGET2 static inline void rq_store8(__m256 v, __m256 lo, __m256 hi, bool y_signed, void *y)
{
    __m256 num = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
    v = _mm256_and_ps(num, _mm256_min_ps(_mm256_max_ps(v, lo), hi));
    __m256i i = _mm256_cvtps_epi32(v); /* whole numbers: exact */
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    __m128i b = y_signed ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64((__m128i *)y, b);
}

/* rq_store8 of the first COUNT values (all 8 when COUNT >= 8), the last
 * 1..7 through a copy. */
RQ_TARGET2 static inline void rq_store_upto8(__m256 v, __m256 lo, __m256 hi, bool y_signed,
                                             char *y, size_t count)
{
    if (count >= 8) {
        rq_store8(v, lo, hi, y_signed, y);
        return;
    }
    uint8_t part[8];
    rq_store8(v, lo, hi, y_signed, part);
    memcpy(y, part, count);
}

RQ_TARGET2 static void rq_requant_avx2(const int32_t *a, size_t n, uint32_t b, float m,
                                       float yz, bool y_signed, void *y)
{
    const __m256i vb = _mm256_set1_epi32((int32_t)b);
    const __m256 vm = _mm256_set1_ps(m), vz = _mm256_set1_ps(yz);
    const __m256 lo = _mm256_set1_ps(y_signed ? -128.0f : 0.0f);
    const __m256 hi = _mm256_set1_ps(y_signed ? 127.0f : 255.0f);
    size_t j = 0;
    /* A finite multiplier below 2^96 (every real model's) makes no NaN: 32
     * values at a time without the mask, clamped in float and packed with
     * two vpackssdw and one vpack[su]swb, whose lane order one vpermd
     * undoes (the clamp already put every value in the byte's range). */
    if (fabsf(m) < 0x1p96f) {
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; j + 32 <= n; j += 32) {
            __m256i q[4];
            for (int r = 0; r < 4; r++) {
                __m256i s = _mm256_add_epi32(
                    _mm256_loadu_si256((const __m256i *)(const void *)(a + j + 8 * r)), vb);
                __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(s), vm);
                v = _mm256_add_ps(
                    _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
                q[r] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, lo), hi));
            }
            __m256i w0 = _mm256_packs_epi32(q[0], q[1]), w1 = _mm256_packs_epi32(q[2], q[3]);
            __m256i bytes = y_signed ? _mm256_packs_epi16(w0, w1) : _mm256_packus_epi16(w0, w1);
            _mm256_storeu_si256((__m256i *)(void *)((char *)y + j),
                                _mm256_permutevar8x32_epi32(bytes, order));
        }
    }
    /* the last 1..7 values through a masked load: their own loop was 4%
     * of resnet50_s_qop (7x7 and 14x14 maps leave 1 and 4), and a copy
     * to a staging vector made the load wait on the copy's narrower
     * stores (a third of this function on squeezenet_s_qop, whose 23-
     * and 11-wide output rows are stored one at a time) */
    for (; j < n; j += 8) {
        size_t left = n - j < 8 ? n - j : 8;
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32((int32_t)left),
                                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256i s = _mm256_add_epi32(
            _mm256_maskload_epi32((const int *)(const void *)(a + j), lanes), vb);
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(s), vm);
        v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
        rq_store_upto8(v, lo, hi, y_signed, (char *)y + j, n - j);
    }
}

RQ_TARGET2 static void rq_quantize_avx2(const float *x, size_t n, float s, float zf,
                                        bool y_signed, void *y)
{
    const __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps(zf);
    const __m256 lo = _mm256_set1_ps(y_signed ? -128.0f : 0.0f);
    const __m256 hi = _mm256_set1_ps(y_signed ? 127.0f : 255.0f);
    size_t j = 0;
    /* lanes past N divide 1 by S, as the AVX-512 loop's do */
    float tail_in[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (; j < n; j += 8) {
        const float *src = x + j;
        if (n - j < 8)
            src = memcpy(tail_in, src, (n - j) * sizeof *src);
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(src), vs);
        v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
        rq_store_upto8(v, lo, hi, y_signed, (char *)y + j, n - j);
    }
}
#endif

void cpu_requant_i32(const int32_t *a, size_t n, uint32_t b, float m, float yz, bool y_signed,
                     void *y)
{
#ifdef RQ_X86
    if (cpu_has_isa(CPU_ISA_AVX512_BW)) {
        rq_requant_avx512(a, n, b, m, yz, y_signed, y);
        return;
    }
    if (cpu_has_isa(CPU_ISA_AVX2_FMA)) {
        rq_requant_avx2(a, n, b, m, yz, y_signed, y);
        return;
    }
#endif
    rq_requant_c(a, n, b, m, yz, y_signed, y);
}

void cpu_quantize_f32(const float *x, size_t n, float s, float zf, bool y_signed, void *y)
{
#ifdef RQ_X86
    if (cpu_has_isa(CPU_ISA_AVX512_BW)) {
        rq_quantize_avx512(x, n, s, zf, y_signed, y);
        return;
    }
    if (cpu_has_isa(CPU_ISA_AVX2_FMA)) {
        rq_quantize_avx2(x, n, s, zf, y_signed, y);
        return;
    }
#endif
    rq_quantize_c(x, n, s, zf, y_signed, y);
}
