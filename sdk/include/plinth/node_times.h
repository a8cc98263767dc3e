/* plinth/node_times.h — a compiled subgraph's node times, for ABI 1.17's
 * compiled_times (header only).
 *
 * A module that times its compiled subgraphs node by node keeps one of
 * these per compiled subgraph: N, the node count of the view it was made
 * from, and two arrays of N entries it allocates itself (with its own
 * allocator, before the first PL_TIMES_START reaches pl_node_times_op).
 * A timed run calls pl_node_times_run_begin, then pl_node_times_add for
 * each piece of its work with the view index of the node it computes, and
 * pl_node_times_run_end when the run succeeded; each node's fastest run is
 * then its work's time in one run, not the fastest of each piece taken
 * from different runs. compiled_times answers with pl_node_times_op.
 * Not thread-safe: the core never runs one compiled subgraph twice at
 * once, nor calls compiled_times while it runs. */
#ifndef PLINTH_NODE_TIMES_H
#define PLINTH_NODE_TIMES_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_node_times {
    size_t n;            /* the view's node count */
    int timing;          /* between START and STOP: runs are timed */
    int started;         /* a START came: READ answers */
    pl_node_time *times; /* N entries: what READ gives */
    uint64_t *run_ns;    /* N entries: the run under way */
} pl_node_times;

/* A clock in nanoseconds, for the pieces' times: POSIX's monotonic clock
 * where <time.h> declares it (a POSIX or GNU build), else C11's
 * timespec_get (a strict -std=c11 build without feature macros). */
static inline uint64_t pl_node_times_now(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC
    clock_gettime(CLOCK_MONOTONIC, &ts);
#else
    timespec_get(&ts, TIME_UTC);
#endif
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void pl_node_times_run_begin(pl_node_times *t)
{
    if (t->timing)
        memset(t->run_ns, 0, t->n * sizeof *t->run_ns);
}

/* Gives NS of the run's work to NODE (a view index; others are ignored). */
static inline void pl_node_times_add(pl_node_times *t, int64_t node, uint64_t ns)
{
    if (t->timing && node >= 0 && (uint64_t)node < (uint64_t)t->n)
        t->run_ns[node] += ns;
}

static inline void pl_node_times_run_end(pl_node_times *t)
{
    if (!t->timing)
        return;
    for (size_t i = 0; i < t->n; i++) {
        pl_node_time *e = &t->times[i];
        if (e->runs == 0 || t->run_ns[i] < e->min_ns)
            e->min_ns = t->run_ns[i];
        e->total_ns += t->run_ns[i];
        e->runs++;
    }
}

/* compiled_times' answer for T (the arrays allocated, or NULL: every
 * operation answers 0). */
static inline int pl_node_times_op(pl_node_times *t, int op, pl_node_time *out, size_t n)
{
    if (t->times == NULL || t->run_ns == NULL)
        return 0;
    switch (op) {
    case PL_TIMES_START:
        memset(t->times, 0, t->n * sizeof *t->times);
        t->timing = t->started = 1;
        return 1;
    case PL_TIMES_READ:
        if (!t->started || out == NULL || n != t->n)
            return 0;
        memcpy(out, t->times, n * sizeof *out);
        return 1;
    case PL_TIMES_STOP:
        t->timing = 0;
        return 1;
    default:
        return 0;
    }
}

#ifdef __cplusplus
}
#endif

#endif
