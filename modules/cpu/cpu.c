/* cpu: the reference CPU backend. Every node that no other backend claims
 * falls back here, and every other backend is tested against it. It computes
 * on host memory (PL_CAP_HOST_MEMORY) and offers one kernel per node
 * (PL_CAP_IMPERATIVE); GEMM and convolution run on OpenBLAS. This file holds
 * the module's life, its device, its configuration and host memory; the
 * kernels live in kernel.c (get_kernel, kernel_run) and one file per family
 * of ops. Like every module it sees only sdk/ and reaches the core through
 * the host table. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "blas.h"

#include <plinth/module.h>

#include "cpu_kernel.h"
#include "rnn.h"

#define CPU_NAME "cpu"
#define CPU_VERSION "0.1.0"

PL_MODULE_IDENTITY(CPU_NAME, CPU_VERSION);

/* The host table handed to pl_module_entry: one static table of the core,
 * valid until the module is unloaded, shared by every runtime's instance. */
const pl_host_api *cpu_host;

static pl_status *cpu_check_device(int device)
{
    if (device != 0)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: no device %d (the cpu module has device 0 only)",
                                       device);
    return NULL;
}

static pl_status *cpu_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    if (out_ctx == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "cpu: init without out_ctx");
    *out_ctx = NULL;
    /* A build whose op tables give an op two entries would silently never
     * run the second one's kernels: refuse it, naming both. */
    pl_status *st = cpu_op_tables_check();
    if (st == NULL)
        st = rnn_q8_register(host_ctx);
    if (st == NULL)
        st = qm_register(host_ctx);
    if (st == NULL)
        st = nb_register(host_ctx);
    if (st != NULL)
        return st;
    pl_module_ctx *ctx = cpu_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return cpu_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                       "cpu: out of memory for the module instance (%zu bytes)",
                                       sizeof *ctx);
    ctx->host_ctx = host_ctx;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    ctx->compute_units = online > 0 && online <= INT32_MAX ? (int)online : 0;
    ctx->blas_pool = false;
    ctx->packs = cpu_pack_registry_create(host_ctx); /* NULL: weights are not shared */
    ctx->cost_uses = cpu_cost_uses_create(); /* NULL: no view priced free */

    /* The runtime owns the one CPU thread budget (`threads` in backend.ini)
     * and lends it to kernels through host->parallel_for. OpenBLAS would
     * otherwise start its own pool of one thread per core, and a GEMM
     * running inside each of several parallel_for workers would then
     * oversubscribe the machine many times over. So OpenBLAS runs on the
     * calling thread only; parallelism comes from the host's pool. This is
     * process-wide, which is what we want for every runtime in the process. */
    cpu_blas_set_threads(1);

    cpu_host->log_message(host_ctx, PL_LOG_DEBUG,
                          "%d online CPUs; OpenBLAS is opened by the first kernel that needs it",
                          ctx->compute_units);
    *out_ctx = ctx;
    return NULL;
}

static void cpu_shutdown(pl_module_ctx *ctx)
{
    if (ctx != NULL) {
        cpu_pack_registry_destroy(ctx->host_ctx, ctx->packs);
        cpu_cost_uses_destroy(ctx->cost_uses);
        cpu_host->host_free(ctx->host_ctx, ctx);
    }
}

static int cpu_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *cpu_device_properties(pl_module_ctx *ctx, int device,
                                        pl_device_properties *inout_props)
{
    pl_status *status = cpu_check_device(device);
    if (status != NULL)
        return status;
    if (inout_props == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: device_properties without a properties struct");
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "%s", "cpu");
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_CPU);
    PL_ABI_SET(pl_device_properties, inout_props, compute_units, ctx->compute_units);
    /* Host memory: the header asks for 0 rather than the machine's RAM. */
    PL_ABI_SET(pl_device_properties, inout_props, memory_bytes, 0);
    return NULL;
}

/* Keys: blas_threads = 1 (default) | pool. With 1, OpenBLAS runs
 * single-threaded inside the chunks the module hands to the host's
 * parallel_for (one thread budget, no second pool). With pool, MatMul and
 * Gemm call OpenBLAS once per product and OpenBLAS uses as many threads of
 * its own as the runtime's budget: its pool then runs beside the engine's,
 * which is what bench/ measures this key for. (openblas_set_num_threads is
 * process-wide.) Reports the BLAS it runs on, the thread budget and how
 * many packed weights kernels share (packshare.c). */
