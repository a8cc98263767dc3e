/* engine.c — the dependency engine (engine.h has the semantics).
 *
 * Each variable keeps the count of running readers, whether a writer runs,
 * and a FIFO of operations waiting for it. An operation waits for one grant
 * per variable it touches; the last grant makes it ready, and it goes to the
 * heap of its worker pool. When it finishes, each of its variables grants
 * the next writer, or the next run of readers, in push order.
 *
 * Push is thread-safe because a push locks all of its variables at once, in
 * address order, before queueing on any of them: two pushes that share
 * variables are then queued in the same relative order on every shared
 * variable, so no two operations can wait for each other. Finishing locks one
 * variable at a time.
 *
 * wait_var is a write-like "wait" operation that runs inline when granted,
 * so it also waits for earlier readers; delete_var is one that frees the
 * variable when granted. */
#include "engine.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "completion.h"
#include "log.h"
#include "status.h"

typedef enum pl_op_kind {
    PL_OP_SYNC,
    PL_OP_ASYNC,
    PL_OP_WAIT,
    PL_OP_DELETE
} pl_op_kind;

typedef struct pl_op pl_op;

/* One variable of one operation; also its node in the variable's queue. */
typedef struct pl_op_slot {
    pl_var *var;
    bool read;
    bool write;
    pl_op *op;
    struct pl_op_slot *next;
} pl_op_slot;

struct pl_var {
    pthread_mutex_t mu;
    int running_reads;
    bool write_running;
    pl_op_slot *head;       /* waiting operations, in push order */
    pl_op_slot *tail;
    pl_status *error;       /* set while the variable is failed */
    pl_var *all_prev;       /* the engine's list of live variables */
    pl_var *all_next;
    /* Its deletion, made with the variable so that deleting allocates
     * nothing (NULL in the naive engine). */
    pl_op *delete_op;
};

/* The waiter of a wait_var, on its caller's stack. The caller helps run
 * the CPU pool's tasks until FLAG is set (pl_threadpool_help); once it is,
 * the waiter may be gone. */
typedef struct pl_var_waiter {
    atomic_bool flag;
    pl_threadpool *pool;    /* where the caller helps */
    pl_status *result;
} pl_var_waiter;

#define PL_OP_INLINE_SLOTS 4

typedef struct pl_naive_wait pl_naive_wait;

struct pl_op {
    pl_task task;           /* first: the pool runs it */
    pl_engine *engine;
    pl_op_kind kind;
    pl_engine_fn fn;
    pl_engine_async_fn async_fn;
    void *arg;
    pl_exec_ctx ctx;
    const char *name;
    atomic_int pending_grants;
    pl_var_waiter *waiter;  /* PL_OP_WAIT */
    pl_naive_wait *naive_wait; /* naive async: the pusher waits here */
    bool spin_held;         /* holds the CPU pool's spinning (pl_engine_dispatch) */
    size_t n_slots;
    pl_op_slot *slots;
    pl_op_slot inline_slots[PL_OP_INLINE_SLOTS];
};

/* What a device key stands for (pl_engine_device_key). */
typedef struct pl_device_key {
    const void *owner;
    int32_t index;
} pl_device_key;

typedef struct pl_dev_pool {
    int32_t device;
    int32_t stream;
    pl_threadpool *pool;
} pl_dev_pool;

/* The completion handed to an async function. Slots are never freed before
 * the engine, and a released slot is reused only after PL_SLOT_QUARANTINE
 * others, so a (buggy) second signal finds a disarmed slot and is ignored
 * instead of touching freed memory. */
typedef struct pl_completion_slot {
    pl_completion base;     /* first: what the module holds */
    pl_engine *engine;
    pl_op *op;
    atomic_int armed;       /* 1 while its signal is awaited */
    struct pl_completion_slot *next;
} pl_completion_slot;

#define PL_SLOT_CHUNK 256
#define PL_SLOT_QUARANTINE 1024

typedef struct pl_slot_chunk {
    struct pl_slot_chunk *next;
    pl_completion_slot slots[PL_SLOT_CHUNK];
} pl_slot_chunk;

struct pl_engine {
    pl_allocator alloc;           /* every op, variable and list of the engine */
    pl_engine_kind kind;
    const pl_logger *logger;
    pl_threadpool *cpu;
    pthread_mutex_t mu;           /* vars list, device pools, first_error, waits */
    pthread_cond_t idle_cv;
    pl_dev_pool *dev;
    size_t n_dev;
    pl_device_key *keys;          /* pl_engine_device_key: key i is keys[i] */
    size_t n_keys;
    pl_var *vars;
    pl_status *first_error;
    atomic_long pending;          /* pushed, not yet finished */
    pthread_mutex_t slot_mu;      /* completion slots */
    pl_slot_chunk *slot_chunks;
    pl_completion_slot *slot_fresh;     /* never used */
    pl_completion_slot *slot_free_head; /* released, oldest first */
    pl_completion_slot *slot_free_tail;
    size_t n_slot_free;
    atomic_bool cancelling;
    atomic_uint_fast64_t seq;
    pthread_mutex_t naive_mu;     /* naive: one push at a time (recursive) */
};

