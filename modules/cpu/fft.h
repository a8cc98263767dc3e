/* fft.h — the cpu module's fast Fourier transform, for the signal family
 * (DFT, STFT). Internal to the module.
 *
 * A plan for one length N lives in memory the caller provides
 * (cpu_fft_bytes(N) bytes): N's factors and the twiddles. Lengths whose
 * factors are all small (up to CPU_FFT_MAX_RADIX) run mixed-radix
 * Cooley-Tukey, O(N * sum of factors); any other length (a large prime
 * factor) runs Bluestein's chirp transform over a power-of-two length of
 * at least 2N - 1, O(N log N) too. Everything is in double, each twiddle's
 * angle reduced exactly (an integer k mod N) before its cosine: the
 * results agree with the direct sums to about 1e-15 of the line's norm. */
#ifndef PL_CPU_FFT_H
#define PL_CPU_FFT_H

#include <stddef.h>

/* Prime factors above this make a length run as Bluestein's transform. */
#define CPU_FFT_MAX_RADIX 64

typedef struct cpu_fft cpu_fft;

/* Bytes of a plan for length N (>= 1); 0 when N is too large to plan. */
size_t cpu_fft_bytes(size_t n);

/* Builds the plan for N in MEM (cpu_fft_bytes(N) bytes, 16-byte aligned). */
cpu_fft *cpu_fft_init(void *mem, size_t n);

/* The length P transforms. */
size_t cpu_fft_length(const cpu_fft *p);

/* Complex values (pairs of doubles) of scratch a transform needs. */
size_t cpu_fft_scratch(const cpu_fft *p);

/* The forward transform of IN into OUT (N complex values each, interleaved
 * re, im; OUT must not overlap IN): out[k] = sum_j in[j] e^(-2 pi i jk / N).
 * SCRATCH holds cpu_fft_scratch(P) complex values. */
void cpu_fft_forward(const cpu_fft *p, const double *in, double *out, double *scratch);

#endif
