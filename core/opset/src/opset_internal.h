/* opset_internal.h — what the opset_*.c files share: the built-in schema
 * tables of each op family and small helpers for inference functions.
 * Private to the core's opset. */
#ifndef PL_CORE_OPSET_INTERNAL_H
#define PL_CORE_OPSET_INTERNAL_H

#include "opset.h"
#include "status.h"

/* The built-in schemas, one table per op family. */
extern const pl_op_schema pl_opset_elementwise_schemas[];
extern const size_t pl_opset_elementwise_count;
extern const pl_op_schema pl_opset_nn_schemas[];
extern const size_t pl_opset_nn_count;
extern const pl_op_schema pl_opset_shape_schemas[];
extern const size_t pl_opset_shape_count;
extern const pl_op_schema pl_opset_math_schemas[];
extern const size_t pl_opset_math_count;
extern const pl_op_schema pl_opset_rnn_schemas[];
extern const size_t pl_opset_rnn_count;
extern const pl_op_schema pl_opset_index_schemas[];
extern const size_t pl_opset_index_count;
extern const pl_op_schema pl_opset_loss_schemas[];
extern const size_t pl_opset_loss_count;
extern const pl_op_schema pl_opset_quant_schemas[];
extern const size_t pl_opset_quant_count;
extern const pl_op_schema pl_opset_signal_schemas[];
extern const size_t pl_opset_signal_count;
extern const pl_op_schema pl_opset_norm_schemas[];
extern const size_t pl_opset_norm_count;
extern const pl_op_schema pl_opset_sample_schemas[];
extern const size_t pl_opset_sample_count;
extern const pl_op_schema pl_opset_text_schemas[];
extern const size_t pl_opset_text_count;
extern const pl_op_schema pl_opset_control_schemas[];
extern const size_t pl_opset_control_count;

/* For control flow (opset_control.c): the set inference runs with, and
 * the graph being inferred, whose node's bodies the infer function types. */
const pl_opset *pl_infer_opset(const pl_infer_ctx *ctx);
pl_graph *pl_infer_graph_mut(pl_infer_ctx *ctx);

/* Infers BODY (a node's GRAPH attribute) after the caller typed its inputs
 * and its outer-scope references: like pl_opset_infer, without the opset
 * conversion and the folding of known values. */
pl_status *pl_opset_infer_body(const pl_opset *set, pl_graph *body);

/* Initialisers for pl_op_schema.n_inplace / inplace_input. */
#define PL_INPLACE_0 .n_inplace = 1, .inplace_input = {0}

/* The attribute spec of a schema, for tables. */
#define PL_ATTR_I(n, d) {.name = (n), .kind = PL_ATTR_INT, .default_int = (d)}
#define PL_ATTR_F(n, d) {.name = (n), .kind = PL_ATTR_FLOAT, .default_float = (d)}
#define PL_ATTR_S(n, d) {.name = (n), .kind = PL_ATTR_STRING, .default_string = (d)}
#define PL_ATTR_IS(n) {.name = (n), .kind = PL_ATTR_INTS}
#define PL_ATTR_FS(n) {.name = (n), .kind = PL_ATTR_FLOATS}
#define PL_ATTR_T(n) {.name = (n), .kind = PL_ATTR_TENSOR}
#define PL_ATTR_G(n) {.name = (n), .kind = PL_ATTR_GRAPH, .required = true}
#define PL_ATTR_REQ(n, k) {.name = (n), .kind = (k), .required = true}
#define PL_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The unknown dtype (lanes 0). */
#define PL_DTYPE_UNKNOWN ((pl_dtype){0, 0, 0})

/* Normalises AXIS against RANK (negative counts from the end). False when
 * it is outside [-rank, rank). */
bool pl_infer_axis(int64_t axis, int64_t rank, int64_t *out_axis);

/* Output I gets input J's dtype, shape and dim_params. */
pl_status *pl_infer_copy_input(pl_infer_ctx *ctx, size_t out, size_t in);

/* The dtype of input I (unknown when absent). */
pl_dtype pl_infer_input_dtype(const pl_infer_ctx *ctx, size_t i);

/* Maps an ONNX TensorProto data type number to a dtype; false when ABI 1
 * has no such dtype. */
bool pl_onnx_dtype(int64_t onnx_type, pl_dtype *out_dtype);

/* Reads the ints of a known int tensor input or an INTS attribute,
 * whichever the node's version uses: input IN when present, else
 * attribute ATTR. *out_state: 1 read, 0 absent (neither given),
 * -1 an input is given but its values are unknown. Values go to OUT
 * (capacity PL_KNOWN_MAX). An input with some unknown elements counts as
 * unknown. */
