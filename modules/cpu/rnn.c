/* rnn.c — the cpu module's recurrent layers, ONNX's RNN, GRU and LSTM (f32),
 * and the op table of the rnn family (see cpu_kernel.h).
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
 * per-worker GEMM scratch and each recurrence task's state; a PL_REQ_ADD_TO output is computed
 * into a buffer of its own and then added. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fastmath.h"
#include "gemm.h"
#include "math_internal.h"
#include "nn_window.h"

static pl_status *rnn_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel);

const cpu_op_entry cpu_ops_rnn[] = {
    {"RNN", rnn_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {"GRU", rnn_build, 3, 6, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {"LSTM", rnn_build, 3, 8, 0, CPU_OP_ANY_DTYPE | CPU_OP_MULTI_OUTPUT | CPU_OP_OPTIONAL_OUTPUTS},
    {NULL, NULL, 0, 0, 0, 0},
};

/* Rows of X per task of the projection, at least. */
#define RNN_PROJ_MIN_ROWS 32

/* ---- activations ----------------------------------------------------------- */

typedef enum rnn_fn {
    RNN_RELU,
    RNN_TANH,
    RNN_SIGMOID,
    RNN_AFFINE,
    RNN_LEAKY_RELU,
    RNN_THRESHOLDED_RELU,
    RNN_SCALED_TANH,
    RNN_HARD_SIGMOID,
    RNN_ELU,
    RNN_SOFTSIGN,
    RNN_SOFTPLUS
} rnn_fn;

typedef struct rnn_act {
    rnn_fn fn;
    float alpha, beta;
} rnn_act;

/* ONNX's names, whether each takes alpha and beta, and their defaults. */
static const struct {
    const char *name;
    rnn_fn fn;
    bool has_alpha, has_beta;
    float alpha, beta;
} rnn_fns[] = {
    {"Relu", RNN_RELU, false, false, 0.0f, 0.0f},
    {"Tanh", RNN_TANH, false, false, 0.0f, 0.0f},
    {"Sigmoid", RNN_SIGMOID, false, false, 0.0f, 0.0f},
    {"Affine", RNN_AFFINE, true, true, 1.0f, 0.0f},
    {"LeakyRelu", RNN_LEAKY_RELU, true, false, 0.01f, 0.0f},
    {"ThresholdedRelu", RNN_THRESHOLDED_RELU, true, false, 1.0f, 0.0f},
    {"ScaledTanh", RNN_SCALED_TANH, true, true, 1.0f, 1.0f},
    {"HardSigmoid", RNN_HARD_SIGMOID, true, true, 0.2f, 0.5f},
    {"Elu", RNN_ELU, true, false, 1.0f, 0.0f},
    {"Softsign", RNN_SOFTSIGN, false, false, 0.0f, 0.0f},
    {"Softplus", RNN_SOFTPLUS, false, false, 0.0f, 0.0f},
};

/* tanh that vectorises: an odd Taylor polynomial near 0 (relative error
 * below 1e-8 for |x| < 0.25), else 1 - 2 / (e^2|x| + 1) with the sign of x
 * (cpu_expf saturates, so large |x| gives exactly +-1; NaN stays NaN). */
static inline float rnn_tanh(float x)
{
    float ax = fabsf(x), x2 = x * x;
    float p = x * (1.0f + x2 * (-1.0f / 3.0f +
                                x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f)))));
    float q = 1.0f - 2.0f / (cpu_expf(2.0f * ax) + 1.0f);
    q = x < 0.0f ? -q : q;
    return ax < 0.25f ? p : q;
}

/* 8 floats, loadable from any float address, and their lane masks. */
typedef float rnn_v8 __attribute__((vector_size(32), aligned(4), __may_alias__));
typedef int32_t rnn_v8i __attribute__((vector_size(32), aligned(4), __may_alias__));

/* Lanes of A where mask M is set, else of B. */
#define RNN_SEL(M, A, B) ((rnn_v8)((((rnn_v8i)(A)) & (M)) | (((rnn_v8i)(B)) & ~(M))))
#define RNN_SPLAT(X) ((rnn_v8){(X), (X), (X), (X), (X), (X), (X), (X)})
#define RNN_SPLAT_I(X) ((rnn_v8i){(X), (X), (X), (X), (X), (X), (X), (X)})

/* OUT = cpu_expf(IN) lane by lane, the same steps as fastmath.h's: written
 * with vector types because GCC does not if-convert the scalar form under
 * the AVX2 target. (A macro: a vector argument would change the ABI between
 * the two builds.) */
