/* optimize.c — graph rewrites that are exact, before partitioning.
 *
 * Exporters leave nodes that compute nothing: Identity on weights and conv
 * biases, Dropout in an inference graph, a Cast to the dtype the tensor
 * already has, a Reshape (Flatten, Squeeze, Unsqueeze, Expand) whose output
 * shape is its input's, a Resize to the size it has. Left in, they are worse than a wasted copy: a
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
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "optimize.h"
#include "status.h"
#include "strmap.h"

/* Adds every tensor name of every body under G's nodes to NAMES. */
bool pl_optimize_body_names(const pl_graph *g, pl_strmap *names)
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
                if (!pl_optimize_body_names(body, names))
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

/* Whether T is a constant f32 tensor of ones. */
static bool pl_opt_ones(const pl_graph_tensor *t)
{
    if (t->data == NULL || !PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || t->nbytes % 4 != 0)
        return false;
    for (size_t i = 0; i < t->nbytes / 4; i++) {
        float v;
        memcpy(&v, (const char *)t->data + i * 4, 4);
        if (v != 1.0f)
            return false;
    }
    return true;
}

/* Why Resize or Upsample N (output shape already its input's) is the
 * identity, or NULL: every coordinate mode but tf_crop_and_resize maps an
 * output index to the same input index at scale 1, where linear and cubic
 * weights are 1 on that sample and 0 elsewhere. The scale is 1 when the
 * sizes are given (scale = size / input, without keep_aspect_ratio_policy)
 * or the scales are constant ones; scales like 1.01 give the same size
 * (floor(32 * 1.01) = 32) but move every sample. SegFormer's decode head
 * resizes its first map to the size it has. */
static const char *pl_opt_resize_identity(const pl_graph *g, const pl_graph_node *n)
{
    const pl_attr *ctm = pl_graph_node_attr(n, "coordinate_transformation_mode");
    const pl_attr *kar = pl_graph_node_attr(n, "keep_aspect_ratio_policy");
    if ((ctm != NULL && (ctm->kind != PL_ATTR_STRING || strcmp(ctm->s, "tf_crop_and_resize") == 0)) ||
        (kar != NULL && (kar->kind != PL_ATTR_STRING || strcmp(kar->s, "stretch") != 0)))
        return NULL;
    bool upsample = strcmp(n->op, "Upsample") == 0;
    if (!upsample && n->n_inputs >= 4 && n->inputs[3] != PL_TID_NONE)
        return "Resize to the size it has";
    /* scales: Upsample's and opset 10 Resize's second input, else the third */
    size_t at = upsample || n->n_inputs == 2 ? 1 : 2;
    if (n->n_inputs > at && n->inputs[at] != PL_TID_NONE)
        return pl_opt_ones(pl_graph_get_tensor(g, n->inputs[at])) ? "scales of 1" : NULL;
    const pl_attr *sc = upsample ? pl_graph_node_attr(n, "scales") : NULL;
    if (sc == NULL || sc->kind != PL_ATTR_FLOATS)
        return NULL;
    for (size_t i = 0; i < sc->n; i++)
        if (sc->floats[i] != 1.0)
            return NULL;
    return "scales of 1";
}

/* Whether Slice N walks forward (no steps input, or constant steps all
 * positive): then an output of its input's shape is its input, every
 * element in order (a step above 1 leaves a dim's length only where it
 * is 1). tf2onnx writes a full strided_slice after Keras's Conv1D. */
static bool pl_opt_slice_forward(const pl_graph *g, const pl_graph_node *n)
{
    if (n->n_inputs < 5 || n->inputs[4] == PL_TID_NONE)
        return true;
    const pl_graph_tensor *st = pl_graph_get_tensor(g, n->inputs[4]);
    bool i64 = PL_DTYPE_EQ(st->dtype, PL_DTYPE_I64);
    if (st->data == NULL || (!i64 && !PL_DTYPE_EQ(st->dtype, PL_DTYPE_I32)))
        return false;
    size_t w = i64 ? 8 : 4;
    for (size_t k = 0; k + w <= st->nbytes; k += w) {
        int64_t v;
        if (i64) {
            memcpy(&v, (const char *)st->data + k, 8);
        } else {
            int32_t v32;
            memcpy(&v32, (const char *)st->data + k, 4);
            v = v32;
        }
        if (v <= 0)
            return false;
    }
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
        /* Inference unless training_mode is given and not a constant
         * false; in training mode a constant ratio of 0 drops nothing and
         * scales by 1 (torchvision's Swin exports its attention dropout
         * so). */
        if (n->n_inputs >= 3 && n->inputs[2] != PL_TID_NONE) {
            const pl_graph_tensor *tm = pl_graph_get_tensor(g, n->inputs[2]);
            if (tm->data == NULL || tm->nbytes < 1)
                return NULL;
            if (((const unsigned char *)tm->data)[0] != 0) {
                const pl_graph_tensor *r =
                    n->inputs[1] != PL_TID_NONE ? pl_graph_get_tensor(g, n->inputs[1]) : NULL;
                if (r == NULL || r->data == NULL || r->nbytes < 1)
                    return NULL;
                for (size_t b = 0; b < r->nbytes; b++)
                    if (((const unsigned char *)r->data)[b] != 0)
                        return NULL;
                return "Dropout of ratio 0";
            }
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
    if (strcmp(n->op, "Resize") == 0 || strcmp(n->op, "Upsample") == 0)
        return pl_opt_resize_identity(g, n);
    if (strcmp(n->op, "Slice") == 0 && pl_opt_slice_forward(g, n))
        return "a forward Slice of its input's whole shape";
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
    if (drop == NULL || alias == NULL || !pl_optimize_body_names(g, &body_names))
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

/* ---- If of a constant condition --------------------------------------------- */

/* Whether constant T (one element, any numeric or bool dtype) is nonzero,
 * as *OUT; false when T is not such a constant. */
static bool pl_opt_const_truth(const pl_graph_tensor *t, bool *out)
{
    size_t elems;
    if (t->data == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &elems) ||
        elems != 1 || t->nbytes == 0 || t->nbytes > 8)
        return false;
    bool nonzero = false;
    for (size_t i = 0; i < t->nbytes; i++)
        nonzero = nonzero || ((const unsigned char *)t->data)[i] != 0;
    /* -0.0 is false: only its sign bit is set */
    if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_F64)) {
        double v = 0;
        if (t->nbytes == 4) {
            float f;
            memcpy(&f, t->data, 4);
            v = f;
        } else {
            memcpy(&v, t->data, 8);
        }
        nonzero = v != 0;
    }
    *out = nonzero;
    return true;
}

