/* graph.h — the core's graph IR: tensors and nodes, attributes, graph inputs
 * and outputs, constants. Every table grows: a graph of a million nodes loads
 * if memory allows. Names are looked up through hash maps.
 *
 * Ownership: a pl_graph owns every string, array and constant it holds
 * (constant data may instead be borrowed from a mapping the graph keeps
 * alive, see pl_graph_set_constant_ref). Pointers returned by accessors are
 * valid until the graph is modified or destroyed. Not thread-safe for
 * writing; any number of threads may read a graph nobody modifies.
 *
 * Building: add tensors (or let nodes refer to them by name), add nodes,
 * mark inputs and outputs, then pl_graph_validate, which checks the graph
 * (names unique, every tensor defined exactly once, no cycles, every input
 * defined), links producers and consumers, and computes a topological order.
 * Shapes: ndim -1 means the rank is unknown; a dim of -1 is unknown (its
 * symbolic name, if any, is in dim_params). */
#ifndef PL_CORE_GRAPH_H
#define PL_CORE_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/plinth.h"
#include "plinth/tensor.h"

/* Indices into a graph's tensor and node tables. */
typedef uint32_t pl_tid;
typedef uint32_t pl_nid;
#define PL_TID_NONE UINT32_MAX  /* an absent optional input */
#define PL_NID_NONE UINT32_MAX  /* no producer: graph input or constant */

/* Upper bounds that keep arithmetic on shapes safe. */
#define PL_GRAPH_MAX_RANK 16

/* Attribute kinds, numbered as in the SDK's graph view. */
typedef enum pl_attr_kind {
    PL_ATTR_INT = 1,
    PL_ATTR_FLOAT = 2,
    PL_ATTR_STRING = 3,
    PL_ATTR_INTS = 4,
    PL_ATTR_FLOATS = 5,
    PL_ATTR_STRINGS = 6,
    PL_ATTR_TENSOR = 7,
    PL_ATTR_GRAPH = 8,         /* a body: If's branches, Loop's and Scan's body */
    PL_ATTR_GRAPHS = 9
} pl_attr_kind;

/* A tensor-valued attribute (Constant's value, ConstantOfShape's value). */
typedef struct pl_attr_tensor {
    pl_dtype dtype;
    int32_t ndim;
    int64_t *dims;
    void *data;
    size_t nbytes;
    bool is_string;            /* int64 string ids (strtab.h) */
} pl_attr_tensor;

typedef struct pl_attr {
    char *name;
    pl_attr_kind kind;
    int64_t i;                 /* INT */
    double f;                  /* FLOAT */
    char *s;                   /* STRING (NUL-terminated; s_len bytes) */
    size_t s_len;
    size_t n;                  /* INTS, FLOATS, STRINGS: element count */
    int64_t *ints;
    double *floats;
    char **strings;
    pl_attr_tensor *tensor;    /* TENSOR */
    /* GRAPH (n == 1) and GRAPHS (n entries): nested graphs the attribute
     * owns. A body names tensors of enclosing graphs (outer-scope
     * references) simply by using them; validation marks them is_outer. */
    struct pl_graph **graphs;
} pl_attr;

typedef struct pl_graph_tensor {
    char *name;
    pl_dtype dtype;            /* lanes == 0: unknown yet */
    int32_t ndim;              /* -1: rank unknown */
    int64_t *dims;             /* ndim entries; -1 unknown */
    char **dim_params;         /* NULL, or ndim entries (NULL or a symbol) */
    /* Constant data (initializer): NULL when not constant. Row-major,
     * nbytes == product(dims) * dtype size. */
    void *data;
    size_t nbytes;
    bool data_borrowed;        /* data lies in memory the graph keeps alive */
    bool is_input;
    bool is_output;
    /* After validate, in a body only: the name is not defined in this
     * graph but in an enclosing one (an outer-scope reference). */
    bool is_outer;
    /* A string tensor (strtab.h): declared so by its format module, or
     * found so by pl_strings_encode; its dtype is then int64 ids. Read on
     * the graph that was imported; copies do not carry it. */
    bool is_string;
    pl_nid producer;           /* after validate */
    pl_nid *consumers;         /* after validate; a node appears once per use */
    size_t n_consumers;
} pl_graph_tensor;

