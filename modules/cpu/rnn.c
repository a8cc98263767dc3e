/* rnn.c — a run of the cpu module's recurrent layers, ONNX's RNN, GRU and
 * LSTM (f32); rnn_build.c makes the kernels, rnn_act.c holds the
 * activations.
 *
 * A run has two phases, both on the module's own GEMM (gemm.c):
 *   - the input projection of every time step at once: X viewed as
 *     [seq*batch, input] times W^T of both directions ([input,
 *     dirs*gates*hidden]), with the biases that sit outside the recurrence
 *     (Wb + Rb, GRU's Rbh kept apart under linear_before_reset) added in
 *     the GEMM's epilogue. Row blocks go to host->parallel_for;
 *   - the recurrence: every (direction, block of batch rows) is independent
 *     for the whole sequence, so each is one parallel_for task that runs all
 *     its steps: a GEMM of its rows' previous hidden state times R^T, then
 *     the gates, elementwise, row by row. GRU without linear_before_reset
 *     needs the reset gate before its hidden gate's product, so it takes
 *     two GEMMs per step ([Rz;Rr], then Rh on r (.) H).
 * W and R that are constants of the graph are packed for the GEMM once, at
 * get_kernel time, into the kernel's own block; an R that is not is packed
 * once per run into the workspace (a step never packs it).
 *
 * sequence_lens: a batch row of length L takes steps t < L (forward from
 * t = 0, reverse from t = L-1); Y is zero at its steps t >= L, and Y_h and
 * Y_c hold its state after its last step (the initial state when L is 0).
 * clip bounds every gate's input to its activation f or g (not LSTM's
 * h(Ct)), as ONNX Runtime does. activation_alpha / activation_beta are
 * consumed in order by the activations that take them (Affine, LeakyRelu,
 * ThresholdedRelu, ScaledTanh, HardSigmoid, Elu), as ONNX Runtime does;
 * one that runs out takes ONNX's default for the standalone op (LeakyRelu
 * 0.01, ThresholdedRelu 1, Elu 1, HardSigmoid 0.2 and 0.5, Affine 1 and 0,
 * ScaledTanh 1 and 1). A bidirectional node may list one direction's
 * activations; the reverse direction then uses the same.
 *
 * The workspace (asked of the core at get_kernel time) holds the
 * projection, the combined bias, R packed for the run, the projection's
 * per-worker GEMM scratch and each recurrence task's state; a
 * PL_REQ_ADD_TO output is computed into a buffer of its own and then
 * added. */
#include <string.h>

#include "gemm.h"
#include "math_internal.h"
#include "nn_window.h"
#include "rnn.h"

/* ---- a run --------------------------------------------------------------- */

typedef struct rnn_call {
    const rnn_kernel *k;
    const float *x, *w, *r, *p, *h0, *c0;
    const float *rbh;        /* GRU lbr: Rbh of direction 0 (B + 5H), or NULL */
    const int32_t *lens;
    const float *bias;       /* dirs*gh combined biases, or NULL */
    const float *packed_r[2], *packed_rh[2]; /* the kernel's, or this run's */
    float *y, *yh, *yc;
    float *xw;               /* [seq*batch, dirs*gh] */
    char *area;              /* proj slices / task areas */
    /* the split recurrence's step: direction, time, state before and after */
    int split_d;
    int64_t split_t;
    const float *h_prev;
    float *h_next, *cs;
} rnn_call;

