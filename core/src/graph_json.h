/* graph_json.h — the writer of Plinth's native model format: a JSON
 * description of the graph (tensors with dtypes and shapes, nodes with
 * attributes, inputs, outputs, opset imports) and a binary sidecar holding
 * the constants, which the JSON references by offset and length. The same
 * JSON, without the sidecar, is what symbolic modules receive for a
 * subgraph. The format is specified in docs/graph-format.md; it is read by
 * the json format module (modules/json), not by the core.
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

/* The "format" and "version" values this code writes. */
#define PL_GRAPH_JSON_FORMAT "plinth-graph"
#define PL_GRAPH_JSON_VERSION 1

/* Alignment of every constant's offset in the sidecars this code writes. */
#define PL_GRAPH_JSON_ALIGN 64

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
