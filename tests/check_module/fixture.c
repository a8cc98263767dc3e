/* fixture.c — the modules `plinth check-module` is tested on: one small
 * symbolic module on device memory of its own (Relu, Add, Mul on f32, one
 * node per compiled subgraph, exportable), built once as it should be
 * (FIX_BREAK 0) and once per rule it can break (FIX_BREAK 1..). Handles
 * are pointers to a header before the bytes, so nothing but the module
 * may treat one as the data's address.
 *
 * Built with -DFIX_NAME="\"fix_...\"" and -DFIX_BREAK=N
 * (tests/check_module/CMakeLists.txt names each N). */
#include <plinth/module.h>
#include <plinth/node_times.h>

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX_GOOD 0
#define FIX_WRONG_RESULT 1   /* Relu gives |x| */
#define FIX_RACY 2           /* every run computes in one static buffer */
#define FIX_IGNORES_OFFSET 3 /* kernels take a handle's bytes as the tensor */
#define FIX_COPY_OFFSET 4    /* copy_to_device ignores dst_offset */
#define FIX_BAD_IMPORT 5     /* import_compiled accepts any blob */
#define FIX_NO_REASON 6      /* refusals with an empty reason */
#define FIX_FOREIGN_STATUS 7 /* configure returns a status of its own */
#define FIX_UNKNOWN_KEY 8    /* configure accepts any key */
#define FIX_NO_NEGOTIATION 9 /* the entry point accepts any ABI major */
#define FIX_SHARED_ZERO 10   /* zero-byte allocations share one handle */
#define FIX_CRASH 11         /* Mul dereferences NULL */
#define FIX_STOP_TIMES 12    /* node times keep counting after PL_TIMES_STOP */

#ifndef FIX_BREAK
#define FIX_BREAK FIX_GOOD
#endif

PL_MODULE_IDENTITY(FIX_NAME, "1.0.0");

static const pl_host_api *fix_host;

struct pl_module_ctx {
    pl_host_ctx *host_ctx;
    int scale; /* the one configure key, "scale" (1 or 2: Mul's factor) */
};

#define FIX_MAGIC 0x46495842u

typedef struct fix_buf {
    uint32_t magic;
    size_t bytes;
    struct fix_buf *prev, *next; /* every live buffer, for release_all */
    unsigned char data[];
} fix_buf;

static pthread_mutex_t fix_live_mu = PTHREAD_MUTEX_INITIALIZER;
static fix_buf fix_live = {0, 0, &fix_live, &fix_live};

enum fix_op { FIX_RELU, FIX_ADD, FIX_MUL };

struct pl_compiled {
    enum fix_op op;
    size_t elements;
    int scale;
    size_t arg[2]; /* node input k is the run's input arg[k] (the view's order) */
    pl_node_times times; /* ABI 1.17: its one node's */
    pl_node_time time_of_node;
    uint64_t run_ns;
};

#define FIX_REFUSE(...) fix_host->status_create(PL_CODE_UNSUPPORTED, __VA_ARGS__)

/* ---- life and configure -------------------------------------------------------- */

static pl_status *fix_init(pl_host_ctx *host_ctx, pl_module_ctx **out_ctx)
{
    pl_module_ctx *ctx = fix_host->host_alloc(host_ctx, sizeof *ctx, 0);
    if (ctx == NULL)
        return fix_host->status_create(PL_CODE_OUT_OF_MEMORY, FIX_NAME ": out of memory");
    ctx->host_ctx = host_ctx;
    ctx->scale = 1;
    *out_ctx = ctx;
    return NULL;
}

static void fix_shutdown(pl_module_ctx *ctx)
{
    fix_host->host_free(ctx->host_ctx, ctx);
}

static int fix_device_count(pl_module_ctx *ctx)
{
    (void)ctx;
    return 1;
}

static pl_status *fix_device_properties(pl_module_ctx *ctx, int device,
                                        pl_device_properties *p)
{
    (void)ctx;
    if (device != 0)
        return fix_host->status_create(PL_CODE_INVALID_ARGUMENT, "no device %d", device);
    PL_ABI_SET(pl_device_properties, p, device_type, PL_DEVICE_EXT);
    snprintf(p->name, sizeof p->name, "fixture device");
    return NULL;
}

#if FIX_BREAK == FIX_FOREIGN_STATUS
static struct {
    int code;
    char text[32];
} fix_own_status = {PL_CODE_INVALID_ARGUMENT, "bad key"};
#endif

static pl_status *fix_configure(pl_module_ctx *ctx, const pl_kv *in, size_t n, pl_kv_sink out,
                                void *out_ctx)
{
    int scale = ctx->scale;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(in[i].key, "scale") == 0 &&
            (strcmp(in[i].value, "1") == 0 || strcmp(in[i].value, "2") == 0)) {
            scale = in[i].value[0] - '0';
            continue;
        }
