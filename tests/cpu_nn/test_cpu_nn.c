/* test_cpu_nn.c — the cpu module's convolution and pooling kernels, driven
 * the way the core drives them: a one-node graph whose output shape the
 * core's opset infers, a view of it, a pl_node_desc, then get_kernel and
 * kernel_run through the module's table (with the workspace the kernel asks
 * for). Every case runs with PL_REQ_WRITE and PL_REQ_ADD_TO (and, for Conv,
 * with Relu and Clip fused by kernel_fuse) and is compared
 * with a naive reference loop written here from ONNX's definitions (in
 * double), to 1e-4 of the sum of the magnitudes of the terms. Linked against
 * the core's object library. Usage: test_cpu_nn CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"

#define TN_MAX_SP 3
#define TN_MAX_ATTRS 8
#define TN_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void tn_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void tn_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#define CHECK(cond, ...)                              \
    do {                                              \
        if (!(cond))                                  \
            tn_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define CHECK_OK(expr)                                                               \
    do {                                                                             \
        pl_status *tn_st_ = (expr);                                                  \
        if (tn_st_ != NULL)                                                          \
            tn_fail(__FILE__, __LINE__, "%s failed: %s", #expr,                      \
                    pl_status_message(tn_st_));                                      \
    } while (0)

/* ---- the module ---------------------------------------------------------- */

static pl_runtime *tn_rt;
static pl_module *tn_mod;

/* A runtime whose only module is the staged cpu module, on THREADS threads
 * (more than this machine may have: chunks then interleave). */
static void tn_setup(const char *stage_dir, int threads)
{
    char dir[] = "/tmp/plinth-cpu-nn-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_cpu.so\nthreads = %d\n", stage_dir, threads);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    CHECK_OK(pl_runtime_create(&o, &tn_rt));
    unlink(ini);
    rmdir(dir);
    long idx = pl_runtime_find_module(tn_rt, "cpu");
    CHECK(idx >= 0, "no cpu module in %s", stage_dir);
    tn_mod = tn_rt->modules[idx];
    CHECK(tn_mod->status == PL_MODULE_LOADED && tn_mod->ctx != NULL,
          "cpu module not loaded: %s", tn_mod->reason);
}

static void tn_teardown(void)
{
    pl_runtime_destroy(tn_rt);
}

/* ---- cases --------------------------------------------------------------- */

typedef struct tn_attr {
    const char *name;
    char kind;              /* 'i' int, 'I' ints, 's' string */
    int64_t i;
    int64_t ints[2 * TN_MAX_SP + 2];
    int n;
    const char *s;
} tn_attr;

#define AI(NAME, V) {.name = (NAME), .kind = 'i', .i = (V)}
#define AS(NAME, V) {.name = (NAME), .kind = 's', .s = (V)}
#define AIS(NAME, ...)                                                            \
    {.name = (NAME), .kind = 'I', .ints = {__VA_ARGS__},                         \
     .n = (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))}

/* One node: op, X's shape (rank 3 to 5), W's (convolutions), bias, whether
 * MaxPool's Indices output is wanted, attributes, opset (0: 13). */
typedef struct tn_case {
    int rank;
    int64_t x[TN_MAX_SP + 2];
    int64_t w[TN_MAX_SP + 2];
    int bias;
    int indices;
    int n_attrs;
    tn_attr attrs[TN_MAX_ATTRS];
    int opset;
} tn_case;

#define X3(a, b, c) .rank = 3, .x = {a, b, c}
#define X4(a, b, c, d) .rank = 4, .x = {a, b, c, d}
#define X5(a, b, c, d, e) .rank = 5, .x = {a, b, c, d, e}
#define W(...) .w = {__VA_ARGS__}
#define ATTRS(...)                                                         \
    .attrs = {__VA_ARGS__},                                                \
    .n_attrs = (int)(sizeof((tn_attr[]){__VA_ARGS__}) / sizeof(tn_attr))

static const tn_attr *tn_find(const tn_case *c, const char *name)
{
    for (int a = 0; a < c->n_attrs; a++)
        if (strcmp(c->attrs[a].name, name) == 0)
            return &c->attrs[a];
    return NULL;
}

static int64_t tn_int(const tn_case *c, const char *name, int64_t dflt)
{
    const tn_attr *a = tn_find(c, name);
    return a ? a->i : dflt;
}

/* ints attribute NAME value I, or DFLT when absent. */
static int64_t tn_ints(const tn_case *c, const char *name, int i, int64_t dflt)
{
    const tn_attr *a = tn_find(c, name);
    return a ? a->ints[i] : dflt;
}

static const char *tn_str(const tn_case *c, const char *name, const char *dflt)
{
    const tn_attr *a = tn_find(c, name);
    return a ? a->s : dflt;
}

/* ---- one-node graphs ----------------------------------------------------- */

typedef struct tn_node {
    const char *op;
    const tn_case *c;
    pl_graph *g;
    pl_graph_view *view;
    size_t n_in, n_out;
    pl_tensor in[3];
    pl_tensor out[2];
    pl_node_desc desc;
} tn_node;

static void tn_describe(const pl_graph *g, pl_tid t, pl_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->device = (pl_device){PL_DEVICE_CPU, 0};
    out->ndim = -1;
    if (t == PL_TID_NONE)
        return;
    const pl_graph_tensor *gt = pl_graph_get_tensor(g, t);
    out->dtype = gt->dtype;
    out->ndim = gt->ndim;
    out->shape = gt->dims;
}

static bool tn_is_conv(const char *op)
{
    return strncmp(op, "Conv", 4) == 0;
}

/* Infers the shapes of N's graph, views node NID (named NAME) and fills
 * N's description of it for the module. */
static void tn_node_describe(tn_node *n, pl_nid nid, const char *name, int opset)
{
    CHECK_OK(pl_opset_infer(tn_rt->opset, n->g));
    CHECK_OK(pl_graph_view_create(n->g, &nid, 1, &n->view));
    const pl_graph_node *gn = pl_graph_get_node(n->g, nid);
    n->n_in = gn->n_inputs;
    n->n_out = gn->n_outputs;
    for (size_t i = 0; i < gn->n_inputs; i++)
        tn_describe(n->g, gn->inputs[i], &n->in[i]);
    for (size_t o = 0; o < gn->n_outputs; o++)
        tn_describe(n->g, gn->outputs[o], &n->out[o]);
    n->desc = (pl_node_desc){
        .header = PL_ABI_HEADER_INIT(pl_node_desc),
        .name = name,
        .op = n->op,
        .domain = "",
        .opset_version = opset,
        .graph = n->view,
        .node_index = 0,
        .n_inputs = n->n_in,
        .inputs = n->in,
        .n_outputs = n->n_out,
        .outputs = n->out,
    };
}

/* The dtype of the float tensors tn_node_build makes (case_dtypes). */
static pl_dtype tn_dtype = {PL_TYPE_FLOAT, 32, 1};

/* Builds the graph of C for OP, infers its shapes and describes its node. */
static void tn_node_build(const char *op, const tn_case *c, tn_node *n)
{
    memset(n, 0, sizeof *n);
    n->op = op;
    n->c = c;
    int opset = c->opset ? c->opset : 13;
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", opset));
    const char *names[3] = {"x", "w", "b"};
    int64_t bias_len = strcmp(op, "ConvTranspose") == 0
                           ? c->w[1] * tn_int(c, "group", 1)
                           : c->w[0];
    size_t n_in = tn_is_conv(op) ? (c->bias ? 3 : 2) : 1;
    for (size_t i = 0; i < n_in; i++) {
        pl_tid t;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, names[i], &t));
        const int64_t *dims = i == 0 ? c->x : i == 1 ? c->w : &bias_len;
        int rank = i == 2 ? 1 : c->rank;
        CHECK_OK(pl_graph_set_type(n->g, t, tn_dtype, rank, dims, NULL));
        CHECK_OK(pl_graph_add_input(n->g, t));
    }
    const char *outs[2] = {"y", "ind"};
    size_t n_out = c->indices ? 2 : 1;
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "node", op, "", names, n_in, outs, n_out, &nid));
    for (int a = 0; a < c->n_attrs; a++) {
        const tn_attr *at = &c->attrs[a];
        if (at->kind == 'i')
            CHECK_OK(pl_graph_attr_int(n->g, nid, at->name, at->i));
        else if (at->kind == 's')
            CHECK_OK(pl_graph_attr_string(n->g, nid, at->name, at->s, strlen(at->s)));
        else
            CHECK_OK(pl_graph_attr_ints(n->g, nid, at->name, at->ints, (size_t)at->n));
    }
    for (size_t o = 0; o < n_out; o++)
        CHECK_OK(pl_graph_add_output(n->g, pl_graph_find_tensor(n->g, outs[o])));
    CHECK_OK(pl_graph_validate(n->g));
    tn_node_describe(n, nid, "node", opset);
}

