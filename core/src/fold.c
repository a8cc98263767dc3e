/* fold.c — constant folding: nodes whose every input is a constant are
 * run once at model load, and what they make becomes a constant.
 *
 * Exporters leave weight transformations in the graph: a Transpose or a
 * Cast of an initializer, DequantizeLinear of int8 weights, a Reshape of a
 * bias, a small chain computing a shape. A backend that needs constant
 * weights (onednn's Conv and MatMul) refuses a node fed by any of them, and
 * a run pays for them every time. The core computes nothing itself: the
 * constant part of the graph becomes a graph of its own, a session of it
 * runs once on the loaded modules (as any model would, in [placement]
 * order), and its outputs replace the nodes that made them.
 *
 * Folded: nodes of the default domain (and of ai.plinth and com.microsoft,
 * whose ops are functions of their inputs) with at least one input (or a
 * Constant node, whose value is an attribute), every present input a
 * constant, fully known output types and no body; not the
 * random-number ops, not a node whose output is a graph output (the model's
 * interface keeps its nodes) or is named by a control-flow body, and not a
 * node whose output is larger than 1 MiB, more than twice its inputs and
 * has more elements than its largest input (Expand, Tile, ConstantOfShape
 * would trade a small model for a large one; a DequantizeLinear of int8
 * weights only widens them), unless every reader takes it as a layer's
 * weights. When the folding session cannot be made or run, the graph stays
 * as it was and the description says why: folding is an optimisation, not
 * a reason to refuse a model. Out of memory is the exception: the load
 * fails with it, as it would anywhere else. */
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "cache.h"
#include "filedata.h"
#include "fold.h"
#include "graph_view.h"
#include "status.h"
#include "strtab.h"

/* Ops whose output is not a function of their inputs. */
static bool pl_fold_random(const char *op)
{
    static const char *const ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                      "RandomUniformLike", "Multinomial", "Bernoulli"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (strcmp(op, ops[k]) == 0)
            return true;
    return false;
}

static bool pl_fold_static(const pl_graph_tensor *t, size_t *out_bytes)
{
    if (t->dtype.lanes == 0 || t->ndim < 0)
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->dims[d] < 0)
            return false;
    return pl_graph_tensor_bytes(t, out_bytes);
}

/* Elements of static tensor T. */
static size_t pl_fold_elems(const pl_graph_tensor *t)
{
    size_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++)
        n *= (size_t)t->dims[d];
    return n;
}

/* Whether every reader of T reads it as a layer's parameters (a Conv's or
 * Gemm's weights and bias, a MatMul's B, a normalisation's scale, a
 * recurrent layer's weights), or is arithmetic or a reshape whose result
 * is read so (a BatchNormalization folded into the weights multiplies
 * them first), DEPTH levels deep at most: the backends that need those
 * constant keep them as constants anyway, in their own layouts. */
static bool pl_fold_weights_only(const pl_graph *g, pl_tid t, int depth)
{
    static const char *const through[] = {"Mul", "Add", "Sub", "Div", "Reshape", "Transpose",
                                          "Cast", "Unsqueeze", "Squeeze", "Identity"};
    static const struct {
        const char *op;
        unsigned inputs; /* bit k: input k is a parameter */
    } params[] = {
        {"Conv", 0x6}, {"ConvTranspose", 0x6}, {"Gemm", 0x6}, {"MatMul", 0x2},
        {"BatchNormalization", 0x1e}, {"InstanceNormalization", 0x6},
        {"LayerNormalization", 0x6}, {"PRelu", 0x2}, {"LSTM", 0x8e}, {"GRU", 0xe},
        {"RNN", 0xe},
    };
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    if (gt->n_consumers == 0)
        return false;
    for (size_t c = 0; c < gt->n_consumers; c++) {
        const pl_graph_node *n = pl_graph_get_node(g, gt->consumers[c]);
        bool passes = false;
        for (size_t k = 0; depth > 0 && n->domain[0] == '\0' && k < sizeof through / sizeof *through; k++)
            passes = passes || strcmp(n->op, through[k]) == 0;
        if (passes && n->n_outputs == 1 && n->outputs[0] != PL_TID_NONE &&
            !pl_graph_get_tensor(g, n->outputs[0])->is_output &&
            pl_fold_weights_only(g, n->outputs[0], depth - 1))
            continue;
        unsigned mask = 0;
        for (size_t k = 0; k < sizeof params / sizeof *params; k++)
            if (n->domain[0] == '\0' && strcmp(n->op, params[k].op) == 0)
                mask = params[k].inputs;
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == t && (k >= 32 || !(mask & (1u << k))))
                return false;
    }
    return true;
}

