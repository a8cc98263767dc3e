/* igemm.h — the cpu module's 8-bit integer GEMM, for ConvInteger,
 * QLinearConv, MatMulInteger and QLinearMatMul:
 *
 *     C[i][j] = sum_k (A[i][k] - za[i]) * (B[k][j] - zb[j])   (mod 2^32)
 *
 * with A and B each u8 or i8, zero points per row of A and per column of B
 * (or one for all), and C i32 wrapping as ONNX's integer products do. The
 * result is exact: the same integers a direct loop gives, on every build.
 *
 * The weights' side (A) is packed once (cpu_igemm_pack_a, at get_kernel
 * time when constant) with its row sums; each call packs B itself. The
 * micro-kernels multiply i8 by u8 in 16 x 16 x 64 tiles with AMX
 * (tdpbsud, where Linux grants the tile state), in groups of four with
 * AVX512-VNNI (vpdpbusd), in pairs of i16 with AVX2 (vpmaddwd: no
 * saturation), or in portable C, chosen at run time from what the CPU
 * reports; A is taken to
 * i8 and B to u8 by shifting by 128 where their types differ, and the zero
 * points come off afterwards: sum a*b - zb * sum_k a - za * sum_k b
 * + K * za * zb, all in wrapping 32-bit arithmetic.
 *
 * As with gemm.h: every call is single-threaded, allocates nothing, keeps
 * no state; callers split a product over their pool (by blocks of rows of
 * A, starting at multiples of cpu_igemm_mr(), or of columns of B). */
#ifndef PL_CPU_IGEMM_H
#define PL_CPU_IGEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An 8-bit operand op(X) of R x S as stored: element (r, s) is
 * DATA[r * LD + s], or DATA[s * LD + r] when TRANS. */
typedef struct cpu_igemm_q8 {
    const void *data;
    int64_t ld;
    bool trans;
    bool is_signed; /* i8, else u8 */
    /* B only, not TRANS: when set, row r starts at DATA + ROW_OFF[r] (LD
     * unused): the rows of an implicit im2col, each a shifted view of a
     * padded input plane */
    const int64_t *row_off;
} cpu_igemm_q8;

/* Multiply-adds under which a caller runs its whole product on one thread
 * (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul): the pool's
 * hand-off and moving the data between the cores' caches cost more. With
 * AMX, traced on two threads, a 64 -> 64 3x3 ConvInteger on 14x14 (7.2M)
 * spent 2-5x as long in each phase as alone (padding, product, store:
 * lines the other core wrote last), 0.042 ms a run against 0.023 on one
 * thread; 128 -> 128 on 14x14 (29M) 0.066 against 0.057, and 64 -> 64 on
 * 28x28 (29M) 0.067 against 0.073; from 2^24 on yolo_s_qop 0.223 -> 0.183
 * ms, squeezenet_s_qop 0.301 -> 0.274 (order = cpu, 2 threads). */
#define CPU_IGEMM_SERIAL_MACS ((size_t)1 << 24)
/* ... where the micro-kernel is AVX2's or portable C: a tenth of AMX's
 * rate or less, so 16M multiply-adds are 0.2 ms and more on one thread.
 * On an AVX2 EPYC (2 threads, the minimum of five medians of 200 runs)
 * yolo_s_qop took 0.49 ms at 2^24 and 0.37-0.39 at 2^19-2^20, the other
 * int8 models of the quant zoo within the host's noise. */
#define CPU_IGEMM_SERIAL_MACS_AVX2 ((size_t)1 << 20)
/* The bound callers compare with: one of the two, by this CPU's kernel. */
size_t cpu_igemm_serial_macs(void);

/* Rows of one packed panel of A: blocks of rows given to cpu_igemm start
 * at multiples of it. Constant for the life of the process. */
int cpu_igemm_mr(void);

/* Columns of one packed panel of B: products whose column blocks are
 * multiples of it pack no partial panel but the last. */
int cpu_igemm_nr(void);

/* The micro-kernel this CPU runs ("amx", "avx512vnni", "avx2", "c"). */
const char *cpu_igemm_isa(void);

