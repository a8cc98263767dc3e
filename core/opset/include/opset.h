/* opset.h — op schemas and shape/dtype inference.
 *
 * A schema says what an op means: its arity, its attributes with their
 * defaults, the dtypes each input and output accepts (grouped as ONNX's
 * type constraints, "T" shared by several inputs), which input each output
 * may overwrite in place, and a function that infers output dtypes and
 * shapes. Semantics follow ONNX's operator definitions (ai.onnx opset 7 to
 * 17, with opset 13 as the reference; graphs of opset 1 to 6 are converted
 * to 7 by inference, opset_upgrade.c); no computation lives here except
 * the propagation of small integer "known values" that shape inference
 * needs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains).
 *
 * A pl_opset is a registry of schemas owned by one runtime: it starts with
 * every built-in schema, and modules add schemas for their own custom ops;
 * both enter through pl_opset_register. A set is not thread-safe for writing; any
 * number of threads may look schemas up and run inference (on different
 * graphs) while nobody registers. */
#ifndef PL_CORE_OPSET_H
#define PL_CORE_OPSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* ---- dtype sets --------------------------------------------------------- */

/* A set of dtypes, one bit per dtype of the SDK. */
typedef uint32_t pl_dtype_set;
#define PL_TS_F32 (1u << 0)
#define PL_TS_F64 (1u << 1)
#define PL_TS_F16 (1u << 2)
#define PL_TS_BF16 (1u << 3)
#define PL_TS_U8 (1u << 4)
#define PL_TS_I8 (1u << 5)
#define PL_TS_I32 (1u << 6)
#define PL_TS_I64 (1u << 7)
#define PL_TS_BOOL (1u << 8)
#define PL_TS_I16 (1u << 9)
#define PL_TS_U16 (1u << 10)
#define PL_TS_U32 (1u << 11)
#define PL_TS_U64 (1u << 12)
#define PL_TS_FLOAT (PL_TS_F32 | PL_TS_F64 | PL_TS_F16 | PL_TS_BF16)
#define PL_TS_SINT (PL_TS_I8 | PL_TS_I16 | PL_TS_I32 | PL_TS_I64)
#define PL_TS_UINT (PL_TS_U8 | PL_TS_U16 | PL_TS_U32 | PL_TS_U64)
#define PL_TS_INT (PL_TS_UINT | PL_TS_SINT)
#define PL_TS_NUM (PL_TS_FLOAT | PL_TS_INT)
#define PL_TS_ALL (PL_TS_NUM | PL_TS_BOOL)

/* The bit of DTYPE, 0 for an unknown or unsupported dtype. */
pl_dtype_set pl_dtype_set_of(pl_dtype dtype);

/* ---- schemas ------------------------------------------------------------ */

/* An attribute an op accepts. The default is read from the field matching
 * KIND; a required attribute has none. INTS and FLOATS defaults are arrays
 * (NULL with count 0: no default, the inference function decides). */
typedef struct pl_attr_spec {
    const char *name;
    pl_attr_kind kind;
    bool required;
    int64_t default_int;
    double default_float;
    const char *default_string;
    const int64_t *default_ints;
    size_t n_default_ints;
} pl_attr_spec;

/* A named type constraint: the dtypes a group of inputs and outputs may
 * have. Every input and output naming the same constraint has one dtype. */
typedef struct pl_type_constraint {
    const char *name;          /* "T", "T1", …; NULL ends the list */
    pl_dtype_set allowed;
} pl_type_constraint;

/* Limits of a schema's fixed tables. */
#define PL_OP_MAX_TYPES 4      /* type constraints */
#define PL_OP_MAX_FORMAL 8     /* described inputs / outputs */
#define PL_OP_VARIADIC INT32_MAX

typedef struct pl_infer_ctx pl_infer_ctx;

/* Infers the outputs of the node in CTX: reads inputs, attributes and known
 * values through the pl_infer_* accessors and sets outputs with
 * pl_infer_set_output. Outputs whose dtype follows a type constraint bound
 * by an input are preset to it. Returns NULL, or a status made with
 * pl_infer_error. */
typedef pl_status *(*pl_infer_fn)(pl_infer_ctx *ctx);

/* One op at one range of opset versions: it applies from since_version
 * until the next schema of the same domain and name. Input and output
 * types name a constraint of TYPES (NULL: any dtype); beyond the described
 * ones, the last described type applies (variadic ops). */
