/* test_engine.c — tests of the dependency engine (core/src/engine.c) against
 * the semantics engine.h states: thousands of random pushes compared bit for
 * bit with a serial run, an ordering log that proves every operation saw
 * exactly the variable versions push order implies, error injection checked
 * against a serial simulation of engine.h's error rules, late asynchronous
 * completion, deletion and destruction with work pending, parallel_for nested
 * in operations, priorities, device pools and the naive engine; cases named
 * *_spin repeat some of these with idle threads that spin before sleeping,
 * and the pool's parallel_for and destroy are tested on their own.
 *
 * Linked against the core's object library (like tests/core). Usage:
 * test_engine CASE. Every case runs under a watchdog (alarm) and keeps its
 * own shared state in atomics or behind mutexes, so the program is free of
 * data races itself; values computed by operations are plain memory whose
 * ordering only the engine guarantees, which a ThreadSanitizer build checks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "status.h"
#include "threadpool.h"

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

#define CHECKF(cond, ...)                                                  \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

/* ---- helpers ------------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}

static uint32_t rng_below(rng *r, uint32_t n)
{
    return (uint32_t)(rng_next(r) % n);
}

static double rng_unit(rng *r)
{
    return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Busy for about US microseconds (real work, not a sleep). */
static uint64_t spin_us(long us)
{
    double end = now_s() + (double)us * 1e-6;
    uint64_t x = 1;
    do {
        for (int i = 0; i < 64; i++)
            x = mix64(x);
    } while (now_s() < end);
    return x;
}

/* Waits (sleeping) until *flag != 0; the watchdog ends a hang. */
static void wait_flag(atomic_int *flag)
{
    while (atomic_load(flag) == 0)
        sleep_us(200);
}

static const pl_exec_ctx CPU = {PL_EXEC_CPU, 0, 0, NULL};

static int dev_handles[3];
static const pl_exec_ctx DEV[3] = {
    {PL_EXEC_DEVICE, 0, 0, &dev_handles[0]},
    {PL_EXEC_DEVICE, 0, 1, &dev_handles[1]},
    {PL_EXEC_DEVICE, 1, 0, &dev_handles[2]},
};

/* How long idle CPU threads of the engines (and pools) a case makes spin
 * before sleeping: 0 by default; the *_spin cases set it. */
static int g_spin_us;

static pl_engine *make_engine(pl_engine_kind kind, int threads)
{
    pl_engine_options o = {.kind = kind, .threads = threads, .logger = NULL,
                           .spin_us = g_spin_us};
    pl_engine *e = NULL;
    pl_status *st = pl_engine_create(&o, &e);
    CHECKF(st == NULL, "pl_engine_create: %s", pl_status_message(st));
    CHECK(e != NULL);
    return e;
}

static void expect_ok(pl_status *st, const char *what)
{
    CHECKF(st == NULL, "%s: %s", what, pl_status_message(st));
}

/* Checks ST is an error with CODE and exactly MESSAGE, and frees it. */
static void expect_error(pl_status *st, pl_code code, const char *message)
{
    CHECKF(st != NULL, "expected \"%s\", got success", message);
    CHECKF(pl_status_code(st) == code, "code %d, expected %d (%s)",
           (int)pl_status_code(st), (int)code, pl_status_message(st));
    CHECKF(strcmp(pl_status_message(st), message) == 0,
           "message \"%s\", expected \"%s\"", pl_status_message(st), message);
    pl_status_free(st);
}

static atomic_int g_violations;

/* Records a violation seen inside an operation (which must not exit while
 * other threads run); the first few are printed. */
#define VIOLATION(...)                                                     \
    do {                                                                   \
        if (atomic_fetch_add(&g_violations, 1) < 10) {                     \
            fprintf(stderr, "%s:%d: violation: ", __FILE__, __LINE__);     \
            fprintf(stderr, __VA_ARGS__);                                  \
            fputc('\n', stderr);                                           \
        }                                                                  \
    } while (0)

static void expect_no_violations(void)
{
    CHECKF(atomic_load(&g_violations) == 0, "%d violations",
           atomic_load(&g_violations));
}

/* ---- a completer: signals completions late, from its own thread ----------- */

typedef struct cjob {
    struct cjob *next;
    pl_completion *done;
    pl_status *(*work)(void *arg); /* the "device work"; may be NULL */
    void *arg;
    pl_status *status;             /* signalled when work is NULL */
    long delay_us;
    atomic_int *before;            /* set to 1 just before the signal */
    atomic_int *go;                /* when set, waits for it first */
    bool twice;                    /* signals a second time, 20 ms later */
} cjob;

typedef struct completer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cjob *head;
    cjob *tail;
    bool stop;
} completer;

static void *completer_main(void *arg)
{
    completer *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->head == NULL && !c->stop)
            pthread_cond_wait(&c->cv, &c->mu);
        if (c->head == NULL)
            break;
        cjob *j = c->head;
        c->head = j->next;
        if (c->head == NULL)
            c->tail = NULL;
        pthread_mutex_unlock(&c->mu);
        if (j->go != NULL)
            wait_flag(j->go);
        if (j->delay_us > 0)
            sleep_us(j->delay_us);
        pl_status *st = j->work != NULL ? j->work(j->arg) : j->status;
        if (j->before != NULL)
            atomic_store(j->before, 1);
        pl_engine_complete(j->done, st);
        if (j->twice) {
            sleep_us(20000);
            pl_engine_complete(j->done, pl_status_create(PL_CODE_DEVICE_ERROR,
                                                         "second signal"));
        }
        free(j);
        pthread_mutex_lock(&c->mu);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

static void completer_start(completer *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    CHECK(pthread_create(&c->thread, NULL, completer_main, c) == 0);
}

