/* session.c — the public session object: a model made ready to run.
 *
 * Creation partitions the graph between the backends of [placement]
 * (partition.c), fuses epilogues into imperative kernels where their
 * modules accept (pl_partition_fuse), lowers the partition into an
 * execution program (program.c) and compiles its subgraphs (compile.c). A
 * subgraph whose compile fails goes back to the partitioner (strict = no)
 * and the program is lowered again without it; then its memory is planned.
 * Runs walk the program (run.c); pl_session_describe describes it (describe.c). The
 * modules a session uses stay loaded while it lives. Under choose = cost and
 * measure = yes the first runs are timed, and a subgraph that ran far slower
 * than estimated goes back to the partitioner once (measure.h). */
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "array.h"
#include "control.h"
#include "filedata.h"
#include "graph_view.h"
#include "hostbuf.h"
#include "measure.h"
#include "model.h"
#include "partition.h"
#include "program.h"
#include "registry.h"
#include "run.h"
#include "stage.h"
#include "status.h"
#include "strtab.h"

/* What a session's partition is made from (pl_partition_create's
 * arguments), kept while its first runs are measured (measure.h): a
 * partition made again from it is the one creation made. */
typedef struct pl_sess_recipe {
    pl_part_backend *backends;
    size_t nb;
    pl_part_pin *pins;
    size_t n_pins;
    char **pin_names; /* owned, N_NAMES entries, some NULL */
    size_t n_names;
    int min_nodes;
    bool by_cost;
} pl_sess_recipe;

/* A plan: its partition, program, runner and the file constants its steps
 * read in place (pinned). */
typedef struct pl_sess_plan {
    pl_partition *part;
    pl_program *program;
    pl_runner *runner;
    uint32_t *pinned;
    size_t n_pinned;
} pl_sess_plan;

/* The [placement] settings a session is made with: the configuration's,
 * or the options' where they say so. The strings belong to either and are
 * read during creation only. */
typedef struct pl_sess_place {
    const char *const *order;
    size_t n_order;
    bool order_from_code; /* entries that cannot be used are errors */
    const char *const *pins;
    size_t n_pins;
    bool strict;
    bool choose_by_cost;
    bool measure;
    int min_subgraph_nodes;
    const char *io_device; /* the option, or NULL: the host */
} pl_sess_place;

struct pl_session {
    pl_model *model;
    pl_runtime *rt;
    const pl_graph *g;
    pl_graph_view *view;
    pl_partition *part;
    pl_program *program;
    pl_runner *runner;
    pl_warnings warnings;
    /* The modules the session retained, released after everything else at
     * destruction. Listed at creation so that destruction allocates
     * nothing: a nested session (a control-flow body) may be destroyed
     * while its allocator refuses, and a module never released kept its
     * runtime alive. */
    pl_module **retained;
    size_t n_retained;
    pl_sess_place place; /* during creation */
    pl_module *io_module; /* where inputs and outputs live (retained), or NULL: host */
    int32_t io_device;
    char io_name[80];     /* "host" or "module:device" */
    /* The model's constants read from its file (filedata.h): during
     * creation, per recorded constant, whether one compiled subgraph alone
     * reads it (a module may drop it when done); after, the ones this
     * session reads in place at run time (pinned while it lives). */
    bool entered;         /* pl_filedata_enter called, leave not yet */
    bool *droppable;
    bool *kept;           /* read in place by a compiled subgraph (pinned) */
    uint32_t *pinned;
    size_t n_pinned;
    /* A model whose shapes are not all known: the staged session that runs
     * it (stage.h); everything above stays empty. */
    pl_stage *stage;
    /* Measuring the first runs (measure.h): while MEASURING, runs hold
     * PLAN_LOCK shared, count themselves in MEASURED_RUNS and keep the
     * fastest in RUN_BEST_NS; the run that completes PL_MEASURE_RUNS
     * holds it alone and, in TRIAL 0, weighs the steps' times and, when a
     * subgraph ran slow, puts the plan as made aside (MADE, its fastest
     * run MADE_BEST_NS) and tries one made without it (TRIAL 1); at the
     * end of the trial it keeps the faster. RECIPE makes the partition
     * again. BROKEN: why the plan was lost, which every later run
     * returns. */
    atomic_bool measuring;
    atomic_uint measured_runs;
    atomic_uint window;            /* counts the windows: a run counts in its own */
    atomic_ullong run_best_ns;
    pthread_rwlock_t plan_lock;
    int trial;
    uint64_t made_best_ns;
    pl_sess_plan made;
    pl_sess_recipe recipe;
    char broken[512];
    /* pl_session_profile_nodes(true): every plan's compiled subgraphs time
     * their nodes, whatever measuring does. */
    bool profiling;
};

static pl_status *pl_sess_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory creating a session");
}

/* ---- backends and pins ----------------------------------------------------- */

/* Splits "module" or "module:device" into NAME (of CAP bytes) and
 * *OUT_DEVICE (-1 when no device is named). */
static void pl_sess_split_backend(const char *spec, char *name, size_t cap, int *out_device)
{
    snprintf(name, cap, "%s", spec);
    *out_device = -1;
    char *colon = strchr(name, ':');
    if (colon != NULL) {
        *colon = '\0';
        *out_device = atoi(colon + 1);
    }
}

/* Adds backend NAME:DEVICE to LIST unless it is unusable or already there. */
static void pl_sess_add_backend(pl_session *s, const char *name, int device,
                                pl_part_backend *list, size_t *n)
{
    long idx = pl_runtime_find_module(s->rt, name);
    if (idx < 0)
        return;
    pl_module *m = s->rt->modules[idx];
    if (m->status != PL_MODULE_LOADED || device < 0 || device >= m->device_count)
        return;
    for (size_t k = 0; k < *n; k++)
        if (list[k].module == m && list[k].device == device)
            return;
    bool symbolic = (m->api.capabilities & PL_CAP_SYMBOLIC) != 0;
    bool imperative = (m->api.capabilities & PL_CAP_IMPERATIVE) != 0;
    if (!symbolic && !imperative)
        return;
    /* A module offering both modes is used symbolically. */
    list[*n] = (pl_part_backend){.module = m, .device = device, .symbolic = symbolic};
    (*n)++;
}

/* Why the backend SPEC ("module" or "module:device") of session option
 * OPTION cannot be used, or NULL. */
static pl_status *pl_sess_check_spec(pl_session *s, const char *option, const char *spec)
{
    char name[64];
    int device;
    if (spec == NULL || spec[0] == '\0')
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "session option %s: an entry is empty", option);
    pl_sess_split_backend(spec, name, sizeof name, &device);
    const char *colon = strchr(spec, ':');
    if (colon != NULL) {
        char *end = NULL;
        long d = strtol(colon + 1, &end, 10);
        if (colon[1] == '\0' || *end != '\0' || d < 0 || d > 1 << 20)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "session option %s: '%s': the device after ':' "
                                    "must be a number >= 0", option, spec);
    }
    for (size_t i = 0; i < s->rt->n_modules; i++) {
        const pl_module *m = s->rt->modules[i];
        if (strcmp(m->name, name) != 0)
            continue;
        if (m->status != PL_MODULE_LOADED)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "session option %s: module '%s' is %s: %s", option,
                                    name, pl_module_status_name(m->status), m->reason);
        if (device >= m->device_count)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "session option %s: '%s': module %s has %d "
                                    "device%s", option, spec, name, m->device_count,
                                    m->device_count == 1 ? "" : "s");
        if (!(m->api.capabilities & (PL_CAP_SYMBOLIC | PL_CAP_IMPERATIVE)))
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "session option %s: module '%s' runs no nodes "
                                    "(a format module?)", option, name);
        return NULL;
    }
    return pl_status_create(PL_CODE_NOT_FOUND,
                            "session option %s: no module named '%s' was found", option, name);
}

/* Why the backend SPEC of the options' order cannot be used, or NULL. */
static pl_status *pl_sess_check_backend(pl_session *s, const char *spec)
{
    return pl_sess_check_spec(s, "order", spec);
}

