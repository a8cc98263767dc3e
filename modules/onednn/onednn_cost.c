/* onednn_cost.c — the module's estimate of what a subgraph costs per run
 * (pl_module_api.estimate_cost, ABI 1.3), for the core's cost-aware
 * placement: it weighs this against the same nodes on the backends after
 * onednn, so the estimate has to be right about the cases where oneDNN is
 * slower than a plain kernel, not only where it is fast.
 *
 * The model starts from plinth/cost.h's FLOPs and bytes and scales them by
 * what was measured with oneDNN 2.6 on this project's machine (one thread,
 * `plinth bench` on single-op models against the cpu module, whose rates
 * are about cost.h's defaults):
 *   - convolutions with a spatial kernel: twice the default rate (64
 *     channels, 3x3, 56x56: 1.08 ms against 2.45 ms; resnet18 21 ms against
 *     43 ms); 1x1 convolutions and matrix products, where the cpu module's
 *     GEMM is as good: 1.3 times (64 channels at 28x28: 57 us a layer on
 *     both, 112 GFLOP/s);
 *   - memory-bound primitives (depthwise convolutions, pooling, eltwise,
 *     normalisations) at 2.5 times the default bandwidth (a depthwise 3x3
 *     at 64x28x28: 11 us a layer against 33 us), and an eltwise or binary
 *     op (or a QDQ pair) that follows a product (or a post-op of one) is
 *     free: it becomes a post-op; a QDQ pair ends such a chain; after a
 *     binary of its own, an activation or an operation by a constant is
 *     free too (odnn_binary_pd: tf_densenet's Mul -> Add -> Relu is one
 *     pass);
 *   - RNN, GRU, LSTM: the default rate, plus 2 us of setup and 1 us per
 *     time step and direction with AVX-512 (a GRU of 20 steps, hidden 32:
 *     27 us against 11 us on cpu; at 50 steps of hidden 256 oneDNN is 7%
 *     faster), 2.5 us below it (an AVX2 EPYC, ONEDNN_VERBOSE medians: a
 *     bidirectional LSTM of 29 steps, hidden 24, batch 3 176 us against
 *     104 on cpu; 30 steps of hidden 16, batch 2, 57 us);
 *   - reductions and softmax over a plain source cost per row of the
 *     reduced axis (ODNN_COST_REDUCE_ROW_US, ODNN_COST_SOFTMAX_ROW_US); a
 *     mean or sum over trailing axes is emitted as a product by a constant
 *     vector where that is faster (onednn_reduce_by_matmul), and costed so;
 *   - views (Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Identity,
 *     Split) cost nothing;
 *   - each primitive its kind's launch cost (ODNN_COST_*_US: an eltwise
 *     0.3 us, a binary 1.0, a reduction 3.0, a softmax 2.0, ...; measured
 *     with ONEDNN_VERBOSE on vit_s_qdq, whose QDQ pairs leave every op of
 *     its LayerNorms and GELUs a primitive of its own), the subgraph one
 *     core dispatch; the nodes of a pattern the compile makes one
 *     primitive of (a decomposed LayerNorm or GELU: onednn_fused_roles)
 *     cost one primitive, and a LayerNorm over an NCHW tensor's channels
 *     two reorders more (its NHWC copy and back);
 *   - with a convolution inside, every 4-d or 5-d tensor crossing the
 *     boundary is reordered between plain and blocked layouts, read and
 *     written at about 40 GB/s (a 1x1 convolution's subgraph at
 *     64x28x28 spends 20 us on its 400 KB of boundary);
 *   - a view (Slice, Reshape, ...) of a convolution's blocked result is
 *     taken in the plain layout: a reorder out and, for the next
 *     convolution, one back, each about 4 us however small (ONEDNN_VERBOSE
 *     on tcn, whose causal 1-D convolutions are padded and sliced: 4-7 us
 *     for each reorder of 2x48x64; the subgraph ran 0.23-0.27 ms against
 *     0.20 on cpu while estimated at half of cpu's time).
 * The numbers are a prior, not a promise; bench/zoo.py is what checks that
 * the placements they lead to are never slower than `order = cpu`. */
#include "onednn.h"

#include <plinth/cost.h>

#include <stdlib.h>
#include <string.h>

/* The calibration (header comment): rates as multiples of cost.h's
 * defaults, times in microseconds. */
#define ODNN_COST_KERNEL_RATE 2.0   /* convolutions with a spatial kernel */
#define ODNN_COST_GEMM_RATE 1.3     /* 1x1 convolutions and matrix products */
#define ODNN_COST_BW 2.5            /* memory-bound primitives */
/* Plain <-> blocked, read and written: 40 GB/s was measured on one
 * subgraph; ONEDNN_VERBOSE across the zoos (2026-11-30, AVX-512 Xeon, 2
 * threads) gave 4.5-8 GB/s of the tensor's bytes for the reorders around
 * tf_unet's and tf_densenet's convolutions (1x24x64x64: 88 us, 1x72x48x48:
 * 129 us, 1x2x64x64: 18 us), which also cost about ODNN_COST_REORDER_US
 * each however small. */
#define ODNN_COST_REORDER_GBPS 8.0
#define ODNN_COST_PRIMITIVE_US 0.2
/* What every primitive costs beyond what ONEDNN_VERBOSE times: the call
 * through dnnl_primitive_execute (its argument map, scratchpad grantor,
 * allocations) and the module's own step loop. vit_s_qdq all on onednn:
 * steps 410 us a run against 290 us of primitive times over 148
 * primitives. */
#define ODNN_COST_EXEC_US 0.8
#define ODNN_COST_RNN_SETUP_US 2.0
#define ODNN_COST_RNN_STEP_US 1.0
#define ODNN_COST_RNN_STEP_AVX2_US 2.5
/* Every step re-reads each direction's recurrent weights R; beyond a
 * core's cache (PL_COST_CACHE_BYTES) they come from memory, one step after
 * another: a bidirectional LSTM 512 wide (4 MB of R a direction) took
 * 7.15 ms over 24 steps on 2 threads (192 MB: 28 GB/s), estimated at 1.25
 * from its FLOPs, and placement kept it there against 2.5 ms on cpu. */
#define ODNN_COST_RNN_GBPS 28.0
#define ODNN_COST_REORDER_US 4.0    /* one reorder primitive, beyond its bytes */
/* What one primitive of a kind costs beyond its bytes on a small tensor
 * (ONEDNN_VERBOSE's times on vit_s_qdq, [17, 64] activations, summed
 * over 48 runs: a binary 1.2 us, a reduction 3.5, a softmax 2.5, a concat
 * 2.2, an eltwise 0.5 (0.3 the session before)); ODNN_COST_PRIMITIVE_US
 * for the rest; each with ODNN_COST_EXEC_US on top. */
