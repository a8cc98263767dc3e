/* loss.c — the cpu module's loss family: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (opsets 12 and 13), for f32, f64, f16 and bf16
 * scores with i32 or i64 targets.
 *
 * Scores are [N, C, D] (D the product of the trailing dims d1..dk, 1 when
 * there are none) and targets [N, D]. Element (n, d) has the loss
 * -w[t] * s[n, t, d], where t is its target, s the scores (NLL) or their
 * log-softmax over C (SoftmaxCrossEntropy) and w the weights (1 without);
 * a target equal to ignore_index has loss 0 and weight 0. Reduction none
 * gives the [N, D] losses, sum their sum, mean their sum over the sum of
 * the weights of the targets not ignored (NaN when all are ignored, as in
 * ONNX's reference). Everything is computed in double and rounded once.
 * A target outside [0, C) that is not ignored fails the run before it
 * writes. SoftmaxCrossEntropy's second output is the log-softmax. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *lo_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", lo_build, 2, 3, 0, CPU_OP_ANY_DTYPE},
    {"SoftmaxCrossEntropyLoss", lo_build, 2, 3, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT},
    {NULL, NULL, 0, 0, 0, 0},
};

typedef enum lo_reduction { LO_NONE, LO_SUM, LO_MEAN } lo_reduction;

typedef struct lo_kernel {
    shp_kernel k;
    size_t n, c, d;
    bool softmax;      /* SoftmaxCrossEntropyLoss */
    bool has_weight;
    bool has_ignore;
    int64_t ignore;
    bool target64;
    lo_reduction reduction;
    pl_dtype dt;
} lo_kernel;

/* Checks every target of a run: in [0, C) unless ignored. */
static pl_status *lo_check_targets(const lo_kernel *k, const char *targets)
{
    for (size_t e = 0, n = k->n * k->d; e < n; e++) {
        int64_t t = ix_index_at(targets, k->target64, e);
        if (k->has_ignore && t == k->ignore)
            continue;
        if (t < 0 || (uint64_t)t >= k->c)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->k.base.op,
                             "target %lld (element %zu of the targets) is out of range for %zu "
                             "classes", (long long)t, e, k->c);
    }
    return NULL;
}

/* The log-softmax of X over C into LP (doubles, [N, C, D]). */
static void lo_log_softmax(const lo_kernel *k, const char *x, double *lp)
{
    size_t total = k->n * k->c * k->d;
    shp_convert(k->dt, x, PL_DTYPE_F64, lp, total);
    for (size_t n = 0; n < k->n; n++)
        for (size_t d = 0; d < k->d; d++) {
            double *row = lp + n * k->c * k->d + d;
            double mx = -INFINITY, sum = 0;
            for (size_t c = 0; c < k->c; c++)
                mx = row[c * k->d] > mx ? row[c * k->d] : mx;
            for (size_t c = 0; c < k->c; c++)
                sum += exp(row[c * k->d] - mx);
            double lse = mx + log(sum);
            for (size_t c = 0; c < k->c; c++)
                row[c * k->d] -= lse;
        }
}

static pl_status *lo_write(pl_module_ctx *ctx, const shp_kernel *kernel,
                           const pl_run_args *args, size_t o, void *dst,
                           pl_output_request req)
{
    (void)req;
    const lo_kernel *k = (const lo_kernel *)kernel;
    const char *x = shp_in(args, 0), *targets = shp_in(args, 1);
    SHP_TRY(lo_check_targets(k, targets));
    size_t total = k->n * k->c * k->d;
    double *lp = NULL;
    if (k->softmax) {
        lp = cpu_host->host_alloc(ctx->host_ctx, total * sizeof *lp, 0);
        if (lp == NULL)
            return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->base.op,
                             "out of memory for %zu log-probabilities", total);
        lo_log_softmax(k, x, lp);
        if (o == 1) {
            shp_convert(PL_DTYPE_F64, lp, k->dt, dst, total);
            cpu_host->host_free(ctx->host_ctx, lp);
            return NULL;
        }
    }
    const char *w = k->has_weight ? shp_in(args, 2) : NULL;
    double sum = 0, wsum = 0;
    for (size_t n = 0; n < k->n; n++)
        for (size_t d = 0; d < k->d; d++) {
            size_t e = n * k->d + d;
            int64_t t = ix_index_at(targets, k->target64, e);
            double loss = 0, wt = 0;
            if (!(k->has_ignore && t == k->ignore)) {
                size_t at = (n * k->c + (size_t)t) * k->d + d;
                wt = w != NULL ? ix_load(k->dt, w, (size_t)t) : 1.0;
                loss = -wt * (lp != NULL ? lp[at] : ix_load(k->dt, x, at));
            }
            if (k->reduction == LO_NONE)
                ix_store(k->dt, dst, e, loss);
            sum += loss;
            wsum += wt;
        }
    if (k->reduction != LO_NONE)
        ix_store(k->dt, dst, 0, k->reduction == LO_SUM ? sum : sum / wsum);
    if (lp != NULL)
        cpu_host->host_free(ctx->host_ctx, lp);
    return NULL;
}