pl_status *pl_graph_inline_ifs(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        bool truth = false;
        if (strcmp(n->op, "If") != 0 || n->domain[0] != '\0' || n->n_formal_inputs != 1 ||
            n->inputs[0] == PL_TID_NONE ||
            !pl_opt_const_truth(pl_graph_get_tensor(g, n->inputs[0]), &truth))
            continue;
        const pl_attr *a = pl_graph_node_attr(n, truth ? "then_branch" : "else_branch");
        if (a == NULL || a->kind != PL_ATTR_GRAPH || a->n != 1)
            continue;
        const pl_graph *body = a->graphs[0];
        pl_graph *next = NULL;
        pl_status *st = pl_graph_inline_branch(g, (pl_nid)i, body, &next);
        if (st == NULL)
            st = pl_graph_validate(next);
        if (st != NULL) {
            pl_graph_destroy(next);
            if (pl_status_code(st) == PL_CODE_OUT_OF_MEMORY)
                return st;
            /* left as it is, with the reason */
            bool noted = pl_rewrites_add(rewrites, "If '%s' kept: its branch could not be "
                                                   "inlined: %s", n->name, pl_status_message(st));
            pl_status_free(st);
            if (!noted)
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
            continue;
        }
        if (!pl_rewrites_add(rewrites, "If '%s' inlined: its condition is the constant %s, so "
                                       "the %zu node%s of its %s run in its place", n->name,
                             truth ? "true" : "false", pl_graph_node_count(body),
                             pl_graph_node_count(body) == 1 ? "" : "s",
                             truth ? "then_branch" : "else_branch")) {
            pl_graph_destroy(next);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        }
        *out_graph = next; /* one a call: NEXT borrows G's constants and bodies' */
        return NULL;
    }
    return NULL;
}

/* ---- Loop-invariant carried values --------------------------------------- */

/* *NEXT, the node OP NAME (a Loop or Scan) rewritten (ST: how that went),
 * validated; where either failed, *NEXT is NULL and the reason noted
 * after WHAT (the node stays as it was). Fails only when out of memory. */
static pl_status *pl_opt_loop_kept(pl_graph **next, const char *op, const char *name,
                                   const char *what, pl_status *st, pl_rewrites *rewrites)
{
    if (st == NULL)
        st = pl_graph_validate(*next);
    if (st == NULL)
        return NULL;
    pl_graph_destroy(*next);
    *next = NULL;
    if (pl_status_code(st) == PL_CODE_OUT_OF_MEMORY)
        return st;
    bool noted = pl_rewrites_add(rewrites, "%s '%s': %s: %s", op, name, what,
                                 pl_status_message(st));
    pl_status_free(st);
    return noted ? NULL
                 : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
}

/* pl_opt_loop_kept for the carried-value rewrites. */
static pl_status *pl_opt_loop_checked(pl_graph **next, const char *name, pl_status *st,
                                      pl_rewrites *rewrites)
{
    return pl_opt_loop_kept(next, "Loop", name, "carried values kept", st, rewrites);
}

/* Whether N is an ONNX Loop with at least one carried value. */
static bool pl_opt_loop_carries(const pl_graph_node *n)
{
    return strcmp(n->op, "Loop") == 0 && n->domain[0] == '\0' && n->n_formal_inputs > 2;
}

pl_status *pl_graph_hoist_loop_invariants(const pl_graph *g, pl_graph **out_graph,
                                          pl_rewrites *rewrites)
{
    *out_graph = NULL;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        if (!pl_opt_loop_carries(n))
            continue;
        size_t nc = n->n_formal_inputs - 2, count = 0;
        bool *hoist = pl_calloc(nc, sizeof *hoist);
        if (hoist == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        char names[640];
        size_t used = 0;
        names[0] = '\0';
        for (size_t k = 0; k < nc; k++) {
            hoist[k] = pl_graph_carried_hoistable(g, (pl_nid)i, k);
            if (!hoist[k])
                continue;
            const char *name = pl_graph_get_tensor(g, n->inputs[2 + k])->name;
            if (used < sizeof names - 1) {
                int w = snprintf(names + used, sizeof names - used, "%s'%s'", count ? ", " : "",
                                 name);
                used = w < 0 ? sizeof names : used + (size_t)w;
            }
            count++;
        }
        if (count == 0) {
            pl_free(hoist);
            continue;
        }
        pl_graph *next = NULL;
        pl_status *st = pl_graph_hoist_carried(g, (pl_nid)i, hoist, &next);
        pl_free(hoist);
        PL_RETURN_IF_ERROR(pl_opt_loop_checked(&next, n->name, st, rewrites));
        if (next == NULL)
            continue;
        if (!pl_rewrites_add(rewrites, "Loop '%s': %zu carried value%s its body passes through "
                                       "unchanged read from outside instead (%s%s): not copied "
                                       "each iteration, constant weights for the body",
                             n->name, count, count == 1 ? "" : "s", names,
                             used >= sizeof names - 1 ? "..." : "")) {
            pl_graph_destroy(next);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        }
        *out_graph = next; /* one a call, as pl_graph_inline_ifs */
        return NULL;
    }
    return NULL;
}

