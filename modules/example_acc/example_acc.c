/* example_acc: a simulated accelerator written only against sdk/, and the
 * template a vendor copies to start a module.
 *
 * The parts, in the order a vendor meets them:
 *
 *   example_acc.c (this file)
 *     - identity note and entry point: what the loader reads and calls;
 *     - life: one instance per runtime (init / shutdown);
 *     - devices and configure: the backend.ini keys `devices`, `memory_mb`
 *       (the simulated memory per device, 256 by default),
 *       `max_nodes_per_subgraph`, `fail_compile` and `latency_us`;
 *     - memory: the device's own memory space. The core holds only opaque
 *       handles — an id with a tag in the low bits, not an address — and
 *       touches the bytes only through the copy functions. Every buffer sits
 *       between guard zones that are checked on each copy, free and
 *       release_all, and new buffers are filled with the guard byte, so a
 *       test can tell when someone reads memory nobody wrote.
 *
 *   example_acc_program.c
 *     - symbolic mode: supported_nodes (MatMul, Gemm, Add, Sub, Mul, Relu on
 *       f32 with known shapes), compile (the subgraph becomes a list of
 *       instructions over tensors kept in a private 8x8-tiled layout, its
 *       weights tiled once and stored in device memory), run, and
 *       export/import of the compiled program as a versioned binary blob.
 *
 * The "device" computes on host memory behind the handles, so the core's
 * copies, memory plan and partitioning are exercised as if real hardware
 * were there. A real module would call its driver where this one calls
 * host_alloc and memcpy. */
#define _POSIX_C_SOURCE 200809L

#include "example_acc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The identity the loader reads from the file before it runs any code. The
 * name must equal the table's name and the backend.ini section. */
PL_MODULE_IDENTITY(XACC_NAME, XACC_VERSION);

#define XACC_ALIGN 64          /* default buffer alignment */
#define XACC_MAX_ALIGN 65536   /* the largest alignment mem_alloc honours */
#define XACC_GUARD 0xA5        /* guard zones and fresh contents */
#define XACC_HANDLE_TAG 0xAu   /* low four bits of every handle */

const pl_host_api *xacc_host;

/* ---- life ------------------------------------------------------------- */

/* Creates this runtime's instance. A real module would open its driver here
 * and return PL_CODE_NO_DEVICE with the reason when it finds no hardware. */
static pl_status *xacc_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    if (out_ctx == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: init without out_ctx");
    *out_ctx = NULL;
    /* Symbolic mode reads graphs through the host's graph view; an older
     * core without it cannot use this module. */
    const pl_graph_api *g = xacc_host->graph;
    if (!PL_ABI_HAS_FN(pl_graph_api, g, output) || !PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant))
        return xacc_host->status_create(PL_CODE_INCOMPATIBLE,
                                        "example_acc: the core offers no graph view "
                                        "(needs ABI 1.0 with host->graph)");
    pl_module_ctx *ctx = xacc_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory for the instance");
    memset(ctx, 0, sizeof *ctx);
    ctx->host_ctx = host_ctx;
    ctx->settings.devices = 1;
    ctx->settings.memory_mb = XACC_CAPACITY_MB;
    ctx->settings.max_nodes_per_subgraph = 64;
    ctx->next_id = 1;
    int err = pthread_mutex_init(&ctx->lock, NULL);
    if (err != 0) {
        xacc_host->host_free(host_ctx, ctx);
        return xacc_host->status_create(PL_CODE_INTERNAL,
                                        "example_acc: pthread_mutex_init failed (error %d)", err);
    }
    *out_ctx = ctx;
    return NULL;
}

/* Frees everything of the instance. The core releases compiled subgraphs
 * and frees its buffers first; anything left over is freed and reported. */
static void xacc_shutdown(pl_module_ctx *ctx)
{
    if (ctx == NULL)
        return;
    size_t leaked = ctx->n_buffers;
    while (ctx->n_buffers > 0)
        xacc_buffer_destroy(ctx, ctx->buffers[ctx->n_buffers - 1]);
    if (leaked > 0)
        xacc_host->log_message(ctx->host_ctx, PL_LOG_WARN,
                               "%zu buffers were still allocated at shutdown; freed them",
                               leaked);
    xacc_host->host_free(ctx->host_ctx, ctx->buffers);
    pthread_mutex_destroy(&ctx->lock);
    xacc_host->host_free(ctx->host_ctx, ctx);
}

