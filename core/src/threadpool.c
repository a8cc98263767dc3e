/* threadpool.c — the CPU pool: the engine's ready operations and the chunks
 * of host->parallel_for share its threads, so the runtime keeps one thread
 * budget however many modules compute at once.
 *
 * parallel_for publishes a job; idle workers and the caller claim chunks of
 * it with an atomic counter. The caller never waits for a chunk nobody has
 * claimed (it claims them itself), so a parallel_for from any thread — an
 * engine operation on a worker, a chunk of another parallel_for (which runs
 * inline), an application thread — always makes progress. Workers prefer
 * parallel_for chunks to new tasks: somebody is waiting on those.
 *
 * Spin, then sleep. A futex wake costs tens of microseconds on a loaded VM,
 * and a model issues a parallel_for per kernel, so a worker that found no
 * work first spins for up to spin_us (outside the mutex, watching work_seq,
 * which publishers bump under the mutex) and only then sleeps on work_cv; a
 * spinning worker is not counted in idle, so nobody pays a wake for it. The
 * caller of parallel_for likewise spins on its job's users before it sleeps
 * on done_cv. A spin that sees the counter move re-locks and looks again, so
 * the mutex stays the one source of truth and no wake-up can be lost. A
 * worker spinning for work yields its core between polls of the clock, so a
 * thread with real work (the application's, about to submit the next run;
 * an OpenMP team member of a pinned-thread module) never waits a scheduler
 * time slice behind it: on 2 cores, bert_tiny through onednn had a p90 of
 * 6.5 ms against a median of 4.9 ms without that.
 *
 * Tasks (engine operations) wait in a binary heap by priority, then seq.
 * A thread waiting for tasks to finish (the engine's wait_var) helps run
 * them (pl_threadpool_help) and sleeps on help_cv, not work_cv. */
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "alloc.h"
#include "status.h"

typedef struct pl_pool_job {
    pl_parallel_fn fn;
    void *arg;
    size_t n;
    size_t chunk;               /* indices of a chunk; the first REM take one more */
    size_t rem;
    size_t n_chunks;
    atomic_size_t next_chunk;   /* next chunk to claim */
    size_t done_chunks;         /* under the pool mutex */
    /* Workers holding a pointer: changed under the mutex only, read outside
     * it by the spinning caller (who still confirms under the mutex). */
    atomic_int users;
    int next_worker_slot;       /* worker index handed out; under the mutex */
    struct pl_pool_job *next;
} pl_pool_job;

struct pl_threadpool {
    pl_allocator alloc;         /* the pool, its workers' table, the heap */
    int budget;
    int spin_us;                /* spin before sleeping; 0 = sleep at once */
    int n_workers;
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;
    pthread_cond_t done_cv;
    pl_pool_job *head;          /* parallel_for jobs with chunks left */
    pl_pool_job *tail;
    pl_task **heap;             /* ready tasks */
    size_t n_heap;
    size_t cap_heap;
    int idle;                   /* workers waiting on work_cv (not spinning) */
    /* Threads that help while they wait (pl_threadpool_help) and sleep on
     * help_cv when there is nothing to run: woken for tasks the idle
     * workers cannot take, and when a flag they wait for is set. */
    pthread_cond_t help_cv;
    int idle_helpers;
    /* Bumped under the mutex whenever work is published (a job, tasks) or
     * the pool stops; spinners watch it without the mutex. */
    atomic_uint work_seq;
    atomic_bool stop;           /* written under the mutex */
    atomic_int spin_hold;       /* pl_threadpool_hold_spin: > 0, no spinning */
};

typedef struct pl_pool_start {
    pl_threadpool *pool;
    int index;
} pl_pool_start;

/* Set while a thread runs a chunk: nested parallel_for runs inline. */
static _Thread_local bool pl_pool_in_chunk;
/* The pool whose worker (or helper, pl_threadpool_help) the current thread
 * is, if any, and its worker index there. */
static _Thread_local const pl_threadpool *pl_pool_self;
static _Thread_local int pl_pool_index;

/* ---- the task heap (pool mutex held) ------------------------------------ */

static bool pl_task_before(const pl_task *a, const pl_task *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority;
    return a->seq < b->seq;
}