static void rnn_proj_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const rnn_call *c = arg;
    const rnn_kernel *k = c->k;
    const int64_t m = k->seq * k->batch, n = k->dirs * k->gh;
    float *scratch = (float *)(void *)(c->area + (size_t)worker * k->proj_slice);
    for (size_t t = begin; t < end; t++) {
        int64_t row0 = (int64_t)t / k->proj_col_tasks * k->proj_rows;
        int64_t rows = m - row0 < k->proj_rows ? m - row0 : k->proj_rows;
        int64_t col0 = (int64_t)t % k->proj_col_tasks * k->proj_cols;
        int64_t cols = n - col0 < k->proj_cols ? n - col0 : k->proj_cols;
        if (k->input == 0) {
            /* No input features: the projection is the bias alone. */
            for (int64_t r = 0; r < rows; r++) {
                float *row = c->xw + (row0 + r) * n + col0;
                if (c->bias != NULL)
                    memcpy(row, c->bias + col0, (size_t)cols * sizeof(float));
                else
                    memset(row, 0, (size_t)cols * sizeof(float));
            }
            continue;
        }
        cpu_gemm_operand a = {.data = c->x + row0 * k->input, .ld = k->input};
        cpu_gemm_operand b = {.data = c->w + col0 * k->input, .ld = k->input, .trans = true};
        if (k->packed_w != NULL) {
            b.packed = k->packed_w;
            b.packed_k = k->input;
            b.first = col0;
        }
        cpu_gemm_epilogue epi = {.col_bias = c->bias != NULL ? c->bias + col0 : NULL};
        cpu_gemm_ex(rows, cols, k->input, 1.0f, &a, &b, 0.0f, c->xw + row0 * n + col0, n,
                    scratch, &epi);
    }
}

/* OUT[ROWS x N] = IN[ROWS x H] * op(B), B the rows R0 .. R0+N-1 of R of
 * direction D, transposed (or its packing). */
static void rnn_rec_gemm(const rnn_call *c, int d, const float *packed, int64_t r0, int64_t n,
                         const float *in, int64_t rows, float *out, float *scratch)
{
    const rnn_kernel *k = c->k;
    cpu_gemm_operand a = {.data = in, .ld = k->hidden};
    cpu_gemm_operand b = {.data = c->r + ((int64_t)d * k->gh + r0) * k->hidden,
                          .ld = k->hidden,
                          .trans = true};
    if (packed != NULL) {
        b.packed = packed;
        b.packed_k = k->hidden;
    }
    cpu_gemm(rows, n, k->hidden, 1.0f, &a, &b, 0.0f, out, n, scratch);
}

/* The element offset of the state of (direction D, batch row B) in
 * initial_h / Y_h (layout 0: [dirs, batch, H]; 1: [batch, dirs, H]). */
int64_t rnn_state_at(const rnn_kernel *k, int64_t d, int64_t b)
{
    return (k->layout ? b * k->dirs + d : d * k->batch + b) * k->hidden;
}

/* The same in Y (layout 0: [seq, dirs, batch, H]; 1: [batch, seq, dirs, H]). */
int64_t rnn_y_at(const rnn_kernel *k, int64_t t, int64_t d, int64_t b)
{
    return (k->layout ? (b * k->seq + t) * k->dirs + d : (t * k->dirs + d) * k->batch + b) *
           k->hidden;
}

void rnn_state_init(const rnn_kernel *k, int64_t d, int64_t b, const float *h0, const float *c0,
                    float *h, float *c)
{
    const size_t bytes = (size_t)k->hidden * sizeof(float);
    int64_t at = rnn_state_at(k, d, b);
    if (h0 != NULL)
        memcpy(h, h0 + at, bytes);
    else
        memset(h, 0, bytes);
    if (c == NULL)
        return;
    if (c0 != NULL)
        memcpy(c, c0 + at, bytes);
    else
        memset(c, 0, bytes);
}

/* One plain RNN step of W units of one row: H = act(G + XW), clipped
 * first when the node asks. */
static void rnn_plain_cell(const rnn_kernel *k, const rnn_act *act, const float *g,
                           const float *xw, float *h, int64_t w)
{
    for (int64_t j = 0; j < w; j++)
        h[j] = g[j] + xw[j];
    if (k->has_clip)
        rnn_clip(h, w, k->clip);
    rnn_act_apply(&act[0], h, w);
}

