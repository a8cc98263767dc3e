/* explain.c — an execution program rendered for people and tools.
 *
 * The JSON form lists the backends in [placement] order, every node's
 * placement (its backend, subgraph, fused chain, the other backends'
 * refusal reasons, whether it was pruned), the subgraphs, the copies at
 * device boundaries, the steps of a run, each device's memory plan and the
 * warnings. The text form is rendered from the JSON one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alloc.h"
#include "control.h"
#include "program.h"
#include "status.h"

static json_t *pl_explain_tensor(const pl_graph *g, pl_tid t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    json_t *dims = json_array();
    for (int32_t d = 0; d < gt->ndim; d++)
        json_array_append_new(dims, json_integer(gt->dims[d]));
    return json_pack("{s:s, s:s, s:o}", "name", gt->name, "dtype", pl_dtype_name(gt->dtype),
                     "shape", dims);
}

static json_t *pl_explain_backends(const pl_partition *part)
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
static json_t *pl_explain_node(const pl_program *p, pl_nid n)
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
            json_array_append_new(outs, pl_explain_tensor(g, node->outputs[o]));
    pl_nid head = pl_partition_fused_into(part, n);
    json_t *entry = json_pack(
        "{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:b}", "node", node->name, "op", node->op,
        "backend", pl_partition_backend(part, (size_t)b)->module->name, "subgraph",
        c >= 0 ? json_integer(c) : json_null(), "fused_into",
        head != PL_NID_NONE ? json_string(pl_graph_get_node(g, head)->name) : json_null(),
        "reasons", reasons, "outputs", outs, "pruned", p->live != NULL && !p->live[n]);
    /* A control-flow node: where its bodies' nodes run (control.c). */
    size_t ws;
    if (entry != NULL && pl_partition_backend(part, (size_t)b)->module == p->rt->control)
        json_object_set_new(entry, "bodies",
                            pl_control_explain_json(
                                (const pl_control *)pl_partition_kernel(part, n, &ws)));
    return entry;
}

static json_t *pl_explain_subgraph(const pl_program *p, const pl_prog_step *st)
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
    return json_pack("{s:i, s:s, s:o, s:o, s:o, s:s}", "id", (int)st->cluster, "backend",
                     st->module->name, "nodes", nodes, "inputs", ins, "outputs", outs,
                     "cache", st->cache ? st->cache : "off");
}

/* The steps of a run, and beside them the subgraphs and copies. */
static void pl_explain_steps(const pl_program *p, json_t *root)
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
            json_array_append_new(subgraphs, pl_explain_subgraph(p, st));
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
}

static json_t *pl_explain_memory(const pl_program *p)
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
    return json_pack("{s:o}", "devices", devices);
}

static json_t *pl_explain_json(const pl_program *p, const char *model_path,
                               const pl_warnings *w)
{
    const pl_graph *g = p->g;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(model_path));
    json_object_set_new(root, "backends", pl_explain_backends(p->part));
    json_t *placement = json_array();
    const pl_nid *order = pl_graph_topo_order(g);
    for (size_t i = 0; i < pl_graph_node_count(g); i++)
        json_array_append_new(placement, pl_explain_node(p, order[i]));
    json_object_set_new(root, "placement", placement);
    pl_explain_steps(p, root);
    json_object_set_new(root, "memory", pl_explain_memory(p));
    json_t *warnings = json_array();
    for (size_t i = 0; i < w->n; i++)
        json_array_append_new(warnings, json_string(w->items[i]));
    json_object_set_new(root, "warnings", warnings);
    return root;
}

