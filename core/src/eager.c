/* eager.c — one operator on arrays, pushed on the dependency engine
 * (plinth.h, pl_op_run): MXNet's imperative NDArray operators.
 *
 * A call builds a one-node graph of the op on its inputs' types (the
 * opset checks it and infers the outputs, so a wrong call fails at once,
 * in the caller), finds the device from the arrays, and fetches a kernel
 * for that node from the device's module: an imperative kernel, or a
 * one-node compiled subgraph for a module that only compiles. Kernels are
 * cached per runtime by the node's JSON text, module and device. The run
 * is pushed on the engine reading the input arrays' variables and writing
 * the outputs', so calls on the same arrays keep their order and
 * independent ones overlap; pl_array_wait / pl_runtime_wait_all return
 * the first error. A second, trivial push writes a variable of the call
 * alone after it, so the call's references are dropped even when the
 * engine skips the run (an input failed before). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "array.h"
#include "engine.h"
#include "graph.h"
#include "graph_builder.h"
#include "graph_json.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"
#include "status.h"

/* The opset the one-node graphs declare: the newest ONNX opset the
 * importer and the opset tables cover. */
#define PL_EAGER_OPSET 17
#define PL_EAGER_MAX_IO 64

struct pl_eager_entry {
    char *key;
    pl_module *m;
    int device;
    pl_graph *g;
    pl_graph_view *view;
    pl_kernel *kernel;       /* imperative */
    pl_compiled *compiled;   /* symbolic */
    size_t workspace;
    pthread_mutex_t run_mu;  /* a compiled subgraph never runs twice at once */
    struct pl_eager_entry *next;
};

typedef struct pl_eager_call pl_eager_call;

struct pl_eager_cache {
    pthread_mutex_t mu;
    pl_eager_entry *head;
    size_t n;
    /* Calls that finished (or were skipped), waiting for their references
     * to be dropped by the next call into the runtime from the
     * application: dropping them may free an array, delete a variable or
     * release a runtime, none of which an engine operation may do (the
     * naive engine runs operations under its lock). */
    pl_eager_call *finished;
};

static void pl_eager_entry_free(pl_eager_entry *e)
{
    if (e == NULL)
        return;
    if (e->kernel != NULL && e->m->api.kernel_release != NULL)
        e->m->api.kernel_release(e->m->ctx, e->kernel);
    if (e->compiled != NULL && e->m->api.release != NULL)
        e->m->api.release(e->m->ctx, e->compiled);
    pl_graph_view_destroy(e->view);
    pl_graph_destroy(e->g);
    pthread_mutex_destroy(&e->run_mu);
    pl_module_release(e->m);
    free(e->key);
    free(e);
}

void pl_eager_cache_destroy(pl_runtime *rt)
{
    pl_eager_cache *c = rt->eager;
    if (c == NULL)
        return;
    if (rt->engine != NULL)
        pl_engine_wait_idle(rt->engine);
    pl_eager_drain(rt);
    for (pl_eager_entry *e = c->head, *next; e != NULL; e = next) {
        next = e->next;
        pl_eager_entry_free(e);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
    rt->eager = NULL;
}

/* ---- the one-node graph ------------------------------------------------------- */

static pl_status *pl_eager_attr(pl_graph_builder *b, size_t node, const pl_op_attr *a)
{
    if (a->name == NULL || a->name[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "an attribute has no name");
    switch (a->type) {
    case 'i': return pl_builder_attr_int(b, node, a->name, a->i);
    case 'f': return pl_builder_attr_float(b, node, a->name, a->f);
    case 's':
        if (a->s == NULL)
            break;
        return pl_builder_attr_string(b, node, a->name, a->s, strlen(a->s));
    case 'I':
        if (a->n > 0 && a->ints == NULL)
            break;
        return pl_builder_attr_ints(b, node, a->name, a->ints, a->n);
    case 'F':
        if (a->n > 0 && a->floats == NULL)
            break;
        return pl_builder_attr_floats(b, node, a->name, a->floats, a->n);
    default:
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "attribute '%s': type '%c' is not i, f, s, I or F", a->name,
                                a->type ? a->type : ' ');
    }
    return pl_status_create(PL_CODE_INVALID_ARGUMENT, "attribute '%s': no value", a->name);
}

/* The graph "x0, x1, ... -> OP -> y0, y1, ..." on the inputs' types,
 * validated (outputs inferred). */
/* Small integer host arrays (at most this many elements) enter the graph
 * as constants: they are the shapes, axes, counts and indices that decide
 * an output's shape (Reshape's shape, TopK's k, Slice's starts), which
 * must be known when the call is made. */
#define PL_EAGER_CONST_MAX 64

static bool pl_eager_is_const(const pl_array *a)
{
    if (a == NULL || pl_array_module_internal(a) != NULL)
        return false;
    const pl_tensor *t = pl_array_tensor(a);
    bool integer = PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_I32);
    return integer && pl_array_bytes(a) <= PL_EAGER_CONST_MAX * pl_dtype_size(t->dtype);
}