/* ---- devices ---------------------------------------------------------- */

void xacc_settings_get(pl_module_ctx *ctx, struct xacc_settings *out_settings)
{
    pthread_mutex_lock(&ctx->lock);
    *out_settings = ctx->settings;
    pthread_mutex_unlock(&ctx->lock);
}

pl_status *xacc_check_device(pl_module_ctx *ctx, int device)
{
    pthread_mutex_lock(&ctx->lock);
    int devices = ctx->settings.devices;
    pthread_mutex_unlock(&ctx->lock);
    if (device < 0 || device >= devices)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: no device %d (it has %d; see `devices`)",
                                        device, devices);
    return NULL;
}

/* The number of simulated devices: the `devices` key. */
static int xacc_device_count(pl_module_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    int devices = ctx->settings.devices;
    pthread_mutex_unlock(&ctx->lock);
    return devices;
}

/* Describes DEVICE, writing only what the core's struct_size covers: an
 * older core has a shorter struct. */
static pl_status *xacc_device_properties(pl_module_ctx *ctx, int device,
                                         pl_device_properties *inout_props)
{
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (inout_props == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: device_properties without a struct");
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "Simulated accelerator %d",
                 device);
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_EXT);
    PL_ABI_SET(pl_device_properties, inout_props, compute_units, 1);
    struct xacc_settings now;
    xacc_settings_get(ctx, &now);
    PL_ABI_SET(pl_device_properties, inout_props, memory_bytes, (uint64_t)now.memory_mb << 20);
    return NULL;
}

/* ---- configure -------------------------------------------------------- */

/* Parses a decimal integer in [min, max] (max >= 0): digits only, no sign,
 * no spaces. Returns 0 for anything else. */
static int xacc_parse_int(const char *text, long long min, long long max, long long *out)
{
    if (text == NULL || *text == '\0')
        return 0;
    long long value = 0;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        int digit = *p - '0';
        if (value > max / 10 || (value == max / 10 && digit > max % 10))
            return 0;
        value = value * 10 + digit;
    }
    if (value < min)
        return 0;
    *out = value;
    return 1;
}

static pl_status *xacc_bad_value(const char *key, const char *value, const char *accepted)
{
    return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                    "example_acc: bad value '%s' for key '%s' (expected %s)",
                                    value != NULL ? value : "(null)", key, accepted);
}

/* Reports power_mode.<device> for DEVICES devices (set_power_mode). */
static void xacc_report_power(pl_module_ctx *ctx, int devices, pl_kv_sink out, void *out_ctx);

/* Validates every key first and applies them only if all are good, so a
 * failed configure changes nothing. Then reports the current settings. */