pl_status *pl_graph_hoist_loop_nodes(const pl_graph *g, pl_graph **out_graph,
                                     pl_rewrites *rewrites)
{
    *out_graph = NULL;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        const pl_attr *ba = pl_graph_node_attr(n, "body");
        if (strcmp(n->op, "Loop") != 0 || n->domain[0] != '\0' || ba == NULL ||
            ba->kind != PL_ATTR_GRAPH || ba->n != 1)
            continue;
        const pl_graph *body = ba->graphs[0];
        size_t nb = pl_graph_node_count(body);
        bool *mark = pl_calloc(nb ? nb : 1, sizeof *mark);
        if (mark == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        /* dead nodes first (what a hoisted carried value's chain left),
         * then the invariant ones */
        for (int pass = 0; pass < 2; pass++) {
            bool dead = pass == 0;
            size_t count = 0;
            pl_status *st = pl_graph_body_moves(g, (pl_nid)i, dead, mark, &count);
            if (st != NULL || count == 0) {
                if (st != NULL)
                    pl_free(mark);
                PL_RETURN_IF_ERROR(st);
                continue;
            }
            char names[640];
            size_t used = 0, listed = 0;
            names[0] = '\0';
            const pl_nid *topo = pl_graph_topo_order(body);
            for (size_t k = 0; topo != NULL && k < nb; k++) {
                const pl_graph_node *bn = pl_graph_get_node(body, topo[k]);
                if (!mark[topo[k]] || used >= sizeof names - 1)
                    continue;
                int w = snprintf(names + used, sizeof names - used, "%s%s '%s'",
                                 listed++ ? ", " : "", bn->op, bn->name);
                used = w < 0 ? sizeof names : used + (size_t)w;
            }
            pl_graph *next = NULL;
            st = pl_graph_move_body_nodes(g, (pl_nid)i, mark, dead, &next);
            pl_free(mark);
            PL_RETURN_IF_ERROR(pl_opt_loop_kept(&next, "Loop", n->name, "its body kept as it is",
                                                st, rewrites));
            if (next == NULL)
                return NULL; /* (noted) */
            if (!pl_rewrites_add(rewrites,
                                 dead ? "Loop '%s': %zu node%s computing nothing the body "
                                        "reads dropped (%s%s)"
                                      : "Loop '%s': %zu node%s reading only what every "
                                        "iteration shares computed once, before the Loop "
                                        "(%s%s)",
                                 n->name, count, count == 1 ? "" : "s", names,
                                 used >= sizeof names - 1 ? "..." : "")) {
                pl_graph_destroy(next);
                return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                        "out of memory optimising the graph");
            }
            *out_graph = next; /* one move a call, as pl_graph_inline_ifs */
            return NULL;
        }
        pl_free(mark);
    }
    return NULL;
}

/* ---- Dead carried values ------------------------------------------------------ */

pl_status *pl_graph_drop_dead_carried(const pl_graph *g, pl_graph **out_graph,
                                      pl_rewrites *rewrites)
{
    *out_graph = NULL;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        if (!pl_opt_loop_carries(n))
            continue;
        size_t nc = n->n_formal_inputs - 2, dead = 0;
        bool *live = pl_calloc(nc, sizeof *live), *node_live = NULL;
        if (live == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        pl_status *st = pl_graph_loop_live_carried(g, (pl_nid)i, live, &node_live);
        for (size_t k = 0; st == NULL && k < nc; k++)
            dead += !live[k];
        if (st != NULL || dead == 0 || node_live == NULL) {
            pl_free(live);
            pl_free(node_live);
            if (st != NULL)
                return st;
            continue;
        }
        const pl_graph *body = pl_graph_node_attr(n, "body")->graphs[0];
        size_t before = pl_graph_node_count(body), after = 0;
        for (size_t b = 0; b < before; b++)
            after += node_live[b];
        pl_graph *next = NULL;
        st = pl_graph_drop_carried(g, (pl_nid)i, live, node_live, &next);
        pl_free(live);
        pl_free(node_live);
        PL_RETURN_IF_ERROR(pl_opt_loop_checked(&next, n->name, st, rewrites));
        if (next == NULL)
            continue;
        if (!pl_rewrites_add(rewrites, "Loop '%s': %zu of %zu carried value%s dropped (nothing "
                                       "reads the final value, and neither the condition, the "
                                       "scan outputs nor the values kept depend on it); its body "
                                       "runs %zu of its %zu nodes",
                             n->name, dead, nc, nc == 1 ? "" : "s", after, before)) {
            pl_graph_destroy(next);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
        }
        *out_graph = next; /* one a call, as pl_graph_hoist_loop_invariants */
        return NULL;
    }
    return NULL;
}

/* ---- Products of a sequence's rows hoisted out of a Loop --------------------- */

/* The value of T, a constant of one integer element, as *OUT; false when T
 * is not such a constant. */
static bool pl_opt_const_int(const pl_graph_tensor *t, int64_t *out)
{
    size_t elems;
    if (t->data == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &elems) ||
        elems != 1 || t->dtype.code != PL_TYPE_INT || t->dtype.lanes != 1)
        return false;
    if (t->dtype.bits == 64 && t->nbytes == 8)
        memcpy(out, t->data, 8);
    else if (t->dtype.bits == 32 && t->nbytes == 4) {
        int32_t v;
        memcpy(&v, t->data, 4);
        *out = v;
    } else
        return false;
    return true;
}

/* Whether body tensor T counts a Loop's iterations from wherever it
 * starts: the iteration number (body input 0), or a carried value whose
 * next value is it plus a constant 1 (tf2onnx's `time` of a Keras RNN). */
static bool pl_opt_loop_counter(const pl_graph *body, pl_tid t)
{
    size_t ni = pl_graph_input_count(body), no = pl_graph_output_count(body);
    if (ni < 2 || t == PL_TID_NONE)
        return false;
    if (t == pl_graph_input(body, 0))
        return true;
    for (size_t k = 2; k < ni && k - 1 < no; k++) {
        if (pl_graph_input(body, k) != t)
            continue;
        const pl_graph_tensor *next = pl_graph_get_tensor(body, pl_graph_output(body, k - 1));
        if (next->producer == PL_NID_NONE)
            return false;
        const pl_graph_node *add = pl_graph_get_node(body, next->producer);
        if (strcmp(add->op, "Add") != 0 || add->domain[0] != '\0' || add->n_formal_inputs != 2)
            return false;
        pl_tid other = add->inputs[0] == t ? add->inputs[1]
                       : add->inputs[1] == t ? add->inputs[0]
                                             : PL_TID_NONE;
        int64_t v;
        return other != PL_TID_NONE && pl_opt_const_int(pl_graph_get_tensor(body, other), &v) &&
               v == 1;
    }
    return false;
}

/* Whether a node of G has a body: names a body reads from G are no edges. */
static bool pl_opt_has_bodies(const pl_graph *g)
{
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t k = 0; k < n->n_attrs; k++)
            if (n->attrs[k].kind == PL_ATTR_GRAPH || n->attrs[k].kind == PL_ATTR_GRAPHS)
                return true;
    }
    return false;
}

/* The most iterations Loop N of G runs, as *OUT, when a constant says:
 * its trip count, or the one of the counting Loop whose count it runs
 * (pl_opset_loop_count_split gives a loop with scan outputs and a
 * condition the trips a Loop of its own counted). */
static bool pl_opt_trip_bound(const pl_graph *g, const pl_graph_node *n, int64_t *out)
{
    pl_tid m = n->inputs[0];
    for (int hops = 0; hops < 2 && m != PL_TID_NONE; hops++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, m);
        if (pl_opt_const_int(t, out))
            return true;
        const pl_graph_node *p =
            t->producer != PL_NID_NONE ? pl_graph_get_node(g, t->producer) : NULL;
        if (p == NULL || strcmp(p->op, "Loop") != 0 || p->domain[0] != '\0' ||
            p->n_formal_inputs < 1 || p->n_outputs < 1 || p->outputs[p->n_outputs - 1] != m)
            return false;
        m = p->inputs[0];
    }
    return false;
}

