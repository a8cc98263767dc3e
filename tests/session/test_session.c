/* test_session.c — the first vertical slice, end to end through the public
 * API: JSON models run on cpu alone, on example_acc + cpu, and with
 * example_acc disabled; outputs agree with a reference this test computes
 * itself; placement is what backend.ini implies; failures are named;
 * compile failures fall back or fail by `strict`; one session serves many
 * threads at once; epilogue fusion (ABI 1.1 kernel_fuse), through a fixture
 * module that fuses what a test tells it to and through the cpu module's
 * Conv/Gemm/MatMul + Relu/Clip.
 * Usage: test_session CASE STAGE_DIR CUSTOM_MODULE_FILE SOURCE_DIR
 * FUSE_FIXTURE_DIR. */
#define _GNU_SOURCE /* open_memstream */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../explain_json.h"
#include "../harness.h"
#include "explain_text.h"

/* ---- models written by the test ------------------------------------------ */

enum { BATCH = 4, IN = 16, HID = 32, OUT = 8 };

typedef struct weights {
    float w1[IN * HID], b1[HID], w2[HID * IN], b2[IN], w3[OUT * IN], b3[OUT];
} weights;

static void make_weights(weights *w)
{
    uint32_t s = 7;
    float *all = (float *)w;
    for (size_t i = 0; i < sizeof *w / sizeof(float); i++) {
        s = s * 1664525u + 1013904223u;
        all[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.5f;
    }
}

/* The residual model: h = relu(x W1 + b1); r = relu(h W2 + b2 + x);
 * y = Gemm(r, W3^T, b3) (transB = 1); z = softmax(y). OUTPUTS is the JSON
 * list of graph outputs without its brackets; EXTRA_NODES, when not empty,
 * JSON node objects appended to the node list (with a leading comma). */
static const char *write_residual_with(const weights *w, const char *outputs,
                                       const char *extra_nodes)
{
    const char *dir = th_tempdir();
    FILE *f = fopen(th_path(dir, "model.weights"), "wb");
    TH_CHECK(f != NULL, "cannot write weights");
    fwrite(w, sizeof *w, 1, f);
    fclose(f);
    size_t o_w1 = 0, o_b1 = o_w1 + sizeof w->w1, o_w2 = o_b1 + sizeof w->b1,
           o_b2 = o_w2 + sizeof w->w2, o_w3 = o_b2 + sizeof w->b2, o_b3 = o_w3 + sizeof w->w3;
    char json[16384];
    snprintf(json, sizeof json,
             "{\"format\":\"plinth-graph\",\"version\":1,"
             "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
             "\"weights\":\"model.weights\",\"inputs\":[\"x\"],\"outputs\":[%s],"
             "\"tensors\":["
             "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[%d,%d]},"
             "{\"name\":\"w1\",\"dtype\":\"f32\",\"shape\":[%d,%d],\"data\":{\"offset\":%zu,\"length\":%zu}},"
             "{\"name\":\"b1\",\"dtype\":\"f32\",\"shape\":[%d],\"data\":{\"offset\":%zu,\"length\":%zu}},"
             "{\"name\":\"w2\",\"dtype\":\"f32\",\"shape\":[%d,%d],\"data\":{\"offset\":%zu,\"length\":%zu}},"
             "{\"name\":\"b2\",\"dtype\":\"f32\",\"shape\":[%d],\"data\":{\"offset\":%zu,\"length\":%zu}},"
             "{\"name\":\"w3\",\"dtype\":\"f32\",\"shape\":[%d,%d],\"data\":{\"offset\":%zu,\"length\":%zu}},"
             "{\"name\":\"b3\",\"dtype\":\"f32\",\"shape\":[%d],\"data\":{\"offset\":%zu,\"length\":%zu}}],"
             "\"nodes\":["
             "{\"name\":\"mm1\",\"op\":\"MatMul\",\"inputs\":[\"x\",\"w1\"],\"outputs\":[\"a1\"]},"
             "{\"name\":\"add1\",\"op\":\"Add\",\"inputs\":[\"a1\",\"b1\"],\"outputs\":[\"a2\"]},"
             "{\"name\":\"relu1\",\"op\":\"Relu\",\"inputs\":[\"a2\"],\"outputs\":[\"h\"]},"
             "{\"name\":\"mm2\",\"op\":\"MatMul\",\"inputs\":[\"h\",\"w2\"],\"outputs\":[\"a3\"]},"
             "{\"name\":\"add2\",\"op\":\"Add\",\"inputs\":[\"a3\",\"b2\"],\"outputs\":[\"a4\"]},"
             "{\"name\":\"skip\",\"op\":\"Add\",\"inputs\":[\"a4\",\"x\"],\"outputs\":[\"a5\"]},"
             "{\"name\":\"relu2\",\"op\":\"Relu\",\"inputs\":[\"a5\"],\"outputs\":[\"r\"]},"
             "{\"name\":\"fc\",\"op\":\"Gemm\",\"inputs\":[\"r\",\"w3\",\"b3\"],\"outputs\":[\"y\"],"
             "\"attributes\":{\"transB\":{\"int\":1}}},"
             "{\"name\":\"softmax\",\"op\":\"Softmax\",\"inputs\":[\"y\"],\"outputs\":[\"z\"],"
             "\"attributes\":{\"axis\":{\"int\":-1}}}%s]}",
             outputs, BATCH, IN, IN, HID, o_w1, sizeof w->w1, HID, o_b1, sizeof w->b1, HID, IN, o_w2,
             sizeof w->w2, IN, o_b2, sizeof w->b2, OUT, IN, o_w3, sizeof w->w3, OUT, o_b3,
             sizeof w->b3, extra_nodes);
    const char *path = th_path(dir, "model.json");
    f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fputs(json, f);
    fclose(f);
    return path;
}

static const char *write_residual(const weights *w)
{
    return write_residual_with(w, "\"z\"", "");
}

/* The residual model's softmax output Z and, when Y_OUT is not NULL, its
 * logits Y. */
static void reference_logits(const weights *w, const float *x, float *z, float *y_out)
{
    for (int b = 0; b < BATCH; b++) {
        double h[HID], r[IN], y[OUT];
        for (int j = 0; j < HID; j++) {
            double acc = w->b1[j];
            for (int k = 0; k < IN; k++)
                acc += (double)x[b * IN + k] * w->w1[k * HID + j];
            h[j] = acc > 0 ? acc : 0;
        }
        for (int j = 0; j < IN; j++) {
            double acc = w->b2[j] + x[b * IN + j];
            for (int k = 0; k < HID; k++)
                acc += h[k] * w->w2[k * IN + j];
            r[j] = acc > 0 ? acc : 0;
        }
        double mx = -1e300, sum = 0;
        for (int j = 0; j < OUT; j++) {
            double acc = w->b3[j];
            for (int k = 0; k < IN; k++)
                acc += r[k] * w->w3[j * IN + k];
            y[j] = acc;
            mx = y[j] > mx ? y[j] : mx;
        }
        for (int j = 0; j < OUT; j++)
            sum += exp(y[j] - mx);
        for (int j = 0; j < OUT; j++)
            z[b * OUT + j] = (float)(exp(y[j] - mx) / sum);
        for (int j = 0; y_out != NULL && j < OUT; j++)
            y_out[b * OUT + j] = (float)y[j];
    }
}

static void reference(const weights *w, const float *x, float *z)
{
    reference_logits(w, x, z, NULL);
}

/* ---- runtime and session ------------------------------------------------- */

/* A runtime on the staged modules with the given extra backend.ini text,
 * and optimize = basic: these cases are about partitioning, pruning,
 * compiling and running the nodes as written (a MatMul and the Add of its
 * bias, a dead branch), which `all` would fuse or remove at load
 * (tests/optimize covers that). */
static pl_runtime *runtime_with(const char *extra)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    /* (EXTRA may bring its own [graph] section) */
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n%s\n%s", th_arg(0), extra,
            strstr(extra, "[graph]") != NULL ? "" : "[graph]\noptimize = basic\n");
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    return rt;
}

static pl_session *session_for(pl_runtime *rt, const char *model_path)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, model_path, &m));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    pl_model_destroy(m); /* the session keeps it */
    return s;
}

/* Writes TEXT into FILE in a fresh temporary folder; its path. */
static const char *write_text(const char *file, const char *text)
{
    const char *path = th_path(th_tempdir(), file);
    FILE *f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return path;
}

/* A runtime whose [placement] order is ORDER ("onednn, cpu"). */
static pl_runtime *runtime_in_order(const char *order)
{
    char extra[96];
    snprintf(extra, sizeof extra, "[placement]\norder = %s\n", order);
    return runtime_with(extra);
}

static void make_input(float *x, int seed)
{
    uint32_t s = (uint32_t)seed * 2654435761u + 1;
    for (int i = 0; i < BATCH * IN; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
}

static void run_and_check(pl_session *s, const weights *w, int seed)
{
    float x[BATCH * IN], z[BATCH * OUT], want[BATCH * OUT];
    make_input(x, seed);
    reference(w, x, want);
    int64_t xs[2] = {BATCH, IN}, zs[2] = {BATCH, OUT};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = xs, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = "z", .tensor = {.data = z, .ndim = 2, .dtype = PL_DTYPE_F32,
                                         .shape = zs, .struct_size = sizeof(pl_tensor)}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
    for (int i = 0; i < BATCH * OUT; i++)
        TH_CHECK(fabsf(z[i] - want[i]) <= 1e-5f, "seed %d: z[%d] = %.9g, reference %.9g", seed,
                 i, z[i], want[i]);
}

static const char *backend_of(json_t *root, const char *node)
{
    return json_string_value(json_object_get(th_placement_of(root, node), "backend"));
}

static void expect_all_on(json_t *root, const char *backend)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "placement"), i, p)
        TH_CHECK(strcmp(json_string_value(json_object_get(p, "backend")), backend) == 0,
                 "node %s runs on %s, expected %s",
                 json_string_value(json_object_get(p, "node")),
                 json_string_value(json_object_get(p, "backend")), backend);
}

static weights W;