static pl_status *xacc_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                 pl_kv_sink out, void *out_ctx)
{
    if (n_in > 0 && in == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: configure with %zu keys but no array", n_in);
    struct xacc_settings next;
    xacc_settings_get(ctx, &next);
    for (size_t i = 0; i < n_in; i++) {
        const char *key = in[i].key != NULL ? in[i].key : "(null)";
        const char *value = in[i].value;
        long long number = 0;
        if (strcmp(key, "devices") == 0) {
            if (!xacc_parse_int(value, 1, XACC_MAX_DEVICES, &number))
                return xacc_bad_value(key, value, "an integer from 1 to 64");
            next.devices = (int)number;
        } else if (strcmp(key, "memory_mb") == 0) {
            if (!xacc_parse_int(value, 1, XACC_MAX_CAPACITY_MB, &number))
                return xacc_bad_value(key, value, "an integer from 1 to 1048576");
            next.memory_mb = number;
        } else if (strcmp(key, "max_nodes_per_subgraph") == 0) {
            if (!xacc_parse_int(value, 1, INT64_MAX, &number))
                return xacc_bad_value(key, value, "an integer >= 1");
            next.max_nodes_per_subgraph = number;
        } else if (strcmp(key, "latency_us") == 0) {
            /* At most an hour: a run must stay interruptible by a test. */
            if (!xacc_parse_int(value, 0, 3600000000LL, &number))
                return xacc_bad_value(key, value, "an integer from 0 to 3600000000");
            next.latency_us = number;
        } else if (strcmp(key, "fail_compile") == 0) {
            if (value == NULL || strlen(value) >= sizeof next.fail_compile)
                return xacc_bad_value(key, value, "a node name shorter than 256 bytes");
            snprintf(next.fail_compile, sizeof next.fail_compile, "%s", value);
        } else {
            return xacc_host->status_create(
                PL_CODE_INVALID_ARGUMENT,
                "example_acc: unknown key '%s' (accepted: devices, memory_mb, "
                "max_nodes_per_subgraph, fail_compile, latency_us)",
                key);
        }
    }

    /* Fewer devices must not strand memory (the core's buffers or compiled
     * weights) on the devices that go away. */
    pthread_mutex_lock(&ctx->lock);
    for (size_t i = 0; i < ctx->n_buffers; i++) {
        if (ctx->buffers[i]->device >= next.devices) {
            int device = ctx->buffers[i]->device;
            pthread_mutex_unlock(&ctx->lock);
            return xacc_host->status_create(
                PL_CODE_FAILED_PRECONDITION,
                "example_acc: cannot set devices = %d while device %d holds allocated memory",
                next.devices, device);
        }
    }
    /* Nor may less memory leave a device holding more than it has. */
    for (int d = 0; d < next.devices && d < XACC_MAX_DEVICES; d++) {
        if (ctx->used_bytes[d] > ((uint64_t)next.memory_mb << 20)) {
            unsigned long long used = (unsigned long long)ctx->used_bytes[d];
            pthread_mutex_unlock(&ctx->lock);
            return xacc_host->status_create(
                PL_CODE_FAILED_PRECONDITION,
                "example_acc: cannot set memory_mb = %lld while device %d holds %llu bytes",
                next.memory_mb, d, used);
        }
    }
    ctx->settings = next;
    pthread_mutex_unlock(&ctx->lock);

    if (out != NULL) {
        char text[32];
        snprintf(text, sizeof text, "%d", next.devices);
        out(out_ctx, "devices", text);
        snprintf(text, sizeof text, "%lld", next.memory_mb);
        out(out_ctx, "memory_mb", text);
        snprintf(text, sizeof text, "%lld", next.max_nodes_per_subgraph);
        out(out_ctx, "max_nodes_per_subgraph", text);
        out(out_ctx, "fail_compile", next.fail_compile);
        snprintf(text, sizeof text, "%lld", next.latency_us);
        out(out_ctx, "latency_us", text);
        xacc_report_power(ctx, next.devices, out, out_ctx);
    }
    return NULL;
}

/* ---- vendor functions (ABI 1.4) -----------------------------------------
 *
 * What a real driver would expose beyond the ABI: a power mode per device
 * and a temperature sensor. An application reaches them by name through
 * the core (pl_runtime_call, `plinth call example_acc set_power_mode 0
 * low_power`, Python's rt.call); the signature strings tell the core how
 * to marshal the call, and the first parameter is always the instance. */

static const char *const xacc_power_modes[] = {"balanced", "performance", "low_power"};
#define XACC_N_POWER_MODES (sizeof xacc_power_modes / sizeof xacc_power_modes[0])

/* "i(is)": 0 on success, -1 for a device the instance lacks or a mode it
 * does not know (the mode is unchanged then). */
static int32_t xacc_set_power_mode(pl_module_ctx *ctx, int32_t device, const char *mode)
{
    struct xacc_settings now;
    xacc_settings_get(ctx, &now);
    if (device < 0 || device >= now.devices || mode == NULL)
        return -1;
    for (size_t i = 0; i < XACC_N_POWER_MODES; i++)
        if (strcmp(mode, xacc_power_modes[i]) == 0) {
            pthread_mutex_lock(&ctx->lock);
            ctx->power_mode[device] = (int)i;
            pthread_mutex_unlock(&ctx->lock);
            return 0;
        }
    return -1;
}

/* "d(i)": the simulated die temperature of DEVICE in degrees Celsius
 * (lower in low_power), or -1 for a device the instance lacks. */
static double xacc_temperature_c(pl_module_ctx *ctx, int32_t device)
{
    struct xacc_settings now;
    xacc_settings_get(ctx, &now);
    if (device < 0 || device >= now.devices)
        return -1.0;
    pthread_mutex_lock(&ctx->lock);
    int mode = ctx->power_mode[device];
    pthread_mutex_unlock(&ctx->lock);
    return 45.0 + device + (mode == 1 ? 15.0 : mode == 2 ? -10.0 : 0.0);
}

static const pl_extension xacc_extension_list[] = {
    {"set_power_mode", "i(is)", (void (*)(void))xacc_set_power_mode},
    {"temperature_c", "d(i)", (void (*)(void))xacc_temperature_c},
};

static void xacc_report_power(pl_module_ctx *ctx, int devices, pl_kv_sink out, void *out_ctx)
{
    for (int d = 0; d < devices && d < XACC_MAX_DEVICES; d++) {
        char key[32];
        snprintf(key, sizeof key, "power_mode.%d", d);
        pthread_mutex_lock(&ctx->lock);
        int mode = ctx->power_mode[d];
        pthread_mutex_unlock(&ctx->lock);
        out(out_ctx, key, xacc_power_modes[mode]);
    }
}

static const pl_extension *xacc_extensions(pl_module_ctx *ctx, size_t *out_n)
{
    (void)ctx;
    *out_n = sizeof xacc_extension_list / sizeof xacc_extension_list[0];
    return xacc_extension_list;
}

/* ---- memory ------------------------------------------------------------
 *
 * Handles. mem_alloc returns (void *)((id << 4) | 0xA): a number, not an
 * address. The instance keeps its live buffers in a table sorted by id and
 * looks every handle up there, so a stale, foreign or forged handle is
 * refused with a message, and a core that dereferenced one would fault at
 * once (a small, odd, unmapped address) instead of silently reading host
 * memory. A real driver's handles are device addresses; the rule that the
 * core never dereferences them is the same. */

static void *xacc_handle_of(uint64_t id)
{
    return (void *)(uintptr_t)((id << 4) | XACC_HANDLE_TAG);
}

/* The id a handle encodes, or 0 when it cannot be one of ours. */
static uint64_t xacc_id_of(const void *handle)
{
    uintptr_t h = (uintptr_t)handle;
    return (h & 0xFu) == XACC_HANDLE_TAG ? (uint64_t)(h >> 4) : 0;
}

/* Index of the buffer with ID in the sorted table, or n_buffers. Caller
 * holds ctx->lock. */
static size_t xacc_find_locked(const pl_module_ctx *ctx, uint64_t id)
{
    size_t lo = 0, hi = ctx->n_buffers;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ctx->buffers[mid]->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ctx->n_buffers && ctx->buffers[lo]->id == id ? lo : ctx->n_buffers;
}

static unsigned char *xacc_guard_before(const struct xacc_buffer *b)
{
    return b->bytes - b->guard;
}

pl_status *xacc_buffer_check_guards(const struct xacc_buffer *b)
{
    const unsigned char *before = xacc_guard_before(b);
    const unsigned char *after = b->bytes + b->size;
    for (size_t i = 0; i < b->guard; i++)
        if (before[i] != XACC_GUARD || after[i] != XACC_GUARD)
            return xacc_host->status_create(
                PL_CODE_DEVICE_ERROR,
                "example_acc: guard zone of buffer %llu damaged: someone wrote outside it",
                (unsigned long long)b->id);
    return NULL;
}

pl_status *xacc_buffer_create(pl_module_ctx *ctx, int device, size_t bytes, size_t alignment,
                              int internal, struct xacc_buffer **out_buffer)
{
    *out_buffer = NULL;
    if ((alignment & (alignment - 1)) != 0 || alignment > XACC_MAX_ALIGN)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: bad alignment %zu (a power of two up to "
                                        "%d, or 0)",
                                        alignment, XACC_MAX_ALIGN);
    /* The guard zones are as large as the alignment, so the contents that
     * follow the first one stay aligned. */
    size_t guard = alignment > XACC_ALIGN ? alignment : XACC_ALIGN;

    /* Reserve the bytes first, so two threads cannot both take the last of
     * the capacity. */
    pthread_mutex_lock(&ctx->lock);
    int devices = ctx->settings.devices;
    uint64_t capacity = (uint64_t)ctx->settings.memory_mb << 20;
    pl_status *status = NULL;
    if (device < 0 || device >= devices)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: no device %d (it has %d; see `devices`)",
                                          device, devices);
    else if (bytes > capacity - ctx->used_bytes[device])
        status = xacc_host->status_create(
            PL_CODE_OUT_OF_MEMORY,
            "example_acc: device %d out of memory: %zu bytes requested, %llu of %llu in use",
            device, bytes, (unsigned long long)ctx->used_bytes[device],
            (unsigned long long)capacity);
    else
        ctx->used_bytes[device] += bytes;
    pthread_mutex_unlock(&ctx->lock);
    if (status != NULL)
        return status;

    /* bytes <= the capacity (at most 1 TiB) here, so the sum cannot overflow. */
    struct xacc_buffer *b = xacc_host->host_alloc(ctx->host_ctx, sizeof *b, 0);
    unsigned char *base = xacc_host->host_alloc(ctx->host_ctx, guard + bytes + guard, guard);
    if (b == NULL || base == NULL) {
        xacc_host->host_free(ctx->host_ctx, b);
        xacc_host->host_free(ctx->host_ctx, base);
        pthread_mutex_lock(&ctx->lock);
        ctx->used_bytes[device] -= bytes;
        pthread_mutex_unlock(&ctx->lock);
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of host memory backing %zu bytes "
                                        "of device %d",
                                        bytes, device);
    }
    /* Guards and contents alike: uninitialised device memory is never
     * zero, so nobody comes to rely on it being so. */
    memset(base, XACC_GUARD, guard + bytes + guard);
    b->device = device;
    b->internal = internal;
    b->size = bytes;
    b->guard = guard;
    b->bytes = base + guard;

    pthread_mutex_lock(&ctx->lock);
    if (ctx->n_buffers == ctx->cap_buffers) {
        size_t cap = ctx->cap_buffers ? 2 * ctx->cap_buffers : 16;
        struct xacc_buffer **grown =
            xacc_host->host_alloc(ctx->host_ctx, cap * sizeof *grown, 0);
        if (grown == NULL) {
            ctx->used_bytes[device] -= bytes;
            pthread_mutex_unlock(&ctx->lock);
            xacc_host->host_free(ctx->host_ctx, base);
            xacc_host->host_free(ctx->host_ctx, b);
            return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                            "example_acc: out of memory for the buffer table");
        }
        if (ctx->n_buffers > 0)
            memcpy(grown, ctx->buffers, ctx->n_buffers * sizeof *grown);
        xacc_host->host_free(ctx->host_ctx, ctx->buffers);
        ctx->buffers = grown;
        ctx->cap_buffers = cap;
    }
    /* Ids only grow, so appending keeps the table sorted and a freed id is
     * never handed out again: a stale handle stays stale. */
    b->id = ctx->next_id++;
    ctx->buffers[ctx->n_buffers++] = b;
    pthread_mutex_unlock(&ctx->lock);
    *out_buffer = b;
    return NULL;
}

