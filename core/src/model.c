/* model.c — a loaded model: its graph, validated and with every type
 * inferred by the runtime's opset, plus `explain`, which shows what the
 * runtime would do with it — the execution order with output types, and the
 * memory plan of the tensors the core owns, against its lower bound. Until
 * the partitioner exists every core-owned tensor is planned on the host. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "graph_builder.h"
#include "graph_json.h"
#include "model.h"
#include "plan.h"
#include "registry.h"
#include "status.h"


/* True when PATH looks like Plinth's JSON format: a .json name, or text
 * that starts with '{'. Only for the message when no module reads it: the
 * json format module makes the same test in its can_import. */
static bool pl_model_looks_json(const char *path, const unsigned char *head, size_t n)
{
    size_t len = strlen(path);
    if (len >= 5 && strcmp(path + len - 5, ".json") == 0)
        return true;
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
        i++;
    return i < n && head[i] == '{';
}

pl_status *pl_model_read_graph(pl_runtime *rt, const char *path, pl_graph **out)
{
    *out = NULL;
    unsigned char head[256];
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s: %s", path, strerror(errno));
    n = fread(head, 1, sizeof head, f);
    fclose(f);
    char tried[512] = "";
    size_t tl = 0;
    for (size_t i = 0; i < rt->n_modules; i++) {
        pl_module *m = rt->modules[i];
        if (m->status != PL_MODULE_LOADED || !(m->api.capabilities & PL_CAP_MODEL_IMPORT))
            continue;
        tl += (size_t)snprintf(tried + tl, sizeof tried - (tl < sizeof tried ? tl : sizeof tried),
                               "%s%s", tl ? ", " : "", m->name);
        if (tl >= sizeof tried)
            tl = sizeof tried - 1;
        if (!m->api.can_import(m->ctx, path, head, n))
            continue;
        pl_graph *g = NULL;
        PL_RETURN_IF_ERROR(pl_graph_create(&g));
        pl_graph_builder *b = NULL;
        pl_status *st = pl_graph_builder_create(g, path, &b);
        if (st == NULL)
            st = m->api.import_model(m->ctx, path, b);
        pl_graph_builder_destroy(b);
        if (st == NULL)
            st = pl_status_wrap(pl_graph_validate(g), "%s: ", path);
        if (st != NULL) {
            pl_graph_destroy(g);
            return st;
        }
        *out = g;
        return NULL;
    }
    if (pl_model_looks_json(path, head, n))
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "%s: Plinth's JSON graph format, but the json format module "
                                "is not loaded (format modules loaded: %s); add "
                                "libplinth_json.so to [runtime] modules",
                                path, tl ? tried : "none");
    return pl_status_create(PL_CODE_UNSUPPORTED,
                            "%s: no loaded format module reads it (format modules loaded: "
                            "%s)",
                            path, tl ? tried : "none");
}

static pl_status *pl_model_load_in(pl_runtime *rt, const char *path,
                                   pl_model **out_model)
{
    pl_model *m = pl_alloc_calloc(rt->alloc, 1, sizeof *m);
    if (m == NULL || (m->path = pl_alloc_strdup(rt->alloc, path)) == NULL) {
        pl_free(m);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory loading %s", path);
    }
    pl_status *st = pl_model_read_graph(rt, path, &m->graph);
    /* Graph JSON as a format allows a graph without outputs (a fragment);
     * a model does not: a run of it could return nothing, and every node
     * would be pruned. Checked here, so every format is held to it. */
    if (st == NULL && pl_graph_output_count(m->graph) == 0)
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "%s: the graph declares no outputs; a model must name at "
                              "least one graph output (\"outputs\" in Plinth's JSON, "
                              "graph.output in ONNX)",
                              path);
    if (st == NULL) {
        pthread_mutex_lock(&rt->opset_mu);
        st = pl_opset_infer(rt->opset, m->graph);
        pthread_mutex_unlock(&rt->opset_mu);
        st = pl_status_wrap(st, "%s: ", path);
    }
    if (st != NULL) {
        pl_graph_destroy(m->graph);
        pl_free(m->path);
        pl_free(m);
        return st;
    }
    atomic_fetch_add(&rt->refs, 1);
    m->runtime = rt;
    m->alloc = rt->alloc;
    atomic_init(&m->refs, 1);
    *out_model = m;
    return NULL;
}

