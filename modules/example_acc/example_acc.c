/* example_acc: a simulated accelerator written only against sdk/, and the
 * template a vendor copies to start a module. It shows the parts every
 * accelerator module has: the identity note and the entry point, one instance
 * per runtime, configuration keys from backend.ini, devices, and device
 * memory that the core handles only through opaque handles. Its "devices"
 * are host memory behind a handle, with a capacity, a guard pattern and
 * strict checks, so the core's copies and memory plan are exercised as if a
 * real device were there.
 *
 * Symbolic mode (supported_nodes, compile, run) needs the read-only graph
 * view of the host table. ABI 1.0 reserves that table without functions, so
 * for now this module honestly refuses every graph; compile and run arrive
 * with the graph view. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <plinth/module.h>

#define XACC_NAME "example_acc"
#define XACC_VERSION "0.1.0"

/* The identity the loader reads from the file before it runs any code. The
 * name must equal the table's name and the backend.ini section. */
PL_MODULE_IDENTITY(XACC_NAME, XACC_VERSION);

#define XACC_MAX_DEVICES 64
#define XACC_CAPACITY ((uint64_t)256 << 20) /* simulated memory per device */
#define XACC_ALIGN 64                        /* default buffer alignment */
#define XACC_GUARD 0xA5                      /* fills every new buffer */
#define XACC_MAGIC 0x43434158u               /* "XACC", a live buffer */
#define XACC_MAGIC_FREED 0x44454546u         /* "FEED", a freed one */
#define XACC_NODE_NAME_MAX 256               /* fail_compile, NUL included */

/* The host table handed to pl_module_entry: one static table of the core,
 * valid until the module is unloaded, shared by every instance. */
static const pl_host_api *xacc_host;

/* One buffer of simulated device memory. A pointer to it is the handle the
 * core holds; the core never dereferences it. */
struct xacc_buffer {
    uint32_t magic;           /* XACC_MAGIC while allocated */
    int device;               /* the device it was allocated on */
    size_t size;              /* bytes the caller asked for */
    unsigned char *bytes;     /* the contents, in the same allocation */
    struct xacc_buffer *prev; /* the instance's list of live buffers */
    struct xacc_buffer *next;
};

/* The backend.ini keys this module accepts, with their current values. */
struct xacc_settings {
    int devices;                             /* `devices`, 1..64 */
    long long max_nodes_per_subgraph;        /* >= 1; steers supported_nodes */
    long long latency_us;                    /* >= 0; added to every transfer */
    char fail_compile[XACC_NODE_NAME_MAX];   /* compile fails on this node */
};

/* One runtime's instance, made by init and freed by shutdown. Memory calls
 * may come from several threads at once; `lock` guards the buffer list and
 * the byte counts, and the settings while configure replaces them (the core
 * serialises configure calls, but memory calls may run meanwhile). */
struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    struct xacc_settings settings;
    pthread_mutex_t lock;
    struct xacc_buffer *buffers;
    uint64_t used_bytes[XACC_MAX_DEVICES];
};

static pl_status *xacc_check_device(pl_module_ctx *ctx, int device)
{
    if (device < 0 || device >= ctx->settings.devices)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: no device %d (it has %d; see `devices`)",
                                        device, ctx->settings.devices);
    return NULL;
}

/* ---- life ------------------------------------------------------------- */

static pl_status *xacc_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    if (out_ctx == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: init without out_ctx");
    *out_ctx = NULL;
    pl_module_ctx *ctx = xacc_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of memory for the instance");
    memset(ctx, 0, sizeof *ctx);
    ctx->host_ctx = host_ctx;
    ctx->settings.devices = 1;
    ctx->settings.max_nodes_per_subgraph = 64;
    int err = pthread_mutex_init(&ctx->lock, NULL);
    if (err != 0) {
        xacc_host->host_free(host_ctx, ctx);
        return xacc_host->status_create(PL_CODE_INTERNAL,
                                        "example_acc: pthread_mutex_init failed (error %d)", err);
    }
    /* A real module would open its driver here and return PL_CODE_NO_DEVICE
     * with the reason ("driver not loaded") when it finds no hardware. */
    *out_ctx = ctx;
    return NULL;
}

static void xacc_buffer_destroy(pl_module_ctx *ctx, struct xacc_buffer *buffer)
{
    buffer->magic = XACC_MAGIC_FREED;
    xacc_host->host_free(ctx->host_ctx, buffer);
}

