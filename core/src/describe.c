/* describe.c — an execution program described for tools: one JSON
 * document with the backends in [placement] order, every node's placement
 * (its backend, subgraph, fused chain, the other backends' refusal reasons,
 * whether it was pruned, a control-flow node's bodies), the subgraphs, the
 * copies at device boundaries, the steps of a run, each device's memory plan
 * and the warnings (the keys are listed at pl_session_describe in
 * plinth.h). Rendering it for people is the tools' (tools/explain_text.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "control.h"
#include "filedata.h"
#include "program.h"
#include "run.h"
#include "status.h"

static json_t *pl_describe_tensor(const pl_graph *g, pl_tid t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    json_t *dims = json_array();
    for (int32_t d = 0; d < gt->ndim; d++)
        json_array_append_new(dims, json_integer(gt->dims[d]));
    return json_pack("{s:s, s:s, s:o}", "name", gt->name, "dtype", pl_dtype_name(gt->dtype),
                     "shape", dims);
}

static json_t *pl_describe_backends(const pl_partition *part)
{
    json_t *backends = json_array();
    for (size_t b = 0; b < pl_partition_backend_count(part); b++) {
        const pl_part_backend *be = pl_partition_backend(part, b);
        json_array_append_new(backends,
                              json_pack("{s:s, s:i, s:s}", "module", be->module->name,
                                        "device", (int)be->device, "mode",
                                        be->symbolic ? "symbolic" : "imperative"));
    }
    return backends;
}

/* Node N's placement. */
static json_t *pl_describe_node(const pl_program *p, pl_nid n)
{
    const pl_graph *g = p->g;
    const pl_partition *part = p->part;
    const pl_graph_node *node = pl_graph_get_node(g, n);
    int32_t b = pl_partition_node_backend(part, n);
    int32_t c = pl_partition_node_cluster(part, n);
    json_t *reasons = json_object();
    for (size_t k = 0; k < pl_partition_backend_count(part); k++) {
        const char *r = pl_partition_reason(part, n, k);
        if (r != NULL && (int32_t)k != b)
            json_object_set_new(reasons, pl_partition_backend(part, k)->module->name,
                                json_string(r));
    }
    json_t *outs = json_array();
    for (size_t o = 0; o < node->n_outputs; o++)
        if (node->outputs[o] != PL_TID_NONE)
            json_array_append_new(outs, pl_describe_tensor(g, node->outputs[o]));
    pl_nid head = pl_partition_fused_into(part, n);
    json_t *entry = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b}", "node", node->name, "op", node->op,
        "backend", pl_partition_backend(part, (size_t)b)->module->name, "subgraph",
        c >= 0 ? json_integer(c) : json_null(), "fused_into",
        head != PL_NID_NONE ? json_string(pl_graph_get_node(g, head)->name) : json_null(),
        "reasons", reasons, "outputs", outs, "pruned", p->live != NULL && !p->live[n]);
    double est = pl_partition_node_estimate(part, n);
    if (entry != NULL && est >= 0 && head == PL_NID_NONE)
        json_object_set_new(entry, "estimate_us", json_real(est));
    /* A control-flow node: where its bodies' nodes run (control.c). */
    size_t ws;
    if (entry != NULL && pl_partition_backend(part, (size_t)b)->module == p->rt->control)
        json_object_set_new(entry, "bodies",
                            pl_control_describe_json(
                                (const pl_control *)pl_partition_kernel(part, n, &ws)));
    return entry;
}

static json_t *pl_describe_subgraph(const pl_program *p, const pl_prog_step *st)
{
    const pl_graph *g = p->g;
    const pl_part_cluster *cl = pl_partition_cluster(p->part, st->cluster);
    json_t *nodes = json_array();
    for (size_t k = 0; k < cl->n_nodes; k++)
        json_array_append_new(nodes, json_string(pl_graph_get_node(g, cl->nodes[k])->name));
    json_t *ins = json_array(), *outs = json_array();
    for (size_t k = 0; k < st->n_in; k++)
        json_array_append_new(
            ins, json_string(pl_graph_get_tensor(g, p->values[st->in[k]].tensor)->name));
    for (size_t k = 0; k < st->n_out; k++)
        json_array_append_new(
            outs, json_string(pl_graph_get_tensor(g, p->values[st->out[k]].tensor)->name));
    json_t *sg = json_pack("{s:i, s:s, s:o, s:o, s:o, s:s}", "id", (int)st->cluster, "backend",
                           st->module->name, "nodes", nodes, "inputs", ins, "outputs", outs,
                           "cache", st->cache ? st->cache : "off");
    /* The estimates choose = cost weighs (made under choose = first too), in
     * microseconds. */
    if (sg != NULL && cl->est_us >= 0) {
        json_t *est = json_pack("{s:f, s:f, s:f, s:f, s:f}", "total_us", cl->est_us,
                                "compute_us", cl->est.compute_us, "launch_us",
                                cl->est.launch_us, "boundary_us", cl->est.boundary_us,
                                "handoff_us", cl->handoff_us);
        /* the compile's one-off cost, and the runs it was shared over
         * (a staged session's tail) */
        if (est != NULL)
            json_object_set_new(est, "prepare_us", json_real(cl->est.prepare_us));
        double runs = pl_partition_plan_runs(p->part);
        if (est != NULL && runs > 0)
            json_object_set_new(est, "plan_runs", json_real(runs));
        if (est != NULL && cl->alt_backend >= 0) {
            json_object_set_new(est, "alternative_us", json_real(cl->alt_us));
            json_object_set_new(
                est, "alternative",
                json_string(pl_partition_backend(p->part, (size_t)cl->alt_backend)->module->name));
        }
        json_object_set_new(sg, "estimate", est);
    }
    return sg;
}

