/* control.c — the core's step for If, Loop and Scan (control.h).
 *
 * At creation each body becomes a graph of its own (pl_graph_copy): its
 * inputs, then the outer-scope tensors it reads (its captures) as further
 * inputs, and as outputs only the body outputs some node computes; a body
 * output that merely names a body input, an outer tensor or a constant is
 * copied here instead. That graph is inferred and made into a session,
 * which partitions, plans and compiles it once on the runtime's backends.
 *
 * At run time the node's step (a kernel of the built-in "control" module,
 * run by the session like any host kernel) binds tensors and calls the
 * body's session inline for each branch, iteration or scan step: Loop's
 * carried values and Scan's states alternate between two buffers, Scan's
 * inputs are sliced along their scan axis (read in place when the slice is
 * contiguous, gathered otherwise) and its outputs written slice by slice,
 * and Loop's scan outputs fill the rows their planned shape holds.
 *
 * A Loop body whose shapes depend on its iteration number (a Slice of row
 * i, say) cannot be planned once: it is planned per iteration number
 * instead, the number bound as a constant so that inference knows it, on
 * first use, and kept (at most CTL_MAX_SPECIALISED of them). Carried
 * induction variables (a constant start stepped by a constant: tf2onnx's
 * `for i in tf.range(n)` counter, which its body slices row i with) are
 * bound with it, to their value at that iteration. */
#include "control.h"

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "graph_view.h"
#include "model.h"
#include "opset.h"
#include "status.h"

/* Most iteration numbers a Loop body is planned for one by one. */
#define CTL_MAX_SPECIALISED 4096

typedef enum ctl_from {
    CTL_FROM_SESSION, /* computed by the body's session */
    CTL_FROM_INPUT,   /* a body input, unchanged */
    CTL_FROM_CAPTURE, /* an outer-scope tensor, unchanged */
    CTL_FROM_CONST    /* a constant of the body */
} ctl_from;

typedef struct ctl_out {
    ctl_from from;
    size_t index;      /* session output, body input or capture */
    const void *data;  /* CTL_FROM_CONST, and its type */
    pl_dtype dtype;
    int32_t ndim;
    const int64_t *dims;
    size_t bytes;
} ctl_out;

/* One body made ready to run. */
typedef struct ctl_body {
    pl_session *session;  /* NULL when no output is computed */
    size_t n_formal;      /* the body's own inputs */
    size_t n_caps;        /* captures: session inputs after the formal ones */
    size_t *cap_of;       /* per capture: its index among the node's captures */
    size_t n_out;
    ctl_out *outs;
    size_t n_sess_out;
    bool fixed_iter;      /* input 0 (Loop's iteration number) is a constant */
    /* per formal input: a constant of the body's session (the iteration
     * number, an induction variable: pl_control's ind), not passed */
    bool *fixed;
    /* If: why this branch could not be planned, or NULL. The other branch
     * was: this one is an error only when a run takes it (a branch for
     * other shapes, say another sample rate's). */
    char *unplanned;
} ctl_body;

typedef enum ctl_kind { CTL_IF, CTL_LOOP, CTL_SCAN } ctl_kind;

struct pl_control {
    const pl_graph *g;
    pl_nid node;
    ctl_kind kind;
    int64_t version;
    char label[256];      /* "node 'x' (Loop)" */
    ctl_body bodies[2];   /* If: then, else; Loop and Scan: body */
    size_t n_bodies;
    /* Loop bodies planned per iteration number (see the file comment). */
    pl_runtime *rt;
    bool by_iter;
    /* Loop: per carried value, whether it is an induction variable (a
     * constant start IND_C0 stepped by a constant IND_D every iteration,
     * tf2onnx's range counters), bound with the iteration number */
    bool *ind;
    int64_t *ind_c0, *ind_d;
    size_t n_ind;
    pthread_mutex_t mu;
    bool mu_ready;
    ctl_body **spec;      /* per iteration number, NULL until first used */
    size_t n_spec;
    /* Run to know its outputs (pl_control_create_dynamic): bodies made on
     * first use, a Loop's per shapes of its formal inputs */
    bool dynamic;
    /* pl_control_body_open: bodies are typed and looked at, not made */
    bool probe, probe_open;
    struct ctl_dyn_body *dyn;
    size_t n_dyn;
    /* Scan */
    size_t n_state, n_scan_in, n_scan_out;
    int64_t *in_axis, *out_axis;
    bool *in_rev, *out_rev;
};

static const pl_graph *ctl_attr_body(const pl_graph_node *n, const char *name);

static pl_status *ctl_oom(const pl_control *c)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "%s: out of memory", c->label);
}

static char *ctl_ptr(const pl_tensor *t)
{
    return (char *)t->data + t->byte_offset;
}

static bool ctl_tensor_bytes(const pl_tensor *t, size_t *out)
{
    size_t n;
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL) ||
        !pl_dims_elements(t->shape, t->ndim, &n))
        return false;
    return pl_size_mul(n, pl_dtype_size(t->dtype), out);
}

/* ---- bodies ----------------------------------------------------------------- */

static void ctl_body_clear(ctl_body *b)
{
    pl_session_destroy(b->session);
    pl_free(b->cap_of);
    pl_free(b->outs);
    pl_free(b->unplanned);
    pl_free(b->fixed);
    memset(b, 0, sizeof *b);
}

/* The index of the capture of node N (of G) named NAME. */
static bool ctl_capture_index(const pl_graph *g, const pl_graph_node *n, const char *name,
                              size_t *out)
{
    for (size_t k = n->n_formal_inputs; k < n->n_inputs; k++)
        if (strcmp(pl_graph_get_tensor(g, n->inputs[k])->name, name) == 0) {
            *out = k - n->n_formal_inputs;
            return true;
        }
    return false;
}

/* Decides where each output of BODY comes from and lists the outputs the
 * copy C computes. */
static pl_status *ctl_body_outputs(pl_control *c, const char *attr, const pl_graph *body,
                                   pl_graph *copy, ctl_body *b, bool dynamic)
{
    b->n_out = pl_graph_output_count(body);
    b->outs = pl_calloc(b->n_out ? b->n_out : 1, sizeof *b->outs);
    if (b->outs == NULL)
        return ctl_oom(c);
    pl_graph_clear_outputs(copy);
    for (size_t i = 0; i < b->n_out; i++) {
        pl_tid t = pl_graph_output(body, i);
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, t);
        ctl_out *o = &b->outs[i];
        if (!pl_graph_tensor_bytes(bt, &o->bytes) && !dynamic) {
            char dims[160];
            return pl_status_create(PL_CODE_UNSUPPORTED,
                                    "%s: %s: output %zu ('%s') is %s%s; its shape must be "
                                    "fully known to run the model (data-dependent shapes "
                                    "are not supported)",
                                    c->label, attr, i, bt->name, pl_dtype_name(bt->dtype),
                                    pl_dims_format(bt->dims, bt->ndim, dims, sizeof dims));
        }
        if (bt->producer != PL_NID_NONE) {
            o->from = CTL_FROM_SESSION;
            bool seen = false;
            for (size_t k = 0; k < i && !seen; k++)
                if (b->outs[k].from == CTL_FROM_SESSION && pl_graph_output(body, k) == t) {
                    o->index = b->outs[k].index;
                    seen = true;
                }
            if (!seen) {
                PL_RETURN_IF_ERROR(pl_graph_add_output(copy, t));
                o->index = b->n_sess_out++;
            }
        } else if (bt->is_input) {
            o->from = CTL_FROM_INPUT;
            for (size_t k = 0; k < pl_graph_input_count(body); k++)
                if (pl_graph_input(body, k) == t)
                    o->index = k;
        } else if (bt->data != NULL) {
            o->from = CTL_FROM_CONST;
            o->data = bt->data;
            o->dtype = bt->dtype;
            o->ndim = bt->ndim;
            o->dims = bt->dims;
        } else {
            o->from = CTL_FROM_CAPTURE;
            const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
            size_t k;
            if (!ctl_capture_index(c->g, n, bt->name, &k))
                return pl_status_create(PL_CODE_INTERNAL, "%s: %s: output '%s' is no capture",
                                        c->label, attr, bt->name);
            for (size_t j = 0; j < b->n_caps; j++)
                if (b->cap_of[j] == k)
                    o->index = j;
        }
    }
    return NULL;
}

/* Whether typed graph G leaves a tensor some node reads or writes with a
 * shape not known, or holds a control node whose bodies do
 * (pl_control_body_open). */
static bool ctl_graph_open(pl_runtime *rt, const pl_graph *g)
{
    for (pl_nid i = 0; i < (pl_nid)pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, i);
        for (size_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
            pl_tid t = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
            size_t bytes;
            if (t != PL_TID_NONE && !pl_graph_tensor_bytes(pl_graph_get_tensor(g, t), &bytes))
                return true;
        }
        if (n->domain[0] == '\0' && (strcmp(n->op, "If") == 0 || strcmp(n->op, "Loop") == 0) &&
            pl_control_body_open(rt, g, i))
            return true;
    }
    return false;
}

/* The copy of BODY as a graph of its own, made into a session (see the
 * file comment). DYN (a node run to know its outputs, pl_control_create_dynamic):
 * the body's formal inputs take these tensors' shapes, and its session may
 * be staged (shapes inside it may depend on data). */