#define RNN_EXP8(OUT, IN)                                                                   \
    do {                                                                                    \
        rnn_v8 e_x_ = (IN);                                                                 \
        rnn_v8 e_c_ = RNN_SEL(e_x_ < RNN_SPLAT(-87.33654f), RNN_SPLAT(-87.33654f), e_x_);   \
        e_c_ = RNN_SEL(e_c_ > RNN_SPLAT(88.37626f), RNN_SPLAT(88.37626f), e_c_);            \
        rnn_v8 e_f_ = e_c_ * 1.44269504088896341f;                                          \
        e_f_ += RNN_SEL(e_f_ >= RNN_SPLAT(0.0f), RNN_SPLAT(0.5f), RNN_SPLAT(-0.5f));        \
        rnn_v8i e_n_ = __builtin_convertvector(e_f_, rnn_v8i);                              \
        rnn_v8 e_fn_ = __builtin_convertvector(e_n_, rnn_v8);                               \
        rnn_v8 e_r_ = e_c_ - e_fn_ * 0.693359375f + e_fn_ * 2.12194440e-4f;                 \
        rnn_v8 e_p_ = ((((1.9875691500e-4f * e_r_ + 1.3981999507e-3f) * e_r_ +              \
                         8.3334519073e-3f) * e_r_ + 4.1665795894e-2f) * e_r_ +              \
                       1.6666665459e-1f) * e_r_ + 5.0000001201e-1f;                         \
        e_p_ = e_p_ * (e_r_ * e_r_) + e_r_ + 1.0f;                                          \
        rnn_v8i e_b_ = (e_n_ + 127) << 23;                                                  \
        rnn_v8 e_y_ = e_p_ * (rnn_v8)e_b_;                                                  \
        (OUT) = RNN_SEL(e_x_ != e_x_, e_x_, e_y_);                                          \
    } while (0)

/* X[0..7] = sigmoid(X[0..7]) and tanh(X[0..7]) in place, as the scalar
 * forms above. */
__attribute__((always_inline)) static inline void rnn_sigmoid8(float *x)
{
    rnn_v8 v = *(const rnn_v8 *)x, e;
    RNN_EXP8(e, -v);
    *(rnn_v8 *)x = 1.0f / (1.0f + e);
}

__attribute__((always_inline)) static inline void rnn_tanh8(float *x)
{
    rnn_v8 v = *(const rnn_v8 *)x;
    rnn_v8i sign = (rnn_v8i)v & RNN_SPLAT_I(INT32_MIN);
    rnn_v8 ax = (rnn_v8)((rnn_v8i)v & ~RNN_SPLAT_I(INT32_MIN)), x2 = v * v, e;
    rnn_v8 p = v * (1.0f + x2 * (-1.0f / 3.0f +
                                 x2 * (2.0f / 15.0f + x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f)))));
    RNN_EXP8(e, 2.0f * ax);
    rnn_v8 q = (rnn_v8)((rnn_v8i)(1.0f - 2.0f / (e + 1.0f)) | sign);
    *(rnn_v8 *)x = RNN_SEL(ax < RNN_SPLAT(0.25f), p, q);
}

/* X[i] = A(X[i]) for i < N, in place: the body, instantiated for the
 * baseline target and for AVX2+FMA (the module is built without -march
 * flags; these loops are a fifth of an LSTM's time). */
__attribute__((always_inline)) static inline void rnn_act_body(const rnn_act *a, float *x,
                                                               int64_t n)
{
    const float al = a->alpha, be = a->beta;
    switch (a->fn) {
    case RNN_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case RNN_TANH: {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            rnn_tanh8(x + i);
        for (; i < n; i++)
            x[i] = rnn_tanh(x[i]);
        break;
    }
    case RNN_SIGMOID: {
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            rnn_sigmoid8(x + i);
        for (; i < n; i++)
            x[i] = 1.0f / (1.0f + cpu_expf(-x[i]));
        break;
    }
    case RNN_AFFINE:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * x[i] + be;
        break;
    case RNN_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0.0f ? x[i] : al * x[i];
        break;
    case RNN_THRESHOLDED_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > al ? x[i] : 0.0f;
        break;
    case RNN_SCALED_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * rnn_tanh(be * x[i]);
        break;
    case RNN_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float v = al * x[i] + be;
            v = v > 0.0f ? v : 0.0f;
            x[i] = v < 1.0f ? v : 1.0f;
        }
        break;
    case RNN_ELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0.0f ? x[i] : al * expm1f(x[i]);
        break;
    case RNN_SOFTSIGN:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] / (1.0f + fabsf(x[i]));
        break;
    case RNN_SOFTPLUS:
        /* log(1 + e^x) without overflow: x + log1p(e^-x) for x > 0. */
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] + log1pf(expf(-x[i])) : log1pf(expf(x[i]));
        break;
    }
}

static void rnn_act_base(const rnn_act *a, float *x, int64_t n)
{
    rnn_act_body(a, x, n);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) static void rnn_act_avx2(const rnn_act *a, float *x,
                                                             int64_t n)
{
    rnn_act_body(a, x, n);
}

