/* run.c — the run: an execution program's steps pushed to the engine.
 *
 * A run context (one per run in flight) holds each device's arena, one
 * engine variable per value, the tensors each value is in this run, and
 * per step the arguments its module is called with. Contexts are made on
 * first need and kept for reuse by later runs. A run binds the caller's
 * buffers to the input and output values, then walks the steps in program
 * order and pushes each: it reads the variables of its inputs and writes
 * those of its outputs, its workspace, its compiled subgraph and every
 * earlier value whose bytes its outputs reuse (values that share arena
 * memory over time must not overlap in time either). A final operation
 * reads every variable and writes the context's own, which the caller
 * waits on. */
#include "run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hostbuf.h"
#include "opset.h"
#include "status.h"
#include "strtab.h"

/* One run in flight: arenas, variables, tensors and per-step arguments. */
typedef struct pl_runctx pl_runctx;

typedef struct pl_step_call {
    pl_program *program;
    pl_runctx *rc;               /* the context it belongs to */
    size_t step;
    pl_run_context run;
    pl_run_args args;
    pl_tensor *tensors;          /* n_in + n_out, then a pl_call_extra */
} pl_step_call;

typedef struct pl_call_extra {
    void *workspace;             /* device kernels: their own workspace */
    void *staging;               /* device-to-device copies: a host bounce */
} pl_call_extra;

struct pl_runctx {
    /* Per device; the host's (0) is the runtime's, taken for each run
     * (pl_runner_take) and given back after it: arena[0] is where the
     * values were last bound, host_arena what this run holds. */
    void **arena;
    pl_work_buf host_arena;
    pl_var **vars;               /* per value */
    pl_var *done;
    pl_tensor *values;           /* per value: where it lives in this run */
    void **default_out;          /* per value: buffer for unrequested outputs */
    pl_step_call *calls;         /* per step */
    const pl_run_strings *strings; /* the run's (strtab.h), or NULL */
    int32_t full_dev;            /* while made: the device an allocation failed on */
    pl_runctx *next;
};

struct pl_runner {
    pl_program *p;
    /* Every step runs on the CPU pool: a run walks the steps in its
     * caller, without the engine (pl_run_is_sequential). */
    bool sequential;
    pthread_mutex_t mu;          /* the lists below */
    pl_runctx *free_rc;
    pl_runctx **all;
    size_t n_all;
};

static pl_status *pl_run_oom(void)
{
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory running a session");
}

/* In a sequential run, when the step before ended (its second clock read
 * is this one's first: pl_run_sequential); 0 elsewhere. A step's time then
 * includes the loop's few instructions before it; two reads of the clock a
 * step were 9% of a PolynomialFeatures pipeline of 136 steps of 0.2 us. */
static _Thread_local uint64_t pl_step_chain_ns;

