/* graph_validate.c — checking a graph and ordering it: every node's inputs
 * made before they are read (Kahn's algorithm; a cycle is named), names a
 * control-flow body reads from enclosing graphs resolved and appended to
 * the node's inputs as captures, and the topological order the rest of the
 * core walks. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "graph_impl.h"
#include "status.h"

/* ---- validation --------------------------------------------------------- */

/* Names a cycle that starts at node START among the nodes Kahn's algorithm
 * could not order (indegree > 0). */
static pl_status *pl_graph_cycle_error(const pl_graph *g, const uint32_t *indeg,
                                       pl_nid start)
{
    /* Walk backwards through unordered producers; within n_nodes steps we
     * must revisit a node, which then lies on a cycle. */
    pl_nid cur = start;
    for (size_t step = 0; step < g->n_nodes; step++) {
        const pl_graph_node *n = &g->nodes[cur];
        pl_nid next = PL_NID_NONE;
        for (size_t i = 0; i < n->n_inputs && next == PL_NID_NONE; i++) {
            if (n->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid p = g->tensors[n->inputs[i]].producer;
            if (p != PL_NID_NONE && indeg[p] > 0)
                next = p;
        }
        if (next == PL_NID_NONE)
            break;
        cur = next;
    }
    const pl_graph_node *n = &g->nodes[cur];
    char path[512];
    size_t len = (size_t)snprintf(path, sizeof path, "'%s'", n->name);
    pl_nid walk = cur;
    for (int hops = 0; hops < 8; hops++) {
        const pl_graph_node *w = &g->nodes[walk];
        pl_nid next = PL_NID_NONE;
        for (size_t i = 0; i < w->n_inputs && next == PL_NID_NONE; i++) {
            if (w->inputs[i] == PL_TID_NONE)
                continue;
            pl_nid p = g->tensors[w->inputs[i]].producer;
            if (p != PL_NID_NONE && indeg[p] > 0)
                next = p;
        }
        if (next == PL_NID_NONE || len >= sizeof path)
            break;
        len += (size_t)snprintf(path + len, sizeof path - len, " <- '%s'",
                                g->nodes[next].name);
        if (next == cur)
            break;
        walk = next;
    }
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "node '%s' (%s) is on a cycle: %s", n->name, n->op,
                            path);
}

/* The graphs enclosing a body, innermost first: what its outer-scope
 * references may name. */
typedef struct pl_scope {
    const pl_graph *g;
    const struct pl_scope *up;
} pl_scope;

/* Whether NAME is defined (a node output, an input or a constant) in S or
 * a scope enclosing it. */
static bool pl_scope_resolves(const pl_scope *s, const char *name)
{
    for (; s != NULL; s = s->up) {
        pl_tid t = pl_graph_find_tensor(s->g, name);
        if (t == PL_TID_NONE)
            continue;
        const pl_graph_tensor *gt = &s->g->tensors[t];
        if (gt->is_input || gt->data != NULL || gt->producer != PL_NID_NONE)
            return true;
    }
    return false;
}

static pl_status *pl_graph_validate_in(pl_graph *g, const pl_scope *up, int depth,
                                       const bool *was_outer);

/* Validates the bodies of node ID (the node's producers are linked) and
 * lists after its formal inputs the tensors of G the bodies read. */