/* Whether the AVX2 version runs here; decided once (a benign race: every
 * thread computes the same answer). */
static bool rnn_use_avx2(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v != 0;
}
#endif

static void rnn_act_apply(const rnn_act *a, float *x, int64_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (rnn_use_avx2()) {
        rnn_act_avx2(a, x, n);
        return;
    }
#endif
    rnn_act_base(a, x, n);
}

/* X[i] = min(bound, max(-bound, X[i])) for i < N (NaN stays NaN). */
static void rnn_clip(float *x, int64_t n, float bound)
{
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        v = v < -bound ? -bound : v;
        x[i] = v > bound ? bound : v;
    }
}

/* ---- the kernel ------------------------------------------------------------ */

typedef enum rnn_kind { RNN_KIND_RNN = 0, RNN_KIND_GRU = 1, RNN_KIND_LSTM = 2 } rnn_kind;

/* Inputs by position. */
enum { RNN_X, RNN_W, RNN_R, RNN_B, RNN_LENS, RNN_H0, RNN_C0, RNN_P };

typedef struct rnn_kernel {
    pl_kernel base;
    rnn_kind kind;
    int64_t gates;           /* 1, 3, 4 */
    int64_t seq, batch, input, hidden, dirs;
    int64_t gh;              /* gates * hidden */
    bool reverse;            /* one direction, reverse */
    bool layout;             /* batch-major X, Y, states (layout 1) */
    bool has_b, has_lens, has_h0, has_c0, has_p;
    bool lbr;                /* GRU linear_before_reset */
    bool input_forget;       /* LSTM */
    bool has_clip;
    float clip;
    rnn_act act[2][3];       /* per direction: f, g, h */
    int64_t n_rec;           /* columns of the first recurrent GEMM */
    const float *packed_w;   /* W^T of all directions packed, or NULL */
    const float *packed_r[2]; /* per direction: R^T (GRU lbr 0: [Rz;Rr]^T) */
    const float *packed_rh[2]; /* GRU lbr 0: Rh^T */
    /* The projection: tasks of proj_rows rows of X, one scratch slice per
     * worker of the thread count of get_kernel time. */
    int64_t proj_rows, proj_tasks;
    int threads;
    size_t proj_slice;       /* bytes */
    /* The recurrence: dirs * blocks tasks of block_rows batch rows. */
    int64_t blocks, block_rows;
    size_t task_bytes;       /* one task's area */
    size_t off_h, off_c, off_gates, off_rh, off_rec2, off_scratch; /* inside it */
    /* The workspace: projection, bias, then proj slices or task areas. */
    size_t ws_bias, ws_area;
    size_t ws_rpack;         /* R packed per run when it is not a constant */
    size_t rpack_r, rpack_rh; /* bytes of one direction's two packings */
    size_t ws_total;
} rnn_kernel;

/* Bytes of FLOATS floats rounded up to a cache line, into *out; false on
 * overflow. */
static bool rnn_floats_bytes(size_t floats, size_t *out)
{
    size_t b;
    if (__builtin_mul_overflow(floats, sizeof(float), &b) || __builtin_add_overflow(b, 63, &b))
        return false;
    *out = b & ~(size_t)63;
    return true;
}

/* *total += bytes of FLOATS floats, recording the offset in *off. */
static bool rnn_place(size_t *total, size_t floats, size_t *off)
{
    size_t b;
    if (!rnn_floats_bytes(floats, &b))
        return false;
    *off = *total;
    return !__builtin_add_overflow(*total, b, total);
}

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
} rnn_call;

