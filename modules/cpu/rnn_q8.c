/* rnn_q8.c — com.microsoft DynamicQuantizeLSTM, what ONNX Runtime's
 * quantize_dynamic makes of an LSTM: W ([dirs, input, 4H]) and R ([dirs,
 * H, 4H]) in int8 or uint8 with a scale and zero point per direction or
 * per column, run in 8-bit integers as ONNX Runtime runs it:
 *   - the projection: all of X quantized to u8 at once (its range with 0
 *     in it over 255 steps, the zero point rounded half to even; scale 1
 *     when the range is empty), times each direction's W on the integer
 *     GEMM (igemm.h), scaled back by x_scale * w_scale per column, plus
 *     Wb + Rb;
 *   - the recurrence: a task per direction runs every step: the hidden
 *     state of each batch row quantized to u8 the same way, times R on the
 *     integer GEMM, scaled by h_scale * r_scale, then the float LSTM cell
 *     (rnn.c's, with its activations, clip, peepholes, input_forget and
 *     sequence_lens). ONNX Runtime quantizes together the rows one of its
 *     threads takes (all of them with one thread, or up to 4 rows of more
 *     than 256 units; uni_directional_lstm.cc), so its results depend on
 *     its thread count; a row alone is what it computes for one row, and
 *     with a thread per row. Results agree with it to float rounding
 *     then, and otherwise differ by about a quantization step.
 * In int8 R is a quarter of the float LSTM's bytes: a 512-wide layer's is
 * 1 MB a direction, which stays in its core's L2 across the steps, where
 * the float one (4 MB) streams from memory every step. The core keeps the
 * node as written because the module registers its schema (cpu.c); a
 * runtime without the cpu module lowers it to the float LSTM of the
 * dequantized weights instead (opset_lower.c).
 *
 * W, R, their scales and zero points must be constants (quantize_dynamic
 * writes initializers): they are packed once, at get_kernel time. */
#include <math.h>
#include <string.h>

#include "igemm.h"
#include "math_internal.h"
#include "nn_window.h"
#include "requant.h"
#include "rnn.h"

enum { Q8_W_SCALE = 8, Q8_W_ZP = 9, Q8_R_SCALE = 10, Q8_R_ZP = 11 };

/* Columns of X (rows of X as the GEMM's B) per projection task, at most. */
#define Q8_PROJ_COLS 256

typedef struct q8_kernel {
    rnn_kernel r;              /* sizes, attributes, activations, workspace size */
    /* The packed weights: per direction W^T ([gh, input]) and R^T ([gh,
     * hidden]), and their scales ([dirs * gh] each): in the kernel's block
     * when W, R and their scales and zero points are constants, else made
     * in the workspace every run (at ws_pack, laid out as q8_layout says). */
    const void *pw[2], *pr[2];
    const void *pv[2]; /* R^T for cpu_igemv (batch 1 on AVX2), else NULL */
    const float *w_scale, *r_scale;
    bool per_run;
    size_t ws_pack;
    /* how the scales read: signed weights, one per column (else per
     * direction), zero points given */
    bool w_signed, r_signed, w_cols, r_cols, w_zp, r_zp;
    /* The projection: tasks of (direction, prow rows of W^T, pcols rows of
     * X); each worker has a slice of p_slice bytes: the i32 block, then the
     * GEMM's scratch at p_scratch. */
    int64_t prow, prow_tasks, pcols, pcol_tasks, ptasks;
    size_t p_slice, p_scratch;
    /* The workspace: projection [seq*batch, dirs*gh] f32, bias, X in u8,
     * the workers' slices, then a task area per direction. */
    size_t ws_bias, ws_xq, ws_slices, ws_tasks;
    size_t task_bytes, t_h, t_c, t_g, t_hq, t_tmp, t_acc, t_hs, t_hz, t_scratch;
} q8_kernel;

/* ---- dynamic quantization ---------------------------------------------------- */

/* The u8 scale and zero point ONNX Runtime's recurrent layers give N
 * floats: [min(0, x), max(0, x)] over 255 steps (scale 1 when that range
 * is empty), the zero point 0 - min / scale clamped to [0, 255] and rounded
 * half to even. NaNs are skipped. */
