/* stage.c — staged sessions (stage.h). */
#include "stage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plinth/graph_hash.h>

#include "alloc.h"
#include "control.h"
#include "filedata.h"
#include "hostbuf.h"
#include "model.h"
#include "registry.h"
#include "run.h"
#include "status.h"

/* Most elements of an integer tensor the prefix computes that is bound by
 * value (stg_by_value). */
#define STG_VALUE_MAX 64

/* Tiers of tail plans. A tail planned for a new signature is expected to
 * serve as many runs as the stage's plans have served on average; below
 * STG_MANY_RUNS its partition weighs what compiling costs against those
 * runs (pl_cost.prepare_us; model.h plan_runs): a decoder whose past grows
 * a token a step plans a tail a step, each run once, and a subgraph that
 * compiles in milliseconds to save microseconds once goes to the backend
 * that makes its kernels at once. A quick plan also runs the graph as the
 * model's passes left it at load, typed for the signature but not
 * rewritten again: the passes (a copy and a re-inference of the graph per
 * pass that changes it) were two thirds of planning a 2-layer GPT-2 step
 * (2.2 of 3.0 ms), to fold shape computations the session prunes anyway
 * once their values are known. Not so a tail holding control flow: an If
 * whose condition the signature decides is inlined by the passes (an
 * optimum decoder_model_merged's use_cache_branch), where left in place its
 * branch was planned per run (t5's merged decoder 23 -> 37 ms over a
 * generation). Such a quick plan whose signature comes back
 * STG_PROMOTE_USES times is planned again in full. */
#define STG_MANY_RUNS 64.0
#define STG_PROMOTE_USES 8

/* ... unless the stage's own times say a full plan pays. The quick tier
 * was measured on a decoder's steps, where a run takes a fraction of its
 * plan; a BERT-base of free sequence length (batch 1, lengths 20 to 59,
 * each new) ran its quick tails at 62-73 ms a call, planned without the
 * passes that fuse its attention and placed for one run, against 32-35 ms
 * on full tails, whose planning cost no more (a new length 57 ms in full,
 * 64 quick; ONNX Runtime 35). So the stage times its plans and its runs
 * per tier (a moving mean, STG_TIER_WEIGHT on the newest): once quick
 * runs take as long as quick plans, the next new signatures are planned in
 * full to measure that tier too, and from then on each new signature gets
 * the tier whose plan plus its expected runs (as many as the plans before
 * served on average) cost less. The first run of each tier is not timed
 * (it carries what a process does at a kernel's first use), nor is the
 * first plan or the first full one after it: the first lays the weights
 * out and makes the first kernels, and the second full one lays out again
 * what its passes folded anew (BERT-base's query, key and value weights side by side:
 * 223 ms, the full plans after it 14-25) -- unless it took more than
 * STG_WARM_FULL_MAX quick plans: then it is timed, and a full plan is not
 * tried again. GPT-2 base's steps (runs 15 ms, quick plans 7) planned in
 * full took 270 ms each, its 1367 nodes compiled for every new past
 * length; the exploration costs such a decoder one full plan, once per
 * session. */
#define STG_TIER_WEIGHT 0.125
#define STG_WARM_FULL_MAX 10.0

/* ... and the exploration happens only where a full plan could pay: while
 * a quick plan and its expected runs cost less than 1/STG_EXPLORE_FACTOR
 * of the first plan (a full one, which also lays the weights out), no
 * full plan after it can win back its cost. GPT-2 base's steps (a quick
 * plan 4.7 ms, its run 20) explored with two full plans of 257-419 ms
 * against a first of 386: 40 steps 49.6 ms a step on average. A BERT of
 * free length (quick plans 37 ms, runs 30, full plans 14-25) still
 * explores, and its full tier wins. */
#define STG_EXPLORE_FACTOR 8.0

/* ... and only once STG_EXPLORE_RUNS quick runs were timed, judged by the
 * fastest plan and run (a preempted one only adds time): one run of a tail
 * of two small products, preempted on a loaded machine (a CI's parallel
 * sanitizer tests), took longer than its plan and set off a full plan
 * where none could pay, and so did a tiny Reshape/MatMul tail's. */
#define STG_EXPLORE_RUNS 3

/* Kept tails used once, at most: beyond, the least recently used of them
 * goes first, whatever the limits (stage.h). A decoder's past grows a token
 * a step, and no signature comes back: 256 kept tails of a 2-layer GPT-2
 * held 310 MB (1.2 MB of session each besides its arena), a 12-layer one
 * would hold gigabytes. A signature seen twice is kept as before (a BERT
 * over 35 lengths in random order keeps them all). */
#define STG_ONCE_KEPT 32
/* The run-time warnings a staged session keeps (stg_tell): a decoder plans
 * a tail for every length, and each may say the same. */
#define STG_TOLD_MAX 64

/* ... unless signatures evicted that way come back: the digests of the
 * last STG_GHOSTS of them are remembered, and each that comes back
 * doubles how many once-used tails are kept (up to the stage's limits).
 * 40 signatures in turn, each once a pass, each evicted before it came
 * back, planned on every call of every pass; a decoder's signatures never
 * come back, so it keeps 32. */
#define STG_GHOSTS 256

/* Quick plans whose signatures never come back (a decoder's past grows a
 * token a step) offered every module in the order each tail's nodes:
 * onednn, which a plan for one run never pays to compile for, was asked
 * about every node of a 2-layer GPT-2's 247-node tail each step, its
 * support and estimates 0.6 of a 1.84 ms step (order = cpu: 1.24). A module
 * that took none of a quick tail is not offered the next ones while their
 * expected runs stay within twice and their frontier within 5/4 of that
 * tail's, and is asked again every STG_SKIP_PLANS plans. At most
 * STG_SKIP_MAX modules are left out. */
#define STG_SKIP_PLANS 16
#define STG_SKIP_MAX 8

/* What a kept tail's session holds besides its arenas and constants, per
 * node of the tail: its graph, kernels, program and run context (measured:
 * 1.2 MB for a GPT-2 tail of 287 nodes planned quick, 0.95 MB in full). */
#define STG_NODE_BYTES 4096

/* One tensor the tail reads that the tail does not compute. */
typedef struct stg_front {
    pl_tid t;          /* the same id in the model's graph and the tail's */
    bool from_prefix;  /* an output of the prefix, else a graph input */
    bool from_pivot;   /* an output of the pivot (PIVOT_OUT), else as above */
    size_t pivot_out;
    bool by_value;
} stg_front;

/* One specialised tail. */
typedef struct stg_spec {
    unsigned char *key;
    size_t key_len;
    pl_session *session;
    int users;         /* runs using it now */
    uint64_t uses;     /* runs that used it */
    bool quick;        /* planned for few runs (STG_MANY_RUNS) */
    uint64_t last_use;
    size_t arena_bytes; /* pl_session_arena_bytes of SESSION, and the bytes of
                           the constants its graph reads */
    size_t told;        /* SESSION's warnings stg_tell has seen */
} stg_spec;

/* Dims of outputs handed to callers (they outlive the tail that gave
 * them). */
typedef struct stg_dims {
    int32_t ndim;
    int64_t dims[PL_GRAPH_MAX_RANK];
    struct stg_dims *next;
} stg_dims;

struct pl_stage {
    pl_model *model;
    const pl_graph *g;
    pl_session *prefix;
    pl_tid *pre_out;       /* the prefix's outputs (model tensor ids) */
    size_t n_pre_out;
    /* The pivot: a control node that runs to know its outputs' shapes
     * (pl_control_create_dynamic), between prefix and tail; PL_NID_NONE
     * when none. */
    pl_nid pivot;
    pl_control *pivot_ctl;
    bool left;             /* its creation left the file constants, pins taken */
    pl_graph *tail;        /* the template: its inputs are the frontier */
    size_t tail_nodes;
    /* The tail holds a control-flow node (an attribute holding a graph):
     * its quick plans are rewritten too (STG_MANY_RUNS). */
    bool tail_bodies;
    stg_front *front;
    size_t n_front;
    /* the session options, copied: tails are made at run time */
    pl_session_options opts;
    char **order, **pins;
    uint32_t *pinned;      /* recorded constants the graphs read, kept resident */
    size_t n_pinned;
    pthread_mutex_t mu;    /* specs, clock, dims, spare, told */
    /* What the prefix and the tails warned while running (a measured
     * subgraph tried elsewhere), each text once, up to STG_TOLD_MAX: the
     * staged session's warnings after the prefix's first PRE_TOLD (those
     * of its creation). PRE_SEEN: the prefix's warnings seen so far. */
    char **told;
    uint64_t *told_hash;
    size_t n_told, pre_told, pre_seen;
    /* Per prefix output: buffers of its size that earlier runs gave back
     * (a run takes one instead of fresh pages: retinanet's frontier is
     * megabytes, and clearing new pages took 6% of a run). */
    void ***spare;
    size_t *n_spare;
    stg_spec **specs;     /* each apart: runs hold them while others come and go */
    size_t n_specs;
    size_t spec_bytes;    /* their arena_bytes together */
    uint64_t clock;
    uint64_t tail_plans, tail_runs; /* tails planned for a new signature; runs */
    /* Nanoseconds a plan and a run of its tails take, in full ([0]: after
     * the first plan) and quick ([1]), with how many were timed. */
    struct stg_tier {
        double plan_ns, run_ns;
        double plan_min_ns, run_min_ns; /* the fastest timed (STG_EXPLORE_RUNS) */
        uint64_t plans, runs;
        bool ran; /* a run of the tier was made, not timed */
    } tier[2];
    bool full_warmed;      /* a full plan after the first was made, not timed */
    uint64_t first_plan_ns; /* the first plan's time (STG_EXPLORE_FACTOR) */
    /* Modules the last quick plan that offered everyone its nodes gave
     * none (stg_skip_get): the quick plans after it, for as many runs and
     * frontiers as large at most, do not offer them the nodes again, up to
     * STG_SKIP_PLANS of them. */
    uint64_t ghost[STG_GHOSTS]; /* digests of once-used keys evicted (0: none) */
    size_t ghost_at;
    size_t once_kept;      /* once-used tails kept, STG_ONCE_KEPT and up */
    pl_module *skip[STG_SKIP_MAX];
    size_t n_skip;
    double skip_runs, skip_elems;
    unsigned skip_left;
    /* the pivot's runs and their time, for the step list
     * (pl_stage_step_info) */
    atomic_ullong pivot_ns, pivot_runs;
    /* Dims handed to callers (stg_keep_dims), chained in buckets by hash: a
     * decoder's generation hands out new dims at every step, thousands of
     * them, each looked up again per output per run. */
    stg_dims **dims;
    size_t n_buckets, n_dims;
};