static void tn_node_free(tn_node *n)
{
    pl_graph_view_destroy(n->view);
    pl_graph_destroy(n->g);
}

static pl_kernel *tn_kernel(const tn_node *n, size_t *out_ws)
{
    pl_kernel *k = NULL;
    pl_status *st = tn_mod->api.get_kernel(tn_mod->ctx, 0, &n->desc, &k, out_ws);
    CHECK(st == NULL, "get_kernel(%s) failed: %s", n->op, pl_status_message(st));
    CHECK(k != NULL, "get_kernel(%s): no kernel", n->op);
    return k;
}

/* ---- buffers and runs ---------------------------------------------------- */

static uint64_t tn_seed = 0x9e3779b97f4a7c15ull;

/* Uniform in [-2, 2). */
static float tn_random(void)
{
    tn_seed = tn_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(tn_seed >> 40) / (double)(1ull << 24) * 4.0 - 2.0);
}

static size_t tn_elements(const pl_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

/* Runs kernel K on INS with outputs OUTS (n_out of them); WS bytes of
 * workspace are allocated for the call when the kernel asked for any. */
static pl_status *tn_run(pl_kernel *k, size_t n_in, const pl_tensor *ins, size_t n_out,
                         pl_tensor *outs, const pl_output_request *reqs, size_t ws)
{
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
    void *buf = ws ? aligned_alloc(64, (ws + 63) / 64 * 64) : NULL;
    CHECK(ws == 0 || buf != NULL, "out of memory");
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args),
                        .run = &rc,
                        .n_inputs = n_in,
                        .inputs = ins,
                        .n_outputs = n_out,
                        .outputs = outs,
                        .requests = reqs,
                        .workspace = buf,
                        .workspace_bytes = ws};
    pl_status *st = tn_mod->api.kernel_run(tn_mod->ctx, k, &args);
    free(buf);
    return st;
}

/* ---- reference loops ----------------------------------------------------- */

/* The geometry of the window of C along spatial axis D, for input size IN
 * and the inferred output size OUT: stride, dilation, kernel and begin pad
 * (and *pe, the end pad). */
typedef struct tn_geom {
    int nsp;
    int64_t in[TN_MAX_SP], out[TN_MAX_SP], k[TN_MAX_SP], s[TN_MAX_SP], d[TN_MAX_SP];
    int64_t pb[TN_MAX_SP], pe[TN_MAX_SP];
} tn_geom;

/* Conv and pooling: ONNX's auto_pad puts the odd pad at the end for
 * SAME_UPPER and at the start for SAME_LOWER. */
static void tn_geom_forward(const tn_node *n, tn_geom *g)
{
    const tn_case *c = n->c;
    const char *ap = tn_str(c, "auto_pad", "NOTSET");
    g->nsp = c->rank - 2;
    for (int i = 0; i < g->nsp; i++) {
        g->in[i] = c->x[i + 2];
        g->out[i] = n->out[0].shape[i + 2];
        g->k[i] = tn_is_conv(n->op) ? c->w[i + 2] : tn_ints(c, "kernel_shape", i, 1);
        g->s[i] = tn_ints(c, "strides", i, 1);
        g->d[i] = tn_ints(c, "dilations", i, 1);
        if (strncmp(ap, "SAME", 4) == 0) {
            int64_t total = (g->out[i] - 1) * g->s[i] + (g->k[i] - 1) * g->d[i] + 1 - g->in[i];
            if (total < 0)
                total = 0;
            g->pb[i] = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
        } else if (strcmp(ap, "VALID") == 0) {
            g->pb[i] = g->pe[i] = 0;
        } else {
            g->pb[i] = tn_ints(c, "pads", i, 0);
            g->pe[i] = tn_ints(c, "pads", i + g->nsp, 0);
        }
    }
}

/* ConvTranspose: with output_shape or SAME, total padding is what makes the
 * output that size; ONNX's rule puts the odd pad at the end for SAME_UPPER,
 * at the start otherwise. */
static void tn_geom_transpose(const tn_node *n, tn_geom *g)
{
    const tn_case *c = n->c;
    const char *ap = tn_str(c, "auto_pad", "NOTSET");
    g->nsp = c->rank - 2;
    for (int i = 0; i < g->nsp; i++) {
        g->in[i] = c->x[i + 2];
        g->out[i] = n->out[0].shape[i + 2];
        g->k[i] = c->w[i + 2];
        g->s[i] = tn_ints(c, "strides", i, 1);
        g->d[i] = tn_ints(c, "dilations", i, 1);
        if (tn_find(c, "output_shape") != NULL || strncmp(ap, "SAME", 4) == 0) {
            int64_t total = g->s[i] * (g->in[i] - 1) + tn_ints(c, "output_padding", i, 0) +
                            (g->k[i] - 1) * g->d[i] + 1 - g->out[i];
            /* An output_shape beyond the full result: no pads, the extra
             * elements at the end (ONNX Runtime's rule). */
            if (total < 0)
                total = 0;
            g->pb[i] = strcmp(ap, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
        } else {
            g->pb[i] = strcmp(ap, "VALID") == 0 ? 0 : tn_ints(c, "pads", i, 0);
        }
    }
}

/* Index I as per-axis indices over DIMS (rank NSP). */
static void tn_unravel(int64_t i, const int64_t *dims, int nsp, int64_t *idx)
{
    for (int d = nsp - 1; d >= 0; d--) {
        idx[d] = i % dims[d];
        i /= dims[d];
    }
}

static int64_t tn_prod(const int64_t *dims, int nsp)
{
    int64_t p = 1;
    for (int d = 0; d < nsp; d++)
        p *= dims[d];
    return p;
}

/* Conv: Y[n, m, o] = B[m] + sum over c of group, taps t of X[n, c, o*s - pb + t*d] W[m, c, t]. */
static void tn_ref_conv(const tn_node *n, const float *x, const float *w, const float *b,
                        double *ref, double *scale)
{
    const tn_case *c = n->c;
    tn_geom g;
    tn_geom_forward(n, &g);
    int64_t group = tn_int(c, "group", 1), N = c->x[0], C = c->x[1], M = c->w[0];
    int64_t cg = C / group, mg = M / group;
    int64_t ip = tn_prod(g.in, g.nsp), op = tn_prod(g.out, g.nsp), kp = tn_prod(g.k, g.nsp);
    int64_t o[TN_MAX_SP], t[TN_MAX_SP];
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t p = 0; p < op; p++) {
                tn_unravel(p, g.out, g.nsp, o);
                double sum = b ? b[m] : 0.0, mag = fabs(sum);
                int64_t grp = m / mg;
                for (int64_t ci = 0; ci < cg; ci++)
                    for (int64_t kk = 0; kk < kp; kk++) {
                        tn_unravel(kk, g.k, g.nsp, t);
                        int64_t off = 0;
                        int inside = 1;
                        for (int d = 0; d < g.nsp; d++) {
                            int64_t i = o[d] * g.s[d] - g.pb[d] + t[d] * g.d[d];
                            inside = inside && i >= 0 && i < g.in[d];
                            off = off * g.in[d] + i;
                        }
                        if (!inside)
                            continue;
                        double v = (double)x[(nn * C + grp * cg + ci) * ip + off] *
                                   (double)w[(m * cg + ci) * kp + kk];
                        sum += v;
                        mag += fabs(v);
                    }
                ref[(nn * M + m) * op + p] = sum;
                scale[(nn * M + m) * op + p] = mag;
            }
}