static void rnn_proj_chunk(void *arg, size_t begin, size_t end, int worker)
{
    const rnn_call *c = arg;
    const rnn_kernel *k = c->k;
    const int64_t m = k->seq * k->batch, n = k->dirs * k->gh;
    float *scratch = (float *)(void *)(c->area + (size_t)worker * k->proj_slice);
    for (size_t t = begin; t < end; t++) {
        int64_t row0 = (int64_t)t * k->proj_rows;
        int64_t rows = m - row0 < k->proj_rows ? m - row0 : k->proj_rows;
        if (k->input == 0) {
            /* No input features: the projection is the bias alone. */
            for (int64_t r = 0; r < rows; r++) {
                float *row = c->xw + (row0 + r) * n;
                if (c->bias != NULL)
                    memcpy(row, c->bias, (size_t)n * sizeof(float));
                else
                    memset(row, 0, (size_t)n * sizeof(float));
            }
            continue;
        }
        cpu_gemm_operand a = {.data = c->x + row0 * k->input, .ld = k->input};
        cpu_gemm_operand b = {.data = c->w, .ld = k->input, .trans = true};
        if (k->packed_w != NULL) {
            b.packed = k->packed_w;
            b.packed_k = k->input;
        }
        cpu_gemm_epilogue epi = {.col_bias = c->bias};
        cpu_gemm_ex(rows, n, k->input, 1.0f, &a, &b, 0.0f, c->xw + row0 * n, n, scratch, &epi);
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
static int64_t rnn_state_at(const rnn_kernel *k, int64_t d, int64_t b)
{
    return (k->layout ? b * k->dirs + d : d * k->batch + b) * k->hidden;
}

/* The same in Y (layout 0: [seq, dirs, batch, H]; 1: [batch, seq, dirs, H]). */
static int64_t rnn_y_at(const rnn_kernel *k, int64_t t, int64_t d, int64_t b)
{
    return (k->layout ? (b * k->seq + t) * k->dirs + d : (t * k->dirs + d) * k->batch + b) *
           k->hidden;
}

/* One LSTM step of one row: G holds the row's recurrent product (i, o, f,
 * c blocks), XW its projection; H and C are updated in place. */
static void rnn_lstm_row(const rnn_kernel *k, const rnn_act *act, const float *p, float *g,
                         const float *xw, float *h, float *c)
{
    const int64_t hs = k->hidden;
    float *gi = g, *go = g + hs, *gf = g + 2 * hs, *gc = g + 3 * hs;
    for (int64_t j = 0; j < 4 * hs; j++)
        g[j] += xw[j];
    if (p != NULL)
        for (int64_t j = 0; j < hs; j++) {
            gi[j] += p[j] * c[j];
            gf[j] += p[2 * hs + j] * c[j];
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
            go[j] += p[hs + j] * c[j];
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
            for (int64_t j = 0; j < hs; j++)
                hi[j] = gi[j] + xw[j];
            if (k->has_clip)
                rnn_clip(hi, hs, k->clip);
            rnn_act_apply(&act[0], hi, hs);
            break;
        case RNN_KIND_LSTM:
            rnn_lstm_row(k, act, p, gi, xw, hi, cs + i * hs);
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
        for (int64_t i = 0; i < rows; i++) {
            int64_t at = rnn_state_at(k, d, b0 + i);
            if (c->h0 != NULL)
                memcpy(h + i * hs, c->h0 + at, (size_t)hs * sizeof(float));
            else
                memset(h + i * hs, 0, (size_t)hs * sizeof(float));
            if (k->kind != RNN_KIND_LSTM)
                continue;
            if (c->c0 != NULL)
                memcpy(cs + i * hs, c->c0 + at, (size_t)hs * sizeof(float));
            else
                memset(cs + i * hs, 0, (size_t)hs * sizeof(float));
        }
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

/* The combined bias of the projection into BIAS: Wb + Rb per gate, except
 * GRU's hidden gate under linear_before_reset (Wbh only). */
static void rnn_fill_bias(const rnn_kernel *k, const float *b, float *bias)
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

static pl_status *rnn_run(pl_module_ctx *ctx, const pl_kernel *kernel, const pl_run_args *args)
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
        st = cpu_error(PL_CODE_OUT_OF_MEMORY, kernel->op, "out of memory for %zu bytes of workspace",
                       k->ws_total);
    if (st == NULL) {
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
                      .xw = (float *)(void *)ws.base,
                      .area = ws.base + k->ws_area};
        rnn_pack_r(k, &c, ws.base + k->ws_rpack);
        if (k->has_b) {
            const float *b = rnn_input(args, RNN_B, true);
            float *bias = (float *)(void *)(ws.base + k->ws_bias);
            rnn_fill_bias(k, b, bias);
            c.bias = bias;
            if (k->kind == RNN_KIND_GRU && k->lbr)
                c.rbh = b + k->gh + 2 * k->hidden;
        }
        if (k->proj_tasks > 0)
            cpu_host->parallel_for(ctx->host_ctx, (size_t)k->proj_tasks, 1, rnn_proj_chunk, &c);
        cpu_host->parallel_for(ctx->host_ctx, (size_t)(k->dirs * k->blocks), 1, rnn_rec_chunk, &c);
    }
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

/* ---- get_kernel ------------------------------------------------------------ */

/* The graph view, which get_kernel has (kernel.c checked it for ints). */
static const pl_graph_api *rnn_view(const pl_node_desc *node)
{
    const pl_graph_api *g = cpu_host->graph;
    if (node->graph == NULL || g == NULL || !PL_ABI_HAS_FN(pl_graph_api, g, attr_strings))
        return NULL;
    return g;
}

/* Reads the activations of NODE (COUNT per direction) into K->act. */
static pl_status *rnn_read_activations(const pl_node_desc *node, int count, rnn_kernel *k)
{
    static const char *const defaults[3][3] = {
        {"Tanh", NULL, NULL}, {"Sigmoid", "Tanh", NULL}, {"Sigmoid", "Tanh", "Tanh"}};
    const pl_graph_api *g = rnn_view(node);
    if (g == NULL)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "no graph view to read the activations from");
    const char *const *names = defaults[k->kind];
    size_t n = (size_t)count;
    const double *alphas = NULL, *betas = NULL;
    size_t n_alpha = 0, n_beta = 0;
    static const char *const attr[3] = {"activations", "activation_alpha", "activation_beta"};
    static const pl_graph_attr_kind kinds[3] = {PL_GRAPH_ATTR_STRINGS, PL_GRAPH_ATTR_FLOATS,
                                                PL_GRAPH_ATTR_FLOATS};
    for (int a = 0; a < 3; a++) {
        pl_graph_attr_kind have = g->attr_kind(node->graph, node->node_index, attr[a]);
        if (have == PL_GRAPH_ATTR_NONE)
            continue;
        if (have != kinds[a])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "attribute '%s' is not %s",
                             attr[a], a == 0 ? "a list of strings" : "a list of floats");
        if (a == 0)
            g->attr_strings(node->graph, node->node_index, attr[a], &names, &n);
        else
            g->attr_floats(node->graph, node->node_index, attr[a], a == 1 ? &alphas : &betas,
                           a == 1 ? &n_alpha : &n_beta);
    }
    if (n != (size_t)count && n != (size_t)(count * k->dirs))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "%zu activations; expected %d per direction (%lld in all)", n, count,
                         (long long)(count * k->dirs));
    size_t ia = 0, ib = 0;
    for (size_t i = 0; i < n; i++) {
        size_t f = 0;
        while (f < sizeof rnn_fns / sizeof rnn_fns[0] &&
               (names[i] == NULL || strcasecmp(names[i], rnn_fns[f].name) != 0))
            f++;
        if (f == sizeof rnn_fns / sizeof rnn_fns[0])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                             "activation '%s' is not one of Relu, Tanh, Sigmoid, Affine, "
                             "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, "
                             "Softsign, Softplus",
                             names[i] ? names[i] : "");
        rnn_act a = {rnn_fns[f].fn, rnn_fns[f].alpha, rnn_fns[f].beta};
        if (rnn_fns[f].has_alpha && ia < n_alpha)
            a.alpha = (float)alphas[ia++];
        if (rnn_fns[f].has_beta && ib < n_beta)
            a.beta = (float)betas[ib++];
        k->act[i / (size_t)count][i % (size_t)count] = a;
    }
    if (n == (size_t)count && k->dirs == 2)
        memcpy(k->act[1], k->act[0], sizeof k->act[0]);
    return NULL;
}

