/* graph.c — the graph IR (graph.h): growable tables of tensors and nodes,
 * name maps, attributes, constants (validation and the topological order
 * are in graph_validate.c). Every allocation goes through alloc.h, and every failure leaves the
 * graph consistent, so a model loader can stop at any point and destroy it. */
#include "graph.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "alloc.h"
#include "filedata.h"
#include "strtab.h"
#include "graph_impl.h"
#include "status.h"
#include "strmap.h"


pl_status *pl_graph_oom(const char *what)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory %s", what);
}

/* Grows *array (of elem bytes) so that it holds at least need elements. */
static bool pl_grow(pl_allocator alloc, void **array, size_t *cap, size_t need,
                    size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 8;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return false;
        n *= 2;
    }
    size_t bytes;
    if (!pl_size_mul(n, elem, &bytes))
        return false;
    void *grown = pl_alloc_realloc(alloc, *array, bytes);
    if (grown == NULL)
        return false;
    *array = grown;
    *cap = n;
    return true;
}

static void pl_graph_invalidate(pl_graph *g)
{
    g->valid = false;
}

/* ---- dtypes ------------------------------------------------------------- */

static const struct {
    const char *name;
    pl_dtype dtype;
} pl_dtype_names[] = {
    {"f32", {PL_TYPE_FLOAT, 32, 1}}, {"f64", {PL_TYPE_FLOAT, 64, 1}},
    {"f16", {PL_TYPE_FLOAT, 16, 1}}, {"bf16", {PL_TYPE_BFLOAT, 16, 1}},
    {"u8", {PL_TYPE_UINT, 8, 1}},    {"i8", {PL_TYPE_INT, 8, 1}},
    {"i32", {PL_TYPE_INT, 32, 1}},   {"i64", {PL_TYPE_INT, 64, 1}},
    {"bool", {PL_TYPE_BOOL, 8, 1}},
    {"i16", {PL_TYPE_INT, 16, 1}},   {"u16", {PL_TYPE_UINT, 16, 1}},
    {"u32", {PL_TYPE_UINT, 32, 1}},  {"u64", {PL_TYPE_UINT, 64, 1}},
};

const char *pl_dtype_name(pl_dtype dtype)
{
    if (dtype.lanes == 0)
        return "unknown";
    if (dtype.code == PL_TYPE_STRING && dtype.lanes == 1)
        return "string";
    for (size_t i = 0; i < sizeof pl_dtype_names / sizeof pl_dtype_names[0]; i++)
        if (PL_DTYPE_EQ(dtype, pl_dtype_names[i].dtype))
            return pl_dtype_names[i].name;
    return "invalid";
}

bool pl_dtype_parse(const char *name, pl_dtype *out_dtype)
{
    for (size_t i = 0; i < sizeof pl_dtype_names / sizeof pl_dtype_names[0]; i++)
        if (strcmp(name, pl_dtype_names[i].name) == 0) {
            *out_dtype = pl_dtype_names[i].dtype;
            return true;
        }
    return false;
}

bool pl_dims_elements(const int64_t *dims, int32_t ndim, size_t *out_elements)
{
    size_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (dims[i] < 0 || (uint64_t)dims[i] > SIZE_MAX)
            return false;
        if (!pl_size_mul(n, (size_t)dims[i], &n))
            return false;
    }
    *out_elements = n;
    return true;
}

bool pl_graph_tensor_bytes(const pl_graph_tensor *t, size_t *out_bytes)
{
    size_t esize = pl_dtype_size(t->dtype);
    size_t n;
    if (esize == 0 || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n))
        return false;
    return pl_size_mul(n, esize, out_bytes);
}

/* ---- life ---------------------------------------------------------------- */

pl_status *pl_graph_create(pl_graph **out_graph)
{
    pl_allocator alloc = pl_alloc_current();
    pl_graph *g = pl_alloc_calloc(alloc, 1, sizeof *g);
    *out_graph = g;
    if (g == NULL)
        return pl_graph_oom("creating a graph");
    g->alloc = alloc;
    g->tensor_names.alloc = alloc;
    g->node_names.alloc = alloc;
    return NULL;
}

pl_allocator pl_graph_allocator(const pl_graph *g)
{
    return g ? g->alloc : pl_alloc_current();
}

static void pl_attr_free(pl_attr *a)
{
    pl_free(a->name);
    pl_free(a->s);
    pl_free(a->ints);
    pl_free(a->floats);
    for (size_t i = 0; a->strings && i < a->n; i++)
        pl_free(a->strings[i]);
    pl_free(a->strings);
    if (a->tensor) {
        pl_free(a->tensor->dims);
        pl_free(a->tensor->data);
        pl_free(a->tensor);
    }
    for (size_t i = 0; a->graphs && i < a->n; i++)
        pl_graph_destroy(a->graphs[i]);
    pl_free(a->graphs);
}

static void pl_tensor_free_type(pl_graph_tensor *t)
{
    if (t->dim_params) {
        for (int32_t i = 0; i < t->ndim; i++)
            pl_free(t->dim_params[i]);
        pl_free(t->dim_params);
    }
    pl_free(t->dims);
    t->dims = NULL;
    t->dim_params = NULL;
}

void pl_graph_destroy(pl_graph *g)
{
    if (g == NULL)
        return;
    for (size_t i = 0; i < g->n_tensors; i++) {
        pl_graph_tensor *t = &g->tensors[i];
        pl_free(t->name);
        pl_tensor_free_type(t);
        if (!t->data_borrowed)
            pl_free(t->data);
    }
    pl_free(g->tensors);
    for (size_t i = 0; i < g->n_nodes; i++) {
        pl_graph_node *n = &g->nodes[i];
        pl_free(n->name);
        pl_free(n->op);
        pl_free(n->domain);
        for (size_t k = 0; k < n->n_attrs; k++)
            pl_attr_free(&n->attrs[k]);
        pl_free(n->attrs);
        pl_free(n->inputs);
        pl_free(n->outputs);
    }
    pl_free(g->nodes);
    pl_strtab_destroy(g->strtab);
    for (size_t i = 0; i < g->n_notes; i++)
        pl_free(g->notes[i]);
    pl_free(g->notes);
    pl_strmap_free(&g->tensor_names);
    pl_strmap_free(&g->node_names);
    pl_free(g->inputs);
    pl_free(g->outputs);
    for (size_t i = 0; i < g->n_opsets; i++)
        pl_free(g->opsets[i].domain);
    pl_free(g->opsets);
    for (size_t i = 0; i < g->n_mappings; i++)
        munmap(g->mappings[i].addr, g->mappings[i].len);
    pl_free(g->mappings);
    if (g->owns_filedata)
        pl_filedata_destroy(g->filedata);
    pl_graph_clear_seqs(g);
    pl_free(g->seqs);
    pl_free(g->topo);
    pl_free(g->consumer_block);
    pl_free(g);
}

/* ---- sequences ---------------------------------------------------------- */

pl_status *pl_graph_set_seq(pl_graph *g, pl_tid t, const pl_graph_seq *seq)
{
    if (t >= g->n_tensors)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no tensor %u", t);
    if (t >= g->n_seqs) {
        size_t n = g->n_tensors;
        pl_graph_seq **grown = pl_alloc_realloc(g->alloc, g->seqs, n * sizeof *grown);
        if (grown == NULL)
            return pl_graph_oom("following a sequence");
        memset(grown + g->n_seqs, 0, (n - g->n_seqs) * sizeof *grown);
        g->seqs = grown;
        g->n_seqs = n;
    }
    pl_graph_seq *copy = pl_alloc_malloc(g->alloc, sizeof *copy);
    pl_tid *elems = pl_alloc_malloc(g->alloc, (seq->n ? seq->n : 1) * sizeof *elems);
    if (copy == NULL || elems == NULL) {
        pl_free(copy);
        pl_free(elems);
        return pl_graph_oom("following a sequence");
    }
    *copy = *seq;
    if (seq->n)
        memcpy(elems, seq->elems, seq->n * sizeof *elems);
    copy->elems = elems;
    if (g->seqs[t] != NULL) {
        pl_free(g->seqs[t]->elems);
        pl_free(g->seqs[t]);
    }
    g->seqs[t] = copy;
    return NULL;
}

void pl_graph_clear_seqs(pl_graph *g)
{
    for (size_t i = 0; i < g->n_seqs; i++)
        if (g->seqs[i] != NULL) {
            pl_free(g->seqs[i]->elems);
            pl_free(g->seqs[i]);
            g->seqs[i] = NULL;
        }
}

const pl_graph_seq *pl_graph_seq_of(const pl_graph *g, pl_tid t)
{
    return t < g->n_seqs ? g->seqs[t] : NULL;
}

/* ---- tensors ------------------------------------------------------------ */

pl_tid pl_graph_find_tensor(const pl_graph *g, const char *name)
{
    uint32_t id;
    return name && pl_strmap_get(&g->tensor_names, name, &id) ? id : PL_TID_NONE;
}

pl_status *pl_graph_tensor_get_or_add(pl_graph *g, const char *name,
                                      pl_tid *out_id)
{
    *out_id = PL_TID_NONE;
    if (name == NULL || name[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "a tensor needs a name");
    pl_tid found = pl_graph_find_tensor(g, name);
    if (found != PL_TID_NONE) {
        *out_id = found;
        return NULL;
    }
    if (g->n_tensors >= PL_TID_NONE - 1)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "too many tensors");
    if (!pl_grow(g->alloc, (void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1,
                 sizeof *g->tensors))
        return pl_graph_oom("adding a tensor");
    pl_graph_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = pl_alloc_strdup(g->alloc, name);
    if (t->name == NULL)
        return pl_graph_oom("adding a tensor");
    t->ndim = -1;
    t->producer = PL_NID_NONE;
    if (!pl_strmap_put(&g->tensor_names, t->name, (uint32_t)g->n_tensors)) {
        pl_free(t->name);
        return pl_graph_oom("adding a tensor");
    }
    *out_id = (pl_tid)g->n_tensors++;
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_set_type(pl_graph *g, pl_tid id, pl_dtype dtype,
                             int32_t ndim, const int64_t *dims,
                             const char *const *dim_params)
{
    if (id >= g->n_tensors)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no tensor %u", id);
    pl_graph_tensor *t = &g->tensors[id];
    if (ndim < -1 || ndim > PL_GRAPH_MAX_RANK)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "tensor '%s': rank %d out of range (at most %d)",
                                t->name, (int)ndim, PL_GRAPH_MAX_RANK);
    if (dtype.lanes != 0 && (pl_dtype_size(dtype) == 0 || dtype.code == PL_TYPE_STRING))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "tensor '%s': unsupported dtype (code %u, %u bits)",
                                t->name, dtype.code, dtype.bits);
    for (int32_t i = 0; i < ndim; i++)
        if (dims == NULL || dims[i] < -1)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "tensor '%s': dimension %d is %lld; dims "
                                    "are >= 0, or -1 for unknown",
                                    t->name, (int)i,
                                    dims ? (long long)dims[i] : 0LL);
    if (t->data != NULL)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "tensor '%s': cannot retype a constant", t->name);
    int64_t *nd = NULL;
    char **np = NULL;
    if (ndim > 0) {
        nd = pl_alloc_malloc(g->alloc, (size_t)ndim * sizeof *nd);
        if (nd == NULL)
            return pl_graph_oom("setting a tensor type");
        memcpy(nd, dims, (size_t)ndim * sizeof *nd);
        bool any_param = false;
        for (int32_t i = 0; dim_params && i < ndim; i++)
            any_param = any_param || (dim_params[i] && dim_params[i][0]);
        if (any_param) {
            np = pl_alloc_calloc(g->alloc, (size_t)ndim, sizeof *np);
            if (np == NULL) {
                pl_free(nd);
                return pl_graph_oom("setting a tensor type");
            }
            for (int32_t i = 0; i < ndim; i++) {
                if (dim_params[i] == NULL || dim_params[i][0] == '\0')
                    continue;
                np[i] = pl_alloc_strdup(g->alloc, dim_params[i]);
                if (np[i] == NULL) {
                    for (int32_t k = 0; k < i; k++)
                        pl_free(np[k]);
                    pl_free(np);
                    pl_free(nd);
                    return pl_graph_oom("setting a tensor type");
                }
            }
        }
    }
    pl_tensor_free_type(t);
    t->dtype = dtype;
    t->ndim = ndim;
    t->dims = nd;
    t->dim_params = np;
    return NULL;
}