static void xacc_shutdown(pl_module_ctx *ctx)
{
    if (ctx == NULL)
        return;
    size_t leaked = 0;
    while (ctx->buffers != NULL) {
        struct xacc_buffer *buffer = ctx->buffers;
        ctx->buffers = buffer->next;
        xacc_buffer_destroy(ctx, buffer);
        leaked++;
    }
    if (leaked > 0)
        xacc_host->log_message(ctx->host_ctx, PL_LOG_WARN,
                       "%zu buffers were still allocated at shutdown; freed them", leaked);
    pthread_mutex_destroy(&ctx->lock);
    xacc_host->host_free(ctx->host_ctx, ctx);
}

/* ---- devices ---------------------------------------------------------- */

static int xacc_device_count(pl_module_ctx *ctx)
{
    return ctx->settings.devices;
}

static pl_status *xacc_device_properties(pl_module_ctx *ctx, int device,
                                         pl_device_properties *inout_props)
{
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (inout_props == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: device_properties without a struct");
    /* Write only what the core's struct_size covers: an older core has a
     * shorter struct. */
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "Simulated accelerator %d",
                 device);
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_EXT);
    PL_ABI_SET(pl_device_properties, inout_props, memory_bytes, XACC_CAPACITY);
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

/* Validates every key first and applies them only if all are good, so a
 * failed configure changes nothing. Then reports the current settings. */
