/* session.c — the executor: a model made ready to run, and its runs.
 *
 * Creation: partition the graph (partition.c); fuse epilogues into
 * imperative kernels where their modules accept (pl_partition_fuse); turn
 * it into steps — one per symbolic subgraph, one per imperative node or
 * fused chain (its head's kernel writes the chain's last output; the
 * intermediate tensors are never made, so they have no value and no plan
 * entry), and a copy wherever a tensor
 * is needed on another device than the one that made it; give every tensor
 * the core materialises a "value" on one device; build an execution graph
 * of steps and values and plan its memory per device (plan.c); compile the
 * subgraphs. A subgraph whose compile fails goes back to the partitioner
 * (strict = no) and everything is rebuilt without it.
 *
 * Runs: a run takes a run context (its own arenas and engine variables; one
 * per run in flight), binds the caller's inputs and outputs, and pushes one
 * engine operation per step: it reads the variables of its inputs and
 * writes those of its outputs. Because values that share arena memory over
 * time must not overlap in time either, a step also writes the variables of
 * every earlier value whose block its outputs reuse. A final operation reads
 * every variable and writes the run's own, which the caller waits on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <stdarg.h>

#include "alloc.h"
#include "cache.h"
#include "control.h"
#include "engine.h"
#include "graph_view.h"
#include "log.h"
#include "model.h"
#include "opset.h"
#include "partition.h"
#include "plan.h"
#include "registry.h"
#include "status.h"

/* ---- the pieces --------------------------------------------------------- */

/* A device the session uses. Device 0 is the host (CPU memory). */
typedef struct pl_sdev {
    pl_module *module;   /* NULL for the host */
    int32_t device;      /* the module's device index */
    int32_t device_type; /* pl_device_type of its memory */
    int32_t engine_key;  /* the engine's device number, unique per runtime */
    char name[96];
} pl_sdev;

typedef enum pl_value_kind {
    PL_VAL_ARENA,        /* planned in its device's arena */
    PL_VAL_WORKSPACE,    /* a kernel's workspace, planned likewise */
    PL_VAL_INPUT,        /* a graph input: the caller's host buffer */
    PL_VAL_OUTPUT,       /* a graph output on the host: the caller's buffer */
    PL_VAL_CONST,        /* a constant, read where the graph holds it */
    PL_VAL_PERSIST       /* a constant uploaded to a device at creation */
} pl_value_kind;

typedef struct pl_value {
    pl_tid orig;         /* the model's tensor (PL_TID_NONE: workspace) */
    int32_t dev;
    pl_value_kind kind;
    size_t bytes;
    pl_dtype dtype;
    int32_t ndim;
    const int64_t *dims; /* the model's dims, or &bytes-as-dim */
    int64_t ws_dim;
    pl_tid xt;           /* its tensor in the execution graph */
    void *persist;       /* PL_VAL_PERSIST: the module's handle */
    size_t offset;       /* arena offset */
    int32_t producer;    /* step index, -1 when none */
} pl_value;

typedef enum pl_step_kind { PL_STEP_KERNEL, PL_STEP_SUBGRAPH, PL_STEP_COPY } pl_step_kind;

typedef struct pl_step {
    pl_step_kind kind;
    int32_t dev;                 /* where it runs */
    int32_t backend;             /* partition backend, -1 for copies */
    pl_module *module;           /* kernel/subgraph: the module */
    pl_nid node;                 /* kernel */
    pl_kernel *kernel;           /* borrowed from the partition */
    size_t cluster;              /* subgraph */
    pl_graph_view *view;
    pl_compiled *compiled;
    pl_var *compiled_var;        /* serialises runs of one compiled subgraph */
    const char *cache;           /* subgraph: "off", "hit", "stored", "miss" */
    int32_t pinned_key;          /* PL_CAP_PINNED_THREAD: its engine worker */
    int32_t *in;                 /* value per input (-1: absent) */
    size_t n_in;
    int32_t *out;                /* value per output (-1: not wanted) */
    size_t n_out;
    pl_output_request *requests; /* kernel */
    int32_t workspace;           /* value, -1 none (host kernels) */
    size_t device_workspace;     /* bytes, for kernels on accelerators */
    int32_t *reuse;              /* earlier values whose blocks it reuses */
    size_t n_reuse;
    char *name;
    atomic_ullong total_ns;
    atomic_ullong runs;
} pl_step;

/* One run in flight: arenas, variables, tensors and per-step arguments. */
typedef struct pl_runctx pl_runctx;

typedef struct pl_step_call {
    pl_session *session;
    pl_runctx *rc;
    size_t step;
    pl_run_context run;
    pl_run_args args;
    pl_tensor *tensors;          /* n_in + n_out */
} pl_step_call;

struct pl_runctx {
    void **arena;                /* per device */
    pl_var **vars;               /* per value */
    pl_var *done;
    pl_tensor *values;           /* per value: where it lives in this run */
    void **default_out;          /* per value: buffer for unrequested outputs */
    pl_step_call *calls;         /* per step */
    void *staging;               /* host bounce buffer for device-to-device */
    size_t staging_bytes;
    pl_runctx *next;
};

struct pl_session {
    pl_model *model;
    pl_runtime *rt;
    const pl_graph *g;
    pl_graph_view *view;
    pl_partition *part;
    pl_sdev *devs;
    size_t n_devs;
    pl_value *values;
    size_t n_values;
    int32_t *value_of;           /* orig tensor * n_devs + dev -> value */
    bool *live;                  /* per node: some graph output depends on it */
    pl_step *steps;
    size_t n_steps;
    pl_graph *xg;
    pl_plan *plan;
    size_t *arena_bytes;         /* per device */
    char **warnings;
    size_t n_warnings;
    pthread_mutex_t mu;          /* the free run contexts */
    pl_runctx *free_rc;
    pl_runctx **rc_list;
    size_t n_rc;
    bool modules_retained;
};

static pl_status *pl_sess_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory creating a session");
}

static uint64_t pl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool pl_sess_add_warning(pl_session *s, const char *fmt, ...)
    PL_PRINTF_LIKE(2, 3);
static bool pl_sess_add_warning(pl_session *s, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **grown = pl_realloc(s->warnings, (s->n_warnings + 1) * sizeof *grown);
    if (grown == NULL)
        return false;
    s->warnings = grown;
    s->warnings[s->n_warnings] = pl_xstrdup(buf);
    if (s->warnings[s->n_warnings] == NULL)
        return false;
    s->n_warnings++;
    pl_log(&s->rt->logger, PL_LOG_WARN, NULL, "%s", buf);
    return true;
}

/* ---- teardown of the built parts (used again when rebuilding) ----------- */

static void pl_sess_clear_steps(pl_session *s)
{
    for (size_t i = 0; i < s->n_steps; i++) {
        pl_step *st = &s->steps[i];
        if (st->kind == PL_STEP_SUBGRAPH && st->compiled != NULL)
            st->module->api.release(st->module->ctx, st->compiled);
        if (st->compiled_var != NULL)
            pl_engine_delete_var(s->rt->engine, st->compiled_var);
        pl_graph_view_destroy(st->view);
        pl_free(st->in);
        pl_free(st->out);
        pl_free(st->requests);
        pl_free(st->reuse);
        pl_free(st->name);
    }
    pl_free(s->steps);
    s->steps = NULL;
    s->n_steps = 0;
    for (size_t v = 0; v < s->n_values; v++) {
        pl_value *val = &s->values[v];
        if (val->kind == PL_VAL_PERSIST && val->persist != NULL) {
            pl_module *m = s->devs[val->dev].module;
            m->api.mem_free(m->ctx, s->devs[val->dev].device, val->persist);
        }
    }
    pl_free(s->values);
    s->values = NULL;
    s->n_values = 0;
    pl_free(s->value_of);
    s->value_of = NULL;
    pl_free(s->live);
    s->live = NULL;
    pl_free(s->devs);
    s->devs = NULL;
    s->n_devs = 0;
    pl_graph_destroy(s->xg);
    s->xg = NULL;
    pl_plan_destroy(s->plan);
    s->plan = NULL;
    pl_free(s->arena_bytes);
    s->arena_bytes = NULL;
}

/* ---- devices and values ------------------------------------------------- */

static int32_t pl_sess_device_of(pl_session *s, const pl_part_backend *b)
{
    pl_module *m = b->module;
    if (m->api.capabilities & PL_CAP_HOST_MEMORY)
        return 0;
    for (size_t d = 1; d < s->n_devs; d++)
        if (s->devs[d].module == m && s->devs[d].device == b->device)
            return (int32_t)d;
    return -1;
}

/* The engine device number of a pinned-thread module's worker: unique per
 * module and device of the runtime, apart from accelerators' numbers. */
static int32_t pl_sess_pinned_key(const pl_session *s, const pl_part_backend *b)
{
    for (size_t i = 0; i < s->rt->n_modules; i++)
        if (s->rt->modules[i] == b->module)
            return (int32_t)(1 << 20) + (int32_t)(i * 64 + (size_t)b->device);
    return 1 << 20;
}