typedef struct pl_graph_node {
    char *name;
    char *op;
    char *domain;              /* "" for the default ONNX domain */
    pl_attr *attrs;
    size_t n_attrs;
    pl_tid *inputs;            /* PL_TID_NONE for an absent optional input */
    size_t n_inputs;
    /* inputs[0 .. n_formal_inputs) are the node's own; after validate, a
     * node with GRAPH attributes lists after them the tensors its bodies
     * read from this graph's scope ("captures", ONNX's implicit inputs),
     * so that ordering, liveness, partitioning and planning see them. */
    size_t n_formal_inputs;
    pl_tid *outputs;           /* PL_TID_NONE for an optional output left out */
    size_t n_outputs;
} pl_graph_node;

typedef struct pl_graph pl_graph;

/* ---- building ---------------------------------------------------------- */

pl_status *pl_graph_create(pl_graph **out_graph);
/* The allocator of every block of G: the thread's current one (alloc.h)
 * when G was created. Views, builders and copies of G allocate with it. */
pl_allocator pl_graph_allocator(const pl_graph *g);
void pl_graph_destroy(pl_graph *graph);

/* The tensor named NAME, created (dtype unknown, rank unknown) if absent.
 * NAME must be non-empty. */
pl_status *pl_graph_tensor_get_or_add(pl_graph *g, const char *name,
                                      pl_tid *out_id);
/* The tensor named NAME, or PL_TID_NONE. */
pl_tid pl_graph_find_tensor(const pl_graph *g, const char *name);

/* Sets a tensor's dtype and shape (ndim -1 for unknown rank; dims may be
 * NULL then). dim_params may be NULL or have ndim entries (each NULL or a
 * symbol name). Fails on ndim > PL_GRAPH_MAX_RANK or a dim < -1. */
pl_status *pl_graph_set_type(pl_graph *g, pl_tid t, pl_dtype dtype,
                             int32_t ndim, const int64_t *dims,
                             const char *const *dim_params);

/* Makes T a constant with a copy of NBYTES of DATA. The byte count must match
 * the tensor's dtype and shape (set first), checked without overflow. */
pl_status *pl_graph_set_constant(pl_graph *g, pl_tid t, const void *data,
                                 size_t nbytes);
/* Same, but DATA stays where it is: the caller keeps it alive and unchanged
 * for the graph's lifetime (for example a mapping handed to
 * pl_graph_keep_mapping). */
pl_status *pl_graph_set_constant_ref(pl_graph *g, pl_tid t, const void *data,
                                     size_t nbytes);
/* Hands the graph a read-only mapping to munmap when it is destroyed. On
 * failure the graph has not taken it: the caller unmaps it. */
pl_status *pl_graph_keep_mapping(pl_graph *g, void *addr, size_t len);

/* Makes DATA (NBYTES, a block of the graph's allocator) constant T's bytes,
 * owned by the graph from now on (freed with it, also on failure). */
pl_status *pl_graph_set_constant_owned(pl_graph *g, pl_tid t, void *data, size_t nbytes);
/* Gives outer-scope reference T of validated body G the bytes of the
 * enclosing graph's constant (borrowed), which the body's inference then
 * reads (opset_control.c); G stays validated. */
pl_status *pl_graph_set_outer_constant(pl_graph *g, pl_tid t, const void *data, size_t nbytes);

/* The record of constants read out of the model file (filedata.h), or
 * NULL. The graph that was read owns it; graphs copied or rewritten from it
 * borrow it, as they borrow its constants. */
struct pl_filedata *pl_graph_filedata(const pl_graph *g);
void pl_graph_own_filedata(pl_graph *g, struct pl_filedata *f);

/* Makes G the owner of what it borrows from SRC, a graph it was rewritten
 * from (directly or through others): the constants of SRC or of its bodies
 * that G or its bodies read, SRC's file mappings and its file record.
 * *OUT_TAKEN then says SRC may be destroyed. Not taken, nothing moved, when
 * G reads inside one of SRC's constants other than at its start, or SRC's
 * file record is not G's (SRC must then live as long as G), or memory runs
 * out (the error). */
