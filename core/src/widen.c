/* widen.c — f16 graphs computed in f32 (`[graph] f16 = f32`, the default).
 *
 * A model exported in half precision (`model.half()`, an fp16 conversion
 * of an ONNX file) names every activation and weight f16. No backend here
 * computes in f16 where it is fast: the onednn module takes f32 only, and
 * the cpu module converts per op (tv_resnet18 in f16: 117 ms a run against
 * ONNX Runtime's 47, which inserts Casts around the kernels it lacks). This
 * pass rewrites the graph to compute in f32 between Casts at its edges:
 *
 * - every f16 graph input and constant gets a Cast to f32 that its readers
 *   read instead (folding converts the constants once);
 * - a node that makes f16 from no f16 input (Constant, ConstantOfShape,
 *   EyeLike, a Random* of dtype f16) keeps its output, and a Cast to f32
 *   follows it; a Cast to f16 becomes a Cast to f32;
 * - every other f16 tensor becomes f32, and an f16 graph output is made by
 *   a Cast to f16 of its f32 value, under its own name.
 *
 * Results are those of f32 arithmetic rounded to f16 once at the outputs,
 * not f16 rounding after every op: closer to the exact values, not equal
 * to an f16 evaluation (`f16 = keep` keeps the graph as it is). Graphs
 * with control-flow bodies are left as they are (a body reads outer f16
 * tensors by name). The core computes nothing here: the Casts of
 * constants run at folding, on a module. */
#include <string.h>

#include "alloc.h"
#include "optimize.h"
#include "status.h"

static bool pl_widen_f16(pl_dtype t)
{
    return PL_DTYPE_EQ(t, PL_DTYPE_F16);
}

/* Adds Cast(IN) -> a new tensor named after IN, of TO (ONNX dtype code:
 * 1 f32, 10 f16) and IN's dims, to COPY; its id into *OUT. */
static pl_status *pl_widen_cast(pl_graph *copy, pl_tid in, int64_t to, pl_tid *out)
{
    const pl_graph_tensor *t = pl_graph_get_tensor(copy, in);
    char *name = pl_alg_name(copy, t->name, "f32", false);
    char *node = pl_alg_name(copy, t->name, "to_f32", true);
    pl_status *st = name != NULL && node != NULL
                        ? NULL
                        : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory widening f16");
    pl_nid id = PL_NID_NONE;
    if (st == NULL)
        st = pl_graph_add_node(copy, node, "Cast", "", (const char *const[]){t->name}, 1,
                               (const char *const[]){name}, 1, &id);
    if (st == NULL)
        st = pl_graph_attr_int(copy, id, "to", to);
    if (st == NULL)
        st = pl_graph_tensor_get_or_add(copy, name, out);
    t = pl_graph_get_tensor(copy, in);
    if (st == NULL)
        st = pl_graph_set_type(copy, *out, PL_DTYPE_F32, t->ndim, t->dims,
                               (const char *const *)t->dim_params);
    pl_free(name);
    pl_free(node);
    return st;
}

/* Whether G was widened already (a model's passes run again when an input
 * shape is bound): every f16 tensor is an input or constant that only
 * Casts to f32 read, or an output a Cast to f16 of an f32 tensor makes. */
static bool pl_widen_done(const pl_graph *g)
{
    for (size_t t = 0; t < pl_graph_tensor_count(g); t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
        if (!pl_widen_f16(gt->dtype) || (gt->n_consumers == 0 && !gt->is_output))
            continue; /* read by nobody: a constant folding left behind */
        bool ok = true;
        for (size_t c = 0; ok && c < gt->n_consumers; c++) {
            const pl_graph_node *r = pl_graph_get_node(g, gt->consumers[c]);
            const pl_attr *to = pl_graph_node_attr(r, "to");
            ok = strcmp(r->op, "Cast") == 0 && to != NULL && to->kind == PL_ATTR_INT && to->i == 1;
        }
        if (ok && gt->is_output && gt->producer != PL_NID_NONE) {
            const pl_graph_node *p = pl_graph_get_node(g, gt->producer);
            ok = strcmp(p->op, "Cast") == 0 && p->n_inputs == 1 &&
                 PL_DTYPE_EQ(pl_graph_get_tensor(g, p->inputs[0])->dtype, PL_DTYPE_F32);
        }
        if (!ok)
            return false;
    }
    return true;
}