static pl_status *stg_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory staging a session");
}

static bool stg_known(const pl_graph_tensor *t)
{
    size_t bytes;
    return pl_graph_tensor_bytes(t, &bytes);
}

/* Whether node N (ID) of G is a control node run to know its outputs
 * (pl_control_body_open). */
static bool stg_open_control(pl_runtime *rt, const pl_graph *g, pl_nid id)
{
    const pl_graph_node *n = pl_graph_get_node(g, id);
    return n->domain[0] == '\0' && (strcmp(n->op, "If") == 0 || strcmp(n->op, "Loop") == 0) &&
           pl_control_body_open(rt, g, id);
}

bool pl_stage_needed(pl_runtime *rt, const pl_graph *g)
{
    size_t nn = pl_graph_node_count(g);
    for (pl_nid i = 0; i < (pl_nid)nn; i++) {
        const pl_graph_node *n = pl_graph_get_node(g, i);
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != PL_TID_NONE && !stg_known(pl_graph_get_tensor(g, n->inputs[k])))
                return true;
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] != PL_TID_NONE &&
                !stg_known(pl_graph_get_tensor(g, n->outputs[k])))
                return true;
    }
    for (pl_nid i = 0; i < (pl_nid)nn; i++)
        if (stg_open_control(rt, g, i))
            return true;
    return false;
}

/* Marks in TAIL the nodes of G after the split: those touching a tensor of
 * unknown shape, the control nodes OPEN marks (run to know), and
 * everything reading what they compute. */
static void stg_mark_tail(const pl_graph *g, const bool *open, bool *tail)
{
    const pl_nid *topo = pl_graph_topo_order(g);
    size_t nn = pl_graph_node_count(g);
    for (size_t i = 0; i < nn; i++) {
        pl_nid id = topo[i];
        const pl_graph_node *n = pl_graph_get_node(g, id);
        bool t = open[id];
        for (size_t k = 0; k < n->n_inputs && !t; k++) {
            if (n->inputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *in = pl_graph_get_tensor(g, n->inputs[k]);
            t = !stg_known(in) || (in->producer != PL_NID_NONE && tail[in->producer]);
        }
        for (size_t k = 0; k < n->n_outputs && !t; k++)
            t = n->outputs[k] != PL_TID_NONE &&
                !stg_known(pl_graph_get_tensor(g, n->outputs[k]));
        tail[id] = t;
    }
}

/* Whether frontier tensor T is bound by value: an integer or boolean one
 * of at most STG_VALUE_MAX elements computed by the prefix (a count, K, a
 * shape, an If's condition) or of one element given as a graph input (a
 * sample rate, a length: token ids are data), or a scalar of any other
 * type the prefix computes (Range's limits, a window's size); never
 * strings. */
static bool stg_by_value(const pl_graph_tensor *t, bool from_prefix)
{
    size_t n;
    if (t->ndim < 0 || !pl_dims_elements(t->dims, t->ndim, &n) || t->is_string)
        return false; /* (string ids are text: data, whose ids are one run's) */
    bool ints = PL_DTYPE_EQ(t->dtype, PL_DTYPE_I64) || PL_DTYPE_EQ(t->dtype, PL_DTYPE_I32) ||
                t->dtype.code == PL_TYPE_BOOL;
    if (!from_prefix)
        return ints && n <= 1;
    return n <= (ints ? STG_VALUE_MAX : 1);
}

/* Adds T to the list L (N entries) unless it is there. */
static pl_status *stg_add_tid(pl_tid **l, size_t *n, pl_tid t)
{
    for (size_t i = 0; i < *n; i++)
        if ((*l)[i] == t)
            return NULL;
    pl_tid *grown = pl_realloc(*l, (*n + 1) * sizeof *grown);
    if (grown == NULL)
        return stg_oom();
    grown[(*n)++] = t;
    *l = grown;
    return NULL;
}

/* The frontier and the graph outputs on each side. */
static pl_status *stg_frontier(pl_stage *s, const bool *tail, pl_tid **tail_out,
                               size_t *n_tail_out)
{
    const pl_graph *g = s->g;
    size_t nn = pl_graph_node_count(g);
    size_t nt = pl_graph_tensor_count(g);
    bool *seen = pl_calloc(nt ? nt : 1, sizeof *seen);
    if (seen == NULL)
        return stg_oom();
    pl_status *st = NULL;
    s->front = pl_calloc(nt ? nt : 1, sizeof *s->front);
    if (s->front == NULL)
        st = stg_oom();
    for (pl_nid id = 0; st == NULL && id < (pl_nid)nn; id++) {
        if (!tail[id])
            continue;
        s->tail_nodes++;
        const pl_graph_node *n = pl_graph_get_node(g, id);
        for (size_t a = 0; a < n->n_attrs; a++)
            s->tail_bodies |= n->attrs[a].kind == PL_ATTR_GRAPH ||
                              n->attrs[a].kind == PL_ATTR_GRAPHS;
        for (size_t k = 0; k < n->n_inputs; k++) {
            pl_tid t = n->inputs[k];
            if (t == PL_TID_NONE || seen[t])
                continue;
            const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
            bool piv = s->pivot != PL_NID_NONE && gt->producer == s->pivot;
            if (!piv && (gt->producer != PL_NID_NONE ? tail[gt->producer] : !gt->is_input))
                continue; /* computed in the tail, or a constant */
            seen[t] = true;
            stg_front *f = &s->front[s->n_front++];
            f->t = t;
            f->from_pivot = piv;
            f->from_prefix = !piv && gt->producer != PL_NID_NONE;
            f->by_value = stg_by_value(gt, f->from_prefix || piv);
            const pl_graph_node *pn = piv ? pl_graph_get_node(g, s->pivot) : NULL;
            for (size_t o = 0; pn != NULL && o < pn->n_outputs; o++)
                if (pn->outputs[o] == t)
                    f->pivot_out = o;
            if (f->from_prefix)
                st = stg_add_tid(&s->pre_out, &s->n_pre_out, t);
        }
    }
    for (size_t i = 0; st == NULL && i < pl_graph_output_count(g); i++) {
        pl_tid t = pl_graph_output(g, i);
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        if (s->pivot != PL_NID_NONE && gt->producer == s->pivot)
            continue; /* handed over from the pivot's outputs */
        if (gt->producer == PL_NID_NONE)
            continue; /* a graph input or a constant: pl_stage_run copies it */
        if (tail[gt->producer])
            st = stg_add_tid(tail_out, n_tail_out, t);
        else
            st = stg_add_tid(&s->pre_out, &s->n_pre_out, t);
    }
    pl_free(seen);
    return st;
}

/* Why the tail can never be planned, when nothing it reads can make its
 * shapes known: no input with an open shape and no value to bind. */
static pl_status *stg_check_progress(const pl_stage *s, const bool *tail)
{
    for (size_t i = 0; i < s->n_front; i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(s->g, s->front[i].t);
        if (s->front[i].by_value || !stg_known(t))
            return NULL;
    }
    const pl_nid *topo = pl_graph_topo_order(s->g);
    for (size_t i = 0; i < pl_graph_node_count(s->g); i++) {
        const pl_graph_node *n = pl_graph_get_node(s->g, topo[i]);
        if (!tail[topo[i]])
            continue;
        for (size_t k = 0; k < n->n_outputs; k++) {
            const pl_graph_tensor *t = n->outputs[k] == PL_TID_NONE
                                           ? NULL
                                           : pl_graph_get_tensor(s->g, n->outputs[k]);
            if (t != NULL && !stg_known(t) && n->domain[0] == '\0' &&
                (strcmp(n->op, "If") == 0 || strcmp(n->op, "Loop") == 0 ||
                 strcmp(n->op, "Scan") == 0))
                return pl_control_check_outputs(s->g, n);
            if (t != NULL && !stg_known(t)) {
                char dims[160];
                return pl_status_create(
                    PL_CODE_UNSUPPORTED,
                    "node '%s' (%s): output '%s' is %s%s, and neither the shapes of the "
                    "graph inputs nor a small integer value computed before it (a count, "
                    "K, a shape) determines it",
                    n->name, n->op, t->name, pl_dtype_name(t->dtype),
                    t->ndim < 0 ? " of unknown rank"
                                : pl_dims_format(t->dims, t->ndim, dims, sizeof dims));
            }
        }
    }
    return pl_status_create(PL_CODE_INTERNAL, "staging: no node has an unknown shape");
}

/* A graph of G's nodes KEEP marks, reading INPUTS (N_IN) and giving
 * OUTPUTS (N_OUT), validated and typed. */
static pl_status *stg_graph(const pl_stage *s, const bool *keep, const pl_tid *inputs,
                            size_t n_in, const pl_tid *outputs, size_t n_out, pl_graph **out)
{
    PL_RETURN_IF_ERROR(pl_graph_extract(s->g, keep, outputs, n_out, out));
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < n_in; i++)
        st = pl_graph_add_input(*out, inputs[i]);
    if (st == NULL)
        st = pl_runtime_type_graph(s->model->runtime, *out);
    if (st != NULL) {
        pl_graph_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* A session of graph G (taken) with the stage's options; OPTIMIZE runs the
 * model's passes first (a tail whose shapes are now known folds). Every
 * session shares the model's file constants: it pins what it reads in
 * place (its modules may then borrow weights: filedata.h's keep), and
 * what the prefix's modules copied may go. A full tail that did not share
 * them had onednn copy and flush every weight it took: GPT-2 base's
 * explored full plan 216 ms, 350 MB copied; sharing, 79 ms. */
static pl_status *stg_session(pl_stage *s, pl_graph *g, bool optimize, double plan_runs,
                              bool skip, bool tail, pl_session **out)
{
    pl_model *m = NULL;
    PL_RETURN_IF_ERROR(pl_model_of_graph(s->model->runtime, g, pl_strdupf("%s", s->model->path),
                                         &m));
    m->plan_runs = plan_runs;
    m->part = true;
    if (skip) {
        m->skip = s->skip;
        m->n_skip = s->n_skip;
    }
    pl_status *st = optimize ? pl_model_optimize(m) : NULL;
    m->filedata = s->model->filedata;
    m->repeated = tail; /* (a tail a signature: modules share from the first) */
    if (st == NULL)
        st = pl_session_create(m, &s->opts, out);
    pl_model_release(m);
    return st;
}

/* Pins recorded constant (filedata.h) at DATA, once (SEEN). */
static void stg_pin_one(pl_stage *s, bool *seen, const void *data)
{
    long e = data != NULL ? pl_filedata_find(s->model->filedata, data) : -1;
    if (e >= 0 && !seen[e]) {
        seen[e] = true;
        s->pinned[s->n_pinned++] = (uint32_t)e;
    }
}

/* Every constant of BODY and of the bodies within it. */
static void stg_pin_body(pl_stage *s, bool *seen, const pl_graph *body)
{
    for (pl_tid t = 0; t < (pl_tid)pl_graph_tensor_count(body); t++)
        stg_pin_one(s, seen, pl_graph_get_tensor(body, t)->data);
    for (pl_nid i = 0; i < (pl_nid)pl_graph_node_count(body); i++) {
        const pl_graph_node *n = pl_graph_get_node(body, i);
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH)
                for (size_t k = 0; k < n->attrs[a].n; k++)
                    stg_pin_body(s, seen, n->attrs[a].graphs[k]);
    }
}

/* The recorded constants the tail (TAIL marks its nodes) and the pivot
 * read, their bodies' included, pinned for the stage's life: tails and
 * the pivot's bodies are planned at run time and borrow them. The
 * prefix's session records its own (it shares the model's file
 * constants): what a module copied (onednn's laid-out weights) is dropped
 * when the stage is made, so the backbone of a detector is not resident
 * twice. */
static pl_status *stg_pin(pl_stage *s, const bool *tail)
{
    pl_filedata *f = s->model->filedata;
    if (f == NULL || pl_filedata_count(f) == 0)
        return NULL;
    s->pinned = pl_calloc(pl_filedata_count(f), sizeof *s->pinned);
    bool *seen = pl_calloc(pl_filedata_count(f), sizeof *seen);
    if (s->pinned == NULL || seen == NULL) {
        pl_free(seen);
        return stg_oom();
    }
    for (pl_nid i = 0; i < (pl_nid)pl_graph_node_count(s->g); i++) {
        if (!tail[i] && i != s->pivot)
            continue;
        const pl_graph_node *n = pl_graph_get_node(s->g, i);
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] != PL_TID_NONE)
                stg_pin_one(s, seen, pl_graph_get_tensor(s->g, n->inputs[k])->data);
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH)
                for (size_t k = 0; k < n->attrs[a].n; k++)
                    stg_pin_body(s, seen, n->attrs[a].graphs[k]);
    }
    /* graph outputs that are constants: each run copies them */
    for (size_t i = 0; i < pl_graph_output_count(s->g); i++)
        stg_pin_one(s, seen, pl_graph_get_tensor(s->g, pl_graph_output(s->g, i))->data);
    pl_free(seen);
    return NULL;
}