/* Reads direction, layout, hidden_size, clip and the op's flags. */
static pl_status *rnn_read_attrs(const pl_node_desc *node, rnn_kernel *k)
{
    const char *dir;
    size_t len;
    NN_TRY(nn_attr_string(node, "direction", "forward", &dir, &len));
    if (len == 7 && memcmp(dir, "forward", 7) == 0) {
        k->dirs = 1;
    } else if (len == 7 && memcmp(dir, "reverse", 7) == 0) {
        k->dirs = 1;
        k->reverse = true;
    } else if (len == 13 && memcmp(dir, "bidirectional", 13) == 0) {
        k->dirs = 2;
    } else {
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "direction '%.*s' is not forward, reverse or bidirectional", (int)len,
                         dir);
    }
    int64_t layout, lbr = 0, input_forget = 0;
    NN_TRY(cpu_attr_int(node, "layout", 0, &layout));
    if (layout != 0 && layout != 1)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "layout %lld is not 0 or 1",
                         (long long)layout);
    k->layout = layout == 1;
    if (k->kind == RNN_KIND_GRU)
        NN_TRY(cpu_attr_int(node, "linear_before_reset", 0, &lbr));
    if (k->kind == RNN_KIND_LSTM)
        NN_TRY(cpu_attr_int(node, "input_forget", 0, &input_forget));
    k->lbr = lbr != 0;
    k->input_forget = input_forget != 0;
    double clip;
    NN_TRY(cpu_attr_float(node, "clip", -1.0, &clip));
    const pl_graph_api *g = rnn_view(node);
    k->has_clip = g != NULL && g->attr_kind(node->graph, node->node_index, "clip") != 0;
    if (k->has_clip && !(clip >= 0.0))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "clip %g is not a threshold >= 0",
                         clip);
    k->clip = (float)clip;
    return NULL;
}

/* Fails unless tensor T (input or output NAME) has the N dims of WANT. */
static pl_status *rnn_expect(const pl_node_desc *node, const pl_tensor *t, const char *name,
                             int n, const int64_t *want)
{
    bool ok = t->ndim == n;
    for (int d = 0; ok && d < n; d++)
        ok = t->shape[d] == want[d];
    if (ok)
        return NULL;
    char have[128], exp[128];
    return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s is %s, expected %s", name,
                     cpu_dims_text(t->shape, t->ndim, have, sizeof have),
                     cpu_dims_text(want, n, exp, sizeof exp));
}