/* The backends of [placement] order, then cpu if the order lacks it. */
static pl_status *pl_sess_backends(pl_session *s, pl_part_backend **out, size_t *out_n)
{
    const pl_sess_place *c = &s->place;
    for (size_t i = 0; c->order_from_code && i < c->n_order; i++)
        PL_RETURN_IF_ERROR(pl_sess_check_backend(s, c->order[i]));
    pl_part_backend *list = pl_calloc(c->n_order + 2, sizeof *list);
    if (list == NULL)
        return pl_sess_oom();
    size_t n = 0;
    for (size_t i = 0; i < c->n_order; i++) {
        char name[64];
        int device;
        pl_sess_split_backend(c->order[i], name, sizeof name, &device);
        bool skip = false;
        for (size_t k = 0; k < s->model->n_skip && c->n_pins == 0; k++)
            skip = skip || strcmp(s->model->skip[k]->name, name) == 0;
        if (!skip)
            pl_sess_add_backend(s, name, device < 0 ? 0 : device, list, &n);
    }
    bool have_cpu = false;
    for (size_t k = 0; k < n; k++)
        have_cpu = have_cpu || strcmp(list[k].module->name, "cpu") == 0;
    if (!have_cpu)
        pl_sess_add_backend(s, "cpu", 0, list, &n);
    /* A graph that runs once (constant folding) is offered to the backends
     * that run op by op first: compiling a subgraph costs more than the
     * one run saves (a batch norm's arithmetic on every weight of a
     * ResNet took 90 ms of oneDNN compiles, against 10 on cpu). */
    for (size_t k = 0, put = 0; s->model->one_shot && k < n; k++)
        if (!list[k].symbolic) {
            pl_part_backend b = list[k];
            memmove(&list[put + 1], &list[put], (k - put) * sizeof *list);
            list[put++] = b;
        }
    /* Control flow (If, Loop, Scan) last: the core's own step (control.c). */
    if (s->rt->control != NULL)
        list[n++] = (pl_part_backend){.module = s->rt->control, .device = 0};
    *out = list;
    *out_n = n;
    return NULL;
}

/* The backend a pin names: "module" is the module's first backend in
 * [placement] order, "module:device" that device's. -1 when none. */
static int32_t pl_sess_pin_backend(const pl_part_backend *backends, size_t nb,
                                   const char *spec)
{
    char name[64];
    int device;
    pl_sess_split_backend(spec, name, sizeof name, &device);
    for (size_t b = 0; b < nb; b++)
        if (strcmp(backends[b].module->name, name) == 0 &&
            (device < 0 || backends[b].device == device))
            return (int32_t)b;
    return -1;
}

/* Whether G, or when DEEP a body of G's at any depth, has node NAME. */
static bool pl_sess_has_node(const pl_graph *g, const char *name, bool deep)
{
    if (pl_graph_find_node(g, name) != PL_NID_NONE)
        return true;
    for (size_t i = 0; deep && i < pl_graph_node_count(g); i++) {
        const pl_graph_node *n = pl_graph_get_node(g, (pl_nid)i);
        for (size_t a = 0; a < n->n_attrs; a++)
            if (n->attrs[a].kind == PL_ATTR_GRAPH || n->attrs[a].kind == PL_ATTR_GRAPHS)
                for (size_t b = 0; b < n->attrs[a].n; b++)
                    if (pl_sess_has_node(n->attrs[a].graphs[b], name, true))
                        return true;
    }
    return false;
}

/* Whether PIN ("node=backend") names a node of G (or, when DEEP, of a
 * body in it). */
static bool pl_sess_pin_here(const pl_graph *g, const char *pin, bool deep)
{
    const char *eq = strrchr(pin, '=');
    char name[512];
    size_t len = eq != NULL ? (size_t)(eq - pin) : strlen(pin);
    if (len >= sizeof name)
        return false;
    memcpy(name, pin, len);
    name[len] = '\0';
    return pl_sess_has_node(g, name, deep);
}

/* The pins of [placement] ("node=backend"), resolved to backends; each
 * pin's node name is a new string in *OUT_NAMES. */
static pl_status *pl_sess_pins(pl_session *s, const pl_part_backend *backends, size_t nb,
                               pl_part_pin **out, char ***out_names, size_t *out_n)
{
    const pl_sess_place *c = &s->place;
    *out_n = 0;
    *out = pl_calloc(c->n_pins ? c->n_pins : 1, sizeof **out);
    *out_names = pl_calloc(c->n_pins ? c->n_pins : 1, sizeof **out_names);
    if (*out == NULL || *out_names == NULL)
        return pl_sess_oom();
    for (size_t i = 0; i < c->n_pins; i++) {
        const char *eq = strchr(c->pins[i], '=');
        if (s->model->part && !pl_sess_pin_here(s->g, c->pins[i], false))
            continue; /* a node of another part of the model */
        int32_t found = pl_sess_pin_backend(backends, nb, eq + 1);
        if (found < 0)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "[placement] pin %s: backend '%s' is not loaded "
                                    "or not in [placement] order",
                                    c->pins[i], eq + 1);
        (*out_names)[i] = pl_xstrndup(c->pins[i], (size_t)(eq - c->pins[i]));
        if ((*out_names)[i] == NULL)
            return pl_sess_oom();
        (*out)[*out_n] = (pl_part_pin){.node = (*out_names)[i], .backend = found};
        *out_n += 1;
    }
    return NULL;
}

/* A staged session's pins name nodes its model has (its prefix and tails
 * each take the ones they hold): a name it lacks is a mistake. */
static pl_status *pl_sess_pins_known(const pl_session *s)
{
    for (size_t i = 0; i < s->place.n_pins; i++)
        if (!pl_sess_pin_here(s->g, s->place.pins[i], true))
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "[placement] pin '%s' names a node the model does not have "
                                    "(after its rewrites: `plinth explain` lists them)",
                                    s->place.pins[i]);
    return NULL;
}

static void pl_sess_recipe_free(pl_sess_recipe *r)
{
    for (size_t i = 0; r->pin_names && i < r->n_names; i++)
        pl_free(r->pin_names[i]);
    pl_free(r->pin_names);
    pl_free(r->pins);
    pl_free(r->backends);
    *r = (pl_sess_recipe){0};
}

/* A partition of S's graph by S's recipe, into *OUT. */
static pl_status *pl_sess_partition_by(pl_session *s, pl_partition **out)
{
    const pl_sess_recipe *r = &s->recipe;
    return pl_partition_create(s->g, s->view, r->backends, r->nb, r->pins, r->n_pins,
                               r->min_nodes, r->by_cost, pl_runtime_thread_count(s->rt),
                               s->rt->config->spin_us, s->model->inline_run,
                               s->model->plan_runs, out);
}

/* Partitions the graph between the backends of [placement]. */
static pl_status *pl_sess_partition(pl_session *s)
{
    pl_sess_recipe *r = &s->recipe;
    r->min_nodes = s->place.min_subgraph_nodes;
    r->by_cost = s->place.choose_by_cost;
    r->n_names = s->place.n_pins;
    pl_status *st = pl_sess_backends(s, &r->backends, &r->nb);
    if (st == NULL)
        st = pl_sess_pins(s, r->backends, r->nb, &r->pins, &r->pin_names, &r->n_pins);
    if (st == NULL)
        st = pl_sess_partition_by(s, &s->part);
    return st;
}

/* ---- creation ---------------------------------------------------------------- */

/* Where the caller's inputs and outputs live (session option io_device):
 * the host, or a device of a loaded module, retained while the session
 * lives. A module that computes on host memory means the host. */
static pl_status *pl_sess_io(pl_session *s)
{
    snprintf(s->io_name, sizeof s->io_name, "host");
    const char *spec = s->place.io_device;
    if (spec == NULL)
        return NULL;
    PL_RETURN_IF_ERROR(pl_sess_check_spec(s, "io_device", spec));
    char name[64];
    int device;
    pl_sess_split_backend(spec, name, sizeof name, &device);
    pl_module *m = s->rt->modules[pl_runtime_find_module(s->rt, name)];
    if (m->api.capabilities & PL_CAP_HOST_MEMORY)
        return NULL;
    s->io_module = m;
    s->io_device = device < 0 ? 0 : device;
    pl_module_retain(m);
    snprintf(s->io_name, sizeof s->io_name, "%s:%d", m->name, (int)s->io_device);
    return NULL;
}

/* A compile of step FAILED failed with ERR (taken): under strict = no its
 * cluster goes to the next backend and *OUT_RETRY is set; under strict =
 * yes the error names the step and the setting. */
static pl_status *pl_sess_compile_failed(pl_session *s, long failed, pl_status *err,
                                         bool *out_retry)
{
    *out_retry = false;
    const pl_prog_step *fs = &s->program->steps[failed];
    char reason[1200];
    snprintf(reason, sizeof reason, "compile failed: %s", pl_status_message(err));
    if (s->place.strict) {
        pl_status *wrapped = pl_status_create(pl_status_code(err),
                                              "%s: %s, and [placement] strict = yes",
                                              fs->name, reason);
        pl_status_free(err);
        return wrapped;
    }
    pl_status_free(err);
    if (!pl_warnings_add(&s->warnings,
                         "%s: %s; its nodes fall back to the next backend (strict = no)",
                         fs->name, reason))
        return pl_sess_oom();
    size_t cluster = fs->cluster;
    pl_program_destroy(s->program);
    s->program = NULL;
    *out_retry = true;
    return pl_partition_exclude_cluster(s->part, cluster, reason);
}

/* Who reads the model's recorded file constants (filedata.h) in this
 * session's placement: S->droppable[e] when the nodes of one compiled
 * subgraph of a module that keeps its own copies (PL_CAP_OWNS_CONSTANTS)
 * are its only readers; S->pinned lists those something reads in place at
 * run time (a kernel, a subgraph of another module, a graph output). The
 * rest is read only by such subgraphs, which took their copies. */
