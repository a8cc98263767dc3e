/* plinth/host.h — the host table: what the core lends to a module.
 *
 * A module never links against the core. Everything it needs from the core
 * arrives through this table, handed to the module's entry point. The table is
 * one static object of the core, valid from entry until the module is
 * unloaded. Functions that concern one runtime's instance of the module take
 * the pl_host_ctx that the core passes to the module's init; a module keeps it
 * in its instance and hands it back. */
#ifndef PLINTH_HOST_H
#define PLINTH_HOST_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "plinth/abi.h"
#include "plinth/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The core's handle for one loaded instance of a module within one runtime.
 * Opaque; valid from init until shutdown returns. */
typedef struct pl_host_ctx pl_host_ctx;

/* An asynchronous completion. The core gives one to a module's async entry
 * points; the module signals it exactly once, from any thread, with
 * host->complete. Opaque. */
typedef struct pl_completion pl_completion;

/* A read-only view of a graph or subgraph, and a builder for import. Both
 * are opaque; their functions live in pl_graph_api. */
typedef struct pl_graph_view pl_graph_view;
typedef struct pl_graph_builder pl_graph_builder;

/* Log levels, most severe first. */
typedef enum pl_log_level {
    PL_LOG_ERROR = 0,
    PL_LOG_WARN = 1,
    PL_LOG_INFO = 2,
    PL_LOG_DEBUG = 3
} pl_log_level;

/* Body of a parallel loop: process indices [begin, end). `worker` is the
 * index of the thread running this chunk, in [0, thread_count), so a body may
 * keep per-thread scratch. Must not fail; must not block on other chunks. */
typedef void (*pl_parallel_fn)(void *arg, size_t begin, size_t end,
                               int worker);

/* The read-only graph view and graph builder. This table is reserved in ABI
 * 1.0 with its header only; the graph issue of the 1.x series appends its
 * functions (nodes, ops and domains, typed attribute getters, tensor dtypes
 * and shapes, constant bytes, the JSON text, and a builder for format
 * modules). Until a core provides them, host->graph is NULL or its
 * struct_size covers no function: check with PL_ABI_HAS_FN. */
typedef struct pl_graph_api {
    pl_abi_header header;
} pl_graph_api;

/* The host table. Every function is thread-safe unless it says otherwise. */
typedef struct pl_host_api {
    pl_abi_header header;

    /* Writes one log line attributed to the module ("[cpu] ..."). (Not
     * named `log`: <tgmath.h> makes that a macro.) Lines
     * below the runtime's `log` level are dropped. ctx may be NULL (before
     * init), and the line is then attributed to "module". */
    void (*log_message)(pl_host_ctx *ctx, pl_log_level level,
                        const char *fmt, ...) PL_PRINTF_LIKE(3, 4);

    /* Makes a status. The message should say what failed and why; the core
     * prefixes nothing. Returns a valid status even when out of memory (a
     * shared static one), never NULL for code != PL_CODE_OK; returns NULL for
     * PL_CODE_OK. */
    pl_status *(*status_create)(pl_code code, const char *fmt, ...)
        PL_PRINTF_LIKE(2, 3);
    /* va_list form of status_create. */
    pl_status *(*status_createv)(pl_code code, const char *fmt, va_list ap);
    /* The code of a status; PL_CODE_OK for NULL. */
    pl_code (*status_code)(const pl_status *status);
    /* The message of a status, valid until it is freed; "" for NULL. */
    const char *(*status_message)(const pl_status *status);
    /* Frees a status. NULL is a no-op. */
    void (*status_free)(pl_status *status);

    /* The value of KEY in this module's own backend.ini section, or NULL.
     * Valid until shutdown. The same keys reach configure(). */
    const char *(*config_get)(pl_host_ctx *ctx, const char *key);
    /* Number of keys in the module's section, and the I-th of them in file
     * order (NULL outputs past the end). Valid until shutdown. */
    size_t (*config_count)(pl_host_ctx *ctx);
    void (*config_at)(pl_host_ctx *ctx, size_t i, const char **out_key,
                      const char **out_value);

    /* Host memory with the given alignment (a power of two, or 0 for the
     * default of 64 bytes). NULL on failure or when bytes is 0. Memory the
     * module gives the core to free must come from here. */
    void *(*host_alloc)(pl_host_ctx *ctx, size_t bytes, size_t alignment);
    /* Frees host_alloc memory. NULL is a no-op. */
    void (*host_free)(pl_host_ctx *ctx, void *ptr);

    /* Runs fn over [0, n) in chunks of at least `grain` indices on the
     * runtime's CPU thread pool and returns when all chunks are done. The
     * caller takes part, so it is safe from inside engine work and from
     * within another parallel_for (which then runs inline). This is the only
     * CPU thread pool a module should use: it is sized by `threads`. */
    void (*parallel_for)(pl_host_ctx *ctx, size_t n, size_t grain,
                         pl_parallel_fn fn, void *arg);
    /* Number of threads parallel_for may use, the caller included (>= 1). */
    int (*thread_count)(pl_host_ctx *ctx);

    /* Signals an asynchronous completion. Takes ownership of status (NULL for
     * success). Call exactly once per completion, from any thread. */
    void (*complete)(pl_completion *completion, pl_status *status);

    /* The graph view and builder (see pl_graph_api). May be NULL. */
    const pl_graph_api *graph;
} pl_host_api;

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_HOST_H */