void rnn_lstm_cell(const rnn_kernel *k, const rnn_act *act, const float *p, float *g,
                          int64_t gs, const float *xw, int64_t xs, float *h, float *c,
                          int64_t hs)
{
    const int64_t ph = k->hidden;
    float *gi = g, *go = g + gs, *gf = g + 2 * gs, *gc = g + 3 * gs;
    for (int64_t q = 0; q < 4; q++)
        for (int64_t j = 0; j < hs; j++)
            g[q * gs + j] += xw[q * xs + j];
    if (p != NULL)
        for (int64_t j = 0; j < hs; j++) {
            gi[j] += p[j] * c[j];
            gf[j] += p[2 * ph + j] * c[j];
        }
    if (k->has_clip) {
        rnn_clip(gi, hs, k->clip);
        rnn_clip(gf, hs, k->clip);
        rnn_clip(gc, hs, k->clip);
    }
    rnn_act_apply(&act[0], gi, hs);
    if (k->input_forget)
        for (int64_t j = 0; j < hs; j++)
            gf[j] = 1.0f - gi[j];
    else
        rnn_act_apply(&act[0], gf, hs);
    rnn_act_apply(&act[1], gc, hs);
    for (int64_t j = 0; j < hs; j++)
        c[j] = gf[j] * c[j] + gi[j] * gc[j];
    if (p != NULL)
        for (int64_t j = 0; j < hs; j++)
            go[j] += p[ph + j] * c[j];
    if (k->has_clip)
        rnn_clip(go, hs, k->clip);
    rnn_act_apply(&act[0], go, hs);
    /* h(Ct) into the input gate's block, no longer needed. */
    memcpy(gi, c, (size_t)hs * sizeof(float));
    rnn_act_apply(&act[2], gi, hs);
    for (int64_t j = 0; j < hs; j++)
        h[j] = go[j] * gi[j];
}

/* The update and reset gates of one GRU row (z, r blocks of G, plus XW). */
static void rnn_gru_zr(const rnn_kernel *k, const rnn_act *act, float *g, const float *xw)
{
    const int64_t n = 2 * k->hidden;
    for (int64_t j = 0; j < n; j++)
        g[j] += xw[j];
    if (k->has_clip)
        rnn_clip(g, n, k->clip);
    rnn_act_apply(&act[0], g, n);
}

/* The end of one GRU row's step: HT holds the hidden gate's input. */
static void rnn_gru_finish(const rnn_kernel *k, const rnn_act *act, const float *z, float *ht,
                           float *h)
{
    const int64_t hs = k->hidden;
    if (k->has_clip)
        rnn_clip(ht, hs, k->clip);
    rnn_act_apply(&act[1], ht, hs);
    for (int64_t j = 0; j < hs; j++)
        h[j] = (1.0f - z[j]) * ht[j] + z[j] * h[j];
}

/* Whether batch row B takes step T. */
static bool rnn_active(const rnn_call *c, int64_t b, int64_t t)
{
    return c->lens == NULL || t < (int64_t)c->lens[b];
}

