/* math_reduce.c — the cpu module's reductions: ReduceMean and ReduceSum
 * (f32, f64, i64, i32) and ReduceMax (those and i8, u8, bool), over
 * axes given as an attribute (older opsets) or as a constant optional
 * input (ReduceSum from opset 13, the others from 18), with keepdims (which changes only the output's shape,
 * inferred by the core) and noop_with_empty_axes.
 *
 * The builder drops size-1 dims and merges neighbouring dims that are both
 * reduced or both kept. What usually remains is [outer, L, inner] with L
 * reduced (the last axis of BERT's decomposed LayerNorm, the spatial dims
 * of a global pool, a leading batch): rows are reduced with independent
 * partial sums when inner is 1, and otherwise tiles of inner positions are
 * accumulated row by row in a small buffer, reading memory in order. Any
 * other pattern (reduced dims interleaved with kept ones) is walked element
 * by element for each output. An empty reduction gives 0 (Sum), the lowest
 * value (Max) or NaN (Mean). Integer sums wrap. */
#include <math.h>
#include <string.h>

#include "math_internal.h"

#define MR_TILE 256

typedef enum mr_op { MR_MEAN, MR_SUM, MR_MAX } mr_op;

typedef struct mr_kernel {
    pl_kernel base;
    mr_op op;
    math_type type;
    bool general;               /* no [outer, L, inner] form: walk groups */
    int64_t outer, len, inner, tiles;
    /* general: merged dims, outermost first, with their element strides */
    int n_groups;
    int64_t extent[CPU_MAX_RANK];
    int64_t stride[CPU_MAX_RANK];
    bool reduced[CPU_MAX_RANK];
} mr_kernel;

typedef struct mr_call {
    const mr_kernel *k;
    const void *x;
    void *y;
    int add;
} mr_call;

/* Per dtype (with mr_add_, mr_finish_, mr_sum_ and mr_walk_ of its
 * suffix): the identity of Max, and the three shapes of work (a row, a tile of columns, one output of the general walk). */
#define MR_DEFINE(T, SUFFIX, LOWEST)                                              \
    static void mr_store_##SUFFIX(T *y, T v, int add)                             \
    {                                                                             \
        *y = add ? mr_add_##SUFFIX(*y, v) : v;                                    \
    }                                                                             \
    static T mr_row_##SUFFIX(const mr_kernel *k, const T *x, int64_t len)         \
    {                                                                             \
        if (k->op == MR_MAX) {                                                    \
            T m = LOWEST;                                                         \
            for (int64_t i = 0; i < len; i++)                                     \
                m = x[i] > m ? x[i] : m;                                          \
            return m;                                                             \
        }                                                                         \
        return mr_sum_##SUFFIX(x, (size_t)len);                                   \
    }                                                                             \
    static void mr_tile_##SUFFIX(const mr_kernel *k, const T *x, T *y, int w,     \
                                 int add)                                         \
    {                                                                             \
        T acc[MR_TILE];                                                           \
        const bool max = k->op == MR_MAX;                                         \
        for (int t = 0; t < w; t++)                                               \
            acc[t] = max ? LOWEST : (T)0;                                         \
        for (int64_t l = 0; l < k->len; l++) {                                    \
            const T *row = x + l * k->inner;                                      \
            if (max)                                                              \
                for (int t = 0; t < w; t++)                                       \
                    acc[t] = row[t] > acc[t] ? row[t] : acc[t];                   \
            else                                                                  \
                for (int t = 0; t < w; t++)                                       \
                    acc[t] = mr_add_##SUFFIX(acc[t], row[t]);                     \
        }                                                                         \
        for (int t = 0; t < w; t++)                                               \
            mr_store_##SUFFIX(y + t, mr_finish_##SUFFIX(k, acc[t]), add);         \
    }                                                                             \
    static void mr_chunk_##SUFFIX(void *arg, size_t begin, size_t end, int worker) \
    {                                                                             \
        (void)worker;                                                             \
        const mr_call *c = arg;                                                   \
        const mr_kernel *k = c->k;                                                \
        const T *x = c->x;                                                        \
        T *y = c->y;                                                              \
        for (size_t task = begin; task < end; task++) {                           \
            if (k->general) {                                                     \
                mr_store_##SUFFIX(y + task,                                       \
                                  mr_finish_##SUFFIX(k, mr_walk_##SUFFIX(k, x, task)), \
                                  c->add);                                        \
            } else if (k->inner == 1) {                                           \
                T v = mr_row_##SUFFIX(k, x + (int64_t)task * k->len, k->len);     \
                mr_store_##SUFFIX(y + task, mr_finish_##SUFFIX(k, v), c->add);    \
            } else {                                                              \
                int64_t o = (int64_t)task / k->tiles;                             \
                int64_t j0 = ((int64_t)task % k->tiles) * MR_TILE;                \
                int64_t w = k->inner - j0 < MR_TILE ? k->inner - j0 : MR_TILE;    \
                mr_tile_##SUFFIX(k, x + o * k->len * k->inner + j0,               \
                                 y + o * k->inner + j0, (int)w, c->add);          \
            }                                                                     \
        }                                                                         \
    }

