/* graph_json.c — the writer of Plinth's native model format (graph_json.h,
 * docs/graph-format.md): a JSON file written with jansson plus a sidecar of
 * constants, and, for symbolic modules, the same JSON for a subgraph
 * without a sidecar (graph_view.c). Reading the format is not the core's:
 * it is the json format module's (modules/json), which builds the graph
 * through the SDK's graph builder like every other format. A saved graph
 * loads back identical and saves again to the same bytes.
 *
 * Memory: everything of the core's is allocated through alloc.h, so the
 * allocation-failure tests can fail each allocation in turn; every such
 * failure comes back as PL_CODE_OUT_OF_MEMORY. Jansson's tree comes from
 * jansson's global allocator, which an application embedding the core may
 * have set itself: the core never replaces it. Its failures are not
 * counted by the sweeps, but every jansson call that can fail is checked. */
#include "graph_json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "datafile.h"
#include "status.h"

/* Room for a place in a message; names in it are cut to keep it so. */
#define GJ_WHERE 640
#define GJ_NAME_FMT "%.160s"

/* ==== shared helpers ===================================================== */

static pl_status *gj_oom(const char *what)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory %s", what);
}

/* Strict UTF-8 as JSON needs it: no overlong forms, no surrogates, nothing
 * above U+10FFFF. NUL bytes pass here; callers that cannot hold them check. */
static bool gj_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned c = p[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i - 1 < n)
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

/* True when S (LEN bytes) can be a JSON string of the format: UTF-8 and no
 * NUL (jansson is used without JSON_ALLOW_NUL). */
static bool gj_json_safe(const char *s, size_t len)
{
    return memchr(s, '\0', len) == NULL && gj_utf8_valid(s, len);
}

static const char gj_hex_digits[] = "0123456789abcdef";

/* The directory part of PATH ("." when it has none), from pl_malloc. */
static char *gj_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        return pl_xstrdup(".");
    if (slash == path)
        return pl_xstrdup("/");
    return pl_xstrndup(path, (size_t)(slash - path));
}

/* DIR + "/" + NAME, from pl_malloc; NULL when out of memory. */
static char *gj_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name), total;
    if (!pl_size_add(a, b, &total) || !pl_size_add(total, 2, &total))
        return NULL;
    char *out = pl_malloc(total);
    if (out == NULL)
        return NULL;
    memcpy(out, dir, a);
    out[a] = '/';
    memcpy(out + a + 1, name, b);
    out[a + 1 + b] = '\0';
    return out;
}

/* ==== writing ============================================================ */

struct gj_save {
    const pl_graph *g;
    bool with_offsets;   /* a model file (true) or a graph view's text */
    size_t cursor;       /* end of the sidecar so far */
};

/* Adds VALUE (owned, may be NULL from a failed constructor) under KEY. */
static pl_status *gj_set(json_t *obj, const char *key, json_t *value)
{
    if (value == NULL || json_object_set_new_nocheck(obj, key, value) != 0)
        return gj_oom("building JSON");
    return NULL;
}

static pl_status *gj_push(json_t *arr, json_t *value)
{
    if (value == NULL || json_array_append_new(arr, value) != 0)
        return gj_oom("building JSON");
    return NULL;
}

/* A JSON string for S (LEN bytes), which must be JSON-safe; WHAT names it
 * in the error. */
static pl_status *gj_string(const char *s, size_t len, json_t **out,
                            const char *what_fmt, ...) PL_PRINTF_LIKE(4, 5);
static pl_status *gj_string(const char *s, size_t len, json_t **out,
                            const char *what_fmt, ...)
{
    *out = NULL;
    if (!gj_json_safe(s, len)) {
        char what[GJ_WHERE];
        va_list ap;
        va_start(ap, what_fmt);
        vsnprintf(what, sizeof what, what_fmt, ap);
        va_end(ap);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s is not valid UTF-8 (or holds a NUL byte); "
                                "the JSON format cannot name it",
                                what);
    }
    *out = json_stringn_nocheck(s, len);
    return *out ? NULL : gj_oom("building JSON");
}

