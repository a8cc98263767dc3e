/* cuda: the NVIDIA GPU backend, on the CUDA runtime (cuBLAS and cuDNN come
 * with the kernels). It offers single-node kernels (PL_CAP_IMPERATIVE) and
 * whole subgraphs (PL_CAP_SYMBOLIC), run on the device's own schedule
 * (PL_CAP_ASYNC), on device memory that the core holds only as opaque
 * handles. At this stage the module finds the driver and the devices, says
 * plainly why when there are none, reports versions, and moves memory;
 * kernels and compiled subgraphs arrive in later issues, so get_kernel,
 * supported_nodes and compile refuse with that reason. Like every module it
 * sees only sdk/ and reaches the core through the host table. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include <plinth/module.h>

#define CUDA_NAME "cuda"
#define CUDA_VERSION_STRING "0.1.0"
#define CUDA_MAX_ALIGN 256 /* cudaMalloc aligns at least this much */

PL_MODULE_IDENTITY(CUDA_NAME, CUDA_VERSION_STRING);

/* The host table handed to pl_module_entry: one static table of the core,
 * valid until the module is unloaded, shared by every instance. */
static const pl_host_api *cuda_host;

/* One runtime's instance, made by init and freed by shutdown. Immutable
 * after init. The CUDA runtime's state (the primary context of each device)
 * is per process and shared by every instance. */
struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    int devices; /* >= 1: init refuses a machine without devices */
};

/* Makes a status for a failed CUDA call: "cuda: <context>: <error name>:
 * <error text>", where fmt and the arguments after it give the context. */
static pl_status *cuda_status(cudaError_t err, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);
static pl_status *cuda_status(cudaError_t err, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    pl_code code = err == cudaErrorMemoryAllocation ? PL_CODE_OUT_OF_MEMORY
                   : err == cudaErrorInvalidValue || err == cudaErrorInvalidDevicePointer
                       ? PL_CODE_INVALID_ARGUMENT
                       : PL_CODE_DEVICE_ERROR;
    return cuda_host->status_create(code, "cuda: %s: %s: %s", what, cudaGetErrorName(err),
                                    cudaGetErrorString(err));
}

static pl_status *cuda_check_device(const pl_module_ctx *ctx, int device)
{
    if (device < 0 || device >= ctx->devices)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: no device %d (%d visible)", device, ctx->devices);
    return NULL;
}

/* Makes DEVICE current for the calling thread (the runtime's current device
 * is per thread, and engine workers are many). */
static pl_status *cuda_use_device(const pl_module_ctx *ctx, int device)
{
    pl_status *status = cuda_check_device(ctx, device);
    if (status != NULL)
        return status;
    cudaError_t err = cudaSetDevice(device);
    return err == cudaSuccess ? NULL : cuda_status(err, "cudaSetDevice(%d)", device);
}

/* "13.0" from CUDA's 13000. */
static void cuda_format_version(int version, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
}

/* ---- life and devices --------------------------------------------------- */

static pl_status *cuda_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    if (out_ctx == NULL)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT, "cuda: init without out_ctx");
    *out_ctx = NULL;

    /* The cheap probe before the expensive init: without the driver the
     * runtime could only fail, and its message would not name the cause. The
     * runtime loads the driver itself; the probe handle is only a question. */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver == NULL) {
        const char *why = dlerror();
        return cuda_host->status_create(PL_CODE_NO_DEVICE,
                                        "libcuda.so.1 not found (is the NVIDIA driver "
                                        "installed?): %s",
                                        why != NULL ? why : "dlopen failed");
    }
    dlclose(driver);

    int devices = 0;
    cudaError_t err = cudaGetDeviceCount(&devices);
    if (err != cudaSuccess)
        return cuda_host->status_create(PL_CODE_NO_DEVICE, "cudaGetDeviceCount: %s: %s",
                                        cudaGetErrorName(err), cudaGetErrorString(err));
    if (devices <= 0)
        return cuda_host->status_create(PL_CODE_NO_DEVICE, "no CUDA device visible");

    pl_module_ctx *ctx = cuda_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return cuda_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "cuda: out of memory for the module instance");
    ctx->host_ctx = host_ctx;
    ctx->devices = devices;
    cuda_host->log_message(host_ctx, PL_LOG_DEBUG, "%d CUDA devices", devices);
    *out_ctx = ctx;
    return NULL;
}

