/* tools/explain_text.c — `plinth explain` as text. The core describes a
 * session as JSON (pl_session_describe); how that reads for people is the
 * tool's business, so this is the only place that knows the layout of the
 * text form. Keys the description lacks print as "?": the text never
 * fails on a description from a newer core. */
#include "explain_text.h"

#include <stdbool.h>
#include <string.h>

#include <jansson.h>

/* O's string KEY, or "?" where the description lacks it. */
static const char *pl_js(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s != NULL ? s : "?";
}

static long long pl_ji(json_t *o, const char *key)
{
    return (long long)json_integer_value(json_object_get(o, key));
}

/* The placement of a control-flow node's bodies, indented under it. */
static void pl_text_bodies(FILE *f, json_t *bodies, int depth)
{
    size_t i, k;
    json_t *b, *p;
    json_array_foreach(bodies, i, b)
    {
        fprintf(f, "%*s%s:\n", 6 + 2 * depth, "",
                json_string_value(json_object_get(b, "attribute")));
        json_array_foreach(json_object_get(b, "placement"), k, p)
        {
            fprintf(f, "%*s%-28s %-20s -> %s\n", 8 + 2 * depth, "", pl_js(p, "node"),
                    pl_js(p, "op"), pl_js(p, "backend"));
            json_t *nested = json_object_get(p, "bodies");
            if (json_is_array(nested))
                pl_text_bodies(f, nested, depth + 2);
        }
    }
}

static void pl_text_placement(FILE *f, json_t *root)
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
            const char *text = json_is_string(r) ? json_string_value(r) : "?";
            size_t kl = strlen(key);
            bool named = strncmp(text, key, kl) == 0 && text[kl] == ':';
            fprintf(f, "      refused by %s%s%s\n", named ? "" : key, named ? "" : ": ", text);
        }
        if (json_is_array(json_object_get(p, "bodies")))
            pl_text_bodies(f, json_object_get(p, "bodies"), 0);
    }
}

static void pl_text_rest(FILE *f, json_t *root)
{
    json_t *c;
    size_t i;
    if (json_array_size(json_object_get(root, "copies")) > 0) {
        fprintf(f, "\ncopies at boundaries:\n");
        json_array_foreach(json_object_get(root, "copies"), i, c)
            fprintf(f, "  %s: %s -> %s, %lld bytes\n", pl_js(c, "tensor"), pl_js(c, "from"),
                    pl_js(c, "to"), pl_ji(c, "bytes"));
    }
    json_t *sg;
    bool estimated = false;
    json_array_foreach(json_object_get(root, "subgraphs"), i, sg)
    {
        json_t *e = json_object_get(sg, "estimate");
        if (!json_is_object(e))
            continue;
        if (!estimated)
            fprintf(f, "\nestimates (what choose = cost weighs), per run:\n");
        estimated = true;
        fprintf(f,
                "  subgraph %lld (%s): %.1f us (compute %.1f, launch %.1f, boundary %.1f, "
                "thread handoff %.1f)",
                pl_ji(sg, "id"), pl_js(sg, "backend"),
                json_number_value(json_object_get(e, "total_us")),
                json_number_value(json_object_get(e, "compute_us")),
                json_number_value(json_object_get(e, "launch_us")),
                json_number_value(json_object_get(e, "boundary_us")),
                json_number_value(json_object_get(e, "handoff_us")));
        if (json_is_string(json_object_get(e, "alternative")))
            fprintf(f, "; on %s instead: %.1f us", pl_js(e, "alternative"),
                    json_number_value(json_object_get(e, "alternative_us")));
        else
            fprintf(f, "; no other backend takes all its nodes");
        fprintf(f, "\n");
    }
    const char *executor = pl_js(root, "executor");
    fprintf(f, "\nsteps of a run (%s):\n",
            strcmp(executor, "caller") == 0
                ? "one after another in the caller; a pinned-thread module's there too "
                  "when it allows it, else on its worker"
                : "pushed to the dependency engine");
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
    json_t *fc = json_object_get(json_object_get(root, "memory"), "file_constants");
    if (fc != NULL && pl_ji(fc, "resident_bytes") + pl_ji(fc, "dropped_bytes") > 0)
        fprintf(f,
                "  weights from the model file: %lld B held by the core (%lld B of them read "
                "in place by this session), %lld B dropped (the modules keep their own "
                "copies)\n",
                pl_ji(fc, "resident_bytes"), pl_ji(fc, "read_in_place_bytes"),
                pl_ji(fc, "dropped_bytes"));
    long long mapped = pl_ji(json_object_get(root, "memory"), "cache_mapped_bytes");
    if (mapped > 0)
        fprintf(f, "  compiled-subgraph cache entries read in place: %lld B mapped\n", mapped);
    json_t *w;
    json_array_foreach(json_object_get(root, "warnings"), i, w)
        fprintf(f, "warning: %s\n", json_is_string(w) ? json_string_value(w) : "?");
}

int pl_explain_text_write(FILE *f, const char *json)
{
    json_error_t err;
    json_t *root = json_loads(json, 0, &err);
    if (!json_is_object(root)) {
        fprintf(stderr, "plinth: the session description is not a JSON object (%s)\n",
                root == NULL ? err.text : "another JSON value");
        json_decref(root);
        return -1;
    }
    fprintf(f, "model: %s\n", pl_js(root, "model"));
    fprintf(f, "backends in order:");
    json_t *b;
    size_t i;
    json_array_foreach(json_object_get(root, "backends"), i, b)
        fprintf(f, " %s:%d (%s)", pl_js(b, "module"), (int)pl_ji(b, "device"), pl_js(b, "mode"));
    fprintf(f, "\n");
    json_t *o;
    if (json_array_size(json_object_get(root, "optimizations")) > 0) {
        fprintf(f, "\ngraph optimisation:\n");
        json_array_foreach(json_object_get(root, "optimizations"), i, o)
            fprintf(f, "  %s\n", json_is_string(o) ? json_string_value(o) : "?");
    }
    fprintf(f, "\nplacement:\n");
    pl_text_placement(f, root);
    /* a staged session: the rest is placed once a run's shapes are known */
    json_t *staged = json_object_get(root, "staged");
    if (json_is_object(staged) && pl_ji(staged, "tail_nodes") > 0) {
        fprintf(f,
                "\nplaced at run time: %lld node(s) whose shapes only a run gives (a staged "
                "session)",
                pl_ji(staged, "tail_nodes"));
        if (json_is_string(json_object_get(staged, "run_to_know")))
            fprintf(f, ", after '%s' runs", pl_js(staged, "run_to_know"));
        fprintf(f, "; `plinth run` times their steps, and a session's description after a run "
                   "(\"staged\" -> \"last_tail\") holds their placement\n");
    }
    pl_text_rest(f, root);
    json_decref(root);
    return 0;
}