/* Removes B from the table. Caller holds ctx->lock. */
static void xacc_unlink_locked(pl_module_ctx *ctx, const struct xacc_buffer *b)
{
    size_t i = xacc_find_locked(ctx, b->id);
    if (i == ctx->n_buffers)
        return;
    memmove(&ctx->buffers[i], &ctx->buffers[i + 1],
            (ctx->n_buffers - i - 1) * sizeof ctx->buffers[0]);
    ctx->n_buffers--;
    ctx->used_bytes[b->device] -= b->size;
}

/* Frees a buffer already unlinked, reporting a damaged guard in the log
 * (freeing cannot fail). */
static void xacc_buffer_free_unlinked(pl_module_ctx *ctx, struct xacc_buffer *b)
{
    pl_status *damaged = xacc_buffer_check_guards(b);
    if (damaged != NULL) {
        xacc_host->log_message(ctx->host_ctx, PL_LOG_ERROR, "%s",
                               xacc_host->status_message(damaged));
        xacc_host->status_free(damaged);
    }
    xacc_host->host_free(ctx->host_ctx, xacc_guard_before(b));
    xacc_host->host_free(ctx->host_ctx, b);
}

void xacc_buffer_destroy(pl_module_ctx *ctx, struct xacc_buffer *buffer)
{
    if (buffer == NULL)
        return;
    pthread_mutex_lock(&ctx->lock);
    xacc_unlink_locked(ctx, buffer);
    pthread_mutex_unlock(&ctx->lock);
    xacc_buffer_free_unlinked(ctx, buffer);
}

