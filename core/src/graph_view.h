/* graph_view.h — the read-only view of a graph or subgraph that modules get
 * through host->graph (sdk/include/plinth/host.h, pl_graph_api). */
#ifndef PL_CORE_GRAPH_VIEW_H
#define PL_CORE_GRAPH_VIEW_H

#include "graph.h"
#include "plinth/host.h"

/* Makes a view of NODES (n_nodes node ids, in a valid execution order) of
 * the validated graph G, or of the whole graph in its topological order when
 * NODES is NULL. The graph must outlive the view and not change. */
pl_status *pl_graph_view_create(const pl_graph *g, const pl_nid *nodes,
                                size_t n_nodes, pl_graph_view **out_view);
void pl_graph_view_destroy(pl_graph_view *view);

/* The node id in the graph of the view's node I. */
pl_nid pl_graph_view_node_id(const pl_graph_view *view, size_t i);

/* The graph the view shows (borrowed; valid while the view is). */
const pl_graph *pl_graph_view_graph(const pl_graph_view *view);

/* Whether the core will export what a module compiles of VIEW (the compile
 * cache): pl_graph_api.compile_exported's answer, true until set (a view
 * compiled outside a session's program may be exported by its caller). */
void pl_graph_view_set_exported(pl_graph_view *view, bool exported);

/* Whether views of the same constants will compile again (a staged
 * session's tails, model.h's repeated): pl_graph_api.compile_repeated's
 * answer, false until set. */
void pl_graph_view_set_repeated(pl_graph_view *view, bool repeated);

/* The core's implementation of the SDK's graph view table. */
extern const pl_graph_api pl_graph_view_table;

#endif