/* One step of the rows [B0, B0+ROWS) of direction D at time T. */
static void rnn_step(const rnn_call *c, int d, int64_t t, int64_t b0, int64_t rows, float *h,
                     float *cs, float *g, float *rh, float *rec2, float *scratch)
{
    const rnn_kernel *k = c->k;
    const int64_t hs = k->hidden, gh = k->gh, n_xw = k->dirs * gh;
    const rnn_act *act = k->act[d];
    rnn_rec_gemm(c, d, c->packed_r[d], 0, k->n_rec, h, rows, g, scratch);
    const float *p = c->p != NULL ? c->p + (int64_t)d * 3 * hs : NULL;
    const float *rbh = c->rbh != NULL ? c->rbh + (int64_t)d * 6 * hs : NULL;
    bool two_phase = k->kind == RNN_KIND_GRU && !k->lbr;
    for (int64_t i = 0; i < rows; i++) {
        int64_t b = b0 + i;
        float *hi = h + i * hs, *gi = g + i * k->n_rec;
        if (!rnn_active(c, b, t)) {
            if (two_phase)
                memset(rh + i * hs, 0, (size_t)hs * sizeof(float));
            continue;
        }
        const float *xw = c->xw + (k->layout ? b * k->seq + t : t * k->batch + b) * n_xw + d * gh;
        switch (k->kind) {
        case RNN_KIND_RNN:
            rnn_plain_cell(k, act, gi, xw, hi, hs);
            break;
        case RNN_KIND_LSTM:
            rnn_lstm_cell(k, act, p, gi, hs, xw, hs, hi, cs + i * hs, hs);
            break;
        case RNN_KIND_GRU:
            rnn_gru_zr(k, act, gi, xw);
            if (two_phase) {
                float *rhi = rh + i * hs;
                for (int64_t j = 0; j < hs; j++)
                    rhi[j] = gi[hs + j] * hi[j];
            } else {
                /* linear_before_reset: r (.) (H R_h^T + Rbh). */
                float *ht = gi + 2 * hs;
                const float *xh = xw + 2 * hs;
                if (rbh != NULL)
                    for (int64_t j = 0; j < hs; j++)
                        ht[j] = xh[j] + gi[hs + j] * (ht[j] + rbh[j]);
                else
                    for (int64_t j = 0; j < hs; j++)
                        ht[j] = xh[j] + gi[hs + j] * ht[j];
                rnn_gru_finish(k, act, gi, ht, hi);
            }
            break;
        }
    }
    if (!two_phase)
        return;
    rnn_rec_gemm(c, d, c->packed_rh[d], 2 * hs, hs, rh, rows, rec2, scratch);
    for (int64_t i = 0; i < rows; i++) {
        int64_t b = b0 + i;
        if (!rnn_active(c, b, t))
            continue;
        const float *xh =
            c->xw + (k->layout ? b * k->seq + t : t * k->batch + b) * n_xw + d * gh + 2 * hs;
        float *ht = rec2 + i * hs;
        for (int64_t j = 0; j < hs; j++)
            ht[j] += xh[j];
        rnn_gru_finish(k, act, g + i * k->n_rec, ht, h + i * hs);
    }
}

/* Task T of the recurrence: direction T / blocks, a block of batch rows,
 * every step. */
static void rnn_rec_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const rnn_call *c = arg;
    const rnn_kernel *k = c->k;
    const int64_t hs = k->hidden;
    for (size_t task = begin; task < end; task++) {
        int d = (int)((int64_t)task / k->blocks);
        int64_t b0 = ((int64_t)task % k->blocks) * k->block_rows;
        int64_t rows = k->batch - b0 < k->block_rows ? k->batch - b0 : k->block_rows;
        if (rows <= 0)
            continue;
        char *area = c->area + task * k->task_bytes;
        float *h = (float *)(void *)(area + k->off_h);
        float *cs = (float *)(void *)(area + k->off_c);
        float *g = (float *)(void *)(area + k->off_gates);
        float *rh = (float *)(void *)(area + k->off_rh);
        float *rec2 = (float *)(void *)(area + k->off_rec2);
        float *scratch = (float *)(void *)(area + k->off_scratch);
        for (int64_t i = 0; i < rows; i++)
            rnn_state_init(k, d, b0 + i, c->h0, c->c0, h + i * hs,
                           k->kind == RNN_KIND_LSTM ? cs + i * hs : NULL);
        bool rev = k->reverse || d == 1;
        for (int64_t s = 0; s < k->seq; s++) {
            int64_t t = rev ? k->seq - 1 - s : s;
            rnn_step(c, d, t, b0, rows, h, cs, g, rh, rec2, scratch);
            if (c->y == NULL)
                continue;
            for (int64_t i = 0; i < rows; i++) {
                float *y = c->y + rnn_y_at(k, t, d, b0 + i);
                if (rnn_active(c, b0 + i, t))
                    memcpy(y, h + i * hs, (size_t)hs * sizeof(float));
                else
                    memset(y, 0, (size_t)hs * sizeof(float));
            }
        }
        for (int64_t i = 0; i < rows; i++) {
            int64_t at = rnn_state_at(k, d, b0 + i);
            if (c->yh != NULL)
                memcpy(c->yh + at, h + i * hs, (size_t)hs * sizeof(float));
            if (c->yc != NULL)
                memcpy(c->yc + at, cs + i * hs, (size_t)hs * sizeof(float));
        }
    }
}

/* Task T of one step of the split recurrence (rnn.h): slice T's units
 * [j0, j0+w) of every batch row of direction split_d at time split_t. */