/* Whether node N can be folded, given which tensors are (or will be)
 * constant; NAMED marks the tensors bodies name. */
static bool pl_fold_node(const pl_graph *g, const pl_graph_node *n, const bool *is_const,
                         const bool *named)
{
    /* ONNX's ops, Plinth's own (ai.plinth: TableLookup8, the padded
     * NonMaxSuppression and Unique) and ONNX Runtime's contrib ops a module
     * registered (a table pl_alg_lut builds from QLinearSigmoid and
     * QLinearMul): functions of their inputs all. Other domains are a
     * vendor's, whose ops need not be. */
    bool pure = n->domain[0] == '\0' || strcmp(n->domain, "ai.onnx") == 0 ||
                strcmp(n->domain, "ai.plinth") == 0 || strcmp(n->domain, "com.microsoft") == 0;
    if (!pure || pl_fold_random(n->op) || pl_strings_text_op(n->domain, n->op))
        return false; /* (text ops read the run's strings: strtab.h) */
    size_t present = 0, in_bytes = 0, out_bytes = 0, in_elems = 0, out_elems = 0;
    for (size_t k = 0; k < n->n_inputs; k++) {
        if (n->inputs[k] == PL_TID_NONE)
            continue;
        if (!is_const[n->inputs[k]])
            return false;
        size_t b = 0;
        if (!pl_fold_static(pl_graph_get_tensor(g, n->inputs[k]), &b))
            return false;
        in_bytes += b;
        size_t e = pl_fold_elems(pl_graph_get_tensor(g, n->inputs[k]));
        in_elems = e > in_elems ? e : in_elems;
        present++;
    }
    if (present == 0 && strcmp(n->op, "Constant") != 0)
        return false;
    for (size_t a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].kind == PL_ATTR_GRAPH || n->attrs[a].kind == PL_ATTR_GRAPHS)
            return false;
    for (size_t o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] == PL_TID_NONE)
            continue;
        const pl_graph_tensor *t = pl_graph_get_tensor(g, n->outputs[o]);
        size_t b = 0;
        if (t->is_output || named[n->outputs[o]] || !pl_fold_static(t, &b))
            return false;
        out_bytes += b;
        size_t e = pl_fold_elems(t);
        out_elems = e > out_elems ? e : out_elems;
    }
    /* A node that makes no more elements than its largest input (an
     * elementwise op, a Transpose, a Cast or DequantizeLinear that only
     * widens the type) is folded whatever its size: left in the graph, the
     * DequantizeLinear of a QDQ model's int8 weights (4x its bytes) was
     * computed on every run and kept its Conv off onednn (resnet18 at
     * 224x224: 39 ms a run against ONNX Runtime's 4.5). */
    if (out_bytes <= ((size_t)1 << 20) || out_bytes <= 2 * in_bytes ||
        (in_elems > 0 && out_elems <= in_elems))
        return true;
    /* A large expansion read only as weights (the onnx package's "light"
     * model-zoo copies make every layer's weights with ConstantOfShape:
     * left in, they kept ResNet-50's convolutions off onednn, 2.7x ONNX
     * Runtime's time) */
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] != PL_TID_NONE && !pl_fold_weights_only(g, n->outputs[o], 4))
            return false;
    return true;
}

/* Marks in NAMED the tensors of G that a body under GRAPH names (GRAPH is
 * G itself, or with IS_BODY one of those bodies). */
static void pl_fold_named(const pl_graph *g, const pl_graph *graph, bool is_body, bool *named)
{
    for (size_t t = 0; is_body && t < pl_graph_tensor_count(graph); t++) {
        pl_tid outer = pl_graph_find_tensor(g, pl_graph_get_tensor(graph, (pl_tid)t)->name);
        if (outer != PL_TID_NONE)
            named[outer] = true;
    }
    for (size_t n = 0; n < pl_graph_node_count(graph); n++) {
        const pl_graph_node *node = pl_graph_get_node(graph, (pl_nid)n);
        for (size_t a = 0; a < node->n_attrs; a++)
            for (size_t b = 0; (node->attrs[a].kind == PL_ATTR_GRAPH ||
                                node->attrs[a].kind == PL_ATTR_GRAPHS) &&
                               b < node->attrs[a].n;
                 b++)
                pl_fold_named(g, node->attrs[a].graphs[b], true, named);
    }
}

