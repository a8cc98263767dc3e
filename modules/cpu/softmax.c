/* softmax.c — the cpu module's Softmax kernel.
 *
 * The input is seen as [outer, L, inner], L being the reduced extent: from
 * opset 13 the one dim `axis` (default -1), before it every dim from `axis`
 * on (default 1) with inner = 1. Each slice is max-shifted for stability.
 * When inner is 1 the rows are contiguous and each is three simple loops;
 * otherwise a task handles a tile of up to CPU_SOFTMAX_TILE inner positions
 * at once, so that every pass reads memory in order. The passes read an
 * element before writing it, so an output aliasing the input (in place)
 * is safe; PL_REQ_ADD_TO recomputes the exponentials in its last pass
 * instead of storing them in the output. On f64 each column is computed
 * in double by cpu_softmax_cols_f64, which LogSoftmax shares. */
#include <math.h>

#include "cpu_kernel.h"
#include "fastmath.h"
#include "fastmath_avx2.h"

#define CPU_SOFTMAX_TILE 64
/* Elements per parallel_for chunk, at least. */
#define CPU_SOFTMAX_GRAIN_ELEMENTS 16384

typedef struct cpu_softmax_kernel {
    pl_kernel base;
    int64_t outer, len, inner;
    int64_t tiles;          /* tiles of the inner extent per outer index */
    bool f64;               /* input and output are f64 */
    bool avx2;              /* f32 rows (inner 1) on cpu_softmax_row_avx2 */
    bool avx512;            /* ... on cpu_softmax_row_avx512 */
} cpu_softmax_kernel;

typedef struct cpu_softmax_call {
    const cpu_softmax_kernel *k;
    const float *x;
    float *y;
    int add;
} cpu_softmax_call;

/* Sums X[0..len) with 8 partial sums, so the loop vectorises without
 * reassociation flags (the order of additions is fixed, so results are
 * reproducible). */
static float cpu_sum8(const float *x, int64_t len)
{
    float part[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
        for (int k = 0; k < 8; k++)
            part[k] += x[i + k];
    float sum = ((part[0] + part[4]) + (part[1] + part[5])) + ((part[2] + part[6]) + (part[3] + part[7]));
    for (; i < len; i++)
        sum += x[i];
    return sum;
}

/* The maximum of X[0..len) (NaN-unaware, like the plain loop), 8 lanes. */
static float cpu_max8(const float *x, int64_t len)
{
    float part[8];
    int64_t i = 0;
    if (len >= 8) {
        for (int k = 0; k < 8; k++)
            part[k] = x[k];
        for (i = 8; i + 8 <= len; i += 8)
            for (int k = 0; k < 8; k++)
                part[k] = x[i + k] > part[k] ? x[i + k] : part[k];
    }
    float max = len >= 8 ? part[0] : x[0];
    for (int k = 1; len >= 8 && k < 8; k++)
        max = part[k] > max ? part[k] : max;
    for (; i < len; i++)
        max = x[i] > max ? x[i] : max;
    return max;
}

static void cpu_softmax_row(const float *x, float *y, int64_t len, int add)
{
    const float max = cpu_max8(x, len);
    if (add) {
        float sum = 0.0f;
        for (int64_t i = 0; i < len; i++)
            sum += cpu_expf(x[i] - max);
        const float inv = 1.0f / sum;
        for (int64_t i = 0; i < len; i++)
            y[i] += cpu_expf(x[i] - max) * inv;
        return;
    }
    for (int64_t i = 0; i < len; i++)
        y[i] = cpu_expf(x[i] - max);
    const float inv = 1.0f / cpu_sum8(y, len);
    for (int64_t i = 0; i < len; i++)
        y[i] *= inv;
}

#ifdef CPU_AVX2
/* cpu_softmax_row in eight lanes with FMA (cpu_exp8): the max, then e^(x -
 * max) stored and summed (eight partial sums, as cpu_sum8), then the
 * scale; the last len % 8 elements on scalar code. 0.17 ms on one thread
 * for [128, 256] on the four-lane loops, 3.5x what oneDNN takes. */
__attribute__((target("avx2,fma"))) static void cpu_softmax_row_avx2(const float *x, float *y,
                                                                    int64_t len, int add)
{
    int64_t i = 0;
    float max;
    if (len >= 8) {
        __m256 m = _mm256_loadu_ps(x);
        for (i = 8; i + 8 <= len; i += 8)
            m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
        float lanes[8];
        _mm256_storeu_ps(lanes, m);
        max = lanes[0];
        for (int k = 1; k < 8; k++)
            max = lanes[k] > max ? lanes[k] : max;
    } else {
        max = x[0];
    }
    for (; i < len; i++)
        max = x[i] > max ? x[i] : max;
    const __m256 vmax = _mm256_set1_ps(max);
    __m256 vsum = _mm256_setzero_ps();
    float tail_sum = 0.0f;
    for (i = 0; i + 8 <= len; i += 8) {
        __m256 e = cpu_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax));
        vsum = _mm256_add_ps(vsum, e);
        if (!add)
            _mm256_storeu_ps(y + i, e);
    }
    for (int64_t j = i; j < len; j++) {
        float e = cpu_expf(x[j] - max);
        tail_sum += e;
        if (!add)
            y[j] = e;
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vsum);
    float sum = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7])) + tail_sum;
    const float inv = 1.0f / sum;
    const __m256 vinv = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= len; i += 8) {
        __m256 v = add ? _mm256_mul_ps(cpu_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax)), vinv)
                       : _mm256_mul_ps(_mm256_loadu_ps(y + i), vinv);
        if (add)
            v = _mm256_add_ps(v, _mm256_loadu_ps(y + i));
        _mm256_storeu_ps(y + i, v);
    }
    for (; i < len; i++)
        y[i] = add ? y[i] + cpu_expf(x[i] - max) * inv : y[i] * inv;
}
#endif

