/* math_norm.c — the cpu module's LogSoftmax and normalisation kernels:
 * BatchNormalization (inference), LayerNormalization (with its optional
 * Mean and InvStdDev outputs) and InstanceNormalization, on f32 and on f64
 * (in double; LayerNorm's Mean and InvStdDev stay f32, ONNX's default stash
 * type); f16 and bf16 come as f32 through dtype_wrap.c.
 *
 * Each works on independent slices run on the host's pool: LogSoftmax on
 * the [L] columns of an [outer, L, inner] view (softmax.c's split: one dim
 * from opset 13, the flattened trailing dims before), LayerNorm on rows of
 * X[axis:], the other two on the [N*C] planes of their spatial dims. Means
 * and variances are two passes over the slice, summed with independent
 * partial sums (math_sum_f32) so that the passes vectorise. Every slice is
 * read in full before any of its outputs is written, or element by element
 * read-before-write, so an output aliasing X (in place) is safe. */
#include <math.h>
#include <string.h>

#include "fastmath.h"
#include "math_internal.h"

/* Sum of (x - mean)^2 over N floats, vectorisable. */
static float math_sum_sq_dev(const float *x, size_t n, float mean)
{
    float acc[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float d = x[i + (size_t)j] - mean;
            acc[j] += d * d;
        }
    float tail = 0.0f;
    for (; i < n; i++)
        tail += (x[i] - mean) * (x[i] - mean);
    for (int j = 0; j < 8; j++)
        acc[j] += acc[j + 8];
    for (int j = 0; j < 4; j++)
        acc[j] += acc[j + 4];
    return (acc[0] + acc[2]) + (acc[1] + acc[3]) + tail;
}

/* Tasks of at least GRAIN elements, for slices of PER_TASK elements. */
static size_t math_task_grain(size_t per_task, size_t grain)
{
    return per_task >= grain ? 1 : grain / (per_task ? per_task : 1);
}

/* ---- LogSoftmax ----------------------------------------------------------- */

#define MATH_LSM_TILE 64

typedef struct math_lsm_kernel {
    pl_kernel base;
    int64_t outer, len, inner, tiles;
    bool f64;               /* input and output are f64 (softmax.c's columns) */
} math_lsm_kernel;

typedef struct math_lsm_call {
    const math_lsm_kernel *k;
    const float *x;
    float *y;
    int add;
} math_lsm_call;

static void math_lsm_row(const float *x, float *y, int64_t len, int add)
{
    float max = x[0];
    for (int64_t i = 1; i < len; i++)
        max = x[i] > max ? x[i] : max;
    float sum = 0.0f;
    for (int64_t i = 0; i < len; i++)
        sum += cpu_expf(x[i] - max);
    const float shift = max + logf(sum);
    if (add)
        for (int64_t i = 0; i < len; i++)
            y[i] += x[i] - shift;
    else
        for (int64_t i = 0; i < len; i++)
            y[i] = x[i] - shift;
}

/* W (<= MATH_LSM_TILE) neighbouring columns of one [L, inner] slice. */
static void math_lsm_tile(const float *x, float *y, int64_t len, int64_t inner, int w, int add)
{
    float max[MATH_LSM_TILE], sum[MATH_LSM_TILE];
    for (int t = 0; t < w; t++) {
        max[t] = x[t];
        sum[t] = 0.0f;
    }
    for (int64_t i = 1; i < len; i++)
        for (int t = 0; t < w; t++)
            max[t] = x[i * inner + t] > max[t] ? x[i * inner + t] : max[t];
    for (int64_t i = 0; i < len; i++)
        for (int t = 0; t < w; t++)
            sum[t] += cpu_expf(x[i * inner + t] - max[t]);
    for (int t = 0; t < w; t++)
        sum[t] = max[t] + logf(sum[t]);
    for (int64_t i = 0; i < len; i++) {
        const float *xr = x + i * inner;
        float *yr = y + i * inner;
        if (add)
            for (int t = 0; t < w; t++)
                yr[t] += xr[t] - sum[t];
        else
            for (int t = 0; t < w; t++)
                yr[t] = xr[t] - sum[t];
    }
}

