/* math_axis.c — the cpu math family's ops along axes: the reductions
 * math_reduce.c does not have (ReduceMin ReduceProd ReduceL1 ReduceL2
 * ReduceSumSquare ReduceLogSum ReduceLogSumExp), ArgMax/ArgMin, CumSum
 * (prefix sums along one axis), Trilu (over the last two) and Size (over
 * all of them).
 *
 * Reductions and ArgMax walk each output's reduced elements, in double for
 * floats and in int64, wrapping, for integers. */
#include <math.h>
#include <string.h>

#include "math_wide.h"

/* ---- reductions ----------------------------------------------------------- */

typedef enum mr2_op {
    MR2_MIN, MR2_PROD, MR2_L1, MR2_L2, MR2_SUMSQUARE, MR2_LOGSUM, MR2_LOGSUMEXP,
} mr2_op;

static const char *const mr2_names[] = {
    [MR2_MIN] = "ReduceMin", [MR2_PROD] = "ReduceProd", [MR2_L1] = "ReduceL1",
    [MR2_L2] = "ReduceL2", [MR2_SUMSQUARE] = "ReduceSumSquare",
    [MR2_LOGSUM] = "ReduceLogSum", [MR2_LOGSUMEXP] = "ReduceLogSumExp",
};

/* The input's dims split into kept ones (giving the output's flat index)
 * and reduced ones, each with its element stride in the input. */
typedef struct mr2_kernel {
    pl_kernel base;
    mr2_op op;
    wide_type type;
    int n_kept, n_red;
    int64_t kept_extent[CPU_MAX_RANK], kept_stride[CPU_MAX_RANK];
    int64_t red_extent[CPU_MAX_RANK], red_stride[CPU_MAX_RANK];
    size_t len;              /* elements reduced into each output */
} mr2_kernel;

typedef struct mr2_call {
    const mr2_kernel *k;
    const void *x;
    void *y;
    int add;
} mr2_call;

/* The input offset of output E's first reduced element. */
static size_t mr2_base(const mr2_kernel *k, size_t e)
{
    size_t base = 0;
    for (int g = k->n_kept - 1; g >= 0; g--) {
        base += (e % (size_t)k->kept_extent[g]) * (size_t)k->kept_stride[g];
        e /= (size_t)k->kept_extent[g];
    }
    return base;
}

/* Calls BODY with `off` at every reduced element of the output at BASE. */
#define MR2_EACH(k, base, BODY)                                                          \
    do {                                                                                 \
        int64_t idx_[CPU_MAX_RANK] = {0};                                                \
        size_t off = (base);                                                             \
        if ((k)->len == 0)                                                               \
            break;                                                                       \
        for (;;) {                                                                       \
            BODY;                                                                        \
            int r_ = (k)->n_red - 1;                                                     \
            for (; r_ >= 0; r_--) {                                                      \
                if (++idx_[r_] < (k)->red_extent[r_]) {                                  \
                    off += (size_t)(k)->red_stride[r_];                                  \
                    break;                                                               \
                }                                                                        \
                off -= (size_t)((idx_[r_] - 1) * (k)->red_stride[r_]);                   \
                idx_[r_] = 0;                                                            \
            }                                                                            \
            if (r_ < 0)                                                                  \
                break;                                                                   \
        }                                                                                \
    } while (0)

static double mr2_float(const mr2_kernel *k, const void *x, size_t base)
{
    const wide_type t = k->type;
    double acc;
    switch (k->op) {
    case MR2_MIN:
        acc = INFINITY;
        MR2_EACH(k, base, {
            double v = wide_load_f(x, t, off);
            acc = (v < acc || isnan(v)) ? v : acc;
        });
        return acc;
    case MR2_PROD:
        acc = 1.0;
        MR2_EACH(k, base, acc *= wide_load_f(x, t, off));
        return acc;
    case MR2_L1:
        acc = 0.0;
        MR2_EACH(k, base, acc += fabs(wide_load_f(x, t, off)));
        return acc;
    case MR2_L2:
    case MR2_SUMSQUARE:
        acc = 0.0;
        MR2_EACH(k, base, {
            double v = wide_load_f(x, t, off);
            acc += v * v;
        });
        return k->op == MR2_L2 ? sqrt(acc) : acc;
    case MR2_LOGSUM:
        acc = 0.0;
        MR2_EACH(k, base, acc += wide_load_f(x, t, off));
        return log(acc);
    case MR2_LOGSUMEXP: {
        /* Shifted by the largest element, so exp cannot overflow. */
        double top = -INFINITY;
        MR2_EACH(k, base, {
            double v = wide_load_f(x, t, off);
            top = v > top || isnan(v) ? v : top;
        });
        if (isinf(top) || isnan(top))
            return top;
        acc = 0.0;
        MR2_EACH(k, base, acc += exp(wide_load_f(x, t, off) - top));
        return top + log(acc);
    }
    }
    return 0.0;
}