/* Whether the product MM of BODY (the body of Loop N of G) can be hoisted:
 * a MatMul of the rows a Gather takes at the Loop's counter from a
 * non-constant float tensor X from outside, along an axis other than the
 * last, by a float matrix W from outside (the Gather's other readers
 * keep it: a GRU's three gates each multiply the step's row); then
 * *OUT_GATHER is that Gather. When a constant trip count says
 * the Loop visits fewer rows than X has, no: the product of all would
 * compute rows nothing reads. */
/* Whether MM is a product the row hoists take: a MatMul, or a Gemm as
 * PyTorch writes a Linear of a 2-D row (A as it is, alpha 1, beta 1: its C
 * then added to the row), with *OUT_TRANS_B its transB. */
static bool pl_opt_row_product(const pl_graph_node *mm, bool *out_trans_b)
{
    bool gemm = strcmp(mm->op, "Gemm") == 0;
    if ((!gemm && strcmp(mm->op, "MatMul") != 0) || mm->domain[0] != '\0' ||
        mm->n_formal_inputs < 2 || mm->n_formal_inputs > (size_t)(2 + gemm) || mm->n_outputs < 1 ||
        mm->outputs[0] == PL_TID_NONE || mm->inputs[0] == PL_TID_NONE ||
        mm->inputs[1] == PL_TID_NONE)
        return false;
    const pl_attr *ta = pl_graph_node_attr(mm, "transA");
    const pl_attr *al = pl_graph_node_attr(mm, "alpha");
    const pl_attr *be = pl_graph_node_attr(mm, "beta");
    if (gemm && ((ta != NULL && (ta->kind != PL_ATTR_INT || ta->i != 0)) ||
                 (al != NULL && (al->kind != PL_ATTR_FLOAT || al->f != 1.0)) ||
                 (be != NULL && (be->kind != PL_ATTR_FLOAT || be->f != 1.0))))
        return false;
    const pl_attr *tb = gemm ? pl_graph_node_attr(mm, "transB") : NULL;
    *out_trans_b = tb != NULL && tb->kind == PL_ATTR_INT && tb->i != 0;
    return true;
}

/* The tensor of G named X when the products of its rows along *AXIS (made
 * non-negative) by matrix W of G (its transpose when TRANS_B) are the
 * product of all of it: a float tensor of rank 2 or more, AXIS not its
 * last, W 2-D of its dtype and a width that fits; else NULL. */
static const pl_graph_tensor *pl_opt_row_operands(const pl_graph *g, const char *x_name,
                                                  const char *w_name, bool trans_b,
                                                  int64_t *axis)
{
    pl_tid xo = pl_graph_find_tensor(g, x_name), wo = pl_graph_find_tensor(g, w_name);
    if (xo == PL_TID_NONE || wo == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, xo), *w = pl_graph_get_tensor(g, wo);
    if (x->ndim >= 2 && *axis < 0)
        *axis += x->ndim;
    if (x->ndim < 2 || *axis < 0 || *axis > x->ndim - 2 || w->ndim != 2 || w->dims[0] <= 0 ||
        w->dims[1] <= 0 ||
        (x->dims[x->ndim - 1] >= 0 && x->dims[x->ndim - 1] != w->dims[trans_b ? 1 : 0]) ||
        (x->dtype.code != PL_TYPE_FLOAT && x->dtype.code != PL_TYPE_BFLOAT) ||
        x->dtype.lanes != 1 || !PL_DTYPE_EQ(x->dtype, w->dtype))
        return NULL;
    return x;
}

static bool pl_opt_product_hoistable(const pl_graph *g, const pl_graph_node *n,
                                     const pl_graph *body, const pl_graph_node *mm,
                                     pl_nid *out_gather)
{
    bool trans_b;
    if (!pl_opt_row_product(mm, &trans_b))
        return false;
    const pl_graph_tensor *gt = pl_graph_get_tensor(body, mm->inputs[0]);
    const pl_graph_tensor *wb = pl_graph_get_tensor(body, mm->inputs[1]);
    if (gt->producer == PL_NID_NONE || !wb->is_outer)
        return false;
    const pl_graph_node *ga = pl_graph_get_node(body, gt->producer);
    if (strcmp(ga->op, "Gather") != 0 || ga->domain[0] != '\0' || ga->n_formal_inputs != 2 ||
        ga->inputs[0] == PL_TID_NONE || !pl_opt_loop_counter(body, ga->inputs[1]))
        return false;
    const pl_graph_tensor *xb = pl_graph_get_tensor(body, ga->inputs[0]);
    const pl_attr *ax = pl_graph_node_attr(ga, "axis");
    int64_t axis = ax != NULL && ax->kind == PL_ATTR_INT ? ax->i : 0;
    const pl_graph_tensor *x =
        xb->is_outer ? pl_opt_row_operands(g, xb->name, wb->name, trans_b, &axis) : NULL;
    if (x == NULL || x->data != NULL)
        return false;
    int64_t trips;
    if (pl_opt_trip_bound(g, n, &trips) && (x->dims[axis] < 0 || trips < x->dims[axis]))
        return false;
    *out_gather = gt->producer;
    return true;
}

/* The version of the default domain G imports, or 0. */
static int64_t pl_opt_onnx_opset(const pl_graph *g)
{
    for (size_t i = 0; i < pl_graph_opset_count(g); i++) {
        const char *domain;
        int64_t version;
        pl_graph_opset_at(g, i, &domain, &version);
        if (domain[0] == '\0' || strcmp(domain, "ai.onnx") == 0)
            return version;
    }
    return 0;
}

/* Whether the product MM of BODY (the body of Scan N of G, opset 9 on)
 * reads the slice of a scan input along an axis other than its last, by
 * a float matrix W from outside: then *OUT_SCAN is that scan input's
 * index among the scan inputs and *OUT_AXIS its axis. A Scan visits
 * every slice, so the product of all computes nothing unread. */