static pl_status *pl_sess_constant_use(pl_session *s)
{
    pl_filedata *f = s->model->filedata;
    size_t n = pl_filedata_count(f);
    pl_free(s->droppable);
    pl_free(s->kept);
    pl_free(s->pinned);
    s->droppable = NULL;
    s->kept = NULL;
    s->pinned = NULL;
    s->n_pinned = 0;
    if (n == 0)
        return NULL;
    bool *inplace = pl_calloc(n, sizeof *inplace);
    long *cluster = pl_malloc(n * sizeof *cluster); /* the one reading it, -2 several */
    s->droppable = pl_calloc(n, sizeof *s->droppable);
    s->kept = pl_calloc(n, sizeof *s->kept);
    s->pinned = pl_malloc(n * sizeof *s->pinned);
    if (inplace == NULL || cluster == NULL || s->droppable == NULL || s->kept == NULL ||
        s->pinned == NULL) {
        pl_free(inplace);
        pl_free(cluster);
        return pl_sess_oom();
    }
    for (size_t e = 0; e < n; e++)
        cluster[e] = -1;
    for (size_t i = 0; i < pl_graph_output_count(s->g); i++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, pl_graph_output(s->g, i));
        long e = gt && gt->data ? pl_filedata_find(f, gt->data) : -1;
        if (e >= 0)
            inplace[e] = true;
    }
    for (pl_tid t = 0; t < (pl_tid)pl_graph_tensor_count(s->g); t++) {
        const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, t);
        long e = gt->data ? pl_filedata_find(f, gt->data) : -1;
        if (e < 0)
            continue;
        for (size_t k = 0; k < gt->n_consumers && !inplace[e]; k++) {
            pl_nid c = gt->consumers[k];
            int32_t b = pl_partition_node_backend(s->part, c);
            const pl_part_backend *pb = b >= 0 ? pl_partition_backend(s->part, (size_t)b) : NULL;
            bool owns = pb != NULL && pb->symbolic && pb->module->api.header.abi_minor >= 5 &&
                        (pb->module->api.capabilities & PL_CAP_OWNS_CONSTANTS);
            long cl = owns ? (long)pl_partition_node_cluster(s->part, c) : -1;
            if (cl < 0)
                inplace[e] = true;
            else if (cluster[e] == -1)
                cluster[e] = cl;
            else if (cluster[e] != cl)
                cluster[e] = -2;
        }
    }
    for (size_t e = 0; e < n; e++) {
        s->droppable[e] = !inplace[e] && cluster[e] >= 0;
        if (inplace[e])
            s->pinned[s->n_pinned++] = (uint32_t)e;
    }
    pl_free(inplace);
    pl_free(cluster);
    return NULL;
}

/* The compiled subgraph on device DEV that holds the most of its memory
 * in S's program: the bytes of its values there (arena values, uploaded
 * constants, outputs) and its device workspace. Its step, or -1 when no
 * subgraph runs on DEV (kernels of imperative backends stay: a fused
 * chain cannot move, pl_partition_fuse). */
static long pl_sess_biggest_on(const pl_session *s, int32_t dev, size_t *out_bytes)
{
    const pl_program *p = s->program;
    long best = -1;
    *out_bytes = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        const pl_prog_step *st = &p->steps[i];
        if (st->dev != dev || st->kind != PL_STEP_SUBGRAPH)
            continue;
        size_t bytes = st->device_workspace;
        for (size_t k = 0; k < st->n_in + st->n_out; k++) {
            int32_t v = k < st->n_in ? st->in[k] : st->out[k - st->n_in];
            if (v >= 0 && p->values[v].dev == dev)
                bytes += p->values[v].bytes;
        }
        if (best < 0 || bytes > *out_bytes) {
            best = (long)i;
            *out_bytes = bytes;
        }
    }
    return best;
}

/* Memory on device DEV of S's program ran out (ERR, taken) while its
 * constants were uploaded or its first run context made: under strict =
 * no the subgraph holding the most of that device's memory goes to the
 * next backend (a warning says so) and *OUT_RETRY is set; under strict =
 * yes, or when no subgraph runs there, the error stands. */
static pl_status *pl_sess_device_full(pl_session *s, int32_t dev, pl_status *err,
                                      bool *out_retry)
{
    *out_retry = false;
    size_t bytes = 0;
    long step = pl_sess_biggest_on(s, dev, &bytes);
    if (step < 0)
        return err;
    if (s->place.strict) {
        pl_status *wrapped = pl_status_create(pl_status_code(err), "%s, and [placement] "
                                                                   "strict = yes",
                                              pl_status_message(err));
        pl_status_free(err);
        return wrapped;
    }
    char reason[1200];
    snprintf(reason, sizeof reason,
             "device %s has too little memory for this session (%zu bytes are this "
             "subgraph's): %s",
             s->program->devs[dev].name, bytes, pl_status_message(err));
    pl_status_free(err);
    const pl_prog_step *st = &s->program->steps[step];
    size_t cluster = st->cluster;
    if (!pl_warnings_add(&s->warnings,
                         "%s: %s; its nodes fall back to the next backend (strict = no)",
                         st->name, reason))
        return pl_sess_oom();
    pl_runner_destroy(s->runner);
    s->runner = NULL;
    pl_program_destroy(s->program);
    s->program = NULL;
    *out_retry = true;
    PL_RETURN_IF_ERROR(pl_filedata_reread(s->model->filedata));
    return pl_partition_exclude_cluster(s->part, cluster, reason);
}

/* Fuses, lowers and compiles until every subgraph compiled (or a failure
 * is final). */
static pl_status *pl_sess_compile(pl_session *s)
{
    for (;;) {
        /* Again after each exclusion: nodes that fell back to an imperative
         * backend may now fuse. */
        PL_RETURN_IF_ERROR(pl_partition_fuse(s->part));
        PL_RETURN_IF_ERROR(
            pl_program_lower(s->rt, s->g, s->part, s->io_module, s->io_device, &s->program));
        PL_RETURN_IF_ERROR(pl_sess_constant_use(s));
        for (size_t i = 0; i < s->program->n_steps; i++)
            pl_graph_view_set_repeated(s->program->steps[i].view, s->model->repeated);
        pl_filedata_set_compiling(s->model->filedata, s->g, s->droppable, s->kept);
        long failed = -1;
        pl_status *st = pl_program_compile(s->program, &s->warnings, &failed);
        pl_filedata_set_compiling(s->model->filedata, NULL, NULL, NULL);
        if (st != NULL && failed < 0)
            return st;
        if (st == NULL) { /* what compiled subgraphs read in place stays too */
            bool *pinned = pl_calloc(s->kept != NULL ? pl_filedata_count(s->model->filedata) : 1,
                                     sizeof *pinned);
            if (pinned == NULL)
                return pl_sess_oom();
            for (size_t i = 0; s->kept != NULL && i < s->n_pinned; i++)
                pinned[s->pinned[i]] = true;
            for (size_t e = 0; s->kept != NULL && e < pl_filedata_count(s->model->filedata); e++)
                if (s->kept[e] && !pinned[e])
                    s->pinned[s->n_pinned++] = (uint32_t)e;
            pl_free(pinned);
            return NULL;
        }
        /* The next round offers the failed nodes to other backends, which
         * read the constants a compile may have dropped. */
        pl_status *back = pl_filedata_reread(s->model->filedata);
        if (back != NULL) {
            pl_status_free(st);
            return back;
        }
        bool retry = false;
        PL_RETURN_IF_ERROR(pl_sess_compile_failed(s, failed, st, &retry));
    }
}

/* Compiles, then plans the program's memory and makes its runner; a
 * device whose memory cannot hold what runs on it gives up subgraphs to
 * the next backends (pl_sess_device_full) until the rest fits. */
static pl_status *pl_sess_build(pl_session *s)
{
    for (;;) {
        PL_RETURN_IF_ERROR(pl_sess_compile(s));
        pl_status *st = pl_program_plan(s->program, s->model->one_shot);
        int32_t full_dev = st != NULL ? s->program->full_dev : -1;
        if (st == NULL)
            st = pl_runner_create(s->program, &s->runner);
        if (st == NULL)
            st = pl_runner_prepare(s->runner, &full_dev);
        if (st == NULL)
            return NULL;
        if (full_dev < 1)
            return st;
        bool retry = false;
        PL_RETURN_IF_ERROR(pl_sess_device_full(s, full_dev, st, &retry));
    }
}

/* S's plan, taken out of S (which is left with none). */
static pl_sess_plan pl_sess_plan_take(pl_session *s)
{
    pl_sess_plan p = {s->part, s->program, s->runner, s->pinned, s->n_pinned};
    s->part = NULL;
    s->program = NULL;
    s->runner = NULL;
    s->pinned = NULL;
    s->n_pinned = 0;
    return p;
}

static void pl_sess_plan_put(pl_session *s, pl_sess_plan p)
{
    s->part = p.part;
    s->program = p.program;
    s->runner = p.runner;
    s->pinned = p.pinned;
    s->n_pinned = p.n_pinned;
}