static pl_status *ctl_body_make(pl_runtime *rt, pl_control *c, const char *attr,
                                const pl_graph *body, ctl_body *b, const int64_t *iter,
                                const pl_tensor *dyn)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    pl_graph *copy = NULL;
    PL_RETURN_IF_ERROR(pl_graph_copy(body, &copy));
    b->n_formal = pl_graph_input_count(body);
    for (size_t k = 0; dyn != NULL && k < b->n_formal; k++) {
        pl_tid t = pl_graph_input(copy, k);
        pl_status *tst = pl_graph_set_type(copy, t, pl_graph_get_tensor(copy, t)->dtype,
                                           dyn[k].ndim, dyn[k].shape, NULL);
        if (tst != NULL) {
            pl_graph_destroy(copy);
            return pl_status_wrap(tst, "%s: %s: ", c->label, attr);
        }
    }
    if (iter != NULL && b->n_formal > 0) {
        b->fixed = pl_calloc(b->n_formal, sizeof *b->fixed);
        pl_tid *ids = pl_calloc(b->n_formal, sizeof *ids);
        pl_status *cst = b->fixed && ids ? NULL : ctl_oom(c);
        for (size_t k = 0; cst == NULL && k < b->n_formal; k++) {
            ids[k] = pl_graph_input(copy, k);
            b->fixed[k] = k == 0 || (k >= 2 && k - 2 < c->n_ind && c->ind[k - 2]);
        }
        for (size_t k = 0; cst == NULL && k < b->n_formal; k++) {
            if (!b->fixed[k])
                continue;
            pl_graph_drop_input(copy, ids[k]);
            int64_t v = k == 0 ? *iter : c->ind_c0[k - 2] + *iter * c->ind_d[k - 2];
            const pl_graph_tensor *bt = pl_graph_get_tensor(copy, ids[k]);
            if (k > 0 && PL_DTYPE_EQ(bt->dtype, PL_DTYPE_I32)) {
                int32_t v32 = (int32_t)v;
                cst = pl_graph_set_constant(copy, ids[k], &v32, sizeof v32);
            } else {
                cst = pl_graph_set_constant(copy, ids[k], &v, sizeof v);
            }
        }
        pl_free(ids);
        if (cst != NULL) {
            pl_graph_destroy(copy);
            return pl_status_wrap(cst, "%s: %s: ", c->label, attr);
        }
        b->fixed_iter = true;
    }
    size_t nt = pl_graph_tensor_count(body);
    b->cap_of = pl_calloc(nt ? nt : 1, sizeof *b->cap_of);
    pl_status *st = b->cap_of ? NULL : ctl_oom(c);
    for (size_t t = 0; st == NULL && t < nt; t++) {
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, (pl_tid)t);
        /* (an enclosing graph's constant that inference lent the body,
         * pl_graph_set_outer_constant: a constant of the copy too) */
        if (!bt->is_outer || bt->data != NULL)
            continue;
        /* A constant of the enclosing graph (a layer's weights, which
         * exporters keep outside the branches) is one of the body's
         * session too, not a capture it is handed each run: a backend that
         * needs constant weights (onednn's Conv and Gemm) takes the
         * body's layers, and folding sees them. Borrowed: the graph
         * outlives its sessions. */
        pl_tid og = pl_graph_find_tensor(c->g, bt->name);
        const pl_graph_tensor *ogt = og != PL_TID_NONE ? pl_graph_get_tensor(c->g, og) : NULL;
        if (ogt != NULL && ogt->data != NULL) {
            st = pl_graph_set_type(copy, (pl_tid)t, ogt->dtype, ogt->ndim, ogt->dims, NULL);
            if (st == NULL)
                st = pl_graph_set_constant_ref(copy, (pl_tid)t, ogt->data, ogt->nbytes);
            continue;
        }
        size_t k;
        if (!ctl_capture_index(c->g, n, bt->name, &k)) {
            st = pl_status_create(PL_CODE_INTERNAL, "%s: %s reads '%s', which the node does "
                                                    "not capture",
                                  c->label, attr, bt->name);
            break;
        }
        const pl_graph_tensor *outer =
            pl_graph_get_tensor(c->g, n->inputs[n->n_formal_inputs + k]);
        b->cap_of[b->n_caps++] = k;
        st = pl_graph_set_type(copy, (pl_tid)t, outer->dtype, outer->ndim, outer->dims, NULL);
        if (st == NULL)
            st = pl_graph_add_input(copy, (pl_tid)t);
    }
    if (st == NULL)
        st = ctl_body_outputs(c, attr, body, copy, b, dyn != NULL || c->dynamic || c->probe);
    if (st == NULL)
        st = pl_runtime_type_graph(rt, copy);
    if (st == NULL && c->probe) {
        c->probe_open |= ctl_graph_open(rt, copy);
        pl_graph_destroy(copy);
        return NULL;
    }
    if (st != NULL || b->n_sess_out == 0) {
        pl_graph_destroy(copy);
        return pl_status_wrap(st, "%s: %s: ", c->label, attr);
    }
    /* The body's session allocates, and runs, through the runtime's
     * allocator like the model's own. */
    pl_model *m = NULL;
    st = pl_model_of_graph(rt, copy, pl_strdupf("%s: %s", c->label, attr), &m);
    if (st != NULL)
        return st;
    /* Shapes are known here: Shapes fold, an If on them inlines, constant
     * chains fold, as in a model (silero_vad's branches hold Ifs on
     * shapes, and ran op by op on cpu) */
    st = pl_model_optimize(m);
    if (st != NULL) {
        pl_model_release(m);
        return st;
    }
    m->inline_run = dyn == NULL && !c->dynamic;
    m->part = true;
    st = pl_session_create(m, NULL, &b->session);
    pl_model_release(m);
    return st;
}

/* Runs body B: FORMAL its inputs, the node's tensors IN (whose captures
 * follow its NF formal inputs), OUTS its outputs (buffers of their
 * sizes). */
static pl_status *ctl_body_run(const pl_control *c, const ctl_body *b, const pl_tensor *formal,
                               const pl_tensor *in, size_t nf, pl_tensor *outs, int worker)
{
    pl_tensor sin_inline[16], sout_inline[16];
    size_t n_sin = b->n_formal + b->n_caps;
    pl_tensor *sin = n_sin <= 16 ? sin_inline : pl_calloc(n_sin, sizeof *sin);
    pl_tensor *sout = b->n_sess_out <= 16 ? sout_inline
                                          : pl_calloc(b->n_sess_out, sizeof *sout);
    pl_status *st = NULL;
    if (sin == NULL || sout == NULL)
        st = ctl_oom(c);
    if (st == NULL && b->session != NULL) {
        size_t ns = 0;
        for (size_t k = 0; k < b->n_formal; k++)
            if (b->fixed == NULL || !b->fixed[k])
                sin[ns++] = formal[k];
        for (size_t k = 0; k < b->n_caps; k++)
            sin[ns++] = in[nf + b->cap_of[k]];
        for (size_t i = 0; i < b->n_out; i++)
            if (b->outs[i].from == CTL_FROM_SESSION)
                sout[b->outs[i].index] = outs[i];
        st = pl_session_run_inline(b->session, sin, sout, worker);
    }
    for (size_t i = 0; st == NULL && i < b->n_out; i++) {
        const ctl_out *o = &b->outs[i];
        const void *src = NULL;
        switch (o->from) {
        case CTL_FROM_SESSION: src = ctl_ptr(&sout[o->index]); break;
        case CTL_FROM_INPUT: src = ctl_ptr(&formal[o->index]); break;
        case CTL_FROM_CAPTURE: src = ctl_ptr(&in[nf + b->cap_of[o->index]]); break;
        case CTL_FROM_CONST: src = o->data; break;
        }
        char *dst = ctl_ptr(&outs[i]);
        if (o->bytes > 0 && src != dst)
            memmove(dst, src, o->bytes);
    }
    if (sin != sin_inline)
        pl_free(sin);
    if (sout != sout_inline)
        pl_free(sout);
    return st;
}

/* ---- If -------------------------------------------------------------------- */

static pl_status *ctl_if_run(pl_control *c, const pl_tensor *in, pl_tensor *out, size_t n_out,
                             int worker)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    bool cond = *(const uint8_t *)ctl_ptr(&in[0]) != 0;
    const ctl_body *b = &c->bodies[cond ? 0 : 1];
    if (b->unplanned != NULL)
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: the condition took %s, which could "
                                                     "not be planned: %s",
                                c->label, cond ? "then_branch" : "else_branch", b->unplanned);
    for (size_t i = 0; i < n_out && i < b->n_out; i++) {
        size_t bytes;
        if (!ctl_tensor_bytes(&out[i], &bytes) || bytes != b->outs[i].bytes)
            return pl_status_create(PL_CODE_INTERNAL,
                                    "%s: %s gives output %zu in %zu bytes, the node's holds "
                                    "another size",
                                    c->label, cond ? "then_branch" : "else_branch", i,
                                    b->outs[i].bytes);
    }
    return pl_status_wrap(ctl_body_run(c, b, NULL, in, n->n_formal_inputs, out, worker),
                          "%s: %s: ", c->label, cond ? "then_branch" : "else_branch");
}

/* ---- Loop ------------------------------------------------------------------ */