/* Outputs along the innermost kept dim whose input stride is 1 (a
 * reduction over outer axes: onnx-asr's power spectra sum the squares of
 * [.., 2, bins, frames] over the 2): N of them, from the output at BASE,
 * their reduced elements walked once for all, each output's in the order
 * mr2_float takes them (the same sums, bit for bit). */
#define MR2_BLOCK 64

static void mr2_float_block(const mr2_kernel *k, const void *x, size_t base, size_t n,
                            double *acc)
{
    const wide_type t = k->type;
    const float *xf = x;
#define MR2_AT(j) (t == WT_F32 ? (double)xf[off + (j)] : wide_load_f(x, t, off + (j)))
    switch (k->op) {
    case MR2_MIN:
        for (size_t j = 0; j < n; j++)
            acc[j] = INFINITY;
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) {
            double v = MR2_AT(j);
            acc[j] = (v < acc[j] || isnan(v)) ? v : acc[j];
        });
        return;
    case MR2_PROD:
        for (size_t j = 0; j < n; j++)
            acc[j] = 1.0;
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] *= MR2_AT(j));
        return;
    case MR2_L1:
        memset(acc, 0, n * sizeof *acc);
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] += fabs(MR2_AT(j)));
        return;
    case MR2_L2:
    case MR2_SUMSQUARE:
        memset(acc, 0, n * sizeof *acc);
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) {
            double v = MR2_AT(j);
            acc[j] += v * v;
        });
        if (k->op == MR2_L2)
            for (size_t j = 0; j < n; j++)
                acc[j] = sqrt(acc[j]);
        return;
    case MR2_LOGSUM:
        memset(acc, 0, n * sizeof *acc);
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] += MR2_AT(j));
        for (size_t j = 0; j < n; j++)
            acc[j] = log(acc[j]);
        return;
    case MR2_LOGSUMEXP: {
        double top[MR2_BLOCK];
        for (size_t j = 0; j < n; j++)
            top[j] = -INFINITY;
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) {
            double v = MR2_AT(j);
            top[j] = v > top[j] || isnan(v) ? v : top[j];
        });
        memset(acc, 0, n * sizeof *acc);
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] += exp(MR2_AT(j) - top[j]));
        for (size_t j = 0; j < n; j++)
            acc[j] = isinf(top[j]) || isnan(top[j]) ? top[j] : top[j] + log(acc[j]);
        return;
    }
    }
#undef MR2_AT
}

/* mr2_float_block for f32 and every op but LogSumExp, each op's loop over
 * the block's outputs of its own, in AVX2 where the CPU has it: the same
 * sums in the same order as mr2_float's (no FMA), four doubles a step
 * instead of two (ConvNeXt V2's global response normalisation, ReduceL2 of
 * [1, 56, 56, 160] over the 56 x 56, spent 0.5 ms in two-lane SSE2). */
