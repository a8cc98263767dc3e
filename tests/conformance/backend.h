/* backend.h — the backends the conformance runner tests one by one: which
 * loaded modules take nodes, a runtime whose placement offers every node to
 * one of them first, and how many nodes of a session it really runs. */
#ifndef PLINTH_CONFORMANCE_BACKEND_H
#define PLINTH_CONFORMANCE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include <plinth/plinth.h>

/* A module that takes nodes (imperative or symbolic), loaded or not. */
typedef struct cf_backend {
    char name[64];
    pl_module_status status;
    char reason[512]; /* why it is not loaded; "" when it is */
} cf_backend;

/* The modules of RT that take nodes, in the runtime's order, into a
 * malloc'ed array *OUT_LIST of *OUT_N (NULL and 0 when there are none or
 * memory ran out). A module that was not loaded and whose capabilities are
 * therefore unknown is listed too, so that its absence shows. */
void cf_backends_list(const pl_runtime *rt, cf_backend **out_list, size_t *out_n);

/* Creates a runtime from CONFIG with its [placement] section replaced by
 * "order = BACKEND" and "min_subgraph_nodes = 1": BACKEND is offered every
 * node first and cpu takes the rest. (strict stays no: a compile of
 * BACKEND's that fails leaves a session warning, which the runner counts
 * as BACKEND's failure.) The derived file is written beside CONFIG (so that
 * its relative paths mean the same), read, and removed. QUIET drops the
 * runtime's log lines. On failure prints why to stderr and returns NULL. */
pl_runtime *cf_backend_runtime(const char *config, const char *backend, bool quiet);

/* Counts, from S's explain, the nodes BACKEND runs (*OUT_ON) of all
 * (*OUT_TOTAL); when some node is not on BACKEND, WHY gets BACKEND's
 * reason for the first such node ("" when all are). */
pl_status *cf_backend_count(const pl_session *s, const char *backend, size_t *out_on,
                            size_t *out_total, char *why, size_t why_size);

#endif /* PLINTH_CONFORMANCE_BACKEND_H */