pl_status *pl_infer_ints_arg(const pl_infer_ctx *ctx, size_t in,
                             const char *attr, int64_t *out, size_t *out_n,
                             int *out_state);

/* The known value of a reduction (ReduceProd, ReduceSum, ReduceMin,
 * ReduceMax) of input 0 when it is a known int vector reduced whole (the
 * caller says so with WHOLE): exporters compute a Reshape's target as
 * ReduceProd(Gather(Shape(x), axes)). Nothing when not known. */
pl_status *pl_infer_reduce_known(pl_infer_ctx *ctx, bool whole);

/* NumPy broadcasting of the shapes of inputs 0..N-1 (absent ones skipped)
 * into DIMS, *OUT_RANK dims (opset_elementwise.c); *OUT_RANK is -1 when some
 * input's rank is unknown. A symbolic dim survives, in PARAMS, where every
 * input that has it agrees on its name. Fails with the two shapes that do
 * not broadcast. */
pl_status *pl_opset_broadcast_inputs(pl_infer_ctx *ctx, size_t n, int64_t *dims, int *out_rank,
                                     const char **params);

/* ---- opset_upgrade.c ---------------------------------------------------- */

/* Rewrites of a graph (opset_upgrade.c, opset_lower.c) share these two.
 * Writes into BUF a tensor or node name "<base>_<what>" that G does not use
 * yet (a counter is appended when it does). */
void pl_rewrite_fresh_name(const pl_graph *g, const char *base, const char *what, char *buf,
                           size_t cap);
/* Adds a constant named after node ID's name and WHAT, of DTYPE and shape,
 * with a copy of NBYTES of DATA, into *OUT_T. */
pl_status *pl_rewrite_add_constant(pl_graph *g, pl_nid id, const char *what, pl_dtype dtype,
                                   int32_t ndim, const int64_t *dims, const void *data,
                                   size_t nbytes, pl_tid *out_t);

/* The oldest ai.onnx opset the schemas describe. A graph that imports an
 * older one (1 to 6) is converted to it by the inference driver. */
#define PL_OPSET_UPGRADE_TARGET 7

/* Converts node ID of G, of a graph that imported ai.onnx opset FROM (1 to
 * 6), to its opset-7 form as ONNX's version converter defines the steps
 * (opset_upgrade.c lists them); nodes of other domains are left alone. The
 * node's inputs must have their inferred types. It may remove and add
 * attributes, replace inputs, add constants, and add nodes whose inputs
 * are typed already (they get the ids from the node count before the call
 * on, and must be inferred before node ID). Errors name the node and the
 * conversion. */
pl_status *pl_opset_upgrade_node(pl_graph *g, pl_nid id, int64_t from);

/* ---- opset_lower.c ------------------------------------------------------ */

/* Node ID of G, a graph of ai.onnx opset VERSION, in the form the schemas
 * and kernels take: an op ONNX defines as a function of other ops (Gelu,
 * Mish, Swish, RMSNormalization, GroupNormalization, Attention, from the
 * version that added them) or one of ONNX Runtime's fused contrib ops
 * (com.microsoft's Gelu, FastGelu, SkipLayerNormalization, ...) becomes
 * those ops, the node itself turned into the last of them; an op whose newer
 * version added attributes gets them checked (a value Plinth cannot run is
 * refused, naming it) and, at their defaults, removed or renamed to the
 * older spelling. Same contract as pl_opset_upgrade_node: inputs typed,
 * added nodes feed node ID and are inferred before it. *CHANGED is set when
 * the graph was rewritten. */
pl_status *pl_opset_lower_node(pl_graph *g, pl_nid id, int64_t version, bool *changed);
/* Rewrites node ID when it is a sequence op, reads a sequence or is a
 * Loop over sequences (opset_sequence.c); *HANDLED says whether it was,
 * *WALK_ADDED whether the nodes it added need the whole walk (rewriting,
 * then inference: an unrolled body's), not inference alone. */
pl_status *pl_opset_lower_sequence(pl_infer_ctx *ctx, pl_nid id, int64_t version,
                                   bool *handled, bool *walk_added);
/* After the Loop ID was inferred (CTX on it): when a scan output's length
 * depends on the condition stopping the loop, adds a Loop that counts the
 * iterations (*OUT_COUNTER, to infer) and makes ID run that many
 * (opset_control.c); PL_NID_NONE when nothing changed. */
pl_status *pl_opset_loop_count_split(pl_infer_ctx *ctx, pl_nid id, pl_nid *out_counter);
/* Whether BODY (a Loop's) gives a true condition on every iteration: its
 * condition input passed through, or a true constant, through Identities. */
bool pl_opset_loop_cond_always_true(pl_infer_ctx *ctx, const pl_graph *body);

#endif
