/* onednn: the oneDNN backend. It takes whole subgraphs (PL_CAP_SYMBOLIC),
 * fuses them into oneDNN primitives in oneDNN's blocked layouts, and computes
 * on host memory (PL_CAP_HOST_MEMORY), so the core converts layouts only at
 * subgraph boundaries. This file holds the module's table, its life, its
 * device, configuration (the ISA cap and the precision) and host memory;
 * symbolic mode — verdicts, compile, run, export and import — lives in
 * onednn_subgraph.c. Like every module it sees only sdk/ and reaches the
 * core through the host table. */
#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl_debug.h>

#include "onednn.h"
#include "onednn_pace.h"

PL_MODULE_IDENTITY(ONEDNN_NAME, ONEDNN_VERSION_STRING);

const pl_host_api *onednn_host;

/* The ISA cap oneDNN accepted last in this process, or -1. oneDNN's cap is
 * process-wide, so a second runtime asking for the same cap is fine even
 * though oneDNN itself would refuse to set it again. */
static atomic_int onednn_applied_isa = -1;

/* The ISA names Plinth uses: oneDNN's, without the dnnl_cpu_isa_ prefix. */
static const struct onednn_isa_name {
    const char *name;
    dnnl_cpu_isa_t isa;
} onednn_isa_names[] = {
    {"all", dnnl_cpu_isa_all},
    {"sse41", dnnl_cpu_isa_sse41},
    {"avx", dnnl_cpu_isa_avx},
    {"avx2", dnnl_cpu_isa_avx2},
    {"avx2_vnni", dnnl_cpu_isa_avx2_vnni},
    {"avx512_mic", dnnl_cpu_isa_avx512_mic},
    {"avx512_mic_4ops", dnnl_cpu_isa_avx512_mic_4ops},
    {"avx512_core", dnnl_cpu_isa_avx512_core},
    {"avx512_core_vnni", dnnl_cpu_isa_avx512_core_vnni},
    {"avx512_core_bf16", dnnl_cpu_isa_avx512_core_bf16},
    {"avx512_core_amx", dnnl_cpu_isa_avx512_core_amx},
};
#define ONEDNN_ISA_COUNT (sizeof onednn_isa_names / sizeof onednn_isa_names[0])
#define ONEDNN_ISA_LIST                                                          \
    "all, sse41, avx, avx2, avx2_vnni, avx512_mic, avx512_mic_4ops, avx512_core, " \
    "avx512_core_vnni, avx512_core_bf16, avx512_core_amx"

/* Writes the name of ISA into buf: "avx2", or "unknown(0x..)". */
static const char *onednn_isa_to_name(dnnl_cpu_isa_t isa, char *buf, size_t size)
{
    for (size_t i = 0; i < ONEDNN_ISA_COUNT; i++)
        if (onednn_isa_names[i].isa == isa)
            return onednn_isa_names[i].name;
    snprintf(buf, size, "unknown(0x%x)", (unsigned)isa);
    return buf;
}

/* The ISA oneDNN dispatches to. The first query fixes the ISA cap for the
 * rest of the process, so it is not asked before configure has run. */
const char *onednn_effective_isa(char *buf, size_t size)
{
    return onednn_isa_to_name(dnnl_get_effective_cpu_isa(), buf, size);
}

static pl_status *onednn_check_device(int device)
{
    if (device != 0)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "onednn: no device %d (the onednn module has device 0 "
                                        "only)",
                                        device);
    return NULL;
}

/* ---- life and devices --------------------------------------------------- */

static pl_status *onednn_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    if (out_ctx == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT, "onednn: init without out_ctx");
    *out_ctx = NULL;
    pl_module_ctx *ctx = onednn_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return onednn_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        "onednn: out of memory for the module instance");
    /* Every field starts at zero: bf16_asked once did not, and on a CPU
     * with bf16 kernels (avx512_core on) its garbage turned precision =
     * bf16 on for some runtimes and not others. */
    memset(ctx, 0, sizeof *ctx);
    ctx->host_ctx = host_ctx;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    ctx->compute_units = online > 0 && online <= INT32_MAX ? (int)online : 0;
    ctx->max_cpu_isa = "default";
    ctx->bf16 = 0;
    ctx->winograd = 1;
    ctx->direct = 1;
    ctx->one_thread_us = ONEDNN_ONE_THREAD_US;
    ctx->solo = ODNN_PACE_AUTO;
    ctx->engine = NULL;
    pthread_mutex_init(&ctx->engine_lock, NULL);
    pl_work_pool_init(&ctx->work, onednn_work_alloc, onednn_work_release, ctx);
    onednn_share_init(&ctx->share);
    /* Debian's libdnnl runs its primitives on libgomp's pool; run sets that
     * pool's size to the runtime's thread budget (host->thread_count) on the
     * thread that executes the subgraph. */
    const dnnl_version_t *v = dnnl_version();
    onednn_host->log_message(host_ctx, PL_LOG_DEBUG, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    *out_ctx = ctx;
    return NULL;
}

