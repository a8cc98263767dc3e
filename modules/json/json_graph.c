#define _POSIX_C_SOURCE 200809L
/* json_graph.c — jansson's tree of a model into the host's graph builder:
 * the top level (format, version, opset imports, the sidecar), tensors,
 * nodes, graph inputs and outputs, and bodies of control flow. Every field
 * is checked against what the format allows and the first problem is
 * reported with the file and the JSON path of the value
 * ("model.json: nodes[3] ('conv1').attributes.kernel_shape: ..."). The
 * checks that need to know the graph so far (duplicate names, tensors
 * produced twice or never) are made on the module's own tables (js_graph),
 * so that they too can name a JSON path; whatever the builder refuses is
 * reported with the path of the value that caused it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_internal.h"

/* ==== helpers on jansson values ============================================ */

const char *js_kind_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE: return "true";
    case JSON_FALSE: return "false";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* Refuses keys of OBJ that are not in ALLOWED (NULL-terminated): a typo in
 * an optional key must not silently drop what it was meant to say. */
pl_status *js_only_keys(const js_load *L, const char *where, json_t *obj,
                        const char *const *allowed)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        (void)value;
        bool known = false;
        for (size_t i = 0; allowed[i] && !known; i++)
            known = strcmp(key, allowed[i]) == 0;
        if (!known)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where, "unknown key '%.200s'", key);
    }
    return NULL;
}

pl_status *js_member(const js_load *L, const char *where, json_t *obj, const char *key,
                     bool required, json_t **out)
{
    *out = json_object_get(obj, key);
    if (*out == NULL && required)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, where, "missing required key '%s'",
                        key);
    return NULL;
}

pl_status *js_string_member(const js_load *L, const char *where, json_t *obj,
                            const char *key, bool required, bool nonempty,
                            const char **out)
{
    *out = NULL;
    json_t *v;
    JS_RETURN_IF_ERROR(js_member(L, where, obj, key, required, &v));
    if (v == NULL)
        return NULL;
    char path[JS_WHERE];
    js_path_key(path, where, key);
    if (!json_is_string(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "expected a string, got %s",
                        js_kind_name(v));
    if (nonempty && json_string_length(v) == 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "must not be empty");
    *out = json_string_value(v);
    return NULL;
}

pl_status *js_array_member(const js_load *L, const char *where, json_t *obj,
                           const char *key, bool required, size_t max,
                           const char *expected, json_t **out)
{
    JS_RETURN_IF_ERROR(js_member(L, where, obj, key, required, out));
    if (*out == NULL)
        return NULL;
    char path[JS_WHERE];
    js_path_key(path, where, key);
    if (!json_is_array(*out))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "expected %s, got %s", expected,
                        js_kind_name(*out));
    if (json_array_size(*out) > max)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "%zu entries exceed the limit of %zu", json_array_size(*out), max);
    return NULL;
}

int js_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool js_get_double(const json_t *v, double *out)
{
    if (json_is_real(v)) {
        *out = json_real_value(v);
        return true;
    }
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    if (strcmp(s, "inf") == 0) {
        *out = __builtin_inf();
        return true;
    }
    if (strcmp(s, "-inf") == 0) {
        *out = -__builtin_inf();
        return true;
    }
    if (strcmp(s, "nan") == 0) {
        *out = __builtin_nan("");
        return true;
    }
    if (strncmp(s, "nan:0x", 6) == 0 && strlen(s) == 22) {
        uint64_t bits = 0;
        for (int i = 6; i < 22; i++) {
            int d = js_hex_value(s[i]);
            if (d < 0)
                return false;
            bits = bits << 4 | (uint64_t)d;
        }
        double d;
        memcpy(&d, &bits, sizeof d);
        if (d == d) /* not a NaN */
            return false;
        *out = d;
        return true;
    }
    return false;
}

