/* plinth/cost.h — the work of a node in floating-point operations and bytes
 * moved, and the core's default rates that turn them into microseconds: the
 * model behind cost-aware placement (pl_module_api.estimate_cost, ABI 1.3).
 *
 * The core estimates a node this way when its module gives no estimate; a
 * module that gives one may start from the same numbers and scale them by
 * what it knows of its kernels (oneDNN's blocked convolutions run about
 * twice the default rate; an RNN primitive costs a fixed setup per run).
 * Counting is by ONNX's definitions: a multiply-add is 2 FLOPs; elementwise
 * ops count one per output element, except those that evaluate a
 * transcendental function (pl_cost_per_element: a range reduction and a
 * polynomial, 4 to 60 FLOPs); bytes are those of every input and output
 * once. A tensor whose shape is not fully known counts as empty.
 *
 * The default rates describe one core of a current x86 server running a
 * good compiled kernel (measured on the project's machine with the cpu
 * module: resnet18's convolutions at about 85 GFLOP/s, a memory-bound
 * elementwise chain at about 15 GB/s) and the fixed cost of one step the
 * core dispatches (about 1.5 us: 16 Tanh on [1,64], one kernel each). They
 * are a prior, not a promise: only their ratios decide a placement.
 *
 * Header-only (static inline), standard C only: nothing crosses the module
 * boundary through it. */
#ifndef PLINTH_COST_H
#define PLINTH_COST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_COST_GFLOPS 85.0     /* compute rate with AVX-512, GFLOP/s (pl_cost_gflops) */
#define PL_COST_GBPS 15.0       /* default memory rate, GB/s */
#define PL_COST_STEP_US 1.5     /* one kernel or subgraph dispatched */
#define PL_COST_COPY_GBPS 10.0  /* a copy between host and a device */
#define PL_COST_COPY_US 10.0    /* fixed cost of one such copy */
#define PL_COST_HANDOFF_US 8.0  /* work handed to or from another thread */

/* Elements and bytes of tensor T of VIEW (0 when absent or not fully
 * known). */
static inline double pl_cost_elems(const pl_graph_api *g, const pl_graph_view *v, int64_t t,
                                   double *out_bytes)
{
    pl_dtype dt;
    int32_t ndim = -1;
    const int64_t *dims = NULL;
    if (out_bytes != NULL)
        *out_bytes = 0;
    if (t < 0 || !g->tensor_type(v, t, &dt, &ndim, &dims) || ndim < 0)
        return 0;
    double e = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < 0)
            return 0;
        e *= (double)dims[d];
    }
    if (out_bytes != NULL)
        *out_bytes = e * (double)(dt.bits * (dt.lanes ? dt.lanes : 1)) / 8.0;
    return e;
}

/* The dims of T into DIMS (at most 8); its rank, or -1. */
static inline int32_t pl_cost_dims(const pl_graph_api *g, const pl_graph_view *v, int64_t t,
                                   int64_t dims[8])
{
    pl_dtype dt;
    int32_t ndim = -1;
    const int64_t *d = NULL;
    if (t < 0 || !g->tensor_type(v, t, &dt, &ndim, &d) || ndim < 0 || ndim > 8)
        return -1;
    for (int32_t i = 0; i < ndim; i++) {
        if (d[i] < 0)
            return -1;
        dims[i] = d[i];
    }
    return ndim;
}

/* FLOPs per output element of elementwise op OP: 1, or what a vectorised
 * kernel spends on its function (e^x: a Cody-Waite reduction and a
 * degree-6 polynomial, about 20; Softmax: max, e^x, sum and scale).
 * Counted as 1, a Softmax of [1, 8, 128, 128] was estimated at a tenth of
 * the 0.38 ms the cpu module takes, and an attention block stayed there
 * instead of on onednn, whose Softmax took 0.11 ms. */