/* Allocates a buffer for the core and answers with its handle. */
static pl_status *xacc_mem_alloc(pl_module_ctx *ctx, int device, size_t bytes,
                                 size_t alignment, void **out_ptr)
{
    if (out_ptr == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: mem_alloc without out_ptr");
    *out_ptr = NULL;
    struct xacc_buffer *b;
    pl_status *status = xacc_buffer_create(ctx, device, bytes, alignment, 0, &b);
    if (status != NULL)
        return status;
    *out_ptr = xacc_handle_of(b->id);
    return NULL;
}

/* Frees the buffer behind PTR. A handle that is not a live buffer of the
 * core's on DEVICE is logged and left alone: mem_free cannot fail. */
static void xacc_mem_free(pl_module_ctx *ctx, int device, void *ptr)
{
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&ctx->lock);
    size_t i = xacc_find_locked(ctx, xacc_id_of(ptr));
    struct xacc_buffer *b = i < ctx->n_buffers ? ctx->buffers[i] : NULL;
    int ok = b != NULL && !b->internal && b->device == device;
    if (ok)
        xacc_unlink_locked(ctx, b);
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        xacc_host->log_message(ctx->host_ctx, PL_LOG_ERROR,
                               "mem_free: %p is not a live buffer of device %d; ignored", ptr,
                               device);
        return;
    }
    xacc_buffer_free_unlinked(ctx, b);
}