static char **stg_strings(const char *const *v, size_t n)
{
    char **c = pl_calloc(n ? n : 1, sizeof *c);
    for (size_t i = 0; c != NULL && i < n; i++)
        if ((c[i] = pl_strdupf("%s", v[i])) == NULL) {
            for (size_t k = 0; k < i; k++)
                pl_free(c[k]);
            pl_free(c);
            return NULL;
        }
    return c;
}

static pl_status *stg_options(pl_stage *s, const pl_session_options *o)
{
    s->opts = (pl_session_options){.struct_size = sizeof s->opts};
    if (o == NULL)
        return NULL;
    size_t have = o->struct_size < sizeof *o ? o->struct_size : sizeof *o;
    memcpy(&s->opts, o, have);
    s->opts.struct_size = (uint32_t)have;
#define STG_HAS(field) (have >= offsetof(pl_session_options, field) + sizeof o->field)
    if (STG_HAS(io_device) && o->io_device != NULL && strcmp(o->io_device, "host") != 0)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "session option io_device '%s': a model with shapes known only "
                                "at run time runs on host tensors",
                                o->io_device);
    if (STG_HAS(n_order) && o->order != NULL) {
        if ((s->order = stg_strings(o->order, o->n_order)) == NULL)
            return stg_oom();
        s->opts.order = (const char *const *)s->order;
    }
    if (STG_HAS(n_pins) && o->pins != NULL) {
        if ((s->pins = stg_strings(o->pins, o->n_pins)) == NULL)
            return stg_oom();
        s->opts.pins = (const char *const *)s->pins;
    }
#undef STG_HAS
    return NULL;
}

/* The first node of the tail, in topological order, that may run to know
 * its outputs' shapes: an If or Loop of the default domain whose inputs
 * all have known shapes and none computed in the tail. PL_NID_NONE when
 * there is none. */
static pl_nid stg_pivot_candidate(const pl_graph *g, const bool *tail, const bool *open,
                                  bool open_only)
{
    const pl_nid *topo = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, topo[i]);
        if (!tail[topo[i]] || n->domain[0] != '\0' ||
            (strcmp(n->op, "If") != 0 && strcmp(n->op, "Loop") != 0) ||
            (open_only && !open[topo[i]]))
            continue;
        bool ready = true;
        for (size_t k = 0; k < n->n_inputs && ready; k++) {
            if (n->inputs[k] == PL_TID_NONE)
                continue;
            const pl_graph_tensor *t = pl_graph_get_tensor(g, n->inputs[k]);
            ready = stg_known(t) && (t->producer == PL_NID_NONE || !tail[t->producer]);
        }
        if (ready)
            return topo[i];
    }
    return PL_NID_NONE;
}

