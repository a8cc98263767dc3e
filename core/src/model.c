/* model.c — a loaded model: its graph, read by a format module (or the
 * JSON reader), validated and with every type inferred by the runtime's
 * opset; saving it in the JSON format. What a model becomes when it runs is
 * a session's (session.c, described by pl_session_describe). */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cache.h"
#include "filedata.h"
#include "fold.h"
#include "graph_builder.h"
#include "log.h"
#include "graph_json.h"
#include "model.h"
#include "strtab.h"
#include "registry.h"
#include "status.h"


/* True when PATH looks like Plinth's JSON format: a .json name, or text
 * that starts with '{'. Only for the message when no module reads it: the
 * json format module makes the same test in its can_import. */
static bool pl_model_looks_json(const char *path, const unsigned char *head, size_t n)
{
    size_t len = strlen(path);
    if (len >= 5 && strcmp(path + len - 5, ".json") == 0)
        return true;
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
        i++;
    return i < n && head[i] == '{';
}

pl_status *pl_model_read_graph(pl_runtime *rt, const char *path, pl_graph **out)
{
    *out = NULL;
    unsigned char head[256];
    size_t n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return pl_status_create(errno == ENOENT ? PL_CODE_NOT_FOUND : PL_CODE_IO_ERROR,
                                "%s: %s", path, strerror(errno));
    n = fread(head, 1, sizeof head, f);
    fclose(f);
    char tried[512] = "";
    size_t tl = 0;
    for (size_t i = 0; i < rt->n_modules; i++) {
        pl_module *m = rt->modules[i];
        if (m->status != PL_MODULE_LOADED || !(m->api.capabilities & PL_CAP_MODEL_IMPORT))
            continue;
        tl += (size_t)snprintf(tried + tl, sizeof tried - (tl < sizeof tried ? tl : sizeof tried),
                               "%s%s", tl ? ", " : "", m->name);
        if (tl >= sizeof tried)
            tl = sizeof tried - 1;
        if (!m->api.can_import(m->ctx, path, head, n))
            continue;
        pl_graph *g = NULL;
        PL_RETURN_IF_ERROR(pl_graph_create(&g));
        pl_graph_builder *b = NULL;
        pl_status *st = pl_graph_builder_create(g, path, &b);
        if (st == NULL && rt->config != NULL)
            pl_graph_builder_set_cache_dir(b, rt->config->cache_dir);
        if (st == NULL) {
            pl_graph_builder_defer_reads(b);
            st = m->api.import_model(m->ctx, path, b);
        }
        if (st == NULL)
            st = pl_graph_builder_read_constants(b, rt->pool);
        pl_graph_builder_destroy(b);
        if (st == NULL)
            st = pl_status_wrap(pl_graph_validate(g), "%s: ", path);
        if (st != NULL) {
            pl_graph_destroy(g);
            return st;
        }
        *out = g;
        return NULL;
    }
    if (pl_model_looks_json(path, head, n))
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "%s: Plinth's JSON graph format, but the json format module "
                                "is not loaded (format modules loaded: %s); add "
                                "libplinth_json.so to [runtime] modules",
                                path, tl ? tried : "none");
    return pl_status_create(PL_CODE_UNSUPPORTED,
                            "%s: no loaded format module reads it (format modules loaded: "
                            "%s)",
                            path, tl ? tried : "none");
}

static void pl_model_free_sources(pl_model *m)
{
    for (size_t i = 0; i < m->n_sources; i++)
        pl_graph_destroy(m->sources[i]);
    pl_free(m->sources);
    m->sources = NULL;
    m->n_sources = 0;
}

/* Lets go of the sources of M's graph that it no longer needs: what the
 * graph borrows from one (folded constants, mappings, the file's record)
 * moves to the graph, and the source goes. A GPT-2 decoder's tail, planned
 * per generation step, kept four copies of its graph per step this way
 * (1.8 MiB a step; 430 MiB of RSS after 200 steps of a 2-layer model). */
