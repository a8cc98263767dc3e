/* optimize.h — exact graph rewrites before partitioning (optimize.c):
 * nodes that compute nothing are bypassed and dropped, each rewrite
 * recorded for the session's description. `[graph] optimize` in
 * backend.ini picks the level. */
#ifndef PL_CORE_OPTIMIZE_H
#define PL_CORE_OPTIMIZE_H

#include <stdbool.h>

#include "graph.h"
#include "status.h"

typedef enum pl_optimize_level {
    PL_OPTIMIZE_NONE = 0,   /* the graph as loaded */
    PL_OPTIMIZE_BASIC = 1,  /* no-op elimination */
    PL_OPTIMIZE_ALL = 2     /* basic, then pl_graph_prefold, constant
                               folding (fold.h) and pl_graph_fuse */
} pl_optimize_level;

/* What the passes did, one line per rewrite ("Identity 'w_id' removed
 * (Identity): its readers read 'w'"). */
typedef struct pl_rewrites {
    char **items;
    size_t n;
} pl_rewrites;

void pl_rewrites_free(pl_rewrites *rewrites);

/* Records one rewrite; false when out of memory. */
bool pl_rewrites_add(pl_rewrites *rewrites, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);

/* Rewrites G (validated, types inferred) at LEVEL into a new graph
 * (*OUT_GRAPH, validated; it borrows G's constants, so G must outlive it),
 * adding a line to REWRITES for each change. *OUT_GRAPH is NULL when
 * nothing changed. Uses the thread's current allocator. */
pl_status *pl_graph_optimize(const pl_graph *g, pl_optimize_level level, pl_graph **out_graph,
                             pl_rewrites *rewrites);

/* Algebraic rewrites that are exact, after constant folding (`all`): a Pad
 * of zeros on the spatial axes whose one reader is a Conv or a floor-mode
 * AveragePool becomes that node's padding (exporters write explicit
 * padding as a Pad: TensorFlow's SAME, PyTorch's ZeroPad2d, an AvgPool2d
 * with count_include_pad). Same contract as pl_graph_optimize. */
pl_status *pl_graph_fuse(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites);

/* Before constant folding (`all`): Shape, Size, and a Gather or Slice of a
 * Shape whose dims are known become constants; a BatchNormalization in
 * inference after a Conv (or ungrouped ConvTranspose) with constant
 * weights goes into them as constant arithmetic that folding computes; a
 * 2-D MatMul by a constant matrix then Add of a constant that broadcasts
 * to it becomes one Gemm; then nodes no graph output depends on go
 * (algebra.c). Same contract as pl_graph_optimize. */
/* With QDQ_INT8 ([graph] qdq = int8), a DequantizeLinear -> Conv ->
 * QuantizeLinear group of ONNX Runtime's QDQ format becomes the QLinearConv
 * it stands for, computed in integers as ONNX Runtime computes it; with
 * QLINEAR_BINARY too (a loaded module registered com.microsoft QLinearAdd
 * and QLinearMul), so do its Add and Mul groups. */
pl_status *pl_graph_prefold(const pl_graph *g, bool qdq_int8, bool qlinear_binary,
                            pl_graph **out_graph, pl_rewrites *rewrites);

/* The first If whose condition is a constant (`all`: a Shape folded,
 * then the comparison folded) replaced by the nodes of the branch it
 * takes (pl_graph_inline_branch): PyTorch's exporter writes `if x.dim()
 * == 3` and the like as If on a Shape, whose branches may give outputs of
 * other ranks, which nothing downstream could plan for. One If a call
 * (the result borrows G's constants: the caller keeps G and calls again
 * on the result); an If that cannot be inlined is noted and left. Same
 * contract as pl_graph_optimize; the caller infers types again. */
pl_status *pl_graph_inline_ifs(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites);

/* The first Loop with dead carried values without them
 * (pl_graph_loop_live_carried, pl_graph_drop_carried): nothing reads their
 * final values and neither the condition, a scan output nor a live value
 * depends on them, so the body drops the nodes that computed them. The
 * counting Loop a while loop with scan outputs is split into
 * (pl_opset_loop_count_split) carries every value only to learn the trip
 * count: a Keras LSTM's counting Loop ran the whole cell every step
 * (piper_nakdimon: each of its 8 Loops 2.8 ms) where the count needs the
 * counter alone. One Loop a call; same contract. */
pl_status *pl_graph_drop_dead_carried(const pl_graph *g, pl_graph **out_graph,
                                      pl_rewrites *rewrites);

/* The first Loop with carried values its body passes through unchanged
 * (tf2onnx hands a Keras RNN's weights to its Loop as carried values)
 * without them (pl_graph_hoist_carried): the body reads them from outside,
 * so nothing copies them each iteration and, when they are constants, the
 * body's session sees constant weights. One Loop a call, as
 * pl_graph_inline_ifs; same contract. */
