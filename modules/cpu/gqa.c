/* gqa.c — the cpu module's ai.plinth GroupQueryAttention: ONNX Runtime's
 * com.microsoft GroupQueryAttention, which the core lowers to it
 * (core/opset/src/opset_lower.c), computed as ONNX Runtime 1.20's CPU
 * kernel computes it. The attention of onnxruntime-genai's LLM exports
 * (Llama, Phi-3, Qwen, Mistral, Gemma builds): grouped query heads, a KV
 * cache in and out, per-row lengths, rotary embedding inside.
 *
 * Inputs (f32 but the lengths): query [B, S, N H] (or Q, K and V packed:
 * [B, S, (N + 2 Nkv) H], key and value then absent), key and value [B, S,
 * Nkv H], past_key and past_value [B, Nkv, P, H] (absent: P 0), seqlens_k
 * [B] i32 (each row's total length - 1), total_sequence_length (i32, one
 * value: the longest total), and with do_rotary cos_cache and sin_cache
 * [positions, R / 2] (R the rotated width: the first R of each head's H).
 * Outputs: output [B, S, N H]; present_key and present_value [B, Nkv, L,
 * H], L = max(total, P).
 *
 * Per row b: its total T_b = seqlens_k[b] + 1; a first prompt (S equal to
 * total_sequence_length) has no past, else the past is T_b - S long. The
 * present holds the past's first (T_b - S) entries, then the S new keys
 * (rotated) and values, zeros after. Query s (rotated at position past +
 * s) attends to keys j < min(past + s + 1, T_b), and with a local window
 * W to j >= past + s - W; the scores times scale (1/sqrt(H) when 0),
 * through softcap * tanh(x / softcap) when softcap is set, softmax (with
 * smooth_softmax a zero logit more in the sum), times the values. Head n
 * reads the cache of group n / (N / Nkv). A prompt's padding rows (s >=
 * T_b) attend to the row's T_b keys; ONNX Runtime leaves them unspecified.
 * Rows and heads go over the pool. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fastmath.h"
#include "gemm.h"
#include "index_kernel.h"

static pl_status *gqa_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_gqa[] = {
    {"GroupQueryAttention", gqa_build, 7, 9, 0,
     CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS | CPU_OP_PLINTH_DOMAIN},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Queries from which a head's prompt goes through the GEMM. */
#define GQA_GEMM_MIN_S 8

typedef struct gqa_kernel {
    pl_kernel base;
    int64_t b, s, n, kvn, h, past; /* past: the past inputs' length P */
    int64_t len;                   /* the present's length; -1: max(total, P) at run */
    int64_t rot, positions;        /* rotated width R (0: none), cos_cache rows */
    int64_t window;                /* -1: none */
    bool packed, interleaved, smooth;
    float scale, softcap;
} gqa_kernel;

/* One run. */
typedef struct gqa_job {
    const gqa_kernel *k;
    const float *q, *kn, *vn, *pk_in, *pv_in, *cos, *sin;
    float *out, *pk, *pv;
    int64_t len;           /* the present's length */
    const int64_t *total;  /* per row: its total length */
    const int64_t *past;   /* per row: its past length */
    float *scratch;        /* per (b, n) task: H + len floats */
} gqa_job;

/* Rotates the first R of X's values at position POS: the halves (or,
 * interleaved, the even and odd values) as the real and imaginary parts. */
static void gqa_rotate(const gqa_job *j, int64_t pos, float *x)
{
    int64_t half = j->k->rot / 2;
    bool il = j->k->interleaved;
    const float *c = j->cos + pos * half, *sn = j->sin + pos * half;
    for (int64_t i = 0; i < half; i++) {
        int64_t ia = il ? 2 * i : i, ib = il ? 2 * i + 1 : i + half;
        float a = x[ia], b = x[ib];
        x[ia] = a * c[i] - b * sn[i];
        x[ib] = a * sn[i] + b * c[i];
    }
}

/* Row B's new key (or VALUE) of group G at step S; the packed form keeps
 * them after the queries. */
static const float *gqa_new(const gqa_job *j, bool value, int64_t b, int64_t s, int64_t g)
{
    const gqa_kernel *k = j->k;
    if (k->packed) {
        int64_t w = (k->n + 2 * k->kvn) * k->h;
        return j->q + (b * k->s + s) * w + (k->n + (value ? k->kvn : 0) + g) * k->h;
    }
    return (value ? j->vn : j->kn) + ((b * k->s + s) * k->kvn + g) * k->h;
}