/* Frees plan P of S's model, its pins released. */
static void pl_sess_plan_free(pl_session *s, pl_sess_plan *p)
{
    pl_runner_destroy(p->runner);
    pl_program_destroy(p->program);
    pl_partition_destroy(p->part);
    pl_filedata_unpin(s->model->filedata, p->pinned, p->n_pinned);
    pl_free(p->pinned);
    *p = (pl_sess_plan){0};
}

/* Makes S a plan without the subgraphs SLOW (N) on their backends: the
 * partition made again from the recipe, those subgraphs excluded as a
 * failed compile is, compiled and planned as at creation (the constants
 * compiled subgraphs dropped are read back first, and what the new plan
 * reads in place is pinned). S has no plan on entry; on failure it has
 * none either. */
static pl_status *pl_sess_plan_without(pl_session *s, const pl_measure_slow *slow, size_t n)
{
    pl_filedata *f = s->model->filedata;
    pl_status *st = pl_model_enter_file(s->model, s->g);
    s->entered = true;
    if (st == NULL)
        st = pl_sess_partition_by(s, &s->part);
    for (size_t i = 0; st == NULL && i < n; i++) {
        /* (found again by a node: an exclusion renumbers the clusters) */
        int32_t c = pl_partition_node_cluster(s->part, slow[i].first);
        if (c < 0 || pl_partition_node_backend(s->part, slow[i].first) != slow[i].backend)
            continue;
        st = slow[i].node_only ? pl_partition_exclude_node(s->part, slow[i].first, slow[i].reason)
                               : pl_partition_exclude_cluster(s->part, (size_t)c, slow[i].reason);
    }
    if (st == NULL)
        st = pl_sess_build(s);
    if (st == NULL && s->profiling)
        pl_measure_node_times(s->program, true);
    pl_status *left = st == NULL ? pl_filedata_leave(f, s->pinned, s->n_pinned)
                                 : pl_filedata_leave(f, NULL, 0);
    s->entered = false;
    pl_free(s->droppable);
    pl_free(s->kept);
    s->droppable = NULL;
    s->kept = NULL;
    if (st == NULL && left == NULL)
        return NULL;
    s->n_pinned = 0; /* (not pinned: leave failed or was not asked to) */
    pl_sess_plan failed = pl_sess_plan_take(s);
    pl_sess_plan_free(s, &failed);
    if (st == NULL)
        return left;
    pl_status_free(left);
    return st;
}

/* The end of the measured runs of the plan as made (measure.h): when a
 * subgraph ran slow, the plan is put aside and one without it tried. */
static pl_status *pl_sess_measure_made(pl_session *s, unsigned runs)
{
    pl_measure_slow *slow = NULL;
    size_t n = 0;
    PL_RETURN_IF_ERROR(pl_measure_slow_steps(s->program, s->part, runs,
                                             runs < PL_MEASURE_RUNS, &slow, &n));
    if (!s->profiling)
        pl_measure_node_times(s->program, false);
    if (n == 0) {
        atomic_store(&s->measuring, false);
        return NULL;
    }
    char (*names)[400] = pl_calloc(n, sizeof *names);
    if (names == NULL) {
        pl_free(slow);
        return pl_sess_oom();
    }
    for (size_t i = 0; i < n; i++) {
        const pl_graph_node *node = pl_graph_get_node(s->program->g, slow[i].first);
        if (slow[i].node_only)
            snprintf(names[i], sizeof names[i], "node '%s' (%s) in %s", node->name, node->op,
                     s->program->steps[slow[i].step].name);
        else
            snprintf(names[i], sizeof names[i], "%s", s->program->steps[slow[i].step].name);
    }
    s->made_best_ns = atomic_load(&s->run_best_ns);
    s->made = pl_sess_plan_take(s);
    pl_status *st = pl_sess_plan_without(s, slow, n);
    pl_status *ret = NULL;
    if (st != NULL) { /* the plan as made stays */
        pl_sess_plan_put(s, s->made);
        s->made = (pl_sess_plan){0};
        atomic_store(&s->measuring, false);
        if (!pl_warnings_add(&s->warnings, "%s: %s; planning without it failed, so it stays: %s",
                             names[0], slow[0].reason, pl_status_message(st)))
            ret = pl_sess_oom();
        pl_status_free(st);
    } else {
        s->trial = 1;
        for (size_t i = 0; i < n && ret == NULL; i++)
            if (!pl_warnings_add(&s->warnings,
                                 "%s: %s; %s to the next backends for %d runs, to compare",
                                 names[i], slow[i].reason,
                                 slow[i].node_only ? "it goes" : "its nodes go", PL_MEASURE_RUNS))
                ret = pl_sess_oom();
    }
    pl_free(names);
    pl_free(slow);
    return ret;
}

/* The end of the trial: the faster plan stays, the other is freed. */
static pl_status *pl_sess_measure_trial(pl_session *s)
{
    double made_ms = (double)s->made_best_ns / 1e6;
    double trial_ms = (double)atomic_load(&s->run_best_ns) / 1e6;
    bool keep = trial_ms < PL_MEASURE_KEEP * made_ms;
    if (keep) {
        pl_sess_plan_free(s, &s->made);
    } else {
        pl_sess_plan tried = pl_sess_plan_take(s);
        pl_sess_plan_free(s, &tried);
        pl_sess_plan_put(s, s->made);
        s->made = (pl_sess_plan){0};
    }
    s->trial = 0;
    atomic_store(&s->measuring, false);
    if (!pl_warnings_add(&s->warnings,
                         keep ? "measured: runs took %.3f ms at best without the slow "
                                "subgraph(s) or node(s), against %.3f with them; the new plan "
                                "stays"
                              : "measured: runs took %.3f ms at best without the slow "
                                "subgraph(s) or node(s), against %.3f with them; the plan as "
                                "made is back",
                         trial_ms, made_ms))
        return pl_sess_oom();
    return NULL;
}

/* The run that completed S's measured runs of WINDOW (RUNS of them: fewer
 * when a subgraph is slow by the early thresholds), holding plan_lock
 * alone, so runs of other threads wait (measure.h). */
static pl_status *pl_sess_measure(pl_session *s, unsigned window, unsigned runs)
{
    pthread_rwlock_wrlock(&s->plan_lock);
    /* (another run of the window did it; or, early, a faster run since
     * cleared the suspect) */
    if (window != atomic_load(&s->window) || !atomic_load(&s->measuring) ||
        (s->trial == 0 && runs < PL_MEASURE_RUNS && !pl_measure_any_slow(s->program, s->part, true))) {
        pthread_rwlock_unlock(&s->plan_lock);
        return NULL;
    }
    pl_status *st = s->trial == 0 ? pl_sess_measure_made(s, runs) : pl_sess_measure_trial(s);
    atomic_fetch_add(&s->window, 1);
    atomic_store(&s->measured_runs, 0);
    atomic_store(&s->run_best_ns, UINT64_MAX);
    if (!atomic_load(&s->measuring))
        pl_sess_recipe_free(&s->recipe);
    if (s->program == NULL)
        snprintf(s->broken, sizeof s->broken, "%s: the session lost its plan: %s",
                 s->model->path, st ? pl_status_message(st) : "out of memory");
    pthread_rwlock_unlock(&s->plan_lock);
    return st;
}

/* A run's hold on S's plan: shared while the first runs are measured
 * (measure.h), none after; *OUT_LOCKED says which. Fails when planning
 * again after measuring failed. */
static pl_status *pl_sess_plan_hold(pl_session *s, bool *out_locked, unsigned *out_window)
{
    *out_locked = atomic_load(&s->measuring);
    if (!*out_locked)
        return NULL;
    pthread_rwlock_rdlock(&s->plan_lock);
    *out_window = atomic_load(&s->window);
    if (s->broken[0] == '\0')
        return NULL;
    pthread_rwlock_unlock(&s->plan_lock);
    *out_locked = false;
    return pl_status_create(PL_CODE_INTERNAL, "%s", s->broken);
}

/* A reader's hold on CS's program (its steps, warnings, description)
 * while planning again may replace it; pair with pl_sess_peek_end. */
static bool pl_sess_peek_begin(const pl_session *cs)
{
    pl_session *s = (pl_session *)cs; /* the lock only */
    if (s == NULL || !atomic_load(&s->measuring))
        return false;
    pthread_rwlock_rdlock(&s->plan_lock);
    return true;
}

static void pl_sess_peek_end(const pl_session *cs, bool locked)
{
    if (locked)
        pthread_rwlock_unlock(&((pl_session *)cs)->plan_lock);
}

/* Ends the hold of a run of WINDOW that took TOOK_NS and whose result is
 * ST (returned, or a failure of measuring when this run completed the
 * measured runs). */
