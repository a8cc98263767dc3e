/* math_internal.h — what the files of the cpu module's math family share
 * (math.c and math_*.c): the builders its op table names, and the helpers
 * its kernels use to read dtypes, optional inputs and constants at
 * get_kernel time and to check a run's arguments themselves (most of the
 * family's kernels take several dtypes, so kernel.c hands them the run
 * unchecked). Internal to the module. */
#ifndef PL_CPU_MATH_INTERNAL_H
#define PL_CPU_MATH_INTERNAL_H

#include <math.h>

#include "cpu_kernel.h"

/* Elements per parallel_for chunk, at least: enough to pay for a hand-off
 * (a few microseconds of work); fewer for ops that spend tens of cycles per
 * element, and for Exp, Tanh, Sigmoid, Log and Erf in vector lanes about a
 * cycle or two (AVX2; AVX-512 half that): at 4,096 an SVR's Tanh over
 * [64, 150], 5 us of work, was split three ways and took 0.018 ms a run of
 * the model on 2 threads against 0.009 on one. */
#define MATH_GRAIN 32768
#define MATH_GRAIN_HEAVY 4096
#define MATH_GRAIN_VEC_AVX2 8192
#define MATH_GRAIN_VEC_AVX512 16384

/* ---- dtypes -------------------------------------------------------------- */

/* "f32", "i64", ... for messages. */
const char *math_dtype_name(pl_dtype dt);

/* The dtypes the family computes in. */
typedef enum math_type {
    MATH_F32 = 0,
    MATH_I64,
    MATH_I32,
    MATH_BOOL,
    MATH_U8,
    MATH_I8,
    MATH_F64,
    MATH_TYPE_COUNT,
    MATH_OTHER = -1
} math_type;

/* The math_type of DT, or MATH_OTHER. */
math_type math_type_of(pl_dtype dt);

/* A status "cpu: OP: unsupported dtype <dt>" (PL_CODE_UNSUPPORTED). */
pl_status *math_unsupported_dtype(const char *op, pl_dtype dt);

/* ---- node reading (get_kernel time) --------------------------------------- */

/* True when input I of NODE is present (listed and not the empty name). */
bool math_input_present(const pl_node_desc *node, size_t i);
/* True when output O of NODE is produced (listed and not the empty name). */
bool math_output_present(const pl_node_desc *node, size_t o);
/* The bytes of constant input I of NODE: 1 with *out_data and *out_bytes
 * (borrowed for the get_kernel call), 0 when it is not a constant. */
int math_input_constant(const pl_node_desc *node, size_t i, const void **out_data,
                        size_t *out_bytes);
/* The opset version of NODE (13 when the description does not say). */
int64_t math_opset(const pl_node_desc *node);
/* A status "cpu: OP: input X and output Y differ in size" when the element
 * counts of input I and output 0 differ, else NULL. */
pl_status *math_same_size(const pl_node_desc *node, size_t i);

/* The axes a reduction of NODE reduces over, as one flag per dim of its
 * input (rank R) in REDUCE: from its constant input 1 when FROM_INPUT (with
 * noop_with_empty_axes), else from its `axes` attribute; none given means
 * all. Fails on an axis out of range or axes computed at run time. */
pl_status *math_reduce_axes(const pl_node_desc *node, bool from_input, int32_t r, bool *reduce);

/* ---- run-time checks (kernels with run_any) ------------------------------- */

/* Checks the request of output O and the output itself for a run_any
 * kernel that writes ELEMENTS elements there, and every input the kernel
 * reads (0 .. n_reads-1) for data. *out_data is the output's first element,
 * or NULL when there is nothing to write (request PL_REQ_NULL, or no
 * elements); *out_req the request. ALLOW_ADD says whether the kernel can
 * accumulate into this output; in place is checked against inplace_ok. */
pl_status *math_run_output(const pl_kernel *k, const pl_run_args *args, size_t o,
                           size_t elements, bool allow_add, void **out_data,
                           pl_output_request *out_req);

/* The first element of input I, honouring byte_offset (any dtype). */
static inline const void *math_in(const pl_run_args *args, size_t i)
{
    const pl_tensor *t = &args->inputs[i];
    return (const char *)t->data + t->byte_offset;
}

/* ---- broadcasting (ops of several operands, any dtype) -------------------- */

/* The output's walk made short: its size-1 dims dropped, and a dim merged
 * into the previous kept one when every one of the N operands (strides S,
 * one row each) steps through the pair as one dim. Writes DIMS and one
 * STRIDE row per operand; returns the rank (at least 1). */