static void case_cpu_only(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    expect_all_on(root, "cpu");
    TH_CHECK(json_array_size(json_object_get(root, "copies")) == 0, "copies on cpu alone");
    json_decref(root);
    for (int seed = 0; seed < 5; seed++)
        run_and_check(s, &W, seed);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_acc_and_cpu(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    /* MatMul, Add, Relu and Gemm go to the accelerator; Softmax to cpu. */
    const char *acc[] = {"mm1", "add1", "relu1", "mm2", "add2", "skip", "relu2", "fc"};
    for (size_t i = 0; i < sizeof acc / sizeof acc[0]; i++)
        TH_CHECK(strcmp(backend_of(root, acc[i]), "example_acc") == 0, "%s not on example_acc",
                 acc[i]);
    TH_CHECK(strcmp(backend_of(root, "softmax"), "cpu") == 0, "softmax not on cpu");
    TH_CHECK(json_array_size(json_object_get(root, "subgraphs")) == 1,
             "expected one subgraph, got %zu", json_array_size(json_object_get(root, "subgraphs")));
    /* x goes to the device and y comes back. */
    TH_CHECK(json_array_size(json_object_get(root, "copies")) == 2, "expected 2 copies, got %zu",
             json_array_size(json_object_get(root, "copies")));
    json_t *softmax_reasons = NULL;
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "placement"), i, p)
        if (strcmp(json_string_value(json_object_get(p, "node")), "softmax") == 0)
            softmax_reasons = json_object_get(p, "reasons");
    TH_CHECK(json_object_get(softmax_reasons, "example_acc") != NULL,
             "softmax shows no refusal reason from example_acc");
    json_decref(root);
    for (int seed = 0; seed < 5; seed++)
        run_and_check(s, &W, seed);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_acc_disabled(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\n"
                                  "[example_acc]\nenabled = no\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    expect_all_on(root, "cpu");
    json_decref(root);
    run_and_check(s, &W, 3);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_examples_mlp(void)
{
    /* The shipped example runs on both configurations with equal outputs. */
    const char *model = th_path(th_arg(2), "examples/mlp/model.json");
    float x[64], y1[10], y2[10];
    for (int i = 0; i < 64; i++)
        x[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    int64_t xs[2] = {1, 64}, ys[2] = {1, 10};
    const char *configs[2] = {"[placement]\norder = cpu\n",
                              "[placement]\norder = example_acc, cpu\n"};
    float *outs[2] = {y1, y2};
    for (int c = 0; c < 2; c++) {
        pl_runtime *rt = runtime_with(configs[c]);
        pl_session *s = session_for(rt, model);
        pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                            .shape = xs, .struct_size = sizeof(pl_tensor)}};
        pl_io out = {.name = "y", .tensor = {.data = outs[c], .ndim = 2, .dtype = PL_DTYPE_F32,
                                             .shape = ys, .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
    double sum = 0;
    for (int i = 0; i < 10; i++) {
        TH_CHECK(fabsf(y1[i] - y2[i]) <= 1e-5f, "y[%d]: cpu %.9g, example_acc %.9g", i, y1[i],
                 y2[i]);
        sum += y1[i];
    }
    TH_CHECK(fabs(sum - 1.0) < 1e-5, "softmax output sums to %f", sum);
}

/* A graph output that a node on another device also reads: the logits y
 * are made on example_acc, read there by nobody, read on the host by
 * softmax, and wanted by the caller. They come home once, into the caller's
 * buffer, and softmax reads them there. */
static void case_output_read_across(void)
{
    make_weights(&W);
    const char *configs[2] = {"[placement]\norder = cpu\n",
                              "[placement]\norder = example_acc, cpu\n"};
    for (int c = 0; c < 2; c++) {
        pl_runtime *rt = runtime_with(configs[c]);
        pl_session *s = session_for(rt, write_residual_with(&W, "\"z\", \"y\"", ""));
        TH_CHECK(pl_session_output_count(s) == 2, "%zu outputs", pl_session_output_count(s));
        json_t *root = th_explain(s);
        if (c == 1) {
            TH_CHECK(strcmp(backend_of(root, "fc"), "example_acc") == 0, "fc not on example_acc");
            TH_CHECK(strcmp(backend_of(root, "softmax"), "cpu") == 0, "softmax not on cpu");
            /* x goes to the device and y comes back, once. */
            TH_CHECK(json_array_size(json_object_get(root, "copies")) == 2,
                     "expected 2 copies, got %zu",
                     json_array_size(json_object_get(root, "copies")));
        }
        json_decref(root);
        for (int seed = 0; seed < 3; seed++) {
            float x[BATCH * IN], z[BATCH * OUT], want_z[BATCH * OUT], want_y[BATCH * OUT];
            make_input(x, seed);
            reference_logits(&W, x, want_z, want_y);
            int64_t xs[2] = {BATCH, IN}, zs[2] = {BATCH, OUT};
            pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                                .shape = xs, .struct_size = sizeof(pl_tensor)}};
            /* z into the caller's buffer, y into one the run allocates; the
             * last seed asks for y alone. */
            pl_io out[2] = {
                {.name = "y", .tensor = {.struct_size = sizeof(pl_tensor)}},
                {.name = "z", .tensor = {.data = z, .ndim = 2, .dtype = PL_DTYPE_F32,
                                         .shape = zs, .struct_size = sizeof(pl_tensor)}}};
            size_t n_out = seed == 2 ? 1 : 2;
            TH_CHECK_OK(pl_session_run(s, &in, 1, out, n_out));
            const float *y = out[0].tensor.data;
            TH_CHECK(y != NULL && out[0].tensor.ndim == 2 && out[0].tensor.shape[1] == OUT,
                     "output y came back without data or with the wrong shape");
            for (int i = 0; i < BATCH * OUT; i++) {
                TH_CHECK(fabsf(y[i] - want_y[i]) <= 1e-4f, "%s seed %d: y[%d] = %.9g, reference %.9g",
                         configs[c], seed, i, y[i], want_y[i]);
                TH_CHECK(n_out == 1 || fabsf(z[i] - want_z[i]) <= 1e-5f,
                         "%s seed %d: z[%d] = %.9g, reference %.9g", configs[c], seed, i, z[i],
                         want_z[i]);
            }
            pl_buffer_free(out[0].tensor.data);
        }
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Nodes no graph output depends on get no step, wherever they are placed:
 * dead_z reads z (on the host) and alone makes a subgraph of example_acc,
 * dead_x reads the graph input on example_acc, dead_h reads an
 * accelerator tensor on cpu, dead_hh reads dead_h. */
static void case_dead_branch(void)
{
    make_weights(&W);
    const char *dead =
        ",{\"name\":\"dead_z\",\"op\":\"Relu\",\"inputs\":[\"z\"],\"outputs\":[\"dz\"]},"
        "{\"name\":\"dead_x\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"dx\"]},"
        "{\"name\":\"dead_h\",\"op\":\"Softmax\",\"inputs\":[\"h\"],\"outputs\":[\"dh\"]},"
        "{\"name\":\"dead_hh\",\"op\":\"Relu\",\"inputs\":[\"dh\"],\"outputs\":[\"dhh\"]}";
    const char *configs[2] = {"[placement]\norder = cpu\n",
                              "[placement]\norder = example_acc, cpu\n"};
    for (int c = 0; c < 2; c++) {
        pl_runtime *rt = runtime_with(configs[c]);
        pl_session *s = session_for(rt, write_residual_with(&W, "\"z\"", dead));
        json_t *root = th_explain(s);
        if (c == 1) {
            TH_CHECK(strcmp(backend_of(root, "dead_z"), "example_acc") == 0,
                     "dead_z not on example_acc");
            TH_CHECK(strcmp(backend_of(root, "dead_h"), "cpu") == 0, "dead_h not on cpu");
            TH_CHECK(json_array_size(json_object_get(root, "copies")) == 2,
                     "expected 2 copies (x in, y out), got %zu",
                     json_array_size(json_object_get(root, "copies")));
        }
        const char *dead_nodes[] = {"dead_z", "dead_x", "dead_h", "dead_hh"};
        for (size_t i = 0; i < 4; i++)
            TH_CHECK(json_is_true(json_object_get(th_placement_of(root, dead_nodes[i]), "pruned")),
                     "%s: %s is not marked pruned", configs[c], dead_nodes[i]);
        TH_CHECK(json_is_false(json_object_get(th_placement_of(root, "mm1"), "pruned")),
                 "mm1 is marked pruned");
        json_t *st;
        size_t i;
        json_array_foreach(json_object_get(root, "steps"), i, st)
            TH_CHECK(strstr(json_string_value(json_object_get(st, "name")), "dead") == NULL,
                     "%s: a dead node has a step: %s", configs[c],
                     json_string_value(json_object_get(st, "name")));
        json_decref(root);
        run_and_check(s, &W, 4);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Two accelerator clusters that would depend on each other once
 * contracted: a1 -> a2 and b1 -> b2 are the accelerator's, s1 (Softmax) the
 * cpu's; a2 reads b1 and b2 reads s1, which reads a1. Whichever of a2 and
 * b2 joins its cluster first, the other must not join its own: the
 * cluster it would join already depends, through a member that joined
 * after the reader was seen, on the node's other input. Both node orders
 * are tried; each must give a session that runs and computes the graph,
 * in two accelerator subgraphs: with a2 first, a2 merges a1's and b1's
 * clusters (neither reaches the other) and b2, which reads s1, stays out;
 * with b2 first, b2 joins b1 and a2 joins them (a1's cluster reaches
 * theirs through s1, so it stays apart). */
static void case_no_cluster_cycle(void)
{
    static const char *orders[2][5] = {
        {"a1", "s1", "b1", "a2", "b2"},
        {"a1", "s1", "b1", "b2", "a2"},
    };
    static const char *defs[5][2] = {
        {"a1", "{\"name\":\"a1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"ta1\"]}"},
        {"s1", "{\"name\":\"s1\",\"op\":\"Softmax\",\"inputs\":[\"ta1\"],\"outputs\":[\"ts1\"],"
               "\"attributes\":{\"axis\":{\"int\":-1}}}"},
        {"b1", "{\"name\":\"b1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"tb1\"]}"},
        {"a2", "{\"name\":\"a2\",\"op\":\"Add\",\"inputs\":[\"ta1\",\"tb1\"],\"outputs\":[\"ya\"]}"},
        {"b2", "{\"name\":\"b2\",\"op\":\"Add\",\"inputs\":[\"tb1\",\"ts1\"],\"outputs\":[\"yb\"]}"},
    };
    for (int o = 0; o < 2; o++) {
        char nodes[2048] = "";
        for (int k = 0; k < 5; k++)
            for (int d = 0; d < 5; d++)
                if (strcmp(orders[o][k], defs[d][0]) == 0) {
                    strcat(nodes, k ? "," : "");
                    strcat(nodes, defs[d][1]);
                }
        char json[4096];
        snprintf(json, sizeof json,
                 "{\"format\":\"plinth-graph\",\"version\":1,"
                 "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
                 "\"inputs\":[\"x\"],\"outputs\":[\"ya\",\"yb\"],"
                 "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
                 "\"nodes\":[%s]}", nodes);
        const char *path = write_text("cycle.json", json);
        pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\nchoose = first\n");
        pl_session *s = session_for(rt, path);
        json_t *root = th_explain(s);
        TH_CHECK(strcmp(backend_of(root, "a2"), "example_acc") == 0 &&
                     strcmp(backend_of(root, "b2"), "example_acc") == 0 &&
                     strcmp(backend_of(root, "s1"), "cpu") == 0,
                 "order %d: the nodes are not where the test needs them", o);
        TH_CHECK(json_array_size(json_object_get(root, "subgraphs")) == 2,
                 "order %d: expected 2 accelerator subgraphs, got %zu", o,
                 json_array_size(json_object_get(root, "subgraphs")));
        json_decref(root);
        float x[6] = {-1.0f, 0.5f, 2.0f, 3.0f, -0.25f, 1.0f}, ya[6], yb[6];
        int64_t shape[2] = {2, 3};
        pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                            .shape = shape, .struct_size = sizeof(pl_tensor)}};
        pl_io out[2] = {
            {.name = "ya", .tensor = {.data = ya, .ndim = 2, .dtype = PL_DTYPE_F32,
                                      .shape = shape, .struct_size = sizeof(pl_tensor)}},
            {.name = "yb", .tensor = {.data = yb, .ndim = 2, .dtype = PL_DTYPE_F32,
                                      .shape = shape, .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(s, &in, 1, out, 2));
        for (int r = 0; r < 2; r++) {
            float sum = 0, e[3];
            for (int j = 0; j < 3; j++)
                sum += e[j] = expf(fmaxf(x[r * 3 + j], 0.0f));
            for (int j = 0; j < 3; j++) {
                float relu = fmaxf(x[r * 3 + j], 0.0f);
                TH_CHECK(fabsf(ya[r * 3 + j] - 2 * relu) < 1e-5f, "order %d: ya wrong", o);
                TH_CHECK(fabsf(yb[r * 3 + j] - (relu + e[j] / sum)) < 1e-5f,
                         "order %d: yb[%d] = %g, expected %g", o, r * 3 + j, yb[r * 3 + j],
                         relu + e[j] / sum);
            }
        }
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Branches of the accelerator that start at the graph input (a1 Relu, b1
 * x * x, c1 x + x:
 * no producer, so each starts a cluster) and meet in a2 = a1 + b1 and
 * y = a2 + c1 make one subgraph: a node that reads two clusters neither of
 * which reaches the other merges them. s1 (Softmax, the cpu's) reads b1
 * and z = s1 + c1 is the accelerator's: c1's cluster (merged by then)
 * feeds s1, so z stays out, in a second subgraph. */
static void case_branches_merge(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"y\",\"z\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
        "\"nodes\":["
        "{\"name\":\"a1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"ta1\"]},"
        "{\"name\":\"b1\",\"op\":\"Mul\",\"inputs\":[\"x\",\"x\"],\"outputs\":[\"tb1\"]},"
        "{\"name\":\"c1\",\"op\":\"Add\",\"inputs\":[\"x\",\"x\"],\"outputs\":[\"tc1\"]},"
        "{\"name\":\"a2\",\"op\":\"Add\",\"inputs\":[\"ta1\",\"tb1\"],\"outputs\":[\"ta2\"]},"
        "{\"name\":\"y\",\"op\":\"Add\",\"inputs\":[\"ta2\",\"tc1\"],\"outputs\":[\"y\"]},"
        "{\"name\":\"s1\",\"op\":\"Softmax\",\"inputs\":[\"tb1\"],\"outputs\":[\"ts1\"],"
        "\"attributes\":{\"axis\":{\"int\":-1}}},"
        "{\"name\":\"z\",\"op\":\"Add\",\"inputs\":[\"ts1\",\"tc1\"],\"outputs\":[\"z\"]}]}";
    const char *path = write_text("branches.json", json);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\nchoose = first\n");
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    static const char *const acc[] = {"a1", "b1", "c1", "a2", "y", "z"};
    for (size_t i = 0; i < sizeof acc / sizeof *acc; i++)
        TH_CHECK(strcmp(backend_of(root, acc[i]), "example_acc") == 0, "%s is not on example_acc",
                 acc[i]);
    TH_CHECK(strcmp(backend_of(root, "s1"), "cpu") == 0, "s1 is not on cpu");
    TH_CHECK(json_array_size(json_object_get(root, "subgraphs")) == 2,
             "expected 2 accelerator subgraphs (a1 b1 c1 a2 y, then z), got %zu",
             json_array_size(json_object_get(root, "subgraphs")));
    json_decref(root);
    float x[6] = {-1.0f, 0.5f, 2.0f, 3.0f, -0.25f, 1.0f}, y[6], z[6];
    int64_t shape[2] = {2, 3};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = shape, .struct_size = sizeof(pl_tensor)}};
    pl_io out[2] = {{.name = "y", .tensor = {.data = y, .ndim = 2, .dtype = PL_DTYPE_F32,
                                             .shape = shape, .struct_size = sizeof(pl_tensor)}},
                    {.name = "z", .tensor = {.data = z, .ndim = 2, .dtype = PL_DTYPE_F32,
                                             .shape = shape, .struct_size = sizeof(pl_tensor)}}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, out, 2));
    for (int r = 0; r < 2; r++) {
        float sum = 0, e[3];
        for (int j = 0; j < 3; j++)
            sum += e[j] = expf(x[r * 3 + j] * x[r * 3 + j]);
        for (int j = 0; j < 3; j++) {
            float v = x[r * 3 + j];
            TH_CHECK(fabsf(y[r * 3 + j] - (fmaxf(v, 0.0f) + v * v + 2 * v)) < 1e-5f, "y[%d] = %g",
                     r * 3 + j, y[r * 3 + j]);
            TH_CHECK(fabsf(z[r * 3 + j] - (e[j] / sum + 2 * v)) < 1e-5f, "z[%d] = %g",
                     r * 3 + j, z[r * 3 + j]);
        }
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* The functions of opsets 18 to 24 (Gelu in both forms, Mish, Swish,
 * RMSNormalization, GroupNormalization) from a graph of opset 24, expanded
 * by the core into ops every backend has, against C references, on cpu
 * alone, with onednn first and with the example accelerator first. */
static void case_newer_opset_functions(void)
{
    enum { N = 2, C = 4, L = 3, E = N * C * L };
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":24}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"g1\",\"g2\",\"mi\",\"sw\",\"rms\",\"gn\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,4,3]}],"
        "\"nodes\":["
        "{\"name\":\"gelu\",\"op\":\"Gelu\",\"inputs\":[\"x\"],\"outputs\":[\"g1\"]},"
        "{\"name\":\"gelu_t\",\"op\":\"Gelu\",\"inputs\":[\"x\"],\"outputs\":[\"g2\"],"
        "\"attributes\":{\"approximate\":{\"string\":\"tanh\"}}},"
        "{\"name\":\"mish\",\"op\":\"Mish\",\"inputs\":[\"x\"],\"outputs\":[\"mi\"]},"
        "{\"name\":\"swish\",\"op\":\"Swish\",\"inputs\":[\"x\"],\"outputs\":[\"sw\"],"
        "\"attributes\":{\"alpha\":{\"float\":0.7}}},"
        "{\"name\":\"rs\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"rscale\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3],"
        "\"values\":[0.5,1,2]}}}},"
        "{\"name\":\"rmsn\",\"op\":\"RMSNormalization\",\"inputs\":[\"x\",\"rscale\"],"
        "\"outputs\":[\"rms\"]},"
        "{\"name\":\"gs\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"gscale\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4],"
        "\"values\":[1,2,3,4]}}}},"
        "{\"name\":\"gb\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"gbias\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4],"
        "\"values\":[0.1,0.2,0.3,0.4]}}}},"
        "{\"name\":\"gnorm\",\"op\":\"GroupNormalization\",\"inputs\":[\"x\",\"gscale\",\"gbias\"],"
        "\"outputs\":[\"gn\"],\"attributes\":{\"num_groups\":{\"int\":2}}}]}";
    const char *path = write_text("functions.json", json);

    float x[E], want[6][E];
    for (int i = 0; i < E; i++)
        x[i] = -3.0f + 6.0f * (float)i / (E - 1) + 0.013f * (float)(i % 5);
    const float rscale[L] = {0.5f, 1, 2}, gscale[C] = {1, 2, 3, 4}, gbias[C] = {0.1f, 0.2f, 0.3f, 0.4f};
    for (int i = 0; i < E; i++) {
        double v = x[i];
        want[0][i] = (float)(0.5 * v * (1 + erf(v / sqrt(2.0))));
        want[1][i] = (float)(0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
        want[2][i] = (float)(v * tanh(log1p(exp(v))));
        want[3][i] = (float)(v / (1 + exp(-0.7 * v)));
    }
    for (int r = 0; r < N * C; r++) { /* RMS over the last axis */
        double ms = 0;
        for (int j = 0; j < L; j++)
            ms += (double)x[r * L + j] * x[r * L + j];
        ms = sqrt(ms / L + 1e-5);
        for (int j = 0; j < L; j++)
            want[4][r * L + j] = (float)(x[r * L + j] / ms * rscale[j]);
    }
    for (int n = 0; n < N; n++) /* two groups of two channels */
        for (int gi = 0; gi < 2; gi++) {
            const float *p = x + n * C * L + gi * 2 * L;
            double mean = 0, var = 0;
            for (int j = 0; j < 2 * L; j++)
                mean += p[j];
            mean /= 2 * L;
            for (int j = 0; j < 2 * L; j++)
                var += (p[j] - mean) * (p[j] - mean);
            var /= 2 * L;
            for (int j = 0; j < 2 * L; j++) {
                int c = gi * 2 + j / L;
                want[5][n * C * L + gi * 2 * L + j] =
                    (float)((p[j] - mean) / sqrt(var + 1e-5) * gscale[c] + gbias[c]);
            }
        }
    const char *outs[6] = {"g1", "g2", "mi", "sw", "rms", "gn"};
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *s = session_for(rt, path);
        int64_t shape[3] = {N, C, L};
        float got[6][E];
        pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 3, .dtype = PL_DTYPE_F32,
                                            .shape = shape, .struct_size = sizeof(pl_tensor)}};
        pl_io out[6];
        for (int k = 0; k < 6; k++)
            out[k] = (pl_io){.name = outs[k],
                             .tensor = {.data = got[k], .ndim = 3, .dtype = PL_DTYPE_F32,
                                        .shape = shape, .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(s, &in, 1, out, 6));
        for (int k = 0; k < 6; k++)
            for (int i = 0; i < E; i++)
                TH_CHECK(fabsf(got[k][i] - want[k][i]) <= 2e-4f * (1 + fabsf(want[k][i])),
                         "order = %s: %s[%d] = %.7g, reference %.7g (x = %g)", orders[o],
                         outs[k], i, got[k][i], want[k][i], x[i]);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* CenterCropPad 18 and AffineGrid 20, expanded by the core (ONNX defines
 * them as functions): x [3, 5] centred into [4, 3] (a row of zeros added
 * after, columns 1 to 3 kept) and its last axis cropped to 2 (columns 1
 * and 2); a grid of [1, 2, 3] points from theta [[2, 0, 0.5], [0, -1, 0]]
 * with and without align_corners (x = -2/3, 0, 2/3 or -1, 0, 1; y = -1/2,
 * 1/2 or -1, 1; each point (2x + 0.5, -y)), against hand-written values on
 * cpu and onednn. */
static void case_crop_and_grid(void)
{
    const char *path = write_text(
        "crop_and_grid.json",
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":20}],"
        "\"inputs\":[\"x\",\"theta\"],\"outputs\":[\"c1\",\"c2\",\"g0\",\"g1\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[3,5]},"
        "{\"name\":\"theta\",\"dtype\":\"f32\",\"shape\":[1,2,3]}],"
        "\"nodes\":["
        "{\"name\":\"s1\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"shape1\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"i64\",\"shape\":[2],"
        "\"values\":[4,3]}}}},"
        "{\"name\":\"s2\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"shape2\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"i64\",\"shape\":[1],"
        "\"values\":[2]}}}},"
        "{\"name\":\"gs\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"size\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"i64\",\"shape\":[4],"
        "\"values\":[1,1,2,3]}}}},"
        "{\"name\":\"ccp1\",\"op\":\"CenterCropPad\",\"inputs\":[\"x\",\"shape1\"],"
        "\"outputs\":[\"c1\"]},"
        "{\"name\":\"ccp2\",\"op\":\"CenterCropPad\",\"inputs\":[\"x\",\"shape2\"],"
        "\"outputs\":[\"c2\"],\"attributes\":{\"axes\":{\"ints\":[-1]}}},"
        "{\"name\":\"ag0\",\"op\":\"AffineGrid\",\"inputs\":[\"theta\",\"size\"],"
        "\"outputs\":[\"g0\"]},"
        "{\"name\":\"ag1\",\"op\":\"AffineGrid\",\"inputs\":[\"theta\",\"size\"],"
        "\"outputs\":[\"g1\"],\"attributes\":{\"align_corners\":{\"int\":1}}}]}");
    float x[15], theta[6] = {2, 0, 0.5f, 0, -1, 0};
    for (int i = 0; i < 15; i++)
        x[i] = (float)i;
    const float want_c1[12] = {1, 2, 3, 6, 7, 8, 11, 12, 13, 0, 0, 0};
    const float want_c2[6] = {1, 2, 6, 7, 11, 12};
    float want_g[2][12];
    for (int align = 0; align < 2; align++)
        for (int h = 0; h < 2; h++)
            for (int wi = 0; wi < 3; wi++) {
                double gx = align ? -1.0 + wi : -1.0 + (2.0 * wi + 1) / 3;
                double gy = align ? -1.0 + 2.0 * h : -1.0 + (2.0 * h + 1) / 2;
                want_g[align][(h * 3 + wi) * 2] = (float)(2 * gx + 0.5);
                want_g[align][(h * 3 + wi) * 2 + 1] = (float)-gy;
            }
    /* optimize = all: the Pad's pads, computed from the dims, fold into
     * the constant the cpu module's Pad needs */
    const char *orders[2] = {"[placement]\norder = cpu\n[graph]\noptimize = all\n",
                             "[placement]\norder = onednn, cpu\n[graph]\noptimize = all\n"};
    for (int o = 0; o < 2; o++) {
        pl_runtime *rt = runtime_with(orders[o]);
        pl_session *s = session_for(rt, path);
        int64_t sx[2] = {3, 5}, st[3] = {1, 2, 3}, s1[2] = {4, 3}, s2[2] = {3, 2},
                sg[4] = {1, 2, 3, 2};
        float c1[12], c2[6], g0[12], g1[12];
        pl_io in[2] = {
            {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32, .shape = sx,
                                     .struct_size = sizeof(pl_tensor)}},
            {.name = "theta", .tensor = {.data = theta, .ndim = 3, .dtype = PL_DTYPE_F32,
                                         .shape = st, .struct_size = sizeof(pl_tensor)}}};
        pl_io out[6] = {
            {.name = "c1", .tensor = {.data = c1, .ndim = 2, .dtype = PL_DTYPE_F32, .shape = s1,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "c2", .tensor = {.data = c2, .ndim = 2, .dtype = PL_DTYPE_F32, .shape = s2,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "g0", .tensor = {.data = g0, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = sg,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "g1", .tensor = {.data = g1, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = sg,
                                      .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(s, in, 2, out, 4));
        for (int i = 0; i < 12; i++)
            TH_CHECK(c1[i] == want_c1[i], "order = %s: c1[%d] = %g, want %g", orders[o], i,
                     c1[i], want_c1[i]);
        for (int i = 0; i < 6; i++)
            TH_CHECK(c2[i] == want_c2[i], "order = %s: c2[%d] = %g, want %g", orders[o], i,
                     c2[i], want_c2[i]);
        for (int i = 0; i < 12; i++)
            TH_CHECK(fabsf(g0[i] - want_g[0][i]) <= 1e-6f && fabsf(g1[i] - want_g[1][i]) <= 1e-6f,
                     "order = %s: grid[%d] = %g and %g, want %g and %g", orders[o], i, g0[i],
                     g1[i], want_g[0][i], want_g[1][i]);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Attention 23 expanded by the core: 3-D inputs with grouped-query heads
 * (4 query heads sharing 2 key heads) and causal masking, and 4-D inputs
 * with a boolean mask that hides every key of one row (which must give a
 * zero row, not NaN), and ONNX Runtime's com.microsoft Attention (packed
 * weights, a raw mask) and MultiHeadAttention (causal), against a C reference on cpu, onednn and
 * example_acc. */
enum { AT_B = 1, AT_S = 3, AT_D = 2 };

/* One head: Y[S][dv] from q[S][D], k[S][D], v[S][dv]; keep(i, j) says
 * whether query i sees key j. */
static void at_head(const float *q, const float *k, const float *v, int dv, int causal,
                    const unsigned char *mask, float *y)
{
    for (int i = 0; i < AT_S; i++) {
        double sc[AT_S], mx = -INFINITY, sum = 0;
        for (int j = 0; j < AT_S; j++) {
            double dot = 0;
            for (int d = 0; d < AT_D; d++)
                dot += (double)q[i * AT_D + d] * k[j * AT_D + d];
            sc[j] = dot / sqrt((double)AT_D);
            if ((causal && j > i) || (mask && !mask[i * AT_S + j]))
                sc[j] = -INFINITY;
            mx = fmax(mx, sc[j]);
        }
        for (int j = 0; j < AT_S; j++)
            sum += sc[j] = mx == -INFINITY ? 0 : exp(sc[j] - mx);
        for (int e = 0; e < dv; e++) {
            double acc = 0;
            for (int j = 0; j < AT_S; j++)
                acc += (sum > 0 ? sc[j] / sum : 0) * v[j * dv + e];
            y[i * dv + e] = (float)acc;
        }
    }
}

static void case_attention(void)
{
    enum { HQ = 4, HKV = 2 };
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":23},"
        "{\"domain\":\"com.microsoft\",\"version\":1}],"
        "\"inputs\":[\"q3\",\"k3\",\"v3\",\"q4\",\"k4\",\"v4\",\"m\",\"raw\"],"
        "\"outputs\":[\"y3\",\"y4\",\"yms\",\"ymha\"],"
        "\"tensors\":[{\"name\":\"q3\",\"dtype\":\"f32\",\"shape\":[1,3,8]},"
        "{\"name\":\"k3\",\"dtype\":\"f32\",\"shape\":[1,3,4]},"
        "{\"name\":\"v3\",\"dtype\":\"f32\",\"shape\":[1,3,4]},"
        "{\"name\":\"q4\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"k4\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"v4\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"m\",\"dtype\":\"bool\",\"shape\":[3,3]},"
        "{\"name\":\"raw\",\"dtype\":\"i32\",\"shape\":[1,3]}],"
        "\"nodes\":["
        "{\"name\":\"gqa\",\"op\":\"Attention\",\"inputs\":[\"q3\",\"k3\",\"v3\"],"
        "\"outputs\":[\"y3\"],\"attributes\":{\"q_num_heads\":{\"int\":4},"
        "\"kv_num_heads\":{\"int\":2},\"is_causal\":{\"int\":1}}},"
        "{\"name\":\"mha\",\"op\":\"Attention\",\"inputs\":[\"q4\",\"k4\",\"v4\",\"m\"],"
        "\"outputs\":[\"y4\"]},"
        "{\"name\":\"wc\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"w\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[8,24],"
        "\"values\":[%s]}}}},"
        "{\"name\":\"ms\",\"op\":\"Attention\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"q3\",\"w\",\"\",\"raw\"],\"outputs\":[\"yms\"],"
        "\"attributes\":{\"num_heads\":{\"int\":4}}},"
        "{\"name\":\"mha_ms\",\"op\":\"MultiHeadAttention\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"q3\",\"q3\",\"q3\"],\"outputs\":[\"ymha\"],"
        "\"attributes\":{\"num_heads\":{\"int\":4},\"unidirectional\":{\"int\":1}}}]}";
    /* ONNX Runtime's com.microsoft Attention on q3: packed weights [8, 24]
     * (Q, K, V of 8 each), 4 heads of 2, a raw mask hiding key 1 */
    float wq[8 * 24];
    char wtext[8 * 24 * 16] = "";
    for (int i = 0; i < 8 * 24; i++) {
        wq[i] = (float)((i * 37 % 23) - 11) / 16.0f;
        snprintf(wtext + strlen(wtext), sizeof wtext - strlen(wtext), "%s%g", i ? "," : "",
                 (double)wq[i]);
    }
    char *text = malloc(strlen(json) + strlen(wtext) + 1);
    TH_CHECK(text != NULL, "out of memory");
    sprintf(text, json, wtext);
    const char *path = write_text("attention.json", text);
    free(text);
    float q3[AT_S * HQ * AT_D], k3[AT_S * HKV * AT_D], v3[AT_S * HKV * AT_D];
    float q4[2 * AT_S * AT_D], k4[2 * AT_S * AT_D], v4[2 * AT_S * AT_D];
    unsigned char m[AT_S * AT_S] = {1, 0, 1, 0, 0, 0, 1, 1, 1}; /* row 1 sees nothing */
    float *all[6] = {q3, k3, v3, q4, k4, v4};
    int sizes[6] = {24, 12, 12, 12, 12, 12};
    uint32_t seed = 7;
    for (int a = 0; a < 6; a++)
        for (int i = 0; i < sizes[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            all[a][i] = (float)(seed >> 8) / 16777216.0f * 4.0f - 2.0f;
        }
    /* references: 3-D heads are slices of the last axis; query head h reads
     * key head h / 2 */
    float want3[AT_S * HQ * AT_D], want4[2 * AT_S * AT_D];
    for (int h = 0; h < HQ; h++) {
        float q[AT_S * AT_D], k[AT_S * AT_D], v[AT_S * AT_D], y[AT_S * AT_D];
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++) {
                q[s * AT_D + d] = q3[s * HQ * AT_D + h * AT_D + d];
                k[s * AT_D + d] = k3[s * HKV * AT_D + (h / 2) * AT_D + d];
                v[s * AT_D + d] = v3[s * HKV * AT_D + (h / 2) * AT_D + d];
            }
        at_head(q, k, v, AT_D, 1, NULL, y);
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++)
                want3[s * HQ * AT_D + h * AT_D + d] = y[s * AT_D + d];
    }
    for (int h = 0; h < 2; h++)
        at_head(q4 + h * 6, k4 + h * 6, v4 + h * 6, AT_D, 0, m, want4 + h * 6);
    float wantmha[AT_S * 8];
    for (int h = 0; h < 4; h++) { /* MultiHeadAttention(q3, q3, q3), causal */
        float q[AT_S * AT_D], y[AT_S * AT_D];
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++)
                q[s * AT_D + d] = q3[s * 8 + h * AT_D + d];
        at_head(q, q, q, AT_D, 1, NULL, y);
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++)
                wantmha[s * 8 + h * AT_D + d] = y[s * AT_D + d];
    }
    int32_t raw[AT_S] = {1, 0, 1};
    unsigned char raw_keep[AT_S * AT_S];
    for (int i = 0; i < AT_S * AT_S; i++)
        raw_keep[i] = raw[i % AT_S] != 0;
    float qkv[AT_S * 24], wantms[AT_S * 8];
    for (int s = 0; s < AT_S; s++)
        for (int c = 0; c < 24; c++) {
            double acc = 0;
            for (int e = 0; e < 8; e++)
                acc += (double)q3[s * 8 + e] * wq[e * 24 + c];
            qkv[s * 24 + c] = (float)acc;
        }
    for (int h = 0; h < 4; h++) {
        float q[AT_S * AT_D], k[AT_S * AT_D], v[AT_S * AT_D], y[AT_S * AT_D];
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++) {
                q[s * AT_D + d] = qkv[s * 24 + h * AT_D + d];
                k[s * AT_D + d] = qkv[s * 24 + 8 + h * AT_D + d];
                v[s * AT_D + d] = qkv[s * 24 + 16 + h * AT_D + d];
            }
        at_head(q, k, v, AT_D, 0, raw_keep, y);
        for (int s = 0; s < AT_S; s++)
            for (int d = 0; d < AT_D; d++)
                wantms[s * 8 + h * AT_D + d] = y[s * AT_D + d];
    }
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *s = session_for(rt, path);
        int64_t s3q[3] = {1, 3, 8}, s3k[3] = {1, 3, 4}, s4[4] = {1, 2, 3, 2}, sm[2] = {3, 3};
        float y3[24], y4[12], yms[24], ymha[24];
        int64_t sraw[2] = {1, 3};
        pl_io in[8];
        const char *names[6] = {"q3", "k3", "v3", "q4", "k4", "v4"};
        int64_t *shapes[6] = {s3q, s3k, s3k, s4, s4, s4};
        for (int a = 0; a < 6; a++)
            in[a] = (pl_io){.name = names[a],
                            .tensor = {.data = all[a], .ndim = a < 3 ? 3 : 4,
                                       .dtype = PL_DTYPE_F32, .shape = shapes[a],
                                       .struct_size = sizeof(pl_tensor)}};
        in[6] = (pl_io){.name = "m", .tensor = {.data = m, .ndim = 2, .dtype = PL_DTYPE_BOOL,
                                                .shape = sm, .struct_size = sizeof(pl_tensor)}};
        in[7] = (pl_io){.name = "raw", .tensor = {.data = raw, .ndim = 2, .dtype = PL_DTYPE_I32,
                                                  .shape = sraw, .struct_size = sizeof(pl_tensor)}};
        pl_io out[6] = {
            {.name = "y3", .tensor = {.data = y3, .ndim = 3, .dtype = PL_DTYPE_F32,
                                      .shape = s3q, .struct_size = sizeof(pl_tensor)}},
            {.name = "y4", .tensor = {.data = y4, .ndim = 4, .dtype = PL_DTYPE_F32,
                                      .shape = s4, .struct_size = sizeof(pl_tensor)}},
            {.name = "yms", .tensor = {.data = yms, .ndim = 3, .dtype = PL_DTYPE_F32,
                                       .shape = s3q, .struct_size = sizeof(pl_tensor)}},
            {.name = "ymha", .tensor = {.data = ymha, .ndim = 3, .dtype = PL_DTYPE_F32,
                                        .shape = s3q, .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(s, in, 8, out, 4));
        for (int i = 0; i < 24; i++)
            TH_CHECK(fabsf(ymha[i] - wantmha[i]) <= 1e-5f,
                     "order = %s: ymha[%d] = %.7g, want %.7g", orders[o], i, ymha[i], wantmha[i]);
        for (int i = 0; i < 24; i++)
            TH_CHECK(fabsf(yms[i] - wantms[i]) <= 1e-5f, "order = %s: yms[%d] = %.7g, want %.7g",
                     orders[o], i, yms[i], wantms[i]);
        for (int i = 0; i < 24; i++)
            TH_CHECK(fabsf(y3[i] - want3[i]) <= 1e-5f, "order = %s: y3[%d] = %.7g, want %.7g",
                     orders[o], i, y3[i], want3[i]);
        for (int i = 0; i < 12; i++)
            TH_CHECK(fabsf(y4[i] - want4[i]) <= 1e-5f, "order = %s: y4[%d] = %.7g, want %.7g",
                     orders[o], i, y4[i], want4[i]);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Attention 23's softcap and qk_matmul_output modes 1 and 2, as ONNX's
 * reference orders them since onnx 1.21 (PR 8068) and ONNX Runtime 1.32
 * computes them: softcap caps the scaled product, then the mask is added
 * (a masked score stays -inf: softmax gives it no weight), and output 3 is
 * the capped product (mode 1) or the capped product plus the mask (mode
 * 2). One head-pair of 4-D inputs with a boolean mask hiding key 1 of row
 * 0 and key 2 of row 2, softcap 0.75, against a C reference on cpu, onednn
 * and example_acc. Fails with softcap after the mask (onnx 1.20's order,
 * in which a masked key took weight: onnx 1.23's test
 * attention_4d_softcap_neginf_mask_poison). */
static void case_attention_softcap(void)
{
    const char *path = write_text(
        "attention_softcap.json",
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":23}],"
        "\"inputs\":[\"q\",\"k\",\"v\",\"m\"],\"outputs\":[\"y1\",\"qk1\",\"y2\",\"qk2\"],"
        "\"tensors\":[{\"name\":\"q\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"k\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"v\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"m\",\"dtype\":\"bool\",\"shape\":[3,3]}],"
        "\"nodes\":["
        "{\"name\":\"a1\",\"op\":\"Attention\",\"inputs\":[\"q\",\"k\",\"v\",\"m\"],"
        "\"outputs\":[\"y1\",\"\",\"\",\"qk1\"],\"attributes\":{\"softcap\":{\"float\":0.75},"
        "\"qk_matmul_output_mode\":{\"int\":1}}},"
        "{\"name\":\"a2\",\"op\":\"Attention\",\"inputs\":[\"q\",\"k\",\"v\",\"m\"],"
        "\"outputs\":[\"y2\",\"\",\"\",\"qk2\"],\"attributes\":{\"softcap\":{\"float\":0.75},"
        "\"qk_matmul_output_mode\":{\"int\":2}}}]}");
    const float cap = 0.75f;
    float q[12], k[12], v[12];
    unsigned char m[9] = {1, 0, 1, 1, 1, 1, 1, 1, 0};
    uint32_t seed = 11;
    float *all[3] = {q, k, v};
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < 12; i++) {
            seed = seed * 1664525u + 1013904223u;
            all[a][i] = (float)(seed >> 8) / 16777216.0f * 4.0f - 2.0f;
        }
    double want_qk1[18], want_qk2[18], want_y[12];
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < AT_S; i++) {
            double p[AT_S], mx = -INFINITY, sum = 0;
            for (int j = 0; j < AT_S; j++) {
                double dot = 0;
                for (int d = 0; d < AT_D; d++)
                    dot += (double)q[h * 6 + i * AT_D + d] * k[h * 6 + j * AT_D + d];
                double sc = cap * tanh(dot / sqrt((double)AT_D) / cap);
                want_qk1[h * 9 + i * AT_S + j] = sc;
                p[j] = want_qk2[h * 9 + i * AT_S + j] =
                    sc + (m[i * AT_S + j] ? 0 : -INFINITY);
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < AT_S; j++)
                sum += p[j] = exp(p[j] - mx);
            for (int e = 0; e < AT_D; e++) {
                double acc = 0;
                for (int j = 0; j < AT_S; j++)
                    acc += p[j] / sum * v[h * 6 + j * AT_D + e];
                want_y[h * 6 + i * AT_D + e] = acc;
            }
        }
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *s = session_for(rt, path);
        int64_t s4[4] = {1, 2, 3, 2}, sm[2] = {3, 3}, sq[4] = {1, 2, 3, 3};
        float y1[12], y2[12], qk1[18], qk2[18];
        const char *names[3] = {"q", "k", "v"};
        pl_io in[4];
        for (int a = 0; a < 3; a++)
            in[a] = (pl_io){.name = names[a],
                            .tensor = {.data = all[a], .ndim = 4, .dtype = PL_DTYPE_F32,
                                       .shape = s4, .struct_size = sizeof(pl_tensor)}};
        in[3] = (pl_io){.name = "m", .tensor = {.data = m, .ndim = 2, .dtype = PL_DTYPE_BOOL,
                                                .shape = sm, .struct_size = sizeof(pl_tensor)}};
        float *outs[4] = {y1, qk1, y2, qk2};
        const char *onames[4] = {"y1", "qk1", "y2", "qk2"};
        pl_io out[4];
        for (int a = 0; a < 4; a++)
            out[a] = (pl_io){.name = onames[a],
                             .tensor = {.data = outs[a], .ndim = 4, .dtype = PL_DTYPE_F32,
                                        .shape = a % 2 ? sq : s4,
                                        .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(s, in, 4, out, 4));
        for (int i = 0; i < 12; i++)
            TH_CHECK(fabs(y1[i] - want_y[i]) <= 1e-5 && fabs(y2[i] - want_y[i]) <= 1e-5,
                     "order = %s: y[%d] = %.7g and %.7g, want %.7g", orders[o], i, y1[i], y2[i],
                     want_y[i]);
        for (int i = 0; i < 18; i++) {
            TH_CHECK(fabs(qk1[i] - want_qk1[i]) <= 1e-5,
                     "order = %s: qk (mode 1)[%d] = %.7g, want %.7g", orders[o], i, qk1[i],
                     want_qk1[i]);
            bool ok2 = isinf(want_qk2[i]) ? isinf(qk2[i]) && qk2[i] < 0
                                          : fabs(qk2[i] - want_qk2[i]) <= 1e-5;
            TH_CHECK(ok2, "order = %s: qk (mode 2)[%d] = %.7g, want %.7g", orders[o], i, qk2[i],
                     want_qk2[i]);
        }
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Attention 23 with a KV cache, as a decoder's exported step has it: 4-D
 * Q [1, 2, 2, 2] (two new positions), K and V of the same size after a
 * cache of three (past_key, past_value), is_causal, and every output:
 * present_key and present_value (the cache, then the new keys), and
 * qk_matmul_output in modes 0 (the scaled product) and 3 (after softmax).
 * The causal frontier counts the cache: new query i sees keys up to
 * 3 + i. Against a C reference on cpu, onednn and example_acc; fails when
 * the frontier is aligned top-left (query 0 would see one key, not four)
 * or the cache is left out. A third node reads present_key and
 * present_value as an external cache (Attention 24's nonpad_kv_seqlen, 4
 * of its 5 keys filled) with a sliding window (25's left_window_size 1). */
static void case_attention_kv_cache(void)
{
    enum { H = 2, SQ = 2, SP = 3, ST = 5, D = 2 };
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":25}],"
        "\"inputs\":[\"q\",\"k\",\"v\",\"pk\",\"pv\",\"np\"],"
        "\"outputs\":[\"y\",\"present_k\",\"present_v\",\"qk0\",\"y3\",\"qk3\",\"yw\"],"
        "\"tensors\":[{\"name\":\"q\",\"dtype\":\"f32\",\"shape\":[1,2,2,2]},"
        "{\"name\":\"k\",\"dtype\":\"f32\",\"shape\":[1,2,2,2]},"
        "{\"name\":\"v\",\"dtype\":\"f32\",\"shape\":[1,2,2,2]},"
        "{\"name\":\"pk\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"pv\",\"dtype\":\"f32\",\"shape\":[1,2,3,2]},"
        "{\"name\":\"np\",\"dtype\":\"i64\",\"shape\":[1]}],"
        "\"nodes\":["
        "{\"name\":\"a0\",\"op\":\"Attention\",\"inputs\":[\"q\",\"k\",\"v\",\"\",\"pk\",\"pv\"],"
        "\"outputs\":[\"y\",\"present_k\",\"present_v\",\"qk0\"],"
        "\"attributes\":{\"is_causal\":{\"int\":1}}},"
        "{\"name\":\"a3\",\"op\":\"Attention\",\"inputs\":[\"q\",\"k\",\"v\",\"\",\"pk\",\"pv\"],"
        "\"outputs\":[\"y3\",\"\",\"\",\"qk3\"],"
        "\"attributes\":{\"is_causal\":{\"int\":1},\"qk_matmul_output_mode\":{\"int\":3}}},"
        "{\"name\":\"aw\",\"op\":\"Attention\",\"inputs\":[\"q\",\"present_k\",\"present_v\","
        "\"\",\"\",\"\",\"np\"],\"outputs\":[\"yw\"],"
        "\"attributes\":{\"is_causal\":{\"int\":1},\"left_window_size\":{\"int\":1}}}]}";
    const char *path = write_text("attention_kv.json", json);
    float q[H * SQ * D], k[H * SQ * D], v[H * SQ * D], pk[H * SP * D], pv[H * SP * D];
    float *all[5] = {q, k, v, pk, pv};
    int sizes[5] = {H * SQ * D, H * SQ * D, H * SQ * D, H * SP * D, H * SP * D};
    uint32_t seed = 11;
    for (int a = 0; a < 5; a++)
        for (int i = 0; i < sizes[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            all[a][i] = (float)(seed >> 8) / 16777216.0f * 4.0f - 2.0f;
        }
    /* the reference: keys and values are the cache, then the new ones */
    float kall[H * ST * D], vall[H * ST * D], want[H * SQ * D], qk0[H * SQ * ST],
        qk3[H * SQ * ST];
    for (int h = 0; h < H; h++)
        for (int t = 0; t < ST; t++)
            for (int d = 0; d < D; d++) {
                int o = (h * ST + t) * D + d;
                kall[o] = t < SP ? pk[(h * SP + t) * D + d] : k[(h * SQ + t - SP) * D + d];
                vall[o] = t < SP ? pv[(h * SP + t) * D + d] : v[(h * SQ + t - SP) * D + d];
            }
    for (int h = 0; h < H; h++)
        for (int i = 0; i < SQ; i++) {
            double sc[ST], mx = -INFINITY, sum = 0;
            for (int j = 0; j < ST; j++) {
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += (double)q[(h * SQ + i) * D + d] * kall[(h * ST + j) * D + d];
                sc[j] = dot / sqrt((double)D);
                qk0[(h * SQ + i) * ST + j] = (float)sc[j];
                if (j > SP + i)
                    sc[j] = -INFINITY;
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j < ST; j++)
                sum += sc[j] = exp(sc[j] - mx);
            for (int j = 0; j < ST; j++)
                qk3[(h * SQ + i) * ST + j] = (float)(sc[j] / sum);
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < ST; j++)
                    acc += sc[j] / sum * vall[(h * ST + j) * D + d];
                want[(h * SQ + i) * D + d] = (float)acc;
            }
        }
    /* aw: the five keys as an external cache filled to NP = 4, causal with
     * a window of one key back: query i sits at NP - SQ + i and sees keys
     * from there minus one to there */
    enum { NP = 4 };
    int64_t np[1] = {NP};
    float wantw[H * SQ * D];
    for (int h = 0; h < H; h++)
        for (int i = 0; i < SQ; i++) {
            int p = NP - SQ + i;
            double sc[ST], mx = -INFINITY, sum = 0;
            for (int j = 0; j < ST; j++) {
                double dot = 0;
                for (int d = 0; d < D; d++)
                    dot += (double)q[(h * SQ + i) * D + d] * kall[(h * ST + j) * D + d];
                sc[j] = j > p || j < p - 1 || j >= NP ? -INFINITY : dot / sqrt((double)D);
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j < ST; j++)
                sum += sc[j] = exp(sc[j] - mx);
            for (int d = 0; d < D; d++) {
                double acc = 0;
                for (int j = 0; j < ST; j++)
                    acc += sc[j] / sum * vall[(h * ST + j) * D + d];
                wantw[(h * SQ + i) * D + d] = (float)acc;
            }
        }
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *s = session_for(rt, path);
        int64_t sq[4] = {1, H, SQ, D}, sp[4] = {1, H, SP, D}, st[4] = {1, H, ST, D},
                sqk[4] = {1, H, SQ, ST};
        const char *names[5] = {"q", "k", "v", "pk", "pv"};
        pl_io in[6];
        for (int a = 0; a < 5; a++)
            in[a] = (pl_io){.name = names[a],
                            .tensor = {.data = all[a], .ndim = 4, .dtype = PL_DTYPE_F32,
                                       .shape = a < 3 ? sq : sp,
                                       .struct_size = sizeof(pl_tensor)}};
        int64_t s1[1] = {1};
        in[5] = (pl_io){.name = "np", .tensor = {.data = np, .ndim = 1, .dtype = PL_DTYPE_I64,
                                                 .shape = s1, .struct_size = sizeof(pl_tensor)}};
        float y[H * SQ * D], y3[H * SQ * D], gk[H * ST * D], gv[H * ST * D], g0[H * SQ * ST],
            g3[H * SQ * ST], yw[H * SQ * D];
        float *outs[7] = {y, gk, gv, g0, y3, g3, yw};
        const float *wants[7] = {want, kall, vall, qk0, want, qk3, wantw};
        const char *onames[7] = {"y", "present_k", "present_v", "qk0", "y3", "qk3", "yw"};
        int64_t *oshapes[7] = {sq, st, st, sqk, sq, sqk, sq};
        int counts[7] = {H * SQ * D, H * ST * D, H * ST * D, H * SQ * ST,
                         H * SQ * D, H * SQ * ST, H * SQ * D};
        pl_io out[7];
        for (int a = 0; a < 7; a++)
            out[a] = (pl_io){.name = onames[a],
                             .tensor = {.data = outs[a], .ndim = 4, .dtype = PL_DTYPE_F32,
                                        .shape = oshapes[a], .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(s, in, 6, out, 7));
        for (int a = 0; a < 7; a++)
            for (int i = 0; i < counts[a]; i++)
                TH_CHECK(fabsf(outs[a][i] - wants[a][i]) <= 1e-5f * (1 + fabsf(wants[a][i])),
                         "order = %s: %s[%d] = %.7g, want %.7g", orders[o], onames[a], i,
                         outs[a][i], wants[a][i]);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* ONNX Runtime's fused contrib ops, as its transformer optimizer writes
 * them (com.microsoft, ai.onnx opset 13), expanded by the core: FastGelu
 * with a bias, SkipLayerNormalization with a bias and its sum output read
 * downstream, FusedMatMul with transB and alpha, and ai.onnx-domain
 * SimplifiedLayerNormalization and LayerNormalization (ORT's contrib op
 * before ONNX 17 made it standard), EmbedLayerNormalization (its
 * mask_index without a mask: zeros), FusedConv and FusedGemm, against C references on cpu, onednn and
 * example_acc. (ONNX Runtime itself is not installed for the tests; its
 * outputs were compared by hand on 33 such models, ai.onnx 13, 17 and 18:
 * within 7e-7 relative.) */
static void case_contrib_ops(void)
{
    enum { R = 3, C = 4 };
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13},"
        "{\"domain\":\"com.microsoft\",\"version\":1}],"
        "\"inputs\":[\"x\",\"s\",\"ids\",\"xc\"],"
        "\"outputs\":[\"fg\",\"ln\",\"sum\",\"mm\",\"rms\",\"lnc\",\"emb\",\"fc\",\"fgm\","
        "\"mi\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[3,4]},"
        "{\"name\":\"s\",\"dtype\":\"f32\",\"shape\":[3,4]},"
        "{\"name\":\"ids\",\"dtype\":\"i32\",\"shape\":[1,3]},"
        "{\"name\":\"xc\",\"dtype\":\"f32\",\"shape\":[1,2,2,2]}],"
        "\"nodes\":["
        "{\"name\":\"c\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"v\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4],"
        "\"values\":[0.5,-1,2,0.25]}}}},"
        "{\"name\":\"fgelu\",\"op\":\"FastGelu\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"x\",\"v\"],\"outputs\":[\"fg\"]},"
        "{\"name\":\"skip\",\"op\":\"SkipLayerNormalization\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"x\",\"s\",\"v\",\"v\",\"v\"],\"outputs\":[\"ln\",\"\",\"\",\"sum\"],"
        "\"attributes\":{\"epsilon\":{\"float\":1e-5}}},"
        "{\"name\":\"fmm\",\"op\":\"FusedMatMul\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"x\",\"s\"],\"outputs\":[\"mm\"],"
        "\"attributes\":{\"transB\":{\"int\":1},\"alpha\":{\"float\":0.5}}},"
        "{\"name\":\"sln\",\"op\":\"SimplifiedLayerNormalization\",\"inputs\":[\"x\",\"v\"],"
        "\"outputs\":[\"rms\"],\"attributes\":{\"epsilon\":{\"float\":1e-6}}},"
        "{\"name\":\"lnorm\",\"op\":\"LayerNormalization\",\"inputs\":[\"x\",\"v\",\"v\"],"
        "\"outputs\":[\"lnc\"]},"
        "{\"name\":\"wec\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"we\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3,4],"
        "\"values\":[1,2,3,4,-1,0.5,2,0,3,-2,1,1]}}}},"
        "{\"name\":\"embed\",\"op\":\"EmbedLayerNormalization\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"ids\",\"\",\"we\",\"we\",\"\",\"v\",\"v\"],\"outputs\":[\"emb\",\"mi\"],"
        "\"attributes\":{\"epsilon\":{\"float\":1e-5}}},"
        "{\"name\":\"cw\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"convw\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[1,2,1,1],"
        "\"values\":[1,-2]}}}},"
        "{\"name\":\"cb\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"convb\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[1],"
        "\"values\":[0.5]}}}},"
        "{\"name\":\"fconv\",\"op\":\"FusedConv\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"xc\",\"convw\",\"convb\"],\"outputs\":[\"fc\"],"
        "\"attributes\":{\"kernel_shape\":{\"ints\":[1,1]},"
        "\"activation\":{\"string\":\"LeakyRelu\"},\"activation_params\":{\"floats\":[0.2]}}},"
        "{\"name\":\"fgemm\",\"op\":\"FusedGemm\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"x\",\"s\"],\"outputs\":[\"fgm\"],"
        "\"attributes\":{\"transB\":{\"int\":1},\"alpha\":{\"float\":0.5},"
        "\"activation\":{\"string\":\"Relu\"}}}]}";
    const char *path = write_text("contrib.json", json);
    const float v[C] = {0.5f, -1, 2, 0.25f};
    float x[R * C], sk[R * C], want[9][R * R > R * C ? R * R : R * C];
    float xc[8] = {0.5f, -1, 2, 0.25f, 1, 1.5f, -0.5f, 0};
    for (int i = 0; i < 4; i++) { /* FusedConv: 1x1, weights {1, -2}, bias 0.5, LeakyRelu */
        float c = xc[i] - 2 * xc[4 + i] + 0.5f;
        want[7][i] = c < 0 ? 0.2f * c : c;
    }
    /* EmbedLayerNormalization: rows ids[i] of we plus row i (its position)
     * of the same table, layer-normalised */
    const float we[R * C] = {1, 2, 3, 4, -1, 0.5f, 2, 0, 3, -2, 1, 1};
    int32_t ids[R] = {2, 0, 2};
    for (int r = 0; r < R; r++) {
        double e[C], m = 0, var = 0;
        for (int c = 0; c < C; c++)
            m += (e[c] = (double)we[ids[r] * C + c] + we[r * C + c]) / C;
        for (int c = 0; c < C; c++)
            var += (e[c] - m) * (e[c] - m) / C;
        for (int c = 0; c < C; c++)
            want[6][r * C + c] = (float)((e[c] - m) / sqrt(var + 1e-5) * v[c] + v[c]);
    }
    for (int i = 0; i < R * C; i++) {
        x[i] = -1.5f + 0.27f * (float)i;
        sk[i] = 0.8f - 0.11f * (float)(i * 7 % 12);
    }
    for (int r = 0; r < R; r++) {
        double mean = 0, var = 0, ms = 0, sum[C];
        for (int c = 0; c < C; c++) {
            double u = x[r * C + c] + v[c];
            want[0][r * C + c] =
                (float)(0.5 * u * (1 + tanh(sqrt(2 / M_PI) * (u + 0.044715 * u * u * u))));
            sum[c] = (double)x[r * C + c] + sk[r * C + c] + v[c];
            want[2][r * C + c] = (float)sum[c];
            mean += sum[c] / C;
            ms += (double)x[r * C + c] * x[r * C + c] / C;
        }
        double xm = 0, xv = 0;
        for (int c = 0; c < C; c++) {
            var += (sum[c] - mean) * (sum[c] - mean) / C;
            xm += (double)x[r * C + c] / C;
        }
        for (int c = 0; c < C; c++)
            xv += (x[r * C + c] - xm) * (x[r * C + c] - xm) / C;
        for (int c = 0; c < C; c++)
            want[5][r * C + c] = (float)((x[r * C + c] - xm) / sqrt(xv + 1e-5) * v[c] + v[c]);
        for (int c = 0; c < C; c++) {
            want[1][r * C + c] = (float)((sum[c] - mean) / sqrt(var + 1e-5) * v[c] + v[c]);
            want[4][r * C + c] = (float)(x[r * C + c] / sqrt(ms + 1e-6) * v[c]);
        }
        for (int q = 0; q < R; q++) {
            double dot = 0;
            for (int c = 0; c < C; c++)
                dot += (double)x[r * C + c] * sk[q * C + c];
            want[3][r * R + q] = (float)(0.5 * dot);
        }
    }
    for (int i = 0; i < R * R; i++) /* FusedGemm: Relu of the FusedMatMul's values */
        want[8][i] = want[3][i] > 0 ? want[3][i] : 0;
    const char *names[9] = {"fg", "ln", "sum", "mm", "rms", "lnc", "emb", "fc", "fgm"};
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        int64_t shape[2] = {R, C}, mshape[2] = {R, R};
        float got[9][R * C];
        int64_t ishape[2] = {1, R}, eshape[3] = {1, R, C}, cshape[4] = {1, 2, 2, 2};
        int64_t fcshape[4] = {1, 1, 2, 2};
        pl_io in[4] = {
            {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                     .shape = shape, .struct_size = sizeof(pl_tensor)}},
            {.name = "s", .tensor = {.data = sk, .ndim = 2, .dtype = PL_DTYPE_F32,
                                     .shape = shape, .struct_size = sizeof(pl_tensor)}},
            {.name = "ids", .tensor = {.data = ids, .ndim = 2, .dtype = PL_DTYPE_I32,
                                       .shape = ishape, .struct_size = sizeof(pl_tensor)}},
            {.name = "xc", .tensor = {.data = xc, .ndim = 4, .dtype = PL_DTYPE_F32,
                                      .shape = cshape, .struct_size = sizeof(pl_tensor)}}};
        pl_io out[10];
        int32_t mask_index = -1;
        int64_t mishape[1] = {1};
        out[9] = (pl_io){.name = "mi", .tensor = {.data = &mask_index, .ndim = 1,
                                                  .dtype = PL_DTYPE_I32, .shape = mishape,
                                                  .struct_size = sizeof(pl_tensor)}};
        for (int k = 0; k < 9; k++)
            out[k] = (pl_io){.name = names[k],
                             .tensor = {.data = got[k], .ndim = k == 6 ? 3 : k == 7 ? 4 : 2,
                                        .dtype = PL_DTYPE_F32,
                                        .shape = k == 3 || k == 8 ? mshape
                                                 : k == 6         ? eshape
                                                 : k == 7         ? fcshape
                                                                  : shape,
                                        .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(sess, in, 4, out, 10));
        /* mask_index without a mask: zeros, as ONNX Runtime gives */
        TH_CHECK(mask_index == 0, "order = %s: mask_index %d, want 0", orders[o], (int)mask_index);
        for (int k = 0; k < 9; k++)
            for (int i = 0; i < (k == 3 || k == 8 ? R * R : k == 7 ? 4 : R * C); i++)
                TH_CHECK(fabsf(got[k][i] - want[k][i]) <= 1e-4f * (1 + fabsf(want[k][i])),
                         "order = %s: %s[%d] = %.7g, want %.7g", orders[o], names[k], i,
                         got[k][i], want[k][i]);
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

/* A scalar Constant node NAME of DTYPE and VALUE, in the JSON graph format. */
#define QS_CONST(name, dtype, value)                                                      \
    "{\"name\":\"c_" name "\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"" name "\"],"  \
    "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"" dtype "\",\"shape\":[],"      \
    "\"values\":[" value "]}}}},"

/* ONNX Runtime's com.microsoft QLinearAdd and QLinearMul, which the cpu
 * module runs in ONNX Runtime's x86 arithmetic (modules/cpu/qlinear_ms.c),
 * and its table-driven QLinearSigmoid and QLinearLeakyRelu:
 * the zero point joins before rounding, so ties fall as ONNX Runtime's do,
 * not as dequantize -> op -> quantize's (the lowering). The expected values
 * are ONNX Runtime 1.32's outputs for these inputs; the lowered form gives
 * 113, 67, 105 and 45 for add[0], [5], [7] and [14], 99, 71, 47 for addc[8],
 * [10], [11], and 1, 7, 97, -75 for mul[3], [5], [9], [15]. A QLinearAdd of
 * equal shapes, one with a per-channel B ([1,2,1,1]: B's term joins first)
 * and an i8 QLinearMul by a scalar, at scale ratios of 1/2, on cpu and on
 * the default order; and the lowering of QLinearAveragePool, whose
 * quantization adds the zero point before rounding as ONNX Runtime's
 * (QuantizeLinear's order gives 3 and 5). */
static void case_qlinear_ms(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13},"
        "{\"domain\":\"com.microsoft\",\"version\":1}],"
        "\"inputs\":[\"a\",\"b\",\"b2\",\"ma\",\"mb\",\"p\",\"ps\"],"
        "\"outputs\":[\"add\",\"addc\",\"mul\",\"pool\",\"sig\",\"leaky\"],"
        "\"tensors\":[{\"name\":\"a\",\"dtype\":\"u8\",\"shape\":[1,2,2,4]},"
        "{\"name\":\"b\",\"dtype\":\"u8\",\"shape\":[1,2,2,4]},"
        "{\"name\":\"b2\",\"dtype\":\"u8\",\"shape\":[1,2,1,1]},"
        "{\"name\":\"ma\",\"dtype\":\"i8\",\"shape\":[16]},"
        "{\"name\":\"mb\",\"dtype\":\"i8\",\"shape\":[]},"
        "{\"name\":\"p\",\"dtype\":\"u8\",\"shape\":[1,1,2,4]},"
        "{\"name\":\"ps\",\"dtype\":\"f32\",\"shape\":[]}],"
        "\"nodes\":["
        QS_CONST("sa", "f32", "0.05") QS_CONST("za", "u8", "131") QS_CONST("sb", "f32", "0.025")
        QS_CONST("zb", "u8", "97") QS_CONST("sc", "f32", "0.05") QS_CONST("zc", "u8", "103")
        QS_CONST("msa", "f32", "0.5") QS_CONST("mza", "i8", "3") QS_CONST("mzb", "i8", "-7")
        QS_CONST("mzc", "i8", "5") QS_CONST("pz", "u8", "3") QS_CONST("sy", "f32", "0.00390625")
        "{\"name\":\"qadd\",\"op\":\"QLinearAdd\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"a\",\"sa\",\"za\",\"b\",\"sb\",\"zb\",\"sc\",\"zc\"],\"outputs\":[\"add\"]},"
        "{\"name\":\"qaddc\",\"op\":\"QLinearAdd\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"a\",\"sa\",\"za\",\"b2\",\"sb\",\"zb\",\"sc\",\"zc\"],\"outputs\":[\"addc\"]},"
        "{\"name\":\"qmul\",\"op\":\"QLinearMul\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"ma\",\"msa\",\"mza\",\"mb\",\"msa\",\"mzb\",\"msa\",\"mzc\"],"
        "\"outputs\":[\"mul\"]},"
        "{\"name\":\"qpool\",\"op\":\"QLinearAveragePool\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"p\",\"msa\",\"za\",\"msa\",\"pz\"],\"outputs\":[\"pool\"],"
        "\"attributes\":{\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}}},"
        "{\"name\":\"qsig\",\"op\":\"QLinearSigmoid\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"p2\",\"ps\",\"za\",\"sy\",\"pz\"],\"outputs\":[\"sig\"]},"
        "{\"name\":\"qleaky\",\"op\":\"QLinearLeakyRelu\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"p2\",\"msa\",\"za\",\"msa\",\"pz\"],\"outputs\":[\"leaky\"],"
        "\"attributes\":{\"alpha\":{\"float\":0.1}}},"
        "{\"name\":\"cp2\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"p2\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"u8\",\"shape\":[1,1,2,4],"
        "\"values\":[0,17,100,128,131,200,250,255]}}}}]}";
    const char *path = write_text("qlinear_ms.json", json);
    const uint8_t a[16] = {140, 98, 131, 0, 255, 17, 200, 133, 129, 132, 101, 77, 150, 160, 90, 250};
    const uint8_t b[16] = {98, 99, 97, 100, 1, 254, 33, 96, 95, 101, 103, 105, 0, 255, 64, 97};
    const uint8_t b2[2] = {99, 94};
    const int8_t ma[16] = {-128, -100, -7, 0, 3, 4, 5, 17, 33, 64, 99, 100, 120, 127, -1, -50};
    const int8_t mb = -4;
    /* QLinearAveragePool's windows sum to 2 and 6 steps above the zero
     * point: 0.5 and 1.5 output steps, then + 3 before rounding */
    const uint8_t pin[8] = {132, 132, 133, 133, 131, 131, 132, 132}, want_pool[2] = {4, 4};
    /* QLinearSigmoid with X's scale an input (its table made every run)
     * and QLinearLeakyRelu (alpha 0.1, its table made once) of p2 */
    const float psv = 0.05f;
    const uint8_t want_sig[8] = {3, 4, 48, 121, 131, 251, 255, 255};
    const uint8_t want_leaky[8] = {0, 0, 0, 3, 3, 72, 122, 127};
    const uint8_t want_add[16] = {112, 71, 103, 0, 179, 68, 140, 104,
                                  100, 106, 76, 53, 74, 211, 46, 222};
    const uint8_t want_addc[16] = {113, 71, 104, 0, 228, 0, 173, 106,
                                   100, 102, 72, 48, 120, 130, 60, 220};
    const int8_t want_mul[16] = {-128, -128, -10, 0, 5, 6, 8, 26, 50, 96, 127, 127, 127, 127, -1, -74};
    const char *orders[2] = {"cpu", "onednn, cpu"};
    for (int o = 0; o < 2; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        int64_t s4[4] = {1, 2, 2, 4}, sc4[4] = {1, 2, 1, 1}, s1[1] = {16};
        uint8_t add[16], addc[16];
        int8_t mul[16];
        uint8_t pool[2], sig[8], leaky[8];
        int64_t sp[4] = {1, 1, 2, 4}, spo[4] = {1, 1, 1, 2};
        pl_io in[7] = {
            {.name = "a", .tensor = {.data = (void *)a, .ndim = 4, .dtype = PL_DTYPE_U8,
                                     .shape = s4, .struct_size = sizeof(pl_tensor)}},
            {.name = "b", .tensor = {.data = (void *)b, .ndim = 4, .dtype = PL_DTYPE_U8,
                                     .shape = s4, .struct_size = sizeof(pl_tensor)}},
            {.name = "b2", .tensor = {.data = (void *)b2, .ndim = 4, .dtype = PL_DTYPE_U8,
                                      .shape = sc4, .struct_size = sizeof(pl_tensor)}},
            {.name = "ma", .tensor = {.data = (void *)ma, .ndim = 1, .dtype = PL_DTYPE_I8,
                                      .shape = s1, .struct_size = sizeof(pl_tensor)}},
            {.name = "mb", .tensor = {.data = (void *)&mb, .ndim = 0, .dtype = PL_DTYPE_I8,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "p", .tensor = {.data = (void *)pin, .ndim = 4, .dtype = PL_DTYPE_U8,
                                     .shape = sp, .struct_size = sizeof(pl_tensor)}},
            {.name = "ps", .tensor = {.data = (void *)&psv, .ndim = 0, .dtype = PL_DTYPE_F32,
                                      .struct_size = sizeof(pl_tensor)}}};
        pl_io out[6] = {
            {.name = "add", .tensor = {.data = add, .ndim = 4, .dtype = PL_DTYPE_U8, .shape = s4,
                                       .struct_size = sizeof(pl_tensor)}},
            {.name = "addc", .tensor = {.data = addc, .ndim = 4, .dtype = PL_DTYPE_U8,
                                        .shape = s4, .struct_size = sizeof(pl_tensor)}},
            {.name = "mul", .tensor = {.data = mul, .ndim = 1, .dtype = PL_DTYPE_I8, .shape = s1,
                                       .struct_size = sizeof(pl_tensor)}},
            {.name = "pool", .tensor = {.data = pool, .ndim = 4, .dtype = PL_DTYPE_U8,
                                        .shape = spo, .struct_size = sizeof(pl_tensor)}},
            {.name = "sig", .tensor = {.data = sig, .ndim = 4, .dtype = PL_DTYPE_U8,
                                       .shape = sp, .struct_size = sizeof(pl_tensor)}},
            {.name = "leaky", .tensor = {.data = leaky, .ndim = 4, .dtype = PL_DTYPE_U8,
                                         .shape = sp, .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(sess, in, 7, out, 6));
        for (int i = 0; i < 8; i++) {
            TH_CHECK(sig[i] == want_sig[i], "order = %s: sig[%d] = %d, ONNX Runtime gives %d",
                     orders[o], i, sig[i], want_sig[i]);
            TH_CHECK(leaky[i] == want_leaky[i],
                     "order = %s: leaky[%d] = %d, ONNX Runtime gives %d", orders[o], i, leaky[i],
                     want_leaky[i]);
        }
        for (int i = 0; i < 2; i++)
            TH_CHECK(pool[i] == want_pool[i], "order = %s: pool[%d] = %d, ONNX Runtime gives %d",
                     orders[o], i, pool[i], want_pool[i]);
        for (int i = 0; i < 16; i++) {
            TH_CHECK(add[i] == want_add[i], "order = %s: add[%d] = %d, ONNX Runtime gives %d",
                     orders[o], i, add[i], want_add[i]);
            TH_CHECK(addc[i] == want_addc[i], "order = %s: addc[%d] = %d, ONNX Runtime gives %d",
                     orders[o], i, addc[i], want_addc[i]);
            TH_CHECK(mul[i] == want_mul[i], "order = %s: mul[%d] = %d, ONNX Runtime gives %d",
                     orders[o], i, mul[i], want_mul[i]);
        }
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

/* The 16-bit quantization of ONNX Runtime's quantizer (com.microsoft
 * QuantizeLinear to u16 at opset 13, which lowers to ONNX's, and ONNX's
 * own to i16), ONNX's DequantizeLinear of u16, a u16 Add that wraps and a
 * Cast of u16 to f32, end to end from a JSON graph: saturation at both
 * ends of each range, rounding, and the values exact; on cpu and on the
 * default order (onednn refuses the 16-bit tensors). */
static void case_wide_int_qdq(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13},"
        "{\"domain\":\"com.microsoft\",\"version\":1}],"
        "\"inputs\":[\"x\",\"a\"],\"outputs\":[\"dq\",\"c\",\"q2\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[6]},"
        "{\"name\":\"a\",\"dtype\":\"u16\",\"shape\":[6]}],"
        "\"nodes\":["
        QS_CONST("s", "f32", "0.01") QS_CONST("z", "u16", "32768")
        QS_CONST("s2", "f32", "0.001") QS_CONST("z2", "i16", "0")
        "{\"name\":\"q\",\"op\":\"QuantizeLinear\",\"domain\":\"com.microsoft\","
        "\"inputs\":[\"x\",\"s\",\"z\"],\"outputs\":[\"qx\"]},"
        "{\"name\":\"dq\",\"op\":\"DequantizeLinear\",\"inputs\":[\"qx\",\"s\",\"z\"],"
        "\"outputs\":[\"dq\"]},"
        "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"qx\",\"a\"],\"outputs\":[\"sum\"]},"
        "{\"name\":\"cast\",\"op\":\"Cast\",\"inputs\":[\"sum\"],\"outputs\":[\"c\"],"
        "\"attributes\":{\"to\":{\"int\":1}}},"
        "{\"name\":\"q2\",\"op\":\"QuantizeLinear\",\"inputs\":[\"x\",\"s2\",\"z2\"],"
        "\"outputs\":[\"q2\"]}]}";
    const char *path = write_text("wide_int_qdq.json", json);
    const float x[6] = {0.5f, -0.25f, 327.68f, -400.0f, 0.004f, 0.016f};
    const uint16_t a[6] = {1, 2, 3, 65535, 100, 0};
    /* q = sat(round(x / 0.01) + 32768): 32818 32743 65535 0 32768 32770 */
    const float want_dq[6] = {0.5f, -0.25f, 327.67f, -327.68f, 0.0f, 0.02f};
    const float want_c[6] = {32819, 32745, 2, 65535, 32868, 32770};
    const int16_t want_q2[6] = {500, -250, 32767, -32768, 4, 16};
    const char *orders[2] = {"cpu", "onednn, cpu"};
    for (int o = 0; o < 2; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        int64_t s6[1] = {6};
        float dq[6], c[6];
        int16_t q2[6];
        pl_io in[2] = {
            {.name = "x", .tensor = {.data = (void *)x, .ndim = 1, .dtype = PL_DTYPE_F32,
                                     .shape = s6, .struct_size = sizeof(pl_tensor)}},
            {.name = "a", .tensor = {.data = (void *)a, .ndim = 1, .dtype = PL_DTYPE_U16,
                                     .shape = s6, .struct_size = sizeof(pl_tensor)}}};
        pl_io out[3] = {
            {.name = "dq", .tensor = {.data = dq, .ndim = 1, .dtype = PL_DTYPE_F32, .shape = s6,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "c", .tensor = {.data = c, .ndim = 1, .dtype = PL_DTYPE_F32, .shape = s6,
                                     .struct_size = sizeof(pl_tensor)}},
            {.name = "q2", .tensor = {.data = q2, .ndim = 1, .dtype = PL_DTYPE_I16, .shape = s6,
                                      .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(sess, in, 2, out, 3));
        for (int i = 0; i < 6; i++) {
            TH_CHECK(fabsf(dq[i] - want_dq[i]) <= 1e-5f * (1 + fabsf(want_dq[i])),
                     "order = %s: dq[%d] = %.9g, want %.9g", orders[o], i, dq[i], want_dq[i]);
            TH_CHECK(c[i] == want_c[i], "order = %s: c[%d] = %g, want %g", orders[o], i, c[i],
                     want_c[i]);
            TH_CHECK(q2[i] == want_q2[i], "order = %s: q2[%d] = %d, want %d", orders[o], i,
                     q2[i], want_q2[i]);
        }
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

/* RotaryEmbedding 23 expanded by the core: 3-D input (num_heads 2, head
 * size 4) with halves and position_ids, and the same values as a 4-D
 * [B, heads, S, size] input with interleaved pairs and a partial rotary
 * dimension of 2, against the op's reference algorithm in C on cpu, onednn
 * and example_acc. */
static void case_rotary(void)
{
    enum { S = 2, H = 2, D = 4 };
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":23}],"
        "\"inputs\":[\"x3\",\"x4\",\"pos\"],\"outputs\":[\"y3\",\"y4\"],"
        "\"tensors\":[{\"name\":\"x3\",\"dtype\":\"f32\",\"shape\":[1,2,8]},"
        "{\"name\":\"x4\",\"dtype\":\"f32\",\"shape\":[1,2,2,4]},"
        "{\"name\":\"pos\",\"dtype\":\"i64\",\"shape\":[1,2]}],"
        "\"nodes\":["
        "{\"name\":\"cc\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"cos\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3,2],"
        "\"values\":[1,1,0.5,0.8,-0.6,0.2]}}}},"
        "{\"name\":\"sc\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"sin\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3,2],"
        "\"values\":[0,0,0.87,0.6,0.8,-0.98]}}}},"
        "{\"name\":\"c1\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"cos1\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3,1],"
        "\"values\":[1,0.5,-0.6]}}}},"
        "{\"name\":\"s1\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"sin1\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[3,1],"
        "\"values\":[0,0.87,0.8]}}}},"
        "{\"name\":\"r3\",\"op\":\"RotaryEmbedding\",\"inputs\":[\"x3\",\"cos\",\"sin\",\"pos\"],"
        "\"outputs\":[\"y3\"],\"attributes\":{\"num_heads\":{\"int\":2}}},"
        "{\"name\":\"r4\",\"op\":\"RotaryEmbedding\",\"inputs\":[\"x4\",\"cos1\",\"sin1\",\"pos\"],"
        "\"outputs\":[\"y4\"],\"attributes\":{\"interleaved\":{\"int\":1},"
        "\"rotary_embedding_dim\":{\"int\":2}}}]}";
    const char *path = write_text("rotary.json", json);
    const float cosv[3][2] = {{1, 1}, {0.5f, 0.8f}, {-0.6f, 0.2f}};
    const float sinv[3][2] = {{0, 0}, {0.87f, 0.6f}, {0.8f, -0.98f}};
    int64_t pos[S] = {2, 0};
    float x3[S * H * D], x4[H * S * D], w3[S * H * D], w4[H * S * D];
    for (int i = 0; i < S * H * D; i++) {
        x3[i] = 0.3f * (float)i - 2.0f;
        x4[i] = 1.5f - 0.2f * (float)i;
    }
    for (int s = 0; s < S; s++) /* halves, full rotation: x3 is [S][H][D] */
        for (int h = 0; h < H; h++) {
            const float *x = x3 + (s * H + h) * D;
            float *y = w3 + (s * H + h) * D;
            for (int k = 0; k < D / 2; k++) {
                float c = cosv[pos[s]][k], sn = sinv[pos[s]][k];
                y[k] = c * x[k] - sn * x[k + D / 2];
                y[k + D / 2] = sn * x[k] + c * x[k + D / 2];
            }
        }
    for (int h = 0; h < H; h++) /* interleaved, rotary dim 2: x4 is [H][S][D] */
        for (int s = 0; s < S; s++) {
            const float *x = x4 + (h * S + s) * D;
            float *y = w4 + (h * S + s) * D;
            float c = cosv[pos[s]][0], sn = sinv[pos[s]][0];
            y[0] = c * x[0] - sn * x[1];
            y[1] = sn * x[0] + c * x[1];
            y[2] = x[2];
            y[3] = x[3];
        }
    const char *orders[3] = {"cpu", "onednn, cpu", "example_acc, cpu"};
    for (int o = 0; o < 3; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        int64_t s3[3] = {1, S, H * D}, s4[4] = {1, H, S, D}, sp[2] = {1, S};
        float y3[S * H * D], y4[H * S * D];
        pl_io in[3] = {
            {.name = "x3", .tensor = {.data = x3, .ndim = 3, .dtype = PL_DTYPE_F32,
                                      .shape = s3, .struct_size = sizeof(pl_tensor)}},
            {.name = "x4", .tensor = {.data = x4, .ndim = 4, .dtype = PL_DTYPE_F32,
                                      .shape = s4, .struct_size = sizeof(pl_tensor)}},
            {.name = "pos", .tensor = {.data = pos, .ndim = 2, .dtype = PL_DTYPE_I64,
                                       .shape = sp, .struct_size = sizeof(pl_tensor)}}};
        pl_io out[2] = {
            {.name = "y3", .tensor = {.data = y3, .ndim = 3, .dtype = PL_DTYPE_F32,
                                      .shape = s3, .struct_size = sizeof(pl_tensor)}},
            {.name = "y4", .tensor = {.data = y4, .ndim = 4, .dtype = PL_DTYPE_F32,
                                      .shape = s4, .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(sess, in, 3, out, 2));
        for (int i = 0; i < S * H * D; i++) {
            TH_CHECK(fabsf(y3[i] - w3[i]) <= 1e-5f, "order = %s: y3[%d] = %.7g, want %.7g",
                     orders[o], i, y3[i], w3[i]);
            TH_CHECK(fabsf(y4[i] - w4[i]) <= 1e-5f, "order = %s: y4[%d] = %.7g, want %.7g",
                     orders[o], i, y4[i], w4[i]);
        }
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

static void case_fail_compile_fallback(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\nstrict = no\n"
                                  "[example_acc]\nfail_compile = add2\n");
    pl_session *s = session_for(rt, write_residual(&W));
    TH_CHECK(pl_session_warning_count(s) == 1, "expected one warning, got %zu",
             pl_session_warning_count(s));
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "add2");
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "strict = no");
    json_t *root = th_explain(s);
    expect_all_on(root, "cpu");
    json_decref(root);
    run_and_check(s, &W, 11);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fail_compile_strict(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\nstrict = yes\n"
                                  "[example_acc]\nfail_compile = add2\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_residual(&W), &m));
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, NULL, &s);
    TH_CHECK(st != NULL && s == NULL, "a failed compile did not fail the session under strict");
    TH_CHECK_CONTAINS(pl_status_message(st), "add2");
    TH_CHECK_CONTAINS(pl_status_message(st), "strict = yes");
    pl_status_free(st);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* A model with two example_acc subgraphs: A (Relu, Mul) on a [256, 512]
 * input, then a ReduceMean (cpu) to [256, 1], then B (Relu, Add). */
static const char *write_two_acc_subgraphs(void)
{
    return write_text("two_acc.json",
                      "{\"format\":\"plinth-graph\",\"version\":1,"
                      "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
                      "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                      "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[256,512]}],"
                      "\"nodes\":["
                      "{\"name\":\"a_relu\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"r1\"]},"
                      "{\"name\":\"a_mul\",\"op\":\"Mul\",\"inputs\":[\"r1\",\"r1\"],"
                      "\"outputs\":[\"m1\"]},"
                      "{\"name\":\"mean\",\"op\":\"ReduceMean\",\"inputs\":[\"m1\"],"
                      "\"outputs\":[\"red\"],\"attributes\":{\"axes\":{\"ints\":[1]}}},"
                      "{\"name\":\"b_relu\",\"op\":\"Relu\",\"inputs\":[\"red\"],"
                      "\"outputs\":[\"r2\"]},"
                      "{\"name\":\"b_add\",\"op\":\"Add\",\"inputs\":[\"r2\",\"r2\"],"
                      "\"outputs\":[\"y\"]}]}");
}

/* Runs the two-subgraph model on X and checks Y against a reference. */
static void run_two_acc(pl_session *s)
{
    enum { R = 256, C = 512 };
    static float x[R * C];
    float y[R];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((i * 37) % 101 - 50) / 25.0f;
    int64_t sx[2] = {R, C}, sy[2] = {R, 1};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = sx, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = "y", .tensor = {.data = y, .ndim = 2, .dtype = PL_DTYPE_F32,
                                         .shape = sy, .struct_size = sizeof(pl_tensor)}};
    for (int run = 0; run < 2; run++) {
        TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
        for (int r = 0; r < R; r++) {
            double sum = 0;
            for (int c = 0; c < C; c++) {
                double v = x[r * C + c] > 0 ? x[r * C + c] : 0;
                sum += v * v;
            }
            double want = 2 * (sum / C);
            TH_CHECK(fabs(y[r] - want) <= 1e-5 * (1 + want), "y[%d] = %.7g, want %.7g", r,
                     y[r], want);
        }
    }
}

/* A device whose memory holds each subgraph's compiled program but not
 * the run's arena as well: the session is made (not the first run failed)
 * and the subgraph holding the most device memory falls back to cpu, with
 * a warning, while the small one stays; under strict = yes creation fails
 * and says why. Without memory_mb both stay on the device. */
static void case_device_memory_fallback(void)
{
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\n");
    pl_session *s = session_for(rt, write_two_acc_subgraphs());
    TH_CHECK(pl_session_warning_count(s) == 0, "warning: %s", pl_session_warning(s, 0));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "a_mul"), "example_acc") == 0, "a_mul on %s",
             backend_of(root, "a_mul"));
    json_decref(root);
    run_two_acc(s);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);

    rt = runtime_with("[placement]\norder = example_acc, cpu\nstrict = no\n"
                      "[example_acc]\nmemory_mb = 2\n");
    s = session_for(rt, write_two_acc_subgraphs());
    TH_CHECK(pl_session_warning_count(s) == 1, "expected one warning, got %zu",
             pl_session_warning_count(s));
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "a_relu");
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "too little memory");
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "strict = no");
    root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "a_relu"), "cpu") == 0, "a_relu on %s",
             backend_of(root, "a_relu"));
    TH_CHECK(strcmp(backend_of(root, "a_mul"), "cpu") == 0, "a_mul on %s",
             backend_of(root, "a_mul"));
    TH_CHECK(strcmp(backend_of(root, "b_add"), "example_acc") == 0, "b_add on %s",
             backend_of(root, "b_add"));
    json_decref(root);
    run_two_acc(s);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);

    rt = runtime_with("[placement]\norder = example_acc, cpu\nstrict = yes\n"
                      "[example_acc]\nmemory_mb = 2\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_two_acc_subgraphs(), &m));
    pl_session *none = NULL;
    pl_status *st = pl_session_create(m, NULL, &none);
    TH_CHECK(st != NULL && none == NULL, "a device too small did not fail the session "
                                         "under strict = yes");
    TH_CHECK_CONTAINS(pl_status_message(st), "out of memory");
    TH_CHECK_CONTAINS(pl_status_message(st), "strict = yes");
    pl_status_free(st);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static void case_min_subgraph_nodes(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\n"
                                  "min_subgraph_nodes = 20\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    expect_all_on(root, "cpu");
    json_t *p = json_array_get(json_object_get(root, "placement"), 0);
    TH_CHECK_CONTAINS(json_string_value(json_object_get(json_object_get(p, "reasons"),
                                                        "example_acc")),
                      "min_subgraph_nodes");
    json_decref(root);
    run_and_check(s, &W, 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_pin(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\npin = relu1=cpu\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu1"), "cpu") == 0, "the pin did not hold");
    TH_CHECK(strcmp(backend_of(root, "mm1"), "example_acc") == 0, "mm1 left example_acc");
    TH_CHECK(json_array_size(json_object_get(root, "subgraphs")) == 2,
             "the pinned node should split the subgraph in two");
    json_decref(root);
    run_and_check(s, &W, 5);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static pl_session *session_with(pl_runtime *rt, const char *model_path,
                                const pl_session_options *o)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, model_path, &m));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, o, &s));
    pl_model_destroy(m);
    return s;
}

/* Placement from code: the options' order, pins, strict and
 * min_subgraph_nodes replace the file's, each as its key would. */
static void case_options_placement(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    const char *order[] = {"example_acc:0", "cpu"};
    pl_session_options o = {.struct_size = sizeof o, .order = order, .n_order = 2};
    pl_session *s = session_with(rt, write_residual(&W), &o);
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "mm1"), "example_acc") == 0,
             "the options' order did not replace the file's");
    TH_CHECK(strcmp(backend_of(root, "softmax"), "cpu") == 0, "softmax not on cpu");
    json_decref(root);
    run_and_check(s, &W, 1);
    pl_session_destroy(s);

    const char *pins[] = {"relu1=cpu"};
    o.pins = pins;
    o.n_pins = 1;
    s = session_with(rt, write_residual(&W), &o);
    root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu1"), "cpu") == 0, "the pin did not hold");
    TH_CHECK(strcmp(backend_of(root, "mm1"), "example_acc") == 0, "mm1 left example_acc");
    json_decref(root);
    run_and_check(s, &W, 2);
    pl_session_destroy(s);

    o.pins = NULL;
    o.n_pins = 0;
    o.min_subgraph_nodes = 20;
    s = session_with(rt, write_residual(&W), &o);
    root = th_explain(s);
    expect_all_on(root, "cpu");
    json_decref(root);
    pl_session_destroy(s);

    /* NULL options and a zeroed struct keep the file's order = cpu. */
    pl_session_options zero = {.struct_size = sizeof zero};
    s = session_with(rt, write_residual(&W), &zero);
    root = th_explain(s);
    expect_all_on(root, "cpu");
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* strict from code: a failed compile fails the session with YES, falls
 * back with NO, whatever the file says. */
