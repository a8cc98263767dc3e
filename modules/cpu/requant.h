/* requant.h — the cpu module's 8-bit quantization loops, shared by
 * QLinearConv (quant_conv.c), QuantizeLinear (quant.c) and their kin:
 * rounding half to even and saturating as ONNX Runtime does, with the same
 * results on every build (an AVX-512 loop where the CPU has it, else the
 * portable loop built for AVX2 and the baseline). NaN becomes 0. */
#ifndef PL_CPU_REQUANT_H
#define PL_CPU_REQUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Y[j] = saturate8(round_even((float)(int32)(A[j] + B) * M) + YZ) for
 * j < N: an i32 sum plus its bias (wrapping), requantized by the f32
 * multiplier M into i8 (Y_SIGNED) or u8 with zero point YZ. */
void cpu_requant_i32(const int32_t *a, size_t n, uint32_t b, float m, float yz, bool y_signed,
                     void *y);

/* Y[j] = saturate8(round_even(X[j] / S) + ZF) for j < N: QuantizeLinear
 * with one scale S (divided, not multiplied by its reciprocal) and zero
 * point ZF. */
void cpu_quantize_f32(const float *x, size_t n, float s, float zf, bool y_signed, void *y);

#endif