/* ConvTranspose: X[n, c, i] W[c, m, t] adds to Y[n, g*mg + m, i*s - pb + t*d]. */
static void tn_ref_conv_transpose(const tn_node *n, const float *x, const float *w,
                                  const float *b, double *ref, double *scale)
{
    const tn_case *c = n->c;
    tn_geom g;
    tn_geom_transpose(n, &g);
    int64_t group = tn_int(c, "group", 1), N = c->x[0], C = c->x[1], mg = c->w[1];
    int64_t M = mg * group, cg = C / group;
    int64_t ip = tn_prod(g.in, g.nsp), op = tn_prod(g.out, g.nsp), kp = tn_prod(g.k, g.nsp);
    for (int64_t i = 0; i < N * M * op; i++) {
        double v = b ? b[(i / op) % M] : 0.0;
        ref[i] = v;
        scale[i] = fabs(v);
    }
    int64_t in_idx[TN_MAX_SP], t[TN_MAX_SP];
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t ci = 0; ci < C; ci++)
            for (int64_t p = 0; p < ip; p++) {
                tn_unravel(p, g.in, g.nsp, in_idx);
                double xv = x[(nn * C + ci) * ip + p];
                for (int64_t m = 0; m < mg; m++)
                    for (int64_t kk = 0; kk < kp; kk++) {
                        tn_unravel(kk, g.k, g.nsp, t);
                        int64_t off = 0;
                        int inside = 1;
                        for (int d = 0; d < g.nsp; d++) {
                            int64_t o = in_idx[d] * g.s[d] - g.pb[d] + t[d] * g.d[d];
                            inside = inside && o >= 0 && o < g.out[d];
                            off = off * g.out[d] + o;
                        }
                        if (!inside)
                            continue;
                        double v = xv * (double)w[(ci * mg + m) * kp + kk];
                        int64_t at = (nn * M + (ci / cg) * mg + m) * op + off;
                        ref[at] += v;
                        scale[at] += fabs(v);
                    }
            }
}

/* MaxPool and AveragePool; IND receives the flat index of the first
 * maximum (including batch and channel; with storage_order 1 the offset
 * within the plane column-major, the first spatial axis fastest). */
static void tn_ref_pool(const tn_node *n, const float *x, double *ref, double *scale,
                        int64_t *ind)
{
    const tn_case *c = n->c;
    tn_geom g;
    tn_geom_forward(n, &g);
    int is_max = strcmp(n->op, "MaxPool") == 0;
    int include = (int)tn_int(c, "count_include_pad", 0);
    int col_major = tn_int(c, "storage_order", 0) == 1;
    int64_t planes = c->x[0] * c->x[1];
    int64_t ip = tn_prod(g.in, g.nsp), op = tn_prod(g.out, g.nsp), kp = tn_prod(g.k, g.nsp);
    int64_t o[TN_MAX_SP], t[TN_MAX_SP];
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t p = 0; p < op; p++) {
            tn_unravel(p, g.out, g.nsp, o);
            double best = -INFINITY, sum = 0, mag = 0;
            int64_t best_at = -1, count = 0;
            for (int64_t kk = 0; kk < kp; kk++) {
                tn_unravel(kk, g.k, g.nsp, t);
                int64_t off = 0;
                int inside = 1, in_pad = 1;
                for (int d = 0; d < g.nsp; d++) {
                    int64_t i = o[d] * g.s[d] - g.pb[d] + t[d] * g.d[d];
                    inside = inside && i >= 0 && i < g.in[d];
                    in_pad = in_pad && i >= -g.pb[d] && i < g.in[d] + g.pe[d];
                    off = off * g.in[d] + i;
                }
                count += include ? in_pad : inside;
                if (!inside)
                    continue;
                double v = x[pl * ip + off];
                if (best_at < 0 || v > best) {
                    int64_t at = off;
                    if (col_major) {
                        int64_t i[TN_MAX_SP], scale = 1;
                        tn_unravel(off, g.in, g.nsp, i);
                        at = 0;
                        for (int d = 0; d < g.nsp; d++) {
                            at += i[d] * scale;
                            scale *= g.in[d];
                        }
                    }
                    best = v;
                    best_at = pl * ip + at;
                }
                sum += v;
                mag += fabs(v);
            }
            ref[pl * op + p] = is_max ? best : sum / (double)count;
            scale[pl * op + p] = is_max ? fabs(best) : mag / (double)count;
            if (ind)
                ind[pl * op + p] = best_at;
        }
}

static void tn_ref_global(const tn_node *n, const float *x, double *ref, double *scale)
{
    const tn_case *c = n->c;
    int is_max = strcmp(n->op, "GlobalMaxPool") == 0;
    int64_t planes = c->x[0] * c->x[1], ip = tn_prod(c->x + 2, c->rank - 2);
    for (int64_t pl = 0; pl < planes; pl++) {
        double best = -INFINITY, sum = 0, mag = 0;
        for (int64_t i = 0; i < ip; i++) {
            double v = x[pl * ip + i];
            best = v > best ? v : best;
            sum += v;
            mag += fabs(v);
        }
        ref[pl] = is_max ? best : sum / (double)ip;
        scale[pl] = is_max ? fabs(best) : mag / (double)ip;
    }
}

/* ---- checking one case ------------------------------------------------- */

static void tn_compare(const char *op, int ci, const char *what, const float *got,
                       const double *ref, const double *scale, const float *before, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double want = ref[i] + (before ? (double)before[i] : 0.0);
        double tol = 1e-4 * (scale[i] + (before ? fabs(before[i]) : 0.0)) + 1e-6;
        CHECK(fabs((double)got[i] - want) <= tol,
              "%s case %d (%s): element %zu is %.9g, expected %.9g (tolerance %.3g)", op, ci,
              what, i, (double)got[i], want, tol);
    }
}

/* The reference of node N (its op's loop) on inputs IN. */
static void tn_reference(const tn_node *n, float *const *in, double *ref, double *scale,
                         int64_t *ind)
{
    const char *op = n->op;
    const float *b = n->c->bias ? in[2] : NULL;
    if (strcmp(op, "Conv") == 0)
        tn_ref_conv(n, in[0], in[1], b, ref, scale);
    else if (strcmp(op, "ConvTranspose") == 0)
        tn_ref_conv_transpose(n, in[0], in[1], b, ref, scale);
    else if (strncmp(op, "Global", 6) == 0)
        tn_ref_global(n, in[0], ref, scale);
    else
        tn_ref_pool(n, in[0], ref, scale, ind);
}

