/* test_example_acc.c — the example_acc module driven directly through its
 * table, as the core's partitioner and executor will drive it: verdicts of
 * supported_nodes, compile and run of an MLP against a reference computed
 * here, export/import of the compiled program (and refusals of foreign,
 * corrupt and forged blobs), fault injection (fail_compile,
 * max_nodes_per_subgraph), device memory behind opaque, bounds-checked
 * handles, several devices, and simulated latency.
 *
 * Linked against the core's object library to reach core/src (graphs,
 * views, module records). Usage: test_example_acc CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <plinth/graph_hash.h>

#include "graph.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"

static const char *stage_dir;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fprintf(stderr, "\n");                                             \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* Fails unless ST is success; frees nothing (the case ends). */
#define CHECK_OK(expr)                                                         \
    do {                                                                       \
        pl_status *st_ = (expr);                                               \
        CHECK(st_ == NULL, "%s: %s", #expr, pl_status_message(st_));           \
    } while (0)

/* Checks that ST failed with CODE and a message containing TEXT, then
 * frees it. */
static void check_error(pl_status *st, pl_code code, const char *text, int line)
{
    if (st == NULL) {
        fprintf(stderr, "line %d: expected %s (\"%s\"), got success\n", line,
                pl_code_name(code), text);
        exit(1);
    }
    if (pl_status_code(st) != code || strstr(pl_status_message(st), text) == NULL) {
        fprintf(stderr, "line %d: expected %s containing \"%s\", got %s: %s\n", line,
                pl_code_name(code), text, pl_code_name(pl_status_code(st)),
                pl_status_message(st));
        exit(1);
    }
    pl_status_free(st);
}
#define CHECK_ERROR(expr, code, text) check_error((expr), (code), (text), __LINE__)

/* ---- the runtime and the module -------------------------------------------- */

struct xt {
    pl_runtime *rt;
    pl_module *m;
};

/* A runtime that loads only the staged example_acc, with SECTION (backend.ini
 * lines of [example_acc], may be "") as its configuration. */
static struct xt xt_open(const char *section)
{
    char dir[] = "/tmp/plinth-xacc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL, "fopen %s", ini);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_example_acc.so\nthreads = 2\n\n"
               "[example_acc]\n%s\n",
            stage_dir, section);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    struct xt x = {0};
    CHECK_OK(pl_runtime_create(&o, &x.rt));
    unlink(ini);
    rmdir(dir);
    long idx = pl_runtime_find_module(x.rt, "example_acc");
    CHECK(idx >= 0, "example_acc not loaded");
    x.m = x.rt->modules[idx];
    CHECK(x.m->status == PL_MODULE_LOADED && x.m->ctx != NULL, "example_acc: %s",
          x.m->reason);
    return x;
}

static void xt_close(struct xt *x)
{
    pl_runtime_destroy(x->rt);
}

/* ---- graphs ---------------------------------------------------------------- */

static pl_tid tensor(pl_graph *g, const char *name, pl_dtype dt, int ndim, const int64_t *dims)
{
    pl_tid t;
    CHECK_OK(pl_graph_tensor_get_or_add(g, name, &t));
    CHECK_OK(pl_graph_set_type(g, t, dt, ndim, dims, NULL));
    return t;
}

static void graph_input(pl_graph *g, const char *name, pl_dtype dt, int ndim,
                        const int64_t *dims)
{
    CHECK_OK(pl_graph_add_input(g, tensor(g, name, dt, ndim, dims)));
}

static void constant(pl_graph *g, const char *name, int ndim, const int64_t *dims,
                     const float *data, size_t n)
{
    pl_tid t = tensor(g, name, PL_DTYPE_F32, ndim, dims);
    CHECK_OK(pl_graph_set_constant(g, t, data, n * sizeof *data));
}

/* Adds node NAME; INS and OUT are tensor names (INS NULL-terminated). */
static pl_nid node(pl_graph *g, const char *name, const char *op, const char *out, ...)
{
    const char *ins[8];
    size_t n = 0;
    va_list ap;
    va_start(ap, out);
    for (const char *s; (s = va_arg(ap, const char *)) != NULL && n < 8;)
        ins[n++] = s;
    va_end(ap);
    pl_nid id;
    CHECK_OK(pl_graph_add_node(g, name, op, "", ins, n, &out, 1, &id));
    return id;
}

/* Validates G and infers every type, with the runtime's opset. */
static void finish(pl_runtime *rt, pl_graph *g)
{
    CHECK_OK(pl_graph_validate(g));
    CHECK_OK(pl_opset_infer(rt->opset, g));
}

/* A view of the nodes named in NAMES (NULL-terminated), in that order. */
static pl_graph_view *view_of(const pl_graph *g, const char *const *names)
{
    pl_nid ids[16];
    size_t n = 0;
    for (; names[n] != NULL; n++) {
        ids[n] = pl_graph_find_node(g, names[n]);
        CHECK(ids[n] != PL_NID_NONE, "no node %s", names[n]);
    }
    pl_graph_view *v = NULL;
    CHECK_OK(pl_graph_view_create(g, ids, n, &v));
    return v;
}