static void completer_submit(completer *c, const cjob *tmpl)
{
    cjob *j = malloc(sizeof *j);
    if (j == NULL) {
        VIOLATION("out of memory");
        pl_engine_complete(tmpl->done, NULL);
        return;
    }
    *j = *tmpl;
    j->next = NULL;
    pthread_mutex_lock(&c->mu);
    if (c->tail != NULL)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* Drains the queue, then joins. */
static void completer_stop(completer *c)
{
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    CHECK(pthread_join(c->thread, NULL) == 0);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

/* ---- the randomized workload ---------------------------------------------- */

#define R_MAX_READ 19
#define R_MAX_WRITE 2
#define R_MAX_ACC (R_MAX_READ + R_MAX_WRITE)

struct rworld;

typedef struct rop {
    struct rworld *w;
    uint32_t id;
    uint8_t n_read, n_write;
    uint8_t read[R_MAX_READ];   /* with repeats, may overlap write */
    uint8_t write[R_MAX_WRITE];
    int priority;
    int pool;                   /* -1: CPU; else index into DEV */
    bool fail;
    bool async;
    bool async_inline;          /* completes from inside fn */
    char name[16];
    atomic_int ran;             /* times fn (or its async work) started */
    /* the ordering log: each distinct variable once, written if in the
     * write list (a variable in both lists counts as written) */
    uint8_t n_acc;
    uint8_t acc_var[R_MAX_ACC];
    bool acc_write[R_MAX_ACC];
    uint32_t expect[R_MAX_ACC]; /* versions push order implies */
    uint32_t seen[R_MAX_ACC];   /* versions the op saw */
} rop;

typedef struct rparams {
    pl_engine_kind kind;
    int threads;
    uint64_t seed;
    size_t n_ops;
    int n_vars;
    double fail_rate;
    double async_rate;
    double device_rate;
    bool priorities;
    bool order_log;
    size_t round;               /* ops between wait_all calls */
    int read_min, read_max;     /* reads per op */
} rparams;

typedef struct rworld {
    const rparams *p;
    pl_engine *engine;
    pl_var **vars;
    uint64_t *vals;             /* the engine run's values: plain memory */
    rop *ops;
    completer comp;
    /* the ordering log */
    atomic_int *writer_active;
    atomic_int *readers_active;
    atomic_uint *version;
    atomic_int max_readers;
    /* failing ops, numbered */
    int *fail_index;            /* per op; -1 when it does not fail */
    size_t n_fail;
} rworld;

/* The computation: order-sensitive in its reads, a full overwrite of its
 * writes (a variable in both lists was read first). */
static void rop_compute(const rop *op, uint64_t *vals)
{
    uint64_t h = mix64(op->id * 0x100000001b3ull + 7);
    for (int i = 0; i < op->n_read; i++)
        h = mix64(h ^ vals[op->read[i]]) + (uint64_t)i;
    for (int i = 0; i < op->n_write; i++)
        vals[op->write[i]] = mix64(h + (uint64_t)i * 0x51ed27ull + op->write[i]);
}

static void order_begin(rop *op)
{
    rworld *w = op->w;
    for (int i = 0; i < op->n_acc; i++) {
        int v = op->acc_var[i];
        if (op->acc_write[i]) {
            if (atomic_exchange(&w->writer_active[v], 1) != 0)
                VIOLATION("op %u: another writer of var %d is active", op->id, v);
            if (atomic_load(&w->readers_active[v]) != 0)
                VIOLATION("op %u: writes var %d while it is read", op->id, v);
        } else {
            int r = atomic_fetch_add(&w->readers_active[v], 1) + 1;
            int m = atomic_load(&w->max_readers);
            while (r > m && !atomic_compare_exchange_weak(&w->max_readers, &m, r)) {
            }
            if (atomic_load(&w->writer_active[v]) != 0)
                VIOLATION("op %u: reads var %d while it is written", op->id, v);
        }
        op->seen[i] = atomic_load(&w->version[v]);
    }
}

static void order_end(rop *op)
{
    rworld *w = op->w;
    for (int i = 0; i < op->n_acc; i++) {
        int v = op->acc_var[i];
        if (atomic_load(&w->version[v]) != op->seen[i])
            VIOLATION("op %u: var %d changed while the op ran", op->id, v);
        if (op->acc_write[i]) {
            atomic_fetch_add(&w->version[v], 1);
            atomic_store(&w->writer_active[v], 0);
        } else {
            atomic_fetch_sub(&w->readers_active[v], 1);
        }
    }
}

/* What an operation does, wherever it runs. */
static pl_status *rop_work(rop *op)
{
    if (atomic_fetch_add(&op->ran, 1) != 0)
        VIOLATION("op %u ran twice", op->id);
    if (op->fail)
        return pl_status_create(PL_CODE_DEVICE_ERROR, "boom %u", op->id);
    if (op->w->p->order_log)
        order_begin(op);
    rop_compute(op, op->w->vals);
    if (op->w->p->order_log) {
        /* a little time inside the op widens any overlap */
        volatile uint64_t x = op->id;
        for (int i = 0; i < 200; i++)
            x = x * 6364136223846793005ull + 1;
        order_end(op);
    }
    return NULL;
}

static pl_status *rop_work_void(void *arg)
{
    return rop_work(arg);
}

static void rop_check_rc(const rop *op, const pl_run_context *rc)
{
    if (rc == NULL) {
        VIOLATION("op %u: no run context", op->id);
        return;
    }
    if (op->pool < 0) {
        if (rc->stream != NULL)
            VIOLATION("op %u: CPU op with a stream", op->id);
    } else {
        const pl_exec_ctx *c = &DEV[op->pool];
        if (rc->device != c->device || rc->stream != c->stream_handle)
            VIOLATION("op %u: run context device %d stream %p, pushed %d %p",
                      op->id, (int)rc->device, rc->stream, (int)c->device,
                      c->stream_handle);
    }
}

static pl_status *rop_fn(void *arg, const pl_run_context *rc)
{
    rop *op = arg;
    rop_check_rc(op, rc);
    return rop_work(op);
}

static void rop_async_fn(void *arg, const pl_run_context *rc, pl_completion *done)
{
    rop *op = arg;
    rop_check_rc(op, rc);
    if (op->async_inline) {
        pl_engine_complete(done, rop_work(op));
        return;
    }
    cjob j = {.done = done, .work = rop_work_void, .arg = op};
    completer_submit(&op->w->comp, &j);
}

static void rop_push(rworld *w, rop *op)
{
    pl_var *rv[R_MAX_READ], *wv[R_MAX_WRITE];
    for (int i = 0; i < op->n_read; i++)
        rv[i] = w->vars[op->read[i]];
    for (int i = 0; i < op->n_write; i++)
        wv[i] = w->vars[op->write[i]];
    pl_exec_ctx ctx = op->pool < 0 ? CPU : DEV[op->pool];
    pl_status *st;
    if (op->async)
        st = pl_engine_push_async(w->engine, rop_async_fn, op, ctx, rv,
                                  op->n_read, wv, op->n_write, op->priority,
                                  op->name);
    else
        st = pl_engine_push(w->engine, rop_fn, op, ctx, rv, op->n_read, wv,
                            op->n_write, op->priority, op->name);
    expect_ok(st, "push");
}

static void rops_generate(rworld *w)
{
    const rparams *p = w->p;
    rng r = {p->seed * 0x2545f4914f6cdd1dull + 1};
    w->ops = calloc(p->n_ops, sizeof *w->ops);
    w->fail_index = malloc(p->n_ops * sizeof *w->fail_index);
    CHECK(w->ops != NULL && w->fail_index != NULL);
    w->n_fail = 0;
    for (size_t k = 0; k < p->n_ops; k++) {
        rop *op = &w->ops[k];
        op->w = w;
        op->id = (uint32_t)k;
        snprintf(op->name, sizeof op->name, "r%u", op->id);
        op->n_read = (uint8_t)(p->read_min +
                               (int)rng_below(&r, (uint32_t)(p->read_max -
                                                             p->read_min + 1)));
        op->n_write = (uint8_t)(1 + rng_below(&r, 2));   /* 1..2 */
        for (int i = 0; i < op->n_read; i++)
            op->read[i] = (uint8_t)rng_below(&r, (uint32_t)p->n_vars);
        for (int i = 0; i < op->n_write; i++)
            op->write[i] = (uint8_t)rng_below(&r, (uint32_t)p->n_vars);
        op->priority = p->priorities ? (int)rng_below(&r, 5) - 2 : 0;
        op->pool = rng_unit(&r) < p->device_rate ? (int)rng_below(&r, 3) : -1;
        op->async = rng_unit(&r) < p->async_rate;
        op->async_inline = op->async && rng_below(&r, 2) == 0;
        op->fail = rng_unit(&r) < p->fail_rate;
        w->fail_index[k] = op->fail ? (int)w->n_fail++ : -1;
        atomic_init(&op->ran, 0);
        /* distinct accesses for the ordering log */
        op->n_acc = 0;
        for (int i = 0; i < op->n_write + op->n_read; i++) {
            bool wr = i < op->n_write;
            int v = wr ? op->write[i] : op->read[i - op->n_write];
            bool dup = false;
            for (int j = 0; j < op->n_acc; j++)
                dup |= op->acc_var[j] == v;
            if (dup)
                continue;
            op->acc_var[op->n_acc] = (uint8_t)v;
            op->acc_write[op->n_acc] = wr;
            op->n_acc++;
        }
    }
}

/* The serial simulation of engine.h's rules. A failure's message set is a
 * bitset over the failing ops: which original failures the status may carry
 * (an op that reads several failed variables may carry any of theirs). */
typedef struct rsim {
    size_t words;
    uint64_t *vals;
    bool *failed;
    uint64_t *sets;             /* n_vars * words */
    uint64_t *tmp;
    uint64_t *round_set;        /* every failure since the last wait_all */
    uint64_t *first_set;        /* the first one, in push order */
    bool round_any;
    bool *skipped;              /* per op: fn must not be called */
} rsim;

static void rsim_init(rsim *s, const rworld *w)
{
    s->words = w->n_fail / 64 + 1;
    size_t nv = (size_t)w->p->n_vars;
    s->vals = calloc(nv, sizeof *s->vals);
    s->failed = calloc(nv, sizeof *s->failed);
    s->sets = calloc(nv * s->words, sizeof *s->sets);
    s->tmp = calloc(s->words, sizeof *s->tmp);
    s->round_set = calloc(s->words, sizeof *s->round_set);
    s->first_set = calloc(s->words, sizeof *s->first_set);
    s->skipped = calloc(w->p->n_ops, sizeof *s->skipped);
    CHECK(s->vals && s->failed && s->sets && s->tmp && s->round_set &&
          s->first_set && s->skipped);
    s->round_any = false;
}

static void rsim_free(rsim *s)
{
    free(s->vals);
    free(s->failed);
    free(s->sets);
    free(s->tmp);
    free(s->round_set);
    free(s->first_set);
    free(s->skipped);
}

static void rsim_apply(rsim *s, const rworld *w, const rop *op)
{
    bool skip = false;
    memset(s->tmp, 0, s->words * sizeof *s->tmp);
    for (int i = 0; i < op->n_read; i++) {
        int v = op->read[i];
        if (!s->failed[v])
            continue;
        skip = true;
        for (size_t k = 0; k < s->words; k++)
            s->tmp[k] |= s->sets[(size_t)v * s->words + k];
    }
    /* a variable in both lists counts as read: it is in read[] already */
    if (!skip && op->fail) {
        int f = w->fail_index[op->id];
        s->tmp[f / 64] |= 1ull << (f % 64);
    }
    s->skipped[op->id] = skip;
    if (skip || op->fail) {
        for (int i = 0; i < op->n_write; i++) {
            int v = op->write[i];
            s->failed[v] = true;
            memcpy(&s->sets[(size_t)v * s->words], s->tmp,
                   s->words * sizeof *s->tmp);
        }
        for (size_t k = 0; k < s->words; k++)
            s->round_set[k] |= s->tmp[k];
        if (!s->round_any)
            memcpy(s->first_set, s->tmp, s->words * sizeof *s->tmp);
        s->round_any = true;
        return;
    }
    /* it ran and succeeded: none of its read variables was failed, so every
     * variable it writes was healthy or written only, and is healthy now */
    rop_compute(op, s->vals);
    for (int i = 0; i < op->n_write; i++)
        s->failed[op->write[i]] = false;
}

/* Checks that ST carries one of the failures in SET. */
static void expect_failure_in(const rworld *w, const rsim *s, pl_status *st,
                              const uint64_t *set, const char *where)
{
    CHECKF(st != NULL, "%s: expected a failure, got success", where);
    CHECKF(pl_status_code(st) == PL_CODE_DEVICE_ERROR, "%s: code %d (%s)",
           where, (int)pl_status_code(st), pl_status_message(st));
    const char *msg = pl_status_message(st);
    unsigned a = 0, b = 0;
    CHECKF(sscanf(msg, "op 'r%u' failed: boom %u", &a, &b) == 2 && a == b &&
               a < w->p->n_ops,
           "%s: unexpected message \"%s\"", where, msg);
    char want[96];
    snprintf(want, sizeof want, "op 'r%u' failed: boom %u", a, a);
    CHECKF(strcmp(msg, want) == 0, "%s: message \"%s\", expected \"%s\"",
           where, msg, want);
    int f = w->fail_index[a];
    CHECKF(f >= 0, "%s: \"%s\" names an op that did not fail", where, msg);
    CHECKF((set[f / 64] >> (f % 64)) & 1, "%s: \"%s\" cannot reach here", where,
           msg);
    (void)s;
}

/* wait_var on V: its error and value are the simulation's. */
static void rcheck_var(rworld *w, rsim *s, int v, const char *where)
{
    pl_status *st = pl_engine_wait_var(w->engine, w->vars[v]);
    char buf[64];
    snprintf(buf, sizeof buf, "%s: var %d", where, v);
    if (s->failed[v])
        expect_failure_in(w, s, st, &s->sets[(size_t)v * s->words], buf);
    else
        CHECKF(st == NULL, "%s: unexpected failure \"%s\"", buf,
               pl_status_message(st));
    pl_status_free(st);
    CHECKF(w->vals[v] == s->vals[v], "%s: value %016llx, serial %016llx", buf,
           (unsigned long long)w->vals[v], (unsigned long long)s->vals[v]);
}

static void rcheck_wait_all(rworld *w, rsim *s, size_t k)
{
    char where[64];
    snprintf(where, sizeof where, "wait_all after op %zu", k);
    pl_status *st = pl_engine_wait_all(w->engine);
    if (!s->round_any) {
        CHECKF(st == NULL, "%s: unexpected failure \"%s\"", where,
               pl_status_message(st));
    } else {
        /* the naive engine fails in push order: the first failure is the
         * first failing op's */
        expect_failure_in(w, s, st, w->p->kind == PL_ENGINE_NAIVE
                                        ? s->first_set
                                        : s->round_set, where);
        pl_status_free(st);
    }
    st = pl_engine_wait_all(w->engine);
    CHECKF(st == NULL, "%s: a second wait_all returned \"%s\"", where,
           pl_status_message(st));
    memset(s->round_set, 0, s->words * sizeof *s->round_set);
    s->round_any = false;
}

static void run_random(const rparams *p)
{
    rworld w = {.p = p};
    atomic_store(&g_violations, 0);
    rops_generate(&w);
    size_t nv = (size_t)p->n_vars;
    w.vals = calloc(nv, sizeof *w.vals);
    w.vars = calloc(nv, sizeof *w.vars);
    w.writer_active = calloc(nv, sizeof *w.writer_active);
    w.readers_active = calloc(nv, sizeof *w.readers_active);
    w.version = calloc(nv, sizeof *w.version);
    uint32_t *wcount = calloc(nv, sizeof *wcount);
    CHECK(w.vals && w.vars && w.writer_active && w.readers_active &&
          w.version && wcount);
    for (size_t v = 0; v < nv; v++) {
        atomic_init(&w.writer_active[v], 0);
        atomic_init(&w.readers_active[v], 0);
        atomic_init(&w.version[v], 0);
    }
    atomic_init(&w.max_readers, 0);
    w.engine = make_engine(p->kind, p->threads);
    completer_start(&w.comp);
    for (size_t v = 0; v < nv; v++) {
        w.vars[v] = pl_engine_new_var(w.engine);
        CHECK(w.vars[v] != NULL);
    }
    /* variables no op touches stay healthy */
    pl_var *untouched[3];
    for (int i = 0; i < 3; i++)
        CHECK((untouched[i] = pl_engine_new_var(w.engine)) != NULL);

    rsim s;
    rsim_init(&s, &w);
    rng r = {p->seed + 99};
    double t0 = now_s();
    for (size_t k = 0; k < p->n_ops; k++) {
        rop *op = &w.ops[k];
        for (int i = 0; i < op->n_acc; i++)
            op->expect[i] = wcount[op->acc_var[i]];
        for (int i = 0; i < op->n_acc; i++)
            if (op->acc_write[i])
                wcount[op->acc_var[i]]++;
        rsim_apply(&s, &w, op);
        rop_push(&w, op);
        if (k % 997 == 996)
            rcheck_var(&w, &s, (int)rng_below(&r, (uint32_t)nv), "checkpoint");
        if ((k + 1) % p->round == 0 || k + 1 == p->n_ops)
            rcheck_wait_all(&w, &s, k);
    }
    double t1 = now_s();
    for (size_t v = 0; v < nv; v++)
        rcheck_var(&w, &s, (int)v, "end");
    for (int i = 0; i < 3; i++) {
        pl_status *st = pl_engine_wait_var(w.engine, untouched[i]);
        CHECKF(st == NULL, "untouched var: \"%s\"", pl_status_message(st));
    }
    expect_no_violations();
    size_t n_skipped = 0;
    for (size_t k = 0; k < p->n_ops; k++) {
        int ran = atomic_load(&w.ops[k].ran);
        n_skipped += s.skipped[k];
        CHECKF(ran == (s.skipped[k] ? 0 : 1),
               "op %zu: fn called %d times, expected %d", k, ran,
               s.skipped[k] ? 0 : 1);
    }
    if (p->order_log) {
        for (size_t k = 0; k < p->n_ops; k++) {
            const rop *op = &w.ops[k];
            if (s.skipped[k] || op->fail)
                continue;
            for (int i = 0; i < op->n_acc; i++)
                CHECKF(op->seen[i] == op->expect[i],
                       "op %zu %s var %d at version %u; push order implies %u",
                       k, op->acc_write[i] ? "wrote" : "read", op->acc_var[i],
                       op->seen[i], op->expect[i]);
        }
    }
    size_t n_failed_vars = 0;
    for (size_t v = 0; v < nv; v++)
        n_failed_vars += s.failed[v];
    printf("  threads=%d%s seed=%llu reads=%d-%d: %zu ops in %.3f s, %zu "
           "failed, %zu skipped, %zu vars failed at the end",
           p->threads, p->kind == PL_ENGINE_NAIVE ? " (naive)" : "",
           (unsigned long long)p->seed, p->read_min, p->read_max, p->n_ops,
           t1 - t0, w.n_fail, n_skipped, n_failed_vars);
    if (p->order_log)
        printf(", max concurrent readers of a var %d",
               atomic_load(&w.max_readers));
    putchar('\n');
    /* delete some variables, leave the rest to destroy */
    for (size_t v = 0; v < nv; v += 2)
        pl_engine_delete_var(w.engine, w.vars[v]);
    pl_engine_destroy(w.engine);
    completer_stop(&w.comp);
    rsim_free(&s);
    free(wcount);
    free(w.version);
    free(w.readers_active);
    free(w.writer_active);
    free(w.vars);
    free(w.vals);
    free(w.fail_index);
    free(w.ops);
}

static rparams rdefault(pl_engine_kind kind, int threads)
{
    rparams p = {.kind = kind, .threads = threads, .n_ops = 10000,
                 .n_vars = 100, .round = 2500, .read_min = 2, .read_max = 19};
    return p;
}

static void random_seeds(rparams p)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        p.seed = seed;
        run_random(&p);
    }
}