/* Runs the folding graph FG (taken) on RT; its outputs, in order, into
 * DATA: where DATA[i] is not NULL (placed in the cache folder's file),
 * else blocks of ALLOC (pl_free'd by the caller, or handed to a graph),
 * written in place by the run, so that a folded weight is never held
 * twice (the run's buffer and the constant's copy: tv_r3d_18's Conv taps,
 * 40 MB, were). */
static pl_status *pl_fold_run(pl_runtime *rt, pl_graph *fg, const char *path, size_t n_out,
                              void **data, pl_allocator alloc)
{
    pl_status *st = pl_runtime_type_graph(rt, fg);
    if (st != NULL) {
        pl_graph_destroy(fg);
        return st;
    }
    pl_model *m = NULL;
    PL_RETURN_IF_ERROR(pl_model_of_graph(rt, fg, pl_strdupf("%s (constant folding)", path), &m));
    m->one_shot = true;
    m->part = true;
    pl_session *s = NULL;
    st = pl_session_create(m, NULL, &s);
    pl_io *outs = st == NULL ? pl_calloc(n_out, sizeof *outs) : NULL;
    if (st == NULL && outs == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
    for (size_t i = 0; st == NULL && i < n_out; i++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(fg, pl_graph_output(fg, i));
        size_t bytes = 0;
        pl_graph_tensor_bytes(t, &bytes);
        if (data[i] == NULL) /* else placed in the cache folder's file */
            data[i] = pl_alloc_malloc(alloc, bytes ? bytes : 1);
        if (data[i] == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
        outs[i] = (pl_io){.name = t->name,
                          .tensor = {.struct_size = sizeof(pl_tensor), .data = data[i],
                                     .ndim = t->ndim, .dtype = t->dtype,
                                     .shape = (int64_t *)t->dims}};
    }
    if (st == NULL)
        st = pl_session_run(s, NULL, 0, outs, n_out);
    pl_free(outs);
    pl_session_destroy(s);
    pl_model_release(m);
    return st;
}

/* The results of folding, kept in the cache folder (filedata.h): G's
 * record of its constants, or one made for the results when G has none
 * (its owner then, *OWN). */
typedef struct pl_fold_store {
    pl_filedata *fd;
    bool own;    /* FD made here: the new graph takes it */
    bool placed; /* DATA lies in the folder's file */
    bool made;   /* ... made at an earlier load: nothing runs */
} pl_fold_store;

/* The key of the folding: the compile cache's key of the folded nodes of G
 * (FOLD) with their constants' digests, under the loaded modules' names
 * and versions, which computed them. */
static bool pl_fold_key(pl_runtime *rt, const pl_graph *g, const bool *fold, pl_cache_key *key)
{
    size_t nn = pl_graph_node_count(g), n = 0;
    pl_nid *nodes = pl_calloc(nn ? nn : 1, sizeof *nodes);
    char mods[1024];
    size_t len = 0;
    mods[0] = '\0';
    for (size_t i = 0; i < rt->n_modules && len < sizeof mods; i++)
        if (rt->modules[i]->status == PL_MODULE_LOADED)
            len += (size_t)snprintf(mods + len, sizeof mods - len, "%s %s;", rt->modules[i]->name,
                                    rt->modules[i]->api.version ? rt->modules[i]->api.version
                                                                : "");
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; nodes != NULL && i < nn; i++)
        if (fold[order[i]])
            nodes[n++] = order[i];
    pl_graph_view *view = NULL;
    pl_status *st = nodes != NULL && len < sizeof mods
                        ? pl_graph_view_create(g, nodes, n, &view)
                        : pl_status_create(PL_CODE_OUT_OF_MEMORY, "keying the folding");
    if (st == NULL)
        st = pl_cache_key_make_named("constant-folding", mods, 0, view, key);
    pl_graph_view_destroy(view);
    pl_free(nodes);
    bool ok = st == NULL;
    pl_status_free(st);
    return ok;
}

/* Places the N_FRONT results of folding FOLD (FRONTIER) of G, loaded from
 * PATH, in the cache folder when there is one and a result is big enough
 * for the core to drop: DATA[i] then, and S says how. */
static void pl_fold_place(pl_runtime *rt, const pl_graph *g, const char *path, const bool *fold,
                          const pl_tid *frontier, size_t n_front, void **data, pl_fold_store *s)
{
    *s = (pl_fold_store){.fd = pl_graph_filedata(g)};
    size_t *bytes = pl_calloc(n_front, sizeof *bytes);
    const char **names = pl_calloc(n_front, sizeof *names);
    bool big = false;
    for (size_t f = 0; bytes != NULL && names != NULL && f < n_front; f++) {
        const pl_graph_tensor *t = pl_graph_get_tensor(g, frontier[f]);
        pl_graph_tensor_bytes(t, &bytes[f]);
        names[f] = t->name;
        big = big || bytes[f] >= PL_FILEDATA_MIN_BYTES;
    }
    const char *dir = rt->config != NULL ? rt->config->cache_dir : "";
    pl_cache_key key;
    if (!big || dir[0] == '\0' || !pl_fold_key(rt, g, fold, &key)) {
        pl_free(bytes);
        pl_free(names);
        return;
    }
    if (s->fd == NULL) {
        pl_status *st = pl_cache_check_dir(dir);
        if (st == NULL)
            st = pl_filedata_create(path, &s->fd);
        pl_status_free(st);
        if (s->fd != NULL) {
            s->own = true;
            pl_filedata_set_cache_hooks(s->fd, (pl_filedata_cache_hooks){
                                                   pl_cache_touch_named, pl_cache_limit_named});
            (void)pl_filedata_open_copy(s->fd, dir); /* (its folder: a model without big
                                                        constants has no copy) */
        }
    }
    /* A new file takes only the room the folder has left: it never evicts
     * a compiled subgraph (a recompile costs more than a folding; VGG-19's
     * 575 MB of folded weights and 733 MB compile in a 1 GB folder evicted
     * each other on every load). An earlier load's file is used whatever. */
    uint64_t max = rt->config->cache_max_bytes, used = 0;
    pl_status *scan = max > 0 ? pl_cache_scan(dir, NULL, NULL, NULL, &used) : NULL;
    if (max > 0 && scan == NULL)
        max = used < max ? max - used : 1;
    pl_status_free(scan);
    s->placed = pl_filedata_made_open(s->fd, key.hex, n_front, bytes, names, max, data,
                                      &s->made);
    if (!s->placed && s->own) {
        pl_filedata_destroy(s->fd);
        *s = (pl_fold_store){0};
    }
    pl_free(bytes);
    pl_free(names);
}

/* Marks in IS_CONST the tensors that are or will be constant, and in FOLD
 * (when not NULL) the nodes that make them; the count of those nodes. */
static size_t pl_fold_select(const pl_graph *g, const bool *named, bool *is_const, bool *fold)
{
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++)
        is_const[t] = pl_graph_get_tensor(g, (pl_tid)t)->data != NULL;
    const pl_nid *order = pl_graph_topo_order(g);
    size_t n_fold = 0;
    for (size_t i = 0; i < pl_graph_node_count(g); i++) {
        const pl_graph_node *node = pl_graph_get_node(g, order[i]);
        if (!pl_fold_node(g, node, is_const, named))
            continue;
        if (fold != NULL)
            fold[order[i]] = true;
        n_fold++;
        for (size_t o = 0; o < node->n_outputs; o++)
            if (node->outputs[o] != PL_TID_NONE)
                is_const[node->outputs[o]] = true;
    }
    return n_fold;
}