int math_merge_dims(const int64_t *out_dims, int out_r, size_t n, int64_t (*s)[CPU_MAX_RANK],
                    int64_t *dims, int64_t (*stride)[CPU_MAX_RANK]);

/* Walking output elements of a merged broadcast (rank NDIM, DIMS, N operands
 * with STRIDE rows) in spans of the innermost dim: IDX is the multi-index,
 * OFF each operand's element offset. */

/* IDX and OFF at output element POS. */
static inline void math_walk_start(int ndim, const int64_t *dims, int n,
                                   const int64_t (*stride)[CPU_MAX_RANK], size_t pos, int64_t *idx,
                                   int64_t *off)
{
    for (int j = 0; j < n; j++)
        off[j] = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        idx[d] = (int64_t)(pos % (size_t)dims[d]);
        pos /= (size_t)dims[d];
        for (int j = 0; j < n; j++)
            off[j] += idx[d] * stride[j][d];
    }
}

/* The elements left in the innermost dim from IDX, at most LEFT. */
static inline size_t math_walk_span(int ndim, const int64_t *dims, const int64_t *idx,
                                    size_t left)
{
    size_t span = (size_t)(dims[ndim - 1] - idx[ndim - 1]);
    return span < left ? span : left;
}

/* IDX and OFF moved on by SPAN elements of the innermost dim, carried into
 * the outer dims. */
static inline void math_walk_advance(int ndim, const int64_t *dims, int n,
                                     const int64_t (*stride)[CPU_MAX_RANK], size_t span,
                                     int64_t *idx, int64_t *off)
{
    const int last = ndim - 1;
    idx[last] += (int64_t)span;
    for (int j = 0; j < n; j++)
        off[j] += (int64_t)span * stride[j][last];
    for (int d = last; d > 0 && idx[d] == dims[d]; d--) {
        for (int j = 0; j < n; j++)
            off[j] += stride[j][d - 1] - idx[d] * stride[j][d];
        idx[d] = 0;
        idx[d - 1]++;
    }
}

/* V truncated toward zero to int64, saturating, NaN giving 0: a float
 * result stored in an integer dtype without C's undefined conversion. */
static inline int64_t math_trunc_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    return v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}

/* ---- builders (each file's table entries) --------------------------------- */

/* math_unary.c: Sqrt Exp Log Neg Abs Reciprocal Erf LeakyRelu Clip Relu
 * Sigmoid Tanh. */
pl_status *math_build_unary(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
/* math_binary.c: Add Sub Mul Div Pow Equal Less Greater Where, NumPy
 * broadcasting, f32/f64/i64/i32/i8/u8 arithmetic and bool comparisons. */
pl_status *math_build_broadcast(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
/* math_norm.c: LogSoftmax, BatchNormalization, LayerNormalization,
 * InstanceNormalization. */
pl_status *math_build_logsoftmax(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);
pl_status *math_build_batchnorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
pl_status *math_build_layernorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
pl_status *math_build_instancenorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel);
/* math_reduce.c: ReduceMean ReduceSum ReduceMax. */
pl_status *math_build_reduce(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);

/* math_functions.c: Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh
 * Cosh Asinh Acosh Atanh Softplus Softsign Elu Selu Celu HardSigmoid
 * HardSwish ThresholdedRelu Shrink on f32 and f64 (Sign and Shrink on
 * integers too), IsNaN IsInf (to bool) and Not (bool). */
pl_status *math_build_functions(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
/* math_nary.c: NumPy-broadcasting And Or Xor GreaterOrEqual LessOrEqual
 * Mod BitShift PRelu and the variadic Min Max Sum Mean. */
pl_status *math_build_nary(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);
/* math_axis.c: ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare
 * ReduceLogSum ReduceLogSumExp; ArgMax ArgMin (i64 indices); Trilu (any
 * dtype), CumSum (f32 f64 i32 i64), Size. */
pl_status *math_build_reduce_any(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel);
pl_status *math_build_arg(pl_module_ctx *ctx, const pl_node_desc *node,
                          pl_kernel **out_kernel);
pl_status *math_build_trilu(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
pl_status *math_build_cumsum(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
pl_status *math_build_size(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

/* Sums N floats with independent partial sums (vectorisable, and more
 * accurate than one running sum). */
float math_sum_f32(const float *x, size_t n);

#endif