/* Runs case C of OP with each request and compares with its reference. */
static void tn_check(const char *op, int ci, const tn_case *c)
{
    tn_node n;
    tn_node_build(op, c, &n);
    size_t ws = 0;
    pl_kernel *k = tn_kernel(&n, &ws);
    float *in[3] = {0};
    pl_tensor ins[3];
    for (size_t i = 0; i < n.n_in; i++) {
        size_t cnt = tn_elements(&n.in[i]);
        in[i] = malloc((cnt ? cnt : 1) * sizeof(float));
        CHECK(in[i] != NULL, "out of memory");
        for (size_t j = 0; j < cnt; j++)
            in[i][j] = tn_random();
        ins[i] = n.in[i];
        ins[i].data = in[i];
    }
    size_t count = tn_elements(&n.out[0]);
    double *ref = malloc(count * sizeof *ref), *scale = malloc(count * sizeof *scale);
    int64_t *ind_ref = malloc(count * sizeof *ind_ref);
    float *out = malloc((count + 16) * sizeof *out), *before = malloc(count * sizeof *before);
    int64_t *ind = malloc(count * sizeof *ind);
    CHECK(ref && scale && ind_ref && out && before && ind, "out of memory");
    tn_reference(&n, in, ref, scale, ind_ref);

    pl_tensor outs[2] = {n.out[0], n.out[1]};
    outs[0].data = out;
    outs[1].data = ind;
    /* A guard past the end catches writes beyond the output. */
    for (int j = 0; j < 16; j++)
        out[count + (size_t)j] = 12345.0f;
    pl_output_request reqs[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    for (size_t i = 0; i < count; i++)
        out[i] = NAN;
    CHECK_OK(tn_run(k, n.n_in, ins, n.n_out, outs, reqs, ws));
    tn_compare(op, ci, "write", out, ref, scale, NULL, count);
    for (int j = 0; j < 16; j++)
        CHECK(out[count + (size_t)j] == 12345.0f, "%s case %d: wrote past the output", op, ci);
    if (c->indices)
        for (size_t i = 0; i < count; i++)
            CHECK(ind[i] == ind_ref[i], "%s case %d: index %zu is %lld, expected %lld", op, ci,
                  i, (long long)ind[i], (long long)ind_ref[i]);

    for (size_t i = 0; i < count; i++)
        before[i] = out[i] = tn_random();
    reqs[1] = PL_REQ_NULL;
    reqs[0] = PL_REQ_ADD_TO;
    CHECK_OK(tn_run(k, n.n_in, ins, n.n_out, outs, reqs, ws));
    tn_compare(op, ci, "add_to", out, ref, scale, before, count);
    /* Without the workspace it asked for, the kernel still runs. */
    if (ws > 0) {
        reqs[0] = PL_REQ_WRITE;
        CHECK_OK(tn_run(k, n.n_in, ins, n.n_out, outs, reqs, 0));
        tn_compare(op, ci, "no workspace", out, ref, scale, NULL, count);
    }
    tn_mod->api.kernel_release(tn_mod->ctx, k);
    for (size_t i = 0; i < n.n_in; i++)
        free(in[i]);
    free(ref);
    free(scale);
    free(ind_ref);
    free(out);
    free(before);
    free(ind);
    tn_node_free(&n);
}

static void tn_check_all(const char *op, const tn_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tn_check(op, (int)i, &cases[i]);
}

/* ---- the cases ---------------------------------------------------------- */

static const tn_case tn_conv_cases[] = {
    /* 0: 3x3, stride 1, pad 1, bias */
    {X4(1, 8, 10, 9), W(16, 8, 3, 3), .bias = 1, ATTRS(AIS("pads", 1, 1, 1, 1))},
    /* 1: asymmetric pads, strides 2 and 3, 3x2 kernel, batch 2 */
    {X4(2, 5, 11, 12), W(7, 5, 3, 2), ATTRS(AIS("pads", 0, 1, 2, 1), AIS("strides", 2, 3))},
    /* 2: groups */
    {X4(1, 8, 9, 9), W(12, 4, 3, 3), .bias = 1,
     ATTRS(AI("group", 2), AIS("pads", 1, 1, 1, 1))},
    /* 3: depthwise 3x3, stride 1 */
    {X4(2, 16, 13, 17), W(16, 1, 3, 3), .bias = 1,
     ATTRS(AI("group", 16), AIS("pads", 1, 1, 1, 1))},
    /* 4: depthwise 3x3, stride 2 */
    {X4(1, 24, 14, 15), W(24, 1, 3, 3),
     ATTRS(AI("group", 24), AIS("pads", 1, 1, 1, 1), AIS("strides", 2, 2))},
    /* 5: depthwise, multiplier 2, 5x5 dilated */
    {X4(1, 6, 16, 16), W(12, 1, 5, 5), .bias = 1,
     ATTRS(AI("group", 6), AIS("pads", 4, 3, 2, 4), AIS("dilations", 2, 2))},
    /* 6: dilations */
    {X4(1, 3, 12, 12), W(4, 3, 3, 3), ATTRS(AIS("dilations", 2, 2), AIS("pads", 2, 2, 2, 2))},
    /* 7: auto_pad SAME_LOWER, stride 2, even kernel */
    {X4(1, 3, 10, 11), W(5, 3, 4, 3), .bias = 1,
     ATTRS(AS("auto_pad", "SAME_LOWER"), AIS("strides", 2, 2))},
    /* 8: auto_pad SAME_UPPER */
    {X4(1, 3, 7, 8), W(2, 3, 2, 2), ATTRS(AS("auto_pad", "SAME_UPPER"))},
    /* 9: auto_pad VALID, stride 2 */
    {X4(1, 2, 9, 9), W(3, 2, 3, 3), ATTRS(AS("auto_pad", "VALID"), AIS("strides", 2, 2))},
    /* 10: 1-D */
    {X3(2, 4, 20), W(6, 4, 5), .bias = 1, ATTRS(AIS("pads", 2, 1), AIS("strides", 2))},
    /* 11: 3-D */
    {X5(1, 3, 6, 7, 5), W(4, 3, 3, 3, 2),
     ATTRS(AIS("pads", 1, 1, 0, 1, 0, 1), AIS("strides", 1, 2, 1))},
    /* 12: 1x1, stride 1 (pointwise) */
    {X4(2, 32, 7, 9), W(24, 32, 1, 1), .bias = 1},
    /* 13: 1x1, stride 2 */
    {X4(1, 16, 9, 9), W(8, 16, 1, 1), ATTRS(AIS("strides", 2, 2))},
    /* 14: 7x7 stride 2 pad 3 (a first layer) */
    {X4(1, 3, 32, 30), W(16, 3, 7, 7), .bias = 1,
     ATTRS(AIS("pads", 3, 3, 3, 3), AIS("strides", 2, 2))},
    /* 15: a resnet 3x3 layer, split into column blocks */
    {X4(1, 64, 28, 28), W(64, 64, 3, 3), .bias = 1, ATTRS(AIS("pads", 1, 1, 1, 1))},
    /* 16: a deep layer, split into channel blocks */
    {X4(1, 256, 7, 7), W(256, 256, 3, 3), ATTRS(AIS("pads", 1, 1, 1, 1))},
    /* 17: depthwise 3-D (through im2col), kernel_shape given */
    {X5(1, 4, 5, 5, 5), W(4, 1, 3, 3, 3),
     ATTRS(AI("group", 4), AIS("kernel_shape", 3, 3, 3), AIS("pads", 1, 0, 1, 1, 1, 0))},
    /* 18: 1-D depthwise with dilation */
    {X3(1, 5, 17), W(5, 1, 3), ATTRS(AI("group", 5), AIS("dilations", 3), AIS("pads", 3, 3))},
    /* 19: pointwise with groups */
    {X4(1, 12, 5, 6), W(9, 4, 1, 1), .bias = 1, ATTRS(AI("group", 3))},
    /* 20: depthwise 3x3 stride 2 with SAME_UPPER (mobilenet style), wide rows */
    {X4(1, 8, 31, 45), W(8, 1, 3, 3), .bias = 1,
     ATTRS(AI("group", 8), AS("auto_pad", "SAME_UPPER"), AIS("strides", 2, 2))},
    /* 21: depthwise, strides 2 x 1 (phase planes of rows only), odd pads */
    {X4(1, 5, 12, 11), W(5, 1, 3, 3), .bias = 1,
     ATTRS(AI("group", 5), AIS("pads", 0, 1, 1, 0), AIS("strides", 2, 1))},
    /* 22: depthwise 7x7 stride 3, multiplier 3, batch 2 */
    {X4(2, 4, 20, 23), W(12, 1, 7, 7),
     ATTRS(AI("group", 4), AIS("pads", 3, 2, 1, 3), AIS("strides", 3, 3))},
    /* 23: depthwise on 7x7 planes (rows shorter than a vector) */
    {X4(1, 40, 7, 7), W(40, 1, 3, 3), .bias = 1, ATTRS(AI("group", 40), AIS("pads", 1, 1, 1, 1))},
    /* 24: depthwise 3x3 stride 2, dilation 2, no pads, 2 x 5 kernel */
    {X4(1, 3, 15, 16), W(3, 1, 2, 5),
     ATTRS(AI("group", 3), AIS("dilations", 2, 2), AIS("strides", 2, 2))},
    /* 25: pointwise, few output channels (B read in place), long rows */
    {X4(1, 40, 30, 37), W(20, 40, 1, 1), .bias = 1},
    /* 26: pointwise on 5x5 planes, 96 channels: the transposed product */
    {X4(2, 24, 5, 5), W(96, 24, 1, 1), .bias = 1},
    /* 27: 3x3 on 7x7 planes, 64 channels: transposed, through im2col */
    {X4(1, 40, 7, 7), W(64, 40, 3, 3), .bias = 1, ATTRS(AIS("pads", 1, 1, 1, 1))},
    /* 28: one input channel into one (an audio resampler's FIR filter:
     * direct, as depthwise), 1x41 taps at stride 3, batch 2 */
    {X4(2, 1, 1, 400), W(1, 1, 1, 41), .bias = 1,
     ATTRS(AIS("pads", 0, 19, 0, 22), AIS("strides", 1, 3))},
    /* 29: one input channel into three (a grayscale stem), 3x3 stride 2 */
    {X4(1, 1, 17, 19), W(3, 1, 3, 3), .bias = 1,
     ATTRS(AIS("pads", 1, 1, 1, 1), AIS("strides", 2, 2))},
    /* 30: one input channel into eight: through im2col */
    {X4(1, 1, 12, 13), W(8, 1, 5, 5), ATTRS(AIS("pads", 2, 2, 2, 2))},
    /* 31: one input channel into many, 1-D, taps wider than the stride (an
     * STFT as a Conv): X read in place as overlapping columns; 17 outputs
     * of 40 taps at stride 7, the input 3 samples longer than they read */
    {X3(2, 1, 155), W(37, 1, 40), .bias = 1, ATTRS(AIS("strides", 7))},
    /* 32: the same with taps narrower than the stride, 200 outputs (a
     * GEMM of several column blocks) */
    {X3(1, 1, 1203), W(20, 1, 5), ATTRS(AIS("strides", 6))},
    /* 33: padded: through im2col */
    {X3(2, 1, 60), W(9, 1, 8), ATTRS(AIS("strides", 4), AIS("pads", 3, 2))},
    /* 34: one input channel into one along one row, 256 taps at stride 2
     * (basic_pitch's resampling filter): FIR, 1373 outputs in chunks */
    {X4(1, 1, 1, 3000), W(1, 1, 1, 256), .bias = 1, ATTRS(AIS("strides", 1, 2))},
    /* 35: the same 1-D into three, stride 3, pads on both sides, batch 2 */
    {X3(2, 1, 1000), W(3, 1, 100), .bias = 1, ATTRS(AIS("strides", 3), AIS("pads", 40, 37))},
    /* 36: into four, stride 1, 65 taps, SAME padding of the row */
    {X4(1, 1, 1, 700), W(4, 1, 1, 65), ATTRS(AIS("pads", 0, 32, 0, 32))},
    /* 37: stride 16 (sixteen phase planes), 80 taps */
    {X3(1, 1, 2000), W(2, 1, 80), .bias = 1, ATTRS(AIS("strides", 16))},
    /* 38: dilated: not FIR (through im2col) */
    {X3(1, 1, 500), W(1, 1, 70), ATTRS(AIS("dilations", 2), AIS("pads", 5, 5))},
};

static const tn_case tn_convt_cases[] = {
    /* 0: stride 2, pad 1, output_padding 1 */
    {X4(1, 4, 5, 5), W(4, 3, 3, 3),
     ATTRS(AIS("strides", 2, 2), AIS("pads", 1, 1, 1, 1), AIS("output_padding", 1, 1))},
    /* 1: groups, bias */
    {X4(1, 4, 4, 5), W(4, 2, 3, 3), .bias = 1, ATTRS(AI("group", 2))},
    /* 2: output_shape */
    {X4(1, 2, 3, 3), W(2, 3, 3, 3), ATTRS(AIS("strides", 2, 2), AIS("output_shape", 6, 7))},
    /* 3: SAME_UPPER, stride 2 */
    {X4(1, 2, 4, 4), W(2, 2, 3, 3), ATTRS(AS("auto_pad", "SAME_UPPER"), AIS("strides", 2, 2))},
    /* 4: SAME_LOWER, stride 2 */
    {X4(1, 2, 5, 5), W(2, 2, 3, 3), .bias = 1,
     ATTRS(AS("auto_pad", "SAME_LOWER"), AIS("strides", 2, 2))},
    /* 5: dilations, asymmetric pads */
    {X4(2, 3, 5, 6), W(3, 2, 3, 3), ATTRS(AIS("dilations", 2, 2), AIS("pads", 1, 0, 2, 1))},
    /* 6: 1-D, stride 3, bias */
    {X3(2, 3, 7), W(3, 4, 4), .bias = 1, ATTRS(AIS("strides", 3))},
    /* 7: 3-D */
    {X5(1, 2, 3, 4, 3), W(2, 2, 2, 3, 2), ATTRS(AIS("strides", 2, 1, 2))},
    /* 8: a decoder-like layer, 4x4 stride 2 pad 1, many channels */
    {X4(1, 32, 8, 8), W(32, 16, 4, 4), .bias = 1,
     ATTRS(AIS("strides", 2, 2), AIS("pads", 1, 1, 1, 1))},
    /* 9: output_shape beyond the full result (ONNX's
     * test_convtranspose_output_shape, tf2onnx's Conv2DBackpropInput): the
     * last row and column hold the bias alone */
    {X4(1, 2, 3, 3), W(2, 3, 3, 3), .bias = 1,
     ATTRS(AIS("strides", 3, 2), AIS("output_shape", 10, 8))},
    /* 10: the same with groups, batch 2, one axis beyond and one short */
    {X4(2, 4, 5, 4), W(4, 3, 2, 3), .bias = 1,
     ATTRS(AI("group", 2), AIS("strides", 2, 2), AIS("output_shape", 10, 8))},
    /* 11: 1-D, output_shape beyond */
    {X3(1, 3, 6), W(3, 2, 3), ATTRS(AIS("strides", 2), AIS("output_shape", 14))},
};

static const tn_case tn_maxpool_cases[] = {
    /* 0: 3x3 stride 2 pad 1 (resnet) */
    {X4(1, 8, 16, 16), ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2),
                             AIS("pads", 1, 1, 1, 1))},
    /* 1: 2x2 stride 2 */
    {X4(2, 3, 9, 10), ATTRS(AIS("kernel_shape", 2, 2), AIS("strides", 2, 2))},
    /* 2: ceil_mode */
    {X4(1, 2, 10, 11), ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2), AI("ceil_mode", 1))},
    /* 3: dilations */
    {X4(1, 2, 12, 12), ATTRS(AIS("kernel_shape", 3, 3), AIS("dilations", 2, 2),
                             AIS("pads", 2, 2, 2, 2))},
    /* 4: SAME_UPPER */
    {X4(1, 3, 7, 9), ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2),
                           AS("auto_pad", "SAME_UPPER"))},
    /* 5: 1-D, asymmetric pads */
    {X3(2, 3, 15), ATTRS(AIS("kernel_shape", 4), AIS("strides", 3), AIS("pads", 1, 2))},
    /* 6: 3-D */
    {X5(1, 2, 5, 6, 7), ATTRS(AIS("kernel_shape", 2, 3, 2), AIS("strides", 2, 2, 1))},
    /* 7: Indices */
    {X4(2, 3, 8, 8), .indices = 1,
     ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2), AIS("pads", 1, 1, 1, 1))},
    /* 8: Indices, 1-D, ceil_mode */
    {X3(1, 4, 10), .indices = 1,
     ATTRS(AIS("kernel_shape", 3), AIS("strides", 2), AI("ceil_mode", 1))},
    /* 9: asymmetric pads, SAME_LOWER stride 1 */
    {X4(1, 2, 6, 7), ATTRS(AIS("kernel_shape", 2, 2), AS("auto_pad", "SAME_LOWER"))},
    /* 10: opset 8 (no ceil_mode) */
    {X4(1, 2, 6, 7), .opset = 8, ATTRS(AIS("kernel_shape", 2, 3), AIS("pads", 0, 1, 1, 0))},
    /* 11: Indices column-major (storage_order 1), a map wider than high */
    {X4(2, 3, 5, 7), .indices = 1,
     ATTRS(AIS("kernel_shape", 2, 3), AIS("strides", 1, 2), AI("storage_order", 1))},
    /* 12: the same in 3-D */
    {X5(1, 2, 4, 5, 3), .indices = 1,
     ATTRS(AIS("kernel_shape", 2, 2, 2), AI("storage_order", 1))},
};