/* The general walk: output E's kept-dim offset, then every reduced index. */
#define MR_WALK(T, SUFFIX, LOWEST)                                                \
    static T mr_walk_##SUFFIX(const mr_kernel *k, const T *x, size_t e)           \
    {                                                                             \
        int64_t base = 0, idx[CPU_MAX_RANK], red[CPU_MAX_RANK];                   \
        int nr = 0;                                                               \
        for (int g = k->n_groups - 1; g >= 0; g--) {                              \
            if (k->reduced[g])                                                    \
                continue;                                                         \
            base += (int64_t)(e % (size_t)k->extent[g]) * k->stride[g];           \
            e /= (size_t)k->extent[g];                                            \
        }                                                                         \
        for (int g = 0; g < k->n_groups; g++)                                     \
            if (k->reduced[g]) {                                                  \
                if (k->extent[g] == 0)                                            \
                    return k->op == MR_MAX ? LOWEST : (T)0;                       \
                red[nr++] = g;                                                    \
            }                                                                     \
        T acc = k->op == MR_MAX ? LOWEST : (T)0;                                  \
        memset(idx, 0, sizeof idx);                                               \
        int64_t off = base;                                                       \
        for (;;) {                                                                \
            T v = x[off];                                                         \
            acc = k->op == MR_MAX ? (v > acc ? v : acc) : mr_add_##SUFFIX(acc, v); \
            int r = nr - 1;                                                       \
            for (; r >= 0; r--) {                                                 \
                int g = (int)red[r];                                              \
                if (++idx[r] < k->extent[g]) {                                    \
                    off += k->stride[g];                                          \
                    break;                                                        \
                }                                                                 \
                off -= (idx[r] - 1) * k->stride[g];                               \
                idx[r] = 0;                                                       \
            }                                                                     \
            if (r < 0)                                                            \
                return acc;                                                       \
        }                                                                         \
    }