static pl_status *pl_graph_check_constant(pl_graph *g, pl_tid id, size_t nbytes)
{
    if (id >= g->n_tensors)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no tensor %u", id);
    pl_graph_tensor *t = &g->tensors[id];
    size_t expect;
    if (!pl_graph_tensor_bytes(t, &expect))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "constant '%s': its dtype and shape must be "
                                "fully known and its byte size fit in memory",
                                t->name);
    if (expect != nbytes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "constant '%s': %zu bytes given, its %s shape "
                                "needs %zu",
                                t->name, nbytes, pl_dtype_name(t->dtype), expect);
    if (t->data != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "constant '%s' is given twice", t->name);
    return NULL;
}

pl_status *pl_graph_set_constant(pl_graph *g, pl_tid id, const void *data,
                                 size_t nbytes)
{
    PL_RETURN_IF_ERROR(pl_graph_check_constant(g, id, nbytes));
    void *copy = pl_alloc_malloc(g->alloc, nbytes ? nbytes : 1);
    if (copy == NULL)
        return pl_graph_oom("copying a constant");
    if (nbytes)
        memcpy(copy, data, nbytes);
    g->tensors[id].data = copy;
    g->tensors[id].nbytes = nbytes;
    g->tensors[id].data_borrowed = false;
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_set_constant_ref(pl_graph *g, pl_tid id, const void *data,
                                     size_t nbytes)
{
    PL_RETURN_IF_ERROR(pl_graph_check_constant(g, id, nbytes));
    /* A zero-byte constant still needs a non-NULL marker. */
    static const char pl_empty_constant[1];
    g->tensors[id].data = nbytes ? (void *)data : (void *)pl_empty_constant;
    g->tensors[id].nbytes = nbytes;
    g->tensors[id].data_borrowed = true;
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_set_outer_constant(pl_graph *g, pl_tid id, const void *data, size_t nbytes)
{
    if (id >= g->n_tensors || !g->valid || !g->tensors[id].is_outer)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "tensor %u is not an outer-scope "
                                                          "reference of a validated body", id);
    PL_RETURN_IF_ERROR(pl_graph_check_constant(g, id, nbytes));
    static const char pl_empty_outer[1];
    g->tensors[id].data = nbytes ? (void *)data : (void *)pl_empty_outer;
    g->tensors[id].nbytes = nbytes;
    g->tensors[id].data_borrowed = true;
    return NULL; /* no producer, no consumer changes: still valid */
}

pl_status *pl_graph_set_constant_owned(pl_graph *g, pl_tid id, void *data, size_t nbytes)
{
    pl_status *st = pl_graph_check_constant(g, id, nbytes);
    if (st != NULL) {
        pl_free(data);
        return st;
    }
    g->tensors[id].data = data;
    g->tensors[id].nbytes = nbytes;
    g->tensors[id].data_borrowed = false;
    pl_graph_invalidate(g);
    return NULL;
}

struct pl_filedata *pl_graph_filedata(const pl_graph *g)
{
    return g ? g->filedata : NULL;
}

void pl_graph_own_filedata(pl_graph *g, struct pl_filedata *f)
{
    if (g->owns_filedata)
        pl_filedata_destroy(g->filedata);
    g->filedata = f;
    g->owns_filedata = f != NULL;
}

pl_status *pl_graph_keep_mapping(pl_graph *g, void *addr, size_t len)
{
    size_t cap = g->n_mappings;
    if (!pl_grow(g->alloc, (void **)&g->mappings, &cap, g->n_mappings + 1,
                 sizeof *g->mappings))
        return pl_graph_oom("keeping a mapping");
    g->mappings[g->n_mappings].addr = addr;
    g->mappings[g->n_mappings].len = len;
    g->n_mappings++;
    return NULL;
}

static pl_status *pl_graph_add_io(pl_graph *g, pl_tid id, bool input, bool again)
{
    if (id >= g->n_tensors)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no tensor %u", id);
    pl_graph_tensor *t = &g->tensors[id];
    if ((input ? t->is_input : t->is_output) && !again)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "tensor '%s' is listed twice as a graph %s",
                                t->name, input ? "input" : "output");
    pl_tid **arr = input ? &g->inputs : &g->outputs;
    size_t *n = input ? &g->n_inputs : &g->n_outputs;
    size_t *cap = input ? &g->cap_inputs : &g->cap_outputs;
    if (!pl_grow(g->alloc, (void **)arr, cap, *n + 1, sizeof **arr))
        return pl_graph_oom("adding a graph input or output");
    (*arr)[(*n)++] = id;
    if (input)
        t->is_input = true;
    else
        t->is_output = true;
    pl_graph_invalidate(g);
    return NULL;
}

void pl_graph_drop_input(pl_graph *g, pl_tid t)
{
    size_t k = 0;
    for (size_t i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] != t)
            g->inputs[k++] = g->inputs[i];
    g->n_inputs = k;
    if (t < g->n_tensors)
        g->tensors[t].is_input = false;
    pl_graph_invalidate(g);
}

void pl_graph_clear_outputs(pl_graph *g)
{
    for (size_t i = 0; i < g->n_outputs; i++)
        g->tensors[g->outputs[i]].is_output = false;
    g->n_outputs = 0;
    pl_graph_invalidate(g);
}

pl_status *pl_graph_add_input(pl_graph *g, pl_tid t)
{
    return pl_graph_add_io(g, t, true, false);
}

pl_status *pl_graph_add_output(pl_graph *g, pl_tid t)
{
    return pl_graph_add_io(g, t, false, false);
}

pl_status *pl_graph_add_output_again(pl_graph *g, pl_tid t)
{
    return pl_graph_add_io(g, t, false, true);
}

/* ---- nodes -------------------------------------------------------------- */

/* pl_graph_add_node with its inputs and outputs given as tensors of G
 * (INPUT_IDS / OUTPUT_IDS; PL_TID_NONE for an absent one) instead of names:
 * a graph copy, whose tensors keep their ids, adds every node without
 * looking each of its tensors up by name again. */
static pl_status *pl_graph_add_node_in(pl_graph *g, const char *name, const char *op,
                                       const char *domain, const char *const *inputs,
                                       const pl_tid *input_ids, size_t n_inputs,
                                       const char *const *outputs, const pl_tid *output_ids,
                                       size_t n_outputs, pl_nid *out_id);

pl_status *pl_graph_add_node(pl_graph *g, const char *name, const char *op,
                             const char *domain, const char *const *inputs,
                             size_t n_inputs, const char *const *outputs,
                             size_t n_outputs, pl_nid *out_id)
{
    return pl_graph_add_node_in(g, name, op, domain, inputs, NULL, n_inputs, outputs, NULL,
                                n_outputs, out_id);
}

static pl_status *pl_graph_add_node_in(pl_graph *g, const char *name, const char *op,
                                       const char *domain, const char *const *inputs,
                                       const pl_tid *input_ids, size_t n_inputs,
                                       const char *const *outputs, const pl_tid *output_ids,
                                       size_t n_outputs, pl_nid *out_id)
{
    if (out_id)
        *out_id = PL_NID_NONE;
    if (op == NULL || op[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "node '%s': empty op",
                                name ? name : "");
    if (g->n_nodes >= PL_NID_NONE - 1)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "too many nodes");
    char generated[96];
    if (name == NULL || name[0] == '\0') {
        /* "<op>_<index>", with a further suffix if a node already has it. */
        snprintf(generated, sizeof generated, "%.64s_%zu", op, g->n_nodes);
        for (unsigned k = 1; pl_graph_find_node(g, generated) != PL_NID_NONE; k++)
            snprintf(generated, sizeof generated, "%.64s_%zu_%u", op, g->n_nodes, k);
        name = generated;
    }
    pl_nid existing = pl_graph_find_node(g, name);
    if (existing != PL_NID_NONE)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "node '%s' (%s): the name is already used by "
                                "another node (%s)",
                                name, op, g->nodes[existing].op);
    if (!pl_grow(g->alloc, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1,
                 sizeof *g->nodes))
        return pl_graph_oom("adding a node");
    pl_graph_node *n = &g->nodes[g->n_nodes];
    memset(n, 0, sizeof *n);
    n->name = pl_alloc_strdup(g->alloc, name);
    n->op = pl_alloc_strdup(g->alloc, op);
    n->domain = pl_alloc_strdup(g->alloc, domain ? domain : "");
    n->inputs = pl_alloc_malloc(g->alloc, (n_inputs ? n_inputs : 1) * sizeof *n->inputs);
    n->outputs = pl_alloc_malloc(g->alloc, (n_outputs ? n_outputs : 1) * sizeof *n->outputs);
    pl_status *st = NULL;
    if (!n->name || !n->op || !n->domain || !n->inputs || !n->outputs)
        st = pl_graph_oom("adding a node");
    for (size_t i = 0; st == NULL && i < n_inputs; i++) {
        if (input_ids != NULL) {
            n->inputs[i] = input_ids[i];
            continue;
        }
        if (inputs[i] == NULL || inputs[i][0] == '\0') {
            n->inputs[i] = PL_TID_NONE;
            continue;
        }
        st = pl_graph_tensor_get_or_add(g, inputs[i], &n->inputs[i]);
    }
    for (size_t i = 0; st == NULL && i < n_outputs; i++) {
        if (output_ids != NULL) {
            n->outputs[i] = output_ids[i];
            continue;
        }
        if (outputs[i] == NULL || outputs[i][0] == '\0') {
            /* An optional output nobody wants (ONNX's empty name). */
            n->outputs[i] = PL_TID_NONE;
            continue;
        }
        st = pl_graph_tensor_get_or_add(g, outputs[i], &n->outputs[i]);
    }
    if (st == NULL && !pl_strmap_put(&g->node_names, n->name, (uint32_t)g->n_nodes))
        st = pl_graph_oom("adding a node");
    if (st != NULL) {
        pl_free(n->name);
        pl_free(n->op);
        pl_free(n->domain);
        pl_free(n->inputs);
        pl_free(n->outputs);
        memset(n, 0, sizeof *n);
        return st;
    }
    n->n_inputs = n_inputs;
    n->n_formal_inputs = n_inputs;
    n->n_outputs = n_outputs;
    if (out_id)
        *out_id = (pl_nid)g->n_nodes;
    g->n_nodes++;
    pl_graph_invalidate(g);
    return NULL;
}

pl_nid pl_graph_find_node(const pl_graph *g, const char *name)
{
    uint32_t id;
    return name && pl_strmap_get(&g->node_names, name, &id) ? id : PL_NID_NONE;
}

/* ---- attributes ---------------------------------------------------------- */

/* A fresh attribute slot on node N named NAME (filled by the caller), or an
 * error for a duplicate name or no memory. */
static pl_status *pl_graph_new_attr(pl_graph *g, pl_nid id, const char *name,
                                    pl_attr **out_attr)
{
    *out_attr = NULL;
    if (id >= g->n_nodes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no node %u", id);
    pl_graph_node *n = &g->nodes[id];
    if (name == NULL || name[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "node '%s' (%s): an attribute needs a name",
                                n->name, n->op);
    if (pl_graph_node_attr(n, name) != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "node '%s' (%s): attribute '%s' given twice",
                                n->name, n->op, name);
    size_t cap = n->n_attrs;
    if (!pl_grow(g->alloc, (void **)&n->attrs, &cap, n->n_attrs + 1, sizeof *n->attrs))
        return pl_graph_oom("adding an attribute");
    pl_attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = pl_alloc_strdup(g->alloc, name);
    if (a->name == NULL)
        return pl_graph_oom("adding an attribute");
    *out_attr = a;
    return NULL;
}

static void pl_graph_commit_attr(pl_graph *g, pl_nid id)
{
    g->nodes[id].n_attrs++;
}

static void pl_graph_drop_attr(pl_attr *a)
{
    pl_attr_free(a);
    memset(a, 0, sizeof *a);
}

pl_status *pl_graph_attr_int(pl_graph *g, pl_nid n, const char *name,
                             int64_t value)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    a->kind = PL_ATTR_INT;
    a->i = value;
    pl_graph_commit_attr(g, n);
    return NULL;
}

pl_status *pl_graph_attr_float(pl_graph *g, pl_nid n, const char *name,
                               double value)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    a->kind = PL_ATTR_FLOAT;
    a->f = value;
    pl_graph_commit_attr(g, n);
    return NULL;
}

pl_status *pl_graph_attr_string(pl_graph *g, pl_nid n, const char *name,
                                const char *value, size_t len)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    a->kind = PL_ATTR_STRING;
    a->s = pl_alloc_strndup(g->alloc, value ? value : "", value ? len : 0);
    a->s_len = value ? len : 0;
    if (a->s == NULL) {
        pl_graph_drop_attr(a);
        return pl_graph_oom("adding an attribute");
    }
    pl_graph_commit_attr(g, n);
    return NULL;
}

struct pl_strtab *pl_graph_strtab(const pl_graph *g)
{
    return g ? g->strtab : NULL;
}