#ifdef CPU_AVX2
/* cpu_softmax_row_avx2 in sixteen AVX-512 lanes (cpu_exp16), the tail
 * under a mask: 2x the AVX2 loop on long rows (8 x 1500 rows of 1500 on
 * two threads: 9.3 ms, compute-bound, against ONNX Runtime's 4.4). */
__attribute__((target("avx512f,fma"))) static void cpu_softmax_row_avx512(const float *x,
                                                                         float *y, int64_t len,
                                                                         int add)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m = ninf;
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 k = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1u);
        m = _mm512_max_ps(m, _mm512_mask_loadu_ps(ninf, k, x + i));
    }
    const __m512 vmax = _mm512_set1_ps(_mm512_reduce_max_ps(m));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 k = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1u);
        __m512 e = _mm512_maskz_mov_ps(
            k, cpu_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vmax)));
        sum = _mm512_add_ps(sum, e);
        if (!add)
            _mm512_mask_storeu_ps(y + i, k, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
    for (int64_t i = 0; i < len; i += 16) {
        __mmask16 k = len - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (len - i)) - 1u);
        __m512 v = add ? _mm512_add_ps(_mm512_maskz_loadu_ps(k, y + i),
                                       _mm512_mul_ps(cpu_exp16(_mm512_sub_ps(
                                                         _mm512_maskz_loadu_ps(k, x + i), vmax)),
                                                     inv))
                       : _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), inv);
        _mm512_mask_storeu_ps(y + i, k, v);
    }
}

#endif

/* W (<= CPU_SOFTMAX_TILE) neighbouring inner positions of one [L, inner]
 * slice, X and Y pointing at the first of them. */
static void cpu_softmax_tile(const float *x, float *y, int64_t len, int64_t inner, int w, int add)
{
    float max[CPU_SOFTMAX_TILE], sum[CPU_SOFTMAX_TILE];
    for (int t = 0; t < w; t++) {
        max[t] = x[t];
        sum[t] = 0.0f;
    }
    for (int64_t i = 1; i < len; i++) {
        const float *xr = x + i * inner;
        for (int t = 0; t < w; t++)
            max[t] = xr[t] > max[t] ? xr[t] : max[t];
    }
    for (int64_t i = 0; i < len; i++) {
        const float *xr = x + i * inner;
        float *yr = y + i * inner;
        if (add) {
            for (int t = 0; t < w; t++)
                sum[t] += cpu_expf(xr[t] - max[t]);
        } else {
            for (int t = 0; t < w; t++) {
                float e = cpu_expf(xr[t] - max[t]);
                yr[t] = e;
                sum[t] += e;
            }
        }
    }
    for (int t = 0; t < w; t++)
        sum[t] = 1.0f / sum[t];
    for (int64_t i = 0; i < len; i++) {
        const float *xr = x + i * inner;
        float *yr = y + i * inner;
        if (add)
            for (int t = 0; t < w; t++)
                yr[t] += cpu_expf(xr[t] - max[t]) * sum[t];
        else
            for (int t = 0; t < w; t++)
                yr[t] *= sum[t];
    }
}

void cpu_softmax_cols_f64(const double *x, double *y, int64_t len, int64_t inner, int w,
                          bool take_log, int add)
{
    for (int t = 0; t < w; t++) {
        const double *xc = x + t;
        double *yc = y + t;
        double max = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < len; i++)
            max = xc[i * inner] > max || isnan(xc[i * inner]) ? xc[i * inner] : max;
        for (int64_t i = 0; i < len; i++)
            sum += exp(xc[i * inner] - max);
        const double shift = max + log(sum), scale = 1.0 / sum;
        for (int64_t i = 0; i < len; i++) {
            double v = take_log ? xc[i * inner] - shift : exp(xc[i * inner] - max) * scale;
            yc[i * inner] = add ? yc[i * inner] + v : v;
        }
    }
}