/* The body planned for iteration IT (see the file comment). */
static pl_status *ctl_spec(pl_control *c, int64_t it, const ctl_body **out)
{
    *out = NULL;
    if (it < 0 || it >= CTL_MAX_SPECIALISED)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "%s: its body's shapes depend on the iteration number, so it "
                                "is planned per iteration; more than %d iterations are not "
                                "supported",
                                c->label, CTL_MAX_SPECIALISED);
    pl_status *st = NULL;
    pthread_mutex_lock(&c->mu);
    if ((size_t)it >= c->n_spec) {
        size_t n = (size_t)it + 1 > 2 * c->n_spec ? (size_t)it + 1 : 2 * c->n_spec;
        ctl_body **grown = pl_realloc(c->spec, n * sizeof *grown);
        if (grown == NULL) {
            st = ctl_oom(c);
        } else {
            memset(grown + c->n_spec, 0, (n - c->n_spec) * sizeof *grown);
            c->spec = grown;
            c->n_spec = n;
        }
    }
    if (st == NULL && c->spec[it] == NULL) {
        ctl_body *b = pl_calloc(1, sizeof *b);
        const pl_graph *body = pl_graph_node_attr(pl_graph_get_node(c->g, c->node), "body")->graphs[0];
        st = b ? ctl_body_make(c->rt, c, "body", body, b, &it, NULL) : ctl_oom(c);
        if (st == NULL) {
            c->spec[it] = b;
        } else if (b != NULL) {
            ctl_body_clear(b);
            pl_free(b);
        }
    }
    if (st == NULL)
        *out = c->spec[it];
    pthread_mutex_unlock(&c->mu);
    return st;
}

static pl_status *ctl_loop_run(pl_control *c, const pl_tensor *in, pl_tensor *out, size_t n_out,
                               int worker)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    /* Iteration 0's body, through ctl_spec and its lock: another run may
     * be growing the list of bodies (a realloc) at this moment
     * (ThreadSanitizer caught the unlocked read). */
    const ctl_body *b = &c->bodies[0];
    if (c->by_iter)
        PL_RETURN_IF_ERROR(ctl_spec(c, 0, &b));
    size_t nf = n->n_formal_inputs, n_car = nf - 2, n_scan = n_out - n_car;
    int64_t trips = in[0].data != NULL ? *(const int64_t *)ctl_ptr(&in[0]) : INT64_MAX;
    bool cond = in[1].data != NULL ? *(const uint8_t *)ctl_ptr(&in[1]) != 0 : true;
    /* Formal inputs and outputs of one iteration, and two buffers per
     * carried value (the one read and the one written). */
    size_t n_t = 2 + n_car + b->n_out;
    pl_tensor *t = pl_calloc(n_t, sizeof *t);
    char **buf = pl_calloc(2 * (n_car ? n_car : 1), sizeof *buf);
    int64_t *rows = pl_calloc(n_scan ? n_scan : 1, sizeof *rows);
    size_t *row_bytes = pl_calloc(n_scan ? n_scan : 1, sizeof *row_bytes);
    pl_status *st = t && buf && rows && row_bytes ? NULL : ctl_oom(c);
    for (size_t j = 0; st == NULL && j < n_car; j++)
        for (int h = 0; h < 2 && st == NULL; h++)
            if ((buf[2 * j + h] = pl_malloc(b->outs[1 + j].bytes ? b->outs[1 + j].bytes : 1)) ==
                NULL)
                st = ctl_oom(c);
    for (size_t k = 0; st == NULL && k < n_scan; k++) {
        const pl_tensor *o = &out[n_car + k];
        rows[k] = o->ndim >= 1 ? o->shape[0] : 0;
        row_bytes[k] = b->outs[1 + n_car + k].bytes;
        size_t total, want;
        /* The planned output must hold its rows exactly (a declared shape
         * could disagree with the body's). */
        if (!ctl_tensor_bytes(o, &total) || !pl_size_mul((size_t)rows[k], row_bytes[k], &want) ||
            total != want)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "%s: scan output %zu holds %zu bytes, not %lld rows of the "
                                  "%zu bytes the body gives",
                                  c->label, k, total, (long long)rows[k], row_bytes[k]);
    }
    for (size_t j = 0; st == NULL && j < n_car; j++) {
        size_t total;
        if (!ctl_tensor_bytes(&out[j], &total) || total != b->outs[1 + j].bytes)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "%s: carried value %zu holds %zu bytes, the body gives %zu",
                                  c->label, j, total, b->outs[1 + j].bytes);
    }
    int64_t it = 0;
    uint8_t cond_out = 0;
    pl_tensor *fin = t, *bout = t + 2 + n_car;
    if (st == NULL) {
        fin[0] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = &it,
                             .dtype = PL_DTYPE_I64, .ndim = 0};
        fin[1] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = &cond,
                             .dtype = PL_DTYPE_BOOL, .ndim = 0};
        for (size_t j = 0; j < n_car; j++)
            fin[2 + j] = in[2 + j];
        bout[0] = fin[1];
        bout[0].data = &cond_out;
    }
    /* the bool cond as the body sees it: one byte */
    uint8_t cond_byte = cond;
    if (st == NULL)
        fin[1].data = &cond_byte;
    int flip = 0;
    while (st == NULL && it < trips && cond_byte) {
        for (size_t j = 0; j < n_car; j++) {
            bout[1 + j] = in[2 + j];
            bout[1 + j].data = buf[2 * j + flip];
            bout[1 + j].byte_offset = 0;
        }
        for (size_t k = 0; k < n_scan; k++) {
            if (it >= rows[k]) {
                st = pl_status_create(PL_CODE_UNSUPPORTED,
                                      "%s: runs more than the %lld iterations its scan output "
                                      "%zu was planned for (its trip count must be known "
                                      "when the model loads)",
                                      c->label, (long long)rows[k], k);
                break;
            }
            bout[1 + n_car + k] = out[n_car + k];
            bout[1 + n_car + k].data = ctl_ptr(&out[n_car + k]) + (size_t)it * row_bytes[k];
            bout[1 + n_car + k].byte_offset = 0;
        }
        if (st != NULL)
            break;
        const ctl_body *bi = b;
        if (c->by_iter) {
            st = ctl_spec(c, it, &bi);
            for (size_t o = 0; st == NULL && o < bi->n_out; o++)
                if (bi->outs[o].bytes != b->outs[o].bytes)
                    st = pl_status_create(PL_CODE_UNSUPPORTED,
                                          "%s: body output %zu has %zu bytes at iteration %lld "
                                          "and %zu at iteration 0; its shape must not change",
                                          c->label, o, bi->outs[o].bytes, (long long)it,
                                          b->outs[o].bytes);
            if (st != NULL)
                break;
        }
        st = ctl_body_run(c, bi, fin, in, nf, bout, worker);
        if (st != NULL) {
            st = pl_status_wrap(st, "%s: body, iteration %lld: ", c->label, (long long)it);
            break;
        }
        for (size_t j = 0; j < n_car; j++) {
            fin[2 + j].data = buf[2 * j + flip];
            fin[2 + j].byte_offset = 0;
        }
        flip ^= 1;
        cond_byte = cond_out != 0;
        it++;
    }
    for (size_t k = 0; st == NULL && k < n_scan; k++)
        if (it != rows[k])
            st = pl_status_create(PL_CODE_UNSUPPORTED,
                                  "%s: stopped after %lld iterations, but its scan output %zu "
                                  "was planned for %lld (its trip count must be known when the "
                                  "model loads)",
                                  c->label, (long long)it, k, (long long)rows[k]);
    for (size_t j = 0; st == NULL && j < n_car; j++)
        memmove(ctl_ptr(&out[j]), ctl_ptr(&fin[2 + j]), b->outs[1 + j].bytes);
    for (size_t j = 0; buf && j < 2 * n_car; j++)
        pl_free(buf[j]);
    pl_free(buf);
    pl_free(t);
    pl_free(rows);
    pl_free(row_bytes);
    return st;
}

/* ---- Scan ------------------------------------------------------------------ */

/* A tensor's bytes as a scan sees them: OUTER blocks of LEN slices of INNER
 * bytes along the scan axis. */
typedef struct ctl_axis {
    char *data;
    size_t outer, len, inner;
} ctl_axis;

static ctl_axis ctl_axis_of(char *data, int32_t ndim, const int64_t *dims, size_t esize,
                            int64_t axis)
{
    ctl_axis a = {.data = data, .outer = 1, .len = 1, .inner = esize};
    for (int32_t d = 0; d < ndim; d++) {
        if (d < axis)
            a.outer *= (size_t)dims[d];
        else if (d == axis)
            a.len = (size_t)dims[d];
        else
            a.inner *= (size_t)dims[d];
    }
    return a;
}

/* One scan over tensors whose leading dims (BATCH of them: Scan-8's) were
 * already taken away by the caller: STATES, SCAN_IN and the node's outputs
 * OUT as views. */
typedef struct ctl_scan_io {
    const pl_tensor *states;   /* n_state: initial values */
    ctl_axis *scan_in;         /* n_scan_in */
    char **state_out;          /* n_state */
    ctl_axis *scan_out;        /* n_scan_out */
} ctl_scan_io;