/* ---- small helpers ------------------------------------------------------ */

static pl_status *pl_status_copy(const pl_status *st)
{
    return st ? pl_status_create(pl_status_code(st), "%s", pl_status_message(st))
              : NULL;
}

static int pl_slot_cmp(const void *a, const void *b)
{
    const pl_op_slot *x = a, *y = b;
    if (x->var != y->var)
        return (uintptr_t)x->var < (uintptr_t)y->var ? -1 : 1;
    return 0;
}

static void pl_op_free(pl_op *op)
{
    if (op->slots != op->inline_slots)
        pl_free(op->slots);
    pl_free(op);
}

/* Records the engine's first failure since the last wait_all. */
static void pl_engine_note_failure(pl_engine *e, const pl_status *st)
{
    pthread_mutex_lock(&e->mu);
    if (e->first_error == NULL)
        e->first_error = pl_status_copy(st);
    pthread_mutex_unlock(&e->mu);
}

/* Counts N operations as finished. The decrement that could reach zero is
 * made under the engine mutex, so that wait_all (which checks under it)
 * cannot return, and the engine cannot be destroyed, while a thread outside
 * the pools (an async completer) is still here. */
static void pl_engine_ops_done(pl_engine *e, long n)
{
    if (n == 0)
        return;
    long v = atomic_load(&e->pending);
    while (v > n) {
        if (atomic_compare_exchange_weak(&e->pending, &v, v - n))
            return;
    }
    pthread_mutex_lock(&e->mu);
    if (atomic_fetch_sub(&e->pending, n) == n)
        pthread_cond_broadcast(&e->idle_cv);
    pthread_mutex_unlock(&e->mu);
}

/* ---- making operations -------------------------------------------------- */

static pl_status *pl_op_make(pl_engine *e, pl_op_kind kind,
                             pl_var *const *reads, size_t n_read,
                             pl_var *const *writes, size_t n_write,
                             pl_op **out_op)
{
    *out_op = NULL;
    size_t total;
    if (!pl_size_add(n_read, n_write, &total))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "too many variables");
    pl_op *op = pl_alloc_calloc(e->alloc, 1, sizeof *op);
    if (op == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory pushing an op");
    op->engine = e;
    op->kind = kind;
    op->slots = op->inline_slots;
    if (total > PL_OP_INLINE_SLOTS) {
        op->slots = pl_alloc_calloc(e->alloc, total, sizeof *op->slots);
        if (op->slots == NULL) {
            pl_free(op);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                    "out of memory pushing an op");
        }
    }
    for (size_t i = 0; i < total; i++) {
        pl_var *v = i < n_read ? reads[i] : writes[i - n_read];
        if (v == NULL) {
            pl_op_free(op);
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "push: variable %zu of the %s list is NULL",
                                    i < n_read ? i : i - n_read,
                                    i < n_read ? "read" : "write");
        }
        op->slots[i].var = v;
        op->slots[i].read = i < n_read;
        op->slots[i].write = i >= n_read;
        op->slots[i].op = op;
    }
    /* Sort by address (the lock order) and merge duplicates; a step has a
     * handful of variables, which insertion sorts in a fraction of qsort's
     * call (qsort was 6% of a chain of 64 small steps). */
    if (total > 16) {
        qsort(op->slots, total, sizeof *op->slots, pl_slot_cmp);
    } else {
        for (size_t i = 1; i < total; i++) {
            pl_op_slot s = op->slots[i];
            size_t j = i;
            for (; j > 0 && (uintptr_t)op->slots[j - 1].var > (uintptr_t)s.var; j--)
                op->slots[j] = op->slots[j - 1];
            op->slots[j] = s;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < total; i++) {
        if (n > 0 && op->slots[n - 1].var == op->slots[i].var) {
            op->slots[n - 1].read |= op->slots[i].read;
            op->slots[n - 1].write |= op->slots[i].write;
            continue;
        }
        op->slots[n++] = op->slots[i];
    }
    op->n_slots = n;
    *out_op = op;
    return NULL;
}

/* ---- granting ------------------------------------------------------------ */

static bool pl_var_grantable(const pl_var *v, bool write)
{
    if (v->head != NULL || v->write_running)
        return false;
    return !write || v->running_reads == 0;
}

static void pl_var_take(pl_var *v, bool write)
{
    if (write)
        v->write_running = true;
    else
        v->running_reads++;
}