#define ODNN_COST_ELTWISE_US 0.5
#define ODNN_COST_BINARY_US 1.0
#define ODNN_COST_REDUCE_US 3.0
#define ODNN_COST_SOFTMAX_US 2.0
#define ODNN_COST_CONCAT_US 2.0
#define ODNN_COST_NORM_US 1.5
/* What making one primitive costs once, when the subgraph compiles: its
 * descriptor (oneDNN's implementation search) and its JIT code, in wall
 * time at two threads (onednn_sg_compile's debug line, weights laid out
 * already: a 2-layer BERT's tail at a new length, 59 primitives in 6.5 ms;
 * mp_hand_recrop, 74 in 8.1 ms). Reported as pl_cost.prepare_us, which
 * placement weighs only for plans that serve few runs. */
#define ODNN_COST_MAKE_US 110.0

/* Reductions and softmax over the innermost axes of a plain tensor cost
 * per row, not per byte (ONEDNN_VERBOSE, single-op models, 2 threads): a
 * ReduceMean over the last axis took 3.9 us for 17 rows of 64, 10 for 48,
 * 39 for 200, 97 for 1000 (the cpu module: 0.5-7 us), a GlobalAveragePool
 * of 576 channels at 7x7 taken as that reduction 124 us (cpu 5); a Softmax
 * 5.1 us for 68 rows of 17, 11 for 192 rows of 24, 213 for 2364 rows of
 * 197. A product by a constant [K, 1] vector does the mean or sum at
 * about 18 GB/s of its source (576x49: 6.1 us, 1000x64: 11, 256x196: 11)
 * until K grows long (2x151296: 1.1 ms; at 64x3136 the reduction's 23 us
 * beats its 37). */
#define ODNN_COST_REDUCE_ROW_US 0.22
#define ODNN_COST_SOFTMAX_ROW_US 0.045
#define ODNN_COST_REDUCE_MM_GBPS 18.0
#define ODNN_COST_REDUCE_MM_MAX_K 4096
#define ODNN_COST_REDUCE_MM_US 1.5

double onednn_reduce_us(int64_t rows, int64_t k)
{
    double bytes = 4.0 * (double)rows * (double)k;
    return ODNN_COST_REDUCE_US - 1.0 + ODNN_COST_REDUCE_ROW_US * (double)rows +
           bytes / (ODNN_COST_BW * PL_COST_GBPS * 1e3);
}

static double odnn_cost_reduce_mm_us(int64_t rows, int64_t k)
{
    return ODNN_COST_REDUCE_MM_US + 4.0 * (double)rows * (double)k /
                                        (ODNN_COST_REDUCE_MM_GBPS * 1e3);
}

int onednn_reduce_by_matmul(int64_t rows, int64_t k)
{
    return k >= 1 && k <= ODNN_COST_REDUCE_MM_MAX_K &&
           odnn_cost_reduce_mm_us(rows, k) < onednn_reduce_us(rows, k);
}

static int odnn_cost_is(const char *op, const char *const *list)
{
    for (; *list != NULL; list++)
        if (strcmp(op, *list) == 0)
            return 1;
    return 0;
}

static const char *const odnn_cost_views[] = {"Reshape", "Flatten",   "Transpose", "Squeeze",
                                              "Unsqueeze", "Identity", "Split",    "Slice", "Gather", NULL};
static const char *const odnn_cost_products[] = {"Conv", "ConvTranspose", "MatMul", "Gemm",
                                                 NULL};
static const char *const odnn_cost_rnns[] = {"RNN", "GRU", "LSTM", NULL};
/* Ops that become post-ops of a product they read (odnn_follow): eltwise,
 * binary and QuantizeLinear -> DequantizeLinear pairs. */
static const char *const odnn_cost_eltwise[] = {
    "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Celu", "Selu", "Exp", "Log", "Sqrt",
    "Abs", "Clip", "HardSigmoid", "HardSwish", "Softplus", "Neg", "Round", "Erf", "Reciprocal",
    "Pow", "Mish", "Gelu", "Identity", "Dropout", "DequantizeLinear", "Cast", NULL};
static const char *const odnn_cost_binaries[] = {"Add", "Sub", "Mul", "Div", "Max", "Min",
                                                 "PRelu", "QuantizeLinear", NULL};
static const char *const odnn_cost_reductions[] = {
    "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
    "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum", NULL};
static const char *const odnn_cost_softmaxes[] = {"Softmax", "LogSoftmax", NULL};
static const char *const odnn_cost_norms[] = {"LayerNormalization", "BatchNormalization",
                                              "InstanceNormalization", "GroupNormalization",
                                              "LRN", NULL};

/* Whether binary node N's other operand is a constant (a one-value or
 * per-channel operand a binary takes as a post-op). */
static int odnn_cost_const_operand(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    for (size_t k = 0; k < g->node_input_count(v, n) && k < 2; k++) {
        const void *data;
        size_t bytes;
        int64_t t = g->node_input(v, n, k);
        if (t >= 0 && g->tensor_constant(v, t, &data, &bytes))
            return 1;
    }
    return 0;
}

/* What one primitive of OP costs to launch (ODNN_COST_*_US), less the
 * call itself (ODNN_COST_EXEC_US). */
static double odnn_cost_launch(const char *op)
{
    if (odnn_cost_is(op, odnn_cost_eltwise))
        return ODNN_COST_ELTWISE_US;
    if (odnn_cost_is(op, odnn_cost_binaries))
        return ODNN_COST_BINARY_US;
    if (odnn_cost_is(op, odnn_cost_reductions))
        return ODNN_COST_REDUCE_US;
    if (odnn_cost_is(op, odnn_cost_softmaxes))
        return ODNN_COST_SOFTMAX_US;
    if (strcmp(op, "Concat") == 0)
        return ODNN_COST_CONCAT_US;
    if (odnn_cost_is(op, odnn_cost_norms))
        return ODNN_COST_NORM_US;
    return ODNN_COST_PRIMITIVE_US;
}

/* What reduction N (a Reduce* node, or GlobalAveragePool of a plain
 * source) costs beyond its launch as the module emits it: rows of the
 * reduced values, a product by a constant vector where that is faster
 * (onednn_reduce_by_matmul), the per-row reduction otherwise. -1 when its
 * dims or axes are not known. */