static void case_options_strict(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\nstrict = no\n"
                                  "[example_acc]\nfail_compile = add2\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_residual(&W), &m));
    pl_session_options o = {.struct_size = sizeof o, .strict = PL_OPTION_YES};
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, &o, &s);
    TH_CHECK(st != NULL && s == NULL, "strict = YES from code did not fail the session");
    TH_CHECK_CONTAINS(pl_status_message(st), "add2");
    pl_status_free(st);
    o.strict = PL_OPTION_NO;
    TH_CHECK_OK(pl_session_create(m, &o, &s));
    TH_CHECK(pl_session_warning_count(s) == 1, "expected the fallback's warning");
    run_and_check(s, &W, 4);
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* Wrong options fail creation with a message naming the option and why;
 * the model stays usable. */
static void case_options_errors(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[example_acc]\nenabled = no\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_residual(&W), &m));
    static const struct {
        const char *entry;
        const char *message;
    } orders[] = {
        {"nosuch", "no module named 'nosuch'"},
        {"example_acc", "module 'example_acc' is disabled"},
        {"cpu:3", "module cpu has 1 device"},
        {"cpu:x", "must be a number"},
        {"onnx", "runs no nodes"},
        {"", "an entry is empty"},
    };
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        const char *order[] = {orders[i].entry};
        pl_session_options o = {.struct_size = sizeof o, .order = order, .n_order = 1};
        pl_session *s = NULL;
        pl_status *st = pl_session_create(m, &o, &s);
        TH_CHECK(st != NULL && s == NULL, "order '%s' was accepted", orders[i].entry);
        TH_CHECK_CONTAINS(pl_status_message(st), "session option order");
        TH_CHECK_CONTAINS(pl_status_message(st), orders[i].message);
        pl_status_free(st);
    }
    const char *pins[] = {"relu1"};
    pl_session_options o = {.struct_size = sizeof o, .pins = pins, .n_pins = 1};
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, &o, &s);
    TH_CHECK_CONTAINS(pl_status_message(st), "session option pins: 'relu1' is not node=backend");
    pl_status_free(st);
    pl_session_options bad = {.struct_size = sizeof bad, .strict = (pl_option_flag)7};
    st = pl_session_create(m, &bad, &s);
    TH_CHECK_CONTAINS(pl_status_message(st), "session option strict");
    pl_status_free(st);
    pl_session_options bad_measure = {.struct_size = sizeof bad_measure,
                                      .measure = (pl_option_flag)3};
    st = pl_session_create(m, &bad_measure, &s);
    TH_CHECK_CONTAINS(pl_status_message(st), "session option measure");
    pl_status_free(st);
    pl_session_options small = {.struct_size = 2};
    st = pl_session_create(m, &small, &s);
    TH_CHECK_CONTAINS(pl_status_message(st), "struct_size");
    pl_status_free(st);
    /* The model still makes sessions. */
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    run_and_check(s, &W, 6);
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static void case_unsupported_node(void)
{
    /* fx_custom registers com.plinth.test:Repeat with a shape function but
     * no backend runs it. */
    const char *dir = th_path(th_tempdir(), "mods");
    th_mkdir(dir, 0755);
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "cp %s/libplinth_cpu.so %s/libplinth_json.so %s/ && cp %s %s/libplinth_fx_custom.so "
             "&& chmod 644 %s/*.so",
             th_arg(0), th_arg(0), dir, th_arg(1), dir, dir);
    TH_CHECK(system(cmd) == 0, "cannot stage modules");
    const char *ini = th_path(th_tempdir(), "backend.ini");
    FILE *f = fopen(ini, "w");
    fprintf(f, "[runtime]\nmodules = %s\n[placement]\norder = cpu\n", dir);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini, .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    const char *model = th_path(th_tempdir(), "m.json");
    f = fopen(model, "w");
    fputs("{\"format\":\"plinth-graph\",\"version\":1,\"opset_import\":[{\"domain\":\"\","
          "\"version\":13},{\"domain\":\"com.plinth.test\",\"version\":1}],\"inputs\":[\"a\"],"
          "\"outputs\":[\"c\"],\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[2,3]}],"
          "\"nodes\":[{\"name\":\"act\",\"op\":\"Relu\",\"inputs\":[\"a\"],\"outputs\":[\"b\"]},"
          "{\"name\":\"rep\",\"op\":\"Repeat\",\"domain\":\"com.plinth.test\",\"inputs\":[\"b\"],"
          "\"outputs\":[\"c\"]}]}", f);
    fclose(f);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, model, &m));
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, NULL, &s);
    TH_CHECK(st != NULL, "a node nobody runs made a session");
    TH_CHECK_CONTAINS(pl_status_message(st), "node 'rep'");
    TH_CHECK_CONTAINS(pl_status_message(st), "Repeat");
    TH_CHECK_CONTAINS(pl_status_message(st), "no module can run it");
    TH_CHECK_CONTAINS(pl_status_message(st), "cpu:");
    pl_status_free(st);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