/* A list of operations made ready, to dispatch once no lock is held. */
typedef struct pl_ready_list {
    pl_allocator alloc;
    pl_op *inline_ops[16];
    pl_op **ops;
    size_t n;
    size_t cap;
} pl_ready_list;

static void pl_ready_init(pl_ready_list *r, pl_allocator alloc)
{
    r->alloc = alloc;
    r->ops = r->inline_ops;
    r->n = 0;
    r->cap = 16;
}

static void pl_ready_add(pl_ready_list *r, pl_op *op)
{
    if (r->n == r->cap) {
        size_t cap = r->cap * 2;
        pl_op **grown = r->ops == r->inline_ops
                            ? pl_alloc_malloc(r->alloc, cap * sizeof *grown)
                            : pl_alloc_realloc(r->alloc, r->ops, cap * sizeof *grown);
        if (grown == NULL) {
            /* The op would be lost, so spin on the system allocator rather
             * than drop it: a runtime's allocator may refuse for good (a
             * test's failing one), the system one only for a moment. */
            while ((grown = pl_alloc_malloc(pl_allocator_system(),
                                            cap * sizeof *grown)) == NULL)
                ;
            memcpy(grown, r->ops, r->n * sizeof *grown);
            if (r->ops != r->inline_ops)
                pl_free(r->ops);
        } else if (r->ops == r->inline_ops) {
            memcpy(grown, r->inline_ops, r->n * sizeof *grown);
        }
        r->ops = grown;
        r->cap = cap;
    }
    r->ops[r->n++] = op;
}

static void pl_ready_free(pl_ready_list *r)
{
    if (r->ops != r->inline_ops)
        pl_free(r->ops);
}

/* Grants V to waiting operations as far as its state allows (V locked). */
static void pl_var_grant_waiters(pl_var *v, pl_ready_list *ready)
{
    while (v->head != NULL) {
        pl_op_slot *s = v->head;
        if (s->write) {
            if (v->write_running || v->running_reads > 0)
                return;
        } else if (v->write_running) {
            return;
        }
        v->head = s->next;
        if (v->head == NULL)
            v->tail = NULL;
        s->next = NULL;
        pl_var_take(v, s->write);
        if (atomic_fetch_sub(&s->op->pending_grants, 1) == 1)
            pl_ready_add(ready, s->op);
        if (s->write)
            return;
    }
}

/* ---- completion slots -------------------------------------------------- */

static void pl_engine_slot_signal(pl_completion *c, pl_status *status);

static pl_completion_slot *pl_slot_take(pl_engine *e, pl_op *op)
{
    pthread_mutex_lock(&e->slot_mu);
    pl_completion_slot *slot = NULL;
    if (e->n_slot_free > PL_SLOT_QUARANTINE) {
        slot = e->slot_free_head;
        e->slot_free_head = slot->next;
        if (e->slot_free_head == NULL)
            e->slot_free_tail = NULL;
        e->n_slot_free--;
    } else {
        if (e->slot_fresh == NULL) {
            pl_slot_chunk *chunk = pl_alloc_calloc(e->alloc, 1, sizeof *chunk);
            if (chunk != NULL) {
                chunk->next = e->slot_chunks;
                e->slot_chunks = chunk;
                for (size_t i = PL_SLOT_CHUNK; i-- > 0;) {
                    chunk->slots[i].base.on_complete = pl_engine_slot_signal;
                    chunk->slots[i].engine = e;
                    atomic_init(&chunk->slots[i].armed, 0);
                    chunk->slots[i].next = e->slot_fresh;
                    e->slot_fresh = &chunk->slots[i];
                }
            }
        }
        slot = e->slot_fresh;
        if (slot != NULL)
            e->slot_fresh = slot->next;
    }
    pthread_mutex_unlock(&e->slot_mu);
    if (slot != NULL) {
        slot->next = NULL;
        slot->op = op;
        atomic_store(&slot->armed, 1);
    }
    return slot;
}

static void pl_slot_release(pl_engine *e, pl_completion_slot *slot)
{
    pthread_mutex_lock(&e->slot_mu);
    slot->next = NULL;
    if (e->slot_free_tail)
        e->slot_free_tail->next = slot;
    else
        e->slot_free_head = slot;
    e->slot_free_tail = slot;
    e->n_slot_free++;
    pthread_mutex_unlock(&e->slot_mu);
}

/* ---- running ---------------------------------------------------------- */

static pl_task *pl_engine_run_task(pl_task *task, int worker);
static long pl_engine_dispatch(pl_engine *e, pl_ready_list *ready,
                               pl_task **out_local, bool on_cpu_worker);

