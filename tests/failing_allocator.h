/* tests/failing_allocator.h — an allocator for the allocation-failure
 * sweeps: it wraps another (usually the system one) and, once armed with
 * N, refuses the Nth allocation counted from the arming and every one after
 * it, until disarmed. A sweep arms it with N = 1, 2, … around one call and
 * stops at the first N the call never reached; every call in between must
 * fail cleanly (out of memory, nothing leaked: the ASan build checks).
 *
 * It is a value a test hands to one runtime (pl_runtime_options.allocator)
 * or, for internal units, makes the thread's current allocator: nothing is
 * process-wide, and other runtimes in the process allocate normally. Frees
 * are always passed through. Counters are atomic: the engine's workers
 * allocate too. Public API only, so any test program can include it. */
#ifndef PL_TESTS_FAILING_ALLOCATOR_H
#define PL_TESTS_FAILING_ALLOCATOR_H

#include <execinfo.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "plinth/plinth.h"

typedef struct pl_failing_allocator {
    pl_allocator inner;
    atomic_long count;    /* allocations asked for since the last arming */
    atomic_long fail_at;  /* 0: never refuse */
    atomic_long refused;  /* refusals since the last arming */
    atomic_long live;     /* blocks made and not yet freed, ever */
    /* When set, the stack of the first refusal of each arming is written
     * there, one line of "object+offset" frames, for finding which
     * allocation sites a sweep reached (addr2line turns them into lines). */
    FILE *trace;
} pl_failing_allocator;

/* dladdr needs _GNU_SOURCE; without it the frames are bare addresses. */
#ifdef _GNU_SOURCE
#include <dlfcn.h>
#endif

static void pl_failing_allocator_trace(FILE *f)
{
    void *frames[16];
    int n = backtrace(frames, 16);
    for (int i = 1; i < n; i++) {
#ifdef _GNU_SOURCE
        Dl_info info;
        if (dladdr(frames[i], &info) && info.dli_fname != NULL) {
            fprintf(f, " %s+0x%jx", info.dli_fname,
                    (uintmax_t)((char *)frames[i] - (char *)info.dli_fbase - 1));
            continue;
        }
#endif
        fprintf(f, " %p", frames[i]);
    }
    fputc('\n', f);
}

static bool pl_failing_allocator_ctl(void *self, pl_allocator_command command,
                                     size_t bytes, void **inout_ptr)
{
    pl_failing_allocator *fa = self;
    if (command != PL_ALLOCATOR_FREE) {
        long n = atomic_fetch_add(&fa->count, 1) + 1;
        long at = atomic_load(&fa->fail_at);
        if (at > 0 && n >= at) {
            if (atomic_fetch_add(&fa->refused, 1) == 0 && fa->trace != NULL)
                pl_failing_allocator_trace(fa->trace);
            return false;
        }
    }
    bool ok = fa->inner.ctl(fa->inner.self, command, bytes, inout_ptr);
    if (ok && (command == PL_ALLOCATOR_MALLOC || command == PL_ALLOCATOR_CALLOC))
        atomic_fetch_add(&fa->live, 1);
    else if (command == PL_ALLOCATOR_FREE)
        atomic_fetch_sub(&fa->live, 1);
    return ok;
}

/* Wraps INNER (ctl NULL: the system allocator); disarmed. */
static inline void pl_failing_allocator_init(pl_failing_allocator *fa,
                                             pl_allocator inner)
{
    fa->inner = inner.ctl ? inner : pl_allocator_system();
    atomic_init(&fa->count, 0);
    atomic_init(&fa->fail_at, 0);
    atomic_init(&fa->refused, 0);
    atomic_init(&fa->live, 0);
    fa->trace = NULL;
}

/* The allocator value to hand out; FA must outlive everything made with it. */
static inline pl_allocator pl_failing_allocator_value(pl_failing_allocator *fa)
{
    return (pl_allocator){.self = fa, .ctl = pl_failing_allocator_ctl};
}

/* Refuse the Nth allocation from now on and every later one; 0 disarms.
 * Either way the counters start again from zero. */
static inline void pl_failing_allocator_arm(pl_failing_allocator *fa, long n)
{
    atomic_store(&fa->fail_at, 0);
    atomic_store(&fa->count, 0);
    atomic_store(&fa->refused, 0);
    atomic_store(&fa->fail_at, n);
}

/* Allocations asked for, and refused, since the last arming. */
static inline long pl_failing_allocator_count(pl_failing_allocator *fa)
{
    return atomic_load(&fa->count);
}
static inline long pl_failing_allocator_refused(pl_failing_allocator *fa)
{
    return atomic_load(&fa->refused);
}
/* Blocks made through FA and not freed yet. */
static inline long pl_failing_allocator_live(pl_failing_allocator *fa)
{
    return atomic_load(&fa->live);
}

/* For tests of the core's internal units (they include alloc.h first):
 * pl_sweep_fail_at(n) with n > 0 arms one failing allocator over the system
 * one and makes it the thread's current allocator, so code handed no
 * allocator (plan, opset, new graphs) allocates through it; -1 makes it
 * current but refusing nothing (to build a graph whose later allocations
 * a sweep should reach); 0 disarms it and restores the previous current
 * allocator. */
#ifdef PL_CORE_ALLOC_H
static pl_failing_allocator pl_sweep_fa;
static pl_allocator pl_sweep_outer;
static bool pl_sweep_on;

static inline void pl_sweep_fail_at(long n)
{
    if (pl_sweep_fa.inner.ctl == NULL)
        pl_failing_allocator_init(&pl_sweep_fa, pl_allocator_system());
    pl_failing_allocator_arm(&pl_sweep_fa, n > 0 ? n : 0);
    if (n != 0 && !pl_sweep_on) {
        pl_sweep_outer = pl_alloc_scope_enter(pl_failing_allocator_value(&pl_sweep_fa));
        pl_sweep_on = true;
    } else if (n == 0 && pl_sweep_on) {
        pl_alloc_scope_leave(pl_sweep_outer);
        pl_sweep_on = false;
    }
}
#endif

#endif