static void q8_params(const float *x, size_t n, float *out_scale, float *out_zp)
{
    float lo = 0.0f, hi = 0.0f;
    for (size_t i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float zp = 0.0f - lo / scale;
    zp = zp > 0.0f ? zp : 0.0f;
    zp = zp < 255.0f ? zp : 255.0f;
    *out_scale = scale;
    *out_zp = isfinite(scale) && scale > 0.0f ? nearbyintf(zp) : 0.0f;
}

/* ---- packing ---------------------------------------------------------------- */

/* The bytes of N elements rounded up to a cache line into *off's slot of
 * *TOTAL (rnn_place counts floats: a quarter of them, rounded up). */
static size_t q8_max(size_t a, size_t b)
{
    return a > b ? a : b;
}

static bool q8_place(size_t *total, size_t bytes, size_t *off)
{
    return rnn_place(total, (bytes + sizeof(float) - 1) / sizeof(float), off);
}

/* Weight I (W or R) of NODE: 8-bit of DIMS; whether it is signed. */
static pl_status *q8_weight(const pl_node_desc *node, size_t i, const int64_t *dims,
                            bool *out_signed)
{
    const char *name = i == RNN_W ? "W" : "R";
    const pl_tensor *t = &node->inputs[i];
    if (!PL_DTYPE_EQ(t->dtype, PL_DTYPE_I8) && !PL_DTYPE_EQ(t->dtype, PL_DTYPE_U8))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: i8, u8)",
                         name, math_dtype_name(t->dtype));
    bool ok = t->ndim == 3;
    for (int d = 0; ok && d < 3; d++)
        ok = t->shape[d] == dims[d];
    if (!ok) {
        char have[128], want[128];
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s is %s, expected %s", name,
                         cpu_dims_text(t->shape, t->ndim, have, sizeof have),
                         cpu_dims_text(dims, 3, want, sizeof want));
    }
    *out_signed = PL_DTYPE_EQ(t->dtype, PL_DTYPE_I8);
    return NULL;
}

/* Checks the scale (input I) and zero point (input I + 1, optional) of a
 * weight (IS_SIGNED): f32 of [dirs] or [dirs, gh], the zero point of the
 * scale's shape and the weight's type. */
static pl_status *q8_check_scale(const pl_node_desc *node, size_t i, bool is_signed,
                                 int64_t dirs, int64_t gh, bool *per_col, bool *has_zp)
{
    const char *what = i == Q8_W_SCALE ? "W" : "R";
    if (i >= node->n_inputs || !math_input_present(node, i))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s's scale is absent", what);
    const pl_tensor *st = &node->inputs[i];
    *per_col = st->ndim == 2 && st->shape[0] == dirs && st->shape[1] == gh;
    bool per_dir = st->ndim == 1 && st->shape[0] == dirs;
    if (!PL_DTYPE_EQ(st->dtype, PL_DTYPE_F32) || !(*per_col || per_dir))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "%s's scale must be f32 of [num_directions] or [num_directions, "
                         "4*hidden_size]",
                         what);
    *has_zp = i + 1 < node->n_inputs && math_input_present(node, i + 1);
    if (!*has_zp)
        return NULL;
    const pl_tensor *zt = &node->inputs[i + 1];
    bool same = zt->ndim == st->ndim;
    for (int a = 0; same && a < st->ndim; a++)
        same = zt->shape[a] == st->shape[a];
    pl_dtype want = is_signed ? PL_DTYPE_I8 : PL_DTYPE_U8;
    if (!same || !PL_DTYPE_EQ(zt->dtype, want))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "%s's zero point must be %s of its scale's shape", what,
                         math_dtype_name(want));
    return NULL;
}

/* Where one set of packings lies from its base (the kernel's block after
 * its header, or a run's workspace at ws_pack): the scales, the zero
 * points q8_pack spreads per row (i32, dirs * gh each), then per direction
 * W and R packed. */
typedef struct q8_layout {
    size_t w_scale, r_scale, zps, pw[2], pr[2], pv[2], bytes;
    bool gemv; /* pv holds R^T for cpu_igemv */
} q8_layout;

