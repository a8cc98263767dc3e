/* threadpool.c — the CPU pool behind host->parallel_for. A call publishes a
 * job; idle workers and the caller claim chunks of it with an atomic counter.
 * The caller never waits for a chunk nobody has claimed (it claims them
 * itself), so a parallel_for from any thread — an engine worker, a worker of
 * this pool running a chunk, an application thread — always makes progress;
 * from inside a chunk it simply runs inline. Jobs of several concurrent
 * callers are served in arrival order. */
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "status.h"

typedef struct pl_pool_job {
    pl_parallel_fn fn;
    void *arg;
    size_t n;
    size_t chunk;
    size_t n_chunks;
    atomic_size_t next_chunk;   /* next chunk to claim */
    size_t done_chunks;         /* under the pool mutex */
    int users;                  /* workers holding a pointer; under the mutex */
    int next_worker_slot;       /* worker index handed out; under the mutex */
    struct pl_pool_job *next;
} pl_pool_job;

struct pl_threadpool {
    int threads;
    int n_workers;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    pl_pool_job *head;
    pl_pool_job *tail;
    bool stop;
};

/* Set while a thread runs a chunk: nested parallel_for runs inline. */
static _Thread_local bool pl_pool_in_chunk;

static void pl_pool_unlink(pl_threadpool *pool, pl_pool_job *job)
{
    pl_pool_job **pp = &pool->head;
    pl_pool_job *prev = NULL;
    while (*pp != NULL && *pp != job) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == NULL)
        return;
    *pp = job->next;
    if (pool->tail == job)
        pool->tail = prev;
    job->next = NULL;
}

/* Runs chunks of job until none is left unclaimed; returns how many ran. */
static size_t pl_pool_run_chunks(pl_pool_job *job, int worker)
{
    size_t ran = 0;
    bool outer = pl_pool_in_chunk;
    pl_pool_in_chunk = true;
    for (;;) {
        size_t c = atomic_fetch_add(&job->next_chunk, 1);
        if (c >= job->n_chunks)
            break;
        size_t begin = c * job->chunk;
        size_t end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
        job->fn(job->arg, begin, end, worker);
        ran++;
    }
    pl_pool_in_chunk = outer;
    return ran;
}

static void *pl_pool_worker(void *arg)
{
    pl_threadpool *pool = arg;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        while (!pool->stop && pool->head == NULL)
            pthread_cond_wait(&pool->work_cv, &pool->mu);
        if (pool->stop)
            break;
        pl_pool_job *job = pool->head;
        if (atomic_load(&job->next_chunk) >= job->n_chunks) {
            pl_pool_unlink(pool, job);
            continue;
        }
        job->users++;
        int slot = job->next_worker_slot++;
        pthread_mutex_unlock(&pool->mu);
        size_t ran = pl_pool_run_chunks(job, slot);
        pthread_mutex_lock(&pool->mu);
        pl_pool_unlink(pool, job);
        job->done_chunks += ran;
        job->users--;
        pthread_cond_broadcast(&pool->done_cv);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

pl_status *pl_threadpool_create(int threads, pl_threadpool **out_pool)
{
    *out_pool = NULL;
    if (threads < 1)
        threads = 1;
    pl_threadpool *pool = calloc(1, sizeof *pool);
    if (pool == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pool->threads = threads;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->work_cv, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    if (threads > 1) {
        pool->workers = calloc((size_t)threads - 1, sizeof *pool->workers);
        if (pool->workers == NULL) {
            pl_threadpool_destroy(pool);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&pool->workers[i], NULL, pl_pool_worker, pool) != 0) {
                pl_threadpool_destroy(pool);
                return pl_status_create(PL_CODE_INTERNAL,
                                        "cannot start CPU pool thread %d of %d",
                                        i + 1, threads - 1);
            }
            pool->n_workers++;
        }
    }
    *out_pool = pool;
    return NULL;
}

void pl_threadpool_destroy(pl_threadpool *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i], NULL);
    free(pool->workers);
    pthread_cond_destroy(&pool->done_cv);
    pthread_cond_destroy(&pool->work_cv);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}

int pl_threadpool_size(const pl_threadpool *pool)
{
    return pool ? pool->threads : 1;
}

void pl_threadpool_parallel_for(pl_threadpool *pool, size_t n, size_t grain,
                                pl_parallel_fn fn, void *arg)
{
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    size_t threads = pool ? (size_t)pool->threads : 1;
    if (pool == NULL || threads == 1 || pl_pool_in_chunk || n <= grain) {
        bool outer = pl_pool_in_chunk;
        pl_pool_in_chunk = true;
        fn(arg, 0, n, 0);
        pl_pool_in_chunk = outer;
        return;
    }
    /* About four chunks per thread balances uneven chunks cheaply. */
    size_t target = threads * 4;
    size_t chunk = (n + target - 1) / target;
    if (chunk < grain)
        chunk = grain;
    pl_pool_job job = {.fn = fn, .arg = arg, .n = n, .chunk = chunk,
                       .n_chunks = (n + chunk - 1) / chunk,
                       .next_worker_slot = 1};
    atomic_init(&job.next_chunk, 0);
    pthread_mutex_lock(&pool->mu);
    if (pool->tail != NULL)
        pool->tail->next = &job;
    else
        pool->head = &job;
    pool->tail = &job;
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);

    size_t ran = pl_pool_run_chunks(&job, 0);

    pthread_mutex_lock(&pool->mu);
    pl_pool_unlink(pool, &job);
    job.done_chunks += ran;
    while (job.done_chunks < job.n_chunks || job.users > 0)
        pthread_cond_wait(&pool->done_cv, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
