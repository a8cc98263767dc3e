/* onednn_subgraph.c — symbolic mode of the onednn module: which nodes it
 * takes (with a reason for each refusal), how a subgraph becomes a list of
 * fused oneDNN primitives, how that list runs, and how it is saved to and
 * restored from a blob for the core's cache.
 *
 * Compile walks the view's nodes in order. Each node becomes one primitive
 * (HardSigmoid and Selu two eltwise ones: oneDNN 2.6 has no single
 * algorithm for them), and a Conv, MatMul or Gemm also swallows the nodes
 * that follow it while each is the only reader of the previous one's
 * output: a constant bias Add, a residual Add (post-op sum: the residual
 * is reordered into the destination first), elementwise ops and scalar
 * Add/Sub/Mul/Div/Max/Min (post-op eltwise / linear / clip), the erf form
 * of GELU (post-op gelu_erf), and x*Sigmoid(x) or x*HardSigmoid(x) with
 * alpha 1/6, beta 1/2 (post-op swish / hardswish; also one eltwise step
 * where no product precedes them). The nine nodes of a decomposed
 * LayerNormalization become one layer_normalization primitive, and an
 * RNN, GRU or LSTM one oneDNN RNN primitive (gates reordered and biases
 * summed at compile time; see odnn_check_rnn). Ops that oneDNN would run
 * only with its reference kernels (a reduction keeping an axis after a
 * reduced one, LogSoftmax over an inner axis, a broadcast across the
 * channels of a 4-d tensor) are refused; an eltwise or binary step whose
 * blocked source only a reference kernel takes reads a plain copy.
 * Reshape, Flatten, Transpose, Identity, Squeeze, Unsqueeze, Split, Slice
 * (constant starts, ends, axes and positive steps), Gather of one constant
 * index and a reduction over
 * axes of one element emit nothing: their
 * outputs are strided views of their input's bytes, which MatMul reads in
 * place (and a MatMul read by a Transpose writes the transposed layout),
 * while any other reader gets a dense copy. Every tensor of the
 * subgraph is a "value" with a oneDNN memory descriptor:
 * convolutions choose their own (blocked) layouts through
 * dnnl_format_tag_any, and a reorder is inserted only where a reader wants
 * another layout than the writer chose, which in practice means at the
 * subgraph's plain inputs and outputs. Constant weights are reordered once,
 * at compile time, into the layout their primitive picked, and kept in the
 * compiled object. Intermediates share one arena, assigned greedily by
 * liveness, and every primitive uses one shared, user-managed scratchpad
 * sized to the largest. A run binds the boundary tensors and executes the
 * primitives in order on the compiled subgraph's stream.
 *
 * The blob. oneDNN 2.6 cannot serialise primitives, so export writes a
 * header (magic, format version, module version, oneDNN version and hash,
 * effective ISA, a hash of the subgraph), the fusion plan (the kind of every
 * step) and the reordered weights with their descriptors. import checks the
 * header, re-creates the primitives from the view — the plan must come out
 * the same — and takes the weights from the blob instead of reordering
 * them. Every count and size is checked before use. Each weight's bytes
 * start at a multiple of 64 from the blob's start, so that, where the core
 * keeps the blob mapped for the compiled subgraph's life (PL_CAP_KEEPS_BLOB,
 * ABI 1.6), the weights are read in place: the cache entry's pages are the
 * page cache's, and an import writes no fresh memory for them.
 *
 * The core never runs one compiled subgraph twice at once, so run keeps its
 * state (arena, scratchpad, memories) in the compiled object without locks. */
#define _POSIX_C_SOURCE 200809L
#define _GNU_SOURCE /* MAP_ANONYMOUS, madvise, pthread_setname_np */

#include "onednn.h"
#include "onednn_pace.h"

#include <plinth/auto_pad.h>
#include <plinth/cost.h>
#include <plinth/graph_hash.h>
#include <plinth/node_times.h>
#include <plinth/qlinear.h>

#include <float.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define ODNN_MAX_RANK 6      /* tensors of higher rank are refused */
#define ODNN_MAX_CONCAT 32   /* inputs of one Concat */
#define ODNN_MAX_ARGS (ODNN_MAX_CONCAT + 4)
#define ODNN_REASON 200
/* Winograd for 3x3 convs where odnn_wino_pays says so, with a scratchpad of at most this many bytes, else in slices of the
 * batch (odnn_conv_winograd). Mask / Keypoint R-CNN at 2 threads, run ms
 * and peak RSS MiB: 64 MiB 1102 / 1009 and 1357 / 1071; 48: 1130 / 991 and
 * 1412 / 1062; 32: 1136 / 982 and 1580 / 965 (ONNX Runtime 2972 / 1013 and
 * 2804 / 1080; no cap, no slices: 1142 / 1224 and 1588 / 1419). */
#define ODNN_WINO_MAX_SCRATCH ((size_t)48 << 20)
/* ... or, for a layer that cannot run in slices (one image), of at most
 * this many: direct costs it 1.2-2x, the memory is one shared buffer
 * (RetinaNet's P3-level head, 52 MB: 112 ms with Winograd, 137 direct;
 * peak RSS 506 against 494 MiB). */
#define ODNN_WINO_MAX_SCRATCH_WHOLE ((size_t)128 << 20)

/* ---- small helpers ------------------------------------------------------ */

static pl_status *odnn_error(pl_code code, const char *fmt, ...) PL_PRINTF_LIKE(2, 3);
static pl_status *odnn_error(pl_code code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pl_status *st = onednn_host->status_createv(code, fmt, ap);
    va_end(ap);
    return st;
}

static void odnn_reason(char *reason, const char *op, const char *fmt, ...) PL_PRINTF_LIKE(3, 4);
static void odnn_reason(char *reason, const char *op, const char *fmt, ...)
{
    int n = snprintf(reason, ODNN_REASON, "onednn: %s: ", op);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < ODNN_REASON)
        vsnprintf(reason + n, ODNN_REASON - (size_t)n, fmt, ap);
    va_end(ap);
}

/* What the view says of one tensor. */
struct odnn_tinfo {
    int known;     /* dtype and every dim known */
    int f32;
    int q8;        /* u8 or i8: a quantized activation (odnn_check_qconv) */
    int boolean;   /* bool: held as u8 (Where's condition) */
    dnnl_data_type_t dt; /* f32, u8, s8, s32, or undef for any other type */
    int32_t ndim;
    int64_t dims[ODNN_MAX_RANK];
    int64_t elems;
    const void *cdata; /* constant bytes, or NULL */
    size_t cbytes;
};

static int odnn_tensor(const pl_graph_view *v, int64_t t, struct odnn_tinfo *out)
{
    const pl_graph_api *g = onednn_host->graph;
    memset(out, 0, sizeof *out);
    if (t < 0)
        return 0;
    pl_dtype dt;
    int32_t ndim = -1;
    const int64_t *dims = NULL;
    if (!g->tensor_type(v, t, &dt, &ndim, &dims) || ndim < 0 || ndim > ODNN_MAX_RANK)
        return 0;
    out->f32 = PL_DTYPE_EQ(dt, PL_DTYPE_F32);
    out->q8 = PL_DTYPE_EQ(dt, PL_DTYPE_U8) || PL_DTYPE_EQ(dt, PL_DTYPE_I8);
    out->boolean = PL_DTYPE_EQ(dt, PL_DTYPE_BOOL);
    out->dt = out->f32                        ? dnnl_f32
              : PL_DTYPE_EQ(dt, PL_DTYPE_U8)  ? dnnl_u8
              : PL_DTYPE_EQ(dt, PL_DTYPE_I8)  ? dnnl_s8
              : PL_DTYPE_EQ(dt, PL_DTYPE_I32) ? dnnl_s32
                                              : dnnl_data_type_undef;
    out->ndim = ndim;
    out->elems = 1;
    out->known = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (dims[d] < 0 || dims[d] > ((int64_t)1 << 40))
            out->known = 0;
        out->dims[d] = dims[d];
        if (out->known)
            out->elems *= dims[d];
    }
    if (g->tensor_constant(v, t, &out->cdata, &out->cbytes) == 0)
        out->cdata = NULL;
    return 1;
}

static int64_t odnn_attr_int(const pl_graph_view *v, size_t n, const char *name, int64_t def)
{
    int64_t x;
    return onednn_host->graph->attr_int(v, n, name, &x) ? x : def;
}

static double odnn_attr_float(const pl_graph_view *v, size_t n, const char *name, double def)
{
    double x;
    return onednn_host->graph->attr_float(v, n, name, &x) ? x : def;
}

/* The ints attribute NAME: its count, or 0 when absent. */
static size_t odnn_attr_ints(const pl_graph_view *v, size_t n, const char *name,
                             const int64_t **out)
{
    size_t count = 0;
    *out = NULL;
    if (!onednn_host->graph->attr_ints(v, n, name, out, &count))
        return 0;
    return count;
}

/* Copies the string attribute NAME into buf, or DEF when absent. */
static const char *odnn_attr_string(const pl_graph_view *v, size_t n, const char *name,
                                    const char *def, char *buf, size_t size)
{
    const char *s;
    size_t len;
    if (!onednn_host->graph->attr_string(v, n, name, &s, &len))
        return def;
    if (len >= size)
        len = size - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return buf;
}

static int64_t odnn_in(const pl_graph_view *v, size_t n, size_t i)
{
    const pl_graph_api *g = onednn_host->graph;
    return i < g->node_input_count(v, n) ? g->node_input(v, n, i) : -1;
}

static int64_t odnn_out(const pl_graph_view *v, size_t n, size_t i)
{
    const pl_graph_api *g = onednn_host->graph;
    return i < g->node_output_count(v, n) ? g->node_output(v, n, i) : -1;
}

/* True when T is a constant f32 scalar (one element); its value in *out. */
static int odnn_scalar(const pl_graph_view *v, int64_t t, float *out)
{
    struct odnn_tinfo ti;
    if (!odnn_tensor(v, t, &ti) || !ti.known || !ti.f32 || ti.cdata == NULL || ti.elems != 1 ||
        ti.cbytes != sizeof(float))
        return 0;
    memcpy(out, ti.cdata, sizeof(float));
    return 1;
}

static const char *odnn_dims_text(const struct odnn_tinfo *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int32_t d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld",
                                 (long long)t->dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

/* ---- readers of each tensor ----------------------------------------------
 *
 * Fusion needs to know who reads a tensor: the consumers of every tensor of
 * the view, and whether it leaves the view. */

struct odnn_uses {
    size_t n_tensors;
    uint32_t *count;   /* readers inside the view, per tensor */
    uint32_t *first;   /* the first reader's node index */
    uint8_t *escapes;  /* the tensor is an output of the view */
    uint32_t *producer; /* node index + 1 of the writer, 0 for none */
    uint8_t *ln_channel; /* per node: part of a LayerNorm over channels */
    /* The readers of tensor t, in node order: reader[reader_at[t] ..
     * reader_at[t] + count[t]) (a node once per input that reads t). */
    uint32_t *reader_at;
    uint32_t *reader;
    int own; /* the module's own kernels run here (direct_conv, AVX2 below AVX-512) */
};

struct odnn_lnpat;
static int odnn_match_lnorm(const pl_graph_view *v, const struct odnn_uses *u, size_t r,
                            struct odnn_lnpat *out);
static int odnn_match_any_lnorm(const pl_graph_view *v, const struct odnn_uses *u, size_t r,
                                struct odnn_lnpat *out);

static void odnn_uses_free(pl_module_ctx *ctx, struct odnn_uses *u)
{
    onednn_host->host_free(ctx->host_ctx, u->count);
    onednn_host->host_free(ctx->host_ctx, u->first);
    onednn_host->host_free(ctx->host_ctx, u->escapes);
    onednn_host->host_free(ctx->host_ctx, u->producer);
    onednn_host->host_free(ctx->host_ctx, u->ln_channel);
    onednn_host->host_free(ctx->host_ctx, u->reader_at);
    onednn_host->host_free(ctx->host_ctx, u->reader);
    memset(u, 0, sizeof *u);
}

static pl_status *odnn_uses_patterns(pl_module_ctx *ctx, const pl_graph_view *v,
                                     struct odnn_uses *u);

/* The readers of every tensor of V into *U; with PATTERNS, also the nodes
 * of LayerNorms over channels (u->ln_channel, for the verdicts). */
static pl_status *odnn_uses_build_in(pl_module_ctx *ctx, const pl_graph_view *v,
                                     struct odnn_uses *u, int patterns)
{
    const pl_graph_api *g = onednn_host->graph;
    memset(u, 0, sizeof *u);
    u->own = ctx->direct && odnn_direct_usable();
    u->n_tensors = g->tensor_count(v);
    size_t n = u->n_tensors > 0 ? u->n_tensors : 1;
    u->count = onednn_host->host_alloc(ctx->host_ctx, n * sizeof *u->count, 0);
    u->first = onednn_host->host_alloc(ctx->host_ctx, n * sizeof *u->first, 0);
    u->escapes = onednn_host->host_alloc(ctx->host_ctx, n, 0);
    u->producer = onednn_host->host_alloc(ctx->host_ctx, n * sizeof *u->producer, 0);
    if (!u->count || !u->first || !u->escapes || !u->producer) {
        odnn_uses_free(ctx, u);
        return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory reading a graph");
    }
    memset(u->count, 0, n * sizeof *u->count);
    memset(u->escapes, 0, n);
    memset(u->producer, 0, n * sizeof *u->producer);
    size_t nodes = g->node_count(v);
    for (size_t i = 0; i < nodes; i++) {
        for (size_t k = 0; k < g->node_input_count(v, i); k++) {
            int64_t t = g->node_input(v, i, k);
            if (t >= 0 && (size_t)t < u->n_tensors) {
                /* A node reading one tensor twice (x*x) still counts once
                 * per input: it is not a single-reader chain. */
                if (u->count[t]++ == 0)
                    u->first[t] = (uint32_t)i;
            }
        }
        for (size_t k = 0; k < g->node_output_count(v, i); k++) {
            int64_t t = g->node_output(v, i, k);
            if (t >= 0 && (size_t)t < u->n_tensors)
                u->producer[t] = (uint32_t)i + 1;
        }
    }
    for (size_t i = 0; i < g->output_count(v); i++) {
        int64_t t = g->output(v, i);
        if (t >= 0 && (size_t)t < u->n_tensors)
            u->escapes[t] = 1;
    }
    /* The reader lists: the pattern matchers walk a tensor's readers
     * instead of every node of the view (a scan per candidate made the
     * estimate of a 960-node model quadratic). */
    size_t reads = 0;
    for (size_t t = 0; t < u->n_tensors; t++)
        reads += u->count[t];
    u->reader_at = onednn_host->host_alloc(ctx->host_ctx, n * sizeof *u->reader_at, 0);
    u->reader = onednn_host->host_alloc(ctx->host_ctx, (reads ? reads : 1) * sizeof *u->reader, 0);
    if (!u->reader_at || !u->reader) {
        odnn_uses_free(ctx, u);
        return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory reading a graph");
    }
    uint32_t at = 0;
    for (size_t t = 0; t < u->n_tensors; t++) {
        u->reader_at[t] = at;
        at += u->count[t];
    }
    uint32_t *fill = u->first; /* borrowed as the fill cursor, then restored */
    for (size_t t = 0; t < u->n_tensors; t++)
        fill[t] = u->reader_at[t];
    for (size_t i = 0; i < nodes; i++)
        for (size_t k = 0; k < g->node_input_count(v, i); k++) {
            int64_t t = g->node_input(v, i, k);
            if (t >= 0 && (size_t)t < u->n_tensors)
                u->reader[fill[t]++] = (uint32_t)i;
        }
    for (size_t t = 0; t < u->n_tensors; t++)
        u->first[t] = u->count[t] ? u->reader[u->reader_at[t]] : 0;
    return patterns ? odnn_uses_patterns(ctx, v, u) : NULL;
}

static pl_status *odnn_uses_build(pl_module_ctx *ctx, const pl_graph_view *v,
                                  struct odnn_uses *u)
{
    return odnn_uses_build_in(ctx, v, u, 1);
}

/* Reader I of T (I below u->count[T]), in node order. */
static size_t odnn_reader(const struct odnn_uses *u, int64_t t, uint32_t i)
{
    return u->reader[u->reader_at[t] + i];
}

/* The only reader of T inside the view, or -1 when T has another number of
 * readers or leaves the view. */
static int64_t odnn_sole_reader(const struct odnn_uses *u, int64_t t)
{
    if (t < 0 || (size_t)t >= u->n_tensors || u->escapes[t] || u->count[t] != 1)
        return -1;
    return u->first[t];
}

/* ---- GELU (erf form) -------------------------------------------------------
 *
 * oneDNN 2.6 has no erf eltwise, but it has gelu_erf, which is what
 * x * 0.5 * (1 + erf(x / sqrt 2)) computes. Exporters write it as
 * Div(x, 1.4142) or Mul(x, 0.7071) -> Erf -> Add 1 -> Mul by x -> Mul 0.5,
 * or with the 0.5 applied to x first. */

struct odnn_gelu {
    size_t nodes[10];
    size_t n_nodes;
    int64_t x;   /* the input */
    int64_t out; /* the output of the last node */
    dnnl_alg_kind_t alg; /* dnnl_eltwise_gelu_erf or dnnl_eltwise_gelu_tanh */
    size_t x_readers;    /* how many of the nodes read x */
};

static int odnn_op_is(const pl_graph_view *v, int64_t node, const char *op)
{
    if (node < 0)
        return 0;
    /* the first letter first: the pattern matchers and the cost estimate
     * ask every node of a view several ops (strcmp and the domain lookup
     * were 7% of an OCR model's session creation) */
    const char *o = onednn_host->graph->node_op(v, (size_t)node);
    return o[0] == op[0] && strcmp(o, op) == 0 &&
           onednn_host->graph->node_domain(v, (size_t)node)[0] == '\0';
}

/* For binary node N with inputs (a, b): the input that is not the scalar,
 * with the scalar in *out_c; -1 when neither is a scalar constant. */
static int64_t odnn_binary_scalar(const pl_graph_view *v, size_t n, float *out_c, int *out_first)
{
    if (onednn_host->graph->node_input_count(v, n) != 2)
        return -1;
    int64_t a = odnn_in(v, n, 0), b = odnn_in(v, n, 1);
    *out_first = 0;
    if (odnn_scalar(v, b, out_c))
        return a;
    if (odnn_scalar(v, a, out_c)) {
        *out_first = 1;
        return b;
    }
    return -1;
}

static int odnn_near(float a, double b)
{
    return fabs((double)a - b) <= 1e-4 * fabs(b);
}

/* The sole reader of node N's output when it is an OP, else -1; with
 * VALUE >= 0, also a binary op whose other input is a scalar
 * constant near VALUE. */
static int64_t odnn_next(const pl_graph_view *v, const struct odnn_uses *u, int64_t n,
                         const char *op, double value)
{
    float c;
    int first;
    int64_t r = n >= 0 ? odnn_sole_reader(u, odnn_out(v, (size_t)n, 0)) : -1;
    if (!odnn_op_is(v, r, op))
        return -1;
    if (value >= 0 && (odnn_binary_scalar(v, (size_t)r, &c, &first) < 0 || !odnn_near(c, value)))
        return -1;
    return r;
}

/* Whether GELU M runs on the module's own kernel: its tanh form below
 * AVX-512 (odnn_match_gelu_tanh). */
static int odnn_gelu_own(const struct odnn_gelu *m)
{
    return m->alg == dnnl_eltwise_gelu_tanh && !onednn_has_avx512();
}

/* The input of binary node R that is not tensor T. */
static int64_t odnn_other_in(const pl_graph_view *v, int64_t r, int64_t t)
{
    return odnn_in(v, (size_t)r, 0) == t ? odnn_in(v, (size_t)r, 1) : odnn_in(v, (size_t)r, 0);
}

/* The node that makes tensor T as Mul(X, c) with c a scalar near VALUE,
 * when R is T's only reader; else -1. */
static int64_t odnn_scaled_x(const pl_graph_view *v, const struct odnn_uses *u, int64_t t,
                             int64_t r, int64_t x, double value)
{
    float c;
    int first;
    if (t < 0 || (size_t)t >= u->n_tensors || u->producer[t] == 0 || odnn_sole_reader(u, t) != r)
        return -1;
    int64_t h = (int64_t)u->producer[t] - 1;
    if (!odnn_op_is(v, h, "Mul") || odnn_binary_scalar(v, (size_t)h, &c, &first) != x ||
        !odnn_near(c, value))
        return -1;
    return h;
}

/* The end of either GELU form after A, the Add of 1 (+ erf or tanh): a Mul
 * by x then a Mul by 0.5, a Mul by 0.5 then a Mul by x, or a Mul by
 * Mul(x, 0.5). Appends its nodes to OUT and sets OUT->out. */
static int odnn_gelu_tail(const pl_graph_view *v, const struct odnn_uses *u, int64_t x,
                          int64_t a, struct odnn_gelu *out)
{
    int64_t m1 = odnn_next(v, u, a, "Mul", -1);
    if (m1 < 0)
        return 0;
    int64_t other = odnn_other_in(v, m1, odnn_out(v, (size_t)a, 0));
    out->nodes[out->n_nodes++] = (size_t)m1;
    if (other == x) {
        int64_t m2 = odnn_next(v, u, m1, "Mul", 0.5);
        if (m2 < 0)
            return 0;
        out->nodes[out->n_nodes++] = (size_t)m2;
        out->out = odnn_out(v, (size_t)m2, 0);
        return 1;
    }
    float c;
    int first;
    if (odnn_binary_scalar(v, (size_t)m1, &c, &first) >= 0 && odnn_near(c, 0.5)) {
        /* 0.5 * (1 + ...) first, then the Mul by x (jax2tf) */
        int64_t m2 = odnn_next(v, u, m1, "Mul", -1);
        if (m2 < 0 || odnn_other_in(v, m2, odnn_out(v, (size_t)m1, 0)) != x)
            return 0;
        out->nodes[out->n_nodes++] = (size_t)m2;
        out->out = odnn_out(v, (size_t)m2, 0);
        return 1;
    }
    int64_t h = odnn_scaled_x(v, u, other, m1, x, 0.5); /* Mul(x, 0.5), read only by m1 */
    if (h < 0)
        return 0;
    out->nodes[out->n_nodes++] = (size_t)h;
    out->out = odnn_out(v, (size_t)m1, 0);
    return 1;
}

/* The tail after A, then OUT->x_readers: how many of the pattern's nodes
 * read x. */
static int odnn_gelu_finish(const pl_graph_view *v, const struct odnn_uses *u, int64_t a,
                            struct odnn_gelu *out)
{
    if (!odnn_gelu_tail(v, u, out->x, a, out))
        return 0;
    out->x_readers = 0;
    for (size_t k = 0; k < out->n_nodes; k++)
        for (size_t i = 0; i < onednn_host->graph->node_input_count(v, out->nodes[k]); i++)
            if (odnn_in(v, out->nodes[k], i) == out->x) {
                out->x_readers++;
                break;
            }
    return 1;
}

/* Matches the GELU pattern whose first node (the Div or Mul before Erf) is
 * D. Every intermediate must have no other reader. */
static int odnn_match_gelu(const pl_graph_view *v, const struct odnn_uses *u, size_t d,
                           struct odnn_gelu *out)
{
    float c;
    int first;
    int64_t x;
    if (odnn_op_is(v, (int64_t)d, "Div")) {
        x = odnn_binary_scalar(v, d, &c, &first);
        if (x < 0 || first || !odnn_near(c, 1.4142135623730951))
            return 0;
    } else if (odnn_op_is(v, (int64_t)d, "Mul")) {
        x = odnn_binary_scalar(v, d, &c, &first);
        if (x < 0 || !odnn_near(c, 0.7071067811865476))
            return 0;
    } else {
        return 0;
    }
    int64_t e = odnn_next(v, u, (int64_t)d, "Erf", -1);
    int64_t a = odnn_next(v, u, e, "Add", 1.0);
    if (a < 0)
        return 0;
    out->x = x;
    out->alg = dnnl_eltwise_gelu_erf;
    out->nodes[0] = d;
    out->nodes[1] = (size_t)e;
    out->nodes[2] = (size_t)a;
    out->n_nodes = 3;
    return odnn_gelu_finish(v, u, a, out);
}

/* Matches GELU's tanh form (GPT-2's and BERT's "gelu_new", PyTorch's
 * approximate='tanh' before opset 20) whose first node P makes x^3:
 * Pow(x, 3), or Mul(x, x) then a Mul by x; then Mul 0.044715 (or P is
 * that Mul, of x, and two Muls by x follow: jax2tf, Google's Magika) -> Add x ->
 * Mul sqrt(2/pi) -> Tanh -> Add 1 and the tail of the erf form. oneDNN
 * runs it as one gelu_tanh eltwise: its tanh alone, on AVX2, took 1.0 ms
 * of the nine nodes' 1.55 on [1, 512, 768]. Below AVX-512 oneDNN's
 * gelu_tanh is slow too (1.13 ms there, against 0.69 for the nine nodes
 * on cpu), and so are its pieces (GPT-2's Pow(x, 3) took 0.76 ms on
 * [1, 64, 1024], its Tanh 0.21): there the pattern runs on the module's
 * own kernel (odnn_gelu_tanh_run), never as a post-op. */
static int odnn_match_gelu_tanh(const pl_graph_view *v, const struct odnn_uses *u, size_t p,
                                struct odnn_gelu *out)
{
    float c;
    int first;
    int64_t x, cube = -1, q = -1;
    out->n_nodes = 0;
    if (odnn_op_is(v, (int64_t)p, "Mul") &&
        (x = odnn_binary_scalar(v, p, &c, &first)) >= 0 && odnn_near(c, 0.044715)) {
        /* jax2tf's order: 0.044715 * x, then two Muls by x */
        int64_t m1 = odnn_next(v, u, (int64_t)p, "Mul", -1);
        int64_t m2 = odnn_next(v, u, m1, "Mul", -1);
        if (m2 < 0 || odnn_other_in(v, m1, odnn_out(v, p, 0)) != x ||
            odnn_other_in(v, m2, odnn_out(v, (size_t)m1, 0)) != x)
            return 0;
        out->nodes[out->n_nodes++] = p;
        out->nodes[out->n_nodes++] = (size_t)m1;
        q = m2;
    } else if (odnn_op_is(v, (int64_t)p, "Pow")) {
        x = odnn_binary_scalar(v, p, &c, &first);
        if (x < 0 || first || c != 3.0f)
            return 0;
        cube = (int64_t)p;
        out->nodes[out->n_nodes++] = p;
    } else if (odnn_op_is(v, (int64_t)p, "Mul") && odnn_in(v, p, 0) == odnn_in(v, p, 1)) {
        x = odnn_in(v, p, 0);
        int64_t m = odnn_next(v, u, (int64_t)p, "Mul", -1);
        if (m < 0 || (odnn_in(v, (size_t)m, 0) != x && odnn_in(v, (size_t)m, 1) != x))
            return 0;
        cube = m;
        out->nodes[out->n_nodes++] = p;
        out->nodes[out->n_nodes++] = (size_t)m;
    } else {
        return 0;
    }
    if (x < 0)
        return 0;
    /* q = x^3 * 0.044715 (the Mul's data input is the cube), s = x + q */
    if (q < 0) {
        q = odnn_next(v, u, cube, "Mul", 0.044715);
        if (q < 0 || odnn_binary_scalar(v, (size_t)q, &c, &first) != odnn_out(v, (size_t)cube, 0))
            return 0;
    }
    int64_t s = odnn_next(v, u, q, "Add", -1);
    int64_t qo = odnn_out(v, (size_t)q, 0);
    if (s < 0 || !((odnn_in(v, (size_t)s, 0) == x && odnn_in(v, (size_t)s, 1) == qo) ||
                   (odnn_in(v, (size_t)s, 1) == x && odnn_in(v, (size_t)s, 0) == qo)))
        return 0;
    int64_t r = odnn_next(v, u, s, "Mul", 0.7978845608028654);
    int64_t t = odnn_next(v, u, r, "Tanh", -1);
    int64_t a = odnn_next(v, u, t, "Add", 1.0);
    if (a < 0)
        return 0;
    out->x = x;
    out->alg = dnnl_eltwise_gelu_tanh;
    out->nodes[out->n_nodes++] = (size_t)q;
    out->nodes[out->n_nodes++] = (size_t)s;
    out->nodes[out->n_nodes++] = (size_t)r;
    out->nodes[out->n_nodes++] = (size_t)t;
    out->nodes[out->n_nodes++] = (size_t)a;
    return odnn_gelu_finish(v, u, a, out);
}

/* Matches GELU's tanh form as BLOOM writes it, x * 0.5 * (1 + tanh(
 * 0.79788456 * x * (1 + 0.044715 * x * x))), whose first node P makes
 * 0.044715 x^2: Mul(x, 0.044715) then a Mul by x, or Mul(x, x) then a Mul
 * by 0.044715; then Add 1 -> Mul by Mul(x, 0.79788456) -> Tanh -> Add 1
 * and the tail of the erf form. The same function as the form above, run
 * the same way (odnn_gelu_own). */
static int odnn_match_gelu_tanh_factored(const pl_graph_view *v, const struct odnn_uses *u,
                                         size_t p, struct odnn_gelu *out)
{
    float c;
    int first;
    int64_t x, sq;
    out->n_nodes = 0;
    if (!odnn_op_is(v, (int64_t)p, "Mul"))
        return 0;
    if (odnn_in(v, p, 0) == odnn_in(v, p, 1)) {
        x = odnn_in(v, p, 0);
        sq = odnn_next(v, u, (int64_t)p, "Mul", 0.044715);
    } else {
        x = odnn_binary_scalar(v, p, &c, &first);
        if (x < 0 || !odnn_near(c, 0.044715))
            return 0;
        sq = odnn_next(v, u, (int64_t)p, "Mul", -1);
        if (sq >= 0 && odnn_in(v, (size_t)sq, 0) != x && odnn_in(v, (size_t)sq, 1) != x)
            return 0;
    }
    if (x < 0 || sq < 0)
        return 0;
    int64_t d = odnn_next(v, u, sq, "Add", 1.0);
    int64_t e = odnn_next(v, u, d, "Mul", -1);
    if (e < 0)
        return 0;
    /* e's other input: Mul(x, sqrt(2/pi)), read only by e */
    int64_t a = odnn_scaled_x(v, u, odnn_other_in(v, e, odnn_out(v, (size_t)d, 0)), e, x,
                              0.7978845608028654);
    if (a < 0)
        return 0;
    int64_t t = odnn_next(v, u, e, "Tanh", -1);
    int64_t f = odnn_next(v, u, t, "Add", 1.0);
    if (f < 0)
        return 0;
    out->x = x;
    out->alg = dnnl_eltwise_gelu_tanh;
    size_t seq[] = {p, (size_t)sq, (size_t)d, (size_t)a, (size_t)e, (size_t)t, (size_t)f};
    for (size_t k = 0; k < sizeof seq / sizeof seq[0]; k++)
        out->nodes[out->n_nodes++] = seq[k];
    return odnn_gelu_finish(v, u, f, out);
}

/* Either tanh form. */
static int odnn_match_gelu_tanh_any(const pl_graph_view *v, const struct odnn_uses *u,
                                    size_t p, struct odnn_gelu *out)
{
    return odnn_match_gelu_tanh(v, u, p, out) || odnn_match_gelu_tanh_factored(v, u, p, out);
}

/* Finds the GELU pattern node N belongs to, trying the readers of each of
 * its inputs' producers as the pattern's first node. */
static int odnn_gelu_of(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                        struct odnn_gelu *out)
{
    const pl_graph_api *g = onednn_host->graph;
    size_t nodes = g->node_count(v);
    /* The first node reads x; x is read by the first node and maybe by the
     * Mul(x, 0.5) or the final Mul: look at every reader of every input of
     * N and of N's pattern neighbours. Patterns are short, so try each node
     * that reads a tensor N reads or N itself. */
    for (size_t cand = 0; cand < nodes; cand++) {
        if (!odnn_op_is(v, (int64_t)cand, "Div") && !odnn_op_is(v, (int64_t)cand, "Mul") &&
            !odnn_op_is(v, (int64_t)cand, "Pow"))
            continue;
        struct odnn_gelu m;
        if (!odnn_match_gelu(v, u, cand, &m) && !odnn_match_gelu_tanh_any(v, u, cand, &m))
            continue;
        for (size_t k = 0; k < m.n_nodes; k++)
            if (m.nodes[k] == n) {
                *out = m;
                return 1;
            }
    }
    return 0;
}

/* ---- LayerNormalization, decomposed ------------------------------------------
 *
 * Exporters without a LayerNormalization op (PyTorch before opset 17) write
 * it as: m = ReduceMean(x, last axis); d = Sub(x, m); v = ReduceMean(Pow(d,
 * 2), last axis); y = Div(d, Sqrt(Add(v, eps))) * gamma + beta. The nine
 * nodes become one layer_normalization primitive when every intermediate is
 * read only inside the pattern (d by the Pow and the Div) and gamma and beta
 * hold one value per element of the last axis. */

struct odnn_lnpat {
    size_t nodes[13]; /* in pattern order; nodes[0] is the first mean */
    size_t n_nodes;
    int64_t x, out;
    int64_t gamma, beta; /* tensors of C elements, constant or view inputs; beta -1: none */
    float eps;
    /* Over the channels of a 4-D NCHW tensor (ConvNeXt's LayerNorm2d, as
     * PyTorch exports it) rather than the last axis: run as a layer
     * normalization of the NHWC copy viewed [N*H*W, C]. */
    int channel;
    /* RMSNorm (odnn_match_rms): y = x / sqrt(mean(x^2) + eps) * gamma, no
     * mean taken off, no beta; gamma -1 when there is none. nodes[0] is
     * the square. */
    int rms;
};

/* True when ReduceMean node R averages over the last axis of its input of
 * NDIM dims (CHANNEL: over axis 1 of a 4-D one), keeping it. */
static int odnn_const_i64s(const pl_graph_view *v, size_t n, size_t k, int64_t *out);

static int odnn_mean_last(const pl_graph_view *v, int64_t r, int32_t ndim, int channel)
{
    if (!odnn_op_is(v, r, "ReduceMean") || odnn_attr_int(v, (size_t)r, "keepdims", 1) != 1)
        return 0;
    /* the axes attribute, or from opset 18 (the dynamo exporter's) the
     * constant input */
    int64_t in_axes[ODNN_MAX_RANK];
    const int64_t *axes = in_axes;
    int given = odnn_const_i64s(v, (size_t)r, 1, in_axes);
    if (given == -1 ? odnn_attr_ints(v, (size_t)r, "axes", &axes) != 1 : given != 1)
        return 0;
    if (channel)
        return ndim == 4 && (axes[0] == 1 || axes[0] == -3);
    return axes[0] == -1 || axes[0] == ndim - 1;
}

/* For binary node N: its input other than T, or -1 when T is not an input
 * (or is both). COMMUTES allows T second; otherwise T must be first. */
static int64_t odnn_other_input(const pl_graph_view *v, size_t n, int64_t t, int commutes)
{
    if (onednn_host->graph->node_input_count(v, n) != 2)
        return -1;
    int64_t a = odnn_in(v, n, 0), b = odnn_in(v, n, 1);
    if (a == t && b != t)
        return b;
    if (commutes && b == t && a != t)
        return a;
    return -1;
}

/* True when T is an f32 tensor of C elements, shaped [C] or [1, .., 1, C] of
 * rank <= NDIM, that is a constant or not written inside the view (so it
 * is there when the pattern's first node runs). */
static int odnn_ln_param(const pl_graph_view *v, const struct odnn_uses *u, int64_t t, int64_t c,
                         int32_t ndim, int channel)
{
    struct odnn_tinfo ti;
    if (!odnn_tensor(v, t, &ti) || !ti.known || !ti.f32 || ti.elems != c || ti.ndim < 1 ||
        ti.ndim > ndim)
        return 0;
    /* per channel of NCHW: [C, 1, 1] or [1, C, 1, 1] */
    if (channel ? ti.ndim < 3 || ti.dims[ti.ndim - 3] != c : ti.dims[ti.ndim - 1] != c)
        return 0;
    return ti.cdata != NULL || (size_t)t >= u->n_tensors || u->producer[t] == 0;
}

/* Matches the pattern whose first ReduceMean is R. */
/* The variance VAR's sole reader Add(var, eps) (eps a scalar >= 0, in
 * *eps; the node in *out_add) and that one's sole reader Sqrt: the Sqrt
 * node, or -1. */
static int64_t odnn_ln_eps_sqrt(const pl_graph_view *v, const struct odnn_uses *u, int64_t var,
                                float *eps, int64_t *out_add)
{
    int64_t add = odnn_sole_reader(u, odnn_out(v, (size_t)var, 0));
    int first;
    *out_add = add;
    if (!odnn_op_is(v, add, "Add") ||
        odnn_binary_scalar(v, (size_t)add, eps, &first) != odnn_out(v, (size_t)var, 0) ||
        !(*eps >= 0.0f))
        return -1;
    int64_t sq = odnn_sole_reader(u, odnn_out(v, (size_t)add, 0));
    return odnn_op_is(v, sq, "Sqrt") ? sq : -1;
}

static int odnn_match_lnorm(const pl_graph_view *v, const struct odnn_uses *u, size_t r,
                            struct odnn_lnpat *out)
{
    struct odnn_tinfo x;
    if (!odnn_op_is(v, (int64_t)r, "ReduceMean"))
        return 0;
    out->x = odnn_in(v, r, 0);
    if (!odnn_tensor(v, out->x, &x) || !x.known || !x.f32 || x.ndim < 1 || x.cdata != NULL)
        return 0;
    out->channel = !odnn_mean_last(v, (int64_t)r, x.ndim, 0);
    if (out->channel && !odnn_mean_last(v, (int64_t)r, x.ndim, 1))
        return 0;
    int64_t c = x.dims[out->channel ? 1 : x.ndim - 1];
    int64_t mean = odnn_out(v, r, 0);
    int64_t sub = odnn_sole_reader(u, mean);
    if (!odnn_op_is(v, sub, "Sub") || odnn_in(v, (size_t)sub, 0) != out->x ||
        odnn_in(v, (size_t)sub, 1) != mean)
        return 0;
    /* d is read by the Pow and the Div, in either order of nodes. */
    int64_t d = odnn_out(v, (size_t)sub, 0);
    if (d < 0 || (size_t)d >= u->n_tensors || u->escapes[d] || u->count[d] != 2)
        return 0;
    int64_t pw = -1, dv = -1;
    for (uint32_t i = 0; i < u->count[d]; i++) {
        size_t k = odnn_reader(u, d, i);
        if (odnn_in(v, k, 0) != d)
            continue;
        if (odnn_op_is(v, (int64_t)k, "Pow"))
            pw = (int64_t)k;
        else if (odnn_op_is(v, (int64_t)k, "Div"))
            dv = (int64_t)k;
    }
    float two;
    if (pw < 0 || dv < 0 || onednn_host->graph->node_input_count(v, (size_t)pw) != 2 ||
        !odnn_scalar(v, odnn_in(v, (size_t)pw, 1), &two) || two != 2.0f)
        return 0;
    int64_t var = odnn_sole_reader(u, odnn_out(v, (size_t)pw, 0));
    if (!odnn_mean_last(v, var, x.ndim, out->channel))
        return 0;
    int64_t add;
    int64_t sq = odnn_ln_eps_sqrt(v, u, var, &out->eps, &add);
    if (sq < 0 || odnn_sole_reader(u, odnn_out(v, (size_t)sq, 0)) != dv ||
        odnn_other_input(v, (size_t)dv, d, 0) != odnn_out(v, (size_t)sq, 0))
        return 0;
    int64_t mul = odnn_sole_reader(u, odnn_out(v, (size_t)dv, 0));
    if (!odnn_op_is(v, mul, "Mul"))
        return 0;
    out->gamma = odnn_other_input(v, (size_t)mul, odnn_out(v, (size_t)dv, 0), 1);
    int64_t badd = odnn_sole_reader(u, odnn_out(v, (size_t)mul, 0));
    if (!odnn_op_is(v, badd, "Add"))
        return 0;
    out->beta = odnn_other_input(v, (size_t)badd, odnn_out(v, (size_t)mul, 0), 1);
    if (!odnn_ln_param(v, u, out->gamma, c, x.ndim, out->channel) ||
        !odnn_ln_param(v, u, out->beta, c, x.ndim, out->channel))
        return 0;
    struct odnn_tinfo y;
    out->out = odnn_out(v, (size_t)badd, 0);
    if (!odnn_tensor(v, out->out, &y) || !y.known || !y.f32 || y.ndim != x.ndim ||
        memcmp(y.dims, x.dims, sizeof x.dims[0] * (size_t)x.ndim) != 0)
        return 0;
    size_t list[9] = {r, (size_t)sub, (size_t)pw, (size_t)var, (size_t)add,
                      (size_t)sq, (size_t)dv, (size_t)mul, (size_t)badd};
    memcpy(out->nodes, list, sizeof list);
    out->n_nodes = 9;
    return 1;
}

/* Whether node R averages the last axis of X keeping it: ReduceMean over
 * the last axis, or (tf2onnx's choice) GlobalAveragePool of a rank-3
 * tensor. */
static int odnn_mean_last_any(const pl_graph_view *v, int64_t r, int32_t ndim)
{
    if (odnn_mean_last(v, r, ndim, 0))
        return 1;
    return ndim == 3 && odnn_op_is(v, r, "GlobalAveragePool");
}

/* The LayerNormalization Keras writes and tf2onnx converts (13 nodes):
 * m = mean(x); d = Sub(x, m); v = mean(Mul(d, d)); s = Reciprocal(Sqrt(
 * Add(v, eps))) * gamma; y = Add(Mul(x, s), Add(Mul(Neg(m), s), beta)),
 * the beta Add absent when beta was zero (y = Add(Mul(x, s), Mul(Neg(m),
 * s))). The means are ReduceMean over the last axis or GlobalAveragePool
 * of a rank-3 tensor. Same result as the primitive up to rounding (x * s
 * - m * s for (x - m) * s). */
static int odnn_match_lnorm_tf(const pl_graph_view *v, const struct odnn_uses *u, size_t r,
                               struct odnn_lnpat *out)
{
    struct odnn_tinfo x;
    out->x = odnn_in(v, r, 0);
    if (!odnn_tensor(v, out->x, &x) || !x.known || !x.f32 || x.ndim < 2 || x.cdata != NULL ||
        !odnn_mean_last_any(v, (int64_t)r, x.ndim))
        return 0;
    out->channel = 0;
    int64_t c = x.dims[x.ndim - 1];
    int64_t mean = odnn_out(v, r, 0);
    if (mean < 0 || (size_t)mean >= u->n_tensors || u->escapes[mean] || u->count[mean] != 2)
        return 0;
    /* the mean's readers: Sub(x, m) and Neg(m) */
    int64_t sub = -1, neg = -1;
    for (uint32_t i = 0; i < u->count[mean]; i++) {
        size_t k = odnn_reader(u, mean, i);
        if (odnn_op_is(v, (int64_t)k, "Sub") && odnn_in(v, k, 0) == out->x &&
            odnn_in(v, k, 1) == mean)
            sub = (int64_t)k;
        else if (odnn_op_is(v, (int64_t)k, "Neg") && odnn_in(v, k, 0) == mean)
            neg = (int64_t)k;
    }
    if (sub < 0 || neg < 0)
        return 0;
    int64_t d = odnn_out(v, (size_t)sub, 0);
    if (d < 0 || (size_t)d >= u->n_tensors || u->escapes[d] || u->count[d] != 2)
        return 0;
    int64_t sqr = u->first[d];
    if (!odnn_op_is(v, sqr, "Mul") || odnn_in(v, (size_t)sqr, 0) != d ||
        odnn_in(v, (size_t)sqr, 1) != d)
        return 0;
    int64_t var = odnn_sole_reader(u, odnn_out(v, (size_t)sqr, 0));
    if (var < 0 || !odnn_mean_last_any(v, var, x.ndim) ||
        strcmp(onednn_host->graph->node_op(v, (size_t)var), onednn_host->graph->node_op(v, r)) != 0)
        return 0;
    int64_t add;
    int64_t sq = odnn_ln_eps_sqrt(v, u, var, &out->eps, &add);
    if (sq < 0)
        return 0;
    int64_t rcp = odnn_sole_reader(u, odnn_out(v, (size_t)sq, 0));
    if (!odnn_op_is(v, rcp, "Reciprocal"))
        return 0;
    int64_t gmul = odnn_sole_reader(u, odnn_out(v, (size_t)rcp, 0));
    if (!odnn_op_is(v, gmul, "Mul"))
        return 0;
    out->gamma = odnn_other_input(v, (size_t)gmul, odnn_out(v, (size_t)rcp, 0), 1);
    int64_t s_t = odnn_out(v, (size_t)gmul, 0);
    if (s_t < 0 || (size_t)s_t >= u->n_tensors || u->escapes[s_t] || u->count[s_t] != 2 ||
        !odnn_ln_param(v, u, out->gamma, c, x.ndim, 0))
        return 0;
    int64_t xs = -1, ms = -1;
    for (uint32_t i = 0; i < u->count[s_t]; i++) {
        size_t k = odnn_reader(u, s_t, i);
        if (!odnn_op_is(v, (int64_t)k, "Mul"))
            continue;
        int64_t other = odnn_other_input(v, k, s_t, 1);
        if (other == out->x)
            xs = (int64_t)k;
        else if (other == odnn_out(v, (size_t)neg, 0))
            ms = (int64_t)k;
    }
    if (xs < 0 || ms < 0 || odnn_sole_reader(u, odnn_out(v, (size_t)neg, 0)) != ms)
        return 0;
    int64_t xs_t = odnn_out(v, (size_t)xs, 0), ms_t = odnn_out(v, (size_t)ms, 0);
    int64_t r1 = odnn_sole_reader(u, ms_t), fin, badd = -1;
    if (!odnn_op_is(v, r1, "Add"))
        return 0;
    int64_t other = odnn_other_input(v, (size_t)r1, ms_t, 1);
    if (other == xs_t) {
        fin = r1; /* no beta */
        out->beta = -1;
    } else {
        badd = r1;
        out->beta = other;
        if (!odnn_ln_param(v, u, out->beta, c, x.ndim, 0))
            return 0;
        fin = odnn_sole_reader(u, odnn_out(v, (size_t)badd, 0));
        if (!odnn_op_is(v, fin, "Add") ||
            odnn_other_input(v, (size_t)fin, odnn_out(v, (size_t)badd, 0), 1) != xs_t)
            return 0;
    }
    if (odnn_sole_reader(u, xs_t) != fin)
        return 0;
    struct odnn_tinfo y;
    out->out = odnn_out(v, (size_t)fin, 0);
    if (!odnn_tensor(v, out->out, &y) || !y.known || !y.f32 || y.ndim != x.ndim ||
        memcmp(y.dims, x.dims, sizeof x.dims[0] * (size_t)x.ndim) != 0)
        return 0;
    size_t list[13] = {r, (size_t)sub, (size_t)sqr, (size_t)var, (size_t)add, (size_t)sq,
                       (size_t)rcp, (size_t)gmul, (size_t)neg, (size_t)xs, (size_t)ms,
                       (size_t)fin, 0};
    size_t nl = 12;
    if (badd >= 0)
        list[nl++] = (size_t)badd;
    memcpy(out->nodes, list, sizeof list);
    out->n_nodes = nl;
    return 1;
}

/* RMSNorm as T5, Llama and their kin write it (no op for it before opset
 * 23, whose RMSNormalization the core expands to this): s = Pow(x, 2) or
 * Mul(x, x); v = ReduceMean(s, last axis, keepdims); r = Sqrt(Add(v,
 * eps)); then Div(x, r), or Mul(x, Div(1, r)) or Mul(x, Reciprocal(r));
 * times gamma (one value per element of the last axis) when a Mul by one
 * follows. Every intermediate read only by the next node; x may be read
 * elsewhere too (the residual stream). Q is the square. */
static int odnn_match_rms(const pl_graph_view *v, const struct odnn_uses *u, size_t q,
                          struct odnn_lnpat *out)
{
    struct odnn_tinfo x;
    float two;
    memset(out, 0, sizeof *out);
    out->x = odnn_in(v, q, 0);
    if (onednn_host->graph->node_input_count(v, q) != 2 ||
        !odnn_tensor(v, out->x, &x) || !x.known || !x.f32 || x.ndim < 1 || x.cdata != NULL)
        return 0;
    if (odnn_op_is(v, (int64_t)q, "Pow")) {
        if (!odnn_scalar(v, odnn_in(v, q, 1), &two) || two != 2.0f)
            return 0;
    } else if (!odnn_op_is(v, (int64_t)q, "Mul") || odnn_in(v, q, 1) != out->x) {
        return 0;
    }
    int64_t c = x.dims[x.ndim - 1];
    int64_t var = odnn_sole_reader(u, odnn_out(v, q, 0));
    if (!odnn_mean_last(v, var, x.ndim, 0))
        return 0;
    int64_t add;
    int64_t sq = odnn_ln_eps_sqrt(v, u, var, &out->eps, &add);
    if (sq < 0)
        return 0;
    int64_t r_t = odnn_out(v, (size_t)sq, 0);
    int64_t nxt = odnn_sole_reader(u, r_t), inv = -1, norm;
    float one;
    int first;
    if (odnn_op_is(v, nxt, "Div") && odnn_in(v, (size_t)nxt, 0) == out->x &&
        odnn_in(v, (size_t)nxt, 1) == r_t) {
        norm = nxt; /* x / r */
    } else {
        if (odnn_op_is(v, nxt, "Reciprocal") ||
            (odnn_op_is(v, nxt, "Div") && odnn_in(v, (size_t)nxt, 1) == r_t &&
             odnn_binary_scalar(v, (size_t)nxt, &one, &first) == r_t && first && one == 1.0f))
            inv = nxt;
        else
            return 0;
        norm = odnn_sole_reader(u, odnn_out(v, (size_t)inv, 0));
        if (!odnn_op_is(v, norm, "Mul") ||
            odnn_other_input(v, (size_t)norm, odnn_out(v, (size_t)inv, 0), 1) != out->x)
            return 0;
    }
    size_t list[7] = {q, (size_t)var, (size_t)add, (size_t)sq, 0, 0, 0};
    size_t nl = 4;
    if (inv >= 0)
        list[nl++] = (size_t)inv;
    list[nl++] = (size_t)norm;
    out->out = odnn_out(v, (size_t)norm, 0);
    out->gamma = out->beta = -1;
    int64_t gm = odnn_sole_reader(u, out->out);
    if (odnn_op_is(v, gm, "Mul")) {
        int64_t g = odnn_other_input(v, (size_t)gm, out->out, 1);
        if (g >= 0 && odnn_ln_param(v, u, g, c, x.ndim, 0)) {
            out->gamma = g;
            out->out = odnn_out(v, (size_t)gm, 0);
            list[nl++] = (size_t)gm;
        }
    }
    struct odnn_tinfo y;
    if (!odnn_tensor(v, out->out, &y) || !y.known || !y.f32 || y.ndim != x.ndim ||
        memcmp(y.dims, x.dims, sizeof x.dims[0] * (size_t)x.ndim) != 0)
        return 0;
    memcpy(out->nodes, list, sizeof list);
    out->n_nodes = nl;
    out->rms = 1;
    return 1;
}

/* Either form of a decomposed LayerNormalization whose first mean is R, or
 * an RMSNorm whose square is R. */
static int odnn_match_any_lnorm(const pl_graph_view *v, const struct odnn_uses *u, size_t r,
                                struct odnn_lnpat *out)
{
    if ((odnn_op_is(v, (int64_t)r, "Pow") || odnn_op_is(v, (int64_t)r, "Mul")) &&
        odnn_match_rms(v, u, r, out))
        return 1;
    out->rms = 0;
    if (odnn_op_is(v, (int64_t)r, "ReduceMean") && odnn_match_lnorm(v, u, r, out))
        return 1;
    return (odnn_op_is(v, (int64_t)r, "ReduceMean") ||
            odnn_op_is(v, (int64_t)r, "GlobalAveragePool")) &&
           odnn_match_lnorm_tf(v, u, r, out);
}

/* ---- QuantizeLinear -> DequantizeLinear ---------------------------------------
 *
 * Quantization-aware graphs (ONNX Runtime's QDQ format) put a
 * QuantizeLinear and a DequantizeLinear of the same scale and zero point on
 * every activation: y = (clamp(round(x / s) + zp, lo, hi) - zp) * s, f32 in
 * and out. With one scale and zero point the pair is one binary division by
 * s with eltwise post-ops (round half to even, clip to [lo - zp, hi - zp],
 * * s), the same values as the cpu module's kernels, so the
 * activations stay in the subgraph instead of crossing to cpu twice. */

struct odnn_qdq {
    size_t q, dq;
    int64_t x, scale, out;
    float s;
    int32_t zp, lo, hi;
};

/* The one 8-bit value of constant T (absent: 0, unsigned). */
static int odnn_q8_scalar(const pl_graph_view *v, int64_t t, int32_t *out, int *out_signed)
{
    *out = 0;
    *out_signed = 0;
    if (t < 0)
        return 1;
    pl_dtype dt;
    int32_t nd;
    const int64_t *dims;
    struct odnn_tinfo ti;
    if (!onednn_host->graph->tensor_type(v, t, &dt, &nd, &dims) || !odnn_tensor(v, t, &ti) ||
        ti.cdata == NULL || ti.elems != 1 || ti.cbytes != 1)
        return 0;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I8)) {
        *out = *(const int8_t *)ti.cdata;
        *out_signed = 1;
        return 1;
    }
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U8)) {
        *out = *(const uint8_t *)ti.cdata;
        return 1;
    }
    return 0;
}

static int odnn_match_qdq(const pl_graph_view *v, const struct odnn_uses *u, size_t q,
                          struct odnn_qdq *out)
{
    const pl_graph_api *g = onednn_host->graph;
    if (!odnn_op_is(v, (int64_t)q, "QuantizeLinear") || g->node_domain(v, q)[0] != '\0' ||
        g->node_input_count(v, q) < 2 || g->node_output_count(v, q) != 1)
        return 0;
    struct odnn_tinfo x, y;
    out->q = q;
    out->x = odnn_in(v, q, 0);
    out->scale = odnn_in(v, q, 1);
    if (!odnn_tensor(v, out->x, &x) || !x.known || !x.f32 || x.cdata != NULL || x.ndim < 1 ||
        !odnn_scalar(v, out->scale, &out->s) || !(out->s > 0.0f) || !isfinite(out->s))
        return 0;
    int64_t zq = g->node_input_count(v, q) > 2 ? odnn_in(v, q, 2) : -1;
    int sgn;
    if (!odnn_q8_scalar(v, zq, &out->zp, &sgn))
        return 0;
    /* the quantized dtype is the output's (u8 when no zero point says) */
    pl_dtype qdt;
    int32_t nd;
    const int64_t *dims;
    int64_t qt = odnn_out(v, q, 0);
    if (!g->tensor_type(v, qt, &qdt, &nd, &dims) ||
        !(PL_DTYPE_EQ(qdt, PL_DTYPE_U8) || PL_DTYPE_EQ(qdt, PL_DTYPE_I8)) ||
        (zq >= 0 && PL_DTYPE_EQ(qdt, PL_DTYPE_I8) != (sgn != 0)))
        return 0;
    sgn = PL_DTYPE_EQ(qdt, PL_DTYPE_I8);
    out->lo = sgn ? -128 : 0;
    out->hi = sgn ? 127 : 255;
    int64_t dq = odnn_sole_reader(u, qt);
    if (!odnn_op_is(v, dq, "DequantizeLinear") || odnn_in(v, (size_t)dq, 0) != qt ||
        g->node_input_count(v, (size_t)dq) < 2)
        return 0;
    float s2;
    int32_t z2;
    int sg2;
    int64_t zdq = g->node_input_count(v, (size_t)dq) > 2 ? odnn_in(v, (size_t)dq, 2) : -1;
    if (!odnn_scalar(v, odnn_in(v, (size_t)dq, 1), &s2) || s2 != out->s ||
        !odnn_q8_scalar(v, zdq, &z2, &sg2) || z2 != out->zp)
        return 0;
    out->dq = (size_t)dq;
    out->out = odnn_out(v, (size_t)dq, 0);
    if (!odnn_tensor(v, out->out, &y) || !y.known || !y.f32 || y.elems != x.elems)
        return 0;
    return 1;
}

/* The QDQ pair node N belongs to (N is its QuantizeLinear or its
 * DequantizeLinear). */
static int odnn_qdq_of(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                       struct odnn_qdq *out)
{
    if (odnn_op_is(v, (int64_t)n, "QuantizeLinear"))
        return odnn_match_qdq(v, u, n, out);
    if (!odnn_op_is(v, (int64_t)n, "DequantizeLinear"))
        return 0;
    int64_t t = odnn_in(v, n, 0);
    if (t < 0 || (size_t)t >= u->n_tensors || u->producer[t] == 0)
        return 0;
    return odnn_match_qdq(v, u, u->producer[t] - 1, out) && out->dq == n;
}

/* Finds the decomposed LayerNormalization node N belongs to. */
static int odnn_lnorm_of(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                         struct odnn_lnpat *out)
{
    static const char *const ops[] = {"ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div", "Mul",
                                      "GlobalAveragePool", "Reciprocal", "Neg"};
    size_t i = 0;
    while (i < sizeof ops / sizeof ops[0] && !odnn_op_is(v, (int64_t)n, ops[i]))
        i++;
    if (i == sizeof ops / sizeof ops[0])
        return 0;
    size_t nodes = onednn_host->graph->node_count(v);
    for (size_t cand = 0; cand < nodes; cand++) {
        struct odnn_lnpat m;
        if (!odnn_match_any_lnorm(v, u, cand, &m))
            continue;
        for (size_t k = 0; k < m.n_nodes; k++)
            if (m.nodes[k] == n) {
                *out = m;
                return 1;
            }
    }
    return 0;
}

/* Marks the nodes of every LayerNorm over channels (u->ln_channel), once
 * per view: the verdict of each such node needs the whole pattern. */
static pl_status *odnn_uses_patterns(pl_module_ctx *ctx, const pl_graph_view *v,
                                     struct odnn_uses *u)
{
    size_t nodes = onednn_host->graph->node_count(v);
    u->ln_channel = onednn_host->host_alloc(ctx->host_ctx, nodes ? nodes : 1, 0);
    if (u->ln_channel == NULL) {
        odnn_uses_free(ctx, u);
        return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory reading a graph");
    }
    memset(u->ln_channel, 0, nodes ? nodes : 1);
    for (size_t r = 0; r < nodes; r++) {
        struct odnn_lnpat m;
        /* over channels, Keras's form or an RMSNorm (their Reciprocal
         * and two-sided broadcasts alone are refused): taken whole */
        if (odnn_match_any_lnorm(v, u, r, &m) && (m.channel || m.n_nodes > 9 || m.rms))
            for (size_t k = 0; k < m.n_nodes; k++)
                u->ln_channel[m.nodes[k]] = 1;
    }
    return NULL;
}

/* ---- patterns for the cost estimate ------------------------------------------ */

/* Whether IsNaN node N is read only by a Where(IsNaN(x), c, x) with c a
 * scalar constant: x with its NaN replaced by c, the Where node in *WHERE,
 * x in *X. torch 2's exporters write one after every
 * scaled_dot_product_attention's Softmax (its "safe softmax": a row whose
 * keys are all masked gives 0, not NaN); on cpu, the IsNaN cut every layer
 * of Llama, BERT and ViT out of the module's subgraphs. */
static int odnn_nan_fill_of(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                            int64_t *where, int64_t *x, float *fill)
{
    if (u == NULL || !odnn_op_is(v, (int64_t)n, "IsNaN"))
        return 0;
    int64_t c = odnn_out(v, n, 0), w = odnn_sole_reader(u, c);
    struct odnn_tinfo xt, yt;
    *x = odnn_in(v, n, 0);
    *where = w;
    return w >= 0 && odnn_op_is(v, w, "Where") &&
           onednn_host->graph->node_input_count(v, (size_t)w) == 3 &&
           odnn_in(v, (size_t)w, 0) == c && odnn_in(v, (size_t)w, 2) == *x &&
           odnn_scalar(v, odnn_in(v, (size_t)w, 1), fill) && odnn_tensor(v, *x, &xt) &&
           xt.known && xt.f32 && xt.cdata == NULL &&
           odnn_tensor(v, odnn_out(v, (size_t)w, 0), &yt) && yt.known && yt.f32 &&
           yt.elems == xt.elems;
}

/* Whether every node of a pattern (NODES[0..N)) is one of the nodes asked
 * about: a pattern that a subgraph would cut cannot be fused there. */
static int odnn_roles_inside(const unsigned char *inside, const size_t *nodes, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!inside[nodes[k]])
            return 0;
    return 1;
}

int onednn_fused_roles(pl_module_ctx *ctx, const pl_graph_view *v, const unsigned char *inside,
                       unsigned char *out)
{
    const pl_graph_api *g = onednn_host->graph;
    size_t nodes = g->node_count(v);
    memset(out, ODNN_ROLE_OWN, nodes);
    /* Every pattern spans two nodes or more, all asked about, and starts at
     * one of the ops tried below: without them nothing is read (the
     * partitioner asks about single nodes most; reading the uses of the
     * whole view per question was an eighth of planning a decoder's tail,
     * most of it for whole subgraphs, which still read them). */
    size_t asked = 0, starts = 0;
    for (size_t n = 0; n < nodes && (asked < 2 || starts == 0); n++) {
        if (!inside[n])
            continue;
        asked++;
        const char *op = g->node_op(v, n);
        starts += strcmp(op, "ReduceMean") == 0 || strcmp(op, "GlobalAveragePool") == 0 ||
                  strcmp(op, "Pow") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
                  strcmp(op, "QuantizeLinear") == 0 || strcmp(op, "IsNaN") == 0;
    }
    if (asked < 2 || starts == 0)
        return 1;
    struct odnn_uses u;
    pl_status *st = odnn_uses_build_in(ctx, v, &u, 0);
    if (st != NULL) {
        onednn_host->status_free(st);
        return 0;
    }
    /* One pass per pattern, each match tried from its first node only and
     * only from the nodes asked about, so that the estimate (called for
     * every candidate subgraph and for single nodes, on the whole model's
     * view) stays linear in the view with a small constant: odnn_gelu_of
     * scans every node per node it is asked about, and asking it for each
     * node took convnext_s_dyn's session from 18 to 158 ms; matching every
     * node of piper_tashkeel's 960 per estimate took 9 of its 24 ms. */
    for (size_t n = 0; n < nodes; n++) {
        struct odnn_lnpat ln;
        if (inside[n] && out[n] == ODNN_ROLE_OWN &&
            (odnn_op_is(v, (int64_t)n, "ReduceMean") ||
             odnn_op_is(v, (int64_t)n, "GlobalAveragePool") ||
             odnn_op_is(v, (int64_t)n, "Pow") || odnn_op_is(v, (int64_t)n, "Mul")) &&
            odnn_match_any_lnorm(v, &u, n, &ln) && odnn_roles_inside(inside, ln.nodes, ln.n_nodes)) {
            for (size_t k = 0; k < ln.n_nodes; k++)
                out[ln.nodes[k]] = ODNN_ROLE_INNER;
            out[ln.nodes[0]] = ln.channel ? ODNN_ROLE_NORM_NHWC : ODNN_ROLE_NORM;
        }
    }
    for (size_t n = 0; n < nodes; n++) {
        struct odnn_gelu ge;
        if (inside[n] && out[n] == ODNN_ROLE_OWN &&
            (odnn_op_is(v, (int64_t)n, "Div") || odnn_op_is(v, (int64_t)n, "Mul") ||
             odnn_op_is(v, (int64_t)n, "Pow")) &&
            (odnn_match_gelu(v, &u, n, &ge) || odnn_match_gelu_tanh_any(v, &u, n, &ge)) &&
            odnn_roles_inside(inside, ge.nodes, ge.n_nodes)) {
            for (size_t k = 0; k < ge.n_nodes; k++)
                out[ge.nodes[k]] = ODNN_ROLE_INNER;
            out[n] = ODNN_ROLE_ELTWISE;
        }
    }
    for (size_t n = 0; n < nodes; n++) {
        struct odnn_qdq qp;
        if (inside[n] && out[n] == ODNN_ROLE_OWN && odnn_op_is(v, (int64_t)n, "QuantizeLinear") &&
            odnn_match_qdq(v, &u, n, &qp) && inside[qp.dq])
            out[qp.dq] = ODNN_ROLE_INNER;
        int64_t w, x;
        float fill;
        if (inside[n] && odnn_nan_fill_of(v, &u, n, &w, &x, &fill) && inside[w])
            out[n] = ODNN_ROLE_INNER; /* the Where's step computes it */
    }
    odnn_uses_free(ctx, &u);
    return 1;
}

/* ---- verdicts -------------------------------------------------------------- */

/* Pad N in constant mode with pads of at least 0: where X starts in Y
 * (BEGIN, X's rank of them) and the fill value; 0 with the reason
 * otherwise (reflect and edge modes, cropping, axes, a value that is not a
 * constant). */
static int odnn_pad_params(const pl_graph_view *v, size_t n, const struct odnn_tinfo *x,
                           int64_t *begin, float *fill, char *reason)
{
    char mode[16];
    if (strcmp(odnn_attr_string(v, n, "mode", "constant", mode, sizeof mode), "constant") != 0) {
        odnn_reason(reason, "Pad", "mode '%s' (only constant)", mode);
        return 0;
    }
    const int64_t *pads = NULL;
    int64_t np = 0;
    *fill = 0.0f;
    if (onednn_host->graph->node_opset(v, n) < 11) {
        np = (int64_t)odnn_attr_ints(v, n, "pads", &pads);
        *fill = (float)odnn_attr_float(v, n, "value", 0.0);
    } else {
        struct odnn_tinfo p, c;
        if (!odnn_tensor(v, odnn_in(v, n, 1), &p) || p.cdata == NULL ||
            p.cbytes != (size_t)p.elems * sizeof(int64_t)) {
            odnn_reason(reason, "Pad", "pads must be a constant");
            return 0;
        }
        pads = p.cdata;
        np = p.elems;
        if (odnn_in(v, n, 3) >= 0) {
            odnn_reason(reason, "Pad", "axes are not supported");
            return 0;
        }
        if (odnn_in(v, n, 2) >= 0) {
            if (!odnn_tensor(v, odnn_in(v, n, 2), &c) || c.cdata == NULL || c.elems != 1 ||
                !c.f32) {
                odnn_reason(reason, "Pad", "the value must be a constant f32 scalar");
                return 0;
            }
            memcpy(fill, c.cdata, sizeof *fill);
        }
    }
    if (np != 2 * x->ndim || x->ndim < 1) {
        odnn_reason(reason, "Pad", "%lld pads for rank %d", (long long)np, (int)x->ndim);
        return 0;
    }
    for (int64_t i = 0; i < np; i++)
        if (pads[i] < 0) {
            odnn_reason(reason, "Pad", "negative pads (cropping)");
            return 0;
        }
    for (int d = 0; d < x->ndim; d++)
        begin[d] = pads[d];
    return 1;
}

/* Tile as a broadcast copy (odnn_expand_run): X of dims XS tiled by
 * REPEATS is X seen as [1, x0, 1, x1, ..] expanded to [r0, x0, r1, x1, ..],
 * whose row-major bytes are the tiled tensor's. A dim repeated once needs
 * no inserted 1, nor does a dim of one element (it broadcasts itself), and
 * neighbours that neither broadcast merge; the dims of that copy in XD and
 * YD (right-aligned) and their count, or 0 when more than ODNN_MAX_RANK. */
static int odnn_tile_dims(const struct odnn_tinfo *x, const int64_t *repeats, int64_t *xd,
                          int64_t *yd)
{
    int64_t bx[2 * ODNN_MAX_RANK], by[2 * ODNN_MAX_RANK];
    int nd = 0;
    for (int d = 0; d < x->ndim; d++) {
        if (repeats[d] != 1 && x->dims[d] != 1) {
            bx[nd] = 1, by[nd++] = repeats[d];
            bx[nd] = by[nd] = x->dims[d], nd++;
        } else {
            bx[nd] = x->dims[d], by[nd++] = x->dims[d] * repeats[d];
        }
    }
    int m = 0; /* merge neighbours that copy alike (both dense) */
    for (int d = 0; d < nd; d++) {
        if (m > 0 && bx[d] == by[d] && xd[m - 1] == yd[m - 1]) {
            xd[m - 1] *= bx[d], yd[m - 1] *= by[d];
            continue;
        }
        if (m == ODNN_MAX_RANK)
            return 0;
        xd[m] = bx[d], yd[m++] = by[d];
    }
    if (m == 0)
        xd[m] = yd[m] = 1, m = 1;
    return m;
}

/* The constant repeats of Tile N into R (X's rank of them), or 0. */
static int odnn_tile_repeats(const pl_graph_view *v, size_t n, const struct odnn_tinfo *x,
                             int64_t *r)
{
    struct odnn_tinfo t;
    if (!odnn_tensor(v, odnn_in(v, n, 1), &t) || t.cdata == NULL || t.ndim != 1 ||
        t.elems != x->ndim || t.cbytes != (size_t)t.elems * sizeof(int64_t))
        return 0;
    memcpy(r, t.cdata, t.cbytes);
    for (int d = 0; d < x->ndim; d++)
        if (r[d] < 1)
            return 0;
    return 1;
}

/* Ops that move 8-bit quantized activations as they are: MaxPool (oneDNN
 * pools u8 and s8) and the views (Split's outputs all: YOLOv8's C2f blocks
 * split their u8 activations, and a split left to cpu cut QOperator
 * subgraphs in two), Transpose, and Expand and Tile (the module's broadcast
 * copy, byte by byte: Keras 3's nearest UpSampling2D is ExpandDims, Tile
 * and Reshape, and a TFLite int8 export's left to cpu cut a U-Net's
 * subgraph in three, 1.2x the cpu module's time). Their data input and
 * output may be u8 or i8 when the ISA runs int8 (odnn_int8_isa). */
static int odnn_int8_isa(void);
static int odnn_q8_mover(const char *op)
{
    static const char *const ops[] = {"MaxPool", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                      "Identity", "Concat", "Split", "Transpose", "Expand",
                                      "Tile", NULL};
    for (const char *const *o = ops; *o != NULL; o++)
        if (strcmp(op, *o) == 0)
            return odnn_int8_isa();
    return 0;
}

static int odnn_all_f32_known(const pl_graph_view *v, size_t n, const char *op, char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    for (int side = 0; side < 2; side++) {
        size_t count = side ? g->node_output_count(v, n) : g->node_input_count(v, n);
        for (size_t k = 0; k < count; k++) {
            int64_t t = side ? g->node_output(v, n, k) : g->node_input(v, n, k);
            if (t < 0)
                continue;
            struct odnn_tinfo ti;
            if (!odnn_tensor(v, t, &ti) || !ti.known) {
                odnn_reason(reason, op, "the shape of '%s' is not known or has rank > %d",
                            g->tensor_name(v, t), ODNN_MAX_RANK);
                return 0;
            }
            /* Reshape's shape, Squeeze's and a reduction's axes are i64
             * constants the primitive does not read, nor is a recurrent
             * layer's constant sequence_lens (odnn_check_rnn takes only
             * full lengths). */
            if (!ti.f32 &&
                !((k == 0 || strcmp(op, "Concat") == 0 || (side == 1 && strcmp(op, "Split") == 0)) &&
                  ti.q8 && odnn_q8_mover(op)) &&
                !(side == 0 && k > 0 && ti.cdata != NULL &&
                             (strcmp(op, "Reshape") == 0 || strncmp(op, "Reduce", 6) == 0 ||
                              strcmp(op, "Split") == 0 || strcmp(op, "Squeeze") == 0 ||
                              strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Slice") == 0 ||
                              strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0 ||
                              strcmp(op, "Gather") == 0 || strcmp(op, "Expand") == 0 ||
                              strcmp(op, "Tile") == 0 || strcmp(op, "Pad") == 0)) &&
                !(side == 0 && k == 4 &&
                  (strcmp(op, "RNN") == 0 || strcmp(op, "GRU") == 0 || strcmp(op, "LSTM") == 0))) {
                odnn_reason(reason, op, "'%s' is not f32 (only f32 is supported for now)",
                            g->tensor_name(v, t));
                return 0;
            }
            /* oneDNN has no memory of zero elements: taking such a node
             * only fails its compile later (an i64 shape or axes constant
             * may be empty: the primitive does not read it). */
            if (ti.f32 && ti.elems == 0 &&
                !(side == 0 && k > 0 && ti.cdata != NULL &&
                  (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0))) {
                odnn_reason(reason, op, "'%s' has no elements", g->tensor_name(v, t));
                return 0;
            }
        }
    }
    return 1;
}

/* The window of a Conv or pooling node over its SR spatial dims (1: a 3-D
 * input, 2: a 4-D one): kernel, strides, dilations (ONNX's, >= 1) and both
 * paddings. Returns 0 with a reason. */
struct odnn_window {
    int sr; /* spatial dims: 1 to 3 (convolutions and pooling; QLinearConv 1 or 2) */
    int64_t k[3], s[3], d[3], pl[3], pr[3];
};

/* A window's kernel (KERNEL), strides, dilations and pads attributes over
 * SR spatial dims. */
static int odnn_window_attrs(const pl_graph_view *v, size_t n, const char *op,
                             const int64_t *kernel, int sr, struct odnn_window *w, char *reason)
{
    const int64_t *a;
    w->sr = sr;
    for (int i = 0; i < 3; i++) {
        w->k[i] = i < sr ? kernel[i] : 1;
        w->s[i] = w->d[i] = 1;
        w->pl[i] = w->pr[i] = 0;
    }
    if (odnn_attr_ints(v, n, "strides", &a) == (size_t)sr)
        for (int i = 0; i < sr; i++)
            w->s[i] = a[i];
    if (odnn_attr_ints(v, n, "dilations", &a) == (size_t)sr)
        for (int i = 0; i < sr; i++)
            w->d[i] = a[i];
    size_t np = odnn_attr_ints(v, n, "pads", &a);
    if (np == 2 * (size_t)sr) {
        for (int i = 0; i < sr; i++)
            w->pl[i] = a[i], w->pr[i] = a[sr + i];
    } else if (np != 0) {
        odnn_reason(reason, op, "pads has %zu values, expected %d", np, 2 * sr);
        return 0;
    }
    return 1;
}

static int odnn_window(const pl_graph_view *v, size_t n, const char *op,
                       const struct odnn_tinfo *x, const int64_t *kernel,
                       const struct odnn_tinfo *y, struct odnn_window *w, char *reason)
{
    /* 3-d windows (5-d inputs) for convolutions and pooling */
    int most = strcmp(op, "QLinearConv") == 0 ? 4 : 5;
    if (x->ndim < 3 || x->ndim > most ||
        !odnn_window_attrs(v, n, op, kernel, x->ndim - 2, w, reason))
        return 0;
    char buf[32];
    const char *ap = odnn_attr_string(v, n, "auto_pad", "NOTSET", buf, sizeof buf);
    pl_auto_pad mode = pl_auto_pad_parse_cstr(ap);
    if (mode == PL_AUTO_PAD_INVALID) {
        odnn_reason(reason, op, "auto_pad '%s' is not an ONNX value", ap);
        return 0;
    }
    for (int i = 0; i < w->sr; i++) {
        if (w->s[i] < 1 || w->d[i] < 1 || w->k[i] < 1) {
            odnn_reason(reason, op, "kernel, strides and dilations must be >= 1");
            return 0;
        }
        if (pl_auto_pad_is_same(mode))
            pl_auto_pad_same(mode, x->dims[2 + i], w->s[i], (w->k[i] - 1) * w->d[i] + 1,
                             &w->pl[i], &w->pr[i]);
        else if (mode == PL_AUTO_PAD_VALID)
            w->pl[i] = w->pr[i] = 0;
        /* The right padding that gives the output size the graph states
         * (ceil_mode and SAME both come out of this). */
        int64_t span = (w->k[i] - 1) * w->d[i] + 1;
        int64_t pr = (y->dims[2 + i] - 1) * w->s[i] + span - x->dims[2 + i] - w->pl[i];
        if (pr < 0)
            pr = w->pr[i] > 0 ? w->pr[i] : 0;
        if (w->pl[i] < 0 || x->dims[2 + i] + w->pl[i] + pr < span ||
            (x->dims[2 + i] + w->pl[i] + pr - span) / w->s[i] + 1 != y->dims[2 + i]) {
            odnn_reason(reason, op, "the window does not give the output size the graph "
                                    "states (negative padding?)");
            return 0;
        }
        w->pr[i] = pr;
    }
    return 1;
}

/* ConvTranspose's window in oneDNN's terms: W->pl from `pads`, W->pr the
 * end padding that gives the output size the graph states once
 * output_padding is added. `output_shape` and SAME auto-padding are refused:
 * the ONNX text and its reference implementation split the padding
 * differently, and the cpu module follows the reference. */
static int odnn_deconv_window(const pl_graph_view *v, size_t n, const struct odnn_tinfo *x,
                              const struct odnn_tinfo *wt, const struct odnn_tinfo *y,
                              struct odnn_window *w, char *reason)
{
    const char *op = "ConvTranspose";
    const int64_t *a;
    char buf[32];
    const char *ap = odnn_attr_string(v, n, "auto_pad", "NOTSET", buf, sizeof buf);
    pl_auto_pad mode = pl_auto_pad_parse_cstr(ap);
    if (mode != PL_AUTO_PAD_NOTSET && mode != PL_AUTO_PAD_VALID) {
        odnn_reason(reason, op, "auto_pad %s is not supported (left to cpu)", ap);
        return 0;
    }
    if (odnn_attr_ints(v, n, "output_shape", &a) != 0) {
        odnn_reason(reason, op, "output_shape is not supported (left to cpu)");
        return 0;
    }
    int64_t opad[2] = {0, 0};
    size_t nop = odnn_attr_ints(v, n, "output_padding", &a);
    if (nop == 2)
        opad[0] = a[0], opad[1] = a[1];
    else if (nop != 0) {
        odnn_reason(reason, op, "output_padding has %zu values, expected 2", nop);
        return 0;
    }
    if (!odnn_window_attrs(v, n, op, &wt->dims[2], 2, w, reason))
        return 0;
    if (mode == PL_AUTO_PAD_VALID)
        for (int i = 0; i < 2; i++)
            w->pl[i] = w->pr[i] = 0;
    for (int i = 0; i < 2; i++) {
        if (w->s[i] < 1 || w->d[i] < 1 || w->k[i] < 1 || w->pl[i] < 0 || w->pr[i] < 0 ||
            opad[i] < 0) {
            odnn_reason(reason, op, "kernel, strides and dilations must be >= 1, pads and "
                                    "output_padding >= 0");
            return 0;
        }
        int64_t span = (w->k[i] - 1) * w->d[i] + 1;
        int64_t want = (x->dims[2 + i] - 1) * w->s[i] + span + opad[i] - w->pl[i] - w->pr[i];
        if (want != y->dims[2 + i]) {
            odnn_reason(reason, op, "the window gives %lld, the graph states %lld",
                        (long long)want, (long long)y->dims[2 + i]);
            return 0;
        }
        w->pr[i] -= opad[i]; /* output_padding: less padding removed at the end */
        if (w->pr[i] < 0) {
            odnn_reason(reason, op, "output_padding larger than the end padding is not "
                                    "supported (left to cpu)");
            return 0;
        }
    }
    return 1;
}

/* Conv, or ConvTranspose when TRANSPOSED: 2-D, constant weights and bias,
 * groups that fit the channels, a window that gives the stated output. */
/* oneDNN 2.6 serves some grouped convolutions only with its im2col GEMM
 * ("gemm:jit"), which runs the groups one after another: ConvNeXt's
 * depthwise 7x7 on a 2x2 map (192 groups, its jit_dw kernel refuses a map
 * smaller than the kernel) took 0.25 ms of the model's 1.06 there, on an
 * AVX2 machine. Such a node is left to the next backend. The probe makes a
 * primitive descriptor (no code is generated) with every layout left to
 * oneDNN, on a CPU engine of its own. */
#define ODNN_GEMM_GROUPS 8
/* ... and so it does grouped convolutions of few channels a group that
 * are not depthwise: on the AVX-512 Xeon, 2 threads, 48 groups of 1 -> 2
 * channels through 7x7 at stride 2 on 64x64 (FastViT's downsampling
 * layers) took 1.32 ms against the cpu module's 0.20; 64 groups of 1 -> 2
 * through 3x3 on 56x56 0.67 against 0.16; 32 groups of 2 -> 2 0.63 against
 * 0.37; from 4 channels a group (ResNeXt's 32x4d) its jit kernel ran them,
 * 0.37 against 0.47. Probed when a group has fewer than this many input
 * or output channels (a depthwise layer, one channel in and out, is not
 * probed: its jit_dw kernel takes it). */
#define ODNN_GEMM_GROUP_CHANNELS 16

static int odnn_impl_is_ref(const char *impl);

static dnnl_engine_t odnn_probe_engine;
static pthread_once_t odnn_probe_once = PTHREAD_ONCE_INIT;

static void odnn_probe_engine_make(void)
{
    if (dnnl_engine_create(&odnn_probe_engine, dnnl_cpu, 0) != dnnl_success)
        odnn_probe_engine = NULL;
}

/* Unloading the module lets the engine go. */
__attribute__((destructor)) static void odnn_probe_engine_free(void)
{
    if (odnn_probe_engine != NULL)
        dnnl_engine_destroy(odnn_probe_engine);
}

/* The implementation oneDNN would give a convolution of X, WT, Y (GROUP,
 * window W) computing in DT, every layout left to it, into IMPL; 0 when it
 * has none. */
static int odnn_probe_conv_impl(const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                                const struct odnn_tinfo *y, int64_t group,
                                const struct odnn_window *w, dnnl_data_type_t dt, char *impl_out,
                                size_t cap)
{
    pthread_once(&odnn_probe_once, odnn_probe_engine_make);
    if (odnn_probe_engine == NULL || x->ndim > 5)
        return 0;
    int nd = x->ndim, sr = w->sr;
    dnnl_dims_t src, wei, dst, strides, dil, pl, pr;
    for (int i = 0; i < nd; i++) {
        src[i] = x->dims[i];
        dst[i] = y->dims[i];
    }
    int wnd = group > 1 ? nd + 1 : nd;
    if (group > 1) {
        wei[0] = group;
        wei[1] = wt->dims[0] / group;
        for (int i = 1; i < nd; i++)
            wei[i + 1] = wt->dims[i];
    } else {
        for (int i = 0; i < nd; i++)
            wei[i] = wt->dims[i];
    }
    for (int i = 0; i < sr; i++) {
        strides[i] = w->s[i];
        dil[i] = w->d[i] - 1;
        pl[i] = w->pl[i];
        pr[i] = w->pr[i];
    }
    /* asked per verdict, fusion check and compile: remembered (onednn_memo.c) */
    int64_t key[ONEDNN_MEMO_MAX_KEY];
    int nk = 0;
    key[nk++] = 1;
    key[nk++] = omp_get_max_threads();
    key[nk++] = (int64_t)dt;
    key[nk++] = nd;
    key[nk++] = wnd;
    key[nk++] = sr;
    for (int i = 0; i < nd; i++)
        key[nk++] = src[i], key[nk++] = dst[i];
    for (int i = 0; i < wnd; i++)
        key[nk++] = wei[i];
    for (int i = 0; i < sr; i++)
        key[nk++] = strides[i], key[nk++] = dil[i], key[nk++] = pl[i], key[nk++] = pr[i];
    int found = 0;
    if (onednn_memo_get(key, nk, &found, impl_out, cap))
        return found;
    dnnl_memory_desc_t src_md, wei_md, dst_md;
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_memory_desc_init_by_tag(&src_md, nd, src, dt, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl_memory_desc_init_by_tag(&wei_md, wnd, wei, dt, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl_memory_desc_init_by_tag(&dst_md, nd, dst, dt, dnnl_format_tag_any) ==
            dnnl_success &&
        dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                   dnnl_convolution_direct, &src_md, &wei_md,
                                                   NULL, &dst_md, strides, dil, pl, pr) ==
            dnnl_success &&
        dnnl_primitive_desc_create(&pd, &cd, NULL, odnn_probe_engine, NULL) == dnnl_success) {
        const char *impl = NULL;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl != NULL) {
            snprintf(impl_out, cap, "%s", impl);
            found = 1;
        }
        dnnl_primitive_desc_destroy(pd);
    }
    onednn_memo_put(key, nk, found, found ? impl_out : NULL);
    return found;
}

/* Whether IMPL is oneDNN's im2col GEMM or one of its reference kernels:
 * the convolution kernels the check refuses. */
static int odnn_conv_impl_slow(const char *impl)
{
    return strstr(impl, "gemm") != NULL || odnn_impl_is_ref(impl);
}

static int odnn_grouped_conv_on_gemm(const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                                     const struct odnn_tinfo *y, int64_t group,
                                     const struct odnn_window *w, char *impl_out, size_t cap)
{
    return odnn_probe_conv_impl(x, wt, y, group, w, dnnl_f32, impl_out, cap) &&
           odnn_conv_impl_slow(impl_out);
}

/* oneDNN 2.6 has only its im2col GEMM (x64:gemm:jit) for some convolutions
 * of one group: below AVX-512, a 1-D convolution from one channel (a
 * waveform front end; onnx-asr's resamplers, written 2-D with one row) or
 * into one, and any whose padding passes what its jit:avx2 kernel keeps in
 * registers (a side padded by 4 or more: kernels 9 wide and up, as audio
 * and spectrogram models have). Its GEMM multiplies by a matrix of as many
 * rows as output channels, and it ran them at 1.5-14x the cpu module's
 * time on an AVX2 EPYC, 2 threads: 1 -> 1 channel, 41 taps at stride 3
 * over 2 x 16000 samples: 1.1 ms against 0.08; 1 -> 32 channels, 80 taps
 * at stride 4: 0.9-1.6 against 0.39; 16 -> 1, 9 taps: 4.1-4.6 against
 * 0.8-1.2; basic_pitch's 8 -> 8 channels through 3x39 on 172x264: 39-41
 * against 11-12 (ONNX Runtime 12.6); 36 -> 36 through 9x9 on 64x64: 18
 * against 8.4-9.8; 20 -> 20 through 1x31: 6.9 against 2.5; 1-D 8 -> 8, 9
 * taps over 8000: 0.44-0.74 against 0.19-0.29. Such a node is left to the
 * next backend, unless the module's own kernels take it (direct_conv =
 * auto: onednn_direct.c below AVX-512, onednn_narrow.c with it). Where
 * the GEMM's column buffer would be too big oneDNN falls to its reference
 * kernel (ref:any), which is refused as well: RivaGAN's decoder, 3-D
 * convolutions of 32 -> 32 channels through 1x11x11 over 1x160x160, took
 * 45 s a run on it. Probed only where oneDNN may choose either (narrow
 * channels, a wide pad or 3-D, memoised); extents not known before a run
 * are probed at ODNN_GEMM_PROBE_OUT outputs (oneDNN picks by channels,
 * kernel and strides). */
#define ODNN_GEMM_NARROW 8
#define ODNN_GEMM_WIDE_PAD 4
#define ODNN_GEMM_PROBE_OUT 64

static int odnn_conv_on_slow_kernel(const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                                    const struct odnn_tinfo *y, const struct odnn_window *w,
                                    char *impl_out, size_t cap)
{
    struct odnn_tinfo px = *x, py = *y;
    px.dims[0] = py.dims[0] = x->dims[0] > 0 ? x->dims[0] : 1;
    py.dims[1] = wt->dims[0];
    if (px.dims[1] <= 0 || py.dims[1] <= 0)
        return 0;
    for (int i = 0; i < w->sr; i++) {
        if (px.dims[2 + i] > 0 && py.dims[2 + i] > 0)
            continue;
        py.dims[2 + i] = ODNN_GEMM_PROBE_OUT;
        px.dims[2 + i] = (ODNN_GEMM_PROBE_OUT - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 -
                         w->pl[i] - w->pr[i];
        if (px.dims[2 + i] < 1)
            return 0;
    }
    return odnn_probe_conv_impl(&px, wt, &py, 1, w, dnnl_f32, impl_out, cap) &&
           odnn_conv_impl_slow(impl_out);
}

static int odnn_check_conv(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                           int transposed, char *reason)
{
    const char *op = transposed ? "ConvTranspose" : "Conv";
    struct odnn_tinfo x, wt, b, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_in(v, n, 1), &wt);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (transposed ? x.ndim != 4 || wt.ndim != 4
                   : x.ndim < 3 || x.ndim > 5 || wt.ndim != x.ndim) {
        odnn_reason(reason, op, "only %s is supported, input has rank %d",
                    transposed ? "2-D (4-D input)" : "1-D to 3-D (3-D to 5-D input)", x.ndim);
        return 0;
    }
    if (wt.cdata == NULL) {
        odnn_reason(reason, op, "weights are not a constant");
        return 0;
    }
    if (odnn_in(v, n, 2) >= 0 && (!odnn_tensor(v, odnn_in(v, n, 2), &b) || b.cdata == NULL)) {
        odnn_reason(reason, op, "bias is not a constant");
        return 0;
    }
    /* weights [C_out, C_in/group, kH, kW]; transposed [C_in, C_out/group, kH, kW] */
    int64_t group = odnn_attr_int(v, n, "group", 1);
    if (group < 1 || x.dims[1] % group != 0 ||
        (transposed ? wt.dims[0] != x.dims[1] || wt.dims[1] * group != y.dims[1]
                    : wt.dims[0] % group != 0 || wt.dims[1] * group != x.dims[1])) {
        odnn_reason(reason, op, "group %lld does not fit the channels", (long long)group);
        return 0;
    }
    const int64_t *ks;
    size_t nk = odnn_attr_ints(v, n, "kernel_shape", &ks);
    int ks_ok = nk == 0 || nk == (size_t)wt.ndim - 2;
    for (size_t i = 0; ks_ok && i < nk; i++)
        ks_ok = ks[i] == wt.dims[2 + i];
    if (!ks_ok) {
        odnn_reason(reason, op, "kernel_shape does not match the weights");
        return 0;
    }
    struct odnn_window w;
    if (transposed)
        return odnn_deconv_window(v, n, &x, &wt, &y, &w, reason);
    if (!odnn_window(v, n, op, &x, &wt.dims[2], &y, &w, reason))
        return 0;
    /* Probed only where a direct kernel may refuse: a map smaller than the
     * kernel's extent, or a dilated kernel (making a descriptor for every
     * depthwise layer cost mobilenet_v3_s 5 ms of session creation). */
    int odd = 0;
    for (int i = 0; i < w.sr; i++)
        odd |= w.d[i] > 1 || x.dims[2 + i] < (w.k[i] - 1) * w.d[i] + 1;
    int few = group > 1 && !(wt.dims[1] == 1 && wt.dims[0] == group) &&
              (wt.dims[1] < ODNN_GEMM_GROUP_CHANNELS ||
               wt.dims[0] / group < ODNN_GEMM_GROUP_CHANNELS);
    char impl[64];
    if (((odd && group >= ODNN_GEMM_GROUPS) || few) && x.known && y.known &&
        odnn_grouped_conv_on_gemm(&x, &wt, &y, group, &w, impl, sizeof impl)) {
        odnn_reason(reason, op, "oneDNN has only its im2col GEMM (%s) for this convolution of "
                                "%lld groups, which it runs one group after another",
                    impl, (long long)group);
        return 0;
    }
    int two = wt.ndim == 4, wide_pad = 0;
    int64_t taps = 1;
    for (int i = 0; i < w.sr; i++) {
        wide_pad |= w.pl[i] >= ODNN_GEMM_WIDE_PAD || w.pr[i] >= ODNN_GEMM_WIDE_PAD;
        taps *= w.k[i];
    }
    if (group == 1 && x.f32 &&
        (wt.dims[0] < ODNN_GEMM_NARROW || wt.dims[1] < ODNN_GEMM_NARROW || wide_pad ||
         w.sr == 3) &&
        !(u->own && w.sr <= 2 && taps > 1 && odnn_direct_channels(wt.dims[1], wt.dims[0])) &&
        !(w.sr <= 2 && odnn_narrow_takes(wt.dims[1], wt.dims[0], two ? wt.dims[2] : 1,
                                         wt.dims[wt.ndim - 1], w.d[w.sr - 1], 1)) &&
        odnn_conv_on_slow_kernel(&x, &wt, &y, &w, impl, sizeof impl)) {
        odnn_reason(reason, op, "oneDNN has only its %s (%s) for this convolution of "
                                "%lld to %lld channels, several times the cpu module's time",
                    odnn_impl_is_ref(impl) ? "reference kernel" : "im2col GEMM", impl,
                    (long long)wt.dims[1], (long long)wt.dims[0]);
        return 0;
    }
    return 1;
}

static int odnn_check_pool(const pl_graph_view *v, size_t n, const char *op, char *reason)
{
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (x.ndim < 3 || x.ndim > 5) {
        odnn_reason(reason, op,
                    "only 1-D to 3-D pooling (3-D to 5-D input) is supported, input has rank %d",
                    x.ndim);
        return 0;
    }
    if (odnn_out(v, n, 1) >= 0) {
        odnn_reason(reason, op, "the Indices output is not supported");
        return 0;
    }
    if (strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0)
        return 1;
    const int64_t *ks;
    if (odnn_attr_ints(v, n, "kernel_shape", &ks) != (size_t)x.ndim - 2) {
        odnn_reason(reason, op, "kernel_shape must have %d values", x.ndim - 2);
        return 0;
    }
    if (odnn_attr_int(v, n, "storage_order", 0) != 0) {
        odnn_reason(reason, op, "storage_order 1 is not supported");
        return 0;
    }
    if (strcmp(op, "AveragePool") == 0 && odnn_attr_int(v, n, "count_include_pad", 0) &&
        odnn_attr_int(v, n, "ceil_mode", 0)) {
        odnn_reason(reason, op, "count_include_pad with ceil_mode is not supported");
        return 0;
    }
    struct odnn_window w;
    return odnn_window(v, n, op, &x, ks, &y, &w, reason);
}

/* The ops oneDNN's binary primitive computes. */
/* Whether oneDNN would run Y = Y-shaped source (op) BC-shaped source, both
 * row-major f32, on its reference binary. */
/* The dims of a row-major broadcast YD <- D1 (rank ND) with neighbouring
 * axes merged where both sources agree on broadcasting them, axes of one
 * element dropped: [1, H, S, D] * [1, 1, S, D] (a rotary embedding's cos
 * beside each head) is [H, S*D] * [1, S*D], which oneDNN's jit binary
 * takes, where it runs the 4-D form on its reference kernel (0.2 ms for
 * [1, 4, 48, 64]). 1 when the rank went down (*CND, CY, C1 set). */
static int odnn_binary_collapse(int nd, const dnnl_dim_t *yd, const dnnl_dim_t *d1, int *cnd,
                                dnnl_dim_t *cy, dnnl_dim_t *c1)
{
    int k = 0, last = -1; /* last: 1 when the run so far is broadcast, 0 full */
    for (int i = 0; i < nd; i++) {
        if (yd[i] == 1)
            continue;
        int bc = d1[i] != yd[i];
        if (bc && d1[i] != 1)
            return 0; /* not a broadcast */
        if (k > 0 && bc == last) {
            cy[k - 1] *= yd[i];
            c1[k - 1] *= d1[i];
        } else {
            cy[k] = yd[i];
            c1[k] = d1[i];
            k++;
            last = bc;
        }
    }
    if (k == 0)
        cy[0] = c1[0] = 1, k = 1;
    *cnd = k;
    return k < nd;
}

static int odnn_binary_ref_of(int nd, const dnnl_dims_t d0, const dnnl_dims_t d1);

/* The module's own broadcast binary's op for ONNX op OP (odnn_bbin_run),
 * or -1. */
static int odnn_bop_of(const char *op)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
    for (int i = 0; i < 6; i++)
        if (strcmp(op, ops[i]) == 0)
            return i;
    return -1;
}

static int odnn_probe_binary_ref(const struct odnn_tinfo *y, const struct odnn_tinfo *bc)
{
    pthread_once(&odnn_probe_once, odnn_probe_engine_make);
    if (odnn_probe_engine == NULL || y->ndim < 1 || y->ndim > ODNN_MAX_RANK)
        return 0;
    dnnl_dims_t d0, d1;
    int nd = y->ndim;
    int64_t key[2 + 2 * ODNN_MAX_RANK + 1];
    int nk = 0;
    key[nk++] = 2;
    key[nk++] = omp_get_max_threads();
    for (int i = 0; i < nd; i++) {
        d0[i] = y->dims[i];
        int j = i - (nd - bc->ndim);
        d1[i] = j >= 0 ? bc->dims[j] : 1;
        key[nk++] = d0[i];
        key[nk++] = d1[i];
    }
    int is_ref = 0;
    if (onednn_memo_get(key, nk, &is_ref, NULL, 0)) /* onednn_memo.c */
        return is_ref;
    is_ref = odnn_binary_ref_of(nd, d0, d1);
    onednn_memo_put(key, nk, is_ref, NULL);
    return is_ref;
}

/* odnn_probe_binary_ref for the plain dims D0 (the output's) and D1. */
static int odnn_binary_ref_of(int nd, const dnnl_dims_t d0, const dnnl_dims_t d1)
{
    dnnl_memory_desc_t m0, m1, md;
    dnnl_binary_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    int is_ref = 0;
    if (dnnl_memory_desc_init_by_strides(&m0, nd, d0, dnnl_f32, NULL) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&m1, nd, d1, dnnl_f32, NULL) == dnnl_success &&
        dnnl_memory_desc_init_by_strides(&md, nd, d0, dnnl_f32, NULL) == dnnl_success &&
        dnnl_binary_desc_init(&bd, dnnl_binary_div, &m0, &m1, &md) == dnnl_success &&
        dnnl_primitive_desc_create(&pd, &bd, NULL, odnn_probe_engine, NULL) == dnnl_success) {
        const char *impl = NULL;
        is_ref = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) ==
                     dnnl_success &&
                 impl != NULL && odnn_impl_is_ref(impl);
        dnnl_primitive_desc_destroy(pd);
    }
    dnnl_dims_t cy, c1;
    int cnd;
    if (is_ref && odnn_binary_collapse(nd, d0, d1, &cnd, cy, c1))
        return odnn_binary_ref_of(cnd, cy, c1); /* odnn_binary runs it in the merged dims */
    return is_ref;
}

static int odnn_is_binary(const char *op)
{
    return strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 ||
           strcmp(op, "Div") == 0 || strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0;
}

/* ONNX broadcasting of a binary node, as oneDNN binary does it: the first
 * source has the output's shape, the second broadcasts into it. */
/* Whether A and B (known, of rank <= Y's, at most ODNN_MAX_RANK) broadcast
 * to Y multidirectionally: what the module's own loop takes. */
static int odnn_bbin_fits(const struct odnn_tinfo *a, const struct odnn_tinfo *b,
                          const struct odnn_tinfo *y)
{
    const struct odnn_tinfo *t[2] = {a, b};
    if (!y->known || y->ndim > ODNN_MAX_RANK)
        return 0;
    for (int k = 0; k < 2; k++) {
        if (!t[k]->known || t[k]->ndim > y->ndim)
            return 0;
        for (int32_t i = 1; i <= t[k]->ndim; i++)
            if (t[k]->dims[t[k]->ndim - i] != 1 &&
                t[k]->dims[t[k]->ndim - i] != y->dims[y->ndim - i])
                return 0;
    }
    return 1;
}

static int odnn_check_binary(const pl_graph_view *v, size_t n, const char *op, char *reason)
{
    struct odnn_tinfo a, b, y;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    odnn_tensor(v, odnn_in(v, n, 1), &b);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (a.cdata != NULL && b.cdata != NULL) {
        odnn_reason(reason, op, "both inputs are constants (left to constant folding)");
        return 0;
    }
    if (onednn_host->graph->node_input_count(v, n) != 2) {
        odnn_reason(reason, op, "%zu inputs: oneDNN's binary takes two",
                    onednn_host->graph->node_input_count(v, n));
        return 0;
    }
    int commutes = strcmp(op, "Add") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Max") == 0 ||
                   strcmp(op, "Min") == 0;
    const struct odnn_tinfo *full = &a, *bc = &b;
    if (a.elems != y.elems || a.ndim != y.ndim) {
        if (!commutes || b.elems != y.elems || b.ndim != y.ndim) {
            if (odnn_bop_of(op) >= 0 && odnn_bbin_fits(&a, &b, &y))
                return 1; /* the module's own loop (odnn_bbin_emit) */
            char t1[64], t2[64];
            odnn_reason(reason, op, "both inputs broadcast (%s, %s); oneDNN binary broadcasts "
                                    "only its second source",
                        odnn_dims_text(&a, t1, sizeof t1), odnn_dims_text(&b, t2, sizeof t2));
            return 0;
        }
        full = &b, bc = &a;
    }
    (void)full;
    if (bc->ndim > y.ndim) {
        odnn_reason(reason, op, "input of higher rank than the output");
        return 0;
    }
    for (int32_t i = 1; i <= bc->ndim; i++)
        if (bc->dims[bc->ndim - i] != 1 && bc->dims[bc->ndim - i] != y.dims[y.ndim - i]) {
            odnn_reason(reason, op, "shapes do not broadcast");
            return 0;
        }
    /* [N, 1, H, W] across the channels of a 4-d tensor the subgraph keeps
     * channel-blocked: oneDNN's reference binary only, unless merged dims
     * make it one oneDNN's jit kernel takes (odnn_binary_collapse: a
     * rotary embedding's [1, 1, S, D] beside [1, heads, S, D], plain). */
    if (y.ndim == 4 && bc->ndim >= 3 && bc->dims[bc->ndim - 3] == 1 && y.dims[1] > 1 &&
        bc->dims[bc->ndim - 1] * bc->dims[bc->ndim - 2] > 1 && odnn_probe_binary_ref(&y, bc)) {
        odnn_reason(reason, op, "a broadcast across channels runs on oneDNN's reference "
                                "implementation");
        return 0;
    }
    return 1;
}

static int odnn_check_matmul(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo a, b;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    odnn_tensor(v, odnn_in(v, n, 1), &b);
    if (a.ndim < 2 || a.ndim > 4 || b.ndim < 2 || b.ndim > 4) {
        odnn_reason(reason, "MatMul", "ranks %d and %d: only 2-D to 4-D operands are supported",
                    a.ndim, b.ndim);
        return 0;
    }
    int32_t r = a.ndim > b.ndim ? a.ndim : b.ndim;
    for (int32_t i = 3; i <= r; i++) {
        int64_t da = i <= a.ndim ? a.dims[a.ndim - i] : 1;
        int64_t db = i <= b.ndim ? b.dims[b.ndim - i] : 1;
        if (da != db && da != 1 && db != 1) {
            odnn_reason(reason, "MatMul", "batch dims %lld and %lld do not broadcast",
                        (long long)da, (long long)db);
            return 0;
        }
    }
    return 1;
}

static int odnn_check_gemm(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo a, b, c, y;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    odnn_tensor(v, odnn_in(v, n, 1), &b);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (a.ndim != 2 || b.ndim != 2) {
        odnn_reason(reason, "Gemm", "A and B must be 2-D");
        return 0;
    }
    if (odnn_in(v, n, 2) >= 0) {
        odnn_tensor(v, odnn_in(v, n, 2), &c);
        if (c.cdata == NULL) {
            odnn_reason(reason, "Gemm", "C is not a constant (only a constant C becomes the "
                                        "bias)");
            return 0;
        }
        if (c.ndim > 2 ||
            (c.ndim >= 1 && c.dims[c.ndim - 1] != 1 && c.dims[c.ndim - 1] != y.dims[1]) ||
            (c.ndim == 2 && c.dims[0] != 1 && c.dims[0] != y.dims[0])) {
            odnn_reason(reason, "Gemm", "C does not broadcast to the output");
            return 0;
        }
    }
    return 1;
}

static int odnn_clip_bounds(const pl_graph_view *v, size_t n, float *lo, float *hi, char *reason)
{
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (onednn_host->graph->node_opset(v, n) < 11) {
        *lo = (float)odnn_attr_float(v, n, "min", -FLT_MAX);
        *hi = (float)odnn_attr_float(v, n, "max", FLT_MAX);
        return 1;
    }
    for (int i = 1; i <= 2; i++) {
        int64_t t = odnn_in(v, n, (size_t)i);
        if (t >= 0 && !odnn_scalar(v, t, i == 1 ? lo : hi)) {
            odnn_reason(reason, "Clip", "%s is not a constant scalar", i == 1 ? "min" : "max");
            return 0;
        }
    }
    if (*lo != *lo || *hi != *hi) {
        odnn_reason(reason, "Clip", "a bound is NaN");
        return 0;
    }
    /* min above max: every element becomes max (ONNX's min(max(x, lo), hi));
     * oneDNN refuses alpha > beta. */
    if (*lo > *hi)
        *lo = *hi;
    return 1;
}

/* One oneDNN eltwise step: ALG(ALPHA, BETA). */
struct odnn_elt {
    dnnl_alg_kind_t alg;
    float alpha, beta;
};

#define ODNN_MAX_ELT 2 /* the most eltwise steps one ONNX op becomes */

/* ONNX's defaults for Selu, as float. */
#define ODNN_SELU_ALPHA 1.67326319217681884765625f
#define ODNN_SELU_GAMMA 1.05070102214813232421875f

/* The eltwise steps a one-input op computes, in order, into SEQ: their
 * count, or 0 for an op that is none (REASON set when the op is one but
 * its attributes or inputs do not fit). Two steps where oneDNN 2.6 has no
 * single algorithm: HardSigmoid is linear(alpha, beta) then clip(0, 1);
 * Selu is elu(alpha) then linear(gamma). oneDNN 2.6's hardswish ignores
 * alpha and beta and computes x * relu6(x + 3) / 6, ONNX's HardSwish
 * (alpha 1/6, beta 1/2, not attributes); soft_relu is log(1 + exp(x)),
 * Softplus. */
static int odnn_eltwise_seq(const pl_graph_view *v, size_t n, struct odnn_elt *seq,
                            char *reason)
{
    const char *op = onednn_host->graph->node_op(v, n);
    struct odnn_elt *e = &seq[0];
    e->alpha = 0;
    e->beta = 0;
    if (strcmp(op, "Relu") == 0)
        e->alg = dnnl_eltwise_relu;
    else if (strcmp(op, "LeakyRelu") == 0)
        e->alg = dnnl_eltwise_relu, e->alpha = (float)odnn_attr_float(v, n, "alpha", 0.01);
    else if (strcmp(op, "Sigmoid") == 0)
        e->alg = dnnl_eltwise_logistic;
    else if (strcmp(op, "Tanh") == 0)
        e->alg = dnnl_eltwise_tanh;
    else if (strcmp(op, "Exp") == 0)
        e->alg = dnnl_eltwise_exp;
    else if (strcmp(op, "Sqrt") == 0)
        e->alg = dnnl_eltwise_sqrt;
    else if (strcmp(op, "Abs") == 0)
        e->alg = dnnl_eltwise_abs;
    else if (strcmp(op, "Round") == 0) /* half to even, as ONNX */
        e->alg = dnnl_eltwise_round;
    else if (strcmp(op, "Softplus") == 0)
        e->alg = dnnl_eltwise_soft_relu;
    else if (strcmp(op, "HardSwish") == 0)
        e->alg = dnnl_eltwise_hardswish;
    else if (strcmp(op, "Neg") == 0)
        e->alg = dnnl_eltwise_linear, e->alpha = -1.0f;
    else if (strcmp(op, "Elu") == 0)
        e->alg = dnnl_eltwise_elu, e->alpha = (float)odnn_attr_float(v, n, "alpha", 1.0);
    else if (strcmp(op, "Selu") == 0) {
        e->alg = dnnl_eltwise_elu;
        e->alpha = (float)odnn_attr_float(v, n, "alpha", ODNN_SELU_ALPHA);
        seq[1].alg = dnnl_eltwise_linear;
        seq[1].alpha = (float)odnn_attr_float(v, n, "gamma", ODNN_SELU_GAMMA);
        seq[1].beta = 0;
        return 2;
    } else if (strcmp(op, "HardSigmoid") == 0) {
        e->alg = dnnl_eltwise_linear;
        e->alpha = (float)odnn_attr_float(v, n, "alpha", 0.2);
        e->beta = (float)odnn_attr_float(v, n, "beta", 0.5);
        seq[1].alg = dnnl_eltwise_clip;
        seq[1].alpha = 0.0f;
        seq[1].beta = 1.0f;
        return 2;
    } else if (strcmp(op, "Clip") == 0) {
        if (!odnn_clip_bounds(v, n, &e->alpha, &e->beta, reason))
            return 0;
        e->alg = dnnl_eltwise_clip;
    } else if (strcmp(op, "PRelu") == 0) {
        /* one slope: a leaky ReLU (one per channel: odnn_prelu_of) */
        float slope;
        if (!odnn_scalar(v, odnn_in(v, n, 1), &slope))
            return 0;
        e->alg = dnnl_eltwise_relu, e->alpha = slope;
    } else if (strcmp(op, "Pow") == 0) {
        float p;
        if (!odnn_scalar(v, odnn_in(v, n, 1), &p)) {
            odnn_reason(reason, "Pow", "the exponent is not a constant scalar");
            return 0;
        }
        e->alg = dnnl_eltwise_pow, e->alpha = 1.0f, e->beta = p;
    } else
        return 0;
    return 1;
}

/* ---- reductions -------------------------------------------------------------
 *
 * ReduceMean, ReduceSum, ReduceMax and ReduceMin through oneDNN's reduction
 * primitive. Its fast kernel in oneDNN 2.6 (jit_uni_reduction) reduces
 * only trailing axes of a plain tensor: [N, C, H, W] over H and W, or over
 * C, H and W; over C alone, over N, or over H but not W, oneDNN picks its
 * reference implementation, 10-100x slower, and those are refused. */

static dnnl_alg_kind_t odnn_reduce_alg(const char *op)
{
    return strcmp(op, "ReduceMean") == 0  ? dnnl_reduction_mean
           : strcmp(op, "ReduceSum") == 0 ? dnnl_reduction_sum
           : strcmp(op, "ReduceMax") == 0 ? dnnl_reduction_max
           : strcmp(op, "ReduceMin") == 0 ? dnnl_reduction_min
                                          : (dnnl_alg_kind_t)0;
}

/* The constant i64 vector input K of node N (at most ODNN_MAX_RANK values)
 * into OUT: its length, -1 when absent, -2 when not a constant i64 vector. */
static int odnn_const_i64s(const pl_graph_view *v, size_t n, size_t k, int64_t *out)
{
    const pl_graph_api *g = onednn_host->graph;
    int64_t t = odnn_in(v, n, k);
    if (t < 0)
        return -1;
    pl_dtype dt;
    int32_t nd = -1;
    const int64_t *dims = NULL;
    const void *data = NULL;
    size_t bytes = 0;
    if (!g->tensor_type(v, t, &dt, &nd, &dims) || !PL_DTYPE_EQ(dt, PL_DTYPE_I64) || nd != 1 ||
        dims[0] < 0 || dims[0] > ODNN_MAX_RANK || !g->tensor_constant(v, t, &data, &bytes) ||
        bytes != (size_t)dims[0] * sizeof(int64_t))
        return -2;
    if (bytes > 0)
        memcpy(out, data, bytes);
    return (int)dims[0];
}

/* The axes reduction node N reduces of X, as a bit mask in *MASK: from the
 * axes attribute (ReduceSum before opset 13, the others before 18) or
 * the constant i64 input axes; none given means all axes, or none under
 * noop_with_empty_axes. 0 with REASON when they cannot be read. */
static int odnn_reduce_axes(const pl_graph_view *v, size_t n, const char *op,
                            const struct odnn_tinfo *x, unsigned *mask, char *reason)
{
    const int64_t *axes = NULL;
    size_t na = odnn_attr_ints(v, n, "axes", &axes);
    int64_t in_axes[ODNN_MAX_RANK];
    int given = odnn_const_i64s(v, n, 1, in_axes);
    if (given == -2) {
        odnn_reason(reason, op, "axes is not a constant i64 vector of at most %d values",
                    ODNN_MAX_RANK);
        return 0;
    }
    if (given >= 0) {
        na = (size_t)given;
        axes = in_axes;
    }
    int nd = x->ndim > 0 ? x->ndim : 1;
    *mask = 0;
    if (na == 0) {
        if (odnn_attr_int(v, n, "noop_with_empty_axes", 0) == 0)
            *mask = (1u << nd) - 1;
        return 1;
    }
    for (size_t k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + x->ndim : axes[k];
        if (a < 0 || a >= nd) {
            odnn_reason(reason, op, "axis %lld is out of range for rank %d", (long long)axes[k],
                        x->ndim);
            return 0;
        }
        *mask |= 1u << a;
    }
    return 1;
}

/* True when reducing the axes in MASK of X changes nothing: each has
 * size 1 (oneDNN refuses a reduction whose source and destination agree;
 * the node is then a view of its input). */
static int odnn_reduce_is_view(const struct odnn_tinfo *x, unsigned mask)
{
    for (int32_t d = 0; d < x->ndim; d++)
        if ((mask >> d & 1u) && x->dims[d] != 1)
            return 0;
    return 1;
}

/* A reduction over one run of adjacent axes with a kept axis after it:
 * X seen as [OUTER, K, INNER] (unit axes left out), reduced over K, with
 * INNER > 1. Returns 0 when the reduced axes are not adjacent or trail. */
static int odnn_reduce_middle(const struct odnn_tinfo *x, unsigned mask, int64_t *outer,
                              int64_t *k, int64_t *inner)
{
    *outer = *k = *inner = 1;
    int part = 0; /* 0 before the reduced run, 1 in it, 2 after it */
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->dims[d] == 1)
            continue;
        int reduced = (mask >> d & 1u) != 0;
        if (reduced && part == 2)
            return 0;
        if (reduced)
            part = 1;
        else if (part == 1)
            part = 2;
        *(part == 0 ? outer : part == 1 ? k : inner) *= x->dims[d];
    }
    return part == 2;
}

/* The product that sums [OUTER, K, INNER] over K: a constant [1, K]
 * vector (batch 1, broadcast) times the source as it lies, [OUTER, K,
 * INNER], into [OUTER, 1, INNER]; batch dims only when OUTER > 1. The
 * source is the product's weights: read row by row, which oneDNN's brgemm
 * does 3-8x faster than the transposed source times a [K, 1] vector (1 x
 * 96 x 3136: 0.010 against 0.080 ms; its reduction primitive, the
 * reference kernel, 4.3 ms). */
static int odnn_reduce_middle_mds(int64_t outer, int64_t k, int64_t inner, dnnl_memory_desc_t *a,
                                  dnnl_memory_desc_t *w, dnnl_memory_desc_t *y)
{
    int nd = outer > 1 ? 3 : 2, o = nd - 2;
    dnnl_dims_t ad = {0}, wd = {0}, yd = {0};
    if (o)
        ad[0] = 1, wd[0] = yd[0] = outer;
    ad[o] = 1, ad[o + 1] = k;
    wd[o] = k, wd[o + 1] = inner;
    yd[o] = 1, yd[o + 1] = inner;
    return dnnl_memory_desc_init_by_strides(a, nd, ad, dnnl_f32, NULL) == dnnl_success &&
           dnnl_memory_desc_init_by_strides(w, nd, wd, dnnl_f32, NULL) == dnnl_success &&
           dnnl_memory_desc_init_by_strides(y, nd, yd, dnnl_f32, NULL) == dnnl_success;
}

/* Whether a JIT kernel takes that product (supported_nodes, which has no
 * compile context: the probe engine). */
static int odnn_probe_reduce_middle(int64_t outer, int64_t k, int64_t inner)
{
    pthread_once(&odnn_probe_once, odnn_probe_engine_make);
    dnnl_memory_desc_t a, w, y;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    int jit = 0;
    if (odnn_probe_engine != NULL && odnn_reduce_middle_mds(outer, k, inner, &a, &w, &y) &&
        dnnl_matmul_desc_init(&md, &a, &w, NULL, &y) == dnnl_success &&
        dnnl_primitive_desc_create(&pd, &md, NULL, odnn_probe_engine, NULL) == dnnl_success) {
        const char *impl = NULL;
        jit = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) ==
                  dnnl_success &&
              impl != NULL && !odnn_impl_is_ref(impl);
        dnnl_primitive_desc_destroy(pd);
    }
    return jit;
}

static int odnn_check_reduce(const pl_graph_view *v, size_t n, const char *op,
                             const struct odnn_tinfo *x, const struct odnn_tinfo *y,
                             char *reason)
{
    unsigned mask;
    if (!odnn_reduce_axes(v, n, op, x, &mask, reason))
        return 0;
    int keep = odnn_attr_int(v, n, "keepdims", 1) != 0;
    int64_t elems = 1;
    int32_t rank = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        int reduced = (mask >> d & 1u) != 0;
        elems *= reduced ? 1 : x->dims[d];
        rank += !reduced || keep;
    }
    if (y->elems != elems || (x->ndim > 0 && y->ndim != rank)) {
        odnn_reason(reason, op, "the output shape is not the input's with the axes reduced");
        return 0;
    }
    /* oneDNN 2.6 starts a max reduction from -FLT_MAX and a min from
     * FLT_MAX: a row of -inf (an attention row every key of which is
     * masked, which exporters then test for with Equal(max, -inf)) gave
     * -FLT_MAX, and NaN did not propagate. Left to the next backend; a
     * reduction over unit axes only is a view and stays. */
    if (strcmp(op, "ReduceMax") == 0 || strcmp(op, "ReduceMin") == 0)
        for (int32_t d = 0; d < x->ndim; d++)
            if ((mask >> d & 1u) && x->dims[d] > 1) {
                odnn_reason(reason, op, "oneDNN's %s reduction starts from %sFLT_MAX, so "
                                        "infinities and NaN come out wrong",
                            op[6] == 'M' && op[7] == 'a' ? "max" : "min",
                            op[6] == 'M' && op[7] == 'a' ? "-" : "");
                return 0;
            }
    /* A mean or sum over adjacent axes with kept ones after them (a
     * LayerNorm over the channels of [N, C, T]) is a product by a constant
     * vector (odnn_reduce_middle_by_matmul): oneDNN's reduction has only
     * its reference kernel for it. */
    int64_t outer, k, inner;
    if ((strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0) && x->f32 &&
        odnn_reduce_middle(x, mask, &outer, &k, &inner) &&
        odnn_probe_reduce_middle(outer, k, inner))
        return 1;
    /* the fast kernel: no kept axis (of more than one element) after a
     * reduced one */
    int32_t reduced_at = -1;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->dims[d] == 1)
            continue;
        if (mask >> d & 1u) {
            if (reduced_at < 0)
                reduced_at = d;
        } else if (reduced_at >= 0) {
            odnn_reason(reason, op, "reducing axis %d%s but keeping axis %d runs on oneDNN's "
                                    "reference implementation",
                        reduced_at, x->ndim == 4 && reduced_at == 1 ? " (across channels)" : "",
                        d);
            return 0;
        }
    }
    return 1;
}

/* Split along AXIS into outputs whose shapes are known: each output is the
 * input's slice at the running offset, so the sizes come from the output
 * shapes and the split input or attribute need not be read. */
static int odnn_split_axis(const pl_graph_view *v, size_t n, const struct odnn_tinfo *x,
                           int32_t *out_axis)
{
    int64_t axis = odnn_attr_int(v, n, "axis", 0);
    if (axis < 0)
        axis += x->ndim;
    if (axis < 0 || axis >= x->ndim)
        return 0;
    int64_t sum = 0;
    for (size_t k = 0; k < onednn_host->graph->node_output_count(v, n); k++) {
        struct odnn_tinfo y;
        if (!odnn_tensor(v, odnn_out(v, n, k), &y) || !y.known || y.ndim != x->ndim)
            return 0;
        for (int32_t d = 0; d < x->ndim; d++)
            if (d != axis && y.dims[d] != x->dims[d])
                return 0;
        sum += y.dims[axis];
    }
    *out_axis = (int32_t)axis;
    return sum == x->dims[axis];
}

static int odnn_check_split(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo x;
    int32_t axis;
    for (size_t k = 0; k < onednn_host->graph->node_output_count(v, n); k++)
        if (odnn_out(v, n, k) < 0) {
            odnn_reason(reason, "Split", "an output is absent");
            return 0;
        }
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || x.ndim < 1 || !odnn_split_axis(v, n, &x, &axis)) {
        odnn_reason(reason, "Split", "the output shapes do not tile the input along axis");
        return 0;
    }
    return 1;
}

/* Slice as a view: per axis of X the first element START and the STEP
 * (>= 1) that give output Y, from the constant starts, ends, axes and
 * steps (inputs from opset 10, attributes before). Returns 0 with a
 * reason: not constants, a negative step, or an output shape the window
 * does not give. */
static int odnn_slice_window(const pl_graph_view *v, size_t n, const struct odnn_tinfo *x,
                             const struct odnn_tinfo *y, int64_t *start, int64_t *step,
                             char *reason)
{
    int64_t st[ODNN_MAX_RANK], en[ODNN_MAX_RANK], ax[ODNN_MAX_RANK], sp[ODNN_MAX_RANK];
    int ns, ne, na, np;
    if (onednn_host->graph->node_opset(v, n) < 10) {
        const int64_t *a;
        ns = (int)odnn_attr_ints(v, n, "starts", &a);
        if (ns > ODNN_MAX_RANK)
            ns = -2;
        for (int i = 0; i < ns; i++)
            st[i] = a[i];
        ne = (int)odnn_attr_ints(v, n, "ends", &a);
        if (ne > ODNN_MAX_RANK)
            ne = -2;
        for (int i = 0; i < ne; i++)
            en[i] = a[i];
        na = (int)odnn_attr_ints(v, n, "axes", &a);
        if (na > ODNN_MAX_RANK)
            na = -2;
        for (int i = 0; i < na; i++)
            ax[i] = a[i];
        na = na == 0 ? -1 : na;
        np = -1;
    } else {
        ns = odnn_const_i64s(v, n, 1, st);
        ne = odnn_const_i64s(v, n, 2, en);
        na = odnn_const_i64s(v, n, 3, ax);
        np = odnn_const_i64s(v, n, 4, sp);
    }
    if (ns < 0 || ne != ns || na == -2 || np == -2 || (na >= 0 && na != ns) ||
        (np >= 0 && np != ns)) {
        odnn_reason(reason, "Slice", "starts, ends, axes and steps are not constant i64 "
                                     "vectors of one length");
        return 0;
    }
    for (int d = 0; d < x->ndim; d++)
        start[d] = 0, step[d] = 1;
    unsigned seen = 0;
    for (int i = 0; i < ns; i++) {
        int64_t a = na >= 0 ? ax[i] : i;
        if (a < 0)
            a += x->ndim;
        int64_t k = np >= 0 ? sp[i] : 1;
        if (a < 0 || a >= x->ndim || (seen >> a & 1u) || k < 1) {
            odnn_reason(reason, "Slice", k < 1 ? "a step below 1 is not a view"
                                               : "axes out of range or repeated");
            return 0;
        }
        seen |= 1u << a;
        int64_t dim = x->dims[a], b = st[i], e = en[i];
        b = b < 0 ? b + dim : b;
        e = e < 0 ? e + dim : e;
        b = b < 0 ? 0 : b > dim ? dim : b;
        e = e < 0 ? 0 : e > dim ? dim : e;
        start[a] = b;
        step[a] = k;
        int64_t len = e > b ? (e - b + k - 1) / k : 0;
        if (len != y->dims[a]) {
            odnn_reason(reason, "Slice", "the window does not give the stated output shape");
            return 0;
        }
    }
    for (int d = 0; d < x->ndim; d++)
        if (!(seen >> d & 1u) && y->dims[d] != x->dims[d]) {
            odnn_reason(reason, "Slice", "the window does not give the stated output shape");
            return 0;
        }
    return 1;
}

/* Resize and Upsample as oneDNN's resampling, where its coordinates are
 * ONNX's: nearest when every spatial dim grows by a whole factor k (with
 * asymmetric/floor, or a half-pixel mode with round_prefer_floor/ceil, both
 * pick input x / k for output x, as does oneDNN), linear with half_pixel
 * (pytorch_half_pixel where no output dim is 1) at any factor, the scale
 * the node states being the sizes' ratio. Batch and channels keep their
 * size. Returns the algorithm, or undef with a reason. */
static dnnl_alg_kind_t odnn_resample_alg(const pl_graph_view *v, size_t n, const char *op,
                                         char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    struct odnn_tinfo x, y;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !odnn_tensor(v, odnn_out(v, n, 0), &y) ||
        x.ndim < 3 || x.ndim > 5 || y.ndim != x.ndim || x.dims[0] != y.dims[0] ||
        x.dims[1] != y.dims[1]) {
        odnn_reason(reason, op, "only 3-D to 5-D tensors whose batch and channels keep their "
                                "size");
        return dnnl_alg_kind_undef;
    }
    char mb[32], cb[40], nb[40];
    int upsample = strcmp(op, "Upsample") == 0;
    const char *mode = odnn_attr_string(v, n, "mode", "nearest", mb, sizeof mb);
    const char *ctm = odnn_attr_string(v, n, "coordinate_transformation_mode",
                                       upsample ? "asymmetric" : "half_pixel", cb, sizeof cb);
    const char *nm = odnn_attr_string(v, n, "nearest_mode",
                                      upsample ? "floor" : "round_prefer_floor", nb, sizeof nb);
    if (g->node_opset(v, n) < 11 && !upsample) /* Resize-10: asymmetric, floor */
        ctm = "asymmetric", nm = "floor";
    int64_t ant = 0;
    const int64_t *axes;
    if ((g->attr_int(v, n, "antialias", &ant) && ant != 0) ||
        odnn_attr_ints(v, n, "axes", &axes) != 0 ||
        strcmp(ctm, "tf_crop_and_resize") == 0) {
        odnn_reason(reason, op, "antialias, axes and tf_crop_and_resize are not supported");
        return dnnl_alg_kind_undef;
    }
    /* the scale each spatial axis states: scales if given, else the sizes */
    int64_t ts = upsample ? odnn_in(v, n, 1) : odnn_in(v, n, 2);
    struct odnn_tinfo sc;
    const float *scales = NULL;
    if (ts >= 0 && odnn_tensor(v, ts, &sc) && sc.cdata != NULL && sc.elems == x.ndim &&
        sc.f32)
        scales = sc.cdata;
    else if (ts >= 0 && odnn_tensor(v, ts, &sc) && sc.elems > 0) {
        odnn_reason(reason, op, "scales is not a constant f32 vector of the input's rank");
        return dnnl_alg_kind_undef;
    }
    if (g->node_opset(v, n) < 9 && upsample) {
        odnn_reason(reason, op, "Upsample before opset 9 (scales as an attribute) is left to cpu");
        return dnnl_alg_kind_undef;
    }
    int whole = 1, has_one = 0;
    for (int d = 2; d < x.ndim; d++) {
        double want = (double)y.dims[d] / (double)x.dims[d];
        if (scales != NULL && fabs((double)scales[d] * (double)x.dims[d] - (double)y.dims[d]) > 1e-4) {
            odnn_reason(reason, op, "scale %g of axis %d does not give the output size "
                                    "exactly (ONNX then maps by the scale)",
                        (double)scales[d], d);
            return dnnl_alg_kind_undef;
        }
        whole &= y.dims[d] % x.dims[d] == 0 && want >= 1.0;
        has_one |= y.dims[d] == 1;
    }
    if (strcmp(mode, "nearest") == 0) {
        int asym = strcmp(ctm, "asymmetric") == 0 && strcmp(nm, "floor") == 0;
        int half = (strcmp(ctm, "half_pixel") == 0 || strcmp(ctm, "pytorch_half_pixel") == 0) &&
                   (strcmp(nm, "round_prefer_floor") == 0 || strcmp(nm, "round_prefer_ceil") == 0);
        if (whole && (asym || half))
            return dnnl_resampling_nearest;
        odnn_reason(reason, op, "nearest with %s/%s%s is not oneDNN's mapping", ctm, nm,
                    whole ? "" : " at a factor that is not whole");
        return dnnl_alg_kind_undef;
    }
    if (strcmp(mode, "linear") == 0 &&
        (strcmp(ctm, "half_pixel") == 0 || (strcmp(ctm, "pytorch_half_pixel") == 0 && !has_one)))
        return dnnl_resampling_linear;
    odnn_reason(reason, op, "mode %s with %s is not oneDNN's resampling", mode, ctm);
    return dnnl_alg_kind_undef;
}

/* Resize and Upsample on the module's own kernel (onednn_resize.c): a
 * 4-D f32 tensor whose batch and channels keep their size; modes nearest
 * (every nearest_mode), linear and cubic (cubic_coeff_a, exclude_outside)
 * under every coordinate transformation but tf_crop_and_resize, at the
 * scales the node states (the constant scales, else the sizes' ratio), as
 * the cpu module computes them (Resize-10 and Upsample: asymmetric,
 * floor). Fills R's modes, scales and shape; 0 with a reason. */
static int odnn_resize_own_modes(const pl_graph_view *v, size_t n, const char *op,
                                 struct odnn_resize *r, char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    struct odnn_tinfo x, y;
    memset(r, 0, sizeof *r);
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !odnn_tensor(v, odnn_out(v, n, 0), &y) ||
        !x.known || !y.known || !x.f32 || x.ndim != 4 || y.ndim != 4 || x.dims[0] != y.dims[0] ||
        x.dims[1] != y.dims[1] || x.dims[2] < 1 || x.dims[3] < 1 || x.dims[2] > INT32_MAX ||
        x.dims[3] > INT32_MAX) {
        odnn_reason(reason, op, "the module's Resize takes 4-D f32 tensors whose batch and "
                                "channels keep their size");
        return 0;
    }
    int opset = g->node_opset(v, n), upsample = strcmp(op, "Upsample") == 0;
    if (upsample && opset < 9) {
        odnn_reason(reason, op, "Upsample before opset 9 (scales as an attribute) is left to cpu");
        return 0;
    }
    char mb[32], cb[40], nb[40], kb[40];
    const char *mode = odnn_attr_string(v, n, "mode", "nearest", mb, sizeof mb);
    r->taps = strcmp(mode, "nearest") == 0  ? 1
              : strcmp(mode, "linear") == 0 ? 2
              : strcmp(mode, "cubic") == 0 && !upsample && opset >= 11 ? 4
                                                                       : 0;
    r->ctm = ODNN_CTM_ASYMMETRIC;
    r->nearest = ODNN_NEAREST_FLOOR;
    if (!upsample && opset >= 11) {
        static const char *const ctms[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                           "asymmetric", "tf_half_pixel_for_nn"};
        static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil",
                                               "floor", "ceil"};
        const char *ctm = odnn_attr_string(v, n, "coordinate_transformation_mode", "half_pixel",
                                           cb, sizeof cb);
        const char *nm = odnn_attr_string(v, n, "nearest_mode", "round_prefer_floor", nb,
                                          sizeof nb);
        r->ctm = r->nearest = -1;
        for (int i = 0; i < 5; i++)
            if (strcmp(ctm, ctms[i]) == 0)
                r->ctm = i;
        for (int i = 0; i < 4; i++)
            if (strcmp(nm, nearests[i]) == 0)
                r->nearest = i;
        if (r->ctm < 0 || r->nearest < 0) {
            odnn_reason(reason, op, "coordinate_transformation_mode %s / nearest_mode %s is not "
                                    "supported", ctm, nm);
            return 0;
        }
    }
    int64_t ant = 0;
    const int64_t *axes;
    const char *keep = odnn_attr_string(v, n, "keep_aspect_ratio_policy", "stretch", kb, sizeof kb);
    if (r->taps == 0 || (g->attr_int(v, n, "antialias", &ant) && ant != 0) ||
        odnn_attr_ints(v, n, "axes", &axes) != 0 || strcmp(keep, "stretch") != 0) {
        odnn_reason(reason, op, "mode %s, antialias, axes and keep_aspect_ratio_policy are not "
                                "supported", mode);
        return 0;
    }
    r->cubic_a = odnn_attr_float(v, n, "cubic_coeff_a", -0.75);
    r->exclude_outside = odnn_attr_int(v, n, "exclude_outside", 0) != 0;
    int64_t ts = odnn_in(v, n, upsample || opset < 11 ? 1 : 2);
    struct odnn_tinfo sc;
    if (ts >= 0 && odnn_tensor(v, ts, &sc) && sc.elems > 0) {
        const float *f = sc.cdata;
        if (f == NULL || !sc.f32 || sc.elems != 4 || sc.cbytes < 4 * sizeof *f) {
            odnn_reason(reason, op, "scales is not a constant f32 vector of the input's rank");
            return 0;
        }
        if (f[0] != 1.0f || f[1] != 1.0f || !(f[2] > 0.0f) || !(f[3] > 0.0f)) {
            odnn_reason(reason, op, "the module's Resize scales only the spatial axes");
            return 0;
        }
        r->scale_h = f[2], r->scale_w = f[3];
    } else {
        r->scale_h = (double)y.dims[2] / (double)x.dims[2];
        r->scale_w = (double)y.dims[3] / (double)x.dims[3];
    }
    r->n = x.dims[0];
    r->ch = x.dims[1];
    r->ih = x.dims[2], r->iw = x.dims[3], r->oh = y.dims[2], r->ow = y.dims[3];
    return 1;
}

/* Gather of one constant index (a scalar, or a vector of one) along an
 * axis: a view of that slice (a ViT's class token, a pooler's first
 * position). *AXIS and *INDEX (made non-negative) on success. */
static int odnn_gather_one(const pl_graph_view *v, size_t n, int64_t *axis, int64_t *index,
                           char *reason)
{
    struct odnn_tinfo x, y;
    const pl_graph_api *g = onednn_host->graph;
    int64_t it = odnn_in(v, n, 1);
    pl_dtype dt;
    int32_t nd = -1;
    const int64_t *dims = NULL;
    const void *data = NULL;
    size_t bytes = 0;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !odnn_tensor(v, odnn_out(v, n, 0), &y) ||
        it < 0 || !g->tensor_type(v, it, &dt, &nd, &dims) || nd > 1 || (nd == 1 && dims[0] != 1) ||
        !g->tensor_constant(v, it, &data, &bytes) ||
        !(PL_DTYPE_EQ(dt, PL_DTYPE_I64) || PL_DTYPE_EQ(dt, PL_DTYPE_I32))) {
        odnn_reason(reason, "Gather", "only one constant index is a view");
        return 0;
    }
    int64_t k = odnn_attr_int(v, n, "axis", 0);
    if (k < 0)
        k += x.ndim;
    int64_t i = 0;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I64) && bytes == sizeof(int64_t))
        memcpy(&i, data, sizeof i);
    else if (bytes == sizeof(int32_t)) {
        int32_t i32;
        memcpy(&i32, data, sizeof i32);
        i = i32;
    } else {
        odnn_reason(reason, "Gather", "only one constant index is a view");
        return 0;
    }
    if (k < 0 || k >= x.ndim || i < -x.dims[k] || i >= x.dims[k] || y.ndim < 1 ||
        y.ndim != x.ndim - (nd == 0)) {
        odnn_reason(reason, "Gather", "axis or index out of range");
        return 0;
    }
    *axis = k;
    *index = i < 0 ? i + x.dims[k] : i;
    return 1;
}

static int odnn_check_slice(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo x, y;
    int64_t start[ODNN_MAX_RANK], step[ODNN_MAX_RANK];
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !odnn_tensor(v, odnn_out(v, n, 0), &y) ||
        x.ndim < 1 || y.ndim != x.ndim) {
        odnn_reason(reason, "Slice", "the input or output shape is not known");
        return 0;
    }
    return odnn_slice_window(v, n, &x, &y, start, step, reason);
}

/* Says whether node N of V can be taken; reason set on refusal. U is the
 * view's readers (for the GELU pattern). */
/* ---- recurrent layers -------------------------------------------------------
 *
 * ONNX's RNN, GRU and LSTM become one oneDNN RNN primitive when oneDNN's
 * cell is exactly ONNX's: default activations (RNN: Tanh, Relu or Sigmoid,
 * the same both ways), no clip, no input_forget, every sequence as long as
 * X, and constant W, R, B and P. The gates are the same up to their order:
 * ONNX's LSTM stores i, o, f, c and oneDNN wants i, f, c, o (peepholes:
 * ONNX i, o, f, oneDNN i, f, o); GRU's z, r, h are oneDNN's u, r, o. ONNX's
 * two biases are summed, except GRU's Rbh under linear_before_reset, which
 * is lbr_gru's fourth bias gate (inside r (.) (...)). Without
 * linear_before_reset oneDNN's GRU computes tanh(Wh x + Rh (r (.) h) + Bo),
 * ONNX's with Bo = Wbh + Rbh: the same. */

/* The gate count of OP (1 for RNN) and whether it is one of the three. */
static int odnn_rnn_gates(const char *op)
{
    if (strcmp(op, "LSTM") == 0)
        return 4;
    if (strcmp(op, "GRU") == 0)
        return 3;
    return strcmp(op, "RNN") == 0 ? 1 : 0;
}

/* Directions of NODE's "direction": 1 or 2 (*reverse set for "reverse"),
 * 0 for an unknown name. */
static int odnn_rnn_dirs(const pl_graph_view *v, size_t n, int *reverse)
{
    char buf[32];
    const char *dir = odnn_attr_string(v, n, "direction", "forward", buf, sizeof buf);
    *reverse = strcmp(dir, "reverse") == 0;
    if (strcmp(dir, "forward") == 0 || *reverse)
        return 1;
    return strcmp(dir, "bidirectional") == 0 ? 2 : 0;
}

/* The eltwise algorithm of a vanilla RNN's activation NAME, or 0. */
static dnnl_alg_kind_t odnn_rnn_act(const char *name)
{
    return strcasecmp(name, "Tanh") == 0      ? dnnl_eltwise_tanh
           : strcasecmp(name, "Relu") == 0    ? dnnl_eltwise_relu
           : strcasecmp(name, "Sigmoid") == 0 ? dnnl_eltwise_logistic
                                              : (dnnl_alg_kind_t)0;
}

/* Reads the activations of node N: the vanilla RNN's algorithm in *alg;
 * refuses (0 and a reason) any list oneDNN's cell does not compute. */
static int odnn_rnn_activations(const pl_graph_view *v, size_t n, const char *op, int dirs,
                                dnnl_alg_kind_t *alg, char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    static const char *const lstm[3] = {"Sigmoid", "Tanh", "Tanh"};
    static const char *const gru[2] = {"Sigmoid", "Tanh"};
    int count = odnn_rnn_gates(op) == 4 ? 3 : odnn_rnn_gates(op) == 3 ? 2 : 1;
    *alg = dnnl_eltwise_tanh;
    if (g->attr_kind(v, n, "activations") == PL_GRAPH_ATTR_NONE)
        return 1;
    const char *const *names = NULL;
    size_t k = 0;
    if (g->attr_kind(v, n, "activations") != PL_GRAPH_ATTR_STRINGS ||
        !g->attr_strings(v, n, "activations", &names, &k) ||
        (k != (size_t)count && k != (size_t)(count * dirs))) {
        odnn_reason(reason, op, "activations is not a list of %d per direction", count);
        return 0;
    }
    for (size_t i = 0; i < k; i++) {
        const char *name = names[i] != NULL ? names[i] : "";
        if (count == 1) {
            dnnl_alg_kind_t a = odnn_rnn_act(name);
            if (a == 0 || (i > 0 && a != *alg)) {
                odnn_reason(reason, op, "activation '%s': oneDNN's RNN cell takes Tanh, Relu or "
                                        "Sigmoid, the same in both directions", name);
                return 0;
            }
            *alg = a;
        } else if (strcasecmp(name, (count == 3 ? lstm : gru)[i % (size_t)count]) != 0) {
            odnn_reason(reason, op, "activation '%s': oneDNN's %s cell computes only the "
                                    "default activations (%s)", name, op,
                        count == 3 ? "Sigmoid, Tanh, Tanh" : "Sigmoid, Tanh");
            return 0;
        }
    }
    return 1;
}

/* True when sequence_lens (an optional input) is absent or a constant of
 * BATCH values that all equal SEQ: then every row runs the whole sequence,
 * which is what oneDNN computes. */
static int odnn_rnn_full_lengths(const pl_graph_view *v, int64_t t, int64_t seq, int64_t batch)
{
    if (t < 0)
        return 1;
    pl_dtype dt;
    int32_t ndim = -1;
    const int64_t *dims = NULL;
    const void *data = NULL;
    size_t bytes = 0;
    const pl_graph_api *g = onednn_host->graph;
    if (!g->tensor_type(v, t, &dt, &ndim, &dims) || !PL_DTYPE_EQ(dt, PL_DTYPE_I32) ||
        ndim != 1 || dims[0] != batch || !g->tensor_constant(v, t, &data, &bytes) ||
        bytes != (size_t)batch * sizeof(int32_t))
        return 0;
    for (int64_t b = 0; b < batch; b++) {
        int32_t len;
        memcpy(&len, (const char *)data + (size_t)b * sizeof len, sizeof len);
        if (len != seq)
            return 0;
    }
    return 1;
}

static int odnn_check_rnn(const pl_graph_view *v, size_t n, const char *op, char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    int gates = odnn_rnn_gates(op), reverse;
    int dirs = odnn_rnn_dirs(v, n, &reverse);
    if (dirs == 0) {
        odnn_reason(reason, op, "direction is not forward, reverse or bidirectional");
        return 0;
    }
    int64_t layout = odnn_attr_int(v, n, "layout", 0);
    if (layout != 0 && layout != 1) {
        odnn_reason(reason, op, "layout %lld is not 0 or 1", (long long)layout);
        return 0;
    }
    if (g->attr_kind(v, n, "clip") != PL_GRAPH_ATTR_NONE) {
        odnn_reason(reason, op, "clip: oneDNN's cells do not clip the gates");
        return 0;
    }
    if (gates == 4 && odnn_attr_int(v, n, "input_forget", 0) != 0) {
        odnn_reason(reason, op, "input_forget: oneDNN's LSTM has no coupled input and forget "
                                "gates");
        return 0;
    }
    dnnl_alg_kind_t alg;
    if (!odnn_rnn_activations(v, n, op, dirs, &alg, reason))
        return 0;
    struct odnn_tinfo x, w, r, bias, p;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_in(v, n, 1), &w);
    odnn_tensor(v, odnn_in(v, n, 2), &r);
    if (x.ndim != 3 || w.ndim != 3 || r.ndim != 3) {
        odnn_reason(reason, op, "X, W and R must have rank 3");
        return 0;
    }
    int64_t seq = x.dims[layout ? 1 : 0], batch = x.dims[layout ? 0 : 1], hidden = r.dims[2];
    if (w.dims[0] != dirs || r.dims[0] != dirs || w.dims[1] != gates * hidden ||
        r.dims[1] != gates * hidden || w.dims[2] != x.dims[2] ||
        odnn_attr_int(v, n, "hidden_size", hidden) != hidden) {
        odnn_reason(reason, op, "W, R, X and hidden_size do not agree on the shapes");
        return 0;
    }
    if (w.cdata == NULL || r.cdata == NULL) {
        odnn_reason(reason, op, "W and R must be constants (they are laid out once, at "
                                "compile time)");
        return 0;
    }
    if (odnn_in(v, n, 3) >= 0 && (!odnn_tensor(v, odnn_in(v, n, 3), &bias) ||
                                  bias.cdata == NULL || bias.elems != dirs * 2 * gates * hidden)) {
        odnn_reason(reason, op, "B must be a constant of [num_directions, %lld]",
                    (long long)(2 * gates * hidden));
        return 0;
    }
    if (gates == 4 && odnn_in(v, n, 7) >= 0 &&
        (!odnn_tensor(v, odnn_in(v, n, 7), &p) || p.cdata == NULL ||
         p.elems != dirs * 3 * hidden)) {
        odnn_reason(reason, op, "P must be a constant of [num_directions, %lld]",
                    (long long)(3 * hidden));
        return 0;
    }
    if (!odnn_rnn_full_lengths(v, odnn_in(v, n, 4), seq, batch)) {
        odnn_reason(reason, op, "sequence_lens: oneDNN runs every row the whole sequence "
                                "(taken only as a constant of all %lld)", (long long)seq);
        return 0;
    }
    int64_t state_dims[3] = {layout ? batch : dirs, layout ? dirs : batch, hidden};
    int64_t y_dims[4] = {layout ? batch : seq, layout ? seq : dirs, layout ? dirs : batch, hidden};
    for (size_t k = 0; k < g->node_output_count(v, n); k++) {
        struct odnn_tinfo o;
        if (odnn_out(v, n, k) >= 0 && k < 3 && (!odnn_tensor(v, odnn_out(v, n, k), &o) ||
                                                o.ndim != (k == 0 ? 4 : 3) ||
                                                memcmp(o.dims, k == 0 ? y_dims : state_dims,
                                                       (size_t)o.ndim * sizeof(int64_t)) != 0)) {
            odnn_reason(reason, op, "output %zu has another shape than X, W and R give", k);
            return 0;
        }
    }
    for (size_t k = 5; k < (gates == 4 ? 7u : 6u); k++) {
        struct odnn_tinfo s;
        if (odnn_in(v, n, k) >= 0 &&
            (!odnn_tensor(v, odnn_in(v, n, k), &s) || s.ndim != 3 ||
             memcmp(s.dims, state_dims, sizeof state_dims) != 0)) {
            odnn_reason(reason, op, "initial_%c is not [%lld,%lld,%lld]", k == 5 ? 'h' : 'c',
                        (long long)state_dims[0], (long long)state_dims[1],
                        (long long)state_dims[2]);
            return 0;
        }
    }
    return 1;
}

/* ---- 8-bit quantized operators (QLinearConv, QuantizeLinear, DequantizeLinear)
 *
 * ONNX Runtime's QOperator models carry u8/i8 activations between
 * QLinearConvs; oneDNN runs those as int8 convolutions (u8 or s8 source,
 * s8 weights, s32 bias, per-tensor or per-channel output scales, source
 * and destination zero points) on its VNNI and AMX kernels, in
 * channels-last layouts. QuantizeLinear and DequantizeLinear outside a
 * QDQ pair (odnn_match_qdq) convert at the edges of such a chain; MaxPool
 * and views move the 8-bit values as they are (odnn_q8_mover).
 *
 * Only where the ISA multiplies u8 by s8 exactly: without VNNI oneDNN's
 * int8 kernels pair products in saturating 16-bit sums (vpmaddubsw), which
 * 255 * 127 * 2 overflows; there the cpu module keeps them. */
static int odnn_int8_isa(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
        v = (isa & (unsigned)dnnl_cpu_isa_avx512_core_vnni) ==
                (unsigned)dnnl_cpu_isa_avx512_core_vnni ||
            (isa & (unsigned)dnnl_cpu_isa_avx2_vnni) == (unsigned)dnnl_cpu_isa_avx2_vnni;
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* A QLinearConv's constants, read once for the check and the emission. */
struct odnn_qconv {
    int64_t x, w, bias, y;
    float xs, ys;
    const float *ws;  /* 1 or M values */
    int64_t n_ws;
    int32_t xz, yz;
    int64_t group;
    struct odnn_window win;
};

/* Whether T is absent (zero) or a constant whose every value is zero (a
 * weight zero point, one per output channel or one). */
static int odnn_all_zero(const pl_graph_view *v, int64_t t)
{
    struct odnn_tinfo ti;
    if (t < 0)
        return 1;
    if (!odnn_tensor(v, t, &ti) || ti.cdata == NULL || !ti.q8)
        return 0;
    for (size_t i = 0; i < ti.cbytes; i++)
        if (((const unsigned char *)ti.cdata)[i] != 0)
            return 0;
    return 1;
}

/* An 8-bit zero point of type DT (absent: 0): 1 with *OUT set. */
static int odnn_zero_point(const pl_graph_view *v, int64_t t, dnnl_data_type_t dt, int32_t *out)
{
    int sgn;
    if (!odnn_q8_scalar(v, t, out, &sgn))
        return 0;
    return t < 0 || (sgn ? dnnl_s8 : dnnl_u8) == dt;
}

static int odnn_positive_scale(const pl_graph_view *v, int64_t t, float *out)
{
    return odnn_scalar(v, t, out) && *out > 0.0f && isfinite(*out);
}

static int odnn_qconv_of(const pl_graph_view *v, size_t n, struct odnn_qconv *q, char *reason)
{
    const char *op = "QLinearConv";
    const pl_graph_api *g = onednn_host->graph;
    if (!odnn_int8_isa()) {
        odnn_reason(reason, op, "this CPU has no VNNI: oneDNN's int8 kernels would saturate "
                                "16-bit sums");
        return 0;
    }
    struct odnn_tinfo x, wt, y, ws, b;
    memset(q, 0, sizeof *q);
    q->x = odnn_in(v, n, 0);
    q->w = odnn_in(v, n, 3);
    q->y = odnn_out(v, n, 0);
    q->bias = odnn_in(v, n, 8);
    if (!odnn_tensor(v, q->x, &x) || !x.known || !x.q8 || x.cdata != NULL ||
        !odnn_tensor(v, q->y, &y) || !y.known || !y.q8 || (x.ndim != 3 && x.ndim != 4) ||
        x.elems == 0 || y.elems == 0) {
        odnn_reason(reason, op, "only u8/i8 activations of a known 3-D or 4-D shape");
        return 0;
    }
    if (!odnn_tensor(v, q->w, &wt) || wt.cdata == NULL || wt.ndim != x.ndim ||
        wt.dt != dnnl_s8) {
        odnn_reason(reason, op, "the weights must be a constant of i8 (oneDNN has no u8 "
                                "weights)");
        return 0;
    }
    if (!odnn_all_zero(v, odnn_in(v, n, 5))) {
        odnn_reason(reason, op, "a weight zero point other than 0 (oneDNN takes none)");
        return 0;
    }
    if (!odnn_positive_scale(v, odnn_in(v, n, 1), &q->xs) ||
        !odnn_positive_scale(v, odnn_in(v, n, 6), &q->ys) ||
        !odnn_zero_point(v, odnn_in(v, n, 2), x.dt, &q->xz) ||
        !odnn_zero_point(v, odnn_in(v, n, 7), y.dt, &q->yz)) {
        odnn_reason(reason, op, "input and output scales and zero points must be constant "
                                "scalars");
        return 0;
    }
    if (!odnn_tensor(v, odnn_in(v, n, 4), &ws) || !ws.f32 || ws.cdata == NULL ||
        (ws.elems != 1 && ws.elems != wt.dims[0]) || ws.cbytes != (size_t)ws.elems * 4) {
        odnn_reason(reason, op, "the weight scale must be a constant of 1 or M f32 values");
        return 0;
    }
    q->ws = ws.cdata;
    q->n_ws = ws.elems;
    for (int64_t i = 0; i < q->n_ws; i++)
        if (!(q->ws[i] > 0.0f) || !isfinite(q->ws[i])) {
            odnn_reason(reason, op, "a weight scale is not positive and finite");
            return 0;
        }
    if (q->bias >= 0 && (!odnn_tensor(v, q->bias, &b) || b.cdata == NULL ||
                         b.elems != wt.dims[0] || b.cbytes != (size_t)b.elems * 4)) {
        odnn_reason(reason, op, "the bias must be a constant of M i32 values");
        return 0;
    }
    q->group = odnn_attr_int(v, n, "group", 1);
    if (q->group < 1 || x.dims[1] % q->group != 0 || wt.dims[0] % q->group != 0 ||
        wt.dims[1] * q->group != x.dims[1] || y.dims[1] != wt.dims[0]) {
        odnn_reason(reason, op, "group %lld does not fit the channels", (long long)q->group);
        return 0;
    }
    const int64_t *ks;
    size_t nk = odnn_attr_ints(v, n, "kernel_shape", &ks);
    for (size_t i = 0; i < nk; i++)
        if (nk != (size_t)wt.ndim - 2 || ks[i] != wt.dims[2 + i]) {
            odnn_reason(reason, op, "kernel_shape does not match the weights");
            return 0;
        }
    (void)g;
    return odnn_window(v, n, op, &x, &wt.dims[2], &y, &q->win, reason);
}

static int odnn_check_qconv(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_qconv q;
    return odnn_qconv_of(v, n, &q, reason);
}

/* A QuantizeLinear or DequantizeLinear on its own (not a QDQ pair): one
 * scale and zero point, f32 on one side and u8/i8 on the other. */
struct odnn_quant {
    int64_t x, y;
    float s;
    int32_t zp;
};

static int odnn_quant_of(const pl_graph_view *v, size_t n, const char *op,
                         struct odnn_quant *p, char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    int quantize = op[0] == 'Q';
    struct odnn_tinfo x, y;
    p->x = odnn_in(v, n, 0);
    p->y = odnn_out(v, n, 0);
    if (!odnn_int8_isa()) {
        odnn_reason(reason, op, "8-bit activations stay on cpu without VNNI");
        return 0;
    }
    if (!odnn_tensor(v, p->x, &x) || !x.known || x.cdata != NULL || x.elems == 0 ||
        !odnn_tensor(v, p->y, &y) || !y.known || x.ndim < 1 ||
        !(quantize ? x.f32 && y.q8 : x.q8 && y.f32)) {
        odnn_reason(reason, op, "only f32 %s u8/i8 of a known shape", quantize ? "to" : "from");
        return 0;
    }
    if (g->node_input_count(v, n) < 2 || !odnn_positive_scale(v, odnn_in(v, n, 1), &p->s) ||
        !odnn_zero_point(v, odnn_in(v, n, 2), quantize ? y.dt : x.dt, &p->zp)) {
        odnn_reason(reason, op, "the scale and zero point must be constant scalars");
        return 0;
    }
    return 1;
}

/* ---- dynamic int8 products (quantize_dynamic) --------------------------------
 *
 * onnxruntime.quantization.quantize_dynamic, the usual CPU recipe for
 * BERT-like models, writes every product with constant weights as
 * DynamicQuantizeLinear(x) -> MatMulInteger(x_q, W_q, x_zp) -> Cast to f32
 * -> Mul(x_scale * w_scale) -> Add(bias). The quantizer is the module's
 * own kernel (odnn_dql_run); the product is a oneDNN int8 matmul with the
 * source zero point read at run time, and the Cast, the Mul by the scales
 * (a binary post-op reading the scalar or per-column tensor at run time),
 * the bias and what odnn_follow takes after it are its post-ops. oneDNN
 * 2.6 runs a matmul with run-time output scales only on its gemm:jit
 * kernel (a C harness, 2 threads, 128x256x1024: 280 us) and one with
 * constant scales, a run-time zero point and binary post-ops on its AMX
 * brgemm (52 us; the cpu module's VNNI igemm: 190 us), hence the scales
 * as a post-op. */
struct odnn_qmm {
    int64_t a, w, azp, y;  /* A (u8/i8), W (constant i8 [K, N]), A's zero point or -1, Y (i32) */
    int azp_const;         /* the zero point is absent or a constant: AZP_VAL */
    int32_t azp_val;
    int64_t rows, k, n;    /* A's rows (its leading dims merged), K, N */
};

static int odnn_qmm_of(const pl_graph_view *v, size_t n, struct odnn_qmm *q, char *reason)
{
    const char *op = "MatMulInteger";
    const pl_graph_api *g = onednn_host->graph;
    if (!odnn_int8_isa()) {
        odnn_reason(reason, op, "this CPU has no VNNI: oneDNN's int8 kernels would saturate "
                                "16-bit sums");
        return 0;
    }
    struct odnn_tinfo a, w, y, z;
    memset(q, 0, sizeof *q);
    q->a = odnn_in(v, n, 0);
    q->w = odnn_in(v, n, 1);
    q->y = odnn_out(v, n, 0);
    q->azp = g->node_input_count(v, n) > 2 ? odnn_in(v, n, 2) : -1;
    if (!odnn_tensor(v, q->a, &a) || !a.known || !a.q8 || a.cdata != NULL || a.ndim < 2 ||
        a.elems == 0 || !odnn_tensor(v, q->y, &y) || !y.known || y.dt != dnnl_s32 ||
        y.ndim != a.ndim) {
        odnn_reason(reason, op, "only u8/i8 activations of a known shape of rank >= 2 and an "
                                "i32 result of that rank");
        return 0;
    }
    if (!odnn_tensor(v, q->w, &w) || w.cdata == NULL || w.ndim != 2 || w.dt != dnnl_s8 ||
        w.dims[0] != a.dims[a.ndim - 1] || w.dims[1] < 1 || w.cbytes != (size_t)w.elems) {
        odnn_reason(reason, op, "B must be a constant i8 matrix [K, N] (oneDNN has no u8 "
                                "weights)");
        return 0;
    }
    if (!odnn_all_zero(v, g->node_input_count(v, n) > 3 ? odnn_in(v, n, 3) : -1)) {
        odnn_reason(reason, op, "a B zero point other than 0 (oneDNN takes none)");
        return 0;
    }
    for (int d = 0; d < a.ndim; d++)
        if (y.dims[d] != (d == a.ndim - 1 ? w.dims[1] : a.dims[d])) {
            odnn_reason(reason, op, "the result's dims do not match A's and B's");
            return 0;
        }
    q->azp_const = 1;
    if (q->azp >= 0 && odnn_tensor(v, q->azp, &z) && z.cdata != NULL) {
        if (!odnn_zero_point(v, q->azp, a.dt, &q->azp_val)) {
            odnn_reason(reason, op, "A's zero point must be one value of A's type");
            return 0;
        }
    } else if (q->azp >= 0) {
        if (!odnn_tensor(v, q->azp, &z) || !z.known || z.elems != 1 || z.dt != a.dt) {
            odnn_reason(reason, op, "A's zero point must be one value of A's type (per-row "
                                    "zero points are left to cpu)");
            return 0;
        }
        q->azp_const = 0;
    }
    q->k = w.dims[0];
    q->n = w.dims[1];
    q->rows = a.elems / q->k;
    return 1;
}

/* DynamicQuantizeLinear: f32 of a known shape in, u8 out (odnn_dql_run). */
static int odnn_check_dql(const pl_graph_view *v, size_t n, char *reason)
{
    const char *op = "DynamicQuantizeLinear";
    struct odnn_tinfo x, y;
    if (!odnn_int8_isa()) {
        odnn_reason(reason, op, "8-bit activations stay on cpu without VNNI");
        return 0;
    }
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !x.known || !x.f32 || x.cdata != NULL ||
        x.elems == 0 || !odnn_tensor(v, odnn_out(v, n, 0), &y) || !y.known ||
        y.dt != dnnl_u8 || y.elems != x.elems) {
        odnn_reason(reason, op, "only f32 to u8 of a known shape");
        return 0;
    }
    for (size_t k = 1; k < 3; k++) {
        struct odnn_tinfo o;
        if (odnn_out(v, n, k) >= 0 &&
            (!odnn_tensor(v, odnn_out(v, n, k), &o) || !o.known || o.elems != 1 ||
             o.dt != (k == 1 ? dnnl_f32 : dnnl_u8))) {
            odnn_reason(reason, op, "the scale and zero point must be one f32 and one u8");
            return 0;
        }
    }
    return 1;
}

/* Cast of a MatMulInteger's i32 result to f32 (a post-op of the product, or
 * a reorder of it alone). */
static int odnn_check_cast(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                           char *reason)
{
    struct odnn_tinfo x, y;
    int64_t t = odnn_in(v, n, 0);
    int64_t w = u != NULL && t >= 0 && (size_t)t < u->n_tensors ? (int64_t)u->producer[t] - 1
                                                                 : -1;
    if (!odnn_tensor(v, t, &x) || !x.known || x.dt != dnnl_s32 || x.cdata != NULL ||
        !odnn_tensor(v, odnn_out(v, n, 0), &y) || !y.known || !y.f32 || x.elems == 0 ||
        w < 0 || !odnn_op_is(v, w, "MatMulInteger")) {
        odnn_reason(reason, "Cast", "only a MatMulInteger's i32 result to f32");
        return 0;
    }
    return 1;
}

/* Where(cond, x, y) as the module's own select (odnn_where_run): a bool
 * condition (a constant, or an input of the subgraph: nothing in it makes
 * bools) and f32 values, each broadcasting to the f32 output. GPT-2's
 * causal mask and DeBERTa's and DistilBERT's attention masks are Wheres
 * between the layers' products: on cpu each one cut the subgraph. */
static int odnn_check_where(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo t[3], y;
    if (onednn_host->graph->node_input_count(v, n) != 3 ||
        !odnn_tensor(v, odnn_out(v, n, 0), &y) || !y.known || !y.f32 || y.ndim < 1) {
        odnn_reason(reason, "Where", "the output must be f32 of known shape");
        return 0;
    }
    for (int k = 0; k < 3; k++) {
        if (!odnn_tensor(v, odnn_in(v, n, (size_t)k), &t[k]) || !t[k].known ||
            (k == 0 ? !t[k].boolean : !t[k].f32)) {
            odnn_reason(reason, "Where", "only a bool condition and f32 values of known shape");
            return 0;
        }
        if (t[k].ndim > y.ndim) {
            odnn_reason(reason, "Where", "an input has higher rank than the output");
            return 0;
        }
        for (int d = 0; d < t[k].ndim; d++) {
            int64_t xd = t[k].dims[d], yd = y.dims[d + (y.ndim - t[k].ndim)];
            if (xd != yd && xd != 1) {
                odnn_reason(reason, "Where", "an input does not broadcast to the output");
                return 0;
            }
        }
    }
    return 1;
}

/* com.microsoft QLinearAdd and QLinearMul of two 8-bit values of the
 * output's shape (no broadcast), scales and zero points one-value
 * constants: the module's own step in ONNX Runtime's arithmetic
 * (onednn_qlinear.c). Their constants into *OUT when it is not NULL. */
static int odnn_check_qbin(const pl_graph_view *v, size_t n, const char *op, pl_qlinear *out,
                           char *reason)
{
    struct odnn_tinfo a, b, y;
    int ok = odnn_tensor(v, odnn_in(v, n, 0), &a) && odnn_tensor(v, odnn_in(v, n, 3), &b) &&
             odnn_tensor(v, odnn_out(v, n, 0), &y) && a.known && b.known && a.q8 &&
             a.dt == b.dt && y.dt == a.dt && a.cdata == NULL && b.cdata == NULL &&
             a.ndim == y.ndim && b.ndim == y.ndim;
    for (int d = 0; ok && d < y.ndim; d++)
        ok = a.dims[d] == y.dims[d] && b.dims[d] == y.dims[d];
    float sc[3] = {0};
    int32_t zp[3] = {0};
    for (int k = 0; ok && k < 3; k++) {
        struct odnn_tinfo t;
        size_t is = k < 2 ? (size_t)(1 + 3 * k) : 6; /* A's scale 1, B's 4, C's 6 */
        int64_t ts = odnn_in(v, n, is), tz = odnn_in(v, n, is + 1);
        ok = ts >= 0 && odnn_tensor(v, ts, &t) && t.f32 && t.cdata != NULL &&
             t.cbytes == sizeof(float);
        if (ok)
            memcpy(&sc[k], t.cdata, sizeof(float));
        if (ok && tz >= 0) {
            ok = odnn_tensor(v, tz, &t) && t.dt == a.dt && t.cdata != NULL && t.cbytes == 1;
            if (ok)
                zp[k] = a.dt == dnnl_s8 ? (int32_t) * (const int8_t *)t.cdata
                                        : (int32_t) * (const uint8_t *)t.cdata;
        }
    }
    ok = ok && sc[2] != 0.0f && isfinite(sc[0]) && isfinite(sc[1]) && isfinite(sc[2]);
    if (!ok) {
        odnn_reason(reason, op, "two 8-bit inputs of the output's shape, scales and zero points "
                                "one-value constants");
        return 0;
    }
    if (out != NULL)
        *out = pl_qlinear_make(strcmp(op, "QLinearMul") == 0, a.dt == dnnl_s8, sc[0], zp[0],
                               sc[1], zp[1], sc[2], zp[2]);
    return 1;
}

/* ai.plinth TableLookup8 (the optimiser's table of an 8-bit elementwise
 * chain): the module's own byte lookup (odnn_lut_run) on X's value in its
 * layout, the table a constant of 256 bytes. */
static int odnn_check_lut(const pl_graph_view *v, size_t n, char *reason)
{
    struct odnn_tinfo x, t;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !x.known || !x.q8 ||
        !odnn_tensor(v, odnn_in(v, n, 1), &t) || t.cdata == NULL || t.cbytes != 256 || !t.q8) {
        odnn_reason(reason, "TableLookup8", "an 8-bit X of known shape and a constant table "
                                            "of 256 bytes");
        return 0;
    }
    return 1;
}

/* PRelu of X by a constant slope of one value per channel (axis 1 of X,
 * rank 2 or more; right-aligned, every other dim of the slope 1): TFLite's
 * and InsightFace's [1, C, 1, 1], a Linear's [C]. Its C values are in
 * *SLOPE. A slope of one value is a leaky ReLU (odnn_eltwise_seq). */
static int odnn_prelu_of(const pl_graph_view *v, size_t n, const float **slope)
{
    struct odnn_tinfo x, w;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !x.known || x.ndim < 2 ||
        !odnn_tensor(v, odnn_in(v, n, 1), &w) || !w.known || !w.f32 || w.cdata == NULL ||
        w.ndim > x.ndim || w.elems != x.dims[1])
        return 0;
    for (int32_t i = 1; i <= w.ndim; i++)
        if (w.dims[w.ndim - i] != (x.ndim - i == 1 ? x.dims[1] : 1))
            return 0;
    *slope = w.cdata;
    return 1;
}

static int odnn_check_prelu(const pl_graph_view *v, size_t n, char *reason)
{
    const float *slope;
    float one;
    if (odnn_scalar(v, odnn_in(v, n, 1), &one) || odnn_prelu_of(v, n, &slope))
        return 1;
    odnn_reason(reason, "PRelu", "the slope is not a constant of one value or one per channel");
    return 0;
}

static int odnn_check_node(const pl_graph_view *v, const struct odnn_uses *u, size_t n,
                           char *reason)
{
    const pl_graph_api *g = onednn_host->graph;
    const char *op = g->node_op(v, n);
    if (strcmp(g->node_domain(v, n), "ai.plinth") == 0 && strcmp(op, "TableLookup8") == 0)
        return odnn_check_lut(v, n, reason);
    if (strcmp(g->node_domain(v, n), "com.microsoft") == 0 &&
        (strcmp(op, "QLinearAdd") == 0 || strcmp(op, "QLinearMul") == 0))
        return odnn_check_qbin(v, n, op, NULL, reason);
    if (g->node_domain(v, n)[0] != '\0') {
        odnn_reason(reason, op, "domain '%s' is not ONNX's", g->node_domain(v, n));
        return 0;
    }
    /* A node of a LayerNorm pattern taken whole (over the channels,
     * Keras's form, or an RMSNorm): the pattern is one step, whatever its nodes are
     * alone (ReduceMeans and channel broadcasts as reference kernels, a
     * Reciprocal oneDNN has no primitive for) */
    if (u != NULL && u->ln_channel != NULL && u->ln_channel[n])
        return odnn_all_f32_known(v, n, op, reason);
    struct odnn_qdq qp;
    if (u != NULL && odnn_qdq_of(v, u, n, &qp))
        return 1;
    if (strcmp(op, "QLinearConv") == 0)
        return odnn_check_qconv(v, n, reason);
    if (strcmp(op, "QuantizeLinear") == 0 || strcmp(op, "DequantizeLinear") == 0) {
        struct odnn_quant p;
        return odnn_quant_of(v, n, op, &p, reason);
    }
    if (strcmp(op, "MatMulInteger") == 0) {
        struct odnn_qmm q;
        return odnn_qmm_of(v, n, &q, reason);
    }
    if (strcmp(op, "DynamicQuantizeLinear") == 0)
        return odnn_check_dql(v, n, reason);
    if (strcmp(op, "Cast") == 0)
        return odnn_check_cast(v, u, n, reason);
    if (strcmp(op, "Where") == 0)
        return odnn_check_where(v, n, reason);
    if (strcmp(op, "IsNaN") == 0) {
        int64_t w, x;
        float fill;
        if (odnn_nan_fill_of(v, u, n, &w, &x, &fill))
            return 1;
        odnn_reason(reason, op, "only as Where(IsNaN(x), a constant, x) on f32 of known shape");
        return 0;
    }
    static const char *const ops[] = {
        "Conv", "ConvTranspose", "MatMul", "Gemm", "MaxPool", "AveragePool", "GlobalAveragePool",
        "GlobalMaxPool",
        "BatchNormalization", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Exp", "Sqrt",
        "Abs", "Pow", "Erf", "Log", "Round", "Softplus", "HardSwish", "HardSigmoid", "Neg",
        "Elu", "Selu", "Add", "Sub", "Mul", "Div", "Max", "Min", "Softmax", "LogSoftmax",
        "LayerNormalization", "Concat", "Reshape", "Flatten", "Transpose", "Identity",
        "Squeeze", "Unsqueeze", "ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "Split",
        "Slice", "Gather", "Resize", "Upsample", "RNN", "GRU", "LSTM", "InstanceNormalization",
        "Expand", "Tile", "Pad", "LRN", "PRelu"};
    size_t i = 0;
    while (i < sizeof ops / sizeof ops[0] && strcmp(ops[i], op) != 0)
        i++;
    if (i == sizeof ops / sizeof ops[0]) {
        odnn_reason(reason, op, "no oneDNN primitive for this op");
        return 0;
    }
    if (!odnn_all_f32_known(v, n, op, reason))
        return 0;
    if (strcmp(op, "PRelu") == 0)
        return odnn_check_prelu(v, n, reason);
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int binary = odnn_is_binary(op);
    if (x.cdata != NULL && strcmp(op, "Concat") != 0 && !binary) {
        odnn_reason(reason, op, "the data input is a constant (left to constant folding)");
        return 0;
    }
    if (strcmp(op, "Split") == 0)
        return odnn_check_split(v, n, reason);
    if (strcmp(op, "Slice") == 0)
        return odnn_check_slice(v, n, reason);
    if (strcmp(op, "Gather") == 0) {
        int64_t axis, index;
        return odnn_gather_one(v, n, &axis, &index, reason);
    }
    if (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0) {
        struct odnn_resize r;
        return (u->own && odnn_resize_own_modes(v, n, op, &r, reason)) ||
               odnn_resample_alg(v, n, op, reason) != dnnl_alg_kind_undef;
    }
    if (odnn_rnn_gates(op) != 0) /* Y, Y_h and Y_c */
        return odnn_check_rnn(v, n, op, reason);
    if (g->node_output_count(v, n) > 1) {
        for (size_t k = 1; k < g->node_output_count(v, n); k++)
            if (g->node_output(v, n, k) >= 0) {
                odnn_reason(reason, op, "only the first output is supported");
                return 0;
            }
    }
    struct odnn_elt seq[ODNN_MAX_ELT];
    if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0)
        return odnn_check_conv(v, u, n, op[4] == 'T', reason);
    if (strcmp(op, "MaxPool") == 0 || strcmp(op, "AveragePool") == 0 ||
        strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0)
        return odnn_check_pool(v, n, op, reason);
    if (strcmp(op, "MatMul") == 0)
        return odnn_check_matmul(v, n, reason);
    if (strcmp(op, "Gemm") == 0)
        return odnn_check_gemm(v, n, reason);
    if (binary) {
        if (!odnn_check_binary(v, n, op, reason))
            return 0;
        /* Any other broadcast oneDNN's jit binary has no kernel for, in
         * the row-major layout (a [1, H, W, C] / [1, H, W, 1] division of
         * a LayerNorm over the last axis that folding split from its
         * pattern: ref:any, 0.45 ms for 6144 values), unless the node is
         * part of a LayerNorm the module computes whole. */
        struct odnn_tinfo a, b;
        odnn_tensor(v, odnn_in(v, n, 0), &a);
        odnn_tensor(v, odnn_in(v, n, 1), &b);
        const struct odnn_tinfo *bc = a.elems == y.elems && a.ndim == y.ndim ? &b : &a;
        struct odnn_lnpat ln;
        if (odnn_probe_binary_ref(&y, bc) && !(u != NULL && odnn_lnorm_of(v, u, n, &ln)) &&
            (odnn_bop_of(op) < 0 || y.ndim > ODNN_MAX_RANK || !a.known || !b.known)) {
            odnn_reason(reason, op, "this broadcast runs on oneDNN's reference implementation");
            return 0;
        }
        return 1;
    }
    if (strcmp(op, "Expand") == 0) {
        /* the module's own broadcast copy (odnn_expand_run) */
        if (y.ndim < x.ndim || y.ndim < 1) {
            odnn_reason(reason, op, "the output has lower rank than the input");
            return 0;
        }
        for (int d = 0; d < x.ndim; d++) {
            int64_t xd = x.dims[d], yd = y.dims[d + (y.ndim - x.ndim)];
            if (xd != yd && xd != 1) {
                odnn_reason(reason, op, "the input does not broadcast to the output");
                return 0;
            }
        }
        return 1;
    }
    if (strcmp(op, "Pad") == 0) {
        /* the module's own copy (odnn_pad_run) */
        int64_t begin[ODNN_MAX_RANK];
        float fill;
        return odnn_pad_params(v, n, &x, begin, &fill, reason);
    }
    if (strcmp(op, "Tile") == 0) {
        /* a broadcast copy (odnn_tile_dims) */
        int64_t r[ODNN_MAX_RANK], xd[ODNN_MAX_RANK], yd[ODNN_MAX_RANK];
        if (!odnn_tile_repeats(v, n, &x, r)) {
            odnn_reason(reason, op, "repeats must be a constant of positive counts");
            return 0;
        }
        if (odnn_tile_dims(&x, r, xd, yd) == 0) {
            odnn_reason(reason, op, "the copy needs more than %d dims", ODNN_MAX_RANK);
            return 0;
        }
        return 1;
    }
    if (strcmp(op, "InstanceNormalization") == 0) {
        /* the module's own kernel (odnn_inorm_run): oneDNN 2.6 has none */
        if (x.ndim < 3 || x.dims[1] < 1) {
            odnn_reason(reason, op, "input of rank < 3");
            return 0;
        }
        for (size_t k = 1; k < 3; k++) {
            struct odnn_tinfo p;
            if (!odnn_tensor(v, odnn_in(v, n, k), &p) || p.cdata == NULL ||
                p.elems != x.dims[1] || p.cbytes != (size_t)p.elems * sizeof(float)) {
                odnn_reason(reason, op, "scale and bias must be constants of C values");
                return 0;
            }
        }
        return 1;
    }
    /* Erf: in a GELU pattern oneDNN's gelu_erf, alone the module's own
     * kernel (odnn_erf_run; oneDNN 2.6 has no erf eltwise) */
    if (strcmp(op, "Erf") == 0)
        return 1;
    if (strcmp(op, "Softplus") == 0) {
        /* the same log near 1: softplus(-10) came out 4.48e-5 (4.54e-5),
         * softplus(-20) -1.9e-6 (2.1e-9): Mish, x * tanh(softplus(x)), was
         * 1.3% off where x < -8 */
        odnn_reason(reason, op, "oneDNN 2.6's soft_relu is off by up to ~2e-6 absolute for "
                                "negative inputs (softplus(-20) = -1.9e-6); left to cpu");
        return 0;
    }
    if (strcmp(op, "Log") == 0) {
        /* 1.4e-6 where ONNX's conformance test wants log(1) = 0 within 1e-7 */
        odnn_reason(reason, op, "oneDNN 2.6's log is off by up to ~1.5e-6 absolute near 1 "
                                "(log(1) = -1.43e-6); left to cpu");
        return 0;
    }
    if (odnn_eltwise_seq(v, n, seq, reason) > 0)
        return 1;
    if (reason[0] != '\0')
        return 0;
    if (strcmp(op, "BatchNormalization") == 0) {
        if (odnn_attr_int(v, n, "training_mode", 0) != 0) {
            odnn_reason(reason, op, "training_mode is not supported (inference only)");
            return 0;
        }
        if (x.ndim < 2) {
            odnn_reason(reason, op, "input of rank < 2");
            return 0;
        }
        for (size_t k = 1; k < 5; k++) {
            struct odnn_tinfo p;
            if (!odnn_tensor(v, odnn_in(v, n, k), &p) || p.cdata == NULL ||
                p.elems != x.dims[1]) {
                odnn_reason(reason, op, "scale, bias, mean and var must be constants of C "
                                        "values");
                return 0;
            }
        }
        return 1;
    }
    if (strcmp(op, "LRN") == 0) {
        /* across channels, a window oneDNN centres as ONNX does (odd) */
        if (x.ndim < 3 || x.ndim > 5 || odnn_attr_int(v, n, "size", 0) % 2 != 1) {
            odnn_reason(reason, op, "a 3-D to 5-D source and an odd size are supported");
            return 0;
        }
        return 1;
    }
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0) {
        int64_t axis = odnn_attr_int(v, n, "axis", g->node_opset(v, n) >= 13 ? -1 : 1);
        if (axis < 0)
            axis += x.ndim;
        if (axis < 0 || axis >= x.ndim) {
            odnn_reason(reason, op, "axis out of range");
            return 0;
        }
        if (g->node_opset(v, n) < 13 && axis != x.ndim - 1) {
            odnn_reason(reason, op, "before opset 13 %s flattens from axis; only the last "
                                    "axis is supported", op);
            return 0;
        }
        if (op[0] == 'L' && axis != x.ndim - 1) {
            odnn_reason(reason, op, "axis %lld of %d: oneDNN's logsoftmax over an inner axis "
                                    "runs on its reference implementation",
                        (long long)axis, x.ndim);
            return 0;
        }
        return 1;
    }
    if (strcmp(op, "LayerNormalization") == 0) {
        int64_t axis = odnn_attr_int(v, n, "axis", -1);
        if (axis < 0)
            axis += x.ndim;
        if (axis != x.ndim - 1) {
            odnn_reason(reason, op, "axis %lld: oneDNN normalises over the last axis only",
                        (long long)odnn_attr_int(v, n, "axis", -1));
            return 0;
        }
        for (size_t k = 1; k < 3; k++) {
            struct odnn_tinfo p;
            if (odnn_in(v, n, k) < 0)
                continue;
            if (!odnn_tensor(v, odnn_in(v, n, k), &p) || p.cdata == NULL ||
                p.elems != x.dims[x.ndim - 1]) {
                odnn_reason(reason, op, "scale and bias must be constants of the last dim");
                return 0;
            }
        }
        return 1;
    }
    if (strcmp(op, "Concat") == 0) {
        if (g->node_input_count(v, n) > ODNN_MAX_CONCAT) {
            odnn_reason(reason, op, "more than %d inputs", ODNN_MAX_CONCAT);
            return 0;
        }
        return 1;
    }
    if (odnn_reduce_alg(op) != 0)
        return odnn_check_reduce(v, n, op, &x, &y, reason);
    if (strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0) {
        if (x.elems != y.elems) {
            odnn_reason(reason, op, "the output has %lld elements, the input %lld",
                        (long long)y.elems, (long long)x.elems);
            return 0;
        }
        return 1;
    }
    /* Reshape, Flatten, Transpose, Identity, Squeeze and Unsqueeze: views
     * of the input (odnn_relayout). */
    return 1;
}

pl_status *onednn_sg_supported(pl_module_ctx *ctx, const pl_graph_view *graph,
                               pl_support_sink sink, void *sink_ctx)
{
    const pl_graph_api *g = onednn_host->graph;
    struct odnn_uses u;
    pl_status *st = odnn_uses_build(ctx, graph, &u);
    if (st != NULL)
        return st;
    size_t n = g->node_count(graph);
    for (size_t i = 0; i < n; i++) {
        char reason[ODNN_REASON] = "";
        int ok = odnn_check_node(graph, &u, i, reason);
        sink(sink_ctx, i, ok, ok ? NULL : reason);
    }
    odnn_uses_free(ctx, &u);
    return NULL;
}

/* ---- the compiled subgraph ---------------------------------------------------- */

enum odnn_value_kind {
    ODNN_V_INPUT = 1,  /* bound to run's input[ext] */
    ODNN_V_OUTPUT = 2, /* bound to run's output[ext] */
    ODNN_V_TEMP = 3,   /* in the arena */
    ODNN_V_CONST = 4   /* in the weights */
};

struct odnn_value {
    int64_t tensor; /* graph tensor, -1 for a reordered copy */
    int kind;
    int ext;        /* input or output index for INPUT/OUTPUT; weight for CONST */
    int alt;        /* a copy of this value in another layout, or -1 */
    int defined;    /* already written by an emitted step */
    dnnl_memory_desc_t md;
    size_t bytes;
    int first, last; /* steps writing first and reading last */
    size_t offset;   /* in the arena (TEMP) */
    size_t view_off; /* an alias's first byte within its owner's bytes */
    /* A dense layout in permuted strides (a channel LayerNorm's NHWC
     * result): readers take it as it is, not through a plain copy. */
    int dense;
    /* A product's merged rows (odnn_matmul) or a convolution's result
     * at a lower rank (odnn_emit_fused_rank): the view its step writes
     * the tensor's value through; nothing reads it. */
    int merged;
    int boolean; /* u8 bytes that are a bool tensor's (a Where's condition) */
    dnnl_memory_t mem;
};

struct odnn_weight {
    dnnl_memory_desc_t md;
    size_t bytes;
    void *data; /* in the compiled object's weight block, or host_alloc; 64-byte aligned */
    int in_block;
    int borrowed; /* points into the imported blob, which the core keeps, or (2) into
                   * the core's constant (tensor_constant_keep), or (3) is the shared
                   * copy `shared` (onednn_share.c) */
    struct onednn_shared_weight *shared;
    dnnl_memory_t mem;
};

enum odnn_ref_kind { ODNN_REF_VALUE = 0, ODNN_REF_WEIGHT = 1, ODNN_REF_SCRATCH = 2 };

/* Step kinds, stored in the blob as the fusion plan. */
enum odnn_step_kind {
    ODNN_S_REORDER = 1, ODNN_S_CONV, ODNN_S_MATMUL, ODNN_S_POOL, ODNN_S_BNORM, ODNN_S_ELTWISE,
    ODNN_S_BINARY, ODNN_S_SOFTMAX, ODNN_S_LNORM, ODNN_S_CONCAT, ODNN_S_REDUCE, ODNN_S_DECONV,
    ODNN_S_RNN, ODNN_S_RESAMPLE, ODNN_S_DIRECT, ODNN_S_RMSNORM, ODNN_S_DQL, ODNN_S_ERF,
    ODNN_S_INORM, ODNN_S_EXPAND, ODNN_S_COPY, ODNN_S_PAD, ODNN_S_GELUT, ODNN_S_WHERE,
    ODNN_S_OPOOL, ODNN_S_ORESIZE, ODNN_S_TANH, ODNN_S_SMM, ODNN_S_LRN, ODNN_S_STRIDED,
    ODNN_S_SHUFFLE, ODNN_S_LUT, ODNN_S_QBIN, ODNN_S_UNBLOCK, ODNN_S_PGATHER, ODNN_S_PSCATTER,
    ODNN_S_ATTN, ODNN_S_NANFILL, ODNN_S_BBIN, ODNN_S_AFFINE
};

struct odnn_step {
    uint32_t kind;
    uint8_t esize; /* ODNN_S_EXPAND: bytes an element (4, or 1 for 8-bit values) */
    uint8_t relu;  /* ODNN_S_AFFINE: then max(0, y) */
    pl_qlinear qbin; /* ODNN_S_QBIN: the run's constants (plinth/qlinear.h) */
    int threads; /* the OpenMP team it was made for, and runs with */
    dnnl_primitive_t prim;
    /* Until odnn_make_primitives: the descriptor PRIM is made from (a
     * clone), and the node it computes, for the error message. */
    dnnl_primitive_desc_t pd;
    int64_t node;
    size_t scratch_bytes;
    int n_args;
    int arg[ODNN_MAX_ARGS];        /* DNNL_ARG_* */
    uint8_t ref_kind[ODNN_MAX_ARGS];
    int ref[ODNN_MAX_ARGS];
    dnnl_exec_arg_t exec[ODNN_MAX_ARGS + 1];
    dnnl_memory_t scratch_mem;
    struct odnn_direct *direct; /* ODNN_S_DIRECT: the module's own kernel (no primitive) */
    struct odnn_pool pool;      /* ODNN_S_OPOOL: the module's own pooling */
    struct odnn_resize *resize; /* ODNN_S_ORESIZE: the module's own Resize, its tables after it */
    struct odnn_smm *smm;       /* ODNN_S_SMM: the module's own small product */
    struct odnn_attn *attn;     /* ODNN_S_ATTN: the module's own fused attention */
    int64_t rows, cols;         /* ODNN_S_RMSNORM: the module's own kernel, [rows, cols];
                                   ODNN_S_DQL, ODNN_S_ERF: ROWS values;
                                   ODNN_S_BBIN: COLS the op (enum odnn_bop);
                                   ODNN_S_COPY: ROWS bytes;
                                   ODNN_S_STRIDED: ROWS bytes a value */
    float eps;
    int64_t chans; /* ODNN_S_INORM, ODNN_S_AFFINE: ROWS planes of COLS values, channel =
                      row % CHANS;
                      ODNN_S_SHUFFLE: ROWS images of CHANS channels of COLS values,
                      XD[0] channels a block (1: row-major, -1: channels last),
                      XD[1] groups;
                      ODNN_S_UNBLOCK: the same from XD[0] channels a block to
                      channels last, ED[0] and ED[1] the destination's
                      values an image and a pixel, XD[1] bytes a value */
    int nd;        /* ODNN_S_EXPAND, ODNN_S_PAD: X's dims (right-aligned) and Y's;
                      ODNN_S_BBIN: XD the first source's, ED the second's, YD Y's;
                      ODNN_S_STRIDED: XD the dims, CD the source's strides and ED the
                      destination's, in values */
    int64_t xd[ODNN_MAX_RANK], yd[ODNN_MAX_RANK];
    int64_t cd[ODNN_MAX_RANK], ed[ODNN_MAX_RANK]; /* ODNN_S_WHERE: the condition's dims and
                                                     the else-value's (X the then-value's) */
    int64_t begin[ODNN_MAX_RANK]; /* ODNN_S_PAD: where X starts in Y; the rest is FILL */
    float fill;
    struct odnn_phase phase; /* ODNN_S_PGATHER, ODNN_S_PSCATTER (onednn_phase.c) */
    /* A Winograd convolution over a batch in slices (odnn_wino_slices):
     * PRIM takes SLICE images at a time, PRIM_TAIL the last TAIL (0: none)
     * of BATCH; the source and destination move by their bytes per image
     * (SLICE_STRIDE) through memories of a slice's descriptors
     * (SLICE_MEM[main or tail][source or destination]). SLICE 0: whole. */
    int64_t slice, tail, batch;
    dnnl_primitive_desc_t pd_tail;
    dnnl_primitive_t prim_tail;
    dnnl_memory_t slice_mem[2][2];
    dnnl_memory_t scratch_tail;
    size_t slice_stride[2];
    /* PRIM's implementation made again for one thread (odnn_solo_make),
     * for runs under contention (onednn_pace.h); NULL: runs on the team. */
    dnnl_primitive_t solo;
    dnnl_memory_t solo_scratch;
};

struct pl_compiled {
    uint64_t view_hash;
    bool hashed;       /* view_hash was computed (odnn_hash_wanted) */
    uint32_t options;  /* ODNN_OPT_*: the settings the plan was made under */
    int n_values, cap_values;
    struct odnn_value *values;
    int n_steps, cap_steps;
    struct odnn_step *steps;
    int n_bf16; /* steps whose weights are bf16 (precision = bf16), for the log */
    int n_weights, cap_weights;
    struct odnn_weight *weights;
    size_t n_inputs, n_outputs;
    int *input_value;  /* value of the view's input(i) */
    int *output_value; /* value written into the view's output(i) */
    size_t arena_bytes, scratch_bytes;
    /* Into the run buffer the values are bound to (odnn_work_bind): NULL
     * before the first run. The scratchpad starts at scratch_off. */
    void *arena, *scratch;
    size_t scratch_off;
    void *weight_block;       /* weights' bytes, one huge-page mapping (odnn_block_reserve) */
    size_t weight_block_len;  /* mapped */
    /* The block's holds, once a shared copy lies in it (odnn_block_hold):
     * the copy keeps it mapped past this subgraph. */
    struct onednn_block *block_ref;
    _Atomic size_t weight_block_used;
    /* The thread that faults the block's pages in ahead of the weights
     * (odnn_block_prefault) while this one compiles. */
    pthread_t prefault;
    int prefaulting;
    atomic_int prefault_stop;
    size_t prefault_len;
    dnnl_stream_t stream;
    double weight_reorder_ms;
    /* Team or one thread (onednn_pace.h); the solo primitives are made at
     * the first solo run (SOLO_MADE 1: some made, -1: none can be). */
    struct odnn_pace pace;
    int solo_made;
    int n_team;       /* steps made for the team */
    int team_counted; /* N_TEAM is set */
    /* Node times (onednn_sg_times, ABI 1.17): a timed run gives each
     * step's time to the view node the step computes. The arrays are made
     * at the first START and kept until release. */
    pl_node_times times;
};

/* The settings a plan depends on, recorded in blobs. */
#define ODNN_OPT_WINOGRAD 1u
#define ODNN_OPT_BF16 2u
#define ODNN_OPT_DIRECT 4u
#define ODNN_OPT_WINOGRAD_ALL 8u

static uint32_t odnn_options(const pl_module_ctx *ctx)
{
    return (ctx->winograd ? ODNN_OPT_WINOGRAD : 0u) |
           (ctx->winograd == 2 ? ODNN_OPT_WINOGRAD_ALL : 0u) | (ctx->bf16 ? ODNN_OPT_BF16 : 0u) |
           (ctx->direct ? ODNN_OPT_DIRECT : 0u);
}

/* The data type convolutions and matrix products with constant weights
 * compute in: bf16 with precision = bf16, else f32. Sources and weights
 * are bf16; a convolution's result stays bf16 (pooling and post-op sums
 * take it as it is), a product's only when the next convolution or product
 * reads it (odnn_bf16_readers); bias, normalisations, softmax and the
 * graph's outputs stay f32.
 *
 * Which primitives: bf16 halves the bytes a primitive moves but costs a
 * conversion wherever an f32 op meets it. With AVX512-BF16 alone (no AMX)
 * that paid only in dense convolutions with a kernel wider than 1x1
 * (DENSE_SPATIAL). Measured with bench/zoo.py at 2 threads on
 * avx512_core_bf16, bf16 everywhere over f32: vgg11_s 0.57, yolo_s 0.60,
 * resnet50_s 0.70, unet_s 0.72, but transformer_padmask 1.38,
 * convnext_s_op17 1.29, vit_s_op17 1.24, mobilenet_v3_s 1.20,
 * efficientnet_s 1.17, whose products, 1x1 and depthwise convolutions
 * are small. With AMX every product takes it (its brgemm kernels use the
 * tiles), and a convolution where oneDNN has an AMX kernel for it
 * (odnn_conv_bf16_pays). */
static int odnn_bf16_everywhere(void)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) ==
           (unsigned)dnnl_cpu_isa_avx512_core_amx;
}

static dnnl_data_type_t odnn_compute_dt(const struct pl_module_ctx *ctx, int pays)
{
    return ctx->bf16 && pays ? dnnl_bf16 : dnnl_f32;
}

/* Whether a convolution with constant weights computes in bf16 (precision
 * = bf16). With AMX: where oneDNN 2.6 serves it with its brgemm AMX kernel
 * (brgconv, in nhwc, which odnn_conv_blocked then leaves oneDNN to pick)
 * and both channel counts fill a tile. In the channel-blocked layout the
 * module asks for in f32, oneDNN gives bf16 its jit_bf16 (AVX512-BF16)
 * kernels, which lost to f32 on a Xeon with AMX (2 threads, `plinth
 * bench`): squeezenet_s 1.57x, vgg11_s 1.48, unet_s 1.38, resnet18 at
 * 224x224 2.35; with brgconv resnet18 ran at 0.40x f32 (6.2 ms against
 * 16.4), mobilenet_v2 0.95; its older AMX kernel ("jit:avx512_core_amx",
 * which took deeplab_s's dilated 8x8 layers) lost, and so did layers of
 * 8 or 16 channels (squeezenet_s's fire modules), and so did 1-D
 * convolutions (oneDNN's primitives, ONEDNN_VERBOSE, 2 threads: wav2vec2's
 * 64 -> 64, width 3 stride 2 over 3199 steps 0.49 ms in bf16 against 0.22
 * in f32; its primitives 2.03 -> 1.67 ms with its 1-D layers in f32,
 * wav2vec_fe 0.37 -> 0.26, tf_audio_cnn 0.22 -> 0.19, whisper_enc 1.16 ->
 * 1.11). Without AMX: dense convolutions with a kernel wider than 1x1, as
 * measured on the AVX512-BF16 machine above. */
/* Channels in (per group) and out below which an AMX tile, 32 bf16 deep,
 * is mostly padding: such convolutions stay f32. */
#define ODNN_AMX_MIN_CHANNELS 32
/* Multiply-adds per value read and written below which a convolution stays
 * f32 on AMX: what AMX saves is in proportion to the multiply-adds, what
 * the conversions of its source and result to and from bf16 cost (where
 * its neighbours stay f32) to the values. Mobile nets' 1x1 layers of 24 to
 * 192 channels (20-30 per value, between depthwise layers that stay f32)
 * cost more in reorders than they saved: tv_mobilenet_v3_l (52 reorders a
 * run, 0.49 ms against 0.17 in f32) ran at 1.03-1.09x its f32 time under
 * bf16, tf_mobilenet_v2 1.17x, tf_xception 1.17x; with the bound (64)
 * 0.95x, 0.90x, 0.94x, while resnet18 at 64x64 keeps 0.45x, yolo_s 0.58x,
 * tv_resnext50 0.67x (alternating, 2 threads, 5 rounds; resnet50_s
 * 0.82x -> 0.89x and googlenet 0.80x -> 0.84x gave some of their gain). */
#define ODNN_BF16_MIN_MACS_PER_VALUE 64.0
/* ... and without AMX (jit_bf16: twice f32's rate, where AMX gives more):
 * tv_shufflenet_v2's and tv_mobilenet_v2's stems (3 channels in, 18
 * multiply-adds per value) made precision = bf16 3-5% slower than f32,
 * their only bf16 layers (2 threads, `plinth bench`, alternating). */
#define ODNN_BF16_MIN_MACS_PER_VALUE_NO_AMX 32.0

static int odnn_conv_bf16_pays(const struct pl_module_ctx *ctx, const struct odnn_tinfo *x,
                               const struct odnn_tinfo *wt, const struct odnn_tinfo *y,
                               int64_t group, const struct odnn_window *w, int spatial)
{
    if (!ctx->bf16)
        return 0;
    if (!odnn_bf16_everywhere()) {
        if (group != 1 || !spatial)
            return 0;
        /* a stem reading 3 planes (3 -> 24, 3x3, stride 2: 18 multiply-adds
         * per value it converts) saves less than its conversions cost */
        double macs = (double)y->elems * (double)wt->dims[1];
        for (int d = 2; d < wt->ndim; d++)
            macs *= (double)wt->dims[d];
        return macs >= ODNN_BF16_MIN_MACS_PER_VALUE_NO_AMX * (double)(x->elems + y->elems);
    }
    if (wt->dims[0] < ODNN_AMX_MIN_CHANNELS || wt->dims[1] < ODNN_AMX_MIN_CHANNELS)
        return 0;
    if (x->ndim == 3)
        return 0; /* 1-D: see above */
    /* too little work for the values it converts: see above */
    double macs = (double)y->elems * (double)wt->dims[1];
    for (int d = 2; d < wt->ndim; d++)
        macs *= (double)wt->dims[d];
    if (macs < ODNN_BF16_MIN_MACS_PER_VALUE * (double)(x->elems + y->elems))
        return 0;
    char impl[128] = "";
    return odnn_probe_conv_impl(x, wt, y, group, w, dnnl_bf16, impl, sizeof impl) &&
           strstr(impl, "brg") != NULL && strstr(impl, "amx") != NULL;
}

/* What compile reads weights from when it imports: the blob's weights, in
 * the order compile asks for them. */
struct odnn_import {
    const unsigned char *weights; /* at the first weight record */
    const unsigned char *end;
    uint32_t n_weights, next;
    const uint32_t *kinds; /* unaligned: read with memcpy */
    uint32_t n_steps;
    const unsigned char *base; /* the blob: weight bytes start 64-aligned from it */
    int keep;                  /* the core keeps the blob: weights read in place */
};

/* Zero bytes before the weight bytes that would start at offset POS of a
 * blob, so that they start at a multiple of 64. */
static size_t odnn_weight_pad(size_t pos)
{
    return (64 - pos % 64) % 64;
}

/* Most (de)convolution weights a compile remembers to share (odnn_build's
 * shared). */
#define ODNN_SHARED_WEIGHTS 256

struct odnn_build {
    pl_module_ctx *ctx;
    const pl_graph_view *v;
    pl_compiled *c;
    struct odnn_uses u;
    uint8_t *done; /* per node: already emitted as part of a fused primitive;
                      2: waits for its fused attention (odnn_attn_begin) */
    /* Fused attentions matched at their first product, emitted at their
     * second (odnn_attn_emit). */
    struct odnn_attn_pat *attn;
    int n_attn, cap_attn;
    struct odnn_import *imp;
    int no_qdq_post; /* odnn_follow leaves QDQ pairs to their own step */
    int conv_any;    /* odnn_conv_layout: -1 not yet decided */
    /* (De)convolution weights laid out so far, by the graph constant they
     * came from: layers applied to several inputs with one set of weights
     * (RetinaNet's and FCOS's heads, once per pyramid level) share one
     * reordered copy when they want the same layout (RetinaNet with
     * `winograd = no`: peak RSS 474 -> 372 MiB; oneDNN's Winograd layout
     * differs per level, so those are not shared). */
    struct {
        const void *data; /* the graph constant's bytes */
        int64_t dims[DNNL_MAX_NDIMS];
        int ndims;
        int weight;
    } shared[ODNN_SHARED_WEIGHTS];
    int n_shared;
    /* Weight reorders left for later (odnn_weight while DEFER_TENSOR, the
     * graph constant's tensor, is >= 0: Conv weights in Winograd layout),
     * run several at once over the runtime's threads (odnn_pending_flush):
     * oneDNN's Winograd layout was a slow C++ reorder, 15-30 ms per
     * 256x256 layer one at a time (the module's own, odnn_wino_weights,
     * is TIMING). The core is told a pending weight's constant is done (tensor_constant_done) only once it is laid out
     * (POSTPONED), and a batch is flushed at ODNN_PENDING_BYTES of those
     * constants, so a big model's weights are not all held twice
     * (RetinaNet with AVX-512: session 0.68-0.84 -> 0.47 s, peak RSS +15
     * to 22 MiB). */
    int64_t defer_tensor;
    /* The slices the next convolution step runs in (odnn_wino_slices):
     * taken by odnn_add_step; PD NULL when none. */
    struct {
        int64_t slice, tail;
        dnnl_primitive_desc_t pd, pd_tail;
    } wslice;
    /* Set while odnn_conv keeps its post-ops out of a Winograd probe:
     * odnn_conv_winograd and odnn_wino_scale_ok then log nothing. */
    int wino_quiet;
    struct odnn_pending {
        const void *data;
        dnnl_memory_desc_t src_md;
        int weight;
        int64_t node, tensor;
        int want_share;  /* becomes the shared copy once laid out (onednn_share.c) */
        uint64_t digest; /* of the source bytes, with want_share (2: its address) */
    } *pending;
    int n_pending, cap_pending;
    size_t pending_bytes;
    int64_t *postponed;
    int n_postponed, cap_postponed;
    /* Per tensor: its convolutions stay direct, their Winograd copy being
     * beyond the weight budget (odnn_wino_budget); NULL when none is. */
    uint8_t *wino_over;
    /* Per node, with precision = bf16: 0 not asked yet, 1 computes as
     * bf16 allows, 2 Winograd F(4x4) in f32 beats it (odnn_wino_beats_bf16). */
    uint8_t *wino_bf16;
    /* Winograd descriptors made ahead of the build, several at once
     * (odnn_wino_prefetch), and what odnn_wino_pd answered since. */
    struct odnn_wino_pre *wpre;
    int n_wpre;
    /* Set while odnn_wino_prefetch guesses at node GUESS_NODE: a tensor is
     * defined when a node before it or the subgraph's caller writes it. */
    int guessing;
    size_t guess_node;
};

#define ODNN_PENDING_BYTES ((size_t)32 << 20)

/* Whether tensor T is written by a DequantizeLinear (alone or as a QDQ
 * pair's second node): 8-bit values of a QDQ graph, which convolutions and
 * products read in f32 whatever the precision (odnn_conv). */
static int odnn_dequantized(const struct odnn_build *b, int64_t t)
{
    int64_t w = t >= 0 && (size_t)t < b->u.n_tensors ? (int64_t)b->u.producer[t] - 1 : -1;
    return w >= 0 && odnn_op_is(b->v, w, "DequantizeLinear");
}

static void odnn_free(pl_module_ctx *ctx, void *p)
{
    onednn_host->host_free(ctx->host_ctx, p);
}

static pl_status *odnn_dnnl(dnnl_status_t st, const char *what, const pl_graph_view *v,
                            int64_t node)
{
    if (st == dnnl_success)
        return NULL;
    const char *name = node >= 0 ? onednn_host->graph->node_name(v, (size_t)node) : "";
    const char *op = node >= 0 ? onednn_host->graph->node_op(v, (size_t)node) : "subgraph";
    return odnn_error(st == dnnl_out_of_memory ? PL_CODE_OUT_OF_MEMORY
                      : st == dnnl_unimplemented ? PL_CODE_UNSUPPORTED
                                                 : PL_CODE_INTERNAL,
                      "onednn: %s: node '%s': %s failed: %s", op, name, what,
                      dnnl_status2str(st));
}

static void *odnn_grow(pl_module_ctx *ctx, void *old, int n, int *cap, size_t elem)
{
    if (n < *cap)
        return old;
    int ncap = *cap ? *cap * 2 : 16;
    void *p = onednn_host->host_alloc(ctx->host_ctx, (size_t)ncap * elem, 0);
    if (p == NULL)
        return NULL;
    memset(p, 0, (size_t)ncap * elem);
    if (n > 0)
        memcpy(p, old, (size_t)n * elem);
    odnn_free(ctx, old);
    *cap = ncap;
    return p;
}

static pl_status *odnn_oom(void)
{
    return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory compiling a subgraph");
}

/* A plain (row-major) descriptor of NDIM dims; rank 0 becomes [1]. */
static void odnn_plain_md(dnnl_memory_desc_t *md, int32_t ndim, const int64_t *dims)
{
    dnnl_dims_t d;
    int nd = ndim > 0 ? ndim : 1;
    for (int i = 0; i < nd; i++)
        d[i] = ndim > 0 ? dims[i] : 1;
    dnnl_memory_desc_init_by_strides(md, nd, d, dnnl_f32, NULL);
}

/* A new value of layout MD (which may point into the values themselves,
 * another value's layout: read before they grow). */
static int odnn_new_value(struct odnn_build *b, int64_t tensor, int kind,
                          const dnnl_memory_desc_t *md_in)
{
    const dnnl_memory_desc_t layout = *md_in, *md = &layout;
    pl_compiled *c = b->c;
    struct odnn_value *grown =
        odnn_grow(b->ctx, c->values, c->n_values, &c->cap_values, sizeof *c->values);
    if (grown == NULL)
        return -1;
    c->values = grown;
    struct odnn_value *val = &c->values[c->n_values];
    memset(val, 0, sizeof *val);
    val->tensor = tensor;
    val->kind = kind;
    val->ext = -1;
    val->alt = -1;
    val->md = *md;
    val->bytes = dnnl_memory_desc_get_size(md);
    val->first = -1;
    val->last = -1;
    return c->n_values++;
}

/* The value holding tensor T, or -1. */
static int odnn_value_of(struct odnn_build *b, int64_t t)
{
    for (int i = 0; i < b->c->n_values; i++)
        if (b->c->values[i].tensor == t && t >= 0)
            return i;
    return -1;
}

/* Appends a step for the primitive of PD; its arguments follow with
 * odnn_arg. Returns the step index or -1 (status in *out_st). */
/* A zeroed step of KIND for NODE at the end of the plan (not yet counted in
 * n_steps), or NULL when out of memory. */
static struct odnn_step *odnn_next_step(struct odnn_build *b, uint32_t kind, int64_t node)
{
    pl_compiled *c = b->c;
    struct odnn_step *grown =
        odnn_grow(b->ctx, c->steps, c->n_steps, &c->cap_steps, sizeof *c->steps);
    if (grown == NULL)
        return NULL;
    c->steps = grown;
    struct odnn_step *s = &c->steps[c->n_steps];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    return s;
}

/* Says that node NODE's step started the generation of oneDNN's GEMM
 * kernels (onednn_warm.c). */
static void odnn_warm_told(struct odnn_build *b, int64_t node)
{
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s' runs on oneDNN's JIT GEMM: its kernels are generated in "
                             "a thread of their own while the subgraph compiles",
                             node >= 0 ? onednn_host->graph->node_name(b->v, (size_t)node) : "?");
}

static int odnn_add_step(struct odnn_build *b, uint32_t kind, const_dnnl_primitive_desc_t pd,
                         int64_t node, pl_status **out_st)
{
    pl_compiled *c = b->c;
    struct odnn_step *s = odnn_next_step(b, kind, node);
    if (s == NULL) {
        *out_st = odnn_oom();
        return -1;
    }
    /* A convolution to run in slices gets the slice's descriptor (its
     * scratchpad the slice's); the values keep the whole batch's. */
    if (kind == ODNN_S_CONV && b->wslice.pd != NULL) {
        s->batch = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0)->dims[0];
        s->slice = b->wslice.slice;
        s->tail = b->wslice.tail;
        s->pd_tail = b->wslice.pd_tail;
        pd = b->wslice.pd;
        b->wslice.pd_tail = NULL;
    }
    /* The primitive itself (its JIT code: most of a compile) is made later,
     * for every step at once, on the thread pool (odnn_make_primitives). */
    dnnl_status_t ds = dnnl_primitive_desc_clone(&s->pd, pd);
    if (s->slice > 0) {
        dnnl_primitive_desc_destroy(b->wslice.pd);
        b->wslice.pd = NULL;
        pd = s->pd;
    }
    if (ds != dnnl_success) {
        *out_st = odnn_dnnl(ds, "dnnl_primitive_desc_clone", b->v, node);
        return -1;
    }
    /* The first step on gemm:jit (a product of two activations that is
     * not attention's fused step, an im2col convolution) starts the
     * generation of its kernels, which then overlaps the rest of the
     * build (onednn_warm.c). Not before: a subgraph that never runs
     * gemm:jit (every attention fused) would pay for it in its first
     * runs, the thread taking a core for 58 ms (2 threads, gpt_neo's
     * runs 1.0 ms then 1.5-6.5 while it ran). */
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        odnn_gemm_warm_impl(impl) && odnn_gemm_warm_start())
        odnn_warm_told(b, node);
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    c->n_bf16 += wmd != NULL && wmd->data_type == dnnl_bf16;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    s->scratch_bytes = smd != NULL ? dnnl_memory_desc_get_size(smd) : 0;
    if (s->scratch_bytes > c->scratch_bytes)
        c->scratch_bytes = s->scratch_bytes;
    const dnnl_memory_desc_t *tmd =
        s->pd_tail != NULL ? dnnl_primitive_desc_query_md(s->pd_tail, dnnl_query_scratchpad_md, 0)
                           : NULL;
    if (tmd != NULL && dnnl_memory_desc_get_size(tmd) > c->scratch_bytes)
        c->scratch_bytes = dnnl_memory_desc_get_size(tmd);
    if (s->scratch_bytes > 0) {
        ds = dnnl_memory_create(&s->scratch_mem, smd, b->ctx->engine, DNNL_MEMORY_NONE);
        if (ds != dnnl_success) {
            *out_st = odnn_dnnl(ds, "scratchpad memory", b->v, node);
            return -1;
        }
    }
    return c->n_steps++;
}

/* Appends a step that runs the module's own direct convolution D (owned by
 * the step from here on, also when this fails). */
static int odnn_add_direct(struct odnn_build *b, struct odnn_direct *d, int64_t node,
                           pl_status **out_st)
{
    struct odnn_step *s = odnn_next_step(b, ODNN_S_DIRECT, node);
    if (s == NULL) {
        odnn_direct_free(d, b->ctx);
        odnn_free(b->ctx, d);
        *out_st = odnn_oom();
        return -1;
    }
    s->direct = d;
    if (odnn_direct_scratch_bytes(d) > b->c->scratch_bytes) /* the shared scratchpad */
        b->c->scratch_bytes = odnn_direct_scratch_bytes(d);
    return b->c->n_steps++;
}

static void odnn_arg(struct odnn_build *b, int step, int arg, int ref_kind, int ref)
{
    struct odnn_step *s = &b->c->steps[step];
    if (s->n_args >= ODNN_MAX_ARGS)
        return; /* bounded by ODNN_MAX_CONCAT at check time */
    s->arg[s->n_args] = arg;
    s->ref_kind[s->n_args] = (uint8_t)ref_kind;
    s->ref[s->n_args] = ref;
    s->n_args++;
    if (ref_kind == ODNN_REF_VALUE)
        b->c->values[ref].defined |= arg == DNNL_ARG_DST;
}

/* An attribute with the user scratchpad and, when given, POST_OPS. */
static pl_status *odnn_attr(dnnl_primitive_attr_t *attr, const_dnnl_post_ops_t post_ops)
{
    *attr = NULL;
    if (dnnl_primitive_attr_create(attr) != dnnl_success)
        return odnn_oom();
    dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user);
    if (post_ops != NULL && dnnl_primitive_attr_set_post_ops(*attr, post_ops) != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
        return odnn_error(PL_CODE_INTERNAL, "onednn: cannot set post-ops");
    }
    return NULL;
}

/* Whether A and B hold the same elements at the same byte offsets with no
 * gap or padding: one memcpy copies one into the other. Strides of dims of
 * one element do not count (a channel slice of a concatenation's blocked
 * buffer has the whole buffer's batch stride). */
static int odnn_same_dense(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
    const dnnl_blocking_desc_t *x = &a->format_desc.blocking, *y = &b->format_desc.blocking;
    if (a->format_kind != dnnl_blocked || b->format_kind != dnnl_blocked || a->offset0 != 0 ||
        b->offset0 != 0 || a->ndims != b->ndims || a->data_type != b->data_type ||
        x->inner_nblks != y->inner_nblks || a->extra.flags != 0 || b->extra.flags != 0)
        return 0;
    size_t elems = 1;
    for (int d = 0; d < a->ndims; d++) {
        if (a->dims[d] != b->dims[d] || a->padded_dims[d] != a->dims[d] ||
            b->padded_dims[d] != b->dims[d] || a->padded_offsets[d] != 0 ||
            b->padded_offsets[d] != 0)
            return 0;
        if (a->dims[d] > 1 && x->strides[d] != y->strides[d])
            return 0;
        elems *= (size_t)a->dims[d];
    }
    for (int k = 0; k < x->inner_nblks; k++)
        if (x->inner_blks[k] != y->inner_blks[k] || x->inner_idxs[k] != y->inner_idxs[k])
            return 0;
    size_t bytes = elems * dnnl_data_type_size(a->data_type);
    return bytes > 0 && dnnl_memory_desc_get_size(a) == bytes &&
           dnnl_memory_desc_get_size(b) == bytes;
}

/* Whether A and B are the same dims in plain strided layouts (no inner
 * blocks, no offset, nothing padded) of one type of 1, 2, 4 or 8 bytes. */
static int odnn_plain_strided(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
    size_t es = dnnl_data_type_size(a->data_type);
    if (a->format_kind != dnnl_blocked || b->format_kind != dnnl_blocked ||
        a->format_desc.blocking.inner_nblks != 0 || b->format_desc.blocking.inner_nblks != 0 ||
        a->offset0 != 0 || b->offset0 != 0 || a->ndims != b->ndims || a->ndims < 1 ||
        a->ndims > ODNN_MAX_RANK || a->data_type != b->data_type ||
        (es != 1 && es != 2 && es != 4 && es != 8))
        return 0;
    for (int d = 0; d < a->ndims; d++)
        if (a->dims[d] != b->dims[d] || a->dims[d] <= 0 || a->padded_dims[d] != a->dims[d] ||
            b->padded_dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* A copy of value SRC into DST between plain strided layouts on the
 * module's own loop (ODNN_S_STRIDED). oneDNN 2.6 gives some of these (a
 * column of a [N, 4] box tensor into a dense vector) only its generic
 * reorder, simple:any, which computes every value's offset from its index:
 * 0.25 ms for 3234 values, 90 of them a run in torchvision's SSDlite box
 * decoding (23 of its 48 ms). */
static pl_status *odnn_strided_copy(struct odnn_build *b, int src, int dst, int64_t node)
{
    const dnnl_memory_desc_t *a = &b->c->values[src].md, *y = &b->c->values[dst].md;
    struct odnn_step *cs = odnn_next_step(b, ODNN_S_STRIDED, node);
    if (cs == NULL)
        return odnn_oom();
    cs->rows = (int64_t)dnnl_data_type_size(a->data_type);
    /* dims of 1 left out, and a dim merged into the one before it where
     * both sides step over it whole: a Slice of whole rows copies rows */
    cs->nd = 0;
    for (int d = 0; d < a->ndims; d++) {
        int64_t n = a->dims[d], xs = a->format_desc.blocking.strides[d];
        int64_t ys = y->format_desc.blocking.strides[d];
        if (n == 1 && a->ndims > 1)
            continue;
        int k = cs->nd - 1;
        if (k >= 0 && cs->cd[k] == xs * n && cs->ed[k] == ys * n) {
            cs->xd[k] *= n;
            cs->cd[k] = xs;
            cs->ed[k] = ys;
            continue;
        }
        cs->xd[cs->nd] = n;
        cs->cd[cs->nd] = xs;
        cs->ed[cs->nd++] = ys;
    }
    if (cs->nd == 0) { /* one value */
        cs->xd[0] = 1;
        cs->cd[0] = cs->ed[0] = 1;
        cs->nd = 1;
    }
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    int64_t t = b->c->values[src].tensor >= 0 ? b->c->values[src].tensor
                                              : b->c->values[dst].tensor;
    onednn_host->log_message(
        b->ctx->host_ctx, PL_LOG_DEBUG,
        "%s '%s': a strided copy on the module's own loop (oneDNN has only its generic "
        "reorder for it)",
        node >= 0 ? "node" : "tensor",
        node >= 0 ? onednn_host->graph->node_name(b->v, (size_t)node)
                  : t >= 0 ? onednn_host->graph->tensor_name(b->v, t) : "?");
    return NULL;
}

/* Copies the values of dims XD (ND of them) from X, strides XS, to Y,
 * strides YS (in values of ES bytes). */
static void odnn_strided_run(const char *x, char *y, int nd, const int64_t *xd,
                             const int64_t *xs, const int64_t *ys, int64_t es)
{
    int64_t idx[ODNN_MAX_RANK] = {0};
    int64_t n = xd[nd - 1], sx = xs[nd - 1] * es, sy = ys[nd - 1] * es;
    for (;;) {
        int64_t ox = 0, oy = 0;
        for (int d = 0; d < nd - 1; d++) {
            ox += idx[d] * xs[d];
            oy += idx[d] * ys[d];
        }
        const char *px = x + ox * es;
        char *py = y + oy * es;
        switch (sx == es && sy == es ? 0 : es) {
        case 0: /* a dense row on both sides */
            memcpy(py, px, (size_t)(n * es));
            break;
        case 4:
            for (int64_t i = 0; i < n; i++)
                memcpy(py + i * sy, px + i * sx, 4);
            break;
        case 8:
            for (int64_t i = 0; i < n; i++)
                memcpy(py + i * sy, px + i * sx, 8);
            break;
        case 2:
            for (int64_t i = 0; i < n; i++)
                memcpy(py + i * sy, px + i * sx, 2);
            break;
        default:
            for (int64_t i = 0; i < n; i++)
                py[i * sy] = px[i * sx];
        }
        int d = nd - 2;
        while (d >= 0 && ++idx[d] == xd[d])
            idx[d--] = 0;
        if (d < 0)
            return;
    }
}

/* ODNN_S_SHUFFLE: N images of C channels of SP values, BLK channels a
 * block (1: row-major; a partial last block is padded to BLK; -1: channels
 * last): output channel o = j * G + i is input channel i * C/G + j, each
 * channel's SP values BLK apart in both; a padded block's spare lanes are
 * written 0, as oneDNN's blocked layouts keep them. Channels (pixels,
 * channels last) spread over TEAM threads. */
static void odnn_shuffle_run(const float *x, float *y, int64_t n, int64_t c, int64_t sp,
                             int64_t blk, int64_t groups, int team)
{
    int64_t per = c / groups;
    if (blk < 0) {
        int64_t pixels = n * sp;
#pragma omp parallel for num_threads(team) schedule(static)
        for (int64_t p = 0; p < pixels; p++) {
            const float *px = x + p * c;
            float *py = y + p * c;
            for (int64_t i = 0; i < groups; i++)
                for (int64_t j = 0; j < per; j++)
                    py[j * groups + i] = px[i * per + j];
        }
        return;
    }
    int64_t cp = (c + blk - 1) / blk * blk;
    int64_t image = cp * sp, total = n * cp;
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t k = 0; k < total; k++) {
        int64_t img = k / cp, o = k % cp;
        float *py = y + img * image + o / blk * sp * blk + o % blk;
        if (o >= c) {
            for (int64_t i = 0; i < sp; i++)
                py[i * blk] = 0.0f;
            continue;
        }
        int64_t from = o % groups * per + o / groups;
        const float *px = x + img * image + from / blk * sp * blk + from % blk;
        if (blk == 1)
            memcpy(py, px, (size_t)sp * sizeof *py);
        else
            for (int64_t i = 0; i < sp; i++)
                py[i * blk] = px[i * blk];
    }
}

/* ODNN_S_UNBLOCK: N images of C channels of SP pixels, BLK channels a
 * block (a partial last block padded), to channels last: pixel p of image
 * i at Y + i * YN + p * YP values, its channels contiguous (a piece of a
 * wider channels-last tensor: a Concat's destination). ES bytes a value.
 * Pixels spread over TEAM threads; each copies a block's run of channels
 * at a time. */
static void odnn_unblock_run(const char *x, char *y, int64_t n, int64_t c, int64_t sp,
                             int64_t blk, int64_t yn, int64_t yp, int64_t es, int team)
{
    int64_t nb = (c + blk - 1) / blk, pixels = n * sp, last = c - (nb - 1) * blk;
    size_t run = (size_t)(blk * es);
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t q = 0; q < pixels; q++) {
        int64_t img = q / sp, p = q % sp;
        const char *px = x + ((img * nb * sp + p) * blk) * es;
        char *py = y + (img * yn + p * yp) * es;
        for (int64_t k = 0; k + 1 < nb; k++)
            memcpy(py + k * blk * es, px + k * sp * blk * es, run);
        memcpy(py + (nb - 1) * blk * es, px + (nb - 1) * sp * blk * es, (size_t)(last * es));
    }
}

/* Whether a reorder of SRC into DST is one ODNN_S_UNBLOCK does: SRC dense
 * in a channel blocking of 8 or 16 (aBcd16b...), DST channels last with
 * dense pixels, both without an offset, 2 or 4 bytes a value. oneDNN's
 * jit:uni reorder takes 1.8 ms for 24 channels of 160x224 into the
 * channels-last destination of a Concat (PP-OCRv5's detector stem), the
 * module's loop 0.3. Fills the step's fields. */
static int odnn_unblock_fits(const dnnl_memory_desc_t *x, const dnnl_memory_desc_t *y,
                             struct odnn_step *s)
{
    static const dnnl_format_tag_t b16[3] = {dnnl_aBc16b, dnnl_aBcd16b, dnnl_aBcde16b};
    static const dnnl_format_tag_t b8[3] = {dnnl_aBc8b, dnnl_aBcd8b, dnnl_aBcde8b};
    int nd = x->ndims;
    size_t es = dnnl_data_type_size(x->data_type);
    if (nd < 3 || nd > 5 || y->ndims != nd || x->data_type != y->data_type ||
        (es != 4 && es != 2) || x->format_kind != dnnl_blocked ||
        y->format_kind != dnnl_blocked || x->offset0 != 0 || y->offset0 != 0 ||
        y->format_desc.blocking.inner_nblks != 0 || y->format_desc.blocking.strides[1] != 1)
        return 0;
    for (int d = 0; d < nd; d++)
        if (x->dims[d] != y->dims[d] || x->padded_offsets[d] != 0 || y->padded_offsets[d] != 0 ||
            y->padded_dims[d] != y->dims[d])
            return 0;
    const dnnl_dims_t *ys = &y->format_desc.blocking.strides;
    for (int d = 2; d + 1 < nd; d++)
        if ((*ys)[d] != (*ys)[d + 1] * y->dims[d + 1])
            return 0;
    int64_t blk = 0;
    for (int k = 0; k < 2 && blk == 0; k++) {
        dnnl_memory_desc_t want;
        if (dnnl_memory_desc_init_by_tag(&want, nd, x->dims, x->data_type,
                                         k == 0 ? b16[nd - 3] : b8[nd - 3]) == dnnl_success &&
            dnnl_memory_desc_equal(&want, x))
            blk = k == 0 ? 16 : 8;
    }
    int64_t sp = 1, c = x->dims[1];
    for (int d = 2; d < nd; d++)
        sp *= x->dims[d];
    if (blk == 0 || (*ys)[nd - 1] < c || (x->dims[0] > 1 && (*ys)[0] < (*ys)[2] * y->dims[2]))
        return 0;
    s->rows = x->dims[0];
    s->chans = c;
    s->cols = sp;
    s->xd[0] = blk;
    s->xd[1] = (int64_t)es;
    s->ed[0] = (*ys)[0];
    s->ed[1] = (*ys)[nd - 1];
    return 1;
}

/* Emits a reorder of value SRC into value DST (both exist): a copy of the
 * bytes where both have one dense layout (odnn_same_dense: DenseNet's
 * concatenations copied 376 pieces a run through oneDNN's generic
 * "simple:any" reorder, about 2 us each for a few KB). */
static pl_status *odnn_reorder(struct odnn_build *b, int src, int dst, int64_t node)
{
    if (odnn_same_dense(&b->c->values[src].md, &b->c->values[dst].md)) {
        struct odnn_step *cs = odnn_next_step(b, ODNN_S_COPY, node);
        if (cs == NULL)
            return odnn_oom();
        cs->rows = (int64_t)dnnl_memory_desc_get_size(&b->c->values[src].md);
        int step = b->c->n_steps++;
        odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
        odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
        return NULL;
    }
    struct odnn_step probe;
    memset(&probe, 0, sizeof probe);
    if (odnn_unblock_fits(&b->c->values[src].md, &b->c->values[dst].md, &probe)) {
        struct odnn_step *us = odnn_next_step(b, ODNN_S_UNBLOCK, node);
        if (us == NULL)
            return odnn_oom();
        us->rows = probe.rows;
        us->chans = probe.chans;
        us->cols = probe.cols;
        memcpy(us->xd, probe.xd, sizeof us->xd);
        memcpy(us->ed, probe.ed, sizeof us->ed);
        int step = b->c->n_steps++;
        odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
        odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
        int64_t t = b->c->values[src].tensor;
        onednn_host->log_message(
            b->ctx->host_ctx, PL_LOG_DEBUG,
            "tensor '%s': %lld channels in blocks of %lld into channels last on the module's "
            "own loop",
            t >= 0 ? onednn_host->graph->tensor_name(b->v, t) : "?", (long long)us->chans,
            (long long)us->xd[0]);
        return NULL;
    }
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, NULL);
    if (st != NULL)
        return st;
    dnnl_primitive_desc_t pd;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(
        &pd, &b->c->values[src].md, b->ctx->engine, &b->c->values[dst].md, b->ctx->engine, attr);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success && node < 0) {
        /* a boundary copy: name the tensor, since no node asked for it */
        int64_t t = b->c->values[src].tensor >= 0 ? b->c->values[src].tensor
                                                  : b->c->values[dst].tensor;
        return odnn_error(PL_CODE_INTERNAL, "onednn: subgraph: reorder of tensor '%s' failed: %s",
                          t >= 0 ? onednn_host->graph->tensor_name(b->v, t) : "?",
                          dnnl_status2str(ds));
    }
    if (ds != dnnl_success)
        return odnn_dnnl(ds, "reorder", b->v, node);
    const char *impl = "";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (impl != NULL && strcmp(impl, "simple:any") == 0 &&
        odnn_plain_strided(&b->c->values[src].md, &b->c->values[dst].md)) {
        dnnl_primitive_desc_destroy(pd);
        return odnn_strided_copy(b, src, dst, node);
    }
    int s = odnn_add_step(b, ODNN_S_REORDER, pd, node, &st);
    dnnl_primitive_desc_destroy(pd);
    if (s < 0)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* Lays the bytes DATA of layout SRC_MD out into DST (of layout MD) with a
 * one-off reorder primitive on the calling thread's OpenMP team. */
static dnnl_status_t odnn_reorder_into(dnnl_engine_t engine, const dnnl_memory_desc_t *src_md,
                                       const void *data, const dnnl_memory_desc_t *md,
                                       dnnl_memory_t dst)
{
    void *handle = NULL;
    dnnl_status_t ds = dnnl_memory_get_data_handle(dst, &handle);
    if (ds != dnnl_success)
        return ds;
    if (md->format_kind == dnnl_format_kind_wino && handle != NULL &&
        odnn_wino_weights(src_md, data, md, handle) == 0)
        return dnnl_success;
    if (md->extra.flags != 0 && handle != NULL &&
        odnn_zp_weights(engine, src_md, data, md, handle) == 0)
        return dnnl_success;
    return odnn_reorder_plain(engine, src_md, data, md, handle);
}

/* Adds a weight: the constant bytes DATA in layout SRC_MD, reordered into
 * layout MD — or, when importing, the blob's next weight, which must have
 * layout MD. Returns the weight index in *out. DATA NULL with SRC_MD
 * equal to MD: the caller writes the weight's bytes itself (packing
 * straight into it, without a second copy). */
static void *odnn_block_take(pl_compiled *c, size_t bytes);

/* Denormal weights become zeros of their sign, in the module's own copy.
 * Models trained with weight decay keep such values (paddle's PP-OCRv5
 * detector: 256k of its 2.3M weights, 63% of one 1x1 convolution's), and
 * every multiply by one takes a microcode assist: two 1x1 convolutions of
 * 82 MFLOP each took 30 and 13 ms of the model's 62 (ONNX Runtime's too,
 * 65 ms), 18 ms without them. A denormal weight adds less than 1.2e-38
 * times its input to a sum: nothing a float result keeps. Weights read in
 * place from a cache entry were flushed before they were stored. */
static void odnn_flush_denormals(const struct odnn_weight *w)
{
    /* Only plain and blocked layouts hold nothing but values: an RNN's
     * packed weights (dnnl_format_kind_rnn_packed) start with integers
     * that read as denormal floats. */
    if (w->borrowed || w->data == NULL || w->md.format_kind != dnnl_blocked)
        return;
    /* Sixteen bytes a step in the compiler's vectors, the exponent tested
     * with a signed compare (SSE2 has no unsigned one): 400 MB in 51 ms
     * against the scalar loop's 123 (which was 8.6% of VGG-19's session
     * creation); 32-byte vectors of unsigned lanes were slower than it. */
    typedef int32_t i32x4 __attribute__((vector_size(16)));
    typedef int16_t i16x8 __attribute__((vector_size(16)));
    size_t i = 0;
    if (w->md.data_type == dnnl_f32) {
        uint32_t *u = w->data;
        size_t n = w->bytes / 4;
        for (; i + 4 <= n; i += 4) {
            i32x4 v;
            memcpy(&v, u + i, sizeof v);
            v &= ((v & 0x7f800000) > 0) | INT32_MIN;
            memcpy(u + i, &v, sizeof v);
        }
        for (; i < n; i++)
            u[i] = (u[i] & 0x7f800000u) != 0 ? u[i] : (u[i] & 0x80000000u);
    } else if (w->md.data_type == dnnl_bf16) {
        uint16_t *u = w->data;
        size_t n = w->bytes / 2;
        for (; i + 8 <= n; i += 8) {
            i16x8 v;
            memcpy(&v, u + i, sizeof v);
            v &= ((v & 0x7f80) > 0) | INT16_MIN;
            memcpy(u + i, &v, sizeof v);
        }
        for (; i < n; i++)
            u[i] = (uint16_t)((u[i] & 0x7f80u) != 0 ? u[i] : (u[i] & 0x8000u));
    }
}

/* A new weight of layout MD in B's compiled object, zeroed but for its
 * layout and size (counted once the caller gives it its bytes); NULL when
 * out of memory. */
static struct odnn_weight *odnn_weight_slot(struct odnn_build *b, const dnnl_memory_desc_t *md)
{
    pl_compiled *c = b->c;
    struct odnn_weight *grown =
        odnn_grow(b->ctx, c->weights, c->n_weights, &c->cap_weights, sizeof *c->weights);
    if (grown == NULL)
        return NULL;
    c->weights = grown;
    struct odnn_weight *w = &c->weights[c->n_weights];
    memset(w, 0, sizeof *w);
    w->md = *md;
    w->bytes = dnnl_memory_desc_get_size(md);
    return w;
}

/* C's weight block as something shared copies can hold (made on first
 * use, holding it once for C), or NULL. */
static struct onednn_block *odnn_block_hold(pl_module_ctx *ctx, pl_compiled *c)
{
    if (c->block_ref == NULL && c->weight_block != NULL) {
        c->block_ref = onednn_host->host_alloc(ctx->host_ctx, sizeof *c->block_ref, 0);
        if (c->block_ref != NULL) {
            c->block_ref->base = c->weight_block;
            c->block_ref->len = c->weight_block_len;
            atomic_init(&c->block_ref->refs, 1);
        }
    }
    return c->block_ref;
}

/* W, laid out in memory of its own, or in C's block when shared by
 * address (WANT: onednn_share_find asked for it, 2 by address), becomes
 * the shared copy; it stays W's own when that fails. */
static void odnn_weight_make_shared(pl_module_ctx *ctx, pl_compiled *c, struct odnn_weight *w,
                                    int want, uint64_t digest, uint64_t salt,
                                    const dnnl_memory_desc_t *src_md)
{
    if (!want || w->borrowed || (w->in_block && want != 2))
        return;
    struct onednn_block *block = w->in_block ? odnn_block_hold(ctx, c) : NULL;
    if (w->in_block && block == NULL)
        return;
    w->shared = onednn_share_add(ctx, want, digest, salt, src_md, &w->md, w->data, block);
    if (w->shared != NULL)
        w->borrowed = 3;
}

/* How the module packs a weight itself (PACK(ARG, OUT) writes the packed
 * floats) and SALT, which tells that packing apart from others of the
 * same source (onednn_share_find). */
struct odnn_packer {
    void (*pack)(const void *arg, float *out);
    const void *arg;
    uint64_t salt;
};

static pl_status *odnn_weight_ex(struct odnn_build *b, const dnnl_memory_desc_t *md,
                                 const dnnl_memory_desc_t *src_md, const void *data,
                                 int64_t node, const struct odnn_packer *packer, int *out);

static pl_status *odnn_weight(struct odnn_build *b, const dnnl_memory_desc_t *md,
                              const dnnl_memory_desc_t *src_md, const void *data, int64_t node,
                              int *out)
{
    return odnn_weight_ex(b, md, src_md, data, node, NULL, out);
}

/* Weight *OUT laid out as MD from DATA in layout SRC_MD: a copy or a
 * reorder, or with PACKER the module's own packing of DATA; from the
 * imported blob on import, or a copy shared with other compiles. */
static pl_status *odnn_weight_ex(struct odnn_build *b, const dnnl_memory_desc_t *md,
                                 const dnnl_memory_desc_t *src_md, const void *data,
                                 int64_t node, const struct odnn_packer *packer, int *out)
{
    uint64_t salt = packer != NULL ? packer->salt : 0;
    pl_compiled *c = b->c;
    struct odnn_weight *w = odnn_weight_slot(b, md);
    if (w == NULL)
        return odnn_oom();
    const unsigned char *blob_bytes = NULL;
    if (b->imp != NULL) {
        struct odnn_import *imp = b->imp;
        size_t rec = sizeof(dnnl_memory_desc_t) + 8;
        if (imp->next >= imp->n_weights || (size_t)(imp->end - imp->weights) < rec)
            return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: the blob has fewer "
                                                    "weights than this subgraph needs");
        dnnl_memory_desc_t bmd;
        uint64_t bytes;
        memcpy(&bmd, imp->weights, sizeof bmd);
        memcpy(&bytes, imp->weights + sizeof bmd, 8);
        if (bmd.ndims != md->ndims || bytes != w->bytes || !dnnl_memory_desc_equal(&bmd, md))
            return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: weight %d of the blob has "
                                                    "another layout than oneDNN picks now",
                              c->n_weights);
        size_t pad = odnn_weight_pad((size_t)(imp->weights - imp->base) + rec);
        if ((size_t)(imp->end - imp->weights) - rec < pad ||
            (size_t)(imp->end - imp->weights) - rec - pad < bytes)
            return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: import: malformed blob (weight "
                                                        "%d is truncated)",
                              c->n_weights);
        blob_bytes = imp->weights + rec + pad;
        imp->weights += rec + pad + bytes;
        imp->next++;
        if (imp->keep && ((uintptr_t)blob_bytes & 63) == 0) {
            w->data = (void *)(uintptr_t)blob_bytes; /* read-only: never written */
            w->borrowed = 1;
        }
    }
    /* A weight laid out before from the same bytes the same way (another
     * shape's compile of a staged tail) is shared; one whose address came
     * back is laid out into memory of its own and becomes the shared copy. */
    int want_share = 0;
    uint64_t digest = 0;
    if (blob_bytes == NULL && data != NULL) {
        w->shared =
            onednn_share_find(b->ctx, b->v, node, data, src_md, md, salt, &want_share, &digest);
        if (w->shared != NULL) {
            w->data = onednn_share_data(w->shared);
            w->borrowed = 3;
            c->n_weights++;
            *out = c->n_weights - 1;
            return odnn_dnnl(dnnl_memory_create(&w->mem, md, b->ctx->engine, w->data),
                             "weight memory", b->v, node);
        }
    }
    /* (a copy shared by address may lie in the block, which it then holds:
     * the block's pages are faulted in ahead, odnn_prefault_main) */
    if (w->data == NULL && (!want_share || want_share == 2))
        w->data = odnn_block_take(c, w->bytes > 0 ? w->bytes : 1);
    w->in_block = w->data != NULL && !w->borrowed;
    if (w->data == NULL)
        w->data = onednn_host->host_alloc(b->ctx->host_ctx, w->bytes > 0 ? w->bytes : 1, 64);
    if (w->data == NULL)
        return odnn_oom();
    c->n_weights++;
    dnnl_status_t ds = dnnl_memory_create(&w->mem, md, b->ctx->engine, w->data);
    if (ds != dnnl_success)
        return odnn_dnnl(ds, "weight memory", b->v, node);
    *out = c->n_weights - 1;
    if (blob_bytes != NULL) {
        if (!w->borrowed)
            memcpy(w->data, blob_bytes, w->bytes);
        return NULL;
    }
    if (packer != NULL) {
        packer->pack(packer->arg, w->data);
        odnn_weight_make_shared(b->ctx, c, w, want_share, digest, salt, src_md);
        return NULL;
    }
    if (dnnl_memory_desc_equal(md, src_md)) {
        if (data != NULL) {
            memcpy(w->data, data, w->bytes);
            odnn_flush_denormals(w);
            odnn_weight_make_shared(b->ctx, c, w, want_share, digest, 0, src_md);
        }
        return NULL;
    }
    /* Conv and ConvTranspose weights are laid out in batches, several at
     * once (odnn_pending_flush); the rest now. */
    if (b->defer_tensor >= 0) {
        struct odnn_pending *grown =
            odnn_grow(b->ctx, b->pending, b->n_pending, &b->cap_pending, sizeof *b->pending);
        if (grown == NULL)
            return odnn_oom();
        b->pending = grown;
        b->pending[b->n_pending].data = data;
        b->pending[b->n_pending].src_md = *src_md;
        b->pending[b->n_pending].weight = *out;
        b->pending[b->n_pending].node = node;
        b->pending[b->n_pending].tensor = b->defer_tensor;
        b->pending[b->n_pending].want_share = want_share;
        b->pending[b->n_pending].digest = digest;
        b->n_pending++;
        b->pending_bytes += dnnl_memory_desc_get_size(src_md); /* held twice meanwhile */
        return NULL;
    }
    /* A one-off reorder, executed now: weights are laid out once. It runs
     * on one thread: an OpenMP team started here, on the compiling thread,
     * would keep its idle worker, and libgomp, counting that worker against
     * the CPUs, then has the team of the running thread sleep at once
     * instead of spinning between primitives (a wake-up for every one of
     * them; mobilenet_v2 at 2 threads on 2 CPUs took 1.5x as long). */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    ds = odnn_reorder_into(b->ctx->engine, src_md, data, md, w->mem);
    omp_set_num_threads(threads);
    if (ds == dnnl_success) {
        odnn_flush_denormals(w);
        odnn_weight_make_shared(b->ctx, c, w, want_share, digest, 0, src_md);
    }
    return odnn_dnnl(ds, "weight reorder", b->v, node);
}

/* Whether N floats at U hold a denormal. */
static int odnn_has_denormals(const uint32_t *u, size_t n)
{
    typedef int32_t i32x4 __attribute__((vector_size(16)));
    i32x4 any = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        i32x4 v;
        memcpy(&v, u + i, sizeof v);
        any |= ((v & 0x7f800000) == 0) & ((v & 0x007fffff) != 0);
    }
    int found = (any[0] | any[1] | any[2] | any[3]) != 0;
    for (; i < n && !found; i++)
        found = (u[i] & 0x7f800000u) == 0 && (u[i] & 0x007fffffu) != 0;
    return found;
}

/* Whether constant T (DATA, BYTES) holds a denormal float. A staged
 * session compiles its tail once per input shape, and each compile read
 * every weight it takes in place again to check: BERT-base over 40 new
 * sequence lengths spent 28% of its time there (perf), 72 weights of the
 * model a compile. The answer is remembered by the constant's content
 * digest (the core's, which it keeps), and read back. */
static int odnn_weight_denormals(struct odnn_build *b, int64_t t, const void *data, size_t bytes)
{
    const pl_graph_api *g = onednn_host->graph;
    /* a view whose constants compile again (a staged session's tails, ABI
     * 1.16): by address, from the first scan on, without a digest (GPT-2
     * base's second prompt length hashed its 350 MB read in place) */
    if (PL_ABI_HAS_FN(pl_graph_api, g, compile_repeated) && g->compile_repeated(b->v)) {
        int seen = onednn_share_denormals_at(b->ctx, data, bytes);
        if (seen >= 0)
            return seen;
        int found = odnn_has_denormals(data, bytes / 4);
        onednn_share_note_denormals_at(b->ctx, data, bytes, found);
        return found;
    }
    uint64_t digest = 0;
    size_t have = 0;
    /* by digest only when the address comes back: on first sight the
     * digest (GPT-2 base's 350 MB in place: a pass as long as the scan)
     * would only serve later compiles */
    int known = onednn_share_scan_again(b->ctx, data, bytes) &&
                PL_ABI_HAS_FN(pl_graph_api, g, tensor_digest) &&
                g->tensor_digest(b->v, t, &have, &digest) && have == bytes;
    int found = known ? onednn_share_denormals(b->ctx, digest, bytes) : -1;
    if (found >= 0)
        return found;
    found = odnn_has_denormals(data, bytes / 4);
    if (known)
        onednn_share_note_denormals(b->ctx, digest, bytes, found);
    return found;
}

/* Constant weights of at least this many bytes that a primitive takes as
 * the model stores them are read in place (odnn_weight_in_place). */
#define ODNN_IN_PLACE_MIN_BYTES ((size_t)256 << 10)

/* Constant T (DATA) as weight MD when the primitive takes it as stored
 * (MD equals SRC_MD): read where the core keeps it (ABI 1.10's
 * tensor_constant_keep), not copied, when it is big, holds no denormal
 * (the module's copies are flushed of them; odnn_flush_denormals) and the
 * core promises to keep it. VGG-19's fully connected layers on gemm:jit
 * (odnn_gemv_pd): 494 MB the module no longer copies at load, and no
 * longer holds beside the core's. Otherwise odnn_weight's copy. An import
 * reads the blob's bytes as before. */
static pl_status *odnn_weight_in_place(struct odnn_build *b, const dnnl_memory_desc_t *md,
                                       const dnnl_memory_desc_t *src_md, int64_t t,
                                       const void *data, int64_t node, int *out)
{
    const pl_graph_api *g = onednn_host->graph;
    size_t bytes = dnnl_memory_desc_get_size(md), have = 0;
    const void *at = NULL;
    if (b->imp != NULL || md->data_type != dnnl_f32 || bytes < ODNN_IN_PLACE_MIN_BYTES ||
        !dnnl_memory_desc_equal(md, src_md) || !PL_ABI_HAS_FN(pl_graph_api, g,
                                                               tensor_constant_keep) ||
        !g->tensor_constant(b->v, t, &at, &have) || at != data || have != bytes ||
        odnn_weight_denormals(b, t, data, bytes) || !g->tensor_constant_keep(b->v, t))
        return odnn_weight(b, md, src_md, data, node, out);
    pl_compiled *c = b->c;
    struct odnn_weight *w = odnn_weight_slot(b, md);
    if (w == NULL)
        return odnn_oom();
    w->data = (void *)(uintptr_t)data; /* read-only: never written */
    w->borrowed = 2;
    c->n_weights++;
    *out = c->n_weights - 1;
    return odnn_dnnl(dnnl_memory_create(&w->mem, md, b->ctx->engine, w->data), "weight memory",
                     b->v, node);
}

/* The value of constant tensor T as a plain weight (made on first use). */
static pl_status *odnn_const_value(struct odnn_build *b, int64_t t, int64_t node, int *out)
{
    int vi = odnn_value_of(b, t);
    if (vi >= 0) {
        *out = vi;
        return NULL;
    }
    struct odnn_tinfo ti;
    odnn_tensor(b->v, t, &ti);
    dnnl_memory_desc_t md;
    odnn_plain_md(&md, ti.ndim, ti.dims);
    if (ti.boolean)
        md.data_type = dnnl_u8;
    if (ti.cdata == NULL || ti.cbytes != dnnl_memory_desc_get_size(&md))
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: constant '%s' has %zu bytes, its "
                                                    "type says otherwise",
                          onednn_host->graph->tensor_name(b->v, t), ti.cbytes);
    int w;
    pl_status *st = odnn_weight(b, &md, &md, ti.cdata, node, &w);
    if (st != NULL)
        return st;
    vi = odnn_new_value(b, t, ODNN_V_CONST, &md);
    if (vi < 0)
        return odnn_oom();
    b->c->values[vi].ext = w;
    b->c->values[vi].defined = 1;
    *out = vi;
    return NULL;
}

/* The value that holds tensor T (an input, constant or earlier output). */
/* The value of tensor T as it is: possibly a strided view (see
 * odnn_relayout), for readers that take any plain strides (MatMul). */
static pl_status *odnn_source_view(struct odnn_build *b, int64_t t, int64_t node, int *out)
{
    int vi = odnn_value_of(b, t);
    if (vi >= 0 && b->c->values[vi].defined) {
        *out = vi;
        return NULL;
    }
    struct odnn_tinfo ti;
    if (odnn_tensor(b->v, t, &ti) && ti.cdata != NULL)
        return odnn_const_value(b, t, node, out);
    return odnn_error(PL_CODE_INTERNAL, "onednn: '%s' is read before it is written",
                      t >= 0 ? onednn_host->graph->tensor_name(b->v, t) : "(absent)");
}

/* Value VI in layout MD: itself, or a reordered copy (made once). */
static pl_status *odnn_ensure(struct odnn_build *b, int vi, const dnnl_memory_desc_t *md,
                              int64_t node, int *out)
{
    struct odnn_value *val = &b->c->values[vi];
    if (dnnl_memory_desc_equal(&val->md, md)) {
        *out = vi;
        return NULL;
    }
    if (val->alt >= 0 && dnnl_memory_desc_equal(&b->c->values[val->alt].md, md)) {
        *out = val->alt;
        return NULL;
    }
    int copy = odnn_new_value(b, -1, ODNN_V_TEMP, md);
    if (copy < 0)
        return odnn_oom();
    b->c->values[vi].alt = copy;
    *out = copy;
    return odnn_reorder(b, vi, copy, node);
}

/* Value VI in plain layout: f32 (bf16 converts), 8-bit values keep their
 * type. */
static pl_status *odnn_plain(struct odnn_build *b, int vi, int64_t node, int *out)
{
    struct odnn_value *val = &b->c->values[vi];
    dnnl_memory_desc_t md;
    odnn_plain_md(&md, val->md.ndims, val->md.dims);
    if (val->md.data_type == dnnl_u8 || val->md.data_type == dnnl_s8 ||
        val->md.data_type == dnnl_s32)
        md.data_type = val->md.data_type;
    return odnn_ensure(b, vi, &md, node, out);
}

/* The value whose bytes V uses: itself, or the value it is an alias of. */
static int odnn_owner(const pl_compiled *c, int vi)
{
    while (c->values[vi].kind <= -100)
        vi = -c->values[vi].kind - 100;
    return vi;
}

/* A dim of size 1 may have any stride; a view gives it the stride of a
 * dense layout, so that a view that is dense compares equal to the plain
 * descriptor. oneDNN 2.6's jit:uni binary read [1,4,1,2] with strides
 * [8,2,8,1] (a Transpose's view) against a broadcast second source as all
 * zeros; with [8,2,2,1] it is right. */
static void odnn_canon_strides(dnnl_memory_desc_t *md)
{
    if (md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0)
        for (int k = md->ndims - 1; k >= 0; k--)
            if (md->dims[k] == 1)
                md->format_desc.blocking.strides[k] =
                    k + 1 < md->ndims ? md->format_desc.blocking.strides[k + 1] * md->dims[k + 1]
                                      : 1;
}

/* A value for tensor T (or -1) that reads the bytes of value VI, starting
 * OFF bytes further in, through descriptor MD: an alias that owns no memory.
 * It points at VI's owner directly, so offsets add up. */
static int odnn_alias_as(struct odnn_build *b, int vi, const dnnl_memory_desc_t *md, int64_t t,
                         size_t off, int canon_strides)
{
    int own = odnn_owner(b->c, vi);
    size_t base = b->c->values[vi].view_off + off;
    dnnl_memory_desc_t canon = *md;
    if (canon_strides)
        odnn_canon_strides(&canon);
    int a = odnn_new_value(b, t, ODNN_V_TEMP, &canon);
    if (a < 0)
        return -1;
    struct odnn_value *val = &b->c->values[a];
    val->kind = -own - 100; /* an alias of OWN: see odnn_owner */
    val->view_off = base;
    val->defined = 1;
    return a;
}

static int odnn_alias(struct odnn_build *b, int vi, const dnnl_memory_desc_t *md, int64_t t,
                      size_t off)
{
    return odnn_alias_as(b, vi, md, t, off, 1);
}

/* Value VI read through descriptor MD of the same bytes (a rank-padded or
 * strided view of a plain value): an alias that owns no memory. VI is made
 * plain first. */
static pl_status *odnn_view_as(struct odnn_build *b, int vi, const dnnl_memory_desc_t *md,
                               int64_t node, int *out)
{
    pl_status *st = odnn_plain(b, vi, node, &vi);
    if (st != NULL)
        return st;
    if (dnnl_memory_desc_equal(&b->c->values[vi].md, md)) {
        *out = vi;
        return NULL;
    }
    int a = odnn_alias(b, vi, md, -1, 0);
    if (a < 0)
        return odnn_oom();
    *out = a;
    return NULL;
}

/* Plain layout (dims with strides, no blocking). */
static int odnn_is_plain(const dnnl_memory_desc_t *md)
{
    return md->format_kind == dnnl_blocked && md->format_desc.blocking.inner_nblks == 0 &&
           md->offset0 == 0;
}

/* Whether MD is the row-major layout of its dims (plain and not permuted:
 * abc, not the bac a Transpose's layout leaves). */
static int odnn_is_row_major(const dnnl_memory_desc_t *md)
{
    if (!odnn_is_plain(md) || md->data_type != dnnl_f32)
        return 0;
    dnnl_memory_desc_t rm;
    odnn_plain_md(&rm, md->ndims, md->dims);
    dnnl_memory_desc_t mc = *md;
    odnn_canon_strides(&mc);
    odnn_canon_strides(&rm);
    return dnnl_memory_desc_equal(&mc, &rm);
}

/* The value of tensor T for a reader that wants it in its writer's layout
 * (blocked or plain): a strided view left by a Reshape, Transpose or Split
 * is copied into a dense plain value first (once). */
static pl_status *odnn_source(struct odnn_build *b, int64_t t, int64_t node, int *out)
{
    pl_status *st = odnn_source_view(b, t, node, out);
    if (st == NULL && odnn_is_plain(&b->c->values[*out].md) && !b->c->values[*out].dense)
        st = odnn_plain(b, *out, node, out);
    return st;
}

/* The value of tensor T as dense plain values (the module's own kernels
 * read rows): a plain copy of a blocked or strided one, made once. */
static pl_status *odnn_dense_source(struct odnn_build *b, int64_t t, int64_t node, int *out)
{
    pl_status *st = odnn_source(b, t, node, out);
    if (st == NULL)
        st = odnn_plain(b, *out, node, out);
    return st;
}

static const dnnl_memory_desc_t *odnn_pd_md(const_dnnl_primitive_desc_t pd, int arg)
{
    return dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
}

/* The destination value for tensor T in the layout PD picked. A plain
 * layout in permuted strides without gaps (the channels-last that a binary
 * or eltwise keeps from a channels-last source) is dense: its readers take
 * it as it is (odnn_source). */
static int odnn_dst_value_md(struct odnn_build *b, int64_t t, const dnnl_memory_desc_t *md)
{
    int vi = odnn_new_value(b, t, ODNN_V_TEMP, md);
    if (vi >= 0 && odnn_is_plain(md)) {
        size_t elems = 1;
        for (int d = 0; d < md->ndims; d++)
            elems *= (size_t)md->dims[d];
        b->c->values[vi].dense = dnnl_memory_desc_get_size(md) ==
                                 elems * dnnl_data_type_size(md->data_type);
    }
    return vi;
}

static int odnn_dst_value(struct odnn_build *b, int64_t t, const_dnnl_primitive_desc_t pd)
{
    return odnn_dst_value_md(b, t, odnn_pd_md(pd, DNNL_ARG_DST));
}

/* ---- fusion ----------------------------------------------------------------- */

/* What a Conv/MatMul/Gemm swallowed. */
struct odnn_fuse {
    dnnl_post_ops_t po;
    int n_post;
    /* Only piecewise-linear eltwise post-ops (relu, clip, linear, hard
     * swish): the GEMM-based products below AVX-512 apply the
     * others slowly (a [128, 256] x [256, 1024] MatMul: 0.69 ms, with
     * gelu_erf 1.10, with logistic 0.94); a separate eltwise step is
     * cheaper (0.08). */
    int linear_only;
    int64_t bias;          /* constant tensor of a fused bias Add, or -1 */
    int64_t residual;      /* tensor added with post-op sum, or -1 */
    int no_residual;       /* the product writes merged rows: no sum post-op */
    size_t sum_at;         /* index in fused of the Add of the residual */
    int64_t out;           /* the tensor the fused primitive writes */
    size_t fused[64];
    size_t n_fused;
    /* binary post-ops by a scalar (a QDQ pair's division by its scale):
     * their index in the chain, rank and value (odnn_fuse_args) */
    int n_scalar;
    int scalar_at[16], scalar_nd[16];
    /* The QDQ pairs' zero points go in as binary operands, the clip to
     * the type's range (odnn_append_qdq): set for int8 products, whose
     * primitives cost the most to make. */
    int share_qdq;
    /* The rank the primitive runs at when below its output tensor's
     * (odnn_conv_unit_width), else 0: a Squeeze or Reshape to that rank
     * that only drops the unit dims is then no step (odnn_follow). */
    int low_rank;
    float scalar_val[16];
    /* Binary post-ops by a per-channel constant (a batch normalisation
     * written as Mul and Add after a Concat, as tf2onnx and pre-activation
     * networks give it): taken only when ALLOW_CHAN is set; their index in
     * the chain, constant tensor, rank, channel axis and channel count
     * (odnn_fuse_args). */
    int allow_chan;
    int n_chan;
    int chan_at[4], chan_nd[4], chan_axis[4];
    int64_t chan_t[4], chan_c[4];
};

static int odnn_is_defined(struct odnn_build *b, int64_t t)
{
    if (b->guessing && t >= 0 && (size_t)t < b->u.n_tensors)
        return (int64_t)b->u.producer[t] - 1 < (int64_t)b->guess_node;
    int vi = odnn_value_of(b, t);
    if (vi >= 0)
        return b->c->values[vi].defined;
    struct odnn_tinfo ti;
    return odnn_tensor(b->v, t, &ti) && ti.cdata != NULL;
}

/* True when constant C is a per-channel vector for output Y: channel axis
 * AXIS of Y and 1 everywhere else, after right-aligning. */
static int odnn_per_channel(const struct odnn_tinfo *cinfo, const struct odnn_tinfo *y, int axis)
{
    if (cinfo->cdata == NULL || cinfo->ndim > y->ndim || !cinfo->f32)
        return 0;
    for (int32_t i = 1; i <= cinfo->ndim; i++) {
        int yd = y->ndim - i;
        int64_t cd = cinfo->dims[cinfo->ndim - i];
        if (cd != (yd == axis ? y->dims[axis] : 1) && !(cd == 1 && y->dims[yd] == 1))
            return 0;
    }
    return cinfo->elems == y->dims[axis];
}

/* ---- swish and hardswish ------------------------------------------------------
 *
 * x * Sigmoid(x) (SiLU, EfficientNet's activation) is oneDNN's swish with
 * alpha 1, and x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (how
 * PyTorch exports Hardswish before opset 14: MobileNetV3) its hardswish.
 * Either is one eltwise step, or one post-op of the convolution before it,
 * which keeps a squeeze-and-excitation or MBConv block in one primitive
 * chain. */

struct odnn_swish {
    size_t gate, mul; /* the first node (the Sigmoid, HardSigmoid or Add) and the Mul */
    size_t nodes[4];  /* every node of the pattern, gate first */
    size_t n_nodes;
    int64_t x, out;
    dnnl_alg_kind_t alg;
};

/* Whether T is the constant scalar WANT (to 1e-6 relative). */
static int odnn_scalar_is(const pl_graph_view *v, int64_t t, double want)
{
    float f;
    return t >= 0 && odnn_scalar(v, t, &f) && fabs((double)f - want) <= 1e-6 * fabs(want);
}

/* Whether node N divides T by 6 or multiplies it by 1/6. */
static int odnn_is_sixth(const pl_graph_view *v, int64_t n, int64_t t)
{
    if (n < 0)
        return 0;
    if (odnn_op_is(v, n, "Div"))
        return odnn_in(v, (size_t)n, 0) == t && odnn_scalar_is(v, odnn_in(v, (size_t)n, 1), 6.0);
    return odnn_op_is(v, n, "Mul") && odnn_scalar_is(v, odnn_other_input(v, (size_t)n, t, 1),
                                                     1.0 / 6.0);
}

/* Hardswish written out, as paddle2onnx and TensorFlow's converters write
 * MobileNetV3's: Add(x, 3) -> Clip(0, 6) -> Mul(x) -> Div(6), or the Div
 * (or a Mul by 1/6) before the Mul by x. oneDNN's hardswish computes
 * x * relu6(x + 3) / 6: the same to rounding. Taken as four steps, with
 * reorders around the plain-layout ones, they made 50 of ppocr2_cls's 204
 * primitives reorders. A is the Add. */
static int odnn_match_hswish_explicit(const pl_graph_view *v, const struct odnn_uses *u,
                                      size_t a, struct odnn_swish *out)
{
    int64_t x = -1;
    for (int i = 0; i < 2 && x < 0; i++)
        if (odnn_scalar_is(v, odnn_in(v, a, (size_t)i), 3.0))
            x = odnn_in(v, a, (size_t)(1 - i));
    if (x < 0 || onednn_host->graph->node_input_count(v, a) != 2)
        return 0;
    int64_t c = odnn_sole_reader(u, odnn_out(v, a, 0));
    float lo, hi;
    char reason[ODNN_REASON] = "";
    if (c < 0 || !odnn_op_is(v, c, "Clip") || !odnn_clip_bounds(v, (size_t)c, &lo, &hi, reason) ||
        lo != 0.0f || hi != 6.0f)
        return 0;
    int64_t ct = odnn_out(v, (size_t)c, 0);
    int64_t r = odnn_sole_reader(u, ct), last;
    size_t mul;
    if (r >= 0 && odnn_op_is(v, r, "Mul") && odnn_other_input(v, (size_t)r, ct, 1) == x) {
        mul = (size_t)r;
        last = odnn_sole_reader(u, odnn_out(v, (size_t)r, 0));
        if (!odnn_is_sixth(v, last, odnn_out(v, (size_t)r, 0)))
            return 0;
        out->nodes[2] = mul;
        out->nodes[3] = (size_t)last;
    } else if (odnn_is_sixth(v, r, ct)) {
        last = odnn_sole_reader(u, odnn_out(v, (size_t)r, 0));
        int64_t st = odnn_out(v, (size_t)r, 0);
        if (last < 0 || !odnn_op_is(v, last, "Mul") ||
            odnn_other_input(v, (size_t)last, st, 1) != x)
            return 0;
        mul = (size_t)last;
        out->nodes[2] = (size_t)r;
        out->nodes[3] = mul;
    } else {
        return 0;
    }
    out->gate = a;
    out->mul = mul;
    out->nodes[0] = a;
    out->nodes[1] = (size_t)c;
    out->n_nodes = 4;
    out->x = x;
    out->out = odnn_out(v, (size_t)last, 0);
    out->alg = dnnl_eltwise_hardswish;
    return 1;
}

/* Matches the pattern whose gate node is S: S's output is read only by a
 * Mul whose other input is S's input x (or S is the Add of a hardswish
 * written out). */
static int odnn_match_swish(const pl_graph_view *v, const struct odnn_uses *u, size_t s,
                            struct odnn_swish *out)
{
    if (odnn_op_is(v, (int64_t)s, "Add"))
        return odnn_match_hswish_explicit(v, u, s, out);
    int hard = odnn_op_is(v, (int64_t)s, "HardSigmoid");
    if (!hard && !odnn_op_is(v, (int64_t)s, "Sigmoid"))
        return 0;
    if (hard && (fabs(odnn_attr_float(v, s, "alpha", 0.2) - 1.0 / 6.0) > 1e-6 ||
                 odnn_attr_float(v, s, "beta", 0.5) != 0.5))
        return 0;
    int64_t x = odnn_in(v, s, 0), g = odnn_out(v, s, 0);
    int64_t m = odnn_sole_reader(u, g);
    if (x < 0 || !odnn_op_is(v, m, "Mul") || odnn_other_input(v, (size_t)m, g, 1) != x)
        return 0;
    out->gate = s;
    out->mul = (size_t)m;
    out->nodes[0] = s;
    out->nodes[1] = (size_t)m;
    out->n_nodes = 2;
    out->x = x;
    out->out = odnn_out(v, (size_t)m, 0);
    out->alg = hard ? dnnl_eltwise_hardswish : dnnl_eltwise_swish;
    return 1;
}

/* Whether no node of SW after its first is covered by an emitted step
 * yet, and every one is a node the module takes. */
static int odnn_swish_free(struct odnn_build *b, const struct odnn_swish *sw)
{
    char reason[ODNN_REASON] = "";
    for (size_t k = 1; k < sw->n_nodes; k++)
        if (b->done[sw->nodes[k]] || !odnn_check_node(b->v, &b->u, sw->nodes[k], reason))
            return 0;
    return 1;
}

/* The pattern among the readers of T that no emitted step covers yet. */
static int odnn_swish_of(struct odnn_build *b, int64_t t, struct odnn_swish *out)
{
    const pl_graph_view *v = b->v;
    /* every form's first node reads x */
    for (uint32_t r = 0; t >= 0 && (size_t)t < b->u.n_tensors && r < b->u.count[t]; r++) {
        size_t i = odnn_reader(&b->u, t, r);
        char reason[ODNN_REASON] = "";
        if (b->done[i] || !odnn_match_swish(v, &b->u, i, out) || out->x != t)
            continue;
        int ok = 1;
        for (size_t k = 0; k < out->n_nodes && ok; k++)
            ok = !b->done[out->nodes[k]] && odnn_check_node(v, &b->u, out->nodes[k], reason);
        if (ok)
            return 1;
    }
    return 0;
}

/* A new chain with the first UPTO post-ops of SRC (sum, eltwise, binary and
 * depthwise ones: what odnn_follow and odnn_conv append), or NULL.
 * oneDNN can neither edit a post-op nor copy a chain. */
static dnnl_post_ops_t odnn_po_copy(const_dnnl_post_ops_t src, int upto)
{
    dnnl_post_ops_t po;
    if (dnnl_post_ops_create(&po) != dnnl_success)
        return NULL;
    int ok = 1;
    for (int j = 0; j < upto && ok; j++) {
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(src, j);
        float s2, a2, c2;
        dnnl_alg_kind_t k2;
        if (kind == dnnl_sum) {
            ok = dnnl_post_ops_get_params_sum(src, j, &s2) == dnnl_success &&
                 dnnl_post_ops_append_sum(po, s2) == dnnl_success;
        } else if (kind == dnnl_eltwise) {
            ok = dnnl_post_ops_get_params_eltwise(src, j, &s2, &k2, &a2, &c2) == dnnl_success &&
                 dnnl_post_ops_append_eltwise(po, s2, k2, a2, c2) == dnnl_success;
        } else if (kind == dnnl_binary) {
            dnnl_alg_kind_t alg;
            const dnnl_memory_desc_t *md1;
            ok = dnnl_post_ops_get_params_binary(src, j, &alg, &md1) == dnnl_success &&
                 dnnl_post_ops_append_binary(po, alg, md1) == dnnl_success;
        } else if (kind == dnnl_convolution) {
            dnnl_data_type_t wdt, bdt, ddt;
            dnnl_dim_t kernel, stride, pad, count;
            int mask;
            const float *scales;
            ok = dnnl_post_ops_get_params_dw(src, j, &wdt, &bdt, &ddt, &kernel, &stride, &pad,
                                             &count, &mask, &scales) == dnnl_success &&
                 dnnl_post_ops_append_dw(po, wdt, bdt, ddt, kernel, stride, pad, count, mask,
                                         scales) == dnnl_success;
        } else {
            ok = 0;
        }
    }
    if (!ok) {
        dnnl_post_ops_destroy(po);
        return NULL;
    }
    return po;
}

/* Appends eltwise post-op ALG(ALPHA, BETA) to F's chain; 0 when it cannot
 * join it. oneDNN 2.6's brgemm kernels (brgconv, brgconv_1x1, brdgmm_dw)
 * apply every eltwise post-op of one algorithm with the parameters of the
 * first: Conv -> Mul(2) -> Add(0.5) came out as 4x, LeakyRelu(0.1) ->
 * LeakyRelu(0.3) as 0.01x. So an algorithm appears once in a chain, or
 * again only with the same parameters, and a linear step right after a
 * linear one is composed with it: a2(a1 x + b1) + b2. */
static int odnn_append_eltwise(struct odnn_fuse *f, dnnl_alg_kind_t alg, float alpha, float beta)
{
    if (f->linear_only && alg != dnnl_eltwise_relu && alg != dnnl_eltwise_clip &&
        alg != dnnl_eltwise_clip_v2 && alg != dnnl_eltwise_linear &&
        alg != dnnl_eltwise_bounded_relu && alg != dnnl_eltwise_hardswish &&
        alg != dnnl_eltwise_abs)
        return 0;
    int len = dnnl_post_ops_len(f->po);
    for (int i = 0; i < len; i++) {
        float scale, a, c;
        dnnl_alg_kind_t k;
        if (dnnl_post_ops_get_kind(f->po, i) != dnnl_eltwise ||
            dnnl_post_ops_get_params_eltwise(f->po, i, &scale, &k, &a, &c) != dnnl_success ||
            k != alg || (a == alpha && c == beta))
            continue;
        if (alg != dnnl_eltwise_linear || i != len - 1)
            return 0;
        /* oneDNN cannot edit a post-op: copy the chain but its last step. */
        dnnl_post_ops_t po = odnn_po_copy(f->po, i);
        if (po == NULL)
            return 0;
        if (dnnl_post_ops_append_eltwise(po, scale, alg, alpha * a, alpha * c + beta) !=
            dnnl_success) {
            dnnl_post_ops_destroy(po);
            return 0;
        }
        dnnl_post_ops_destroy(f->po);
        f->po = po;
        return 1;
    }
    if (dnnl_post_ops_append_eltwise(f->po, 1.0f, alg, alpha, beta) != dnnl_success)
        return 0;
    f->n_post++;
    return 1;
}

/* True when tensors A and B have the same known shape. */
static int odnn_same_shape(const pl_graph_view *v, int64_t a, int64_t b)
{
    struct odnn_tinfo x, y;
    return odnn_tensor(v, a, &x) && odnn_tensor(v, b, &y) && x.known && y.known &&
           x.ndim == y.ndim && memcmp(x.dims, y.dims, sizeof x.dims[0] * (size_t)x.ndim) == 0;
}

/* Appends the K eltwise steps SEQ (one ONNX op) to F's chain, all or
 * none: 0, and F as it was, when one cannot join it. */
static int odnn_append_seq(struct odnn_fuse *f, const struct odnn_elt *seq, int k)
{
    if (k == 1)
        return odnn_append_eltwise(f, seq[0].alg, seq[0].alpha, seq[0].beta);
    dnnl_post_ops_t old = f->po;
    int old_post = f->n_post;
    f->po = odnn_po_copy(old, dnnl_post_ops_len(old));
    int ok = f->po != NULL;
    for (int i = 0; i < k && ok; i++)
        ok = odnn_append_eltwise(f, seq[i].alg, seq[i].alpha, seq[i].beta);
    if (!ok) {
        if (f->po != NULL)
            dnnl_post_ops_destroy(f->po);
        f->po = old;
        f->n_post = old_post;
        return 0;
    }
    dnnl_post_ops_destroy(old);
    return 1;
}

/* Appends QDQ pair P on a result of rank ND and ELEMS values to F's
 * chain, all or none: a binary division by the scale (a scalar), round
 * half to even, a clip to the 8-bit range less the zero point and a binary
 * product by the scale: the values odnn_qdq_step computes. The scale goes
 * in as binary scalars, not eltwise linear steps, because oneDNN 2.6's
 * brgemm kernels give every eltwise step of one algorithm the parameters
 * of the first (odnn_append_eltwise). A convolution or product then writes
 * the fake-quantized activation in its own layout: in a QDQ graph every
 * activation between two of them is such a pair, and as a step of its own
 * each cost a reorder out of the blocked layout and one back.
 *
 * For an int8 product (F's share_qdq: odnn_qmm_emit) of at least
 * ODNN_QDQ_SHARE_MIN values, the zero point goes in as binary scalars too,
 * added after the round and taken away after a clip to the type's range
 * (the rounded value is an integer: the sums are exact): the primitive is
 * then the same for every layer of one shape, whatever its scales and zero
 * point, and oneDNN's primitive cache makes it once. A clip to the range
 * less the zero point made each layer its own: smart_turn_v3's 25 int8
 * products of four shapes took 1.0-1.4 ms each to make (AMX brgemm). The
 * two more binary steps cost about 0.3 us a chain on small results
 * (vit_s_qdq's [17, 256]: 0.169 -> 0.174 ms a run), hence the bound, and
 * 7% of a float product with 64-deep sums (smart_turn_v3's attention
 * scores, 0.50 -> 0.54 ms, its primitive made in 0.3-0.5 ms), hence int8
 * products only. */
#define ODNN_QDQ_SHARE_MIN 32768
static int odnn_append_qdq(struct odnn_fuse *f, const struct odnn_qdq *p, int nd, int64_t elems)
{
    int shift = p->zp != 0 && f->share_qdq && elems >= ODNN_QDQ_SHARE_MIN;
    int n_new = shift ? 4 : 2;
    if (f->linear_only || nd < 1 || nd > DNNL_MAX_NDIMS ||
        f->n_scalar + n_new > (int)(sizeof f->scalar_at / sizeof f->scalar_at[0]))
        return 0;
    dnnl_post_ops_t old = f->po;
    int old_post = f->n_post;
    f->po = odnn_po_copy(old, dnnl_post_ops_len(old));
    if (f->po == NULL) {
        f->po = old;
        return 0;
    }
    dnnl_dims_t ones;
    for (int i = 0; i < nd; i++)
        ones[i] = 1;
    dnnl_memory_desc_t md1;
    dnnl_memory_desc_init_by_strides(&md1, nd, ones, dnnl_f32, NULL);
    /* the binary steps: their places in the chain and their scalars */
    int at[4];
    float val[4];
    int nb = 0;
    at[nb] = dnnl_post_ops_len(f->po);
    val[nb] = p->s;
    int ok = dnnl_post_ops_append_binary(f->po, dnnl_binary_div, &md1) == dnnl_success;
    nb += ok;
    ok = ok && odnn_append_eltwise(f, dnnl_eltwise_round, 0.0f, 0.0f);
    if (ok && shift) {
        at[nb] = dnnl_post_ops_len(f->po);
        val[nb] = (float)p->zp;
        ok = dnnl_post_ops_append_binary(f->po, dnnl_binary_add, &md1) == dnnl_success;
        nb += ok;
    }
    int lo = shift ? p->lo : p->lo - p->zp, hi = shift ? p->hi : p->hi - p->zp;
    ok = ok && odnn_append_eltwise(f, dnnl_eltwise_clip, (float)lo, (float)hi);
    if (ok && shift) {
        at[nb] = dnnl_post_ops_len(f->po);
        val[nb] = (float)-p->zp;
        ok = dnnl_post_ops_append_binary(f->po, dnnl_binary_add, &md1) == dnnl_success;
        nb += ok;
    }
    if (ok) {
        at[nb] = dnnl_post_ops_len(f->po);
        val[nb] = p->s;
        ok = dnnl_post_ops_append_binary(f->po, dnnl_binary_mul, &md1) == dnnl_success;
        nb += ok;
    }
    if (!ok) {
        dnnl_post_ops_destroy(f->po);
        f->po = old;
        f->n_post = old_post;
        return 0;
    }
    f->n_post += nb;
    dnnl_post_ops_destroy(old);
    for (int k = 0; k < nb; k++) {
        f->scalar_at[f->n_scalar] = at[k];
        f->scalar_nd[f->n_scalar] = nd;
        f->scalar_val[f->n_scalar] = val[k];
        f->n_scalar++;
    }
    return 1;
}

/* Appends the QDQ pair of QuantizeLinear J, the only reader of F's
 * output, to F's chain (odnn_append_qdq) and takes its nodes; 0 when J
 * starts no such pair or the chain cannot take it. */
static int odnn_take_qdq(struct odnn_build *b, struct odnn_fuse *f, int64_t j)
{
    const pl_graph_view *v = b->v;
    struct odnn_qdq qp;
    struct odnn_tinfo ti;
    if (b->no_qdq_post || !odnn_match_qdq(v, &b->u, (size_t)j, &qp) || qp.x != f->out ||
        b->done[qp.dq] || !odnn_tensor(v, f->out, &ti) ||
        !odnn_append_qdq(f, &qp, ti.ndim, ti.elems))
        return 0;
    f->fused[f->n_fused++] = (size_t)j;
    f->fused[f->n_fused++] = qp.dq;
    f->out = qp.out;
    return 1;
}

/* The QDQ pair that alone reads node N's output, as F's only post-ops
 * (F's chain is created; the caller destroys it); 0 when there is none
 * or it cannot join. */
static int odnn_qdq_post(struct odnn_build *b, size_t n, struct odnn_fuse *f)
{
    const pl_graph_view *v = b->v;
    memset(f, 0, sizeof *f);
    f->bias = f->residual = -1;
    f->out = odnn_out(v, n, 0);
    f->fused[f->n_fused++] = n;
    int64_t j = odnn_sole_reader(&b->u, f->out);
    char reason[ODNN_REASON] = "";
    if (j < 0 || b->done[j] || !odnn_op_is(v, j, "QuantizeLinear") ||
        !odnn_check_node(v, &b->u, (size_t)j, reason))
        return 0;
    if (dnnl_post_ops_create(&f->po) != dnnl_success) {
        f->po = NULL;
        return 0;
    }
    return odnn_take_qdq(b, f, j);
}

/* Adds the constant operand of binary post-op AT of step S of NODE: DATA,
 * rank ND, 1 in every dim but AXIS, which has C values (AXIS -1: one
 * value). */
static pl_status *odnn_po_operand(struct odnn_build *b, int s, int at, int nd, int axis,
                                  int64_t c, const void *data, int64_t node)
{
    dnnl_dims_t d1;
    for (int i = 0; i < nd; i++)
        d1[i] = i == axis ? c : 1;
    dnnl_memory_desc_t md1; /* dense row-major (rank 0: a scalar) */
    dnnl_memory_desc_init_by_strides(&md1, nd, d1, dnnl_f32, NULL);
    int wi;
    pl_status *st = odnn_weight(b, &md1, &md1, data, node, &wi);
    if (st == NULL)
        odnn_arg(b, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(at) | DNNL_ARG_SRC_1, ODNN_REF_WEIGHT, wi);
    return st;
}

/* The arguments of F's binary post-ops by constants (scalars, one value
 * per channel) for step S of NODE. */
static pl_status *odnn_fuse_args(struct odnn_build *b, int s, const struct odnn_fuse *f,
                                 int64_t node)
{
    pl_status *st = NULL;
    for (int k = 0; st == NULL && k < f->n_scalar; k++)
        st = odnn_po_operand(b, s, f->scalar_at[k], f->scalar_nd[k], -1, 1, &f->scalar_val[k],
                             node);
    for (int k = 0; st == NULL && k < f->n_chan; k++) {
        struct odnn_tinfo ci;
        if (!odnn_tensor(b->v, f->chan_t[k], &ci) || ci.cdata == NULL)
            return odnn_error(PL_CODE_INTERNAL, "node '%s': a per-channel post-op's constant is gone",
                              onednn_host->graph->node_name(b->v, (size_t)node));
        st = odnn_po_operand(b, s, f->chan_at[k], f->chan_nd[k], f->chan_axis[k], f->chan_c[k],
                             ci.cdata, node);
    }
    return st;
}

/* Whether node J, a Squeeze or Reshape of tensor T, gives T's first R dims
 * (those after are 1): what a primitive run at rank R writes as it is. */
static int odnn_drops_unit_dims(const pl_graph_view *v, size_t j, int64_t t, int r)
{
    struct odnn_tinfo ti, yi;
    if ((!odnn_op_is(v, (int64_t)j, "Squeeze") && !odnn_op_is(v, (int64_t)j, "Reshape")) ||
        odnn_in(v, j, 0) != t || !odnn_tensor(v, t, &ti) || !ti.known ||
        !odnn_tensor(v, odnn_out(v, j, 0), &yi) || !yi.known || yi.ndim != r || ti.ndim <= r ||
        yi.dt != ti.dt)
        return 0;
    for (int d = 0; d < ti.ndim; d++)
        if (d < r ? ti.dims[d] != yi.dims[d] : ti.dims[d] != 1)
            return 0;
    return 1;
}

/* Whether oneDNN 2.6 applies a binary post-op by one value per channel
 * (axis AXIS) right to a result of Y's shape. Not when the dims after the
 * channel are all 1 but a dim before it is not ([2, C, 1, 1]): its
 * binary kernel then broadcast the values wrongly (difftest eltwise seed
 * 1200). */
static int odnn_chan_po_ok(const struct odnn_tinfo *y, int axis)
{
    int64_t before = 1, after = 1;
    for (int i = 0; i < y->ndim; i++) {
        if (i < axis)
            before *= y->dims[i];
        else if (i > axis)
            after *= y->dims[i];
    }
    return before == 1 || after > 1 || axis == y->ndim - 1;
}

/* Follows OUT through the nodes that can be post-ops of the primitive
 * about to be made. CHANNEL is the output axis a bias runs along; HAS_BIAS
 * says the primitive already has one. */
static void odnn_follow(struct odnn_build *b, struct odnn_fuse *f, int channel, int has_bias)
{
    const pl_graph_view *v = b->v;
    const pl_graph_api *g = onednn_host->graph;
    for (;;) {
        if (f->n_fused + 10 > sizeof f->fused / sizeof f->fused[0])
            return;
        int64_t t = f->out;
        struct odnn_gelu gm;
        /* GELU: x has exactly the pattern's readers. */
        if (t >= 0 && (size_t)t < b->u.n_tensors && !b->u.escapes[t] && b->u.count[t] >= 2 &&
            odnn_gelu_of(v, &b->u, b->u.first[t], &gm) && gm.x == t &&
            b->u.count[t] == gm.x_readers && !odnn_gelu_own(&gm) &&
            odnn_append_eltwise(f, gm.alg, 0, 0)) {
            for (size_t k = 0; k < gm.n_nodes; k++)
                f->fused[f->n_fused++] = gm.nodes[k];
            f->out = gm.out;
            continue;
        }
        /* x * Sigmoid(x), x * HardSigmoid(x): x has exactly the
         * pattern's two readers. */
        struct odnn_swish sw;
        if (t >= 0 && (size_t)t < b->u.n_tensors && !b->u.escapes[t] && b->u.count[t] == 2 &&
            odnn_swish_of(b, t, &sw) &&
            odnn_append_eltwise(f, sw.alg, sw.alg == dnnl_eltwise_swish ? 1.0f : 0.0f, 0)) {
            for (size_t k = 0; k < sw.n_nodes; k++)
                f->fused[f->n_fused++] = sw.nodes[k];
            f->out = sw.out;
            continue;
        }
        int64_t j = odnn_sole_reader(&b->u, t);
        if (j < 0 || b->done[j])
            return;
        char reason[ODNN_REASON] = "";
        if (!odnn_check_node(v, &b->u, (size_t)j, reason))
            return;
        /* not past a residual sum: its source has the tensors' rank */
        if (f->low_rank > 0 && f->residual < 0 &&
            odnn_drops_unit_dims(v, (size_t)j, t, f->low_rank)) {
            f->fused[f->n_fused++] = (size_t)j;
            f->out = odnn_out(v, (size_t)j, 0);
            continue;
        }
        if (odnn_op_is(v, j, "QuantizeLinear")) {
            if (!odnn_take_qdq(b, f, j))
                return;
            continue;
        }
        const char *op = g->node_op(v, (size_t)j);
        struct odnn_elt seq[ODNN_MAX_ELT];
        float cval;
        int first, n_seq;
        int64_t next = odnn_out(v, (size_t)j, 0);
        if (b->u.own && strcmp(op, "Tanh") == 0)
            return; /* its own step is 5-10x faster than oneDNN's AVX2 tanh (odnn_tanh_own) */
        /* A PRelu of one slope per channel is a step of its own
         * (odnn_prelu_emit): oneDNN 2.6 has its prelu post-op in the
         * reference kernels of convolutions only, and a chain with it
         * would lose the residual sum before it as well. */
        if ((n_seq = odnn_eltwise_seq(v, (size_t)j, seq, reason)) > 0 &&
            odnn_in(v, (size_t)j, 0) == t) {
            if (!odnn_append_seq(f, seq, n_seq))
                return;
        } else if ((strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0) &&
                   odnn_binary_scalar(v, (size_t)j, &cval, &first) == t &&
                   odnn_same_shape(v, t, next)) {
            /* max(x, c) and min(x, c) are clips with one open end */
            if (!odnn_append_eltwise(f, dnnl_eltwise_clip, op[1] == 'a' ? cval : -INFINITY,
                                     op[1] == 'a' ? INFINITY : cval))
                return;
        } else if (g->node_input_count(v, (size_t)j) == 2 &&
                   (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 ||
                    strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0)) {
            int64_t other = odnn_in(v, (size_t)j, 0) == t ? odnn_in(v, (size_t)j, 1)
                                                          : odnn_in(v, (size_t)j, 0);
            int t_first = odnn_in(v, (size_t)j, 0) == t;
            struct odnn_tinfo oi, yi, ti;
            odnn_tensor(v, other, &oi);
            odnn_tensor(v, next, &yi);
            /* A primitive writes T's elements: an Add that broadcasts T
             * itself ([N,C,1,1] + [N,C,H,W]) is a binary of its own. */
            if (other == t || !odnn_tensor(v, t, &ti) || !ti.known || !yi.known ||
                ti.elems != yi.elems)
                return;
            if (odnn_binary_scalar(v, (size_t)j, &cval, &first) == t) {
                float a = 1, c0 = 0;
                if (op[0] == 'A')
                    c0 = cval;
                else if (op[0] == 'S' && t_first)
                    c0 = -cval;
                else if (op[0] == 'S')
                    a = -1, c0 = cval;
                else if (op[0] == 'M')
                    a = cval;
                else if (t_first && cval != 0)
                    a = 1.0f / cval;
                else
                    return;
                if (!odnn_append_eltwise(f, dnnl_eltwise_linear, a, c0))
                    return;
            } else if (op[0] == 'A' && f->bias < 0 && !has_bias && f->n_post == 0 &&
                       f->residual < 0 && odnn_per_channel(&oi, &yi, channel)) {
                f->bias = other;
            } else if (f->allow_chan && f->n_chan < 4 && yi.ndim <= DNNL_MAX_NDIMS &&
                       (t_first || op[0] == 'A' || op[0] == 'M') &&
                       odnn_per_channel(&oi, &yi, channel) && odnn_chan_po_ok(&yi, channel)) {
                /* x op c, c one value per channel: a binary post-op */
                dnnl_dims_t d1;
                for (int i = 0; i < yi.ndim; i++)
                    d1[i] = i == channel ? yi.dims[channel] : 1;
                dnnl_memory_desc_t md1;
                odnn_plain_md(&md1, yi.ndim, d1);
                dnnl_alg_kind_t alg = op[0] == 'A'   ? dnnl_binary_add
                                      : op[0] == 'S' ? dnnl_binary_sub
                                      : op[0] == 'M' ? dnnl_binary_mul
                                                     : dnnl_binary_div;
                int at = dnnl_post_ops_len(f->po);
                if (dnnl_post_ops_append_binary(f->po, alg, &md1) != dnnl_success)
                    return;
                f->chan_at[f->n_chan] = at;
                f->chan_nd[f->n_chan] = yi.ndim;
                f->chan_axis[f->n_chan] = channel;
                f->chan_t[f->n_chan] = other;
                f->chan_c[f->n_chan] = yi.dims[channel];
                f->n_chan++;
                f->n_post++;
            } else if (op[0] == 'A' && f->residual < 0 && f->n_scalar == 0 && !f->no_residual &&
                       oi.cdata == NULL &&
                       oi.ndim == yi.ndim && oi.elems == yi.elems &&
                       odnn_is_defined(b, other)) {
                dnnl_post_ops_append_sum(f->po, 1.0f);
                f->n_post++;
                f->residual = other;
                f->sum_at = f->n_fused;
            } else {
                return;
            }
        } else {
            return;
        }
        f->fused[f->n_fused++] = (size_t)j;
        f->out = next;
    }
}

/* True when tensor T does not leave the view and no node left to emit
 * reads it but the Add ADD that fuses it. The nodes of the primitive being
 * made are not done yet, so a convolution reading T as its source keeps
 * T alive. */
static int odnn_dead_after(struct odnn_build *b, int64_t t, int64_t add)
{
    const pl_graph_api *g = onednn_host->graph;
    if (t < 0 || (size_t)t >= b->u.n_tensors || b->u.escapes[t])
        return 0;
    size_t nodes = g->node_count(b->v);
    for (size_t i = 0; i < nodes; i++) {
        if (b->done[i] == 1 || (int64_t)i == add)
            continue;
        for (size_t k = 0; k < g->node_input_count(b->v, i); k++)
            if (g->node_input(b->v, i, k) == t)
                return 0;
    }
    return 1;
}

/* The value whose bytes the fused primitive may write in place of the
 * residual RV, or -1 for a copy. That is RV's owner when it is in the
 * arena, has the destination's layout MD, and no tensor living in those
 * bytes is read after the Add ADD (in place, the post-op sum reads each
 * element before the primitive overwrites it). */
static int odnn_residual_slot(struct odnn_build *b, int rv, const dnnl_memory_desc_t *md,
                              int64_t add)
{
    pl_compiled *c = b->c;
    int own = odnn_owner(c, rv);
    if (c->values[own].kind != ODNN_V_TEMP || c->values[rv].view_off != 0 ||
        !dnnl_memory_desc_equal(&c->values[rv].md, md) ||
        !dnnl_memory_desc_equal(&c->values[own].md, md))
        return -1;
    for (int i = 0; i < c->n_values; i++) {
        if (odnn_owner(c, i) != own)
            continue;
        /* A view of those bytes (tensor -1) keeps the copy: cautious. */
        if (c->values[i].merged)
            continue;
        if (c->values[i].tensor < 0 || !odnn_dead_after(b, c->values[i].tensor, add))
            return -1;
    }
    return own;
}

/* Finishes a fused primitive writing layout DMD, then the step. A
 * residual that nothing reads later lends its arena bytes to the
 * destination (post-op sum reads it there); any other is copied into the
 * destination first. Marks fused nodes done. */
static pl_status *odnn_emit_fused_md(struct odnn_build *b, const struct odnn_fuse *f,
                                     const dnnl_memory_desc_t *dmd, int *out_dst)
{
    int rv = -1, slot = -1;
    if (f->residual >= 0) {
        pl_status *st = odnn_source(b, f->residual, -1, &rv);
        if (st != NULL)
            return st;
        if (f->out >= 0 && (size_t)f->out < b->u.n_tensors && !b->u.escapes[f->out])
            slot = odnn_residual_slot(b, rv, dmd, (int64_t)f->fused[f->sum_at]);
    }
    int dst = odnn_dst_value_md(b, f->out, dmd);
    if (dst < 0)
        return odnn_oom();
    if (slot >= 0) {
        b->c->values[dst].kind = -slot - 100; /* an alias: see odnn_owner */
    } else if (rv >= 0) {
        pl_status *st = odnn_reorder(b, rv, dst, (int64_t)f->fused[f->sum_at]);
        if (st != NULL)
            return st;
    }
    for (size_t k = 0; k < f->n_fused; k++)
        b->done[f->fused[k]] = 1;
    *out_dst = dst;
    return NULL;
}

static pl_status *odnn_emit_fused(struct odnn_build *b, const struct odnn_fuse *f,
                                  const_dnnl_primitive_desc_t pd, int *out_dst)
{
    return odnn_emit_fused_md(b, f, odnn_pd_md(pd, DNNL_ARG_DST), out_dst);
}

/* ---- one node (with what it fuses) ------------------------------------------- */

/* Whether IMPL (a primitive's implementation name) is one of oneDNN's
 * reference kernels: "ref:any", "ref_int8:any", ..., the per-primitive
 * ones "bnorm_ref:any", "lnorm_ref:any", "reduction_ref:any" and the
 * like, and the scalar loops over plain NCHW data, "simple_nchw:any"
 * (pooling, LRN, batch normalization): a 2x2 max pooling of [1,200,2,96]
 * with a QDQ pair as post-ops took 0.9 ms there (PP-OCR's classifier in
 * QDQ form, 1.2 ms of its 2.2), where the module's own pooling and a
 * binary take microseconds. */
static int odnn_impl_is_ref(const char *impl)
{
    return impl == NULL || strncmp(impl, "ref", 3) == 0 || strstr(impl, "_ref:") != NULL ||
           strncmp(impl, "simple_nchw", 11) == 0;
}

static pl_status *odnn_make_pd(struct odnn_build *b, const_dnnl_op_desc_t desc,
                               const_dnnl_post_ops_t po, size_t node, dnnl_primitive_desc_t *pd)
{
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, po);
    if (st != NULL)
        return st;
    dnnl_status_t ds = dnnl_primitive_desc_create(pd, desc, attr, b->ctx->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    const char *impl = NULL;
    if (ds == dnnl_success &&
        dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        odnn_impl_is_ref(impl)) {
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s' (%s): oneDNN's reference implementation (%s)",
                                 onednn_host->graph->node_name(b->v, node),
                                 onednn_host->graph->node_op(b->v, node), impl);
    }
    return odnn_dnnl(ds, "primitive descriptor", b->v, (int64_t)node);
}

/* The primitive of DESC with post-ops PO when a real kernel takes it:
 * 1 with *PD set, else 0 with *PD NULL (no error: the caller goes on
 * without PO). */
static int odnn_pd_fast(struct odnn_build *b, const_dnnl_op_desc_t desc, const_dnnl_post_ops_t po,
                        dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, po);
    if (st != NULL) {
        onednn_host->status_free(st);
        return 0;
    }
    dnnl_status_t ds = dnnl_primitive_desc_create(pd, desc, attr, b->ctx->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    const char *impl = NULL;
    if (ds == dnnl_success &&
        (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
         odnn_impl_is_ref(impl))) {
        dnnl_primitive_desc_destroy(*pd);
        ds = dnnl_unimplemented;
    }
    if (ds != dnnl_success)
        *pd = NULL;
    return *pd != NULL;
}

/* The primitive of node N's DESC, with the QDQ pair that alone reads
 * OUT_T (N's output) as its post-ops when a real kernel takes them: then
 * *QF says what it fused (odnn_fuse_args, odnn_qdq_done) and *OUT_T is the
 * pair's output. QF->po is NULL after. */
static pl_status *odnn_make_pd_qdq(struct odnn_build *b, const_dnnl_op_desc_t desc, size_t n,
                                   int64_t *out_t, struct odnn_fuse *qf,
                                   dnnl_primitive_desc_t *pd)
{
    memset(qf, 0, sizeof *qf);
    int with = *out_t == odnn_out(b->v, n, 0) && odnn_qdq_post(b, n, qf) &&
               odnn_pd_fast(b, desc, qf->po, pd);
    if (qf->po != NULL)
        dnnl_post_ops_destroy(qf->po);
    qf->po = NULL;
    if (with) {
        *out_t = qf->out;
        return NULL;
    }
    qf->n_scalar = 0;
    qf->n_fused = 0;
    return odnn_make_pd(b, desc, NULL, n, pd);
}

/* Whether oneDNN 2.6's binary kernel applies post-ops right to a source
 * laid out as MD: row-major, channels last or in blocks of 16 channels. In
 * blocks of 4 (aBcde4b, after a grouped convolution) it applied an eltwise
 * post-op to half the channels wrongly (difftest mixed seed 1656). */
static dnnl_format_tag_t odnn_channel_block_tag(const dnnl_memory_desc_t *md);

static int odnn_binary_po_layout(const dnnl_memory_desc_t *md)
{
    if (odnn_is_row_major(md))
        return 1;
    dnnl_format_tag_t blk = odnn_channel_block_tag(md);
    if (blk == dnnl_aBc16b || blk == dnnl_aBcd16b || blk == dnnl_aBcde16b)
        return 1;
    static const dnnl_format_tag_t last[3] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    dnnl_memory_desc_t probe;
    return md->ndims >= 3 && md->ndims <= 5 && md->format_kind == dnnl_blocked &&
           md->offset0 == 0 &&
           dnnl_memory_desc_init_by_tag(&probe, md->ndims, md->dims, md->data_type,
                                        last[md->ndims - 3]) == dnnl_success &&
           dnnl_memory_desc_equal(&probe, md);
}

/* The primitive of node N's binary descriptor BD, with the elementwise
 * chain that follows its output as post-ops (activations, scalar and
 * per-channel constant operands, a QDQ pair) when a real kernel takes
 * them: a batch normalisation after a Concat (Mul, Add, Relu: three
 * passes over the tensor) is then one. ND is the result's rank, 0 when
 * the step runs in merged dims (no per-channel operand then). Else as
 * odnn_make_pd_qdq. */
static pl_status *odnn_binary_pd(struct odnn_build *b, const dnnl_binary_desc_t *bd, size_t n,
                                 int nd, int64_t *out_t, struct odnn_fuse *f,
                                 dnnl_primitive_desc_t *pd)
{
    memset(f, 0, sizeof *f);
    f->bias = f->residual = -1;
    f->no_residual = 1;
    f->allow_chan = nd > 0;
    f->out = odnn_out(b->v, n, 0);
    f->fused[f->n_fused++] = n;
    if (*out_t == f->out && odnn_binary_po_layout(&bd->src_desc[0]) &&
        dnnl_post_ops_create(&f->po) == dnnl_success) {
        odnn_follow(b, f, nd >= 2 ? 1 : 0, 1);
        int with = f->n_fused > 1 && odnn_pd_fast(b, bd, f->po, pd);
        dnnl_post_ops_destroy(f->po);
        f->po = NULL;
        if (with) {
            *out_t = f->out;
            return NULL;
        }
    }
    return odnn_make_pd_qdq(b, bd, n, out_t, f, pd);
}

/* Marks what odnn_make_pd_qdq fused into step S of node N done and adds
 * its arguments. */
static pl_status *odnn_qdq_done(struct odnn_build *b, int s, const struct odnn_fuse *qf, size_t n)
{
    for (size_t k = 0; k < qf->n_fused; k++)
        b->done[qf->fused[k]] = 1;
    return odnn_fuse_args(b, s, qf, (int64_t)n);
}

/* Emits the step of PD with its data source SRC_VALUE (made to fit the
 * layout PD wants) and extra args. The caller adds the rest. */
static pl_status *odnn_src_arg(struct odnn_build *b, const_dnnl_primitive_desc_t pd, int arg,
                               int vi, size_t node, int *out)
{
    return odnn_ensure(b, vi, odnn_pd_md(pd, arg), (int64_t)node, out);
}

/* The primitive of convolution descriptor CD with post-ops PO, kept only
 * when a real kernel (not a reference one) took it: dnnl_success with *PD
 * set, or anything else with *PD NULL. */
static dnnl_status_t odnn_conv_pd_fast(struct odnn_build *b, const dnnl_convolution_desc_t *cd,
                                       const_dnnl_post_ops_t po, dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, po);
    if (st != NULL) {
        onednn_host->status_free(st);
        return dnnl_out_of_memory;
    }
    dnnl_status_t ds = dnnl_primitive_desc_create(pd, cd, attr, b->ctx->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return ds;
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        odnn_impl_is_ref(impl)) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
        return dnnl_unimplemented;
    }
    return dnnl_success;
}

/* The implementation of DESC with post-ops PO whose name contains NAME,
 * or dnnl_unimplemented when oneDNN offers none. */
static dnnl_status_t odnn_pd_named(struct odnn_build *b, const_dnnl_op_desc_t desc,
                                   const_dnnl_post_ops_t po, const char *name,
                                   dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, po);
    if (st != NULL) {
        onednn_host->status_free(st);
        return dnnl_out_of_memory;
    }
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t ds = dnnl_primitive_desc_iterator_create(&it, desc, attr, b->ctx->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return ds;
    do {
        dnnl_primitive_desc_t next = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl = NULL;
        if (next != NULL &&
            dnnl_primitive_desc_query(next, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl != NULL && strstr(impl, name) != NULL)
            *pd = next;
        else if (next != NULL)
            dnnl_primitive_desc_destroy(next);
    } while (*pd == NULL && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    return *pd != NULL ? dnnl_success : dnnl_unimplemented;
}

/* Whether the f32 convolutions of the subgraph are left to oneDNN's choice
 * (brgconv, channels-last) rather than asked for the channel-blocked layout
 * odnn_conv_blocked prefers. That layout pads channels to blocks of 16, so
 * a net of 8, 12, 24 or 36 channels computes up to twice the work (Keras
 * U-Net's 24 -> 8 3x3 at 64x64: 0.20 ms blocked, 0.12 channels-last; an
 * 8 -> 2 1x1: 0.064 against 0.009; a DenseNet of growth 12). Taken for the
 * whole subgraph, so that its convolutions agree on one layout and no
 * reorders come between them: when the padded multiply-adds exceed the real
 * ones by a quarter, or by 30% when a convolution is grouped (depthwise
 * kernels are faster blocked: shufflenet_v2_s, 1.26x padded, ran 6% slower
 * channels-last, mobilenetv3_small_050 (1.15x) 12%; GhostNet's modules of
 * 4 to 60 channels, 1.48x, ran 2.9 -> 2.1 ms channels-last, RepGhostNet
 * (1.36x) 3.5 -> 2.5, EdgeNeXt (1.33x) as fast either way; timm 0.9.16's
 * models, best of 3 medians of 40). Measured alternating, 2 threads,
 * `plinth bench`: tf_unet (1.88x padded) 0.96 -> 0.64 ms, tf_densenet
 * (1.29x) 2.35 -> 1.88, densenet_s (1.46x) 0.32 -> 0.26, unet_s (1.31x)
 * 0.30 -> 0.28; below the
 * quarter, every net of the PyTorch, TensorFlow and torchvision zoos ran
 * as fast or faster blocked (resnet18 aside). Also when grouped
 * convolutions without a blocked kernel (odnn_grouped_unblocked) do most
 * of the multiply-adds. Convolutions the narrow kernel takes do not count
 * (they read either layout). Depends on the view, the ISA and direct_conv
 * alone, so import makes the same choice. */
static int odnn_grouped_unblocked(struct odnn_build *b, size_t n, const struct odnn_tinfo *x,
                                  const struct odnn_tinfo *w, const struct odnn_tinfo *y,
                                  int64_t group);

static int odnn_conv_layout_any(struct odnn_build *b)
{
    if (b->conv_any >= 0)
        return b->conv_any;
    const pl_graph_api *g = onednn_host->graph;
    double real = 0, padded = 0, all = 0, unblocked_macs = 0;
    int grouped = 0;
    for (size_t i = 0; i < g->node_count(b->v); i++) {
        if (!odnn_op_is(b->v, (int64_t)i, "Conv"))
            continue;
        struct odnn_tinfo x, w, y;
        if (!odnn_tensor(b->v, odnn_in(b->v, i, 0), &x) || !x.f32 || x.ndim < 3 ||
            !odnn_tensor(b->v, odnn_in(b->v, i, 1), &w) || w.cdata == NULL || w.ndim != x.ndim ||
            !odnn_tensor(b->v, odnn_out(b->v, i, 0), &y) || !y.known)
            continue;
        int64_t oc = w.dims[0], ic = x.dims[1];
        double macs = (double)y.elems * (double)w.dims[1];
        for (int d = 2; d < w.ndim; d++)
            macs *= (double)w.dims[d];
        all += macs;
        int64_t group = odnn_attr_int(b->v, i, "group", 1);
        if (group != 1) {
            grouped = 1;
            /* a grouped, not depthwise, layer that oneDNN has no
             * channel-blocked kernel for runs channels-last whatever is
             * asked (odnn_grouped_unblocked) */
            if (group != x.dims[1] && odnn_grouped_unblocked(b, i, &x, &w, &y, group))
                unblocked_macs += macs;
            continue;
        }
        /* the narrow kernel's layers (at most 8 channels out) read either
         * layout and pad nothing */
        const int64_t *dil = NULL;
        size_t nd = odnn_attr_ints(b->v, i, "dilations", &dil);
        if (b->ctx->direct && w.ndim <= 4 &&
            odnn_narrow_takes(ic, oc, w.ndim == 4 ? w.dims[2] : 1, w.dims[w.ndim - 1],
                              nd > 0 ? dil[nd - 1] : 1, 1))
            continue;
        double oc_pad = (double)((oc + 15) / 16 * 16) / (double)oc;
        /* a source of fewer than 16 channels stays plain (odnn_conv_blocked) */
        double ic_pad = ic >= 16 ? (double)((ic + 15) / 16 * 16) / (double)ic : 1.0;
        real += macs;
        padded += macs * oc_pad * ic_pad;
    }
    /* ... when such layers do most of the work: ResNeXt's and RegNet's
     * grouped 3x3 layers do not, and the blocked 1x1 layers around them
     * ran faster (tv_resnext50 10.0 ms against 10.5-11.4 channels-last) */
    int unblocked = unblocked_macs > 0.5 * all;
    b->conv_any = unblocked || (real > 0 && padded > real * (grouped ? 1.3 : 1.25));
    if (unblocked)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "convolutions channels-last: oneDNN has no channel-blocked "
                                 "kernel for a grouped convolution");
    else if (b->conv_any)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "convolutions channels-last: blocks of 16 channels would "
                                 "pad their work %.2fx",
                                 padded / real);
    return b->conv_any;
}

static int64_t odnn_channel_block(const dnnl_memory_desc_t *md);

/* Whether 1-D pointwise convolution N reads its source as a channels-last
 * view (a transformer's [B, S, C] hidden states transposed to [B, C, S]:
 * SqueezeBERT's grouped 1x1 layers, a Conformer's pointwise ones). Asked
 * for channel blocks, each such layer had a reorder in and one out:
 * SqueezeBERT of the HF zoo 72 primitives, 0.605 ms; left to oneDNN
 * (brgconv reading the view as it is), 45 and 0.536 (best of 4 medians
 * of 30, alternating). Wider kernels over such a view (wav2vec2's
 * feature extractor and positional convolution) ran 2-3% slower so and
 * stay blocked. */
static int odnn_conv_src_last(struct odnn_build *b, size_t n, const dnnl_memory_desc_t *src)
{
    int vi = odnn_value_of(b, odnn_in(b->v, n, 0));
    struct odnn_tinfo w;
    int last = src->ndims == 3 && vi >= 0 && b->c->values[vi].defined &&
               odnn_channel_block(&b->c->values[vi].md) == -1 &&
               odnn_tensor(b->v, odnn_in(b->v, n, 1), &w) && w.ndim == 3 && w.dims[2] == 1;
    if (last)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': its source is a channels-last view: the "
                                 "convolution asked to read it as it is",
                                 onednn_host->graph->node_name(b->v, n));
    return last;
}

/* Left to choose (dnnl_format_tag_any), oneDNN 2.6 on AVX-512 gives an f32
 * convolution the brgemm kernels in nhwc. At one image and the small
 * spatial sizes of mobile nets, the kernels for the channel-blocked layout
 * (nChw16c: jit_1x1, jit_dw, jit) are faster: mobilenet_v2 runs about 6%
 * quicker with them at 2 threads. So on AVX-512 this first asks for that
 * layout for the activations (the source only where it has a full block
 * of channels: the first convolution of a net reads 3 planes as they
 * are), and keeps the primitive unless only a reference kernel took it.
 * Returns dnnl_success with *PD set, or anything else to say "use any";
 * CD is scratch. The choice depends only on the shapes and the ISA, which
 * the blob header records, so import re-creates the same plan. */
static dnnl_status_t odnn_conv_blocked(struct odnn_build *b, int src_last,
                                       dnnl_convolution_desc_t *cd,
                                       const dnnl_memory_desc_t *src_any,
                                       const dnnl_memory_desc_t *wei_md,
                                       const dnnl_memory_desc_t *bias_md,
                                       const dnnl_memory_desc_t *dst_any, const dnnl_dims_t strides,
                                       const dnnl_dims_t dil, const dnnl_dims_t pl,
                                       const dnnl_dims_t pr, const_dnnl_post_ops_t po,
                                       dnnl_primitive_desc_t *pd)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    if ((isa & dnnl_cpu_isa_avx512_core) != dnnl_cpu_isa_avx512_core)
        return dnnl_unimplemented;
    if (odnn_conv_layout_any(b))
        return dnnl_unimplemented;
    int nd = src_any->ndims;
    if (src_last) {
        /* channels-last in and out when a jit kernel takes it so (brgconv
         * did for SqueezeBERT's 64 channels a group; for 16 a group it
         * took none, and left to choose oneDNN gave a layout that cost
         * three reorders), else blocked as below */
        dnnl_memory_desc_t s_md, d_md;
        const char *impl = NULL;
        if (dnnl_memory_desc_init_by_tag(&s_md, nd, src_any->dims, src_any->data_type,
                                         dnnl_acb) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&d_md, nd, dst_any->dims, dst_any->data_type,
                                         dnnl_acb) == dnnl_success &&
            dnnl_dilated_convolution_forward_desc_init(cd, dnnl_forward_inference,
                                                       dnnl_convolution_direct, &s_md, wei_md,
                                                       bias_md, &d_md, strides, dil, pl,
                                                       pr) == dnnl_success &&
            odnn_conv_pd_fast(b, cd, po, pd) == dnnl_success) {
            if (dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, &impl) ==
                    dnnl_success &&
                impl != NULL && strncmp(impl, "brg", 3) == 0)
                return dnnl_success;
            dnnl_primitive_desc_destroy(*pd);
            *pd = NULL;
        }
    }
    /* bf16 with AMX: oneDNN's AMX kernels (brgconv) take nhwc, which it
     * picks when left to choose (odnn_conv_bf16_pays). */
    if (src_any->data_type == dnnl_bf16 && odnn_bf16_everywhere())
        return dnnl_unimplemented;
    dnnl_memory_desc_t src_md = *src_any, dst_md;
    dnnl_format_tag_t tag = nd == 3 ? dnnl_aBc16b : nd == 4 ? dnnl_aBcd16b : dnnl_aBcde16b;
    if (src_any->dims[1] >= 16)
        dnnl_memory_desc_init_by_tag(&src_md, nd, src_any->dims, src_any->data_type, tag);
    dnnl_memory_desc_init_by_tag(&dst_md, nd, dst_any->dims, dst_any->data_type, tag);
    dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(
        cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, wei_md, bias_md, &dst_md,
        strides, dil, pl, pr);
    return ds != dnnl_success ? ds : odnn_conv_pd_fast(b, cd, po, pd);
}

/* Forgets slices no step took. */
static void odnn_wslice_drop(struct odnn_build *b)
{
    if (b->wslice.pd != NULL)
        dnnl_primitive_desc_destroy(b->wslice.pd);
    if (b->wslice.pd_tail != NULL)
        dnnl_primitive_desc_destroy(b->wslice.pd_tail);
    b->wslice.pd = b->wslice.pd_tail = NULL;
}

/* Whether PART lays out its images as FULL does (same blocking, strides
 * and padding; the batch dimension outermost and unblocked), PART holding
 * fewer of them: a slice of FULL's buffer is PART. */
static int odnn_batch_slice_of(const dnnl_memory_desc_t *full, const dnnl_memory_desc_t *part)
{
    if (full->format_kind != dnnl_blocked || full->ndims < 1)
        return 0;
    const dnnl_blocking_desc_t *bk = &full->format_desc.blocking;
    for (int i = 0; i < bk->inner_nblks; i++)
        if (bk->inner_idxs[i] == 0)
            return 0;
    for (int i = 1; i < full->ndims; i++)
        if (bk->strides[0] < bk->strides[i])
            return 0;
    dnnl_memory_desc_t m = *full;
    m.dims[0] = m.padded_dims[0] = part->dims[0];
    return dnnl_memory_desc_equal(&m, part);
}

/* N, or a divisor of BATCH between N/2 and N (slices of one size). */
static int64_t odnn_slice_size(int64_t batch, int64_t n)
{
    for (int64_t d = n; d >= 1 && 2 * d >= n; d--)
        if (batch % d == 0)
            return d;
    return n;
}

/* A Winograd convolution whose scratchpad over the whole batch (FULL_SCRATCH
 * bytes, for FULL) is over the cap, in slices of the batch: oneDNN's
 * kernel transforms every image at once, so its scratchpad grows with the
 * batch while its speed per image does not. Makes the descriptors of a
 * slice (at most ODNN_WINO_MAX_SCRATCH) and of the remainder into
 * B->wslice for the step (odnn_add_step; the weights take the slice's
 * layout, odnn_weighted_step) and returns 1; 0 when the batch is 1, a
 * post-op reads a tensor of its own (it would have to be sliced too), or a
 * slice's source or destination layout is not a slice of the whole's. */
static int odnn_wino_slices(struct odnn_build *b, const dnnl_memory_desc_t *src_any,
                            const dnnl_memory_desc_t *wei_md, const dnnl_memory_desc_t *bias_md,
                            const dnnl_memory_desc_t *dst_any, const dnnl_dims_t strides,
                            const dnnl_dims_t dil, const dnnl_dims_t pl, const dnnl_dims_t pr,
                            const_dnnl_post_ops_t po, const_dnnl_primitive_desc_t full,
                            size_t full_scratch, const char *name)
{
    int64_t batch = src_any->dims[0];
    int sum = 0;
    for (int i = 0; po != NULL && i < dnnl_post_ops_len(po); i++) {
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(po, i);
        if (kind == dnnl_binary)
            return 0;
        sum |= kind == dnnl_sum;
    }
    if (batch < 2 || b->wslice.pd != NULL)
        return 0;
    const dnnl_memory_desc_t *fsrc = dnnl_primitive_desc_query_md(full, dnnl_query_src_md, 0);
    const dnnl_memory_desc_t *fdst = dnnl_primitive_desc_query_md(full, dnnl_query_dst_md, 0);
    int64_t want =
        (int64_t)(0.95 * (double)batch * (double)ODNN_WINO_MAX_SCRATCH / (double)full_scratch);
    dnnl_primitive_desc_t part[2] = {NULL, NULL};
    int64_t n = want < 1 ? 1 : want >= batch ? batch - 1 : want;
    /* Slices of one size where a divisor of the batch is near (oneDNN lays
     * the weights out per minibatch: a remainder of another size may want
     * another layout, and they are laid out once); else the last slice
     * ends at the batch's end, overlapping the one before (those images
     * computed twice, the same), unless a sum post-op adds to what is
     * there; else a remainder of its own size. */
    n = odnn_slice_size(batch, n);
    for (int k = 0; k < 2; k++) {
        /* k 0: slices of N, shrunk until one fits; k 1: the remainder */
        int64_t count = k == 0 ? n : batch % n;
        if (k == 1 && (count == 0 || !sum))
            break;
        for (int tries = 0; tries < 4 && part[k] == NULL && count >= 1; tries++) {
            dnnl_memory_desc_t src = *src_any, dst = *dst_any;
            src.dims[0] = dst.dims[0] = count;
            dnnl_convolution_desc_t cd;
            dnnl_primitive_desc_t pd = NULL;
            if (dnnl_dilated_convolution_forward_desc_init(
                    &cd, dnnl_forward_inference, dnnl_convolution_winograd, &src, wei_md, bias_md,
                    &dst, strides, dil, pl, pr) != dnnl_success ||
                (name != NULL ? odnn_pd_named(b, &cd, po, name, &pd)
                              : odnn_conv_pd_fast(b, &cd, po, &pd)) != dnnl_success)
                break;
            const dnnl_memory_desc_t *smd =
                dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
            size_t sbytes = smd != NULL ? dnnl_memory_desc_get_size(smd) : 0;
            if (k == 0 && sbytes > ODNN_WINO_MAX_SCRATCH && count > 1) {
                dnnl_primitive_desc_destroy(pd);
                count = n = odnn_slice_size(batch, count * 3 / 4 > 0 ? count * 3 / 4 : 1);
                continue;
            }
            if (!odnn_batch_slice_of(fsrc, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0)) ||
                !odnn_batch_slice_of(fdst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0)) ||
                (k == 1 && !dnnl_memory_desc_equal(
                               dnnl_primitive_desc_query_md(part[0], dnnl_query_weights_md, 0),
                               dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0)))) {
                dnnl_primitive_desc_destroy(pd);
                break;
            }
            part[k] = pd;
        }
        if (part[k] == NULL) {
            if (part[0] != NULL)
                dnnl_primitive_desc_destroy(part[0]);
            return 0;
        }
    }
    b->wslice.slice = n;
    b->wslice.tail = part[1] != NULL ? batch % n : 0;
    b->wslice.pd = part[0];
    b->wslice.pd_tail = part[1];
    return 1;
}

/* The most output elements (batch x spatial) of the convolutions of the
 * view that take constant T as their weights. */
static int64_t odnn_conv_most_outputs(const pl_graph_view *v, int64_t t)
{
    const pl_graph_api *g = onednn_host->graph;
    int64_t most = 0;
    for (size_t k = 0; k < g->node_count(v); k++) {
        if (g->node_input_count(v, k) < 2 || odnn_in(v, k, 1) != t ||
            !odnn_op_is(v, (int64_t)k, "Conv"))
            continue;
        struct odnn_tinfo y;
        if (!odnn_tensor(v, odnn_out(v, k, 0), &y) || y.ndim < 3)
            continue;
        int64_t e = y.dims[0];
        for (int d = 2; d < y.ndim; d++)
            e *= y.dims[d];
        most = e > most ? e : most;
    }
    return most;
}

/* Whether convolution N, of output descriptor Y, may take Winograd's
 * weights layout. Its copy of the weights is 1.8-4x their bytes and depends on the
 * layer's shapes, so weights shared by convolutions at several scales (a
 * detection head run over each level of a feature pyramid) would get one
 * copy per scale: RetinaNet's head, 26 MB of weights, held 180 MB. Only
 * the scales with at least a quarter of the largest one's outputs take
 * Winograd (they tend to share one layout); the smaller ones, whose work
 * is a sixteenth or less, share the direct layout. */
static int odnn_wino_scale_ok(struct odnn_build *b, size_t n, const dnnl_memory_desc_t *y)
{
    int64_t t = odnn_in(b->v, n, 1);
    if (t < 0 || (size_t)t >= b->u.n_tensors || b->u.count[t] < 2 || y->ndims < 3)
        return 1;
    int64_t e = y->dims[0];
    for (int d = 2; d < y->ndims; d++)
        e *= y->dims[d];
    if (4 * e >= odnn_conv_most_outputs(b->v, t))
        return 1;
    if (!b->wino_quiet)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s': direct, not Winograd: its weights serve a convolution "
                             "with over 4x its outputs",
                             onednn_host->graph->node_name(b->v, n));
    return 0;
}

/* oneDNN's F(4x4, 3x3) kernel computes the output's 4x4 tiles (of every
 * image) in register blocks whose size divides their count, and the
 * largest such divisor up to 31 is what this gives. Timed alone (2
 * threads, against the direct kernel, `plinth bench`), its speed follows
 * that block, not the map's size: 32 -> 64 over 136x136 (34 x 34 tiles,
 * block 17) 1.6x faster, 150x150 (38 x 38: 19) 1.5x, 32 -> 48 over
 * 124x124 (31 x 31: 31) 1.4x, but 147x147 and 148x148 (37 x 37 tiles: 1)
 * 0.65-0.7x, and so 32 -> 32, 24 -> 48, 40 -> 40 and 48 -> 48 at 147
 * (0.5-0.7x) and 32 -> 48 at 164 (41 x 41: 0.64x); over 148 rows, 8 to 28
 * columns wide (blocks 2, 3, 5, 7) 0.89-0.95x, 44 (11) 1.12x, 64 (16)
 * 1.4x. Inception v3's stem (299x299 in: two layers over 147x147) lost
 * 2.2 ms of its 29 so. */
#define ODNN_WINO_MIN_TILE_BLOCK 8

static int64_t odnn_wino_tile_block(int64_t mb, int64_t oh, int64_t ow)
{
    int64_t n = (mb > 0 ? mb : 1) * ((oh + 3) / 4) * ((ow + 3) / 4), best = 1;
    for (int64_t d = 2; d <= 31; d++)
        if (n % d == 0)
            best = d;
    return best;
}

/* Whether oneDNN's Winograd kernel beats its direct one on a 3x3, stride 1
 * layer of IC channels in, OC out and an OH x OW output (AVX-512): 0 no,
 * 1 the first Winograd implementation oneDNN offers, 4 only its F(4x4,
 * 3x3) kernel. From 64 channels in and out and a 7x7 output, the first
 * (F(2x2) where it applies, else F(4x4)): resnet18, 64 to 512 channels,
 * 12 ms against 17. Below 64 the transforms, which cost in proportion to
 * IC + OC while the saving goes with IC * OC, pay only over many output
 * tiles, and only F(4x4) reliably: timed alone, 2 threads, against the
 * direct kernel, F(4x4) ran 32 -> 64 at 77x77 1.8x faster, 48 -> 192 at
 * 24x24 2.2x, 24 -> 24 and 32 -> 32 at 56x56 1.5x, 48 -> 48 at 28x28
 * 1.2x, but 24 -> 48 at 28x28 0.95x, 32 -> 32 at 28x28 0.77x and 16 ->
 * 16 at any size 0.3-0.5x; F(2x2) was erratic there (32 -> 32 from 79x79
 * unpadded 0.5x, padded 77x77 1.1x), and the small zoo's vgg11_s (8-32
 * channels) ran 0.22 ms with it against 0.14. So below 64 channels: F(4x4)
 * with IC * OC / (IC + OC) of at least 20 over a 24x24 output or more, or
 * of at least 12 (and 24 channels each side) over 56x56 or more, and only
 * where the output's tiles block well (odnn_wino_tile_block). */
static int odnn_wino_pays(int64_t mb, int64_t ic, int64_t oc, int64_t oh, int64_t ow)
{
    if (ic <= 0 || oc <= 0 || oh < 7 || ow < 7)
        return 0;
    if (ic >= 64 && oc >= 64)
        return 1;
    double h = (double)ic * (double)oc / (double)(ic + oc), px = (double)oh * (double)ow;
    if (((px >= 24 * 24 && h >= 20) || (px >= 56 * 56 && h >= 12 && ic >= 24 && oc >= 24)) &&
        odnn_wino_tile_block(mb, oh, ow) >= ODNN_WINO_MIN_TILE_BLOCK)
        return 4;
    return 0;
}

/* How much Winograd's weight copies may add to a subgraph's constants with
 * `winograd = auto` (a fraction of their bytes), except for weights that
 * serve at least ODNN_WINO_ALWAYS output pixels (times the multiplies
 * saved) per byte they add, which always take it. */
#define ODNN_WINO_BUDGET 0.85
#define ODNN_WINO_ALWAYS 1000.0
/* ... and at least this many bytes: copies of a few megabytes are not what
 * makes a process large (a single 64-channel layer's is 256 KiB). */
#define ODNN_WINO_BUDGET_MIN ((size_t)16 << 20)

/* One weights tensor whose convolutions may take Winograd: its bytes, the
 * bytes its Winograd copy adds, and the work saved per byte added. */
struct odnn_wino_cand {
    int64_t t;
    size_t extra;
    double value;
};

static int odnn_wino_cand_cmp(const void *pa, const void *pb)
{
    const struct odnn_wino_cand *a = pa, *b = pb;
    if (a->value != b->value)
        return a->value > b->value ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* Whether convolution K reads constant f32 weights (their bytes in
 * *BYTES), and with OUT its output (N, OH, OW; of its phases when dilated)
 * when it is a layer Winograd could take: 3x3, stride 1, one group,
 * channels and output that odnn_wino_pays takes. */
static int odnn_wino_layer(const pl_graph_view *v, size_t k, size_t *bytes, int64_t out[3])
{
    struct odnn_tinfo w, y;
    out[0] = 0;
    if (!odnn_op_is(v, (int64_t)k, "Conv") || !odnn_tensor(v, odnn_in(v, k, 1), &w) ||
        w.cdata == NULL || !w.f32)
        return 0;
    *bytes = w.cbytes;
    const int64_t *a;
    size_t na = odnn_attr_ints(v, k, "strides", &a);
    for (size_t i = 0; i < na; i++)
        if (a[i] != 1)
            return 1;
    /* a dilated one runs by phase (odnn_phase_conv): dh * dw images of
     * the output's rows and columns of one residue each */
    int64_t dil[2] = {1, 1};
    na = odnn_attr_ints(v, k, "dilations", &a);
    for (size_t i = 0; i < na; i++)
        if (a[i] < 1 || i >= 2)
            return 1;
        else
            dil[i] = a[i];
    if (w.ndim != 4 || w.dims[2] != 3 || w.dims[3] != 3 || odnn_attr_int(v, k, "group", 1) != 1 ||
        !odnn_tensor(v, odnn_out(v, k, 0), &y) || !y.known || y.ndim != 4)
        return 1;
    int64_t oh = (y.dims[2] + dil[0] - 1) / dil[0], ow = (y.dims[3] + dil[1] - 1) / dil[1];
    if (!odnn_wino_pays(y.dims[0] * dil[0] * dil[1], w.dims[1], w.dims[0], oh, ow))
        return 1;
    out[0] = y.dims[0] * dil[0] * dil[1];
    out[1] = oh;
    out[2] = ow;
    return 1;
}

/* Winograd's weights are a copy alpha^2 / 9 times the layer's (F(2x2, 3x3)
 * 16/9, F(4x4, 3x3) 4x), held beside the direct copy when the same weights
 * also serve a smaller scale directly. With every layer that could take it,
 * RetinaNet at 320x320 held 165 MB of Winograd copies for 130 MB of weights
 * (peak RSS 416 MiB against ONNX Runtime's 363-372). With `winograd = auto`
 * the copies may add at most ODNN_WINO_BUDGET of the subgraph's constant
 * bytes (or ODNN_WINO_BUDGET_MIN): the weights whose copy saves the most
 * work per byte added go first (the output pixels it serves, times the
 * multiplies saved, over the bytes added: F(2x2) saves 5/9 for 7/9 added,
 * F(4x4) 3/4 for 3), those that do not fit stay direct, and those above
 * ODNN_WINO_ALWAYS take it whatever the budget (a detector's RoI heads:
 * Keypoint R-CNN's eight 512-channel layers over 14x14 RoIs ran 1.44x
 * slower without; they are a small subgraph of their own, whose budget is
 * small). The kernel oneDNN will pick is guessed: F(4x4) below 64
 * channels (odnn_wino_pays), else F(2x2) for weights under 1 MiB or one
 * image of at most 14x14, else F(4x4). Called before the
 * build takes any constant (it reads their sizes), so a blob's import
 * decides alike. `winograd = all` skips the budget. */
static int odnn_wino_beats_bf16(struct odnn_build *b, size_t n);
static dnnl_data_type_t odnn_conv_dt(struct odnn_build *b, size_t n);

static pl_status *odnn_wino_budget(struct odnn_build *b)
{
    b->wino_over = NULL;
    /* with precision = bf16, only the layers that stay f32: for F(4x4)
     * without AMX (odnn_wino_before_bf16), those AMX does not take with it
     * (odnn_conv_dt) */
    if (b->ctx->winograd != 1 || (b->ctx->bf16 && !onednn_has_avx512()))
        return NULL;
    const pl_graph_view *v = b->v;
    size_t nn = onednn_host->graph->node_count(v), nt = b->u.n_tensors;
    int64_t *px = onednn_host->host_alloc(b->ctx->host_ctx, 3 * nt * sizeof *px + 1, 0);
    uint8_t *flags = onednn_host->host_alloc(b->ctx->host_ctx, 2 * nt + 1, 0);
    struct odnn_wino_cand *cand =
        onednn_host->host_alloc(b->ctx->host_ctx, nt * sizeof *cand + 1, 0);
    if (px == NULL || flags == NULL || cand == NULL) {
        odnn_free(b->ctx, px);
        odnn_free(b->ctx, flags);
        odnn_free(b->ctx, cand);
        return odnn_oom();
    }
    /* per tensor: the most pixels of one of its layers, those of its
     * Winograd layers, the largest spatial size; in the base, read directly */
    int64_t *most = px, *wino = px + nt, *spatial = px + 2 * nt;
    uint8_t *counted = flags, *direct = flags + nt;
    memset(px, 0, 3 * nt * sizeof *px);
    memset(flags, 0, 2 * nt);
    size_t total = 0, n_cand = 0;
    for (size_t k = 0; k < nn; k++) /* the budget's base: every constant, once */
        for (size_t i = 0; i < onednn_host->graph->node_input_count(v, k); i++) {
            int64_t t = odnn_in(v, k, i);
            struct odnn_tinfo c;
            if (t >= 0 && (size_t)t < nt && !counted[t] && odnn_tensor(v, t, &c) && c.cdata) {
                counted[t] = 1;
                total += c.cbytes;
            }
        }
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < nn; k++) {
            size_t bytes = 0;
            int64_t o[3], t = odnn_in(v, k, 1);
            if (t < 0 || (size_t)t >= nt || !odnn_wino_layer(v, k, &bytes, o))
                continue;
            if (b->ctx->bf16 && o[0] > 0 &&
                (odnn_bf16_everywhere() ? odnn_conv_dt(b, k) != dnnl_f32
                                        : !odnn_wino_beats_bf16(b, k)))
                o[0] = 0; /* computes in bf16 instead: read directly */
            int64_t e = o[0] * o[1] * o[2];
            if (pass == 0) {
                most[t] = e > most[t] ? e : most[t];
            } else if (e > 0 && 4 * e >= most[t]) {
                wino[t] += e; /* the scales odnn_wino_scale_ok lets through */
                int64_t sp = o[0] == 1 ? o[1] * o[2] : INT64_MAX;
                spatial[t] = sp > spatial[t] ? sp : spatial[t];
            } else {
                direct[t] = 1;
            }
        }
    for (size_t t = 0; t < nt; t++) {
        if (wino[t] == 0)
            continue;
        struct odnn_tinfo w;
        odnn_tensor(v, (int64_t)t, &w);
        int four = (b->ctx->bf16 && !odnn_bf16_everywhere()) || /* odnn_wino_beats_bf16 */
                   (w.cbytes >= ((size_t)1 << 20) && spatial[t] > 196) ||
                   (w.ndim == 4 && (w.dims[0] < 64 || w.dims[1] < 64)); /* odnn_wino_pays */
        double alpha2 = four ? 36 : 16, saved = four ? 0.75 : 5.0 / 9;
        double added = alpha2 / 9 - (direct[t] ? 0 : 1);
        cand[n_cand++] = (struct odnn_wino_cand){(int64_t)t, (size_t)((double)w.cbytes * added),
                                                 (double)wino[t] * saved / added};
    }
    qsort(cand, n_cand, sizeof *cand, odnn_wino_cand_cmp);
    size_t budget = (size_t)(ODNN_WINO_BUDGET * (double)total), spent = 0, over = 0;
    budget = budget > ODNN_WINO_BUDGET_MIN ? budget : ODNN_WINO_BUDGET_MIN;
    memset(flags, 0, nt);
    for (size_t i = 0; i < n_cand; i++) {
        if (cand[i].value >= ODNN_WINO_ALWAYS || spent + cand[i].extra <= budget)
            spent += cand[i].extra;
        else
            flags[cand[i].t] = 1, over++;
    }
    odnn_free(b->ctx, px);
    odnn_free(b->ctx, cand);
    if (over == 0) {
        odnn_free(b->ctx, flags);
        return NULL;
    }
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "Winograd weight budget: %zu of %zu weights tensors take it, "
                             "adding %zu bytes to %zu of constants (at most %zu)",
                             n_cand - over, n_cand, spent, total, budget);
    b->wino_over = flags;
    return NULL;
}

/* Whether F(4x4, 3x3) for convolution descriptor CD (one image: no
 * slices) would want a scratchpad beyond ODNN_WINO_MAX_SCRATCH_WHOLE, as
 * odnn_conv_winograd would find after making it. Asked of its forward
 * training kernel, whose scratchpad is the inference kernel's, byte for
 * byte (64 -> 32 at 901x161: 131523 KB both; 512 -> 512 at 14x14 and 4 x
 * 20x20, 32 -> 32 at 512x512, 45312, 57408, 8592 KB both): oneDNN offers
 * its F(2x2, 3x3) kernel first, which takes inference only and plans its
 * blocks by trying every tile size, 5-7 ms for a map of 901x161 where the
 * training kernel answers in 0.1 (DNSMOS's 64 -> 32 layer, made only to
 * be refused, was a fifth of its session creation). */
static int odnn_wino_whole_too_big(struct odnn_build *b, const dnnl_convolution_desc_t *cd,
                                   const_dnnl_post_ops_t po)
{
    if (cd->src_desc.dims[0] >= 2)
        return 0;
    dnnl_convolution_desc_t td = *cd;
    td.prop_kind = dnnl_forward_training;
    dnnl_primitive_desc_t probe = NULL;
    if (odnn_pd_named(b, &td, po, "wino_4x3", &probe) != dnnl_success)
        return 0;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(probe, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd != NULL ? dnnl_memory_desc_get_size(smd) : 0;
    dnnl_primitive_desc_destroy(probe);
    return sbytes > ODNN_WINO_MAX_SCRATCH_WHOLE;
}

/* A Winograd descriptor asked for (the convolution CD with post-ops PO, of
 * kind KIND as odnn_wino_pays says it, made for an OpenMP team of TEAM) and
 * oneDNN's answer: PD (NULL when refused, DS then says why). */
struct odnn_wino_pre {
    dnnl_convolution_desc_t cd;
    dnnl_post_ops_t po;
    int kind, team;
    dnnl_status_t ds;
    dnnl_primitive_desc_t pd;
    int used; /* odnn_wino_pd answered from it */
};

static int odnn_po_same(const_dnnl_post_ops_t a, const_dnnl_post_ops_t b)
{
    int la = a != NULL ? dnnl_post_ops_len(a) : 0, lb = b != NULL ? dnnl_post_ops_len(b) : 0;
    if (la != lb)
        return 0;
    for (int i = 0; i < la; i++) {
        dnnl_primitive_kind_t k = dnnl_post_ops_get_kind(a, i);
        if (k != dnnl_post_ops_get_kind(b, i))
            return 0;
        if (k == dnnl_sum) {
            float sa, sb;
            if (dnnl_post_ops_get_params_sum(a, i, &sa) != dnnl_success ||
                dnnl_post_ops_get_params_sum(b, i, &sb) != dnnl_success || sa != sb)
                return 0;
        } else if (k == dnnl_eltwise) {
            float sa, aa, ba, sb, ab, bb;
            dnnl_alg_kind_t ka, kb;
            if (dnnl_post_ops_get_params_eltwise(a, i, &sa, &ka, &aa, &ba) != dnnl_success ||
                dnnl_post_ops_get_params_eltwise(b, i, &sb, &kb, &ab, &bb) != dnnl_success ||
                sa != sb || ka != kb || aa != ab || ba != bb)
                return 0;
        } else {
            return 0; /* not a Winograd post-op: never made ahead */
        }
    }
    return 1;
}

static int odnn_cd_same(const dnnl_convolution_desc_t *a, const dnnl_convolution_desc_t *b)
{
    if (a->prop_kind != b->prop_kind || a->alg_kind != b->alg_kind ||
        !dnnl_memory_desc_equal(&a->src_desc, &b->src_desc) ||
        !dnnl_memory_desc_equal(&a->weights_desc, &b->weights_desc) ||
        !dnnl_memory_desc_equal(&a->bias_desc, &b->bias_desc) ||
        !dnnl_memory_desc_equal(&a->dst_desc, &b->dst_desc) ||
        a->accum_data_type != b->accum_data_type)
        return 0;
    int sr = a->src_desc.ndims - 2;
    for (int i = 0; i < sr; i++)
        if (a->strides[i] != b->strides[i] || a->dilates[i] != b->dilates[i] ||
            a->padding[0][i] != b->padding[0][i] || a->padding[1][i] != b->padding[1][i])
            return 0;
    return 1;
}

/* oneDNN's Winograd descriptor for CD with post-ops PO: F(4x4, 3x3) only
 * for KIND 4 (unless its scratchpad rules it out: odnn_wino_whole_too_big),
 * else the first Winograd kernel oneDNN offers; a real kernel only. What
 * odnn_wino_prefetch made ahead is taken from there (a copy: a layer
 * asked again without its post-ops finds it too). */
static dnnl_status_t odnn_wino_pd(struct odnn_build *b, const dnnl_convolution_desc_t *cd,
                                  const_dnnl_post_ops_t po, int kind, dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    int team = omp_get_max_threads();
    for (int i = 0; i < b->n_wpre; i++) {
        struct odnn_wino_pre *e = &b->wpre[i];
        if (e->kind != kind || e->team != team || !odnn_cd_same(&e->cd, cd) ||
            !odnn_po_same(e->po, po))
            continue;
        e->used = 1;
        if (e->pd == NULL)
            return e->ds != dnnl_success ? e->ds : dnnl_unimplemented;
        return dnnl_primitive_desc_clone(pd, e->pd);
    }
    if (kind == 4 && odnn_wino_whole_too_big(b, cd, po))
        return dnnl_unimplemented;
    return kind == 4 ? odnn_pd_named(b, cd, po, "wino_4x3", pd) : odnn_conv_pd_fast(b, cd, po, pd);
}

/* A 3x3, stride 1 convolution through oneDNN's Winograd F(4x4, 3x3)
 * kernel (AVX-512 only): 2.25x fewer multiplies than the direct one for
 * the same layer. Same contract as odnn_conv_blocked; refused (direct
 * instead) when oneDNN has no Winograd kernel for the shapes and post-ops,
 * when only a reference kernel took it, when node N's weights serve a
 * larger scale (odnn_wino_scale_ok), or when `winograd = no`. */
static dnnl_status_t odnn_conv_winograd(struct odnn_build *b, size_t n,
                                        dnnl_convolution_desc_t *cd,
                                        const dnnl_memory_desc_t *src_any,
                                        const dnnl_memory_desc_t *wei_md,
                                        const dnnl_memory_desc_t *bias_md,
                                        const dnnl_memory_desc_t *dst_any,
                                        const dnnl_dims_t strides, const dnnl_dims_t dil,
                                        const dnnl_dims_t pl, const dnnl_dims_t pr,
                                        const_dnnl_post_ops_t po, dnnl_primitive_desc_t *pd)
{
    if (!b->ctx->winograd || src_any->data_type != dnnl_f32 ||
        (b->ctx->bf16 && !onednn_has_avx512()) || wei_md->ndims != 4 ||
        wei_md->dims[2] != 3 ||
        wei_md->dims[3] != 3 ||
        strides[0] != 1 || strides[1] != 1 || dil[0] != 0 || dil[1] != 0)
        return dnnl_unimplemented;
    int kind = odnn_wino_pays(dst_any->dims[0], wei_md->dims[1], wei_md->dims[0],
                              dst_any->dims[2], dst_any->dims[3]);
    if (kind == 0 || !odnn_wino_scale_ok(b, n, dst_any))
        return dnnl_unimplemented;
    int64_t wt = odnn_in(b->v, n, 1);
    if (b->wino_over != NULL && wt >= 0 && (size_t)wt < b->u.n_tensors && b->wino_over[wt]) {
        if (!b->wino_quiet)
            onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': direct, not Winograd: its weights' Winograd copy "
                                 "is beyond the weight budget",
                                 onednn_host->graph->node_name(b->v, n));
        return dnnl_unimplemented;
    }
    dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(
        cd, dnnl_forward_inference, dnnl_convolution_winograd, src_any, wei_md, bias_md, dst_any,
        strides, dil, pl, pr);
    if (ds == dnnl_success)
        ds = odnn_wino_pd(b, cd, po, kind, pd);
    if (ds != dnnl_success)
        return ds;
    /* The kernel transforms the whole input and output before and after
     * its products: a scratchpad of 5-7 times the layer's activations,
     * where the direct kernel needs next to none. Runs share one
     * scratchpad of the largest need (plinth/work_pool.h), so one layer
     * over many images sets the process's size: Mask R-CNN's mask head,
     * 100 RoIs of 256 x 14 x 14, asked 134 MB (peak RSS 1097 MiB, 850
     * without Winograd anywhere). Above the cap the layer runs in slices
     * of the batch that fit (odnn_wino_slices), else whole below the
     * looser cap, else direct. */
    const dnnl_memory_desc_t *smd =
        ds == dnnl_success ? dnnl_primitive_desc_query_md(*pd, dnnl_query_scratchpad_md, 0) : NULL;
    size_t sbytes = smd != NULL ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes > ODNN_WINO_MAX_SCRATCH &&
        !odnn_wino_slices(b, src_any, wei_md, bias_md, dst_any, strides, dil, pl, pr, po, *pd,
                          sbytes, kind == 4 ? "wino_4x3" : NULL) &&
        sbytes > ODNN_WINO_MAX_SCRATCH_WHOLE) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
        return dnnl_unimplemented;
    }
    return ds;
}

static int odnn_pd_is_ref(const_dnnl_primitive_desc_t pd);
static int odnn_pd_is_gemm(const_dnnl_primitive_desc_t pd);

/* The fusion of (de)convolution N: its post-ops and the nodes they take
 * (odnn_follow over channel axis 1; FUSE 2: all of them, 1: no residual
 * sum, 0: none); 0 when out of memory. */
static int odnn_fuse_conv(struct odnn_build *b, size_t n, int has_bias, struct odnn_fuse *f,
                          int fuse, int low_rank)
{
    memset(f, 0, sizeof *f);
    f->low_rank = low_rank;
    f->bias = f->residual = -1;
    f->out = odnn_out(b->v, n, 0);
    f->no_residual = fuse < 2;
    if (dnnl_post_ops_create(&f->po) != dnnl_success)
        return 0;
    f->fused[f->n_fused++] = n;
    if (fuse > 0)
        odnn_follow(b, f, 1, has_bias);
    return 1;
}

/* A (de)convolution's descriptors: source and destination of X's and Y's
 * dims and weights of WND dims WD, all in CDT and left to oneDNN
 * (format any), an f32 bias of Y's channels, and window W in oneDNN's
 * terms (dilation - 1). */
struct odnn_conv_mds {
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_dims_t strides, dil, pl, pr;
};

static void odnn_conv_mds_init(struct odnn_conv_mds *c, const struct odnn_tinfo *x,
                               const struct odnn_tinfo *y, int wnd, const dnnl_dims_t wd,
                               dnnl_data_type_t cdt, const struct odnn_window *w)
{
    int nd = 2 + w->sr;
    dnnl_dims_t xd, yd, bd = {y->dims[1]};
    for (int i = 0; i < nd; i++)
        xd[i] = x->dims[i], yd[i] = y->dims[i];
    dnnl_memory_desc_init_by_tag(&c->src, nd, xd, cdt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&c->wei, wnd, wd, cdt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&c->bias, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&c->dst, nd, yd, cdt, dnnl_format_tag_any);
    for (int i = 0; i < w->sr; i++) {
        c->strides[i] = w->s[i];
        c->dil[i] = w->d[i] - 1;
        c->pl[i] = w->pl[i];
        c->pr[i] = w->pr[i];
    }
}

/* Whether oneDNN has no channel-blocked (nChw16c) kernel but its reference
 * one for grouped convolution N (X, weights W, Y, GROUP groups), as
 * odnn_conv_blocked would ask for it: then it runs channels-last (brgconv)
 * whichever layout its neighbours take, and the reorders around it cost
 * more than the blocked kernels save. ShuffleNet v1's 1x1 layers of 3 or 4
 * groups of 34-68 channels: 44 reorders a run (1.0 ms of its 3.0 under
 * ONEDNN_VERBOSE), 15 with the subgraph channels-last, the depthwise
 * layers then on brdgmm_dw (0.37 -> 0.23 ms); c2_shufflenet 2.8-3.0 ->
 * 2.4-2.8 ms (min 2.72-2.89 -> 2.23-2.50, `plinth bench`, 200 runs,
 * alternating). ResNeXt's 32-group 3x3 layers, a minority of its work,
 * keep the subgraph blocked (odnn_conv_layout_any weighs them). */
static int odnn_grouped_unblocked(struct odnn_build *b, size_t n, const struct odnn_tinfo *x,
                                  const struct odnn_tinfo *w, const struct odnn_tinfo *y,
                                  int64_t group)
{
    struct odnn_window win;
    char reason[ODNN_REASON] = "";
    if (group < 2 || x->dims[1] % group != 0 || w->dims[0] % group != 0 ||
        !odnn_window(b->v, n, "Conv", x, &w->dims[2], y, &win, reason))
        return 0;
    dnnl_dims_t wd;
    wd[0] = group, wd[1] = w->dims[0] / group;
    for (int i = 1; i < w->ndim; i++)
        wd[i + 1] = w->dims[i];
    struct odnn_conv_mds c;
    odnn_conv_mds_init(&c, x, y, w->ndim + 1, wd, dnnl_f32, &win);
    int nd = x->ndim;
    dnnl_format_tag_t tag = nd == 3 ? dnnl_aBc16b : nd == 4 ? dnnl_aBcd16b : dnnl_aBcde16b;
    if (x->dims[1] >= 16)
        dnnl_memory_desc_init_by_tag(&c.src, nd, c.src.dims, dnnl_f32, tag);
    dnnl_memory_desc_init_by_tag(&c.dst, nd, c.dst.dims, dnnl_f32, tag);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    int none = dnnl_dilated_convolution_forward_desc_init(
                   &cd, dnnl_forward_inference, dnnl_convolution_direct, &c.src, &c.wei, &c.bias,
                   &c.dst, c.strides, c.dil, c.pl, c.pr) != dnnl_success ||
               odnn_conv_pd_fast(b, &cd, NULL, &pd) != dnnl_success;
    if (pd != NULL) {
        const char *impl = "";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        none = impl == NULL || strstr(impl, "gemm") != NULL; /* im2col: no blocked kernel */
        dnnl_primitive_desc_destroy(pd);
    }
    return none;
}

/* A depthwise 3x3 stride-2 convolution fused into the 1x1 convolution
 * before it (oneDNN's depthwise post-op): its node, or -1. */
struct odnn_dw {
    int64_t node;
};

/* Whether the only reader of F's output is a depthwise 3x3 convolution
 * with stride 2, padding 1 and a constant bias (mobilenet's downsampling
 * blocks) that oneDNN can run as a post-op of the 1x1 convolution before
 * it: the 1x1's output, four times the depthwise one, then never goes
 * through memory. Stride 1 is not taken: oneDNN 2.6 runs that fusion only
 * in its reference kernel. */
static int odnn_dw_after(struct odnn_build *b, const struct odnn_fuse *f, struct odnn_dw *dw)
{
    const pl_graph_view *v = b->v;
    dw->node = -1;
    int64_t t = f->out, j = odnn_sole_reader(&b->u, t);
    char reason[ODNN_REASON] = "";
    if (j < 0 || b->done[j] || !odnn_op_is(v, j, "Conv") || odnn_in(v, (size_t)j, 0) != t ||
        !odnn_check_node(v, &b->u, (size_t)j, reason) || odnn_in(v, (size_t)j, 2) < 0)
        return 0;
    struct odnn_tinfo x, wt, y;
    odnn_tensor(v, t, &x);
    odnn_tensor(v, odnn_in(v, (size_t)j, 1), &wt);
    odnn_tensor(v, odnn_out(v, (size_t)j, 0), &y);
    const int64_t *a;
    char buf[32];
    if (wt.dims[1] != 1 || wt.dims[2] != 3 || wt.dims[3] != 3 || wt.dims[0] != x.dims[1] ||
        odnn_attr_int(v, (size_t)j, "group", 1) != x.dims[1] ||
        odnn_attr_ints(v, (size_t)j, "strides", &a) != 2 || a[0] != 2 || a[1] != 2 ||
        (odnn_attr_ints(v, (size_t)j, "dilations", &a) == 2 && (a[0] != 1 || a[1] != 1)) ||
        odnn_attr_ints(v, (size_t)j, "pads", &a) != 4 || a[0] != 1 || a[1] != 1 || a[2] != 1 ||
        a[3] != 1 ||
        pl_auto_pad_parse_cstr(odnn_attr_string(v, (size_t)j, "auto_pad", "NOTSET", buf,
                                                sizeof buf)) != PL_AUTO_PAD_NOTSET ||
        y.dims[2] != (x.dims[2] - 1) / 2 + 1 || y.dims[3] != (x.dims[3] - 1) / 2 + 1)
        return 0;
    dw->node = j;
    return 1;
}

/* odnn_weight for the bytes DATA of a graph constant (a layer's weights):
 * the weight laid out before from the same constant in the same layout
 * MD, when there is one (odnn_build's shared). The same calls in the same
 * order when importing, so a cached blob holds one copy too. */
static pl_status *odnn_shared_weight(struct odnn_build *b, const dnnl_memory_desc_t *md,
                                     const dnnl_memory_desc_t *src_md, const void *data,
                                     int64_t node, int *out)
{
    for (int i = 0; data != NULL && md != NULL && i < b->n_shared; i++) {
        int w = b->shared[i].weight;
        if (b->shared[i].data != data || b->shared[i].ndims != src_md->ndims ||
            memcmp(b->shared[i].dims, src_md->dims, sizeof(int64_t) * (size_t)src_md->ndims) != 0 ||
            !dnnl_memory_desc_equal(&b->c->weights[w].md, md))
            continue;
        *out = w;
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': its weights are an earlier layer's, shared",
                                 onednn_host->graph->node_name(b->v, (size_t)node));
        return NULL;
    }
    /* only Winograd layouts are slow to make (the others take a few ms and
     * would hold their constants longer for nothing) */
    b->defer_tensor = data != NULL && node >= 0 && md->format_kind == dnnl_format_kind_wino
                          ? odnn_in(b->v, (size_t)node, 1)
                          : -1;
    pl_status *st = odnn_weight(b, md, src_md, data, node, out);
    b->defer_tensor = -1;
    if (st != NULL)
        return st;
    if (data != NULL && md != NULL && b->n_shared < ODNN_SHARED_WEIGHTS) {
        b->shared[b->n_shared].data = data;
        b->shared[b->n_shared].ndims = src_md->ndims;
        memcpy(b->shared[b->n_shared].dims, src_md->dims,
               sizeof(int64_t) * (size_t)src_md->ndims);
        b->shared[b->n_shared].weight = *out;
        b->n_shared++;
    }
    return NULL;
}

/* The rest of a Conv or ConvTranspose once PD is made (or ST says why it
 * is not): the source in the layout PD wants, the weights (WEI_PLAIN over
 * WDATA, reordered once), the bias, the fused destination and the step of
 * KIND. Destroys PD. */
/* Value VI (of a tensor's rank) as primitive descriptor MD of a lower
 * rank sees it (odnn_conv_unit_width): an alias of the same bytes without
 * the unit dims, or VI itself when the ranks agree. */
static pl_status *odnn_rank_alias(struct odnn_build *b, int vi, const dnnl_memory_desc_t *md,
                                  size_t node, int *out)
{
    const dnnl_memory_desc_t *have = &b->c->values[vi].md;
    dnnl_memory_desc_t low;
    *out = vi;
    if (have->ndims == md->ndims)
        return NULL;
    if (dnnl_memory_desc_reshape(&low, have, md->ndims, md->dims) != dnnl_success)
        return odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no view of its source at rank %d",
                          onednn_host->graph->node_op(b->v, node),
                          onednn_host->graph->node_name(b->v, node), md->ndims);
    *out = odnn_alias_as(b, vi, &low, -1, 0, 0);
    return *out < 0 ? odnn_oom() : NULL;
}

/* odnn_emit_fused for a primitive PD that may run at a lower rank than
 * F's output tensor: the tensor's value takes the destination's layout at
 * the tensor's rank, and *OUT_DST is a view of it as PD writes it. */
static pl_status *odnn_emit_fused_rank(struct odnn_build *b, const struct odnn_fuse *f,
                                       const_dnnl_primitive_desc_t pd, size_t node, int *out_dst)
{
    const dnnl_memory_desc_t *dmd = odnn_pd_md(pd, DNNL_ARG_DST);
    struct odnn_tinfo yt;
    if (f->out < 0 || !odnn_tensor(b->v, f->out, &yt) || yt.ndim <= dmd->ndims)
        return odnn_emit_fused(b, f, pd, out_dst);
    dnnl_memory_desc_t full;
    dnnl_dims_t yd;
    for (int i = 0; i < yt.ndim; i++)
        yd[i] = yt.dims[i];
    if (dnnl_memory_desc_reshape(&full, dmd, yt.ndim, yd) != dnnl_success)
        return odnn_error(PL_CODE_INTERNAL,
                          "onednn: %s '%s': no view of its result at rank %d",
                          onednn_host->graph->node_op(b->v, node),
                          onednn_host->graph->node_name(b->v, node), yt.ndim);
    int dst = -1;
    pl_status *st = odnn_emit_fused_md(b, f, &full, &dst);
    if (st != NULL)
        return st;
    b->c->values[dst].defined = 1;
    *out_dst = odnn_alias_as(b, dst, dmd, -1, 0, 0);
    if (*out_dst < 0)
        return odnn_oom();
    b->c->values[*out_dst].merged = 1;
    return NULL;
}

static pl_status *odnn_weighted_step(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                     dnnl_primitive_desc_t pd, pl_status *st, uint32_t kind,
                                     const dnnl_memory_desc_t *wei_plain, const void *wdata,
                                     int64_t bias_t, const dnnl_memory_desc_t *bias_md,
                                     const struct odnn_dw *dw, int *out_dst)
{
    const pl_graph_view *v = b->v;
    int src = -1, wi = -1, bw = -1, dst = -1, dwi = -1, dwb = -1;
    if (st == NULL && dw != NULL && dw->node >= 0) {
        /* the fused depthwise convolution's weights and bias */
        struct odnn_tinfo dt, dbt;
        odnn_tensor(v, odnn_in(v, (size_t)dw->node, 1), &dt);
        odnn_tensor(v, odnn_in(v, (size_t)dw->node, 2), &dbt);
        dnnl_memory_desc_t dplain, dbias;
        dnnl_dims_t dd = {dt.dims[0], 1, 1, dt.dims[2], dt.dims[3]}, bd = {dt.dims[0]};
        dnnl_memory_desc_init_by_strides(&dplain, 5, dd, dnnl_f32, NULL);
        dnnl_memory_desc_init_by_tag(&dbias, 1, bd, dnnl_f32, dnnl_a);
        st = odnn_weight(b, odnn_pd_md(pd, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS), &dplain,
                         dt.cdata, dw->node, &dwi);
        if (st == NULL)
            st = odnn_weight(b, &dbias, &dbias, dbt.cdata, dw->node, &dwb);
    }
    /* A strided view (a Transpose from NHWC, as tf2onnx writes around
     * every convolution) is reordered straight into the layout the
     * primitive wants, not made dense first: one copy instead of two. */
    if (st == NULL)
        st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL)
        st = odnn_rank_alias(b, src, odnn_pd_md(pd, DNNL_ARG_SRC), n, &src);
    if (st == NULL)
        st = odnn_src_arg(b, pd, DNNL_ARG_SRC, src, n, &src);
    /* a convolution run in slices takes its weights as a slice's
     * primitive wants them (Winograd's layout depends on the batch) */
    const_dnnl_primitive_desc_t wpd = kind == ODNN_S_CONV && b->wslice.pd ? b->wslice.pd : pd;
    if (st == NULL)
        st = odnn_shared_weight(b, odnn_pd_md(wpd, DNNL_ARG_WEIGHTS), wei_plain, wdata,
                                (int64_t)n, &wi);
    if (st == NULL && bias_t >= 0) {
        struct odnn_tinfo bt;
        odnn_tensor(v, bias_t, &bt);
        st = odnn_weight(b, bias_md, bias_md, bt.cdata, (int64_t)n, &bw);
    }
    if (st == NULL)
        st = odnn_emit_fused_rank(b, f, pd, n, &dst);
    int s = -1;
    if (st == NULL)
        s = odnn_add_step(b, kind, pd, (int64_t)n, &st);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (s < 0)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
    if (bw >= 0)
        odnn_arg(b, s, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
    if (dwi >= 0) {
        odnn_arg(b, s, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, dwi);
        odnn_arg(b, s, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, ODNN_REF_WEIGHT, dwb);
    }
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    if (out_dst != NULL)
        *out_dst = dst;
    return odnn_fuse_args(b, s, f, (int64_t)n);
}

static dnnl_format_tag_t odnn_per_channel_blocking(const dnnl_memory_desc_t *md0, int nd,
                                                   const dnnl_dims_t yd, const dnnl_dims_t d1);

/* The bias (constant BIAS_T, or zeros when -1) and the fusion F of a
 * deconvolution, as a binary add after it: value SRC (what the
 * deconvolution wrote) + the per-channel bias, with F's post-ops, into F's
 * destination. oneDNN 2.6 computes a deconvolution as its convolution's
 * backward-data kernel (JIT), but adds the bias and applies the post-ops
 * in loops of its own that are neither vectorised nor blocked: a 64->32
 * channel 2x2 stride-2 ConvTranspose on a 64x64 map took 0.98 ms bare,
 * 2.9 ms with its bias and 18 ms with bias and ReLU (the cpu module: 1.5).
 * The binary primitive does both at the speed of memory. */
/* The binary add of a per-channel vector to a source in layout SMD with
 * F's post-ops, as odnn_deconv_epilogue makes it: its descriptor in *PD and
 * the vector's layout in *MD1 (and plain in *PLAIN). */
static pl_status *odnn_epilogue_pd(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                   const dnnl_memory_desc_t *smd, dnnl_memory_desc_t *md1,
                                   dnnl_memory_desc_t *plain, dnnl_primitive_desc_t *pd)
{
    int nd = smd->ndims;
    dnnl_dims_t d1;
    for (int i = 0; i < nd; i++)
        d1[i] = i == 1 ? smd->dims[1] : 1;
    dnnl_memory_desc_t dst_md;
    odnn_plain_md(plain, nd, d1);
    *md1 = *plain;
    dnnl_format_tag_t tag = odnn_per_channel_blocking(smd, nd, smd->dims, d1);
    if (tag != dnnl_format_tag_undef)
        dnnl_memory_desc_init_by_tag(md1, nd, d1, dnnl_f32, tag);
    dnnl_memory_desc_init_by_tag(&dst_md, nd, smd->dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_binary_desc_t bd;
    *pd = NULL;
    pl_status *st = odnn_dnnl(dnnl_binary_desc_init(&bd, dnnl_binary_add, smd, md1, &dst_md),
                              "binary descriptor", b->v, (int64_t)n);
    if (st == NULL)
        st = odnn_make_pd(b, &bd, f->po, n, pd);
    return st;
}

/* Whether a deconvolution's epilogue (odnn_deconv_epilogue) may write its
 * result DST over SRC, the deconvolution's own result, which it alone
 * reads: DST a temporary of SRC's layout (not the caller's buffer, no
 * residual in it) with no padding. Mask R-CNN's mask head held both, 100 x
 * 256 x 28 x 28 each: its arena went 160 -> 110 MB (the lower bound both
 * times). With padded blocks (4 channels in blocks of 16) oneDNN 2.6's
 * binary in place gave wrong results (onednn.conv_transpose). */
static int odnn_epilogue_in_place(const struct odnn_build *b, const struct odnn_fuse *f, int src,
                                  int dst)
{
    const struct odnn_value *d = &b->c->values[dst], *sv = &b->c->values[src];
    if (f->residual >= 0 || d->kind != ODNN_V_TEMP || sv->kind != ODNN_V_TEMP ||
        !dnnl_memory_desc_equal(&d->md, &sv->md))
        return 0;
    for (int i = 0; i < d->md.ndims; i++)
        if (d->md.padded_dims[i] != d->md.dims[i])
            return 0;
    return 1;
}

static pl_status *odnn_deconv_epilogue(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                       int src, int64_t bias_t)
{
    const pl_graph_view *v = b->v;
    dnnl_memory_desc_t smd = b->c->values[src].md;
    dnnl_memory_desc_t plain, md1;
    const void *data = NULL;
    float *zeros = NULL;
    if (bias_t >= 0) {
        struct odnn_tinfo bt;
        odnn_tensor(v, bias_t, &bt);
        data = bt.cdata;
    } else {
        zeros = onednn_host->host_alloc(b->ctx->host_ctx, sizeof *zeros * (size_t)smd.dims[1], 0);
        if (zeros == NULL)
            return odnn_oom();
        memset(zeros, 0, sizeof *zeros * (size_t)smd.dims[1]);
        data = zeros;
    }
    dnnl_primitive_desc_t pd = NULL;
    int wi = -1;
    pl_status *st = odnn_epilogue_pd(b, n, f, &smd, &md1, &plain, &pd);
    if (st == NULL && !odnn_is_plain(&smd) && odnn_pd_is_ref(pd)) {
        /* a blocked source oneDNN's binary has only its reference kernel
         * for (PP-OCR's detector head: one channel padded to a block of 8,
         * 320x448: 21 ms): plain */
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        st = odnn_plain(b, src, (int64_t)n, &src);
        if (st == NULL) {
            smd = b->c->values[src].md;
            st = odnn_epilogue_pd(b, n, f, &smd, &md1, &plain, &pd);
        }
    }
    if (st == NULL)
        st = odnn_weight(b, &md1, &plain, data, (int64_t)n, &wi);
    odnn_free(b->ctx, zeros);
    if (st != NULL) {
        if (pd)
            dnnl_primitive_desc_destroy(pd);
        return st;
    }
    int dst = -1, s = -1;
    if (st == NULL)
        st = odnn_emit_fused(b, f, pd, &dst);
    if (st == NULL && odnn_epilogue_in_place(b, f, src, dst))
        b->c->values[dst].kind = -src - 100; /* an alias: see odnn_owner */
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_BINARY, pd, (int64_t)n, &st);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (s < 0)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC_0, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_SRC_1, ODNN_REF_WEIGHT, wi);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return odnn_fuse_args(b, s, f, (int64_t)n);
}

/* ConvTranspose as a oneDNN deconvolution in the layouts it picks, with
 * the bias and what follows fused like Conv. ONNX stores the weights
 * [C_in, C_out/group, kH, kW]; they are read through strides as oneDNN's
 * [group,] C_out/group, C_in/group, kH, kW and reordered once. f32 only
 * (precision = bf16 leaves it in f32). */
static pl_status *odnn_deconv(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, wt, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_in(v, n, 1), &wt);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int has_bias = odnn_in(v, n, 2) >= 0;
    int64_t group = odnn_attr_int(v, n, "group", 1);
    char reason[ODNN_REASON] = "";
    struct odnn_window w;
    if (!odnn_deconv_window(v, n, &x, &wt, &y, &w, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s", reason);
    struct odnn_fuse f;
    b->no_qdq_post = 1; /* the epilogue is a binary step: kept to what it serves */
    int fused = odnn_fuse_conv(b, n, has_bias, &f, 2, 0);
    b->no_qdq_post = 0;
    if (!fused)
        return odnn_oom();
    int64_t bias_t = has_bias ? odnn_in(v, n, 2) : f.bias;

    int64_t ic = wt.dims[0] / group, oc = wt.dims[1], kk = wt.dims[2] * wt.dims[3];
    dnnl_memory_desc_t wei_plain;
    dnnl_dims_t wd, ws;
    int wnd = group > 1 ? 5 : 4, g0 = group > 1;
    if (g0)
        wd[0] = group, ws[0] = ic * oc * kk;
    wd[g0] = oc, ws[g0] = kk;
    wd[g0 + 1] = ic, ws[g0 + 1] = oc * kk;
    wd[g0 + 2] = wt.dims[2], ws[g0 + 2] = wt.dims[3];
    wd[g0 + 3] = wt.dims[3], ws[g0 + 3] = 1;
    dnnl_memory_desc_init_by_strides(&wei_plain, wnd, wd, dnnl_f32, ws);
    struct odnn_conv_mds c;
    odnn_conv_mds_init(&c, &x, &y, wnd, wd, dnnl_f32, &w);
    /* The bare deconvolution; a bias or anything fused follows as a binary
     * add (odnn_deconv_epilogue). */
    int epilogue = bias_t >= 0 || f.n_post > 0 || f.residual >= 0;
    dnnl_deconvolution_desc_t dd;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_dilated_deconvolution_forward_desc_init(
        &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &c.src, &c.wei, NULL, &c.dst,
        c.strides, c.dil, c.pl, c.pr);
    pl_status *st = odnn_dnnl(ds, "deconvolution descriptor", v, (int64_t)n);
    if (!epilogue) {
        if (st == NULL)
            st = odnn_make_pd(b, &dd, f.po, n, &pd);
        dnnl_post_ops_destroy(f.po);
        return odnn_weighted_step(b, n, &f, pd, st, ODNN_S_DECONV, &wei_plain, wt.cdata, -1,
                                  NULL, NULL, NULL);
    }
    if (st == NULL)
        st = odnn_make_pd(b, &dd, NULL, n, &pd);
    struct odnn_fuse bare = {.bias = -1, .residual = -1, .out = -1, .n_fused = 1};
    bare.fused[0] = n;
    int tmp = -1;
    st = odnn_weighted_step(b, n, &bare, pd, st, ODNN_S_DECONV, &wei_plain, wt.cdata, -1, NULL,
                            NULL, &tmp);
    if (st == NULL)
        st = odnn_deconv_epilogue(b, n, &f, tmp, bias_t);
    dnnl_post_ops_destroy(f.po);
    return st;
}

static int odnn_bf16_readers(struct odnn_build *b, int64_t t);

/* The channels-last tag of an ND-dim tensor (N, C, spatial...). */
static dnnl_format_tag_t odnn_channels_last_tag(int nd)
{
    return nd == 3 ? dnnl_acb : nd == 4 ? dnnl_acdb : dnnl_acdeb;
}

/* Whether the module's own direct convolution (onednn_direct.c) takes this
 * Conv: f32, 1-D or 2-D with a kernel wider than 1x1 and constant weights,
 * one group with channels as odnn_direct_channels says or (2-D) groups of
 * 2 or 4 channels as odnn_direct_grouped says, on a CPU where oneDNN runs
 * AVX2 (direct_conv = auto). */
static int odnn_direct_fits(struct odnn_build *b, const struct odnn_tinfo *x,
                            const struct odnn_tinfo *wt, const struct odnn_tinfo *y, int64_t group,
                            dnnl_data_type_t cdt, const struct odnn_window *w)
{
    if (!b->ctx->direct || !odnn_direct_usable() || cdt != dnnl_f32 || wt->cdata == NULL ||
        !wt->f32 || !x->f32 || (w->sr != 1 && w->sr != 2) || x->ndim != 2 + w->sr ||
        y->ndim != 2 + w->sr)
        return 0;
    int64_t ic = x->dims[1], oc = y->dims[1];
    /* Grouped 1x1 of whole channel blocks as well, group by group:
     * oneDNN has no jit_1x1 kernel for groups, and on its generic jit:avx2
     * kernel ShuffleNet v1's 544 channels in 4 groups on 7x7 took 0.12
     * ms, 2.2x ONNX Runtime's whole model (that layer's model: 0.140 ms
     * on oneDNN, 0.073 here; two layers of 240 in 3 groups on 28x28 0.63
     * / 0.46; 24 a group even). Not wider kernels: there oneDNN's grouped
     * jit kernel is as fast or faster (two 3x3 layers, 2 groups of 32 on
     * 28x28: 0.34 ms / 0.37; 6 of 24 on 14x14: 0.16 / 0.21, a 16-channel
     * block half empty). */
    int one_by_one = w->k[0] * w->k[1] < 2;
    if (group == 1 ? one_by_one || !odnn_direct_channels(ic, oc)
                   : one_by_one ? !odnn_direct_dense_groups(ic, oc, group)
                                : w->sr != 2 || !odnn_direct_grouped(ic, oc, group))
        return 0;
    /* int offsets in the kernel: keep every plane and image far below 2^31 */
    int64_t pixels = 1, in_px = 1;
    for (int d = 2; d < x->ndim; d++)
        pixels *= y->dims[d], in_px *= x->dims[d] + w->pl[d - 2] + w->pr[d - 2] + 1;
    return pixels > 0 && in_px * 8 < ((int64_t)1 << 28) && pixels * 8 < ((int64_t)1 << 28) &&
           x->dims[0] * ic * in_px < ((int64_t)1 << 30);
}

/* Whether the post-ops PO are what the direct kernel applies itself (none,
 * or one clip, leaky ReLU, swish or sigmoid at scale 1), set into D. A
 * swish (SiLU) in the kernel costs an exponential in registers; as a
 * binary step after it, a pass over the result on oneDNN's AVX2 swish
 * (0.76 ns a value on one core). */
static int odnn_direct_act(const_dnnl_post_ops_t po, struct odnn_direct *d)
{
    int len = dnnl_post_ops_len(po);
    d->act = ODNN_ACT_NONE;
    if (len == 0)
        return 1;
    float scale = 0, alpha = 0, beta = 0;
    dnnl_alg_kind_t alg;
    if (len != 1 || dnnl_post_ops_get_kind(po, 0) != dnnl_eltwise ||
        dnnl_post_ops_get_params_eltwise(po, 0, &scale, &alg, &alpha, &beta) != dnnl_success ||
        scale != 1.0f)
        return 0;
    if (alg == dnnl_eltwise_relu && alpha == 0.0f) {
        d->act = ODNN_ACT_CLIP, d->lo = 0.0f, d->hi = INFINITY;
    } else if (alg == dnnl_eltwise_relu) {
        d->act = ODNN_ACT_LEAKY, d->alpha = alpha;
    } else if (alg == dnnl_eltwise_clip || alg == dnnl_eltwise_clip_v2) {
        d->act = ODNN_ACT_CLIP, d->lo = alpha, d->hi = beta;
    } else if (alg == dnnl_eltwise_bounded_relu) {
        d->act = ODNN_ACT_CLIP, d->lo = 0.0f, d->hi = alpha;
    } else if (alg == dnnl_eltwise_swish) { /* SiLU: x * sigmoid(alpha x) */
        d->act = ODNN_ACT_SWISH, d->alpha = alpha;
    } else if (alg == dnnl_eltwise_logistic) {
        d->act = ODNN_ACT_SIGMOID;
    } else {
        return 0;
    }
    return 1;
}

static pl_status *odnn_epilogue_pd(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                   const dnnl_memory_desc_t *smd, dnnl_memory_desc_t *md1,
                                   dnnl_memory_desc_t *plain, dnnl_primitive_desc_t *pd);

/* Whether F's fusion after a direct convolution writing Y runs fast: in
 * the kernel, or as a binary step oneDNN has a JIT kernel for (its
 * reference binary took 1.8 ms where the convolution took 0.03: a GELU
 * after a 1-D convolution, wav2vec's feature extractor). */
static int odnn_direct_epilogue_ok(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                   const struct odnn_tinfo *y, int sr, int narrow)
{
    struct odnn_direct probe;
    if (f->residual < 0 && odnn_direct_act(f->po, &probe))
        return 1;
    dnnl_dims_t yd;
    for (int i = 0; i < y->ndim; i++)
        yd[i] = y->dims[i];
    dnnl_memory_desc_t tmd, md1, plain;
    dnnl_memory_desc_init_by_tag(&tmd, y->ndim, yd, dnnl_f32,
                                 narrow    ? odnn_channels_last_tag(y->ndim)
                                 : sr == 2 ? dnnl_aBcd8b
                                           : dnnl_aBc8b);
    dnnl_primitive_desc_t pd = NULL;
    pl_status *st = odnn_epilogue_pd(b, n, f, &tmd, &md1, &plain, &pd);
    const char *impl = NULL;
    int ok = st == NULL &&
             dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
             !odnn_impl_is_ref(impl);
    if (st != NULL)
        onednn_host->status_free(st);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    return ok;
}

static pl_status *odnn_deconv_epilogue(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                       int src, int64_t bias_t);

/* A zeroed odnn_direct (the host's allocation) with the shape of a
 * convolution of X into Y through window W (1-D or 2-D), or NULL. */
static struct odnn_direct *odnn_direct_new(struct odnn_build *b, const struct odnn_tinfo *x,
                                           const struct odnn_tinfo *y,
                                           const struct odnn_window *w)
{
    struct odnn_direct *d = onednn_host->host_alloc(b->ctx->host_ctx, sizeof *d, 0);
    if (d == NULL)
        return NULL;
    memset(d, 0, sizeof *d);
    int two = w->sr == 2;
    d->n = (int)x->dims[0], d->ic = (int)x->dims[1], d->oc = (int)y->dims[1];
    d->ih = two ? (int)x->dims[2] : 1, d->iw = (int)x->dims[two ? 3 : 2];
    d->oh = two ? (int)y->dims[2] : 1, d->ow = (int)y->dims[two ? 3 : 2];
    d->kh = two ? (int)w->k[0] : 1, d->kw = (int)w->k[two ? 1 : 0];
    d->sh = two ? (int)w->s[0] : 1, d->sw = (int)w->s[two ? 1 : 0];
    d->dh = two ? (int)w->d[0] : 1, d->dw = (int)w->d[two ? 1 : 0];
    d->pt = two ? (int)w->pl[0] : 0, d->pl = (int)w->pl[two ? 1 : 0];
    return d;
}

struct odnn_own_pack {
    const struct odnn_direct *d;
    const float *w, *bias;
};

static void odnn_own_pack_run(const void *arg, float *out)
{
    const struct odnn_own_pack *p = arg;
    odnn_direct_pack(p->d, p->w, p->bias, out);
}

/* What odnn_direct_pack's output depends on besides the weights: the
 * kernel's packing parameters and the bias' values (NULL: zeros). */
static uint64_t odnn_own_pack_salt(const struct odnn_direct *d, const float *bias)
{
    int64_t key[] = {d->narrow, d->cb, d->kp, d->sw, d->wm, d->cg, d->groups, d->ic, d->oc,
                     d->kh, d->kw, bias != NULL};
    uint64_t h = PL_HASH_SEED;
    pl_hash_bytes(&h, key, sizeof key);
    if (bias != NULL)
        pl_hash_bytes(&h, bias, sizeof(float) * (size_t)d->oc);
    return h | 1; /* never 0, oneDNN's layouts */
}

/* The packed weights of the module's own convolution D (odnn_direct_pack
 * of WT, and of BIAS_T's values when it is not negative) as weight *WI:
 * packed straight into the weight, taken from the blob on import, or a
 * copy that another compile of the same constant packed the same way (a
 * staged session's tails at new map sizes, onednn_share.c). */
static pl_status *odnn_own_conv_weights(struct odnn_build *b, size_t n,
                                        const struct odnn_direct *d,
                                        const struct odnn_tinfo *wt, int64_t bias_t, int *wi)
{
    dnnl_dims_t pd_dims = {(dnnl_dim_t)odnn_direct_packed_floats(d)};
    dnnl_memory_desc_t pmd, smd;
    dnnl_memory_desc_init_by_tag(&pmd, 1, pd_dims, dnnl_f32, dnnl_a);
    dnnl_dims_t sd_dims = {(dnnl_dim_t)(wt->cbytes / sizeof(float))};
    dnnl_memory_desc_init_by_tag(&smd, 1, sd_dims, dnnl_f32, dnnl_a);
    struct odnn_tinfo bt = {0};
    if (bias_t >= 0)
        odnn_tensor(b->v, bias_t, &bt);
    struct odnn_own_pack pack = {d, wt->cdata, bt.cdata};
    struct odnn_packer packer = {odnn_own_pack_run, &pack, odnn_own_pack_salt(d, bt.cdata)};
    return odnn_weight_ex(b, &pmd, &smd, wt->cdata, (int64_t)n, &packer, wi);
}

/* The step of the module's own convolution D (which it owns from here on,
 * also when this fails) from value SRC with packed weight WI into a value
 * of layout TMD: F's destination when the kernel applies F's fusion
 * (OWN_EPILOGUE), else a temporary that one binary step takes on with the
 * bias and F's post-ops (odnn_deconv_epilogue). */
static pl_status *odnn_own_conv_step(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                     struct odnn_direct *d, int src, int wi,
                                     const dnnl_memory_desc_t *tmd, int own_epilogue,
                                     int64_t bias_t)
{
    pl_status *st = NULL;
    int s = odnn_add_direct(b, d, (int64_t)n, &st);
    if (s < 0)
        return st;
    int out = odnn_new_value(b, own_epilogue ? f->out : -1, ODNN_V_TEMP, tmd);
    if (out < 0)
        return odnn_oom();
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    if (!own_epilogue)
        return odnn_deconv_epilogue(b, n, f, out, bias_t);
    for (size_t k = 0; k < f->n_fused; k++)
        b->done[f->fused[k]] = 1;
    return NULL;
}

/* Whether the narrow kernel (onednn_narrow.c) takes this Conv: f32 with
 * constant weights, 1-D or 2-D at the rank oneDNN would run it (X, WT, Y
 * and W as odnn_conv_unit_width left them), where odnn_narrow_takes says
 * it beats oneDNN's 16-channel blocks (direct_conv = auto). */
static int odnn_narrow_fits(struct odnn_build *b, const struct odnn_tinfo *x,
                            const struct odnn_tinfo *wt, const struct odnn_tinfo *y, int64_t group,
                            dnnl_data_type_t cdt, const struct odnn_window *w)
{
    if (!b->ctx->direct || cdt != dnnl_f32 || wt->cdata == NULL || !wt->f32 || !x->f32 ||
        (w->sr != 1 && w->sr != 2) || x->ndim != 2 + w->sr || y->ndim != 2 + w->sr)
        return 0;
    int two = w->sr == 2;
    if (!odnn_narrow_takes(x->dims[1], y->dims[1], two ? w->k[0] : 1, w->k[two], w->d[two],
                           group))
        return 0;
    /* its per-thread strips (a tile's span of every kernel row) at most
     * 4M floats, which also keeps its int offsets within a row small */
    int64_t sw = w->s[two];
    if (sw < 1 || odnn_narrow_strip_floats(x->dims[1], y->dims[1], two ? w->k[0] : 1, w->k[two],
                                           sw) > ((int64_t)1 << 22))
        return 0;
    /* int pixel indices in the kernel; its offsets are size_t */
    int64_t in_px = 1, out_px = 1;
    for (int d = 2; d < x->ndim; d++)
        in_px *= x->dims[d], out_px *= y->dims[d];
    return in_px > 0 && out_px > 0 && in_px < ((int64_t)1 << 30) &&
           out_px < ((int64_t)1 << 30) && x->dims[0] < ((int64_t)1 << 20) &&
           w->pl[0] < (1 << 20) && (!two || w->pl[1] < (1 << 20));
}

/* Conv through the narrow kernel: the source as its writer laid it out
 * where that is channels last or blocked by 8 or 16 channels that divide
 * IC (else reordered to channels last), the destination channels last
 * (for one channel, the plain layout). X and Y are the graph's tensors
 * (the values' rank), XK, YK and W the shape the kernel runs. The kernel
 * adds the bias and applies a lone activation odnn_direct_act knows; any
 * other fusion goes into a binary step after it, as for odnn_direct_conv. */
static pl_status *odnn_narrow_conv(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                   const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                                   const struct odnn_tinfo *y, const struct odnn_tinfo *xk,
                                   const struct odnn_tinfo *yk, const struct odnn_window *w,
                                   int64_t bias_t)
{
    const pl_graph_view *v = b->v;
    struct odnn_direct *d = odnn_direct_new(b, xk, yk, w);
    if (d == NULL)
        return odnn_oom();
    d->narrow = 1;
    dnnl_dims_t xd, yd;
    for (int i = 0; i < x->ndim; i++)
        xd[i] = x->dims[i];
    for (int i = 0; i < y->ndim; i++)
        yd[i] = y->dims[i];
    int src = -1;
    pl_status *st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    dnnl_memory_desc_t smd, tmd;
    dnnl_memory_desc_init_by_tag(&smd, x->ndim, xd, dnnl_f32, odnn_channels_last_tag(x->ndim));
    dnnl_memory_desc_init_by_tag(&tmd, y->ndim, yd, dnnl_f32, odnn_channels_last_tag(y->ndim));
    d->cb = d->ic;
    for (int blk = 16; st == NULL && blk >= 8; blk -= 8) {
        dnnl_memory_desc_t cand;
        dnnl_format_tag_t tag = x->ndim == 4 ? (blk == 16 ? dnnl_aBcd16b : dnnl_aBcd8b)
                                             : (blk == 16 ? dnnl_aBc16b : dnnl_aBc8b);
        if (d->ic % blk != 0 ||
            dnnl_memory_desc_init_by_tag(&cand, x->ndim, xd, dnnl_f32, tag) != dnnl_success ||
            !dnnl_memory_desc_equal(&b->c->values[src].md, &cand))
            continue;
        smd = cand;
        d->cb = blk;
        break;
    }
    if (d->kh * (d->ic / d->cb) > 256) /* the kernel's rows per tile: channels last instead */
        d->cb = d->ic, dnnl_memory_desc_init_by_tag(&smd, x->ndim, xd, dnnl_f32,
                                                    odnn_channels_last_tag(x->ndim));
    int own_epilogue = f->residual < 0 && odnn_direct_act(f->po, d);
    if (st == NULL && !odnn_direct_setup(d, b->ctx))
        st = odnn_oom();
    int wi = -1;
    if (st == NULL)
        st = odnn_own_conv_weights(b, n, d, wt, own_epilogue ? bias_t : -1, &wi);
    if (st == NULL)
        st = odnn_ensure(b, src, &smd, (int64_t)n, &src);
    if (st != NULL) {
        odnn_direct_free(d, b->ctx);
        odnn_free(b->ctx, d);
        return st;
    }
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s': the module's narrow convolution (%d -> %d channels, "
                             "source %s), %s",
                             onednn_host->graph->node_name(v, n), d->ic, d->oc,
                             d->cb == d->ic ? "channels last" : d->cb == 16 ? "aBcd16b" : "aBcd8b",
                             own_epilogue ? "bias and activation in the kernel"
                                          : "bias and post-ops in a binary step");
    /* owns D, also when it fails */
    return odnn_own_conv_step(b, n, f, d, src, wi, &tmd, own_epilogue, bias_t);
}

/* Conv through the module's own kernel: the source in aBcd8b (a reorder
 * where its writer chose another layout) and the packed weights. The
 * kernel adds the bias and applies a lone clip or leaky ReLU itself,
 * writing F's destination; any other fusion (a residual sum, other
 * eltwise ops, a chain) goes into a temporary, then one binary step adds
 * the bias with F's post-ops into F's destination. */
static pl_status *odnn_direct_conv(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                                   const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                                   const struct odnn_tinfo *y, const struct odnn_window *w,
                                   int64_t bias_t)
{
    const pl_graph_view *v = b->v;
    struct odnn_direct *d = odnn_direct_new(b, x, y, w);
    if (d == NULL)
        return odnn_oom();
    int two = w->sr == 2;
    int64_t group = x->dims[1] / wt->dims[1];
    if (odnn_direct_dense_groups(x->dims[1], y->dims[1], group))
        d->groups = (int)group;
    else if (group > 1)
        d->cg = (int)wt->dims[1]; /* 2 or 4 channels a group */
    d->wm = two && b->ctx->winograd ? odnn_wino_tile(d) : 0;
    int own_epilogue = f->residual < 0 && odnn_direct_act(f->po, d);
    if (!odnn_direct_setup(d, b->ctx)) {
        odnn_direct_free(d, b->ctx);
        odnn_free(b->ctx, d);
        return odnn_oom();
    }
    int wi = -1, src = -1;
    pl_status *st = odnn_own_conv_weights(b, n, d, wt, own_epilogue ? bias_t : -1, &wi);
    dnnl_format_tag_t tag = two ? dnnl_aBcd8b : dnnl_aBc8b;
    dnnl_dims_t xd, yd;
    for (int i = 0; i < x->ndim; i++)
        xd[i] = x->dims[i], yd[i] = y->dims[i];
    dnnl_memory_desc_t smd, tmd;
    dnnl_memory_desc_init_by_tag(&smd, x->ndim, xd, dnnl_f32, tag);
    dnnl_memory_desc_init_by_tag(&tmd, y->ndim, yd, dnnl_f32, tag);
    if (st == NULL)
        st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL)
        st = odnn_ensure(b, src, &smd, (int64_t)n, &src);
    if (st != NULL) {
        odnn_direct_free(d, b->ctx);
        odnn_free(b->ctx, d);
        return st;
    }
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s': the module's direct convolution%s, %s",
                             onednn_host->graph->node_name(v, n),
                             d->wm == 2   ? " (Winograd F(2x2, 3x3))"
                             : d->wm == 4 ? " (Winograd F(4x4, 3x3))"
                                          : "",
                             own_epilogue ? "bias and activation in the kernel"
                                          : "bias and post-ops in a binary step");
    /* owns D, also when it fails */
    return odnn_own_conv_step(b, n, f, d, src, wi, &tmd, own_epilogue, bias_t);
}

/* Whether Winograd's kernels take post-ops PO: at most a ReLU, a sum, and
 * a ReLU after the sum (oneDNN's post_ops_ok for F(2x2) and F(4x4)). */
static int odnn_wino_po_ok(const_dnnl_post_ops_t po)
{
    int len = po != NULL ? dnnl_post_ops_len(po) : 0, sums = 0;
    for (int i = 0; i < len; i++) {
        dnnl_primitive_kind_t kind = dnnl_post_ops_get_kind(po, i);
        if (kind == dnnl_sum) {
            sums++;
            continue;
        }
        float scale, alpha, beta;
        dnnl_alg_kind_t alg;
        if (kind != dnnl_eltwise ||
            dnnl_post_ops_get_params_eltwise(po, i, &scale, &alg, &alpha, &beta) !=
                dnnl_success ||
            alg != dnnl_eltwise_relu || alpha != 0.0f || scale != 1.0f)
            return 0;
    }
    return sums <= 1 && len <= 3;
}

/* Whether a convolution whose post-ops PO Winograd's kernels refuse (SiLU,
 * hardswish, a clip: they take ReLU and sums only) would take Winograd
 * without them. Then it runs so, its activation a step of its own: the
 * extra pass over the output costs a few microseconds where Winograd saves
 * a large share of the layer (EfficientNet-V2-S's 48 -> 192 3x3s with SiLU
 * at 24x24: 0.30 ms each direct, 0.14 with Winograd). */
static int odnn_wino_without_post_ops(struct odnn_build *b, size_t n,
                                      const dnnl_memory_desc_t *src_md,
                                      const dnnl_memory_desc_t *wei_md,
                                      const dnnl_memory_desc_t *bias_md,
                                      const dnnl_memory_desc_t *dst_md, const dnnl_dim_t *strides,
                                      const dnnl_dim_t *dil, const dnnl_dim_t *pl,
                                      const dnnl_dim_t *pr, const_dnnl_post_ops_t po)
{
    if (odnn_wino_po_ok(po))
        return 0; /* refused for another reason, which stays */
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    b->wino_quiet = 1;
    int takes = odnn_conv_winograd(b, n, &cd, src_md, wei_md, bias_md, dst_md, strides, dil, pl,
                                   pr, NULL, &pd) == dnnl_success;
    b->wino_quiet = 0;
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    odnn_wslice_drop(b); /* the real call makes its slices again */
    if (takes)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': Winograd with its activation as a step of its own "
                                 "(Winograd's kernels take only ReLU and sums)",
                                 onednn_host->graph->node_name(b->v, n));
    return takes;
}

/* Whether convolution N, which precision = bf16 would compute in bf16
 * without AMX (oneDNN's jit_bf16 kernels, twice f32's multiply rate),
 * runs faster on oneDNN's Winograd F(4x4, 3x3) kernel in f32 (4x fewer
 * multiplies): then it stays f32. VGG-19's 3x3 layers on AVX512-BF16
 * (Zen 4, 2 threads, ONEDNN_VERBOSE): 256 -> 256 at 56x56 16.1-17.3 ms
 * f32 direct, 8.0-8.2 bf16, 5.5-5.8 Winograd F(4x4); 64 -> 64 at 224x224
 * 8.3 bf16, 6.4 F(4x4); model 80-88 ms in f32 against 99 in bf16. Its
 * F(2x2) kernel (512 channels at 14x14: 2.0 ms) only ties bf16 (2.0-2.2),
 * so those layers keep bf16. Which kernel oneDNN gives the layer is asked
 * of it (the first Winograd implementation it offers, as
 * odnn_conv_winograd takes it), once per node. Not the weight budget's
 * or the scales' verdicts: odnn_wino_before_bf16 adds those. */
static int odnn_wino_beats_bf16(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    if (!b->ctx->bf16 || !b->ctx->winograd || odnn_bf16_everywhere() || !onednn_has_avx512() ||
        !odnn_op_is(v, (int64_t)n, "Conv") || odnn_attr_int(v, n, "group", 1) != 1)
        return 0;
    size_t nn = onednn_host->graph->node_count(v);
    if (b->wino_bf16 == NULL) {
        b->wino_bf16 = onednn_host->host_alloc(b->ctx->host_ctx, nn + 1, 0);
        if (b->wino_bf16 == NULL)
            return 0;
        memset(b->wino_bf16, 0, nn + 1);
    }
    if (n < nn && b->wino_bf16[n] != 0)
        return b->wino_bf16[n] == 2;
    struct odnn_tinfo x, wt, y;
    struct odnn_window w;
    char reason[ODNN_REASON] = "";
    int four = 0;
    if (odnn_tensor(v, odnn_in(v, n, 0), &x) && odnn_tensor(v, odnn_in(v, n, 1), &wt) &&
        odnn_tensor(v, odnn_out(v, n, 0), &y) && wt.cdata != NULL && wt.ndim == 4 && y.known &&
        x.known && wt.dims[2] == 3 && wt.dims[3] == 3 &&
        odnn_window(v, n, "Conv", &x, &wt.dims[2], &y, &w, reason) && w.sr == 2 &&
        w.s[0] == 1 && w.s[1] == 1 && w.d[0] == 1 && w.d[1] == 1) {
        int kind = odnn_wino_pays(y.dims[0], wt.dims[1], wt.dims[0], y.dims[2], y.dims[3]);
        struct odnn_conv_mds c;
        dnnl_dims_t wd = {wt.dims[0], wt.dims[1], 3, 3};
        odnn_conv_mds_init(&c, &x, &y, 4, wd, dnnl_f32, &w);
        dnnl_convolution_desc_t cd;
        dnnl_primitive_desc_t pd = NULL;
        if (kind != 0 &&
            dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference,
                                                       dnnl_convolution_winograd, &c.src, &c.wei,
                                                       &c.bias, &c.dst, c.strides, c.dil, c.pl,
                                                       c.pr) == dnnl_success &&
            (kind == 4 ? odnn_pd_named(b, &cd, NULL, "wino_4x3", &pd)
                       : odnn_conv_pd_fast(b, &cd, NULL, &pd)) == dnnl_success) {
            const char *impl = "";
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            four = impl != NULL && strstr(impl, "4x3") != NULL;
        }
        if (pd != NULL)
            dnnl_primitive_desc_destroy(pd);
    }
    if (n < nn)
        b->wino_bf16[n] = four ? 2 : 1;
    return four;
}

/* odnn_wino_beats_bf16, and the layer is to take Winograd: its weights
 * within the budget (odnn_wino_budget), its scale the largest
 * (odnn_wino_scale_ok). */
static int odnn_wino_before_bf16(struct odnn_build *b, size_t n)
{
    if (!odnn_wino_beats_bf16(b, n))
        return 0;
    int64_t t = odnn_in(b->v, n, 1);
    if (b->wino_over != NULL && t >= 0 && (size_t)t < b->u.n_tensors && b->wino_over[t])
        return 0;
    struct odnn_tinfo y;
    odnn_tensor(b->v, odnn_out(b->v, n, 0), &y);
    dnnl_memory_desc_t ymd;
    dnnl_dims_t yd = {y.dims[0], y.dims[1], y.dims[2], y.dims[3]};
    dnnl_memory_desc_init_by_tag(&ymd, 4, yd, dnnl_f32, dnnl_format_tag_any);
    b->wino_quiet = 1;
    int ok = odnn_wino_scale_ok(b, n, &ymd);
    b->wino_quiet = 0;
    return ok;
}

/* The data type convolution N computes in (odnn_conv): bf16 where
 * precision = bf16 pays for it, else f32. */
static dnnl_data_type_t odnn_conv_dt(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    if (!b->ctx->bf16)
        return dnnl_f32;
    struct odnn_tinfo x, wt, y;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !odnn_tensor(v, odnn_in(v, n, 1), &wt) ||
        !odnn_tensor(v, odnn_out(v, n, 0), &y) || wt.cdata == NULL ||
        odnn_dequantized(b, odnn_in(v, n, 0)))
        return dnnl_f32;
    int64_t group = odnn_attr_int(v, n, "group", 1);
    char reason[ODNN_REASON] = "";
    struct odnn_window w;
    if (!odnn_window(v, n, "Conv", &x, &wt.dims[2], &y, &w, reason))
        return dnnl_f32;
    int spatial = 0;
    for (int32_t d = 2; d < wt.ndim; d++)
        spatial |= wt.dims[d] > 1;
    /* A convolution of dequantized 8-bit values (a QDQ graph) stays f32:
     * bf16's 8-bit mantissa does not hold u8 * scale, so it would change
     * an int8 model by more than its quantization, and it ran slower
     * (resnet50_s_qdq 0.32 ms against 0.27; its AMX 1x1s on 8x8 and 4x4
     * maps 7-56 us against 5-15). */
    return odnn_compute_dt(b->ctx, odnn_conv_bf16_pays(b->ctx, &x, &wt, &y, group, &w, spatial) &&
                                       !odnn_wino_before_bf16(b, n));
}

/* A 2-D convolution over a width of 1 with a kernel of width 1 and a
 * taller one (tf2onnx writes Keras's Conv1D so: an Unsqueeze to [N, C, L,
 * 1], a [K, 1] kernel) runs as the 1-D convolution it is: oneDNN's
 * direct kernels block the output along its width, and a width of 1 left
 * them a block of one. Magika's 256 -> 512, kernel 5 layer over 512
 * steps: 10.0 ms as [5, 1] against 6.2 as 1-D (and 6.2 as [1, 5]; ONNX
 * Runtime 6.7), `plinth bench`, 2 threads. Drops the width from X, W, Y
 * and WIN (the same bytes in every layout, the dim being 1 and
 * unpadded); the step views its tensors at that rank (odnn_weighted_step).
 * 1 when it did. */
static int odnn_conv_unit_width(struct odnn_tinfo *x, struct odnn_tinfo *w, struct odnn_tinfo *y,
                                struct odnn_window *win)
{
    if (x->ndim != 4 || w->ndim != 4 || y->ndim != 4 || win->sr != 2 || x->dims[3] != 1 ||
        w->dims[3] != 1 || y->dims[3] != 1 || w->dims[2] < 2 || win->pl[1] != 0 ||
        win->pr[1] != 0)
        return 0;
    x->ndim = w->ndim = y->ndim = 3;
    win->sr = 1;
    return 1;
}

/* Appends node N's phase copy of KIND (ODNN_S_PGATHER or ODNN_S_PSCATTER)
 * from value SRC to DST: G with T's channel blocks and extents (the
 * gather's source, the scatter's destination) and phase images of PH. */
static pl_status *odnn_phase_step(struct odnn_build *b, size_t n, uint32_t kind,
                                  const struct odnn_phase *g, const struct odnn_tinfo *t,
                                  const int64_t ph[2], int src, int dst)
{
    struct odnn_step *s = odnn_next_step(b, kind, (int64_t)n);
    if (s == NULL)
        return odnn_oom();
    s->phase = *g;
    s->phase.cb = (t->dims[1] + 15) / 16;
    s->phase.in[0] = t->dims[2], s->phase.in[1] = t->dims[3];
    s->phase.ph[0] = ph[0], s->phase.ph[1] = ph[1];
    int k = b->c->n_steps++;
    odnn_arg(b, k, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, k, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* A 2-D 3x3 convolution of stride 1 dilated along an axis by phase
 * (onednn_phase.c): the source's phases gathered into a batch of images
 * (nChw16c), an undilated convolution over them on oneDNN's Winograd
 * kernel (odnn_conv_winograd decides as for any layer: the kernel, the
 * weight budget, the scratchpad), each phase's result scattered back into
 * F's destination. A split axis is read without padding: the gather
 * writes the zeros. Timed alone (2 threads): 512 -> 512 at 40x40 dilated
 * 2 (FCN's and DeepLab's ResNet-50) 20.5 ms direct, 7.5-7.9 by phase;
 * dilated 4, 19.0 -> 11.6; 256 -> 256 dilated 2, 5.0 -> 2.0; PLCMOS's 32
 * -> 64 at 96x64 dilated (2, 1) 0.70 -> 0.37. Not with a residual sum or
 * post-ops that take operands (Winograd takes ReLU and sums only, and the
 * sum would read the phase images); not with winograd = no or
 * direct_conv = no (the copies are the module's own kernels). 1 when it
 * took node N (its status in *OUT_ST), 0 when not (nothing emitted). */
static int odnn_phase_conv(struct odnn_build *b, size_t n, const struct odnn_fuse *f,
                           const struct odnn_tinfo *x, const struct odnn_tinfo *wt,
                           const struct odnn_tinfo *y, const struct odnn_window *w,
                           int64_t bias_t, pl_status **out_st)
{
    *out_st = NULL;
    if (w->sr != 2 || x->ndim != 4 || y->ndim != 4 || wt->ndim != 4 || wt->dims[2] != 3 ||
        wt->dims[3] != 3 || w->s[0] != 1 || w->s[1] != 1 || (w->d[0] == 1 && w->d[1] == 1) ||
        f->residual >= 0 || f->n_scalar > 0 || f->n_chan > 0 || !x->f32 || !wt->f32 ||
        wt->cdata == NULL || !onednn_has_avx512() || !b->ctx->winograd || !b->ctx->direct)
        return 0;
    struct odnn_phase g = {.n = x->dims[0]};
    /* an activation Winograd refuses (a leaky ReLU, a clip) goes into the
     * scatter */
    const_dnnl_post_ops_t po = f->po;
    if (!odnn_wino_po_ok(po)) {
        struct odnn_direct probe;
        if (!odnn_direct_act(po, &probe) ||
            (probe.act != ODNN_ACT_CLIP && probe.act != ODNN_ACT_LEAKY))
            return 0;
        g.act = probe.act, g.lo_v = probe.lo, g.hi_v = probe.hi, g.alpha = probe.alpha;
        po = NULL;
    }
    dnnl_dims_t pl, pr;
    int64_t e[2], q[2];
    for (int i = 0; i < 2; i++) {
        int64_t d = w->d[i], o = y->dims[2 + i];
        g.d[i] = d;
        g.lo[i] = w->pl[i];
        if (d == 1) {
            q[i] = o;
            e[i] = x->dims[2 + i];
            pl[i] = w->pl[i];
            pr[i] = w->pr[i];
        } else {
            q[i] = (o + d - 1) / d;
            e[i] = q[i] + 2;
            pl[i] = pr[i] = 0;
        }
    }
    int64_t nph = g.d[0] * g.d[1];
    if (g.n <= 0 || nph > 4096 || g.n > ((int64_t)1 << 20) / nph)
        return 0;
    dnnl_dims_t sd = {g.n * nph, x->dims[1], e[0], e[1]}, dd = {g.n * nph, y->dims[1], q[0], q[1]};
    dnnl_dims_t wd = {wt->dims[0], wt->dims[1], 3, 3}, bd = {y->dims[1]};
    dnnl_dims_t xd = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
    dnnl_dims_t yd = {y->dims[0], y->dims[1], y->dims[2], y->dims[3]};
    dnnl_dims_t strides = {1, 1}, dil = {0, 0};
    dnnl_memory_desc_t psrc, pdst, wei, wei_plain, bias, psrc16, pdst16, x16, y16;
    dnnl_memory_desc_init_by_tag(&psrc, 4, sd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&pdst, 4, dd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&wei_plain, 4, wd, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&psrc16, 4, sd, dnnl_f32, dnnl_nChw16c);
    dnnl_memory_desc_init_by_tag(&pdst16, 4, dd, dnnl_f32, dnnl_nChw16c);
    dnnl_memory_desc_init_by_tag(&x16, 4, xd, dnnl_f32, dnnl_nChw16c);
    dnnl_memory_desc_init_by_tag(&y16, 4, yd, dnnl_f32, dnnl_nChw16c);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    if (odnn_conv_winograd(b, n, &cd, &psrc, &wei, bias_t >= 0 ? &bias : NULL, &pdst, strides,
                           dil, pl, pr, po, &pd) != dnnl_success)
        return 0;
    /* the copies know the blocked layout only */
    if (!dnnl_memory_desc_equal(odnn_pd_md(pd, DNNL_ARG_SRC), &psrc16) ||
        !dnnl_memory_desc_equal(odnn_pd_md(pd, DNNL_ARG_DST), &pdst16)) {
        dnnl_primitive_desc_destroy(pd);
        odnn_wslice_drop(b);
        return 0;
    }
    const pl_graph_view *v = b->v;
    int src = -1, gathered = -1, result = -1, wi = -1, bw = -1, dst = -1;
    pl_status *st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL)
        st = odnn_ensure(b, src, &x16, (int64_t)n, &src);
    if (st == NULL && ((gathered = odnn_new_value(b, -1, ODNN_V_TEMP, &psrc16)) < 0 ||
                       (result = odnn_new_value(b, -1, ODNN_V_TEMP, &pdst16)) < 0))
        st = odnn_oom();
    /* in slices, the weights as a slice's primitive wants them */
    const_dnnl_primitive_desc_t wpd = b->wslice.pd != NULL ? b->wslice.pd : pd;
    if (st == NULL)
        st = odnn_shared_weight(b, odnn_pd_md(wpd, DNNL_ARG_WEIGHTS), &wei_plain, wt->cdata,
                                (int64_t)n, &wi);
    if (st == NULL && bias_t >= 0) {
        struct odnn_tinfo bt;
        odnn_tensor(v, bias_t, &bt);
        st = odnn_weight(b, &bias, &bias, bt.cdata, (int64_t)n, &bw);
    }
    if (st == NULL)
        st = odnn_phase_step(b, n, ODNN_S_PGATHER, &g, x, e, src, gathered);
    int s = -1;
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_CONV, pd, (int64_t)n, &st);
    dnnl_primitive_desc_destroy(pd);
    odnn_wslice_drop(b);
    if (s >= 0) {
        odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, gathered);
        odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
        if (bw >= 0)
            odnn_arg(b, s, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
        odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, result);
    }
    if (st == NULL)
        st = odnn_emit_fused_md(b, f, &y16, &dst);
    if (st == NULL)
        st = odnn_phase_step(b, n, ODNN_S_PSCATTER, &g, y, q, result, dst);
    if (st == NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': dilated (%lld, %lld): Winograd by phase, %lld "
                                 "image(s) of %lldx%lld",
                                 onednn_host->graph->node_name(v, n), (long long)g.d[0],
                                 (long long)g.d[1], (long long)(g.n * nph), (long long)q[0],
                                 (long long)q[1]);
    *out_st = st;
    return 1;
}

static pl_status *odnn_conv(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, wt, bi, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_in(v, n, 1), &wt);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int has_bias = odnn_in(v, n, 2) >= 0;
    if (has_bias)
        odnn_tensor(v, odnn_in(v, n, 2), &bi);
    int64_t group = odnn_attr_int(v, n, "group", 1);
    char reason[ODNN_REASON] = "";
    struct odnn_window w;
    if (!odnn_window(v, n, "Conv", &x, &wt.dims[2], &y, &w, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s", reason);

    dnnl_data_type_t cdt = odnn_conv_dt(b, n);
    /* oneDNN's primitive may run at a lower rank than the graph's tensors
     * (odnn_conv_unit_width) */
    struct odnn_tinfo xk = x, wk = wt, yk = y;
    struct odnn_window wink = w;
    int unit_w = odnn_conv_unit_width(&xk, &wk, &yk, &wink);
    /* A 1x1 convolution may take the depthwise one after it (odnn_dw_after);
     * when oneDNN has only a reference kernel for the pair, again without. */
    int may_dw = !unit_w && cdt == dnnl_f32 && group == 1 && w.sr == 2 && wt.dims[2] == 1 && wt.dims[3] == 1 &&
                 w.s[0] == 1 && w.s[1] == 1 && w.pl[0] == 0 && w.pl[1] == 0 && w.pr[0] == 0 &&
                 w.pr[1] == 0;
    /* QDQ pairs after it join its post-ops (odnn_append_qdq); when only a
     * reference kernel takes that chain, again without them (and never at
     * a lower rank: their scales' descriptors have the tensors'). */
    int may_qdq = !unit_w;
    /* 2: every post-op odnn_follow takes; when only oneDNN's reference
     * kernel takes the chain (jit:avx2 has no swish followed by sum: a
     * YOLOv8 bottleneck's 3x3 ran 40 ms as ref:any against 0.3 ms), again
     * without the residual sum, then without post-ops. */
    int fuse = 2;
    for (;;) {
        struct odnn_fuse f;
        b->no_qdq_post = !may_qdq;
        int fused = odnn_fuse_conv(b, n, has_bias, &f, fuse, unit_w ? yk.ndim : 0);
        b->no_qdq_post = 0;
        if (!fused)
            return odnn_oom();
        int64_t bias_t = has_bias ? odnn_in(v, n, 2) : f.bias;
        struct odnn_dw dw = {-1};
        if (may_dw && f.residual < 0 && odnn_dw_after(b, &f, &dw)) {
            dnnl_post_ops_append_dw(f.po, dnnl_f32, dnnl_f32, dnnl_f32, 3, 2, 1, 0, 0, NULL);
            f.n_post++;
            f.fused[f.n_fused++] = (size_t)dw.node;
            f.out = odnn_out(v, (size_t)dw.node, 0);
            odnn_follow(b, &f, 1, 1); /* its Clip; no bias left to take */
        }

        if (dw.node < 0 && odnn_direct_fits(b, &x, &wt, &y, group, cdt, &w) &&
            odnn_direct_epilogue_ok(b, n, &f, &y, w.sr, 0)) {
            pl_status *dst = odnn_direct_conv(b, n, &f, &x, &wt, &y, &w, bias_t);
            dnnl_post_ops_destroy(f.po);
            return dst;
        }
        if (dw.node < 0 && odnn_narrow_fits(b, &xk, &wk, &yk, group, cdt, &wink) &&
            odnn_direct_epilogue_ok(b, n, &f, &y, w.sr, 1)) {
            pl_status *dst = odnn_narrow_conv(b, n, &f, &x, &wt, &y, &xk, &yk, &wink, bias_t);
            dnnl_post_ops_destroy(f.po);
            return dst;
        }
        dnnl_memory_desc_t wei_plain;
        dnnl_dims_t wd;
        int wnd;
        if (group > 1) {
            wd[0] = group, wd[1] = wk.dims[0] / group;
            for (int i = 1; i < wk.ndim; i++)
                wd[i + 1] = wk.dims[i];
            wnd = wk.ndim + 1;
        } else {
            for (int i = 0; i < wk.ndim; i++)
                wd[i] = wk.dims[i];
            wnd = wk.ndim;
        }
        dnnl_memory_desc_init_by_strides(&wei_plain, wnd, wd, dnnl_f32, NULL);
        struct odnn_conv_mds c;
        odnn_conv_mds_init(&c, &xk, &yk, wnd, wd, cdt, &wink);
        dnnl_memory_desc_t src_md = c.src, wei_md = c.wei, bias_md = c.bias, dst_md = c.dst;
        /* bf16 out only for a reader that takes bf16 as it is (another
         * bf16 layer); a concat of it beside f32 pieces, say, gets f32 */
        if (cdt != dnnl_f32 && !odnn_bf16_readers(b, f.out))
            dst_md.data_type = dnnl_f32;
        const dnnl_dim_t *strides = c.strides, *dil = c.dil, *pl = c.pl, *pr = c.pr;
        dnnl_convolution_desc_t cd;
        dnnl_primitive_desc_t pd = NULL;
        pl_status *st = NULL;
        if (group == 1 && dw.node < 0 && cdt == dnnl_f32 && !unit_w &&
            odnn_phase_conv(b, n, &f, &x, &wt, &y, &w, bias_t, &st)) {
            dnnl_post_ops_destroy(f.po);
            return st;
        }
        if (group == 1 &&
            odnn_conv_winograd(b, n, &cd, &src_md, &wei_md, bias_t >= 0 ? &bias_md : NULL,
                               &dst_md, strides, dil, pl, pr, f.po, &pd) == dnnl_success) {
            const char *impl = "?";
            dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            if (b->wslice.pd != NULL)
                onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                         "node '%s': Winograd convolution (%s) in slices of "
                                         "%lld images",
                                         onednn_host->graph->node_name(v, n), impl,
                                         (long long)b->wslice.slice);
            else
                onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                         "node '%s': Winograd convolution (%s)",
                                         onednn_host->graph->node_name(v, n), impl);
        } else if (fuse > 0 && group == 1 && dw.node < 0 && f.n_post > 0 &&
                   odnn_wino_without_post_ops(b, n, &src_md, &wei_md,
                                              bias_t >= 0 ? &bias_md : NULL, &dst_md, strides,
                                              dil, pl, pr, f.po)) {
            dnnl_post_ops_destroy(f.po);
            fuse = 0;
            continue;
        } else if (odnn_conv_blocked(b, odnn_conv_src_last(b, n, &src_md), &cd, &src_md,
                                     &wei_md, bias_t >= 0 ? &bias_md : NULL,
                                     &dst_md, strides, dil, pl, pr, f.po, &pd) != dnnl_success) {
            if (dw.node >= 0) { /* only a reference kernel for the pair: unfused */
                dnnl_post_ops_destroy(f.po);
                may_dw = 0;
                continue;
            }
            if (f.n_scalar > 0) {
                dnnl_post_ops_destroy(f.po);
                may_qdq = 0;
                continue;
            }
            dnnl_status_t ds = dnnl_dilated_convolution_forward_desc_init(
                &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_md,
                bias_t >= 0 ? &bias_md : NULL, &dst_md, strides, dil, pl, pr);
            st = odnn_dnnl(ds, "convolution descriptor", v, (int64_t)n);
            if (st == NULL)
                st = odnn_make_pd(b, &cd, f.po, n, &pd);
            if (st == NULL && fuse > 0 && f.n_fused > 1 && odnn_pd_is_ref(pd)) {
                dnnl_primitive_desc_destroy(pd);
                dnnl_post_ops_destroy(f.po);
                fuse = f.residual >= 0 ? 1 : 0;
                continue;
            }
            /* im2col + GEMM (channels per group not a multiple of 8: the
             * blocked kernels refuse them) applies its post-ops in a
             * scalar loop after the GEMM: ShuffleNet v1's 136-channel 1x1
             * on 28x28 in 4 groups took 1.02 ms with a sum and a ReLU,
             * 0.17 with the ReLU, 0.05 with neither; they become steps of
             * their own */
            if (st == NULL && fuse > 0 && f.n_fused > 1 && odnn_pd_is_gemm(pd)) {
                dnnl_primitive_desc_destroy(pd);
                dnnl_post_ops_destroy(f.po);
                fuse = 0;
                continue;
            }
        }
        if (dw.node >= 0)
            onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                     "node '%s': 1x1 convolution with the depthwise '%s' fused",
                                     onednn_host->graph->node_name(v, n),
                                     onednn_host->graph->node_name(v, (size_t)dw.node));
        if (unit_w && st == NULL)
            onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                     "node '%s': a 1-D convolution (its width is 1), %zu "
                                     "node(s) in its step",
                                     onednn_host->graph->node_name(v, n), f.n_fused);
        dnnl_post_ops_destroy(f.po);
        st = odnn_weighted_step(b, n, &f, pd, st, ODNN_S_CONV, &wei_plain, wt.cdata, bias_t,
                                &bias_md, &dw, NULL);
        odnn_wslice_drop(b); /* not taken when the step failed */
        return st;
    }
}

/* Whether every reader of tensor T takes it in bf16 as it is (precision =
 * bf16): the data of a Conv that computes in bf16 (odnn_conv_dt), or A of
 * a MatMul/Gemm with constant weights. Then
 * the product writing T writes bf16; any other reader (Split, Softmax, a
 * layer norm, a graph output) gets f32, which costs no conversion. */
static int odnn_bf16_readers(struct odnn_build *b, int64_t t)
{
    const pl_graph_api *g = onednn_host->graph;
    if (t < 0 || (size_t)t >= b->u.n_tensors || b->u.escapes[t] || b->u.count[t] == 0)
        return 0;
    for (size_t i = 0; i < g->node_count(b->v); i++)
        for (size_t k = 0; k < g->node_input_count(b->v, i); k++) {
            if (g->node_input(b->v, i, k) != t)
                continue;
            struct odnn_tinfo wt;
            int product = odnn_op_is(b->v, (int64_t)i, "MatMul") ||
                          (odnn_op_is(b->v, (int64_t)i, "Gemm") &&
                           odnn_attr_int(b->v, i, "transA", 0) == 0);
            if (k != 0 || !((odnn_op_is(b->v, (int64_t)i, "Conv") &&
                             odnn_conv_dt(b, i) != dnnl_f32) ||
                            (product && odnn_tensor(b->v, odnn_in(b->v, i, 1), &wt) &&
                             wt.cdata != NULL)))
                return 0;
        }
    return 1;
}

/* The plain (strided) descriptor MD with leading dims of 1 added up to rank
 * R, as *OUT; 0 when MD is blocked or of a higher rank. */
static int odnn_rank_view(const dnnl_memory_desc_t *md, int r, dnnl_memory_desc_t *out)
{
    if (!odnn_is_plain(md) || md->ndims > r)
        return 0;
    int pad = r - md->ndims;
    dnnl_dims_t d, st;
    for (int i = 0; i < r; i++) {
        d[i] = i < pad ? 1 : md->dims[i - pad];
        st[i] = i < pad ? md->dims[0] * md->format_desc.blocking.strides[0]
                        : md->format_desc.blocking.strides[i - pad];
    }
    return dnnl_memory_desc_init_by_strides(out, r, d, md->data_type, st) == dnnl_success;
}

/* When tensor T (of dims YD, rank R) is read only by a Transpose, the
 * strides that make that Transpose's output dense, as *OUT: the product
 * writes the transposed layout and the Transpose becomes a view. */
static int odnn_transposed_dst(struct odnn_build *b, int64_t t, int r, const dnnl_dims_t yd,
                               dnnl_memory_desc_t *out)
{
    int64_t reader = odnn_sole_reader(&b->u, t);
    if (reader < 0 || !odnn_op_is(b->v, reader, "Transpose"))
        return 0;
    const int64_t *perm;
    size_t np = odnn_attr_ints(b->v, (size_t)reader, "perm", &perm);
    dnnl_dims_t st;
    int64_t stride = 1;
    for (int i = r - 1; i >= 0; i--) { /* output axis i is input axis perm[i] */
        int64_t from = np == (size_t)r ? perm[i] : r - 1 - i;
        if (from < 0 || from >= r)
            return 0;
        st[from] = stride;
        stride *= yd[from];
    }
    return dnnl_memory_desc_init_by_strides(out, r, yd, dnnl_f32, st) == dnnl_success;
}

/* A descriptor for PD with a real kernel: a reference implementation
 * (which oneDNN picks for strides its kernels do not take) is refused. */
static int odnn_pd_is_ref(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    return impl != NULL && odnn_impl_is_ref(impl);
}

/* Whether PD runs on oneDNN's im2col + GEMM convolution (gemm:jit). */
static int odnn_pd_is_gemm(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    return impl != NULL && strstr(impl, "gemm") != NULL;
}

/* Whether oneDNN makes a primitive descriptor for DESC and IS says yes to
 * the implementation it picks. */
static int odnn_desc_impl(struct odnn_build *b, const_dnnl_op_desc_t desc,
                          int (*is)(const_dnnl_primitive_desc_t))
{
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, NULL);
    if (st != NULL) {
        onednn_host->status_free(st);
        return 0;
    }
    dnnl_primitive_desc_t pd = NULL;
    int yes = dnnl_primitive_desc_create(&pd, desc, attr, b->ctx->engine, NULL) == dnnl_success &&
              is(pd);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return yes;
}

/* Whether oneDNN has only its reference implementation for DESC. */
static int odnn_desc_is_ref(struct odnn_build *b, const_dnnl_op_desc_t desc)
{
    return odnn_desc_impl(b, desc, odnn_pd_is_ref);
}

static int odnn_pd_is_jit(const_dnnl_primitive_desc_t pd);

/* Whether oneDNN runs DESC in one of its JIT kernels. */
static int odnn_desc_is_jit(struct odnn_build *b, const_dnnl_op_desc_t desc)
{
    return odnn_desc_impl(b, desc, odnn_pd_is_jit);
}

/* Whether a real kernel (not a reference one) takes a product of A_MD by
 * W_MD into Y_MD with post-ops PO. */
static int odnn_matmul_po_fast(struct odnn_build *b, const dnnl_memory_desc_t *a_md,
                               const dnnl_memory_desc_t *w_md, const dnnl_memory_desc_t *y_md,
                               const_dnnl_post_ops_t po)
{
    dnnl_primitive_attr_t attr = NULL;
    pl_status *st = odnn_attr(&attr, po);
    if (st != NULL) {
        onednn_host->status_free(st);
        return 0;
    }
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    int ok = dnnl_matmul_desc_init(&md, a_md, w_md, NULL, y_md) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &md, attr, b->ctx->engine, NULL) == dnnl_success &&
             !odnn_pd_is_ref(pd);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return ok;
}

/* MatMul and Gemm. */
static int odnn_reshape_view(const dnnl_memory_desc_t *md, int ond, const int64_t *od,
                             dnnl_memory_desc_t *out);

/* Whether every binary post-op of PO reads one value or one per column
 * (dims all 1 but the last): what a product whose rows were merged
 * (odnn_matmul's COLLAPSE) can still broadcast. */
static int odnn_po_per_column(const_dnnl_post_ops_t po)
{
    for (int k = 0; po != NULL && k < dnnl_post_ops_len(po); k++) {
        if (dnnl_post_ops_get_kind(po, k) == dnnl_sum)
            return 0;
        if (dnnl_post_ops_get_kind(po, k) != dnnl_binary)
            continue;
        dnnl_alg_kind_t alg;
        const dnnl_memory_desc_t *md = NULL;
        if (dnnl_post_ops_get_params_binary(po, k, &alg, &md) != dnnl_success || md == NULL)
            return 0;
        for (int d = 0; d + 1 < md->ndims; d++)
            if (md->dims[d] != 1)
                return 0;
    }
    return 1;
}

static pl_status *odnn_matmul_as(struct odnn_build *b, size_t n, int gemm, int collapse,
                                 int *out_unfit);

/* A product that wrote merged rows into value DST ([1, .., rows, N]) for
 * tensor OUT_T: the tensor's value owns the bytes, in the graph's dims (so
 * it can be a residual written in place, or the caller's output), and the
 * step writes them through DST, now a merged view of it. */
static pl_status *odnn_merged_rows(struct odnn_build *b, int dst, int64_t out_t, size_t n)
{
    struct odnn_tinfo ot;
    dnnl_memory_desc_t real;
    odnn_tensor(b->v, out_t, &ot);
    if (!odnn_is_plain(&b->c->values[dst].md) ||
        !odnn_reshape_view(&b->c->values[dst].md, ot.ndim, ot.dims, &real))
        return odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no view of its merged rows",
                          onednn_host->graph->node_op(b->v, n),
                          onednn_host->graph->node_name(b->v, n));
    int owner = odnn_new_value(b, out_t, ODNN_V_TEMP, &real);
    if (owner < 0)
        return odnn_oom();
    b->c->values[owner].defined = 1;
    b->c->values[dst].tensor = -1;
    b->c->values[dst].kind = -owner - 100;
    b->c->values[dst].view_off = 0;
    b->c->values[dst].merged = 1;
    return NULL;
}

/* A product of a channels-last activation [N, H, W, K] by a constant
 * [K, N'] (ConvNeXt's pointwise layers): oneDNN takes the leading dims as
 * a batch of products of W rows each (convnext_tiny's 49 rows at 7x7 as 7
 * products of 7 rows by 768 x 3072: 3.7 ms, 62 GFLOP/s); the rows are
 * merged into one product of N*H*W rows instead, its result seen back in
 * the graph's dims, unless a post-op reads a full tensor or A is a strided
 * view the product reads in place. convnext_tiny at 224x224, 2 threads,
 * alternating: 82 -> 75.5 ms (ONNX Runtime about 70 in the same sitting);
 * its 7x7 layers 3.7 -> 1.9-2.5 ms each.
 *
 * A strided view is copied dense and merged too when each product of the
 * batch has fewer than ODNN_FEW_ROWS rows: torch.nn's sequence-first
 * attention reads its input [S, B, E] transposed from [B, S, E], and
 * oneDNN ran its Q/K/V product as S products of B rows (24 x 2x64x192:
 * 42 us; one 48-row product and the copy: 17 us). */
#define ODNN_FEW_ROWS 64

static pl_status *odnn_matmul(struct odnn_build *b, size_t n, int gemm)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo a, w, y;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    odnn_tensor(v, odnn_in(v, n, 1), &w);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int collapse = !gemm && y.ndim > 2 && a.ndim == y.ndim && w.cdata != NULL && w.ndim == 2;
    int64_t lead = 1; /* the batch the leading dims make: merged only when more than one */
    for (int d = 0; collapse && d < y.ndim - 2; d++) {
        collapse = a.dims[d] == y.dims[d];
        lead *= a.dims[d];
    }
    collapse = collapse && lead > 1;
    /* not where A is a strided view the product reads as it is (a Split,
     * Transpose or Reshape before it, an NHWC LayerNorm's result), unless
     * its products are of few rows */
    int av = collapse ? odnn_value_of(b, odnn_in(v, n, 0)) : -1;
    if (av >= 0 && odnn_is_plain(&b->c->values[av].md)) {
        dnnl_memory_desc_t as_f32 = b->c->values[av].md; /* bf16 rows merge alike */
        as_f32.data_type = dnnl_f32;
        collapse = odnn_is_row_major(&as_f32) || a.dims[a.ndim - 2] < ODNN_FEW_ROWS;
    }
    if (collapse) {
        int unfit = 0;
        pl_status *st = odnn_matmul_as(b, n, gemm, 1, &unfit);
        if (st != NULL || !unfit)
            return st;
    }
    return odnn_matmul_as(b, n, gemm, 0, NULL);
}

/* Constant f32 weights of a product below AVX-512, [.., K, N], by rows as
 * oneDNN 2.6 picks there, but with 16 floats after each row when a row is
 * a multiple of 1 KiB: its gemm:jit walks B down the columns, and rows 4
 * KiB apart (N = 1024, 2048, 3072, 4096: every transformer's MLP) land in
 * the same cache sets. Matmul primitive alone, 2 threads, this AVX2
 * machine (M 8..197, K 192..3072): N >= 1024 0.42-0.55x the time of dense
 * rows, N = 768 0.8-0.9x, N = 192 even; at M = 512 even. (Storing B by
 * columns instead helped at N = 1024 but lost 5-150% at N <= 768.) */
static void odnn_weights_padded(dnnl_memory_desc_t *md, int r, const dnnl_dims_t dims)
{
    dnnl_dims_t st;
    int64_t n = dims[r - 1], row = n % 256 == 0 ? n + 16 : n;
    st[r - 1] = 1;
    st[r - 2] = row;
    int64_t stride = row * dims[r - 2];
    for (int i = r - 3; i >= 0; i--) {
        st[i] = stride;
        stride *= dims[i];
    }
    dnnl_memory_desc_init_by_strides(md, r, dims, dnnl_f32, st);
}

/* The own small-product kernel (onednn_smm.c) takes a product of at most
 * this many multiply-adds per batch entry, and a B of at most
 * ODNN_SMM_MAX_B floats once packed. Standalone against oneDNN's
 * gemm:jit matmul (dense operands; strided ones cost oneDNN more), one
 * thread / two: 8 x 12x12x12 1.8 / 4.3 us and 2.5 / 5.2; 8 x 24x24x16
 * 3.2 / 5.4 and 3.9 / 6.1; 4 x 32x32x32 7.3 / 8.0 and 5.0 / 5.9; 8x64x64
 * by constant weights 1.3 / 2.4 and 0.8 / 1.7; about even at 24x48x144
 * (166K), oneDNN ahead from 48x64x192 (590K: 16 / 10 us on two). */
#define ODNN_SMM_MAX_MACS 65536
#define ODNN_SMM_MAX_B 32768

/* Post-ops PO as the own kernel's epilogue, into S; 0 when one is not
 * among its (a binary post-op, a scaled eltwise, an activation
 * odnn_act8 does not compute). */
static int odnn_smm_post(const_dnnl_post_ops_t po, struct odnn_smm *s)
{
    int len = po != NULL ? dnnl_post_ops_len(po) : 0;
    if (len > ODNN_SMM_MAX_POST)
        return 0;
    for (int k = 0; k < len; k++) {
        struct odnn_smm_post *q = &s->post[k];
        float scale = 0, alpha = 0, beta = 0;
        dnnl_alg_kind_t alg;
        if (dnnl_post_ops_get_kind(po, k) == dnnl_sum) {
            if (dnnl_post_ops_get_params_sum(po, k, &scale) != dnnl_success)
                return 0;
            q->kind = ODNN_SMM_SUM, q->a = scale;
            continue;
        }
        if (dnnl_post_ops_get_kind(po, k) != dnnl_eltwise ||
            dnnl_post_ops_get_params_eltwise(po, k, &scale, &alg, &alpha, &beta) != dnnl_success ||
            scale != 1.0f)
            return 0;
        if (alg == dnnl_eltwise_linear) {
            q->kind = ODNN_SMM_LINEAR, q->a = alpha, q->b = beta;
            continue;
        }
        struct odnn_direct d;
        dnnl_post_ops_t one;
        if (dnnl_post_ops_create(&one) != dnnl_success)
            return 0;
        int ok = dnnl_post_ops_append_eltwise(one, 1.0f, alg, alpha, beta) == dnnl_success &&
                 odnn_direct_act(one, &d) && d.act != ODNN_ACT_NONE;
        dnnl_post_ops_destroy(one);
        if (!ok)
            return 0;
        q->kind = ODNN_SMM_ACT, q->act = d.act;
        q->a = d.act == ODNN_ACT_CLIP ? d.lo : d.alpha;
        q->b = d.act == ODNN_ACT_CLIP ? d.hi : 0.0f;
    }
    s->n_post = len;
    return 1;
}

/* A product of one row by a constant matrix of at least this many
 * elements runs on the module's own matrix-vector kernel (onednn_smm.c),
 * its weights read as stored. */
#define ODNN_GEMV_OWN_MIN_WEIGHTS (1024.0 * 1024.0)

/* Node N's product (dims AD, WD and YD at rank R, as odnn_matmul_as made
 * them; TA, TB Gemm's transposes; BIAS_T the per-column constant it adds,
 * times BIAS_SCALE) on the module's own small-product kernel, where the
 * CPU is below AVX-512 (or STRIDED_JIT: oneDNN would run it, read through
 * strides, on gemm:jit), direct_conv is on, the product is f32 and small
 * (ODNN_SMM_MAX_MACS) and F's post-ops are the kernel's; or, one row by a
 * constant matrix of ODNN_GEMV_OWN_MIN_WEIGHTS or more, on its
 * matrix-vector kernel wherever the CPU has AVX2 and FMA. 1 when it
 * emitted the step (or failed: *OUT_ST). */
static int odnn_smm_own(struct odnn_build *b, size_t n, const struct odnn_fuse *f, int r,
                        const dnnl_dims_t ad, const dnnl_dims_t wd, const dnnl_dims_t yd, int ta,
                        int tb, int64_t bias_t, float bias_scale, int collapse,
                        int strided_jit, pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    if (r - 2 > ODNN_SMM_MAX_BATCH || f->n_scalar > 0)
        return 0;
    struct odnn_smm s;
    memset(&s, 0, sizeof s);
    s.m = yd[r - 2], s.n = yd[r - 1], s.k = ta ? ad[0] : ad[r - 1];
    s.npad = (s.n + 7) / 8 * 8;
    struct odnn_tinfo w, bt;
    odnn_tensor(v, odnn_in(v, n, 1), &w);
    int64_t rows = 1;
    for (int d = 0; d < r - 1; d++)
        rows *= yd[d];
    s.gemv = b->ctx->direct && odnn_gemv_usable() && w.cdata != NULL && !ta && rows == 1 &&
             (double)s.k * (double)s.n >= ODNN_GEMV_OWN_MIN_WEIGHTS;
    for (int d = 0; s.gemv && d < r - 2; d++)
        s.gemv = wd[d] == 1;
    int small_own = b->u.own || (strided_jit && b->ctx->direct);
    if ((!s.gemv && !small_own) || s.m <= 0 || s.n <= 0 || s.k <= 0 ||
        (!s.gemv && (s.m * s.n * s.k > ODNN_SMM_MAX_MACS || s.k * s.npad > ODNN_SMM_MAX_B)) ||
        !odnn_smm_post(f->po, &s))
        return 0;
    memset(&bt, 0, sizeof bt);
    if (bias_t >= 0 && (!odnn_tensor(v, bias_t, &bt) || bt.cdata == NULL ||
                        !(bt.elems == 1 || (bt.elems == s.n && bt.dims[bt.ndim - 1] == s.n))))
        return 0;
    s.packed = w.cdata != NULL && !s.gemv;
    for (int d = 0; s.packed && d < r - 2; d++)
        if (wd[d] != 1)
            return 0; /* a batch of constant matrices */
    int src = odnn_value_of(b, odnn_in(v, n, 0)), wv = -1;
    if (src >= 0 && b->c->values[src].defined && b->c->values[src].md.data_type != dnnl_f32)
        return 0;
    if (!s.packed && !s.gemv) {
        wv = odnn_value_of(b, odnn_in(v, n, 1));
        if (wv < 0 || !b->c->values[wv].defined || b->c->values[wv].md.data_type != dnnl_f32)
            return 0;
    }
    /* From here on the step is made. */
    pl_status *st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL && (collapse || s.gemv)) {
        /* merged rows: a view of the row-major A; one row: dense (the
         * matrix-vector kernel reads A by vectors) */
        dnnl_memory_desc_t a_c;
        dnnl_memory_desc_init_by_strides(&a_c, r, ad, dnnl_f32, NULL);
        st = odnn_view_as(b, src, &a_c, (int64_t)n, &src);
    } else if (st == NULL && !odnn_is_plain(&b->c->values[src].md)) {
        st = odnn_plain(b, src, (int64_t)n, &src);
    }
    if (st == NULL && wv >= 0 && !odnn_is_plain(&b->c->values[wv].md))
        st = odnn_plain(b, wv, (int64_t)n, &wv);
    dnnl_memory_desc_t av, bv, ymd;
    if (st == NULL && (!odnn_rank_view(&b->c->values[src].md, r, &av) ||
                       (wv >= 0 && !odnn_rank_view(&b->c->values[wv].md, r, &bv))))
        st = odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no strided view of its operands",
                        onednn_host->graph->node_op(v, n), onednn_host->graph->node_name(v, n));
    if (st != NULL) {
        *out_st = st;
        return 1;
    }
    const dnnl_dim_t *as = av.format_desc.blocking.strides;
    s.a_rs = ta ? as[1] : as[r - 2], s.a_ks = ta ? as[0] : as[r - 1];
    if (s.packed || s.gemv) {
        s.b_ks = tb ? 1 : s.n, s.b_ns = tb ? s.k : 1; /* the constant's own row-major layout */
    } else {
        const dnnl_dim_t *bs = bv.format_desc.blocking.strides;
        s.b_ks = tb ? bs[1] : bs[r - 2], s.b_ns = tb ? bs[0] : bs[r - 1];
    }
    /* C: the layout that makes a Transpose after it a view, when its
     * columns stay dense; else row-major */
    if (collapse || f->residual >= 0 || !odnn_transposed_dst(b, f->out, r, yd, &ymd) ||
        ymd.format_desc.blocking.strides[r - 1] != 1)
        dnnl_memory_desc_init_by_strides(&ymd, r, yd, dnnl_f32, NULL);
    const dnnl_dim_t *cst = ymd.format_desc.blocking.strides;
    s.c_rs = cst[r - 2];
    s.nb = r - 2;
    for (int d = 0; d < r - 2; d++) {
        s.bd[d] = yd[d];
        s.as[d] = ad[d] == 1 ? 0 : as[d];
        s.bs[d] = wv < 0 || wd[d] == 1 ? 0 : bv.format_desc.blocking.strides[d];
        s.cs[d] = cst[d];
    }
    if (b->c->values[src].md.ndims != r && (src = odnn_alias(b, src, &av, -1, 0)) < 0)
        st = odnn_oom();
    if (st == NULL && wv >= 0 && b->c->values[wv].md.ndims != r &&
        (wv = odnn_alias(b, wv, &bv, -1, 0)) < 0)
        st = odnn_oom();
    if (st == NULL && s.gemv && s.a_ks != 1)
        st = odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': its row is not dense",
                        onednn_host->graph->node_op(v, n), onednn_host->graph->node_name(v, n));
    int wi = -1, bw = -1, dst = -1;
    dnnl_memory_desc_t pmd;
    if (st == NULL && s.packed) { /* packed straight into the weight (an import takes it from the blob) */
        dnnl_dims_t pdims = {(dnnl_dim_t)odnn_smm_packed_floats(&s)};
        dnnl_memory_desc_init_by_tag(&pmd, 1, pdims, dnnl_f32, dnnl_a);
        st = odnn_weight(b, &pmd, &pmd, NULL, (int64_t)n, &wi);
        if (st == NULL && b->imp == NULL) {
            odnn_smm_pack(&s, w.cdata, b->c->weights[wi].data);
            odnn_flush_denormals(&b->c->weights[wi]); /* as every weight's copy */
        }
    } else if (st == NULL && s.gemv) { /* as stored: in place when big (as gemm:jit read it) */
        dnnl_dims_t wdims = {(dnnl_dim_t)(s.k * s.n)};
        dnnl_memory_desc_t wmd;
        dnnl_memory_desc_init_by_tag(&wmd, 1, wdims, dnnl_f32, dnnl_a);
        st = odnn_weight_in_place(b, &wmd, &wmd, odnn_in(v, n, 1), w.cdata, (int64_t)n, &wi);
    }
    if (st == NULL && bias_t >= 0) { /* NPAD floats, zeros after N */
        float *pad = onednn_host->host_alloc(b->ctx->host_ctx, (size_t)s.npad * sizeof(float), 0);
        if (pad == NULL) {
            st = odnn_oom();
        } else {
            for (int64_t j = 0; j < s.npad; j++)
                pad[j] = j < s.n ? bias_scale * ((const float *)bt.cdata)[bt.elems == 1 ? 0 : j]
                                 : 0.0f;
            dnnl_dims_t bdims = {(dnnl_dim_t)s.npad};
            dnnl_memory_desc_t bmd;
            dnnl_memory_desc_init_by_tag(&bmd, 1, bdims, dnnl_f32, dnnl_a);
            st = odnn_weight(b, &bmd, &bmd, pad, (int64_t)n, &bw);
            odnn_free(b->ctx, pad);
        }
    }
    if (st == NULL)
        st = odnn_emit_fused_md(b, f, &ymd, &dst);
    struct odnn_step *sp = NULL;
    struct odnn_smm *keep = NULL;
    if (st == NULL &&
        ((keep = onednn_host->host_alloc(b->ctx->host_ctx, sizeof *keep, 0)) == NULL ||
         (sp = odnn_next_step(b, ODNN_S_SMM, (int64_t)n)) == NULL))
        st = odnn_oom();
    if (st == NULL && collapse)
        st = odnn_merged_rows(b, dst, f->out, n);
    if (st != NULL) {
        if (sp == NULL)
            odnn_free(b->ctx, keep);
        *out_st = st;
        return 1;
    }
    *keep = s;
    sp->smm = keep;
    size_t scratch = odnn_smm_scratch_bytes(&s, omp_get_max_threads());
    if (scratch > b->c->scratch_bytes) /* the shared scratchpad */
        b->c->scratch_bytes = scratch;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    if (wi >= 0)
        odnn_arg(b, step, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
    else
        odnn_arg(b, step, DNNL_ARG_WEIGHTS, ODNN_REF_VALUE, wv);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    if (bw >= 0)
        odnn_arg(b, step, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
    int64_t batch = 1;
    for (int d = 0; d < r - 2; d++)
        batch *= yd[d];
    if (s.gemv)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': one row by %lldx%lld constant weights%s on the "
                                 "module's own matrix-vector kernel, the weights as stored",
                                 onednn_host->graph->node_name(v, n), (long long)s.k,
                                 (long long)s.n, tb ? " (transposed)" : "");
    else
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': the module's own small product (%lld x "
                                 "%lldx%lldx%lld)",
                                 onednn_host->graph->node_name(v, n), (long long)batch,
                                 (long long)s.m, (long long)s.k, (long long)s.n);
    return 1;
}

/* A product of one row by a constant matrix of at least this many
 * elements reads its weights once, as they are stored: oneDNN's gemm:jit
 * on the plain matrix streams them faster than brgemm on its packed copy
 * (2 threads, each implementation of the primitive descriptor iterator
 * timed alone, mean of 30: 1x2048x1000 0.205 ms against 0.279,
 * 1x1280x1000 0.128 against 0.170, 1x4096x4096 1.85 against 2.24,
 * 1x9216x4096 4.4 against 5.8; at 1x768x768 and 1x512x1000 brgemm is as
 * fast or faster, and with 4 rows it wins). On AVX2, against the padded
 * rows odnn_weights_padded lays out (Gemm alone, 2 threads, medians of
 * 300): as fast or faster from 1x768x3072 to 1x25088x4096 (1x4096x1000
 * transposed 0.19-0.24 ms against 0.26-0.34), and a transposed B (every
 * nn.Linear's Gemm) is no longer transposed at load: VGG-19's 25088x4096
 * took 681 ms to reorder, a lone Gemm of it loads in 482 ms against 879. */
#define ODNN_GEMV_MIN_WEIGHTS (1024.0 * 1024.0)

/* The gemm:jit implementation of the product A x W (W plain, as the model
 * stores it) with post-ops PO, or NULL when oneDNN offers none. */
static dnnl_primitive_desc_t odnn_gemv_pd(struct odnn_build *b, const dnnl_memory_desc_t *a_md,
                                          const dnnl_memory_desc_t *w_md,
                                          const dnnl_memory_desc_t *bias_md,
                                          const dnnl_memory_desc_t *y_md, const_dnnl_post_ops_t po)
{
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_matmul_desc_init(&md, a_md, w_md, bias_md, y_md) != dnnl_success ||
        odnn_pd_named(b, &md, po, "gemm:", &pd) != dnnl_success)
        return NULL;
    return pd;
}

static pl_status *odnn_matmul_as(struct odnn_build *b, size_t n, int gemm, int collapse,
                                 int *out_unfit)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo a, w, y;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    odnn_tensor(v, odnn_in(v, n, 1), &w);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int ta = gemm && odnn_attr_int(v, n, "transA", 0);
    int tb = gemm && odnn_attr_int(v, n, "transB", 0);
    float alpha = gemm ? (float)odnn_attr_float(v, n, "alpha", 1.0) : 1.0f;
    float beta = gemm ? (float)odnn_attr_float(v, n, "beta", 1.0) : 1.0f;
    int64_t c_t = gemm ? odnn_in(v, n, 2) : -1;
    if (c_t >= 0 && beta == 0)
        c_t = -1;
    int r = y.ndim;
    dnnl_dims_t ad, wd, yd;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a.ndim), iw = i - (r - w.ndim);
        ad[i] = ia >= 0 ? a.dims[ia] : 1;
        wd[i] = iw >= 0 ? w.dims[iw] : 1;
        yd[i] = y.dims[i];
    }
    for (int i = 0; collapse && i < r - 2; i++) { /* the rows merged: [1, .., 1, rows, K] */
        ad[r - 2] *= ad[i];
        yd[r - 2] *= yd[i];
        ad[i] = yd[i] = 1;
    }
    dnnl_memory_desc_t a_md, w_md, w_src, y_md, bias_md;
    if (ta) { /* A is stored [K, M]: view it transposed */
        dnnl_dims_t sd = {ad[1], ad[0]}, st2 = {1, ad[1]};
        dnnl_memory_desc_init_by_strides(&a_md, 2, sd, dnnl_f32, st2);
    } else {
        dnnl_memory_desc_init_by_strides(&a_md, r, ad, dnnl_f32, NULL);
    }
    dnnl_dims_t wlog;
    memcpy(wlog, wd, sizeof wlog);
    if (tb) {
        wlog[0] = wd[1], wlog[1] = wd[0];
        dnnl_dims_t sw = {1, wd[1]};
        dnnl_memory_desc_init_by_strides(&w_src, 2, wlog, dnnl_f32, sw);
    } else {
        dnnl_memory_desc_init_by_strides(&w_src, r, wlog, dnnl_f32, NULL);
    }
    /* bf16: only with constant weights (reordered to bf16 once); A is read
     * as it is when its writer left it bf16, else reordered to bf16. */
    /* ... and with AMX (odnn_bf16_everywhere) only when the product fills a
     * tile: M, K and N at least ODNN_AMX_MIN_CHANNELS. transformer_padmask's
     * products of 2 rows by 48 ran 6-7x slower in bf16 on AMX than in f32
     * (0.074 ms against 0.010 for 12x2x48 by 48x144). */
    int64_t mm = ta ? ad[1] : ad[r - 2], kk = ta ? ad[0] : ad[r - 1], nn = wlog[r - 1];
    int fills = mm >= ODNN_AMX_MIN_CHANNELS && kk >= ODNN_AMX_MIN_CHANNELS &&
                nn >= ODNN_AMX_MIN_CHANNELS;
    dnnl_data_type_t cdt = w.cdata != NULL && !odnn_dequantized(b, odnn_in(v, n, 0))
                               ? odnn_compute_dt(b->ctx, odnn_bf16_everywhere() && fills)
                               : dnnl_f32;
    dnnl_memory_desc_t a_f32 = a_md;
    a_md.data_type = cdt;
    if (w.cdata != NULL && cdt == dnnl_f32 && !onednn_has_avx512())
        odnn_weights_padded(&w_md, r, wlog);
    else if (w.cdata != NULL)
        dnnl_memory_desc_init_by_tag(&w_md, r, wlog, cdt, dnnl_format_tag_any);
    else
        w_md = w_src;
    dnnl_memory_desc_init_by_strides(&y_md, r, yd, dnnl_f32, NULL);

    /* dst = post_ops(A*B + bias): alpha*A*B + beta*C is linear(alpha)
     * applied to A*B + (beta/alpha)*C. QDQ pairs after it join the
     * post-ops (odnn_append_qdq) when a real kernel takes the chain. */
    float bias_scale = alpha != 1.0f ? beta / alpha : beta;
    struct odnn_fuse f;
    for (int may_qdq = 1;; may_qdq = 0) {
        f = (struct odnn_fuse){.bias = -1, .residual = -1, .out = odnn_out(v, n, 0),
                               .linear_only = !onednn_has_avx512()};
        if (dnnl_post_ops_create(&f.po) != dnnl_success)
            return odnn_oom();
        f.fused[f.n_fused++] = n;
        if (alpha != 1.0f && !odnn_append_eltwise(&f, dnnl_eltwise_linear, alpha, 0)) {
            dnnl_post_ops_destroy(f.po);
            return odnn_oom();
        }
        b->no_qdq_post = !may_qdq;
        odnn_follow(b, &f, r - 1, c_t >= 0 || alpha != 1.0f);
        b->no_qdq_post = 0;
        if (collapse && !odnn_po_per_column(f.po)) {
            dnnl_post_ops_destroy(f.po);
            *out_unfit = 1; /* nothing emitted yet */
            return NULL;
        }
        if (f.n_scalar == 0 || odnn_matmul_po_fast(b, &a_md, &w_md, &y_md, f.po))
            break;
        dnnl_post_ops_destroy(f.po);
    }
    if (collapse && f.residual >= 0) {
        dnnl_post_ops_destroy(f.po);
        *out_unfit = 1;
        return NULL;
    }
    if (cdt != dnnl_f32 && odnn_bf16_readers(b, f.out))
        y_md.data_type = cdt; /* the next product reads it in bf16 as it is */
    int64_t bias_t = c_t >= 0 ? c_t : f.bias;
    if (cdt == dnnl_f32) {
        pl_status *os = NULL;
        int own = odnn_smm_own(b, n, &f, r, ad, wlog, yd, ta, tb, bias_t, bias_scale, collapse,
                               0, &os);
        if (own) {
            dnnl_post_ops_destroy(f.po);
            return os;
        }
    }
    struct odnn_tinfo bt;
    float *scaled = NULL;
    if (bias_t >= 0) {
        odnn_tensor(v, bias_t, &bt);
        dnnl_dims_t bdims;
        for (int i = 0; i < r; i++) {
            int ib = i - (r - bt.ndim);
            bdims[i] = ib >= 0 ? bt.dims[ib] : 1;
        }
        dnnl_memory_desc_init_by_strides(&bias_md, r, bdims, dnnl_f32, NULL);
    }
    pl_status *st = NULL;
    if (bias_t >= 0 && c_t >= 0 && bias_scale != 1.0f) {
        scaled = onednn_host->host_alloc(b->ctx->host_ctx, (size_t)bt.elems * sizeof(float), 0);
        if (scaled == NULL)
            st = odnn_oom();
        for (int64_t i = 0; st == NULL && i < bt.elems; i++)
            scaled[i] = ((const float *)bt.cdata)[i] * bias_scale;
    }
    int src = -1, wv = -1, wi = -1, bw = -1, dst = -1;
    if (st == NULL)
        st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL && w.cdata == NULL)
        st = odnn_source_view(b, odnn_in(v, n, 1), (int64_t)n, &wv);
    /* An f32 product reads A and B where they are, through strides (the
     * views a Split, Reshape or Transpose before it leaves), and writes the
     * layout that makes a Transpose after it a view: attention's head
     * split and merge then cost no copies. Kept only when a real kernel
     * takes those strides; else A and B are made dense. */
    dnnl_memory_desc_t a_view, w_view, y_view;
    int a_strided = 0, w_strided = 0, y_strided = 0;
    if (st == NULL && cdt == dnnl_f32 && !ta && !tb && !collapse) {
        a_strided = b->c->values[src].md.data_type == dnnl_f32 &&
                    odnn_rank_view(&b->c->values[src].md, r, &a_view) &&
                    !dnnl_memory_desc_equal(&a_view, &a_md);
        w_strided = wv >= 0 && b->c->values[wv].md.data_type == dnnl_f32 &&
                    odnn_rank_view(&b->c->values[wv].md, r, &w_view) &&
                    !dnnl_memory_desc_equal(&w_view, &w_src);
        y_strided = f.residual < 0 && odnn_transposed_dst(b, f.out, r, yd, &y_view) &&
                    !dnnl_memory_desc_equal(&y_view, &y_md);
    }
    dnnl_primitive_desc_t pd = NULL;
    if (a_strided || w_strided || y_strided) {
        dnnl_matmul_desc_t md;
        dnnl_primitive_attr_t attr = NULL;
        pl_status *as = odnn_attr(&attr, f.po);
        if (as != NULL)
            onednn_host->status_free(as);
        if (attr != NULL &&
            dnnl_matmul_desc_init(&md, a_strided ? &a_view : &a_md, w_strided ? &w_view : &w_md,
                                  bias_t >= 0 ? &bias_md : NULL, y_strided ? &y_view : &y_md) ==
                dnnl_success &&
            dnnl_primitive_desc_create(&pd, &md, attr, b->ctx->engine, NULL) == dnnl_success &&
            odnn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            pd = NULL;
        }
        if (attr != NULL)
            dnnl_primitive_attr_destroy(attr);
        if (pd == NULL)
            a_strided = w_strided = y_strided = 0;
        /* Products oneDNN reads through strides only on gemm:jit (Swin V2's
         * normalised queries by keys, LeViT's, DeBERTa's): small ones on the
         * module's own kernel instead, which reads strides as well. gemm:jit
         * makes its whole driver at its first use in a process (11-24 ms,
         * which a first run waits for) and costs about a microsecond per
         * batch entry before it multiplies. */
        pl_status *os = NULL;
        if (pd != NULL && st == NULL && odnn_pd_is_gemm(pd) &&
            odnn_smm_own(b, n, &f, r, ad, wlog, yd, ta, tb, bias_t, bias_scale, collapse, 1,
                         &os)) {
            dnnl_primitive_desc_destroy(pd);
            dnnl_post_ops_destroy(f.po);
            return os;
        }
    }
    int64_t rows = mm;
    for (int i = 0; i < r - 2; i++)
        rows *= ad[i];
    if (pd == NULL && st == NULL && w.cdata != NULL && cdt == dnnl_f32 && !ta && rows == 1 &&
        (double)kk * (double)nn >= ODNN_GEMV_MIN_WEIGHTS &&
        (pd = odnn_gemv_pd(b, &a_md, &w_src, bias_t >= 0 ? &bias_md : NULL, &y_md, f.po)) != NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': one row by %lldx%lld constant weights on gemm:jit, "
                                 "the weights as stored",
                                 onednn_host->graph->node_name(v, n), (long long)kk,
                                 (long long)nn);
    if (pd == NULL) {
        dnnl_matmul_desc_t md;
        dnnl_status_t ds = dnnl_matmul_desc_init(&md, &a_md, &w_md,
                                                 bias_t >= 0 ? &bias_md : NULL, &y_md);
        if (st == NULL)
            st = odnn_dnnl(ds, "matmul descriptor", v, (int64_t)n);
        if (st == NULL)
            st = odnn_make_pd(b, &md, f.po, n, &pd);
    }
    dnnl_post_ops_destroy(f.po);
    if (st == NULL && a_strided) {
        if (b->c->values[src].md.ndims != r && (src = odnn_alias(b, src, &a_view, -1, 0)) < 0)
            st = odnn_oom();
    } else if (st == NULL && cdt != dnnl_f32 && collapse &&
               b->c->values[src].md.data_type == cdt && odnn_is_plain(&b->c->values[src].md)) {
        /* merged rows of a row-major bf16 A its writer left: a view */
        dnnl_memory_desc_t as_f32 = b->c->values[src].md, a_c;
        as_f32.data_type = dnnl_f32;
        dnnl_memory_desc_init_by_strides(&a_c, r, ad, cdt, NULL);
        int al = odnn_is_row_major(&as_f32) ? odnn_alias(b, src, &a_c, -1, 0) : -2;
        /* (-2: not row-major, which odnn_matmul's check ruled out) */
        if (al == -1)
            st = odnn_oom();
        else if (al >= 0)
            src = al;
        else if ((st = odnn_view_as(b, src, &a_f32, (int64_t)n, &src)) == NULL)
            st = odnn_ensure(b, src, &a_md, (int64_t)n, &src);
    } else if (st == NULL && cdt != dnnl_f32 && !ta && !collapse &&
               b->c->values[src].md.ndims == r) {
        /* A dense bf16 A: the value itself when its writer made it so,
         * else one reorder from whatever layout it has. (Merged rows go
         * below: a view of the rows first, then the bf16 copy; a reorder
         * from [1, H, W, K] to [1, 1, H*W, K] fails, and failed the whole
         * subgraph of ConvNeXt's pointwise layers under precision = bf16.) */
        dnnl_memory_desc_t a_c;
        dnnl_memory_desc_init_by_strides(&a_c, r, ad, cdt, NULL);
        st = odnn_ensure(b, src, &a_c, (int64_t)n, &src);
    } else if (st == NULL) {
        st = odnn_view_as(b, src, &a_f32, (int64_t)n, &src);
        if (st == NULL && cdt != dnnl_f32) /* a bf16 copy; a transposed view stays so */
            st = odnn_ensure(b, src, &a_md, (int64_t)n, &src);
    }
    if (st == NULL && w.cdata != NULL)
        st = odnn_weight_in_place(b, odnn_pd_md(pd, DNNL_ARG_WEIGHTS), &w_src, odnn_in(v, n, 1),
                                  w.cdata, (int64_t)n, &wi);
    else if (st == NULL && w_strided) {
        if (b->c->values[wv].md.ndims != r && (wv = odnn_alias(b, wv, &w_view, -1, 0)) < 0)
            st = odnn_oom();
    } else if (st == NULL) {
        st = odnn_view_as(b, wv, &w_src, (int64_t)n, &wv);
    }
    if (st == NULL && bias_t >= 0)
        st = odnn_weight(b, &bias_md, &bias_md, scaled != NULL ? scaled : bt.cdata, (int64_t)n,
                         &bw);
    odnn_free(b->ctx, scaled);
    if (st == NULL)
        st = odnn_emit_fused(b, &f, pd, &dst);
    int s = -1;
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_MATMUL, pd, (int64_t)n, &st);
    if (st == NULL && collapse)
        st = odnn_merged_rows(b, dst, f.out, n);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (s < 0)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    if (wi >= 0)
        odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
    else
        odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_VALUE, wv);
    if (bw >= 0)
        odnn_arg(b, s, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return odnn_fuse_args(b, s, &f, (int64_t)n);
}

/* A primitive of one data source (pooling, eltwise, softmax, normalisation,
 * reduction): DESC is built by the caller from the source value's layout. */
static pl_status *odnn_simple(struct odnn_build *b, size_t n, uint32_t kind,
                              const_dnnl_op_desc_t desc, int src, int64_t out_t,
                              const int *extra_arg, const int *extra_weight, int n_extra)
{
    dnnl_primitive_desc_t pd = NULL;
    struct odnn_fuse qf;
    pl_status *st = odnn_make_pd_qdq(b, desc, n, &out_t, &qf, &pd);
    if (st == NULL)
        st = odnn_src_arg(b, pd, DNNL_ARG_SRC, src, n, &src);
    int dst = -1, s = -1;
    if (st == NULL && (dst = odnn_dst_value(b, out_t, pd)) < 0)
        st = odnn_oom();
    if (st == NULL)
        s = odnn_add_step(b, kind, pd, (int64_t)n, &st);
    /* Normalisations may want mean/variance buffers even for inference. */
    int stats[2] = {-1, -1};
    if (st == NULL && (kind == ODNN_S_LNORM)) {
        for (int k = 0; k < 2; k++) {
            const dnnl_memory_desc_t *m = odnn_pd_md(pd, k ? DNNL_ARG_VARIANCE : DNNL_ARG_MEAN);
            if (m != NULL && dnnl_memory_desc_get_size(m) > 0 &&
                (stats[k] = odnn_new_value(b, -1, ODNN_V_TEMP, m)) < 0)
                st = odnn_oom();
        }
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    for (int k = 0; k < n_extra; k++)
        odnn_arg(b, s, extra_arg[k], ODNN_REF_WEIGHT, extra_weight[k]);
    for (int k = 0; k < 2; k++)
        if (stats[k] >= 0) {
            odnn_arg(b, s, k ? DNNL_ARG_VARIANCE : DNNL_ARG_MEAN, ODNN_REF_VALUE, stats[k]);
            b->c->values[stats[k]].defined = 1;
        }
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return odnn_qdq_done(b, s, &qf, n);
}

static int odnn_desc_is_jit(struct odnn_build *b, const_dnnl_op_desc_t desc);
static int odnn_reshape_view(const dnnl_memory_desc_t *md, int ond, const int64_t *od,
                             dnnl_memory_desc_t *out);

/* A weight of K values 1/K (MEAN) or 1 in layout MD, for a reduction as a
 * product; *OUT its index. */
static pl_status *odnn_mean_vector(struct odnn_build *b, size_t n, const dnnl_memory_desc_t *md,
                                   int64_t k, int mean, int *out)
{
    float *vec = malloc((size_t)k * sizeof *vec);
    if (vec == NULL)
        return odnn_oom();
    for (int64_t i = 0; i < k; i++)
        vec[i] = mean ? 1.0f / (float)k : 1.0f;
    pl_status *st = odnn_weight(b, md, md, vec, (int64_t)n, out);
    free(vec);
    return st;
}

/* Node N's output as a view of value DST (a reduction's result in the
 * dims its primitive wrote), so that its readers see the tensor's own
 * shape. */
static pl_status *odnn_output_as_view(struct odnn_build *b, size_t n, int dst)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int ynd = y.ndim > 0 ? y.ndim : 1;
    int64_t one = 1;
    dnnl_memory_desc_t view_md;
    if (!odnn_reshape_view(&b->c->values[dst].md, ynd, y.ndim > 0 ? y.dims : &one, &view_md))
        return odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no view of its result",
                          onednn_host->graph->node_op(v, n), onednn_host->graph->node_name(v, n));
    return odnn_alias(b, dst, &view_md, odnn_out(v, n, 0), 0) < 0 ? odnn_oom() : NULL;
}

/* The mean (MEAN) or sum of ROWS rows of K trailing values of plain f32
 * value SRC as a product by a constant [K, 1] vector of 1/K (or 1) into
 * node N's output (a view of the [ROWS, 1] result when its dims differ):
 * oneDNN 2.6's reduction primitive takes about 0.2 us a row (1000 rows of
 * 64: 97 us, 11 as a product; onednn_reduce_by_matmul). Returns 1 when it
 * emitted the step (or failed: *OUT_ST), 0 when this is not the faster
 * way or only a reference kernel takes the product. */
static int odnn_reduce_by_matmul(struct odnn_build *b, size_t n, int src, int64_t rows,
                                 int64_t k, int mean, pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    if (!onednn_reduce_by_matmul(rows, k) || b->c->values[src].md.data_type != dnnl_f32)
        return 0;
    dnnl_memory_desc_t a_md, w_md, y_md;
    dnnl_dims_t ad = {rows, k}, wd = {k, 1}, yd = {rows, 1};
    dnnl_matmul_desc_t md;
    if (dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_f32, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&w_md, 2, wd, dnnl_f32, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&y_md, 2, yd, dnnl_f32, dnnl_ab) != dnnl_success ||
        dnnl_matmul_desc_init(&md, &a_md, &w_md, NULL, &y_md) != dnnl_success ||
        odnn_desc_is_ref(b, &md))
        return 0;
    int wi = -1;
    pl_status *st = odnn_mean_vector(b, n, &w_md, k, mean, &wi);
    if (st == NULL)
        st = odnn_view_as(b, src, &a_md, (int64_t)n, &src);
    struct odnn_tinfo y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int direct = y.ndim == 2 && y.dims[0] == rows && y.dims[1] == 1;
    if (st == NULL)
        st = odnn_simple(b, n, ODNN_S_MATMUL, &md, src, direct ? odnn_out(v, n, 0) : -1,
                         (const int[]){DNNL_ARG_WEIGHTS}, &wi, 1);
    *out_st = st != NULL || direct ? st : odnn_output_as_view(b, n, b->c->n_values - 1);
    return 1;
}

/* How the module's own pooling reads MD, a 3-D or 4-D f32 value of dims
 * [N, C, (H,) W]: channel blocks of 8 or 16 (aBc8b, aBcd8b, ...16b), or
 * channels-last with C a multiple of 8, as *GROUPS groups of *VECS 8-lane
 * vectors a pixel, ST the strides in floats of an image, a group, a row and
 * a column (a 1-D value's row stride 0). 0 for any other layout. */
static int odnn_pool_layout(const dnnl_memory_desc_t *md, int64_t *groups, int64_t *vecs,
                            int64_t st[4])
{
    if (md->data_type != dnnl_f32 || md->format_kind != dnnl_blocked ||
        (md->ndims != 3 && md->ndims != 4) || md->offset0 != 0)
        return 0;
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    const dnnl_dim_t *s = bd->strides;
    int sp = md->ndims == 4; /* a 1-D window reads row 0 only */
    st[0] = s[0];
    st[2] = sp ? s[2] : 0;
    st[3] = s[md->ndims - 1];
    if (bd->inner_nblks == 1 && bd->inner_idxs[0] == 1 &&
        (bd->inner_blks[0] == 8 || bd->inner_blks[0] == 16)) {
        int64_t blk = bd->inner_blks[0];
        /* the block innermost: a pixel's channels are BLK floats in a row */
        if (st[3] != blk || md->padded_dims[1] % blk != 0)
            return 0;
        *groups = md->padded_dims[1] / blk;
        *vecs = blk / 8;
        st[1] = s[1];
        return 1;
    }
    if (bd->inner_nblks == 0 && s[1] == 1 && md->dims[1] % 8 == 0 &&
        st[3] == md->dims[1] && (!sp || st[2] == md->dims[1] * md->dims[3])) {
        *groups = 1;
        *vecs = md->dims[1] / 8;
        st[1] = 0;
        return 1;
    }
    return 0;
}

/* YMD: XM's layout (as odnn_pool_layout reads it) for Y's dims, dense;
 * its groups, vectors and strides. 0 when XM is not such a layout. */
static int odnn_vector_md_like(const dnnl_memory_desc_t *xm, const struct odnn_tinfo *y,
                               dnnl_memory_desc_t *ymd, int64_t *groups, int64_t *vecs,
                               int64_t ys[4])
{
    int64_t xs[4];
    if (y->ndim != xm->ndims || !odnn_pool_layout(xm, groups, vecs, xs))
        return 0;
    *ymd = *xm;
    for (int d = 0; d < y->ndim; d++)
        ymd->dims[d] = ymd->padded_dims[d] = y->dims[d];
    ymd->padded_dims[1] = xm->padded_dims[1];
    ymd->extra.flags = 0;
    dnnl_dim_t *ystr = ymd->format_desc.blocking.strides;
    int64_t blk = ymd->format_desc.blocking.inner_nblks == 1
                      ? ymd->format_desc.blocking.inner_blks[0]
                      : 1;
    int sp = y->ndim == 4;
    int64_t yh = sp ? y->dims[2] : 1, yw = y->dims[y->ndim - 1];
    if (blk > 1) { /* [N][C/blk][H][W][blk] */
        ystr[y->ndim - 1] = blk;
        if (sp)
            ystr[2] = yw * blk;
        ystr[1] = yh * yw * blk;
        ystr[0] = ymd->padded_dims[1] / blk * ystr[1];
    } else { /* [N][H][W][C] */
        ystr[1] = 1;
        ystr[y->ndim - 1] = y->dims[1];
        if (sp)
            ystr[2] = yw * y->dims[1];
        ystr[0] = yh * yw * y->dims[1];
    }
    return odnn_pool_layout(ymd, groups, vecs, ys);
}

/* Node N's pooling on the module's own kernel (onednn_pool.c) instead of
 * oneDNN's pooling primitive, where the CPU is below AVX-512 (oneDNN's jit:avx2
 * pooling took 4 to 9 times as long), direct_conv is on, the source SRC is
 * f32 in a layout the kernel reads, and no QuantizeLinear would have been
 * fused into the pooling. 1 when it emitted the step (or failed: *OUT_ST). */
static int odnn_pool_own(struct odnn_build *b, size_t n, int src, dnnl_alg_kind_t alg,
                         const struct odnn_window *w, const struct odnn_tinfo *x,
                         const struct odnn_tinfo *y, pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    if (!b->u.own || w->sr > 2 || x->ndim != y->ndim)
        return 0;
    struct odnn_fuse qf;
    memset(&qf, 0, sizeof qf);
    int quantized = odnn_qdq_post(b, n, &qf);
    if (qf.po != NULL)
        dnnl_post_ops_destroy(qf.po);
    if (quantized)
        return 0;
    const dnnl_memory_desc_t *xm = &b->c->values[src].md;
    struct odnn_pool p;
    memset(&p, 0, sizeof p);
    int64_t xs[4], ys[4];
    if (!odnn_pool_layout(xm, &p.groups, &p.vecs, xs))
        return 0;
    dnnl_memory_desc_t ymd;
    int64_t groups, vecs;
    if (!odnn_vector_md_like(xm, y, &ymd, &groups, &vecs, ys) || groups != p.groups ||
        vecs != p.vecs)
        return 0;
    int sp = y->ndim == 4;
    int64_t yh = sp ? y->dims[2] : 1, yw = y->dims[y->ndim - 1];
    p.max = alg == dnnl_pooling_max;
    p.include_pad = alg == dnnl_pooling_avg_include_padding;
    p.n = x->dims[0];
    p.ih = sp ? x->dims[2] : 1, p.iw = x->dims[x->ndim - 1];
    p.oh = yh, p.ow = yw;
    int hi = sp ? 0 : -1, wi = sp ? 1 : 0; /* the window's index of each axis */
    p.kh = hi >= 0 ? w->k[hi] : 1, p.sh = hi >= 0 ? w->s[hi] : 1, p.dh = hi >= 0 ? w->d[hi] : 1;
    p.ph = hi >= 0 ? w->pl[hi] : 0;
    p.kw = w->k[wi], p.sw = w->s[wi], p.dw = w->d[wi], p.pw = w->pl[wi];
    p.xs_n = xs[0], p.xs_g = xs[1], p.xs_h = xs[2], p.xs_w = xs[3];
    p.ys_n = ys[0], p.ys_g = ys[1], p.ys_h = ys[2], p.ys_w = ys[3];
    if (!sp)
        p.xs_h = p.ys_h = 0;
    int dst = odnn_new_value(b, odnn_out(v, n, 0), ODNN_V_TEMP, &ymd);
    struct odnn_step *s = dst >= 0 ? odnn_next_step(b, ODNN_S_OPOOL, (int64_t)n) : NULL;
    if (s == NULL) {
        *out_st = odnn_oom();
        return 1;
    }
    s->pool = p;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s': the module's own %s pooling",
                             onednn_host->graph->node_name(v, n), p.max ? "max" : "average");
    return 1;
}

/* The divisor of D nearest its square root. */
static int64_t odnn_mid_divisor(int64_t d)
{
    double r = sqrt((double)d);
    int64_t best = 1;
    for (int64_t k = 2; k <= d; k++)
        if (d % k == 0 && fabs((double)k - r) < fabs((double)best - r))
            best = k;
    return best;
}

/* Elements one average pooling sums in one go at most: oneDNN's kernels
 * add a window's values one after the other, so the rounding error of a
 * mean grows with the window (a squeeze-and-excitation block's
 * GlobalAveragePool over 160x160 came out 1.2e-4 off, relative, against
 * 6e-6 on cpu: ppocr6_det with AVX-512). */
#define ODNN_POOL_SPLIT 1024

/* A 2-D GlobalAveragePool (node N, input X, output Y, from value SRC) of a
 * window larger than ODNN_POOL_SPLIT as two average poolings: means of
 * blocks of about the square root of the rows and of the columns (that
 * stride), then the mean of those, which over blocks of equal size is the
 * whole mean; each sums about the square root of the window. 1 when it
 * emitted them (or failed: *OUT_ST); 0 for a smaller window or sizes whose
 * divisors give no smaller sums. */
static int odnn_global_avg_in_two(struct odnn_build *b, size_t n, const struct odnn_tinfo *x,
                                  const dnnl_memory_desc_t *dst_md, int src, pl_status **out_st)
{
    *out_st = NULL;
    if (x->ndim != 4 || x->dims[2] * x->dims[3] <= ODNN_POOL_SPLIT)
        return 0;
    int64_t h = x->dims[2], w = x->dims[3];
    int64_t kh = odnn_mid_divisor(h), kw = odnn_mid_divisor(w);
    int64_t first = kh * kw, second = (h / kh) * (w / kw);
    if (first <= 1 || second <= 1 || (first > ODNN_POOL_SPLIT && second > ODNN_POOL_SPLIT))
        return 0;
    dnnl_dims_t md_dims = {x->dims[0], x->dims[1], h / kh, w / kw};
    dnnl_memory_desc_t mid_md;
    dnnl_memory_desc_init_by_tag(&mid_md, 4, md_dims, b->c->values[src].md.data_type,
                                 dnnl_format_tag_any);
    dnnl_dims_t k1 = {kh, kw}, k2 = {h / kh, w / kw}, zero = {0, 0};
    dnnl_pooling_v2_desc_t p1, p2;
    if (dnnl_pooling_v2_forward_desc_init(&p1, dnnl_forward_inference,
                                          dnnl_pooling_avg_exclude_padding,
                                          &b->c->values[src].md, &mid_md, k1, k1, zero, zero,
                                          zero) != dnnl_success ||
        !odnn_desc_is_jit(b, &p1))
        return 0;
    *out_st = odnn_simple(b, n, ODNN_S_POOL, &p1, src, -1, NULL, NULL, 0);
    if (*out_st != NULL)
        return 1;
    int mid = b->c->n_values - 1; /* odnn_simple's destination, made last */
    dnnl_status_t ds = dnnl_pooling_v2_forward_desc_init(
        &p2, dnnl_forward_inference, dnnl_pooling_avg_exclude_padding, &b->c->values[mid].md,
        dst_md, k2, k2, zero, zero, zero);
    *out_st = odnn_dnnl(ds, "pooling descriptor", b->v, (int64_t)n);
    if (*out_st == NULL)
        *out_st = odnn_simple(b, n, ODNN_S_POOL, &p2, mid, odnn_out(b->v, n, 0), NULL, NULL, 0);
    if (*out_st == NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': GlobalAveragePool of %lldx%lld as %lldx%lld blocks "
                                 "then their mean",
                                 onednn_host->graph->node_name(b->v, n), (long long)h,
                                 (long long)w, (long long)kh, (long long)kw);
    return 1;
}

static pl_status *odnn_pool(struct odnn_build *b, size_t n, const char *op, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    struct odnn_window w;
    dnnl_alg_kind_t alg = dnnl_pooling_max;
    int gmax = strcmp(op, "GlobalMaxPool") == 0;
    if (strcmp(op, "GlobalAveragePool") == 0 || gmax) {
        memset(&w, 0, sizeof w);
        w.sr = x.ndim - 2;
        for (int i = 0; i < 3; i++) {
            w.k[i] = i < w.sr ? x.dims[2 + i] : 1;
            w.s[i] = w.d[i] = 1;
        }
        alg = gmax ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
        if (!gmax && odnn_is_plain(&b->c->values[src].md) &&
            b->c->values[src].md.data_type == dnnl_f32 && y.ndim == x.ndim) {
            /* A plain source (a graph input, a plain writer): a mean over
             * the trailing axes is a product by a constant vector or
             * oneDNN's JIT reduction, where reordering it into a blocked
             * layout for the pooling cost twice the pooling. */
            pl_status *st = NULL;
            int64_t k = 1;
            for (int i = 2; i < x.ndim; i++)
                k *= x.dims[i];
            if (odnn_is_row_major(&b->c->values[src].md) &&
                odnn_reduce_by_matmul(b, n, src, x.dims[0] * x.dims[1], k, 1, &st))
                return st;
            dnnl_memory_desc_t ymd;
            odnn_plain_md(&ymd, y.ndim, y.dims);
            dnnl_reduction_desc_t rd;
            if (dnnl_reduction_desc_init(&rd, dnnl_reduction_mean, &b->c->values[src].md, &ymd,
                                         0, 0) == dnnl_success &&
                odnn_desc_is_jit(b, &rd))
                return odnn_simple(b, n, ODNN_S_REDUCE, &rd, src, odnn_out(v, n, 0), NULL, NULL,
                                   0);
        }
    } else {
        const int64_t *ks;
        odnn_attr_ints(v, n, "kernel_shape", &ks);
        char reason[ODNN_REASON] = "";
        if (!odnn_window(v, n, op, &x, ks, &y, &w, reason))
            return odnn_error(PL_CODE_UNSUPPORTED, "%s", reason);
        if (op[0] == 'A')
            alg = odnn_attr_int(v, n, "count_include_pad", 0) ? dnnl_pooling_avg_include_padding
                                                              : dnnl_pooling_avg_exclude_padding;
    }
    dnnl_memory_desc_t dst_md;
    dnnl_dims_t yd;
    for (int i = 0; i < y.ndim; i++)
        yd[i] = y.dims[i];
    /* the source's type: bf16 activations stay bf16 (precision = bf16) */
    dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, b->c->values[src].md.data_type,
                                 dnnl_format_tag_any);
    dnnl_dims_t strides, kernel, dil, pl, pr;
    for (int i = 0; i < 3; i++) {
        strides[i] = w.s[i], kernel[i] = w.k[i], dil[i] = w.d[i] - 1;
        pl[i] = w.pl[i], pr[i] = w.pr[i];
    }
    dnnl_pooling_v2_desc_t pd;
    dnnl_status_t ds =
        dnnl_pooling_v2_forward_desc_init(&pd, dnnl_forward_inference, alg, &b->c->values[src].md,
                                          &dst_md, strides, kernel, dil, pl, pr);
    pl_status *st = odnn_dnnl(ds, "pooling descriptor", v, (int64_t)n);
    if (st == NULL && odnn_is_plain(&b->c->values[src].md) && !odnn_desc_is_jit(b, &pd)) {
        /* oneDNN 2.6 pools a plain (nchw) source in "simple_nchw", a C++
         * loop: a 3x3 stride-2 MaxPool of 64x56x56 took 2.2 ms there against
         * 0.1 ms in ONNX Runtime. A graph input or a plain writer's output
         * is reordered into the channel blocking its JIT kernel takes. */
        static const dnnl_format_tag_t tags[3][3] = {{dnnl_aBc16b, dnnl_aBc8b, dnnl_acb},
                                                     {dnnl_aBcd16b, dnnl_aBcd8b, dnnl_acdb},
                                                     {dnnl_aBcde16b, dnnl_aBcde8b, dnnl_acdeb}};
        /* 8-bit values pool channels-last (jit_int; a plain u8 MaxPool of
         * 64x23x23 took 1.6 ms in ref:any) */
        int q8 = b->c->values[src].md.data_type == dnnl_u8 ||
                 b->c->values[src].md.data_type == dnnl_s8;
        for (int k = q8 ? 2 : 0; k < 3 && x.ndim >= 3 && x.ndim <= 5; k++) {
            dnnl_memory_desc_t bmd;
            dnnl_dims_t xd;
            for (int i = 0; i < x.ndim; i++)
                xd[i] = x.dims[i];
            dnnl_pooling_v2_desc_t bpd;
            if (dnnl_memory_desc_init_by_tag(&bmd, x.ndim, xd, b->c->values[src].md.data_type,
                                             tags[x.ndim - 3][k]) != dnnl_success ||
                dnnl_pooling_v2_forward_desc_init(&bpd, dnnl_forward_inference, alg, &bmd,
                                                  &dst_md, strides, kernel, dil, pl,
                                                  pr) != dnnl_success ||
                !odnn_desc_is_jit(b, &bpd))
                continue;
            st = odnn_ensure(b, src, &bmd, (int64_t)n, &src);
            pd = bpd;
            break;
        }
    }
    if (st == NULL && odnn_pool_own(b, n, src, alg, &w, &x, &y, &st))
        return st;
    if (st == NULL && !gmax && strcmp(op, "GlobalAveragePool") == 0 &&
        odnn_global_avg_in_two(b, n, &x, &dst_md, src, &st))
        return st;
    return st != NULL ? st
                      : odnn_simple(b, n, ODNN_S_POOL, &pd, src, odnn_out(v, n, 0), NULL, NULL, 0);
}

/* An eltwise step, on SRC's layout unless oneDNN has only its reference
 * kernel for that (a channel-blocked layout whose channels do not fill
 * the last block is not dense, which its kernels want): then on a plain
 * copy. */
static pl_status *odnn_eltwise(struct odnn_build *b, size_t n, int src, dnnl_alg_kind_t alg,
                               float alpha, float beta, int64_t out_t)
{
    dnnl_eltwise_desc_t ed;
    for (int tries = 0;; tries++) {
        dnnl_status_t ds = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg,
                                                          &b->c->values[src].md, alpha, beta);
        pl_status *st = odnn_dnnl(ds, "eltwise descriptor", b->v, (int64_t)n);
        if (st != NULL)
            return st;
        if (tries > 0 || odnn_is_plain(&b->c->values[src].md) || !odnn_desc_is_ref(b, &ed))
            break;
        if ((st = odnn_plain(b, src, (int64_t)n, &src)) != NULL)
            return st;
    }
    return odnn_simple(b, n, ODNN_S_ELTWISE, &ed, src, out_t, NULL, NULL, 0);
}

/* PRelu node N of value SRC by its C slopes (odnn_prelu_of) as oneDNN's
 * prelu primitive, the slopes laid out as it asks ([1, C, 1, ...]). */
static pl_status *odnn_prelu_emit(struct odnn_build *b, size_t n, int src)
{
    const float *slope;
    if (!odnn_prelu_of(b->v, n, &slope))
        return odnn_error(PL_CODE_UNSUPPORTED, "PRelu: the slope is not one per channel");
    for (int tries = 0;; tries++) {
        const dnnl_memory_desc_t x_md = b->c->values[src].md;
        dnnl_dims_t wd;
        for (int d = 0; d < x_md.ndims; d++)
            wd[d] = d == 1 ? x_md.dims[1] : 1;
        dnnl_memory_desc_t plain, any;
        dnnl_memory_desc_init_by_strides(&plain, x_md.ndims, wd, dnnl_f32, NULL);
        dnnl_memory_desc_init_by_tag(&any, x_md.ndims, wd, dnnl_f32, dnnl_format_tag_any);
        dnnl_prelu_desc_t pd_desc;
        dnnl_primitive_desc_t pd = NULL;
        pl_status *st = odnn_dnnl(dnnl_prelu_forward_desc_init(&pd_desc, dnnl_forward_inference,
                                                               &x_md, &any),
                                  "prelu descriptor", b->v, (int64_t)n);
        if (st == NULL)
            st = odnn_dnnl(dnnl_primitive_desc_create(&pd, &pd_desc, NULL, b->ctx->engine, NULL),
                           "prelu primitive", b->v, (int64_t)n);
        if (st != NULL)
            return st;
        /* a blocked source may have only the reference kernel: plain then */
        if (tries == 0 && !odnn_is_plain(&x_md) && odnn_pd_is_ref(pd)) {
            dnnl_primitive_desc_destroy(pd);
            if ((st = odnn_plain(b, src, (int64_t)n, &src)) != NULL)
                return st;
            continue;
        }
        dnnl_memory_desc_t w_md = *odnn_pd_md(pd, DNNL_ARG_WEIGHTS);
        dnnl_primitive_desc_destroy(pd);
        int wi;
        if ((st = odnn_weight(b, &w_md, &plain, slope, (int64_t)n, &wi)) != NULL)
            return st;
        if ((st = odnn_dnnl(dnnl_prelu_forward_desc_init(&pd_desc, dnnl_forward_inference,
                                                         &x_md, &w_md),
                            "prelu descriptor", b->v, (int64_t)n)) != NULL)
            return st;
        const int arg = DNNL_ARG_WEIGHTS;
        return odnn_simple(b, n, ODNN_S_ELTWISE, &pd_desc, src, odnn_out(b->v, n, 0), &arg,
                           &wi, 1);
    }
}

/* The K eltwise steps SEQ of node N from value SRC into tensor OUT_T, one
 * primitive each (oneDNN 2.6 runs an eltwise with post-ops only in its
 * reference implementation), through a temporary between them. */
static pl_status *odnn_eltwise_steps(struct odnn_build *b, size_t n, int src,
                                     const struct odnn_elt *seq, int k, int64_t out_t)
{
    for (int i = 0; i < k; i++) {
        pl_status *st = odnn_eltwise(b, n, src, seq[i].alg, seq[i].alpha, seq[i].beta,
                                     i == k - 1 ? out_t : -1);
        if (st != NULL)
            return st;
        src = b->c->n_values - 1; /* odnn_simple's destination, made last */
    }
    return NULL;
}

/* Weights of shape [C] from constant T (optionally transformed). */
static pl_status *odnn_vector_weight(struct odnn_build *b, size_t n, int64_t t, int64_t c,
                                     const float *data, int *out)
{
    dnnl_memory_desc_t md;
    dnnl_dims_t d = {c};
    dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_f32, dnnl_a);
    struct odnn_tinfo ti;
    odnn_tensor(b->v, t, &ti);
    return odnn_weight(b, &md, &md, data != NULL ? (const void *)data : ti.cdata, (int64_t)n, out);
}

/* Whether PD runs in one of oneDNN's jit kernels (its name starts "jit" or
 * has ":jit" / "_jit" in it: "bnorm_jit:avx512_core", "jit:uni"). */
static int odnn_pd_is_jit(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
           impl != NULL && (strncmp(impl, "jit", 3) == 0 || strstr(impl, "_jit") != NULL);
}

/* The Relu that alone reads node N's output and is not yet emitted, or -1:
 * a batch normalization's one-pass forms apply it as they write. */
static int64_t odnn_bnorm_relu(struct odnn_build *b, size_t n)
{
    int64_t r = odnn_sole_reader(&b->u, odnn_out(b->v, n, 0));
    return r >= 0 && !b->done[r] && odnn_op_is(b->v, r, "Relu") ? r : -1;
}

/* Batch normalization of the channels-last value SRC (XMD) as a depthwise
 * 1x1 convolution: weight S, bias T (C values each), written dense
 * channels-last. oneDNN 2.6's jit binary multiplies a channels-last map by
 * per-channel values a pixel at a time: 4 channels of 112x112 took 0.054 ms
 * as binary_mul + binary_add where its brdgmm_dw took 0.006, 20 of 56x56
 * 0.017 against 0.004, 128 of 14x14 0.004 against 0.002 (2 threads, AVX-512;
 * RepGhostNet's fusion_bn, 32 of them: 0.7 of its 1.9 ms). Returns 1 when
 * it emitted the step (or failed: *OUT_ST), 0 when SRC is not channels
 * last (channels first gets oneDNN's GEMM, slower than the binary there)
 * or oneDNN has no jit depthwise kernel for it. */
static int odnn_bnorm_depthwise(struct odnn_build *b, size_t n, int src,
                                const dnnl_memory_desc_t *xmd, const float *s, const float *t,
                                pl_status **out_st)
{
    static const dnnl_format_tag_t wtags[6] = {0, 0, 0, dnnl_goiw, dnnl_goihw, dnnl_goidhw};
    static const dnnl_format_tag_t ytags[6] = {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb};
    int nd = xmd->ndims;
    *out_st = NULL;
    if (nd < 3 || nd > 5 || !odnn_is_plain(xmd) || xmd->format_desc.blocking.strides[1] != 1)
        return 0;
    int64_t c = xmd->dims[1];
    dnnl_dims_t wd = {c, 1, 1, 1, 1, 1}, bd_dims = {c}, strides = {1, 1, 1}, pads = {0, 0, 0};
    dnnl_memory_desc_t wany, wuser, bmd, ymd; /* the result dense channels-last */
    dnnl_memory_desc_init_by_tag(&ymd, nd, xmd->dims, dnnl_f32, ytags[nd]);
    dnnl_memory_desc_init_by_tag(&wany, nd + 1, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wuser, nd + 1, wd, dnnl_f32, wtags[nd]);
    dnnl_memory_desc_init_by_tag(&bmd, 1, bd_dims, dnnl_f32, dnnl_a);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    int64_t relu = odnn_bnorm_relu(b, n);
    if (dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
                                           xmd, &wany, &bmd, &ymd, strides, pads,
                                           pads) != dnnl_success)
        return 0;
    if (relu >= 0 && (dnnl_post_ops_create(&po) != dnnl_success ||
                      dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) !=
                          dnnl_success)) {
        if (po != NULL)
            dnnl_post_ops_destroy(po);
        po = NULL;
        relu = -1;
    }
    *out_st = odnn_attr(&attr, po);
    if (po != NULL)
        dnnl_post_ops_destroy(po);
    if (*out_st != NULL)
        return 1;
    if (dnnl_primitive_desc_create(&pd, &cd, attr, b->ctx->engine, NULL) != dnnl_success)
        pd = NULL;
    dnnl_primitive_attr_destroy(attr);
    const char *impl = NULL;
    if (pd == NULL ||
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
        impl == NULL || strstr(impl, "dw") == NULL || strstr(impl, "ref") != NULL) {
        if (pd != NULL)
            dnnl_primitive_desc_destroy(pd);
        return 0;
    }
    int w = -1, bw = -1, dst = -1, step = -1;
    int64_t out_t = relu >= 0 ? odnn_out(b->v, (size_t)relu, 0) : odnn_out(b->v, n, 0);
    *out_st = odnn_weight(b, odnn_pd_md(pd, DNNL_ARG_WEIGHTS), &wuser, s, (int64_t)n, &w);
    if (*out_st == NULL)
        *out_st = odnn_weight(b, &bmd, &bmd, t, (int64_t)n, &bw);
    if (*out_st == NULL && (dst = odnn_dst_value(b, out_t, pd)) < 0)
        *out_st = odnn_oom();
    if (*out_st == NULL && relu >= 0)
        b->done[relu] = 1;
    if (*out_st == NULL)
        step = odnn_add_step(b, ODNN_S_CONV, pd, (int64_t)n, out_st);
    if (*out_st == NULL) {
        odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
        odnn_arg(b, step, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, w);
        odnn_arg(b, step, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
        odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    }
    dnnl_primitive_desc_destroy(pd);
    return 1;
}

/* Batch normalization of the dense channels-first value SRC (XMD) as the
 * module's own step (odnn_affine_run): y = x * S + T plane by plane, one
 * pass. oneDNN 2.6's jit binary_mul with the per-channel add as a post-op
 * took 3x its multiply alone (8 channels of 112x112: 0.0127 ms against
 * 0.0035; 2 threads, AVX-512), the post-op's offsets computed a value at a
 * time. Returns 1 when it emitted the step (or failed: *OUT_ST), 0 when
 * SRC is not dense row-major. */
static int odnn_bnorm_planes(struct odnn_build *b, size_t n, int src,
                             const dnnl_memory_desc_t *xmd, const float *s, const float *t,
                             pl_status **out_st)
{
    *out_st = NULL;
    if (!odnn_is_row_major(xmd))
        return 0;
    int64_t c = xmd->dims[1], spatial = 1;
    for (int d = 2; d < xmd->ndims; d++)
        spatial *= xmd->dims[d];
    dnnl_dims_t cd = {c};
    dnnl_memory_desc_t cmd;
    dnnl_memory_desc_init_by_tag(&cmd, 1, cd, dnnl_f32, dnnl_a);
    int w[2] = {-1, -1};
    for (int k = 0; *out_st == NULL && k < 2; k++)
        *out_st = odnn_weight(b, &cmd, &cmd, k ? t : s, (int64_t)n, &w[k]);
    if (*out_st != NULL)
        return 1;
    const dnnl_memory_desc_t x_md = *xmd; /* values may move */
    int64_t relu = odnn_bnorm_relu(b, n);
    int64_t out_t = relu >= 0 ? odnn_out(b->v, (size_t)relu, 0) : odnn_out(b->v, n, 0);
    int out = odnn_new_value(b, out_t, ODNN_V_TEMP, &x_md);
    struct odnn_step *st = out >= 0 ? odnn_next_step(b, ODNN_S_AFFINE, (int64_t)n) : NULL;
    if (st == NULL) {
        *out_st = odnn_oom();
        return 1;
    }
    if (relu >= 0)
        b->done[relu] = 1;
    st->relu = relu >= 0;
    st->rows = x_md.dims[0] * c;
    st->cols = spatial;
    st->chans = c;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    odnn_arg(b, step, DNNL_ARG_SCALE, ODNN_REF_WEIGHT, w[0]);
    odnn_arg(b, step, DNNL_ARG_SHIFT, ODNN_REF_WEIGHT, w[1]);
    return 1;
}

/* Inference batch normalization of value SRC (not channel-blocked) as one
 * binary primitive, y = x * s + t with s = scale / sqrt(var + eps) and
 * t = bias - mean * s per channel: a multiply by [1,C,1..] with the add as
 * a binary post-op. oneDNN 2.6 has jit batch normalization for blocked
 * layouts only: plain (ncsp) and channels-last run its generic C++ loops,
 * several times slower than its jit binary, which takes any layout.
 * Returns 1 when it emitted the step (or failed: *OUT_ST), 0 when the
 * parameters are not constant f32 or no jit binary takes it. */
static int odnn_bnorm_affine(struct odnn_build *b, size_t n, int src, float eps,
                             pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    const dnnl_memory_desc_t x_md = b->c->values[src].md, *xmd = &x_md; /* values may move */
    int64_t c = xmd->dims[1], spatial = 1;
    for (int d = 2; d < xmd->ndims; d++)
        spatial *= xmd->dims[d];
    /* oneDNN 2.6's jit binary with this post-op gave wrong sums for
     * [N,C,1] and [N,C,1,1] sources with N = 2 (difftest mixed:f32:48,
     * 213, 389, 415): where the spatial dims are all 1 the tensor is tiny
     * anyway, and the batch normalization primitive takes it. */
    if (xmd->data_type != dnnl_f32 || xmd->ndims < 3 || c < 1 || spatial < 2)
        return 0;
    const float *p[4];
    for (int k = 0; k < 4; k++) {
        struct odnn_tinfo ti;
        if (!odnn_tensor(v, odnn_in(v, n, (size_t)k + 1), &ti) || !ti.f32 || ti.cdata == NULL ||
            ti.elems != c)
            return 0;
        p[k] = ti.cdata;
    }
    float *st_vals = onednn_host->host_alloc(b->ctx->host_ctx, 2 * (size_t)c * sizeof(float), 64);
    if (st_vals == NULL) {
        *out_st = odnn_oom();
        return 1;
    }
    for (int64_t i = 0; i < c; i++) {
        st_vals[i] = p[0][i] / sqrtf(p[3][i] + eps);
        st_vals[c + i] = p[1][i] - p[2][i] * st_vals[i];
    }
    if (odnn_bnorm_depthwise(b, n, src, xmd, st_vals, st_vals + c, out_st) ||
        odnn_bnorm_planes(b, n, src, xmd, st_vals, st_vals + c, out_st)) {
        onednn_host->host_free(b->ctx->host_ctx, st_vals);
        return 1;
    }
    dnnl_dims_t wd, xd;
    for (int d = 0; d < xmd->ndims; d++) {
        wd[d] = d == 1 ? c : 1;
        xd[d] = xmd->dims[d];
    }
    dnnl_memory_desc_t wmd, dst_md;
    dnnl_memory_desc_init_by_strides(&wmd, xmd->ndims, wd, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_tag(&dst_md, xmd->ndims, xd, dnnl_f32, dnnl_format_tag_any);
    dnnl_post_ops_t po = NULL;
    dnnl_binary_desc_t bd;
    dnnl_primitive_desc_t pd = NULL;
    int done = 0;
    if (dnnl_post_ops_create(&po) == dnnl_success &&
        dnnl_post_ops_append_binary(po, dnnl_binary_add, &wmd) == dnnl_success &&
        dnnl_binary_desc_init(&bd, dnnl_binary_mul, xmd, &wmd, &dst_md) == dnnl_success) {
        dnnl_primitive_attr_t attr;
        *out_st = odnn_attr(&attr, po);
        if (*out_st == NULL) {
            if (dnnl_primitive_desc_create(&pd, &bd, attr, b->ctx->engine, NULL) != dnnl_success)
                pd = NULL;
            dnnl_primitive_attr_destroy(attr);
        }
    }
    if (po != NULL)
        dnnl_post_ops_destroy(po);
    if (*out_st == NULL && pd != NULL && odnn_pd_is_jit(pd)) {
        done = 1;
        int w[2] = {-1, -1}, dst = -1, s = -1;
        for (int k = 0; *out_st == NULL && k < 2; k++)
            *out_st = odnn_weight(b, &wmd, &wmd, st_vals + k * c, (int64_t)n, &w[k]);
        if (*out_st == NULL && (dst = odnn_dst_value(b, odnn_out(v, n, 0), pd)) < 0)
            *out_st = odnn_oom();
        if (*out_st == NULL)
            s = odnn_add_step(b, ODNN_S_BINARY, pd, (int64_t)n, out_st);
        if (*out_st == NULL) {
            odnn_arg(b, s, DNNL_ARG_SRC_0, ODNN_REF_VALUE, src);
            odnn_arg(b, s, DNNL_ARG_SRC_1, ODNN_REF_WEIGHT, w[0]);
            odnn_arg(b, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, ODNN_REF_WEIGHT,
                     w[1]);
            odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
        }
    }
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    onednn_host->host_free(b->ctx->host_ctx, st_vals);
    return done || *out_st != NULL;
}

static pl_status *odnn_bnorm(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    float eps = (float)odnn_attr_float(v, n, "epsilon", 1e-5);
    pl_status *ast = NULL;
    if (odnn_channel_block_tag(&b->c->values[src].md) == dnnl_format_tag_undef &&
        odnn_bnorm_affine(b, n, src, eps, &ast))
        return ast;
    int w[4];
    static const int args[4] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
    pl_status *st = NULL;
    for (int k = 0; st == NULL && k < 4; k++)
        st = odnn_vector_weight(b, n, odnn_in(v, n, (size_t)k + 1), x.dims[1], NULL, &w[k]);
    if (st != NULL)
        return st;
    dnnl_batch_normalization_desc_t bd;
    unsigned flags = dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift;
    /* A Relu that alone reads the result (DenseNet's BN -> ReLU -> Conv on
     * every concatenation: 58 pairs in densenet121) is the primitive's own
     * fused ReLU: one pass over the feature map instead of two. */
    int64_t out_t = odnn_out(v, n, 0), relu = odnn_sole_reader(&b->u, out_t);
    if (relu >= 0 && !b->done[relu] && odnn_op_is(v, relu, "Relu"))
        flags |= dnnl_fuse_norm_relu;
    else
        relu = -1;
    dnnl_status_t ds;
    for (;;) {
        ds = dnnl_batch_normalization_forward_desc_init(&bd, dnnl_forward_inference,
                                                        &b->c->values[src].md, eps, flags);
        if (ds != dnnl_success || !odnn_desc_is_ref(b, &bd))
            break;
        if (relu >= 0) { /* only the reference kernel fuses it here */
            flags &= ~(unsigned)dnnl_fuse_norm_relu;
            relu = -1;
        } else if (!odnn_is_plain(&b->c->values[src].md)) {
            /* A blocked layout only the reference kernel takes: read it plain. */
            st = odnn_plain(b, src, (int64_t)n, &src);
            if (st != NULL || odnn_bnorm_affine(b, n, src, eps, &st))
                return st;
        } else {
            break;
        }
    }
    st = odnn_dnnl(ds, "batch normalization descriptor", v, (int64_t)n);
    if (st == NULL && relu >= 0) {
        b->done[relu] = 1;
        out_t = odnn_out(v, (size_t)relu, 0);
    }
    return st != NULL ? st : odnn_simple(b, n, ODNN_S_BNORM, &bd, src, out_t, args, w, 4);
}

static pl_status *odnn_lnorm(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    float eps = (float)odnn_attr_float(v, n, "epsilon", 1e-5);
    int64_t c = x.dims[x.ndim - 1];
    int w[2], args[2], n_w = 0;
    unsigned flags = 0;
    pl_status *st = NULL;
    if (odnn_in(v, n, 1) >= 0) {
        st = odnn_vector_weight(b, n, odnn_in(v, n, 1), c, NULL, &w[n_w]);
        args[n_w++] = DNNL_ARG_SCALE;
        flags |= dnnl_use_scale;
    }
    if (st == NULL && odnn_in(v, n, 2) >= 0) {
        st = odnn_vector_weight(b, n, odnn_in(v, n, 2), c, NULL, &w[n_w]);
        args[n_w++] = DNNL_ARG_SHIFT;
        flags |= dnnl_use_shift;
    }
    if (st == NULL)
        st = odnn_plain(b, src, (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_layer_normalization_desc_t ld;
    dnnl_status_t ds = dnnl_layer_normalization_forward_desc_init(
        &ld, dnnl_forward_inference, &b->c->values[src].md, NULL, eps, flags);
    st = odnn_dnnl(ds, "layer normalization descriptor", v, (int64_t)n);
    return st != NULL ? st
                      : odnn_simple(b, n, ODNN_S_LNORM, &ld, src, odnn_out(v, n, 0), args, w, n_w);
}

/* RMSNorm pattern M (odnn_match_rms) as the module's own kernel
 * (odnn_rms_run), emitted at node N: the source as dense rows, gamma a
 * weight (constant) or read in place (a view input). */
static pl_status *odnn_rms_pattern(struct odnn_build *b, size_t n, const struct odnn_lnpat *m)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, m->x, &x);
    int64_t c = x.dims[x.ndim - 1];
    int src, gref = -1, gkind = ODNN_REF_WEIGHT;
    pl_status *st = odnn_dense_source(b, m->x, (int64_t)n, &src);
    if (st == NULL && m->gamma >= 0) {
        struct odnn_tinfo p;
        odnn_tensor(v, m->gamma, &p);
        if (p.cdata != NULL) {
            st = odnn_vector_weight(b, n, m->gamma, c, NULL, &gref);
        } else {
            dnnl_memory_desc_t gmd;
            dnnl_dims_t d = {c};
            dnnl_memory_desc_init_by_tag(&gmd, 1, d, dnnl_f32, dnnl_a);
            int gv;
            st = odnn_source(b, m->gamma, (int64_t)n, &gv);
            if (st == NULL)
                st = odnn_view_as(b, gv, &gmd, (int64_t)n, &gref);
            gkind = ODNN_REF_VALUE;
        }
    }
    if (st != NULL)
        return st;
    struct odnn_step *s = odnn_next_step(b, ODNN_S_RMSNORM, (int64_t)n);
    if (s == NULL)
        return odnn_oom();
    s->rows = x.elems / (c > 0 ? c : 1);
    s->cols = c;
    s->eps = m->eps;
    int step = b->c->n_steps++;
    int out = odnn_new_value(b, m->out, ODNN_V_TEMP, &b->c->values[src].md);
    if (out < 0)
        return odnn_oom();
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    if (gref >= 0)
        odnn_arg(b, step, DNNL_ARG_SCALE, gkind, gref);
    for (size_t k = 0; k < m->n_nodes; k++)
        b->done[m->nodes[k]] = 1;
    return NULL;
}

/* The decomposed LayerNormalization of pattern M as one primitive, emitted
 * at node N. A constant gamma or beta becomes a weight; one that is a view
 * input is read in place, through a [C] view of its bytes. */
static pl_status *odnn_lnorm_pattern(struct odnn_build *b, size_t n, const struct odnn_lnpat *m)
{
    if (m->rms)
        return odnn_rms_pattern(b, n, m);
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, m->x, &x);
    int64_t c = x.dims[m->channel ? 1 : x.ndim - 1];
    int w[2], wargs[2], n_w = 0, vals[2], vargs[2], n_v = 0;
    const int64_t params[2] = {m->gamma, m->beta};
    static const int args[2] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    pl_status *st = NULL;
    for (int k = 0; st == NULL && k < 2; k++) {
        if (params[k] < 0)
            continue; /* no beta: no shift */
        struct odnn_tinfo p;
        odnn_tensor(v, params[k], &p);
        if (p.cdata != NULL) {
            wargs[n_w] = args[k];
            st = odnn_vector_weight(b, n, params[k], c, NULL, &w[n_w++]);
            continue;
        }
        int src;
        dnnl_memory_desc_t md;
        dnnl_dims_t d = {c};
        dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_f32, dnnl_a);
        st = odnn_source(b, params[k], (int64_t)n, &src);
        if (st == NULL)
            st = odnn_view_as(b, src, &md, (int64_t)n, &vals[n_v]);
        vargs[n_v++] = args[k];
    }
    int src;
    if (st == NULL)
        st = odnn_source(b, m->x, (int64_t)n, &src);
    if (st == NULL && !m->channel)
        st = odnn_plain(b, src, (int64_t)n, &src);
    int64_t out_t = m->out;
    if (st == NULL && m->channel) {
        /* NCHW -> an NHWC copy, whose bytes are [N*H*W, C] dense */
        dnnl_memory_desc_t nhwc, rows;
        dnnl_dims_t xd = {x.dims[0], x.dims[1], x.dims[2], x.dims[3]};
        dnnl_dims_t rd = {x.dims[0] * x.dims[2] * x.dims[3], c};
        dnnl_memory_desc_init_by_tag(&nhwc, 4, xd, dnnl_f32, dnnl_acdb);
        dnnl_memory_desc_init_by_tag(&rows, 2, rd, dnnl_f32, dnnl_ab);
        st = odnn_ensure(b, src, &nhwc, (int64_t)n, &src);
        if (st == NULL && (src = odnn_alias(b, src, &rows, -1, 0)) < 0)
            st = odnn_oom();
        out_t = -1;
    }
    if (st != NULL)
        return st;
    dnnl_layer_normalization_desc_t ld;
    dnnl_status_t ds = dnnl_layer_normalization_forward_desc_init(
        &ld, dnnl_forward_inference, &b->c->values[src].md, NULL, m->eps,
        dnnl_use_scale | (m->beta >= 0 ? dnnl_use_shift : 0));
    st = odnn_dnnl(ds, "layer normalization descriptor", v, (int64_t)n);
    if (st == NULL)
        st = odnn_simple(b, n, ODNN_S_LNORM, &ld, src, out_t, wargs, w, n_w);
    if (st != NULL)
        return st;
    if (m->channel) {
        /* the [N*H*W, C] result is the NCHW output in NHWC strides */
        int rows_v = -1;
        for (int a = 0; a < b->c->steps[b->c->n_steps - 1].n_args; a++)
            if (b->c->steps[b->c->n_steps - 1].arg[a] == DNNL_ARG_DST)
                rows_v = b->c->steps[b->c->n_steps - 1].ref[a];
        dnnl_memory_desc_t y4;
        dnnl_dims_t xd = {x.dims[0], x.dims[1], x.dims[2], x.dims[3]};
        dnnl_memory_desc_init_by_tag(&y4, 4, xd, dnnl_f32, dnnl_acdb);
        int yv = rows_v < 0 ? -1 : odnn_alias(b, rows_v, &y4, m->out, 0);
        if (yv < 0)
            return odnn_oom();
        b->c->values[yv].dense = 1;
    }
    for (int k = 0; k < n_v; k++)
        odnn_arg(b, b->c->n_steps - 1, vargs[k], ODNN_REF_VALUE, vals[k]);
    for (size_t k = 0; k < m->n_nodes; k++)
        b->done[m->nodes[k]] = 1;
    return NULL;
}

/* LRN across channels (AlexNet, GoogLeNet, ZFNet: Caffe's models) as
 * oneDNN's lrn, whose alpha is divided by the window as ONNX's is, on the
 * source's layout (its jit kernels take the channel-blocked one), else on
 * a plain copy when only its reference kernel takes that layout. */
static pl_status *odnn_lrn(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    float alpha = (float)odnn_attr_float(v, n, "alpha", 1e-4);
    float beta = (float)odnn_attr_float(v, n, "beta", 0.75);
    float bias = (float)odnn_attr_float(v, n, "bias", 1.0);
    int64_t size = odnn_attr_int(v, n, "size", 1);
    dnnl_lrn_desc_t ld;
    for (int tries = 0;; tries++) {
        pl_status *st = odnn_dnnl(dnnl_lrn_forward_desc_init(
                                      &ld, dnnl_forward_inference, dnnl_lrn_across_channels,
                                      &b->c->values[src].md, size, alpha, beta, bias),
                                  "lrn descriptor", v, (int64_t)n);
        if (st != NULL)
            return st;
        if (tries > 0 || !odnn_desc_is_ref(b, &ld))
            break;
        if ((st = odnn_plain(b, src, (int64_t)n, &src)) != NULL)
            return st;
    }
    return odnn_simple(b, n, ODNN_S_LRN, &ld, src, odnn_out(v, n, 0), NULL, NULL, 0);
}

/* ShuffleNet's channel shuffle: Reshape [N, C, ...] -> [N, G, C/G, ...],
 * a Transpose that swaps axes 1 and 2, and a Reshape back to [N, C, ...],
 * each the sole reader of the one before: output channel j * G + i is input
 * channel i * C/G + j. As views, the three made the convolution's blocked
 * output plain, copied it transposed, and blocked it again for the
 * depthwise convolution after it: 1.6 of c2_shufflenet's 3.9 ms a run went
 * to reorders in oneDNN's verbose log. Sets *OUT_T (the second Reshape's
 * output), the other two nodes and G, or returns 0. */
static int odnn_shuffle_chain(struct odnn_build *b, size_t n, int64_t *out_t, int64_t nodes[2],
                              int64_t *out_groups)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y, z;
    if (!odnn_tensor(v, odnn_in(v, n, 0), &x) || !x.f32 || !x.known || x.ndim < 3 ||
        x.ndim > 5 || !odnn_tensor(v, odnn_out(v, n, 0), &y) || !y.known ||
        y.ndim != x.ndim + 1 || y.dims[0] != x.dims[0] || y.dims[1] < 2 || y.dims[2] < 2 ||
        y.dims[1] * y.dims[2] != x.dims[1])
        return 0;
    for (int d = 2; d < x.ndim; d++)
        if (y.dims[d + 1] != x.dims[d])
            return 0;
    int64_t tr = odnn_sole_reader(&b->u, odnn_out(v, n, 0));
    if (tr < 0 || b->done[tr] || !odnn_op_is(v, tr, "Transpose"))
        return 0;
    const int64_t *perm;
    if (odnn_attr_ints(v, (size_t)tr, "perm", &perm) != (size_t)y.ndim)
        return 0;
    for (int d = 0; d < y.ndim; d++)
        if (perm[d] != (d == 1 ? 2 : d == 2 ? 1 : d))
            return 0;
    int64_t back = odnn_sole_reader(&b->u, odnn_out(v, (size_t)tr, 0));
    if (back < 0 || b->done[back] || !odnn_op_is(v, back, "Reshape") ||
        !odnn_tensor(v, odnn_out(v, (size_t)back, 0), &z) || !z.known || z.ndim != x.ndim)
        return 0;
    for (int d = 0; d < x.ndim; d++)
        if (z.dims[d] != x.dims[d])
            return 0;
    *out_t = odnn_out(v, (size_t)back, 0);
    nodes[0] = tr;
    nodes[1] = back;
    *out_groups = y.dims[1];
    return 1;
}

/* The channels a block of MD (f32, dims [N, C, ...]): 1 for row-major, 8 or
 * 16 for oneDNN's channel-blocked layouts (aBcd16b, ...), -1 for channels
 * last (acdb, ...); 0 for any other. */
static int64_t odnn_channel_block(const dnnl_memory_desc_t *md)
{
    if (md->data_type != dnnl_f32 || md->ndims < 3 || md->ndims > 5)
        return 0;
    if (odnn_is_row_major(md))
        return 1;
    int nd = md->ndims;
    static const dnnl_format_tag_t tags[3][3] = {
        {dnnl_aBc16b, dnnl_aBcd16b, dnnl_aBcde16b},
        {dnnl_aBc8b, dnnl_aBcd8b, dnnl_aBcde8b},
        {dnnl_acb, dnnl_acdb, dnnl_acdeb}};
    static const int64_t blocks[3] = {16, 8, -1};
    for (int k = 0; k < 3; k++) {
        dnnl_memory_desc_t probe;
        if (dnnl_memory_desc_init_by_tag(&probe, nd, md->dims, dnnl_f32, tags[k][nd - 3]) ==
                dnnl_success &&
            dnnl_memory_desc_equal(&probe, md))
            return blocks[k];
    }
    return 0;
}

/* The chain at node N (odnn_shuffle_chain) as one step of the module's own
 * (odnn_shuffle_run) on SRC's layout, when that is row-major,
 * channel-blocked or channels last; *OUT_TAKEN 0, nothing emitted,
 * otherwise. (oneDNN 2.6's
 * shuffle primitive is its reference kernel on plain layouts, and on
 * blocked ones it gathered through an offset table, 78 us for 272x14x14,
 * and c2_shufflenet's OpenMP team slept between primitives: 11.6 ms a run
 * instead of 2.95.) */
static pl_status *odnn_shuffle(struct odnn_build *b, size_t n, int src, int64_t out_t,
                               const int64_t nodes[2], int64_t groups, int *out_taken)
{
    /* a copy: the values grow below */
    const dnnl_memory_desc_t layout = b->c->values[src].md, *md = &layout;
    int64_t blk = odnn_channel_block(md);
    *out_taken = blk != 0;
    if (blk == 0)
        return NULL;
    int64_t sp = 1;
    for (int d = 2; d < md->ndims; d++)
        sp *= md->dims[d];
    int out = odnn_new_value(b, out_t, ODNN_V_TEMP, md);
    struct odnn_step *s = out >= 0 ? odnn_next_step(b, ODNN_S_SHUFFLE, (int64_t)n) : NULL;
    if (s == NULL)
        return odnn_oom();
    s->rows = md->dims[0];
    s->chans = md->dims[1];
    s->cols = sp;
    s->xd[0] = blk;
    s->xd[1] = groups;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    b->done[nodes[0]] = 1;
    b->done[nodes[1]] = 1;
    return NULL;
}

/* Softmax, or LogSoftmax (softmax_v2's log algorithm), on the source's
 * layout unless oneDNN takes that only with its reference kernel (a
 * channel-blocked one, or channels-last over the last axis): then on a
 * row-major copy. */
static pl_status *odnn_softmax(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    int64_t axis =
        odnn_attr_int(v, n, "axis", onednn_host->graph->node_opset(v, n) >= 13 ? -1 : 1);
    if (axis < 0)
        axis += x.ndim;
    int is_log = odnn_op_is(v, (int64_t)n, "LogSoftmax");
    dnnl_softmax_v2_desc_t sd;
    for (int tries = 0;; tries++) {
        dnnl_memory_desc_t dst_md;
        dnnl_memory_desc_init_by_tag(&dst_md, b->c->values[src].md.ndims,
                                     b->c->values[src].md.dims, dnnl_f32, dnnl_format_tag_any);
        dnnl_status_t ds =
            dnnl_softmax_v2_forward_desc_init(&sd, dnnl_forward_inference,
                                              is_log ? dnnl_softmax_log : dnnl_softmax_accurate,
                                              &b->c->values[src].md, &dst_md, (int)axis);
        pl_status *st = odnn_dnnl(ds, "softmax descriptor", v, (int64_t)n);
        if (st != NULL)
            return st;
        if (tries > 1 || !odnn_desc_is_ref(b, &sd))
            break;
        if (odnn_is_plain(&b->c->values[src].md)) {
            /* a permuted plain layout (a channels-last convolution's) */
            dnnl_memory_desc_t rm;
            dnnl_memory_desc_init_by_strides(&rm, b->c->values[src].md.ndims,
                                             b->c->values[src].md.dims, dnnl_f32, NULL);
            if (dnnl_memory_desc_equal(&rm, &b->c->values[src].md)) {
                /* row-major, the axis not last: oneDNN 2.6 has only its
                 * reference kernel (YOLOv8's distribution head, over 16
                 * bins of [1, 16, 4, 8400]: 20 ms); a copy with the axis
                 * innermost in memory runs its jit kernel */
                int nd = rm.ndims;
                dnnl_dims_t st_axis;
                int64_t stride = rm.dims[axis];
                st_axis[axis] = 1;
                for (int d = nd - 1; d >= 0; d--) {
                    if (d == axis)
                        continue;
                    st_axis[d] = stride;
                    stride *= rm.dims[d];
                }
                dnnl_memory_desc_t am;
                dnnl_memory_desc_init_by_strides(&am, nd, rm.dims, dnnl_f32, st_axis);
                st = odnn_ensure(b, src, &am, (int64_t)n, &src);
                if (st != NULL)
                    return st;
                continue;
            }
            st = odnn_ensure(b, src, &rm, (int64_t)n, &src);
        } else {
            st = odnn_plain(b, src, (int64_t)n, &src);
        }
        if (st != NULL)
            return st;
    }
    return odnn_simple(b, n, ODNN_S_SOFTMAX, &sd, src, odnn_out(v, n, 0), NULL, NULL, 0);
}

static int odnn_reshape_view(const dnnl_memory_desc_t *md, int ond, const int64_t *od,
                             dnnl_memory_desc_t *out);

/* ReduceMean, ReduceSum, ReduceMax or ReduceMin (odnn_check_reduce). The
 * primitive sees the source without its axes of one element: oneDNN's fast
 * kernel wants the axes it reduces to end the source's dims (it took
 * [3,6,3,1] -> [3,6,1,1] with its reference one, [3,6,3] -> [3,6,1] with the
 * fast one). The result is a view of the output's dims (keepdims or not). */
/* The mean (MEAN) or sum of plain f32 value SRC, [OUTER, K, INNER], over
 * K, as the product odnn_reduce_middle_mds describes, into node N's output
 * (a view of the [OUTER, 1, INNER] result, whose bytes are the output's). */
static pl_status *odnn_reduce_middle_by_matmul(struct odnn_build *b, size_t n, int src,
                                               int64_t outer, int64_t k, int64_t inner, int mean)
{
    const pl_graph_view *v = b->v;
    dnnl_memory_desc_t a_md, w_md, y_md;
    dnnl_matmul_desc_t md;
    if (!odnn_reduce_middle_mds(outer, k, inner, &a_md, &w_md, &y_md) ||
        dnnl_matmul_desc_init(&md, &a_md, &w_md, NULL, &y_md) != dnnl_success)
        return odnn_error(PL_CODE_INTERNAL, "onednn: '%s': no product for the reduction",
                          onednn_host->graph->node_name(v, n));
    int wi = -1;
    pl_status *st = odnn_mean_vector(b, n, &a_md, k, mean, &wi);
    if (st == NULL)
        st = odnn_view_as(b, src, &w_md, (int64_t)n, &src);
    dnnl_primitive_desc_t pd = NULL;
    if (st == NULL)
        st = odnn_make_pd(b, &md, NULL, n, &pd);
    int dst = -1, s = -1;
    if (st == NULL && (dst = odnn_dst_value(b, -1, pd)) < 0)
        st = odnn_oom();
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_MATMUL, pd, (int64_t)n, &st);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_WEIGHT, wi);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    b->c->values[dst].defined = 1;
    return odnn_output_as_view(b, n, dst);
}

static pl_status *odnn_reduce(struct odnn_build *b, size_t n, const char *op, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    unsigned mask;
    char reason[ODNN_REASON] = "";
    if (!odnn_reduce_axes(v, n, op, &x, &mask, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    dnnl_dims_t sd, dd;
    int nd = 0;
    for (int i = 0; i < x.ndim; i++)
        if (x.dims[i] != 1) {
            sd[nd] = x.dims[i];
            dd[nd++] = (mask >> i & 1u) ? 1 : x.dims[i];
        }
    /* a mean or sum over the trailing axes: rows of K values */
    int64_t rows = 1, k = 1;
    int trailing = 1;
    for (int i = 0; i < nd; i++) {
        if (dd[i] == 1 && sd[i] != 1)
            k *= sd[i];
        else {
            rows *= sd[i];
            trailing = trailing && k == 1;
        }
    }
    pl_status *st = odnn_plain(b, src, (int64_t)n, &src);
    if (st != NULL)
        return st;
    if (trailing && odnn_is_row_major(&b->c->values[src].md) &&
        (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0) &&
        odnn_reduce_by_matmul(b, n, src, rows, k, op[6] == 'M', &st))
        return st;
    int64_t m_outer, m_k, m_inner;
    if (!trailing && (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0) &&
        odnn_is_row_major(&b->c->values[src].md) &&
        odnn_reduce_middle(&x, mask, &m_outer, &m_k, &m_inner))
        return odnn_reduce_middle_by_matmul(b, n, src, m_outer, m_k, m_inner, op[6] == 'M');
    dnnl_memory_desc_t src_md, dst_md;
    dnnl_memory_desc_init_by_strides(&src_md, nd, sd, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_strides(&dst_md, nd, dd, dnnl_f32, NULL);
    if ((st = odnn_view_as(b, src, &src_md, (int64_t)n, &src)) != NULL)
        return st;
    dnnl_reduction_desc_t rd;
    dnnl_status_t ds = dnnl_reduction_desc_init(&rd, odnn_reduce_alg(op), &b->c->values[src].md,
                                                &dst_md, 0, 0);
    st = odnn_dnnl(ds, "reduction descriptor", v, (int64_t)n);
    /* Written straight into the output when it has those dims; else into a
     * temporary the output is a view of, so that its readers (a layer
     * normalization over the last axis, a Softmax) see the tensor's own
     * shape. */
    int direct = y.ndim == nd && memcmp(y.dims, dd, sizeof dd[0] * (size_t)nd) == 0;
    if (st == NULL)
        st = odnn_simple(b, n, ODNN_S_REDUCE, &rd, src, direct ? odnn_out(v, n, 0) : -1, NULL,
                         NULL, 0);
    if (st != NULL || direct)
        return st;
    return odnn_output_as_view(b, n, b->c->n_values - 1);
}

/* The channel blocking (aBcd16b, aBcd8b) of MD0, a 4-d source of dims YD,
 * when the broadcast source of dims D1 is per channel; undef otherwise. */
static dnnl_format_tag_t odnn_per_channel_blocking(const dnnl_memory_desc_t *md0, int nd,
                                                   const dnnl_dims_t yd, const dnnl_dims_t d1)
{
    if (nd != 4 || d1[1] != yd[1] || d1[2] != 1 || d1[3] != 1 || (d1[0] != 1 && d1[0] != yd[0]))
        return dnnl_format_tag_undef;
    static const dnnl_format_tag_t tags[] = {dnnl_aBcd16b, dnnl_aBcd8b};
    for (size_t k = 0; k < sizeof tags / sizeof *tags; k++) {
        dnnl_memory_desc_t probe;
        if (dnnl_memory_desc_init_by_tag(&probe, nd, yd, dnnl_f32, tags[k]) == dnnl_success &&
            dnnl_memory_desc_equal(&probe, md0))
            return tags[k];
    }
    return dnnl_format_tag_undef;
}

/* A QDQ pair (odnn_match_qdq) as one step: x / s (a binary division by the
 * scale, broadcast), then round half to even, clip to the 8-bit range less
 * the zero point, and * s as eltwise post-ops. Emitted at the
 * QuantizeLinear; both nodes are done. */
static pl_status *odnn_qdq_step(struct odnn_build *b, const struct odnn_qdq *p)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, p->x, &x);
    int s0, s1;
    pl_status *st = odnn_source(b, p->x, (int64_t)p->q, &s0);
    if (st == NULL)
        st = odnn_source(b, p->scale, (int64_t)p->q, &s1);
    int nd = x.ndim;
    dnnl_dims_t ones, xd;
    for (int i = 0; i < nd; i++)
        ones[i] = 1, xd[i] = x.dims[i];
    dnnl_memory_desc_t md1, dst_md;
    odnn_plain_md(&md1, nd, ones);
    if (st == NULL)
        st = odnn_view_as(b, s1, &md1, (int64_t)p->q, &s1);
    if (st == NULL && !odnn_is_row_major(&b->c->values[s0].md))
        st = odnn_plain(b, s0, (int64_t)p->q, &s0);
    if (st != NULL)
        return st;
    dnnl_memory_desc_init_by_tag(&dst_md, nd, xd, dnnl_f32, dnnl_format_tag_any);
    dnnl_binary_desc_t bd;
    st = odnn_dnnl(dnnl_binary_desc_init(&bd, dnnl_binary_div, &b->c->values[s0].md, &md1, &dst_md),
                   "binary descriptor", v, (int64_t)p->q);
    dnnl_post_ops_t po = NULL;
    if (st == NULL && dnnl_post_ops_create(&po) != dnnl_success)
        st = odnn_oom();
    if (st == NULL &&
        /* clamp(q + zp, lo, hi) - zp is clamp(q, lo - zp, hi - zp), all
         * small integers: one clip instead of two shifts around one (oneDNN
         * 2.6's jit binary applied the first linear post-op's alpha and
         * beta to every later one) */
        (dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f) != dnnl_success ||
         dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, (float)(p->lo - p->zp),
                                      (float)(p->hi - p->zp)) != dnnl_success ||
         dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, p->s, 0.0f) != dnnl_success))
        st = odnn_oom();
    dnnl_primitive_desc_t pd = NULL;
    if (st == NULL)
        st = odnn_make_pd(b, &bd, po, p->q, &pd);
    if (po != NULL)
        dnnl_post_ops_destroy(po);
    int dst = -1, step = -1;
    if (st == NULL && (dst = odnn_dst_value(b, p->out, pd)) < 0)
        st = odnn_oom();
    if (st == NULL)
        step = odnn_add_step(b, ODNN_S_BINARY, pd, (int64_t)p->q, &st);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st != NULL)
        return st;
    odnn_arg(b, step, DNNL_ARG_SRC_0, ODNN_REF_VALUE, s0);
    odnn_arg(b, step, DNNL_ARG_SRC_1, ODNN_REF_VALUE, s1);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    b->done[p->q] = b->done[p->dq] = 1;
    return NULL;
}

/* Binary N (an Add, Sub, Mul, Div, Max or Min of f32) whose broadcast
 * oneDNN 2.6 runs only on its reference kernel (jax2onnx's rotary
 * embeddings: [B, S, H, D] by [1, S, 1, D], which cut each attention of a
 * Flax MultiHeadAttention into three subgraphs), as the module's own loop
 * (odnn_bbin_run): both sources dense plain, in the graph's order. */
static pl_status *odnn_bcast_step(struct odnn_build *b, size_t n, uint32_t kind, int n_in,
                                  int64_t (*in_dims)[ODNN_MAX_RANK], struct odnn_step **out);

static pl_status *odnn_bbin_emit(struct odnn_build *b, size_t n, const char *op)
{
    int64_t dims[2][ODNN_MAX_RANK];
    struct odnn_step *s = NULL;
    pl_status *st = odnn_bcast_step(b, n, ODNN_S_BBIN, 2, dims, &s);
    if (st != NULL)
        return st;
    s->cols = odnn_bop_of(op);
    memcpy(s->xd, dims[0], (size_t)s->nd * sizeof dims[0][0]);
    memcpy(s->ed, dims[1], (size_t)s->nd * sizeof dims[0][0]);
    return NULL;
}

static pl_status *odnn_binary(struct odnn_build *b, size_t n, const char *op)
{
    const pl_graph_view *v = b->v;
    float cval;
    int first;
    int64_t data = odnn_binary_scalar(v, n, &cval, &first);
    pl_status *st;
    int src;
    if (data >= 0 && (strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0)) {
        /* a scalar bound: a clip with one open end, when the output has
         * the data's shape (else the binary broadcasts the scalar) */
        if (odnn_same_shape(v, data, odnn_out(v, n, 0))) {
            st = odnn_source(b, data, (int64_t)n, &src);
            return st != NULL ? st
                              : odnn_eltwise(b, n, src, dnnl_eltwise_clip,
                                             op[1] == 'a' ? cval : -INFINITY,
                                             op[1] == 'a' ? INFINITY : cval, odnn_out(v, n, 0));
        }
        data = -1;
    }
    if (data >= 0) { /* a scalar constant: a linear eltwise */
        float a = 1, c0 = 0;
        if (op[0] == 'A')
            c0 = cval;
        else if (op[0] == 'S')
            a = first ? -1.0f : 1.0f, c0 = first ? cval : -cval;
        else if (op[0] == 'M')
            a = cval;
        else if (!first && cval != 0)
            a = 1.0f / cval;
        else
            data = -1;
        if (data >= 0) {
            st = odnn_source(b, data, (int64_t)n, &src);
            return st != NULL ? st
                              : odnn_eltwise(b, n, src, dnnl_eltwise_linear, a, c0,
                                             odnn_out(v, n, 0));
        }
    }
    struct odnn_tinfo a0, a1, y;
    int64_t t0 = odnn_in(v, n, 0), t1 = odnn_in(v, n, 1);
    odnn_tensor(v, t0, &a0);
    odnn_tensor(v, t1, &a1);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (a0.elems != y.elems || a0.ndim != y.ndim) { /* commutative: checked */
        int64_t tt = t0;
        t0 = t1, t1 = tt;
        struct odnn_tinfo ti = a0;
        a0 = a1, a1 = ti;
    }
    const struct odnn_tinfo *bc = a0.elems == y.elems && a0.ndim == y.ndim ? &a1 : &a0;
    struct odnn_lnpat ln;
    int first_full = a0.elems == y.elems && a0.ndim == y.ndim; /* after the swap above */
    int in_order = odnn_in(v, n, 0) == t0;
    if (odnn_bop_of(op) >= 0 &&
        (!first_full || (!in_order && (op[0] == 'S' || op[0] == 'D')) ||
         (odnn_probe_binary_ref(&y, bc) && !odnn_lnorm_of(v, &b->u, n, &ln))))
        return odnn_bbin_emit(b, n, op);
    int s0, s1;
    st = odnn_source(b, t0, (int64_t)n, &s0);
    if (st == NULL)
        st = odnn_source(b, t1, (int64_t)n, &s1);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t md1, dst_md;
    int nd = y.ndim > 0 ? y.ndim : 1;
    dnnl_dims_t d1, yd;
    for (int i = 0; i < nd; i++) {
        int i1 = i - (nd - a1.ndim);
        d1[i] = i1 >= 0 && a1.ndim > 0 ? a1.dims[i1] : 1;
        yd[i] = y.ndim > 0 ? y.dims[i] : 1;
    }
    /* Equal rank and count mean equal dims under broadcasting; a rank-0
     * scalar beside a [1,1] output has the count but not the rank, and a
     * reorder between the two ranks fails. */
    int same = a1.elems == y.elems && a1.ndim == y.ndim, s1_given = s1;
    dnnl_format_tag_t per_channel =
        b->c->values[s1].md.data_type == dnnl_f32
            ? odnn_per_channel_blocking(&b->c->values[s0].md, nd, yd, d1)
            : dnnl_format_tag_undef;
    if (same) {
        /* Same shape: read it in the first source's layout. */
        md1 = b->c->values[s0].md;
        st = odnn_ensure(b, s1, &md1, (int64_t)n, &s1);
    } else if (per_channel != dnnl_format_tag_undef) {
        /* A per-channel second source ([N|1, C, 1, 1], a squeeze-and-
         * excitation scale) beside a channel-blocked first one: oneDNN's
         * binary has a JIT kernel only when both are blocked alike (plain
         * beside blocked is its reference implementation, 10-100x slower),
         * so the few values are reordered into the same blocking. */
        odnn_plain_md(&md1, nd, d1);
        st = odnn_view_as(b, s1, &md1, (int64_t)n, &s1);
        dnnl_memory_desc_init_by_tag(&md1, nd, d1, dnnl_f32, per_channel);
        if (st == NULL)
            st = odnn_ensure(b, s1, &md1, (int64_t)n, &s1);
    } else {
        odnn_plain_md(&md1, nd, d1);
        st = odnn_view_as(b, s1, &md1, (int64_t)n, &s1);
    }
    if (st != NULL)
        return st;
    dnnl_memory_desc_init_by_tag(&dst_md, nd, yd, dnnl_f32, dnnl_format_tag_any);
    dnnl_alg_kind_t alg = op[0] == 'A'                ? dnnl_binary_add
                          : op[0] == 'S'              ? dnnl_binary_sub
                          : strcmp(op, "Mul") == 0    ? dnnl_binary_mul
                          : strcmp(op, "Max") == 0    ? dnnl_binary_max
                          : strcmp(op, "Min") == 0    ? dnnl_binary_min
                                                      : dnnl_binary_div;
    dnnl_binary_desc_t bd;
    dnnl_status_t ds = dnnl_binary_desc_init(&bd, alg, &b->c->values[s0].md, &md1, &dst_md);
    st = odnn_dnnl(ds, "binary descriptor", v, (int64_t)n);
    if (st == NULL && !odnn_is_row_major(&b->c->values[s0].md) && odnn_desc_is_ref(b, &bd)) {
        /* A blocked layout oneDNN's kernels do not take (channels padded
         * to the block), or a permuted one (bac, from a Transpose) beside
         * a broadcast row-major second source (a LayerNorm's mean: 0.7 ms
         * on the reference kernel against 6 us): both sources row-major,
         * which they take. */
        st = odnn_plain(b, s0, (int64_t)n, &s0);
        odnn_plain_md(&md1, nd, d1);
        if (st == NULL)
            st = odnn_view_as(b, s1_given, &md1, (int64_t)n, &s1);
        if (st == NULL)
            st = odnn_dnnl(dnnl_binary_desc_init(&bd, alg, &b->c->values[s0].md, &md1, &dst_md),
                           "binary descriptor", v, (int64_t)n);
    }
    dnnl_dims_t cy, c1;
    int cnd, collapse = 0;
    if (st == NULL && odnn_desc_is_ref(b, &bd) && odnn_binary_collapse(nd, yd, d1, &cnd, cy, c1)) {
        /* still the reference kernel: the same bytes in merged dims */
        dnnl_memory_desc_t m0;
        odnn_plain_md(&m0, cnd, cy);
        st = odnn_view_as(b, s0, &m0, (int64_t)n, &s0);
        odnn_plain_md(&md1, cnd, c1);
        if (st == NULL)
            st = odnn_view_as(b, s1_given, &md1, (int64_t)n, &s1);
        odnn_plain_md(&dst_md, cnd, cy);
        if (st == NULL)
            st = odnn_dnnl(dnnl_binary_desc_init(&bd, alg, &b->c->values[s0].md, &md1, &dst_md),
                           "binary descriptor", v, (int64_t)n);
        collapse = 1;
    }
    dnnl_primitive_desc_t pd = NULL;
    struct odnn_fuse qf;
    int64_t out_t = odnn_out(v, n, 0);
    if (st == NULL)
        st = odnn_binary_pd(b, &bd, n, collapse ? 0 : nd, &out_t, &qf, &pd);
    int dst = -1, s = -1;
    if (st == NULL && (dst = odnn_dst_value(b, out_t, pd)) < 0)
        st = odnn_oom();
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_BINARY, pd, (int64_t)n, &st);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st == NULL && collapse) {
        /* as a product's merged rows (odnn_matmul): the tensor's value
         * owns the bytes in the graph's dims, the step writes them
         * through the merged view */
        dnnl_memory_desc_t real;
        odnn_plain_md(&real, nd, yd);
        int owner = odnn_new_value(b, out_t, ODNN_V_TEMP, &real);
        if (owner < 0)
            return odnn_oom();
        b->c->values[owner].defined = 1;
        b->c->values[owner].dense = 1;
        b->c->values[dst].tensor = -1;
        b->c->values[dst].kind = -owner - 100;
        b->c->values[dst].view_off = 0;
        b->c->values[dst].merged = 1;
    }
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC_0, ODNN_REF_VALUE, s0);
    odnn_arg(b, s, DNNL_ARG_SRC_1, ODNN_REF_VALUE, s1);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return odnn_qdq_done(b, s, &qf, n);
}

/* The channel-blocked tag (aBcd16b, aBcd8b, and their 3-D and 5-D kin)
 * MD is dense in, or undef. */
static dnnl_format_tag_t odnn_channel_block_tag(const dnnl_memory_desc_t *md)
{
    static const dnnl_format_tag_t tags[3][2] = {{dnnl_aBc16b, dnnl_aBc8b},
                                                 {dnnl_aBcd16b, dnnl_aBcd8b},
                                                 {dnnl_aBcde16b, dnnl_aBcde8b}};
    if (md->ndims < 3 || md->ndims > 5 || md->format_kind != dnnl_blocked ||
        md->format_desc.blocking.inner_nblks != 1 || md->offset0 != 0)
        return dnnl_format_tag_undef;
    for (int k = 0; k < 2; k++) {
        dnnl_format_tag_t tag = tags[md->ndims - 3][k];
        dnnl_memory_desc_t probe;
        if (dnnl_memory_desc_init_by_tag(&probe, md->ndims, md->dims, md->data_type, tag) ==
                dnnl_success &&
            dnnl_memory_desc_equal(&probe, md))
            return tag;
    }
    return dnnl_format_tag_undef;
}

/* A concat primitive of the K sources MDS along AXIS into DST (NULL: any),
 * kept only when a real kernel took it: *PD NULL otherwise. */
static dnnl_status_t odnn_concat_pd(struct odnn_build *b, size_t k, int axis,
                                    const dnnl_memory_desc_t *mds, const dnnl_memory_desc_t *dst,
                                    dnnl_primitive_desc_t *pd)
{
    *pd = NULL;
    dnnl_primitive_attr_t attr;
    pl_status *st = odnn_attr(&attr, NULL);
    if (st != NULL) {
        onednn_host->status_free(st);
        return dnnl_out_of_memory;
    }
    dnnl_status_t ds =
        dnnl_concat_primitive_desc_create(pd, dst, (int)k, axis, mds, attr, b->ctx->engine);
    dnnl_primitive_attr_destroy(attr);
    if (ds == dnnl_success && odnn_pd_is_ref(*pd)) {
        dnnl_primitive_desc_destroy(*pd);
        *pd = NULL;
        return dnnl_unimplemented;
    }
    return ds;
}

/* Concat into dense pieces: when everything before AXIS is one element,
 * each source is a dense piece of the destination at its own offset (for a
 * channel blocking TAG, when every source's channels are whole blocks;
 * dnnl_format_tag_undef: plain). A source made inside the subgraph, read by
 * nothing else and already in its piece's layout becomes an alias of those
 * bytes, so the step that writes it writes the concatenated tensor
 * (squeezenet's fire modules, Inception blocks); any other is reordered
 * straight into its piece (a densenet's running concat, whose first source
 * the next layer also reads) — one jit reorder instead of oneDNN's concat,
 * which moved 3 GB/s here. Returns 1 when done, 0 to leave it to oneDNN's
 * concat (a batch of more than one, pieces that are not whole blocks). */
static int odnn_concat_in_place(struct odnn_build *b, size_t n, const int *srcs, size_t k_in,
                                int axis, dnnl_format_tag_t tag, pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    pl_compiled *c = b->c;
    *out_st = NULL;
    int64_t out_t = odnn_out(v, n, 0);
    struct odnn_tinfo y;
    odnn_tensor(v, out_t, &y);
    if (out_t < 0 || (size_t)out_t >= b->u.n_tensors || !y.known || k_in < 1 ||
        k_in > ODNN_MAX_CONCAT)
        return 0;
    /* A destination the caller reads (a graph output) takes no source in
     * place, but each is still copied into its piece: oneDNN's concat of
     * plain sources (simple_concat) took 1.57 ms for four 1x64x56x56
     * sources, the four reorders a tenth of that. */
    int escapes = b->u.escapes[out_t];
    /* With more than one element before AXIS, a plain source's piece is a
     * strided view of the destination, which its reorder writes: Spotify's
     * basic-pitch stacks 8 harmonics of [1, 172, 309, 1] on the last axis,
     * 2.9 ms in oneDNN's simple concat (an element at a time), 0.x as
     * reorders. */
    int strided = 0;
    for (int d = 0; d < axis; d++)
        strided |= y.dims[d] != 1;
    if (strided && tag != dnnl_format_tag_undef)
        return 0;
    int64_t block = tag == dnnl_format_tag_undef ? 1
                    : tag == dnnl_aBc16b || tag == dnnl_aBcd16b || tag == dnnl_aBcde16b ? 16
                                                                                      : 8;
    if (block > 1 && axis != 1)
        return 0;
    dnnl_data_type_t dt = c->values[srcs[0]].md.data_type;
    size_t off[ODNN_MAX_CONCAT], esize = dnnl_data_type_size(dt), inner = 1;
    dnnl_memory_desc_t piece[ODNN_MAX_CONCAT];
    int alias_ok[ODNN_MAX_CONCAT];
    for (int d = axis + 1; d < y.ndim; d++)
        inner *= (size_t)y.dims[d];
    int64_t at = 0;
    for (size_t k = 0; k < k_in; k++) {
        int vi = srcs[k];
        const struct odnn_value *val = &c->values[vi];
        int64_t t = odnn_in(v, n, k), ck = val->md.dims[axis];
        if (val->md.ndims != y.ndim || ck % block != 0)
            return 0;
        if (strided) {
            dnnl_dims_t ys;
            int64_t stride = 1;
            for (int d = y.ndim - 1; d >= 0; d--) {
                ys[d] = stride;
                stride *= y.dims[d];
            }
            if (dnnl_memory_desc_init_by_strides(&piece[k], val->md.ndims, val->md.dims, dt, ys) !=
                dnnl_success)
                return 0;
        } else if (tag == dnnl_format_tag_undef) {
            odnn_plain_md(&piece[k], val->md.ndims, val->md.dims);
            piece[k].data_type = dt;
        } else if (dnnl_memory_desc_init_by_tag(&piece[k], val->md.ndims, val->md.dims, dt, tag) !=
                   dnnl_success) {
            return 0;
        }
        alias_ok[k] = !strided && !escapes && val->kind == ODNN_V_TEMP && val->tensor == t &&
                      val->md.data_type == dt &&
                      odnn_sole_reader(&b->u, t) == (int64_t)n &&
                      dnnl_memory_desc_equal(&val->md, &piece[k]);
        for (size_t j = 0; j < k; j++)
            if (srcs[j] == vi)
                alias_ok[k] = alias_ok[j] = 0;
        off[k] = (size_t)at * inner * esize;
        at += ck;
    }
    if (at != y.dims[axis])
        return 0;
    dnnl_memory_desc_t dst_md;
    dnnl_dims_t yd;
    for (int d = 0; d < y.ndim; d++)
        yd[d] = y.dims[d];
    if (tag == dnnl_format_tag_undef) {
        odnn_plain_md(&dst_md, y.ndim, y.dims);
        dst_md.data_type = dt;
    } else if (dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, dt, tag) != dnnl_success) {
        return 0;
    }
    int dst = odnn_new_value(b, out_t, ODNN_V_TEMP, &dst_md);
    if (dst < 0) {
        *out_st = odnn_oom();
        return 1;
    }
    c = b->c;
    c->values[dst].defined = 1;
    size_t aliased = 0;
    for (size_t k = 0; k < k_in; k++) {
        if (!alias_ok[k])
            continue;
        /* the source, and every alias of it, now lives in the destination */
        for (int i = 0; i < c->n_values; i++) {
            if (i == dst || (i != srcs[k] && c->values[i].kind != -srcs[k] - 100))
                continue;
            c->values[i].kind = -dst - 100;
            c->values[i].view_off += off[k];
        }
        aliased++;
    }
    for (size_t k = 0; k < k_in && *out_st == NULL; k++) {
        if (alias_ok[k])
            continue;
        int a = odnn_alias(b, dst, &piece[k], -1, off[k]);
        *out_st = a < 0 ? odnn_oom() : odnn_reorder(b, srcs[k], a, (int64_t)n);
    }
    if (*out_st == NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s' (Concat): %zu of its %zu sources written in place, "
                                 "the others copied into their %spieces",
                                 onednn_host->graph->node_name(v, n), aliased, k_in,
                                 strided ? "strided " : "");
    return 1;
}

/* Concat along the channels of sources in a channel blocking whose
 * channels are not whole blocks (a densenet's growth of 8 or 12 beside 16
 * channels), or of channels-last sources: the destination is channels-last
 * (nhwc), where each source is
 * a strided piece at its channel offset for any batch, and each source is
 * reordered straight into its piece. oneDNN's concat takes such sources
 * blocked only in its generic kernel, and plain, the batch normalization
 * that follows a dense block only in its slow ncsp kernel; nhwc has jit
 * kernels for both. Returns 1 when done, 0 to leave the concat as it was. */
static int odnn_concat_channels_last(struct odnn_build *b, size_t n, const int *srcs,
                                     size_t k_in, int axis, pl_status **out_st)
{
    static const dnnl_format_tag_t last[3] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    int64_t out_t = odnn_out(v, n, 0);
    struct odnn_tinfo y;
    odnn_tensor(v, out_t, &y);
    if (out_t < 0 || (size_t)out_t >= b->u.n_tensors || b->u.escapes[out_t] || !y.known ||
        axis != 1 || y.ndim < 3 || y.ndim > 5 || k_in < 1 || k_in > ODNN_MAX_CONCAT)
        return 0;
    dnnl_data_type_t dt = b->c->values[srcs[0]].md.data_type;
    dnnl_dims_t yd, strides;
    for (int d = 0; d < y.ndim; d++)
        yd[d] = y.dims[d];
    dnnl_memory_desc_t dst_md;
    if (dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, dt, last[y.ndim - 3]) != dnnl_success)
        return 0;
    for (int d = 0; d < y.ndim; d++)
        strides[d] = dst_md.format_desc.blocking.strides[d];
    int64_t at = 0;
    for (size_t k = 0; k < k_in; k++) {
        const dnnl_memory_desc_t *md = &b->c->values[srcs[k]].md;
        if (md->ndims != y.ndim || md->data_type != dt)
            return 0;
        at += md->dims[1];
    }
    if (at != y.dims[1])
        return 0;
    int dst = odnn_new_value(b, out_t, ODNN_V_TEMP, &dst_md);
    if (dst < 0) {
        *out_st = odnn_oom();
        return 1;
    }
    b->c->values[dst].defined = 1;
    b->c->values[dst].dense = 1; /* readers take it channels-last */
    size_t esize = dnnl_data_type_size(dt);
    at = 0;
    for (size_t k = 0; k < k_in && *out_st == NULL; k++) {
        dnnl_memory_desc_t piece;
        /* a copy: odnn_alias may move the values */
        const dnnl_memory_desc_t src_md = b->c->values[srcs[k]].md, *md = &src_md;
        if (dnnl_memory_desc_init_by_strides(&piece, md->ndims, md->dims, dt, strides) !=
            dnnl_success) {
            *out_st = odnn_error(PL_CODE_INTERNAL, "onednn: node '%s' (Concat): no view of "
                                                   "source %zu in its channels-last piece",
                                 onednn_host->graph->node_name(v, n), k);
            break;
        }
        int a = odnn_alias(b, dst, &piece, -1, (size_t)at * esize);
        *out_st = a < 0 ? odnn_oom() : odnn_reorder(b, srcs[k], a, (int64_t)n);
        at += md->dims[1];
    }
    if (*out_st == NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s' (Concat): its %zu sources copied into a "
                                 "channels-last destination",
                                 onednn_host->graph->node_name(v, n), k_in);
    return 1;
}

/* The values of Concat N's K_IN sources into SRCS and their layouts into
 * MDS: strided views as they are (VIEWS) or made dense (odnn_source). */
static pl_status *odnn_concat_sources(struct odnn_build *b, size_t n, size_t k_in, int views,
                                      int *srcs, dnnl_memory_desc_t *mds)
{
    for (size_t k = 0; k < k_in; k++) {
        int64_t t = odnn_in(b->v, n, k);
        pl_status *st = views ? odnn_source_view(b, t, (int64_t)n, &srcs[k])
                              : odnn_source(b, t, (int64_t)n, &srcs[k]);
        if (st != NULL)
            return st;
        mds[k] = b->c->values[srcs[k]].md;
    }
    return NULL;
}

/* Concat. Sources that all share a channel blocking stay in it, with the
 * destination in the same blocking (left to choose, oneDNN 2.6 picks
 * Bacd16b beside aBcd16b sources whose channels are not whole blocks, a
 * layout its batch normalization only has a reference kernel for). When
 * that takes no real kernel (mixed layouts, channels that are not whole
 * blocks: oneDNN's reference concat, 10x slower), every source goes plain
 * and the copy is the plain kernel's. */
static pl_status *odnn_concat(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int64_t axis = odnn_attr_int(v, n, "axis", 0);
    if (axis < 0)
        axis += y.ndim;
    size_t k_in = onednn_host->graph->node_input_count(v, n);
    int srcs[ODNN_MAX_CONCAT];
    dnnl_memory_desc_t mds[ODNN_MAX_CONCAT];
    pl_status *st = NULL;
    /* strided views as they are: odnn_concat_in_place reorders them
     * straight into their pieces; densified for the rest */
    if ((st = odnn_concat_sources(b, n, k_in, 1, srcs, mds)) != NULL)
        return st;
    dnnl_format_tag_t tag = odnn_channel_block_tag(&mds[0]);
    for (size_t k = 1; k < k_in && tag != dnnl_format_tag_undef; k++)
        if (odnn_channel_block_tag(&mds[k]) != tag)
            tag = dnnl_format_tag_undef;
    /* Channels-last sources along the channels: a channels-last
     * destination, each source copied into its strided piece, where plain
     * pieces would take as many copies and a channels-last reader one more
     * (GhostNet's primary and cheap convolutions, concatenated in every
     * module). Not when some are channel-blocked: oneDNN's reorder from
     * channels last into blocks of 16 of few channels (jit:uni) ran at a
     * third of the speed of the one from plain. */
    int all_last = axis == 1;
    for (size_t k = 0; k < k_in && all_last; k++)
        all_last = odnn_channel_block(&mds[k]) == -1;
    if (all_last && odnn_concat_channels_last(b, n, srcs, k_in, (int)axis, &st))
        return st;
    if (odnn_concat_in_place(b, n, srcs, k_in, (int)axis, tag, &st))
        return st;
    if ((st = odnn_concat_sources(b, n, k_in, 0, srcs, mds)) != NULL)
        return st;
    int whole = 1;
    for (size_t k = 0; k < k_in && tag != dnnl_format_tag_undef; k++)
        whole &= mds[k].dims[1] % mds[k].format_desc.blocking.inner_blks[0] == 0;
    if (tag != dnnl_format_tag_undef && !whole &&
        odnn_concat_channels_last(b, n, srcs, k_in, (int)axis, &st))
        return st;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_unimplemented;
    if (tag == dnnl_format_tag_undef && (y.ndim == 3 || y.ndim == 4) &&
        (mds[0].data_type == dnnl_u8 || mds[0].data_type == dnnl_s8)) {
        /* 8-bit sources come channels-last from their convolutions and
         * pools: concatenated so, not through plain copies (squeezenet's
         * fire modules) */
        dnnl_memory_desc_t dst_md;
        dnnl_dims_t yd;
        for (int i = 0; i < y.ndim; i++)
            yd[i] = y.dims[i];
        if (dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, mds[0].data_type,
                                         y.ndim == 4 ? dnnl_acdb : dnnl_acb) == dnnl_success)
            ds = odnn_concat_pd(b, k_in, (int)axis, mds, &dst_md, &pd);
    }
    if (pd == NULL && tag != dnnl_format_tag_undef) {
        dnnl_memory_desc_t dst_md;
        dnnl_dims_t yd;
        for (int i = 0; i < y.ndim; i++)
            yd[i] = y.dims[i];
        if (dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, mds[0].data_type, tag) ==
            dnnl_success)
            ds = odnn_concat_pd(b, k_in, (int)axis, mds, &dst_md, &pd);
    }
    if (pd == NULL) {
        for (size_t k = 0; st == NULL && k < k_in; k++) {
            st = odnn_plain(b, srcs[k], (int64_t)n, &srcs[k]);
            if (st == NULL)
                mds[k] = b->c->values[srcs[k]].md;
        }
        if (st != NULL)
            return st;
        /* A row-major destination first: left to choose ("any"), oneDNN
         * 2.6 picks a permuted one (bac for [2,1,48] + [2,64,48] on axis
         * 1, a ViT's class token) that only its reference concat writes,
         * and the readers then get the reference kernels too. */
        dnnl_memory_desc_t rm;
        odnn_plain_md(&rm, y.ndim, y.dims);
        ds = odnn_concat_pd(b, k_in, (int)axis, mds, &rm, &pd);
        if (pd == NULL)
            ds = odnn_concat_pd(b, k_in, (int)axis, mds, NULL, &pd);
        if (ds == dnnl_unimplemented && pd == NULL) {
            /* Nothing but the reference kernel: take it rather than fail
             * a subgraph the partition already gave this module. */
            dnnl_primitive_attr_t attr;
            if ((st = odnn_attr(&attr, NULL)) != NULL)
                return st;
            ds = dnnl_concat_primitive_desc_create(&pd, NULL, (int)k_in, (int)axis, mds, attr,
                                                   b->ctx->engine);
            dnnl_primitive_attr_destroy(attr);
            const char *impl = NULL;
            if (ds == dnnl_success)
                dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
            onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                     "node '%s' (Concat): oneDNN's reference implementation (%s)",
                                     onednn_host->graph->node_name(v, n), impl ? impl : "?");
        }
    }
    st = odnn_dnnl(ds, "concat", v, (int64_t)n);
    int dst = -1, s = -1;
    if (st == NULL && (dst = odnn_dst_value(b, odnn_out(v, n, 0), pd)) < 0)
        st = odnn_oom();
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_CONCAT, pd, (int64_t)n, &st);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st != NULL)
        return st;
    for (size_t k = 0; k < k_in; k++)
        odnn_arg(b, s, DNNL_ARG_MULTIPLE_SRC + (int)k, ODNN_REF_VALUE, srcs[k]);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* MD (plain, any strides) seen with dims OD: the strides that read the same
 * elements in the same order, as *OUT. Dims of size 1 take any stride;
 * dims a reshape merges must be laid out one inside the other. Returns 0
 * when no strides can (a merge across a gap, or a size-0 tensor). */
static int odnn_reshape_view(const dnnl_memory_desc_t *md, int ond, const int64_t *od,
                             dnnl_memory_desc_t *out)
{
    const dnnl_dims_t *is = &md->format_desc.blocking.strides;
    int64_t id[DNNL_MAX_NDIMS], ist[DNNL_MAX_NDIMS], os[DNNL_MAX_NDIMS];
    int map[DNNL_MAX_NDIMS], ni = 0, no = 0;
    for (int k = 0; k < md->ndims; k++) {
        if (md->dims[k] == 0)
            return 0;
        if (md->dims[k] != 1)
            id[ni] = md->dims[k], ist[ni++] = (*is)[k];
    }
    for (int k = 0; k < ond; k++) {
        if (od[k] == 0)
            return 0;
        if (od[k] != 1)
            map[no++] = k;
    }
    int i = 0, j = 0;
    while (i < ni && j < no) {
        int64_t pi = id[i], pj = od[map[j]];
        int ii = i + 1, jj = j + 1;
        while (pi != pj) {
            if (pi < pj) {
                if (ii >= ni || ist[ii - 1] != ist[ii] * id[ii])
                    return 0;
                pi *= id[ii++];
            } else {
                if (jj >= no)
                    return 0;
                pj *= od[map[jj++]];
            }
        }
        int64_t stride = ist[ii - 1];
        for (int k = jj - 1; k >= j; k--) {
            os[map[k]] = stride;
            stride *= od[map[k]];
        }
        i = ii, j = jj;
    }
    if (i != ni || j != no)
        return 0;
    for (int k = ond - 1; k >= 0; k--) /* size-1 dims: the stride of a dense one */
        if (od[k] == 1)
            os[k] = k + 1 < ond ? os[k + 1] * od[k + 1] : 1;
    dnnl_dims_t d, st;
    for (int k = 0; k < ond; k++)
        d[k] = od[k], st[k] = os[k];
    return dnnl_memory_desc_init_by_strides(out, ond, d, md->data_type, st) == dnnl_success;
}

/* Reshape, Flatten, Identity and Transpose: no step, the output is a view
 * of the input's bytes with other dims or strides (the input is made plain
 * first if its writer chose a blocked layout, and dense if a reshape cannot
 * be expressed in its strides). A reader that takes strides (MatMul) reads
 * the view; any other reader gets a dense copy (odnn_source). */
static pl_status *odnn_relayout(struct odnn_build *b, size_t n, const char *op, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    pl_status *st = NULL;
    int rank = x.ndim > 0 ? x.ndim : 1;
    if (!odnn_is_plain(&b->c->values[src].md) || b->c->values[src].md.ndims != rank)
        st = odnn_plain(b, src, (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t view_md;
    int nd = y.ndim > 0 ? y.ndim : 1;
    int64_t one = 1;
    const int64_t *yd = y.ndim > 0 ? y.dims : &one;
    if (strcmp(op, "Transpose") == 0) {
        const int64_t *perm;
        size_t np = odnn_attr_ints(v, n, "perm", &perm);
        int p[DNNL_MAX_NDIMS];
        for (int i = 0; i < x.ndim; i++) {
            int64_t from = np == (size_t)x.ndim ? perm[i] : x.ndim - 1 - i;
            if (from < 0 || from >= x.ndim)
                return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: Transpose: bad perm");
            p[from] = i; /* input axis `from` becomes output axis i */
        }
        st = odnn_dnnl(dnnl_memory_desc_permute_axes(&view_md, &b->c->values[src].md, p),
                       "layout view", v, (int64_t)n);
    } else if (!odnn_reshape_view(&b->c->values[src].md, nd, yd, &view_md)) {
        st = odnn_plain(b, src, (int64_t)n, &src);
        if (st == NULL && !odnn_reshape_view(&b->c->values[src].md, nd, yd, &view_md))
            st = odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no view of the dense input", op,
                            onednn_host->graph->node_name(v, n));
    }
    if (st != NULL)
        return st;
    if (odnn_alias(b, src, &view_md, odnn_out(v, n, 0), 0) < 0)
        return odnn_oom();
    return NULL;
}

/* Split: each output is a strided view of the plain input, at its offset
 * (no step; see odnn_relayout for who copies a view). */
static pl_status *odnn_split(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    int32_t axis = 0;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    if (!odnn_split_axis(v, n, &x, &axis))
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: Split '%s': output shapes do not tile "
                                               "the input",
                          onednn_host->graph->node_name(v, n));
    pl_status *st = NULL;
    if (!odnn_is_plain(&b->c->values[src].md))
        st = odnn_plain(b, src, (int64_t)n, &src);
    const dnnl_memory_desc_t *md = &b->c->values[src].md;
    int64_t off = 0;
    for (size_t k = 0; st == NULL && k < onednn_host->graph->node_output_count(v, n); k++) {
        struct odnn_tinfo y;
        odnn_tensor(v, odnn_out(v, n, k), &y);
        dnnl_memory_desc_t sub;
        dnnl_dims_t yd;
        for (int32_t d = 0; d < y.ndim; d++)
            yd[d] = y.dims[d];
        st = odnn_dnnl(dnnl_memory_desc_init_by_strides(&sub, y.ndim, yd, md->data_type,
                                                        md->format_desc.blocking.strides),
                       "split view", v, (int64_t)n);
        size_t esize = dnnl_data_type_size(md->data_type);
        if (st == NULL && odnn_alias(b, src, &sub, odnn_out(v, n, k), (size_t)off * esize) < 0)
            return odnn_oom();
        md = &b->c->values[src].md; /* odnn_alias may move the table */
        off += y.dims[axis] * md->format_desc.blocking.strides[axis];
    }
    return st;
}

/* SRC in plain layout for a view to be taken of it (a strided view stays
 * as it is). */
static pl_status *odnn_view_source(struct odnn_build *b, size_t n, int *src)
{
    return odnn_is_plain(&b->c->values[*src].md) ? NULL
                                                 : odnn_plain(b, *src, (int64_t)n, src);
}

/* Output tensor OUT_T of node N as a view of SRC's bytes: dims YD and
 * strides YS (R of each, in elements), starting OFF elements in. */
static pl_status *odnn_view_out(struct odnn_build *b, size_t n, int src, int r,
                                const dnnl_dims_t yd, const dnnl_dims_t ys, int64_t off,
                                int64_t out_t, const char *what)
{
    dnnl_data_type_t dt = b->c->values[src].md.data_type;
    dnnl_memory_desc_t sub;
    pl_status *st = odnn_dnnl(dnnl_memory_desc_init_by_strides(&sub, r, yd, dt, ys), what, b->v,
                              (int64_t)n);
    if (st == NULL && odnn_alias(b, src, &sub, out_t, (size_t)off * dnnl_data_type_size(dt)) < 0)
        return odnn_oom();
    return st;
}

/* Gather of one index: a view of the plain input at that index's offset,
 * without the axis when the index is a scalar (no step). */
static pl_status *odnn_gather(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    char reason[ODNN_REASON] = "";
    int64_t axis, index;
    if (!odnn_gather_one(v, n, &axis, &index, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: %s", reason);
    pl_status *st = odnn_view_source(b, n, &src);
    if (st != NULL)
        return st;
    const dnnl_memory_desc_t *md = &b->c->values[src].md;
    struct odnn_tinfo y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    dnnl_dims_t yd, ys;
    int keep = y.ndim == md->ndims, r = 0;
    for (int d = 0; d < md->ndims; d++) {
        if (d == axis && !keep)
            continue;
        yd[r] = d == axis ? 1 : md->dims[d];
        ys[r++] = md->format_desc.blocking.strides[d];
    }
    return odnn_view_out(b, n, src, r, yd, ys, index * md->format_desc.blocking.strides[axis],
                         odnn_out(v, n, 0), "gather view");
}

/* Resize/Upsample as a resampling step in the source's layout. */
/* *VI as an alias a primitive reads channels-last, when it is a strided
 * view whose strides are a permutation of a dense layout (no gaps) and
 * not row-major; else -1. Dims of 1 get the outermost stride: with the
 * canonical one (odnn_canon_strides) [1, C, H, W] read from [1, H, W, C]
 * ties N's stride with W's, and oneDNN 2.6 names the layout cdab and runs
 * it on its reference kernel (22 ms for SegFormer's 128 x 32 x 32 resize
 * against 0.3). */
static pl_status *odnn_permuted_view(struct odnn_build *b, int *vi)
{
    dnnl_memory_desc_t md = b->c->values[*vi].md;
    size_t elems = 1;
    for (int d = 0; d < md.ndims; d++)
        elems *= (size_t)md.dims[d];
    if (!odnn_is_plain(&md) || odnn_is_row_major(&md) || b->c->values[*vi].dense ||
        dnnl_memory_desc_get_size(&md) != elems * dnnl_data_type_size(md.data_type)) {
        *vi = -1;
        return NULL;
    }
    int64_t outer = 1;
    for (int d = 0; d < md.ndims; d++)
        if (md.dims[d] > 1)
            outer = md.format_desc.blocking.strides[d] * md.dims[d] > outer
                        ? md.format_desc.blocking.strides[d] * md.dims[d]
                        : outer;
    for (int d = 0; d < md.ndims; d++)
        if (md.dims[d] == 1)
            md.format_desc.blocking.strides[d] = outer;
    int a = odnn_alias_as(b, *vi, &md, -1, 0, 0);
    if (a < 0)
        return odnn_oom();
    *vi = a;
    return NULL;
}

/* Resize/Upsample on the module's own kernel (odnn_resize_own_modes):
 * from SRC in its vector layout (a plain source is reordered into blocks
 * of 8 channels first) into that layout, or straight into plain NCHW when
 * the result is an output of the subgraph (no reorder after it). 1 when
 * it emitted the step (or failed: *OUT_ST). */
static int odnn_resize_own(struct odnn_build *b, size_t n, const char *op, int src,
                           pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    struct odnn_resize r;
    char reason[ODNN_REASON] = "";
    *out_st = NULL;
    if (!b->u.own || !odnn_resize_own_modes(v, n, op, &r, reason))
        return 0;
    int64_t xs[4], ys[4] = {0, 0, 0, 0};
    if (!odnn_pool_layout(&b->c->values[src].md, &r.groups, &r.vecs, xs)) {
        dnnl_memory_desc_t bmd;
        dnnl_dims_t xd = {r.n, r.ch, r.ih, r.iw};
        dnnl_memory_desc_init_by_tag(&bmd, 4, xd, dnnl_f32, dnnl_aBcd8b);
        if ((*out_st = odnn_ensure(b, src, &bmd, (int64_t)n, &src)) != NULL)
            return 1;
        if (!odnn_pool_layout(&b->c->values[src].md, &r.groups, &r.vecs, xs)) {
            *out_st = odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no blocked source", op,
                                 onednn_host->graph->node_name(v, n));
            return 1;
        }
    }
    int64_t out_t = odnn_out(v, n, 0);
    struct odnn_tinfo y;
    odnn_tensor(v, out_t, &y);
    dnnl_memory_desc_t ymd;
    int64_t groups, vecs;
    r.plain = out_t >= 0 && (size_t)out_t < b->u.n_tensors && b->u.escapes[out_t];
    if (r.plain) {
        odnn_plain_md(&ymd, 4, y.dims);
        ys[0] = r.ch * r.oh * r.ow;
    } else if (!odnn_vector_md_like(&b->c->values[src].md, &y, &ymd, &groups, &vecs, ys)) {
        *out_st = odnn_error(PL_CODE_INTERNAL, "onednn: %s '%s': no destination layout", op,
                             onednn_host->graph->node_name(v, n));
        return 1;
    }
    r.xs_n = xs[0], r.xs_g = xs[1], r.xs_h = xs[2], r.xs_w = xs[3];
    r.ys_n = ys[0], r.ys_g = ys[1], r.ys_h = ys[2], r.ys_w = ys[3];
    size_t head = (sizeof r + 63) & ~(size_t)63;
    struct odnn_resize *rp =
        onednn_host->host_alloc(b->ctx->host_ctx, head + odnn_resize_table_bytes(&r), 0);
    int dst = rp != NULL ? odnn_new_value(b, out_t, ODNN_V_TEMP, &ymd) : -1;
    struct odnn_step *s = dst >= 0 ? odnn_next_step(b, ODNN_S_ORESIZE, (int64_t)n) : NULL;
    if (s == NULL) {
        if (rp != NULL)
            odnn_free(b->ctx, rp);
        *out_st = odnn_oom();
        return 1;
    }
    *rp = r;
    odnn_resize_tables(rp, (char *)rp + head);
    s->resize = rp;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    static const char *const taps[] = {"", "nearest", "linear", "", "cubic"};
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "node '%s': the module's own Resize (%s%s)",
                             onednn_host->graph->node_name(v, n), taps[r.taps],
                             r.plain ? ", written plain" : "");
    return 1;
}

static pl_status *odnn_resample(struct odnn_build *b, size_t n, const char *op, int src)
{
    pl_status *own = NULL;
    if (odnn_resize_own(b, n, op, src, &own))
        return own;
    const pl_graph_view *v = b->v;
    char reason[ODNN_REASON] = "";
    dnnl_alg_kind_t alg = odnn_resample_alg(v, n, op, reason);
    if (alg == dnnl_alg_kind_undef)
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: %s", reason);
    struct odnn_tinfo y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    dnnl_dims_t yd;
    for (int d = 0; d < y.ndim; d++)
        yd[d] = y.dims[d];
    /* A view in permuted strides without gaps is read as it is: SegFormer's
     * decode head reshapes each [1, HW, C] product to [1, C, H, W] through a
     * Transpose, channels-last, where oneDNN's resampling runs along the
     * channels (on a plain copy: a reorder, then a resampling of plain
     * planes). Any other view is copied plain first (odnn_source). */
    int view = src;
    pl_status *st = odnn_permuted_view(b, &view);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t dst_md;
    dnnl_memory_desc_init_by_tag(&dst_md, y.ndim, yd, b->c->values[src].md.data_type,
                                 dnnl_format_tag_any);
    dnnl_resampling_desc_t rd;
    if (view >= 0) {
        st = odnn_dnnl(dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, alg, NULL,
                                                         &b->c->values[view].md, &dst_md),
                       "resampling descriptor", v, (int64_t)n);
        if (st == NULL && !odnn_desc_is_ref(b, &rd))
            return odnn_simple(b, n, ODNN_S_RESAMPLE, &rd, view, odnn_out(v, n, 0), NULL, NULL,
                               0);
        if (st != NULL)
            onednn_host->status_free(st);
    }
    if (odnn_is_plain(&b->c->values[src].md) && !b->c->values[src].dense &&
        (st = odnn_plain(b, src, (int64_t)n, &src)) != NULL)
        return st;
    st = odnn_dnnl(dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, alg, NULL,
                                                     &b->c->values[src].md, &dst_md),
                   "resampling descriptor", v, (int64_t)n);
    if (st == NULL && !odnn_is_plain(&b->c->values[src].md) && odnn_desc_is_ref(b, &rd)) {
        if ((st = odnn_plain(b, src, (int64_t)n, &src)) != NULL)
            return st;
        st = odnn_dnnl(dnnl_resampling_forward_desc_init(&rd, dnnl_forward_inference, alg, NULL,
                                                         &b->c->values[src].md, &dst_md),
                       "resampling descriptor", v, (int64_t)n);
    }
    return st != NULL ? st
                      : odnn_simple(b, n, ODNN_S_RESAMPLE, &rd, src, odnn_out(v, n, 0), NULL,
                                    NULL, 0);
}

/* Slice: the output is a strided view of the plain input at the offset of
 * its first element, each axis's stride times its step (no step). */
static pl_status *odnn_slice(struct odnn_build *b, size_t n, int src)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    int64_t start[ODNN_MAX_RANK], step[ODNN_MAX_RANK];
    char reason[ODNN_REASON] = "";
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    if (!odnn_slice_window(v, n, &x, &y, start, step, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: %s", reason);
    pl_status *st = odnn_view_source(b, n, &src);
    if (st != NULL)
        return st;
    const dnnl_memory_desc_t *md = &b->c->values[src].md;
    dnnl_dims_t yd, ys;
    int64_t off = 0;
    for (int32_t d = 0; d < y.ndim; d++) {
        yd[d] = y.dims[d];
        ys[d] = md->format_desc.blocking.strides[d] * step[d];
        off += start[d] * md->format_desc.blocking.strides[d];
    }
    return odnn_view_out(b, n, src, y.ndim, yd, ys, off, odnn_out(v, n, 0), "slice view");
}

/* ---- recurrent layers: emission ------------------------------------------ */

/* The state input T of node N ([dirs, batch, hidden], layout 1: [batch,
 * dirs, hidden]) as oneDNN's plain ldnc LDNC: a view of its bytes under
 * layout 0, a reordered copy under layout 1; zeros (a constant) when T is
 * absent. */
static pl_status *odnn_rnn_state_in(struct odnn_build *b, size_t n, int64_t t, int layout,
                                    const dnnl_dims_t ldnc, int *out)
{
    dnnl_memory_desc_t plain, view;
    dnnl_memory_desc_init_by_strides(&plain, 4, ldnc, dnnl_f32, NULL);
    if (t < 0) {
        size_t bytes = dnnl_memory_desc_get_size(&plain);
        void *zeros = onednn_host->host_alloc(b->ctx->host_ctx, bytes, 64);
        if (zeros == NULL)
            return odnn_oom();
        memset(zeros, 0, bytes);
        int w;
        pl_status *st = odnn_weight(b, &plain, &plain, zeros, (int64_t)n, &w);
        odnn_free(b->ctx, zeros);
        if (st != NULL)
            return st;
        if ((*out = odnn_new_value(b, -1, ODNN_V_CONST, &plain)) < 0)
            return odnn_oom();
        b->c->values[*out].ext = w;
        b->c->values[*out].defined = 1;
        return NULL;
    }
    const int64_t d = ldnc[1], nb = ldnc[2], h = ldnc[3];
    dnnl_dims_t strides = {d * nb * h, layout ? h : nb * h, layout ? d * h : h, 1};
    dnnl_memory_desc_init_by_strides(&view, 4, ldnc, dnnl_f32, strides);
    int src;
    pl_status *st = odnn_source(b, t, (int64_t)n, &src);
    if (st == NULL)
        st = odnn_view_as(b, src, &view, (int64_t)n, &src);
    return st != NULL ? st : odnn_ensure(b, src, &plain, (int64_t)n, out);
}

/* The value oneDNN writes an output of a recurrent node into, in the plain
 * layout of PRIM (ND dims): for graph tensor T, an alias of the bytes of
 * T's own value, whose descriptor (ONNX's dims ODIMS with strides OSTRIDES)
 * says where each of T's elements lies in oneDNN's layout; when T is
 * absent (-1), a temporary. */
static pl_status *odnn_rnn_out(struct odnn_build *b, int64_t t, const dnnl_memory_desc_t *prim,
                               int ond, const dnnl_dims_t odims, const dnnl_dims_t ostrides,
                               int *out)
{
    dnnl_memory_desc_t pmd = *prim, omd;
    if (t < 0) {
        if ((*out = odnn_new_value(b, -1, ODNN_V_TEMP, &pmd)) < 0)
            return odnn_oom();
        b->c->values[*out].defined = 1;
        return NULL;
    }
    dnnl_memory_desc_init_by_strides(&omd, ond, odims, dnnl_f32, ostrides);
    odnn_canon_strides(&omd);
    int vi = odnn_new_value(b, t, ODNN_V_TEMP, &omd);
    if (vi < 0)
        return odnn_oom();
    b->c->values[vi].defined = 1;
    if ((*out = odnn_alias(b, vi, &pmd, -1, 0)) < 0)
        return odnn_oom();
    return NULL;
}

/* ONNX's weights W or R ([dirs, gates*hidden, in]) as oneDNN's plain
 * ldigo [1, dirs, in, gates, hidden], gates in oneDNN's order (GMAP[g] is
 * ONNX's index of oneDNN's gate g), in a buffer of the host's. */
static float *odnn_rnn_ldigo(struct odnn_build *b, const float *src, int64_t dirs, int64_t gates,
                             int64_t hidden, int64_t in, const int *gmap)
{
    size_t elems = (size_t)(dirs * gates * hidden * in);
    float *buf = onednn_host->host_alloc(b->ctx->host_ctx, elems * sizeof *buf + 1, 64);
    if (buf == NULL)
        return NULL;
    for (int64_t d = 0; d < dirs; d++)
        for (int64_t g = 0; g < gates; g++)
            for (int64_t h = 0; h < hidden; h++) {
                const float *row = src + ((d * gates + gmap[g]) * hidden + h) * in;
                float *dst = buf + d * in * gates * hidden + g * hidden + h;
                for (int64_t i = 0; i < in; i++)
                    dst[i * gates * hidden] = row[i];
            }
    return buf;
}

/* RNN, GRU or LSTM node N as one oneDNN RNN primitive (see the section's
 * comment before odnn_check_rnn). */
static pl_status *odnn_rnn(struct odnn_build *b, size_t n)
{
    static const int lstm_map[4] = {0, 2, 3, 1}, plain_map[3] = {0, 1, 2},
                     peep_map[3] = {0, 2, 1};
    const pl_graph_view *v = b->v;
    const char *op = onednn_host->graph->node_op(v, n);
    const int64_t gates = odnn_rnn_gates(op);
    int reverse;
    const int64_t dirs = odnn_rnn_dirs(v, n, &reverse);
    const int layout = odnn_attr_int(v, n, "layout", 0) != 0;
    const int lbr = gates == 3 && odnn_attr_int(v, n, "linear_before_reset", 0) != 0;
    char reason[ODNN_REASON] = "";
    dnnl_alg_kind_t alg;
    odnn_rnn_activations(v, n, op, (int)dirs, &alg, reason);
    struct odnn_tinfo x, w, r, bt, pt;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_in(v, n, 1), &w);
    odnn_tensor(v, odnn_in(v, n, 2), &r);
    const int has_bias = odnn_tensor(v, odnn_in(v, n, 3), &bt);
    const int has_peep = gates == 4 && odnn_tensor(v, odnn_in(v, n, 7), &pt);
    const int64_t seq = x.dims[layout ? 1 : 0], batch = x.dims[layout ? 0 : 1], in = x.dims[2];
    const int64_t hidden = r.dims[2], bgates = gates + lbr;
    if (w.cbytes != (size_t)w.elems * sizeof(float) ||
        r.cbytes != (size_t)r.elems * sizeof(float) ||
        (has_bias && bt.cbytes != (size_t)bt.elems * sizeof(float)) ||
        (has_peep && pt.cbytes != (size_t)pt.elems * sizeof(float)))
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: %s '%s': a constant's byte count "
                                                    "disagrees with its type",
                          op, onednn_host->graph->node_name(v, n));
    const int *gmap = gates == 4 ? lstm_map : plain_map;
    dnnl_rnn_direction_t dir = dirs == 2 ? dnnl_bidirectional_concat
                               : reverse ? dnnl_unidirectional_right2left
                                         : dnnl_unidirectional_left2right;

    /* sources: X as tnc, the initial states as ldnc */
    int src = -1, h0 = -1, c0 = -1;
    dnnl_dims_t tnc = {seq, batch, in}, ldnc = {1, dirs, batch, hidden};
    dnnl_dims_t x_strides = {layout ? in : batch * in, layout ? seq * in : in, 1};
    dnnl_memory_desc_t x_view, src_md, iter_md;
    dnnl_memory_desc_init_by_strides(&x_view, 3, tnc, dnnl_f32, x_strides);
    /* layout 1: oneDNN reads X and writes Y batch-major (ntc) in place */
    dnnl_memory_desc_init_by_strides(&src_md, 3, tnc, dnnl_f32, x_strides);
    dnnl_memory_desc_init_by_strides(&iter_md, 4, ldnc, dnnl_f32, NULL);
    pl_status *st = odnn_source(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st == NULL)
        st = odnn_view_as(b, src, &x_view, (int64_t)n, &src);
    if (st == NULL)
        st = odnn_ensure(b, src, &src_md, (int64_t)n, &src);
    int64_t h0_t = odnn_in(v, n, 5), c0_t = gates == 4 ? odnn_in(v, n, 6) : -1;
    if (st == NULL && (h0_t >= 0 || c0_t >= 0))
        st = odnn_rnn_state_in(b, n, h0_t, layout, ldnc, &h0);
    if (st == NULL && gates == 4 && h0 >= 0)
        st = odnn_rnn_state_in(b, n, c0_t, layout, ldnc, &c0);
    if (st != NULL)
        return st;

    /* the primitive: weights in the layout it picks, the rest plain */
    int64_t y_t = odnn_out(v, n, 0), yh_t = odnn_out(v, n, 1);
    int64_t yc_t = gates == 4 ? odnn_out(v, n, 2) : -1;
    int want_iter = yh_t >= 0 || yc_t >= 0;
    dnnl_dims_t wl_dims = {1, dirs, in, gates, hidden}, wi_dims = {1, dirs, hidden, gates, hidden};
    dnnl_dims_t b_dims = {1, dirs, bgates, hidden}, p_dims = {1, dirs, 3, hidden};
    dnnl_dims_t dst_dims = {seq, batch, dirs * hidden};
    dnnl_memory_desc_t wl_any, wi_any, wl_plain, wi_plain, bias_md, peep_md, dst_md;
    dnnl_memory_desc_init_by_tag(&wl_any, 5, wl_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wi_any, 5, wi_dims, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&wl_plain, 5, wl_dims, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_strides(&wi_plain, 5, wi_dims, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_strides(&bias_md, 4, b_dims, dnnl_f32, NULL);
    dnnl_memory_desc_init_by_strides(&peep_md, 4, p_dims, dnnl_f32, NULL);
    dnnl_dims_t dst_strides = {layout ? dirs * hidden : batch * dirs * hidden,
                               layout ? seq * dirs * hidden : dirs * hidden, 1};
    dnnl_memory_desc_init_by_strides(&dst_md, 3, dst_dims, dnnl_f32, dst_strides);
    const dnnl_memory_desc_t *h0_md = h0 >= 0 ? &iter_md : NULL;
    const dnnl_memory_desc_t *hn_md = want_iter ? &iter_md : NULL;
    dnnl_rnn_desc_t rd;
    dnnl_status_t ds;
    if (gates == 4)
        ds = dnnl_lstm_forward_desc_init_v2(&rd, dnnl_forward_inference, dir, &src_md, h0_md,
                                            h0_md, &wl_any, &wi_any, has_peep ? &peep_md : NULL,
                                            &bias_md, &dst_md, hn_md, hn_md, 0);
    else if (gates == 3)
        ds = (lbr ? dnnl_lbr_gru_forward_desc_init : dnnl_gru_forward_desc_init)(
            &rd, dnnl_forward_inference, dir, &src_md, h0_md, &wl_any, &wi_any, &bias_md,
            &dst_md, hn_md, 0);
    else
        ds = dnnl_vanilla_rnn_forward_desc_init(&rd, dnnl_forward_inference, alg, dir, &src_md,
                                                h0_md, &wl_any, &wi_any, &bias_md, &dst_md, hn_md,
                                                0, 0.0f, 0.0f);
    st = odnn_dnnl(ds, "RNN descriptor", v, (int64_t)n);
    dnnl_primitive_desc_t pd = NULL;
    if (st == NULL)
        st = odnn_make_pd(b, &rd, NULL, n, &pd);

    /* weights, reordered once: W, R, the summed bias, the peepholes */
    int wl = -1, wi = -1, wb = -1, wp = -1;
    float *buf = NULL;
    if (st == NULL) {
        buf = odnn_rnn_ldigo(b, w.cdata, dirs, gates, hidden, in, gmap);
        st = buf == NULL ? odnn_oom()
                         : odnn_weight(b, odnn_pd_md(pd, DNNL_ARG_WEIGHTS_LAYER), &wl_plain, buf,
                                       (int64_t)n, &wl);
        odnn_free(b->ctx, buf);
    }
    if (st == NULL) {
        buf = odnn_rnn_ldigo(b, r.cdata, dirs, gates, hidden, hidden, gmap);
        st = buf == NULL ? odnn_oom()
                         : odnn_weight(b, odnn_pd_md(pd, DNNL_ARG_WEIGHTS_ITER), &wi_plain, buf,
                                       (int64_t)n, &wi);
        odnn_free(b->ctx, buf);
    }
    if (st == NULL) {
        size_t elems = (size_t)(dirs * bgates * hidden);
        buf = onednn_host->host_alloc(b->ctx->host_ctx, elems * sizeof *buf, 64);
        if (buf == NULL)
            st = odnn_oom();
        for (int64_t d = 0; st == NULL && d < dirs; d++)
            for (int64_t g = 0; g < bgates; g++)
                for (int64_t h = 0; h < hidden; h++) {
                    /* lbr: gate 2 takes Wbh alone, gate 3 (inside r) Rbh */
                    const float *bw = has_bias ? (const float *)bt.cdata + d * 2 * gates * hidden
                                               : NULL;
                    int64_t og = g < gates ? gmap[g] : 2;
                    float wv = bw != NULL && g < gates ? bw[og * hidden + h] : 0.0f;
                    float rv = bw != NULL && !(lbr && g == 2)
                                   ? bw[(gates + og) * hidden + h]
                                   : 0.0f;
                    buf[(d * bgates + g) * hidden + h] = wv + rv;
                }
        if (st == NULL)
            st = odnn_weight(b, &bias_md, &bias_md, buf, (int64_t)n, &wb);
        odnn_free(b->ctx, buf);
    }
    if (st == NULL && has_peep) {
        size_t elems = (size_t)(dirs * 3 * hidden);
        buf = onednn_host->host_alloc(b->ctx->host_ctx, elems * sizeof *buf, 64);
        if (buf == NULL)
            st = odnn_oom();
        for (int64_t d = 0; st == NULL && d < dirs; d++)
            for (int64_t g = 0; g < 3; g++)
                memcpy(buf + (d * 3 + g) * hidden,
                       (const float *)pt.cdata + (d * 3 + peep_map[g]) * hidden,
                       (size_t)hidden * sizeof *buf);
        if (st == NULL)
            st = odnn_weight(b, &peep_md, &peep_md, buf, (int64_t)n, &wp);
        odnn_free(b->ctx, buf);
    }

    /* destinations: Y from dst_layer [seq, batch, dirs*hidden] (ntc under
     * layout 1: then Y is its bytes as they are); Y_h and Y_c
     * from dst_iter and dst_iter_c [1, dirs, batch, hidden] */
    int y = -1, yh = -1, yc = -1;
    const int64_t dh = dirs * hidden;
    dnnl_dims_t y_dims = {layout ? batch : seq, layout ? seq : dirs, layout ? dirs : batch, hidden};
    dnnl_dims_t y_strides = {layout ? seq * dh : batch * dh, layout ? dh : hidden,
                             layout ? hidden : dh, 1};
    dnnl_dims_t s_dims = {layout ? batch : dirs, layout ? dirs : batch, hidden};
    dnnl_dims_t s_strides = {layout ? hidden : batch * hidden, layout ? batch * hidden : hidden,
                             1};
    if (st == NULL)
        st = odnn_rnn_out(b, y_t, &dst_md, 4, y_dims, y_strides, &y);
    if (st == NULL && want_iter)
        st = odnn_rnn_out(b, yh_t, &iter_md, 3, s_dims, s_strides, &yh);
    if (st == NULL && want_iter && gates == 4)
        st = odnn_rnn_out(b, yc_t, &iter_md, 3, s_dims, s_strides, &yc);
    int s = -1;
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_RNN, pd, (int64_t)n, &st);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    if (s < 0)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC_LAYER, ODNN_REF_VALUE, src);
    if (h0 >= 0)
        odnn_arg(b, s, DNNL_ARG_SRC_ITER, ODNN_REF_VALUE, h0);
    if (c0 >= 0)
        odnn_arg(b, s, DNNL_ARG_SRC_ITER_C, ODNN_REF_VALUE, c0);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS_LAYER, ODNN_REF_WEIGHT, wl);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS_ITER, ODNN_REF_WEIGHT, wi);
    if (wp >= 0)
        odnn_arg(b, s, DNNL_ARG_WEIGHTS_PEEPHOLE, ODNN_REF_WEIGHT, wp);
    odnn_arg(b, s, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, wb);
    odnn_arg(b, s, DNNL_ARG_DST_LAYER, ODNN_REF_VALUE, y);
    if (yh >= 0)
        odnn_arg(b, s, DNNL_ARG_DST_ITER, ODNN_REF_VALUE, yh);
    if (yc >= 0)
        odnn_arg(b, s, DNNL_ARG_DST_ITER_C, ODNN_REF_VALUE, yc);
    return NULL;
}

/* Emits node N (unless a fused primitive already covered it). */
/* ---- 8-bit quantized operators: emission ------------------------------------
 *
 * oneDNN 2.6's AMX int8 convolutions lose to its VNNI ones on small
 * problems (2 threads, u8 nhwc, zero points on: 16->64 channels 1x1 at
 * 16x16 10.4 us against 3.2; 64->64 3x3 at 8x8, 2.4M MACs, 8.8 against
 * 6.0; 256->256 3x3 at 4x4 35-43 against 23-43) and win on larger ones
 * (128->128 3x3 at 7x7, 7.2M MACs, 20 against 30; 512->512 3x3 at 7x7
 * 214 against 239; 64->64 3x3 at 28x28 23 against 51; 256->256 3x3 at
 * 14x14 113 against 202): below ODNN_AMX_INT8_MIN_MACS multiply-adds or
 * ODNN_AMX_INT8_MIN_PIXELS output pixels the next implementation is
 * taken. */
#define ODNN_AMX_INT8_MIN_MACS 4e6
#define ODNN_AMX_INT8_MIN_PIXELS 32

int onednn_int8_amx(double macs, double pixels)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) ==
               (unsigned)dnnl_cpu_isa_avx512_core_amx &&
           macs >= ODNN_AMX_INT8_MIN_MACS && pixels >= ODNN_AMX_INT8_MIN_PIXELS;
}

/* oneDNN 2.6's older AMX int8 kernels (not brgemm), which it offers for
 * a 1x1 convolution where its brgemm AMX one declines (fewer input
 * channels than a tile's depth, as a MobileNet's expansions have): 1.3-2.5x
 * slower than the VNNI brgemm kernel after them (ONEDNN_VERBOSE,
 * mobilenet_v2 QDQ at 224, 2 threads, jit_1x1: 16 -> 96 at 112x112 200 us
 * against 124, 24 -> 144 at 56x56 122 against 56, 64 -> 384 at 14x14 62
 * against 27; jit: 32 -> 192 at 28x28 48 against 25, 160 -> 960 at 7x7 29
 * against 23), while the brgemm AMX kernels win (ResNet-50's layers
 * 1.2-3.5x against VNNI) and so does jit's 7x7 stem (210 against 310). */
static int odnn_amx_old(const char *impl, int pointwise)
{
    return strstr(impl, "jit_1x1:avx512_core_amx") != NULL ||
           (pointwise && strstr(impl, "jit:avx512_core_amx") != NULL);
}

/* The implementation of DESC under ATTR: the first oneDNN offers, or the
 * next one that is not its reference kernel when the first is an AMX one
 * and AVOID_AMX, or one of the older AMX kernels a 1x1 convolution
 * (POINTWISE) should not take (odnn_amx_old). */
static pl_status *odnn_pd_pick(struct odnn_build *b, const_dnnl_op_desc_t desc,
                               const_dnnl_primitive_attr_t attr, int avoid_amx, int pointwise,
                               size_t node, dnnl_primitive_desc_t *out)
{
    dnnl_primitive_desc_iterator_t it;
    dnnl_status_t ds = dnnl_primitive_desc_iterator_create(&it, desc, attr, b->ctx->engine, NULL);
    if (ds != dnnl_success)
        return odnn_dnnl(ds, "primitive descriptor", b->v, (int64_t)node);
    dnnl_primitive_desc_t first = dnnl_primitive_desc_iterator_fetch(it), pd = NULL;
    const char *impl = NULL;
    if (first != NULL &&
        dnnl_primitive_desc_query(first, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        impl != NULL &&
        ((avoid_amx && strstr(impl, "amx") != NULL) || odnn_amx_old(impl, pointwise))) {
        while (pd == NULL && dnnl_primitive_desc_iterator_next(it) == dnnl_success) {
            dnnl_primitive_desc_t next = dnnl_primitive_desc_iterator_fetch(it);
            const char *ni = NULL;
            if (next != NULL &&
                dnnl_primitive_desc_query(next, dnnl_query_impl_info_str, 0, &ni) ==
                    dnnl_success &&
                !odnn_impl_is_ref(ni) && !odnn_amx_old(ni, pointwise) &&
                (!avoid_amx || strstr(ni, "amx") == NULL))
                pd = next;
            else if (next != NULL)
                dnnl_primitive_desc_destroy(next);
        }
    }
    dnnl_primitive_desc_iterator_destroy(it);
    const char *took = NULL;
    if (pd != NULL && dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &took) ==
                          dnnl_success && took != NULL)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s': %s, not oneDNN's first choice %s (%s)",
                                 onednn_host->graph->node_name(b->v, node), took, impl,
                                 odnn_amx_old(impl, pointwise)
                                     ? "its older AMX kernel, slower on 1x1 products"
                                     : "AMX loses below its size");
    if (pd != NULL && first != NULL)
        dnnl_primitive_desc_destroy(first);
    *out = pd != NULL ? pd : first;
    return *out != NULL ? NULL : odnn_oom();
}

/* The step of PD (destroyed here) for NODE writing tensor OUT_T into a
 * new value *DST in the layout PD picked; the step's index, or -1 with
 * *ST set. Does nothing but destroy PD when *ST is already set. */
static int odnn_step_to(struct odnn_build *b, uint32_t kind, dnnl_primitive_desc_t pd,
                        int64_t node, int64_t out_t, int *dst, pl_status **st)
{
    int s = -1;
    if (*st == NULL && (*dst = odnn_dst_value(b, out_t, pd)) < 0)
        *st = odnn_oom();
    if (*st == NULL)
        s = odnn_add_step(b, kind, pd, node, st);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    return *st == NULL ? s : -1;
}

static pl_status *odnn_qconv_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_qconv q;
    char reason[ODNN_REASON] = "";
    if (!odnn_qconv_of(v, n, &q, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    struct odnn_tinfo x, wt, y, bt;
    odnn_tensor(v, q.x, &x);
    odnn_tensor(v, q.w, &wt);
    odnn_tensor(v, q.y, &y);
    int src;
    pl_status *st = odnn_source(b, q.x, (int64_t)n, &src);
    if (st != NULL)
        return st;
    int nd = x.ndim, sr = q.win.sr, wnd = q.group > 1 ? nd + 1 : nd;
    int64_t m = wt.dims[0];
    dnnl_dims_t xd, yd, wd, bd = {m}, strides, dil, pl, pr;
    for (int i = 0; i < nd; i++)
        xd[i] = x.dims[i], yd[i] = y.dims[i];
    if (q.group > 1) {
        wd[0] = q.group;
        wd[1] = m / q.group;
        for (int i = 1; i < nd; i++)
            wd[i + 1] = wt.dims[i];
    } else {
        for (int i = 0; i < nd; i++)
            wd[i] = wt.dims[i];
    }
    for (int i = 0; i < sr; i++) {
        strides[i] = q.win.s[i];
        dil[i] = q.win.d[i] - 1;
        pl[i] = q.win.pl[i];
        pr[i] = q.win.pr[i];
    }
    dnnl_memory_desc_t src_md, wei_md, bia_md, dst_md, wei_plain;
    dnnl_memory_desc_init_by_tag(&src_md, nd, xd, x.dt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_md, wnd, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&wei_plain, wnd, wd, dnnl_s8, NULL);
    dnnl_memory_desc_init_by_tag(&bia_md, 1, bd, dnnl_s32, dnnl_a);
    dnnl_memory_desc_init_by_tag(&dst_md, nd, yd, y.dt, dnnl_format_tag_any);
    dnnl_convolution_desc_t cd;
    st = odnn_dnnl(dnnl_dilated_convolution_forward_desc_init(
                       &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_md, &wei_md,
                       q.bias >= 0 ? &bia_md : NULL, &dst_md, strides, dil, pl, pr),
                   "int8 convolution descriptor", v, (int64_t)n);
    if (st != NULL)
        return st;
    /* As ONNX Runtime requantizes (and the cpu module): the i32 sum plus
     * the bias, times the f32 multiplier x_scale * w_scale / y_scale,
     * rounded half to even, then the zero point added. oneDNN adds a
     * destination zero point before it rounds, which moves ties when the
     * zero point is odd, so it is a round and a shift among the post-ops
     * instead, and the conversion to 8 bits saturates. */
    float *scales = onednn_host->host_alloc(b->ctx->host_ctx, (size_t)m * sizeof(float), 64);
    if (scales == NULL)
        return odnn_oom();
    for (int64_t k = 0; k < q.n_ws; k++)
        scales[k] = q.xs * q.ws[k] / q.ys;
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success ||
        dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f) != dnnl_success ||
        (q.yz != 0 && dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, 1.0f,
                                                   (float)q.yz) != dnnl_success))
        st = odnn_oom();
    dnnl_primitive_attr_t attr = NULL;
    if (st == NULL)
        st = odnn_attr(&attr, po);
    if (po != NULL)
        dnnl_post_ops_destroy(po);
    if (st == NULL &&
        (dnnl_primitive_attr_set_output_scales(attr, q.n_ws > 1 ? m : 1, q.n_ws > 1 ? 2 : 0,
                                               scales) != dnnl_success ||
         (q.xz != 0 && dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &q.xz) !=
                           dnnl_success)))
        st = odnn_error(PL_CODE_INTERNAL, "onednn: QLinearConv '%s': cannot set its scales and "
                                          "zero points",
                        onednn_host->graph->node_name(v, n));
    odnn_free(b->ctx, scales);
    double pixels = (double)y.elems / (double)y.dims[1];
    double macs = (double)y.elems * (double)wt.elems / (double)m;
    dnnl_primitive_desc_t pd = NULL;
    if (st == NULL)
        st = odnn_pd_pick(b, &cd, attr, !onednn_int8_amx(macs, pixels),
                          wt.elems == wt.dims[0] * wt.dims[1], n, &pd);
    if (attr != NULL)
        dnnl_primitive_attr_destroy(attr);
    int w = -1, bw = -1, dst = -1, s = -1;
    if (st == NULL)
        st = odnn_src_arg(b, pd, DNNL_ARG_SRC, src, n, &src);
    if (st == NULL)
        st = odnn_weight(b, odnn_pd_md(pd, DNNL_ARG_WEIGHTS), &wei_plain, wt.cdata, (int64_t)n,
                         &w);
    if (st == NULL && q.bias >= 0) {
        odnn_tensor(v, q.bias, &bt);
        st = odnn_weight(b, &bia_md, &bia_md, bt.cdata, (int64_t)n, &bw);
    }
    s = odnn_step_to(b, ODNN_S_CONV, pd, (int64_t)n, q.y, &dst, &st);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, w);
    if (bw >= 0)
        odnn_arg(b, s, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, bw);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* DequantizeLinear alone: y = (x - zp) * s, a reorder of the 8-bit values
 * into f32 in their own layout with the zero point as the source's and
 * the scale as the output scale: the difference is exact and the product
 * is rounded once, as ONNX's. (oneDNN 2.6's binary takes a u8 source
 * only on its reference kernel: 650 us for 1x64x16x16.) */
static pl_status *odnn_dequant_emit(struct odnn_build *b, size_t n, const struct odnn_quant *p)
{
    int src;
    pl_status *st = odnn_source(b, p->x, (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t dst_md = b->c->values[src].md;
    dst_md.data_type = dnnl_f32;
    dnnl_primitive_attr_t attr;
    if ((st = odnn_attr(&attr, NULL)) != NULL)
        return st;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &p->s);
    if (ds == dnnl_success && p->zp != 0)
        ds = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &p->zp);
    if (ds == dnnl_success)
        ds = dnnl_reorder_primitive_desc_create(&pd, &b->c->values[src].md, b->ctx->engine,
                                                &dst_md, b->ctx->engine, attr);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return odnn_dnnl(ds, "DequantizeLinear reorder", b->v, (int64_t)n);
    int dst = -1, s = odnn_step_to(b, ODNN_S_REORDER, pd, (int64_t)n, p->y, &dst, &st);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* QuantizeLinear alone: y = saturate(round(x / s) + zp), a binary division
 * by the scale with a round, a clip to the integer range less the zero
 * point and the shift by it as post-ops, written in y's 8-bit type in the
 * source's layout (a plain copy when no JIT kernel takes that). */
static pl_status *odnn_dequant_emit(struct odnn_build *b, size_t n, const struct odnn_quant *p);

static pl_status *odnn_quant_emit(struct odnn_build *b, size_t n, const char *op)
{
    const pl_graph_view *v = b->v;
    int quantize = op[0] == 'Q';
    struct odnn_quant p;
    char reason[ODNN_REASON] = "";
    if (!odnn_quant_of(v, n, op, &p, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    if (!quantize)
        return odnn_dequant_emit(b, n, &p);
    struct odnn_tinfo x, y;
    odnn_tensor(v, p.x, &x);
    odnn_tensor(v, p.y, &y);
    int s0, s1;
    pl_status *st = odnn_source(b, p.x, (int64_t)n, &s0);
    if (st == NULL)
        st = odnn_source(b, odnn_in(v, n, 1), (int64_t)n, &s1);
    dnnl_dims_t ones;
    for (int i = 0; i < x.ndim; i++)
        ones[i] = 1;
    dnnl_memory_desc_t md1;
    dnnl_memory_desc_init_by_strides(&md1, x.ndim, ones, dnnl_f32, NULL);
    if (st == NULL)
        st = odnn_view_as(b, s1, &md1, (int64_t)n, &s1);
    if (st != NULL)
        return st;
    int32_t lo = y.dt == dnnl_s8 ? -128 : 0, hi = y.dt == dnnl_s8 ? 127 : 255;
    dnnl_post_ops_t po = NULL;
    if (dnnl_post_ops_create(&po) != dnnl_success)
        return odnn_oom();
    int ok = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f) ==
                 dnnl_success &&
             dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_clip, (float)(lo - p.zp),
                                          (float)(hi - p.zp)) == dnnl_success &&
             (p.zp == 0 || dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, 1.0f,
                                                        (float)p.zp) == dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    for (int attempt = 0; ok && st == NULL && pd == NULL && attempt < 2; attempt++) {
        /* in the source's layout when a JIT kernel takes it, else plain */
        if (attempt == 1 && !odnn_is_row_major(&b->c->values[s0].md)) {
            st = odnn_plain(b, s0, (int64_t)n, &s0);
            if (st != NULL)
                break;
        }
        const dnnl_memory_desc_t *xmd = &b->c->values[s0].md;
        dnnl_memory_desc_t dst_md;
        dnnl_memory_desc_init_by_tag(&dst_md, xmd->ndims, xmd->dims, y.dt, dnnl_format_tag_any);
        dnnl_binary_desc_t bd;
        st = odnn_dnnl(dnnl_binary_desc_init(&bd, dnnl_binary_div, xmd, &b->c->values[s1].md,
                                             &dst_md),
                       "binary descriptor", v, (int64_t)n);
        if (st == NULL && !odnn_pd_fast(b, &bd, po, &pd) && attempt == 1)
            st = odnn_make_pd(b, &bd, po, n, &pd);
    }
    dnnl_post_ops_destroy(po);
    if (!ok)
        return odnn_oom();
    int dst = -1, step = odnn_step_to(b, ODNN_S_BINARY, pd, (int64_t)n, p.y, &dst, &st);
    if (st != NULL)
        return st;
    odnn_arg(b, step, DNNL_ARG_SRC_0, ODNN_REF_VALUE, s0);
    odnn_arg(b, step, DNNL_ARG_SRC_1, ODNN_REF_VALUE, s1);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* The [1] s32 descriptor oneDNN reads a run-time zero point through. */
static void odnn_zp32_md(dnnl_memory_desc_t *md)
{
    dnnl_dims_t one = {1};
    dnnl_memory_desc_init_by_strides(md, 1, one, dnnl_s32, NULL);
}

/* DynamicQuantizeLinear as the module's own kernel (odnn_dql_run): X as
 * dense rows; Y, the scale and the zero point written as values (an
 * absent output gets one of its own), and the zero point also in s32, as
 * the u8 value's other layout (odnn_ensure finds it for the products). */
static pl_status *odnn_dql_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    char reason[ODNN_REASON] = "";
    if (!odnn_check_dql(v, n, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    int src;
    pl_status *st = odnn_dense_source(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t ymd, smd, zmd, z32md;
    odnn_plain_md(&ymd, x.ndim, x.dims);
    ymd.data_type = dnnl_u8;
    odnn_plain_md(&smd, 0, NULL);
    odnn_plain_md(&zmd, 0, NULL);
    zmd.data_type = dnnl_u8;
    odnn_zp32_md(&z32md);
    int vals[4];
    const dnnl_memory_desc_t *mds[4] = {&ymd, &smd, &zmd, &z32md};
    for (int k = 0; k < 4; k++) {
        vals[k] = odnn_new_value(b, k < 3 ? odnn_out(v, n, (size_t)k) : -1, ODNN_V_TEMP, mds[k]);
        if (vals[k] < 0)
            return odnn_oom();
        b->c->values[vals[k]].defined = 1;
    }
    b->c->values[vals[2]].alt = vals[3];
    struct odnn_step *s = odnn_next_step(b, ODNN_S_DQL, (int64_t)n);
    if (s == NULL)
        return odnn_oom();
    s->rows = x.elems;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    for (int k = 0; k < 4; k++)
        odnn_arg(b, step, DNNL_ARG_DST_0 + k, ODNN_REF_VALUE, vals[k]);
    return NULL;
}

/* A step of KIND for node N reading tensor X as a dense plain source and
 * writing tensor Y plain (the module's own kernels of one source: Erf,
 * Expand, Tile, Pad, GELU's tanh form, a NaN fill); *OUT for its
 * parameters, its ROWS Y's elements. */
static pl_status *odnn_unary_step(struct odnn_build *b, size_t n, int64_t x, int64_t y_t,
                                  uint32_t kind, struct odnn_step **out)
{
    struct odnn_tinfo y;
    odnn_tensor(b->v, y_t, &y);
    int src;
    pl_status *st = odnn_dense_source(b, x, (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t md;
    odnn_plain_md(&md, y.ndim, y.dims);
    int dst = odnn_new_value(b, y_t, ODNN_V_TEMP, &md);
    *out = dst >= 0 ? odnn_next_step(b, kind, (int64_t)n) : NULL;
    if (*out == NULL)
        return odnn_oom();
    (*out)->rows = y.elems;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* odnn_unary_step from node N's input 0 to its output 0. */
static pl_status *odnn_copy_step(struct odnn_build *b, size_t n, uint32_t kind,
                                 struct odnn_step **out)
{
    return odnn_unary_step(b, n, odnn_in(b->v, n, 0), odnn_out(b->v, n, 0), kind, out);
}

/* GELU's tanh form below AVX-512 as the module's own kernel
 * (odnn_gelu_tanh_run) from the pattern's x to its output, dense plain
 * values (see odnn_match_gelu_tanh). */
static pl_status *odnn_gelu_tanh_emit(struct odnn_build *b, size_t n, const struct odnn_gelu *gm)
{
    struct odnn_step *s;
    return odnn_unary_step(b, n, gm->x, gm->out, ODNN_S_GELUT, &s);
}

/* TableLookup8 as the module's own byte lookup (odnn_lut_run): the output
 * in X's layout (the table's 8-bit type), every byte of X's buffer looked
 * up, padding included. */
static pl_status *odnn_lut_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo t;
    odnn_tensor(v, odnn_in(v, n, 1), &t);
    int src, w;
    /* the source as it is (a convolution's channels-last output stays
     * so: a plain copy cost two reorders around every lookup) */
    pl_status *st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t md = b->c->values[src].md;
    if (md.data_type != dnnl_u8 && md.data_type != dnnl_s8)
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: TableLookup8 '%s': X is not 8-bit here",
                          onednn_host->graph->node_name(v, n));
    /* every byte of the buffer is X's, in any order: a blocked layout's
     * padding must stay zero for the primitives after (the table need not
     * map 0 to 0), and a view's gaps are another tensor's; such a source
     * is made plain */
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    if (dnnl_memory_desc_get_size(&md) != (size_t)x.elems) {
        st = odnn_plain(b, src, (int64_t)n, &src);
        if (st != NULL)
            return st;
        md = b->c->values[src].md;
    }
    md.data_type = t.dt == dnnl_s8 ? dnnl_s8 : dnnl_u8;
    dnnl_memory_desc_t tmd;
    dnnl_dims_t td = {256};
    dnnl_memory_desc_init_by_tag(&tmd, 1, td, dnnl_u8, dnnl_a);
    st = odnn_weight(b, &tmd, &tmd, t.cdata, (int64_t)n, &w);
    if (st != NULL)
        return st;
    int out = odnn_dst_value_md(b, odnn_out(v, n, 0), &md);
    struct odnn_step *s = out >= 0 ? odnn_next_step(b, ODNN_S_LUT, (int64_t)n) : NULL;
    if (s == NULL)
        return odnn_oom();
    s->rows = (int64_t)dnnl_memory_desc_get_size(&md);
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    odnn_arg(b, step, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, w);
    return NULL;
}

/* QLinearAdd / QLinearMul as the module's own step (odnn_qbin_run): A as
 * it is (made plain only with padding or gaps), B in A's layout, the
 * result in it too. */
static pl_status *odnn_qbin_emit(struct odnn_build *b, size_t n, const char *op)
{
    const pl_graph_view *v = b->v;
    pl_qlinear q;
    char reason[256];
    if (!odnn_check_qbin(v, n, op, &q, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: %s", reason);
    struct odnn_tinfo a;
    odnn_tensor(v, odnn_in(v, n, 0), &a);
    int sa, sb;
    pl_status *st = odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &sa);
    if (st == NULL)
        st = odnn_source_view(b, odnn_in(v, n, 3), (int64_t)n, &sb);
    if (st == NULL && dnnl_memory_desc_get_size(&b->c->values[sa].md) != (size_t)a.elems)
        st = odnn_plain(b, sa, (int64_t)n, &sa);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t md = b->c->values[sa].md;
    if (!dnnl_memory_desc_equal(&b->c->values[sb].md, &md))
        st = odnn_ensure(b, sb, &md, (int64_t)n, &sb);
    if (st != NULL)
        return st;
    int out = odnn_dst_value_md(b, odnn_out(v, n, 0), &md);
    struct odnn_step *s = out >= 0 ? odnn_next_step(b, ODNN_S_QBIN, (int64_t)n) : NULL;
    if (s == NULL)
        return odnn_oom();
    s->rows = a.elems;
    s->qbin = q;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC_0, ODNN_REF_VALUE, sa);
    odnn_arg(b, step, DNNL_ARG_SRC_1, ODNN_REF_VALUE, sb);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    return NULL;
}

/* Erf alone (not in a GELU pattern) as the module's own kernel
 * (odnn_erf_run) on the dense plain values. */
static pl_status *odnn_erf_emit(struct odnn_build *b, size_t n)
{
    struct odnn_step *s;
    return odnn_copy_step(b, n, ODNN_S_ERF, &s);
}

/* InstanceNormalization as the module's own kernel (odnn_inorm_run) on the
 * dense plain values, scale and bias weights. */
static pl_status *odnn_inorm_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    int64_t c = x.dims[1];
    int src, w[2] = {-1, -1};
    pl_status *st = odnn_dense_source(b, odnn_in(v, n, 0), (int64_t)n, &src);
    for (int k = 0; st == NULL && k < 2; k++)
        st = odnn_vector_weight(b, n, odnn_in(v, n, (size_t)k + 1), c, NULL, &w[k]);
    if (st != NULL)
        return st;
    int out = odnn_new_value(b, odnn_out(v, n, 0), ODNN_V_TEMP, &b->c->values[src].md);
    struct odnn_step *s = out >= 0 ? odnn_next_step(b, ODNN_S_INORM, (int64_t)n) : NULL;
    if (s == NULL)
        return odnn_oom();
    s->rows = x.dims[0] * c;
    s->cols = s->rows > 0 ? x.elems / s->rows : 0;
    s->chans = c;
    s->eps = (float)odnn_attr_float(v, n, "epsilon", 1e-5);
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, out);
    odnn_arg(b, step, DNNL_ARG_SCALE, ODNN_REF_WEIGHT, w[0]);
    odnn_arg(b, step, DNNL_ARG_SHIFT, ODNN_REF_WEIGHT, w[1]);
    return NULL;
}

/* Expand, or Tile (odnn_tile_dims), as the module's own broadcast copy
 * (odnn_expand_run). */
static pl_status *odnn_expand_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int64_t xd[ODNN_MAX_RANK], yd[ODNN_MAX_RANK], r[ODNN_MAX_RANK];
    int nd = y.ndim;
    if (odnn_op_is(v, (int64_t)n, "Tile")) {
        nd = odnn_tile_repeats(v, n, &x, r) ? odnn_tile_dims(&x, r, xd, yd) : 0;
        if (nd == 0)
            return odnn_error(PL_CODE_UNSUPPORTED, "onednn: Tile '%s': repeats not supported",
                              onednn_host->graph->node_name(v, n));
    } else {
        for (int d = 0; d < y.ndim; d++) {
            int xi = d - (y.ndim - x.ndim);
            xd[d] = xi >= 0 ? x.dims[xi] : 1;
            yd[d] = y.dims[d];
        }
    }
    struct odnn_step *s;
    pl_status *st = odnn_copy_step(b, n, ODNN_S_EXPAND, &s);
    if (st != NULL)
        return st;
    /* 8-bit values (odnn_q8_mover) are copied as they are, the output of
     * the source's type */
    int src = s->ref[0], dst = s->ref[1];
    dnnl_data_type_t dt = b->c->values[src].md.data_type;
    s->esize = (uint8_t)dnnl_data_type_size(dt);
    b->c->values[dst].md.data_type = dt;
    s->nd = nd;
    memcpy(s->xd, xd, (size_t)nd * sizeof *xd);
    memcpy(s->yd, yd, (size_t)nd * sizeof *yd);
    return NULL;
}

/* IsNaN N and the Where that reads it (odnn_nan_fill_of) as one step of
 * the module's own (odnn_nan_fill_run): x dense plain, NaN replaced. */
static pl_status *odnn_nan_fill_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    int64_t w, x;
    float fill;
    if (!odnn_nan_fill_of(v, &b->u, n, &w, &x, &fill) || b->done[w])
        return odnn_error(PL_CODE_UNSUPPORTED, "onednn: IsNaN '%s' is not read by one Where "
                                               "that replaces NaN in the subgraph",
                          onednn_host->graph->node_name(v, n));
    struct odnn_step *s;
    pl_status *st =
        odnn_unary_step(b, (size_t)w, x, odnn_out(v, (size_t)w, 0), ODNN_S_NANFILL, &s);
    if (st != NULL)
        return st;
    s->fill = fill;
    b->done[w] = 1;
    return NULL;
}

/* A step of KIND for node N reading its N_IN inputs dense plain and
 * writing its output plain (the module's own broadcasting loops, Where's
 * select and the binaries oneDNN has no kernel for): ND and YD the
 * output's (rank at least 1), IN_DIMS each input's dims right-aligned to
 * them, 1 where it broadcasts; the sources SRC_0.., the output DST. */
static pl_status *odnn_bcast_step(struct odnn_build *b, size_t n, uint32_t kind, int n_in,
                                  int64_t (*in_dims)[ODNN_MAX_RANK], struct odnn_step **out)
{
    static const int args[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_SRC_2};
    const pl_graph_view *v = b->v;
    struct odnn_tinfo t[3], y;
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int src[3];
    for (int k = 0; k < n_in; k++) {
        odnn_tensor(v, odnn_in(v, n, (size_t)k), &t[k]);
        pl_status *st = odnn_dense_source(b, odnn_in(v, n, (size_t)k), (int64_t)n, &src[k]);
        if (st != NULL)
            return st;
    }
    int nd = y.ndim > 0 ? y.ndim : 1;
    dnnl_dims_t yd;
    for (int d = 0; d < nd; d++)
        yd[d] = y.ndim > 0 ? y.dims[d] : 1;
    dnnl_memory_desc_t md;
    odnn_plain_md(&md, nd, yd);
    int dst = odnn_new_value(b, odnn_out(v, n, 0), ODNN_V_TEMP, &md);
    struct odnn_step *s = dst >= 0 ? odnn_next_step(b, kind, (int64_t)n) : NULL;
    if (s == NULL)
        return odnn_oom();
    s->nd = nd;
    for (int d = 0; d < nd; d++) {
        s->yd[d] = yd[d];
        for (int k = 0; k < n_in; k++) {
            int i = d - (nd - t[k].ndim);
            in_dims[k][d] = i >= 0 ? t[k].dims[i] : 1;
        }
    }
    int step = b->c->n_steps++;
    for (int k = 0; k < n_in; k++)
        odnn_arg(b, step, args[k], ODNN_REF_VALUE, src[k]);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    *out = s;
    return NULL;
}

/* Where as the module's own select (odnn_where_run): the condition as u8
 * bytes, the values and the output dense plain f32. */
static pl_status *odnn_where_emit(struct odnn_build *b, size_t n)
{
    int64_t dims[3][ODNN_MAX_RANK];
    struct odnn_step *s = NULL;
    pl_status *st = odnn_bcast_step(b, n, ODNN_S_WHERE, 3, dims, &s);
    if (st != NULL)
        return st;
    for (int k = 0; k < 3; k++) /* the condition, then, else */
        memcpy(k == 0 ? s->cd : k == 1 ? s->xd : s->ed, dims[k],
               (size_t)s->nd * sizeof dims[0][0]);
    return NULL;
}

/* Pad N of a channel-blocked or channels-last f32 source (a convolution's
 * output, in aBcd16b, aBcd8b or acdb) on its spatial axes only, in that
 * layout: the copy of a 5-D array [N, C/blk, H, W, blk] into [N, C/blk, H',
 * W', blk], or of [N, H, W, C] into [N, H', W', C]. Made
 * plain first, the source cost a reorder and handed its consumer a plain
 * layout: timm's hgnetv2_b0 pads its stem's output for a 2x2 MaxPool, which
 * oneDNN then ran over the plain layout in 0.25 ms (ONNX Runtime 0.04). A
 * fill other than 0 needs whole blocks (a block's padded channels stay 0
 * for the primitives after). 1 when it emitted the step (or failed:
 * *OUT_ST). */
static int odnn_pad_blocked(struct odnn_build *b, size_t n, const struct odnn_tinfo *x,
                            const struct odnn_tinfo *y, const int64_t *begin, float fill,
                            pl_status **out_st)
{
    static const dnnl_format_tag_t tags[3] = {dnnl_aBcd16b, dnnl_aBcd8b, dnnl_acdb};
    static const int64_t blks[3] = {16, 8, 1};
    const pl_graph_view *v = b->v;
    int vi = odnn_value_of(b, odnn_in(v, n, 0));
    if (x->ndim != 4 || y->ndim != 4 || !x->f32 || !x->known || !y->known || begin[0] != 0 ||
        begin[1] != 0 || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] || vi < 0 ||
        !b->c->values[vi].defined)
        return 0;
    dnnl_dims_t xd, yd;
    for (int i = 0; i < 4; i++)
        xd[i] = x->dims[i], yd[i] = y->dims[i];
    for (int k = 0; k < 3; k++) {
        dnnl_memory_desc_t want, ymd;
        if (dnnl_memory_desc_init_by_tag(&want, 4, xd, dnnl_f32, tags[k]) != dnnl_success ||
            !dnnl_memory_desc_equal(&want, &b->c->values[vi].md))
            continue;
        if ((x->dims[1] % blks[k] != 0 && fill != 0.0f) ||
            dnnl_memory_desc_init_by_tag(&ymd, 4, yd, dnnl_f32, tags[k]) != dnnl_success)
            return 0;
        int dst = odnn_new_value(b, odnn_out(v, n, 0), ODNN_V_TEMP, &ymd);
        struct odnn_step *s = dst >= 0 ? odnn_next_step(b, ODNN_S_PAD, (int64_t)n) : NULL;
        if (s == NULL) {
            *out_st = odnn_oom();
            return 1;
        }
        /* (channels last has no gaps: its readers take it as it is) */
        b->c->values[dst].dense = blks[k] == 1;
        int64_t cb = (x->dims[1] + blks[k] - 1) / blks[k];
        int64_t xs[5] = {x->dims[0], cb, x->dims[2], x->dims[3], blks[k]};
        int64_t ys[5] = {y->dims[0], cb, y->dims[2], y->dims[3], blks[k]};
        int64_t at[5] = {0, 0, begin[2], begin[3], 0};
        if (blks[k] == 1) { /* channels last: [N, H, W, C] */
            int64_t xl[5] = {x->dims[0], x->dims[2], x->dims[3], x->dims[1], 1};
            int64_t yl[5] = {y->dims[0], y->dims[2], y->dims[3], y->dims[1], 1};
            int64_t al[5] = {0, begin[2], begin[3], 0, 0};
            memcpy(xs, xl, sizeof xs);
            memcpy(ys, yl, sizeof ys);
            memcpy(at, al, sizeof at);
        }
        s->nd = 5;
        memcpy(s->xd, xs, sizeof xs);
        memcpy(s->yd, ys, sizeof ys);
        memcpy(s->begin, at, sizeof at);
        s->fill = fill;
        int step = b->c->n_steps++;
        odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, vi);
        odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
        *out_st = NULL;
        return 1;
    }
    return 0;
}

/* Pad as the module's own copy (odnn_pad_run). */
static pl_status *odnn_pad_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, y;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    odnn_tensor(v, odnn_out(v, n, 0), &y);
    int64_t begin[ODNN_MAX_RANK];
    float fill;
    char reason[ODNN_REASON] = "";
    if (!odnn_pad_params(v, n, &x, begin, &fill, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    pl_status *blocked_st = NULL;
    if (odnn_pad_blocked(b, n, &x, &y, begin, fill, &blocked_st))
        return blocked_st;
    struct odnn_step *s;
    pl_status *st = odnn_copy_step(b, n, ODNN_S_PAD, &s);
    if (st != NULL)
        return st;
    s->nd = x.ndim;
    memcpy(s->xd, x.dims, (size_t)x.ndim * sizeof *x.dims);
    memcpy(s->yd, y.dims, (size_t)y.ndim * sizeof *y.dims);
    memcpy(s->begin, begin, (size_t)x.ndim * sizeof *begin);
    s->fill = fill;
    return NULL;
}

/* Whether T (of TI) is one value or a row of N along the last axis. */
static int odnn_row_of(const struct odnn_tinfo *ti, int64_t n)
{
    if (!ti->known || !ti->f32)
        return 0;
    if (ti->elems == 1)
        return 1;
    for (int d = 0; d + 1 < ti->ndim; d++)
        if (ti->dims[d] != 1)
            return 0;
    return ti->ndim >= 1 && ti->dims[ti->ndim - 1] == n && ti->elems == n;
}

/* AMX int8 for products of at least a million multiply-adds (2 threads,
 * brgemm with the chain's post-ops: 16x512x512 8.4 us on AMX against 13.3
 * on VNNI, 128x256x1024 52 against 89; 32x128x128 5.1 against 4.2). */
int onednn_qmm_amx(double macs)
{
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    return (isa & (unsigned)dnnl_cpu_isa_avx512_core_amx) ==
               (unsigned)dnnl_cpu_isa_avx512_core_amx &&
           macs >= 1e6;
}

/* MatMulInteger N as a oneDNN int8 matmul of A's rows (leading dims
 * merged) by the constant weights, with the chain that reads its result
 * as post-ops: the Cast to f32, the Mul by the scales, a bias, then what
 * odnn_follow takes. Alone it writes i32. */
static pl_status *odnn_qmm_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    const pl_graph_api *g = onednn_host->graph;
    struct odnn_qmm q;
    char reason[ODNN_REASON] = "";
    if (!odnn_qmm_of(v, n, &q, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason, g->node_name(v, n));
    struct odnn_tinfo a, w, y;
    odnn_tensor(v, q.a, &a);
    odnn_tensor(v, q.w, &w);
    odnn_tensor(v, q.y, &y);
    int r = y.ndim;
    int collapse = q.rows != a.dims[r - 2]; /* leading dims other than 1 */
    dnnl_dims_t ad, wd, yd;
    for (int i = 0; i < r; i++)
        ad[i] = wd[i] = yd[i] = 1;
    ad[r - 2] = yd[r - 2] = q.rows;
    ad[r - 1] = wd[r - 2] = q.k;
    wd[r - 1] = yd[r - 1] = q.n;
    dnnl_dims_t sd, bd; /* the scales' and the bias's dims: [1, .., 1 or N], [1, .., N] */
    for (int i = 0; i < r; i++)
        sd[i] = bd[i] = 1;
    bd[r - 1] = q.n;
    dnnl_memory_desc_t bmd;
    dnnl_memory_desc_init_by_strides(&bmd, r, bd, dnnl_f32, NULL);

    struct odnn_fuse f = {.bias = -1, .residual = -1, .out = q.y, .no_residual = collapse,
                          .linear_only = !onednn_has_avx512(), .share_qdq = 1};
    if (dnnl_post_ops_create(&f.po) != dnnl_success)
        return odnn_oom();
    f.fused[f.n_fused++] = n;
    dnnl_data_type_t ydt = dnnl_s32;
    int64_t scale_t = -1, bias_t = -1;
    int64_t j = odnn_sole_reader(&b->u, q.y);
    if (j >= 0 && !b->done[j] && odnn_op_is(v, j, "Cast") && odnn_attr_int(v, (size_t)j, "to", 0) == 1) {
        ydt = dnnl_f32;
        f.fused[f.n_fused++] = (size_t)j;
        f.out = odnn_out(v, (size_t)j, 0);
        int64_t mj = odnn_sole_reader(&b->u, f.out);
        struct odnn_tinfo si, mo;
        int64_t st_ = mj >= 0 && g->node_input_count(v, (size_t)mj) == 2
                          ? (odnn_in(v, (size_t)mj, 0) == f.out ? odnn_in(v, (size_t)mj, 1)
                                                                : odnn_in(v, (size_t)mj, 0))
                          : -1;
        if (mj >= 0 && !b->done[mj] && odnn_op_is(v, mj, "Mul") && st_ >= 0 && st_ != f.out &&
            odnn_tensor(v, st_, &si) && odnn_row_of(&si, q.n) && odnn_is_defined(b, st_) &&
            odnn_tensor(v, odnn_out(v, (size_t)mj, 0), &mo) && mo.known && mo.elems == y.elems) {
            sd[r - 1] = si.elems;
            dnnl_memory_desc_t smd;
            dnnl_memory_desc_init_by_strides(&smd, r, sd, dnnl_f32, NULL);
            if (dnnl_post_ops_append_binary(f.po, dnnl_binary_mul, &smd) == dnnl_success) {
                f.n_post++;
                scale_t = st_;
                f.fused[f.n_fused++] = (size_t)mj;
                f.out = odnn_out(v, (size_t)mj, 0);
                /* a bias of N constants after it */
                int64_t aj = odnn_sole_reader(&b->u, f.out);
                int64_t bt_ = aj >= 0 && g->node_input_count(v, (size_t)aj) == 2
                                  ? (odnn_in(v, (size_t)aj, 0) == f.out ? odnn_in(v, (size_t)aj, 1)
                                                                        : odnn_in(v, (size_t)aj, 0))
                                  : -1;
                struct odnn_tinfo bi, ao;
                if (aj >= 0 && !b->done[aj] && odnn_op_is(v, aj, "Add") && bt_ >= 0 &&
                    bt_ != f.out && odnn_tensor(v, bt_, &bi) && bi.cdata != NULL &&
                    odnn_row_of(&bi, q.n) && bi.elems == q.n &&
                    bi.cbytes == (size_t)q.n * sizeof(float) &&
                    odnn_tensor(v, odnn_out(v, (size_t)aj, 0), &ao) && ao.known &&
                    ao.elems == y.elems &&
                    dnnl_post_ops_append_binary(f.po, dnnl_binary_add, &bmd) == dnnl_success) {
                    f.n_post++;
                    bias_t = bt_;
                    f.fused[f.n_fused++] = (size_t)aj;
                    f.out = odnn_out(v, (size_t)aj, 0);
                }
                odnn_follow(b, &f, r - 1, 1);
            }
        }
    }
    dnnl_memory_desc_t a_md, w_md, w_plain, y_md;
    dnnl_memory_desc_init_by_strides(&a_md, r, ad, a.dt, NULL);
    dnnl_memory_desc_init_by_tag(&w_md, r, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&w_plain, r, wd, dnnl_s8, NULL);
    dnnl_memory_desc_init_by_strides(&y_md, r, yd, ydt, NULL);
    dnnl_matmul_desc_t md;
    pl_status *st = odnn_dnnl(dnnl_matmul_desc_init(&md, &a_md, &w_md, NULL, &y_md),
                              "int8 matmul descriptor", v, (int64_t)n);
    dnnl_primitive_attr_t attr = NULL;
    if (st == NULL)
        st = odnn_attr(&attr, f.po);
    dnnl_post_ops_destroy(f.po);
    /* A constant zero point is read at run time too (a constant operand):
     * the primitive is then the same for every product of one shape, which
     * oneDNN's primitive cache makes once (odnn_append_qdq). */
    if (st == NULL && !(q.azp_const && q.azp_val == 0)) {
        int32_t zp = DNNL_RUNTIME_S32_VAL;
        if (dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &zp) != dnnl_success)
            st = odnn_error(PL_CODE_INTERNAL, "onednn: MatMulInteger '%s': cannot set its zero "
                                              "point",
                            g->node_name(v, n));
    }
    dnnl_primitive_desc_t pd = NULL;
    double macs = (double)q.rows * (double)q.k * (double)q.n;
    if (st == NULL)
        st = odnn_pd_pick(b, &md, attr, !onednn_qmm_amx(macs), 0, n, &pd);
    if (attr != NULL)
        dnnl_primitive_attr_destroy(attr);
    const char *impl = NULL;
    if (st == NULL &&
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
        odnn_impl_is_ref(impl))
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "node '%s' (MatMulInteger): oneDNN's reference implementation "
                                 "(%s)",
                                 g->node_name(v, n), impl);
    int src = -1, wi = -1, zv = -1, sv = -1, bw = -1, dst = -1;
    if (st == NULL)
        st = odnn_source_view(b, q.a, (int64_t)n, &src);
    if (st == NULL)
        st = odnn_view_as(b, src, &a_md, (int64_t)n, &src);
    if (st == NULL) {
        /* Weights with a compensation (AMX's u8 x s8 with a zero point;
         * odnn_zp_weights, or oneDNN's generic reorder for a layout it does
         * not make: 8 ms a matrix of GPT-2's) are laid out in batches over
         * the pool, as Winograd weights are (odnn_pending_flush). */
        const dnnl_memory_desc_t *wmd = odnn_pd_md(pd, DNNL_ARG_WEIGHTS);
        b->defer_tensor = wmd->extra.flags != 0 ? q.w : -1;
        st = odnn_weight(b, wmd, &w_plain, w.cdata, (int64_t)n, &wi);
        b->defer_tensor = -1;
    }
    int zw = -1; /* a constant zero point's operand */
    if (st == NULL && !q.azp_const) {
        dnnl_memory_desc_t zmd;
        odnn_zp32_md(&zmd);
        st = odnn_source_view(b, q.azp, (int64_t)n, &zv);
        if (st == NULL)
            st = odnn_plain(b, zv, (int64_t)n, &zv);
        if (st == NULL)
            st = odnn_ensure(b, zv, &zmd, (int64_t)n, &zv);
    } else if (st == NULL && q.azp_val != 0) {
        dnnl_memory_desc_t zmd;
        odnn_zp32_md(&zmd);
        int32_t zp = q.azp_val;
        st = odnn_weight(b, &zmd, &zmd, &zp, (int64_t)n, &zw);
    }
    if (st == NULL && scale_t >= 0) {
        dnnl_memory_desc_t smd;
        dnnl_memory_desc_init_by_strides(&smd, r, sd, dnnl_f32, NULL);
        st = odnn_source_view(b, scale_t, (int64_t)n, &sv);
        if (st == NULL)
            st = odnn_view_as(b, sv, &smd, (int64_t)n, &sv);
    }
    if (st == NULL && bias_t >= 0) {
        struct odnn_tinfo bi;
        odnn_tensor(v, bias_t, &bi);
        st = odnn_weight(b, &bmd, &bmd, bi.cdata, (int64_t)n, &bw);
    }
    if (st == NULL)
        st = odnn_emit_fused(b, &f, pd, &dst);
    int s = -1;
    if (st == NULL)
        s = odnn_add_step(b, ODNN_S_MATMUL, pd, (int64_t)n, &st);
    if (st == NULL && collapse)
        st = odnn_merged_rows(b, dst, f.out, n);
    if (pd != NULL)
        dnnl_primitive_desc_destroy(pd);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_WEIGHTS, ODNN_REF_WEIGHT, wi);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    if (zv >= 0)
        odnn_arg(b, s, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, ODNN_REF_VALUE, zv);
    if (zw >= 0)
        odnn_arg(b, s, DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, ODNN_REF_WEIGHT, zw);
    if (sv >= 0)
        odnn_arg(b, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, ODNN_REF_VALUE, sv);
    if (bw >= 0)
        odnn_arg(b, s, DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, ODNN_REF_WEIGHT, bw);
    return odnn_fuse_args(b, s, &f, (int64_t)n);
}

/* A Cast of an i32 result to f32 alone: a reorder in the same layout. */
static pl_status *odnn_cast_emit(struct odnn_build *b, size_t n)
{
    int src;
    pl_status *st = odnn_dense_source(b, odnn_in(b->v, n, 0), (int64_t)n, &src);
    if (st != NULL)
        return st;
    dnnl_memory_desc_t dst_md = b->c->values[src].md;
    dst_md.data_type = dnnl_f32;
    dnnl_primitive_attr_t attr;
    if ((st = odnn_attr(&attr, NULL)) != NULL)
        return st;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t ds = dnnl_reorder_primitive_desc_create(&pd, &b->c->values[src].md,
                                                          b->ctx->engine, &dst_md,
                                                          b->ctx->engine, attr);
    dnnl_primitive_attr_destroy(attr);
    if (ds != dnnl_success)
        return odnn_dnnl(ds, "Cast reorder", b->v, (int64_t)n);
    int dst = -1, s = odnn_step_to(b, ODNN_S_REORDER, pd, (int64_t)n, odnn_out(b->v, n, 0), &dst,
                                   &st);
    if (st != NULL)
        return st;
    odnn_arg(b, s, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, s, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    return NULL;
}

/* Tanh as the module's own kernel (odnn_tanh_run) over the whole buffer of
 * SRC, an f32 value without gaps (a channel block's padding is zero, and
 * stays so), the result in SRC's layout: below AVX-512 oneDNN 2.6's tanh
 * reads its tables with gathers (265 us for 64K values on one core, 56 on
 * this kernel). 1 when it emitted the step (or failed: *OUT_ST). */
static int odnn_tanh_own(struct odnn_build *b, size_t n, int src, pl_status **out_st)
{
    *out_st = NULL;
    const dnnl_memory_desc_t *md = &b->c->values[src].md;
    if (!b->u.own || md->data_type != dnnl_f32 || md->format_kind != dnnl_blocked ||
        md->offset0 != 0)
        return 0;
    size_t padded = 1;
    for (int d = 0; d < md->ndims; d++)
        padded *= (size_t)md->padded_dims[d];
    if (dnnl_memory_desc_get_size(md) != padded * sizeof(float))
        return 0; /* a view with gaps */
    int dst = odnn_new_value(b, odnn_out(b->v, n, 0), ODNN_V_TEMP, md);
    struct odnn_step *s = dst >= 0 ? odnn_next_step(b, ODNN_S_TANH, (int64_t)n) : NULL;
    if (s == NULL) {
        *out_st = odnn_oom();
        return 1;
    }
    s->rows = (int64_t)padded;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC, ODNN_REF_VALUE, src);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG, "node '%s': the module's own Tanh",
                             onednn_host->graph->node_name(b->v, n));
    return 1;
}

/* ---- fused attention ------------------------------------------------------
 *
 * MatMul(Q, K^T) -> [Mul or Div by a scalar constant] -> [Add a mask] ->
 * Softmax over the keys -> MatMul(., V), every intermediate read once
 * inside the view, as one step of the module's own kernel
 * (onednn_attn.c, AVX-512). Matched at the first product; its nodes wait
 * (done 2: odnn_dead_after still counts them as readers, so nothing
 * writes over Q or K in place meanwhile) and the step is emitted at the
 * second product, when V and the mask are written. A constant mask is
 * copied into a weight at the match, before the core may release it. */
struct odnn_attn_pat {
    size_t first, last; /* the two products */
    /* the first product, the scale, the bias, the Reshapes, the Where,
     * the Add, the Max, the Softmax, a safe softmax's IsNaN and Where, a
     * Reshape */
    size_t nodes[12];
    int n_nodes;
    int64_t q, k, v, mask, cond, bias, out;
    /* the scores as the masks see them (the first product's output, or
     * its Reshape's) and as the Softmax sees them */
    int64_t mask_space, soft_space;
    /* a constant mask's, condition's or bias's weight, else -1 */
    int scale_op, mask_weight, cond_weight, bias_weight, keep, has_floor, safe;
    float scale, fill, floor;
};

/* Whether tensor T (M) broadcasts into dims Y of rank R. */
static int odnn_attn_broadcasts(const struct odnn_tinfo *m, const struct odnn_tinfo *y)
{
    if (!m->known || m->ndim > y->ndim)
        return 0;
    for (int d = 0; d < m->ndim; d++) {
        int64_t yd = y->dims[d + y->ndim - m->ndim];
        if (m->dims[d] != 1 && m->dims[d] != yd)
            return 0;
    }
    return 1;
}

/* Whether tensor T is f32 with every dim known and not a constant. */
static int odnn_attn_activation(const pl_graph_view *v, int64_t t, struct odnn_tinfo *ti)
{
    return odnn_tensor(v, t, ti) && ti->known && ti->f32 && ti->cdata == NULL && ti->ndim >= 2;
}

/* Whether Reshape node J of the scores X (known, rank >= 2) keeps their last
 * two dims and only regroups the others (BART's, CLIP's and OPT's
 * [B * H, S, N] <-> [B, H, S, N] around the mask), its output in *OUT. */
static int odnn_attn_regroup(const pl_graph_view *v, int64_t j, const struct odnn_tinfo *x_in,
                             struct odnn_tinfo *out)
{
    struct odnn_tinfo xc = *x_in, *x = &xc; /* OUT may be X_IN */
    if (!odnn_op_is(v, j, "Reshape") || !odnn_tensor(v, odnn_out(v, (size_t)j, 0), out) ||
        !out->known || out->ndim < 2 || out->ndim - 2 > ODNN_ATTN_MAX_BATCH ||
        out->dims[out->ndim - 1] != x->dims[x->ndim - 1] ||
        out->dims[out->ndim - 2] != x->dims[x->ndim - 2])
        return 0;
    return out->elems == x->elems;
}

/* Whether node N starts a fused attention; if so its pattern is kept and
 * its nodes wait (*OUT_ST: an error copying a constant mask). The scores
 * may pass a scale and a Reshape that regroups their batch dims (either
 * order), then a Where, an Add and a Max by a scalar (OPT's floor), then a
 * Reshape, before the Softmax. */
static int odnn_attn_begin(struct odnn_build *b, size_t n, pl_status **out_st)
{
    const pl_graph_view *v = b->v;
    *out_st = NULL;
    if (!onednn_has_avx512() || !odnn_op_is(v, (int64_t)n, "MatMul"))
        return 0;
    struct odnn_attn_pat p = {.first = n, .mask = -1, .cond = -1, .bias = -1, .mask_weight = -1,
                              .cond_weight = -1, .bias_weight = -1};
    struct odnn_tinfo q, k, y, vt, o, m, cd, sp, bt;
    p.q = odnn_in(v, n, 0), p.k = odnn_in(v, n, 1);
    if (!odnn_attn_activation(v, p.q, &q) || !odnn_attn_activation(v, p.k, &k) ||
        !odnn_tensor(v, odnn_out(v, n, 0), &y) || !y.known || y.ndim - 2 > ODNN_ATTN_MAX_BATCH ||
        q.ndim > y.ndim || k.ndim > y.ndim || y.elems == 0 || q.elems == 0)
        return 0; /* empty scores or heads of width 0: nothing to fuse */
    p.nodes[p.n_nodes++] = n;
    int64_t t = odnn_out(v, n, 0), j = odnn_sole_reader(&b->u, t);
    sp = y; /* the scores' dims where they are now */
    p.mask_space = t;
    int scaled = 0, regrouped = 0;
    for (;;) {
        float c;
        int first;
        if (!scaled && j >= 0 && (odnn_op_is(v, j, "Mul") || odnn_op_is(v, j, "Div")) &&
            odnn_binary_scalar(v, (size_t)j, &c, &first) == t &&
            !(first && odnn_op_is(v, j, "Div"))) {
            p.scale_op = odnn_op_is(v, j, "Mul") ? ODNN_ATTN_MUL : ODNN_ATTN_DIV;
            p.scale = c;
            scaled = 1;
        } else if (!regrouped && j >= 0 && odnn_attn_regroup(v, j, &sp, &sp)) {
            regrouped = 1;
        } else if (!regrouped && p.bias < 0 && j >= 0 && odnn_op_is(v, j, "Add") &&
                   onednn_host->graph->node_input_count(v, (size_t)j) == 2) {
            /* a bias before the Reshape (Swin's relative positions before
             * its shifted windows' mask, BLOOM's ALiBi before its causal
             * Where); an Add not followed by one is the mask */
            int64_t a0 = odnn_in(v, (size_t)j, 0), a1 = odnn_in(v, (size_t)j, 1);
            int64_t after = odnn_sole_reader(&b->u, odnn_out(v, (size_t)j, 0));
            struct odnn_tinfo ao, rg;
            p.bias = a0 == t ? a1 : a0;
            if ((a0 == t) == (a1 == t) || !odnn_tensor(v, p.bias, &bt) || !bt.f32 ||
                !odnn_attn_broadcasts(&bt, &sp) ||
                !odnn_tensor(v, odnn_out(v, (size_t)j, 0), &ao) || ao.ndim != sp.ndim ||
                after < 0 || !odnn_attn_regroup(v, after, &sp, &rg)) {
                p.bias = -1;
                break;
            }
        } else {
            break;
        }
        p.nodes[p.n_nodes++] = (size_t)j;
        t = odnn_out(v, (size_t)j, 0);
        j = odnn_sole_reader(&b->u, t);
    }
    p.mask_space = t;
    struct odnn_tinfo ms = sp; /* the masks' space */
    if (j >= 0 && odnn_op_is(v, j, "Where") &&
        onednn_host->graph->node_input_count(v, (size_t)j) == 3) {
        /* Where(c, scores, fill) or Where(c, fill, scores): a causal or
         * padding mask as GPT-2 and DistilBERT write it */
        int64_t a1 = odnn_in(v, (size_t)j, 1), a2 = odnn_in(v, (size_t)j, 2);
        struct odnn_tinfo wo;
        p.cond = odnn_in(v, (size_t)j, 0);
        p.keep = a1 == t;
        if ((a1 == t) == (a2 == t) || !odnn_scalar(v, p.keep ? a2 : a1, &p.fill) ||
            !odnn_tensor(v, p.cond, &cd) || !cd.boolean || !odnn_attn_broadcasts(&cd, &ms) ||
            !odnn_tensor(v, odnn_out(v, (size_t)j, 0), &wo) || wo.elems != ms.elems ||
            wo.ndim != ms.ndim)
            return 0;
        p.nodes[p.n_nodes++] = (size_t)j;
        t = odnn_out(v, (size_t)j, 0);
        j = odnn_sole_reader(&b->u, t);
    }
    if (j >= 0 && odnn_op_is(v, j, "Add") && onednn_host->graph->node_input_count(v, (size_t)j) == 2) {
        int64_t a0 = odnn_in(v, (size_t)j, 0), a1 = odnn_in(v, (size_t)j, 1);
        struct odnn_tinfo ao;
        p.mask = a0 == t ? a1 : a0;
        if ((a0 == t) == (a1 == t) || !odnn_tensor(v, p.mask, &m) || !m.f32 ||
            !odnn_attn_broadcasts(&m, &ms) || !odnn_tensor(v, odnn_out(v, (size_t)j, 0), &ao) ||
            ao.ndim != ms.ndim)
            return 0;
        p.nodes[p.n_nodes++] = (size_t)j;
        t = odnn_out(v, (size_t)j, 0);
        j = odnn_sole_reader(&b->u, t);
    }
    {
        float c;
        int first;
        if (j >= 0 && odnn_op_is(v, j, "Max") &&
            onednn_host->graph->node_input_count(v, (size_t)j) == 2 &&
            odnn_binary_scalar(v, (size_t)j, &c, &first) == t) {
            p.has_floor = 1, p.floor = c;
            p.nodes[p.n_nodes++] = (size_t)j;
            t = odnn_out(v, (size_t)j, 0);
            j = odnn_sole_reader(&b->u, t);
        }
    }
    if (j >= 0 && odnn_attn_regroup(v, j, &sp, &sp)) {
        p.nodes[p.n_nodes++] = (size_t)j;
        t = odnn_out(v, (size_t)j, 0);
        j = odnn_sole_reader(&b->u, t);
    }
    p.soft_space = t;
    int r = sp.ndim;
    struct odnn_tinfo sm;
    if (j < 0 || !odnn_op_is(v, j, "Softmax") || !odnn_tensor(v, t, &sm) || sm.ndim != r ||
        sm.elems != y.elems)
        return 0;
    int64_t axis = odnn_attr_int(v, (size_t)j,
                                 "axis", onednn_host->graph->node_opset(v, (size_t)j) >= 13 ? -1 : 1);
    if (axis != -1 && axis != r - 1)
        return 0;
    p.nodes[p.n_nodes++] = (size_t)j;
    t = odnn_out(v, (size_t)j, 0);
    if ((size_t)t < b->u.n_tensors && b->u.count[t] == 2 && !b->u.escapes[t]) {
        /* torch 2's safe softmax, Where(IsNaN(p), 0, p): rows the Softmax
         * makes NaN give 0 */
        int64_t w = -1, x = -1;
        float fill = 1;
        for (uint32_t k = 0; k < 2 && w < 0; k++) {
            size_t r = b->u.reader[b->u.reader_at[t] + k];
            if (!(odnn_nan_fill_of(v, &b->u, r, &w, &x, &fill) && x == t && fill == 0.0f))
                w = -1;
            else
                p.nodes[p.n_nodes++] = r;
        }
        if (w >= 0) {
            p.nodes[p.n_nodes++] = (size_t)w;
            p.safe = 1;
            t = odnn_out(v, (size_t)w, 0);
        }
    }
    j = odnn_sole_reader(&b->u, t);
    if (j >= 0 && odnn_attn_regroup(v, j, &sp, &sp)) { /* BLOOM's, after the Softmax */
        p.nodes[p.n_nodes++] = (size_t)j;
        t = odnn_out(v, (size_t)j, 0);
        j = odnn_sole_reader(&b->u, t);
        r = sp.ndim;
    }
    if (j < 0 || !odnn_op_is(v, j, "MatMul") || odnn_in(v, (size_t)j, 0) != t)
        return 0;
    p.last = (size_t)j;
    p.v = odnn_in(v, (size_t)j, 1);
    p.out = odnn_out(v, (size_t)j, 0);
    if (!odnn_attn_activation(v, p.v, &vt) || vt.ndim > r || !odnn_tensor(v, p.out, &o) ||
        !o.known || o.ndim != r || vt.dims[vt.ndim - 2] != sp.dims[r - 1] || o.elems == 0)
        return 0;
    for (int d = 0; d < r - 2; d++) { /* V broadcasts into the scores' batch, not beyond */
        int iv = d - (r - vt.ndim);
        if (o.dims[d] != sp.dims[d] || (iv >= 0 && vt.dims[iv] != 1 && vt.dims[iv] != sp.dims[d]))
            return 0;
    }
    if (p.mask >= 0 && m.cdata != NULL) {
        dnnl_memory_desc_t md;
        odnn_plain_md(&md, m.ndim, m.dims);
        *out_st = odnn_weight(b, &md, &md, m.cdata, (int64_t)p.first, &p.mask_weight);
        if (*out_st != NULL)
            return 0;
    }
    if (p.bias >= 0 && bt.cdata != NULL) {
        dnnl_memory_desc_t md;
        odnn_plain_md(&md, bt.ndim, bt.dims);
        *out_st = odnn_weight(b, &md, &md, bt.cdata, (int64_t)p.first, &p.bias_weight);
        if (*out_st != NULL)
            return 0;
    }
    if (p.cond >= 0 && cd.cdata != NULL) { /* bool bytes as u8 */
        dnnl_memory_desc_t md;
        odnn_plain_md(&md, cd.ndim, cd.dims);
        dnnl_memory_desc_init_by_strides(&md, md.ndims, md.dims, dnnl_u8, NULL);
        *out_st = odnn_weight(b, &md, &md, cd.cdata, (int64_t)p.first, &p.cond_weight);
        if (*out_st != NULL)
            return 0;
    }
    struct odnn_attn_pat *grown = odnn_grow(b->ctx, b->attn, b->n_attn, &b->cap_attn, sizeof *b->attn);
    if (grown == NULL) {
        *out_st = odnn_oom();
        return 0;
    }
    b->attn = grown;
    b->attn[b->n_attn++] = p;
    for (int i = 0; i < p.n_nodes; i++)
        b->done[p.nodes[i]] = 2;
    return 1;
}

/* Operand T of pattern node NODE as a plain value of type DT and rank R
 * (*OUT_VI), its strides in *OUT_VIEW. */
static pl_status *odnn_attn_operand(struct odnn_build *b, int64_t t, int r, size_t node,
                                    dnnl_data_type_t dt, int *out_vi,
                                    dnnl_memory_desc_t *out_view)
{
    int vi;
    pl_status *st = odnn_source_view(b, t, (int64_t)node, &vi);
    if (st == NULL && (!odnn_is_plain(&b->c->values[vi].md) ||
                       b->c->values[vi].md.data_type != dt)) {
        dnnl_memory_desc_t dense;
        dnnl_memory_desc_init_by_strides(&dense, b->c->values[vi].md.ndims,
                                         b->c->values[vi].md.dims, dt, NULL);
        st = odnn_ensure(b, vi, &dense, (int64_t)node, &vi);
    }
    if (st == NULL && !odnn_rank_view(&b->c->values[vi].md, r, out_view))
        st = odnn_error(PL_CODE_INTERNAL, "onednn: attention at '%s': no strided view of '%s'",
                        onednn_host->graph->node_name(b->v, node),
                        onednn_host->graph->tensor_name(b->v, t));
    if (st == NULL && b->c->values[vi].md.ndims != r && (vi = odnn_alias(b, vi, out_view, -1, 0)) < 0)
        st = odnn_oom();
    *out_vi = vi;
    return st;
}

/* The strides in the batch dims TO (NT of them) of an operand whose batch
 * dims FROM (NF) have strides FS (0 where it broadcasts), into TS: dims
 * regrouped as a Reshape does, each group of FROM one strided run (or all
 * broadcast). 0 when it is not. */
static int odnn_attn_restride(int nf, const int64_t *from, const int64_t *fs, int nt,
                              const int64_t *to, int64_t *ts)
{
    int i = 0, j = 0;
    while (i < nf || j < nt) {
        int i0 = i, j0 = j;
        int64_t pf = 1, pt = 1;
        if (i < nf)
            pf *= from[i++];
        if (j < nt)
            pt *= to[j++];
        while (pf != pt) {
            if (pf < pt && i < nf)
                pf *= from[i++];
            else if (pt < pf && j < nt)
                pt *= to[j++];
            else
                return 0;
        }
        while (i < nf && from[i] == 1) /* trailing unit dims join the group */
            i++;
        while (j < nt && to[j] == 1)
            ts[j++] = 0;
        /* FROM[i0..i) must be one run: each dim's stride its inner
         * neighbour's times that one's size (unit dims skipped) */
        int64_t inner = -1, span = 1;
        for (int k = i - 1; k >= i0; k--) {
            if (from[k] == 1)
                continue;
            if (inner < 0)
                inner = fs[k];
            else if (fs[k] != inner * span)
                return 0;
            span *= from[k];
        }
        if (inner < 0)
            inner = 0;
        int64_t st = inner;
        for (int k = j - 1; k >= j0; k--) {
            ts[k] = to[k] == 1 ? 0 : st;
            st *= to[k];
        }
    }
    return 1;
}

/* Pattern P as one ODNN_S_ATTN step, at its second product. The kernel's
 * batch dims are the masks' (after a Reshape of the scores); Q and K
 * (the first product's dims) and V and the output (the second's) are
 * restrided into them. */
static pl_status *odnn_attn_emit(struct odnn_build *b, const struct odnn_attn_pat *p)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo y, o, m, cd, ms, bt;
    odnn_tensor(v, odnn_out(v, p->first, 0), &y);
    odnn_tensor(v, p->out, &o);
    odnn_tensor(v, p->mask_space, &ms);
    int ry = y.ndim, ro = o.ndim, rm = ms.ndim;
    struct odnn_attn a;
    memset(&a, 0, sizeof a);
    a.s = y.dims[ry - 2], a.n = y.dims[ry - 1], a.dv = o.dims[ro - 1];
    a.nb = rm - 2;
    a.scale_op = p->scale_op, a.scale = p->scale, a.has_mask = p->mask >= 0;
    a.has_select = p->cond >= 0, a.keep = p->keep, a.fill = p->fill;
    a.has_floor = p->has_floor, a.floor = p->floor, a.has_bias = p->bias >= 0;
    a.safe = p->safe;
    /* Q, K, V, the mask, (O), the condition, the bias */
    int vi[7] = {-1, -1, -1, -1, -1, -1, -1};
    dnnl_memory_desc_t view[7];
    const int64_t ts[3] = {p->q, p->k, p->v};
    const int rank[3] = {ry, ry, ro};
    pl_status *st = NULL;
    for (int i = 0; i < 3 && st == NULL; i++)
        st = odnn_attn_operand(b, ts[i], rank[i], p->last, dnnl_f32, &vi[i], &view[i]);
    for (int i = ODNN_ATTN_M; i <= ODNN_ATTN_C && st == NULL; i += ODNN_ATTN_C - ODNN_ATTN_M) {
        int64_t t = i == ODNN_ATTN_M ? p->mask : p->cond;
        int w = i == ODNN_ATTN_M ? p->mask_weight : p->cond_weight;
        dnnl_data_type_t dt = i == ODNN_ATTN_M ? dnnl_f32 : dnnl_u8;
        if (t < 0)
            continue;
        odnn_tensor(v, t, i == ODNN_ATTN_M ? &m : &cd);
        if (w >= 0) {
            const struct odnn_tinfo *ti = i == ODNN_ATTN_M ? &m : &cd;
            dnnl_memory_desc_t md;
            odnn_plain_md(&md, ti->ndim, ti->dims);
            dnnl_memory_desc_init_by_strides(&md, md.ndims, md.dims, dt, NULL);
            if (!odnn_rank_view(&md, rm, &view[i]))
                st = odnn_oom();
        } else {
            st = odnn_attn_operand(b, t, rm, p->last, dt, &vi[i], &view[i]);
        }
    }
    if (st == NULL && p->bias >= 0) { /* in the first product's dims */
        odnn_tensor(v, p->bias, &bt);
        if (p->bias_weight >= 0) {
            dnnl_memory_desc_t md;
            odnn_plain_md(&md, bt.ndim, bt.dims);
            if (!odnn_rank_view(&md, ry, &view[ODNN_ATTN_B]))
                st = odnn_oom();
        } else {
            st = odnn_attn_operand(b, p->bias, ry, p->last, dnnl_f32, &vi[ODNN_ATTN_B],
                                   &view[ODNN_ATTN_B]);
        }
    }
    if (st != NULL)
        return st;
    const char *name = onednn_host->graph->node_name(v, p->last);
    const dnnl_dim_t *qs = view[0].format_desc.blocking.strides,
                     *ks = view[1].format_desc.blocking.strides,
                     *vs = view[2].format_desc.blocking.strides;
    a.d = view[0].dims[ry - 1];
    a.q_rs = qs[ry - 2], a.q_cs = qs[ry - 1];
    a.k_ds = ks[ry - 2], a.k_ns = ks[ry - 1];
    a.v_ns = vs[ro - 2], a.v_cs = vs[ro - 1];
    if (view[0].dims[ry - 2] != a.s || view[1].dims[ry - 2] != a.d ||
        view[1].dims[ry - 1] != a.n || view[2].dims[ro - 2] != a.n ||
        view[2].dims[ro - 1] != a.dv)
        return odnn_error(PL_CODE_INTERNAL, "onednn: attention at '%s': operand shapes disagree",
                          name);
    if (a.has_mask) {
        const dnnl_dim_t *mst = view[ODNN_ATTN_M].format_desc.blocking.strides;
        a.m_rs = view[ODNN_ATTN_M].dims[rm - 2] == 1 ? 0 : mst[rm - 2];
        a.m_cs = view[ODNN_ATTN_M].dims[rm - 1] == 1 ? 0 : mst[rm - 1];
    }
    if (a.has_select) {
        const dnnl_dim_t *cst = view[ODNN_ATTN_C].format_desc.blocking.strides;
        a.c_rs = view[ODNN_ATTN_C].dims[rm - 2] == 1 ? 0 : cst[rm - 2];
        a.c_cs = view[ODNN_ATTN_C].dims[rm - 1] == 1 ? 0 : cst[rm - 1];
    }
    if (a.has_bias) {
        const dnnl_dim_t *bst = view[ODNN_ATTN_B].format_desc.blocking.strides;
        a.b_rs = view[ODNN_ATTN_B].dims[ry - 2] == 1 ? 0 : bst[ry - 2];
        a.b_cs = view[ODNN_ATTN_B].dims[ry - 1] == 1 ? 0 : bst[ry - 1];
    }
    dnnl_dims_t yd;
    for (int d = 0; d < ro; d++)
        yd[d] = o.dims[d];
    dnnl_memory_desc_t ymd;
    if (!odnn_transposed_dst(b, p->out, ro, yd, &ymd) ||
        ymd.format_desc.blocking.strides[ro - 1] != 1)
        dnnl_memory_desc_init_by_strides(&ymd, ro, yd, dnnl_f32, NULL);
    a.o_rs = ymd.format_desc.blocking.strides[ro - 2];
    /* each operand's batch strides in its own dims (0 where it
     * broadcasts), then in the kernel's */
    for (int d = 0; d < a.nb; d++)
        a.bd[d] = ms.dims[d];
    int ok = 1;
    for (int t = 0; t < 7 && ok; t++) {
        if ((t == ODNN_ATTN_M && !a.has_mask) || (t == ODNN_ATTN_C && !a.has_select) ||
            (t == ODNN_ATTN_B && !a.has_bias))
            continue;
        const dnnl_memory_desc_t *md = t == ODNN_ATTN_O ? &ymd : &view[t];
        int first = t <= ODNN_ATTN_K || t == ODNN_ATTN_B, masks = t == ODNN_ATTN_M || t == ODNN_ATTN_C;
        int r = first ? ry : masks ? rm : ro;
        const int64_t *space = first ? y.dims : masks ? ms.dims : o.dims;
        int64_t own[ODNN_ATTN_MAX_BATCH];
        for (int d = 0; d < r - 2; d++)
            own[d] = md->dims[d] == 1 ? 0 : md->format_desc.blocking.strides[d];
        ok = odnn_attn_restride(r - 2, space, own, a.nb, a.bd, a.bs[t]);
    }
    if (!ok) /* the matcher's regroupings are of dense batch dims; views may not be */
        return odnn_error(PL_CODE_INTERNAL, "onednn: attention at '%s': an operand's batch "
                                            "dims do not regroup into the mask's",
                          name);
    int dst = odnn_dst_value_md(b, p->out, &ymd);
    struct odnn_attn *keep = dst >= 0 ? onednn_host->host_alloc(b->ctx->host_ctx, sizeof *keep, 0)
                                      : NULL;
    struct odnn_step *sp = keep != NULL ? odnn_next_step(b, ODNN_S_ATTN, (int64_t)p->last) : NULL;
    if (sp == NULL) {
        odnn_free(b->ctx, keep);
        return odnn_oom();
    }
    a.threads = omp_get_max_threads();
    *keep = a;
    sp->attn = keep;
    size_t scratch = odnn_attn_scratch_bytes(&a, a.threads);
    if (scratch > b->c->scratch_bytes) /* the shared scratchpad */
        b->c->scratch_bytes = scratch;
    int step = b->c->n_steps++;
    odnn_arg(b, step, DNNL_ARG_SRC_0, ODNN_REF_VALUE, vi[0]);
    odnn_arg(b, step, DNNL_ARG_SRC_1, ODNN_REF_VALUE, vi[1]);
    odnn_arg(b, step, DNNL_ARG_SRC_2, ODNN_REF_VALUE, vi[2]);
    odnn_arg(b, step, DNNL_ARG_DST, ODNN_REF_VALUE, dst);
    /* then the mask, the condition and the bias, each when there is one */
    if (p->mask_weight >= 0)
        odnn_arg(b, step, DNNL_ARG_SRC_3, ODNN_REF_WEIGHT, p->mask_weight);
    else if (vi[ODNN_ATTN_M] >= 0)
        odnn_arg(b, step, DNNL_ARG_SRC_3, ODNN_REF_VALUE, vi[ODNN_ATTN_M]);
    if (p->cond_weight >= 0)
        odnn_arg(b, step, DNNL_ARG_WEIGHTS_1, ODNN_REF_WEIGHT, p->cond_weight);
    else if (vi[ODNN_ATTN_C] >= 0)
        odnn_arg(b, step, DNNL_ARG_WEIGHTS_1, ODNN_REF_VALUE, vi[ODNN_ATTN_C]);
    if (p->bias_weight >= 0)
        odnn_arg(b, step, DNNL_ARG_BIAS, ODNN_REF_WEIGHT, p->bias_weight);
    else if (vi[ODNN_ATTN_B] >= 0)
        odnn_arg(b, step, DNNL_ARG_BIAS, ODNN_REF_VALUE, vi[ODNN_ATTN_B]);
    for (int i = 0; i < p->n_nodes; i++)
        b->done[p->nodes[i]] = 1;
    int64_t batch = 1;
    for (int d = 0; d < a.nb; d++)
        batch *= a.bd[d];
    onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                             "nodes '%s' to '%s': the module's own fused attention (%lld x "
                             "%lld queries, %lld keys, %lld -> %lld wide%s%s%s%s%s%s)",
                             onednn_host->graph->node_name(v, p->first), name, (long long)batch,
                             (long long)a.s, (long long)a.n, (long long)a.d, (long long)a.dv,
                             a.scale_op ? ", scaled" : "", a.has_bias ? ", biased" : "",
                             a.has_select ? ", selected" : "",
                             a.has_mask ? ", masked" : "", a.has_floor ? ", floored" : "",
                             a.safe ? ", NaN rows as 0" : "");
    return NULL;
}

static pl_status *odnn_emit(struct odnn_build *b, size_t n)
{
    const pl_graph_view *v = b->v;
    const char *op = onednn_host->graph->node_op(v, n);
    char reason[ODNN_REASON] = "";
    if (!odnn_check_node(v, &b->u, n, reason))
        return odnn_error(PL_CODE_UNSUPPORTED, "%s (node '%s')", reason,
                          onednn_host->graph->node_name(v, n));
    struct odnn_gelu gm;
    if ((strcmp(op, "Div") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Erf") == 0 ||
         strcmp(op, "Add") == 0 || strcmp(op, "Pow") == 0 || strcmp(op, "Tanh") == 0) &&
        odnn_gelu_of(v, &b->u, n, &gm)) {
        int src;
        pl_status *st = odnn_gelu_own(&gm) ? odnn_gelu_tanh_emit(b, n, &gm) : NULL;
        if (!odnn_gelu_own(&gm)) {
            st = odnn_source(b, gm.x, (int64_t)n, &src);
            if (st == NULL)
                st = odnn_eltwise(b, n, src, gm.alg, 0, 0, gm.out);
        }
        for (size_t k = 0; st == NULL && k < gm.n_nodes; k++)
            b->done[gm.nodes[k]] = 1;
        return st;
    }
    struct odnn_swish sw;
    if ((strcmp(op, "Sigmoid") == 0 || strcmp(op, "HardSigmoid") == 0 ||
         strcmp(op, "Add") == 0) &&
        odnn_match_swish(v, &b->u, n, &sw) && odnn_swish_free(b, &sw)) {
        int src;
        pl_status *st = odnn_source(b, sw.x, (int64_t)n, &src);
        if (st == NULL)
            st = odnn_eltwise(b, n, src, sw.alg, sw.alg == dnnl_eltwise_swish ? 1.0f : 0.0f, 0,
                              sw.out);
        for (size_t k = 0; st == NULL && k < sw.n_nodes; k++)
            b->done[sw.nodes[k]] = 1;
        return st;
    }
    struct odnn_lnpat lm;
    if (odnn_lnorm_of(v, &b->u, n, &lm))
        return odnn_lnorm_pattern(b, n, &lm);
    struct odnn_qdq qp;
    if (odnn_qdq_of(v, &b->u, n, &qp))
        return odnn_qdq_step(b, &qp);
    if (strcmp(op, "QLinearConv") == 0)
        return odnn_qconv_emit(b, n);
    if (strcmp(op, "QuantizeLinear") == 0 || strcmp(op, "DequantizeLinear") == 0)
        return odnn_quant_emit(b, n, op);
    if (strcmp(op, "DynamicQuantizeLinear") == 0)
        return odnn_dql_emit(b, n);
    if (strcmp(op, "MatMulInteger") == 0)
        return odnn_qmm_emit(b, n);
    if (strcmp(op, "Cast") == 0)
        return odnn_cast_emit(b, n);
    if (strcmp(op, "Erf") == 0)
        return odnn_erf_emit(b, n);
    if (strcmp(op, "TableLookup8") == 0)
        return odnn_lut_emit(b, n);
    if (strcmp(op, "QLinearAdd") == 0 || strcmp(op, "QLinearMul") == 0)
        return odnn_qbin_emit(b, n, op);
    if (strcmp(op, "InstanceNormalization") == 0)
        return odnn_inorm_emit(b, n);
    if (strcmp(op, "Expand") == 0 || strcmp(op, "Tile") == 0)
        return odnn_expand_emit(b, n);
    if (strcmp(op, "Pad") == 0)
        return odnn_pad_emit(b, n);
    if (strcmp(op, "Where") == 0)
        return odnn_where_emit(b, n);
    if (strcmp(op, "IsNaN") == 0)
        return odnn_nan_fill_emit(b, n);
    if (strcmp(op, "Conv") == 0)
        return odnn_conv(b, n);
    if (strcmp(op, "ConvTranspose") == 0)
        return odnn_deconv(b, n);
    for (int k = 0; k < b->n_attn; k++)
        if (b->attn[k].last == n)
            return odnn_attn_emit(b, &b->attn[k]);
    if (strcmp(op, "MatMul") == 0 || strcmp(op, "Gemm") == 0)
        return odnn_matmul(b, n, op[0] == 'G');
    if (odnn_is_binary(op))
        return odnn_binary(b, n, op);
    if (strcmp(op, "Concat") == 0)
        return odnn_concat(b, n);
    if (odnn_rnn_gates(op) != 0)
        return odnn_rnn(b, n);
    struct odnn_tinfo x;
    unsigned mask = 0;
    odnn_tensor(v, odnn_in(v, n, 0), &x);
    /* a reduction over axes of one element only is a reshape */
    int noop_reduce = odnn_reduce_alg(op) != 0 && odnn_reduce_axes(v, n, op, &x, &mask, reason) &&
                      odnn_reduce_is_view(&x, mask);
    /* and so is a global pool over spatial dims of one element (oneDNN's
     * pooling of [4,512,1,1] took 37 us) */
    if ((strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0) &&
        x.ndim >= 3) {
        noop_reduce = 1;
        for (int d = 2; d < x.ndim; d++)
            noop_reduce = noop_reduce && x.dims[d] == 1;
    }
    int relayout = strcmp(op, "Split") == 0 || strcmp(op, "Slice") == 0 ||
                   strcmp(op, "Gather") == 0 ||
                   strcmp(op, "Reshape") == 0 ||
                   strcmp(op, "Flatten") == 0 || strcmp(op, "Transpose") == 0 ||
                   strcmp(op, "Identity") == 0 || strcmp(op, "Squeeze") == 0 ||
                   strcmp(op, "Unsqueeze") == 0 || noop_reduce || strcmp(op, "Resize") == 0 ||
                   strcmp(op, "Upsample") == 0; /* odnn_resample takes a permuted view */
    int64_t shuffle_out, shuffle_nodes[2], shuffle_groups;
    int shuffle = strcmp(op, "Reshape") == 0 &&
                  odnn_shuffle_chain(b, n, &shuffle_out, shuffle_nodes, &shuffle_groups);
    int src;
    pl_status *st = relayout && !shuffle
                        ? odnn_source_view(b, odnn_in(v, n, 0), (int64_t)n, &src)
                        : odnn_source(b, odnn_in(v, n, 0), (int64_t)n, &src);
    if (st != NULL)
        return st;
    if (shuffle) {
        int taken;
        st = odnn_shuffle(b, n, src, shuffle_out, shuffle_nodes, shuffle_groups, &taken);
        if (st != NULL || taken)
            return st;
    }
    pl_status *own = NULL;
    if (strcmp(op, "Tanh") == 0 && odnn_tanh_own(b, n, src, &own))
        return own;
    struct odnn_elt seq[ODNN_MAX_ELT];
    int n_seq = odnn_eltwise_seq(v, n, seq, reason);
    if (n_seq > 0)
        return odnn_eltwise_steps(b, n, src, seq, n_seq, odnn_out(v, n, 0));
    if (strcmp(op, "PRelu") == 0)
        return odnn_prelu_emit(b, n, src);
    if (strstr(op, "Pool") != NULL && !noop_reduce)
        return odnn_pool(b, n, op, src);
    if (strcmp(op, "BatchNormalization") == 0)
        return odnn_bnorm(b, n, src);
    if (strcmp(op, "LayerNormalization") == 0)
        return odnn_lnorm(b, n, src);
    if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0)
        return odnn_softmax(b, n, src);
    if (strcmp(op, "LRN") == 0)
        return odnn_lrn(b, n, src);
    if (odnn_reduce_alg(op) != 0 && !noop_reduce)
        return odnn_reduce(b, n, op, src);
    if (strcmp(op, "Split") == 0)
        return odnn_split(b, n, src);
    if (strcmp(op, "Slice") == 0)
        return odnn_slice(b, n, src);
    if (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0)
        return odnn_resample(b, n, op, src);
    if (strcmp(op, "Gather") == 0)
        return odnn_gather(b, n, src);
    return odnn_relayout(b, n, op, src);
}

/* ---- planning memory ------------------------------------------------------- */

/* Liveness over steps, then offsets: the largest values first, each at the
 * lowest offset that overlaps no value live at the same time. */
static pl_status *odnn_plan(struct odnn_build *b)
{
    pl_compiled *c = b->c;
    for (int s = 0; s < c->n_steps; s++)
        for (int a = 0; a < c->steps[s].n_args; a++) {
            if (c->steps[s].ref_kind[a] != ODNN_REF_VALUE)
                continue;
            struct odnn_value *val = &c->values[odnn_owner(c, c->steps[s].ref[a])];
            if (val->first < 0 || s < val->first)
                val->first = s;
            if (s > val->last)
                val->last = s;
        }
    int *order = onednn_host->host_alloc(b->ctx->host_ctx,
                                         (size_t)(c->n_values + 1) * sizeof *order, 0);
    if (order == NULL)
        return odnn_oom();
    int n_temp = 0;
    for (int i = 0; i < c->n_values; i++)
        if (c->values[i].kind == ODNN_V_TEMP && c->values[i].first >= 0)
            order[n_temp++] = i;
    for (int i = 1; i < n_temp; i++) /* insertion sort, largest first */
        for (int j = i; j > 0 && c->values[order[j]].bytes > c->values[order[j - 1]].bytes; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    size_t arena = 0;
    for (int i = 0; i < n_temp; i++) {
        struct odnn_value *val = &c->values[order[i]];
        size_t off = 0, size = (val->bytes + 63) & ~(size_t)63;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int j = 0; j < i; j++) {
                const struct odnn_value *o = &c->values[order[j]];
                size_t osize = (o->bytes + 63) & ~(size_t)63;
                if (o->last < val->first || val->last < o->first)
                    continue;
                if (off < o->offset + osize && o->offset < off + size) {
                    off = o->offset + osize;
                    moved = 1;
                }
            }
        }
        val->offset = off;
        if (off + size > arena)
            arena = off + size;
    }
    odnn_free(b->ctx, order);
    c->arena_bytes = arena;
    return NULL;
}

/* Allocates the arena and scratchpad and binds every memory object. */
/* BYTES of memory on 2 MiB pages where the kernel gives them (transparent
 * huge pages, granted to a 2 MiB-aligned mapping marked MADV_HUGEPAGE),
 * *OUT_LEN the length to unmap; NULL when mmap fails. */
/* Large subgraphs keep their weights in one mapping, reordered straight
 * into it, so that no weight exists twice while the subgraph is compiled
 * (packing afterwards made resnet18's peak RSS 45 MB higher). Where most of
 * the bytes are products' weights (MatMul, Gemm, recurrent layers) and they
 * are many (ODNN_HUGE_MIN_BYTES), the mapping takes transparent huge
 * pages: oneDNN's products stream their
 * weights with TLB misses a convolution's blocked loops do not have
 * (dz_vit_b_16: 24.5-27 ms a run with them, 28.5-30 without; ONNX Runtime
 * 24-28), while a fresh huge page costs 3-5 ms to fault in where the host
 * has taken freed memory back, a 4 KiB one far less. Convolutions ran as
 * fast without them and loaded faster (memory taken back, 4 s between
 * runs: tv_retinanet 124.5 ms a run without, 127.7 with, session
 * creation 387-400 against 652-843 ms; tv_fcos, tv_resnext50 and
 * tv_convnext_tiny the same run times, 60-190 ms less creation).
 * The mapping is reserved before the first weight, from the subgraph's
 * constant bytes with room for the blocked layouts' padding; only the pages
 * weights are written to become resident, and odnn_block_trim unmaps the
 * unused tail once the last weight is in. A weight that does not fit (or a
 * subgraph with less than 2 MB of constants) is allocated on its own. */
#define ODNN_HUGE ((size_t)2 << 20)
/* ... and only for a subgraph of at least this many constant bytes. On the
 * virtual machines measured a fresh huge page comes from memory the host
 * took back (free page reporting hands it whole blocks of 2 MiB and more),
 * where a 4 KiB one is often a page the guest freed and the host still
 * backs: tv_convnext_tiny's 114 MB took 220-250 ms of session creation
 * in 3 of 5 starts with huge pages, 67-70 ms in every start without,
 * for the same run time (9.36 against 9.47 ms, medians of 5 alternating
 * starts); tv_maxvit_t ran alike, tv_swin_t (111 MB) 5-10% slower
 * without; dz_vit_b_16 (345 MB) 20.2 against 22.5 ms a run, its creation
 * 190-360 ms either way against ONNX Runtime's 360-470. */
#define ODNN_HUGE_MIN_BYTES ((size_t)256 << 20)

/* Faulting the block's huge pages in is most of a big model's compile:
 * each is a fresh 2 MiB the kernel clears, and in a virtual machine whose
 * host takes back freed memory (free page reporting) the host backs it
 * again, page by page (dz_vit_b_16: 345 MB of weights, 52% of a 1.2 s
 * session creation in clear_page_erms). A second thread faults them in
 * ahead of the weights being laid out (MADV_POPULATE_WRITE: page tables
 * filled as a write would, no byte written, so no race with the compiling
 * thread's writes), at most ODNN_PREFAULT_AHEAD past the last weight taken
 * (further ahead, the block's pages coexist with more of the core's copies
 * not yet dropped: 64 MiB ahead raised dz_convnext_tiny's peak RSS 136 ->
 * 190 MiB) and never past the constants' bytes, so that little is faulted
 * that the trim then unmaps. dz_vit_b_16 with memory the host had taken
 * back: session creation 1100-1160 -> 730-800 ms. With one thread in the budget, or a kernel without
 * MADV_POPULATE_WRITE (before 5.14), the weights fault their pages
 * themselves, as before. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define ODNN_PREFAULT_MIN ((size_t)16 << 20)
#define ODNN_PREFAULT_AHEAD ((size_t)8 << 20)

static void *odnn_prefault_main(void *arg)
{
    pl_compiled *c = arg;
    size_t at = 0;
    while (at < c->prefault_len && !atomic_load(&c->prefault_stop)) {
        if (at >= atomic_load(&c->weight_block_used) + ODNN_PREFAULT_AHEAD) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (madvise((char *)c->weight_block + at, ODNN_HUGE, MADV_POPULATE_WRITE) != 0)
            break;
        at += ODNN_HUGE;
    }
    return NULL;
}

static void odnn_block_prefault_start(pl_compiled *c, size_t total)
{
    c->prefault_len = total < c->weight_block_len ? total & ~(ODNN_HUGE - 1) : 0;
    atomic_store(&c->prefault_stop, 0);
    if (total < ODNN_PREFAULT_MIN || omp_get_max_threads() < 2 || c->prefault_len == 0)
        return;
    c->prefaulting = pthread_create(&c->prefault, NULL, odnn_prefault_main, c) == 0;
}

static void odnn_block_prefault_stop(pl_compiled *c)
{
    if (!c->prefaulting)
        return;
    atomic_store(&c->prefault_stop, 1);
    pthread_join(c->prefault, NULL);
    c->prefaulting = 0;
}

static void odnn_block_reserve(pl_compiled *c, const pl_graph_view *v)
{
    const pl_graph_api *g = onednn_host->graph;
    /* The constants the view's nodes read, each once: not every constant
     * of the model (the view's tensor ids are the model's), whose other
     * weights the core may have dropped after compiling other subgraphs. */
    size_t nt = g->tensor_count(v), total = 0, products = 0;
    uint8_t *seen = calloc(nt ? nt : 1, 1);
    if (seen == NULL)
        return;
    static const char *const product_ops[] = {"MatMul", "Gemm", "MatMulInteger",
                                              "QLinearMatMul", "LSTM", "GRU", "RNN"};
    for (size_t n = 0; n < g->node_count(v); n++) {
        int product = 0;
        for (size_t i = 0; i < sizeof product_ops / sizeof product_ops[0]; i++)
            product |= odnn_op_is(v, (int64_t)n, product_ops[i]);
        for (size_t k = 0; k < g->node_input_count(v, n); k++) {
            int64_t t = g->node_input(v, n, k);
            const void *data;
            size_t bytes;
            if (t < 0 || (size_t)t >= nt || seen[t])
                continue;
            seen[t] = 1;
            if (g->tensor_constant(v, t, &data, &bytes)) {
                total += bytes;
                products += product ? bytes : 0;
            }
        }
    }
    free(seen);
    if (total < ODNN_HUGE || total > ((size_t)1 << 40))
        return;
    size_t len = (2 * total + 2 * ODNN_HUGE + ODNN_HUGE - 1) & ~(ODNN_HUGE - 1);
    char *p = mmap(NULL, len + ODNN_HUGE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return;
    char *a = (char *)(((uintptr_t)p + ODNN_HUGE - 1) & ~(uintptr_t)(ODNN_HUGE - 1));
    if (a > p)
        munmap(p, (size_t)(a - p));
    if (a + len < p + len + ODNN_HUGE)
        munmap(a + len, (size_t)(p + len + ODNN_HUGE - (a + len)));
    if (2 * products >= total && total >= ODNN_HUGE_MIN_BYTES)
        madvise(a, len, MADV_HUGEPAGE);
    c->weight_block = a;
    c->weight_block_len = len;
    atomic_store(&c->weight_block_used, 0);
    odnn_block_prefault_start(c, total);
}

/* BYTES for a weight from the block, or NULL when it does not fit. */
static void *odnn_block_take(pl_compiled *c, size_t bytes)
{
    size_t need = (bytes + 63) & ~(size_t)63;
    size_t used = atomic_load(&c->weight_block_used);
    if (c->weight_block == NULL || c->weight_block_len - used < need)
        return NULL;
    atomic_store(&c->weight_block_used, used + need);
    return (char *)c->weight_block + used;
}

static void odnn_block_trim(pl_compiled *c)
{
    if (c->weight_block == NULL)
        return;
    odnn_block_prefault_stop(c);
    size_t keep = (atomic_load(&c->weight_block_used) + ODNN_HUGE - 1) & ~(ODNN_HUGE - 1);
    if (keep == 0)
        keep = ODNN_HUGE;
    if (keep < c->weight_block_len) {
        munmap((char *)c->weight_block + keep, c->weight_block_len - keep);
        c->weight_block_len = keep;
        if (c->block_ref != NULL)
            c->block_ref->len = keep;
    }
}

/* The memories a sliced convolution (odnn_wino_slices) runs a slice and
 * the remainder through, and the bytes per image of its source and
 * destination (from their values' layouts: the batch is outermost). */
static pl_status *odnn_bind_slices(struct odnn_build *b, struct odnn_step *st)
{
    static const int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST};
    static const dnnl_query_t queries[2] = {dnnl_query_src_md, dnnl_query_dst_md};
    pl_compiled *c = b->c;
    for (int k = 0; k < 2; k++) {
        int a = 0;
        while (a < st->n_args && st->arg[a] != args[k])
            a++;
        if (a == st->n_args || st->ref_kind[a] != ODNN_REF_VALUE)
            return odnn_error(PL_CODE_INTERNAL, "onednn: a sliced convolution without its %s",
                              k ? "destination" : "source");
        const dnnl_memory_desc_t *md = &c->values[st->ref[a]].md;
        st->slice_stride[k] =
            (size_t)md->format_desc.blocking.strides[0] * dnnl_data_type_size(md->data_type);
        for (int t = 0; t < 2; t++) {
            const_dnnl_primitive_desc_t pd = t ? st->pd_tail : st->pd;
            if (pd == NULL)
                continue;
            dnnl_status_t ds = dnnl_memory_create(&st->slice_mem[t][k],
                                                  dnnl_primitive_desc_query_md(pd, queries[k], 0),
                                                  b->ctx->engine, DNNL_MEMORY_NONE);
            if (ds != dnnl_success)
                return odnn_dnnl(ds, "slice memory", b->v, st->node);
        }
    }
    const dnnl_memory_desc_t *smd =
        st->pd_tail ? dnnl_primitive_desc_query_md(st->pd_tail, dnnl_query_scratchpad_md, 0) : NULL;
    if (smd != NULL && dnnl_memory_desc_get_size(smd) > 0) {
        dnnl_status_t ds = dnnl_memory_create(&st->scratch_tail, smd, b->ctx->engine,
                                              DNNL_MEMORY_NONE);
        if (ds != dnnl_success)
            return odnn_dnnl(ds, "scratchpad memory", b->v, st->node);
    }
    return NULL;
}

static pl_status *odnn_bind(struct odnn_build *b)
{
    pl_compiled *c = b->c;
    odnn_block_trim(c);
    /* Temporaries and the scratchpad are bound when a run has its buffer
     * (odnn_work_bind). */
    c->arena = c->scratch = NULL;
    c->scratch_off = (c->arena_bytes + 64 + 63) & ~(size_t)63;
    for (int i = 0; i < c->n_values; i++) {
        struct odnn_value *val = &c->values[i];
        const struct odnn_value *own = &c->values[odnn_owner(c, i)];
        void *h = DNNL_MEMORY_NONE;
        if (own->kind == ODNN_V_CONST)
            h = (char *)c->weights[own->ext].data + val->view_off;
        dnnl_status_t ds = dnnl_memory_create(&val->mem, &val->md, b->ctx->engine, h);
        if (ds != dnnl_success)
            return odnn_dnnl(ds, "memory", b->v, -1);
    }
    for (int s = 0; s < c->n_steps; s++) {
        struct odnn_step *st = &c->steps[s];
        for (int a = 0; a < st->n_args; a++) {
            st->exec[a].arg = st->arg[a];
            st->exec[a].memory = st->ref_kind[a] == ODNN_REF_VALUE ? c->values[st->ref[a]].mem
                                                                   : c->weights[st->ref[a]].mem;
        }
        if (st->slice > 0) {
            pl_status *err = odnn_bind_slices(b, st);
            if (err != NULL)
                return err;
        }
        if (st->scratch_mem != NULL) {
            st->exec[st->n_args].arg = DNNL_ARG_SCRATCHPAD;
            st->exec[st->n_args].memory = st->scratch_mem;
        }
    }
    dnnl_status_t ds = dnnl_stream_create(&c->stream, b->ctx->engine, dnnl_stream_default_flags);
    return odnn_dnnl(ds, "stream", b->v, -1);
}

/* ---- the subgraph's hash ---------------------------------------------------- */

/* Whether a compile of V hashes it: only for its export (the hash an import
 * checks), so not when the core says it will not export it (ABI 1.15):
 * the hash reads every weight, a quarter of a ViT-base's session creation
 * (340 MB) where no cache folder is set. */
static bool odnn_hash_wanted(const pl_graph_view *v)
{
    const pl_graph_api *g = onednn_host->graph;
    return !PL_ABI_HAS_FN(pl_graph_api, g, compile_exported) || g->compile_exported(v) != 0;
}

/* Hashes what compile reads (plinth/graph_hash.h): ops, the attributes it
 * reads, the wiring, the types and the constant bytes. */
static pl_status *odnn_view_hash(pl_module_ctx *ctx, const pl_graph_view *v, uint64_t *out)
{
    static const char *const attrs[] = {
        "kernel_shape", "strides", "pads", "dilations", "group", "auto_pad", "transA", "transB",
        "alpha", "beta", "axis", "axes", "keepdims", "epsilon", "ceil_mode", "count_include_pad",
        "storage_order", "perm", "min", "max", "training_mode", "gamma", "noop_with_empty_axes",
        /* recurrent layers (a blob's weights do not tell these apart) */
        "direction", "layout", "linear_before_reset", "hidden_size", "activations", "clip",
        "input_forget"};
    if (!pl_hash_view(onednn_host, ctx->host_ctx, v, "onednn subgraph 5", attrs,
                      sizeof attrs / sizeof attrs[0], out))
        return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory hashing a subgraph");
    return NULL;
}

/* ---- compile, run, release ---------------------------------------------------- */

void onednn_sg_release(pl_module_ctx *ctx, pl_compiled *c)
{
    if (c == NULL)
        return;
    for (int i = 0; i < c->n_steps; i++) {
        if (c->steps[i].prim)
            dnnl_primitive_destroy(c->steps[i].prim);
        if (c->steps[i].pd)
            dnnl_primitive_desc_destroy(c->steps[i].pd);
        if (c->steps[i].scratch_mem)
            dnnl_memory_destroy(c->steps[i].scratch_mem);
        if (c->steps[i].prim_tail)
            dnnl_primitive_destroy(c->steps[i].prim_tail);
        if (c->steps[i].pd_tail)
            dnnl_primitive_desc_destroy(c->steps[i].pd_tail);
        if (c->steps[i].scratch_tail)
            dnnl_memory_destroy(c->steps[i].scratch_tail);
        if (c->steps[i].solo)
            dnnl_primitive_destroy(c->steps[i].solo);
        if (c->steps[i].solo_scratch)
            dnnl_memory_destroy(c->steps[i].solo_scratch);
        for (int t = 0; t < 2; t++)
            for (int k = 0; k < 2; k++)
                if (c->steps[i].slice_mem[t][k])
                    dnnl_memory_destroy(c->steps[i].slice_mem[t][k]);
        if (c->steps[i].direct != NULL) {
            odnn_direct_free(c->steps[i].direct, ctx);
            odnn_free(ctx, c->steps[i].direct);
        }
        if (c->steps[i].resize != NULL)
            odnn_free(ctx, c->steps[i].resize);
        if (c->steps[i].smm != NULL)
            odnn_free(ctx, c->steps[i].smm);
        if (c->steps[i].attn != NULL)
            odnn_free(ctx, c->steps[i].attn);
    }
    for (int i = 0; i < c->n_values; i++)
        if (c->values[i].mem)
            dnnl_memory_destroy(c->values[i].mem);
    for (int i = 0; i < c->n_weights; i++) {
        if (c->weights[i].mem)
            dnnl_memory_destroy(c->weights[i].mem);
        if (!c->weights[i].in_block && !c->weights[i].borrowed)
            odnn_free(ctx, c->weights[i].data);
        onednn_share_release(ctx, c->weights[i].shared);
    }
    odnn_block_prefault_stop(c);
    if (c->block_ref != NULL)
        onednn_block_unref(ctx, c->block_ref); /* (shared copies in it may hold it) */
    else if (c->weight_block != NULL)
        munmap(c->weight_block, c->weight_block_len);
    if (c->stream)
        dnnl_stream_destroy(c->stream);
    odnn_free(ctx, c->steps);
    odnn_free(ctx, c->values);
    odnn_free(ctx, c->weights);
    odnn_free(ctx, c->input_value);
    odnn_free(ctx, c->output_value);
    odnn_free(ctx, c->times.run_ns);
    odnn_free(ctx, c->times.times);
    odnn_free(ctx, c);
}

/* ---- run buffers (pl_module_ctx.work) ------------------------------------------ */

/* The bytes of C's run buffer: its arena, then its scratchpad. */
static size_t odnn_work_bytes(const pl_compiled *c)
{
    return c->scratch_off + c->scratch_bytes + 64;
}

void *onednn_work_alloc(void *ctx, size_t bytes)
{
    pl_module_ctx *m = ctx;
    return onednn_host->host_alloc(m->host_ctx, bytes, 64);
}

void onednn_work_release(void *ctx, void *p)
{
    odnn_free(ctx, p);
}

/* Points C's temporaries and scratchpad into BUF (a run buffer of
 * odnn_work_bytes): nothing to do when the last run of C had the same. */
static void odnn_work_bind(pl_compiled *c, void *buf)
{
    if (c->arena == buf)
        return;
    c->arena = buf;
    c->scratch = (char *)buf + c->scratch_off;
    for (int i = 0; i < c->n_values; i++) {
        const struct odnn_value *own = &c->values[odnn_owner(c, i)];
        if (own->kind == ODNN_V_TEMP)
            dnnl_memory_set_data_handle(c->values[i].mem,
                                        (char *)buf + own->offset + c->values[i].view_off);
    }
    for (int s = 0; s < c->n_steps; s++) {
        if (c->steps[s].scratch_mem != NULL)
            dnnl_memory_set_data_handle(c->steps[s].scratch_mem, c->scratch);
        if (c->steps[s].scratch_tail != NULL)
            dnnl_memory_set_data_handle(c->steps[s].scratch_tail, c->scratch);
        if (c->steps[s].solo_scratch != NULL)
            dnnl_memory_set_data_handle(c->steps[s].solo_scratch, c->scratch);
    }
}

static pl_status *odnn_engine(pl_module_ctx *ctx)
{
    pthread_mutex_lock(&ctx->engine_lock);
    dnnl_status_t ds = dnnl_success;
    if (ctx->engine == NULL)
        ds = dnnl_engine_create(&ctx->engine, dnnl_cpu, 0);
    pthread_mutex_unlock(&ctx->engine_lock);
    if (ds != dnnl_success)
        return odnn_error(PL_CODE_DEVICE_ERROR, "onednn: cannot create the CPU engine: %s",
                          dnnl_status2str(ds));
    return NULL;
}

/* Builds the program of SUBGRAPH into B->c. */
/* The view's constants in the order their last reader comes (ABI 1.5):
 * once that node is emitted, the module holds its own copy of what it
 * needs (weights in its blocks, scalars in its steps), so it tells the core
 * (tensor_constant_done), which then drops its copy of a weight nobody
 * else reads: compiling one big subgraph no longer holds every weight
 * twice at its end. Emitting node n reads constants of n and of the nodes
 * after it that it fuses, never of the nodes before it. */
struct odnn_last_use {
    size_t node;
    int64_t tensor;
};

static int odnn_last_use_cmp(const void *pa, const void *pb)
{
    const struct odnn_last_use *a = pa, *b = pb;
    return a->node < b->node ? -1 : a->node > b->node;
}

static struct odnn_last_use *odnn_last_uses(struct odnn_build *b, size_t *out_n)
{
    const pl_graph_api *g = onednn_host->graph;
    const pl_graph_view *v = b->v;
    *out_n = 0;
    if (!PL_ABI_HAS_FN(pl_graph_api, g, tensor_constant_done))
        return NULL;
    size_t nt = g->tensor_count(v), nodes = g->node_count(v), n_uses = 0;
    int64_t *last = onednn_host->host_alloc(b->ctx->host_ctx, (nt ? nt : 1) * sizeof *last, 0);
    if (last == NULL)
        return NULL;
    for (size_t t = 0; t < nt; t++)
        last[t] = -1;
    for (size_t n = 0; n < nodes; n++)
        for (size_t k = 0; k < g->node_input_count(v, n); k++) {
            int64_t t = g->node_input(v, n, k);
            const void *data;
            size_t bytes;
            if (t < 0 || (size_t)t >= nt || !g->tensor_constant(v, t, &data, &bytes))
                continue;
            n_uses += last[t] < 0;
            last[t] = (int64_t)n;
        }
    struct odnn_last_use *uses =
        onednn_host->host_alloc(b->ctx->host_ctx, (n_uses ? n_uses : 1) * sizeof *uses, 0);
    if (uses != NULL) {
        for (size_t t = 0; t < nt; t++)
            if (last[t] >= 0)
                uses[(*out_n)++] = (struct odnn_last_use){(size_t)last[t], (int64_t)t};
        qsort(uses, *out_n, sizeof *uses, odnn_last_use_cmp);
    }
    onednn_host->host_free(b->ctx->host_ctx, last);
    return uses;
}

/* The pending weight reorders (odnn_build's pending), spread over the
 * runtime's threads, each on a team of one (as odnn_weight runs them: no
 * OpenMP team is started on a pool thread); then the core is told of the
 * constants it waited for. */
struct odnn_pending_job {
    struct odnn_build *b;
    dnnl_status_t *status;
};

static void odnn_pending_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    struct odnn_pending_job *job = arg;
    int saved = omp_get_max_threads();
    if (saved != 1)
        omp_set_num_threads(1);
    for (size_t i = begin; i < end; i++) {
        const struct odnn_pending *p = &job->b->pending[i];
        struct odnn_weight *w = &job->b->c->weights[p->weight];
        job->status[i] = odnn_reorder_into(job->b->ctx->engine, &p->src_md, p->data, &w->md,
                                           w->mem);
        if (job->status[i] == dnnl_success)
            odnn_flush_denormals(w);
    }
    if (saved != 1)
        omp_set_num_threads(saved);
}

static pl_status *odnn_pending_flush(struct odnn_build *b)
{
    pl_status *st = NULL;
    if (b->n_pending > 0) {
        dnnl_status_t *status = onednn_host->host_alloc(
            b->ctx->host_ctx, sizeof *status * (size_t)b->n_pending, 0);
        if (status == NULL)
            return odnn_oom();
        struct odnn_pending_job job = {.b = b, .status = status};
        onednn_host->parallel_for(b->ctx->host_ctx, (size_t)b->n_pending, 1, odnn_pending_chunk,
                                  &job);
        for (int i = 0; i < b->n_pending && st == NULL; i++)
            st = odnn_dnnl(status[i], "weight reorder", b->v, b->pending[i].node);
        for (int i = 0; i < b->n_pending && st == NULL; i++)
            odnn_weight_make_shared(b->ctx, b->c, &b->c->weights[b->pending[i].weight],
                                    b->pending[i].want_share, b->pending[i].digest, 0,
                                    &b->pending[i].src_md);
        odnn_free(b->ctx, status);
    }
    b->n_pending = 0;
    b->pending_bytes = 0;
    for (int i = 0; st == NULL && i < b->n_postponed; i++)
        onednn_host->graph->tensor_constant_done(b->v, b->postponed[i]);
    b->n_postponed = 0;
    return st;
}

/* Tells the core the build is done with constant T (odnn_last_uses),
 * after its pending reorders when it has some. */
static pl_status *odnn_constant_done(struct odnn_build *b, int64_t t)
{
    int waits = 0;
    for (int i = 0; i < b->n_pending && !waits; i++)
        waits = b->pending[i].tensor == t;
    if (!waits) {
        onednn_host->graph->tensor_constant_done(b->v, t);
        return NULL;
    }
    int64_t *grown = odnn_grow(b->ctx, b->postponed, b->n_postponed, &b->cap_postponed,
                               sizeof *b->postponed);
    if (grown == NULL)
        return odnn_oom();
    b->postponed = grown;
    b->postponed[b->n_postponed++] = t;
    return b->pending_bytes >= ODNN_PENDING_BYTES ? odnn_pending_flush(b) : NULL;
}

/* Whether node N's primitives are made (and later run) on one thread,
 * not the whole TEAM: primitives fix their team when they are made, and a
 * small node's work does not pay for the team's fork and join. */
static int odnn_node_alone(struct odnn_build *b, size_t n, int team)
{
    const pl_graph_api *g = onednn_host->graph;
    double flops, bytes;
    pl_cost_work(g, b->v, n, &flops, &bytes);
    double limit = b->ctx->one_thread_us;
    if (team > 1 && flops / (PL_COST_GFLOPS * 1e3) < limit &&
        bytes / (ONEDNN_ONE_THREAD_GBPS * 1e3) < limit)
        return 1;
    /* A recurrent node joins its team once per time step: where a step's
     * work is small, each join costs more than the step (a bidirectional
     * LSTM of 24 steps, hidden 24: 75 us on one thread, 1.4 ms on two, its
     * OpenMP team asleep between steps). */
    double steps = onednn_rnn_steps(g, b->v, n);
    return team > 1 && steps > 0 &&
           flops / steps / (PL_COST_GFLOPS * 1e3) < ONEDNN_RNN_ONE_THREAD_STEP_US &&
           onednn_rnn_weight_bytes(g, b->v, n) <= (double)PL_COST_CACHE_BYTES;
}

/* Winograd's descriptors, made ahead of the build several at once over the
 * runtime's threads. Making one costs what oneDNN's F(2x2, 3x3) kernel
 * spends planning its blocks, which tries every tile size of the map: 6.8
 * ms each for DNSMOS's two 64-channel layers over 901x161, 2.5 for a
 * 224x224 map, most of a session's creation where the maps are large; the
 * build then asks one layer after another. odnn_wino_prefetch guesses what
 * odnn_conv will ask (the layer's post-ops as odnn_fuse_conv takes them, or
 * none where Winograd refuses them) and odnn_wino_pd answers from here
 * when the question is the same; a wrong guess costs only its share of
 * the parallel work. f32 only, AVX-512 only (oneDNN's Winograd kernels). */
static void odnn_release_team(pthread_t caller);

struct odnn_wpre_job {
    struct odnn_build *b;
    pthread_t caller;
};

static void odnn_wpre_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    struct odnn_build *b = ((struct odnn_wpre_job *)arg)->b;
    int saved = omp_get_max_threads();
    for (size_t i = begin; i < end; i++) {
        struct odnn_wino_pre *e = &b->wpre[i];
        if (omp_get_max_threads() != e->team)
            omp_set_num_threads(e->team);
        e->pd = NULL;
        if (e->kind == 4 && odnn_wino_whole_too_big(b, &e->cd, e->po))
            e->ds = dnnl_unimplemented;
        else
            e->ds = e->kind == 4 ? odnn_pd_named(b, &e->cd, e->po, "wino_4x3", &e->pd)
                                 : odnn_conv_pd_fast(b, &e->cd, e->po, &e->pd);
    }
    if (omp_get_max_threads() != saved)
        omp_set_num_threads(saved);
    odnn_release_team(((struct odnn_wpre_job *)arg)->caller);
}

/* The Winograd question odnn_conv would ask of Conv N, in *E; 0 when it
 * would ask none (or the guess is not safe to make). */
static int odnn_wino_guess(struct odnn_build *b, size_t n, int team, struct odnn_wino_pre *e)
{
    const pl_graph_view *v = b->v;
    struct odnn_tinfo x, wt, y;
    struct odnn_window w;
    char reason[ODNN_REASON] = "";
    if (!odnn_op_is(v, (int64_t)n, "Conv") || !odnn_tensor(v, odnn_in(v, n, 0), &x) ||
        !odnn_tensor(v, odnn_in(v, n, 1), &wt) || !odnn_tensor(v, odnn_out(v, n, 0), &y) ||
        !x.known || !y.known || !x.f32 || wt.cdata == NULL || !wt.f32 || wt.ndim != 4 ||
        wt.dims[2] != 3 || wt.dims[3] != 3 || odnn_attr_int(v, n, "group", 1) != 1 ||
        odnn_dequantized(b, odnn_in(v, n, 0)) ||
        !odnn_window(v, n, "Conv", &x, &wt.dims[2], &y, &w, reason) || w.sr != 2 ||
        w.s[0] != 1 || w.s[1] != 1 || w.d[0] != 1 || w.d[1] != 1)
        return 0;
    int kind = odnn_wino_pays(y.dims[0], wt.dims[1], wt.dims[0], y.dims[2], y.dims[3]);
    int64_t t = odnn_in(v, n, 1);
    if (kind == 0 || (b->wino_over != NULL && (size_t)t < b->u.n_tensors && b->wino_over[t]))
        return 0;
    struct odnn_conv_mds c;
    dnnl_dims_t wd = {wt.dims[0], wt.dims[1], 3, 3};
    odnn_conv_mds_init(&c, &x, &y, 4, wd, dnnl_f32, &w);
    b->wino_quiet = 1;
    int scale_ok = odnn_wino_scale_ok(b, n, &c.dst);
    b->wino_quiet = 0;
    struct odnn_fuse f;
    b->guessing = 1;
    b->guess_node = n;
    int fused = scale_ok && odnn_fuse_conv(b, n, odnn_in(v, n, 2) >= 0, &f, 2, 0);
    b->guessing = 0;
    if (!fused)
        return 0;
    int64_t bias_t = odnn_in(v, n, 2) >= 0 ? odnn_in(v, n, 2) : f.bias;
    if (f.n_scalar > 0 || f.n_chan > 0 || !odnn_wino_po_ok(f.po)) {
        /* odnn_conv asks again without them (odnn_wino_without_post_ops) */
        dnnl_post_ops_destroy(f.po);
        if (dnnl_post_ops_create(&f.po) != dnnl_success)
            return 0;
    }
    if (dnnl_dilated_convolution_forward_desc_init(
            &e->cd, dnnl_forward_inference, dnnl_convolution_winograd, &c.src, &c.wei,
            bias_t >= 0 ? &c.bias : NULL, &c.dst, c.strides, c.dil, c.pl, c.pr) != dnnl_success) {
        dnnl_post_ops_destroy(f.po);
        return 0;
    }
    e->po = f.po;
    e->kind = kind;
    e->team = odnn_node_alone(b, n, team) ? 1 : team;
    e->pd = NULL;
    e->ds = dnnl_unimplemented;
    e->used = 0;
    return 1;
}

static pl_status *odnn_wino_prefetch(struct odnn_build *b)
{
    if (!b->ctx->winograd || b->ctx->bf16 || !onednn_has_avx512())
        return NULL;
    size_t nodes = onednn_host->graph->node_count(b->v);
    int team = omp_get_max_threads(), count = 0;
    struct odnn_wino_pre probe;
    for (size_t n = 0; n < nodes; n++)
        if (odnn_wino_guess(b, n, team, &probe)) {
            dnnl_post_ops_destroy(probe.po);
            count++;
        }
    if (count < 2) /* nothing to do at once */
        return NULL;
    b->wpre = onednn_host->host_alloc(b->ctx->host_ctx, sizeof *b->wpre * (size_t)count, 0);
    if (b->wpre == NULL)
        return odnn_oom();
    for (size_t n = 0; n < nodes && b->n_wpre < count; n++)
        if (odnn_wino_guess(b, n, team, &b->wpre[b->n_wpre]))
            b->n_wpre++;
    struct odnn_wpre_job job = {.b = b, .caller = pthread_self()};
    onednn_host->parallel_for(b->ctx->host_ctx, (size_t)b->n_wpre, 1, odnn_wpre_chunk, &job);
    return NULL;
}

static void odnn_wino_prefetch_free(struct odnn_build *b)
{
    int used = 0;
    for (int i = 0; i < b->n_wpre; i++)
        used += b->wpre[i].used;
    if (b->n_wpre > 0)
        onednn_host->log_message(b->ctx->host_ctx, PL_LOG_DEBUG,
                                 "Winograd descriptors made ahead, several at once: %d, %d of "
                                 "them used",
                                 b->n_wpre, used);
    for (int i = 0; i < b->n_wpre; i++) {
        if (b->wpre[i].pd != NULL)
            dnnl_primitive_desc_destroy(b->wpre[i].pd);
        dnnl_post_ops_destroy(b->wpre[i].po);
    }
    odnn_free(b->ctx, b->wpre);
    b->wpre = NULL;
    b->n_wpre = 0;
}

static pl_status *odnn_build_program(struct odnn_build *b)
{
    const pl_graph_api *g = onednn_host->graph;
    const pl_graph_view *v = b->v;
    pl_compiled *c = b->c;
    pl_status *budget_st = odnn_wino_budget(b);
    if (budget_st == NULL)
        budget_st = odnn_wino_prefetch(b);
    if (budget_st != NULL)
        return budget_st;
    if (b->imp == NULL || !b->imp->keep)
        odnn_block_reserve(c, v); /* kept blobs' weights are read in place */
    c->n_inputs = g->input_count(v);
    c->n_outputs = g->output_count(v);
    c->input_value = onednn_host->host_alloc(b->ctx->host_ctx, (c->n_inputs + 1) * sizeof(int), 0);
    c->output_value =
        onednn_host->host_alloc(b->ctx->host_ctx, (c->n_outputs + 1) * sizeof(int), 0);
    if (c->input_value == NULL || c->output_value == NULL)
        return odnn_oom();
    for (size_t i = 0; i < c->n_inputs; i++) {
        int64_t t = g->input(v, i);
        struct odnn_tinfo ti;
        if (!odnn_tensor(v, t, &ti) || !ti.known)
            return odnn_error(PL_CODE_UNSUPPORTED, "onednn: input '%s' has no static shape",
                              g->tensor_name(v, t));
        dnnl_memory_desc_t md;
        odnn_plain_md(&md, ti.ndim, ti.dims);
        if (ti.q8 || ti.dt == dnnl_s32)
            md.data_type = ti.dt;
        if (ti.boolean)
            md.data_type = dnnl_u8;
        int vi = odnn_new_value(b, t, ODNN_V_INPUT, &md);
        if (vi < 0)
            return odnn_oom();
        c->values[vi].boolean = ti.boolean;
        c->values[vi].ext = (int)i;
        c->values[vi].defined = 1;
        c->input_value[i] = vi;
    }
    size_t nodes = g->node_count(v);
    int team = omp_get_max_threads();
    size_t n_uses = 0, next_use = 0;
    struct odnn_last_use *uses = odnn_last_uses(b, &n_uses);
    for (size_t n = 0; n < nodes; n++) {
        pl_status *dst = NULL;
        for (; dst == NULL && n > 0 && next_use < n_uses && uses[next_use].node < n; next_use++)
            dst = odnn_constant_done(b, uses[next_use].tensor);
        if (dst != NULL) {
            onednn_host->host_free(b->ctx->host_ctx, uses);
            return dst;
        }
        if (b->done[n])
            continue;
        pl_status *ast = NULL;
        if (odnn_attn_begin(b, n, &ast) || ast != NULL) {
            if (ast != NULL) {
                onednn_host->host_free(b->ctx->host_ctx, uses);
                return ast;
            }
            continue; /* its nodes wait for the second product */
        }
        int one = odnn_node_alone(b, n, team);
        int first = c->n_steps;
        if (one)
            omp_set_num_threads(1);
        pl_status *st = odnn_emit(b, n);
        if (one)
            omp_set_num_threads(team);
        for (int k = first; k < b->c->n_steps; k++)
            b->c->steps[k].threads = one ? 1 : team;
        if (st != NULL) {
            onednn_host->host_free(b->ctx->host_ctx, uses);
            return st;
        }
        b->done[n] = 1;
    }
    pl_status *dst = NULL;
    for (; dst == NULL && next_use < n_uses; next_use++)
        dst = odnn_constant_done(b, uses[next_use].tensor);
    onednn_host->host_free(b->ctx->host_ctx, uses);
    if (dst == NULL)
        dst = odnn_pending_flush(b);
    if (dst != NULL)
        return dst;
    for (size_t i = 0; i < c->n_outputs; i++) {
        int64_t t = g->output(v, i);
        int vi = odnn_value_of(b, t);
        if (vi < 0 || !c->values[vi].defined)
            return odnn_error(PL_CODE_INTERNAL, "onednn: output '%s' is never written",
                              g->tensor_name(v, t));
        dnnl_memory_desc_t plain;
        odnn_plain_md(&plain, c->values[vi].md.ndims, c->values[vi].md.dims);
        struct odnn_tinfo ot;
        if (odnn_tensor(v, t, &ot) && (ot.q8 || ot.dt == dnnl_s32))
            plain.data_type = ot.dt;
        if (c->values[vi].kind == ODNN_V_TEMP && dnnl_memory_desc_equal(&plain, &c->values[vi].md)) {
            /* The producer writes straight into the caller's buffer. */
            c->values[vi].kind = ODNN_V_OUTPUT;
            c->values[vi].ext = (int)i;
            c->output_value[i] = vi;
            continue;
        }
        int out = odnn_new_value(b, -1, ODNN_V_OUTPUT, &plain);
        if (out < 0)
            return odnn_oom();
        c->values[out].ext = (int)i;
        c->output_value[i] = out;
        pl_status *st = odnn_reorder(b, vi, out, -1);
        if (st != NULL)
            return st;
    }
    return NULL;
}

static double odnn_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The CPU time of the whole process so far, in microseconds. */
static double odnn_process_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Header of the blob: see the file comment. All integers little-endian. */
#define ODNN_MAGIC "PLODNN\r\n"
#define ODNN_BLOB_VERSION 54u /* 2: decomposed LayerNormalization fused; 3: residual in place;
                                 4: options (Winograd, bf16); 5: word-wise checksum;
                                 6: Reshape/Transpose/Split are views, strided products;
                                 7: bf16 activations between bf16 layers;
                                 8: 1x1 + depthwise stride-2 fused;
                                 9: an eltwise algorithm once per post-op chain;
                                 10: swish/hardswish patterns, two-step eltwise ops
                                     (HardSigmoid, Selu), scalar Max/Min as clips;
                                 11: bf16 only in dense spatial convolutions
                                     without AMX;
                                 12: resampling steps, concats written in place;
                                 13: channels-last concats, batch normalization
                                     as a binary with per-channel weights;
                                 14: the module's own direct convolution
                                     (ODNN_S_DIRECT) below AVX-512;
                                 15: int8 QLinearConv, QuantizeLinear and
                                     DequantizeLinear alone;
                                 16: RMSNorm as the module's own kernel
                                     (ODNN_S_RMSNORM);
                                 17: dynamic int8 products: MatMulInteger,
                                     its Cast, DynamicQuantizeLinear
                                     (ODNN_S_DQL);
                                 18: Erf alone as the module's own kernel
                                     (ODNN_S_ERF);
                                 19: InstanceNormalization as the module's
                                     own kernel (ODNN_S_INORM);
                                 20: Expand as the module's own broadcast
                                     copy (ODNN_S_EXPAND);
                                 21: same-layout dense reorders as memcpy
                                     (ODNN_S_COPY);
                                 22: channels-last convolutions where blocks
                                     of 16 channels pad (odnn_conv_layout_any);
                                 23: Tile as a broadcast copy, Pad as the
                                     module's own copy (ODNN_S_PAD);
                                 24: a batch normalization's sole Relu fused;
                                 25: bf16 convolutions only with 64
                                     multiply-adds per value they convert;
                                 26: weight bytes 64-aligned in the blob
                                     (read in place: PL_CAP_KEEPS_BLOB);
                                 27: grouped convolutions of 2 or 4
                                     channels per group on the module's
                                     grouped kernel below AVX-512, and
                                     GELU's tanh form there as its own
                                     kernel (ODNN_S_GELUT);
                                 28: Where as the module's own select
                                     (ODNN_S_WHERE, bool inputs as u8),
                                     BLOOM's order of GELU's tanh form;
                                 29: constant f32 product weights with
                                     padded rows below AVX-512;
                                 30: the direct kernel's Winograd
                                     variant (transformed weights);
                                 31: max and average pooling as the
                                     module's own kernel (ODNN_S_OPOOL)
                                     below AVX-512, Resize
                                     (ODNN_S_ORESIZE) and Tanh
                                     (ODNN_S_TANH, not a post-op);
                                 32: swish and sigmoid in the direct
                                     kernel's epilogue;
                                 33: small products on the module's own
                                     kernel (ODNN_S_SMM), LRN (ODNN_S_LRN);
                                 34: grouped convolutions of whole 8-channel
                                     blocks on the direct kernel;
                                 35: copies between plain strided layouts
                                     that oneDNN only has its generic
                                     reorder for (ODNN_S_STRIDED);
                                 36: Winograd within a weight budget
                                     (odnn_wino_budget);
                                 37: one-row products by big constant
                                     matrices on gemm:jit, weights plain
                                     (odnn_gemv_pd);
                                 38: channel shuffles on the module's own
                                     loop (ODNN_S_SHUFFLE); 39: the own
                                     small product's packed B without
                                     denormals;
                                 40: bf16 convolutions that Winograd's
                                     F(4x4) runs faster stay f32 without
                                     AMX (odnn_wino_before_bf16);
                                 41: channels-last where a grouped
                                     convolution has no blocked kernel
                                     (odnn_grouped_unblocked);
                                 42: bf16 without AMX only from 32
                                     multiply-adds per value;
                                 43: no post-ops on simple_nchw:any
                                     (odnn_impl_is_ref);
                                 44: ai.plinth TableLookup8 as the module's
                                     own byte lookup (ODNN_S_LUT);
                                 45: com.microsoft QLinearAdd/QLinearMul of
                                     one shape as its own step (ODNN_S_QBIN);
                                 46: channel-blocked values into a
                                     channels-last piece on the module's
                                     own loop (ODNN_S_UNBLOCK);
                                 47: with AMX and precision = bf16, the
                                     convolutions that stay f32 take
                                     Winograd as under f32;
                                 48: QDQ pairs' zero points and constant
                                     MatMulInteger zero points as run-time
                                     operands (odnn_append_qdq);
                                 49: convolutions into at most 8 channels
                                     on the narrow kernel (onednn_narrow.c);
                                 50: dilated 3x3 convolutions by phase on
                                     Winograd (onednn_phase.c);
                                 51: attention (MatMul, scale, mask,
                                     Softmax, MatMul) as the module's own
                                     fused kernel on AVX-512 (ODNN_S_ATTN);
                                 52: Where(IsNaN(x), c, x) as the module's
                                     own step (ODNN_S_NANFILL), inside the
                                     fused attention after its Softmax
                                     (struct odnn_attn's safe);
                                 53: binaries whose broadcast only oneDNN's
                                     reference kernel takes as the module's
                                     own (ODNN_S_BBIN);
                                 54: inference batch normalization of a
                                     channels-last source as a depthwise
                                     1x1 convolution, of a channels-first
                                     one as the module's own step
                                     (ODNN_S_AFFINE) */
struct odnn_blob_header {
    char magic[8];
    uint32_t format_version;
    uint32_t endian; /* 0x01020304 as the writer stored it */
    char module_version[32];
    int32_t dnnl_major, dnnl_minor, dnnl_patch, isa;
    char dnnl_hash[48];
    uint64_t view_hash;
    uint32_t n_steps, n_weights;
    uint64_t md_size; /* sizeof(dnnl_memory_desc_t) */
    uint32_t options, reserved;
};

/* "winograd = auto, precision = bf16" for an options word. */
static void odnn_options_text(uint32_t o, char *buf, size_t size)
{
    snprintf(buf, size, "winograd = %s, precision = %s", (o & ODNN_OPT_WINOGRAD) ? "auto" : "no",
             (o & ODNN_OPT_BF16) ? "bf16" : "f32");
}

static void odnn_header_fill(struct odnn_blob_header *h, uint64_t view_hash)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, ODNN_MAGIC, 8);
    h->format_version = ODNN_BLOB_VERSION;
    h->endian = 0x01020304u;
    snprintf(h->module_version, sizeof h->module_version, "%s", ONEDNN_VERSION_STRING);
    const dnnl_version_t *dv = dnnl_version();
    h->dnnl_major = dv->major;
    h->dnnl_minor = dv->minor;
    h->dnnl_patch = dv->patch;
    snprintf(h->dnnl_hash, sizeof h->dnnl_hash, "%s", dv->hash != NULL ? dv->hash : "");
    h->isa = (int32_t)dnnl_get_effective_cpu_isa();
    h->view_hash = view_hash;
    h->md_size = sizeof(dnnl_memory_desc_t);
}

/* Checks a blob's header and framing; fills IMP. */
static pl_status *odnn_import_header(pl_module_ctx *ctx, const pl_graph_view *v,
                                    const unsigned char *blob, size_t bytes,
                                    struct odnn_import *imp, uint64_t *out_hash)
{
    struct odnn_blob_header h, want;
    if (blob == NULL || bytes < sizeof h + 8)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: import: malformed blob (%zu bytes, "
                                                    "shorter than a header)",
                          bytes);
    memcpy(&h, blob, sizeof h);
    if (memcmp(h.magic, ODNN_MAGIC, 8) != 0)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: import: malformed blob (bad magic: "
                                                    "not written by the onednn module)");
    uint64_t sum = PL_HASH_SEED, stored;
    pl_hash_bytes(&sum, blob, bytes - 8);
    memcpy(&stored, blob + bytes - 8, 8);
    if (sum != stored)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: import: malformed blob (checksum "
                                                    "mismatch: truncated or corrupt)");
    uint64_t hash;
    pl_status *st = odnn_view_hash(ctx, v, &hash);
    if (st != NULL)
        return st;
    odnn_header_fill(&want, hash);
    if (h.endian != want.endian || h.format_version != want.format_version ||
        h.md_size != want.md_size)
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob format %u, this module "
                                                "writes %u",
                          h.format_version, want.format_version);
    h.module_version[sizeof h.module_version - 1] = '\0';
    h.dnnl_hash[sizeof h.dnnl_hash - 1] = '\0';
    if (strcmp(h.module_version, want.module_version) != 0)
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob written by module version "
                                                "%s, this is %s",
                          h.module_version, want.module_version);
    if (h.dnnl_major != want.dnnl_major || h.dnnl_minor != want.dnnl_minor ||
        h.dnnl_patch != want.dnnl_patch || strcmp(h.dnnl_hash, want.dnnl_hash) != 0)
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob written with oneDNN "
                                                "%d.%d.%d (%s), this is %d.%d.%d (%s)",
                          h.dnnl_major, h.dnnl_minor, h.dnnl_patch, h.dnnl_hash, want.dnnl_major,
                          want.dnnl_minor, want.dnnl_patch, want.dnnl_hash);
    if (h.isa != want.isa) {
        char a[32], b2[32];
        snprintf(a, sizeof a, "0x%x", (unsigned)h.isa);
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob written for CPU ISA %s, "
                                                "oneDNN now dispatches to %s",
                          a, onednn_effective_isa(b2, sizeof b2));
    }
    uint32_t opts = odnn_options(ctx);
    if (h.options != opts) {
        char a[64], b2[64];
        odnn_options_text(h.options, a, sizeof a);
        odnn_options_text(opts, b2, sizeof b2);
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob written with %s, this "
                                                "instance has %s",
                          a, b2);
    }
    if (h.view_hash != hash)
        return odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: blob written for another "
                                                "subgraph (hash %016llx, this one %016llx)",
                          (unsigned long long)h.view_hash, (unsigned long long)hash);
    size_t body = bytes - 8 - sizeof h;
    if (h.n_steps > body / 4)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: import: malformed blob (%u steps "
                                                    "in %zu bytes)",
                          h.n_steps, body);
    imp->n_steps = h.n_steps;
    imp->kinds = (const uint32_t *)(const void *)(blob + sizeof h);
    imp->n_weights = h.n_weights;
    imp->next = 0;
    imp->weights = blob + sizeof h + 4 * (size_t)h.n_steps;
    imp->end = blob + bytes - 8;
    imp->base = blob;
    /* A core of ABI 1.6 keeps the blob until release (PL_CAP_KEEPS_BLOB). */
    imp->keep = PL_ABI_AT_LEAST(onednn_host, 1, 6);
    *out_hash = hash;
    return NULL;
}

/* Names the workers of the calling thread's OpenMP team pl-omp (for top -H
 * and perf sched). Done once per calling thread and team size.
 *
 * They ran at nice 10 until 2026-12, to give way to the CPU pool's threads
 * while libgomp's workers spun between parallel regions (wav2vec_fe 4.0 ms
 * a run instead of 0.6 under OMP_WAIT_POLICY=active). The runtime now
 * bounds that spin to [runtime] spin_us (GOMP_SPINCOUNT, runtime.c), and
 * the demotion measured nothing on a quiet machine (wav2vec_fe, crnn,
 * wav2vec2, gpt2, bert within noise at nice 0 and 10), but behind any
 * other busy process it starved the team: a worker at nice 10 beside one
 * spinning process gets about a tenth of its core, and every parallel
 * region's barrier waits for it (squeezebert 0.66 ms a run quiet, 18.6 ms
 * beside one busy loop at nice 10, 0.66 at nice 0; ONNX Runtime 0.81). */
static void odnn_team_yields(int threads)
{
    static _Thread_local int done_for;
    if (done_for == threads || threads < 2)
        return;
    done_for = threads;
#pragma omp parallel num_threads(threads)
    {
        if (omp_get_thread_num() != 0)
            pthread_setname_np(pthread_self(), "pl-omp");
    }
}

/* Makes the primitive of every step from its descriptor, spread over the
 * runtime's thread pool: making a primitive generates its JIT code, which is
 * most of what a compile or an import costs, and primitives are independent
 * (oneDNN's primitive creation is thread-safe). Each is made under the
 * OpenMP team size it was planned for, as the plan made its descriptor. */
struct odnn_make_job {
    pl_compiled *c;
    dnnl_status_t *status;
    pthread_t caller; /* the thread that compiles (and will run) */
};

/* Frees the OpenMP team a thread of the runtime's pool may have started,
 * unless it is CALLER. Making some primitives runs a parallel region
 * (oneDNN's parallel_nd inside dnnl_primitive_create), and a pool thread
 * that ran one keeps its team's worker for as long as it lives. libgomp
 * then manages more threads than there are CPUs, and from that moment
 * every worker of every team spins only 100 pauses before it sleeps
 * (its throttled spin, whatever GOMP_SPINCOUNT says): each parallel region
 * of a run wakes its worker through a futex. On the AVX-512 Xeon, 2
 * threads, timm's efficientformerv2_s0 ran 13.5-14.5 ms a run with 15,400
 * context switches over 50 runs in most processes, and 4.9-5.3 ms with 160
 * in the others (which pool thread made which primitive decides).
 * omp_pause_resource (OpenMP 5.0) ends the calling thread's team and
 * gives its workers back. */
static void odnn_release_team(pthread_t caller)
{
    if (!pthread_equal(pthread_self(), caller))
        omp_pause_resource(omp_pause_soft, omp_get_initial_device());
}

static void odnn_make_chunk(void *arg, size_t begin, size_t end, int worker)
{
    (void)worker;
    struct odnn_make_job *job = arg;
    int saved = omp_get_max_threads();
    for (size_t i = begin; i < end; i++) {
        struct odnn_step *s = &job->c->steps[i];
        if (s->pd == NULL) { /* the module's own kernel */
            job->status[i] = dnnl_success;
            continue;
        }
        int team = s->threads > 0 ? s->threads : saved;
        if (omp_get_max_threads() != team)
            omp_set_num_threads(team);
        job->status[i] = dnnl_primitive_create(&s->prim, s->pd);
        if (job->status[i] == dnnl_success && s->pd_tail != NULL)
            job->status[i] = dnnl_primitive_create(&s->prim_tail, s->pd_tail);
    }
    if (omp_get_max_threads() != saved)
        omp_set_num_threads(saved);
    odnn_release_team(job->caller);
}

static pl_status *odnn_make_primitives(struct odnn_build *b)
{
    pl_compiled *c = b->c;
    if (c->n_steps == 0)
        return NULL;
    dnnl_status_t *status =
        onednn_host->host_alloc(b->ctx->host_ctx, sizeof *status * (size_t)c->n_steps, 0);
    if (status == NULL)
        return odnn_oom();
    for (int i = 0; i < c->n_steps; i++) {
        const char *impl = NULL;
        if (c->steps[i].pd != NULL &&
            dnnl_primitive_desc_query(c->steps[i].pd, dnnl_query_impl_info_str, 0, &impl) ==
                dnnl_success &&
            odnn_gemm_warm_impl(impl)) {
            if (odnn_gemm_warm_start())
                odnn_warm_told(b, c->steps[i].node);
            break;
        }
    }
    struct odnn_make_job job = {.c = c, .status = status, .caller = pthread_self()};
    onednn_host->parallel_for(b->ctx->host_ctx, (size_t)c->n_steps, 1, odnn_make_chunk, &job);
    pl_status *st = NULL;
    for (int i = 0; i < c->n_steps && st == NULL; i++)
        if (status[i] != dnnl_success)
            st = odnn_dnnl(status[i], "dnnl_primitive_create", b->v, c->steps[i].node);
    odnn_free(b->ctx, status);
    for (int i = 0; i < c->n_steps; i++) {
        if (c->steps[i].pd != NULL)
            dnnl_primitive_desc_destroy(c->steps[i].pd);
        if (c->steps[i].pd_tail != NULL)
            dnnl_primitive_desc_destroy(c->steps[i].pd_tail);
        c->steps[i].pd = c->steps[i].pd_tail = NULL;
    }
    return st;
}

pl_status *onednn_sg_compile(pl_module_ctx *ctx, const pl_graph_view *subgraph,
                             const void *blob, size_t blob_bytes, pl_compiled **out_compiled)
{
    *out_compiled = NULL;
    pl_status *st = odnn_engine(ctx);
    if (st != NULL)
        return st;
    /* Primitives fix their thread count when they are made: make them for
     * the runtime's budget (the setting is per calling thread). */
    int threads = onednn_host->thread_count(ctx->host_ctx);
    if (omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
    struct odnn_import imp;
    uint64_t hash = 0;
    if (blob != NULL) {
        st = odnn_import_header(ctx, subgraph, blob, blob_bytes, &imp, &hash);
        if (st != NULL)
            return st;
    }
    struct odnn_build b = {.ctx = ctx, .v = subgraph, .imp = blob != NULL ? &imp : NULL, .conv_any = -1,
                           .defer_tensor = -1};
    b.c = onednn_host->host_alloc(ctx->host_ctx, sizeof *b.c, 0);
    if (b.c == NULL)
        return odnn_oom();
    memset(b.c, 0, sizeof *b.c);
    size_t nodes = onednn_host->graph->node_count(subgraph);
    b.done = onednn_host->host_alloc(ctx->host_ctx, nodes + 1, 0);
    if (b.done == NULL) {
        odnn_free(ctx, b.c);
        return odnn_oom();
    }
    memset(b.done, 0, nodes + 1);
    double t0 = odnn_now_ms(), t_hash, t_build, t_plan, t_bind, t_make;
    st = odnn_uses_build(ctx, subgraph, &b.u);
    /* Hashed before the build, which tells the core when it is done with
     * each constant (the hash reads them all). */
    bool hashed = blob != NULL;
    if (st == NULL && blob == NULL && odnn_hash_wanted(subgraph)) {
        st = odnn_view_hash(ctx, subgraph, &hash);
        hashed = true;
    }
    t_hash = odnn_now_ms();
    if (st == NULL)
        st = odnn_build_program(&b);
    t_build = odnn_now_ms();
    odnn_free(ctx, b.pending);
    odnn_free(ctx, b.wino_over);
    odnn_free(ctx, b.wino_bf16);
    odnn_free(ctx, b.postponed);
    odnn_wino_prefetch_free(&b);
    b.c->view_hash = hash;
    b.c->hashed = hashed;
    b.c->times.n = nodes;
    b.c->options = odnn_options(ctx);
    if (st == NULL && blob != NULL) {
        int same = imp.n_steps == (uint32_t)b.c->n_steps && imp.next == imp.n_weights &&
                   imp.weights == imp.end;
        for (int s = 0; same && s < b.c->n_steps; s++) {
            uint32_t k;
            memcpy(&k, (const unsigned char *)imp.kinds + 4 * (size_t)s, 4);
            same = k == b.c->steps[s].kind;
        }
        if (!same)
            st = odnn_error(PL_CODE_INCOMPATIBLE, "onednn: import: the blob's fusion plan (%u "
                                                  "steps, %u weights) is not the one this module "
                                                  "makes for the subgraph (%d steps, %d weights)",
                            imp.n_steps, imp.n_weights, b.c->n_steps, b.c->n_weights);
    }
    if (st == NULL)
        st = odnn_plan(&b);
    t_plan = odnn_now_ms();
    if (st == NULL)
        st = odnn_bind(&b);
    t_bind = odnn_now_ms();
    if (st == NULL)
        st = odnn_make_primitives(&b);
    t_make = odnn_now_ms();
    odnn_uses_free(ctx, &b.u);
    odnn_free(ctx, b.done);
    odnn_free(ctx, b.attn);
    if (st != NULL) {
        onednn_sg_release(ctx, b.c);
        return st;
    }
    int single = 0, in_place = 0, kept = 0;
    size_t weight_bytes = 0;
    for (int k = 0; k < b.c->n_steps; k++)
        single += b.c->steps[k].threads == 1 && threads > 1;
    for (int k = 0; k < b.c->n_weights; k++) {
        in_place += b.c->weights[k].borrowed == 1;
        kept += b.c->weights[k].borrowed == 2;
        weight_bytes += b.c->weights[k].bytes;
    }
    onednn_host->log_message(ctx->host_ctx, PL_LOG_DEBUG,
                             "%s %zu nodes into %d primitives (%d on one thread), %d in bf16, "
                             "%d weights of %zu B (%d read in place from the blob, %d from the "
                             "model), arena %zu B, scratchpad %zu B in %.2f ms (hash %.2f, "
                             "build %.2f, plan %.2f, bind %.2f, primitives %.2f)",
                             blob != NULL ? "imported" : "compiled", nodes, b.c->n_steps, single,
                             b.c->n_bf16,
                             b.c->n_weights, weight_bytes, in_place, kept, b.c->arena_bytes,
                             b.c->scratch_bytes, odnn_now_ms() - t0, t_hash - t0,
                             t_build - t_hash, t_plan - t_build, t_bind - t_plan,
                             t_make - t_bind);
    *out_compiled = b.c;
    return NULL;
}

static pl_status *odnn_run_arg(const pl_compiled *c, const char *what, size_t i,
                               const pl_tensor *t, const struct odnn_value *val)
{
    int plain = t->strides == NULL && (!PL_TENSOR_HAS(t, layout) || t->layout == NULL ||
                                       t->layout[0] == '\0');
    int64_t elems = 1;
    for (int32_t d = 0; d < t->ndim && t->shape != NULL; d++)
        elems *= t->shape[d];
    int64_t want = 1;
    for (int d = 0; d < val->md.ndims; d++)
        want *= val->md.dims[d];
    (void)c;
    pl_dtype dt = val->boolean                    ? PL_DTYPE_BOOL
                  : val->md.data_type == dnnl_u8  ? PL_DTYPE_U8
                  : val->md.data_type == dnnl_s8  ? PL_DTYPE_I8
                  : val->md.data_type == dnnl_s32 ? PL_DTYPE_I32
                                                  : PL_DTYPE_F32;
    if (!PL_DTYPE_EQ(t->dtype, dt) || (t->ndim > 0 && t->shape == NULL) || !plain ||
        elems != want || (t->data == NULL && elems > 0))
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: run: %s %zu is not a plain %s "
                                                    "tensor of the compiled shape",
                          what, i,
                          val->boolean                    ? "bool"
                          : val->md.data_type == dnnl_u8  ? "u8"
                          : val->md.data_type == dnnl_s8  ? "i8"
                          : val->md.data_type == dnnl_s32 ? "i32"
                                                          : "f32");
    return NULL;
}

/* Runs STEP when it is one of the module's own kernels (no primitive) on
 * a team of TEAM threads; 0 when it is not. Arguments in the order the
 * emission added them (odnn_arg). */
static int odnn_own_step(const struct odnn_step *step, int team)
{
    void *p[ODNN_MAX_ARGS] = {NULL};
    switch (step->kind) {
    case ODNN_S_RMSNORM: case ODNN_S_COPY: case ODNN_S_EXPAND: case ODNN_S_INORM:
    case ODNN_S_ERF: case ODNN_S_DQL: case ODNN_S_PAD: case ODNN_S_GELUT: case ODNN_S_WHERE:
    case ODNN_S_NANFILL: case ODNN_S_OPOOL: case ODNN_S_ORESIZE: case ODNN_S_TANH:
    case ODNN_S_STRIDED: case ODNN_S_SHUFFLE: case ODNN_S_BBIN: case ODNN_S_LUT: case ODNN_S_QBIN: case ODNN_S_UNBLOCK:
    case ODNN_S_PGATHER: case ODNN_S_PSCATTER: case ODNN_S_AFFINE:
        break;
    default:
        return 0;
    }
    for (int k = 0; k < step->n_args && k < ODNN_MAX_ARGS; k++)
        dnnl_memory_get_data_handle(step->exec[k].memory, &p[k]);
    switch (step->kind) {
    case ODNN_S_RMSNORM: /* SRC, DST, and SCALE when there is a gamma */
        odnn_rms_run(p[0], p[2], p[1], step->rows, step->cols, step->eps, team);
        break;
    case ODNN_S_COPY: /* SRC, DST */
        if (p[0] != p[1])
            memcpy(p[1], p[0], (size_t)step->rows);
        break;
    case ODNN_S_STRIDED: /* SRC, DST */
        odnn_strided_run(p[0], p[1], step->nd, step->xd, step->cd, step->ed, step->rows);
        break;
    case ODNN_S_PGATHER: /* SRC, DST */
        odnn_phase_gather(p[0], p[1], &step->phase, team);
        break;
    case ODNN_S_PSCATTER: /* SRC, DST */
        odnn_phase_scatter(p[0], p[1], &step->phase, team);
        break;
    case ODNN_S_UNBLOCK: /* SRC, DST */
        odnn_unblock_run(p[0], p[1], step->rows, step->chans, step->cols, step->xd[0],
                         step->ed[0], step->ed[1], step->xd[1], team);
        break;
    case ODNN_S_SHUFFLE: /* SRC, DST */
        odnn_shuffle_run(p[0], p[1], step->rows, step->chans, step->cols, step->xd[0],
                         step->xd[1], team);
        break;
    case ODNN_S_EXPAND: /* SRC, DST */
        odnn_expand_run(p[0], p[1], step->esize ? step->esize : 4, step->nd, step->xd, step->yd,
                        team);
        break;
    case ODNN_S_PAD: /* SRC, DST */
        odnn_pad_run(p[0], p[1], step->nd, step->xd, step->yd, step->begin, step->fill, team);
        break;
    case ODNN_S_AFFINE: /* SRC, DST, SCALE, SHIFT */
        odnn_affine_run(p[0], p[2], p[3], p[1], step->rows, step->cols, step->chans, step->relu,
                        team);
        break;
    case ODNN_S_INORM: /* SRC, DST, SCALE, SHIFT */
        odnn_inorm_run(p[0], p[2], p[3], p[1], step->rows, step->cols, step->chans, step->eps,
                       team);
        break;
    case ODNN_S_ERF: /* SRC, DST */
        odnn_erf_run(p[0], p[1], step->rows, team);
        break;
    case ODNN_S_NANFILL: /* SRC, DST: ROWS values */
        odnn_nan_fill_run(p[0], p[1], step->rows, step->fill, team);
        break;
    case ODNN_S_BBIN: /* SRC_0, SRC_1, DST */
        odnn_bbin_run((int)step->cols, p[0], p[1], p[2], step->nd, step->xd, step->ed, step->yd,
                      team);
        break;
    case ODNN_S_LUT: /* SRC, DST, WEIGHTS (the table): ROWS bytes */
        odnn_lut_run(p[0], p[2], p[1], step->rows, team);
        break;
    case ODNN_S_QBIN: /* SRC_0, SRC_1, DST: ROWS values */
        odnn_qbin_run(&step->qbin, p[0], p[1], p[2], step->rows, team);
        break;
    case ODNN_S_WHERE: /* SRC_0 (the condition), SRC_1, SRC_2, DST */
        odnn_where_run(p[0], p[1], p[2], p[3], step->nd, step->cd, step->xd, step->ed, step->yd,
                       team);
        break;
    case ODNN_S_OPOOL: /* SRC, DST */
        odnn_pool_run(&step->pool, p[0], p[1], team);
        break;
    case ODNN_S_ORESIZE: /* SRC, DST */
        odnn_resize_run(step->resize, p[0], p[1], team);
        break;
    case ODNN_S_TANH: /* SRC, DST: ROWS floats, the value's whole buffer */
        odnn_tanh_run(p[0], p[1], step->rows, team);
        break;
    case ODNN_S_GELUT: /* SRC, DST */
        odnn_gelu_tanh_run(p[0], p[1], step->rows, team);
        break;
    default: /* ODNN_S_DQL: X, Y, the scale, the zero point in u8 and s32 */
        odnn_dql_run(p[0], step->rows, p[1], p[2], p[3], p[4], team);
        break;
    }
    return 1;
}

/* Runs a sliced convolution (odnn_wino_slices): its primitive on each
 * slice of the batch in turn, the remainder's on the last. */
static dnnl_status_t odnn_run_slices(pl_compiled *c, const struct odnn_step *step)
{
    dnnl_exec_arg_t ex[ODNN_MAX_ARGS + 1];
    int n = step->n_args, at[2] = {-1, -1};
    memcpy(ex, step->exec, sizeof(dnnl_exec_arg_t) * (size_t)n);
    char *base[2] = {NULL, NULL};
    for (int a = 0; a < n; a++) {
        int k = step->arg[a] == DNNL_ARG_SRC ? 0 : step->arg[a] == DNNL_ARG_DST ? 1 : -1;
        if (k < 0)
            continue;
        at[k] = a;
        void *h = NULL;
        dnnl_memory_get_data_handle(step->exec[a].memory, &h);
        base[k] = h;
    }
    if (at[0] < 0 || at[1] < 0)
        return dnnl_invalid_arguments;
    for (int64_t i = 0; i < step->batch;) {
        int t = step->batch - i >= step->slice || step->tail == 0 ? 0 : 1;
        if (t == 0 && step->batch - i < step->slice)
            i = step->batch - step->slice; /* the last slice, overlapping */
        int64_t count = t ? step->tail : step->slice;
        for (int k = 0; k < 2; k++) {
            dnnl_memory_set_data_handle(step->slice_mem[t][k],
                                        base[k] + (size_t)i * step->slice_stride[k]);
            ex[at[k]].memory = step->slice_mem[t][k];
        }
        dnnl_memory_t scratch = t ? step->scratch_tail : step->scratch_mem;
        int nargs = n;
        if (scratch != NULL)
            ex[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, scratch};
        dnnl_status_t ds =
            dnnl_primitive_execute(t ? step->prim_tail : step->prim, c->stream, nargs, ex);
        if (ds != dnnl_success)
            return ds;
        i += count;
    }
    return dnnl_success;
}

static pl_status *odnn_run_bound(pl_module_ctx *ctx, pl_compiled *c, const pl_run_args *args,
                                 int solo);

/* Whether TEAM's arguments and SOLO's agree (the same layouts), and SOLO's
 * scratchpad fits the subgraph's. */
static int odnn_solo_fits(const pl_compiled *c, const struct odnn_step *st,
                          const_dnnl_primitive_desc_t team, const_dnnl_primitive_desc_t solo)
{
    for (int k = 0; k < st->n_args; k++) {
        const dnnl_memory_desc_t *a = dnnl_primitive_desc_query_md(team, dnnl_query_exec_arg_md,
                                                                   st->arg[k]);
        const dnnl_memory_desc_t *b = dnnl_primitive_desc_query_md(solo, dnnl_query_exec_arg_md,
                                                                   st->arg[k]);
        if (a == NULL || b == NULL || !dnnl_memory_desc_equal(a, b))
            return 0;
    }
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(solo, dnnl_query_scratchpad_md,
                                                                 0);
    size_t bytes = smd != NULL ? dnnl_memory_desc_get_size(smd) : 0;
    return bytes <= c->scratch_bytes;
}

/* The one-thread primitive of STEP (made on a team): oneDNN's same
 * implementation of the same descriptor and attributes, made while the
 * OpenMP setting is one thread (a primitive fixes its team when it is
 * made), its arguments in the same layouts. 1 when made. */
static int odnn_solo_step(pl_module_ctx *ctx, pl_compiled *c, struct odnn_step *st)
{
    const_dnnl_primitive_desc_t team = NULL;
    const_dnnl_primitive_attr_t attr = NULL;
    const char *name = NULL;
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    if (dnnl_primitive_get_primitive_desc(st->prim, &team) != dnnl_success ||
        dnnl_primitive_desc_get_attr(team, &attr) != dnnl_success ||
        dnnl_primitive_desc_query(team, dnnl_query_impl_info_str, 0, &name) != dnnl_success ||
        dnnl_primitive_desc_query(team, dnnl_query_primitive_kind, 0, &kind) != dnnl_success ||
        name == NULL)
        return 0;
    dnnl_primitive_desc_t pd = NULL;
    if (kind == dnnl_reorder) {
        /* (a reorder has no op descriptor: made from its two layouts) */
        const dnnl_memory_desc_t *src = dnnl_primitive_desc_query_md(team, dnnl_query_src_md, 0);
        const dnnl_memory_desc_t *dst = dnnl_primitive_desc_query_md(team, dnnl_query_dst_md, 0);
        const char *impl = NULL;
        if (src == NULL || dst == NULL ||
            dnnl_reorder_primitive_desc_create(&pd, src, ctx->engine, dst, ctx->engine, attr) !=
                dnnl_success)
            return 0;
        if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
            impl == NULL || strcmp(impl, name) != 0 || !odnn_solo_fits(c, st, team, pd)) {
            dnnl_primitive_desc_destroy(pd);
            return 0;
        }
    } else {
        const_dnnl_op_desc_t op = NULL;
        dnnl_primitive_desc_iterator_t it;
        if (dnnl_primitive_desc_query(team, dnnl_query_op_d, 0, &op) != dnnl_success ||
            op == NULL ||
            dnnl_primitive_desc_iterator_create(&it, op, attr, ctx->engine, NULL) != dnnl_success)
            return 0;
        do {
            dnnl_primitive_desc_t next = dnnl_primitive_desc_iterator_fetch(it);
            const char *impl = NULL;
            if (next != NULL &&
                dnnl_primitive_desc_query(next, dnnl_query_impl_info_str, 0, &impl) ==
                    dnnl_success &&
                impl != NULL && strcmp(impl, name) == 0 && odnn_solo_fits(c, st, team, next))
                pd = next;
            else if (next != NULL)
                dnnl_primitive_desc_destroy(next);
        } while (pd == NULL && dnnl_primitive_desc_iterator_next(it) == dnnl_success);
        dnnl_primitive_desc_iterator_destroy(it);
        if (pd == NULL)
            return 0;
    }
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    int ok = dnnl_primitive_create(&st->solo, pd) == dnnl_success;
    if (ok && smd != NULL && dnnl_memory_desc_get_size(smd) > 0) {
        ok = dnnl_memory_create(&st->solo_scratch, smd, ctx->engine, DNNL_MEMORY_NONE) ==
             dnnl_success;
        if (ok && c->scratch != NULL)
            dnnl_memory_set_data_handle(st->solo_scratch, c->scratch);
    }
    if (!ok && st->solo != NULL) {
        dnnl_primitive_destroy(st->solo);
        st->solo = NULL;
    }
    dnnl_primitive_desc_destroy(pd);
    return ok;
}

/* Makes the one-thread primitives of C's team steps (the first solo run:
 * onednn_pace.h); 1 when any was made or a step of the module's own runs
 * on the team (they take the team size at each run), else -1. A Winograd
 * step in batch slices stays on the team. */
static int odnn_solo_make(pl_module_ctx *ctx, pl_compiled *c)
{
    int saved = omp_get_max_threads(), any = 0, made = 0, prims = 0;
    double t0 = odnn_now_ms();
    omp_set_num_threads(1);
    for (int s = 0; s < c->n_steps; s++) {
        struct odnn_step *st = &c->steps[s];
        if (st->threads == 1)
            continue;
        if (st->prim == NULL) {
            any = 1; /* the module's own kernel */
        } else if (st->slice == 0 && st->solo == NULL) {
            prims++;
            made += odnn_solo_step(ctx, c, st);
        }
    }
    omp_set_num_threads(saved);
    onednn_host->log_message(ctx->host_ctx, PL_LOG_DEBUG,
                             "onednn: solo runs: %d of %d team primitives made for one thread "
                             "(%.1f ms)",
                             made, prims, odnn_now_ms() - t0);
    return any || made > 0 ? 1 : -1;
}

/* One OpenMP team in the process at a time (see odnn_release_team): the
 * team of the first thread that runs subgraphs (the core's home thread for
 * this module, an application's caller) stays; another thread that runs
 * one (the module's dedicated worker, when a second application thread
 * calls) gives its team back after each run. Two live teams of 2 on 2
 * CPUs threw libgomp into its throttled spin for both. The owner's exit
 * frees the place. */
static _Atomic uintptr_t odnn_team_owner;
static _Thread_local char odnn_team_token;
static pthread_key_t odnn_team_key;
static pthread_once_t odnn_team_once = PTHREAD_ONCE_INIT;
static int odnn_team_key_made;

static void odnn_team_owner_exits(void *token)
{
    uintptr_t self = (uintptr_t)token;
    atomic_compare_exchange_strong(&odnn_team_owner, &self, 0);
}

static void odnn_team_key_make(void)
{
    odnn_team_key_made = pthread_key_create(&odnn_team_key, odnn_team_owner_exits) == 0;
}

/* The key goes with the module: a thread that outlives the module's
 * unloading (a Python thread that made, ran and closed a runtime) would
 * otherwise call its destructor in unmapped code at its exit (a crash
 * there, /tmp/s74/unload.py). A deleted key's values are not destructed. */
__attribute__((destructor)) static void odnn_team_key_free(void)
{
    if (odnn_team_key_made) {
        pthread_key_delete(odnn_team_key);
        odnn_team_key_made = 0;
    }
}

static void odnn_team_settle(void)
{
    uintptr_t self = (uintptr_t)&odnn_team_token, none = 0;
    uintptr_t owner = atomic_load(&odnn_team_owner);
    if (owner == self)
        return;
    pthread_once(&odnn_team_once, odnn_team_key_make);
    if (owner == 0 && odnn_team_key_made &&
        atomic_compare_exchange_strong(&odnn_team_owner, &none, self)) {
        if (pthread_setspecific(odnn_team_key, (void *)self) != 0)
            atomic_store(&odnn_team_owner, 0); /* (nothing would clear it at exit) */
        return;
    }
    omp_pause_resource(omp_pause_soft, omp_get_initial_device());
}

pl_status *onednn_sg_run(pl_module_ctx *ctx, pl_compiled *c, const pl_run_args *args)
{
    if (c == NULL || args == NULL)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: run without a compiled subgraph or "
                                                    "args");
    pl_work_buf w = pl_work_pool_take(&ctx->work, odnn_work_bytes(c));
    if (w.p == NULL)
        return odnn_error(PL_CODE_OUT_OF_MEMORY, "onednn: out of memory for a run buffer of "
                                                 "%zu bytes", odnn_work_bytes(c));
    odnn_work_bind(c, w.p);
    /* Team or solo (onednn_pace.h): [onednn] solo = auto paces by the
     * run times, on always runs one thread a primitive, off never. */
    if (!c->team_counted) {
        c->team_counted = 1;
        c->n_team = 0;
        for (int s = 0; s < c->n_steps; s++)
            c->n_team += c->steps[s].threads != 1;
    }
    int team = c->n_team > 0 && onednn_host->thread_count(ctx->host_ctx) > 1;
    int solo = team && (ctx->solo == ODNN_PACE_SOLO || (ctx->solo == ODNN_PACE_AUTO && c->pace.solo));
    if (solo && c->solo_made == 0)
        c->solo_made = odnn_solo_make(ctx, c);
    solo = solo && c->solo_made > 0;
    int pace = team && ctx->solo == ODNN_PACE_AUTO;
    struct rusage r0 = {0}, r1 = {0};
    double t0 = pace ? odnn_now_ms() : 0;
    /* a team run long enough to tell: the process's CPU time over it too */
    int threads = onednn_host->thread_count(ctx->host_ctx);
    int busy_check = pace && !solo && c->pace.best_team_us >= ODNN_PACE_IDLE_MIN_US;
    double cpu0 = busy_check ? odnn_process_cpu_us() : 0;
    if (pace)
        getrusage(RUSAGE_THREAD, &r0);
    pl_status *st = odnn_run_bound(ctx, c, args, solo);
    if (pace && st == NULL) {
        getrusage(RUSAGE_THREAD, &r1);
        double us = (odnn_now_ms() - t0) * 1e3;
        long csw = r1.ru_nivcsw - r0.ru_nivcsw;
        /* a team that hardly ran beside its master is suspect like a
         * preempted one (odnn_pace_idle) */
        if (busy_check && odnn_pace_idle(odnn_process_cpu_us() - cpu0, us, threads))
            csw++;
        long before = c->pace.switches;
        odnn_pace_after(&c->pace, us, csw, solo, c->solo_made >= 0);
        if (before == 0 && c->pace.switches == 1) /* (the first switch only) */
            onednn_host->log_message(ctx->host_ctx, PL_LOG_DEBUG,
                                     "onednn: a subgraph of %d steps runs on one thread from "
                                     "now: its team was preempted or idle (%.0f us a run, the "
                                     "best %.0f)",
                                     c->n_steps, c->pace.team_ref_us, c->pace.best_team_us);
    }
    pl_work_pool_give(&ctx->work, w);
    if (team && !solo)
        odnn_team_settle();
    return st;
}

/* Runs step S of C with a team of TEAM threads (SOLO: through its
 * one-thread primitive where made). */
static pl_status *odnn_run_step(pl_compiled *c, int s, int team, int solo)
{
    const struct odnn_step *step = &c->steps[s];
    if (odnn_own_step(step, team))
        return NULL;
    if (step->kind == ODNN_S_ATTN) { /* Q, K, V, DST, then the mask, condition, bias */
        void *p[7] = {NULL};
        for (int k = 0; k < step->n_args && k < 7; k++)
            dnnl_memory_get_data_handle(step->exec[k].memory, &p[k]);
        const struct odnn_attn *a = step->attn;
        int at = 4;
        const void *mask = a->has_mask ? p[at++] : NULL;
        const void *cond = a->has_select ? p[at++] : NULL;
        const void *bias = a->has_bias ? p[at++] : NULL;
        odnn_attn_run(a, p[0], p[1], p[2], mask, cond, bias, p[3], team, c->scratch);
        return NULL;
    }
    if (step->kind == ODNN_S_SMM) { /* SRC, WEIGHTS, DST, and BIAS when there is one */
        void *p[4] = {NULL};
        for (int k = 0; k < step->n_args && k < 4; k++)
            dnnl_memory_get_data_handle(step->exec[k].memory, &p[k]);
        odnn_smm_run(step->smm, p[0], p[1], p[3], p[2], team, c->scratch);
        return NULL;
    }
    if (step->direct != NULL) {
        /* arguments: SRC and DST values, WEIGHTS the packed weight */
        void *src = NULL, *dst = NULL;
        dnnl_memory_get_data_handle(step->exec[0].memory, &src);
        dnnl_memory_get_data_handle(step->exec[2].memory, &dst);
        odnn_direct_run(step->direct, src, c->weights[step->ref[1]].data, dst, team, c->scratch);
        return NULL;
    }
    int nargs = step->n_args + (step->scratch_mem != NULL);
    dnnl_status_t ds;
    if (solo && step->solo != NULL) {
        dnnl_exec_arg_t ex[ODNN_MAX_ARGS + 1];
        memcpy(ex, step->exec, (size_t)step->n_args * sizeof *ex);
        nargs = step->n_args;
        if (step->solo_scratch != NULL)
            ex[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, step->solo_scratch};
        ds = dnnl_primitive_execute(step->solo, c->stream, nargs, ex);
    } else {
        ds = step->slice > 0 ? odnn_run_slices(c, step)
                             : dnnl_primitive_execute(step->prim, c->stream, nargs, step->exec);
    }
    if (ds != dnnl_success)
        return odnn_error(PL_CODE_INTERNAL, "onednn: run: primitive %d of %d failed: %s", s,
                          c->n_steps, dnnl_status2str(ds));
    return NULL;
}

/* Runs C, its temporaries bound to a run buffer (onednn_sg_run checked
 * that C and ARGS are given); SOLO: every step on one thread, through the
 * one-thread primitives where made. */
static pl_status *odnn_run_bound(pl_module_ctx *ctx, pl_compiled *c, const pl_run_args *args,
                                 int solo)
{
    if (args->n_inputs != c->n_inputs || args->n_outputs != c->n_outputs ||
        (args->n_inputs > 0 && args->inputs == NULL) ||
        (args->n_outputs > 0 && args->outputs == NULL))
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: run: %zu inputs and %zu outputs "
                                                    "given, the subgraph has %zu and %zu",
                          args->n_inputs, args->n_outputs, c->n_inputs, c->n_outputs);
    for (int i = 0; i < c->n_values; i++) {
        struct odnn_value *val = &c->values[i];
        int own = odnn_owner(c, i);
        const struct odnn_value *o = &c->values[own];
        const pl_tensor *t = NULL;
        const char *what = NULL;
        if (o->kind == ODNN_V_INPUT)
            t = &args->inputs[o->ext], what = "input";
        else if (o->kind == ODNN_V_OUTPUT)
            t = &args->outputs[o->ext], what = "output";
        if (t == NULL)
            continue;
        if (own == i) {
            pl_status *st = odnn_run_arg(c, what, (size_t)o->ext, t, o);
            if (st != NULL)
                return st;
        }
        dnnl_memory_set_data_handle(val->mem, (char *)t->data + t->byte_offset + val->view_off);
    }
    /* oneDNN's OpenMP team takes the runtime's one thread budget; the
     * setting is per calling thread, so it is made on every run. */
    int threads = onednn_host->thread_count(ctx->host_ctx);
    if (omp_get_max_threads() != threads)
        omp_set_num_threads(threads);
    odnn_team_yields(threads);
    int team = threads;
    pl_node_times_run_begin(&c->times);
    uint64_t t = c->times.timing ? pl_node_times_now() : 0;
    for (int s = 0; s < c->n_steps; s++) {
        const struct odnn_step *step = &c->steps[s];
        int want = solo ? 1 : step->threads > 0 ? step->threads : threads;
        if (want != team)
            omp_set_num_threads(team = want);
        pl_status *st = odnn_run_step(c, s, team, solo);
        if (st != NULL) {
            if (team != threads)
                omp_set_num_threads(threads);
            return st;
        }
        if (c->times.timing) {
            uint64_t now = pl_node_times_now();
            pl_node_times_add(&c->times, step->node, now - t);
            t = now;
        }
    }
    if (team != threads)
        omp_set_num_threads(threads);
    dnnl_status_t ds = dnnl_stream_wait(c->stream);
    if (ds != dnnl_success)
        return odnn_error(PL_CODE_INTERNAL, "onednn: run: stream wait failed: %s",
                          dnnl_status2str(ds));
    pl_node_times_run_end(&c->times);
    return NULL;
}

/* ---- node times (ABI 1.17) ------------------------------------------------------- */

int onednn_sg_times(pl_module_ctx *ctx, pl_compiled *c, int op, pl_node_time *out, size_t n)
{
    if (c == NULL)
        return 0;
    pl_node_times *t = &c->times;
    if (op == PL_TIMES_START && t->times == NULL) {
        size_t k = t->n > 0 ? t->n : 1;
        t->run_ns = onednn_host->host_alloc(ctx->host_ctx, k * sizeof *t->run_ns, 0);
        t->times = onednn_host->host_alloc(ctx->host_ctx, k * sizeof *t->times, 0);
        if (t->run_ns == NULL || t->times == NULL) {
            odnn_free(ctx, t->run_ns);
            odnn_free(ctx, t->times);
            t->run_ns = NULL;
            t->times = NULL;
        }
    }
    return pl_node_times_op(t, op, out, n);
}

/* ---- export ------------------------------------------------------------------ */

/* The blob's checksum is pl_hash_bytes over all of it but the last 8
 * bytes; the writer hashes its pieces as they go (pl_hash_stream). */
struct odnn_writer {
    pl_blob_sink sink;
    void *sink_ctx;
    pl_hash_stream sum;
    size_t pos; /* bytes written so far */
};

static void odnn_put(struct odnn_writer *w, const void *p, size_t n)
{
    w->sink(w->sink_ctx, p, n);
    pl_hash_stream_add(&w->sum, p, n);
    w->pos += n;
}

pl_status *onednn_sg_export(pl_module_ctx *ctx, pl_compiled *c, pl_blob_sink sink,
                            void *sink_ctx)
{
    (void)ctx;
    if (c == NULL || sink == NULL)
        return odnn_error(PL_CODE_INVALID_ARGUMENT, "onednn: export without a compiled subgraph "
                                                    "or sink");
    if (!c->hashed)
        return odnn_error(PL_CODE_FAILED_PRECONDITION,
                          "onednn: export of a subgraph compiled without its hash (the core "
                          "said it would not be exported)");
    struct odnn_blob_header h;
    odnn_header_fill(&h, c->view_hash);
    h.options = c->options;
    h.n_steps = (uint32_t)c->n_steps;
    h.n_weights = (uint32_t)c->n_weights;
    struct odnn_writer w = {.sink = sink, .sink_ctx = sink_ctx};
    pl_hash_stream_init(&w.sum);
    odnn_put(&w, &h, sizeof h);
    for (int s = 0; s < c->n_steps; s++)
        odnn_put(&w, &c->steps[s].kind, 4);
    for (int i = 0; i < c->n_weights; i++) {
        uint64_t bytes = c->weights[i].bytes;
        odnn_put(&w, &c->weights[i].md, sizeof c->weights[i].md);
        odnn_put(&w, &bytes, 8);
        static const unsigned char zeros[64];
        odnn_put(&w, zeros, odnn_weight_pad(w.pos));
        odnn_put(&w, c->weights[i].data, c->weights[i].bytes);
    }
    uint64_t sum = pl_hash_stream_end(&w.sum);
    sink(sink_ctx, &sum, 8);
    return NULL;
}