static bool q8_layout_of(const rnn_kernel *t, q8_layout *l)
{
    const size_t n = (size_t)(t->dirs * t->gh);
    const size_t pw = cpu_igemm_packed_a_bytes(t->gh, t->input),
                 pr = cpu_igemm_packed_a_bytes(t->gh, t->hidden);
    memset(l, 0, sizeof *l);
    size_t at = 0;
    bool ok = rnn_place(&at, n, &l->w_scale) && rnn_place(&at, n, &l->r_scale) &&
              rnn_place(&at, 2 * n, &l->zps);
    /* at batch 1 the recurrence is a matrix-vector product: on AVX2 R^T
     * in bytes as well (cpu_igemv; the GEMM's i16 panels are twice its
     * size, re-read from L3 every step) */
    const size_t pv = t->batch == 1 ? cpu_igemv_packed_bytes(t->gh, t->hidden) : 0;
    l->gemv = pv > 0;
    for (int64_t i = 0; ok && i < t->dirs; i++)
        ok = q8_place(&at, pw, &l->pw[i]) && q8_place(&at, pr, &l->pr[i]) &&
             (pv == 0 || q8_place(&at, pv, &l->pv[i]));
    l->bytes = at;
    return ok;
}

/* One weight's scales and zero points spread to a value per row of its
 * packing (DIRS * GH), from SD and ZD (NULL: zeros). */
static void q8_spread(const void *sd, const void *zd, bool is_signed, bool per_col, int64_t dirs,
                      int64_t gh, float *scale, int32_t *zp)
{
    for (int64_t j = 0; j < dirs * gh; j++) {
        size_t at = per_col ? (size_t)j : (size_t)(j / gh);
        scale[j] = ((const float *)sd)[at];
        zp[j] = zd == NULL ? 0
                : is_signed ? (int32_t)((const int8_t *)zd)[at]
                            : (int32_t)((const uint8_t *)zd)[at];
    }
}

/* Packs W (WD) and R (RD) with their scales (WS, RS) and zero points (WZ,
 * RZ; NULL when absent) at BASE laid out as L; the packings' pointers into
 * PW, PR. */
static void q8_pack(const q8_kernel *k, const q8_layout *l, char *base, const void *wd,
                    const void *rd, const void *ws, const void *wz, const void *rs,
                    const void *rz, const void **pw, const void **pr, const void **pv)
{
    const rnn_kernel *t = &k->r;
    const int64_t d = t->dirs, gh = t->gh, in = t->input, hs = t->hidden;
    int32_t *zps = (int32_t *)(void *)(base + l->zps);
    q8_spread(ws, wz, k->w_signed, k->w_cols, d, gh, (float *)(void *)(base + l->w_scale), zps);
    q8_spread(rs, rz, k->r_signed, k->r_cols, d, gh, (float *)(void *)(base + l->r_scale),
              zps + d * gh);
    for (int64_t i = 0; i < d; i++) {
        /* W^T and R^T as the GEMM's A: element (j, s) is W[i][s][j] */
        cpu_igemm_q8 qw = {.data = (const char *)wd + i * in * gh, .ld = gh, .trans = true,
                           .is_signed = k->w_signed};
        cpu_igemm_q8 qr = {.data = (const char *)rd + i * hs * gh, .ld = gh, .trans = true,
                           .is_signed = k->r_signed};
        if (in > 0)
            cpu_igemm_pack_a(gh, in, &qw, zps + i * gh, true, base + l->pw[i]);
        cpu_igemm_pack_a(gh, hs, &qr, zps + (d + i) * gh, true, base + l->pr[i]);
        pw[i] = base + l->pw[i];
        pr[i] = base + l->pr[i];
        pv[i] = NULL;
        if (l->gemv) {
            cpu_igemv_pack(gh, hs, &qr, zps + (d + i) * gh, true, base + l->pv[i]);
            pv[i] = base + l->pv[i];
        }
    }
}

/* ---- a run ---------------------------------------------------------------- */