static inline float mr_add_f32(float a, float b) { return a + b; }
static inline double mr_add_f64(double a, double b) { return a + b; }
/* ReduceMax alone takes i8 and u8 (ONNX's ReduceSum has neither). */
static inline int8_t mr_add_i8(int8_t a, int8_t b) { return (int8_t)((unsigned)a + (unsigned)b); }
static inline uint8_t mr_add_u8(uint8_t a, uint8_t b) { return (uint8_t)(a + b); }
static inline int64_t mr_add_i64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
static inline int32_t mr_add_i32(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

/* The value of an output from its accumulator: Mean (f32 only) divides. */
static float mr_finish_f32(const mr_kernel *k, float v)
{
    if (k->op == MR_MEAN)
        return k->len ? v / (float)k->len : NAN;
    return v;
}
static double mr_finish_f64(const mr_kernel *k, double v)
{
    if (k->op == MR_MEAN)
        return k->len ? v / (double)k->len : NAN;
    return v;
}
static int8_t mr_finish_i8(const mr_kernel *k, int8_t v) { (void)k; return v; }
static uint8_t mr_finish_u8(const mr_kernel *k, uint8_t v) { (void)k; return v; }
/* An integer Mean is the (wrapping) sum divided in integers, truncated
 * toward zero as numpy's mean cast back to the type is; empty gives 0. */
static int64_t mr_finish_i64(const mr_kernel *k, int64_t v)
{
    if (k->op != MR_MEAN)
        return v;
    return k->len ? v / k->len : 0;
}
static int32_t mr_finish_i32(const mr_kernel *k, int32_t v)
{
    return (int32_t)mr_finish_i64(k, v);
}

static float mr_sum_f32(const float *x, size_t n) { return math_sum_f32(x, n); }
/* Plain running sums for the types math_sum_f32 does not cover. */
#define MR_PLAIN_SUM(T, SUFFIX)                                                   \
    static T mr_sum_##SUFFIX(const T *x, size_t n)                                \
    {                                                                             \
        T s = 0;                                                                  \
        for (size_t i = 0; i < n; i++)                                            \
            s = mr_add_##SUFFIX(s, x[i]);                                         \
        return s;                                                                 \
    }
MR_PLAIN_SUM(double, f64)
MR_PLAIN_SUM(int8_t, i8)
MR_PLAIN_SUM(uint8_t, u8)

static int64_t mr_sum_i64(const int64_t *x, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (uint64_t)x[i];
    return (int64_t)s;
}
static int32_t mr_sum_i32(const int32_t *x, size_t n)
{
    uint32_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (uint32_t)x[i];
    return (int32_t)s;
}

MR_WALK(float, f32, -INFINITY)
MR_WALK(int64_t, i64, INT64_MIN)
MR_WALK(int32_t, i32, INT32_MIN)
MR_DEFINE(float, f32, -INFINITY)
MR_DEFINE(int64_t, i64, INT64_MIN)
MR_DEFINE(int32_t, i32, INT32_MIN)
MR_WALK(double, f64, -INFINITY)
MR_WALK(int8_t, i8, INT8_MIN)
MR_WALK(uint8_t, u8, 0)
MR_DEFINE(double, f64, -INFINITY)
MR_DEFINE(int8_t, i8, INT8_MIN)
MR_DEFINE(uint8_t, u8, 0)

static pl_status *mr_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const mr_kernel *k = (const mr_kernel *)kernel;
    void *out;
    pl_output_request req;
    pl_status *st = math_run_output(kernel, args, 0, kernel->out_elements, true, &out, &req);
    if (st != NULL || out == NULL)
        return st;
    mr_call c = {.k = k, .x = math_in(args, 0), .y = out, .add = req == PL_REQ_ADD_TO};
    size_t tasks, per_task;
    if (k->general) {
        tasks = kernel->out_elements;
        per_task = (size_t)k->len;
    } else if (k->inner == 1) {
        tasks = (size_t)k->outer;
        per_task = (size_t)k->len;
    } else {
        tasks = (size_t)(k->outer * k->tiles);
        per_task = (size_t)k->len * MR_TILE;
    }
    size_t grain = per_task >= MATH_GRAIN ? 1 : MATH_GRAIN / (per_task ? per_task : 1);
    static const pl_parallel_fn chunks[MATH_TYPE_COUNT] = {
        [MATH_F32] = mr_chunk_f32, [MATH_F64] = mr_chunk_f64, [MATH_I64] = mr_chunk_i64,
        [MATH_I32] = mr_chunk_i32, [MATH_I8] = mr_chunk_i8,   [MATH_U8] = mr_chunk_u8,
        [MATH_BOOL] = mr_chunk_u8,
    };
    pl_parallel_fn fn = chunks[k->type];
    cpu_host->parallel_for(ctx->host_ctx, tasks, grain, fn, &c);
    return NULL;
}