static const tn_case tn_avgpool_cases[] = {
    /* 0: 3x3 stride 1 pad 1, pads not counted */
    {X4(1, 4, 9, 10), ATTRS(AIS("kernel_shape", 3, 3), AIS("pads", 1, 1, 1, 1))},
    /* 1: pads counted */
    {X4(1, 4, 9, 10),
     ATTRS(AIS("kernel_shape", 3, 3), AIS("pads", 1, 1, 1, 1), AI("count_include_pad", 1))},
    /* 2: ceil_mode, pads counted (the last window passes the end pad) */
    {X4(1, 2, 8, 8), ATTRS(AIS("kernel_shape", 3, 3), AIS("strides", 2, 2),
                           AIS("pads", 1, 1, 1, 1), AI("ceil_mode", 1),
                           AI("count_include_pad", 1))},
    /* 3: 1-D */
    {X3(2, 3, 11), ATTRS(AIS("kernel_shape", 3), AIS("strides", 2), AIS("pads", 1, 1))},
    /* 4: 3-D, ceil_mode */
    {X5(1, 2, 5, 6, 7), ATTRS(AIS("kernel_shape", 2, 2, 3), AIS("strides", 2, 2, 2),
                              AI("ceil_mode", 1))},
    /* 5: SAME_LOWER, stride 2 */
    {X4(1, 3, 7, 8), ATTRS(AIS("kernel_shape", 2, 3), AIS("strides", 2, 2),
                           AS("auto_pad", "SAME_LOWER"))},
    /* 6: a 7x7 window over 7x7 */
    {X4(2, 16, 7, 7), ATTRS(AIS("kernel_shape", 7, 7))},
    /* 7: asymmetric pads counted */
    {X4(1, 2, 6, 6), ATTRS(AIS("kernel_shape", 3, 2), AIS("pads", 2, 0, 0, 1),
                           AI("count_include_pad", 1))},
};