/* ---- the MLP -----------------------------------------------------------------
 *
 * y = Gemm(relu(x W1 + b1), W2, b2; transB = 1, alpha = 0.5, beta = 2):
 * shapes that are not multiples of the 8x8 tile, and larger than one. */

enum { MB = 10, MIN = 13, MHID = 17, MOUT = 9 };

struct mlp {
    float x[MB * MIN], w1[MIN * MHID], b1[MHID], w2[MOUT * MHID], b2[MOUT];
    double y[MB * MOUT];  /* the reference */
    double h2[MB * MHID]; /* x W1 + b1 */
};

static float rnd(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (float)((*state >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static void mlp_data(struct mlp *d, unsigned seed)
{
    unsigned s = seed;
    for (size_t i = 0; i < sizeof d->x / sizeof d->x[0]; i++)
        d->x[i] = rnd(&s);
    for (size_t i = 0; i < sizeof d->w1 / sizeof d->w1[0]; i++)
        d->w1[i] = rnd(&s);
    for (size_t i = 0; i < MHID; i++)
        d->b1[i] = rnd(&s);
    for (size_t i = 0; i < sizeof d->w2 / sizeof d->w2[0]; i++)
        d->w2[i] = rnd(&s);
    for (size_t i = 0; i < MOUT; i++)
        d->b2[i] = rnd(&s);
    for (int r = 0; r < MB; r++) {
        double h[MHID];
        for (int j = 0; j < MHID; j++) {
            double acc = 0;
            for (int k = 0; k < MIN; k++)
                acc += (double)d->x[r * MIN + k] * d->w1[k * MHID + j];
            d->h2[r * MHID + j] = acc + d->b1[j];
            h[j] = d->h2[r * MHID + j] > 0 ? d->h2[r * MHID + j] : 0;
        }
        for (int o = 0; o < MOUT; o++) {
            double acc = 0;
            for (int j = 0; j < MHID; j++)
                acc += h[j] * d->w2[o * MHID + j];
            d->y[r * MOUT + o] = 0.5 * acc + 2.0 * d->b2[o];
        }
    }
}

static pl_graph *mlp_graph(pl_runtime *rt, const struct mlp *d)
{
    pl_graph *g = NULL;
    CHECK_OK(pl_graph_create(&g));
    graph_input(g, "x", PL_DTYPE_F32, 2, (int64_t[]){MB, MIN});
    constant(g, "W1", 2, (int64_t[]){MIN, MHID}, d->w1, MIN * MHID);
    constant(g, "b1", 1, (int64_t[]){MHID}, d->b1, MHID);
    constant(g, "W2", 2, (int64_t[]){MOUT, MHID}, d->w2, MOUT * MHID);
    constant(g, "b2", 1, (int64_t[]){MOUT}, d->b2, MOUT);
    node(g, "mm", "MatMul", "h1", "x", "W1", NULL);
    node(g, "add", "Add", "h2", "h1", "b1", NULL);
    node(g, "relu", "Relu", "h3", "h2", NULL);
    pl_nid gemm = node(g, "gemm", "Gemm", "y", "h3", "W2", "b2", NULL);
    CHECK_OK(pl_graph_attr_int(g, gemm, "transB", 1));
    CHECK_OK(pl_graph_attr_float(g, gemm, "alpha", 0.5));
    CHECK_OK(pl_graph_attr_float(g, gemm, "beta", 2.0));
    CHECK_OK(pl_graph_add_output(g, pl_graph_find_tensor(g, "y")));
    finish(rt, g);
    return g;
}

static const char *const mlp_nodes[] = {"mm", "add", "relu", "gemm", NULL};

/* ---- running --------------------------------------------------------------- */

#define IN_OFFSET 64  /* where the input sits inside its buffer */
#define OUT_OFFSET 32 /* and the output */

/* Runs COMPILED (one input of IN_FLOATS, one output of OUT_FLOATS with the
 * given shapes) on DEVICE, the tensors placed at offsets inside larger
 * buffers, and returns the run's status. The bytes around the output must
 * still hold the guard pattern afterwards. */
static pl_status *run_one(struct xt *x, pl_compiled *c, int device, const float *in,
                          int in_ndim, int64_t *in_dims, size_t in_floats, float *out,
                          int out_ndim, int64_t *out_dims, size_t out_floats)
{
    const pl_module_api *api = &x->m->api;
    size_t in_bytes = in_floats * sizeof(float), out_bytes = out_floats * sizeof(float);
    void *hin = NULL, *hout = NULL;
    CHECK_OK(api->mem_alloc(x->m->ctx, device, in_bytes + IN_OFFSET, 0, &hin));
    CHECK_OK(api->mem_alloc(x->m->ctx, device, out_bytes + 2 * OUT_OFFSET, 0, &hout));
    CHECK_OK(api->copy_to_device(x->m->ctx, device, hin, IN_OFFSET, in, in_bytes));
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context), .device = device};
    pl_tensor ti = {.data = hin, .device = {PL_DEVICE_EXT, device}, .ndim = in_ndim,
                    .dtype = PL_DTYPE_F32, .shape = in_dims, .byte_offset = IN_OFFSET,
                    .struct_size = sizeof(pl_tensor)};
    pl_tensor to = {.data = hout, .device = {PL_DEVICE_EXT, device}, .ndim = out_ndim,
                    .dtype = PL_DTYPE_F32, .shape = out_dims, .byte_offset = OUT_OFFSET,
                    .struct_size = sizeof(pl_tensor)};
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args), .run = &rc, .n_inputs = 1,
                        .inputs = &ti, .n_outputs = 1, .outputs = &to};
    pl_status *st = api->run(x->m->ctx, c, &args);
    if (st == NULL) {
        unsigned char *all = malloc(out_bytes + 2 * OUT_OFFSET);
        CHECK(all != NULL, "malloc");
        CHECK_OK(api->copy_to_host(x->m->ctx, device, all, hout, 0, out_bytes + 2 * OUT_OFFSET));
        for (size_t i = 0; i < OUT_OFFSET; i++)
            CHECK(all[i] == 0xA5 && all[OUT_OFFSET + out_bytes + i] == 0xA5,
                  "run wrote outside its output tensor (byte %zu)", i);
        memcpy(out, all + OUT_OFFSET, out_bytes);
        free(all);
    }
    api->mem_free(x->m->ctx, device, hin);
    api->mem_free(x->m->ctx, device, hout);
    return st;
}