pl_status *pl_graph_take_from(pl_graph *g, pl_graph *src, bool *out_taken);

/* Removes T from the graph inputs (it stays a tensor of G). */
void pl_graph_drop_input(pl_graph *g, pl_tid t);

/* Empties the list of graph outputs (a body made into a graph of its own
 * keeps only the outputs it computes). */
void pl_graph_clear_outputs(pl_graph *g);

/* Appends T to the graph inputs / outputs (once each). */
pl_status *pl_graph_add_input(pl_graph *g, pl_tid t);
pl_status *pl_graph_add_output(pl_graph *g, pl_tid t);
/* Appends T to the outputs even when it is one already: a body may give
 * one tensor as two outputs (a Loop's carried value and its scan output). */
pl_status *pl_graph_add_output_again(pl_graph *g, pl_tid t);

/* Adds a node. On failure the node is not added, though tensors it named
 * may have been created. Inputs and outputs are tensor names (created if absent); an
 * empty or NULL name is an absent optional input or an optional output
 * nobody wants (at least one output must be named). Node names must be
 * unique and non-empty (a NULL name gets "<op>_<index>"). */
pl_status *pl_graph_add_node(pl_graph *g, const char *name, const char *op,
                             const char *domain, const char *const *inputs,
                             size_t n_inputs, const char *const *outputs,
                             size_t n_outputs, pl_nid *out_id);

/* Attributes of node N. Names are unique per node. The arrays are copied. */
pl_status *pl_graph_attr_int(pl_graph *g, pl_nid n, const char *name,
                             int64_t value);
pl_status *pl_graph_attr_float(pl_graph *g, pl_nid n, const char *name,
                               double value);
pl_status *pl_graph_attr_string(pl_graph *g, pl_nid n, const char *name,
                                const char *value, size_t len);
pl_status *pl_graph_attr_ints(pl_graph *g, pl_nid n, const char *name,
                              const int64_t *values, size_t count);
pl_status *pl_graph_attr_floats(pl_graph *g, pl_nid n, const char *name,
                                const double *values, size_t count);
pl_status *pl_graph_attr_strings(pl_graph *g, pl_nid n, const char *name,
                                 const char *const *values, size_t count);
pl_status *pl_graph_attr_tensor(pl_graph *g, pl_nid n, const char *name,
                                pl_dtype dtype, int32_t ndim,
                                const int64_t *dims, const void *data,
                                size_t nbytes);

/* The string table of an imported graph (strtab.h): NULL when it has
 * none; _make creates it (NULL when out of memory); _take hands it over
 * (the graph keeps none). */
struct pl_strtab *pl_graph_strtab(const pl_graph *g);
struct pl_strtab *pl_graph_strtab_make(pl_graph *g);
struct pl_strtab *pl_graph_strtab_take(pl_graph *g);

/* A GRAPH attribute holding BODY, and a GRAPHS attribute holding COUNT
 * bodies. Both take ownership of the bodies, even on failure. A body is
 * validated with the graph that holds it (pl_graph_validate), inherits its
 * opset imports, and may name tensors of any enclosing graph. */
pl_status *pl_graph_attr_graph(pl_graph *g, pl_nid n, const char *name,
                               pl_graph *body);
pl_status *pl_graph_attr_graphs(pl_graph *g, pl_nid n, const char *name,
                                pl_graph *const *bodies, size_t count);

/* A deep copy of G: tensors with their types, inputs, outputs, opsets,
 * nodes with their formal inputs and every attribute (bodies copied too).
 * Constants are not copied: the copy borrows SRC's bytes, so G must
 * outlive it. The copy is not validated. */
pl_status *pl_graph_copy(const pl_graph *g, pl_graph **out_copy);

/* The same copy without the nodes DROP marks (DROP[n] for node n), every
 * kept node reading tensor ALIAS[t] where G's read t (ALIAS has one entry
 * per tensor; t itself for no change). Tensors stay, used or not; the
 * graph's inputs and outputs are G's. The optimiser's rewrite (optimize.c). */
pl_status *pl_graph_copy_rewritten(const pl_graph *g, const bool *drop, const pl_tid *alias,
                                   pl_graph **out_copy);