static pl_status *pl_sess_plan_release(pl_session *s, bool locked, unsigned window,
                                       uint64_t took_ns, pl_status *st)
{
    if (!locked)
        return st;
    uint64_t best = atomic_load(&s->run_best_ns);
    while (st == NULL && took_ns < best &&
           !atomic_compare_exchange_weak(&s->run_best_ns, &best, took_ns))
        ;
    /* (counted under the lock: the window cannot end meanwhile) */
    unsigned runs = st == NULL ? atomic_fetch_add(&s->measured_runs, 1) + 1 : 0;
    bool due = runs == PL_MEASURE_RUNS;
    if (!due && s->trial == 0 && runs >= PL_MEASURE_EARLY_RUNS && runs < PL_MEASURE_RUNS)
        due = pl_measure_any_slow(s->program, s->part, true);
    pthread_rwlock_unlock(&s->plan_lock);
    return due ? pl_sess_measure(s, window, runs) : st;
}

/* Applies option NAME's flag F to *SETTING. */
static pl_status *pl_sess_flag(const char *name, pl_option_flag f, bool *setting)
{
    if (f > PL_OPTION_YES)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "session option %s: %d is not KEEP, NO or YES", name, (int)f);
    if (f != PL_OPTION_KEEP)
        *setting = f == PL_OPTION_YES;
    return NULL;
}

/* The placement settings: the configuration's, then the options'. */
static pl_status *pl_sess_place_init(pl_session *s, const pl_session_options *o)
{
    const pl_config *c = s->rt->config;
    pl_sess_place *p = &s->place;
    *p = (pl_sess_place){.order = (const char *const *)c->placement,
                         .n_order = c->n_placement,
                         .pins = (const char *const *)c->pins,
                         .n_pins = c->n_pins,
                         .strict = c->strict,
                         .choose_by_cost = c->choose_by_cost,
                         .measure = c->measure,
                         .min_subgraph_nodes = c->min_subgraph_nodes};
    if (o == NULL)
        return NULL;
    if (o->struct_size < offsetof(pl_session_options, order))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_session_create: options.struct_size is %u; set it to "
                                "sizeof(pl_session_options)", (unsigned)o->struct_size);
#define PL_SESS_HAS(field)                                                   \
    (o->struct_size >= offsetof(pl_session_options, field) + sizeof o->field)
    if (PL_SESS_HAS(n_order) && o->order != NULL) {
        p->order = o->order;
        p->n_order = o->n_order;
        p->order_from_code = true;
    }
    if (PL_SESS_HAS(n_pins) && o->pins != NULL) {
        for (size_t i = 0; i < o->n_pins; i++) {
            const char *eq = o->pins[i] ? strchr(o->pins[i], '=') : NULL;
            if (eq == NULL || eq == o->pins[i] || eq[1] == '\0')
                return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                        "session option pins: '%s' is not node=backend",
                                        o->pins[i] ? o->pins[i] : "(null)");
        }
        p->pins = o->pins;
        p->n_pins = o->n_pins;
    }
    if (PL_SESS_HAS(strict))
        PL_RETURN_IF_ERROR(pl_sess_flag("strict", o->strict, &p->strict));
    if (PL_SESS_HAS(choose_by_cost))
        PL_RETURN_IF_ERROR(pl_sess_flag("choose_by_cost", o->choose_by_cost, &p->choose_by_cost));
    if (PL_SESS_HAS(measure))
        PL_RETURN_IF_ERROR(pl_sess_flag("measure", o->measure, &p->measure));
    if (PL_SESS_HAS(min_subgraph_nodes) && o->min_subgraph_nodes < 0)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "session option min_subgraph_nodes: %d is below 0",
                                o->min_subgraph_nodes);
    if (PL_SESS_HAS(min_subgraph_nodes) && o->min_subgraph_nodes > 0)
        p->min_subgraph_nodes = o->min_subgraph_nodes;
    if (PL_SESS_HAS(io_device) && o->io_device != NULL && strcmp(o->io_device, "host") != 0)
        p->io_device = o->io_device;
#undef PL_SESS_HAS
    return NULL;
}

static pl_status *pl_session_create_in(pl_model *model, const pl_session_options *options,
                                       pl_session **out_session)
{
    pl_session *s = pl_calloc(1, sizeof *s);
    if (s == NULL)
        return pl_sess_oom();
    pl_model_retain(model);
    s->model = model;
    s->rt = model->runtime;
    s->g = model->graph;
    s->warnings.logger = &s->rt->logger;
    /* (writers first: runs from other threads that keep overlapping must
     * not hold off planning again for ever) */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->plan_lock, &attr);
    pthread_rwlockattr_destroy(&attr);
    /* (a control-flow body plans per iteration instead, control.c; what
     * constant folding runs has known shapes) */
    if (!model->inline_run && !model->one_shot && pl_stage_needed(model->runtime, s->g)) {
        pl_status *st = pl_sess_place_init(s, options);
        if (st == NULL && !model->part)
            st = pl_sess_pins_known(s);
        if (st == NULL)
            st = pl_stage_create(model, options, &s->stage);
        if (st != NULL) {
            pl_session_destroy(s);
            return pl_status_wrap(st, "%s: ", model->path);
        }
        *out_session = s;
        return NULL;
    }
    pl_status *st = pl_model_enter_file(s->model, s->g);
    s->entered = true;
    if (st == NULL)
        st = pl_sess_place_init(s, options);
    if (st == NULL)
        st = pl_sess_io(s);
    if (st == NULL)
        st = pl_graph_view_create(s->g, NULL, 0, &s->view);
    if (st == NULL)
        pl_graph_view_set_repeated(s->view, model->repeated);
    if (st == NULL)
        st = pl_sess_partition(s);
    if (st == NULL)
        st = pl_sess_build(s);
    /* Constants only this session's compiled subgraphs read (they hold
     * copies) are dropped now; the ones it reads in place stay. */
    if (st == NULL) {
        st = pl_filedata_leave(model->filedata, s->pinned, s->n_pinned);
        s->entered = false;
    }
    pl_free(s->droppable);
    pl_free(s->kept);
    s->droppable = NULL;
    s->kept = NULL;
    if (st != NULL) {
        pl_session_destroy(s);
        return pl_status_wrap(st, "%s: ", model->path);
    }
    size_t nb = pl_partition_backend_count(s->part);
    s->retained = pl_calloc(nb ? nb : 1, sizeof *s->retained);
    if (s->retained == NULL) {
        pl_session_destroy(s);
        return pl_status_wrap(pl_sess_oom(), "%s: ", model->path);
    }
    for (size_t b = 0; b < nb; b++) {
        s->retained[b] = pl_partition_backend(s->part, b)->module;
        pl_module_retain(s->retained[b]);
    }
    s->n_retained = nb;
    /* (a control-flow body runs inline, planned per iteration; a staged
     * session's tails are sessions of their own, which measure) */
    atomic_store(&s->measuring, s->place.measure && s->place.choose_by_cost &&
                                    !model->inline_run && !model->one_shot);
    atomic_store(&s->run_best_ns, UINT64_MAX);
    if (!atomic_load(&s->measuring))
        pl_sess_recipe_free(&s->recipe);
    else
        pl_measure_node_times(s->program, true);
    s->place = (pl_sess_place){0};
    *out_session = s;
    return NULL;
}

/* The public entry points allocate through the model's allocator (the
 * runtime's), made current for the call: partition, program, plan and run
 * reach it through pl_malloc. */