static pl_status *stg_build(pl_stage *s, const pl_session_options *options)
{
    const pl_graph *g = s->g;
    size_t nn = pl_graph_node_count(g);
    PL_RETURN_IF_ERROR(stg_options(s, options));
    bool *tail = pl_calloc(nn ? nn : 1, sizeof *tail);
    bool *pre = pl_calloc(nn ? nn : 1, sizeof *pre);
    bool *open_ctl = pl_calloc(nn ? nn : 1, sizeof *open_ctl);
    pl_tid *tail_out = NULL, *pre_in = NULL, *tail_in = NULL;
    size_t n_tail_out = 0, n_pre_in = 0;
    pl_status *st = tail && pre && open_ctl ? NULL : stg_oom();
    for (pl_nid i = 0; st == NULL && i < (pl_nid)nn; i++)
        open_ctl[i] = stg_open_control(s->model->runtime, g, i);
    if (st == NULL) {
        stg_mark_tail(g, open_ctl, tail);
        st = stg_frontier(s, tail, &tail_out, &n_tail_out);
    }
    /* With nothing else to plan by, every small tensor the tail reads is
     * bound, whatever its type or origin (Range from float inputs, a
     * Resize's scales given as an input): a plan per value, but a plan. */
    bool open = false;
    for (size_t i = 0; i < s->n_front; i++)
        open |= s->front[i].by_value ||
                !stg_known(pl_graph_get_tensor(g, s->front[i].t));
    for (size_t i = 0; st == NULL && !open && i < s->n_front; i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, s->front[i].t);
        size_t n;
        s->front[i].by_value = pl_dims_elements(t->dims, t->ndim, &n) && n <= STG_VALUE_MAX;
    }
    size_t n_pre = 0;
    for (size_t i = 0; st == NULL && i < nn; i++)
        n_pre += (pre[i] = !tail[i]);
    if (st == NULL && n_pre == 0) {
        /* A Loop or If whose inputs are all known can run to tell its
         * outputs' shapes: it becomes the pivot, and the tail is planned
         * after it, on what it gave. One whose body can never be planned
         * (open) does at once; one whose outputs are merely unknown only
         * when binding values cannot tell them. */
        pl_nid piv = stg_pivot_candidate(g, tail, open_ctl, true);
        if (piv == PL_NID_NONE) {
            st = stg_check_progress(s, tail);
            if (st != NULL && pl_status_code(st) == PL_CODE_UNSUPPORTED)
                piv = stg_pivot_candidate(g, tail, open_ctl, false);
        }
        if (piv != PL_NID_NONE) {
            pl_status_free(st);
            st = pl_control_create_dynamic(s->model->runtime, g, piv, &s->pivot_ctl);
            s->pivot = piv;
            tail[piv] = false;
            pl_free(s->front);
            pl_free(s->pre_out);
            pl_free(tail_out);
            s->front = NULL;
            s->pre_out = NULL;
            tail_out = NULL;
            s->n_front = s->n_pre_out = n_tail_out = s->tail_nodes = 0;
            s->tail_bodies = false;
            if (st == NULL)
                st = stg_frontier(s, tail, &tail_out, &n_tail_out);
        }
    }
    /* the prefix reads the graph inputs its nodes read */
    for (size_t i = 0; st == NULL && n_pre > 0 && i < pl_graph_input_count(g); i++) {
        pl_tid t = pl_graph_input(g, i);
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
        for (size_t c = 0; st == NULL && c < gt->n_consumers; c++)
            if (!tail[gt->consumers[c]])
                st = stg_add_tid(&pre_in, &n_pre_in, t);
    }
    if (st == NULL)
        st = stg_pin(s, tail);
    pl_graph *pg = NULL;
    if (st == NULL && n_pre > 0)
        st = stg_graph(s, pre, pre_in, n_pre_in, s->pre_out, s->n_pre_out, &pg);
    /* The stage's creation ends its use of the file constants here, its
     * pins taken, nothing dropped yet: the prefix's session is then made
     * alone, so a module that copies a weight lets the core's copy go at
     * once (pl_filedata_leave_keep), and the rest not pinned goes when it
     * is made. */
    if (st == NULL) {
        st = pl_filedata_leave_keep(s->model->filedata, s->pinned, s->n_pinned);
        s->left = true;
    }
    if (st == NULL && n_pre > 0) {
        st = stg_session(s, pg, false, s->model->plan_runs, false, false, &s->prefix);
        pg = NULL;
    }
    if (st == NULL && (tail_in = pl_calloc(s->n_front ? s->n_front : 1, sizeof *tail_in)) == NULL)
        st = stg_oom();
    if (st == NULL) {
        s->spare = pl_calloc(s->n_pre_out ? s->n_pre_out : 1, sizeof *s->spare);
        s->n_spare = pl_calloc(s->n_pre_out ? s->n_pre_out : 1, sizeof *s->n_spare);
        if (s->spare == NULL || s->n_spare == NULL)
            st = stg_oom();
    }
    for (size_t i = 0; st == NULL && i < s->n_front; i++)
        tail_in[i] = s->front[i].t;
    pl_graph_destroy(pg);
    /* (a pivot may leave no tail: its outputs are the graph's) */
    if (st == NULL && (s->pivot == PL_NID_NONE || s->tail_nodes > 0))
        st = stg_graph(s, tail, tail_in, s->n_front, tail_out, n_tail_out, &s->tail);
    pl_free(tail);
    pl_free(pre);
    pl_free(open_ctl);
    pl_free(tail_out);
    pl_free(pre_in);
    pl_free(tail_in);
    return st;
}

pl_status *pl_stage_create(pl_model *model, const pl_session_options *options,
                           pl_stage **out_stage)
{
    *out_stage = NULL;
    pl_stage *s = pl_calloc(1, sizeof *s);
    if (s == NULL)
        return stg_oom();
    pthread_mutex_init(&s->mu, NULL);
    s->pivot = PL_NID_NONE;
    pl_model_retain(model);
    s->model = model;
    s->g = model->graph;
    pl_filedata *f = model->filedata;
    pl_status *st = pl_model_enter_file(model, s->g);
    if (st == NULL)
        st = stg_build(s, options);
    if (!s->left) { /* the build failed before it left (stg_build) */
        pl_status_free(pl_filedata_leave(f, NULL, 0));
        s->n_pinned = 0; /* pinned nothing */
    }
    if (st != NULL) {
        pl_stage_destroy(s);
        return st;
    }
    s->pre_told = s->pre_seen = s->prefix ? pl_session_warning_count(s->prefix) : 0;
    *out_stage = s;
    return NULL;
}

void pl_stage_destroy(pl_stage *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_specs; i++) {
        pl_session_destroy(s->specs[i]->session);
        pl_free(s->specs[i]->key);
        pl_free(s->specs[i]);
    }
    pl_free(s->specs);
    pl_session_destroy(s->prefix);
    pl_control_destroy(s->pivot_ctl);
    pl_graph_destroy(s->tail);
    for (size_t k = 0; k < s->n_skip; k++)
        pl_module_release(s->skip[k]);
    for (size_t b = 0; b < s->n_buckets; b++)
        for (stg_dims *d = s->dims[b], *next; d != NULL; d = next) {
            next = d->next;
            pl_free(d);
        }
    pl_free(s->dims);
    for (size_t i = 0; s->order && i < s->opts.n_order; i++)
        pl_free(s->order[i]);
    for (size_t i = 0; s->pins && i < s->opts.n_pins; i++)
        pl_free(s->pins[i]);
    pl_free(s->order);
    pl_free(s->pins);
    pl_filedata_unpin(s->model->filedata, s->pinned, s->n_pinned);
    pl_free(s->pinned);
    for (size_t k = 0; s->spare != NULL && k < s->n_pre_out; k++) {
        for (size_t i = 0; i < s->n_spare[k]; i++)
            free(s->spare[k][i]);
        pl_free(s->spare[k]);
    }
    pl_free(s->spare);
    pl_free(s->n_spare);
    pl_free(s->front);
    pl_free(s->pre_out);
    for (size_t i = 0; i < s->n_told; i++)
        pl_free(s->told[i]);
    pl_free(s->told);
    pl_free(s->told_hash);
    pthread_mutex_destroy(&s->mu);
    pl_model *m = s->model;
    pl_free(s);
    pl_model_release(m);
}

pl_session *pl_stage_prefix(const pl_stage *s)
{
    return s->prefix;
}

size_t pl_stage_warning_count(pl_stage *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->pre_told + s->n_told;
    pthread_mutex_unlock(&s->mu);
    return n;
}

const char *pl_stage_warning(pl_stage *s, size_t i)
{
    if (i < s->pre_told)
        return pl_session_warning(s->prefix, i);
    pthread_mutex_lock(&s->mu);
    const char *w = i - s->pre_told < s->n_told ? s->told[i - s->pre_told] : NULL;
    pthread_mutex_unlock(&s->mu);
    return w;
}

/* Copies FROM's warnings past *SEEN into S's (held: S->mu), each text
 * once, after WHERE. Out of memory, a warning is left out. */
static void stg_tell(pl_stage *s, pl_session *from, size_t *seen, const char *where)
{
    size_t n = pl_session_warning_count(from);
    for (size_t k = *seen; k < n && s->n_told < STG_TOLD_MAX; k++) {
        const char *text = pl_session_warning(from, k);
        uint64_t h = 1469598103934665603u; /* FNV-1a */
        for (const char *c = text; c != NULL && *c != '\0'; c++)
            h = (h ^ (unsigned char)*c) * 1099511628211u;
        bool known = text == NULL;
        for (size_t i = 0; i < s->n_told && !known; i++)
            known = s->told_hash[i] == h;
        if (known)
            continue;
        if (s->told_hash == NULL)
            s->told_hash = pl_calloc(STG_TOLD_MAX, sizeof *s->told_hash);
        char *line = s->told_hash ? pl_malloc(strlen(where) + strlen(text) + 1) : NULL;
        size_t before = s->n_told;
        if (line != NULL) {
            strcpy(line, where);
            strcat(line, text);
            if (pl_lines_append(&s->told, &s->n_told, line))
                s->told_hash[before] = h;
            pl_free(line);
        }
    }
    *seen = n;
}