static pl_status *ctl_scan_once(pl_control *c, const pl_tensor *in, size_t nf,
                                const ctl_scan_io *io, int worker)
{
    const ctl_body *b = &c->bodies[0];
    size_t ns = c->n_state, nm = c->n_scan_in, nk = c->n_scan_out;
    size_t len = nm ? io->scan_in[0].len : 0;
    for (size_t j = 1; j < nm; j++)
        if (io->scan_in[j].len != len)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: scan input %zu has %zu steps, scan input 0 %zu",
                                    c->label, j, io->scan_in[j].len, len);
    pl_tensor *fin = pl_calloc(ns + nm + b->n_out + 1, sizeof *fin);
    pl_tensor *bout = fin ? fin + ns + nm : NULL;
    char **buf = pl_calloc(2 * (ns + nm + nk) + 1, sizeof *buf);
    pl_status *st = fin && buf ? NULL : ctl_oom(c);
    /* buf: two per state, one gather buffer per scan input, one scatter
     * buffer per scan output. */
    for (size_t j = 0; st == NULL && j < ns; j++)
        for (int h = 0; h < 2 && st == NULL; h++)
            if ((buf[2 * j + h] = pl_malloc(b->outs[j].bytes ? b->outs[j].bytes : 1)) == NULL)
                st = ctl_oom(c);
    for (size_t j = 0; st == NULL && j < nm; j++)
        if (io->scan_in[j].outer > 1 &&
            (buf[2 * ns + j] = pl_malloc(io->scan_in[j].outer * io->scan_in[j].inner)) == NULL)
            st = ctl_oom(c);
    for (size_t k = 0; st == NULL && k < nk; k++)
        if (io->scan_out[k].outer > 1 &&
            (buf[2 * ns + nm + k] = pl_malloc(io->scan_out[k].outer * io->scan_out[k].inner)) ==
                NULL)
            st = ctl_oom(c);
    for (size_t k = 0; st == NULL && k < nk; k++)
        if (b->outs[ns + k].bytes != io->scan_out[k].outer * io->scan_out[k].inner ||
            io->scan_out[k].len != len)
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                  "%s: scan output %zu does not hold %zu slices of the %zu "
                                  "bytes the body gives",
                                  c->label, k, len, b->outs[ns + k].bytes);
    for (size_t j = 0; st == NULL && j < ns; j++)
        fin[j] = io->states[j];
    int flip = 0;
    for (size_t step = 0; st == NULL && step < len; step++) {
        for (size_t j = 0; j < nm; j++) {
            const ctl_axis *a = &io->scan_in[j];
            size_t at = c->in_rev[j] ? len - 1 - step : step;
            fin[ns + j] = (pl_tensor){.struct_size = sizeof(pl_tensor)};
            if (a->outer == 1) {
                fin[ns + j].data = a->data + at * a->inner;
            } else {
                char *dst = buf[2 * ns + j];
                for (size_t o = 0; o < a->outer; o++)
                    memcpy(dst + o * a->inner, a->data + (o * a->len + at) * a->inner, a->inner);
                fin[ns + j].data = dst;
            }
        }
        for (size_t j = 0; j < ns; j++)
            bout[j] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = buf[2 * j + flip]};
        for (size_t k = 0; k < nk; k++) {
            const ctl_axis *a = &io->scan_out[k];
            size_t at = c->out_rev[k] ? len - 1 - step : step;
            bout[ns + k] = (pl_tensor){.struct_size = sizeof(pl_tensor)};
            bout[ns + k].data = a->outer == 1 ? a->data + at * a->inner : buf[2 * ns + nm + k];
        }
        st = ctl_body_run(c, b, fin, in, nf, bout, worker);
        if (st != NULL) {
            st = pl_status_wrap(st, "%s: body, step %zu: ", c->label, step);
            break;
        }
        for (size_t k = 0; k < nk; k++) {
            const ctl_axis *a = &io->scan_out[k];
            if (a->outer == 1)
                continue;
            size_t at = c->out_rev[k] ? len - 1 - step : step;
            const char *src = buf[2 * ns + nm + k];
            for (size_t o = 0; o < a->outer; o++)
                memcpy(a->data + (o * a->len + at) * a->inner, src + o * a->inner, a->inner);
        }
        for (size_t j = 0; j < ns; j++)
            fin[j] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = buf[2 * j + flip]};
        flip ^= 1;
    }
    for (size_t j = 0; st == NULL && j < ns; j++)
        memmove(io->state_out[j], ctl_ptr(&fin[j]), b->outs[j].bytes);
    for (size_t j = 0; buf && j < 2 * (ns + nm + nk); j++)
        pl_free(buf[j]);
    pl_free(buf);
    pl_free(fin);
    return st;
}

static pl_status *ctl_scan_run(pl_control *c, const pl_tensor *in, pl_tensor *out, int worker)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    size_t nf = n->n_formal_inputs, ns = c->n_state, nm = c->n_scan_in, nk = c->n_scan_out;
    bool v8 = c->version < 9;
    size_t first = v8 ? 1 : 0;
    size_t batch = 1;
    if (v8) {
        const pl_tensor *x = &in[first + ns];
        batch = x->ndim >= 1 ? (size_t)x->shape[0] : 1;
        const pl_tensor *lens = &in[0];
        if (lens->data != NULL) {
            size_t steps = x->ndim >= 2 ? (size_t)x->shape[1] : 0;
            for (size_t i = 0; i < batch; i++)
                if (((const int64_t *)ctl_ptr(lens))[i] != (int64_t)steps)
                    return pl_status_create(PL_CODE_UNSUPPORTED,
                                            "%s: sequence_lens shorter than the sequence (%zu "
                                            "steps) are not supported",
                                            c->label, steps);
        }
    }
    pl_tensor *states = pl_calloc(ns + 1, sizeof *states);
    ctl_axis *sin = pl_calloc(nm + 1, sizeof *sin);
    ctl_axis *sout = pl_calloc(nk + 1, sizeof *sout);
    char **state_out = pl_calloc(ns + 1, sizeof *state_out);
    pl_status *st = states && sin && sout && state_out ? NULL : ctl_oom(c);
    for (size_t bi = 0; st == NULL && bi < batch; bi++) {
        /* Scan-8: every input and output holds the batch in axis 0; take
         * row BI of each, whose scan axis is then 0. */
        for (size_t j = 0; j < ns; j++) {
            const pl_tensor *x = &in[first + j];
            states[j] = *x;
            size_t bytes = c->bodies[0].outs[j].bytes;
            states[j].data = ctl_ptr(x) + bi * bytes;
            states[j].byte_offset = 0;
            state_out[j] = ctl_ptr(&out[j]) + bi * bytes;
        }
        for (size_t j = 0; j < nm; j++) {
            const pl_tensor *x = &in[first + ns + j];
            size_t esize = pl_dtype_size(x->dtype);
            int32_t skip = v8 ? 1 : 0;
            ctl_axis a = ctl_axis_of(ctl_ptr(x), x->ndim - skip, x->shape + skip, esize,
                                     v8 ? 0 : c->in_axis[j]);
            a.data += bi * a.outer * a.len * a.inner;
            sin[j] = a;
        }
        for (size_t k = 0; k < nk; k++) {
            pl_tensor *y = &out[ns + k];
            size_t esize = pl_dtype_size(y->dtype);
            int32_t skip = v8 ? 1 : 0;
            ctl_axis a = ctl_axis_of(ctl_ptr(y), y->ndim - skip, y->shape + skip, esize,
                                     v8 ? 0 : c->out_axis[k]);
            a.data += bi * a.outer * a.len * a.inner;
            sout[k] = a;
        }
        ctl_scan_io io = {.states = states, .scan_in = sin, .state_out = state_out,
                          .scan_out = sout};
        st = ctl_scan_once(c, in, nf, &io, worker);
    }
    pl_free(states);
    pl_free(sin);
    pl_free(sout);
    pl_free(state_out);
    return st;
}

/* Reads Scan's axes and directions (normalised) at creation. */
static pl_status *ctl_scan_attrs(pl_control *c, const pl_graph_node *n)
{
    bool v8 = c->version < 9;
    size_t first = v8 ? 1 : 0;
    const pl_attr *a = pl_graph_node_attr(n, "num_scan_inputs");
    c->n_scan_in = a ? (size_t)a->i : 0;
    c->n_state = n->n_formal_inputs - first - c->n_scan_in;
    c->n_scan_out = n->n_outputs - c->n_state;
    c->in_axis = pl_calloc(c->n_scan_in + 1, sizeof *c->in_axis);
    c->out_axis = pl_calloc(c->n_scan_out + 1, sizeof *c->out_axis);
    c->in_rev = pl_calloc(c->n_scan_in + 1, sizeof *c->in_rev);
    c->out_rev = pl_calloc(c->n_scan_out + 1, sizeof *c->out_rev);
    if (!c->in_axis || !c->out_axis || !c->in_rev || !c->out_rev)
        return ctl_oom(c);
    const pl_attr *dirs = pl_graph_node_attr(n, v8 ? "directions" : "scan_input_directions");
    const pl_attr *odirs = pl_graph_node_attr(n, "scan_output_directions");
    const pl_attr *iax = pl_graph_node_attr(n, "scan_input_axes");
    const pl_attr *oax = pl_graph_node_attr(n, "scan_output_axes");
    for (size_t j = 0; j < c->n_scan_in; j++) {
        c->in_rev[j] = dirs && j < dirs->n && dirs->ints[j] == 1;
        if (!v8 && iax && j < iax->n) {
            const pl_graph_tensor *x = pl_graph_get_tensor(c->g, n->inputs[first + c->n_state + j]);
            int64_t ax = iax->ints[j];
            c->in_axis[j] = ax < 0 ? ax + x->ndim : ax;
        }
    }
    for (size_t k = 0; k < c->n_scan_out; k++) {
        c->out_rev[k] = odirs && k < odirs->n && odirs->ints[k] == 1;
        if (!v8 && oax && k < oax->n) {
            const pl_graph_tensor *y = pl_graph_get_tensor(c->g, n->outputs[c->n_state + k]);
            int64_t ax = oax->ints[k];
            c->out_axis[k] = ax < 0 ? ax + y->ndim : ax;
        }
    }
    return NULL;
}