static pl_status *pl_sess_add_device(pl_session *s, pl_module *m, int32_t device,
                                     int32_t *out_dev)
{
    pl_sdev *grown = pl_realloc(s->devs, (s->n_devs + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_sess_oom();
    s->devs = grown;
    pl_sdev *d = &s->devs[s->n_devs];
    memset(d, 0, sizeof *d);
    d->module = m;
    d->device = device;
    d->device_type = PL_DEVICE_CPU;
    if (m == NULL) {
        snprintf(d->name, sizeof d->name, "host");
    } else {
        snprintf(d->name, sizeof d->name, "%s:%d", m->name, (int)device);
        pl_device_properties props;
        memset(&props, 0, sizeof props);
        props.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_device_properties);
        pl_status *st = m->api.device_properties(m->ctx, device, &props);
        d->device_type = st == NULL && props.device_type ? props.device_type : PL_DEVICE_EXT;
        pl_status_free(st);
        for (size_t i = 0; i < s->rt->n_modules; i++)
            if (s->rt->modules[i] == m)
                d->engine_key = (int32_t)(i * 64 + (size_t)device);
    }
    *out_dev = (int32_t)s->n_devs++;
    return NULL;
}

/* Allocates BYTES of device DEV's memory through its module. A failure
 * names the module, its device, the size and PURPOSE, what the memory was
 * for. */
static pl_status *pl_sess_dev_alloc(const pl_session *s, int32_t dev, size_t bytes,
                                    const char *purpose, void **out_ptr)
{
    *out_ptr = NULL;
    const pl_sdev *d = &s->devs[dev];
    pl_module *m = d->module;
    pl_status *st = m->api.mem_alloc(m->ctx, d->device, bytes, 64, out_ptr);
    if (st == NULL && *out_ptr == NULL)
        st = pl_status_create(PL_CODE_INTERNAL, "%s: mem_alloc reported success but "
                                                "returned no buffer", m->name);
    if (st != NULL)
        *out_ptr = NULL;
    return pl_status_wrap(st, "cannot allocate %zu bytes on device %s (module %s, device "
                              "%d) for %s: ",
                          bytes, d->name, m->name, (int)d->device, purpose);
}

static pl_status *pl_sess_new_value(pl_session *s, pl_tid orig, int32_t dev,
                                    pl_value_kind kind, int32_t *out_value)
{
    pl_value *grown = pl_realloc(s->values, (s->n_values + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_sess_oom();
    s->values = grown;
    pl_value *v = &s->values[s->n_values];
    memset(v, 0, sizeof *v);
    v->orig = orig;
    v->dev = dev;
    v->kind = kind;
    v->producer = -1;
    v->xt = PL_TID_NONE;
    if (orig != PL_TID_NONE) {
        const pl_graph_tensor *t = pl_graph_get_tensor(s->g, orig);
        v->dtype = t->dtype;
        v->ndim = t->ndim;
        v->dims = t->dims;
        if (!pl_graph_tensor_bytes(t, &v->bytes))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "tensor '%s': its dtype and shape must be "
                                    "fully known to run the model (it is %s with "
                                    "rank %d)",
                                    t->name, pl_dtype_name(t->dtype), (int)t->ndim);
    }
    *out_value = (int32_t)s->n_values++;
    return NULL;
}

static pl_status *pl_sess_new_step(pl_session *s, pl_step_kind kind, int32_t dev,
                                   size_t n_in, size_t n_out, size_t *out_index)
{
    pl_step *grown = pl_realloc(s->steps, (s->n_steps + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_sess_oom();
    s->steps = grown;
    pl_step *st = &s->steps[s->n_steps];
    memset(st, 0, sizeof *st);
    st->kind = kind;
    st->dev = dev;
    st->backend = -1;
    st->workspace = -1;
    st->n_in = n_in;
    st->n_out = n_out;
    st->in = pl_malloc((n_in ? n_in : 1) * sizeof *st->in);
    st->out = pl_malloc((n_out ? n_out : 1) * sizeof *st->out);
    if (st->in == NULL || st->out == NULL) {
        pl_free(st->in);
        pl_free(st->out);
        return pl_sess_oom();
    }
    for (size_t i = 0; i < n_in; i++)
        st->in[i] = -1;
    for (size_t i = 0; i < n_out; i++)
        st->out[i] = -1;
    atomic_init(&st->total_ns, 0);
    atomic_init(&st->runs, 0);
    *out_index = s->n_steps++;
    return NULL;
}

/* A copy step making a value of ORIG on DST_DEV from value SRC. */
static pl_status *pl_sess_copy(pl_session *s, int32_t src, int32_t dst_dev,
                               pl_value_kind kind, int32_t *out_value)
{
    pl_tid orig = s->values[src].orig;
    int32_t src_dev = s->values[src].dev;
    int32_t dst;
    PL_RETURN_IF_ERROR(pl_sess_new_value(s, orig, dst_dev, kind, &dst));
    size_t idx;
    PL_RETURN_IF_ERROR(pl_sess_new_step(s, PL_STEP_COPY, src_dev ? src_dev : dst_dev,
                                        1, 1, &idx));
    pl_step *st = &s->steps[idx];
    st->in[0] = src;
    st->out[0] = dst;
    s->values[dst].producer = (int32_t)idx;
    st->name = pl_strdupf("copy %s %s->%s", pl_graph_get_tensor(s->g, orig)->name,
                          s->devs[src_dev].name, s->devs[dst_dev].name);
    if (st->name == NULL)
        return pl_sess_oom();
    *out_value = dst;
    return NULL;
}

/* The value of tensor T readable on device DEV, with a copy step if it
 * lives elsewhere. */
static pl_status *pl_sess_value_on(pl_session *s, pl_tid t, int32_t dev,
                                   int32_t *out_value)
{
    size_t key = (size_t)t * 8 + (size_t)dev;
    if (dev < 8 && s->value_of[key] >= 0) {
        *out_value = s->value_of[key];
        return NULL;
    }
    const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, t);
    int32_t v = -1;
    if (gt->data != NULL) {
        if (dev == 0) {
            PL_RETURN_IF_ERROR(pl_sess_new_value(s, t, 0, PL_VAL_CONST, &v));
        } else {
            PL_RETURN_IF_ERROR(pl_sess_new_value(s, t, dev, PL_VAL_PERSIST, &v));
        }
    } else {
        /* Where it is made: the host for graph inputs, else its producer's
         * device (recorded when that step was built). */
        int32_t home = -1;
        for (int32_t d = 0; d < (int32_t)s->n_devs && d < 8; d++)
            if (s->value_of[(size_t)t * 8 + (size_t)d] >= 0) {
                int32_t cand = s->value_of[(size_t)t * 8 + (size_t)d];
                if (s->values[cand].kind != PL_VAL_CONST && home < 0)
                    home = cand;
            }
        if (home < 0)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "session: tensor '%s' is needed before it is made",
                                    gt->name);
        /* A graph output made on a device and also read on the host: its
         * host copy is the caller's output buffer, which host readers then
         * read, as they do for an output the host made itself. */
        pl_value_kind kind = dev == 0 && gt->is_output ? PL_VAL_OUTPUT : PL_VAL_ARENA;
        PL_RETURN_IF_ERROR(pl_sess_copy(s, home, dev, kind, &v));
    }
    s->value_of[key] = v;
    *out_value = v;
    return NULL;
}

/* ---- building the steps ------------------------------------------------- */

/* Marks the nodes some graph output depends on; the others (a dead branch)
 * get no step: nothing could ever read what they make. Walks the nodes
 * backwards in topological order, so a node's consumers are decided first. */
static pl_status *pl_sess_mark_live(pl_session *s)
{
    const pl_graph *g = s->g;
    size_t nn = pl_graph_node_count(g);
    const pl_nid *topo = pl_graph_topo_order(g);
    s->live = pl_calloc(nn ? nn : 1, sizeof *s->live);
    if (s->live == NULL)
        return pl_sess_oom();
    for (size_t i = nn; i-- > 0;) {
        pl_nid n = topo[i];
        const pl_graph_node *node = pl_graph_get_node(g, n);
        for (size_t o = 0; o < node->n_outputs && !s->live[n]; o++) {
            if (node->outputs[o] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[o]);
            s->live[n] = t->is_output;
            for (size_t c = 0; c < t->n_consumers && !s->live[n]; c++)
                s->live[n] = s->live[t->consumers[c]];
        }
    }
    return NULL;
}

/* Whether unit U of the unit order (a cluster, or nc + an imperative node)
 * has a live node. */
static bool pl_sess_unit_live(const pl_session *s, size_t u, size_t nc)
{
    if (u >= nc)
        return s->live[u - nc];
    const pl_part_cluster *cl = pl_partition_cluster(s->part, u);
    for (size_t k = 0; k < cl->n_nodes; k++)
        if (s->live[cl->nodes[k]])
            return true;
    return false;
}

/* Orders the partition's units (clusters and imperative nodes) so that each
 * comes after every unit it reads from (Kahn's algorithm over units). */
static pl_status *pl_sess_unit_order(pl_session *s, int64_t **out_units,
                                     size_t *out_n)
{
    const pl_graph *g = s->g;
    size_t nn = pl_graph_node_count(g);
    size_t nc = pl_partition_cluster_count(s->part);
    /* unit id: cluster c -> c; imperative node n -> nc + n */
    size_t nu = nc + nn;
    uint32_t *indeg = pl_calloc(nu ? nu : 1, sizeof *indeg);
    bool *exists = pl_calloc(nu ? nu : 1, sizeof *exists);
    int64_t *order = pl_malloc((nu ? nu : 1) * sizeof *order);
    int64_t *queue = pl_malloc((nu ? nu : 1) * sizeof *queue);
    if (!indeg || !exists || !order || !queue) {
        pl_free(indeg);
        pl_free(exists);
        pl_free(order);
        pl_free(queue);
        return pl_sess_oom();
    }
#define UNIT_OF(n) (pl_partition_node_cluster(s->part, (n)) >= 0 \
                        ? (size_t)pl_partition_node_cluster(s->part, (n)) \
                        : nc + (size_t)(n))
    for (size_t n = 0; n < nn; n++) {
        size_t u = UNIT_OF(n);
        exists[u] = true;
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t i = 0; i < node->n_inputs; i++) {
            if (node->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid p = pl_graph_get_tensor(g, node->inputs[i])->producer;
            if (p != PL_NID_NONE && UNIT_OF(p) != u)
                indeg[u]++;
        }
    }
    size_t head = 0, tail = 0, n_order = 0;
    for (size_t u = 0; u < nu; u++)
        if (exists[u] && indeg[u] == 0)
            queue[tail++] = (int64_t)u;
    while (head < tail) {
        size_t u = (size_t)queue[head++];
        order[n_order++] = (int64_t)u;
        /* the nodes of unit u */
        const pl_nid *nodes;
        size_t count;
        pl_nid single;
        if (u < nc) {
            nodes = pl_partition_cluster(s->part, u)->nodes;
            count = pl_partition_cluster(s->part, u)->n_nodes;
        } else {
            single = (pl_nid)(u - nc);
            nodes = &single;
            count = 1;
        }
        for (size_t k = 0; k < count; k++) {
            const pl_graph_node *node = pl_graph_get_node(g, nodes[k]);
            for (size_t o = 0; o < node->n_outputs; o++) {
                if (node->outputs[o] == PL_TID_NONE)
                    continue;
                const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[o]);
                for (size_t c = 0; c < t->n_consumers; c++) {
                    size_t cu = UNIT_OF(t->consumers[c]);
                    if (cu != u && --indeg[cu] == 0)
                        queue[tail++] = (int64_t)cu;
                }
            }
        }
    }
#undef UNIT_OF
    size_t expected = 0;
    for (size_t u = 0; u < nu; u++)
        expected += exists[u];
    pl_free(indeg);
    pl_free(exists);
    pl_free(queue);
    if (n_order != expected) {
        pl_free(order);
        return pl_status_create(PL_CODE_INTERNAL,
                                "session: the subgraphs depend on each other in "
                                "a cycle (a partitioner bug)");
    }
    *out_units = order;
    *out_n = n_order;
    return NULL;
}

/* Adds the outputs of a unit's step: a value per produced tensor on DEV. */
static pl_status *pl_sess_bind_output(pl_session *s, size_t step, size_t slot,
                                      pl_tid t, int32_t dev)
{
    if (t == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, t);
    pl_value_kind kind = (gt->is_output && dev == 0) ? PL_VAL_OUTPUT : PL_VAL_ARENA;
    int32_t v;
    PL_RETURN_IF_ERROR(pl_sess_new_value(s, t, dev, kind, &v));
    s->values[v].producer = (int32_t)step;
    s->steps[step].out[slot] = v;
    s->value_of[(size_t)t * 8 + (size_t)dev] = v;
    return NULL;
}

/* The last node of the fused chain that node N heads (N itself when it
 * heads none). */
static pl_nid pl_sess_chain_tail(const pl_session *s, pl_nid n)
{
    while (pl_partition_fused_next(s->part, n) != PL_NID_NONE)
        n = pl_partition_fused_next(s->part, n);
    return n;
}

/* The name of the kernel step of node N on MODULE: "name (Op, module)", or
 * for a fused chain "a+b (OpA+OpB, module)", so per-step timings name every
 * node the step runs. NULL when out of memory. */
