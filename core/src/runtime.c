/* runtime.c — the public face of the core (plinth.h): a runtime is a
 * configuration, a CPU pool and the modules found on the module path. This
 * file resolves which backend.ini to read, reads the environment safely,
 * drives the loader and answers the application's questions about modules.
 * Teardown is reference-counted: the runtime and each module library live
 * until the last object that needs them is gone. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "alloc.h"
#include "hostbuf.h"
#include "cache.h"
#include "control.h"
#include "array.h"
#include "registry.h"
#include "status.h"
#include "threadpool.h"

/* Runtimes alive in the process (pl_runtime_free flushes hostbuf.c's kept
 * buffers when the last one goes). */
static atomic_size_t pl_runtimes_live;

#ifndef PL_DEFAULT_CONFIG
#define PL_DEFAULT_CONFIG "/etc/plinth/backend.ini"
#endif
#ifndef PL_DEFAULT_CONFIG_FROM_LIB
#define PL_DEFAULT_CONFIG_FROM_LIB "../etc/plinth/backend.ini"
#endif

/* The installed backend.ini beside this libplinth (its folder, then
 * PL_DEFAULT_CONFIG_FROM_LIB: <libdir> to <sysconfdir>/plinth), when that
 * file exists; else NULL. Found once per process. */
static char pl_installed_config[4096];
static pthread_once_t pl_installed_once = PTHREAD_ONCE_INIT;

static void pl_installed_find(void)
{
    Dl_info info;
    if (dladdr((void *)pl_module_status_name, &info) == 0 || info.dli_fname == NULL)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash == NULL)
        return;
    int n = snprintf(pl_installed_config, sizeof pl_installed_config, "%.*s/%s",
                     (int)(slash - info.dli_fname), info.dli_fname, PL_DEFAULT_CONFIG_FROM_LIB);
    if (n <= 0 || (size_t)n >= sizeof pl_installed_config ||
        access(pl_installed_config, R_OK) != 0)
        pl_installed_config[0] = '\0';
}

static const char *pl_runtime_installed_config(void)
{
    pthread_once(&pl_installed_once, pl_installed_find);
    return pl_installed_config[0] ? pl_installed_config : NULL;
}

const char *pl_module_status_name(pl_module_status status)
{
    switch (status) {
    case PL_MODULE_LOADED: return "loaded";
    case PL_MODULE_DISABLED: return "disabled";
    case PL_MODULE_REJECTED: return "rejected";
    case PL_MODULE_NO_DEVICE: return "no-device";
    }
    return "unknown";
}

void pl_runtime_add_diagnostic(pl_runtime *rt, pl_log_level level,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = pl_alloc_vstrdupf(rt->alloc, fmt, ap);
    va_end(ap);
    if (line == NULL)
        return;
    pl_log(&rt->logger, level, NULL, "%s", line);
    char **grown = pl_alloc_realloc(rt->alloc, rt->diagnostics,
                                    (rt->n_diagnostics + 1) * sizeof *grown);
    if (grown == NULL) {
        pl_free(line);
        return;
    }
    rt->diagnostics = grown;
    rt->diagnostics[rt->n_diagnostics++] = line;
}

static bool pl_file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* Environment lookups: never in secure mode, and through secure_getenv so
 * a setuid process ignores them too. Reports a variable that was ignored. */
static const char *pl_runtime_env(pl_runtime *rt, const pl_runtime_options *o,
                                  const char *name)
{
    if (o->ignore_environment)
        return NULL;
    const char *plain = getenv(name);
    const char *value = rt->secure ? NULL : secure_getenv(name);
    if (plain != NULL && value == NULL)
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "%s ignored: the process runs in secure mode",
                                  name);
    return value && value[0] ? value : NULL;
}