static bool pl_heap_push(pl_threadpool *pool, pl_task *task)
{
    if (pool->n_heap == pool->cap_heap) {
        size_t cap = pool->cap_heap ? pool->cap_heap * 2 : 256;
        pl_task **grown = pl_alloc_realloc(pool->alloc, pool->heap, cap * sizeof *grown);
        if (grown == NULL)
            return false;
        pool->heap = grown;
        pool->cap_heap = cap;
    }
    size_t i = pool->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!pl_task_before(task, pool->heap[parent]))
            break;
        pool->heap[i] = pool->heap[parent];
        i = parent;
    }
    pool->heap[i] = task;
    return true;
}

static pl_task *pl_heap_pop(pl_threadpool *pool)
{
    if (pool->n_heap == 0)
        return NULL;
    pl_task *top = pool->heap[0];
    pl_task *last = pool->heap[--pool->n_heap];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, best = i;
        const pl_task *b = last;
        if (l < pool->n_heap && pl_task_before(pool->heap[l], b)) {
            best = l;
            b = pool->heap[l];
        }
        if (r < pool->n_heap && pl_task_before(pool->heap[r], b))
            best = r;
        if (best == i)
            break;
        pool->heap[i] = pool->heap[best];
        i = best;
    }
    if (pool->n_heap > 0)
        pool->heap[i] = last;
    return top;
}

/* ---- parallel_for jobs -------------------------------------------------- */

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
        size_t begin = c * job->chunk + (c < job->rem ? c : job->rem);
        size_t end = begin + job->chunk + (c < job->rem);
        job->fn(job->arg, begin, end, worker);
        ran++;
    }
    pl_pool_in_chunk = outer;
    return ran;
}

/* A job a worker may still join: chunks left and a thread slot free. */
static pl_pool_job *pl_pool_joinable(pl_threadpool *pool)
{
    while (pool->head != NULL) {
        pl_pool_job *job = pool->head;
        if (atomic_load(&job->next_chunk) < job->n_chunks &&
            job->next_worker_slot < pool->budget)
            return job;
        pl_pool_unlink(pool, job);
    }
    return NULL;
}

/* ---- spinning ----------------------------------------------------------- */

/* Pauses between the polls of a spin: this eases the sibling hyperthread
 * and the memory bus. */
static inline void pl_pool_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Polls between two looks at the clock: a pause is tens of nanoseconds, so
 * this is a microsecond or two of overshoot at most. */
enum { PL_POOL_SPIN_POLLS = 32 };

static int64_t pl_pool_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double pl_threadpool_pause_ns(void)
{
    enum { PAUSES = 2000 };
    int64_t t0 = pl_pool_now_ns();
    for (int i = 0; i < PAUSES; i++)
        pl_pool_pause();
    return (double)(pl_pool_now_ns() - t0) / PAUSES;
}

/* Spins for up to the pool's spin_us while work_seq stays SEEN, the pool
 * runs and DONE (when given) stays false. Returns true when any changed
 * (look again), false when the time ran out (go to sleep). Called without
 * the mutex. */
static bool pl_pool_spin_for_work(pl_threadpool *pool, unsigned seen, const atomic_bool *done)
{
    int64_t deadline = pl_pool_now_ns() + (int64_t)pool->spin_us * 1000;
    for (;;) {
        for (int i = 0; i < PL_POOL_SPIN_POLLS; i++) {
            unsigned seq = atomic_load_explicit(&pool->work_seq,
                                                memory_order_acquire);
            if (seq != seen ||
                atomic_load_explicit(&pool->stop, memory_order_acquire) ||
                (done != NULL && atomic_load_explicit(done, memory_order_acquire)))
                return true;
            if (atomic_load_explicit(&pool->spin_hold, memory_order_relaxed) > 0)
                return false;
            pl_pool_pause();
        }
        if (pl_pool_now_ns() >= deadline)
            return false;
        /* Spin politely: a thread that has real work and no core (the
         * application's thread about to submit the next run, or an OpenMP
         * team's member) gets this one at once instead of after a
         * scheduler time slice. */
        sched_yield();
    }
}

/* Spins for up to the pool's spin_us until no worker holds JOB. A hint only:
 * a worker may still be about to join, so the caller confirms under the
 * mutex. Called without the mutex. */