/* Bytes of a packed op(A) of M x K (64-byte aligned). */
size_t cpu_igemm_packed_a_bytes(int64_t m, int64_t k);

/* Packs op(A), M x K, with its zero points ZA (M values when ZA_PER_ROW,
 * else ZA[0] for every row; NULL: 0) into OUT of cpu_igemm_packed_a_bytes
 * bytes, 64-byte aligned. */
void cpu_igemm_pack_a(int64_t m, int64_t k, const cpu_igemm_q8 *a, const int32_t *za,
                      bool za_per_row, void *out);

/* B rounded up to a multiple of 64: the callers' scratch buffers, laid
 * out one after another in a worker's slice, keep cpu_igemm's alignment. */
#define CPU_IGEMM_R64(b) (((b) + (size_t)63) & ~(size_t)63)

/* Bytes of scratch one cpu_igemm call with N columns and depth K needs
 * (64-byte aligned, private to the call): a bounded block of packed B. */
size_t cpu_igemm_scratch_bytes(int64_t n, int64_t k);

/* C[M x N] (leading dimension LDC) for rows FIRST_ROW .. FIRST_ROW + M of
 * the packed A (FIRST_ROW a multiple of cpu_igemm_mr(), K the packed
 * depth) times op(B), K x N, with B's zero points ZB (N values when
 * ZB_PER_COL, else ZB[0]; NULL: 0). */
void cpu_igemm(int64_t m, int64_t n, int64_t k, const void *packed_a, int64_t first_row,
               const cpu_igemm_q8 *b, const int32_t *zb, bool zb_per_col, int32_t *c,
               int64_t ldc, void *scratch);

/* ---- a matrix-vector product by a packed matrix ---------------------------
 *
 * Y[i] = sum over k of (A[i][k] - ZA[i]) * (X[k] - ZX), in wrapping 32-bit
 * arithmetic as cpu_igemm's, for a product of one column (an int8 LSTM's
 * recurrence at batch 1). Where cpu_igemm's AVX2 kernel reads A as pairs
 * of i16 (2 MB for a 2048 x 512 R, streamed from L3 on every step),
 * these panels keep A's bytes (eight rows by two values in 16 bytes),
 * widened in registers. Only where the CPU's integer GEMM is AVX2's:
 * cpu_igemv_packed_bytes is 0 elsewhere (VNNI's kernel reads bytes
 * already), and the caller keeps cpu_igemm. */
size_t cpu_igemv_packed_bytes(int64_t m, int64_t k);
/* Packs A [M, K] (as cpu_igemm_pack_a reads it) with its zero points ZA
 * (one per row when ZA_PER_ROW; NULL: zeros) into OUT
 * (cpu_igemv_packed_bytes). */
void cpu_igemv_pack(int64_t m, int64_t k, const cpu_igemm_q8 *a, const int32_t *za,
                    bool za_per_row, void *out);
/* Y[0..M) for X (K values, i8 when X_SIGNED, else u8) with zero point ZX;
 * SCRATCH holds cpu_igemv_scratch_bytes(K). */
size_t cpu_igemv_scratch_bytes(int64_t k);
void cpu_igemv(const void *packed, const void *x, bool x_signed, int32_t zx, int32_t *y,
               void *scratch);

/* The same panels times a few columns: C[i - FIRST_ROW][j] for rows
 * FIRST_ROW .. FIRST_ROW + M (FIRST_ROW a multiple of cpu_igemv_rows())
 * and columns j < N of op(B), K x N (B's ROW_OFF honoured), with B's zero
 * point ZB, in the arithmetic of cpu_igemm. Four columns a pass: a
 * product of a handful of columns (a convolution's 2x2 output map) reads
 * A's bytes, half the i16 panels' traffic, with every lane a real row.
 * SCRATCH holds cpu_igemv_cols_scratch_bytes(K). */
int cpu_igemv_rows(void);
size_t cpu_igemv_cols_scratch_bytes(int64_t k);
void cpu_igemv_cols(const void *packed, int64_t first_row, int64_t m, int64_t n,
                    const cpu_igemm_q8 *b, int32_t zb, int32_t *c, int64_t ldc, void *scratch);

#endif