/* Reads the sizes from X and R and checks every other input and output
 * against them; also the dtypes (f32, sequence_lens i32). */
static pl_status *rnn_read_shapes(const pl_node_desc *node, rnn_kernel *k, bool *present_out)
{
    static const char *const in_names[8] = {"X", "W", "R", "B", "sequence_lens", "initial_h",
                                            "initial_c", "P"};
    static const char *const out_names[3] = {"Y", "Y_h", "Y_c"};
    bool present[8] = {false};
    for (size_t i = 0; i < node->n_inputs && i < 8; i++) {
        present[i] = math_input_present(node, i);
        if (!present[i])
            continue;
        pl_dtype want = i == RNN_LENS ? PL_DTYPE_I32 : PL_DTYPE_F32;
        if (!PL_DTYPE_EQ(node->inputs[i].dtype, want))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: %s)",
                             in_names[i], math_dtype_name(node->inputs[i].dtype),
                             i == RNN_LENS ? "i32" : "f32");
    }
    for (size_t o = 0; o < node->n_outputs; o++) {
        present_out[o] = math_output_present(node, o);
        if (present_out[o] && !PL_DTYPE_EQ(node->outputs[o].dtype, PL_DTYPE_F32))
            return cpu_error(PL_CODE_UNSUPPORTED, node->op, "%s has dtype %s (supported: f32)",
                             o < 3 ? out_names[o] : "output",
                             math_dtype_name(node->outputs[o].dtype));
    }
    if (node->n_outputs > (k->kind == RNN_KIND_LSTM ? 3u : 2u))
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%zu outputs (at most %d)",
                         node->n_outputs, k->kind == RNN_KIND_LSTM ? 3 : 2);
    for (int i = 0; i < 3; i++)
        if (!present[i])
            return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "input %s is absent",
                             in_names[i]);
    const pl_tensor *x = &node->inputs[RNN_X], *r = &node->inputs[RNN_R];
    char buf[128];
    if (x->ndim != 3 || r->ndim != 3)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%s %s must have rank 3",
                         x->ndim != 3 ? "X" : "R",
                         cpu_dims_text(x->ndim != 3 ? x->shape : r->shape,
                                       x->ndim != 3 ? x->ndim : r->ndim, buf, sizeof buf));
    k->seq = x->shape[k->layout ? 1 : 0];
    k->batch = x->shape[k->layout ? 0 : 1];
    k->input = x->shape[2];
    k->hidden = r->shape[2];
    if (k->hidden <= 0)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "R %s has hidden size 0",
                         cpu_dims_text(r->shape, r->ndim, buf, sizeof buf));
    int64_t hidden_attr;
    NN_TRY(cpu_attr_int(node, "hidden_size", k->hidden, &hidden_attr));
    if (hidden_attr != k->hidden)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op,
                         "hidden_size %lld but R %s has hidden size %lld", (long long)hidden_attr,
                         cpu_dims_text(r->shape, r->ndim, buf, sizeof buf), (long long)k->hidden);
    const int64_t d = k->dirs, h = k->hidden, b = k->batch, gh = k->gates * h;
    k->gh = gh;
    const int64_t w_dims[3] = {d, gh, k->input}, r_dims[3] = {d, gh, h}, b_dims[2] = {d, 2 * gh},
                  l_dims[1] = {b}, p_dims[2] = {d, 3 * h};
    const int64_t s_dims[3] = {k->layout ? b : d, k->layout ? d : b, h};
    NN_TRY(rnn_expect(node, &node->inputs[RNN_W], "W", 3, w_dims));
    NN_TRY(rnn_expect(node, r, "R", 3, r_dims));
    const int64_t *dims_of[8] = {NULL, NULL, NULL, b_dims, l_dims, s_dims, s_dims, p_dims};
    const int rank_of[8] = {0, 0, 0, 2, 1, 3, 3, 2};
    for (size_t i = RNN_B; i < 8; i++)
        if (present[i])
            NN_TRY(rnn_expect(node, &node->inputs[i], in_names[i], rank_of[i], dims_of[i]));
    const int64_t y_dims[4] = {k->layout ? b : k->seq, k->layout ? k->seq : d,
                               k->layout ? d : b, h};
    for (size_t o = 0; o < node->n_outputs; o++)
        if (present_out[o])
            NN_TRY(rnn_expect(node, &node->outputs[o], out_names[o], o == 0 ? 4 : 3,
                              o == 0 ? y_dims : s_dims));
    k->has_b = present[RNN_B];
    k->has_lens = present[RNN_LENS];
    k->has_h0 = present[RNN_H0];
    k->has_c0 = present[RNN_C0];
    k->has_p = present[RNN_P];
    return NULL;
}