static char *pl_sess_kernel_step_name(const pl_session *s, pl_nid n, const char *module)
{
    char *names = NULL, *ops = NULL;
    for (pl_nid k = n; k != PL_NID_NONE; k = pl_partition_fused_next(s->part, k)) {
        const pl_graph_node *node = pl_graph_get_node(s->g, k);
        char *nn = names ? pl_strdupf("%s+%s", names, node->name) : pl_xstrdup(node->name);
        char *no = ops ? pl_strdupf("%s+%s", ops, node->op) : pl_xstrdup(node->op);
        pl_free(names);
        pl_free(ops);
        names = nn;
        ops = no;
        if (names == NULL || ops == NULL)
            break;
    }
    char *name = names && ops ? pl_strdupf("%s (%s, %s)", names, ops, module) : NULL;
    pl_free(names);
    pl_free(ops);
    return name;
}

static pl_status *pl_sess_build_steps(pl_session *s)
{
    const pl_graph *g = s->g;
    size_t nt = pl_graph_tensor_count(g);
    int32_t host;
    PL_RETURN_IF_ERROR(pl_sess_add_device(s, NULL, 0, &host));
    for (size_t b = 0; b < pl_partition_backend_count(s->part); b++) {
        const pl_part_backend *be = pl_partition_backend(s->part, b);
        if (pl_sess_device_of(s, be) < 0) {
            int32_t d;
            PL_RETURN_IF_ERROR(pl_sess_add_device(s, be->module, be->device, &d));
        }
    }
    if (s->n_devs > 8)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "session: at most 7 accelerator devices per session");
    s->value_of = pl_malloc((nt ? nt : 1) * 8 * sizeof *s->value_of);
    if (s->value_of == NULL)
        return pl_sess_oom();
    for (size_t k = 0; k < nt * 8; k++)
        s->value_of[k] = -1;
    for (size_t i = 0; i < pl_graph_input_count(g); i++) {
        pl_tid t = pl_graph_input(g, i);
        int32_t v;
        PL_RETURN_IF_ERROR(pl_sess_new_value(s, t, 0, PL_VAL_INPUT, &v));
        s->value_of[(size_t)t * 8] = v;
    }
    PL_RETURN_IF_ERROR(pl_sess_mark_live(s));
    int64_t *units = NULL;
    size_t n_units = 0;
    PL_RETURN_IF_ERROR(pl_sess_unit_order(s, &units, &n_units));
    size_t nc = pl_partition_cluster_count(s->part);
    pl_status *st = NULL;
    for (size_t k = 0; k < n_units && st == NULL; k++) {
        size_t u = (size_t)units[k];
        /* A live unit never reads a dead one, so skipping it leaves no
         * reader without its value. */
        if (!pl_sess_unit_live(s, u, nc))
            continue;
        if (u < nc) {
            const pl_part_cluster *cl = pl_partition_cluster(s->part, u);
            const pl_part_backend *be = pl_partition_backend(s->part, (size_t)cl->backend);
            int32_t dev = pl_sess_device_of(s, be);
            pl_graph_view *view = NULL;
            st = pl_graph_view_create(g, cl->nodes, cl->n_nodes, &view);
            if (st != NULL)
                break;
            const pl_graph_api *api = &pl_graph_view_table;
            /* Inputs first: their copies must run before this step. */
            size_t n_in = api->input_count(view);
            int32_t *ins = pl_malloc((n_in ? n_in : 1) * sizeof *ins);
            if (ins == NULL)
                st = pl_sess_oom();
            for (size_t i = 0; st == NULL && i < n_in; i++)
                st = pl_sess_value_on(s, (pl_tid)api->input(view, i), dev, &ins[i]);
            size_t idx = 0;
            if (st == NULL)
                st = pl_sess_new_step(s, PL_STEP_SUBGRAPH, dev, n_in,
                                      api->output_count(view), &idx);
            if (st != NULL) {
                pl_free(ins);
                pl_graph_view_destroy(view);
                break;
            }
            memcpy(s->steps[idx].in, ins, n_in * sizeof *ins);
            pl_free(ins);
            pl_step *step = &s->steps[idx];
            step->view = view;
            step->cluster = u;
            step->backend = cl->backend;
            step->module = be->module;
            step->pinned_key = pl_sess_pinned_key(s, be);
            step->name = pl_strdupf("subgraph %zu (%s, %zu nodes from '%s')", u,
                                    be->module->name, cl->n_nodes,
                                    pl_graph_get_node(g, cl->nodes[0])->name);
            if (step->name == NULL)
                st = pl_sess_oom();
            for (size_t o = 0; st == NULL && o < s->steps[idx].n_out; o++)
                st = pl_sess_bind_output(s, idx, o, (pl_tid)api->output(view, o), dev);
        } else {
            pl_nid n = (pl_nid)(u - nc);
            /* A fused node runs inside its chain head's step, which came
             * earlier in the unit order. */
            if (pl_partition_fused_into(s->part, n) != PL_NID_NONE)
                continue;
            const pl_graph_node *node = pl_graph_get_node(g, n);
            /* The tensor the chain ends in replaces the head's one output. */
            const pl_graph_node *tail = pl_graph_get_node(g, pl_sess_chain_tail(s, n));
            int32_t b = pl_partition_node_backend(s->part, n);
            const pl_part_backend *be = pl_partition_backend(s->part, (size_t)b);
            int32_t dev = pl_sess_device_of(s, be);
            int32_t *ins = pl_malloc((node->n_inputs ? node->n_inputs : 1) * sizeof *ins);
            if (ins == NULL)
                st = pl_sess_oom();
            for (size_t i = 0; st == NULL && i < node->n_inputs; i++) {
                ins[i] = -1;
                if (node->inputs[i] != PL_TID_NONE)
                    st = pl_sess_value_on(s, node->inputs[i], dev, &ins[i]);
            }
            size_t idx = 0;
            if (st == NULL)
                st = pl_sess_new_step(s, PL_STEP_KERNEL, dev, node->n_inputs,
                                      node->n_outputs, &idx);
            if (st != NULL) {
                pl_free(ins);
                break;
            }
            memcpy(s->steps[idx].in, ins, node->n_inputs * sizeof *ins);
            pl_free(ins);
            pl_step *step = &s->steps[idx];
            step->node = n;
            step->backend = b;
            step->module = be->module;
            step->pinned_key = pl_sess_pinned_key(s, be);
            size_t ws = 0;
            /* Borrowed: the partition owns kernels until it is destroyed,
             * so a rebuild after a failed compile finds them again. */
            step->kernel = pl_partition_kernel(s->part, n, &ws);
            step->name = pl_sess_kernel_step_name(s, n, be->module->name);
            step->requests = pl_malloc((node->n_outputs ? node->n_outputs : 1) *
                                       sizeof *step->requests);
            if (step->name == NULL || step->requests == NULL) {
                st = pl_sess_oom();
                break;
            }
            for (size_t o = 0; st == NULL && o < node->n_outputs; o++) {
                pl_tid t = node->outputs[o];
                if (t != PL_TID_NONE && tail != node)
                    t = tail->outputs[0];
                s->steps[idx].requests[o] = t == PL_TID_NONE ? PL_REQ_NULL : PL_REQ_WRITE;
                st = pl_sess_bind_output(s, idx, o, t, dev);
            }
            if (st == NULL && ws > 0 && dev != 0)
                s->steps[idx].device_workspace = ws;
            if (st == NULL && ws > 0 && dev == 0) {
                int32_t v;
                st = pl_sess_new_value(s, PL_TID_NONE, dev, PL_VAL_WORKSPACE, &v);
                if (st == NULL) {
                    s->values[v].bytes = ws;
                    s->values[v].dtype = PL_DTYPE_U8;
                    s->values[v].ndim = 1;
                    s->values[v].ws_dim = (int64_t)ws;
                    s->values[v].producer = (int32_t)idx;
                    s->steps[idx].workspace = v;
                }
            }
        }
    }
    pl_free(units);
    PL_RETURN_IF_ERROR(st);
    /* Graph outputs made on a device come home. */
    for (size_t i = 0; i < pl_graph_output_count(g); i++) {
        pl_tid t = pl_graph_output(g, i);
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        if (gt->is_input || gt->data != NULL)
            return pl_status_create(PL_CODE_UNSUPPORTED,
                                    "graph output '%s' is also a graph input or "
                                    "a constant; such models are not supported yet",
                                    gt->name);
        if (s->value_of[(size_t)t * 8] >= 0)
            continue;
        int32_t home = -1;
        for (size_t d = 1; d < s->n_devs; d++)
            if (s->value_of[(size_t)t * 8 + d] >= 0)
                home = s->value_of[(size_t)t * 8 + d];
        if (home < 0)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "session: graph output '%s' is never made", gt->name);
        int32_t v;
        PL_RETURN_IF_ERROR(pl_sess_copy(s, home, 0, PL_VAL_OUTPUT, &v));
        s->value_of[(size_t)t * 8] = v;
    }
    return NULL;
}

/* ---- the execution graph and its memory plan ----------------------------- */

typedef struct pl_sess_inplace {
    pl_session *s;
} pl_sess_inplace;

/* Whether a kernel step's output may reuse an input's block. The head's
 * schema decides, also for a fused chain: its output then holds the chain's
 * result, of the same dtype and shape, and the module applies the request to
 * that result (module.h, kernel_fuse). */
static bool pl_sess_inplace_fn(void *user, pl_nid xnode, size_t out_index,
                               size_t in_slot)
{
    pl_session *s = ((pl_sess_inplace *)user)->s;
    const pl_step *st = &s->steps[xnode];
    if (st->kind != PL_STEP_KERNEL || out_index >= st->n_out || in_slot >= st->n_in)
        return false;
    const pl_graph_node *n = pl_graph_get_node(s->g, st->node);
    const pl_op_schema *schema = pl_opset_find(s->rt->opset, n->domain, n->op,
                                               pl_graph_opset(s->g, n->domain));
    if (schema == NULL || pl_opset_inplace_input(schema, out_index) != (int)in_slot)
        return false;
    const pl_value *in = &s->values[st->in[in_slot]];
    const pl_value *out = &s->values[st->out[out_index]];
    return in->kind == PL_VAL_ARENA && PL_DTYPE_EQ(in->dtype, out->dtype);
}