__attribute__((target_clones("avx2", "default"))) static void
mr2_f32_block(const mr2_kernel *k, const float *xf, size_t base, size_t n, double *acc)
{
    double init = k->op == MR2_PROD ? 1.0 : k->op == MR2_MIN ? INFINITY : 0.0;
    for (size_t j = 0; j < n; j++)
        acc[j] = init;
    switch (k->op) {
    case MR2_MIN:
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) {
            double v = (double)xf[off + j];
            acc[j] = (v < acc[j] || isnan(v)) ? v : acc[j];
        });
        break;
    case MR2_PROD:
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] *= (double)xf[off + j]);
        break;
    case MR2_L1:
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] += fabs((double)xf[off + j]));
        break;
    case MR2_LOGSUM:
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) acc[j] += (double)xf[off + j]);
        for (size_t j = 0; j < n; j++)
            acc[j] = log(acc[j]);
        break;
    default: /* MR2_L2, MR2_SUMSQUARE */
        MR2_EACH(k, base, for (size_t j = 0; j < n; j++) {
            double v = (double)xf[off + j];
            acc[j] += v * v;
        });
        if (k->op == MR2_L2)
            for (size_t j = 0; j < n; j++)
                acc[j] = sqrt(acc[j]);
        break;
    }
}

/* The sum of ROW[0..LEN) (|x| when ABS, x^2 when SQUARE) in double, in
 * eight running sums (lanes of AVX2 where the CPU has it), added pairwise
 * at the end: one running sum waited four cycles an element on the add
 * before it (ConvNeXt V2's ReduceL2 over 56 x 56 of 160 channels: 0.2 ms). */
__attribute__((target_clones("avx2", "default"))) static double
mr2_sum8(const float *row, size_t len, bool abs, bool square)
{
    double a[8] = {0};
    size_t j = 0;
    if (square)
        for (; j + 8 <= len; j += 8)
            for (int i = 0; i < 8; i++)
                a[i] += (double)row[j + i] * (double)row[j + i];
    else if (abs)
        for (; j + 8 <= len; j += 8)
            for (int i = 0; i < 8; i++)
                a[i] += fabs((double)row[j + i]);
    else
        for (; j + 8 <= len; j += 8)
            for (int i = 0; i < 8; i++)
                a[i] += (double)row[j + i];
    double acc = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
    for (; j < len; j++) {
        double v = (double)row[j];
        acc += square ? v * v : abs ? fabs(v) : v;
    }
    return acc;
}

/* Integers wrap, as the integer sums of math_reduce.c do. */
static int64_t mr2_int(const mr2_kernel *k, const void *x, size_t base)
{
    const wide_type t = k->type;
    uint64_t acc = k->op == MR2_PROD ? 1 : 0;
    int64_t least = INT64_MAX;
    switch (k->op) {
    case MR2_MIN:
        MR2_EACH(k, base, {
            int64_t v = wide_load_i(x, t, off);
            least = v < least ? v : least;
        });
        /* An empty reduction gives the type's largest value (true for
         * bool, which opset 20 admits: the minimum of 0/1 is an AND). */
        if (k->len == 0)
            return t == WT_I32 ? INT32_MAX : t == WT_I8 ? INT8_MAX : t == WT_U8 ? UINT8_MAX
                   : t == WT_BOOL ? 1 : INT64_MAX;
        return least;
    case MR2_PROD:
        MR2_EACH(k, base, acc *= (uint64_t)wide_load_i(x, t, off));
        break;
    case MR2_L1:
        MR2_EACH(k, base, {
            int64_t v = wide_load_i(x, t, off);
            acc += v < 0 ? 0u - (uint64_t)v : (uint64_t)v;
        });
        break;
    default: /* MR2_SUMSQUARE */
        MR2_EACH(k, base, {
            uint64_t v = (uint64_t)wide_load_i(x, t, off);
            acc += v * v;
        });
        break;
    }
    return (int64_t)acc;
}