static bool pl_opt_scan_hoistable(const pl_graph *g, const pl_graph_node *n,
                                  const pl_graph *body, const pl_graph_node *mm,
                                  size_t *out_scan, int64_t *out_axis)
{
    const pl_attr *ns = pl_graph_node_attr(n, "num_scan_inputs");
    bool trans_b;
    if (ns == NULL || ns->kind != PL_ATTR_INT || ns->i < 1 ||
        (size_t)ns->i > n->n_formal_inputs || !pl_opt_row_product(mm, &trans_b))
        return false;
    size_t m = (size_t)ns->i, first = n->n_formal_inputs - m;
    const pl_graph_tensor *wb = pl_graph_get_tensor(body, mm->inputs[1]);
    for (size_t j = 0; j < m && wb->is_outer; j++) {
        if (pl_graph_input(body, first + j) != mm->inputs[0] ||
            n->inputs[first + j] == PL_TID_NONE)
            continue;
        const pl_attr *axes = pl_graph_node_attr(n, "scan_input_axes");
        if (axes != NULL && (axes->kind != PL_ATTR_INTS || axes->n != m))
            return false;
        int64_t axis = axes != NULL ? axes->ints[j] : 0;
        if (pl_opt_row_operands(g, pl_graph_get_tensor(g, n->inputs[first + j])->name, wb->name,
                                trans_b, &axis) == NULL)
            return false;
        *out_scan = j;
        *out_axis = axis;
        return true;
    }
    return false;
}

pl_status *pl_graph_hoist_loop_products(const pl_graph *g, pl_graph **out_graph,
                                        pl_rewrites *rewrites)
{
    *out_graph = NULL;
    bool scans = pl_opt_onnx_opset(g) >= 9; /* Scan 8 has a batch axis and lengths */
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        const pl_attr *a = pl_graph_node_attr(n, "body");
        bool scan = strcmp(n->op, "Scan") == 0;
        if ((!scan && strcmp(n->op, "Loop") != 0) || (scan && !scans) || n->domain[0] != '\0' ||
            n->n_formal_inputs < (size_t)(2 - scan) || a == NULL || a->kind != PL_ATTR_GRAPH || a->n != 1)
            continue;
        const pl_graph *body = a->graphs[0];
        if (pl_graph_input_count(body) != n->n_formal_inputs || pl_opt_has_bodies(body))
            continue;
        for (size_t m = 0; m < pl_graph_node_count(body); m++) {
            const pl_graph_node *mm = pl_graph_get_node(body, (pl_nid)m);
            pl_nid ga = PL_NID_NONE;
            size_t sj = 0;
            int64_t axis = 0;
            if (scan ? !pl_opt_scan_hoistable(g, n, body, mm, &sj, &axis)
                     : !pl_opt_product_hoistable(g, n, body, mm, &ga))
                continue;
            const pl_graph_node *gn = scan ? NULL : pl_graph_get_node(body, ga);
            const char *xname =
                scan ? pl_graph_get_tensor(g, n->inputs[n->n_formal_inputs -
                                                         (size_t)pl_graph_node_attr(
                                                             n, "num_scan_inputs")->i + sj])
                           ->name
                     : pl_graph_get_tensor(body, gn->inputs[0])->name;
            const char *wname = pl_graph_get_tensor(body, mm->inputs[1])->name;
            char name[600];
            snprintf(name, sizeof name, "%s/%s/rows", n->name, mm->name);
            for (unsigned k = 2; pl_graph_find_tensor(g, name) != PL_TID_NONE ||
                                 pl_graph_find_tensor(body, name) != PL_TID_NONE;
                 k++)
                snprintf(name, sizeof name, "%s/%s/rows%u", n->name, mm->name, k);
            pl_graph *next = NULL;
            char what[300];
            snprintf(what, sizeof what, "%s '%s' kept in its body", mm->op, mm->name);
            pl_status *st =
                scan ? pl_graph_hoist_scanned_product(g, (pl_nid)i, (pl_nid)m, sj, axis, name,
                                                      &next)
                     : pl_graph_hoist_gathered_product(g, (pl_nid)i, ga, (pl_nid)m, name, &next);
            PL_RETURN_IF_ERROR(pl_opt_loop_kept(&next, n->op, n->name, what, st, rewrites));
            if (next == NULL)
                return NULL; /* noted; one attempt a call: the caller stops on no change */
            bool noted =
                scan ? pl_rewrites_add(rewrites,
                                       "Scan '%s': %s '%s' (of the slice of '%s' each "
                                       "iteration, by '%s') hoisted out of the body: '%s', the "
                                       "product of all slices, is made once before the Scan "
                                       "and scanned instead",
                                       n->name, mm->op, mm->name, xname, wname, name)
                     : pl_rewrites_add(rewrites,
                                       "Loop '%s': %s '%s' (the row of '%s' Gather '%s' takes "
                                       "each iteration, by '%s') hoisted out of the body: '%s', "
                                       "the product of all rows, is made once before the Loop "
                                       "and the Gather takes its row",
                                       n->name, mm->op, mm->name, xname, gn->name, wname, name);
            if (!noted) {
                pl_graph_destroy(next);
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
            }
            *out_graph = next; /* one a call, as pl_graph_hoist_loop_invariants */
            return NULL;
        }
    }
    return NULL;
}

/* ---- Sum as Adds ------------------------------------------------------------ */

/* Whether node N is a Sum this pass rewrites: default domain, one input or
 * more, every one present and of a float type. */
static bool pl_opt_sum_rewrites(const pl_graph *g, const pl_graph_node *n)
{
    if (strcmp(n->op, "Sum") != 0 || n->domain[0] != '\0' || n->n_formal_inputs == 0 ||
        n->n_outputs != 1)
        return false;
    for (size_t i = 0; i < n->n_formal_inputs; i++) {
        if (n->inputs[i] == PL_TID_NONE)
            return false;
        pl_dtype d = pl_graph_get_tensor(g, n->inputs[i])->dtype;
        if (d.lanes == 0 || (d.code != PL_TYPE_FLOAT && d.code != PL_TYPE_BFLOAT))
            return false;
    }
    return true;
}

