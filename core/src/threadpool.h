/* threadpool.h — the runtime's one CPU thread budget. The same threads run
 * the engine's ready operations (tasks) and the chunks of host->parallel_for,
 * so modules never need a pool of their own. A device worker of the engine
 * is a pool too: one worker, tasks only. */
#ifndef PL_CORE_THREADPOOL_H
#define PL_CORE_THREADPOOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/host.h"
#include "plinth/plinth.h"

typedef struct pl_threadpool pl_threadpool;

/* A unit of work for the pool's workers, embedded in the caller's own
 * struct. run may return another task to run at once on the same worker
 * (the engine's continuation), or NULL. Ready tasks are taken by priority,
 * higher first, then by seq, lower first. */
typedef struct pl_task pl_task;
struct pl_task {
    pl_task *(*run)(pl_task *task, int worker);
    int priority;
    uint64_t seq;
};

/* How long, by default and at most, an idle thread of the pool spins (in
 * microseconds) before it sleeps: `spin_us` in backend.ini. */
#define PL_THREADPOOL_SPIN_US_DEFAULT 100
#define PL_THREADPOOL_SPIN_US_MAX 100000

/* What one spin-wait pause instruction costs on this CPU, in nanoseconds
 * (timed once: 2000 of them; 10 to 50 us): 65 cycles or so on AMD Zen,
 * 140 on recent Intel cores, a few on older ones. */
double pl_threadpool_pause_ns(void);

/* A pool for parallel_for alone: threads - 1 workers, the caller of
 * parallel_for being the last thread; idle threads spin for
 * PL_THREADPOOL_SPIN_US_DEFAULT. threads >= 1. */
pl_status *pl_threadpool_create(int threads, pl_threadpool **out_pool);

/* A pool with WORKERS threads (0 allowed) that run tasks and parallel_for
 * chunks, and a budget: the most threads one parallel_for uses, its caller
 * included. A worker that runs out of work, and a parallel_for caller
 * waiting for its helpers, first spin for up to SPIN_US microseconds
 * (clamped to 0..PL_THREADPOOL_SPIN_US_MAX; 0 = sleep at once) so that work
 * arriving soon after costs no wake-up; a spinning worker burns its core. */
pl_status *pl_threadpool_create_ex(int workers, int budget, int spin_us,
                                   pl_threadpool **out_pool);
/* The same, allocating through ALLOC (pl_threadpool_create_ex uses the
 * thread's current allocator, alloc.h). */
pl_status *pl_threadpool_create_in(pl_allocator alloc, int workers, int budget,
                                   int spin_us, pl_threadpool **out_pool);

/* Stops and joins the workers, spinning ones included, without waiting out
 * their spin. Pending tasks are dropped: the owner drains them first. No
 * parallel_for may be running. */
void pl_threadpool_destroy(pl_threadpool *pool);

/* The budget: threads a parallel_for may use, the caller included. */
int pl_threadpool_size(const pl_threadpool *pool);

/* True when the calling thread is a worker of POOL. */
bool pl_threadpool_is_worker(const pl_threadpool *pool);

/* Holds (DELTA +1) or releases (-1) the pool's spinning: while any hold is
 * on, idle workers sleep at once and spinning ones stop. The engine holds
 * it while a device or pinned-thread operation runs outside the pool (a
 * oneDNN subgraph whose OpenMP team needs the cores the spinners would
 * take). Thread-safe. */
void pl_threadpool_hold_spin(pl_threadpool *pool, int delta);

/* Runs fn over [0, n) in chunks of at least grain, the caller taking part;
 * returns when every chunk is done. Thread-safe; a call from inside a chunk
 * runs inline, so nesting never deadlocks. */
void pl_threadpool_parallel_for(pl_threadpool *pool, size_t n, size_t grain,
                                pl_parallel_fn fn, void *arg);

/* Queues TASK for a worker. */
void pl_threadpool_submit(pl_threadpool *pool, pl_task *task);

/* Queues N tasks at once. With keep_one, the best of all queued tasks is
 * taken back out and returned for the calling worker to run itself (saving a
 * wake-up); otherwise returns NULL. */
pl_task *pl_threadpool_submit_batch(pl_threadpool *pool, pl_task *const *tasks,
                                    size_t n, bool keep_one);

/* Makes the calling thread one more runner of POOL's tasks until *DONE:
 * it takes ready tasks (and the continuations they hand back) like a
 * worker, spins for up to spin_us when there are none (unless the spin is
 * held), then sleeps until a task or pl_threadpool_wake_helpers. Tasks run
 * with the thread's own worker index when it is a worker of POOL, else
 * with the index one past the workers'. A thread that waits for work it
 * pushed this way runs that work itself instead of handing it to a worker
 * and sleeping until a wake-up, which costs tens of microseconds. */
void pl_threadpool_help(pl_threadpool *pool, const atomic_bool *done);

/* Wakes the threads sleeping in pl_threadpool_help after a flag one of them
 * waits for was set. Thread-safe. */
void pl_threadpool_wake_helpers(pl_threadpool *pool);

#endif