static pl_threadpool *pl_engine_pool_for(pl_engine *e, const pl_exec_ctx *ctx)
{
    if (ctx->kind != PL_EXEC_DEVICE)
        return e->cpu;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < e->n_dev; i++) {
        if (e->dev[i].device == ctx->device && e->dev[i].stream == ctx->stream) {
            pl_threadpool *p = e->dev[i].pool;
            pthread_mutex_unlock(&e->mu);
            return p;
        }
    }
    pl_threadpool *pool = NULL;
    pl_dev_pool *grown = pl_alloc_realloc(e->alloc, e->dev, (e->n_dev + 1) * sizeof *grown);
    if (grown != NULL) {
        e->dev = grown;
        /* No spin: a device worker mostly launches work and would take a
         * core from the CPU pool's budget while it spins. */
        pl_status *st = pl_threadpool_create_in(e->alloc, 1, 1, 0, &pool);
        if (st != NULL) {
            pl_log(e->logger, PL_LOG_ERROR, "engine",
                   "cannot start the worker of device %d stream %d: %s; its "
                   "ops run on the CPU pool",
                   ctx->device, ctx->stream, pl_status_message(st));
            pl_status_free(st);
        } else {
            e->dev[e->n_dev].device = ctx->device;
            e->dev[e->n_dev].stream = ctx->stream;
            e->dev[e->n_dev].pool = pool;
            e->n_dev++;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return pool ? pool : e->cpu;
}

/* Whether OP must be skipped, and with which error (a copy). */
static pl_status *pl_op_inherited_error(pl_op *op)
{
    for (size_t i = 0; i < op->n_slots; i++) {
        pl_op_slot *s = &op->slots[i];
        if (!s->read)
            continue;
        pthread_mutex_lock(&s->var->mu);
        pl_status *copy = s->var->error ? pl_status_copy(s->var->error) : NULL;
        pthread_mutex_unlock(&s->var->mu);
        if (copy != NULL)
            return copy;
    }
    return NULL;
}

/* Finishes OP with STATUS (owned; NULL for success): updates the error state
 * of its written variables, releases every variable, frees OP and appends the
 * operations that became ready. The caller counts it done (ops_done) once it
 * has dispatched them, so the engine cannot go idle in between. */
static void pl_op_finish(pl_op *op, pl_status *status, pl_ready_list *ready)
{
    bool affects_errors = op->kind == PL_OP_SYNC || op->kind == PL_OP_ASYNC;
    for (size_t i = 0; i < op->n_slots; i++) {
        pl_op_slot *s = &op->slots[i];
        pl_var *v = s->var;
        pthread_mutex_lock(&v->mu);
        if (s->write) {
            if (affects_errors && status != NULL) {
                pl_status *copy = pl_status_copy(status);
                pl_status_free(v->error);
                v->error = copy;
            } else if (affects_errors && !s->read) {
                pl_status_free(v->error);
                v->error = NULL;
            }
            v->write_running = false;
        } else {
            v->running_reads--;
        }
        pl_var_grant_waiters(v, ready);
        pthread_mutex_unlock(&v->mu);
    }
    pl_status_free(status);
    pl_op_free(op);
}

/* Runs a synchronous op, or starts an async one, or skips it. Returns the
 * status to finish with, or sets *out_started for an async op in flight. */
static pl_status *pl_op_execute(pl_op *op, int worker, bool *out_started)
{
    pl_engine *e = op->engine;
    *out_started = false;
    if (atomic_load(&e->cancelling))
        return pl_status_create(PL_CODE_CANCELLED,
                                "op '%s' cancelled: the engine is being destroyed",
                                op->name);
    pl_status *inherited = pl_op_inherited_error(op);
    if (inherited != NULL) {
        pl_engine_note_failure(e, inherited);
        return inherited;
    }
    pl_run_context rc = {
        .header = PL_ABI_HEADER_INIT(pl_run_context),
        .device = op->ctx.kind == PL_EXEC_DEVICE ? op->ctx.device : 0,
        .worker = worker,
        .stream = op->ctx.stream_handle,
    };
    if (op->kind == PL_OP_ASYNC) {
        pl_completion_slot *slot = pl_slot_take(e, op);
        if (slot == NULL) {
            pl_status *st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                             "op '%s' failed: out of memory "
                                             "for its completion", op->name);
            pl_engine_note_failure(e, st);
            return st;
        }
        *out_started = true;
        op->async_fn(op->arg, &rc, &slot->base);
        return NULL;
    }
    pl_status *st = op->fn(op->arg, &rc);
    if (st == NULL)
        return NULL;
    pl_status *wrapped = pl_status_create(pl_status_code(st), "op '%s' failed: %s",
                                          op->name, pl_status_message(st));
    pl_status_free(st);
    pl_engine_note_failure(e, wrapped);
    return wrapped;
}

struct pl_naive_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    pl_status *status;
};