static void onednn_shutdown(pl_module_ctx *ctx)
{
    if (ctx == NULL)
        return;
    odnn_gemm_warm_join(); /* before dlclose takes the loader's lock */
    if (ctx->engine != NULL)
        dnnl_engine_destroy(ctx->engine);
    pthread_mutex_destroy(&ctx->engine_lock);
    pl_work_pool_destroy(&ctx->work);
    onednn_share_destroy(ctx);
    onednn_host->host_free(ctx->host_ctx, ctx);
}

static int onednn_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *onednn_device_properties(pl_module_ctx *ctx, int device,
                                         pl_device_properties *inout_props)
{
    pl_status *status = onednn_check_device(device);
    if (status != NULL)
        return status;
    if (inout_props == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "onednn: device_properties without a struct");
    char isa[32];
    if (PL_ABI_HAS_FIELD(pl_device_properties, inout_props, name))
        snprintf(inout_props->name, sizeof inout_props->name, "cpu (oneDNN %s)",
                 onednn_effective_isa(isa, sizeof isa));
    PL_ABI_SET(pl_device_properties, inout_props, device_type, PL_DEVICE_CPU);
    PL_ABI_SET(pl_device_properties, inout_props, compute_units, ctx->compute_units);
    PL_ABI_SET(pl_device_properties, inout_props, memory_bytes, 0);
    return NULL;
}

/* ---- configure ---------------------------------------------------------- */

/* Applies the ISA cap NAME (already validated as ISA). */
static pl_status *onednn_apply_max_isa(const char *name, dnnl_cpu_isa_t isa)
{
    dnnl_status_t st = dnnl_set_max_cpu_isa(isa);
    if (st == dnnl_success) {
        atomic_store(&onednn_applied_isa, (int)isa);
        return NULL;
    }
    /* Already applied, by this runtime or another one in the process. */
    if (atomic_load(&onednn_applied_isa) == (int)isa)
        return NULL;
    char buf[32];
    pl_code code = st == dnnl_unimplemented     ? PL_CODE_UNSUPPORTED
                   : st == dnnl_invalid_arguments ? PL_CODE_FAILED_PRECONDITION
                                                  : PL_CODE_INTERNAL;
    return onednn_host->status_create(
        code,
        "onednn: max_cpu_isa = %s: dnnl_set_max_cpu_isa failed with %s (oneDNN takes the cap "
        "once per process, before its first primitive or ISA query; the ISA is now fixed at "
        "%s)",
        name, dnnl_status2str(st), onednn_effective_isa(buf, sizeof buf));
}

/* Accepts `max_cpu_isa`, `precision` (f32 | bf16), `winograd` (auto | all | no),
 * `direct_conv` (auto | no) and `one_thread_us` (0 to 10000); reports
 * oneDNN's version, the ISA it dispatches to, the precision, the Winograd
 * and direct-convolution choices, the one-thread limit and the thread
 * budget. */