static pl_status *xacc_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                 pl_kv_sink out, void *out_ctx)
{
    if (n_in > 0 && in == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: configure with %zu keys but no array", n_in);
    struct xacc_settings next = ctx->settings;
    for (size_t i = 0; i < n_in; i++) {
        const char *key = in[i].key != NULL ? in[i].key : "(null)";
        const char *value = in[i].value;
        long long number = 0;
        if (strcmp(key, "devices") == 0) {
            if (!xacc_parse_int(value, 1, XACC_MAX_DEVICES, &number))
                return xacc_bad_value(key, value, "an integer from 1 to 64");
            next.devices = (int)number;
        } else if (strcmp(key, "max_nodes_per_subgraph") == 0) {
            if (!xacc_parse_int(value, 1, INT64_MAX, &number))
                return xacc_bad_value(key, value, "an integer >= 1");
            next.max_nodes_per_subgraph = number;
        } else if (strcmp(key, "latency_us") == 0) {
            if (!xacc_parse_int(value, 0, INT64_MAX, &number))
                return xacc_bad_value(key, value, "an integer >= 0");
            next.latency_us = number;
        } else if (strcmp(key, "fail_compile") == 0) {
            if (value == NULL || strlen(value) >= sizeof next.fail_compile)
                return xacc_bad_value(key, value, "a node name shorter than 256 bytes");
            snprintf(next.fail_compile, sizeof next.fail_compile, "%s", value);
        } else {
            return xacc_host->status_create(
                PL_CODE_INVALID_ARGUMENT,
                "example_acc: unknown key '%s' (accepted: devices, max_nodes_per_subgraph, "
                "fail_compile, latency_us)",
                key);
        }
    }

    /* Fewer devices must not strand buffers on the devices that go away. */
    pthread_mutex_lock(&ctx->lock);
    for (const struct xacc_buffer *b = ctx->buffers; b != NULL; b = b->next) {
        if (b->device >= next.devices) {
            int device = b->device;
            pthread_mutex_unlock(&ctx->lock);
            return xacc_host->status_create(
                PL_CODE_FAILED_PRECONDITION,
                "example_acc: cannot set devices = %d while device %d holds allocated memory",
                next.devices, device);
        }
    }
    ctx->settings = next;
    pthread_mutex_unlock(&ctx->lock);

    if (out != NULL) {
        char text[32];
        snprintf(text, sizeof text, "%d", next.devices);
        out(out_ctx, "devices", text);
        snprintf(text, sizeof text, "%lld", next.max_nodes_per_subgraph);
        out(out_ctx, "max_nodes_per_subgraph", text);
        out(out_ctx, "fail_compile", next.fail_compile);
        snprintf(text, sizeof text, "%lld", next.latency_us);
        out(out_ctx, "latency_us", text);
    }
    return NULL;
}

/* ---- memory ----------------------------------------------------------- */

/* Waits `latency_us`, as a real transfer would. */
static void xacc_simulate_latency(const pl_module_ctx *ctx)
{
    long long us = ctx->settings.latency_us;
    if (us <= 0)
        return;
    struct timespec left = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

static pl_status *xacc_mem_alloc(pl_module_ctx *ctx, int device, size_t bytes,
                                 size_t alignment, void **out_ptr)
{
    if (out_ptr == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: mem_alloc without out_ptr");
    *out_ptr = NULL;
    if ((alignment & (alignment - 1)) != 0 || alignment > XACC_CAPACITY)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: bad alignment %zu (a power of two up to "
                                        "the device capacity, or 0)",
                                        alignment);
    size_t align = alignment > XACC_ALIGN ? alignment : XACC_ALIGN;
    size_t header = (sizeof(struct xacc_buffer) + align - 1) & ~(align - 1);

    /* Reserve the bytes first, so two threads cannot both take the last of
     * the capacity. */
    pthread_mutex_lock(&ctx->lock);
    pl_status *status = xacc_check_device(ctx, device);
    if (status == NULL && bytes > XACC_CAPACITY - ctx->used_bytes[device])
        status = xacc_host->status_create(
            PL_CODE_OUT_OF_MEMORY,
            "example_acc: device %d out of memory: %zu bytes requested, %llu of %llu in use",
            device, bytes, (unsigned long long)ctx->used_bytes[device],
            (unsigned long long)XACC_CAPACITY);
    if (status == NULL)
        ctx->used_bytes[device] += bytes;
    pthread_mutex_unlock(&ctx->lock);
    if (status != NULL)
        return status;

    /* bytes <= XACC_CAPACITY here, so the sum cannot overflow. A zero-byte
     * buffer still gets a distinct handle. */
    struct xacc_buffer *buffer =
        xacc_host->host_alloc(ctx->host_ctx, header + (bytes > 0 ? bytes : 1), align);
    if (buffer == NULL) {
        pthread_mutex_lock(&ctx->lock);
        ctx->used_bytes[device] -= bytes;
        pthread_mutex_unlock(&ctx->lock);
        return xacc_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "example_acc: out of host memory backing %zu bytes "
                                        "of device %d",
                                        bytes, device);
    }
    buffer->magic = XACC_MAGIC;
    buffer->device = device;
    buffer->size = bytes;
    buffer->bytes = (unsigned char *)buffer + header;
    /* Uninitialised device memory is never zero, so that nobody comes to
     * rely on it being so. */
    memset(buffer->bytes, XACC_GUARD, bytes);

    pthread_mutex_lock(&ctx->lock);
    buffer->prev = NULL;
    buffer->next = ctx->buffers;
    if (ctx->buffers != NULL)
        ctx->buffers->prev = buffer;
    ctx->buffers = buffer;
    pthread_mutex_unlock(&ctx->lock);
    *out_ptr = buffer;
    return NULL;
}

/* Finds HANDLE among the live buffers. Caller holds ctx->lock. Walking the
 * list (rather than trusting the pointer) makes a stale or foreign handle
 * safe to reject; a real driver would look it up in its own table. */
static struct xacc_buffer *xacc_find_locked(pl_module_ctx *ctx, const void *handle)
{
    for (struct xacc_buffer *b = ctx->buffers; b != NULL; b = b->next)
        if (b == handle)
            return b;
    return NULL;
}

static void xacc_unlink_locked(pl_module_ctx *ctx, struct xacc_buffer *buffer)
{
    if (buffer->prev != NULL)
        buffer->prev->next = buffer->next;
    else
        ctx->buffers = buffer->next;
    if (buffer->next != NULL)
        buffer->next->prev = buffer->prev;
    ctx->used_bytes[buffer->device] -= buffer->size;
}

static void xacc_mem_free(pl_module_ctx *ctx, int device, void *ptr)
{
    if (ptr == NULL)
        return;
    pthread_mutex_lock(&ctx->lock);
    struct xacc_buffer *buffer = xacc_find_locked(ctx, ptr);
    int ok = buffer != NULL && buffer->magic == XACC_MAGIC && buffer->device == device;
    if (ok)
        xacc_unlink_locked(ctx, buffer);
    pthread_mutex_unlock(&ctx->lock);
    if (!ok) {
        /* mem_free cannot fail, so a bad handle is logged and left alone. */
        xacc_host->log_message(ctx->host_ctx, PL_LOG_ERROR,
                       "mem_free: %p is not a live buffer of device %d; ignored", ptr, device);
        return;
    }
    xacc_buffer_destroy(ctx, buffer);
}

/* Frees every buffer of DEVICE that is still allocated. */
static void xacc_mem_release_all(pl_module_ctx *ctx, int device)
{
    struct xacc_buffer *doomed = NULL;
    pthread_mutex_lock(&ctx->lock);
    struct xacc_buffer *b = ctx->buffers;
    while (b != NULL) {
        struct xacc_buffer *next = b->next;
        if (b->device == device) {
            xacc_unlink_locked(ctx, b);
            b->next = doomed;
            doomed = b;
        }
        b = next;
    }
    pthread_mutex_unlock(&ctx->lock);
    while (doomed != NULL) {
        struct xacc_buffer *next = doomed->next;
        xacc_buffer_destroy(ctx, doomed);
        doomed = next;
    }
}

/* Checks that HANDLE is a live buffer of DEVICE and that [offset, offset +
 * bytes) lies inside it; on success *out_buffer is the buffer. WHAT names
 * the call for the message. */
static pl_status *xacc_check_range(pl_module_ctx *ctx, const char *what, int device,
                                   const void *handle, size_t offset, size_t bytes,
                                   struct xacc_buffer **out_buffer)
{
    *out_buffer = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    pthread_mutex_lock(&ctx->lock);
    struct xacc_buffer *buffer = xacc_find_locked(ctx, handle);
    if (buffer == NULL)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: %s: %p is not a live buffer", what,
                                          handle);
    /* The lookup proves the pointer is ours; the magic catches a header
     * overwritten through a stray write. */
    else if (buffer->magic != XACC_MAGIC)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: %s: buffer %p is corrupt (magic 0x%08x)",
                                          what, handle, (unsigned)buffer->magic);
    else if (buffer->device != device)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: %s: buffer %p lives on device %d, not %d",
                                          what, handle, buffer->device, device);
    /* Written so that offset + bytes cannot overflow. */
    else if (offset > buffer->size || bytes > buffer->size - offset)
        status = xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "example_acc: %s: %zu bytes at offset %zu overrun "
                                          "buffer %p of %zu bytes",
                                          what, bytes, offset, handle, buffer->size);
    pthread_mutex_unlock(&ctx->lock);
    if (status == NULL)
        *out_buffer = buffer;
    return status;
}