/* The dtype names of the format (docs/graph-format.md). */
static const struct {
    const char *name;
    pl_dtype dtype;
} js_dtypes[] = {
    {"f32", {PL_TYPE_FLOAT, 32, 1}}, {"f64", {PL_TYPE_FLOAT, 64, 1}},
    {"f16", {PL_TYPE_FLOAT, 16, 1}}, {"bf16", {PL_TYPE_BFLOAT, 16, 1}},
    {"u8", {PL_TYPE_UINT, 8, 1}},    {"i8", {PL_TYPE_INT, 8, 1}},
    {"i32", {PL_TYPE_INT, 32, 1}},   {"i64", {PL_TYPE_INT, 64, 1}},
    {"bool", {PL_TYPE_BOOL, 8, 1}},
    {"i16", {PL_TYPE_INT, 16, 1}},   {"u16", {PL_TYPE_UINT, 16, 1}},
    {"u32", {PL_TYPE_UINT, 32, 1}},  {"u64", {PL_TYPE_UINT, 64, 1}},
};

const char *js_dtype_name(pl_dtype dtype)
{
    if (dtype.lanes == 0)
        return "unknown";
    for (size_t i = 0; i < sizeof js_dtypes / sizeof js_dtypes[0]; i++)
        if (PL_DTYPE_EQ(dtype, js_dtypes[i].dtype))
            return js_dtypes[i].name;
    return "invalid";
}

pl_status *js_dtype(const js_load *L, const char *path, const json_t *v, pl_dtype *out)
{
    if (!json_is_string(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "expected a dtype name, got %s",
                        js_kind_name(v));
    for (size_t i = 0; i < sizeof js_dtypes / sizeof js_dtypes[0]; i++)
        if (strcmp(json_string_value(v), js_dtypes[i].name) == 0) {
            *out = js_dtypes[i].dtype;
            return NULL;
        }
    return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                    "unknown dtype '%.40s' (known: f32 f64 f16 bf16 u8 i8 i32 i64 bool)",
                    json_string_value(v));
}

pl_status *js_shape(const js_load *L, const char *path, const json_t *v, int64_t min_dim,
                    int64_t *dims, int32_t *out_ndim)
{
    if (!json_is_array(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an array of integers%s, got %s",
                        min_dim < 0 ? " or null" : "", js_kind_name(v));
    size_t n = json_array_size(v);
    if (n > JS_MAX_RANK)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "rank %zu exceeds the maximum of %d", n, JS_MAX_RANK);
    for (size_t i = 0; i < n; i++) {
        json_t *d = json_array_get(v, i);
        char epath[JS_WHERE];
        js_path(epath, "%s[%zu]", path, i);
        if (!json_is_integer(d))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                            "expected an integer, got %s", js_kind_name(d));
        json_int_t x = json_integer_value(d);
        if (x < min_dim)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, epath,
                            "%lld is not a dim (expected an integer >= %lld%s)",
                            (long long)x, (long long)min_dim,
                            min_dim < 0 ? ", -1 meaning unknown" : "");
        dims[i] = (int64_t)x;
    }
    *out_ndim = (int32_t)n;
    return NULL;
}

bool js_dims_elements(const int64_t *dims, int32_t ndim, size_t *out_elements)
{
    size_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (dims[i] < 0 || (uint64_t)dims[i] > SIZE_MAX)
            return false;
        size_t d = (size_t)dims[i];
        if (d != 0 && n > SIZE_MAX / d)
            return false;
        n *= d;
    }
    *out_elements = n;
    return true;
}

bool js_shape_bytes(pl_dtype dtype, const int64_t *dims, int32_t ndim, size_t *out_bytes)
{
    size_t elements, esize = pl_dtype_size(dtype);
    if (!js_dims_elements(dims, ndim, &elements) ||
        (esize != 0 && elements > SIZE_MAX / esize))
        return false;
    *out_bytes = elements * esize;
    return true;
}

/* ==== the module's view of a graph ========================================== */