static pl_status *onednn_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                 pl_kv_sink out, void *out_ctx)
{
    if (n_in > 0 && in == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        "onednn: configure with %zu keys but no array", n_in);
    const struct onednn_isa_name *cap = NULL;
    int bf16 = ctx->bf16_asked, winograd = ctx->winograd, direct = ctx->direct;
    double one_thread_us = ctx->one_thread_us;
    int solo = ctx->solo;
    for (size_t i = 0; i < n_in; i++) {
        const char *key = in[i].key != NULL ? in[i].key : "(null)";
        const char *value = in[i].value != NULL ? in[i].value : "(null)";
        if (strcmp(key, "precision") == 0) {
            if (strcmp(value, "f32") != 0 && strcmp(value, "bf16") != 0)
                return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                                  "onednn: bad value '%s' for key 'precision' "
                                                  "(expected one of: f32, bf16)",
                                                  value);
            bf16 = strcmp(value, "bf16") == 0;
            continue;
        }
        if (strcmp(key, "winograd") == 0) {
            if (strcmp(value, "auto") != 0 && strcmp(value, "all") != 0 &&
                strcmp(value, "no") != 0)
                return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                                  "onednn: bad value '%s' for key 'winograd' "
                                                  "(expected one of: auto, all, no)",
                                                  value);
            winograd = strcmp(value, "auto") == 0 ? 1 : strcmp(value, "all") == 0 ? 2 : 0;
            continue;
        }
        if (strcmp(key, "direct_conv") == 0) {
            if (strcmp(value, "auto") != 0 && strcmp(value, "no") != 0)
                return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                                  "onednn: bad value '%s' for key '%s' "
                                                  "(expected one of: auto, no)",
                                                  value, key);
            direct = strcmp(value, "auto") == 0;
            continue;
        }
        if (strcmp(key, "one_thread_us") == 0) {
            char *end = NULL;
            double us = strtod(value, &end);
            if (end == value || *end != '\0' || !(us >= 0 && us <= 10000))
                return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                                  "onednn: bad value '%s' for key "
                                                  "'one_thread_us' (expected microseconds "
                                                  "from 0 to 10000)",
                                                  value);
            one_thread_us = us;
            continue;
        }
        if (strcmp(key, "solo") == 0) {
            if (strcmp(value, "auto") != 0 && strcmp(value, "on") != 0 &&
                strcmp(value, "off") != 0)
                return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                                  "onednn: bad value '%s' for key 'solo' "
                                                  "(expected one of: auto, on, off)",
                                                  value);
            solo = strcmp(value, "auto") == 0  ? ODNN_PACE_AUTO
                   : strcmp(value, "on") == 0 ? ODNN_PACE_SOLO
                                              : ODNN_PACE_TEAM;
            continue;
        }
        if (strcmp(key, "max_cpu_isa") != 0)
            return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                            "onednn: unknown key '%s' (accepted: max_cpu_isa, "
                                            "precision, winograd, direct_conv, "
                                            "one_thread_us, solo)",
                                            key);
        cap = NULL;
        for (size_t j = 0; j < ONEDNN_ISA_COUNT; j++)
            if (strcmp(value, onednn_isa_names[j].name) == 0)
                cap = &onednn_isa_names[j];
        if (cap == NULL)
            return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                            "onednn: bad value '%s' for key 'max_cpu_isa' "
                                            "(expected one of: " ONEDNN_ISA_LIST ")",
                                            value);
    }
    if (cap != NULL) {
        pl_status *status = onednn_apply_max_isa(cap->name, cap->isa);
        if (status != NULL)
            return status;
        ctx->max_cpu_isa = cap->name;
    }
    /* oneDNN 2.6 computes bf16 from avx512_core on (emulated there, native
     * with AVX512-BF16 or AMX); below it every bf16 primitive is
     * unimplemented. There the module computes in f32 and says so once. */
    int eff = bf16 ? (int)dnnl_get_effective_cpu_isa() : 0; /* asking fixes the ISA cap */
    int bf16_ok = (eff & (int)dnnl_cpu_isa_avx512_core) == (int)dnnl_cpu_isa_avx512_core;
    char isa_text[32];
    if (bf16 && !bf16_ok && !ctx->bf16_asked)
        onednn_host->log_message(ctx->host_ctx, PL_LOG_WARN,
                                 "precision = bf16: oneDNN has bf16 kernels from avx512_core "
                                 "on, and this CPU runs %s; computing in f32",
                                 onednn_effective_isa(isa_text, sizeof isa_text));
    ctx->bf16_asked = bf16;
    ctx->bf16 = bf16 && bf16_ok;
    ctx->winograd = winograd;
    ctx->direct = direct;
    ctx->one_thread_us = one_thread_us;
    ctx->solo = solo;
    if (out == NULL)
        return NULL;

    const dnnl_version_t *v = dnnl_version();
    char version[48], threads[16], isa[32];
    snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    snprintf(threads, sizeof threads, "%d", onednn_host->thread_count(ctx->host_ctx));
    out(out_ctx, "dnnl_version", version);
    out(out_ctx, "dnnl_hash", v->hash != NULL ? v->hash : "unknown");
    out(out_ctx, "cpu_isa", onednn_effective_isa(isa, sizeof isa));
    out(out_ctx, "max_cpu_isa", ctx->max_cpu_isa);
    out(out_ctx, "precision",
        ctx->bf16 ? "bf16" : ctx->bf16_asked ? "f32 (bf16 asked for; this CPU has none)" : "f32");
    out(out_ctx, "winograd", ctx->winograd == 2 ? "all" : ctx->winograd ? "auto" : "no");
    out(out_ctx, "direct_conv",
        !ctx->direct ? "no" : odnn_direct_usable() ? "auto" : "auto (not used: AVX-512 or no AVX2)");
    char one[32];
    snprintf(one, sizeof one, "%g", ctx->one_thread_us);
    out(out_ctx, "one_thread_us", one);
    out(out_ctx, "solo", ctx->solo == ODNN_PACE_AUTO   ? "auto"
                         : ctx->solo == ODNN_PACE_SOLO ? "on"
                                                       : "off");
    out(out_ctx, "threads", threads);
    char shared[24];
    snprintf(shared, sizeof shared, "%zu", onednn_share_count(ctx));
    out(out_ctx, "shared_weights", shared);
    unsigned long long asked, remembered;
    onednn_memo_counts(&asked, &remembered);
    char probes[64];
    snprintf(probes, sizeof probes, "%llu asked, %llu remembered", asked, remembered);
    out(out_ctx, "kernel_probes", probes);
    return NULL;
}

