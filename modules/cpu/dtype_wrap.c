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
 * And the integer dtypes of ABI 1.11 run on the ops' i32 and i64 kernels:
 * i16 and u16 widen to i32, u32 to i64 (each value exactly), and the
 * results narrow back by wrapping, which is what the narrow arithmetic
 * gives (sums, products and shifts agree modulo 2^16; quotients, remainders,
 * comparisons, maxima of exact values are exact). u64 has no exact wider
 * dtype: ops that only add, multiply, negate or compare for equality take
 * its bits as i64 (two's complement agrees modulo 2^64), and ops that
 * order values (Less, Max, TopK, ArgMax, ReduceMax, ...) take them with
 * the top bit flipped, a map onto i64 that keeps the order; other ops
 * (Div, Mod, shifts, means) refuse u64.
 *
 * Elementwise unary ops (Relu, Exp, Sin, Clip, ...: output element i a
 * function of input element i alone) run tile by tile: the f32 kernel is
 * built for a 1-D tile of WRAP_TILE elements (and one for the last, shorter
 * tile), and each task of the host's pool widens a tile into a buffer on
 * its stack, runs the kernel there and narrows the result into the output,
 * so nothing of the tensor's size is allocated. Every other op gets whole
 * tensors, taken from the host for the run: the wrapped kernels are of
 * every shape (convolutions, reductions, gathers), and only a whole tensor
 * serves them all. Builders that read a float
 * constant of the graph (packed weights) check its byte count against f32
 * elements first, so a 16-bit constant is never read as f32: they just do
 * without the packing. */
#include <string.h>

#include "cpu_kernel.h"
#include "half.h"

/* What a tensor of the node is to the wrapper. */
enum {
    WRAP_KEEP = 0, WRAP_F16 = 1, WRAP_BF16 = 2, WRAP_I8 = 3, WRAP_U8 = 4,
    /* the integer kinds (their wide dtype is not f32) */
    WRAP_I16 = 5, WRAP_U16 = 6, WRAP_U32 = 7, WRAP_U64 = 8, WRAP_U64_ORDER = 9
};

/* The dtype a tensor of KIND is handed to the wrapped kernel as. */
static pl_dtype wrap_wide(unsigned char kind)
{
    return kind >= WRAP_U32 ? PL_DTYPE_I64 : kind >= WRAP_I16 ? PL_DTYPE_I32 : PL_DTYPE_F32;
}

/* Elements of a tile of the tiled path (two f32 tiles sit on a stack). */
#define WRAP_TILE 1024

typedef struct wrap_kernel {
    pl_kernel base;
    size_t n_in, n_out;
    size_t tiles;         /* the tiled path's tiles (base.inner[0] full ones,
                             base.inner[1] the last when shorter), or 0 */
    size_t last;          /* elements of the last tile */
    unsigned char kind[]; /* n_in inputs, then n_out outputs: WRAP_* */
} wrap_kernel;

/* The ops whose output element i depends on input element i alone (and
 * on scalar inputs: Clip's bounds): the tiled path's. */
static bool wrap_elementwise(const char *op)
{
    static const char *const ops[] = {
        "Relu", "Sigmoid", "Tanh", "Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Erf",
        "LeakyRelu", "Clip", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan", "Asin",
        "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign",
        "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Shrink",
        "IsNaN", "IsInf",
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* Elements of the tiled path's tensor for NODE (input 0 and output 0, of
 * as many elements, every other input a scalar), or 0 when it does not
 * take NODE. */
static size_t wrap_tiled_elements(const pl_node_desc *node)
{
    if (!wrap_elementwise(node->op) || node->n_outputs != 1 || node->n_inputs < 1)
        return 0;
    /* Fully known shapes only (the whole-tensor path refuses the others). */
    for (size_t i = 0; i < node->n_inputs + 1; i++) {
        const pl_tensor *t = i < node->n_inputs ? &node->inputs[i] : &node->outputs[0];
        if ((i == 0 || i == node->n_inputs) && t->ndim < 0)
            return 0;
        for (int32_t d = 0; d < t->ndim; d++)
            if (t->shape == NULL || t->shape[d] < 0)
                return 0;
    }
    size_t n = cpu_elements(node->inputs[0].shape, node->inputs[0].ndim);
    if (cpu_elements(node->outputs[0].shape, node->outputs[0].ndim) != n)
        return 0;
    for (size_t i = 1; i < node->n_inputs; i++)
        if (node->inputs[i].ndim >= 0 &&
            cpu_elements(node->inputs[i].shape, node->inputs[i].ndim) > 1)
            return 0;
    return n;
}

static bool wrap_in(const char *op, const char *const *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(op, ops[i]) == 0)
            return true;
    return false;
}

/* How a u64 tensor of OP is widened: its bits, its bits with the top one
 * flipped, or not at all. */
static unsigned char wrap_u64_kind(const char *op)
{
    static const char *const bits[] = {
        "Add", "Sub", "Mul", "Neg", "Equal", "Where", "BitwiseAnd", "BitwiseOr",
        "BitwiseXor", "BitwiseNot", "ReduceSum", "ReduceProd", "ReduceSumSquare", "CumSum",
        "Sum", "Expand", "Tile", "Pad", "Concat", "Trilu",
    };
    static const char *const order[] = {
        "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Max", "Min", "ArgMax", "ArgMin",
        "TopK", "ReduceMax", "ReduceMin", "MaxPool", "Clip", "Sort",
    };
    if (wrap_in(op, order, sizeof order / sizeof order[0]))
        return WRAP_U64_ORDER;
    if (wrap_in(op, bits, sizeof bits / sizeof bits[0]))
        return WRAP_U64;
    return WRAP_KEEP;
}

/* How the wrapper takes a tensor of DT in a node of OP. */
static unsigned char wrap_kind(const char *op, pl_dtype dt)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I16))
        return WRAP_I16;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U16))
        return WRAP_U16;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U32))
        return WRAP_U32;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U64))
        return wrap_u64_kind(op);
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