/* Frees every buffer of the core's still allocated on DEVICE. The module's
 * own buffers (compiled weights, scratch) belong to compiled subgraphs and
 * go with them. */
static void xacc_mem_release_all(pl_module_ctx *ctx, int device)
{
    for (;;) {
        struct xacc_buffer *doomed = NULL;
        pthread_mutex_lock(&ctx->lock);
        for (size_t i = 0; i < ctx->n_buffers && doomed == NULL; i++)
            if (ctx->buffers[i]->device == device && !ctx->buffers[i]->internal)
                doomed = ctx->buffers[i];
        if (doomed != NULL)
            xacc_unlink_locked(ctx, doomed);
        pthread_mutex_unlock(&ctx->lock);
        if (doomed == NULL)
            return;
        xacc_buffer_free_unlinked(ctx, doomed);
    }
}

pl_status *xacc_resolve(pl_module_ctx *ctx, const char *what, int device, const void *handle,
                        uint64_t offset, size_t bytes, unsigned char **out_bytes)
{
    *out_bytes = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    /* A zero-element tensor may come with no buffer at all (module.h):
     * nothing is read or written, so any address will do. */
    static unsigned char nothing;
    if (handle == NULL && bytes == 0) {
        *out_bytes = &nothing;
        return NULL;
    }
    pthread_mutex_lock(&ctx->lock);
    size_t i = xacc_find_locked(ctx, xacc_id_of(handle));
    struct xacc_buffer *b = i < ctx->n_buffers ? ctx->buffers[i] : NULL;
    if (b == NULL || b->internal)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: %s: %p is not a live buffer", what,
                                          handle);
    else if (b->device != device)
        status = xacc_host->status_create(
            PL_CODE_INVALID_ARGUMENT, "example_acc: %s: buffer %llu lives on device %d, not %d",
            what, (unsigned long long)b->id, b->device, device);
    /* Written so that offset + bytes cannot overflow. */
    else if (offset > b->size || bytes > b->size - offset)
        status = xacc_host->status_create(
            PL_CODE_INVALID_ARGUMENT,
            "example_acc: %s: %zu bytes at offset %llu overrun buffer %llu of %zu bytes", what,
            bytes, (unsigned long long)offset, (unsigned long long)b->id, b->size);
    pthread_mutex_unlock(&ctx->lock);
    if (status == NULL)
        status = xacc_buffer_check_guards(b);
    if (status == NULL)
        *out_bytes = b->bytes + offset;
    return status;
}