/* Tasks [begin, end): task t is tile t % tiles of outer index t / tiles. */
static void cpu_softmax_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const cpu_softmax_call *c = arg;
    const cpu_softmax_kernel *k = c->k;
    for (size_t t = begin; t < end; t++) {
        int64_t o = (int64_t)t / k->tiles, j0 = ((int64_t)t % k->tiles) * CPU_SOFTMAX_TILE;
        int64_t base = o * k->len * k->inner + j0;
        if (k->f64) {
            int64_t w = k->inner - j0 < CPU_SOFTMAX_TILE ? k->inner - j0 : CPU_SOFTMAX_TILE;
            cpu_softmax_cols_f64((const double *)(const void *)c->x + base,
                                 (double *)(void *)c->y + base, k->len, k->inner, (int)w, false,
                                 c->add);
        } else if (k->inner == 1) {
#ifdef CPU_AVX2
            if (k->avx512) {
                cpu_softmax_row_avx512(c->x + base, c->y + base, k->len, c->add);
                continue;
            }
            if (k->avx2) {
                cpu_softmax_row_avx2(c->x + base, c->y + base, k->len, c->add);
                continue;
            }
#endif
            cpu_softmax_row(c->x + base, c->y + base, k->len, c->add);
        } else {
            int64_t w = k->inner - j0 < CPU_SOFTMAX_TILE ? k->inner - j0 : CPU_SOFTMAX_TILE;
            cpu_softmax_tile(c->x + base, c->y + base, k->len, k->inner, (int)w, c->add);
        }
    }
}

static pl_status *cpu_softmax_run(pl_module_ctx *ctx, const pl_kernel *kernel,
                                  const pl_run_args *args, float *out, pl_output_request req)
{
    const cpu_softmax_kernel *k = (const cpu_softmax_kernel *)kernel;
    cpu_softmax_call c = {.k = k, .x = cpu_in(args, 0), .y = out, .add = req == PL_REQ_ADD_TO};
    size_t tasks = (size_t)(k->outer * k->tiles);
    int64_t per_task = k->len * (k->inner < CPU_SOFTMAX_TILE ? k->inner : CPU_SOFTMAX_TILE);
    size_t grain = per_task >= CPU_SOFTMAX_GRAIN_ELEMENTS
                       ? 1
                       : (size_t)(CPU_SOFTMAX_GRAIN_ELEMENTS / per_task);
    cpu_host->parallel_for(ctx->host_ctx, tasks, grain, cpu_softmax_chunk, &c);
    return NULL;
}

pl_status *cpu_build_softmax(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    const pl_tensor *x = &node->inputs[0], *o = &node->outputs[0];
    int64_t opset = PL_ABI_HAS_FIELD(pl_node_desc, node, opset_version) && node->opset_version > 0
                        ? node->opset_version
                        : 13;
    int64_t axis;
    pl_status *st = cpu_attr_int(node, "axis", opset >= 13 ? -1 : 1, &axis);
    if (st != NULL)
        return st;
    int32_t r = x->ndim;
    char tx[128], to[128];
    if (r != o->ndim || cpu_elements(x->shape, r) != cpu_elements(o->shape, o->ndim))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s and output %s differ",
                         cpu_dims_text(x->shape, r, tx, sizeof tx),
                         cpu_dims_text(o->shape, o->ndim, to, sizeof to));
    /* A scalar is a softmax over one element. */
    int64_t norm = axis < 0 ? axis + (r > 0 ? r : 1) : axis;
    if (norm < 0 || norm >= (r > 0 ? r : 1))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "axis %lld out of range for rank %d",
                         (long long)axis, (int)r);
    cpu_softmax_kernel *k = (cpu_softmax_kernel *)cpu_kernel_alloc(ctx, sizeof *k, node->op,
                                                                   cpu_softmax_run);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    k->outer = 1;
    k->len = 1;
    k->inner = 1;
    for (int32_t d = 0; d < r; d++) {
        if (d < norm)
            k->outer *= x->shape[d];
        else if (d == norm || opset < 13)
            k->len *= x->shape[d];
        else
            k->inner *= x->shape[d];
    }
    k->tiles = (k->inner + CPU_SOFTMAX_TILE - 1) / CPU_SOFTMAX_TILE;
    k->f64 = PL_DTYPE_EQ(x->dtype, PL_DTYPE_F64);
#ifdef CPU_AVX2
    k->avx2 = !k->f64 && cpu_has_avx2_fma();
    k->avx512 = k->avx2 && k->len >= 16 && cpu_has_isa(CPU_ISA_AVX512_BW);
#endif
    k->base.n_reads = 1;
    k->base.out_elements = cpu_elements(o->shape, o->ndim);
    k->base.inplace_ok = true;
    /* A zero-size slice leaves the output empty (out_elements 0). */
    if (k->len == 0 || k->inner == 0)
        k->tiles = 0;
    *out_kernel = &k->base;
    return NULL;
}