struct pl_strtab *pl_graph_strtab_make(pl_graph *g)
{
    if (g->strtab == NULL)
        g->strtab = pl_strtab_create();
    return g->strtab;
}

struct pl_strtab *pl_graph_strtab_take(pl_graph *g)
{
    struct pl_strtab *tab = g->strtab;
    g->strtab = NULL;
    return tab;
}

static void *pl_dup_array(pl_allocator alloc, const void *src, size_t count,
                          size_t elem, bool *ok)
{
    size_t bytes;
    *ok = pl_size_mul(count ? count : 1, elem, &bytes);
    if (!*ok)
        return NULL;
    void *dst = pl_alloc_malloc(alloc, bytes);
    if (dst == NULL) {
        *ok = false;
        return NULL;
    }
    if (count)
        memcpy(dst, src, count * elem);
    return dst;
}

pl_status *pl_graph_attr_ints(pl_graph *g, pl_nid n, const char *name,
                              const int64_t *values, size_t count)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    bool ok;
    a->kind = PL_ATTR_INTS;
    a->n = count;
    a->ints = pl_dup_array(g->alloc, values, count, sizeof *values, &ok);
    if (!ok) {
        pl_graph_drop_attr(a);
        return pl_graph_oom("adding an attribute");
    }
    pl_graph_commit_attr(g, n);
    return NULL;
}

pl_status *pl_graph_attr_floats(pl_graph *g, pl_nid n, const char *name,
                                const double *values, size_t count)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    bool ok;
    a->kind = PL_ATTR_FLOATS;
    a->n = count;
    a->floats = pl_dup_array(g->alloc, values, count, sizeof *values, &ok);
    if (!ok) {
        pl_graph_drop_attr(a);
        return pl_graph_oom("adding an attribute");
    }
    pl_graph_commit_attr(g, n);
    return NULL;
}

pl_status *pl_graph_attr_strings(pl_graph *g, pl_nid n, const char *name,
                                 const char *const *values, size_t count)
{
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    a->kind = PL_ATTR_STRINGS;
    a->strings = pl_alloc_calloc(g->alloc, count ? count : 1, sizeof *a->strings);
    bool ok = a->strings != NULL;
    if (ok)
        a->n = count;
    for (size_t i = 0; ok && i < count; i++) {
        a->strings[i] = pl_alloc_strdup(g->alloc, values[i] ? values[i] : "");
        ok = a->strings[i] != NULL;
    }
    if (!ok) {
        pl_graph_drop_attr(a);
        return pl_graph_oom("adding an attribute");
    }
    pl_graph_commit_attr(g, n);
    return NULL;
}

pl_status *pl_graph_attr_tensor(pl_graph *g, pl_nid n, const char *name,
                                pl_dtype dtype, int32_t ndim,
                                const int64_t *dims, const void *data,
                                size_t nbytes)
{
    if (n >= g->n_nodes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no node %u", n);
    const pl_graph_node *node = &g->nodes[n];
    size_t elements, expect;
    if (ndim < 0 || ndim > PL_GRAPH_MAX_RANK || pl_dtype_size(dtype) == 0 ||
        dtype.code == PL_TYPE_STRING || !pl_dims_elements(dims, ndim, &elements) ||
        !pl_size_mul(elements, pl_dtype_size(dtype), &expect))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "node '%s' (%s): attribute '%s': bad tensor "
                                "type (dtype %s, rank %d)",
                                node->name, node->op, name ? name : "",
                                pl_dtype_name(dtype), (int)ndim);
    if (expect != nbytes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "node '%s' (%s): attribute '%s': %zu bytes "
                                "given, its shape needs %zu",
                                node->name, node->op, name ? name : "", nbytes,
                                expect);
    pl_attr *a;
    PL_RETURN_IF_ERROR(pl_graph_new_attr(g, n, name, &a));
    a->kind = PL_ATTR_TENSOR;
    a->tensor = pl_alloc_calloc(g->alloc, 1, sizeof *a->tensor);
    bool ok = a->tensor != NULL;
    if (ok) {
        a->tensor->dtype = dtype;
        a->tensor->ndim = ndim;
        a->tensor->dims = pl_dup_array(g->alloc, dims, (size_t)ndim, sizeof *dims, &ok);
    }
    if (ok) {
        a->tensor->data = pl_dup_array(g->alloc, data, nbytes, 1, &ok);
        a->tensor->nbytes = nbytes;
    }
    if (!ok) {
        pl_graph_drop_attr(a);
        return pl_graph_oom("adding an attribute");
    }
    pl_graph_commit_attr(g, n);
    return NULL;
}

static pl_status *pl_graph_attr_bodies(pl_graph *g, pl_nid n, const char *name,
                                       pl_attr_kind kind, pl_graph *const *bodies,
                                       size_t count)
{
    pl_attr *a = NULL;
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < count; i++)
        if (bodies[i] == NULL)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "attribute '%s': graph %zu is missing",
                                  name ? name : "", i);
    if (st == NULL)
        st = pl_graph_new_attr(g, n, name, &a);
    if (st == NULL) {
        a->kind = kind;
        a->graphs = pl_calloc(count ? count : 1, sizeof *a->graphs);
        if (a->graphs == NULL) {
            pl_graph_drop_attr(a);
            st = pl_graph_oom("adding an attribute");
        }
    }
    if (st != NULL) {
        for (size_t i = 0; i < count; i++)
            pl_graph_destroy(bodies[i]);
        return st;
    }
    a->n = count;
    memcpy(a->graphs, bodies, count * sizeof *bodies);
    pl_graph_commit_attr(g, n);
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_attr_graph(pl_graph *g, pl_nid n, const char *name, pl_graph *body)
{
    return pl_graph_attr_bodies(g, n, name, PL_ATTR_GRAPH, &body, 1);
}

pl_status *pl_graph_attr_graphs(pl_graph *g, pl_nid n, const char *name,
                                pl_graph *const *bodies, size_t count)
{
    return pl_graph_attr_bodies(g, n, name, PL_ATTR_GRAPHS, bodies, count);
}

const pl_attr *pl_graph_node_attr(const pl_graph_node *node, const char *name)
{
    for (size_t i = 0; node && name && i < node->n_attrs; i++)
        if (strcmp(node->attrs[i].name, name) == 0)
            return &node->attrs[i];
    return NULL;
}

/* ---- copying -------------------------------------------------------------- */

/* Copies attribute A onto node N of DST. */
static pl_status *pl_graph_copy_attr(pl_graph *dst, pl_nid n, const pl_attr *a);

pl_status *pl_graph_node_copy_attrs(pl_graph *dst, pl_nid n, const pl_graph_node *src)
{
    for (size_t k = 0; k < src->n_attrs; k++)
        PL_RETURN_IF_ERROR(pl_graph_copy_attr(dst, n, &src->attrs[k]));
    return NULL;
}

static pl_status *pl_graph_copy_attr(pl_graph *dst, pl_nid n, const pl_attr *a)
{
    switch (a->kind) {
    case PL_ATTR_INT:
        return pl_graph_attr_int(dst, n, a->name, a->i);
    case PL_ATTR_FLOAT:
        return pl_graph_attr_float(dst, n, a->name, a->f);
    case PL_ATTR_STRING:
        return pl_graph_attr_string(dst, n, a->name, a->s, a->s_len);
    case PL_ATTR_INTS:
        return pl_graph_attr_ints(dst, n, a->name, a->ints, a->n);
    case PL_ATTR_FLOATS:
        return pl_graph_attr_floats(dst, n, a->name, a->floats, a->n);
    case PL_ATTR_STRINGS:
        return pl_graph_attr_strings(dst, n, a->name, (const char *const *)a->strings, a->n);
    case PL_ATTR_TENSOR: {
        PL_RETURN_IF_ERROR(pl_graph_attr_tensor(dst, n, a->name, a->tensor->dtype,
                                                a->tensor->ndim, a->tensor->dims,
                                                a->tensor->data, a->tensor->nbytes));
        dst->nodes[n].attrs[dst->nodes[n].n_attrs - 1].tensor->is_string = a->tensor->is_string;
        return NULL;
    }
    case PL_ATTR_GRAPH:
    case PL_ATTR_GRAPHS: {
        pl_graph **bodies = pl_calloc(a->n ? a->n : 1, sizeof *bodies);
        if (bodies == NULL)
            return pl_graph_oom("copying a graph");
        pl_status *st = NULL;
        for (size_t i = 0; st == NULL && i < a->n; i++)
            st = pl_graph_copy(a->graphs[i], &bodies[i]);
        if (st != NULL) {
            for (size_t i = 0; i < a->n; i++)
                pl_graph_destroy(bodies[i]);
        } else {
            st = pl_graph_attr_bodies(dst, n, a->name, a->kind, bodies, a->n);
        }
        pl_free(bodies);
        return st;
    }
    }
    return pl_status_create(PL_CODE_INTERNAL, "attribute '%s' has unknown kind %d", a->name,
                            (int)a->kind);
}

static const char *pl_graph_tensor_name_of(const void *ctx, uint32_t id)
{
    return ((const pl_graph *)ctx)->tensors[id].name;
}

/* G's tensors into empty C at the same ids, names only (types and data
 * follow in pl_graph_copy_into). */
static pl_status *pl_graph_copy_tensors(const pl_graph *g, pl_graph *c)
{
    if (g->n_tensors == 0)
        return NULL;
    if (!pl_grow(c->alloc, (void **)&c->tensors, &c->cap_tensors, g->n_tensors,
                 sizeof *c->tensors))
        return pl_graph_oom("copying a graph");
    for (size_t i = 0; i < g->n_tensors; i++) {
        pl_graph_tensor *t = &c->tensors[i];
        memset(t, 0, sizeof *t);
        t->name = pl_alloc_strdup(c->alloc, g->tensors[i].name);
        if (t->name == NULL)
            return pl_graph_oom("copying a graph");
        t->ndim = -1;
        t->producer = PL_NID_NONE;
        t->is_string = g->tensors[i].is_string;
        c->n_tensors++;
    }
    if (!pl_strmap_clone(&c->tensor_names, &g->tensor_names, pl_graph_tensor_name_of, c))
        return pl_graph_oom("copying a graph");
    pl_graph_invalidate(c);
    return NULL;
}

/* Copies G into C, leaving out the nodes DROP marks and reading tensor
 * ALIAS[t] wherever a kept node reads t (DROP and ALIAS may be NULL); G's
 * inputs and outputs too unless NO_IO. */
static pl_status *pl_graph_copy_into(const pl_graph *g, pl_graph *c, const bool *drop,
                                     const pl_tid *alias, bool no_io)
{
    for (size_t i = 0; i < g->n_opsets; i++)
        PL_RETURN_IF_ERROR(pl_graph_set_opset(c, g->opsets[i].domain, g->opsets[i].version));
    if (!c->owns_filedata)
        c->filedata = g->filedata; /* borrowed, with the constants */
    /* Tensors keep their ids when C starts empty (every caller's case):
     * they are made in one go, their name map cloned, and nodes name
     * theirs by id (pl_graph_add_node_in). */
    bool same_ids = c->n_tensors == 0 && c->tensor_names.cap == 0;
    if (same_ids)
        PL_RETURN_IF_ERROR(pl_graph_copy_tensors(g, c));
    for (size_t i = 0; i < g->n_tensors; i++) {
        const pl_graph_tensor *t = &g->tensors[i];
        pl_tid id = (pl_tid)i;
        if (!same_ids)
            PL_RETURN_IF_ERROR(pl_graph_tensor_get_or_add(c, t->name, &id));
        PL_RETURN_IF_ERROR(pl_graph_set_type(c, id, t->dtype, t->ndim, t->dims,
                                             (const char *const *)t->dim_params));
        if (t->data != NULL)
            PL_RETURN_IF_ERROR(pl_graph_set_constant_ref(c, id, t->data, t->nbytes));
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const pl_graph_node *n = &g->nodes[i];
        if (drop != NULL && drop[i])
            continue;
        if (same_ids) {
            pl_tid stack_ids[16];
            pl_tid *ids = n->n_formal_inputs <= 16
                              ? stack_ids
                              : pl_malloc(n->n_formal_inputs * sizeof *ids);
            pl_status *st = ids ? NULL : pl_graph_oom("copying a graph");
            for (size_t k = 0; st == NULL && k < n->n_formal_inputs; k++) {
                pl_tid t = n->inputs[k];
                ids[k] = t != PL_TID_NONE && alias != NULL ? alias[t] : t;
            }
            pl_nid id = PL_NID_NONE;
            if (st == NULL)
                st = pl_graph_add_node_in(c, n->name, n->op, n->domain, NULL, ids,
                                          n->n_formal_inputs, NULL, n->outputs, n->n_outputs,
                                          &id);
            if (ids != stack_ids)
                pl_free(ids);
            for (size_t k = 0; st == NULL && k < n->n_attrs; k++)
                st = pl_graph_copy_attr(c, id, &n->attrs[k]);
            PL_RETURN_IF_ERROR(st);
            continue;
        }
        const char *stack_names[16];
        const char **ins = n->n_formal_inputs <= 16
                               ? stack_names
                               : pl_calloc(n->n_formal_inputs, sizeof *ins);
        const char **outs = pl_calloc(n->n_outputs ? n->n_outputs : 1, sizeof *outs);
        pl_status *st = ins && outs ? NULL : pl_graph_oom("copying a graph");
        for (size_t k = 0; st == NULL && k < n->n_formal_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t != PL_TID_NONE && alias != NULL)
                t = alias[t];
            ins[k] = t == PL_TID_NONE ? "" : g->tensors[t].name;
        }
        for (size_t k = 0; st == NULL && k < n->n_outputs; k++)
            outs[k] = n->outputs[k] == PL_TID_NONE ? "" : g->tensors[n->outputs[k]].name;
        pl_nid id = PL_NID_NONE;
        if (st == NULL)
            st = pl_graph_add_node(c, n->name, n->op, n->domain, ins, n->n_formal_inputs, outs,
                                   n->n_outputs, &id);
        if (ins != stack_names)
            pl_free(ins);
        pl_free(outs);
        for (size_t k = 0; st == NULL && k < n->n_attrs; k++)
            st = pl_graph_copy_attr(c, id, &n->attrs[k]);
        PL_RETURN_IF_ERROR(st);
    }
    if (no_io)
        return NULL;
    for (size_t i = 0; i < g->n_inputs; i++)
        PL_RETURN_IF_ERROR(pl_graph_add_input(c, g->inputs[i]));
    for (size_t i = 0; i < g->n_outputs; i++)
        PL_RETURN_IF_ERROR(pl_graph_add_output_again(c, g->outputs[i]));
    return NULL;
}