static void math_lsm_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const math_lsm_call *c = arg;
    const math_lsm_kernel *k = c->k;
    for (size_t t = begin; t < end; t++) {
        int64_t o = (int64_t)t / k->tiles, j0 = ((int64_t)t % k->tiles) * MATH_LSM_TILE;
        int64_t base = o * k->len * k->inner + j0;
        if (k->f64) {
            int64_t w = k->inner - j0 < MATH_LSM_TILE ? k->inner - j0 : MATH_LSM_TILE;
            cpu_softmax_cols_f64((const double *)(const void *)c->x + base,
                                 (double *)(void *)c->y + base, k->len, k->inner, (int)w, true,
                                 c->add);
        } else if (k->inner == 1) {
            math_lsm_row(c->x + base, c->y + base, k->len, c->add);
        } else {
            int64_t w = k->inner - j0 < MATH_LSM_TILE ? k->inner - j0 : MATH_LSM_TILE;
            math_lsm_tile(c->x + base, c->y + base, k->len, k->inner, (int)w, c->add);
        }
    }
}

static pl_status *math_lsm_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                               const pl_run_args *args, float *out, pl_output_request req)
{
    const math_lsm_kernel *k = (const math_lsm_kernel *)kernel;
    math_lsm_call c = {.k = k, .x = cpu_in(args, 0), .y = out, .add = req == PL_REQ_ADD_TO};
    int64_t per_task = k->len * (k->inner < MATH_LSM_TILE ? k->inner : MATH_LSM_TILE);
    cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->outer * k->tiles),
                           math_task_grain((size_t)per_task, MATH_GRAIN_HEAVY), math_lsm_chunk,
                           &c);
    return NULL;
}

pl_status *math_build_logsoftmax(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int64_t opset = math_opset(node), axis;
    pl_status *st = cpu_attr_int(node, "axis", opset >= 13 ? -1 : 1, &axis);
    if (st != NULL || (st = math_same_size(node, 0)) != NULL)
        return st;
    int32_t r = x->ndim;
    int64_t rr = r > 0 ? r : 1; /* a scalar is one row of one */
    int64_t norm = axis < 0 ? axis + rr : axis;
    if (norm < 0 || norm >= rr)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, (int)r);
    math_lsm_kernel *k = (math_lsm_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "LogSoftmax",
                                                             math_lsm_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->outer = k->len = k->inner = 1;
    for (int32_t d = 0; d < r; d++) {
        if (d < norm)
            k->outer *= x->shape[d];
        else if (d == norm || opset < 13)
            k->len *= x->shape[d];
        else
            k->inner *= x->shape[d];
    }
    k->tiles = (k->len == 0 || k->inner == 0) ? 0
                                               : (k->inner + MATH_LSM_TILE - 1) / MATH_LSM_TILE;
    k->f64 = PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64);
    k->base.n_reads = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- BatchNormalization and InstanceNormalization -------------------------- */

typedef struct math_plane_kernel {
    pl_kernel base;
    bool instance;          /* InstanceNormalization: statistics of each plane */
    bool f64;               /* every tensor is f64 (computed in double) */
    double epsilon;         /* rounded to f32 for f32 */
    int64_t channels;       /* C */
    size_t plane;           /* elements of one (n, c) plane */
    size_t planes;          /* N * C */
} math_plane_kernel;

typedef struct math_plane_call {
    const math_plane_kernel *k;
    const void *x, *scale, *bias, *mean, *var; /* f32, or f64 with k->f64 */
    void *y;
    int add;
} math_plane_call;

/* Plain double sums for f64 (f32 has the vectorised ones above). */
static double math_sum_f64(const double *x, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}