static void pl_pool_spin_for_helpers(pl_threadpool *pool, pl_pool_job *job)
{
    int64_t deadline = pl_pool_now_ns() + (int64_t)pool->spin_us * 1000;
    for (;;) {
        for (int i = 0; i < PL_POOL_SPIN_POLLS; i++) {
            if (atomic_load_explicit(&job->users, memory_order_acquire) == 0)
                return;
            pl_pool_pause();
        }
        if (pl_pool_now_ns() >= deadline)
            return;
    }
}

/* Bumps work_seq, so that spinning workers look again (mutex held). */
static void pl_pool_publish(pl_threadpool *pool)
{
    atomic_fetch_add_explicit(&pool->work_seq, 1, memory_order_release);
}

static void *pl_pool_worker(void *arg)
{
    pl_pool_start start = *(pl_pool_start *)arg;
    pl_free(arg);
    pl_threadpool *pool = start.pool;
    pl_pool_self = pool;
    pl_pool_index = start.index;
    /* Named for top -H and perf sched: pl-cpu-N, or pl-dev for a pool of
     * one thread (a device's or pinned-thread module's worker). */
    char name[16];
    if (pool->budget == 1)
        snprintf(name, sizeof name, "pl-dev");
    else
        snprintf(name, sizeof name, "pl-cpu-%d", start.index);
    pthread_setname_np(pthread_self(), name);
    /* Whether this worker may spin before its next sleep: after work, after
     * a wake-up, and after a spin that saw new work; not after a spin that
     * ran out of time. */
    bool may_spin = true;
    pthread_mutex_lock(&pool->mu);
    for (;;) {
        if (atomic_load_explicit(&pool->stop, memory_order_relaxed))
            break;
        pl_pool_job *job = pl_pool_joinable(pool);
        if (job != NULL) {
            atomic_fetch_add_explicit(&job->users, 1, memory_order_relaxed);
            int slot = job->next_worker_slot++;
            pthread_mutex_unlock(&pool->mu);
            size_t ran = pl_pool_run_chunks(job, slot);
            pthread_mutex_lock(&pool->mu);
            pl_pool_unlink(pool, job);
            job->done_chunks += ran;
            /* The caller may return as soon as it holds the mutex after
             * this: JOB is not touched again. */
            atomic_fetch_sub_explicit(&job->users, 1, memory_order_release);
            pthread_cond_broadcast(&pool->done_cv);
            may_spin = true;
            continue;
        }
        pl_task *task = pl_heap_pop(pool);
        if (task != NULL) {
            pthread_mutex_unlock(&pool->mu);
            while (task != NULL)
                task = task->run(task, start.index);
            pthread_mutex_lock(&pool->mu);
            may_spin = true;
            continue;
        }
        if (may_spin && pool->spin_us > 0 &&
            atomic_load_explicit(&pool->spin_hold, memory_order_relaxed) == 0) {
            /* Read under the mutex: any work published after this check
             * bumps the counter. */
            unsigned seen = atomic_load_explicit(&pool->work_seq,
                                                 memory_order_relaxed);
            pthread_mutex_unlock(&pool->mu);
            may_spin = pl_pool_spin_for_work(pool, seen, NULL);
            pthread_mutex_lock(&pool->mu);
            continue;   /* look again before any sleep */
        }
        pool->idle++;
        pthread_cond_wait(&pool->work_cv, &pool->mu);
        pool->idle--;
        may_spin = true;
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

pl_status *pl_threadpool_create_in(pl_allocator alloc, int workers, int budget,
                                   int spin_us, pl_threadpool **out_pool)
{
    *out_pool = NULL;
    if (budget < 1)
        budget = 1;
    if (workers < 0)
        workers = 0;
    if (spin_us < 0)
        spin_us = 0;
    if (spin_us > PL_THREADPOOL_SPIN_US_MAX)
        spin_us = PL_THREADPOOL_SPIN_US_MAX;
    pl_threadpool *pool = pl_alloc_calloc(alloc, 1, sizeof *pool);
    if (pool == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    pool->alloc = pl_allocator_resolve(alloc);
    pool->budget = budget;
    pool->spin_us = spin_us;
    atomic_init(&pool->work_seq, 0);
    atomic_init(&pool->stop, false);
    atomic_init(&pool->spin_hold, 0);
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->work_cv, NULL);
    pthread_cond_init(&pool->done_cv, NULL);
    pthread_cond_init(&pool->help_cv, NULL);
    if (workers > 0) {
        pool->workers = pl_alloc_calloc(alloc, (size_t)workers, sizeof *pool->workers);
        if (pool->workers == NULL) {
            pl_threadpool_destroy(pool);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
        }
        for (int i = 0; i < workers; i++) {
            pl_pool_start *start = pl_alloc_malloc(alloc, sizeof *start);
            if (start == NULL) {
                pl_threadpool_destroy(pool);
                return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
            }
            start->pool = pool;
            start->index = i;
            if (pthread_create(&pool->workers[i], NULL, pl_pool_worker, start) != 0) {
                pl_free(start);
                pl_threadpool_destroy(pool);
                return pl_status_create(PL_CODE_INTERNAL,
                                        "cannot start CPU pool thread %d of %d",
                                        i + 1, workers);
            }
            pool->n_workers++;
        }
    }
    *out_pool = pool;
    return NULL;
}

pl_status *pl_threadpool_create_ex(int workers, int budget, int spin_us,
                                   pl_threadpool **out_pool)
{
    return pl_threadpool_create_in(pl_alloc_current(), workers, budget, spin_us,
                                   out_pool);
}

pl_status *pl_threadpool_create(int threads, pl_threadpool **out_pool)
{
    if (threads < 1)
        threads = 1;
    return pl_threadpool_create_ex(threads - 1, threads,
                                   PL_THREADPOOL_SPIN_US_DEFAULT, out_pool);
}

void pl_threadpool_destroy(pl_threadpool *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->mu);
    atomic_store_explicit(&pool->stop, true, memory_order_release);
    pl_pool_publish(pool);  /* spinners see it too, and stop at once */
    pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i], NULL);
    pl_free(pool->workers);
    pl_free(pool->heap);
    pthread_cond_destroy(&pool->help_cv);
    pthread_cond_destroy(&pool->done_cv);
    pthread_cond_destroy(&pool->work_cv);
    pthread_mutex_destroy(&pool->mu);
    pl_free(pool);
}