static pl_status *xacc_copy_to_device(pl_module_ctx *ctx, int device, void *dst,
                                      size_t dst_offset, const void *src_host, size_t bytes)
{
    struct xacc_buffer *buffer;
    pl_status *status =
        xacc_check_range(ctx, "copy_to_device", device, dst, dst_offset, bytes, &buffer);
    if (status != NULL)
        return status;
    if (bytes > 0 && src_host == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: copy_to_device from a NULL host pointer");
    xacc_simulate_latency(ctx);
    if (bytes > 0)
        memcpy(buffer->bytes + dst_offset, src_host, bytes);
    return NULL;
}

static pl_status *xacc_copy_to_host(pl_module_ctx *ctx, int device, void *dst_host,
                                    const void *src, size_t src_offset, size_t bytes)
{
    struct xacc_buffer *buffer;
    pl_status *status =
        xacc_check_range(ctx, "copy_to_host", device, src, src_offset, bytes, &buffer);
    if (status != NULL)
        return status;
    if (bytes > 0 && dst_host == NULL)
        return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "example_acc: copy_to_host to a NULL host pointer");
    xacc_simulate_latency(ctx);
    if (bytes > 0)
        memcpy(dst_host, buffer->bytes + src_offset, bytes);
    return NULL;
}

static pl_status *xacc_copy_device_to_device(pl_module_ctx *ctx, int src_device,
                                             const void *src, size_t src_offset, int dst_device,
                                             void *dst, size_t dst_offset, size_t bytes)
{
    struct xacc_buffer *from, *to;
    pl_status *status = xacc_check_range(ctx, "copy_device_to_device (source)", src_device, src,
                                         src_offset, bytes, &from);
    if (status == NULL)
        status = xacc_check_range(ctx, "copy_device_to_device (destination)", dst_device, dst,
                                  dst_offset, bytes, &to);
    if (status != NULL)
        return status;
    xacc_simulate_latency(ctx);
    /* memmove: source and destination may be ranges of the same buffer. */
    if (bytes > 0)
        memmove(to->bytes + dst_offset, from->bytes + src_offset, bytes);
    return NULL;
}