static void mr2_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mr2_call *c = arg;
    const mr2_kernel *k = c->k;
    size_t inner = k->n_kept > 0 ? (size_t)k->kept_extent[k->n_kept - 1] : 1;
    if (wide_is_float(k->type) && inner > 1 && k->kept_stride[k->n_kept - 1] == 1 &&
        k->len > 0) {
        double acc[MR2_BLOCK];
        for (size_t e = begin; e < end;) {
            size_t run = inner - e % inner;
            run = run < end - e ? run : end - e;
            run = run < MR2_BLOCK ? run : MR2_BLOCK;
            if (k->type == WT_F32 && k->op != MR2_LOGSUMEXP)
                mr2_f32_block(k, c->x, mr2_base(k, e), run, acc);
            else
                mr2_float_block(k, c->x, mr2_base(k, e), run, acc);
            for (size_t j = 0; j < run; j++)
                wide_store_f(c->y, k->type, e + j, acc[j], c->add);
            e += run;
        }
        return;
    }
    if (k->type == WT_F32 && k->n_red == 1 && k->op != MR2_LOGSUMEXP) {
        /* one reduced axis: a plain loop (the power spectrum of a
         * [.., bins, 2] STFT, two values an output, spent most of its time
         * in MR2_EACH's index walk, as did PolynomialFeatures' ReduceProd
         * of two columns, skl2onnx's, 65 of them a model); the same
         * results as mr2_float, in the same order */
        const float *xf = c->x;
        size_t len = (size_t)k->red_extent[0], st = (size_t)k->red_stride[0];
        /* rows one after another (the reduced axis innermost, the kept
         * ones dense before it): output E's row starts at E * LEN */
        bool rows = st == 1;
        int64_t want = (int64_t)len;
        for (int g = k->n_kept - 1; rows && g >= 0; g--) {
            rows = k->kept_stride[g] == want || k->kept_extent[g] == 1;
            want *= k->kept_extent[g];
        }
        for (size_t e = begin; e < end; e++) {
            const float *row = xf + (rows ? e * len : mr2_base(k, e));
            double acc = 0.0;
            if (st == 1 && k->op != MR2_PROD && k->op != MR2_MIN) {
                acc = mr2_sum8(row, len, k->op == MR2_L1,
                               k->op == MR2_L2 || k->op == MR2_SUMSQUARE);
                acc = k->op == MR2_L2 ? sqrt(acc) : k->op == MR2_LOGSUM ? log(acc) : acc;
                wide_store_f(c->y, k->type, e, acc, c->add);
                continue;
            }
            switch (k->op) {
            case MR2_L1:
                for (size_t j = 0; j < len; j++)
                    acc += fabs((double)row[j * st]);
                break;
            case MR2_PROD:
                acc = 1.0;
                for (size_t j = 0; j < len; j++)
                    acc *= (double)row[j * st];
                break;
            case MR2_MIN:
                acc = INFINITY;
                for (size_t j = 0; j < len; j++) {
                    double v = (double)row[j * st];
                    acc = (v < acc || isnan(v)) ? v : acc;
                }
                break;
            case MR2_LOGSUM:
                for (size_t j = 0; j < len; j++)
                    acc += (double)row[j * st];
                acc = log(acc);
                break;
            default: /* MR2_L2, MR2_SUMSQUARE */
                for (size_t j = 0; j < len; j++)
                    acc += (double)row[j * st] * (double)row[j * st];
                if (k->op == MR2_L2)
                    acc = sqrt(acc);
                break;
            }
            wide_store_f(c->y, k->type, e, acc, c->add);
        }
        return;
    }
    for (size_t e = begin; e < end; e++) {
        size_t base = mr2_base(k, e);
        if (wide_is_float(k->type))
            wide_store_f(c->y, k->type, e, mr2_float(k, c->x, base), c->add);
        /* ReduceL2, ReduceLogSum and ReduceLogSumExp on integers: in double,
         * truncated (numpy's result cast back to the type). */
        else if (k->op == MR2_L2 || k->op == MR2_LOGSUM || k->op == MR2_LOGSUMEXP)
            wide_store_i(c->y, k->type, e, math_trunc_i64(mr2_float(k, c->x, base)), c->add);
        else
            wide_store_i(c->y, k->type, e, mr2_int(k, c->x, base), c->add);
    }
}

static pl_status *mr2_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mr2_kernel *k = (const mr2_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mr2_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add};
    size_t grain = k->len >= MATH_GRAIN_HEAVY ? 1 : MATH_GRAIN_HEAVY / (k->len ? k->len : 1);
    /* outputs along a dense inner dim (mr2_chunk's blocks) whole blocks a
     * chunk: chunks of 20 of 160 outputs each streamed the whole input for
     * 80 bytes of every 640 */
    size_t inner = k->n_kept > 0 ? (size_t)k->kept_extent[k->n_kept - 1] : 1;
    if (wide_is_float(k->type) && inner > 1 && k->kept_stride[k->n_kept - 1] == 1) {
        size_t block = inner < MR2_BLOCK ? inner : MR2_BLOCK;
        grain = grain > block ? grain : block;
    }
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, mr2_chunk, &c);
    return NULL;
}