/* ---- induction variables ------------------------------------------------------ */

/* The value of T when it is a constant integer of one element. */
static bool ctl_const_int(const pl_graph_tensor *t, int64_t *v)
{
    size_t n;
    if (t == NULL || t->data == NULL || t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n) ||
        n != 1)
        return false;
    if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) && t->nbytes >= 8) {
        memcpy(v, t->data, 8);
        return true;
    }
    if (PL_DTYPE_EQ(t->dtype, PL_DTYPE_I32) && t->nbytes >= 4) {
        int32_t w;
        memcpy(&w, t->data, 4);
        *v = w;
        return true;
    }
    return false;
}

/* Body tensor T's constant value: its own, or the enclosing graph's. */
static bool ctl_body_const(const pl_control *c, const pl_graph *body, pl_tid t, int64_t *v)
{
    const pl_graph_tensor *bt = pl_graph_get_tensor(body, t);
    if (ctl_const_int(bt, v))
        return true;
    if (!bt->is_outer)
        return false;
    pl_tid o = pl_graph_find_tensor(c->g, bt->name);
    return o != PL_TID_NONE && ctl_const_int(pl_graph_get_tensor(c->g, o), v);
}

/* Through Identities to what T copies. */
static pl_tid ctl_through_identity(const pl_graph *body, pl_tid t)
{
    for (int hops = 0; hops < 8; hops++) {
        const pl_graph_tensor *bt = pl_graph_get_tensor(body, t);
        if (bt->producer == PL_NID_NONE)
            break;
        const pl_graph_node *p = pl_graph_get_node(body, bt->producer);
        if (strcmp(p->op, "Identity") != 0 || p->n_inputs < 1 || p->inputs[0] == PL_TID_NONE)
            break;
        t = p->inputs[0];
    }
    return t;
}

/* The constant carried value J of the Loop (node N): it starts at a
 * constant and the body passes it through unchanged. */
static bool ctl_invariant(const pl_control *c, const pl_graph_node *n, const pl_graph *body,
                          size_t j, int64_t *v)
{
    size_t n_car = n->n_formal_inputs - 2;
    if (j >= n_car || n->inputs[2 + j] == PL_TID_NONE)
        return false;
    return ctl_through_identity(body, pl_graph_output(body, 1 + j)) ==
               pl_graph_input(body, 2 + j) &&
           ctl_const_int(pl_graph_get_tensor(c->g, n->inputs[2 + j]), v);
}

/* Finds the Loop's induction variables (pl_control's ind): carried scalar
 * integers starting at a constant whose next value is Add(itself, D), D a
 * constant or a carried value that never changes (tf2onnx writes
 * `for i in tf.range(n)` so, and slices row i of a tensor with them), and
 * those constants carried unchanged (D = 0). */
static pl_status *ctl_find_induction(pl_control *c, const pl_graph_node *n, const pl_graph *body)
{
    size_t n_car = n->n_formal_inputs - 2;
    if (pl_graph_input_count(body) != n->n_formal_inputs ||
        pl_graph_output_count(body) < 1 + n_car || n_car == 0)
        return NULL;
    c->ind = pl_calloc(n_car, sizeof *c->ind);
    c->ind_c0 = pl_calloc(n_car, sizeof *c->ind_c0);
    c->ind_d = pl_calloc(n_car, sizeof *c->ind_d);
    if (!c->ind || !c->ind_c0 || !c->ind_d)
        return ctl_oom(c);
    c->n_ind = n_car;
    for (size_t k = 0; k < n_car; k++) {
        pl_tid in = pl_graph_input(body, 2 + k);
        const pl_graph_tensor *o = pl_graph_get_tensor(body, pl_graph_output(body, 1 + k));
        /* a constant carried through unchanged: a step of 0 */
        if (ctl_invariant(c, n, body, k, &c->ind_c0[k])) {
            c->ind[k] = true;
            continue;
        }
        if (n->inputs[2 + k] == PL_TID_NONE ||
            !ctl_const_int(pl_graph_get_tensor(c->g, n->inputs[2 + k]), &c->ind_c0[k]) ||
            o->producer == PL_NID_NONE)
            continue;
        const pl_graph_node *add = pl_graph_get_node(body, o->producer);
        if (strcmp(add->op, "Add") != 0 || add->n_formal_inputs != 2)
            continue;
        for (int side = 0; side < 2 && !c->ind[k]; side++) {
            pl_tid self = add->inputs[side], step = add->inputs[1 - side];
            if (self == PL_TID_NONE || step == PL_TID_NONE ||
                ctl_through_identity(body, self) != in)
                continue;
            int64_t d;
            bool known = ctl_body_const(c, body, step, &d);
            for (size_t j = 0; !known && j < n_car; j++)
                known = j != k && ctl_through_identity(body, step) == pl_graph_input(body, 2 + j) &&
                        ctl_invariant(c, n, body, j, &d);
            if (known) {
                c->ind[k] = true;
                c->ind_d[k] = d;
            }
        }
    }
    return NULL;
}

/* ---- the object -------------------------------------------------------------- */

/* ---- run to know its outputs ---------------------------------------------- */

/* One body of a dynamic Loop: made for these shapes of its formal inputs. */
typedef struct ctl_dyn_body {
    int64_t *key;
    size_t key_len;
    ctl_body b;
} ctl_dyn_body;

/* Most body sessions a dynamic Loop keeps (one per shape signature of its
 * carried values); the oldest goes first. */
#define CTL_MAX_DYN 16

/* A host tensor a dynamic run owns: its bytes (free()) and its dims. */
typedef struct ctl_val {
    void *data;
    pl_dtype dtype;
    int32_t ndim;
    int64_t dims[PL_GRAPH_MAX_RANK];
    size_t bytes;
} ctl_val;

static pl_tensor ctl_val_view(ctl_val *v)
{
    return (pl_tensor){.struct_size = sizeof(pl_tensor), .data = v->data, .dtype = v->dtype,
                       .ndim = v->ndim, .shape = v->dims};
}

static void ctl_val_free(ctl_val *v)
{
    free(v->data);
    v->data = NULL;
}

/* V: a copy of T (its bytes and dims); false when out of memory or T's
 * shape is not one. */
static bool ctl_val_copy(ctl_val *v, const pl_tensor *t)
{
    memset(v, 0, sizeof *v);
    if (t->ndim < 0 || t->ndim > PL_GRAPH_MAX_RANK || !ctl_tensor_bytes(t, &v->bytes))
        return false;
    v->dtype = t->dtype;
    v->ndim = t->ndim;
    if (t->ndim > 0)
        memcpy(v->dims, t->shape, (size_t)t->ndim * sizeof *v->dims);
    if (posix_memalign(&v->data, 64, v->bytes ? v->bytes : 64) != 0) {
        v->data = NULL;
        return false;
    }
    if (v->bytes > 0)
        memcpy(v->data, ctl_ptr(t), v->bytes);
    return true;
}

/* The Loop body made for the shapes of FORMAL (made now when new). */
static pl_status *ctl_dyn_get(pl_control *c, const pl_tensor *formal, size_t nf,
                              const ctl_body **out)
{
    size_t len = 0;
    int64_t key[2 + 64 * (1 + PL_GRAPH_MAX_RANK)];
    if (nf > 64)
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: more than 64 body inputs", c->label);
    for (size_t k = 0; k < nf; k++) {
        key[len++] = formal[k].ndim;
        for (int32_t d = 0; d < formal[k].ndim; d++)
            key[len++] = formal[k].shape[d];
    }
    for (size_t i = 0; i < c->n_dyn; i++)
        if (c->dyn[i].key_len == len && memcmp(c->dyn[i].key, key, len * sizeof *key) == 0) {
            *out = &c->dyn[i].b;
            return NULL;
        }
    if (c->n_dyn == CTL_MAX_DYN) {
        ctl_body_clear(&c->dyn[0].b);
        pl_free(c->dyn[0].key);
        memmove(c->dyn, c->dyn + 1, (c->n_dyn - 1) * sizeof *c->dyn);
        c->n_dyn--;
    }
    if (c->dyn == NULL && (c->dyn = pl_calloc(CTL_MAX_DYN, sizeof *c->dyn)) == NULL)
        return ctl_oom(c);
    ctl_dyn_body *d = &c->dyn[c->n_dyn];
    memset(d, 0, sizeof *d);
    if ((d->key = pl_malloc(len * sizeof *key + 1)) == NULL)
        return ctl_oom(c);
    memcpy(d->key, key, len * sizeof *key);
    d->key_len = len;
    const pl_graph *body = ctl_attr_body(pl_graph_get_node(c->g, c->node), "body");
    pl_status *st = ctl_body_make(c->rt, c, "body", body, &d->b, NULL, formal);
    if (st != NULL) {
        ctl_body_clear(&d->b);
        pl_free(d->key);
        return st;
    }
    c->n_dyn++;
    *out = &d->b;
    return NULL;
}