#define WRAP_U64_TOP ((uint64_t)1 << 63)

/* N elements of SRC, of KIND, as its wide dtype in DST. */
static void wrap_widen(unsigned char kind, const void *src, void *dst_v, size_t n)
{
    float *dst = dst_v;
    int32_t *d32 = dst_v;
    uint64_t *d64 = dst_v;
    if (kind == WRAP_I16)
        for (size_t i = 0; i < n; i++)
            d32[i] = ((const int16_t *)src)[i];
    else if (kind == WRAP_U16)
        for (size_t i = 0; i < n; i++)
            d32[i] = ((const uint16_t *)src)[i];
    else if (kind == WRAP_U32)
        for (size_t i = 0; i < n; i++)
            d64[i] = ((const uint32_t *)src)[i];
    else if (kind == WRAP_U64 || kind == WRAP_U64_ORDER)
        for (size_t i = 0; i < n; i++)
            d64[i] = ((const uint64_t *)src)[i] ^ (kind == WRAP_U64_ORDER ? WRAP_U64_TOP : 0);
    else if (kind == WRAP_I8)
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const int8_t *)src)[i];
    else if (kind == WRAP_U8)
        for (size_t i = 0; i < n; i++)
            dst[i] = ((const uint8_t *)src)[i];
    else
        cpu_half_widen(src, dst, n, kind == WRAP_F16);
}

/* N values of SRC, of KIND's wide dtype, into DST of KIND (ADD: added to
 * DST's values); integers wrap as integer sums do. */