pl_status *pl_model_load(pl_runtime *rt, const char *path, pl_model **out_model)
{
    *out_model = NULL;
    if (rt == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_model_load: NULL runtime or path");
    /* The model inherits the runtime's allocator; the graph, the format
     * module's calls through the host table and the opset allocate
     * through it as the current one. */
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_status *st = pl_model_load_in(rt, path, out_model);
    pl_alloc_scope_leave(outer);
    return st;
}

void pl_model_retain(pl_model *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void pl_model_destroy(pl_model *m)
{
    pl_model_release(m);
}

void pl_model_release(pl_model *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    pl_graph_destroy(m->graph);
    pl_free(m->path);
    pl_runtime *rt = m->runtime;
    pl_free(m);
    pl_runtime_unref(rt);
}

size_t pl_model_node_count(const pl_model *m)
{
    return m ? pl_graph_node_count(m->graph) : 0;
}

size_t pl_model_tensor_count(const pl_model *m)
{
    return m ? pl_graph_tensor_count(m->graph) : 0;
}

static pl_status *pl_model_bind_input_in(pl_model *m, const char *name,
                                         int32_t ndim, const int64_t *dims)
{
    if (m == NULL || name == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_bind_input: NULL argument");
    if (atomic_load(&m->refs) > 1)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "%s: bind input shapes before making sessions", m->path);
    pl_tid t = pl_graph_find_tensor(m->graph, name);
    const pl_graph_tensor *gt = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(m->graph, t);
    if (gt == NULL || !gt->is_input)
        return pl_status_create(PL_CODE_NOT_FOUND, "%s: the model has no input named '%s'",
                                m->path, name);
    if (gt->ndim >= 0 && gt->ndim != ndim)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: input '%s' has rank %d; a shape of rank %d cannot bind it",
                                m->path, name, (int)gt->ndim, (int)ndim);
    for (int32_t d = 0; gt->ndim >= 0 && d < ndim; d++)
        if (gt->dims[d] >= 0 && gt->dims[d] != dims[d])
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: input '%s' has dimension %d fixed at %lld; it cannot "
                                    "be bound to %lld",
                                    m->path, name, (int)d, (long long)gt->dims[d],
                                    (long long)dims[d]);
    for (int32_t d = 0; d < ndim; d++)
        if (dims[d] < 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: input '%s': a bound dimension must be >= 0", m->path,
                                    name);
    PL_RETURN_IF_ERROR(pl_graph_set_type(m->graph, t, gt->dtype, ndim, dims, NULL));
    pl_runtime *rt = m->runtime;
    pthread_mutex_lock(&rt->opset_mu);
    pl_status *st = pl_opset_infer(rt->opset, m->graph);
    pthread_mutex_unlock(&rt->opset_mu);
    return pl_status_wrap(st, "%s: ", m->path);
}