static double odnn_cost_reduction(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                  const char *op)
{
    int64_t x[8];
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 0), x);
    if (r < 1)
        return -1;
    unsigned mask = 0;
    if (strcmp(op, "GlobalAveragePool") == 0) {
        for (int32_t d = 2; d < r; d++)
            mask |= 1u << d;
    } else {
        const int64_t *axes = NULL;
        size_t na = 0;
        const void *data = NULL;
        size_t cb = 0;
        if (g->node_input_count(v, n) > 1 && g->node_input(v, n, 1) >= 0) {
            if (!g->tensor_constant(v, g->node_input(v, n, 1), &data, &cb) || cb % 8 != 0)
                return -1;
            axes = data;
            na = cb / 8;
        } else {
            g->attr_ints(v, n, "axes", &axes, &na);
        }
        for (size_t k = 0; k < na; k++) {
            int64_t a = axes[k] < 0 ? axes[k] + r : axes[k];
            if (a < 0 || a >= r)
                return -1;
            mask |= 1u << a;
        }
        if (na == 0)
            mask = (1u << r) - 1;
    }
    /* rows: the kept values; K: the reduced ones, when they trail or are
     * one run of adjacent axes (RUNS counts the runs) */
    int64_t rows = 1, k = 1;
    int trailing = 1, seen = 0, runs = 0, in_run = 0;
    for (int32_t d = 0; d < r; d++) {
        if (x[d] == 1)
            continue;
        if (mask >> d & 1u) {
            k *= x[d];
            seen = 1;
            runs += !in_run;
            in_run = 1;
        } else {
            rows *= x[d];
            trailing = trailing && !seen;
            in_run = 0;
        }
    }
    int by_sum = strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0 ||
                 strcmp(op, "GlobalAveragePool") == 0;
    if (by_sum && trailing && onednn_reduce_by_matmul(rows, k))
        return odnn_cost_reduce_mm_us(rows, k);
    /* kept axes after the run: always the product (the reduction primitive
     * has only its reference kernel there) */
    if (by_sum && !trailing && runs == 1 && strcmp(op, "GlobalAveragePool") != 0)
        return odnn_cost_reduce_mm_us(rows, k);
    return onednn_reduce_us(rows, k);
}

/* A Softmax's time beyond its bytes: per row of its axis. */
static double odnn_cost_softmax(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t x[8], axis = -1;
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 0), x);
    g->attr_int(v, n, "axis", &axis);
    if (axis < 0)
        axis += r;
    if (r < 1 || axis < 0 || axis >= r || x[axis] < 1)
        return ODNN_COST_SOFTMAX_US;
    double rows = pl_cost_elems(g, v, g->node_input(v, n, 0), NULL) / (double)x[axis];
    return ODNN_COST_SOFTMAX_US + ODNN_COST_SOFTMAX_ROW_US * rows;
}

/* Below AVX-512, what oneDNN's jit:avx2 convolution (one group, a kernel
 * wider than 1x1, 2-D, where the module's own direct kernel does not take
 * it) loses to its blocks of 8 channels: output channels padded to 8, input
 * channels too past the stems' 4, and a loop over 8 or 16 output channels
 * that holds too few accumulators for the loads it makes (its own rate
 * falls from 130 GFLOP/s at 4 blocks to about 55). On an AVX2 EPYC, 2
 * threads, single-op models: 8 -> 8 channels 3x3 on 112x112 0.24 ms, 7x7
 * 1.17 ms; 12 -> 12 5x5 on 64x64 0.57 ms; basic_pitch's 8 -> 1 5x5 on
 * 172x264 2.8 ms and 33 -> 1 3x3 on 172x88 1.9 ms (the cpu module 1.29
 * and 0.91; this said 0.11 and 0.06 before); 1 -> 1 channel, 256 taps at
 * stride 2 over 44098 samples 2.7 ms (cpu 0.19). Wider outputs keep the
 * rate they were measured at. */
static double odnn_cost_avx2_blocks(const pl_module_ctx *ctx, const pl_graph_api *g,
                                    const pl_graph_view *v, size_t n, int32_t r, const int64_t *w)
{
    int64_t group = 1;
    g->attr_int(v, n, "group", &group);
    int64_t oc = w[0], ic = w[1];
    if (r != 4 || group != 1 || w[2] * w[3] < 2 || oc > 16 ||
        (ctx->direct && odnn_direct_usable() && odnn_direct_channels(ic, oc)))
        return 1;
    double f = (double)((oc + 7) / 8 * 8) / (double)oc;
    if (ic > 4)
        f *= (double)((ic + 7) / 8 * 8) / (double)ic;
    return f * (oc > 8 ? 1.7 : 2.8);
}

/* How much of a convolution's work its channel blocks waste: with
 * AVX-512, oneDNN's convolutions compute channels in blocks of 16, so 8
 * output channels cost 16 (tf_unet's 24 -> 8 channel 3x3 convolution at
 * 64x64: 198 us, 72 GFLOP/s on 2 threads; its 8 -> 2 1x1 one 60 us for
 * 0.26 MFLOP). Input channels count too, but for stems of at most 4
 * (their own kernels); a grouped convolution's blocks are per group. */
static double odnn_cost_channel_padding(const pl_module_ctx *ctx, const pl_graph_api *g,
                                        const pl_graph_view *v, size_t n)
{
    int64_t w[8], group = 1;
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 1), w);
    if (strcmp(g->node_op(v, n), "Conv") != 0 || r < 3 || w[0] < 1 || w[1] < 1)
        return 1;
    if (!onednn_has_avx512())
        return odnn_cost_avx2_blocks(ctx, g, v, n, r, w);
    g->attr_int(v, n, "group", &group);
    if (group < 1 || w[0] % group != 0 || (group > 1 && w[1] == 1))
        return 1; /* depthwise: memory-bound, blocked across groups */
    /* the narrow kernel (onednn_narrow.c) takes at most 8 output
     * channels unpadded: its vector work against the multiply-adds, at
     * about 0.7 of oneDNN's FMA rate (basic_pitch's 8 -> 8 channel 3x39
     * layer 2.6 ms against 4.1 in 16-channel blocks, 32 -> 1 7x3 on
     * 172x88 0.33 against 1.11) */
    int64_t kh = r == 4 ? w[2] : 1, kw = w[r - 1], dw = 1;
    const int64_t *dil = NULL;
    size_t nd = 0;
    if (g->attr_ints(v, n, "dilations", &dil, &nd) && nd > 0)
        dw = dil[nd - 1];
    if (ctx->direct && r <= 4 && odnn_narrow_takes(w[1], w[0], kh, kw, dw, group))
        return odnn_narrow_ops(w[1], w[0], kh, kw) / (double)(w[1] * kh * kw) / 0.7;
    int64_t oc = w[0] / group, ic = w[1];
    double f = (double)((oc + 15) / 16 * 16) / (double)oc;
    if (ic > 4)
        f *= (double)((ic + 15) / 16 * 16) / (double)ic;
    return f;
}

/* Whether node N is a convolution whose kernel covers more than one point
 * (the kernels where oneDNN's direct convolutions beat im2col and GEMM). */