static void case_random(pl_engine_kind kind, int threads)
{
    random_seeds(rdefault(kind, threads));
}

/* async ops (completed inline or late by another thread), device streams
 * and priorities mixed into the same workload */
static void case_random_mixed(pl_engine_kind kind, int threads)
{
    rparams p = rdefault(kind, threads);
    p.async_rate = 0.2;
    p.device_rate = 0.3;
    p.priorities = true;
    random_seeds(p);
}

static void case_order(pl_engine_kind kind, int threads, bool mixed)
{
    rparams p = rdefault(kind, threads);
    p.order_log = true;
    if (mixed) {
        p.async_rate = 0.2;
        p.device_rate = 0.3;
        p.priorities = true;
    }
    random_seeds(p);
}

/* With 2-19 reads per op a failure soon reaches nearly every variable, so
 * the same workload also runs with 0-3 reads per op: failures, skips and
 * recoveries (ops that only write a failed variable) then mix. */
static void case_errors(pl_engine_kind kind, int threads, bool mixed)
{
    rparams p = rdefault(kind, threads);
    p.fail_rate = 0.01;
    p.round = 2000;
    if (mixed) {
        p.async_rate = 0.2;
        p.device_rate = 0.3;
        p.priorities = true;
    }
    random_seeds(p);
    p.read_min = 0;
    p.read_max = 3;
    random_seeds(p);
}

/* ---- asynchronous operations completed late -------------------------------- */

typedef struct late_state {
    completer *comp;
    atomic_int writers_done;    /* async writers whose completion was signalled */
    atomic_int readers_done;
    atomic_int go;
    atomic_int a_done;
} late_state;

typedef struct late_op {
    late_state *s;
    int j;                      /* which writer / after which writer */
} late_op;

static pl_status *late_writer_work(void *arg)
{
    late_op *o = arg;
    if (atomic_load(&o->s->readers_done) != 2 * o->j)
        VIOLATION("late writer %d started before its readers finished", o->j);
    atomic_fetch_add(&o->s->writers_done, 1);
    return NULL;
}

static void late_writer_fn(void *arg, const pl_run_context *rc,
                           pl_completion *done)
{
    (void)rc;
    late_op *o = arg;
    if (atomic_load(&o->s->readers_done) != 2 * o->j)
        VIOLATION("late writer %d called before its readers finished", o->j);
    cjob j = {.done = done, .work = late_writer_work, .arg = o,
              .delay_us = 3000};
    completer_submit(o->s->comp, &j);
}

static pl_status *late_reader_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    late_op *o = arg;
    if (atomic_load(&o->s->writers_done) != o->j + 1)
        VIOLATION("reader after late writer %d started before its completion "
                  "(%d writers done)", o->j, atomic_load(&o->s->writers_done));
    sleep_us(500);
    atomic_fetch_add(&o->s->readers_done, 1);
    return NULL;
}

static void gated_async_fn(void *arg, const pl_run_context *rc,
                           pl_completion *done)
{
    (void)rc;
    late_state *s = arg;
    cjob j = {.done = done, .go = &s->go, .before = &s->a_done,
              .delay_us = 1000};
    completer_submit(s->comp, &j);
}

static pl_status *mark_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

static void failing_late_fn(void *arg, const pl_run_context *rc,
                            pl_completion *done)
{
    (void)rc;
    late_state *s = arg;
    cjob j = {.done = done, .delay_us = 30000,
              .status = pl_status_create(PL_CODE_DEVICE_ERROR, "late boom")};
    completer_submit(s->comp, &j);
}

static void case_async_late(void)
{
    completer comp;
    completer_start(&comp);
    late_state s = {.comp = &comp};
    atomic_store(&g_violations, 0);

    /* (a) a chain on one variable: late async writer, two readers, ... */
    pl_engine *e = make_engine(PL_ENGINE_THREADED, 4);
    pl_var *v = pl_engine_new_var(e);
    enum { N = 25 };
    late_op ops[N];
    for (int j = 0; j < N; j++) {
        ops[j] = (late_op){&s, j};
        expect_ok(pl_engine_push_async(e, late_writer_fn, &ops[j], CPU, NULL, 0,
                                       &v, 1, 0, "late_writer"), "push");
        for (int r = 0; r < 2; r++)
            expect_ok(pl_engine_push(e, late_reader_fn, &ops[j], CPU, &v, 1,
                                     NULL, 0, 0, "reader"), "push");
    }
    expect_ok(pl_engine_wait_var(e, v), "wait_var");
    CHECK(atomic_load(&s.writers_done) == N);
    CHECK(atomic_load(&s.readers_done) == 2 * N);
    expect_no_violations();
    pl_engine_destroy(e);

    /* (b) an op pending on its completion frees its worker: with one worker,
     * an independent op runs while the async op waits, and wait_var on the
     * async op's variable returns only once it is signalled */
    e = make_engine(PL_ENGINE_THREADED, 1);
    pl_var *v1 = pl_engine_new_var(e), *v2 = pl_engine_new_var(e);
    atomic_int other = 0;
    expect_ok(pl_engine_push_async(e, gated_async_fn, &s, CPU, NULL, 0, &v1, 1,
                                   0, "gated"), "push");
    expect_ok(pl_engine_push(e, mark_fn, &other, CPU, NULL, 0, &v2, 1, 0,
                             "other"), "push");
    expect_ok(pl_engine_wait_var(e, v2), "wait_var");
    CHECK(atomic_load(&other) == 1);
    CHECK(atomic_load(&s.a_done) == 0);
    atomic_store(&s.go, 1);
    expect_ok(pl_engine_wait_var(e, v1), "wait_var");
    CHECK(atomic_load(&s.a_done) == 1);

    /* (c) a late failure: the reader is skipped, the error reaches waiters */
    pl_var *v3 = pl_engine_new_var(e), *v4 = pl_engine_new_var(e);
    atomic_int b_ran = 0;
    expect_ok(pl_engine_push_async(e, failing_late_fn, &s, CPU, NULL, 0, &v3, 1,
                                   0, "late"), "push");
    expect_ok(pl_engine_push(e, mark_fn, &b_ran, CPU, &v3, 1, &v4, 1, 0,
                             "dependent"), "push");
    expect_error(pl_engine_wait_var(e, v4), PL_CODE_DEVICE_ERROR,
                 "op 'late' failed: late boom");
    CHECK(atomic_load(&b_ran) == 0);
    expect_error(pl_engine_wait_var(e, v3), PL_CODE_DEVICE_ERROR,
                 "op 'late' failed: late boom");
    expect_error(pl_engine_wait_all(e), PL_CODE_DEVICE_ERROR,
                 "op 'late' failed: late boom");
    expect_ok(pl_engine_wait_all(e), "second wait_all");
    expect_no_violations();
    pl_engine_destroy(e);
    completer_stop(&comp);
}

/* ---- a completion signalled twice ---------------------------------------- */

typedef struct twice_arg {
    completer *comp;
    bool error_first;
} twice_arg;

static void twice_inline_fn(void *arg, const pl_run_context *rc,
                            pl_completion *done)
{
    (void)rc;
    twice_arg *a = arg;
    if (a->error_first) {
        pl_engine_complete(done, pl_status_create(PL_CODE_DEVICE_ERROR, "first"));
        pl_engine_complete(done, NULL);
    } else {
        pl_engine_complete(done, NULL);
        pl_engine_complete(done, pl_status_create(PL_CODE_DEVICE_ERROR, "second"));
    }
}

static void twice_late_fn(void *arg, const pl_run_context *rc,
                          pl_completion *done)
{
    (void)rc;
    twice_arg *a = arg;
    cjob j = {.done = done, .delay_us = 5000, .twice = true};
    completer_submit(a->comp, &j);
}

static void twice_on(pl_engine_kind kind)
{
    completer comp;
    completer_start(&comp);
    pl_engine *e = make_engine(kind, 2);
    pl_var *v = pl_engine_new_var(e), *u = pl_engine_new_var(e);
    twice_arg ok = {&comp, false}, bad = {&comp, true};

    expect_ok(pl_engine_push_async(e, twice_inline_fn, &ok, CPU, NULL, 0, &v, 1,
                                   0, "twice"), "push");
    expect_ok(pl_engine_wait_var(e, v), "success, then a second signal");

    /* the second signal comes 20 ms after the op finished */
    expect_ok(pl_engine_push_async(e, twice_late_fn, &ok, CPU, NULL, 0, &v, 1,
                                   0, "twice_late"), "push");
    expect_ok(pl_engine_wait_var(e, v), "late success");
    sleep_us(60000);
    expect_ok(pl_engine_wait_var(e, v), "after a late second signal");

    expect_ok(pl_engine_push_async(e, twice_inline_fn, &bad, CPU, NULL, 0, &u,
                                   1, 0, "bad"), "push");
    expect_error(pl_engine_wait_var(e, u), PL_CODE_DEVICE_ERROR,
                 "op 'bad' failed: first");
    expect_error(pl_engine_wait_all(e), PL_CODE_DEVICE_ERROR,
                 "op 'bad' failed: first");
    expect_ok(pl_engine_wait_all(e), "second wait_all");
    completer_stop(&comp);
    expect_ok(pl_engine_wait_all(e), "wait_all after the late signals");
    pl_engine_destroy(e);
}

static void case_complete_twice(void)
{
    twice_on(PL_ENGINE_THREADED);
    twice_on(PL_ENGINE_NAIVE);
}

/* ---- wait_all: the first error, then NULL ---------------------------------- */

static pl_status *fail_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    return pl_status_create(PL_CODE_INVALID_ARGUMENT, "%s", (const char *)arg);
}

static pl_status *nop_fn(void *arg, const pl_run_context *rc)
{
    (void)arg;
    (void)rc;
    return NULL;
}