static void pl_engine_slot_signal(pl_completion *c, pl_status *status)
{
    pl_completion_slot *slot = (pl_completion_slot *)c;
    pl_engine *e = slot->engine;
    if (atomic_exchange(&slot->armed, 0) != 1) {
        pl_log(e->logger, PL_LOG_ERROR, "engine",
               "a completion was signalled twice; the second signal is ignored");
        pl_status_free(status);
        return;
    }
    pl_op *op = slot->op;
    /* The op still counts as pending, so the engine is alive until the
     * ops_done below. */
    pl_slot_release(e, slot);
    if (e->kind == PL_ENGINE_NAIVE) {
        pl_naive_wait *w = op->naive_wait;
        pthread_mutex_lock(&w->mu);
        w->status = status;
        w->done = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    if (status != NULL) {
        pl_status *wrapped = pl_status_create(pl_status_code(status),
                                              "op '%s' failed: %s", op->name,
                                              pl_status_message(status));
        pl_status_free(status);
        pl_engine_note_failure(e, wrapped);
        status = wrapped;
    }
    pl_ready_list ready;
    pl_ready_init(&ready, e->alloc);
    pl_op_finish(op, status, &ready);
    long inline_done = pl_engine_dispatch(e, &ready, NULL, false);
    pl_ready_free(&ready);
    pl_engine_ops_done(e, 1 + inline_done);
}

static pl_task *pl_engine_run_task(pl_task *task, int worker)
{
    pl_op *op = (pl_op *)task;
    pl_engine *e = op->engine;
    bool started = false;
    /* Read before: a started async op may be finished (and freed) by its
     * completion on another thread before pl_op_execute returns. */
    bool held = op->spin_held;
    pl_status *st = pl_op_execute(op, worker, &started);
    if (held)
        pl_threadpool_hold_spin(e->cpu, -1);
    if (started)
        return NULL; /* finishes when its completion is signalled */
    pl_ready_list ready;
    pl_ready_init(&ready, e->alloc);
    pl_op_finish(op, st, &ready);
    pl_task *local = NULL;
    long inline_done = pl_engine_dispatch(e, &ready, &local,
                                          pl_threadpool_is_worker(e->cpu));
    pl_ready_free(&ready);
    pl_engine_ops_done(e, 1 + inline_done);
    return local;
}

/* Handles ready operations: wait and delete ops at once, here; the others go
 * to their pools. With out_local, one CPU op may be handed back for the
 * calling CPU worker to run next. Returns how many ops it finished itself
 * (wait and delete ops), for the caller to count done after it. */
static long pl_engine_dispatch(pl_engine *e, pl_ready_list *ready,
                               pl_task **out_local, bool on_cpu_worker)
{
    long finished = 0;
    pl_task *cpu_batch_inline[16] = {0};
    pl_task **cpu_batch = cpu_batch_inline;
    size_t n_cpu = 0, cap_cpu = 16;
    /* Wait/delete ops may make more ops ready: treat the list as a queue. */
    for (size_t i = 0; i < ready->n; i++) {
        pl_op *op = ready->ops[i];
        if (op->kind == PL_OP_WAIT) {
            pl_var *v = op->slots[0].var;
            pthread_mutex_lock(&v->mu);
            pl_status *result = pl_status_copy(v->error);
            pthread_mutex_unlock(&v->mu);
            pl_var_waiter *w = op->waiter;
            pl_threadpool *helping = w->pool;
            w->result = result;
            atomic_store_explicit(&w->flag, true, memory_order_release);
            pl_threadpool_wake_helpers(helping);
            pl_op_finish(op, NULL, ready);
            finished++;
            continue;
        }
        if (op->kind == PL_OP_DELETE) {
            pl_var *v = op->slots[0].var;
            pthread_mutex_lock(&e->mu);
            if (v->all_prev)
                v->all_prev->all_next = v->all_next;
            else
                e->vars = v->all_next;
            if (v->all_next)
                v->all_next->all_prev = v->all_prev;
            pthread_mutex_unlock(&e->mu);
            /* The op that granted this one (or the enqueuer's last grant)
             * may have been another thread still inside v->mu's critical
             * section: wait it out before the mutex goes. */
            pthread_mutex_lock(&v->mu);
            pthread_mutex_unlock(&v->mu);
            pl_status_free(v->error);
            pthread_mutex_destroy(&v->mu);
            pl_free(v);
            pl_op_free(op);
            finished++;
            continue;
        }
        if (op->ctx.kind == PL_EXEC_INLINE && op->kind == PL_OP_SYNC) {
            bool started = false;
            pl_status *st = pl_op_execute(op, 0, &started);
            pl_op_finish(op, st, ready);
            finished++;
            continue;
        }
        pl_threadpool *pool = pl_engine_pool_for(e, &op->ctx);
        if (pool != e->cpu) {
            /* A device or pinned-thread op runs off the CPU pool, possibly
             * with threads of its own (oneDNN's OpenMP team): from the
             * moment it is handed over until it returns, the pool's idle
             * workers must not spin against it. Held from here, not from
             * its start: a worker that just finished the op's last input
             * would otherwise spin while the device thread wakes up, and
             * the woken thread (and its team) wait for a core. */
            if (op->kind == PL_OP_SYNC) {
                op->spin_held = true;
                pl_threadpool_hold_spin(e->cpu, 1);
            }
            pl_threadpool_submit(pool, &op->task);
            continue;
        }
        if (n_cpu == cap_cpu) {
            size_t cap = cap_cpu * 2;
            pl_task **grown = pl_alloc_malloc(e->alloc, cap * sizeof *grown);
            if (grown == NULL) {
                pl_threadpool_submit(pool, &op->task);
                continue;
            }
            memcpy(grown, cpu_batch, n_cpu * sizeof *grown);
            if (cpu_batch != cpu_batch_inline)
                pl_free(cpu_batch);
            cpu_batch = grown;
            cap_cpu = cap;
        }
        cpu_batch[n_cpu++] = &op->task;
    }
    bool keep = out_local != NULL && on_cpu_worker;
    if (n_cpu > 0 || keep) {
        pl_task *mine = pl_threadpool_submit_batch(e->cpu, cpu_batch, n_cpu, keep);
        if (out_local != NULL)
            *out_local = mine;
    }
    if (cpu_batch != cpu_batch_inline)
        pl_free(cpu_batch);
    return finished;
}

/* Queues OP on its variables; dispatches it if it is ready at once. */
static void pl_engine_enqueue(pl_engine *e, pl_op *op, int priority)
{
    op->task.run = pl_engine_run_task;
    op->task.priority = priority;
    op->task.seq = atomic_fetch_add(&e->seq, 1);
    atomic_init(&op->pending_grants, (int)op->n_slots + 1);
    atomic_fetch_add(&e->pending, 1);
    int granted = 0;
    for (size_t i = 0; i < op->n_slots; i++)
        pthread_mutex_lock(&op->slots[i].var->mu);
    for (size_t i = 0; i < op->n_slots; i++) {
        pl_op_slot *s = &op->slots[i];
        pl_var *v = s->var;
        if (pl_var_grantable(v, s->write)) {
            pl_var_take(v, s->write);
            granted++;
        } else {
            s->next = NULL;
            if (v->tail)
                v->tail->next = s;
            else
                v->head = s;
            v->tail = s;
        }
    }
    for (size_t i = op->n_slots; i-- > 0;)
        pthread_mutex_unlock(&op->slots[i].var->mu);
    if (atomic_fetch_sub(&op->pending_grants, granted + 1) == granted + 1) {
        pl_ready_list ready;
        pl_ready_init(&ready, e->alloc);
        pl_ready_add(&ready, op);
        long inline_done = pl_engine_dispatch(e, &ready, NULL, false);
        pl_ready_free(&ready);
        pl_engine_ops_done(e, inline_done);
    }
}

/* ---- the naive engine ---------------------------------------------------- */

/* Runs OP now, in the caller, with the threaded engine's error rules. */
static void pl_naive_run(pl_engine *e, pl_op *op)
{
    pthread_mutex_lock(&e->naive_mu);
    pl_status *st = pl_op_inherited_error(op);
    if (st != NULL)
        pl_engine_note_failure(e, st);
    if (st == NULL) {
        pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context),
                             .device = op->ctx.kind == PL_EXEC_DEVICE ? op->ctx.device : 0,
                             .worker = 0,
                             .stream = op->ctx.stream_handle};
        pl_status *raw;
        if (op->kind == PL_OP_ASYNC) {
            pl_naive_wait w = {.done = false, .status = NULL};
            pthread_mutex_init(&w.mu, NULL);
            pthread_cond_init(&w.cv, NULL);
            op->naive_wait = &w;
            pl_completion_slot *slot = pl_slot_take(e, op);
            if (slot == NULL) {
                w.status = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                            "out of memory for its completion");
                w.done = true;
            } else {
                op->async_fn(op->arg, &rc, &slot->base);
            }
            pthread_mutex_lock(&w.mu);
            while (!w.done)
                pthread_cond_wait(&w.cv, &w.mu);
            pthread_mutex_unlock(&w.mu);
            raw = w.status;
            pthread_cond_destroy(&w.cv);
            pthread_mutex_destroy(&w.mu);
        } else {
            raw = op->fn(op->arg, &rc);
        }
        if (raw != NULL) {
            st = pl_status_create(pl_status_code(raw), "op '%s' failed: %s",
                                  op->name, pl_status_message(raw));
            pl_status_free(raw);
            pl_engine_note_failure(e, st);
        }
    }
    for (size_t i = 0; i < op->n_slots; i++) {
        pl_op_slot *s = &op->slots[i];
        if (!s->write)
            continue;
        pthread_mutex_lock(&s->var->mu);
        if (st != NULL) {
            pl_status_free(s->var->error);
            s->var->error = pl_status_copy(st);
        } else if (!s->read) {
            pl_status_free(s->var->error);
            s->var->error = NULL;
        }
        pthread_mutex_unlock(&s->var->mu);
    }
    pthread_mutex_unlock(&e->naive_mu);
    pl_status_free(st);
    pl_op_free(op);
}

