/* nn_window.h — what the cpu module's convolution and pooling files share:
 * the geometry of a sliding window (read from a node's attributes with
 * ONNX's defaults, auto_pad resolved to explicit pads, output sizes checked
 * against the node's output), the workspace a run borrows, the padded
 * "phase plane" that lets 2-D windows run as contiguous vector loops, and
 * the builders of nn.c's table. Internal to the module. */
#ifndef PL_CPU_NN_WINDOW_H
#define PL_CPU_NN_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plinth/auto_pad.h>

#include "cpu_kernel.h"
#include "gemm.h"

/* Returns the status of EXPR when it is an error. */
#define NN_TRY(EXPR)                     \
    do {                                 \
        pl_status *nn_st_ = (EXPR);      \
        if (nn_st_ != NULL)              \
            return nn_st_;               \
    } while (0)

/* Spatial axes a convolution or pooling kernel handles (1-D, 2-D, 3-D). */
#define NN_MAX_SP 3

/* The geometry of one window over NSP spatial axes: input and output sizes,
 * kernel, strides, dilations and the resolved begin/end pads. */
typedef struct nn_window {
    int nsp;
    int64_t in[NN_MAX_SP];
    int64_t out[NN_MAX_SP];
    int64_t kernel[NN_MAX_SP];
    int64_t stride[NN_MAX_SP];
    int64_t dilation[NN_MAX_SP];
    int64_t pad_begin[NN_MAX_SP];
    int64_t pad_end[NN_MAX_SP];
} nn_window;

/* How nn_window_read treats the node's op. */
typedef enum nn_window_kind {
    NN_WINDOW_CONV = 0, /* kernel from W; no ceil_mode */
    NN_WINDOW_POOL = 1, /* kernel_shape required; ceil_mode */
    NN_WINDOW_TRANSPOSE = 2 /* kernel from W; output sizes and pads left 0 */
} nn_window_kind;

/* Reads NODE's window attributes for input X (rank nsp+2) into *w: strides,
 * dilations, pads, auto_pad, kernel_shape (KERNEL when the attribute is
 * absent; KERNEL may be NULL for pools, which require it) and, for pools,
 * ceil_mode. Computes the output sizes and resolves auto_pad to pads.
 * Errors are "cpu: <Op>: ..." statuses. */
pl_status *nn_window_read(const pl_node_desc *node, nn_window_kind kind, const pl_tensor *x,
                          const int64_t *kernel, nn_window *w);

/* Checks that the output O is [n, c, w->out...]; an error names both. */
pl_status *nn_window_check_output(const pl_node_desc *node, const pl_tensor *o, int64_t n,
                                  int64_t c, const nn_window *w);

/* Reads the string attribute NAME into *out (DEFAULT_VALUE when absent),
 * borrowed for the get_kernel call. */
pl_status *nn_attr_string(const pl_node_desc *node, const char *name,
                          const char *default_value, const char **out, size_t *out_len);

/* The GEMM epilogue (gemm.h) of a kernel's fused activation E, adding
 * ROW_BIAS (or NULL) per row. The one place the two forms meet. */
static inline cpu_gemm_epilogue nn_gemm_epilogue_of(const cpu_epilogue *e,
                                                    const float *row_bias)
{
    cpu_gemm_epilogue g = {.row_bias = row_bias, .lo = e->lo, .hi = e->hi};
    g.act = e->kind == CPU_EPI_RELU   ? CPU_GEMM_ACT_RELU
            : e->kind == CPU_EPI_CLIP ? CPU_GEMM_ACT_CLIP
                                      : CPU_GEMM_ACT_NONE;
    return g;
}

/* ---- workspace ----------------------------------------------------------- */

/* Bytes of one worker's slice of a workspace of FLOATS floats per worker,
 * rounded up to a cache line. */
size_t nn_slice_bytes(size_t floats);

/* The workspace of a run: the call's own when it holds BYTES, else a host
 * allocation that nn_workspace_release frees. NULL when out of memory. */
typedef struct nn_workspace {
    char *base;
    bool owned;
} nn_workspace;

void *nn_workspace_acquire(pl_module_ctx *ctx, const pl_run_args *args, size_t bytes,
                           nn_workspace *ws);
void nn_workspace_release(pl_module_ctx *ctx, nn_workspace *ws);

/* ---- phase planes ---------------------------------------------------------- */