/* Reads the axes of NODE into REDUCE (one flag per dim of X, rank R):
 * the attribute before opset 18, the constant optional input from 18. */
static pl_status *mr2_axes(const pl_node_desc *node, int32_t r, bool *reduce)
{
    return math_reduce_axes(node, math_opset(node) >= 18, r, reduce);
}

pl_status *math_build_reduce_any(pl_module_ctx *ctx, const pl_node_desc *node,
                                 pl_kernel **out_kernel)
{
    int found = wide_find(mr2_names, WIDE_COUNT(mr2_names), node->op);
    if (found < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "not a reduction of this family");
    mr2_op op = (mr2_op)found;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    wide_type t = wide_type_of(x->dtype);
    /* Every reduction of this file on i32 and i64 (ONNX's types), ReduceMin
     * on every integer type and (opset 20) bool. */
    if (!(wide_is_float(t) || t == WT_I64 || t == WT_I32 ||
          (op == MR2_MIN && (wide_is_int(t) || t == WT_BOOL))))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    bool reduce[CPU_MAX_RANK];
    pl_status *st = mr2_axes(node, x->ndim, reduce);
    if (st != NULL)
        return st;
    mr2_kernel *k = (mr2_kernel *)cpu_kernel_alloc(ctx, sizeof *k, mr2_names[op], NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    size_t out_elements = 1, len = 1;
    int64_t step = 1;
    int nk = 0, nr = 0;
    /* Innermost first, then reversed so the outermost comes first. */
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        int64_t e = x->shape[d];
        /* a dim right outside the last one of its kind (reduced or kept)
         * merges into it: the same elements in the same order, one index
         * fewer to step (ReduceL2 over H and W of NCHW is one axis of
         * H x W, mr2_chunk's plain loop) */
        if (reduce[d]) {
            len *= (size_t)e;
            if (e != 1 && nr > 0 && k->red_stride[nr - 1] * k->red_extent[nr - 1] == step)
                k->red_extent[nr - 1] *= e;
            else if (e != 1) {
                k->red_extent[nr] = e;
                k->red_stride[nr++] = step;
            }
        } else {
            out_elements *= (size_t)e;
            if (e != 1 && nk > 0 && k->kept_stride[nk - 1] * k->kept_extent[nk - 1] == step)
                k->kept_extent[nk - 1] *= e;
            else if (e != 1) {
                k->kept_extent[nk] = e;
                k->kept_stride[nk++] = step;
            }
        }
        step *= e;
    }
    for (int i = 0; i < nk / 2; i++) {
        int64_t a = k->kept_extent[i], b = k->kept_stride[i];
        k->kept_extent[i] = k->kept_extent[nk - 1 - i];
        k->kept_stride[i] = k->kept_stride[nk - 1 - i];
        k->kept_extent[nk - 1 - i] = a;
        k->kept_stride[nk - 1 - i] = b;
    }
    for (int i = 0; i < nr / 2; i++) {
        int64_t a = k->red_extent[i], b = k->red_stride[i];
        k->red_extent[i] = k->red_extent[nr - 1 - i];
        k->red_stride[i] = k->red_stride[nr - 1 - i];
        k->red_extent[nr - 1 - i] = a;
        k->red_stride[nr - 1 - i] = b;
    }
    if (out_elements != cpu_elements(o->shape, o->ndim)) {
        char tx[128], to[128];
        cpu_kernel_release(ctx, &k->base);
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "output %s does not match reducing input %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    }
    k->base.run_any = mr2_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = out_elements;
    k->op = op;
    k->type = t;
    k->n_kept = nk;
    k->n_red = nr;
    k->len = len;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- ArgMax, ArgMin ------------------------------------------------------- */

typedef struct ma_kernel {
    pl_kernel base;
    bool max;                /* ArgMax, else ArgMin */
    bool last;               /* select_last_index */
    wide_type type;
    size_t outer, len, inner;
} ma_kernel;

typedef struct ma_call {
    const ma_kernel *k;
    const void *x;
    int64_t *y;
} ma_call;

/* Whether V beats BEST: strictly, or also on ties with select_last_index. */
#define MA_BETTER(k, v, best)                                  \
    ((k)->max ? ((k)->last ? (v) >= (best) : (v) > (best))     \
              : ((k)->last ? (v) <= (best) : (v) < (best)))

static void ma_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const ma_call *c = arg;
    const ma_kernel *k = c->k;
    for (size_t e = begin; e < end; e++) {
        size_t base = (e / k->inner) * k->len * k->inner + e % k->inner;
        int64_t at = 0;
        if (k->type == WT_F32) {
            /* f32 without the widening loads and the type switch */
            const float *x = (const float *)c->x + base;
            float best = x[0];
            for (size_t l = 1; l < k->len && !isnan(best); l++) {
                float v = x[l * k->inner];
                if (isnan(v) || MA_BETTER(k, v, best)) {
                    best = v;
                    at = (int64_t)l;
                }
            }
        } else if (wide_is_float(k->type)) {
            double best = wide_load_f(c->x, k->type, base);
            for (size_t l = 1; l < k->len && !isnan(best); l++) {
                double v = wide_load_f(c->x, k->type, base + l * k->inner);
                /* The first NaN wins, as in NumPy. */
                if (isnan(v) || MA_BETTER(k, v, best)) {
                    best = v;
                    at = (int64_t)l;
                }
            }
        } else {
            int64_t best = wide_load_i(c->x, k->type, base);
            for (size_t l = 1; l < k->len; l++) {
                int64_t v = wide_load_i(c->x, k->type, base + l * k->inner);
                if (MA_BETTER(k, v, best)) {
                    best = v;
                    at = (int64_t)l;
                }
            }
        }
        c->y[e] = at;
    }
}

static pl_status *ma_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const ma_kernel *k = (const ma_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, false, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    ma_call c = {.k = k, .x = math_in(args, 0), .y = out};
    size_t grain = k->len >= MATH_GRAIN ? 1 : MATH_GRAIN / k->len;
    cpu_host->parallel_for(ctx->host_ctx, kernel->out_elements, grain, ma_chunk, &c);
    return NULL;
}

pl_status *math_build_arg(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    wide_type t = wide_type_of(x->dtype);
    if (!wide_is_float(t) && !wide_is_int(t))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64))
        return math_unsupported_dtype(node->op, o->dtype);
    int64_t axis, keep, last = 0;
    pl_status *st = cpu_attr_int(node, "axis", 0, &axis);
    if (st == NULL)
        st = cpu_attr_int(node, "keepdims", 1, &keep);
    if (st == NULL && math_opset(node) >= 12)
        st = cpu_attr_int(node, "select_last_index", 0, &last);
    if (st != NULL)
        return st;
    int64_t a = axis < 0 ? axis + x->ndim : axis;
    if (a < 0 || a >= x->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, (int)x->ndim);
    if (x->shape[a] == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld has no elements",
                         (long long)axis);
    size_t outer = cpu_elements(x->shape, (int32_t)a);
    size_t inner = cpu_elements(x->shape + a + 1, x->ndim - (int32_t)a - 1);
    if (outer * inner != cpu_elements(o->shape, o->ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "output does not match the input");
    bool max = strcmp(node->op, "ArgMax") == 0;
    ma_kernel *k = (ma_kernel *)cpu_kernel_alloc(ctx, sizeof *k, max ? "ArgMax" : "ArgMin", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = ma_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = outer * inner;
    k->max = max;
    k->last = last != 0;
    k->type = t;
    k->outer = outer;
    k->len = (size_t)x->shape[a];
    k->inner = inner;
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Trilu ---------------------------------------------------------------- */

typedef struct mt_kernel {
    pl_kernel base;
    bool upper;
    bool k_input;            /* k is read from input 1 at each run */
    size_t esize;
    size_t rows, cols;       /* of each matrix (the last two dims) */
} mt_kernel;

typedef struct mt_call {
    const mt_kernel *k;
    const char *x;
    char *y;
    int64_t diag;
} mt_call;

/* Rows [begin, end) of the stacked matrices. */
static void mt_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mt_call *c = arg;
    const mt_kernel *k = c->k;
    const size_t es = k->esize, row_bytes = k->cols * es;
    for (size_t r = begin; r < end; r++) {
        int64_t i = (int64_t)(r % k->rows);
        /* Columns j kept: j - i >= diag (upper) or j - i <= diag (lower). */
        const int64_t cols = (int64_t)k->cols, diag = c->diag;
        int64_t lo = 0, hi = cols;
        if (k->upper)
            lo = diag >= cols - i ? cols : (diag <= -i ? 0 : i + diag);
        else
            hi = diag < -i ? 0 : (diag >= cols - i - 1 ? cols : i + diag + 1);
        if (lo > hi)
            lo = hi;
        const char *xr = c->x + r * row_bytes;
        char *yr = c->y + r * row_bytes;
        if (yr != xr)
            memcpy(yr + (size_t)lo * es, xr + (size_t)lo * es, (size_t)(hi - lo) * es);
        memset(yr, 0, (size_t)lo * es);
        memset(yr + (size_t)hi * es, 0, ((size_t)k->cols - (size_t)hi) * es);
    }
}

static pl_status *mt_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mt_kernel *k = (const mt_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, false, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    mt_call c = {.k = k, .x = math_in(args, 0), .y = out, .diag = 0};
    if (k->k_input) {
        if (args->n_inputs < 2 || args->inputs[1].data == NULL)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 1 (k) has no data");
        c.diag = *(const int64_t *)math_in(args, 1);
    }
    size_t rows = kernel->out_elements / k->cols;
    size_t grain = MATH_GRAIN / k->cols ? MATH_GRAIN / k->cols : 1;
    cpu_host->parallel_for(ctx->host_ctx, rows, grain, mt_chunk, &c);
    return NULL;
}

pl_status *math_build_trilu(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    size_t es = pl_dtype_size(x->dtype);
    if (wide_type_of(x->dtype) == WT_OTHER && es != 2)
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (x->ndim < 2)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input has rank %d, at least 2 needed",
                         (int)x->ndim);
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    bool k_input = math_input_present(node, 1);
    if (k_input && (!PL_DTYPE_EQ(node->inputs[1].dtype, PL_DTYPE_I64) ||
                    cpu_elements(node->inputs[1].shape, node->inputs[1].ndim) != 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "k must be an i64 scalar");
    int64_t upper;
    if ((st = cpu_attr_int(node, "upper", 1, &upper)) != NULL)
        return st;
    mt_kernel *k = (mt_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "Trilu", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mt_run;
    k->base.n_reads = k_input ? 2 : 1;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    k->upper = upper != 0;
    k->k_input = k_input;
    k->esize = es;
    k->rows = (size_t)x->shape[x->ndim - 2];
    k->cols = (size_t)x->shape[x->ndim - 1];
    *out_kernel = &k->base;
    return NULL;
}

/* ---- CumSum, CumProd ------------------------------------------------------ */

typedef struct mc_kernel {
    pl_kernel base;
    wide_type type;
    bool exclusive, reverse;
    bool prod;               /* CumProd (26): products instead of sums */
    wide_type axis_type;     /* i32 or i64 */
    int32_t ndim;
    int64_t dims[CPU_MAX_RANK];
} mc_kernel;

typedef struct mc_call {
    const mc_kernel *k;
    const void *x;
    void *y;
    int add;
    size_t len, inner;
} mc_call;

/* Scans the lines [begin, end) (outer x inner positions) along the axis,
 * in the input's type as NumPy does. */
#define MC_SCAN(T)                                                                       \
    do {                                                                                 \
        const T *xs = c->x;                                                              \
        T *ys = c->y;                                                                    \
        for (size_t line = begin; line < end; line++) {                                  \
            size_t base = (line / c->inner) * c->len * c->inner + line % c->inner;       \
            T acc = k->prod ? (T)1 : (T)0;                                               \
            for (size_t s = 0; s < c->len; s++) {                                        \
                size_t l = k->reverse ? c->len - 1 - s : s;                              \
                size_t p = base + l * c->inner;                                          \
                T v = xs[p];                                                             \
                T next = k->prod ? (T)(acc * v) : (T)(acc + v);                          \
                T r = k->exclusive ? acc : next;                                         \
                acc = next;                                                              \
                ys[p] = c->add ? (T)(ys[p] + r) : r;                                     \
            }                                                                            \
        }                                                                                \
    } while (0)

static void mc_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const mc_call *c = arg;
    const mc_kernel *k = c->k;
    switch (k->type) {
    case WT_F32: MC_SCAN(float); break;
    case WT_F64: MC_SCAN(double); break;
    /* Integers wrap: sums and products in the unsigned type of the same
     * width. */
    case WT_I64: MC_SCAN(uint64_t); break;
    default: MC_SCAN(uint32_t); break;
    }
}

static pl_status *mc_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mc_kernel *k = (const mc_kernel *)kernel;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    const pl_tensor *at = &args->inputs[1];
    if (at->data == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op, "input 1 (axis) has no data");
    int64_t axis = k->axis_type == WT_I64 ? *(const int64_t *)math_in(args, 1)
                                          : *(const int32_t *)math_in(args, 1);
    int64_t a = axis < 0 ? axis + k->ndim : axis;
    if (a < 0 || a >= k->ndim)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, kernel->op,
                         "axis %lld out of range for rank %d", (long long)axis, (int)k->ndim);
    mc_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = add,
                 .len = (size_t)k->dims[a],
                 .inner = cpu_elements(k->dims + a + 1, k->ndim - (int32_t)a - 1)};
    if (c.len == 0 || c.inner == 0)
        return NULL;
    size_t lines = kernel->out_elements / c.len;
    size_t grain = c.len >= MATH_GRAIN ? 1 : MATH_GRAIN / c.len;
    cpu_host->parallel_for(ctx->host_ctx, lines, grain, mc_chunk, &c);
    return NULL;
}