/* A graph of the nodes KEEP marks (KEEP[n] for node n), every tensor of G
 * (same ids, constants borrowed), no inputs and the N_OUTPUTS tensors of
 * OUTPUTS as its outputs: what constant folding runs (fold.c). */
pl_status *pl_graph_extract(const pl_graph *g, const bool *keep, const pl_tid *outputs,
                            size_t n_outputs, pl_graph **out_graph);

/* G with Loop node ID no longer carrying the values HOIST marks (HOIST[k]
 * for carried value k, one its body passes through unchanged): the body
 * reads the value's initial tensor as an outer-scope reference instead of
 * a body input (its uses renamed), the body output and the Loop's final
 * value go, and the final value's readers read the initial tensor. The
 * caller checks that each is hoistable (pl_graph_carried_hoistable).
 * Constants are borrowed; the copy is not validated. */
pl_status *pl_graph_hoist_carried(const pl_graph *g, pl_nid id, const bool *hoist,
                                  pl_graph **out_graph);
/* Which carried values of Loop node ID of G (validated) are live (LIVE[k]
 * for carried value k): its final value is read (by a node, as a graph
 * output, or by name from a body), or the body's condition, a scan output
 * or a live value's result depends on it; and in *OUT_NODE_LIVE (freed
 * with pl_free) which body nodes those need. All live, and *OUT_NODE_LIVE
 * NULL, where the body cannot be read so (it has bodies of its own, whose
 * reads by name no edge shows). */
pl_status *pl_graph_loop_live_carried(const pl_graph *g, pl_nid id, bool *live,
                                      bool **out_node_live);
/* G with Loop node ID carrying only the values LIVE marks: the others'
 * initial inputs, body inputs, body results and final values go, and the
 * body keeps only the nodes NODE_LIVE marks (pl_graph_loop_live_carried).
 * Constants are borrowed; the copy is not validated. */
pl_status *pl_graph_drop_carried(const pl_graph *g, pl_nid id, const bool *live,
                                 const bool *node_live, pl_graph **out_graph);
/* Whether carried value K of Loop node ID of G (validated) can be hoisted:
 * its body output is its body input (or that value through nodes that give
 * it back: Identity, an Unsqueeze a Squeeze undoes, an Add or Sub of a
 * one-value zero between, as paddle2onnx passes its weights on; only a
 * -0.0 may come back +0.0), given once, no nested body reads it,
 * the body has no tensor of its own of the initial tensor's name, and
 * the final value is no graph output. */
bool pl_graph_carried_hoistable(const pl_graph *g, pl_nid id, size_t k);
/* Marks in MARK (one per node of Loop node ID's body, G validated) the
 * body nodes that may leave it, their count into *OUT_N. DEAD: the nodes
 * whose results nothing in the body reads, gives or passes to a nested
 * body, once their dead readers go (a pass-through chain left once its
 * carried value was hoisted: pl_graph_carried_hoistable). Else the nodes
 * that compute the same in every iteration: a deterministic op of the
 * default domain without bodies (no random op), every input it reads a
 * tensor of G (an outer-scope reference), a marked node's result or a
 * small constant of the body (axes, a shape: copied out with it), one at
 * least of the first two kinds, its outputs no body outputs, read by no
 * nested body and named by no tensor of G. */
pl_status *pl_graph_body_moves(const pl_graph *g, pl_nid id, bool dead, bool *mark,
                               size_t *out_n);
/* G with the body nodes MARK marks (pl_graph_body_moves) out of Loop node
 * ID's body: dropped (DEAD), or moved before the Loop, computed once, the
 * body reading what they computed from outside. Constants are borrowed;
 * the copy is not validated. */
pl_status *pl_graph_move_body_nodes(const pl_graph *g, pl_nid id, const bool *mark, bool dead,
                                    pl_graph **out_graph);
/* G with the product PRODUCT (a MatMul, or a Gemm, of body node GATHER's
 * rows by a matrix from outside) of Loop node ID's body moved before the
 * Loop: a MatMul of the whole outer tensor the Gather reads by that matrix
 * (its transpose for a Gemm's transB), into a new tensor NAME (which
 * neither G nor the body names yet), whose rows a Gather at the same index
 * then reads into the product's output (a Gemm's C added to them); it is
 * GATHER itself when PRODUCT was its only reader. The caller checks that
 * this is exact (pl_graph_hoist_loop_products): GATHER gathers along an
 * axis other than the last. Constants are borrowed; the copy is not
 * validated. */