typedef struct thread_arg {
    pl_session *s;
    int id;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    for (int r = 0; r < 100; r++)
        run_and_check(a->s, &W, a->id * 1000 + r);
    return NULL;
}

static void threads_on(const char *config)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with(config);
    pl_session *s = session_for(rt, write_residual(&W));
    pthread_t t[8];
    thread_arg args[8];
    for (int i = 0; i < 8; i++) {
        args[i] = (thread_arg){.s = s, .id = i};
        TH_CHECK(pthread_create(&t[i], NULL, thread_main, &args[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    uint64_t runs = 0;
    pl_session_step_info(s, 0, NULL, NULL, NULL, &runs);
    TH_CHECK(runs == 800, "step 0 ran %llu times, expected 800", (unsigned long long)runs);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_threads_cpu(void)
{
    threads_on("[placement]\norder = cpu\n");
}

static void case_threads_acc(void)
{
    threads_on("[placement]\norder = example_acc, cpu\n");
}

static void case_naive_engine(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("engine = naive\n[placement]\norder = example_acc, cpu\n");
    pl_session *s = session_for(rt, write_residual(&W));
    for (int seed = 0; seed < 3; seed++)
        run_and_check(s, &W, seed);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_bad_inputs(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, write_residual(&W));
    float x[BATCH * IN] = {0};
    int64_t bad[2] = {BATCH, IN + 1};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = bad, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = "z", .tensor = {.struct_size = sizeof(pl_tensor)}};
    pl_status *st = pl_session_run(s, &in, 1, &out, 1);
    TH_CHECK(st != NULL, "a wrongly shaped input ran");
    TH_CHECK_CONTAINS(pl_status_message(st), "input 'x' must be f32[4,16], got f32[4,17]");
    pl_status_free(st);
    st = pl_session_run(s, NULL, 0, &out, 1);
    TH_CHECK(st != NULL, "a missing input ran");
    TH_CHECK_CONTAINS(pl_status_message(st), "input 'x' is not given");
    pl_status_free(st);
    int64_t good[2] = {BATCH, IN};
    in.tensor.shape = good;
    pl_io nosuch = {.name = "nosuch", .tensor = {.struct_size = sizeof(pl_tensor)}};
    st = pl_session_run(s, &in, 1, &nosuch, 1);
    TH_CHECK(st != NULL, "an unknown output was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st), "no output named 'nosuch'");
    pl_status_free(st);
    /* session-owned output buffer */
    TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
    TH_CHECK(out.tensor.data != NULL && out.tensor.ndim == 2 && out.tensor.shape[1] == OUT,
             "the library did not allocate the output");
    pl_buffer_free(out.tensor.data);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* The cache state of the first subgraph in explain's JSON. */
static const char *first_cache_state(pl_session *s, char *buf, size_t size)
{
    json_t *root = th_explain(s);
    json_t *sg = json_array_get(json_object_get(root, "subgraphs"), 0);
    TH_CHECK(sg != NULL, "no subgraph");
    snprintf(buf, size, "%s", json_string_value(json_object_get(sg, "cache")));
    json_decref(root);
    return buf;
}

static void case_cache(void)
{
    make_weights(&W);
    const char *dir = th_tempdir();
    const char *cache = th_path(dir, "cache");
    char extra[4096], state[32];
    snprintf(extra, sizeof extra, "cache_dir = %s\n[placement]\norder = example_acc, cpu\n", cache);
    const char *model = write_residual(&W);
    /* cold: compiled and stored */
    pl_runtime *rt = runtime_with(extra);
    pl_session *s = session_for(rt, model);
    TH_CHECK(strcmp(first_cache_state(s, state, sizeof state), "stored") == 0,
             "cold session: cache state %s", state);
    run_and_check(s, &W, 1);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    /* warm: a new runtime imports it */
    rt = runtime_with(extra);
    s = session_for(rt, model);
    TH_CHECK(strcmp(first_cache_state(s, state, sizeof state), "hit") == 0,
             "warm session: cache state %s", state);
    TH_CHECK(pl_session_warning_count(s) == 0, "warnings on a warm start");
    run_and_check(s, &W, 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    /* a damaged entry is refused by the module and compiled again */
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "for f in %s/*.blob; do head -c 100 \"$f\" > \"$f.x\" && mv \"$f.x\" \"$f\"; done",
             cache);
    TH_CHECK(system(cmd) == 0, "cannot damage the cache");
    rt = runtime_with(extra);
    s = session_for(rt, model);
    TH_CHECK(strcmp(first_cache_state(s, state, sizeof state), "stored") == 0,
             "damaged entry: cache state %s", state);
    TH_CHECK(pl_session_warning_count(s) == 1, "expected one warning, got %zu",
             pl_session_warning_count(s));
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "the cached compile was refused");
    run_and_check(s, &W, 3);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    /* a cache folder others may write is not used */
    TH_CHECK(chmod(cache, 0777) == 0, "chmod");
    rt = runtime_with(extra);
    s = session_for(rt, model);
    TH_CHECK(strcmp(first_cache_state(s, state, sizeof state), "off") == 0,
             "unsafe folder: cache state %s", state);
    TH_CHECK_CONTAINS(pl_session_warning(s, 0), "writable by group or others");
    run_and_check(s, &W, 4);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* The residual model with weights W shifted by K (write_residual makes a
 * folder of its own each time). */
static const char *model_variant(int k)
{
    weights w = W;
    w.b3[0] += (float)k; /* a different constant: a different cache key */
    return write_residual(&w);
}

static const char *cache_state_of(pl_runtime *rt, const char *model, char *buf, size_t size)
{
    pl_session *s = session_for(rt, model);
    first_cache_state(s, buf, size);
    pl_session_destroy(s);
    return buf;
}

static void cache_stats(pl_runtime *rt, pl_cache_stats *cs)
{
    *cs = (pl_cache_stats){.struct_size = sizeof *cs};
    TH_CHECK_OK(pl_runtime_cache_stats(rt, cs));
}

/* [runtime] cache_max_mb: a store past the limit removes the least
 * recently used entries (a hit counts as a use, so this is not the oldest
 * store), never the entry just stored; the counters in the folder add up
 * over runtimes; clear empties it. The limit is set from the size of one
 * entry: room for two and a half. */
static void case_cache_limit(void)
{
    make_weights(&W);
    const char *cache = th_path(th_tempdir(), "lru");
    const char *m[5];
    for (int k = 1; k <= 4; k++)
        m[k] = model_variant(k);
    char extra[4096], state[32];
    snprintf(extra, sizeof extra,
             "cache_dir = %s\ncache_max_mb = 0\n[placement]\norder = example_acc, cpu\n", cache);
    pl_runtime *rt = runtime_with(extra);
    TH_CHECK(strcmp(cache_state_of(rt, m[1], state, sizeof state), "stored") == 0, "m1: %s", state);
    pl_cache_stats cs;
    cache_stats(rt, &cs);
    TH_CHECK(cs.entries == 1 && cs.bytes > 0 && cs.max_bytes == 0 && cs.stores == 1 &&
                 cs.misses == 1 && cs.hits == 0 && cs.bytes_written == cs.bytes,
             "after one store: %llu entries, %llu bytes, %llu stores, %llu misses",
             (unsigned long long)cs.entries, (unsigned long long)cs.bytes,
             (unsigned long long)cs.stores, (unsigned long long)cs.misses);
    uint64_t one = cs.bytes;
    pl_runtime_destroy(rt);
    snprintf(extra, sizeof extra,
             "cache_dir = %s\ncache_max_mb = %.9f\n[placement]\norder = example_acc, cpu\n",
             cache, 2.5 * (double)one / 1048576.0);
    rt = runtime_with(extra);
    /* m2 stored; m3 stored, m1 (the least recently used) evicted */
    TH_CHECK(strcmp(cache_state_of(rt, m[2], state, sizeof state), "stored") == 0, "m2: %s", state);
    TH_CHECK(strcmp(cache_state_of(rt, m[3], state, sizeof state), "stored") == 0, "m3: %s", state);
    /* m2 used again: now m3 is the least recently used */
    TH_CHECK(strcmp(cache_state_of(rt, m[2], state, sizeof state), "hit") == 0, "m2 again: %s",
             state);
    TH_CHECK(strcmp(cache_state_of(rt, m[4], state, sizeof state), "stored") == 0, "m4: %s", state);
    TH_CHECK(strcmp(cache_state_of(rt, m[2], state, sizeof state), "hit") == 0,
             "m2 was evicted although m3 was used less recently (%s)", state);
    TH_CHECK(strcmp(cache_state_of(rt, m[3], state, sizeof state), "stored") == 0,
             "m3 survived the limit: %s", state);
    TH_CHECK(strcmp(cache_state_of(rt, m[1], state, sizeof state), "stored") == 0,
             "m1 survived the limit: %s", state);
    cache_stats(rt, &cs);
    /* stores: m1, m2, m3, m4, m3, m1; hits: m2 twice; evictions: m1, m3, m4, m2 */
    TH_CHECK(cs.stores == 6 && cs.hits == 2 && cs.misses == 6 && cs.evictions == 4 &&
                 cs.entries == 2 && cs.bytes <= cs.max_bytes && cs.bytes_read == 2 * one,
             "stores %llu, hits %llu, misses %llu, evictions %llu, entries %llu, bytes %llu of "
             "%llu, read %llu",
             (unsigned long long)cs.stores, (unsigned long long)cs.hits,
             (unsigned long long)cs.misses, (unsigned long long)cs.evictions,
             (unsigned long long)cs.entries, (unsigned long long)cs.bytes,
             (unsigned long long)cs.max_bytes, (unsigned long long)cs.bytes_read);
    uint64_t removed = 0;
    TH_CHECK_OK(pl_runtime_cache_clear(rt, &removed));
    cache_stats(rt, &cs);
    TH_CHECK(removed == 2 && cs.entries == 0 && cs.stores == 0 && cs.hits == 0,
             "clear removed %llu, left %llu entries and %llu stores", (unsigned long long)removed,
             (unsigned long long)cs.entries, (unsigned long long)cs.stores);
    pl_runtime_destroy(rt);
    /* a bad limit is refused naming the key */
    const char *ini = th_path(th_tempdir(), "bad.ini");
    th_write_file(ini, "[runtime]\ncache_max_mb = lots\n", 0600);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *bad = NULL;
    pl_status *st = pl_runtime_create(&o, &bad);
    TH_CHECK(st != NULL && bad == NULL, "cache_max_mb = lots was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st), "bad value 'lots' for cache_max_mb");
    pl_status_free(st);
}

/* Files in DIR whose names end with SUFFIX. */
static int count_suffix(const char *dir, const char *suffix)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "ls -1 %s | grep -c '%s$'", dir, suffix);
    FILE *p = popen(cmd, "r");
    TH_CHECK(p != NULL, "popen");
    int n = -1;
    TH_CHECK(fscanf(p, "%d", &n) == 1, "cannot count files in %s", dir);
    pclose(p);
    return n;
}

typedef struct cache_racer {
    pl_runtime *rt;
    const char *model;
    pthread_barrier_t *start;
    char state[32];
    size_t warnings;
} cache_racer;

static void *cache_race(void *arg)
{
    cache_racer *r = arg;
    pthread_barrier_wait(r->start);
    pl_session *s = session_for(r->rt, r->model);
    first_cache_state(s, r->state, sizeof r->state);
    r->warnings = pl_session_warning_count(s);
    run_and_check(s, &W, 5);
    pl_session_destroy(s);
    return NULL;
}

/* Sessions of one model compiled at once in one process all store (or find)
 * the entry: each write has its own temporary file, so none collides with
 * another's, and the folder ends with the entries of one session and no
 * temporaries. */
static void case_cache_concurrent(void)
{
    make_weights(&W);
    const char *model = write_residual(&W);
    char extra[4096];
    /* the reference: one session alone */
    const char *ref = th_path(th_tempdir(), "cache");
    snprintf(extra, sizeof extra, "cache_dir = %s\n[placement]\norder = example_acc, cpu\n", ref);
    pl_runtime *rt = runtime_with(extra);
    pl_session_destroy(session_for(rt, model));
    pl_runtime_destroy(rt);
    int entries = count_suffix(ref, ".blob");
    TH_CHECK(entries >= 1, "the reference session stored nothing");

    for (int round = 0; round < 4; round++) {
        const char *cache = th_path(th_tempdir(), "cache");
        snprintf(extra, sizeof extra, "cache_dir = %s\n[placement]\norder = example_acc, cpu\n", cache);
        rt = runtime_with(extra);
        enum { RACERS = 6 };
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, RACERS);
        cache_racer racers[RACERS];
        pthread_t threads[RACERS];
        for (int i = 0; i < RACERS; i++) {
            racers[i] = (cache_racer){.rt = rt, .model = model, .start = &start};
            TH_CHECK(pthread_create(&threads[i], NULL, cache_race, &racers[i]) == 0,
                     "pthread_create");
        }
        for (int i = 0; i < RACERS; i++)
            pthread_join(threads[i], NULL);
        pthread_barrier_destroy(&start);
        pl_runtime_destroy(rt);
        for (int i = 0; i < RACERS; i++) {
            TH_CHECK(strcmp(racers[i].state, "stored") == 0 ||
                         strcmp(racers[i].state, "hit") == 0,
                     "round %d, session %d: cache state %s", round, i, racers[i].state);
            TH_CHECK(racers[i].warnings == 0, "round %d, session %d: %zu warning(s)",
                     round, i, racers[i].warnings);
        }
        TH_CHECK(count_suffix(cache, ".blob") == entries,
                 "round %d: %d entries, one session stores %d", round,
                 count_suffix(cache, ".blob"), entries);
        TH_CHECK(count_suffix(cache, ".tmp") == 0, "round %d: temporaries left", round);
    }
}

/* ---- epilogue fusion ------------------------------------------------------ */

/* A model written by a test: tensors (constants go to a sidecar), nodes, and
 * the graph's inputs and outputs. Intermediate tensors are left to shape
 * inference. */
typedef struct mb {
    const char *dir;
    FILE *weights;
    size_t wbytes;
    char tensors[16384], nodes[16384];
    size_t nt, nn;
} mb;

static void mb_begin(mb *m)
{
    memset(m, 0, sizeof *m);
    m->dir = th_tempdir();
    m->weights = fopen(th_path(m->dir, "model.weights"), "wb");
    TH_CHECK(m->weights != NULL, "cannot write the sidecar");
}

static void mb_append(char *buf, size_t size, size_t *count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mb_append(char *buf, size_t size, size_t *count, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (*count > 0) {
        TH_CHECK(len + 1 < size, "model text too long");
        buf[len++] = ',';
        buf[len] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    TH_CHECK(n >= 0 && (size_t)n < size - len, "model text too long");
    (*count)++;
}

/* A tensor of f32 and shape DIMS; a constant when DATA is not NULL. */
static void mb_tensor(mb *m, const char *name, int ndim, const int64_t *dims,
                      const float *data)
{
    char shape[128] = "";
    size_t len = 0;
    for (int d = 0; d < ndim; d++)
        len += (size_t)snprintf(shape + len, sizeof shape - len, "%s%lld", d ? "," : "",
                                (long long)dims[d]);
    char extra[96] = "";
    if (data != NULL) {
        size_t n = 1;
        for (int d = 0; d < ndim; d++)
            n *= (size_t)dims[d];
        TH_CHECK(fwrite(data, sizeof(float), n, m->weights) == n, "cannot write weights");
        snprintf(extra, sizeof extra, ",\"data\":{\"offset\":%zu,\"length\":%zu}", m->wbytes,
                 n * sizeof(float));
        m->wbytes += n * sizeof(float);
    }
    mb_append(m->tensors, sizeof m->tensors, &m->nt,
              "{\"name\":\"%s\",\"dtype\":\"f32\",\"shape\":[%s]%s}", name, shape, extra);
}

/* A node; INPUTS and OUTPUTS are the insides of JSON arrays ("\"x\",\"w\""),
 * ATTRS the inside of an object or NULL. */
static void mb_node(mb *m, const char *name, const char *op, const char *inputs,
                    const char *outputs, const char *attrs)
{
    mb_append(m->nodes, sizeof m->nodes, &m->nn,
              "{\"name\":\"%s\",\"op\":\"%s\",\"inputs\":[%s],\"outputs\":[%s]%s%s%s}", name,
              op, inputs, outputs, attrs ? ",\"attributes\":{" : "", attrs ? attrs : "",
              attrs ? "}" : "");
}

/* Writes the model; INPUTS and OUTPUTS are insides of JSON arrays. */
static const char *mb_end(mb *m, const char *inputs, const char *outputs)
{
    fclose(m->weights);
    const char *path = th_path(m->dir, "model.json");
    FILE *f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fprintf(f,
            "{\"format\":\"plinth-graph\",\"version\":1,"
            "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
            "\"weights\":\"model.weights\",\"inputs\":[%s],\"outputs\":[%s],"
            "\"tensors\":[%s],\"nodes\":[%s]}",
            inputs, outputs, m->tensors, m->nodes);
    fclose(f);
    return path;
}

static void fill(float *v, size_t n, uint32_t seed, float scale)
{
    uint32_t s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((float)(s >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
}

/* A runtime over a module folder holding the staged cpu and example_acc
 * modules (and onednn with WITH_ONEDNN) and both fusion fixtures, with
 * backend.ini text EXTRA. */
static pl_runtime *fuse_runtime_with(const char *extra, bool with_onednn)
{
    const char *dir = th_path(th_tempdir(), "mods");
    th_mkdir(dir, 0755);
    static const char *const staged[] = {"libplinth_cpu.so", "libplinth_example_acc.so",
                                         "libplinth_json.so", "libplinth_onednn.so"};
    for (size_t i = 0; i < sizeof staged / sizeof staged[0] - !with_onednn; i++)
        th_copy_file(th_path(th_arg(0), staged[i]), th_path(dir, staged[i]), 0644);
    static const char *const fixtures[] = {"fx_fuse.so", "fx_fuse10.so"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        th_copy_file(th_path(th_arg(3), fixtures[i]), th_path(dir, fixtures[i]), 0644);
    const char *ini = th_path(th_tempdir(), "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n%s\n", dir, extra);
    fclose(f);
    pl_runtime_options o = th_options(ini);
    pl_runtime *rt = th_runtime_create(&o);
    return rt;
}

static pl_runtime *fuse_runtime(const char *extra)
{
    return fuse_runtime_with(extra, false);
}

/* A counter of the fusion fixture MODULE (its configure outputs). */
static unsigned long fx_counter(pl_runtime *rt, const char *module, const char *key)
{
    TH_CHECK_OK(pl_runtime_configure_module(rt, module, NULL, NULL, 0));
    long i = pl_runtime_find_module(rt, module);
    TH_CHECK(i >= 0, "module %s is not loaded", module);
    const char *v = th_module_output(rt, (size_t)i, key);
    TH_CHECK(v != NULL, "%s has no counter %s", module, key);
    return strtoul(v, NULL, 10);
}

#define TH_CHECK_COUNTER(rt, module, key, want)                                      \
    do {                                                                             \
        unsigned long got_ = fx_counter((rt), (module), (key));                      \
        TH_CHECK(got_ == (unsigned long)(want), "%s %s = %lu, expected %lu", module, \
                 key, got_, (unsigned long)(want));                                  \
    } while (0)

/* The node NODE is fused into, or NULL; fails when the key is missing. */
static const char *fused_into(json_t *root, const char *node)
{
    json_t *v = json_object_get(th_placement_of(root, node), "fused_into");
    TH_CHECK(v != NULL, "placement of %s has no fused_into", node);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void expect_fused(json_t *root, const char *node, const char *head)
{
    const char *into = fused_into(root, node);
    if (head == NULL)
        TH_CHECK(into == NULL, "%s is fused into %s, expected unfused", node, into);
    else
        TH_CHECK(into != NULL && strcmp(into, head) == 0, "%s is fused into %s, expected %s",
                 node, into ? into : "nothing", head);
}

static size_t step_count(json_t *root)
{
    return json_array_size(json_object_get(root, "steps"));
}

/* The step named NAME; fails when there is none. Checks that its `fused`
 * array is FUSED (a comma-separated list, "" for none). */
static void expect_step(json_t *root, const char *name, const char *fused)
{
    json_t *st;
    size_t i;
    json_array_foreach(json_object_get(root, "steps"), i, st)
    {
        if (strcmp(json_string_value(json_object_get(st, "name")), name) != 0)
            continue;
        json_t *arr = json_object_get(st, "fused");
        TH_CHECK(json_is_array(arr), "step %s has no fused array", name);
        char got[512] = "";
        size_t len = 0;
        json_t *v;
        size_t k;
        json_array_foreach(arr, k, v)
            len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", k ? "," : "",
                                    json_string_value(v));
        TH_CHECK(strcmp(got, fused) == 0, "step %s fuses [%s], expected [%s]", name, got,
                 fused);
        return;
    }
    char *dump = json_dumps(json_object_get(root, "steps"), 0);
    th_fail(__FILE__, __LINE__, "no step named \"%s\" in %s", name, dump ? dump : "?");
}

/* Host memory planned by the session (explain's memory of device "host"). */
static json_int_t host_memory(json_t *root, const char *key)
{
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(json_object_get(root, "memory"), "devices"), i, d)
        if (strcmp(json_string_value(json_object_get(d, "device")), "host") == 0)
            return json_integer_value(json_object_get(d, key));
    th_fail(__FILE__, __LINE__, "no host device in explain's memory");
}

/* S's description rendered as `plinth explain` prints it
 * (tools/explain_text.c); freed with free. */
static char *explain_text(pl_session *s)
{
    char *json = NULL;
    TH_CHECK_OK(pl_session_describe(s, &json));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    TH_CHECK(f != NULL, "open_memstream failed");
    TH_CHECK(pl_explain_text_write(f, json) == 0, "the description did not render:\n%s", json);
    fclose(f);
    pl_string_free(json);
    return text;
}

/* Runs S on input X (name "x", shape XDIMS) and checks each of N_OUT
 * outputs (named, of N elements each) against WANT within TOL, relative to
 * max(1, |want|). */
static void run_expect(pl_session *s, const float *x, int xnd, const int64_t *xdims,
                       size_t n_out, const char *const *names, const float *const *want,
                       const size_t *n, float tol)
{
    pl_io in = {.name = "x", .tensor = {.struct_size = sizeof(pl_tensor), .data = (void *)x,
                                        .ndim = xnd, .dtype = PL_DTYPE_F32,
                                        .shape = (int64_t *)xdims}};
    pl_io outs[4];
    TH_CHECK(n_out <= 4, "too many outputs");
    for (size_t o = 0; o < n_out; o++)
        outs[o] = (pl_io){.name = names[o], .tensor = {.struct_size = sizeof(pl_tensor)}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, outs, n_out));
    for (size_t o = 0; o < n_out; o++) {
        const float *got = outs[o].tensor.data;
        for (size_t i = 0; i < n[o]; i++) {
            float w = want[o][i];
            float bound = tol * (fabsf(w) > 1.0f ? fabsf(w) : 1.0f);
            TH_CHECK(fabsf(got[i] - w) <= bound, "%s[%zu] = %.9g, reference %.9g", names[o],
                     i, got[i], w);
        }
        pl_buffer_free(outs[o].tensor.data);
    }
}

/* Pins name the model's nodes, and every part of the model takes the ones
 * it holds: what constant folding runs (a Neg of a constant here) and a
 * staged session's prefix and tails (the open row count puts every other
 * node in a tail planned at run time). Before, each part's partition
 * refused a pin it lacked: pinning any node of a model that folds or is
 * staged failed at load. A name no node of the model has is still an
 * error. */
static void case_pin_parts(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[-1,4],"
        "\"dim_params\":[\"n\",null]}],"
        "\"nodes\":["
        "{\"name\":\"c\",\"op\":\"Constant\",\"inputs\":[],\"outputs\":[\"c\"],"
        "\"attributes\":{\"value\":{\"tensor\":{\"dtype\":\"f32\",\"shape\":[4],"
        "\"values\":[1,-2,3,-4]}}}},"
        "{\"name\":\"negc\",\"op\":\"Neg\",\"inputs\":[\"c\"],\"outputs\":[\"nc\"]},"
        "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"x\",\"nc\"],\"outputs\":[\"a\"]},"
        "{\"name\":\"relu\",\"op\":\"Relu\",\"inputs\":[\"a\"],\"outputs\":[\"r\"]},"
        "{\"name\":\"neg\",\"op\":\"Neg\",\"inputs\":[\"r\"],\"outputs\":[\"y\"]}]}";
    const char *path = write_text("pin_parts.json", json);
    const float x[8] = {0, 1, 2, 3, -4, 5, -6, 7}, c[4] = {1, -2, 3, -4};
    float want[8];
    for (int i = 0; i < 8; i++)
        want[i] = x[i] - c[i % 4] > 0.0f ? -(x[i] - c[i % 4]) : -0.0f;
    const char *names[1] = {"y"};
    const float *wants[1] = {want};
    size_t n[1] = {8};
    /* unpinned, then relu and (on the list's second line) add pinned */
    const char *inis[2] = {"[placement]\norder = example_acc, cpu\n[graph]\noptimize = all\n",
                           "[placement]\norder = example_acc, cpu\npin = relu=cpu,\n"
                           "  add=cpu\n[graph]\noptimize = all\n"};
    for (int k = 0; k < 2; k++) {
        pl_runtime *rt = runtime_with(inis[k]);
        pl_session *s = session_for(rt, path);
        run_expect(s, x, 2, (const int64_t[]){2, 4}, 1, names, wants, n, 0.0f);
        json_t *root = th_explain(s);
        json_t *tail = json_object_get(json_object_get(root, "staged"), "last_tail");
        TH_CHECK(tail != NULL, "the session is not staged");
        const char *want_be = k ? "cpu" : "example_acc";
        TH_CHECK(strcmp(backend_of(tail, "relu"), want_be) == 0, "relu on %s, expected %s",
                 backend_of(tail, "relu"), want_be);
        TH_CHECK(strcmp(backend_of(tail, "add"), want_be) == 0, "add on %s, expected %s",
                 backend_of(tail, "add"), want_be);
        json_decref(root);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }

    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\npin = relu=cpu, rleu=cpu\n"
                                  "[graph]\noptimize = all\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    pl_session *bad = NULL;
    pl_status *st = pl_session_create(m, NULL, &bad);
    TH_CHECK(st != NULL, "a pin naming no node of the model was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st),
                      "[placement] pin 'rleu=cpu' names a node the model does not have");
    TH_CHECK_CONTAINS(pl_status_message(st), "`plinth explain` lists them");
    pl_status_free(st);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* ---- through the fixture module ---- */

enum { EW_R = 4, EW_C = 8, EW_N = EW_R * EW_C };
static const int64_t ew_dims[2] = {EW_R, EW_C};

static float relu_f(float v)
{
    return v > 0.0f ? v : 0.0f;
}

/* x -> add(x, c1) -> relu -> neg -> y. */
/* Starts a model of `a = x + c1` over ew_dims, C1 filled from SEED: the
 * head most fusion cases hang their consumers on. */
static void mb_begin_add(mb *m, float *c1, uint32_t seed)
{
    fill(c1, EW_N, seed, 0.5f);
    mb_begin(m);
    mb_tensor(m, "x", 2, ew_dims, NULL);
    mb_tensor(m, "c1", 2, ew_dims, c1);
    mb_node(m, "add", "Add", "\"x\",\"c1\"", "\"a\"", NULL);
}

static const char *write_add_relu_neg(float *c1)
{
    mb m;
    mb_begin_add(&m, c1, 3);
    mb_node(&m, "relu", "Relu", "\"a\"", "\"r\"", NULL);
    mb_node(&m, "neg", "Neg", "\"r\"", "\"y\"", NULL);
    return mb_end(&m, "\"x\"", "\"y\"");
}

/* Runs the add-relu-neg model RUNS times against its reference. */
static void run_add_relu_neg(pl_session *s, const float *c1, int runs)
{
    for (int r = 0; r < runs; r++) {
        float x[EW_N], y[EW_N];
        fill(x, EW_N, 100 + (uint32_t)r, 1.0f);
        for (int i = 0; i < EW_N; i++)
            y[i] = -relu_f(x[i] + c1[i]);
        const char *names[1] = {"y"};
        const float *want[1] = {y};
        size_t n[1] = {EW_N};
        run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
    }
}

static void case_fuse_chain(void)
{
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    expect_fused(root, "add", NULL);
    expect_fused(root, "relu", "add");
    expect_fused(root, "neg", "add");
    TH_CHECK(step_count(root) == 1, "%zu steps, expected 1", step_count(root));
    expect_step(root, "add+relu+neg (Add+Relu+Neg, fx_fuse)", "relu,neg");
    /* a and r are never made: nothing is left to plan on the host. */
    TH_CHECK(host_memory(root, "tensors_planned") == 0, "%lld tensors planned, expected 0",
             (long long)host_memory(root, "tensors_planned"));
    json_decref(root);
    char *text = explain_text(s);
    TH_CHECK_CONTAINS(text, "fused into add");
    TH_CHECK_CONTAINS(text, "add+relu+neg (Add+Relu+Neg, fx_fuse)");
    free(text);
    run_add_relu_neg(s, c1, 3);
    const char *name = NULL;
    uint64_t runs = 0;
    pl_session_step_info(s, 0, &name, NULL, NULL, &runs);
    TH_CHECK(strcmp(name, "add+relu+neg (Add+Relu+Neg, fx_fuse)") == 0, "step 0 is %s", name);
    TH_CHECK(runs == 3, "the fused step ran %llu times", (unsigned long long)runs);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "accepted", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_offers", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Add", 3);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Relu", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Neg", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_runs", 0);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_declined(void)
{
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n[fx_fuse]\nfuse = none\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", NULL);
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    expect_step(root, "add (Add, fx_fuse)", "");
    expect_step(root, "relu (Relu, fx_fuse)", "");
    expect_step(root, "neg (Neg, fx_fuse)", "");
    TH_CHECK(host_memory(root, "tensors_planned") == 2, "%lld tensors planned, expected 2",
             (long long)host_memory(root, "tensors_planned"));
    json_decref(root);
    char *text = explain_text(s);
    TH_CHECK(strstr(text, "fused into") == NULL, "explain says fused:\n%s", text);
    free(text);
    run_add_relu_neg(s, c1, 2);
    /* add's kernel was offered relu, relu's kernel neg: both declined. */
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "declined", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "accepted", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Add", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Relu", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Neg", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_partial(void)
{
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n[fx_fuse]\nfuse = Relu\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", "add");
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 2, "%zu steps, expected 2", step_count(root));
    expect_step(root, "add+relu (Add+Relu, fx_fuse)", "relu");
    expect_step(root, "neg (Neg, fx_fuse)", "");
    json_decref(root);
    run_add_relu_neg(s, c1, 2);
    /* neg was offered once, to the chain add+relu, and not again. */
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "accepted", 1);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Relu", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Neg", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_two_readers(void)
{
    float c1[EW_N];
    mb m;
    mb_begin_add(&m, c1, 5);
    mb_node(&m, "relu", "Relu", "\"a\"", "\"y1\"", NULL);
    mb_node(&m, "neg", "Neg", "\"a\"", "\"y2\"", NULL);
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y1\",\"y2\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", NULL);
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    json_decref(root);
    float x[EW_N], y1[EW_N], y2[EW_N];
    fill(x, EW_N, 9, 1.0f);
    for (int i = 0; i < EW_N; i++) {
        y1[i] = relu_f(x[i] + c1[i]);
        y2[i] = -(x[i] + c1[i]);
    }
    const char *names[2] = {"y1", "y2"};
    const float *want[2] = {y1, y2};
    size_t n[2] = {EW_N, EW_N};
    run_expect(s, x, 2, ew_dims, 2, names, want, n, 0.0f);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 0);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* choose = cost weighs a subgraph of onednn against the imperative backend
 * after it: that backend is asked for kernels only to weigh the nodes
 * (PL_NODE_QUERY, ABI 1.9: the cpu module then packs no weights), and when
 * the nodes move there (a tiny whole model: the hand-offs to onednn's
 * thread cost more than the work) for kernels to run. No kernel made to
 * weigh outlives the session's creation, none runs, none is offered a
 * fusion; the moved nodes fuse and run as usual. Then with choose =
 * first the nodes stay on onednn and the backend after it makes nothing. */
static void case_fuse_weighed(void)
{
    if (!th_exists(th_path(th_arg(0), "libplinth_onednn.so")))
        th_skip("the onednn module is not built");
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime_with("[placement]\norder = onednn, fx_fuse\nchoose = cost\n",
                                       true);
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "add"), "fx_fuse") == 0, "add went to %s",
             backend_of(root, "add"));
    expect_fused(root, "relu", "add");
    expect_fused(root, "neg", "add");
    json_decref(root);
    TH_CHECK_COUNTER(rt, "fx_fuse", "query_kernels", 3);
    TH_CHECK_COUNTER(rt, "fx_fuse", "run_kernels", 3);
    /* one per node placed there (the fused ones' stay unused) */
    TH_CHECK_COUNTER(rt, "fx_fuse", "live_kernels", 3);
    run_add_relu_neg(s, c1, 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Add", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_runs", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_offers", 0);
    pl_session_destroy(s);
    TH_CHECK_COUNTER(rt, "fx_fuse", "live_kernels", 0);
    pl_runtime_destroy(rt);

    rt = fuse_runtime_with("[placement]\norder = onednn, fx_fuse\nchoose = first\n", true);
    s = session_for(rt, write_add_relu_neg(c1));
    root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "add"), "onednn") == 0, "add went to %s",
             backend_of(root, "add"));
    json_decref(root);
    TH_CHECK_COUNTER(rt, "fx_fuse", "query_kernels", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "run_kernels", 0);
    run_add_relu_neg(s, c1, 1);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_graph_output(void)
{
    float c1[EW_N];
    mb m;
    mb_begin_add(&m, c1, 6);
    mb_node(&m, "relu", "Relu", "\"a\"", "\"y\"", NULL);
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"a\",\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", NULL);
    TH_CHECK(step_count(root) == 2, "%zu steps, expected 2", step_count(root));
    json_decref(root);
    float x[EW_N], a[EW_N], y[EW_N];
    fill(x, EW_N, 10, 1.0f);
    for (int i = 0; i < EW_N; i++) {
        a[i] = x[i] + c1[i];
        y[i] = relu_f(a[i]);
    }
    const char *names[2] = {"a", "y"};
    const float *want[2] = {a, y};
    size_t n[2] = {EW_N, EW_N};
    run_expect(s, x, 2, ew_dims, 2, names, want, n, 0.0f);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 0);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_pinned(void)
{
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\npin = relu=cpu\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu"), "cpu") == 0, "the pin did not hold");
    expect_fused(root, "relu", NULL);
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    expect_step(root, "relu (Relu, cpu)", "");
    json_decref(root);
    run_add_relu_neg(s, c1, 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Neg", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_nonconstant(void)
{
    /* add2's other operand is a constant (on the left, too), add3's is the
     * graph input x: add2 may join add1's kernel, add3 may not. */
    float c1[EW_N], c2[EW_N];
    fill(c1, EW_N, 11, 0.5f);
    fill(c2, EW_N, 12, 0.5f);
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 2, ew_dims, NULL);
    mb_tensor(&m, "c1", 2, ew_dims, c1);
    mb_tensor(&m, "c2", 2, ew_dims, c2);
    mb_node(&m, "add1", "Add", "\"x\",\"c1\"", "\"a1\"", NULL);
    mb_node(&m, "add2", "Add", "\"c2\",\"a1\"", "\"a2\"", NULL);
    mb_node(&m, "add3", "Add", "\"a2\",\"x\"", "\"y\"", NULL);
    pl_runtime *rt =
        fuse_runtime("[placement]\norder = fx_fuse, cpu\n[fx_fuse]\nfuse = Add, Relu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "add2", "add1");
    expect_fused(root, "add3", NULL);
    expect_step(root, "add1+add2 (Add+Add, fx_fuse)", "add2");
    expect_step(root, "add3 (Add, fx_fuse)", "");
    TH_CHECK(step_count(root) == 2, "%zu steps, expected 2", step_count(root));
    json_decref(root);
    float x[EW_N], y[EW_N];
    fill(x, EW_N, 13, 1.0f);
    for (int i = 0; i < EW_N; i++)
        y[i] = (c2[i] + (x[i] + c1[i])) + x[i];
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {EW_N};
    run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 1);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_offers", 0);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_clip(void)
{
    /* Clip's bounds are constants the module reads through the view; one
     * Clip has no max, the other no min (absent inputs). */
    float c1[EW_N], lo = -0.25f, hi = 0.3f;
    mb m;
    mb_begin_add(&m, c1, 14);
    mb_tensor(&m, "lo", 0, NULL, &lo);
    mb_tensor(&m, "hi", 0, NULL, &hi);
    mb_node(&m, "clip_lo", "Clip", "\"a\",\"lo\"", "\"b\"", NULL);
    mb_node(&m, "clip_hi", "Clip", "\"b\",\"\",\"hi\"", "\"y\"", NULL);
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "clip_lo", "add");
    expect_fused(root, "clip_hi", "add");
    expect_step(root, "add+clip_lo+clip_hi (Add+Clip+Clip, fx_fuse)", "clip_lo,clip_hi");
    json_decref(root);
    float x[EW_N], y[EW_N];
    fill(x, EW_N, 15, 1.0f);
    int clipped = 0;
    for (int i = 0; i < EW_N; i++) {
        float v = x[i] + c1[i];
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        clipped += v == lo || v == hi;
        y[i] = v;
    }
    TH_CHECK(clipped > 0 && clipped < EW_N, "the input does not exercise the bounds");
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {EW_N};
    run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Clip", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "accepted", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_inplace(void)
{
    /* add2+relu reads a1, which dies there, and Add may overwrite its input
     * 0: the fused step writes r over a1 (PL_REQ_INPLACE). */
    float c1[EW_N], c2[EW_N], c3[EW_N];
    fill(c1, EW_N, 16, 0.5f);
    fill(c2, EW_N, 17, 0.5f);
    fill(c3, EW_N, 18, 0.5f);
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 2, ew_dims, NULL);
    mb_tensor(&m, "c1", 2, ew_dims, c1);
    mb_tensor(&m, "c2", 2, ew_dims, c2);
    mb_tensor(&m, "c3", 2, ew_dims, c3);
    mb_node(&m, "add1", "Add", "\"x\",\"c1\"", "\"a1\"", NULL);
    mb_node(&m, "add2", "Add", "\"a1\",\"c2\"", "\"a2\"", NULL);
    mb_node(&m, "relu", "Relu", "\"a2\"", "\"r\"", NULL);
    mb_node(&m, "add3", "Add", "\"r\",\"c3\"", "\"y\"", NULL);
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n[fx_fuse]\nfuse = Relu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "add2", NULL);
    expect_fused(root, "relu", "add2");
    expect_fused(root, "add3", NULL);
    expect_step(root, "add2+relu (Add+Relu, fx_fuse)", "relu");
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    TH_CHECK(host_memory(root, "tensors_planned") == 2, "%lld tensors planned, expected 2",
             (long long)host_memory(root, "tensors_planned"));
    TH_CHECK(host_memory(root, "tensors_in_place") == 1, "%lld tensors in place, expected 1",
             (long long)host_memory(root, "tensors_in_place"));
    json_decref(root);
    for (int r = 0; r < 3; r++) {
        float x[EW_N], y[EW_N];
        fill(x, EW_N, 19 + (uint32_t)r, 1.0f);
        for (int i = 0; i < EW_N; i++)
            y[i] = relu_f((x[i] + c1[i]) + c2[i]) + c3[i];
        const char *names[1] = {"y"};
        const float *want[1] = {y};
        size_t n[1] = {EW_N};
        run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
    }
    TH_CHECK_COUNTER(rt, "fx_fuse", "inplace_runs", 3);
    TH_CHECK_COUNTER(rt, "fx_fuse", "bad_runs", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Relu", 0);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Resize 19's half_pixel_symmetric where the output size is not
 * scale x input (the mode reaches the cpu kernel), and tf_crop_and_resize
 * over two axes given in reverse order (the lowering widens roi to every
 * axis) and with extrapolation_value, against the outputs of ONNX 1.20's
 * own tests of these cases; on cpu and the default order (onednn refuses
 * both modes, naming them). The scales, rois and sizes are constants in
 * the sidecar, as an ONNX model's initializers. */
static void case_resize_modes(void)
{
    /* the sidecar: each constant at a multiple of 64 */
    const float sa[4] = {1, 1, 1, 0.6f}, sb[4] = {1, 1, 2.3f, 2.94f};
    const float roi2[4] = {0.6f, 0.4f, 0.8f, 0.6f}, roi4[8] = {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f};
    const int64_t sz2[2] = {3, 3}, sz4[4] = {1, 1, 3, 3};
    const struct {
        const void *p;
        size_t n;
    } consts[6] = {{sa, sizeof sa}, {sb, sizeof sb}, {roi2, sizeof roi2},
                   {roi4, sizeof roi4}, {sz2, sizeof sz2}, {sz4, sizeof sz4}};
    const char *dir = th_tempdir(); /* a new folder each call: one for both files */
    FILE *wf = fopen(th_path(dir, "resize_modes.weights"), "wb");
    TH_CHECK(wf != NULL, "cannot write the sidecar");
    for (int i = 0; i < 6; i++) {
        unsigned char block[64] = {0};
        memcpy(block, consts[i].p, consts[i].n);
        TH_CHECK(fwrite(block, 1, 64, wf) == 64, "cannot write the sidecar");
    }
    fclose(wf);
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":19}],"
        "\"weights\":\"resize_modes.weights\","
        "\"inputs\":[\"a\",\"b\",\"x\"],\"outputs\":[\"ya\",\"yb\",\"yc\",\"yd\"],"
        "\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[1,1,1,4]},"
        "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[1,1,2,2]},"
        "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,1,4,4]},"
        "{\"name\":\"sa\",\"dtype\":\"f32\",\"shape\":[4],"
        "\"data\":{\"offset\":0,\"length\":16}},"
        "{\"name\":\"sb\",\"dtype\":\"f32\",\"shape\":[4],"
        "\"data\":{\"offset\":64,\"length\":16}},"
        "{\"name\":\"roi2\",\"dtype\":\"f32\",\"shape\":[4],"
        "\"data\":{\"offset\":128,\"length\":16}},"
        "{\"name\":\"roi4\",\"dtype\":\"f32\",\"shape\":[8],"
        "\"data\":{\"offset\":192,\"length\":32}},"
        "{\"name\":\"sz2\",\"dtype\":\"i64\",\"shape\":[2],"
        "\"data\":{\"offset\":256,\"length\":16}},"
        "{\"name\":\"sz4\",\"dtype\":\"i64\",\"shape\":[4],"
        "\"data\":{\"offset\":320,\"length\":32}}],"
        "\"nodes\":["
        "{\"name\":\"ra\",\"op\":\"Resize\",\"inputs\":[\"a\",\"\",\"sa\"],\"outputs\":[\"ya\"],"
        "\"attributes\":{\"mode\":{\"string\":\"linear\"},"
        "\"coordinate_transformation_mode\":{\"string\":\"half_pixel_symmetric\"}}},"
        "{\"name\":\"rb\",\"op\":\"Resize\",\"inputs\":[\"b\",\"\",\"sb\"],\"outputs\":[\"yb\"],"
        "\"attributes\":{\"mode\":{\"string\":\"linear\"},"
        "\"coordinate_transformation_mode\":{\"string\":\"half_pixel_symmetric\"}}},"
        "{\"name\":\"rc\",\"op\":\"Resize\",\"inputs\":[\"x\",\"roi2\",\"\",\"sz2\"],"
        "\"outputs\":[\"yc\"],\"attributes\":{\"mode\":{\"string\":\"linear\"},"
        "\"axes\":{\"ints\":[3,2]},"
        "\"coordinate_transformation_mode\":{\"string\":\"tf_crop_and_resize\"}}},"
        "{\"name\":\"rd\",\"op\":\"Resize\",\"inputs\":[\"x\",\"roi4\",\"\",\"sz4\"],"
        "\"outputs\":[\"yd\"],\"attributes\":{\"mode\":{\"string\":\"linear\"},"
        "\"extrapolation_value\":{\"float\":10},"
        "\"coordinate_transformation_mode\":{\"string\":\"tf_crop_and_resize\"}}}]}";
    const char *path = th_path(dir, "resize_modes.json");
    FILE *jf = fopen(path, "w");
    TH_CHECK(jf != NULL, "cannot write %s", path);
    fputs(json, jf);
    fclose(jf);
    const float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4};
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i + 1);
    const float want_a[2] = {1.6666667f, 3.3333333f};
    const float want_b[20] = {1.0f, 1.1598639f, 1.5f, 1.8401361f, 2.0f,
                              1.5652174f, 1.7250813f, 2.0652175f, 2.4053535f, 2.5652175f,
                              2.4347825f, 2.5946465f, 2.9347825f, 3.2749186f, 3.4347825f,
                              3.0f, 3.1598639f, 3.5f, 3.8401361f, 4.0f};
    const float want_c[9] = {7.6f, 7.9f, 8.2f, 8.8f, 9.1f, 9.4f, 10.0f, 10.3f, 10.6f};
    const float want_d[9] = {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10};
    const char *orders[2] = {"cpu", "onednn, cpu"};
    for (int o = 0; o < 2; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        int64_t sa[4] = {1, 1, 1, 4}, sb[4] = {1, 1, 2, 2}, sx[4] = {1, 1, 4, 4};
        int64_t sya[4] = {1, 1, 1, 2}, syb[4] = {1, 1, 4, 5}, syc[4] = {1, 1, 3, 3};
        float ya[2], yb[20], yc[9], yd[9];
        pl_io in[3] = {
            {.name = "a", .tensor = {.data = (void *)a, .ndim = 4, .dtype = PL_DTYPE_F32,
                                     .shape = sa, .struct_size = sizeof(pl_tensor)}},
            {.name = "b", .tensor = {.data = (void *)b, .ndim = 4, .dtype = PL_DTYPE_F32,
                                     .shape = sb, .struct_size = sizeof(pl_tensor)}},
            {.name = "x", .tensor = {.data = (void *)x, .ndim = 4, .dtype = PL_DTYPE_F32,
                                     .shape = sx, .struct_size = sizeof(pl_tensor)}}};
        pl_io out[4] = {
            {.name = "ya", .tensor = {.data = ya, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = sya,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "yb", .tensor = {.data = yb, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = syb,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "yc", .tensor = {.data = yc, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = syc,
                                      .struct_size = sizeof(pl_tensor)}},
            {.name = "yd", .tensor = {.data = yd, .ndim = 4, .dtype = PL_DTYPE_F32, .shape = syc,
                                      .struct_size = sizeof(pl_tensor)}}};
        TH_CHECK_OK(pl_session_run(sess, in, 3, out, 4));
        const struct {
            const char *name;
            const float *got, *want;
            int n;
        } checks[4] = {{"ya", ya, want_a, 2}, {"yb", yb, want_b, 20}, {"yc", yc, want_c, 9},
                       {"yd", yd, want_d, 9}};
        for (int c = 0; c < 4; c++)
            for (int i = 0; i < checks[c].n; i++)
                TH_CHECK(fabsf(checks[c].got[i] - checks[c].want[i]) <= 1e-5f,
                         "order = %s: %s[%d] = %.8g, ONNX gives %.8g", orders[o], checks[c].name,
                         i, checks[c].got[i], checks[c].want[i]);
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

/* torchvision's bilinear sample of an H x W plane, zero outside. */
static double dc_sample(const float *p, int h, int w, double y, double x)
{
    if (y <= -1 || y >= h || x <= -1 || x >= w)
        return 0;
    int y0 = (int)floor(y), x0 = (int)floor(x);
    double v = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++) {
            int yy = y0 + a, xx = x0 + b;
            double wy = a ? y - y0 : 1 - (y - y0), wx = b ? x - x0 : 1 - (x - x0);
            if (yy >= 0 && yy < h && xx >= 0 && xx < w)
                v += wy * wx * p[yy * w + xx];
        }
    return v;
}

/* DeformConv 19 on cpu: ONNX 1.20's own tests with a mask and bias and
 * with two offset groups (their outputs), and a larger case (batch 2,
 * groups 2, offset groups 2, stride 2, dilation 2, asymmetric pads, a
 * 3 x 2 kernel, 400 output positions: more than one product block)
 * against a direct loop; inputs at run time; the default order too
 * (onednn refuses DeformConv, naming it). */
static void case_deform_conv(void)
{
    enum { N = 2, C = 4, H = 41, W = 40, M = 6, KH = 3, KW = 2, G = 2, OG = 2 };
    enum { OH = 20, OW = 20 }; /* (41 + 1 + 2 - 5) / 2 + 1, (40 + 0 + 1 - 3) / 2 + 1 */
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":19}],"
        "\"inputs\":[\"x1\",\"w1\",\"o1\",\"b1\",\"m1\",\"x2\",\"w2\",\"o2\",\"x3\",\"w3\",\"o3\","
        "\"b3\",\"m3\"],\"outputs\":[\"y1\",\"y2\",\"y3\"],"
        "\"tensors\":[{\"name\":\"x1\",\"dtype\":\"f32\",\"shape\":[1,1,3,3]},"
        "{\"name\":\"w1\",\"dtype\":\"f32\",\"shape\":[1,1,2,2]},"
        "{\"name\":\"o1\",\"dtype\":\"f32\",\"shape\":[1,8,2,2]},"
        "{\"name\":\"b1\",\"dtype\":\"f32\",\"shape\":[1]},"
        "{\"name\":\"m1\",\"dtype\":\"f32\",\"shape\":[1,4,2,2]},"
        "{\"name\":\"x2\",\"dtype\":\"f32\",\"shape\":[1,2,3,3]},"
        "{\"name\":\"w2\",\"dtype\":\"f32\",\"shape\":[1,2,2,2]},"
        "{\"name\":\"o2\",\"dtype\":\"f32\",\"shape\":[1,16,2,2]},"
        "{\"name\":\"x3\",\"dtype\":\"f32\",\"shape\":[2,4,41,40]},"
        "{\"name\":\"w3\",\"dtype\":\"f32\",\"shape\":[6,2,3,2]},"
        "{\"name\":\"o3\",\"dtype\":\"f32\",\"shape\":[2,24,20,20]},"
        "{\"name\":\"b3\",\"dtype\":\"f32\",\"shape\":[6]},"
        "{\"name\":\"m3\",\"dtype\":\"f32\",\"shape\":[2,12,20,20]}],"
        "\"nodes\":["
        "{\"name\":\"d1\",\"op\":\"DeformConv\",\"inputs\":[\"x1\",\"w1\",\"o1\",\"b1\",\"m1\"],"
        "\"outputs\":[\"y1\"],\"attributes\":{\"kernel_shape\":{\"ints\":[2,2]}}},"
        "{\"name\":\"d2\",\"op\":\"DeformConv\",\"inputs\":[\"x2\",\"w2\",\"o2\"],"
        "\"outputs\":[\"y2\"],\"attributes\":{\"offset_group\":{\"int\":2}}},"
        "{\"name\":\"d3\",\"op\":\"DeformConv\",\"inputs\":[\"x3\",\"w3\",\"o3\",\"b3\",\"m3\"],"
        "\"outputs\":[\"y3\"],\"attributes\":{\"group\":{\"int\":2},\"offset_group\":{\"int\":2},"
        "\"strides\":{\"ints\":[2,2]},\"dilations\":{\"ints\":[2,1]},"
        "\"pads\":{\"ints\":[1,0,2,1]}}}]}";
    const char *path = write_text("deform_conv.json", json);
    /* ONNX's tests */
    const float x1[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8}, w1[4] = {1, 1, 1, 1}, b1[1] = {1};
    float o1[32] = {0}, m1[16], o2[64] = {0};
    o1[0] = 0.5f, o1[21] = -0.1f;
    for (int i = 0; i < 16; i++)
        m1[i] = i == 11 ? 0.2f : 1.0f;
    const float x2[18] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1, 0};
    const float w2[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    o2[0] = 0.5f, o2[53] = -0.1f;
    const float want1[4] = {10.5f, 12.9f, 21.0f, 19.4f}, want2[4] = {33.5f, 32.1f, 32.0f, 32.0f};
    /* the larger case */
    static float x3[N * C * H * W], w3[M * (C / G) * KH * KW], o3[N * OG * 2 * KH * KW * OH * OW];
    static float b3[M], m3[N * OG * KH * KW * OH * OW], y3[N * M * OH * OW];
    fill(x3, sizeof x3 / sizeof *x3, 41, 1.0f);
    fill(w3, sizeof w3 / sizeof *w3, 42, 1.0f);
    fill(o3, sizeof o3 / sizeof *o3, 43, 3.0f);
    fill(b3, M, 44, 1.0f);
    fill(m3, sizeof m3 / sizeof *m3, 45, 1.0f);
    static double want3[N * M * OH * OW];
    const int cg = C / G, mg = M / G, cpo = C / OG, taps = KH * KW, plane = OH * OW;
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++)
            for (int oy = 0; oy < OH; oy++)
                for (int ox = 0; ox < OW; ox++) {
                    double acc = b3[m];
                    for (int ci = 0; ci < cg; ci++) {
                        int c = (m / mg) * cg + ci, og = c / cpo;
                        for (int i = 0; i < KH; i++)
                            for (int j = 0; j < KW; j++) {
                                int t = i * KW + j, q = oy * OW + ox;
                                const float *off = o3 + ((size_t)(n * OG + og) * 2 * taps) * plane;
                                double y = oy * 2 - 1 + i * 2 + off[(2 * t) * plane + q];
                                double x = ox * 2 - 0 + j * 1 + off[(2 * t + 1) * plane + q];
                                double v = dc_sample(x3 + (size_t)(n * C + c) * H * W, H, W, y, x);
                                v *= m3[((size_t)(n * OG + og) * taps + t) * plane + q];
                                acc += w3[((m * cg + ci) * KH + i) * KW + j] * v;
                            }
                    }
                    want3[((n * M + m) * OH + oy) * OW + ox] = acc;
                }
    const char *orders[2] = {"cpu", "onednn, cpu"};
    for (int o = 0; o < 2; o++) {
        pl_runtime *rt = runtime_in_order(orders[o]);
        pl_session *sess = session_for(rt, path);
        float y1[4], y2[4];
        pl_io in[13], out[3];
        const struct {
            const char *name;
            const float *p;
            int ndim;
            int64_t dims[4];
        } ins[13] = {{"x1", x1, 4, {1, 1, 3, 3}},  {"w1", w1, 4, {1, 1, 2, 2}},
                     {"o1", o1, 4, {1, 8, 2, 2}},  {"b1", b1, 1, {1}},
                     {"m1", m1, 4, {1, 4, 2, 2}},  {"x2", x2, 4, {1, 2, 3, 3}},
                     {"w2", w2, 4, {1, 2, 2, 2}},  {"o2", o2, 4, {1, 16, 2, 2}},
                     {"x3", x3, 4, {N, C, H, W}},  {"w3", w3, 4, {M, C / G, KH, KW}},
                     {"o3", o3, 4, {N, OG * 2 * KH * KW, OH, OW}}, {"b3", b3, 1, {M}},
                     {"m3", m3, 4, {N, OG * KH * KW, OH, OW}}};
        for (int i = 0; i < 13; i++)
            in[i] = (pl_io){.name = ins[i].name,
                            .tensor = {.data = (void *)ins[i].p, .ndim = ins[i].ndim,
                                       .dtype = PL_DTYPE_F32, .shape = (int64_t *)ins[i].dims,
                                       .struct_size = sizeof(pl_tensor)}};
        int64_t s1[4] = {1, 1, 2, 2}, s3[4] = {N, M, OH, OW};
        out[0] = (pl_io){.name = "y1", .tensor = {.data = y1, .ndim = 4, .dtype = PL_DTYPE_F32,
                                                  .shape = s1, .struct_size = sizeof(pl_tensor)}};
        out[1] = (pl_io){.name = "y2", .tensor = {.data = y2, .ndim = 4, .dtype = PL_DTYPE_F32,
                                                  .shape = s1, .struct_size = sizeof(pl_tensor)}};
        out[2] = (pl_io){.name = "y3", .tensor = {.data = y3, .ndim = 4, .dtype = PL_DTYPE_F32,
                                                  .shape = s3, .struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(sess, in, 13, out, 3));
        for (int i = 0; i < 4; i++) {
            TH_CHECK(fabsf(y1[i] - want1[i]) <= 1e-5f, "order = %s: y1[%d] = %g, ONNX gives %g",
                     orders[o], i, y1[i], want1[i]);
            TH_CHECK(fabsf(y2[i] - want2[i]) <= 1e-5f, "order = %s: y2[%d] = %g, ONNX gives %g",
                     orders[o], i, y2[i], want2[i]);
        }
        for (size_t i = 0; i < sizeof y3 / sizeof *y3; i++)
            TH_CHECK(fabs(y3[i] - want3[i]) <= 1e-4 * (1 + fabs(want3[i])),
                     "order = %s: y3[%zu] = %.7g, the direct loop gives %.7g", orders[o], i,
                     y3[i], want3[i]);
        pl_session_destroy(sess);
        pl_runtime_destroy(rt);
    }
}

/* A module built before ABI 1.11 (fx_fuse10, ABI 1.0) is never offered a
 * node with a dtype its SDK did not know: a u16 Add goes to cpu with the
 * reason naming the dtype and the module's minor, and fx_fuse10 made no
 * kernel for it; its f32 Add it still takes. */
static void case_old_abi_dtypes(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"a\",\"x\"],\"outputs\":[\"y\",\"z\"],"
        "\"tensors\":[{\"name\":\"a\",\"dtype\":\"u16\",\"shape\":[4]},"
        "{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4]}],"
        "\"nodes\":[{\"name\":\"add16\",\"op\":\"Add\",\"inputs\":[\"a\",\"a\"],"
        "\"outputs\":[\"y\"]},"
        "{\"name\":\"add32\",\"op\":\"Add\",\"inputs\":[\"x\",\"x\"],\"outputs\":[\"z\"]}]}";
    const char *path = write_text("old_abi_dtypes.json", json);
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse10, cpu\nchoose = first\n");
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    json_t *pl = json_object_get(root, "placement");
    bool seen16 = false, seen32 = false;
    for (size_t i = 0; i < json_array_size(pl); i++) {
        json_t *p = json_array_get(pl, i);
        const char *node = json_string_value(json_object_get(p, "node"));
        const char *backend = json_string_value(json_object_get(p, "backend"));
        if (node != NULL && strcmp(node, "add16") == 0) {
            seen16 = true;
            TH_CHECK(backend != NULL && strcmp(backend, "cpu") == 0, "add16 on %s",
                     backend ? backend : "(none)");
            const char *why = json_string_value(
                json_object_get(json_object_get(p, "reasons"), "fx_fuse10"));
            TH_CHECK_CONTAINS(why, "a u16 tensor, a dtype of ABI 1.11");
            TH_CHECK_CONTAINS(why, "ABI 1.0");
        } else if (node != NULL && strcmp(node, "add32") == 0) {
            seen32 = true;
            TH_CHECK(backend != NULL && strcmp(backend, "fx_fuse10") == 0, "add32 on %s",
                     backend ? backend : "(none)");
        }
    }
    TH_CHECK(seen16 && seen32, "explain lacks add16 or add32");
    json_decref(root);
    const uint16_t a[4] = {1, 40000, 65535, 7};
    const float x[4] = {1, 2, 3, 4};
    uint16_t y[4];
    float z[4];
    int64_t s4[1] = {4};
    pl_io in[2] = {
        {.name = "a", .tensor = {.data = (void *)a, .ndim = 1, .dtype = PL_DTYPE_U16,
                                 .shape = s4, .struct_size = sizeof(pl_tensor)}},
        {.name = "x", .tensor = {.data = (void *)x, .ndim = 1, .dtype = PL_DTYPE_F32,
                                 .shape = s4, .struct_size = sizeof(pl_tensor)}}};
    pl_io out[2] = {
        {.name = "y", .tensor = {.data = y, .ndim = 1, .dtype = PL_DTYPE_U16, .shape = s4,
                                 .struct_size = sizeof(pl_tensor)}},
        {.name = "z", .tensor = {.data = z, .ndim = 1, .dtype = PL_DTYPE_F32, .shape = s4,
                                 .struct_size = sizeof(pl_tensor)}}};
    TH_CHECK_OK(pl_session_run(s, in, 2, out, 2));
    for (int i = 0; i < 4; i++) {
        TH_CHECK(y[i] == (uint16_t)(a[i] + a[i]), "y[%d] = %u", i, (unsigned)y[i]);
        TH_CHECK(z[i] == 2 * x[i], "z[%d] = %g", i, z[i]);
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_after_fallback(void)
{
    /* example_acc takes add and relu and fails to compile them: they fall
     * back to fx_fuse, and only then can the chain add+relu+neg form. */
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = example_acc, fx_fuse, cpu\n"
                                  "strict = no\n[example_acc]\nfail_compile = add\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    TH_CHECK(pl_session_warning_count(s) == 1, "%zu warnings, expected 1",
             pl_session_warning_count(s));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "add"), "fx_fuse") == 0, "add is on %s",
             backend_of(root, "add"));
    expect_fused(root, "relu", "add");
    expect_fused(root, "neg", "add");
    TH_CHECK(step_count(root) == 1, "%zu steps, expected 1", step_count(root));
    json_decref(root);
    run_add_relu_neg(s, c1, 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "offers", 2);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Add", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_fuse_abi_1_0(void)
{
    /* An ABI 1.0 table: the loader takes it, and the kernel_fuse pointer that
     * lies past its struct_size is never called. */
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse10, cpu\n");
    static const struct {
        const char *name;
        unsigned minor;
    } mods[] = {{"fx_fuse10", 0}, {"fx_fuse", PL_ABI_MINOR}};
    for (size_t k = 0; k < 2; k++) {
        long i = pl_runtime_find_module(rt, mods[k].name);
        TH_CHECK(i >= 0, "%s is not loaded", mods[k].name);
        pl_module_info info;
        th_module_info(rt, (size_t)i, &info);
        TH_CHECK(info.status == PL_MODULE_LOADED, "%s is %s: %s", mods[k].name,
                 pl_module_status_name(info.status), info.reason);
        TH_CHECK(info.abi_major == 1 && info.abi_minor == mods[k].minor, "%s speaks ABI %u.%u",
                 mods[k].name, info.abi_major, info.abi_minor);
    }
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu"), "fx_fuse10") == 0, "relu is on %s",
             backend_of(root, "relu"));
    expect_fused(root, "relu", NULL);
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    json_decref(root);
    run_add_relu_neg(s, c1, 2);
    TH_CHECK_COUNTER(rt, "fx_fuse10", "trap_calls", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse10", "runs_Relu", 2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

typedef struct fuse_thread_arg {
    pl_session *s;
    const float *c1;
} fuse_thread_arg;

static void *fuse_thread_main(void *p)
{
    fuse_thread_arg *a = p;
    run_add_relu_neg(a->s, a->c1, 50);
    return NULL;
}

static void case_fuse_threads(void)
{
    float c1[EW_N];
    pl_runtime *rt = fuse_runtime("[placement]\norder = fx_fuse, cpu\n[fx_fuse]\nfuse = Relu\n");
    pl_session *s = session_for(rt, write_add_relu_neg(c1));
    pthread_t t[6];
    fuse_thread_arg arg = {.s = s, .c1 = c1};
    for (int i = 0; i < 6; i++)
        TH_CHECK(pthread_create(&t[i], NULL, fuse_thread_main, &arg) == 0, "pthread_create");
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Add", 300);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Relu", 0);
    TH_CHECK_COUNTER(rt, "fx_fuse", "runs_Neg", 300);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* ---- through the cpu module (Conv, Gemm, MatMul + Relu, Clip) ---- */

enum { CV_N = 1, CV_C = 3, CV_H = 9, CV_W = 9, CV_M = 4, CV_K = 3 };

typedef struct conv_case {
    float w[CV_M * CV_C * CV_K * CV_K], b[CV_M];
    int stride, pad;
    int64_t ydims[4];
} conv_case;

static const int64_t cv_xdims[4] = {CV_N, CV_C, CV_H, CV_W};

static void conv_setup(conv_case *cc, int stride, int pad)
{
    fill(cc->w, sizeof cc->w / sizeof cc->w[0], 21, 0.4f);
    fill(cc->b, CV_M, 22, 0.2f);
    cc->stride = stride;
    cc->pad = pad;
    cc->ydims[0] = CV_N;
    cc->ydims[1] = CV_M;
    cc->ydims[2] = (CV_H + 2 * pad - CV_K) / stride + 1;
    cc->ydims[3] = (CV_W + 2 * pad - CV_K) / stride + 1;
}

static size_t conv_out_elems(const conv_case *cc)
{
    return (size_t)(cc->ydims[0] * cc->ydims[1] * cc->ydims[2] * cc->ydims[3]);
}

/* The node "conv" reading x, writing OUT. */
static void conv_node(mb *m, const conv_case *cc, const char *out)
{
    static const int64_t wdims[4] = {CV_M, CV_C, CV_K, CV_K}, bdims[1] = {CV_M};
    mb_tensor(m, "x", 4, cv_xdims, NULL);
    mb_tensor(m, "w", 4, wdims, cc->w);
    mb_tensor(m, "b", 1, bdims, cc->b);
    char attrs[256], outs[64];
    snprintf(attrs, sizeof attrs,
             "\"kernel_shape\":{\"ints\":[%d,%d]},\"strides\":{\"ints\":[%d,%d]},"
             "\"pads\":{\"ints\":[%d,%d,%d,%d]}",
             CV_K, CV_K, cc->stride, cc->stride, cc->pad, cc->pad, cc->pad, cc->pad);
    snprintf(outs, sizeof outs, "\"%s\"", out);
    mb_node(m, "conv", "Conv", "\"x\",\"w\",\"b\"", outs, attrs);
}

/* NCHW convolution, computed in double. */
static void conv_reference(const conv_case *cc, const float *x, float *y)
{
    int64_t oh = cc->ydims[2], ow = cc->ydims[3];
    for (int m = 0; m < CV_M; m++)
        for (int64_t i = 0; i < oh; i++)
            for (int64_t j = 0; j < ow; j++) {
                double acc = cc->b[m];
                for (int c = 0; c < CV_C; c++)
                    for (int ki = 0; ki < CV_K; ki++)
                        for (int kj = 0; kj < CV_K; kj++) {
                            int64_t hi = i * cc->stride + ki - cc->pad;
                            int64_t wj = j * cc->stride + kj - cc->pad;
                            if (hi < 0 || hi >= CV_H || wj < 0 || wj >= CV_W)
                                continue;
                            acc += (double)x[(c * CV_H + hi) * CV_W + wj] *
                                   cc->w[((m * CV_C + c) * CV_K + ki) * CV_K + kj];
                        }
                y[(m * oh + i) * ow + j] = (float)acc;
            }
}

enum { CV_XN = CV_N * CV_C * CV_H * CV_W, CV_YMAX = CV_N * CV_M * CV_H * CV_W };

static void case_cpu_fuse_conv_relu(void)
{
    conv_case cc;
    conv_setup(&cc, 1, 1);
    mb m;
    mb_begin(&m);
    conv_node(&m, &cc, "c");
    mb_node(&m, "relu", "Relu", "\"c\"", "\"y\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", "conv");
    TH_CHECK(step_count(root) == 1, "%zu steps, expected 1", step_count(root));
    expect_step(root, "conv+relu (Conv+Relu, cpu)", "relu");
    json_decref(root);
    char *text = explain_text(s);
    TH_CHECK_CONTAINS(text, "fused into conv");
    free(text);
    for (int r = 0; r < 3; r++) {
        float x[CV_XN], y[CV_YMAX];
        fill(x, CV_XN, 30 + (uint32_t)r, 1.0f);
        conv_reference(&cc, x, y);
        int negative = 0;
        for (size_t i = 0; i < conv_out_elems(&cc); i++) {
            negative += y[i] < 0.0f;
            y[i] = relu_f(y[i]);
        }
        TH_CHECK(negative > 0, "the convolution has no negative outputs to clamp");
        const char *names[1] = {"y"};
        const float *want[1] = {y};
        size_t n[1] = {conv_out_elems(&cc)};
        run_expect(s, x, 4, cv_xdims, 1, names, want, n, 1e-4f);
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_conv_clip(void)
{
    conv_case cc;
    conv_setup(&cc, 2, 0);
    float lo = -0.3f, hi = 0.4f;
    mb m;
    mb_begin(&m);
    conv_node(&m, &cc, "c");
    mb_tensor(&m, "lo", 0, NULL, &lo);
    mb_tensor(&m, "hi", 0, NULL, &hi);
    mb_node(&m, "clip", "Clip", "\"c\",\"lo\",\"hi\"", "\"y\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "clip", "conv");
    TH_CHECK(step_count(root) == 1, "%zu steps, expected 1", step_count(root));
    expect_step(root, "conv+clip (Conv+Clip, cpu)", "clip");
    json_decref(root);
    float x[CV_XN], y[CV_YMAX];
    fill(x, CV_XN, 40, 1.0f);
    conv_reference(&cc, x, y);
    int low = 0, high = 0;
    for (size_t i = 0; i < conv_out_elems(&cc); i++) {
        low += y[i] < lo;
        high += y[i] > hi;
        y[i] = y[i] < lo ? lo : y[i] > hi ? hi : y[i];
    }
    TH_CHECK(low > 0 && high > 0, "the convolution does not reach both bounds");
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {conv_out_elems(&cc)};
    run_expect(s, x, 4, cv_xdims, 1, names, want, n, 1e-4f);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_two_readers(void)
{
    conv_case cc;
    conv_setup(&cc, 1, 1);
    mb m;
    mb_begin(&m);
    conv_node(&m, &cc, "c");
    mb_node(&m, "relu", "Relu", "\"c\"", "\"y1\"", NULL);
    mb_node(&m, "neg", "Neg", "\"c\"", "\"y2\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y1\",\"y2\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", NULL);
    expect_fused(root, "neg", NULL);
    TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    expect_step(root, "conv (Conv, cpu)", "");
    json_decref(root);
    float x[CV_XN], c[CV_YMAX], y1[CV_YMAX], y2[CV_YMAX];
    fill(x, CV_XN, 50, 1.0f);
    conv_reference(&cc, x, c);
    for (size_t i = 0; i < conv_out_elems(&cc); i++) {
        y1[i] = relu_f(c[i]);
        y2[i] = -c[i];
    }
    const char *names[2] = {"y1", "y2"};
    const float *want[2] = {y1, y2};
    size_t n[2] = {conv_out_elems(&cc), conv_out_elems(&cc)};
    run_expect(s, x, 4, cv_xdims, 2, names, want, n, 1e-4f);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_graph_output(void)
{
    conv_case cc;
    conv_setup(&cc, 1, 1);
    mb m;
    mb_begin(&m);
    conv_node(&m, &cc, "c");
    mb_node(&m, "relu", "Relu", "\"c\"", "\"y\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"c\",\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu", NULL);
    TH_CHECK(step_count(root) == 2, "%zu steps, expected 2", step_count(root));
    json_decref(root);
    float x[CV_XN], c[CV_YMAX], y[CV_YMAX];
    fill(x, CV_XN, 60, 1.0f);
    conv_reference(&cc, x, c);
    for (size_t i = 0; i < conv_out_elems(&cc); i++)
        y[i] = relu_f(c[i]);
    const char *names[2] = {"c", "y"};
    const float *want[2] = {c, y};
    size_t n[2] = {conv_out_elems(&cc), conv_out_elems(&cc)};
    run_expect(s, x, 4, cv_xdims, 2, names, want, n, 1e-4f);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_pinned(void)
{
    conv_case cc;
    conv_setup(&cc, 1, 1);
    mb m;
    mb_begin(&m);
    conv_node(&m, &cc, "c");
    mb_node(&m, "relu", "Relu", "\"c\"", "\"y\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu, example_acc\n"
                                  "pin = relu=example_acc\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu"), "example_acc") == 0, "the pin did not hold");
    expect_fused(root, "relu", NULL);
    expect_step(root, "conv (Conv, cpu)", "");
    TH_CHECK(json_array_size(json_object_get(root, "copies")) == 2, "%zu copies, expected 2",
             json_array_size(json_object_get(root, "copies")));
    json_decref(root);
    float x[CV_XN], y[CV_YMAX];
    fill(x, CV_XN, 70, 1.0f);
    conv_reference(&cc, x, y);
    for (size_t i = 0; i < conv_out_elems(&cc); i++)
        y[i] = relu_f(y[i]);
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {conv_out_elems(&cc)};
    run_expect(s, x, 4, cv_xdims, 1, names, want, n, 1e-4f);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_gemm_chain(void)
{
    /* x -> MatMul -> Relu -> Gemm(transB) -> Relu -> Clip -> y. Each matrix
     * product takes its Relu; whether the cpu module also takes Clip after
     * Relu is its choice, and explain and the steps must agree with it. */
    enum { B = 4, K = 16, H = 32, O = 8 };
    static float w1[K * H], w2[O * H], b2[O];
    fill(w1, K * H, 80, 0.5f);
    fill(w2, O * H, 81, 0.5f);
    fill(b2, O, 82, 0.2f);
    float lo = 0.0f, hi = 0.5f;
    static const int64_t xd[2] = {B, K}, w1d[2] = {K, H}, w2d[2] = {O, H}, b2d[1] = {O};
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 2, xd, NULL);
    mb_tensor(&m, "w1", 2, w1d, w1);
    mb_tensor(&m, "w2", 2, w2d, w2);
    mb_tensor(&m, "b2", 1, b2d, b2);
    mb_tensor(&m, "lo", 0, NULL, &lo);
    mb_tensor(&m, "hi", 0, NULL, &hi);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w1\"", "\"a\"", NULL);
    mb_node(&m, "relu1", "Relu", "\"a\"", "\"h\"", NULL);
    mb_node(&m, "gemm", "Gemm", "\"h\",\"w2\",\"b2\"", "\"g\"", "\"transB\":{\"int\":1}");
    mb_node(&m, "relu2", "Relu", "\"g\"", "\"r\"", NULL);
    mb_node(&m, "clip", "Clip", "\"r\",\"lo\",\"hi\"", "\"y\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y\""));
    json_t *root = th_explain(s);
    expect_fused(root, "relu1", "mm");
    expect_fused(root, "relu2", "gemm");
    expect_step(root, "mm+relu1 (MatMul+Relu, cpu)", "relu1");
    if (fused_into(root, "clip") != NULL) {
        expect_fused(root, "clip", "gemm");
        expect_step(root, "gemm+relu2+clip (Gemm+Relu+Clip, cpu)", "relu2,clip");
        TH_CHECK(step_count(root) == 2, "%zu steps, expected 2", step_count(root));
    } else {
        expect_step(root, "gemm+relu2 (Gemm+Relu, cpu)", "relu2");
        expect_step(root, "clip (Clip, cpu)", "");
        TH_CHECK(step_count(root) == 3, "%zu steps, expected 3", step_count(root));
    }
    json_decref(root);
    for (int r = 0; r < 3; r++) {
        float x[B * K], y[B * O];
        fill(x, B * K, 83 + (uint32_t)r, 1.0f);
        int clipped = 0;
        for (int i = 0; i < B; i++) {
            double h[H];
            for (int j = 0; j < H; j++) {
                double acc = 0;
                for (int k = 0; k < K; k++)
                    acc += (double)x[i * K + k] * w1[k * H + j];
                h[j] = acc > 0 ? acc : 0;
            }
            for (int j = 0; j < O; j++) {
                double acc = b2[j];
                for (int k = 0; k < H; k++)
                    acc += h[k] * w2[j * H + k];
                acc = acc > 0 ? acc : 0;
                clipped += acc > hi;
                y[i * O + j] = (float)(acc > hi ? hi : acc);
            }
        }
        TH_CHECK(clipped > 0, "the input does not reach Clip's max");
        const char *names[1] = {"y"};
        const float *want[1] = {y};
        size_t n[1] = {B * O};
        run_expect(s, x, 2, xd, 1, names, want, n, 1e-4f);
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_bias_scale(void)
{
    /* A transformer's products on cpu alone: x [2, 3, K] -> MatMul -> Div by
     * 2 -> Add of a bias [N] -> Relu is one kernel (the scale its alpha, the
     * bias and Relu its epilogue). Not taken: an Add of a [3, N] constant
     * (not one value per column), the Add after a product by a 1-D B (its
     * output's last axis is not B's columns), and a Mul after a Gemm with a
     * C (the scale would have to reach C too). */
    enum { B = 2, S = 3, K = 8, N = 16 };
    static float w[K * N], bias[N], rows[S * N], v[K], wg[K * N], cg[N];
    fill(w, K * N, 90, 0.5f);
    fill(bias, N, 91, 0.5f);
    fill(rows, S * N, 92, 0.5f);
    fill(v, K, 93, 0.5f);
    fill(wg, K * N, 94, 0.5f);
    fill(cg, N, 95, 0.5f);
    float two = 2.0f, three = 3.0f, brow[S];
    fill(brow, S, 96, 0.5f);
    static const int64_t xd[3] = {B, S, K}, wd[2] = {K, N}, bd[1] = {N}, rd[2] = {S, N},
                         vd[1] = {K}, sd[1] = {S};
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 3, xd, NULL);
    mb_tensor(&m, "w", 2, wd, w);
    mb_tensor(&m, "bias", 1, bd, bias);
    mb_tensor(&m, "rows", 2, rd, rows);
    mb_tensor(&m, "v", 1, vd, v);
    mb_tensor(&m, "brow", 1, sd, brow);
    mb_tensor(&m, "wg", 2, wd, wg);
    mb_tensor(&m, "cg", 1, bd, cg);
    mb_tensor(&m, "two", 0, NULL, &two);
    mb_tensor(&m, "three", 0, NULL, &three);
    mb_node(&m, "mm1", "MatMul", "\"x\",\"w\"", "\"a1\"", NULL);
    mb_node(&m, "div", "Div", "\"a1\",\"two\"", "\"d1\"", NULL);
    mb_node(&m, "add1", "Add", "\"bias\",\"d1\"", "\"e1\"", NULL);
    mb_node(&m, "relu", "Relu", "\"e1\"", "\"y1\"", NULL);
    mb_node(&m, "mm2", "MatMul", "\"x\",\"w\"", "\"a2\"", NULL);
    mb_node(&m, "add2", "Add", "\"a2\",\"rows\"", "\"y2\"", NULL);
    mb_node(&m, "mm3", "MatMul", "\"x\",\"v\"", "\"a3\"", NULL);
    mb_node(&m, "add3", "Add", "\"a3\",\"brow\"", "\"y3\"", NULL);
    mb_node(&m, "flat", "Flatten", "\"x\"", "\"xf\"", "\"axis\":{\"int\":2}");
    mb_node(&m, "gemm", "Gemm", "\"xf\",\"wg\",\"cg\"", "\"g\"", NULL);
    mb_node(&m, "mul", "Mul", "\"g\",\"three\"", "\"y4\"", NULL);
    pl_runtime *rt = runtime_with("[placement]\norder = cpu\n[graph]\noptimize = none\n");
    pl_session *s = session_for(rt, mb_end(&m, "\"x\"", "\"y1\",\"y2\",\"y3\",\"y4\""));
    json_t *root = th_explain(s);
    expect_step(root, "mm1+div+add1+relu (MatMul+Div+Add+Relu, cpu)", "div,add1,relu");
    expect_fused(root, "add2", NULL);
    expect_fused(root, "add3", NULL);
    expect_fused(root, "mul", NULL);
    json_decref(root);
    for (int r = 0; r < 2; r++) {
        float x[B * S * K], y1[B * S * N], y2[B * S * N], y3[B * S], y4[B * S * N];
        fill(x, B * S * K, 97 + (uint32_t)r, 1.0f);
        for (int i = 0; i < B * S; i++) {
            double dot = 0;
            for (int k = 0; k < K; k++)
                dot += (double)x[i * K + k] * v[k];
            y3[i] = (float)(dot + brow[i % S]);
            for (int j = 0; j < N; j++) {
                double acc = 0, accg = cg[j];
                for (int k = 0; k < K; k++) {
                    acc += (double)x[i * K + k] * w[k * N + j];
                    accg += (double)x[i * K + k] * wg[k * N + j];
                }
                double e = acc / 2.0 + bias[j];
                y1[i * N + j] = (float)(e > 0 ? e : 0);
                y2[i * N + j] = (float)(acc + rows[(i % S) * N + j]);
                y4[i * N + j] = (float)(accg * 3.0);
            }
        }
        const char *names[4] = {"y1", "y2", "y3", "y4"};
        const float *want[4] = {y1, y2, y3, y4};
        size_t n[4] = {B * S * N, B * S * N, B * S, B * S * N};
        run_expect(s, x, 3, xd, 4, names, want, n, 1e-4f);
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_cpu_fuse_examples_cnn(void)
{
    /* The shipped CNN on cpu alone (conv2 takes relu2) gives what it gives
     * on onednn. */
    const char *model = th_path(th_arg(2), "examples/cnn/model.json");
    const char *configs[2] = {"[placement]\norder = cpu\n",
                              "[placement]\norder = onednn, cpu\n"};
    float *outs[2] = {NULL, NULL};
    size_t n_out = 0;
    for (int c = 0; c < 2; c++) {
        pl_runtime *rt = runtime_with(configs[c]);
        pl_session *s = session_for(rt, model);
        if (c == 0) {
            json_t *root = th_explain(s);
            expect_fused(root, "relu2", "conv2");
            expect_step(root, "conv2+relu2 (Conv+Relu, cpu)", "relu2");
            json_decref(root);
        }
        TH_CHECK(pl_session_input_count(s) == 1 && pl_session_output_count(s) == 1,
                 "the example has %zu inputs and %zu outputs", pl_session_input_count(s),
                 pl_session_output_count(s));
        int32_t nd;
        const int64_t *dims;
        pl_session_input_type(s, 0, NULL, &nd, &dims);
        size_t n_in = 1;
        for (int32_t d = 0; d < nd; d++)
            n_in *= (size_t)dims[d];
        float *x = malloc(n_in * sizeof *x);
        TH_CHECK(x != NULL, "out of memory");
        fill(x, n_in, 90, 1.0f);
        pl_io in = {.name = pl_session_input_name(s, 0),
                    .tensor = {.struct_size = sizeof(pl_tensor), .data = x, .ndim = nd,
                               .dtype = PL_DTYPE_F32, .shape = (int64_t *)dims}};
        pl_io out = {.name = pl_session_output_name(s, 0),
                     .tensor = {.struct_size = sizeof(pl_tensor)}};
        TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
        size_t n = 1;
        for (int32_t d = 0; d < out.tensor.ndim; d++)
            n *= (size_t)out.tensor.shape[d];
        outs[c] = malloc(n * sizeof(float));
        TH_CHECK(outs[c] != NULL, "out of memory");
        memcpy(outs[c], out.tensor.data, n * sizeof(float));
        n_out = n;
        pl_buffer_free(out.tensor.data);
        free(x);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
    for (size_t i = 0; i < n_out; i++) {
        float a = outs[0][i], b = outs[1][i];
        float bound = 1e-4f * (fabsf(b) > 1.0f ? fabsf(b) : 1.0f);
        TH_CHECK(fabsf(a - b) <= bound, "y[%zu]: cpu %.9g, onednn %.9g", i, a, b);
    }
    free(outs[0]);
    free(outs[1]);
}

/* ---- device memory that fails (tests/fixtures/devmem_module.c) ------------- */

/* A runtime on the staged cpu and json modules and the fixture modules
 * FIXTURES (file names in the fixture folder, NULL-terminated), in a
 * folder of their own: its backend.ini names that folder and 2 threads,
 * then FMT's text. */
static pl_runtime *fixture_runtime(const char *const *fixtures, const char *fmt, ...)
{
    const char *dir = th_path(th_tempdir(), "mods");
    th_mkdir(dir, 0755);
    th_copy_file(th_path(th_arg(0), "libplinth_cpu.so"), th_path(dir, "libplinth_cpu.so"), 0644);
    th_copy_file(th_path(th_arg(0), "libplinth_json.so"), th_path(dir, "libplinth_json.so"), 0644);
    for (size_t i = 0; fixtures[i] != NULL; i++)
        th_copy_file(th_path(th_arg(3), fixtures[i]), th_path(dir, fixtures[i]), 0644);
    const char *ini = th_path(th_tempdir(), "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n", dir);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
    pl_runtime_options o = th_options(ini);
    return th_runtime_create(&o);
}

/* A runtime on cpu and the fx_devmem fixture, placed first. */
static pl_runtime *devmem_runtime(const char *section)
{
    return fixture_runtime((const char *[]){"fx_devmem.so", NULL},
                           "[placement]\norder = fx_devmem, cpu\n[fx_devmem]\n%s\n", section);
}

/* y = relu(x + c), x and c of 2x8 f32, c a constant: on fx_devmem, c is
 * uploaded at session creation and x, x + c and y live in a run's arena. */
static const char *write_devmem_model(void)
{
    const char *dir = th_tempdir();
    float c[16];
    for (int i = 0; i < 16; i++)
        c[i] = (float)(i % 5) * 0.25f - 0.5f;
    FILE *f = fopen(th_path(dir, "m.weights"), "wb");
    TH_CHECK(f != NULL && fwrite(c, sizeof c, 1, f) == 1, "cannot write weights");
    fclose(f);
    const char *path = th_path(dir, "m.json");
    th_write_file(path,
                  "{\"format\":\"plinth-graph\",\"version\":1,"
                  "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
                  "\"weights\":\"m.weights\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                  "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,8]},"
                  "{\"name\":\"c\",\"dtype\":\"f32\",\"shape\":[2,8],"
                  "\"data\":{\"offset\":0,\"length\":64}}],"
                  "\"nodes\":[{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"x\",\"c\"],"
                  "\"outputs\":[\"a\"]},"
                  "{\"name\":\"act\",\"op\":\"Relu\",\"inputs\":[\"a\"],\"outputs\":[\"y\"]}]}",
                  0644);
    return path;
}

/* Runs the devmem model once; returns the status and checks the values
 * when it succeeded. */
static pl_status *devmem_run(pl_session *s)
{
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i * 0.125f - 1.0f;
    int64_t shape[2] = {2, 8};
    pl_io in = {.name = "x", .tensor = {.struct_size = sizeof(pl_tensor), .data = x, .ndim = 2,
                                        .dtype = PL_DTYPE_F32, .shape = shape}};
    pl_io out = {.name = "y", .tensor = {.struct_size = sizeof(pl_tensor), .data = y, .ndim = 2,
                                         .dtype = PL_DTYPE_F32, .shape = shape}};
    pl_status *st = pl_session_run(s, &in, 1, &out, 1);
    for (int i = 0; st == NULL && i < 16; i++) {
        float c = (float)(i % 5) * 0.25f - 0.5f;
        float want = x[i] + c > 0.0f ? x[i] + c : 0.0f;
        TH_CHECK(fabsf(y[i] - want) <= 1e-6f, "y[%d] = %g, expected %g", i, y[i], want);
    }
    return st;
}

/* The fixture's counter KEY, as configure answers now. */
static long devmem_counter(pl_runtime *rt, const char *key)
{
    TH_CHECK_OK(pl_runtime_configure_module(rt, "fx_devmem", NULL, NULL, 0));
    long m = pl_runtime_find_module(rt, "fx_devmem");
    TH_CHECK(m >= 0, "fx_devmem is not loaded");
    for (size_t k = 0; k < pl_runtime_module_output_count(rt, (size_t)m); k++) {
        const char *name, *value;
        pl_runtime_module_output(rt, (size_t)m, k, &name, &value);
        if (strcmp(name, key) == 0)
            return atol(value);
    }
    th_fail(__FILE__, __LINE__, "fx_devmem answers no %s", key);
}

static void devmem_set(pl_runtime *rt, const char *key, const char *value)
{
    const char *keys[1] = {key}, *values[1] = {value};
    TH_CHECK_OK(pl_runtime_configure_module(rt, "fx_devmem", keys, values, 1));
}

/* Checks that a run failed for want of device memory, naming the module,
 * its device, the size and WHAT. */
static void expect_devmem_oom(pl_status *st, const char *what)
{
    TH_CHECK(st != NULL, "the run succeeded although mem_alloc failed");
    TH_CHECK(pl_status_code(st) == PL_CODE_OUT_OF_MEMORY, "code %s, expected out of memory: %s",
             pl_code_name(pl_status_code(st)), pl_status_message(st));
    TH_CHECK_CONTAINS(pl_status_message(st), "module fx_devmem, device 0");
    TH_CHECK_CONTAINS(pl_status_message(st), " bytes on device fx_devmem:0");
    TH_CHECK_CONTAINS(pl_status_message(st), what);
    pl_status_free(st);
}

static void case_devmem_run(void)
{
    pl_runtime *rt = devmem_runtime("");
    pl_session *s = session_for(rt, write_devmem_model());
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "add"), "fx_devmem") == 0, "add not on fx_devmem");
    json_decref(root);
    for (int r = 0; r < 3; r++)
        TH_CHECK_OK(devmem_run(s));
    TH_CHECK(devmem_counter(rt, "allocs") >= 2, "fewer allocations than expected");
    pl_session_destroy(s);
    TH_CHECK(devmem_counter(rt, "live_buffers") == 0, "%ld device buffers outlive the session",
             devmem_counter(rt, "live_buffers"));
    pl_runtime_destroy(rt);
}

/* Session creation on RT fails for want of device memory for WHAT (the
 * first run's context is made then), and leaves no device buffer behind. */
static void expect_devmem_create_fails(pl_runtime *rt, const char *what)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_devmem_model(), &m));
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, NULL, &s);
    TH_CHECK(s == NULL, "a session was made although %s could not be allocated", what);
    TH_CHECK(st != NULL, "no error");
    TH_CHECK_CONTAINS(pl_status_message(st), "m.json");
    expect_devmem_oom(st, what);
    pl_model_destroy(m);
    TH_CHECK(devmem_counter(rt, "live_buffers") == 0, "%ld device buffers leaked",
             devmem_counter(rt, "live_buffers"));
}

/* The first allocation, the upload of c at creation, fails. */
static void case_devmem_oom_constant(void)
{
    pl_runtime *rt = devmem_runtime("fail_alloc = 1\n");
    expect_devmem_create_fails(rt, "cannot allocate 64 bytes on device fx_devmem:0 (module "
                                   "fx_devmem, device 0) for constant 'c'");
    pl_runtime_destroy(rt);
}

/* The upload of c works, the run's arena does not: creation, which makes
 * the first run's context, fails naming it (a kernel of an imperative
 * module cannot fall back, unlike a compiled subgraph); with the memory
 * back, the same runtime makes the session and runs it. */
static void case_devmem_oom_arena(void)
{
    pl_runtime *rt = devmem_runtime("fail_alloc = 2\n");
    expect_devmem_create_fails(rt, "the arena of a run");
    devmem_set(rt, "fail_alloc", "0");
    pl_session *s = session_for(rt, write_devmem_model());
    TH_CHECK_OK(devmem_run(s));
    TH_CHECK_OK(devmem_run(s));
    pl_session_destroy(s);
    TH_CHECK(devmem_counter(rt, "live_buffers") == 0, "device buffers leaked");
    pl_runtime_destroy(rt);
}

/* The arena is made, a kernel's workspace is not: what was made is freed. */
static void case_devmem_oom_workspace(void)
{
    pl_runtime *rt = devmem_runtime("workspace = 96\nfail_alloc = 3\n");
    expect_devmem_create_fails(rt, "the workspace of step add (Add, fx_devmem)");
    devmem_set(rt, "fail_alloc", "0");
    pl_session *s = session_for(rt, write_devmem_model());
    TH_CHECK_OK(devmem_run(s));
    TH_CHECK(devmem_counter(rt, "bad_runs") == 0, "kernels ran without their workspace");
    pl_session_destroy(s);
    TH_CHECK(devmem_counter(rt, "live_buffers") == 0, "device buffers leaked");
    pl_runtime_destroy(rt);
}

/* ---- many devices --------------------------------------------------------- */

/* The device name of the step whose name contains NEEDLE, or NULL. */
static const char *step_device(json_t *root, const char *needle)
{
    json_t *st;
    size_t i;
    json_array_foreach(json_object_get(root, "steps"), i, st)
        if (strstr(json_string_value(json_object_get(st, "name")), needle) != NULL)
            return json_string_value(json_object_get(st, "device"));
    return NULL;
}

/* The last of 16 simulated devices runs the accelerator's part of a model:
 * device indices are the module's, not bounded by the session. */
static void case_acc_device_15(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc:15, cpu\n"
                                  "[example_acc]\ndevices = 16\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "mm1"), "example_acc") == 0, "mm1 not on example_acc");
    const char *dev = step_device(root, "subgraph");
    TH_CHECK(dev != NULL && strcmp(dev, "example_acc:15") == 0,
             "the subgraph runs on %s, expected example_acc:15", dev ? dev : "(none)");
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(root, "copies"), i, c)
    {
        const char *from = json_string_value(json_object_get(c, "from"));
        const char *to = json_string_value(json_object_get(c, "to"));
        TH_CHECK(strcmp(from, "example_acc:15") == 0 || strcmp(to, "example_acc:15") == 0,
                 "a copy from %s to %s misses example_acc:15", from, to);
    }
    json_decref(root);
    for (int seed = 0; seed < 3; seed++)
        run_and_check(s, &W, seed);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

enum { MD_NODES = 10 };

/* The device node k of the many-devices chain is pinned to: 15, then 1..9. */
static int md_device(int k)
{
    return k == 0 ? 15 : k;
}

/* One model over ten accelerator devices: a chain y = x + c0 + ... + c9
 * whose k-th Add (node 'a' + k) is pinned to its own device of example_acc,
 * so each value crosses from device to device. The session used to refuse
 * more than 7 accelerator devices. (Names are short because a backend.ini
 * line holds at most 196 characters.) */
static void case_many_devices(void)
{
    static float c[MD_NODES][EW_N];
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 2, ew_dims, NULL);
    char order[256] = "order = ", pins[256] = "pin = ";
    for (int k = 0; k < MD_NODES; k++) {
        char name[16], in[32], out[32];
        snprintf(name, sizeof name, "c%d", k);
        fill(c[k], EW_N, 40 + (uint32_t)k, 1.0f);
        mb_tensor(&m, name, 2, ew_dims, c[k]);
        if (k == 0)
            snprintf(in, sizeof in, "\"x\",\"c0\"");
        else
            snprintf(in, sizeof in, "\"s%d\",\"c%d\"", k - 1, k);
        if (k == MD_NODES - 1)
            snprintf(out, sizeof out, "\"y\"");
        else
            snprintf(out, sizeof out, "\"s%d\"", k);
        snprintf(name, sizeof name, "%c", 'a' + k);
        mb_node(&m, name, "Add", in, out, NULL);
        size_t lo = strlen(order), lp = strlen(pins);
        snprintf(order + lo, sizeof order - lo, "example_acc:%d, ", md_device(k));
        snprintf(pins + lp, sizeof pins - lp, "%s%c=example_acc:%d", k ? ", " : "", 'a' + k,
                 md_device(k));
    }
    strcat(order, "cpu");
    TH_CHECK(strlen(order) < 196 && strlen(pins) < 196, "backend.ini lines too long");
    char config[1024];
    snprintf(config, sizeof config,
             "[placement]\nmin_subgraph_nodes = 1\n%s\n%s\n[example_acc]\ndevices = 16\n", order,
             pins);
    const char *model = mb_end(&m, "\"x\"", "\"y\"");
    pl_runtime *rt = runtime_with(config);
    pl_session *s = session_for(rt, model);
    json_t *root = th_explain(s);
    for (int k = 0; k < MD_NODES; k++) {
        char needle[16], want[32];
        snprintf(needle, sizeof needle, "'%c'", 'a' + k);
        snprintf(want, sizeof want, "example_acc:%d", md_device(k));
        const char *dev = step_device(root, needle);
        TH_CHECK(dev != NULL && strcmp(dev, want) == 0, "node %c runs on %s, expected %s",
                 'a' + k, dev ? dev : "(no step)", want);
    }
    json_t *devices = json_object_get(json_object_get(root, "memory"), "devices");
    TH_CHECK(json_array_size(devices) == MD_NODES + 1,
             "expected %d devices in the memory plan (the host and %d accelerators), got %zu",
             MD_NODES + 1, MD_NODES, json_array_size(devices));
    json_decref(root);
    for (int r = 0; r < 3; r++) {
        float x[EW_N], y[EW_N];
        fill(x, EW_N, 200 + (uint32_t)r, 1.0f);
        for (int i = 0; i < EW_N; i++) {
            y[i] = x[i];
            for (int k = 0; k < MD_NODES; k++)
                y[i] += c[k][i];
        }
        const char *names[1] = {"y"};
        const float *want[1] = {y};
        size_t n[1] = {EW_N};
        run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
    }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A pin naming a device the order does not list is refused, by name. */
static void case_pin_bad_device(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc:0, example_acc:1, cpu\n"
                                  "pin = relu1=example_acc:5\n"
                                  "[example_acc]\ndevices = 8\n");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_residual(&W), &m));
    pl_session *s = NULL;
    pl_status *st = pl_session_create(m, NULL, &s);
    TH_CHECK(st != NULL && s == NULL, "a pin to an unlisted device was accepted");
    TH_CHECK(pl_status_code(st) == PL_CODE_NOT_FOUND, "code %d", (int)pl_status_code(st));
    TH_CHECK_CONTAINS(pl_status_message(st), "relu1=example_acc:5");
    pl_status_free(st);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* ---- which threads run a module's work (tests/fixtures/pinned_module.c) ---- */

