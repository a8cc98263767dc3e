/* math_more.h — the builders of math_more.c, the second wave of the cpu
 * module's math family, for math.c's op table. Internal to the module. */
#ifndef PL_CPU_MATH_MORE_H
#define PL_CPU_MATH_MORE_H

#include "cpu_kernel.h"

/* Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh
 * Atanh Softplus Softsign Elu Selu Celu HardSigmoid HardSwish
 * ThresholdedRelu Shrink on f32 and f64 (Sign and Shrink on integers too),
 * IsNaN IsInf (to bool) and Not (bool). */
pl_status *more_build_unary(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
/* NumPy-broadcasting And Or Xor GreaterOrEqual LessOrEqual Mod BitShift
 * PRelu and the variadic Min Max Sum Mean. */
pl_status *more_build_broadcast(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel);
/* ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceSumSquare ReduceLogSum
 * ReduceLogSumExp. */
pl_status *more_build_reduce(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
/* ArgMax ArgMin (i64 indices). */
pl_status *more_build_arg(pl_module_ctx *ctx, const pl_node_desc *node,
                          pl_kernel **out_kernel);
/* Trilu (any dtype), CumSum (f32 f64 i32 i64), Size. */
pl_status *more_build_trilu(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);
pl_status *more_build_cumsum(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel);
pl_status *more_build_size(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

#endif
