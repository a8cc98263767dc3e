// cxx_module.cpp — a module written in C++ against sdk/ alone, as a vendor
// whose library is C++ would write one (test_template.sh builds it with
// -std=c++11 -pedantic -Werror and runs a model on it): the SDK's headers,
// macros (identity note, header init, dtype constants, ABI checks) and the
// entry point must compile as C++ and export an unmangled pl_module_entry.
// It runs Relu on f32 tensors and refuses everything else.
#include <plinth/auto_pad.h>
#include <plinth/cost.h>
#include <plinth/graph_hash.h>
#include <plinth/module.h>
#include <plinth/node_times.h>
#include <plinth/qlinear.h>
#include <plinth/work_pool.h>

#include <cstdio>
#include <cstring>

#define CXX_NAME "cxxmod"
#define CXX_VERSION "1.0.0"

PL_MODULE_IDENTITY(CXX_NAME, CXX_VERSION);

static const pl_host_api *cxx_host;

struct pl_module_ctx {
    pl_host_ctx *host_ctx;
};

struct pl_kernel {
    size_t elements;
};

static pl_status *cxx_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    pl_module_ctx *ctx =
        static_cast<pl_module_ctx *>(cxx_host->host_alloc(host_ctx, sizeof *ctx, 0));
    if (ctx == nullptr)
        return cxx_host->status_create(PL_CODE_OUT_OF_MEMORY, CXX_NAME ": out of memory");
    ctx->host_ctx = host_ctx;
    *out_ctx = ctx;
    return nullptr;
}

static void cxx_shutdown(pl_module_ctx *ctx)
{
    if (ctx != nullptr)
        cxx_host->host_free(ctx->host_ctx, ctx);
}

static int cxx_device_count(pl_module_ctx *) { return 1; }

static pl_status *cxx_device_properties(pl_module_ctx *, int device, pl_device_properties *props)
{
    if (device != 0)
        return cxx_host->status_create(PL_CODE_INVALID_ARGUMENT, CXX_NAME ": no device %d",
                                       device);
    if (PL_ABI_HAS_FIELD(pl_device_properties, props, name))
        std::snprintf(props->name, sizeof props->name, "C++ device");
    PL_ABI_SET(pl_device_properties, props, device_type, PL_DEVICE_CPU);
    return nullptr;
}

static pl_status *cxx_configure(pl_module_ctx *, const pl_kv *in, size_t n_in, pl_kv_sink out,
                                void *out_ctx)
{
    if (n_in > 0)
        return cxx_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       CXX_NAME ": unknown key '%s' (it takes none)", in[0].key);
    if (out != nullptr)
        out(out_ctx, "ops", "Relu (f32)");
    return nullptr;
}

static pl_status *cxx_get_kernel(pl_module_ctx *ctx, int, const pl_node_desc *node,
                                 pl_kernel **out_kernel, size_t *out_workspace)
{
    *out_kernel = nullptr;
    *out_workspace = 0;
    if (node->domain[0] != '\0' || std::strcmp(node->op, "Relu") != 0)
        return cxx_host->status_create(PL_CODE_UNSUPPORTED, CXX_NAME ": %s: op not supported",
                                       node->op);
    if (node->n_inputs != 1 || node->n_outputs != 1 ||
        !PL_DTYPE_EQ(node->inputs[0].dtype, PL_DTYPE_F32))
        return cxx_host->status_create(PL_CODE_UNSUPPORTED, CXX_NAME ": Relu: not f32");
    pl_kernel *k = static_cast<pl_kernel *>(cxx_host->host_alloc(ctx->host_ctx, sizeof *k, 0));
    if (k == nullptr)
        return cxx_host->status_create(PL_CODE_OUT_OF_MEMORY, CXX_NAME ": out of memory");
    k->elements = 1;
    for (int32_t d = 0; d < node->outputs[0].ndim; d++)
        k->elements *= static_cast<size_t>(node->outputs[0].shape[d]);
    *out_kernel = k;
    return nullptr;
}

static pl_status *cxx_kernel_run(pl_module_ctx *, pl_kernel *k, const pl_run_args *args)
{
    pl_output_request req = args->requests != nullptr ? args->requests[0] : PL_REQ_WRITE;
    if (req == PL_REQ_NULL)
        return nullptr;
    const float *a = reinterpret_cast<const float *>(
        static_cast<const char *>(args->inputs[0].data) + args->inputs[0].byte_offset);
    float *y = reinterpret_cast<float *>(static_cast<char *>(args->outputs[0].data) +
                                         args->outputs[0].byte_offset);
    for (size_t i = 0; i < k->elements; i++) {
        float v = a[i] > 0.0f ? a[i] : 0.0f;
        y[i] = req == PL_REQ_ADD_TO ? y[i] + v : v;
    }
    return nullptr;
}

static void cxx_kernel_release(pl_module_ctx *ctx, pl_kernel *k)
{
    cxx_host->host_free(ctx->host_ctx, k);
}

// Before C++20 there are no designated initializers: the table is filled
// member by member from a zeroed one.
static pl_module_api cxx_make_api()
{
    pl_module_api a;
    std::memset(&a, 0, sizeof a);
    a.header = PL_ABI_HEADER_INIT(pl_module_api);
    a.name = CXX_NAME;
    a.version = CXX_VERSION;
    a.vendor = "Plinth's C++ test";
    a.capabilities = PL_CAP_IMPERATIVE | PL_CAP_HOST_MEMORY;
    a.init = cxx_init;
    a.shutdown = cxx_shutdown;
    a.device_count = cxx_device_count;
    a.device_properties = cxx_device_properties;
    a.configure = cxx_configure;
    a.get_kernel = cxx_get_kernel;
    a.kernel_run = cxx_kernel_run;
    a.kernel_release = cxx_kernel_release;
    return a;
}

static const pl_module_api cxx_api = cxx_make_api();

PL_MODULE_DEFINE_ENTRY(cxx_host, cxx_api);