static double math_sum_sq_dev_f64(const double *x, size_t n, double mean)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (x[i] - mean) * (x[i] - mean);
    return s;
}

/* The planes [begin, end) on T, with SUM, SUM_SQ_DEV and SQRT of T. */
#define MATH_PLANE_CHUNK(T, SUFFIX, SUM, SUM_SQ_DEV, SQRT)                               \
    static void math_plane_chunk_##SUFFIX(void *arg, size_t begin, size_t end, int worker) \
    {                                                                                    \
        (void)worker;                                                                    \
        const math_plane_call *c = arg;                                                  \
        const math_plane_kernel *k = c->k;                                               \
        const size_t len = k->plane;                                                     \
        const T *sc = c->scale, *bi = c->bias, *mu = c->mean, *va = c->var;              \
        const T eps = (T)k->epsilon;                                                     \
        for (size_t p = begin; p < end; p++) {                                           \
            size_t ch = p % (size_t)k->channels;                                         \
            const T *x = (const T *)c->x + p * len;                                      \
            T *y = (T *)c->y + p * len;                                                  \
            T mul, shift;                                                                \
            if (k->instance) {                                                           \
                T mean = len ? SUM(x, len) / (T)len : (T)0;                              \
                T var = len ? SUM_SQ_DEV(x, len, mean) / (T)len : (T)0;                  \
                mul = sc[ch] / SQRT(var + eps);                                          \
                shift = bi[ch] - mean * mul;                                             \
            } else {                                                                     \
                mul = sc[ch] / SQRT(va[ch] + eps);                                       \
                shift = bi[ch] - mu[ch] * mul;                                           \
            }                                                                            \
            if (c->add)                                                                  \
                for (size_t i = 0; i < len; i++)                                         \
                    y[i] += x[i] * mul + shift;                                          \
            else                                                                         \
                for (size_t i = 0; i < len; i++)                                         \
                    y[i] = x[i] * mul + shift;                                           \
        }                                                                                \
    }
MATH_PLANE_CHUNK(float, f32, math_sum_f32, math_sum_sq_dev, sqrtf)
MATH_PLANE_CHUNK(double, f64, math_sum_f64, math_sum_sq_dev_f64, sqrt)

static void math_plane_go(pl_module_ctx *ctx, math_plane_call *c)
{
    const math_plane_kernel *k = c->k;
    size_t per_task = k->instance ? 3 * k->plane : k->plane;
    cpu_host->parallel_for(ctx->host_ctx, k->planes, math_task_grain(per_task, MATH_GRAIN),
                           k->f64 ? math_plane_chunk_f64 : math_plane_chunk_f32, c);
}

static pl_status *math_bn_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                              const pl_run_args *args)
{
    void *out;
    pl_output_request req;
    pl_status *st = math_run_output(kernel, args, 0, kernel->out_elements, true, &out, &req);
    if (st != NULL || out == NULL)
        return st;
    math_plane_call c = {.k = (const math_plane_kernel *)kernel, .x = cpu_in(args, 0),
                         .scale = cpu_in(args, 1), .bias = cpu_in(args, 2),
                         .mean = cpu_in(args, 3), .var = cpu_in(args, 4), .y = out,
                         .add = req == PL_REQ_ADD_TO};
    math_plane_go(ctx, &c);
    return NULL;
}

static pl_status *math_in_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                              const pl_run_args *args, float *out, pl_output_request req)
{
    math_plane_call c = {.k = (const math_plane_kernel *)kernel, .x = cpu_in(args, 0),
                         .scale = cpu_in(args, 1), .bias = cpu_in(args, 2), .y = out,
                         .add = req == PL_REQ_ADD_TO};
    math_plane_go(ctx, &c);
    return NULL;
}

/* Fills the plane kernel of NODE, whose X is [N, C, ...] and whose inputs
 * 1 .. N_CHANNEL_INPUTS have C elements each. */