static inline double pl_cost_per_element(const char *op)
{
    static const struct {
        const char *op;
        double flops;
    } table[] = {
        {"Exp", 20},     {"Log", 20},        {"Sigmoid", 24}, {"Tanh", 24},   {"Erf", 24},
        {"Gelu", 30},    {"Softplus", 40},   {"Elu", 22},     {"Selu", 22},   {"Celu", 22},
        {"Mish", 60},    {"Pow", 40},        {"Sin", 20},     {"Cos", 20},    {"Tan", 30},
        {"Softmax", 26}, {"LogSoftmax", 46}, {"Sqrt", 4},     {"Reciprocal", 4},
        {"Div", 4},      {"HardSwish", 4},   {"HardSigmoid", 3},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].op) == 0)
            return table[i].flops;
    return 1;
}

/* Whether OP reads of its first input only the elements it writes (a
 * Gather, Slice, ...: 1) or nothing of them (Shape, Size: 2); 0 for
 * every other op. Counted whole, one token's row of a 31 MB embedding
 * table was estimated at 2 ms, and a Loop body's Gather of one 6.4 KB
 * row of a product at 9 us. */
static inline int pl_cost_selects(const char *op)
{
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0)
        return 2;
    return strcmp(op, "Gather") == 0 || strcmp(op, "GatherElements") == 0 ||
           strcmp(op, "GatherND") == 0 || strcmp(op, "Slice") == 0;
}

/* The FLOPs and bytes of node N of VIEW. */
static inline void pl_cost_work(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                double *out_flops, double *out_bytes)
{
    const char *op = g->node_op(v, n);
    double bytes = 0, b, first = 0;
    for (size_t i = 0; i < g->node_input_count(v, n); i++) {
        pl_cost_elems(g, v, g->node_input(v, n, i), &b);
        bytes += b;
        if (i == 0)
            first = b;
    }
    double out_elems = 0, out_bytes_sum = 0;
    for (size_t i = 0; i < g->node_output_count(v, n); i++) {
        out_elems += pl_cost_elems(g, v, g->node_output(v, n, i), &b);
        bytes += b;
        out_bytes_sum += b;
    }
    int selects = pl_cost_selects(op);
    if (selects == 2)
        bytes -= first;
    else if (selects == 1 && first > out_bytes_sum)
        bytes -= first - out_bytes_sum;
    double flops = out_elems * pl_cost_per_element(op);
    int64_t x[8], w[8], y[8];
    int32_t xr = pl_cost_dims(g, v, g->node_input(v, n, 0), x);
    int32_t wr = g->node_input_count(v, n) > 1 ? pl_cost_dims(g, v, g->node_input(v, n, 1), w)
                                                : -1;
    int32_t yr = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    if ((strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0) && wr >= 3 && xr >= 3 &&
        yr >= 3) {
        /* Every output (input, for a transposed one) element of every output
         * channel reads C/group x kernel inputs: W is [M, C/g, k...] for Conv
         * and [C, M/g, k...] for ConvTranspose, so one product covers both. */
        double k = 1;
        for (int32_t d = 2; d < wr; d++)
            k *= (double)w[d];
        double spatial = 1;
        const int64_t *s = op[4] == 'T' ? x : y;
        for (int32_t d = 2; d < (op[4] == 'T' ? xr : yr); d++)
            spatial *= (double)s[d];
        flops = 2.0 * (double)s[0] * (double)w[0] * (double)w[1] * k * spatial;
    } else if ((strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0) && xr >= 1 && wr >= 1 &&
               yr >= 1) {
        /* Y has the M x N results, each a K-long dot product: K is A's last
         * dim (its first for a Gemm with transA). */
        double k = (double)x[xr - 1];
        int64_t ta = 0;
        if (strcmp(op, "Gemm") == 0 && g->attr_int(v, n, "transA", &ta) && ta)
            k = (double)x[0];
        double ye = 1;
        for (int32_t d = 0; d < yr; d++)
            ye *= (double)y[d];
        flops = 2.0 * ye * k;
    } else if ((strcmp(op, "RNN") == 0 || strcmp(op, "GRU") == 0 ||
                strcmp(op, "LSTM") == 0) && xr == 3 && wr == 3) {
        /* Per step and direction: the gates' products with X and H. W is
         * [dirs, gates*H, I]; R is [dirs, gates*H, H]. */
        int64_t layout = 0;
        g->attr_int(v, n, "layout", &layout);
        double steps = (double)(layout ? x[1] : x[0]), batch = (double)(layout ? x[0] : x[1]);
        double gh = (double)w[1], in = (double)w[2];
        double hidden = strcmp(op, "RNN") == 0 ? gh : strcmp(op, "GRU") == 0 ? gh / 3 : gh / 4;
        flops = 2.0 * steps * batch * (double)w[0] * gh * (in + hidden);
    }
    *out_flops = flops;
    *out_bytes = bytes;
}