static pl_status *pl_eager_graph(pl_runtime *rt, const char *op, const pl_op_attr *attrs,
                                 size_t n_attrs,
                                 pl_array *const *in, size_t n_in, size_t n_out,
                                 pl_graph **out)
{
    *out = NULL;
    pl_graph *g = NULL;
    PL_RETURN_IF_ERROR(pl_graph_create(&g));
    pl_graph_builder *b = NULL;
    pl_status *st = pl_graph_builder_create(g, "eager", &b);
    char in_names[PL_EAGER_MAX_IO][12], out_names[PL_EAGER_MAX_IO][12];
    const char *ins[PL_EAGER_MAX_IO], *outs[PL_EAGER_MAX_IO];
    if (st == NULL)
        st = pl_builder_opset(b, "", PL_EAGER_OPSET);
    for (size_t i = 0; st == NULL && i < n_in; i++) {
        ins[i] = "";
        if (in[i] == NULL)
            continue; /* an absent optional input */
        snprintf(in_names[i], sizeof in_names[i], "x%zu", i);
        ins[i] = in_names[i];
        const pl_tensor *t = pl_array_tensor(in[i]);
        if (pl_eager_is_const(in[i])) {
            /* Its value now: what operators pushed on it must be done. */
            st = pl_array_wait(in[i]);
            if (st == NULL)
                st = pl_builder_constant(b, in_names[i], t->dtype, t->ndim, t->shape, t->data,
                                         pl_array_bytes(in[i]));
            continue;
        }
        st = pl_builder_tensor(b, in_names[i], t->dtype, t->ndim, t->shape, NULL);
        if (st == NULL)
            st = pl_builder_input(b, in_names[i]);
    }
    for (size_t o = 0; st == NULL && o < n_out; o++) {
        snprintf(out_names[o], sizeof out_names[o], "y%zu", o);
        outs[o] = out_names[o];
    }
    size_t node = 0;
    if (st == NULL)
        st = pl_builder_node(b, op, op, "", ins, n_in, outs, n_out, &node);
    for (size_t a = 0; st == NULL && a < n_attrs; a++)
        st = pl_eager_attr(b, node, &attrs[a]);
    for (size_t o = 0; st == NULL && o < n_out; o++)
        st = pl_builder_output(b, out_names[o]);
    pl_graph_builder_destroy(b);
    if (st == NULL)
        st = pl_runtime_type_graph(rt, g);
    if (st != NULL) {
        pl_graph_destroy(g);
        return st;
    }
    *out = g;
    return NULL;
}

/* ---- kernels ------------------------------------------------------------------ */

/* The tensors of the graph's inputs (absent ones ndim -1) and outputs, for
 * get_kernel's description. */