static pl_status *pl_graph_link_bodies(pl_graph *g, pl_nid id, const pl_scope *up, int depth)
{
    pl_graph_node *n = &g->nodes[id];
    n->n_inputs = n->n_formal_inputs;
    pl_scope here = {.g = g, .up = up};
    char **names = NULL;
    size_t n_names = 0;
    pl_status *st = NULL;
    for (size_t a = 0; st == NULL && a < n->n_attrs; a++) {
        const pl_attr *attr = &g->nodes[id].attrs[a];
        if (attr->kind != PL_ATTR_GRAPH && attr->kind != PL_ATTR_GRAPHS)
            continue;
        for (size_t b = 0; st == NULL && b < attr->n; b++) {
            pl_graph *body = attr->graphs[b];
            if (depth >= PL_GRAPH_MAX_DEPTH) {
                st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                      "node '%s' (%s): attribute '%s': graphs are nested "
                                      "more than %d deep",
                                      n->name, n->op, attr->name, PL_GRAPH_MAX_DEPTH);
                break;
            }
            /* A body speaks its model's opsets (ONNX has no other import). */
            for (size_t k = 0; st == NULL && k < g->n_opsets; k++)
                st = pl_graph_set_opset(body, g->opsets[k].domain, g->opsets[k].version);
            if (st == NULL)
                st = pl_graph_validate_in(body, &here, depth + 1, NULL);
            if (st != NULL) {
                char idx[32] = "";
                if (attr->kind == PL_ATTR_GRAPHS)
                    snprintf(idx, sizeof idx, "[%zu]", b);
                st = pl_status_wrap(st, "node '%s' (%s): attribute '%s'%s: ", n->name, n->op,
                                    attr->name, idx);
                break;
            }
            for (size_t t = 0; st == NULL && t < body->n_tensors; t++) {
                if (!body->tensors[t].is_outer)
                    continue;
                bool seen = false;
                for (size_t k = 0; k < n_names && !seen; k++)
                    seen = strcmp(names[k], body->tensors[t].name) == 0;
                if (seen)
                    continue;
                char **grown = pl_realloc(names, (n_names + 1) * sizeof *names);
                if (grown == NULL) {
                    st = pl_graph_oom("linking a body");
                    break;
                }
                names = grown;
                names[n_names++] = body->tensors[t].name;
            }
        }
    }
    size_t total = n->n_formal_inputs + n_names;
    if (st == NULL && n_names > 0) {
        pl_tid *grown = pl_realloc(n->inputs, total * sizeof *grown);
        if (grown == NULL)
            st = pl_graph_oom("linking a body");
        else
            n->inputs = grown;
    }
    for (size_t k = 0; st == NULL && k < n_names; k++) {
        pl_tid t;
        /* A name defined further out enters this graph as a reference of
         * its own, which the caller marks is_outer. */
        st = pl_graph_tensor_get_or_add(g, names[k], &t);
        if (st == NULL)
            g->nodes[id].inputs[g->nodes[id].n_formal_inputs + k] = t;
    }
    if (st == NULL)
        g->nodes[id].n_inputs = total;
    pl_free(names);
    return st;
}

pl_status *pl_graph_validate(pl_graph *g)
{
    /* A body validated again on its own (its inference rewrote a node:
     * opset_lower.c) keeps the outer-scope references the validation with
     * its enclosing graphs found: nothing here can resolve them again. */
    bool *was_outer = NULL;
    for (size_t t = 0; t < g->n_tensors && was_outer == NULL; t++)
        if (g->tensors[t].is_outer) {
            was_outer = pl_alloc_calloc(g->alloc, g->n_tensors, sizeof *was_outer);
            if (was_outer == NULL)
                return pl_graph_oom("validating a body");
        }
    for (size_t t = 0; was_outer != NULL && t < g->n_tensors; t++)
        was_outer[t] = g->tensors[t].is_outer;
    pl_status *st = pl_graph_validate_in(g, NULL, 0, was_outer);
    pl_free(was_outer);
    return st;
}

