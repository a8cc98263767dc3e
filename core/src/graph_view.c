/* graph_view.c — what a module sees of a graph. A view is a list of node ids
 * of one graph plus its boundary (inputs read from outside, outputs used
 * outside); the functions of pl_graph_view_table answer from the graph
 * itself, so a vendor never parses JSON unless it wants to, in which case
 * the JSON text is made once, on first request. */
#include "graph_view.h"

#include <pthread.h>
#include <string.h>

#include "alloc.h"
#include <plinth/graph_hash.h>

#include "filedata.h"
#include "graph_builder.h"
#include "graph_json.h"
#include "status.h"

struct pl_graph_view {
    const pl_graph *g;
    pl_nid *nodes;
    size_t n_nodes;
    pl_tid *inputs;
    size_t n_inputs;
    pl_tid *outputs;
    size_t n_outputs;
    size_t constant_bytes; /* of the constants the nodes read, once each */
    bool exported;         /* the core exports what compile makes of it */
    bool repeated;         /* views of the same constants compile again */
    pthread_mutex_t json_mu;
    char *json;
};

/* Per-tensor marks while computing the boundary. */
enum { PL_VIEW_PRODUCED = 1, PL_VIEW_READ = 2, PL_VIEW_LISTED = 4, PL_VIEW_CONSTANT = 8 };

pl_status *pl_graph_view_create(const pl_graph *g, const pl_nid *nodes,
                                size_t n_nodes, pl_graph_view **out_view)
{
    *out_view = NULL;
    const pl_nid *order = nodes ? nodes : pl_graph_topo_order(g);
    if (nodes == NULL) {
        if (order == NULL)
            return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                    "graph view: the graph is not validated");
        n_nodes = pl_graph_node_count(g);
    }
    pl_allocator alloc = pl_graph_allocator(g);
    pl_graph_view *v = pl_alloc_calloc(alloc, 1, sizeof *v);
    size_t nt = pl_graph_tensor_count(g);
    unsigned char *mark = pl_alloc_calloc(alloc, nt ? nt : 1, 1);
    unsigned char *in_view = pl_alloc_calloc(alloc, pl_graph_node_count(g) ? pl_graph_node_count(g) : 1, 1);
    if (v != NULL)
        pthread_mutex_init(&v->json_mu, NULL);
    if (v == NULL || mark == NULL || in_view == NULL)
        goto oom;
    v->g = g;
    v->exported = true; /* (unknown: a session's compile says) */
    v->n_nodes = n_nodes;
    v->nodes = pl_alloc_malloc(alloc, (n_nodes ? n_nodes : 1) * sizeof *v->nodes);
    if (v->nodes == NULL)
        goto oom;
    for (size_t i = 0; i < n_nodes; i++) {
        if (order[i] >= pl_graph_node_count(g)) {
            pl_free(mark);
            pl_free(in_view);
            pl_graph_view_destroy(v);
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "graph view: node id %u out of range", order[i]);
        }
        v->nodes[i] = order[i];
        in_view[order[i]] = 1;
    }
    size_t n_in = 0, n_out = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, v->nodes[i]);
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != PL_TID_NONE)
                mark[n->outputs[k]] |= PL_VIEW_PRODUCED;
    }
    v->inputs = pl_alloc_malloc(alloc, (nt ? nt : 1) * sizeof *v->inputs);
    v->outputs = pl_alloc_malloc(alloc, (nt ? nt : 1) * sizeof *v->outputs);
    if (v->inputs == NULL || v->outputs == NULL)
        goto oom;
    for (size_t i = 0; i < n_nodes; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, v->nodes[i]);
        for (size_t k = 0; k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t == PL_TID_NONE || (mark[t] & (PL_VIEW_PRODUCED | PL_VIEW_LISTED)))
                continue;
            const pl_graph_tensor *ct = pl_graph_get_tensor(g, t);
            if (ct->data != NULL) {
                if (!(mark[t] & PL_VIEW_CONSTANT))
                    v->constant_bytes += ct->nbytes;
                mark[t] |= PL_VIEW_CONSTANT;
                continue;
            }
            mark[t] |= PL_VIEW_LISTED;
            v->inputs[n_in++] = t;
        }
        for (size_t k = 0; k < n->n_outputs; k++) {
            pl_tid t = n->outputs[k];
            if (t == PL_TID_NONE)
                continue;
            const pl_graph_tensor *tt = pl_graph_get_tensor(g, t);
            bool outside = tt->is_output;
            for (size_t c = 0; c < tt->n_consumers && !outside; c++)
                outside = !in_view[tt->consumers[c]];
            if (outside && !(mark[t] & PL_VIEW_READ)) {
                mark[t] |= PL_VIEW_READ;
                v->outputs[n_out++] = t;
            }
        }
    }
    v->n_inputs = n_in;
    v->n_outputs = n_out;
    pl_free(mark);
    pl_free(in_view);
    *out_view = v;
    return NULL;
