/* fuzz_graph.c — load → partition → plan → run on generated graphs. The
 * input bytes drive a generator, in the manner of the differential tester's
 * (tests/difftest): they pick graph inputs, then ops one after another
 * (elementwise, broadcasting binaries, MatMul, Gemm, Conv, pools,
 * normalisation, Softmax, Transpose, Reshape, Concat, reductions, Slice)
 * with their attributes and constant operands (Constant nodes), mostly
 * well-formed and sometimes not (an axis out of range, a zero stride, a
 * shape that does not broadcast). The model is written in Plinth's JSON
 * format, loaded, and run with deterministic inputs on example_acc
 * (at most 3 nodes a subgraph) and cpu, so that subgraph boundaries,
 * fallbacks, constant folding and the planner's reuse are all exercised.
 * A run may fail with a status; it may not crash, leak or trip a
 * sanitizer. */
#define _GNU_SOURCE
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FG_MAX_TENSORS 48
#define FG_MAX_NODES 24
#define FG_TEXT (1 << 17)

typedef struct fg_tensor {
    int rank;
    long dims[4];
} fg_tensor;

typedef struct fg {
    const uint8_t *data;
    size_t size, at;
    fg_tensor t[FG_MAX_TENSORS];
    int n_tensors, n_inputs, n_nodes, n_consts;
    char nodes[FG_TEXT];
    size_t nlen;
    bool overflow;
} fg;

/* The next byte of the input (0 once it runs out: the graph ends). */
static unsigned fg_byte(fg *g)
{
    return g->at < g->size ? g->data[g->at++] : 0;
}

static unsigned fg_pick(fg *g, unsigned n)
{
    return n ? fg_byte(g) % n : 0;
}

static void fg_emit(fg *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g->nodes + g->nlen, sizeof g->nodes - g->nlen, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof g->nodes - g->nlen)
        g->overflow = true;
    else
        g->nlen += (size_t)n;
}

