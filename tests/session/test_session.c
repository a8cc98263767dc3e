/* test_session.c — the first vertical slice, end to end through the public
 * API: JSON models run on cpu alone, on example_acc + cpu, and with
 * example_acc disabled; outputs agree with a reference this test computes
 * itself; placement is what backend.ini implies; failures are named;
 * compile failures fall back or fail by `strict`; one session serves many
 * threads at once. Usage: test_session CASE STAGE_DIR CUSTOM_MODULE_FILE. */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../harness.h"

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
 * y = Gemm(r, W3^T, b3) (transB = 1); z = softmax(y). */
static const char *write_residual(const weights *w)
{
    const char *dir = th_tempdir();
    FILE *f = fopen(th_path(dir, "model.weights"), "wb");
    TH_CHECK(f != NULL, "cannot write weights");
    fwrite(w, sizeof *w, 1, f);
    fclose(f);
    size_t o_w1 = 0, o_b1 = o_w1 + sizeof w->w1, o_w2 = o_b1 + sizeof w->b1,
           o_b2 = o_w2 + sizeof w->w2, o_w3 = o_b2 + sizeof w->b2, o_b3 = o_w3 + sizeof w->w3;
    char json[8192];
    snprintf(json, sizeof json,
             "{\"format\":\"plinth-graph\",\"version\":1,"
             "\"opset_import\":[{\"domain\":\"\",\"version\":13}],"
             "\"weights\":\"model.weights\",\"inputs\":[\"x\"],\"outputs\":[\"z\"],"
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
             "\"attributes\":{\"axis\":{\"int\":-1}}}]}",
             BATCH, IN, IN, HID, o_w1, sizeof w->w1, HID, o_b1, sizeof w->b1, HID, IN, o_w2,
             sizeof w->w2, IN, o_b2, sizeof w->b2, OUT, IN, o_w3, sizeof w->w3, OUT, o_b3,
             sizeof w->b3);
    const char *path = th_path(dir, "model.json");
    f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fputs(json, f);
    fclose(f);
    return path;
}

static void reference(const weights *w, const float *x, float *z)
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
    }
}

/* ---- runtime and session ------------------------------------------------- */

/* A runtime on the staged modules with the given extra backend.ini text. */
static pl_runtime *runtime_with(const char *extra)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n%s\n", th_arg(0), extra);
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

static json_t *explain(pl_session *s)
{
    char *text = NULL;
    TH_CHECK_OK(pl_session_explain(s, true, &text));
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    TH_CHECK(root != NULL, "explain JSON: %s", err.text);
    pl_string_free(text);
    return root;
}

static const char *backend_of(json_t *root, const char *node)
{
    json_t *p;
    size_t i;
    json_array_foreach(json_object_get(root, "placement"), i, p)
        if (strcmp(json_string_value(json_object_get(p, "node")), node) == 0)
            return json_string_value(json_object_get(p, "backend"));
    th_fail(__FILE__, __LINE__, "node %s not in placement", node);
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
    json_t *root = explain(s);
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
    json_t *root = explain(s);
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
    json_t *root = explain(s);
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
    json_t *root = explain(s);
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

static void case_min_subgraph_nodes(void)
{
    make_weights(&W);
    pl_runtime *rt = runtime_with("[placement]\norder = example_acc, cpu\n"
                                  "min_subgraph_nodes = 20\n");
    pl_session *s = session_for(rt, write_residual(&W));
    json_t *root = explain(s);
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
    json_t *root = explain(s);
    TH_CHECK(strcmp(backend_of(root, "relu1"), "cpu") == 0, "the pin did not hold");
    TH_CHECK(strcmp(backend_of(root, "mm1"), "example_acc") == 0, "mm1 left example_acc");
    TH_CHECK(json_array_size(json_object_get(root, "subgraphs")) == 2,
             "the pinned node should split the subgraph in two");
    json_decref(root);
    run_and_check(s, &W, 5);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void case_unsupported_node(void)
{
    /* fx_custom registers com.plinth.test:Repeat with a shape function but
     * no backend runs it. */
    const char *dir = th_path(th_tempdir(), "mods");
    th_mkdir(dir, 0755);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp %s/libplinth_cpu.so %s/ && cp %s %s/libplinth_fx_custom.so && chmod 644 %s/*.so",
             th_arg(0), dir, th_arg(1), dir, dir);
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
    json_t *root = explain(s);
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

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"cpu_only", case_cpu_only},
        {"acc_and_cpu", case_acc_and_cpu},
        {"acc_disabled", case_acc_disabled},
        {"examples_mlp", case_examples_mlp},
        {"fail_compile_fallback", case_fail_compile_fallback},
        {"fail_compile_strict", case_fail_compile_strict},
        {"min_subgraph_nodes", case_min_subgraph_nodes},
        {"pin", case_pin},
        {"unsupported_node", case_unsupported_node},
        {"threads_cpu", case_threads_cpu},
        {"threads_acc", case_threads_acc},
        {"naive_engine", case_naive_engine},
        {"bad_inputs", case_bad_inputs},
        {"cache", case_cache},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 3,
                   "STAGE_DIR CUSTOM_MODULE_FILE SOURCE_DIR");
}
