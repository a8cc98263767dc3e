/* partition.h — splitting a graph between backends.
 *
 * Backends are offered the shape-annotated graph in [placement] order:
 * symbolic modules answer for every node at once (supported_nodes, with a
 * reason per refusal), imperative modules node by node (get_kernel). Each
 * node goes to the first backend that takes it (or to the one a pin names);
 * then the nodes of each symbolic backend are grouped into convex subgraphs
 * (contracting one never creates a cycle). Subgraphs smaller than
 * min_subgraph_nodes are offered to the next backend; so are subgraphs whose
 * compile failed (pl_partition_exclude, then pl_partition_assign again). A
 * node no backend takes is an error naming it, its op and every backend's
 * reason. */
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
} pl_part_cluster;

typedef struct pl_part_pin {
    const char *node;
    int32_t backend;
} pl_part_pin;

typedef struct pl_partition pl_partition;

/* Asks every backend about every node it may get (once; the answers are
 * kept) and makes the first assignment. view is a view of the whole graph in
 * topological order; both must outlive the partition. */
pl_status *pl_partition_create(const pl_graph *g, const pl_graph_view *view,
                               const pl_part_backend *backends,
                               size_t n_backends, const pl_part_pin *pins,
                               size_t n_pins, int min_subgraph_nodes,
                               pl_partition **out_partition);
void pl_partition_destroy(pl_partition *p);

/* Marks the nodes of cluster C as refused by its backend, with REASON, and
 * assigns again. Fails like pl_partition_create when a node is left with no
 * backend. */
pl_status *pl_partition_exclude_cluster(pl_partition *p, size_t c,
                                        const char *reason);

/* The result. */
size_t pl_partition_backend_count(const pl_partition *p);
const pl_part_backend *pl_partition_backend(const pl_partition *p, size_t b);
int32_t pl_partition_node_backend(const pl_partition *p, pl_nid n);
/* The cluster of node N, or -1 when its backend is imperative. */
int32_t pl_partition_node_cluster(const pl_partition *p, pl_nid n);
size_t pl_partition_cluster_count(const pl_partition *p);
const pl_part_cluster *pl_partition_cluster(const pl_partition *p, size_t c);
/* The kernel an imperative backend made for node N, and its workspace
 * bytes. The partition owns it (and releases it when destroyed). */
pl_kernel *pl_partition_kernel(const pl_partition *p, pl_nid n,
                               size_t *out_workspace);
/* The refusal reason of backend B for node N, or NULL. */
const char *pl_partition_reason(const pl_partition *p, pl_nid n, size_t b);

/* Fills a description of tensor T of G (data NULL) for a module. */
void pl_partition_describe_tensor(const pl_graph *g, pl_tid t, pl_tensor *out);

#endif