static int odnn_cost_spatial_kernel(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t w[8];
    int32_t r = g->node_input_count(v, n) > 1 ? pl_cost_dims(g, v, g->node_input(v, n, 1), w)
                                              : -1;
    if (strncmp(g->node_op(v, n), "Conv", 4) != 0 || r < 3)
        return 0;
    for (int32_t d = 2; d < r; d++)
        if (w[d] > 1)
            return 1;
    return 0;
}

/* Below avx512_core (bench/op_rates.py on an AVX2 AMD EPYC, 2 threads,
 * oneDNN 2.6): 3x3 convolutions run its jit:avx2 kernels at the same lead
 * as on AVX-512 (0.70 of cpu's time), but products and 1x1 convolutions
 * run slower than the cpu module's AVX2 GEMM (onednn/cpu 0.96-1.64 on
 * matrix products, 0.91-1.29 on 1x1; the reference mlp's three Gemms 3.5
 * ms against 2.5), 1-D convolutions run at 28-38
 * GFLOP/s against cpu's 57-60 (dilated ones on oneDNN's im2col GEMM,
 * undilated on a jit kernel no better), and 2-D convolutions dilated by
 * more than 2 go to that GEMM as well (onednn/cpu 0.84-1.24; at 128
 * channels on 32x32 dilated by 6, bench/patterns.py's ASPP branch, 1.45).
 * Grouped convolutions that are not depthwise (ResNeXt's 32 groups of 4
 * channels at 28x28) run 2.3x the cpu module's time. */
/* 2-D convolutions the module's own direct kernel takes (onednn_direct.c:
 * one group, channels in multiples of 8; dilated or not) run 1.3-1.9x
 * oneDNN's jit:avx2 speed: 64->64 channels on 8x8 in 0.68 of the cpu
 * module's time, 128->128 on 4x4 in 0.76, dilated by 4 in 0.76 (single-op
 * models, boundary reorders included). 1-D ones keep the 1-D rate: with
 * their reorders they stay slower than cpu (32 channels over 64 steps
 * 1.9x, 128 over 512 1.05x). */
/* 1-D convolutions with AVX-512 as well: tcn's causal convolutions (48
 * and 64 channels over 64 steps) ran 2.5-2.8x the cpu module's time in
 * bench/op_rates.py (conv1d_c48_l64: 30-37 us against 12-14). */
#define ODNN_COST_CONV1D_RATE 0.7
#define ODNN_COST_AVX2_DIRECT_RATE 2.6
/* 3x3 stride-1 layers through the direct kernel's Winograd variant
 * (onednn_winograd.c), against the direct kernel on four stacked layers:
 * F(4x4) 0.40-0.52 of its time (64 channels at 56x56 and 32x32, 128 at
 * 28x28 and 16x16), F(2x2) 0.65-0.93 (256 channels at 14x14 and 8x8). */
#define ODNN_COST_AVX2_WINO4_RATE (ODNN_COST_AVX2_DIRECT_RATE * 2.0)
#define ODNN_COST_AVX2_WINO2_RATE (ODNN_COST_AVX2_DIRECT_RATE * 1.3)
#define ODNN_COST_AVX2_GEMM_RATE 0.9 /* 0.8 moved bert_tiny to cpu: 1.27x slower */
/* Below avx512_core oneDNN 2.6 multiplies by a constant matrix on
 * gemm:jit, which keeps the weights plain and packs them into its panels
 * on every call: 24 rows by a 1024 x 8210 constant (dddd_ocr's classifier,
 * 33.6 MB) took 10.6-11.1 ms on an AVX2 EPYC, 2 threads, against the cpu
 * module's 6.4-6.7 (weights packed once) and ONNX Runtime's 5.4, while its
 * FLOPs at the AVX2 rate said 5.6. A constant B of at least
 * ODNN_COST_AVX2_PACK_MIN bytes (past the last-level cache, where the
 * packing streams it from memory) costs its bytes at
 * ODNN_COST_AVX2_PACK_GBPS more a call; one row is a product by a vector,
 * which packs nothing. Smaller ones pack from the cache for little: 32 x
 * 768 by a 768 x 3072 constant (9.4 MB) took 1.3-1.4 ms on oneDNN against
 * 1.4-1.8 on the cpu module. */
#define ODNN_COST_AVX2_PACK_MIN ((double)(16 << 20))
#define ODNN_COST_AVX2_PACK_GBPS 7.0
#define ODNN_COST_AVX2_CONV1D_RATE 0.6
#define ODNN_COST_AVX2_DILATED_RATE 0.65
#define ODNN_COST_AVX2_GROUPED_RATE 0.45
/* Tanh (alone or as a post-op) below avx512_core reads its polynomial
 * tables with gathers: 1.0 ms on [1, 512, 768] with 2 threads, 5 ns an
 * element on one core, where the cpu module takes 0.3 ms
 * (onednn_has_avx512). Not where the module's own tanh runs it
 * (odnn_tanh_run: direct_conv = auto on AVX2). */
#define ODNN_COST_AVX2_TANH_NS 5.0

/* Whether oneDNN dispatches to AVX-512 kernels here (asked once: asking
 * fixes the ISA cap, and estimates come after configure has set it). */