static void pl_eager_describe(const pl_graph *g, const pl_graph_node *n, pl_tensor *t)
{
    for (size_t i = 0; i < n->n_inputs + n->n_outputs; i++) {
        pl_tid id = i < n->n_inputs ? n->inputs[i] : n->outputs[i - n->n_inputs];
        memset(&t[i], 0, sizeof t[i]);
        t[i].struct_size = sizeof t[i];
        t[i].ndim = -1;
        const pl_graph_tensor *gt = id == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, id);
        if (gt == NULL)
            continue;
        t[i].dtype = gt->dtype;
        t[i].ndim = gt->ndim;
        t[i].shape = gt->dims;
    }
}

/* A new cache entry for graph G (taken) on M:DEVICE. */
static pl_status *pl_eager_entry_make(pl_module *m, int device, pl_graph *g, char *key,
                                      pl_eager_entry **out)
{
    pl_eager_entry *e = calloc(1, sizeof *e);
    if (e == NULL) {
        pl_graph_destroy(g);
        free(key);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_init(&e->run_mu, NULL);
    pl_module_retain(m);
    e->m = m;
    e->device = device;
    e->g = g;
    e->key = key;
    pl_status *st = pl_graph_view_create(g, NULL, 0, &e->view);
    const pl_graph_node *n = pl_graph_get_node(g, 0);
    if (st == NULL && (m->api.capabilities & PL_CAP_IMPERATIVE)) {
        pl_tensor t[2 * PL_EAGER_MAX_IO];
        pl_eager_describe(g, n, t);
        pl_node_desc desc = {
            .header = PL_ABI_HEADER_INIT(pl_node_desc),
            .name = n->name,
            .op = n->op,
            .domain = n->domain,
            .opset_version = pl_graph_opset(g, n->domain),
            .graph = e->view,
            .node_index = 0,
            .n_inputs = n->n_inputs,
            .inputs = t,
            .n_outputs = n->n_outputs,
            .outputs = t + n->n_inputs,
        };
        st = m->api.get_kernel(m->ctx, device, &desc, &e->kernel, &e->workspace);
        if (st == NULL && e->kernel == NULL)
            st = pl_status_create(PL_CODE_UNSUPPORTED, "get_kernel returned no kernel");
    } else if (st == NULL && (m->api.capabilities & PL_CAP_SYMBOLIC)) {
        st = m->api.compile(m->ctx, device, e->view, &e->compiled);
        if (st == NULL && e->compiled == NULL)
            st = pl_status_create(PL_CODE_UNSUPPORTED, "compile returned nothing");
    } else if (st == NULL) {
        st = pl_status_create(PL_CODE_UNSUPPORTED, "the module runs no nodes");
    }
    if (st != NULL) {
        pl_eager_entry_free(e);
        return st;
    }
    *out = e;
    return NULL;
}

/* The cached kernel of G (taken) on M:DEVICE, made on first use. The key
 * is the node's JSON text and the values of its constant inputs. */
static pl_status *pl_eager_lookup(pl_runtime *rt, pl_module *m, int device, pl_graph *g,
                                  pl_eager_entry **out)
{
    char *text = NULL;
    pl_status *st = pl_graph_to_json(g, NULL, 0, &text);
    if (st != NULL) {
        pl_graph_destroy(g);
        return st;
    }
    size_t consts = 0;
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
        if (gt != NULL && gt->data != NULL)
            consts += 2 * gt->nbytes + 1;
    }
    size_t len = strlen(text) + strlen(m->note.name) + 32 + consts;
    char *key = malloc(len);
    if (key != NULL) {
        size_t at = (size_t)snprintf(key, len, "%s:%d\n%s", m->note.name, device, text);
        for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
            const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
            if (gt == NULL || gt->data == NULL)
                continue;
            key[at++] = '\n';
            for (size_t k = 0; k < gt->nbytes; k++)
                at += (size_t)snprintf(key + at, len - at, "%02x",
                                       ((const unsigned char *)gt->data)[k]);
        }
    }
    pl_string_free(text);
    if (key == NULL) {
        pl_graph_destroy(g);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    pl_eager_cache *c = rt->eager;
    pthread_mutex_lock(&c->mu);
    for (pl_eager_entry *e = c->head; e != NULL; e = e->next)
        if (strcmp(e->key, key) == 0) {
            pthread_mutex_unlock(&c->mu);
            free(key);
            pl_graph_destroy(g);
            *out = e;
            return NULL;
        }
    /* Made under the lock: kernels of one module are made one at a time,
     * as a session makes them. */
    pl_eager_entry *e = NULL;
    st = pl_eager_entry_make(m, device, g, key, &e);
    /* Kept until the runtime goes: work already pushed may refer to any
     * entry, so none is evicted (the cache grows with each distinct node,
     * dtypes and shapes; an LRU needs per-entry references). */
    if (st == NULL) {
        e->next = c->head;
        c->head = e;
        c->n++;
    }
    pthread_mutex_unlock(&c->mu);
    *out = e;
    return st;
}