static pl_status *cpu_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                pl_kv_sink out, void *out_ctx)
{
    if (n_in > 0 && in == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: configure with %zu keys but no key array", n_in);
    bool blas_pool = ctx->blas_pool;
    for (size_t i = 0; i < n_in; i++) {
        const char *key = in[i].key ? in[i].key : "(null)";
        const char *value = in[i].value ? in[i].value : "";
        if (strcmp(key, "blas_threads") != 0)
            return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                           "cpu: unknown key '%s' (accepted: blas_threads)", key);
        if (strcmp(value, "1") == 0)
            blas_pool = false;
        else if (strcmp(value, "pool") == 0)
            blas_pool = true;
        else
            return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                           "cpu: bad value '%s' for blas_threads; accepted: 1, "
                                           "pool",
                                           value);
    }
    const char *why = NULL;
    if (blas_pool && cpu_blas_get(&why) == NULL)
        return cpu_host->status_create(PL_CODE_UNSUPPORTED,
                                       "cpu: blas_threads = pool needs OpenBLAS: %s", why);
    if (blas_pool != ctx->blas_pool) {
        ctx->blas_pool = blas_pool;
        cpu_blas_set_threads(blas_pool ? cpu_host->thread_count(ctx->host_ctx) : 1);
    }
    if (out == NULL)
        return NULL;
    char threads[16];
    snprintf(threads, sizeof threads, "%d", cpu_host->thread_count(ctx->host_ctx));
    const cpu_blas *blas = cpu_blas_loaded();
    out(out_ctx, "openblas_config",
        blas ? blas->get_config()
             : "not opened yet (f64 MatMul/Gemm, Einsum and blas_threads = pool open it)");
    out(out_ctx, "openblas_core", blas ? blas->get_corename() : "");
    out(out_ctx, "threads", threads);
    out(out_ctx, "blas_threads", ctx->blas_pool ? "pool" : "1");
    char shared[24];
    snprintf(shared, sizeof shared, "%zu", cpu_pack_shared_count(ctx));
    out(out_ctx, "shared_weights", shared);
    return NULL;
}

/* ---- memory: plain host memory from the host's allocator ---------------- */

static pl_status *cpu_mem_alloc(pl_module_ctx *ctx, int device, size_t bytes,
                                size_t alignment, void **out_ptr)
{
    if (out_ptr == NULL)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "cpu: mem_alloc without out_ptr");
    *out_ptr = NULL;
    pl_status *status = cpu_check_device(device);
    if (status != NULL)
        return status;
    if ((alignment & (alignment - 1)) != 0)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: mem_alloc alignment %zu is not a power of two",
                                       alignment);
    /* A zero-byte tensor still gets a distinct, freeable pointer. */
    void *ptr = cpu_host->host_alloc(ctx->host_ctx, bytes > 0 ? bytes : 1, alignment);
    if (ptr == NULL)
        return cpu_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                       "cpu: out of host memory allocating %zu bytes (alignment %zu)",
                                       bytes, alignment);
    *out_ptr = ptr;
    return NULL;
}

static void cpu_mem_free(pl_module_ctx *ctx, int device, void *ptr)
{
    (void)device;
    cpu_host->host_free(ctx->host_ctx, ptr);
}

/* Nothing is pooled: every buffer goes straight back to the host. */
static void cpu_mem_release_all(pl_module_ctx *ctx, int device)
{
    (void)ctx;
    (void)device;
}

static pl_status *cpu_check_copy(int device, const void *a, const void *b, size_t bytes)
{
    pl_status *status = cpu_check_device(device);
    if (status != NULL)
        return status;
    if (bytes > 0 && (a == NULL || b == NULL))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "cpu: copy of %zu bytes with a NULL buffer", bytes);
    return NULL;
}

static pl_status *cpu_copy_to_device(pl_module_ctx *ctx, int device, void *dst,
                                     size_t dst_offset, const void *src_host, size_t bytes)
{
    (void)ctx;
    pl_status *status = cpu_check_copy(device, dst, src_host, bytes);
    if (status == NULL && bytes > 0)
        memcpy((char *)dst + dst_offset, src_host, bytes);
    return status;
}

static pl_status *cpu_copy_to_host(pl_module_ctx *ctx, int device, void *dst_host,
                                   const void *src, size_t src_offset, size_t bytes)
{
    (void)ctx;
    pl_status *status = cpu_check_copy(device, dst_host, src, bytes);
    if (status == NULL && bytes > 0)
        memcpy(dst_host, (const char *)src + src_offset, bytes);
    return status;
}

static pl_status *cpu_copy_device_to_device(pl_module_ctx *ctx, int src_device,
                                            const void *src, size_t src_offset,
                                            int dst_device, void *dst, size_t dst_offset,
                                            size_t bytes)
{
    (void)ctx;
    pl_status *status = cpu_check_copy(src_device, dst, src, bytes);
    if (status == NULL)
        status = cpu_check_device(dst_device);
    /* memmove: both ranges may lie in the same buffer. */
    if (status == NULL && bytes > 0)
        memmove((char *)dst + dst_offset, (const char *)src + src_offset, bytes);
    return status;
}

/* ---- the table and the entry point -------------------------------------- */

static const pl_module_api cpu_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = CPU_NAME,
    .version = CPU_VERSION,
    .vendor = "Plinth",
    .capabilities = PL_CAP_IMPERATIVE | PL_CAP_HOST_MEMORY,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_properties = cpu_device_properties,
    .configure = cpu_configure,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_release_all = cpu_mem_release_all,
    .copy_to_device = cpu_copy_to_device,
    .copy_to_host = cpu_copy_to_host,
    .copy_device_to_device = cpu_copy_device_to_device,
    .get_kernel = cpu_get_kernel,
    .kernel_run = cpu_kernel_run,
    .kernel_release = cpu_kernel_release,
    .kernel_fuse = cpu_kernel_fuse,
    .estimate_cost = cpu_estimate_cost,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). */
PL_MODULE_DEFINE_ENTRY(cpu_host, cpu_api);