static void rnn_split_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    const rnn_call *c = arg;
    const rnn_kernel *k = c->k;
    const int64_t hs = k->hidden, n_xw = k->dirs * k->gh, t = c->split_t;
    const int d = c->split_d;
    const rnn_act *act = k->act[d];
    for (size_t task = begin; task < end; task++) {
        int64_t j0 = (int64_t)task * k->slice_units;
        int64_t w = hs - j0 < k->slice_units ? hs - j0 : k->slice_units;
        char *area = c->area + k->sp_tasks + task * k->sp_task_bytes;
        float *g = (float *)(void *)area;
        float *scratch = (float *)(void *)(area + k->sp_off_scratch);
        const int64_t n = k->gates * w;
        cpu_gemm_operand a = {.data = c->h_prev, .ld = hs};
        cpu_gemm_operand b = {.packed = k->packed_slices[d] + task * k->slice_floats,
                              .packed_k = hs,
                              .ld = hs,
                              .trans = true};
        cpu_gemm(k->batch, n, hs, 1.0f, &a, &b, 0.0f, g, n, scratch);
        const float *p = c->p != NULL ? c->p + (int64_t)d * 3 * hs + j0 : NULL;
        const float *rbh = c->rbh != NULL ? c->rbh + (int64_t)d * 6 * hs + j0 : NULL;
        for (int64_t b = 0; b < k->batch; b++) {
            const float *hp = c->h_prev + b * hs + j0;
            float *hn = c->h_next + b * hs + j0, *gb = g + b * n;
            float *y = c->y != NULL ? c->y + rnn_y_at(k, t, d, b) + j0 : NULL;
            if (!rnn_active(c, b, t)) {
                memcpy(hn, hp, (size_t)w * sizeof(float));
                if (y != NULL)
                    memset(y, 0, (size_t)w * sizeof(float));
                continue;
            }
            const float *xw =
                c->xw + (k->layout ? b * k->seq + t : t * k->batch + b) * n_xw + d * k->gh + j0;
            switch (k->kind) {
            case RNN_KIND_RNN:
                rnn_plain_cell(k, act, gb, xw, hn, w);
                break;
            case RNN_KIND_LSTM:
                rnn_lstm_cell(k, act, p, gb, w, xw, hs, hn, c->cs + b * hs + j0, w);
                break;
            case RNN_KIND_GRU: {
                /* linear_before_reset (rnn_split takes no other GRU) */
                float *z = gb, *r = gb + w, *ht = gb + 2 * w;
                for (int64_t j = 0; j < w; j++) {
                    z[j] += xw[j];
                    r[j] += xw[hs + j];
                }
                if (k->has_clip)
                    rnn_clip(gb, 2 * w, k->clip);
                rnn_act_apply(&act[0], gb, 2 * w);
                for (int64_t j = 0; j < w; j++)
                    ht[j] = xw[2 * hs + j] + r[j] * (ht[j] + (rbh != NULL ? rbh[j] : 0.0f));
                if (k->has_clip)
                    rnn_clip(ht, w, k->clip);
                rnn_act_apply(&act[1], ht, w);
                for (int64_t j = 0; j < w; j++)
                    hn[j] = (1.0f - z[j]) * ht[j] + z[j] * hp[j];
                break;
            }
            }
            if (y != NULL)
                memcpy(y, hn, (size_t)w * sizeof(float));
        }
    }
}

/* The split recurrence (rnn.h): each direction in turn, a parallel_for of
 * its slices a step, the state double-buffered between steps. */