static void wrap_narrow(unsigned char kind, const void *src_v, void *dst, size_t n, int add)
{
    const float *src = src_v;
    const uint32_t *s32 = src_v;
    const uint64_t *s64 = src_v;
    if (kind == WRAP_I16 || kind == WRAP_U16)
        for (size_t i = 0; i < n; i++) {
            uint16_t *d = (uint16_t *)dst + i;
            *d = (uint16_t)((add ? *d : 0u) + s32[i]);
        }
    else if (kind == WRAP_U32)
        for (size_t i = 0; i < n; i++) {
            uint32_t *d = (uint32_t *)dst + i;
            *d = (uint32_t)((add ? *d : 0u) + (uint32_t)s64[i]);
        }
    else if (kind == WRAP_U64 || kind == WRAP_U64_ORDER)
        for (size_t i = 0; i < n; i++) {
            uint64_t *d = (uint64_t *)dst + i;
            uint64_t v = s64[i] ^ (kind == WRAP_U64_ORDER ? WRAP_U64_TOP : 0);
            *d = (add ? *d : 0u) + v;
        }
    else if (kind == WRAP_I8)
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
    bool ints = false;
    for (size_t i = 0; i < n; i++) {
        w->kind[i] = wrap_kind(node->op, t[i].dtype);
        ints = ints || w->kind[i] >= WRAP_I16;
        if (w->kind[i] != WRAP_KEEP)
            t[i].dtype = wrap_wide(w->kind[i]);
    }
    pl_node_desc f32 = *node;
    f32.inputs = t;
    f32.outputs = t + node->n_inputs;
    /* The tiled path (f32 tiles): kernels for a tile of 1-D shape
     * [WRAP_TILE] and for the last tile; the whole-tensor kernel otherwise
     * and for the integer kinds. */
    size_t elements = ints ? 0 : wrap_tiled_elements(node);
    int64_t tile[2] = {WRAP_TILE, (int64_t)(elements % WRAP_TILE)};
    pl_status *st = NULL;
    if (elements > 0) {
        w->tiles = (elements + WRAP_TILE - 1) / WRAP_TILE;
        w->last = tile[1] ? (size_t)tile[1] : WRAP_TILE;
        for (int j = 0; j < 2 && st == NULL && (j == 0 || tile[1] != 0); j++) {
            t[0].ndim = t[node->n_inputs].ndim = 1;
            t[0].shape = t[node->n_inputs].shape = &tile[j];
            st = cpu_build_node(ctx, e, &f32, &w->base.inner[j]);
        }
    } else {
        st = cpu_build_node(ctx, e, &f32, &w->base.inner[0]);
    }
    cpu_host->host_free(ctx->host_ctx, t);
    if (st != NULL) {
        cpu_kernel_release(ctx, &w->base);
        return st;
    }
    pl_kernel *inner = w->base.inner[0];
    w->n_in = node->n_inputs;
    w->n_out = node->n_outputs;
    w->base.run_any = cpu_wrap_run;
    w->base.n_reads = inner->n_reads;
    w->base.n_outputs = node->n_outputs;
    w->base.out_elements = elements > 0 ? elements : inner->out_elements;
    w->base.inplace_ok = inner->inplace_ok;
    w->base.workspace_bytes = inner->workspace_bytes;
    *out_kernel = &w->base;
    return NULL;
}

/* Bytes of KIND's wide dtype for tensor T at a run, rounded up to 64;
 * false when its shape is not one a host tensor can have. */