pl_status *pl_graph_sum_to_adds(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t sums = 0;
    for (size_t i = 0; i < pl_graph_node_count(g); i++)
        sums += pl_opt_sum_rewrites(g, pl_graph_get_node(g, (pl_nid)i));
    if (sums == 0)
        return NULL;
    pl_graph *c = NULL;
    pl_status *st = pl_graph_copy(g, &c);
    for (size_t i = 0; st == NULL && i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        if (!pl_opt_sum_rewrites(g, n))
            continue;
        size_t count = n->n_formal_inputs;
        pl_tid acc = n->inputs[0];
        for (size_t k = 1; st == NULL && k + 1 < count; k++) {
            char node_name[300], out_name[300];
            snprintf(node_name, sizeof node_name, "%s/add%zu", n->name, k);
            snprintf(out_name, sizeof out_name, "%s/partial%zu", n->name, k);
            if (pl_graph_find_node(c, node_name) != PL_NID_NONE ||
                pl_graph_find_tensor(c, out_name) != PL_TID_NONE) {
                st = pl_status_create(PL_CODE_UNSUPPORTED, "Sum '%s': the names it would take "
                                                           "are taken", n->name);
                break;
            }
            const char *ins[2] = {pl_graph_get_tensor(c, acc)->name,
                                  pl_graph_get_tensor(c, n->inputs[k])->name};
            const char *outs[1] = {out_name};
            st = pl_graph_add_node(c, node_name, "Add", "", ins, 2, outs, 1, NULL);
            if (st == NULL)
                acc = pl_graph_find_tensor(c, out_name);
        }
        pl_tid last[2] = {acc, n->inputs[count - 1]};
        if (st == NULL)
            st = pl_graph_node_set_inputs(c, (pl_nid)i, count == 1 ? last + 1 : last,
                                          count == 1 ? 1 : 2);
        if (st == NULL)
            st = pl_graph_node_set_op(c, (pl_nid)i, "", count == 1 ? "Identity" : "Add");
        if (st == NULL && !pl_rewrites_add(rewrites, "Sum '%s' of %zu input%s became %s%s",
                                           n->name, count, count == 1 ? "" : "s",
                                           count == 1 ? "an Identity" : count == 2 ? "an Add"
                                                                                   : "Adds",
                                           count > 2 ? ", left to right" : ""))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    }
    if (st == NULL)
        st = pl_graph_validate(c);
    if (st != NULL) {
        pl_graph_destroy(c);
        return st;
    }
    *out_graph = c;
    return NULL;
}

/* ---- Pad folded into the Conv or AveragePool after it --------------------- */

/* The constant i64 vector tensor T as *OUT (at most 16 values): its length,
 * or -1 when T is not one. */
static int pl_opt_const_i64s(const pl_graph *g, pl_tid t, int64_t *out)
{
    const pl_graph_tensor *ti = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(g, t);
    if (ti == NULL || ti->data == NULL || !PL_DTYPE_EQ(ti->dtype, PL_DTYPE_I64) ||
        ti->ndim != 1 || ti->dims[0] < 0 || ti->dims[0] > 16 ||
        ti->nbytes != (size_t)ti->dims[0] * sizeof(int64_t))
        return -1;
    memcpy(out, ti->data, ti->nbytes);
    return (int)ti->dims[0];
}

/* Whether constant tensor T holds zeros only (bit patterns: +0). */
static bool pl_opt_all_zero(const pl_graph *g, pl_tid t)
{
    const pl_graph_tensor *ti = pl_graph_get_tensor(g, t);
    if (ti == NULL || ti->data == NULL)
        return false;
    for (size_t i = 0; i < ti->nbytes; i++)
        if (((const unsigned char *)ti->data)[i] != 0)
            return false;
    return true;
}

/* Whether window node W (a Conv or an AveragePool) can take a Pad of zeros
 * in front of it as its own padding, exactly; *OUT_COUNT_PAD is set when
 * the AveragePool must then count the padding in its averages.
 * - Conv: any explicit padding (zeros are what a Conv pads with);
 * - AveragePool: floor mode (in ceil mode a last window that runs past the
 *   padded input averages fewer elements, and runtimes differ on whether
 *   that count includes the padding), unit dilations, and either
 *   count_include_pad = 1 or no padding of its own (the padded zeros were
 *   counted: with count_include_pad = 1 they still are).
 * - MaxPool pads with -inf, not zeros: only where what is padded is never
 *   below zero (pl_opt_pad_max_ok), checked by the caller. */
static bool pl_opt_window_takes_pad(const pl_graph_node *w, bool *out_count_pad)
{
    *out_count_pad = false;
    bool avg = strcmp(w->op, "AveragePool") == 0, max = strcmp(w->op, "MaxPool") == 0;
    if ((!avg && !max && strcmp(w->op, "Conv") != 0) || w->domain[0] != '\0')
        return false;
    const pl_attr *ap = pl_graph_node_attr(w, "auto_pad");
    if (ap != NULL && (ap->kind != PL_ATTR_STRING || strcmp(ap->s, "NOTSET") != 0))
        return false;
    if (!avg && !max)
        return true;
    const pl_attr *ceil = pl_graph_node_attr(w, "ceil_mode");
    const pl_attr *cip = pl_graph_node_attr(w, "count_include_pad");
    const pl_attr *dil = pl_graph_node_attr(w, "dilations");
    const pl_attr *own = pl_graph_node_attr(w, "pads");
    if ((ceil != NULL && (ceil->kind != PL_ATTR_INT || ceil->i != 0)) ||
        (cip != NULL && cip->kind != PL_ATTR_INT))
        return false;
    for (size_t i = 0; dil != NULL && i < dil->n; i++)
        if (dil->kind != PL_ATTR_INTS || dil->ints[i] != 1)
            return false;
    if (max || (cip != NULL && cip->i != 0))
        return true;
    for (size_t i = 0; own != NULL && i < own->n; i++)
        if (own->kind != PL_ATTR_INTS || own->ints[i] != 0)
            return false;
    *out_count_pad = true;
    return true;
}

/* Whether MaxPool W, padded by PADS (N: begins then ends) with -inf, gives
 * what it gave over the zeros a Pad of X wrote there: X is never below zero
 * (its producer a Relu, a Sigmoid, or a Clip from a constant min of 0 or
 * more: Keras' ZeroPadding2D before MaxPooling2D after a ReLU, as in its
 * ResNets), no indices are asked for, and every window holds an element of
 * X (each pad below the kernel, floor mode, unit dilations), so each
 * maximum is the same either way. */
