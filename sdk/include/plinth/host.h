/* plinth/host.h — the host table: what the core lends to a module.
 *
 * A module never links against the core. Everything it needs from the core
 * arrives through this table, handed to the module's entry point. The table is
 * one static object of the core, valid from entry until the module is
 * unloaded. Functions that concern one runtime's instance of the module take
 * the pl_host_ctx that the core passes to the module's init; a module keeps it
 * in its instance and hands it back. */
#ifndef PLINTH_HOST_H
#define PLINTH_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/abi.h"
#include "plinth/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core's handle for one loaded instance of a module within one runtime.
 * Opaque; valid from init until shutdown returns. */
typedef struct pl_host_ctx pl_host_ctx;

/* An asynchronous completion. The core gives one to a module's async entry
 * points; the module signals it exactly once, from any thread, with
 * host->complete. Opaque. */
typedef struct pl_completion pl_completion;

/* A read-only view of a graph or subgraph, and a builder for import. Both
 * are opaque; their functions live in pl_graph_api. */
typedef struct pl_graph_view pl_graph_view;
typedef struct pl_graph_builder pl_graph_builder;

/* Log levels, most severe first. */
typedef enum pl_log_level {
    PL_LOG_ERROR = 0,
    PL_LOG_WARN = 1,
    PL_LOG_INFO = 2,
    PL_LOG_DEBUG = 3
} pl_log_level;

/* Body of a parallel loop: process indices [begin, end). `worker` is the
 * index of the thread running this chunk, in [0, thread_count), so a body may
 * keep per-thread scratch. Must not fail; must not block on other chunks. */
typedef void (*pl_parallel_fn)(void *arg, size_t begin, size_t end,
                               int worker);

/* Attribute kinds of the graph view. */
typedef enum pl_graph_attr_kind {
    PL_GRAPH_ATTR_NONE = 0,
    PL_GRAPH_ATTR_INT = 1,
    PL_GRAPH_ATTR_FLOAT = 2,
    PL_GRAPH_ATTR_STRING = 3,
    PL_GRAPH_ATTR_INTS = 4,
    PL_GRAPH_ATTR_FLOATS = 5,
    PL_GRAPH_ATTR_STRINGS = 6,
    PL_GRAPH_ATTR_TENSOR = 7,
    PL_GRAPH_ATTR_GRAPH = 8,   /* a body of control flow (If, Loop, Scan) */
    PL_GRAPH_ATTR_GRAPHS = 9
} pl_graph_attr_kind;

/* The read-only graph view: how a module reads the graph or subgraph the core
 * offers it (supported_nodes, compile, get_kernel) without parsing anything.
 *
 * A view lists nodes, indexed 0 .. node_count-1 in a valid execution order,
 * and refers to tensors by index (the indices of the whole graph, stable for
 * the view's life; -1 for an absent optional input). Its inputs are the
 * tensors its nodes read but that no node of the view produces (constants
 * excepted); its outputs are the tensors its nodes produce that are read
 * outside the view or are graph outputs. All pointers returned are owned by
 * the core and valid while the view is (for the duration of the module call
 * that received it, unless the call says otherwise). Functions taking an
 * out-parameter return 1 when the thing exists (with that kind) and 0
 * otherwise, leaving the out-parameters untouched. Thread-safe for reading. */