pl_status *pl_model_bind_input(pl_model *m, const char *name, int32_t ndim,
                                const int64_t *dims)
{
    if (m == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_bind_input: NULL argument");
    pl_allocator outer = pl_alloc_scope_enter(m->alloc);
    pl_status *st = pl_model_bind_input_in(m, name, ndim, dims);
    pl_alloc_scope_leave(outer);
    return st;
}

pl_status *pl_model_save_json(const pl_model *m, const char *path)
{
    if (m == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_save_json: NULL argument");
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    char sidecar[512];
    snprintf(sidecar, sizeof sidecar, "%.*s.weights", (int)(len < 400 ? len : 400), base);
    pl_allocator outer = pl_alloc_scope_enter(m->alloc);
    pl_status *st = pl_graph_save_json(m->graph, path, sidecar);
    pl_alloc_scope_leave(outer);
    return st;
}

void pl_string_free(char *text)
{
    pl_free(text);
}

/* ---- explain ----------------------------------------------------------- */

typedef struct pl_explain_inplace {
    const pl_graph *g;
    const pl_opset *set;
} pl_explain_inplace;

/* The schema's in-place option, for outputs of the input's own dtype. */
static bool pl_explain_inplace_fn(void *user, pl_nid node, size_t out_index,
                                  size_t in_slot)
{
    const pl_explain_inplace *x = user;
    const pl_graph_node *n = pl_graph_get_node(x->g, node);
    const pl_op_schema *s = pl_opset_find(x->set, n->domain, n->op,
                                          pl_graph_opset(x->g, n->domain));
    if (s == NULL || pl_opset_inplace_input(s, out_index) != (int)in_slot)
        return false;
    const pl_graph_tensor *in = pl_graph_get_tensor(x->g, n->inputs[in_slot]);
    const pl_graph_tensor *out = pl_graph_get_tensor(x->g, n->outputs[out_index]);
    return PL_DTYPE_EQ(in->dtype, out->dtype);
}

static json_t *pl_explain_tensor_json(const pl_graph *g, pl_tid t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(gt->name));
    json_object_set_new(o, "dtype", json_string(pl_dtype_name(gt->dtype)));
    if (gt->ndim < 0) {
        json_object_set_new(o, "shape", json_null());
    } else {
        json_t *dims = json_array();
        for (int32_t d = 0; d < gt->ndim; d++)
            json_array_append_new(dims, json_integer(gt->dims[d]));
        json_object_set_new(o, "shape", dims);
    }
    return o;
}

static pl_status *pl_explain_build(const pl_model *m, pl_plan *plan,
                                   json_t **out_json)
{
    const pl_graph *g = m->graph;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(m->path));
    json_object_set_new(root, "node_count", json_integer((json_int_t)pl_graph_node_count(g)));
    json_object_set_new(root, "tensor_count", json_integer((json_int_t)pl_graph_tensor_count(g)));
    json_t *nodes = json_array();
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, order[i]);
        json_t *o = json_object();
        json_object_set_new(o, "step", json_integer((json_int_t)i));
        json_object_set_new(o, "name", json_string(n->name));
        json_object_set_new(o, "op", json_string(n->op));
        json_object_set_new(o, "domain", json_string(n->domain));
        json_object_set_new(o, "backend", json_null());
        json_t *ins = json_array();
        for (size_t k = 0; k < n->n_inputs; k++)
            json_array_append_new(ins, n->inputs[k] == PL_TID_NONE
                                           ? json_string("")
                                           : json_string(pl_graph_get_tensor(g, n->inputs[k])->name));
        json_object_set_new(o, "inputs", ins);
        json_t *outs = json_array();
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != PL_TID_NONE)
                json_array_append_new(outs, pl_explain_tensor_json(g, n->outputs[k]));
        json_object_set_new(o, "outputs", outs);
        json_array_append_new(nodes, o);
    }
    json_object_set_new(root, "nodes", nodes);

    json_t *mem = json_object();
    json_t *devices = json_array();
    const pl_plan_device_stats *st = pl_plan_stats(plan, 0);
    json_t *d = json_object();
    json_object_set_new(d, "device", json_string("host"));
    json_object_set_new(d, "arena_bytes", json_integer((json_int_t)st->arena_bytes));
    json_object_set_new(d, "lower_bound_bytes", json_integer((json_int_t)st->lower_bound_bytes));
    json_object_set_new(d, "naive_bytes", json_integer((json_int_t)st->naive_bytes));
    json_object_set_new(d, "tensors_planned", json_integer((json_int_t)st->n_tensors));
    json_object_set_new(d, "tensors_in_place", json_integer((json_int_t)st->n_inplace));
    json_t *entries = json_array();
    for (size_t i = 0; i < pl_plan_entry_count(plan); i++) {
        const pl_plan_entry *e = pl_plan_entry_at(plan, i);
        json_t *o = json_object();
        json_object_set_new(o, "tensor", json_string(pl_graph_get_tensor(g, e->tensor)->name));
        json_object_set_new(o, "offset", json_integer((json_int_t)e->offset));
        json_object_set_new(o, "bytes", json_integer((json_int_t)e->bytes));
        json_object_set_new(o, "live", json_pack("[II]", (json_int_t)e->first_step,
                                                 (json_int_t)e->last_step));
        if (e->shares_with != PL_TID_NONE)
            json_object_set_new(o, "in_place_of",
                                json_string(pl_graph_get_tensor(g, e->shares_with)->name));
        json_array_append_new(entries, o);
    }
    json_object_set_new(d, "tensors", entries);
    json_array_append_new(devices, d);
    json_object_set_new(mem, "devices", devices);
    size_t outside = 0;
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        size_t b;
        if ((gt->is_input || gt->is_output || gt->data) && pl_graph_tensor_bytes(gt, &b))
            outside += b;
    }
    json_object_set_new(mem, "outside_arena_bytes", json_integer((json_int_t)outside));
    json_object_set_new(root, "memory", mem);
    json_object_set_new(root, "partition",
                        json_string("not yet: every node runs on the host until the "
                                    "partitioner lands"));
    *out_json = root;
    return NULL;
}

static void pl_explain_append(char **buf, size_t *len, size_t *cap, bool *oom,
                              const char *fmt, ...) PL_PRINTF_LIKE(5, 6);
static void pl_explain_append(char **buf, size_t *len, size_t *cap, bool *oom,
                              const char *fmt, ...)
{
    if (*oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t add = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (*len + add + 1 > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 4096);
        while (ncap < *len + add + 1)
            ncap *= 2;
        char *grown = pl_realloc(*buf, ncap);
        if (grown == NULL) {
            *oom = true;
            return;
        }
        *buf = grown;
        *cap = ncap;
    }
    memcpy(*buf + *len, line, add);
    *len += add;
    (*buf)[*len] = '\0';
}

static const char *pl_explain_type(const pl_graph_tensor *t, char *buf, size_t n)
{
    char dims[256];
    if (t->ndim < 0)
        snprintf(buf, n, "%s[?]", pl_dtype_name(t->dtype));
    else
        snprintf(buf, n, "%s%s", pl_dtype_name(t->dtype),
                 pl_dims_format(t->dims, t->ndim, dims, sizeof dims));
    return buf;
}