static json_t *gj_hex_string(const void *data, size_t n)
{
    size_t len;
    if (!pl_size_mul(n, 2, &len) || !pl_size_add(len, 1, &len))
        return NULL;
    char *buf = pl_malloc(len);
    if (buf == NULL)
        return NULL;
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        buf[2 * i] = gj_hex_digits[p[i] >> 4];
        buf[2 * i + 1] = gj_hex_digits[p[i] & 15];
    }
    json_t *s = json_stringn_nocheck(buf, 2 * n);
    pl_free(buf);
    return s;
}

/* A double, exactly: JSON reals for finite values (printed with 17
 * significant digits), strings for the rest. */
static json_t *gj_double(double d)
{
    if (isfinite(d))
        return json_real(d);
    if (isinf(d))
        return json_string_nocheck(d > 0 ? "inf" : "-inf");
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    if (bits == UINT64_C(0x7ff8000000000000))
        return json_string_nocheck("nan");
    char buf[32];
    snprintf(buf, sizeof buf, "nan:0x%016" PRIx64, bits);
    return json_string_nocheck(buf);
}

static json_t *gj_int_array(const int64_t *v, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, json_integer((json_int_t)v[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static pl_status *gj_dtype_json(pl_dtype dtype, json_t **out, const char *what,
                                const char *name)
{
    *out = NULL;
    if (dtype.lanes == 0) {
        *out = json_null();
        return NULL;
    }
    const char *s = pl_dtype_name(dtype);
    if (strcmp(s, "invalid") == 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '" GJ_NAME_FMT "': dtype (code %u, %u bits, "
                                "%u lanes) has no name in the format",
                                what, name, dtype.code, dtype.bits, dtype.lanes);
    *out = json_string_nocheck(s);
    return *out ? NULL : gj_oom("building JSON");
}

typedef struct gj_save gj_save;
static pl_status *gj_body_json(gj_save *S, const pl_graph *body, json_t **out);

static pl_status *gj_attr_value(gj_save *S, const pl_graph_node *n, const pl_attr *a,
                                json_t *obj)
{
    switch (a->kind) {
    case PL_ATTR_GRAPH:
    case PL_ATTR_GRAPHS: {
        json_t *arr = NULL;
        if (a->kind == PL_ATTR_GRAPHS) {
            arr = json_array();
            PL_RETURN_IF_ERROR(gj_set(obj, "graphs", arr));
        }
        for (size_t i = 0; i < a->n; i++) {
            json_t *b = NULL;
            PL_RETURN_IF_ERROR(gj_body_json(S, a->graphs[i], &b));
            PL_RETURN_IF_ERROR(arr ? gj_push(arr, b) : gj_set(obj, "graph", b));
        }
        return NULL;
    }
    case PL_ATTR_INT:
        return gj_set(obj, "int", json_integer((json_int_t)a->i));
    case PL_ATTR_FLOAT:
        return gj_set(obj, "float", gj_double(a->f));
    case PL_ATTR_STRING:
        if (gj_json_safe(a->s, a->s_len))
            return gj_set(obj, "string", json_stringn_nocheck(a->s, a->s_len));
        return gj_set(obj, "string_hex", gj_hex_string(a->s, a->s_len));
    case PL_ATTR_INTS:
        return gj_set(obj, "ints", gj_int_array(a->ints, a->n));
    case PL_ATTR_FLOATS: {
        json_t *arr = json_array();
        PL_RETURN_IF_ERROR(gj_set(obj, "floats", arr));
        for (size_t i = 0; i < a->n; i++)
            PL_RETURN_IF_ERROR(gj_push(arr, gj_double(a->floats[i])));
        return NULL;
    }
    case PL_ATTR_STRINGS: {
        json_t *arr = json_array();
        PL_RETURN_IF_ERROR(gj_set(obj, "strings", arr));
        for (size_t i = 0; i < a->n; i++) {
            const char *s = a->strings[i];
            size_t len = strlen(s);
            if (gj_json_safe(s, len)) {
                PL_RETURN_IF_ERROR(gj_push(arr, json_stringn_nocheck(s, len)));
            } else {
                json_t *e = json_object();
                PL_RETURN_IF_ERROR(gj_push(arr, e));
                PL_RETURN_IF_ERROR(gj_set(e, "string_hex", gj_hex_string(s, len)));
            }
        }
        return NULL;
    }
    case PL_ATTR_TENSOR: {
        const pl_attr_tensor *t = a->tensor;
        json_t *jt = json_object(), *dt;
        PL_RETURN_IF_ERROR(gj_set(obj, "tensor", jt));
        PL_RETURN_IF_ERROR(gj_dtype_json(t->dtype, &dt, "tensor attribute", a->name));
        PL_RETURN_IF_ERROR(gj_set(jt, "dtype", dt));
        PL_RETURN_IF_ERROR(gj_set(jt, "shape", gj_int_array(t->dims, (size_t)t->ndim)));
        return gj_set(jt, "data_hex", gj_hex_string(t->data, t->nbytes));
    }
    }
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "node '" GJ_NAME_FMT "': attribute '" GJ_NAME_FMT
                            "' has unknown kind %d",
                            n->name, a->name, (int)a->kind);
}

static pl_status *gj_node_json(gj_save *S, const pl_graph *g, pl_nid id, json_t *arr)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    json_t *o = json_object(), *s;
    PL_RETURN_IF_ERROR(gj_push(arr, o));
    PL_RETURN_IF_ERROR(gj_string(n->name, strlen(n->name), &s, "node %u's name", id));
    PL_RETURN_IF_ERROR(gj_set(o, "name", s));
    PL_RETURN_IF_ERROR(gj_string(n->op, strlen(n->op), &s,
                                 "node '" GJ_NAME_FMT "': op", n->name));
    PL_RETURN_IF_ERROR(gj_set(o, "op", s));
    if (n->domain && n->domain[0]) {
        PL_RETURN_IF_ERROR(gj_string(n->domain, strlen(n->domain), &s,
                                     "node '" GJ_NAME_FMT "': domain", n->name));
        PL_RETURN_IF_ERROR(gj_set(o, "domain", s));
    }
    json_t *ins = json_array(), *outs;
    PL_RETURN_IF_ERROR(gj_set(o, "inputs", ins));
    /* Captures are derived from the bodies on every validate. */
    for (size_t k = 0; k < n->n_formal_inputs; k++) {
        const char *tn = n->inputs[k] == PL_TID_NONE
                             ? "" : pl_graph_get_tensor(g, n->inputs[k])->name;
        PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(tn)));
    }
    outs = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "outputs", outs));
    for (size_t k = 0; k < n->n_outputs; k++) {
        const char *tn = n->outputs[k] == PL_TID_NONE
                             ? "" : pl_graph_get_tensor(g, n->outputs[k])->name;
        PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(tn)));
    }
    if (n->n_attrs == 0)
        return NULL;
    json_t *attrs = json_object();
    PL_RETURN_IF_ERROR(gj_set(o, "attributes", attrs));
    for (size_t k = 0; k < n->n_attrs; k++) {
        const pl_attr *a = &n->attrs[k];
        if (a->name[0] == '\0' || !gj_json_safe(a->name, strlen(a->name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '" GJ_NAME_FMT "': attribute %zu's "
                                    "name is empty or not valid UTF-8",
                                    n->name, k);
        json_t *v = json_object();
        PL_RETURN_IF_ERROR(gj_set(attrs, a->name, v));
        PL_RETURN_IF_ERROR(gj_attr_value(S, n, a, v));
    }
    return NULL;
}

static pl_status *gj_tensor_json(gj_save *S, pl_tid id, json_t *arr)
{
    const pl_graph_tensor *t = pl_graph_get_tensor(S->g, id);
    /* Bodies are written with S->g set to them: see gj_body_json. */
    json_t *o = json_object(), *v;
    PL_RETURN_IF_ERROR(gj_push(arr, o));
    PL_RETURN_IF_ERROR(gj_set(o, "name", json_string_nocheck(t->name)));
    PL_RETURN_IF_ERROR(gj_dtype_json(t->dtype, &v, "tensor", t->name));
    PL_RETURN_IF_ERROR(gj_set(o, "dtype", v));
    if (t->ndim < 0) {
        PL_RETURN_IF_ERROR(gj_set(o, "shape", json_null()));
    } else {
        PL_RETURN_IF_ERROR(gj_set(o, "shape", gj_int_array(t->dims, (size_t)t->ndim)));
        bool any = false;
        for (int32_t k = 0; t->dim_params && k < t->ndim; k++)
            any = any || t->dim_params[k] != NULL;
        if (any) {
            json_t *ps = json_array();
            PL_RETURN_IF_ERROR(gj_set(o, "dim_params", ps));
            for (int32_t k = 0; k < t->ndim; k++) {
                const char *p = t->dim_params[k];
                if (p == NULL) {
                    PL_RETURN_IF_ERROR(gj_push(ps, json_null()));
                    continue;
                }
                PL_RETURN_IF_ERROR(gj_string(p, strlen(p), &v,
                                             "tensor '" GJ_NAME_FMT "': dim_params[%d]",
                                             t->name, (int)k));
                PL_RETURN_IF_ERROR(gj_push(ps, v));
            }
        }
    }
    if (t->data == NULL)
        return NULL;
    json_t *d = json_object();
    PL_RETURN_IF_ERROR(gj_set(o, "data", d));
    if (S->with_offsets) {
        size_t off = S->cursor, pad = (PL_GRAPH_JSON_ALIGN - off % PL_GRAPH_JSON_ALIGN) %
                                      PL_GRAPH_JSON_ALIGN;
        if (!pl_size_add(off, pad, &off) || !pl_size_add(off, t->nbytes, &S->cursor) ||
            S->cursor > (size_t)INT64_MAX)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "constant '" GJ_NAME_FMT "': the sidecar "
                                    "would exceed 2^63 bytes",
                                    t->name);
        PL_RETURN_IF_ERROR(gj_set(d, "offset", json_integer((json_int_t)off)));
    }
    return gj_set(d, "length", json_integer((json_int_t)t->nbytes));
}