/* The entry of tensor NAME in G, made on first mention. */
static pl_status *js_tensor_get_or_add(js_load *L, const char *name, js_tensor **out)
{
    js_graph *G = L->G;
    uint32_t i;
    if (js_names_get(&G->tensor_index, name, &i)) {
        *out = &G->tensors[i];
        return NULL;
    }
    if (G->n_tensors >= JS_NONE - 1)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, "", "too many tensors");
    if (G->n_tensors == G->cap_tensors) {
        size_t cap = G->cap_tensors ? G->cap_tensors * 2 : 16;
        js_tensor *grown = realloc(G->tensors, cap * sizeof *grown);
        if (grown == NULL)
            return js_oom(L, "reading the tensors");
        G->tensors = grown;
        G->cap_tensors = cap;
    }
    if (!js_names_put(&G->tensor_index, name, (uint32_t)G->n_tensors))
        return js_oom(L, "reading the tensors");
    js_tensor *t = &G->tensors[G->n_tensors++];
    *t = (js_tensor){.name = name, .decl = JS_NONE, .producer = JS_NONE};
    *out = t;
    return NULL;
}

/* Records node NAME (owned by the table from here, even on failure). */
static pl_status *js_node_add(js_load *L, char *name)
{
    js_graph *G = L->G;
    if (G->n_nodes == G->cap_nodes) {
        size_t cap = G->cap_nodes ? G->cap_nodes * 2 : 16;
        char **grown = realloc(G->node_names, cap * sizeof *grown);
        if (grown == NULL) {
            free(name);
            return js_oom(L, "reading a node");
        }
        G->node_names = grown;
        G->cap_nodes = cap;
    }
    G->node_names[G->n_nodes] = name;
    if (!js_names_put(&G->node_index, name, (uint32_t)G->n_nodes)) {
        free(name);
        return js_oom(L, "reading a node");
    }
    G->n_nodes++;
    return NULL;
}

/* The name the core gives a node that has none: "<op>_<index>", with a
 * further suffix when a node already has it. The module names the node so
 * that its messages can use the name. */
static char *js_generated_name(const js_load *L, const char *op)
{
    char buf[96];
    uint32_t unused;
    snprintf(buf, sizeof buf, "%.64s_%zu", op, L->G->n_nodes);
    for (unsigned k = 1; js_names_get(&L->G->node_index, buf, &unused); k++)
        snprintf(buf, sizeof buf, "%.64s_%zu_%u", op, L->G->n_nodes, k);
    return strdup(buf);
}

/* ==== the sidecar ============================================================ */

/* Has the core map NAME (the "weights" value) through its one
 * file-confinement rule (relative, no '..', inside the model's folder once
 * links are resolved, a regular file), so that a bad sidecar is refused even
 * when no constant uses it, and learns its size. */
static pl_status *js_map_weights(js_load *L, const char *name)
{
    L->weights_name = name;
    if (!PL_ABI_HAS_FN(pl_graph_api, L->api, builder_data_file))
        return NULL; /* an older core: builder_constant_file checks it on use */
    uint64_t size = 0;
    JS_RETURN_IF_ERROR(js_wrap(L, "weights", L->api->builder_data_file(L->b, name,
                                                                       "sidecar", &size)));
    L->weights_size = size;
    L->weights_sized = true;
    return NULL;
}

/* ==== tensors ================================================================== */

static pl_status *js_tensor_data(js_load *L, const char *where, const char *name,
                                 pl_dtype dtype, int32_t ndim, const int64_t *dims,
                                 const json_t *data)
{
    char path[JS_WHERE];
    js_path_key(path, where, "data");
    if (!json_is_object(data))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected an object {\"offset\", \"length\"}, got %s",
                        js_kind_name(data));
    static const char *const keys[] = {"offset", "length", NULL};
    JS_RETURN_IF_ERROR(js_only_keys(L, path, (json_t *)data, keys));
    json_t *joff = json_object_get(data, "offset");
    json_t *jlen = json_object_get(data, "length");
    if (jlen == NULL)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "missing required key 'length'");
    if (joff == NULL)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "missing required key 'offset' (a constant without an offset "
                        "only appears in the JSON of a graph view, which no sidecar "
                        "accompanies)");
    if (!json_is_integer(joff) || json_integer_value(joff) < 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "offset: expected an integer >= 0");
    if (!json_is_integer(jlen) || json_integer_value(jlen) < 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "length: expected an integer >= 0");
    uint64_t off64 = (uint64_t)json_integer_value(joff);
    uint64_t len64 = (uint64_t)json_integer_value(jlen);

    bool known = dtype.lanes != 0 && ndim >= 0;
    for (int32_t i = 0; known && i < ndim; i++)
        known = dims[i] >= 0;
    if (!known)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a constant needs a known dtype and a fully known shape");
    size_t expect;
    if (!js_shape_bytes(dtype, dims, ndim, &expect))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "the byte size of the shape overflows size_t");
    if (len64 != (uint64_t)expect)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "length %" PRIu64 " does not match the %zu bytes its dtype (%s) "
                        "and shape need",
                        len64, expect, js_dtype_name(dtype));
    if (L->weights_name == NULL)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a constant, but the model names no \"weights\" file");
    if (L->weights_sized &&
        (off64 > L->weights_size || len64 > L->weights_size - off64))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "offset %" PRIu64 " + length %" PRIu64 " lies past the end of "
                        "'%.200s' (%" PRIu64 " bytes)",
                        off64, len64, L->weights_name, L->weights_size);
    /* The core maps the sidecar once, checks the range against it and
     * borrows the bytes in place when they are aligned, else copies. */
    return js_wrap(L, path,
                   L->api->builder_constant_file(L->b, name, dtype, ndim, dims,
                                                 L->weights_name, (int64_t)off64,
                                                 (int64_t)len64));
}