/* Runs body B of a dynamic node: FORMAL its inputs, IN the node's (NF
 * formal ones, then captures); RES receives every body output, owned. */
static pl_status *ctl_dyn_body_run(const pl_control *c, const ctl_body *b,
                                   const pl_tensor *formal, const pl_tensor *in, size_t nf,
                                   ctl_val *res, bool *kept)
{
    size_t n_sin = b->n_formal + b->n_caps;
    pl_io *sin = pl_calloc(n_sin ? n_sin : 1, sizeof *sin);
    pl_io *sout = pl_calloc(b->n_sess_out ? b->n_sess_out : 1, sizeof *sout);
    pl_status *st = sin && sout ? NULL : ctl_oom(c);
    if (st == NULL && b->session != NULL) {
        /* the session's inputs: the formal ones, then the captures, in the
         * copy's order (ctl_body_make) */
        size_t ns = pl_session_input_count(b->session), k = 0;
        if (ns != n_sin)
            st = pl_status_create(PL_CODE_INTERNAL, "%s: body session has %zu inputs, not %zu",
                                  c->label, ns, n_sin);
        for (size_t i = 0; st == NULL && i < ns; i++)
            sin[i].name = pl_session_input_name(b->session, i);
        for (size_t f = 0; f < b->n_formal; f++)
            sin[k++].tensor = formal[f];
        for (size_t j = 0; j < b->n_caps; j++)
            sin[k++].tensor = in[nf + b->cap_of[j]];
        for (size_t o = 0; o < b->n_sess_out; o++)
            sout[o].name = pl_session_output_name(b->session, o);
        if (st == NULL)
            st = pl_session_run(b->session, sin, ns, sout, b->n_sess_out);
        if (st != NULL) {
            for (size_t o = 0; o < b->n_sess_out; o++)
                pl_buffer_free(sout[o].tensor.data);
            memset(sout, 0, b->n_sess_out * sizeof *sout);
        }
    }
    bool *taken = pl_calloc(b->n_sess_out ? b->n_sess_out : 1, sizeof *taken);
    if (st == NULL && taken == NULL)
        st = ctl_oom(c);
    for (size_t i = 0; st == NULL && i < b->n_out; i++) {
        const ctl_out *o = &b->outs[i];
        ctl_val *v = &res[i];
        bool ok = true;
        switch (o->from) {
        case CTL_FROM_SESSION: {
            const pl_tensor *t = &sout[o->index].tensor;
            if (!taken[o->index] && t->byte_offset == 0 && t->ndim >= 0 &&
                t->ndim <= PL_GRAPH_MAX_RANK && ctl_tensor_bytes(t, &v->bytes)) {
                /* the session's buffer, allocated for us: taken over */
                v->data = t->data;
                v->dtype = t->dtype;
                v->ndim = t->ndim;
                if (t->ndim > 0)
                    memcpy(v->dims, t->shape, (size_t)t->ndim * sizeof *v->dims);
                taken[o->index] = true;
            } else {
                ok = ctl_val_copy(v, t);
            }
            break;
        }
        case CTL_FROM_INPUT:
            /* a Loop's carried value the body passes through unchanged (a
             * weight paddle2onnx carries: SLANet-plus copied 30 of them
             * every iteration, 9% of a run): the caller keeps its own */
            if (kept != NULL && i >= 1 && o->index == i + 1) {
                kept[i] = true;
                break;
            }
            ok = ctl_val_copy(v, &formal[o->index]);
            break;
        case CTL_FROM_CAPTURE: ok = ctl_val_copy(v, &in[nf + b->cap_of[o->index]]); break;
        case CTL_FROM_CONST: {
            pl_tensor t = {.struct_size = sizeof t, .data = (void *)o->data, .dtype = o->dtype,
                           .ndim = o->ndim, .shape = (int64_t *)o->dims};
            ok = ctl_val_copy(v, &t);
            break;
        }
        }
        if (!ok)
            st = ctl_oom(c);
    }
    for (size_t o = 0; sout != NULL && taken != NULL && o < b->n_sess_out; o++)
        if (!taken[o])
            pl_buffer_free(sout[o].tensor.data);
    if (st != NULL)
        for (size_t i = 0; i < b->n_out; i++)
            ctl_val_free(&res[i]);
    pl_free(taken);
    pl_free(sin);
    pl_free(sout);
    return st;
}

/* Appends the LEN bytes at P to the growing buffer of V (capacity *CAP). */
static bool ctl_val_append(ctl_val *v, size_t *cap, const void *p, size_t len)
{
    if (v->bytes + len > *cap) {
        size_t want = *cap ? *cap * 2 : len * 4;
        if (want < v->bytes + len)
            want = v->bytes + len;
        void *grown = realloc(v->data, want ? want : 64);
        if (grown == NULL)
            return false;
        v->data = grown;
        *cap = want;
    }
    if (len > 0)
        memcpy((char *)v->data + v->bytes, p, len);
    v->bytes += len;
    return true;
}

static bool ctl_same_dims(int32_t na, const int64_t *a, int32_t nb, const int64_t *b)
{
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static pl_status *ctl_loop_run_dynamic(pl_control *c, const pl_tensor *in, ctl_val *out,
                                       size_t n_out)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    const pl_graph *body = ctl_attr_body(n, "body");
    size_t nf = n->n_formal_inputs, n_car = nf - 2, n_scan = n_out - n_car;
    int64_t trips = in[0].data != NULL ? *(const int64_t *)ctl_ptr(&in[0]) : INT64_MAX;
    uint8_t cond = in[1].data != NULL ? *(const uint8_t *)ctl_ptr(&in[1]) != 0 : 1;
    size_t n_body_out = pl_graph_output_count(body);
    ctl_val *res = pl_calloc(n_body_out ? n_body_out : 1, sizeof *res);
    bool *kept = pl_calloc(n_body_out ? n_body_out : 1, sizeof *kept);
    pl_tensor *formal = pl_calloc(nf, sizeof *formal);
    size_t *cap = pl_calloc(n_scan ? n_scan : 1, sizeof *cap);
    pl_status *st = res && kept && formal && cap ? NULL : ctl_oom(c);
    if (st == NULL && n_body_out != 1 + n_car + n_scan)
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: body has %zu outputs, not %zu",
                              c->label, n_body_out, 1 + n_car + n_scan);
    for (size_t j = 0; st == NULL && j < n_car; j++)
        if (!ctl_val_copy(&out[j], &in[2 + j]))
            st = ctl_oom(c);
    int64_t it = 0;
    while (st == NULL && it < trips && cond) {
        formal[0] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = &it,
                                .dtype = PL_DTYPE_I64, .ndim = 0};
        formal[1] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = &cond,
                                .dtype = PL_DTYPE_BOOL, .ndim = 0};
        for (size_t j = 0; j < n_car; j++)
            formal[2 + j] = ctl_val_view(&out[j]);
        const ctl_body *b = NULL;
        st = ctl_dyn_get(c, formal, nf, &b);
        memset(kept, 0, n_body_out * sizeof *kept);
        if (st == NULL)
            st = ctl_dyn_body_run(c, b, formal, in, nf, res, kept);
        if (st != NULL) {
            st = pl_status_wrap(st, "%s: body, iteration %lld: ", c->label, (long long)it);
            break;
        }
        cond = res[0].bytes >= 1 && *(const uint8_t *)res[0].data != 0;
        ctl_val_free(&res[0]);
        for (size_t j = 0; j < n_car; j++) {
            if (kept[1 + j])
                continue; /* passed through: out[j] is its value still */
            ctl_val_free(&out[j]);
            out[j] = res[1 + j];
            res[1 + j].data = NULL;
        }
        for (size_t k = 0; st == NULL && k < n_scan; k++) {
            ctl_val *row = &res[1 + n_car + k], *acc = &out[n_car + k];
            if (it == 0) {
                if (row->ndim + 1 > PL_GRAPH_MAX_RANK) {
                    st = pl_status_create(PL_CODE_UNSUPPORTED, "%s: scan output %zu: rank too "
                                          "high", c->label, k);
                    break;
                }
                acc->dtype = row->dtype;
                acc->ndim = row->ndim + 1;
                if (row->ndim > 0)
                    memcpy(acc->dims + 1, row->dims, (size_t)row->ndim * sizeof *acc->dims);
            } else if (!ctl_same_dims(acc->ndim - 1, acc->dims + 1, row->ndim, row->dims)) {
                char a[160], r[160];
                st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                      "%s: scan output %zu is %s at iteration %lld and %s at "
                                      "iteration 0; its shape must not change",
                                      c->label, k,
                                      pl_dims_format(row->dims, row->ndim, r, sizeof r),
                                      (long long)it,
                                      pl_dims_format(acc->dims + 1, acc->ndim - 1, a, sizeof a));
                break;
            }
            if (!ctl_val_append(acc, &cap[k], row->data, row->bytes))
                st = ctl_oom(c);
            acc->dims[0] = it + 1;
        }
        for (size_t k = 0; k < n_scan; k++)
            ctl_val_free(&res[1 + n_car + k]);
        it++;
    }
    /* A Loop that never ran: its scan outputs as the body's types say,
     * unknown dims 0 (no rows whatever their shape). */
    for (size_t k = 0; st == NULL && it == 0 && k < n_scan; k++) {
        const pl_graph_tensor *bt =
            pl_graph_get_tensor(body, pl_graph_output(body, 1 + n_car + k));
        ctl_val *acc = &out[n_car + k];
        acc->dtype = bt->dtype;
        acc->ndim = bt->ndim >= 0 && bt->ndim < PL_GRAPH_MAX_RANK ? bt->ndim + 1 : 1;
        for (int32_t d = 1; d < acc->ndim; d++)
            acc->dims[d] = bt->dims[d - 1] >= 0 ? bt->dims[d - 1] : 0;
        acc->dims[0] = 0;
        if ((acc->data = malloc(64)) == NULL)
            st = ctl_oom(c);
    }
    for (size_t i = 0; res != NULL && i < n_body_out; i++)
        ctl_val_free(&res[i]);
    pl_free(res);
    pl_free(kept);
    pl_free(formal);
    pl_free(cap);
    return st;
}