static pl_status *pl_sess_plan(pl_session *s)
{
    PL_RETURN_IF_ERROR(pl_graph_create(&s->xg));
    for (size_t v = 0; v < s->n_values; v++) {
        pl_value *val = &s->values[v];
        /* Unique by its index; the rest names the model's tensor (or the
         * step whose workspace it is) for any complaint about it. */
        char *name = val->orig != PL_TID_NONE
                         ? pl_strdupf("v%zu ('%s' on %s)", v,
                                      pl_graph_get_tensor(s->g, val->orig)->name,
                                      s->devs[val->dev].name)
                         : pl_strdupf("v%zu (workspace of %s)", v,
                                      s->steps[val->producer].name);
        if (name == NULL)
            return pl_sess_oom();
        pl_status *added = pl_graph_tensor_get_or_add(s->xg, name, &val->xt);
        pl_free(name);
        PL_RETURN_IF_ERROR(added);
        const int64_t *dims = val->kind == PL_VAL_WORKSPACE ? &val->ws_dim : val->dims;
        PL_RETURN_IF_ERROR(pl_graph_set_type(s->xg, val->xt, val->dtype, val->ndim,
                                             dims, NULL));
        if (val->kind == PL_VAL_INPUT)
            PL_RETURN_IF_ERROR(pl_graph_add_input(s->xg, val->xt));
        else if (val->kind == PL_VAL_OUTPUT)
            PL_RETURN_IF_ERROR(pl_graph_add_output(s->xg, val->xt));
        else if (val->kind == PL_VAL_CONST || val->kind == PL_VAL_PERSIST) {
            const pl_graph_tensor *t = pl_graph_get_tensor(s->g, val->orig);
            PL_RETURN_IF_ERROR(pl_graph_set_constant_ref(s->xg, val->xt, t->data,
                                                         t->nbytes));
        }
    }
    for (size_t i = 0; i < s->n_steps; i++) {
        const pl_step *st = &s->steps[i];
        size_t n_out = st->n_out + (st->workspace >= 0 ? 1 : 0);
        const char **ins = pl_calloc(st->n_in ? st->n_in : 1, sizeof *ins);
        const char **outs = pl_calloc(n_out ? n_out : 1, sizeof *outs);
        if (!ins || !outs) {
            pl_free(ins);
            pl_free(outs);
            return pl_sess_oom();
        }
        for (size_t k = 0; k < st->n_in; k++)
            ins[k] = st->in[k] < 0 ? ""
                                   : pl_graph_get_tensor(s->xg, s->values[st->in[k]].xt)->name;
        for (size_t k = 0; k < n_out; k++) {
            int32_t v = k < st->n_out ? st->out[k] : st->workspace;
            outs[k] = v < 0 ? "" : pl_graph_get_tensor(s->xg, s->values[v].xt)->name;
        }
        /* Named for the step, so that any complaint about it names the
         * model's nodes. */
        pl_status *err = pl_graph_add_node(s->xg, st->name, "__step", "", ins, st->n_in,
                                           outs, n_out, NULL);
        pl_free(ins);
        pl_free(outs);
        PL_RETURN_IF_ERROR(err);
    }
    PL_RETURN_IF_ERROR(pl_graph_validate(s->xg));
    size_t nt = pl_graph_tensor_count(s->xg);
    int32_t *device = pl_malloc((nt ? nt : 1) * sizeof *device);
    pl_nid *order = pl_malloc((s->n_steps ? s->n_steps : 1) * sizeof *order);
    if (device == NULL || order == NULL) {
        pl_free(device);
        pl_free(order);
        return pl_sess_oom();
    }
    for (size_t v = 0; v < s->n_values; v++) {
        pl_value_kind k = s->values[v].kind;
        device[s->values[v].xt] = (k == PL_VAL_ARENA || k == PL_VAL_WORKSPACE)
                                      ? s->values[v].dev
                                      : -1;
    }
    for (size_t i = 0; i < s->n_steps; i++)
        order[i] = (pl_nid)i;
    pl_sess_inplace ctx = {.s = s};
    pl_plan_options o = {.graph = s->xg, .order = order, .n_order = s->n_steps,
                         .tensor_device = device, .n_devices = (int32_t)s->n_devs,
                         .alignment = 64, .inplace = pl_sess_inplace_fn, .user = &ctx};
    pl_status *st = pl_plan_build(&o, &s->plan);
    pl_free(device);
    pl_free(order);
    PL_RETURN_IF_ERROR(st);
    s->arena_bytes = pl_calloc(s->n_devs, sizeof *s->arena_bytes);
    if (s->arena_bytes == NULL)
        return pl_sess_oom();
    for (size_t d = 0; d < s->n_devs; d++)
        s->arena_bytes[d] = pl_plan_stats(s->plan, (int32_t)d)->arena_bytes;
    /* Offsets, in-place requests, and the reuse dependencies. */
    for (size_t v = 0; v < s->n_values; v++) {
        const pl_plan_entry *e = pl_plan_entry_of(s->plan, s->values[v].xt);
        if (e != NULL)
            s->values[v].offset = e->offset;
    }
    for (size_t i = 0; i < s->n_steps; i++) {
        pl_step *st2 = &s->steps[i];
        if (st2->kind != PL_STEP_KERNEL)
            continue;
        for (size_t o2 = 0; o2 < st2->n_out; o2++) {
            if (st2->out[o2] < 0)
                continue;
            const pl_plan_entry *e = pl_plan_entry_of(s->plan, s->values[st2->out[o2]].xt);
            if (e != NULL && e->shares_with != PL_TID_NONE)
                st2->requests[o2] = PL_REQ_INPLACE;
        }
    }
    for (size_t b = 0; b < pl_plan_entry_count(s->plan); b++) {
        const pl_plan_entry *eb = pl_plan_entry_at(s->plan, b);
        for (size_t a = 0; a < pl_plan_entry_count(s->plan); a++) {
            const pl_plan_entry *ea = pl_plan_entry_at(s->plan, a);
            if (ea->device != eb->device || ea->first_step >= eb->first_step ||
                ea->offset >= eb->offset + (eb->bytes ? eb->bytes : 1) ||
                eb->offset >= ea->offset + (ea->bytes ? ea->bytes : 1))
                continue;
            /* eb's producer reuses ea's bytes: it must wait for ea's readers. */
            int32_t va = -1, vb = -1;
            for (size_t v = 0; v < s->n_values; v++) {
                if (s->values[v].xt == ea->tensor)
                    va = (int32_t)v;
                if (s->values[v].xt == eb->tensor)
                    vb = (int32_t)v;
            }
            if (va < 0 || vb < 0 || s->values[vb].producer < 0)
                continue;
            pl_step *p = &s->steps[s->values[vb].producer];
            int32_t *grown = pl_realloc(p->reuse, (p->n_reuse + 1) * sizeof *grown);
            if (grown == NULL)
                return pl_sess_oom();
            p->reuse = grown;
            p->reuse[p->n_reuse++] = va;
        }
    }
    return NULL;
}

/* Uploads constants that imperative kernels on accelerators read. */
static pl_status *pl_sess_upload_constants(pl_session *s)
{
    for (size_t v = 0; v < s->n_values; v++) {
        pl_value *val = &s->values[v];
        if (val->kind != PL_VAL_PERSIST)
            continue;
        pl_module *m = s->devs[val->dev].module;
        int32_t device = s->devs[val->dev].device;
        const pl_graph_tensor *t = pl_graph_get_tensor(s->g, val->orig);
        char purpose[300];
        snprintf(purpose, sizeof purpose, "constant '%s'", t->name);
        PL_RETURN_IF_ERROR(pl_sess_dev_alloc(s, val->dev, t->nbytes, purpose, &val->persist));
        PL_RETURN_IF_ERROR(pl_status_wrap(m->api.copy_to_device(m->ctx, device, val->persist,
                                                                 0, t->data, t->nbytes),
                                          "uploading constant '%s' to %s: ", t->name,
                                          s->devs[val->dev].name));
    }
    return NULL;
}

typedef struct pl_blob_buf {
    char *data;
    size_t n, cap;
    bool oom;
} pl_blob_buf;

static void pl_blob_sink_fn(void *user, const void *bytes, size_t n)
{
    pl_blob_buf *b = user;
    if (b->oom || n == 0)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        char *grown = pl_realloc(b->data, cap);
        if (grown == NULL) {
            b->oom = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->n, bytes, n);
    b->n += n;
}

/* Takes step ST's compiled subgraph from the cache if an entry for it is
 * there and its module accepts it. */
static void pl_sess_cache_lookup(pl_session *s, pl_step *st, int32_t device,
                                 const pl_cache_key *key)
{
    pl_module *m = st->module;
    void *blob = NULL;
    size_t bytes = 0;
    pl_status *err = pl_cache_read(s->rt->config->cache_dir, m, key, &blob, &bytes);
    if (err == NULL) {
        err = m->api.import_compiled(m->ctx, device, st->view, blob, bytes, &st->compiled);
        if (err == NULL && st->compiled != NULL) {
            st->cache = "hit";
        } else {
            pl_sess_add_warning(s, "%s: the cached compile was refused (%s); compiling again",
                                st->name, err ? pl_status_message(err) : "no result");
            st->compiled = NULL;
        }
    }
    pl_status_free(err);
    pl_free(blob);
}

/* Stores step ST's freshly compiled subgraph in the cache. */
static void pl_sess_cache_store(pl_session *s, pl_step *st, const pl_cache_key *key)
{
    pl_module *m = st->module;
    pl_blob_buf buf = {0};
    pl_status *err = m->api.export_compiled(m->ctx, st->compiled, pl_blob_sink_fn, &buf);
    if (err == NULL && buf.oom)
        err = pl_sess_oom();
    if (err == NULL)
        err = pl_cache_write(s->rt->config->cache_dir, m, key, buf.data, buf.n);
    if (err == NULL) {
        st->cache = "stored";
    } else {
        pl_sess_add_warning(s, "%s: not cached: %s", st->name, pl_status_message(err));
        pl_status_free(err);
    }
    pl_free(buf.data);
}

/* Compiles every subgraph (or imports it from the cache); returns the index
 * of the step whose compile failed (with its status), or -1. */
static pl_status *pl_sess_compile(pl_session *s, long *out_failed)
{
    *out_failed = -1;
    const char *dir = s->rt->config->cache_dir;
    bool cache_ok = dir != NULL && dir[0] != '\0';
    for (size_t i = 0; i < s->n_steps; i++) {
        pl_step *st = &s->steps[i];
        if (st->kind != PL_STEP_SUBGRAPH)
            continue;
        pl_module *m = st->module;
        const pl_part_backend *be = pl_partition_backend(s->part, (size_t)st->backend);
        st->cache = "off";
        bool cacheable = cache_ok && (m->api.capabilities & PL_CAP_EXPORT) &&
                         m->api.export_compiled != NULL && m->api.import_compiled != NULL;
        if (cacheable) {
            pl_status *dir_err = pl_cache_check_dir(dir);
            if (dir_err != NULL) {
                pl_sess_add_warning(s, "%s", pl_status_message(dir_err));
                pl_status_free(dir_err);
                cache_ok = cacheable = false;
            }
        }
        pl_cache_key key;
        if (cacheable) {
            pl_status *key_err = pl_cache_key_make(m, be->device, st->view, &key);
            if (key_err != NULL) {
                pl_status_free(key_err);
                cacheable = false;
            } else {
                st->cache = "miss";
                pl_sess_cache_lookup(s, st, be->device, &key);
            }
        }
        if (st->compiled == NULL) {
            pl_status *err = m->api.compile(m->ctx, be->device, st->view, &st->compiled);
            if (err == NULL && st->compiled == NULL)
                err = pl_status_create(PL_CODE_INTERNAL, "compile returned nothing");
            if (err != NULL) {
                *out_failed = (long)i;
                return err;
            }
            if (cacheable)
                pl_sess_cache_store(s, st, &key);
        }
        st->compiled_var = pl_engine_new_var(s->rt->engine);
        if (st->compiled_var == NULL)
            return pl_sess_oom();
    }
    return NULL;
}

/* ---- creation ------------------------------------------------------------ */