/* ---- public functions -------------------------------------------------- */

pl_status *pl_engine_create(const pl_engine_options *options,
                            pl_engine **out_engine)
{
    *out_engine = NULL;
    pl_engine *e = pl_alloc_calloc(options->alloc, 1, sizeof *e);
    if (e == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    e->alloc = pl_allocator_resolve(options->alloc);
    e->kind = options->kind;
    e->logger = options->logger;
    int threads = options->threads > 0 ? options->threads : 1;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->idle_cv, NULL);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&e->naive_mu, &attr);
    pthread_mutexattr_destroy(&attr);
    atomic_init(&e->pending, 0);
    pthread_mutex_init(&e->slot_mu, NULL);
    atomic_init(&e->cancelling, false);
    atomic_init(&e->seq, 0);
    /* Threaded: `threads` workers run ops and lend themselves to
     * parallel_for. Naive: ops run in the caller, so parallel_for gets
     * threads - 1 helpers and the caller. */
    int workers = e->kind == PL_ENGINE_NAIVE ? threads - 1 : threads;
    pl_status *st = pl_threadpool_create_in(e->alloc, workers, threads,
                                            options->spin_us, &e->cpu);
    if (st != NULL) {
        pl_engine_destroy(e);
        return st;
    }
    *out_engine = e;
    return NULL;
}