static pl_status *js_load_tensor(js_load *L, size_t i, json_t *jt)
{
    char where[JS_WHERE], path[JS_WHERE];
    js_path(where, "tensors[%zu]", i);
    if (!json_is_object(jt))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, where, "expected an object, got %s",
                        js_kind_name(jt));
    const char *name;
    JS_RETURN_IF_ERROR(js_string_member(L, where, jt, "name", true, true, &name));
    js_path(where, "tensors[%zu] ('" JS_NAME_FMT "')", i, name);
    static const char *const keys[] = {"name", "dtype", "shape", "dim_params", "data",
                                       NULL};
    JS_RETURN_IF_ERROR(js_only_keys(L, where, jt, keys));
    uint32_t first;
    if (js_names_get(&L->G->tensor_index, name, &first))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "duplicate tensor name (first at tensors[%u])",
                        L->G->tensors[first].decl);

    pl_dtype dtype = {0, 0, 0};
    json_t *v = json_object_get(jt, "dtype");
    if (v != NULL && !json_is_null(v)) {
        js_path_key(path, where, "dtype");
        JS_RETURN_IF_ERROR(js_dtype(L, path, v, &dtype));
    }
    int64_t dims[JS_MAX_RANK];
    int32_t ndim = -1;
    v = json_object_get(jt, "shape");
    if (v != NULL && !json_is_null(v)) {
        js_path_key(path, where, "shape");
        JS_RETURN_IF_ERROR(js_shape(L, path, v, -1, dims, &ndim));
    }
    const char *params[JS_MAX_RANK];
    bool have_params = false;
    v = json_object_get(jt, "dim_params");
    if (v != NULL && !json_is_null(v)) {
        js_path_key(path, where, "dim_params");
        if (ndim < 0)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "given, but the shape (rank) is unknown");
        if (!json_is_array(v) || json_array_size(v) != (size_t)ndim)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                            "expected an array of %d strings or nulls, one per dim",
                            (int)ndim);
        for (int32_t k = 0; k < ndim; k++) {
            json_t *p = json_array_get(v, (size_t)k);
            if (json_is_null(p))
                params[k] = NULL;
            else if (json_is_string(p) && json_string_length(p) > 0)
                params[k] = json_string_value(p);
            else
                return js_error_at(L, path, (size_t)k,
                                   "expected a non-empty string or null, got %s",
                                   js_kind_name(p));
        }
        have_params = true;
    }
    /* A fully known shape whose bytes cannot be counted describes nothing
     * that can exist. */
    bool full = ndim >= 0;
    for (int32_t k = 0; full && k < ndim; k++)
        full = dims[k] >= 0;
    size_t bytes;
    if (full && dtype.lanes != 0 && !js_shape_bytes(dtype, dims, ndim, &bytes)) {
        js_path_key(path, where, "shape");
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "the byte size of this %s shape overflows size_t",
                        js_dtype_name(dtype));
    }

    js_tensor *t;
    JS_RETURN_IF_ERROR(js_tensor_get_or_add(L, name, &t));
    t->decl = (uint32_t)i;
    t->flags |= JS_T_DECLARED;
    JS_RETURN_IF_ERROR(js_wrap(L, where,
                               L->api->builder_tensor(L->b, name, dtype, ndim,
                                                      ndim > 0 ? dims : NULL,
                                                      have_params ? params : NULL)));
    v = json_object_get(jt, "data");
    if (v != NULL && !json_is_null(v)) {
        JS_RETURN_IF_ERROR(js_tensor_data(L, where, name, dtype, ndim, dims, v));
        t->flags |= JS_T_CONSTANT;
    }
    return NULL;
}