/* The backends of [placement] order, then cpu if the order lacks it. */
static pl_status *pl_sess_backends(pl_session *s, pl_part_backend **out,
                                   size_t *out_n)
{
    const pl_config *c = s->rt->config;
    pl_part_backend *list = pl_calloc(c->n_placement + 2, sizeof *list);
    if (list == NULL)
        return pl_sess_oom();
    size_t n = 0;
    bool have_cpu = false;
    for (size_t i = 0; i <= c->n_placement; i++) {
        char name[64];
        int device = 0;
        if (i < c->n_placement) {
            snprintf(name, sizeof name, "%s", c->placement[i]);
            char *colon = strchr(name, ':');
            if (colon != NULL) {
                *colon = '\0';
                device = atoi(colon + 1);
            }
        } else {
            if (have_cpu)
                break;
            snprintf(name, sizeof name, "cpu");
        }
        long idx = pl_runtime_find_module(s->rt, name);
        if (idx < 0)
            continue;
        pl_module *m = s->rt->modules[idx];
        if (m->status != PL_MODULE_LOADED || device < 0 || device >= m->device_count)
            continue;
        bool dup = false;
        for (size_t k = 0; k < n; k++)
            dup = dup || (list[k].module == m && list[k].device == device);
        if (dup)
            continue;
        bool symbolic = (m->api.capabilities & PL_CAP_SYMBOLIC) != 0;
        bool imperative = (m->api.capabilities & PL_CAP_IMPERATIVE) != 0;
        if (!symbolic && !imperative)
            continue;
        /* A module offering both modes is used symbolically. */
        list[n].module = m;
        list[n].device = device;
        list[n].symbolic = symbolic;
        have_cpu = have_cpu || strcmp(m->name, "cpu") == 0;
        n++;
    }
    /* Control flow (If, Loop, Scan) last: the core's own step (control.c). */
    if (s->rt->control != NULL)
        list[n++] = (pl_part_backend){.module = s->rt->control, .device = 0};
    *out = list;
    *out_n = n;
    return NULL;
}

static pl_status *pl_sess_pins(pl_session *s, const pl_part_backend *backends,
                               size_t nb, pl_part_pin **out, size_t *out_n)
{
    const pl_config *c = s->rt->config;
    *out = pl_calloc(c->n_pins ? c->n_pins : 1, sizeof **out);
    *out_n = 0;
    if (*out == NULL)
        return pl_sess_oom();
    for (size_t i = 0; i < c->n_pins; i++) {
        const char *eq = strchr(c->pins[i], '=');
        const char *backend = eq + 1;
        int32_t found = -1;
        for (size_t b = 0; b < nb && found < 0; b++)
            if (strcmp(backends[b].module->name, backend) == 0)
                found = (int32_t)b;
        if (found < 0)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "[placement] pin %s: backend '%s' is not loaded "
                                    "or not in [placement] order",
                                    c->pins[i], backend);
        (*out)[*out_n].node = c->pins[i];
        (*out)[*out_n].backend = found;
        (*out_n)++;
    }
    return NULL;
}

pl_status *pl_session_create(pl_model *model, const pl_session_options *options,
                             pl_session **out_session)
{
    (void)options;
    *out_session = NULL;
    if (model == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_create: NULL model");
    pl_session *s = pl_calloc(1, sizeof *s);
    if (s == NULL)
        return pl_sess_oom();
    pthread_mutex_init(&s->mu, NULL);
    pl_model_retain(model);
    s->model = model;
    s->rt = model->runtime;
    s->g = model->graph;
    pl_status *st = pl_graph_view_create(s->g, NULL, 0, &s->view);
    pl_part_backend *backends = NULL;
    size_t nb = 0;
    pl_part_pin *pins = NULL;
    size_t n_pins = 0;
    if (st == NULL)
        st = pl_sess_backends(s, &backends, &nb);
    if (st == NULL)
        st = pl_sess_pins(s, backends, nb, &pins, &n_pins);
    /* Pins are "node=backend": the partitioner wants the node name alone. */
    char **pin_names = NULL;
    if (st == NULL && n_pins > 0) {
        pin_names = pl_calloc(n_pins, sizeof *pin_names);
        if (pin_names == NULL)
            st = pl_sess_oom();
        for (size_t i = 0; st == NULL && i < n_pins; i++) {
            const char *eq = strchr(pins[i].node, '=');
            pin_names[i] = pl_xstrndup(pins[i].node, (size_t)(eq - pins[i].node));
            if (pin_names[i] == NULL)
                st = pl_sess_oom();
            else
                pins[i].node = pin_names[i];
        }
    }
    if (st == NULL)
        st = pl_partition_create(s->g, s->view, backends, nb, pins, n_pins,
                                 s->rt->config->min_subgraph_nodes, &s->part);
    for (size_t i = 0; pin_names && i < n_pins; i++)
        pl_free(pin_names[i]);
    pl_free(pin_names);
    pl_free(pins);
    pl_free(backends);
    while (st == NULL) {
        /* Again after each exclusion: nodes that fell back to an imperative
         * backend may now fuse. */
        st = pl_partition_fuse(s->part);
        if (st == NULL)
            st = pl_sess_build_steps(s);
        long failed = -1;
        if (st == NULL)
            st = pl_sess_compile(s, &failed);
        if (st != NULL && failed >= 0) {
            const pl_step *fs = &s->steps[failed];
            char reason[1200];
            snprintf(reason, sizeof reason, "compile failed: %s", pl_status_message(st));
            if (s->rt->config->strict) {
                pl_status *wrapped = pl_status_create(
                    pl_status_code(st),
                    "%s: %s, and [placement] strict = yes", fs->name, reason);
                pl_status_free(st);
                st = wrapped;
                break;
            }
            if (!pl_sess_add_warning(s, "%s: %s; its nodes fall back to the next "
                                        "backend (strict = no)",
                                     fs->name, reason)) {
                pl_status_free(st);
                st = pl_sess_oom();
                break;
            }
            size_t cluster = fs->cluster;
            pl_status_free(st);
            pl_sess_clear_steps(s);
            st = pl_partition_exclude_cluster(s->part, cluster, reason);
            continue;
        }
        if (st == NULL)
            st = pl_sess_plan(s);
        if (st == NULL)
            st = pl_sess_upload_constants(s);
        break;
    }
    if (st != NULL) {
        pl_session_destroy(s);
        return pl_status_wrap(st, "%s: ", model->path);
    }
    /* The modules the session uses stay loaded while it lives. */
    for (size_t b = 0; b < pl_partition_backend_count(s->part); b++)
        pl_module_retain(pl_partition_backend(s->part, b)->module);
    s->modules_retained = true;
    *out_session = s;
    return NULL;
}

static void pl_runctx_destroy(pl_session *s, pl_runctx *rc);

void pl_session_destroy(pl_session *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_rc; i++)
        pl_runctx_destroy(s, s->rc_list[i]);
    pl_free(s->rc_list);
    pl_sess_clear_steps(s);
    size_t nb = s->part ? pl_partition_backend_count(s->part) : 0;
    pl_module **retained = NULL;
    if (s->modules_retained && nb > 0) {
        retained = pl_calloc(nb, sizeof *retained);
        for (size_t b = 0; retained && b < nb; b++)
            retained[b] = pl_partition_backend(s->part, b)->module;
    }
    pl_partition_destroy(s->part);
    pl_graph_view_destroy(s->view);
    for (size_t i = 0; i < s->n_warnings; i++)
        pl_free(s->warnings[i]);
    pl_free(s->warnings);
    pthread_mutex_destroy(&s->mu);
    pl_model *model = s->model;
    pl_free(s);
    for (size_t b = 0; retained && b < nb; b++)
        pl_module_release(retained[b]);
    pl_free(retained);
    pl_model_release(model);
}

/* ---- run contexts --------------------------------------------------------- */

typedef struct pl_call_extra {
    void *workspace;             /* device kernels: their own workspace */
    void *staging;               /* device-to-device copies: a host bounce */
} pl_call_extra;

static void pl_runctx_destroy(pl_session *s, pl_runctx *rc)
{
    if (rc == NULL)
        return;
    pl_engine *e = s->rt->engine;
    for (size_t v = 0; rc->vars && v < s->n_values; v++)
        if (rc->vars[v])
            pl_engine_delete_var(e, rc->vars[v]);
    if (rc->done)
        pl_engine_delete_var(e, rc->done);
    for (size_t d = 0; rc->arena && d < s->n_devs; d++) {
        if (rc->arena[d] == NULL)
            continue;
        if (d == 0)
            free(rc->arena[d]);
        else
            s->devs[d].module->api.mem_free(s->devs[d].module->ctx, s->devs[d].device,
                                             rc->arena[d]);
    }
    for (size_t v = 0; rc->default_out && v < s->n_values; v++)
        free(rc->default_out[v]);
    for (size_t i = 0; rc->calls && i < s->n_steps; i++) {
        pl_step_call *c = &rc->calls[i];
        /* A creation that failed part way left the later calls unmade. */
        if (c->tensors == NULL)
            continue;
        pl_call_extra *x = (pl_call_extra *)(c->tensors + s->steps[i].n_in + s->steps[i].n_out);
        const pl_step *st = &s->steps[i];
        if (x->workspace)
            st->module->api.mem_free(st->module->ctx, s->devs[st->dev].device, x->workspace);
        free(x->staging);
        pl_free(c->tensors);
    }
    pl_free(rc->calls);
    pl_free(rc->default_out);
    pl_free(rc->values);
    pl_free(rc->vars);
    pl_free(rc->arena);
    pl_free(rc);
}

static void *pl_host_aligned(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return p;
}

static pl_status *pl_runctx_create(pl_session *s, pl_runctx **out)
{
    *out = NULL;
    pl_runctx *rc = pl_calloc(1, sizeof *rc);
    if (rc == NULL)
        return pl_sess_oom();
    rc->arena = pl_calloc(s->n_devs, sizeof *rc->arena);
    rc->vars = pl_calloc(s->n_values ? s->n_values : 1, sizeof *rc->vars);
    rc->values = pl_calloc(s->n_values ? s->n_values : 1, sizeof *rc->values);
    rc->default_out = pl_calloc(s->n_values ? s->n_values : 1, sizeof *rc->default_out);
    rc->calls = pl_calloc(s->n_steps ? s->n_steps : 1, sizeof *rc->calls);
    pl_status *st = NULL;
    if (!rc->arena || !rc->vars || !rc->values || !rc->default_out || !rc->calls)
        st = pl_sess_oom();
    for (size_t d = 0; st == NULL && d < s->n_devs; d++) {
        size_t bytes = s->arena_bytes[d];
        if (bytes == 0)
            continue;
        if (d == 0) {
            rc->arena[d] = pl_host_aligned(bytes);
            if (rc->arena[d] == NULL)
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                      "out of memory for a host arena of %zu bytes", bytes);
        } else {
            st = pl_sess_dev_alloc(s, (int32_t)d, bytes, "the arena of a run", &rc->arena[d]);
        }
    }
    for (size_t v = 0; st == NULL && v < s->n_values; v++) {
        pl_value *val = &s->values[v];
        rc->vars[v] = pl_engine_new_var(s->rt->engine);
        if (rc->vars[v] == NULL) {
            st = pl_sess_oom();
            break;
        }
        pl_tensor *t = &rc->values[v];
        t->struct_size = sizeof *t;
        t->dtype = val->dtype;
        t->ndim = val->ndim;
        t->shape = (int64_t *)(val->kind == PL_VAL_WORKSPACE ? &val->ws_dim : val->dims);
        t->device.device_type = s->devs[val->dev].device_type;
        t->device.device_id = s->devs[val->dev].device;
        switch (val->kind) {
        case PL_VAL_ARENA:
        case PL_VAL_WORKSPACE:
            if (val->dev == 0) {
                t->data = (char *)rc->arena[0] + val->offset;
            } else {
                t->data = rc->arena[val->dev];
                t->byte_offset = val->offset;
            }
            break;
        case PL_VAL_CONST:
            t->data = pl_graph_get_tensor(s->g, val->orig)->data;
            break;
        case PL_VAL_PERSIST:
            t->data = val->persist;
            break;
        case PL_VAL_OUTPUT:
            rc->default_out[v] = pl_host_aligned(val->bytes);
            if (rc->default_out[v] == NULL)
                st = pl_sess_oom();
            break;
        case PL_VAL_INPUT:
            break;
        }
    }
    rc->done = st == NULL ? pl_engine_new_var(s->rt->engine) : NULL;
    if (st == NULL && rc->done == NULL)
        st = pl_sess_oom();
    for (size_t i = 0; st == NULL && i < s->n_steps; i++) {
        const pl_step *step = &s->steps[i];
        pl_step_call *c = &rc->calls[i];
        c->session = s;
        c->rc = rc;
        c->step = i;
        size_t n = step->n_in + step->n_out;
        size_t extra_slots = (sizeof(pl_call_extra) + sizeof(pl_tensor) - 1) / sizeof(pl_tensor);
        c->tensors = pl_calloc(n + extra_slots, sizeof *c->tensors);
        if (c->tensors == NULL) {
            st = pl_sess_oom();
            break;
        }
        pl_call_extra *x = (pl_call_extra *)(c->tensors + n);
        if (step->device_workspace > 0) {
            char purpose[600];
            snprintf(purpose, sizeof purpose, "the workspace of step %s", step->name);
            st = pl_sess_dev_alloc(s, step->dev, step->device_workspace, purpose,
                                   &x->workspace);
        }
        if (st == NULL && step->kind == PL_STEP_COPY &&
            s->values[step->in[0]].dev != 0 && s->values[step->out[0]].dev != 0) {
            x->staging = pl_host_aligned(s->values[step->in[0]].bytes);
            if (x->staging == NULL)
                st = pl_sess_oom();
        }
    }
    if (st != NULL) {
        pl_runctx_destroy(s, rc);
        return st;
    }
    *out = rc;
    return NULL;
}

