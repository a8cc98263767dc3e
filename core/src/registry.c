/* registry.c — the records of a runtime's modules: creation, the reference
 * counts that keep a module loaded while anything it made is alive, the
 * final shutdown and dlclose, and the serialised calls to configure whose
 * outputs the registry keeps for `plinth modules`. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "registry.h"
#include "status.h"

/* ---- module records ---------------------------------------------------- */

pl_module *pl_module_new(pl_runtime *rt, const char *path)
{
    pl_module *m = pl_alloc_calloc(rt->alloc, 1, sizeof *m);
    if (m == NULL)
        return NULL;
    const char *base = strrchr(path, '/');
    m->path = pl_alloc_strdup(rt->alloc, path);
    m->name = pl_alloc_strdup(rt->alloc, base ? base + 1 : path);
    m->reason = pl_alloc_strdup(rt->alloc, "");
    if (m->path == NULL || m->name == NULL || m->reason == NULL) {
        pl_free(m->path);
        pl_free(m->name);
        pl_free(m->reason);
        pl_free(m);
        return NULL;
    }
    m->host.runtime = rt;
    m->host.module = m;
    m->status = PL_MODULE_REJECTED;
    m->refs = 1;
    pthread_mutex_init(&m->configure_mu, NULL);
    pthread_mutex_init(&m->work_mu, NULL);
    return m;
}

void pl_module_work_begin(pl_module *module)
{
    if (module->api.capabilities & PL_CAP_PINNED_THREAD)
        pthread_mutex_lock(&module->work_mu);
}

void pl_module_work_end(pl_module *module)
{
    if (module->api.capabilities & PL_CAP_PINNED_THREAD)
        pthread_mutex_unlock(&module->work_mu);
}

/* A thread's identity for pl_module_home_here: the address of a
 * thread-local, distinct among live threads (a thread that reuses an
 * exited one's may inherit its home, which costs nothing: calls stay one
 * at a time). */
static _Thread_local char pl_thread_token;

bool pl_module_home_here(pl_module *m)
{
    const uint32_t both = PL_CAP_PINNED_THREAD | PL_CAP_RUNS_IN_CALLER;
    if ((m->api.capabilities & both) != both)
        return false;
    uintptr_t self = (uintptr_t)&pl_thread_token, none = 0;
    uintptr_t home = atomic_load_explicit(&m->home, memory_order_relaxed);
    if (home == self)
        return true;
    return home == 0 && atomic_compare_exchange_strong(&m->home, &none, self);
}

static void pl_module_free_outputs(pl_module *m)
{
    for (size_t i = 0; i < m->n_outputs; i++) {
        pl_free(m->outputs[i].key);
        pl_free(m->outputs[i].value);
    }
    pl_free(m->outputs);
    m->outputs = NULL;
    m->n_outputs = 0;
}

/* Shuts the instance down and closes the library; the record stays. */
void pl_module_unload(pl_module *m)
{
    if (m->ctx != NULL && m->api.shutdown != NULL)
        m->api.shutdown(m->ctx);
    m->ctx = NULL;
    pl_extension_forget(m);
    if (m->handle != NULL)
        dlclose(m->handle);
    m->handle = NULL;
    memset(&m->api, 0, sizeof m->api);
}

void pl_module_retain(pl_module *module)
{
    atomic_fetch_add_explicit(&module->refs, 1,
                              memory_order_relaxed);
}

void pl_module_release(pl_module *module)
{
    if (atomic_fetch_sub_explicit(&module->refs, 1,
                                  memory_order_acq_rel) != 1)
        return;
    pl_runtime *rt = module->host.runtime;
    pl_module_unload(module);
    for (int i = 0; i < module->device_count; i++)
        pl_free(module->device_names ? module->device_names[i] : NULL);
    pl_free(module->device_names);
    pl_module_free_outputs(module);
    pthread_mutex_destroy(&module->configure_mu);
    pthread_mutex_destroy(&module->work_mu);
    pl_free(module->name);
    pl_free(module->path);
    pl_free(module->reason);
    pl_free(module);
    pl_runtime_unref(rt);
}

/* ---- configure ---------------------------------------------------------- */

typedef struct pl_output_sink {
    pl_allocator alloc;
    pl_kv_pair *items;
    size_t n;
    bool oom;
} pl_output_sink;

static void pl_output_sink_add(void *user, const char *key, const char *value)
{
    pl_output_sink *s = user;
    if (key == NULL)
        return;
    pl_kv_pair *grown = pl_alloc_realloc(s->alloc, s->items, (s->n + 1) * sizeof *grown);
    if (grown == NULL) {
        s->oom = true;
        return;
    }
    s->items = grown;
    s->items[s->n].key = pl_alloc_strdup(s->alloc, key);
    s->items[s->n].value = pl_alloc_strdup(s->alloc, value ? value : "");
    if (s->items[s->n].key == NULL || s->items[s->n].value == NULL) {
        pl_free(s->items[s->n].key);
        pl_free(s->items[s->n].value);
        s->oom = true;
        return;
    }
    s->n++;
}

pl_status *pl_module_configure(pl_module *m, const pl_kv *in, size_t n)
{
    if (m->ctx == NULL || m->api.configure == NULL)
        return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                "module %s is not initialised", m->name);
    pl_output_sink sink = {.alloc = m->host.runtime->alloc};
    pthread_mutex_lock(&m->configure_mu);
    pl_status *st = m->api.configure(m->ctx, in, n, pl_output_sink_add, &sink);
    if (st == NULL && sink.oom)
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                              "out of memory storing the outputs of %s", m->name);
    if (st == NULL) {
        pl_module_free_outputs(m);
        m->outputs = sink.items;
        m->n_outputs = sink.n;
        sink.items = NULL;
        sink.n = 0;
    }
    pthread_mutex_unlock(&m->configure_mu);
    for (size_t i = 0; i < sink.n; i++) {
        pl_free(sink.items[i].key);
        pl_free(sink.items[i].value);
    }
    pl_free(sink.items);
    return st;
}