static void *pl_host_aligned(size_t bytes)
{
    void *ptr = NULL;
    if (posix_memalign(&ptr, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return ptr;
}

static pl_call_extra *pl_call_extra_of(const pl_step_call *c, const pl_prog_step *st)
{
    return (pl_call_extra *)(c->tensors + st->n_in + st->n_out);
}

/* ---- run contexts -------------------------------------------------------- */

/* Frees memory a run context allocated on device DEV (0: the host). */
static void pl_run_free_on(const pl_program *p, int32_t dev, void *mem)
{
    if (mem == NULL)
        return;
    if (dev == 0)
        free(mem);
    else
        p->devs[dev].module->api.mem_free(p->devs[dev].module->ctx, p->devs[dev].device, mem);
}

static void pl_runctx_destroy(const pl_program *p, pl_runctx *rc)
{
    if (rc == NULL)
        return;
    pl_engine *e = p->rt->engine;
    for (size_t v = 0; rc->vars && v < p->n_values; v++)
        if (rc->vars[v])
            pl_engine_delete_var(e, rc->vars[v]);
    if (rc->done)
        pl_engine_delete_var(e, rc->done);
    for (size_t d = 1; rc->arena && d < p->n_devs; d++)
        pl_run_free_on(p, (int32_t)d, rc->arena[d]);
    for (size_t v = 0; rc->default_out && v < p->n_values; v++)
        pl_run_free_on(p, p->values[v].dev, rc->default_out[v]);
    for (size_t i = 0; rc->calls && i < p->n_steps; i++) {
        pl_step_call *c = &rc->calls[i];
        /* A creation that failed part way left the later calls unmade. */
        if (c->tensors == NULL)
            continue;
        const pl_prog_step *st = &p->steps[i];
        pl_call_extra *x = pl_call_extra_of(c, st);
        if (x->workspace)
            st->module->api.mem_free(st->module->ctx, p->devs[st->dev].device, x->workspace);
        free(x->staging);
        pl_free(c->tensors);
    }
    pl_free(rc->calls);
    pl_free(rc->default_out);
    pl_free(rc->values);
    pl_free(rc->vars);
    pl_free(rc->arena);
    pl_free(rc);
}

/* pl_program_dev_alloc for RC, noting the device when it fails. */
static pl_status *pl_runctx_dev_alloc(const pl_program *p, pl_runctx *rc, int32_t dev,
                                      size_t bytes, const char *purpose, void **out_ptr)
{
    pl_status *st = pl_program_dev_alloc(p, dev, bytes, purpose, out_ptr);
    if (st != NULL)
        rc->full_dev = dev;
    return st;
}

static pl_status *pl_runctx_arenas(const pl_program *p, pl_runctx *rc)
{
    for (size_t d = 1; d < p->n_devs; d++)
        if (p->arena_bytes[d] > 0)
            PL_RETURN_IF_ERROR(pl_runctx_dev_alloc(p, rc, (int32_t)d, p->arena_bytes[d],
                                                   "the arena of a run", &rc->arena[d]));
    return NULL;
}

/* The bytes of P's host arena. It exists even when every value in it is
 * empty, so that no module is handed a NULL data pointer to offset. */
static size_t pl_run_host_bytes(const pl_program *p)
{
    return p->arena_bytes[0] > 64 ? p->arena_bytes[0] : 64;
}

/* Takes a host arena from the runtime for RC's run and points RC's host
 * values into it (unless it is the one they point into already). */
static pl_status *pl_runctx_take_arena(const pl_program *p, pl_runctx *rc)
{
    if (p->n_devs == 0)
        return NULL;
    size_t bytes = pl_run_host_bytes(p);
    rc->host_arena = pl_work_pool_take(&p->rt->arenas, bytes);
    if (rc->host_arena.p == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                "out of memory for a host arena of %zu bytes", bytes);
    if (rc->host_arena.p == rc->arena[0])
        return NULL;
    rc->arena[0] = rc->host_arena.p;
    for (size_t v = 0; v < p->n_values; v++) {
        const pl_prog_value *val = &p->values[v];
        if (val->dev == 0 && (val->kind == PL_VAL_ARENA || val->kind == PL_VAL_WORKSPACE))
            rc->values[v].data = (char *)rc->arena[0] + val->offset;
    }
    return NULL;
}

static void pl_runctx_give_arena(const pl_program *p, pl_runctx *rc)
{
    pl_work_pool_give(&p->rt->arenas, rc->host_arena);
    rc->host_arena = (pl_work_buf){NULL, 0};
}

/* Value V's variable and where it lives in this run. */
static pl_status *pl_runctx_value(const pl_program *p, pl_runctx *rc, size_t v)
{
    const pl_prog_value *val = &p->values[v];
    rc->vars[v] = pl_engine_new_var(p->rt->engine);
    if (rc->vars[v] == NULL)
        return pl_run_oom();
    pl_tensor *t = &rc->values[v];
    t->struct_size = sizeof *t;
    t->dtype = val->dtype;
    t->ndim = val->ndim;
    t->shape = (int64_t *)val->dims;
    t->device.device_type = p->devs[val->dev].device_type;
    t->device.device_id = p->devs[val->dev].device;
    switch (val->kind) {
    case PL_VAL_ARENA:
    case PL_VAL_WORKSPACE:
        if (val->dev == 0) {
            t->data = NULL; /* bound when a run takes an arena */
        } else {
            t->data = rc->arena[val->dev];
            t->byte_offset = val->offset;
        }
        break;
    case PL_VAL_CONST:
        t->data = pl_graph_get_tensor(p->g, val->tensor)->data;
        break;
    case PL_VAL_PERSIST:
        t->data = val->persist;
        break;
    case PL_VAL_OUTPUT:
        /* where an output nobody asked for goes (on the session's I/O
         * device when that is not the host) */
        if (val->dev != 0)
            return pl_runctx_dev_alloc(p, rc, val->dev, val->bytes ? val->bytes : 1,
                                       "an output the caller did not ask for",
                                       &rc->default_out[v]);
        rc->default_out[v] = pl_host_aligned(val->bytes);
        if (rc->default_out[v] == NULL)
            return pl_status_create(PL_CODE_OUT_OF_MEMORY,
                                    "out of memory running a session: %zu bytes for output "
                                    "'%s'",
                                    val->bytes, pl_graph_get_tensor(p->g, val->tensor)->name);
        break;
    case PL_VAL_INPUT:
        break;
    }
    return NULL;
}

/* Step I's call: its tensors, and the memory it needs of its own. */
static pl_status *pl_runctx_call(pl_program *p, pl_runctx *rc, size_t i)
{
    const pl_prog_step *step = &p->steps[i];
    pl_step_call *c = &rc->calls[i];
    c->program = p;
    c->rc = rc;
    c->step = i;
    size_t n = step->n_in + step->n_out;
    size_t extra_slots = (sizeof(pl_call_extra) + sizeof(pl_tensor) - 1) / sizeof(pl_tensor);
    c->tensors = pl_calloc(n + extra_slots, sizeof *c->tensors);
    if (c->tensors == NULL)
        return pl_run_oom();
    pl_call_extra *x = pl_call_extra_of(c, step);
    if (step->device_workspace > 0) {
        char purpose[600];
        snprintf(purpose, sizeof purpose, "the workspace of step %s", step->name);
        PL_RETURN_IF_ERROR(pl_runctx_dev_alloc(p, rc, step->dev, step->device_workspace,
                                               purpose, &x->workspace));
    }
    if (step->kind == PL_STEP_COPY && p->values[step->in[0]].dev != 0 &&
        p->values[step->out[0]].dev != 0) {
        x->staging = pl_host_aligned(p->values[step->in[0]].bytes);
        if (x->staging == NULL)
            return pl_run_oom();
    }
    return NULL;
}

/* A new run context for P; when an allocation on a device failed,
 * *OUT_FULL_DEV is that device (else -1). */
static pl_status *pl_runctx_create(pl_program *p, pl_runctx **out, int32_t *out_full_dev)
{
    *out = NULL;
    *out_full_dev = -1;
    pl_runctx *rc = pl_calloc(1, sizeof *rc);
    if (rc == NULL)
        return pl_run_oom();
    rc->full_dev = -1;
    size_t nv = p->n_values ? p->n_values : 1;
    rc->arena = pl_calloc(p->n_devs, sizeof *rc->arena);
    rc->vars = pl_calloc(nv, sizeof *rc->vars);
    rc->values = pl_calloc(nv, sizeof *rc->values);
    rc->default_out = pl_calloc(nv, sizeof *rc->default_out);
    rc->calls = pl_calloc(p->n_steps ? p->n_steps : 1, sizeof *rc->calls);
    pl_status *st = NULL;
    if (!rc->arena || !rc->vars || !rc->values || !rc->default_out || !rc->calls)
        st = pl_run_oom();
    if (st == NULL)
        st = pl_runctx_arenas(p, rc);
    for (size_t v = 0; st == NULL && v < p->n_values; v++)
        st = pl_runctx_value(p, rc, v);
    rc->done = st == NULL ? pl_engine_new_var(p->rt->engine) : NULL;
    if (st == NULL && rc->done == NULL)
        st = pl_run_oom();
    for (size_t i = 0; st == NULL && i < p->n_steps; i++)
        st = pl_runctx_call(p, rc, i);
    if (st != NULL) {
        *out_full_dev = rc->full_dev;
        pl_runctx_destroy(p, rc);
        return st;
    }
    *out = rc;
    return NULL;
}

static void pl_runner_give_back(pl_runner *r, pl_runctx *rc);

/* Adds RC to R's contexts. */
static pl_status *pl_runner_keep(pl_runner *r, pl_runctx *rc)
{
    pthread_mutex_lock(&r->mu);
    pl_runctx **grown = pl_realloc(r->all, (r->n_all + 1) * sizeof *grown);
    if (grown != NULL) {
        r->all = grown;
        r->all[r->n_all++] = rc;
    }
    pthread_mutex_unlock(&r->mu);
    if (grown == NULL) {
        pl_runctx_destroy(r->p, rc);
        return pl_run_oom();
    }
    return NULL;
}

/* A free context of R, or a new one, holding a host arena. */
static pl_status *pl_runner_take(pl_runner *r, pl_runctx **out)
{
    *out = NULL;
    pthread_mutex_lock(&r->mu);
    pl_runctx *rc = r->free_rc;
    if (rc != NULL)
        r->free_rc = rc->next;
    pthread_mutex_unlock(&r->mu);
    if (rc == NULL) {
        int32_t full_dev;
        PL_RETURN_IF_ERROR(pl_runctx_create(r->p, &rc, &full_dev));
        PL_RETURN_IF_ERROR(pl_runner_keep(r, rc));
    }
    pl_status *st = pl_runctx_take_arena(r->p, rc);
    if (st != NULL) {
        pl_runner_give_back(r, rc);
        return st;
    }
    rc->strings = pl_strings_current(); /* (the caller's thread) */
    *out = rc;
    return NULL;
}

static void pl_runner_give_back(pl_runner *r, pl_runctx *rc)
{
    pl_runctx_give_arena(r->p, rc);
    pthread_mutex_lock(&r->mu);
    rc->next = r->free_rc;
    r->free_rc = rc;
    pthread_mutex_unlock(&r->mu);
}

/* Whether program P can run in its caller, step after step in program
 * order (an order in which every value is made before it is read): every
 * step is on the host and synchronous (no device, no asynchronous
 * module). The CPU pool's steps then run in the caller itself; a step of a
 * pinned-thread module (oneDNN's OpenMP team) runs here too when the
 * module allows it (PL_CAP_RUNS_IN_CALLER) and this thread is its home
 * (pl_module_home_here), else it is pushed to its worker and waited for.
 * Pushing a CPU step through the engine cost about a
 * microsecond of bookkeeping, locks and a cross-thread hand-off each (a
 * chain of 64 [1,64] Tanh: 1.27 us a step, 0.2 in the caller), for a
 * concurrency the steps of one run rarely have on a few cores; ONNX
 * Runtime runs its graphs sequentially by default too. Each kernel still
 * spreads its own work over the pool (parallel_for). */
bool pl_run_is_sequential(const pl_program *p)
{
    for (size_t i = 0; i < p->n_steps; i++) {
        const pl_prog_step *st = &p->steps[i];
        if (st->kind == PL_STEP_CONTROL || st->dev != 0)
            return false;
        if (st->kind == PL_STEP_SUBGRAPH && (st->module->api.capabilities & PL_CAP_ASYNC) &&
            st->module->api.run_async != NULL)
            return false;
    }
    return true;
}

pl_status *pl_runner_create(pl_program *p, pl_runner **out_runner)
{
    *out_runner = NULL;
    pl_runner *r = pl_calloc(1, sizeof *r);
    if (r == NULL)
        return pl_run_oom();
    r->p = p;
    r->sequential = pl_run_is_sequential(p);
    pthread_mutex_init(&r->mu, NULL);
    *out_runner = r;
    return NULL;
}

/* Whether a run context of P allocates device memory. */
static bool pl_run_uses_devices(const pl_program *p)
{
    for (size_t d = 1; d < p->n_devs; d++)
        if (p->arena_bytes[d] > 0)
            return true;
    for (size_t i = 0; i < p->n_steps; i++)
        if (p->steps[i].device_workspace > 0)
            return true;
    for (size_t v = 0; v < p->n_values; v++)
        if (p->values[v].kind == PL_VAL_OUTPUT && p->values[v].dev != 0)
            return true;
    return false;
}

pl_status *pl_runner_prepare(pl_runner *r, int32_t *out_full_dev)
{
    *out_full_dev = -1;
    if (!pl_run_uses_devices(r->p))
        return NULL;
    pl_runctx *rc = NULL;
    PL_RETURN_IF_ERROR(pl_runctx_create(r->p, &rc, out_full_dev));
    PL_RETURN_IF_ERROR(pl_runner_keep(r, rc));
    pthread_mutex_lock(&r->mu);
    rc->next = r->free_rc;
    r->free_rc = rc;
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void pl_runner_destroy(pl_runner *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n_all; i++)
        pl_runctx_destroy(r->p, r->all[i]);
    pl_free(r->all);
    pthread_mutex_destroy(&r->mu);
    pl_free(r);
}

/* ---- the steps' functions ------------------------------------------------ */

static void pl_tensor_absent(pl_tensor *t)
{
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->ndim = -1;
}

static void pl_call_prepare(pl_step_call *c, const pl_run_context *run)
{
    const pl_program *p = c->program;
    const pl_runctx *rc = c->rc;
    const pl_prog_step *st = &p->steps[c->step];
    for (size_t i = 0; i < st->n_in; i++) {
        if (st->in[i] < 0)
            pl_tensor_absent(&c->tensors[i]);
        else
            c->tensors[i] = rc->values[st->in[i]];
    }
    for (size_t o = 0; o < st->n_out; o++) {
        if (st->out[o] < 0)
            pl_tensor_absent(&c->tensors[st->n_in + o]);
        else
            c->tensors[st->n_in + o] = rc->values[st->out[o]];
    }
    c->run = (pl_run_context){.header = PL_ABI_HEADER_INIT(pl_run_context),
                              .device = p->devs[st->dev].device,
                              .worker = run ? run->worker : 0,
                              .stream = run ? run->stream : NULL,
                              .strings = rc->strings};
    pl_call_extra *x = pl_call_extra_of(c, st);
    c->args = (pl_run_args){.header = PL_ABI_HEADER_INIT(pl_run_args),
                            .run = &c->run,
                            .n_inputs = st->n_in,
                            .inputs = c->tensors,
                            .n_outputs = st->n_out,
                            .outputs = c->tensors + st->n_in,
                            .requests = st->kind == PL_STEP_KERNEL ? st->requests : NULL};
    if (st->workspace >= 0) {
        c->args.workspace = rc->values[st->workspace].data;
        c->args.workspace_bytes = p->values[st->workspace].bytes;
    } else if (st->device_workspace > 0) {
        c->args.workspace = x->workspace;
        c->args.workspace_bytes = st->device_workspace;
    }
}

static pl_status *pl_copy_run(pl_step_call *c)
{
    const pl_program *p = c->program;
    const pl_prog_step *st = &p->steps[c->step];
    const pl_prog_value *sv = &p->values[st->in[0]];
    const pl_prog_value *dv = &p->values[st->out[0]];
    const pl_tensor *src = &c->tensors[0];
    const pl_tensor *dst = &c->tensors[1];
    size_t bytes = sv->bytes;
    if (bytes == 0)
        return NULL;
    const pl_prog_device *sd = &p->devs[sv->dev], *dd = &p->devs[dv->dev];
    if (sv->dev == 0 && dv->dev == 0) {
        memcpy((char *)dst->data + dst->byte_offset, (const char *)src->data + src->byte_offset,
               bytes);
        return NULL;
    }
    if (sv->dev == 0)
        return dd->module->api.copy_to_device(dd->module->ctx, dd->device, dst->data,
                                              (size_t)dst->byte_offset,
                                              (const char *)src->data + src->byte_offset,
                                              bytes);
    if (dv->dev == 0)
        return sd->module->api.copy_to_host(sd->module->ctx, sd->device,
                                            (char *)dst->data + dst->byte_offset, src->data,
                                            (size_t)src->byte_offset, bytes);
    if (sd->module == dd->module && sd->module->api.copy_device_to_device != NULL)
        return sd->module->api.copy_device_to_device(sd->module->ctx, sd->device, src->data,
                                                     (size_t)src->byte_offset, dd->device,
                                                     dst->data, (size_t)dst->byte_offset,
                                                     bytes);
    /* Two devices that cannot talk: through the host. */
    pl_call_extra *x = pl_call_extra_of(c, st);
    PL_RETURN_IF_ERROR(sd->module->api.copy_to_host(sd->module->ctx, sd->device, x->staging,
                                                    src->data, (size_t)src->byte_offset,
                                                    bytes));
    return dd->module->api.copy_to_device(dd->module->ctx, dd->device, dst->data,
                                          (size_t)dst->byte_offset, x->staging, bytes);
}

static pl_status *pl_step_fn(void *arg, const pl_run_context *run)
{
    pl_step_call *c = arg;
    pl_prog_step *st = &c->program->steps[c->step];
    uint64_t chain = pl_step_chain_ns, t0 = chain != 0 ? chain : pl_now_ns();
    pl_step_chain_ns = 0; /* (a nested run reads the clock itself) */
    pl_call_prepare(c, run);
    pl_status *err = NULL;
    switch (st->kind) {
    case PL_STEP_KERNEL:
        pl_module_work_begin(st->module);
        err = st->module->api.kernel_run(st->module->ctx, st->kernel, &c->args);
        pl_module_work_end(st->module);
        break;
    case PL_STEP_SUBGRAPH:
        /* Uncontended when the engine runs it (compiled_var); in sequential
         * runs of one session from two threads, the lock is what keeps
         * "one compiled subgraph never runs twice at once". */
        pl_module_work_begin(st->module);
        if (st->run_mu != NULL)
            pthread_mutex_lock(st->run_mu);
        err = st->module->api.run(st->module->ctx, st->compiled, &c->args);
        if (st->run_mu != NULL)
            pthread_mutex_unlock(st->run_mu);
        pl_module_work_end(st->module);
        break;
    case PL_STEP_COPY:
        err = pl_copy_run(c);
        break;
    case PL_STEP_CONTROL:
        err = pl_status_create(PL_CODE_UNSUPPORTED, "control-flow steps are not run yet");
        break;
    }
    uint64_t t1 = pl_now_ns();
    atomic_fetch_add(&st->total_ns, t1 - t0);
    atomic_fetch_add(&st->runs, 1);
    /* the fastest run, which noise (a preempted thread) cannot inflate */
    uint64_t took = t1 - t0, best = atomic_load_explicit(&st->min_ns, memory_order_relaxed);
    while (err == NULL && took < best &&
           !atomic_compare_exchange_weak_explicit(&st->min_ns, &best, took,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    pl_step_chain_ns = chain != 0 ? t1 : 0;
    return pl_status_wrap(err, "%s: ", st->name);
}

static void pl_step_async_fn(void *arg, const pl_run_context *run, pl_completion *done)
{
    pl_step_call *c = arg;
    pl_prog_step *st = &c->program->steps[c->step];
    pl_call_prepare(c, run);
    atomic_fetch_add(&st->runs, 1);
    pl_status *err = st->module->api.run_async(st->module->ctx, st->compiled, &c->args, done);
    if (err != NULL)
        pl_engine_complete(done, pl_status_wrap(err, "%s: ", st->name));
}

static pl_status *pl_nop_fn(void *arg, const pl_run_context *run)
{
    (void)arg;
    (void)run;
    return NULL;
}

/* ---- binding the caller's buffers ------------------------------------------ */

static bool pl_same_shape(const pl_tensor *t, int32_t ndim, const int64_t *dims)
{
    if (t->ndim != ndim || (ndim > 0 && t->shape == NULL))
        return false;
    for (int32_t d = 0; d < ndim; d++)
        if (t->shape[d] != dims[d])
            return false;
    return true;
}

static pl_status *pl_check_io(const pl_program *p, const pl_prog_value *val,
                              const char *what, const pl_tensor *t)
{
    const pl_graph_tensor *gt = pl_graph_get_tensor(p->g, val->tensor);
    char want[256], got[256];
    if (!PL_DTYPE_EQ(t->dtype, val->dtype) || !pl_same_shape(t, val->ndim, val->dims)) {
        pl_dims_format(val->dims, val->ndim, want, sizeof want);
        if (t->ndim >= 0 && t->ndim <= PL_GRAPH_MAX_RANK && (t->ndim == 0 || t->shape))
            pl_dims_format(t->shape, t->ndim, got, sizeof got);
        else
            snprintf(got, sizeof got, "rank %d", (int)t->ndim);
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '%s' must be %s%s, got %s%s", what, gt->name,
                                pl_dtype_name(val->dtype), want, pl_dtype_name(t->dtype), got);
    }
    if (t->strides != NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "%s '%s' must be dense (strides NULL)", what, gt->name);
    return NULL;
}

/* The caller's tensor of every input value (BOUND, per value): every graph
 * input given, by name, with its type. */
static pl_status *pl_run_bind_inputs(const pl_program *p, const pl_io *inputs,
                                     size_t n_inputs, const pl_tensor **bound)
{
    const pl_graph *g = p->g;
    for (size_t i = 0; i < n_inputs; i++) {
        pl_tid t = inputs[i].name ? pl_graph_find_tensor(g, inputs[i].name) : PL_TID_NONE;
        if (t == PL_TID_NONE || !pl_graph_get_tensor(g, t)->is_input)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no input named '%s'",
                                    inputs[i].name ? inputs[i].name : "(null)");
    }
    for (size_t v = 0; v < p->n_values; v++) {
        if (p->values[v].kind != PL_VAL_INPUT)
            continue;
        const char *name = pl_graph_get_tensor(g, p->values[v].tensor)->name;
        for (size_t i = 0; i < n_inputs; i++)
            if (strcmp(inputs[i].name, name) == 0)
                bound[v] = &inputs[i].tensor;
        if (bound[v] == NULL)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' is not given", name);
        if (bound[v]->data == NULL && p->values[v].bytes > 0)
            return pl_status_create(PL_CODE_INVALID_ARGUMENT, "input '%s' has no data", name);
        PL_RETURN_IF_ERROR(pl_check_io(p, &p->values[v], "input", bound[v]));
    }
    return NULL;
}

/* The output value each requested output names (OUT_VALUE), checked. */
static pl_status *pl_run_find_outputs(const pl_program *p, const pl_io *outputs,
                                      size_t n_outputs, int32_t *out_value)
{
    for (size_t i = 0; i < n_outputs; i++) {
        pl_tid t = outputs[i].name ? pl_graph_find_tensor(p->g, outputs[i].name)
                                   : PL_TID_NONE;
        int32_t v = t != PL_TID_NONE ? pl_program_output_value(p, t) : -1;
        if (v < 0)
            return pl_status_create(PL_CODE_NOT_FOUND, "the model has no output named '%s'",
                                    outputs[i].name ? outputs[i].name : "(null)");
        out_value[i] = v;
        if (outputs[i].tensor.data != NULL)
            PL_RETURN_IF_ERROR(pl_check_io(p, &p->values[v], "output", &outputs[i].tensor));
    }
    return NULL;
}

/* Points the context's tensor T of a value on device DEV at the caller's
 * CALLER: host memory by address, a device's by its handle and offset
 * (a handle is not an address to add to). */
static void pl_run_point(pl_tensor *t, int32_t dev, const pl_tensor *caller)
{
    if (dev == 0) {
        t->data = (char *)caller->data + caller->byte_offset;
        t->byte_offset = 0;
    } else {
        t->data = caller->data;
        t->byte_offset = caller->byte_offset;
    }
}

/* Points the context's input and output values at the caller's buffers
 * (outputs nobody asked for at the context's own); allocates the outputs
 * the caller left without data, marking them in ALLOCATED. */
static pl_status *pl_run_bind(const pl_program *p, pl_runctx *rc, const pl_tensor **bound,
                              pl_io *outputs, size_t n_outputs, const int32_t *out_value,
                              bool *allocated)
{
    for (size_t v = 0; v < p->n_values; v++) {
        if (p->values[v].kind == PL_VAL_INPUT) {
            pl_run_point(&rc->values[v], p->values[v].dev, bound[v]);
        } else if (p->values[v].kind == PL_VAL_OUTPUT) {
            rc->values[v].data = rc->default_out[v];
            rc->values[v].byte_offset = 0;
        }
    }
    for (size_t i = 0; i < n_outputs; i++) {
        pl_tensor *t = &outputs[i].tensor;
        if (t->data == NULL) {
            if (p->values[out_value[i]].dev != 0) /* pl_session_run_arrays makes them */
                return pl_status_create(PL_CODE_INTERNAL, "output %zu has no device memory", i);
            t->data = pl_hostbuf_get(p->values[out_value[i]].bytes);
            if (t->data == NULL)
                return pl_run_oom();
            allocated[i] = true;
            t->byte_offset = 0;
        }
        pl_run_point(&rc->values[out_value[i]], p->values[out_value[i]].dev, t);
    }
    return NULL;
}

/* ---- pushing ------------------------------------------------------------------ */

/* Where step ST runs: the CPU pool, or the worker of its device or of its
 * pinned-thread module. */
static pl_exec_ctx pl_run_exec_ctx(const pl_program *p, const pl_prog_step *st)
{
    pl_exec_ctx ctx = {.kind = PL_EXEC_CPU};
    if (st->dev != 0) {
        ctx.kind = PL_EXEC_DEVICE;
        ctx.device = p->devs[st->dev].engine_key;
    } else if (st->module != NULL && (st->module->api.capabilities & PL_CAP_PINNED_THREAD)) {
        /* One thread for the module's host work (its OpenMP team, say). */
        ctx.kind = PL_EXEC_DEVICE;
        ctx.device = st->queue_key;
    }
    return ctx;
}

/* Pushes step I of the run in RC. */
static pl_status *pl_run_push(pl_program *p, pl_runctx *rc, size_t i)
{
    const pl_prog_step *step = &p->steps[i];
    pl_var *reads_inline[16], *writes_inline[16];
    size_t nr = 0, nw = 0;
    size_t cap_r = step->n_in, cap_w = step->n_out + step->n_reuse + 2;
    pl_var **reads = cap_r <= 16 ? reads_inline : pl_malloc(cap_r * sizeof *reads);
    pl_var **writes = cap_w <= 16 ? writes_inline : pl_malloc(cap_w * sizeof *writes);
    pl_status *st = NULL;
    if (reads == NULL || writes == NULL)
        st = pl_run_oom();
    for (size_t k = 0; st == NULL && k < step->n_in; k++)
        if (step->in[k] >= 0)
            reads[nr++] = rc->vars[step->in[k]];
    for (size_t k = 0; st == NULL && k < step->n_out; k++)
        if (step->out[k] >= 0)
            writes[nw++] = rc->vars[step->out[k]];
    if (st == NULL && step->workspace >= 0)
        writes[nw++] = rc->vars[step->workspace];
    for (size_t k = 0; st == NULL && k < step->n_reuse; k++)
        writes[nw++] = rc->vars[step->reuse[k]];
    if (st == NULL && step->compiled_var != NULL)
        writes[nw++] = step->compiled_var;
    pl_exec_ctx ctx = pl_run_exec_ctx(p, step);
    bool async = step->kind == PL_STEP_SUBGRAPH &&
                 (step->module->api.capabilities & PL_CAP_ASYNC) &&
                 step->module->api.run_async != NULL;
    pl_engine *e = p->rt->engine;
    if (st == NULL && async)
        st = pl_engine_push_async(e, pl_step_async_fn, &rc->calls[i], ctx, reads, nr, writes,
                                  nw, 0, step->name);
    else if (st == NULL)
        st = pl_engine_push(e, pl_step_fn, &rc->calls[i], ctx, reads, nr, writes, nw, 0,
                            step->name);
    if (reads != reads_inline)
        pl_free(reads);
    if (writes != writes_inline)
        pl_free(writes);
    return st;
}

/* Runs the steps of P in RC in order in the calling thread (see
 * pl_run_is_sequential) unless ST is already an error; returns the run's
 * error. */
static pl_status *pl_run_sequential(pl_program *p, pl_runctx *rc, pl_status *st)
{
    /* one past the pool's workers: the index a thread that runs operations
     * while it waits has */
    pl_run_context run = {.header = PL_ABI_HEADER_INIT(pl_run_context),
                          .worker = pl_runtime_thread_count(p->rt)};
    pl_threadpool *pool = pl_engine_cpu_pool(p->rt->engine);
    uint64_t outer_chain = pl_step_chain_ns;
    pl_step_chain_ns = 0;
    for (size_t i = 0; st == NULL && i < p->n_steps; i++) {
        const pl_prog_step *step = &p->steps[i];
        if (pl_run_exec_ctx(p, step).kind == PL_EXEC_CPU) {
            run.device = p->devs[step->dev].device;
            if (pl_step_chain_ns == 0)
                pl_step_chain_ns = pl_now_ns();
            st = pl_step_fn(&rc->calls[i], &run);
            continue;
        }
        pl_step_chain_ns = 0;
        if (pl_module_home_here(step->module)) {
            /* A pinned-thread module's step in its home thread: here, with
             * the CPU pool's idle workers kept from spinning against its
             * team, as the engine keeps them for its dedicated thread. */
            run.device = p->devs[step->dev].device;
            pl_threadpool_hold_spin(pool, 1);
            st = pl_step_fn(&rc->calls[i], &run);
            pl_threadpool_hold_spin(pool, -1);
            continue;
        }
        /* a pinned-thread module's step from another thread than its home:
         * on its worker, waited for */
        pl_var *done = step->compiled_var;
        for (size_t k = 0; done == NULL && k < step->n_out; k++)
            if (step->out[k] >= 0)
                done = rc->vars[step->out[k]];
        st = pl_run_push(p, rc, i);
        if (st == NULL && done != NULL)
            st = pl_engine_wait_var(p->rt->engine, done);
        if (st != NULL || done == NULL)
            pl_engine_wait_idle(p->rt->engine); /* nothing of this run left in flight */
    }
    pl_step_chain_ns = outer_chain;
    return st;
}

/* The end of the run: after every value's last use. Pushed even when a
 * push failed, so the context is quiet before it is reused. Returns the
 * run's error. */
static pl_status *pl_run_finish(const pl_program *p, pl_runctx *rc)
{
    pl_engine *e = p->rt->engine;
    pl_status *push = pl_engine_push(e, pl_nop_fn, NULL, (pl_exec_ctx){.kind = PL_EXEC_INLINE},
                                     rc->vars, p->n_values, &rc->done, 1, 0, "end of run");
    if (push == NULL) {
        pl_status *st = pl_engine_wait_var(e, rc->done);
        if (st == NULL || pl_status_code(st) != PL_CODE_OUT_OF_MEMORY)
            return st;
        /* The wait itself may be what ran out of memory (it is an engine
         * operation), in which case the steps may still be running. */
        pl_engine_wait_idle(e);
        return st;
    }
    pl_status_free(push);
    /* Out of memory: waiting on each variable would need an engine
     * operation per wait, which could fail too and return while steps still
     * write this context's buffers (ThreadSanitizer caught the caller
     * freeing an output a kernel was writing; later, the next run binding
     * a context a step of the failed one still read). Waiting for the
     * engine to go idle allocates nothing. */
    pl_engine_wait_idle(e);
    return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory ending a run");
}

/* Describes the outputs that came back, or frees what the run allocated
 * for them when it failed (FAILED). */
static void pl_run_outputs_done(const pl_program *p, pl_io *outputs, size_t n_outputs,
                                const int32_t *out_value, const bool *allocated, bool failed)
{
    for (size_t i = 0; i < n_outputs; i++) {
        pl_tensor *t = &outputs[i].tensor;
        if (failed) {
            if (allocated && allocated[i]) {
                free(t->data);
                t->data = NULL;
            }
            continue;
        }
        const pl_prog_value *val = &p->values[out_value[i]];
        t->struct_size = sizeof *t;
        t->dtype = val->dtype;
        t->ndim = val->ndim;
        t->shape = (int64_t *)val->dims;
        t->device.device_type = PL_DEVICE_CPU;
        t->device.device_id = 0;
    }
}

pl_status *pl_runner_run(pl_runner *r, const pl_io *inputs, size_t n_inputs,
                         pl_io *outputs, size_t n_outputs)
{
    pl_program *p = r->p;
    const pl_tensor **bound = pl_calloc(p->n_values ? p->n_values : 1, sizeof *bound);
    int32_t *out_value = pl_calloc(n_outputs ? n_outputs : 1, sizeof *out_value);
    bool *allocated = pl_calloc(n_outputs ? n_outputs : 1, sizeof *allocated);
    pl_status *st = NULL;
    if (bound == NULL || out_value == NULL || allocated == NULL)
        st = pl_run_oom();
    if (st == NULL)
        st = pl_run_bind_inputs(p, inputs, n_inputs, bound);
    if (st == NULL)
        st = pl_run_find_outputs(p, outputs, n_outputs, out_value);
    pl_runctx *rc = NULL;
    if (st == NULL)
        st = pl_runner_take(r, &rc);
    if (st == NULL)
        st = pl_run_bind(p, rc, bound, outputs, n_outputs, out_value, allocated);
    if (rc != NULL && r->sequential) {
        st = pl_run_sequential(p, rc, st);
        pl_runner_give_back(r, rc);
        rc = NULL;
    }
    for (size_t i = 0; st == NULL && rc != NULL && i < p->n_steps; i++)
        st = pl_run_push(p, rc, i);
    if (rc != NULL) {
        pl_status *run_error = pl_run_finish(p, rc);
        pl_runner_give_back(r, rc);
        if (st == NULL)
            st = run_error;
        else
            pl_status_free(run_error);
    }
    pl_run_outputs_done(p, outputs, n_outputs, out_value, allocated, st != NULL);
    pl_free(bound);
    pl_free(out_value);
    pl_free(allocated);
    return st;
}

pl_status *pl_runner_run_inline(pl_runner *r, const pl_tensor *inputs, pl_tensor *outputs,
                                int worker)
{
    pl_program *p = r->p;
    pl_runctx *rc = NULL;
    PL_RETURN_IF_ERROR(pl_runner_take(r, &rc));
    for (size_t v = 0; v < p->n_values; v++) {
        pl_value_kind k = p->values[v].kind;
        if (k != PL_VAL_INPUT && k != PL_VAL_OUTPUT)
            continue;
        size_t count = k == PL_VAL_INPUT ? pl_graph_input_count(p->g)
                                         : pl_graph_output_count(p->g);
        for (size_t i = 0; i < count; i++) {
            pl_tid t = k == PL_VAL_INPUT ? pl_graph_input(p->g, i) : pl_graph_output(p->g, i);
            if (t != p->values[v].tensor)
                continue;
            const pl_tensor *b = k == PL_VAL_INPUT ? &inputs[i] : &outputs[i];
            rc->values[v].data = (char *)b->data + b->byte_offset;
            rc->values[v].byte_offset = 0;
        }
    }
    pl_status *st = NULL;
    for (size_t i = 0; st == NULL && i < p->n_steps; i++) {
        pl_run_context run = {.header = PL_ABI_HEADER_INIT(pl_run_context),
                              .device = p->devs[p->steps[i].dev].device,
                              .worker = worker};
        st = pl_step_fn(&rc->calls[i], &run);
    }
    pl_runner_give_back(r, rc);
    return st;
}