/* ---- running --------------------------------------------------------------- */

static void pl_call_prepare(pl_step_call *c, const pl_run_context *run)
{
    pl_session *s = c->session;
    const pl_step *st = &s->steps[c->step];
    pl_runctx *rc = c->rc;
    for (size_t i = 0; i < st->n_in; i++) {
        if (st->in[i] < 0) {
            memset(&c->tensors[i], 0, sizeof c->tensors[i]);
            c->tensors[i].struct_size = sizeof c->tensors[i];
            c->tensors[i].ndim = -1;
        } else {
            c->tensors[i] = rc->values[st->in[i]];
        }
    }
    for (size_t o = 0; o < st->n_out; o++) {
        pl_tensor *t = &c->tensors[st->n_in + o];
        if (st->out[o] < 0) {
            memset(t, 0, sizeof *t);
            t->struct_size = sizeof *t;
            t->ndim = -1;
        } else {
            *t = rc->values[st->out[o]];
        }
    }
    c->run = (pl_run_context){.header = PL_ABI_HEADER_INIT(pl_run_context),
                              .device = s->devs[st->dev].device,
                              .worker = run ? run->worker : 0,
                              .stream = run ? run->stream : NULL};
    pl_call_extra *x = (pl_call_extra *)(c->tensors + st->n_in + st->n_out);
    c->args = (pl_run_args){.header = PL_ABI_HEADER_INIT(pl_run_args),
                            .run = &c->run,
                            .n_inputs = st->n_in,
                            .inputs = c->tensors,
                            .n_outputs = st->n_out,
                            .outputs = c->tensors + st->n_in,
                            .requests = st->kind == PL_STEP_KERNEL ? st->requests : NULL};
    if (st->workspace >= 0) {
        c->args.workspace = rc->values[st->workspace].data;
        c->args.workspace_bytes = s->values[st->workspace].bytes;
    } else if (st->device_workspace > 0) {
        c->args.workspace = x->workspace;
        c->args.workspace_bytes = st->device_workspace;
    }
}

static pl_status *pl_copy_run(pl_step_call *c)
{
    pl_session *s = c->session;
    const pl_step *st = &s->steps[c->step];
    const pl_value *sv = &s->values[st->in[0]];
    const pl_value *dv = &s->values[st->out[0]];
    const pl_tensor *src = &c->tensors[0];
    const pl_tensor *dst = &c->tensors[1];
    size_t bytes = sv->bytes;
    if (bytes == 0)
        return NULL;
    const pl_sdev *sd = &s->devs[sv->dev], *dd = &s->devs[dv->dev];
    if (sv->dev == 0 && dv->dev == 0) {
        memcpy((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
               bytes);
        return NULL;
    }
    if (sv->dev == 0)
        return dd->module->api.copy_to_device(dd->module->ctx, dd->device, dst->data,
                                              (size_t)dst->byte_offset,
                                              (const char *)src->data + src->byte_offset,
                                              bytes);
    if (dv->dev == 0)
        return sd->module->api.copy_to_host(sd->module->ctx, sd->device,
                                            (char *)dst->data + dst->byte_offset, src->data,
                                            (size_t)src->byte_offset, bytes);
    if (sd->module == dd->module && sd->module->api.copy_device_to_device != NULL)
        return sd->module->api.copy_device_to_device(sd->module->ctx, sd->device, src->data,
                                                     (size_t)src->byte_offset, dd->device,
                                                     dst->data, (size_t)dst->byte_offset,
                                                     bytes);
    /* Two devices that cannot talk: through the host. */
    pl_call_extra *x = (pl_call_extra *)(c->tensors + st->n_in + st->n_out);
    PL_RETURN_IF_ERROR(sd->module->api.copy_to_host(sd->module->ctx, sd->device, x->staging,
                                                    src->data, (size_t)src->byte_offset,
                                                    bytes));
    return dd->module->api.copy_to_device(dd->module->ctx, dd->device, dst->data,
                                          (size_t)dst->byte_offset, x->staging, bytes);
}

static pl_status *pl_step_fn(void *arg, const pl_run_context *run)
{
    pl_step_call *c = arg;
    pl_session *s = c->session;
    pl_step *st = &s->steps[c->step];
    uint64_t t0 = pl_now_ns();
    pl_call_prepare(c, run);
    pl_status *err = NULL;
    switch (st->kind) {
    case PL_STEP_KERNEL:
        err = st->module->api.kernel_run(st->module->ctx, st->kernel, &c->args);
        break;
    case PL_STEP_SUBGRAPH:
        err = st->module->api.run(st->module->ctx, st->compiled, &c->args);
        break;
    case PL_STEP_COPY:
        err = pl_copy_run(c);
        break;
    }
    atomic_fetch_add(&st->total_ns, pl_now_ns() - t0);
    atomic_fetch_add(&st->runs, 1);
    return pl_status_wrap(err, "%s: ", st->name);
}

static void pl_step_async_fn(void *arg, const pl_run_context *run, pl_completion *done)
{
    pl_step_call *c = arg;
    pl_session *s = c->session;
    pl_step *st = &s->steps[c->step];
    pl_call_prepare(c, run);
    atomic_fetch_add(&st->runs, 1);
    pl_status *err = st->module->api.run_async(st->module->ctx, st->compiled, &c->args, done);
    if (err != NULL)
        pl_engine_complete(done, pl_status_wrap(err, "%s: ", st->name));
}

static pl_status *pl_nop_fn(void *arg, const pl_run_context *run)
{
    (void)arg;
    (void)run;
    return NULL;
}

static bool pl_same_shape(const pl_tensor *t, int32_t ndim, const int64_t *dims)
{
    if (t->ndim != ndim || (ndim > 0 && t->shape == NULL))
        return false;
    for (int32_t d = 0; d < ndim; d++)
        if (t->shape[d] != dims[d])
            return false;
    return true;
}

static pl_status *pl_check_io(const pl_session *s, const pl_value *val, const char *what,
                              const pl_tensor *t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, val->orig);
    char want[256], got[256];
    if (!PL_DTYPE_EQ(t->dtype, val->dtype) || !pl_same_shape(t, val->ndim, val->dims)) {
        pl_dims_format(val->dims, val->ndim, want, sizeof want);
        if (t->ndim >= 0 && t->ndim <= PL_GRAPH_MAX_RANK && (t->ndim == 0 || t->shape))
            pl_dims_format(t->shape, t->ndim, got, sizeof got);
        else
            snprintf(got, sizeof got, "rank %d", (int)t->ndim);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '%s' must be %s%s, got %s%s", what, gt->name,
                                pl_dtype_name(val->dtype), want, pl_dtype_name(t->dtype), got);
    }
    if (t->strides != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '%s' must be dense (strides NULL)", what, gt->name);
    return NULL;
}