static pl_status *pl_runtime_pick_config(pl_runtime *rt,
                                         const pl_runtime_options *o,
                                         const char **out_path)
{
    *out_path = NULL;
    if (o->config_path != NULL) {
        *out_path = o->config_path;
        return NULL;
    }
    const char *env = pl_runtime_env(rt, o, "PLINTH_CONFIG");
    if (env != NULL) {
        *out_path = env;
        return NULL;
    }
    /* A backend.ini in the working folder is whoever made that folder's:
     * in secure mode (and setuid) it could name their modules. */
    if (pl_file_exists("backend.ini") && rt->secure)
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "./backend.ini ignored: the process runs in secure mode");
    else if (pl_file_exists("backend.ini"))
        *out_path = "backend.ini";
    if (*out_path != NULL)
        return NULL;
    const char *installed = pl_runtime_installed_config();
    if (installed != NULL)
        *out_path = installed;
    else if (pl_file_exists(PL_DEFAULT_CONFIG))
        *out_path = PL_DEFAULT_CONFIG;
    return NULL;
}

/* Checks what the configuration asks of the modules found. A module
 * section with enabled = yes whose module did not load, and an order entry
 * naming a device its loaded module does not have, are errors (the runtime
 * is not made); a section or an order entry naming a module that is not
 * loaded is a warning (the default order names cuda, which a machine
 * without a GPU does not load). */
static pl_status *pl_runtime_check_names(pl_runtime *rt)
{
    const pl_config *c = rt->config;
    const char *ini = c->path ? c->path : "backend.ini";
    for (size_t i = 0; i < c->n_sections; i++) {
        const pl_config_section *s = &c->sections[i];
        if (!s->is_module)
            continue;
        const pl_module *found = NULL;
        for (size_t k = 0; k < rt->n_modules && found == NULL; k++)
            if (rt->modules[k]->note_read && strcmp(rt->modules[k]->note.name, s->name) == 0)
                found = rt->modules[k];
        if (s->enabled == PL_ENABLED_YES && found == NULL)
            return pl_status_create(PL_CODE_NOT_FOUND,
                                    "%s:%d: [%s] says enabled = yes, but no module "
                                    "named %s is on the module path",
                                    ini, s->line, s->name, s->name);
        if (s->enabled == PL_ENABLED_YES && found->status != PL_MODULE_LOADED)
            return pl_status_create(PL_CODE_FAILED_PRECONDITION,
                                    "%s:%d: [%s] says enabled = yes, but module %s "
                                    "(%s) is %s: %s",
                                    ini, s->line, s->name, s->name, found->path,
                                    pl_module_status_name(found->status), found->reason);
        if (found == NULL && !c->modules_by_path)
            pl_runtime_add_diagnostic(
                rt, PL_LOG_WARN,
                "%s:%d: section [%s] names no module found on the module path",
                ini, s->line, s->name);
    }
    const pl_config_section *pins = pl_config_find_section(c, "modules");
    for (size_t i = 0; pins != NULL && i < pins->n_entries; i++) {
        if (strncmp(pins->entries[i].key, "sha256.", 7) != 0)
            continue;
        const char *name = pins->entries[i].key + 7;
        bool found = false;
        for (size_t k = 0; k < rt->n_modules && !found; k++)
            found = rt->modules[k]->note_read && strcmp(rt->modules[k]->note.name, name) == 0;
        if (!found)
            pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                      "%s:%d: %s pins a module that is not on the "
                                      "module path",
                                      ini, pins->entries[i].line, pins->entries[i].key);
    }
    for (size_t i = 0; i < c->n_placement; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", c->placement[i]);
        char *colon = strchr(name, ':');
        if (colon != NULL)
            *colon = '\0';
        long idx = pl_runtime_find_module(rt, name);
        if (idx < 0) {
            pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                      "%s:%d: [placement] order names '%s', which is "
                                      "not loaded",
                                      ini, c->placement_line, c->placement[i]);
            continue;
        }
        const pl_module *m = rt->modules[idx];
        int device = colon ? atoi(colon + 1) : 0;
        if (m->status == PL_MODULE_LOADED && device >= m->device_count) {
            char range[32] = "0";
            if (m->device_count > 1)
                snprintf(range, sizeof range, "0 to %d", m->device_count - 1);
            return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                    "%s:%d: [placement] order names '%s', but %s has "
                                    "%d device%s (%s)",
                                    ini, c->placement_line, c->placement[i], name,
                                    m->device_count, m->device_count == 1 ? "" : "s",
                                    range);
        }
    }
    bool any = false;
    for (size_t k = 0; k < rt->n_modules; k++)
        any = any || rt->modules[k]->status == PL_MODULE_LOADED;
    if (!any && !c->modules_by_path)
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN,
                                  "no module loaded: nothing can run (%zu "
                                  "file(s) found on the module path)",
                                  rt->n_modules);
    return NULL;
}

