/* cost.c — the cpu module's estimate of what its kernels cost a run
 * (pl_module_api.estimate_cost), for the core's cost-aware placement.
 *
 * The core's default (plinth/cost.h: FLOPs at PL_COST_GFLOPS a core, bytes
 * at PL_COST_GBPS, the work spread over every thread, plus a dispatch) is
 * what this module's elementwise kernels run at, but it took convolutions,
 * products and window ops for two to ten times faster than they are: each
 * Conv with a 3x3 kernel ran 3.1 times its default estimate (geometric
 * mean over 54 nodes of the three zoos; 5.2 on maps of up to 64 values,
 * 2.5 on those over 512), so `choose = cost` weighed oneDNN
 * against a cpu module that does not exist, and every change that made
 * oneDNN's own estimates honest moved conv networks onto a slower cpu
 * (densenet_s 0.33 -> 0.60 ms, tf_ssd_head 0.17 -> 0.40 ms).
 *
 * So the estimate is the default scaled per op (and per kind of
 * convolution) by what bench/cost_check.py --nodes measured: each cpu
 * step's time (`plinth run --warmup`, 2 threads) against the default for
 * its node, over the PyTorch, TensorFlow and int8 zoos on an AVX-512 Xeon
 * (2026-11-30). The factors are the geometric means, the spread around
 * them is 2-3x each way; rerun the tool after a kernel gets faster. */
#include "cpu_kernel.h"

#include <plinth/cost.h>

#include <string.h>

/* Measured / default per op; 1 for the ops not listed (elementwise: Add
 * 0.87, Mul 0.71, Relu 0.79, DequantizeLinear 0.94, Concat 0.85). */
static const struct {
    const char *op;
    double factor;
} cpu_cost_factors[] = {
    {"MatMul", 2.4},        {"Gemm", 1.8},         {"ConvTranspose", 5.0},
    {"MatMulInteger", 6.7}, {"QLinearMatMul", 6.7},
    {"MaxPool", 8.0},       {"AveragePool", 7.0},  {"GlobalAveragePool", 1.75},
    {"Softmax", 5.6},       {"LogSoftmax", 2.8},   {"Transpose", 1.9},
    {"Sigmoid", 2.1},       {"Erf", 2.1},          {"Tanh", 3.3},
    {"HardSigmoid", 1.7},   {"QuantizeLinear", 1.4}, {"DynamicQuantizeLinear", 2.7},
    {"Resize", 7.5},        {"Upsample", 4.8},     {"Pad", 5.0},
    {"Tile", 1.7},          {"LayerNormalization", 2.1}, {"GRU", 5.3},
    {"RNN", 4.7},           {"LSTM", 5.0},         {"ReduceMean", 1.6},
    {"ReduceSum", 1.7},     {"Sub", 1.4},          {"Pow", 1.3},
    {"Cast", 1.3},
};

/* Convolutions by kind (Conv; QUANT: QLinearConv, ConvInteger, whose
 * weights are input WI) and by the size of their output map (elements per
 * channel: up to 64, up to 512, more): the smaller the map, the less of
 * the kernel's width a GEMM fills. Weights of unknown dims get the mean.
 *                 f32: <=64  <=512  more     int8: <=64  <=512  more
 *   1-D                2.4    2.4    2.4             5.0    5.0    5.0
 *   depthwise          8.7    3.5    2.2            17.0   17.0   17.0
 *   stem (C <= 4)      4.7    6.8    3.9            18.0   18.0   18.0
 *   1x1                2.1    2.1    1.6             5.0    7.5    7.5
 *   other kernels      5.2    3.6    2.5             7.0   18.0   18.0 */