static void rnn_split_run(pl_module_ctx *ctx, rnn_call *c)
{
    const rnn_kernel *k = c->k;
    const int64_t hs = k->hidden;
    float *hb[2] = {(float *)(void *)(c->area + k->sp_h[0]),
                    (float *)(void *)(c->area + k->sp_h[1])};
    c->cs = (float *)(void *)(c->area + k->sp_c);
    for (int d = 0; d < (int)k->dirs; d++) {
        for (int64_t b = 0; b < k->batch; b++)
            rnn_state_init(k, d, b, c->h0, c->c0, hb[0] + b * hs, c->cs + b * hs);
        bool rev = k->reverse || d == 1;
        c->split_d = d;
        for (int64_t s = 0; s < k->seq; s++) {
            c->split_t = rev ? k->seq - 1 - s : s;
            c->h_prev = hb[s & 1];
            c->h_next = hb[(s + 1) & 1];
            cpu_host->parallel_for(ctx->host_ctx, (size_t)k->slices, 1, rnn_split_chunk, c);
        }
        const float *h = hb[k->seq & 1];
        for (int64_t b = 0; b < k->batch; b++) {
            int64_t at = rnn_state_at(k, d, b);
            if (c->yh != NULL)
                memcpy(c->yh + at, h + b * hs, (size_t)hs * sizeof(float));
            if (c->yc != NULL)
                memcpy(c->yc + at, c->cs + b * hs, (size_t)hs * sizeof(float));
        }
    }
}

/* Input I of a run (f32), or NULL when the kernel does not read it. */
static const float *rnn_input(const pl_run_args *args, size_t i, bool present)
{
    if (!present || i >= args->n_inputs)
        return NULL;
    return (const float *)math_in(args, i);
}

/* Checks that each present optional input has data and that every length
 * is within [0, seq]. */
static pl_status *rnn_check_inputs(const rnn_kernel *k, const pl_run_args *args)
{
    const bool present[8] = {true, true, true, k->has_b, k->has_lens, k->has_h0, k->has_c0,
                             k->has_p};
    for (size_t i = 0; i < 8; i++) {
        if (!present[i])
            continue;
        const pl_tensor *t = i < args->n_inputs ? &args->inputs[i] : NULL;
        /* An empty tensor (X without features, say) may have no data. */
        if (t == NULL || (t->data == NULL && (t->ndim < 0 || (t->ndim > 0 && t->shape == NULL) ||
                                              cpu_elements(t->shape, t->ndim) != 0)))
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op, "input %zu has no data", i);
    }
    if (!k->has_lens)
        return NULL;
    const int32_t *lens = math_in(args, RNN_LENS);
    for (int64_t b = 0; b < k->batch; b++)
        if (lens[b] < 0 || lens[b] > k->seq)
            return cpu_error(PL_CODE_INVALID_ARGUMENT, k->base.op,
                             "sequence_lens[%lld] = %d is outside [0, %lld]", (long long)b,
                             (int)lens[b], (long long)k->seq);
    return NULL;
}

void rnn_fill_bias(const rnn_kernel *k, const float *b, float *bias)
{
    const int64_t gh = k->gh, hs = k->hidden;
    for (int64_t d = 0; d < k->dirs; d++)
        for (int64_t j = 0; j < gh; j++) {
            bool rb = !(k->kind == RNN_KIND_GRU && k->lbr && j >= 2 * hs);
            bias[d * gh + j] = b[d * 2 * gh + j] + (rb ? b[d * 2 * gh + gh + j] : 0.0f);
        }
}

/* The packed R of C: the kernel's when R is a constant, else R packed
 * into BUF (the workspace's) for this run, once per direction, so that no
 * step packs it again. */
static void rnn_pack_r(const rnn_kernel *k, rnn_call *c, char *buf)
{
    const int64_t hs = k->hidden;
    for (int d = 0; d < (int)k->dirs; d++) {
        c->packed_r[d] = k->packed_r[d];
        c->packed_rh[d] = k->packed_rh[d];
        if (k->packed_r[0] != NULL)
            continue;
        const float *r = c->r + (int64_t)d * k->gh * hs;
        float *pr = (float *)(void *)(buf + (size_t)d * (k->rpack_r + k->rpack_rh));
        cpu_gemm_pack_b(hs, k->n_rec, r, hs, true, pr);
        c->packed_r[d] = pr;
        if (k->rpack_rh > 0) {
            float *prh = (float *)(void *)((char *)pr + k->rpack_r);
            cpu_gemm_pack_b(hs, hs, r + 2 * hs * hs, hs, true, prh);
            c->packed_rh[d] = prh;
        }
    }
}