pl_status *pl_session_create(pl_model *model, const pl_session_options *options,
                             pl_session **out_session)
{
    if (out_session == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_session_create: NULL out_session");
    *out_session = NULL;
    if (model == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_create: NULL model");
    pl_status *st = pl_model_settle(model);
    if (st != NULL)
        return st;
    pl_allocator outer = pl_alloc_scope_enter(model->alloc);
    st = pl_session_create_in(model, options, out_session);
    pl_alloc_scope_leave(outer);
    return st;
}

static void pl_session_destroy_in(pl_session *s)
{
    pl_stage_destroy(s->stage);
    pl_sess_plan_free(s, &s->made); /* (destroyed while trying another) */
    pl_runner_destroy(s->runner);
    pl_program_destroy(s->program);
    pl_filedata *f = s->model->filedata;
    if (s->entered) /* a creation that failed */
        pl_status_free(pl_filedata_leave(f, NULL, 0));
    else
        pl_filedata_unpin(f, s->pinned, s->n_pinned);
    pl_free(s->pinned);
    pl_free(s->droppable);
    pl_free(s->kept);
    pl_module **retained = s->retained;
    size_t nb = s->n_retained;
    pl_partition_destroy(s->part);
    pl_graph_view_destroy(s->view);
    pl_warnings_clear(&s->warnings);
    pl_model *model = s->model;
    pl_module *io = s->io_module;
    pthread_rwlock_destroy(&s->plan_lock);
    pl_sess_recipe_free(&s->recipe);
    pl_free(s);
    for (size_t b = 0; retained && b < nb; b++)
        pl_module_release(retained[b]);
    if (io != NULL)
        pl_module_release(io);
    pl_free(retained);
    pl_model_release(model);
}

void pl_session_destroy(pl_session *s)
{
    if (s == NULL)
        return;
    pl_allocator outer = pl_alloc_scope_enter(s->model->alloc);
    pl_session_destroy_in(s);
    pl_alloc_scope_leave(outer);
}

/* ---- running ------------------------------------------------------------------ */

/* One output asked for twice: an ONNX graph may list a tensor as two of its
 * outputs (ONNX Runtime returns it at both places), and a caller may name
 * one output twice. A run fills each name's first request; the others get
 * a copy. The names are N requests' name fields, STRIDE bytes apart from
 * NAME0 (pl_io or pl_array_io, read in place: nothing is copied on a run's
 * path).
 * FIRST[i] (allocated here, NULL when no name repeats): the first request
 * of name i. */
static const char *pl_sess_name_at(const char *const *name0, size_t stride, size_t i)
{
    return *(const char *const *)(const void *)((const char *)name0 + i * stride);
}

static pl_status *pl_sess_first_requests(const char *const *name0, size_t stride, size_t n,
                                         size_t **out_first)
{
    *out_first = NULL;
    size_t *first = NULL;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i && pl_sess_name_at(name0, stride, i) != NULL; j++) {
            const char *a = pl_sess_name_at(name0, stride, i);
            const char *b = pl_sess_name_at(name0, stride, j);
            if (b == NULL || strcmp(a, b) != 0)
                continue;
            if (first == NULL) {
                first = pl_malloc(n * sizeof *first);
                if (first == NULL)
                    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for a run");
                for (size_t k = 0; k < n; k++)
                    first[k] = k;
            }
            first[i] = first[j];
            break;
        }
    *out_first = first;
    return NULL;
}

/* Copies host output SRC into DST, the request of the same name: into the
 * caller's buffer where it gave one (of SRC's dtype and shape), else into a
 * new one. */
static pl_status *pl_sess_copy_request(const pl_tensor *src, const char *name, pl_tensor *dst)
{
    size_t bytes = pl_dtype_size(src->dtype);
    for (int32_t d = 0; d < src->ndim; d++)
        bytes *= (size_t)src->shape[d];
    if (dst->data == NULL) {
        dst->data = pl_hostbuf_get(bytes);
        if (dst->data == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                    "out of memory for output '%s' (%zu bytes)", name, bytes);
        dst->byte_offset = 0;
    } else {
        bool same = PL_DTYPE_EQ(dst->dtype, src->dtype) && dst->ndim == src->ndim &&
                    dst->strides == NULL && (src->ndim == 0 || dst->shape != NULL);
        for (int32_t d = 0; same && d < src->ndim; d++)
            same = dst->shape[d] == src->shape[d];
        if (!same) {
            char want[256];
            pl_dims_format(src->shape, src->ndim, want, sizeof want);
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "output '%s' (asked for again) must be dense %s%s", name,
                                    pl_dtype_name(src->dtype), want);
        }
    }
    if (bytes > 0)
        memcpy((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
               bytes);
    dst->struct_size = sizeof *dst;
    dst->dtype = src->dtype;
    dst->ndim = src->ndim;
    dst->shape = src->shape;
    dst->device = src->device;
    return NULL;
}

static pl_status *pl_sess_run_once(pl_session *s, const pl_io *inputs, size_t n_inputs,
                                   pl_io *outputs, size_t n_outputs)
{
    return s->stage != NULL ? pl_stage_run(s->stage, inputs, n_inputs, outputs, n_outputs)
                            : pl_runner_run(s->runner, inputs, n_inputs, outputs, n_outputs);
}

/* pl_session_run with the repeated requests among OUTPUTS copied from the
 * first of their name; a failure leaves the caller's requests as they
 * were. */
static pl_status *pl_sess_run_repeats(pl_session *s, const pl_io *inputs, size_t n_inputs,
                                      pl_io *outputs, size_t n_outputs)
{
    size_t *first = NULL;
    pl_status *st = n_outputs > 1 ? pl_sess_first_requests(&outputs->name, sizeof *outputs,
                                                            n_outputs, &first)
                                  : NULL;
    if (st != NULL || first == NULL)
        return st != NULL ? st : pl_sess_run_once(s, inputs, n_inputs, outputs, n_outputs);
    size_t n_uniq = 0;
    pl_io *uniq = pl_malloc(n_outputs * sizeof *uniq);
    bool *given = pl_malloc(n_outputs * sizeof *given);
    if (uniq == NULL || given == NULL)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for a run");
    for (size_t i = 0; st == NULL && i < n_outputs; i++) {
        given[i] = outputs[i].tensor.data != NULL;
        if (first[i] == i)
            uniq[n_uniq++] = outputs[i];
    }
    if (st == NULL)
        st = pl_sess_run_once(s, inputs, n_inputs, uniq, n_uniq);
    if (st == NULL) {
        pl_io *saved = pl_malloc(n_outputs * sizeof *saved);
        if (saved == NULL)
            st = pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for a run");
        for (size_t i = 0, k = 0; st == NULL && i < n_outputs; i++) {
            saved[i] = outputs[i];
            if (first[i] == i)
                outputs[i] = uniq[k++];
        }
        for (size_t i = 0; st == NULL && i < n_outputs; i++)
            if (first[i] != i)
                st = pl_sess_copy_request(&outputs[first[i]].tensor, outputs[i].name,
                                          &outputs[i].tensor);
        for (size_t i = 0; st != NULL && saved != NULL && i < n_outputs; i++) {
            if (!given[i] && outputs[i].tensor.data != NULL)
                pl_hostbuf_put(outputs[i].tensor.data);
            outputs[i] = saved[i];
        }
        pl_free(saved);
    }
    pl_free(uniq);
    pl_free(given);
    pl_free(first);
    return st;
}

/* pl_sess_run_repeats for a model with string inputs or outputs
 * (strtab.h): the caller's strings become ids and back. */
static pl_status *pl_sess_run_strings(pl_session *s, const pl_io *inputs, size_t n_inputs,
                                      pl_io *outputs, size_t n_outputs)
{
    bool *in_str = pl_calloc(n_inputs + 1, sizeof *in_str);
    bool *out_str = pl_calloc(n_outputs + 1, sizeof *out_str);
    pl_status *st = in_str && out_str ? NULL
                                      : pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                                         "out of memory for a run");
    for (size_t i = 0; st == NULL && i < n_inputs; i++)
        in_str[i] = pl_model_is_string_io(s->model, inputs[i].name);
    for (size_t i = 0; st == NULL && i < n_outputs; i++)
        out_str[i] = pl_model_is_string_io(s->model, outputs[i].name);
    if (st == NULL)
        st = pl_strings_run(s, s->model->strtab, in_str, out_str, inputs, n_inputs, outputs,
                            n_outputs, pl_sess_run_repeats);
    pl_free(in_str);
    pl_free(out_str);
    return st;
}

pl_status *pl_session_run(pl_session *s, const pl_io *inputs, size_t n_inputs,
                          pl_io *outputs, size_t n_outputs)
{
    if (s == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_run: NULL session");
    if (s->io_module != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_session_run: this session's inputs and outputs live on %s "
                                "(session option io_device); run it with "
                                "pl_session_run_arrays",
                                s->io_name);
    pl_allocator outer = pl_alloc_scope_enter(s->model->alloc);
    bool locked;
    unsigned window = 0;
    pl_status *st = pl_sess_plan_hold(s, &locked, &window);
    uint64_t t0 = locked ? pl_now_ns() : 0;
    if (st == NULL)
        st = s->model->strtab != NULL
                 ? pl_sess_run_strings(s, inputs, n_inputs, outputs, n_outputs)
                 : pl_sess_run_repeats(s, inputs, n_inputs, outputs, n_outputs);
    st = pl_sess_plan_release(s, locked, window, locked ? pl_now_ns() - t0 : 0, st);
    pl_alloc_scope_leave(outer);
    return st;
}

const char *pl_session_io_device(const pl_session *s)
{
    return s ? s->io_name : NULL;
}

/* Why ARRAY (input or output NAME) cannot be bound where S's inputs and
 * outputs live, or NULL. */
static pl_status *pl_sess_array_where(const pl_session *s, const char *what, const char *name,
                                      const pl_array *array)
{
    pl_module *m = pl_array_module_internal(array);
    bool host = m == NULL || (m->api.capabilities & PL_CAP_HOST_MEMORY);
    bool fits = s->io_module == NULL ? host
                                     : m == s->io_module && pl_array_device(array) == s->io_device;
    if (fits)
        return NULL;
    char where[80];
    if (m == NULL)
        snprintf(where, sizeof where, "host");
    else
        snprintf(where, sizeof where, "%s:%d", m->name, pl_array_device(array));
    return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                            "%s '%s' is an array on %s, but this session's inputs and outputs "
                            "live on %s (session option io_device; pl_array_copy moves it)",
                            what, name ? name : "(null)", where, s->io_name);
}

