/* engine.h — the dependency engine, in the tradition of MXNet's
 * ThreadedEngine: functions are pushed with the variables they read and
 * write, and run as soon as every earlier conflicting function is done.
 *
 * Semantics:
 *   - Two operations that share a variable, at least one of them writing it,
 *     run in push order; readers of a variable may run at the same time. A
 *     variable in both lists counts as written; duplicates are tolerated.
 *   - push is thread-safe: several threads may push at once. Operations
 *     pushed by one thread keep that thread's order; between threads, the
 *     order is the order in which the pushes happened.
 *   - Errors. A function returns a status. A failing operation marks every
 *     variable it writes as failed with "op '<name>' failed: <message>".
 *     A later operation that READS a failed variable (read list, or both
 *     lists) is skipped: its function is not called, and it fails with the
 *     same status, marking its own written variables failed in turn.
 *     Recovery: an operation that only WRITES a failed variable (a full
 *     overwrite) runs normally, and when it succeeds the variable is healthy
 *     again. wait_var returns the variable's error as of that point.
 *     wait_all returns the first failure (a failed or a skipped operation)
 *     since the previous wait_all, and forgets it; variables stay failed.
 *   - Priorities order the ready operations of one worker pool: higher
 *     first, then push order.
 *   - Pools: PL_EXEC_CPU operations run on the runtime's CPU pool (the same
 *     threads that serve host->parallel_for: one thread budget). Each
 *     (device, stream) of PL_EXEC_DEVICE gets a worker thread of its own,
 *     made on first use.
 *   - The naive engine runs every push synchronously in the calling thread
 *     (pushes from several threads are serialised), with the same error
 *     semantics; push_async then waits for the completion before returning.
 *   - destroy cancels every operation that has not started (its function is
 *     never called; it fails with PL_CODE_CANCELLED), waits for the running
 *     ones — asynchronous ones until they are signalled — and frees every
 *     variable. It never runs a function after it returns. */
#ifndef PL_CORE_ENGINE_H
#define PL_CORE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "plinth/host.h"
#include "plinth/module.h"
#include "plinth/plinth.h"
#include "log.h"
#include "threadpool.h"

typedef struct pl_engine pl_engine;
typedef struct pl_var pl_var;

/* Where an operation runs. */
typedef enum pl_exec_kind {
    PL_EXEC_CPU = 0,
    PL_EXEC_DEVICE = 1,
    /* A trivial op (bookkeeping, microseconds at most): run by the thread
     * that makes it ready, never queued, so finishing it wakes no worker
     * (rc->worker is 0, rc->device 0). Pushed ready, it runs in the
     * pushing thread. */
    PL_EXEC_INLINE = 2
} pl_exec_kind;

typedef struct pl_exec_ctx {
    pl_exec_kind kind;
    int32_t device;      /* PL_EXEC_DEVICE: the engine-wide device number */
    int32_t stream;      /* PL_EXEC_DEVICE: the stream number on it */
    void *stream_handle; /* handed to the function in pl_run_context.stream */
} pl_exec_ctx;

/* A synchronous operation. rc->device, rc->stream and rc->worker say where it
 * runs. Returns NULL on success; the engine takes ownership of a status. */
typedef pl_status *(*pl_engine_fn)(void *arg, const pl_run_context *rc);

/* An asynchronous operation: starts work and arranges for `done` to be
 * signalled (pl_engine_complete or host->complete), once, from any thread.
 * Returning lets the worker go on; the operation is finished only when
 * `done` is signalled. */
typedef void (*pl_engine_async_fn)(void *arg, const pl_run_context *rc,
                                   pl_completion *done);

typedef struct pl_engine_options {
    /* Every allocation of the engine and its pools, on any thread; ctl
     * NULL: the system allocator. */
    pl_allocator alloc;
    pl_engine_kind kind;  /* threaded or naive */
    int threads;          /* CPU budget, >= 1 */
    const pl_logger *logger; /* borrowed; may be NULL */
    /* How long an idle thread of the CPU pool spins before it sleeps, in
     * microseconds (pl_threadpool_create_ex); 0 = sleep at once. Device
     * workers never spin. */
    int spin_us;
} pl_engine_options;

pl_status *pl_engine_create(const pl_engine_options *options,
                            pl_engine **out_engine);

/* Cancels what has not started, waits for what runs, frees every variable.
 * Must not be called from inside an operation. NULL is a no-op. */
void pl_engine_destroy(pl_engine *engine);

/* The CPU pool: host->parallel_for runs on it. */
pl_threadpool *pl_engine_cpu_pool(pl_engine *engine);

/* A new variable; NULL only when out of memory. */
pl_var *pl_engine_new_var(pl_engine *engine);

/* Deletes VAR once everything pushed on it before has finished. VAR may not
 * be used in a push after this call. */
void pl_engine_delete_var(pl_engine *engine, pl_var *var);

/* The engine-wide device number (pl_exec_ctx.device) of device INDEX of
 * OWNER (a module, say): the same pair always gets the same number, and
 * different pairs different ones, from 0 up, for as long as the engine
 * lives. Fails only out of memory. Thread-safe. */
pl_status *pl_engine_device_key(pl_engine *engine, const void *owner, int32_t index,
                                int32_t *out_key);

/* Pushes FN. Returns at once (threaded engine) or after FN ran (naive). A
 * status is returned only for a push that could not be queued (out of
 * memory, NULL variable); the function's own failure reaches waiters.
 * NAME must stay valid until the operation finished; it names the op in
 * error messages. */
pl_status *pl_engine_push(pl_engine *engine, pl_engine_fn fn, void *arg,
                          pl_exec_ctx ctx, pl_var *const *read_vars,
                          size_t n_read, pl_var *const *write_vars,
                          size_t n_write, int priority, const char *name);

/* Pushes an asynchronous FN (see pl_engine_async_fn). */
pl_status *pl_engine_push_async(pl_engine *engine, pl_engine_async_fn fn,
                                void *arg, pl_exec_ctx ctx,
                                pl_var *const *read_vars, size_t n_read,
                                pl_var *const *write_vars, size_t n_write,
                                int priority, const char *name);

/* Signals the completion of an asynchronous operation; takes ownership of
 * STATUS (NULL for success). A second signal of the same completion is
 * ignored (and logged). Callable from any thread. */
void pl_engine_complete(pl_completion *done, pl_status *status);

/* Blocks until every operation pushed before this call that touches VAR has
 * finished; returns a copy of VAR's error, or NULL. Must not be called from
 * inside an operation. Thread-safe. */
pl_status *pl_engine_wait_var(pl_engine *engine, pl_var *var);

/* Blocks until every operation pushed before this call has finished;
 * returns the first failure since the previous wait_all (a copy), or NULL. */
pl_status *pl_engine_wait_all(pl_engine *engine);

/* Blocks until the engine has no operation pending, other callers' included;
 * allocates nothing and leaves the first failure for wait_all. The fallback
 * when a wait_var could not be made (out of memory). */
void pl_engine_wait_idle(pl_engine *engine);

#endif
