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

/* cpu_bytes_split2 of N bytes of SRC, N any: EVEN gets (N + 1) / 2
 * values, ODD N / 2. Rows of 16 to 31 bytes go 16 at a time and the last
 * block of a row overlaps the one before it (a stride-2 convolution's
 * 16-wide input rows had split byte by byte: a third of its time). */
static inline void cpu_bytes_split2_bytes(uint8_t *even, uint8_t *odd, const uint8_t *src,
                                          int64_t n)
{
#ifdef CPU_BYTES_SSE2
    if (n >= 32) {
        cpu_bytes_split2(even, odd, src, n / 32 * 16);
        if (n % 32 != 0) {
            int64_t off = (n - 32) & ~(int64_t)1;
            cpu_bytes_split2(even + off / 2, odd + off / 2, src + off, 16);
        }
    } else if (n >= 16) {
        const __m128i lo = _mm_set1_epi16(0x00ff), zero = _mm_setzero_si128();
        for (int64_t off = 0;; off = (n - 16) & ~(int64_t)1) {
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + off));
            _mm_storel_epi64((__m128i *)(void *)(even + off / 2),
                             _mm_packus_epi16(_mm_and_si128(a, lo), zero));
            _mm_storel_epi64((__m128i *)(void *)(odd + off / 2),
                             _mm_packus_epi16(_mm_srli_epi16(a, 8), zero));
            if (off + 16 >= n - 1)
                break;
        }
    } else {
        cpu_bytes_split2(even, odd, src, n / 2);
    }
#else
    cpu_bytes_split2(even, odd, src, n / 2);
#endif
    if (n & 1)
        even[n / 2] = src[n - 1];
}

#endif