oom:
    pl_free(mark);
    pl_free(in_view);
    pl_graph_view_destroy(v);
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory making a graph view");
}

void pl_graph_view_destroy(pl_graph_view *v)
{
    if (v == NULL)
        return;
    pthread_mutex_destroy(&v->json_mu);
    pl_free(v->json);
    pl_free(v->nodes);
    pl_free(v->inputs);
    pl_free(v->outputs);
    pl_free(v);
}

const pl_graph *pl_graph_view_graph(const pl_graph_view *v)
{
    return v ? v->g : NULL;
}

pl_nid pl_graph_view_node_id(const pl_graph_view *v, size_t i)
{
    return i < v->n_nodes ? v->nodes[i] : PL_NID_NONE;
}

/* ---- the table ---------------------------------------------------------- */

static const pl_graph_node *pl_view_node(const pl_graph_view *v, size_t i)
{
    return v && i < v->n_nodes ? pl_graph_get_node(v->g, v->nodes[i]) : NULL;
}

static const pl_graph_tensor *pl_view_tensor(const pl_graph_view *v, int64_t t)
{
    if (v == NULL || t < 0 || (uint64_t)t >= pl_graph_tensor_count(v->g))
        return NULL;
    return pl_graph_get_tensor(v->g, (pl_tid)t);
}

static size_t pl_view_node_count(const pl_graph_view *v) { return v ? v->n_nodes : 0; }

static const char *pl_view_node_name(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? n->name : NULL;
}

static const char *pl_view_node_op(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? n->op : NULL;
}

static const char *pl_view_node_domain(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? n->domain : NULL;
}

static int64_t pl_view_node_opset(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? pl_graph_opset(v->g, n->domain) : 0;
}

static size_t pl_view_node_input_count(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? n->n_inputs : 0;
}

static size_t pl_view_node_output_count(const pl_graph_view *v, size_t i)
{
    const pl_graph_node *n = pl_view_node(v, i);
    return n ? n->n_outputs : 0;
}

static int64_t pl_view_node_input(const pl_graph_view *v, size_t i, size_t k)
{
    const pl_graph_node *n = pl_view_node(v, i);
    if (n == NULL || k >= n->n_inputs || n->inputs[k] == PL_TID_NONE)
        return -1;
    return n->inputs[k];
}

static int64_t pl_view_node_output(const pl_graph_view *v, size_t i, size_t k)
{
    const pl_graph_node *n = pl_view_node(v, i);
    if (n == NULL || k >= n->n_outputs || n->outputs[k] == PL_TID_NONE)
        return -1;
    return n->outputs[k];
}

static const pl_attr *pl_view_attr(const pl_graph_view *v, size_t i,
                                   const char *name, pl_attr_kind kind)
{
    const pl_attr *a = pl_graph_node_attr(pl_view_node(v, i), name);
    return a && a->kind == kind ? a : NULL;
}

static pl_graph_attr_kind pl_view_attr_kind(const pl_graph_view *v, size_t i,
                                            const char *name)
{
    const pl_attr *a = pl_graph_node_attr(pl_view_node(v, i), name);
    return a ? (pl_graph_attr_kind)a->kind : PL_GRAPH_ATTR_NONE;
}

static int pl_view_attr_int(const pl_graph_view *v, size_t i, const char *name,
                            int64_t *out)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_INT);
    if (a)
        *out = a->i;
    return a != NULL;
}

static int pl_view_attr_float(const pl_graph_view *v, size_t i,
                              const char *name, double *out)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_FLOAT);
    if (a)
        *out = a->f;
    return a != NULL;
}