static pl_status *math_plane_build(pl_module_ctx *ctx, const pl_node_desc *node,
                                   size_t n_channel_inputs, bool instance, cpu_run_fn run,
                                   pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    if (x->ndim < 2) {
        char tx[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "X %s must have rank >= 2 (N, C, ...)",
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    }
    for (size_t i = 1; i <= n_channel_inputs; i++)
        if (cpu_elements(node->inputs[i].shape, node->inputs[i].ndim) != (size_t)x->shape[1])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "input %zu does not have the %lld elements of X's channels", i,
                             (long long)x->shape[1]);
    pl_status *st = math_same_size(node, 0);
    double eps;
    if (st != NULL || (st = cpu_attr_float(node, "epsilon", 1e-5, &eps)) != NULL)
        return st;
    math_plane_kernel *k = (math_plane_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->instance = instance;
    k->f64 = PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64);
    k->epsilon = k->f64 ? eps : (float)eps;
    k->channels = x->shape[1];
    k->planes = (size_t)(x->shape[0] * x->shape[1]);
    k->plane = cpu_elements(x->shape + 2, x->ndim - 2);
    k->base.n_reads = 1 + n_channel_inputs;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = cpu_elements(x->shape, x->ndim);
    k->base.inplace_ok = true;
    *out_kernel = &k->base;
    return NULL;
}

pl_status *math_build_batchnorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    /* Every tensor f32, or every one f64. */
    math_type t = math_type_of(node->inputs[0].dtype);
    for (size_t i = 0; i < 5; i++)
        if ((t != MATH_F32 && t != MATH_F64) || math_type_of(node->inputs[i].dtype) != t)
            return math_unsupported_dtype(node->op, node->inputs[i].dtype);
    if (math_type_of(node->outputs[0].dtype) != t)
        return math_unsupported_dtype(node->op, node->outputs[0].dtype);
    int64_t training = 0, spatial = 1;
    pl_status *st = NULL;
    if (math_opset(node) >= 14)
        st = cpu_attr_int(node, "training_mode", 0, &training);
    else if (math_opset(node) < 9)
        st = cpu_attr_int(node, "spatial", 1, &spatial);
    if (st != NULL)
        return st;
    if (training != 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "training_mode=1 is not supported (inference only)");
    if (spatial == 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "spatial=0 is not supported");
    for (size_t o = 1; o < node->n_outputs; o++)
        if (math_output_present(node, o))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "output %zu (running or saved statistics) is produced only in "
                             "training, which is not supported",
                             o);
    st = math_plane_build(ctx, node, 4, false, NULL, out_kernel);
    if (st == NULL)
        (*out_kernel)->run_any = math_bn_run;
    return st;
}

pl_status *math_build_instancenorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                   pl_kernel **out_kernel)
{
    return math_plane_build(ctx, node, 2, true, math_in_run, out_kernel);
}

/* ---- LayerNormalization ----------------------------------------------------- */

typedef struct math_ln_kernel {
    pl_kernel base;
    bool f64;               /* X, scale, B and Y are f64 (computed in double) */
    double epsilon;         /* rounded to f32 for f32 */
    size_t rows, len;
    size_t scale_period;    /* scale[j % period]: len, or fewer when it repeats */
    size_t bias_period;     /* the same for B; 0 without B */
} math_ln_kernel;

typedef struct math_ln_call {
    const math_ln_kernel *k;
    const void *x, *scale, *bias; /* f32, or f64 with k->f64 */
    void *y;
    float *mean, *inv_std;  /* f32 (the stash type) */
    int add_y, add_mean, add_inv;
} math_ln_call;

/* The rows [begin, end) of T: the statistics (kept as f32, ONNX's default
 * stash type, for Mean and InvStdDev), then Y. */