static pl_status *pl_graph_validate_in(pl_graph *g, const pl_scope *up, int depth,
                                       const bool *was_outer)
{
    pl_free(g->topo);
    pl_free(g->consumer_block);
    g->topo = NULL;
    g->consumer_block = NULL;
    g->valid = false;
    for (size_t t = 0; t < g->n_tensors; t++) {
        g->tensors[t].producer = PL_NID_NONE;
        g->tensors[t].consumers = NULL;
        g->tensors[t].n_consumers = 0;
        g->tensors[t].is_outer = false;
    }
    /* Producers: every tensor defined exactly once. */
    for (size_t i = 0; i < g->n_nodes; i++) {
        const pl_graph_node *n = &g->nodes[i];
        if (n->n_outputs == 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '%s' (%s) has no outputs", n->name, n->op);
        size_t named = 0;
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] == PL_TID_NONE)
                continue;
            named++;
            pl_graph_tensor *t = &g->tensors[n->outputs[k]];
            if (t->producer == (pl_nid)i)
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "node '%s' (%s) lists output '%s' twice",
                                        n->name, n->op, t->name);
            if (t->producer != PL_NID_NONE)
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "tensor '%s' is produced by both node '%s' (%s) and node "
                    "'%s' (%s)",
                    t->name, g->nodes[t->producer].name,
                    g->nodes[t->producer].op, n->name, n->op);
            if (t->is_input || t->data != NULL)
                return pl_status_create(
                    PL_CODE_INVALID_ARGUMENT,
                    "node '%s' (%s): output '%s' is already defined as a graph "
                    "%s",
                    n->name, n->op, t->name, t->is_input ? "input" : "constant");
            t->producer = (pl_nid)i;
        }
        if (named == 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '%s' (%s) has no named output",
                                    n->name, n->op);
    }
    /* Bodies, now that this graph's names are known; their captures. */
    for (size_t i = 0; i < g->n_nodes; i++) {
        bool has_body = false;
        for (size_t a = 0; a < g->nodes[i].n_attrs; a++)
            has_body = has_body || g->nodes[i].attrs[a].kind == PL_ATTR_GRAPH ||
                       g->nodes[i].attrs[a].kind == PL_ATTR_GRAPHS;
        if (has_body)
            PL_RETURN_IF_ERROR(pl_graph_link_bodies(g, (pl_nid)i, up, depth));
    }
    size_t total_uses = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] != PL_TID_NONE)
                total_uses++;
    /* Every input defined. */
    for (size_t i = 0; i < g->n_nodes; i++) {
        const pl_graph_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] == PL_TID_NONE)
                continue;
            pl_graph_tensor *t = &g->tensors[n->inputs[k]];
            if (t->producer != PL_NID_NONE || t->is_input || t->data != NULL)
                continue;
            if ((up != NULL && pl_scope_resolves(up, t->name)) ||
                (was_outer != NULL && was_outer[n->inputs[k]])) {
                t->is_outer = true;
                continue;
            }
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "node '%s' (%s): input '%s' is not "
                                    "defined by any node, input or constant%s",
                                    n->name, n->op, t->name,
                                    up ? " of this body or an enclosing graph" : "");
        }
    }
    for (size_t i = 0; i < g->n_outputs; i++) {
        pl_graph_tensor *t = &g->tensors[g->outputs[i]];
        if (t->producer != PL_NID_NONE || t->is_input || t->data != NULL)
            continue;
        if ((up != NULL && pl_scope_resolves(up, t->name)) ||
            (was_outer != NULL && was_outer[g->outputs[i]])) {
            t->is_outer = true;
            continue;
        }
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "graph output '%s' is not defined by any "
                                "node, input or constant%s",
                                t->name, up ? " of this body or an enclosing graph" : "");
    }
    for (size_t i = 0; i < g->n_inputs; i++) {
        const pl_graph_tensor *t = &g->tensors[g->inputs[i]];
        if (t->data != NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "graph input '%s' is also a constant; an "
                                    "input is given at run time",
                                    t->name);
    }
    /* Consumers, in one block. */
    size_t *counts = pl_alloc_calloc(g->alloc, g->n_tensors ? g->n_tensors : 1, sizeof *counts);
    g->consumer_block = pl_alloc_malloc(g->alloc, (total_uses ? total_uses : 1) *
                                  sizeof *g->consumer_block);
    uint32_t *indeg = pl_alloc_calloc(g->alloc, g->n_nodes ? g->n_nodes : 1, sizeof *indeg);
    pl_nid *queue = pl_alloc_malloc(g->alloc, (g->n_nodes ? g->n_nodes : 1) * sizeof *queue);
    if (!counts || !g->consumer_block || !indeg || !queue) {
        pl_free(counts);
        pl_free(indeg);
        pl_free(queue);
        pl_free(g->consumer_block);
        g->consumer_block = NULL;
        return pl_graph_oom("validating the graph");
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; k < g->nodes[i].n_inputs; k++)
            if (g->nodes[i].inputs[k] != PL_TID_NONE)
                counts[g->nodes[i].inputs[k]]++;
    size_t off = 0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        g->tensors[t].consumers = g->consumer_block + off;
        off += counts[t];
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const pl_graph_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] == PL_TID_NONE)
                continue;
            pl_graph_tensor *t = &g->tensors[n->inputs[k]];
            t->consumers[t->n_consumers++] = (pl_nid)i;
            if (t->producer != PL_NID_NONE)
                indeg[i]++;
        }
    }
    pl_free(counts);
    /* Kahn's algorithm; the queue becomes the order. Nodes start in their
     * insertion order, so a graph given in order keeps it. */
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (indeg[i] == 0)
            queue[tail++] = (pl_nid)i;
    while (head < tail) {
        const pl_graph_node *n = &g->nodes[queue[head++]];
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = &g->tensors[n->outputs[k]];
            for (size_t c = 0; c < t->n_consumers; c++)
                if (--indeg[t->consumers[c]] == 0)
                    queue[tail++] = t->consumers[c];
        }
    }
    if (tail < g->n_nodes) {
        pl_nid stuck = PL_NID_NONE;
        for (size_t i = 0; i < g->n_nodes && stuck == PL_NID_NONE; i++)
            if (indeg[i] > 0)
                stuck = (pl_nid)i;
        pl_status *st = pl_graph_cycle_error(g, indeg, stuck);
        pl_free(indeg);
        pl_free(queue);
        return st;
    }
    pl_free(indeg);
    g->topo = queue;
    g->valid = true;
    return NULL;
}