typedef struct q8_call {
    const q8_kernel *k;
    const float *x, *p, *h0, *c0, *bias;
    const int32_t *lens;
    float *y, *yh, *yc;
    float *xw;                 /* [seq*batch, dirs*gh] */
    const uint8_t *xq;         /* X in u8, [seq*batch, input] */
    const void *pw[2], *pr[2]; /* the kernel's or this run's packings */
    const void *pv[2];
    const float *w_scale, *r_scale;
    float x_scale;
    int32_t x_zp;
    char *ws;
} q8_call;

/* Projection task T: rows [j0, j0+rows) of direction D's W^T times rows
 * [m0, m0+cols) of X, into those columns and rows of XW. */
static void q8_proj_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const q8_call *c = arg;
    const q8_kernel *k = c->k;
    const rnn_kernel *r = &k->r;
    const int64_t m = r->seq * r->batch, n = r->dirs * r->gh;
    char *slice = c->ws + k->ws_slices + (size_t)worker * k->p_slice;
    int32_t *acc = (int32_t *)(void *)slice;
    void *scratch = slice + k->p_scratch;
    for (size_t t = begin; t < end; t++) {
        int64_t d = (int64_t)t / (k->prow_tasks * k->pcol_tasks);
        int64_t rest = (int64_t)t % (k->prow_tasks * k->pcol_tasks);
        int64_t j0 = rest / k->pcol_tasks * k->prow, m0 = rest % k->pcol_tasks * k->pcols;
        int64_t rows = r->gh - j0 < k->prow ? r->gh - j0 : k->prow;
        int64_t cols = m - m0 < k->pcols ? m - m0 : k->pcols;
        cpu_igemm_q8 b = {.data = c->xq + m0 * r->input, .ld = r->input, .trans = true};
        cpu_igemm(rows, cols, r->input, c->pw[d], j0, &b, &c->x_zp, false, acc, cols, scratch);
        const float *ws = c->w_scale + d * r->gh + j0;
        const float *bias = c->bias != NULL ? c->bias + d * r->gh + j0 : NULL;
        for (int64_t i = 0; i < cols; i++) {
            float *row = c->xw + (m0 + i) * n + d * r->gh + j0;
            for (int64_t j = 0; j < rows; j++) {
                float v = (float)acc[j * cols + i] * (c->x_scale * ws[j]);
                row[j] = bias != NULL ? v + bias[j] : v;
            }
        }
    }
}

/* Task D of the recurrence: direction D, every batch row, every step. */
static void q8_rec_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const q8_call *c = arg;
    const q8_kernel *k = c->k;
    const rnn_kernel *r = &k->r;
    const int64_t hs = r->hidden, gh = r->gh, batch = r->batch, n_xw = r->dirs * gh;
    for (size_t task = begin; task < end; task++) {
        const int d = (int)task;
        char *area = c->ws + k->ws_tasks + task * k->task_bytes;
        float *h = (float *)(void *)(area + k->t_h);
        float *cs = (float *)(void *)(area + k->t_c);
        float *g = (float *)(void *)(area + k->t_g);
        uint8_t *hq = (uint8_t *)(area + k->t_hq), *tmp = (uint8_t *)(area + k->t_tmp);
        int32_t *acc = (int32_t *)(void *)(area + k->t_acc);
        float *h_scale = (float *)(void *)(area + k->t_hs);
        int32_t *h_zp = (int32_t *)(void *)(area + k->t_hz);
        void *scratch = area + k->t_scratch;
        const rnn_act *act = r->act[d];
        const float *p = c->p != NULL ? c->p + (int64_t)d * 3 * hs : NULL;
        const float *rs = c->r_scale + (int64_t)d * gh;
        for (int64_t b = 0; b < batch; b++)
            rnn_state_init(r, d, b, c->h0, c->c0, h + b * hs, cs + b * hs);
        bool rev = r->reverse || d == 1;
        for (int64_t s = 0; s < r->seq; s++) {
            int64_t t = rev ? r->seq - 1 - s : s;
            /* each row's H in u8 with its own scale, as the GEMM's B
             * ([hidden, batch], a zero point per column) */
            for (int64_t b = 0; b < batch; b++) {
                float zp;
                q8_params(h + b * hs, (size_t)hs, &h_scale[b], &zp);
                h_zp[b] = (int32_t)zp;
                cpu_quantize_f32(h + b * hs, (size_t)hs, h_scale[b], zp, false,
                                 batch == 1 ? hq : tmp + b * hs);
            }
            for (int64_t b = 0; batch > 1 && b < batch; b++)
                for (int64_t i = 0; i < hs; i++)
                    hq[i * batch + b] = tmp[b * hs + i];
            cpu_igemm_q8 qb = {.data = hq, .ld = batch};
            if (batch == 1 && c->pv[d] != NULL)
                cpu_igemv(c->pv[d], hq, false, h_zp[0], acc, scratch);
            else
                cpu_igemm(gh, batch, hs, c->pr[d], 0, &qb, h_zp, true, acc, batch, scratch);
            for (int64_t b = 0; b < batch; b++) {
                float *hb = h + b * hs;
                float *y = c->y != NULL ? c->y + rnn_y_at(r, t, d, b) : NULL;
                if (c->lens != NULL && t >= (int64_t)c->lens[b]) {
                    if (y != NULL)
                        memset(y, 0, (size_t)hs * sizeof(float));
                    continue;
                }
                float *gb = g + b * gh;
                for (int64_t j = 0; j < gh; j++)
                    gb[j] = (float)acc[j * batch + b] * (h_scale[b] * rs[j]);
                const float *xw = c->xw + (t * batch + b) * n_xw + (int64_t)d * gh;
                rnn_lstm_cell(r, act, p, gb, hs, xw, hs, hb, cs + b * hs, hs);
                if (y != NULL)
                    memcpy(y, hb, (size_t)hs * sizeof(float));
            }
        }
        for (int64_t b = 0; b < batch; b++) {
            int64_t at = rnn_state_at(r, d, b);
            if (c->yh != NULL)
                memcpy(c->yh + at, h + b * hs, (size_t)hs * sizeof(float));
            if (c->yc != NULL)
                memcpy(c->yc + at, cs + b * hs, (size_t)hs * sizeof(float));
        }
    }
}

