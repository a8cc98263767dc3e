/* graph_json.h — Plinth's native model format: a JSON description of the
 * graph (tensors with dtypes and shapes, nodes with attributes, inputs,
 * outputs, opset imports) and a binary sidecar holding the constants, which
 * the JSON references by offset and length. The same JSON, without the
 * sidecar, is what symbolic modules receive for a subgraph. The format is
 * specified in docs/graph-format.md.
 *
 * Every allocation of the core goes through alloc.h (the thread's current
 * allocator, or the graph's), so a failing allocator makes each function
 * return PL_CODE_OUT_OF_MEMORY and leak nothing. Jansson's tree is made
 * with jansson's own allocator, which the core leaves alone. The functions keep no state: any number of threads may call them
 * at once, on different graphs or on one graph nobody modifies. */
#ifndef PL_CORE_GRAPH_JSON_H
#define PL_CORE_GRAPH_JSON_H

#include <stddef.h>

#include "graph.h"

/* The "format" and "version" values this code reads and writes. */
#define PL_GRAPH_JSON_FORMAT "plinth-graph"
#define PL_GRAPH_JSON_VERSION 1

/* Largest JSON text accepted (bytes). */
#define PL_GRAPH_JSON_MAX_TEXT ((size_t)1 << 30)
/* Deepest nesting of arrays and objects accepted. The format itself needs 7
 * levels; the margin is for nothing but clearer errors. */
#define PL_GRAPH_JSON_MAX_DEPTH 32
/* Most tensors, and most nodes, a file may list. */
#define PL_GRAPH_JSON_MAX_ITEMS 50000000u
/* Alignment of every constant's offset in the sidecars this code writes. */
#define PL_GRAPH_JSON_ALIGN 64

/* Loads the model at PATH (a JSON file) and the sidecar it names, builds the
 * graph and validates it. The sidecar is mapped read-only and the graph keeps
 * the mapping: it must not be truncated or rewritten in place while the graph
 * lives (write a new file and rename it, as pl_graph_save_json does).
 * Errors give the file and the position ("model.json:3:17: ...") or the JSON
 * path ("model.json: nodes[3] ('conv1').attributes.kernel_shape: ..."). On
 * success the caller owns *out_graph (pl_graph_destroy); on failure it is
 * NULL. */
pl_status *pl_graph_load_json(const char *path, pl_graph **out_graph);

/* Same, from LEN bytes of TEXT (no terminating NUL needed). A sidecar named
 * in the text is looked up in BASE_DIR; with BASE_DIR NULL a text that names
 * a sidecar is refused. Messages name the source "(string)". */
pl_status *pl_graph_load_json_string(const char *text, size_t len,
                                     const char *base_dir,
                                     pl_graph **out_graph);

/* Writes G to PATH and every constant to SIDECAR_NAME, a plain file name (no
 * '/') in PATH's directory, at offsets aligned to PL_GRAPH_JSON_ALIGN. With
 * no constant, no sidecar is written and the JSON names none; SIDECAR_NAME
 * may then be NULL. Each file is written under a temporary name and renamed
 * into place, sidecar first, so a reader never sees a partial file and a
 * graph still mapping the old sidecar keeps its bytes. G need not be
 * validated. Saving a loaded graph again gives identical bytes. */
pl_status *pl_graph_save_json(const pl_graph *g, const char *path,
                              const char *sidecar_name);

/* The JSON text of G, or of the subgraph made of N_NODES node ids NODES (in
 * that order, which should be an execution order). With NODES NULL: the
 * whole graph in node-id order with its own inputs and outputs. With a
 * subset: the tensors its nodes use, its inputs (tensors read but not
 * produced inside, constants excepted, in order of first use) and outputs
 * (tensors produced inside and read outside or graph outputs, in order of
 * production), as the graph view defines them. Constants carry
 * "data": {"length": n} and no offset: no sidecar goes with the text, and a
 * module reads the bytes through the graph view by tensor name. On success
 * *out_text is a NUL-terminated string allocated with pl_malloc that the
 * caller frees with pl_free. */
pl_status *pl_graph_to_json(const pl_graph *g, const pl_nid *nodes,
                            size_t n_nodes, char **out_text);

#endif