static int odnn_cost_avx512(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        int isa = (int)dnnl_get_effective_cpu_isa();
        v = (isa & (int)dnnl_cpu_isa_avx512_core) == (int)dnnl_cpu_isa_avx512_core;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

int onednn_has_avx512(void)
{
    return odnn_cost_avx512();
}

/* The Winograd tile the direct kernel would take for Conv N of OIHW
 * weights W (odnn_wino_tile), or 0. */
static int odnn_cost_wino_tile(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                               const int64_t *w)
{
    int64_t y[8];
    if (w[2] != 3 || w[3] != 3 || pl_cost_dims(g, v, g->node_output(v, n, 0), y) != 4)
        return 0;
    const int64_t *at = NULL;
    size_t na = 0;
    if (g->attr_ints(v, n, "strides", &at, &na))
        for (size_t i = 0; i < na; i++)
            if (at[i] != 1)
                return 0;
    if (g->attr_ints(v, n, "dilations", &at, &na))
        for (size_t i = 0; i < na; i++)
            if (at[i] != 1)
                return 0;
    if (y[1] > (1 << 20) || y[2] > (1 << 20) || y[3] > (1 << 20) || w[1] > (1 << 20))
        return 0;
    struct odnn_direct d = {.ic = (int)w[1], .oc = (int)y[1], .oh = (int)y[2], .ow = (int)y[3],
                            .kh = 3, .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1};
    return odnn_wino_tile(&d);
}

/* A product of one row by a constant matrix (M = 1): oneDNN's gemm:jit
 * and brgemm stream the matrix at ODNN_COST_GEMV_GBPS, whether the product
 * runs once or every step of a loop (512 x 2048, 4 MiB: 123-129 us on two
 * threads, alone or in a Scan's body, where the cpu module's kernel keeps
 * each thread's share of the matrix in its core's cache: 20-31 us). The
 * module's own matrix-vector kernel, which takes such products of
 * ODNN_COST_GEMV_OWN_MIN elements or more (onednn_subgraph.c,
 * ODNN_GEMV_OWN_MIN_WEIGHTS), reads each thread's share of the columns
 * as the cpu module does, at its rate (1280 x 1000 transposed, 5 MB: 52-55
 * us alone on two threads, gemm:jit 61-147, the cpu module 57-59). */
#define ODNN_COST_GEMV_GBPS 32.0
#define ODNN_COST_GEMV_OWN_MIN (1024.0 * 1024.0)
#define ODNN_COST_GEMV_SHARE_GBPS 57.0

/* The microseconds product N (OP) takes to read its matrix when it is one
 * row by a constant matrix, else a negative value. */
static double odnn_cost_gemv(const pl_module_ctx *ctx, const pl_graph_api *g,
                             const pl_graph_view *v, size_t n, const char *op)
{
    int64_t y[8], w[8], ta = 0;
    const void *data;
    size_t size;
    if (strcmp(op, "MatMul") != 0 && strcmp(op, "Gemm") != 0)
        return -1;
    int32_t r = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    double rows = 1;
    for (int32_t d = 0; d + 1 < r; d++)
        rows *= (double)y[d];
    if (r < 1 || rows != 1 || g->node_input_count(v, n) < 2 ||
        !g->tensor_constant(v, g->node_input(v, n, 1), &data, &size))
        return -1;
    g->attr_int(v, n, "transA", &ta);
    if (ctx->direct && odnn_gemv_usable() && !ta &&
        pl_cost_dims(g, v, g->node_input(v, n, 1), w) == 2 &&
        (double)w[0] * (double)w[1] >= ODNN_COST_GEMV_OWN_MIN) {
        int threads = onednn_host->thread_count(ctx->host_ctx);
        double share = (double)size / (threads > 0 ? threads : 1);
        return share / ((share <= 2.0 * PL_COST_CACHE_BYTES ? ODNN_COST_GEMV_SHARE_GBPS
                                                            : PL_COST_GBPS) * 1e3);
    }
    return (double)size / (ODNN_COST_GEMV_GBPS * 1e3);
}

/* What gemm:jit's packing of product N's constant B costs a call below
 * avx512_core (ODNN_COST_AVX2_PACK_MIN), in us. */
static double odnn_cost_avx2_pack_us(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                     const char *op)
{
    if (odnn_cost_avx512() || (strcmp(op, "MatMul") != 0 && strcmp(op, "Gemm") != 0))
        return 0;
    const void *data = NULL;
    size_t bytes = 0;
    int64_t y[8];
    int32_t r = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    double rows = 1;
    for (int32_t d = 0; d + 1 < r; d++)
        rows *= (double)y[d];
    if (r < 1 || rows <= 1 || !g->tensor_constant(v, g->node_input(v, n, 1), &data, &bytes) ||
        (double)bytes < ODNN_COST_AVX2_PACK_MIN)
        return 0;
    return (double)bytes / (ODNN_COST_AVX2_PACK_GBPS * 1e3);
}

/* A 2-D convolution of one input channel a group (not depthwise) whose
 * kernel and output are one row high: a 1-D filter bank written 2-D, as
 * onnx-asr's polyphase resamplers are (1 -> 320 channels, 459 taps at
 * stride 441 over 16000 samples: brgconv 0.42-0.78 ms, 28-52 GFLOP/s on
 * 2 threads, where the cpu module's im2col and GEMM take 0.12-0.14). */
#define ODNN_COST_IC1_ROW_RATE 0.2

static int odnn_cost_ic1_row(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t w[8], y[8], group = 1;
    if (strcmp(g->node_op(v, n), "Conv") != 0 || g->node_input_count(v, n) < 2 ||
        pl_cost_dims(g, v, g->node_input(v, n, 1), w) != 4 ||
        pl_cost_dims(g, v, g->node_output(v, n, 0), y) != 4)
        return 0;
    g->attr_int(v, n, "group", &group);
    return w[1] == 1 && group >= 1 && w[0] / group > 1 && w[2] == 1 && y[2] == 1 && w[3] > 1;
}

/* The rate of product node N as a multiple of cost.h's default. */
static double odnn_cost_rate(const pl_module_ctx *ctx, const pl_graph_api *g,
                             const pl_graph_view *v, size_t n)
{
    int spatial = odnn_cost_spatial_kernel(g, v, n);
    int64_t w1[8];
    if (odnn_cost_ic1_row(g, v, n))
        return ODNN_COST_IC1_ROW_RATE;
    if (odnn_cost_avx512() && spatial &&
        pl_cost_dims(g, v, g->node_input(v, n, 1), w1) == 3)
        return ODNN_COST_CONV1D_RATE;
    if (odnn_cost_avx512())
        return spatial ? ODNN_COST_KERNEL_RATE : ODNN_COST_GEMM_RATE;
    if (!spatial)
        return ODNN_COST_AVX2_GEMM_RATE;
    int64_t w[8], x[8], group = 1;
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 1), w);
    if (r == 3)
        return ODNN_COST_AVX2_CONV1D_RATE;
    g->attr_int(v, n, "group", &group);
    if (ctx->direct && odnn_direct_usable() && r == 4 && group == 1 &&
        strcmp(g->node_op(v, n), "Conv") == 0 && odnn_direct_channels(w[1], w[0])) {
        int tile = ctx->winograd ? odnn_cost_wino_tile(g, v, n, w) : 0;
        return tile == 4   ? ODNN_COST_AVX2_WINO4_RATE
               : tile == 2 ? ODNN_COST_AVX2_WINO2_RATE
                           : ODNN_COST_AVX2_DIRECT_RATE;
    }
    if (group > 1 && pl_cost_dims(g, v, g->node_input(v, n, 0), x) >= 2 && x[1] != group) {
        if (ctx->direct && odnn_direct_usable() && r == 4 &&
            strcmp(g->node_op(v, n), "Conv") == 0 && odnn_direct_grouped(x[1], w[0], group))
            return ODNN_COST_AVX2_DIRECT_RATE; /* the grouped kernel */
        return ODNN_COST_AVX2_GROUPED_RATE;
    }
    const int64_t *dil = NULL;
    size_t nd = 0;
    if (g->attr_ints(v, n, "dilations", &dil, &nd))
        for (size_t i = 0; i < nd; i++)
            if (dil[i] > 2)
                return ODNN_COST_AVX2_DILATED_RATE;
    return ODNN_COST_KERNEL_RATE;
}