static pl_status *gj_body_fill(gj_save *S, const pl_graph *body, json_t *o)
{
    json_t *ins = json_array(), *outs, *tensors, *nodes;
    PL_RETURN_IF_ERROR(gj_set(o, "inputs", ins));
    for (size_t i = 0; i < pl_graph_input_count(body); i++)
        PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(
                                            pl_graph_get_tensor(body, pl_graph_input(body, i))->name)));
    outs = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "outputs", outs));
    for (size_t i = 0; i < pl_graph_output_count(body); i++)
        PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(
                                             pl_graph_get_tensor(body, pl_graph_output(body, i))->name)));
    tensors = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "tensors", tensors));
    for (size_t t = 0; t < pl_graph_tensor_count(body); t++) {
        const char *name = pl_graph_get_tensor(body, (pl_tid)t)->name;
        if (!gj_json_safe(name, strlen(name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "a body's tensor %zu has a name that is not valid UTF-8", t);
        PL_RETURN_IF_ERROR(gj_tensor_json(S, (pl_tid)t, tensors));
    }
    nodes = json_array();
    PL_RETURN_IF_ERROR(gj_set(o, "nodes", nodes));
    for (size_t i = 0; i < pl_graph_node_count(body); i++)
        PL_RETURN_IF_ERROR(gj_node_json(S, body, (pl_nid)i, nodes));
    return NULL;
}

/* A body as the value of a "graph" attribute; its constants continue the
 * sidecar's layout (gj_fill_sidecar walks the bodies in the same order). */
static pl_status *gj_body_json(gj_save *S, const pl_graph *body, json_t **out)
{
    *out = NULL;
    json_t *o = json_object();
    if (o == NULL)
        return gj_oom("building JSON");
    const pl_graph *saved = S->g;
    S->g = body;
    pl_status *st = gj_body_fill(S, body, o);
    S->g = saved;
    if (st != NULL) {
        json_decref(o);
        return st;
    }
    *out = o;
    return NULL;
}

/* Marks of the tensors while a subgraph is selected. */
enum {
    GJ_USED = 1,      /* read or written by a selected node */
    GJ_PRODUCED = 2,  /* written by a selected node */
    GJ_OUTSIDE = 4,   /* read by an unselected node, or a graph output */
    GJ_IN_LISTED = 8,
    GJ_OUT_LISTED = 16
};

/* Fills the boundary ("inputs", "outputs") and the tensor list of the
 * subgraph of NODES. */
static pl_status *gj_subgraph(gj_save *S, const pl_nid *nodes, size_t n_nodes,
                              json_t *root)
{
    const pl_graph *g = S->g;
    size_t nt = pl_graph_tensor_count(g), nn = pl_graph_node_count(g);
    unsigned char *mark = pl_calloc(nt ? nt : 1, 1);
    unsigned char *chosen = pl_calloc(nn ? nn : 1, 1);
    pl_status *st = NULL;
    if (mark == NULL || chosen == NULL)
        st = gj_oom("selecting a subgraph");
    for (size_t i = 0; st == NULL && i < n_nodes; i++) {
        if (nodes[i] >= nn)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "pl_graph_to_json: node id %u is out of range "
                                  "(the graph has %zu nodes)",
                                  nodes[i], nn);
        else if (chosen[nodes[i]])
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "pl_graph_to_json: node %u ('" GJ_NAME_FMT
                                  "') is listed twice",
                                  nodes[i], pl_graph_get_node(g, nodes[i])->name);
        else
            chosen[nodes[i]] = 1;
    }
    if (st == NULL) {
        for (size_t i = 0; i < nn; i++) {
            const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
            for (size_t k = 0; k < n->n_inputs; k++)
                if (n->inputs[k] != PL_TID_NONE)
                    mark[n->inputs[k]] |= chosen[i] ? GJ_USED : GJ_OUTSIDE;
            for (size_t k = 0; chosen[i] && k < n->n_outputs; k++)
                if (n->outputs[k] != PL_TID_NONE)
                    mark[n->outputs[k]] |= GJ_USED | GJ_PRODUCED;
        }
        for (size_t i = 0; i < pl_graph_output_count(g); i++)
            mark[pl_graph_output(g, i)] |= GJ_OUTSIDE;
    }
    json_t *ins = json_array(), *outs = json_array(), *tensors = json_array();
    if (st == NULL)
        st = gj_set(root, "inputs", ins);
    else
        json_decref(ins);
    if (st == NULL)
        st = gj_set(root, "outputs", outs);
    else
        json_decref(outs);
    for (size_t i = 0; st == NULL && i < n_nodes; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, nodes[i]);
        for (size_t k = 0; st == NULL && k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t == PL_TID_NONE || (mark[t] & (GJ_PRODUCED | GJ_IN_LISTED)) ||
                pl_graph_get_tensor(g, t)->data != NULL)
                continue;
            mark[t] |= GJ_IN_LISTED;
            st = gj_push(ins, json_string_nocheck(pl_graph_get_tensor(g, t)->name));
        }
        for (size_t k = 0; st == NULL && k < n->n_outputs; k++) {
            pl_tid t = n->outputs[k];
            if (t != PL_TID_NONE && (mark[t] & GJ_OUTSIDE) &&
                !(mark[t] & GJ_OUT_LISTED)) {
                mark[t] |= GJ_OUT_LISTED;
                st = gj_push(outs, json_string_nocheck(pl_graph_get_tensor(g, t)->name));
            }
        }
    }
    if (st == NULL)
        st = gj_set(root, "tensors", tensors);
    else
        json_decref(tensors);
    for (size_t t = 0; st == NULL && t < nt; t++)
        if (mark[t] & GJ_USED)
            st = gj_tensor_json(S, (pl_tid)t, tensors);
    pl_free(mark);
    pl_free(chosen);
    return st;
}