typedef struct pl_graph_api {
    pl_abi_header header;

    /* nodes */
    size_t (*node_count)(const pl_graph_view *view);
    const char *(*node_name)(const pl_graph_view *view, size_t node);
    const char *(*node_op)(const pl_graph_view *view, size_t node);
    /* "" for the default ONNX domain */
    const char *(*node_domain)(const pl_graph_view *view, size_t node);
    /* the opset version the model imports for the node's domain */
    int64_t (*node_opset)(const pl_graph_view *view, size_t node);
    size_t (*node_input_count)(const pl_graph_view *view, size_t node);
    size_t (*node_output_count)(const pl_graph_view *view, size_t node);
    int64_t (*node_input)(const pl_graph_view *view, size_t node, size_t i);
    int64_t (*node_output)(const pl_graph_view *view, size_t node, size_t i);

    /* attributes of a node, by name */
    pl_graph_attr_kind (*attr_kind)(const pl_graph_view *view, size_t node,
                                    const char *name);
    int (*attr_int)(const pl_graph_view *view, size_t node, const char *name,
                    int64_t *out_value);
    int (*attr_float)(const pl_graph_view *view, size_t node,
                      const char *name, double *out_value);
    int (*attr_string)(const pl_graph_view *view, size_t node,
                       const char *name, const char **out_value,
                       size_t *out_len);
    int (*attr_ints)(const pl_graph_view *view, size_t node, const char *name,
                     const int64_t **out_values, size_t *out_count);
    int (*attr_floats)(const pl_graph_view *view, size_t node,
                       const char *name, const double **out_values,
                       size_t *out_count);
    int (*attr_strings)(const pl_graph_view *view, size_t node,
                        const char *name, const char *const **out_values,
                        size_t *out_count);
    /* A tensor attribute: *out_tensor describes it (host memory, data
     * read-only, shape owned by the core). */
    int (*attr_tensor)(const pl_graph_view *view, size_t node,
                       const char *name, pl_tensor *out_tensor);

    /* tensors */
    size_t (*tensor_count)(const pl_graph_view *view);
    const char *(*tensor_name)(const pl_graph_view *view, int64_t tensor);
    /* dtype and shape; ndim -1 means the rank is unknown, a dim -1 unknown */
    int (*tensor_type)(const pl_graph_view *view, int64_t tensor,
                       pl_dtype *out_dtype, int32_t *out_ndim,
                       const int64_t **out_dims);
    /* the bytes of a constant (row-major, host memory) */
    int (*tensor_constant)(const pl_graph_view *view, int64_t tensor,
                           const void **out_data, size_t *out_bytes);

    /* the view's boundary */
    size_t (*input_count)(const pl_graph_view *view);
    int64_t (*input)(const pl_graph_view *view, size_t i);
    size_t (*output_count)(const pl_graph_view *view);
    int64_t (*output)(const pl_graph_view *view, size_t i);

    /* The view as Plinth's JSON graph format (docs/graph-format.md), with
     * shapes and dtypes; constants are referenced by tensor name and read
     * with tensor_constant. NULL when out of memory. */
    const char *(*json)(const pl_graph_view *view);

    /* ---- the builder: how a format module (model import) makes a graph.
     * The core checks everything (names, types, sizes) and says what is
     * wrong; the module names its file and position in its own errors.
     * Strings and arrays are copied. Tensors are created on first mention;
     * nodes name their inputs and outputs ("" = absent optional input or
     * unwanted optional output). After import_model returns, the core
     * validates the graph and infers every type. */

    /* The folder of the model file being imported (external data is
     * relative to it). */
    const char *(*builder_model_dir)(pl_graph_builder *b);
    /* Records the opset version a domain is imported at. */
    pl_status *(*builder_opset)(pl_graph_builder *b, const char *domain,
                                int64_t version);
    /* Declares the dtype and shape of a tensor (graph input, output or
     * value_info); ndim -1: rank unknown; a dim -1: unknown, with its symbol
     * in dim_params[i] if any (dim_params may be NULL). */
    pl_status *(*builder_tensor)(pl_graph_builder *b, const char *name,
                                 pl_dtype dtype, int32_t ndim,
                                 const int64_t *dims,
                                 const char *const *dim_params);
    /* A constant (initializer) with its bytes, copied: row-major,
     * little-endian, exactly the size its dtype and shape give. */
    pl_status *(*builder_constant)(pl_graph_builder *b, const char *name,
                                   pl_dtype dtype, int32_t ndim,
                                   const int64_t *dims, const void *data,
                                   size_t nbytes);
    /* A constant whose bytes lie in another file (ONNX external data):
     * LOCATION is relative to the model's folder; the core refuses absolute
     * paths, `..`, and links leading out of the folder, and checks offset
     * and length against the file's size. length -1: to the end. */
    pl_status *(*builder_constant_file)(pl_graph_builder *b, const char *name,
                                        pl_dtype dtype, int32_t ndim,
                                        const int64_t *dims,
                                        const char *location, int64_t offset,
                                        int64_t length);
    pl_status *(*builder_input)(pl_graph_builder *b, const char *name);
    pl_status *(*builder_output)(pl_graph_builder *b, const char *name);
    /* Adds a node; *out_node identifies it for its attributes. */
    pl_status *(*builder_node)(pl_graph_builder *b, const char *name,
                               const char *op, const char *domain,
                               const char *const *inputs, size_t n_inputs,
                               const char *const *outputs, size_t n_outputs,
                               size_t *out_node);
    pl_status *(*builder_attr_int)(pl_graph_builder *b, size_t node,
                                   const char *name, int64_t value);
    pl_status *(*builder_attr_float)(pl_graph_builder *b, size_t node,
                                     const char *name, double value);
    pl_status *(*builder_attr_string)(pl_graph_builder *b, size_t node,
                                      const char *name, const char *value,
                                      size_t len);
    pl_status *(*builder_attr_ints)(pl_graph_builder *b, size_t node,
                                    const char *name, const int64_t *values,
                                    size_t count);
    pl_status *(*builder_attr_floats)(pl_graph_builder *b, size_t node,
                                      const char *name, const double *values,
                                      size_t count);
    pl_status *(*builder_attr_strings)(pl_graph_builder *b, size_t node,
                                       const char *name,
                                       const char *const *values, size_t count);
    pl_status *(*builder_attr_tensor)(pl_graph_builder *b, size_t node,
                                      const char *name, pl_dtype dtype,
                                      int32_t ndim, const int64_t *dims,
                                      const void *data, size_t nbytes);

    /* ---- appended in ABI 1.2: bodies of control flow (If, Loop, Scan).
     * A core of ABI 1.0 or 1.1 has neither: check them with PL_ABI_HAS_FN
     * (or the table's size against PL_GRAPH_API_SIZE_1_2) before calling
     * them, and refuse a model with bodies when they are missing. */

    /* Makes attribute NAME of NODE a graph (a body) and gives in *out_body
     * a builder for it, filled with the same builder functions as the
     * model's graph (its builder_opset is refused: a body speaks its
     * model's opsets). A body lists its own inputs, outputs, constants and
     * nodes, and may name tensors of the graphs enclosing it. The body's
     * builder is the core's and lives until import_model returns. */
    pl_status *(*builder_attr_graph)(pl_graph_builder *b, size_t node,
                                     const char *name,
                                     pl_graph_builder **out_body);
    /* The same for a list of COUNT bodies (ONNX's GRAPHS kind):
     * out_bodies receives COUNT builders. */
    pl_status *(*builder_attr_graphs)(pl_graph_builder *b, size_t node,
                                      const char *name, size_t count,
                                      pl_graph_builder **out_bodies);

    /* ---- appended in ABI 1.2 too: a data file checked before any
     * constant names it. Check it with PL_ABI_HAS_FN. */

    /* Maps LOCATION under the rule of builder_constant_file (relative to
     * the model's folder, no `..`, no link leading out, a regular file) and
     * gives its size in *out_size; later builder_constant_file calls naming
     * the same LOCATION use this mapping. WHAT names the file in messages
     * ("sidecar"). A format whose header names a data file (Plinth's JSON
     * "weights") checks it here, so that a bad file is refused even when
     * no constant uses it, and can check offsets against its size. */
    pl_status *(*builder_data_file)(pl_graph_builder *b, const char *location,
                                    const char *what, uint64_t *out_size);

    /* ---- appended in ABI 1.5: constants the core reads from the model
     * file itself, and may drop while the modules hold their own copies.
     * Check them with PL_ABI_HAS_FN. */

    /* A constant whose LENGTH bytes lie at OFFSET of the model file being
     * imported (the PATH import_model was given), row-major and
     * little-endian, exactly the size its dtype and shape give: an ONNX
     * initializer's raw_data, say. The core reads them itself, so they are
     * not resident twice during the import (in the module's mapping of the
     * file and in the core's copy), and may drop its copy once every
     * module that reads the constant keeps its own (PL_CAP_OWNS_CONSTANTS),
     * reading it again from the file when needed. The core refuses an
     * offset and length past the file's end. */
    pl_status *(*builder_constant_model_file)(pl_graph_builder *b, const char *name,
                                              pl_dtype dtype, int32_t ndim,
                                              const int64_t *dims, int64_t offset,
                                              int64_t length);
    /* Says, during compile (or import_compiled) of VIEW, that the module
     * has taken what it needs of constant TENSOR's bytes and holds no
     * pointer into them: the core may drop its copy at once when nothing
     * else reads it, so that compiling a big subgraph does not hold every
     * weight twice at its end. A later tensor_constant for TENSOR still
     * works (the core reads it back first); pointers it gave before this
     * call do not. A module with PL_CAP_OWNS_CONSTANTS may call it; the
     * core drops nothing otherwise. */
    void (*tensor_constant_done)(const pl_graph_view *view, int64_t tensor);

    /* ---- appended in ABI 1.6 (check with PL_ABI_HAS_FN) ---------------- */

    /* When TENSOR is a constant: its size in bytes and the digest of its
     * bytes, pl_hash_bytes from PL_HASH_SEED (plinth/graph_hash.h), and 1;
     * else 0. The same value the module would compute from
     * tensor_constant's bytes, but the core may know it without reading
     * them (a model's weights kept in the compile cache): a hash of the
     * view (pl_hash_view) then touches no weight. */
    int (*tensor_digest)(const pl_graph_view *view, int64_t tensor, size_t *out_bytes,
                         uint64_t *out_digest);

    /* ---- appended in ABI 1.7 (check with PL_ABI_HAS_FN) ---------------- */

    /* The bytes of the constants VIEW's nodes read, each counted once: what
     * a run of the view reads besides its activations (plinth/cost.h asks
     * whether that stays in a core's cache from one run to the next).
     * Reads no constant. */
    size_t (*constant_bytes)(const pl_graph_view *view);

    /* ---- appended in ABI 1.10 (check with PL_ABI_HAS_FN) --------------- */

    /* While VIEW compiles: the compiled subgraph will read constant
     * TENSOR's bytes in place, where tensor_constant gave them, for as long
     * as it lives, instead of keeping a copy (a module with
     * PL_CAP_OWNS_CONSTANTS whose kernel takes a weight as the model stores
     * it: one copy of a big weight in memory, none made at load). 1: the
     * core keeps those bytes resident and where they are until the session
     * is destroyed, and ignores tensor_constant_done for TENSOR; 0: it
     * cannot promise that (another session is being created from the same
     * model at the same time, say), and the module copies as before. */
    int (*tensor_constant_keep)(const pl_graph_view *view, int64_t tensor);

    /* ---- appended in ABI 1.15 (check with PL_ABI_HAS_FN) --------------- */

    /* While VIEW compiles: 1 when the core will then export what compile
     * makes of it (export_compiled, to store it in the compile cache), 0
     * when it will not (no cache folder, a plan for few runs). A module
     * whose compile hashes the view's constants only for its export (the
     * hash an import checks) may skip that when 0: hashing a ViT-base's
     * 340 MB of weights took a quarter of its session creation. Without
     * this function, assume 1. */
    int (*compile_exported)(const pl_graph_view *view);

    /* ---- appended in ABI 1.16 (check with PL_ABI_HAS_FN) --------------- */

    /* 1 when the core will compile other views of the same constants again
     * (a staged session's tails: one plan per input signature), 0 when it
     * has no reason to think so. A module that lays out constant weights
     * and shares such copies between compiles may then share from the
     * first compile on: keyed by the constant's address and layout where
     * tensor_constant_keep promised the bytes stay there (every holder of
     * the copy keeps its constant at that address, so a later compile
     * that finds the address finds the same bytes: no digest needed).
     * Without this function, assume 0. */
    int (*compile_repeated)(const pl_graph_view *view);
} pl_graph_api;