/* ---- the push ----------------------------------------------------------------- */

struct pl_eager_call {
    pl_eager_call *next_finished;
    pl_eager_entry *e;
    pl_runtime *rt;
    size_t n_in, n_out;
    pl_array *arrays[2 * PL_EAGER_MAX_IO]; /* inputs (NULL: absent), then outputs */
    pl_tensor tensors[2 * PL_EAGER_MAX_IO];
    pl_output_request requests[PL_EAGER_MAX_IO];
    pl_var *done;
    size_t n_graph_in;               /* compiled: the non-constant inputs */
    pl_tensor graph_in[PL_EAGER_MAX_IO];
    char name[96];
};

static pl_status *pl_eager_fn(void *arg, const pl_run_context *rc)
{
    pl_eager_call *c = arg;
    pl_eager_entry *e = c->e;
    pl_module *m = e->m;
    void *ws = NULL;
    pl_status *st = NULL;
    if (e->workspace > 0) {
        st = m->api.mem_alloc(m->ctx, e->device, e->workspace, 64, &ws);
        if (st != NULL)
            return st;
    }
    pl_run_context run = *rc;
    run.device = e->device;
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args),
                        .run = &run,
                        .n_inputs = e->kernel ? c->n_in : c->n_graph_in,
                        .inputs = e->kernel ? c->tensors : c->graph_in,
                        .n_outputs = c->n_out,
                        .outputs = c->tensors + c->n_in,
                        .requests = e->kernel ? c->requests : NULL,
                        .workspace = ws,
                        .workspace_bytes = e->workspace};
    pl_module_work_begin(m);
    if (e->kernel != NULL) {
        st = m->api.kernel_run(m->ctx, e->kernel, &args);
    } else {
        pthread_mutex_lock(&e->run_mu);
        st = m->api.run(m->ctx, e->compiled, &args);
        pthread_mutex_unlock(&e->run_mu);
    }
    pl_module_work_end(m);
    if (ws != NULL)
        m->api.mem_free(m->ctx, e->device, ws);
    return st;
}

/* Drops a finished call's references (outside any engine operation). */
static void pl_eager_call_free(pl_eager_call *c)
{
    pl_engine_delete_var(c->rt->engine, c->done);
    for (size_t i = 0; i < c->n_in + c->n_out; i++)
        if (c->arrays[i] != NULL)
            pl_array_release_internal(c->arrays[i]);
    free(c);
}

/* Runs after the call whatever became of it (an inline operation that
 * only writes the call's own variable): hands it to pl_eager_drain. */
static pl_status *pl_eager_cleanup(void *arg, const pl_run_context *rc)
{
    (void)rc;
    pl_eager_call *c = arg;
    pl_eager_cache *cache = c->rt->eager;
    pthread_mutex_lock(&cache->mu);
    c->next_finished = cache->finished;
    cache->finished = c;
    pthread_mutex_unlock(&cache->mu);
    return NULL;
}