pl_status *pl_graph_hoist_gathered_product(const pl_graph *g, pl_nid id, pl_nid gather,
                                           pl_nid product, const char *name,
                                           pl_graph **out_graph);
/* G with the product PRODUCT (a MatMul, or a Gemm, of the slice of scan
 * input SCAN by a matrix from outside) of Scan node ID's body moved before
 * the Scan: a MatMul of the whole input (scanned along AXIS) by that
 * matrix into a new tensor NAME, which the Scan scans as its last scan
 * input, the product's output its slice (a Gemm's C added to it); scan
 * input SCAN goes when the product was its slice's only reader. The
 * caller checks that this is exact: AXIS is not the input's last.
 * Constants are borrowed; the copy is not validated. */
pl_status *pl_graph_hoist_scanned_product(const pl_graph *g, pl_nid id, pl_nid product,
                                          size_t scan, int64_t axis, const char *name,
                                          pl_graph **out_graph);

/* G with node N (an If, or anything whose outputs BODY computes) replaced
 * by BODY's nodes: body tensors keep their names where G has none such
 * (else NAME__<node name>), a body output its own node makes is written
 * straight into N's output, any other reaches it through an Identity;
 * outer-scope references read G's tensors. Constants are borrowed (G
 * must outlive the copy); the copy is not validated. */
pl_status *pl_graph_inline_branch(const pl_graph *g, pl_nid n, const pl_graph *body,
                                  pl_graph **out_graph);

/* Notes on G (at most 16 kept): what type inference overrode of what the
 * model declared (opset.c's lenient merge of a declared output shape), for
 * the model's description. pl_graph_note copies the formatted text; false
 * only when out of memory. */