pl_status *pl_graph_widen_f16(const pl_graph *g, pl_graph **out_graph, pl_rewrites *rewrites)
{
    *out_graph = NULL;
    size_t nn = pl_graph_node_count(g), nt = pl_graph_tensor_count(g), n_f16 = 0;
    for (size_t t = 0; t < nt; t++)
        n_f16 += pl_widen_f16(pl_graph_get_tensor(g, (pl_tid)t)->dtype);
    if (n_f16 == 0 || pl_widen_done(g))
        return NULL;
    for (size_t n = 0; n < nn; n++) {
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        for (size_t a = 0; a < node->n_attrs; a++)
            if (node->attrs[a].kind == PL_ATTR_GRAPH || node->attrs[a].kind == PL_ATTR_GRAPHS)
                return pl_rewrites_add(rewrites, "f16: left as it is (control-flow bodies)")
                           ? NULL
                           : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    }
    pl_graph *copy = NULL;
    pl_status *st = pl_graph_copy(g, &copy);
    /* repl[t]: the f32 tensor t's readers read instead (t itself when none) */
    pl_tid *repl = st == NULL ? pl_calloc(nt ? nt : 1, sizeof *repl) : NULL;
    if (st == NULL && repl == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory widening f16");
    for (size_t t = 0; st == NULL && t < nt; t++)
        repl[t] = (pl_tid)t;
    size_t n_sources = 0, n_outputs = 0, n_casts = 0;
    /* Sources: inputs, constants, and outputs of nodes that make f16 from
     * no f16 input (but Cast, whose target changes instead). */
    for (size_t t = 0; st == NULL && t < nt; t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
        if (!pl_widen_f16(gt->dtype) || (gt->n_consumers == 0 && !gt->is_output))
            continue;
        bool source = gt->is_input || gt->data != NULL;
        if (!source && gt->producer != PL_NID_NONE) {
            const pl_graph_node *p = pl_graph_get_node(g, gt->producer);
            source = strcmp(p->op, "Cast") != 0 || p->domain[0] != '\0';
            for (size_t i = 0; source && i < p->n_inputs; i++)
                source = p->inputs[i] == PL_TID_NONE ||
                         !pl_widen_f16(pl_graph_get_tensor(g, p->inputs[i])->dtype);
        }
        if (source && gt->is_output && gt->producer == PL_NID_NONE)
            continue; /* an input that is also an output: read as it is */
        if (source) {
            st = pl_widen_cast(copy, (pl_tid)t, 1, &repl[t]);
            n_sources++;
        }
    }
    /* Every other f16 tensor becomes f32; f16 outputs are Casts of it. */
    for (size_t t = 0; st == NULL && t < nt; t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(g, (pl_tid)t);
        if (!pl_widen_f16(gt->dtype) || repl[t] != (pl_tid)t || gt->producer == PL_NID_NONE)
            continue;
        if (!gt->is_output) {
            st = pl_graph_set_type(copy, (pl_tid)t, PL_DTYPE_F32, gt->ndim, gt->dims,
                                   (const char *const *)gt->dim_params);
            continue;
        }
        /* the producer writes an f32 twin; a Cast back makes the output */
        char *name = pl_alg_name(copy, gt->name, "f32", false);
        pl_tid twin = PL_TID_NONE;
        st = name != NULL ? pl_graph_tensor_get_or_add(copy, name, &twin)
                          : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory widening f16");
        pl_free(name);
        gt = pl_graph_get_tensor(g, (pl_tid)t);
        if (st == NULL)
            st = pl_graph_set_type(copy, twin, PL_DTYPE_F32, gt->ndim, gt->dims,
                                   (const char *const *)gt->dim_params);
        /* (the copy's producer: an earlier output of the same node already
         * went to its twin there) */
        const pl_graph_node *p = pl_graph_get_node(copy, gt->producer);
        pl_tid outs[16];
        if (st == NULL && p->n_outputs > 16)
            st = pl_status_create(PL_CODE_UNSUPPORTED, "f16: a node of %zu outputs", p->n_outputs);
        for (size_t o = 0; st == NULL && o < p->n_outputs; o++)
            outs[o] = p->outputs[o] == (pl_tid)t ? twin : p->outputs[o];
        if (st == NULL)
            st = pl_graph_node_set_outputs(copy, gt->producer, outs, p->n_outputs);
        char *node = st == NULL ? pl_alg_name(copy, gt->name, "to_f16", true) : NULL;
        pl_nid id = PL_NID_NONE;
        if (st == NULL)
            st = node != NULL
                     ? pl_graph_add_node(copy, node, "Cast", "",
                                         (const char *const[]){pl_graph_get_tensor(copy, twin)->name},
                                         1, (const char *const[]){gt->name}, 1, &id)
                     : pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory widening f16");
        pl_free(node);
        if (st == NULL)
            st = pl_graph_attr_int(copy, id, "to", 10);
        repl[t] = twin;
        n_outputs++;
    }
    /* Readers read the replacements; Casts to f16 cast to f32. */
    for (size_t n = 0; st == NULL && n < nn; n++) {
        const pl_graph_node *node = pl_graph_get_node(g, (pl_nid)n);
        pl_tid ins[64];
        if (node->n_inputs > 64) {
            st = pl_status_create(PL_CODE_UNSUPPORTED, "f16: node '%s' has %zu inputs",
                                  node->name, node->n_inputs);
            break;
        }
        bool changed = false;
        for (size_t i = 0; i < node->n_inputs; i++) {
            ins[i] = node->inputs[i] == PL_TID_NONE ? PL_TID_NONE : repl[node->inputs[i]];
            changed |= ins[i] != node->inputs[i];
        }
        if (changed)
            st = pl_graph_node_set_inputs(copy, (pl_nid)n, ins, node->n_formal_inputs);
        const pl_attr *to = pl_graph_node_attr(node, "to");
        if (st == NULL && strcmp(node->op, "Cast") == 0 && node->domain[0] == '\0' &&
            to != NULL && to->kind == PL_ATTR_INT && to->i == 10) {
            pl_graph_node_remove_attr(copy, (pl_nid)n, "to");
            st = pl_graph_attr_int(copy, (pl_nid)n, "to", 1);
            n_casts++;
        }
    }
    if (st == NULL)
        st = pl_graph_validate(copy);
    if (st == NULL &&
        !pl_rewrites_add(rewrites,
                         "f16: computed in f32 (%zu f16 tensors; %zu inputs, constants and "
                         "constant-making nodes cast to f32, %zu outputs cast back to f16, "
                         "%zu Casts to f16 made Casts to f32)",
                         n_f16, n_sources, n_outputs, n_casts))
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pl_free(repl);
    if (st != NULL) {
        pl_graph_destroy(copy);
        return st;
    }
    *out_graph = copy;
    return NULL;
}
