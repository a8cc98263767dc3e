/* graph_impl.h — the graph's representation, shared by the files that
 * implement the IR (graph.c: building and reading; graph_validate.c:
 * scoping of bodies, validation, topological order). Nothing else includes
 * it: the rest of the core goes through graph.h. */
#ifndef PL_CORE_GRAPH_IMPL_H
#define PL_CORE_GRAPH_IMPL_H

#include "graph.h"
#include "strmap.h"

typedef struct pl_graph_opset_entry {
    char *domain;
    int64_t version;
} pl_graph_opset_entry;

typedef struct pl_graph_mapping {
    void *addr;
    size_t len;
} pl_graph_mapping;

struct pl_graph {
    pl_allocator alloc;       /* every block of the graph */
    pl_graph_tensor *tensors;
    size_t n_tensors, cap_tensors;
    pl_graph_node *nodes;
    size_t n_nodes, cap_nodes;
    pl_strmap tensor_names;
    pl_strmap node_names;
    pl_tid *inputs;
    size_t n_inputs, cap_inputs;
    pl_tid *outputs;
    size_t n_outputs, cap_outputs;
    pl_graph_opset_entry *opsets;
    size_t n_opsets;
    pl_graph_mapping *mappings;
    size_t n_mappings;
    /* Constants read out of the model file (filedata.h): owned by the graph
     * that was read, borrowed by the graphs rewritten from it. */
    struct pl_filedata *filedata;
    bool owns_filedata;
    /* What inference overrode of the model's declarations
     * (pl_graph_note), for the model's description. */
    char **notes;
    size_t n_notes;
    /* Sequence values the inference walk follows (pl_graph_set_seq), per
     * tensor id; NULL until the first. Not copied with the graph. */
    pl_graph_seq **seqs;
    size_t n_seqs;
    /* The strings of an imported graph's string tensors (strtab.h),
     * until the model takes them; not copied with the graph. */
    struct pl_strtab *strtab;
    pl_nid *topo;             /* after validate */
    pl_nid *consumer_block;   /* storage of every tensor's consumers */
    bool valid;
};

/* The status for running out of memory while doing WHAT. */
pl_status *pl_graph_oom(const char *what);

#endif