static void wait_all_error_on(pl_engine_kind kind)
{
    pl_engine *e = make_engine(kind, 2);
    expect_ok(pl_engine_wait_all(e), "wait_all on an idle engine");
    pl_var *v1 = pl_engine_new_var(e), *v2 = pl_engine_new_var(e),
           *v3 = pl_engine_new_var(e);
    atomic_int ran = 0;
    expect_ok(pl_engine_push(e, fail_fn, "first", CPU, NULL, 0, &v1, 1, 0, "f1"),
              "push");
    expect_error(pl_engine_wait_var(e, v1), PL_CODE_INVALID_ARGUMENT,
                 "op 'f1' failed: first");
    expect_ok(pl_engine_push(e, fail_fn, "second", CPU, NULL, 0, &v2, 1, 0, "f2"),
              "push");
    expect_error(pl_engine_wait_var(e, v2), PL_CODE_INVALID_ARGUMENT,
                 "op 'f2' failed: second");
    expect_error(pl_engine_wait_all(e), PL_CODE_INVALID_ARGUMENT,
                 "op 'f1' failed: first");
    expect_ok(pl_engine_wait_all(e), "second wait_all");
    /* wait_all forgets its own record only: the variables stay failed */
    expect_error(pl_engine_wait_var(e, v1), PL_CODE_INVALID_ARGUMENT,
                 "op 'f1' failed: first");
    /* recovery: a write-only op overwrites v1 */
    expect_ok(pl_engine_push(e, mark_fn, &ran, CPU, NULL, 0, &v1, 1, 0, "fix"),
              "push");
    expect_ok(pl_engine_wait_var(e, v1), "v1 after the overwrite");
    CHECK(atomic_load(&ran) == 1);
    expect_ok(pl_engine_wait_all(e), "wait_all after a recovery");
    /* a reader of v2 is skipped: a failure since the last wait_all */
    atomic_store(&ran, 0);
    expect_ok(pl_engine_push(e, mark_fn, &ran, CPU, &v2, 1, &v3, 1, 0, "skip"),
              "push");
    expect_error(pl_engine_wait_all(e), PL_CODE_INVALID_ARGUMENT,
                 "op 'f2' failed: second");
    CHECK(atomic_load(&ran) == 0);
    expect_error(pl_engine_wait_var(e, v3), PL_CODE_INVALID_ARGUMENT,
                 "op 'f2' failed: second");
    expect_ok(pl_engine_wait_all(e), "wait_all after it");
    /* reading and writing a failed variable is a read: still skipped */
    expect_ok(pl_engine_push(e, mark_fn, &ran, CPU, &v3, 1, &v3, 1, 0, "rw"),
              "push");
    expect_error(pl_engine_wait_var(e, v3), PL_CODE_INVALID_ARGUMENT,
                 "op 'f2' failed: second");
    CHECK(atomic_load(&ran) == 0);
    /* the written-only v1 is healthy; an op reading v1 and writing v2 (write
     * only) recovers v2 */
    expect_ok(pl_engine_push(e, mark_fn, &ran, CPU, &v1, 1, &v2, 1, 0, "fix2"),
              "push");
    expect_ok(pl_engine_wait_var(e, v2), "v2 after the overwrite");
    CHECK(atomic_load(&ran) == 1);
    expect_error(pl_engine_wait_all(e), PL_CODE_INVALID_ARGUMENT,
                 "op 'f2' failed: second");
    expect_ok(pl_engine_wait_all(e), "last wait_all");
    expect_ok(pl_engine_push(e, nop_fn, NULL, CPU, &v1, 1, NULL, 0, 0, "r"),
              "push");
    expect_ok(pl_engine_wait_all(e), "wait_all after a reader");
    pl_engine_destroy(e);
}

static void case_wait_all_error(pl_engine_kind kind)
{
    wait_all_error_on(kind);
}

/* ---- delete_var with work pending ---------------------------------------- */

typedef struct chain_state {
    atomic_int count;           /* ops of the chain that ran */
    atomic_int bad;
    int expect;                 /* plain: the chain itself orders it */
} chain_state;

typedef struct chain_op {
    chain_state *c;
    int k;
    long spin;
} chain_op;

static pl_status *chain_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    chain_op *o = arg;
    if (o->c->expect != o->k)
        VIOLATION("chain op %d ran after op %d", o->k, o->c->expect - 1);
    if (o->spin > 0)
        spin_us(o->spin);
    o->c->expect = o->k + 1;
    atomic_fetch_add(&o->c->count, 1);
    return NULL;
}

typedef struct count_op {
    atomic_int *count;
    long spin;
} count_op;

static pl_status *count_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    count_op *o = arg;
    if (o->spin > 0)
        spin_us(o->spin);
    atomic_fetch_add(o->count, 1);
    return NULL;
}

static completer *g_comp;

static void late_ok_fn2(void *arg, const pl_run_context *rc,
                        pl_completion *done)
{
    (void)rc;
    cjob j = {.done = done, .delay_us = 50000, .before = arg};
    completer_submit(g_comp, &j);
}

static void delete_on(pl_engine_kind kind)
{
    completer comp;
    completer_start(&comp);
    g_comp = &comp;
    atomic_store(&g_violations, 0);
    pl_engine *e = make_engine(kind, 2);

    /* a chain of writers, deleted at once */
    enum { N = 60 };
    chain_state c = {0};
    chain_op ops[N];
    pl_var *v = pl_engine_new_var(e);
    for (int k = 0; k < N; k++) {
        ops[k] = (chain_op){&c, k, 200};
        expect_ok(pl_engine_push(e, chain_fn, &ops[k], CPU, NULL, 0, &v, 1, 0,
                                 "chain"), "push");
    }
    pl_engine_delete_var(e, v);

    /* readers of a deleted variable, each writing its own */
    atomic_int readers = 0;
    count_op rop_ = {&readers, 100};
    pl_var *shared = pl_engine_new_var(e);
    pl_var *own[20];
    for (int i = 0; i < 20; i++) {
        own[i] = pl_engine_new_var(e);
        expect_ok(pl_engine_push(e, count_fn, &rop_, CPU, &shared, 1, &own[i],
                                 1, 0, "reader"), "push");
    }
    pl_engine_delete_var(e, shared);

    /* a variable with a pending asynchronous op */
    atomic_int signalled = 0;
    pl_var *av = pl_engine_new_var(e);
    expect_ok(pl_engine_push_async(e, late_ok_fn2, &signalled, CPU, NULL, 0,
                                   &av, 1, 0, "late"), "push");
    pl_engine_delete_var(e, av);

    /* a failed variable, and a fresh one */
    pl_var *fv = pl_engine_new_var(e);
    expect_ok(pl_engine_push(e, fail_fn, "gone", CPU, NULL, 0, &fv, 1, 0, "f"),
              "push");
    pl_engine_delete_var(e, fv);
    pl_engine_delete_var(e, pl_engine_new_var(e));

    /* many short-lived variables */
    atomic_int many = 0;
    count_op mop = {&many, 0};
    for (int i = 0; i < 3000; i++) {
        pl_var *t = pl_engine_new_var(e);
        CHECK(t != NULL);
        expect_ok(pl_engine_push(e, count_fn, &mop, CPU, NULL, 0, &t, 1, 0,
                                 "t"), "push");
        expect_ok(pl_engine_push(e, count_fn, &mop, CPU, &t, 1, NULL, 0, 0,
                                 "t"), "push");
        pl_engine_delete_var(e, t);
    }

    expect_error(pl_engine_wait_all(e), PL_CODE_INVALID_ARGUMENT,
                 "op 'f' failed: gone");
    CHECK(atomic_load(&c.count) == N);
    CHECK(atomic_load(&readers) == 20);
    CHECK(atomic_load(&signalled) == 1);
    CHECK(atomic_load(&many) == 6000);
    for (int i = 0; i < 20; i++)
        expect_ok(pl_engine_wait_var(e, own[i]), "own var");
    expect_no_violations();
    pl_engine_destroy(e);
    completer_stop(&comp);
}

static void case_delete_pending(void)
{
    delete_on(PL_ENGINE_THREADED);
    delete_on(PL_ENGINE_NAIVE);
}

/* ---- wait_var from 8 threads at once --------------------------------------- */

typedef struct waiters_state {
    pl_engine *e;
    pl_var *v;
    pl_var *fv;
    atomic_int pushed;          /* chain ops whose push returned */
    chain_state chain;
    atomic_int pushing_done;
} waiters_state;

static void *waiter_main(void *arg)
{
    waiters_state *s = arg;
    int rounds = 0;
    while (rounds < 20 || atomic_load(&s->pushing_done) == 0) {
        int before = atomic_load(&s->pushed);
        pl_status *st = pl_engine_wait_var(s->e, s->v);
        if (st != NULL) {
            VIOLATION("wait_var: %s", pl_status_message(st));
            pl_status_free(st);
        }
        int done = atomic_load(&s->chain.count);
        if (done < before)
            VIOLATION("wait_var returned with %d of %d earlier ops done", done,
                      before);
        st = pl_engine_wait_var(s->e, s->fv);
        if (st == NULL || strcmp(pl_status_message(st), "op 'f' failed: x") != 0)
            VIOLATION("wait_var on a failed var: %s",
                      st ? pl_status_message(st) : "success");
        pl_status_free(st);
        rounds++;
    }
    return NULL;
}

static void case_wait_var_threads(void)
{
    atomic_store(&g_violations, 0);
    waiters_state s = {0};
    s.e = make_engine(PL_ENGINE_THREADED, 4);
    s.v = pl_engine_new_var(s.e);
    s.fv = pl_engine_new_var(s.e);
    expect_ok(pl_engine_push(s.e, fail_fn, "x", CPU, NULL, 0, &s.fv, 1, 0, "f"),
              "push");
    enum { N = 2000 };
    chain_op *ops = calloc(N, sizeof *ops);
    CHECK(ops != NULL);
    for (int k = 0; k < N; k++)
        ops[k] = (chain_op){&s.chain, k, k % 10 == 0 ? 100 : 0};
    for (int k = 0; k < N / 2; k++) {
        expect_ok(pl_engine_push(s.e, chain_fn, &ops[k], CPU, NULL, 0, &s.v, 1,
                                 0, "chain"), "push");
        atomic_store(&s.pushed, k + 1);
    }
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&th[i], NULL, waiter_main, &s) == 0);
    for (int k = N / 2; k < N; k++) {
        expect_ok(pl_engine_push(s.e, chain_fn, &ops[k], CPU, NULL, 0, &s.v, 1,
                                 0, "chain"), "push");
        atomic_store(&s.pushed, k + 1);
    }
    atomic_store(&s.pushing_done, 1);
    for (int i = 0; i < 8; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    expect_ok(pl_engine_wait_var(s.e, s.v), "wait_var");
    CHECK(atomic_load(&s.chain.count) == N);
    expect_no_violations();
    expect_error(pl_engine_wait_all(s.e), PL_CODE_INVALID_ARGUMENT,
                 "op 'f' failed: x");
    pl_engine_destroy(s.e);
    free(ops);
}

/* ---- push from 4 threads at once ------------------------------------------ */

enum { PT_THREADS = 4, PT_OWN = 6, PT_OPS = 2000 };

typedef struct pt_world pt_world;

typedef struct pt_op {
    pt_world *w;
    int t;
    uint32_t id;
    uint8_t n_read, n_write;
    uint8_t read[4], write[2];  /* indices into the thread's own vars */
    bool shared_read;           /* also reads the shared variable */
    bool counter;               /* increments the shared counter */
} pt_op;

struct pt_world {
    pl_engine *e;
    pl_var *shared;
    pl_var *counter_var;
    uint64_t shared_val;        /* plain: guarded by the engine */
    uint64_t counter;           /* plain: guarded by the engine */
    pl_var *own_vars[PT_THREADS][PT_OWN];
    uint64_t own[PT_THREADS][PT_OWN]; /* plain: guarded by the engine */
    uint64_t serial[PT_THREADS][PT_OWN];
    pt_op *ops[PT_THREADS];
    atomic_int in_naive_op;     /* the naive engine serialises pushes */
};

static void pt_compute(const pt_op *o, uint64_t *vals)
{
    uint64_t h = mix64(o->id + 1000003ull * (uint64_t)o->t);
    for (int i = 0; i < o->n_read; i++)
        h = mix64(h ^ vals[o->read[i]]);
    for (int i = 0; i < o->n_write; i++)
        vals[o->write[i]] = mix64(h + (uint64_t)i);
}