/* A module built on an OpenMP runtime (onednn, through GNU libgomp) gets
 * the pool's spin policy. libgomp's idle workers, and a team's master
 * waiting at a barrier, spin GOMP_SPINCOUNT pauses before they sleep:
 * 300000 by default, 6 ms where a pause costs 65 cycles (AMD Zen). While
 * one spins it holds a core that another module's threads, or another
 * process, need: after one oneDNN MaxPool amid the cpu module's int8
 * layers, resnet50_s_qdq ran 0.67 ms a run against 0.44 with `order =
 * cpu`; two processes of 2 threads on 2 cores ran resnet50_s at 244-348
 * ms a run instead of 0.4 (each master spinning for a worker the other's
 * spin kept off the cores). So unless the environment already chooses
 * (GOMP_SPINCOUNT or OMP_WAIT_POLICY), the spin becomes as long as the
 * pool's spin_us, in pauses of this CPU, before the first module (and
 * with it the OpenMP runtime, which reads its environment once, when it
 * is loaded) is opened: 0.44-0.45 ms for resnet50_s_qdq, 0.8-3 ms under
 * that contention. An OpenMP runtime the process loaded earlier keeps
 * its own setting. Once per process: the environment is the process's. */
static void pl_runtime_openmp_spin(pl_runtime *rt, int spin_us)
{
    static atomic_flag done = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&done) || getenv("GOMP_SPINCOUNT") != NULL ||
        getenv("OMP_WAIT_POLICY") != NULL)
        return;
    double pause = pl_threadpool_pause_ns();
    double count = pause > 0.1 ? spin_us * 1000.0 / pause : 300000.0;
    if (count > 300000.0) /* libgomp's own default */
        count = 300000.0;
    char value[32];
    snprintf(value, sizeof value, "%ld", (long)count);
    setenv("GOMP_SPINCOUNT", value, 0);
    pl_runtime_add_diagnostic(rt, PL_LOG_DEBUG,
                              "OpenMP spin: GOMP_SPINCOUNT=%s (the pool spins %d us, a "
                              "pause takes %.1f ns)",
                              value, spin_us, pause);
}


/* Creation proper; pl_runtime_create wraps it in the allocator's scope. */
/* The host arenas' memory (pl_runtime.arenas): 64-byte aligned, outside
 * the runtime's allocator like every run buffer. */
static void *pl_runtime_arena_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    void *p = NULL;
    return posix_memalign(&p, 64, bytes) == 0 ? p : NULL;
}

static void pl_runtime_arena_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

