/* custom_op.h — modules' custom operators: the host-table functions that
 * register them in a runtime's opset and serve their shape functions. */
#ifndef PL_CORE_CUSTOM_OP_H
#define PL_CORE_CUSTOM_OP_H

#include "plinth/host.h"

pl_status *pl_custom_op_register(pl_host_ctx *ctx, const pl_custom_op *op);
size_t pl_custom_shape_input_count(pl_shape_ctx *ctx);
size_t pl_custom_shape_output_count(pl_shape_ctx *ctx);
int pl_custom_shape_input(pl_shape_ctx *ctx, size_t i, pl_dtype *out_dtype,
                          int32_t *out_ndim, const int64_t **out_dims);
const pl_graph_view *pl_custom_shape_node(pl_shape_ctx *ctx, size_t *out_node);
pl_status *pl_custom_shape_set_output(pl_shape_ctx *ctx, size_t i,
                                      pl_dtype dtype, int32_t ndim,
                                      const int64_t *dims);

/* One registration, owned by the runtime (freed with it). */
typedef struct pl_custom_record pl_custom_record;
void pl_custom_records_free(pl_custom_record *head);

#endif
