/* threadpool.h — the runtime's one CPU thread budget, lent to modules as
 * host->parallel_for. */
#ifndef PL_CORE_THREADPOOL_H
#define PL_CORE_THREADPOOL_H

#include <stddef.h>

#include "plinth/host.h"
#include "plinth/plinth.h"

typedef struct pl_threadpool pl_threadpool;

/* Starts threads - 1 workers (the caller of parallel_for is the last
 * thread). threads >= 1. */
pl_status *pl_threadpool_create(int threads, pl_threadpool **out_pool);
/* Stops and joins the workers. No parallel_for may be running. */
void pl_threadpool_destroy(pl_threadpool *pool);
/* Threads a parallel_for may use, the caller included. */
int pl_threadpool_size(const pl_threadpool *pool);
/* Runs fn over [0, n) in chunks of at least grain, the caller taking part;
 * returns when every chunk is done. Thread-safe; a call from inside a chunk
 * runs inline, so nesting never deadlocks. */
void pl_threadpool_parallel_for(pl_threadpool *pool, size_t n, size_t grain,
                                pl_parallel_fn fn, void *arg);

#endif
