/* movement.c — the cpu module's kernels that move data without computing:
 * Reshape, Flatten and Identity (a copy of the bytes, or nothing when the
 * output is the input's buffer), Transpose and Concat.
 *
 * Transpose precomputes, for each dim of the output, the input's stride,
 * after dropping size-1 dims and merging output dims that are also
 * neighbours in the input; a run walks chunks of the flat output. Concat
 * sees every tensor as [outer, axis*inner] and copies one input's slab of
 * one outer index per task. With PL_REQ_ADD_TO each adds instead. */
#include <string.h>

#include "cpu_kernel.h"

/* Elements per parallel_for chunk, at least. */
#define CPU_MOVE_GRAIN 65536

/* ---- Reshape, Flatten, Identity ------------------------------------------ */

typedef struct cpu_copy_call {
    const float *x;
    float *y;
    int add;
} cpu_copy_call;

static void cpu_copy_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_copy_call *c = arg;
    if (c->add)
        for (size_t i = begin; i < end; i++)
            c->y[i] += c->x[i];
    else
        memcpy(c->y + begin, c->x + begin, (end - begin) * sizeof(float));
}

static pl_status *cpu_copy_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args, float *out, pl_output_request req)
{
    cpu_copy_call c = {.x = cpu_in(args, 0), .y = out, .add = req == PL_REQ_ADD_TO};
    /* In place, or the same buffer handed twice: the bytes are there. */
    if (!c.add && (req == PL_REQ_INPLACE || c.x == out))
        return NULL;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, CPU_MOVE_GRAIN, cpu_copy_chunk,
                           &c);
    return NULL;
}

pl_status *cpu_build_copy(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
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
    pl_kernel *k = cpu_kernel_alloc(ctx, sizeof *k, node->op, cpu_copy_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->n_reads = 1;
    k->out_elements = n;
    k->inplace_ok = true;
    *out_kernel = k;
    return NULL;
}

/* ---- Transpose ----------------------------------------------------------- */

typedef struct cpu_transpose_kernel {
    pl_kernel base;
    int ndim;                       /* >= 1 after collapsing */
    int64_t dims[CPU_MAX_RANK];     /* output dims */
    int64_t in_stride[CPU_MAX_RANK];
} cpu_transpose_kernel;

typedef struct cpu_transpose_call {
    const cpu_transpose_kernel *k;
    const float *x;
    float *y;
    int add;
} cpu_transpose_call;

static void cpu_transpose_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_transpose_call *c = arg;
    const cpu_transpose_kernel *k = c->k;
    const int last = k->ndim - 1;
    int64_t idx[CPU_MAX_RANK], off = 0;
    size_t rest = begin;
    for (int d = last; d >= 0; d--) {
        idx[d] = (int64_t)(rest % (size_t)k->dims[d]);
        rest /= (size_t)k->dims[d];
        off += idx[d] * k->in_stride[d];
    }
    const int64_t s = k->in_stride[last];
    size_t pos = begin;
    while (pos < end) {
        size_t span = (size_t)(k->dims[last] - idx[last]);
        if (span > end - pos)
            span = end - pos;
        const float *x = c->x + off;
        float *y = c->y + pos;
        if (c->add)
            for (size_t i = 0; i < span; i++)
                y[i] += x[(int64_t)i * s];
        else
            for (size_t i = 0; i < span; i++)
                y[i] = x[(int64_t)i * s];
        pos += span;
        idx[last] += (int64_t)span;
        off += (int64_t)span * s;
        for (int d = last; d > 0 && idx[d] == k->dims[d]; d--) {
            off += k->in_stride[d - 1] - idx[d] * k->in_stride[d];
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

static pl_status *cpu_transpose_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                    const pl_run_args *args, float *out, pl_output_request req)
{
    cpu_transpose_call c = {.k = (const cpu_transpose_kernel *)kernel,
                            .x = cpu_in(args, 0),
                            .y = out,
                            .add = req == PL_REQ_ADD_TO};
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, CPU_MOVE_GRAIN,
                           cpu_transpose_chunk, &c);
    return NULL;
}

pl_status *cpu_build_transpose(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    const int64_t *perm_attr;
    size_t n_perm;
    pl_status *st = cpu_attr_ints(node, "perm", &perm_attr, &n_perm);
    if (st != NULL)
        return st;
    const int r = x->ndim;
    int64_t perm[CPU_MAX_RANK];
    bool seen[CPU_MAX_RANK] = {false};
    if (perm_attr != NULL && n_perm != (size_t)r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "perm has %zu entries for an input of rank %d", n_perm, r);
    for (int d = 0; d < r; d++) {
        perm[d] = perm_attr != NULL ? perm_attr[d] : r - 1 - d;
        if (perm[d] < 0 || perm[d] >= r || seen[perm[d]])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "perm is not a permutation of 0..%d", r - 1);
        seen[perm[d]] = true;
    }
    bool ok = o->ndim == r;
    for (int d = 0; d < r && ok; d++)
        ok = o->shape[d] == x->shape[perm[d]];
    if (!ok) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "input %s permuted does not give the output's %s",
                         cpu_dims_text(x->shape, r, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    }
    cpu_transpose_kernel *k = (cpu_transpose_kernel *)cpu_kernel_alloc(
        ctx, sizeof *k, node->op, cpu_transpose_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    int64_t in_stride[CPU_MAX_RANK], step = 1;
    for (int d = r - 1; d >= 0; d--) {
        in_stride[d] = step;
        step *= x->shape[d];
    }
    int n = 0;
    for (int d = 0; d < r; d++) {
        int64_t dim = o->shape[d], s = in_stride[perm[d]];
        if (dim == 1)
            continue;
        if (n > 0 && k->in_stride[n - 1] == s * dim) {
            k->dims[n - 1] *= dim;
            k->in_stride[n - 1] = s;
            continue;
        }
        k->dims[n] = dim;
        k->in_stride[n] = s;
        n++;
    }
    if (n == 0) {
        k->dims[0] = 1;
        k->in_stride[0] = 1;
        n = 1;
    }
    k->ndim = n;
    k->base.n_reads = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Concat -------------------------------------------------------------- */

typedef struct cpu_concat_kernel {
    pl_kernel base;
    int64_t outer;          /* product of the dims before the axis */
    int64_t row;            /* elements of one output slab: out axis * inner */
    size_t n_inputs;
    int64_t *slab;          /* per input: its axis * inner */
    int64_t *offset;        /* per input: where its slab starts in a row */
} cpu_concat_kernel;

typedef struct cpu_concat_call {
    const cpu_concat_kernel *k;
    const pl_run_args *args;
    float *y;
    int add;
} cpu_concat_call;

/* Tasks [begin, end): task t copies input t % n_inputs of outer index
 * t / n_inputs. */
static void cpu_concat_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_concat_call *c = arg;
    const cpu_concat_kernel *k = c->k;
    for (size_t t = begin; t < end; t++) {
        size_t i = t % k->n_inputs;
        int64_t o = (int64_t)(t / k->n_inputs), n = k->slab[i];
        if (n == 0)
            continue;
        const float *x = cpu_in(c->args, i) + o * n;
        float *y = c->y + o * k->row + k->offset[i];
        if (c->add)
            for (int64_t j = 0; j < n; j++)
                y[j] += x[j];
        else
            memcpy(y, x, (size_t)n * sizeof(float));
    }
}

static pl_status *cpu_concat_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                 const pl_run_args *args, float *out, pl_output_request req)
{
    const cpu_concat_kernel *k = (const cpu_concat_kernel *)kernel;
    cpu_concat_call c = {.k = k, .args = args, .y = out, .add = req == PL_REQ_ADD_TO};
    size_t tasks = (size_t)k->outer * k->n_inputs;
    size_t per_task = (size_t)k->row / k->n_inputs + 1;
    size_t grain = per_task >= CPU_MOVE_GRAIN ? 1 : CPU_MOVE_GRAIN / per_task;
    cpu_host->parallel_for(ctx->host_ctx, tasks, grain, cpu_concat_chunk, &c);
    return NULL;
}