static double cpu_cost_conv_factor(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                   size_t wi, int quant)
{
    static const double table[2][5][3] = {
        {{2.4, 2.4, 2.4}, {8.7, 3.5, 2.2}, {4.7, 6.8, 3.9}, {2.1, 2.1, 1.6}, {5.2, 3.6, 2.5}},
        {{5.0, 5.0, 5.0}, {17.0, 17.0, 17.0}, {18.0, 18.0, 18.0}, {5.0, 7.5, 7.5},
         {7.0, 18.0, 18.0}},
    };
    int64_t w[8], y[8], group = 1;
    int32_t r = pl_cost_dims(g, v, g->node_input(v, n, wi), w);
    int32_t yr = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    g->attr_int(v, n, "group", &group);
    if (r < 3)
        return quant ? 6.8 : 2.5;
    int64_t taps = 1, map = 1;
    for (int32_t d = 2; d < r; d++)
        taps *= w[d];
    for (int32_t d = 2; d < yr; d++)
        map *= y[d];
    int size = map <= 64 ? 0 : map <= 512 ? 1 : 2;
    int kind = r == 3                     ? 0  /* 1-D */
               : group > 1 && w[1] == 1   ? 1  /* depthwise */
               : group == 1 && w[1] <= 4  ? 2  /* stem */
               : taps == 1                ? 3  /* 1x1 */
                                          : 4;
    return table[quant != 0][kind][size];
}

static double cpu_cost_factor(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    const char *op = g->node_op(v, n);
    if (strcmp(op, "Conv") == 0)
        return cpu_cost_conv_factor(g, v, n, 1, 0);
    if (strcmp(op, "QLinearConv") == 0)
        return cpu_cost_conv_factor(g, v, n, 3, 1);
    if (strcmp(op, "ConvInteger") == 0)
        return cpu_cost_conv_factor(g, v, n, 1, 1);
    for (size_t k = 0; k < sizeof cpu_cost_factors / sizeof *cpu_cost_factors; k++)
        if (strcmp(op, cpu_cost_factors[k].op) == 0)
            return cpu_cost_factors[k].factor;
    return 1.0;
}

static int cpu_cost_is_rnn(const char *op)
{
    return strcmp(op, "LSTM") == 0 || strcmp(op, "GRU") == 0 || strcmp(op, "RNN") == 0;
}

/* An RNN's factor is that of its recurrence, one small product after
 * another (fitted on sequences of 3-10 steps, 5-32 wide): it scales the compute, not
 * the weights' bytes, which the kernel streams at the memory rate. Scaling
 * both, one step of a 128-wide LSTM (512 KB of weights) was estimated at
 * 44 us and took 6. */
static double cpu_cost_rnn_us(const pl_graph_api *g, const pl_graph_view *v, size_t n, double f,
                              int resident)
{
    double flops, bytes;
    pl_cost_work(g, v, n, &flops, &bytes);
    double c = f * flops / (pl_cost_gflops() * 1e3);
    double m = pl_cost_memory_us(g, v, n, bytes, resident);
    return c > m ? c : m;
}

/* One kernel dispatched in the caller (the core's PL_PART_INLINE_STEP_US,
 * which its default adds per node). */
#define CPU_COST_STEP_US 0.4

int cpu_estimate_cost(pl_module_ctx *ctx, int device, const pl_graph_view *v,
                      const size_t *nodes, size_t n_nodes, pl_cost *out)
{
    (void)ctx;
    (void)device;
    const pl_graph_api *g = cpu_host->graph;
    size_t n_all = g->node_count(v);
    double compute = 0, launch = 0;
    int resident = pl_cost_weights_resident(g, v);
    for (size_t i = 0; i < n_nodes; i++) {
        if (nodes[i] >= n_all)
            continue;
        double f = cpu_cost_factor(g, v, nodes[i]);
        /* the core spreads compute over its threads: scaled as the
         * default's whole was */
        compute += cpu_cost_is_rnn(g->node_op(v, nodes[i]))
                       ? cpu_cost_rnn_us(g, v, nodes[i], f, resident)
                       : f * pl_cost_default_us(g, v, nodes[i]);
        launch += f * CPU_COST_STEP_US;
    }
    out->compute_us = compute;
    out->launch_us = launch;
    out->boundary_us = 0;
    return 1;
}