/* Tasks (b, g): the present of row B, group G: its past, the new keys
 * (rotated) and values, zeros after. */
static void gqa_cache(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const gqa_job *j = arg;
    const gqa_kernel *k = j->k;
    size_t h = (size_t)k->h;
    for (size_t t = begin; t < end; t++) {
        int64_t b = (int64_t)t / k->kvn, g = (int64_t)t % k->kvn, past = j->past[b];
        float *pk = j->pk + t * (size_t)j->len * h, *pv = j->pv + t * (size_t)j->len * h;
        if (past > 0) {
            memcpy(pk, j->pk_in + t * (size_t)k->past * h, (size_t)past * h * sizeof(float));
            memcpy(pv, j->pv_in + t * (size_t)k->past * h, (size_t)past * h * sizeof(float));
        }
        for (int64_t s = 0; s < k->s; s++) {
            float *dk = pk + (size_t)(past + s) * h;
            memcpy(dk, gqa_new(j, false, b, s, g), h * sizeof(float));
            memcpy(pv + (size_t)(past + s) * h, gqa_new(j, true, b, s, g), h * sizeof(float));
            if (k->rot > 0)
                gqa_rotate(j, past + s, dk);
        }
        size_t used = (size_t)(past + k->s);
        memset(pk + used * h, 0, ((size_t)j->len - used) * h * sizeof(float));
        memset(pv + used * h, 0, ((size_t)j->len - used) * h * sizeof(float));
    }
}

/* Softmax of the scores P[lo, hi) in place (softcap first), zeros
 * elsewhere in [0, width); smooth softmax counts a logit of zero too. The
 * loops vectorise (cpu_expf, eight partial sums): libm's expf, a call an
 * element, was half a prompt's time. */
static void gqa_softmax(const gqa_kernel *k, float *p, int64_t lo, int64_t hi, int64_t width)
{
    float *x = p + lo;
    int64_t n = hi - lo;
    if (k->softcap > 0.0f) {
        float cap = k->softcap, inv_cap = 1.0f / k->softcap;
        for (int64_t i = 0; i < n; i++)
            x[i] = cap * cpu_tanhf(x[i] * inv_cap);
    }
    float top = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        top = x[i] > top ? x[i] : top;
    if (k->smooth && top < 0.0f)
        top = 0.0f;
    for (int64_t i = 0; i < n; i++)
        x[i] = cpu_expf(x[i] - top);
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            lane[l] += x[i + l];
    float sum = k->smooth ? cpu_expf(-top) : 0.0f;
    for (; i < n; i++)
        sum += x[i];
    for (int l = 0; l < 8; l++)
        sum += lane[l];
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < n; j++)
        x[j] *= inv;
    memset(p, 0, (size_t)lo * sizeof(float));
    memset(p + hi, 0, (size_t)(width - hi) * sizeof(float));
}

/* Row B, head N of a prompt of S queries as two products on the module's
 * GEMM: scores [S, W] = Q K^T (W the keys any query reads), the softmax
 * of each row, output = P V. False when its buffers cannot be had (the
 * caller then goes query by query). */
static bool gqa_head_gemm(const gqa_job *j, int64_t b, int64_t n, const float *ck,
                          const float *cv)
{
    const gqa_kernel *k = j->k;
    int64_t h = k->h, sq = k->s, past = j->past[b], total = j->total[b];
    int64_t width = past + sq < total ? past + sq : total;
    if (width <= 0)
        return false;
    size_t g1 = cpu_gemm_scratch_floats(sq, width, 0, false, false);
    size_t g2 = cpu_gemm_scratch_floats(sq, h, 0, false, false);
    size_t gs = (g1 > g2 ? g1 : g2) + 16, qn = (size_t)(sq * h + 15) / 16 * 16;
    size_t pn = (size_t)(sq * width + 15) / 16 * 16;
    size_t bytes = (gs + qn + pn) * sizeof(float);
    float *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (buf == NULL)
        return false;
    float *gscr = buf, *q = buf + gs, *p = q + qn;
    int64_t qw = (k->packed ? k->n + 2 * k->kvn : k->n) * h;
    for (int64_t s = 0; s < sq; s++) {
        memcpy(q + s * h, j->q + (b * sq + s) * qw + n * h, (size_t)h * sizeof(float));
        if (k->rot > 0)
            gqa_rotate(j, past + s, q + s * h);
    }
    cpu_gemm_operand qa = {.data = q, .ld = h}, kb = {.data = ck, .ld = h, .trans = true};
    cpu_gemm(sq, width, h, k->scale, &qa, &kb, 0.0f, p, width, gscr);
    for (int64_t s = 0; s < sq; s++) {
        int64_t causal = past + s + 1;
        int64_t hi = causal < total ? causal : total;
        int64_t lo = k->window >= 0 && causal - k->window - 1 > 0 ? causal - k->window - 1 : 0;
        if (hi > lo)
            gqa_softmax(k, p + s * width, lo, hi, width);
        else
            memset(p + s * width, 0, (size_t)width * sizeof(float));
    }
    cpu_gemm_operand pa = {.data = p, .ld = width}, vb = {.data = cv, .ld = h};
    cpu_gemm(sq, h, width, 1.0f, &pa, &vb, 0.0f, j->out + (b * sq * k->n + n) * h, k->n * h,
             gscr);
    free(buf);
    return true;
}