/* The whole document. WEIGHTS is the sidecar name for a model file, NULL
 * otherwise; NODES selects a subgraph (NULL: the graph as it is). */
static pl_status *gj_build(gj_save *S, const pl_nid *nodes, size_t n_nodes,
                           const char *weights, json_t *root)
{
    const pl_graph *g = S->g;
    json_t *v;
    PL_RETURN_IF_ERROR(gj_set(root, "format", json_string_nocheck(PL_GRAPH_JSON_FORMAT)));
    PL_RETURN_IF_ERROR(gj_set(root, "version", json_integer(PL_GRAPH_JSON_VERSION)));
    json_t *opsets = json_array();
    PL_RETURN_IF_ERROR(gj_set(root, "opset_import", opsets));
    for (size_t i = 0; i < pl_graph_opset_count(g); i++) {
        const char *domain;
        int64_t version;
        pl_graph_opset_at(g, i, &domain, &version);
        json_t *o = json_object();
        PL_RETURN_IF_ERROR(gj_push(opsets, o));
        PL_RETURN_IF_ERROR(gj_string(domain, strlen(domain), &v,
                                     "opset domain '" GJ_NAME_FMT "'", domain));
        PL_RETURN_IF_ERROR(gj_set(o, "domain", v));
        PL_RETURN_IF_ERROR(gj_set(o, "version", json_integer((json_int_t)version)));
    }
    if (weights != NULL)
        PL_RETURN_IF_ERROR(gj_set(root, "weights", json_string_nocheck(weights)));
    /* Names are checked once here; the rest of the writer uses them as
     * they are. */
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
        const char *name = pl_graph_get_tensor(g, (pl_tid)t)->name;
        if (!gj_json_safe(name, strlen(name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "tensor %zu's name is not valid UTF-8; "
                                    "the JSON format cannot name it",
                                    t);
    }
    if (nodes != NULL) {
        PL_RETURN_IF_ERROR(gj_subgraph(S, nodes, n_nodes, root));
    } else {
        json_t *ins = json_array(), *outs, *tensors;
        PL_RETURN_IF_ERROR(gj_set(root, "inputs", ins));
        for (size_t i = 0; i < pl_graph_input_count(g); i++)
            PL_RETURN_IF_ERROR(gj_push(ins, json_string_nocheck(
                                                pl_graph_get_tensor(g, pl_graph_input(g, i))->name)));
        outs = json_array();
        PL_RETURN_IF_ERROR(gj_set(root, "outputs", outs));
        for (size_t i = 0; i < pl_graph_output_count(g); i++)
            PL_RETURN_IF_ERROR(gj_push(outs, json_string_nocheck(
                                                 pl_graph_get_tensor(g, pl_graph_output(g, i))->name)));
        tensors = json_array();
        PL_RETURN_IF_ERROR(gj_set(root, "tensors", tensors));
        for (size_t t = 0; t < pl_graph_tensor_count(g); t++)
            PL_RETURN_IF_ERROR(gj_tensor_json(S, (pl_tid)t, tensors));
    }
    json_t *jnodes = json_array();
    PL_RETURN_IF_ERROR(gj_set(root, "nodes", jnodes));
    size_t count = nodes ? n_nodes : pl_graph_node_count(g);
    for (size_t i = 0; i < count; i++)
        PL_RETURN_IF_ERROR(gj_node_json(S, g, nodes ? nodes[i] : (pl_nid)i, jnodes));
    return NULL;
}

pl_status *pl_graph_to_json(const pl_graph *g, const pl_nid *nodes,
                            size_t n_nodes, char **out_text)
{
    if (out_text == NULL || g == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_to_json: %s is NULL",
                                g ? "out_text" : "graph");
    *out_text = NULL;
    gj_save S = {.g = g, .with_offsets = false};
    json_t *root = json_object();
    if (root == NULL)
        return gj_oom("building JSON");
    pl_status *st = gj_build(&S, nodes, n_nodes, NULL, root);
    if (st == NULL) {
        /* json_dumps allocates with jansson's allocator (malloc): the
         * caller gets a copy from the current allocator, freed with
         * pl_free. */
        char *text = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
        *out_text = pl_xstrdup(text);
        free(text);
        if (*out_text == NULL)
            st = gj_oom("printing JSON");
    }
    json_decref(root);
    return st;
}

/* ---- files -------------------------------------------------------------- */

static bool gj_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

typedef struct gj_writer {
    int fd;
    int err;   /* errno of the first failed write, 0 when none */
} gj_writer;

/* Writes a file through a temporary name in the same directory and renames
 * it into place: readers never see half a file, and a graph still mapping
 * the file it replaces keeps the old bytes. FILL writes the content to
 * W->fd and returns a status. */
static pl_status *gj_replace_file(const char *path,
                                  pl_status *(*fill)(gj_writer *w, void *arg),
                                  void *arg)
{
    size_t len = strlen(path), total;
    if (!pl_size_add(len, 48, &total))
        return gj_oom("naming a temporary file");
    char *tmp = pl_malloc(total);
    if (tmp == NULL)
        return gj_oom("naming a temporary file");
    static unsigned long counter;
    gj_writer w = {.fd = -1};
    for (int attempt = 0; attempt < 100 && w.fd < 0; attempt++) {
        snprintf(tmp, total, "%s.tmp.%ld.%lu", path, (long)getpid(),
                 __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
        w.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w.fd < 0 && errno != EEXIST)
            break;
    }
    if (w.fd < 0) {
        int err = errno;
        pl_status *st = pl_status_create(pl_datafile_code(err), "%s: cannot create "
                                         "%s: %s", path, tmp, strerror(err));
        pl_free(tmp);
        return st;
    }
    pl_status *st = fill(&w, arg);
    if (st == NULL && fsync(w.fd) != 0)
        w.err = errno;
    if (close(w.fd) != 0 && w.err == 0)
        w.err = errno;
    if (st == NULL && w.err != 0)
        st = pl_status_create(pl_datafile_code(w.err), "%s: write failed: %s", path,
                              strerror(w.err));
    if (st == NULL && rename(tmp, path) != 0) {
        int err = errno;
        st = pl_status_create(pl_datafile_code(err), "%s: cannot rename %s into "
                              "place: %s", path, tmp, strerror(err));
    }
    if (st != NULL)
        unlink(tmp);
    pl_free(tmp);
    return st;
}

/* Writes the constants of G, then of its bodies node by node, in the
 * order gj_build laid them out. */
static void gj_fill_graph(gj_writer *w, const pl_graph *g, size_t *cursor_io)
{
    static const unsigned char zeros[PL_GRAPH_JSON_ALIGN];
    size_t cursor = *cursor_io;
    for (size_t i = 0; w->err == 0 && i < pl_graph_tensor_count(g); i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, (pl_tid)i);
        if (t->data == NULL)
            continue;
        size_t pad = (PL_GRAPH_JSON_ALIGN - cursor % PL_GRAPH_JSON_ALIGN) %
                     PL_GRAPH_JSON_ALIGN;
        if (!gj_write_all(w->fd, zeros, pad) ||
            !gj_write_all(w->fd, t->data, t->nbytes)) {
            w->err = errno ? errno : EIO;
            return;
        }
        /* The JSON was built first with the same layout and checked it. */
        cursor += pad + t->nbytes;
    }
    *cursor_io = cursor;
    for (size_t i = 0; w->err == 0 && i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH || n->attrs[a].kind == PL_ATTR_GRAPHS)
                for (size_t b = 0; b < n->attrs[a].n; b++)
                    gj_fill_graph(w, n->attrs[a].graphs[b], cursor_io);
    }
}