static void q8_body(pl_module_ctx *ctx, const rnn_kernel *rk, const pl_run_args *args,
                    float *const outs[3], char *ws)
{
    const q8_kernel *k = (const q8_kernel *)rk;
    const int64_t m = rk->seq * rk->batch, n = rk->dirs * rk->gh;
    q8_call c = {.k = k,
                 .x = math_in(args, RNN_X),
                 .p = rk->has_p ? math_in(args, RNN_P) : NULL,
                 .h0 = rk->has_h0 ? math_in(args, RNN_H0) : NULL,
                 .c0 = rk->has_c0 ? math_in(args, RNN_C0) : NULL,
                 .lens = rk->has_lens ? math_in(args, RNN_LENS) : NULL,
                 .y = outs[0],
                 .yh = outs[1],
                 .yc = outs[2],
                 .xw = (float *)(void *)ws,
                 .ws = ws};
    if (k->per_run) {
        q8_layout lay;
        char *base = ws + k->ws_pack;
        q8_layout_of(rk, &lay);
        q8_pack(k, &lay, base, math_in(args, RNN_W), math_in(args, RNN_R),
                math_in(args, Q8_W_SCALE), k->w_zp ? math_in(args, Q8_W_ZP) : NULL,
                math_in(args, Q8_R_SCALE), k->r_zp ? math_in(args, Q8_R_ZP) : NULL, c.pw, c.pr,
                c.pv);
        c.w_scale = (const float *)(const void *)(base + lay.w_scale);
        c.r_scale = (const float *)(const void *)(base + lay.r_scale);
    } else {
        memcpy(c.pw, k->pw, sizeof c.pw);
        memcpy(c.pr, k->pr, sizeof c.pr);
        memcpy(c.pv, k->pv, sizeof c.pv);
        c.w_scale = k->w_scale;
        c.r_scale = k->r_scale;
    }
    if (rk->has_b) {
        float *bias = (float *)(void *)(ws + k->ws_bias);
        rnn_fill_bias(rk, math_in(args, RNN_B), bias);
        c.bias = bias;
    }
    if (rk->input > 0 && m > 0) {
        uint8_t *xq = (uint8_t *)(ws + k->ws_xq);
        float zp;
        q8_params(c.x, (size_t)(m * rk->input), &c.x_scale, &zp);
        cpu_quantize_f32(c.x, (size_t)(m * rk->input), c.x_scale, zp, false, xq);
        c.x_zp = (int32_t)zp;
        c.xq = xq;
        cpu_host->parallel_for(ctx->host_ctx, (size_t)k->ptasks, 1, q8_proj_chunk, &c);
    } else {
        /* no input features: the projection is the bias alone */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c.xw[i * n + j] = c.bias != NULL ? c.bias[j] : 0.0f;
    }
    cpu_host->parallel_for(ctx->host_ctx, (size_t)rk->dirs, 1, q8_rec_chunk, &c);
}