static pl_status *pl_session_run_arrays_in(pl_session *s, const pl_array_io *inputs,
                                           size_t n_inputs, pl_array_io *outputs,
                                           size_t n_outputs, pl_io *ins, pl_io *outs,
                                           bool *made)
{
    for (size_t i = 0; i < n_inputs + n_outputs; i++) {
        const char *name = i < n_inputs ? inputs[i].name : outputs[i - n_inputs].name;
        if (pl_model_is_string_io(s->model, name))
            return pl_status_create(PL_CODE_UNSUPPORTED,
                                    "%s '%s' is a string tensor; arrays hold numbers: run "
                                    "the session with pl_session_run",
                                    i < n_inputs ? "input" : "output", name);
    }
    for (size_t i = 0; i < n_inputs; i++) {
        if (inputs[i].array == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' has no array",
                                    inputs[i].name ? inputs[i].name : "(null)");
        PL_RETURN_IF_ERROR(pl_sess_array_where(s, "input", inputs[i].name, inputs[i].array));
        /* operators pushed on it finish first (their error is the run's) */
        PL_RETURN_IF_ERROR(pl_array_wait(inputs[i].array));
        ins[i] = (pl_io){.name = inputs[i].name, .tensor = *pl_array_tensor(inputs[i].array)};
    }
    for (size_t i = 0; i < n_outputs; i++) {
        const char *name = outputs[i].name;
        pl_tid t = name ? pl_graph_find_tensor(s->g, name) : PL_TID_NONE;
        if (t == PL_TID_NONE || !pl_graph_get_tensor(s->g, t)->is_output)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no output named '%s'",
                                    name ? name : "(null)");
        if (outputs[i].array == NULL) {
            const pl_graph_tensor *gt = pl_graph_get_tensor(s->g, t);
            PL_RETURN_IF_ERROR(pl_array_create(
                s->rt, s->io_module ? s->io_module->name : NULL, s->io_device, gt->dtype,
                gt->ndim, gt->dims, &outputs[i].array));
            made[i] = true;
        } else {
            PL_RETURN_IF_ERROR(pl_sess_array_where(s, "output", name, outputs[i].array));
            PL_RETURN_IF_ERROR(pl_array_wait(outputs[i].array));
        }
        outs[i] = (pl_io){.name = name, .tensor = *pl_array_tensor(outputs[i].array)};
    }
    size_t *first = NULL, n_uniq = 0;
    pl_status *st = n_outputs > 1 ? pl_sess_first_requests(&outputs->name, sizeof *outputs,
                                                            n_outputs, &first)
                                  : NULL;
    if (st != NULL || first == NULL)
        return st != NULL ? st : pl_runner_run(s->runner, ins, n_inputs, outs, n_outputs);
    /* a name asked for twice: its first array is written, the others copy it */
    for (size_t i = 0; i < n_outputs; i++)
        if (first[i] == i)
            outs[n_uniq++] = outs[i];
    st = pl_runner_run(s->runner, ins, n_inputs, outs, n_uniq);
    for (size_t i = 0; st == NULL && i < n_outputs; i++)
        if (first[i] != i)
            st = pl_array_copy(outputs[i].array, outputs[first[i]].array);
    pl_free(first);
    return st;
}

/* pl_session_run_arrays_in's arguments, for a run inside the strings'
 * scope of a model that has them (strtab.h). */
typedef struct pl_sess_arrays_call {
    pl_session *s;
    const pl_array_io *inputs;
    size_t n_inputs;
    pl_array_io *outputs;
    size_t n_outputs;
    pl_io *ins, *outs;
    bool *made;
} pl_sess_arrays_call;

static pl_status *pl_sess_arrays_fn(void *arg)
{
    pl_sess_arrays_call *c = arg;
    return pl_session_run_arrays_in(c->s, c->inputs, c->n_inputs, c->outputs, c->n_outputs,
                                    c->ins, c->outs, c->made);
}

pl_status *pl_session_run_arrays(pl_session *s, const pl_array_io *inputs, size_t n_inputs,
                                 pl_array_io *outputs, size_t n_outputs)
{
    if (s == NULL || (n_inputs > 0 && inputs == NULL) || (n_outputs > 0 && outputs == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_session_run_arrays: NULL session or arrays");
    if (s->stage != NULL)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "pl_session_run_arrays: %s has shapes known only at run time; "
                                "run it with pl_session_run",
                                s->model->path);
    pl_allocator outer = pl_alloc_scope_enter(s->model->alloc);
    pl_io *ins = pl_calloc(n_inputs ? n_inputs : 1, sizeof *ins);
    pl_io *outs = pl_calloc(n_outputs ? n_outputs : 1, sizeof *outs);
    bool *made = pl_calloc(n_outputs ? n_outputs : 1, sizeof *made);
    pl_sess_arrays_call c = {s, inputs, n_inputs, outputs, n_outputs, ins, outs, made};
    bool locked = false;
    unsigned window = 0;
    pl_status *st = !(ins && outs && made)
                        ? pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory for a run")
                        : pl_sess_plan_hold(s, &locked, &window);
    uint64_t t0 = locked ? pl_now_ns() : 0;
    if (st == NULL)
        st = s->model->strtab != NULL ? pl_strings_scope(s->model->strtab, pl_sess_arrays_fn, &c)
                                      : pl_sess_arrays_fn(&c);
    st = pl_sess_plan_release(s, locked, window, locked ? pl_now_ns() - t0 : 0, st);
    for (size_t i = 0; st != NULL && made && i < n_outputs; i++)
        if (made[i]) { /* a failed run leaves the caller's slots as they were */
            pl_array_destroy(outputs[i].array);
            outputs[i].array = NULL;
        }
    pl_free(ins);
    pl_free(outs);
    pl_free(made);
    pl_alloc_scope_leave(outer);
    return st;
}

void pl_buffer_free(void *data)
{
    pl_hostbuf_put(data);
}

/* ---- reading ------------------------------------------------------------------- */

size_t pl_session_input_count(const pl_session *s)
{
    return s ? pl_graph_input_count(s->g) : 0;
}

size_t pl_session_output_count(const pl_session *s)
{
    return s ? pl_graph_output_count(s->g) : 0;
}

const char *pl_session_input_name(const pl_session *s, size_t i)
{
    pl_tid t = s ? pl_graph_input(s->g, i) : PL_TID_NONE;
    return t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t)->name;
}

const char *pl_session_output_name(const pl_session *s, size_t i)
{
    pl_tid t = s ? pl_graph_output(s->g, i) : PL_TID_NONE;
    return t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t)->name;
}

static void pl_session_type(const pl_session *s, pl_tid t, pl_dtype *out_dtype,
                            int32_t *out_ndim, const int64_t **out_dims)
{
    const pl_graph_tensor *gt = t == PL_TID_NONE ? NULL : pl_graph_get_tensor(s->g, t);
    if (out_dtype)
        *out_dtype = gt == NULL                                    ? (pl_dtype){0, 0, 0}
                     : pl_model_is_string_io(s->model, gt->name) ? PL_DTYPE_STRING
                                                                 : gt->dtype;
    if (out_ndim)
        *out_ndim = gt ? gt->ndim : -1;
    if (out_dims)
        *out_dims = gt ? gt->dims : NULL;
}

void pl_session_input_type(const pl_session *s, size_t i, pl_dtype *out_dtype,
                           int32_t *out_ndim, const int64_t **out_dims)
{
    pl_session_type(s, s ? pl_graph_input(s->g, i) : PL_TID_NONE, out_dtype, out_ndim,
                    out_dims);
}

void pl_session_output_type(const pl_session *s, size_t i, pl_dtype *out_dtype,
                            int32_t *out_ndim, const int64_t **out_dims)
{
    pl_session_type(s, s ? pl_graph_output(s->g, i) : PL_TID_NONE, out_dtype, out_ndim,
                    out_dims);
}

/* A staged session's steps: its prefix's, then the pivot's and the last
 * tail's (pl_stage_step_info). */
size_t pl_session_step_count(const pl_session *s)
{
    if (s != NULL && s->stage != NULL) {
        const pl_session *pre = pl_stage_prefix(s->stage);
        return (pre ? pl_session_step_count(pre) : 0) + pl_stage_step_count(s->stage);
    }
    bool held = pl_sess_peek_begin(s);
    size_t n = s && s->program ? s->program->n_steps : 0;
    pl_sess_peek_end(s, held);
    return n;
}

void pl_session_step_info(const pl_session *s, size_t i, const char **out_name,
                          const char **out_backend, uint64_t *out_total_ns,
                          uint64_t *out_runs)
{
    if (s != NULL && s->stage != NULL) {
        const pl_session *pre = pl_stage_prefix(s->stage);
        size_t n_pre = pre ? pl_session_step_count(pre) : 0;
        if (i < n_pre)
            pl_session_step_info(pre, i, out_name, out_backend, out_total_ns, out_runs);
        else
            pl_stage_step_info(s->stage, i - n_pre, out_name, out_backend, out_total_ns,
                               out_runs);
        return;
    }
    bool held = pl_sess_peek_begin(s);
    pl_prog_step *st = s && s->program && i < s->program->n_steps ? &s->program->steps[i] : NULL;
    if (out_name)
        *out_name = st ? st->name : NULL;
    if (out_backend)
        *out_backend = st ? pl_program_step_backend(st) : NULL;
    if (out_total_ns)
        *out_total_ns = st ? atomic_load(&st->total_ns) : 0;
    if (out_runs)
        *out_runs = st ? atomic_load(&st->runs) : 0;
    pl_sess_peek_end(s, held);
}