/* The default compute rate of this host, GFLOP/s per core: PL_COST_GFLOPS
 * where the CPU has AVX-512 (the machine it was measured on); 40 with AVX2
 * and FMA (the cpu module's convolutions and products ran at 30-60 GFLOP/s
 * a core on an AVX2 AMD EPYC, bench/op_rates.py); 20 below that. Against
 * the fixed costs of a step, a boundary or a hand-off, which do not shrink
 * with the vector width, compute weighs more on a narrower machine. */
#define PL_COST_GFLOPS_AVX2 40.0
#define PL_COST_GFLOPS_BASE 20.0

static inline double pl_cost_gflops(void)
{
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return PL_COST_GFLOPS;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return PL_COST_GFLOPS_AVX2;
    return PL_COST_GFLOPS_BASE;
#else
    return PL_COST_GFLOPS;
#endif
}

/* Weights that stay in a core's cache from one run to the next. When all
 * the constants a view reads (pl_graph_api.constant_bytes, ABI 1.7) fit in
 * PL_COST_CACHE_BYTES, three quarters of a 2 MB L2, a run reads them from
 * there: on the project's AVX-512 Xeon a core sums 1 MB at 190 GB/s, 1.5 MB
 * at 148, 2 MB at 77 and 3 MB or more at 28-35 (from L3 and memory). At
 * PL_COST_GBPS, a small speech model's 1.2 MB of weights made its 25 us
 * run on the cpu module an estimated 160 us, and placement handed it to a
 * backend on another thread that took 30-100 us. PL_COST_CACHE_GBPS stands
 * to that L2 rate as PL_COST_GBPS does to memory's: what a kernel gets,
 * not what a bare read loop does. */
#define PL_COST_CACHE_BYTES ((size_t)3 << 19)
#define PL_COST_CACHE_GBPS 60.0

/* Whether VIEW's constants stay in cache between runs (0 with a core older
 * than ABI 1.7, which does not say how many there are). */
static inline int pl_cost_weights_resident(const pl_graph_api *g, const pl_graph_view *v)
{
    return PL_ABI_HAS_FN(pl_graph_api, g, constant_bytes) &&
           g->constant_bytes(v) <= PL_COST_CACHE_BYTES;
}

/* The memory time of node N, which moves BYTES (pl_cost_work): at
 * PL_COST_GBPS, but its constant inputs at PL_COST_CACHE_GBPS when
 * RESIDENT (pl_cost_weights_resident). */
static inline double pl_cost_memory_us(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                       double bytes, int resident)
{
    double cached = 0, b;
    for (size_t i = 0; resident && i < g->node_input_count(v, n); i++) {
        int64_t t = g->node_input(v, n, i);
        const void *data;
        size_t size;
        if (t >= 0 && g->tensor_constant(v, t, &data, &size)) {
            pl_cost_elems(g, v, t, &b);
            cached += b;
        }
    }
    if (cached > bytes)
        cached = bytes;
    return (bytes - cached) / (PL_COST_GBPS * 1e3) + cached / (PL_COST_CACHE_GBPS * 1e3);
}

/* The default time of node N in microseconds: compute or memory, whichever
 * bounds it, without the dispatch. */
static inline double pl_cost_default_us(const pl_graph_api *g, const pl_graph_view *v, size_t n)
{
    double flops, bytes;
    pl_cost_work(g, v, n, &flops, &bytes);
    double c = flops / (pl_cost_gflops() * 1e3);
    double m = pl_cost_memory_us(g, v, n, bytes, pl_cost_weights_resident(g, v));
    return c > m ? c : m;
}

#ifdef __cplusplus
}
#endif

#endif /* PLINTH_COST_H */