static int pl_view_attr_string(const pl_graph_view *v, size_t i,
                               const char *name, const char **out,
                               size_t *out_len)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_STRING);
    if (a) {
        *out = a->s;
        if (out_len)
            *out_len = a->s_len;
    }
    return a != NULL;
}

static int pl_view_attr_ints(const pl_graph_view *v, size_t i, const char *name,
                             const int64_t **out, size_t *out_n)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_INTS);
    if (a) {
        *out = a->ints;
        *out_n = a->n;
    }
    return a != NULL;
}

static int pl_view_attr_floats(const pl_graph_view *v, size_t i,
                               const char *name, const double **out,
                               size_t *out_n)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_FLOATS);
    if (a) {
        *out = a->floats;
        *out_n = a->n;
    }
    return a != NULL;
}

static int pl_view_attr_strings(const pl_graph_view *v, size_t i,
                                const char *name, const char *const **out,
                                size_t *out_n)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_STRINGS);
    if (a) {
        *out = (const char *const *)a->strings;
        *out_n = a->n;
    }
    return a != NULL;
}

static int pl_view_attr_tensor(const pl_graph_view *v, size_t i,
                               const char *name, pl_tensor *out)
{
    const pl_attr *a = pl_view_attr(v, i, name, PL_ATTR_TENSOR);
    if (a == NULL)
        return 0;
    memset(out, 0, sizeof *out);
    out->data = a->tensor->data;
    out->device.device_type = PL_DEVICE_CPU;
    out->ndim = a->tensor->ndim;
    out->dtype = a->tensor->dtype;
    out->shape = a->tensor->dims;
    out->struct_size = sizeof *out;
    return 1;
}

static size_t pl_view_tensor_count(const pl_graph_view *v)
{
    return v ? pl_graph_tensor_count(v->g) : 0;
}

static const char *pl_view_tensor_name(const pl_graph_view *v, int64_t t)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    return tt ? tt->name : NULL;
}

static int pl_view_tensor_type(const pl_graph_view *v, int64_t t,
                               pl_dtype *out_dtype, int32_t *out_ndim,
                               const int64_t **out_dims)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    if (tt == NULL)
        return 0;
    if (out_dtype)
        *out_dtype = tt->dtype;
    if (out_ndim)
        *out_ndim = tt->ndim;
    if (out_dims)
        *out_dims = tt->dims;
    return 1;
}

static int pl_view_tensor_constant(const pl_graph_view *v, int64_t t,
                                   const void **out_data, size_t *out_bytes)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    if (tt == NULL || tt->data == NULL)
        return 0;
    /* Read back first if a module said it was done with it (filedata.h);
     * only a model file changed on disk since the load makes that fail. */
    pl_status *st = pl_filedata_need(pl_graph_filedata(v->g), tt->data);
    if (st != NULL) {
        pl_status_free(st);
        return 0;
    }
    *out_data = tt->data;
    *out_bytes = tt->nbytes;
    return 1;
}

static int pl_view_tensor_digest(const pl_graph_view *v, int64_t t, size_t *out_bytes,
                                 uint64_t *out_digest)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    if (tt == NULL || tt->data == NULL)
        return 0;
    *out_bytes = tt->nbytes;
    if (pl_filedata_digest(pl_graph_filedata(v->g), tt->data, tt->nbytes, out_digest))
        return 1; /* known: the bytes stay untouched */
    const void *data;
    size_t bytes;
    if (!pl_view_tensor_constant(v, t, &data, &bytes))
        return 0;
    *out_digest = PL_HASH_SEED;
    pl_hash_bytes(out_digest, data, bytes);
    pl_filedata_set_digest(pl_graph_filedata(v->g), tt->data, tt->nbytes, *out_digest);
    return 1;
}

static void pl_view_tensor_constant_done(const pl_graph_view *v, int64_t t)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    if (tt != NULL && tt->data != NULL)
        pl_filedata_done(pl_graph_filedata(v->g), v->g, tt->data);
}

static size_t pl_view_constant_bytes(const pl_graph_view *v) { return v ? v->constant_bytes : 0; }

static int pl_view_tensor_constant_keep(const pl_graph_view *v, int64_t t)
{
    const pl_graph_tensor *tt = pl_view_tensor(v, t);
    return tt != NULL && tt->data != NULL &&
           pl_filedata_keep(pl_graph_filedata(v->g), v->g, tt->data);
}