pl_status *pl_session_run(pl_session *s, const pl_io *inputs, size_t n_inputs,
                          pl_io *outputs, size_t n_outputs)
{
    if (s == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_run: NULL session");
    const pl_graph *g = s->g;
    /* Inputs: every graph input, matching its type. */
    for (size_t i = 0; i < n_inputs; i++)
        if (inputs[i].name == NULL || pl_graph_find_tensor(g, inputs[i].name) == PL_TID_NONE ||
            !pl_graph_get_tensor(g, pl_graph_find_tensor(g, inputs[i].name))->is_input)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no input named '%s'",
                                    inputs[i].name ? inputs[i].name : "(null)");
    const pl_tensor **bound = pl_calloc(s->n_values ? s->n_values : 1, sizeof *bound);
    if (bound == NULL)
        return pl_sess_oom();
    pl_status *st = NULL;
    for (size_t v = 0; st == NULL && v < s->n_values; v++) {
        if (s->values[v].kind != PL_VAL_INPUT)
            continue;
        const char *name = pl_graph_get_tensor(g, s->values[v].orig)->name;
        for (size_t i = 0; i < n_inputs; i++)
            if (strcmp(inputs[i].name, name) == 0)
                bound[v] = &inputs[i].tensor;
        if (bound[v] == NULL)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' is not given", name);
        else if (bound[v]->data == NULL && s->values[v].bytes > 0)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' has no data", name);
        else
            st = pl_check_io(s, &s->values[v], "input", bound[v]);
    }
    /* Outputs: by name, checked; unwanted ones go to the run's own buffers. */
    int32_t *out_value = pl_calloc(n_outputs ? n_outputs : 1, sizeof *out_value);
    bool *allocated = pl_calloc(n_outputs ? n_outputs : 1, sizeof *allocated);
    if (st == NULL && (out_value == NULL || allocated == NULL))
        st = pl_sess_oom();
    for (size_t i = 0; st == NULL && i < n_outputs; i++) {
        out_value[i] = -1;
        pl_tid t = outputs[i].name ? pl_graph_find_tensor(g, outputs[i].name) : PL_TID_NONE;
        if (t != PL_TID_NONE && s->value_of[(size_t)t * 8] >= 0 &&
            s->values[s->value_of[(size_t)t * 8]].kind == PL_VAL_OUTPUT)
            out_value[i] = s->value_of[(size_t)t * 8];
        if (out_value[i] < 0) {
            st = pl_status_create(PL_CODE_NOT_FOUND, "the model has no output named '%s'",
                                  outputs[i].name ? outputs[i].name : "(null)");
            break;
        }
        if (outputs[i].tensor.data != NULL)
            st = pl_check_io(s, &s->values[out_value[i]], "output", &outputs[i].tensor);
    }
    pl_runctx *rc = NULL;
    if (st == NULL) {
        pthread_mutex_lock(&s->mu);
        rc = s->free_rc;
        if (rc != NULL)
            s->free_rc = rc->next;
        pthread_mutex_unlock(&s->mu);
        if (rc == NULL) {
            pl_runctx **grown = NULL;
            st = pl_runctx_create(s, &rc);
            if (st == NULL) {
                pthread_mutex_lock(&s->mu);
                grown = pl_realloc(s->rc_list, (s->n_rc + 1) * sizeof *grown);
                if (grown != NULL) {
                    s->rc_list = grown;
                    s->rc_list[s->n_rc++] = rc;
                }
                pthread_mutex_unlock(&s->mu);
                if (grown == NULL) {
                    pl_runctx_destroy(s, rc);
                    rc = NULL;
                    st = pl_sess_oom();
                }
            }
        }
    }
    if (st == NULL) {
        for (size_t v = 0; v < s->n_values; v++) {
            if (s->values[v].kind == PL_VAL_INPUT) {
                rc->values[v].data = (char *)bound[v]->data + bound[v]->byte_offset;
                rc->values[v].byte_offset = 0;
            } else if (s->values[v].kind == PL_VAL_OUTPUT) {
                rc->values[v].data = rc->default_out[v];
            }
        }
        for (size_t i = 0; st == NULL && i < n_outputs; i++) {
            pl_tensor *t = &outputs[i].tensor;
            const pl_value *val = &s->values[out_value[i]];
            if (t->data == NULL) {
                t->data = pl_host_aligned(val->bytes);
                if (t->data == NULL) {
                    st = pl_sess_oom();
                    break;
                }
                allocated[i] = true;
                t->byte_offset = 0;
            }
            rc->values[out_value[i]].data = (char *)t->data + t->byte_offset;
        }
    }
    pl_engine *e = s->rt->engine;
    for (size_t i = 0; st == NULL && i < s->n_steps; i++) {
        const pl_step *step = &s->steps[i];
        pl_var *reads_inline[16], *writes_inline[16];
        size_t nr = 0, nw = 0;
        size_t cap_r = step->n_in, cap_w = step->n_out + step->n_reuse + 2;
        pl_var **reads = cap_r <= 16 ? reads_inline : pl_malloc(cap_r * sizeof *reads);
        pl_var **writes = cap_w <= 16 ? writes_inline : pl_malloc(cap_w * sizeof *writes);
        if (reads == NULL || writes == NULL) {
            if (reads != reads_inline)
                pl_free(reads);
            if (writes != writes_inline)
                pl_free(writes);
            st = pl_sess_oom();
            break;
        }
        for (size_t k = 0; k < step->n_in; k++)
            if (step->in[k] >= 0)
                reads[nr++] = rc->vars[step->in[k]];
        for (size_t k = 0; k < step->n_out; k++)
            if (step->out[k] >= 0)
                writes[nw++] = rc->vars[step->out[k]];
        if (step->workspace >= 0)
            writes[nw++] = rc->vars[step->workspace];
        for (size_t k = 0; k < step->n_reuse; k++)
            writes[nw++] = rc->vars[step->reuse[k]];
        if (step->compiled_var != NULL)
            writes[nw++] = step->compiled_var;
        pl_exec_ctx ctx = {.kind = PL_EXEC_CPU};
        int32_t run_dev = step->dev;
        if (run_dev != 0) {
            ctx.kind = PL_EXEC_DEVICE;
            ctx.device = s->devs[run_dev].engine_key;
            ctx.stream = 0;
        } else if (step->module != NULL &&
                   (step->module->api.capabilities & PL_CAP_PINNED_THREAD)) {
            /* One thread for the module's host work (its OpenMP team, say). */
            ctx.kind = PL_EXEC_DEVICE;
            ctx.device = step->pinned_key;
            ctx.stream = 0;
        }
        bool async = step->kind == PL_STEP_SUBGRAPH &&
                     (step->module->api.capabilities & PL_CAP_ASYNC) &&
                     step->module->api.run_async != NULL;
        if (async)
            st = pl_engine_push_async(e, pl_step_async_fn, &rc->calls[i], ctx, reads, nr,
                                      writes, nw, 0, step->name);
        else
            st = pl_engine_push(e, pl_step_fn, &rc->calls[i], ctx, reads, nr, writes, nw, 0,
                                step->name);
        if (reads != reads_inline)
            pl_free(reads);
        if (writes != writes_inline)
            pl_free(writes);
    }
    pl_status *run_error = NULL;
    if (rc != NULL) {
        /* The end of the run: after every value's last use. Pushed even
         * when a push failed, so the run context is quiet before reuse. */
        pl_status *push = pl_engine_push(e, pl_nop_fn, NULL,
                                         (pl_exec_ctx){.kind = PL_EXEC_INLINE}, rc->vars,
                                         s->n_values, &rc->done, 1, 0, "end of run");
        if (push == NULL) {
            run_error = pl_engine_wait_var(e, rc->done);
        } else {
            pl_status_free(push);
            for (size_t v = 0; v < s->n_values; v++)
                pl_status_free(pl_engine_wait_var(e, rc->vars[v]));
            run_error = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory ending a run");
        }
        pthread_mutex_lock(&s->mu);
        rc->next = s->free_rc;
        s->free_rc = rc;
        pthread_mutex_unlock(&s->mu);
    }
    if (st == NULL)
        st = run_error;
    else
        pl_status_free(run_error);
    for (size_t i = 0; i < n_outputs; i++) {
        if (st != NULL) {
            if (allocated && allocated[i]) {
                free(outputs[i].tensor.data);
                outputs[i].tensor.data = NULL;
            }
            continue;
        }
        const pl_value *val = &s->values[out_value[i]];
        pl_tensor *t = &outputs[i].tensor;
        t->struct_size = sizeof *t;
        t->dtype = val->dtype;
        t->ndim = val->ndim;
        t->shape = (int64_t *)val->dims;
        t->device.device_type = PL_DEVICE_CPU;
        t->device.device_id = 0;
    }
    pl_free(bound);
    pl_free(out_value);
    pl_free(allocated);
    return st;
}

/* For control.c (control.h): the steps run one after the other in the
 * calling thread, with a run context of the session's pool. */
pl_status *pl_session_run_inline(pl_session *s, const pl_tensor *inputs, pl_tensor *outputs,
                                 int worker)
{
    pthread_mutex_lock(&s->mu);
    pl_runctx *rc = s->free_rc;
    if (rc != NULL)
        s->free_rc = rc->next;
    pthread_mutex_unlock(&s->mu);
    if (rc == NULL) {
        PL_RETURN_IF_ERROR(pl_runctx_create(s, &rc));
        pthread_mutex_lock(&s->mu);
        pl_runctx **grown = pl_realloc(s->rc_list, (s->n_rc + 1) * sizeof *grown);
        if (grown != NULL) {
            s->rc_list = grown;
            s->rc_list[s->n_rc++] = rc;
        }
        pthread_mutex_unlock(&s->mu);
        if (grown == NULL) {
            pl_runctx_destroy(s, rc);
            return pl_sess_oom();
        }
    }
    for (size_t v = 0; v < s->n_values; v++) {
        pl_value_kind k = s->values[v].kind;
        if (k != PL_VAL_INPUT && k != PL_VAL_OUTPUT)
            continue;
        size_t count = k == PL_VAL_INPUT ? pl_graph_input_count(s->g)
                                         : pl_graph_output_count(s->g);
        for (size_t i = 0; i < count; i++) {
            pl_tid t = k == PL_VAL_INPUT ? pl_graph_input(s->g, i) : pl_graph_output(s->g, i);
            if (t != s->values[v].orig)
                continue;
            const pl_tensor *b = k == PL_VAL_INPUT ? &inputs[i] : &outputs[i];
            rc->values[v].data = (char *)b->data + b->byte_offset;
            rc->values[v].byte_offset = 0;
        }
    }
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < s->n_steps; i++) {
        pl_run_context run = {.header = PL_ABI_HEADER_INIT(pl_run_context),
                              .device = s->devs[s->steps[i].dev].device,
                              .worker = worker};
        st = pl_step_fn(&rc->calls[i], &run);
    }
    pthread_mutex_lock(&s->mu);
    rc->next = s->free_rc;
    s->free_rc = rc;
    pthread_mutex_unlock(&s->mu);
    return st;
}

void pl_buffer_free(void *data)
{
    free(data);
}

/* ---- reading ------------------------------------------------------------- */

size_t pl_session_input_count(const pl_session *s)
{
    return s ? pl_graph_input_count(s->g) : 0;
}

size_t pl_session_output_count(const pl_session *s)
{
    return s ? pl_graph_output_count(s->g) : 0;
}

const char *pl_session_input_name(const pl_session *s, size_t i)
{
    pl_tid t = s ? pl_graph_input(s->g, i) : PL_TID_NONE;
    return t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t)->name;
}

const char *pl_session_output_name(const pl_session *s, size_t i)
{
    pl_tid t = s ? pl_graph_output(s->g, i) : PL_TID_NONE;
    return t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t)->name;
}

static void pl_session_type(const pl_session *s, pl_tid t, pl_dtype *out_dtype,
                            int32_t *out_ndim, const int64_t **out_dims)
{
    const pl_graph_tensor *gt = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t);
    if (out_dtype)
        *out_dtype = gt ? gt->dtype : (pl_dtype){0, 0, 0};
    if (out_ndim)
        *out_ndim = gt ? gt->ndim : -1;
    if (out_dims)
        *out_dims = gt ? gt->dims : NULL;
}

void pl_session_input_type(const pl_session *s, size_t i, pl_dtype *out_dtype,
                           int32_t *out_ndim, const int64_t **out_dims)
{
    pl_session_type(s, s ? pl_graph_input(s->g, i) : PL_TID_NONE, out_dtype, out_ndim,
                    out_dims);
}

void pl_session_output_type(const pl_session *s, size_t i, pl_dtype *out_dtype,
                            int32_t *out_ndim, const int64_t **out_dims)
{
    pl_session_type(s, s ? pl_graph_output(s->g, i) : PL_TID_NONE, out_dtype, out_ndim,
                    out_dims);
}

size_t pl_session_step_count(const pl_session *s)
{
    return s ? s->n_steps : 0;
}

static const char *pl_step_backend(const pl_session *s, const pl_step *st)
{
    (void)s;
    if (st->kind == PL_STEP_COPY)
        return "copy";
    return st->module->name;
}

void pl_session_step_info(const pl_session *s, size_t i, const char **out_name,
                          const char **out_backend, uint64_t *out_total_ns,
                          uint64_t *out_runs)
{
    const pl_step *st = s && i < s->n_steps ? &s->steps[i] : NULL;
    if (out_name)
        *out_name = st ? st->name : NULL;
    if (out_backend)
        *out_backend = st ? pl_step_backend(s, st) : NULL;
    if (out_total_ns)
        *out_total_ns = st ? atomic_load(&((pl_step *)st)->total_ns) : 0;
    if (out_runs)
        *out_runs = st ? atomic_load(&((pl_step *)st)->runs) : 0;
}

size_t pl_session_warning_count(const pl_session *s)
{
    return s ? s->n_warnings : 0;
}

const char *pl_session_warning(const pl_session *s, size_t i)
{
    return s && i < s->n_warnings ? s->warnings[i] : NULL;
}