/* A 2-D window over a plane, laid out so that every tap reads a contiguous
 * run: the input plane, padded with a fill value to the rows and columns the
 * windows reach, each padded row split into `stride_w` phases (column x goes
 * to phase x % stride_w at x / stride_w). Tap (kh, kw) of output (oh, ow)
 * then reads row oh*stride_h + kh*dil_h at row_offset + tap_col[kw] + ow. */
typedef struct nn_phase_plan {
    int64_t rows;          /* padded rows the windows reach */
    int64_t cols;          /* padded columns the windows reach (a row's length) */
    int64_t tap_col[64];   /* per kw: offset of its run inside a row */
    int64_t phase_start[16]; /* per phase: first column of the phase in a row */
} nn_phase_plan;

/* Plans the phase plane of the 2-D window W; false when the kernel is too
 * wide (kernel[1] > 64) or the stride too large (> 16) for the plan. */
bool nn_phase_plan_make(const nn_window *w, nn_phase_plan *p);

/* Fills DST (p->rows * p->cols floats) from the H x W plane SRC, FILL
 * outside it. */
void nn_phase_fill(const nn_window *w, const nn_phase_plan *p, const float *src, float fill,
                   float *dst);

/* ---- vector loops (nn_vec.c), dispatched on the CPU's features ------------ */

/* acc[i] += w * src[i] for i < n. */
void nn_axpy(float *acc, const float *src, float w, int64_t n);
/* ROWS rows of a depthwise window (nn.c), row r at OUT + r * ld_out from
 * SRC + r * ld_src: out[i] = E(b + sum over taps t of w[t] * src[off[t] +
 * i]) for i < n, added to out[i] when ADD. Vectorised to each row's last
 * element (the last vector's store masked), E applied in registers; reads
 * up to 8 floats past the last tap's run of the last row. */
void nn_dw_rows(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                const int64_t *off, const float *w, int taps, float b, int64_t n,
                const cpu_epilogue *e, bool add);
/* OUT[j * ld_out + i] = SRC[i * ld_src + j] (added when ADD) for i < rows,
 * j < cols: a transposed copy, in 8 x 8 register blocks where AVX2 runs. */
void nn_transpose(float *out, int64_t ld_out, const float *src, int64_t ld_src, int64_t rows,
                  int64_t cols, bool add);
/* acc[i] = max(acc[i], src[i]) for i < n. */
void nn_max_row(float *acc, const float *src, int64_t n);
/* acc[i] += src[i] for i < n. */
void nn_add_row(float *acc, const float *src, int64_t n);
/* The sum and the maximum of n floats (n >= 1 for the maximum). */
float nn_sum(const float *x, int64_t n);
float nn_max(const float *x, int64_t n);

/* ---- builders -------------------------------------------------------------- */

pl_status *nn_build_conv(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* nn_f64.c: Conv, ConvTranspose and the pools of NODE on f64, in double,
 * after the f32 builder read the window W (NULL for the global pools; for
 * ConvTranspose its own output sizes and pads) and GROUP (the convolutions)
 * and INCLUDE_PAD (AveragePool), and checked the node. */
/* MaxPool's storage_order 1: the row-major offset OFF of an element within
 * one plane of W's input, as the column-major one (the first spatial axis
 * fastest: h + w * height in 2-D, as ONNX's reference and ONNX Runtime). */
static inline int64_t nn_col_major_offset(const nn_window *w, int64_t off)
{
    int64_t coord[NN_MAX_SP], col = 0, scale = 1;
    for (int d = w->nsp - 1; d >= 0; d--) {
        coord[d] = off % w->in[d];
        off /= w->in[d];
    }
    for (int d = 0; d < w->nsp; d++) {
        col += coord[d] * scale;
        scale *= w->in[d];
    }
    return col;
}

pl_status *nn_build_f64(pl_module_ctx *ctx, const pl_node_desc *node, const nn_window *w,
                        int64_t group, bool include_pad, pl_kernel **out_kernel);
/* nn_pool.c: the taps of output O of axis D of W that AveragePool divides
 * by (with INCLUDE_PAD, those in the padding too, but not past it). */
int64_t nn_pool_count(const nn_window *w, int d, int64_t o, bool include_pad);
pl_status *nn_build_conv_transpose(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel);
/* nn_pool.c: MaxPool AveragePool (windowed), GlobalAveragePool GlobalMaxPool. */
pl_status *nn_build_pool(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* MaxPool of u8 or i8, 2-D, without Indices: computed in bytes
 * (nn_build_pool8) rather than through the f32 wrapper. */
bool nn_pool8_wanted(const pl_node_desc *node);
pl_status *nn_build_pool8(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *nn_build_global_pool(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);

#endif