pl_status *pl_graph_copy(const pl_graph *g, pl_graph **out_copy)
{
    *out_copy = NULL;
    pl_graph *c = NULL;
    PL_RETURN_IF_ERROR(pl_graph_create(&c));
    pl_status *st = pl_graph_copy_into(g, c, NULL, NULL, false);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_copy = c;
    return NULL;
}

pl_status *pl_graph_copy_rewritten(const pl_graph *g, const bool *drop, const pl_tid *alias,
                                   pl_graph **out_copy)
{
    *out_copy = NULL;
    pl_graph *c = NULL;
    PL_RETURN_IF_ERROR(pl_graph_create(&c));
    pl_status *st = pl_graph_copy_into(g, c, drop, alias, false);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_copy = c;
    return NULL;
}

pl_status *pl_graph_extract(const pl_graph *g, const bool *keep, const pl_tid *outputs,
                            size_t n_outputs, pl_graph **out_graph)
{
    *out_graph = NULL;
    size_t nn = pl_graph_node_count(g);
    bool *drop = pl_calloc(nn ? nn : 1, sizeof *drop);
    if (drop == NULL)
        return pl_graph_oom("extracting a graph");
    for (size_t n = 0; n < nn; n++)
        drop[n] = !keep[n];
    pl_graph *c = NULL;
    pl_status *st = pl_graph_create(&c);
    if (st == NULL)
        st = pl_graph_copy_into(g, c, drop, NULL, true);
    for (size_t i = 0; st == NULL && i < n_outputs; i++)
        if (outputs[i] >= c->n_tensors || !c->tensors[outputs[i]].is_output)
            st = pl_graph_add_output(c, outputs[i]); /* once: requests are by name */
    pl_free(drop);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_graph = c;
    return NULL;
}

/* A name for a tensor or node of C that is BASE when C has none by that
 * name, else BASE__TAG, BASE__TAG2, ..., into BUF (of SIZE). */
static const char *pl_graph_free_name(const pl_graph *c, bool node, const char *base,
                                      const char *tag, char *buf, size_t size)
{
    bool taken = node ? pl_graph_find_node(c, base) != PL_NID_NONE
                      : pl_graph_find_tensor(c, base) != PL_TID_NONE;
    if (!taken)
        return base;
    for (unsigned k = 1;; k++) {
        if (k == 1)
            snprintf(buf, size, "%s__%s", base, tag);
        else
            snprintf(buf, size, "%s__%s%u", base, tag, k);
        taken = node ? pl_graph_find_node(c, buf) != PL_NID_NONE
                     : pl_graph_find_tensor(c, buf) != PL_TID_NONE;
        if (!taken)
            return buf;
    }
}

/* Whether a body under G's nodes (at any depth) reads NAME from outside
 * itself. */
static bool pl_graph_bodies_read(const pl_graph *g, const char *name)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i].n_attrs; k++) {
            const pl_attr *a = &g->nodes[i].attrs[k];
            if (a->kind != PL_ATTR_GRAPH && a->kind != PL_ATTR_GRAPHS)
                continue;
            for (size_t b = 0; b < a->n; b++) {
                const pl_graph *body = a->graphs[b];
                pl_tid t = pl_graph_find_tensor(body, name);
                if ((t != PL_TID_NONE && body->tensors[t].is_outer) ||
                    pl_graph_bodies_read(body, name))
                    return true;
            }
        }
    return false;
}

/* The body of Loop node N, or NULL. */
static const pl_graph *pl_graph_loop_body(const pl_graph_node *n)
{
    const pl_attr *a = pl_graph_node_attr(n, "body");
    return strcmp(n->op, "Loop") == 0 && a != NULL && a->kind == PL_ATTR_GRAPH && a->n == 1
               ? a->graphs[0]
               : NULL;
}

/* Loop node ID of G and its body into *OUT_N, *OUT_BODY; an error naming
 * WHAT (the rewrite) when ID is no Loop with a body and its two leading
 * inputs. */
static pl_status *pl_graph_loop_of(const pl_graph *g, pl_nid id, const char *what,
                                   const pl_graph_node **out_n, const pl_graph **out_body)
{
    const pl_graph_node *n = id < g->n_nodes ? &g->nodes[id] : NULL;
    const pl_graph *body = n != NULL ? pl_graph_loop_body(n) : NULL;
    if (body == NULL || n->n_formal_inputs < 2)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: node %u is no Loop", what, id);
    *out_n = n;
    *out_body = body;
    return NULL;
}

/* The axes of Squeeze or Unsqueeze node N of BODY (its attribute, or its
 * constant second input from opset 13) into AXES (CAP of them), their
 * count into *N_AXES; false when they are not known so. */
static bool pl_graph_squeeze_axes(const pl_graph *body, const pl_graph_node *n, int64_t *axes,
                                  size_t cap, size_t *n_axes)
{
    const pl_attr *a = pl_graph_node_attr(n, "axes");
    if (a != NULL && a->kind == PL_ATTR_INTS && a->n <= cap) {
        memcpy(axes, a->ints, a->n * sizeof *axes);
        *n_axes = a->n;
        return true;
    }
    if (a != NULL || n->n_formal_inputs != 2 || n->inputs[1] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *t = &body->tensors[n->inputs[1]];
    if (t->data == NULL || !PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) || t->nbytes % 8 != 0 ||
        t->nbytes / 8 > cap)
        return false;
    memcpy(axes, t->data, t->nbytes);
    *n_axes = t->nbytes / 8;
    return true;
}

/* Whether constant T holds one value, of rank 1 at most, that is zero
 * (every byte: +0.0 for a float). */
static bool pl_graph_is_zero_scalar(const pl_graph_tensor *t)
{
    if (t->data == NULL || t->ndim > 1 || t->nbytes == 0 || t->nbytes != pl_dtype_size(t->dtype))
        return false;
    for (size_t i = 0; i < t->nbytes; i++)
        if (((const unsigned char *)t->data)[i] != 0)
            return false;
    return true;
}

/* Whether OUT of BODY is IN's value, through nodes that give their input
 * back: Identity, an Unsqueeze undone by a Squeeze of the same axes, an
 * Add or Sub of a one-value zero between them (paddle2onnx passes a Loop's
 * carried value on as Squeeze(Unsqueeze(x, 0) + 0.0, 0)). Adding +0.0
 * turns a -0.0 into +0.0, which is all that can differ. */
static bool pl_graph_same_value(const pl_graph *body, pl_tid out, pl_tid in)
{
    int64_t sq[PL_GRAPH_MAX_RANK], un[PL_GRAPH_MAX_RANK];
    size_t n_sq = 0, n_un = 0;
    bool squeezed = false;
    for (int step = 0; step < 16 && out != PL_TID_NONE; step++) {
        if (out == in)
            return !squeezed;
        pl_nid p = body->tensors[out].producer;
        if (p == PL_NID_NONE || p >= body->n_nodes)
            return false;
        const pl_graph_node *n = &body->nodes[p];
        if (n->domain[0] != '\0' || n->n_formal_inputs < 1 || n->n_outputs != 1)
            return false;
        bool add = strcmp(n->op, "Add") == 0, sub = strcmp(n->op, "Sub") == 0;
        if (strcmp(n->op, "Identity") == 0) {
            out = n->inputs[0];
        } else if ((add || sub) && n->n_formal_inputs == 2 && n->inputs[0] != PL_TID_NONE &&
                   n->inputs[1] != PL_TID_NONE) {
            /* a one-value zero leaves the shape as it is where the other
             * operand has a rank at least its own: one unsqueezed has */
            const pl_graph_tensor *a = &body->tensors[n->inputs[0]];
            const pl_graph_tensor *b = &body->tensors[n->inputs[1]];
            if (pl_graph_is_zero_scalar(b) && (b->ndim == 0 || squeezed))
                out = n->inputs[0];
            else if (add && pl_graph_is_zero_scalar(a) && (a->ndim == 0 || squeezed))
                out = n->inputs[1];
            else
                return false;
        } else if (strcmp(n->op, "Squeeze") == 0 && !squeezed) {
            if (!pl_graph_squeeze_axes(body, n, sq, PL_GRAPH_MAX_RANK, &n_sq) || n_sq == 0)
                return false;
            squeezed = true;
            out = n->inputs[0];
        } else if (strcmp(n->op, "Unsqueeze") == 0 && squeezed) {
            if (!pl_graph_squeeze_axes(body, n, un, PL_GRAPH_MAX_RANK, &n_un) || n_un != n_sq ||
                memcmp(un, sq, n_sq * sizeof *sq) != 0)
                return false;
            squeezed = false;
            out = n->inputs[0];
        } else {
            return false;
        }
    }
    return false;
}

bool pl_graph_carried_hoistable(const pl_graph *g, pl_nid id, size_t k)
{
    if (id >= g->n_nodes)
        return false;
    const pl_graph_node *n = &g->nodes[id];
    const pl_graph *body = pl_graph_loop_body(n);
    if (body == NULL || n->n_formal_inputs < 2 || k >= n->n_formal_inputs - 2 ||
        body->n_inputs != n->n_formal_inputs || body->n_outputs < 1 + k + 1 ||
        k >= n->n_outputs || n->inputs[2 + k] == PL_TID_NONE)
        return false;
    pl_tid in = body->inputs[2 + k];
    if (!pl_graph_same_value(body, body->outputs[1 + k], in))
        return false;
    for (size_t j = 0; j < body->n_outputs; j++)
        if (j != 1 + k && body->outputs[j] == in)
            return false;
    for (size_t j = 0; j < body->n_inputs; j++)
        if (j != 2 + k && body->inputs[j] == in)
            return false;
    const pl_graph_tensor *init = &g->tensors[n->inputs[2 + k]];
    pl_tid same = pl_graph_find_tensor(body, init->name);
    if (same != PL_TID_NONE && !body->tensors[same].is_outer)
        return false;
    if (pl_graph_bodies_read(body, body->tensors[in].name))
        return false;
    pl_tid fin = n->outputs[k];
    if (fin != PL_TID_NONE)
        for (size_t j = 0; j < g->n_outputs; j++)
            if (g->outputs[j] == fin)
                return false;
    return true;
}

/* BODY without the carried values HOIST marks (pl_graph_hoist_carried),
 * their initial tensors named by INIT. */
