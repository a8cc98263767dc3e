/* registry.h — the runtime's modules: one record per file found on the
 * module path, with its verdict, and for loaded modules the library handle,
 * the validated table and this runtime's instance. Internal to the core. */
#ifndef PL_CORE_REGISTRY_H
#define PL_CORE_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdbool.h>

#include "config.h"
#include "graph.h"
#include "custom_op.h"
#include "engine.h"
#include "opset.h"
#include "log.h"
#include "plinth/module.h"
#include "plinth/plinth.h"
#include "plinth/work_pool.h"
#include "threadpool.h"

typedef struct pl_module pl_module;

/* The host context of one module instance: what host-table calls need. */
struct pl_host_ctx {
    pl_runtime *runtime;
    pl_module *module;
    const pl_config_section *section;  /* NULL when backend.ini has none */
};

typedef struct pl_kv_pair {
    char *key;
    char *value;
} pl_kv_pair;

struct pl_module {
    pl_host_ctx host;
    pl_module_status status;
    char *name;          /* note name, else the file name */
    char *path;          /* as found on the module path */
    char *reason;        /* "" when loaded */
    pl_identity_desc note;
    bool note_read;
    void *handle;        /* dlopen handle, NULL when not opened */
    pl_module_api api;   /* the module's table, copied and zero-extended */
    pl_module_ctx *ctx;  /* the instance, when init succeeded */
    int device_count;
    char **device_names;
    pl_kv_pair *outputs; /* configure's outputs */
    size_t n_outputs;
    pthread_mutex_t configure_mu; /* configure and vendor calls */
    /* PL_CAP_PINNED_THREAD: held around each call into its work, so that
     * its dedicated thread and its home thread (PL_CAP_RUNS_IN_CALLER,
     * pl_module_home_here) never run it at once. */
    pthread_mutex_t work_mu;
    _Atomic uintptr_t home; /* the home thread's token; 0 = none yet */
    pl_extension *exts;  /* vendor functions that passed the checks */
    size_t n_exts;
    _Atomic int refs;    /* the runtime's + every live object's */
};

struct pl_runtime {
    /* Every allocation of the runtime, its module records, configuration
     * and engine, and of the models and sessions made from it. */
    pl_allocator alloc;
    pl_config *config;
    pl_logger logger;
    pl_engine *engine;
    pl_opset *opset;              /* built-in schemas + modules' custom ops */
    pthread_mutex_t opset_mu;     /* registrations */
    bool opset_mu_ready;
    pl_custom_record *custom_ops;
    /* Secure mode (pl_runtime_options.secure_mode, or setuid/setgid): no
     * environment, no ./backend.ini, no relative module paths. */
    bool secure;
    pl_threadpool *pool;  /* the engine's CPU pool */
    int threads;
    pl_module **modules;
    size_t n_modules;
    char **diagnostics;
    size_t n_diagnostics;
    /* 1 for the application's handle plus 1 per module record still
     * referenced; the runtime is freed when it reaches 0. */
    _Atomic int refs;
    /* The core's control-flow backend (control.c), offered after every
     * loaded backend. */
    pl_module *control;
    /* Eager operators' kernels and finished calls (eager.c). */
    struct pl_eager_cache *eager;
    /* The host arenas of runs: a run takes one for its length (run.c), so
     * sessions that run one after another (a staged session's levels, an
     * application's models) hold the largest, not the sum. */
    pl_work_pool arenas;
};

typedef struct pl_eager_cache pl_eager_cache;
typedef struct pl_eager_entry pl_eager_entry;

/* Validates G and infers its types with RT's opset (built-in and modules'
 * custom ops), under the opset's lock. */
pl_status *pl_runtime_type_graph(pl_runtime *rt, pl_graph *g);

/* Asks loaded module M for its vendor functions and keeps those that pass
 * the checks (extension.c); the others become diagnostics. */
void pl_extension_collect(pl_runtime *rt, pl_module *m);
/* Forgets M's vendor functions (the module is being unloaded). */
void pl_extension_forget(pl_module *m);

/* The core's host table (host.c). */
extern const pl_host_api pl_host_table;

/* Scans the module path of RT's configuration (and PLINTH_MODULE_PATH when
 * env_path is non-NULL), loads, initialises and configures every module,
 * recording a verdict for each (loader.c). Fails only out of memory. */
pl_status *pl_loader_load_all(pl_runtime *rt, const char *env_path);

/* Opens the checked module file REAL for M (whose note is read and whose
 * section is set): dlopen, entry point, table, init, configure and device
 * queries, recording the verdict in M. The probe's child runs the same. */
void pl_loader_open(pl_runtime *rt, pl_module *m, const char *real);

/* A new record for the file PATH, status rejected until the loader says
 * otherwise; holds one reference (the runtime's). */
pl_module *pl_module_new(pl_runtime *rt, const char *path);
/* Shuts the instance down and closes the library; the record stays. */
void pl_module_unload(pl_module *module);

/* Takes a reference on a module: it stays initialised and loaded until the
 * reference is released. */
void pl_module_retain(pl_module *module);
/* Releases a reference; the last one shuts the instance down, closes the
 * library and releases the module's reference on its runtime. */
void pl_module_release(pl_module *module);

/* Around each call into a module's work (kernel_run, run): for a
 * pinned-thread module, one call at a time (work_mu); nothing otherwise. */
void pl_module_work_begin(pl_module *module);
void pl_module_work_end(pl_module *module);
/* Whether the calling thread may run M's steps itself (a sequential run):
 * M is pinned-thread with PL_CAP_RUNS_IN_CALLER and this thread is its
 * home, the first that asked (claimed here). */
bool pl_module_home_here(pl_module *m);

/* Drops a reference on the runtime; the last one frees it. */
void pl_runtime_unref(pl_runtime *rt);

/* Appends a diagnostic line (and logs it at LEVEL). */
void pl_runtime_add_diagnostic(pl_runtime *rt, pl_log_level level,
                               const char *fmt, ...) PL_PRINTF_LIKE(3, 4);

/* Calls module's configure with N pairs and stores its outputs. */
pl_status *pl_module_configure(pl_module *module, const pl_kv *in, size_t n);

#endif