/* ---- explain ------------------------------------------------------------- */

static json_t *pl_sess_tensor_json(const pl_session *s, pl_tid t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, t);
    json_t *dims = json_array();
    for (int32_t d = 0; d < gt->ndim; d++)
        json_array_append_new(dims, json_integer(gt->dims[d]));
    return json_pack("{s:s, s:s, s:o}", "name", gt->name, "dtype",
                     pl_dtype_name(gt->dtype), "shape", dims);
}

static json_t *pl_sess_explain_json(const pl_session *s)
{
    const pl_graph *g = s->g;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(s->model->path));
    json_t *backends = json_array();
    for (size_t b = 0; b < pl_partition_backend_count(s->part); b++) {
        const pl_part_backend *be = pl_partition_backend(s->part, b);
        json_array_append_new(backends,
                              json_pack("{s:s, s:i, s:s}", "module", be->module->name,
                                        "device", (int)be->device, "mode",
                                        be->symbolic ? "symbolic" : "imperative"));
    }
    json_object_set_new(root, "backends", backends);
    json_t *placement = json_array();
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        pl_nid n = order[i];
        const pl_graph_node *node = pl_graph_get_node(g, n);
        int32_t b = pl_partition_node_backend(s->part, n);
        int32_t c = pl_partition_node_cluster(s->part, n);
        json_t *reasons = json_object();
        for (size_t k = 0; k < pl_partition_backend_count(s->part); k++) {
            const char *r = pl_partition_reason(s->part, n, k);
            if (r != NULL && (int32_t)k != b)
                json_object_set_new(reasons, pl_partition_backend(s->part, k)->module->name,
                                    json_string(r));
        }
        json_t *outs = json_array();
        for (size_t o = 0; o < node->n_outputs; o++)
            if (node->outputs[o] != PL_TID_NONE)
                json_array_append_new(outs, pl_sess_tensor_json(s, node->outputs[o]));
        pl_nid head = pl_partition_fused_into(s->part, n);
        json_t *entry = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b}", "node", node->name, "op",
                      node->op, "backend",
                      pl_partition_backend(s->part, (size_t)b)->module->name, "subgraph",
                      c >= 0 ? json_integer(c) : json_null(), "fused_into",
                      head != PL_NID_NONE ? json_string(pl_graph_get_node(g, head)->name)
                                          : json_null(),
                      "reasons", reasons, "outputs", outs, "pruned",
                      s->live != NULL && !s->live[n]);
        /* A control-flow node: where its bodies' nodes run (control.c). */
        size_t ws;
        if (entry != NULL && pl_partition_backend(s->part, (size_t)b)->module == s->rt->control)
            json_object_set_new(entry, "bodies",
                                pl_control_explain_json(
                                    (const pl_control *)pl_partition_kernel(s->part, n, &ws)));
        json_array_append_new(placement, entry);
    }
    json_object_set_new(root, "placement", placement);
    json_t *subgraphs = json_array();
    json_t *copies = json_array();
    json_t *steps = json_array();
    for (size_t i = 0; i < s->n_steps; i++) {
        const pl_step *st = &s->steps[i];
        /* The nodes a kernel step runs after its own, fused into it. */
        json_t *fused = json_array();
        for (pl_nid k = st->kind == PL_STEP_KERNEL ? pl_partition_fused_next(s->part, st->node)
                                                   : PL_NID_NONE;
             k != PL_NID_NONE; k = pl_partition_fused_next(s->part, k))
            json_array_append_new(fused, json_string(pl_graph_get_node(g, k)->name));
        json_array_append_new(steps, json_pack("{s:s, s:s, s:s, s:o}", "name", st->name,
                                               "backend", pl_step_backend(s, st), "device",
                                               s->devs[st->dev].name, "fused", fused));
        if (st->kind == PL_STEP_SUBGRAPH) {
            const pl_part_cluster *cl = pl_partition_cluster(s->part, st->cluster);
            json_t *nodes = json_array();
            for (size_t k = 0; k < cl->n_nodes; k++)
                json_array_append_new(nodes, json_string(pl_graph_get_node(g, cl->nodes[k])->name));
            json_t *ins = json_array(), *outs = json_array();
            for (size_t k = 0; k < st->n_in; k++)
                json_array_append_new(ins, json_string(pl_graph_get_tensor(g, s->values[st->in[k]].orig)->name));
            for (size_t k = 0; k < st->n_out; k++)
                json_array_append_new(outs, json_string(pl_graph_get_tensor(g, s->values[st->out[k]].orig)->name));
            json_array_append_new(subgraphs,
                                  json_pack("{s:i, s:s, s:o, s:o, s:o, s:s}", "id",
                                            (int)st->cluster, "backend", st->module->name,
                                            "nodes", nodes, "inputs", ins, "outputs", outs,
                                            "cache", st->cache ? st->cache : "off"));
        } else if (st->kind == PL_STEP_COPY) {
            const pl_value *sv = &s->values[st->in[0]], *dv = &s->values[st->out[0]];
            json_array_append_new(
                copies, json_pack("{s:s, s:s, s:s, s:I}", "tensor",
                                  pl_graph_get_tensor(g, sv->orig)->name, "from",
                                  s->devs[sv->dev].name, "to", s->devs[dv->dev].name, "bytes",
                                  (json_int_t)sv->bytes));
        }
    }
    json_object_set_new(root, "subgraphs", subgraphs);
    json_object_set_new(root, "copies", copies);
    json_object_set_new(root, "steps", steps);
    json_t *devices = json_array();
    for (size_t d = 0; d < s->n_devs; d++) {
        const pl_plan_device_stats *ps = pl_plan_stats(s->plan, (int32_t)d);
        json_array_append_new(
            devices, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "device", s->devs[d].name,
                               "arena_bytes", (json_int_t)ps->arena_bytes,
                               "lower_bound_bytes", (json_int_t)ps->lower_bound_bytes,
                               "naive_bytes", (json_int_t)ps->naive_bytes, "tensors_planned",
                               (json_int_t)ps->n_tensors, "tensors_in_place",
                               (json_int_t)ps->n_inplace));
    }
    json_object_set_new(root, "memory", json_pack("{s:o}", "devices", devices));
    json_t *warnings = json_array();
    for (size_t i = 0; i < s->n_warnings; i++)
        json_array_append_new(warnings, json_string(s->warnings[i]));
    json_object_set_new(root, "warnings", warnings);
    return root;
}

/* The placement of a control-flow node's bodies, indented under it. */
static void pl_sess_explain_bodies(FILE *f, json_t *bodies, int depth)
{
    size_t i, k;
    json_t *b, *p;
    json_array_foreach(bodies, i, b)
    {
        fprintf(f, "%*s%s:\n", 6 + 2 * depth, "",
                json_string_value(json_object_get(b, "attribute")));
        json_array_foreach(json_object_get(b, "placement"), k, p)
        {
            fprintf(f, "%*s%-28s %-20s -> %s\n", 8 + 2 * depth, "",
                    json_string_value(json_object_get(p, "node")),
                    json_string_value(json_object_get(p, "op")),
                    json_string_value(json_object_get(p, "backend")));
            json_t *nested = json_object_get(p, "bodies");
            if (json_is_array(nested))
                pl_sess_explain_bodies(f, nested, depth + 2);
        }
    }
}

static char *pl_sess_explain_text(const pl_session *s, json_t *root)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    fprintf(f, "model: %s\n", s->model->path);
    fprintf(f, "backends in order:");
    json_t *b;
    size_t i;
    json_array_foreach(json_object_get(root, "backends"), i, b)
        fprintf(f, " %s:%d (%s)", json_string_value(json_object_get(b, "module")),
                (int)json_integer_value(json_object_get(b, "device")),
                json_string_value(json_object_get(b, "mode")));
    fprintf(f, "\n\nplacement:\n");
    json_t *p;
    json_array_foreach(json_object_get(root, "placement"), i, p)
    {
        json_t *sg = json_object_get(p, "subgraph");
        char sub[32] = "";
        if (json_is_integer(sg))
            snprintf(sub, sizeof sub, " [subgraph %d]", (int)json_integer_value(sg));
        json_t *into = json_object_get(p, "fused_into");
        fprintf(f, "  %-28s %-20s -> %s%s%s%s%s\n", json_string_value(json_object_get(p, "node")),
                json_string_value(json_object_get(p, "op")),
                json_string_value(json_object_get(p, "backend")), sub,
                json_is_string(into) ? ", fused into " : "",
                json_is_string(into) ? json_string_value(into) : "",
                json_is_true(json_object_get(p, "pruned"))
                    ? ", pruned (no graph output depends on it)"
                    : "");
        const char *key;
        json_t *r;
        json_object_foreach(json_object_get(p, "reasons"), key, r)
        {
            const char *text = json_string_value(r);
            size_t kl = strlen(key);
            bool named = strncmp(text, key, kl) == 0 && text[kl] == ':';
            fprintf(f, "      refused by %s%s%s\n", named ? "" : key, named ? "" : ": ", text);
        }
        if (json_is_array(json_object_get(p, "bodies")))
            pl_sess_explain_bodies(f, json_object_get(p, "bodies"), 0);
    }
    json_t *c;
    if (json_array_size(json_object_get(root, "copies")) > 0) {
        fprintf(f, "\ncopies at boundaries:\n");
        json_array_foreach(json_object_get(root, "copies"), i, c)
            fprintf(f, "  %s: %s -> %s, %lld bytes\n", json_string_value(json_object_get(c, "tensor")),
                    json_string_value(json_object_get(c, "from")),
                    json_string_value(json_object_get(c, "to")),
                    (long long)json_integer_value(json_object_get(c, "bytes")));
    }
    fprintf(f, "\nsteps of a run:\n");
    json_t *st;
    json_array_foreach(json_object_get(root, "steps"), i, st)
        fprintf(f, "  %2zu  %s  [on %s]\n", i, json_string_value(json_object_get(st, "name")),
                json_string_value(json_object_get(st, "device")));
    fprintf(f, "\nmemory plan:\n");
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(root, "memory"), "devices"), i, d)
    {
        long long arena = (long long)json_integer_value(json_object_get(d, "arena_bytes"));
        long long lb = (long long)json_integer_value(json_object_get(d, "lower_bound_bytes"));
        fprintf(f, "  %-16s arena %lld B, lower bound %lld B, naive %lld B", json_string_value(json_object_get(d, "device")),
                arena, lb, (long long)json_integer_value(json_object_get(d, "naive_bytes")));
        if (lb > 0)
            fprintf(f, ", arena/lower bound %.4f", (double)arena / (double)lb);
        fprintf(f, "\n");
    }
    json_t *w;
    json_array_foreach(json_object_get(root, "warnings"), i, w)
        fprintf(f, "warning: %s\n", json_string_value(w));
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

pl_status *pl_session_explain(const pl_session *s, bool as_json, char **out_text)
{
    *out_text = NULL;
    if (s == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_explain: NULL session");
    json_t *root = pl_sess_explain_json(s);
    if (root == NULL)
        return pl_sess_oom();
    char *text = as_json ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                         : pl_sess_explain_text(s, root);
    json_decref(root);
    if (text == NULL)
        return pl_sess_oom();
    *out_text = pl_xstrdup(text);
    free(text);
    return *out_text ? NULL : pl_sess_oom();
}