static pl_status *gj_fill_sidecar(gj_writer *w, void *arg)
{
    size_t cursor = 0;
    gj_fill_graph(w, arg, &cursor);
    return NULL;
}

static int gj_dump_cb(const char *buffer, size_t size, void *data)
{
    gj_writer *w = data;
    if (!gj_write_all(w->fd, buffer, size)) {
        w->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

static pl_status *gj_fill_json(gj_writer *w, void *arg)
{
    json_t *root = arg;
    if (json_dump_callback(root, gj_dump_cb, w,
                           JSON_INDENT(2) | JSON_REAL_PRECISION(17)) != 0) {
        if (w->err == 0)
            return gj_oom("printing JSON");
        return NULL;
    }
    if (!gj_write_all(w->fd, "\n", 1))
        w->err = errno ? errno : EIO;
    return NULL;
}

/* Whether G or a body of it holds a constant (then a sidecar is needed). */
static bool gj_any_constant(const pl_graph *g)
{
    for (size_t i = 0; i < pl_graph_tensor_count(g); i++)
        if (pl_graph_get_tensor(g, (pl_tid)i)->data != NULL)
            return true;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t a = 0; a < n->n_attrs; a++)
            for (size_t b = 0; (n->attrs[a].kind == PL_ATTR_GRAPH ||
                                n->attrs[a].kind == PL_ATTR_GRAPHS) &&
                               b < n->attrs[a].n;
                 b++)
                if (gj_any_constant(n->attrs[a].graphs[b]))
                    return true;
    }
    return false;
}