static void cuda_shutdown(pl_module_ctx *ctx)
{
    if (ctx != NULL)
        cuda_host->host_free(ctx->host_ctx, ctx);
}

static int cuda_device_count(pl_module_ctx *ctx)
{
    return ctx->devices;
}

static pl_status *cuda_device_properties(pl_module_ctx *ctx, int device,
                                         pl_device_properties *inout_props)
{
    pl_status *status = cuda_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (inout_props == NULL)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: device_properties without a struct");
    struct cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, device);
    if (err != cudaSuccess)
        return cuda_status(err, "cudaGetDeviceProperties(%d)", device);
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "%.*s",
                 (int)sizeof inout_props->name - 1, prop.name);
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_CUDA);
    PL_ABI_SET(pl_device_properties, inout_props, compute_units, prop.multiProcessorCount);
    PL_ABI_SET(pl_device_properties, inout_props, memory_bytes, (uint64_t)prop.totalGlobalMem);
    return NULL;
}

/* Accepts no keys yet; reports the runtime and driver versions and the
 * number of devices. */
static pl_status *cuda_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                 pl_kv_sink out, void *out_ctx)
{
    if (n_in > 0 && in == NULL)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: configure with %zu keys but no array", n_in);
    if (n_in > 0)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: unknown key '%s' (the cuda module accepts no keys "
                                        "yet; its section may hold only 'enabled')",
                                        in[0].key != NULL ? in[0].key : "(null)");
    if (out == NULL)
        return NULL;
    char runtime[32] = "unknown", driver[32] = "none", devices[16];
    int version = 0;
    if (cudaRuntimeGetVersion(&version) == cudaSuccess)
        cuda_format_version(version, runtime, sizeof runtime);
    version = 0;
    if (cudaDriverGetVersion(&version) == cudaSuccess && version > 0)
        cuda_format_version(version, driver, sizeof driver);
    snprintf(devices, sizeof devices, "%d", ctx->devices);
    out(out_ctx, "cuda_runtime_version", runtime);
    out(out_ctx, "driver_version", driver);
    out(out_ctx, "devices", devices);
    return NULL;
}

/* ---- memory ------------------------------------------------------------- */

static pl_status *cuda_mem_alloc(pl_module_ctx *ctx, int device, size_t bytes,
                                 size_t alignment, void **out_ptr)
{
    if (out_ptr == NULL)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT, "cuda: mem_alloc without out_ptr");
    *out_ptr = NULL;
    if ((alignment & (alignment - 1)) != 0 || alignment > CUDA_MAX_ALIGN)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: mem_alloc alignment %zu (a power of two up to %d, "
                                        "or 0)",
                                        alignment, CUDA_MAX_ALIGN);
    pl_status *status = cuda_use_device(ctx, device);
    if (status != NULL)
        return status;
    /* A zero-byte tensor still gets a distinct, non-NULL handle. */
    void *ptr = NULL;
    cudaError_t err = cudaMalloc(&ptr, bytes > 0 ? bytes : 1);
    if (err != cudaSuccess)
        return cuda_status(err, "cudaMalloc(%zu bytes) on device %d", bytes, device);
    *out_ptr = ptr;
    return NULL;
}

static void cuda_mem_free(pl_module_ctx *ctx, int device, void *ptr)
{
    if (ptr == NULL)
        return;
    pl_status *status = cuda_use_device(ctx, device);
    if (status == NULL) {
        cudaError_t err = cudaFree(ptr);
        if (err != cudaSuccess)
            status = cuda_status(err, "cudaFree(%p) on device %d", ptr, device);
    }
    /* mem_free cannot fail: log the reason and go on. */
    if (status != NULL) {
        cuda_host->log_message(ctx->host_ctx, PL_LOG_ERROR, "%s", cuda_host->status_message(status));
        cuda_host->status_free(status);
    }
}