static pl_status *run_mlp(struct xt *x, pl_compiled *c, int device, const struct mlp *d,
                          float *y)
{
    int64_t in_dims[2] = {MB, MIN}, out_dims[2] = {MB, MOUT};
    return run_one(x, c, device, d->x, 2, in_dims, MB * MIN, y, 2, out_dims, MB * MOUT);
}

static void check_close(const float *got, const double *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(fabs(got[i] - want[i]) <= 1e-5 * (1.0 + fabs(want[i])),
              "%s[%zu] = %.9g, reference %.9g", what, i, got[i], want[i]);
}

/* Compiles the MLP on DEVICE, runs it, compares with the reference. */
static pl_compiled *compile_mlp(struct xt *x, pl_graph_view *v, int device)
{
    pl_compiled *c = NULL;
    CHECK_OK(x->m->api.compile(x->m->ctx, device, v, &c));
    CHECK(c != NULL, "compile gave nothing");
    return c;
}

/* ---- blobs ------------------------------------------------------------------- */

struct blob {
    unsigned char *bytes;
    size_t n;
};

static void blob_sink(void *ctx, const void *bytes, size_t n)
{
    struct blob *b = ctx;
    b->bytes = realloc(b->bytes, b->n + n + 1);
    CHECK(b->bytes != NULL, "realloc");
    memcpy(b->bytes + b->n, bytes, n);
    b->n += n;
}

static struct blob export_blob(struct xt *x, pl_compiled *c)
{
    struct blob b = {0};
    CHECK_OK(x->m->api.export_compiled(x->m->ctx, c, blob_sink, &b));
    CHECK(b.n > 8, "blob of %zu bytes", b.n);
    return b;
}

/* The blob's checksum as the module computes it (pl_hash_bytes of all but
 * the last 8 bytes), rewritten so that a forged change passes it. */
static void blob_reseal(unsigned char *bytes, size_t n)
{
    uint64_t h = PL_HASH_SEED;
    pl_hash_bytes(&h, bytes, n - 8);
    memcpy(bytes + n - 8, &h, 8);
}

/* ---- cases --------------------------------------------------------------------- */

struct verdicts {
    size_t n;
    int supported[32];
    char reason[32][256];
    int calls[32];
};

static void verdict_sink(void *ctx, size_t node, int supported, const char *reason)
{
    struct verdicts *v = ctx;
    CHECK(node < 32, "node index %zu", node);
    v->supported[node] = supported;
    v->calls[node]++;
    snprintf(v->reason[node], sizeof v->reason[node], "%s", reason ? reason : "");
    v->n++;
}