pl_status *math_build_cumsum(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *ax = &node->inputs[1], *o = &node->outputs[0];
    wide_type t = wide_type_of(x->dtype), at = wide_type_of(ax->dtype);
    if (!(wide_is_float(t) || t == WT_I64 || t == WT_I32))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (at != WT_I64 && at != WT_I32)
        return math_unsupported_dtype(node->op, ax->dtype);
    if (cpu_elements(ax->shape, ax->ndim) != 1 || ax->ndim > 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis must be a scalar");
    if (x->ndim < 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input must have rank 1 or more");
    pl_status *st = math_same_size(node, 0);
    if (st != NULL)
        return st;
    int64_t excl, rev;
    if ((st = cpu_attr_int(node, "exclusive", 0, &excl)) != NULL ||
        (st = cpu_attr_int(node, "reverse", 0, &rev)) != NULL)
        return st;
    mc_kernel *k = (mc_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mc_run;
    k->base.n_reads = 2;
    k->base.n_outputs = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    k->type = t;
    k->axis_type = at;
    k->exclusive = excl != 0;
    k->reverse = rev != 0;
    k->prod = strcmp(node->op, "CumProd") == 0;
    k->ndim = x->ndim;
    memcpy(k->dims, x->shape, (size_t)x->ndim * sizeof *x->shape);
    *out_kernel = &k->base;
    return NULL;
}

/* ---- Size ----------------------------------------------------------------- */

typedef struct ms_kernel {
    pl_kernel base;
    int64_t size;
} ms_kernel;

static pl_status *ms_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    (void)ctx;
    void *out;
    int add;
    pl_status *st = wide_output(kernel, args, true, &out, &add);
    if (st != NULL || out == NULL)
        return st;
    int64_t *y = out, v = ((const ms_kernel *)kernel)->size;
    *y = add ? (int64_t)((uint64_t)*y + (uint64_t)v) : v;
    return NULL;
}

pl_status *math_build_size(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    if (!PL_DTYPE_EQ(o->dtype, PL_DTYPE_I64))
        return math_unsupported_dtype(node->op, o->dtype);
    if (cpu_elements(o->shape, o->ndim) != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "the output must be a scalar");
    ms_kernel *k = (ms_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "Size", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = ms_run;
    k->base.n_reads = 0; /* only the input's shape matters, known now */
    k->base.n_outputs = 1;
    k->base.out_elements = 1;
    k->size = (int64_t)cpu_elements(x->shape, x->ndim);
    *out_kernel = &k->base;
    return NULL;
}