/* ---- the builder ---------------------------------------------------------- */

/* Reads the axes of NODE into REDUCE (one flag per dim of X, rank R):
 * ReduceSum takes them from an input from opset 13, the others from 18. */
static pl_status *mr_axes(const pl_node_desc *node, mr_op op, int32_t r, bool *reduce)
{
    return math_reduce_axes(node, math_opset(node) >= (op == MR_SUM ? 13 : 18), r, reduce);
}

pl_status *math_build_reduce(pl_module_ctx *ctx, const pl_node_desc *node,
                             pl_kernel **out_kernel)
{
    mr_op op = strcmp(node->op, "ReduceMean") == 0  ? MR_MEAN
               : strcmp(node->op, "ReduceSum") == 0 ? MR_SUM
                                                    : MR_MAX;
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    math_type t = math_type_of(x->dtype);
    /* ReduceMax on bool (opset 20) is the u8 maximum of 0/1: an OR, false
     * when empty. */
    bool int_ok = t == MATH_I64 || t == MATH_I32 ||
                  (op == MR_MAX && (t == MATH_I8 || t == MATH_U8 || t == MATH_BOOL));
    if (!(t == MATH_F32 || t == MATH_F64 || int_ok) ||
        (op == MR_MEAN && (t == MATH_I8 || t == MATH_U8)))
        return math_unsupported_dtype(node->op, x->dtype);
    if (!PL_DTYPE_EQ(o->dtype, x->dtype))
        return math_unsupported_dtype(node->op, o->dtype);
    if (o->ndim < 0)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "output shape not fully known");
    bool reduce[CPU_MAX_RANK];
    pl_status *st = mr_axes(node, op, x->ndim, reduce);
    if (st != NULL)
        return st;

    /* Merge: drop size-1 dims, join neighbours of one kind. */
    int64_t extent[CPU_MAX_RANK];
    bool red[CPU_MAX_RANK];
    int n = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->shape[d] == 1)
            continue;
        if (n > 0 && red[n - 1] == reduce[d]) {
            extent[n - 1] *= x->shape[d];
            continue;
        }
        extent[n] = x->shape[d];
        red[n++] = reduce[d];
    }
    size_t out_elements = 1, len = 1;
    for (int g = 0; g < n; g++) {
        if (red[g])
            len *= (size_t)extent[g];
        else
            out_elements *= (size_t)extent[g];
    }
    if (out_elements != cpu_elements(o->shape, o->ndim)) {
        char tx[128], to[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "output %s does not match reducing input %s",
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to),
                         cpu_dims_text(x->shape, x->ndim, tx, sizeof tx));
    }
    mr_kernel *k = (mr_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->base.run_any = mr_run;
    k->base.n_reads = 1;
    k->base.n_outputs = 1;
    k->base.out_elements = out_elements;
    k->op = op;
    k->type = t;
    k->len = (int64_t)len;
    k->outer = k->inner = 1;
    int n_red = 0, first_red = -1;
    for (int g = 0; g < n; g++)
        if (red[g]) {
            n_red++;
            first_red = first_red < 0 ? g : first_red;
        }
    if (n_red <= 1) {
        for (int g = 0; g < n; g++) {
            if (!red[g] && g < first_red)
                k->outer *= extent[g];
            else if (!red[g])
                k->inner *= extent[g];
        }
        if (n_red == 0) /* nothing reduced: each output reads one input */
            k->inner = 1, k->outer = (int64_t)out_elements;
        k->tiles = (k->inner + MR_TILE - 1) / MR_TILE;
    } else {
        k->general = true;
        k->n_groups = n;
        int64_t step = 1;
        for (int g = n - 1; g >= 0; g--) {
            k->extent[g] = extent[g];
            k->reduced[g] = red[g];
            k->stride[g] = step;
            step *= extent[g];
        }
    }
    *out_kernel = &k->base;
    return NULL;
}