/* ==== nodes ====================================================================== */

/* The names of the string array ARR (checked), in a malloc array. */
static pl_status *js_name_list(const js_load *L, const char *path, const json_t *arr,
                               const char ***out)
{
    *out = NULL;
    size_t count = json_array_size(arr);
    const char **names = malloc((count ? count : 1) * sizeof *names);
    if (names == NULL)
        return js_oom(L, "reading a node");
    for (size_t i = 0; i < count; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e)) {
            free(names);
            return js_error_at(L, path, i, "expected a tensor name, got %s",
                               js_kind_name(e));
        }
        names[i] = json_string_value(e);
    }
    *out = names;
    return NULL;
}

/* Mentions every name of NAMES (N of them; "" means none) in the module's
 * table, as the builder does in the core's graph. */
static pl_status *js_mention(js_load *L, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        js_tensor *t;
        if (names[i][0] != '\0')
            JS_RETURN_IF_ERROR(js_tensor_get_or_add(L, names[i], &t));
    }
    return NULL;
}

static pl_status *js_load_node(js_load *L, size_t i, json_t *jn)
{
    char where[JS_WHERE], path[JS_WHERE];
    js_path(where, "nodes[%zu]", i);
    if (!json_is_object(jn))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, where, "expected an object, got %s",
                        js_kind_name(jn));
    const char *name, *op, *domain;
    JS_RETURN_IF_ERROR(js_string_member(L, where, jn, "name", false, true, &name));
    if (name != NULL)
        js_path(where, "nodes[%zu] ('" JS_NAME_FMT "')", i, name);
    static const char *const keys[] = {"name", "op", "domain", "inputs", "outputs",
                                       "attributes", NULL};
    JS_RETURN_IF_ERROR(js_only_keys(L, where, jn, keys));
    JS_RETURN_IF_ERROR(js_string_member(L, where, jn, "op", true, true, &op));
    JS_RETURN_IF_ERROR(js_string_member(L, where, jn, "domain", false, false, &domain));
    uint32_t first;
    if (name != NULL && js_names_get(&L->G->node_index, name, &first))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                        "duplicate node name (first at nodes[%u])", first);
    json_t *jin, *jout, *jattrs;
    JS_RETURN_IF_ERROR(js_array_member(L, where, jn, "inputs", true, SIZE_MAX,
                                       "an array of tensor names", &jin));
    JS_RETURN_IF_ERROR(js_array_member(L, where, jn, "outputs", true, SIZE_MAX,
                                       "an array of tensor names", &jout));
    js_path_key(path, where, "outputs");
    bool named = false;
    for (size_t k = 0; k < json_array_size(jout) && !named; k++)
        named = !json_is_string(json_array_get(jout, k)) ||
                json_string_length(json_array_get(jout, k)) > 0;
    if (!named)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "a node needs at least one named output");
    jattrs = json_object_get(jn, "attributes");
    if (jattrs != NULL && !json_is_object(jattrs)) {
        js_path_key(path, where, "attributes");
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path, "expected an object, got %s",
                        js_kind_name(jattrs));
    }
    const char **ins = NULL, **outs = NULL;
    js_path_key(path, where, "inputs");
    JS_RETURN_IF_ERROR(js_name_list(L, path, jin, &ins));
    js_path_key(path, where, "outputs");
    pl_status *st = js_name_list(L, path, jout, &outs);
    char *own = NULL;
    if (st == NULL) {
        own = name ? strdup(name) : js_generated_name(L, op);
        if (own == NULL)
            st = js_oom(L, "reading a node");
    }
    size_t id = 0;
    if (st == NULL)
        st = js_wrap(L, where,
                     L->api->builder_node(L->b, own, op, domain ? domain : "", ins,
                                          json_array_size(jin), outs,
                                          json_array_size(jout), &id));
    if (st == NULL)
        st = js_mention(L, ins, json_array_size(jin));
    if (st == NULL)
        st = js_mention(L, outs, json_array_size(jout));
    free(ins);
    free(outs);
    if (st == NULL) {
        if (name == NULL) /* name the generated one in later messages */
            js_path(where, "nodes[%zu] ('" JS_NAME_FMT "')", i, own);
        st = js_node_add(L, own);
    } else {
        free(own);
    }
    if (st != NULL || jattrs == NULL)
        return st;
    const char *key;
    json_t *value;
    json_object_foreach(jattrs, key, value)
        JS_RETURN_IF_ERROR(js_load_attr(L, where, id, key, value));
    return NULL;
}