static bool wrap_bytes(const pl_tensor *t, unsigned char kind, size_t *out)
{
    size_t n = pl_dtype_size(wrap_wide(kind));
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

/* ---- the tiled path ---------------------------------------------------- */

typedef struct wrap_tile_call {
    pl_module_ctx *ctx;
    const wrap_kernel *w;
    const pl_run_args *args;   /* the run's, for input 0 and output 0 */
    const pl_tensor *ins;      /* the inputs handed on: scalars widened */
    int add;                   /* PL_REQ_ADD_TO */
    pl_status *error;          /* the first failure of a tile (atomic) */
} wrap_tile_call;

static void wrap_tile_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    wrap_tile_call *c = arg;
    const wrap_kernel *w = c->w;
    const size_t n_in = c->args->n_inputs;
    const unsigned char in_kind = w->kind[0], out_kind = w->kind[w->n_in];
    const size_t in_size = pl_dtype_size(c->args->inputs[0].dtype);
    const size_t out_size = pl_dtype_size(c->args->outputs[0].dtype);
    float x[WRAP_TILE], y[WRAP_TILE];
    pl_tensor ins[3], out = c->args->outputs[0];
    pl_output_request req = PL_REQ_WRITE;
    int64_t len;
    for (size_t t = begin; t < end && __atomic_load_n(&c->error, __ATOMIC_RELAXED) == NULL; t++) {
        size_t n = t + 1 == w->tiles ? w->last : WRAP_TILE;
        const char *src = (const char *)wrap_data(&c->args->inputs[0]) + t * WRAP_TILE * in_size;
        char *dst = (char *)wrap_data(&c->args->outputs[0]) + t * WRAP_TILE * out_size;
        len = (int64_t)n;
        memcpy(ins, c->ins, n_in * sizeof *ins);
        ins[0].ndim = 1;
        ins[0].shape = &len;
        ins[0].byte_offset = 0;
        ins[0].data = in_kind != WRAP_KEEP ? (void *)x : (void *)src;
        if (in_kind != WRAP_KEEP) {
            wrap_widen(in_kind, src, x, n);
            ins[0].dtype = PL_DTYPE_F32;
        }
        out.ndim = 1;
        out.shape = &len;
        out.byte_offset = 0;
        out.data = out_kind != WRAP_KEEP ? (void *)y : (void *)dst;
        out.dtype = out_kind != WRAP_KEEP ? PL_DTYPE_F32 : out.dtype;
        pl_run_args a = *c->args;
        a.inputs = ins;
        a.outputs = &out;
        a.requests = &req;
        pl_status *st = cpu_kernel_run(c->ctx, w->base.inner[n == WRAP_TILE ? 0 : 1], &a);
        if (st == NULL && out_kind != WRAP_KEEP)
            wrap_narrow(out_kind, y, dst, n, c->add);
        pl_status *none = NULL;
        if (st != NULL && !__atomic_compare_exchange_n(&c->error, &none, st, false,
                                                       __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            cpu_host->status_free(st);
    }
}

static pl_status *wrap_run_tiled(pl_module_ctx *ctx, const wrap_kernel *w,
                                 const pl_run_args *args)
{
    const char *op = w->base.op;
    pl_output_request req = args->requests[0];
    if (req == PL_REQ_NULL)
        return NULL;
    const pl_tensor *out = &args->outputs[0];
    if (req != PL_REQ_WRITE && req != PL_REQ_INPLACE && req != PL_REQ_ADD_TO)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "unknown output request %d", (int)req);
    if ((req == PL_REQ_INPLACE && !w->base.inplace_ok) ||
        (req == PL_REQ_ADD_TO && w->kind[w->n_in] == WRAP_KEEP))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "output request %d not supported here",
                         (int)req);
    if (out->ndim < 0 || (out->ndim > 0 && out->shape == NULL) ||
        cpu_elements(out->shape, out->ndim) != w->base.out_elements || args->n_inputs > 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "output of the run does not have the %zu elements of the kernel",
                         w->base.out_elements);
    if (out->data == NULL || args->inputs[0].data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input 0 or the output has no data");
    /* Scalar inputs (Clip's bounds) widened once for every tile. */
    float scalars[3];
    pl_tensor ins[3];
    memcpy(ins, args->inputs, args->n_inputs * sizeof *ins);
    for (size_t i = 1; i < args->n_inputs && i < w->n_in; i++) {
        if (w->kind[i] == WRAP_KEEP || ins[i].data == NULL)
            continue;
        if (cpu_elements(ins[i].shape, ins[i].ndim) != 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "input %zu is not a scalar", i);
        wrap_widen(w->kind[i], wrap_data(&ins[i]), &scalars[i], 1);
        ins[i].data = &scalars[i];
        ins[i].byte_offset = 0;
        ins[i].dtype = PL_DTYPE_F32;
    }
    wrap_tile_call c = {.ctx = ctx, .w = w, .args = args, .ins = ins,
                        .add = req == PL_REQ_ADD_TO};
    cpu_host->parallel_for(ctx->host_ctx, w->tiles, 4, wrap_tile_chunk, &c);
    return c.error;
}

/* ---- the run -------------------------------------------------------------- */

static pl_status *cpu_wrap_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args)
{
    const wrap_kernel *w = (const wrap_kernel *)kernel;
    if (w->tiles > 0)
        return wrap_run_tiled(ctx, w, args);
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
        if (!wrap_bytes(t, kind, &bytes) || __builtin_add_overflow(total, bytes, &total))
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
        wrap_bytes(&ins[i], kind, &bytes);
        wrap_widen(kind, wrap_data(&args->inputs[i]), next,
                   cpu_elements(ins[i].shape, ins[i].ndim));
        ins[i].data = next;
        ins[i].byte_offset = 0;
        ins[i].dtype = wrap_wide(kind);
        next += bytes;
    }
    for (size_t o = 0; o < n_out; o++) {
        outs[o] = args->outputs[o];
        reqs[o] = args->requests[o];
        if (w->kind[w->n_in + o] == WRAP_KEEP || outs[o].data == NULL || reqs[o] == PL_REQ_NULL)
            continue;
        size_t bytes = 0;
        wrap_bytes(&outs[o], w->kind[w->n_in + o], &bytes);
        outs[o].data = next;
        outs[o].byte_offset = 0;
        outs[o].dtype = wrap_wide(w->kind[w->n_in + o]);
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
    pl_status *st = cpu_kernel_run(ctx, kernel->inner[0], &inner);
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
