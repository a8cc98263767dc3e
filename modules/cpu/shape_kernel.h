/* shape_kernel.h — what the files of the cpu module's shape family share
 * (shape.c and shape_*.c): the kernel object every shape kernel starts
 * with, the run driver that checks a run's outputs and handles the output
 * requests, reading constant inputs and attributes, the strided copy engine
 * and the dtype conversions. Internal to the module.
 *
 * Every shape kernel runs through shp_run (a cpu_run_any_fn): it checks each
 * requested output and calls the op's write function for it, once per
 * output. PL_REQ_ADD_TO is handled here for every op and dtype: the op
 * writes into a temporary buffer, which is then added to the output. */
#ifndef PL_CPU_SHAPE_KERNEL_H
#define PL_CPU_SHAPE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_kernel.h"

/* Returns the status of EXPR when it is an error. */
#define SHP_TRY(expr)                 \
    do {                              \
        pl_status *shp_st_ = (expr);  \
        if (shp_st_ != NULL)          \
            return shp_st_;           \
    } while (0)

/* Bytes per parallel_for chunk, at least. */
#define SHP_GRAIN_BYTES 262144

/* A strided copy has twice the rank of a tensor at most (Tile). */
#define SHP_MAX_STRIDED (2 * CPU_MAX_RANK)

/* The most values an int list (axes, pads, starts) may have. */
#define SHP_MAX_INTS (2 * CPU_MAX_RANK)

typedef struct shp_kernel shp_kernel;

/* Writes output O of a run into DST (its first element). REQ is
 * PL_REQ_WRITE or PL_REQ_INPLACE (then DST aliases input 0). The driver
 * checked the output's size and every read input's data. Reentrant. */
typedef pl_status *(*shp_write_fn)(pl_module_ctx *ctx, const shp_kernel *k,
                                   const pl_run_args *args, size_t o, void *dst,
                                   pl_output_request req);

/* What the kernel knows of one output. */
typedef struct shp_output {
    pl_dtype dtype;
    size_t esize;     /* bytes per element */
    size_t elements;
    bool present;     /* false: an optional output the node does not produce */
} shp_output;

/* The start of every shape kernel; base.run_any is shp_run. */
struct shp_kernel {
    pl_kernel base;
    shp_write_fn write;
    size_t in_esize;  /* bytes per element of input 0 (0 without inputs) */
    shp_output *outs; /* base.n_outputs entries, in the kernel's block */
};

/* Allocates a zeroed kernel of BYTES (at least sizeof(shp_kernel)) for NODE,
 * followed in the same block by its outputs' descriptions, and fills the
 * base: run_any, n_reads (every input), n_outputs, out_elements, in_esize.
 * Fails on an output of unknown shape (output 0 must be present) or an
 * element type without a size. */
pl_status *shp_kernel_alloc(pl_module_ctx *ctx, const pl_node_desc *node, size_t bytes,
                            shp_write_fn write, shp_kernel **out_kernel);

/* The run_any of every shape kernel (see the file comment). */
pl_status *shp_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args);

/* The first byte of input I of a run. */
static inline const char *shp_in(const pl_run_args *args, size_t i)
{
    const pl_tensor *t = &args->inputs[i];
    return (const char *)t->data + t->byte_offset;
}

/* True when input I of NODE is present (not an absent optional input). */
bool shp_input_present(const pl_node_desc *node, size_t i);
/* True when output O of NODE is produced. */
bool shp_output_present(const pl_node_desc *node, size_t o);

/* The bytes of input I of NODE when it is a constant of the view, else
 * NULL. Borrowed for the get_kernel call. */
const void *shp_constant(const pl_node_desc *node, size_t i, size_t *out_bytes);

/* The opset version of NODE's domain (13 when the description lacks it). */
int64_t shp_opset(const pl_node_desc *node);

/* The string attribute NAME of NODE into BUF of SIZE bytes, or
 * DEFAULT_VALUE when absent. */
pl_status *shp_attr_string(const pl_node_desc *node, const char *name,
                           const char *default_value, char *buf, size_t size);

/* Reads N integers of DTYPE (i64 or i32) at DATA into OUT; false for
 * another dtype. */
bool shp_read_ints(pl_dtype dtype, const void *data, size_t n, int64_t *out);

/* An integer list given as input IN (when present: a constant of i64 or
 * i32) or as the attribute ATTR (when ATTR is not NULL and the input is
 * absent). *out_state: 1 read (*out_n values), 0 absent, -1 an input
 * whose values are known only at run time. At most SHP_MAX_INTS values. */
pl_status *shp_ints_arg(const pl_node_desc *node, size_t in, const char *attr, int64_t *out,
                        size_t *out_n, int *out_state);

/* A refusal unless the output 0 and input 0 of NODE have one dtype. */
pl_status *shp_same_dtype(const pl_node_desc *node);

/* ---- the strided copy engine (shape_strided.c) ---------------------------- */

/* A copy whose output is dense and whose input element for output index
 * (i0, .., in-1) is at base + sum(ik * stride[k]) elements. Transpose,
 * Slice, Expand and Tile are all such copies. */
typedef struct shp_strided {
    int ndim;
    int64_t dims[SHP_MAX_STRIDED];
    int64_t stride[SHP_MAX_STRIDED]; /* in elements; may be 0 or negative */
    int64_t base;
    size_t esize;
} shp_strided;

/* Drops size-1 dims and merges neighbours that walk the input as one. */
void shp_strided_collapse(shp_strided *s);
/* Runs the copy from X (input's first element) into Y. */
void shp_strided_run(pl_module_ctx *ctx, const shp_strided *s, const void *x, void *y);

/* ---- dtype conversions (shape_cast.c) ------------------------------------- */

/* IEEE half and bfloat16 bits to and from double (round to nearest even;
 * NaN stays NaN, overflow gives infinity). */
double shp_f16_to_double(uint16_t h);
uint16_t shp_f16_from_double(double v);
double shp_bf16_to_double(uint16_t h);
uint16_t shp_bf16_from_double(double v);

/* Converts N elements from SRC of FROM into DST of TO with ONNX Cast
 * semantics. Both dtypes must be among the nine of ABI 1. */
void shp_convert(pl_dtype from, const void *src, pl_dtype to, void *dst, size_t n);

/* DST += SRC for N elements of DTYPE (bool: or). */
void shp_accumulate(pl_dtype dtype, void *dst, const void *src, size_t n);

/* ---- the builders ----------------------------------------------------------- */

pl_status *shp_build_copy(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_bitcast(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
pl_status *shp_build_dropout(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
pl_status *shp_build_shape(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_constant(pl_module_ctx *ctx, const pl_node_desc *node,
                              pl_kernel **out_kernel);
pl_status *shp_build_constant_of_shape(pl_module_ctx *ctx, const pl_node_desc *node,
                                       pl_kernel **out_kernel);
pl_status *shp_build_range(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* shape_strided.c */
pl_status *shp_build_transpose(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);
pl_status *shp_build_slice(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_expand(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_tile(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* shape_slab.c */
pl_status *shp_build_concat(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_split(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
pl_status *shp_build_gather(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* shape_pad.c */
pl_status *shp_build_pad(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* shape_cast.c */
pl_status *shp_build_cast(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);
/* shape_resize.c */
pl_status *shp_build_resize(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);

#endif