static pl_status *pl_model_drop_sources(pl_model *m)
{
    pl_status *st = NULL;
    /* the newest first: it may borrow from the older ones, not they from it */
    for (size_t i = m->n_sources; st == NULL && i-- > 0;) {
        bool taken = false;
        st = pl_graph_take_from(m->graph, m->sources[i], &taken);
        if (taken) {
            pl_graph_destroy(m->sources[i]);
            m->sources[i] = NULL;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < m->n_sources; i++)
        if (m->sources[i] != NULL)
            m->sources[kept++] = m->sources[i];
    m->n_sources = kept;
    return st;
}

/* Moves the notes inference left on M's graph (pl_graph_note) into its
 * description. */
static pl_status *pl_model_take_notes(pl_model *m)
{
    for (size_t i = 0; i < pl_graph_note_count(m->graph); i++)
        if (!pl_rewrites_add(&m->rewrites, "types: %s", pl_graph_note_at(m->graph, i)))
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory describing the model");
    pl_graph_clear_notes(m->graph);
    return NULL;
}

/* Makes NEXT M's graph, the old one kept in M's sources. */
static pl_status *pl_model_push(pl_model *m, pl_graph *next)
{
    pl_graph **grown = pl_realloc(m->sources, (m->n_sources + 1) * sizeof *grown);
    if (grown == NULL) {
        pl_graph_destroy(next);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
    }
    m->sources = grown;
    m->sources[m->n_sources++] = m->graph;
    m->graph = next;
    return NULL;
}

/* Makes NEXT (a tentative rewrite of M's graph) M's graph once its types
 * infer, the old one kept as a source; when they do not, NEXT goes and
 * the rewrite is noted as WHAT with the reason: an optimisation is not a
 * reason to refuse a model. */
static pl_status *pl_model_adopt(pl_runtime *rt, pl_model *m, pl_graph *next, const char *what)
{
    pthread_mutex_lock(&rt->opset_mu);
    pl_status *st = pl_opset_infer(rt->opset, next);
    pthread_mutex_unlock(&rt->opset_mu);
    if (st == NULL)
        return pl_model_push(m, next);
    pl_graph_destroy(next);
    if (pl_status_code(st) == PL_CODE_OUT_OF_MEMORY)
        return st;
    bool noted = pl_rewrites_add(&m->rewrites, "%s: %s", what, pl_status_message(st));
    pl_status_free(st);
    return noted ? NULL : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory optimising the graph");
}

/* Runs PASS (one node a call: pl_graph_inline_ifs, pl_graph_hoist_loop_invariants)
 * on M's graph until it changes nothing, adopting each result (WHAT notes
 * one whose types did not infer, which is then kept as it was); at most 64
 * calls. */
static pl_status *pl_model_adopt_each(pl_runtime *rt, pl_model *m,
                                      pl_status *(*pass)(const pl_graph *, pl_graph **,
                                                         pl_rewrites *),
                                      const char *what)
{
    for (int k = 0; k < 64; k++) {
        pl_graph *next = NULL;
        pl_status *st = pass(m->graph, &next, &m->rewrites);
        if (st != NULL || next == NULL)
            return st;
        const pl_graph *before = m->graph;
        PL_RETURN_IF_ERROR(pl_model_adopt(rt, m, next, what));
        if (m->graph == before)
            return NULL; /* its types did not infer: noted, kept */
    }
    return NULL;
}

/* Runs the optimiser's passes from FIRST on M's graph (validated, types
 * inferred), at the level backend.ini sets: 0 the no-op elimination, 1
 * the rewrites before folding, 2 constant folding, 3 pl_graph_fuse. Each
 * pass that changes the graph replaces it, its source kept. Passes 0, 1
 * and 2 run again after a folding that changed the graph (up to 8 rounds). */
static pl_status *pl_model_rewrite(pl_runtime *rt, pl_model *m, const char *path, int first)
{
    pl_optimize_level level =
        rt->config ? (pl_optimize_level)rt->config->optimize : PL_OPTIMIZE_ALL;
    bool qdq_int8 = rt->config ? rt->config->qdq_int8 : true;
    pthread_mutex_lock(&rt->opset_mu);
    bool qlinear_binary = pl_opset_find(rt->opset, "com.microsoft", "QLinearAdd", 1) != NULL &&
                          pl_opset_find(rt->opset, "com.microsoft", "QLinearMul", 1) != NULL;
    pthread_mutex_unlock(&rt->opset_mu);
    bool f16_as_f32 = rt->config ? rt->config->f16_as_f32 : true, widened = false;
    pl_status *st = NULL;
    int again = 3;  /* more rounds of pass 1 while it changes the graph */
    int refold = 8; /* more rounds of passes 1 and 2 while folding changes it */
    for (int pass = first; st == NULL && pass < 4; pass++) {
        pl_graph *next = NULL;
        if (pass == 0)
            st = pl_graph_optimize(m->graph, level, &next, &m->rewrites);
        else if (pass == 1 && level == PL_OPTIMIZE_ALL && again == 3) {
            /* f16 widened once, before anything reads its types; then
             * Transposes, once per round: the constants they permute are
             * folded below. */
            if (f16_as_f32 && !widened) {
                widened = true;
                st = pl_graph_widen_f16(m->graph, &next, &m->rewrites);
                if (st == NULL && next != NULL)
                    st = pl_model_adopt(rt, m, next, "f16: left as it is");
                next = NULL;
            }
            if (st == NULL)
                st = pl_model_adopt_each(rt, m, pl_graph_hoist_loop_invariants,
                                         "Loop: carried values left as they are");
            if (st == NULL)
                st = pl_model_adopt_each(rt, m, pl_graph_drop_dead_carried,
                                         "Loop: carried values left as they are");
            if (st == NULL)
                st = pl_model_adopt_each(rt, m, pl_graph_hoist_loop_products,
                                         "Loop or Scan: products left in its body (the hoist "
                                         "noted above was undone)");
            if (st == NULL)
                st = pl_model_adopt_each(rt, m, pl_graph_hoist_loop_nodes,
                                         "Loop: nodes left in its body (the move noted "
                                         "above was undone)");
            if (st == NULL)
                st = pl_model_adopt_each(rt, m, pl_graph_inline_ifs, "If: left as it is");
            if (st == NULL)
                st = pl_graph_sum_to_adds(m->graph, &next, &m->rewrites);
            if (st == NULL && next != NULL)
                st = pl_model_adopt(rt, m, next, "Sum: left as it is");
            next = NULL;
            if (st == NULL)
                st = pl_graph_sink_transposes(m->graph, &next, &m->rewrites);
            if (st == NULL && next != NULL)
                st = pl_model_adopt(rt, m, next, "layout: Transposes left as they are");
            next = NULL;
            if (st == NULL)
                st = pl_graph_prefold(m->graph, qdq_int8, qlinear_binary, &next, &m->rewrites);
        } else if (pass == 1 && level == PL_OPTIMIZE_ALL)
            st = pl_graph_prefold(m->graph, qdq_int8, qlinear_binary, &next, &m->rewrites);
        else if (pass == 2 && level == PL_OPTIMIZE_ALL)
            st = pl_fold_constants(rt, m->graph, path, &next, &m->rewrites);
        else if (pass == 3 && level == PL_OPTIMIZE_ALL)
            st = pl_graph_fuse(m->graph, &next, &m->rewrites);
        if (next == NULL)
            continue;
        if ((st = pl_model_push(m, next)) != NULL)
            return st;
        pthread_mutex_lock(&rt->opset_mu);
        st = pl_opset_infer(rt->opset, next);
        pthread_mutex_unlock(&rt->opset_mu);
        if (pass == 1 && again-- > 0)
            pass--;
        else if (pass == 2 && refold-- > 0) {
            /* Folding made shapes known (a Reshape's target was a chain
             * from Shape): their Shapes become constants in pass 1 and
             * fold in turn (one attention block's reshapes feed the
             * next's), and no-ops whose shapes folding made known go
             * (pass 0 again: a Resize to a size computed from Shape). */
            pass = -1;
            again = 3;
        }
    }
    if (st == NULL)
        st = pl_model_drop_sources(m);
    return st;
}

/* Tells M's recorded file constants (filedata.h) which of them its graph
 * still reads: the rest are dropped and stay so. */
static void pl_model_mark_constants(pl_model *m)
{
    size_t n = pl_filedata_count(m->filedata);
    bool *used = n > 0 ? pl_calloc(n, sizeof *used) : NULL;
    if (used == NULL)
        return; /* none recorded, or out of memory: everything stays */
    for (pl_tid t = 0; t < (pl_tid)pl_graph_tensor_count(m->graph); t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(m->graph, t);
        bool read = gt->n_consumers > 0 || gt->is_output; /* a tensor left behind is not */
        long e = read && gt->data != NULL ? pl_filedata_find(m->filedata, gt->data) : -1;
        if (e >= 0)
            used[e] = true;
    }
    pl_filedata_mark_used(m->filedata, used);
    pl_free(used);
}

/* String tensors of M's graph, just read, as ids (strtab.h): the table
 * and the names of the string inputs and outputs move to M. */
static pl_status *pl_model_take_strings(pl_model *m)
{
    bool any = false;
    PL_RETURN_IF_ERROR(pl_strings_encode(m->graph, &any));
    if (!any)
        return NULL;
    const pl_graph *g = m->graph;
    size_t ni = pl_graph_input_count(g), no = pl_graph_output_count(g);
    m->string_io = pl_calloc(ni + no + 1, sizeof *m->string_io);
    if (m->string_io == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for string tensors");
    for (size_t i = 0; i < ni + no; i++) {
        const pl_graph_tensor *t =
            pl_graph_get_tensor(g, i < ni ? pl_graph_input(g, i) : pl_graph_output(g, i - ni));
        if (!t->is_string || pl_model_is_string_io(m, t->name))
            continue;
        if ((m->string_io[m->n_string_io] = pl_xstrdup(t->name)) == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for string tensors");
        m->n_string_io++;
    }
    m->strtab = pl_graph_strtab_take(m->graph);
    return NULL;
}

bool pl_model_is_string_io(const pl_model *m, const char *name)
{
    for (size_t i = 0; m != NULL && name != NULL && i < m->n_string_io; i++)
        if (strcmp(m->string_io[i], name) == 0)
            return true;
    return false;
}

static void pl_model_free_strings(pl_model *m)
{
    for (size_t i = 0; i < m->n_string_io; i++)
        pl_free(m->string_io[i]);
    pl_free(m->string_io);
    pl_strtab_destroy(m->strtab);
    m->string_io = NULL;
    m->n_string_io = 0;
    m->strtab = NULL;
}

static pl_status *pl_model_load_in(pl_runtime *rt, const char *path,
                                   pl_model **out_model)
{
    pl_model *m = pl_alloc_calloc(rt->alloc, 1, sizeof *m);
    if (m == NULL || (m->path = pl_alloc_strdup(rt->alloc, path)) == NULL) {
        pl_free(m);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory loading %s", path);
    }
    pl_status *st = pl_model_read_graph(rt, path, &m->graph);
    /* Graph JSON as a format allows a graph without outputs (a fragment);
     * a model does not: a run of it could return nothing, and every node
     * would be pruned. Checked here, so every format is held to it. */
    if (st == NULL && pl_graph_output_count(m->graph) == 0)
        st = pl_status_create(PL_CODE_INVALID_ARGUMENT,
                              "%s: the graph declares no outputs; a model must name at "
                              "least one graph output (\"outputs\" in Plinth's JSON, "
                              "graph.output in ONNX)",
                              path);
    if (st == NULL)
        st = pl_model_take_strings(m);
    if (st == NULL) {
        pthread_mutex_lock(&rt->opset_mu);
        st = pl_opset_infer(rt->opset, m->graph);
        pthread_mutex_unlock(&rt->opset_mu);
    }
    if (st == NULL)
        st = pl_model_take_notes(m);
    if (st == NULL)
        st = pl_model_rewrite(rt, m, path, 0);
    /* Every message names the file once: importers name it themselves. */
    size_t plen = strlen(path);
    if (st != NULL && !(strncmp(pl_status_message(st), path, plen) == 0 &&
                        pl_status_message(st)[plen] == ':'))
        st = pl_status_wrap(st, "%s: ", path);
    if (st != NULL) {
        pl_rewrites_free(&m->rewrites);
        pl_model_free_strings(m);
        pl_graph_destroy(m->graph);
        pl_model_free_sources(m);
        pl_free(m->path);
        pl_free(m);
        return st;
    }
    atomic_fetch_add(&rt->refs, 1);
    m->runtime = rt;
    m->alloc = rt->alloc;
    m->filedata = pl_graph_filedata(m->graph);
    /* the first load with a cache folder keeps the big constants there */
    const char *kept = pl_filedata_store_copy(m->filedata);
    if (kept != NULL) {
        pl_cache_touch_named(rt->config->cache_dir, kept);
        pl_cache_limit_named(rt->config->cache_dir, rt->config->cache_max_bytes, kept);
    }
    /* and the digests of external data, which it does not copy */
    pl_filedata_store_digests(m->filedata, rt->config->cache_max_bytes);
    /* weights the rewrites replaced (tv_r3d_18: 99 MB of Conv weights cut
     * to their taps) are not held through the sessions */
    pl_model_mark_constants(m);
    pthread_mutex_init(&m->settle_mu, NULL);
    atomic_init(&m->refs, 1);
    *out_model = m;
    return NULL;
}

pl_status *pl_model_load(pl_runtime *rt, const char *path, pl_model **out_model)
{
    *out_model = NULL;
    if (rt == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_model_load: NULL runtime or path");
    /* The model inherits the runtime's allocator; the graph, the format
     * module's calls through the host table and the opset allocate
     * through it as the current one. */
    pl_allocator outer = pl_alloc_scope_enter(rt->alloc);
    pl_status *st = pl_model_load_in(rt, path, out_model);
    pl_alloc_scope_leave(outer);
    return st;
}

pl_status *pl_model_of_graph(pl_runtime *rt, pl_graph *g, char *path, pl_model **out_model)
{
    *out_model = NULL;
    pl_model *m = pl_calloc(1, sizeof *m);
    if (m == NULL || path == NULL) {
        pl_free(m);
        pl_free(path);
        pl_graph_destroy(g);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory making a model");
    }
    atomic_fetch_add(&rt->refs, 1);
    m->runtime = rt;
    m->alloc = rt->alloc;
    m->path = path;
    m->graph = g;
    pthread_mutex_init(&m->settle_mu, NULL);
    atomic_init(&m->refs, 1);
    *out_model = m;
    return NULL;
}

pl_status *pl_model_optimize(pl_model *m)
{
    return pl_model_rewrite(m->runtime, m, m->path, 0);
}

void pl_model_retain(pl_model *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void pl_model_destroy(pl_model *m)
{
    pl_model_release(m);
}

void pl_model_release(pl_model *m)
{
    if (m == NULL || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    pl_graph_destroy(m->graph);
    pl_model_free_sources(m);
    pl_rewrites_free(&m->rewrites);
    pl_model_free_strings(m);
    pl_free(m->path);
    pthread_mutex_destroy(&m->settle_mu);
    pl_runtime *rt = m->runtime;
    pl_free(m);
    pl_runtime_unref(rt);
}

/* The counts of the graph as sessions will see it: the passes a binding
 * left pending run first (an error there leaves the graph as it was; the
 * next session creation reports it). */
static const pl_graph *pl_model_settled_graph(const pl_model *m)
{
    /* settling is a lazy part of the model's own state, not a change a
     * caller of these getters can see */
    pl_status_free(pl_model_settle((pl_model *)(uintptr_t)m));
    return m->graph;
}

size_t pl_model_node_count(const pl_model *m)
{
    return m ? pl_graph_node_count(pl_model_settled_graph(m)) : 0;
}

size_t pl_model_tensor_count(const pl_model *m)
{
    return m ? pl_graph_tensor_count(pl_model_settled_graph(m)) : 0;
}

static pl_status *pl_model_bind_input_in(pl_model *m, const char *name,
                                         int32_t ndim, const int64_t *dims)
{
    if (m == NULL || name == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_bind_input: NULL argument");
    if (atomic_load(&m->refs) > 1)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "%s: bind input shapes before making sessions", m->path);
    pl_tid t = pl_graph_find_tensor(m->graph, name);
    const pl_graph_tensor *gt = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(m->graph, t);
    if (gt == NULL || !gt->is_input)
        return pl_status_create(PL_CODE_NOT_FOUND, "%s: the model has no input named '%s'",
                                m->path, name);
    if (gt->ndim >= 0 && gt->ndim != ndim)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s: input '%s' has rank %d; a shape of rank %d cannot bind it",
                                m->path, name, (int)gt->ndim, (int)ndim);
    for (int32_t d = 0; gt->ndim >= 0 && d < ndim; d++)
        if (gt->dims[d] >= 0 && gt->dims[d] != dims[d])
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: input '%s' has dimension %d fixed at %lld; it cannot "
                                    "be bound to %lld",
                                    m->path, name, (int)d, (long long)gt->dims[d],
                                    (long long)dims[d]);
    for (int32_t d = 0; d < ndim; d++)
        if (dims[d] < 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s: input '%s': a bound dimension must be >= 0", m->path,
                                    name);
    PL_RETURN_IF_ERROR(pl_graph_set_type(m->graph, t, gt->dtype, ndim, dims, NULL));
    pl_runtime *rt = m->runtime;
    pthread_mutex_lock(&rt->opset_mu);
    pl_status *st = pl_opset_infer(rt->opset, m->graph);
    pthread_mutex_unlock(&rt->opset_mu);
    if (st == NULL)
        st = pl_model_take_notes(m);
    /* Dims now known may make shape computations constant and show nodes
     * that compute nothing (a Slice or Reshape to the shape it reads): the
     * passes run again, once all inputs are bound (pl_model_settle). */
    if (st == NULL)
        m->rewrite_pending = true;
    return pl_status_wrap(st, "%s: ", m->path);
}

static pl_status *pl_model_settle_in(pl_model *m)
{
    size_t before = m->rewrites.n;
    /* The passes read weights a closed session may have dropped. */
    pl_status *st = pl_filedata_enter(m->filedata);
    if (st == NULL) {
        st = pl_model_rewrite(m->runtime, m, m->path, 0);
        /* Nothing dropped on the way out: a session is made next (binding
         * shapes is for it), and what it does not pin goes when it is made;
         * dropping here read every weight of the model file twice. */
        pl_status *left = pl_filedata_leave_keep(m->filedata, NULL, 0);
        if (st == NULL)
            pl_model_mark_constants(m);
        if (st == NULL)
            st = left;
        else
            pl_status_free(left);
    }
    if (st == NULL) {
        m->rewrite_pending = false;
        pl_log(&m->runtime->logger, PL_LOG_DEBUG, NULL,
               "%s: the graph passes ran again for the bound input shapes (%zu rewrites)",
               m->path, m->rewrites.n - before);
    }
    return pl_status_wrap(st, "%s: ", m->path);
}

/* Marks in NEED the recorded constants (filedata.h) of G's tensors that
 * its nodes read (or, BODY, of all its tensors: a control-flow body), its
 * outputs and the bodies within it. Not every tensor of G: a staged
 * session's part (pl_graph_extract) keeps the whole model's tensors. */
static void pl_model_mark_file(const pl_filedata *f, const pl_graph *g, bool body, bool *need)
{
    for (pl_tid t = 0; body && t < (pl_tid)pl_graph_tensor_count(g); t++) {
        long e = pl_filedata_find(f, pl_graph_get_tensor(g, t)->data);
        if (e >= 0)
            need[e] = true;
    }
    for (pl_nid i = 0; i < (pl_nid)pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, i);
        for (size_t k = 0; !body && k < n->n_inputs; k++) {
            long e = n->inputs[k] != PL_TID_NONE
                         ? pl_filedata_find(f, pl_graph_get_tensor(g, n->inputs[k])->data)
                         : -1;
            if (e >= 0)
                need[e] = true;
        }
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH)
                for (size_t k = 0; k < n->attrs[a].n; k++)
                    pl_model_mark_file(f, n->attrs[a].graphs[k], true, need);
    }
    for (size_t i = 0; !body && i < pl_graph_output_count(g); i++) {
        long e = pl_filedata_find(f, pl_graph_get_tensor(g, pl_graph_output(g, i))->data);
        if (e >= 0)
            need[e] = true;
    }
}

pl_status *pl_model_enter_file(pl_model *m, const pl_graph *g)
{
    pl_filedata *f = m->filedata;
    size_t n = pl_filedata_count(f);
    bool *need = m->part && n > 0 ? pl_calloc(n, sizeof *need) : NULL;
    if (need == NULL) /* (out of memory too: read back all, as a whole model's) */
        return pl_filedata_enter(f);
    pl_model_mark_file(f, g, false, need);
    pl_status *st = pl_filedata_enter_only(f, need);
    pl_free(need);
    return st;
}

pl_status *pl_model_settle(pl_model *m)
{
    pthread_mutex_lock(&m->settle_mu);
    pl_status *st = NULL;
    if (m->rewrite_pending) {
        pl_allocator outer = pl_alloc_scope_enter(m->alloc);
        st = pl_model_settle_in(m);
        pl_alloc_scope_leave(outer);
    }
    pthread_mutex_unlock(&m->settle_mu);
    return st;
}

pl_status *pl_model_bind_input(pl_model *m, const char *name, int32_t ndim,
                                const int64_t *dims)
{
    if (m == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_bind_input: NULL argument");
    pl_allocator outer = pl_alloc_scope_enter(m->alloc);
    pl_status *st = pl_model_bind_input_in(m, name, ndim, dims);
    pl_alloc_scope_leave(outer);
    return st;
}

pl_status *pl_model_save_json(const pl_model *m, const char *path)
{
    if (m == NULL || path == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_model_save_json: NULL argument");
    if (m->strtab != NULL)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "%s: the model has string tensors, which Plinth's JSON graph "
                                "format does not carry",
                                m->path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    char sidecar[512];
    snprintf(sidecar, sizeof sidecar, "%.*s.weights", (int)(len < 400 ? len : 400), base);
    pl_status *st = pl_model_settle((pl_model *)(uintptr_t)m);
    if (st != NULL)
        return st;
    pl_allocator outer = pl_alloc_scope_enter(m->alloc);
    /* Weights the core dropped (filedata.h) are read back for the save. */
    st = pl_filedata_enter(m->filedata);
    if (st == NULL)
        st = pl_graph_save_json(m->graph, path, sidecar);
    pl_status *left = pl_filedata_leave(m->filedata, NULL, 0);
    if (st == NULL)
        st = left;
    else
        pl_status_free(left);
    pl_alloc_scope_leave(outer);
    return st;
}

void pl_string_free(char *text)
{
    pl_free(text);
}