/* ---- custom operators ---------------------------------------------------
 *
 * A module may teach the core an operator of its own (a fused op, a vendor
 * op in its own domain) so that graphs using it validate and get shapes. The
 * core owns the schema; the module supplies the shape function. */

/* The context of one shape-function call. Opaque; valid during the call. */
typedef struct pl_shape_ctx pl_shape_ctx;

/* Infers the outputs of one node of a custom op: read input types with
 * host->shape_input, attributes with host->graph on host->shape_node's view,
 * and set every output with host->shape_set_output. A refusal returns a
 * status (made with host->status_create) naming what is wrong. */
typedef pl_status *(*pl_shape_fn)(void *user, pl_shape_ctx *ctx);

/* A custom operator. Strings are copied by the core. */
typedef struct pl_custom_op {
    pl_abi_header header;
    const char *name;         /* "FusedGelu" */
    const char *domain;       /* "com.vendor"; "" is ONNX's, which is refused */
    int64_t since_version;    /* opset version of the domain, >= 1 */
    int32_t min_inputs;
    int32_t max_inputs;       /* -1: any number */
    int32_t min_outputs;
    int32_t max_outputs;      /* -1: any number */
    pl_shape_fn infer;        /* required */
    void *user;               /* handed to infer; must outlive the runtime */
} pl_custom_op;