pl_status *pl_graph_save_json(const pl_graph *g, const char *path,
                              const char *sidecar_name)
{
    if (g == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_graph_save_json: %s is NULL",
                                g ? "path" : "graph");
    bool any_constant = gj_any_constant(g);
    if (any_constant) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (sidecar_name == NULL || sidecar_name[0] == '\0' ||
            strchr(sidecar_name, '/') != NULL || strcmp(sidecar_name, ".") == 0 ||
            strcmp(sidecar_name, "..") == 0 ||
            !gj_json_safe(sidecar_name, strlen(sidecar_name)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: the graph has constants, and the "
                                    "sidecar name '%.200s' is not a plain file "
                                    "name",
                                    path, sidecar_name ? sidecar_name : "(null)");
        if (strcmp(base, sidecar_name) == 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: the sidecar cannot have the JSON "
                                    "file's own name",
                                    path);
    }
    gj_save S = {.g = g, .with_offsets = true};
    json_t *root = json_object();
    if (root == NULL)
        return gj_oom("building JSON");
    pl_status *st = gj_build(&S, NULL, 0, any_constant ? sidecar_name : NULL, root);
    if (st == NULL && any_constant) {
        char *dir = gj_dirname(path);
        char *side = dir ? gj_join(dir, sidecar_name) : NULL;
        if (side == NULL)
            st = gj_oom("naming the sidecar");
        else
            st = gj_replace_file(side, gj_fill_sidecar, (void *)g);
        pl_free(side);
        pl_free(dir);
    }
    if (st == NULL)
        st = gj_replace_file(path, gj_fill_json, root);
    json_decref(root);
    return st;
}
