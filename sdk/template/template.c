/* template: the smallest complete Plinth module, built against sdk/ alone.
 * Copy this folder, rename `template` (TMPL_NAME below, the CMake target and
 * your backend.ini section; [a-z0-9_] only), and replace the three kernels
 * with calls into your library.
 *
 * What it is: an imperative module (the core asks it for one kernel per
 * node and runs them) on host memory (PL_CAP_HOST_MEMORY: the tensors it
 * gets are addresses, so it needs no memory or copy functions). It runs
 * Relu, Add and Mul on f32 tensors, Add and Mul on two inputs of the same
 * shape, and refuses everything else with the reason, which `plinth
 * explain` shows beside the node. One device; one configure key,
 * `min_elements` (nodes with fewer elements are refused, so that the
 * configuration path has something to do: remove it in a real module).
 *
 * The rules it follows are numbered in sdk/README.md; the ones a first
 * module most often gets wrong are marked here. */
#include <plinth/module.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TMPL_NAME "template"
#define TMPL_VERSION "1.0.0"

/* Rule 5: the identity note, read before any code of the file runs. */
PL_MODULE_IDENTITY(TMPL_NAME, TMPL_VERSION);

/* Rule 4: the host table, stored by the entry point (one static table of
 * the core, the only static state a module may keep: rule 9). */
static const pl_host_api *tmpl_host;

/* Rule 9: one instance per runtime, made by init. */
struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    long min_elements;
};

enum tmpl_op { TMPL_RELU, TMPL_ADD, TMPL_MUL };

/* A kernel: what get_kernel decided, read by kernel_run (possibly on
 * several threads at once: it is never written after get_kernel). */
struct pl_kernel {
    enum tmpl_op op;
    size_t elements;
};

/* ---- life ----------------------------------------------------------------- */

static pl_status *tmpl_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    /* Rule 7: memory the core may free, or that lives as long as the
     * instance, comes from host_alloc. */
    pl_module_ctx *ctx = tmpl_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return tmpl_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        TMPL_NAME ": out of memory for the instance");
    ctx->host_ctx = host_ctx;
    ctx->min_elements = 0;
    *out_ctx = ctx;
    /* Rule 12: a module whose hardware is missing returns
     * PL_CODE_NO_DEVICE here with the reason, and is listed as no-device. */
    return NULL;
}

static void tmpl_shutdown(pl_module_ctx *ctx)
{
    if (ctx != NULL)
        tmpl_host->host_free(ctx->host_ctx, ctx);
}

/* ---- devices and configure ------------------------------------------------- */

static int tmpl_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *tmpl_device_properties(pl_module_ctx *ctx, int device,
                                         pl_device_properties *props)
{
    (void)ctx;
    if (device != 0)
        return tmpl_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                        TMPL_NAME ": no device %d (one device: 0)", device);
    /* Rule 1: write only what the core's struct_size covers. */
    if (PL_ABI_HAS_FIELD(pl_device_properties, props, name))
        snprintf(props->name, sizeof props->name, "Template device");
    PL_ABI_SET(pl_device_properties, props, device_type, PL_DEVICE_CPU);
    return NULL;
}

/* Rule 11: an unknown key or a bad value is refused naming the key (quoted:
 * the core then points at its line of backend.ini); the settings are
 * reported on every call, also when n_in is 0. Nothing changes on a
 * refusal. */
static pl_status *tmpl_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n_in,
                                 pl_kv_sink out, void *out_ctx)
{
    long min_elements = ctx->min_elements;
    for (size_t i = 0; i < n_in; i++) {
        if (strcmp(in[i].key, "min_elements") != 0)
            return tmpl_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                            TMPL_NAME ": unknown key '%s' (accepted: "
                                            "min_elements)",
                                            in[i].key);
        char *end = NULL;
        long v = strtol(in[i].value, &end, 10);
        if (end == in[i].value || *end != '\0' || v < 0)
            return tmpl_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                            TMPL_NAME ": bad value '%s' for key "
                                            "'min_elements' (expected a count >= 0)",
                                            in[i].value);
        min_elements = v;
    }
    ctx->min_elements = min_elements;
    if (out != NULL) {
        char text[32];
        snprintf(text, sizeof text, "%ld", ctx->min_elements);
        out(out_ctx, "min_elements", text);
        out(out_ctx, "ops", "Relu, Add, Mul (f32)");
    }
    return NULL;
}

/* ---- imperative mode ------------------------------------------------------- */

