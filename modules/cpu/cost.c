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
#include "gemm.h"
#include "rnn.h"

#include <plinth/cost.h>

#include <pthread.h>
#include <stdlib.h>
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
    {"Tile", 1.7},          {"LayerNormalization", 2.1}, {"ReduceMean", 1.6},
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
 *   other kernels      5.2    3.6    2.5             7.0   18.0   18.0
 *   filter bank        1.0    1.0    1.0             5.0    5.0    5.0
 * (a filter bank: at most 4 input channels, one group, a GEMM depth of at
 * least CPU_COST_DEEP_STEM: below) */
/* The GEMM depth (channels x taps) from which a convolution of at most 4
 * input channels counts as 1-D rather than a stem. */
#define CPU_COST_DEEP_STEM 256

/* The factor of a convolution into one output channel whose time is its
 * im2col matrix's (cpu_cost_conv_factor); into OC channels, this / OC. */
#define CPU_COST_IM2COL_FACTOR 7.5

static double cpu_cost_conv_factor(const pl_graph_api *g, const pl_graph_view *v, size_t n,
                                   size_t wi, int quant)
{
    static const double table[2][6][3] = {
        {{2.4, 2.4, 2.4}, {8.7, 3.5, 2.2}, {4.7, 6.8, 3.9}, {2.1, 2.1, 1.6}, {5.2, 3.6, 2.5},
         {1.0, 1.0, 1.0}},
        {{5.0, 5.0, 5.0}, {17.0, 17.0, 17.0}, {18.0, 18.0, 18.0}, {5.0, 7.5, 7.5},
         {7.0, 18.0, 18.0}, {5.0, 5.0, 5.0}},
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
    /* A stem's GEMM is shallow (3 channels by 3x3 or 7x7 taps: depth
     * 27-147); a few channels by many taps is a deep one, a filter bank
     * that im2col and the GEMM run near the default rate: onnx-asr's
     * resamplers (1 channel by 1 x 459 taps, 0.14 ms where the stem factor
     * said 0.65) and STFTs written as 1-D convolutions (GigaAM's 1 -> 322
     * channels by 320 taps at stride 160: 256 us, 1.07x the default),
     * 0.94x over the six of the speech zoo (bench/cost_check.py --nodes,
     * 2026-12-04), where the 1-D factor said 2.4 and placement gave them
     * to oneDNN's direct kernel, no faster and with reorders around it. */
    int kind = group == 1 && w[1] <= 4 && w[1] * taps >= CPU_COST_DEEP_STEM ? 5
               : r == 3                   ? 0  /* 1-D */
               : group > 1 && w[1] == 1   ? 1  /* depthwise */
               : group == 1 && w[1] <= 4  ? 2  /* stem */
               : taps == 1                ? 3  /* 1x1 */
                                          : 4;
    double f = table[quant != 0][kind][size];
    /* Into a few output channels, im2col's matrix (taps x channels by
     * pixels, written then read once per output channel) costs more than
     * the GEMM's multiply-adds: 32 -> 1 channels 7x3 on 172x88, 8 -> 1 5x5
     * on 172x264 and 64 -> 1 3x3 on 128x128 took 0.85-0.98 ms, 2.6-3.3x
     * the "other kernels" estimate, 0.1 ns per element of the matrix at 2
     * threads whatever the channels out (8 -> 8 through 3x39 on 172x264,
     * 32 -> 3 9x9 on 128x128: 4.8-5.0 ms for 42.5M elements). Not from
     * up to 4 channels in: one channel of 1-D reads its input in place as
     * the GEMM's B (NN_CONV_STRIDED), a long filter of one row runs
     * direct (NN_CONV_FIR), and stems keep their own factors. */
    if (!quant && group == 1 && (kind == 0 || kind == 4) && w[1] > 4 && w[0] >= 1 && w[0] <= 8 &&
        f < CPU_COST_IM2COL_FACTOR / (double)w[0])
        f = CPU_COST_IM2COL_FACTOR / (double)w[0];
    return f;
}

/* MatMul's and Gemm's factors are the geometric means of the zoos'
 * products, mostly small ones (a transformer's heads and projections at a
 * few tokens) that spend a good part of their time outside the GEMM's
 * loop. A big product runs at the loop's rate: on an AVX2 EPYC (2 threads,
 * single-op models) 128 x 768 x 3072 took 5.3 ms, 256 x 1024 x 1024 4.6
 * ms and 24 x 1024 x 8210 4.8-6.3 ms, 0.7-1.2 times the default where 2.4
 * said 3.4x that, and placement kept dddd_ocr's classifier on oneDNN's
 * gemm:jit at 1.4-1.7x the cpu module's time. Products of at least
 * CPU_COST_BIG_PRODUCT_FLOPS take CPU_COST_BIG_PRODUCT_FACTOR. */
#define CPU_COST_BIG_PRODUCT_FLOPS 5e7
#define CPU_COST_BIG_PRODUCT_FACTOR 1.3
/* Below AVX-512 the default rate halves (PL_COST_GFLOPS_AVX2) but a
 * product by constant weights, packed once, runs its 6 x 16 kernel near
 * that rate: on an AVX2 EPYC (2 threads, `plinth run` steps over the three
 * zoos) they took 0.44-0.62 of the 2.4 estimate (vit_s's 17 x 64 x 192
 * 6 us against 13.5, 17 x 256 x 256 22-23 us against 68), and placement
 * sent vit_s's encoder to oneDNN at 150 us a run against cpu's 85
 * (bench/cost_check.py). Products of two activations (attention heads)
 * keep the factor: 0.97-1.45 of it. */
#define CPU_COST_AVX2_PACKED_FACTOR 1.1

/* Readers and writers of every tensor of the view last asked about,
 * counted once per view: the partitioner asks about one node at a time,
 * and counting them per node (every node of the view scanned for each view
 * op) took 42% of planning a GPT-2 base decoder step's quick tail (1367
 * nodes, 300 of them views). The view is recognised by its address, node
 * and tensor counts and its first and last nodes' names (an estimate's
 * heuristic: a stale table could only misprice a view). One per module
 * instance, under its lock: sessions may be planned on several threads. */
struct cpu_cost_uses {
    pthread_mutex_t mu;
    const pl_graph_view *view;
    size_t nodes, tensors;
    const char *first, *last;
    uint32_t *readers, *writers;
};

cpu_cost_uses *cpu_cost_uses_create(void)
{
    cpu_cost_uses *u = calloc(1, sizeof *u);
    if (u != NULL && pthread_mutex_init(&u->mu, NULL) != 0) {
        free(u);
        u = NULL;
    }
    return u;
}

void cpu_cost_uses_destroy(cpu_cost_uses *u)
{
    if (u == NULL)
        return;
    pthread_mutex_destroy(&u->mu);
    free(u->readers);
    free(u->writers);
    free(u);
}

/* Tensor T's readers and writers in view V (false when they cannot be
 * counted). */
static bool cpu_cost_uses_of(cpu_cost_uses *u, const pl_graph_api *g, const pl_graph_view *v,
                             int64_t t, uint32_t *out_readers, uint32_t *out_writers)
{
    if (u == NULL)
        return false;
    size_t n_all = g->node_count(v), n_t = g->tensor_count(v);
    const char *first = n_all > 0 ? g->node_name(v, 0) : NULL;
    const char *last = n_all > 0 ? g->node_name(v, n_all - 1) : NULL;
    pthread_mutex_lock(&u->mu);
    if (!(u->view == v && u->nodes == n_all && u->tensors == n_t && u->first == first &&
          u->last == last && u->readers != NULL)) {
        free(u->readers);
        free(u->writers);
        u->view = NULL;
        u->readers = calloc(n_t + 1, sizeof *u->readers);
        u->writers = calloc(n_t + 1, sizeof *u->writers);
        if (u->readers == NULL || u->writers == NULL) {
            free(u->readers);
            free(u->writers);
            u->readers = u->writers = NULL;
            pthread_mutex_unlock(&u->mu);
            return false;
        }
        for (size_t m = 0; m < n_all; m++) {
            for (size_t k = 0; k < g->node_input_count(v, m); k++) {
                int64_t x = g->node_input(v, m, k);
                if (x >= 0 && (size_t)x < n_t)
                    u->readers[x]++;
            }
            for (size_t k = 0; k < g->node_output_count(v, m); k++) {
                int64_t x = g->node_output(v, m, k);
                if (x >= 0 && (size_t)x < n_t)
                    u->writers[x]++;
            }
        }
        for (size_t k = 0; k < g->output_count(v); k++) {
            int64_t x = g->output(v, k);
            if (x >= 0 && (size_t)x < n_t)
                u->readers[x]++;
        }
        u->view = v;
        u->nodes = n_all;
        u->tensors = n_t;
        u->first = first;
        u->last = last;
    }
    bool ok = t >= 0 && (size_t)t < n_t;
    if (ok) {
        *out_readers = u->readers[t];
        *out_writers = u->writers[t];
    }
    pthread_mutex_unlock(&u->mu);
    return ok;
}

/* Whether node N is a Reshape, Flatten, Squeeze, Unsqueeze or Identity
 * whose data input another node writes and nothing else reads: the
 * module's copy kernel (shape.c, inplace_ok) then gets the input's bytes
 * as its output and copies nothing. Costed as a copy, a lone Reshape of
 * whisper's [2, 402, 3001] STFT frames went to onednn, which copied its
 * 9.6 MB out (1.3 ms) where the cpu module took none. */
static int cpu_cost_free_view(pl_module_ctx *ctx, const pl_graph_api *g, const pl_graph_view *v,
                              size_t n)
{
    static const char *const views[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                        "Identity"};
    const char *op = g->node_op(v, n);
    int is_view = 0;
    for (size_t k = 0; k < sizeof views / sizeof *views; k++)
        is_view |= strcmp(op, views[k]) == 0;
    if (!is_view || g->node_input_count(v, n) < 1)
        return 0;
    int64_t t = g->node_input(v, n, 0);
    if (t < 0)
        return 0;
    uint32_t readers, writers;
    return cpu_cost_uses_of(ctx->cost_uses, g, v, t, &readers, &writers) && readers == 1 &&
           writers == 1;
}

static double cpu_cost_factor(pl_module_ctx *ctx, const pl_graph_api *g,
                              const pl_graph_view *v, size_t n)
{
    const char *op = g->node_op(v, n);
    if (cpu_cost_free_view(ctx, g, v, n))
        return 0.0;
    if (strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0) {
        double flops = 0, bytes = 0;
        pl_cost_work(g, v, n, &flops, &bytes);
        if (flops >= CPU_COST_BIG_PRODUCT_FLOPS)
            return CPU_COST_BIG_PRODUCT_FACTOR;
        const void *data = NULL;
        size_t size = 0;
        if (strcmp(cpu_gemm_isa(), "avx2") == 0 && g->node_input_count(v, n) > 1 &&
            g->tensor_constant(v, g->node_input(v, n, 1), &data, &size))
            return CPU_COST_AVX2_PACKED_FACTOR;
    }
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

/* An RNN, GRU or LSTM (rnn.c) is two phases. The input projection, one
 * product over every step at once, runs at the GEMM's rate (Gemm's factor)
 * and spreads over the threads: *COMPUTE. The recurrence runs one step after
 * another and does not: *SERIAL. Each step multiplies by R, re-reading it:
 * a task per direction reads its direction's R, from a core's cache when it
 * fits there, else from memory; split by hidden units (rnn.h), each thread
 * reads its slice, which a 2 MB L2 keeps at about 57 GB/s (2 MB slices of a
 * 512-wide LSTM: 35 us a step), and the step waits for the slowest
 * (CPU_COST_RNN_SYNC_US). CPU_COST_RNN_STEP_US is a step's fixed cost (the
 * product's call, the gates): 7 to 12 us for 7 to 9 steps of layers 24 to
 * 32 wide. A flat factor of 5 on the FLOPs (fitted on those small layers)
 * put a 24-step 512-wide one at 5.9 ms; it took 2.5. */
#define CPU_COST_RNN_GEMM_FACTOR 1.8
#define CPU_COST_RNN_STEP_US 0.8
#define CPU_COST_RNN_SYNC_US 4.0
#define CPU_COST_RNN_SLICE_GBPS 57.0

/* 0 when node N is no RNN, GRU or LSTM, or its dims are not known. */
static int cpu_cost_rnn(pl_module_ctx *ctx, const pl_graph_api *g, const pl_graph_view *v,
                        size_t n, int resident, double *compute, double *serial)
{
    int64_t x[8], w[8], r[8], layout = 0, lbr = 0;
    rnn_kind kind;
    if (!rnn_kind_of(g->node_op(v, n), &kind) || pl_cost_dims(g, v, g->node_input(v, n, 0), x) != 3 ||
        pl_cost_dims(g, v, g->node_input(v, n, 1), w) != 3 ||
        pl_cost_dims(g, v, g->node_input(v, n, 2), r) != 3)
        return 0;
    g->attr_int(v, n, "layout", &layout);
    g->attr_int(v, n, "linear_before_reset", &lbr);
    double steps = (double)(layout ? x[1] : x[0]), batch = (double)(layout ? x[0] : x[1]);
    double dirs = (double)w[0], gh = (double)w[1], in = (double)w[2], hs = (double)r[2];
    double gemm = pl_cost_gflops() * 1e3 / CPU_COST_RNN_GEMM_FACTOR;
    double proj = 2.0 * steps * batch * dirs * gh * in / gemm;
    /* W is read once a run, its product split over the threads: each
     * core's share stays in its cache between runs when it fits there,
     * whatever the rest of the model weighs (thai2rom_dec's one-step LSTM,
     * W 1.5 MB of a 3 MB model: estimated 67 us at the memory rate, ran in
     * 26 on two threads) */
    int threads = cpu_host->thread_count(ctx->host_ctx);
    double wbytes = 4.0 * dirs * gh * in;
    int w_cached = resident || wbytes / (threads > 0 ? threads : 1) <= (double)PL_COST_CACHE_BYTES;
    double wread = wbytes / ((w_cached ? PL_COST_CACHE_GBPS : PL_COST_GBPS) * 1e3);
    *compute = proj > wread ? proj : wread;
    const void *data;
    size_t size;
    int r_const = g->tensor_constant(v, g->node_input(v, n, 2), &data, &size);
    int64_t units;
    int64_t slices = rnn_split_slices(kind, lbr != 0, (int64_t)batch, (int64_t)gh, (int64_t)hs,
                                      threads, r_const, &units);
    double rdir = 4.0 * gh * hs, flops = 2.0 * batch * gh * hs, per;
    if (slices > 0) {
        double bytes = rdir / (double)slices, c = flops / (double)slices / gemm;
        double m = bytes / ((bytes <= 2.0 * PL_COST_CACHE_BYTES ? CPU_COST_RNN_SLICE_GBPS
                                                                 : PL_COST_GBPS) * 1e3);
        per = (c > m ? c : m) + CPU_COST_RNN_SYNC_US + CPU_COST_RNN_STEP_US;
        *serial = steps * dirs * per;
    } else {
        /* the directions side by side when there are threads for them */
        double rounds = threads >= 2 ? 1 : dirs;
        double m = rdir / ((rdir <= PL_COST_CACHE_BYTES ? PL_COST_CACHE_GBPS : PL_COST_GBPS) *
                           1e3);
        double c = flops / gemm;
        per = (c > m ? c : m) + CPU_COST_RNN_STEP_US;
        *serial = steps * rounds * per;
    }
    return 1;
}

/* A product of one row by a constant matrix (M = 1: a batch-1 MLP or
 * classifier head, an RNN written as a Loop or Scan, an LLM's decode
 * step): the matrix is all its work, read a column range a thread, each
 * thread's share from its core's cache when it fits there (the kernel
 * splits the same ranges every call). Written 0 when node N is no such
 * product. 512 x 2048 (4 MiB): 20-31 us on two threads, where oneDNN's
 * gemm:jit took 123 (single-op model); six 1024 x 1024 layers 0.38 ms
 * against 0.59-0.68. */
static int cpu_cost_gemv(pl_module_ctx *ctx, const pl_graph_api *g, const pl_graph_view *v,
                         size_t n, double *compute)
{
    const char *op = g->node_op(v, n);
    int64_t y[8], w[8];
    const void *data;
    size_t size;
    int32_t r = (strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0)
                    ? pl_cost_dims(g, v, g->node_output(v, n, 0), y)
                    : -1;
    double rows = 1;
    for (int32_t d = 0; d + 1 < r; d++)
        rows *= (double)y[d];
    if (r < 1 || rows != 1 || g->node_input_count(v, n) < 2 ||
        pl_cost_dims(g, v, g->node_input(v, n, 1), w) != 2 ||
        !g->tensor_constant(v, g->node_input(v, n, 1), &data, &size))
        return 0;
    int threads = cpu_host->thread_count(ctx->host_ctx);
    double wbytes = (double)size, share = wbytes / (threads > 0 ? threads : 1);
    double m = share / ((share <= 2.0 * PL_COST_CACHE_BYTES ? CPU_COST_RNN_SLICE_GBPS
                                                            : PL_COST_GBPS) * 1e3);
    double c = 2.0 * (double)w[0] * (double)w[1] / (pl_cost_gflops() * 1e3);
    *compute = c > m ? c : m;
    return 1;
}

/* One kernel dispatched in the caller (the core's PL_PART_INLINE_STEP_US,
 * which its default adds per node). */
#define CPU_COST_STEP_US 0.4
/* Making one kernel (cpu_get_kernel: checks, the operands' layout; packed
 * weights are shared between plans, packshare.c): a 2-layer GPT-2's tail of
 * 134 nodes, planned a generation step at a time, spent 57 us a plan there
 * (perf, 149 steps). pl_cost.prepare_us. */
#define CPU_COST_MAKE_US 0.5

/* Packing a constant B for a product of more than one row (matmul.c's
 * cpu_gemm_alloc), in bytes of B a microsecond, below and from
 * CPU_COST_PACK_BIG bytes: cpu_gemm_pack_b into fresh memory, as a
 * kernel's first packing writes, took 74 us for 256 x 256 (3.5 GB/s),
 * 0.76 ms for 768 x 768, 2.7-4.4 ms for GPT-2 base's 768 x 3072 and back,
 * 81 ms for its 768 x 50257 (1.7-3.5 GB/s, 1.9 past the caches; 8-16 in
 * warm memory); all 497 MB of it took 349 ms when a staged tail first put
 * a prompt's products on cpu. */
#define CPU_COST_PACK_BYTES_PER_US 3500.0
#define CPU_COST_PACK_BIG_BYTES_PER_US 2000.0
#define CPU_COST_PACK_BIG ((size_t)4 << 20)

/* The one-off packing of node N's constant B, in microseconds: 0 when the
 * kernel reads B in place (one row: cpu_gemm_m1_in_place) or a packed copy
 * of it is shared already (packshare.c, by the address its first maker
 * read), or the node is no such product. Part of pl_cost.prepare_us, which
 * placement weighs only for plans that serve few runs: a staged GPT-2
 * base's prompt at a second length put its products on cpu beside
 * onednn's copies of the weights, laid out already, and packed them all
 * again (324 ms for a step that then ran in 36). */
static double cpu_cost_pack_us(pl_module_ctx *ctx, const pl_graph_api *g, const pl_graph_view *v,
                               size_t n)
{
    const char *op = g->node_op(v, n);
    bool gemm = strcmp(op, "Gemm") == 0;
    if ((!gemm && strcmp(op, "MatMul") != 0) || ctx->blas_pool || g->node_input_count(v, n) < 2)
        return 0;
    int64_t y[8], w[8];
    int32_t r = pl_cost_dims(g, v, g->node_output(v, n, 0), y);
    int64_t b = g->node_input(v, n, 1);
    const void *data = NULL;
    size_t size = 0;
    pl_dtype dt;
    int32_t nd;
    const int64_t *dims;
    if (r < 1 || pl_cost_dims(g, v, b, w) != 2 || !g->tensor_type(v, b, &dt, &nd, &dims) ||
        !PL_DTYPE_EQ(dt, PL_DTYPE_F32) || !g->tensor_constant(v, b, &data, &size))
        return 0;
    double rows = 1;
    for (int32_t d = 0; d + 1 < r; d++)
        rows *= (double)y[d];
    int64_t trans_b = 0;
    if (gemm && !g->attr_int(v, n, "transB", &trans_b))
        trans_b = 0;
    int64_t kk = trans_b ? w[1] : w[0], cols = trans_b ? w[0] : w[1];
    if (rows <= 1 || kk <= 0 || cols <= 1)
        return 0;
    size_t packed = cpu_gemm_packed_b_floats(kk, cols) * sizeof(float);
    const int64_t params[] = {CPU_SHARE_GEMM_B, kk, cols, trans_b != 0};
    if (cpu_share_has(ctx, data, size, params, 4, packed))
        return 0;
    return (double)size / (size < CPU_COST_PACK_BIG ? CPU_COST_PACK_BYTES_PER_US
                                                    : CPU_COST_PACK_BIG_BYTES_PER_US);
}

int cpu_estimate_cost(pl_module_ctx *ctx, int device, const pl_graph_view *v,
                      const size_t *nodes, size_t n_nodes, pl_cost *out)
{
    (void)device;
    const pl_graph_api *g = cpu_host->graph;
    size_t n_all = g->node_count(v);
    double compute = 0, launch = 0, pack = 0;
    int resident = pl_cost_weights_resident(g, v);
    for (size_t i = 0; i < n_nodes; i++) {
        if (nodes[i] >= n_all)
            continue;
        pack += cpu_cost_pack_us(ctx, g, v, nodes[i]);
        double f = cpu_cost_factor(ctx, g, v, nodes[i]);
        /* the core spreads compute over its threads: scaled as the
         * default's whole was */
        double c, serial;
        if (cpu_cost_rnn(ctx, g, v, nodes[i], resident, &c, &serial)) {
            compute += c;
            launch += CPU_COST_STEP_US + serial;
            continue;
        }
        if (cpu_cost_gemv(ctx, g, v, nodes[i], &c)) {
            compute += c;
            launch += CPU_COST_STEP_US;
            continue;
        }
        compute += f * pl_cost_default_us(g, v, nodes[i]);
        launch += (f > 0 ? f : 1.0) * CPU_COST_STEP_US;
    }
    out->compute_us = compute;
    out->launch_us = launch;
    out->boundary_us = 0;
    if (PL_ABI_HAS_FIELD(pl_cost, out, prepare_us))
        out->prepare_us = (double)n_nodes * CPU_COST_MAKE_US + pack;
    return 1;
}