pl_threadpool *pl_engine_cpu_pool(pl_engine *engine)
{
    return engine ? engine->cpu : NULL;
}

void pl_engine_destroy(pl_engine *e)
{
    if (e == NULL)
        return;
    atomic_store(&e->cancelling, true);
    if (e->kind != PL_ENGINE_NAIVE && e->cpu != NULL) {
        pl_status_free(pl_engine_wait_all(e));
    }
    for (size_t i = 0; i < e->n_dev; i++)
        pl_threadpool_destroy(e->dev[i].pool);
    pl_free(e->dev);
    pl_free(e->keys);
    pl_threadpool_destroy(e->cpu);
    for (pl_var *v = e->vars, *next; v != NULL; v = next) {
        next = v->all_next;
        if (v->delete_op != NULL)
            pl_op_free(v->delete_op);
        pl_status_free(v->error);
        pthread_mutex_destroy(&v->mu);
        pl_free(v);
    }
    for (pl_slot_chunk *c = e->slot_chunks, *next; c != NULL; c = next) {
        next = c->next;
        pl_free(c);
    }
    pthread_mutex_destroy(&e->slot_mu);
    pl_status_free(e->first_error);
    pthread_mutex_destroy(&e->naive_mu);
    pthread_cond_destroy(&e->idle_cv);
    pthread_mutex_destroy(&e->mu);
    pl_free(e);
}

pl_var *pl_engine_new_var(pl_engine *e)
{
    pl_var *v = pl_alloc_calloc(e->alloc, 1, sizeof *v);
    if (v == NULL)
        return NULL;
    if (e->kind != PL_ENGINE_NAIVE) {
        pl_status *st = pl_op_make(e, PL_OP_DELETE, NULL, 0, &v, 1, &v->delete_op);
        if (st != NULL) {
            pl_status_free(st);
            pl_free(v);
            return NULL;
        }
        v->delete_op->name = "delete_var";
    }
    pthread_mutex_init(&v->mu, NULL);
    pthread_mutex_lock(&e->mu);
    v->all_next = e->vars;
    if (e->vars)
        e->vars->all_prev = v;
    e->vars = v;
    pthread_mutex_unlock(&e->mu);
    return v;
}

static void pl_engine_unlink_and_free_var(pl_engine *e, pl_var *v)
{
    pthread_mutex_lock(&e->mu);
    if (v->all_prev)
        v->all_prev->all_next = v->all_next;
    else
        e->vars = v->all_next;
    if (v->all_next)
        v->all_next->all_prev = v->all_prev;
    pthread_mutex_unlock(&e->mu);
    pl_status_free(v->error);
    pthread_mutex_destroy(&v->mu);
    pl_free(v);
}

void pl_engine_delete_var(pl_engine *e, pl_var *var)
{
    if (var == NULL)
        return;
    if (e->kind == PL_ENGINE_NAIVE) {
        pthread_mutex_lock(&e->naive_mu);
        pl_engine_unlink_and_free_var(e, var);
        pthread_mutex_unlock(&e->naive_mu);
        return;
    }
    /* The operation was made with the variable: deleting cannot fail, so
     * it never has to wait (which could deadlock on a worker) nor free a
     * variable that queued work still uses. */
    pl_op *op = var->delete_op;
    var->delete_op = NULL;
    pl_engine_enqueue(e, op, 0);
}