/* The host table. Every function is thread-safe unless it says otherwise. */
typedef struct pl_host_api {
    pl_abi_header header;

    /* Writes one log line attributed to the module ("[cpu] ..."). (Not
     * named `log`: <tgmath.h> makes that a macro.) Lines
     * below the runtime's `log` level are dropped. ctx may be NULL (before
     * init), and the line is then attributed to "module". */
    void (*log_message)(pl_host_ctx *ctx, pl_log_level level,
                        const char *fmt, ...) PL_PRINTF_LIKE(3, 4);

    /* Makes a status. The message should say what failed and why; the core
     * prefixes nothing. Returns a valid status even when out of memory (a
     * shared static one), never NULL for code != PL_CODE_OK; returns NULL for
     * PL_CODE_OK. */
    pl_status *(*status_create)(pl_code code, const char *fmt, ...)
        PL_PRINTF_LIKE(2, 3);
    /* va_list form of status_create. */
    pl_status *(*status_createv)(pl_code code, const char *fmt, va_list ap);
    /* The code of a status; PL_CODE_OK for NULL. */
    pl_code (*status_code)(const pl_status *status);
    /* The message of a status, valid until it is freed; "" for NULL. */
    const char *(*status_message)(const pl_status *status);
    /* Frees a status. NULL is a no-op. */
    void (*status_free)(pl_status *status);

    /* The value of KEY in this module's own backend.ini section, or NULL.
     * Valid until shutdown. The same keys reach configure(). */
    const char *(*config_get)(pl_host_ctx *ctx, const char *key);
    /* Number of keys in the module's section, and the I-th of them in file
     * order (NULL outputs past the end). Valid until shutdown. */
    size_t (*config_count)(pl_host_ctx *ctx);
    void (*config_at)(pl_host_ctx *ctx, size_t i, const char **out_key,
                      const char **out_value);

    /* Host memory with the given alignment (a power of two, or 0 for the
     * default of 64 bytes). NULL on failure or when bytes is 0. Memory the
     * module gives the core to free must come from here. */
    void *(*host_alloc)(pl_host_ctx *ctx, size_t bytes, size_t alignment);
    /* Frees host_alloc memory. NULL is a no-op. */
    void (*host_free)(pl_host_ctx *ctx, void *ptr);

    /* Runs fn over [0, n) in chunks of about `grain` indices or more (n /
     * grain of them rounded, split evenly: none below 3/4 of grain) on the
     * runtime's CPU thread pool and returns when all chunks are done. The
     * caller takes part, so it is safe from inside engine work and from
     * within another parallel_for (which then runs inline). This is the only
     * CPU thread pool a module should use: it is sized by `threads`. */
    void (*parallel_for)(pl_host_ctx *ctx, size_t n, size_t grain,
                         pl_parallel_fn fn, void *arg);
    /* Number of threads parallel_for may use, the caller included (>= 1). */
    int (*thread_count)(pl_host_ctx *ctx);

    /* Signals an asynchronous completion. Takes ownership of status (NULL for
     * success). Call exactly once per completion, from any thread. */
    void (*complete)(pl_completion *completion, pl_status *status);

    /* The graph view (see pl_graph_api). Check it with PL_ABI_HAS_FN before
     * calling a function a newer minor added. */
    const pl_graph_api *graph;

    /* Registers a custom operator for this runtime (call it from init). A
     * name already known in that domain and version is an error. */
    pl_status *(*register_op)(pl_host_ctx *ctx, const pl_custom_op *op);
    /* During a shape function: the number of inputs the node lists, the
     * type of input I (0 when absent; ndim -1 when the rank is unknown, a
     * dim -1 when unknown), the view holding the node and its index there
     * (for attributes), and setting output I. */
    size_t (*shape_input_count)(pl_shape_ctx *ctx);
    size_t (*shape_output_count)(pl_shape_ctx *ctx);
    int (*shape_input)(pl_shape_ctx *ctx, size_t i, pl_dtype *out_dtype,
                       int32_t *out_ndim, const int64_t **out_dims);
    const pl_graph_view *(*shape_node)(pl_shape_ctx *ctx, size_t *out_node);
    pl_status *(*shape_set_output)(pl_shape_ctx *ctx, size_t i,
                                   pl_dtype dtype, int32_t ndim,
                                   const int64_t *dims);
} pl_host_api;

