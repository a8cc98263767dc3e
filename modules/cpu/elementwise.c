/* elementwise.c — the cpu module's elementwise kernels: Add Sub Mul Div with
 * NumPy broadcasting, and Relu Sigmoid Tanh.
 *
 * A binary kernel precomputes, for the output's shape with its size-1 dims
 * dropped and runs of dims merged wherever both inputs step through them
 * contiguously (or both broadcast them), the stride of each input in each
 * dim: 0 where it broadcasts. Same-shape operands then collapse to one dim,
 * a scalar to one dim of stride 0, a row broadcast to two. A run walks
 * chunks of the flat output index on the host's pool; the innermost dim is a
 * simple loop (stride 1 or 0 per operand) the compiler vectorises. Every
 * loop reads an element before writing the same index, so an output that
 * aliases input 0 (PL_REQ_INPLACE) is safe. */
#include <math.h>
#include <string.h>

#include "cpu_kernel.h"
#include "fastmath.h"

/* Elements per parallel_for chunk, at least: enough to pay for a hand-off. */
#define CPU_EW_GRAIN 32768
#define CPU_EW_GRAIN_TRANSCENDENTAL 4096

typedef enum cpu_binary_op { CPU_ADD, CPU_SUB, CPU_MUL, CPU_DIV } cpu_binary_op;
typedef enum cpu_unary_op { CPU_RELU, CPU_SIGMOID, CPU_TANH } cpu_unary_op;

typedef struct cpu_binary_kernel {
    pl_kernel base;
    cpu_binary_op op;
    int ndim;                       /* >= 1 after collapsing */
    int64_t dims[CPU_MAX_RANK];
    int64_t a_stride[CPU_MAX_RANK];
    int64_t b_stride[CPU_MAX_RANK];
} cpu_binary_kernel;

typedef struct cpu_unary_kernel {
    pl_kernel base;
    cpu_unary_op op;
} cpu_unary_kernel;

/* ---- inner loops --------------------------------------------------------- */

/* The innermost loop of OP for each stride pattern (both operands step,
 * A is a scalar, B is a scalar) and each request (write, add to). */
#define CPU_BINARY_INNER(NAME, EXPR)                                         \
    static void NAME(float *out, const float *a, const float *b, size_t n,   \
                     int a_step, int b_step, int add)                        \
    {                                                                        \
        if (a_step && b_step) {                                              \
            if (add)                                                         \
                for (size_t i = 0; i < n; i++) {                             \
                    float x = a[i], y = b[i];                                \
                    out[i] += (EXPR);                                        \
                }                                                            \
            else                                                             \
                for (size_t i = 0; i < n; i++) {                             \
                    float x = a[i], y = b[i];                                \
                    out[i] = (EXPR);                                         \
                }                                                            \
        } else if (b_step) {                                                 \
            const float x = a[0];                                            \
            if (add)                                                         \
                for (size_t i = 0; i < n; i++) {                             \
                    float y = b[i];                                          \
                    out[i] += (EXPR);                                        \
                }                                                            \
            else                                                             \
                for (size_t i = 0; i < n; i++) {                             \
                    float y = b[i];                                          \
                    out[i] = (EXPR);                                         \
                }                                                            \
        } else {                                                             \
            const float y = b[0];                                            \
            if (add)                                                         \
                for (size_t i = 0; i < n; i++) {                             \
                    float x = a[i];                                          \
                    out[i] += (EXPR);                                        \
                }                                                            \
            else                                                             \
                for (size_t i = 0; i < n; i++) {                             \
                    float x = a[i];                                          \
                    out[i] = (EXPR);                                         \
                }                                                            \
        }                                                                    \
    }

CPU_BINARY_INNER(cpu_add_inner, x + y)
CPU_BINARY_INNER(cpu_sub_inner, x - y)
CPU_BINARY_INNER(cpu_mul_inner, x * y)
CPU_BINARY_INNER(cpu_div_inner, x / y)

typedef void (*cpu_binary_inner_fn)(float *out, const float *a, const float *b, size_t n,
                                    int a_step, int b_step, int add);

static const cpu_binary_inner_fn cpu_binary_inners[] = {
    [CPU_ADD] = cpu_add_inner,
    [CPU_SUB] = cpu_sub_inner,
    [CPU_MUL] = cpu_mul_inner,
    [CPU_DIV] = cpu_div_inner,
};

/* ---- binary -------------------------------------------------------------- */

typedef struct cpu_binary_call {
    const cpu_binary_kernel *k;
    const float *a;
    const float *b;
    float *out;
    int add;
} cpu_binary_call;

/* Output elements [begin, end): walks the multi-index of begin, then whole
 * or partial rows of the innermost dim. */