/* The steps of a run, and beside them the subgraphs and copies. */
static void pl_describe_steps(const pl_program *p, json_t *root)
{
    json_t *subgraphs = json_array(), *copies = json_array(), *steps = json_array();
    for (size_t i = 0; i < p->n_steps; i++) {
        const pl_prog_step *st = &p->steps[i];
        /* The nodes a kernel step runs after its own, fused into it. */
        json_t *fused = json_array();
        for (pl_nid k = st->kind == PL_STEP_KERNEL ? pl_partition_fused_next(p->part, st->node)
                                                   : PL_NID_NONE;
             k != PL_NID_NONE; k = pl_partition_fused_next(p->part, k))
            json_array_append_new(fused, json_string(pl_graph_get_node(p->g, k)->name));
        json_array_append_new(steps, json_pack("{s:s, s:s, s:s, s:o}", "name", st->name,
                                               "backend", pl_program_step_backend(st),
                                               "device", p->devs[st->dev].name, "fused",
                                               fused));
        if (st->kind == PL_STEP_SUBGRAPH) {
            json_array_append_new(subgraphs, pl_describe_subgraph(p, st));
        } else if (st->kind == PL_STEP_COPY) {
            const pl_prog_value *sv = &p->values[st->in[0]], *dv = &p->values[st->out[0]];
            json_array_append_new(
                copies, json_pack("{s:s, s:s, s:s, s:I}", "tensor",
                                  pl_graph_get_tensor(p->g, sv->tensor)->name, "from",
                                  p->devs[sv->dev].name, "to", p->devs[dv->dev].name, "bytes",
                                  (json_int_t)sv->bytes));
        }
    }
    json_object_set_new(root, "subgraphs", subgraphs);
    json_object_set_new(root, "copies", copies);
    json_object_set_new(root, "steps", steps);
    /* who walks the steps of a run (run.c) */
    json_object_set_new(root, "executor",
                        json_string(pl_run_is_sequential(p) ? "caller" : "engine"));
}

static json_t *pl_describe_memory(const pl_program *p, pl_filedata *constants,
                                  const uint32_t *pinned, size_t n_pinned)
{
    json_t *devices = json_array();
    for (size_t d = 0; d < p->n_devs; d++) {
        const pl_plan_device_stats *ps = pl_plan_stats(p->plan, (int32_t)d);
        json_array_append_new(
            devices, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "device", p->devs[d].name,
                               "arena_bytes", (json_int_t)ps->arena_bytes,
                               "lower_bound_bytes", (json_int_t)ps->lower_bound_bytes,
                               "naive_bytes", (json_int_t)ps->naive_bytes, "tensors_planned",
                               (json_int_t)ps->n_tensors, "tensors_in_place",
                               (json_int_t)ps->n_inplace));
    }
    /* The weights read from the model file (filedata.h): what the core
     * holds of them now, and what it dropped because every module that
     * reads them keeps its own copy. */
    size_t resident = 0, dropped = 0, pinned_bytes = 0;
    uint64_t read_back = 0;
    pl_filedata_stats(constants, &resident, &dropped, &read_back);
    for (size_t i = 0; i < n_pinned; i++)
        pinned_bytes += pl_filedata_entry_bytes(constants, pinned[i]);
    /* Cache entries kept mapped for modules that read them in place
     * (PL_CAP_KEEPS_BLOB): file pages, not the process's own memory. */
    size_t mapped = 0;
    for (size_t i = 0; i < p->n_steps; i++)
        mapped += p->steps[i].blob != NULL ? p->steps[i].blob_bytes : 0;
    return json_pack("{s:o, s:{s:I, s:I, s:I, s:I}, s:I}", "devices", devices, "file_constants",
                     "resident_bytes", (json_int_t)resident, "dropped_bytes",
                     (json_int_t)dropped, "read_in_place_bytes", (json_int_t)pinned_bytes,
                     "read_back_bytes", (json_int_t)read_back,
                     "cache_mapped_bytes", (json_int_t)mapped);
}

static json_t *pl_describe_json(const pl_program *p, const char *model_path,
                                const pl_rewrites *rewrites, const pl_warnings *w,
                                pl_filedata *constants, const uint32_t *pinned,
                                size_t n_pinned)
{
    const pl_graph *g = p->g;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(model_path));
    json_t *rewritten = json_array();
    for (size_t i = 0; rewrites != NULL && i < rewrites->n; i++)
        json_array_append_new(rewritten, json_string(rewrites->items[i]));
    json_object_set_new(root, "optimizations", rewritten);
    json_object_set_new(root, "backends", pl_describe_backends(p->part));
    json_t *placement = json_array();
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++)
        json_array_append_new(placement, pl_describe_node(p, order[i]));
    json_object_set_new(root, "placement", placement);
    pl_describe_steps(p, root);
    json_object_set_new(root, "memory", pl_describe_memory(p, constants, pinned, n_pinned));
    json_t *warnings = json_array();
    for (size_t i = 0; i < w->n; i++)
        json_array_append_new(warnings, json_string(w->items[i]));
    json_object_set_new(root, "warnings", warnings);
    return root;
}

pl_status *pl_program_describe(const pl_program *p, const char *model_path,
                               const pl_rewrites *rewrites, const pl_warnings *warnings,
                               pl_filedata *constants, const uint32_t *pinned,
                               size_t n_pinned, char **out_json)
{
    return pl_describe_text(
        pl_describe_json(p, model_path, rewrites, warnings, constants, pinned, n_pinned),
        out_json);
}

pl_status *pl_describe_text(json_t *root, char **out_json)
{
    *out_json = NULL;
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(root);
    if (text != NULL)
        *out_json = pl_xstrdup(text);
    free(text);
    return *out_json ? NULL
                     : pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                        "out of memory describing a session");
}