/* ==== inputs, outputs, opsets ====================================================== */

static pl_status *js_load_io(js_load *L, json_t *arr, bool input)
{
    const char *list = input ? "inputs" : "outputs";
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char where[JS_WHERE];
        js_path(where, "%s[%zu]", list, i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_string(e) || json_string_length(e) == 0)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "expected a non-empty tensor name, got %s",
                            json_is_string(e) ? "\"\"" : js_kind_name(e));
        js_tensor *t;
        JS_RETURN_IF_ERROR(js_tensor_get_or_add(L, json_string_value(e), &t));
        /* One tensor may be two outputs (a Loop body's carried and scan
         * value; a model's, as ONNX allows), never two inputs. */
        if (input && (t->flags & JS_T_INPUT))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "'" JS_NAME_FMT "' is listed twice", t->name);
        if (input && (t->flags & JS_T_CONSTANT))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "'" JS_NAME_FMT "' is a constant; a graph input is given at "
                            "run time",
                            t->name);
        t->flags |= input ? JS_T_INPUT : JS_T_OUTPUT;
        JS_RETURN_IF_ERROR(js_wrap(L, where,
                                   input ? L->api->builder_input(L->b, t->name)
                                         : L->api->builder_output(L->b, t->name)));
    }
    return NULL;
}

static pl_status *js_load_opsets(js_load *L, json_t *arr)
{
    js_graph *G = L->G;
    size_t n = json_array_size(arr);
    G->domains = calloc(n ? n : 1, sizeof *G->domains);
    if (G->domains == NULL)
        return js_oom(L, "reading the opset imports");
    for (size_t i = 0; i < n; i++) {
        char where[JS_WHERE];
        js_path(where, "opset_import[%zu]", i);
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "expected an object {\"domain\", \"version\"}, got %s",
                            js_kind_name(e));
        static const char *const keys[] = {"domain", "version", NULL};
        JS_RETURN_IF_ERROR(js_only_keys(L, where, e, keys));
        const char *domain;
        JS_RETURN_IF_ERROR(js_string_member(L, where, e, "domain", false, false, &domain));
        if (domain == NULL)
            domain = "";
        json_t *v;
        JS_RETURN_IF_ERROR(js_member(L, where, e, "version", true, &v));
        if (!json_is_integer(v) || json_integer_value(v) < 1)
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "version: expected an integer >= 1");
        /* ONNX spells its default domain both "" and "ai.onnx". */
        bool domain_default = domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0;
        for (size_t k = 0; k < G->n_domains; k++) {
            const char *d = G->domains[k];
            bool d_default = d[0] == '\0' || strcmp(d, "ai.onnx") == 0;
            if (strcmp(d, domain) == 0 || (d_default && domain_default))
                return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                                "domain '%.100s' is imported twice", domain);
        }
        G->domains[G->n_domains++] = domain;
        JS_RETURN_IF_ERROR(js_wrap(L, where,
                                   L->api->builder_opset(L->b, domain,
                                                         (int64_t)json_integer_value(v))));
    }
    return NULL;
}