static void pl_explain_bytes(size_t b, char *buf, size_t n)
{
    if (b >= (size_t)10 << 20)
        snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= (size_t)10 << 10)
        snprintf(buf, n, "%.1f KiB", (double)b / (1 << 10));
    else
        snprintf(buf, n, "%zu B", b);
}

static char *pl_explain_text(const pl_model *m, pl_plan *plan)
{
    const pl_graph *g = m->graph;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool oom = false;
#define OUT(...) pl_explain_append(&buf, &len, &cap, &oom, __VA_ARGS__)
    OUT("model: %s (%zu nodes, %zu tensors)\n", m->path, pl_graph_node_count(g),
        pl_graph_tensor_count(g));
    OUT("partition: not yet; every node runs on the host until the partitioner lands\n\n");
    OUT("%-5s %-32s %-22s %s\n", "STEP", "NODE", "OP", "OUTPUTS");
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, order[i]);
        char op[96];
        if (n->domain[0])
            snprintf(op, sizeof op, "%s:%s", n->domain, n->op);
        else
            snprintf(op, sizeof op, "%s", n->op);
        OUT("%-5zu %-32s %-22s", i, n->name, op);
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(g, n->outputs[k]);
            char type[300];
            OUT(" %s:%s", t->name, pl_explain_type(t, type, sizeof type));
        }
        OUT("\n");
    }
    const pl_plan_device_stats *st = pl_plan_stats(plan, 0);
    char a[32], lb[32], nv[32];
    pl_explain_bytes(st->arena_bytes, a, sizeof a);
    pl_explain_bytes(st->lower_bound_bytes, lb, sizeof lb);
    pl_explain_bytes(st->naive_bytes, nv, sizeof nv);
    OUT("\nmemory plan (host): arena %s, lower bound %s, naive %s; %zu tensors "
        "planned, %zu in place",
        a, lb, nv, st->n_tensors, st->n_inplace);
    if (st->lower_bound_bytes > 0)
        OUT(", arena/lower bound %.4f", (double)st->arena_bytes / (double)st->lower_bound_bytes);
    OUT("\n");
    for (size_t i = 0; i < pl_plan_entry_count(plan); i++) {
        const pl_plan_entry *e = pl_plan_entry_at(plan, i);
        OUT("  %-32s offset %-10zu %10zu B  steps %u..%u%s%s\n",
            pl_graph_get_tensor(g, e->tensor)->name, e->offset, e->bytes,
            e->first_step, e->last_step,
            e->shares_with != PL_TID_NONE ? "  in place of " : "",
            e->shares_with != PL_TID_NONE ? pl_graph_get_tensor(g, e->shares_with)->name : "");
    }
#undef OUT
    if (oom) {
        pl_free(buf);
        return NULL;
    }
    return buf;
}

static pl_status *pl_model_explain_in(const pl_model *m, bool as_json,
                                      char **out_text);

pl_status *pl_model_explain(const pl_model *m, bool as_json, char **out_text)
{
    *out_text = NULL;
    if (m == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_explain: NULL model");
    pl_allocator outer = pl_alloc_scope_enter(m->alloc);
    pl_status *st = pl_model_explain_in(m, as_json, out_text);
    pl_alloc_scope_leave(outer);
    return st;
}

static pl_status *pl_model_explain_in(const pl_model *m, bool as_json,
                                      char **out_text)
{
    const pl_graph *g = m->graph;
    size_t nt = pl_graph_tensor_count(g);
    int32_t *device = pl_malloc((nt ? nt : 1) * sizeof *device);
    if (device == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory explaining %s", m->path);
    for (size_t t = 0; t < nt; t++)
        device[t] = 0;
    pl_explain_inplace ctx = {.g = g, .set = m->runtime->opset};
    pl_plan_options o = {.graph = g,
                         .order = pl_graph_topo_order(g),
                         .n_order = pl_graph_node_count(g),
                         .tensor_device = device,
                         .n_devices = 1,
                         .alignment = 64,
                         .inplace = pl_explain_inplace_fn,
                         .user = &ctx};
    pl_plan *plan = NULL;
    pl_status *st = pl_plan_build(&o, &plan);
    pl_free(device);
    if (st != NULL)
        return pl_status_wrap(st, "%s: ", m->path);
    if (as_json) {
        json_t *root = NULL;
        st = pl_explain_build(m, plan, &root);
        if (st == NULL) {
            char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            json_decref(root);
            if (text == NULL)
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory explaining %s", m->path);
            else {
                *out_text = pl_xstrdup(text);
                free(text);
                if (*out_text == NULL)
                    st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory explaining %s", m->path);
            }
        }
    } else {
        *out_text = pl_explain_text(m, plan);
        if (*out_text == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory explaining %s", m->path);
    }
    pl_plan_destroy(plan);
    return st;
}