/* Plans the tasks and the workspace; false on overflow. */
static bool rnn_plan(pl_module_ctx *ctx, rnn_kernel *k)
{
    int threads = cpu_host->thread_count(ctx->host_ctx);
    k->threads = threads > 0 ? threads : 1;
    int64_t m = k->seq * k->batch, n = k->dirs * k->gh;
    /* The projection: about a task per thread, in blocks of whole rows. */
    int64_t per = (m + k->threads - 1) / k->threads;
    k->proj_rows = per > RNN_PROJ_MIN_ROWS ? per : RNN_PROJ_MIN_ROWS;
    k->proj_tasks = m > 0 && n > 0 ? (m + k->proj_rows - 1) / k->proj_rows : 0;
    int64_t slice_rows = k->proj_rows < m ? k->proj_rows : m;
    if (!rnn_floats_bytes(cpu_gemm_scratch_floats(slice_rows, n, false, k->packed_w != NULL),
                          &k->proj_slice))
        return false;
    /* The recurrence: directions times blocks of batch rows, about one
     * task per thread. */
    int64_t want = (k->threads + k->dirs - 1) / k->dirs;
    k->blocks = k->batch < want ? k->batch : want;
    if (k->blocks < 1)
        k->blocks = 1;
    k->block_rows = k->batch > 0 ? (k->batch + k->blocks - 1) / k->blocks : 1;
    k->blocks = k->batch > 0 ? (k->batch + k->block_rows - 1) / k->block_rows : 1;
    const size_t rows = (size_t)k->block_rows, hs = (size_t)k->hidden;
    bool two_phase = k->kind == RNN_KIND_GRU && !k->lbr;
    /* R is always packed by the time the recurrence runs (see rnn_run). */
    size_t scratch = cpu_gemm_scratch_floats(k->block_rows, k->n_rec, false, true);
    if (two_phase) {
        size_t s2 = cpu_gemm_scratch_floats(k->block_rows, k->hidden, false, true);
        scratch = s2 > scratch ? s2 : scratch;
    }
    size_t total = 0, f;
    bool ok = !__builtin_mul_overflow(rows, hs, &f) && rnn_place(&total, f, &k->off_h) &&
              rnn_place(&total, k->kind == RNN_KIND_LSTM ? f : 0, &k->off_c) &&
              rnn_place(&total, two_phase ? f : 0, &k->off_rh) &&
              rnn_place(&total, two_phase ? f : 0, &k->off_rec2) &&
              !__builtin_mul_overflow(rows, (size_t)k->n_rec, &f) &&
              rnn_place(&total, f, &k->off_gates) && rnn_place(&total, scratch, &k->off_scratch);
    k->task_bytes = total;
    /* The workspace: the projection, the bias, R packed for the run (when
     * it is not a constant), then the larger of the projection's slices and
     * the tasks' areas (the phases do not overlap). */
    size_t ws = 0, xw, proj, tasks, off_xw, rpack;
    ok = ok && !__builtin_mul_overflow((size_t)m, (size_t)n, &xw) && rnn_place(&ws, xw, &off_xw) &&
         rnn_place(&ws, k->has_b ? (size_t)n : 0, &k->ws_bias) &&
         rnn_floats_bytes(k->packed_r[0] ? 0 : cpu_gemm_packed_b_floats(k->hidden, k->n_rec),
                          &k->rpack_r) &&
         rnn_floats_bytes(k->packed_r[0] || !two_phase
                              ? 0
                              : cpu_gemm_packed_b_floats(k->hidden, k->hidden),
                          &k->rpack_rh) &&
         rnn_place(&ws, 0, &k->ws_rpack) &&
         !__builtin_add_overflow(k->rpack_r, k->rpack_rh, &rpack) &&
         !__builtin_mul_overflow(rpack, (size_t)k->dirs, &rpack) &&
         !__builtin_add_overflow(ws, rpack, &ws) &&
         !__builtin_mul_overflow(k->proj_slice, (size_t)k->threads, &proj) &&
         !__builtin_mul_overflow(k->task_bytes, (size_t)(k->dirs * k->blocks), &tasks);
    k->ws_area = ws;
    ok = ok && !__builtin_add_overflow(ws, proj > tasks ? proj : tasks, &k->ws_total);
    return ok;
}

/* Packs W and R for the GEMM into the kernel's block when they are
 * constants of the graph; allocates the kernel either way. */