/* "name [d0, d1], ..." of the frontier's values VALS, into BUF (CAP). */
static void stg_shapes(const pl_stage *s, const pl_tensor *vals, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->n_front && len + 1 < cap; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "%s%s [", i ? ", " : "",
                                pl_graph_get_tensor(s->g, s->front[i].t)->name);
        for (int32_t d = 0; d < vals[i].ndim && len + 1 < cap; d++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? ", " : "",
                                    (long long)vals[i].shape[d]);
        if (len + 1 < cap)
            len += (size_t)snprintf(buf + len, cap - len, "]");
    }
}

const char *pl_stage_pivot_name(const pl_stage *s)
{
    return s->pivot != PL_NID_NONE ? pl_graph_get_node(s->g, s->pivot)->name : NULL;
}

size_t pl_stage_tail_nodes(const pl_stage *s)
{
    return s->tail_nodes;
}

/* The tail a run used last, or NULL (under s->mu). */
static stg_spec *stg_last_spec(pl_stage *s)
{
    stg_spec *last = NULL;
    for (size_t i = 0; i < s->n_specs; i++)
        if (last == NULL || s->specs[i]->last_use > last->last_use)
            last = s->specs[i];
    return last;
}

void pl_stage_tier(pl_stage *s, bool quick, double *out_plan_ms, double *out_run_ms,
                   uint64_t *out_plans, uint64_t *out_runs)
{
    pthread_mutex_lock(&s->mu);
    const struct stg_tier *t = &s->tier[quick];
    *out_plan_ms = t->plan_ns / 1e6;
    *out_run_ms = t->run_ns / 1e6;
    *out_plans = t->plans;
    *out_runs = t->runs;
    pthread_mutex_unlock(&s->mu);
}

bool pl_stage_last_quick(pl_stage *s)
{
    pthread_mutex_lock(&s->mu);
    stg_spec *last = stg_last_spec(s);
    bool quick = last != NULL && last->quick;
    pthread_mutex_unlock(&s->mu);
    return quick;
}

size_t pl_stage_step_count(pl_stage *s)
{
    pthread_mutex_lock(&s->mu);
    stg_spec *last = stg_last_spec(s);
    size_t n = (s->pivot != PL_NID_NONE) + (last ? pl_session_step_count(last->session) : 0);
    pthread_mutex_unlock(&s->mu);
    return n;
}

void pl_stage_step_info(pl_stage *s, size_t i, const char **out_name, const char **out_backend,
                        uint64_t *out_total_ns, uint64_t *out_runs)
{
    const char *name = NULL, *backend = NULL;
    uint64_t ns = 0, runs = 0;
    if (s->pivot != PL_NID_NONE && i == 0) {
        name = pl_stage_pivot_name(s);
        backend = "control";
        ns = atomic_load(&s->pivot_ns);
        runs = atomic_load(&s->pivot_runs);
    } else {
        i -= s->pivot != PL_NID_NONE;
        pthread_mutex_lock(&s->mu);
        stg_spec *last = stg_last_spec(s);
        if (last != NULL)
            pl_session_step_info(last->session, i, &name, &backend, &ns, &runs);
        pthread_mutex_unlock(&s->mu);
    }
    if (out_name)
        *out_name = name;
    if (out_backend)
        *out_backend = backend;
    if (out_total_ns)
        *out_total_ns = ns;
    if (out_runs)
        *out_runs = runs;
}

size_t pl_stage_spec_count(pl_stage *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_specs;
    pthread_mutex_unlock(&s->mu);
    return n;
}

size_t pl_stage_arena_bytes(pl_stage *s)
{
    size_t bytes = s->prefix != NULL ? pl_session_arena_bytes(s->prefix) : 0;
    pthread_mutex_lock(&s->mu);
    bytes += s->spec_bytes;
    pthread_mutex_unlock(&s->mu);
    return bytes;
}

pl_status *pl_stage_describe_tail(pl_stage *s, char **out_json)
{
    *out_json = NULL;
    pl_status *st = NULL;
    pthread_mutex_lock(&s->mu); /* no eviction while it is read */
    stg_spec *last = NULL;
    for (size_t i = 0; i < s->n_specs; i++)
        if (last == NULL || s->specs[i]->last_use > last->last_use)
            last = s->specs[i];
    if (last != NULL)
        st = pl_session_describe(last->session, out_json);
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* ---- running ------------------------------------------------------------------- */

static const pl_io *stg_find(const pl_io *ios, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ios[i].name != NULL && strcmp(ios[i].name, name) == 0)
            return &ios[i];
    return NULL;
}

/* Caller's input IN for graph input T: its dtype and rank as declared and
 * every declared dim. */
static pl_status *stg_check_input(const pl_graph_tensor *t, const pl_io *in)
{
    const pl_tensor *x = &in->tensor;
    bool ok = PL_DTYPE_EQ(x->dtype, t->dtype) && (t->ndim < 0 || x->ndim == t->ndim) &&
              x->ndim >= 0 && x->ndim <= PL_GRAPH_MAX_RANK && (x->ndim == 0 || x->shape != NULL);
    for (int32_t d = 0; ok && d < x->ndim; d++)
        ok = x->shape[d] >= 0 && (t->ndim < 0 || t->dims[d] < 0 || t->dims[d] == x->shape[d]);
    if (ok)
        return NULL;
    char want[160];
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "input '%s': expected %s%s (-1: any size), got %s of rank %d",
                            t->name, pl_dtype_name(t->dtype),
                            pl_dims_format(t->dims, t->ndim, want, sizeof want),
                            pl_dtype_name(x->dtype), (int)x->ndim);
}

/* Appends LEN bytes at P to the key being built. */
static bool stg_key_put(unsigned char **key, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*cap ? *cap * 2 : 256) + n;
        unsigned char *grown = pl_realloc(*key, c);
        if (grown == NULL)
            return false;
        *key = grown;
        *cap = c;
    }
    memcpy(*key + *len, p, n);
    *len += n;
    return true;
}

/* The tail for the frontier VALS: found, or made and kept (evicting the
 * least recently used one not in use past PL_STAGE_MAX_SPECS). The spec's
 * user count is raised; stg_release lowers it. */
/* Plans the tail for the frontier VALS, expected to serve PLAN_RUNS runs
 * (0: many): *OUT_SESS, and in *OUT_BYTES what it holds beyond its arenas
 * (below). Under the stage's lock. */
static pl_status *stg_plan(pl_stage *s, const pl_tensor *vals, double plan_runs,
                           pl_session **out_sess, size_t *out_bytes)
{
    *out_sess = NULL;
    *out_bytes = 0;
    pl_graph *copy = NULL;
    pl_status *st = pl_graph_copy(s->tail, &copy);
    for (size_t i = 0; st == NULL && i < s->n_front; i++) {
        const stg_front *f = &s->front[i];
        const pl_graph_tensor *t = pl_graph_get_tensor(copy, f->t);
        st = pl_graph_set_type(copy, f->t, t->dtype, vals[i].ndim, vals[i].shape, NULL);
        if (st == NULL && f->by_value) {
            size_t bytes = 0;
            pl_graph_tensor_bytes(pl_graph_get_tensor(copy, f->t), &bytes);
            pl_graph_drop_input(copy, f->t);
            st = pl_graph_set_constant(copy, f->t, vals[i].data, bytes);
        }
    }
    if (st == NULL)
        st = pl_runtime_type_graph(s->model->runtime, copy);
    /* What the tail holds beyond its arenas: the constants made for it
     * (bound values, what typing folded), and on a device module its own
     * copy of the model's constants it reads (each compile copies them into
     * device memory), which count against the budget too. The host modules
     * here keep one laid-out copy of a weight for all compiles (the cpu
     * module's packshare.c, onednn_share.c): counted per tail, a
     * [N, 1024] x [1024, 1024] product's 4 MiB weight held 96 copies for 96
     * values of N (440 MiB RSS) before they shared; since, counting it per
     * tail only evicted: a BERT of 12 MiB of weights and a 31 MiB
     * embedding table kept 6 of 35 lengths, re-planning on every call
     * (13.5 ms a call against 3.0 with all kept). */
    size_t consts = 0, model_consts = 0;
    for (size_t t = 0; st == NULL && t < pl_graph_tensor_count(copy); t++) {
        const pl_graph_tensor *ct = pl_graph_get_tensor(copy, (pl_tid)t);
        if (ct->data != NULL && ct->n_consumers > 0)
            *(ct->data_borrowed ? &model_consts : &consts) += ct->nbytes;
    }
    pl_session *sess = NULL;
    double elems = 0;
    for (size_t i = 0; i < s->n_front; i++) {
        double e = 1;
        for (int32_t d = 0; d < vals[i].ndim; d++)
            e *= (double)vals[i].shape[d];
        elems += e;
    }
    bool skip = plan_runs > 0 && s->n_skip > 0 && s->skip_left > 0 &&
                plan_runs <= 2 * s->skip_runs && elems <= 1.25 * s->skip_elems;
    if (st == NULL) { /* (a quick plan is not rewritten: STG_MANY_RUNS) */
        st = stg_session(s, copy, plan_runs == 0 || s->tail_bodies, plan_runs, skip, true, &sess);
        copy = NULL;
    }
    pl_graph_destroy(copy);
    if (st != NULL)
        return st;
    if (skip) {
        s->skip_left--;
    } else if (plan_runs > 0) {
        /* offered to everyone: remember who took nothing (retained: the
         * tail that was offered them may go before the stage) */
        for (size_t k = 0; k < s->n_skip; k++)
            pl_module_release(s->skip[k]);
        /* (not after a warning: a compile that failed and fell back, say a
         * device out of memory, is for the next plans to try again) */
        s->n_skip = pl_session_warning_count(sess) == 0
                        ? pl_session_idle_modules(sess, s->skip, STG_SKIP_MAX)
                        : 0;
        for (size_t k = 0; k < s->n_skip; k++)
            pl_module_retain(s->skip[k]);
        s->skip_runs = plan_runs;
        s->skip_elems = elems;
        s->skip_left = STG_SKIP_PLANS - 1;
    }
    *out_sess = sess;
    *out_bytes = pl_session_arena_bytes(sess) + consts +
                 (pl_session_host_only(sess) ? 0 : model_consts) + s->tail_nodes * STG_NODE_BYTES;
    return NULL;
}

