/* program.c — lowering a partition into an execution program, and planning
 * the program's memory.
 *
 * Lowering: one step per symbolic subgraph, one per imperative node or
 * fused chain (its head's kernel writes the chain's last output; the
 * intermediate tensors are never made, so they have no value), and a copy
 * wherever a tensor is needed on another device than the one that made it.
 * Every tensor the core materialises gets a value on each device where it
 * is read; the values of one tensor are chained, so there is no limit on
 * devices. Nodes no graph output depends on get no step.
 *
 * Planning: each arena value lives from its producer step to the last step
 * that reads it; those intervals, with the in-place candidates the opset
 * allows, go to the interval planner (plan.h). A step whose output reuses
 * the bytes of an earlier value must wait for that value's readers, so the
 * program records, per step, the earlier values whose bytes it overwrites;
 * the run makes it write their variables. */
#include "program.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cache.h"
#include "opset.h"
#include "run.h"
#include "status.h"

static pl_status *pl_prog_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory creating a session");
}

/* ---- warnings ------------------------------------------------------------ */

bool pl_warnings_add(pl_warnings *w, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!pl_lines_append(&w->items, &w->n, buf))
        return false;
    pl_log(w->logger, PL_LOG_WARN, NULL, "%s", buf);
    return true;
}

void pl_warnings_clear(pl_warnings *w)
{
    for (size_t i = 0; i < w->n; i++)
        pl_free(w->items[i]);
    pl_free(w->items);
    w->items = NULL;
    w->n = 0;
}

/* ---- teardown ------------------------------------------------------------- */

void pl_program_destroy(pl_program *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->n_steps; i++) {
        pl_prog_step *st = &p->steps[i];
        if (st->kind == PL_STEP_SUBGRAPH && st->compiled != NULL)
            st->module->api.release(st->module->ctx, st->compiled);
        pl_cache_unmap(st->blob, st->blob_bytes); /* after release: it read the blob */
        if (st->compiled_var != NULL)
            pl_engine_delete_var(p->rt->engine, st->compiled_var);
        if (st->run_mu != NULL) {
            pthread_mutex_destroy(st->run_mu);
            pl_free(st->run_mu);
        }
        pl_graph_view_destroy(st->view);
        pl_free(st->in);
        pl_free(st->out);
        pl_free(st->requests);
        pl_free(st->reuse);
        pl_free(st->name);
    }
    pl_free(p->steps);
    for (size_t v = 0; v < p->n_values; v++) {
        pl_prog_value *val = &p->values[v];
        if (val->kind == PL_VAL_PERSIST && val->persist != NULL) {
            pl_module *m = p->devs[val->dev].module;
            m->api.mem_free(m->ctx, p->devs[val->dev].device, val->persist);
        }
    }
    pl_free(p->values);
    pl_free(p->first_value);
    pl_free(p->live);
    pl_free(p->devs);
    pl_plan_destroy(p->plan);
    pl_free(p->arena_bytes);
    pl_free(p);
}

/* ---- devices ----------------------------------------------------------------- */

static int32_t pl_prog_device_of(const pl_program *p, const pl_part_backend *b)
{
    pl_module *m = b->module;
    if (m->api.capabilities & PL_CAP_HOST_MEMORY)
        return 0;
    for (size_t d = 1; d < p->n_devs; d++)
        if (p->devs[d].module == m && p->devs[d].device == b->device)
            return (int32_t)d;
    return -1;
}