void pl_eager_drain(pl_runtime *rt)
{
    pl_eager_cache *cache = rt ? rt->eager : NULL;
    if (cache == NULL)
        return;
    pthread_mutex_lock(&cache->mu);
    pl_eager_call *list = cache->finished;
    cache->finished = NULL;
    pthread_mutex_unlock(&cache->mu);
    while (list != NULL) {
        pl_eager_call *next = list->next_finished;
        pl_eager_call_free(list);
        list = next;
    }
}

/* ---- the entry point ------------------------------------------------------------ */

/* The module and device the call runs on, from its arrays: the one device
 * every non-host array is on; host arrays join a host-memory module, and
 * a call on host arrays alone runs on cpu. */
static pl_status *pl_eager_device(pl_runtime *rt, const char *op, pl_array *const *arrays,
                                  size_t n, pl_module **out_m, int *out_d)
{
    pl_module *m = NULL;
    int d = 0;
    bool host = false;
    for (size_t i = 0; i < n; i++) {
        if (arrays[i] == NULL)
            continue;
        pl_module *am = pl_array_module_internal(arrays[i]);
        if (am == NULL) {
            host = true;
            continue;
        }
        if (m == NULL) {
            m = am;
            d = pl_array_device(arrays[i]);
        } else if (am != m || pl_array_device(arrays[i]) != d) {
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "op %s: arrays on %s:%d and %s:%d; an operator runs on "
                                    "one device (copy them first)",
                                    op, m->note.name, d, am->note.name,
                                    pl_array_device(arrays[i]));
        }
    }
    if (m != NULL && m->host.runtime != rt)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op %s: the arrays belong to another runtime", op);
    if (m == NULL) {
        long idx = pl_runtime_find_module(rt, "cpu");
        if (idx < 0 || rt->modules[idx]->status != PL_MODULE_LOADED)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "op %s: host arrays run on the cpu module, which is not "
                                    "loaded", op);
        m = rt->modules[idx];
        d = 0;
    } else if (host && !(m->api.capabilities & PL_CAP_HOST_MEMORY)) {
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op %s: host arrays with arrays on %s:%d, whose memory is "
                                "the device's (copy them there first)",
                                op, m->note.name, d);
    }
    *out_m = m;
    *out_d = d;
    return NULL;
}