static pl_status *ctl_if_run_dynamic(pl_control *c, const pl_tensor *in, ctl_val *out)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    bool cond = *(const uint8_t *)ctl_ptr(&in[0]) != 0;
    const char *attr = cond ? "then_branch" : "else_branch";
    ctl_body *b = &c->bodies[cond ? 0 : 1];
    if (b->outs == NULL) {
        pl_status *st = ctl_body_make(c->rt, c, attr, ctl_attr_body(n, attr), b, NULL, NULL);
        if (st != NULL) {
            ctl_body_clear(b);
            return st;
        }
    }
    return pl_status_wrap(ctl_dyn_body_run(c, b, NULL, in, n->n_formal_inputs, out, NULL),
                          "%s: %s: ", c->label, attr);
}

/* A control of node NODE (of kind KIND) of G, its fields set, nothing
 * made; NULL when out of memory. */
static pl_control *ctl_new(pl_runtime *rt, const pl_graph *g, pl_nid node, ctl_kind kind)
{
    const pl_graph_node *n = pl_graph_get_node(g, node);
    pl_control *c = pl_calloc(1, sizeof *c);
    if (c == NULL)
        return NULL;
    c->g = g;
    c->node = node;
    c->kind = kind;
    c->rt = rt;
    pthread_mutex_init(&c->mu, NULL);
    c->mu_ready = true;
    c->version = pl_graph_opset(g, "");
    if (c->version == 0)
        c->version = PL_OPSET_DEFAULT_VERSION;
    snprintf(c->label, sizeof c->label, "node '%.180s' (%s)", n->name, n->op);
    return c;
}

bool pl_control_body_open(pl_runtime *rt, const pl_graph *g, pl_nid node)
{
    const pl_graph_node *n = pl_graph_get_node(g, node);
    bool loop = n != NULL && n->domain[0] == '\0' && strcmp(n->op, "Loop") == 0;
    bool if_ = n != NULL && n->domain[0] == '\0' && strcmp(n->op, "If") == 0;
    if (!loop && !if_)
        return false;
    pl_control *c = ctl_new(rt, g, node, loop ? CTL_LOOP : CTL_IF);
    if (c == NULL)
        return false;
    c->probe = true;
    pl_status *st = NULL;
    if (loop) {
        const pl_graph *body = ctl_attr_body(n, "body");
        int64_t zero = 0;
        ctl_body b = {0};
        st = body == NULL ? NULL : ctl_find_induction(c, n, body);
        if (st == NULL && body != NULL && pl_graph_input_count(body) >= 2)
            st = ctl_body_make(rt, c, "body", body, &b, &zero, NULL);
        ctl_body_clear(&b);
    } else {
        static const char *const names[] = {"then_branch", "else_branch"};
        for (int i = 0; i < 2 && st == NULL; i++) {
            const pl_graph *body = ctl_attr_body(n, names[i]);
            ctl_body b = {0};
            if (body != NULL)
                st = ctl_body_make(rt, c, names[i], body, &b, NULL, NULL);
            ctl_body_clear(&b);
        }
    }
    /* A body that cannot be typed for these inputs (a Gather of row 0 of
     * an empty tensor, in a loop that runs no iteration) runs to know too:
     * it is made, and fails naming why, only if an iteration or branch
     * runs. */
    bool open = c->probe_open || (st != NULL && pl_status_code(st) != PL_CODE_OUT_OF_MEMORY);
    pl_status_free(st);
    pl_control_destroy(c);
    return open;
}

pl_status *pl_control_create_dynamic(pl_runtime *rt, const pl_graph *g, pl_nid node,
                                     pl_control **out_control)
{
    *out_control = NULL;
    const pl_graph_node *n = pl_graph_get_node(g, node);
    bool loop = n != NULL && n->domain[0] == '\0' && strcmp(n->op, "Loop") == 0;
    bool if_ = n != NULL && n->domain[0] == '\0' && strcmp(n->op, "If") == 0;
    if (!loop && !if_)
        return pl_status_create(PL_CODE_UNSUPPORTED, "only If and Loop run to know their "
                                                     "outputs' shapes");
    const char *need = loop ? "body" : "then_branch";
    if (ctl_attr_body(n, need) == NULL || (if_ && ctl_attr_body(n, "else_branch") == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "node '%s' (%s): a body attribute "
                                                          "is missing",
                                n->name, n->op);
    if (loop && (n->n_formal_inputs < 2 ||
                 pl_graph_input_count(ctl_attr_body(n, "body")) != n->n_formal_inputs))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "node '%s' (Loop): its body has %zu "
                                                          "inputs, not %zu",
                                n->name, pl_graph_input_count(ctl_attr_body(n, "body")),
                                n->n_formal_inputs);
    pl_control *c = ctl_new(rt, g, node, loop ? CTL_LOOP : CTL_IF);
    if (c == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    c->dynamic = true;
    c->n_bodies = loop ? 0 : 2;
    *out_control = c;
    return NULL;
}

pl_status *pl_control_run_dynamic(pl_control *c, const pl_tensor *in, size_t n_in,
                                  pl_tensor *out, int64_t (*dims)[PL_GRAPH_MAX_RANK],
                                  size_t n_out)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    if (!c->dynamic || n_in != n->n_inputs || n_out != n->n_outputs)
        return pl_status_create(PL_CODE_INTERNAL, "%s: run with %zu inputs and %zu outputs",
                                c->label, n_in, n_out);
    ctl_val *v = pl_calloc(n_out ? n_out : 1, sizeof *v);
    if (v == NULL)
        return ctl_oom(c);
    /* one run at a time: the bodies are made on first use */
    pthread_mutex_lock(&c->mu);
    pl_status *st = c->kind == CTL_LOOP ? ctl_loop_run_dynamic(c, in, v, n_out)
                                        : ctl_if_run_dynamic(c, in, v);
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < n_out; i++) {
        if (st != NULL) {
            ctl_val_free(&v[i]);
            continue;
        }
        memcpy(dims[i], v[i].dims, sizeof dims[i]);
        out[i] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = v[i].data,
                             .dtype = v[i].dtype, .ndim = v[i].ndim, .shape = dims[i]};
    }
    pl_free(v);
    return st;
}

void pl_control_destroy(pl_control *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_bodies; i++)
        ctl_body_clear(&c->bodies[i]);
    for (size_t i = 0; i < c->n_spec; i++) {
        if (c->spec[i] != NULL)
            ctl_body_clear(c->spec[i]);
        pl_free(c->spec[i]);
    }
    pl_free(c->spec);
    for (size_t i = 0; i < c->n_dyn; i++) {
        ctl_body_clear(&c->dyn[i].b);
        pl_free(c->dyn[i].key);
    }
    pl_free(c->dyn);
    pl_free(c->ind);
    pl_free(c->ind_c0);
    pl_free(c->ind_d);
    if (c->mu_ready)
        pthread_mutex_destroy(&c->mu);
    pl_free(c->in_axis);
    pl_free(c->out_axis);
    pl_free(c->in_rev);
    pl_free(c->out_rev);
    pl_free(c);
}

static const pl_graph *ctl_attr_body(const pl_graph_node *n, const char *name)
{
    const pl_attr *a = pl_graph_node_attr(n, name);
    return a != NULL && a->kind == PL_ATTR_GRAPH && a->n == 1 ? a->graphs[0] : NULL;
}

/* Every output of node N must have a static shape: the session plans it.
 * Names the output and why its shape is not known. */
pl_status *pl_control_check_outputs(const pl_graph *g, const pl_graph_node *n)
{
    size_t n_carried = n->n_formal_inputs >= 2 ? n->n_formal_inputs - 2 : 0;
    for (size_t o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] == PL_TID_NONE)
            continue;
        const pl_graph_tensor *t = pl_graph_get_tensor(g, n->outputs[o]);
        size_t bytes;
        if (pl_graph_tensor_bytes(t, &bytes))
            continue;
        char dims[160];
        pl_dims_format(t->dims, t->ndim, dims, sizeof dims);
        const char *why = "its shape depends on the data (data-dependent shapes are not "
                          "supported)";
        if (strcmp(n->op, "Loop") == 0 && o >= n_carried)
            return pl_status_create(PL_CODE_UNSUPPORTED,
                                    "node '%s' (Loop): scan output %zu ('%s') is %s%s: how "
                                    "often the loop runs is known only when it runs (M is not "
                                    "a constant, or the condition may stop it early); such "
                                    "scan outputs are not supported",
                                    n->name, o - n_carried, t->name, pl_dtype_name(t->dtype),
                                    dims);
        if (strcmp(n->op, "If") == 0)
            why = "the branches give different shapes, so it depends on which runs "
                  "(not supported)";
        return pl_status_create(PL_CODE_UNSUPPORTED, "node '%s' (%s): output %zu ('%s') is %s%s: %s",
                                n->name, n->op, o, t->name, pl_dtype_name(t->dtype), dims, why);
    }
    return NULL;
}