static pl_status *pl_graph_hoisted_body(const pl_graph *body, const bool *hoist, size_t n_carried,
                                        const pl_graph_tensor *const *init, pl_graph **out_body)
{
    pl_graph *b = NULL;
    pl_tid *map = pl_calloc(body->n_tensors ? body->n_tensors : 1, sizeof *map);
    pl_status *st = map ? pl_graph_copy(body, &b) : pl_graph_oom("hoisting a carried value");
    for (size_t t = 0; st == NULL && t < body->n_tensors; t++)
        map[t] = (pl_tid)t;
    for (size_t k = 0; st == NULL && k < n_carried; k++) {
        if (!hoist[k])
            continue;
        pl_tid nt;
        st = pl_graph_tensor_get_or_add(b, init[k]->name, &nt);
        if (st == NULL)
            st = pl_graph_set_type(b, nt, init[k]->dtype, init[k]->ndim, init[k]->dims,
                                   (const char *const *)init[k]->dim_params);
        if (st == NULL) {
            map[body->inputs[2 + k]] = nt;
            pl_graph_drop_input(b, body->inputs[2 + k]);
        }
    }
    for (size_t i = 0; st == NULL && i < b->n_nodes; i++) {
        const pl_graph_node *bn = &b->nodes[i];
        bool changed = false;
        for (size_t j = 0; j < bn->n_formal_inputs; j++)
            changed = changed || (bn->inputs[j] != PL_TID_NONE && map[bn->inputs[j]] != bn->inputs[j]);
        if (!changed)
            continue;
        pl_tid *ids = pl_malloc((bn->n_formal_inputs ? bn->n_formal_inputs : 1) * sizeof *ids);
        if (ids == NULL) {
            st = pl_graph_oom("hoisting a carried value");
            break;
        }
        for (size_t j = 0; j < bn->n_formal_inputs; j++)
            ids[j] = bn->inputs[j] == PL_TID_NONE ? PL_TID_NONE : map[bn->inputs[j]];
        st = pl_graph_node_set_inputs(b, (pl_nid)i, ids, bn->n_formal_inputs);
        pl_free(ids);
    }
    if (st == NULL) {
        pl_graph_clear_outputs(b);
        for (size_t j = 0; st == NULL && j < body->n_outputs; j++)
            if (j == 0 || j > n_carried || !hoist[j - 1])
                st = pl_graph_add_output_again(b, map[body->outputs[j]]);
    }
    pl_free(map);
    if (st != NULL) {
        pl_graph_destroy(b);
        return st;
    }
    *out_body = b;
    return NULL;
}

/* *OUT_GRAPH = C with body B as node ID's body when ST (how making them
 * went) is NULL; else both go and ST is returned. Takes C and B. */
static pl_status *pl_graph_body_swapped(pl_graph *c, pl_nid id, pl_graph *b, pl_status *st,
                                        pl_graph **out_graph)
{
    if (st == NULL) {
        pl_graph_node_remove_attr(c, id, "body");
        st = pl_graph_attr_graph(c, id, "body", b); /* takes B, even on failure */
        b = NULL;
    }
    pl_graph_destroy(b);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_graph = c;
    return NULL;
}

/* A copy of G (its readers through ALIAS, may be NULL) whose Loop node ID
 * has inputs INS, outputs OUTS and body BODY, which it takes (freed on
 * failure as well). */
static pl_status *pl_graph_loop_remade(const pl_graph *g, pl_nid id, const pl_tid *alias,
                                       const pl_tid *ins, size_t n_in, const pl_tid *outs,
                                       size_t n_out, pl_graph *body, pl_graph **out_graph)
{
    pl_graph *c = NULL;
    pl_status *st = pl_graph_copy_rewritten(g, NULL, alias, &c);
    if (st == NULL)
        st = pl_graph_node_set_inputs(c, id, ins, n_in);
    if (st == NULL)
        st = pl_graph_node_set_outputs(c, id, outs, n_out);
    if (st != NULL && c == NULL) {
        pl_graph_destroy(body);
        return st;
    }
    return pl_graph_body_swapped(c, id, body, st, out_graph);
}

pl_status *pl_graph_hoist_carried(const pl_graph *g, pl_nid id, const bool *hoist,
                                  pl_graph **out_graph)
{
    *out_graph = NULL;
    const pl_graph_node *n;
    const pl_graph *body;
    PL_RETURN_IF_ERROR(pl_graph_loop_of(g, id, "hoisting", &n, &body));
    size_t nc = n->n_formal_inputs - 2;
    pl_tid *alias = pl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *alias);
    const pl_graph_tensor **init = pl_calloc(nc ? nc : 1, sizeof *init);
    pl_tid *ins = pl_calloc(n->n_formal_inputs, sizeof *ins);
    pl_tid *outs = pl_calloc(n->n_outputs ? n->n_outputs : 1, sizeof *outs);
    pl_graph *b = NULL;
    pl_status *st = alias && init && ins && outs ? NULL : pl_graph_oom("hoisting a carried value");
    for (size_t t = 0; st == NULL && t < g->n_tensors; t++)
        alias[t] = (pl_tid)t;
    size_t n_in = 0, n_out = 0;
    for (size_t j = 0; st == NULL && j < n->n_formal_inputs; j++)
        if (j < 2 || !hoist[j - 2])
            ins[n_in++] = n->inputs[j];
    for (size_t j = 0; st == NULL && j < n->n_outputs; j++) {
        if (j < nc && hoist[j]) {
            init[j] = &g->tensors[n->inputs[2 + j]];
            if (n->outputs[j] != PL_TID_NONE)
                alias[n->outputs[j]] = n->inputs[2 + j];
            continue;
        }
        outs[n_out++] = n->outputs[j];
    }
    if (st == NULL)
        st = pl_graph_hoisted_body(body, hoist, nc, init, &b);
    if (st == NULL)
        st = pl_graph_loop_remade(g, id, alias, ins, n_in, outs, n_out, b, out_graph);
    pl_free(alias);
    pl_free(init);
    pl_free(ins);
    pl_free(outs);
    return st;
}

/* Whether a node of G has a body (any attribute of graphs). */
static bool pl_graph_has_bodies(const pl_graph *g)
{
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i].n_attrs; k++)
            if (g->nodes[i].attrs[k].kind == PL_ATTR_GRAPH ||
                g->nodes[i].attrs[k].kind == PL_ATTR_GRAPHS)
                return true;
    return false;
}

/* Marks in NEED the body tensors BODY's nodes need to compute those NEED
 * marks already (every input of a node with an output needed), and in
 * NODE_LIVE those nodes. */
static void pl_graph_need_back(const pl_graph *body, bool *need, bool *node_live)
{
    const pl_nid *order = pl_graph_topo_order(body);
    for (size_t i = body->n_nodes; i-- > 0;) {
        const pl_graph_node *bn = &body->nodes[order[i]];
        bool live = false;
        for (size_t o = 0; o < bn->n_outputs && !live; o++)
            live = bn->outputs[o] != PL_TID_NONE && need[bn->outputs[o]];
        if (!live)
            continue;
        node_live[order[i]] = true;
        for (size_t j = 0; j < bn->n_inputs; j++)
            if (bn->inputs[j] != PL_TID_NONE)
                need[bn->inputs[j]] = true;
    }
}

pl_status *pl_graph_loop_live_carried(const pl_graph *g, pl_nid id, bool *live,
                                      bool **out_node_live)
{
    *out_node_live = NULL;
    const pl_graph_node *n = id < g->n_nodes ? &g->nodes[id] : NULL;
    const pl_graph *body = n != NULL ? pl_graph_loop_body(n) : NULL;
    size_t nc = n != NULL && n->n_formal_inputs >= 2 ? n->n_formal_inputs - 2 : 0;
    for (size_t k = 0; k < nc; k++)
        live[k] = true;
    /* a body with bodies of its own reads names that no edge shows */
    if (body == NULL || body->n_inputs != n->n_formal_inputs || body->n_outputs < 1 + nc ||
        n->n_outputs < nc || pl_graph_has_bodies(body) || pl_graph_topo_order(body) == NULL)
        return NULL;
    bool *need = pl_calloc(body->n_tensors ? body->n_tensors : 1, sizeof *need);
    bool *node_live = pl_calloc(body->n_nodes ? body->n_nodes : 1, sizeof *node_live);
    if (need == NULL || node_live == NULL) {
        pl_free(need);
        pl_free(node_live);
        return pl_graph_oom("finding a Loop's live carried values");
    }
    /* the final values read: by a node, as a graph output, or by name
     * from a body of G's */
    for (size_t k = 0; k < nc; k++) {
        pl_tid fin = n->outputs[k];
        const pl_graph_tensor *ft = fin != PL_TID_NONE ? &g->tensors[fin] : NULL;
        live[k] = ft != NULL && (ft->n_consumers > 0 || ft->is_output ||
                                 pl_graph_bodies_read(g, ft->name));
    }
    /* the condition, every scan output and the live carried values'
     * results, then what those need, until no carried value turns live */
    for (size_t j = 0; j < body->n_outputs; j++)
        if (j == 0 || j > nc || live[j - 1])
            need[body->outputs[j]] = true;
    for (bool grew = true; grew;) {
        grew = false;
        pl_graph_need_back(body, need, node_live);
        for (size_t k = 0; k < nc; k++)
            if (!live[k] && need[body->inputs[2 + k]]) {
                live[k] = true;
                need[body->outputs[1 + k]] = true;
                grew = true;
            }
    }
    pl_free(need);
    *out_node_live = node_live;
    return NULL;
}

pl_status *pl_graph_drop_carried(const pl_graph *g, pl_nid id, const bool *live,
                                 const bool *node_live, pl_graph **out_graph)
{
    *out_graph = NULL;
    const pl_graph_node *n;
    const pl_graph *body;
    PL_RETURN_IF_ERROR(pl_graph_loop_of(g, id, "dropping", &n, &body));
    size_t nc = n->n_formal_inputs - 2;
    bool *drop = pl_calloc(body->n_nodes ? body->n_nodes : 1, sizeof *drop);
    pl_tid *ins = pl_calloc(n->n_formal_inputs, sizeof *ins);
    pl_tid *outs = pl_calloc(n->n_outputs ? n->n_outputs : 1, sizeof *outs);
    pl_graph *b = NULL;
    pl_status *st = drop && ins && outs ? NULL : pl_graph_oom("dropping a carried value");
    for (size_t i = 0; st == NULL && i < body->n_nodes; i++)
        drop[i] = !node_live[i];
    if (st == NULL)
        st = pl_graph_copy_rewritten(body, drop, NULL, &b);
    for (size_t k = 0; st == NULL && k < nc; k++)
        if (!live[k])
            pl_graph_drop_input(b, body->inputs[2 + k]);
    if (st == NULL) {
        pl_graph_clear_outputs(b);
        for (size_t j = 0; st == NULL && j < body->n_outputs; j++)
            if (j == 0 || j > nc || live[j - 1])
                st = pl_graph_add_output_again(b, body->outputs[j]);
    }
    size_t n_in = 0, n_out = 0;
    for (size_t j = 0; st == NULL && j < n->n_formal_inputs; j++)
        if (j < 2 || live[j - 2])
            ins[n_in++] = n->inputs[j];
    for (size_t j = 0; st == NULL && j < n->n_outputs; j++)
        if (j >= nc || live[j])
            outs[n_out++] = n->outputs[j];
    if (st == NULL) {
        st = pl_graph_loop_remade(g, id, NULL, ins, n_in, outs, n_out, b, out_graph);
        b = NULL;
    }
    pl_graph_destroy(b);
    pl_free(drop);
    pl_free(ins);
    pl_free(outs);
    return st;
}

/* Adds to C (a copy of the graph holding control-flow node N) the product
 * of all of X by matrix W (its transpose when TRANS_B, a Transpose that
 * folding computes for a constant W) into tensor NAME, named after N and
 * its body's product MN: what the body's product of a row of X becomes. */
static pl_status *pl_graph_add_row_product(pl_graph *c, const pl_graph_node *n,
                                           const pl_graph_node *mn, const char *x,
                                           const char *w, bool trans_b, const char *name)
{
    char node_name[512], buf[560], wtn[600];
    snprintf(node_name, sizeof node_name, "%s/%s", n->name, mn->name);
    snprintf(wtn, sizeof wtn, "%s", w);
    pl_status *st = NULL;
    if (trans_b) {
        snprintf(wtn, sizeof wtn, "%s/transposed", name);
        pl_nid t;
        st = pl_graph_add_node(c, pl_graph_free_name(c, true, wtn, "hoisted", buf, sizeof buf),
                               "Transpose", "", (const char *const[]){w}, 1,
                               (const char *const[]){wtn}, 1, &t);
        if (st == NULL)
            st = pl_graph_attr_ints(c, t, "perm", (const int64_t[]){1, 0}, 2);
    }
    if (st == NULL)
        st = pl_graph_add_node(c, pl_graph_free_name(c, true, node_name, "hoisted", buf, sizeof buf),
                               "MatMul", "", (const char *const[]){x, wtn}, 2,
                               (const char *const[]){name}, 1, NULL);
    return st;
}