static pl_status *pt_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    pt_op *o = arg;
    pt_world *w = o->w;
    if (o->shared_read && w->shared_val != 42)
        VIOLATION("shared var read %llu", (unsigned long long)w->shared_val);
    if (o->counter)
        w->counter++;
    pt_compute(o, w->own[o->t]);
    return NULL;
}

static pl_status *naive_guard_fn(void *arg, const pl_run_context *rc)
{
    pt_op *o = arg;
    if (atomic_fetch_add(&o->w->in_naive_op, 1) != 0)
        VIOLATION("two naive ops at once");
    pl_status *st = pt_fn(arg, rc);
    atomic_fetch_sub(&o->w->in_naive_op, 1);
    return st;
}

static pl_status *set_shared_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    pt_world *w = arg;
    w->shared_val = 42;
    return NULL;
}

typedef struct pt_thread {
    pt_world *w;
    int t;
    pl_engine_kind kind;
} pt_thread;

static void *pt_main(void *arg)
{
    pt_thread *pt = arg;
    pt_world *w = pt->w;
    int t = pt->t;
    for (int k = 0; k < PT_OPS; k++) {
        pt_op *o = &w->ops[t][k];
        pl_var *rv[6], *wv[3];
        size_t nr = 0, nw = 0;
        for (int i = 0; i < o->n_read; i++)
            rv[nr++] = w->own_vars[t][o->read[i]];
        if (o->shared_read)
            rv[nr++] = w->shared;
        for (int i = 0; i < o->n_write; i++)
            wv[nw++] = w->own_vars[t][o->write[i]];
        if (o->counter)
            wv[nw++] = w->counter_var;
        pl_status *st = pl_engine_push(
            w->e, pt->kind == PL_ENGINE_NAIVE ? naive_guard_fn : pt_fn, o, CPU,
            rv, nr, wv, nw, (int)(o->id % 3), "pt");
        if (st != NULL) {
            VIOLATION("push: %s", pl_status_message(st));
            pl_status_free(st);
        }
    }
    return NULL;
}

static void push_threads_on(pl_engine_kind kind)
{
    atomic_store(&g_violations, 0);
    pt_world *w = calloc(1, sizeof *w);
    CHECK(w != NULL);
    w->e = make_engine(kind, 4);
    w->shared = pl_engine_new_var(w->e);
    w->counter_var = pl_engine_new_var(w->e);
    rng r = {12345};
    int n_counter = 0;
    for (int t = 0; t < PT_THREADS; t++) {
        for (int i = 0; i < PT_OWN; i++)
            w->own_vars[t][i] = pl_engine_new_var(w->e);
        w->ops[t] = calloc(PT_OPS, sizeof *w->ops[t]);
        CHECK(w->ops[t] != NULL);
        for (int k = 0; k < PT_OPS; k++) {
            pt_op *o = &w->ops[t][k];
            o->w = w;
            o->t = t;
            o->id = (uint32_t)k;
            o->n_read = (uint8_t)rng_below(&r, 5);
            o->n_write = (uint8_t)rng_below(&r, 3);
            for (int i = 0; i < o->n_read; i++)
                o->read[i] = (uint8_t)rng_below(&r, PT_OWN);
            for (int i = 0; i < o->n_write; i++)
                o->write[i] = (uint8_t)rng_below(&r, PT_OWN);
            o->shared_read = rng_below(&r, 2) == 0;
            o->counter = rng_below(&r, 10) == 0;
            n_counter += o->counter;
            pt_compute(o, w->serial[t]);
        }
    }
    expect_ok(pl_engine_push(w->e, set_shared_fn, w, CPU, NULL, 0, &w->shared,
                             1, 0, "set"), "push");
    pthread_t th[PT_THREADS];
    pt_thread pts[PT_THREADS];
    for (int t = 0; t < PT_THREADS; t++) {
        pts[t] = (pt_thread){w, t, kind};
        CHECK(pthread_create(&th[t], NULL, pt_main, &pts[t]) == 0);
    }
    for (int t = 0; t < PT_THREADS; t++)
        CHECK(pthread_join(th[t], NULL) == 0);
    expect_ok(pl_engine_wait_all(w->e), "wait_all");
    expect_no_violations();
    CHECKF(w->counter == (uint64_t)n_counter, "counter %llu, expected %d",
           (unsigned long long)w->counter, n_counter);
    for (int t = 0; t < PT_THREADS; t++)
        for (int i = 0; i < PT_OWN; i++)
            CHECKF(w->own[t][i] == w->serial[t][i],
                   "thread %d var %d differs from the serial run", t, i);
    pl_engine_destroy(w->e);
    for (int t = 0; t < PT_THREADS; t++)
        free(w->ops[t]);
    free(w);
}

static void case_push_threads(pl_engine_kind kind)
{
    push_threads_on(kind);
}

/* ---- destroy with work pending ---------------------------------------------- */

typedef struct destroy_state {
    atomic_int destroyed;
    atomic_int ran;
    atomic_int gate;
    atomic_int gate_entered;
    atomic_int async_started;
    atomic_int async_signalled;
    completer *comp;
} destroy_state;

static pl_status *d_op_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    destroy_state *s = arg;
    if (atomic_load(&s->destroyed))
        VIOLATION("an op ran after destroy returned");
    atomic_fetch_add(&s->ran, 1);
    return NULL;
}

static pl_status *d_gate_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    destroy_state *s = arg;
    atomic_store(&s->gate_entered, 1);
    wait_flag(&s->gate);
    if (atomic_load(&s->destroyed))
        VIOLATION("the gate op outlived destroy");
    return NULL;
}

static void d_async_fn(void *arg, const pl_run_context *rc, pl_completion *done)
{
    (void)rc;
    destroy_state *s = arg;
    atomic_store(&s->async_started, 1);
    cjob j = {.done = done, .delay_us = 150000, .before = &s->async_signalled};
    completer_submit(s->comp, &j);
}

static void *gate_opener(void *arg)
{
    destroy_state *s = arg;
    sleep_us(100000);
    atomic_store(&s->gate, 1);
    return NULL;
}

static void destroy_on(int threads, bool with_device)
{
    atomic_store(&g_violations, 0);
    completer comp;
    completer_start(&comp);
    destroy_state s = {.comp = &comp};
    pl_engine *e = make_engine(PL_ENGINE_THREADED, threads);
    pl_var *g = pl_engine_new_var(e);
    pl_var *a = pl_engine_new_var(e);
    /* the async op first: it returns at once, leaving its worker free */
    expect_ok(pl_engine_push_async(e, d_async_fn, &s, with_device ? DEV[0] : CPU,
                                   NULL, 0, &a, 1, 10, "async"), "push");
    wait_flag(&s.async_started);
    expect_ok(pl_engine_push(e, d_gate_fn, &s, CPU, NULL, 0, &g, 1, 10, "gate"),
              "push");
    wait_flag(&s.gate_entered);
    enum { CHAINS = 8, LEN = 500 };
    pl_var *cv[CHAINS];
    for (int c = 0; c < CHAINS; c++)
        cv[c] = pl_engine_new_var(e);
    for (int k = 0; k < LEN; k++)
        for (int c = 0; c < CHAINS; c++) {
            pl_var *reads[2] = {g, a};
            size_t nr = c < CHAINS / 2 ? (size_t)(c % 2 + 1) : 0;
            pl_exec_ctx ctx = with_device && c == CHAINS - 1 ? DEV[1] : CPU;
            pl_status *st;
            if (k == LEN / 2 && c == 0)
                st = pl_engine_push(e, fail_fn, "cancelled?", ctx, reads, nr,
                                    &cv[c], 1, 0, "f");
            else
                st = pl_engine_push(e, d_op_fn, &s, ctx, reads, nr, &cv[c], 1,
                                    0, "chain");
            expect_ok(st, "push");
        }
    pthread_t opener;
    CHECK(pthread_create(&opener, NULL, gate_opener, &s) == 0);
    double t0 = now_s();
    pl_engine_destroy(e);
    double t1 = now_s();
    atomic_store(&s.destroyed, 1);
    /* destroy waited for the asynchronous op until it was signalled */
    CHECK(atomic_load(&s.async_signalled) == 1);
    CHECK(atomic_load(&s.gate) == 1);
    int ran = atomic_load(&s.ran);
    sleep_us(100000);
    CHECK(atomic_load(&s.ran) == ran);
    CHECK(pthread_join(opener, NULL) == 0);
    completer_stop(&comp);
    expect_no_violations();
    printf("  threads=%d%s: destroy took %.3f s, %d of %d chain ops ran\n",
           threads, with_device ? " with device ops" : "", t1 - t0, ran,
           CHAINS * LEN - 1);
}

static void case_destroy_pending(void)
{
    destroy_on(1, false);
    destroy_on(2, false);
    destroy_on(4, true);
    /* an engine destroyed with idle variables and nothing pending; NULL */
    pl_engine *e = make_engine(PL_ENGINE_THREADED, 2);
    for (int i = 0; i < 100; i++)
        CHECK(pl_engine_new_var(e) != NULL);
    pl_engine_destroy(e);
    e = make_engine(PL_ENGINE_NAIVE, 1);
    CHECK(pl_engine_new_var(e) != NULL);
    pl_engine_destroy(e);
    pl_engine_destroy(NULL);
}

/* An async op signalled by a thread of the application, then wait_all and
 * destroy at once: the signalling thread must be done with the engine by the
 * time wait_all returns (a ThreadSanitizer or ASan build sees it if not). */
static void *signal_main(void *arg)
{
    pl_engine_complete(arg, NULL);
    return NULL;
}

typedef struct signal_arg {
    pthread_t thread;
    atomic_int started;
} signal_arg;

static void signal_async_fn(void *arg, const pl_run_context *rc,
                            pl_completion *done)
{
    (void)rc;
    signal_arg *a = arg;
    if (pthread_create(&a->thread, NULL, signal_main, done) != 0) {
        VIOLATION("pthread_create");
        pl_engine_complete(done, NULL);
        return;
    }
    atomic_store(&a->started, 1);
}

static void case_destroy_after_async(void)
{
    atomic_store(&g_violations, 0);
    for (int i = 0; i < 2000; i++) {
        pl_engine *e = make_engine(i % 3 == 2 ? PL_ENGINE_NAIVE
                                              : PL_ENGINE_THREADED, 1 + i % 2);
        pl_var *v = pl_engine_new_var(e);
        signal_arg a = {0};
        expect_ok(pl_engine_push_async(e, signal_async_fn, &a,
                                       i % 4 == 1 ? DEV[0] : CPU, NULL, 0, &v,
                                       1, 0, "signalled"), "push");
        expect_ok(pl_engine_wait_all(e), "wait_all");
        pl_engine_destroy(e);
        if (atomic_load(&a.started))
            CHECK(pthread_join(a.thread, NULL) == 0);
    }
    expect_no_violations();
}

/* ---- parallel_for inside operations, every worker busy ------------------------ */

typedef struct pf_state {
    pl_threadpool *pool;
    atomic_int busy;
    int want_busy;
} pf_state;

typedef struct pf_op {
    pf_state *s;
    atomic_llong sum;
    atomic_llong inner;
    size_t n;
} pf_op;

static void pf_inner_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    pf_op *o = arg;
    long long acc = 0;
    for (size_t i = begin; i < end; i++)
        acc += (long long)i;
    atomic_fetch_add(&o->inner, acc);
}

static void pf_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    pf_op *o = arg;
    long long acc = 0;
    for (size_t i = begin; i < end; i++)
        acc += (long long)i;
    atomic_fetch_add(&o->sum, acc);
    /* a nested parallel_for inside a chunk */
    if (begin == 0)
        pl_threadpool_parallel_for(o->s->pool, 1000, 10, pf_inner_body, o);
}

static pl_status *pf_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    pf_op *o = arg;
    /* hold until every worker is inside an op (or a while has passed) */
    atomic_fetch_add(&o->s->busy, 1);
    double until = now_s() + 0.2;
    while (atomic_load(&o->s->busy) < o->s->want_busy && now_s() < until)
        sleep_us(100);
    for (int rep = 0; rep < 3; rep++)
        pl_threadpool_parallel_for(o->s->pool, o->n, 64, pf_body, o);
    atomic_fetch_sub(&o->s->busy, 1);
    return NULL;
}