/* A runtime on cpu and the thread fixture FIXTURE (fx_pinned, fx_pinned17
 * or fx_serial), placed first, with SLEEP_US in its section. */
static pl_runtime *thread_fixture_runtime(const char *fixture, int sleep_us)
{
    char file[64];
    snprintf(file, sizeof file, "%s.so", fixture);
    /* choose = first: the fixture gives no estimate, and the tiny model
     * must reach it whatever a hand-off is thought to cost. */
    return fixture_runtime((const char *[]){file, NULL},
                           "[placement]\norder = %s, cpu\nchoose = first\n[%s]\nsleep_us = %d\n",
                           fixture, fixture, sleep_us);
}

/* x -> Relu r1 (the fixture) -> Sigmoid s (cpu) -> Relu r2 (the fixture)
 * -> y, over ew_dims: two compiled subgraphs with a cpu step between. */
static const char *write_relu_sigmoid_relu(void)
{
    mb m;
    mb_begin(&m);
    mb_tensor(&m, "x", 2, ew_dims, NULL);
    mb_node(&m, "r1", "Relu", "\"x\"", "\"a\"", NULL);
    mb_node(&m, "s", "Sigmoid", "\"a\"", "\"b\"", NULL);
    mb_node(&m, "r2", "Relu", "\"b\"", "\"y\"", NULL);
    return mb_end(&m, "\"x\"", "\"y\"");
}