static pl_status *pl_runtime_create_in(const pl_runtime_options *options,
                                       pl_runtime **out_runtime)
{
    *out_runtime = NULL;
    pl_runtime_options o = {0};
    if (options != NULL) {
        size_t n = options->struct_size < sizeof o ? options->struct_size
                                                   : sizeof o;
        memcpy(&o, options, n);
    }
    pl_allocator alloc = pl_allocator_resolve(o.allocator);
    pl_runtime *rt = pl_alloc_calloc(alloc, 1, sizeof *rt);
    if (rt == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    rt->alloc = alloc;
    atomic_init(&rt->refs, 1);
    atomic_fetch_add_explicit(&pl_runtimes_live, 1, memory_order_relaxed);
    pl_work_pool_init(&rt->arenas, pl_runtime_arena_alloc, pl_runtime_arena_free, NULL);
    rt->logger.level = PL_LOG_WARN;
    rt->logger.sink = o.log_sink;
    rt->logger.user = o.log_user;
    rt->secure = o.secure_mode || getauxval(AT_SECURE) != 0;

    const char *path = NULL;
    pl_status *st = pl_runtime_pick_config(rt, &o, &path);
    if (st == NULL)
        st = pl_config_load(rt->alloc, path, &rt->config);
    if (st != NULL) {
        pl_runtime_destroy(rt);
        return st;
    }
    rt->logger.level = rt->config->log_level;
    for (size_t i = 0; i < rt->config->n_warnings; i++)
        pl_runtime_add_diagnostic(rt, PL_LOG_WARN, "%s", rt->config->warnings[i]);

    pthread_mutex_init(&rt->opset_mu, NULL);
    rt->opset_mu_ready = true;
    st = pl_opset_create(&rt->opset);
    if (st == NULL)
        st = pl_control_module_create(rt, &rt->control);
    if (st != NULL) {
        pl_runtime_destroy(rt);
        return st;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int wanted = o.threads > 0 ? o.threads : rt->config->threads;
    rt->threads = wanted > 0 ? wanted : (int)(cores > 0 ? cores : 1);
    /* Modules first, then the engine's threads: the loader forks its
     * probes (probe.c), and a fork while pool threads are starting can copy
     * a lock one of them holds (seen with AddressSanitizer's thread
     * registry: the child hung in dlopen). Until the pool exists, modules'
     * parallel work during init runs inline; thread_count is the same. */
    const char *env_path = pl_runtime_env(rt, &o, "PLINTH_MODULE_PATH");
    pl_runtime_openmp_spin(rt, rt->config->spin_us);
    st = pl_loader_load_all(rt, env_path);
    pl_engine_options eo = {.alloc = rt->alloc,
                            .kind = rt->config->engine,
                            .threads = rt->threads,
                            .logger = &rt->logger,
                            .spin_us = rt->config->spin_us};
    if (st == NULL)
        st = pl_engine_create(&eo, &rt->engine);
    if (st == NULL)
        rt->pool = pl_engine_cpu_pool(rt->engine);
    if (st == NULL)
        st = pl_eager_cache_create(rt);
    if (st != NULL) {
        pl_runtime_destroy(rt);
        return st;
    }
    st = pl_runtime_check_names(rt);
    if (st != NULL) {
        pl_runtime_destroy(rt);
        return st;
    }
    *out_runtime = rt;
    return NULL;
}

pl_status *pl_runtime_create(const pl_runtime_options *options,
                             pl_runtime **out_runtime)
{
    *out_runtime = NULL;
    pl_allocator alloc = {0};
    if (options != NULL &&
        options->struct_size >= offsetof(pl_runtime_options, allocator) + sizeof alloc)
        alloc = options->allocator;
    /* Code handed no allocator (the opset, module registrations through the
     * host table) allocates through the runtime's too. */
    pl_allocator outer = pl_alloc_scope_enter(alloc);
    unsigned long failures = pl_alloc_failures();
    pl_status *st = pl_runtime_create_in(options, out_runtime);
    /* A failure absorbed on the way (a diagnostic dropped, a module refused
     * because the core ran out of memory) would leave a runtime that
     * silently differs from the configuration: fail instead. */
    if (st == NULL && pl_alloc_failures() != failures) {
        pl_runtime_destroy(*out_runtime);
        *out_runtime = NULL;
        st = pl_status_create(PL_CODE_OUT_OF_MEMORY,
                              "out of memory creating the runtime");
    }
    pl_alloc_scope_leave(outer);
    return st;
}

pl_allocator pl_runtime_allocator(const pl_runtime *runtime)
{
    return runtime ? runtime->alloc : pl_allocator_system();
}

static void pl_runtime_free(pl_runtime *rt)
{
    /* the output buffers kept for later runs go with the last runtime */
    if (atomic_fetch_sub_explicit(&pl_runtimes_live, 1, memory_order_acq_rel) == 1)
        pl_hostbuf_flush();
    pl_engine_destroy(rt->engine);
    pl_work_pool_destroy(&rt->arenas);
    pl_control_module_destroy(rt->control);
    pl_opset_destroy(rt->opset);
    pl_custom_records_free(rt->custom_ops);
    if (rt->opset_mu_ready)
        pthread_mutex_destroy(&rt->opset_mu);
    for (size_t i = 0; i < rt->n_diagnostics; i++)
        pl_free(rt->diagnostics[i]);
    pl_free(rt->diagnostics);
    pl_free(rt->modules);
    pl_config_destroy(rt->config);
    pl_free(rt);
}

void pl_runtime_unref(pl_runtime *rt)
{
    if (atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) == 1)
        pl_runtime_free(rt);
}

void pl_runtime_destroy(pl_runtime *runtime)
{
    if (runtime == NULL)
        return;
    /* Eager kernels hold their modules: release them first, once the work
     * pushed with them is done. */
    pl_eager_cache_destroy(runtime);
    /* Later modules may depend on services of earlier ones: release in
     * reverse order of loading. */
    size_t n = runtime->n_modules;
    pl_module **mods = runtime->modules;
    runtime->n_modules = 0;
    for (size_t i = n; i-- > 0;) {
        pl_module_release(mods[i]);
    }
    runtime->modules = NULL;
    pl_free(mods);
    pl_runtime_unref(runtime);
}

const char *pl_runtime_config_path(const pl_runtime *runtime)
{
    return runtime && runtime->config ? runtime->config->path : NULL;
}

size_t pl_runtime_diagnostic_count(const pl_runtime *runtime)
{
    return runtime ? runtime->n_diagnostics : 0;
}

const char *pl_runtime_diagnostic(const pl_runtime *runtime, size_t i)
{
    return runtime && i < runtime->n_diagnostics ? runtime->diagnostics[i] : "";
}

size_t pl_runtime_module_count(const pl_runtime *runtime)
{
    return runtime ? runtime->n_modules : 0;
}

pl_status *pl_runtime_module_info(const pl_runtime *runtime, size_t i,
                                  pl_module_info *out_info)
{
    if (runtime == NULL || out_info == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_module_info: NULL argument");
    if (i >= runtime->n_modules)
        return pl_status_create(PL_CODE_NOT_FOUND,
                                "module index %zu out of range (%zu modules)", i,
                                runtime->n_modules);
    uint32_t size = out_info->struct_size;
    pl_module_info info;
    memset(&info, 0, sizeof info);
    const pl_module *m = runtime->modules[i];
    info.struct_size = size;
    info.status = m->status;
    info.name = m->name;
    info.version = m->api.version ? m->api.version
                                  : (m->note_read ? m->note.version : "");
    info.vendor = m->api.vendor ? m->api.vendor : "";
    info.path = m->path;
    info.reason = m->reason;
    info.capabilities = m->api.capabilities;
    info.device_count = m->device_count;
    info.abi_major = m->note_read ? m->note.abi_major : 0;
    info.abi_minor = m->note_read ? m->note.abi_minor : 0;
    size_t n = size < sizeof info ? size : sizeof info;
    memcpy(out_info, &info, n);
    return NULL;
}

long pl_runtime_find_module(const pl_runtime *runtime, const char *name)
{
    for (size_t i = 0; runtime && name && i < runtime->n_modules; i++) {
        const pl_module *m = runtime->modules[i];
        if ((m->status == PL_MODULE_LOADED || m->status == PL_MODULE_NO_DEVICE) &&
            strcmp(m->name, name) == 0)
            return (long)i;
    }
    return -1;
}

const char *pl_runtime_device_name(const pl_runtime *runtime, size_t i,
                                   int device)
{
    if (runtime == NULL || i >= runtime->n_modules)
        return "";
    const pl_module *m = runtime->modules[i];
    if (device < 0 || device >= m->device_count || m->device_names == NULL ||
        m->device_names[device] == NULL)
        return "";
    return m->device_names[device];
}

size_t pl_runtime_module_output_count(const pl_runtime *runtime, size_t i)
{
    return runtime && i < runtime->n_modules ? runtime->modules[i]->n_outputs : 0;
}

void pl_runtime_module_output(const pl_runtime *runtime, size_t i, size_t k,
                              const char **out_key, const char **out_value)
{
    *out_key = NULL;
    *out_value = NULL;
    if (runtime == NULL || i >= runtime->n_modules ||
        k >= runtime->modules[i]->n_outputs)
        return;
    *out_key = runtime->modules[i]->outputs[k].key;
    *out_value = runtime->modules[i]->outputs[k].value;
}

pl_status *pl_runtime_configure_module(pl_runtime *runtime, const char *name,
                                       const char *const *keys,
                                       const char *const *values, size_t n)
{
    long idx = pl_runtime_find_module(runtime, name);
    if (idx < 0 || runtime->modules[idx]->ctx == NULL)
        return pl_status_create(PL_CODE_NOT_FOUND,
                                "configure: no loaded module named '%s'",
                                name ? name : "(null)");
    pl_kv *kv = pl_alloc_calloc(runtime->alloc, n ? n : 1, sizeof *kv);
    if (kv == NULL)
        return pl_status_create(PL_CODE_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        kv[i].key = keys[i];
        kv[i].value = values[i];
    }
    pl_allocator outer = pl_alloc_scope_enter(runtime->alloc);
    pl_status *st = pl_module_configure(runtime->modules[idx], kv, n);
    pl_alloc_scope_leave(outer);
    pl_free(kv);
    if (st == NULL)
        return NULL;
    /* One prefix: a module that names itself already gets no second. */
    const char *msg = pl_status_message(st);
    size_t nl = strlen(name);
    if (strncmp(msg, name, nl) == 0 && msg[nl] == ':' && msg[nl + 1] == ' ')
        msg += nl + 2;
    pl_status *out = pl_status_create(pl_status_code(st), "module %s: %s", name, msg);
    pl_status_free(st);
    return out;
}

pl_engine_kind pl_runtime_engine_kind(const pl_runtime *runtime)
{
    return runtime ? runtime->config->engine : PL_ENGINE_THREADED;
}

int pl_runtime_thread_count(const pl_runtime *runtime)
{
    return runtime ? runtime->threads : 1;
}

const char *pl_runtime_cache_dir(const pl_runtime *runtime)
{
    return runtime ? runtime->config->cache_dir : "";
}

size_t pl_runtime_placement_count(const pl_runtime *runtime)
{
    return runtime ? runtime->config->n_placement : 0;
}

const char *pl_runtime_placement(const pl_runtime *runtime, size_t i)
{
    return runtime && i < runtime->config->n_placement
               ? runtime->config->placement[i]
               : "";
}

pl_status *pl_runtime_type_graph(pl_runtime *rt, pl_graph *g)
{
    pl_status *st = pl_graph_validate(g);
    if (st == NULL) {
        pthread_mutex_lock(&rt->opset_mu);
        st = pl_opset_infer(rt->opset, g);
        pthread_mutex_unlock(&rt->opset_mu);
    }
    return st;
}

/* ---- the compiled-subgraph cache ------------------------------------------- */

pl_status *pl_runtime_cache_stats(pl_runtime *rt, pl_cache_stats *out)
{
    if (rt == NULL || out == NULL || out->struct_size < sizeof *out)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_cache_stats: NULL runtime or stats, or "
                                "struct_size not set to sizeof(pl_cache_stats)");
    const char *dir = rt->config->cache_dir;
    *out = (pl_cache_stats){.struct_size = sizeof *out, .dir = dir,
                            .max_bytes = rt->config->cache_max_bytes};
    if (dir[0] == '\0')
        return NULL;
    uint64_t counts[PL_CACHE_COUNTS];
    pl_cache_read_counts(dir, counts);
    out->hits = counts[PL_CACHE_HITS];
    out->misses = counts[PL_CACHE_MISSES];
    out->stores = counts[PL_CACHE_STORES];
    out->evictions = counts[PL_CACHE_EVICTIONS];
    out->bytes_read = counts[PL_CACHE_BYTES_READ];
    out->bytes_written = counts[PL_CACHE_BYTES_WRITTEN];
    return pl_cache_scan(dir, NULL, NULL, &out->entries, &out->bytes);
}

pl_status *pl_runtime_cache_list(pl_runtime *rt, pl_cache_entry_fn fn, void *user)
{
    if (rt == NULL || fn == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT,
                                "pl_runtime_cache_list: NULL runtime or function");
    if (rt->config->cache_dir[0] == '\0')
        return NULL;
    return pl_cache_scan(rt->config->cache_dir, fn, user, NULL, NULL);
}

pl_status *pl_runtime_cache_clear(pl_runtime *rt, uint64_t *out_removed)
{
    uint64_t removed = 0;
    if (rt == NULL)
        return pl_status_create(PL_CODE_INVALID_ARGUMENT, "pl_runtime_cache_clear: NULL runtime");
    pl_status *st = rt->config->cache_dir[0] ? pl_cache_clear(rt->config->cache_dir, &removed)
                                             : NULL;
    if (out_removed != NULL)
        *out_removed = removed;
    return st;
}