static pl_status *q8_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    return rnn_run_outputs(ctx, kernel, args, q8_body);
}

/* ---- get_kernel -------------------------------------------------------------- */

/* Reads the sizes from X ([seq, batch, input], f32) and R ([dirs, hidden,
 * 4*hidden]; q8_weight checks it), then the other inputs and the outputs
 * as LSTM's (rnn_check_rest). */
static pl_status *q8_shapes(const pl_node_desc *node, rnn_kernel *k)
{
    const pl_tensor *x = &node->inputs[RNN_X], *r = &node->inputs[RNN_R];
    char buf[128];
    for (size_t i = 0; i < 3; i++)
        if (!math_input_present(node, i))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %zu (X, W, R) is absent",
                             i);
    if (!PL_DTYPE_EQ(x->dtype, PL_DTYPE_F32) || x->ndim != 3 || r->ndim != 3)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op,
                         "X must be f32 of rank 3 and R of rank 3 (X %s %s, R %s)",
                         math_dtype_name(x->dtype), cpu_dims_text(x->shape, x->ndim, buf, sizeof buf),
                         r->ndim == 3 ? "rank 3" : "not rank 3");
    k->seq = x->shape[0];
    k->batch = x->shape[1];
    k->input = x->shape[2];
    k->hidden = r->shape[1];
    int64_t hidden_attr;
    NN_TRY(cpu_attr_int(node, "hidden_size", k->hidden, &hidden_attr));
    if (k->hidden <= 0 || hidden_attr != k->hidden)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "hidden_size %lld but R %s has hidden size %lld", (long long)hidden_attr,
                         cpu_dims_text(r->shape, r->ndim, buf, sizeof buf), (long long)k->hidden);
    k->gh = 4 * k->hidden;
    return rnn_check_rest(node, k);
}

