/* partition.h — splitting a graph between backends.
 *
 * Backends are offered the shape-annotated graph in [placement] order:
 * symbolic modules answer for every node at once (supported_nodes, with a
 * reason per refusal), imperative modules node by node (get_kernel). Each
 * node goes to the first backend that takes it (or to the one a pin names);
 * then the nodes of each symbolic backend are grouped into convex subgraphs
 * (contracting one never creates a cycle). Subgraphs smaller than
 * min_subgraph_nodes are offered to the next backend; so are subgraphs whose
 * compile failed (pl_partition_exclude, then pl_partition_assign again).
 *
 * Cost-aware placement (choose_by_cost, ABI 1.3): a subgraph whose module
 * gives an estimate (estimate_cost: compute, launch and boundary conversions
 * of the whole subgraph) is weighed against the same nodes on the backends
 * that would get them without it, each estimated by its module or, when it
 * gives none, by the core's default (plinth/cost.h: FLOPs and bytes at
 * default rates, plus one dispatch per imperative node or per subgraph).
 * Estimates are for one thread: compute and boundary reorders are divided
 * by THREADS (the runtime's), launches and thread handoffs are not.
 * When the alternative is cheaper the subgraph is offered to the next
 * backends, with a reason that quotes both estimates. A module that gives no
 * estimate keeps what the order gives it: the user placed it, and the core
 * cannot know its speed. Pinned nodes are never moved. A
 * node no backend takes is an error naming it, its op and every backend's
 * reason.
 *
 * Epilogue fusion (ABI 1.1, pl_partition_fuse): a node whose kernel came
 * from a module with kernel_fuse may absorb the single consumer of its only
 * output, and that consumer's consumer after it (a chain). The fused nodes
 * keep their assignment; the session runs the chain as one kernel step of
 * its head. */
#ifndef PL_CORE_PARTITION_H
#define PL_CORE_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "graph_view.h"
#include "registry.h"

typedef struct pl_part_backend {
    pl_module *module;     /* borrowed from the runtime */
    int32_t device;        /* the module's device index */
    bool symbolic;         /* offered subgraphs (else single nodes) */
} pl_part_backend;

typedef struct pl_part_cluster {
    int32_t backend;
    pl_nid *nodes;         /* in topological order */
    size_t n_nodes;
    /* Cost-aware placement (choose = cost): the backend's estimate for the
     * subgraph (est_us < 0: none given), and the estimate for the same nodes
     * on the backends after it (alt_backend: the one most of them would go
     * to; -1 when some node has nowhere else to go). */
    pl_cost est;
    bool est_made;         /* est holds the backend's estimate (pl_part_carve
                              made it; pl_part_weigh then need not ask again) */
    double handoff_us;     /* the core's: waking the backend's own thread */
    double est_us;         /* est's total plus handoff_us */
    double alt_us;
    int32_t alt_backend;
} pl_part_cluster;

typedef struct pl_part_pin {
    const char *node;
    int32_t backend;
} pl_part_pin;

typedef struct pl_partition pl_partition;

/* Asks every backend about every node it may get (once; the answers are
 * kept) and makes the first assignment. view is a view of the whole graph in
 * topological order; both must outlive the partition. INLINE_RUN: the
 * program will run inline in one worker (a control-flow body), where each
 * kernel step costs PL_PART_INLINE_STEP_US instead of PL_COST_STEP_US (as
 * it does when every backend is on the host: run.c runs such programs in
 * their caller). SPIN_US: how long an idle pool or OpenMP team spins
 * (backend.ini spin_us), what a pinned-thread subgraph's team takes from
 * the backend after it (pl_part_handoff). PLAN_RUNS: how many runs the
 * plan is expected to serve, over which the estimates' one-off cost
 * (pl_cost.prepare_us) is shared out; 0 for many (it is then not weighed). */
pl_status *pl_partition_create(const pl_graph *g, const pl_graph_view *view,
                               const pl_part_backend *backends,
                               size_t n_backends, const pl_part_pin *pins,
                               size_t n_pins, int min_subgraph_nodes,
                               bool choose_by_cost, int threads, int spin_us,
                               bool inline_run, double plan_runs,
                               pl_partition **out_partition);