static const char *pl_js(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static long long pl_ji(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* The placement of a control-flow node's bodies, indented under it. */
static void pl_explain_text_bodies(FILE *f, json_t *bodies, int depth)
{
    size_t i, k;
    json_t *b, *p;
    json_array_foreach(bodies, i, b)
    {
        fprintf(f, "%*s%s:\n", 6 + 2 * depth, "",
                json_string_value(json_object_get(b, "attribute")));
        json_array_foreach(json_object_get(b, "placement"), k, p)
        {
            fprintf(f, "%*s%-28s %-20s -> %s\n", 8 + 2 * depth, "",
                    json_string_value(json_object_get(p, "node")),
                    json_string_value(json_object_get(p, "op")),
                    json_string_value(json_object_get(p, "backend")));
            json_t *nested = json_object_get(p, "bodies");
            if (json_is_array(nested))
                pl_explain_text_bodies(f, nested, depth + 2);
        }
    }
}

static void pl_explain_text_placement(FILE *f, json_t *root)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "placement"), i, p)
    {
        json_t *sg = json_object_get(p, "subgraph");
        char sub[32] = "";
        if (json_is_integer(sg))
            snprintf(sub, sizeof sub, " [subgraph %d]", (int)json_integer_value(sg));
        json_t *into = json_object_get(p, "fused_into");
        fprintf(f, "  %-28s %-20s -> %s%s%s%s%s\n", pl_js(p, "node"), pl_js(p, "op"),
                pl_js(p, "backend"), sub, json_is_string(into) ? ", fused into " : "",
                json_is_string(into) ? json_string_value(into) : "",
                json_is_true(json_object_get(p, "pruned"))
                    ? ", pruned (no graph output depends on it)"
                    : "");
        const char *key;
        json_t *r;
        json_object_foreach(json_object_get(p, "reasons"), key, r)
        {
            const char *text = json_string_value(r);
            size_t kl = strlen(key);
            bool named = strncmp(text, key, kl) == 0 && text[kl] == ':';
            fprintf(f, "      refused by %s%s%s\n", named ? "" : key, named ? "" : ": ", text);
        }
        if (json_is_array(json_object_get(p, "bodies")))
            pl_explain_text_bodies(f, json_object_get(p, "bodies"), 0);
    }
}

static void pl_explain_text_rest(FILE *f, json_t *root)
{
    json_t *c;
    size_t i;
    if (json_array_size(json_object_get(root, "copies")) > 0) {
        fprintf(f, "\ncopies at boundaries:\n");
        json_array_foreach(json_object_get(root, "copies"), i, c)
            fprintf(f, "  %s: %s -> %s, %lld bytes\n", pl_js(c, "tensor"), pl_js(c, "from"),
                    pl_js(c, "to"), pl_ji(c, "bytes"));
    }
    fprintf(f, "\nsteps of a run:\n");
    json_t *st;
    json_array_foreach(json_object_get(root, "steps"), i, st)
        fprintf(f, "  %2zu  %s  [on %s]\n", i, pl_js(st, "name"), pl_js(st, "device"));
    fprintf(f, "\nmemory plan:\n");
    json_t *d;
    json_array_foreach(json_object_get(json_object_get(root, "memory"), "devices"), i, d)
    {
        long long arena = pl_ji(d, "arena_bytes"), lb = pl_ji(d, "lower_bound_bytes");
        fprintf(f, "  %-16s arena %lld B, lower bound %lld B, naive %lld B", pl_js(d, "device"),
                arena, lb, pl_ji(d, "naive_bytes"));
        if (lb > 0)
            fprintf(f, ", arena/lower bound %.4f", (double)arena / (double)lb);
        fprintf(f, "\n");
    }
    json_t *w;
    json_array_foreach(json_object_get(root, "warnings"), i, w)
        fprintf(f, "warning: %s\n", json_string_value(w));
}

static char *pl_explain_text(const char *model_path, json_t *root)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f == NULL)
        return NULL;
    fprintf(f, "model: %s\n", model_path);
    fprintf(f, "backends in order:");
    json_t *b;
    size_t i;
    json_array_foreach(json_object_get(root, "backends"), i, b)
        fprintf(f, " %s:%d (%s)", pl_js(b, "module"), (int)pl_ji(b, "device"), pl_js(b, "mode"));
    fprintf(f, "\n\nplacement:\n");
    pl_explain_text_placement(f, root);
    pl_explain_text_rest(f, root);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

pl_status *pl_program_explain(const pl_program *p, const char *model_path,
                              const pl_warnings *warnings, bool as_json, char **out_text)
{
    *out_text = NULL;
    json_t *root = pl_explain_json(p, model_path, warnings);
    if (root == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory explaining a session");
    char *text = as_json ? json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                         : pl_explain_text(model_path, root);
    json_decref(root);
    if (text != NULL)
        *out_text = pl_xstrdup(text);
    free(text);
    return *out_text ? NULL
                     : pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                        "out of memory explaining a session");
}