/* Plans the projection's tasks and the workspace; false on overflow. */
static bool q8_plan(q8_kernel *k, int threads)
{
    rnn_kernel *r = &k->r;
    const int64_t m = r->seq * r->batch, mr = cpu_igemm_mr();
    q8_layout lay;
    r->threads = threads > 0 ? threads : 1;
    /* about two tasks per thread over (direction, rows of W^T, rows of X) */
    k->pcols = m < Q8_PROJ_COLS ? (m > 0 ? m : 1) : Q8_PROJ_COLS;
    k->pcol_tasks = m > 0 ? (m + k->pcols - 1) / k->pcols : 0;
    int64_t want = 2 * r->threads, have = r->dirs * k->pcol_tasks;
    int64_t split = have > 0 && have < want ? (want + have - 1) / have : 1;
    int64_t rows = (r->gh + split - 1) / split;
    k->prow = (rows + mr - 1) / mr * mr;
    k->prow_tasks = (r->gh + k->prow - 1) / k->prow;
    k->ptasks = r->dirs * k->prow_tasks * k->pcol_tasks;
    size_t slice = 0, acc_off, xw, xq, tasks, slices;
    bool ok = q8_place(&slice, (size_t)(k->prow * k->pcols) * sizeof(int32_t), &acc_off) &&
              q8_place(&slice, cpu_igemm_scratch_bytes(k->pcols, r->input), &k->p_scratch);
    k->p_slice = slice;
    size_t area = 0, bh = (size_t)(r->batch * r->hidden), bg = (size_t)(r->batch * r->gh);
    ok = ok && rnn_place(&area, bh, &k->t_h) && rnn_place(&area, bh, &k->t_c) &&
         rnn_place(&area, bg, &k->t_g) && q8_place(&area, bh, &k->t_hq) &&
         q8_place(&area, r->batch > 1 ? bh : 0, &k->t_tmp) &&
         q8_place(&area, bg * sizeof(int32_t), &k->t_acc) &&
         rnn_place(&area, (size_t)r->batch, &k->t_hs) &&
         rnn_place(&area, (size_t)r->batch, &k->t_hz) &&
         q8_place(&area, q8_max(cpu_igemm_scratch_bytes(r->batch, r->hidden),
                                cpu_igemv_scratch_bytes(r->hidden)),
                  &k->t_scratch);
    k->task_bytes = area;
    size_t ws = 0, off_xw;
    ok = ok && !__builtin_mul_overflow((size_t)m, (size_t)(r->dirs * r->gh), &xw) &&
         rnn_place(&ws, xw, &off_xw) &&
         rnn_place(&ws, r->has_b ? (size_t)(r->dirs * r->gh) : 0, &k->ws_bias) &&
         !__builtin_mul_overflow((size_t)m, (size_t)r->input, &xq) &&
         q8_place(&ws, xq, &k->ws_xq) &&
         !__builtin_mul_overflow(k->p_slice, (size_t)r->threads, &slices) &&
         q8_place(&ws, slices, &k->ws_slices) &&
         !__builtin_mul_overflow(k->task_bytes, (size_t)r->dirs, &tasks) &&
         q8_place(&ws, tasks, &k->ws_tasks) && q8_layout_of(r, &lay) &&
         q8_place(&ws, k->per_run ? lay.bytes : 0, &k->ws_pack);
    r->ws_total = ws;
    return ok;
}

pl_status *rnn_q8_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    rnn_kernel t;
    memset(&t, 0, sizeof t);
    t.kind = RNN_KIND_LSTM;
    t.gates = 4;
    NN_TRY(rnn_read_attrs(node, &t));
    if (t.layout)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "has no attribute 'layout'");
    NN_TRY(q8_shapes(node, &t));
    NN_TRY(rnn_read_activations(node, 3, &t));
    t.n_rec = t.gh;
    size_t n;
    if (__builtin_mul_overflow((size_t)t.seq, (size_t)t.batch, &n) ||
        __builtin_mul_overflow(n, (size_t)(t.dirs * t.gh), &n) ||
        __builtin_mul_overflow((size_t)(t.dirs * t.gh), (size_t)(t.input + t.hidden), &n) ||
        t.input > INT32_MAX || t.hidden > INT32_MAX)
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large");
    const int64_t d = t.dirs, gh = t.gh, in = t.input, hs = t.hidden;
    bool t_signed[2], t_cols[2], t_zp[2];
    NN_TRY(q8_weight(node, RNN_W, (const int64_t[]){d, in, gh}, &t_signed[0]));
    NN_TRY(q8_weight(node, RNN_R, (const int64_t[]){d, hs, gh}, &t_signed[1]));
    NN_TRY(q8_check_scale(node, Q8_W_SCALE, t_signed[0], d, gh, &t_cols[0], &t_zp[0]));
    NN_TRY(q8_check_scale(node, Q8_R_SCALE, t_signed[1], d, gh, &t_cols[1], &t_zp[1]));
    /* W, R and their scales and zero points: packed once when all are
     * constants, else every run */
    static const size_t consts[6] = {RNN_W, RNN_R, Q8_W_SCALE, Q8_W_ZP, Q8_R_SCALE, Q8_R_ZP};
    const void *data[6] = {NULL};
    bool per_run = cpu_node_query(node);
    for (int i = 0; i < 6; i++) {
        size_t bytes = 0;
        if ((consts[i] == Q8_W_ZP && !t_zp[0]) || (consts[i] == Q8_R_ZP && !t_zp[1]))
            continue;
        per_run |= !math_input_constant(node, consts[i], &data[i], &bytes) || data[i] == NULL;
    }
    q8_layout lay;
    size_t head = (sizeof(q8_kernel) + 63) & ~(size_t)63, bytes;
    if (!q8_layout_of(&t, &lay) || __builtin_add_overflow(head, per_run ? 0 : lay.bytes, &bytes))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large");
    q8_kernel *k = (q8_kernel *)cpu_kernel_alloc(ctx, bytes, node->op, NULL);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    pl_kernel base = k->r.base;
    memset(k, 0, sizeof *k);
    k->r = t;
    k->r.base = base;
    k->w_signed = t_signed[0];
    k->r_signed = t_signed[1];
    k->w_cols = t_cols[0];
    k->r_cols = t_cols[1];
    k->w_zp = t_zp[0];
    k->r_zp = t_zp[1];
    k->per_run = per_run;
    if (!per_run) {
        char *blk = (char *)k + head;
        q8_pack(k, &lay, blk, data[0], data[1], data[2], data[3], data[4], data[5], k->pw,
                k->pr, k->pv);
        k->w_scale = (const float *)(const void *)(blk + lay.w_scale);
        k->r_scale = (const float *)(const void *)(blk + lay.r_scale);
    }
    pl_status *st = NULL;
    if (st == NULL && !q8_plan(k, cpu_host->thread_count(ctx->host_ctx)))
        st = cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large for the workspace");
    if (st != NULL) {
        cpu_host->host_free(ctx->host_ctx, k);
        return st;
    }
    k->r.base.run_any = q8_run;
    k->r.base.n_reads = 3;
    k->r.base.n_outputs = node->n_outputs;
    k->r.base.out_elements = 0;
    k->r.base.workspace_bytes = k->r.ws_total;
    *out_kernel = &k->r.base;
    return NULL;
}

