/* measure.c — checking a cost-based placement against its own runs
 * (measure.h). */
#include "measure.h"

#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "filedata.h"
#include "graph_view.h"
#include "plinth/module.h"
#include "registry.h"

/* Whether step ST's time is its module's work on the host: a compiled
 * subgraph of a host-memory module, run synchronously. */
static bool pl_measure_timed(const pl_prog_step *st)
{
    if (st->kind != PL_STEP_SUBGRAPH || st->dev != 0 || st->module == NULL)
        return false;
    uint32_t caps = st->module->api.capabilities;
    bool async = (caps & PL_CAP_ASYNC) && st->module->api.run_async != NULL;
    return (caps & PL_CAP_HOST_MEMORY) && !async;
}

/* Step ST's cluster of PART when its fastest run (*OUT_US) makes it slow
 * by the thresholds (EARLY: the early ones), else NULL. */
static const pl_part_cluster *pl_measure_step(const pl_prog_step *st, const pl_partition *part,
                                              bool early, double *out_us)
{
    uint64_t best = atomic_load(&st->min_ns);
    if (!pl_measure_timed(st) || best == UINT64_MAX ||
        st->cluster >= pl_partition_cluster_count(part))
        return NULL;
    const pl_part_cluster *cl = pl_partition_cluster(part, st->cluster);
    double us = (double)best / 1e3;
    double floor_us = early ? PL_MEASURE_EARLY_FLOOR_US : PL_MEASURE_FLOOR_US;
    double over_est = early ? PL_MEASURE_EARLY_OVER : PL_MEASURE_OVER_EST;
    double over_alt = early ? PL_MEASURE_EARLY_OVER : PL_MEASURE_OVER_ALT;
    if (cl->est_us < 0 || cl->alt_backend < 0 || cl->alt_us < 0 || us < floor_us ||
        us < over_est * cl->est_us || us < over_alt * cl->alt_us)
        return NULL;
    *out_us = us;
    return cl;
}

bool pl_measure_any_slow(const pl_program *p, const pl_partition *part, bool early)
{
    double us;
    for (size_t i = 0; i < p->n_steps; i++)
        if (pl_measure_step(&p->steps[i], part, early, &us) != NULL)
            return true;
    return false;
}

/* Appends a slot to *OUT (*OUT_N entries), or returns NULL when out of
 * memory. */
static pl_measure_slow *pl_measure_add(pl_measure_slow **out, size_t *out_n)
{
    pl_measure_slow *grown = pl_realloc(*out, (*out_n + 1) * sizeof **out);
    if (grown == NULL)
        return NULL;
    *out = grown;
    pl_measure_slow *m = &grown[(*out_n)++];
    memset(m, 0, sizeof *m);
    return m;
}

static pl_status *pl_measure_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory weighing measured run times");
}

/* The nodes of step ST (cluster CL of PART, not slow as a whole) whose own
 * work, as its module timed it (ABI 1.17), was slow by the thresholds for
 * a subgraph against their own estimates: appended to *OUT. */
static pl_status *pl_measure_nodes(const pl_prog_step *st, const pl_part_cluster *cl,
                                   pl_partition *part, struct pl_filedata *files, unsigned runs,
                                   pl_measure_slow **out, size_t *out_n)
{
    pl_module *m = st->module;
    if (!PL_ABI_HAS_FN(pl_module_api, &m->api, compiled_times) || cl->n_nodes == 0)
        return NULL;
    pl_node_time *t = pl_calloc(cl->n_nodes, sizeof *t);
    if (t == NULL)
        return pl_measure_oom();
    if (m->api.compiled_times(m->ctx, st->compiled, PL_TIMES_READ, t, cl->n_nodes) != 1) {
        pl_free(t);
        return NULL;
    }
    for (size_t i = 0; i < cl->n_nodes; i++) {
        double us = (double)t[i].min_ns / 1e3, own_us, alt_us;
        int32_t alt;
        pl_nid n = cl->nodes[i];
        if (t[i].runs == 0 || us < PL_MEASURE_FLOOR_US)
            continue;
        /* (the weights a module reads to weigh the node go again after) */
        pl_status *in = pl_filedata_enter_lazy(files);
        bool weighed = in == NULL && pl_partition_node_weigh(part, n, &own_us, &alt_us, &alt);
        pl_status *left = pl_filedata_leave(files, NULL, 0);
        pl_status_free(in);
        if (left != NULL) {
            pl_free(t);
            return left;
        }
        if (!weighed || us < PL_MEASURE_OVER_EST * own_us || us < PL_MEASURE_OVER_ALT * alt_us)
            continue;
        pl_measure_slow *s = pl_measure_add(out, out_n);
        if (s == NULL) {
            pl_free(t);
            return pl_measure_oom();
        }
        s->first = n;
        s->backend = cl->backend;
        s->node_only = true;
        snprintf(s->reason, sizeof s->reason,
                 "measured: its own work ran %.3f ms at best over the session's first %u runs "
                 "(as %s timed the subgraph of %zu node(s) it was part of), %.0fx the %.3f ms "
                 "estimated here for it alone, and %s's estimate for it is %.3f ms ([placement] "
                 "measure = yes)",
                 us / 1e3, runs, m->name, cl->n_nodes, own_us > 0 ? us / own_us : 0.0,
                 own_us / 1e3, pl_partition_backend(part, (size_t)alt)->module->name,
                 alt_us / 1e3);
    }
    pl_free(t);
    return NULL;
}