#if FIX_BREAK == FIX_FOREIGN_STATUS
        return (pl_status *)(void *)&fix_own_status;
#elif FIX_BREAK == FIX_UNKNOWN_KEY
        continue;
#else
        return fix_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       FIX_NAME ": unknown key or bad value '%s' (accepted: "
                                       "scale = 1|2)", in[i].key);
#endif
    }
    ctx->scale = scale;
    if (out != NULL)
        out(out_ctx, "scale", scale == 1 ? "1" : "2");
    return NULL;
}

/* ---- memory ---------------------------------------------------------------------- */

#if FIX_BREAK == FIX_SHARED_ZERO
static fix_buf fix_zero = {FIX_MAGIC, 0, NULL, NULL};
#endif

static pl_status *fix_mem_alloc(pl_module_ctx *ctx, int device, size_t bytes, size_t align,
                                void **out)
{
    (void)ctx;
    (void)device;
    (void)align;
    *out = NULL;
#if FIX_BREAK == FIX_SHARED_ZERO
    if (bytes == 0) {
        *out = &fix_zero;
        return NULL;
    }
#endif
    fix_buf *b = calloc(1, sizeof *b + bytes + 64);
    if (b == NULL)
        return fix_host->status_create(PL_CODE_OUT_OF_MEMORY, FIX_NAME ": out of memory");
    b->magic = FIX_MAGIC;
    b->bytes = bytes;
    pthread_mutex_lock(&fix_live_mu);
    b->next = fix_live.next;
    b->prev = &fix_live;
    b->next->prev = b;
    fix_live.next = b;
    pthread_mutex_unlock(&fix_live_mu);
    *out = b;
    return NULL;
}

static void fix_mem_free(pl_module_ctx *ctx, int device, void *p)
{
    (void)ctx;
    (void)device;
#if FIX_BREAK == FIX_SHARED_ZERO
    if (p == &fix_zero)
        return;
#endif
    fix_buf *b = p;
    pthread_mutex_lock(&fix_live_mu);
    bool live = false;
    for (fix_buf *x = fix_live.next; x != &fix_live && !live; x = x->next)
        live = x == b;
    if (live) { /* freeing twice, or a handle not ours: survived, not freed */
        b->prev->next = b->next;
        b->next->prev = b->prev;
        b->magic = 0;
        free(b);
    }
    pthread_mutex_unlock(&fix_live_mu);
}

static void fix_mem_release_all(pl_module_ctx *ctx, int device)
{
    (void)ctx;
    (void)device;
    pthread_mutex_lock(&fix_live_mu);
    while (fix_live.next != &fix_live) {
        fix_buf *b = fix_live.next;
        fix_live.next = b->next;
        free(b);
    }
    fix_live.prev = &fix_live;
    pthread_mutex_unlock(&fix_live_mu);
}

/* The bytes OFF into the buffer behind HANDLE; NULL for no buffer (a
 * zero-element tensor may come without one). */
static unsigned char *fix_bytes(const void *handle, size_t off)
{
    return handle == NULL ? NULL : ((fix_buf *)(uintptr_t)handle)->data + off;
}

static pl_status *fix_copy_to_device(pl_module_ctx *ctx, int device, void *dst, size_t off,
                                     const void *src, size_t n)
{
    (void)ctx;
    (void)device;
#if FIX_BREAK == FIX_COPY_OFFSET
    off = 0;
#endif
    if (n > 0)
        memcpy(fix_bytes(dst, off), src, n);
    return NULL;
}

static pl_status *fix_copy_to_host(pl_module_ctx *ctx, int device, void *dst, const void *src,
                                   size_t off, size_t n)
{
    (void)ctx;
    (void)device;
    if (n > 0)
        memcpy(dst, fix_bytes(src, off), n);
    return NULL;
}

static pl_status *fix_copy_d2d(pl_module_ctx *ctx, int sd, const void *src, size_t so, int dd,
                               void *dst, size_t d_o, size_t n)
{
    (void)ctx;
    (void)sd;
    (void)dd;
    if (n > 0)
        memmove(fix_bytes(dst, d_o), fix_bytes(src, so), n);
    return NULL;
}

/* ---- symbolic ---------------------------------------------------------------------- */