static void run_relu_sigmoid_relu(pl_session *s)
{
    float x[EW_N], y[EW_N];
    fill(x, EW_N, 31, 2.0f);
    for (int i = 0; i < EW_N; i++)
        y[i] = 1.0f / (1.0f + expf(-relu_f(x[i])));
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {EW_N};
    run_expect(s, x, 2, ew_dims, 1, names, want, n, 1e-6f);
}

static long thread_counter(pl_runtime *rt, const char *fixture, const char *key)
{
    TH_CHECK_OK(pl_runtime_configure_module(rt, fixture, NULL, NULL, 0));
    long m = pl_runtime_find_module(rt, fixture);
    TH_CHECK(m >= 0, "%s is not loaded", fixture);
    for (size_t k = 0; k < pl_runtime_module_output_count(rt, (size_t)m); k++) {
        const char *name, *value;
        pl_runtime_module_output(rt, (size_t)m, k, &name, &value);
        if (strcmp(name, key) == 0)
            return atol(value);
    }
    th_fail(__FILE__, __LINE__, "%s answers no %s", fixture, key);
}

struct thread_runs {
    pl_session *s;
    int runs;
    long tid;
};

static void *thread_runs_main(void *arg)
{
    struct thread_runs *t = arg;
    t->tid = (long)syscall(SYS_gettid);
    for (int i = 0; i < t->runs; i++)
        run_relu_sigmoid_relu(t->s);
    return NULL;
}