/* A quick plan (stg_spec.quick) that runs often now: planned again in
 * full, under the lock, while no run uses it. A failure keeps the quick
 * one (it ran) and is not tried again. */
static void stg_promote(pl_stage *s, stg_spec *spec, const pl_tensor *vals)
{
    spec->quick = false;
    pl_session *sess = NULL;
    size_t bytes = 0;
    pl_status *st = stg_plan(s, vals, 0, &sess, &bytes);
    if (st != NULL) {
        pl_status_free(st);
        return;
    }
    pl_session_destroy(spec->session);
    spec->session = sess;
    s->spec_bytes = s->spec_bytes - spec->arena_bytes + bytes;
    spec->arena_bytes = bytes;
}

/* Adds a time of NS to the moving mean *MEAN of *COUNT times. */
static void stg_tier_add(double *mean, double *min, uint64_t *count, uint64_t ns)
{
    *min = *count == 0 || (double)ns < *min ? (double)ns : *min;
    *mean = *count == 0 ? (double)ns : *mean + STG_TIER_WEIGHT * ((double)ns - *mean);
    (*count)++;
}

/* Whether a new signature whose tail is expected to serve RUNS runs (a
 * quick plan's) is planned in full instead (STG_TIER_WEIGHT says why). */
static bool stg_full_pays(const pl_stage *s, double runs)
{
    const struct stg_tier *f = &s->tier[0], *q = &s->tier[1];
    if (q->plans == 0 || q->runs == 0)
        return false;
    if (f->plans == 0 || f->runs == 0)
        return q->run_min_ns >= q->plan_min_ns && f->plans == 0 && q->runs >= STG_EXPLORE_RUNS &&
               (q->plan_min_ns + runs * q->run_min_ns) * STG_EXPLORE_FACTOR >=
                   (double)s->first_plan_ns;
    return f->plan_ns + runs * f->run_ns < q->plan_ns + runs * q->run_ns;
}

static pl_status *stg_spec_get(pl_stage *s, const pl_tensor *vals, stg_spec **out)
{
    unsigned char *key = NULL;
    size_t len = 0, cap = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < s->n_front; i++) {
        const pl_tensor *v = &vals[i];
        ok = stg_key_put(&key, &len, &cap, &v->ndim, sizeof v->ndim) &&
             (v->ndim == 0 ||
              stg_key_put(&key, &len, &cap, v->shape, (size_t)v->ndim * sizeof *v->shape));
        if (ok && s->front[i].by_value) {
            const pl_graph_tensor *t = pl_graph_get_tensor(s->tail, s->front[i].t);
            size_t bytes = 0;
            pl_graph_tensor_bytes(t, &bytes);
            ok = stg_key_put(&key, &len, &cap, v->data, bytes);
        }
    }
    if (!ok) {
        pl_free(key);
        return stg_oom();
    }
    pthread_mutex_lock(&s->mu);
    s->tail_runs++;
    for (size_t i = 0; i < s->n_specs; i++)
        if (s->specs[i]->key_len == len && memcmp(s->specs[i]->key, key, len) == 0) {
            stg_spec *spec = s->specs[i];
            if (spec->quick && spec->uses + 1 >= STG_PROMOTE_USES && spec->users == 0)
                stg_promote(s, spec, vals);
            spec->users++;
            spec->uses++;
            spec->last_use = ++s->clock;
            pthread_mutex_unlock(&s->mu);
            pl_free(key);
            *out = spec;
            return NULL;
        }
    /* a signature evicted as used once, back: keep more of them */
    uint64_t digest = PL_HASH_SEED;
    pl_hash_bytes(&digest, key, len);
    digest |= 1; /* (0 marks an empty slot) */
    if (s->once_kept < STG_ONCE_KEPT)
        s->once_kept = STG_ONCE_KEPT;
    for (size_t g = 0; g < STG_GHOSTS; g++)
        if (s->ghost[g] == digest) {
            s->ghost[g] = 0;
            if (s->once_kept < PL_STAGE_MAX_SPECS)
                s->once_kept *= 2;
            break;
        }
    /* made under the lock: concurrent runs of a new signature wait for one
     * planning instead of each planning it. The first plan serves many
     * runs; later ones as many as the plans before them did on average. */
    double plan_runs = s->tail_plans > 0 ? (double)s->tail_runs / (double)s->tail_plans : 0.0;
    if (plan_runs >= STG_MANY_RUNS || (plan_runs > 0 && stg_full_pays(s, plan_runs)))
        plan_runs = 0;
    bool first = s->tail_plans == 0;
    s->tail_plans++;
    pl_session *sess = NULL;
    size_t bytes = 0;
    uint64_t t0 = pl_now_ns();
    pl_status *st = stg_plan(s, vals, plan_runs, &sess, &bytes);
    uint64_t took = pl_now_ns() - t0;
    if (first)
        s->first_plan_ns = took;
    if (st == NULL && !first && plan_runs == 0 && !s->full_warmed &&
        (double)took <= STG_WARM_FULL_MAX * s->tier[1].plan_ns)
        s->full_warmed = true;
    else if (st == NULL && !first) {
        struct stg_tier *tier = &s->tier[plan_runs > 0];
        s->full_warmed |= plan_runs == 0;
        stg_tier_add(&tier->plan_ns, &tier->plan_min_ns, &tier->plans, took);
    }
    while (st == NULL && s->n_specs > 0) {
        size_t once = 0, lru_once = s->n_specs;
        for (size_t i = 0; i < s->n_specs; i++)
            if (s->specs[i]->uses == 1 && s->specs[i]->users == 0) {
                once++;
                if (lru_once == s->n_specs ||
                    s->specs[i]->last_use < s->specs[lru_once]->last_use)
                    lru_once = i;
            }
        bool full = s->n_specs >= PL_STAGE_MAX_SPECS ||
                    s->spec_bytes + bytes > PL_STAGE_SPEC_ARENA_BYTES;
        if (!full && once < s->once_kept)
            break;
        size_t lru = full ? s->n_specs : lru_once;
        for (size_t i = 0; full && i < s->n_specs; i++)
            if (s->specs[i]->users == 0 &&
                (lru == s->n_specs || s->specs[i]->last_use < s->specs[lru]->last_use))
                lru = i;
        if (lru == s->n_specs)
            break; /* all in use: kept over the limit until they are not */
        if (s->specs[lru]->uses == 1) {
            uint64_t gone = PL_HASH_SEED;
            pl_hash_bytes(&gone, s->specs[lru]->key, s->specs[lru]->key_len);
            s->ghost[s->ghost_at] = gone | 1;
            s->ghost_at = (s->ghost_at + 1) % STG_GHOSTS;
        }
        pl_session_destroy(s->specs[lru]->session);
        s->spec_bytes -= s->specs[lru]->arena_bytes;
        pl_free(s->specs[lru]->key);
        pl_free(s->specs[lru]);
        s->specs[lru] = s->specs[--s->n_specs];
    }
    if (st == NULL) {
        stg_spec **grown = pl_realloc(s->specs, (s->n_specs + 1) * sizeof *grown);
        stg_spec *spec = pl_malloc(sizeof *spec);
        if (grown != NULL)
            s->specs = grown;
        if (grown == NULL || spec == NULL) {
            pl_free(spec);
            st = stg_oom();
        } else {
            *spec = (stg_spec){.key = key, .key_len = len, .session = sess, .users = 1,
                               .uses = 1, .quick = plan_runs > 0,
                               .last_use = ++s->clock, .arena_bytes = bytes};
            s->specs[s->n_specs++] = spec;
            s->spec_bytes += bytes;
            *out = spec;
            key = NULL;
            sess = NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    pl_session_destroy(sess);
    pl_free(key);
    return st;
}

/* A buffer for prefix output K (a spare one, or new; NULL when out of
 * memory), and giving it back. */
static void *stg_take(pl_stage *s, size_t k)
{
    void *buf = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->n_spare[k] > 0)
        buf = s->spare[k][--s->n_spare[k]];
    pthread_mutex_unlock(&s->mu);
    size_t bytes = 0;
    pl_graph_tensor_bytes(pl_graph_get_tensor(s->g, s->pre_out[k]), &bytes);
    if (buf == NULL && posix_memalign(&buf, 64, bytes ? bytes : 64) != 0)
        buf = NULL;
    return buf;
}