static bool pl_opt_pad_max_ok(const pl_graph *g, const pl_graph_node *w, pl_tid x,
                              const int64_t *pads, size_t n)
{
    const pl_graph_tensor *xt = pl_graph_get_tensor(g, x);
    if (xt == NULL || xt->producer == PL_NID_NONE || xt->dtype.code != PL_TYPE_FLOAT ||
        (w->n_outputs > 1 && w->outputs[1] != PL_TID_NONE))
        return false;
    const pl_graph_node *pn = pl_graph_get_node(g, xt->producer);
    bool nonneg = pn->domain[0] == '\0' &&
                  (strcmp(pn->op, "Relu") == 0 || strcmp(pn->op, "Sigmoid") == 0);
    if (!nonneg && pn->domain[0] == '\0' && strcmp(pn->op, "Clip") == 0) {
        const pl_attr *mn = pl_graph_node_attr(pn, "min");
        if (pn->n_formal_inputs >= 2 && pn->inputs[1] != PL_TID_NONE) {
            const pl_graph_tensor *m = pl_graph_get_tensor(g, pn->inputs[1]);
            nonneg = m != NULL && m->data != NULL && PL_DTYPE_EQ(m->dtype, PL_DTYPE_F32) &&
                     m->nbytes == 4 && *(const float *)m->data >= 0.0f;
        } else if (mn != NULL && mn->kind == PL_ATTR_FLOAT) {
            nonneg = mn->f >= 0.0f;
        }
    }
    const pl_attr *ks = pl_graph_node_attr(w, "kernel_shape");
    const pl_attr *ceil = pl_graph_node_attr(w, "ceil_mode");
    const pl_attr *dil = pl_graph_node_attr(w, "dilations");
    if (!nonneg || ks == NULL || ks->kind != PL_ATTR_INTS || 2 * ks->n != n ||
        (ceil != NULL && (ceil->kind != PL_ATTR_INT || ceil->i != 0)))
        return false;
    for (size_t i = 0; dil != NULL && i < dil->n; i++)
        if (dil->kind != PL_ATTR_INTS || dil->ints[i] != 1)
            return false;
    for (size_t i = 0; i < n; i++)
        if (pads[i] >= ks->ints[i % ks->n])
            return false;
    return true;
}

/* When node P is a Pad of zeros on the spatial axes only whose one reader
 * is a window node that can take it (pl_opt_window_takes_pad) as its data
 * input: that node's id and pads with P's added (*OUT_WIN, OUT_PADS of
 * 2 * spatial rank values), and whether it must count the padding. */
static bool pl_opt_pad_into_window(const pl_graph *g, const pl_graph_node *p, pl_nid *out_win,
                                   int64_t *out_pads, size_t *out_n, bool *out_count_pad)
{
    if (strcmp(p->op, "Pad") != 0 || p->domain[0] != '\0' || p->n_outputs < 1)
        return false;
    const pl_attr *mode = pl_graph_node_attr(p, "mode");
    if (mode != NULL && (mode->kind != PL_ATTR_STRING || strcmp(mode->s, "constant") != 0))
        return false;
    int64_t pads[16];
    int np;
    if (pl_graph_opset(g, "") < 11) {
        const pl_attr *a = pl_graph_node_attr(p, "pads"), *val = pl_graph_node_attr(p, "value");
        if (a == NULL || a->kind != PL_ATTR_INTS || a->n > 16 ||
            (val != NULL && (val->kind != PL_ATTR_FLOAT || val->f != 0.0 || signbit(val->f))))
            return false;
        np = (int)a->n;
        memcpy(pads, a->ints, a->n * sizeof *pads);
    } else {
        if (p->n_formal_inputs < 2 || (p->n_formal_inputs > 3 && p->inputs[3] != PL_TID_NONE) ||
            (p->n_formal_inputs > 2 && p->inputs[2] != PL_TID_NONE &&
             !pl_opt_all_zero(g, p->inputs[2])))
            return false;
        np = pl_opt_const_i64s(g, p->inputs[1], pads);
    }
    const pl_graph_tensor *x = pl_graph_get_tensor(g, p->inputs[0]);
    const pl_graph_tensor *y = pl_graph_get_tensor(g, p->outputs[0]);
    if (x == NULL || y == NULL || x->ndim < 3 || np != 2 * x->ndim || y->is_output ||
        y->n_consumers != 1)
        return false;
    int r = x->ndim, sr = r - 2;
    if (pads[0] != 0 || pads[1] != 0 || pads[r] != 0 || pads[r + 1] != 0)
        return false;
    for (int i = 0; i < 2 * r; i++)
        if (pads[i] < 0)
            return false;
    pl_nid c = y->consumers[0];
    const pl_graph_node *conv = pl_graph_get_node(g, c);
    if (conv == NULL || conv->n_inputs < 1 || conv->inputs[0] != p->outputs[0] ||
        !pl_opt_window_takes_pad(conv, out_count_pad))
        return false;
    for (size_t i = 1; i < conv->n_inputs; i++)
        if (conv->inputs[i] == p->outputs[0])
            return false;
    const pl_attr *cp = pl_graph_node_attr(conv, "pads");
    if (cp != NULL && (cp->kind != PL_ATTR_INTS || cp->n != (size_t)(2 * sr)))
        return false;
    for (int i = 0; i < sr; i++) {
        out_pads[i] = (cp ? cp->ints[i] : 0) + pads[2 + i];
        out_pads[sr + i] = (cp ? cp->ints[sr + i] : 0) + pads[r + 2 + i];
    }
    if (strcmp(conv->op, "MaxPool") == 0 &&
        !pl_opt_pad_max_ok(g, conv, p->inputs[0], out_pads, (size_t)(2 * sr)))
        return false;
    /* A pool's padding must stay below its kernel (a window of padding
     * alone has no defined average; the graph's validation refuses it):
     * a Pad of 1 before an AveragePool of [2, 1] padded by 0 stays a Pad
     * (difftest's pool family, seed 20188). */
    if (strcmp(conv->op, "AveragePool") == 0) {
        const pl_attr *ks = pl_graph_node_attr(conv, "kernel_shape");
        if (ks == NULL || ks->kind != PL_ATTR_INTS || ks->n != (size_t)sr)
            return false;
        for (int i = 0; i < 2 * sr; i++)
            if (out_pads[i] >= ks->ints[i % sr])
                return false;
    }
    *out_win = c;
    *out_n = (size_t)(2 * sr);
    return true;
}

/* Node N is a ReduceMean or ReduceMax, keeping dims, over exactly the
 * spatial axes (2 .. rank-1) of a float input of rank >= 4: the op of the
 * same result, GlobalAveragePool or GlobalMaxPool, else NULL. Exporters
 * write a squeeze-and-excitation mean as x.mean((2, 3), keepdim=True) or,
 * in NHWC, as a mean over axes 1 and 2 (NCHW once its Transposes cancel);
 * backends serve the global pool far better (oneDNN's reduction took 90 us
 * for 192x6x6 where its pooling takes a few). */