/* Nothing is pooled yet (cudaMalloc/cudaFree directly); only waits for the
 * device to finish what it was doing. */
static void cuda_mem_release_all(pl_module_ctx *ctx, int device)
{
    pl_status *status = cuda_use_device(ctx, device);
    if (status == NULL) {
        cudaError_t err = cudaDeviceSynchronize();
        if (err != cudaSuccess)
            status = cuda_status(err, "cudaDeviceSynchronize on device %d", device);
    }
    if (status != NULL) {
        cuda_host->log_message(ctx->host_ctx, PL_LOG_ERROR, "%s", cuda_host->status_message(status));
        cuda_host->status_free(status);
    }
}

static pl_status *cuda_copy_to_device(pl_module_ctx *ctx, int device, void *dst,
                                      size_t dst_offset, const void *src_host, size_t bytes)
{
    pl_status *status = cuda_use_device(ctx, device);
    if (status != NULL || bytes == 0)
        return status;
    cudaError_t err =
        cudaMemcpy((char *)dst + dst_offset, src_host, bytes, cudaMemcpyHostToDevice);
    return err == cudaSuccess ? NULL
                              : cuda_status(err, "cudaMemcpy of %zu bytes to device %d", bytes,
                                            device);
}

static pl_status *cuda_copy_to_host(pl_module_ctx *ctx, int device, void *dst_host,
                                    const void *src, size_t src_offset, size_t bytes)
{
    pl_status *status = cuda_use_device(ctx, device);
    if (status != NULL || bytes == 0)
        return status;
    cudaError_t err =
        cudaMemcpy(dst_host, (const char *)src + src_offset, bytes, cudaMemcpyDeviceToHost);
    return err == cudaSuccess ? NULL
                              : cuda_status(err, "cudaMemcpy of %zu bytes from device %d", bytes,
                                            device);
}

static pl_status *cuda_copy_device_to_device(pl_module_ctx *ctx, int src_device,
                                             const void *src, size_t src_offset, int dst_device,
                                             void *dst, size_t dst_offset, size_t bytes)
{
    pl_status *status = cuda_check_device(ctx, src_device);
    if (status == NULL)
        status = cuda_use_device(ctx, dst_device);
    if (status != NULL || bytes == 0)
        return status;
    /* cudaMemcpyPeer also serves src_device == dst_device. */
    cudaError_t err = cudaMemcpyPeer((char *)dst + dst_offset, dst_device,
                                     (const char *)src + src_offset, src_device, bytes);
    return err == cudaSuccess ? NULL
                              : cuda_status(err, "cudaMemcpyPeer of %zu bytes, device %d to %d",
                                            bytes, src_device, dst_device);
}

/* ---- imperative and symbolic modes --------------------------------------- */

static pl_status *cuda_get_kernel(pl_module_ctx *ctx, int device, const pl_node_desc *node,
                                  pl_kernel **out_kernel, size_t *out_workspace_bytes)
{
    if (out_kernel != NULL)
        *out_kernel = NULL;
    if (out_workspace_bytes != NULL)
        *out_workspace_bytes = 0;
    pl_status *status = cuda_check_device(ctx, device);
    if (status != NULL)
        return status;
    if (node == NULL || out_kernel == NULL || out_workspace_bytes == NULL)
        return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "cuda: get_kernel without a node or output pointers");
    const char *op = PL_ABI_HAS_FIELD(pl_node_desc, node, op) && node->op != NULL ? node->op : "?";
    return cuda_host->status_create(PL_CODE_UNSUPPORTED,
                                    "cuda: no kernel for op '%s' (kernels arrive in a later issue)",
                                    op);
}

/* get_kernel never returns a kernel, so any kernel handed here is not ours. */
static pl_status *cuda_kernel_run(pl_module_ctx *ctx, pl_kernel *kernel, const pl_run_args *args)
{
    (void)ctx;
    (void)args;
    return cuda_host->status_create(PL_CODE_INTERNAL,
                                    "cuda: kernel_run on %p, but this module made no kernels",
                                    (void *)kernel);
}