/* ---- memory ------------------------------------------------------------ */

/* No memory functions: with PL_CAP_HOST_MEMORY the module computes on the
 * host buffers the core allocates, so the core never calls mem_* or copies
 * (they are optional for host-memory modules). */

/* ---- symbolic mode: onednn_subgraph.c does the work ------------------- */

static pl_status *onednn_supported_nodes(pl_module_ctx *ctx, int device,
                                         const pl_graph_view *graph, pl_support_sink sink,
                                         void *sink_ctx)
{
    pl_status *status = onednn_check_device(device);
    if (status != NULL)
        return status;
    if (graph == NULL || sink == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onednn: supported_nodes without a graph or sink");
    return onednn_sg_supported(ctx, graph, sink, sink_ctx);
}

/* A compile or import returns only once the GEMM kernels it set off
 * generating are made (onednn_warm.c): no thread of the module's runs
 * in oneDNN after the call, when the application may exit. */
static pl_status *onednn_compiled(pl_status *status)
{
    odnn_gemm_warm_join();
    return status;
}

static pl_status *onednn_compile(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                                 pl_compiled **out_compiled)
{
    if (out_compiled == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onednn: compile without out_compiled");
    *out_compiled = NULL;
    pl_status *status = onednn_check_device(device);
    if (status != NULL)
        return status;
    if (subgraph == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onednn: compile without a subgraph");
    return onednn_compiled(onednn_sg_compile(ctx, subgraph, NULL, 0, out_compiled));
}

static pl_status *onednn_run(pl_module_ctx *ctx, pl_compiled *compiled, const pl_run_args *args)
{
    return onednn_sg_run(ctx, compiled, args);
}

static void onednn_release(pl_module_ctx *ctx, pl_compiled *compiled)
{
    onednn_sg_release(ctx, compiled);
}

static pl_status *onednn_export(pl_module_ctx *ctx, pl_compiled *compiled, pl_blob_sink sink,
                                void *sink_ctx)
{
    return onednn_sg_export(ctx, compiled, sink, sink_ctx);
}

static pl_status *onednn_import(pl_module_ctx *ctx, int device, const pl_graph_view *subgraph,
                                const void *blob, size_t blob_bytes, pl_compiled **out_compiled)
{
    if (out_compiled == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onednn: import without out_compiled");
    *out_compiled = NULL;
    pl_status *status = onednn_check_device(device);
    if (status != NULL)
        return status;
    if (subgraph == NULL || blob == NULL)
        return onednn_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                          "onednn: import without a subgraph or blob");
    return onednn_compiled(onednn_sg_compile(ctx, subgraph, blob, blob_bytes, out_compiled));
}

/* ---- the table and the entry point -------------------------------------- */

static const pl_module_api onednn_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = ONEDNN_NAME,
    .version = ONEDNN_VERSION_STRING,
    .vendor = "Plinth",
    .capabilities = PL_CAP_SYMBOLIC | PL_CAP_HOST_MEMORY | PL_CAP_EXPORT | PL_CAP_PINNED_THREAD |
                    PL_CAP_OWNS_CONSTANTS | PL_CAP_KEEPS_BLOB | PL_CAP_RUNS_IN_CALLER,
    .init = onednn_init,
    .shutdown = onednn_shutdown,
    .device_count = onednn_device_count,
    .device_properties = onednn_device_properties,
    .configure = onednn_configure,
    .supported_nodes = onednn_supported_nodes,
    .compile = onednn_compile,
    .run = onednn_run,
    .release = onednn_release,
    .export_compiled = onednn_export,
    .import_compiled = onednn_import,
    .estimate_cost = onednn_estimate_cost,
    .compiled_times = onednn_sg_times,
};

/* The one exported symbol (see PL_MODULE_DEFINE_ENTRY in module.h). */
PL_MODULE_DEFINE_ENTRY(onednn_host, onednn_api);