/* An int8 QLinearConv (onednn_subgraph.c's odnn_qconv_emit): oneDNN 2.6's
 * VNNI kernels, 2 threads, u8 channels-last with zero points (a C
 * harness timing single primitives on the AVX-512 Xeon): about 2.5 us
 * however small (16->64 channels 1x1 at 16x16, 0.5 MFLOP: 3.2 us; 16->16
 * 3x3 at 16x16: 3.3), then about 1 TFLOP/s (64->64 3x3 at 8x8: 6.0 us;
 * 256->256 3x3 at 4x4: 23), 2.3-2.8 TFLOP/s where the module takes the
 * AMX kernels (64->64 3x3 at 28x28: 23 us; 128->128 3x3 at 16x16: 36);
 * a stem of 3 channels at half the VNNI rate (3->16 7x7 stride 2 to
 * 32x32: 12.8 us). As multiples of cost.h's default rate. */
#define ODNN_COST_INT8_US 2.5
#define ODNN_COST_INT8_RATE 12.0
#define ODNN_COST_INT8_AMX_RATE 25.0
#define ODNN_COST_INT8_STEM_RATE 5.0

static double odnn_cost_qconv_us(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t w[8], y[8], group = 1;
    int32_t wr = pl_cost_dims(g, v, g->node_input(v, n, 3), w);
    int32_t yr = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    if (wr < 3 || yr != wr || w[0] < 1)
        return ODNN_COST_INT8_US;
    g->attr_int(v, n, "group", &group);
    double pixels = (double)y[0], taps = 1;
    for (int32_t d = 2; d < yr; d++)
        pixels *= (double)y[d], taps *= (double)w[d];
    double macs = pixels * (double)w[0] * (double)w[1] * taps;
    double rate = w[1] <= 4 && group == 1 ? ODNN_COST_INT8_STEM_RATE
                  : onednn_int8_amx(macs, pixels) ? ODNN_COST_INT8_AMX_RATE
                                                  : ODNN_COST_INT8_RATE;
    return ODNN_COST_INT8_US + 2.0 * macs / (rate * pl_cost_gflops() * 1e3);
}

/* A MatMulInteger (odnn_qmm_emit): the int8 matmul with its zero point and
 * the chain's binary post-ops, 2 threads (a C harness on the AVX-512 Xeon):
 * 4-5 us up to half a million multiply-adds (32x128x128: 4.2 us on VNNI;
 * 8x256x256: 3.7), then about 1.3 TFLOP/s on AMX (128x256x1024: 52 us;
 * 50x768x768: 45; 128x256x256: 18) and 0.8 on VNNI (128x256x1024: 89). */
#define ODNN_COST_QMM_US 3.0

static double odnn_cost_qmm_us(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t a[8], w[8];
    int32_t ar = pl_cost_dims(g, v, g->node_input(v, n, 0), a);
    int32_t wr = pl_cost_dims(g, v, g->node_input(v, n, 1), w);
    if (ar < 1 || wr != 2)
        return ODNN_COST_QMM_US;
    double macs = (double)w[0] * (double)w[1];
    for (int32_t d = 0; d + 1 < ar; d++)
        macs *= (double)a[d];
    double rate = onednn_qmm_amx(macs) ? ODNN_COST_INT8_AMX_RATE : ODNN_COST_INT8_RATE;
    return ODNN_COST_QMM_US + 2.0 * macs / (rate * pl_cost_gflops() * 1e3);
}

/* The node of the set that writes tensor T, or -1 (PRODUCER maps tensors to
 * nodes). */
static int64_t odnn_cost_writer(const int64_t *producer, size_t n_tensors, int64_t t)
{
    return t >= 0 && (size_t)t < n_tensors ? producer[t] : -1;
}

double onednn_rnn_steps(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    const char *op = g->node_op(v, n);
    if (!odnn_cost_is(op, odnn_cost_rnns))
        return 0;
    int64_t x[8], layout = 0;
    if (pl_cost_dims(g, v, g->node_input(v, n, 0), x) != 3)
        return 0;
    g->attr_int(v, n, "layout", &layout);
    const char *dir = NULL;
    size_t len = 0;
    int dirs = g->attr_string(v, n, "direction", &dir, &len) && len == 13 ? 2 : 1;
    return (double)(layout ? x[1] : x[0]) * dirs;
}

double onednn_rnn_weight_bytes(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    double bytes = 0;
    for (size_t i = 1; i <= 2; i++) {
        int64_t d[8];
        int nd = pl_cost_dims(g, v, g->node_input(v, n, i), d);
        double e = nd > 0 ? 4.0 : 0.0;
        for (int k = 0; k < nd; k++)
            e *= (double)d[k];
        bytes += e;
    }
    return bytes;
}

/* A Transpose is a strided view of its source; whatever reads it dense (all
 * but a product, which takes the strides; the caller, through the output
 * copy) gets it through a reorder, which oneDNN's jit:uni runs at about
 * ODNN_COST_REORDER_GBPS whatever the permutation: 33 us for the 95 KB of
 * onnx-asr's 2x37x1x320 -> 2x320x1x37 (acdb to abcd), where the cpu module
 * transposes it in 10. A permutation that keeps the order of the axes
 * longer than 1 moves nothing. */
/* Whether Gather or Slice N picks a part of its input that is not one run
 * of it: it narrows an axis with more than one element outside it (a
 * Gather of one time step along axis 2 of [1, 256, 24, 8]: 256 runs of 8).
 * Read dense, such a view is a reorder (Mamba's selective scan unrolled
 * over 24 steps reordered three such a step, 9 us a step against the 2 the
 * views were taken to cost, and ran 1.46x its time on cpu). */
static int odnn_cost_strided_pick(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t x[8], y[8];
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 0), x);
    int32_t ry = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    if (r < 1 || ry < 0)
        return 0;
    double outer = 1;
    if (strcmp(g->node_op(v, n), "Gather") == 0) {
        int64_t axis = 0;
        g->attr_int(v, n, "axis", &axis);
        if (axis < 0)
            axis += r;
        if (axis < 0 || axis >= r)
            return 0;
        for (int64_t a = 0; a < axis; a++)
            outer *= (double)x[a];
        return outer > 1 && x[axis] > 1;
    }
    if (ry != r)
        return 0;
    for (int32_t a = 0; a < r; a++) {
        if (y[a] != x[a] && outer > 1)
            return 1;
        outer *= (double)x[a];
    }
    return 0;
}