/* Whether node I of VIEW is one of ours; the reason when not. */
static const char *fix_why_not(const pl_graph_view *view, size_t i, enum fix_op *out_op,
                               size_t *out_elements)
{
    const pl_graph_api *g = fix_host->graph;
    const char *op = g->node_op(view, i);
    const char *domain = g->node_domain(view, i);
    if (domain != NULL && domain[0] != '\0')
        return "not the default domain";
    if (strcmp(op, "Relu") == 0)
        *out_op = FIX_RELU;
    else if (strcmp(op, "Add") == 0)
        *out_op = FIX_ADD;
    else if (strcmp(op, "Mul") == 0)
        *out_op = FIX_MUL;
    else
        return "only Relu, Add and Mul";
    size_t n_in = g->node_input_count(view, i);
    const int64_t *first = NULL;
    int32_t first_nd = 0;
    for (size_t k = 0; k < n_in + 1; k++) {
        int64_t t = k < n_in ? g->node_input(view, i, k) : g->node_output(view, i, 0);
        pl_dtype dt;
        int32_t nd = 0;
        const int64_t *dims = NULL;
        if (t < 0 || !g->tensor_type(view, t, &dt, &nd, &dims) || nd < 0)
            return "a tensor of unknown type";
        if (!PL_DTYPE_EQ(dt, PL_DTYPE_F32))
            return "f32 only";
        if (k == 0) {
            first = dims;
            first_nd = nd;
            continue;
        }
        if (nd != first_nd || (nd > 0 && memcmp(dims, first, (size_t)nd * sizeof *dims) != 0))
            return "inputs and output of one shape only (no broadcast)";
    }
    size_t e = 1;
    for (int32_t d = 0; d < first_nd; d++) {
        if (first[d] < 0)
            return "unknown dims";
        e *= (size_t)first[d];
    }
    *out_elements = e;
    return NULL;
}

static pl_status *fix_supported(pl_module_ctx *ctx, int device, const pl_graph_view *view,
                                pl_support_sink sink, void *sink_ctx)
{
    (void)ctx;
    (void)device;
    size_t n = fix_host->graph->node_count(view);
    for (size_t i = 0; i < n; i++) {
        enum fix_op op;
        size_t e;
        const char *why = fix_why_not(view, i, &op, &e);
#if FIX_BREAK == FIX_NO_REASON
        if (why != NULL)
            why = "";
#endif
        sink(sink_ctx, i, why == NULL, why);
    }
    return NULL;
}

static pl_status *fix_compile(pl_module_ctx *ctx, int device, const pl_graph_view *view,
                              pl_compiled **out)
{
    (void)device;
    *out = NULL;
    if (fix_host->graph->node_count(view) != 1)
        return FIX_REFUSE(FIX_NAME ": one node per subgraph");
    enum fix_op op;
    size_t e = 0;
    const char *why = fix_why_not(view, 0, &op, &e);
    if (why != NULL)
        return FIX_REFUSE(FIX_NAME ": %s", why);
    /* The run's inputs come in the view's input order, each tensor once:
     * Add(x, x) has one. */
    const pl_graph_api *g = fix_host->graph;
    size_t arg[2] = {0, 0};
    for (size_t k = 0; k < g->node_input_count(view, 0) && k < 2; k++) {
        int64_t t = g->node_input(view, 0, k);
        size_t i = 0;
        while (i < g->input_count(view) && g->input(view, i) != t)
            i++;
        if (i == g->input_count(view))
            return FIX_REFUSE(FIX_NAME ": input %zu is a constant", k);
        arg[k] = i;
    }
    pl_compiled *c = fix_host->host_alloc(ctx->host_ctx, sizeof *c, 0);
    if (c == NULL)
        return fix_host->status_create(PL_CODE_OUT_OF_MEMORY, FIX_NAME ": out of memory");
    *c = (pl_compiled){.op = op, .elements = e, .scale = ctx->scale, .arg = {arg[0], arg[1]}};
    c->times = (pl_node_times){.n = 1, .times = &c->time_of_node, .run_ns = &c->run_ns};
    *out = c;
    return NULL;
}

static const float *fix_in(const pl_tensor *t)
{
#if FIX_BREAK == FIX_IGNORES_OFFSET
    return (const float *)(const void *)fix_bytes(t->data, 0);
#else
    return (const float *)(const void *)fix_bytes(t->data, t->byte_offset);
#endif
}

#if FIX_BREAK == FIX_RACY
static float fix_scratch[1 << 16];
#endif