static pl_status *lo_build(pl_module_ctx *ctx, const pl_node_desc *node,
                           pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *x = &node->inputs[0], *t = &node->inputs[1], *o = &node->outputs[0];
    bool softmax = strcmp(op, "SoftmaxCrossEntropyLoss") == 0;
    pl_dtype dt = x->dtype;
    if (!(PL_DTYPE_EQ(dt, PL_DTYPE_F32) || PL_DTYPE_EQ(dt, PL_DTYPE_F64) ||
          PL_DTYPE_EQ(dt, PL_DTYPE_F16) || PL_DTYPE_EQ(dt, PL_DTYPE_BF16)))
        return cpu_error(PL_CODE_UNSUPPORTED, op, "the scores must be floating point");
    SHP_TRY(shp_same_dtype(node));
    bool t64;
    SHP_TRY(ix_index_dtype(node, 1, &t64));
    if (node->n_outputs > (softmax ? 2u : 1u))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "%zu outputs", node->n_outputs);
    char red[8];
    SHP_TRY(shp_attr_string(node, "reduction", "mean", red, sizeof red));
    lo_reduction reduction = strcmp(red, "none") == 0 ? LO_NONE
                           : strcmp(red, "sum") == 0  ? LO_SUM
                                                      : LO_MEAN;
    if (reduction == LO_MEAN && strcmp(red, "mean") != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "reduction '%s' is none of none, sum, mean",
                         red);
    int64_t ignore;
    SHP_TRY(cpu_attr_int(node, "ignore_index", INT64_MIN, &ignore));
    /* Shapes: scores [N, C, d...], targets [N, d...], weights [C]. */
    bool ok = x->ndim >= 2 && t->ndim == x->ndim - 1;
    for (int d = 0; ok && d < t->ndim; d++)
        ok = t->shape[d] == x->shape[d == 0 ? 0 : d + 1];
    bool has_weight = shp_input_present(node, 2);
    if (has_weight) {
        const pl_tensor *w = &node->inputs[2];
        ok = ok && w->ndim == 1 && w->shape[0] == x->shape[1] && PL_DTYPE_EQ(w->dtype, dt);
    }
    if (reduction == LO_NONE) {
        ok = ok && o->ndim == t->ndim;
        for (int d = 0; ok && d < t->ndim; d++)
            ok = o->shape[d] == t->shape[d];
    } else {
        ok = ok && cpu_elements(o->shape, o->ndim) == 1;
    }
    if (softmax && shp_output_present(node, 1)) {
        const pl_tensor *lp = &node->outputs[1];
        ok = ok && lp->ndim == x->ndim && PL_DTYPE_EQ(lp->dtype, dt);
        for (int d = 0; ok && d < x->ndim; d++)
            ok = lp->shape[d] == x->shape[d];
    }
    if (!ok) {
        char tx[128], tt[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "scores %s, targets %s, weights and outputs do not fit "
                         "[N, C, d...], [N, d...], [C]",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx),
                         cpu_dims_text(t->shape, t->ndim, tt, sizeof tt));
    }
    lo_kernel *k;
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, lo_write, (shp_kernel **)&k));
    k->n = (size_t)x->shape[0];
    k->c = (size_t)x->shape[1];
    k->d = cpu_elements(x->shape + 2, x->ndim - 2);
    k->softmax = softmax;
    k->has_weight = has_weight;
    k->has_ignore = ignore != INT64_MIN;
    k->ignore = ignore;
    k->target64 = t64;
    k->reduction = reduction;
    k->dt = dt;
    if (!has_weight)
        k->k.base.n_reads = 2;
    *out_kernel = &k->k.base;
    return NULL;
}