static pl_status *pl_prog_add_device(pl_program *p, pl_module *m, int32_t device)
{
    pl_prog_device *grown = pl_realloc(p->devs, (p->n_devs + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_prog_oom();
    p->devs = grown;
    pl_prog_device *d = &p->devs[p->n_devs];
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
        PL_RETURN_IF_ERROR(pl_engine_device_key(p->rt->engine, m, device, &d->engine_key));
    }
    p->n_devs++;
    return NULL;
}

pl_status *pl_program_dev_alloc(const pl_program *p, int32_t dev, size_t bytes,
                                const char *purpose, void **out_ptr)
{
    *out_ptr = NULL;
    const pl_prog_device *d = &p->devs[dev];
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

/* ---- values and steps ------------------------------------------------------ */

int32_t pl_program_value_of(const pl_program *p, pl_tid t, int32_t dev)
{
    for (int32_t v = p->first_value[t]; v >= 0; v = p->values[v].next)
        if (p->values[v].dev == dev)
            return v;
    return -1;
}

int32_t pl_program_output_value(const pl_program *p, pl_tid t)
{
    for (int32_t v = p->first_value[t]; v >= 0; v = p->values[v].next)
        if (p->values[v].dev == p->io_dev && p->values[v].kind == PL_VAL_OUTPUT)
            return v;
    return -1;
}

/* A new value of tensor ORIG (PL_TID_NONE: a workspace) on DEV, chained to
 * the tensor's other values. */
static pl_status *pl_prog_new_value(pl_program *p, pl_tid orig, int32_t dev,
                                    pl_value_kind kind, int32_t *out_value)
{
    pl_prog_value *grown = pl_realloc(p->values, (p->n_values + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_prog_oom();
    p->values = grown;
    pl_prog_value *v = &p->values[p->n_values];
    memset(v, 0, sizeof *v);
    v->tensor = orig;
    v->dev = dev;
    v->kind = kind;
    v->producer = -1;
    v->next = -1;
    if (orig != PL_TID_NONE) {
        const pl_graph_tensor *t = pl_graph_get_tensor(p->g, orig);
        v->dtype = t->dtype;
        v->ndim = t->ndim;
        v->dims = t->dims;
        if (!pl_graph_tensor_bytes(t, &v->bytes))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "tensor '%s': its dtype and shape must be "
                                    "fully known to run the model (it is %s with "
                                    "rank %d)",
                                    t->name, pl_dtype_name(t->dtype), (int)t->ndim);
        /* At the end of the chain: lookups find values in creation order. */
        int32_t *link = &p->first_value[orig];
        while (*link >= 0)
            link = &p->values[*link].next;
        *link = (int32_t)p->n_values;
    }
    *out_value = (int32_t)p->n_values++;
    return NULL;
}

static pl_status *pl_prog_new_step(pl_program *p, pl_step_kind kind, int32_t dev,
                                   size_t n_in, size_t n_out, size_t *out_index)
{
    pl_prog_step *grown = pl_realloc(p->steps, (p->n_steps + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_prog_oom();
    p->steps = grown;
    pl_prog_step *st = &p->steps[p->n_steps];
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
        return pl_prog_oom();
    }
    for (size_t i = 0; i < n_in; i++)
        st->in[i] = -1;
    for (size_t i = 0; i < n_out; i++)
        st->out[i] = -1;
    atomic_init(&st->total_ns, 0);
    atomic_init(&st->runs, 0);
    atomic_init(&st->min_ns, UINT64_MAX);
    *out_index = p->n_steps++;
    return NULL;
}

/* A copy step making a value of SRC's tensor on DST_DEV from value SRC. */
static pl_status *pl_prog_copy(pl_program *p, int32_t src, int32_t dst_dev,
                               pl_value_kind kind, int32_t *out_value)
{
    pl_tid orig = p->values[src].tensor;
    int32_t src_dev = p->values[src].dev;
    int32_t dst;
    PL_RETURN_IF_ERROR(pl_prog_new_value(p, orig, dst_dev, kind, &dst));
    size_t idx;
    PL_RETURN_IF_ERROR(pl_prog_new_step(p, PL_STEP_COPY, src_dev ? src_dev : dst_dev,
                                        1, 1, &idx));
    pl_prog_step *st = &p->steps[idx];
    st->in[0] = src;
    st->out[0] = dst;
    p->values[dst].producer = (int32_t)idx;
    st->name = pl_strdupf("copy %s %s->%s", pl_graph_get_tensor(p->g, orig)->name,
                          p->devs[src_dev].name, p->devs[dst_dev].name);
    if (st->name == NULL)
        return pl_prog_oom();
    *out_value = dst;
    return NULL;
}

/* The value of tensor T that a copy to another device starts from: the
 * one made where T is made (or the host's), not a constant; the lowest
 * device wins. -1 when T has not been made yet. */
static int32_t pl_prog_home_of(const pl_program *p, pl_tid t)
{
    int32_t home = -1;
    for (int32_t v = p->first_value[t]; v >= 0; v = p->values[v].next)
        if (p->values[v].kind != PL_VAL_CONST &&
            (home < 0 || p->values[v].dev < p->values[home].dev))
            home = v;
    return home;
}

/* The value of tensor T readable on device DEV, with a copy step if it
 * lives elsewhere. */
static pl_status *pl_prog_value_on(pl_program *p, pl_tid t, int32_t dev,
                                   int32_t *out_value)
{
    *out_value = pl_program_value_of(p, t, dev);
    if (*out_value >= 0)
        return NULL;
    const pl_graph_tensor *gt = pl_graph_get_tensor(p->g, t);
    if (gt->data != NULL)
        return pl_prog_new_value(p, t, dev, dev == 0 ? PL_VAL_CONST : PL_VAL_PERSIST,
                                 out_value);
    int32_t home = pl_prog_home_of(p, t);
    if (home < 0)
        return pl_status_create(PL_CODE_INTERNAL,
                                "session: tensor '%s' is needed before it is made",
                                gt->name);
    /* A graph output made on a device and also read where the caller's
     * outputs live: that copy is the caller's output buffer, which readers
     * there then read, as they do for an output made there. */
    pl_value_kind kind = dev == p->io_dev && gt->is_output ? PL_VAL_OUTPUT : PL_VAL_ARENA;
    return pl_prog_copy(p, home, dev, kind, out_value);
}

/* Output SLOT of step STEP: a new value of T on DEV. */
static pl_status *pl_prog_bind_output(pl_program *p, size_t step, size_t slot, pl_tid t,
                                      int32_t dev)
{
    if (t == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *gt = pl_graph_get_tensor(p->g, t);
    pl_value_kind kind = (gt->is_output && dev == p->io_dev) ? PL_VAL_OUTPUT : PL_VAL_ARENA;
    int32_t v;
    PL_RETURN_IF_ERROR(pl_prog_new_value(p, t, dev, kind, &v));
    p->values[v].producer = (int32_t)step;
    p->steps[step].out[slot] = v;
    return NULL;
}

/* Step STEP's inputs: the values of TENSORS[0..N) on its device, with the
 * copies they need made first. Absent inputs stay -1. */
static pl_status *pl_prog_bind_inputs(pl_program *p, const pl_tid *tensors, size_t n,
                                      int32_t dev, int32_t **out_values)
{
    int32_t *ins = pl_malloc((n ? n : 1) * sizeof *ins);
    if (ins == NULL)
        return pl_prog_oom();
    for (size_t i = 0; i < n; i++) {
        ins[i] = -1;
        if (tensors[i] == PL_TID_NONE)
            continue;
        pl_status *st = pl_prog_value_on(p, tensors[i], dev, &ins[i]);
        if (st != NULL) {
            pl_free(ins);
            return st;
        }
    }
    *out_values = ins;
    return NULL;
}

/* ---- liveness and the order of units --------------------------------------- */

/* Marks the nodes some graph output depends on; the others (a dead branch)
 * get no step: nothing could ever read what they make. Walks the nodes
 * backwards in topological order, so a node's consumers are decided first. */
static pl_status *pl_prog_mark_live(pl_program *p)
{
    const pl_graph *g = p->g;
    size_t nn = pl_graph_node_count(g);
    const pl_nid *topo = pl_graph_topo_order(g);
    p->live = pl_calloc(nn ? nn : 1, sizeof *p->live);
    if (p->live == NULL)
        return pl_prog_oom();
    for (size_t i = nn; i-- > 0;) {
        pl_nid n = topo[i];
        const pl_graph_node *node = pl_graph_get_node(g, n);
        for (size_t o = 0; o < node->n_outputs && !p->live[n]; o++) {
            if (node->outputs[o] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[o]);
            p->live[n] = t->is_output;
            for (size_t c = 0; c < t->n_consumers && !p->live[n]; c++)
                p->live[n] = p->live[t->consumers[c]];
        }
    }
    return NULL;
}

/* Whether unit U (a cluster, or nc + an imperative node) has a live node. */
static bool pl_prog_unit_live(const pl_program *p, size_t u, size_t nc)
{
    if (u >= nc)
        return p->live[u - nc];
    const pl_part_cluster *cl = pl_partition_cluster(p->part, u);
    for (size_t k = 0; k < cl->n_nodes; k++)
        if (p->live[cl->nodes[k]])
            return true;
    return false;
}

static size_t pl_prog_unit(const pl_program *p, pl_nid n, size_t nc)
{
    int32_t c = pl_partition_node_cluster(p->part, n);
    return c >= 0 ? (size_t)c : nc + (size_t)n;
}

/* The nodes of unit U: a cluster's, or the one imperative node. */
static const pl_nid *pl_prog_unit_nodes(const pl_program *p, size_t u, size_t nc,
                                        pl_nid *single, size_t *count)
{
    if (u < nc) {
        *count = pl_partition_cluster(p->part, u)->n_nodes;
        return pl_partition_cluster(p->part, u)->nodes;
    }
    *single = (pl_nid)(u - nc);
    *count = 1;
    return single;
}

/* Kahn's algorithm over units into ORDER: each unit after every unit it
 * reads from. READY holds the units whose inputs are all made: taken
 * oldest first (breadth first) or newest first (DEPTH_FIRST). INDEG is
 * each unit's count of inputs from other units, consumed. Returns the
 * count ordered. */
static size_t pl_prog_kahn(const pl_program *p, uint32_t *indeg, const bool *exists,
                           size_t *ready, size_t *order, bool depth_first)
{
    const pl_graph *g = p->g;
    size_t nc = pl_partition_cluster_count(p->part);
    size_t nu = nc + pl_graph_node_count(g);
    size_t head = 0, tail = 0, n = 0;
    for (size_t u = 0; u < nu; u++)
        if (exists[u] && indeg[u] == 0)
            ready[tail++] = u;
    while (head < tail) {
        size_t u = depth_first ? ready[--tail] : ready[head++];
        order[n++] = u;
        pl_nid single;
        size_t count;
        const pl_nid *nodes = pl_prog_unit_nodes(p, u, nc, &single, &count);
        for (size_t k = 0; k < count; k++) {
            const pl_graph_node *node = pl_graph_get_node(g, nodes[k]);
            for (size_t o = 0; o < node->n_outputs; o++) {
                if (node->outputs[o] == PL_TID_NONE)
                    continue;
                const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[o]);
                for (size_t c = 0; c < t->n_consumers; c++) {
                    size_t cu = pl_prog_unit(p, t->consumers[c], nc);
                    if (cu != u && --indeg[cu] == 0)
                        ready[tail++] = cu;
                }
            }
        }
    }
    return n;
}

/* The most bytes of values that pass between units alive at once when the
 * units run in ORDER (N of them): each from its producer's unit to its
 * last reader's; graph outputs, constants and tensors of unknown size
 * left out. POS and LIVE are scratch (a unit count, N + 1 entries). */
static size_t pl_prog_order_peak(const pl_program *p, const size_t *order, size_t n,
                                 size_t *pos, size_t *live)
{
    const pl_graph *g = p->g;
    size_t nc = pl_partition_cluster_count(p->part);
    for (size_t i = 0; i < n; i++)
        pos[order[i]] = i;
    memset(live, 0, (n + 1) * sizeof *live);
    for (size_t i = 0; i < n; i++) {
        pl_nid single;
        size_t count;
        const pl_nid *nodes = pl_prog_unit_nodes(p, order[i], nc, &single, &count);
        for (size_t k = 0; k < count; k++) {
            const pl_graph_node *node = pl_graph_get_node(g, nodes[k]);
            for (size_t o = 0; o < node->n_outputs; o++) {
                if (node->outputs[o] == PL_TID_NONE)
                    continue;
                const pl_graph_tensor *t = pl_graph_get_tensor(g, node->outputs[o]);
                if (t->is_output || t->data != NULL || t->ndim < 0)
                    continue;
                size_t bytes = pl_dtype_size(t->dtype), last = i;
                for (int32_t d = 0; d < t->ndim; d++)
                    bytes = t->dims[d] < 0 ? 0 : bytes * (size_t)t->dims[d];
                for (size_t c = 0; c < t->n_consumers; c++) {
                    size_t at = pos[pl_prog_unit(p, t->consumers[c], nc)];
                    last = at > last ? at : last;
                }
                if (last == i || bytes == 0)
                    continue; /* read inside its unit only */
                live[i] += bytes;
                live[last + 1] -= bytes; /* wraps back in the running sum */
            }
        }
    }
    size_t now = 0, peak = 0;
    for (size_t i = 0; i < n; i++) {
        now += live[i];
        peak = now > peak ? now : peak;
    }
    return peak;
}

/* Orders the partition's units (clusters and imperative nodes) so that each
 * comes after every unit it reads from. Breadth first runs independent
 * branches side by side, which holds every branch's values at once: the
 * five levels of RetinaNet's post-processing each cast a score map before
 * any was reduced (28 MB of arena at 320x320); depth first finishes a
 * branch before the next (12 MB), but holds a value the other branches
 * still need across a long one (a squeeze-and-excitation block's input:
 * regnet_y's arena grew 15%). Both orders are made, and the one whose
 * values between units peak lower is kept (breadth first on a tie). */
static pl_status *pl_prog_unit_order(const pl_program *p, size_t **out_units,
                                     size_t *out_n)
{
    const pl_graph *g = p->g;
    size_t nn = pl_graph_node_count(g);
    size_t nc = pl_partition_cluster_count(p->part);
    size_t nu = nc + nn;  /* unit id: cluster c -> c; imperative node n -> nc + n */
    size_t cap = nu ? nu : 1;
    uint32_t *indeg = pl_calloc(cap, sizeof *indeg), *indeg2 = pl_malloc(cap * sizeof *indeg2);
    bool *exists = pl_calloc(cap, sizeof *exists);
    size_t *order = pl_malloc(cap * sizeof *order), *deep = pl_malloc(cap * sizeof *deep);
    size_t *ready = pl_malloc(cap * sizeof *ready), *live = pl_malloc((cap + 1) * sizeof *live);
    pl_status *st = NULL;
    if (!indeg || !indeg2 || !exists || !order || !deep || !ready || !live) {
        st = pl_prog_oom();
        goto done;
    }
    for (size_t n = 0; n < nn; n++) {
        size_t u = pl_prog_unit(p, (pl_nid)n, nc);
        exists[u] = true;
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t i = 0; i < node->n_inputs; i++) {
            if (node->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid pr = pl_graph_get_tensor(g, node->inputs[i])->producer;
            if (pr != PL_NID_NONE && pl_prog_unit(p, pr, nc) != u)
                indeg[u]++;
        }
    }
    size_t expected = 0;
    for (size_t u = 0; u < nu; u++)
        expected += exists[u];
    memcpy(indeg2, indeg, cap * sizeof *indeg);
    size_t n = pl_prog_kahn(p, indeg, exists, ready, order, false);
    if (n != expected) {
        st = pl_status_create(PL_CODE_INTERNAL,
                              "session: the subgraphs depend on each other in "
                              "a cycle (a partitioner bug)");
        goto done;
    }
    /* (a chain of units gives both the same order: nothing to weigh) */
    if (pl_prog_kahn(p, indeg2, exists, ready, deep, true) == n &&
        memcmp(deep, order, n * sizeof *order) != 0 &&
        pl_prog_order_peak(p, deep, n, ready, live) < pl_prog_order_peak(p, order, n, ready, live)) {
        size_t *t = order;
        order = deep;
        deep = t;
    }
    *out_units = order;
    *out_n = n;
    order = NULL;
done:
    pl_free(indeg);
    pl_free(indeg2);
    pl_free(exists);
    pl_free(order);
    pl_free(deep);
    pl_free(ready);
    pl_free(live);
    return st;
}

/* ---- lowering the units ---------------------------------------------------- */

/* The last node of the fused chain that node N heads (N itself when it
 * heads none). */
static pl_nid pl_prog_chain_tail(const pl_program *p, pl_nid n)
{
    while (pl_partition_fused_next(p->part, n) != PL_NID_NONE)
        n = pl_partition_fused_next(p->part, n);
    return n;
}

/* The name of the kernel step of node N on MODULE: "name (Op, module)", or
 * for a fused chain "a+b (OpA+OpB, module)", so per-step timings name every
 * node the step runs. NULL when out of memory. */
static char *pl_prog_kernel_step_name(const pl_program *p, pl_nid n, const char *module)
{
    char *names = NULL, *ops = NULL;
    for (pl_nid k = n; k != PL_NID_NONE; k = pl_partition_fused_next(p->part, k)) {
        const pl_graph_node *node = pl_graph_get_node(p->g, k);
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

/* The engine queue of a pinned-thread module's host work: one per module
 * and device, like a device's (a module is either host-memory or not, so
 * the two never share a key). */
static pl_status *pl_prog_queue_key(const pl_program *p, const pl_part_backend *be,
                                    int32_t *out_key)
{
    *out_key = 0;
    if (!(be->module->api.capabilities & PL_CAP_PINNED_THREAD))
        return NULL;
    return pl_engine_device_key(p->rt->engine, be->module, be->device, out_key);
}

/* The step of cluster U. */
static pl_status *pl_prog_lower_cluster(pl_program *p, size_t u)
{
    const pl_part_cluster *cl = pl_partition_cluster(p->part, u);
    const pl_part_backend *be = pl_partition_backend(p->part, (size_t)cl->backend);
    int32_t dev = pl_prog_device_of(p, be);
    pl_graph_view *view = NULL;
    PL_RETURN_IF_ERROR(pl_graph_view_create(p->g, cl->nodes, cl->n_nodes, &view));
    const pl_graph_api *api = &pl_graph_view_table;
    size_t n_in = api->input_count(view), n_out = api->output_count(view);
    pl_tid *tensors = pl_malloc((n_in ? n_in : 1) * sizeof *tensors);
    int32_t *ins = NULL;
    pl_status *st = tensors == NULL ? pl_prog_oom() : NULL;
    for (size_t i = 0; st == NULL && i < n_in; i++)
        tensors[i] = (pl_tid)api->input(view, i);
    /* Inputs first: their copies must run before this step. */
    if (st == NULL)
        st = pl_prog_bind_inputs(p, tensors, n_in, dev, &ins);
    pl_free(tensors);
    size_t idx = 0;
    if (st == NULL)
        st = pl_prog_new_step(p, PL_STEP_SUBGRAPH, dev, n_in, n_out, &idx);
    if (st != NULL) {
        pl_free(ins);
        pl_graph_view_destroy(view);
        return st;
    }
    pl_prog_step *step = &p->steps[idx];
    memcpy(step->in, ins, n_in * sizeof *ins);
    pl_free(ins);
    step->view = view;
    step->cluster = u;
    step->backend = cl->backend;
    step->module = be->module;
    PL_RETURN_IF_ERROR(pl_prog_queue_key(p, be, &step->queue_key));
    step->name = pl_strdupf("subgraph %zu (%s, %zu nodes from '%s')", u, be->module->name,
                            cl->n_nodes, pl_graph_get_node(p->g, cl->nodes[0])->name);
    if (step->name == NULL)
        return pl_prog_oom();
    for (size_t o = 0; o < n_out; o++)
        PL_RETURN_IF_ERROR(pl_prog_bind_output(p, idx, o, (pl_tid)api->output(view, o), dev));
    return NULL;
}

/* The kernel step of imperative node N (a fused chain's head). */
static pl_status *pl_prog_lower_kernel(pl_program *p, pl_nid n)
{
    const pl_graph_node *node = pl_graph_get_node(p->g, n);
    /* The tensor the chain ends in replaces the head's one output. */
    const pl_graph_node *tail = pl_graph_get_node(p->g, pl_prog_chain_tail(p, n));
    int32_t b = pl_partition_node_backend(p->part, n);
    const pl_part_backend *be = pl_partition_backend(p->part, (size_t)b);
    int32_t dev = pl_prog_device_of(p, be);
    int32_t *ins = NULL;
    PL_RETURN_IF_ERROR(pl_prog_bind_inputs(p, node->inputs, node->n_inputs, dev, &ins));
    size_t idx = 0;
    pl_status *st = pl_prog_new_step(p, PL_STEP_KERNEL, dev, node->n_inputs,
                                     node->n_outputs, &idx);
    if (st != NULL) {
        pl_free(ins);
        return st;
    }
    pl_prog_step *step = &p->steps[idx];
    memcpy(step->in, ins, node->n_inputs * sizeof *ins);
    pl_free(ins);
    step->node = n;
    step->backend = b;
    step->module = be->module;
    PL_RETURN_IF_ERROR(pl_prog_queue_key(p, be, &step->queue_key));
    size_t ws = 0;
    /* Borrowed: the partition owns kernels until it is destroyed, so a
     * rebuild after a failed compile finds them again. */
    step->kernel = pl_partition_kernel(p->part, n, &ws);
    step->name = pl_prog_kernel_step_name(p, n, be->module->name);
    step->requests = pl_malloc((node->n_outputs ? node->n_outputs : 1) *
                               sizeof *step->requests);
    if (step->name == NULL || step->requests == NULL)
        return pl_prog_oom();
    for (size_t o = 0; o < node->n_outputs; o++) {
        pl_tid t = node->outputs[o];
        if (t != PL_TID_NONE && tail != node)
            t = tail->outputs[0];
        p->steps[idx].requests[o] = t == PL_TID_NONE ? PL_REQ_NULL : PL_REQ_WRITE;
        PL_RETURN_IF_ERROR(pl_prog_bind_output(p, idx, o, t, dev));
    }
    if (ws > 0 && dev != 0) {
        p->steps[idx].device_workspace = ws;
    } else if (ws > 0) {
        int32_t v;
        PL_RETURN_IF_ERROR(pl_prog_new_value(p, PL_TID_NONE, dev, PL_VAL_WORKSPACE, &v));
        pl_prog_value *val = &p->values[v];
        val->bytes = ws;
        val->dtype = PL_DTYPE_U8;
        val->ndim = 1;
        val->ws_dim = (int64_t)ws;
        val->dims = NULL;  /* &ws_dim moves with the array; readers use ws_dim */
        val->producer = (int32_t)idx;
        p->steps[idx].workspace = v;
    }
    return NULL;
}

/* The devices: the host, then every partition backend's device that is not
 * host memory. */
static pl_status *pl_prog_lower_devices(pl_program *p)
{
    PL_RETURN_IF_ERROR(pl_prog_add_device(p, NULL, 0));
    for (size_t b = 0; b < pl_partition_backend_count(p->part); b++) {
        const pl_part_backend *be = pl_partition_backend(p->part, b);
        if (pl_prog_device_of(p, be) < 0)
            PL_RETURN_IF_ERROR(pl_prog_add_device(p, be->module, be->device));
    }
    return NULL;
}

/* Graph outputs made elsewhere come to where the caller's outputs live,
 * into the caller's buffer. */
static pl_status *pl_prog_lower_outputs(pl_program *p)
{
    const pl_graph *g = p->g;
    for (size_t i = 0; i < pl_graph_output_count(g); i++) {
        pl_tid t = pl_graph_output(g, i);
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        if (pl_program_output_value(p, t) >= 0)
            continue;
        if (gt->is_input || gt->data != NULL) {
            /* a graph input passed through, or a constant: copied into
             * the caller's output buffer, as ONNX Runtime returns them */
            int32_t src = gt->is_input ? pl_program_value_of(p, t, p->io_dev) : -1, v;
            if (src < 0)
                PL_RETURN_IF_ERROR(pl_prog_value_on(p, t, 0, &src));
            PL_RETURN_IF_ERROR(pl_prog_copy(p, src, p->io_dev, PL_VAL_OUTPUT, &v));
            continue;
        }
        if (pl_program_value_of(p, t, p->io_dev) >= 0)
            continue;
        int32_t home = pl_prog_home_of(p, t);
        if (home < 0)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "session: graph output '%s' is never made", gt->name);
        int32_t v;
        PL_RETURN_IF_ERROR(pl_prog_copy(p, home, p->io_dev, PL_VAL_OUTPUT, &v));
    }
    return NULL;
}

/* The device the caller's inputs and outputs live on: the host, or IO's
 * device (added when no backend of the partition uses it). */
static pl_status *pl_prog_lower_io(pl_program *p, pl_module *m, int32_t device)
{
    p->io_dev = 0;
    if (m == NULL || (m->api.capabilities & PL_CAP_HOST_MEMORY))
        return NULL;
    pl_part_backend io = {.module = m, .device = device};
    int32_t d = pl_prog_device_of(p, &io);
    if (d < 0) {
        PL_RETURN_IF_ERROR(pl_prog_add_device(p, m, device));
        d = (int32_t)p->n_devs - 1;
    }
    p->io_dev = d;
    return NULL;
}

static pl_status *pl_prog_lower_all(pl_program *p, pl_module *io_module, int32_t io_device)
{
    const pl_graph *g = p->g;
    size_t nt = pl_graph_tensor_count(g);
    PL_RETURN_IF_ERROR(pl_prog_lower_devices(p));
    PL_RETURN_IF_ERROR(pl_prog_lower_io(p, io_module, io_device));
    p->first_value = pl_malloc((nt ? nt : 1) * sizeof *p->first_value);
    if (p->first_value == NULL)
        return pl_prog_oom();
    for (size_t k = 0; k < nt; k++)
        p->first_value[k] = -1;
    for (size_t i = 0; i < pl_graph_input_count(g); i++) {
        int32_t v;
        PL_RETURN_IF_ERROR(
            pl_prog_new_value(p, pl_graph_input(g, i), p->io_dev, PL_VAL_INPUT, &v));
    }
    PL_RETURN_IF_ERROR(pl_prog_mark_live(p));
    size_t *units = NULL, n_units = 0;
    PL_RETURN_IF_ERROR(pl_prog_unit_order(p, &units, &n_units));
    size_t nc = pl_partition_cluster_count(p->part);
    pl_status *st = NULL;
    for (size_t k = 0; k < n_units && st == NULL; k++) {
        size_t u = units[k];
        /* A live unit never reads a dead one, so skipping it leaves no
         * reader without its value. A fused node runs inside its chain
         * head's step, which came earlier in the unit order. */
        if (!pl_prog_unit_live(p, u, nc))
            continue;
        if (u < nc)
            st = pl_prog_lower_cluster(p, u);
        else if (pl_partition_fused_into(p->part, (pl_nid)(u - nc)) == PL_NID_NONE)
            st = pl_prog_lower_kernel(p, (pl_nid)(u - nc));
    }
    pl_free(units);
    PL_RETURN_IF_ERROR(st);
    return pl_prog_lower_outputs(p);
}

pl_status *pl_program_lower(pl_runtime *rt, const pl_graph *g, const pl_partition *part,
                            pl_module *io_module, int32_t io_device,
                            pl_program **out_program)
{
    *out_program = NULL;
    pl_program *p = pl_calloc(1, sizeof *p);
    if (p == NULL)
        return pl_prog_oom();
    p->rt = rt;
    p->g = g;
    p->part = part;
    p->full_dev = -1;
    pl_status *st = pl_prog_lower_all(p, io_module, io_device);
    if (st != NULL) {
        pl_program_destroy(p);
        return st;
    }
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind == PL_VAL_WORKSPACE)
            p->values[v].dims = &p->values[v].ws_dim;
    *out_program = p;
    return NULL;
}

const char *pl_program_step_backend(const pl_prog_step *st)
{
    switch (st->kind) {
    case PL_STEP_COPY:
        return "copy";
    case PL_STEP_CONTROL:
        return "control";
    default:
        return st->module->name;
    }
}

/* ---- memory --------------------------------------------------------------- */

/* The in-place candidate of output O of kernel step ST: the input slot its
 * head's schema names, when that input is an arena value of the same
 * dtype; else -1. For a fused chain the head's schema decides too: its
 * output holds the chain's result, of the same dtype and shape, and the
 * module applies the request to that result (module.h, kernel_fuse). */
static int32_t pl_prog_inplace_input(const pl_program *p, const pl_prog_step *st, size_t o)
{
    if (st->kind != PL_STEP_KERNEL || st->out[o] < 0)
        return -1;
    const pl_graph_node *n = pl_graph_get_node(p->g, st->node);
    const pl_op_schema *schema = pl_opset_find(p->rt->opset, n->domain, n->op,
                                               pl_graph_opset(p->g, n->domain));
    int slot = schema ? pl_opset_inplace_input(schema, o) : -1;
    if (slot < 0 || (size_t)slot >= st->n_in || st->in[slot] < 0)
        return -1;
    const pl_prog_value *in = &p->values[st->in[slot]];
    const pl_prog_value *out = &p->values[st->out[o]];
    if (in->kind != PL_VAL_ARENA || !PL_DTYPE_EQ(in->dtype, out->dtype))
        return -1;
    return st->in[slot];
}

static bool pl_prog_planned(const pl_prog_value *v)
{
    return v->kind == PL_VAL_ARENA || v->kind == PL_VAL_WORKSPACE;
}

/* The planned values' intervals, in production order (by step, then output
 * slot, then workspace): INTERVAL_OF maps values to intervals and VALUE_AT
 * back; CAND holds each interval's one candidate. */
static size_t pl_prog_intervals(const pl_program *p, pl_plan_interval *iv, size_t *cand,
                                size_t *interval_of, int32_t *value_at)
{
    size_t n = 0;
    for (size_t v = 0; v < p->n_values; v++)
        interval_of[v] = PL_PLAN_NONE;
    for (size_t s = 0; s < p->n_steps; s++) {
        const pl_prog_step *st = &p->steps[s];
        for (size_t k = 0; k <= st->n_out; k++) {
            int32_t v = k < st->n_out ? st->out[k] : st->workspace;
            if (v < 0 || !pl_prog_planned(&p->values[v]))
                continue;
            interval_of[v] = n;
            value_at[n] = v;
            iv[n] = (pl_plan_interval){.device = p->values[v].dev,
                                       .bytes = p->values[v].bytes,
                                       .first = (uint32_t)s, .last = (uint32_t)s,
                                       .candidates = &cand[n]};
            int32_t src = k < st->n_out ? pl_prog_inplace_input(p, st, k) : -1;
            if (src >= 0 && interval_of[src] != PL_PLAN_NONE) {
                cand[n] = interval_of[src];
                iv[n].n_candidates = 1;
            }
            n++;
        }
    }
    /* Each value lives until the last step that reads it. */
    for (size_t s = 0; s < p->n_steps; s++) {
        const pl_prog_step *st = &p->steps[s];
        for (size_t k = 0; k < st->n_in; k++)
            if (st->in[k] >= 0 && interval_of[st->in[k]] != PL_PLAN_NONE)
                iv[interval_of[st->in[k]]].last = (uint32_t)s;
    }
    return n;
}

/* Adds value VA to the values whose bytes step S's outputs overwrite. */
static pl_status *pl_prog_add_reuse(pl_prog_step *st, int32_t va)
{
    int32_t *grown = pl_realloc(st->reuse, (st->n_reuse + 1) * sizeof *grown);
    if (grown == NULL)
        return pl_prog_oom();
    st->reuse = grown;
    st->reuse[st->n_reuse++] = va;
    return NULL;
}

/* Offsets, in-place requests, and the reuse dependencies: a value B whose
 * bytes overlap those of a value A made earlier on the same device cannot
 * be written before A's readers are done. */
static pl_status *pl_prog_apply_plan(pl_program *p, const int32_t *value_at)
{
    const pl_plan *plan = p->plan;
    size_t n = pl_plan_entry_count(plan);
    for (size_t i = 0; i < n; i++) {
        const pl_plan_entry *e = pl_plan_entry_at(plan, i);
        pl_prog_value *val = &p->values[value_at[i]];
        val->offset = e->offset;
        pl_prog_step *st = &p->steps[val->producer];
        if (pl_plan_shares_with(plan, i) != PL_PLAN_NONE && st->kind == PL_STEP_KERNEL)
            for (size_t o = 0; o < st->n_out; o++)
                if (st->out[o] == value_at[i])
                    st->requests[o] = PL_REQ_INPLACE;
    }
    /* The rest orders the engine's pushes; a program its caller runs step
     * after step needs no such order (run.c), and the search is quadratic
     * in the values: c2_densenet121 on `order = cpu` spent 15% of a cold
     * start here. */
    if (pl_run_is_sequential(p))
        return NULL;
    /* B waits only for the latest earlier value on each of its bytes: an
     * older one there was overwritten by a later one, whose writer waited
     * for the older one's readers, so the order follows (each step used to
     * list every earlier value it overlaps: a chain of N steps pushed N^2/4
     * variables a run, 3 ms for 200 tiny ops). Candidates go from the most
     * recent back; one whose overlap with B the later ones already cover
     * is left out. */
    size_t *cand = pl_malloc((n ? n : 1) * sizeof *cand);
    struct pl_prog_span { size_t lo, hi; } *cover = pl_malloc((n ? n : 1) * sizeof *cover);
    pl_status *st = cand && cover ? NULL : pl_prog_oom();
    for (size_t b = 0; st == NULL && b < n; b++) {
        const pl_plan_entry *eb = pl_plan_entry_at(plan, b);
        size_t b_lo = eb->offset, b_hi = eb->offset + (eb->bytes ? eb->bytes : 1);
        size_t nc = 0;
        for (size_t a = 0; a < n; a++) {
            const pl_plan_entry *ea = pl_plan_entry_at(plan, a);
            if (ea->device != eb->device || ea->first_step >= eb->first_step ||
                ea->offset >= b_hi || b_lo >= ea->offset + (ea->bytes ? ea->bytes : 1))
                continue;
            /* insertion by first_step, latest first */
            size_t k = nc++;
            while (k > 0 && pl_plan_entry_at(plan, cand[k - 1])->first_step < ea->first_step) {
                cand[k] = cand[k - 1];
                k--;
            }
            cand[k] = a;
        }
        size_t n_cover = 0;
        for (size_t i = 0; st == NULL && i < nc; i++) {
            const pl_plan_entry *ea = pl_plan_entry_at(plan, cand[i]);
            size_t lo = ea->offset > b_lo ? ea->offset : b_lo;
            size_t a_hi = ea->offset + (ea->bytes ? ea->bytes : 1);
            size_t hi = a_hi < b_hi ? a_hi : b_hi;
            /* covered when one span of the (merged, disjoint) cover holds it */
            bool covered = false;
            for (size_t c = 0; c < n_cover && !covered; c++)
                covered = cover[c].lo <= lo && hi <= cover[c].hi;
            if (covered)
                continue;
            st = pl_prog_add_reuse(&p->steps[p->values[value_at[b]].producer], value_at[cand[i]]);
            /* merge [lo, hi) into the cover */
            size_t w = 0;
            for (size_t c = 0; c < n_cover; c++) {
                if (cover[c].hi < lo || cover[c].lo > hi) {
                    cover[w++] = cover[c];
                    continue;
                }
                lo = cover[c].lo < lo ? cover[c].lo : lo;
                hi = cover[c].hi > hi ? cover[c].hi : hi;
            }
            cover[w++] = (struct pl_prog_span){lo, hi};
            n_cover = w;
        }
    }
    pl_free(cand);
    pl_free(cover);
    return st;
}

/* Uploads constants that imperative kernels on accelerators read. */
static pl_status *pl_prog_upload_constants(pl_program *p)
{
    for (size_t v = 0; v < p->n_values; v++) {
        pl_prog_value *val = &p->values[v];
        if (val->kind != PL_VAL_PERSIST)
            continue;
        pl_module *m = p->devs[val->dev].module;
        const pl_graph_tensor *t = pl_graph_get_tensor(p->g, val->tensor);
        char purpose[300];
        snprintf(purpose, sizeof purpose, "constant '%s'", t->name);
        pl_status *st = pl_program_dev_alloc(p, val->dev, t->nbytes, purpose, &val->persist);
        if (st != NULL) {
            p->full_dev = val->dev;
            return st;
        }
        PL_RETURN_IF_ERROR(pl_status_wrap(
            m->api.copy_to_device(m->ctx, p->devs[val->dev].device, val->persist, 0,
                                  t->data, t->nbytes),
            "uploading constant '%s' to %s: ", t->name, p->devs[val->dev].name));
    }
    return NULL;
}

pl_status *pl_program_plan(pl_program *p, bool one_shot)
{
    size_t nv = p->n_values ? p->n_values : 1;
    pl_plan_interval *iv = pl_malloc(nv * sizeof *iv);
    size_t *cand = pl_malloc(nv * sizeof *cand);
    size_t *interval_of = pl_malloc(nv * sizeof *interval_of);
    int32_t *value_at = pl_malloc(nv * sizeof *value_at);
    p->arena_bytes = pl_calloc(p->n_devs, sizeof *p->arena_bytes);
    pl_status *st = NULL;
    if (!iv || !cand || !interval_of || !value_at || !p->arena_bytes)
        st = pl_prog_oom();
    if (st == NULL) {
        size_t n = pl_prog_intervals(p, iv, cand, interval_of, value_at);
        pl_plan_interval_options o = {.intervals = iv, .n_intervals = n,
                                      .n_steps = p->n_steps,
                                      .n_devices = (int32_t)p->n_devs, .alignment = 64,
                                      .quick = one_shot};
        st = pl_status_wrap(pl_plan_build_intervals(&o, &p->plan),
                            "planning the memory of %zu values: ", n);
    }
    if (st == NULL)
        st = pl_prog_apply_plan(p, value_at);
    for (size_t d = 0; st == NULL && d < p->n_devs; d++)
        p->arena_bytes[d] = pl_plan_stats(p->plan, (int32_t)d)->arena_bytes;
    pl_free(iv);
    pl_free(cand);
    pl_free(interval_of);
    pl_free(value_at);
    PL_RETURN_IF_ERROR(st);
    return pl_prog_upload_constants(p);
}
