/* bytes.h — byte helpers the cpu module's 8-bit kernels share (quantized
 * convolutions, MaxPool on u8 and i8). */
#ifndef PL_CPU_BYTES_H
#define PL_CPU_BYTES_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CPU_BYTES_SSE2 1
#endif

/* EVEN[i] = SRC[2 i] and, unless ODD is NULL, ODD[i] = SRC[2 i + 1], for
 * i < N; reads SRC[0 .. 2 N). SSE2 where it builds: the low and the high
 * bytes of 16-bit lanes, 32 bytes at a time, packed. */
static inline void cpu_bytes_split2(uint8_t *even, uint8_t *odd, const uint8_t *src, int64_t n)
{
    int64_t i = 0;
#ifdef CPU_BYTES_SSE2
    const __m128i lo = _mm_set1_epi16(0x00ff);
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i + 16));
        _mm_storeu_si128((__m128i *)(void *)(even + i),
                         _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo)));
        if (odd != NULL)
            _mm_storeu_si128((__m128i *)(void *)(odd + i),
                             _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8)));
    }
#endif
    for (; i < n; i++) {
        even[i] = src[2 * i];
        if (odd != NULL)
            odd[i] = src[2 * i + 1];
    }
}

#endif
