/* control.h — running control flow (If, Loop, Scan): the core's step for a
 * node whose bodies are graphs.
 *
 * pl_control_create turns each body of a node into a session of its own,
 * once: the body is copied into a graph whose inputs are the body's inputs
 * followed by the outer-scope tensors it reads, inferred, partitioned,
 * planned and compiled like a model, on whatever backends the runtime
 * offers. pl_control_run then runs the node: it binds the iteration
 * number, loop-carried values, scan slices and outer-scope tensors as the
 * body session's inputs, runs it in the calling thread
 * (pl_session_run_inline) and copies or slices its outputs into the node's.
 * A cheap body thus runs without planning anything per iteration.
 *
 * Shapes are static: a session plans every tensor before it runs. A Loop
 * whose scan outputs depend on how often it runs needs the trip count to be
 * known (or declared) when the model loads; the run fails with a one-line
 * error naming the node when the loop runs more or fewer times than its
 * outputs were planned for.
 *
 * Thread-safety: a pl_control may run on several threads at once (as its
 * session's runs may). */
#ifndef PL_CORE_CONTROL_H
#define PL_CORE_CONTROL_H

#include "graph.h"
#include "plinth/plinth.h"
#include "plinth/tensor.h"
#include "registry.h"

typedef struct pl_control pl_control;

/* Prepares node NODE of the validated, inferred graph G (If, Loop or Scan
 * of the default domain) to run on RT: a session per body. G must outlive
 * the result (the bodies' constants are borrowed from it). Errors name the
 * node: "node 'loop' (Loop): body: ...". */
pl_status *pl_control_create(pl_runtime *rt, const pl_graph *g, pl_nid node,
                             pl_control **out_control);
void pl_control_destroy(pl_control *control);

/* Why an output of control-flow node N of G cannot be planned (its shape
 * is not fully known: a Loop's scan output whose trip count is data, an If
 * whose branches disagree), naming the node; NULL when all are known. */
pl_status *pl_control_check_outputs(const pl_graph *g, const pl_graph_node *n);

/* Runs the node once. IN: the node's inputs (formal ones, then its
 * captures, as pl_graph_node lists them), host memory, absent ones with
 * data NULL; OUT: its outputs, host buffers of the types the graph gives.
 * WORKER: the calling thread's worker index (bodies' kernels key
 * per-thread scratch by it). */
pl_status *pl_control_run(pl_control *control, const pl_tensor *in, size_t n_in,
                          pl_tensor *out, size_t n_out, int worker);

/* Prepares If or Loop node NODE of G to run when its outputs' shapes are
 * known only by running it (a Loop whose trip count or body shapes depend
 * on data, an If whose branches give different shapes): nothing is planned
 * now. Each run makes the bodies it needs as sessions typed from the
 * inputs' actual shapes (staged where shapes inside them depend on data;
 * a Loop's kept per shapes of its carried values, which may change from
 * one iteration to the next) and runs them with pl_session_run, so it
 * must not be called from inside an engine operation. G's node inputs
 * must have known shapes. */
pl_status *pl_control_create_dynamic(pl_runtime *rt, const pl_graph *g, pl_nid node,
                                     pl_control **out_control);

/* Whether node NODE of the typed graph G is an If or Loop with a body that
 * cannot be planned once even though the node's outputs have known
 * shapes: typed from the node's inputs (a Loop's iteration number bound to
 * 0, as its first plan binds it), the body leaves a shape unknown (a
 * Resize to sizes computed from the data, say). Such a node runs to know
 * (pl_control_create_dynamic): staged sessions make it a pivot. */
bool pl_control_body_open(pl_runtime *rt, const pl_graph *g, pl_nid node);

/* Runs a node made by pl_control_create_dynamic. IN as pl_control_run's;
 * OUT receives each output in a host buffer it allocates (free()), its
 * shape pointing at DIMS[i]. A Loop's scan output stacks the rows its
 * iterations gave, which must all have one shape. Runs one at a time. */
pl_status *pl_control_run_dynamic(pl_control *control, const pl_tensor *in, size_t n_in,
                                  pl_tensor *out, int64_t (*dims)[PL_GRAPH_MAX_RANK],
                                  size_t n_out);

/* Where the nodes of C's bodies run, for pl_session_describe: a JSON array with one
 * object per body, {"attribute": "then_branch", "placement": [...]}, the
 * placement as the body session's description gives it (bodies nest). NULL
 * when out of memory. */
struct json_t;
struct json_t *pl_control_describe_json(const pl_control *c);

/* The backend sessions offer control-flow nodes to after every loaded one:
 * a module table built into the core ("control", imperative, host memory)
 * whose kernels are pl_controls. One per runtime; it takes nothing else. */
pl_status *pl_control_module_create(pl_runtime *rt, pl_module **out_module);
void pl_control_module_destroy(pl_module *module);

/* Runs session S in the calling thread, step after step, without the
 * engine, so that it may be called from inside an engine operation (a
 * control step). INPUTS: one tensor per graph input, OUTPUTS one per graph
 * output, in graph order, host memory of the session's types (unchecked).
 * Defined in session.c. */
pl_status *pl_session_run_inline(pl_session *s, const pl_tensor *inputs,
                                 pl_tensor *outputs, int worker);
/* The bytes session S's arenas plan, over its devices (a staged one: its
 * prefix's and its kept tails'). Defined in session.c. */
size_t pl_session_arena_bytes(pl_session *s);
/* Whether every backend session S was partitioned over computes on host
 * memory (false for a staged one). Defined in session.c. */
bool pl_session_host_only(const pl_session *s);
/* The modules besides cpu that session S offered nodes and runs no step
 * of, at most MAX of them into OUT; none for a staged session. Defined in
 * session.c. */
size_t pl_session_idle_modules(const pl_session *s, struct pl_module **out, size_t max);

#endif