static const tn_case tn_global_cases[] = {
    {X4(1, 64, 7, 7)},
    {X3(2, 3, 5)},
    {X5(1, 4, 3, 4, 5)},
    {X4(1, 32, 1, 1)},
    {X4(2, 100, 13, 13)},
    {X4(1, 3, 100, 101)},
};

/* ---- fused epilogues (kernel_fuse) ---------------------------------------- */

/* What kernel_fuse is offered: Relu, Clip with constant bound inputs
 * (opset 13), Clip with attribute bounds (opset 10). */
enum { TN_RELU = 0, TN_CLIP13 = 1, TN_CLIP10 = 2, TN_ACTS = 3 };
static const char *const tn_act_names[TN_ACTS] = {"Relu", "Clip (inputs)", "Clip (attributes)"};

static double tn_act(int act, double v)
{
    if (act == TN_RELU)
        return v > 0.0 ? v : 0.0;
    return v < -0.75 ? -0.75 : (v > 1.25 ? 1.25 : v);
}

/* A one-node graph of ACT on a tensor shaped like OUT, described for
 * kernel_fuse. LO and HI are Clip's bounds. */
static void tn_act_build(int act, const pl_tensor *out, float lo, float hi, tn_node *n)
{
    memset(n, 0, sizeof *n);
    int opset = act == TN_CLIP10 ? 10 : 13;
    n->op = act == TN_RELU ? "Relu" : "Clip";
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", opset));
    pl_tid y, z;
    CHECK_OK(pl_graph_tensor_get_or_add(n->g, "y", &y));
    CHECK_OK(pl_graph_set_type(n->g, y, PL_DTYPE_F32, out->ndim, out->shape, NULL));
    CHECK_OK(pl_graph_add_input(n->g, y));
    const char *ins[3] = {"y", "lo", "hi"};
    size_t n_in = act == TN_CLIP13 ? 3 : 1;
    for (size_t i = 1; i < n_in; i++) {
        pl_tid t;
        float v = i == 1 ? lo : hi;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, ins[i], &t));
        CHECK_OK(pl_graph_set_type(n->g, t, PL_DTYPE_F32, 0, NULL, NULL));
        CHECK_OK(pl_graph_set_constant(n->g, t, &v, sizeof v));
    }
    const char *outs[1] = {"z"};
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "act", n->op, "", ins, n_in, outs, 1, &nid));
    if (act == TN_CLIP10) {
        CHECK_OK(pl_graph_attr_float(n->g, nid, "min", lo));
        CHECK_OK(pl_graph_attr_float(n->g, nid, "max", hi));
    }
    CHECK_OK(pl_graph_tensor_get_or_add(n->g, "z", &z));
    CHECK_OK(pl_graph_add_output(n->g, z));
    CHECK_OK(pl_graph_validate(n->g));
    tn_node_describe(n, nid, "act", opset);
}

/* Conv case CI with each activation fused: the kernel accepts it and
 * writes act(conv) (and, for PL_REQ_ADD_TO, before + act(conv)). */
static void tn_check_fused(int ci, const tn_case *c)
{
    tn_node n;
    tn_node_build("Conv", c, &n);
    size_t cnt_in[3] = {0}, count = tn_elements(&n.out[0]);
    float *in[3] = {0};
    pl_tensor ins[3];
    for (size_t i = 0; i < n.n_in; i++) {
        cnt_in[i] = tn_elements(&n.in[i]);
        in[i] = malloc((cnt_in[i] ? cnt_in[i] : 1) * sizeof(float));
        CHECK(in[i] != NULL, "out of memory");
        for (size_t j = 0; j < cnt_in[i]; j++)
            in[i][j] = tn_random();
        ins[i] = n.in[i];
        ins[i].data = in[i];
    }
    double *ref = malloc(count * sizeof *ref), *scale = malloc(count * sizeof *scale);
    double *want = malloc(count * sizeof *want);
    float *out = malloc(count * sizeof *out), *before = malloc(count * sizeof *before);
    CHECK(ref && scale && want && out && before, "out of memory");
    tn_ref_conv(&n, in[0], in[1], c->bias ? in[2] : NULL, ref, scale);
    for (int act = 0; act < TN_ACTS; act++) {
        tn_node a;
        tn_act_build(act, &n.out[0], -0.75f, 1.25f, &a);
        size_t ws = 0;
        pl_kernel *k = tn_kernel(&n, &ws);
        CHECK(tn_mod->api.kernel_fuse != NULL, "the cpu module has no kernel_fuse");
        CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 1,
              "Conv case %d: kernel_fuse declined %s", ci, tn_act_names[act]);
        /* A second activation on the same kernel is declined. */
        CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 0,
              "Conv case %d: a second %s was fused", ci, tn_act_names[act]);
        for (size_t i = 0; i < count; i++)
            want[i] = tn_act(act, ref[i]);
        pl_tensor outs[1] = {n.out[0]};
        outs[0].data = out;
        pl_output_request req = PL_REQ_WRITE;
        for (size_t i = 0; i < count; i++)
            out[i] = NAN;
        CHECK_OK(tn_run(k, n.n_in, ins, 1, outs, &req, ws));
        char what[64];
        snprintf(what, sizeof what, "write, %s fused", tn_act_names[act]);
        tn_compare("Conv", ci, what, out, want, scale, NULL, count);
        for (size_t i = 0; i < count; i++)
            before[i] = out[i] = tn_random();
        req = PL_REQ_ADD_TO;
        CHECK_OK(tn_run(k, n.n_in, ins, 1, outs, &req, ws));
        snprintf(what, sizeof what, "add_to, %s fused", tn_act_names[act]);
        tn_compare("Conv", ci, what, out, want, scale, before, count);
        tn_mod->api.kernel_release(tn_mod->ctx, k);
        tn_node_free(&a);
    }
    for (size_t i = 0; i < n.n_in; i++)
        free(in[i]);
    free(ref);
    free(scale);
    free(want);
    free(out);
    free(before);
    tn_node_free(&n);
}

static void case_fused(void)
{
    for (size_t i = 0; i < TN_COUNT(tn_conv_cases); i++)
        tn_check_fused((int)i, &tn_conv_cases[i]);

    /* Declined: Clip with lo > hi, an activation the module does not fuse,
     * a Clip of another shape, and a ConvTranspose (no epilogue). */
    tn_node n;
    tn_node_build("Conv", &tn_conv_cases[0], &n);
    size_t ws;
    pl_kernel *k = tn_kernel(&n, &ws);
    tn_node a;
    tn_act_build(TN_CLIP13, &n.out[0], 2.0f, 1.0f, &a);
    CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 0, "Clip(2, 1) was fused");
    tn_node_free(&a);
    tn_act_build(TN_RELU, &n.out[0], 0.0f, 0.0f, &a);
    a.desc.op = "LeakyRelu";
    CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 0, "LeakyRelu was fused");
    tn_node_free(&a);
    pl_tensor other = n.out[0];
    int64_t dims[4] = {1, 1, 2, 2};
    other.shape = dims;
    tn_act_build(TN_RELU, &other, 0.0f, 0.0f, &a);
    CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 0,
          "a Relu of another size was fused");
    tn_node_free(&a);
    tn_mod->api.kernel_release(tn_mod->ctx, k);
    tn_node_free(&n);

    tn_node_build("ConvTranspose", &tn_convt_cases[1], &n);
    k = tn_kernel(&n, &ws);
    tn_act_build(TN_RELU, &n.out[0], 0.0f, 0.0f, &a);
    CHECK(tn_mod->api.kernel_fuse(tn_mod->ctx, k, &a.desc) == 0, "ConvTranspose fused a Relu");
    tn_node_free(&a);
    tn_mod->api.kernel_release(tn_mod->ctx, k);
    tn_node_free(&n);
}

static void case_Conv(void)
{
    tn_check_all("Conv", tn_conv_cases, TN_COUNT(tn_conv_cases));
}