int pl_threadpool_size(const pl_threadpool *pool)
{
    return pool ? pool->budget : 1;
}

void pl_threadpool_hold_spin(pl_threadpool *pool, int delta)
{
    if (pool != NULL)
        atomic_fetch_add_explicit(&pool->spin_hold, delta, memory_order_relaxed);
}

bool pl_threadpool_is_worker(const pl_threadpool *pool)
{
    return pool != NULL && pl_pool_self == pool;
}

void pl_threadpool_parallel_for(pl_threadpool *pool, size_t n, size_t grain,
                                pl_parallel_fn fn, void *arg)
{
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    size_t threads = pool ? (size_t)pool->budget : 1;
    /* About four chunks per thread balances uneven chunks cheaply; fewer
     * when the grain allows fewer: N / GRAIN rounded, down to a multiple of
     * the threads, split evenly (each at least 3/4 of the grain). 9,600
     * elements at a grain of 4,096 were chunks of 4,096, 4,096 and 1,408
     * (a helper paid to wake for the last) and are two of 4,800; 201 STFT
     * frames at 64 were 64, 64, 64 and 9 (one thread 128 frames, the other
     * 73) and are two of 100 and 101. */
    size_t target = threads * 4;
    size_t n_chunks = n / grain + (n % grain >= grain - grain / 2);
    if (n_chunks > target)
        n_chunks = target;
    if (n_chunks > threads)
        n_chunks -= n_chunks % threads;
    if (pool == NULL || threads == 1 || pool->n_workers == 0 ||
        pl_pool_in_chunk || n_chunks < 2) {
        bool outer = pl_pool_in_chunk;
        pl_pool_in_chunk = true;
        fn(arg, 0, n, 0);
        pl_pool_in_chunk = outer;
        return;
    }
    pl_pool_job job = {.fn = fn, .arg = arg, .n = n, .chunk = n / n_chunks,
                       .rem = n % n_chunks, .n_chunks = n_chunks,
                       .next_worker_slot = 1};
    atomic_init(&job.next_chunk, 0);
    atomic_init(&job.users, 0);
    pthread_mutex_lock(&pool->mu);
    if (pool->tail != NULL)
        pool->tail->next = &job;
    else
        pool->head = &job;
    pool->tail = &job;
    pl_pool_publish(pool);
    if (pool->idle > 0)
        pthread_cond_broadcast(&pool->work_cv);
    pthread_mutex_unlock(&pool->mu);

    size_t ran = pl_pool_run_chunks(&job, 0);

    /* Every chunk is claimed now; wait for the helpers that run the rest,
     * spinning first. JOB lives on this stack, so return only after the
     * mutex confirms that no worker holds it. */
    if (pool->spin_us > 0)
        pl_pool_spin_for_helpers(pool, &job);
    pthread_mutex_lock(&pool->mu);
    pl_pool_unlink(pool, &job);
    job.done_chunks += ran;
    while (job.done_chunks < job.n_chunks ||
           atomic_load_explicit(&job.users, memory_order_relaxed) > 0)
        pthread_cond_wait(&pool->done_cv, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}

pl_task *pl_threadpool_submit_batch(pl_threadpool *pool, pl_task *const *tasks,
                                    size_t n, bool keep_one)
{
    pl_task *mine = NULL;
    pthread_mutex_lock(&pool->mu);
    for (size_t i = 0; i < n; i++) {
        if (!pl_heap_push(pool, tasks[i])) {
            /* Out of memory for the heap: run it here rather than lose it. */
            pthread_mutex_unlock(&pool->mu);
            pl_task *t = tasks[i];
            while (t != NULL)
                t = t->run(t, 0);
            pthread_mutex_lock(&pool->mu);
        }
    }
    if (keep_one)
        mine = pl_heap_pop(pool);
    if (pool->n_heap > 0)
        pl_pool_publish(pool);
    size_t wake = pool->n_heap < (size_t)pool->idle ? pool->n_heap
                                                     : (size_t)pool->idle;
    for (size_t i = 0; i < wake; i++)
        pthread_cond_signal(&pool->work_cv);
    /* Tasks the sleeping workers do not cover go to sleeping helpers. */
    for (size_t i = wake; i < pool->n_heap && (int)(i - wake) < pool->idle_helpers; i++)
        pthread_cond_signal(&pool->help_cv);
    pthread_mutex_unlock(&pool->mu);
    return mine;
}

void pl_threadpool_submit(pl_threadpool *pool, pl_task *task)
{
    pl_threadpool_submit_batch(pool, &task, 1, false);
}

void pl_threadpool_help(pl_threadpool *pool, const atomic_bool *done)
{
    const pl_threadpool *outer_self = pl_pool_self;
    int outer_index = pl_pool_index;
    /* A worker of this pool helps under its own index; any other thread
     * under the one past the workers'. */
    int worker = outer_self == pool ? outer_index : pool->n_workers;
    pl_pool_self = pool;
    pl_pool_index = worker;
    bool may_spin = true;
    pthread_mutex_lock(&pool->mu);
    while (!atomic_load_explicit(done, memory_order_acquire)) {
        pl_task *task = pl_heap_pop(pool);
        if (task != NULL) {
            pthread_mutex_unlock(&pool->mu);
            while (task != NULL)
                task = task->run(task, worker);
            pthread_mutex_lock(&pool->mu);
            may_spin = true;
            continue;
        }
        if (may_spin && pool->spin_us > 0 &&
            atomic_load_explicit(&pool->spin_hold, memory_order_relaxed) == 0) {
            unsigned seen = atomic_load_explicit(&pool->work_seq, memory_order_relaxed);
            pthread_mutex_unlock(&pool->mu);
            may_spin = pl_pool_spin_for_work(pool, seen, done);
            pthread_mutex_lock(&pool->mu);
            continue;
        }
        pool->idle_helpers++;
        pthread_cond_wait(&pool->help_cv, &pool->mu);
        pool->idle_helpers--;
        may_spin = true;
    }
    pthread_mutex_unlock(&pool->mu);
    pl_pool_self = outer_self;
    pl_pool_index = outer_index;
}

void pl_threadpool_wake_helpers(pl_threadpool *pool)
{
    pthread_mutex_lock(&pool->mu);
    pthread_cond_broadcast(&pool->help_cv);
    pthread_mutex_unlock(&pool->mu);
}
