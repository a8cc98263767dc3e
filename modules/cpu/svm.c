/* svm.c — the cpu module's support vector classifier: ai.plinth SVMClassify,
 * the form the core lowers ai.onnx.ml's SVMClassifier to (scikit-learn's
 * SVC and NuSVC through skl2onnx; core/opset/src/opset_lower.c).
 *
 * Inputs: X [N, F] f32; the support vectors [S, F] f32, grouped by class;
 * the coefficients [C - 1, S] f32 (libsvm's one-vs-one layout); rho [P] f32,
 * one per pair of classes (P = C (C - 1) / 2, in the order (0, 1), (0, 2),
 * .., (1, 2), ..); vectors_per_class [C] i64; the class labels [C] i64; and
 * optionally prob_a and prob_b [P] f32 (Platt's sigmoid per pair).
 * Attributes: kernel_type (LINEAR, POLY, RBF, SIGMOID) with gamma, coef0 and
 * degree. Outputs, as ONNX Runtime gives them: Y [N] i64, the label of the
 * class with the most pairwise votes (a pair's decision above 0 votes for
 * its first class; ties to the lower class); Z [N, P] f32 the pairwise
 * decisions (with two classes [N, 2]: -d, d), or with prob_a and prob_b
 * [N, C] the class probabilities, each pair's decision through its sigmoid
 * (clamped to [1e-7, 1 - 1e-7]) coupled by libsvm's iterative method (Wu,
 * Lin and Weng 2004, as libsvm's multiclass_probability: at most 100
 * rounds, stopping within 0.005 / C). Rows go over the pool. */
#include <math.h>
#include <string.h>

#include "index_kernel.h"