static void case_parallel_for_nested(void)
{
    int sizes[] = {1, 2, 4};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int threads = sizes[si];
        pl_engine *e = make_engine(PL_ENGINE_THREADED, threads);
        pf_state s = {.pool = pl_engine_cpu_pool(e), .want_busy = threads};
        CHECK(s.pool != NULL);
        int n_ops = 3 * threads + 2;
        pf_op *ops = calloc((size_t)n_ops, sizeof *ops);
        pl_var **vars = calloc((size_t)n_ops, sizeof *vars);
        CHECK(ops != NULL && vars != NULL);
        for (int i = 0; i < n_ops; i++) {
            ops[i].s = &s;
            ops[i].n = 20000 + (size_t)i * 17;
            vars[i] = pl_engine_new_var(e);
            expect_ok(pl_engine_push(e, pf_fn, &ops[i], i % 2 ? CPU : DEV[0],
                                     NULL, 0, &vars[i], 1, 0, "pf"), "push");
        }
        /* the application thread uses the pool meanwhile */
        pf_op mine = {.s = &s, .n = 50000};
        for (int rep = 0; rep < 3; rep++)
            pl_threadpool_parallel_for(s.pool, mine.n, 64, pf_body, &mine);
        expect_ok(pl_engine_wait_all(e), "wait_all");
        for (int i = 0; i < n_ops; i++) {
            long long n = (long long)ops[i].n;
            CHECKF(atomic_load(&ops[i].sum) == 3 * (n * (n - 1) / 2),
                   "op %d: sum %lld", i, (long long)atomic_load(&ops[i].sum));
            CHECK(atomic_load(&ops[i].inner) == 3 * (999LL * 1000 / 2));
        }
        CHECK(atomic_load(&mine.sum) == 3 * (50000LL * 49999 / 2));
        pl_engine_destroy(e);
        free(ops);
        free(vars);
    }
}

/* ---- the pool alone: bursts of parallel_for, spinning or not --------------- */

typedef struct burst_arg {
    atomic_llong sum;
    atomic_int calls;
} burst_arg;

static void burst_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    burst_arg *b = arg;
    long long acc = 0;
    for (size_t i = begin; i < end; i++)
        acc += (long long)i;
    atomic_fetch_add(&b->sum, acc);
    atomic_fetch_add(&b->calls, 1);
}

typedef struct burst_thread {
    pthread_t thread;
    pl_threadpool *pool;
    int rounds;
    unsigned seed;
} burst_thread;

/* Many parallel_for in a row with small, varying sizes, each on a job that
 * lives on this stack: the pattern of a model's kernels, where helpers
 * finish right as the caller returns. Every sum is checked. */
static void *burst_main(void *arg)
{
    burst_thread *t = arg;
    rng r = {t->seed};
    for (int k = 0; k < t->rounds; k++) {
        burst_arg b;
        atomic_init(&b.sum, 0);
        atomic_init(&b.calls, 0);
        size_t n = 1 + rng_below(&r, 5000);
        size_t grain = 1 + rng_below(&r, 64);
        pl_threadpool_parallel_for(t->pool, n, grain, burst_body, &b);
        long long want = (long long)n * ((long long)n - 1) / 2;
        CHECKF(atomic_load(&b.sum) == want, "round %d: n %zu grain %zu: sum "
               "%lld, expected %lld", k, n, grain,
               (long long)atomic_load(&b.sum), want);
        /* now and then a gap, so that helpers run out of spin and sleep */
        if (rng_below(&r, 64) == 0)
            sleep_us(rng_below(&r, 300));
    }
    return NULL;
}

static void burst_on(int workers, int budget, int spin_us, int callers)
{
    pl_threadpool *pool = NULL;
    pl_status *st = pl_threadpool_create_ex(workers, budget, spin_us, &pool);
    CHECKF(st == NULL, "pl_threadpool_create_ex: %s", pl_status_message(st));
    burst_thread t[4];
    CHECK(callers >= 1 && callers <= 4);
    for (int i = 0; i < callers; i++) {
        t[i] = (burst_thread){.pool = pool, .rounds = 2000 / callers,
                              .seed = 7u + (unsigned)i};
        CHECK(pthread_create(&t[i].thread, NULL, burst_main, &t[i]) == 0);
    }
    for (int i = 0; i < callers; i++)
        CHECK(pthread_join(t[i].thread, NULL) == 0);
    pl_threadpool_destroy(pool);
}

static void case_parallel_for_burst(void)
{
    burst_on(1, 2, g_spin_us, 1);
    burst_on(3, 4, g_spin_us, 1);
    burst_on(3, 4, g_spin_us, 3);
    burst_on(1, 2, g_spin_us, 2);
}

/* Every chunk waits until both workers of the pool have entered one, so
 * that both are awake, and spinning, once the parallel_for returns. */
typedef struct meet_arg {
    atomic_int helpers;         /* workers that entered a chunk */
    atomic_int seen[3];         /* by worker slot */
} meet_arg;

static void meet_body(void *arg, size_t begin, size_t end, int worker)
{
    (void)begin;
    (void)end;
    meet_arg *m = arg;
    if (worker > 0 && worker < 3 && atomic_exchange(&m->seen[worker], 1) == 0)
        atomic_fetch_add(&m->helpers, 1);
    while (atomic_load(&m->helpers) < 2)
        sleep_us(50);
}

/* Destroy does not wait out the spin: pools whose two workers are spinning
 * for 0.1 s are destroyed 50 times. Were the spin waited out, this would
 * take 5 s or more; CTest's TIMEOUT for this case is shorter. */
static void case_destroy_spinning(void)
{
    for (int i = 0; i < 50; i++) {
        pl_threadpool *pool = NULL;
        pl_status *st = pl_threadpool_create_ex(2, 3, PL_THREADPOOL_SPIN_US_MAX,
                                                &pool);
        CHECKF(st == NULL, "pl_threadpool_create_ex: %s", pl_status_message(st));
        meet_arg m;
        atomic_init(&m.helpers, 0);
        for (int k = 0; k < 3; k++)
            atomic_init(&m.seen[k], 0);
        pl_threadpool_parallel_for(pool, 12, 1, meet_body, &m);
        CHECK(atomic_load(&m.helpers) == 2);
        pl_threadpool_destroy(pool);
    }
    /* an engine too: its workers spin after running ops */
    g_spin_us = PL_THREADPOOL_SPIN_US_MAX;
    for (int i = 0; i < 10; i++) {
        pl_engine *e = make_engine(PL_ENGINE_THREADED, 2);
        pl_var *v = pl_engine_new_var(e);
        CHECK(v != NULL);
        atomic_int count;
        atomic_init(&count, 0);
        count_op op = {.count = &count};
        for (int k = 0; k < 20; k++)
            expect_ok(pl_engine_push(e, count_fn, &op, CPU, NULL, 0, &v, 1, 0,
                                     "count"), "push");
        expect_ok(pl_engine_wait_all(e), "wait_all");
        CHECK(atomic_load(&count) == 20);
        pl_engine_destroy(e);
    }
}

/* CPU time of this process, in ms. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* pl_threadpool_hold_spin: workers that would spin for 0.1 s after a
 * parallel_for go to sleep while a hold is on. Over 0.2 s of wall time with
 * the hold on, two spinning workers would burn up to 0.2 s of CPU; held,
 * the process burns next to none (a bound of 40 ms leaves room for a
 * loaded machine; spinning that ignored the hold uses at least the 0.1 s
 * of one worker's spin unless the machine starves it). The hold released,
 * work runs as before. */
static void case_hold_spin(void)
{
    pl_threadpool *pool = NULL;
    pl_status *st = pl_threadpool_create_ex(2, 3, PL_THREADPOOL_SPIN_US_MAX, &pool);
    CHECKF(st == NULL, "pl_threadpool_create_ex: %s", pl_status_message(st));
    pl_threadpool_hold_spin(pool, 1);
    meet_arg m;
    atomic_init(&m.helpers, 0);
    for (int k = 0; k < 3; k++)
        atomic_init(&m.seen[k], 0);
    pl_threadpool_parallel_for(pool, 12, 1, meet_body, &m);
    CHECK(atomic_load(&m.helpers) == 2);
    double t0 = cpu_ms();
    struct timespec nap = {0, 200 * 1000 * 1000};
    nanosleep(&nap, NULL);
    double burnt = cpu_ms() - t0;
    CHECKF(burnt < 40.0, "%.1f ms of CPU burnt by idle workers while spinning was held",
           burnt);
    pl_threadpool_hold_spin(pool, -1);
    for (int k = 0; k < 3; k++)
        atomic_init(&m.seen[k], 0);
    atomic_init(&m.helpers, 0);
    pl_threadpool_parallel_for(pool, 12, 1, meet_body, &m);
    CHECK(atomic_load(&m.helpers) == 2);
    pl_threadpool_destroy(pool);
}

/* PL_EXEC_INLINE: an op runs in the thread that makes it ready (the
 * worker that finished its last dependency, or the pushing thread when it
 * is ready at once), and is skipped with the error of a failed input. */
typedef struct inline_rec {
    pthread_t thread;
    atomic_int ran;
} inline_rec;

static pl_status *record_thread_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    inline_rec *r = arg;
    r->thread = pthread_self();
    atomic_fetch_add(&r->ran, 1);
    return NULL;
}

/* Records its thread once the test opens the gate (ran > 0 set by it). */
typedef struct gate_rec {
    inline_rec rec;
    atomic_int open;
} gate_rec;

static pl_status *gated_fn(void *arg, const pl_run_context *rc)
{
    gate_rec *g = arg;
    while (!atomic_load(&g->open))
        sched_yield();
    return record_thread_fn(&g->rec, rc);
}

/* An op that marks itself started, then holds its worker until the test
 * opens it (or 5 s pass, so that a broken engine fails instead of hanging). */
typedef struct hold_rec {
    atomic_int started;
    atomic_int open;
} hold_rec;

static pl_status *held_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    hold_rec *h = arg;
    atomic_store(&h->started, 1);
    double end = now_s() + 5.0;
    while (!atomic_load(&h->open) && now_s() < end)
        sleep_us(100);
    return NULL;
}

typedef struct worker_rec {
    pthread_t thread;
    int32_t worker;
    atomic_int ran;
} worker_rec;

static pl_status *record_worker_fn(void *arg, const pl_run_context *rc)
{
    worker_rec *r = arg;
    r->thread = pthread_self();
    r->worker = rc->worker;
    atomic_fetch_add(&r->ran, 1);
    return NULL;
}

/* wait_var runs ready CPU ops on the waiting thread: with the one worker
 * held by another op, the op waited for runs on the waiter at once, as the
 * worker after the pool's (index 1 of a one-worker pool). An engine whose
 * waiter only sleeps would run it on the worker after the hold ends. */
static void case_wait_helps(void)
{
    pl_engine *e = make_engine(PL_ENGINE_THREADED, 1);
    pl_var *va = pl_engine_new_var(e), *vb = pl_engine_new_var(e);
    CHECK(va != NULL && vb != NULL);
    for (int k = 0; k < 20; k++) {
        hold_rec h;
        atomic_init(&h.started, 0);
        atomic_init(&h.open, 0);
        worker_rec b = {0};
        atomic_init(&b.ran, 0);
        expect_ok(pl_engine_push(e, held_fn, &h, CPU, NULL, 0, &va, 1, 0, "held"), "push held");
        wait_flag(&h.started);
        expect_ok(pl_engine_push(e, record_worker_fn, &b, CPU, NULL, 0, &vb, 1, 0, "b"),
                  "push b");
        expect_ok(pl_engine_wait_var(e, vb), "wait b");
        CHECK(atomic_load(&b.ran) == 1);
        CHECKF(atomic_load(&h.open) == 0, "round %d: the held op was not held", k);
        CHECKF(pthread_equal(b.thread, pthread_self()), "round %d: b ran on a worker", k);
        CHECKF(b.worker == 1, "round %d: b ran as worker %d, expected 1", k, (int)b.worker);
        atomic_store(&h.open, 1);
        expect_ok(pl_engine_wait_var(e, va), "wait held");
    }
    pl_engine_delete_var(e, va);
    pl_engine_delete_var(e, vb);
    expect_ok(pl_engine_wait_all(e), "wait all");
    pl_engine_destroy(e);
}

