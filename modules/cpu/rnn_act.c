/* rnn_act.c — the activation functions of ONNX's recurrent ops (Relu,
 * Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
 * HardSigmoid, Elu, Softsign, Softplus) applied in place to a gate's
 * values, for the cpu module's RNN, GRU and LSTM kernels (rnn.c). Sigmoid
 * and tanh, the ones every default uses, are written with 8-lane vector
 * types, and the loops are built for the baseline target and for
 * AVX2+FMA, chosen at first use. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "fastmath.h"
#include "rnn.h"

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

/* tanh that vectorises: fastmath.h's. */
#define rnn_tanh cpu_tanhf

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
        e_y_ = RNN_SEL(e_x_ < RNN_SPLAT(-87.33654f), RNN_SPLAT(0.0f), e_y_);                \
        e_y_ = RNN_SEL(e_x_ > RNN_SPLAT(88.72284f), RNN_SPLAT(INFINITY), e_y_);             \
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
    rnn_v8 p = x2 * (-17.0f / 315.0f + x2 * (62.0f / 2835.0f));
    p = v * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f + p)));
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

#endif

void rnn_act_apply(const rnn_act *a, float *x, int64_t n)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (cpu_has_isa(CPU_ISA_AVX2_FMA)) {
        rnn_act_avx2(a, x, n);
        return;
    }
#endif
    rnn_act_base(a, x, n);
}

void rnn_clip(float *x, int64_t n, float bound)
{
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        v = v < -bound ? -bound : v;
        x[i] = v > bound ? bound : v;
    }
}

bool rnn_act_named(const char *name, rnn_act *out, bool *out_takes_alpha, bool *out_takes_beta)
{
    for (size_t f = 0; f < sizeof rnn_fns / sizeof rnn_fns[0]; f++) {
        if (name == NULL || strcasecmp(name, rnn_fns[f].name) != 0)
            continue;
        *out = (rnn_act){rnn_fns[f].fn, rnn_fns[f].alpha, rnn_fns[f].beta};
        *out_takes_alpha = rnn_fns[f].has_alpha;
        *out_takes_beta = rnn_fns[f].has_beta;
        return true;
    }
    return false;
}
