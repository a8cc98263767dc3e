/* dtype_wrap.c — f16 and bf16 on the cpu module: every op whose own
 * builder refuses those dtypes computes them in f32. get_kernel (kernel.c)
 * hands a refused node with a 16-bit float tensor here; the wrapper builds
 * the op's f32 kernel for the node with every f16/bf16 tensor described as
 * f32 (integer and bool tensors, indices and axes, stay as they are) and
 * wraps it. A run widens each 16-bit input into an f32 buffer (exactly),
 * runs the f32 kernel on those buffers, and narrows each 16-bit output
 * once, to nearest with ties to even (half.h). So an f16 op gives the f32
 * result rounded once, which is what ONNX's reference computes too (it
 * runs f16 ops in f32 numpy and casts back).
 *
 * The same wrapper runs MaxPool on i8 and u8 (opset 12 on): every 8-bit
 * integer is an f32, and a maximum of them is one of them, so the f32
 * kernel's result converts back exactly.
 *
 * The buffers are whole tensors, taken from the host for the run: the
 * wrapped kernels are of every shape (convolutions, reductions, gathers),
 * and only a whole tensor serves them all. Builders that read a float
 * constant of the graph (packed weights) check its byte count against f32
 * elements first, so a 16-bit constant is never read as f32: they just do
 * without the packing. */
#include <string.h>

#include "cpu_kernel.h"
#include "half.h"

/* What a tensor of the node is to the wrapper. */
enum { WRAP_KEEP = 0, WRAP_F16 = 1, WRAP_BF16 = 2, WRAP_I8 = 3, WRAP_U8 = 4 };

typedef struct wrap_kernel {
    pl_kernel base;
    size_t n_in, n_out;
    unsigned char kind[]; /* n_in inputs, then n_out outputs: WRAP_* */
} wrap_kernel;

/* How the wrapper takes a tensor of DT in a node of OP. */
static unsigned char wrap_kind(const char *op, pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        return WRAP_F16;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        return WRAP_BF16;
    bool exact = strcmp(op, "MaxPool") == 0;
    if (exact && PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        return WRAP_I8;
    if (exact && PL_DTYPE_EQ(dt, PL_DTYPE_U8))
        return WRAP_U8;
    return WRAP_KEEP;
}

bool cpu_wrap_wanted(const pl_node_desc *node)
{
    for (size_t i = 0; i < node->n_inputs; i++)
        if (wrap_kind(node->op, node->inputs[i].dtype) != WRAP_KEEP)
            return true;
    for (size_t o = 0; o < node->n_outputs; o++)
        if (wrap_kind(node->op, node->outputs[o].dtype) != WRAP_KEEP)
            return true;
    return false;
}

/* N elements of SRC, of KIND, as f32 in DST. */
static void wrap_widen(unsigned char kind, const void *src, float *dst, size_t n)
{
    if (kind == WRAP_I8)
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const int8_t *)src)[i];
    else if (kind == WRAP_U8)
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i];
    else
        cpu_half_widen(src, dst, n, kind == WRAP_F16);
}

/* N floats of SRC into DST of KIND (ADD: added to DST's values); 8-bit
 * integers wrap as integer sums do. */
static void wrap_narrow(unsigned char kind, const float *src, void *dst, size_t n, int add)
{
    if (kind == WRAP_I8)
        for (size_t i = 0; i < n; i++) {
            int8_t *d = (int8_t *)dst + i;
            *d = (int8_t)(uint8_t)((add ? (unsigned)*d : 0u) + (unsigned)(int)src[i]);
        }
    else if (kind == WRAP_U8)
        for (size_t i = 0; i < n; i++) {
            uint8_t *d = (uint8_t *)dst + i;
            *d = (uint8_t)((add ? *d : 0u) + (unsigned)(int)src[i]);
        }
    else
        cpu_half_narrow(src, dst, n, kind == WRAP_F16, add);
}

static pl_status *cpu_wrap_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args);

pl_status *cpu_wrap_build(pl_module_ctx *ctx, const cpu_op_entry *e, const pl_node_desc *node,
                          pl_kernel **out_kernel)
{
    *out_kernel = NULL;
    size_t n = node->n_inputs + node->n_outputs;
    pl_tensor *t = cpu_host->host_alloc(ctx->host_ctx, n * sizeof *t, 0);
    wrap_kernel *w = (wrap_kernel *)cpu_kernel_alloc(ctx, sizeof *w + n, node->op, NULL);
    if (t == NULL || w == NULL) {
        cpu_host->host_free(ctx->host_ctx, t);
        cpu_kernel_release(ctx, (pl_kernel *)w);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    }
    if (node->n_inputs > 0)
        memcpy(t, node->inputs, node->n_inputs * sizeof *t);
    memcpy(t + node->n_inputs, node->outputs, node->n_outputs * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        w->kind[i] = wrap_kind(node->op, t[i].dtype);
        if (w->kind[i] != WRAP_KEEP)
            t[i].dtype = PL_DTYPE_F32;
    }
    pl_node_desc f32 = *node;
    f32.inputs = t;
    f32.outputs = t + node->n_inputs;
    pl_kernel *inner = NULL;
    pl_status *st = cpu_build_node(ctx, e, &f32, &inner);
    cpu_host->host_free(ctx->host_ctx, t);
    if (st != NULL) {
        cpu_kernel_release(ctx, &w->base);
        return st;
    }
    w->n_in = node->n_inputs;
    w->n_out = node->n_outputs;
    w->base.inner = inner;
    w->base.run_any = cpu_wrap_run;
    w->base.n_reads = inner->n_reads;
    w->base.n_outputs = node->n_outputs;
    w->base.out_elements = inner->out_elements;
    w->base.inplace_ok = inner->inplace_ok;
    w->base.workspace_bytes = inner->workspace_bytes;
    *out_kernel = &w->base;
    return NULL;
}