#define MATH_LN_CHUNK(T, SUFFIX, SUM, SUM_SQ_DEV, SQRT)                                  \
    static void math_ln_chunk_##SUFFIX(void *arg, size_t begin, size_t end, int worker)  \
    {                                                                                    \
        (void)worker;                                                                    \
        const math_ln_call *c = arg;                                                     \
        const math_ln_kernel *k = c->k;                                                  \
        const size_t len = k->len, sp = k->scale_period, bp = k->bias_period;            \
        for (size_t r = begin; r < end; r++) {                                           \
            const T *x = (const T *)c->x + r * len;                                      \
            T mean = len ? SUM(x, len) / (T)len : (T)0;                                  \
            T var = len ? SUM_SQ_DEV(x, len, mean) / (T)len : (T)0;                      \
            T inv = (T)1 / SQRT(var + (T)k->epsilon);                                    \
            if (c->mean != NULL)                                                         \
                c->mean[r] = c->add_mean ? c->mean[r] + (float)mean : (float)mean;       \
            if (c->inv_std != NULL)                                                      \
                c->inv_std[r] = c->add_inv ? c->inv_std[r] + (float)inv : (float)inv;    \
            if (c->y != NULL)                                                            \
                math_ln_row_##SUFFIX(c, x, (T *)c->y + r * len, mean, inv, len, sp, bp); \
        }                                                                                \
    }

/* Y's row of f64: one plain loop. */
static void math_ln_row_f64(const math_ln_call *c, const double *x, double *y, double mean,
                            double inv, size_t len, size_t sp, size_t bp)
{
    const double *s = c->scale, *b = c->bias;
    for (size_t j = 0; j < len; j++) {
        double v = (x[j] - mean) * inv * s[j % sp] + (bp ? b[j % bp] : 0.0);
        y[j] = c->add_y ? y[j] + v : v;
    }
}

/* Y's row of f32: the common layouts in loops that vectorise. */
static void math_ln_row_f32(const math_ln_call *c, const float *x, float *y, float mean,
                            float inv, size_t len, size_t sp, size_t bp)
{
    const float *s = c->scale, *b = c->bias;
    if (sp == len && (bp == 0 || bp == len)) {
        if (bp == 0 && c->add_y)
            for (size_t j = 0; j < len; j++)
                y[j] += (x[j] - mean) * inv * s[j];
        else if (bp == 0)
            for (size_t j = 0; j < len; j++)
                y[j] = (x[j] - mean) * inv * s[j];
        else if (c->add_y)
            for (size_t j = 0; j < len; j++)
                y[j] += (x[j] - mean) * inv * s[j] + b[j];
        else
            for (size_t j = 0; j < len; j++)
                y[j] = (x[j] - mean) * inv * s[j] + b[j];
        return;
    }
    /* A scale or bias repeating over leading dims of X[axis:]. */
    for (size_t j = 0; j < len; j++) {
        float v = (x[j] - mean) * inv * s[j % sp] + (bp ? b[j % bp] : 0.0f);
        y[j] = c->add_y ? y[j] + v : v;
    }
}
MATH_LN_CHUNK(float, f32, math_sum_f32, math_sum_sq_dev, sqrtf)
MATH_LN_CHUNK(double, f64, math_sum_f64, math_sum_sq_dev_f64, sqrt)

static pl_status *math_ln_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                              const pl_run_args *args)
{
    const math_ln_kernel *k = (const math_ln_kernel *)kernel;
    math_ln_call c = {.k = k, .x = cpu_in(args, 0), .scale = cpu_in(args, 1)};
    if (k->bias_period != 0) {
        if (args->n_inputs < 3 || args->inputs[2].data == NULL)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 2 (B) has no data");
        c.bias = cpu_in(args, 2);
    }
    void *y = NULL;
    void **outs[3] = {&y, (void **)&c.mean, (void **)&c.inv_std};
    int *adds[3] = {&c.add_y, &c.add_mean, &c.add_inv};
    for (size_t o = 0; o < kernel->n_outputs && o < 3; o++) {
        void *data;
        pl_output_request req;
        pl_status *st = math_run_output(kernel, args, o, o == 0 ? k->rows * k->len : k->rows,
                                        true, &data, &req);
        if (st != NULL)
            return st;
        *outs[o] = data;
        *adds[o] = req == PL_REQ_ADD_TO;
    }
    c.y = y;
    if (c.y == NULL && c.mean == NULL && c.inv_std == NULL)
        return NULL;
    cpu_host->parallel_for(ctx->host_ctx, k->rows, math_task_grain(3 * k->len, MATH_GRAIN),
                           k->f64 ? math_ln_chunk_f64 : math_ln_chunk_f32, &c);
    return NULL;
}