pl_status *pl_control_create(pl_runtime *rt, const pl_graph *g, pl_nid node,
                             pl_control **out_control)
{
    *out_control = NULL;
    const pl_graph_node *n = pl_graph_get_node(g, node);
    if (n == NULL || n->domain[0] != '\0')
        return pl_status_create(PL_CODE_UNSUPPORTED, "not a control-flow op");
    ctl_kind kind;
    if (strcmp(n->op, "If") == 0)
        kind = CTL_IF;
    else if (strcmp(n->op, "Loop") == 0)
        kind = CTL_LOOP;
    else if (strcmp(n->op, "Scan") == 0)
        kind = CTL_SCAN;
    else
        return pl_status_create(PL_CODE_UNSUPPORTED, "%s: not a control-flow op", n->op);
    PL_RETURN_IF_ERROR(pl_control_check_outputs(g, n));
    pl_control *c = ctl_new(rt, g, node, kind);
    if (c == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    static const char *const if_names[] = {"then_branch", "else_branch"};
    static const char *const body_names[] = {"body"};
    const char *const *names = kind == CTL_IF ? if_names : body_names;
    size_t count = kind == CTL_IF ? 2 : 1;
    pl_status *st = kind == CTL_SCAN ? ctl_scan_attrs(c, n) : NULL;
    bool any_ind = false;
    if (kind == CTL_LOOP && ctl_attr_body(n, "body") != NULL) {
        st = ctl_find_induction(c, n, ctl_attr_body(n, "body"));
        for (size_t k = 0; st == NULL && k < c->n_ind; k++)
            any_ind |= c->ind[k];
    }
    for (size_t i = 0; st == NULL && i < count; i++) {
        const pl_graph *body = ctl_attr_body(n, names[i]);
        if (body == NULL) {
            st = pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s: attribute '%s' is missing",
                                  c->label, names[i]);
            break;
        }
        c->n_bodies = i + 1;
        st = ctl_body_make(rt, c, names[i], body, &c->bodies[i], NULL, NULL);
        /* An If branch that cannot be planned for these shapes (PyTorch's
         * `if x.size(-1) == 1: x.squeeze(-1)` when it is not 1, a branch
         * for another sample rate): kept as the reason, an error only if
         * a run takes it; both unplanned is an error now. */
        if (st != NULL && kind == CTL_IF && pl_status_code(st) != PL_CODE_OUT_OF_MEMORY &&
            (i == 0 || c->bodies[0].unplanned == NULL)) {
            ctl_body_clear(&c->bodies[i]);
            c->bodies[i].unplanned = pl_strdup(pl_status_message(st));
            if (c->bodies[i].unplanned != NULL) {
                pl_status_free(st);
                st = NULL;
            }
        }
        if (st == NULL && kind == CTL_IF && i == 1 && c->bodies[0].unplanned != NULL &&
            c->bodies[1].unplanned != NULL)
            st = pl_status_create(PL_CODE_UNSUPPORTED, "%s: neither branch can be planned: %s",
                                  c->label, c->bodies[0].unplanned);
        /* A Loop body that cannot be planned once may be when its
         * iteration number is known: plan it per iteration (iteration 0
         * now, the others on first use); keep the first error otherwise. */
        if (st != NULL && kind == CTL_LOOP && pl_graph_input_count(body) > 0 &&
            (pl_graph_get_tensor(body, pl_graph_input(body, 0))->n_consumers > 0 || any_ind)) {
            ctl_body_clear(&c->bodies[i]);
            c->n_bodies = 0;
            const ctl_body *first = NULL;
            pl_status *again = ctl_spec(c, 0, &first);
            if (again == NULL) {
                pl_status_free(st);
                st = NULL;
                c->by_iter = true;
            } else {
                pl_status_free(again);
            }
        }
    }
    if (st != NULL) {
        pl_control_destroy(c);
        return st;
    }
    *out_control = c;
    return NULL;
}

pl_status *pl_control_run(pl_control *c, const pl_tensor *in, size_t n_in, pl_tensor *out,
                          size_t n_out, int worker)
{
    const pl_graph_node *n = pl_graph_get_node(c->g, c->node);
    if (n_in != n->n_inputs || n_out != n->n_outputs)
        return pl_status_create(PL_CODE_INTERNAL, "%s: run with %zu inputs and %zu outputs",
                                c->label, n_in, n_out);
    switch (c->kind) {
    case CTL_IF:
        return ctl_if_run(c, in, out, n_out, worker);
    case CTL_LOOP:
        return ctl_loop_run(c, in, out, n_out, worker);
    case CTL_SCAN:
        return ctl_scan_run(c, in, out, worker);
    }
    return NULL;
}

json_t *pl_control_describe_json(const pl_control *c)
{
    json_t *arr = json_array();
    static const char *const if_names[] = {"then_branch", "else_branch"};
    size_t count = c == NULL ? 0 : c->by_iter ? 1 : c->n_bodies;
    for (size_t i = 0; arr != NULL && i < count; i++) {
        json_t *placement = NULL;
        char *text = NULL;
        const ctl_body *b = &c->bodies[i];
        if (c->by_iter) {
            /* Under the lock, as runs may be growing the list (the body
             * of iteration 0 itself never changes once made). */
            pl_control *mut = (pl_control *)c;
            pthread_mutex_lock(&mut->mu);
            b = c->spec[0];
            pthread_mutex_unlock(&mut->mu);
        }
        if (b->session != NULL) {
            pl_status *st = pl_session_describe(b->session, &text);
            pl_status_free(st);
            json_t *root = text ? json_loads(text, 0, NULL) : NULL;
            pl_free(text);
            placement = json_incref(json_object_get(root, "placement"));
            json_decref(root);
        }
        json_array_append_new(arr, json_pack("{s:s, s:o}", "attribute",
                                             c->kind == CTL_IF ? if_names[i] : "body",
                                             "placement", placement ? placement : json_array()));
    }
    return arr;
}

/* ---- the built-in backend ------------------------------------------------------- */

static pl_status *ctl_get_kernel(pl_module_ctx *ctx, int device, const pl_node_desc *node,
                                 pl_kernel **out_kernel, size_t *out_workspace)
{
    (void)device;
    *out_kernel = NULL;
    *out_workspace = 0;
    const pl_graph *g = pl_graph_view_graph(node->graph);
    pl_nid id = pl_graph_view_node_id(node->graph, node->node_index);
    if (g == NULL || id == PL_NID_NONE)
        return pl_status_create(PL_CODE_INTERNAL, "control: the node is not in its view");
    pl_runtime *rt = (pl_runtime *)ctx;
    pl_control *c = NULL;
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_status *st = pl_control_create(rt, g, id, &c);
    pl_alloc_scope_leave(outer);
    *out_kernel = (pl_kernel *)c;
    return st;
}

/* Runs on an engine worker (or a pinned thread), whose current allocator
 * is not the application's: the step's buffers (carried values, Scan's
 * slices) and the bodies' run contexts must come from the runtime's
 * allocator, so that a refusal there fails the run with out of memory
 * rather than going unseen to the system allocator. */
static pl_status *ctl_kernel_run(pl_module_ctx *ctx, pl_kernel *kernel, const pl_run_args *args)
{
    pl_runtime *rt = (pl_runtime *)ctx;
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_status *st = pl_control_run((pl_control *)kernel, args->inputs, args->n_inputs,
                                   args->outputs, args->n_outputs,
                                   args->run ? args->run->worker : 0);
    pl_alloc_scope_leave(outer);
    return st;
}

static void ctl_kernel_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    pl_runtime *rt = (pl_runtime *)ctx;
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_control_destroy((pl_control *)kernel);
    pl_alloc_scope_leave(outer);
}

pl_status *pl_control_module_create(pl_runtime *rt, pl_module **out_module)
{
    *out_module = NULL;
    pl_module *m = pl_alloc_calloc(rt->alloc, 1, sizeof *m);
    char *name = m ? pl_alloc_strdup(rt->alloc, "control") : NULL;
    if (name == NULL) {
        pl_free(m);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    m->name = name;
    m->status = PL_MODULE_LOADED;
    m->host.runtime = rt;
    m->host.module = m;
    m->api.header = (pl_abi_header)PL_ABI_HEADER_INIT(pl_module_api);
    m->api.name = "control";
    m->api.version = "1";
    m->api.vendor = "plinth core";
    m->api.capabilities = PL_CAP_IMPERATIVE | PL_CAP_HOST_MEMORY;
    m->api.get_kernel = ctl_get_kernel;
    m->api.kernel_run = ctl_kernel_run;
    m->api.kernel_release = ctl_kernel_release;
    m->ctx = (pl_module_ctx *)rt;
    m->device_count = 1;
    /* The runtime's own reference: sessions retain and release theirs,
     * and this one is dropped only by pl_control_module_destroy. */
    atomic_init(&m->refs, 1);
    *out_module = m;
    return NULL;
}

void pl_control_module_destroy(pl_module *m)
{
    if (m == NULL)
        return;
    pl_free(m->name);
    pl_free(m);
}