pl_status *pl_graph_hoist_loop_invariants(const pl_graph *g, pl_graph **out_graph,
                                          pl_rewrites *rewrites);

/* The first Loop's body without its dead nodes (what a hoisted carried
 * value's pass-through chain left), or else without the nodes that compute
 * the same in every iteration, moved before the Loop and computed once
 * (pl_graph_body_moves: they read only tensors from outside the body, each
 * other's results and small constants), the body reading their results
 * from outside. paddle2onnx's attention decoders (SLANet's table
 * structure, 501 steps) projected the encoder's features by the same
 * matrix in every step: 85% of a step's multiply-adds. A Loop that runs no
 * iteration computes the moved nodes all the same. One move a call (all
 * its nodes at once); same contract as pl_graph_inline_ifs. */
pl_status *pl_graph_hoist_loop_nodes(const pl_graph *g, pl_graph **out_graph,
                                     pl_rewrites *rewrites);

/* The first MatMul (or Gemm with alpha and beta 1, A as it is) in a Loop's
 * body of the rows a Gather takes at the Loop's counter (the iteration
 * number, or a carried value stepped by 1) from a tensor from outside, by a
 * matrix from outside, moved out (pl_graph_hoist_gathered_product): one
 * MatMul of the whole tensor before the Loop, whose row the Gather then
 * takes (a Gemm's C added to it). PyTorch writes a scripted loop's Linear
 * of `x[t]` so (a Gemm with transB), and tf2onnx a Keras RNN it
 * cannot fuse (a masked bidirectional LSTM: piper's nakdimon) as a Loop
 * whose body multiplies the step's input by the input weights, so every
 * iteration streamed the whole input matrix (2.5 MiB there) for one row;
 * the product of all rows reads it once. Exact: a row of a product is the
 * product of the row. Only along an axis other than the last, of a
 * non-constant float tensor (an embedding table indexed by the counter
 * would be multiplied whole), and not when a constant trip count visits
 * fewer rows than the tensor has. A Scan's product of the slice of a scan
 * input (opset 9 on; tf2onnx's TF1 custom RNN cells) likewise becomes the
 * product of the whole input, scanned instead (pl_graph_hoist_scanned_product).
 * One product a call; same contract as pl_graph_inline_ifs. */
pl_status *pl_graph_hoist_loop_products(const pl_graph *g, pl_graph **out_graph,
                                        pl_rewrites *rewrites);

/* Every Sum of float inputs as Adds, left to right (one input: an
 * Identity): Caffe2-era models write every residual connection as Sum,
 * which a backend with Add but no variadic Sum (onednn) refused, so a
 * ResNet became a subgraph per block. Exact: Sum broadcasts as Add does
 * from opset 8 and took equal shapes before. Same contract as
 * pl_graph_optimize; the caller infers types again. */
pl_status *pl_graph_sum_to_adds(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites);

/* An f16 graph computed in f32 between Casts at its edges (widen.c):
 * f16 inputs and constants cast to f32, f16 outputs cast back. Same
 * contract as pl_graph_optimize; the caller infers types again. */
pl_status *pl_graph_widen_f16(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites);

/* Moves every Transpose of an activation down through the elementwise
 * ops, reductions, Concat and Softmax that read it, as far as it goes,
 * so that Transposes meet the ones that undo them and both go
 * (transpose.c): tf2onnx writes NHWC graphs with a Transpose pair around
 * every convolution. Kept only when fewer Transposes of activations are
 * left than there were. Same contract as pl_graph_optimize. */
pl_status *pl_graph_sink_transposes(const pl_graph *g, pl_graph **out_graph,
                                    pl_rewrites *rewrites);

/* Helpers of the rewrites that add nodes (algebra.c): a fresh name BASE/
 * SUFFIX for a tensor or node of COPY (caller frees); a node OP of COPY
 * reading IN whose one output gets a fresh name (*OUT_NAME, caller frees);
 * a new constant named after BASE. */
char *pl_alg_name(const pl_graph *copy, const char *base, const char *suffix, bool node);
pl_status *pl_alg_node(pl_graph *copy, const char *base, const char *op,
                       const char *const *in, size_t n_in, char **out_name);
pl_status *pl_alg_constant(pl_graph *copy, const char *base, const char *suffix, pl_dtype dt,
                           int32_t ndim, const int64_t *dims, const void *data, size_t nbytes,
                           char **out_name);

/* Adds every tensor name of every body under G's nodes to NAMES (the
 * names an outer-scope reference may resolve to); false when out of
 * memory. */
struct pl_strmap;
bool pl_optimize_body_names(const pl_graph *g, struct pl_strmap *names);

/* "none", "basic" or "all"; false for anything else. */
bool pl_optimize_parse(const char *s, pl_optimize_level *out);

#endif