/* Tasks (b, n): every query of row B, head N, in the task's H + len
 * floats of the run's scratch. */
static void gqa_heads(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const gqa_job *j = arg;
    const gqa_kernel *k = j->k;
    int64_t h = k->h, group = k->n / k->kvn;
    for (size_t t = begin; t < end; t++) {
        float *q = j->scratch + t * (size_t)(h + j->len), *p = q + h;
        int64_t b = (int64_t)t / k->n, n = (int64_t)t % k->n, past = j->past[b];
        int64_t total = j->total[b], g = n / group;
        const float *ck = j->pk + (size_t)(b * k->kvn + g) * (size_t)j->len * (size_t)h;
        const float *cv = j->pv + (size_t)(b * k->kvn + g) * (size_t)j->len * (size_t)h;
        int64_t qw = (k->packed ? k->n + 2 * k->kvn : k->n) * h;
        /* a prompt's queries together on the GEMM */
        if (k->s >= GQA_GEMM_MIN_S && gqa_head_gemm(j, b, n, ck, cv))
            continue;
        for (int64_t s = 0; s < k->s; s++) {
            memcpy(q, j->q + (b * k->s + s) * qw + n * h, (size_t)h * sizeof(float));
            if (k->rot > 0)
                gqa_rotate(j, past + s, q);
            int64_t causal = past + s + 1;
            int64_t hi = causal < total ? causal : total;
            int64_t lo = k->window >= 0 && causal - k->window - 1 > 0 ? causal - k->window - 1 : 0;
            float *o = j->out + ((b * k->s + s) * k->n + n) * h;
            memset(o, 0, (size_t)h * sizeof(float));
            if (hi <= lo)
                continue;
            for (int64_t i = lo; i < hi; i++)
                p[i] = cpu_dot16(q, ck + i * h, h) * k->scale;
            gqa_softmax(k, p + lo, 0, hi - lo, hi - lo);
            for (int64_t i = lo; i < hi; i++) {
                const float *v = cv + i * h;
                for (int64_t c = 0; c < h; c++)
                    o[c] += p[i] * v[c];
            }
        }
    }
}

/* Input I's first f32, or NULL when absent. */
static const float *gqa_in(const pl_run_args *args, size_t i)
{
    return i < args->n_inputs && args->inputs[i].data != NULL ? cpu_in(args, i) : NULL;
}

static float *gqa_out(const pl_run_args *args, size_t o)
{
    if (o >= args->n_outputs || args->requests[o] == PL_REQ_NULL || args->outputs[o].data == NULL)
        return NULL;
    return (float *)(void *)((char *)args->outputs[o].data + args->outputs[o].byte_offset);
}