/* Every tensor defined exactly once: checked here, before the core's
 * validation checks the same, so that the message can give the JSON path.
 * Node indices are positions in "nodes". */
static pl_status *js_check_defined(js_load *L, json_t *nodes, json_t *outputs)
{
    js_graph *G = L->G;
    char where[JS_WHERE];
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *jout = json_object_get(json_array_get(nodes, i), "outputs");
        for (size_t k = 0; k < json_array_size(jout); k++) {
            const char *name = json_string_value(json_array_get(jout, k));
            uint32_t ti;
            if (name == NULL || name[0] == '\0' || !js_names_get(&G->tensor_index, name, &ti))
                continue; /* an optional output left out */
            js_tensor *t = &G->tensors[ti];
            js_path(where, "nodes[%zu] ('" JS_NAME_FMT "').outputs[%zu]", i,
                    G->node_names[i], k);
            if (t->producer != JS_NONE)
                return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                                "tensor '" JS_NAME_FMT "' is already produced by "
                                "nodes[%u] ('" JS_NAME_FMT "')",
                                t->name, t->producer, G->node_names[t->producer]);
            if (t->flags & (JS_T_CONSTANT | JS_T_INPUT))
                return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                                "tensor '" JS_NAME_FMT "' is a %s and cannot also be "
                                "produced by a node",
                                t->name, (t->flags & JS_T_CONSTANT) ? "constant"
                                                                    : "graph input");
            t->producer = (uint32_t)i;
        }
    }
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *jin = json_object_get(json_array_get(nodes, i), "inputs");
        for (size_t k = 0; k < json_array_size(jin); k++) {
            const char *name = json_string_value(json_array_get(jin, k));
            uint32_t ti;
            if (name == NULL || name[0] == '\0' || !js_names_get(&G->tensor_index, name, &ti))
                continue;
            const js_tensor *t = &G->tensors[ti];
            if (t->producer == JS_NONE && !(t->flags & (JS_T_INPUT | JS_T_CONSTANT))) {
                js_path(where, "nodes[%zu] ('" JS_NAME_FMT "').inputs[%zu]", i,
                        G->node_names[i], k);
                return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                                "tensor '" JS_NAME_FMT "' is not defined by any node, "
                                "graph input or constant",
                                t->name);
            }
        }
    }
    for (size_t i = 0; i < json_array_size(outputs); i++) {
        uint32_t ti;
        if (!js_names_get(&G->tensor_index, json_string_value(json_array_get(outputs, i)),
                          &ti))
            continue;
        const js_tensor *t = &G->tensors[ti];
        if (t->producer == JS_NONE && !(t->flags & (JS_T_INPUT | JS_T_CONSTANT))) {
            js_path(where, "outputs[%zu]", i);
            return js_error(L, PL_CODE_INVALID_ARGUMENT, where,
                            "tensor '" JS_NAME_FMT "' is not defined by any node, graph "
                            "input or constant",
                            t->name);
        }
    }
    return NULL;
}

/* ==== the graphs ====================================================================== */

/* Tensors, nodes, inputs and outputs of a graph (the model's or a body). */
static pl_status *js_load_lists(js_load *L, json_t *tensors, json_t *nodes, json_t *inputs,
                                json_t *outputs)
{
    for (size_t i = 0; i < json_array_size(tensors); i++)
        JS_RETURN_IF_ERROR(js_load_tensor(L, i, json_array_get(tensors, i)));
    for (size_t i = 0; i < json_array_size(nodes); i++)
        JS_RETURN_IF_ERROR(js_load_node(L, i, json_array_get(nodes, i)));
    JS_RETURN_IF_ERROR(js_load_io(L, inputs, true));
    return js_load_io(L, outputs, false);
}

/* A body: an object with "inputs", "outputs", "tensors" and "nodes" as at
 * the top level, read into BODY, the builder the core made for it. Its
 * constants lie in the model's sidecar. Names it does not define are left
 * to the core's validation, which resolves them in the enclosing graphs. */
