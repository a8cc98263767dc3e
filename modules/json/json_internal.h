/* json_internal.h — what the files of the json module share: the format's
 * limits, the state of one import, its error helpers, the name tables an
 * import keeps, and the two steps of an import (json_text.c: the text into
 * jansson's tree; json_graph.c and json_attr.c: the tree into the host's
 * graph builder).
 *
 * Nothing here is thread-safe on its own: one import runs on one thread, and
 * each import has its own js_load. */
#ifndef PLINTH_JSON_INTERNAL_H
#define PLINTH_JSON_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <plinth/module.h>

/* The host table, set once by the entry point; valid until unload. */
extern const pl_host_api *js_host;

/* The "format" and "version" values this module reads (the core's writer,
 * core/src/graph_json.c, writes the same). */
#define JS_FORMAT "plinth-graph"
#define JS_VERSION 1
/* Largest JSON text accepted (bytes). */
#define JS_MAX_TEXT ((size_t)1 << 30)
/* Deepest nesting of arrays and objects accepted. The format itself needs 7
 * levels; the margin is for nothing but clearer errors. */
#define JS_MAX_DEPTH 32
/* Most tensors, and most nodes, a graph may list. */
#define JS_MAX_ITEMS 50000000u
/* Rank of any tensor (the core's limit). */
#define JS_MAX_RANK 16

/* Room for a JSON path in a message; names in it are cut to keep it so. */
#define JS_WHERE 640
#define JS_NAME_FMT "%.160s"

/* Returns the status of EXPR when it is an error. */
#define JS_RETURN_IF_ERROR(expr)          \
    do {                                  \
        pl_status *js_st_ = (expr);       \
        if (js_st_ != NULL)               \
            return js_st_;                \
    } while (0)

/* ---- a table of names ------------------------------------------------------
 * Open addressing over borrowed keys (strings of jansson's tree, or names
 * the import owns), each mapped to a 32-bit value. */
typedef struct js_names {
    const char **keys;
    uint32_t *values;
    size_t cap, count;
} js_names;

void js_names_free(js_names *t);
/* True and *out_value when KEY is in the table. */
bool js_names_get(const js_names *t, const char *key, uint32_t *out_value);
/* Adds KEY (not yet in the table); false when out of memory. */
bool js_names_put(js_names *t, const char *key, uint32_t value);

/* ---- one graph of the import (the model's, or a body) ----------------------
 * What the core's graph would say about its tensors and nodes, kept on the
 * module's side: the builder only builds, so the checks that give JSON
 * paths (duplicates, definitions) are made here. */
#define JS_NONE UINT32_MAX

enum {
    JS_T_DECLARED = 1, /* listed in "tensors" */
    JS_T_CONSTANT = 2, /* has "data" */
    JS_T_INPUT = 4,
    JS_T_OUTPUT = 8
};

typedef struct js_tensor {
    const char *name;     /* borrowed from the tree */
    uint32_t decl;        /* index in "tensors", JS_NONE when not listed */
    uint32_t producer;    /* node index, JS_NONE: none yet */
    unsigned flags;
} js_tensor;

typedef struct js_graph {
    js_names tensor_index; /* name -> index in tensors */
    js_tensor *tensors;
    size_t n_tensors, cap_tensors;
    js_names node_index;   /* node name -> index */
    char **node_names;     /* each node's name: owned copies */
    size_t n_nodes, cap_nodes;
    const char **domains;  /* opset imports so far (the model's graph) */
    size_t n_domains;
} js_graph;

void js_graph_free(js_graph *G);

/* ---- one import ------------------------------------------------------------ */

typedef struct js_load {
    const char *src;            /* the model file, for messages */
    const pl_graph_api *api;    /* host->graph: the builder functions */
    pl_graph_builder *b;        /* this graph's builder */
    js_graph *G;                /* this graph's bookkeeping */
    const char *weights_name;   /* the sidecar as the JSON names it, or NULL */
    uint64_t weights_size;      /* its size, once the core mapped it */
    bool weights_sized;         /* whether weights_size is known */
    /* Inside a body: the JSON path of its object with a trailing '.', put
     * before every path; NULL at the top level. */
    const char *scope;
} js_load;

/* Formats a JSON path into BUF (JS_WHERE bytes); longer paths are cut. */
void js_path(char *buf, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);
/* WHERE.KEY, or KEY at the top level. */
void js_path_key(char *buf, const char *where, const char *key);
/* "SRC: SCOPE WHERE: message" (or "SRC: message" when WHERE is empty). */
pl_status *js_error(const js_load *L, pl_code code, const char *where, const char *fmt, ...)
    PL_PRINTF_LIKE(4, 5);
/* The same for element INDEX of the array at PATH (invalid argument). */
pl_status *js_error_at(const js_load *L, const char *path, size_t index, const char *fmt,
                       ...) PL_PRINTF_LIKE(4, 5);
/* Prefixes a status from the builder with the file and JSON path; takes
 * ownership of ST. NULL stays NULL. */
pl_status *js_wrap(const js_load *L, const char *where, pl_status *st);
/* An out-of-memory status naming what was being done. */
pl_status *js_oom(const js_load *L, const char *what);

/* ---- helpers on jansson values --------------------------------------------- */

const char *js_kind_name(const json_t *v);
pl_status *js_only_keys(const js_load *L, const char *where, json_t *obj,
                        const char *const *allowed);
pl_status *js_member(const js_load *L, const char *where, json_t *obj, const char *key,
                     bool required, json_t **out);
pl_status *js_array_member(const js_load *L, const char *where, json_t *obj,
                           const char *key, bool required, size_t max,
                           const char *expected, json_t **out);
pl_status *js_string_member(const js_load *L, const char *where, json_t *obj,
                            const char *key, bool required, bool nonempty,
                            const char **out);
/* A number as a double: JSON integers and reals, and the strings the writer
 * uses for values JSON cannot spell ("inf", "-inf", "nan", "nan:0x<bits>"). */
bool js_get_double(const json_t *v, double *out);
int js_hex_value(char c);
pl_status *js_dtype(const js_load *L, const char *path, const json_t *v, pl_dtype *out);
const char *js_dtype_name(pl_dtype dtype);
/* A shape: at most JS_MAX_RANK integers, each >= MIN_DIM. */
pl_status *js_shape(const js_load *L, const char *path, const json_t *v, int64_t min_dim,
                    int64_t *dims, int32_t *out_ndim);
/* Element count and byte size of a fully known shape; false on overflow. */
bool js_dims_elements(const int64_t *dims, int32_t ndim, size_t *out_elements);
bool js_shape_bytes(pl_dtype dtype, const int64_t *dims, int32_t ndim, size_t *out_bytes);

/* ---- the steps ------------------------------------------------------------- */

/* Parses TEXT (LEN bytes; SRC names it in messages) into *OUT_ROOT, the
 * text's top-level object, after a prescan of its structure. */
pl_status *js_parse(const char *src, const char *text, size_t len, json_t **out_root);

/* Builds the model's graph from ROOT through L's builder. */
pl_status *js_load_root(js_load *L, json_t *root);

/* Reads the attribute NAME (value V) of node N of L's graph (json_attr.c).
 * NODE_WHERE is the node's JSON path. */
pl_status *js_load_attr(js_load *L, const char *node_where, size_t n, const char *name,
                        json_t *v);

/* Reads the body V (a GRAPH attribute's value) into BODY's builder (json_graph.c). */
pl_status *js_load_body(js_load *L, const char *path, json_t *v, pl_graph_builder *body);

#endif