static pl_status *gqa_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    const gqa_kernel *k = (const gqa_kernel *)kernel;
    const char *op = kernel->op;
    for (size_t o = 0; o < args->n_outputs; o++)
        if (args->requests[o] != PL_REQ_NULL && args->requests[o] != PL_REQ_WRITE)
            return cpu_error(PL_CODE_UNSUPPORTED, op, "output %zu must be written in full", o);
    gqa_job j = {.k = k, .q = gqa_in(args, 0), .kn = gqa_in(args, 1), .vn = gqa_in(args, 2),
                 .pk_in = gqa_in(args, 3), .pv_in = gqa_in(args, 4), .cos = gqa_in(args, 7),
                 .sin = gqa_in(args, 8), .out = gqa_out(args, 0)};
    const int32_t *seqlens = (const int32_t *)(const void *)gqa_in(args, 5);
    const int32_t *totalp = (const int32_t *)(const void *)gqa_in(args, 6);
    if (j.q == NULL || seqlens == NULL || totalp == NULL || j.out == NULL ||
        (!k->packed && (j.kn == NULL || j.vn == NULL)) ||
        (k->past > 0 && (j.pk_in == NULL || j.pv_in == NULL)) ||
        (k->rot > 0 && (j.cos == NULL || j.sin == NULL)))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "an input or the output has no data");
    int64_t total = *totalp;
    j.len = k->len >= 0 ? k->len : (total > k->past ? total : k->past);
    if (total < 1 || total > j.len)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "total_sequence_length %lld: the present holds %lld (made for "
                         "max(total_sequence_length, past length) when the session was made)",
                         (long long)total, (long long)j.len);
    /* the rows' lengths, the tasks' scratch and, for a present not asked
     * for, a cache of its own */
    j.pk = gqa_out(args, 1);
    j.pv = gqa_out(args, 2);
    size_t cache = (size_t)(k->b * k->kvn) * (size_t)j.len * (size_t)k->h;
    size_t work = (size_t)(k->b * k->n) * (size_t)(k->h + j.len);
    size_t own = (j.pk == NULL ? cache : 0) + (j.pv == NULL ? cache : 0);
    int64_t *rows = malloc(sizeof(int64_t) * 2 * (size_t)k->b);
    float *buf = malloc(sizeof(float) * (work + own));
    if (rows == NULL || buf == NULL) {
        free(rows);
        free(buf);
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for %zu floats of scratch",
                         work + own);
    }
    j.scratch = buf;
    if (j.pk == NULL)
        j.pk = buf + work;
    if (j.pv == NULL)
        j.pv = buf + work + (own > cache ? cache : 0);
    j.total = rows;
    j.past = rows + k->b;
    bool first = k->s == total;
    pl_status *st = NULL;
    for (int64_t b = 0; b < k->b && st == NULL; b++) {
        int64_t t = (int64_t)seqlens[b] + 1, past = first ? 0 : t - k->s;
        rows[b] = t;
        rows[k->b + b] = past;
        if (t < 1 || t > total || past < 0 || past > k->past || past + k->s > j.len)
            st = cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                           "row %lld: seqlens_k %d does not fit total_sequence_length %lld, "
                           "%lld new tokens and a past of %lld",
                           (long long)b, seqlens[b], (long long)total, (long long)k->s,
                           (long long)k->past);
        else if (k->rot > 0 && past + k->s > k->positions)
            st = cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                           "row %lld reaches position %lld; cos_cache has %lld", (long long)b,
                           (long long)(past + k->s - 1), (long long)k->positions);
    }
    if (st == NULL) {
        cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->b * k->kvn), 1, gqa_cache, &j);
        cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->b * k->n), 1, gqa_heads, &j);
    }
    free(rows);
    free(buf);
    return st;
}