static pl_status *pl_op_run_in(pl_runtime *rt, const char *op, const pl_op_attr *attrs,
                               size_t n_attrs, pl_array *const *inputs, size_t n_in,
                               pl_array **outputs, size_t n_out, uint32_t flags)
{
    if (op == NULL || op[0] == '\0' || n_out == 0 || outputs == NULL ||
        (n_in > 0 && inputs == NULL) || (n_attrs > 0 && attrs == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_op_run: no op name, no outputs, or NULL arrays");
    if (n_in > PL_EAGER_MAX_IO || n_out > PL_EAGER_MAX_IO)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "op %s: %zu inputs and %zu outputs; at most %d each", op, n_in,
                                n_out, PL_EAGER_MAX_IO);
    if (flags & ~(uint32_t)PL_OP_ADD_TO)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "op %s: unknown flags 0x%x", op,
                                (unsigned)flags);
    pl_array *all[2 * PL_EAGER_MAX_IO];
    for (size_t i = 0; i < n_in; i++)
        all[i] = inputs[i];
    for (size_t o = 0; o < n_out; o++)
        all[n_in + o] = outputs[o];
    pl_module *m = NULL;
    int d = 0;
    PL_RETURN_IF_ERROR(pl_eager_device(rt, op, all, n_in + n_out, &m, &d));
    pl_graph *g = NULL;
    pl_status *st = pl_eager_graph(rt, op, attrs, n_attrs, inputs, n_in, n_out, &g);
    if (st != NULL)
        return pl_status_wrap(st, "op %s: ", op);
    /* The outputs: given arrays must have the inferred type; missing ones
     * are made on the call's device. */
    const pl_graph_node *node = pl_graph_get_node(g, 0);
    bool made[PL_EAGER_MAX_IO] = {false};
    for (size_t o = 0; st == NULL && o < n_out; o++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, node->outputs[o]);
        size_t bytes;
        if (gt == NULL || !pl_graph_tensor_bytes(gt, &bytes)) {
            st = pl_status_create(PL_CODE_UNSUPPORTED,
                                  "op %s: output %zu's shape depends on the data, which eager "
                                  "operators do not support", op, o);
            break;
        }
        if (outputs[o] == NULL) {
            bool host_out = (m->api.capabilities & PL_CAP_HOST_MEMORY) && all[0] != NULL &&
                            pl_array_module_internal(all[0]) == NULL;
            st = pl_array_create(rt, host_out ? NULL : m->note.name, d, gt->dtype, gt->ndim,
                                 gt->dims, &outputs[o]);
            made[o] = st == NULL;
            all[n_in + o] = outputs[o];
            continue;
        }
        const pl_tensor *t = pl_array_tensor(outputs[o]);
        bool same = PL_DTYPE_EQ(t->dtype, gt->dtype) && t->ndim == gt->ndim;
        for (int32_t k = 0; same && k < t->ndim; k++)
            same = t->shape[k] == gt->dims[k];
        if (!same)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "op %s: output %zu is not of the type the op gives (%s, "
                                  "rank %d)", op, o, pl_dtype_name(gt->dtype), (int)gt->ndim);
    }
    for (size_t o = 0; st == NULL && o < n_out; o++)
        for (size_t i = 0; i < n_in; i++)
            if (inputs[i] == outputs[o])
                st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                      "op %s: output %zu is also input %zu; give another "
                                      "array", op, o, i);
    pl_eager_entry *e = NULL;
    if (st == NULL && (m->api.capabilities & PL_CAP_HOST_MEMORY) && strcmp(m->note.name, "cpu")) {
        /* A host-memory device that refuses the node leaves it to cpu, on
         * the same memory, as a session's partition would. */
        pl_graph *copy = NULL;
        st = pl_graph_copy(g, &copy);
        if (st == NULL)
            st = pl_runtime_type_graph(rt, copy);
        if (st != NULL) {
            pl_graph_destroy(copy);
        } else {
            pl_status *refused = pl_eager_lookup(rt, m, d, copy, &e);
            long cpu = pl_runtime_find_module(rt, "cpu");
            if (refused != NULL && pl_status_code(refused) == PL_CODE_UNSUPPORTED && cpu >= 0 &&
                rt->modules[cpu]->status == PL_MODULE_LOADED) {
                m = rt->modules[cpu];
                d = 0;
                e = NULL;
                pl_status_free(refused);
            } else if (refused != NULL) {
                st = pl_status_wrap(refused, "op %s on %s:%d: ", op, m->note.name, d);
            }
        }
    }
    if (st == NULL && e == NULL) {
        st = pl_eager_lookup(rt, m, d, g, &e);
        g = NULL;
        if (st != NULL)
            st = pl_status_wrap(st, "op %s on %s:%d: ", op, m->note.name, d);
    }
    pl_graph_destroy(g);
    pl_eager_call *c = st == NULL ? calloc(1, sizeof *c) : NULL;
    if (st == NULL && c == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "op %s: out of memory", op);
    pl_var *reads[PL_EAGER_MAX_IO], *writes[PL_EAGER_MAX_IO + 1];
    size_t nr = 0, nw = 0;
    for (size_t i = 0; st == NULL && i < n_in + n_out; i++) {
        if (all[i] == NULL)
            continue;
        pl_var *v = NULL;
        st = pl_array_var_internal(all[i], rt, &v);
        if (st != NULL)
            break;
        if (i < n_in && pl_eager_is_const(all[i]))
            continue; /* its value is in the graph */
        if (i < n_in)
            reads[nr++] = v;
        else
            writes[nw++] = v;
    }
    if (st == NULL) {
        c->done = pl_engine_new_var(rt->engine);
        if (c->done == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "op %s: out of memory", op);
    }
    if (st != NULL) {
        for (size_t o = 0; o < n_out; o++)
            if (made[o]) {
                pl_array_destroy(outputs[o]);
                outputs[o] = NULL;
            }
        if (c != NULL && c->done != NULL)
            pl_engine_delete_var(rt->engine, c->done);
        free(c);
        return st;
    }
    c->e = e;
    c->rt = rt;
    c->n_in = n_in;
    c->n_out = n_out;
    snprintf(c->name, sizeof c->name, "%s (eager, %s:%d)", op, m->note.name, d);
    for (size_t i = 0; i < n_in + n_out; i++) {
        c->arrays[i] = all[i];
        if (all[i] != NULL) {
            pl_array_retain_internal(all[i]);
            c->tensors[i] = *pl_array_tensor(all[i]);
        } else {
            memset(&c->tensors[i], 0, sizeof c->tensors[i]);
            c->tensors[i].struct_size = sizeof c->tensors[i];
            c->tensors[i].ndim = -1;
        }
    }
    for (size_t i = 0; i < n_in; i++)
        if (all[i] != NULL && !pl_eager_is_const(all[i]))
            c->graph_in[c->n_graph_in++] = c->tensors[i];
    for (size_t o = 0; o < n_out; o++)
        c->requests[o] = (flags & PL_OP_ADD_TO) ? PL_REQ_ADD_TO : PL_REQ_WRITE;
    writes[nw++] = c->done;
    pl_exec_ctx x = {.kind = PL_EXEC_CPU};
    if (!(m->api.capabilities & PL_CAP_HOST_MEMORY) ||
        (m->api.capabilities & PL_CAP_PINNED_THREAD)) {
        x.kind = PL_EXEC_DEVICE;
        st = pl_engine_device_key(rt->engine, m, d, &x.device);
    }
    if (st == NULL)
        st = pl_engine_push(rt->engine, pl_eager_fn, c, x, reads, nr, writes, nw, 0, c->name);
    if (st != NULL) {
        /* Not queued: nothing will run; undo. */
        pl_eager_call_free(c);
        for (size_t o = 0; o < n_out; o++)
            if (made[o]) {
                pl_array_destroy(outputs[o]);
                outputs[o] = NULL;
            }
        return st;
    }
    pl_var *done = c->done;
    pl_exec_ctx inl = {.kind = PL_EXEC_INLINE};
    st = pl_engine_push(rt->engine, pl_eager_cleanup, c, inl, NULL, 0, &done, 1, 0,
                        "eager cleanup");
    if (st != NULL) {
        /* The run is queued; its references must outlive it: wait, then
         * drop them here. */
        pl_status_free(pl_engine_wait_var(rt->engine, done));
        pl_eager_call_free(c);
    }
    return st;
}

pl_status *pl_op_run(pl_runtime *rt, const char *op, const pl_op_attr *attrs, size_t n_attrs,
                     pl_array *const *inputs, size_t n_in, pl_array **outputs, size_t n_out,
                     uint32_t flags)
{
    if (rt == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_op_run: NULL runtime");
    if (rt->eager == NULL)
        return pl_status_create(PL_CODE_INTERNAL, "pl_op_run: the runtime has no eager cache");
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_eager_drain(rt);
    pl_status *st = pl_op_run_in(rt, op, attrs, n_attrs, inputs, n_in, outputs, n_out, flags);
    pl_alloc_scope_leave(outer);
    return st;
}

pl_status *pl_runtime_wait_all(pl_runtime *rt)
{
    if (rt == NULL || rt->engine == NULL)
        return NULL;
    pl_status *st = pl_engine_wait_all(rt->engine);
    pl_eager_drain(rt);
    return st;
}

pl_status *pl_eager_cache_create(pl_runtime *rt)
{
    pl_eager_cache *c = calloc(1, sizeof *c);
    if (c == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&c->mu, NULL);
    rt->eager = c;
    return NULL;
}