/* Bytes of f32 for tensor T at a run, rounded up to 64; false when its
 * shape is not one a host tensor can have. */
static bool wrap_bytes(const pl_tensor *t, size_t *out)
{
    size_t n = sizeof(float);
    if (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL))
        return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] < 0 || __builtin_mul_overflow(n, (size_t)t->shape[d], &n))
            return false;
    if (n > SIZE_MAX - 63)
        return false;
    *out = (n + 63) & ~(size_t)63;
    return true;
}

static void *wrap_data(const pl_tensor *t)
{
    return (char *)t->data + t->byte_offset;
}

static pl_status *cpu_wrap_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args)
{
    const wrap_kernel *w = (const wrap_kernel *)kernel;
    const size_t n_in = args->n_inputs, n_out = args->n_outputs;
    /* One block: the tensors and requests handed on, then the buffers. */
    size_t head = (n_in + n_out) * sizeof(pl_tensor) + n_out * sizeof(pl_output_request);
    size_t total = (head + 63) & ~(size_t)63;
    for (size_t j = 0; j < n_in + n_out; j++) {
        bool is_out = j >= n_in;
        size_t idx = is_out ? j - n_in : j;
        const pl_tensor *t = is_out ? &args->outputs[idx] : &args->inputs[idx];
        unsigned char kind = is_out ? w->kind[w->n_in + idx] : (idx < w->n_in ? w->kind[idx] : 0);
        if (kind == WRAP_KEEP || t->data == NULL || (is_out && args->requests[idx] == PL_REQ_NULL))
            continue;
        size_t bytes = 0;
        if (!wrap_bytes(t, &bytes) || __builtin_add_overflow(total, bytes, &total))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                             "%s %zu of the run has a shape no buffer can hold",
                             is_out ? "output" : "input", idx);
    }
    char *block = cpu_host->host_alloc(ctx->host_ctx, total, 64);
    if (block == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                         "out of memory for %zu bytes of f32 copies", total);
    pl_tensor *ins = (pl_tensor *)(void *)block, *outs = ins + n_in;
    pl_output_request *reqs = (pl_output_request *)(void *)(outs + n_out);
    char *next = block + ((head + 63) & ~(size_t)63);
    for (size_t i = 0; i < n_in; i++) {
        ins[i] = args->inputs[i];
        unsigned char kind = i < w->n_in ? w->kind[i] : WRAP_KEEP;
        if (kind == WRAP_KEEP || ins[i].data == NULL)
            continue;
        size_t bytes = 0;
        wrap_bytes(&ins[i], &bytes);
        wrap_widen(kind, wrap_data(&args->inputs[i]), (float *)(void *)next,
                   cpu_elements(ins[i].shape, ins[i].ndim));
        ins[i].data = next;
        ins[i].byte_offset = 0;
        ins[i].dtype = PL_DTYPE_F32;
        next += bytes;
    }
    for (size_t o = 0; o < n_out; o++) {
        outs[o] = args->outputs[o];
        reqs[o] = args->requests[o];
        if (w->kind[w->n_in + o] == WRAP_KEEP || outs[o].data == NULL || reqs[o] == PL_REQ_NULL)
            continue;
        size_t bytes = 0;
        wrap_bytes(&outs[o], &bytes);
        outs[o].data = next;
        outs[o].byte_offset = 0;
        outs[o].dtype = PL_DTYPE_F32;
        /* The f32 result goes to its own buffer; an in-place output's
         * input was widened already, and a sum is done on narrowing. */
        if (reqs[o] == PL_REQ_INPLACE || reqs[o] == PL_REQ_ADD_TO)
            reqs[o] = PL_REQ_WRITE;
        next += bytes;
    }
    pl_run_args inner = *args;
    inner.inputs = ins;
    inner.outputs = outs;
    inner.requests = reqs;
    pl_status *st = cpu_kernel_run(ctx, kernel->inner, &inner);
    for (size_t o = 0; st == NULL && o < n_out; o++) {
        unsigned char kind = w->kind[w->n_in + o];
        pl_output_request req = args->requests[o];
        if (kind == WRAP_KEEP || outs[o].data == args->outputs[o].data || req == PL_REQ_NULL)
            continue;
        wrap_narrow(kind, outs[o].data, wrap_data(&args->outputs[o]),
                    cpu_elements(outs[o].shape, outs[o].ndim), req == PL_REQ_ADD_TO);
    }
    cpu_host->host_free(ctx->host_ctx, block);
    return st;
}