static void stg_give_back(pl_stage *s, size_t k, void *buf)
{
    if (buf == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    void **grown = pl_realloc(s->spare[k], (s->n_spare[k] + 1) * sizeof *grown);
    if (grown != NULL) {
        s->spare[k] = grown;
        grown[s->n_spare[k]++] = buf;
        buf = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(buf);
}

static size_t stg_dims_bucket(int32_t ndim, const int64_t *dims, size_t n_buckets)
{
    uint64_t h = PL_HASH_SEED;
    pl_hash_u64(&h, (uint64_t)ndim);
    pl_hash_bytes(&h, dims, ndim > 0 ? (size_t)ndim * sizeof *dims : 0);
    return (size_t)(h & (n_buckets - 1));
}

/* Dims equal to DIMS (NDIM) that live as long as the stage. */
static const int64_t *stg_keep_dims(pl_stage *s, int32_t ndim, const int64_t *dims)
{
    pthread_mutex_lock(&s->mu);
    if (s->n_dims >= 2 * s->n_buckets) { /* grow: a power of two, twice as many */
        size_t nb = s->n_buckets ? 2 * s->n_buckets : 64;
        stg_dims **grown = pl_calloc(nb, sizeof *grown);
        for (size_t b = 0; grown != NULL && b < s->n_buckets; b++)
            for (stg_dims *d = s->dims[b], *next; d != NULL; d = next) {
                next = d->next;
                size_t k = stg_dims_bucket(d->ndim, d->dims, nb);
                d->next = grown[k];
                grown[k] = d;
            }
        if (grown != NULL) {
            pl_free(s->dims);
            s->dims = grown;
            s->n_buckets = nb;
        }
    }
    stg_dims *d = NULL;
    if (s->n_buckets > 0) {
        size_t k = stg_dims_bucket(ndim, dims, s->n_buckets);
        for (d = s->dims[k]; d != NULL; d = d->next)
            if (d->ndim == ndim && (ndim == 0 || memcmp(d->dims, dims, (size_t)ndim * 8) == 0))
                break;
        if (d == NULL && (d = pl_calloc(1, sizeof *d)) != NULL) {
            d->ndim = ndim;
            if (ndim > 0)
                memcpy(d->dims, dims, (size_t)ndim * 8);
            d->next = s->dims[k];
            s->dims[k] = d;
            s->n_dims++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return d != NULL ? d->dims : NULL;
}

/* Runs the tail for the frontier VALS, writing the caller's OUTPUTS the
 * tail computes. */
static pl_status *stg_run_tail(pl_stage *s, const pl_tensor *vals, pl_io *outputs,
                               size_t n_outputs)
{
    stg_spec *spec = NULL;
    PL_RETURN_IF_ERROR(stg_spec_get(s, vals, &spec));
    pl_session *sess = spec->session; /* set once; kept while users > 0 */
    pl_io *ins = pl_calloc(s->n_front ? s->n_front : 1, sizeof *ins);
    pl_io *outs = pl_calloc(n_outputs ? n_outputs : 1, sizeof *outs);
    size_t *slot = pl_calloc(n_outputs ? n_outputs : 1, sizeof *slot);
    pl_status *st = ins && outs && slot ? NULL : stg_oom();
    size_t n_in = 0, n_out = 0;
    for (size_t i = 0; st == NULL && i < s->n_front; i++)
        if (!s->front[i].by_value)
            ins[n_in++] = (pl_io){.name = pl_graph_get_tensor(s->g, s->front[i].t)->name,
                                  .tensor = vals[i]};
    for (size_t i = 0; st == NULL && i < n_outputs; i++) {
        pl_tid t = pl_graph_find_tensor(s->tail, outputs[i].name);
        if (t != PL_TID_NONE && pl_graph_get_tensor(s->tail, t)->is_output) {
            slot[n_out] = i;
            outs[n_out++] = outputs[i];
        }
    }
    uint64_t t0 = pl_now_ns();
    if (st == NULL)
        st = pl_session_run(sess, ins, n_in, outs, n_out);
    uint64_t took = pl_now_ns() - t0;
    for (size_t k = 0; st == NULL && k < n_out; k++) {
        pl_io *o = &outputs[slot[k]];
        bool allocated = o->tensor.data == NULL;
        o->tensor = outs[k].tensor;
        if (allocated) {
            o->tensor.shape = (int64_t *)stg_keep_dims(s, o->tensor.ndim, o->tensor.shape);
            if (o->tensor.shape == NULL && o->tensor.ndim > 0) {
                pl_buffer_free(o->tensor.data);
                o->tensor.data = NULL;
                st = stg_oom();
            }
        }
    }
    pthread_mutex_lock(&s->mu);
    if (pl_session_warning_count(sess) > spec->told) {
        char where[256];
        size_t len = (size_t)snprintf(where, sizeof where, "a tail planned at run time (");
        stg_shapes(s, vals, where + len, sizeof where - len - 4);
        strcat(where, "): ");
        stg_tell(s, sess, &spec->told, where);
    }
    spec->users--;
    if (st == NULL) {
        /* The first run of a tier is not timed: it carries what the process
         * does once at a kernel's first use (the cpu module opening
         * OpenBLAS, oneDNN making its JIT code). Under AddressSanitizer the
         * cpu module's first run of a quick tail took longer than its plan,
         * and one such sample sent the next tails to full plans. */
        struct stg_tier *tier = &s->tier[spec->quick];
        if (tier->ran)
            stg_tier_add(&tier->run_ns, &tier->run_min_ns, &tier->runs, took);
        tier->ran = true;
    }
    pthread_mutex_unlock(&s->mu);
    pl_free(ins);
    pl_free(outs);
    pl_free(slot);
    return st;
}

/* Runs the pivot PN on the caller's INPUTS, the graph's constants and the
 * prefix's outputs PRE: its outputs in buffers of its own (free()), their
 * shapes in DIMS. */
static pl_status *stg_run_pivot(pl_stage *s, const pl_graph_node *pn, const pl_io *inputs,
                                size_t n_inputs, const pl_io *pre, pl_tensor *out,
                                int64_t (*dims)[PL_GRAPH_MAX_RANK])
{
    pl_tensor *in = pl_calloc(pn->n_inputs ? pn->n_inputs : 1, sizeof *in);
    if (in == NULL)
        return stg_oom();
    pl_status *st = NULL;
    for (size_t k = 0; st == NULL && k < pn->n_inputs; k++) {
        in[k].struct_size = sizeof(pl_tensor);
        if (pn->inputs[k] == PL_TID_NONE)
            continue;
        const pl_graph_tensor *t = pl_graph_get_tensor(s->g, pn->inputs[k]);
        const pl_io *src = NULL;
        if (t->data != NULL) {
            in[k] = (pl_tensor){.struct_size = sizeof(pl_tensor), .data = (void *)t->data,
                                .dtype = t->dtype, .ndim = t->ndim, .shape = (int64_t *)t->dims};
            continue;
        }
        src = t->is_input ? stg_find(inputs, n_inputs, t->name)
                          : stg_find(pre, s->n_pre_out, t->name);
        if (src == NULL)
            st = pl_status_create(PL_CODE_INTERNAL, "staging: the pivot's input '%s' is "
                                                    "nowhere",
                                  t->name);
        else
            in[k] = src->tensor;
    }
    if (st == NULL)
        st = pl_control_run_dynamic(s->pivot_ctl, in, pn->n_inputs, out, dims, pn->n_outputs);
    pl_free(in);
    return st;
}

/* Gives the caller's output DST the pivot's output SRC: the buffer itself
 * when the caller left DST without one (*HANDED), else a copy, which must
 * fit. HANDED NULL: always a copy (SRC a caller's input or a constant),
 * into a new buffer where DST has none. */
static pl_status *stg_hand_out(pl_stage *s, const pl_tensor *src, pl_tensor *dst, bool *handed)
{
    size_t have = 0, want = 0, n = 0;
    pl_dims_elements(src->shape, src->ndim, &n);
    have = n * pl_dtype_size(src->dtype);
    if (dst->data == NULL && handed == NULL) {
        pl_tensor copy = *src;
        copy.byte_offset = 0;
        copy.data = pl_hostbuf_get(have);
        if (copy.data == NULL)
            return stg_oom();
        memcpy(copy.data, (const char *)src->data + src->byte_offset, have);
        pl_status *st = stg_hand_out(s, &copy, dst, &(bool){false});
        if (st != NULL)
            pl_hostbuf_put(copy.data);
        return st;
    }
    if (dst->data == NULL) {
        *dst = *src;
        dst->shape = (int64_t *)stg_keep_dims(s, src->ndim, src->shape);
        if (dst->shape == NULL && src->ndim > 0) {
            dst->data = NULL;
            return stg_oom();
        }
        *handed = true;
        return NULL;
    }
    bool fits = dst->ndim == src->ndim && pl_dims_elements(dst->shape, dst->ndim, &n);
    want = n * pl_dtype_size(dst->dtype);
    if (!fits || want != have || !PL_DTYPE_EQ(dst->dtype, src->dtype))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "output buffer holds %zu bytes; the model gives %zu (leave its "
                                "data NULL to have it allocated)",
                                want, have);
    memcpy((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
           have);
    return NULL;
}

/* Graph outputs that are graph inputs or constants (an exporter's
 * pass-through): copied from the caller's input or the constant. */
static pl_status *stg_copy_outputs(pl_stage *s, const pl_io *inputs, size_t n_inputs,
                                   pl_io *outputs, size_t n_outputs)
{
    pl_status *st = NULL;
    size_t i = 0;
    bool *made = pl_calloc(n_outputs ? n_outputs : 1, sizeof *made);
    if (made == NULL)
        return stg_oom();
    for (; st == NULL && i < n_outputs; i++) {
        const pl_graph_tensor *t =
            pl_graph_get_tensor(s->g, pl_graph_find_tensor(s->g, outputs[i].name));
        if (t->producer != PL_NID_NONE)
            continue;
        pl_tensor c = {.struct_size = sizeof c, .data = (void *)t->data, .dtype = t->dtype,
                       .ndim = t->ndim, .shape = (int64_t *)t->dims};
        const pl_io *in = t->is_input ? stg_find(inputs, n_inputs, t->name) : NULL;
        made[i] = outputs[i].tensor.data == NULL;
        st = stg_hand_out(s, in != NULL ? &in->tensor : &c, &outputs[i].tensor, NULL);
        made[i] = made[i] && st == NULL;
    }
    for (size_t k = 0; st != NULL && k < i; k++)
        if (made[k]) {
            pl_hostbuf_put(outputs[k].tensor.data);
            outputs[k].tensor.data = NULL;
        }
    pl_free(made);
    return st;
}

pl_status *pl_stage_run(pl_stage *s, const pl_io *inputs, size_t n_inputs, pl_io *outputs,
                        size_t n_outputs)
{
    const pl_graph *g = s->g;
    for (size_t i = 0; i < n_inputs; i++) {
        pl_tid t = inputs[i].name ? pl_graph_find_tensor(g, inputs[i].name) : PL_TID_NONE;
        if (t == PL_TID_NONE || !pl_graph_get_tensor(g, t)->is_input)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no input named '%s'",
                                    inputs[i].name ? inputs[i].name : "(null)");
    }
    for (size_t i = 0; i < pl_graph_input_count(g); i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_input(g, i));
        const pl_io *in = stg_find(inputs, n_inputs, t->name);
        if (in == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' is missing",
                                    t->name);
        PL_RETURN_IF_ERROR(stg_check_input(t, in));
    }
    for (size_t i = 0; i < n_outputs; i++) {
        pl_tid t = outputs[i].name ? pl_graph_find_tensor(g, outputs[i].name) : PL_TID_NONE;
        if (t == PL_TID_NONE || !pl_graph_get_tensor(g, t)->is_output)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no output named '%s'",
                                    outputs[i].name ? outputs[i].name : "(null)");
    }
    /* the prefix: its graph outputs the caller asked for go to the caller,
     * the frontier into buffers of its own */
    pl_io *pre_in = pl_calloc(n_inputs ? n_inputs : 1, sizeof *pre_in);
    pl_io *pre = pl_calloc(s->n_pre_out ? s->n_pre_out : 1, sizeof *pre);
    bool *mine = pl_calloc(s->n_pre_out ? s->n_pre_out : 1, sizeof *mine);
    pl_tensor *vals = pl_calloc(s->n_front ? s->n_front : 1, sizeof *vals);
    pl_status *st = pre_in && pre && mine && vals ? NULL : stg_oom();
    if (st == NULL && s->prefix != NULL) {
        size_t n_pre_in = 0;
        for (size_t i = 0; i < pl_session_input_count(s->prefix); i++)
            pre_in[n_pre_in++] = *stg_find(inputs, n_inputs, pl_session_input_name(s->prefix, i));
        for (size_t k = 0; st == NULL && k < s->n_pre_out; k++) {
            const pl_graph_tensor *t = pl_graph_get_tensor(g, s->pre_out[k]);
            const pl_io *o = stg_find(outputs, n_outputs, t->name);
            mine[k] = o == NULL;
            if (!mine[k]) {
                pre[k] = *o;
                continue;
            }
            pre[k] = (pl_io){.name = t->name,
                             .tensor = {.data = stg_take(s, k), .ndim = t->ndim,
                                        .dtype = t->dtype, .shape = (int64_t *)t->dims,
                                        .struct_size = sizeof(pl_tensor)}};
            if (pre[k].tensor.data == NULL)
                st = stg_oom();
        }
        if (st == NULL)
            st = pl_session_run(s->prefix, pre_in, n_pre_in, pre, s->n_pre_out);
        pthread_mutex_lock(&s->mu);
        stg_tell(s, s->prefix, &s->pre_seen, "");
        pthread_mutex_unlock(&s->mu);
        for (size_t i = 0; st == NULL && i < n_outputs; i++) {
            const pl_io *o = stg_find(pre, s->n_pre_out, outputs[i].name);
            if (o != NULL)
                outputs[i].tensor = o->tensor;
        }
    }
    /* the pivot, on graph inputs, constants and prefix outputs */
    const pl_graph_node *pn = s->pivot != PL_NID_NONE ? pl_graph_get_node(g, s->pivot) : NULL;
    size_t n_piv_out = pn != NULL ? pn->n_outputs : 0;
    pl_tensor *piv_out = pl_calloc(n_piv_out ? n_piv_out : 1, sizeof *piv_out);
    bool *handed = pl_calloc(n_piv_out ? n_piv_out : 1, sizeof *handed);
    int64_t (*piv_dims)[PL_GRAPH_MAX_RANK] =
        pl_calloc(n_piv_out ? n_piv_out : 1, sizeof *piv_dims);
    if (st == NULL && (piv_out == NULL || handed == NULL || piv_dims == NULL))
        st = stg_oom();
    if (st == NULL && pn != NULL) {
        uint64_t t0 = pl_now_ns();
        st = stg_run_pivot(s, pn, inputs, n_inputs, pre, piv_out, piv_dims);
        atomic_fetch_add(&s->pivot_ns, pl_now_ns() - t0);
        atomic_fetch_add(&s->pivot_runs, 1);
    }
    for (size_t i = 0; st == NULL && i < s->n_front; i++) {
        const char *name = pl_graph_get_tensor(g, s->front[i].t)->name;
        if (s->front[i].from_pivot) {
            vals[i] = piv_out[s->front[i].pivot_out];
            continue;
        }
        const pl_io *src = s->front[i].from_prefix ? stg_find(pre, s->n_pre_out, name)
                                                   : stg_find(inputs, n_inputs, name);
        vals[i] = src->tensor;
    }
    /* graph outputs the pivot gives: its buffers handed to the caller, or
     * copied into the caller's */
    for (size_t i = 0; st == NULL && pn != NULL && i < n_outputs; i++)
        for (size_t o = 0; st == NULL && o < n_piv_out; o++) {
            if (pn->outputs[o] == PL_TID_NONE ||
                strcmp(pl_graph_get_tensor(g, pn->outputs[o])->name, outputs[i].name) != 0)
                continue;
            st = stg_hand_out(s, &piv_out[o], &outputs[i].tensor, &handed[o]);
        }
    if (st == NULL && s->tail != NULL)
        st = stg_run_tail(s, vals, outputs, n_outputs);
    if (st == NULL)
        st = stg_copy_outputs(s, inputs, n_inputs, outputs, n_outputs);
    for (size_t o = 0; piv_out != NULL && handed != NULL && o < n_piv_out; o++)
        if (!handed[o])
            free(piv_out[o].data);
    pl_free(piv_out);
    pl_free(handed);
    pl_free(piv_dims);
    for (size_t k = 0; pre != NULL && mine != NULL && k < s->n_pre_out; k++)
        if (mine[k])
            stg_give_back(s, k, pre[k].tensor.data);
    pl_free(pre_in);
    pl_free(pre);
    pl_free(mine);
    pl_free(vals);
    return st;
}