/* Verdicts and reasons of supported_nodes on a whole graph. */
static void case_supported_nodes(void)
{
    struct xt x = xt_open("");
    pl_graph *g = NULL;
    CHECK_OK(pl_graph_create(&g));
    graph_input(g, "a", PL_DTYPE_F32, 2, (int64_t[]){2, 3});
    graph_input(g, "b", PL_DTYPE_F32, 2, (int64_t[]){3, 4});
    graph_input(g, "a3", PL_DTYPE_F32, 3, (int64_t[]){2, 2, 3});
    graph_input(g, "bt", PL_DTYPE_F32, 2, (int64_t[]){4, 3});
    graph_input(g, "bias", PL_DTYPE_F32, 1, (int64_t[]){4});
    graph_input(g, "img", PL_DTYPE_F32, 4, (int64_t[]){1, 1, 5, 5});
    graph_input(g, "k", PL_DTYPE_F32, 4, (int64_t[]){1, 1, 3, 3});
    graph_input(g, "p", PL_DTYPE_I64, 1, (int64_t[]){4});
    graph_input(g, "q", PL_DTYPE_I64, 1, (int64_t[]){4});
    node(g, "mm", "MatMul", "c", "a", "b", NULL);
    node(g, "mm3", "MatMul", "c3", "a3", "b", NULL);
    pl_nid gm = node(g, "gemm", "Gemm", "gy", "a", "bt", "bias", NULL);
    CHECK_OK(pl_graph_attr_int(g, gm, "transB", 1));
    CHECK_OK(pl_graph_attr_float(g, gm, "alpha", 2.0));
    node(g, "add", "Add", "d", "c", "bias", NULL);
    node(g, "add_first", "Add", "d2", "bias", "c", NULL);
    node(g, "relu", "Relu", "r", "d", NULL);
    node(g, "conv", "Conv", "cv", "img", "k", NULL);
    node(g, "addi", "Add", "pi", "p", "q", NULL);
    node(g, "sub", "Sub", "s", "r", "c", NULL);
    node(g, "mul", "Mul", "mu", "s", "gy", NULL);
    const char *outs[] = {"c3", "d2", "cv", "pi", "mu"};
    for (size_t i = 0; i < 5; i++)
        CHECK_OK(pl_graph_add_output(g, pl_graph_find_tensor(g, outs[i])));
    finish(x.rt, g);

    pl_graph_view *v = NULL;
    CHECK_OK(pl_graph_view_create(g, NULL, 0, &v));
    struct verdicts vd = {0};
    CHECK_OK(x.m->api.supported_nodes(x.m->ctx, 0, v, verdict_sink, &vd));
    const pl_graph_api *ga = pl_host_table.graph;
    size_t n = ga->node_count(v);
    CHECK(vd.n == n, "%zu verdicts for %zu nodes", vd.n, n);
    static const struct {
        const char *node;
        int supported;
        const char *reason;
    } want[] = {
        {"mm", 1, ""},
        {"mm3", 0, "example_acc: MatMul: only 2-D operands supported"},
        {"gemm", 1, ""},
        {"add", 1, ""},
        {"add_first", 0, "example_acc: Add: broadcast of the first operand"},
        {"relu", 1, ""},
        {"conv", 0, "example_acc: Conv: op not supported"},
        {"addi", 0, "example_acc: Add: dtype i64 not supported"},
        {"sub", 1, ""},
        {"mul", 1, ""},
    };
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        size_t i = 0;
        while (i < n && strcmp(ga->node_name(v, i), want[w].node) != 0)
            i++;
        CHECK(i < n && vd.calls[i] == 1, "node %s: %d verdicts", want[w].node,
              i < n ? vd.calls[i] : 0);
        CHECK(vd.supported[i] == want[w].supported, "node %s: supported = %d", want[w].node,
              vd.supported[i]);
        if (!want[w].supported)
            CHECK(strstr(vd.reason[i], want[w].reason) != NULL, "node %s: reason \"%s\"",
                  want[w].node, vd.reason[i]);
    }
    /* A node it refuses fails compile with the same reason. */
    pl_graph_view *conv = view_of(g, (const char *[]){"conv", NULL});
    pl_compiled *c = (pl_compiled *)1;
    CHECK_ERROR(x.m->api.compile(x.m->ctx, 0, conv, &c), PL_CODE_UNSUPPORTED,
                "Conv: op not supported");
    CHECK(c == NULL, "out_compiled not cleared");
    /* A device it does not have. */
    CHECK_ERROR(x.m->api.supported_nodes(x.m->ctx, 1, v, verdict_sink, &vd),
                PL_CODE_INVALID_ARGUMENT, "no device 1");
    pl_graph_view_destroy(conv);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* Compile and run of the MLP subgraph against the reference. */