static size_t tmpl_elements(const pl_tensor *t)
{
    size_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

static int tmpl_same_shape(const pl_tensor *a, const pl_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return 1;
}

/* A refusal: PL_CODE_UNSUPPORTED and the reason, starting with the module's
 * name (rule 6). The node then falls back to the next backend. */
#define TMPL_REFUSE(...) tmpl_host->status_create(PL_CODE_UNSUPPORTED, TMPL_NAME ": " __VA_ARGS__)

static pl_status *tmpl_get_kernel(pl_module_ctx *ctx, int device, const pl_node_desc *node,
                                  pl_kernel **out_kernel, size_t *out_workspace)
{
    (void)device;
    *out_kernel = NULL;
    *out_workspace = 0;
    enum tmpl_op op;
    size_t n_in;
    if (node->domain[0] != '\0')
        return TMPL_REFUSE("%s: domain '%s' not supported", node->op, node->domain);
    if (strcmp(node->op, "Relu") == 0)
        op = TMPL_RELU, n_in = 1;
    else if (strcmp(node->op, "Add") == 0)
        op = TMPL_ADD, n_in = 2;
    else if (strcmp(node->op, "Mul") == 0)
        op = TMPL_MUL, n_in = 2;
    else
        return TMPL_REFUSE("%s: op not supported", node->op);
    if (node->n_inputs != n_in || node->n_outputs != 1)
        return TMPL_REFUSE("%s: %zu inputs, %zu outputs not supported", node->op,
                           node->n_inputs, node->n_outputs);
    for (size_t i = 0; i < n_in; i++) {
        const pl_tensor *t = &node->inputs[i];
        if (!PL_DTYPE_EQ(t->dtype, PL_DTYPE_F32))
            return TMPL_REFUSE("%s: input %zu is not f32", node->op, i);
        if (!tmpl_same_shape(t, &node->outputs[0]))
            return TMPL_REFUSE("%s: broadcasting not supported", node->op);
    }
    size_t elements = tmpl_elements(&node->outputs[0]);
    if ((long)elements < ctx->min_elements)
        return TMPL_REFUSE("%s: %zu elements, fewer than min_elements = %ld", node->op,
                           elements, ctx->min_elements);
    pl_kernel *k = tmpl_host->host_alloc(ctx->host_ctx, sizeof *k, 0);
    if (k == NULL)
        return tmpl_host->status_create(PL_CODE_OUT_OF_MEMORY,
                                        TMPL_NAME ": out of memory for a kernel");
    k->op = op;
    k->elements = elements;
    *out_kernel = k;
    return NULL;
}

/* Reentrant: several threads may run one kernel on different tensors. The
 * request says what to do with the output: write it, write it over the
 * input it aliases (elementwise code needs nothing special), add to it, or
 * skip it. Every pointer honours byte_offset. */
static pl_status *tmpl_kernel_run(pl_module_ctx *ctx, pl_kernel *k, const pl_run_args *args)
{
    (void)ctx;
    pl_output_request req = args->requests != NULL ? args->requests[0] : PL_REQ_WRITE;
    if (req == PL_REQ_NULL)
        return NULL;
    const float *a = (const float *)((const char *)args->inputs[0].data +
                                     args->inputs[0].byte_offset);
    const float *b = k->op == TMPL_RELU ? NULL
                                        : (const float *)((const char *)args->inputs[1].data +
                                                          args->inputs[1].byte_offset);
    float *y = (float *)((char *)args->outputs[0].data + args->outputs[0].byte_offset);
    for (size_t i = 0; i < k->elements; i++) {
        float v = k->op == TMPL_RELU ? (a[i] > 0.0f ? a[i] : 0.0f)
                  : k->op == TMPL_ADD ? a[i] + b[i]
                                      : a[i] * b[i];
        y[i] = req == PL_REQ_ADD_TO ? y[i] + v : v;
    }
    return NULL;
}

static void tmpl_kernel_release(pl_module_ctx *ctx, pl_kernel *k)
{
    tmpl_host->host_free(ctx->host_ctx, k);
}

/* ---- the table ------------------------------------------------------------- */

/* Rule 10: the capabilities promise the functions the core checks for. */
static const pl_module_api tmpl_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = TMPL_NAME,
    .version = TMPL_VERSION,
    .vendor = "Your company",
    .capabilities = PL_CAP_IMPERATIVE | PL_CAP_HOST_MEMORY,
    .init = tmpl_init,
    .shutdown = tmpl_shutdown,
    .device_count = tmpl_device_count,
    .device_properties = tmpl_device_properties,
    .configure = tmpl_configure,
    .get_kernel = tmpl_get_kernel,
    .kernel_run = tmpl_kernel_run,
    .kernel_release = tmpl_kernel_release,
};

/* Rules 3 and 4: the one exported symbol, which negotiates the ABI. */
PL_MODULE_DEFINE_ENTRY(tmpl_host, tmpl_api);
