/* normalize.c — the cpu module's local normalizations: LRN (each element
 * over a window of neighbouring channels), MeanVarianceNormalization (over
 * a set of axes, as ONNX's function defines it: (x - E[x]) /
 * (sqrt(E[x^2] - E[x]^2) + 1e-9)), LpNormalization (x / ||x||_p along an
 * axis; a zero vector stays zero) and GlobalLpPool (||x||_p over the
 * spatial dims), for every floating-point dtype, in double. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *nm_build_lrn(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);
static pl_status *nm_build_mvn(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel);
static pl_status *nm_build_lp(pl_module_ctx *ctx, const pl_node_desc *node,
                              pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_normalize[] = {
    {"LRN", nm_build_lrn, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"MeanVarianceNormalization", nm_build_mvn, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"LpNormalization", nm_build_lp, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {"GlobalLpPool", nm_build_lp, 1, 1, 0, CPU_OP_ANY_DTYPE},
    {NULL, NULL, 0, 0, 0, 0},
};

/* A refusal unless NODE maps a floating-point input to an output of its
 * dtype (and, unless ANY_SHAPE, of its shape). */
static pl_status *nm_check_dtype(const pl_node_desc *node)
{
    pl_dtype dt = node->inputs[0].dtype;
    if (!(PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
          PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16)))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "the input must be floating point");
    return shp_same_dtype(node);
}

static pl_status *nm_check(const pl_node_desc *node)
{
    SHP_TRY(nm_check_dtype(node));
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    bool ok = x->ndim == o->ndim;
    for (int d = 0; ok && d < x->ndim; d++)
        ok = x->shape[d] == o->shape[d];
    return ok ? NULL : cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                                 "the output's shape is not the input's");
}

/* Converts input 0 of a run to doubles in a buffer of the host; NULL when
 * out of memory. */
static double *nm_load(pl_module_ctx *ctx, const shp_kernel *kernel, const pl_run_args *args)
{
    size_t n = kernel->outs[0].elements;
    double *v = cpu_host->host_alloc(ctx->host_ctx, n * sizeof *v, 0);
    if (v != NULL)
        shp_convert(kernel->outs[0].dtype, shp_in(args, 0), PL_DTYPE_F64, v, n);
    return v;
}

/* ---- LRN ------------------------------------------------------------------------ */

typedef struct nm_lrn_kernel {
    shp_kernel k;
    size_t n, c, inner;
    int64_t size;
    double alpha, beta, bias;
} nm_lrn_kernel;

static pl_status *nm_lrn_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const nm_lrn_kernel *k = (const nm_lrn_kernel *)kernel;
    double *x = nm_load(ctx, kernel, args);
    if (x == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    int64_t lo = (k->size - 1) / 2, hi = k->size - 1 - lo, c_n = (int64_t)k->c;
    for (size_t n = 0; n < k->n; n++)
        for (int64_t c = 0; c < c_n; c++)
            for (size_t s = 0; s < k->inner; s++) {
                double sq = 0;
                for (int64_t j = c - lo < 0 ? 0 : c - lo; j <= c + hi && j < c_n; j++) {
                    double v = x[(n * k->c + (size_t)j) * k->inner + s];
                    sq += v * v;
                }
                size_t at = (n * k->c + (size_t)c) * k->inner + s;
                ix_store(kernel->outs[0].dtype, dst, at,
                         x[at] / pow(k->bias + k->alpha / (double)k->size * sq, k->beta));
            }
    cpu_host->host_free(ctx->host_ctx, x);
    return NULL;
}

static pl_status *nm_build_lrn(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    SHP_TRY(nm_check(node));
    const pl_tensor *x = &node->inputs[0];
    if (x->ndim < 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the input must be [N, C, D1, ...]");
    int64_t size;
    double alpha, beta, bias;
    SHP_TRY(cpu_attr_int(node, "size", 0, &size));
    SHP_TRY(cpu_attr_float(node, "alpha", 0.0001, &alpha));
    SHP_TRY(cpu_attr_float(node, "beta", 0.75, &beta));
    SHP_TRY(cpu_attr_float(node, "bias", 1.0, &bias));
    if (size < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "size %lld is below 1",
                         (long long)size);
    nm_lrn_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, nm_lrn_write, (shp_kernel **)&k));
    k->n = (size_t)x->shape[0];
    k->c = (size_t)x->shape[1];
    k->inner = cpu_elements(x->shape + 2, x->ndim - 2);
    k->size = size;
    k->alpha = alpha;
    k->beta = beta;
    k->bias = bias;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- MeanVarianceNormalization ------------------------------------------------ */

/* Element e belongs to group ix_offset(e, r, dims, group_st): the flat
 * index of its coordinates along the axes that are not normalized over. */
typedef struct nm_mvn_kernel {
    shp_kernel k;
    int r;
    int64_t dims[CPU_MAX_RANK];
    int64_t group_st[CPU_MAX_RANK];
    size_t groups, per_group;
} nm_mvn_kernel;