void xacc_sleep_us(long long us)
{
    if (us <= 0)
        return;
    struct timespec left = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

/* Host to device: DST is a handle, DST_OFFSET bytes into it. */
static pl_status *xacc_copy_to_device(pl_module_ctx *ctx, int device, void *dst,
                                      size_t dst_offset, const void *src_host, size_t bytes)
{
    if (bytes > 0 && src_host == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: copy_to_device from a NULL host pointer");
    unsigned char *to;
    pl_status *status = xacc_resolve(ctx, "copy_to_device", device, dst, dst_offset, bytes, &to);
    if (status != NULL)
        return status;
    if (bytes > 0)
        memcpy(to, src_host, bytes);
    return NULL;
}

/* Device to host: SRC is a handle, SRC_OFFSET bytes into it. */
static pl_status *xacc_copy_to_host(pl_module_ctx *ctx, int device, void *dst_host,
                                    const void *src, size_t src_offset, size_t bytes)
{
    if (bytes > 0 && dst_host == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: copy_to_host to a NULL host pointer");
    unsigned char *from;
    pl_status *status =
        xacc_resolve(ctx, "copy_to_host", device, src, src_offset, bytes, &from);
    if (status != NULL)
        return status;
    if (bytes > 0)
        memcpy(dst_host, from, bytes);
    return NULL;
}

/* Device to device, within one device or across two. */
static pl_status *xacc_copy_device_to_device(pl_module_ctx *ctx, int src_device,
                                             const void *src, size_t src_offset, int dst_device,
                                             void *dst, size_t dst_offset, size_t bytes)
{
    unsigned char *from, *to;
    pl_status *status = xacc_resolve(ctx, "copy_device_to_device (source)", src_device, src,
                                     src_offset, bytes, &from);
    if (status == NULL)
        status = xacc_resolve(ctx, "copy_device_to_device (destination)", dst_device, dst,
                              dst_offset, bytes, &to);
    if (status != NULL)
        return status;
    /* memmove: source and destination may be ranges of the same buffer. */
    if (bytes > 0)
        memmove(to, from, bytes);
    return NULL;
}

/* ---- the table and the entry point ------------------------------------ */

/* One static, constant table. Every function a capability flag names is
 * filled in; the rest (imperative mode, async, model import) stay NULL. */
static const pl_module_api xacc_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = XACC_NAME,
    .version = XACC_VERSION,
    .vendor = "Plinth example",
    .capabilities = PL_CAP_SYMBOLIC | PL_CAP_EXPORT | PL_CAP_OWNS_CONSTANTS,
    .init = xacc_init,
    .shutdown = xacc_shutdown,
    .device_count = xacc_device_count,
    .device_properties = xacc_device_properties,
    .configure = xacc_configure,
    .mem_alloc = xacc_mem_alloc,
    .mem_free = xacc_mem_free,
    .mem_release_all = xacc_mem_release_all,
    .copy_to_device = xacc_copy_to_device,
    .copy_to_host = xacc_copy_to_host,
    .copy_device_to_device = xacc_copy_device_to_device,
    .supported_nodes = xacc_supported_nodes,
    .compile = xacc_compile,
    .run = xacc_run,
    .release = xacc_release,
    .export_compiled = xacc_export_compiled,
    .import_compiled = xacc_import_compiled,
    .extensions = xacc_extensions,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). */
PL_MODULE_DEFINE_ENTRY(xacc_host, xacc_api);