static rnn_kernel *rnn_alloc(pl_module_ctx *ctx, const pl_node_desc *node, const rnn_kernel *tmpl)
{
    const void *wd = NULL, *rd = NULL;
    size_t wb = 0, rb = 0;
    const int64_t d = tmpl->dirs, gh = tmpl->gh, in = tmpl->input, hs = tmpl->hidden;
    bool two_phase = tmpl->kind == RNN_KIND_GRU && !tmpl->lbr;
    bool w_const = math_input_constant(node, RNN_W, &wd, &wb) &&
                   wb >= (size_t)(d * gh * in) * sizeof(float) && in > 0;
    bool r_const = math_input_constant(node, RNN_R, &rd, &rb) &&
                   rb >= (size_t)(d * gh * hs) * sizeof(float);
    size_t head = (sizeof(rnn_kernel) + 63) & ~(size_t)63;
    size_t w_floats = w_const ? cpu_gemm_packed_b_floats(in, d * gh) : 0;
    size_t r_floats = r_const ? cpu_gemm_packed_b_floats(hs, tmpl->n_rec) : 0;
    size_t rh_floats = r_const && two_phase ? cpu_gemm_packed_b_floats(hs, hs) : 0;
    size_t bytes = head, part;
    size_t parts[5] = {w_floats, r_floats, r_floats, rh_floats, rh_floats};
    for (size_t i = 0; i < 5; i++)
        if ((i == 2 || i == 4) && d < 2)
            parts[i] = 0;
    for (size_t i = 0; i < 5; i++)
        if (!rnn_floats_bytes(parts[i], &part) || __builtin_add_overflow(bytes, part, &bytes))
            return NULL;
    rnn_kernel *k = (rnn_kernel *)cpu_kernel_alloc(ctx, bytes, node->op, NULL);
    if (k == NULL)
        return NULL;
    pl_kernel base = k->base;
    *k = *tmpl;
    k->base = base;
    char *at = (char *)k + head;
    if (w_const) {
        float *buf = (float *)(void *)at;
        cpu_gemm_pack_b(in, d * gh, (const float *)wd, in, true, buf);
        k->packed_w = buf;
        rnn_floats_bytes(w_floats, &part);
        at += part;
    }
    for (int64_t dir = 0; r_const && dir < d; dir++) {
        const float *r = (const float *)rd + dir * gh * hs;
        float *buf = (float *)(void *)at;
        cpu_gemm_pack_b(hs, tmpl->n_rec, r, hs, true, buf);
        k->packed_r[dir] = buf;
        rnn_floats_bytes(r_floats, &part);
        at += part;
        if (two_phase) {
            buf = (float *)(void *)at;
            cpu_gemm_pack_b(hs, hs, r + 2 * hs * hs, hs, true, buf);
            k->packed_rh[dir] = buf;
            rnn_floats_bytes(rh_floats, &part);
            at += part;
        }
    }
    return k;
}

static pl_status *rnn_build(pl_module_ctx *ctx, const pl_node_desc *node, pl_kernel **out_kernel)
{
    rnn_kernel t;
    memset(&t, 0, sizeof t);
    t.kind = strcmp(node->op, "LSTM") == 0  ? RNN_KIND_LSTM
             : strcmp(node->op, "GRU") == 0 ? RNN_KIND_GRU
                                            : RNN_KIND_RNN;
    t.gates = t.kind == RNN_KIND_LSTM ? 4 : t.kind == RNN_KIND_GRU ? 3 : 1;
    bool present_out[8] = {false};
    if (node->n_outputs > 8)
        return cpu_error(PL_CODE_INVALID_ARGUMENT, node->op, "%zu outputs", node->n_outputs);
    NN_TRY(rnn_read_attrs(node, &t));
    NN_TRY(rnn_read_shapes(node, &t, present_out));
    NN_TRY(rnn_read_activations(node, t.kind == RNN_KIND_LSTM ? 3 : t.kind == RNN_KIND_GRU ? 2 : 1,
                                &t));
    t.n_rec = t.kind == RNN_KIND_GRU && !t.lbr ? 2 * t.hidden : t.gh;
    /* Sizes the GEMM's int64 arithmetic and size_t counts must hold. */
    size_t n;
    if (__builtin_mul_overflow((size_t)t.seq, (size_t)t.batch, &n) ||
        __builtin_mul_overflow(n, (size_t)(t.dirs * t.gh), &n) ||
        __builtin_mul_overflow((size_t)(t.dirs * t.gh), (size_t)(t.input + t.hidden), &n))
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large");
    rnn_kernel *k = rnn_alloc(ctx, node, &t);
    if (k == NULL)
        return cpu_error(PL_CODE_OUT_OF_MEMORY, node->op, "out of memory for the kernel");
    if (!rnn_plan(ctx, k)) {
        cpu_host->host_free(ctx->host_ctx, k);
        return cpu_error(PL_CODE_UNSUPPORTED, node->op, "sizes too large for the workspace");
    }
    k->base.run_any = rnn_run;
    k->base.n_reads = 3;
    k->base.n_outputs = node->n_outputs;
    k->base.out_elements = 0;
    k->base.workspace_bytes = k->ws_total;
    *out_kernel = &k->base;
    return NULL;
}