static pl_status *pl_engine_push_any(pl_engine *e, pl_op_kind kind,
                                     pl_engine_fn fn, pl_engine_async_fn afn,
                                     void *arg, pl_exec_ctx ctx,
                                     pl_var *const *reads, size_t n_read,
                                     pl_var *const *writes, size_t n_write,
                                     int priority, const char *name)
{
    if (e == NULL || (fn == NULL && afn == NULL))
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "push: NULL engine or function");
    pl_op *op = NULL;
    PL_RETURN_IF_ERROR(pl_op_make(e, kind, reads, n_read, writes, n_write, &op));
    op->fn = fn;
    op->async_fn = afn;
    op->arg = arg;
    op->ctx = ctx;
    op->name = name ? name : "(unnamed)";
    if (e->kind == PL_ENGINE_NAIVE) {
        pl_naive_run(e, op);
        return NULL;
    }
    pl_engine_enqueue(e, op, priority);
    return NULL;
}

pl_status *pl_engine_push(pl_engine *e, pl_engine_fn fn, void *arg,
                          pl_exec_ctx ctx, pl_var *const *read_vars,
                          size_t n_read, pl_var *const *write_vars,
                          size_t n_write, int priority, const char *name)
{
    return pl_engine_push_any(e, PL_OP_SYNC, fn, NULL, arg, ctx, read_vars,
                              n_read, write_vars, n_write, priority, name);
}

pl_status *pl_engine_push_async(pl_engine *e, pl_engine_async_fn fn, void *arg,
                                pl_exec_ctx ctx, pl_var *const *read_vars,
                                size_t n_read, pl_var *const *write_vars,
                                size_t n_write, int priority, const char *name)
{
    return pl_engine_push_any(e, PL_OP_ASYNC, NULL, fn, arg, ctx, read_vars,
                              n_read, write_vars, n_write, priority, name);
}

void pl_engine_complete(pl_completion *done, pl_status *status)
{
    if (done == NULL || done->on_complete == NULL) {
        pl_status_free(status);
        return;
    }
    done->on_complete(done, status);
}

pl_status *pl_engine_wait_var(pl_engine *e, pl_var *var)
{
    if (var == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "wait_var: NULL variable");
    if (e->kind == PL_ENGINE_NAIVE) {
        pthread_mutex_lock(&var->mu);
        pl_status *copy = pl_status_copy(var->error);
        pthread_mutex_unlock(&var->mu);
        return copy;
    }
    pl_var_waiter w = {.pool = e->cpu, .result = NULL};
    atomic_init(&w.flag, false);
    pl_op *op = NULL;
    PL_RETURN_IF_ERROR(pl_op_make(e, PL_OP_WAIT, NULL, 0, &var, 1, &op));
    op->name = "wait_var";
    op->waiter = &w;
    pl_engine_enqueue(e, op, 0);
    /* Run CPU operations meanwhile rather than sleep until a worker has run
     * them: a run of a small model is then mostly in this thread, with no
     * wake-up between its last step and its caller. */
    pl_threadpool_help(e->cpu, &w.flag);
    return w.result;
}

void pl_engine_wait_idle(pl_engine *e)
{
    if (e->kind == PL_ENGINE_NAIVE)
        return;
    pthread_mutex_lock(&e->mu);
    while (atomic_load(&e->pending) > 0)
        pthread_cond_wait(&e->idle_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

pl_status *pl_engine_wait_all(pl_engine *e)
{
    pl_engine_wait_idle(e);
    pthread_mutex_lock(&e->mu);
    pl_status *first = e->first_error;
    e->first_error = NULL;
    pthread_mutex_unlock(&e->mu);
    return first;
}

pl_status *pl_engine_device_key(pl_engine *e, const void *owner, int32_t index,
                                int32_t *out_key)
{
    *out_key = 0;
    pthread_mutex_lock(&e->mu);
    size_t k = 0;
    while (k < e->n_keys && (e->keys[k].owner != owner || e->keys[k].index != index))
        k++;
    if (k == e->n_keys) {
        pl_device_key *grown = k < INT32_MAX ? pl_alloc_realloc(e->alloc, e->keys, (k + 1) * sizeof *grown)
                                             : NULL;
        if (grown == NULL) {
            pthread_mutex_unlock(&e->mu);
            return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                    "out of memory numbering an engine device");
        }
        e->keys = grown;
        e->keys[e->n_keys++] = (pl_device_key){.owner = owner, .index = index};
    }
    pthread_mutex_unlock(&e->mu);
    *out_key = (int32_t)k;
    return NULL;
}