static pl_status *fix_run(pl_module_ctx *ctx, pl_compiled *c, const pl_run_args *a)
{
    (void)ctx;
    pl_node_times_run_begin(&c->times);
    uint64_t t0 = pl_node_times_now();
    const float *x = fix_in(&a->inputs[c->arg[0]]);
    const float *y = c->op == FIX_RELU ? NULL : fix_in(&a->inputs[c->arg[1]]);
    float *out = (float *)(void *)fix_bytes(a->outputs[0].data,
#if FIX_BREAK == FIX_IGNORES_OFFSET
                                            0
#else
                                            a->outputs[0].byte_offset
#endif
    );
#if FIX_BREAK == FIX_RACY
    float *z = c->elements <= (1u << 16) ? fix_scratch : out;
#else
    float *z = out;
#endif
#if FIX_BREAK == FIX_CRASH
    if (c->op == FIX_MUL)
        y = NULL;
#endif
    for (size_t i = 0; i < c->elements; i++) {
        switch (c->op) {
        case FIX_RELU:
#if FIX_BREAK == FIX_WRONG_RESULT
            z[i] = x[i] < 0 ? -x[i] : x[i];
#else
            z[i] = x[i] < 0 ? 0 : x[i];
#endif
            break;
        case FIX_ADD: z[i] = x[i] + y[i]; break;
        case FIX_MUL: z[i] = x[i] * y[i] * (float)c->scale; break;
        }
#if FIX_BREAK == FIX_RACY
        if (i % 64 == 0)
            sched_yield();
#endif
    }
    if (z != out && c->elements > 0)
        memcpy(out, z, c->elements * sizeof *out);
    pl_node_times_add(&c->times, 0, pl_node_times_now() - t0);
    pl_node_times_run_end(&c->times);
    return NULL;
}

static int fix_compiled_times(pl_module_ctx *ctx, pl_compiled *c, int op, pl_node_time *out,
                              size_t n)
{
    (void)ctx;
#if FIX_BREAK == FIX_STOP_TIMES
    if (op == PL_TIMES_STOP)
        return 1;
#endif
    return pl_node_times_op(&c->times, op, out, n);
}

static void fix_release(pl_module_ctx *ctx, pl_compiled *c)
{
    fix_host->host_free(ctx->host_ctx, c);
}

/* The blob: "FIX1", the op and the element count, each 8 bytes. */
static pl_status *fix_export(pl_module_ctx *ctx, pl_compiled *c, pl_blob_sink sink,
                             void *sink_ctx)
{
    (void)ctx;
    uint64_t words[3] = {0x31584946u, (uint64_t)c->op, (uint64_t)c->elements};
    sink(sink_ctx, words, sizeof words);
    return NULL;
}

static pl_status *fix_import(pl_module_ctx *ctx, int device, const pl_graph_view *view,
                             const void *blob, size_t n, pl_compiled **out)
{
    *out = NULL;
    pl_status *st = fix_compile(ctx, device, view, out);
    if (st != NULL)
        return st;
#if FIX_BREAK != FIX_BAD_IMPORT
    uint64_t words[3];
    if (n != sizeof words) {
        fix_release(ctx, *out);
        *out = NULL;
        return fix_host->status_create(PL_CODE_INCOMPATIBLE,
                                       FIX_NAME ": blob of %zu bytes, not 24", n);
    }
    memcpy(words, blob, sizeof words);
    if (words[0] != 0x31584946u || words[1] != (uint64_t)(*out)->op ||
        words[2] != (uint64_t)(*out)->elements) {
        fix_release(ctx, *out);
        *out = NULL;
        return fix_host->status_create(PL_CODE_INCOMPATIBLE,
                                       FIX_NAME ": blob written for another subgraph");
    }
#else
    (void)blob;
    (void)n;
#endif
    return NULL;
}

static const pl_module_api fix_api = {
    .header = PL_ABI_HEADER_INIT(pl_module_api),
    .name = FIX_NAME,
    .version = "1.0.0",
    .vendor = "Plinth tests",
    .capabilities = PL_CAP_SYMBOLIC | PL_CAP_EXPORT,
    .init = fix_init,
    .shutdown = fix_shutdown,
    .device_count = fix_device_count,
    .device_properties = fix_device_properties,
    .configure = fix_configure,
    .mem_alloc = fix_mem_alloc,
    .mem_free = fix_mem_free,
    .mem_release_all = fix_mem_release_all,
    .copy_to_device = fix_copy_to_device,
    .copy_to_host = fix_copy_to_host,
    .copy_device_to_device = fix_copy_d2d,
    .supported_nodes = fix_supported,
    .compile = fix_compile,
    .run = fix_run,
    .release = fix_release,
    .export_compiled = fix_export,
    .import_compiled = fix_import,
    .compiled_times = fix_compiled_times,
};

#if FIX_BREAK == FIX_NO_NEGOTIATION
PL_MODULE_ENTRY
{
    if (host == NULL || inout_abi_major == NULL || out_api == NULL)
        return PL_CODE_INVALID_ARGUMENT;
    fix_host = host;
    *out_api = &fix_api;
    return PL_CODE_OK;
}
#else
PL_MODULE_DEFINE_ENTRY(fix_host, fix_api);
#endif