pl_status *cpu_build_concat(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *o = &node->outputs[0];
    const int r = o->ndim;
    int64_t axis;
    pl_status *st = cpu_attr_int(node, "axis", INT64_MIN, &axis);
    if (st != NULL)
        return st;
    if (axis == INT64_MIN)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "attribute 'axis' is missing");
    int64_t norm = axis < 0 ? axis + r : axis;
    if (r == 0 || norm < 0 || norm >= r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, r);
    int64_t inner = 1, outer = 1, total = 0;
    for (int d = 0; d < r; d++) {
        if (d < norm)
            outer *= o->shape[d];
        else if (d > norm)
            inner *= o->shape[d];
    }
    for (size_t i = 0; i < node->n_inputs; i++) {
        const pl_tensor *x = &node->inputs[i];
        bool ok = x->ndim == r;
        for (int d = 0; d < r && ok; d++)
            ok = d == norm || x->shape[d] == o->shape[d];
        if (!ok) {
            char tx[128], to[128];
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu %s does not fit the output %s along axis %lld", i,
                             cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                             cpu_dims_text(o->shape, r, to, sizeof to), (long long)axis);
        }
        total += x->shape[norm];
    }
    if (total != o->shape[norm])
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "inputs sum to %lld along axis %lld, the output has %lld",
                         (long long)total, (long long)axis, (long long)o->shape[norm]);
    size_t n = node->n_inputs;
    size_t bytes = sizeof(cpu_concat_kernel) + 2 * n * sizeof(int64_t);
    cpu_concat_kernel *k = (cpu_concat_kernel *)cpu_kernel_alloc(ctx, bytes, node->op,
                                                                 cpu_concat_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->slab = (int64_t *)(k + 1);
    k->offset = k->slab + n;
    k->n_inputs = n;
    k->outer = outer;
    k->row = o->shape[norm] * inner;
    int64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        k->slab[i] = node->inputs[i].shape[norm] * inner;
        k->offset[i] = at;
        at += k->slab[i];
    }
    k->base.n_reads = n;
    k->base.out_elements = cpu_elements(o->shape, r);
    *out_kernel = &k->base;
    return NULL;
}