static void case_ConvTranspose(void)
{
    tn_check_all("ConvTranspose", tn_convt_cases, TN_COUNT(tn_convt_cases));
}

static void case_MaxPool(void)
{
    tn_check_all("MaxPool", tn_maxpool_cases, TN_COUNT(tn_maxpool_cases));
}

static void case_AveragePool(void)
{
    tn_check_all("AveragePool", tn_avgpool_cases, TN_COUNT(tn_avgpool_cases));
}

static void case_GlobalAveragePool(void)
{
    tn_check_all("GlobalAveragePool", tn_global_cases, TN_COUNT(tn_global_cases));
}

static void case_GlobalMaxPool(void)
{
    tn_check_all("GlobalMaxPool", tn_global_cases, TN_COUNT(tn_global_cases));
}

/* ---- other dtypes ------------------------------------------------------- */

/* The f16 and bf16 of the tests, rounded apart from the module (the shared
 * cpu harness, tests/cpu_harness). */
uint16_t ch_f16_bits(double v);
double ch_f16_value(uint16_t h);
uint16_t ch_bf16_bits(double v);
double ch_bf16_value(uint16_t h);

/* Element I of X (of DT) as a float, and V stored there (f16 and bf16
 * rounded to nearest even, 8-bit integers exact). */
static float tn_load(const void *x, pl_dtype dt, size_t i)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        return (float)ch_f16_value(((const uint16_t *)x)[i]);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        return (float)ch_bf16_value(((const uint16_t *)x)[i]);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        return ((const int8_t *)x)[i];
    return ((const uint8_t *)x)[i];
}

static void tn_store(void *x, pl_dtype dt, size_t i, float v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        ((uint16_t *)x)[i] = ch_f16_bits(v);
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        ((uint16_t *)x)[i] = ch_bf16_bits(v);
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        ((int8_t *)x)[i] = (int8_t)v;
    else
        ((uint8_t *)x)[i] = (uint8_t)v;
}

/* Case C of OP on DT must give exactly the f32 kernel's result on the same
 * values rounded once to DT (with PL_REQ_ADD_TO: the sum, in f32, rounded
 * once), and the same indices: the module computes these dtypes through
 * its f32 kernels, which the other cases check against the reference. */
static void tn_check_dtype(const char *op, int ci, const tn_case *c, pl_dtype dt)
{
    tn_node n32, nd;
    tn_dtype = PL_DTYPE_F32;
    tn_node_build(op, c, &n32);
    tn_dtype = dt;
    tn_node_build(op, c, &nd);
    tn_dtype = PL_DTYPE_F32;
    size_t ws32 = 0, wsd = 0;
    pl_kernel *k32 = tn_kernel(&n32, &ws32), *kd = tn_kernel(&nd, &wsd);
    bool ints = dt.code != PL_TYPE_FLOAT && dt.code != PL_TYPE_BFLOAT;
    float *in32[3] = {0};
    void *ind[3] = {0};
    pl_tensor ins32[3], insd[3];
    for (size_t i = 0; i < n32.n_in; i++) {
        size_t cnt = tn_elements(&n32.in[i]);
        in32[i] = malloc((cnt + 1) * sizeof(float));
        ind[i] = malloc((cnt + 1) * 2);
        CHECK(in32[i] != NULL && ind[i] != NULL, "out of memory");
        for (size_t j = 0; j < cnt; j++) {
            float v = ints ? floorf(tn_random() * 60.0f) : tn_random();
            tn_store(ind[i], dt, j, PL_DTYPE_EQ(dt, PL_DTYPE_U8) ? fabsf(v) : v);
            in32[i][j] = tn_load(ind[i], dt, j);
        }
        ins32[i] = n32.in[i];
        ins32[i].data = in32[i];
        insd[i] = nd.in[i];
        insd[i].data = ind[i];
    }
    size_t count = tn_elements(&n32.out[0]);
    float *out32 = malloc((count + 1) * sizeof(float));
    void *outd = malloc((count + 1) * 2), *before = malloc((count + 1) * 2);
    int64_t *idx32 = malloc((count + 1) * sizeof(int64_t)), *idxd = malloc((count + 1) * 8);
    CHECK(out32 && outd && before && idx32 && idxd, "out of memory");
    pl_tensor o32[2] = {n32.out[0], n32.out[1]}, od[2] = {nd.out[0], nd.out[1]};
    o32[0].data = out32;
    o32[1].data = idx32;
    od[0].data = outd;
    od[1].data = idxd;
    pl_output_request reqs[2] = {PL_REQ_WRITE, PL_REQ_WRITE};
    CHECK_OK(tn_run(k32, n32.n_in, ins32, n32.n_out, o32, reqs, ws32));
    for (int add = 0; add < 2; add++) {
        for (size_t i = 0; i < count; i++)
            tn_store(before, dt, i, add ? floorf(fabsf(tn_random()) * 20.0f) : 0.0f);
        memcpy(outd, before, count * pl_dtype_size(dt));
        reqs[0] = add ? PL_REQ_ADD_TO : PL_REQ_WRITE;
        reqs[1] = add ? PL_REQ_NULL : PL_REQ_WRITE;
        CHECK_OK(tn_run(kd, nd.n_in, insd, nd.n_out, od, reqs, wsd));
        for (size_t i = 0; i < count; i++) {
            float b = add ? tn_load(before, dt, i) : 0.0f;
            float want = ints ? (float)(int)(b + out32[i]) : b + out32[i];
            unsigned char wb[2] = {0, 0};
            tn_store(wb, dt, 0, want);
            CHECK(memcmp((char *)outd + i * pl_dtype_size(dt), wb, pl_dtype_size(dt)) == 0,
                  "%s case %d (%s, %s): element %zu is %.9g, expected %.9g", op, ci,
                  pl_dtype_name(dt), add ? "add_to" : "write", i, tn_load(outd, dt, i),
                  tn_load(wb, dt, 0));
        }
        if (c->indices && !add)
            for (size_t i = 0; i < count; i++)
                CHECK(idxd[i] == idx32[i], "%s case %d (%s): index %zu differs", op, ci,
                      pl_dtype_name(dt), i);
    }
    tn_mod->api.kernel_release(tn_mod->ctx, k32);
    tn_mod->api.kernel_release(tn_mod->ctx, kd);
    void *bufs[] = {in32[0], in32[1], in32[2], ind[0], ind[1], ind[2],
                    out32,   outd,    before,  idx32,  idxd};
    for (size_t i = 0; i < TN_COUNT(bufs); i++)
        free(bufs[i]);
    tn_node_free(&n32);
    tn_node_free(&nd);
}

/* Case C of OP on f64: computed in double, so within 1e-12 of the
 * reference (in double too) on the same values, indices equal. */
static void tn_check_f64(const char *op, int ci, const tn_case *c)
{
    tn_node n;
    tn_dtype = PL_DTYPE_F64;
    tn_node_build(op, c, &n);
    tn_dtype = PL_DTYPE_F32;
    size_t ws = 0;
    pl_kernel *k = tn_kernel(&n, &ws);
    float *in[3] = {0};
    double *in64[3] = {0};
    pl_tensor ins[3];
    for (size_t i = 0; i < n.n_in; i++) {
        size_t cnt = tn_elements(&n.in[i]);
        in[i] = malloc((cnt + 1) * sizeof(float));
        in64[i] = malloc((cnt + 1) * sizeof(double));
        CHECK(in[i] != NULL && in64[i] != NULL, "out of memory");
        for (size_t j = 0; j < cnt; j++)
            in64[i][j] = in[i][j] = tn_random();
        ins[i] = n.in[i];
        ins[i].data = in64[i];
    }
    size_t count = tn_elements(&n.out[0]);
    double *ref = malloc((count + 1) * sizeof *ref), *scale = malloc((count + 1) * sizeof *scale);
    double *out = malloc((count + 1) * sizeof *out);
    int64_t *ind_ref = malloc((count + 1) * sizeof *ind_ref), *ind = malloc((count + 1) * 8);
    CHECK(ref && scale && out && ind_ref && ind, "out of memory");
    tn_reference(&n, in, ref, scale, ind_ref);
    pl_tensor outs[2] = {n.out[0], n.out[1]};
    outs[0].data = out;
    outs[1].data = ind;
    for (int add = 0; add < 2; add++) {
        for (size_t i = 0; i < count; i++)
            out[i] = add ? 0.25 * (double)i : NAN;
        pl_output_request reqs[2] = {add ? PL_REQ_ADD_TO : PL_REQ_WRITE,
                                     add ? PL_REQ_NULL : PL_REQ_WRITE};
        CHECK_OK(tn_run(k, n.n_in, ins, n.n_out, outs, reqs, ws));
        for (size_t i = 0; i < count; i++) {
            double want = ref[i] + (add ? 0.25 * (double)i : 0.0);
            CHECK(fabs(out[i] - want) <= 1e-12 * (scale[i] + fabs(want)),
                  "%s case %d (f64, %s): element %zu is %.17g, expected %.17g", op, ci,
                  add ? "add_to" : "write", i, out[i], want);
        }
        if (c->indices && !add)
            for (size_t i = 0; i < count; i++)
                CHECK(ind[i] == ind_ref[i], "%s case %d (f64): index %zu is %lld, expected %lld",
                      op, ci, i, (long long)ind[i], (long long)ind_ref[i]);
    }
    tn_mod->api.kernel_release(tn_mod->ctx, k);
    void *bufs[] = {in[0], in[1], in[2], in64[0], in64[1], in64[2], ref, scale, out, ind_ref,
                    ind};
    for (size_t i = 0; i < TN_COUNT(bufs); i++)
        free(bufs[i]);
    tn_node_free(&n);
}