static int pl_view_compile_exported(const pl_graph_view *v) { return v != NULL && v->exported; }

static int pl_view_compile_repeated(const pl_graph_view *v) { return v != NULL && v->repeated; }

void pl_graph_view_set_repeated(pl_graph_view *view, bool repeated)
{
    if (view != NULL)
        view->repeated = repeated;
}

void pl_graph_view_set_exported(pl_graph_view *view, bool exported)
{
    if (view != NULL)
        view->exported = exported;
}

static size_t pl_view_input_count(const pl_graph_view *v) { return v ? v->n_inputs : 0; }
static int64_t pl_view_input(const pl_graph_view *v, size_t i)
{
    return v && i < v->n_inputs ? (int64_t)v->inputs[i] : -1;
}
static size_t pl_view_output_count(const pl_graph_view *v) { return v ? v->n_outputs : 0; }
static int64_t pl_view_output(const pl_graph_view *v, size_t i)
{
    return v && i < v->n_outputs ? (int64_t)v->outputs[i] : -1;
}

static const char *pl_view_json(const pl_graph_view *cv)
{
    pl_graph_view *v = (pl_graph_view *)cv;
    if (v == NULL)
        return NULL;
    pthread_mutex_lock(&v->json_mu);
    if (v->json == NULL) {
        char *text = NULL;
        pl_status *st = pl_graph_to_json(v->g, v->nodes, v->n_nodes, &text);
        if (st == NULL)
            v->json = text;
        pl_status_free(st);
    }
    pthread_mutex_unlock(&v->json_mu);
    return v->json;
}

const pl_graph_api pl_graph_view_table = {
    .header = PL_ABI_HEADER_INIT(pl_graph_api),
    .node_count = pl_view_node_count,
    .node_name = pl_view_node_name,
    .node_op = pl_view_node_op,
    .node_domain = pl_view_node_domain,
    .node_opset = pl_view_node_opset,
    .node_input_count = pl_view_node_input_count,
    .node_output_count = pl_view_node_output_count,
    .node_input = pl_view_node_input,
    .node_output = pl_view_node_output,
    .attr_kind = pl_view_attr_kind,
    .attr_int = pl_view_attr_int,
    .attr_float = pl_view_attr_float,
    .attr_string = pl_view_attr_string,
    .attr_ints = pl_view_attr_ints,
    .attr_floats = pl_view_attr_floats,
    .attr_strings = pl_view_attr_strings,
    .attr_tensor = pl_view_attr_tensor,
    .tensor_count = pl_view_tensor_count,
    .tensor_name = pl_view_tensor_name,
    .tensor_type = pl_view_tensor_type,
    .tensor_constant = pl_view_tensor_constant,
    .input_count = pl_view_input_count,
    .input = pl_view_input,
    .output_count = pl_view_output_count,
    .output = pl_view_output,
    .json = pl_view_json,
    .builder_model_dir = pl_builder_model_dir,
    .builder_opset = pl_builder_opset,
    .builder_tensor = pl_builder_tensor,
    .builder_constant = pl_builder_constant,
    .builder_constant_file = pl_builder_constant_file,
    .builder_input = pl_builder_input,
    .builder_output = pl_builder_output,
    .builder_node = pl_builder_node,
    .builder_attr_int = pl_builder_attr_int,
    .builder_attr_float = pl_builder_attr_float,
    .builder_attr_string = pl_builder_attr_string,
    .builder_attr_ints = pl_builder_attr_ints,
    .builder_attr_floats = pl_builder_attr_floats,
    .builder_attr_strings = pl_builder_attr_strings,
    .builder_attr_tensor = pl_builder_attr_tensor,
    .builder_attr_graph = pl_builder_attr_graph,
    .builder_attr_graphs = pl_builder_attr_graphs,
    .builder_data_file = pl_builder_data_file,
    .builder_constant_model_file = pl_builder_constant_model_file,
    .tensor_constant_done = pl_view_tensor_constant_done,
    .tensor_digest = pl_view_tensor_digest,
    .constant_bytes = pl_view_constant_bytes,
    .tensor_constant_keep = pl_view_tensor_constant_keep,
    .compile_exported = pl_view_compile_exported,
    .compile_repeated = pl_view_compile_repeated,
};