/* ---- symbolic mode ---------------------------------------------------- */

/* Every symbolic entry needs to read the graph through host->graph. ABI 1.0
 * reserves pl_graph_api with its header only, so there is nothing to read
 * yet: until the graph issue appends its functions (checked then with
 * PL_ABI_HAS_FN), the module refuses every graph with this reason. */
static pl_status *xacc_no_graph_view(void)
{
    return xacc_host->status_create(PL_CODE_UNSUPPORTED,
                                    "example_acc: the core offers no graph view yet");
}

/* Will answer node by node, within max_nodes_per_subgraph. */
static pl_status *xacc_supported_nodes(pl_module_ctx *ctx, int device,
                                       const pl_graph_view *graph, pl_support_sink sink,
                                       void *sink_ctx)
{
    (void)graph;
    (void)sink;
    (void)sink_ctx;
    pl_status *status = xacc_check_device(ctx, device);
    return status != NULL ? status : xacc_no_graph_view();
}

/* Will compile a subgraph, failing on purpose at the node `fail_compile`
 * names, so the core's fallback path can be tested. */
static pl_status *xacc_compile(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                               pl_compiled **out_compiled)
{
    (void)subgraph;
    if (out_compiled != NULL)
        *out_compiled = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    return status != NULL ? status : xacc_no_graph_view();
}

/* compile never succeeds yet, so no pl_compiled can reach run, release or
 * export: anything handed in is not ours. */
static pl_status *xacc_not_compiled(const char *what, const pl_compiled *compiled)
{
    return xacc_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                    "example_acc: %s: %p was not compiled by this module "
                                    "(compile arrives with the graph view)",
                                    what, (const void *)compiled);
}

static pl_status *xacc_run(pl_module_ctx *ctx, pl_compiled *compiled, const pl_run_args *args)
{
    (void)ctx;
    (void)args;
    return xacc_not_compiled("run", compiled);
}

static void xacc_release(pl_module_ctx *ctx, pl_compiled *compiled)
{
    (void)ctx;
    (void)compiled;
}

static pl_status *xacc_export_compiled(pl_module_ctx *ctx, pl_compiled *compiled,
                                       pl_blob_sink sink, void *sink_ctx)
{
    (void)ctx;
    (void)sink;
    (void)sink_ctx;
    return xacc_not_compiled("export_compiled", compiled);
}

/* import must refuse a blob it did not write; this version writes none. */
static pl_status *xacc_import_compiled(pl_module_ctx *ctx, int device,
                                       const pl_graph_view *subgraph, const void *blob,
                                       size_t blob_bytes, pl_compiled **out_compiled)
{
    (void)subgraph;
    (void)blob;
    if (out_compiled != NULL)
        *out_compiled = NULL;
    pl_status *status = xacc_check_device(ctx, device);
    if (status != NULL)
        return status;
    return xacc_host->status_create(PL_CODE_INCOMPATIBLE,
                                    "example_acc " XACC_VERSION ": refusing a %zu-byte blob: "
                                    "this version writes no compiled blobs",
                                    blob_bytes);
}

/* ---- the table and the entry point ------------------------------------ */

/* One static, constant table. Every function a capability flag names is
 * filled in; the rest stay NULL. */
static const pl_module_api xacc_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = XACC_NAME,
    .version = XACC_VERSION,
    .vendor = "Plinth example",
    .capabilities = PL_CAP_SYMBOLIC | PL_CAP_EXPORT,
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
};

/* The one exported symbol. It negotiates the ABI major both ways: when the
 * core speaks another major, it answers with its own and
 * PL_CODE_INCOMPATIBLE, so the core can name both. It does no other work. */
PL_MODULE_ENTRY
{
    if (out_api != NULL)
        *out_api = NULL;
    if (host == NULL || inout_abi_major == NULL || out_api == NULL)
        return PL_CODE_INVALID_ARGUMENT;
    if (*inout_abi_major != PL_ABI_MAJOR || host->header.abi_major != PL_ABI_MAJOR) {
        *inout_abi_major = PL_ABI_MAJOR;
        return PL_CODE_INCOMPATIBLE;
    }
    /* Every host function this module calls is part of ABI 1.0. */
    if (!PL_ABI_HAS_FIELD(pl_host_api, host, graph))
        return PL_CODE_INCOMPATIBLE;
    xacc_host = host;
    *out_api = &xacc_api;
    return PL_CODE_OK;
}