/* Every case of every op on f16, bf16 and f64, and MaxPool on i8 and u8. */
static void case_dtypes(void)
{
    static const pl_dtype half[] = {{PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
    static const pl_dtype bytes[] = {{PL_TYPE_INT, 8, 1}, {PL_TYPE_UINT, 8, 1}};
    const struct {
        const char *op;
        const tn_case *cases;
        size_t n;
    } sets[] = {
        {"Conv", tn_conv_cases, TN_COUNT(tn_conv_cases)},
        {"ConvTranspose", tn_convt_cases, TN_COUNT(tn_convt_cases)},
        {"MaxPool", tn_maxpool_cases, TN_COUNT(tn_maxpool_cases)},
        {"AveragePool", tn_avgpool_cases, TN_COUNT(tn_avgpool_cases)},
        {"GlobalAveragePool", tn_global_cases, TN_COUNT(tn_global_cases)},
        {"GlobalMaxPool", tn_global_cases, TN_COUNT(tn_global_cases)},
    };
    for (size_t s = 0; s < TN_COUNT(sets); s++)
        for (size_t i = 0; i < sets[s].n; i++) {
            for (size_t h = 0; h < TN_COUNT(half); h++)
                tn_check_dtype(sets[s].op, (int)i, &sets[s].cases[i], half[h]);
            tn_check_f64(sets[s].op, (int)i, &sets[s].cases[i]);
        }
    for (size_t i = 0; i < TN_COUNT(tn_maxpool_cases); i++)
        for (size_t b = 0; b < TN_COUNT(bytes); b++) {
            tn_case c = tn_maxpool_cases[i];
            c.opset = c.opset >= 12 ? c.opset : 12; /* i8 and u8 from opset 12 */
            tn_check_dtype("MaxPool", (int)i, &c, bytes[b]);
        }
}

/* get_kernel refuses, with "cpu: <Op>: ...", what it cannot do. */
static void tn_expect_refusal(const tn_node *n, const char *prefix, const char *needle)
{
    pl_kernel *k = NULL;
    size_t ws = 0;
    pl_status *st = tn_mod->api.get_kernel(tn_mod->ctx, 0, &n->desc, &k, &ws);
    CHECK(st != NULL && k == NULL, "%s accepted", n->op);
    const char *msg = pl_status_message(st);
    CHECK(strncmp(msg, prefix, strlen(prefix)) == 0 && strstr(msg, needle) != NULL,
          "refusal '%s' lacks '%s' or '%s'", msg, prefix, needle);
    pl_status_free(st);
}

static void case_refusals(void)
{
    /* An output shape other than the attributes give. */
    tn_case c = {X4(1, 2, 6, 6), W(3, 2, 3, 3)};
    tn_node n;
    tn_node_build("Conv", &c, &n);
    int64_t wrong[4] = {1, 3, 5, 4};
    n.out[0].shape = wrong;
    tn_expect_refusal(&n, "cpu: Conv: ", "output");
    tn_node_free(&n);

    /* An index order that is neither row- nor column-major. */
    tn_case m = {X4(1, 2, 6, 6), .indices = 1,
                 ATTRS(AIS("kernel_shape", 2, 2), AI("storage_order", 2))};
    tn_node_build("MaxPool", &m, &n);
    tn_expect_refusal(&n, "cpu: MaxPool: ", "storage_order 2");
    tn_node_free(&n);

}

/* ---- concurrency ---------------------------------------------------------- */

typedef struct tn_thread {
    pl_kernel *kernel;
    const tn_node *node;
    const float *x, *w;
    const float *want;
    size_t ws;
    int failures;
} tn_thread;

static void *tn_thread_main(void *arg)
{
    tn_thread *t = arg;
    size_t count = tn_elements(&t->node->out[0]);
    float *out = malloc(count * sizeof *out);
    if (out == NULL) {
        t->failures++;
        return NULL;
    }
    for (int round = 0; round < 10; round++) {
        pl_tensor ins[2] = {t->node->in[0], t->node->in[1]}, o = t->node->out[0];
        ins[0].data = (void *)t->x;
        ins[1].data = (void *)t->w;
        o.data = out;
        pl_output_request req = PL_REQ_WRITE;
        pl_status *st = tn_run(t->kernel, 2, ins, 1, &o, &req, round % 2 ? t->ws : 0);
        if (st != NULL) {
            t->failures++;
            pl_status_free(st);
            continue;
        }
        /* The same kernel on the same data gives the same bits. */
        if (memcmp(out, t->want, count * sizeof *out) != 0)
            t->failures++;
    }
    free(out);
    return NULL;
}

/* Four threads run one Conv kernel at once (with and without workspace). */
static void case_concurrent(void)
{
    tn_case c = {X4(1, 16, 20, 20), W(16, 16, 3, 3), ATTRS(AIS("pads", 1, 1, 1, 1))};
    tn_node n;
    tn_node_build("Conv", &c, &n);
    size_t ws = 0;
    pl_kernel *k = tn_kernel(&n, &ws);
    size_t nx = tn_elements(&n.in[0]), nw = tn_elements(&n.in[1]), no = tn_elements(&n.out[0]);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *want = malloc(no * sizeof *want);
    CHECK(x && w && want, "out of memory");
    for (size_t i = 0; i < nx; i++)
        x[i] = tn_random();
    for (size_t i = 0; i < nw; i++)
        w[i] = tn_random();
    pl_tensor ins[2] = {n.in[0], n.in[1]}, o = n.out[0];
    ins[0].data = x;
    ins[1].data = w;
    o.data = want;
    pl_output_request req = PL_REQ_WRITE;
    CHECK_OK(tn_run(k, 2, ins, 1, &o, &req, ws));
    pthread_t th[4];
    tn_thread t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (tn_thread){.kernel = k, .node = &n, .x = x, .w = w, .want = want, .ws = ws};
        CHECK(pthread_create(&th[i], NULL, tn_thread_main, &t[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK(t[i].failures == 0, "thread %d: %d wrong runs", i, t[i].failures);
    tn_mod->api.kernel_release(tn_mod->ctx, k);
    free(x);
    free(w);
    free(want);
    tn_node_free(&n);
}

static const struct {
    const char *name;
    void (*run)(void);
} tn_cases[] = {
    {"Conv", case_Conv},
    {"ConvTranspose", case_ConvTranspose},
    {"MaxPool", case_MaxPool},
    {"AveragePool", case_AveragePool},
    {"GlobalAveragePool", case_GlobalAveragePool},
    {"GlobalMaxPool", case_GlobalMaxPool},
    {"refusals", case_refusals},
    {"fused", case_fused},
    {"concurrent", case_concurrent},
    {"dtypes", case_dtypes},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < TN_COUNT(tn_cases); i++) {
        if (strcmp(argv[1], tn_cases[i].name) != 0)
            continue;
        /* Every case runs on 1 and on 4 threads: the kernels plan their
         * blocks from the thread count. */
        int threads[2] = {1, 4};
        for (int r = 0; r < 2; r++) {
            tn_setup(argv[2], threads[r]);
            tn_cases[i].run();
            tn_teardown();
        }
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