bool pl_graph_note(pl_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t pl_graph_note_count(const pl_graph *g);
const char *pl_graph_note_at(const pl_graph *g, size_t i);
void pl_graph_clear_notes(pl_graph *g);

/* Rewriting a node (the opset conversion, opset_upgrade.c). Both invalidate
 * the graph: validate again before reading producers, consumers or the
 * topological order. */

/* Gives node ID another op and domain: a rewrite that turns a node into
 * another op of its inputs, such as the last step of an expanded function
 * (opset_lower.c). The caller fixes inputs and attributes to match. */
pl_status *pl_graph_node_set_op(pl_graph *g, pl_nid id, const char *domain, const char *op);
/* Replaces node ID's outputs (PL_TID_NONE for one left out): a rewrite
 * that hands an output to a node it adds. */
pl_status *pl_graph_node_set_outputs(pl_graph *g, pl_nid id, const pl_tid *outputs,
                                     size_t n_outputs);

/* Copies every attribute of SRC (a node of any graph; bodies deep-copied)
 * onto node N of DST. */
pl_status *pl_graph_node_copy_attrs(pl_graph *dst, pl_nid n, const pl_graph_node *src);

/* Removes attribute NAME of node N; false when the node has none of that
 * name (nothing changes then). */
bool pl_graph_node_remove_attr(pl_graph *g, pl_nid n, const char *name);

/* Replaces the inputs of node N with the N_INPUTS tensor ids of INPUTS
 * (PL_TID_NONE: an absent optional input). The ids must name tensors of G.
 * On failure the node keeps its inputs. */
pl_status *pl_graph_node_set_inputs(pl_graph *g, pl_nid n, const pl_tid *inputs,
                                    size_t n_inputs);

/* Gives constant T the NDIM dims DIMS, all known, of as many elements as
 * it has: its bytes stay as they are (a reshape). */
pl_status *pl_graph_reshape_constant(pl_graph *g, pl_tid t, int32_t ndim,
                                     const int64_t *dims);

/* Records an opset import (domain "" is ONNX's default, also spelled
 * "ai.onnx": both name one entry). A later call for a domain replaces the
 * version. */
pl_status *pl_graph_set_opset(pl_graph *g, const char *domain, int64_t version);
/* The imported version of DOMAIN, or 0. */
int64_t pl_graph_opset(const pl_graph *g, const char *domain);

/* A sequence value (ONNX's sequence ops) as the inference walk follows
 * it (opset_sequence.c): either a list of tensors of this graph, known
 * when the graph is rewritten (PL_SEQ_LIST: ELEMS), or the tensor of the
 * annotated id itself holding the elements stacked along AXIS
 * (PL_SEQ_STACKED: element i is that tensor's index i on AXIS, the axis
 * removed). ELEM_DTYPE: the elements' type (unknown lanes 0 for an empty
 * list whose type nobody gave). */
typedef enum { PL_SEQ_LIST = 1, PL_SEQ_STACKED = 2 } pl_seq_kind;
typedef struct pl_graph_seq {
    pl_seq_kind kind;
    int64_t axis;
    pl_dtype elem_dtype;
    size_t n;
    pl_tid *elems;
} pl_graph_seq;

/* Marks tensor T of G as the sequence SEQ (copied; a later call replaces
 * it). */
pl_status *pl_graph_set_seq(pl_graph *g, pl_tid t, const pl_graph_seq *seq);
/* Forgets every sequence mark: once the walk that rewrote the sequence
 * ops ends, the tensors are tensors (a later walk of the same graph must
 * not take a rewritten op's input for a sequence). */
void pl_graph_clear_seqs(pl_graph *g);
/* The sequence tensor T holds, or NULL when it holds a tensor. */
const pl_graph_seq *pl_graph_seq_of(const pl_graph *g, pl_tid t);

/* Nested graphs deeper than this are refused. */
#define PL_GRAPH_MAX_DEPTH 32

/* Checks the graph and links it (see the header comment). Errors name the
 * node or tensor: "node 'conv1' (Conv): input 'x' is not defined by any
 * node, input or constant". After success the topological order is
 * available; any later modification invalidates it (validate again).
 * Bodies held by GRAPH attributes are validated too, each seeing the
 * names of the graphs that enclose it; the tensors a body reads from an
 * enclosing scope become captures of its node (pl_graph_node). */
pl_status *pl_graph_validate(pl_graph *g);

/* ---- reading ----------------------------------------------------------- */

/* Accessors (pl_graph_get_tensor, pl_graph_get_node) return NULL for an
 * index out of range. */

size_t pl_graph_tensor_count(const pl_graph *g);
size_t pl_graph_node_count(const pl_graph *g);
const pl_graph_tensor *pl_graph_get_tensor(const pl_graph *g, pl_tid t);
pl_graph_tensor *pl_graph_get_tensor_mut(pl_graph *g, pl_tid t);
const pl_graph_node *pl_graph_get_node(const pl_graph *g, pl_nid n);
pl_nid pl_graph_find_node(const pl_graph *g, const char *name);
size_t pl_graph_input_count(const pl_graph *g);
pl_tid pl_graph_input(const pl_graph *g, size_t i);
size_t pl_graph_output_count(const pl_graph *g);
pl_tid pl_graph_output(const pl_graph *g, size_t i);
size_t pl_graph_opset_count(const pl_graph *g);
void pl_graph_opset_at(const pl_graph *g, size_t i, const char **out_domain,
                       int64_t *out_version);

/* Node ids in a topological order (after validate; NULL before). */
const pl_nid *pl_graph_topo_order(const pl_graph *g);

/* The attribute NAME of node N, or NULL. */
const pl_attr *pl_graph_node_attr(const pl_graph_node *node, const char *name);

/* Byte size of a fully known tensor type: false when the rank or a dim is
 * unknown, the dtype unknown, or the size overflows size_t. */
bool pl_graph_tensor_bytes(const pl_graph_tensor *t, size_t *out_bytes);

/* Number of elements of DIMS (all >= 0); false on overflow. */
bool pl_dims_elements(const int64_t *dims, int32_t ndim, size_t *out_elements);

/* "f32", "i64", …; "unknown" for lanes == 0; "invalid" otherwise. */
const char *pl_dtype_name(pl_dtype dtype);
/* Parses a dtype name; false if unknown. */
bool pl_dtype_parse(const char *name, pl_dtype *out_dtype);

#endif
