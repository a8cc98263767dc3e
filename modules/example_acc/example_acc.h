/* example_acc.h — what the two halves of example_acc share: the instance,
 * its settings, and the simulated device memory that both the core's
 * buffers and the module's own (compiled weights, run scratch) live in.
 *
 * Internal to the module. The module is built with hidden visibility, so
 * nothing declared here leaves the .so; these functions are not `static`
 * only because two source files use them. Everything here is thread-safe
 * unless it says otherwise. */
#ifndef XACC_EXAMPLE_ACC_H
#define XACC_EXAMPLE_ACC_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <plinth/module.h>

#define XACC_NAME "example_acc"
#define XACC_VERSION "0.2.0"

#define XACC_MAX_DEVICES 64
#define XACC_CAPACITY_MB 256                /* simulated memory per device, default */
#define XACC_MAX_CAPACITY_MB (1 << 20)      /* `memory_mb` at most 1 TiB */
#define XACC_NODE_NAME_MAX 256              /* fail_compile, NUL included */

/* The host table handed to pl_module_entry: one static table of the core,
 * valid until the module is unloaded, shared by every instance. */
extern const pl_host_api *xacc_host;

/* The backend.ini keys this module accepts, with their current values. */
struct xacc_settings {
    int devices;                           /* `devices`, 1..64 */
    long long memory_mb;                   /* `memory_mb`: each device's memory */
    long long max_nodes_per_subgraph;      /* >= 1; compile refuses more */
    long long latency_us;                  /* >= 0; slept by every run */
    char fail_compile[XACC_NODE_NAME_MAX]; /* compile fails at this node */
};

/* One buffer of simulated device memory. Its contents sit between two guard
 * zones filled with XACC_GUARD; a damaged zone means someone wrote outside
 * the buffer. The core knows a buffer only by its handle (an id, see
 * example_acc.c), never by this struct's address. */
struct xacc_buffer {
    uint64_t id;          /* names the buffer in messages and its handle */
    int device;           /* the device it was allocated on */
    int internal;         /* 1: the module's own; the core cannot name it */
    size_t size;          /* bytes of contents */
    size_t guard;         /* bytes of each guard zone */
    unsigned char *bytes; /* the contents; guard zones on both sides */
};

/* One runtime's instance, made by init and freed by shutdown. `lock` guards
 * the settings and the buffer table: memory calls arrive from several engine
 * workers at once, and configure may replace the settings meanwhile. */
struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    pthread_mutex_t lock;
    struct xacc_settings settings;
    struct xacc_buffer **buffers; /* live buffers, sorted by id */
    size_t n_buffers;
    size_t cap_buffers;
    uint64_t next_id;
    uint64_t used_bytes[XACC_MAX_DEVICES];
    int power_mode[XACC_MAX_DEVICES]; /* an index into xacc_power_modes */
};

/* A copy of the current settings (they may change while a call runs). */
void xacc_settings_get(pl_module_ctx *ctx, struct xacc_settings *out_settings);

/* NULL when DEVICE is one of the instance's devices, else a status. */
pl_status *xacc_check_device(pl_module_ctx *ctx, int device);

/* Makes a buffer of BYTES on DEVICE, contents filled with the guard byte.
 * INTERNAL buffers belong to the module (weights, scratch): they get no
 * handle the core may use and mem_release_all leaves them alone. */
pl_status *xacc_buffer_create(pl_module_ctx *ctx, int device, size_t bytes,
                              size_t alignment, int internal,
                              struct xacc_buffer **out_buffer);

/* Checks the guard zones of BUFFER, then frees it. NULL is a no-op. */
void xacc_buffer_destroy(pl_module_ctx *ctx, struct xacc_buffer *buffer);

/* NULL when both guard zones of BUFFER are intact, else a status naming the
 * buffer. */
pl_status *xacc_buffer_check_guards(const struct xacc_buffer *buffer);

/* Resolves a handle the core passed (mem_alloc's) on DEVICE and checks that
 * [offset, offset + bytes) lies inside it and that its guards are intact.
 * *out_bytes points at byte OFFSET of the contents. WHAT names the call in
 * messages. The pointer stays valid until the core frees the buffer. */
pl_status *xacc_resolve(pl_module_ctx *ctx, const char *what, int device,
                        const void *handle, uint64_t offset, size_t bytes,
                        unsigned char **out_bytes);

/* Sleeps US microseconds, as a real device's work would take. */
void xacc_sleep_us(long long us);

/* The symbolic half (example_acc_program.c), named in the module table. */
pl_status *xacc_supported_nodes(pl_module_ctx *ctx, int device,
                                const pl_graph_view *graph,
                                pl_support_sink sink, void *sink_ctx);
pl_status *xacc_compile(pl_module_ctx *ctx, int device,
                        const pl_graph_view *subgraph,
                        pl_compiled **out_compiled);
pl_status *xacc_run(pl_module_ctx *ctx, pl_compiled *compiled,
                    const pl_run_args *args);
void xacc_release(pl_module_ctx *ctx, pl_compiled *compiled);
pl_status *xacc_export_compiled(pl_module_ctx *ctx, pl_compiled *compiled,
                                pl_blob_sink sink, void *sink_ctx);
pl_status *xacc_import_compiled(pl_module_ctx *ctx, int device,
                                const pl_graph_view *subgraph,
                                const void *blob, size_t blob_bytes,
                                pl_compiled **out_compiled);

#endif /* XACC_EXAMPLE_ACC_H */