typedef struct pl_op_schema {
    const char *name;
    const char *domain;        /* "" (or "ai.onnx") for ONNX's default */
    int64_t since_version;
    int32_t min_inputs;
    int32_t max_inputs;        /* PL_OP_VARIADIC: unbounded */
    int32_t min_outputs;
    int32_t max_outputs;
    const pl_attr_spec *attrs;
    size_t n_attrs;
    pl_type_constraint types[PL_OP_MAX_TYPES];
    const char *input_types[PL_OP_MAX_FORMAL];
    const char *output_types[PL_OP_MAX_FORMAL];
    /* inplace_input[k] for k < n_inplace: the input output k may overwrite
     * when their dtype and byte size match (-1: none). Outputs from
     * n_inplace on overwrite nothing, so a zeroed schema claims none. */
    int32_t n_inplace;
    int32_t inplace_input[PL_OP_MAX_FORMAL];
    pl_infer_fn infer;         /* NULL: outputs keep their declared types */
    /* Handed back by pl_infer_user_data: lets one host-side trampoline
     * serve the shape functions of many modules' custom ops. */
    void *infer_user;
    /* Accept attributes the schema does not list (custom ops whose module
     * reads more than it declares). Built-in schemas refuse them. */
    bool allow_unknown_attrs;
} pl_op_schema;

/* The input output OUTPUT_INDEX of S may overwrite in place, or -1. */
int pl_opset_inplace_input(const pl_op_schema *s, size_t output_index);

/* ---- the registry ------------------------------------------------------- */

typedef struct pl_opset pl_opset;

/* Makes a set holding every built-in schema; the caller owns it. */
pl_status *pl_opset_create(pl_opset **out_set);
/* Frees a set and the schemas registered into it. NULL is a no-op. */
void pl_opset_destroy(pl_opset *set);

/* The schema of OP in DOMAIN ("" and "ai.onnx" are the same) that applies
 * at OPSET_VERSION: the one with the highest since_version not above it.
 * NULL when none, and for ai.onnx when ONNX changed the op after that
 * schema's version, by OPSET_VERSION (pl_opset_changed_after). Valid until
 * the set is destroyed. */
const pl_op_schema *pl_opset_find(const pl_opset *set, const char *domain,
                                  const char *op, int64_t opset_version);

/* How pl_opset_register keeps the schemas it adds. */
typedef enum pl_schema_storage {
    /* The set copies each schema and everything it points to except the
     * infer function (and infer_user), which must stay valid while the set
     * lives: a module's custom op. */
    PL_SCHEMA_COPY = 0,
    /* The set borrows the schemas, which outlive it: the built-in tables. */
    PL_SCHEMA_STATIC = 1,
} pl_schema_storage;

/* The newest ai.onnx opset whose changes Plinth knows (opset_history.c):
 * a node of a newer one is refused, since its ops may have changed. */
#define PL_OPSET_NEWEST 28

/* The newest ai.onnx version of OP above SINCE and not above VERSION that
 * changed what the op computes or reads (not only the types it admits), 0
 * when none: a schema of version SINCE does not describe OP at VERSION
 * when this is above 0. Opsets 18 to PL_OPSET_NEWEST are listed. */
int64_t pl_opset_changed_after(const char *op, int64_t since, int64_t version);

/* Adds the N schemas of SCHEMAS: the one way schemas enter a set, for the
 * built-in tables (pl_opset_create) and modules' custom ops alike. Fails,
 * adding none, if a schema is malformed or one of the same domain, name
 * and since_version is already there (or earlier in SCHEMAS). */
pl_status *pl_opset_register(pl_opset *set, const pl_op_schema *schemas,
                             size_t n, pl_schema_storage storage);

/* Number of schemas in the set (built-in and registered). */
size_t pl_opset_count(const pl_opset *set);

/* ---- inference ---------------------------------------------------------- */

/* The opset version used for ai.onnx when a graph imports none. */
#define PL_OPSET_DEFAULT_VERSION 13

/* Infers the dtype and shape of every node output of G, in topological
 * order, and writes them with pl_graph_set_type. G must be validated.
 * Checks each node against its schema (arity, attributes, input dtypes);
 * a type already declared on an output (value_info) must agree with the
 * inferred one, and its unknown parts are filled. Errors name the node:
 * "node 'add1' (Add): shapes [2,3] and [4] cannot be broadcast". The
 * node's opset version is the graph's import of its domain (ai.onnx
 * defaults to PL_OPSET_DEFAULT_VERSION, other domains to their newest
 * schema). A graph importing ai.onnx 1 to 6 is converted to opset 7 on the
 * way (opset_upgrade.c): its import is raised, nodes are rewritten and may
 * be added, and G is validated again; after a failure G may be partly
 * converted and is only fit to be destroyed. Not thread-safe for G. */
pl_status *pl_opset_infer(const pl_opset *set, pl_graph *g);