static long fg_numel(const fg_tensor *t)
{
    long n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Appends ", " between the JSON values of a list. */
static const char *fg_sep(int i)
{
    return i ? ", " : "";
}

/* A Constant node named cK of SHAPE (RANK dims) with small values from the
 * input; returns its tensor name index K. */
static int fg_const(fg *g, int rank, const long *dims, bool i64)
{
    int k = g->n_consts++;
    long n = 1;
    fg_emit(g, "%s{\"name\": \"const%d\", \"op\": \"Constant\", \"inputs\": [], "
               "\"outputs\": [\"c%d\"], \"attributes\": {\"value\": {\"tensor\": "
               "{\"dtype\": \"%s\", \"shape\": [",
            g->n_nodes++ ? ",\n" : "", k, k, i64 ? "i64" : "f32");
    for (int i = 0; i < rank; i++) {
        fg_emit(g, "%s%ld", fg_sep(i), dims[i]);
        n *= dims[i];
    }
    fg_emit(g, "], \"values\": [");
    for (long i = 0; i < n; i++) {
        if (i64)
            fg_emit(g, "%s%ld", fg_sep((int)i), dims[rank] /* filled by caller */);
        else
            fg_emit(g, "%s%.3f", fg_sep((int)i), ((int)fg_byte(g) - 128) / 64.0);
    }
    fg_emit(g, "]}}}}");
    return k;
}

/* A Constant i64 vector of N values. */
static int fg_const_ints(fg *g, int n, const long *values)
{
    int k = g->n_consts++;
    fg_emit(g, "%s{\"name\": \"const%d\", \"op\": \"Constant\", \"inputs\": [], "
               "\"outputs\": [\"c%d\"], \"attributes\": {\"value\": {\"tensor\": "
               "{\"dtype\": \"i64\", \"shape\": [%d], \"values\": [",
            g->n_nodes++ ? ",\n" : "", k, k, n);
    for (int i = 0; i < n; i++)
        fg_emit(g, "%s%ld", fg_sep(i), values[i]);
    fg_emit(g, "]}}}}");
    return k;
}

/* Starts node number N's text: op, inputs (names written by the caller). */
static void fg_node_begin(fg *g, const char *op)
{
    fg_emit(g, "%s{\"name\": \"n%d\", \"op\": \"%s\", \"inputs\": [",
            g->n_nodes++ ? ",\n" : "", g->n_nodes, op);
}

/* Ends a node: its output is tensor t<index>, of SHAPE when known. */
static void fg_node_end(fg *g, const char *attrs, const fg_tensor *shape)
{
    int out = g->n_tensors;
    fg_emit(g, "], \"outputs\": [\"t%d\"]%s%s%s}", out, attrs[0] ? ", \"attributes\": {" : "",
            attrs, attrs[0] ? "}" : "");
    if (out < FG_MAX_TENSORS) {
        g->t[out] = *shape;
        g->n_tensors++;
    }
}

static int fg_tensor_pick(fg *g)
{
    /* Recent tensors more often: deeper graphs. */
    unsigned b = fg_byte(g);
    int n = g->n_tensors;
    return b & 1 ? n - 1 - (int)((b >> 1) % (unsigned)(n < 3 ? n : 3)) : (int)((b >> 1) % (unsigned)n);
}

/* An attribute value that is usually right (GOOD) and sometimes not. */
static long fg_maybe_bad(fg *g, long good, long bad)
{
    return fg_pick(g, 16) == 0 ? bad : good;
}

static void fg_op(fg *g)
{
    static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Abs", "Neg",
                                        "Sqrt", "Exp", "Identity", "Floor", "Erf",
                                        "Softplus", "HardSigmoid"};
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
    int a = fg_tensor_pick(g);
    fg_tensor x = g->t[a], y = x;
    char attrs[512] = "";
    switch (fg_pick(g, 16)) {
    case 0: case 1: {
        const char *op = unary[fg_pick(g, sizeof unary / sizeof unary[0])];
        fg_node_begin(g, op);
        fg_emit(g, "\"t%d\"", a);
        fg_node_end(g, "", &y);
        break;
    }
    case 2: case 3: {
        const char *op = binary[fg_pick(g, sizeof binary / sizeof binary[0])];
        /* The other operand: a tensor of the same shape, a constant of the
         * last axis (broadcast), a scalar, or any tensor at all. */
        unsigned how = fg_pick(g, 4);
        int b = -1;
        char other[32];
        if (how == 0) {
            for (int i = g->n_tensors - 1; i >= 0 && b < 0; i--)
                if (i != a && g->t[i].rank == x.rank &&
                    memcmp(g->t[i].dims, x.dims, sizeof(long) * (size_t)x.rank) == 0)
                    b = i;
            if (b < 0)
                b = a;
            snprintf(other, sizeof other, "\"t%d\"", b);
        } else if (how == 1 && x.rank > 0) {
            long d[5] = {x.dims[x.rank - 1]};
            snprintf(other, sizeof other, "\"c%d\"", fg_const(g, 1, d, false));
        } else if (how == 2) {
            long d[5] = {0};
            snprintf(other, sizeof other, "\"c%d\"", fg_const(g, 0, d, false));
        } else {
            snprintf(other, sizeof other, "\"t%d\"", fg_tensor_pick(g));
        }
        fg_node_begin(g, op);
        fg_emit(g, "\"t%d\", %s", a, other);
        fg_node_end(g, "", &y);
        break;
    }
    case 4: case 5: { /* MatMul with a constant [k, n] */
        if (x.rank < 1)
            break;
        long k = x.dims[x.rank - 1];
        long d[5] = {fg_maybe_bad(g, k, k + 1), 1 + fg_pick(g, 8)};
        int c = fg_const(g, 2, d, false);
        fg_node_begin(g, "MatMul");
        fg_emit(g, "\"t%d\", \"c%d\"", a, c);
        y.dims[y.rank - 1] = d[1];
        if (x.rank == 1)
            y.rank = 1, y.dims[0] = d[1];
        fg_node_end(g, "", &y);
        break;
    }
    case 6: { /* Gemm on a 2-D tensor, transB sometimes, bias sometimes */
        if (x.rank != 2)
            break;
        long n = 1 + fg_pick(g, 8);
        bool trans_b = fg_pick(g, 2);
        long d[5] = {trans_b ? n : x.dims[1], trans_b ? x.dims[1] : n};
        int c = fg_const(g, 2, d, false);
        long bd[5] = {n};
        int bias = fg_pick(g, 2) ? fg_const(g, 1, bd, false) : -1;
        fg_node_begin(g, "Gemm");
        fg_emit(g, "\"t%d\", \"c%d\"", a, c);
        if (bias >= 0)
            fg_emit(g, ", \"c%d\"", bias);
        snprintf(attrs, sizeof attrs, "\"transB\": {\"int\": %d}, \"alpha\": {\"float\": 0.5}",
                 trans_b);
        y.dims[1] = n;
        fg_node_end(g, attrs, &y);
        break;
    }
    case 7: case 8: { /* Conv on NCHW */
        if (x.rank != 4)
            break;
        long c = x.dims[1];
        long group = (c % 2 == 0 && fg_pick(g, 3) == 0) ? (fg_pick(g, 2) ? c : 2) : 1;
        long m = group * (1 + fg_pick(g, 3));
        long kh = 1 + fg_pick(g, 3), kw = 1 + fg_pick(g, 3);
        long s = fg_maybe_bad(g, 1 + fg_pick(g, 2), 0);
        long dil = 1 + fg_pick(g, 2);
        long p = fg_pick(g, 2);
        long d[5] = {m, c / group, kh, kw};
        int w = fg_const(g, 4, d, false);
        long bd[5] = {m};
        int bias = fg_pick(g, 2) ? fg_const(g, 1, bd, false) : -1;
        fg_node_begin(g, "Conv");
        fg_emit(g, "\"t%d\", \"c%d\"", a, w);
        if (bias >= 0)
            fg_emit(g, ", \"c%d\"", bias);
        snprintf(attrs, sizeof attrs,
                 "\"kernel_shape\": {\"ints\": [%ld, %ld]}, \"strides\": {\"ints\": [%ld, %ld]}, "
                 "\"dilations\": {\"ints\": [%ld, %ld]}, \"pads\": {\"ints\": [%ld, %ld, %ld, %ld]}, "
                 "\"group\": {\"int\": %ld}",
                 kh, kw, s, s, dil, dil, p, p, p, p, group);
        y.dims[1] = m;
        for (int i = 0; i < 2; i++) {
            long k = i ? kw : kh;
            long span = x.dims[2 + i] + 2 * p - dil * (k - 1) - 1;
            y.dims[2 + i] = s > 0 && span >= 0 ? span / s + 1 : 0;
        }
        if (y.dims[2] <= 0 || y.dims[3] <= 0)
            y.dims[2] = y.dims[3] = 1; /* refused at load; the shape is moot */
        fg_node_end(g, attrs, &y);
        break;
    }
    case 9: { /* pools */
        if (x.rank != 4)
            break;
        unsigned kind = fg_pick(g, 3);
        if (kind == 2) {
            fg_node_begin(g, "GlobalAveragePool");
            fg_emit(g, "\"t%d\"", a);
            y.dims[2] = y.dims[3] = 1;
            fg_node_end(g, "", &y);
            break;
        }
        long k = 1 + fg_pick(g, 3), s = 1 + fg_pick(g, 2);
        snprintf(attrs, sizeof attrs,
                 "\"kernel_shape\": {\"ints\": [%ld, %ld]}, \"strides\": {\"ints\": [%ld, %ld]}",
                 k, k, s, s);
        fg_node_begin(g, kind ? "AveragePool" : "MaxPool");
        fg_emit(g, "\"t%d\"", a);
        for (int i = 2; i < 4; i++)
            y.dims[i] = x.dims[i] >= k ? (x.dims[i] - k) / s + 1 : 1;
        fg_node_end(g, attrs, &y);
        break;
    }
    case 10: { /* BatchNormalization */
        if (x.rank < 2)
            break;
        long d[5] = {x.dims[1]};
        int sc = fg_const(g, 1, d, false), b = fg_const(g, 1, d, false);
        int mean = fg_const(g, 1, d, false);
        /* a variance that is positive: values are in [-2, 2), squared by Abs */
        int var = fg_const(g, 1, d, false);
        fg_node_begin(g, "Abs");
        fg_emit(g, "\"c%d\"", var);
        fg_emit(g, "], \"outputs\": [\"v%d\"]}", var);
        fg_node_begin(g, "BatchNormalization");
        fg_emit(g, "\"t%d\", \"c%d\", \"c%d\", \"c%d\", \"v%d\"", a, sc, b, mean, var);
        fg_node_end(g, "\"epsilon\": {\"float\": 0.01}", &y);
        break;
    }
    case 11: { /* Softmax / LogSoftmax on some axis */
        long axis = fg_maybe_bad(g, x.rank ? (long)fg_pick(g, (unsigned)x.rank) - (fg_pick(g, 2) ? x.rank : 0) : 0, 7);
        snprintf(attrs, sizeof attrs, "\"axis\": {\"int\": %ld}", axis);
        fg_node_begin(g, fg_pick(g, 2) ? "Softmax" : "LogSoftmax");
        fg_emit(g, "\"t%d\"", a);
        fg_node_end(g, attrs, &y);
        break;
    }
    case 12: { /* Transpose */
        if (x.rank < 2)
            break;
        int perm[4] = {0, 1, 2, 3};
        for (int i = x.rank - 1; i > 0; i--) {
            int j = (int)fg_pick(g, (unsigned)i + 1), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
        int n = snprintf(attrs, sizeof attrs, "\"perm\": {\"ints\": [");
        for (int i = 0; i < x.rank; i++) {
            n += snprintf(attrs + n, sizeof attrs - (size_t)n, "%s%d", fg_sep(i), perm[i]);
            y.dims[i] = x.dims[perm[i]];
        }
        snprintf(attrs + n, sizeof attrs - (size_t)n, "]}");
        fg_node_begin(g, "Transpose");
        fg_emit(g, "\"t%d\"", a);
        fg_node_end(g, attrs, &y);
        break;
    }
    case 13: { /* Reshape to [first, -1] or flat */
        long numel = fg_numel(&x);
        long shape[2] = {x.rank ? x.dims[0] : 1, -1};
        bool flat = fg_pick(g, 2);
        if (flat)
            shape[0] = fg_maybe_bad(g, numel, numel + 1);
        int c = fg_const_ints(g, flat ? 1 : 2, shape);
        fg_node_begin(g, "Reshape");
        fg_emit(g, "\"t%d\", \"c%d\"", a, c);
        y.rank = flat ? 1 : 2;
        y.dims[0] = shape[0];
        if (!flat)
            y.dims[1] = shape[0] ? numel / shape[0] : 0;
        fg_node_end(g, "", &y);
        break;
    }
    case 14: { /* Concat with itself, or Reduce* */
        if (x.rank < 1)
            break;
        long axis = (long)fg_pick(g, (unsigned)x.rank);
        if (fg_pick(g, 2)) {
            snprintf(attrs, sizeof attrs, "\"axis\": {\"int\": %ld}", fg_maybe_bad(g, axis, -9));
            fg_node_begin(g, "Concat");
            fg_emit(g, "\"t%d\", \"t%d\"", a, a);
            y.dims[axis] *= 2;
        } else {
            bool keep = fg_pick(g, 2);
            snprintf(attrs, sizeof attrs, "\"axes\": {\"ints\": [%ld]}, \"keepdims\": {\"int\": %d}",
                     axis, keep);
            static const char *const reduce[] = {"ReduceMean", "ReduceMax", "ReduceMin",
                                                 "ReduceL2"};
            fg_node_begin(g, reduce[fg_pick(g, 4)]);
            fg_emit(g, "\"t%d\"", a);
            if (keep) {
                y.dims[axis] = 1;
            } else {
                for (int i = (int)axis; i < x.rank - 1; i++)
                    y.dims[i] = x.dims[i + 1];
                y.rank--;
            }
        }
        fg_node_end(g, attrs, &y);
        break;
    }
    default: { /* Slice along one axis */
        if (x.rank < 1)
            break;
        long axis = (long)fg_pick(g, (unsigned)x.rank);
        long dim = x.dims[axis];
        long start = (long)fg_pick(g, (unsigned)dim), end = start + 1 + (long)fg_pick(g, (unsigned)(dim - start));
        long st[1] = {start}, en[1] = {fg_maybe_bad(g, end, -100)}, ax[1] = {axis};
        int cs = fg_const_ints(g, 1, st), ce = fg_const_ints(g, 1, en), ca = fg_const_ints(g, 1, ax);
        fg_node_begin(g, "Slice");
        fg_emit(g, "\"t%d\", \"c%d\", \"c%d\", \"c%d\"", a, cs, ce, ca);
        y.dims[axis] = end - start;
        fg_node_end(g, "", &y);
        break;
    }
    }
}

/* The model text: inputs from the first bytes, then ops until the bytes or
 * the node budget run out; the outputs are the last tensor and, sometimes,
 * one more. */
static bool fg_generate(fg *g, char *json, size_t cap)
{
    g->n_inputs = 1 + (int)fg_pick(g, 2);
    for (int i = 0; i < g->n_inputs; i++) {
        fg_tensor *t = &g->t[g->n_tensors++];
        t->rank = 1 + (int)fg_pick(g, 4);
        for (int d = 0; d < t->rank; d++)
            t->dims[d] = 1 + (long)fg_pick(g, 6);
    }
    while (g->at < g->size && g->n_nodes < FG_MAX_NODES && g->n_tensors < FG_MAX_TENSORS)
        fg_op(g);
    if (g->overflow)
        return false;
    size_t n = 0;
    n += (size_t)snprintf(json + n, cap - n,
                          "{\"format\": \"plinth-graph\", \"version\": 1, "
                          "\"opset_import\": [{\"domain\": \"\", \"version\": 13}], "
                          "\"inputs\": [");
    for (int i = 0; i < g->n_inputs; i++)
        n += (size_t)snprintf(json + n, cap - n, "%s\"t%d\"", fg_sep(i), i);
    int last = g->n_tensors - 1;
    n += (size_t)snprintf(json + n, cap - n, "], \"outputs\": [\"t%d\"", last);
    if (last > 1 && g->size % 3 == 0)
        n += (size_t)snprintf(json + n, cap - n, ", \"t%d\"", last / 2);
    n += (size_t)snprintf(json + n, cap - n, "], \"tensors\": [");
    for (int i = 0; i < g->n_inputs; i++) {
        n += (size_t)snprintf(json + n, cap - n, "%s{\"name\": \"t%d\", \"dtype\": \"f32\", \"shape\": [",
                              fg_sep(i), i);
        for (int d = 0; d < g->t[i].rank; d++)
            n += (size_t)snprintf(json + n, cap - n, "%s%ld", fg_sep(d), g->t[i].dims[d]);
        n += (size_t)snprintf(json + n, cap - n, "]}");
    }
    n += (size_t)snprintf(json + n, cap - n, "], \"nodes\": [\n");
    if (n + g->nlen + 16 >= cap)
        return false;
    memcpy(json + n, g->nodes, g->nlen);
    n += g->nlen;
    snprintf(json + n, cap - n, "]}\n");
    return true;
}

/* Runs S once on inputs whose every element is a small value from its
 * index, as the session declares them (f32 only; at most 2 inputs and 4
 * outputs, which is all the generator makes). */
static void fg_run(pl_session *s)
{
    size_t n_in = pl_session_input_count(s), n_out = pl_session_output_count(s);
    if (n_in > 2 || n_out > 4)
        return;
    pl_io in[2], out[4];
    float *bufs[2] = {NULL, NULL};
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    bool ok = true;
    for (size_t i = 0; ok && i < n_in; i++) {
        pl_dtype dt;
        int32_t ndim;
        const int64_t *dims;
        pl_session_input_type(s, i, &dt, &ndim, &dims);
        long numel = 1;
        for (int32_t d = 0; d < ndim; d++)
            numel *= dims[d] > 0 ? (long)dims[d] : 0;
        ok = dt.code == PL_DTYPE_F32.code && dt.bits == 32 && numel <= (1L << 20);
        bufs[i] = ok ? malloc((size_t)numel * sizeof(float) + 1) : NULL;
        ok = ok && bufs[i] != NULL;
        for (long e = 0; ok && e < numel; e++)
            bufs[i][e] = (float)((e * 7 + (long)i) % 11 - 5) / 4.0f;
        in[i] = (pl_io){.name = pl_session_input_name(s, i),
                        .tensor = {.data = bufs[i], .ndim = ndim, .dtype = dt,
                                   .shape = (int64_t *)dims,
                                   .struct_size = sizeof(pl_tensor)}};
    }
    for (size_t o = 0; o < n_out; o++)
        out[o].name = pl_session_output_name(s, o);
    if (ok) {
        pl_status *rs = pl_session_run(s, in, n_in, out, n_out);
        if (rs == NULL)
            for (size_t o = 0; o < n_out; o++)
                pl_buffer_free(out[o].tensor.data);
        pl_status_free(rs);
    }
    free(bufs[0]);
    free(bufs[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fg g;
    static char json[FG_TEXT + 8192];
    memset(&g, 0, sizeof g);
    g.data = data;
    g.size = size;
    if (!fg_generate(&g, json, sizeof json))
        return 0;
    pl_runtime *rt = fz_runtime();
    const char *path = fz_write((const uint8_t *)json, strlen(json), ".json");
    pl_model *model = NULL;
    pl_status *st = pl_model_load(rt, path, &model);
    unlink(path);
    bool verbose = getenv("PLINTH_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "%s\nload: %s\n", json, st ? pl_status_message(st) : "ok");
    if (st != NULL) {
        pl_status_free(st);
        return 0;
    }
    pl_session *s = NULL;
    st = pl_session_create(model, NULL, &s);
    if (verbose)
        fprintf(stderr, "session: %s\n", st ? pl_status_message(st) : "ok");
    if (st == NULL) {
        fg_run(s);
        pl_session_destroy(s);
    }
    pl_status_free(st);
    pl_model_destroy(model);
    return 0;
}