/* Runs S RUNS times in each of N new threads at once, and HERE times in
 * this thread meanwhile; their thread ids go to TIDS. */
static void run_in_threads(pl_session *s, int n, int runs, int here, long *tids)
{
    pthread_t th[8];
    struct thread_runs t[8];
    TH_CHECK(n <= 8, "too many threads");
    for (int i = 0; i < n; i++) {
        t[i] = (struct thread_runs){.s = s, .runs = runs};
        TH_CHECK(pthread_create(&th[i], NULL, thread_runs_main, &t[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < here; i++)
        run_relu_sigmoid_relu(s);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        if (tids != NULL)
            tids[i] = t[i].tid;
    }
}

/* PL_CAP_RUNS_IN_CALLER: the thread that first runs the model runs the
 * module's steps itself; another thread's runs go to the dedicated thread;
 * the module never runs twice at once, even with four threads running the
 * session together. */
static void case_pinned_in_caller(void)
{
    pl_runtime *rt = thread_fixture_runtime("fx_pinned", 0);
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    long self = (long)syscall(SYS_gettid);
    run_relu_sigmoid_relu(s);
    TH_CHECK(thread_counter(rt, "fx_pinned", "runs") == 2, "%ld runs, expected 2",
             thread_counter(rt, "fx_pinned", "runs"));
    /* a module that cannot export is told its compiles will not be
     * exported (ABI 1.15), so it need not hash them */
    TH_CHECK(thread_counter(rt, "fx_pinned", "compiles") >= 1 &&
                 thread_counter(rt, "fx_pinned", "compiles_exported") == 0,
             "%ld compiles, %ld of them to be exported", thread_counter(rt, "fx_pinned", "compiles"),
             thread_counter(rt, "fx_pinned", "compiles_exported"));
    TH_CHECK(thread_counter(rt, "fx_pinned", "last_tid") == self,
             "the module's step ran in thread %ld, not in the caller %ld",
             thread_counter(rt, "fx_pinned", "last_tid"), self);
    long other;
    run_in_threads(s, 1, 1, 0, &other);
    long last = thread_counter(rt, "fx_pinned", "last_tid");
    TH_CHECK(last != self && last != other,
             "a second thread's run of a pinned-thread module ran in %ld (home %ld, "
             "caller %ld), not on its dedicated thread",
             last, self, other);
    TH_CHECK(thread_counter(rt, "fx_pinned", "threads") == 2, "%ld threads ran the module",
             thread_counter(rt, "fx_pinned", "threads"));
    const char *keys[1] = {"sleep_us"}, *values[1] = {"300"};
    TH_CHECK_OK(pl_runtime_configure_module(rt, "fx_pinned", keys, values, 1));
    run_in_threads(s, 3, 10, 10, NULL); /* the home thread too, meanwhile */
    TH_CHECK(thread_counter(rt, "fx_pinned", "module_overlaps") == 0,
             "%ld runs of the module overlapped another",
             thread_counter(rt, "fx_pinned", "module_overlaps"));
    TH_CHECK(thread_counter(rt, "fx_pinned", "runs") == 2 + 2 + 60 + 20, "%ld runs",
             thread_counter(rt, "fx_pinned", "runs"));
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Without PL_CAP_RUNS_IN_CALLER a pinned-thread module's steps run on its
 * dedicated thread alone, whoever runs the model. */
static void case_pinned_dedicated(void)
{
    pl_runtime *rt = thread_fixture_runtime("fx_pinned17", 0);
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    long self = (long)syscall(SYS_gettid);
    run_relu_sigmoid_relu(s);
    long tids[2];
    run_in_threads(s, 2, 5, 5, tids);
    long last = thread_counter(rt, "fx_pinned17", "last_tid");
    TH_CHECK(last != self && last != tids[0] && last != tids[1],
             "the module's step ran in a caller (%ld)", last);
    TH_CHECK(thread_counter(rt, "fx_pinned17", "threads") == 1,
             "%ld threads ran a module that asked for one",
             thread_counter(rt, "fx_pinned17", "threads"));
    TH_CHECK(thread_counter(rt, "fx_pinned17", "module_overlaps") == 0, "runs overlapped");
    TH_CHECK(thread_counter(rt, "fx_pinned17", "runs") == 2 + 2 * (2 * 5 + 5), "%ld runs",
             thread_counter(rt, "fx_pinned17", "runs"));
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A host-memory symbolic module runs in the callers of a sequential model,
 * and several threads run one session at once: each compiled subgraph
 * still runs once at a time (module.h: "The core never runs one compiled
 * subgraph twice at once"), while different ones may overlap. */
static void case_serial_sequential(void)
{
    pl_runtime *rt = thread_fixture_runtime("fx_serial", 300);
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    run_in_threads(s, 4, 10, 0, NULL);
    TH_CHECK(thread_counter(rt, "fx_serial", "runs") == 80, "%ld runs",
             thread_counter(rt, "fx_serial", "runs"));
    TH_CHECK(thread_counter(rt, "fx_serial", "overlaps") == 0,
             "%ld runs of a compiled subgraph overlapped another run of it",
             thread_counter(rt, "fx_serial", "overlaps"));
    TH_CHECK(thread_counter(rt, "fx_serial", "threads") >= 2,
             "%ld threads ran the module: the callers were expected to",
             thread_counter(rt, "fx_serial", "threads"));
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* ---- measuring the first runs (core/src/measure.h) ---------------------- */

/* measure.h's PL_MEASURE_RUNS: the runs of a window */
#define PL_TEST_MEASURE_RUNS 10

/* A runtime on cpu and fx_serial, offered first under choose = cost: the
 * fixture estimates 0 us for any subgraph of its Relu nodes (so the cost
 * choice gives it them) and sleeps SLEEP_US a run. PLACEMENT: more lines
 * of [placement]. With NEXT_SLEEP_US >= 0, fx_serial2 comes between
 * them, estimating 0 us too and sleeping that long. */
static pl_runtime *measure_runtime2(int sleep_us, const char *placement, int next_sleep_us)
{
    char next[64] = "";
    if (next_sleep_us >= 0)
        snprintf(next, sizeof next, "[fx_serial2]\nsleep_us = %d\nestimate_us = 0\n",
                 next_sleep_us);
    return fixture_runtime(
        (const char *[]){"fx_serial.so", next_sleep_us >= 0 ? "fx_serial2.so" : NULL, NULL},
        "[placement]\norder = fx_serial, %scpu\nchoose = cost\n%s\n[fx_serial]\nsleep_us = %d\n"
        "estimate_us = 0\n%s",
        next_sleep_us >= 0 ? "fx_serial2, " : "", placement, sleep_us, next);
}

static pl_runtime *measure_runtime(int sleep_us, const char *placement)
{
    return measure_runtime2(sleep_us, placement, -1);
}

/* The warnings of S that contain TEXT. */
static size_t warnings_with(const pl_session *s, const char *text)
{
    size_t n = 0;
    for (size_t i = 0; i < pl_session_warning_count(s); i++)
        n += strstr(pl_session_warning(s, i), text) != NULL;
    return n;
}

/* S said TEXT in exactly one warning (a trial's outcome). */
static void expect_warned_once(const pl_session *s, const char *text)
{
    size_t n = warnings_with(s, text);
    TH_CHECK(n == 1, "%zu warnings say '%s', expected 1", n, text);
}

/* Runs S RUNS times, then checks where r1 and r2 of
 * write_relu_sigmoid_relu are (BACKEND) and that fx_serial ran FX_RUNS
 * compiled subgraphs in all. */
static void measure_expect(pl_runtime *rt, pl_session *s, int runs, const char *backend,
                           long fx_runs)
{
    for (int i = 0; i < runs; i++)
        run_relu_sigmoid_relu(s);
    json_t *root = th_explain(s);
    TH_CHECK(strcmp(backend_of(root, "r1"), backend) == 0 &&
                 strcmp(backend_of(root, "r2"), backend) == 0,
             "r1 on %s and r2 on %s after %d runs, expected %s", backend_of(root, "r1"),
             backend_of(root, "r2"), runs, backend);
    json_decref(root);
    TH_CHECK(thread_counter(rt, "fx_serial", "runs") == fx_runs, "fx_serial ran %ld, expected %ld",
             thread_counter(rt, "fx_serial", "runs"), fx_runs);
}

/* A session of write_relu_sigmoid_relu on RT whose fixture subgraphs are
 * suspects after the first MEASURED runs, tried on cpu for a window and
 * kept there. */
static pl_session *measure_moved(pl_runtime *rt, int measured)
{
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    measure_expect(rt, s, measured - 1, "fx_serial", 2 * (measured - 1));
    measure_expect(rt, s, 1, "cpu", 2 * measured);
    char said[64];
    snprintf(said, sizeof said, "over the session's first %d runs", measured);
    TH_CHECK(warnings_with(s, said) == 2, "%zu warnings say '%s', expected 2 (r1, r2)",
             warnings_with(s, said), said);
    measure_expect(rt, s, PL_TEST_MEASURE_RUNS, "cpu", 2 * measured);
    expect_warned_once(s, "the new plan stays");
    return s;
}

/* A subgraph that runs 3 ms a run where its module estimated nothing is
 * tried on cpu after the first PL_MEASURE_RUNS (10) runs, and stays there
 * after 10 more, which were faster: explain gives the measured time as the
 * fixture's reason, warnings name the steps and the outcome, the outputs
 * stay right, and the fixture runs no more. */
static void case_measure_moves_slow(void)
{
    pl_runtime *rt = measure_runtime(3000, "");
    pl_session *s = measure_moved(rt, PL_TEST_MEASURE_RUNS);
    measure_expect(rt, s, 3, "cpu", 2 * PL_TEST_MEASURE_RUNS);
    json_t *root = th_explain(s);
    const char *why = json_string_value(
        json_object_get(json_object_get(th_placement_of(root, "r1"), "reasons"), "fx_serial"));
    TH_CHECK(why != NULL && strstr(why, "measured: ") != NULL &&
                 strstr(why, "over the session's first 10 runs") != NULL &&
                 strstr(why, "cpu's estimate") != NULL,
             "fx_serial's reason for r1: %s", why ? why : "(none)");
    json_decref(root);
    TH_CHECK(warnings_with(s, "to compare") == 2, "%zu warnings name a step, expected 2 (r1, r2)",
             warnings_with(s, "to compare"));
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A trial that runs slower than the plan as made ends with that plan back:
 * fx_serial's subgraphs run 3 ms, the next backend's (fx_serial2, also
 * estimating nothing) 10 ms. */
static void case_measure_moves_back(void)
{
    pl_runtime *rt = measure_runtime2(3000, "", 10000);
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    measure_expect(rt, s, 10, "fx_serial2", 20);
    TH_CHECK(thread_counter(rt, "fx_serial2", "runs") == 0, "fx_serial2 ran before its trial");
    measure_expect(rt, s, 10, "fx_serial", 20);
    TH_CHECK(thread_counter(rt, "fx_serial2", "runs") == 20, "fx_serial2 ran %ld in its trial",
             thread_counter(rt, "fx_serial2", "runs"));
    expect_warned_once(s, "the plan as made is back");
    measure_expect(rt, s, 4, "fx_serial", 28);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A subgraph that runs 60 ms a run where its module estimated nothing is
 * a suspect from the third run on (the early thresholds: 50 ms and 30x
 * both estimates), not the tenth. */
static void case_measure_early(void)
{
    pl_runtime *rt = measure_runtime(60000, "");
    pl_session *s = measure_moved(rt, 3);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A staged session's tails are sessions of their own and measure
 * themselves: write_relu_sigmoid_relu over an open row count, run 30 times
 * at [4, 8], ends with its tail's Relu nodes on cpu, and the fixture runs
 * no more. */
static void case_measure_staged(void)
{
    const char *json =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[-1,8],"
        "\"dim_params\":[\"n\",null]}],"
        "\"nodes\":["
        "{\"name\":\"r1\",\"op\":\"Relu\",\"inputs\":[\"x\"],\"outputs\":[\"a\"]},"
        "{\"name\":\"s\",\"op\":\"Sigmoid\",\"inputs\":[\"a\"],\"outputs\":[\"b\"]},"
        "{\"name\":\"r2\",\"op\":\"Relu\",\"inputs\":[\"b\"],\"outputs\":[\"y\"]}]}";
    pl_runtime *rt = measure_runtime(3000, "");
    pl_session *s = session_for(rt, write_text("measure_staged.json", json));
    for (int i = 0; i < 30; i++)
        run_relu_sigmoid_relu(s);
    json_t *root = th_explain(s);
    json_t *tail = json_object_get(json_object_get(root, "staged"), "last_tail");
    TH_CHECK(tail != NULL, "the session is not staged");
    TH_CHECK(strcmp(backend_of(tail, "r1"), "cpu") == 0 && strcmp(backend_of(tail, "r2"), "cpu") == 0,
             "the tail's r1 on %s, r2 on %s after 30 runs, expected cpu", backend_of(tail, "r1"),
             backend_of(tail, "r2"));
    char *text = json_dumps(tail, JSON_COMPACT);
    TH_CHECK(text != NULL && strstr(text, "the new plan stays") != NULL,
             "the tail's description does not tell the trial's outcome: %s", text ? text : "");
    free(text);
    json_decref(root);
    /* the session's warnings say it too, after the tail's shapes */
    expect_warned_once(s, "the new plan stays");
    TH_CHECK(warnings_with(s, "a tail planned at run time (x [4, 8]): ") == 3,
             "%zu warnings name the tail, expected 3 (r1, r2, the outcome)",
             warnings_with(s, "a tail planned at run time (x [4, 8]): "));
    long fx = thread_counter(rt, "fx_serial", "runs");
    for (int i = 0; i < 3; i++)
        run_relu_sigmoid_relu(s);
    TH_CHECK(thread_counter(rt, "fx_serial", "runs") == fx, "fx_serial still runs the tail");
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A runtime as measure_runtime (SLEEP_US, PLACEMENT) whose session,
 * made with option MEASURE, keeps the fixture's subgraphs past the
 * measured runs and a trial's. */
static void measure_stays(int sleep_us, const char *placement, pl_option_flag measure)
{
    pl_runtime *rt = measure_runtime(sleep_us, placement);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_relu_sigmoid_relu(), &m));
    pl_session_options o = {.struct_size = sizeof o, .measure = measure};
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, &o, &s));
    pl_model_destroy(m);
    measure_expect(rt, s, 2 * PL_TEST_MEASURE_RUNS + 2, "fx_serial",
                   2 * (2 * PL_TEST_MEASURE_RUNS + 2));
    TH_CHECK(warnings_with(s, "measured: ") == 0, "a subgraph was tried elsewhere (sleep %d us, "
             "%s, option %d)", sleep_us, placement, (int)measure);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Nothing moves when the subgraphs run as fast as estimated, when
 * [placement] measure = no, when the session option says NO, or under
 * choose = first (the user's order stands). */
static void case_measure_keeps(void)
{
    measure_stays(0, "", PL_OPTION_KEEP);
    measure_stays(3000, "measure = no", PL_OPTION_KEEP);
    measure_stays(3000, "", PL_OPTION_NO);
    measure_stays(3000, "choose = first", PL_OPTION_KEEP);
}

/* A runtime for a slow node inside a fixture subgraph, under choose =
 * cost with PLACEMENT's lines: fx_serial, then fx_serial2, then cpu. The
 * fixtures estimate 1000 (fx_serial) and 2000 (fx_serial2) us a node and
 * 10 for r2, so fx_serial takes a whole chain and its 3 ms runs are not
 * slow for the subgraph (1.2 ms an estimated node); fx_serial's subgraph
 * that holds r2 sleeps 3 ms a run and, with NODE_TIMES, its node times
 * give that to r2; fx_serial2 never sleeps. */
static pl_runtime *slow_node_runtime(int node_times, const char *placement)
{
    return fixture_runtime((const char *[]){"fx_serial.so", "fx_serial2.so", NULL},
                           "[placement]\norder = fx_serial, fx_serial2, cpu\nchoose = cost\n%s\n"
                           "[fx_serial]\nsleep_us = 3000\nnode_estimate_us = 1000\n"
                           "slow_node = r2\nslow_estimate_us = 10\nnode_times = %d\n"
                           "[fx_serial2]\nnode_estimate_us = 2000\nslow_node = r2\n"
                           "slow_estimate_us = 10\n",
                           placement, node_times);
}

/* Six Relu nodes r0..r5 in a chain from x [4, 8] to y. */
static const char *write_relu_chain(void)
{
    char json[2048];
    size_t len = (size_t)snprintf(
        json, sizeof json,
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
        "\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
        "\"tensors\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[4,8]}],\"nodes\":[");
    for (int i = 0; i < 6; i++) {
        char in[8] = "x", out[8] = "y";
        if (i > 0)
            snprintf(in, sizeof in, "t%d", i - 1);
        if (i < 5)
            snprintf(out, sizeof out, "t%d", i);
        len += (size_t)snprintf(json + len, sizeof json - len,
                                "%s{\"name\":\"r%d\",\"op\":\"Relu\",\"inputs\":[\"%s\"],"
                                "\"outputs\":[\"%s\"]}",
                                i ? "," : "", i, in, out);
    }
    snprintf(json + len, sizeof json - len, "]}");
    return write_text("relu_chain.json", json);
}

static void run_relu_chain(pl_session *s)
{
    float x[EW_N], y[EW_N];
    fill(x, EW_N, 17, 2.0f);
    for (int i = 0; i < EW_N; i++)
        y[i] = relu_f(x[i]);
    const char *names[1] = {"y"};
    const float *want[1] = {y};
    size_t n[1] = {EW_N};
    run_expect(s, x, 2, ew_dims, 1, names, want, n, 0.0f);
}

/* Checks that of the chain's nodes, r2 runs on AWAY (NULL: any backend but
 * fx_serial) and the others on fx_serial. */
static void expect_chain_on(pl_session *s, const char *away)
{
    json_t *root = th_explain(s);
    for (int i = 0; i < 6; i++) {
        char node[8];
        snprintf(node, sizeof node, "r%d", i);
        const char *b = backend_of(root, node);
        bool ok = i != 2 ? strcmp(b, "fx_serial") == 0
                         : away ? strcmp(b, away) == 0 : strcmp(b, "fx_serial") != 0;
        TH_CHECK(ok, "%s runs on %s", node, b);
    }
    json_decref(root);
}

/* A slow node inside a subgraph that is not slow as a whole: its module's
 * node times (ABI 1.17) put 3 ms a run on r2, estimated at 10 us, so r2
 * alone is tried elsewhere after the first 10 runs, and stays there after
 * 10 more, which were faster; the rest of the chain stays on fx_serial,
 * split around it. */
static void case_measure_moves_node(void)
{
    pl_runtime *rt = slow_node_runtime(1, "");
    pl_session *s = session_for(rt, write_relu_chain());
    for (int i = 0; i < PL_TEST_MEASURE_RUNS; i++)
        run_relu_chain(s);
    expect_chain_on(s, NULL);
    TH_CHECK(warnings_with(s, "node 'r2' (Relu) in subgraph") == 1 &&
                 warnings_with(s, "measured: the subgraph") == 0,
             "the warnings do not name r2 alone: %s",
             pl_session_warning_count(s) ? pl_session_warning(s, 0) : "(none)");
    json_t *root = th_explain(s);
    const char *why = json_string_value(
        json_object_get(json_object_get(th_placement_of(root, "r2"), "reasons"), "fx_serial"));
    TH_CHECK(why != NULL && strstr(why, "its own work ran 3.") != NULL &&
                 strstr(why, "over the session's first 10 runs") != NULL,
             "fx_serial's reason for r2: %s", why ? why : "(none)");
    json_decref(root);
    for (int i = 0; i < PL_TEST_MEASURE_RUNS; i++)
        run_relu_chain(s);
    expect_warned_once(s, "the new plan stays");
    expect_chain_on(s, NULL);
    long fx = thread_counter(rt, "fx_serial", "runs");
    TH_CHECK(fx == PL_TEST_MEASURE_RUNS * 3, "fx_serial ran %ld subgraphs, expected %d (one, then "
             "two a run)", fx, PL_TEST_MEASURE_RUNS * 3);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Without node times (the module's compiled_times answers 0) the same
 * subgraph stays whole where it is; so it does with measure = no. */
static void case_measure_node_needs_times(void)
{
    const char *cases[2][2] = {{"0", ""}, {"1", "measure = no"}};
    for (int c = 0; c < 2; c++) {
        pl_runtime *rt = slow_node_runtime(atoi(cases[c][0]), cases[c][1]);
        pl_session *s = session_for(rt, write_relu_chain());
        for (int i = 0; i < 2 * PL_TEST_MEASURE_RUNS; i++)
            run_relu_chain(s);
        expect_chain_on(s, "fx_serial");
        TH_CHECK(warnings_with(s, "measured") == 0, "case %d: measured: %s", c,
                 pl_session_warning(s, 0));
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* pl_session_profile_nodes and pl_session_step_nodes: the fixture's
 * subgraph gives its runs' time to r2 while profiled, and nothing once
 * stopped; a cpu step has no node times. */
static void case_profile_nodes(void)
{
    pl_runtime *rt = slow_node_runtime(1, "measure = no");
    pl_session *s = session_for(rt, write_relu_chain());
    run_relu_chain(s);
    TH_CHECK(pl_session_step_nodes(s, 0, NULL, 0) == 0, "node times before profiling");
    TH_CHECK(pl_session_profile_nodes(s, true) == 1, "not one subgraph timing its nodes");
    for (int i = 0; i < 4; i++)
        run_relu_chain(s);
    size_t step = SIZE_MAX;
    for (size_t i = 0; i < pl_session_step_count(s); i++) {
        const char *backend;
        pl_session_step_info(s, i, NULL, &backend, NULL, NULL);
        if (strcmp(backend, "fx_serial") == 0)
            step = i;
        else
            TH_CHECK(pl_session_step_nodes(s, i, NULL, 0) == 0, "step %zu on %s has node times",
                     i, backend);
    }
    TH_CHECK(step != SIZE_MAX, "no fx_serial step");
    pl_node_profile t[8];
    TH_CHECK(pl_session_step_nodes(s, step, t, 8) == 6, "not 6 nodes");
    for (int i = 0; i < 6; i++) {
        char node[8];
        snprintf(node, sizeof node, "r%d", i);
        TH_CHECK(strcmp(t[i].node, node) == 0 && strcmp(t[i].op, "Relu") == 0 && t[i].runs == 4,
                 "node %d: %s (%s), %llu runs", i, t[i].node, t[i].op,
                 (unsigned long long)t[i].runs);
        TH_CHECK(i == 2 ? t[i].min_ns >= 3000000 && t[i].total_ns >= 4 * t[i].min_ns
                        : t[i].total_ns == 0,
                 "%s: %llu ns at best, %llu in all", node, (unsigned long long)t[i].min_ns,
                 (unsigned long long)t[i].total_ns);
    }
    TH_CHECK(pl_session_step_nodes(s, step, t, 2) == 6, "the count depends on the room given");
    TH_CHECK(pl_session_profile_nodes(s, false) == 0, "stopping answered subgraphs");
    run_relu_chain(s);
    TH_CHECK(pl_session_step_nodes(s, step, t, 8) == 6 && t[2].runs == 4,
             "a run after stopping was timed (%llu runs)", (unsigned long long)t[2].runs);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Four threads run one session through the measured runs at once: the
 * run that completes them plans again while the others wait or finish
 * (those in flight end on the old plan), every output is right, and
 * after it the fixture runs no more. */
static void case_measure_threads(void)
{
    pl_runtime *rt = measure_runtime(3000, "");
    pl_session *s = session_for(rt, write_relu_sigmoid_relu());
    run_in_threads(s, 4, 8, 0, NULL);
    long fx = thread_counter(rt, "fx_serial", "runs");
    TH_CHECK(fx >= 2 * 10 && fx <= 2 * (10 + 3), "fx_serial ran %ld subgraphs in 32 runs", fx);
    measure_expect(rt, s, 2, "cpu", fx); /* (past the trial: 32 runs) */
    expect_warned_once(s, "the new plan stays");
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"cpu_only", case_cpu_only},
        {"acc_and_cpu", case_acc_and_cpu},
        {"acc_disabled", case_acc_disabled},
        {"examples_mlp", case_examples_mlp},
        {"output_read_across", case_output_read_across},
        {"dead_branch", case_dead_branch},
        {"no_cluster_cycle", case_no_cluster_cycle},
        {"branches_merge", case_branches_merge},
        {"newer_opset_functions", case_newer_opset_functions},
        {"crop_and_grid", case_crop_and_grid},
        {"attention", case_attention},
        {"attention_kv_cache", case_attention_kv_cache},
        {"attention_softcap", case_attention_softcap},
        {"contrib_ops", case_contrib_ops},
        {"qlinear_ms", case_qlinear_ms},
        {"wide_int_qdq", case_wide_int_qdq},
        {"old_abi_dtypes", case_old_abi_dtypes},
        {"resize_modes", case_resize_modes},
        {"deform_conv", case_deform_conv},
        {"rotary", case_rotary},
        {"fail_compile_fallback", case_fail_compile_fallback},
        {"fail_compile_strict", case_fail_compile_strict},
        {"device_memory_fallback", case_device_memory_fallback},
        {"min_subgraph_nodes", case_min_subgraph_nodes},
    {"pin", case_pin},
    {"pin_parts", case_pin_parts},
    {"options_placement", case_options_placement},
    {"options_strict", case_options_strict},
    {"options_errors", case_options_errors},
    {"unsupported_node", case_unsupported_node},
        {"threads_cpu", case_threads_cpu},
        {"threads_acc", case_threads_acc},
        {"naive_engine", case_naive_engine},
        {"bad_inputs", case_bad_inputs},
        {"cache", case_cache},
        {"cache_limit", case_cache_limit},
        {"cache_concurrent", case_cache_concurrent},
        {"fuse_chain", case_fuse_chain},
        {"fuse_weighed", case_fuse_weighed},
        {"fuse_declined", case_fuse_declined},
        {"fuse_partial", case_fuse_partial},
        {"fuse_two_readers", case_fuse_two_readers},
        {"fuse_graph_output", case_fuse_graph_output},
        {"fuse_pinned", case_fuse_pinned},
        {"fuse_nonconstant", case_fuse_nonconstant},
        {"fuse_clip", case_fuse_clip},
        {"fuse_inplace", case_fuse_inplace},
        {"fuse_after_fallback", case_fuse_after_fallback},
        {"fuse_abi_1_0", case_fuse_abi_1_0},
        {"fuse_threads", case_fuse_threads},
        {"cpu_fuse_conv_relu", case_cpu_fuse_conv_relu},
        {"cpu_fuse_conv_clip", case_cpu_fuse_conv_clip},
        {"cpu_fuse_two_readers", case_cpu_fuse_two_readers},
        {"cpu_fuse_graph_output", case_cpu_fuse_graph_output},
        {"cpu_fuse_pinned", case_cpu_fuse_pinned},
        {"cpu_fuse_gemm_chain", case_cpu_fuse_gemm_chain},
        {"cpu_fuse_bias_scale", case_cpu_fuse_bias_scale},
        {"cpu_fuse_examples_cnn", case_cpu_fuse_examples_cnn},
        {"devmem_run", case_devmem_run},
        {"devmem_oom_constant", case_devmem_oom_constant},
        {"devmem_oom_arena", case_devmem_oom_arena},
        {"devmem_oom_workspace", case_devmem_oom_workspace},
        {"acc_device_15", case_acc_device_15},
        {"many_devices", case_many_devices},
        {"pin_bad_device", case_pin_bad_device},
        {"pinned_in_caller", case_pinned_in_caller},
        {"pinned_dedicated", case_pinned_dedicated},
        {"serial_sequential", case_serial_sequential},
        {"measure_moves_slow", case_measure_moves_slow},
        {"measure_moves_back", case_measure_moves_back},
        {"measure_early", case_measure_early},
        {"measure_staged", case_measure_staged},
        {"measure_keeps", case_measure_keeps},
        {"measure_threads", case_measure_threads},
        {"measure_moves_node", case_measure_moves_node},
        {"measure_node_needs_times", case_measure_node_needs_times},
        {"profile_nodes", case_profile_nodes},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 4,
                   "STAGE_DIR CUSTOM_MODULE_FILE SOURCE_DIR FUSE_FIXTURE_DIR");
}