static int odnn_cost_moves_data(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    int64_t x[8];
    const int64_t *perm = NULL;
    size_t np = 0;
    const char *op = g->node_op(v, n);
    if (strcmp(op, "Gather") == 0 || strcmp(op, "Slice") == 0)
        return odnn_cost_strided_pick(g, v, n);
    if (strcmp(op, "Transpose") != 0)
        return 0;
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, 0), x);
    if (r < 2)
        return 0;
    if (g->attr_ints(v, n, "perm", &perm, &np) && np != (size_t)r)
        return 1;
    int64_t last = -1;
    for (int32_t i = 0; i < r; i++) {
        int64_t from = perm != NULL ? perm[i] : r - 1 - i; /* no perm: the reversal */
        if (from < 0 || from >= r)
            return 1;
        if (x[from] == 1)
            continue;
        if (from < last)
            return 1;
        last = from;
    }
    return 0;
}

int onednn_estimate_cost(pl_module_ctx *ctx, int device, const pl_graph_view *v,
                         const size_t *nodes, size_t n_nodes, pl_cost *out)
{
    (void)device;
    const pl_graph_api *g = onednn_host->graph;
    size_t n_tensors = g->tensor_count(v), n_all = g->node_count(v);
    int64_t *producer = malloc((n_tensors ? n_tensors : 1) * sizeof *producer);
    unsigned char *inside = calloc(n_all ? n_all : 1, 1);
    unsigned char *role = calloc(n_all ? n_all : 1, 1);
    unsigned char *dense = calloc(n_tensors ? n_tensors : 1, 1);
    int ok = producer != NULL && inside != NULL && role != NULL && dense != NULL;
    for (size_t i = 0; ok && i < n_nodes; i++)
        if (nodes[i] < n_all)
            inside[nodes[i]] = 1;
    if (!ok || !onednn_fused_roles(ctx, v, inside, role)) {
        free(producer);
        free(inside);
        free(role);
        free(dense);
        return 0;
    }
    for (size_t t = 0; t < n_tensors; t++)
        producer[t] = -1;
    double compute = 0, launch = PL_COST_STEP_US, boundary_bytes = 0;
    double made = 0; /* primitives the compile makes */
    int has_conv = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        size_t n = nodes[i];
        if (n >= n_all)
            continue;
        inside[n] = 1;
        for (size_t o = 0; o < g->node_output_count(v, n); o++) {
            int64_t t = g->node_output(v, n, o);
            if (t >= 0 && (size_t)t < n_tensors)
                producer[t] = (int64_t)n;
        }
        /* what a node other than a product reads, it reads dense */
        const char *op = g->node_op(v, n);
        if (strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0)
            continue;
        for (size_t k = 0; k < g->node_input_count(v, n); k++) {
            int64_t t = g->node_input(v, n, k);
            if (t >= 0 && (size_t)t < n_tensors)
                dense[t] = 1;
        }
    }
    for (size_t i = 0; i < n_nodes; i++) {
        size_t n = nodes[i];
        if (n >= n_all)
            continue;
        const char *op = g->node_op(v, n);
        if (odnn_cost_is(op, odnn_cost_views)) {
            /* of a convolution's (blocked) result: out to plain and back */
            int64_t in = g->node_input(v, n, 0), w = odnn_cost_writer(producer, n_tensors, in);
            int64_t d[8];
            double b;
            if (w >= 0 && (strcmp(g->node_op(v, (size_t)w), "Conv") == 0 ||
                           strcmp(g->node_op(v, (size_t)w), "ConvTranspose") == 0) &&
                pl_cost_dims(g, v, in, d) >= 3 && pl_cost_elems(g, v, in, &b) > 0) {
                launch += 2 * ODNN_COST_REORDER_US;
                compute += 4 * b / (ODNN_COST_REORDER_GBPS * 1e3);
                made += 2;
            }
            int64_t y = g->node_output(v, n, 0);
            if (y >= 0 && (size_t)y < n_tensors && dense[y] && odnn_cost_moves_data(g, v, n) &&
                pl_cost_elems(g, v, y, &b) > 0) {
                launch += ODNN_COST_REORDER_US + ODNN_COST_EXEC_US;
                compute += 2 * b / (ODNN_COST_REORDER_GBPS * 1e3);
                made += 1;
            }
            continue;
        }
        double flops, bytes;
        pl_cost_work(g, v, n, &flops, &bytes);
        made += 1; /* less below for what fuses into another's primitive */
        if (strcmp(op, "Tanh") == 0 && !odnn_cost_avx512() && !(ctx->direct && odnn_direct_usable()))
            compute += pl_cost_elems(g, v, g->node_output(v, n, 0), NULL) *
                       ODNN_COST_AVX2_TANH_NS / 1e3;
        if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0)
            has_conv = 1;
        if (strcmp(op, "QLinearConv") == 0) {
            has_conv = 1; /* its 8-bit values channels-last inside */
            compute += odnn_cost_qconv_us(g, v, n);
            continue;
        }
        if (strcmp(op, "MatMulInteger") == 0) {
            inside[n] = 2; /* the Cast, the scales and a bias become post-ops */
            compute += odnn_cost_qmm_us(g, v, n);
            launch += ODNN_COST_PRIMITIVE_US;
            continue;
        }
        if (odnn_cost_is(op, odnn_cost_products)) {
            inside[n] = 2; /* what follows it may become its post-ops */
            double rate = odnn_cost_rate(ctx, g, v, n);
            double c = flops * odnn_cost_channel_padding(ctx, g, v, n) /
                       (rate * pl_cost_gflops() * 1e3);
            double m = odnn_cost_gemv(ctx, g, v, n, op);
            if (m < 0)
                m = bytes / (ODNN_COST_BW * PL_COST_GBPS * 1e3);
            compute += c > m ? c : m;
            compute += odnn_cost_avx2_pack_us(g, v, n, op);
            /* without ODNN_COST_EXEC_US: the products' rates were measured
             * with it (single-op models against the cpu module) */
            launch += ODNN_COST_PRIMITIVE_US;
        } else if (odnn_cost_is(op, odnn_cost_rnns)) {
            double steps = onednn_rnn_steps(g, v, n);
            compute += flops / (pl_cost_gflops() * 1e3);
            double per_step =
                onednn_has_avx512() ? ODNN_COST_RNN_STEP_US : ODNN_COST_RNN_STEP_AVX2_US;
            launch += ODNN_COST_RNN_SETUP_US + ODNN_COST_EXEC_US +
                      per_step * (steps > 0 ? steps : 1);
            int64_t r[8];
            if (pl_cost_dims(g, v, g->node_input(v, n, 2), r) == 3) {
                double rdir = 4.0 * (double)r[1] * (double)r[2];
                double rate = rdir <= (double)PL_COST_CACHE_BYTES ? PL_COST_CACHE_GBPS
                                                                  : ODNN_COST_RNN_GBPS;
                launch += (steps > 0 ? steps : 1) * rdir / (rate * 1e3); /* every direction's */
            }
        } else {
            /* An eltwise or binary op (or QDQ pair) reading a product's
             * result, or that of a post-op of one: a post-op itself (the
             * compile fuses such chains). A reduction, softmax or the like
             * reading it is a primitive of its own. */
            int64_t w = odnn_cost_writer(producer, n_tensors, g->node_input(v, n, 0));
            /* After a binary of its own (inside 4: odnn_binary_pd), only
             * activations and operations by a constant join it. */
            int after_binary = w >= 0 && inside[w] == 4 &&
                               (odnn_cost_is(op, odnn_cost_eltwise) ||
                                (odnn_cost_is(op, odnn_cost_binaries) &&
                                 odnn_cost_const_operand(g, v, n)));
            if (after_binary && role[n] != ODNN_ROLE_INNER &&
                !(strcmp(op, "Erf") == 0 && role[n] == ODNN_ROLE_OWN)) {
                inside[n] = 4;
                made -= 1;
                continue;
            }
            /* (an Erf outside a GELU pattern is a step of its own) */
            if (w >= 0 && inside[w] == 2 && !(strcmp(op, "Erf") == 0 && role[n] == ODNN_ROLE_OWN) &&
                (odnn_cost_is(op, odnn_cost_eltwise) || odnn_cost_is(op, odnn_cost_binaries))) {
                /* a QDQ pair ends the chain: what reads its DequantizeLinear
                 * is a primitive of its own (odnn_follow takes no residual
                 * sum after one, and clips of other ranges conflict) */
                inside[n] = strcmp(op, "DequantizeLinear") == 0 ? 3 : 2;
                made -= 1;
                continue;
            }
            if (role[n] == ODNN_ROLE_INNER) { /* inside its pattern's primitive */
                made -= 1;
                continue;
            }
            /* a mean over a plain source: a reduction or a product (a
             * convolution's blocked result is pooled instead) */
            double red = -1;
            if (role[n] != ODNN_ROLE_NORM && role[n] != ODNN_ROLE_NORM_NHWC &&
                (odnn_cost_is(op, odnn_cost_reductions) ||
                 (strcmp(op, "GlobalAveragePool") == 0 &&
                  !(w >= 0 && strncmp(g->node_op(v, (size_t)w), "Conv", 4) == 0))))
                red = odnn_cost_reduction(g, v, n, op);
            if (red >= 0) {
                launch += red + ODNN_COST_EXEC_US;
                continue;
            }
            if (role[n] != ODNN_ROLE_NORM && role[n] != ODNN_ROLE_NORM_NHWC &&
                odnn_cost_is(op, odnn_cost_softmaxes)) {
                compute += bytes / (ODNN_COST_BW * PL_COST_GBPS * 1e3);
                launch += odnn_cost_softmax(g, v, n) + ODNN_COST_EXEC_US;
                continue;
            }
            /* a binary of its own takes the chain after it as post-ops */
            if (role[n] == ODNN_ROLE_OWN && odnn_cost_is(op, odnn_cost_binaries) &&
                strcmp(op, "QuantizeLinear") != 0 && strcmp(op, "PRelu") != 0)
                inside[n] = 4;
            compute += bytes / (ODNN_COST_BW * PL_COST_GBPS * 1e3);
            launch += ODNN_COST_EXEC_US +
                      (role[n] == ODNN_ROLE_NORM        ? ODNN_COST_NORM_US
                       : role[n] == ODNN_ROLE_NORM_NHWC ? ODNN_COST_NORM_US + 2 * ODNN_COST_REORDER_US
                       : role[n] == ODNN_ROLE_ELTWISE   ? ODNN_COST_ELTWISE_US
                                                        : odnn_cost_launch(op));
        }
    }
    /* The boundary: inputs written outside the set (constants excepted) and
     * outputs read outside it or by the caller. */
    for (size_t i = 0; has_conv && i < n_nodes; i++) {
        size_t n = nodes[i];
        if (n >= n_all)
            continue;
        for (size_t k = 0; k < g->node_input_count(v, n); k++) {
            int64_t t = g->node_input(v, n, k);
            const void *data;
            size_t cb;
            if (t < 0 || odnn_cost_writer(producer, n_tensors, t) >= 0 ||
                g->tensor_constant(v, t, &data, &cb))
                continue;
            int64_t d[8];
            double b;
            if (pl_cost_dims(g, v, t, d) >= 4 && pl_cost_elems(g, v, t, &b) > 0) {
                boundary_bytes += b;
                launch += ODNN_COST_REORDER_US + ODNN_COST_EXEC_US;
                made += 1;
            }
        }
    }
    /* Outputs: a view's is copied out dense; with a convolution inside, a
     * 4-d or 5-d one is reordered back to plain. Each is counted once,
     * however many read it. */
    for (size_t m = 0; m <= n_all; m++) {
        size_t count = m < n_all ? g->node_input_count(v, m) : g->output_count(v);
        if (m < n_all && inside[m])
            continue;
        for (size_t k = 0; k < count; k++) {
            int64_t t = m < n_all ? g->node_input(v, m, k) : g->output(v, k), d[8];
            int64_t w = odnn_cost_writer(producer, n_tensors, t);
            double b;
            if (w < 0 || pl_cost_elems(g, v, t, &b) <= 0)
                continue;
            /* a strided view (a Slice, Gather or Split of an outer axis, a
             * Transpose) is copied out by a reorder or the module's own
             * one-thread loop: whisper's Slice of its STFT frames ([2,
             * 3001, 201, 2] less a row a batch) 1.1 ms, row by row */
            const char *wop = g->node_op(v, (size_t)w);
            if (odnn_cost_moves_data(g, v, (size_t)w) || strcmp(wop, "Slice") == 0 ||
                strcmp(wop, "Gather") == 0 || strcmp(wop, "Split") == 0) {
                launch += ODNN_COST_REORDER_US + ODNN_COST_EXEC_US;
                compute += 2 * b / (ODNN_COST_REORDER_GBPS * 1e3);
                made += 1;
            } else if (odnn_cost_is(wop, odnn_cost_views)) {
                compute += b / (ODNN_COST_BW * PL_COST_GBPS * 1e3);
            }
            if (has_conv && pl_cost_dims(g, v, t, d) >= 4) {
                boundary_bytes += b;
                launch += ODNN_COST_REORDER_US + ODNN_COST_EXEC_US;
                made += 1;
            }
            producer[t] = -1;
        }
    }
    free(producer);
    free(inside);
    free(role);
    free(dense);
    out->compute_us = compute;
    out->launch_us = launch;
    out->boundary_us = 2 * boundary_bytes / (ODNN_COST_REORDER_GBPS * 1e3);
    if (PL_ABI_HAS_FIELD(pl_cost, out, prepare_us))
        out->prepare_us = made * ODNN_COST_MAKE_US;
    return 1;
}