static const char *pl_opt_global_pool(const pl_graph *g, const pl_graph_node *n)
{
    bool mean = strcmp(n->op, "ReduceMean") == 0;
    if ((!mean && strcmp(n->op, "ReduceMax") != 0) || n->domain[0] != '\0' ||
        n->n_outputs != 1 || n->n_formal_inputs < 1 || n->inputs[0] == PL_TID_NONE)
        return NULL;
    const pl_graph_tensor *x = pl_graph_get_tensor(g, n->inputs[0]);
    /* Rank 4 and up: over the last axis of a rank-3 tensor the mean is a
     * LayerNorm's (a backend matches that pattern), not an image's. */
    if (x->ndim < 4 || x->ndim > PL_GRAPH_MAX_RANK || x->dtype.code != PL_TYPE_FLOAT)
        return NULL;
    const pl_attr *kd = pl_graph_node_attr(n, "keepdims");
    if (kd != NULL && (kd->kind != PL_ATTR_INT || kd->i == 0))
        return NULL;
    int64_t axes[PL_GRAPH_MAX_RANK];
    size_t na = 0;
    const pl_attr *a = pl_graph_node_attr(n, "axes");
    if (n->n_formal_inputs >= 2 && n->inputs[1] != PL_TID_NONE) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, n->inputs[1]);
        if (t->data == NULL || !PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) ||
            t->nbytes / 8 > PL_GRAPH_MAX_RANK)
            return NULL;
        na = t->nbytes / 8;
        memcpy(axes, t->data, t->nbytes);
    } else if (a != NULL && a->kind == PL_ATTR_INTS && a->n <= PL_GRAPH_MAX_RANK) {
        na = a->n;
        memcpy(axes, a->ints, na * sizeof *axes);
    }
    if (na != (size_t)(x->ndim - 2))
        return NULL;
    bool seen[PL_GRAPH_MAX_RANK] = {false};
    for (size_t i = 0; i < na; i++) {
        int64_t ax = axes[i] < 0 ? axes[i] + x->ndim : axes[i];
        if (ax < 2 || ax >= x->ndim || seen[ax])
            return NULL;
        seen[ax] = true;
    }
    return mean ? "GlobalAveragePool" : "GlobalMaxPool";
}

pl_status *pl_graph_fuse(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    bool *drop = pl_calloc(nn ? nn : 1, sizeof *drop);
    pl_tid *alias = pl_calloc(nt ? nt : 1, sizeof *alias);
    int64_t *new_pads = pl_calloc(nn ? nn : 1, 16 * sizeof *new_pads);
    size_t *n_pads = pl_calloc(nn ? nn : 1, sizeof *n_pads);
    bool *count_pad = pl_calloc(nn ? nn : 1, sizeof *count_pad);
    pl_strmap body_names = {.alloc = pl_alloc_current()};
    pl_status *st = NULL;
    if (drop == NULL || alias == NULL || new_pads == NULL || n_pads == NULL || count_pad == NULL ||
        !pl_optimize_body_names(g, &body_names))
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    for (size_t t = 0; st == NULL && t < nt; t++)
        alias[t] = (pl_tid)t;
    size_t dropped = 0;
    for (size_t i = 0; st == NULL && i < nn; i++) {
        const pl_graph_node *p = pl_graph_get_node(g, (pl_nid)i);
        pl_nid c;
        int64_t pads[16];
        size_t n;
        bool counted;
        uint32_t seen;
        if (!pl_opt_pad_into_window(g, p, &c, pads, &n, &counted) || n_pads[c] != 0 ||
            pl_strmap_get(&body_names, pl_graph_get_tensor(g, p->outputs[0])->name, &seen))
            continue;
        drop[i] = true;
        alias[p->outputs[0]] = p->inputs[0];
        memcpy(&new_pads[(size_t)c * 16], pads, n * sizeof *pads);
        n_pads[c] = n;
        count_pad[c] = counted;
        dropped++;
        const pl_graph_node *w = pl_graph_get_node(g, c);
        if (!pl_rewrites_add(rewrites, "Pad '%s' folded into %s '%s' (zeros on the spatial "
                                       "axes only): the %s pads them itself%s",
                             p->name, w->op, w->name, w->op,
                             counted ? " and counts them in its averages"
                             : strcmp(w->op, "MaxPool") == 0
                                 ? " (with -inf: its input is never below zero, and each "
                                   "window keeps one of its elements)"
                                 : ""))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    }
    /* Spatial means and maxima kept as dims: global pools (n_pads -1 and
     * -2 mark them). */
    size_t pools = 0;
    for (size_t i = 0; st == NULL && i < nn; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        const char *pool = drop[i] || n_pads[i] != 0 ? NULL : pl_opt_global_pool(g, n);
        if (pool == NULL)
            continue;
        n_pads[i] = (size_t)(pool[6] == 'A' ? -1 : -2);
        pools++;
        if (!pl_rewrites_add(rewrites, "%s '%s' over the spatial axes, dims kept, made %s",
                             n->op, n->name, pool))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    }
    pl_graph *copy = NULL;
    if (st == NULL && dropped + pools > 0)
        st = pl_graph_copy_rewritten(g, drop, alias, &copy);
    /* Node ids in the copy: G's, less the dropped nodes before them. */
    size_t gone = 0;
    for (size_t i = 0; st == NULL && copy != NULL && i < nn; i++) {
        if (drop[i]) {
            gone++;
            continue;
        }
        if (n_pads[i] == 0)
            continue;
        pl_nid id = (pl_nid)(i - gone);
        if (n_pads[i] == (size_t)-1 || n_pads[i] == (size_t)-2) {
            st = pl_graph_node_set_op(copy, id, "",
                                      n_pads[i] == (size_t)-1 ? "GlobalAveragePool"
                                                              : "GlobalMaxPool");
            pl_graph_node_remove_attr(copy, id, "axes");
            pl_graph_node_remove_attr(copy, id, "keepdims");
            pl_graph_node_remove_attr(copy, id, "noop_with_empty_axes");
            if (st == NULL)
                st = pl_graph_node_set_inputs(copy, id, pl_graph_get_node(copy, id)->inputs, 1);
            continue;
        }
        pl_graph_node_remove_attr(copy, id, "pads");
        st = pl_graph_attr_ints(copy, id, "pads", &new_pads[i * 16], n_pads[i]);
        if (st == NULL && count_pad[i]) {
            pl_graph_node_remove_attr(copy, id, "count_include_pad");
            st = pl_graph_attr_int(copy, id, "count_include_pad", 1);
        }
    }
    if (st == NULL && copy != NULL)
        st = pl_graph_validate(copy);
    if (st != NULL) {
        pl_graph_destroy(copy);
        copy = NULL;
    }
    *out_graph = copy;
    pl_strmap_free(&body_names);
    pl_free(drop);
    pl_free(alias);
    pl_free(new_pads);
    pl_free(n_pads);
    pl_free(count_pad);
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