pl_status *pl_graph_hoist_gathered_product(const pl_graph *g, pl_nid id, pl_nid gather,
                                           pl_nid product, const char *name,
                                           pl_graph **out_graph)
{
    *out_graph = NULL;
    const pl_graph_node *n = NULL;
    const pl_graph *body = NULL;
    PL_RETURN_IF_ERROR(pl_graph_loop_of(g, id, "hoisting a product", &n, &body));
    if (gather >= body->n_nodes || product >= body->n_nodes || gather == product)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "hoisting a product: no such nodes in the body of '%s'", n->name);
    const pl_graph_node *gn = &body->nodes[gather], *mn = &body->nodes[product];
    bool gemm = strcmp(mn->op, "Gemm") == 0;
    const pl_attr *tb = gemm ? pl_graph_node_attr(mn, "transB") : NULL;
    bool trans_b = tb != NULL && tb->kind == PL_ATTR_INT && tb->i != 0;
    pl_tid c_in = gemm && mn->n_formal_inputs == 3 ? mn->inputs[2] : PL_TID_NONE;
    if (gn->n_formal_inputs != 2 || mn->n_formal_inputs < 2 || mn->n_formal_inputs > (size_t)(2 + gemm) ||
        mn->n_outputs < 1 || gn->n_outputs < 1 || mn->inputs[0] != gn->outputs[0] ||
        mn->outputs[0] == PL_TID_NONE)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "hoisting a product: '%s' does not read what '%s' gathers",
                                mn->name, gn->name);
    const pl_graph_tensor *xt = &body->tensors[gn->inputs[0]];
    const pl_graph_tensor *wt = &body->tensors[mn->inputs[1]];
    const pl_graph_tensor *yt = &body->tensors[mn->outputs[0]];
    if (xt->ndim < 1 || xt->ndim > PL_GRAPH_MAX_RANK || wt->ndim != 2)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "hoisting a product: '%s' or '%s' has no known rank", xt->name,
                                wt->name);
    int64_t dims[PL_GRAPH_MAX_RANK];
    for (int32_t d = 0; d < xt->ndim; d++)
        dims[d] = xt->dims[d];
    dims[xt->ndim - 1] = wt->dims[trans_b ? 0 : 1];
    /* the outer graph: the product of the whole sequence before the Loop
     * (by the matrix's transpose for a Gemm's transB, which folding
     * computes when the matrix is a constant) */
    pl_graph *c = NULL, *b = NULL;
    bool *drop = pl_calloc(body->n_nodes, sizeof *drop);
    pl_status *st = drop != NULL ? pl_graph_copy_rewritten(g, NULL, NULL, &c)
                                 : pl_graph_oom("hoisting a product");
    char buf[560], row[600];
    snprintf(row, sizeof row, "%s/row", name);
    if (st == NULL)
        st = pl_graph_add_row_product(c, n, mn, xt->name, wt->name, trans_b, name);
    /* the body: a Gather of the product's rows at the same index into the
     * product's output (a Gemm's C added after it), in place of the
     * Gather of X when the product was its only reader */
    const pl_graph_tensor *gt = &body->tensors[gn->outputs[0]];
    bool only = gt->n_consumers == 1 && !gt->is_output;
    if (st == NULL) {
        drop[product] = true;
        drop[gather] = only;
        st = pl_graph_copy_rewritten(body, drop, NULL, &b);
    }
    pl_tid rows = PL_TID_NONE;
    pl_nid at = PL_NID_NONE;
    char gname[560];
    snprintf(gname, sizeof gname, "%s/gather", mn->name);
    if (st == NULL)
        st = pl_graph_tensor_get_or_add(b, name, &rows);
    if (st == NULL)
        st = pl_graph_set_type(b, rows, xt->dtype, xt->ndim, dims, NULL);
    if (st == NULL && c_in != PL_TID_NONE && pl_graph_find_tensor(b, row) != PL_TID_NONE)
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "hoisting a product: the body "
                                                        "names '%s' already", row);
    if (st == NULL)
        st = pl_graph_add_node(
            b, only ? gn->name : pl_graph_free_name(b, true, gname, "hoisted", buf, sizeof buf),
            "Gather", "", (const char *const[]){name, body->tensors[gn->inputs[1]].name}, 2,
            (const char *const[]){c_in != PL_TID_NONE ? row : yt->name}, 1, &at);
    if (st == NULL)
        st = pl_graph_node_copy_attrs(b, at, gn);
    if (st == NULL && c_in != PL_TID_NONE)
        st = pl_graph_add_node(b, mn->name, "Add", "",
                               (const char *const[]){row, body->tensors[c_in].name}, 2,
                               (const char *const[]){yt->name}, 1, NULL);
    pl_free(drop);
    return pl_graph_body_swapped(c, id, b, st, out_graph);
}

/* The largest constant of a body that goes out with a hoisted node. */
#define PL_GRAPH_HOIST_CONST_BYTES 4096

/* Whether body node BN may leave its body: a deterministic op of the
 * default domain without bodies of its own (random ops draw anew each
 * iteration). */
static bool pl_graph_node_movable(const pl_graph_node *bn)
{
    static const char *const drawn[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                        "RandomUniformLike", "Bernoulli", "Multinomial",
                                        "Dropout"};
    if (bn->domain[0] != '\0' || bn->n_formal_inputs == 0 || bn->n_outputs == 0 ||
        bn->n_inputs != bn->n_formal_inputs)
        return false;
    for (size_t i = 0; i < sizeof drawn / sizeof *drawn; i++)
        if (strcmp(bn->op, drawn[i]) == 0)
            return false;
    for (size_t a = 0; a < bn->n_attrs; a++)
        if (bn->attrs[a].kind == PL_ATTR_GRAPH || bn->attrs[a].kind == PL_ATTR_GRAPHS)
            return false;
    return true;
}

/* Whether body tensor T is a small constant of the body (axes, a shape),
 * which goes out with a hoisted node. */
static bool pl_graph_body_small_const(const pl_graph_tensor *t)
{
    return t->data != NULL && !t->is_outer && t->producer == PL_NID_NONE &&
           t->nbytes <= PL_GRAPH_HOIST_CONST_BYTES;
}

pl_status *pl_graph_body_moves(const pl_graph *g, pl_nid id, bool dead, bool *mark,
                               size_t *out_n)
{
    *out_n = 0;
    const pl_graph_node *n = NULL;
    const pl_graph *body = NULL;
    PL_RETURN_IF_ERROR(pl_graph_loop_of(g, id, "moving nodes", &n, &body));
    size_t nb = body->n_nodes, count = 0;
    memset(mark, 0, nb * sizeof *mark);
    const pl_nid *topo = pl_graph_topo_order(body);
    if (topo == NULL)
        return NULL;
    if (dead) { /* readers left, from the last node back */
        size_t *uses = pl_calloc(body->n_tensors ? body->n_tensors : 1, sizeof *uses);
        if (uses == NULL)
            return pl_graph_oom("moving nodes");
        for (size_t t = 0; t < body->n_tensors; t++)
            uses[t] = body->tensors[t].n_consumers;
        for (size_t i = nb; i-- > 0;) {
            const pl_graph_node *bn = &body->nodes[topo[i]];
            bool live = false;
            for (size_t o = 0; o < bn->n_outputs && !live; o++) {
                if (bn->outputs[o] == PL_TID_NONE)
                    continue;
                const pl_graph_tensor *t = &body->tensors[bn->outputs[o]];
                live = uses[bn->outputs[o]] > 0 || t->is_output ||
                       pl_graph_bodies_read(body, t->name);
            }
            if (live)
                continue;
            mark[topo[i]] = true;
            count++;
            for (size_t j = 0; j < bn->n_inputs; j++)
                if (bn->inputs[j] != PL_TID_NONE && uses[bn->inputs[j]] > 0)
                    uses[bn->inputs[j]]--;
        }
        pl_free(uses);
        *out_n = count;
        return NULL;
    }
    for (size_t i = 0; i < nb; i++) { /* in order: a chain moves whole */
        const pl_graph_node *bn = &body->nodes[topo[i]];
        if (!pl_graph_node_movable(bn))
            continue;
        bool ok = true, any = false;
        for (size_t j = 0; ok && j < bn->n_formal_inputs; j++) {
            if (bn->inputs[j] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = &body->tensors[bn->inputs[j]];
            if (t->producer != PL_NID_NONE && t->producer < nb && mark[t->producer])
                any = true;
            else if (t->is_outer && pl_graph_find_tensor(g, t->name) != PL_TID_NONE)
                any = true;
            else
                ok = pl_graph_body_small_const(t);
        }
        for (size_t o = 0; ok && any && o < bn->n_outputs; o++) {
            if (bn->outputs[o] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = &body->tensors[bn->outputs[o]];
            ok = !t->is_output && !pl_graph_bodies_read(body, t->name) &&
                 pl_graph_find_tensor(g, t->name) == PL_TID_NONE;
        }
        if (ok && any) {
            mark[topo[i]] = true;
            count++;
        }
    }
    *out_n = count;
    return NULL;
}

/* Adds body node BN of BODY to C (hoisted before the Loop), its small
 * constants copied in under names C does not use. */
static pl_status *pl_graph_hoist_one(pl_graph *c, const pl_graph *body, const pl_graph_node *bn)
{
    const char **ins = pl_calloc(bn->n_formal_inputs, sizeof *ins);
    const char **outs = pl_calloc(bn->n_outputs, sizeof *outs);
    char (*cnames)[560] = pl_calloc(bn->n_formal_inputs, sizeof *cnames);
    pl_status *st = ins && outs && cnames ? NULL : pl_graph_oom("hoisting a node");
    for (size_t j = 0; st == NULL && j < bn->n_formal_inputs; j++) {
        const pl_graph_tensor *t = bn->inputs[j] == PL_TID_NONE ? NULL
                                                                : &body->tensors[bn->inputs[j]];
        ins[j] = t == NULL ? "" : t->name;
        if (t == NULL || !pl_graph_body_small_const(t))
            continue;
        char tmp[560];
        snprintf(cnames[j], sizeof cnames[j], "%s",
                 pl_graph_free_name(c, false, t->name, "hoisted", tmp, sizeof tmp));
        pl_tid ct;
        st = pl_graph_tensor_get_or_add(c, cnames[j], &ct);
        if (st == NULL)
            st = pl_graph_set_type(c, ct, t->dtype, t->ndim, t->dims,
                                   (const char *const *)t->dim_params);
        if (st == NULL)
            st = pl_graph_set_constant(c, ct, t->data, t->nbytes);
        ins[j] = cnames[j];
    }
    for (size_t o = 0; st == NULL && o < bn->n_outputs; o++)
        outs[o] = bn->outputs[o] == PL_TID_NONE ? "" : body->tensors[bn->outputs[o]].name;
    char buf[560];
    pl_nid at = PL_NID_NONE;
    if (st == NULL)
        st = pl_graph_add_node(c, pl_graph_free_name(c, true, bn->name, "hoisted", buf, sizeof buf),
                               bn->op, "", ins, bn->n_formal_inputs, outs, bn->n_outputs, &at);
    if (st == NULL)
        st = pl_graph_node_copy_attrs(c, at, bn);
    pl_free(cnames);
    pl_free(ins);
    pl_free(outs);
    return st;
}

pl_status *pl_graph_move_body_nodes(const pl_graph *g, pl_nid id, const bool *mark, bool dead,
                                    pl_graph **out_graph)
{
    *out_graph = NULL;
    const pl_graph_node *n = NULL;
    const pl_graph *body = NULL;
    PL_RETURN_IF_ERROR(pl_graph_loop_of(g, id, "moving nodes", &n, &body));
    const pl_nid *topo = pl_graph_topo_order(body);
    pl_graph *c = NULL, *b = NULL;
    pl_status *st = topo != NULL ? pl_graph_copy_rewritten(g, NULL, NULL, &c)
                                 : pl_graph_oom("moving nodes");
    /* outside: the hoisted nodes in their order (validation places them) */
    for (size_t i = 0; st == NULL && !dead && i < body->n_nodes; i++)
        if (mark[topo[i]])
            st = pl_graph_hoist_one(c, body, &body->nodes[topo[i]]);
    /* inside: without them, what they computed read from outside */
    if (st == NULL)
        st = pl_graph_copy_rewritten(body, mark, NULL, &b);
    for (size_t k = 0; st == NULL && !dead && k < body->n_nodes; k++) {
        const pl_graph_node *bn = &body->nodes[k];
        for (size_t o = 0; st == NULL && mark[k] && o < bn->n_outputs; o++) {
            if (bn->outputs[o] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = &body->tensors[bn->outputs[o]];
            pl_tid bt;
            st = pl_graph_tensor_get_or_add(b, t->name, &bt);
            if (st == NULL)
                st = pl_graph_set_type(b, bt, t->dtype, t->ndim, t->dims,
                                       (const char *const *)t->dim_params);
        }
    }
    if (st != NULL && c == NULL) {
        pl_graph_destroy(b);
        return st;
    }
    return pl_graph_body_swapped(c, id, b, st, out_graph);
}

pl_status *pl_graph_hoist_scanned_product(const pl_graph *g, pl_nid id, pl_nid product,
                                          size_t scan, int64_t axis, const char *name,
                                          pl_graph **out_graph)
{
    *out_graph = NULL;
    const pl_graph_node *n = id < g->n_nodes ? &g->nodes[id] : NULL;
    const pl_attr *ba = n != NULL ? pl_graph_node_attr(n, "body") : NULL;
    const pl_attr *ns = n != NULL ? pl_graph_node_attr(n, "num_scan_inputs") : NULL;
    if (n == NULL || strcmp(n->op, "Scan") != 0 || ba == NULL || ba->kind != PL_ATTR_GRAPH ||
        ba->n != 1 || ns == NULL || ns->kind != PL_ATTR_INT || ns->i < 1 ||
        (size_t)ns->i > n->n_formal_inputs || scan >= (size_t)ns->i)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "hoisting a product: node %u is no "
                                                          "Scan with that scan input", id);
    const pl_graph *body = ba->graphs[0];
    size_t m = (size_t)ns->i, first = n->n_formal_inputs - m, at_in = first + scan;
    const pl_graph_node *mn = product < body->n_nodes ? &body->nodes[product] : NULL;
    if (mn == NULL || body->n_inputs != n->n_formal_inputs || mn->n_formal_inputs < 2 ||
        mn->n_outputs < 1 || mn->outputs[0] == PL_TID_NONE ||
        mn->inputs[0] != body->inputs[at_in] || n->inputs[at_in] == PL_TID_NONE)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "hoisting a product: it does not read scan input %zu of '%s'",
                                scan, n->name);
    bool gemm = strcmp(mn->op, "Gemm") == 0;
    const pl_attr *tb = gemm ? pl_graph_node_attr(mn, "transB") : NULL;
    bool trans_b = tb != NULL && tb->kind == PL_ATTR_INT && tb->i != 0;
    pl_tid c_in = gemm && mn->n_formal_inputs == 3 ? mn->inputs[2] : PL_TID_NONE;
    const pl_graph_tensor *st_t = &body->tensors[mn->inputs[0]];
    const pl_graph_tensor *yt = &body->tensors[mn->outputs[0]];
    /* the slice's other readers keep the scan input; else it goes */
    bool only = st_t->n_consumers == 1 && !st_t->is_output;
    /* the outer graph: the product of all of X, scanned as X was */
    pl_graph *c = NULL, *b = NULL;
    bool *drop = pl_calloc(body->n_nodes, sizeof *drop);
    size_t n_in = n->n_formal_inputs + 1 - only;
    pl_tid *ins = pl_calloc(n_in, sizeof *ins);
    pl_status *st = drop != NULL && ins != NULL ? pl_graph_copy_rewritten(g, NULL, NULL, &c)
                                                : pl_graph_oom("hoisting a product");
    if (st == NULL)
        st = pl_graph_add_row_product(c, n, mn, g->tensors[n->inputs[at_in]].name,
                                      body->tensors[mn->inputs[1]].name, trans_b, name);
    pl_tid xw = c != NULL ? pl_graph_find_tensor(c, name) : PL_TID_NONE;
    size_t k = 0;
    for (size_t i = 0; st == NULL && i < n->n_formal_inputs; i++)
        if (!(only && i == at_in))
            ins[k++] = n->inputs[i];
    if (st == NULL) {
        ins[k] = xw;
        st = pl_graph_node_set_inputs(c, id, ins, n_in);
    }
    if (st == NULL && !only) {
        pl_graph_node_remove_attr(c, id, "num_scan_inputs");
        st = pl_graph_attr_int(c, id, "num_scan_inputs", (int64_t)m + 1);
    }
    /* its axis and direction move to the end with it */
    const char *per_input[2] = {"scan_input_axes", "scan_input_directions"};
    for (int a = 0; st == NULL && a < 2; a++) {
        const pl_attr *pa = pl_graph_node_attr(n, per_input[a]);
        if (pa == NULL)
            continue;
        if (pa->kind != PL_ATTR_INTS || pa->n != m) {
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "hoisting a product: '%s' has %s "
                                                            "of another count", n->name,
                                  per_input[a]);
            break;
        }
        int64_t v[PL_GRAPH_MAX_RANK + 64];
        if (m + 1 > sizeof v / sizeof v[0]) {
            st = pl_status_create(PL_CODE_UNSUPPORTED, "hoisting a product: %zu scan inputs", m);
            break;
        }
        size_t q = 0;
        for (size_t i = 0; i < m; i++)
            if (!(only && i == scan))
                v[q++] = pa->ints[i];
        v[q++] = a == 0 ? axis : pa->ints[scan];
        pl_graph_node_remove_attr(c, id, per_input[a]);
        st = pl_graph_attr_ints(c, id, per_input[a], v, q);
    }
    /* the body: the product's output is the new scan input's slice (a
     * Gemm's C added to it), the slice of X goes where nothing else reads it */
    if (st == NULL) {
        drop[product] = true;
        st = pl_graph_copy_rewritten(body, drop, NULL, &b);
    }
    char row[600];
    snprintf(row, sizeof row, "%s/slice", name);
    pl_tid slice = PL_TID_NONE;
    if (st == NULL && c_in != PL_TID_NONE) {
        if (pl_graph_find_tensor(b, row) != PL_TID_NONE)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "hoisting a product: the body "
                                                            "names '%s' already", row);
        if (st == NULL)
            st = pl_graph_tensor_get_or_add(b, row, &slice);
        if (st == NULL)
            st = pl_graph_set_type(b, slice, yt->dtype, yt->ndim, yt->dims, NULL);
        if (st == NULL)
            st = pl_graph_add_node(b, mn->name, "Add", "",
                                   (const char *const[]){row, body->tensors[c_in].name}, 2,
                                   (const char *const[]){yt->name}, 1, NULL);
    } else if (st == NULL) {
        slice = pl_graph_find_tensor(b, yt->name);
    }
    if (st == NULL && only)
        pl_graph_drop_input(b, pl_graph_find_tensor(b, st_t->name));
    if (st == NULL)
        st = pl_graph_add_input(b, slice);
    pl_free(drop);
    pl_free(ins);
    return pl_graph_body_swapped(c, id, b, st, out_graph);
}