static void cuda_kernel_release(pl_module_ctx *ctx, pl_kernel *kernel)
{
    (void)ctx;
    (void)kernel;
}

/* Symbolic mode reads the graph through host->graph, which ABI 1.0 reserves
 * without functions; subgraph compilation arrives with the graph view and
 * the kernels. */
static pl_status *cuda_supported_nodes(pl_module_ctx *ctx, int device,
                                       const pl_graph_view *graph, pl_support_sink sink,
                                       void *sink_ctx)
{
    pl_status *status = cuda_check_device(ctx, device);
    if (status != NULL)
        return status;
    const pl_graph_api *api = cuda_host->graph;
    if (!PL_ABI_HAS_FN(pl_graph_api, api, node_count))
        return cuda_host->status_create(PL_CODE_UNSUPPORTED, "cuda: the core offers no graph view");
    size_t n = api->node_count(graph);
    for (size_t i = 0; i < n; i++) {
        char reason[160];
        snprintf(reason, sizeof reason, "cuda: %s: no kernel yet (arrives with the cuda issue)",
                 api->node_op(graph, i));
        sink(sink_ctx, i, 0, reason);
    }
    return NULL;
}

static pl_status *cuda_compile(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                               pl_compiled **out_compiled)
{
    (void)subgraph;
    if (out_compiled != NULL)
        *out_compiled = NULL;
    pl_status *status = cuda_check_device(ctx, device);
    if (status != NULL)
        return status;
    return cuda_host->status_create(PL_CODE_UNSUPPORTED,
                                    "cuda: subgraph compilation arrives with the cuda issue");
}

/* compile never succeeds yet, so no pl_compiled can reach run: anything
 * handed in is not ours. */
static pl_status *cuda_not_compiled(const char *what, const pl_compiled *compiled)
{
    return cuda_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                    "cuda: %s: %p was not compiled by this module (compile "
                                    "arrives in a later issue)",
                                    what, (const void *)compiled);
}

static pl_status *cuda_run(pl_module_ctx *ctx, pl_compiled *compiled, const pl_run_args *args)
{
    (void)ctx;
    (void)args;
    return cuda_not_compiled("run", compiled);
}

/* An error returned here means nothing started and `done` is not
 * signalled, as module.h requires. */
static pl_status *cuda_run_async(pl_module_ctx *ctx, pl_compiled *compiled,
                                 const pl_run_args *args, pl_completion *done)
{
    (void)ctx;
    (void)args;
    (void)done;
    return cuda_not_compiled("run_async", compiled);
}

static void cuda_release(pl_module_ctx *ctx, pl_compiled *compiled)
{
    (void)ctx;
    (void)compiled;
}

/* ---- the table and the entry point -------------------------------------- */

static const pl_module_api cuda_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = CUDA_NAME,
    .version = CUDA_VERSION_STRING,
    .vendor = "Plinth",
    .capabilities = PL_CAP_SYMBOLIC | PL_CAP_IMPERATIVE | PL_CAP_ASYNC,
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .device_count = cuda_device_count,
    .device_properties = cuda_device_properties,
    .configure = cuda_configure,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_release_all = cuda_mem_release_all,
    .copy_to_device = cuda_copy_to_device,
    .copy_to_host = cuda_copy_to_host,
    .copy_device_to_device = cuda_copy_device_to_device,
    .get_kernel = cuda_get_kernel,
    .kernel_run = cuda_kernel_run,
    .kernel_release = cuda_kernel_release,
    .supported_nodes = cuda_supported_nodes,
    .compile = cuda_compile,
    .run = cuda_run,
    .run_async = cuda_run_async,
    .release = cuda_release,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). It does
 * not touch the driver, so `plinth modules` can list this module on a
 * machine without one. */
PL_MODULE_DEFINE_ENTRY(cuda_host, cuda_api);