static void case_mlp(void)
{
    struct xt x = xt_open("");
    static struct mlp d;
    mlp_data(&d, 1);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = compile_mlp(&x, v, 0);
    float y[MB * MOUT];
    for (int round = 0; round < 3; round++) {
        memset(y, 0, sizeof y);
        CHECK_OK(run_mlp(&x, c, 0, &d, y));
        check_close(y, d.y, MB * MOUT, "y");
    }
    /* Wrong arguments are refused, not run. */
    int64_t bad_dims[2] = {MB, MIN + 1}, out_dims[2] = {MB, MOUT};
    float big[MB * (MIN + 1)] = {0};
    CHECK_ERROR(run_one(&x, c, 0, big, 2, bad_dims, MB * (MIN + 1), y, 2, out_dims, MB * MOUT),
                PL_CODE_INVALID_ARGUMENT, "not a plain f32 tensor of the compiled shape");
    x.m->api.release(x.m->ctx, c);
    /* The graph may go once compiled: the program holds its own weights. */
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* A part of the MLP (MatMul, Add): its output is the intermediate h2. */
static void check_prefix(struct xt *x, pl_graph *g, const struct mlp *d)
{
    pl_graph_view *v = view_of(g, (const char *[]){"mm", "add", NULL});
    pl_compiled *c = compile_mlp(x, v, 0);
    int64_t in_dims[2] = {MB, MIN}, out_dims[2] = {MB, MHID};
    float h2[MB * MHID];
    CHECK_OK(run_one(x, c, 0, d->x, 2, in_dims, MB * MIN, h2, 2, out_dims, MB * MHID));
    check_close(h2, d->h2, MB * MHID, "h2");
    x->m->api.release(x->m->ctx, c);
    pl_graph_view_destroy(v);
}

/* export -> import -> run gives the same bits; re-export gives the same
 * blob. */
static void case_export_import(void)
{
    struct xt x = xt_open("");
    static struct mlp d;
    mlp_data(&d, 2);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = compile_mlp(&x, v, 0);
    float y1[MB * MOUT], y2[MB * MOUT];
    CHECK_OK(run_mlp(&x, c, 0, &d, y1));
    struct blob b = export_blob(&x, c);
    x.m->api.release(x.m->ctx, c);

    pl_compiled *ci = NULL;
    CHECK_OK(x.m->api.import_compiled(x.m->ctx, 0, v, b.bytes, b.n, &ci));
    CHECK_OK(run_mlp(&x, ci, 0, &d, y2));
    CHECK(memcmp(y1, y2, sizeof y1) == 0, "imported program computes other results");
    check_close(y2, d.y, MB * MOUT, "y");
    struct blob b2 = export_blob(&x, ci);
    CHECK(b2.n == b.n && memcmp(b.bytes, b2.bytes, b.n) == 0, "re-export differs");
    x.m->api.release(x.m->ctx, ci);
    free(b.bytes);
    free(b2.bytes);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* A blob written for one subgraph is refused for another: other weights,
 * other nodes. */
static void case_import_incompatible(void)
{
    struct xt x = xt_open("");
    static struct mlp d, e;
    mlp_data(&d, 3);
    mlp_data(&e, 4);
    pl_graph *g = mlp_graph(x.rt, &d), *h = mlp_graph(x.rt, &e);
    pl_graph_view *v = view_of(g, mlp_nodes), *w = view_of(h, mlp_nodes);
    pl_graph_view *part = view_of(g, (const char *[]){"mm", "add", NULL});
    pl_compiled *c = compile_mlp(&x, v, 0);
    struct blob b = export_blob(&x, c);
    x.m->api.release(x.m->ctx, c);
    pl_compiled *ci = (pl_compiled *)1;
    CHECK_ERROR(x.m->api.import_compiled(x.m->ctx, 0, w, b.bytes, b.n, &ci),
                PL_CODE_INCOMPATIBLE, "compiled for another subgraph");
    CHECK(ci == NULL, "out_compiled not cleared");
    CHECK_ERROR(x.m->api.import_compiled(x.m->ctx, 0, part, b.bytes, b.n, &ci),
                PL_CODE_INCOMPATIBLE, "compiled for another subgraph");
    /* Another module version or format: incompatible, too. */
    b.bytes[16] ^= 0xFF; /* the module version string */
    CHECK_ERROR(x.m->api.import_compiled(x.m->ctx, 0, v, b.bytes, b.n, &ci),
                PL_CODE_INCOMPATIBLE, "example_acc");
    b.bytes[16] ^= 0xFF;
    CHECK_OK(x.m->api.import_compiled(x.m->ctx, 0, v, b.bytes, b.n, &ci));
    x.m->api.release(x.m->ctx, ci);
    free(b.bytes);
    pl_graph_view_destroy(part);
    pl_graph_view_destroy(v);
    pl_graph_view_destroy(w);
    pl_graph_destroy(g);
    pl_graph_destroy(h);
    xt_close(&x);
}

/* Truncated, extended, corrupted and forged blobs: refused with
 * INVALID_ARGUMENT, or (forged ones that stay consistent) imported and run
 * without touching memory outside the program's buffers. */
static void case_import_malformed(void)
{
    struct xt x = xt_open("");
    static struct mlp d;
    mlp_data(&d, 5);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = compile_mlp(&x, v, 0);
    struct blob b = export_blob(&x, c);
    x.m->api.release(x.m->ctx, c);
    const pl_module_api *api = &x.m->api;
    pl_compiled *ci = NULL;

    for (size_t len = 0; len < b.n; len++)
        CHECK_ERROR(api->import_compiled(x.m->ctx, 0, v, b.bytes, len, &ci),
                    PL_CODE_INVALID_ARGUMENT, "malformed blob");
    unsigned char *copy = malloc(b.n + 16);
    CHECK(copy != NULL, "malloc");
    memcpy(copy, b.bytes, b.n);
    memset(copy + b.n, 0, 16);
    CHECK_ERROR(api->import_compiled(x.m->ctx, 0, v, copy, b.n + 16, &ci),
                PL_CODE_INVALID_ARGUMENT, "malformed blob");
    CHECK_ERROR(api->import_compiled(x.m->ctx, 0, v, NULL, 0, &ci), PL_CODE_INVALID_ARGUMENT,
                "malformed blob");
    /* Any flipped byte: the magic, or the checksum catches it (the 16
     * bytes of format, byte order and version are INCOMPATIBLE). */
    for (size_t i = 0; i < b.n; i++) {
        if (i >= 8 && i < 32)
            continue;
        memcpy(copy, b.bytes, b.n);
        copy[i] ^= 0x5A;
        CHECK_ERROR(api->import_compiled(x.m->ctx, 0, v, copy, b.n, &ci),
                    PL_CODE_INVALID_ARGUMENT, "malformed blob");
    }
    /* Forged: a changed byte anywhere in the counts and the program, with
     * a valid checksum. Either refused with a reason, or imported and run
     * safely (ASan watches). */
    size_t program_end = b.n - 8; /* the weights included */
    size_t refused = 0, accepted = 0;
    static const unsigned char patterns[] = {0x00, 0xFF, 0x01, 0x80, 0x7F};
    for (size_t i = 40; i < program_end; i++) {
        for (size_t p = 0; p < sizeof patterns; p++) {
            memcpy(copy, b.bytes, b.n);
            if (copy[i] == patterns[p])
                continue;
            copy[i] = patterns[p];
            blob_reseal(copy, b.n);
            pl_status *st = api->import_compiled(x.m->ctx, 0, v, copy, b.n, &ci);
            if (st != NULL) {
                CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT ||
                          pl_status_code(st) == PL_CODE_INCOMPATIBLE ||
                          pl_status_code(st) == PL_CODE_OUT_OF_MEMORY,
                      "forged byte %zu: %s", i, pl_status_message(st));
                pl_status_free(st);
                refused++;
                continue;
            }
            accepted++;
            float y[MB * MOUT];
            pl_status_free(run_mlp(&x, ci, 0, &d, y));
            api->release(x.m->ctx, ci);
        }
    }
    CHECK(refused > 0 && accepted > 0, "refused %zu, accepted %zu", refused, accepted);
    free(copy);
    free(b.bytes);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* fail_compile = relu: compile fails at that node, and only where it is. */
static void case_fail_compile(void)
{
    struct xt x = xt_open("fail_compile = relu");
    static struct mlp d;
    mlp_data(&d, 6);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = (pl_compiled *)1;
    CHECK_ERROR(x.m->api.compile(x.m->ctx, 0, v, &c), PL_CODE_DEVICE_ERROR,
                "example_acc: compile failed at node 'relu' (fail_compile)");
    CHECK(c == NULL, "out_compiled not cleared");
    check_prefix(&x, g, &d);
    /* Cleared at run time, the same view compiles. */
    pl_kv kv = {"fail_compile", ""};
    CHECK_OK(pl_module_configure(x.m, &kv, 1));
    c = compile_mlp(&x, v, 0);
    x.m->api.release(x.m->ctx, c);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* max_nodes_per_subgraph = 2: a larger subgraph is refused with a reason,
 * a small one compiles and runs. */
static void case_max_nodes(void)
{
    struct xt x = xt_open("max_nodes_per_subgraph = 2");
    static struct mlp d;
    mlp_data(&d, 7);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = NULL;
    CHECK_ERROR(x.m->api.compile(x.m->ctx, 0, v, &c), PL_CODE_UNSUPPORTED,
                "max_nodes_per_subgraph = 2");
    /* supported_nodes still takes every node: splitting is the core's. */
    struct verdicts vd = {0};
    CHECK_OK(x.m->api.supported_nodes(x.m->ctx, 0, v, verdict_sink, &vd));
    CHECK(vd.n == 4 && vd.supported[0] && vd.supported[1] && vd.supported[2] &&
              vd.supported[3],
          "verdicts");
    check_prefix(&x, g, &d);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

/* Copies are bounds-checked (overflow included) and new memory holds the
 * guard pattern. */
static void case_guard(void)
{
    struct xt x = xt_open("");
    const pl_module_api *api = &x.m->api;
    pl_module_ctx *ctx = x.m->ctx;
    void *h = NULL, *h2 = NULL;
    CHECK_OK(api->mem_alloc(ctx, 0, 100, 0, &h));
    CHECK_OK(api->mem_alloc(ctx, 0, 100, 0, &h2));
    unsigned char buf[128];
    CHECK_OK(api->copy_to_host(ctx, 0, buf, h, 0, 100));
    for (int i = 0; i < 100; i++)
        CHECK(buf[i] == 0xA5, "fresh byte %d is %#x, not the guard pattern", i, buf[i]);
    memset(buf, 7, sizeof buf);
    /* Past the end, through a wrong offset: refused, nothing written. */
    CHECK_ERROR(api->copy_to_device(ctx, 0, h, 90, buf, 20), PL_CODE_INVALID_ARGUMENT,
                "overrun buffer");
    CHECK_ERROR(api->copy_to_device(ctx, 0, h, 101, buf, 0), PL_CODE_INVALID_ARGUMENT,
                "overrun buffer");
    CHECK_ERROR(api->copy_to_device(ctx, 0, h, SIZE_MAX, buf, 2), PL_CODE_INVALID_ARGUMENT,
                "overrun buffer");
    CHECK_ERROR(api->copy_to_device(ctx, 0, h, 2, buf, SIZE_MAX), PL_CODE_INVALID_ARGUMENT,
                "overrun buffer");
    CHECK_ERROR(api->copy_to_host(ctx, 0, buf, h, 99, 2), PL_CODE_INVALID_ARGUMENT,
                "overrun buffer");
    CHECK_ERROR(api->copy_device_to_device(ctx, 0, h, 0, 0, h2, 50, 51),
                PL_CODE_INVALID_ARGUMENT, "overrun buffer");
    /* Up to the last byte is fine, and the neighbours are untouched. */
    CHECK_OK(api->copy_to_device(ctx, 0, h, 90, buf, 10));
    CHECK_OK(api->copy_device_to_device(ctx, 0, h, 50, 0, h2, 0, 50));
    CHECK_OK(api->copy_to_host(ctx, 0, buf, h2, 0, 100));
    for (int i = 0; i < 100; i++)
        CHECK(buf[i] == (i >= 40 && i < 50 ? 7 : 0xA5), "h2 byte %d is %#x", i, buf[i]);
    /* Stale and forged handles. */
    api->mem_free(ctx, 0, h);
    CHECK_ERROR(api->copy_to_host(ctx, 0, buf, h, 0, 1), PL_CODE_INVALID_ARGUMENT,
                "not a live buffer");
    api->mem_free(ctx, 0, h); /* twice: logged, survived */
    void *forged = (void *)((uintptr_t)h2 + 16 * 1000);
    CHECK_ERROR(api->copy_to_host(ctx, 0, buf, forged, 0, 1), PL_CODE_INVALID_ARGUMENT,
                "not a live buffer");
    CHECK_ERROR(api->copy_to_host(ctx, 0, buf, (void *)buf, 0, 1), PL_CODE_INVALID_ARGUMENT,
                "not a live buffer");
    /* release_all frees what is left (ASan checks nothing leaks). */
    api->mem_release_all(ctx, 0);
    CHECK_ERROR(api->copy_to_host(ctx, 0, buf, h2, 0, 1), PL_CODE_INVALID_ARGUMENT,
                "not a live buffer");
    xt_close(&x);
}

/* Handles are not host pointers: tagged low bits, never 16-byte aligned,
 * distinct even for zero bytes, and dereferencing one faults. */
static void case_handles(void)
{
    struct xt x = xt_open("");
    const pl_module_api *api = &x.m->api;
    pl_module_ctx *ctx = x.m->ctx;
    void *h[6];
    size_t sizes[6] = {0, 0, 1, 64, 4096, 1 << 20};
    for (int i = 0; i < 6; i++) {
        CHECK_OK(api->mem_alloc(ctx, 0, sizes[i], i == 5 ? 4096 : 0, &h[i]));
        CHECK(h[i] != NULL, "NULL handle for %zu bytes", sizes[i]);
        CHECK(((uintptr_t)h[i] & 15u) != 0, "handle %p is 16-byte aligned", h[i]);
        for (int j = 0; j < i; j++)
            CHECK(h[i] != h[j], "handles %d and %d are equal", i, j);
    }
    void *refused = (void *)1;
    CHECK_ERROR(api->mem_alloc(ctx, 0, 8, 3, &refused), PL_CODE_INVALID_ARGUMENT,
                "bad alignment");
    CHECK(refused == NULL, "out_ptr not cleared");
    CHECK_ERROR(api->mem_alloc(ctx, 0, (size_t)1 << 40, 0, &refused), PL_CODE_OUT_OF_MEMORY,
                "out of memory");
    CHECK_ERROR(api->mem_alloc(ctx, 1, 8, 0, &refused), PL_CODE_INVALID_ARGUMENT,
                "no device 1");
    /* The core must never do this; a child process shows what happens. */
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        volatile unsigned char byte = *(volatile unsigned char *)h[4];
        (void)byte;
        _exit(0);
    }
    int wstatus = 0;
    CHECK(waitpid(pid, &wstatus, 0) == pid, "waitpid");
    CHECK(!(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0),
          "dereferencing a handle did not fault");
    for (int i = 0; i < 6; i++)
        api->mem_free(ctx, 0, h[i]);
    xt_close(&x);
}

/* memory_mb = 4: the device reports 4 MiB and refuses more in use; the
 * key refuses 0 and a size below what a device holds. */
static void case_memory_mb(void)
{
    struct xt x = xt_open("memory_mb = 4");
    const pl_module_api *api = &x.m->api;
    pl_device_properties props = {.header = PL_ABI_HEADER_INIT(pl_device_properties)};
    CHECK_OK(api->device_properties(x.m->ctx, 0, &props));
    CHECK(props.memory_bytes == (uint64_t)4 << 20, "memory_bytes %llu",
          (unsigned long long)props.memory_bytes);
    void *a = NULL, *b = NULL;
    CHECK_OK(api->mem_alloc(x.m->ctx, 0, (size_t)3 << 20, 0, &a));
    CHECK_ERROR(api->mem_alloc(x.m->ctx, 0, (size_t)2 << 20, 0, &b), PL_CODE_OUT_OF_MEMORY,
                "device 0 out of memory: 2097152 bytes requested, 3145728 of 4194304 in use");
    CHECK(b == NULL, "a refused buffer was returned");
    pl_kv small = {"memory_mb", "2"}, zero = {"memory_mb", "0"};
    CHECK_ERROR(pl_module_configure(x.m, &small, 1), PL_CODE_FAILED_PRECONDITION,
                "cannot set memory_mb = 2 while device 0 holds 3145728 bytes");
    CHECK_ERROR(pl_module_configure(x.m, &zero, 1), PL_CODE_INVALID_ARGUMENT, "memory_mb");
    api->mem_free(x.m->ctx, 0, a);
    CHECK_OK(pl_module_configure(x.m, &small, 1));
    CHECK_OK(api->device_properties(x.m->ctx, 0, &props));
    CHECK(props.memory_bytes == (uint64_t)2 << 20, "memory_bytes %llu after memory_mb = 2",
          (unsigned long long)props.memory_bytes);
    CHECK_ERROR(api->mem_alloc(x.m->ctx, 0, (size_t)3 << 20, 0, &a), PL_CODE_OUT_OF_MEMORY,
                "of 2097152 in use");
    xt_close(&x);
}

/* devices = 3: everything on device 2, and a buffer of device 0 refused. */
static void case_devices3(void)
{
    struct xt x = xt_open("devices = 3");
    const pl_module_api *api = &x.m->api;
    CHECK(api->device_count(x.m->ctx) == 3, "%d devices", api->device_count(x.m->ctx));
    pl_device_properties props = {.header = PL_ABI_HEADER_INIT(pl_device_properties)};
    CHECK_OK(api->device_properties(x.m->ctx, 2, &props));
    CHECK(strcmp(props.name, "Simulated accelerator 2") == 0 &&
              props.device_type == PL_DEVICE_EXT,
          "%s", props.name);
    CHECK_ERROR(api->device_properties(x.m->ctx, 3, &props), PL_CODE_INVALID_ARGUMENT,
                "no device 3");
    static struct mlp d;
    mlp_data(&d, 8);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = compile_mlp(&x, v, 2);
    float y[MB * MOUT];
    CHECK_OK(run_mlp(&x, c, 2, &d, y));
    check_close(y, d.y, MB * MOUT, "y");
    /* Data on device 0 for a subgraph of device 2. */
    CHECK_ERROR(run_mlp(&x, c, 0, &d, y), PL_CODE_INVALID_ARGUMENT, "device");
    /* Device 2 holds the compiled weights: it cannot go away. */
    pl_kv kv = {"devices", "1"};
    CHECK_ERROR(pl_module_configure(x.m, &kv, 1), PL_CODE_FAILED_PRECONDITION,
                "device 2 holds allocated memory");
    /* export on device 2, import on device 1: the program is portable. */
    struct blob b = export_blob(&x, c);
    pl_compiled *ci = NULL;
    CHECK_OK(api->import_compiled(x.m->ctx, 1, v, b.bytes, b.n, &ci));
    CHECK_OK(run_mlp(&x, ci, 1, &d, y));
    check_close(y, d.y, MB * MOUT, "y");
    api->release(x.m->ctx, ci);
    api->release(x.m->ctx, c);
    CHECK_OK(pl_module_configure(x.m, &kv, 1));
    CHECK(api->device_count(x.m->ctx) == 1, "devices not reduced");
    free(b.bytes);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* latency_us = 100000: a run takes at least that long (no upper bound:
 * machines are slow at times). */
static void case_latency(void)
{
    struct xt x = xt_open("latency_us = 100000");
    static struct mlp d;
    mlp_data(&d, 9);
    pl_graph *g = mlp_graph(x.rt, &d);
    pl_graph_view *v = view_of(g, mlp_nodes);
    pl_compiled *c = compile_mlp(&x, v, 0);
    float y[MB * MOUT];
    double t0 = now_s();
    CHECK_OK(run_mlp(&x, c, 0, &d, y));
    double took = now_s() - t0;
    CHECK(took >= 0.1, "run took %.3f s with latency_us = 100000", took);
    check_close(y, d.y, MB * MOUT, "y");
    x.m->api.release(x.m->ctx, c);
    pl_graph_view_destroy(v);
    pl_graph_destroy(g);
    xt_close(&x);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"supported_nodes", case_supported_nodes},
    {"mlp", case_mlp},
    {"export_import", case_export_import},
    {"import_incompatible", case_import_incompatible},
    {"import_malformed", case_import_malformed},
    {"fail_compile", case_fail_compile},
    {"max_nodes", case_max_nodes},
    {"guard", case_guard},
    {"handles", case_handles},
    {"memory_mb", case_memory_mb},
    {"devices3", case_devices3},
    {"latency", case_latency},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    stage_dir = argv[2];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(cases[i].name, argv[1]) == 0) {
            cases[i].run();
            printf("ok %s\n", argv[1]);
            return 0;
        }
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