/* The struct_size of a complete graph table of ABI 1.0 and 1.1 (through
 * builder_attr_tensor) and of ABI 1.2 (through builder_data_file: the
 * builders of control-flow bodies and the data-file check). A module that needs the 1.2 functions
 * checks `host->graph->header.struct_size >= PL_GRAPH_API_SIZE_1_2`, or
 * each function with PL_ABI_HAS_FN, before calling them. */
#define PL_GRAPH_API_SIZE_1_0 \
    (offsetof(pl_graph_api, builder_attr_tensor) + sizeof(void (*)(void)))
#define PL_GRAPH_API_SIZE_1_2 \
    (offsetof(pl_graph_api, builder_data_file) + sizeof(void (*)(void)))
/* ... and of ABI 1.5 (through tensor_constant_done). */
#define PL_GRAPH_API_SIZE_1_5 \
    (offsetof(pl_graph_api, tensor_constant_done) + sizeof(void (*)(void)))
/* ... and of ABI 1.6 (through tensor_digest). */
#define PL_GRAPH_API_SIZE_1_6 \
    (offsetof(pl_graph_api, tensor_digest) + sizeof(void (*)(void)))
/* ... and of ABI 1.7 (through constant_bytes). */
#define PL_GRAPH_API_SIZE_1_7 \
    (offsetof(pl_graph_api, constant_bytes) + sizeof(void (*)(void)))
/* ... and of ABI 1.10 (through tensor_constant_keep). */
#define PL_GRAPH_API_SIZE_1_10 \
    (offsetof(pl_graph_api, tensor_constant_keep) + sizeof(void (*)(void)))

/* The struct_size of a complete ABI 1.0 host table (through
 * shape_set_output). A module may call every function up to there once the
 * core's table is at least this large (PL_MODULE_DEFINE_ENTRY checks it);
 * a function a later minor appends is checked with PL_ABI_HAS_FN. */
#define PL_HOST_API_SIZE_1_0 \
    (offsetof(pl_host_api, shape_set_output) + sizeof(void (*)(void)))

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_HOST_H */