static void case_inline_ops(void)
{
    static const pl_exec_ctx INLINE = {PL_EXEC_INLINE, 0, 0, NULL};
    pl_engine *e = make_engine(PL_ENGINE_THREADED, 2);
    pl_var *v = pl_engine_new_var(e), *w = pl_engine_new_var(e);
    CHECK(v != NULL && w != NULL);
    /* Ready at push: the pushing thread runs it. */
    inline_rec first = {0};
    atomic_init(&first.ran, 0);
    expect_ok(pl_engine_push(e, record_thread_fn, &first, INLINE, NULL, 0, &w, 1, 0, "inline"),
              "push inline");
    CHECK(atomic_load(&first.ran) == 1);
    CHECK(pthread_equal(first.thread, pthread_self()));
    /* After a CPU op: the worker that ran it runs the inline op too. */
    for (int k = 0; k < 50; k++) {
        /* Fresh variables: an earlier wait still releasing w would make
         * its own thread the one that readies the op. */
        pl_var *vk = pl_engine_new_var(e), *wk = pl_engine_new_var(e);
        CHECK(vk != NULL && wk != NULL);
        gate_rec a = {0};
        inline_rec b = {0};
        atomic_init(&a.rec.ran, 0);
        atomic_init(&a.open, 0);
        atomic_init(&b.ran, 0);
        expect_ok(pl_engine_push(e, gated_fn, &a, CPU, NULL, 0, &vk, 1, 0, "cpu"), "push cpu");
        expect_ok(pl_engine_push(e, record_thread_fn, &b, INLINE, &vk, 1, &wk, 1, 0, "inline"),
                  "push inline");
        CHECK(atomic_load(&b.ran) == 0); /* waits for the gated op */
        atomic_store(&a.open, 1);
        expect_ok(pl_engine_wait_all(e), "wait");
        CHECK(atomic_load(&a.rec.ran) == 1 && atomic_load(&b.ran) == 1);
        CHECK(pthread_equal(a.rec.thread, b.thread));
        CHECK(!pthread_equal(b.thread, pthread_self()));
        pl_engine_delete_var(e, vk);
        pl_engine_delete_var(e, wk);
    }
    /* A failed input: the inline op is skipped with its error. */
    inline_rec c = {0};
    atomic_init(&c.ran, 0);
    expect_ok(pl_engine_push(e, fail_fn, "broken", CPU, NULL, 0, &v, 1, 0, "fail"), "push");
    expect_ok(pl_engine_push(e, record_thread_fn, &c, INLINE, &v, 1, &w, 1, 0, "inline"),
              "push inline");
    pl_status *st = pl_engine_wait_var(e, w);
    CHECK(st != NULL && strstr(pl_status_message(st), "broken") != NULL);
    pl_status_free(st);
    CHECK(atomic_load(&c.ran) == 0);
    pl_status_free(pl_engine_wait_all(e));
    pl_engine_destroy(e);
}

/* ---- priorities ------------------------------------------------------------ */

typedef struct prio_state {
    atomic_int gate;
    atomic_int entered;
    atomic_int seq;
} prio_state;

typedef struct prio_op {
    prio_state *s;
    int priority;
    int index;
    int ran_at;                 /* written by the op, read after wait_all */
} prio_op;

static pl_status *prio_gate_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    prio_state *s = arg;
    atomic_store(&s->entered, 1);
    wait_flag(&s->gate);
    return NULL;
}

static pl_status *prio_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    prio_op *o = arg;
    o->ran_at = atomic_fetch_add(&o->s->seq, 1);
    return NULL;
}

static void prio_on(pl_exec_ctx ctx)
{
    pl_engine *e = make_engine(PL_ENGINE_THREADED, 1);
    prio_state s = {0};
    pl_var *g = pl_engine_new_var(e);
    expect_ok(pl_engine_push(e, prio_gate_fn, &s, ctx, NULL, 0, &g, 1, 0,
                             "gate"), "push");
    wait_flag(&s.entered);
    enum { N = 60 };
    prio_op ops[N];
    pl_var *vars[N];
    for (int i = 0; i < N; i++) {
        /* interleaved: low, high, mid, low, high, mid, ... */
        int prio = (i % 3 == 0) ? -5 : (i % 3 == 1) ? 10 : 0;
        ops[i] = (prio_op){&s, prio, i, -1};
        vars[i] = pl_engine_new_var(e);
        expect_ok(pl_engine_push(e, prio_fn, &ops[i], ctx, NULL, 0, &vars[i],
                                 1, prio, "p"), "push");
    }
    atomic_store(&s.gate, 1);
    expect_ok(pl_engine_wait_all(e), "wait_all");
    /* higher first, then push order */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            bool before = ops[i].priority > ops[j].priority ||
                          (ops[i].priority == ops[j].priority && i < j);
            if (before)
                CHECKF(ops[i].ran_at < ops[j].ran_at,
                       "op %d (priority %d) ran at %d, after op %d (priority "
                       "%d) at %d", i, ops[i].priority, ops[i].ran_at, j,
                       ops[j].priority, ops[j].ran_at);
        }
    pl_engine_destroy(e);
}

static void case_priority(void)
{
    prio_on(CPU);
    prio_on(DEV[0]);
}

/* ---- device pools ---------------------------------------------------------- */

enum { DP_OPS = 300 };

typedef struct dp_op {
    int pool;                   /* -1 CPU, else DEV index */
    pthread_t thread;           /* written by the op, read after wait_all */
    atomic_int *in_stream;      /* ops of one stream never overlap */
} dp_op;

static pl_status *dp_fn(void *arg, const pl_run_context *rc)
{
    dp_op *o = arg;
    o->thread = pthread_self();
    if (o->pool < 0) {
        if (rc->stream != NULL)
            VIOLATION("a CPU op got a stream");
        return NULL;
    }
    const pl_exec_ctx *c = &DEV[o->pool];
    if (rc->device != c->device || rc->stream != c->stream_handle)
        VIOLATION("run context device %d stream %p, pushed %d %p",
                  (int)rc->device, rc->stream, (int)c->device, c->stream_handle);
    if (atomic_fetch_add(o->in_stream, 1) != 0)
        VIOLATION("two ops of one stream at once");
    sleep_us(20);
    atomic_fetch_sub(o->in_stream, 1);
    return NULL;
}

static void dp_async_fn(void *arg, const pl_run_context *rc, pl_completion *done)
{
    pl_engine_complete(done, dp_fn(arg, rc));
}

static void device_on(pl_engine_kind kind)
{
    atomic_store(&g_violations, 0);
    pl_engine *e = make_engine(kind, 2);
    atomic_int in_stream[3] = {0, 0, 0};
    dp_op *ops = calloc(4 * DP_OPS, sizeof *ops);
    CHECK(ops != NULL);
    pl_var *vars[8];
    for (int i = 0; i < 8; i++)
        vars[i] = pl_engine_new_var(e);
    rng r = {777};
    for (int k = 0; k < 4 * DP_OPS; k++) {
        dp_op *o = &ops[k];
        o->pool = (int)(k % 4) - 1;
        o->in_stream = o->pool >= 0 ? &in_stream[o->pool] : NULL;
        pl_exec_ctx ctx = o->pool < 0 ? CPU : DEV[o->pool];
        pl_var *rv = vars[rng_below(&r, 8)], *wv = vars[rng_below(&r, 8)];
        pl_status *st;
        if (k % 7 == 3)
            st = pl_engine_push_async(e, dp_async_fn, o, ctx, &rv, 1, &wv, 1,
                                      0, "dpa");
        else
            st = pl_engine_push(e, dp_fn, o, ctx, &rv, 1, &wv, 1, 0, "dp");
        expect_ok(st, "push");
    }
    expect_ok(pl_engine_wait_all(e), "wait_all");
    expect_no_violations();
    pthread_t self = pthread_self();
    for (int p = 0; p < 3; p++) {
        pthread_t first = ops[p + 1].thread;
        for (int k = p + 1; k < 4 * DP_OPS; k += 4)
            CHECKF(pthread_equal(ops[k].thread, first),
                   "ops of stream %d ran on two threads", p);
        if (kind == PL_ENGINE_NAIVE) {
            CHECK(pthread_equal(first, self));
        } else {
            CHECK(!pthread_equal(first, self));
            for (int q = 0; q < p; q++)
                CHECKF(!pthread_equal(first, ops[q + 1].thread),
                       "streams %d and %d share a thread", q, p);
        }
    }
    pl_engine_destroy(e);
    free(ops);
}

static void case_device_pools(void)
{
    device_on(PL_ENGINE_THREADED);
}

static void case_device_naive(void)
{
    device_on(PL_ENGINE_NAIVE);
}

/* ---- the naive engine: push_async returns after the completion ---------------- */

typedef struct na_state {
    completer *comp;
    atomic_int signalled;
    atomic_int ran;
    pthread_t caller;
    atomic_int wrong_thread;
} na_state;

static void na_async_fn(void *arg, const pl_run_context *rc, pl_completion *done)
{
    (void)rc;
    na_state *s = arg;
    if (!pthread_equal(pthread_self(), s->caller))
        atomic_store(&s->wrong_thread, 1);
    cjob j = {.done = done, .delay_us = 50000, .before = &s->signalled};
    completer_submit(s->comp, &j);
}

static void na_fail_async_fn(void *arg, const pl_run_context *rc,
                             pl_completion *done)
{
    (void)rc;
    na_state *s = arg;
    cjob j = {.done = done, .delay_us = 20000,
              .status = pl_status_create(PL_CODE_DEVICE_ERROR, "late")};
    completer_submit(s->comp, &j);
}

static pl_status *na_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    na_state *s = arg;
    if (!pthread_equal(pthread_self(), s->caller))
        atomic_store(&s->wrong_thread, 1);
    atomic_fetch_add(&s->ran, 1);
    return NULL;
}

static void case_naive_async(void)
{
    completer comp;
    completer_start(&comp);
    na_state s = {.comp = &comp, .caller = pthread_self()};
    pl_engine *e = make_engine(PL_ENGINE_NAIVE, 2);
    pl_var *v = pl_engine_new_var(e), *u = pl_engine_new_var(e);
    for (int i = 0; i < 3; i++) {
        atomic_store(&s.signalled, 0);
        expect_ok(pl_engine_push_async(e, na_async_fn, &s, i == 2 ? DEV[1] : CPU,
                                       NULL, 0, &v, 1, 0, "a"), "push_async");
        CHECK(atomic_load(&s.signalled) == 1);
    }
    expect_ok(pl_engine_push(e, na_fn, &s, CPU, &v, 1, &u, 1, 0, "s"), "push");
    CHECK(atomic_load(&s.ran) == 1);
    expect_ok(pl_engine_push_async(e, na_fail_async_fn, &s, CPU, NULL, 0, &v, 1,
                                   0, "late"), "push_async");
    /* the failure is in place when push_async returns */
    expect_ok(pl_engine_push(e, na_fn, &s, CPU, &v, 1, &u, 1, 0, "s2"), "push");
    CHECK(atomic_load(&s.ran) == 1);
    expect_error(pl_engine_wait_var(e, u), PL_CODE_DEVICE_ERROR,
                 "op 'late' failed: late");
    expect_error(pl_engine_wait_all(e), PL_CODE_DEVICE_ERROR,
                 "op 'late' failed: late");
    expect_ok(pl_engine_wait_all(e), "second wait_all");
    CHECK(atomic_load(&s.wrong_thread) == 0);
    pl_engine_destroy(e);
    completer_stop(&comp);
}

/* ---- operations that push operations; edge cases of push ---------------------- */