static pl_status *svm_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_svm[] = {
    {"SVMClassify", svm_build, 6, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT |
                                        CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

enum { SVM_LINEAR, SVM_POLY, SVM_RBF, SVM_SIGMOID };

#define SVM_MAX_CLASSES 256

typedef struct svm_kernel {
    shp_kernel k;
    size_t rows, feats, vectors, classes, pairs;
    int type;
    float gamma, coef0, degree;
    bool proba;
    int int_degree; /* POLY's degree when a whole number up to 16, else -1 */
    int64_t start[SVM_MAX_CLASSES + 1]; /* class c's vectors: start[c] .. start[c + 1] */
} svm_kernel;

typedef struct svm_job {
    const svm_kernel *k;
    const float *x, *sv, *coef, *rho, *pa, *pb;
    const int64_t *labels;
    int64_t *y;
    float *z;
    float *scratch; /* per worker: kernels, pair scores, the coupling's matrices */
    size_t scratch_per;
} svm_job;

/* The kernel of row X with support vector V (F features). */
static inline double svm_kernel_of(const svm_kernel *k, const float *x, const float *v)
{
    double s = 0;
    if (k->type == SVM_RBF) {
        for (size_t f = 0; f < k->feats; f++) {
            double d = (double)x[f] - v[f];
            s += d * d;
        }
        return exp(-(double)k->gamma * s);
    }
    for (size_t f = 0; f < k->feats; f++)
        s += (double)x[f] * v[f];
    switch (k->type) {
    case SVM_POLY: {
        double b = (double)k->gamma * s + k->coef0;
        if (k->int_degree < 0) /* pow per vector cost svc_multi_proba 2.5x ONNX Runtime */
            return pow(b, k->degree);
        double r = 1;
        for (int i = 0; i < k->int_degree; i++)
            r *= b;
        return r;
    }
    case SVM_SIGMOID: return tanh((double)k->gamma * s + k->coef0);
    default: return s;
    }
}

/* libsvm's pairwise coupling: R [C x C] the pairwise probabilities (r_ij
 * of class i over j), P [C] out; Q [C x C] and QP [C] scratch. */
static void svm_couple(size_t c, const double *r, double *p, double *q, double *qp)
{
    for (size_t i = 0; i < c; i++) {
        p[i] = 1.0 / (double)c;
        q[i * c + i] = 0;
        for (size_t j = 0; j < c; j++)
            if (j != i) {
                q[i * c + i] += r[j * c + i] * r[j * c + i];
                q[i * c + j] = -r[j * c + i] * r[i * c + j];
            }
    }
    double eps = 0.005 / (double)c;
    for (int round = 0; round < 100; round++) {
        double pqp = 0;
        for (size_t i = 0; i < c; i++) {
            qp[i] = 0;
            for (size_t j = 0; j < c; j++)
                qp[i] += q[i * c + j] * p[j];
            pqp += p[i] * qp[i];
        }
        double worst = 0;
        for (size_t i = 0; i < c; i++)
            if (fabs(qp[i] - pqp) > worst)
                worst = fabs(qp[i] - pqp);
        if (worst < eps)
            break;
        for (size_t i = 0; i < c; i++) {
            double diff = (-qp[i] + pqp) / q[i * c + i];
            p[i] += diff;
            pqp = (pqp + diff * (diff * q[i * c + i] + 2 * qp[i])) / (1 + diff) / (1 + diff);
            for (size_t j = 0; j < c; j++) {
                qp[j] = (qp[j] + diff * q[i * c + j]) / (1 + diff);
                p[j] /= 1 + diff;
            }
        }
    }
}

static void svm_rows(void *arg, size_t begin, size_t end, int worker)
{
    const svm_job *j = arg;
    const svm_kernel *k = j->k;
    size_t c = k->classes, s = k->vectors;
    double *kern = (double *)(j->scratch + (size_t)worker * j->scratch_per);
    double *dec = kern + s, *r = dec + k->pairs, *p = r + c * c, *q = p + c, *qp = q + c * c;
    int64_t votes[SVM_MAX_CLASSES];
    for (size_t n = begin; n < end; n++) {
        const float *x = j->x + n * k->feats;
        for (size_t v = 0; v < s; v++)
            kern[v] = svm_kernel_of(k, x, j->sv + v * k->feats);
        memset(votes, 0, c * sizeof *votes);
        size_t pair = 0;
        for (size_t a = 0; a + 1 < c; a++)
            for (size_t b = a + 1; b < c; b++, pair++) {
                /* class a's vectors by their coefficients against b (row b - 1),
                 * class b's by theirs against a (row a) */
                double sum = 0;
                const float *ca = j->coef + (b - 1) * s, *cb = j->coef + a * s;
                for (int64_t v = k->start[a]; v < k->start[a + 1]; v++)
                    sum += (double)ca[v] * kern[v];
                for (int64_t v = k->start[b]; v < k->start[b + 1]; v++)
                    sum += (double)cb[v] * kern[v];
                sum += j->rho[pair];
                dec[pair] = (double)(float)sum;
                votes[sum > 0 ? a : b]++;
            }
        size_t best = 0;
        for (size_t a = 1; a < c; a++)
            if (votes[a] > votes[best])
                best = a;
        j->y[n] = j->labels[best];
        if (k->proba) {
            pair = 0;
            for (size_t a = 0; a + 1 < c; a++)
                for (size_t b = a + 1; b < c; b++, pair++) {
                    /* libsvm's sigmoid_predict: 1 / (1 + exp(dec A + B)) */
                    double t = dec[pair] * j->pa[pair] + j->pb[pair];
                    double v = 1.0 / (1.0 + exp(t));
                    v = v < 1e-7 ? 1e-7 : v > 1 - 1e-7 ? 1 - 1e-7 : v;
                    r[a * c + b] = v;
                    r[b * c + a] = 1 - v;
                }
            svm_couple(c, r, p, q, qp);
            for (size_t a = 0; a < c; a++)
                j->z[n * c + a] = (float)p[a];
        } else if (c == 2) {
            j->z[n * 2] = (float)-dec[0];
            j->z[n * 2 + 1] = (float)dec[0];
        } else {
            for (size_t q2 = 0; q2 < k->pairs; q2++)
                j->z[n * k->pairs + q2] = (float)dec[q2];
        }
    }
}

static pl_status *svm_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const svm_kernel *k = (const svm_kernel *)kernel;
    for (size_t i = 0; i < 2; i++)
        if (args->requests[i] != PL_REQ_WRITE || args->outputs[i].data == NULL)
            return cpu_error(PL_CODE_UNSUPPORTED, kernel->op,
                             "output %zu must be written in full, once", i);
    for (size_t i = 0; i < (k->proba ? 8u : 6u); i++)
        if (args->inputs[i].data == NULL && (i != 0 || k->rows > 0))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input %zu has no data", i);
    size_t workers = (size_t)cpu_host->thread_count(ctx->host_ctx);
    size_t c = k->classes;
    size_t per = 2 * (k->vectors + k->pairs + 2 * c * c + 2 * c) + 16; /* floats: doubles x 2 */
    float *scratch = cpu_host->host_alloc(ctx->host_ctx, workers * per * sizeof(float), 64);
    if (scratch == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op, "out of memory");
    svm_job j = {.k = k,
                 .x = (const float *)shp_in(args, 0),
                 .sv = (const float *)shp_in(args, 1),
                 .coef = (const float *)shp_in(args, 2),
                 .rho = (const float *)shp_in(args, 3),
                 .labels = (const int64_t *)shp_in(args, 5),
                 .pa = k->proba ? (const float *)shp_in(args, 6) : NULL,
                 .pb = k->proba ? (const float *)shp_in(args, 7) : NULL,
                 .y = (int64_t *)((char *)args->outputs[0].data + args->outputs[0].byte_offset),
                 .z = (float *)((char *)args->outputs[1].data + args->outputs[1].byte_offset),
                 .scratch = scratch,
                 .scratch_per = per};
    if (k->rows > 1)
        cpu_host->parallel_for(ctx->host_ctx, k->rows, 1, svm_rows, &j);
    else if (k->rows == 1)
        svm_rows(&j, 0, 1, 0);
    cpu_host->host_free(ctx->host_ctx, scratch);
    return NULL;
}

static pl_status *svm_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *in = node->inputs;
    char type[16];
    SHP_TRY(shp_attr_string(node, "kernel_type", "LINEAR", type, sizeof type));
    static const char *const types[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    int t = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(type, types[i]) == 0)
            t = i;
    if (t < 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "kernel_type '%s'", type);
    double gamma, coef0, degree;
    SHP_TRY(cpu_attr_float(node, "gamma", 0.0, &gamma));
    SHP_TRY(cpu_attr_float(node, "coef0", 0.0, &coef0));
    SHP_TRY(cpu_attr_float(node, "degree", 0.0, &degree));
    bool proba = node->n_inputs > 7 && shp_input_present(node, 6) && shp_input_present(node, 7);
    const pl_dtype want[8] = {PL_DTYPE_F32, PL_DTYPE_F32, PL_DTYPE_F32, PL_DTYPE_F32,
                              PL_DTYPE_I64, PL_DTYPE_I64, PL_DTYPE_F32, PL_DTYPE_F32};
    bool ok = node->n_outputs == 2 && in[0].ndim == 2 && in[1].ndim == 2 && in[2].ndim == 2 &&
              in[3].ndim == 1 && in[4].ndim == 1 && in[5].ndim == 1;
    for (size_t i = 0; ok && i < node->n_inputs; i++)
        ok = (i >= 6 && !shp_input_present(node, i)) || PL_DTYPE_EQ(in[i].dtype, want[i]);
    if (!ok)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "X [N, F], vectors [S, F], coefficients [C - 1, S], rho [P] f32, "
                         "vectors_per_class and labels [C] i64, prob_a / prob_b [P] f32");
    int64_t c = in[5].shape[0], s = in[1].shape[0], pairs = c * (c - 1) / 2;
    size_t b = 0;
    const int64_t *per = shp_constant(node, 4, &b);
    ok = c >= 2 && c <= SVM_MAX_CLASSES && in[4].shape[0] == c && in[1].shape[1] == in[0].shape[1] &&
         in[2].shape[0] == c - 1 && in[2].shape[1] == s && in[3].shape[0] == pairs &&
         (!proba || (in[6].ndim == 1 && in[6].shape[0] == pairs && in[7].ndim == 1 &&
                     in[7].shape[0] == pairs)) &&
         node->outputs[0].ndim == 1 && node->outputs[0].shape[0] == in[0].shape[0] &&
         node->outputs[1].ndim == 2 && node->outputs[1].shape[0] == in[0].shape[0] &&
         node->outputs[1].shape[1] == (proba ? c : c > 2 ? pairs : 2) && per != NULL;
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "%lld classes, %lld vectors: the inputs, a constant vectors_per_class "
                         "and the outputs do not fit",
                         (long long)c, (long long)s);
    svm_kernel *k;
    int64_t total = 0;
    for (int64_t i = 0; i < c; i++) {
        if (per[i] < 0 || per[i] > s - total)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "vectors_per_class does not add up to the %lld vectors", (long long)s);
        total += per[i];
    }
    if (total != s)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "vectors_per_class adds up to %lld of %lld vectors", (long long)total,
                         (long long)s);
    SHP_TRY(shp_kernel_alloc(ctx, node, sizeof *k, NULL, (shp_kernel **)&k));
    k->k.base.run_any = svm_run;
    k->rows = (size_t)in[0].shape[0];
    k->feats = (size_t)in[0].shape[1];
    k->vectors = (size_t)s;
    k->classes = (size_t)c;
    k->pairs = (size_t)pairs;
    k->type = t;
    k->gamma = (float)gamma;
    k->coef0 = (float)coef0;
    k->degree = (float)degree;
    k->int_degree = k->degree >= 0 && k->degree <= 16 && k->degree == floorf(k->degree)
                        ? (int)k->degree
                        : -1;
    k->proba = proba;
    k->start[0] = 0;
    for (int64_t i = 0; i < c; i++)
        k->start[i + 1] = k->start[i] + per[i];
    *out_kernel = &k->k.base;
    return NULL;
}