/* The period with which a scale or bias of shape S (rank R) repeats over
 * the normalised shape NORM (rank NR): its element count when its dims
 * match NORM's trailing ones after leading 1s, else 0 (unsupported). */
static size_t math_ln_period(const int64_t *s, int32_t r, const int64_t *norm, int32_t nr)
{
    if (r > nr)
        return 0;
    int32_t d = 0;
    while (d < r && s[d] == 1)
        d++;
    for (int32_t i = d; i < r; i++)
        if (s[i] != norm[nr - r + i])
            return 0;
    return cpu_elements(s, r);
}

pl_status *math_build_layernorm(pl_module_ctx *ctx, const pl_node_desc *node,
                                pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0];
    bool has_bias = math_input_present(node, 2);
    /* X, scale, B and Y all f32 or all f64; Mean and InvStdDev f32. */
    math_type t = math_type_of(x->dtype);
    for (size_t i = 0; i < (has_bias ? 3u : 2u); i++)
        if ((t != MATH_F32 && t != MATH_F64) || math_type_of(node->inputs[i].dtype) != t)
            return math_unsupported_dtype(node->op, node->inputs[i].dtype);
    for (size_t o = 0; o < node->n_outputs; o++)
        if (math_output_present(node, o) &&
            math_type_of(node->outputs[o].dtype) != (o == 0 ? t : MATH_F32))
            return math_unsupported_dtype(node->op, node->outputs[o].dtype);
    int64_t axis;
    double eps;
    pl_status *st = cpu_attr_int(node, "axis", -1, &axis);
    if (st != NULL || (st = cpu_attr_float(node, "epsilon", 1e-5, &eps)) != NULL ||
        (st = math_same_size(node, 0)) != NULL)
        return st;
    int32_t r = x->ndim;
    int64_t a = axis < 0 ? axis + r : axis;
    if (a < 0 || a >= r)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, (int)r);
    const int64_t *norm = x->shape + a;
    int32_t nr = r - (int32_t)a;
    size_t len = cpu_elements(norm, nr);
    size_t periods[2] = {0, 0};
    for (size_t i = 1; i < (has_bias ? 3u : 2u); i++) {
        const pl_tensor *t = &node->inputs[i];
        periods[i - 1] = math_ln_period(t->shape, t->ndim, norm, nr);
        if (periods[i - 1] == 0 && len > 0) {
            char ts[128], tn[128];
            return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                             "%s %s broadcasts over the normalised shape %s in a way not "
                             "supported (only over leading dims)",
                             i == 1 ? "scale" : "B", cpu_dims_text(t->shape, t->ndim, ts, sizeof ts),
                             cpu_dims_text(norm, nr, tn, sizeof tn));
        }
    }
    math_ln_kernel *k = (math_ln_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "LayerNormalization",
                                                           NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = math_ln_run;
    k->f64 = t == MATH_F64;
    k->epsilon = k->f64 ? eps : (float)eps;
    k->len = len;
    k->rows = cpu_elements(x->shape, (int32_t)a);
    k->scale_period = periods[0] ? periods[0] : 1;
    k->bias_period = has_bias ? (periods[1] ? periods[1] : 1) : 0;
    k->base.n_reads = 2;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = k->rows * k->len;
    k->base.inplace_ok = false;
    *out_kernel = &k->base;
    return NULL;
}