size_t pl_session_profile_nodes(pl_session *s, bool on)
{
    if (s != NULL && s->stage != NULL) {
        const pl_session *pre = pl_stage_prefix(s->stage);
        return pre ? pl_session_profile_nodes((pl_session *)pre, on) : 0;
    }
    if (s == NULL || s->program == NULL)
        return 0;
    bool held = atomic_load(&s->measuring);
    if (held)
        pthread_rwlock_wrlock(&s->plan_lock);
    s->profiling = on;
    size_t n = 0;
    /* (the plan as made's first window still needs its node times) */
    if (on || !atomic_load(&s->measuring) || s->trial != 0)
        n = pl_measure_node_times(s->program, on);
    if (held)
        pthread_rwlock_unlock(&s->plan_lock);
    return on ? n : 0;
}

size_t pl_session_step_nodes(const pl_session *s, size_t i, pl_node_profile *out, size_t cap)
{
    if (s != NULL && s->stage != NULL) {
        const pl_session *pre = pl_stage_prefix(s->stage);
        size_t n_pre = pre ? pl_session_step_count(pre) : 0;
        return i < n_pre ? pl_session_step_nodes(pre, i, out, cap) : 0;
    }
    bool held = pl_sess_peek_begin(s);
    size_t n = 0;
    if (s != NULL && s->program != NULL && i < s->program->n_steps) {
        pl_node_time *t = cap > 0 ? pl_calloc(cap, sizeof *t) : NULL;
        if (cap == 0 || t != NULL)
            n = pl_measure_step_times(s->program, i, t, cap);
        const pl_graph_view *v = s->program->steps[i].view;
        for (size_t k = 0; k < n && k < cap; k++)
            out[k] = (pl_node_profile){.node = pl_graph_view_table.node_name(v, k),
                                       .op = pl_graph_view_table.node_op(v, k),
                                       .min_ns = t[k].min_ns,
                                       .total_ns = t[k].total_ns,
                                       .runs = t[k].runs};
        pl_free(t);
    }
    pl_sess_peek_end(s, held);
    return n;
}

size_t pl_session_warning_count(const pl_session *s)
{
    if (s != NULL && s->stage != NULL)
        return pl_stage_warning_count(s->stage);
    bool held = pl_sess_peek_begin(s);
    size_t n = s ? s->warnings.n : 0;
    pl_sess_peek_end(s, held);
    return n;
}

/* (a warning's text stays while the session lives: only the list grows) */
const char *pl_session_warning(const pl_session *s, size_t i)
{
    if (s != NULL && s->stage != NULL)
        return pl_stage_warning(s->stage, i);
    bool held = pl_sess_peek_begin(s);
    const char *w = s && i < s->warnings.n ? s->warnings.items[i] : NULL;
    pl_sess_peek_end(s, held);
    return w;
}

/* A staged session's description: its prefix's program (none when every
 * node waits for run time), the model's rewrites, and "staged": the nodes
 * planned at run time and the tails planned so far. */
static pl_status *pl_sess_describe_staged(const pl_session *s, char **out_json)
{
    const pl_session *pre = pl_stage_prefix(s->stage);
    json_t *root = NULL;
    if (pre != NULL) {
        char *text = NULL;
        bool held = pl_sess_peek_begin(pre);
        pl_status *st = pre->program == NULL
                            ? pl_status_create(PL_CODE_INTERNAL, "%s", pre->broken)
                            : pl_program_describe(pre->program, s->model->path,
                                                  &s->model->rewrites, &pre->warnings,
                                                  s->model->filedata, pre->pinned,
                                                  pre->n_pinned, &text);
        pl_sess_peek_end(pre, held);
        PL_RETURN_IF_ERROR(st);
        root = json_loads(text, 0, NULL);
        pl_free(text);
    } else {
        root = json_pack("{s:s, s:[], s:[], s:[]}", "model", s->model->path, "placement",
                         "subgraphs", "steps");
        json_t *opt = json_array();
        for (size_t i = 0; opt != NULL && i < s->model->rewrites.n; i++)
            json_array_append_new(opt, json_string(s->model->rewrites.items[i]));
        if (root != NULL && opt != NULL)
            json_object_set_new(root, "optimizations", opt);
        else
            json_decref(opt);
    }
    json_t *staged = json_pack("{s:I, s:I, s:b}", "tail_nodes",
                               (json_int_t)pl_stage_tail_nodes(s->stage), "tails_planned",
                               (json_int_t)pl_stage_spec_count(s->stage), "prefix",
                               pre != NULL);
    /* the tiers of its tails (stage.c, STG_TIER_WEIGHT) */
    for (int quick = 0; staged != NULL && quick < 2; quick++) {
        double plan_ms, run_ms;
        uint64_t plans, runs;
        pl_stage_tier(s->stage, quick, &plan_ms, &run_ms, &plans, &runs);
        json_object_set_new(staged, quick ? "quick_tails" : "full_tails",
                            json_pack("{s:I, s:f, s:I, s:f}", "plans_timed", (json_int_t)plans,
                                      "plan_ms", plan_ms, "runs_timed", (json_int_t)runs,
                                      "run_ms", run_ms));
    }
    if (staged != NULL)
        json_object_set_new(staged, "last_tail_quick",
                            json_boolean(pl_stage_last_quick(s->stage)));
    /* the control node run to know its outputs, between prefix and tail */
    const char *pivot = pl_stage_pivot_name(s->stage);
    if (staged != NULL && pivot != NULL)
        json_object_set_new(staged, "run_to_know", json_string(pivot));
    /* the tail the last run used, described as a session of its own */
    char *tail_text = NULL;
    pl_status *tst = pl_stage_describe_tail(s->stage, &tail_text);
    if (tst != NULL) {
        json_decref(staged);
        json_decref(root);
        return tst;
    }
    json_t *tail = tail_text != NULL ? json_loads(tail_text, 0, NULL) : json_null();
    pl_free(tail_text);
    if (staged != NULL && tail != NULL)
        json_object_set_new(staged, "last_tail", tail);
    else
        json_decref(tail);
    if (root != NULL && staged != NULL)
        json_object_set_new(root, "staged", staged);
    else
        json_decref(staged);
    return pl_describe_text(root, out_json);
}

pl_status *pl_session_describe(const pl_session *s, char **out_json)
{
    if (out_json == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_describe: NULL argument");
    *out_json = NULL;
    if (s == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_session_describe: NULL session");
    pl_allocator outer = pl_alloc_scope_enter(s->model->alloc);
    bool held = pl_sess_peek_begin(s);
    pl_status *st = s->stage != NULL ? pl_sess_describe_staged(s, out_json)
                    : s->program == NULL
                        ? pl_status_create(PL_CODE_INTERNAL, "%s", s->broken)
                        : pl_program_describe(s->program, s->model->path, &s->model->rewrites,
                                              &s->warnings, s->model->filedata, s->pinned,
                                              s->n_pinned, out_json);
    pl_sess_peek_end(s, held);
    pl_alloc_scope_leave(outer);
    return st;
}

size_t pl_session_idle_modules(const pl_session *s, pl_module **out, size_t max)
{
    size_t n = 0;
    if (s == NULL || s->stage != NULL || s->program == NULL)
        return 0; /* (a staged one's tails decide per signature) */
    for (size_t b = 0; b < s->n_retained && n < max; b++) {
        bool used = strcmp(s->retained[b]->name, "cpu") == 0;
        for (size_t i = 0; i < s->program->n_steps && !used; i++)
            used = s->program->steps[i].module == s->retained[b];
        if (!used)
            out[n++] = s->retained[b];
    }
    return n;
}

bool pl_session_host_only(const pl_session *s)
{
    if (s == NULL || s->stage != NULL)
        return false;
    for (size_t b = 0; b < s->n_retained; b++)
        if (!(s->retained[b]->api.capabilities & PL_CAP_HOST_MEMORY))
            return false;
    return true;
}

/* For control.c (control.h): the program's steps one after the other in
 * the calling thread. */
size_t pl_session_arena_bytes(pl_session *s)
{
    if (s == NULL)
        return 0;
    if (s->stage != NULL)
        return pl_stage_arena_bytes(s->stage);
    size_t bytes = 0;
    for (size_t d = 0; s->program != NULL && s->program->arena_bytes != NULL &&
                       d < s->program->n_devs;
         d++)
        bytes += s->program->arena_bytes[d];
    return bytes;
}

pl_status *pl_session_run_inline(pl_session *s, const pl_tensor *inputs, pl_tensor *outputs,
                                 int worker)
{
    if (s->stage != NULL)
        return pl_status_create(PL_CODE_UNSUPPORTED,
                                "%s: shapes inside a control-flow body that are known only "
                                "at run time are not supported",
                                s->model->path);
    return pl_runner_run_inline(s->runner, inputs, outputs, worker);
}