typedef struct tree_state {
    pl_engine *e;
    pl_var *v;                  /* every node reads it */
    atomic_int ran;
    atomic_int push_errors;
} tree_state;

typedef struct tree_node {
    tree_state *s;
    int depth;
    pl_var *own;
} tree_node;

static pl_status *tree_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    tree_node *n = arg;
    tree_state *s = n->s;
    atomic_fetch_add(&s->ran, 1);
    if (n->depth > 0) {
        for (int c = 0; c < 2; c++) {
            tree_node *child = malloc(sizeof *child);
            if (child == NULL) {
                atomic_fetch_add(&s->push_errors, 1);
                continue;
            }
            *child = (tree_node){s, n->depth - 1, n->own};
            /* children write the parent's variable, so they follow it; the
             * child frees itself */
            pl_status *st = pl_engine_push(s->e, tree_fn, child, CPU, &s->v, 1,
                                           &n->own, 1, c, "child");
            if (st != NULL) {
                atomic_fetch_add(&s->push_errors, 1);
                pl_status_free(st);
                free(child);
            }
        }
    }
    if (n->depth < 7)
        free(n);
    return NULL;
}

static void push_from_op_on(pl_engine_kind kind)
{
    tree_state s = {0};
    s.e = make_engine(kind, 4);
    s.v = pl_engine_new_var(s.e);
    pl_var *own = pl_engine_new_var(s.e);
    tree_node *root = malloc(sizeof *root);
    CHECK(root != NULL);
    *root = (tree_node){&s, 7, own};
    expect_ok(pl_engine_push(s.e, tree_fn, root, CPU, &s.v, 1, &own, 1, 0,
                             "root"), "push");
    /* the nodes are pushed while their parents run: poll until all ran */
    double until = now_s() + 30;
    while (atomic_load(&s.ran) < 255 && now_s() < until) {
        expect_ok(pl_engine_wait_all(s.e), "wait_all");
        sleep_us(1000);
    }
    expect_ok(pl_engine_wait_all(s.e), "wait_all");
    CHECK(atomic_load(&s.ran) == 255);
    CHECK(atomic_load(&s.push_errors) == 0);
    free(root);
    pl_engine_destroy(s.e);
}

static void case_push_from_op(void)
{
    push_from_op_on(PL_ENGINE_THREADED);
    push_from_op_on(PL_ENGINE_NAIVE);
}

typedef struct excl_state {
    atomic_int active;
    atomic_int ran;
    atomic_int readers_seen_together;
    atomic_int readers_in;
} excl_state;

/* An op that must run alone on its variable. */
static pl_status *excl_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    excl_state *s = arg;
    if (atomic_fetch_add(&s->active, 1) != 0)
        VIOLATION("two ops writing one variable overlap");
    sleep_us(300);
    atomic_fetch_sub(&s->active, 1);
    atomic_fetch_add(&s->ran, 1);
    return NULL;
}

/* Two readers of one variable (duplicates in the read list) may overlap:
 * each waits a while for the other. */
static pl_status *shared_reader_fn(void *arg, const pl_run_context *rc)
{
    (void)rc;
    excl_state *s = arg;
    atomic_fetch_add(&s->readers_in, 1);
    double until = now_s() + 1.0;
    while (atomic_load(&s->readers_in) < 2 && now_s() < until)
        sleep_us(100);
    if (atomic_load(&s->readers_in) >= 2)
        atomic_store(&s->readers_seen_together, 1);
    return NULL;
}

static void push_edge_on(pl_engine_kind kind)
{
    atomic_store(&g_violations, 0);
    pl_engine *e = make_engine(kind, 4);
    pl_var *v = pl_engine_new_var(e), *u = pl_engine_new_var(e);
    excl_state s = {0};

    /* a push that cannot be queued: NULL variable, NULL function */
    pl_var *with_null[2] = {v, NULL};
    pl_status *st = pl_engine_push(e, excl_fn, &s, CPU, with_null, 2, NULL, 0,
                                   0, "null_read");
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT);
    pl_status_free(st);
    st = pl_engine_push(e, excl_fn, &s, CPU, &v, 1, with_null, 2, 0,
                        "null_write");
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT);
    pl_status_free(st);
    st = pl_engine_push(e, NULL, &s, CPU, &v, 1, NULL, 0, 0, "null_fn");
    CHECK(st != NULL);
    pl_status_free(st);
    expect_ok(pl_engine_wait_all(e), "wait_all after refused pushes");
    CHECK(atomic_load(&s.ran) == 0);
    expect_ok(pl_engine_wait_var(e, v), "v after refused pushes");

    /* an op with no variables at all */
    atomic_int bare = 0;
    expect_ok(pl_engine_push(e, mark_fn, &bare, CPU, NULL, 0, NULL, 0, 0,
                             "bare"), "push");
    expect_ok(pl_engine_wait_all(e), "wait_all");
    CHECK(atomic_load(&bare) == 1);

    /* duplicates, and a variable in both lists: all count as written, so
     * these ops never overlap */
    enum { N = 40 };
    for (int i = 0; i < N; i++) {
        pl_var *r3[3] = {v, u, v}, *w2[2] = {v, v};
        switch (i % 4) {
        case 0: st = pl_engine_push(e, excl_fn, &s, CPU, r3, 3, &v, 1, 0, "rw"); break;
        case 1: st = pl_engine_push(e, excl_fn, &s, CPU, NULL, 0, w2, 2, 0, "ww"); break;
        case 2: st = pl_engine_push(e, excl_fn, &s, CPU, &u, 1, w2, 2, 0, "uww"); break;
        default: st = pl_engine_push(e, excl_fn, &s, CPU, r3, 3, w2, 2, 0, "all"); break;
        }
        expect_ok(st, "push");
    }
    expect_ok(pl_engine_wait_all(e), "wait_all");
    CHECK(atomic_load(&s.ran) == N);
    expect_no_violations();

    /* duplicate reads are still reads: two such ops may run together */
    if (kind == PL_ENGINE_THREADED) {
        pl_var *rr[2] = {u, u};
        pl_var *o1 = pl_engine_new_var(e), *o2 = pl_engine_new_var(e);
        expect_ok(pl_engine_push(e, shared_reader_fn, &s, CPU, rr, 2, &o1, 1, 0,
                                 "r1"), "push");
        expect_ok(pl_engine_push(e, shared_reader_fn, &s, CPU, rr, 2, &o2, 1, 0,
                                 "r2"), "push");
        expect_ok(pl_engine_wait_all(e), "wait_all");
        CHECKF(atomic_load(&s.readers_seen_together) == 1,
               "two readers of one variable never ran together on 4 threads");
    }
    pl_engine_destroy(e);
}

static void case_push_edge(void)
{
    push_edge_on(PL_ENGINE_THREADED);
    push_edge_on(PL_ENGINE_NAIVE);
}

/* ---- main ---------------------------------------------------------------- */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "watchdog: the case did not finish in time "
                              "(a hang?)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

typedef struct test_case {
    const char *name;
    void (*run)(void);
} test_case;

#define TH PL_ENGINE_THREADED
#define NV PL_ENGINE_NAIVE
static void c_random_t1(void) { case_random(TH, 1); }
static void c_random_t2(void) { case_random(TH, 2); }
static void c_random_t4(void) { case_random(TH, 4); }
static void c_random_t8(void) { case_random(TH, 8); }
static void c_random_naive(void) { case_random(NV, 1); }
static void c_random_mixed(void) { case_random_mixed(TH, 4); }
static void c_random_mixed_naive(void) { case_random_mixed(NV, 2); }
static void c_order_t2(void) { case_order(TH, 2, false); }
static void c_order_t8(void) { case_order(TH, 8, false); }
static void c_order_naive(void) { case_order(NV, 1, false); }
static void c_order_mixed(void) { case_order(TH, 4, true); }
static void c_errors_t1(void) { case_errors(TH, 1, false); }
static void c_errors_t4(void) { case_errors(TH, 4, false); }
static void c_errors_naive(void) { case_errors(NV, 1, false); }
static void c_errors_mixed(void) { case_errors(TH, 4, true); }
static void c_errors_mixed_naive(void) { case_errors(NV, 2, true); }
static void c_wait_all_error(void) { case_wait_all_error(TH); }
static void c_wait_all_error_naive(void) { case_wait_all_error(NV); }
static void c_push_threads(void) { case_push_threads(TH); }
static void c_push_threads_naive(void) { case_push_threads(NV); }

/* The same cases with idle threads that spin before they sleep. */
enum { SPIN = 200 };
static void c_random_t1_spin(void) { g_spin_us = SPIN; case_random(TH, 1); }
static void c_random_t2_spin(void) { g_spin_us = SPIN; case_random(TH, 2); }
static void c_random_t4_spin(void) { g_spin_us = SPIN; case_random(TH, 4); }
static void c_random_naive_spin(void) { g_spin_us = SPIN; case_random(NV, 2); }
static void c_random_mixed_spin(void)
{
    g_spin_us = SPIN;
    case_random_mixed(TH, 4);
}
static void c_order_t2_spin(void) { g_spin_us = SPIN; case_order(TH, 2, false); }
static void c_errors_t4_spin(void) { g_spin_us = SPIN; case_errors(TH, 4, false); }
static void c_push_threads_spin(void) { g_spin_us = SPIN; case_push_threads(TH); }
static void c_parallel_for_nested_spin(void)
{
    g_spin_us = SPIN;
    case_parallel_for_nested();
}
static void c_parallel_for_burst_spin(void)
{
    g_spin_us = SPIN;
    case_parallel_for_burst();
}

static const test_case cases[] = {
    {"random_t1", c_random_t1},
    {"random_t2", c_random_t2},
    {"random_t4", c_random_t4},
    {"random_t8", c_random_t8},
    {"random_naive", c_random_naive},
    {"random_mixed", c_random_mixed},
    {"random_mixed_naive", c_random_mixed_naive},
    {"order_t2", c_order_t2},
    {"order_t8", c_order_t8},
    {"order_naive", c_order_naive},
    {"order_mixed", c_order_mixed},
    {"errors_t1", c_errors_t1},
    {"errors_t4", c_errors_t4},
    {"errors_naive", c_errors_naive},
    {"errors_mixed", c_errors_mixed},
    {"errors_mixed_naive", c_errors_mixed_naive},
    {"async_late", case_async_late},
    {"complete_twice", case_complete_twice},
    {"wait_all_error", c_wait_all_error},
    {"wait_all_error_naive", c_wait_all_error_naive},
    {"delete_pending", case_delete_pending},
    {"wait_var_threads", case_wait_var_threads},
    {"push_threads", c_push_threads},
    {"push_threads_naive", c_push_threads_naive},
    {"destroy_pending", case_destroy_pending},
    {"destroy_after_async", case_destroy_after_async},
    {"parallel_for_nested", case_parallel_for_nested},
    {"priority", case_priority},
    {"device_pools", case_device_pools},
    {"device_naive", case_device_naive},
    {"naive_async", case_naive_async},
    {"push_from_op", case_push_from_op},
    {"push_edge", case_push_edge},
    {"parallel_for_burst", case_parallel_for_burst},
    {"destroy_spinning", case_destroy_spinning},
    {"hold_spin", case_hold_spin},
    {"inline_ops", case_inline_ops},
    {"wait_helps", case_wait_helps},
    {"random_t1_spin", c_random_t1_spin},
    {"random_t2_spin", c_random_t2_spin},
    {"random_t4_spin", c_random_t4_spin},
    {"random_naive_spin", c_random_naive_spin},
    {"random_mixed_spin", c_random_mixed_spin},
    {"order_t2_spin", c_order_t2_spin},
    {"errors_t4_spin", c_errors_t4_spin},
    {"push_threads_spin", c_push_threads_spin},
    {"parallel_for_nested_spin", c_parallel_for_nested_spin},
    {"parallel_for_burst_spin", c_parallel_for_burst_spin},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE\ncases:", argv[0]);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            fprintf(stderr, " %s", cases[i].name);
        fputc('\n', stderr);
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(100);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].run();
            printf("ok %s\n", argv[1]);
            return 0;
        }
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