bool pl_fold_mark_constants(const pl_graph *g, bool *is_const)
{
    size_t nt = pl_graph_tensor_count(g);
    bool *named = pl_calloc(nt ? nt : 1, sizeof *named);
    if (named == NULL)
        return false;
    pl_fold_named(g, g, false, named);
    pl_fold_select(g, named, is_const, NULL);
    pl_free(named);
    return true;
}

pl_status *pl_fold_constants(pl_runtime *rt, const pl_graph *g, const char *path,
                             pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g);
    bool *is_const = pl_calloc(nt ? nt : 1, sizeof *is_const);
    bool *named = pl_calloc(nt ? nt : 1, sizeof *named);
    bool *fold = pl_calloc(nn ? nn : 1, sizeof *fold);
    pl_tid *frontier = pl_calloc(nt ? nt : 1, sizeof *frontier);
    void **data = pl_calloc(nt ? nt : 1, sizeof *data);
    if (is_const == NULL || named == NULL || fold == NULL || frontier == NULL || data == NULL) {
        pl_free(is_const);
        pl_free(named);
        pl_free(fold);
        pl_free(frontier);
        pl_free(data);
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
    }
    pl_fold_named(g, g, false, named);
    size_t n_fold = pl_fold_select(g, named, is_const, fold);
    /* What the rest of the graph reads from the folded part. */
    size_t n_front = 0;
    for (size_t n = 0; n_fold > 0 && n < nn; n++) {
        if (fold[n])
            continue;
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t k = 0; k < node->n_inputs; k++) {
            pl_tid t = node->inputs[k];
            if (t == PL_TID_NONE || pl_graph_get_tensor(g, t)->data != NULL || !is_const[t])
                continue;
            bool seen = false;
            for (size_t f = 0; f < n_front && !seen; f++)
                seen = frontier[f] == t;
            if (!seen)
                frontier[n_front++] = t;
        }
    }
    pl_status *st = NULL;
    pl_fold_store store = {0};
    if (n_front > 0)
        pl_fold_place(rt, g, path, fold, frontier, n_front, data, &store);
    if (n_front > 0 && !store.made) {
        pl_graph *fg = NULL;
        st = pl_graph_extract(g, fold, frontier, n_front, &fg);
        if (st == NULL)
            st = pl_fold_run(rt, fg, path, n_front, data, pl_graph_allocator(g));
        if (store.placed && !pl_filedata_made_end(store.fd, st == NULL, data)) {
            /* the folder's file failed: made again in memory */
            store.placed = false;
            for (size_t f = 0; f < n_front; f++)
                data[f] = NULL;
            if (st == NULL && (st = pl_graph_extract(g, fold, frontier, n_front, &fg)) == NULL)
                st = pl_fold_run(rt, fg, path, n_front, data, pl_graph_allocator(g));
        }
        if (st != NULL && pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
            /* Not folded: the graph runs as loaded. */
            bool noted = pl_rewrites_add(rewrites, "constant folding skipped: %s",
                                         pl_status_message(st));
            pl_status_free(st);
            st = noted ? NULL
                       : pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                          "out of memory folding constants");
            n_front = 0;
        }
    }
    if (st == NULL && n_front > 0) {
        /* The folded nodes go; the frontier tensors take the results. */
        st = pl_graph_copy_rewritten(g, fold, NULL, out_graph);
        for (size_t f = 0; st == NULL && f < n_front; f++) {
            const pl_graph_tensor *t = pl_graph_get_tensor(g, frontier[f]);
            size_t bytes = 0;
            pl_graph_tensor_bytes(t, &bytes);
            if (store.placed) /* in the folder's file, which its record maps */
                st = pl_graph_set_constant_ref(*out_graph, frontier[f], data[f], bytes);
            else
                st = pl_graph_set_constant_owned(*out_graph, frontier[f], data[f], bytes);
            data[f] = NULL; /* the graph's now, also when refused (freed) */
            char type[64];
            int len = snprintf(type, sizeof type, "%s[", pl_dtype_name(t->dtype));
            for (int32_t d = 0; d < t->ndim && len < (int)sizeof type; d++)
                len += snprintf(type + len, sizeof type - (size_t)len, "%s%lld", d ? "," : "",
                                (long long)t->dims[d]);
            if (len < (int)sizeof type)
                snprintf(type + len, sizeof type - (size_t)len, "]");
            if (st == NULL && !pl_rewrites_add(rewrites, "'%s' (%s) folded into a constant",
                                               t->name, type))
                st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
        }
        if (st == NULL &&
            !pl_rewrites_add(rewrites, "constant folding: %zu node%s %s", n_fold,
                             n_fold == 1 ? "" : "s",
                             store.made     ? "not run: their results kept in the cache folder "
                                              "at an earlier load"
                             : store.placed ? "ran once, their results kept in the cache folder"
                                            : "ran once"))
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory folding constants");
        if (st == NULL && store.own) { /* the record of the results goes with the graph */
            pl_graph_own_filedata(*out_graph, store.fd);
            store.own = false;
        }
        if (st == NULL)
            st = pl_graph_validate(*out_graph);
        if (st != NULL) {
            pl_graph_destroy(*out_graph);
            *out_graph = NULL;
        }
    }
    for (size_t f = 0; !store.placed && f < nt; f++)
        pl_free(data[f]);
    if (store.own)
        pl_filedata_destroy(store.fd);
    pl_free(is_const);
    pl_free(named);
    pl_free(fold);
    pl_free(frontier);
    pl_free(data);
    return st;
}