pl_status *pl_graph_inline_branch(const pl_graph *g, pl_nid n, const pl_graph *body,
                                  pl_graph **out_graph)
{
    *out_graph = NULL;
    if (n >= g->n_nodes || body->n_inputs != 0 || body->n_outputs != g->nodes[n].n_outputs)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "inlining node %u: not a branch of "
                                                          "its outputs", n);
    const pl_graph_node *node = &g->nodes[n];
    size_t nn = g->n_nodes;
    bool *drop = pl_calloc(nn, sizeof *drop);
    /* the name each body tensor has in the copy */
    char **names = pl_calloc(body->n_tensors ? body->n_tensors : 1, sizeof *names);
    pl_graph *c = NULL;
    pl_status *st = drop && names ? pl_graph_create(&c) : pl_graph_oom("inlining a branch");
    if (st == NULL) {
        drop[n] = true;
        st = pl_graph_copy_into(g, c, drop, NULL, false);
    }
    /* A body output its own node makes (and no other output names) takes
     * the If's output name: that node writes it. */
    for (size_t k = 0; st == NULL && k < body->n_outputs; k++) {
        pl_tid bt = body->outputs[k];
        const pl_graph_tensor *t = &body->tensors[bt];
        bool once = true;
        for (size_t j = 0; j < body->n_outputs; j++)
            once = once && (j == k || body->outputs[j] != bt);
        if (node->outputs[k] != PL_TID_NONE && once && !t->is_outer && t->data == NULL &&
            t->producer != PL_NID_NONE && names[bt] == NULL &&
            (names[bt] = pl_alloc_strdup(c->alloc, g->tensors[node->outputs[k]].name)) == NULL)
            st = pl_graph_oom("inlining a branch");
    }
    char buf[512];
    bool renamed = false; /* a body tensor took another name */
    for (size_t i = 0; st == NULL && i < body->n_tensors; i++) {
        const pl_graph_tensor *t = &body->tensors[i];
        if (names[i] == NULL) {
            const char *name = t->is_outer ? t->name
                                           : pl_graph_free_name(c, false, t->name, node->name,
                                                                buf, sizeof buf);
            renamed = renamed || name != t->name;
            if ((names[i] = pl_alloc_strdup(c->alloc, name)) == NULL) {
                st = pl_graph_oom("inlining a branch");
                break;
            }
        }
        if (t->is_outer)
            continue; /* the enclosing graph's tensor, already in the copy */
        pl_tid id;
        st = pl_graph_tensor_get_or_add(c, names[i], &id);
        if (st == NULL && t->dtype.lanes != 0)
            st = pl_graph_set_type(c, id, t->dtype, t->ndim, t->dims,
                                   (const char *const *)t->dim_params);
        if (st == NULL && t->data != NULL)
            st = pl_graph_set_constant_ref(c, id, t->data, t->nbytes);
    }
    /* A nested body names the tensors it reads: one renamed here would
     * resolve to the enclosing graph's tensor of its old name. */
    for (size_t i = 0; st == NULL && renamed && i < body->n_tensors; i++)
        if (strcmp(names[i], body->tensors[i].name) != 0 &&
            pl_graph_bodies_read(body, body->tensors[i].name))
            st = pl_status_create(PL_CODE_UNSUPPORTED,
                                  "tensor '%s' of the branch is renamed (the graph has one of "
                                  "its name) and a body inside the branch reads it",
                                  body->tensors[i].name);
    for (size_t i = 0; st == NULL && i < body->n_nodes; i++) {
        const pl_graph_node *b = &body->nodes[i];
        const char **ins = pl_calloc(b->n_formal_inputs ? b->n_formal_inputs : 1, sizeof *ins);
        const char **outs = pl_calloc(b->n_outputs ? b->n_outputs : 1, sizeof *outs);
        if (ins == NULL || outs == NULL)
            st = pl_graph_oom("inlining a branch");
        for (size_t k = 0; st == NULL && k < b->n_formal_inputs; k++)
            ins[k] = b->inputs[k] == PL_TID_NONE ? "" : names[b->inputs[k]];
        for (size_t k = 0; st == NULL && k < b->n_outputs; k++)
            outs[k] = b->outputs[k] == PL_TID_NONE ? "" : names[b->outputs[k]];
        pl_nid id = PL_NID_NONE;
        if (st == NULL)
            st = pl_graph_add_node(c, pl_graph_free_name(c, true, b->name, node->name, buf,
                                                         sizeof buf),
                                   b->op, b->domain, ins, b->n_formal_inputs, outs, b->n_outputs,
                                   &id);
        for (size_t k = 0; st == NULL && k < b->n_attrs; k++)
            st = pl_graph_copy_attr(c, id, &b->attrs[k]);
        pl_free(ins);
        pl_free(outs);
    }
    /* The other outputs (an outer tensor, a constant, one tensor twice):
     * an Identity into the If's output. */
    for (size_t k = 0; st == NULL && k < body->n_outputs; k++) {
        pl_tid bt = body->outputs[k];
        if (node->outputs[k] == PL_TID_NONE ||
            strcmp(names[bt], g->tensors[node->outputs[k]].name) == 0)
            continue;
        const char *in = names[bt], *out = g->tensors[node->outputs[k]].name;
        char base[300];
        snprintf(base, sizeof base, "%s/output%zu", node->name, k);
        st = pl_graph_add_node(c, pl_graph_free_name(c, true, base, "inlined", buf, sizeof buf),
                               "Identity", "", &in, 1, &out, 1, NULL);
    }
    for (size_t i = 0; names != NULL && i < body->n_tensors; i++)
        pl_free(names[i]);
    pl_free(names);
    pl_free(drop);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_graph = c;
    return NULL;
}