/* What one kernel step costs in a program run inline or step by step in
 * its caller (measured: a GRU cell's Loop body of 35 small nodes, 14.6 us
 * an iteration on cpu; a chain of 64 [1,64] Tanh, 0.2-0.3 us a step in the
 * caller against 1.27 through the engine). */
#define PL_PART_INLINE_STEP_US 0.4
void pl_partition_destroy(pl_partition *p);

/* Marks the nodes of cluster C as refused by its backend, with REASON, and
 * assigns again. Fails like pl_partition_create when a node is left with no
 * backend. */
pl_status *pl_partition_exclude_cluster(pl_partition *p, size_t c,
                                        const char *reason);

/* pl_partition_exclude_cluster for node N alone: marks it as refused by
 * the backend it is on, with REASON, and assigns again. */
pl_status *pl_partition_exclude_node(pl_partition *p, pl_nid n, const char *reason);

/* What node N, part of a subgraph, costs on its backend by that backend's
 * estimate for it alone, without boundaries (inside its subgraph it has
 * none), in *OWN_US; and cut out onto the first other backend that would
 * take it (*ALT_BACKEND), by that backend's estimate or the core's
 * default plus the conversions and hand-offs of the cut, in *ALT_US.
 * False when its backend gives no estimate, it is pinned, or it has
 * nowhere else to go. Asks no backend anything new. */
bool pl_partition_node_weigh(pl_partition *p, pl_nid n, double *own_us, double *alt_us,
                             int32_t *alt_backend);

/* The result. */
size_t pl_partition_backend_count(const pl_partition *p);
const pl_part_backend *pl_partition_backend(const pl_partition *p, size_t b);
int32_t pl_partition_node_backend(const pl_partition *p, pl_nid n);
/* The cluster of node N, or -1 when its backend is imperative. */
int32_t pl_partition_node_cluster(const pl_partition *p, pl_nid n);
/* What node N costs a run on its backend by the estimates choose = cost
 * weighs (its module's, or the core's default), in microseconds; -1 when
 * it is part of a subgraph (the subgraph carries the estimate). */
double pl_partition_node_estimate(const pl_partition *p, pl_nid n);
/* The runs the plan is expected to serve (pl_partition_create); 0: many. */
double pl_partition_plan_runs(const pl_partition *p);
size_t pl_partition_cluster_count(const pl_partition *p);
const pl_part_cluster *pl_partition_cluster(const pl_partition *p, size_t c);
/* The kernel an imperative backend made for node N, and its workspace
 * bytes. The partition owns it (and releases it when destroyed). */
pl_kernel *pl_partition_kernel(const pl_partition *p, pl_nid n,
                               size_t *out_workspace);
/* Offers kernel_fuse: for every imperative node (a chain's head) in
 * topological order, its chain's last node's consumer NEXT when
 *   - that node has one output, which NEXT alone reads (in one input) and
 *     which is not a graph output;
 *   - NEXT's other inputs are absent or constants of the graph;
 *   - NEXT has one output, of the same dtype and shape;
 *   - NEXT is assigned to the same imperative backend (module and device)
 *     and heads no chain of its own;
 * and extends the chain while the module accepts. No kernel is offered the
 * same node twice: call it again after pl_partition_exclude_cluster and it
 * offers only pairs that the new assignment made eligible. This is
 * sound because an exclusion never moves a node that an imperative backend
 * holds (exclusions only strike symbolic verdicts), so a fused chain stays
 * valid; the call checks that and fails with PL_CODE_INTERNAL otherwise. A
 * kernel, once fused, stays fused: kernel_fuse cannot be undone. */
pl_status *pl_partition_fuse(pl_partition *p);
/* The head of the chain node N is fused into (whose kernel runs N), or
 * PL_NID_NONE when N runs on its own (or heads a chain). */
pl_nid pl_partition_fused_into(const pl_partition *p, pl_nid n);
/* The node fused right after N in its chain, or PL_NID_NONE. Following it
 * from a head lists the chain in order. */
pl_nid pl_partition_fused_next(const pl_partition *p, pl_nid n);

/* The refusal reason of backend B for node N, or NULL. */
const char *pl_partition_reason(const pl_partition *p, pl_nid n, size_t b);

/* Fills a description of tensor T of G (data NULL) for a module. */
void pl_partition_describe_tensor(const pl_graph *g, pl_tid t, pl_tensor *out);

#endif