static pl_status *gqa_build(pl_module_ctx *ctx, const pl_node_desc *node,
                            pl_kernel **out_kernel)
{
    const char *op = node->op;
    const pl_tensor *in = node->inputs;
    int64_t n, kvn, window, rotary, inter, smooth;
    double scale, softcap;
    SHP_TRY(cpu_attr_int(node, "num_heads", 0, &n));
    SHP_TRY(cpu_attr_int(node, "kv_num_heads", 0, &kvn));
    SHP_TRY(cpu_attr_int(node, "local_window_size", -1, &window));
    SHP_TRY(cpu_attr_int(node, "do_rotary", 0, &rotary));
    SHP_TRY(cpu_attr_int(node, "rotary_interleaved", 0, &inter));
    SHP_TRY(cpu_attr_int(node, "smooth_softmax", 0, &smooth));
    SHP_TRY(cpu_attr_float(node, "scale", 0.0, &scale));
    SHP_TRY(cpu_attr_float(node, "softcap", 0.0, &softcap));
    if (n <= 0 || kvn <= 0 || n % kvn != 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "num_heads %lld must be a positive multiple of kv_num_heads %lld",
                         (long long)n, (long long)kvn);
    bool packed = !shp_input_present(node, 1);
    bool has_past = node->n_inputs > 3 && shp_input_present(node, 3);
    bool f32 = PL_DTYPE_EQ(in[0].dtype, PL_DTYPE_F32) &&
               PL_DTYPE_EQ(node->outputs[0].dtype, PL_DTYPE_F32) &&
               PL_DTYPE_EQ(in[5].dtype, PL_DTYPE_I32) && PL_DTYPE_EQ(in[6].dtype, PL_DTYPE_I32);
    for (size_t i = 1; i < node->n_inputs && i < 9; i++)
        if (i != 5 && i != 6 && shp_input_present(node, i))
            f32 = f32 && PL_DTYPE_EQ(in[i].dtype, PL_DTYPE_F32);
    if (!f32)
        return cpu_error(PL_CODE_UNSUPPORTED, op,
                         "f32 query, key, value, caches and output, i32 seqlens_k and "
                         "total_sequence_length");
    if (packed && shp_input_present(node, 2))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "value without key");
    if (!cpu_shape_known(&in[0]) || in[0].ndim != 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "query must be [B, S, D], known");
    int64_t b = in[0].shape[0], s = in[0].shape[1], w = in[0].shape[2];
    int64_t heads = packed ? n + 2 * kvn : n;
    if (w % heads != 0 || w == 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op, "query's width %lld is no multiple of %lld",
                         (long long)w, (long long)heads);
    int64_t h = w / heads, past = 0;
    bool ok = true;
    if (!packed)
        for (size_t i = 1; i < 3; i++)
            ok = ok && in[i].ndim == 3 && in[i].shape[0] == b && in[i].shape[1] == s &&
                 in[i].shape[2] == kvn * h;
    if (has_past) {
        past = in[3].ndim == 4 ? in[3].shape[2] : -1;
        for (size_t i = 3; i < 5; i++)
            ok = ok && shp_input_present(node, i) && in[i].ndim == 4 && in[i].shape[0] == b &&
                 in[i].shape[1] == kvn && in[i].shape[2] == past && in[i].shape[3] == h;
    }
    ok = ok && cpu_elements(in[5].shape, in[5].ndim) == (size_t)b &&
         cpu_elements(in[6].shape, in[6].ndim) == 1;
    const pl_tensor *o = node->outputs;
    ok = ok && o[0].ndim == 3 && o[0].shape[0] == b && o[0].shape[1] == s &&
         o[0].shape[2] == n * h;
    int64_t len = -1;
    if (node->n_outputs > 1 && shp_output_present(node, 1)) {
        len = o[1].ndim == 4 ? o[1].shape[2] : -1;
        for (size_t i = 1; i < 3 && i < node->n_outputs; i++)
            ok = ok && shp_output_present(node, i) && o[i].ndim == 4 && o[i].shape[0] == b &&
                 o[i].shape[1] == kvn && o[i].shape[2] == len && o[i].shape[3] == h;
        ok = ok && len >= past;
    }
    if (!ok)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                         "key and value [B, S, %lld], past_key and past_value [B, %lld, P, %lld], "
                         "seqlens_k [B], one total_sequence_length and the outputs do not fit "
                         "query [%lld, %lld, %lld]",
                         (long long)(kvn * h), (long long)kvn, (long long)h, (long long)b,
                         (long long)s, (long long)w);
    int64_t rot = 0, positions = 0;
    if (rotary) {
        if (node->n_inputs < 9 || !shp_input_present(node, 7) || !shp_input_present(node, 8) ||
            in[7].ndim != 2 || in[8].ndim != 2 || in[7].shape[0] != in[8].shape[0] ||
            in[7].shape[1] != in[8].shape[1] || in[7].shape[1] * 2 > h || in[7].shape[1] < 1)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, op,
                             "do_rotary needs cos_cache and sin_cache [positions, R / 2], R at "
                             "most the head size %lld",
                             (long long)h);
        rot = in[7].shape[1] * 2;
        positions = in[7].shape[0];
    }
    gqa_kernel *k = (gqa_kernel *)cpu_kernel_alloc(ctx, sizeof *k, "GroupQueryAttention", NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, op, "out of memory for the kernel");
    k->base.run_any = gqa_run;
    k->base.n_reads = node->n_inputs;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = (size_t)(b * s * n * h);
    k->b = b;
    k->s = s;
    k->n = n;
    k->kvn = kvn;
    k->h = h;
    k->past = past;
    k->len = len;
    k->rot = rot;
    k->positions = positions;
    k->window = window;
    k->packed = packed;
    k->interleaved = inter != 0;
    k->smooth = smooth != 0;
    k->scale = scale != 0.0 ? (float)scale : 1.0f / sqrtf((float)h);
    k->softcap = (float)softcap;
    *out_kernel = &k->base;
    return NULL;
}