pl_status *pl_measure_slow_steps(const pl_program *p, pl_partition *part, unsigned runs,
                                 bool early, pl_measure_slow **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        double us = 0;
        const pl_prog_step *st = &p->steps[i];
        const pl_part_cluster *cl = pl_measure_step(st, part, early, &us);
        if (cl == NULL) {
            /* a subgraph not slow as a whole may hide a slow node */
            size_t before = *out_n;
            if (!early && pl_measure_timed(st) && st->cluster < pl_partition_cluster_count(part))
                PL_RETURN_IF_ERROR(pl_measure_nodes(st, pl_partition_cluster(part, st->cluster),
                                                    part, pl_graph_filedata(p->g), runs, out,
                                                    out_n));
            for (size_t k = before; k < *out_n; k++)
                (*out)[k].step = i;
            continue;
        }
        pl_measure_slow *m = pl_measure_add(out, out_n);
        if (m == NULL)
            return pl_measure_oom();
        m->step = i;
        m->first = cl->nodes[0];
        m->backend = cl->backend;
        const char *alt = pl_partition_backend(part, (size_t)cl->alt_backend)->module->name;
        snprintf(m->reason, sizeof m->reason,
                 "measured: the subgraph of %zu node(s) it was part of ran %.3f ms at best over "
                 "the session's first %u runs, %.0fx the %.3f ms estimated here, and %s's "
                 "estimate for its nodes is %.3f ms ([placement] measure = yes)",
                 cl->n_nodes, us / 1e3, runs, cl->est_us > 0 ? us / cl->est_us : 0.0,
                 cl->est_us / 1e3, alt, cl->alt_us / 1e3);
    }
    return NULL;
}

size_t pl_measure_node_times(pl_program *p, bool on)
{
    size_t n = 0;
    for (size_t i = 0; p != NULL && i < p->n_steps; i++) {
        pl_prog_step *st = &p->steps[i];
        pl_module *m = st->module;
        if (st->kind != PL_STEP_SUBGRAPH || st->compiled == NULL || m == NULL ||
            !PL_ABI_HAS_FN(pl_module_api, &m->api, compiled_times))
            continue;
        n += m->api.compiled_times(m->ctx, st->compiled, on ? PL_TIMES_START : PL_TIMES_STOP,
                                   NULL, 0) == 1;
    }
    return n;
}

size_t pl_measure_step_times(const pl_program *p, size_t i, pl_node_time *out, size_t cap)
{
    if (p == NULL || i >= p->n_steps)
        return 0;
    const pl_prog_step *st = &p->steps[i];
    pl_module *m = st->module;
    if (st->kind != PL_STEP_SUBGRAPH || st->compiled == NULL || m == NULL ||
        !PL_ABI_HAS_FN(pl_module_api, &m->api, compiled_times))
        return 0;
    size_t n = pl_graph_view_table.node_count(st->view);
    pl_node_time *t = pl_calloc(n ? n : 1, sizeof *t);
    if (t == NULL)
        return 0;
    int ok = m->api.compiled_times(m->ctx, st->compiled, PL_TIMES_READ, t, n);
    if (ok == 1 && out != NULL)
        memcpy(out, t, (n < cap ? n : cap) * sizeof *t);
    pl_free(t);
    return ok == 1 ? n : 0;
}