/* ---- the schema ---------------------------------------------------------------- */

/* DynamicQuantizeLSTM's outputs: Y [seq, dirs, batch, hidden], Y_h and
 * Y_c [dirs, batch, hidden], of X's dtype; hidden from hidden_size or R
 * ([dirs, hidden, 4*hidden]). */
static pl_status *q8_shape(void *user, pl_shape_ctx *sc)
{
    (void)user;
    pl_dtype xt, rt;
    int32_t xn = -1, rn = -1;
    const int64_t *xd = NULL, *rd = NULL;
    if (!cpu_host->shape_input(sc, 0, &xt, &xn, &xd) || !cpu_host->shape_input(sc, 2, &rt, &rn, &rd))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "DynamicQuantizeLSTM needs X, W and R");
    size_t node = 0;
    const pl_graph_view *view = cpu_host->shape_node(sc, &node);
    const char *dir = "forward";
    size_t len = 7;
    int64_t hidden = rn == 3 ? rd[1] : -1;
    if (view != NULL) {
        cpu_host->graph->attr_string(view, node, "direction", &dir, &len);
        cpu_host->graph->attr_int(view, node, "hidden_size", &hidden);
    }
    int64_t dirs = len == 13 && memcmp(dir, "bidirectional", 13) == 0 ? 2 : 1;
    if (!(len == 13 && dirs == 2) &&
        !(len == 7 && (memcmp(dir, "forward", 7) == 0 || memcmp(dir, "reverse", 7) == 0)))
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT,
                                       "direction '%.*s' is not forward, reverse or "
                                       "bidirectional",
                                       (int)len, dir);
    if (xn >= 0 && xn != 3)
        return cpu_host->status_create(PL_CODE_INVALID_ARGUMENT, "X has rank %d, not 3",
                                       (int)xn);
    int64_t seq = xn == 3 ? xd[0] : -1, batch = xn == 3 ? xd[1] : -1;
    const int64_t y[4] = {seq, dirs, batch, hidden}, s[3] = {dirs, batch, hidden};
    size_t outs = cpu_host->shape_output_count(sc);
    for (size_t o = 0; o < outs && o < 3; o++) {
        pl_status *st = cpu_host->shape_set_output(sc, o, xt, o == 0 ? 4 : 3, o == 0 ? y : s);
        if (st != NULL)
            return st;
    }
    return NULL;
}

pl_status *rnn_q8_register(pl_host_ctx *host_ctx)
{
    /* an older core lowers the op to the float LSTM */
    return cpu_register_ms_op(host_ctx, "DynamicQuantizeLSTM", 3, 12, 1, 3, q8_shape);
}