static void cpu_binary_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_binary_call *c = arg;
    const cpu_binary_kernel *k = c->k;
    const int last = k->ndim - 1;
    int64_t idx[CPU_MAX_RANK];
    int64_t off_a = 0, off_b = 0;
    size_t rest = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = (int64_t)(rest % (size_t)k->dims[d]);
        rest /= (size_t)k->dims[d];
        off_a += idx[d] * k->a_stride[d];
        off_b += idx[d] * k->b_stride[d];
    }
    const cpu_binary_inner_fn inner = cpu_binary_inners[k->op];
    const int a_step = k->a_stride[last] != 0, b_step = k->b_stride[last] != 0;
    size_t pos = begin;
    while (pos < end) {
        size_t span = (size_t)(k->dims[last] - idx[last]);
        if (span > end - pos)
            span = end - pos;
        inner(c->out + pos, c->a + off_a, c->b + off_b, span, a_step, b_step, c->add);
        pos += span;
        idx[last] += (int64_t)span;
        off_a += (int64_t)span * k->a_stride[last];
        off_b += (int64_t)span * k->b_stride[last];
        for (int d = last; d > 0 && idx[d] == k->dims[d]; d--) {
            off_a += k->a_stride[d - 1] - idx[d] * k->a_stride[d];
            off_b += k->b_stride[d - 1] - idx[d] * k->b_stride[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static pl_status *cpu_binary_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                 const pl_run_args *args, float *out, pl_output_request req)
{
    cpu_binary_call c = {.k = (const cpu_binary_kernel *)kernel,
                         .a = cpu_in(args, 0),
                         .b = cpu_in(args, 1),
                         .out = out,
                         .add = req == PL_REQ_ADD_TO};
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, CPU_EW_GRAIN, cpu_binary_chunk,
                           &c);
    return NULL;
}

pl_status *cpu_build_binary(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *a = &node->inputs[0], *b = &node->inputs[1], *o = &node->outputs[0];
    int64_t sa[CPU_MAX_RANK], sb[CPU_MAX_RANK];
    if (o->ndim < a->ndim || o->ndim < b->ndim ||
        !cpu_broadcast_strides(a->shape, a->ndim, o->shape, o->ndim, sa) ||
        !cpu_broadcast_strides(b->shape, b->ndim, o->shape, o->ndim, sb)) {
        char ta[128], tb[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "shapes %s and %s do not broadcast to the output's %s",
                         cpu_dims_text(a->shape, a->ndim, ta, sizeof ta),
                         cpu_dims_text(b->shape, b->ndim, tb, sizeof tb),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    cpu_binary_kernel *k = (cpu_binary_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op,
                                                                 cpu_binary_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    static const char *const names[] = {"Add", "Sub", "Mul", "Div"};
    for (int i = 0; i < 4; i++)
        if (strcmp(node->op, names[i]) == 0)
            k->op = (cpu_binary_op)i;
    k->base.n_reads = 2;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;

    /* Drop size-1 dims; merge a dim into the previous kept one when both
     * operands step through the pair as one dim. */
    int n = 0;
    for (int d = 0; d < o->ndim; d++) {
        if (o->shape[d] == 1)
            continue;
        if (n > 0 && k->a_stride[n - 1] == sa[d] * o->shape[d] &&
            k->b_stride[n - 1] == sb[d] * o->shape[d]) {
            k->dims[n - 1] *= o->shape[d];
            k->a_stride[n - 1] = sa[d];
            k->b_stride[n - 1] = sb[d];
            continue;
        }
        k->dims[n] = o->shape[d];
        k->a_stride[n] = sa[d];
        k->b_stride[n] = sb[d];
        n++;
    }
    if (n == 0) {
        k->dims[0] = 1;
        k->a_stride[0] = 1;
        k->b_stride[0] = 1;
        n = 1;
    }
    k->ndim = n;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- unary --------------------------------------------------------------- */

typedef struct cpu_unary_call {
    cpu_unary_op op;
    const float *x;
    float *out;
    int add;
} cpu_unary_call;

static void cpu_unary_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_unary_call *c = arg;
    const float *x = c->x;
    float *y = c->out;
    switch (c->op) {
    case CPU_RELU:
        if (c->add)
            for (size_t i = begin; i < end; i++)
                y[i] += x[i] > 0.0f ? x[i] : 0.0f;
        else
            for (size_t i = begin; i < end; i++)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case CPU_SIGMOID:
        /* cpu_expf(-x) overflows to inf for x < -88, giving exactly 0. */
        if (c->add)
            for (size_t i = begin; i < end; i++)
                y[i] += 1.0f / (1.0f + cpu_expf(-x[i]));
        else
            for (size_t i = begin; i < end; i++)
                y[i] = 1.0f / (1.0f + cpu_expf(-x[i]));
        break;
    case CPU_TANH:
        if (c->add)
            for (size_t i = begin; i < end; i++)
                y[i] += tanhf(x[i]);
        else
            for (size_t i = begin; i < end; i++)
                y[i] = tanhf(x[i]);
        break;
    }
}

static pl_status *cpu_unary_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                const pl_run_args *args, float *out, pl_output_request req)
{
    const cpu_unary_kernel *k = (const cpu_unary_kernel *)kernel;
    cpu_unary_call c = {.op = k->op, .x = cpu_in(args, 0), .out = out,
                        .add = req == PL_REQ_ADD_TO};
    size_t grain = k->op == CPU_RELU ? CPU_EW_GRAIN : CPU_EW_GRAIN_TRANSCENDENTAL;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, cpu_unary_chunk, &c);
    return NULL;
}

pl_status *cpu_build_unary(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    size_t n = cpu_elements(o->shape, o->ndim);
    if (cpu_elements(x->shape, x->ndim) != n) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "input %s and output %s differ in size",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    cpu_unary_kernel *k = (cpu_unary_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op,
                                                               cpu_unary_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->op = strcmp(node->op, "Relu") == 0      ? CPU_RELU
            : strcmp(node->op, "Sigmoid") == 0 ? CPU_SIGMOID
                                               : CPU_TANH;
    k->base.n_reads = 1;
    k->base.out_elements = n;
    k->base.inplace_ok = true;
    *out_kernel = &k->base;
    return NULL;
}
