/* optimize.c — graph rewrites that are exact, before partitioning.
 *
 * Exporters leave nodes that compute nothing: Identity on weights and conv
 * biases, Dropout in an inference graph, a Cast to the dtype the tensor
 * already has, a Reshape (Flatten, Squeeze, Unsqueeze, Expand) whose output
 * shape is its input's. Left in, they are worse than a wasted copy: a
 * backend that takes Conv only with a constant bias sees the bias come out
 * of an Identity, refuses the Conv, and the model splits into subgraphs
 * with layout conversions at every boundary. This pass bypasses them — the
 * node's consumers read its input — and drops them, so what a backend is
 * offered is what the model computes.
 *
 * A node is kept when its output is a graph output (the name is the
 * model's interface), when a control-flow body names its output (an
 * outer-scope reference resolves by name), or when it has another output
 * somebody reads (Dropout's mask). Every rewrite is recorded with the node
 * and the reason; the session's description lists them. The core computes
 * nothing here: folding constant subgraphs needs a module (issue 15). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "optimize.h"
#include "status.h"
#include "strmap.h"

/* Adds every tensor name of every body under G's nodes to NAMES. */
static bool pl_opt_body_names(const pl_graph *g, pl_strmap *names)
{
    for (size_t n = 0; n < pl_graph_node_count(g); n++) {
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t a = 0; a < node->n_attrs; a++) {
            const pl_attr *at = &node->attrs[a];
            if (at->kind != PL_ATTR_GRAPH && at->kind != PL_ATTR_GRAPHS)
                continue;
            for (size_t b = 0; b < at->n; b++) {
                const pl_graph *body = at->graphs[b];
                for (size_t t = 0; t < pl_graph_tensor_count(body); t++)
                    if (!pl_strmap_put(names, pl_graph_get_tensor(body, (pl_tid)t)->name, 1))
                        return false;
                if (!pl_opt_body_names(body, names))
                    return false;
            }
        }
    }
    return true;
}

/* Whether T's type is fully known: dtype, rank and every dim. */
static bool pl_opt_static(const pl_graph_tensor *t)
{
    if (t->dtype.lanes == 0 || t->ndim < 0)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->dims[d] < 0)
            return false;
    return true;
}

static bool pl_opt_same_type(const pl_graph_tensor *a, const pl_graph_tensor *b)
{
    if (!pl_opt_static(a) || !pl_opt_static(b) || !PL_DTYPE_EQ(a->dtype, b->dtype) ||
        a->ndim != b->ndim)
        return false;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

/* Why node N computes nothing (its output 0 equals its input 0), or NULL
 * when it does or may. */
static const char *pl_opt_noop_reason(const pl_graph *g, const pl_graph_node *n)
{
    if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
        return NULL;
    if (n->n_inputs < 1 || n->inputs[0] == PL_TID_NONE || n->n_outputs < 1 ||
        n->outputs[0] == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *in = pl_graph_get_tensor(g, n->inputs[0]);
    const pl_graph_tensor *out = pl_graph_get_tensor(g, n->outputs[0]);
    if (strcmp(n->op, "Identity") == 0)
        return n->n_inputs == 1 ? "Identity" : NULL;
    if (strcmp(n->op, "Dropout") == 0) {
        /* Inference unless training_mode is given and not a constant false. */
        if (n->n_inputs >= 3 && n->inputs[2] != PL_TID_NONE) {
            const pl_graph_tensor *tm = pl_graph_get_tensor(g, n->inputs[2]);
            if (tm->data == NULL || tm->nbytes < 1 || ((const unsigned char *)tm->data)[0] != 0)
                return NULL;
        }
        return "Dropout in inference";
    }
    if (!pl_opt_same_type(in, out))
        return NULL;
    if (strcmp(n->op, "Cast") == 0)
        return "Cast to the dtype it has";
    static const char *const shape_ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                            "Expand"};
    for (size_t k = 0; k < sizeof shape_ops / sizeof *shape_ops; k++)
        if (strcmp(n->op, shape_ops[k]) == 0)
            return "output shape equals its input's";
    return NULL;
}

/* Whether output O of node N is read or is a graph output. */
static bool pl_opt_output_used(const pl_graph *g, const pl_graph_node *n, size_t o)
{
    if (o >= n->n_outputs || n->outputs[o] == PL_TID_NONE)
        return false;
    const pl_graph_tensor *t = pl_graph_get_tensor(g, n->outputs[o]);
    return t->is_output || t->n_consumers > 0;
}

void pl_rewrites_free(pl_rewrites *w)
{
    for (size_t i = 0; i < w->n; i++)
        pl_free(w->items[i]);
    pl_free(w->items);
    w->items = NULL;
    w->n = 0;
}

bool pl_rewrites_add(pl_rewrites *w, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return pl_lines_append(&w->items, &w->n, buf);
}

pl_status *pl_graph_optimize(const pl_graph *g, pl_optimize_level level, pl_graph **out_graph,
                             pl_rewrites *rewrites)
{
    *out_graph = NULL;
    if (level == PL_OPTIMIZE_NONE)
        return NULL;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    bool *drop = pl_calloc(nn ? nn : 1, sizeof *drop);
    pl_tid *alias = pl_calloc(nt ? nt : 1, sizeof *alias);
    pl_strmap body_names = {.alloc = pl_alloc_current()};
    pl_status *st = NULL;
    if (drop == NULL || alias == NULL || !pl_opt_body_names(g, &body_names))
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    for (size_t t = 0; st == NULL && t < nt; t++)
        alias[t] = (pl_tid)t;
    size_t dropped = 0;
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; st == NULL && i < nn; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, order[i]);
        const char *why = pl_opt_noop_reason(g, n);
        if (why == NULL)
            continue;
        const pl_graph_tensor *out = pl_graph_get_tensor(g, n->outputs[0]);
        uint32_t seen;
        bool kept = out->is_output || pl_strmap_get(&body_names, out->name, &seen);
        for (size_t o = 1; o < n->n_outputs && !kept; o++)
            kept = pl_opt_output_used(g, n, o);
        if (kept)
            continue;
        /* Inputs resolve in order: a chain of no-ops reads the first input. */
        pl_tid src = alias[n->inputs[0]];
        alias[n->outputs[0]] = src;
        drop[order[i]] = true;
        dropped++;
        if (!pl_rewrites_add(rewrites, "%s '%s' removed (%s): its readers read '%s'", n->op,
                             n->name, why, pl_graph_get_tensor(g, src)->name))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    }
    if (st == NULL && dropped > 0) {
        st = pl_graph_copy_rewritten(g, drop, alias, out_graph);
        if (st == NULL)
            st = pl_graph_validate(*out_graph);
        if (st != NULL) {
            pl_graph_destroy(*out_graph);
            *out_graph = NULL;
        }
    }
    pl_strmap_free(&body_names);
    pl_free(drop);
    pl_free(alias);
    return st;
}

bool pl_optimize_parse(const char *s, pl_optimize_level *out)
{
    static const char *const names[] = {"none", "basic", "all"};
    for (int k = 0; k < 3; k++)
        if (strcmp(s, names[k]) == 0) {
            *out = (pl_optimize_level)k;
            return true;
        }
    return false;
}