/* NumPy broadcasting of shapes A (rank RA) and B (rank RB) into OUT, which
 * holds max(RA, RB) dims. Unknown dims (-1) broadcast to -1 unless the
 * other side fixes them. False when the shapes cannot be broadcast or a
 * rank exceeds PL_GRAPH_MAX_RANK. */
bool pl_opset_broadcast(const int64_t *a, int ra, const int64_t *b, int rb,
                        int64_t *out, int *out_rank);

/* ---- the inference context (for infer functions) ------------------------ */

/* Everything below is valid only during the infer call it is handed to. */

const pl_graph *pl_infer_graph(const pl_infer_ctx *ctx);
const pl_graph_node *pl_infer_node(const pl_infer_ctx *ctx);
const pl_op_schema *pl_infer_schema(const pl_infer_ctx *ctx);
int64_t pl_infer_opset_version(const pl_infer_ctx *ctx);
/* The schema's infer_user pointer. */
void *pl_infer_user_data(const pl_infer_ctx *ctx);

/* Number of inputs / outputs the node lists (absent ones included). */
size_t pl_infer_input_count(const pl_infer_ctx *ctx);
size_t pl_infer_output_count(const pl_infer_ctx *ctx);
/* Input I, or NULL when it is absent or beyond the node's inputs. */
const pl_graph_tensor *pl_infer_input(const pl_infer_ctx *ctx, size_t i);
/* Rank of input I, -1 when absent or unknown. */
int32_t pl_infer_input_rank(const pl_infer_ctx *ctx, size_t i);

/* Attributes: the node's value, else the schema's default. An attribute
 * of another kind than the schema says was refused before infer ran. */
bool pl_infer_has_attr(const pl_infer_ctx *ctx, const char *name);
int64_t pl_infer_attr_int(const pl_infer_ctx *ctx, const char *name);
double pl_infer_attr_float(const pl_infer_ctx *ctx, const char *name);
/* "" when absent without default. */
const char *pl_infer_attr_string(const pl_infer_ctx *ctx, const char *name);
/* False (and *out_n 0) when absent without default. */
bool pl_infer_attr_ints(const pl_infer_ctx *ctx, const char *name,
                        const int64_t **out_values, size_t *out_n);

/* False (and *out_n 0) when absent; floats attributes have no defaults. */
bool pl_infer_attr_floats(const pl_infer_ctx *ctx, const char *name,
                          const double **out_values, size_t *out_n);

/* Known values of input I, an integer tensor of rank 0 or 1 with at most
 * PL_KNOWN_MAX elements whose element count is known: bit k of *out_mask
 * is set when element k is known. False when nothing is known. */
#define PL_KNOWN_MAX 64
bool pl_infer_known_ints(const pl_infer_ctx *ctx, size_t i,
                         const int64_t **out_values, uint64_t *out_mask,
                         size_t *out_n);
/* Known values of input I, a float constant of rank 0 or 1 (Resize's
 * scales). False when unknown. */
bool pl_infer_known_floats(const pl_infer_ctx *ctx, size_t i,
                           const double **out_values, size_t *out_n);

/* Known values of tensor T of the graph being inferred, not only of the
 * node's inputs (an outer tensor a control-flow body reads): ints (mask
 * bit k set when element k is known) or floats (all known). False when
 * nothing is known. */
bool pl_infer_known_tensor(const pl_infer_ctx *ctx, pl_tid t, bool *out_is_float,
                           const int64_t **out_ints, const double **out_floats,
                           uint64_t *out_mask, size_t *out_n);

/* Sets output I: dtype (lanes 0 keeps the preset dtype), rank (-1 unknown)
 * and dims; dim_params may be NULL or have ndim entries, borrowed until
 * the infer call returns. */
pl_status *pl_infer_set_output(pl_infer_ctx *ctx, size_t i, pl_dtype dtype,
                               int32_t ndim, const int64_t *dims,
                               const char *const *dim_params);
/* Records the known values of output I (N <= PL_KNOWN_MAX elements). */
pl_status *pl_infer_set_known_ints(pl_infer_ctx *ctx, size_t i,
                                   const int64_t *values, uint64_t mask,
                                   size_t n);
pl_status *pl_infer_set_known_floats(pl_infer_ctx *ctx, size_t i,
                                     const double *values, size_t n);

/* A status whose message starts with the node: "node 'x' (Op): …". */
pl_status *pl_infer_error(const pl_infer_ctx *ctx, pl_code code,
                          const char *fmt, ...) PL_PRINTF_LIKE(3, 4);

/* Writes DIMS as "[2,?,4]" into BUF (truncated to SIZE). Returns BUF. */
char *pl_dims_format(const int64_t *dims, int32_t ndim, char *buf,
                     size_t size);

#endif
