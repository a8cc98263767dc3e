/* run.h — running an execution program.
 *
 * A runner holds the run contexts of one program: each run in flight takes
 * one (its own arenas, engine variables and per-step arguments) and gives
 * it back when done, so concurrent runs never share memory. A run binds the
 * caller's inputs and outputs, pushes one engine operation per step of the
 * program — reading the variables of its inputs, writing those of its
 * outputs and of every earlier value whose bytes its outputs reuse — and
 * waits for a final operation that reads every variable. */
#ifndef PL_CORE_RUN_H
#define PL_CORE_RUN_H

#include <stdint.h>
#include <time.h>

#include "plinth/plinth.h"
#include "program.h"

/* The monotonic clock in nanoseconds (step times, run times, plan times). */
static inline uint64_t pl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct pl_runner pl_runner;

/* A runner for P, which must outlive it. No context is made until the
 * first run. */
pl_status *pl_runner_create(pl_program *p, pl_runner **out_runner);

/* Makes the first run context now when runs of R's program take device
 * memory (arenas, device workspaces, outputs left on a device), so that a
 * device too small for them shows at session creation, not at the first
 * run; the context is kept for that run. On an allocation that failed on
 * a device, *OUT_FULL_DEV is its index in the program (else -1). */
pl_status *pl_runner_prepare(pl_runner *r, int32_t *out_full_dev);

/* Frees every run context; no run may be in flight. NULL is a no-op. */
void pl_runner_destroy(pl_runner *r);

/* One run, as pl_session_run describes. Thread-safe: concurrent runs take
 * separate contexts. */
pl_status *pl_runner_run(pl_runner *r, const pl_io *inputs, size_t n_inputs,
                         pl_io *outputs, size_t n_outputs);

/* Whether runs of P walk its steps in the calling thread (every step on
 * the host and synchronous: the CPU pool's run in the caller, a
 * pinned-thread module's are handed to its worker and waited for) rather
 * than push them all to the engine (a device or an asynchronous module). */
bool pl_run_is_sequential(const pl_program *p);

/* Runs the program in the calling thread, step after step, without the
 * engine, so that it may be called from inside an engine operation (a
 * control-flow body). INPUTS: one tensor per graph input, OUTPUTS one per
 * graph output, in graph order, host memory of the program's types
 * (unchecked). WORKER: the calling thread's worker index. */
pl_status *pl_runner_run_inline(pl_runner *r, const pl_tensor *inputs, pl_tensor *outputs,
                                int worker);

#endif