/* The float layers' run between rnn_run_outputs' set-up and its end. */
static void rnn_body(pl_module_ctx *ctx, const rnn_kernel *k, const pl_run_args *args,
                     float *const outs[3], char *ws)
{
    rnn_call c = {.k = k,
                  .x = rnn_input(args, RNN_X, true),
                  .w = rnn_input(args, RNN_W, true),
                  .r = rnn_input(args, RNN_R, true),
                  .p = rnn_input(args, RNN_P, k->has_p),
                  .h0 = rnn_input(args, RNN_H0, k->has_h0),
                  .c0 = rnn_input(args, RNN_C0, k->has_c0),
                  .lens = k->has_lens ? math_in(args, RNN_LENS) : NULL,
                  .y = outs[0],
                  .yh = outs[1],
                  .yc = outs[2],
                  .xw = (float *)(void *)ws,
                  .area = ws + k->ws_area};
    if (k->slices == 0)
        rnn_pack_r(k, &c, ws + k->ws_rpack);
    if (k->has_b) {
        const float *b = rnn_input(args, RNN_B, true);
        float *bias = (float *)(void *)(ws + k->ws_bias);
        rnn_fill_bias(k, b, bias);
        c.bias = bias;
        if (k->kind == RNN_KIND_GRU && k->lbr)
            c.rbh = b + k->gh + 2 * k->hidden;
    }
    if (k->proj_tasks > 0)
        cpu_host->parallel_for(ctx->host_ctx, (size_t)k->proj_tasks, 1, rnn_proj_chunk, &c);
    if (k->slices > 0)
        rnn_split_run(ctx, &c);
    else
        cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->dirs * k->blocks), 1, rnn_rec_chunk,
                               &c);
}

pl_status *rnn_run_outputs(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args,
                           rnn_body_fn body)
{
    const rnn_kernel *k = (const rnn_kernel *)kernel;
    float *outs[3] = {NULL, NULL, NULL};
    float *adds[3] = {NULL, NULL, NULL}; /* PL_REQ_ADD_TO: where the result goes */
    size_t counts[3];
    counts[0] = (size_t)(k->seq * k->dirs * k->batch * k->hidden);
    counts[1] = counts[2] = (size_t)(k->dirs * k->batch * k->hidden);
    for (size_t o = 0; o < kernel->n_outputs && o < 3; o++) {
        void *data;
        pl_output_request req;
        pl_status *st = math_run_output(kernel, args, o, counts[o], true, &data, &req);
        if (st != NULL)
            return st;
        outs[o] = data;
        if (data != NULL && req == PL_REQ_ADD_TO)
            adds[o] = data;
    }
    if (outs[0] == NULL && outs[1] == NULL && outs[2] == NULL)
        return NULL;
    pl_status *st = rnn_check_inputs(k, args);
    if (st != NULL)
        return st;
    for (size_t o = 0; o < 3; o++) {
        if (adds[o] == NULL)
            continue;
        outs[o] = cpu_host->host_alloc(ctx->host_ctx, counts[o] * sizeof(float), 64);
        if (outs[o] == NULL) {
            st = cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                           "out of memory for %zu bytes of output %zu to add",
                           counts[o] * sizeof(float), o);
            break;
        }
    }
    nn_workspace ws = {0};
    if (st == NULL && (nn_workspace_acquire(ctx, args, k->ws_total, &ws) == NULL ||
                       ws.base == NULL))
        st = cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op,
                       "out of memory for %zu bytes of workspace", k->ws_total);
    if (st == NULL)
        body(ctx, k, args, outs, ws.base);
    nn_workspace_release(ctx, &ws);
    for (size_t o = 0; o < 3; o++) {
        if (adds[o] == NULL || outs[o] == NULL)
            continue;
        if (st == NULL)
            for (size_t i = 0; i < counts[o]; i++)
                adds[o][i] += outs[o][i];
        cpu_host->host_free(ctx->host_ctx, outs[o]);
    }
    return st;
}

pl_status *rnn_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
{
    return rnn_run_outputs(ctx, kernel, args, rnn_body);
}