bool pl_graph_note(pl_graph *g, const char *fmt, ...)
{
    if (g->n_notes >= 16)
        return true;
    char **grown = pl_alloc_realloc(g->alloc, g->notes, (g->n_notes + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    g->notes = grown;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if ((g->notes[g->n_notes] = pl_alloc_strdup(g->alloc, buf)) == NULL)
        return false;
    g->n_notes++;
    return true;
}

size_t pl_graph_note_count(const pl_graph *g)
{
    return g->n_notes;
}

const char *pl_graph_note_at(const pl_graph *g, size_t i)
{
    return i < g->n_notes ? g->notes[i] : NULL;
}

void pl_graph_clear_notes(pl_graph *g)
{
    for (size_t i = 0; i < g->n_notes; i++)
        pl_free(g->notes[i]);
    g->n_notes = 0;
}

/* ---- rewriting ------------------------------------------------------------ */

pl_status *pl_graph_node_set_op(pl_graph *g, pl_nid id, const char *domain, const char *op)
{
    if (id >= g->n_nodes || op == NULL || op[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "renaming node %u: no such node or "
                                                          "an empty op", id);
    char *copy = pl_alloc_strdup(g->alloc, op);
    char *dcopy = pl_alloc_strdup(g->alloc, domain ? domain : "");
    if (copy == NULL || dcopy == NULL) {
        pl_free(copy);
        pl_free(dcopy);
        return pl_graph_oom("renaming a node's op");
    }
    pl_free(g->nodes[id].op);
    pl_free(g->nodes[id].domain);
    g->nodes[id].op = copy;
    g->nodes[id].domain = dcopy;
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_node_set_outputs(pl_graph *g, pl_nid id, const pl_tid *outputs,
                                     size_t n_outputs)
{
    if (id >= g->n_nodes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no node %u", id);
    pl_graph_node *n = &g->nodes[id];
    for (size_t i = 0; i < n_outputs; i++)
        if (outputs[i] != PL_TID_NONE && outputs[i] >= g->n_tensors)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '%s' (%s): output %zu names no tensor (%u)", n->name,
                                    n->op, i, outputs[i]);
    pl_tid *copy = pl_alloc_malloc(g->alloc, (n_outputs ? n_outputs : 1) * sizeof *copy);
    if (copy == NULL)
        return pl_graph_oom("rewriting a node");
    if (n_outputs)
        memcpy(copy, outputs, n_outputs * sizeof *copy);
    pl_free(n->outputs);
    n->outputs = copy;
    n->n_outputs = n_outputs;
    pl_graph_invalidate(g);
    return NULL;
}

bool pl_graph_node_remove_attr(pl_graph *g, pl_nid id, const char *name)
{
    if (id >= g->n_nodes || name == NULL)
        return false;
    pl_graph_node *n = &g->nodes[id];
    for (size_t i = 0; i < n->n_attrs; i++) {
        if (strcmp(n->attrs[i].name, name) != 0)
            continue;
        pl_attr_free(&n->attrs[i]);
        memmove(&n->attrs[i], &n->attrs[i + 1], (n->n_attrs - i - 1) * sizeof *n->attrs);
        n->n_attrs--;
        pl_graph_invalidate(g);
        return true;
    }
    return false;
}

pl_status *pl_graph_node_set_inputs(pl_graph *g, pl_nid id, const pl_tid *inputs,
                                    size_t n_inputs)
{
    if (id >= g->n_nodes)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "no node %u", id);
    pl_graph_node *n = &g->nodes[id];
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i] != PL_TID_NONE && inputs[i] >= g->n_tensors)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '%s' (%s): input %zu names no tensor (%u)", n->name,
                                    n->op, i, inputs[i]);
    size_t bytes;
    pl_tid *copy = pl_size_mul(n_inputs ? n_inputs : 1, sizeof *copy, &bytes)
                       ? pl_alloc_malloc(g->alloc, bytes)
                       : NULL;
    if (copy == NULL)
        return pl_graph_oom("rewriting a node");
    if (n_inputs)
        memcpy(copy, inputs, n_inputs * sizeof *copy);
    pl_free(n->inputs);
    /* A node with captures keeps its formal count when the list keeps its
     * length (folding replaces inputs in place); any other rewrite drops
     * the captures, which the next validate lists again. */
    if (n_inputs != n->n_inputs || n->n_formal_inputs > n_inputs)
        n->n_formal_inputs = n_inputs;
    n->inputs = copy;
    n->n_inputs = n_inputs;
    pl_graph_invalidate(g);
    return NULL;
}

pl_status *pl_graph_reshape_constant(pl_graph *g, pl_tid id, int32_t ndim,
                                     const int64_t *dims)
{
    if (id >= g->n_tensors || g->tensors[id].data == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "tensor %u is not a constant", id);
    pl_graph_tensor *t = &g->tensors[id];
    size_t before, after;
    for (int32_t i = 0; i < ndim; i++)
        if (dims[i] < 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "constant '%s': dimension %d is unknown", t->name, (int)i);
    if (ndim < 0 || ndim > PL_GRAPH_MAX_RANK || !pl_dims_elements(t->dims, t->ndim, &before) ||
        !pl_dims_elements(dims, ndim, &after) || before != after)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "constant '%s': cannot reshape it to rank %d with another "
                                "element count",
                                t->name, (int)ndim);
    int64_t *nd = NULL;
    if (ndim > 0) {
        nd = pl_alloc_malloc(g->alloc, (size_t)ndim * sizeof *nd);
        if (nd == NULL)
            return pl_graph_oom("reshaping a constant");
        memcpy(nd, dims, (size_t)ndim * sizeof *nd);
    }
    pl_tensor_free_type(t);
    t->ndim = ndim;
    t->dims = nd;
    pl_graph_invalidate(g);
    return NULL;
}

/* ---- opsets ------------------------------------------------------------- */

pl_status *pl_graph_set_opset(pl_graph *g, const char *domain, int64_t version)
{
    const char *d = domain ? domain : "";
    /* ONNX spells the default domain "" or "ai.onnx": one entry for both. */
    if (strcmp(d, "ai.onnx") == 0)
        d = "";
    for (size_t i = 0; i < g->n_opsets; i++)
        if (strcmp(g->opsets[i].domain, d) == 0 ||
            (d[0] == '\0' && strcmp(g->opsets[i].domain, "ai.onnx") == 0)) {
            g->opsets[i].version = version;
            return NULL;
        }
    size_t cap = g->n_opsets;
    if (!pl_grow(g->alloc, (void **)&g->opsets, &cap, g->n_opsets + 1, sizeof *g->opsets))
        return pl_graph_oom("recording an opset");
    g->opsets[g->n_opsets].domain = pl_alloc_strdup(g->alloc, d);
    if (g->opsets[g->n_opsets].domain == NULL)
        return pl_graph_oom("recording an opset");
    g->opsets[g->n_opsets].version = version;
    g->n_opsets++;
    return NULL;
}

int64_t pl_graph_opset(const pl_graph *g, const char *domain)
{
    const char *d = domain ? domain : "";
    /* ONNX spells the default domain "" or "ai.onnx". */
    if (strcmp(d, "ai.onnx") == 0)
        d = "";
    for (size_t i = 0; i < g->n_opsets; i++) {
        const char *od = g->opsets[i].domain;
        if (strcmp(od, "ai.onnx") == 0)
            od = "";
        if (strcmp(od, d) == 0)
            return g->opsets[i].version;
    }
    return 0;
}

size_t pl_graph_opset_count(const pl_graph *g)
{
    return g->n_opsets;
}

void pl_graph_opset_at(const pl_graph *g, size_t i, const char **out_domain,
                       int64_t *out_version)
{
    *out_domain = i < g->n_opsets ? g->opsets[i].domain : NULL;
    *out_version = i < g->n_opsets ? g->opsets[i].version : 0;
}

/* ---- reading ----------------------------------------------------------- */

size_t pl_graph_tensor_count(const pl_graph *g) { return g->n_tensors; }
size_t pl_graph_node_count(const pl_graph *g) { return g->n_nodes; }

const pl_graph_tensor *pl_graph_get_tensor(const pl_graph *g, pl_tid t)
{
    return t < g->n_tensors ? &g->tensors[t] : NULL;
}

pl_graph_tensor *pl_graph_get_tensor_mut(pl_graph *g, pl_tid t)
{
    return t < g->n_tensors ? &g->tensors[t] : NULL;
}

const pl_graph_node *pl_graph_get_node(const pl_graph *g, pl_nid n)
{
    return n < g->n_nodes ? &g->nodes[n] : NULL;
}

size_t pl_graph_input_count(const pl_graph *g) { return g->n_inputs; }
pl_tid pl_graph_input(const pl_graph *g, size_t i)
{
    return i < g->n_inputs ? g->inputs[i] : PL_TID_NONE;
}
size_t pl_graph_output_count(const pl_graph *g) { return g->n_outputs; }
pl_tid pl_graph_output(const pl_graph *g, size_t i)
{
    return i < g->n_outputs ? g->outputs[i] : PL_TID_NONE;
}

const pl_nid *pl_graph_topo_order(const pl_graph *g)
{
    return g->valid ? g->topo : NULL;
}

/* ---- moving ownership (pl_graph_take_from) ------------------------------------- */

typedef struct pl_take_ref {
    const char *at;          /* the first byte */
    size_t len;              /* at least 1 */
    pl_graph_tensor *t;
} pl_take_ref;

typedef struct pl_take_list {
    pl_take_ref *v;
    size_t n, cap;
} pl_take_list;

/* Appends the constants of G and of its bodies: those G owns (OWNED) or
 * those it borrows (else). */
static bool pl_take_collect(pl_graph *g, bool owned, pl_take_list *l)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        pl_graph_tensor *t = &g->tensors[i];
        if (t->data == NULL || t->data_borrowed != !owned)
            continue;
        if (!pl_grow(g->alloc, (void **)&l->v, &l->cap, l->n + 1, sizeof *l->v))
            return false;
        l->v[l->n++] = (pl_take_ref){t->data, t->nbytes ? t->nbytes : 1, t};
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t a = 0; a < g->nodes[i].n_attrs; a++) {
            pl_attr *at = &g->nodes[i].attrs[a];
            if (at->kind != PL_ATTR_GRAPH && at->kind != PL_ATTR_GRAPHS)
                continue;
            for (size_t k = 0; k < at->n; k++)
                if (!pl_take_collect(at->graphs[k], owned, l))
                    return false;
        }
    return true;
}

static int pl_take_cmp(const void *a, const void *b)
{
    const char *x = ((const pl_take_ref *)a)->at, *y = ((const pl_take_ref *)b)->at;
    return x < y ? -1 : x > y;
}

pl_status *pl_graph_take_from(pl_graph *g, pl_graph *src, bool *out_taken)
{
    *out_taken = false;
    if (src->owns_filedata && g->filedata != src->filedata)
        return NULL; /* (constants of its file may be read through another) */
    pl_take_list owned = {0}, refs = {0};
    bool ok = pl_take_collect(src, true, &owned) && pl_take_collect(g, false, &refs);
    bool oom = !ok;
    if (ok && owned.n > 1)
        qsort(owned.v, owned.n, sizeof *owned.v, pl_take_cmp);
    /* Each borrowed constant of G that lies in one SRC owns must start it:
     * a view into the middle of a block keeps SRC (rare; nothing moves). */
    size_t *hit = ok ? pl_calloc(refs.n ? refs.n : 1, sizeof *hit) : NULL;
    oom |= ok && hit == NULL;
    ok = ok && hit != NULL;
    for (size_t r = 0; ok && r < refs.n; r++) {
        size_t lo = 0, hi = owned.n; /* the last block starting at or before it */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (owned.v[mid].at <= refs.v[r].at)
                lo = mid + 1;
            else
                hi = mid;
        }
        hit[r] = SIZE_MAX;
        if (lo == 0 || refs.v[r].at >= owned.v[lo - 1].at + owned.v[lo - 1].len)
            continue;
        if (refs.v[r].at != owned.v[lo - 1].at)
            ok = false;
        else
            hit[r] = lo - 1;
    }
    /* the mappings first: nothing has moved if they cannot */
    if (ok && src->n_mappings > 0) {
        size_t cap = g->n_mappings;
        ok = pl_grow(g->alloc, (void **)&g->mappings, &cap, g->n_mappings + src->n_mappings,
                     sizeof *g->mappings);
        oom |= !ok;
        if (ok) {
            memcpy(g->mappings + g->n_mappings, src->mappings,
                   src->n_mappings * sizeof *g->mappings);
            g->n_mappings += src->n_mappings;
            src->n_mappings = 0;
        }
    }
    for (size_t r = 0; ok && r < refs.n; r++) {
        if (hit[r] == SIZE_MAX || owned.v[hit[r]].t == NULL)
            continue; /* not SRC's, or already moved to another reader */
        owned.v[hit[r]].t->data_borrowed = true;
        owned.v[hit[r]].t = NULL;
        refs.v[r].t->data_borrowed = false;
    }
    if (ok && src->owns_filedata) {
        g->owns_filedata = true;
        src->owns_filedata = false;
    }
    pl_free(hit);
    pl_free(owned.v);
    pl_free(refs.v);
    *out_taken = ok;
    return oom ? pl_graph_oom("letting go of a rewritten graph's source") : NULL;
}
