/* measure.c — checking a cost-based placement against its own runs
 * (measure.h). */
#include "measure.h"

#include <stdio.h>

#include "alloc.h"
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

pl_status *pl_measure_slow_steps(const pl_program *p, const pl_partition *part, unsigned runs,
                                 bool early, pl_measure_slow **out, size_t *out_n)
{
    *out = NULL;
    *out_n = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        double us = 0;
        const pl_part_cluster *cl = pl_measure_step(&p->steps[i], part, early, &us);
        if (cl == NULL)
            continue;
        if (*out == NULL) {
            *out = pl_calloc(p->n_steps, sizeof **out);
            if (*out == NULL)
                return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                        "out of memory weighing measured run times");
        }
        pl_measure_slow *m = &(*out)[(*out_n)++];
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