static pl_status *nm_mvn_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                               const pl_run_args *args, size_t o, void *dst,
                               pl_output_request req)
{
    (void)o, (void)req;
    const nm_mvn_kernel *k = (const nm_mvn_kernel *)kernel;
    size_t n = kernel->outs[0].elements;
    double *x = nm_load(ctx, kernel, args);
    double *acc = cpu_host->host_alloc(ctx->host_ctx, 2 * k->groups * sizeof *acc, 0);
    if (x == NULL || acc == NULL) {
        cpu_host->host_free(ctx->host_ctx, x);
        cpu_host->host_free(ctx->host_ctx, acc);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    }
    memset(acc, 0, 2 * k->groups * sizeof *acc);
    for (size_t e = 0; e < n; e++) {
        size_t g = (size_t)ix_offset(e, k->r, k->dims, k->group_st);
        acc[2 * g] += x[e];
        acc[2 * g + 1] += x[e] * x[e];
    }
    for (size_t e = 0; e < n; e++) {
        size_t g = (size_t)ix_offset(e, k->r, k->dims, k->group_st);
        double mean = acc[2 * g] / (double)k->per_group;
        double var = acc[2 * g + 1] / (double)k->per_group - mean * mean;
        ix_store(kernel->outs[0].dtype, dst, e,
                 (x[e] - mean) / (sqrt(var > 0 ? var : 0) + 1e-9));
    }
    cpu_host->host_free(ctx->host_ctx, acc);
    cpu_host->host_free(ctx->host_ctx, x);
    return NULL;
}

static pl_status *nm_build_mvn(pl_module_ctx *ctx, const pl_node_desc *node,
                               pl_kernel **out_kernel)
{
    SHP_TRY(nm_check(node));
    const pl_tensor *x = &node->inputs[0];
    const int r = x->ndim;
    const int64_t *axes;
    size_t n_axes;
    static const int64_t default_axes[] = {0, 2, 3};
    SHP_TRY(cpu_attr_ints(node, "axes", &axes, &n_axes));
    if (axes == NULL) {
        axes = default_axes;
        n_axes = 3;
    }
    bool reduce[CPU_MAX_RANK] = {false};
    for (size_t i = 0; i < n_axes; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
        if (a < 0 || a >= r || reduce[a])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "axis %lld is out of range for rank %d or repeated",
                             (long long)axes[i], r);
        reduce[a] = true;
    }
    nm_mvn_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, nm_mvn_write, (shp_kernel **)&k));
    k->r = r;
    memcpy(k->dims, x->shape, (size_t)r * sizeof(int64_t));
    int64_t step = 1;
    k->per_group = 1;
    for (int d = r - 1; d >= 0; d--) {
        k->group_st[d] = reduce[d] ? 0 : step;
        if (reduce[d])
            k->per_group *= (size_t)x->shape[d];
        else
            step *= x->shape[d];
    }
    k->groups = (size_t)step;
    *out_kernel = &k->k.base;
    return NULL;
}

/* ---- LpNormalization, GlobalLpPool ------------------------------------------------ */

/* Lines of LEN elements INNER apart, [outer, len, inner]: LpNormalization
 * scales each line by its norm; GlobalLpPool (POOL) writes one norm per
 * line (its lines are the planes of [N * C, spatial]). */
typedef struct nm_lp_kernel {
    shp_kernel k;
    size_t outer, len, inner;
    double p;
    bool pool;
} nm_lp_kernel;

static pl_status *nm_lp_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                              const pl_run_args *args, size_t o, void *dst,
                              pl_output_request req)
{
    (void)o, (void)req;
    const nm_lp_kernel *k = (const nm_lp_kernel *)kernel;
    size_t n = k->outer * k->len * k->inner;
    double *x = cpu_host->host_alloc(ctx->host_ctx, (n ? n : 1) * sizeof *x, 0);
    if (x == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op, "out of memory");
    shp_convert(kernel->outs[0].dtype, shp_in(args, 0), PL_DTYPE_F64, x, n);
    pl_dtype dt = kernel->outs[0].dtype;
    for (size_t ou = 0; ou < k->outer; ou++)
        for (size_t in = 0; in < k->inner; in++) {
            size_t base = ou * k->len * k->inner + in;
            double sum = 0;
            for (size_t j = 0; j < k->len; j++) {
                double v = fabs(x[base + j * k->inner]);
                sum += k->p == 1 ? v : k->p == 2 ? v * v : pow(v, k->p);
            }
            double norm = k->p == 1 ? sum : k->p == 2 ? sqrt(sum) : pow(sum, 1 / k->p);
            if (k->pool) {
                ix_store(dt, dst, ou * k->inner + in, norm);
                continue;
            }
            for (size_t j = 0; j < k->len; j++)
                ix_store(dt, dst, base + j * k->inner, norm > 0 ? x[base + j * k->inner] / norm : 0);
        }
    cpu_host->host_free(ctx->host_ctx, x);
    return NULL;
}

static pl_status *nm_build_lp(pl_module_ctx *ctx, const pl_node_desc *node,
                              pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    bool pool = strcmp(node->op, "GlobalLpPool") == 0;
    int64_t p;
    int a = 0;
    SHP_TRY(cpu_attr_int(node, "p", 2, &p));
    if (pool) {
        SHP_TRY(nm_check_dtype(node));
        bool ok = x->ndim >= 3 && o->ndim == x->ndim && p >= 1;
        for (int d = 0; ok && d < x->ndim; d++)
            ok = o->shape[d] == (d < 2 ? x->shape[d] : 1);
        if (!ok)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "needs p >= 1, X [N, C, D1, ...] and Y [N, C, 1, ...]");
    } else {
        SHP_TRY(nm_check(node));
        SHP_TRY(ix_axis(node, -1, x->ndim, &a));
        if (p != 1 && p != 2)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "p is %lld; it must be 1 or 2",
                             (long long)p);
    }
    nm_lp_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, nm_lp_write, (shp_kernel **)&k));
    if (pool) {
        k->outer = cpu_elements(x->shape, 2);
        k->len = cpu_elements(x->shape + 2, x->ndim - 2);
        k->inner = 1;
    } else {
        k->outer = cpu_elements(x->shape, a);
        k->len = (size_t)x->shape[a];
        k->inner = cpu_elements(x->shape + a + 1, x->ndim - a - 1);
    }
    k->p = (double)p;
    k->pool = pool;
    *out_kernel = &k->k.base;
    return NULL;
}