pl_status *js_load_body(js_load *L, const char *path, json_t *v, pl_graph_builder *body)
{
    if (!json_is_object(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, path,
                        "expected a graph object {\"inputs\", \"outputs\", \"tensors\", "
                        "\"nodes\"}, got %s",
                        js_kind_name(v));
    static const char *const keys[] = {"inputs", "outputs", "tensors", "nodes", NULL};
    JS_RETURN_IF_ERROR(js_only_keys(L, path, v, keys));
    json_t *inputs, *outputs, *tensors, *nodes;
    JS_RETURN_IF_ERROR(js_array_member(L, path, v, "inputs", true, JS_MAX_ITEMS,
                                       "an array of tensor names", &inputs));
    JS_RETURN_IF_ERROR(js_array_member(L, path, v, "outputs", true, JS_MAX_ITEMS,
                                       "an array of tensor names", &outputs));
    JS_RETURN_IF_ERROR(js_array_member(L, path, v, "tensors", false, JS_MAX_ITEMS,
                                       "an array of tensor objects", &tensors));
    JS_RETURN_IF_ERROR(js_array_member(L, path, v, "nodes", true, JS_MAX_ITEMS,
                                       "an array of node objects", &nodes));
    char scope[JS_WHERE + 8];
    snprintf(scope, sizeof scope, "%s%s.", L->scope ? L->scope : "", path);
    js_graph G = {0};
    js_load sub = *L;
    sub.scope = scope;
    sub.b = body;
    sub.G = &G;
    pl_status *st = js_load_lists(&sub, tensors, nodes, inputs, outputs);
    js_graph_free(&G);
    return st;
}

pl_status *js_load_root(js_load *L, json_t *root)
{
    if (!json_is_object(root))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, "top level",
                        "expected an object, got %s", js_kind_name(root));
    static const char *const keys[] = {"format", "version", "opset_import", "weights",
                                       "inputs", "outputs", "tensors", "nodes", NULL};
    const char *format;
    JS_RETURN_IF_ERROR(js_string_member(L, "", root, "format", true, false, &format));
    if (strcmp(format, JS_FORMAT) != 0)
        return js_error(L, PL_CODE_INVALID_ARGUMENT, "format",
                        "'%.60s' is not \"" JS_FORMAT "\"", format);
    json_t *v;
    JS_RETURN_IF_ERROR(js_member(L, "", root, "version", true, &v));
    if (!json_is_integer(v))
        return js_error(L, PL_CODE_INVALID_ARGUMENT, "version",
                        "expected an integer, got %s", js_kind_name(v));
    if (json_integer_value(v) != JS_VERSION)
        return js_error(L, PL_CODE_UNSUPPORTED, "version",
                        "version %lld is not supported (this reader knows version %d)",
                        (long long)json_integer_value(v), JS_VERSION);
    JS_RETURN_IF_ERROR(js_only_keys(L, "", root, keys));

    json_t *opsets, *inputs, *outputs, *tensors, *nodes;
    const char *weights;
    JS_RETURN_IF_ERROR(js_array_member(L, "", root, "opset_import", false, SIZE_MAX,
                                       "an array of {\"domain\", \"version\"}", &opsets));
    JS_RETURN_IF_ERROR(js_string_member(L, "", root, "weights", false, true, &weights));
    JS_RETURN_IF_ERROR(js_array_member(L, "", root, "inputs", true, JS_MAX_ITEMS,
                                       "an array of tensor names", &inputs));
    JS_RETURN_IF_ERROR(js_array_member(L, "", root, "outputs", true, JS_MAX_ITEMS,
                                       "an array of tensor names", &outputs));
    JS_RETURN_IF_ERROR(js_array_member(L, "", root, "tensors", true, JS_MAX_ITEMS,
                                       "an array of tensor objects", &tensors));
    JS_RETURN_IF_ERROR(js_array_member(L, "", root, "nodes", true, JS_MAX_ITEMS,
                                       "an array of node objects", &nodes));

    if (weights != NULL)
        JS_RETURN_IF_ERROR(js_map_weights(L, weights));
    if (opsets != NULL)
        JS_RETURN_IF_ERROR(js_load_opsets(L, opsets));
    JS_RETURN_IF_ERROR(js_load_lists(L, tensors, nodes, inputs, outputs));
    return js_check_defined(L, nodes, outputs);
}
