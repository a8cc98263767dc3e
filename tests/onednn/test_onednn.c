/* test_onednn.c — the onednn module against the cpu module: small JSON
 * models written here run in sessions with `[placement] order = onednn, cpu`
 * and with `order = cpu`, and the outputs must agree within 1e-4 relative
 * (conv + relu + residual, depthwise conv + clip, matmul + bias + GELU,
 * layer normalisation, attention-like softmax, pooling, concat + batch
 * normalisation). explain must show onednn's refusal reasons; a compiled
 * subgraph exported and imported through the module's table must compute
 * the same, and blobs written for another subgraph, another module/library
 * version or corrupted must be refused.
 *
 * Linked with the core's object library (core/src on the include path) so
 * that the export/import cases reach the module record and build graph
 * views, as tests/example_acc does. Usage: test_onednn CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <plinth/graph_hash.h>

#include "../explain_json.h"
#include "../harness.h"
#include "graph_view.h"
#include "model.h"
#include "registry.h"

/* ---- models written by the test ------------------------------------------- */

/* A JSON model under construction: tensors (inputs and constants), nodes,
 * and the weights file the constants' bytes go to. */
struct mb {
    char tensors[16384];
    char nodes[32768];
    const char *inputs[4];
    size_t n_inputs;
    const char *outputs[4];
    size_t n_outputs;
    float *weights;
    size_t n_weights, cap_weights;
    uint32_t seed;
    int opset;
};

static float mb_rand(struct mb *m)
{
    m->seed = m->seed * 1664525u + 1013904223u;
    return (float)(m->seed >> 8) / 16777216.0f * 2.0f - 1.0f;
}

static void mb_append(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

static const char *dims_json(const int64_t *dims, int nd)
{
    static char buf[4][128];
    static int k;
    char *b = buf[k++ % 4];
    b[0] = '\0';
    mb_append(b, 128, "[");
    for (int i = 0; i < nd; i++)
        mb_append(b, 128, i ? ",%lld" : "%lld", (long long)dims[i]);
    mb_append(b, 128, "]");
    return b;
}

static void mb_input(struct mb *m, const char *name, int nd, const int64_t *dims)
{
    mb_append(m->tensors, sizeof m->tensors, "%s{\"name\":\"%s\",\"dtype\":\"f32\",\"shape\":%s}",
              m->tensors[0] ? "," : "", name, dims_json(dims, nd));
    m->inputs[m->n_inputs++] = name;
}

/* A constant; DATA NULL: random values scaled by SCALE. */
static void mb_const(struct mb *m, const char *name, int nd, const int64_t *dims,
                     const float *data, float scale)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)dims[i];
    if (m->n_weights + n > m->cap_weights) {
        m->cap_weights = (m->n_weights + n) * 2;
        m->weights = realloc(m->weights, m->cap_weights * sizeof(float));
        TH_CHECK(m->weights != NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        m->weights[m->n_weights + i] = data != NULL ? data[i] : mb_rand(m) * scale;
    mb_append(m->tensors, sizeof m->tensors,
              "%s{\"name\":\"%s\",\"dtype\":\"f32\",\"shape\":%s,"
              "\"data\":{\"offset\":%zu,\"length\":%zu}}",
              m->tensors[0] ? "," : "", name, dims_json(dims, nd), m->n_weights * sizeof(float),
              n * sizeof(float));
    m->n_weights += n;
}

static void mb_scalar(struct mb *m, const char *name, float v)
{
    mb_const(m, name, 0, NULL, &v, 1);
}

/* A node: INS is a comma-separated list of quoted names, ATTRS JSON or "". */
static void mb_node(struct mb *m, const char *name, const char *op, const char *ins,
                    const char *out, const char *attrs)
{
    mb_append(m->nodes, sizeof m->nodes,
              "%s{\"name\":\"%s\",\"op\":\"%s\",\"inputs\":[%s],\"outputs\":[\"%s\"]%s%s%s}",
              m->nodes[0] ? "," : "", name, op, ins, out, attrs[0] ? ",\"attributes\":{" : "",
              attrs, attrs[0] ? "}" : "");
}

/* An i64 constant of N values (a Reshape's shape): two float slots each
 * in the weights. */
static void mb_shape(struct mb *m, const char *name, int n, const int64_t *vals)
{
    TH_CHECK(n <= 8, "shape of %d values", n);
    float slots[16];
    memcpy(slots, vals, (size_t)n * sizeof *vals);
    size_t at = m->n_weights;
    if (at + 2 * (size_t)n > m->cap_weights) {
        m->cap_weights = (at + 2 * (size_t)n) * 2;
        m->weights = realloc(m->weights, m->cap_weights * sizeof(float));
        TH_CHECK(m->weights != NULL, "out of memory");
    }
    memcpy(m->weights + at, slots, (size_t)n * sizeof *vals);
    m->n_weights += 2 * (size_t)n;
    int64_t dims[1] = {n};
    mb_append(m->tensors, sizeof m->tensors,
              "%s{\"name\":\"%s\",\"dtype\":\"i64\",\"shape\":%s,"
              "\"data\":{\"offset\":%zu,\"length\":%zu}}",
              m->tensors[0] ? "," : "", name, dims_json(dims, 1), at * sizeof(float),
              (size_t)n * sizeof(int64_t));
}

/* A rank-0 i64 constant NAME holding VAL. */
static void mb_i64_scalar(struct mb *m, const char *name, int64_t val)
{
    mb_shape(m, name, 1, &val);
    /* mb_shape wrote shape [1]: make it [] */
    char *at = strstr(m->tensors, name);
    TH_CHECK(at != NULL, "constant %s not written", name);
    char *shape = strstr(at, "\"shape\":[1]");
    TH_CHECK(shape != NULL, "shape of %s not found", name);
    memmove(shape + 9, shape + 10, strlen(shape + 10) + 1);
}

/* A constant of DTYPE (a JSON dtype name) holding the NBYTES bytes at
 * DATA, in float slots of the weights. */
static void mb_raw(struct mb *m, const char *name, const char *dtype, int nd, const int64_t *dims,
                   const void *data, size_t nbytes)
{
    size_t slots = (nbytes + sizeof(float) - 1) / sizeof(float);
    size_t at = m->n_weights;
    if (at + slots > m->cap_weights) {
        m->cap_weights = (at + slots) * 2 + 16;
        m->weights = realloc(m->weights, m->cap_weights * sizeof(float));
        TH_CHECK(m->weights != NULL, "out of memory");
    }
    memset(m->weights + at, 0, slots * sizeof(float));
    memcpy(m->weights + at, data, nbytes);
    m->n_weights += slots;
    mb_append(m->tensors, sizeof m->tensors,
              "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"shape\":%s,"
              "\"data\":{\"offset\":%zu,\"length\":%zu}}",
              m->tensors[0] ? "," : "", name, dtype, dims_json(dims, nd), at * sizeof(float),
              nbytes);
}

/* An 8-bit scalar zero point NAME of VALUE (i8 when SIGNED_, else u8). */
static void mb_zero_point(struct mb *m, const char *name, int signed_, int value)
{
    int8_t v = (int8_t)value;
    mb_raw(m, name, signed_ ? "i8" : "u8", 0, NULL, &v, 1);
}

/* Writes the model into a temporary folder and returns its path. */
static const char *mb_write(struct mb *m)
{
    const char *dir = th_tempdir();
    FILE *f = fopen(th_path(dir, "model.weights"), "wb");
    TH_CHECK(f != NULL, "cannot write weights");
    if (m->n_weights > 0)
        fwrite(m->weights, sizeof(float), m->n_weights, f);
    fclose(f);
    char ins[256] = "", outs[256] = "";
    for (size_t i = 0; i < m->n_inputs; i++)
        mb_append(ins, sizeof ins, "%s\"%s\"", i ? "," : "", m->inputs[i]);
    for (size_t i = 0; i < m->n_outputs; i++)
        mb_append(outs, sizeof outs, "%s\"%s\"", i ? "," : "", m->outputs[i]);
    const char *path = th_path(dir, "model.json");
    f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fprintf(f,
            "{\"format\":\"plinth-graph\",\"version\":1,"
            "\"opset_import\":[{\"domain\":\"\",\"version\":%d}],"
            "\"weights\":\"model.weights\",\"inputs\":[%s],\"outputs\":[%s],"
            "\"tensors\":[%s],\"nodes\":[%s]}",
            m->opset ? m->opset : 13, ins, outs, m->tensors, m->nodes);
    fclose(f);
    free(m->weights);
    m->weights = NULL;
    return path;
}

/* ---- runtimes and sessions ------------------------------------------------- */

/* A runtime on the staged modules, 2 threads, placement ORDER; ONEDNN_KV
 * (or NULL) is a line of its [onednn] section; with SINK, log lines at
 * debug level go to SINK(USER). */
static pl_runtime *runtime_ex(const char *order, const char *onednn_kv, pl_log_sink sink,
                              void *user)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    /* optimize = basic: these cases test what the module makes of the
     * nodes as written (a Mul after a Conv as a post-op, a MatMul and its
     * Add), which `all` would fold into weights or fuse before the module
     * sees them (tests/optimize covers that). */
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\nlog = %s\n\n[placement]\norder = %s\nchoose = first\n"
               "\n[graph]\noptimize = basic\n",
            th_arg(0), sink != NULL ? "debug" : "warn", order);
    if (onednn_kv != NULL)
        fprintf(f, "\n[onednn]\n%s\n", onednn_kv);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true, .log_sink = sink, .log_user = user};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    return rt;
}

static pl_runtime *runtime_with(const char *order)
{
    return runtime_ex(order, NULL, NULL, NULL);
}

/* An onednn-then-cpu runtime (its [onednn] section: ONEDNN_KV or nothing;
 * SINK as for runtime_ex); the case skips when the module is not loaded. */
static pl_runtime *onednn_runtime_ex(const char *onednn_kv, pl_log_sink sink, void *user)
{
    pl_runtime *rt = runtime_ex("onednn, cpu", onednn_kv, sink, user);
    long i = pl_runtime_find_module(rt, "onednn");
    if (i < 0 || rt->modules[i]->status != PL_MODULE_LOADED) {
        pl_runtime_destroy(rt);
        th_skip("the onednn module is not loaded (oneDNN missing?)");
    }
    return rt;
}

static pl_runtime *onednn_runtime(void)
{
    return onednn_runtime_ex(NULL, NULL, NULL);
}

static pl_session *session_for(pl_runtime *rt, const char *path)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    pl_model_destroy(m);
    return s;
}

/* Runs the model with one input X (n floats, shape XS) and one output of
 * N_OUT floats into Y. */
static void run_one(pl_session *s, const char *in, float *x, int nd, int64_t *xs,
                    const char *out, float *y, int ond, int64_t *ys)
{
    pl_io i = {.name = in, .tensor = {.data = x, .ndim = nd, .dtype = PL_DTYPE_F32, .shape = xs,
                                      .struct_size = sizeof(pl_tensor)}};
    pl_io o = {.name = out, .tensor = {.data = y, .ndim = ond, .dtype = PL_DTYPE_F32,
                                       .shape = ys, .struct_size = sizeof(pl_tensor)}};
    TH_CHECK_OK(pl_session_run(s, &i, 1, &o, 1));
}

static size_t count(int nd, const int64_t *d)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= (size_t)d[i];
    return n;
}

/* The backend node NODE runs on in explain ROOT, and in *WHY (when not
 * NULL) the onednn module's reason for leaving it, NULL for none. */
static const char *placed_on(json_t *root, const char *node, const char **why)
{
    json_t *p = th_placement_of(root, node);
    if (why != NULL)
        *why = json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
    return json_string_value(json_object_get(p, "backend"));
}

/* Whether TEXT contains one of the '|'-separated ALTERNATIVES. */
static bool names_one_of(const char *text, const char *alternatives)
{
    for (const char *a = alternatives;;) {
        const char *bar = strchr(a, '|');
        size_t n = bar != NULL ? (size_t)(bar - a) : strlen(a);
        for (const char *t = text; (t = strchr(t, a[0])) != NULL; t++)
            if (strncmp(t, a, n) == 0)
                return true;
        if (bar == NULL)
            return false;
        a = bar + 1;
    }
}

/* That node NODE of PATH, with onednn first, runs on cpu because the onednn
 * module refused it with a reason naming each of WANT (NULL-terminated; an
 * entry may list alternatives separated by '|'); LABEL names the case in a
 * failure. */
static void check_refused(const char *path, const char *node, const char *const *want,
                          const char *label)
{
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    const char *why = NULL, *backend = placed_on(root, node, &why);
    TH_CHECK(strcmp(backend, "cpu") == 0, "%s: node %s ran on %s", label, node, backend);
    TH_CHECK(why != NULL && strncmp(why, "onednn: ", 8) == 0, "%s: reason '%s'", label,
             why ? why : "(none)");
    for (size_t i = 0; want[i] != NULL; i++)
        TH_CHECK(names_one_of(why, want[i]), "%s: reason '%s', expected one naming '%s'", label,
                 why, want[i]);
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* Runs PATH on onednn+cpu and on cpu alone with the same input, checks the
 * outputs agree within 1e-4 relative, and that every node named in
 * ON_ONEDNN (NULL-terminated) ran on onednn. */
/* The absolute part of compare's tolerance, as a fraction of the largest
 * output: Winograd's F(4x4, 3x3) rounds to a few millionths of it. */
static double compare_floor = 0.0;

static void compare(const char *path, int nd, int64_t *xs, int ond, int64_t *ys,
                    const char *const *on_onednn)
{
    size_t nx = count(nd, xs), ny = count(ond, ys);
    float *x = malloc(nx * sizeof *x), *y1 = calloc(ny, sizeof *y1), *y2 = calloc(ny, sizeof *y2);
    TH_CHECK(x && y1 && y2, "out of memory");
    uint32_t seed = 99;
    for (size_t i = 0; i < nx; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    pl_runtime *rd = onednn_runtime(), *rc = runtime_with("cpu");
    pl_session *sd = session_for(rd, path), *sc = session_for(rc, path);
    json_t *root = th_explain(sd);
    for (size_t i = 0; on_onednn != NULL && on_onednn[i] != NULL; i++) {
        const char *why = NULL, *backend = placed_on(root, on_onednn[i], &why);
        TH_CHECK(strcmp(backend, "onednn") == 0, "node %s ran on %s (onednn said: %s)",
                 on_onednn[i], backend, why);
    }
    json_decref(root);
    for (int rep = 0; rep < 3; rep++) { /* repeated runs reuse the arena */
        run_one(sd, "x", x, nd, xs, "y", y1, ond, ys);
        run_one(sc, "x", x, nd, xs, "y", y2, ond, ys);
        double scale = 0;
        for (size_t i = 0; i < ny; i++)
            scale = fmax(scale, fabs(y2[i]));
        for (size_t i = 0; i < ny; i++)
            TH_CHECK(fabs(y1[i] - y2[i]) <=
                         1e-4 * fmax(fabs(y2[i]), 1e-2 * scale) + 1e-6 + compare_floor * scale,
                     "y[%zu] = %.9g on onednn, %.9g on cpu", i, y1[i], y2[i]);
    }
    pl_session_destroy(sd);
    pl_session_destroy(sc);
    pl_runtime_destroy(rd);
    pl_runtime_destroy(rc);
    free(x);
    free(y1);
    free(y2);
}

/* ---- the models -------------------------------------------------------------- */

static const char *model_conv_residual(void)
{
    struct mb m = {.seed = 1};
    int64_t xs[] = {1, 16, 14, 14}, ws[] = {16, 16, 3, 3}, bs[] = {16}, w3[] = {32, 16, 3, 3},
            b3[] = {32};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, ws, NULL, 0.1f);
    mb_const(&m, "b1", 1, bs, NULL, 0.1f);
    mb_const(&m, "w2", 4, ws, NULL, 0.1f);
    mb_const(&m, "b2", 1, bs, NULL, 0.1f);
    mb_const(&m, "w3", 4, w3, NULL, 0.1f);
    mb_const(&m, "b3", 1, b3, NULL, 0.1f);
    const char *p1 = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "conv1", "Conv", "\"x\",\"w1\",\"b1\"", "c1", p1);
    mb_node(&m, "relu1", "Relu", "\"c1\"", "r1", "");
    mb_node(&m, "conv2", "Conv", "\"r1\",\"w2\",\"b2\"", "c2", p1);
    mb_node(&m, "add", "Add", "\"c2\",\"x\"", "s", "");
    mb_node(&m, "relu2", "Relu", "\"s\"", "r2", "");
    mb_node(&m, "conv3", "Conv", "\"r2\",\"w3\",\"b3\"", "y",
            "\"auto_pad\":{\"string\":\"SAME_UPPER\"},\"strides\":{\"ints\":[2,2]}");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_conv_residual(void)
{
    int64_t xs[] = {1, 16, 14, 14}, ys[] = {1, 32, 7, 7};
    compare(model_conv_residual(), 4, xs, 4, ys,
            (const char *[]){"conv1", "relu1", "conv2", "add", "relu2", "conv3", NULL});
}

/* Residual Adds whose residual nothing reads later (a, then s1 in the same
 * bytes) are summed in place; those whose residual the convolution reads
 * (s2) or a later node reads (s3) are copied first. Both paths must agree
 * with the cpu module. */
static const char *model_residual_in_place(void)
{
    struct mb m = {.seed = 11};
    int64_t xs[] = {1, 16, 14, 14}, ws[] = {16, 16, 3, 3}, bs[] = {16};
    mb_input(&m, "x", 4, xs);
    const char *names[] = {"w0", "wa1", "wa2", "wb1", "wb2", "wc", "wd1", "wd2"};
    char bname[8];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        mb_const(&m, names[i], 4, ws, NULL, 0.1f);
        snprintf(bname, sizeof bname, "b%zu", i);
        mb_const(&m, bname, 1, bs, NULL, 0.1f);
    }
    const char *p1 = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "conv0", "Conv", "\"x\",\"w0\",\"b0\"", "a", p1);
    mb_node(&m, "conva1", "Conv", "\"a\",\"wa1\",\"b1\"", "ta", p1);
    mb_node(&m, "relua", "Relu", "\"ta\"", "ra", "");
    mb_node(&m, "conva2", "Conv", "\"ra\",\"wa2\",\"b2\"", "ca", p1);
    mb_node(&m, "adda", "Add", "\"ca\",\"a\"", "s1", "");
    mb_node(&m, "convb1", "Conv", "\"s1\",\"wb1\",\"b3\"", "tb", p1);
    mb_node(&m, "relub", "Relu", "\"tb\"", "rb", "");
    mb_node(&m, "convb2", "Conv", "\"rb\",\"wb2\",\"b4\"", "cb", p1);
    mb_node(&m, "addb", "Add", "\"s1\",\"cb\"", "s2", "");
    mb_node(&m, "convc", "Conv", "\"s2\",\"wc\",\"b5\"", "cc", p1);
    mb_node(&m, "addc", "Add", "\"cc\",\"s2\"", "s3", "");
    mb_node(&m, "convd1", "Conv", "\"s3\",\"wd1\",\"b6\"", "td", p1);
    mb_node(&m, "relud", "Relu", "\"td\"", "rd", "");
    mb_node(&m, "convd2", "Conv", "\"rd\",\"wd2\",\"b7\"", "cd", p1);
    mb_node(&m, "addd", "Add", "\"cd\",\"s3\"", "s4", "");
    mb_node(&m, "adde", "Add", "\"s4\",\"s3\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_residual_in_place(void)
{
    int64_t xs[] = {1, 16, 14, 14}, ys[] = {1, 16, 14, 14};
    compare(model_residual_in_place(), 4, xs, 4, ys,
            (const char *[]){"conv0", "conva2", "adda", "convb2", "addb", "convc", "addc",
                             "convd2", "addd", "adde", NULL});
}

static void case_depthwise_clip(void)
{
    struct mb m = {.seed = 2};
    int64_t xs[] = {1, 32, 15, 15}, dw[] = {32, 1, 3, 3}, b[] = {32}, pw[] = {16, 32, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "dw", 4, dw, NULL, 0.3f);
    mb_const(&m, "db", 1, b, NULL, 0.1f);
    mb_const(&m, "pw", 4, pw, NULL, 0.2f);
    mb_scalar(&m, "lo", 0.0f);
    mb_scalar(&m, "hi", 0.5f);
    mb_node(&m, "dwconv", "Conv", "\"x\",\"dw\",\"db\"", "d",
            "\"group\":{\"int\":32},\"pads\":{\"ints\":[1,1,1,1]},\"strides\":{\"ints\":[2,2]}");
    mb_node(&m, "clip", "Clip", "\"d\",\"lo\",\"hi\"", "c", "");
    mb_node(&m, "pwconv", "Conv", "\"c\",\"pw\"", "p", "");
    mb_node(&m, "sig", "Sigmoid", "\"p\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 16, 8, 8};
    compare(mb_write(&m), 4, xs, 4, ys,
            (const char *[]){"dwconv", "clip", "pwconv", "sig", NULL});
}

/* PRelu as TFLite's MediaPipe models and InsightFace's networks write it:
 * one slope per channel ([1, C, 1, 1] after a Conv and after a residual
 * Add that joins its Conv as a sum, [C, 1, 1] after a max pool of a plain
 * source), and one slope for all (a leaky ReLU); 24 channels, so blocked
 * with padding. Before, onednn refused PRelu and cut MediaPipe's face
 * landmark model into 23 subgraphs (7.1 ms a run against ONNX Runtime's
 * 2.3; one subgraph now, 0.9). Slopes are mixed in sign. */
static void case_prelu(void)
{
    struct mb m = {.seed = 12};
    int64_t xs[] = {1, 24, 14, 14}, ws[] = {24, 24, 3, 3}, dw[] = {24, 1, 3, 3}, bs[] = {24},
            s4[] = {1, 24, 1, 1}, s3[] = {24, 1, 1}, s1[] = {1};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, ws, NULL, 0.2f);
    mb_const(&m, "b1", 1, bs, NULL, 0.1f);
    mb_const(&m, "dw", 4, dw, NULL, 0.5f);
    mb_const(&m, "w2", 4, ws, NULL, 0.2f);
    mb_const(&m, "a1", 4, s4, NULL, 1.0f);
    mb_const(&m, "a2", 4, s4, NULL, 1.0f);
    mb_const(&m, "a3", 3, s3, NULL, 1.0f);
    mb_const(&m, "a4", 1, s1, (const float[]){0.2f}, 1.0f);
    const char *p1 = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "conv1", "Conv", "\"x\",\"w1\",\"b1\"", "c1", p1);
    mb_node(&m, "prelu1", "PRelu", "\"c1\",\"a1\"", "p1", "");
    mb_node(&m, "dwconv", "Conv", "\"p1\",\"dw\"", "d", "\"group\":{\"int\":24},\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "conv2", "Conv", "\"d\",\"w2\"", "c2", p1);
    mb_node(&m, "add", "Add", "\"c2\",\"p1\"", "s", "");
    mb_node(&m, "prelu2", "PRelu", "\"s\",\"a2\"", "p2", "");
    mb_node(&m, "pool", "MaxPool", "\"p2\"", "q",
            "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}");
    mb_node(&m, "prelu3", "PRelu", "\"q\",\"a3\"", "p3", "");
    mb_node(&m, "prelu4", "PRelu", "\"p3\",\"a4\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 24, 7, 7};
    compare(mb_write(&m), 4, xs, 4, ys,
            (const char *[]){"conv1", "prelu1", "dwconv", "conv2", "add", "prelu2", "pool",
                             "prelu3", "prelu4", NULL});
}

/* Squeeze-and-excitation: Conv (channels blocked by 16 in oneDNN; 24 of
 * them, so padded) → GlobalAveragePool → 1x1 Conv → Sigmoid → Mul back
 * into the blocked tensor with a [1, C, 1, 1] second source. That Mul went
 * to oneDNN's reference binary (plain beside blocked) until the scale was
 * reordered into the same blocking; the results must stay cpu's. */
static void case_squeeze_excite(void)
{
    static const int channels[] = {24, 32};
    for (int k = 0; k < 2; k++) {
        int64_t c = channels[k];
        struct mb m = {.seed = 20 + (unsigned)k};
        int64_t xs[] = {1, 16, 9, 9}, w[] = {c, 16, 3, 3}, se[] = {c, c, 1, 1}, bc[] = {1, c, 1, 1};
        mb_input(&m, "x", 4, xs);
        mb_const(&m, "w", 4, w, NULL, 0.2f);
        mb_const(&m, "sw", 4, se, NULL, 0.3f);
        mb_const(&m, "cb", 4, bc, NULL, 0.5f);
        mb_node(&m, "conv", "Conv", "\"x\",\"w\"", "a", "\"pads\":{\"ints\":[1,1,1,1]}");
        mb_node(&m, "gap", "GlobalAveragePool", "\"a\"", "g", "");
        mb_node(&m, "sconv", "Conv", "\"g\",\"sw\"", "h", "");
        mb_node(&m, "sig", "Sigmoid", "\"h\"", "s", "");
        mb_node(&m, "scale", "Mul", "\"a\",\"s\"", "p", "");
        mb_node(&m, "shift", "Add", "\"p\",\"cb\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        int64_t ys[] = {1, c, 9, 9};
        compare(mb_write(&m), 4, xs, 4, ys,
                (const char *[]){"conv", "gap", "sconv", "sig", "scale", "shift", NULL});
    }
}

/* The decomposed normalisation over axis 1 of tensor "a" into "n" (nodes
 * mean, sub, pow, var, addeps, sqrt, div; eps 1e-6), as PyTorch exports
 * LayerNorm2d before its affine part. */
static void mb_channel_norm(struct mb *m)
{
    mb_scalar(m, "eps", 1e-6f);
    mb_scalar(m, "two", 2.0f);
    mb_node(m, "mean", "ReduceMean", "\"a\"", "mu", "\"axes\":{\"ints\":[1]}");
    mb_node(m, "sub", "Sub", "\"a\",\"mu\"", "d", "");
    mb_node(m, "pow", "Pow", "\"d\",\"two\"", "d2", "");
    mb_node(m, "var", "ReduceMean", "\"d2\"", "v", "\"axes\":{\"ints\":[1]}");
    mb_node(m, "addeps", "Add", "\"v\",\"eps\"", "ve", "");
    mb_node(m, "sqrt", "Sqrt", "\"ve\"", "sd", "");
    mb_node(m, "div", "Div", "\"d\",\"sd\"", "n", "");
}

/* LayerNorm across channels, as exporters decompose it (convnext's
 * LayerNorm2d) but without its gamma and beta, so not the pattern:
 * ReduceMean over axis 1, Sub and Div by the [1, 1, H, W] results. oneDNN
 * runs such means only with its reference implementation (10-100x
 * slower); the module emits them as products by a constant vector
 * (case_reduce_middle), so the whole block is one subgraph; the Sub and
 * Div it takes as [16, 64] - [1, 64] in merged dims
 * (odnn_binary_collapse). The results stay cpu's. */
static void case_channel_layernorm(void)
{
    struct mb m = {.seed = 30};
    int64_t xs[] = {1, 16, 8, 8}, w[] = {24, 16, 3, 3}, w2[] = {16, 24, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, w, NULL, 0.2f);
    mb_const(&m, "w2", 4, w2, NULL, 0.3f);
    mb_node(&m, "conv", "Conv", "\"x\",\"w\"", "a", "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_channel_norm(&m);
    mb_node(&m, "conv2", "Conv", "\"n\",\"w2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 16, 8, 8};
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys, (const char *[]){"conv", "mean", "var", "conv2", NULL});
}

static const char *model_matmul_gelu(void)
{
    struct mb m = {.seed = 3};
    int64_t xs[] = {2, 8, 32}, w1[] = {32, 64}, b1[] = {64}, w2[] = {64, 32};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w1", 2, w1, NULL, 0.3f);
    mb_const(&m, "b1", 1, b1, NULL, 0.1f);
    mb_const(&m, "w2", 2, w2, NULL, 0.2f);
    mb_scalar(&m, "sqrt2", 1.4142135f);
    mb_scalar(&m, "one", 1.0f);
    mb_scalar(&m, "half", 0.5f);
    mb_node(&m, "mm1", "MatMul", "\"x\",\"w1\"", "a", "");
    mb_node(&m, "bias", "Add", "\"b1\",\"a\"", "h", "");
    mb_node(&m, "div", "Div", "\"h\",\"sqrt2\"", "g1", "");
    mb_node(&m, "erf", "Erf", "\"g1\"", "g2", "");
    mb_node(&m, "add1", "Add", "\"g2\",\"one\"", "g3", "");
    mb_node(&m, "mulx", "Mul", "\"h\",\"g3\"", "g4", "");
    mb_node(&m, "mulh", "Mul", "\"g4\",\"half\"", "g", "");
    mb_node(&m, "mm2", "MatMul", "\"g\",\"w2\"", "o", "");
    mb_node(&m, "res", "Add", "\"o\",\"x\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_matmul_gelu(void)
{
    int64_t xs[] = {2, 8, 32};
    compare(model_matmul_gelu(), 3, xs, 3, xs,
            (const char *[]){"mm1", "bias", "erf", "mulh", "mm2", "res", NULL});
}

/* GELU's tanh form (GPT-2's gelu_new) as one gelu_tanh where oneDNN has
 * AVX-512 (a post-op of the MatMul), below it as the module's own kernel
 * (odnn_gelu_tanh_run): x^3 as Pow(x, 3) after a MatMul, and as
 * Mul(Mul(x, x), x) on the graph input, with the 0.5 on x first. 16770
 * values: the kernel's team of threads and its tail after the last 8. */
static void case_gelu_tanh(void)
{
    struct mb m = {.seed = 41};
    int64_t xs[] = {2, 65, 129}, w[] = {129, 129};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 2, w, NULL, 0.3f);
    mb_scalar(&m, "three", 3.0f);
    mb_scalar(&m, "c", 0.044715f);
    mb_scalar(&m, "k", 0.7978845608f);
    mb_scalar(&m, "one", 1.0f);
    mb_scalar(&m, "half", 0.5f);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
    mb_node(&m, "cube", "Pow", "\"h\",\"three\"", "h3", "");
    mb_node(&m, "c3", "Mul", "\"h3\",\"c\"", "hc", "");
    mb_node(&m, "inner", "Add", "\"h\",\"hc\"", "hi", "");
    mb_node(&m, "scale", "Mul", "\"hi\",\"k\"", "hk", "");
    mb_node(&m, "tanh", "Tanh", "\"hk\"", "ht", "");
    mb_node(&m, "plus1", "Add", "\"ht\",\"one\"", "h1", "");
    mb_node(&m, "byx", "Mul", "\"h\",\"h1\"", "hx", "");
    mb_node(&m, "half", "Mul", "\"hx\",\"half\"", "g1", "");
    mb_node(&m, "sq", "Mul", "\"x\",\"x\"", "x2", "");
    mb_node(&m, "cu", "Mul", "\"x2\",\"x\"", "x3", "");
    mb_node(&m, "c3b", "Mul", "\"c\",\"x3\"", "xc", "");
    mb_node(&m, "innerb", "Add", "\"xc\",\"x\"", "xi", "");
    mb_node(&m, "scaleb", "Mul", "\"k\",\"xi\"", "xk", "");
    mb_node(&m, "tanhb", "Tanh", "\"xk\"", "xt", "");
    mb_node(&m, "plus1b", "Add", "\"one\",\"xt\"", "x1", "");
    mb_node(&m, "halfx", "Mul", "\"x\",\"half\"", "xh", "");
    mb_node(&m, "byxb", "Mul", "\"xh\",\"x1\"", "g2", "");
    mb_node(&m, "sum", "Add", "\"g1\",\"g2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 3, xs, 3, xs,
            (const char *[]){"mm", "cube", "tanh", "half", "sq", "tanhb", "byxb", "sum", NULL});
}

/* Where as the module's own select, in the three places transformers put
 * it: a constant causal mask over scores with a scalar fill (GPT-2), a bool
 * mask made outside the subgraph (a cpu Greater: DistilBERT's attention
 * mask) broadcast over the heads with a row of fills, and a constant
 * condition choosing between a constant and the values (DeBERTa). Every
 * Where runs on onednn and agrees with the cpu module. */
static void case_where(void)
{
    struct mb m = {.seed = 53};
    int64_t xs[] = {2, 3, 8, 8}, cs[] = {1, 1, 8, 8}, rs[] = {8},
            ks[] = {3, 1, 1};
    uint8_t causal[64], keep[3];
    for (int i = 0; i < 64; i++)
        causal[i] = i % 8 <= i / 8;
    for (int i = 0; i < 3; i++)
        keep[i] = i != 1;
    mb_input(&m, "x", 4, xs);
    mb_raw(&m, "causal", "bool", 4, cs, causal, sizeof causal);
    mb_raw(&m, "keep", "bool", 3, ks, keep, sizeof keep);
    mb_scalar(&m, "fill", -1e9f);
    mb_scalar(&m, "zero", 0.0f);
    mb_const(&m, "row", 1, rs, NULL, 1.0f);
    mb_const(&m, "other", 4, xs, NULL, 1.0f);
    mb_const(&m, "w", 2, (int64_t[]){8, 8}, NULL, 0.3f);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "s", "");
    mb_node(&m, "mask", "Where", "\"causal\",\"s\",\"fill\"", "sm", "");
    mb_node(&m, "sm", "Softmax", "\"sm\"", "p", "\"axis\":{\"int\":-1}");
    mb_node(&m, "slice_x", "ReduceMean", "\"x\"", "xm", "\"axes\":{\"ints\":[1,2]}");
    mb_node(&m, "gt", "Greater", "\"xm\",\"zero\"", "g", "");
    mb_node(&m, "pad_mask", "Where", "\"g\",\"p\",\"row\"", "pm", "");
    mb_node(&m, "choose", "Where", "\"keep\",\"pm\",\"other\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 4, xs, 4, xs,
            (const char *[]){"mm", "mask", "sm", "pad_mask", "choose", NULL});
}

/* tf2onnx's layout around a convolution: an NHWC input transposed to NCHW
 * (a strided view, reordered straight into the convolution's blocked
 * layout), the result transposed back and scaled per channel; and a
 * ConvTranspose reading such a view too. */
static void case_conv_of_transposed(void)
{
    struct mb m = {.seed = 43};
    int64_t xs[] = {1, 7, 6, 8}, w[] = {8, 8, 3, 3}, sc[] = {8}, wt[] = {8, 4, 2, 2};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, w, NULL, 0.3f);
    mb_const(&m, "s", 1, sc, NULL, 1.0f);
    mb_const(&m, "wt", 4, wt, NULL, 0.3f);
    mb_node(&m, "to_nchw", "Transpose", "\"x\"", "t", "\"perm\":{\"ints\":[0,3,1,2]}");
    mb_node(&m, "conv", "Conv", "\"t\",\"w\"", "c", "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "relu", "Relu", "\"c\"", "r", "");
    mb_node(&m, "to_nhwc", "Transpose", "\"r\"", "n", "\"perm\":{\"ints\":[0,2,3,1]}");
    mb_node(&m, "scale", "Mul", "\"n\",\"s\"", "ns", "");
    mb_node(&m, "back", "Transpose", "\"ns\"", "b", "\"perm\":{\"ints\":[0,3,1,2]}");
    mb_node(&m, "up", "ConvTranspose", "\"b\",\"wt\"", "y",
            "\"strides\":{\"ints\":[2,2]}");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 4, 14, 12};
    compare(mb_write(&m), 4, xs, 4, ys,
            (const char *[]){"to_nchw", "conv", "relu", "to_nhwc", "scale", "back", "up", NULL});
}

static void case_layernorm(void)
{
    struct mb m = {.seed = 4, .opset = 17};
    int64_t xs[] = {4, 10, 48}, c[] = {48};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "gamma", 1, c, NULL, 1.0f);
    mb_const(&m, "beta", 1, c, NULL, 0.5f);
    mb_node(&m, "ln", "LayerNormalization", "\"x\",\"gamma\",\"beta\"", "l",
            "\"epsilon\":{\"float\":1e-5}");
    mb_node(&m, "tanh", "Tanh", "\"l\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 3, xs, 3, xs, (const char *[]){"ln", "tanh", NULL});
}

static void case_softmax(void)
{
    struct mb m = {.seed = 5};
    int64_t xs[] = {2, 8, 16}, shape[] = {2};
    int64_t shp[2] = {2, 64};
    mb_input(&m, "x", 3, xs);
    mb_scalar(&m, "four", 4.0f);
    /* the Reshape target as i64 would need an i64 constant; use Flatten */
    (void)shape;
    (void)shp;
    mb_node(&m, "tr", "Transpose", "\"x\"", "xt", "\"perm\":{\"ints\":[0,2,1]}");
    mb_node(&m, "qk", "MatMul", "\"x\",\"xt\"", "s", "");
    mb_node(&m, "scale", "Div", "\"s\",\"four\"", "s2", "");
    mb_node(&m, "sm", "Softmax", "\"s2\"", "p", "\"axis\":{\"int\":-1}");
    mb_node(&m, "flat", "Flatten", "\"p\"", "y", "\"axis\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {2, 64};
    compare(mb_write(&m), 3, xs, 2, ys,
            (const char *[]){"tr", "qk", "scale", "sm", "flat", NULL});
}

static void case_pooling(void)
{
    struct mb m = {.seed = 6};
    int64_t xs[] = {1, 8, 17, 17}, w[] = {10, 8}, b[] = {10};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 2, w, NULL, 0.3f);
    mb_const(&m, "b", 1, b, NULL, 0.1f);
    mb_node(&m, "maxpool", "MaxPool", "\"x\"", "m",
            "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[2,2]},"
            "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "avgpool", "AveragePool", "\"m\"", "a",
            "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]},"
            "\"ceil_mode\":{\"int\":1}");
    mb_node(&m, "gap", "GlobalAveragePool", "\"a\"", "g", "");
    mb_node(&m, "flat", "Flatten", "\"g\"", "f", "");
    mb_node(&m, "fc", "Gemm", "\"f\",\"w\",\"b\"", "y",
            "\"transB\":{\"int\":1},\"alpha\":{\"float\":0.5}");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 10};
    compare(mb_write(&m), 4, xs, 2, ys,
            (const char *[]){"maxpool", "avgpool", "gap", "flat", "fc", NULL});
}

/* Pools whose source is plain (a graph input), which onednn runs in
 * oneDNN's JIT kernels instead of its nchw loops: an AveragePool counting
 * the padding on 12 channels (a blocked layout with a padded last block)
 * and a GlobalAveragePool as a mean reduction, broadcast-added. */
static void case_pool_plain_sources(void)
{
    struct mb m = {.seed = 31};
    int64_t xs[] = {1, 12, 9, 9};
    mb_input(&m, "x", 4, xs);
    mb_node(&m, "gap", "GlobalAveragePool", "\"x\"", "g", "");
    mb_node(&m, "avgpool", "AveragePool", "\"x\"", "a",
            "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[2,2]},"
            "\"pads\":{\"ints\":[1,1,1,1]},\"count_include_pad\":{\"int\":1}");
    mb_node(&m, "sum", "Add", "\"a\",\"g\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 12, 5, 5};
    compare(mb_write(&m), 4, xs, 4, ys, (const char *[]){"gap", "avgpool", "sum", NULL});
}

/* A Concat that writes a graph output: no source is taken in place, each
 * is copied into its piece (the graph input twice, a ReLU's result, and a
 * blocked convolution result). */
static void case_concat_to_output(void)
{
    struct mb m = {.seed = 37};
    int64_t xs[] = {1, 8, 6, 5}, w[] = {8, 8, 3, 3};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, w, NULL, 0.3f);
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "conv", "Conv", "\"x\",\"w\"", "c", "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "cat", "Concat", "\"x\",\"r\",\"x\",\"c\"", "y", "\"axis\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 32, 6, 5};
    compare(mb_write(&m), 4, xs, 4, ys, (const char *[]){"relu", "conv", "cat", NULL});
}

static void case_concat(void)
{
    struct mb m = {.seed = 7};
    int64_t xs[] = {1, 8, 10, 10}, wa[] = {16, 8, 1, 1}, wb[] = {16, 8, 3, 3}, c[] = {32};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "wa", 4, wa, NULL, 0.3f);
    mb_const(&m, "wb", 4, wb, NULL, 0.2f);
    mb_const(&m, "scale", 1, c, NULL, 1.0f);
    mb_const(&m, "bias", 1, c, NULL, 0.2f);
    mb_const(&m, "mean", 1, c, NULL, 0.1f);
    float var[32];
    for (int i = 0; i < 32; i++)
        var[i] = 0.5f + 0.03f * (float)i;
    mb_const(&m, "var", 1, c, var, 1);
    mb_node(&m, "ca", "Conv", "\"x\",\"wa\"", "a", "");
    mb_node(&m, "cb", "Conv", "\"x\",\"wb\"", "b", "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "cat", "Concat", "\"a\",\"b\"", "cc", "\"axis\":{\"int\":1}");
    mb_node(&m, "bn", "BatchNormalization", "\"cc\",\"scale\",\"bias\",\"mean\",\"var\"", "n",
            "");
    mb_node(&m, "relu", "Relu", "\"n\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 32, 10, 10};
    compare(mb_write(&m), 4, xs, 4, ys, (const char *[]){"ca", "cb", "cat", "bn", "relu", NULL});
}

/* Sin (no oneDNN primitive) is refused, with a reason explain shows; the
 * model still runs (Sin on cpu) and agrees. */
static void case_explain_refusal(void)
{
    struct mb m = {.seed = 8};
    int64_t xs[] = {4, 16};
    mb_input(&m, "x", 2, xs);
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "sin", "Sin", "\"r\"", "e", "");
    mb_node(&m, "exp", "Exp", "\"e\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    json_t *p = th_placement_of(root, "sin");
    TH_CHECK(strcmp(json_string_value(json_object_get(p, "backend")), "cpu") == 0,
             "Sin ran on %s", json_string_value(json_object_get(p, "backend")));
    const char *why = json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
    TH_CHECK(why != NULL && strncmp(why, "onednn: Sin: ", 13) == 0, "reason: %s",
             why ? why : "(none)");
    TH_CHECK(strcmp(json_string_value(json_object_get(th_placement_of(root, "relu"), "backend")),
                    "onednn") == 0,
             "Relu not on onednn");
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    compare(path, 2, xs, 2, xs, (const char *[]){"relu", "exp", NULL});
}

/* ---- export and import through the module's table ----------------------------- */

struct blob {
    unsigned char *bytes;
    size_t n, cap;
};

static void blob_sink(void *ctx, const void *bytes, size_t n)
{
    struct blob *b = ctx;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->bytes = realloc(b->bytes, b->cap);
        TH_CHECK(b->bytes != NULL, "out of memory");
    }
    memcpy(b->bytes + b->n, bytes, n);
    b->n += n;
}

struct direct {
    pl_runtime *rt;
    pl_module *m;
    const pl_module_api *api;
    pl_model *model;
    pl_graph_view *view;
};

/* The onednn module of a runtime and a view of every node of PATH. */
static struct direct direct_open(const char *path)
{
    struct direct d = {0};
    d.rt = onednn_runtime();
    d.m = d.rt->modules[pl_runtime_find_module(d.rt, "onednn")];
    d.api = &d.m->api;
    TH_CHECK_OK(pl_model_load(d.rt, path, &d.model));
    TH_CHECK_OK(pl_graph_view_create(d.model->graph, NULL, 0, &d.view));
    return d;
}

static void direct_close(struct direct *d)
{
    pl_graph_view_destroy(d->view);
    pl_model_destroy(d->model);
    pl_runtime_destroy(d->rt);
}

/* Runs compiled C of the MLP-with-GELU model on input X into Y. */
static void direct_run(struct direct *d, pl_compiled *c, float *x, float *y)
{
    int64_t xs[] = {2, 8, 32};
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
    pl_tensor in = {.data = x, .ndim = 3, .dtype = PL_DTYPE_F32, .shape = xs,
                    .struct_size = sizeof(pl_tensor), .device = {PL_DEVICE_CPU, 0}};
    pl_tensor out = in;
    out.data = y - 3; /* byte_offset is honoured */
    out.byte_offset = 3 * sizeof(float);
    pl_run_args a = {.header = PL_ABI_HEADER_INIT(pl_run_args), .run = &rc, .n_inputs = 1,
                     .inputs = &in, .n_outputs = 1, .outputs = &out};
    TH_CHECK_OK(d->api->run(d->m->ctx, c, &a));
}

static void check_error(pl_status *st, pl_code code, const char *text, int line)
{
    TH_CHECK(st != NULL, "line %d: expected %s, got success", line, pl_code_name(code));
    TH_CHECK(pl_status_code(st) == code && strstr(pl_status_message(st), text) != NULL,
             "line %d: expected %s containing \"%s\", got %s: %s", line, pl_code_name(code),
             text, pl_code_name(pl_status_code(st)), pl_status_message(st));
    pl_status_free(st);
}
#define CHECK_ERROR(expr, code, text) check_error((expr), (code), (text), __LINE__)

/* The imported CI exports the very blob B it came from; then C, CI, B and
 * D are released. */
static void reexport_and_close(struct direct *d, pl_compiled *c, pl_compiled *ci,
                               struct blob *b)
{
    struct blob b2 = {0};
    TH_CHECK_OK(d->api->export_compiled(d->m->ctx, ci, blob_sink, &b2));
    TH_CHECK(b2.n == b->n && memcmp(b->bytes, b2.bytes, b->n) == 0, "re-export differs");
    d->api->release(d->m->ctx, c);
    d->api->release(d->m->ctx, ci);
    free(b->bytes);
    free(b2.bytes);
    direct_close(d);
}

static void case_export_import(void)
{
    struct direct d = direct_open(model_matmul_gelu());
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    TH_CHECK(b.n > 64 * 32 * 4, "blob of %zu bytes holds no weights", b.n);
    TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci));
    float x[2 * 8 * 32], y1[2 * 8 * 32 + 3], y2[2 * 8 * 32 + 3];
    for (int i = 0; i < 2 * 8 * 32; i++)
        x[i] = sinf((float)i * 0.37f);
    direct_run(&d, c, x, y1 + 3);
    direct_run(&d, ci, x, y2 + 3);
    TH_CHECK(memcmp(y1 + 3, y2 + 3, sizeof x) == 0, "imported subgraph computes otherwise");
    reexport_and_close(&d, c, ci, &b);
}

/* Rewrites the trailing checksum after a header change: the module's
 * pl_hash_bytes of everything before it. */
static void reseal(struct blob *b)
{
    uint64_t h = PL_HASH_SEED;
    pl_hash_bytes(&h, b->bytes, b->n - 8);
    memcpy(b->bytes + b->n - 8, &h, 8);
}

static void case_import_mismatch(void)
{
    struct direct d = direct_open(model_matmul_gelu());
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    d.api->release(d.m->ctx, c);
    unsigned char *orig = malloc(b.n);
    memcpy(orig, b.bytes, b.n);

    /* Another subgraph (the conv model). */
    struct direct other = direct_open(model_conv_residual());
    CHECK_ERROR(other.api->import_compiled(other.m->ctx, 0, other.view, b.bytes, b.n, &ci),
                PL_CODE_INCOMPATIBLE, "another subgraph");
    TH_CHECK(ci == NULL, "out_compiled set on failure");
    direct_close(&other);

    /* Header fields: module version at 16, oneDNN version at 48, ISA at 60,
     * each resealed so that only the field differs. */
    static const struct {
        size_t at;
        const char *text;
    } fields[] = {{16, "module version"}, {48, "oneDNN"}, {60, "CPU ISA"}, {8, "blob format"}};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        memcpy(b.bytes, orig, b.n);
        b.bytes[fields[k].at] ^= 0x5;
        reseal(&b);
        CHECK_ERROR(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci),
                    PL_CODE_INCOMPATIBLE, fields[k].text);
    }
    /* Malformed: bad magic, truncated, flipped weight byte, too short. */
    memcpy(b.bytes, orig, b.n);
    b.bytes[0] ^= 1;
    CHECK_ERROR(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci),
                PL_CODE_INVALID_ARGUMENT, "magic");
    memcpy(b.bytes, orig, b.n);
    CHECK_ERROR(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n - 100, &ci),
                PL_CODE_INVALID_ARGUMENT, "malformed");
    b.bytes[b.n - 200] ^= 0x40;
    CHECK_ERROR(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci),
                PL_CODE_INVALID_ARGUMENT, "checksum");
    CHECK_ERROR(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, 10, &ci),
                PL_CODE_INVALID_ARGUMENT, "malformed");
    /* Every truncation is refused, none crashes. */
    memcpy(b.bytes, orig, b.n);
    for (size_t len = 0; len < b.n; len += 1 + len / 8) {
        pl_status *st = d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, len, &ci);
        TH_CHECK(st != NULL, "truncated blob of %zu bytes accepted", len);
        pl_status_free(st);
    }
    /* The untouched blob still imports. */
    TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, orig, b.n, &ci));
    d.api->release(d.m->ctx, ci);
    free(orig);
    free(b.bytes);
    direct_close(&d);
}

/* LayerNormalization as PyTorch exports it before opset 17, with the
 * commutative operands swapped where allowed, gamma a view input produced
 * by Identity on cpu (as tied weights are exported), then a Split along the
 * last axis: onednn must take all of it and compile the nine normalisation
 * nodes into one layer_normalization step. */
/* Attention's heads from tensors q, k and v (shape constants "heads" and
 * "merged", scalar "scale"): Reshape to heads, Transpose (K to K^T),
 * Q x K^T, the scale, [Add MASK], Softmax, [IsNaN and Where(., "zero", p)
 * when SAFE], x V, Transpose and Reshape back into "om". */
static void mb_heads_with(struct mb *m, const char *mask, int safe)
{
    mb_node(m, "rq", "Reshape", "\"q\",\"heads\"", "q4", "");
    mb_node(m, "rk", "Reshape", "\"k\",\"heads\"", "k4", "");
    mb_node(m, "rv", "Reshape", "\"v\",\"heads\"", "v4", "");
    mb_node(m, "tq", "Transpose", "\"q4\"", "qt", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(m, "tk", "Transpose", "\"k4\"", "kt", "\"perm\":{\"ints\":[0,2,3,1]}");
    mb_node(m, "tv", "Transpose", "\"v4\"", "vt", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(m, "qk", "MatMul", "\"qt\",\"kt\"", "s", "");
    mb_node(m, "scaled", "Mul", "\"s\",\"scale\"", "s2", "");
    if (mask != NULL) {
        char in[64];
        snprintf(in, sizeof in, "\"s2\",\"%s\"", mask);
        mb_node(m, "masked", "Add", in, "s3", "");
    }
    mb_node(m, "sm", "Softmax", mask != NULL ? "\"s3\"" : "\"s2\"", safe ? "p0" : "p",
            "\"axis\":{\"int\":-1}");
    if (safe) {
        mb_node(m, "isnan", "IsNaN", "\"p0\"", "c", "");
        mb_node(m, "fill", "Where", "\"c\",\"zero\",\"p0\"", "p", "");
    }
    mb_node(m, "pv", "MatMul", "\"p\",\"vt\"", "o", "");
    mb_node(m, "to", "Transpose", "\"o\"", "ot", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(m, "ro", "Reshape", "\"ot\",\"merged\"", "om", "");
}

static void mb_heads(struct mb *m)
{
    mb_heads_with(m, NULL, 0);
}

/* Multi-head attention as exporters write it: one product for Q, K and V,
 * Split, Reshape to heads, Transpose, two batched products around a
 * Softmax, then Transpose and Reshape back and an output product (whose
 * bias is a constant: a residual from the graph input would be copied). */
static const char *model_attention(void)
{
    struct mb m = {.seed = 13};
    int64_t xs[] = {2, 6, 24}, wq[] = {24, 72}, bq[] = {72}, wo[] = {24, 24};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "wqkv", 2, wq, NULL, 0.3f);
    mb_const(&m, "bqkv", 1, bq, NULL, 0.1f);
    mb_const(&m, "wo", 2, wo, NULL, 0.3f);
    mb_const(&m, "bo", 1, (int64_t[]){24}, NULL, 0.1f);
    mb_scalar(&m, "scale", 0.28867513f);
    mb_shape(&m, "heads", 4, (int64_t[]){2, 6, 2, 12});
    mb_shape(&m, "merged", 3, (int64_t[]){2, 6, 24});
    mb_node(&m, "qkv", "MatMul", "\"x\",\"wqkv\"", "h", "");
    mb_node(&m, "qkv_bias", "Add", "\"h\",\"bqkv\"", "hb", "");
    mb_node(&m, "split", "Split", "\"hb\"", "q\",\"k\",\"v", "\"axis\":{\"int\":-1}");
    mb_heads(&m);
    mb_node(&m, "proj", "MatMul", "\"om\",\"wo\"", "pr", "");
    mb_node(&m, "proj_bias", "Add", "\"pr\",\"bo\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* The kinds of the steps of the blob of C (the fusion plan). */
static int count_steps(const struct blob *b, uint32_t kind, uint32_t *out_total);

/* The blob of the whole of PATH compiled by onednn directly. */
static struct blob compile_blob(const char *path)
{
    struct direct d = direct_open(path);
    pl_compiled *c = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    d.api->release(d.m->ctx, c);
    direct_close(&d);
    return b;
}

static bool onednn_avx512(char *isa);

/* ODNN_S_ATTN in onednn_subgraph.c's step kinds. */
#define TEST_ODNN_S_ATTN 37u
#define TEST_ODNN_S_NANFILL 38u
#define TEST_ODNN_S_BBIN 39u

static void case_attention(void)
{
    int64_t xs[] = {2, 6, 24};
    const char *path = model_attention();
    compare(path, 3, xs, 3, xs,
            (const char *[]){"qkv", "split", "rq", "tk", "qk", "sm", "pv", "to", "ro", "proj",
                             NULL});
    /* Split, Reshape and Transpose are views the products read through
     * strides, and the second product writes the merged-heads layout:
     * the plan copies nothing. With AVX-512 the attention is one step
     * (the module's fused kernel), else its two products and softmax. */
    char isa[64] = "";
    bool fused = onednn_avx512(isa);
    struct blob b = compile_blob(path);
    uint32_t total;
    int reorders = count_steps(&b, 1 /* ODNN_S_REORDER */, &total);
    TH_CHECK(reorders == 0, "%d reorders among %u steps", reorders, total);
    if (fused) {
        TH_CHECK(total == 3 && count_steps(&b, TEST_ODNN_S_ATTN, &total) == 1,
                 "%u steps, want qkv, the fused attention and proj (%s)", total, isa);
    } else {
        TH_CHECK(total == 5, "%u steps, want qkv, qk, softmax, pv and proj (%s)", total, isa);
    }
    free(b.bytes);
}

/* Views that cannot be read in place: a Transpose reshaped across its
 * permuted dims, a Split piece read by a Concat, and a graph output that
 * is a view at an offset (the second half of a Split). */
static void case_views_copied(void)
{
    struct mb m = {.seed = 17};
    int64_t xs[] = {2, 6, 24};
    mb_input(&m, "x", 3, xs);
    mb_shape(&m, "flat144", 2, (int64_t[]){2, 144});
    mb_shape(&m, "flat72", 2, (int64_t[]){2, 72});
    mb_shape(&m, "pair", 3, (int64_t[]){2, 2, 54});
    mb_node(&m, "t", "Transpose", "\"x\"", "xt", "\"perm\":{\"ints\":[0,2,1]}");
    mb_node(&m, "r", "Reshape", "\"xt\",\"flat144\"", "xr", "");
    mb_node(&m, "halves", "Split", "\"x\"", "s0\",\"s1", "\"axis\":{\"int\":1}");
    mb_node(&m, "f", "Reshape", "\"s1\",\"flat72\"", "sf", "");
    mb_node(&m, "cat", "Concat", "\"xr\",\"sf\"", "c", "\"axis\":{\"int\":1}");
    mb_node(&m, "act", "Tanh", "\"c\"", "ca", "");
    mb_node(&m, "quarters", "Split", "\"ca\"", "c0\",\"c1", "\"axis\":{\"int\":1}");
    mb_node(&m, "out", "Reshape", "\"c1\",\"pair\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {2, 2, 54};
    const char *path = mb_write(&m);
    compare(path, 3, xs, 3, ys,
            (const char *[]){"t", "r", "halves", "f", "cat", "act", "quarters", "out", NULL});
}

/* ConvTranspose: strides, pads and output_padding with a bias and a fused
 * Relu, then a grouped one with dilations and uneven pads; and one with
 * output_shape, which onednn leaves to cpu with its reason. */
static void case_conv_transpose(void)
{
    struct mb m = {.seed = 19};
    int64_t xs[] = {1, 8, 5, 6}, w1[] = {8, 4, 3, 3}, b1[] = {4}, w2[] = {4, 3, 2, 3};
    int64_t w3[] = {6, 2, 3, 3};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, w1, NULL, 0.3f);
    mb_const(&m, "b1", 1, b1, NULL, 0.1f);
    mb_const(&m, "w2", 4, w2, NULL, 0.3f);
    mb_const(&m, "w3", 4, w3, NULL, 0.3f);
    mb_node(&m, "up", "ConvTranspose", "\"x\",\"w1\",\"b1\"", "u",
            "\"strides\":{\"ints\":[2,2]},\"pads\":{\"ints\":[1,1,1,1]},"
            "\"output_padding\":{\"ints\":[1,1]}");
    mb_node(&m, "relu", "Relu", "\"u\"", "ur", "");
    mb_node(&m, "grouped", "ConvTranspose", "\"ur\",\"w2\"", "g",
            "\"group\":{\"int\":2},\"strides\":{\"ints\":[1,2]},"
            "\"dilations\":{\"ints\":[2,1]},\"pads\":{\"ints\":[0,1,0,0]}");
    mb_node(&m, "shaped", "ConvTranspose", "\"g\",\"w3\"", "y",
            "\"output_shape\":{\"ints\":[12,24]},\"pads\":{\"ints\":[1,1,1,1]}");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 2, 12, 24};
    compare(path, 4, xs, 4, ys, (const char *[]){"up", "relu", "grouped", NULL});
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    json_t *p = th_placement_of(root, "shaped");
    const char *why = json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
    TH_CHECK(strcmp(json_string_value(json_object_get(p, "backend")), "cpu") == 0 &&
                 why != NULL && strstr(why, "ConvTranspose: output_shape") != NULL,
             "output_shape ConvTranspose: backend %s, reason %s",
             json_string_value(json_object_get(p, "backend")), why ? why : "(none)");
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* UNet's upsampling: 2x2 stride-2 ConvTranspose on 16 channels (a blocked
 * layout), whose bias and fused nodes onednn applies in a binary add after
 * the bare deconvolution: one with its bias, a ReLU and the other one as a
 * residual (post-op sum), one without a bias whose following per-channel
 * Add is taken as the bias, then a Sigmoid. */
static void case_conv_transpose_epilogue(void)
{
    struct mb m = {.seed = 23};
    int64_t xs[] = {1, 16, 6, 7}, w[] = {16, 16, 2, 2}, bv[] = {16}, bc[] = {1, 16, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, w, NULL, 0.2f);
    mb_const(&m, "b1", 1, bv, NULL, 0.5f);
    mb_const(&m, "w2", 4, w, NULL, 0.2f);
    mb_const(&m, "c2", 4, bc, NULL, 0.5f);
    const char *k2s2 = "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}";
    mb_node(&m, "up2", "ConvTranspose", "\"x\",\"w2\"", "u2", k2s2);
    mb_node(&m, "bias2", "Add", "\"u2\",\"c2\"", "v2", "");
    mb_node(&m, "sig2", "Sigmoid", "\"v2\"", "s2", "");
    mb_node(&m, "up1", "ConvTranspose", "\"x\",\"w1\",\"b1\"", "u1", k2s2);
    mb_node(&m, "relu1", "Relu", "\"u1\"", "r1", "");
    mb_node(&m, "sum", "Add", "\"r1\",\"s2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 16, 12, 14};
    compare(path, 4, xs, 4, ys,
            (const char *[]){"up2", "bias2", "sig2", "up1", "relu1", "sum", NULL});
}

/* Weights over 2 MiB, which onednn moves into one block (not on huge
 * pages: too few bytes for them, ODNN_HUGE_MIN_BYTES) after compiling: the results, a repeated run, and an export/import round
 * trip (the blob is read from that block) must not notice. */
static void case_big_weights(void)
{
    struct mb m = {.seed = 29};
    int64_t xs[] = {4, 1024}, w1[] = {1024, 640}, b1[] = {640}, w2[] = {640, 16};
    mb_input(&m, "x", 2, xs);
    mb_const(&m, "w1", 2, w1, NULL, 0.05f);
    mb_const(&m, "b1", 1, b1, NULL, 0.1f);
    mb_const(&m, "w2", 2, w2, NULL, 0.1f);
    mb_node(&m, "fc1", "MatMul", "\"x\",\"w1\"", "h", "");
    mb_node(&m, "bias", "Add", "\"h\",\"b1\"", "hb", "");
    mb_node(&m, "relu", "Relu", "\"hb\"", "r", "");
    mb_node(&m, "fc2", "MatMul", "\"r\",\"w2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {4, 16};
    compare(path, 2, xs, 2, ys, (const char *[]){"fc1", "bias", "relu", "fc2", NULL});
    struct blob b = compile_blob(path);
    TH_CHECK(b.n > (size_t)1024 * 640 * 4, "blob of %zu bytes lacks the weights", b.n);
    struct direct d = direct_open(path);
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci));
    static float x[4 * 1024];
    float y1[64], y2[64];
    for (int i = 0; i < 4 * 1024; i++)
        x[i] = sinf((float)i * 0.11f);
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
    pl_tensor in = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32, .shape = xs,
                    .struct_size = sizeof(pl_tensor), .device = {PL_DEVICE_CPU, 0}};
    pl_tensor out = in;
    out.shape = ys;
    pl_run_args a = {.header = PL_ABI_HEADER_INIT(pl_run_args), .run = &rc, .n_inputs = 1,
                     .inputs = &in, .n_outputs = 1, .outputs = &out};
    out.data = y1;
    TH_CHECK_OK(d.api->run(d.m->ctx, c, &a));
    out.data = y2;
    TH_CHECK_OK(d.api->run(d.m->ctx, ci, &a));
    TH_CHECK(memcmp(y1, y2, sizeof y1) == 0, "the imported subgraph computes otherwise");
    reexport_and_close(&d, c, ci, &b);
}

/* ---- the reference models' shapes ---------------------------------------- */

/* LayerNormalization over the last axis as exporters write it: nine nodes
 * (PREFIX names them), from IN to OUT with GAMMA and BETA of C values. */
static void mb_layernorm(struct mb *m, const char *prefix, const char *in, const char *out,
                         int64_t c)
{
    char n[9][48], t[8][48], gamma[48], beta[48], ins[160];
    static const char *const ops[9] = {"ReduceMean", "Sub",  "Pow", "ReduceMean", "Add",
                                       "Sqrt",       "Div",  "Mul", "Add"};
    for (int i = 0; i < 9; i++)
        snprintf(n[i], sizeof n[i], "%s_%d", prefix, i);
    for (int i = 0; i < 8; i++)
        snprintf(t[i], sizeof t[i], "%s_t%d", prefix, i);
    snprintf(gamma, sizeof gamma, "%s_gamma", prefix);
    snprintf(beta, sizeof beta, "%s_beta", prefix);
    mb_const(m, gamma, 1, (int64_t[]){c}, NULL, 1.0f);
    mb_const(m, beta, 1, (int64_t[]){c}, NULL, 0.2f);
    const char *axes = "\"axes\":{\"ints\":[-1]}";
    snprintf(ins, sizeof ins, "\"%s\"", in);
    mb_node(m, n[0], ops[0], ins, t[0], axes);
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", in, t[0]);
    mb_node(m, n[1], ops[1], ins, t[1], "");
    snprintf(ins, sizeof ins, "\"%s\",\"ln_two\"", t[1]);
    mb_node(m, n[2], ops[2], ins, t[2], "");
    snprintf(ins, sizeof ins, "\"%s\"", t[2]);
    mb_node(m, n[3], ops[3], ins, t[3], axes);
    snprintf(ins, sizeof ins, "\"%s\",\"ln_eps\"", t[3]);
    mb_node(m, n[4], ops[4], ins, t[4], "");
    snprintf(ins, sizeof ins, "\"%s\"", t[4]);
    mb_node(m, n[5], ops[5], ins, t[5], "");
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", t[1], t[5]);
    mb_node(m, n[6], ops[6], ins, t[6], "");
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", t[6], gamma);
    mb_node(m, n[7], ops[7], ins, t[7], "");
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", t[7], beta);
    mb_node(m, n[8], ops[8], ins, out, "");
}

/* A linear layer: OUT = IN x W + B (W [K, N] and B made here). */
static void mb_linear(struct mb *m, const char *name, const char *in, const char *out, int64_t k,
                      int64_t n, float scale)
{
    char w[48], b[48], mm[48], t[48], ins[128];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(b, sizeof b, "%s_b", name);
    snprintf(mm, sizeof mm, "%s_mm", name);
    snprintf(t, sizeof t, "%s_t", name);
    mb_const(m, w, 2, (int64_t[]){k, n}, NULL, scale);
    mb_const(m, b, 1, (int64_t[]){n}, NULL, 0.1f);
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", in, w);
    mb_node(m, mm, "MatMul", ins, t, "");
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", t, b);
    mb_node(m, name, "Add", ins, out, "");
}

/* "l<L>_<WHAT>" in one of 16 rotating buffers (names for one call). */
static const char *lname(int l, const char *what)
{
    static char buf[16][48];
    static int k;
    char *b = buf[k++ % 16];
    snprintf(b, 48, "l%d_%s", l, what);
    return b;
}

/* "\"A\"" or "\"A\",\"B\"": a node's input list, in rotating buffers. */
static const char *ins2(const char *a, const char *b)
{
    static char buf[8][128];
    static int k;
    char *r = buf[k++ % 8];
    if (b != NULL)
        snprintf(r, 128, "\"%s\",\"%s\"", a, b);
    else
        snprintf(r, 128, "\"%s\"", a);
    return r;
}

/* bert_tiny's encoder layer as torch.onnx writes it (make_models.py's
 * EncoderLayer, post-LN), small: 2 x 16 tokens, d_model 32, 4 heads, FF 64;
 * two layers. */
static const char *model_bert_layers(void)
{
    struct mb m = {.seed = 31};
    int64_t xs[] = {2, 16, 32};
    mb_input(&m, "x", 3, xs);
    mb_scalar(&m, "ln_two", 2.0f);
    mb_scalar(&m, "ln_eps", 1e-5f);
    mb_scalar(&m, "scale", 0.35355339f);
    mb_scalar(&m, "sqrt2", 1.4142135f);
    mb_scalar(&m, "one", 1.0f);
    mb_scalar(&m, "half", 0.5f);
    mb_shape(&m, "heads", 4, (int64_t[]){2, 16, 4, 8});
    mb_shape(&m, "merged", 3, (int64_t[]){2, 16, 32});
    const char *in = "x";
    static const char *const perm_qv = "\"perm\":{\"ints\":[0,2,1,3]}";
    for (int l = 0; l < 2; l++) {
        char split_outs[96];
        mb_linear(&m, lname(l, "qkv"), in, lname(l, "h"), 32, 96, 0.3f);
        snprintf(split_outs, sizeof split_outs, "l%d_q\",\"l%d_k\",\"l%d_v", l, l, l);
        mb_node(&m, lname(l, "split"), "Split", ins2(lname(l, "h"), NULL), split_outs,
                "\"axis\":{\"int\":-1}");
        mb_node(&m, lname(l, "rq"), "Reshape", ins2(lname(l, "q"), "heads"), lname(l, "q4"), "");
        mb_node(&m, lname(l, "rk"), "Reshape", ins2(lname(l, "k"), "heads"), lname(l, "k4"), "");
        mb_node(&m, lname(l, "rv"), "Reshape", ins2(lname(l, "v"), "heads"), lname(l, "v4"), "");
        mb_node(&m, lname(l, "tq"), "Transpose", ins2(lname(l, "q4"), NULL), lname(l, "qt"),
                perm_qv);
        mb_node(&m, lname(l, "tk"), "Transpose", ins2(lname(l, "k4"), NULL), lname(l, "kt"),
                "\"perm\":{\"ints\":[0,2,3,1]}");
        mb_node(&m, lname(l, "tv"), "Transpose", ins2(lname(l, "v4"), NULL), lname(l, "vt"),
                perm_qv);
        mb_node(&m, lname(l, "qk"), "MatMul", ins2(lname(l, "qt"), lname(l, "kt")),
                lname(l, "s"), "");
        mb_node(&m, lname(l, "scale"), "Mul", ins2(lname(l, "s"), "scale"), lname(l, "s2"), "");
        mb_node(&m, lname(l, "softmax"), "Softmax", ins2(lname(l, "s2"), NULL), lname(l, "p"),
                "\"axis\":{\"int\":-1}");
        mb_node(&m, lname(l, "pv"), "MatMul", ins2(lname(l, "p"), lname(l, "vt")),
                lname(l, "o"), "");
        mb_node(&m, lname(l, "to"), "Transpose", ins2(lname(l, "o"), NULL), lname(l, "ot"),
                perm_qv);
        mb_node(&m, lname(l, "ro"), "Reshape", ins2(lname(l, "ot"), "merged"), lname(l, "om"),
                "");
        mb_linear(&m, lname(l, "proj"), lname(l, "om"), lname(l, "pr"), 32, 32, 0.3f);
        mb_node(&m, lname(l, "res1"), "Add", ins2(in, lname(l, "pr")), lname(l, "x1"), "");
        mb_layernorm(&m, lname(l, "ln1"), lname(l, "x1"), lname(l, "n1"), 32);
        mb_linear(&m, lname(l, "ff1"), lname(l, "n1"), lname(l, "f"), 32, 64, 0.3f);
        mb_node(&m, lname(l, "gdiv"), "Div", ins2(lname(l, "f"), "sqrt2"), lname(l, "g1"), "");
        mb_node(&m, lname(l, "erf"), "Erf", ins2(lname(l, "g1"), NULL), lname(l, "g2"), "");
        mb_node(&m, lname(l, "gadd"), "Add", ins2(lname(l, "g2"), "one"), lname(l, "g3"), "");
        mb_node(&m, lname(l, "gmul"), "Mul", ins2(lname(l, "f"), lname(l, "g3")),
                lname(l, "g4"), "");
        mb_node(&m, lname(l, "ghalf"), "Mul", ins2(lname(l, "g4"), "half"), lname(l, "g"), "");
        mb_linear(&m, lname(l, "ff2"), lname(l, "g"), lname(l, "f2"), 64, 32, 0.2f);
        mb_node(&m, lname(l, "res2"), "Add", ins2(lname(l, "n1"), lname(l, "f2")),
                lname(l, "x2"), "");
        mb_layernorm(&m, lname(l, "ln2"), lname(l, "x2"), l == 1 ? "y" : "l0_out", 32);
        in = "l0_out";
    }
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* A convolution with bias: OUT = Conv(IN) with a KxK window, STRIDE,
 * padding K/2 and GROUP, from CI to CO channels. */
static void mb_conv(struct mb *m, const char *name, const char *in, const char *out, int64_t ci,
                    int64_t co, int k, int stride, int group)
{
    char w[48], b[48], attrs[160];
    snprintf(w, sizeof w, "%s_w", name);
    snprintf(b, sizeof b, "%s_b", name);
    float scale = 1.0f / sqrtf((float)(ci / group * k * k));
    mb_const(m, w, 4, (int64_t[]){co, ci / group, k, k}, NULL, scale);
    mb_const(m, b, 1, (int64_t[]){co}, NULL, 0.1f);
    snprintf(attrs, sizeof attrs,
             "\"pads\":{\"ints\":[%d,%d,%d,%d]},\"strides\":{\"ints\":[%d,%d]},"
             "\"group\":{\"int\":%d}",
             k / 2, k / 2, k / 2, k / 2, stride, stride, group);
    char ins[160];
    snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\"", in, w, b);
    mb_node(m, name, "Conv", ins, out, attrs);
}

/* mobilenet_v2's inverted residual block P: 1x1 expand from CI to E
 * channels, Clip, 3x3 depthwise with STRIDE, Clip, 1x1 project to CO, and
 * the residual Add when the shapes allow (stride 1, CI == CO). Clip's
 * bounds are the scalars "lo" and "hi". */
static void mb_inverted_block(struct mb *m, const char *p, const char *in, const char *out,
                              int64_t ci, int64_t e, int64_t co, int stride)
{
    char n[6][48], t[5][48], ins[160];
    static const char *const sfx[6] = {"exp", "clip1", "dw", "clip2", "proj", "add"};
    for (int i = 0; i < 6; i++)
        snprintf(n[i], sizeof n[i], "%s_%s", p, sfx[i]);
    for (int i = 0; i < 5; i++)
        snprintf(t[i], sizeof t[i], "%s_t%d", p, i);
    bool residual = stride == 1 && ci == co;
    mb_conv(m, n[0], in, t[0], ci, e, 1, 1, 1);
    snprintf(ins, sizeof ins, "\"%s\",\"lo\",\"hi\"", t[0]);
    mb_node(m, n[1], "Clip", ins, t[1], "");
    mb_conv(m, n[2], t[1], t[2], e, e, 3, stride, (int)e);
    snprintf(ins, sizeof ins, "\"%s\",\"lo\",\"hi\"", t[2]);
    mb_node(m, n[3], "Clip", ins, t[3], "");
    mb_conv(m, n[4], t[3], residual ? t[4] : out, e, co, 1, 1, 1);
    if (residual)
        mb_node(m, n[5], "Add", ins2(in, t[4]), out, "");
}

/* mobilenet_v2's pieces as exported (batch norm folded into the
 * convolutions, ReLU6 as Clip with constant bounds): the stem, an inverted
 * residual block without and one with the residual Add, the last 1x1, the
 * pooling and the classifier. Input 1x3x32x32. */
static const char *model_mobilenet_blocks(void)
{
    struct mb m = {.seed = 37};
    mb_input(&m, "x", 4, (int64_t[]){1, 3, 32, 32});
    mb_scalar(&m, "lo", 0.0f);
    mb_scalar(&m, "hi", 6.0f);
    mb_conv(&m, "stem", "x", "s0", 3, 16, 3, 2, 1);
    mb_node(&m, "stem_clip", "Clip", "\"s0\",\"lo\",\"hi\"", "s1", "");
    /* expand 16->64, depthwise stride 2, project to 24; then expand
     * 24->96, depthwise stride 1, project, with the residual Add */
    mb_inverted_block(&m, "b1", "s1", "b1", 16, 64, 24, 2);
    mb_inverted_block(&m, "b2", "b1", "b2", 24, 96, 24, 1);
    mb_conv(&m, "last", "b2", "l0", 24, 128, 1, 1, 1);
    mb_node(&m, "last_clip", "Clip", "\"l0\",\"lo\",\"hi\"", "l1", "");
    mb_node(&m, "gap", "GlobalAveragePool", "\"l1\"", "g", "");
    mb_node(&m, "flat", "Flatten", "\"g\"", "f", "\"axis\":{\"int\":1}");
    mb_const(&m, "fc_w", 2, (int64_t[]){10, 128}, NULL, 0.1f);
    mb_const(&m, "fc_b", 1, (int64_t[]){10}, NULL, 0.1f);
    mb_node(&m, "fc", "Gemm", "\"f\",\"fc_w\",\"fc_b\"", "y", "\"transB\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* resnet18's pieces as exported: 7x7 stride-2 stem with Relu, MaxPool
 * 3x3 stride 2, a basic block (two 3x3 with the residual Add), a
 * downsampling block (1x1 stride-2 shortcut), pooling and the classifier.
 * Input 1x3x32x32. */
static const char *model_resnet_blocks(void)
{
    struct mb m = {.seed = 41};
    mb_input(&m, "x", 4, (int64_t[]){1, 3, 32, 32});
    mb_conv(&m, "stem", "x", "s0", 3, 16, 7, 2, 1);
    mb_node(&m, "stem_relu", "Relu", "\"s0\"", "s1", "");
    mb_node(&m, "pool", "MaxPool", "\"s1\"", "p",
            "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[2,2]},"
            "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_conv(&m, "a_c1", "p", "a1", 16, 16, 3, 1, 1);
    mb_node(&m, "a_relu1", "Relu", "\"a1\"", "a2", "");
    mb_conv(&m, "a_c2", "a2", "a3", 16, 16, 3, 1, 1);
    mb_node(&m, "a_add", "Add", "\"a3\",\"p\"", "a4", "");
    mb_node(&m, "a_relu2", "Relu", "\"a4\"", "a", "");
    mb_conv(&m, "b_c1", "a", "b1", 16, 32, 3, 2, 1);
    mb_node(&m, "b_relu1", "Relu", "\"b1\"", "b2", "");
    mb_conv(&m, "b_c2", "b2", "b3", 32, 32, 3, 1, 1);
    mb_conv(&m, "b_down", "a", "bd", 16, 32, 1, 2, 1);
    mb_node(&m, "b_add", "Add", "\"b3\",\"bd\"", "b4", "");
    mb_node(&m, "b_relu2", "Relu", "\"b4\"", "b", "");
    mb_node(&m, "gap", "GlobalAveragePool", "\"b\"", "g", "");
    mb_node(&m, "flat", "Flatten", "\"g\"", "f", "\"axis\":{\"int\":1}");
    mb_const(&m, "fc_w", 2, (int64_t[]){10, 32}, NULL, 0.2f);
    mb_const(&m, "fc_b", 1, (int64_t[]){10}, NULL, 0.1f);
    mb_node(&m, "fc", "Gemm", "\"f\",\"fc_w\",\"fc_b\"", "y", "\"transB\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* The reference models' structures (make_models.py: resnet18,
 * mobilenet_v2, bert_tiny; the MLP is model_matmul_gelu's kin) at small
 * sizes, as their exporters write them, through onednn and cpu: the same
 * outputs, and every compute node on onednn. The full-size models need
 * PyTorch to write; bench/vs_ort.sh checks those against PyTorch. */
static void case_reference_shapes(void)
{
    compare(model_resnet_blocks(), 4, (int64_t[]){1, 3, 32, 32}, 2, (int64_t[]){1, 10},
            (const char *[]){"stem", "stem_relu", "pool", "a_c1", "a_add", "b_c1", "b_down",
                             "b_add", "gap", "flat", "fc", NULL});
    compare(model_mobilenet_blocks(), 4, (int64_t[]){1, 3, 32, 32}, 2, (int64_t[]){1, 10},
            (const char *[]){"stem", "stem_clip", "b1_exp", "b1_dw", "b1_proj", "b2_dw",
                             "b2_add", "last", "gap", "flat", "fc", NULL});
    compare(model_bert_layers(), 3, (int64_t[]){2, 16, 32}, 3, (int64_t[]){2, 16, 32},
            (const char *[]){"l0_qkv_mm", "l0_split", "l0_rq", "l0_tk", "l0_qk", "l0_softmax",
                             "l0_pv", "l0_ro", "l0_proj_mm", "l0_res1", "l0_ln1_0", "l0_erf",
                             "l0_ff2_mm", "l1_ln2_8", NULL});
}

static const char *model_decomposed_ln(int spoil)
{
    struct mb m = {.seed = 11};
    int64_t xs[] = {2, 6, 48}, c[] = {48}, w[] = {48, 48};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 2, w, NULL, 0.2f);
    mb_const(&m, "g0", 1, c, NULL, 1.0f);
    mb_const(&m, "beta", 1, c, NULL, 0.5f);
    mb_scalar(&m, "two", 2.0f);
    mb_scalar(&m, "eps", 1e-5f);
    const char *axes = "\"axes\":{\"ints\":[-1]}";
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
    mb_node(&m, "gamma_id", "Identity", "\"g0\"", "gamma", "");
    mb_node(&m, "mean", "ReduceMean", "\"h\"", "mu", axes);
    mb_node(&m, "sub", "Sub", "\"h\",\"mu\"", "d", "");
    mb_node(&m, "pow", "Pow", "\"d\",\"two\"", "d2", "");
    mb_node(&m, "var", "ReduceMean", "\"d2\"", "v", axes);
    mb_node(&m, "addeps", "Add", "\"eps\",\"v\"", "ve", "");
    mb_node(&m, "sqrt", "Sqrt", "\"ve\"", "sd", "");
    mb_node(&m, "div", "Div", "\"d\",\"sd\"", "q", "");
    mb_node(&m, "mul", "Mul", "\"gamma\",\"q\"", "gq", "");
    mb_node(&m, "addb", "Add", "\"gq\",\"beta\"", "l", "");
    /* SPOIL: the centred tensor leaves the pattern, which must then fall
     * back to one primitive per node. */
    mb_node(&m, "tanh", "Tanh", spoil ? "\"d\"" : "\"l\"", "t", "");
    mb_node(&m, "add2", "Add", spoil ? "\"t\",\"l\"" : "\"t\",\"l\"", "u", "");
    mb_node(&m, "split", "Split", "\"u\"", "s0\",\"s1", "\"axis\":{\"int\":-1}");
    mb_node(&m, "relu", "Relu", "\"s1\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* The kinds of the steps of the blob of C (the fusion plan). */
static int count_steps(const struct blob *b, uint32_t kind, uint32_t *out_total)
{
    /* The header (struct odnn_blob_header in onednn_subgraph.c) is 144 bytes;
     * n_steps is at offset 120, the steps' kinds follow the header. */
    uint32_t n;
    TH_CHECK(b->n >= 144, "blob of %zu bytes", b->n);
    memcpy(&n, b->bytes + 120, 4);
    TH_CHECK(b->n >= 144 + 4 * (size_t)n, "blob of %zu bytes for %u steps", b->n, n);
    int hits = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k;
        memcpy(&k, b->bytes + 144 + 4 * i, 4);
        hits += k == kind;
    }
    *out_total = n;
    return hits;
}

static void case_decomposed_layernorm(void)
{
    int64_t xs[] = {2, 6, 48}, ys[] = {2, 6, 24};
    const char *path = model_decomposed_ln(0);
    compare(path, 3, xs, 3, ys,
            (const char *[]){"mm", "mean", "sub", "pow", "var", "addeps", "sqrt", "div", "mul",
                             "addb", "tanh", "add2", "split", "relu", NULL});
    for (int spoil = 0; spoil < 2; spoil++) {
        if (spoil)
            compare(path = model_decomposed_ln(1), 3, xs, 3, ys,
                    (const char *[]){"mean", "div", "addb", "split", NULL});
        /* The whole graph but the Identity (which onednn leaves to cpu),
         * compiled directly. */
        struct direct d = direct_open(path);
        pl_graph_view_destroy(d.view);
        pl_nid nodes[32];
        size_t nn = 0;
        for (size_t i = 0; i < pl_graph_node_count(d.model->graph) && nn < 32; i++)
            if (strcmp(pl_graph_get_node(d.model->graph, (pl_nid)i)->op, "Identity") != 0)
                nodes[nn++] = (pl_nid)i;
        TH_CHECK_OK(pl_graph_view_create(d.model->graph, nodes, nn, &d.view));
        pl_compiled *c = NULL;
        TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
        struct blob b = {0};
        TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
        uint32_t total;
        int ln = count_steps(&b, 9 /* ODNN_S_LNORM */, &total);
        TH_CHECK(spoil ? ln == 0 : ln == 1, "%d layer normalization steps (of %u) %s", ln, total,
                 spoil ? "where the pattern leaks" : "for the pattern");
        TH_CHECK(spoil || total <= 8, "%u steps: the pattern was not fused", total);
        d.api->release(d.m->ctx, c);
        free(b.bytes);
        direct_close(&d);
    }
}

/* LayerNormalization as Keras writes it and tf2onnx converts it (13 nodes:
 * GlobalAveragePool means of a rank-3 tensor, Mul(d, d), Reciprocal of the
 * Sqrt, x * s + (beta - mean * s) as Neg, Mul, Add), with BETA, or without
 * (a zero beta tf2onnx folded away: x * s + (-mean) * s). One
 * layer_normalization step either way, and the cpu module's results. */
static const char *model_keras_ln(int beta)
{
    struct mb m = {.seed = 23};
    int64_t xs[] = {2, 6, 48}, c[] = {48}, w[] = {48, 48};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 2, w, NULL, 0.2f);
    mb_const(&m, "gamma", 1, c, NULL, 1.0f);
    mb_const(&m, "beta", 1, c, NULL, 0.5f);
    mb_scalar(&m, "eps", 1e-3f);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
    mb_node(&m, "mean", "GlobalAveragePool", "\"h\"", "mu", "");
    mb_node(&m, "sub", "Sub", "\"h\",\"mu\"", "d", "");
    mb_node(&m, "sq", "Mul", "\"d\",\"d\"", "d2", "");
    mb_node(&m, "var", "GlobalAveragePool", "\"d2\"", "v", "");
    mb_node(&m, "addeps", "Add", "\"v\",\"eps\"", "ve", "");
    mb_node(&m, "sqrt", "Sqrt", "\"ve\"", "sd", "");
    mb_node(&m, "rcp", "Reciprocal", "\"sd\"", "r", "");
    mb_node(&m, "scale", "Mul", "\"r\",\"gamma\"", "s", "");
    mb_node(&m, "xs", "Mul", "\"h\",\"s\"", "hs", "");
    mb_node(&m, "neg", "Neg", "\"mu\"", "nm", "");
    mb_node(&m, "ms", "Mul", "\"nm\",\"s\"", "nms", "");
    if (beta) {
        mb_node(&m, "addbeta", "Add", "\"nms\",\"beta\"", "t", "");
        mb_node(&m, "out", "Add", "\"hs\",\"t\"", "l", "");
    } else {
        mb_node(&m, "out", "Add", "\"hs\",\"nms\"", "l", "");
    }
    mb_node(&m, "tanh", "Tanh", "\"l\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_keras_layernorm(void)
{
    int64_t xs[] = {2, 6, 48}, ys[] = {2, 6, 48};
    for (int beta = 0; beta < 2; beta++) {
        const char *path = model_keras_ln(beta);
        compare(path, 3, xs, 3, ys,
                beta ? (const char *[]){"mm", "mean", "sub", "sq", "var", "addeps", "sqrt", "rcp",
                                        "scale", "xs", "neg", "ms", "addbeta", "out", "tanh",
                                        NULL}
                     : (const char *[]){"mm", "mean", "sub", "sq", "var", "addeps", "sqrt", "rcp",
                                        "scale", "xs", "neg", "ms", "out", "tanh", NULL});
        struct direct d = direct_open(path);
        pl_compiled *c = NULL;
        TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
        struct blob b = {0};
        TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
        uint32_t total;
        int ln = count_steps(&b, 9 /* ODNN_S_LNORM */, &total);
        TH_CHECK(ln == 1 && total <= 6, "beta %d: %d layer normalization steps of %u", beta, ln,
                 total);
        d.api->release(d.m->ctx, c);
        free(b.bytes);
        direct_close(&d);
    }
}

/* RMSNorm as T5, Llama and the core's expansion of RMSNormalization write
 * it, FORM: 0 Pow(h, 2), Div(1, r) then Mul(h, .), gamma after, h also
 * read by a residual Add; 1 Mul(h, h), Reciprocal, Mul(., h), gamma
 * first; 2 Div(h, r) and no gamma; 3 (spoiled) as 0 with the mean also a
 * graph output; 4 as 0 on [2, 120, 168]; 5 as 1 at opset 18, the mean's
 * axes an input (torch 2's dynamo exporter). */
static const char *model_rms(int form)
{
    struct mb m = {.seed = 31 + form, .opset = form == 5 ? 18 : 0};
    int64_t k = form == 4 ? 168 : 40; /* 4: rows on two threads, a tail of 8 */
    int64_t xs[] = {2, form == 4 ? 120 : 5, k}, c[] = {k}, w[] = {k, k};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 2, w, NULL, 0.2f);
    mb_const(&m, "gamma", 1, c, NULL, 1.0f);
    mb_scalar(&m, "two", 2.0f);
    mb_scalar(&m, "one", 1.0f);
    mb_scalar(&m, "eps", 1e-6f);
    const char *axes = "\"axes\":{\"ints\":[-1]}";
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
    if (form == 1 || form == 5)
        mb_node(&m, "sq", "Mul", "\"h\",\"h\"", "h2", "");
    else
        mb_node(&m, "sq", "Pow", "\"h\",\"two\"", "h2", "");
    if (form == 5) {
        mb_shape(&m, "last", 1, (int64_t[]){-1});
        mb_node(&m, "var", "ReduceMean", "\"h2\",\"last\"", "v", "");
    } else {
        mb_node(&m, "var", "ReduceMean", "\"h2\"", "v", axes);
    }
    mb_node(&m, "addeps", "Add", "\"v\",\"eps\"", "ve", "");
    mb_node(&m, "sqrt", "Sqrt", "\"ve\"", "r", "");
    if (form == 2) {
        mb_node(&m, "norm", "Div", "\"h\",\"r\"", "n", "");
        mb_node(&m, "res", "Add", "\"n\",\"h\"", "l", "");
    } else {
        int one_form = form == 1 || form == 5;
        if (one_form)
            mb_node(&m, "inv", "Reciprocal", "\"r\"", "ri", "");
        else
            mb_node(&m, "inv", "Div", "\"one\",\"r\"", "ri", "");
        mb_node(&m, "norm", "Mul", one_form ? "\"ri\",\"h\"" : "\"h\",\"ri\"", "n", "");
        mb_node(&m, "scale", "Mul", one_form ? "\"gamma\",\"n\"" : "\"n\",\"gamma\"", "gn", "");
        mb_node(&m, "res", "Add", "\"gn\",\"h\"", "l", "");
    }
    mb_node(&m, "tanh", "Tanh", "\"l\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    if (form == 3)
        m.outputs[m.n_outputs++] = "v";
    return mb_write(&m);
}

/* Each form on onednn whole, the cpu module's values within 1e-4, one
 * RMSNorm step (the module's own kernel) for the pattern and none where
 * the mean leaks (then one primitive per node, which still runs right). */
static void case_rms_norm(void)
{
    for (int form = 0; form < 6; form++) {
        int64_t xs[] = {2, form == 4 ? 120 : 5, form == 4 ? 168 : 40};
        const char *path = model_rms(form);
        if (form == 2)
            compare(path, 3, xs, 3, xs,
                    (const char *[]){"mm", "sq", "var", "addeps", "sqrt", "norm", "res", "tanh",
                                     NULL});
        else if (form < 3 || form == 5)
            compare(path, 3, xs, 3, xs,
                    (const char *[]){"mm", "sq", "var", "addeps", "sqrt", "inv", "norm", "scale",
                                     "res", "tanh", NULL});
        else
            compare(path, 3, xs, 3, xs, NULL);
        if (form == 3)
            continue; /* two outputs: compiled through the session above */
        struct blob b = compile_blob(path);
        uint32_t total;
        int rms = count_steps(&b, 16 /* ODNN_S_RMSNORM */, &total);
        TH_CHECK(rms == 1 && total <= 4, "form %d: %d RMSNorm steps of %u", form, rms, total);
        free(b.bytes);
    }
}

/* Binary broadcasts oneDNN runs on its reference kernel in their own dims
 * but not in merged ones: [1, 4, 6, 40] / [1, 4, 6, 1] (a mean over the
 * last axis) as [24, 40] / [24, 1], and a rotary embedding's [1, 1, 6, 40]
 * beside [1, 4, 6, 40]: both taken, the cpu module's values. */
static const char *model_merged_broadcast(void)
{
    struct mb m = {.seed = 37};
    int64_t xs[] = {1, 4, 6, 40}, cs[] = {1, 1, 6, 40};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "cosv", 4, cs, NULL, 1.0f);
    const char *axes = "\"axes\":{\"ints\":[-1]}";
    mb_node(&m, "relu", "Relu", "\"x\"", "a", "");
    mb_node(&m, "mean", "ReduceMean", "\"a\"", "mu", axes);
    mb_node(&m, "addeps", "Add", "\"mu\",\"cosv\"", "mue", "");
    mb_node(&m, "div", "Div", "\"a\",\"mu\"", "d", "");
    mb_node(&m, "rot", "Mul", "\"d\",\"cosv\"", "e", "");
    mb_node(&m, "add", "Add", "\"e\",\"mue\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_merged_broadcast(void)
{
    int64_t xs[] = {1, 4, 6, 40};
    const char *path = model_merged_broadcast();
    compare(path, 4, xs, 4, xs,
            (const char *[]){"relu", "mean", "div", "rot", "add", NULL});
}

/* A QuantizeLinear -> DequantizeLinear pair on an activation (ONNX
 * Runtime's QDQ format), u8 with zero point 10 and s8 with -3: onednn
 * takes both nodes as one step (a division with round/clip/scale
 * post-ops) and gives the cpu module's values exactly, so the activation
 * does not cross to cpu and back. */
static const char *model_qdq(int is_signed)
{
    struct mb m = {.seed = 29};
    int64_t xs[] = {2, 8, 6, 6};
    mb_input(&m, "x", 4, xs);
    mb_scalar(&m, "s", 0.02f);
    mb_node(&m, "zp", "Constant", "", "z",
            is_signed ? "\"value\":{\"tensor\":{\"dtype\":\"i8\",\"shape\":[],\"values\":[-3]}}"
                      : "\"value\":{\"tensor\":{\"dtype\":\"u8\",\"shape\":[],\"values\":[10]}}");
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "q", "QuantizeLinear", "\"r\",\"s\",\"z\"", "rq", "");
    mb_node(&m, "dq", "DequantizeLinear", "\"rq\",\"s\",\"z\"", "d", "");
    mb_node(&m, "sig", "Sigmoid", "\"d\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_qdq_pair(void)
{
    int64_t xs[] = {2, 8, 6, 6};
    for (int sg = 0; sg < 2; sg++) {
        const char *path = model_qdq(sg);
        compare(path, 4, xs, 4, xs, (const char *[]){"relu", "q", "dq", "sig", NULL});
        /* compiled directly: every node but the Constant (folded in a
         * session) */
        struct direct d = direct_open(path);
        pl_graph_view_destroy(d.view);
        pl_nid nodes[8];
        size_t nn = 0;
        for (size_t i = 0; i < pl_graph_node_count(d.model->graph) && nn < 8; i++)
            if (strcmp(pl_graph_get_node(d.model->graph, (pl_nid)i)->op, "Constant") != 0)
                nodes[nn++] = (pl_nid)i;
        TH_CHECK_OK(pl_graph_view_create(d.model->graph, nodes, nn, &d.view));
        pl_compiled *c = NULL;
        TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
        struct blob b = {0};
        TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
        uint32_t total;
        count_steps(&b, 0, &total);
        TH_CHECK(total <= 4, "signed %d: %u steps for relu, the pair and sigmoid", sg, total);
        d.api->release(d.m->ctx, c);
        free(b.bytes);
        direct_close(&d);
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Cold compile against import of the exported blob (best of 3 each), on
 * the MLP-with-GELU model or, for measurements, the model named by
 * PLINTH_ONEDNN_WARM_MODEL (all its nodes must be taken by onednn). */
static void case_warm_start(void)
{
    const char *path = getenv("PLINTH_ONEDNN_WARM_MODEL");
    struct direct d = direct_open(path != NULL && path[0] ? path : model_matmul_gelu());
    double cold = 1e30, warm = 1e30;
    struct blob b = {0};
    for (int rep = 0; rep < 3; rep++) {
        pl_compiled *c = NULL, *ci = NULL;
        double t0 = now_ms();
        TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
        double t1 = now_ms();
        b.n = 0;
        TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
        double t2 = now_ms();
        TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci));
        double t3 = now_ms();
        cold = fmin(cold, t1 - t0);
        warm = fmin(warm, t3 - t2);
        d.api->release(d.m->ctx, c);
        d.api->release(d.m->ctx, ci);
    }
    printf("warm_start: compile %.2f ms, import %.2f ms (blob %zu bytes)\n", cold, warm, b.n);
    free(b.bytes);
    direct_close(&d);
}

/* configure: precision is accepted and reported; bad keys are named. */
static void case_configure(void)
{
    pl_runtime *rt = onednn_runtime();
    pl_module *m = rt->modules[pl_runtime_find_module(rt, "onednn")];
    pl_kv bad = {"precision", "f16"};
    CHECK_ERROR(m->api.configure(m->ctx, &bad, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                "precision");
    pl_kv unknown = {"fusion", "on"};
    CHECK_ERROR(m->api.configure(m->ctx, &unknown, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                "unknown key 'fusion'");
    pl_kv f32 = {"precision", "f32"};
    TH_CHECK_OK(m->api.configure(m->ctx, &f32, 1, NULL, NULL));
    pl_kv solo_bad = {"solo", "sometimes"};
    CHECK_ERROR(m->api.configure(m->ctx, &solo_bad, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                "expected one of: auto, on, off");
    pl_kv wino_bad = {"winograd", "always"};
    CHECK_ERROR(m->api.configure(m->ctx, &wino_bad, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                "winograd");
    pl_kv wino_no = {"winograd", "no"}, wino_all = {"winograd", "all"};
    TH_CHECK_OK(m->api.configure(m->ctx, &wino_no, 1, NULL, NULL));
    TH_CHECK_OK(m->api.configure(m->ctx, &wino_all, 1, NULL, NULL));
    static const char *const bad_us[3] = {"-1", "fast", "20000"};
    for (int k = 0; k < 3; k++) {
        pl_kv kv = {"one_thread_us", bad_us[k]};
        CHECK_ERROR(m->api.configure(m->ctx, &kv, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                    "one_thread_us");
    }
    pl_kv us = {"one_thread_us", "8.5"};
    TH_CHECK_OK(m->api.configure(m->ctx, &us, 1, NULL, NULL));
    pl_runtime_destroy(rt);
}

/* ---- Winograd ------------------------------------------------------------- */

/* Two 3x3 stride-1 convolutions, 32 channels: the layers oneDNN runs
 * through its Winograd kernel on AVX-512. */
static const char *model_wino_batch(int64_t c, int64_t batch)
{
    struct mb m = {.seed = 7};
    int64_t xs[] = {batch, c, 14, 14}, ws[] = {c, c, 3, 3}, bs[] = {c};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, ws, NULL, 0.1f);
    mb_const(&m, "b1", 1, bs, NULL, 0.1f);
    mb_const(&m, "w2", 4, ws, NULL, 0.1f);
    const char *p1 = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "conv1", "Conv", "\"x\",\"w1\",\"b1\"", "c1", p1);
    mb_node(&m, "relu1", "Relu", "\"c1\"", "r1", "");
    mb_node(&m, "conv2", "Conv", "\"r1\",\"w2\"", "y", p1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static const char *model_wino(int64_t c)
{
    return model_wino_batch(c, 1);
}

/* One 3x3 Conv of C channels in and out, padded, over BATCH images of HW x HW. */
static const char *model_wino_one(int64_t c, int64_t batch, int64_t hw)
{
    struct mb m = {.seed = 9};
    int64_t xs[] = {batch, c, hw, hw}, ws[] = {c, c, 3, 3};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, ws, NULL, 0.05f);
    mb_node(&m, "conv1", "Conv", "\"x\",\"w1\"", "y", "\"pads\":{\"ints\":[1,1,1,1]}");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* The log lines a runtime wrote (debug level), joined. */
struct wino_log {
    char text[16384];
    size_t len;
};

static void wino_sink(void *user, int level, const char *line)
{
    (void)level;
    struct wino_log *l = user;
    int n = snprintf(l->text + l->len, sizeof l->text - l->len, "%s\n", line);
    if (n > 0 && (size_t)n < sizeof l->text - l->len)
        l->len += (size_t)n;
}

/* The module's debug log while a session of PATH is made, into LOG. */
static void compile_log(const char *path, struct wino_log *log)
{
    memset(log, 0, sizeof *log);
    pl_runtime *rt = onednn_runtime_ex(NULL, wino_sink, log);
    pl_session_destroy(session_for(rt, path));
    pl_runtime_destroy(rt);
}

/* Keras's Conv1D as tf2onnx writes it: a Conv over [N, C, L, 1] with a
 * [5, 1] kernel, then a Squeeze of the unit width, the bias Add and GELU's
 * tanh form in jax2tf's order (0.044715 * x * x * x, and 0.5 * (1 + t) * x
 * last; Google's Magika). The module runs the convolution at rank 3
 * (oneDNN's kernels block along the width, which a width of 1 starved:
 * Magika's layer 10.0 -> 6.2 ms) with the Squeeze, the Add and (with
 * AVX-512) the nine GELU nodes in its step, as the log says; once with the
 * Squeeze's output
 * also read by another node, so the chain stops there. Results are the
 * cpu module's. */
static void case_conv_unit_width(void)
{
    for (int shared = 0; shared < 3; shared++) {
        struct mb m = {.seed = 13, .opset = 11};
        int64_t xs[] = {2, 16, 40, 1}, ws[] = {24, 16, 5, 1}, bs[] = {24, 1}, ys[] = {2, 24, 40},
                w1[] = {24, 16, 1, 1};
        mb_input(&m, "x", 4, xs);
        mb_const(&m, "w", 4, ws, NULL, 0.2f);
        mb_const(&m, "w1", 4, w1, NULL, 0.2f);
        mb_const(&m, "b", 2, bs, NULL, 0.5f);
        mb_scalar(&m, "k3", 0.044715f);
        mb_scalar(&m, "kr", 0.7978846f);
        mb_scalar(&m, "one", 1.0f);
        mb_scalar(&m, "half", 0.5f);
        if (shared == 2) { /* a residual sum at rank 4 before the Squeeze, its
                              source written before the convolution's */
            mb_node(&m, "conv1", "Conv", "\"x\",\"w1\"", "r0", "");
            mb_node(&m, "relu1", "Relu", "\"r0\"", "r", "");
        }
        mb_node(&m, "conv", "Conv", "\"x\",\"w\"", shared == 2 ? "c0" : "c",
                "\"pads\":{\"ints\":[2,0,2,0]}");
        if (shared == 2)
            mb_node(&m, "res4", "Add", "\"c0\",\"r\"", "c", "");
        mb_node(&m, "sq", "Squeeze", "\"c\"", "s", "\"axes\":{\"ints\":[3]}");
        mb_node(&m, "bias", "Add", "\"s\",\"b\"", "a", "");
        mb_node(&m, "g0", "Mul", "\"k3\",\"a\"", "g0", "");
        mb_node(&m, "g1", "Mul", "\"a\",\"g0\"", "g1", "");
        mb_node(&m, "g2", "Mul", "\"a\",\"g1\"", "g2", "");
        mb_node(&m, "g3", "Add", "\"a\",\"g2\"", "g3", "");
        mb_node(&m, "g4", "Mul", "\"kr\",\"g3\"", "g4", "");
        mb_node(&m, "g5", "Tanh", "\"g4\"", "g5", "");
        mb_node(&m, "g6", "Add", "\"one\",\"g5\"", "g6", "");
        mb_node(&m, "g7", "Mul", "\"half\",\"g6\"", "g7", "");
        mb_node(&m, "g8", "Mul", "\"a\",\"g7\"", shared == 1 ? "g8" : "y", "");
        if (shared == 1)
            mb_node(&m, "res", "Add", "\"g8\",\"s\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, xs, 3, ys, (const char *[]){"conv", "sq", "bias", "g5", "g8", NULL});
        struct wino_log log;
        compile_log(path, &log);
        /* with the residual, the step stops before the Squeeze (a sum's
         * source keeps the tensors' rank); below AVX-512 GELU's tanh form
         * is the module's own kernel (odnn_gelu_own: oneDNN's tanh reads
         * its tables with gathers there), so the step ends at the Add */
        char isa[64] = "";
        const char *want[3] = {onednn_avx512(isa)
                                   ? "node 'conv': a 1-D convolution (its width is 1), 12 node(s)"
                                   : "node 'conv': a 1-D convolution (its width is 1), 3 node(s)",
                               "node 'conv': a 1-D convolution (its width is 1), 2 node(s)",
                               "node 'conv': a 1-D convolution (its width is 1), 2 node(s)"};
        TH_CHECK(strstr(log.text, want[shared]) != NULL, "no \"%s\" in the log:\n%s",
                 want[shared], log.text);
    }
}

/* Concat on an inner axis with more than one element before it (basic-
 * pitch stacks its harmonics on the last axis): each source is reordered
 * into its strided piece of the destination, a Transpose's view straight
 * from its bytes, instead of oneDNN's simple concat, which copied an
 * element at a time (2.9 ms of basic-pitch's 25). The log says so; results
 * are the cpu module's. */
static void case_concat_strided(void)
{
    struct mb m = {.seed = 17};
    int64_t xs[] = {2, 3, 5}, ys[] = {2, 3, 15};
    mb_input(&m, "x", 3, xs);
    mb_node(&m, "t1", "Transpose", "\"x\"", "t", "\"perm\":{\"ints\":[0,2,1]}");
    mb_node(&m, "tanh", "Tanh", "\"t\"", "tt", "");
    mb_node(&m, "t2", "Transpose", "\"tt\"", "c", "\"perm\":{\"ints\":[0,2,1]}");
    mb_node(&m, "relu", "Relu", "\"x\"", "a", "");
    mb_node(&m, "sig", "Sigmoid", "\"x\"", "b", "");
    mb_node(&m, "cat", "Concat", "\"a\",\"c\",\"b\"", "y", "\"axis\":{\"int\":2}");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 3, xs, 3, ys, (const char *[]){"tanh", "t2", "relu", "cat", NULL});
    struct wino_log log;
    compile_log(path, &log);
    const char *want = "node 'cat' (Concat): 0 of its 3 sources written in place, the others "
                       "copied into their strided pieces";
    TH_CHECK(strstr(log.text, want) != NULL, "no \"%s\" in the log:\n%s", want, log.text);
}

/* The direct_conv choice the module reports. */
static void used_sink(void *user, const char *key, const char *value)
{
    if (strcmp(key, "direct_conv") == 0)
        snprintf(user, 96, "%s", value);
}

static void isa_sink(void *user, const char *key, const char *value)
{
    if (strcmp(key, "cpu_isa") == 0)
        snprintf(user, 64, "%s", value);
}

/* Whether the onednn module dispatches to AVX-512 or a later ISA (its
 * name in ISA, 64 bytes). */
static bool onednn_avx512(char *isa)
{
    pl_runtime *rt = onednn_runtime();
    pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    pl_runtime_destroy(rt);
    return strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "avx10", 5) == 0 ||
           strncmp(isa, "amx", 3) == 0;
}

static void precision_sink(void *ctx, const char *key, const char *value)
{
    if (strcmp(key, "precision") == 0)
        snprintf(ctx, 96, "%s", value);
}

static pl_runtime *onednn_runtime_with(const char *kv, struct wino_log *log)
{
    return onednn_runtime_ex(kv, log != NULL ? wino_sink : NULL, log);
}

/* The debug logs of a session of PATH in the default configuration
 * (LOGS[0]), with direct_conv = no (LOGS[1]) and, when THIRD is given,
 * with that setting (LOGS[2]); USED (96 bytes) what the module reports
 * for direct_conv in the default configuration. */
static void kernel_logs(const char *path, const char *third, struct wino_log *logs, char *used)
{
    const char *kv[3] = {NULL, "direct_conv = no", third};
    int n = third != NULL ? 3 : 2;
    memset(logs, 0, sizeof *logs * (size_t)n);
    for (int i = 0; i < n; i++) {
        pl_runtime *rt = onednn_runtime_with(kv[i], &logs[i]);
        pl_session_destroy(session_for(rt, path));
        if (i == 0) {
            pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
            TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, used_sink, used));
        }
        pl_runtime_destroy(rt);
    }
}

/* GELU's tanh form as BLOOM writes it, 0.5x * (1 + tanh(0.79788456x * (1 +
 * 0.044715x^2))), with x^2 as Mul(Mul(x, 0.044715), x) and as
 * Mul(Mul(x, x), 0.044715): the nine nodes compile into one primitive
 * after the Neg that makes x (the debug log counts them) and agree with
 * the cpu module. */
static const char *model_gelu_factored(int square_first)
{
    struct mb m = {.seed = 47};
    int64_t xs[] = {2, 65, 129};
    mb_input(&m, "x", 3, xs);
    mb_scalar(&m, "c", 0.044715f);
    mb_scalar(&m, "k", 0.79788456f);
    mb_scalar(&m, "one", 1.0f);
    mb_scalar(&m, "half", 0.5f);
    /* from a producer in the subgraph, as after a MatMul: the core's
     * clusters grow from producers, and the pattern's three branches on a
     * graph input would start three subgraphs */
    mb_node(&m, "neg", "Neg", "\"x\"", "v", "");
    mb_node(&m, "h", "Mul", "\"v\",\"half\"", "xh", "");
    mb_node(&m, "a", "Mul", "\"k\",\"v\"", "xa", "");
    if (square_first) {
        mb_node(&m, "sq", "Mul", "\"v\",\"v\"", "x2", "");
        mb_node(&m, "sqc", "Mul", "\"x2\",\"c\"", "xc", "");
    } else {
        mb_node(&m, "sq", "Mul", "\"v\",\"c\"", "x2", "");
        mb_node(&m, "sqc", "Mul", "\"x2\",\"v\"", "xc", "");
    }
    mb_node(&m, "p1", "Add", "\"xc\",\"one\"", "xp", "");
    mb_node(&m, "e", "Mul", "\"xa\",\"xp\"", "xe", "");
    mb_node(&m, "tanh", "Tanh", "\"xe\"", "xt", "");
    mb_node(&m, "p2", "Add", "\"one\",\"xt\"", "x1", "");
    mb_node(&m, "out", "Mul", "\"xh\",\"x1\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_gelu_tanh_factored(void)
{
    int64_t xs[] = {2, 65, 129};
    for (int square_first = 0; square_first < 2; square_first++) {
        const char *path = model_gelu_factored(square_first);
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        TH_CHECK(strstr(log.text, "10 nodes into 2 primitives") != NULL,
                 "x^2 %s: log:\n%s", square_first ? "first" : "last", log.text);
        compare(path, 3, xs, 3, xs, (const char *[]){"h", "a", "sq", "tanh", "out", NULL});
    }
}

/* A net of 8 and 24 channels (a Keras U-Net's decoder) whose blocks of 16
 * channels would double its work runs its convolutions channels-last on
 * AVX-512 (the debug log says so), one of 16 and 32 channels stays
 * blocked, and so does one with a grouped convolution of whole blocks
 * (2 groups of 16), while one whose groups oneDNN has no blocked kernel
 * for (3 groups of 8: it runs channels-last anyway) is channels-last
 * throughout (odnn_grouped_unblocked). With a depthwise convolution the
 * padding must exceed 30%: 10 channels (1.6x) run channels-last, 40
 * (1.2x) blocked. All agree with the cpu module. */
static const char *model_narrow(int64_t c_mid, int64_t group)
{
    struct mb m = {.seed = 11};
    int64_t xs[] = {1, 3, 20, 20}, w1[] = {c_mid, 3, 3, 3}, w2[] = {c_mid, c_mid / group, 3, 3},
            w3[] = {2, c_mid, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, w1, NULL, 0.2f);
    mb_const(&m, "w2", 4, w2, NULL, 0.2f);
    mb_const(&m, "w3", 4, w3, NULL, 0.2f);
    const char *p1 = "\"pads\":{\"ints\":[1,1,1,1]}";
    char p2[96];
    snprintf(p2, sizeof p2, "\"pads\":{\"ints\":[1,1,1,1]},\"group\":{\"int\":%lld}",
             (long long)group);
    mb_node(&m, "conv1", "Conv", "\"x\",\"w1\"", "c1", p1);
    mb_node(&m, "relu1", "Relu", "\"c1\"", "r1", "");
    mb_node(&m, "conv2", "Conv", "\"r1\",\"w2\"", "c2", p2);
    mb_node(&m, "relu2", "Relu", "\"c2\"", "r2", "");
    mb_node(&m, "conv3", "Conv", "\"r2\",\"w3\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_narrow_channels_last(void)
{
    struct { int64_t c, group; int last; } cases[] = {
        {8, 1, 1}, {24, 1, 1}, {32, 1, 0}, {32, 2, 0}, {24, 3, 1}, {10, 10, 1}, {40, 40, 0}};
    int64_t xs[] = {1, 3, 20, 20}, ys[] = {1, 2, 20, 20};
    size_t nx = count(4, xs), ny = count(4, ys);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y), *ref = malloc(ny * sizeof *ref);
    TH_CHECK(x != NULL && y != NULL && ref != NULL, "out of memory");
    for (size_t i = 0; i < nx; i++)
        x[i] = sinf((float)i * 0.37f);
    char isa[64] = "";
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = model_narrow(cases[k].c, cases[k].group);
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log), *cpu = runtime_with("cpu");
        if (isa[0] == '\0') {
            pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
            TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
        }
        pl_session *s = session_for(rt, path), *sc = session_for(cpu, path);
        run_one(s, "x", x, 4, xs, "y", y, 4, ys);
        run_one(sc, "x", x, 4, xs, "y", ref, 4, ys);
        pl_session_destroy(s);
        pl_session_destroy(sc);
        pl_runtime_destroy(rt);
        pl_runtime_destroy(cpu);
        bool avx512 = strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "avx10", 5) == 0 ||
                      strncmp(isa, "amx", 3) == 0;
        bool said = strstr(log.text, "convolutions channels-last") != NULL;
        TH_CHECK(strstr(log.text, "primitives") != NULL, "%lld channels: no compile log:\n%s",
                 (long long)cases[k].c, log.text);
        TH_CHECK(said == (avx512 && cases[k].last), "%lld channels, group %lld (%s): log:\n%s",
                 (long long)cases[k].c, (long long)cases[k].group, isa, log.text);
        for (size_t i = 0; i < ny; i++)
            TH_CHECK(fabsf(y[i] - ref[i]) <= 1e-4f * fmaxf(fabsf(ref[i]), 1.0f),
                     "%lld channels: y[%zu] = %.9g, cpu %.9g", (long long)cases[k].c, i, y[i],
                     ref[i]);
    }
    free(x);
    free(y);
    free(ref);
}

/* Convolutions into at most 8 channels run on the module's narrow kernel
 * on AVX-512 (onednn_narrow.c; oneDNN computes 16 channels for them): from
 * a source blocked by 16 channels as the layer before wrote it, from a
 * channels-last one, in 1-D, as the 1-D convolution a [K, 1] kernel over a
 * width of 1 is, 1x1, with strides, asymmetric pads, a vertical dilation,
 * batches, windows over both borders and rows whose last tile is partial,
 * with the activations the kernel applies (sigmoid, leaky ReLU, ReLU, clip)
 * and one it leaves to a binary step (tanh). The debug log names the
 * kernel and the source's layout, and every result agrees with the cpu
 * module; a 16 -> 8 channel 3x3 (a full block's work each way) stays on
 * oneDNN, and with direct_conv = no every one does. Below AVX-512 the 1-D
 * one, the 3x21 one padded by 10 and a 20 -> 20 channel 1x31 one padded by
 * 15 are left to cpu with their reason (oneDNN would run its im2col GEMM:
 * odnn_conv_on_slow_kernel). */
struct narrow_case {
    int nd;           /* 3 or 4 */
    int64_t xs[4];    /* the input */
    int64_t pre;      /* a 3x3 convolution + Relu first (channels kept), 0: none */
    int64_t oc, kh, kw, sh, sw, dh, pt, pl, pb, pr;
    const char *act;  /* the node after it, "" for none */
    const char *source; /* what the log says of its source, NULL: not narrow */
    const char *fused;  /* "in the kernel" or "in a binary step" */
    int gemm;           /* 1: on oneDNN's GEMM below AVX-512 (refused); 2: also with it, maybe */
};

static const char *model_narrow_conv(const struct narrow_case *c, int64_t *ys)
{
    struct mb m = {.seed = 181};
    int two = c->nd == 4;
    mb_input(&m, "x", c->nd, c->xs);
    const char *src = "x";
    if (c->pre > 0) {
        mb_conv(&m, "pre", "x", "p", c->xs[1], c->xs[1], 3, 1, 1);
        mb_node(&m, "pre_relu", "Relu", "\"p\"", "pr", "");
        src = "pr";
    }
    int64_t ws[4] = {c->oc, c->xs[1], two ? c->kh : c->kw, c->kw};
    mb_const(&m, "nc_w", c->nd, ws, NULL, 1.0f / sqrtf((float)(c->xs[1] * c->kh * c->kw)));
    mb_const(&m, "nc_b", 1, (int64_t[]){c->oc}, NULL, 0.5f);
    char attrs[256], ins[64];
    if (two)
        snprintf(attrs, sizeof attrs,
                 "\"pads\":{\"ints\":[%lld,%lld,%lld,%lld]},\"strides\":{\"ints\":[%lld,%lld]},"
                 "\"dilations\":{\"ints\":[%lld,1]}",
                 (long long)c->pt, (long long)c->pl, (long long)c->pb, (long long)c->pr,
                 (long long)c->sh, (long long)c->sw, (long long)c->dh);
    else
        snprintf(attrs, sizeof attrs, "\"pads\":{\"ints\":[%lld,%lld]},\"strides\":{\"ints\":[%lld]}",
                 (long long)c->pl, (long long)c->pr, (long long)c->sw);
    snprintf(ins, sizeof ins, "\"%s\",\"nc_w\",\"nc_b\"", src);
    mb_node(&m, "nc", "Conv", ins, c->act[0] ? "h" : "y", attrs);
    if (strcmp(c->act, "LeakyRelu") == 0)
        mb_node(&m, "act", "LeakyRelu", "\"h\"", "y", "\"alpha\":{\"float\":0.1}");
    else if (strcmp(c->act, "Clip") == 0) {
        mb_scalar(&m, "lo", 0.0f);
        mb_scalar(&m, "hi", 0.5f);
        mb_node(&m, "act", "Clip", "\"h\",\"lo\",\"hi\"", "y", "");
    } else if (c->act[0])
        mb_node(&m, "act", c->act, "\"h\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    ys[0] = c->xs[0], ys[1] = c->oc;
    if (two)
        ys[2] = (c->xs[2] + c->pt + c->pb - (c->kh - 1) * c->dh - 1) / c->sh + 1;
    ys[c->nd - 1] = (c->xs[c->nd - 1] + c->pl + c->pr - c->kw) / c->sw + 1;
    return mb_write(&m);
}

static void case_narrow_conv(void)
{
    static const struct narrow_case cases[] = {
        {4, {1, 32, 13, 29}, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Sigmoid", "aBcd16b", "in the kernel",
         0},
        {4, {2, 8, 11, 37}, 1, 3, 5, 7, 2, 3, 2, 1, 3, 2, 0, "LeakyRelu", "channels last",
         "in the kernel", 0},
        {3, {1, 12, 50, 0}, 0, 2, 1, 9, 1, 1, 1, 0, 4, 0, 4, "Tanh", "channels last",
         "in a binary step", 1},
        {4, {1, 16, 40, 1}, 0, 4, 7, 1, 1, 1, 1, 3, 0, 3, 0, "Relu", "channels last",
         "in the kernel", 0},
        {4, {1, 8, 6, 50}, 1, 8, 3, 21, 1, 1, 1, 1, 10, 1, 10, "Relu", "channels last",
         "in the kernel", 1},
        {4, {1, 96, 7, 9}, 0, 5, 1, 1, 1, 1, 1, 0, 0, 0, 0, "", "channels last", "in the kernel",
         0},
        {4, {1, 40, 15, 15}, 0, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, "Clip", "channels last",
         "in the kernel", 0},
        {4, {1, 16, 12, 12}, 0, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu", NULL, NULL, 0},
        {4, {1, 20, 9, 40}, 0, 20, 1, 31, 1, 1, 1, 0, 15, 0, 15, "Relu", NULL, NULL, 2},
    };
    char isa[64] = "";
    bool avx512 = onednn_avx512(isa);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct narrow_case *c = &cases[k];
        int64_t ys[4], xs[4];
        memcpy(xs, c->xs, sizeof xs);
        const char *path = model_narrow_conv(c, ys);
        struct wino_log logs[2];
        char used[96] = "";
        kernel_logs(path, NULL, logs, used);
        const char *line = strstr(logs[0].text, "node 'nc': the module's narrow convolution");
        TH_CHECK(strstr(logs[1].text, "narrow convolution") == NULL,
                 "case %zu: narrow kernel with direct_conv = no:\n%s", k, logs[1].text);
        if (!avx512 || c->source == NULL) {
            TH_CHECK(line == NULL, "case %zu (%s): narrow kernel taken:\n%s", k, isa, logs[0].text);
        } else {
            char want[128];
            snprintf(want, sizeof want, "(%lld -> %lld channels, source %s), bias and %s",
                     (long long)c->xs[1], (long long)c->oc, c->source,
                     strcmp(c->fused, "in the kernel") == 0 ? "activation in the kernel"
                                                             : "post-ops in a binary step");
            TH_CHECK(line != NULL && strstr(line, want) != NULL &&
                         strstr(line, want) < strchr(line, '\n'),
                     "case %zu: want '%s'; log:\n%s", k, want, logs[0].text);
        }
        /* below AVX-512 oneDNN has only its im2col GEMM for these: the
         * module leaves them to cpu; with AVX-512 the last may be either */
        bool gemm = !avx512 && c->gemm != 0;
        if (gemm) {
            char label[32], chans[64];
            snprintf(label, sizeof label, "case %zu", k);
            snprintf(chans, sizeof chans, "%lld to %lld channels", (long long)c->xs[1],
                     (long long)c->oc);
            check_refused(path, "nc", (const char *[]){"only its im2col GEMM", chans, NULL},
                          label);
        }
        compare(path, c->nd, xs, c->nd, ys,
                gemm || c->gemm == 2 ? NULL : (const char *[]){"nc", NULL});
    }
}

/* Y[0] and Y[1] (N values, made with winograd = LABELS[0] and LABELS[1])
 * agree with the cpu module's Y[2] within Winograd's rounding: 1e-4 of a
 * value, or of a hundredth of the largest. */
static void wino_close(float *const *y, size_t n, const char *const *labels)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(y[2][i]));
    for (int r = 0; r < 2; r++)
        for (size_t i = 0; i < n; i++)
            TH_CHECK(fabs(y[r][i] - y[2][i]) <= 1e-4 * fmax(fabs(y[2][i]), 1e-2 * scale) + 1e-6,
                     "winograd = %s: y[%zu] = %.9g, cpu %.9g", labels[r], i, y[r][i], y[2][i]);
}

/* Compiles PATH on the onednn module directly, exports the blob, imports
 * it, runs both on X (one input and one output of the same shape XS) and
 * checks that they agree bit for bit; the result in Y (N values). */
static void blob_roundtrip(const char *path, const float *x, const int64_t *xs, size_t n,
                           float *y)
{
    struct direct d = direct_open(path);
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci));
    float *yi = malloc(n * sizeof *yi);
    TH_CHECK(yi != NULL, "out of memory");
    pl_compiled *cs[2] = {c, ci};
    float *ys[2] = {y, yi};
    for (int k = 0; k < 2; k++) {
        pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
        pl_tensor in = {.data = (void *)x, .ndim = 4, .dtype = PL_DTYPE_F32,
                        .shape = (int64_t *)xs, .struct_size = sizeof(pl_tensor),
                        .device = {PL_DEVICE_CPU, 0}};
        pl_tensor out = in;
        out.data = ys[k];
        pl_run_args a = {.header = PL_ABI_HEADER_INIT(pl_run_args), .run = &rc, .n_inputs = 1,
                         .inputs = &in, .n_outputs = 1, .outputs = &out};
        TH_CHECK_OK(d.api->run(d.m->ctx, cs[k], &a));
    }
    TH_CHECK(memcmp(y, yi, n * sizeof *y) == 0, "%s: the imported subgraph computes otherwise",
             path);
    d.api->release(d.m->ctx, c);
    d.api->release(d.m->ctx, ci);
    free(b.bytes);
    free(yi);
    direct_close(&d);
}

/* blob_roundtrip of PATH on cos(i * STEP) for an input and output of the
 * same 4-D shape XS. */
static void blob_roundtrip_cos(const char *path, const int64_t *xs, float step)
{
    size_t n = count(4, xs);
    float *xi = malloc(n * sizeof *xi), *yb = malloc(n * sizeof *yb);
    TH_CHECK(xi && yb, "out of memory");
    for (size_t i = 0; i < n; i++)
        xi[i] = cosf((float)i * step);
    blob_roundtrip(path, xi, xs, n, yb);
    free(xi);
    free(yb);
}

/* Dilated 3x3 convolutions of stride 1 run by phase on oneDNN's Winograd
 * kernel where the CPU has AVX-512 (onednn_phase.c): the source's rows and
 * columns of one residue gathered into images of their own, an undilated
 * convolution over them, its results scattered back. Dilations along both
 * axes, one axis only (the other keeps its padding), pads that are no
 * multiple of the dilation and asymmetric ones, extents that split unevenly,
 * a batch of 2, channels that pad their last block of 16, ReLU fused into
 * the kernel and a leaky ReLU and a clip applied in the scatter; the debug
 * log says so, and every result agrees with the cpu module. A sigmoid after
 * it (not a post-op Winograd or the scatter takes), a residual sum and
 * winograd = no keep the direct kernel. A blob of a phase-split layer
 * imports and computes the same bit for bit. */
struct phase_case {
    int64_t xs[4], oc, dh, dw, pt, pl, pb, pr;
    const char *act; /* "", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Residual" */
    const char *want; /* the log's "Winograd by phase, ..." on AVX-512, NULL: not by phase */
};

static const char *model_phase(const struct phase_case *c, int64_t *ys)
{
    struct mb m = {.seed = 229};
    mb_input(&m, "x", 4, c->xs);
    int64_t ws[4] = {c->oc, c->xs[1], 3, 3};
    mb_const(&m, "pw", 4, ws, NULL, 1.0f / sqrtf((float)(c->xs[1] * 9)));
    mb_const(&m, "pb", 1, (int64_t[]){c->oc}, NULL, 0.25f);
    char attrs[256];
    snprintf(attrs, sizeof attrs,
             "\"pads\":{\"ints\":[%lld,%lld,%lld,%lld]},\"dilations\":{\"ints\":[%lld,%lld]}",
             (long long)c->pt, (long long)c->pl, (long long)c->pb, (long long)c->pr,
             (long long)c->dh, (long long)c->dw);
    mb_node(&m, "pc", "Conv", "\"x\",\"pw\",\"pb\"", c->act[0] ? "h" : "y", attrs);
    if (strcmp(c->act, "LeakyRelu") == 0) {
        mb_node(&m, "act", "LeakyRelu", "\"h\"", "y", "\"alpha\":{\"float\":0.1}");
    } else if (strcmp(c->act, "Clip") == 0) {
        mb_scalar(&m, "lo", -0.6f);
        mb_scalar(&m, "hi", 0.7f);
        mb_node(&m, "act", "Clip", "\"h\",\"lo\",\"hi\"", "y", "");
    } else if (strcmp(c->act, "Residual") == 0) {
        mb_node(&m, "add", "Add", "\"h\",\"x\"", "s", "");
        mb_node(&m, "act", "Relu", "\"s\"", "y", "");
    } else if (c->act[0]) {
        mb_node(&m, "act", c->act, "\"h\"", "y", "");
    }
    m.outputs[m.n_outputs++] = "y";
    ys[0] = c->xs[0], ys[1] = c->oc;
    ys[2] = c->xs[2] + c->pt + c->pb - 2 * c->dh;
    ys[3] = c->xs[3] + c->pl + c->pr - 2 * c->dw;
    return mb_write(&m);
}

static void case_dilated_phase(void)
{
    static const struct phase_case cases[] = {
        {{1, 64, 40, 40}, 64, 2, 2, 2, 2, 2, 2, "Relu", "4 image(s) of 20x20"},
        {{2, 72, 33, 29}, 80, 2, 3, 2, 3, 2, 3, "LeakyRelu", "12 image(s) of 17x10"},
        {{1, 32, 50, 64}, 64, 2, 1, 1, 1, 1, 1, "Clip", "2 image(s) of 24x64"},
        {{1, 64, 40, 40}, 96, 4, 4, 3, 1, 5, 2, "", "16 image(s) of 10x9"},
        {{1, 64, 31, 36}, 64, 1, 3, 1, 3, 1, 3, "Relu", "3 image(s) of 31x12"},
        {{1, 64, 40, 40}, 64, 2, 2, 2, 2, 2, 2, "Sigmoid", NULL},
        {{1, 64, 40, 40}, 64, 2, 2, 2, 2, 2, 2, "Residual", NULL},
    };
    char isa[64] = "";
    bool avx512 = onednn_avx512(isa);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct phase_case *c = &cases[k];
        int64_t ys[4], xs[4];
        memcpy(xs, c->xs, sizeof xs);
        const char *path = model_phase(c, ys);
        struct wino_log logs[3];
        char used[96] = "";
        kernel_logs(path, "winograd = no", logs, used);
        const char *line = strstr(logs[0].text, "node 'pc': dilated");
        for (int r = 1; r < 3; r++)
            TH_CHECK(strstr(logs[r].text, "by phase") == NULL, "case %zu: by phase with %s:\n%s",
                     k, r == 1 ? "direct_conv = no" : "winograd = no", logs[r].text);
        if (!avx512 || c->want == NULL) {
            TH_CHECK(line == NULL, "case %zu (%s): by phase:\n%s", k, isa, logs[0].text);
        } else {
            char want[128];
            snprintf(want, sizeof want, "(%lld, %lld): Winograd by phase, %s", (long long)c->dh,
                     (long long)c->dw, c->want);
            TH_CHECK(line != NULL && strstr(line, want) != NULL &&
                         strstr(line, want) < strchr(line, '\n'),
                     "case %zu: want '%s'; log:\n%s", k, want, logs[0].text);
        }
        compare(path, 4, xs, 4, ys, (const char *[]){"pc", NULL});
        if (k == 0) /* same shape in and out: the blob round trip */
            blob_roundtrip_cos(path, xs, 0.05f);
    }
}

/* The Winograd descriptors of a subgraph are made ahead of its build,
 * several at once (odnn_wino_prefetch), from a guess of what each layer
 * will ask: here a 3x3 with its ReLU fused, one with a residual sum and
 * ReLU (its source written by a node before it), one with SiLU (which
 * Winograd refuses: asked without post-ops, the activation a step of its
 * own). On AVX-512 the debug log says all three guesses were used, and the
 * results agree with the cpu module whatever the CPU. */
static void case_winograd_ahead(void)
{
    struct mb m = {.seed = 303};
    int64_t xs[] = {1, 64, 24, 24};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "h1", 64, 64, 3, 1, 1);
    mb_node(&m, "r1", "Relu", "\"h1\"", "a1", "");
    mb_conv(&m, "c2", "a1", "h2", 64, 64, 3, 1, 1);
    mb_node(&m, "add", "Add", "\"h2\",\"x\"", "s2", "");
    mb_node(&m, "r2", "Relu", "\"s2\"", "a2", "");
    mb_conv(&m, "c3", "a2", "h3", 64, 64, 3, 1, 1);
    mb_node(&m, "sig", "Sigmoid", "\"h3\"", "g3", "");
    mb_node(&m, "silu", "Mul", "\"h3\",\"g3\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    char isa[64] = "";
    bool avx512 = onednn_avx512(isa);
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    pl_runtime_destroy(rt);
    const char *want = "Winograd descriptors made ahead, several at once: 3, 3 of them used";
    TH_CHECK(avx512 ? strstr(log.text, want) != NULL : strstr(log.text, "made ahead") == NULL,
             "%s: want '%s'%s; log:\n%s", isa, want, avx512 ? "" : " not", log.text);
    if (avx512)
        TH_CHECK(strstr(log.text, "node 'c1': Winograd") != NULL &&
                     strstr(log.text, "node 'c2': Winograd") != NULL &&
                     strstr(log.text, "node 'c3': Winograd with its activation") != NULL,
                 "not every layer took Winograd; log:\n%s", log.text);
    int64_t x2[4];
    memcpy(x2, xs, sizeof x2);
    compare(path, 4, x2, 4, xs, (const char *[]){"c1", "c2", "c3", NULL});
}

/* winograd = auto runs the 3x3 layers of 64 channels through oneDNN's
 * Winograd kernel where the CPU has AVX-512 (the debug log names each such
 * node), but not those of 32 (the direct kernel is faster there); below
 * AVX-512 both go through the module's own Winograd F(2x2, 3x3) (the log
 * says so; onednn_winograd.c); winograd = no never does; all agree with
 * the cpu module within tolerance. */
static void case_winograd(void)
{
    struct wino_log small;
    memset(&small, 0, sizeof small);
    pl_runtime *srt = onednn_runtime_with("winograd = auto", &small);
    pl_session_destroy(session_for(srt, model_wino(32)));
    /* The ISA oneDNN dispatches to, as the module reports it. */
    char isa[64] = "", direct[96] = "";
    pl_module *sm = srt->modules[pl_runtime_find_module(srt, "onednn")];
    TH_CHECK_OK(sm->api.configure(sm->ctx, NULL, 0, isa_sink, isa));
    TH_CHECK_OK(sm->api.configure(sm->ctx, NULL, 0, used_sink, direct));
    pl_runtime_destroy(srt);
    bool avx512 = strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "avx10", 5) == 0 ||
                  strncmp(isa, "amx", 3) == 0;
    bool own = strcmp(direct, "auto") == 0; /* the module's own kernels, below AVX-512 */
    if (own)
        TH_CHECK(strstr(small.text, "node 'conv1': the module's direct convolution "
                                    "(Winograd F(2x2, 3x3))") != NULL,
                 "32 channels below AVX-512: log:\n%s", small.text);
    else
        TH_CHECK(strstr(small.text, "primitives") != NULL && strstr(small.text, "Winograd") == NULL,
                 "32 channels: log:\n%s", small.text);
    const char *path = model_wino(64);
    int64_t xs[] = {1, 64, 14, 14};
    size_t n = count(4, xs);
    float *x = malloc(n * sizeof *x), *y[3];
    TH_CHECK(x != NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.11f);
    struct wino_log logs[2];
    memset(logs, 0, sizeof logs);
    pl_runtime *rts[3] = {onednn_runtime_with("winograd = auto", &logs[0]),
                          onednn_runtime_with("winograd = no", &logs[1]), runtime_with("cpu")};
    for (int r = 0; r < 3; r++) {
        y[r] = calloc(n, sizeof(float));
        TH_CHECK(y[r] != NULL, "out of memory");
        pl_session *s = session_for(rts[r], path);
        run_one(s, "x", x, 4, xs, "y", y[r], 4, xs);
        pl_session_destroy(s);
    }
    if (own)
        TH_CHECK(strstr(logs[0].text, "node 'conv1': the module's direct convolution (Winograd") !=
                         NULL &&
                     strstr(logs[0].text, "node 'conv2': the module's direct convolution "
                                          "(Winograd") != NULL,
                 "winograd = auto below AVX-512 did not use Winograd; log:\n%s", logs[0].text);
    if (avx512)
        TH_CHECK(strstr(logs[0].text, "node 'conv1': Winograd") != NULL &&
                     strstr(logs[0].text, "node 'conv2': Winograd") != NULL,
                 "winograd = auto on AVX-512 did not use Winograd; log:\n%s", logs[0].text);
    TH_CHECK(strstr(logs[1].text, "Winograd") == NULL, "winograd = no used it; log:\n%s",
             logs[1].text);
    wino_close(y, n, (const char *[]){"auto", "no"});
    for (int r = 0; r < 3; r++) {
        pl_runtime_destroy(rts[r]);
        free(y[r]);
    }
    free(x);

    /* A blob with Winograd weights imports and computes the same. */
    blob_roundtrip_cos(path, xs, 0.07f);
}

/* Four 3x3 layers of 512 channels over 20x20 (9 MiB of weights each):
 * oneDNN's Winograd F(4x4, 3x3) would hold a copy four times that size
 * for each. With winograd = auto its copies may add 85% of the
 * subgraph's constants (at least 16 MiB), so one layer takes it (27 MiB
 * more) and three stay direct (the
 * log names each, and the budget); winograd = all takes it for all four;
 * all agree with the cpu module, and a blob of the budgeted compile
 * imports (the import decides alike) and computes the same. AVX-512 only
 * (below it the module's own Winograd kernels run, outside the budget). */
static void case_winograd_budget(void)
{
    struct mb m = {.seed = 13};
    int64_t xs[] = {1, 512, 20, 20}, ws[] = {512, 512, 3, 3};
    mb_input(&m, "x", 4, xs);
    const char *pads = "\"pads\":{\"ints\":[1,1,1,1]}";
    static const char *const wn[4] = {"w1", "w2", "w3", "w4"}, *const cn[4] = {"conv1", "conv2",
                                                                            "conv3", "conv4"};
    static const char *const in[4] = {"\"x\",\"w1\"", "\"r1\",\"w2\"", "\"r2\",\"w3\"",
                                      "\"r3\",\"w4\""};
    static const char *const yn[4] = {"c1", "c2", "c3", "y"}, *const rn[3] = {"relu1", "relu2",
                                                                           "relu3"};
    static const char *const rin[3] = {"\"c1\"", "\"c2\"", "\"c3\""}, *const rout[3] = {"r1", "r2",
                                                                                      "r3"};
    for (int k = 0; k < 4; k++) {
        mb_const(&m, wn[k], 4, ws, NULL, 0.015f);
        mb_node(&m, cn[k], "Conv", in[k], yn[k], pads);
        if (k < 3)
            mb_node(&m, rn[k], "Relu", rin[k], rout[k], "");
    }
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    struct wino_log logs[2];
    memset(logs, 0, sizeof logs);
    pl_runtime *rts[3] = {onednn_runtime_with("winograd = auto", &logs[0]),
                          onednn_runtime_with("winograd = all", &logs[1]), runtime_with("cpu")};
    char isa[64] = "";
    pl_module *om = rts[0]->modules[pl_runtime_find_module(rts[0], "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    if (!(strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "avx10", 5) == 0 ||
          strncmp(isa, "amx", 3) == 0)) {
        for (int r = 0; r < 3; r++)
            pl_runtime_destroy(rts[r]);
        th_skip("oneDNN dispatches to %s, below AVX-512", isa);
    }
    size_t n = count(4, xs);
    float *x = malloc(n * sizeof *x), *y[3];
    TH_CHECK(x != NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.013f);
    for (int r = 0; r < 3; r++) {
        y[r] = calloc(n, sizeof(float));
        TH_CHECK(y[r] != NULL, "out of memory");
        pl_session *s = session_for(rts[r], path);
        run_one(s, "x", x, 4, xs, "y", y[r], 4, xs);
        pl_session_destroy(s);
    }
    int wino[2] = {0, 0}, over[2] = {0, 0};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 4; k++) {
            char want[96];
            snprintf(want, sizeof want, "node '%s': Winograd", cn[k]);
            wino[r] += strstr(logs[r].text, want) != NULL;
            snprintf(want, sizeof want, "node '%s': direct, not Winograd: its weights' Winograd",
                     cn[k]);
            over[r] += strstr(logs[r].text, want) != NULL;
        }
    TH_CHECK(wino[0] == 1 && over[0] == 3 &&
                 strstr(logs[0].text, "Winograd weight budget: 1 of 4 weights tensors") != NULL,
             "winograd = auto: %d Winograd, %d over the budget; log:\n%s", wino[0], over[0],
             logs[0].text);
    TH_CHECK(wino[1] == 4 && over[1] == 0, "winograd = all: %d Winograd, %d over; log:\n%s",
             wino[1], over[1], logs[1].text);
    wino_close(y, n, (const char *[]){"auto", "all"});
    for (int r = 0; r < 3; r++)
        pl_runtime_destroy(rts[r]);

    float *yb = malloc(n * sizeof *yb);
    TH_CHECK(yb != NULL, "out of memory");
    blob_roundtrip(path, x, xs, n, yb);
    TH_CHECK(memcmp(yb, y[0], n * sizeof *yb) == 0,
             "the direct compile computes otherwise than the session");
    free(yb);
    for (int r = 0; r < 3; r++)
        free(y[r]);
    free(x);
}

/* mobilenet_v2's first downsampling block: 1x1 expand 16->96 with Clip, a
 * 3x3 depthwise of STRIDE with Clip, 1x1 project to 24. Input 1x16x112x112
 * (oneDNN 2.6 picks its fused kernel by size: at 56x56 and below it has
 * only the reference one). */
static const char *model_expand_dw(int stride)
{
    struct mb m = {.seed = 43};
    mb_input(&m, "x", 4, (int64_t[]){1, 16, 112, 112});
    mb_scalar(&m, "lo", 0.0f);
    mb_scalar(&m, "hi", 6.0f);
    mb_inverted_block(&m, "blk", "x", "y", 16, 96, 24, stride);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* A 1x1 convolution takes the depthwise stride-2 convolution after it as a
 * post-op only where oneDNN has a real kernel for the pair (the log says
 * so): AVX-512 without AMX, 16->96 at 112x112. With AMX oneDNN 2.6 runs
 * 1x1 convolutions on brgemm, which takes no depthwise post-op, so the
 * module leaves the pair apart there, as on AVX2. Stride 1 never fuses
 * (only a reference kernel). Both agree with cpu either way. */
static void case_dw_fusion(void)
{
    for (int stride = 1; stride <= 2; stride++) {
        const char *path = model_expand_dw(stride);
        int64_t xs[] = {1, 16, 112, 112}, ys[] = {1, 24, 112 / stride, 112 / stride};
        compare(path, 4, xs, 4, ys,
                (const char *[]){"blk_exp", "blk_clip1", "blk_dw", "blk_clip2", "blk_proj",
                                 NULL});
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with("winograd = auto", &log);
        char isa[64] = "";
        pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
        TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
        bool avx512 = strncmp(isa, "avx512_core", 11) == 0 && strstr(isa, "amx") == NULL;
        pl_session_destroy(session_for(rt, path));
        bool fused = strstr(log.text, "with the depthwise 'blk_dw' fused") != NULL;
        TH_CHECK(stride == 2 ? fused || !avx512 : !fused, "stride %d: fused %d on %s; log:\n%s",
                 stride, fused, isa, log.text);
        pl_runtime_destroy(rt);
    }
}

/* ---- post-op chains ---------------------------------------------------------- */

/* Chains of elementwise ops after a primitive, as exporters write them
 * (Conv -> Mul(c) -> Add(d) is a folded affine). oneDNN 2.6's brgemm kernels
 * apply every eltwise post-op of one algorithm with the first one's
 * parameters, so each chain repeats an algorithm with other parameters:
 * before the fix, the affine one came out as (c*c)x. HardSigmoid (linear
 * then clip) and Selu (elu then linear) are two post-ops each. */
static const char *const chain_ops[][3] = {
    {"Mul:2.0", "Add:0.5", NULL},
    {"LeakyRelu:0.1", "LeakyRelu:0.3", NULL},
    {"Mul:2.0", "Relu", "Add:0.5"},
    {"Pow:2.0", "Pow:3.0", NULL},
    {"Clip:-0.5:0.7", "Clip:-0.2:0.3", NULL},
    {"Sub:0.25", "Div:4.0", "Mul:-3.0"},
    {"Add:1.0", "Relu", "Add:-0.5"},
    /* ops of two eltwise steps join a chain whole or not at all: clip,
     * linear, elu or an earlier linear would repeat */
    {"Clip:0.0:6.0", "HardSigmoid", NULL},
    {"Mul:2.0", "HardSigmoid", "Add:0.5"},
    {"HardSigmoid", "HardSigmoid", NULL},
    {"Selu", "Elu:0.5", NULL},
    {"Neg", "Mul:3.0", NULL},
    {"Max:0.3", "Min:0.8", NULL},
    {"Sigmoid", "Elu", "Round"},
};

/* Appends chain C after tensor IN (prefix P), ending in OUT. */
static void mb_chain(struct mb *m, const char *p, size_t c, const char *in, const char *out)
{
    char prev[64], name[48], cst[64], ins[224], attrs[96];
    snprintf(prev, sizeof prev, "%s", in);
    for (int k = 0; k < 3 && chain_ops[c][k] != NULL; k++) {
        char op[24];
        float a = 0, b = 0;
        int nv = sscanf(chain_ops[c][k], "%23[A-Za-z]:%f:%f", op, &a, &b);
        int last = k == 2 || chain_ops[c][k + 1] == NULL;
        snprintf(name, sizeof name, "%s_%d", p, k);
        char dst[64];
        snprintf(dst, sizeof dst, "%s", last ? out : name);
        attrs[0] = '\0';
        snprintf(ins, sizeof ins, "\"%s\"", prev);
        if (strcmp(op, "Clip") == 0) {
            char lo[64], hi[64];
            snprintf(lo, sizeof lo, "%s_lo", name);
            snprintf(hi, sizeof hi, "%s_hi", name);
            mb_scalar(m, lo, a);
            mb_scalar(m, hi, b);
            snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\"", prev, lo, hi);
        } else if (strchr("AMSDP", op[0]) != NULL && nv == 2) {
            snprintf(cst, sizeof cst, "%s_c", name);
            mb_const(m, cst, 1, (int64_t[]){1}, &a, 1);
            snprintf(ins, sizeof ins, "\"%s\",\"%s\"", prev, cst);
        } else if (nv == 2) {
            snprintf(attrs, sizeof attrs, "\"alpha\":{\"float\":%g}", a);
        }
        mb_node(m, name, op, ins, dst, attrs);
        snprintf(prev, sizeof prev, "%s", dst);
    }
}

/* Chains FIRST to LAST - 1 after a 3x3, a 1x1 and a depthwise convolution,
 * a MatMul and a Gemm with alpha, each against cpu, every node on onednn. */
static void run_chains(size_t first, size_t last)
{
    for (size_t c = first; c < last; c++) {
        for (int prim = 0; prim < 5; prim++) {
            struct mb m = {.seed = 40 + (uint32_t)(c * 5 + (size_t)prim)};
            int64_t xs[] = {1, 16, 10, 10}, ys[] = {1, 16, 10, 10};
            int64_t xm[] = {4, 24}, ym[] = {4, 16};
            int mat = prim >= 3;
            mb_input(&m, "x", mat ? 2 : 4, mat ? xm : xs);
            if (prim < 3)
                mb_conv(&m, "prim", "x", "h", 16, 16, prim == 1 ? 1 : 3, 1, prim == 2 ? 16 : 1);
            else {
                mb_const(&m, "w", 2, (int64_t[]){24, 16}, NULL, 0.3f);
                mb_node(&m, "prim", prim == 3 ? "MatMul" : "Gemm", "\"x\",\"w\"", "h",
                        prim == 3 ? "" : "\"alpha\":{\"float\":1.5}");
            }
            mb_chain(&m, "chain", c, "h", "y");
            m.outputs[m.n_outputs++] = "y";
            const char *nodes[] = {"prim", "chain_0", "chain_1", NULL, NULL};
            if (chain_ops[c][2] != NULL)
                nodes[3] = "chain_2";
            compare(mb_write(&m), mat ? 2 : 4, mat ? xm : xs, mat ? 2 : 4, mat ? ym : ys,
                    nodes);
        }
    }
}

/* The chains of one-step ops, and (a case of their own: the harness keeps
 * a bounded number of files per case) those with two-step ops. */
#define CHAINS_ONE_STEP 7

static void case_post_op_chains(void)
{
    run_chains(0, CHAINS_ONE_STEP);
}

static void case_post_op_pairs(void)
{
    run_chains(CHAINS_ONE_STEP, sizeof chain_ops / sizeof chain_ops[0]);
}

/* An Add that broadcasts the primitive's own result ([1,4,1,1] + x) is not
 * a post-op: fusing it as a residual sum made the compile fail ("reorder
 * failed") and the subgraph fall back to cpu with a warning. */
static void case_broadcast_add(void)
{
    struct mb m = {.seed = 5};
    int64_t xs[] = {1, 4, 8, 8};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, (int64_t[]){4, 4, 8, 8}, NULL, 0.1f);
    mb_node(&m, "p", "Conv", "\"x\",\"w\"", "h", "");
    mb_node(&m, "add", "Add", "\"h\",\"x\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    TH_CHECK(pl_session_warning_count(s) == 0, "%s", pl_session_warning(s, 0));
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    compare(path, 4, xs, 4, xs, (const char *[]){"p", NULL});
}

/* A Transpose's view [1,4,1,2] of [1,1,4,2] kept the stride 8 of its
 * moved size-1 axis; oneDNN's jit:uni binary then subtracted a broadcast
 * constant from it as if it were all zeros (found by tests/difftest). */
static void case_view_unit_dims(void)
{
    struct mb m = {.seed = 6};
    int64_t xs[] = {1, 1, 4, 2}, ys[] = {1, 4, 1, 2};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "c", 1, (int64_t[]){2}, NULL, 1.0f);
    mb_node(&m, "abs", "Abs", "\"x\"", "a", "");
    mb_node(&m, "tr", "Transpose", "\"a\"", "t", "\"perm\":{\"ints\":[1,2,0,3]}");
    mb_node(&m, "tanh", "Tanh", "\"t\"", "h", "");
    mb_node(&m, "sub", "Sub", "\"h\",\"c\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 4, xs, 4, ys, (const char *[]){"abs", "tr", "tanh", "sub", NULL});
}

/* ConvNeXt's head: a global ReduceMean without keepdims ([1,C,2,2] ->
 * [1,C]) read by the decomposed layer normalization, and by a Softmax.
 * oneDNN's reduction keeps the axes, and the normalization ran over
 * [1,C,1,1]'s last axis of 1 element (bench/zoo convnext_s). */
static void case_reduce_squeezed(void)
{
    for (int reader = 0; reader < 2; reader++) {
        struct mb m = {.seed = 8};
        int64_t xs[] = {1, 24, 2, 2}, ys[] = {1, 24};
        mb_input(&m, "x", 4, xs);
        mb_scalar(&m, "ln_two", 2.0f);
        mb_scalar(&m, "ln_eps", 1e-6f);
        mb_node(&m, "gap", "ReduceMean", "\"x\"", "g",
                "\"axes\":{\"ints\":[2,3]},\"keepdims\":{\"int\":0}");
        if (reader == 0)
            mb_layernorm(&m, "ln", "g", "y", 24);
        else
            mb_node(&m, "ln_0", "Softmax", "\"g\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        compare(mb_write(&m), 4, xs, 2, ys, (const char *[]){"gap", "ln_0", NULL});
    }
}

/* 3-d convolutions and pooling (video nets such as R3D-18, volumetric
 * U-Nets): a stem of 3x7x7 with stride (1, 2, 2) and asymmetric padding,
 * Relu, a 1x3x3 MaxPool (AveragePool in the second form), a residual block of 3x3x3 convolutions (the Add and Relu fused or not), a
 * 1x1x1 projection with stride 2, a grouped 3x3x3 and a GlobalAveragePool,
 * for 16 and 12 channels (blocked and channels-last subgraphs); each against the cpu
 * module and on onednn (refused for rank 5 before: every convolution went
 * to cpu, with one-node onednn islands between them). */
static void case_conv3d(void)
{
    for (int c = 0; c < 2; c++) {
        int64_t ch = c == 0 ? 16 : 12;
        struct mb m = {.seed = (uint32_t)(91 + c)};
        int64_t xs[] = {1, 3, 6, 20, 18};
        mb_input(&m, "x", 5, xs);
        mb_const(&m, "w0", 5, (int64_t[]){ch, 3, 3, 7, 7}, NULL, 0.05f);
        mb_const(&m, "b0", 1, (int64_t[]){ch}, NULL, 0.1f);
        mb_node(&m, "stem", "Conv", "\"x\",\"w0\",\"b0\"", "s",
                "\"pads\":{\"ints\":[1,3,2,1,3,3]},\"strides\":{\"ints\":[1,2,2]}");
        mb_node(&m, "relu0", "Relu", "\"s\"", "s0", "");
        mb_node(&m, "pool", c == 0 ? "MaxPool" : "AveragePool", "\"s0\"", "r0",
                "\"kernel_shape\":{\"ints\":[1,3,3]},\"pads\":{\"ints\":[0,1,1,0,1,1]},"
                "\"strides\":{\"ints\":[1,1,1]}");
        mb_const(&m, "w1", 5, (int64_t[]){ch, ch, 3, 3, 3}, NULL, 0.08f);
        mb_node(&m, "c1", "Conv", "\"r0\",\"w1\"", "h1", "\"pads\":{\"ints\":[1,1,1,1,1,1]}");
        mb_node(&m, "relu1", "Relu", "\"h1\"", "r1", "");
        mb_const(&m, "w2", 5, (int64_t[]){ch, ch, 3, 3, 3}, NULL, 0.08f);
        mb_const(&m, "b2", 1, (int64_t[]){ch}, NULL, 0.1f);
        mb_node(&m, "c2", "Conv", "\"r1\",\"w2\",\"b2\"", "h2",
                "\"pads\":{\"ints\":[1,1,1,1,1,1]}");
        mb_node(&m, "add", "Add", "\"h2\",\"r0\"", "a", "");
        mb_node(&m, "relu2", "Relu", "\"a\"", "r2", "");
        mb_const(&m, "w3", 5, (int64_t[]){2 * ch, ch, 1, 1, 1}, NULL, 0.2f);
        mb_node(&m, "proj", "Conv", "\"r2\",\"w3\"", "p", "\"strides\":{\"ints\":[2,2,2]}");
        mb_const(&m, "w4", 5, (int64_t[]){2 * ch, ch, 3, 3, 3}, NULL, 0.08f);
        mb_node(&m, "grouped", "Conv", "\"p\",\"w4\"", "g",
                "\"pads\":{\"ints\":[1,1,1,1,1,1]},\"group\":{\"int\":2}");
        mb_node(&m, "gap", "GlobalAveragePool", "\"g\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        int64_t ys[] = {1, 2 * ch, 1, 1, 1};
        compare(mb_write(&m), 5, xs, 5, ys,
                (const char *[]){"stem", "pool", "c1", "c2", "proj", "grouped", "gap", NULL});
    }
    /* RivaGAN's decoder: 1x11x11 kernels padded by 5, which below AVX-512
     * oneDNN runs only on its im2col GEMM or its reference kernel (45 s a
     * run at 32 channels on 1x160x160): left to cpu, which agrees */
    char isa[64] = "";
    bool avx512 = onednn_avx512(isa);
    for (int64_t d = 1; d <= 2; d++) {
        struct mb m = {.seed = 93};
        int64_t xs[] = {1, 16, d, 24, 24};
        mb_input(&m, "x", 5, xs);
        mb_const(&m, "w", 5, (int64_t[]){16, 16, 1, 11, 11}, NULL, 0.02f);
        mb_node(&m, "wide", "Conv", "\"x\",\"w\"", "h", "\"pads\":{\"ints\":[0,5,5,0,5,5]}");
        mb_node(&m, "tanh", "Tanh", "\"h\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        char label[64];
        snprintf(label, sizeof label, "3-D 1x11x11 over depth %lld", (long long)d);
        if (!avx512)
            check_refused(path, "wide",
                          (const char *[]){"only its im2col GEMM|only its reference kernel",
                                           "16 to 16 channels", NULL},
                          label);
        compare(path, 5, xs, 5, xs, NULL);
    }
}

/* A mean or sum over adjacent axes with kept axes after them: a
 * LayerNorm over the channels of [N, C, T] (wav2vec2's feature projection
 * once its Transpose is sunk), which oneDNN's reduction serves only with
 * its reference kernel. The module emits a product by a constant vector
 * reading the source through strides; each form against the cpu module,
 * and on onednn (refused before). */
static void case_reduce_middle(void)
{
    static const struct {
        int nd, ond;
        int64_t xs[4], ys[4];
        const char *op, *attrs;
    } forms[] = {
        {3, 3, {1, 48, 50}, {1, 48, 50}, "ReduceMean", "\"axes\":{\"ints\":[1]}"},
        {4, 2, {2, 6, 8, 20}, {2, 20}, "ReduceSum", "\"keepdims\":{\"int\":0}"},
        {4, 4, {3, 32, 5, 7}, {3, 32, 5, 7}, "ReduceMean", "\"axes\":{\"ints\":[-3]}"},
        {4, 4, {2, 1, 16, 9}, {2, 1, 16, 9}, "ReduceSum", ""},
    };
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        struct mb m = {.seed = (uint32_t)(31 + f)};
        int64_t xs[4], ys[4];
        memcpy(xs, forms[f].xs, sizeof xs);
        memcpy(ys, forms[f].ys, sizeof ys);
        mb_input(&m, "x", forms[f].nd, xs);
        int sum = forms[f].op[6] == 'S'; /* ReduceSum's axes are an input at opset 13 */
        if (sum)
            mb_shape(&m, "axes", 2, (const int64_t[]){1, 2});
        mb_node(&m, "red", forms[f].op, sum ? "\"x\",\"axes\"" : "\"x\"",
                forms[f].nd == forms[f].ond ? "r" : "y", forms[f].attrs);
        if (forms[f].nd == forms[f].ond) /* x - mean, as a LayerNorm starts */
            mb_node(&m, "sub", "Sub", "\"x\",\"r\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        compare(mb_write(&m), forms[f].nd, xs, forms[f].ond, ys, (const char *[]){"red", NULL});
    }
}

/* Twelve Conv -> Mul -> Add -> Relu blocks in a row, a folded BatchNorm
 * per layer: one wrong affine spoils every value. */
static void case_affine_stack(void)
{
    struct mb m = {.seed = 77};
    int64_t xs[] = {1, 8, 12, 12};
    mb_input(&m, "x", 4, xs);
    const char *in = "x";
    static char outs[12][16];
    for (int l = 0; l < 12; l++) {
        char conv[16], mul[16], add[16], relu[16], h[16], g[16], f[16], sc[16], sh[16];
        snprintf(conv, sizeof conv, "conv%d", l);
        snprintf(mul, sizeof mul, "mul%d", l);
        snprintf(add, sizeof add, "add%d", l);
        snprintf(relu, sizeof relu, "relu%d", l);
        snprintf(h, sizeof h, "h%d", l);
        snprintf(g, sizeof g, "g%d", l);
        snprintf(f, sizeof f, "f%d", l);
        snprintf(sc, sizeof sc, "sc%d", l);
        snprintf(sh, sizeof sh, "sh%d", l);
        snprintf(outs[l], sizeof outs[l], l == 11 ? "y" : "r%d", l);
        mb_conv(&m, conv, in, h, 8, 8, 3, 1, 1);
        mb_scalar(&m, sc, 1.25f + 0.05f * (float)l);
        mb_scalar(&m, sh, 0.1f * (float)(l % 3) - 0.1f);
        char ins[64];
        snprintf(ins, sizeof ins, "\"%s\",\"%s\"", h, sc);
        mb_node(&m, mul, "Mul", ins, g, "");
        snprintf(ins, sizeof ins, "\"%s\",\"%s\"", g, sh);
        mb_node(&m, add, "Add", ins, f, "");
        snprintf(ins, sizeof ins, "\"%s\"", f);
        mb_node(&m, relu, "Relu", ins, outs[l], "");
        in = outs[l];
    }
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 4, xs, 4, xs, (const char *[]){"conv0", "mul0", "add11", NULL});
}

/* ---- bf16 ------------------------------------------------------------------- */

/* Runs PATH (input x of XS, output y of YS) on a runtime, into Y. */
static void run_model(pl_runtime *rt, const char *path, float *x, int nd, int64_t *xs, float *y,
                      int ond, int64_t *ys)
{
    pl_session *s = session_for(rt, path);
    /* a compile that failed and fell back to cpu leaves a warning */
    TH_CHECK(pl_session_warning_count(s) == 0, "%s: %s", path, pl_session_warning(s, 0));
    run_one(s, "x", x, nd, xs, "y", y, ond, ys);
    pl_session_destroy(s);
}

/* bf16 results of convolutions read by everything else: eltwise, a
 * broadcast and a same-shape binary, a Concat with an f32 tensor, Softmax,
 * pooling and a product behind a Flatten. */
static const char *model_bf16_mixed(void)
{
    struct mb m = {.seed = 23};
    int64_t xs[] = {1, 16, 8, 8}, w1[] = {16, 16, 3, 3}, cb[] = {16, 1, 1}, w2[] = {8, 32, 1, 1},
            wg[] = {8, 4};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, w1, NULL, 0.1f);
    mb_const(&m, "cb", 3, cb, NULL, 0.5f);
    mb_const(&m, "w2", 4, w2, NULL, 0.3f);
    mb_const(&m, "wg", 2, wg, NULL, 0.5f);
    mb_node(&m, "c1", "Conv", "\"x\",\"w1\"", "a", "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "sig", "Sigmoid", "\"a\"", "s", "");
    mb_node(&m, "badd", "Add", "\"a\",\"cb\"", "ab", "");
    mb_node(&m, "mul", "Mul", "\"s\",\"ab\"", "p", "");
    mb_node(&m, "cat", "Concat", "\"p\",\"x\"", "c", "\"axis\":{\"int\":1}");
    mb_node(&m, "c2", "Conv", "\"c\",\"w2\"", "d", "");
    mb_node(&m, "sm", "Softmax", "\"d\"", "e", "\"axis\":{\"int\":-1}");
    mb_node(&m, "gap", "GlobalAveragePool", "\"e\"", "g", "");
    mb_node(&m, "flat", "Flatten", "\"g\"", "f", "");
    mb_node(&m, "fc", "Gemm", "\"f\",\"wg\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* The reorder steps of the plan onednn makes for all of PATH on RT. */
static int plan_reorders(pl_runtime *rt, const char *path, uint32_t *total)
{
    pl_module *m = rt->modules[pl_runtime_find_module(rt, "onednn")];
    pl_model *model = NULL;
    pl_graph_view *view = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &model));
    TH_CHECK_OK(pl_graph_view_create(model->graph, NULL, 0, &view));
    pl_compiled *c = NULL;
    TH_CHECK_OK(m->api.compile(m->ctx, 0, view, &c));
    struct blob b = {0};
    TH_CHECK_OK(m->api.export_compiled(m->ctx, c, blob_sink, &b));
    int n = count_steps(&b, 1 /* ODNN_S_REORDER */, total);
    m->api.release(m->ctx, c);
    free(b.bytes);
    pl_graph_view_destroy(view);
    pl_model_destroy(model);
    return n;
}

/* precision = bf16: convolutions and products with constant weights
 * compute in bf16 (the results differ from f32 in the third digit, and
 * agree with the cpu module within bf16's precision); a blob written under
 * bf16 is refused by an f32 instance, naming both settings. */
/* Layers that fill an AMX tile (channels, rows, K and N of at least 32),
 * which precision = bf16 computes in bf16 on AMX machines: two 3x3
 * convolutions of 64 channels on 16x16, and two 64x64 products. */
static const char *model_bf16_two_convs(uint32_t seed, int64_t ch, int64_t hw)
{
    struct mb m = {.seed = seed};
    mb_input(&m, "x", 4, (int64_t[]){1, ch, hw, hw});
    mb_conv(&m, "c1", "x", "h", ch, ch, 3, 1, 1);
    mb_node(&m, "r1", "Relu", "\"h\"", "a", "");
    mb_conv(&m, "c2", "a", "y", ch, ch, 3, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static const char *model_bf16_amx_conv(void)
{
    return model_bf16_two_convs(61, 64, 16);
}

/* Two 3x3 convolutions of 48 channels over 32x32, which oneDNN's Winograd
 * F(4x4, 3x3) kernel takes (odnn_wino_pays): without AMX they stay f32
 * under precision = bf16 (Winograd's 4x fewer multiplies beat bf16's
 * doubled rate: VGG-19 ran 80-88 ms in f32, 99 with its 3x3 layers in
 * bf16; odnn_wino_beats_bf16); with AMX they compute in bf16. */
static const char *model_bf16_wino(void)
{
    return model_bf16_two_convs(67, 48, 32);
}

/* A stem: 3 planes in, 24 out, 3x3 with stride 2 (18 multiply-adds per
 * value read or written). It stays f32 under precision = bf16: without
 * AMX its conversions cost what bf16 saves (tv_shufflenet_v2), with AMX
 * its 3 channels fill no tile. */
static const char *model_bf16_stem(void)
{
    struct mb m = {.seed = 69};
    mb_input(&m, "x", 4, (int64_t[]){1, 3, 32, 32});
    mb_conv(&m, "stem", "x", "y", 3, 24, 3, 2, 1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* precision = bf16 keeps some convolutions in f32 (a layer of 24 channels
 * out fills no AMX tile; without AMX, Winograd F(4x4) beats bf16): those
 * take oneDNN's Winograd kernel as under f32. A 128 -> 24 3x3 over 24x24
 * (PaddleOCR's detection neck has 96 -> 24 at 80x112): with AMX it ran
 * direct, 1.8 ms against Winograd's 1.0 in f32, and made ppocr4_det 1.15x
 * slower under bf16 than under f32. The debug log names the kernel. */
static void case_bf16_f32_winograd(void)
{
    char isa[64] = "";
    pl_runtime *rt = onednn_runtime();
    pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    pl_runtime_destroy(rt);
    if (strncmp(isa, "avx512_core", 11) != 0 && strncmp(isa, "amx", 3) != 0)
        return; /* oneDNN 2.6 has Winograd kernels for AVX-512 only */
    struct mb m = {.seed = 173};
    int64_t xs[] = {1, 128, 24, 24}, ys[] = {1, 24, 24, 24};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "h", 128, 24, 3, 1, 1);
    mb_node(&m, "r1", "Relu", "\"h\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *r = onednn_runtime_with(bf16 ? "precision = bf16" : NULL, &log);
        pl_session_destroy(session_for(r, path));
        pl_runtime_destroy(r);
        const char *line = strstr(log.text, "node 'c1': Winograd convolution (jit_wino_4x3");
        TH_CHECK(line != NULL, "on %s with precision = %s, c1 is not on Winograd F(4x4): log:\n%s",
                 isa, bf16 ? "bf16" : "f32", log.text);
    }
    float *x = malloc(count(4, xs) * sizeof *x), *yb = calloc(count(4, ys), 4),
          *yf = calloc(count(4, ys), 4);
    TH_CHECK(x && yb && yf, "out of memory");
    for (size_t i = 0; i < count(4, xs); i++)
        x[i] = sinf((float)i * 0.37f);
    pl_runtime *rb = onednn_runtime_with("precision = bf16", NULL), *rf = onednn_runtime();
    run_model(rb, path, x, 4, xs, yb, 4, ys);
    run_model(rf, path, x, 4, xs, yf, 4, ys);
    for (size_t i = 0; i < count(4, ys); i++)
        TH_CHECK(yb[i] == yf[i], "y[%zu] = %.8g under bf16, %.8g under f32: not the same kernel",
                 i, yb[i], yf[i]);
    pl_runtime_destroy(rb);
    pl_runtime_destroy(rf);
    free(x);
    free(yb);
    free(yf);
}

/* A 1-D convolution of 64 channels, width 3, stride 2 (wav2vec2's feature
 * extractor): with AMX it stays f32 under precision = bf16 (oneDNN's AMX
 * kernel ran such layers at half the f32 speed). */
static const char *model_bf16_conv1d(void)
{
    struct mb m = {.seed = 65};
    mb_input(&m, "x", 3, (int64_t[]){1, 64, 64});
    mb_const(&m, "w", 3, (int64_t[]){64, 64, 3}, NULL, 0.125f);
    mb_node(&m, "c1", "Conv", "\"x\",\"w\"", "h", "\"strides\":{\"ints\":[2]}");
    mb_node(&m, "r1", "Relu", "\"h\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* Two 1x1 convolutions of 64 channels at 16x16 (32 multiply-adds per value
 * they read and write, a mobile net's pointwise layer): with AMX they stay
 * f32 under precision = bf16 (the conversions cost more than AMX saves). */
static const char *model_bf16_pointwise(void)
{
    struct mb m = {.seed = 66};
    mb_input(&m, "x", 4, (int64_t[]){1, 64, 16, 16});
    mb_conv(&m, "c1", "x", "h", 64, 64, 1, 1, 1);
    mb_node(&m, "r1", "Relu", "\"h\"", "a", "");
    mb_conv(&m, "c2", "a", "y", 64, 64, 1, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* model_bf16_amx_conv's layers reading 8-bit values of a QDQ graph (a
 * QuantizeLinear -> DequantizeLinear pair before each, ONNX Runtime's QDQ
 * format): they stay f32 under precision = bf16 (odnn_dequantized). */
static const char *model_bf16_qdq_conv(void)
{
    struct mb m = {.seed = 63};
    mb_input(&m, "x", 4, (int64_t[]){1, 64, 16, 16});
    mb_scalar(&m, "s", 0.02f);
    mb_zero_point(&m, "z", 0, 128);
    mb_node(&m, "q1", "QuantizeLinear", "\"x\",\"s\",\"z\"", "xq", "");
    mb_node(&m, "dq1", "DequantizeLinear", "\"xq\",\"s\",\"z\"", "xd", "");
    mb_conv(&m, "c1", "xd", "h", 64, 64, 3, 1, 1);
    mb_node(&m, "r1", "Relu", "\"h\"", "a", "");
    mb_node(&m, "q2", "QuantizeLinear", "\"a\",\"s\",\"z\"", "aq", "");
    mb_node(&m, "dq2", "DequantizeLinear", "\"aq\",\"s\",\"z\"", "ad", "");
    mb_conv(&m, "c2", "ad", "y", 64, 64, 3, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* Two products by 64 x 64 constants with a Relu between, on X (ND dims). */
static const char *model_bf16_products(int nd, const int64_t *xs, uint32_t seed)
{
    struct mb m = {.seed = seed};
    mb_input(&m, "x", nd, xs);
    mb_const(&m, "w1", 2, (int64_t[]){64, 64}, NULL, 0.125f);
    mb_const(&m, "w2", 2, (int64_t[]){64, 64}, NULL, 0.125f);
    mb_node(&m, "mm1", "MatMul", "\"x\",\"w1\"", "h", "");
    mb_node(&m, "r1", "Relu", "\"h\"", "a", "");
    mb_node(&m, "mm2", "MatMul", "\"a\",\"w2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static const char *model_bf16_amx_matmul(void)
{
    return model_bf16_products(2, (int64_t[]){64, 64}, 62);
}

/* model_bf16_amx_matmul's products on [1, 8, 8, 64]: rows merged into
 * one [64, 64] product each (odnn_matmul); under precision = bf16 the
 * bf16 copy of A once failed its reorder ([1, 8, 8, 64] to [1, 1, 64, 64])
 * and with it the whole subgraph, which then ran on cpu. */
static const char *model_bf16_rows_merged(void)
{
    return model_bf16_products(4, (int64_t[]){1, 8, 8, 64}, 63);
}

static void case_bf16(void)
{
    struct {
        const char *path;
        int nd, ond;
        int64_t xs[4], ys[4];
    } models[11] = {{model_conv_residual(), 4, 4, {1, 16, 14, 14}, {1, 32, 7, 7}},
                   {model_matmul_gelu(), 3, 3, {2, 8, 32}, {2, 8, 32}},
                   {model_bf16_mixed(), 4, 2, {1, 16, 8, 8}, {1, 4}},
                   {model_bf16_amx_conv(), 4, 4, {1, 64, 16, 16}, {1, 64, 16, 16}},
                   {model_bf16_amx_matmul(), 2, 2, {64, 64}, {64, 64}},
                   {model_bf16_qdq_conv(), 4, 4, {1, 64, 16, 16}, {1, 64, 16, 16}},
                   {model_bf16_rows_merged(), 4, 4, {1, 8, 8, 64}, {1, 8, 8, 64}},
                   {model_bf16_conv1d(), 3, 3, {1, 64, 64}, {1, 64, 31}},
                   {model_bf16_pointwise(), 4, 4, {1, 64, 16, 16}, {1, 64, 16, 16}},
                   {model_bf16_wino(), 4, 4, {1, 48, 32, 32}, {1, 48, 32, 32}},
                   {model_bf16_stem(), 4, 4, {1, 3, 32, 32}, {1, 24, 16, 16}}};
    pl_runtime *rb = onednn_runtime_with("precision = bf16", NULL);
    pl_runtime *rf = onednn_runtime(), *rc = runtime_with("cpu");
    /* oneDNN has bf16 kernels for AVX-512 (native with AVX512-BF16 or AMX,
     * emulated on plain avx512_core); elsewhere it may fall back to f32. */
    char isa[64] = "";
    pl_module *om = rb->modules[pl_runtime_find_module(rb, "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    bool avx512 = strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "amx", 3) == 0;
    bool amx = strstr(isa, "amx") != NULL;
    for (int k = 0; k < 11; k++) {
        size_t nx = count(models[k].nd, models[k].xs), ny = count(models[k].ond, models[k].ys);
        float *x = malloc(nx * sizeof *x), *yb = calloc(ny, 4), *yf = calloc(ny, 4),
              *yc = calloc(ny, 4);
        TH_CHECK(x && yb && yf && yc, "out of memory");
        for (size_t i = 0; i < nx; i++)
            x[i] = sinf((float)i * 0.13f);
        run_model(rb, models[k].path, x, models[k].nd, models[k].xs, yb, models[k].ond,
                  models[k].ys);
        run_model(rf, models[k].path, x, models[k].nd, models[k].xs, yf, models[k].ond,
                  models[k].ys);
        run_model(rc, models[k].path, x, models[k].nd, models[k].xs, yc, models[k].ond,
                  models[k].ys);
        double scale = 0, diff_bf = 0;
        for (size_t i = 0; i < ny; i++)
            scale = fmax(scale, fabs(yc[i]));
        for (size_t i = 0; i < ny; i++) {
            TH_CHECK(fabs(yb[i] - yc[i]) <= 3e-2 * fmax(fabs(yc[i]), 0.1 * scale) + 1e-3,
                     "model %d: y[%zu] = %.6g in bf16, %.6g on cpu", k, i, yb[i], yc[i]);
            diff_bf = fmax(diff_bf, fabs(yb[i] - yf[i]));
        }
        /* Without AMX: dense spatial convolutions compute in bf16, products
         * not (their conversions cost more than bf16 saves): model 0 only
         * (model 1 is products only, and model 2's output depends on its
         * Gemm alone: a global average of a softmax over the last axis is
         * 1/W whatever the convolutions before it computed). With AMX: only
         * layers that fill a tile, with oneDNN's brgemm AMX kernels
         * (odnn_conv_bf16_pays): models 3, 4 and 6 (4's products with
         * their rows merged), not the 8- and 16-wide layers of 0 to 2.
         * Model 5's layers read dequantized 8-bit values: never. Model 7's
         * 1-D convolution: without AMX as model 0, with AMX not; model 8's
         * 1x1 layers neither (without AMX only wider kernels take bf16, with
         * AMX they do too little work per value). Model 9's layers with AMX;
         * without, Winograd F(4x4) in f32 beats bf16 (odnn_wino_beats_bf16);
         * model 3's 16x16 ones get F(2x2), which only ties bf16. Model 10's
         * stem of 3 channels: never. */
        bool want_bf16 = k == 5 || k == 10 ? false
                         : amx              ? k >= 3 && k != 7 && k != 8
                                            : avx512 && (k == 0 || k == 3 || k == 7);
        TH_CHECK(!want_bf16 || diff_bf > 1e-5 * scale,
                 "model %d: bf16 and f32 agree to %.3g: bf16 unused", k, diff_bf);
        TH_CHECK(!avx512 || want_bf16 || diff_bf <= 1e-6 * scale,
                 "model %d: computed in bf16 on %s, where it should not pay (|bf16 - f32| "
                 "%.3g)",
                 k, isa, diff_bf);
        printf("bf16: model %d max |bf16 - f32| %.3g (output scale %.3g)\n", k, diff_bf, scale);
        /* Activations stay bf16 from one convolution or product to the
         * next: the bf16 plan has at most one reorder more than the f32
         * one (which has them at its input, output and residual copies
         * only): the graph input converted to bf16 where f32 reads it. */
        uint32_t total = 0, total_f = 0;
        int reorders = plan_reorders(rb, models[k].path, &total);
        int reorders_f = plan_reorders(rf, models[k].path, &total_f);
        TH_CHECK(!avx512 || k == 2 /* mixes bf16 and f32 readers on purpose */ ||
                     reorders <= reorders_f + 1,
                 "model %d: %d reorders among %u steps in bf16, %d among %u in f32", k,
                 reorders, total, reorders_f, total_f);
        free(x);
        free(yb);
        free(yf);
        free(yc);
    }
    /* The blob records the precision. */
    pl_module *mb = rb->modules[pl_runtime_find_module(rb, "onednn")];
    pl_module *mf = rf->modules[pl_runtime_find_module(rf, "onednn")];
    pl_model *model = NULL;
    pl_graph_view *view = NULL;
    TH_CHECK_OK(pl_model_load(rb, models[0].path, &model));
    TH_CHECK_OK(pl_graph_view_create(model->graph, NULL, 0, &view));
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(mb->api.compile(mb->ctx, 0, view, &c));
    struct blob b = {0};
    TH_CHECK_OK(mb->api.export_compiled(mb->ctx, c, blob_sink, &b));
    if (avx512) {
        CHECK_ERROR(mf->api.import_compiled(mf->ctx, 0, view, b.bytes, b.n, &ci),
                    PL_CODE_INCOMPATIBLE, "precision = bf16, this instance has winograd = "
                                          "auto, precision = f32");
    } else {
        /* No bf16 below avx512_core: f32 it is, and configure says why. */
        char prec[96] = "";
        TH_CHECK_OK(mb->api.configure(mb->ctx, NULL, 0, precision_sink, prec));
        TH_CHECK(strcmp(prec, "f32 (bf16 asked for; this CPU has none)") == 0,
                 "precision on %s: %s", isa, prec);
    }
    TH_CHECK_OK(mb->api.import_compiled(mb->ctx, 0, view, b.bytes, b.n, &ci));
    mb->api.release(mb->ctx, c);
    mb->api.release(mb->ctx, ci);
    free(b.bytes);
    pl_graph_view_destroy(view);
    pl_model_destroy(model);
    pl_runtime_destroy(rb);
    pl_runtime_destroy(rf);
    pl_runtime_destroy(rc);
}

/* ---- recurrent layers ---------------------------------------------------------- */

/* One OP node ("rnn", input "x" [3,2,4], hidden 4, constant W, R and B, or
 * W as the input "w" when W_INPUT) with the extra attributes ATTRS (JSON or
 * ""); output "y". */
static const char *model_rnn(const char *op, const char *attrs, int dirs, int w_input)
{
    struct mb m = {.seed = 21, .opset = 14};
    int64_t gates = strcmp(op, "LSTM") == 0 ? 4 : strcmp(op, "GRU") == 0 ? 3 : 1;
    int64_t xs[] = {3, 2, 4}, ws[] = {dirs, gates * 4, 4}, bs[] = {dirs, 2 * gates * 4};
    mb_input(&m, "x", 3, xs);
    if (w_input)
        mb_input(&m, "w", 3, ws);
    else
        mb_const(&m, "w", 3, ws, NULL, 0.5f);
    mb_const(&m, "r", 3, ws, NULL, 0.5f);
    mb_const(&m, "b", 2, bs, NULL, 0.3f);
    char all[256];
    snprintf(all, sizeof all, "\"direction\":{\"string\":\"%s\"}%s%s",
             dirs == 2 ? "bidirectional" : "forward", attrs[0] ? "," : "", attrs);
    mb_node(&m, "rnn", op, "\"x\",\"w\",\"r\",\"b\"", "y", all);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* An i32 constant of 2 values (a recurrent node's sequence_lens): one
 * float slot each in the weights. */
static void mb_i32_pair(struct mb *m, const char *name, const int32_t vals[2])
{
    float slots[2];
    memcpy(slots, vals, sizeof slots);
    size_t at = m->n_weights;
    int64_t dims[1] = {2};
    mb_const(m, "unused", 1, dims, slots, 1.0f);
    /* mb_const appended an f32 entry; replace it with the i32 one */
    char *entry = strstr(m->tensors, "{\"name\":\"unused\"");
    if (entry > m->tensors && entry[-1] == ',')
        entry--;
    *entry = '\0';
    mb_append(m->tensors, sizeof m->tensors,
              "%s{\"name\":\"%s\",\"dtype\":\"i32\",\"shape\":[2],"
              "\"data\":{\"offset\":%zu,\"length\":8}}",
              m->tensors[0] ? "," : "", name, at * sizeof(float));
}

/* A forward LSTM like model_rnn's with the constant sequence_lens LENS
 * (one per batch row of 2; the sequence has 3 steps). */
static const char *model_rnn_lens(const int32_t lens[2])
{
    struct mb m = {.seed = 21, .opset = 14};
    int64_t xs[] = {3, 2, 4}, ws[] = {1, 16, 4}, bs[] = {1, 32};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 3, ws, NULL, 0.5f);
    mb_const(&m, "r", 3, ws, NULL, 0.5f);
    mb_const(&m, "b", 2, bs, NULL, 0.3f);
    mb_i32_pair(&m, "lens", lens);
    mb_node(&m, "rnn", "LSTM", "\"x\",\"w\",\"r\",\"b\",\"lens\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* A one-step LSTM ("x" [1, 1, IN], hidden H): its team joins once. */
static const char *model_lstm_step(int64_t in, int64_t h)
{
    struct mb m = {.seed = 23, .opset = 14};
    int64_t xs[] = {1, 1, in}, ws[] = {1, 4 * h, in}, rs[] = {1, 4 * h, h}, bs[] = {1, 8 * h};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 3, ws, NULL, 0.05f);
    mb_const(&m, "r", 3, rs, NULL, 0.05f);
    mb_const(&m, "b", 2, bs, NULL, 0.1f);
    char attrs[48];
    snprintf(attrs, sizeof attrs, "\"hidden_size\":{\"int\":%lld}", (long long)h);
    mb_node(&m, "rnn", "LSTM", "\"x\",\"w\",\"r\",\"b\"", "y", attrs);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* A recurrent node whose steps are small runs on one thread (its team
 * would join every step), unless its weights pass one core's cache: an
 * LSTM of 384 inputs and hidden 256 (2.6 MB) took 87 us a step on one
 * thread, 18 on two (each core's cache holds half). Hidden 32 stays on
 * one; both agree with the cpu module. */
static void case_rnn_team_cache(void)
{
    static const struct {
        int64_t in, h;
        const char *want;
    } cases[] = {{384, 256, "(0 on one thread)"}, {32, 32, "(1 on one thread)"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = model_lstm_step(cases[k].in, cases[k].h);
        int64_t xs[] = {1, 1, cases[k].in}, ys[] = {1, 1, 1, cases[k].h};
        compare(path, 3, xs, 4, ys, (const char *[]){"rnn", NULL});
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        int threads = pl_runtime_thread_count(rt);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        if (threads > 1)
            TH_CHECK(strstr(log.text, cases[k].want) != NULL, "in %lld, hidden %lld: no %s; log:\n%s",
                     (long long)cases[k].in, (long long)cases[k].h, cases[k].want, log.text);
    }
}

/* The combinations oneDNN's cells do not compute stay on cpu, each with a
 * reason explain shows; the same model without the attribute runs on
 * onednn and agrees with cpu. */
static void case_rnn_refusals(void)
{
    static const struct {
        const char *op, *attrs;
        int dirs, w_input;
        const char *reason;
    } cases[] = {
        {"LSTM", "", 1, 0, NULL},
        {"GRU", "\"linear_before_reset\":{\"int\":1}", 2, 0, NULL},
        {"RNN", "\"activations\":{\"strings\":[\"Relu\",\"Relu\"]}", 2, 0, NULL},
        {"LSTM", "\"clip\":{\"float\":1.5}", 1, 0, "clip"},
        {"LSTM", "\"input_forget\":{\"int\":1}", 1, 0, "input_forget"},
        {"LSTM", "\"activations\":{\"strings\":[\"Sigmoid\",\"Relu\",\"Tanh\"]}", 1, 0,
         "activation 'Relu'"},
        {"GRU", "\"activations\":{\"strings\":[\"HardSigmoid\",\"Tanh\"]}", 1, 0,
         "activation 'HardSigmoid'"},
        {"RNN", "\"activations\":{\"strings\":[\"Elu\"]}", 1, 0, "activation 'Elu'"},
        {"RNN", "\"activations\":{\"strings\":[\"Tanh\",\"Relu\"]}", 2, 0,
         "the same in both directions"},
        {"GRU", "", 1, 1, "W and R must be constants"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *path = model_rnn(cases[k].op, cases[k].attrs, cases[k].dirs,
                                     cases[k].w_input);
        int64_t xs[] = {3, 2, 4}, ys[] = {3, cases[k].dirs, 2, 4};
        if (cases[k].reason == NULL) {
            compare(path, 3, xs, 4, ys, (const char *[]){"rnn", NULL});
            continue;
        }
        char label[160];
        snprintf(label, sizeof label, "%s {%s}", cases[k].op, cases[k].attrs);
        check_refused(path, "rnn", (const char *[]){cases[k].reason, NULL}, label);
    }
    /* sequence_lens: taken when every row runs the whole sequence */
    int64_t xs[] = {3, 2, 4}, ys[] = {3, 1, 2, 4};
    compare(model_rnn_lens((const int32_t[]){3, 3}), 3, xs, 4, ys, (const char *[]){"rnn", NULL});
    check_refused(model_rnn_lens((const int32_t[]){3, 2}), "rnn",
                  (const char *[]){"sequence_lens", NULL}, "LSTM with sequence_lens [3,2]");
}

/* A bidirectional LSTM with peepholes and an initial state, all three
 * outputs: compiled, exported and imported (the weights in the packed
 * layout oneDNN picked come from the blob); both compute the same bytes
 * and the imported one exports the same blob. */
static void case_rnn_blob(void)
{
    struct mb m = {.seed = 5, .opset = 14};
    int64_t xs[] = {5, 3, 6}, ws[] = {2, 32, 6}, rs[] = {2, 32, 8}, bs[] = {2, 64},
            ps[] = {2, 24}, hs[] = {2, 3, 8};
    mb_input(&m, "x", 3, xs);
    mb_input(&m, "h0", 3, hs);
    mb_const(&m, "w", 3, ws, NULL, 0.4f);
    mb_const(&m, "r", 3, rs, NULL, 0.4f);
    mb_const(&m, "b", 2, bs, NULL, 0.3f);
    mb_const(&m, "p", 2, ps, NULL, 0.3f);
    mb_node(&m, "lstm", "LSTM", "\"x\",\"w\",\"r\",\"b\",\"\",\"h0\",\"\",\"p\"",
            "y\",\"yh\",\"yc", "\"direction\":{\"string\":\"bidirectional\"}");
    m.outputs[m.n_outputs++] = "y";
    m.outputs[m.n_outputs++] = "yh";
    m.outputs[m.n_outputs++] = "yc";
    struct direct d = direct_open(mb_write(&m));
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    TH_CHECK(b.n > (2 * 32 * 14) * sizeof(float), "blob of %zu bytes holds no weights", b.n);
    TH_CHECK_OK(d.api->import_compiled(d.m->ctx, 0, d.view, b.bytes, b.n, &ci));
    enum { NX = 5 * 3 * 6, NH = 2 * 3 * 8, NY = 5 * 2 * 3 * 8 };
    float x[NX], h0[NH], out[2][NY + 2 * NH];
    for (int i = 0; i < NX; i++)
        x[i] = sinf((float)i * 0.37f);
    for (int i = 0; i < NH; i++)
        h0[i] = cosf((float)i * 0.21f);
    int64_t ys[] = {5, 2, 3, 8};
    for (int k = 0; k < 2; k++) {
        pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
        pl_tensor in[2] = {{.data = x, .ndim = 3, .dtype = PL_DTYPE_F32, .shape = xs,
                            .struct_size = sizeof(pl_tensor), .device = {PL_DEVICE_CPU, 0}}};
        in[1] = in[0];
        in[1].data = h0;
        in[1].shape = hs;
        pl_tensor o[3] = {in[0], in[1], in[1]};
        o[0].data = out[k];
        o[0].ndim = 4;
        o[0].shape = ys;
        o[1].data = out[k] + NY;
        o[2].data = out[k] + NY + NH;
        memset(out[k], 0, sizeof out[k]);
        pl_run_args a = {.header = PL_ABI_HEADER_INIT(pl_run_args), .run = &rc, .n_inputs = 2,
                         .inputs = in, .n_outputs = 3, .outputs = o};
        TH_CHECK_OK(d.api->run(d.m->ctx, k ? ci : c, &a));
    }
    TH_CHECK(memcmp(out[0], out[1], sizeof out[0]) == 0, "imported LSTM computes otherwise");
    /* Y_h is Y's last step forward and its first backward */
    for (int i = 0; i < 3 * 8; i++)
        TH_CHECK(out[0][4 * 48 + i] == out[0][NY + i] && out[0][24 + i] == out[0][NY + 24 + i],
                 "Y_h[%d] is not Y's final state", i);
    reexport_and_close(&d, c, ci, &b);
}

/* A blob holds weights only (the primitives are made again from the
 * view), and an RNN's weights do not show its direction, layout or
 * activations: the subgraph's hash must, so that a cached blob of one is
 * not taken for the other. */
static void case_rnn_blob_attrs(void)
{
    static const char *const variants[] = {
        "\"activations\":{\"strings\":[\"Relu\"]}", "\"layout\":{\"int\":0}",
        "\"hidden_size\":{\"int\":4}"};
    struct direct a = direct_open(model_rnn("RNN", "", 1, 0));
    pl_compiled *c = NULL, *ci = NULL;
    TH_CHECK_OK(a.api->compile(a.m->ctx, 0, a.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(a.api->export_compiled(a.m->ctx, c, blob_sink, &b));
    for (size_t k = 0; k < sizeof variants / sizeof variants[0]; k++) {
        struct direct o = direct_open(model_rnn("RNN", variants[k], 1, 0));
        CHECK_ERROR(o.api->import_compiled(o.m->ctx, 0, o.view, b.bytes, b.n, &ci),
                    PL_CODE_INCOMPATIBLE, "another subgraph");
        direct_close(&o);
    }
    struct direct o = direct_open(model_rnn("RNN", "", 2, 0));
    CHECK_ERROR(o.api->import_compiled(o.m->ctx, 0, o.view, b.bytes, b.n, &ci),
                PL_CODE_INCOMPATIBLE, "another subgraph");
    direct_close(&o);
    a.api->release(a.m->ctx, c);
    free(b.bytes);
    direct_close(&a);
}

/* ---- ops taken since blob format 10 ----------------------------------------- */

/* The number of steps of kind KIND (onednn_subgraph.c's enum odnn_step_kind:
 * 6 eltwise, 7 binary, 11 reduction) in the plan onednn compiles for the
 * whole of PATH, the total in *TOTAL. */
static int plan_steps(const char *path, uint32_t kind, uint32_t *total)
{
    struct direct d = direct_open(path);
    pl_compiled *c = NULL;
    TH_CHECK_OK(d.api->compile(d.m->ctx, 0, d.view, &c));
    struct blob b = {0};
    TH_CHECK_OK(d.api->export_compiled(d.m->ctx, c, blob_sink, &b));
    int hits = count_steps(&b, kind, total);
    d.api->release(d.m->ctx, c);
    free(b.bytes);
    direct_close(&d);
    return hits;
}

/* The onednn refusal reason of NODE in a session of PATH ("" when taken). */
static void refusal_of(const char *path, const char *node, char *out, size_t size)
{
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    json_t *p = th_placement_of(root, node);
    const char *backend = json_string_value(json_object_get(p, "backend"));
    const char *why = json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
    snprintf(out, size, "%s", strcmp(backend, "onednn") == 0 || why == NULL ? "" : why);
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* One-input ops oneDNN computes as one or two eltwise steps: {op, attrs,
 * opset}. */
static const char *const unary_ops[][3] = {
    {"HardSigmoid", "", "13"},
    {"HardSigmoid", "\"alpha\":{\"float\":0.25},\"beta\":{\"float\":0.4}", "13"},
    {"HardSwish", "", "14"},
    {"Elu", "", "13"},
    {"Elu", "\"alpha\":{\"float\":0.7}", "13"},
    {"Selu", "", "13"},
    {"Selu", "\"alpha\":{\"float\":1.5},\"gamma\":{\"float\":2.0}", "13"},
    {"Neg", "", "13"},
    {"Round", "", "13"},
};

/* Each op on the graph's input (its own eltwise steps) and after a 3x3
 * convolution (post-ops: no eltwise step is left), against cpu. Round
 * reads 4x, so that values round both ways. Log is refused: oneDNN 2.6's
 * gives log(1) = -1.43e-6, where ONNX's conformance test wants 0 within
 * 1e-7; so is Softplus, whose soft_relu shares that log (softplus(-20) came
 * out -1.9e-6). */
static void case_unary_ops(void)
{
    for (size_t k = 0; k < sizeof unary_ops / sizeof unary_ops[0]; k++) {
        for (int after_conv = 0; after_conv < 2; after_conv++) {
            const char *op = unary_ops[k][0];
            struct mb m = {.seed = 50 + (uint32_t)k, .opset = atoi(unary_ops[k][2])};
            int64_t xs[] = {1, 16, 9, 9};
            mb_input(&m, "x", 4, xs);
            const char *in = "x";
            if (after_conv) {
                mb_conv(&m, "conv", "x", "h", 16, 16, 3, 1, 1);
                in = "h";
            }
            char ins[64];
            if (strcmp(op, "Round") == 0) {
                mb_scalar(&m, "four", 4.0f);
                snprintf(ins, sizeof ins, "\"%s\",\"four\"", in);
                mb_node(&m, "pre", "Mul", ins, "e", "");
                in = "e";
            }
            snprintf(ins, sizeof ins, "\"%s\"", in);
            mb_node(&m, "op", op, ins, "y", unary_ops[k][1]);
            m.outputs[m.n_outputs++] = "y";
            const char *path = mb_write(&m);
            compare(path, 4, xs, 4, xs, (const char *[]){"op", after_conv ? "conv" : NULL, NULL});
            uint32_t total;
            int elt = plan_steps(path, 6, &total);
            int pre = strcmp(op, "Round") == 0;
            int own = strcmp(op, "HardSigmoid") == 0 || strcmp(op, "Selu") == 0 ? 2 : 1;
            TH_CHECK(elt == (after_conv ? 0 : own + pre), "%s %s: %d eltwise steps of %u", op,
                     after_conv ? "after a convolution" : "alone", elt, total);
        }
    }
    struct mb m = {.seed = 49};
    int64_t xs[] = {2, 3};
    mb_input(&m, "x", 2, xs);
    mb_node(&m, "exp", "Exp", "\"x\"", "e", "");
    mb_node(&m, "log", "Log", "\"e\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 2, xs, 2, xs, (const char *[]){"exp", NULL});
    char why[256];
    refusal_of(path, "log", why, sizeof why);
    TH_CHECK(strstr(why, "log(1)") != NULL, "Log: onednn said '%s'", why);
    struct mb sp = {.seed = 48};
    mb_input(&sp, "x", 2, xs);
    mb_node(&sp, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&sp, "softplus", "Softplus", "\"r\"", "y", "");
    sp.outputs[sp.n_outputs++] = "y";
    path = mb_write(&sp);
    compare(path, 2, xs, 2, xs, (const char *[]){"relu", NULL});
    refusal_of(path, "softplus", why, sizeof why);
    TH_CHECK(strstr(why, "soft_relu") != NULL, "Softplus: onednn said '%s'", why);
}

/* x * Sigmoid(x) and x * HardSigmoid(x) (alpha 1/6, beta 1/2) after
 * convolutions, as EfficientNet and MobileNetV3 write SiLU and Hardswish:
 * swish and hardswish post-ops, so the plan has no eltwise and no binary
 * step; the Mul's inputs in either order; a squeeze-and-excitation gate
 * (HardSigmoid after the 1x1, then a per-channel Mul) on onednn too. With
 * HardSigmoid's default alpha (0.2) the pattern is not hardswish: separate
 * steps, the same values as cpu. */
static const char *model_swish(int hard_alpha_default)
{
    struct mb m = {.seed = 61};
    mb_input(&m, "x", 4, (int64_t[]){1, 8, 12, 12});
    mb_conv(&m, "c1", "x", "a1", 8, 24, 3, 1, 1);
    mb_node(&m, "sig", "Sigmoid", "\"a1\"", "s1", "");
    mb_node(&m, "silu", "Mul", "\"a1\",\"s1\"", "h1", "");
    mb_conv(&m, "c2", "h1", "a2", 24, 24, 3, 2, 24);
    mb_node(&m, "hsig", "HardSigmoid", "\"a2\"", "s2",
            hard_alpha_default ? "" : "\"alpha\":{\"float\":0.1666666716337204}");
    mb_node(&m, "hswish", "Mul", "\"s2\",\"a2\"", "h2", "");
    mb_node(&m, "gap", "GlobalAveragePool", "\"h2\"", "g", "");
    mb_conv(&m, "fc", "g", "f", 24, 24, 1, 1, 1);
    mb_node(&m, "gate", "HardSigmoid", "\"f\"", "gs", "\"alpha\":{\"float\":0.1666666716337204}");
    mb_node(&m, "scale", "Mul", "\"h2\",\"gs\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_swish_patterns(void)
{
    for (int def = 0; def < 2; def++) {
        const char *path = model_swish(def);
        compare(path, 4, (int64_t[]){1, 8, 12, 12}, 4, (int64_t[]){1, 24, 6, 6},
                (const char *[]){"c1", "sig", "silu", "c2", "hsig", "hswish", "gap", "fc",
                                 "gate", "scale", NULL});
        /* c1 through the module's direct kernel (step kind 15, below
         * AVX-512) takes its swish in a binary step after it */
        uint32_t total;
        int elt = plan_steps(path, 6, &total), bin = plan_steps(path, 7, &total);
        int direct = plan_steps(path, 15, &total);
        TH_CHECK(def ? elt == 2 && bin == 2 + direct : elt == 0 && bin == 1 + direct,
                 "%s: %d eltwise, %d binary and %d direct steps of %u",
                 def ? "alpha 0.2" : "hardswish", elt, bin, direct, total);
    }
    /* on the graph's input: one eltwise step for the pair */
    struct mb m = {.seed = 62};
    int64_t xs[] = {2, 5, 7};
    mb_input(&m, "x", 3, xs);
    mb_node(&m, "sig", "Sigmoid", "\"x\"", "s", "");
    mb_node(&m, "silu", "Mul", "\"s\",\"x\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 3, xs, 3, xs, (const char *[]){"sig", "silu", NULL});
    uint32_t total;
    int elt = plan_steps(path, 6, &total);
    TH_CHECK(elt == 1 && plan_steps(path, 7, &total) == 0, "%d eltwise steps of %u", elt, total);
}

/* Hardswish written out (paddle2onnx's and TensorFlow converters' form):
 * Add(x, 3) -> Clip(0, 6) -> Mul(x) -> Div(6) after one convolution, and
 * Add(3, x) -> Clip -> Mul by 1/6 -> Mul(x) after the next: each one
 * hardswish post-op, so the plan has no eltwise and no binary step beyond
 * the direct kernel's; the same values as cpu. With 5 in place of 6 in
 * the Clip it is not hardswish: separate steps, still equal. */
static const char *model_hswish_explicit(float clip_hi)
{
    struct mb m = {.seed = 64};
    mb_input(&m, "x", 4, (int64_t[]){1, 8, 12, 12});
    mb_scalar(&m, "three", 3.0f);
    mb_scalar(&m, "zero", 0.0f);
    mb_scalar(&m, "hi", clip_hi);
    mb_scalar(&m, "six", 6.0f);
    mb_scalar(&m, "sixth", 1.0f / 6.0f);
    mb_conv(&m, "c1", "x", "a1", 8, 24, 3, 1, 1);
    mb_node(&m, "add1", "Add", "\"a1\",\"three\"", "p1", "");
    mb_node(&m, "clip1", "Clip", "\"p1\",\"zero\",\"hi\"", "r1", "");
    mb_node(&m, "mul1", "Mul", "\"a1\",\"r1\"", "q1", "");
    mb_node(&m, "div1", "Div", "\"q1\",\"six\"", "h1", "");
    mb_conv(&m, "c2", "h1", "a2", 24, 24, 3, 2, 24);
    mb_node(&m, "add2", "Add", "\"three\",\"a2\"", "p2", "");
    mb_node(&m, "clip2", "Clip", "\"p2\",\"zero\",\"hi\"", "r2", "");
    mb_node(&m, "sixth2", "Mul", "\"r2\",\"sixth\"", "g2", "");
    mb_node(&m, "mul2", "Mul", "\"g2\",\"a2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_hswish_explicit(void)
{
    for (int other = 0; other < 2; other++) {
        const char *path = model_hswish_explicit(other ? 5.0f : 6.0f);
        compare(path, 4, (int64_t[]){1, 8, 12, 12}, 4, (int64_t[]){1, 24, 6, 6},
                (const char *[]){"c1", "add1", "clip1", "mul1", "div1", "c2", "add2", "clip2",
                                 "sixth2", "mul2", NULL});
        uint32_t total;
        int elt = plan_steps(path, 6, &total), bin = plan_steps(path, 7, &total);
        int direct = plan_steps(path, 15, &total);
        TH_CHECK(other ? elt + bin >= 2 : elt == 0 && bin == direct,
                 "%s: %d eltwise, %d binary and %d direct steps of %u",
                 other ? "Clip(0, 5)" : "hardswish", elt, bin, direct, total);
    }
}

/* Denormal weights are zeros in onednn's copy of them (a multiply by one
 * costs a microcode assist: two of PP-OCRv5's 1x1 convolutions took 43 of
 * its 62 ms): a 1x1 convolution of 16 channels whose weights are
 * denormals, except w[o][o] = 0.5 on even o, times an input of 1e30, gives
 * 0.5e30 on even channels and exactly 0 on odd ones (1e30 * 1e-40 = 1e-10
 * per weight without the flush); a MatMul with a constant of denormals
 * too. */
static void case_denormal_weights(void)
{
    enum { C = 16, HW = 4 };
    struct mb m = {.seed = 65};
    int64_t xs[] = {1, C, HW, HW};
    float w[C * C], bias[C] = {0};
    for (int o = 0; o < C; o++)
        for (int i = 0; i < C; i++)
            w[o * C + i] = o == i && o % 2 == 0 ? 0.5f : (i % 3 == 0 ? -1e-40f : 3e-39f);
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, (int64_t[]){C, C, 1, 1}, w, 1);
    mb_const(&m, "b", 1, (int64_t[]){C}, bias, 1);
    mb_node(&m, "conv", "Conv", "\"x\",\"w\",\"b\"", "c", "");
    mb_const(&m, "wm", 2, (int64_t[]){HW, HW}, w, 1); /* w[0..15]: 0.5 at [0][0] */
    mb_node(&m, "mm", "MatMul", "\"c\",\"wm\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    for (int k = 0; k < 2; k++) {
        const char *node = k ? "mm" : "conv";
        json_t *pl = th_placement_of(root, node);
        TH_CHECK(strcmp(json_string_value(json_object_get(pl, "backend")), "onednn") == 0,
                 "%s did not run on onednn", node);
    }
    json_decref(root);
    float x[C * HW * HW], y[C * HW * HW];
    for (size_t i = 0; i < C * HW * HW; i++)
        x[i] = 1e30f;
    run_one(s, "x", x, 4, xs, "y", y, 4, xs);
    /* c = 0.5e30 on even channels, 0 on odd; y = c x wm: column 0 gets
     * c * 0.5, the other columns only denormal products. */
    for (int o = 0; o < C; o++)
        for (int r = 0; r < HW; r++)
            for (int col = 0; col < HW; col++) {
                float got = y[(o * HW + r) * HW + col];
                float want = o % 2 == 0 && col == 0 ? 0.25e30f : 0.0f;
                TH_CHECK(fabsf(got - want) <= 1e-6f * fabsf(want),
                         "y[%d][%d][%d] = %g, expected %g (a denormal weight counted)", o, r, col,
                         got, want);
            }
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A big weight (4 MB: onednn's own matrix-vector kernel reads it in
 * place when it holds no denormal) of denormals but for 0.5 on its
 * diagonal, times a row of 1e30: the denormals must not count (1e30 *
 * 1e-39 = 1e-9 each) in a first session, whose compile scans the weight,
 * nor in the next two, whose compiles may find the verdict by digest.
 * (Where the threads run with denormals as zero the products vanish
 * either way: then this checks the values, not which path gave them.) */
static void case_denormal_big_weight(void)
{
    enum { K = 1024, N = 1024 };
    struct mb m = {.seed = 66};
    float *w = malloc((size_t)K * N * sizeof *w);
    TH_CHECK(w != NULL, "out of memory");
    for (int k = 0; k < K; k++)
        for (int n = 0; n < N; n++)
            w[k * N + n] = k == n ? 0.5f : ((k + n) % 3 == 0 ? -2e-39f : 3e-39f);
    int64_t xs[] = {1, K}, ys[] = {1, N};
    mb_input(&m, "x", 2, xs);
    mb_const(&m, "w", 2, (int64_t[]){K, N}, w, 1);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    free(w);
    pl_runtime *rt = onednn_runtime();
    float x[K], y[N];
    for (size_t i = 0; i < K; i++)
        x[i] = 1e30f;
    for (int pass = 0; pass < 3; pass++) {
        pl_session *s = session_for(rt, path);
        json_t *root = th_explain(s);
        json_t *pl = th_placement_of(root, "mm");
        TH_CHECK(strcmp(json_string_value(json_object_get(pl, "backend")), "onednn") == 0,
                 "pass %d: mm did not run on onednn", pass);
        json_decref(root);
        run_one(s, "x", x, 2, xs, "y", y, 2, ys);
        for (int r = 0; r < 1; r++)
            for (int n = 0; n < N; n++) {
                float want = n < K ? 0.5e30f : 0.0f;
                TH_CHECK(fabsf(y[r * N + n] - want) <= 1e-6f * fabsf(want),
                         "pass %d: y[%d][%d] = %g, expected %g (a denormal weight counted)",
                         pass, r, n, y[r * N + n], want);
            }
        pl_session_destroy(s);
    }
    pl_runtime_destroy(rt);
}

/* Max and Min: of two activations, of a per-channel and a per-row
 * constant, and of a scalar (a clip, fused after the convolution). */
static void case_max_min(void)
{
    struct mb m = {.seed = 63};
    int64_t xs[] = {1, 16, 8, 8};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "a", 16, 16, 3, 1, 1);
    mb_conv(&m, "c2", "x", "b", 16, 16, 1, 1, 1);
    mb_const(&m, "pc", 4, (int64_t[]){1, 16, 1, 1}, NULL, 0.5f);
    mb_const(&m, "row", 1, (int64_t[]){8}, NULL, 0.5f);
    mb_scalar(&m, "lo", -0.2f);
    mb_scalar(&m, "hi", 0.4f);
    mb_node(&m, "max_ab", "Max", "\"a\",\"b\"", "t1", "");
    mb_node(&m, "min_pc", "Min", "\"pc\",\"t1\"", "t2", "");
    mb_node(&m, "max_row", "Max", "\"t2\",\"row\"", "t3", "");
    mb_conv(&m, "c3", "t3", "t4", 16, 16, 3, 1, 1);
    mb_node(&m, "max_lo", "Max", "\"t4\",\"lo\"", "t5", "");
    mb_node(&m, "min_hi", "Min", "\"hi\",\"t5\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 4, xs, 4, xs,
            (const char *[]){"c1", "c2", "max_ab", "min_pc", "max_row", "c3", "max_lo",
                             "min_hi", NULL});
}

/* IN [1, C, H, W] shuffled in GROUPS: Reshape to [1, GROUPS, C/GROUPS, H,
 * W], Transpose of axes 1 and 2, Reshape back (ShuffleNet's). */
static void mb_shuffle(struct mb *m, const char *p, const char *in, const char *out, int64_t c,
                       int64_t groups, int64_t h, int64_t w)
{
    char names[4][48], ins[120];
    for (int k = 0; k < 4; k++)
        snprintf(names[k], sizeof names[k], "%s_%d", p, k);
    mb_shape(m, names[0], 5, (int64_t[]){1, groups, c / groups, h, w});
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", in, names[0]);
    mb_node(m, names[1], "Reshape", ins, names[2], "");
    mb_node(m, p, "Transpose", (snprintf(ins, sizeof ins, "\"%s\"", names[2]), ins), names[3],
            "\"perm\":{\"ints\":[0,2,1,3,4]}");
    char back[48];
    snprintf(back, sizeof back, "%s_shape", p);
    mb_shape(m, back, 4, (int64_t[]){1, c, h, w});
    snprintf(ins, sizeof ins, "\"%s\",\"%s\"", names[3], back);
    mb_node(m, (snprintf(names[0], sizeof names[0], "%s_back", p), names[0]), "Reshape", ins,
            out, "");
}

/* Channel shuffles (odnn_shuffle: one step of the module's own instead of
 * three copies) on each layout their source can have: the row-major graph
 * input, a dense 3x3 convolution's channel-blocked output, a grouped 1x1
 * convolution's channels-last one (oneDNN's brgconv), with 136 channels
 * (a padded last block of 16) and 24; each read by a depthwise
 * convolution, as in ShuffleNet. The outputs agree with the cpu module's. */
static void case_channel_shuffle(void)
{
    struct mb m = {.seed = 66};
    int64_t xs[] = {1, 24, 14, 14}, ys[] = {1, 136, 14, 14};
    mb_input(&m, "x", 4, xs);
    mb_shuffle(&m, "sh0", "x", "s0", 24, 4, 14, 14);
    mb_conv(&m, "c1", "s0", "a", 24, 24, 3, 1, 24);
    mb_conv(&m, "c2", "a", "b", 24, 136, 3, 1, 1);
    mb_shuffle(&m, "sh1", "b", "s1", 136, 4, 14, 14);
    mb_conv(&m, "c3", "s1", "d", 136, 136, 3, 1, 136);
    mb_conv(&m, "c4", "d", "e", 136, 136, 1, 1, 4);
    mb_node(&m, "r4", "Relu", "\"e\"", "f", "");
    mb_shuffle(&m, "sh2", "f", "s2", 136, 8, 14, 14);
    mb_conv(&m, "c5", "s2", "y", 136, 136, 3, 1, 136);
    m.outputs[m.n_outputs++] = "y";
    compare(mb_write(&m), 4, xs, 4, ys,
            (const char *[]){"sh0", "c1", "c2", "sh1", "c3", "c4", "sh2", "c5", NULL});
}

/* Squeeze and Unsqueeze are views: axes as an attribute (opset 11) and as
 * a constant input (opset 13), around a MatMul and a Relu. */
static void case_squeeze_views(void)
{
    for (int opset = 11; opset <= 13; opset += 2) {
        struct mb m = {.seed = 64, .opset = opset};
        int64_t xs[] = {2, 1, 6, 8}, ys[] = {2, 1, 6, 4};
        mb_input(&m, "x", 4, xs);
        mb_const(&m, "w", 2, (int64_t[]){8, 4}, NULL, 0.3f);
        mb_node(&m, "relu0", "Relu", "\"x\"", "r", "");
        if (opset == 11) {
            mb_node(&m, "sq", "Squeeze", "\"r\"", "s", "\"axes\":{\"ints\":[1]}");
        } else {
            mb_shape(&m, "ax", 1, (int64_t[]){1});
            mb_node(&m, "sq", "Squeeze", "\"r\",\"ax\"", "s", "");
        }
        mb_node(&m, "mm", "MatMul", "\"s\",\"w\"", "p", "");
        if (opset == 11) {
            mb_node(&m, "unsq", "Unsqueeze", "\"p\"", "u", "\"axes\":{\"ints\":[-3]}");
        } else {
            mb_shape(&m, "ax2", 1, (int64_t[]){-3});
            mb_node(&m, "unsq", "Unsqueeze", "\"p\",\"ax2\"", "u", "");
        }
        mb_node(&m, "tanh", "Tanh", "\"u\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        compare(mb_write(&m), 4, xs, 4, ys,
                (const char *[]){"relu0", "sq", "mm", "unsq", "tanh", NULL});
    }
}

/* LogSoftmax over the last axis (opset 13's default, opset 11's axis 1 of
 * a 2-d input); over an inner axis it is refused (oneDNN's reference
 * kernel). */
static void case_logsoftmax(void)
{
    for (int opset = 11; opset <= 13; opset += 2) {
        struct mb m = {.seed = 65, .opset = opset};
        int64_t xs[] = {4, 37};
        mb_input(&m, "x", 2, xs);
        mb_const(&m, "w", 2, (int64_t[]){37, 37}, NULL, 0.4f);
        mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
        mb_node(&m, "lsm", "LogSoftmax", "\"h\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        compare(mb_write(&m), 2, xs, 2, xs, (const char *[]){"mm", "lsm", NULL});
    }
    struct mb m = {.seed = 66};
    int64_t xs[] = {2, 5, 7};
    mb_input(&m, "x", 3, xs);
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "lsm", "LogSoftmax", "\"r\"", "y", "\"axis\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 3, xs, 3, xs, (const char *[]){"relu", NULL});
    char why[256];
    refusal_of(path, "lsm", why, sizeof why);
    TH_CHECK(strstr(why, "reference implementation") != NULL, "LogSoftmax axis 1: '%s'", why);
}

/* Reductions: {op, input dims, axes, keepdims, why refused (NULL: taken)}.
 * ReduceSum reads its axes from an input (opset 13); the others from the
 * attribute. Unit axes are left out of the primitive ([3,6,3,1] over 2 and
 * 3 ran on oneDNN's reference kernel); a reduction over unit axes only is a
 * view (oneDNN refused to make it: the compile failed); one that keeps an
 * axis after a reduced one is refused, and so is a max or min over more than
 * one element (oneDNN starts them from -/+FLT_MAX: a row of -inf gave
 * -FLT_MAX; case_reduce_max_infinity), unless it is a mean or sum over one
 * run of adjacent axes, which the module emits as a product. */
#define RED_REF "reference implementation"
#define RED_INF "infinities and NaN"
static const struct {
    const char *op;
    int nd;
    int64_t dims[4];
    int na;
    int64_t axes[4];
    int keep;
    const char *refused;
} reductions[] = {
    {"ReduceSum", 4, {3, 6, 3, 1}, 2, {2, 3}, 1, NULL},
    {"ReduceMax", 4, {2, 16, 5, 5}, 2, {-1, -2}, 0, RED_INF},
    {"ReduceMin", 4, {3, 1, 7, 4}, 3, {0, 2, 3}, 1, RED_INF},
    {"ReduceSum", 3, {4, 10, 37}, 1, {-1}, 0, NULL},
    {"ReduceMean", 2, {6, 1}, 1, {1}, 0, NULL},
    {"ReduceMax", 2, {5, 7}, 0, {0}, 1, RED_INF},
    {"ReduceMax", 3, {5, 1, 7}, 1, {1}, 0, NULL},
    /* kept axes after one reduced run: a product (case_reduce_middle) */
    {"ReduceSum", 4, {2, 16, 4, 4}, 1, {1}, 1, NULL},
    {"ReduceMean", 3, {4, 10, 37}, 1, {0}, 0, NULL},
    /* two reduced runs: only the reference kernel */
    {"ReduceMean", 3, {4, 10, 37}, 2, {0, 2}, 1, RED_REF},
};

static void case_reductions(void)
{
    for (size_t k = 0; k < sizeof reductions / sizeof reductions[0]; k++) {
        struct mb m = {.seed = 70 + (uint32_t)k};
        int64_t xs[4], ys[4];
        int nd = reductions[k].nd, ynd = 0;
        memcpy(xs, reductions[k].dims, sizeof xs);
        for (int d = 0; d < nd; d++) {
            int reduced = reductions[k].na == 0;
            for (int a = 0; a < reductions[k].na; a++)
                reduced |= (reductions[k].axes[a] + nd) % nd == d;
            if (!reduced || reductions[k].keep)
                ys[ynd++] = reduced ? 1 : xs[d];
        }
        mb_input(&m, "x", nd, xs);
        mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
        char attrs[160] = "", ins[32] = "\"r\"";
        mb_append(attrs, sizeof attrs, "\"keepdims\":{\"int\":%d}", reductions[k].keep);
        if (strcmp(reductions[k].op, "ReduceSum") == 0) {
            mb_shape(&m, "axes", reductions[k].na, reductions[k].axes);
            snprintf(ins, sizeof ins, "\"r\",\"axes\"");
        } else if (reductions[k].na > 0) {
            mb_append(attrs, sizeof attrs, ",\"axes\":{\"ints\":%s}",
                      dims_json(reductions[k].axes, reductions[k].na));
        }
        mb_node(&m, "red", reductions[k].op, ins, "t", attrs);
        mb_node(&m, "tanh", "Tanh", "\"t\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, nd, xs, ynd, ys,
                (const char *[]){"relu", "tanh", reductions[k].refused ? NULL : "red", NULL});
        char why[256];
        refusal_of(path, "red", why, sizeof why);
        TH_CHECK(reductions[k].refused ? strstr(why, reductions[k].refused) != NULL
                                       : why[0] == '\0',
                 "%s %zu: onednn said '%s'", reductions[k].op, k, why);
        pl_runtime *rt = onednn_runtime();
        pl_session *s = session_for(rt, path);
        TH_CHECK(pl_session_warning_count(s) == 0, "%s", pl_session_warning(s, 0));
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* Means and sums over the trailing axes of a plain source, many rows of a
 * few values: a product by a constant vector (oneDNN's reduction takes
 * 0.2 us a row: 1000 rows of 64 in 97 us, 11 as a product), and the
 * GlobalAveragePool of 576 channels at 7x7 (124 us as that reduction).
 * Few long rows stay a reduction. {op, dims, reduced trailing axes,
 * keepdims, a product}. */
static void case_reduce_as_product(void)
{
    static const struct {
        const char *op;
        int nd;
        int64_t dims[4];
        int na, keep, product;
    } cases[] = {
        {"ReduceMean", 2, {300, 64}, 1, 1, 1},
        {"ReduceSum", 3, {2, 150, 32}, 1, 0, 1},
        {"ReduceMean", 4, {1, 96, 5, 7}, 2, 1, 1},
        {"GlobalAveragePool", 4, {1, 576, 7, 7}, 2, 1, 1},
        {"ReduceMean", 2, {8, 4096}, 1, 1, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        struct mb m = {.seed = 110 + (uint32_t)k};
        int nd = cases[k].nd, ynd = 0;
        int64_t xs[4], ys[4], axes[2] = {-1, -2};
        memcpy(xs, cases[k].dims, sizeof xs);
        for (int d = 0; d < nd; d++)
            if (d < nd - cases[k].na || cases[k].keep)
                ys[ynd++] = d < nd - cases[k].na ? xs[d] : 1;
        mb_input(&m, "x", nd, xs);
        mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
        char attrs[160] = "", ins[32] = "\"r\"";
        if (strcmp(cases[k].op, "ReduceSum") == 0) {
            mb_shape(&m, "axes", cases[k].na, axes);
            snprintf(ins, sizeof ins, "\"r\",\"axes\"");
            mb_append(attrs, sizeof attrs, "\"keepdims\":{\"int\":%d}", cases[k].keep);
        } else if (strcmp(cases[k].op, "ReduceMean") == 0) {
            mb_append(attrs, sizeof attrs, "\"keepdims\":{\"int\":%d},\"axes\":{\"ints\":%s}",
                      cases[k].keep, dims_json(axes, cases[k].na));
        }
        mb_node(&m, "red", cases[k].op, ins, "t", attrs);
        mb_node(&m, "tanh", "Tanh", "\"t\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, nd, xs, ynd, ys, (const char *[]){"relu", "red", "tanh", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int products = count_steps(&b, 3 /* ODNN_S_MATMUL */, &total);
        int reductions = count_steps(&b, 11 /* ODNN_S_REDUCE */, &total);
        TH_CHECK(cases[k].product ? products == 1 && reductions == 0
                                  : products == 0 && reductions == 1,
                 "%s %zu: %d products and %d reductions among %u steps, want the %s", cases[k].op,
                 k, products, reductions, total, cases[k].product ? "product" : "reduction");
        free(b.bytes);
    }
}

/* A QLinearConv NAME from IN (scale XS, zero point XZ) to OUT (YS, YZ):
 * M output channels of C/GROUP inputs, KxK, pads P, random i8 weights,
 * per-channel scales when PER, an i32 bias when BIAS; WTYPE the weights'
 * JSON dtype ("i8", or "u8" for weights oneDNN does not take). */
static void mb_qconv(struct mb *m, const char *name, const char *in, const char *xs,
                     const char *xz, const char *out, const char *ys, const char *yz, int64_t c,
                     int64_t mo, int64_t k, int64_t p, int64_t group, int per, int bias,
                     const char *wtype)
{
    char n_w[64], n_ws[64], n_wz[64], n_b[64], ins[512], attrs[160];
    snprintf(n_w, sizeof n_w, "%s_w", name);
    snprintf(n_ws, sizeof n_ws, "%s_ws", name);
    snprintf(n_wz, sizeof n_wz, "%s_wz", name);
    snprintf(n_b, sizeof n_b, "%s_b", name);
    int64_t wd[4] = {mo, c / group, k, k}, md[1] = {mo};
    size_t nw = (size_t)(mo * (c / group) * k * k);
    int8_t *w = malloc(nw);
    float *ws = malloc((size_t)mo * sizeof *ws);
    int32_t *b = malloc((size_t)mo * sizeof *b);
    TH_CHECK(w && ws && b, "out of memory");
    for (size_t i = 0; i < nw; i++)
        w[i] = (int8_t)lrintf(mb_rand(m) * 127.0f);
    for (int64_t i = 0; i < mo; i++) {
        ws[i] = 0.002f + 0.001f * (float)(i % 5);
        b[i] = (int32_t)lrintf(mb_rand(m) * 3000.0f);
    }
    mb_raw(m, n_w, wtype, 4, wd, w, nw);
    mb_raw(m, n_ws, "f32", per ? 1 : 0, md, ws, per ? (size_t)mo * 4 : 4);
    mb_zero_point(m, n_wz, strcmp(wtype, "i8") == 0, 0);
    snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\",\"%s\"", in, xs,
             xz, n_w, n_ws, n_wz, ys, yz);
    if (bias) {
        mb_raw(m, n_b, "i32", 1, md, b, (size_t)mo * 4);
        mb_append(ins, sizeof ins, ",\"%s\"", n_b);
    }
    snprintf(attrs, sizeof attrs,
             "\"pads\":{\"ints\":[%lld,%lld,%lld,%lld]},\"group\":{\"int\":%lld}", (long long)p,
             (long long)p, (long long)p, (long long)p, (long long)group);
    mb_node(m, name, "QLinearConv", ins, out, attrs);
    free(w);
    free(ws);
    free(b);
}

/* An int8 chain as ONNX Runtime's QOperator format writes it, u8 and
 * (SIGNED_) i8 activations: QuantizeLinear, a QLinearConv with
 * per-channel scales and a bias, MaxPool, a depthwise QLinearConv, a
 * Split of the pooled values (YOLOv8's C2f splits its u8 activations), a
 * com.microsoft QLinearAdd of the convolution's values and the pooled
 * ones, and a Concat of the halves swapped and the sum, DequantizeLinear. Odd output zero points
 * make oneDNN's own zero-point step round ties another way than ONNX
 * Runtime, which the module's round-then-shift post-ops avoid. */
static const char *model_int8_chain(int signed_, const char *wtype)
{
    struct mb m = {.seed = 130 + (uint32_t)signed_};
    int64_t xs[] = {1, 16, 12, 12};
    mb_input(&m, "x", 4, xs);
    mb_scalar(&m, "s_in", 0.01f);
    mb_zero_point(&m, "z_in", signed_, signed_ ? -5 : 3);
    mb_scalar(&m, "s_c1", 0.04f);
    mb_zero_point(&m, "z_c1", signed_, signed_ ? 7 : 131);
    mb_scalar(&m, "s_c2", 0.03f);
    mb_zero_point(&m, "z_c2", signed_, signed_ ? -9 : 101);
    mb_node(&m, "q", "QuantizeLinear", "\"x\",\"s_in\",\"z_in\"", "xq", "");
    mb_qconv(&m, "c1", "xq", "s_in", "z_in", "c1q", "s_c1", "z_c1", 16, 32, 3, 1, 1, 1, 1,
             wtype != NULL ? wtype : "i8");
    mb_node(&m, "pool", "MaxPool", "\"c1q\"", "pq",
            "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}");
    mb_qconv(&m, "c2", "pq", "s_c1", "z_c1", "c2q", "s_c2", "z_c2", 32, 32, 3, 1, 32, 0, 0, "i8");
    mb_node(&m, "split", "Split", "\"pq\"", "s0\",\"s1", "\"axis\":{\"int\":1}");
    /* ONNX Runtime's residual addition of two 8-bit values (its own
     * arithmetic, plinth/qlinear.h: the module's own step) */
    mb_node(&m, "qadd", "QLinearAdd\",\"domain\":\"com.microsoft",
            "\"c2q\",\"s_c2\",\"z_c2\",\"pq\",\"s_c1\",\"z_c1\",\"s_c2\",\"z_c2\"", "sumq", "");
    mb_node(&m, "cat", "Concat", "\"s1\",\"s0\",\"sumq\"", "catq", "\"axis\":{\"int\":1}");
    mb_node(&m, "dq", "DequantizeLinear", "\"catq\",\"s_c2\",\"z_c2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* Whether oneDNN's ISA here (named into ISA, isa_sink's 64 bytes)
 * multiplies u8 by s8 exactly: VNNI or what implies it. */
static bool onednn_vnni(char *isa)
{
    pl_runtime *rt = onednn_runtime();
    pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    pl_runtime_destroy(rt);
    return strstr(isa, "vnni") != NULL || strstr(isa, "bf16") != NULL ||
           strstr(isa, "amx") != NULL;
}

/* The chain runs whole on onednn (its 8-bit values never cross to cpu)
 * and gives the cpu module's values exactly: any requantization off by one
 * step moves an output by 0.03, far beyond compare's 1e-4. u8 weights,
 * which oneDNN does not take, stay on cpu with the reason. */
static void case_int8_chain(void)
{
    int64_t xs[] = {1, 16, 12, 12}, ys[] = {1, 64, 6, 6};
    /* Without VNNI (an AVX2-only CPU) every 8-bit node stays on cpu, with
     * the reason: oneDNN's int8 kernels would saturate 16-bit sums. */
    char isa[64] = "";
    bool vnni = onednn_vnni(isa);
    for (int sg = 0; sg < 2; sg++) {
        const char *path = model_int8_chain(sg, NULL);
        compare(path, 4, xs, 4, ys,
                vnni ? (const char *[]){"q", "c1", "pool", "c2", "split", "qadd", "cat", "dq",
                                        NULL}
                     : NULL);
        if (!vnni) {
            char why[256];
            refusal_of(path, "c1", why, sizeof why);
            TH_CHECK(strstr(why, "VNNI") != NULL, "on %s: onednn said '%s'", isa, why);
            continue;
        }
        struct blob b = compile_blob(path);
        uint32_t total;
        int convs = count_steps(&b, 2 /* ODNN_S_CONV */, &total);
        TH_CHECK(convs == 2, "signed %d: %d convolution steps of %u, want 2", sg, convs, total);
        free(b.bytes);
    }
    if (!vnni)
        return;
    const char *path = model_int8_chain(0, "u8");
    char why[256];
    refusal_of(path, "c1", why, sizeof why);
    TH_CHECK(strstr(why, "i8") != NULL, "u8 weights: onednn said '%s'", why);
}

/* Keras 3's nearest UpSampling2D on 8-bit activations, as a TFLite int8
 * export through tf2onnx writes it: a QLinearConv's u8 output unsqueezed,
 * tiled by 2 along the new axes, reshaped to twice the height and width,
 * expanded over a batch of two, transposed to channels last, then
 * dequantized. The 8-bit values move on onednn byte by byte (its
 * broadcast copy, a view), so the chain stays one subgraph, and the values
 * are the cpu module's exactly. */
static void case_int8_upsample(void)
{
    char isa[64] = "";
    if (!onednn_vnni(isa))
        return; /* 8-bit nodes stay on cpu (int8_chain checks the reason) */
    struct mb m = {.seed = 177};
    int64_t xs[] = {1, 8, 5, 6}, ys[] = {2, 10, 12, 16};
    mb_input(&m, "x", 4, xs);
    mb_scalar(&m, "s_in", 0.01f);
    mb_zero_point(&m, "z_in", 0, 3);
    mb_scalar(&m, "s_c", 0.04f);
    mb_zero_point(&m, "z_c", 0, 131);
    mb_node(&m, "q", "QuantizeLinear", "\"x\",\"s_in\",\"z_in\"", "xq", "");
    mb_qconv(&m, "c", "xq", "s_in", "z_in", "cq", "s_c", "z_c", 8, 16, 3, 1, 1, 1, 1, "i8");
    int64_t axes[] = {3, 5}, reps[] = {1, 1, 1, 2, 1, 2}, up[] = {1, 16, 10, 12},
            batch[] = {2, 1, 1, 1};
    mb_shape(&m, "axes", 2, axes);
    mb_shape(&m, "reps", 6, reps);
    mb_shape(&m, "up", 4, up);
    mb_shape(&m, "batch", 4, batch);
    mb_node(&m, "uns", "Unsqueeze", "\"cq\",\"axes\"", "u6", "");
    mb_node(&m, "tile", "Tile", "\"u6\",\"reps\"", "t6", "");
    mb_node(&m, "rs", "Reshape", "\"t6\",\"up\"", "t4", "");
    mb_node(&m, "ex", "Expand", "\"t4\",\"batch\"", "tb", "");
    mb_node(&m, "tr", "Transpose", "\"tb\"", "tt", "\"perm\":{\"ints\":[0,2,3,1]}");
    mb_node(&m, "dq", "DequantizeLinear", "\"tt\",\"s_c\",\"z_c\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys,
            (const char *[]){"q", "c", "uns", "tile", "rs", "ex", "tr", "dq", NULL});
}

/* A QLinearConv 1x1 of 16 -> 96 channels at 56x56 (4.8M multiply-adds,
 * past the size where AMX is allowed): oneDNN 2.6's first choice on an AMX
 * CPU is its older AMX 1x1 kernel (jit_1x1:avx512_core_amx), 2x slower
 * than the VNNI brgemm kernel behind it on a MobileNet's expansions; the
 * module takes the next one and the debug log says which. Results are the
 * cpu module's. */
static void case_int8_amx_old(void)
{
    char isa[64] = "";
    if (!onednn_vnni(isa))
        return; /* 8-bit nodes stay on cpu (int8_chain checks the reason) */
    struct mb m = {.seed = 171};
    int64_t xs[] = {1, 16, 56, 56}, ys[] = {1, 96, 56, 56};
    mb_input(&m, "x", 4, xs);
    mb_scalar(&m, "s_in", 0.01f);
    mb_zero_point(&m, "z_in", 0, 3);
    mb_scalar(&m, "s_c1", 0.04f);
    mb_zero_point(&m, "z_c1", 0, 131);
    mb_node(&m, "q", "QuantizeLinear", "\"x\",\"s_in\",\"z_in\"", "xq", "");
    mb_qconv(&m, "c1", "xq", "s_in", "z_in", "c1q", "s_c1", "z_c1", 16, 96, 1, 0, 1, 1, 1, "i8");
    mb_node(&m, "dq", "DequantizeLinear", "\"c1q\",\"s_c1\",\"z_c1\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys, (const char *[]){"q", "c1", "dq", NULL});
    struct wino_log log;
    compile_log(path, &log);
    const char *line = strstr(log.text, "node 'c1': ");
    if (strstr(isa, "amx") == NULL) {
        TH_CHECK(line == NULL || strstr(line, "first choice") == NULL, "on %s: log:\n%s", isa,
                 log.text);
        return;
    }
    TH_CHECK(line != NULL && strstr(line, "not oneDNN's first choice jit_1x1:avx512_core_amx") !=
                                 NULL,
             "on %s the older AMX kernel was not passed over: log:\n%s", isa, log.text);
    const char *comma = strchr(line, ',');
    TH_CHECK(comma != NULL && memmem(line, (size_t)(comma - line), "amx", 3) == NULL,
             "c1 took an AMX kernel: %s", line);
}

/* The lines of oneDNN's verbose output (ONEDNN_VERBOSE=2, read once per
 * process, so in a child of this one) for a session of PATH that contain
 * both WHAT and KIND, e.g. "create:cache_hit" and ",convolution,". */
static int verbose_lines(const char *path, const char *what, const char *kind)
{
    char out[512];
    snprintf(out, sizeof out, "%s", th_path(th_tempdir(), "verbose.txt"));
    fflush(stdout);
    pid_t pid = fork();
    TH_CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        setenv("ONEDNN_VERBOSE", "2", 1);
        int fd = open(out, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0)
            _exit(2);
        pl_runtime *rt = onednn_runtime();
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    TH_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "the child making a session of %s failed (status %d)", path, status);
    FILE *f = fopen(out, "r");
    TH_CHECK(f != NULL, "no verbose output at %s", out);
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL)
        n += strstr(line, what) != NULL && strstr(line, kind) != NULL;
    fclose(f);
    return n;
}

/* Int8 products of one shape make one primitive whatever their scales and
 * zero points: MatMulInteger reads a constant zero point at run time, and
 * a QDQ pair after it takes its zero point as a binary operand, clipping
 * to the type's range (odnn_append_qdq, for results of ODNN_QDQ_SHARE_MIN
 * values and more). Two [128, 64] x [64, 256] products of inputs with zero
 * points 7 and 120, each followed by a pair of another scale and zero
 * point (100 and 30), concatenated: the second is a hit in oneDNN's
 * primitive cache (constant zero points and clips to the range less the
 * zero point made them two: smart_turn_v3's 25 products of four shapes
 * took 1.0-1.4 ms each to make). Values as the cpu module's. */
static void case_qdq_shared_primitives(void)
{
    struct mb q = {.seed = 176};
    int64_t xs[] = {128, 64}, ys[] = {256, 256};
    mb_input(&q, "x", 2, xs);
    static int8_t w[2][64 * 256];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 64 * 256; i++)
            w[k][i] = (int8_t)(((i * 37 + k * 11) % 255) - 127);
    mb_raw(&q, "w1", "i8", 2, (int64_t[]){64, 256}, w[0], sizeof w[0]);
    mb_raw(&q, "w2", "i8", 2, (int64_t[]){64, 256}, w[1], sizeof w[1]);
    const float sx[2] = {0.02f, 0.03f}, sw[2] = {0.002f, 0.003f}, sy[2] = {0.05f, 0.07f};
    const int zx[2] = {7, 120}, zy[2] = {100, 30};
    for (int k = 0; k < 2; k++) {
        char nm[16][24];
        for (int i = 0; i < 16; i++)
            snprintf(nm[i], sizeof nm[i], "%c%d", 'a' + i, k);
        mb_scalar(&q, nm[0], sx[k]);
        mb_zero_point(&q, nm[1], 0, zx[k]);
        mb_scalar(&q, nm[2], sx[k] * sw[k]);
        mb_scalar(&q, nm[3], sy[k]);
        mb_zero_point(&q, nm[4], 0, zy[k]);
        char ins[96];
        /* as [graph] qdq = int8 writes a QDQ product (pl_alg_qdq_matmul),
         * then the pair of the next layer's input */
        snprintf(ins, sizeof ins, "\"x\",\"%s\",\"%s\"", nm[0], nm[1]);
        mb_node(&q, nm[5], "QuantizeLinear", ins, nm[6], "");
        snprintf(ins, sizeof ins, "\"%s\",\"w%d\",\"%s\"", nm[6], k + 1, nm[1]);
        mb_node(&q, nm[7], "MatMulInteger", ins, nm[8], "");
        snprintf(ins, sizeof ins, "\"%s\"", nm[8]);
        mb_node(&q, nm[9], "Cast", ins, nm[10], "\"to\":{\"int\":1}");
        snprintf(ins, sizeof ins, "\"%s\",\"%s\"", nm[10], nm[2]);
        mb_node(&q, nm[11], "Mul", ins, nm[12], "");
        snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\"", nm[12], nm[3], nm[4]);
        mb_node(&q, nm[13], "QuantizeLinear", ins, nm[14], "");
        snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\"", nm[14], nm[3], nm[4]);
        mb_node(&q, nm[15], "DequantizeLinear", ins, k ? "y1" : "y0", "");
    }
    mb_node(&q, "cat", "Concat", "\"y0\",\"y1\"", "y", "\"axis\":{\"int\":0}");
    q.outputs[q.n_outputs++] = "y";
    const char *path = mb_write(&q);
    /* first, before this process has used oneDNN (the children inherit
     * its verbose setting once read) */
    int hits = verbose_lines(path, "create:cache_hit", ",matmul,");
    int made = verbose_lines(path, "create:cache_miss", "src_u8");
    char isa[64] = "";
    if (!onednn_vnni(isa))
        return; /* 8-bit products stay on cpu */
    compare(path, 2, xs, 2, ys,
            (const char *[]){"f0", "h0", "j0", "l0", "n0", "p0", "f1", "h1", "j1", "l1", "n1",
                             "p1", NULL});
    TH_CHECK(hits == 1 && made == 1,
             "the two int8 products made %d primitives, %d shared (want 1 and 1)", made, hits);
}

/* An Erf outside a GELU pattern (as QDQ models leave it): the module's own
 * kernel, on [4, 16] and on [3, 7001] (a team of threads and a tail of 11
 * lanes), x spread over [-4, 4] so both of erf's branches and the
 * saturation run; the cpu module's values. */
static void case_erf_alone(void)
{
    for (int k = 0; k < 2; k++) {
        struct mb m = {.seed = 160 + (uint32_t)k};
        int64_t xs0[] = {4, 16}, xs1[] = {3, 7001};
        int64_t *xs = k ? xs1 : xs0;
        mb_input(&m, "x", 2, xs);
        mb_scalar(&m, "four", 4.0f);
        mb_node(&m, "mul", "Mul", "\"x\",\"four\"", "r", "");
        mb_node(&m, "erf", "Erf", "\"r\"", "e", "");
        mb_node(&m, "exp", "Exp", "\"e\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 2, xs, 2, xs, (const char *[]){"mul", "erf", "exp", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int erf = count_steps(&b, 18 /* ODNN_S_ERF */, &total);
        TH_CHECK(erf == 1, "%d Erf steps of %u", erf, total);
        free(b.bytes);
    }
}

/* InstanceNormalization (GroupNorm as exporters write it) as the module's
 * own kernel, FORM: 0 [2, 3, 5, 7] (one thread), 1 [2, 64, 300] (planes
 * over the team), 2 [1, 1, 18432] (PoolFormer's GroupNorm of one group:
 * one plane cut into chunks); then a Relu, so the step's result is read
 * inside the subgraph. The cpu module's values. */
static void case_instance_norm(void)
{
    static const int64_t shapes[3][3] = {{2, 3, 35}, {2, 64, 300}, {1, 1, 18432}};
    for (int form = 0; form < 3; form++) {
        struct mb m = {.seed = 170 + (uint32_t)form};
        int64_t xs[4] = {shapes[form][0], shapes[form][1], shapes[form][2], 1}, cs[1];
        if (form == 0)
            xs[2] = 5, xs[3] = 7;
        int r = form == 0 ? 4 : 3;
        cs[0] = xs[1];
        mb_input(&m, "x", r, xs);
        mb_const(&m, "scale", 1, cs, NULL, 1.0f);
        mb_const(&m, "bias", 1, cs, NULL, 0.5f);
        mb_scalar(&m, "three", 3.0f);
        mb_node(&m, "mul", "Mul", "\"x\",\"three\"", "h", "");
        mb_node(&m, "in", "InstanceNormalization", "\"h\",\"scale\",\"bias\"", "n",
                "\"epsilon\":{\"float\":0.001}");
        mb_node(&m, "relu", "Relu", "\"n\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, r, xs, r, xs, (const char *[]){"mul", "in", "relu", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int in = count_steps(&b, 19 /* ODNN_S_INORM */, &total);
        TH_CHECK(in == 1 && total == 3, "form %d: %d instance norm steps of %u", form, in, total);
        free(b.bytes);
    }
}

/* Expand as the module's own broadcast copy, FORM: 0 [2, 1, 3, 40] ->
 * [2, 5, 3, 40] (grouped-query attention's repeated heads: blocks of 120
 * values, one thread), 1
 * [3, 1] -> [3, 7] (the last dim broadcast: one value a block), 2 [1, 40]
 * by shape [64, 2, 40] (a higher rank; 5120 values), 3 [8, 1, 64, 64] ->
 * [8, 4, 64, 64] (131072 values over the team). A Relu before and after
 * keeps it inside the subgraph. The cpu module's values exactly. */
static void case_expand(void)
{
    static const int64_t xs_[4][4] = {{2, 1, 3, 40}, {3, 1}, {1, 40}, {8, 1, 64, 64}};
    static const int64_t ys_[4][4] = {{2, 5, 3, 40}, {3, 7}, {64, 2, 40}, {8, 4, 64, 64}};
    static const int xr[4] = {4, 2, 2, 4}, yr[4] = {4, 2, 3, 4};
    for (int form = 0; form < 4; form++) {
        struct mb m = {.seed = 180 + (uint32_t)form};
        int64_t xs[4], ys[4];
        memcpy(xs, xs_[form], sizeof xs);
        memcpy(ys, ys_[form], sizeof ys);
        mb_input(&m, "x", xr[form], xs);
        mb_shape(&m, "shape", yr[form], ys);
        mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
        mb_node(&m, "expand", "Expand", "\"r\",\"shape\"", "e", "");
        mb_node(&m, "tanh", "Tanh", "\"e\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, xr[form], xs, yr[form], ys, (const char *[]){"relu", "expand", "tanh", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int ex = count_steps(&b, 20 /* ODNN_S_EXPAND */, &total);
        TH_CHECK(ex == 1 && total == 3, "form %d: %d expand steps of %u", form, ex, total);
        free(b.bytes);
    }
}

/* Tile (Keras' UpSampling2D writes ExpandDims -> Tile -> Reshape) as a
 * broadcast copy, and Pad in constant mode (ZeroPadding2D, a padding no
 * convolution took) as the module's own copy: one step each between the
 * Relu and the Tanh, the cpu module's values; Pad with a fill value, and
 * at opset 9 with its attributes. Fails when a repeat is read from the
 * wrong dim or a pad lands on the wrong side. */
static void case_tile_pad(void)
{
    static const int64_t xs_[7][5] = {{1, 4, 1, 5, 3}, {2, 3, 4}, {3, 1}, {1, 3, 5, 6},
                                      {1, 3, 5, 6}, {7, 9}, {2, 4, 3}};
    static const int64_t ys_[7][5] = {{1, 4, 2, 5, 3}, {4, 3, 12}, {3, 5}, {1, 3, 8, 9},
                                      {1, 3, 8, 9}, {10, 13}, {2, 6, 3}};
    static const int64_t rep[3][5] = {{1, 1, 2, 1, 1}, {2, 1, 3}, {1, 5}};
    static const int64_t pads[4][8] = {{0, 0, 1, 2, 0, 0, 2, 1}, {0, 0, 1, 2, 0, 0, 2, 1},
                                       {3, 0, 0, 4}, {0, 2, 0, 0, 0, 0}};
    static const int rank[7] = {5, 3, 2, 4, 4, 2, 3};
    for (int form = 0; form < 7; form++) {
        int tile = form < 3, r = rank[form];
        struct mb m = {.seed = 185 + (uint32_t)form, .opset = form == 6 ? 9 : 13};
        int64_t xs[5], ys[5];
        memcpy(xs, xs_[form], sizeof xs);
        memcpy(ys, ys_[form], sizeof ys);
        mb_input(&m, "x", r, xs);
        mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
        if (tile) {
            mb_shape(&m, "rep", r, rep[form]);
            mb_node(&m, "op", "Tile", "\"r\",\"rep\"", "e", "");
        } else if (form == 6) {
            mb_node(&m, "op", "Pad", "\"r\"", "e",
                    "\"pads\":{\"ints\":[0,2,0,0,0,0]},\"value\":{\"float\":-0.5}");
        } else {
            mb_shape(&m, "pads", 2 * r, pads[form - 3]);
            if (form == 4)
                mb_scalar(&m, "v", 1.5f);
            mb_node(&m, "op", "Pad", form == 4 ? "\"r\",\"pads\",\"v\"" : "\"r\",\"pads\"",
                    "e", "");
        }
        mb_node(&m, "tanh", "Tanh", "\"e\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, r, xs, r, ys, (const char *[]){"relu", "op", "tanh", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int k = count_steps(&b, tile ? 20 /* ODNN_S_EXPAND */ : 22 /* ODNN_S_PAD */, &total);
        TH_CHECK(k == 1 && total == 3, "form %d: %d copy steps of %u", form, k, total);
        free(b.bytes);
    }
}

/* BatchNormalization -> Relu on a channel-blocked feature map (DenseNet's
 * pre-activation layers) is one batch normalization primitive with its
 * fused ReLU, no eltwise step; with the normalized map read by a second
 * node too the Relu stays a step of its own. The cpu module's values. */
static void case_bnorm_relu(void)
{
    for (int shared = 0; shared < 2; shared++) {
        struct mb m = {.seed = 195 + (uint32_t)shared};
        int64_t xs[] = {1, 32, 10, 10}, c[] = {32};
        mb_input(&m, "x", 4, xs);
        mb_conv(&m, "conv", "x", "a", 32, 32, 3, 1, 1);
        static const char *const what[4] = {"scale", "bias", "mean", "var"};
        float var[32];
        for (int j = 0; j < 32; j++)
            var[j] = 0.5f + 0.02f * (float)j;
        for (int j = 0; j < 4; j++)
            mb_const(&m, what[j], 1, c, j == 3 ? var : NULL, 0.3f);
        mb_node(&m, "bn", "BatchNormalization", "\"a\",\"scale\",\"bias\",\"mean\",\"var\"",
                "n", "");
        mb_node(&m, "relu", "Relu", "\"n\"", "r", "");
        if (shared) {
            mb_node(&m, "add", "Add", "\"r\",\"n\"", "s", "");
            mb_conv(&m, "conv2", "s", "y", 32, 32, 1, 1, 1);
        } else {
            mb_conv(&m, "conv2", "r", "y", 32, 32, 1, 1, 1);
        }
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, xs, 4, xs, (const char *[]){"conv", "bn", "relu", "conv2", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int bn = count_steps(&b, 5 /* ODNN_S_BNORM */, &total);
        int elt = count_steps(&b, 6 /* ODNN_S_ELTWISE */, &total);
        TH_CHECK(bn == 1 && elt == shared, "%s: %d batch norms and %d eltwise steps of %u",
                 shared ? "shared" : "sole reader", bn, elt, total);
        free(b.bytes);
    }
}

/* A batch normalisation written as Mul and Add of per-channel constants
 * after a Concat (tf2onnx's DenseNet): nothing before it to fold into, so
 * the Mul is a binary step and the Add and Relu its post-ops (one pass
 * over the tensor, not three). FORM 1: [2, 24, 1, 1], where oneDNN 2.6's
 * binary kernel broadcast a per-channel post-op wrongly: kept apart, and
 * right. FORM 2: two activations summed, then a scalar Mul and Add, a
 * Relu and a Sigmoid: one binary step with their post-ops. */
static void case_binary_post_ops(void)
{
    for (int form = 0; form < 3; form++) {
        struct mb m = {.seed = 211 + (uint32_t)form};
        int64_t xs[] = {form == 1 ? 2 : 1, form == 1 ? 24 : 12, form == 1 ? 1 : 8,
                        form == 1 ? 1 : 8};
        int64_t ys[] = {xs[0], form == 2 ? 12 : 16, xs[2], xs[3]}, c[] = {1, 24, 1, 1};
        mb_input(&m, "x", 4, xs);
        const char *cat = "x";
        if (form == 2) {
            /* eltwise steps of their own: no convolution takes the sum */
            mb_node(&m, "ra", "Relu", "\"x\"", "ra", "");
            mb_node(&m, "rb", "Sigmoid", "\"x\"", "rb", "");
            mb_node(&m, "cat", "Add", "\"ra\",\"rb\"", "cat", "");
            cat = "cat";
        } else if (form == 0) {
            mb_conv(&m, "ca", "x", "a", 12, 12, 3, 1, 1);
            mb_node(&m, "ra", "Relu", "\"a\"", "ra", "");
            mb_conv(&m, "cb", "x", "b", 12, 12, 3, 1, 1);
            mb_node(&m, "rb", "Relu", "\"b\"", "rb", "");
            mb_node(&m, "cat", "Concat", "\"ra\",\"rb\"", "cat", "\"axis\":{\"int\":1}");
            cat = "cat";
        }
        char ins[64];
        if (form == 2) {
            mb_scalar(&m, "s", 0.5f);
            mb_scalar(&m, "t", -0.25f);
        } else {
            mb_const(&m, "s", 4, c, NULL, 1.0f);
            mb_const(&m, "t", 3, c + 1, NULL, 1.0f);
        }
        snprintf(ins, sizeof ins, "\"%s\",\"s\"", cat);
        mb_node(&m, "mul", "Mul", ins, "m", "");
        mb_node(&m, "add", "Add", "\"t\",\"m\"", "n", "");
        mb_node(&m, "relu", "Relu", "\"n\"", "r", "");
        if (form != 2) {
            mb_conv(&m, "c2", "r", "y", 24, 16, 1, 1, 1);
        } else {
            mb_node(&m, "c2", "Sigmoid", "\"r\"", "y", "");
        }
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, xs, 4, ys, (const char *[]){"mul", "add", "relu", "c2", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int bin = count_steps(&b, 7 /* ODNN_S_BINARY */, &total);
        int elt = count_steps(&b, 6 /* ODNN_S_ELTWISE */, &total);
        TH_CHECK(form == 1 ? bin == 2 : bin == 1 && elt == (form == 2 ? 2 : 0),
                 "form %d: %d binary and %d eltwise steps of %u", form, bin, elt, total);
        free(b.bytes);
    }
}

/* DenseNet's growth: each layer's input is the concatenation of every
 * earlier feature map (16 channels a layer, so pieces fill whole 16-channel
 * blocks). The earlier maps are copied into each new concatenation: one
 * blocked layout into the same, so memcpy steps (ODNN_S_COPY), not oneDNN
 * reorders. The cpu module's values. */
static void case_dense_copy(void)
{
    struct mb m = {.seed = 190};
    int64_t xs[] = {1, 16, 6, 6}, ys[] = {1, 64, 6, 6};
    mb_input(&m, "x", 4, xs);
    mb_node(&m, "r", "Relu", "\"x\"", "f0", "");
    const char *prev = "f0";
    char names[3][2][16];
    int64_t ch = 16;
    for (int k = 0; k < 3; k++) {
        snprintf(names[k][0], 16, "g%d", k);
        snprintf(names[k][1], 16, "cat%d", k);
        mb_conv(&m, names[k][0], prev, names[k][0], ch, 16, 3, 1, 1);
        char ins[128];
        snprintf(ins, sizeof ins, "\"%s\",\"%s\"", prev, names[k][0]);
        mb_node(&m, names[k][1], "Concat", ins, names[k][1], "\"axis\":{\"int\":1}");
        prev = names[k][1];
        ch += 16;
    }
    mb_node(&m, "out", "Relu", "\"cat2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys, (const char *[]){"g0", "cat0", "g1", "cat1", "g2", "cat2", NULL});
    struct blob b = compile_blob(path);
    uint32_t total;
    int copies = count_steps(&b, 21 /* ODNN_S_COPY */, &total);
    TH_CHECK(copies >= 2, "%d copy steps of %u", copies, total);
    free(b.bytes);
}

/* A product as onnxruntime.quantization.quantize_dynamic writes it: x ->
 * DynamicQuantizeLinear -> MatMulInteger(x_q, W_q i8, x_zp) -> Cast ->
 * Mul(x_scale * w_scale) [-> Add(bias)], FORM:
 *   0: [1, 24, 40], two products of one quantizer (a scalar w_scale with a
 *      bias and Tanh after; a per-column one without), summed;
 *   1: [2, 3, 64, 40] (rows merged, 7680 values: the quantizer's two
 *      threads) with a residual Add of the product's input after the bias;
 *   2: the i32 result read by two Casts (the product alone writes i32, each
 *      Cast is a reorder);
 *   3: form 0 on an all-zero input (scale 0, zero point 0). */
static const char *model_dynq(int form)
{
    struct mb m = {.seed = 150 + (uint32_t)form};
    int64_t k = 40, n = form == 1 ? 40 : 48;
    int64_t xs0[] = {1, 24, 40}, xs1[] = {2, 3, 64, 40}, wd[] = {k, n}, nd[] = {n};
    int r = form == 1 ? 4 : 3;
    mb_input(&m, "x", r, form == 1 ? xs1 : xs0);
    int8_t w[2][40 * 48];
    for (int j = 0; j < 2; j++)
        for (int64_t i = 0; i < k * n; i++)
            w[j][i] = (int8_t)lrintf(mb_rand(&m) * 127.0f);
    mb_raw(&m, "w1", "i8", 2, wd, w[0], (size_t)(k * n));
    mb_raw(&m, "w2", "i8", 2, wd, w[1], (size_t)(k * n));
    mb_scalar(&m, "ws1", 0.004f);
    mb_const(&m, "ws2", 1, nd, NULL, 0.01f);
    mb_const(&m, "b1", 1, nd, NULL, 0.5f);
    mb_scalar(&m, "zero", 0.0f);
    if (form == 3)
        mb_node(&m, "relu", "Mul", "\"x\",\"zero\"", "h", "");
    else
        mb_node(&m, "relu", "Relu", "\"x\"", "h", "");
    mb_node(&m, "dql", "DynamicQuantizeLinear", "\"h\"", "hq\",\"hs\",\"hz", "");
    mb_node(&m, "sm1", "Mul", "\"hs\",\"ws1\"", "s1", "");
    mb_node(&m, "mmi1", "MatMulInteger", "\"hq\",\"w1\",\"hz\"", "acc1", "");
    if (form == 2) {
        mb_node(&m, "cast1", "Cast", "\"acc1\"", "f1", "\"to\":{\"int\":1}");
        mb_node(&m, "cast2", "Cast", "\"acc1\"", "f2", "\"to\":{\"int\":1}");
        mb_node(&m, "sum", "Add", "\"f1\",\"f2\"", "f", "");
        mb_node(&m, "scale1", "Mul", "\"f\",\"s1\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        return mb_write(&m);
    }
    mb_node(&m, "cast1", "Cast", "\"acc1\"", "f1", "\"to\":{\"int\":1}");
    mb_node(&m, "scale1", "Mul", "\"f1\",\"s1\"", "p1", "");
    mb_node(&m, "bias1", "Add", "\"b1\",\"p1\"", "q1", "");
    if (form == 1) {
        mb_node(&m, "res", "Add", "\"q1\",\"h\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        return mb_write(&m);
    }
    mb_node(&m, "tanh", "Tanh", "\"q1\"", "t1", "");
    mb_node(&m, "sm2", "Mul", "\"ws2\",\"hs\"", "s2", "");
    mb_node(&m, "mmi2", "MatMulInteger", "\"hq\",\"w2\",\"hz\"", "acc2", "");
    mb_node(&m, "cast2", "Cast", "\"acc2\"", "f2", "\"to\":{\"int\":1}");
    mb_node(&m, "scale2", "Mul", "\"s2\",\"f2\"", "p2", "");
    mb_node(&m, "sum", "Add", "\"t1\",\"p2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* Each form whole on onednn, the cpu module's values (compare's 1e-4: a
 * quantization step off would move y by about 1e-2), one quantizer step
 * (the module's own kernel) and one matmul per product with the Cast, the
 * scales and the bias as its post-ops (forms 0 and 1); form 2's i32
 * result read twice. Without VNNI they stay on cpu with the reason. */
static void case_dynamic_int8(void)
{
    char isa[64] = "";
    bool vnni = onednn_vnni(isa);
    for (int form = 0; form < 4; form++) {
        int64_t xs0[] = {1, 24, 40}, ys0[] = {1, 24, 48}, xs1[] = {2, 3, 64, 40};
        int64_t *xs = form == 1 ? xs1 : xs0, *ys = form == 1 ? xs1 : ys0;
        int r = form == 1 ? 4 : 3;
        const char *path = model_dynq(form);
        static const char *const on0[] = {"dql", "sm1", "mmi1", "cast1", "scale1", "bias1",
                                          "tanh", "sm2", "mmi2", "cast2", "scale2", "sum", NULL};
        static const char *const on1[] = {"dql", "mmi1", "cast1", "scale1", "bias1", "res", NULL};
        static const char *const on2[] = {"dql", "mmi1", "cast1", "cast2", "sum", "scale1", NULL};
        const char *const *on = form == 1 ? on1 : form == 2 ? on2 : on0;
        compare(path, r, xs, r, ys, vnni ? on : NULL);
        if (!vnni) {
            char why[256];
            refusal_of(path, "mmi1", why, sizeof why);
            TH_CHECK(strstr(why, "VNNI") != NULL, "on %s: onednn said '%s'", isa, why);
            continue;
        }
        struct blob b = compile_blob(path);
        uint32_t total;
        int dql = count_steps(&b, 17 /* ODNN_S_DQL */, &total);
        int mms = count_steps(&b, 3 /* ODNN_S_MATMUL */, &total);
        int want = form == 0 || form == 3 ? 2 : 1;
        TH_CHECK(dql == 1 && mms == want, "form %d: %d quantizer and %d matmul steps of %u "
                 "(want 1 and %d)", form, dql, mms, total, want);
        /* relu, the quantizer, two scale products, two matmuls and the
         * copy of the sum's other term into the caller's buffer (a graph
         * output is never a residual written in place): no Cast, Mul or
         * Add of their own */
        if (want == 2)
            TH_CHECK(total <= 7, "form %d: %u steps", form, total);
        free(b.bytes);
    }
}

/* A product of a 4-D channels-last activation by a constant matrix (a
 * ConvNeXt pointwise layer): its rows are merged into one product, the
 * result seen back in the graph's dims, also as a graph output; with a
 * post-op that reads a full tensor (the sum of two products) it stays a
 * batch of products. Both as cpu computes them. */
static void case_matmul_rows_merged(void)
{
    int64_t xs[4] = {2, 3, 4, 16}, ws[2] = {16, 32}, bs[1] = {32}, ys[4] = {2, 3, 4, 32};
    for (int k = 0; k < 2; k++) {
        struct mb m = {.seed = 140 + (uint32_t)k};
        mb_input(&m, "x", 4, xs);
        mb_const(&m, "w", 2, ws, NULL, 0.25f);
        mb_const(&m, "b", 1, bs, NULL, 0.5f);
        mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "p", "");
        if (k == 0) {
            mb_node(&m, "add", "Add", "\"p\",\"b\"", "q", "");
            mb_node(&m, "relu", "Relu", "\"q\"", "y", "");
        } else {
            mb_const(&m, "w2", 2, ws, NULL, 0.25f);
            mb_node(&m, "mm2", "MatMul", "\"x\",\"w2\"", "p2", "");
            mb_node(&m, "add", "Add", "\"p\",\"p2\"", "q", "");
            mb_node(&m, "relu", "Relu", "\"q\"", "y", "");
        }
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, xs, 4, ys, (const char *[]){"mm", "add", "relu", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        /* a copy of one dense layout into the same is a memcpy step */
        int reorders = count_steps(&b, 1 /* ODNN_S_REORDER */, &total) +
                       count_steps(&b, 21 /* ODNN_S_COPY */, &total);
        /* case 1: the sum's residual is copied into the caller's output
         * buffer (a graph output is never written in place), as before */
        TH_CHECK(reorders == k, "case %d: %d reorders among %u steps", k, reorders, total);
        free(b.bytes);
    }
}

/* A global average pool over a 1x1 map (a small network's last feature
 * map, batch 4): a view of its input, not a pooling (oneDNN's took 37 us
 * for [4,512,1,1]); after a convolution (a blocked source) and after a
 * Relu of the input (a plain one). */
static void case_global_pool_of_one(void)
{
    static const char *const ops[2] = {"Conv", "Relu"};
    for (int k = 0; k < 2; k++) {
        struct mb m = {.seed = 120 + (uint32_t)k};
        int64_t xs[4] = {4, 32, 1, 1}, ws[4] = {48, 32, 1, 1}, ys[4] = {4, 48, 1, 1};
        mb_input(&m, "x", 4, xs);
        if (k == 0) {
            mb_const(&m, "w", 4, ws, NULL, 0.2f);
            mb_node(&m, "conv", "Conv", "\"x\",\"w\"", "c", "");
        } else {
            mb_node(&m, "conv", "Relu", "\"x\"", "c", "");
            ys[1] = 32;
        }
        mb_node(&m, "pool", "GlobalAveragePool", "\"c\"", "p", "");
        mb_node(&m, "tanh", "Tanh", "\"p\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, xs, 4, ys, (const char *[]){"conv", "pool", "tanh", NULL});
        struct blob b = compile_blob(path);
        uint32_t total;
        int pools = count_steps(&b, 4 /* ODNN_S_POOL */, &total);
        int reductions = count_steps(&b, 11 /* ODNN_S_REDUCE */, &total);
        TH_CHECK(pools + reductions == 0, "after %s: %d pooling and %d reduction steps among %u",
                 ops[k], pools, reductions, total);
        free(b.bytes);
    }
}

/* The pattern of a fully masked attention row: the scores of the row are
 * -inf, ReduceMax must give -inf (exporters then test Equal(max, -inf) to
 * zero the row), and ReduceMin over +inf gives +inf. oneDNN's reductions
 * gave -FLT_MAX and FLT_MAX; they are left to cpu, whatever the order. */
static void case_reduce_max_infinity(void)
{
    const char *ops[2] = {"ReduceMax", "ReduceMin"};
    for (int k = 0; k < 2; k++) {
        struct mb m = {.seed = 90};
        int64_t xs[2] = {2, 4}, ys[2] = {2, 1};
        mb_input(&m, "x", 2, xs);
        mb_node(&m, "red", ops[k], "\"x\"", "y", "\"axes\":{\"ints\":[1]}");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        float inf = INFINITY, x[8] = {-inf, -inf, -inf, -inf, inf, inf, inf, inf}, y[2] = {0, 0};
        pl_runtime *rt = onednn_runtime();
        pl_session *s = session_for(rt, path);
        run_one(s, "x", x, 2, xs, "y", y, 2, ys);
        TH_CHECK(y[0] == -inf && y[1] == inf, "%s of [-inf x4] and [inf x4] gave %g and %g",
                 ops[k], y[0], y[1]);
        char why[256];
        refusal_of(path, "red", why, sizeof why);
        TH_CHECK(strstr(why, "infinities") != NULL, "%s: onednn said '%s'", ops[k], why);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
    }
}

/* An elementwise op or a Softmax (last axis) on a convolution's
 * channel-blocked output whose 3 channels do not fill a block: oneDNN's
 * kernels take only dense memory, and it ran them with its reference
 * kernels; they now read a plain copy. The debug log names every primitive that got a
 * reference kernel: none here; a broadcast oneDNN's binary kernels take
 * only in merged dims ([2,4,2,4] + [2,1] as [8,2,4] + [1,2,1]) runs so
 * (odnn_binary_collapse), with no reference kernel either. */
static void case_padded_blocks(void)
{
    for (int control = 0; control < 2; control++) {
        struct mb m = {.seed = 67};
        int64_t xs[] = {1, 16, 10, 10}, ys[] = {1, 3, 10, 10}, cs[] = {2, 4, 2, 4};
        mb_input(&m, "x", 4, control ? cs : xs);
        if (control) {
            mb_const(&m, "c", 2, (int64_t[]){2, 1}, NULL, 1.0f);
            mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
            mb_node(&m, "bcast", "Add", "\"r\",\"c\"", "y", "");
        } else {
            mb_conv(&m, "conv", "x", "a", 16, 3, 3, 1, 1);
            mb_node(&m, "sig", "Sigmoid", "\"a\"", "s", "");
            mb_node(&m, "sub", "Sub", "\"s\",\"a\"", "d", "");
            mb_node(&m, "add", "Add", "\"d\",\"a\"", "e", "");
            mb_conv(&m, "conv2", "e", "f", 3, 3, 3, 1, 1);
            mb_node(&m, "sm", "Softmax", "\"f\"", "y", "");
        }
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 4, control ? cs : xs, 4, control ? cs : ys,
                control ? (const char *[]){"relu", NULL}
                        : (const char *[]){"conv", "sig", "sub", "add", "conv2", "sm", NULL});
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        pl_session_destroy(session_for(rt, path));
        TH_CHECK(strstr(log.text, "primitives") != NULL, "no compile in the log:\n%s", log.text);
        TH_CHECK(strstr(log.text, "reference implementation") == NULL, "%s: log:\n%s",
                 control ? "the broadcast" : "padded blocks", log.text);
        if (control) { /* taken in merged dims, [8, 2, 4] + [1, 2, 1]: the probe says so */
            char why[256];
            refusal_of(path, "bcast", why, sizeof why);
            TH_CHECK(why[0] == '\0', "bcast: onednn said '%s'", why);
        }
        pl_runtime_destroy(rt);
    }
}

/* A ViT's class token: Concat of [2,1,48] and [2,64,48] along axis 1, to
 * which oneDNN gives a permuted layout (bac), then the position embedding
 * ([1,65,48], row-major) added. A bac source beside a broadcast row-major
 * one had only oneDNN's reference binary kernel (0.5 ms against 6 us in a
 * tf2onnx ViT). Both sources are row-major now: no reference kernel in the
 * log, and the result is the cpu module's. */
static void case_permuted_broadcast(void)
{
    struct mb m = {.seed = 71};
    int64_t xs[] = {2, 64, 48}, ys[] = {2, 65, 48};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "cls", 3, (int64_t[]){2, 1, 48}, NULL, 1.0f);
    mb_const(&m, "pos", 3, (int64_t[]){1, 65, 48}, NULL, 1.0f);
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "cat", "Concat", "\"cls\",\"r\"", "c", "\"axis\":{\"int\":1}");
    mb_node(&m, "add", "Add", "\"c\",\"pos\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 3, xs, 3, ys, (const char *[]){"relu", "cat", "add", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    TH_CHECK(strstr(log.text, "primitives") != NULL, "no compile in the log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "reference implementation") == NULL, "log:\n%s", log.text);
    pl_runtime_destroy(rt);
}

/* A densely connected block: 16 channels, then two growths of 8 (not
 * whole 16-channel blocks), each concatenated to what came before and read
 * by BatchNormalization, Relu and a 1x1 convolution. Left to itself oneDNN
 * gave the first concat a Bacd16b destination, which its batch
 * normalization only has a reference kernel for, and the next concats
 * (blocked beside plain) its reference concat; then plain ones ran its
 * generic concat and its C++ (ncsp) batch normalization. Now each concat
 * is reorders into channels-last pieces and each batch normalization of a
 * channels-last tensor one jit binary. With ONEDNN_VERBOSE (set before
 * oneDNN first reads it; its lines go to stdout, caught in a file) no
 * primitive that ran is a reference kernel, a concat or an ncsp batch
 * normalization, and the debug log, which names every primitive that got
 * a reference kernel, names none. */
/* ONEDNN_VERBOSE's lines (oneDNN prints them on stdout) caught in a file
 * from here (verbose_begin; oneDNN reads the variable once, so the case
 * must set it before the first primitive) to verbose_end, which gives the
 * file to read. */
static const char *verbose_begin(int *saved)
{
    setenv("ONEDNN_VERBOSE", "1", 1);
    const char *vpath = th_path(th_tempdir(), "verbose.txt");
    fflush(stdout);
    int fd = open(vpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    *saved = dup(1);
    TH_CHECK(*saved >= 0 && fd >= 0 && dup2(fd, 1) == 1, "cannot catch stdout in %s", vpath);
    close(fd);
    return vpath;
}

static FILE *verbose_end(int saved, const char *vpath)
{
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fopen(vpath, "r");
    TH_CHECK(f != NULL, "cannot read %s", vpath);
    return f;
}

/* GhostNet's modules: a 1x1 convolution into few channels, a depthwise 3x3
 * of its result, both concatenated along the channels (twice: 6 + 6, then
 * 10 + 10), and a 1x1 convolution of the concat out. Their channels would
 * be padded 1.6x and more in blocks of 16, so the convolutions run
 * channels-last on AVX-512, and each Concat copies its channels-last
 * sources into the strided pieces of a channels-last destination (the
 * debug log says so) rather than into plain pieces that the next
 * convolution reorders back: no reorder writes a plain tensor but the
 * graph's output (ONEDNN_VERBOSE). Agrees with the cpu module anywhere. */
static void case_ghost_concat(void)
{
    char isa[64];
    bool avx512 = onednn_avx512(isa);
    int saved;
    const char *vpath = verbose_begin(&saved);
    struct mb m = {.seed = 93};
    int64_t xs[] = {1, 16, 24, 24}, ys[] = {1, 16, 24, 24};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "p1", "x", "p1o", 16, 6, 1, 1, 1);
    mb_node(&m, "p1r", "Relu", "\"p1o\"", "a1", "");
    mb_conv(&m, "c1", "a1", "c1o", 6, 6, 3, 1, 6);
    mb_node(&m, "c1r", "Relu", "\"c1o\"", "b1", "");
    mb_node(&m, "cat1", "Concat", "\"a1\",\"b1\"", "g1", "\"axis\":{\"int\":1}");
    mb_conv(&m, "p2", "g1", "a2", 12, 10, 1, 1, 1);
    mb_conv(&m, "c2", "a2", "b2", 10, 10, 3, 1, 10);
    mb_node(&m, "cat2", "Concat", "\"a2\",\"b2\"", "g2", "\"axis\":{\"int\":1}");
    mb_conv(&m, "out", "g2", "y", 20, 16, 1, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys, (const char *[]){"p1", "c1", "cat1", "cat2", "out", NULL});
    struct wino_log log;
    compile_log(path, &log);
    FILE *f = verbose_end(saved, vpath);
    char line[2048];
    int reorders = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "onednn_verbose,exec,", 20) != 0 || strstr(line, ",reorder,") == NULL)
            continue;
        reorders++;
        TH_CHECK(!avx512 || strstr(line, "dst_f32::blocked:abcd:") == NULL ||
                     strstr(line, "1x16x24x24") != NULL,
                 "a reorder into a plain tensor inside the subgraph: %s", line);
    }
    fclose(f);
    if (!avx512)
        return;
    TH_CHECK(reorders > 0, "ONEDNN_VERBOSE printed no reorder");
    TH_CHECK(strstr(log.text, "convolutions channels-last") != NULL, "log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "'cat1' (Concat): its 2 sources copied into a channels-last") !=
                     NULL &&
                 strstr(log.text, "'cat2' (Concat): its 2 sources copied into a channels-last") !=
                     NULL,
             "log:\n%s", log.text);
}

/* SqueezeBERT's layers: [1, S, C] hidden states transposed to [1, C, S],
 * a grouped pointwise Conv1d (4 groups of 64) with its ReLU, transposed
 * back. On AVX-512 the convolution is asked to read the transposed view
 * as it is (the debug log says so) and the plan has no reorder (it had
 * one in and one out with the source asked for in blocks of 16); a 3-wide
 * kernel over the same view stays blocked. Agrees with the cpu module
 * anywhere. */
static void case_pointwise_view(void)
{
    char isa[64];
    bool avx512 = onednn_avx512(isa);
    for (int k = 1; k <= 3; k += 2) {
        struct mb m = {.seed = 95};
        int64_t xs[] = {1, 24, 256};
        mb_input(&m, "x", 3, xs);
        mb_const(&m, "w", 3, (int64_t[]){256, 64, k}, NULL, 0.125f);
        mb_const(&m, "b", 1, (int64_t[]){256}, NULL, 0.1f);
        mb_node(&m, "t1", "Transpose", "\"x\"", "xt", "\"perm\":{\"ints\":[0,2,1]}");
        char attrs[96];
        snprintf(attrs, sizeof attrs, "\"group\":{\"int\":4},\"pads\":{\"ints\":[%d,%d]}",
                 k / 2, k / 2);
        mb_node(&m, "conv", "Conv", "\"xt\",\"w\",\"b\"", "c", attrs);
        mb_node(&m, "relu", "Relu", "\"c\"", "r", "");
        mb_node(&m, "t2", "Transpose", "\"r\"", "y", "\"perm\":{\"ints\":[0,2,1]}");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 3, xs, 3, xs, (const char *[]){"t1", "conv", "relu", "t2", NULL});
        struct wino_log log;
        compile_log(path, &log);
        bool said = strstr(log.text, "'conv': its source is a channels-last view") != NULL;
        TH_CHECK(said == (avx512 && k == 1), "kernel %d (%s): log:\n%s", k, isa, log.text);
        if (!avx512 || k != 1)
            continue;
        struct blob bl = compile_blob(path);
        uint32_t total;
        int reorders = count_steps(&bl, 1 /* ODNN_S_REORDER */, &total);
        TH_CHECK(reorders == 0, "%d reorders among %u steps", reorders, total);
        free(bl.bytes);
    }
}

/* A grouped convolution that oneDNN 2.6 serves only with its im2col GEMM
 * is left to cpu, where it takes microseconds instead of a quarter of a
 * millisecond; the values agree either way. No grouped convolution may
 * run on that GEMM. Two of them: ConvNeXt's depthwise 7x7 reaching a 2x2
 * map (on AVX2 its jit_dw kernel refuses a map smaller than the kernel),
 * and FastViT's downsampling, 48 groups of one channel into two through
 * 7x7 at stride 2 (no jit kernel for two channels a group on any ISA:
 * 1.32 ms against cpu's 0.20 on 64x64). */
static void grouped_no_gemm(int64_t c, int64_t mult, int64_t hw, int stride)
{
    int saved;
    const char *vpath = verbose_begin(&saved);
    struct mb m = {.seed = 91};
    int64_t xs[] = {1, c, hw, hw};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "dw", "x", "d", c, c * mult, 7, stride, (int)c);
    mb_node(&m, "relu", "Relu", "\"d\"", "r", "");
    mb_conv(&m, "pw", "r", "y", c * mult, 64, 1, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t out = (hw + 6 - 7) / stride + 1, ys[] = {1, 64, out, out};
    compare(path, 4, xs, 4, ys, (const char *[]){"pw", NULL});
    FILE *f = verbose_end(saved, vpath);
    char line[2048], grouped[32];
    snprintf(grouped, sizeof grouped, ",g%lld", (long long)c);
    int convs = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "onednn_verbose,exec,", 20) != 0 || strstr(line, "convolution") == NULL)
            continue;
        convs++;
        TH_CHECK(strstr(line, "gemm") == NULL || strstr(line, grouped) == NULL,
                 "a grouped convolution ran on oneDNN's GEMM: %s", line);
    }
    fclose(f);
    TH_CHECK(convs > 0, "ONEDNN_VERBOSE printed no convolution");
}

static void case_grouped_no_gemm(void)
{
    grouped_no_gemm(192, 1, 2, 1);
    grouped_no_gemm(48, 2, 16, 2);
}

/* The threads of this process. */
static int task_count(void)
{
    DIR *d = opendir("/proc/self/task");
    TH_CHECK(d != NULL, "cannot list /proc/self/task");
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Making some primitives runs a parallel region (oneDNN's resampling
 * computes its coefficients in one), and the primitives of a subgraph are
 * made on the runtime's pool threads as well as the caller's. A pool
 * thread that keeps the team it started makes libgomp manage more threads
 * than there are CPUs, and from then on every worker sleeps between
 * parallel regions (its throttled spin): each region of a run wakes one
 * through a futex (timm's efficientformerv2_s0, 2 threads: 13.5 ms a run
 * against 5.0). After a session of eight Resize nodes has run, the
 * process holds the pool's 2 threads and the caller's team's worker, no
 * more. */
static void case_team_released(void)
{
    struct mb m = {.seed = 7};
    int64_t xs[] = {1, 256, 14, 14}, ss[] = {4};
    float up2[] = {1, 1, 2, 2}, dn2[] = {1, 1, 0.5f, 0.5f}, up3[] = {1, 1, 3, 3},
          dn3[] = {1, 1, 1.0f / 3, 1.0f / 3};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "up2", 1, ss, up2, 1);
    mb_const(&m, "dn2", 1, ss, dn2, 1);
    mb_const(&m, "up3", 1, ss, up3, 1);
    mb_const(&m, "dn3", 1, ss, dn3, 1);
    const char *scales[] = {"up2", "dn2", "up3", "dn3"};
    for (int i = 0; i < 8; i++) {
        char name[16], ins[64], out[16], in[16] = "x";
        snprintf(name, sizeof name, "rs%d", i);
        if (i > 0)
            snprintf(in, sizeof in, "r%d", i - 1);
        snprintf(ins, sizeof ins, "\"%s\",\"\",\"%s\"", in, scales[i % 4]);
        if (i < 7)
            snprintf(out, sizeof out, "r%d", i);
        else
            snprintf(out, sizeof out, "y");
        mb_node(&m, name, "Resize", ins, out, "\"mode\":{\"string\":\"linear\"}");
    }
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int before = task_count();
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    size_t n = (size_t)256 * 14 * 14;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    TH_CHECK(x != NULL && y != NULL, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) * 0.25f;
    int64_t ys[] = {1, 256, 14, 14};
    for (int r = 0; r < 3; r++)
        run_one(s, "x", x, 4, xs, "y", y, 4, ys);
    int threads = task_count() - before;
    TH_CHECK(threads <= 3, "the runtime holds %d threads, expected at most 3 (2 in its pool, the "
                           "caller's OpenMP worker): a pool thread kept an OpenMP team",
             threads);
    free(x);
    free(y);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* The team cases' model: x [1, 32, 28, 28] through two 3x3
 * convolutions of 32 channels with a Relu between, to y of x's shape. */
static const char *team_model(void)
{
    struct mb m = {.seed = 8};
    int64_t xs[] = {1, 32, 28, 28};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "h", 32, 32, 3, 1, 1);
    mb_node(&m, "relu", "Relu", "\"h\"", "r", "");
    mb_conv(&m, "c2", "r", "y", 32, 32, 3, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

struct team_run {
    pl_session *s;
    float *x, *y;
    int64_t *xs;
};

static void *team_run_thread(void *arg)
{
    struct team_run *t = arg;
    for (int r = 0; r < 3; r++)
        run_one(t->s, "x", t->x, 4, t->xs, "y", t->y, 4, t->xs);
    return NULL;
}

/* A second application thread that runs a session (its steps go to the
 * module's dedicated worker: the first caller is the module's home) must
 * not leave a second OpenMP team behind: with two teams of 2 on 2 CPUs
 * libgomp throttles both (efficientformerv2_s0 on the first thread: 4.8
 * ms a run, 7.5 after a second thread had run it and ended). After the
 * first thread's runs and a second thread's, the process holds the pool's
 * 2 threads, the module's worker and one team's worker. */
static void case_team_one(void)
{
    int64_t xs[] = {1, 32, 28, 28};
    const char *path = team_model();
    int before = task_count();
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    size_t n = (size_t)32 * 28 * 28;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y), *y2 = calloc(n, sizeof *y2);
    TH_CHECK(x != NULL && y != NULL && y2 != NULL, "out of memory");
    struct team_run first = {s, x, y, xs}, second = {s, x, y2, xs};
    team_run_thread(&first);
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, team_run_thread, &second) == 0, "pthread_create");
    pthread_join(t, NULL);
    team_run_thread(&first);
    int threads = task_count() - before;
    TH_CHECK(threads <= 4, "the runtime holds %d threads, expected at most 4 (2 in its pool, the "
                           "module's worker, one OpenMP worker): two OpenMP teams live",
             threads);
    TH_CHECK(memcmp(y, y2, n * sizeof *y) == 0, "the two threads' results differ");
    free(x);
    free(y);
    free(y2);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

static void *team_unload_thread(void *arg)
{
    const char *path = arg;
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    int64_t xs[] = {1, 32, 28, 28};
    size_t n = (size_t)32 * 28 * 28;
    float *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    TH_CHECK(x != NULL && y != NULL, "out of memory");
    struct team_run t = {s, x, y, xs};
    team_run_thread(&t);
    free(x);
    free(y);
    pl_session_destroy(s);
    pl_runtime_destroy(rt); /* the module is unloaded here */
    return NULL;
}

/* A thread that owns the process's OpenMP team (odnn_team_settle keeps it
 * in a thread-specific value, whose destructor gives the place up) and
 * outlives the module: it makes a runtime, runs, destroys the runtime
 * (the module unloads) and ends. The destructor went with the module's
 * code, and the thread's exit called into unmapped memory (a crash, 3 of 3
 * times, before the key was deleted at unload). */
static void case_team_owner_outlives_module(void)
{
    const char *path = team_model();
    pthread_t t;
    TH_CHECK(pthread_create(&t, NULL, team_unload_thread, (void *)path) == 0, "pthread_create");
    pthread_join(t, NULL);
}

/* A Pad of a convolution's channel-blocked or channels-last output on its
 * spatial axes stays in that layout (odnn_pad_blocked), and the MaxPool
 * after it runs on it (HGNetV2's stem: a plain MaxPool took 0.25 ms where
 * ONNX Runtime took 0.04): 16 channels (whole blocks) and 20 (a partial
 * block, or channels last) padded with 0, 16 padded with 1.5. 20 padded
 * with 1.5 is kept in a partial block's layout only when it is channels
 * last (a block's padded channels must stay 0), so its layout is not
 * checked. The values agree with the cpu module's in every case. */
static void case_pad_blocked(void)
{
    static const int64_t chans[4] = {16, 20, 16, 20};
    static const float fills[4] = {0.0f, 0.0f, 1.5f, 1.5f};
    for (int k = 0; k < 4; k++) {
        int saved;
        const char *vpath = verbose_begin(&saved);
        struct mb m = {.seed = 211 + (uint32_t)k};
        int64_t c = chans[k], xs[] = {1, 8, 17, 17}, pads[] = {0, 0, 0, 0, 0, 0, 1, 1};
        mb_input(&m, "x", 4, xs);
        mb_conv(&m, "conv", "x", "h", 8, c, 3, 1, 1);
        mb_shape(&m, "pads", 8, pads);
        mb_scalar(&m, "v", fills[k]);
        mb_node(&m, "pad", "Pad", "\"h\",\"pads\",\"v\"", "p", "");
        mb_node(&m, "pool", "MaxPool", "\"p\"", "y",
                "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[1,1]}");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        int64_t ys[] = {1, c, 17, 17};
        compare(path, 4, xs, 4, ys, (const char *[]){"conv", "pad", "pool", NULL});
        FILE *f = verbose_end(saved, vpath);
        char line[2048];
        int pools = 0, plain = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "onednn_verbose,exec,", 20) != 0 || strstr(line, "pooling") == NULL)
                continue;
            pools++;
            plain += strstr(line, "src_f32::blocked:abcd:") != NULL;
        }
        fclose(f);
        TH_CHECK(pools > 0, "case %d: ONEDNN_VERBOSE printed no pooling", k);
        TH_CHECK(k == 3 || plain == 0, "case %d: %d of %d poolings on a plain source", k, plain,
                 pools);
    }
}

/* Inference BatchNormalization with nothing to fold into never runs as
 * oneDNN 2.6's binary_mul with a per-channel binary_add post-op, which
 * took 3x (channels first) to 13x (4 channels last) the time of one pass.
 * FORM 0: RepGhostNet's fusion_bn, the normalized map of a 1x1
 * convolution into 4 channels added to a depthwise convolution of it: on
 * a channels-last map, a depthwise 1x1 convolution (odnn_bnorm_depthwise).
 * FORMS 1 and 2: on the plain model input, [1, 6, 30, 30] and a batch of
 * two [2, 5, 64] (plane r of channel r % 5), the module's own step
 * (odnn_bnorm_planes). A Relu after it (forms 0 and 1) is applied as it
 * writes: no eltwise primitive, one step. The cpu module's values in
 * each. */
static void case_bnorm_affine_layouts(void)
{
    for (int form = 0; form < 3; form++) {
        int saved;
        const char *vpath = verbose_begin(&saved);
        struct mb m = {.seed = 311 + (uint32_t)form};
        int64_t xs0[] = {1, 8, 40, 40}, xs1[] = {1, 6, 30, 30}, xs2[] = {2, 5, 64};
        int64_t *xs = form == 0 ? xs0 : form == 1 ? xs1 : xs2;
        int nd = form == 2 ? 3 : 4;
        int64_t c = form == 0 ? 4 : xs[1], cs[] = {c};
        const char *bn_in = "x";
        mb_input(&m, "x", nd, xs);
        if (form == 0) {
            mb_conv(&m, "pc", "x", "p", 8, 4, 1, 1, 1);
            mb_node(&m, "relu", "Relu", "\"p\"", "r", "");
            mb_conv(&m, "dw", "r", "d", 4, 4, 3, 1, 4);
            bn_in = "r";
        }
        static const char *const what[4] = {"scale", "bias", "mean", "var"};
        float var[8];
        for (int j = 0; j < 8; j++)
            var[j] = 0.5f + 0.1f * (float)j;
        for (int j = 0; j < 4; j++)
            mb_const(&m, what[j], 1, cs, j == 3 ? var : NULL, 0.5f);
        char ins[160];
        snprintf(ins, sizeof ins, "\"%s\",\"scale\",\"bias\",\"mean\",\"var\"", bn_in);
        mb_node(&m, "bn", "BatchNormalization", ins, form == 2 ? "y" : "n", "");
        if (form < 2) /* applied as the normalization writes */
            mb_node(&m, "bnrelu", "Relu", "\"n\"", form == 0 ? "nr" : "y", "");
        if (form == 0)
            mb_node(&m, "add", "Add", "\"d\",\"nr\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        int64_t ys0[] = {1, 4, 40, 40};
        compare(path, nd, xs, nd, form == 0 ? ys0 : xs,
                form == 0 ? (const char *[]){"pc", "dw", "bn", "bnrelu", "add", NULL}
                          : (const char *[]){"bn", NULL});
        FILE *f = verbose_end(saved, vpath);
        char line[2048];
        int execs = 0, muls = 0, eltwise = 0;
        while (fgets(line, sizeof line, f) != NULL) {
            if (strncmp(line, "onednn_verbose,exec,", 20) != 0)
                continue;
            execs++;
            muls += strstr(line, "alg:binary_mul") != NULL;
            eltwise += strstr(line, ",eltwise,") != NULL;
        }
        fclose(f);
        /* (forms 1 and 2 run no oneDNN primitive at all) */
        TH_CHECK(form > 0 || execs > 0, "form %d: ONEDNN_VERBOSE printed nothing", form);
        TH_CHECK(muls == 0 && eltwise == 0, "form %d: %d binary_mul and %d eltwise runs", form,
                 muls, eltwise);
        if (form > 0) {
            struct blob b = compile_blob(path);
            uint32_t total;
            int own = count_steps(&b, 40 /* ODNN_S_AFFINE */, &total);
            TH_CHECK(own == 1 && total == 1, "form %d: %d own steps of %u", form, own, total);
            free(b.bytes);
        }
    }
}

/* SegFormer's decode head: a product's [1, HW, C] read as [1, C, H, W]
 * through a Transpose and a Reshape is channels-last; the Resize reads it
 * so, on oneDNN's jit kernel (never its reference one, which took 22 ms
 * for 128 x 32 x 32 when the view's layout came out as cdab), and the
 * result agrees with the cpu module. */
static void case_resize_channels_last(void)
{
    int saved;
    const char *vpath = verbose_begin(&saved);
    struct mb m = {.seed = 59};
    /* (256 x 16 x 24: above the module's own small products, a oneDNN
     * matmul the verbose log counts) */
    int64_t xs[] = {1, 256, 16}, ws[] = {16, 24}, ss[] = {4}, shape[] = {1, 24, 16, 16};
    float scales[4] = {1, 1, 2, 2};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w", 2, ws, NULL, 0.3f);
    mb_const(&m, "sc", 1, ss, scales, 1);
    mb_shape(&m, "to4d", 4, shape);
    mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "p", "");
    mb_node(&m, "tr", "Transpose", "\"p\"", "t", "\"perm\":{\"ints\":[0,2,1]}");
    mb_node(&m, "rs", "Reshape", "\"t\",\"to4d\"", "r", "");
    mb_node(&m, "up", "Resize", "\"r\",\"\",\"sc\"", "u",
            "\"mode\":{\"string\":\"linear\"}");
    mb_node(&m, "relu", "Relu", "\"u\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 24, 32, 32};
    const char *path = mb_write(&m);
    compare(path, 3, xs, 4, ys, (const char *[]){"mm", "up", "relu", NULL});
    FILE *f = verbose_end(saved, vpath);
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    char line[2048];
    if (strcmp(used, "auto") == 0) {
        /* the module's own Resize reads the view as it is: the one reorder
         * of a run is the result's, to the plain graph output */
        TH_CHECK(strstr(logs[0].text, "node 'up': the module's own Resize (linear)") != NULL,
                 "up: log:\n%s", logs[0].text);
        int reorders = 0, runs = 0;
        while (fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, "onednn_verbose,exec,", 20) == 0) {
                reorders += strstr(line, ",reorder,") != NULL;
                runs += strstr(line, ",matmul,") != NULL;
            }
        fclose(f);
        TH_CHECK(runs > 0 && reorders <= runs, "%d reorders in %d runs", reorders, runs);
        return;
    }
    int last = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "onednn_verbose,exec,", 20) != 0 || strstr(line, "resampling") == NULL)
            continue;
        TH_CHECK(strstr(line, "ref") == NULL, "a resampling ran on the reference kernel: %s",
                 line);
        last += strstr(line, "src_f32::blocked:acdb") != NULL;
    }
    fclose(f);
    TH_CHECK(last > 0, "no resampling read the channels-last view");
}

/* PP-OCRv5's detector stem: a 3x3 convolution's 24 channels (one whole
 * block of 16 and a padded one; 20 in blocks of 8 below AVX-512) and a
 * MaxPool of them concatenated, then
 * a stride-2 convolution and two of 64 channels (so that the module
 * keeps convolutions blocked), at batch 2. The concat's destination is
 * channels last and each blocked source is copied into its piece by the
 * module's own loop (oneDNN's jit:uni reorder took 1.8 ms a source at
 * 160x224); the values agree with cpu's, every image's pixels in their
 * place. */
static void case_concat_unblock(void)
{
    /* below AVX-512 blocks are of 8 channels: 20 is two and a padded one */
    char isa[64] = "";
    int64_t ch = onednn_avx512(isa) ? 24 : 20;
    struct mb m = {.seed = 77};
    int64_t xs[] = {2, 3, 18, 22};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "stem", "x", "s", 3, ch, 3, 1, 1);
    mb_node(&m, "relu", "Relu", "\"s\"", "r", "");
    mb_conv(&m, "c1", "r", "a", ch, ch, 3, 1, 1);
    mb_node(&m, "pool", "MaxPool", "\"r\"", "p",
            "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[1,1]},"
            "\"pads\":{\"ints\":[1,1,1,1]}");
    mb_node(&m, "cat", "Concat", "\"a\",\"p\"", "c", "\"axis\":{\"int\":1}");
    mb_conv(&m, "down", "c", "d", 2 * ch, 64, 3, 2, 1);
    mb_conv(&m, "c3", "d", "e", 64, 64, 3, 1, 1);
    mb_conv(&m, "c4", "e", "f", 64, 64, 3, 1, 1);
    mb_node(&m, "out", "Relu", "\"f\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {2, 64, 9, 11};
    compare(path, 4, xs, 4, ys, (const char *[]){"stem", "c1", "pool", "cat", "down", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    char want[64];
    snprintf(want, sizeof want, "%lld channels in blocks of %d into channels last",
             (long long)ch, ch == 24 ? 16 : 8);
    TH_CHECK(strstr(log.text, want) != NULL,
             "the concat's sources did not go through the module's loop (%s); log:\n%s", isa,
             log.text);
    pl_runtime_destroy(rt);
}

static void case_dense_concat(void)
{
    int saved;
    const char *vpath = verbose_begin(&saved);
    struct mb m = {.seed = 71};
    int64_t xs[] = {1, 16, 12, 12};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "stem", "x", "s", 16, 16, 3, 1, 1);
    const char *prev = "s";
    char names[2][6][32];
    int64_t ch = 16;
    for (int k = 0; k < 2; k++) {
        char(*nm)[32] = names[k];
        snprintf(nm[0], 32, "g%d", k);
        snprintf(nm[1], 32, "cat%d", k);
        snprintf(nm[2], 32, "bn%d", k);
        snprintf(nm[3], 32, "relu%d", k);
        snprintf(nm[4], 32, "c%d", k);
        mb_conv(&m, nm[0], prev, nm[0], ch, 8, 3, 1, 1);
        char ins[512];
        snprintf(ins, sizeof ins, "\"%s\",\"%s\"", prev, nm[0]);
        mb_node(&m, nm[1], "Concat", ins, nm[1], "\"axis\":{\"int\":1}");
        ch += 8;
        int64_t c[] = {ch};
        char sc[5][48];
        static const char *const what[4] = {"scale", "bias", "mean", "var"};
        float var[32];
        for (int j = 0; j < 32; j++)
            var[j] = 0.5f + 0.02f * (float)j;
        for (int j = 0; j < 4; j++) {
            snprintf(sc[j], sizeof sc[j], "%s_%s", nm[2], what[j]);
            mb_const(&m, sc[j], 1, c, j == 3 ? var : NULL, 0.2f);
        }
        snprintf(ins, sizeof ins, "\"%s\",\"%s\",\"%s\",\"%s\",\"%s\"", nm[1], sc[0],
                 sc[1], sc[2], sc[3]);
        mb_node(&m, nm[2], "BatchNormalization", ins, nm[2], "");
        snprintf(ins, sizeof ins, "\"%s\"", nm[2]);
        mb_node(&m, nm[3], "Relu", ins, nm[3], "");
        mb_conv(&m, nm[4], nm[3], nm[4], ch, ch, 1, 1, 1);
        prev = nm[4];
    }
    mb_node(&m, "out", "Relu", "\"c1\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 32, 12, 12};
    compare(path, 4, xs, 4, ys,
            (const char *[]){"stem", "g0", "cat0", "bn0", "c0", "g1", "cat1", "bn1", "c1", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    TH_CHECK(strstr(log.text, "primitives") != NULL, "no compile in the log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "reference implementation") == NULL, "log:\n%s", log.text);
    pl_runtime_destroy(rt);
    FILE *f = verbose_end(saved, vpath);
    char line[2048];
    int execs = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "onednn_verbose,exec,", 20) != 0)
            continue;
        execs++;
        TH_CHECK(strstr(line, ",ref:") == NULL && strstr(line, "_ref:") == NULL &&
                     strstr(line, ",ref_") == NULL,
                 "a reference kernel ran: %s", line);
        TH_CHECK(strstr(line, ",concat,") == NULL, "oneDNN's concat ran: %s", line);
        TH_CHECK(strstr(line, "ncsp_bnorm") == NULL, "the ncsp batch normalization ran: %s",
                 line);
    }
    fclose(f);
    TH_CHECK(execs > 0, "ONEDNN_VERBOSE printed nothing (is it read before the case?)");
}

/* 1-D convolutions and pooling (audio and sequence models: Conv1d, TCNs,
 * wav2vec's feature encoder) run on onednn as oneDNN's 1-D primitives:
 * a strided Conv with a wide kernel, a dilated one with SAME-like pads,
 * a depthwise one, MaxPool, AveragePool and GlobalAveragePool, each
 * agreeing with the cpu module. Before, every one was refused ("only 2-D"). */
static void case_conv1d(void)
{
    struct mb m = {.seed = 83};
    int64_t xs[] = {2, 8, 64};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w1", 3, (int64_t[]){32, 8, 10}, NULL, 0.1f);
    mb_const(&m, "b1", 1, (int64_t[]){32}, NULL, 0.1f);
    mb_node(&m, "c1", "Conv", "\"x\",\"w1\",\"b1\"", "a",
            "\"strides\":{\"ints\":[3]},\"pads\":{\"ints\":[2,1]}");
    mb_node(&m, "r1", "Relu", "\"a\"", "ar", "");
    mb_const(&m, "w2", 3, (int64_t[]){32, 32, 3}, NULL, 0.1f);
    mb_node(&m, "c2", "Conv", "\"ar\",\"w2\"", "c",
            "\"dilations\":{\"ints\":[2]},\"pads\":{\"ints\":[2,2]}");
    mb_const(&m, "w3", 3, (int64_t[]){32, 1, 5}, NULL, 0.3f);
    mb_node(&m, "dw", "Conv", "\"c\",\"w3\"", "d",
            "\"group\":{\"int\":32},\"pads\":{\"ints\":[2,2]}");
    mb_node(&m, "mp", "MaxPool", "\"d\"", "e",
            "\"kernel_shape\":{\"ints\":[3]},\"strides\":{\"ints\":[2]}");
    mb_node(&m, "ap", "AveragePool", "\"e\"", "f",
            "\"kernel_shape\":{\"ints\":[2]},\"pads\":{\"ints\":[1,0]}");
    mb_node(&m, "gap", "GlobalAveragePool", "\"f\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    /* 64 -> c1: (64+3-10)/3+1 = 20 -> c2: 20 -> dw: 20 -> mp: 9 -> ap: 5 -> gap: 1 */
    int64_t ys[] = {2, 32, 1};
    compare(mb_write(&m), 3, xs, 3, ys,
            (const char *[]){"c1", "r1", "c2", "dw", "mp", "ap", "gap", NULL});
}

/* Slice is a view: a TCN's causal chomp (a padded Conv1d, then the last
 * axis cut back), a channel slice with step 2 from a negative start, and
 * an opset-10 slice whose axes are given; each agrees with the cpu module
 * and runs on onednn (before: "no oneDNN primitive", a subgraph boundary
 * at every chomp). So is Gather of one constant index: a one-element
 * vector from the end (the axis stays) and a scalar (the axis goes). */
static void case_slice_views(void)
{
    struct mb m = {.seed = 89};
    int64_t xs[] = {1, 16, 40};
    mb_input(&m, "x", 3, xs);
    mb_const(&m, "w1", 3, (int64_t[]){16, 16, 3}, NULL, 0.2f);
    mb_node(&m, "c1", "Conv", "\"x\",\"w1\"", "a",
            "\"pads\":{\"ints\":[2,2]},\"dilations\":{\"ints\":[2]}");
    mb_shape(&m, "s0", 1, (int64_t[]){0});
    mb_shape(&m, "e0", 1, (int64_t[]){-4});
    mb_shape(&m, "a0", 1, (int64_t[]){2});
    mb_node(&m, "chomp", "Slice", "\"a\",\"s0\",\"e0\",\"a0\"", "b", "");
    mb_node(&m, "relu", "Relu", "\"b\"", "r", "");
    mb_shape(&m, "s1", 1, (int64_t[]){-15});
    mb_shape(&m, "e1", 1, (int64_t[]){1000});
    mb_shape(&m, "a1", 1, (int64_t[]){1});
    mb_shape(&m, "p1", 1, (int64_t[]){2});
    mb_node(&m, "odd", "Slice", "\"r\",\"s1\",\"e1\",\"a1\",\"p1\"", "h", "");
    mb_node(&m, "tanh", "Tanh", "\"h\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 8, 36};
    compare(mb_write(&m), 3, xs, 3, ys,
            (const char *[]){"c1", "chomp", "relu", "odd", "tanh", NULL});
    /* Gather of one index: a scalar (the axis goes) and a one-element
     * vector from the end (the axis stays) */
    struct mb g = {.seed = 91};
    int64_t gs[] = {2, 5, 12};
    mb_input(&g, "x", 3, gs);
    mb_node(&g, "t", "Tanh", "\"x\"", "a", "");
    mb_shape(&g, "i0", 1, (int64_t[]){-2});
    mb_node(&g, "last", "Gather", "\"a\",\"i0\"", "b", "\"axis\":{\"int\":1}");
    mb_node(&g, "s", "Sigmoid", "\"b\"", "c", "");
    mb_i64_scalar(&g, "i1", 3);
    mb_node(&g, "pick", "Gather", "\"c\",\"i1\"", "d", "\"axis\":{\"int\":2}");
    mb_node(&g, "e", "Exp", "\"d\"", "y", "");
    g.outputs[g.n_outputs++] = "y";
    int64_t gy[] = {2, 1};
    compare(mb_write(&g), 3, gs, 2, gy, (const char *[]){"t", "last", "s", "pick", "e", NULL});
}

/* Concat without a copy: squeezenet's fire module (a 1x1 and a 3x3
 * convolution of 32 channels each, concatenated in their channel-blocked
 * layout), a plain concat of two activations of a [1,1,16,81] view, and a
 * concat one of whose sources another node also reads (that one is copied
 * into its piece of the output, the other written in place). All agree
 * with the cpu module; the debug log counts the sources written in place. */
static void case_concat_in_place(void)
{
    struct mb m = {.seed = 97};
    int64_t xs[] = {1, 16, 9, 9};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "sq", "x", "s", 16, 16, 1, 1, 1);
    mb_node(&m, "sr", "Relu", "\"s\"", "sa", "");
    mb_conv(&m, "e1", "sa", "a", 16, 32, 1, 1, 1);
    mb_conv(&m, "e3", "sa", "b", 16, 32, 3, 1, 1);
    mb_node(&m, "fire", "Concat", "\"a\",\"b\"", "f", "\"axis\":{\"int\":1}");
    mb_conv(&m, "next", "f", "g", 64, 16, 1, 1, 1);
    mb_node(&m, "gr", "Relu", "\"g\"", "h", "");
    /* the plain pair: two activations of a [1,1,16,81] view, along axis 2 */
    mb_shape(&m, "shp", 4, (int64_t[]){1, 1, 16, 81});
    mb_node(&m, "rs", "Reshape", "\"h\",\"shp\"", "r", "");
    mb_node(&m, "t1", "Tanh", "\"r\"", "p", "");
    mb_node(&m, "t2", "Sigmoid", "\"r\"", "q", "");
    mb_node(&m, "plain", "Concat", "\"p\",\"q\"", "pq", "\"axis\":{\"int\":2}");
    mb_node(&m, "t3", "Abs", "\"pq\"", "u", "");
    /* a source with a second reader: copied */
    mb_node(&m, "t4", "Exp", "\"u\"", "w", "");
    mb_node(&m, "shared", "Concat", "\"w\",\"u\"", "wu", "\"axis\":{\"int\":2}");
    mb_node(&m, "out", "Add", "\"wu\",\"wu\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 1, 64, 81};
    compare(path, 4, xs, 4, ys,
            (const char *[]){"e1", "e3", "fire", "next", "t1", "t2", "plain", "shared", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    TH_CHECK(strstr(log.text, "node 'fire' (Concat): 2 of its 2 sources written in place") !=
                 NULL,
             "fire: log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "node 'plain' (Concat): 2 of its 2 sources written in place") !=
                 NULL,
             "plain: log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "node 'shared' (Concat): 1 of its 2 sources written in place") !=
                 NULL,
             "shared: log:\n%s", log.text);
    pl_runtime_destroy(rt);
}

/* Resize and Upsample as oneDNN's resampling: nearest x2 with PyTorch's
 * asymmetric/floor, bilinear with pytorch_half_pixel from 6x6 to 9x9
 * (sizes given), nearest x3 with half_pixel/round_prefer_ceil, and
 * Upsample-9; all agree with the cpu module (ONNX's reference). Linear with
 * align_corners is refused with a reason and runs on cpu, unless the
 * module's own Resize is in use (AVX2 below AVX-512, direct_conv = auto),
 * which takes it (and agrees). */
static void case_resize(void)
{
    struct mb m = {.seed = 101};
    int64_t xs[] = {1, 16, 6, 6};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c", "x", "a", 16, 16, 3, 1, 1);
    float s2[] = {1, 1, 2, 2}, s3[] = {1, 1, 3, 3};
    mb_const(&m, "s2", 1, (int64_t[]){4}, s2, 1);
    mb_const(&m, "s3", 1, (int64_t[]){4}, s3, 1);
    mb_const(&m, "roi", 1, (int64_t[]){0}, NULL, 1);
    mb_shape(&m, "sz", 4, (int64_t[]){1, 16, 9, 9});
    mb_node(&m, "near", "Resize", "\"a\",\"roi\",\"s2\"", "n2",
            "\"mode\":{\"string\":\"nearest\"},\"coordinate_transformation_mode\":"
            "{\"string\":\"asymmetric\"},\"nearest_mode\":{\"string\":\"floor\"}");
    mb_node(&m, "lin", "Resize", "\"a\",\"roi\",\"\",\"sz\"", "l9",
            "\"mode\":{\"string\":\"linear\"},\"coordinate_transformation_mode\":"
            "{\"string\":\"pytorch_half_pixel\"}");
    mb_node(&m, "near3", "Resize", "\"l9\",\"roi\",\"s3\"", "n27",
            "\"mode\":{\"string\":\"nearest\"},\"nearest_mode\":{\"string\":\"round_prefer_ceil\"}");
    mb_node(&m, "ac", "Resize", "\"n2\",\"roi\",\"\",\"sz\"", "ac9",
            "\"mode\":{\"string\":\"linear\"},\"coordinate_transformation_mode\":"
            "{\"string\":\"align_corners\"}");
    mb_node(&m, "pool", "MaxPool", "\"n27\"", "p",
            "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[3,3]}");
    mb_node(&m, "sum", "Add", "\"p\",\"ac9\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 16, 9, 9};
    compare(path, 4, xs, 4, ys, (const char *[]){"c", "near", "lin", "near3", "pool", NULL});
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    if (strcmp(used, "auto") == 0) {
        /* below AVX-512 the module's own Resize takes every mode */
        compare(path, 4, xs, 4, ys, (const char *[]){"near", "lin", "near3", "ac", NULL});
        TH_CHECK(strstr(logs[0].text, "node 'ac': the module's own Resize (linear)") != NULL,
                 "ac: log:\n%s", logs[0].text);
    }
    pl_runtime *rt = onednn_runtime_with("direct_conv = no", NULL);
    pl_session *s = session_for(rt, path);
    json_t *root = th_explain(s);
    json_t *p = th_placement_of(root, "ac");
    const char *why = json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
    TH_CHECK(why != NULL && strstr(why, "align_corners") != NULL, "ac: %s", why ? why : "(none)");
    json_decref(root);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);

    struct mb u = {.seed = 103, .opset = 9};
    mb_input(&u, "x", 4, xs);
    mb_conv(&u, "c", "x", "a", 16, 16, 3, 1, 1);
    mb_const(&u, "s2", 1, (int64_t[]){4}, s2, 1);
    mb_node(&u, "up", "Upsample", "\"a\",\"s2\"", "y", "\"mode\":{\"string\":\"nearest\"}");
    u.outputs[u.n_outputs++] = "y";
    int64_t us[] = {1, 16, 12, 12};
    compare(mb_write(&u), 4, xs, 4, us, (const char *[]){"c", "up", NULL});
}

/* ConvNeXt's LayerNorm2d as PyTorch exports it: the decomposed layer norm
 * over axis 1 of NCHW with a per-channel gamma and beta ([C,1,1]). Its
 * ReduceMeans and channel broadcasts alone are oneDNN reference kernels;
 * as a pattern it is one layer normalization of the NHWC copy, whose
 * result the next convolution and a residual Add read in NHWC strides.
 * All nine nodes run on onednn and agree with the cpu module. */
static void case_channel_layernorm_affine(void)
{
    struct mb m = {.seed = 107};
    int64_t xs[] = {1, 16, 8, 8}, c3[] = {24, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "conv", "x", "a", 16, 24, 3, 1, 1);
    mb_const(&m, "gamma", 3, c3, NULL, 1.0f);
    mb_const(&m, "beta", 3, c3, NULL, 0.5f);
    mb_channel_norm(&m);
    mb_node(&m, "scale", "Mul", "\"n\",\"gamma\"", "g", "");
    mb_node(&m, "shift", "Add", "\"g\",\"beta\"", "ln", "");
    mb_conv(&m, "conv2", "ln", "c2", 24, 24, 1, 1, 1);
    mb_node(&m, "res", "Add", "\"c2\",\"ln\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 24, 8, 8};
    compare(mb_write(&m), 4, xs, 4, ys,
            (const char *[]){"conv", "mean", "sub", "pow", "var", "addeps", "sqrt", "div",
                             "scale", "shift", "conv2", "res", NULL});
}

/* A node whose work takes a few microseconds runs its primitives on one
 * thread (made and run so), a large one on the runtime's team: a 3x3
 * convolution of 64 channels at 28x28 beside a Tanh of 8 values. The debug
 * log counts one primitive on one thread; results agree with cpu. */
static void case_small_one_thread(void)
{
    struct mb m = {.seed = 109};
    int64_t xs[] = {1, 64, 28, 28};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "big", "x", "a", 64, 64, 3, 1, 1);
    mb_node(&m, "relu", "Relu", "\"a\"", "r", "");
    mb_node(&m, "gap", "GlobalAveragePool", "\"r\"", "g", "");
    mb_node(&m, "tanh", "Tanh", "\"g\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    int64_t ys[] = {1, 64, 1, 1};
    compare(path, 4, xs, 4, ys, (const char *[]){"big", "relu", "gap", "tanh", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    pl_runtime_destroy(rt);
    TH_CHECK(strstr(log.text, "(1 on one thread)") != NULL, "log:\n%s", log.text);
    /* one_thread_us moves the limit: 0 puts nothing on one thread, a limit
     * above the convolution's 57 us (at the default rates) the convolution
     * too. */
    static const char *const kv[2] = {"one_thread_us = 0", "one_thread_us = 1000"};
    for (int k = 0; k < 2; k++) {
        memset(&log, 0, sizeof log);
        rt = onednn_runtime_with(kv[k], &log);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        const char *at = strstr(log.text, " on one thread)");
        int count = -1;
        while (at != NULL && at > log.text && at[-1] >= '0' && at[-1] <= '9')
            at--;
        if (at != NULL)
            count = atoi(at);
        TH_CHECK(k == 0 ? count == 0 : count > 1, "%s: %d on one thread; log:\n%s", kv[k], count,
                 log.text);
    }
}

/* solo = on (onednn_pace.h): every primitive the plan made for the team
 * is made again for one thread, the same implementation in the same
 * layouts, and the runs use them; the outputs equal the team's (the same
 * kernels, split otherwise), and the debug log counts them all made. A 5x5
 * and a 1x1 convolution of 64 channels at 28x28, a residual sum, reorders.
 * (oneDNN's Winograd 2x3 lays its weights out by the team's blocking: it
 * stays on the team.) */
static void case_solo_runs(void)
{
    struct mb m = {.seed = 113};
    int64_t xs[] = {1, 64, 28, 28};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "a", 64, 64, 5, 1, 1);
    mb_node(&m, "relu", "Relu", "\"a\"", "r", "");
    mb_conv(&m, "c2", "r", "b", 64, 64, 1, 1, 1);
    mb_node(&m, "add", "Add", "\"b\",\"x\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    size_t n = count(4, xs);
    float *x = malloc(n * sizeof *x), *y1 = calloc(n, sizeof *y1), *y2 = calloc(n, sizeof *y2);
    TH_CHECK(x && y1 && y2, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime(), *rs = onednn_runtime_with("solo = on", &log);
    pl_session *st = session_for(rt, path), *ss = session_for(rs, path);
    for (int rep = 0; rep < 3; rep++) {
        run_one(st, "x", x, 4, xs, "y", y1, 4, xs);
        run_one(ss, "x", x, 4, xs, "y", y2, 4, xs);
        for (size_t i = 0; i < n; i++)
            TH_CHECK(fabsf(y1[i] - y2[i]) <= 1e-5f * fmaxf(1.0f, fabsf(y1[i])),
                     "y[%zu] = %.9g solo, %.9g on the team", i, y2[i], y1[i]);
    }
    int threads = pl_runtime_thread_count(rs);
    const char *at = strstr(log.text, "solo runs: ");
    int made = -1, prims = -1;
    if (at != NULL)
        sscanf(at, "solo runs: %d of %d", &made, &prims);
    if (threads > 1)
        TH_CHECK(made > 0 && made == prims, "%d of %d made for one thread; log:\n%s", made,
                 prims, log.text);
    else
        TH_CHECK(at == NULL, "one thread, yet solo primitives made; log:\n%s", log.text);
    pl_session_destroy(st);
    pl_session_destroy(ss);
    pl_runtime_destroy(rt);
    pl_runtime_destroy(rs);
    free(x);
    free(y1);
    free(y2);
}

/* ---- the module's direct convolution (onednn_direct.c) ----------------------
 *
 * Every shape and fusion the kernel takes, against the cpu module: channel
 * counts that leave a half block of 8 (40 out), a batch of 2, a non-square
 * map, stride 2 with asymmetric pads, dilation, 1xK kernels, a 1-D
 * convolution, and each epilogue (none, ReLU, LeakyRelu, Clip in the
 * kernel; a residual sum and a Sigmoid through the binary step), and a
 * layer of 8 channels in that the kernel leaves to oneDNN. The debug
 * log must name the direct kernel for every one where the module reports it
 * in use (AVX2 below AVX-512), and direct_conv = no must never use it. */
struct direct_variant {
    const char *name;
    int nd;
    int64_t xs[4], ws[4], ys[4];
    const char *attrs; /* Conv's */
    const char *act;   /* the op after it, "" for none, "Add" for a residual */
    const char *act_attrs;
    int bias;
    const char *epilogue; /* what the log must say; NULL: the kernel must not take it */
    int wino;             /* the Winograd tile the log must name (onednn_winograd.c), or 0 */
};

static const struct direct_variant direct_variants[] = {
    {"relu_tail", 4, {2, 16, 9, 7}, {40, 16, 3, 3}, {2, 40, 9, 7}, "\"pads\":{\"ints\":[1,1,1,1]}",
     "Relu", "", 1, "in the kernel", 0},
    {"stride2_leaky", 4, {1, 16, 11, 10}, {32, 16, 3, 3}, {1, 32, 5, 5},
     "\"pads\":{\"ints\":[0,1,1,0]},\"strides\":{\"ints\":[2,2]}", "LeakyRelu",
     "\"alpha\":{\"float\":0.1}", 1, "in the kernel", 0},
    {"dilated_clip", 4, {1, 32, 8, 8}, {16, 32, 3, 3}, {1, 16, 8, 8},
     "\"pads\":{\"ints\":[3,3,3,3]},\"dilations\":{\"ints\":[3,3]}", "Clip", "", 0,
     "in the kernel", 0},
    {"residual_5x5", 4, {1, 32, 6, 6}, {32, 32, 5, 5}, {1, 32, 6, 6}, "\"pads\":{\"ints\":[2,2,2,2]}",
     "Add", "", 1, "in a binary step", 0},
    {"one_by_three_sigmoid", 4, {1, 16, 5, 12}, {40, 16, 1, 3}, {1, 40, 5, 12},
     "\"pads\":{\"ints\":[0,1,0,1]}", "Sigmoid", "", 1, "in the kernel", 0},
    /* SiLU (x * sigmoid(x), the module's swish) in the kernel, and on
     * Winograd's output transform */
    {"silu", 4, {1, 16, 9, 11}, {40, 16, 3, 3}, {1, 40, 9, 11}, "\"pads\":{\"ints\":[1,1,1,1]}",
     "SiLU", "", 1, "in the kernel", 0},
    {"wino4_silu", 4, {1, 32, 17, 16}, {32, 32, 3, 3}, {1, 32, 17, 16},
     "\"pads\":{\"ints\":[1,1,1,1]}", "SiLU", "", 1, "in the kernel", 4},
    {"conv1d_dilated", 3, {2, 32, 20}, {32, 32, 3}, {2, 32, 20},
     "\"pads\":{\"ints\":[4,0]},\"dilations\":{\"ints\":[2]}", "", "", 1, "in the kernel", 0},
    /* Winograd: F(2x2) with edge tiles in both directions, a batch of 2
     * and a half block of output channels; F(4x4) with a residual, without
     * padding, and with asymmetric pads */
    {"wino2_tail", 4, {2, 40, 9, 11}, {24, 40, 3, 3}, {2, 24, 9, 11},
     "\"pads\":{\"ints\":[1,1,1,1]}", "Relu", "", 1, "in the kernel", 2},
    {"wino4_residual", 4, {1, 32, 17, 19}, {32, 32, 3, 3}, {1, 32, 17, 19},
     "\"pads\":{\"ints\":[1,1,1,1]}", "Add", "", 1, "in a binary step", 4},
    {"wino4_nopad_leaky", 4, {1, 48, 20, 18}, {40, 48, 3, 3}, {1, 40, 18, 16}, "", "LeakyRelu",
     "\"alpha\":{\"float\":0.1}", 1, "in the kernel", 4},
    {"wino2_asym_clip", 4, {1, 32, 10, 9}, {16, 32, 3, 3}, {1, 16, 10, 9},
     "\"pads\":{\"ints\":[2,0,0,2]}", "Clip", "", 0, "in the kernel", 2},
    /* transformed weights beyond 4 MiB: all tiles in one block, the output
     * blocks split across work items */
    {"wino2_streamed", 4, {1, 256, 8, 7}, {264, 256, 3, 3}, {1, 264, 8, 7},
     "\"pads\":{\"ints\":[1,1,1,1]}", "Relu", "", 1, "in the kernel", 2},
    /* 8 channels in: oneDNN's kernel is faster there; not taken */
    {"narrow", 4, {1, 8, 12, 12}, {32, 8, 3, 3}, {1, 32, 12, 12}, "\"pads\":{\"ints\":[1,1,1,1]}",
     "Relu", "", 1, NULL, 0},
};

static const char *model_direct(const struct direct_variant *dv)
{
    struct mb m = {.seed = 41};
    mb_input(&m, "x", dv->nd, dv->xs);
    float scale = 1.0f / sqrtf((float)(dv->ws[1] * dv->ws[2] * (dv->nd == 4 ? dv->ws[3] : 1)));
    mb_const(&m, "w", dv->nd, dv->ws, NULL, scale);
    mb_const(&m, "b", 1, (int64_t[]){dv->ws[0]}, NULL, 0.2f);
    const char *last = dv->act[0] ? "c" : "y";
    mb_node(&m, "conv", "Conv", dv->bias ? "\"x\",\"w\",\"b\"" : "\"x\",\"w\"", last, dv->attrs);
    if (strcmp(dv->act, "Add") == 0) {
        mb_node(&m, "act", "Add", "\"c\",\"x\"", "y", "");
    } else if (strcmp(dv->act, "SiLU") == 0) {
        mb_node(&m, "sig", "Sigmoid", "\"c\"", "s", "");
        mb_node(&m, "act", "Mul", "\"c\",\"s\"", "y", "");
    } else if (strcmp(dv->act, "Clip") == 0) { /* ReLU6-like bounds, as inputs */
        mb_const(&m, "lo", 0, NULL, (const float[]){0.0f}, 1.0f);
        mb_const(&m, "hi", 0, NULL, (const float[]){0.5f}, 1.0f);
        mb_node(&m, "act", "Clip", "\"c\",\"lo\",\"hi\"", "y", "");
    } else if (dv->act[0])
        mb_node(&m, "act", dv->act, "\"c\"", "y", dv->act_attrs);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}


static void case_direct_conv(void)
{
    for (size_t k = 0; k < sizeof direct_variants / sizeof direct_variants[0]; k++) {
        const struct direct_variant *dv = &direct_variants[k];
        const char *path = model_direct(dv);
        int64_t xs[4], ys[4];
        memcpy(xs, dv->xs, sizeof xs);
        memcpy(ys, dv->ys, sizeof ys);
        compare_floor = dv->wino == 4 ? 1e-5 : 0.0;
        compare(path, dv->nd, xs, dv->nd, ys, (const char *[]){"conv", NULL});
        compare_floor = 0.0;
        static struct wino_log logs[3];
        char used[96] = "";
        kernel_logs(path, "winograd = no", logs, used);
        char want[160];
        snprintf(want, sizeof want, "node 'conv': the module's direct convolution%s, bias and %s",
                 dv->wino == 2   ? " (Winograd F(2x2, 3x3))"
                 : dv->wino == 4 ? " (Winograd F(4x4, 3x3))"
                                 : "",
                 dv->epilogue == NULL                       ? ""
                 : strcmp(dv->epilogue, "in the kernel") == 0 ? "activation in the kernel"
                                                            : "post-ops in a binary step");
        if (dv->epilogue == NULL)
            TH_CHECK(strstr(logs[0].text, "direct convolution") == NULL,
                     "%s: taken by the direct kernel; log:\n%s", dv->name, logs[0].text);
        else if (strcmp(used, "auto") == 0)
            TH_CHECK(strstr(logs[0].text, want) != NULL, "%s: no '%s' in the log:\n%s", dv->name,
                     want, logs[0].text);
        else
            TH_CHECK(strstr(used, "not used") != NULL, "%s: direct_conv reported as '%s'",
                     dv->name, used);
        TH_CHECK(strstr(logs[1].text, "direct convolution") == NULL,
                 "%s: direct_conv = no used it; log:\n%s", dv->name, logs[1].text);
        TH_CHECK(strstr(logs[2].text, "Winograd") == NULL,
                 "%s: winograd = no used Winograd; log:\n%s", dv->name, logs[2].text);
    }
    /* a bad value is refused naming the key */
    pl_runtime *rt = onednn_runtime();
    pl_module *m = rt->modules[pl_runtime_find_module(rt, "onednn")];
    pl_kv bad = {"direct_conv", "always"};
    CHECK_ERROR(m->api.configure(m->ctx, &bad, 1, NULL, NULL), PL_CODE_INVALID_ARGUMENT,
                "direct_conv");
    pl_runtime_destroy(rt);
}

/* ---- the module's own pooling (onednn_pool.c) ------------------------------
 *
 * Each window the kernel takes, against the cpu module, on the layouts it
 * reads: a convolution's channel-blocked result (a batch of 2, 12 channels
 * in a padded block of 16 lanes), a graph input's channels-last view (an
 * NHWC input transposed), and 1-D. Windows: the ResNet stem's 3x3 stride 2
 * with pads, 2x2 ceil_mode on odd sizes (windows past the border), a
 * count_include_pad average, a dilated max with asymmetric pads, a 9x9
 * average (the one-window-at-a-time path) and both global pools. Where
 * the module reports direct_conv in use (AVX2 below AVX-512) the debug log
 * must name its own pooling for node 'pool'; with direct_conv = no never. */
struct pool_variant {
    const char *name;
    int nd;
    int64_t xs[4];
    int conv;           /* a 3x3 convolution of CONV channels out first (padded, stride 1) */
    int nhwc;           /* X is NHWC, transposed to NCHW before the pool */
    const char *op, *attrs;
    int64_t ys[4];
};

static const struct pool_variant pool_variants[] = {
    {"stem_max", 4, {2, 8, 17, 15}, 16, 0, "MaxPool",
     "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[2,2]},\"pads\":{\"ints\":[1,1,1,1]}",
     {2, 16, 9, 8}},
    {"ceil_avg", 4, {1, 8, 13, 11}, 16, 0, "AveragePool",
     "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]},\"ceil_mode\":{\"int\":1}",
     {1, 16, 7, 6}},
    {"include_pad_avg", 4, {1, 8, 10, 12}, 12, 0, "AveragePool",
     "\"kernel_shape\":{\"ints\":[3,3]},\"pads\":{\"ints\":[1,1,1,1]},"
     "\"count_include_pad\":{\"int\":1}",
     {1, 12, 10, 12}},
    {"dilated_max", 4, {1, 8, 11, 14}, 24, 0, "MaxPool",
     "\"kernel_shape\":{\"ints\":[2,3]},\"dilations\":{\"ints\":[2,2]},"
     "\"pads\":{\"ints\":[1,0,0,2]}",
     {1, 24, 10, 12}},
    {"wide_avg", 4, {1, 8, 12, 12}, 16, 0, "AveragePool", "\"kernel_shape\":{\"ints\":[9,9]}",
     {1, 16, 4, 4}},
    {"global_avg", 4, {2, 8, 7, 9}, 12, 0, "GlobalAveragePool", "", {2, 12, 1, 1}},
    {"global_max", 4, {1, 8, 6, 5}, 16, 0, "GlobalMaxPool", "", {1, 16, 1, 1}},
    {"nhwc_max", 4, {1, 10, 11, 16}, 0, 1, "MaxPool",
     "\"kernel_shape\":{\"ints\":[3,3]},\"strides\":{\"ints\":[2,2]},\"ceil_mode\":{\"int\":1}",
     {1, 16, 5, 5}},
    {"conv1d_max", 3, {2, 8, 21}, 16, 0, "MaxPool",
     "\"kernel_shape\":{\"ints\":[3]},\"strides\":{\"ints\":[2]},\"pads\":{\"ints\":[1,1]}",
     {2, 16, 11}},
};

static const char *model_pool(const struct pool_variant *pv)
{
    struct mb m = {.seed = 53};
    mb_input(&m, "x", pv->nd, pv->xs);
    const char *src = "\"x\"";
    if (pv->conv) {
        int64_t ws[4] = {pv->conv, pv->xs[1], 3, 3};
        mb_const(&m, "w", pv->nd, ws, NULL, 0.3f);
        mb_node(&m, "conv", "Conv", "\"x\",\"w\"", "c",
                pv->nd == 4 ? "\"pads\":{\"ints\":[1,1,1,1]}" : "\"pads\":{\"ints\":[1,1]}");
        src = "\"c\"";
    } else if (pv->nhwc) {
        mb_node(&m, "to_nchw", "Transpose", "\"x\"", "t", "\"perm\":{\"ints\":[0,3,1,2]}");
        src = "\"t\"";
    }
    mb_node(&m, "pool", pv->op, src, "y", pv->attrs);
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_own_pool(void)
{
    for (size_t k = 0; k < sizeof pool_variants / sizeof pool_variants[0]; k++) {
        const struct pool_variant *pv = &pool_variants[k];
        const char *path = model_pool(pv);
        int64_t xs[4], ys[4];
        memcpy(xs, pv->xs, sizeof xs);
        memcpy(ys, pv->ys, sizeof ys);
        compare(path, pv->nd, xs, pv->nd, ys, (const char *[]){"pool", NULL});
        static struct wino_log logs[2];
        char used[96] = "";
        kernel_logs(path, NULL, logs, used);
        char want[96];
        snprintf(want, sizeof want, "node 'pool': the module's own %s pooling",
                 strstr(pv->op, "Max") != NULL ? "max" : "average");
        if (strcmp(used, "auto") == 0)
            TH_CHECK(strstr(logs[0].text, want) != NULL, "%s: no '%s' in the log:\n%s", pv->name,
                     want, logs[0].text);
        else
            TH_CHECK(strstr(used, "not used") != NULL, "%s: direct_conv reported as '%s'",
                     pv->name, used);
        TH_CHECK(strstr(logs[1].text, "own max pooling") == NULL &&
                     strstr(logs[1].text, "own average pooling") == NULL,
                 "%s: direct_conv = no used the module's pooling; log:\n%s", pv->name,
                 logs[1].text);
    }
}

/* ---- the module's own Resize (onednn_resize.c) -------------------------------
 *
 * Modes oneDNN's resampling does not map, between two convolutions (a
 * channel-blocked source and destination; 12 channels: a padded block; a
 * batch of 2): nearest at a fractional factor with tf_half_pixel_for_nn
 * and ceil, linear with align_corners and asymmetric (TensorFlow's),
 * cubic with cubic_coeff_a -0.5 and exclude_outside, a downsampling, and a
 * last one written straight to the plain graph output. Each agrees with
 * the cpu module, and the debug log names the module's own Resize for
 * each where the module reports its own kernels in use. */
struct resize_variant {
    const char *name, *attrs;
    int64_t oh, ow;
};

static const struct resize_variant resize_variants[] = {
    {"nearest_tf", "\"mode\":{\"string\":\"nearest\"},\"coordinate_transformation_mode\":"
                   "{\"string\":\"tf_half_pixel_for_nn\"},\"nearest_mode\":{\"string\":\"ceil\"}",
     11, 8},
    {"linear_corners", "\"mode\":{\"string\":\"linear\"},\"coordinate_transformation_mode\":"
                       "{\"string\":\"align_corners\"}",
     13, 17},
    {"linear_asym", "\"mode\":{\"string\":\"linear\"},\"coordinate_transformation_mode\":"
                    "{\"string\":\"asymmetric\"}",
     14, 10},
    {"cubic_excl", "\"mode\":{\"string\":\"cubic\"},\"cubic_coeff_a\":{\"float\":-0.5},"
                   "\"exclude_outside\":{\"int\":1}",
     12, 15},
    {"linear_down", "\"mode\":{\"string\":\"linear\"}", 4, 3},
};

static void case_own_resize(void)
{
    int64_t xs[] = {2, 8, 7, 6};
    for (size_t k = 0; k < sizeof resize_variants / sizeof resize_variants[0]; k++) {
        const struct resize_variant *rv = &resize_variants[k];
        for (int plain = 0; plain < 2; plain++) {
            struct mb m = {.seed = 61};
            mb_input(&m, "x", 4, xs);
            mb_conv(&m, "c", "x", "a", 8, 12, 3, 1, 1);
            mb_const(&m, "roi", 1, (int64_t[]){0}, NULL, 1);
            mb_shape(&m, "sz", 4, (int64_t[]){2, 12, rv->oh, rv->ow});
            mb_node(&m, "rs", "Resize", "\"a\",\"roi\",\"\",\"sz\"", plain ? "y" : "r", rv->attrs);
            if (!plain)
                mb_conv(&m, "c2", "r", "y", 12, 8, 3, 1, 1);
            m.outputs[m.n_outputs++] = "y";
            const char *path = mb_write(&m);
            int64_t ys[] = {2, plain ? 12 : 8, rv->oh, rv->ow};
            static struct wino_log logs[2];
            char used[96] = "", want[96];
            kernel_logs(path, NULL, logs, used);
            /* with AVX-512 the module's own kernels stand aside (direct_conv
             * reports why) and oneDNN's resampling takes only its mappings */
            compare(path, 4, xs, 4, ys,
                    strcmp(used, "auto") == 0 ? (const char *[]){"c", "rs", NULL}
                                              : (const char *[]){"c", NULL});
            snprintf(want, sizeof want, "node 'rs': the module's own Resize (%s%s)",
                     rv->name[0] == 'n' ? "nearest" : rv->name[0] == 'l' ? "linear" : "cubic",
                     plain ? ", written plain" : "");
            if (strcmp(used, "auto") == 0)
                TH_CHECK(strstr(logs[0].text, want) != NULL, "%s: no '%s' in the log:\n%s",
                         rv->name, want, logs[0].text);
        }
    }
}

/* A GlobalAveragePool of a large window (192x192, after a convolution, so
 * on a blocked source) is pooled in two stages: oneDNN's average pooling
 * adds a window's values one after the other, and a mean of 36864 values
 * near 3 came out about 1e-4 off that way (ppocr6_det's squeeze-and-
 * excitation blocks); in blocks of 12x12 and then 16x16 it agrees with the
 * cpu module within 2e-6. */
static void case_global_avg_two_stage(void)
{
    struct mb m = {.seed = 79};
    int64_t xs[] = {1, 8, 192, 192}, ys[] = {1, 16, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c", "x", "a", 8, 16, 1, 1, 1);
    mb_const(&m, "three", 0, NULL, (const float[]){3.0f}, 1.0f);
    mb_node(&m, "shift", "Add", "\"a\",\"three\"", "b", "");
    mb_node(&m, "gap", "GlobalAveragePool", "\"b\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    size_t nx = count(4, xs);
    float *x = malloc(nx * sizeof *x), y1[16], y2[16];
    TH_CHECK(x != NULL, "out of memory");
    uint32_t seed = 5;
    for (size_t i = 0; i < nx; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (float)(seed >> 8) / 16777216.0f;
    }
    pl_runtime *rd = onednn_runtime(), *rc = runtime_with("cpu");
    pl_session *sd = session_for(rd, path), *sc = session_for(rc, path);
    json_t *root = th_explain(sd);
    const char *backend =
        json_string_value(json_object_get(th_placement_of(root, "gap"), "backend"));
    TH_CHECK(backend != NULL && strcmp(backend, "onednn") == 0, "gap ran on %s", backend);
    json_decref(root);
    run_one(sd, "x", x, 4, xs, "y", y1, 4, ys);
    run_one(sc, "x", x, 4, xs, "y", y2, 4, ys);
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    /* below AVX-512 the module's own pooling takes it (odnn_pool_own) */
    int own = strcmp(used, "auto") == 0;
    float tol = own ? 1e-5f : 2e-6f;
    for (int c = 0; c < 16; c++)
        TH_CHECK(fabsf(y1[c] - y2[c]) <= tol * fabsf(y2[c]), "channel %d: %.9g on onednn, "
                 "%.9g on cpu", c, (double)y1[c], (double)y2[c]);
    TH_CHECK(own || strstr(logs[0].text, "GlobalAveragePool of 192x192 as 12x12 blocks") != NULL,
             "no two-stage pooling in the log:\n%s", logs[0].text);
    pl_session_destroy(sd);
    pl_session_destroy(sc);
    pl_runtime_destroy(rd);
    pl_runtime_destroy(rc);
    free(x);
}

/* One set of convolution weights applied twice (RetinaNet's heads apply
 * theirs to each pyramid level): the second layer reads the first one's
 * laid-out weights, and the result agrees with the cpu module. */
static void case_shared_weights(void)
{
    struct mb m = {.seed = 83};
    int64_t xs[] = {1, 16, 12, 12};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "c1", "x", "a", 16, 16, 3, 1, 1);
    mb_node(&m, "r", "Relu", "\"a\"", "ar", "");
    mb_node(&m, "c2", "Conv", "\"ar\",\"c1_w\",\"c1_b\"", "y",
            "\"pads\":{\"ints\":[1,1,1,1]},\"strides\":{\"ints\":[1,1]},\"group\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, xs, (const char *[]){"c1", "c2", NULL});
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    /* the module's own direct kernel packs weights per layer (below
     * AVX-512); with `direct_conv = no` oneDNN's layout is shared */
    TH_CHECK(strstr(logs[1].text, "node 'c2': its weights are an earlier layer's, shared") !=
                 NULL,
             "c2's weights not shared:\n%s", logs[1].text);
}

/* Tanh on the module's own kernel (odnn_tanh_run) where its own kernels
 * run: after a convolution (not fused into it: a channel-blocked value of
 * 12 channels, its padding kept zero for the next convolution) and on a
 * graph input's plain values from -12 to 12 (both halves of the kernel:
 * the series below 1/2, the exponential above), against the cpu module. */
static void case_own_tanh(void)
{
    struct mb m = {.seed = 67};
    int64_t xs[] = {2, 8, 9, 7};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "k", 0, NULL, (const float[]){12.0f}, 1.0f);
    mb_node(&m, "scale", "Mul", "\"x\",\"k\"", "xk", "");
    mb_node(&m, "t0", "Tanh", "\"xk\"", "a", "");
    mb_conv(&m, "c", "a", "b", 8, 12, 3, 1, 1);
    mb_node(&m, "t1", "Tanh", "\"b\"", "d", "");
    mb_conv(&m, "c2", "d", "y", 12, 8, 3, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, xs, (const char *[]){"t0", "c", "t1", "c2", NULL});
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    if (strcmp(used, "auto") == 0)
        TH_CHECK(strstr(logs[0].text, "node 't0': the module's own Tanh") != NULL &&
                     strstr(logs[0].text, "node 't1': the module's own Tanh") != NULL,
                 "own Tanh not in the log:\n%s", logs[0].text);
    TH_CHECK(strstr(logs[1].text, "own Tanh") == NULL, "direct_conv = no used the own Tanh");
}

/* Patterns real exporters write where oneDNN 2.6 had only its reference
 * kernels, each against the cpu module, and no reference kernel runs:
 * - YOLOv8's bottleneck, a 3x3 convolution then SiLU then the residual
 *   Add (jit:avx2 takes no swish followed by sum: 40 ms as ref:any);
 * - its distribution head's Softmax over axis 1 of [1, 16, 4, N], read
 *   through a Transpose (row-major, the axis not last: ref:any, 20 ms);
 * - PP-OCR's detector head, a ConvTranspose to one channel and its bias
 *   (a binary of a blocked one-channel source: ref:any, 21 ms);
 * - a QDQ pair after a MaxPool of a plain source (simple_nchw:any). */
static void case_no_ref_kernels(void)
{
    int saved;
    const char *vpath = verbose_begin(&saved);
    struct mb m = {.seed = 73};
    int64_t xs[] = {1, 32, 20, 20};
    mb_input(&m, "x", 4, xs);
    mb_conv(&m, "cv1", "x", "c1", 32, 32, 1, 1, 1);
    mb_node(&m, "sig1", "Sigmoid", "\"c1\"", "g1", "");
    mb_node(&m, "silu1", "Mul", "\"c1\",\"g1\"", "a1", "");
    mb_node(&m, "split", "Split", "\"a1\"", "s0\",\"s1", "\"axis\":{\"int\":1}");
    mb_conv(&m, "cv2", "s1", "c2", 16, 16, 3, 1, 1);
    mb_node(&m, "sig2", "Sigmoid", "\"c2\"", "g2", "");
    mb_node(&m, "silu2", "Mul", "\"c2\",\"g2\"", "a2", "");
    mb_node(&m, "res", "Add", "\"s1\",\"a2\"", "r", "");
    mb_node(&m, "cat", "Concat", "\"s0\",\"r\"", "k", "\"axis\":{\"int\":1}");
    mb_conv(&m, "cv3", "k", "y", 32, 8, 1, 1, 1);
    m.outputs[m.n_outputs++] = "y";
    int64_t ys[] = {1, 8, 20, 20};
    compare(mb_write(&m), 4, xs, 4, ys, (const char *[]){"cv2", "res", NULL});

    struct mb m2 = {.seed = 79};
    int64_t xs2[] = {1, 64, 40};
    mb_input(&m2, "x", 3, xs2);
    mb_shape(&m2, "bins", 4, (int64_t[]){1, 4, 16, 40});
    mb_node(&m2, "rs", "Reshape", "\"x\",\"bins\"", "b4", "");
    mb_node(&m2, "tr", "Transpose", "\"b4\"", "t", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(&m2, "sm", "Softmax", "\"t\"", "y", "\"axis\":{\"int\":1}");
    m2.outputs[m2.n_outputs++] = "y";
    int64_t ys2[] = {1, 16, 4, 40};
    compare(mb_write(&m2), 3, xs2, 4, ys2, (const char *[]){"sm", NULL});

    struct mb m3 = {.seed = 83};
    int64_t xs3[] = {1, 8, 20, 28};
    mb_input(&m3, "x", 4, xs3);
    mb_conv(&m3, "c", "x", "a", 8, 8, 3, 1, 1);
    mb_const(&m3, "wt", 4, (int64_t[]){8, 1, 2, 2}, NULL, 0.3f);
    mb_const(&m3, "bt", 1, (int64_t[]){1}, NULL, 0.5f);
    mb_node(&m3, "up", "ConvTranspose", "\"a\",\"wt\",\"bt\"", "y",
            "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}");
    m3.outputs[m3.n_outputs++] = "y";
    int64_t ys3[] = {1, 1, 40, 56};
    compare(mb_write(&m3), 4, xs3, 4, ys3, (const char *[]){"up", NULL});

    /* a QDQ pair after a max pooling of a plain source (PP-OCR's
     * classifier in QDQ form): as post-ops oneDNN took them only in
     * simple_nchw:any, a C++ loop, 0.9 ms for these 19200 values */
    struct mb m4 = {.seed = 89};
    int64_t xs4[] = {1, 200, 2, 96};
    mb_input(&m4, "x", 4, xs4);
    mb_scalar(&m4, "qs", 0.05f);
    mb_node(&m4, "mp", "MaxPool", "\"x\"", "p",
            "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}");
    mb_node(&m4, "q", "QuantizeLinear", "\"p\",\"qs\"", "pq", "");
    mb_node(&m4, "dq", "DequantizeLinear", "\"pq\",\"qs\"", "y", "");
    m4.outputs[m4.n_outputs++] = "y";
    int64_t ys4[] = {1, 200, 1, 48};
    compare(mb_write(&m4), 4, xs4, 4, ys4, (const char *[]){"mp", NULL});

    FILE *f = verbose_end(saved, vpath);
    char line[2048];
    int runs = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "onednn_verbose,exec,", 20) != 0)
            continue;
        runs++;
        TH_CHECK(strstr(line, ",ref:any,") == NULL && strstr(line, ",ref,") == NULL &&
                     strstr(line, ",simple_nchw:any,") == NULL,
                 "a reference kernel ran: %s", line);
    }
    fclose(f);
    TH_CHECK(runs > 0, "ONEDNN_VERBOSE printed no execution");
}

/* Small products on the module's own kernel (onednn_smm.c) where its own
 * kernels run, against the cpu module:
 * - attention of 3 heads of 8 over 5 positions: Q, K and V products by
 *   constants (rows of the batch merged), Q x K^T with K^T a transposed
 *   view packed per head, a scale after it (a linear post-op), P x V read
 *   in place, written in the heads-merged layout, then an output product
 *   with a bias, a leaky ReLU and a residual Add (the sum post-op);
 * - Gemm with transB, alpha, beta and a bias C, then a Sigmoid (an
 *   activation in the epilogue), then Gemm with transA;
 * - a product whose batches broadcast both ways ([1, 3] by [3, 1]) by a
 *   B of 21 columns read in place (the last 5 through a mask).
 * The debug log names the own kernel for each product, and never under
 * direct_conv = no. */
static const char *model_own_matmul(int which)
{
    struct mb m = {.seed = 71};
    if (which == 0) {
        mb_input(&m, "x", 3, (int64_t[]){2, 5, 24});
        const char *wn[] = {"wq", "wk", "wv"};
        for (int i = 0; i < 3; i++)
            mb_const(&m, wn[i], 2, (int64_t[]){24, 24}, NULL, 0.3f);
        mb_const(&m, "wo", 2, (int64_t[]){24, 20}, NULL, 0.3f);
        mb_const(&m, "bo", 1, (int64_t[]){20}, NULL, 0.1f);
        mb_const(&m, "wr", 2, (int64_t[]){24, 20}, NULL, 0.3f);
        mb_scalar(&m, "scale", 0.35f);
        mb_shape(&m, "heads", 4, (int64_t[]){2, 5, 3, 8});
        mb_shape(&m, "merged", 3, (int64_t[]){2, 5, 24});
        mb_node(&m, "q", "MatMul", "\"x\",\"wq\"", "q", "");
        mb_node(&m, "k", "MatMul", "\"x\",\"wk\"", "k", "");
        mb_node(&m, "v", "MatMul", "\"x\",\"wv\"", "v", "");
        mb_heads(&m);
        mb_node(&m, "res", "MatMul", "\"x\",\"wr\"", "xr", "");
        mb_node(&m, "proj", "MatMul", "\"om\",\"wo\"", "pr", "");
        mb_node(&m, "proj_bias", "Add", "\"pr\",\"bo\"", "pb", "");
        mb_node(&m, "leaky", "LeakyRelu", "\"pb\"", "pl", "\"alpha\":{\"float\":0.1}");
        mb_node(&m, "residual", "Add", "\"pl\",\"xr\"", "y", "");
    } else if (which == 1) {
        mb_input(&m, "x", 2, (int64_t[]){6, 9});
        mb_const(&m, "w", 2, (int64_t[]){7, 9}, NULL, 0.3f);
        mb_const(&m, "c", 1, (int64_t[]){7}, NULL, 0.2f);
        mb_const(&m, "w2", 2, (int64_t[]){6, 5}, NULL, 0.3f);
        mb_node(&m, "g1", "Gemm", "\"x\",\"w\",\"c\"", "g",
                "\"transB\":{\"int\":1},\"alpha\":{\"float\":0.5},\"beta\":{\"float\":2.0}");
        mb_node(&m, "sig", "Sigmoid", "\"g\"", "sg", "");
        mb_node(&m, "g2", "Gemm", "\"sg\",\"w2\"", "y", "\"transA\":{\"int\":1}");
    } else {
        mb_input(&m, "x", 4, (int64_t[]){3, 1, 4, 6});
        mb_const(&m, "wu", 2, (int64_t[]){6, 21}, NULL, 0.3f);
        mb_shape(&m, "swap", 4, (int64_t[]){1, 3, 4, 6});
        mb_node(&m, "u", "MatMul", "\"x\",\"wu\"", "u", "");
        mb_node(&m, "rx", "Reshape", "\"x\",\"swap\"", "xs", "");
        mb_node(&m, "tx", "Transpose", "\"xs\"", "xt", "\"perm\":{\"ints\":[0,1,3,2]}");
        mb_node(&m, "bc", "MatMul", "\"xt\",\"u\"", "y", "");
    }
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_own_matmul(void)
{
    static const char *const nodes[3][8] = {{"q", "k", "v", "qk", "pv", "res", "proj", NULL},
                                            {"g1", "g2", NULL},
                                            {"u", "bc", NULL}};
    int64_t xs[3][4] = {{2, 5, 24}, {6, 9}, {3, 1, 4, 6}};
    int64_t ys[3][4] = {{2, 5, 20}, {7, 5}, {3, 3, 6, 21}};
    int nd[3] = {3, 2, 4};
    for (int w = 0; w < 3; w++) {
        const char *path = model_own_matmul(w);
        compare(path, nd[w], xs[w], nd[w], ys[w], (const char *const *)nodes[w]);
        static struct wino_log logs[2];
        char used[96] = "";
        kernel_logs(path, NULL, logs, used);
        for (int k = 0; nodes[w][k] != NULL; k++) {
            char want[96];
            snprintf(want, sizeof want, "node '%s': the module's own small product",
                     nodes[w][k]);
            if (strcmp(used, "auto") == 0)
                TH_CHECK(strstr(logs[0].text, want) != NULL, "no '%s' in the log:\n%s", want,
                         logs[0].text);
        }
        TH_CHECK(strstr(logs[1].text, "own small product") == NULL,
                 "direct_conv = no used the own small product; log:\n%s", logs[1].text);
    }
}

/* Binaries whose broadcast oneDNN 2.6 runs only on its reference kernel,
 * as jax2onnx writes rotary embeddings over [B, S, H, D]: x [2, 5, 3, 8]
 * by constants [1, 5, 1, 8] (Mul; Sub with the constant first; Div; Max),
 * Relu between so that nothing folds. All on onednn (the module's own
 * broadcast loop, ODNN_S_BBIN, where oneDNN's kernel would be the
 * reference one: before, each was refused and cut the subgraph), the
 * values the cpu module's. */
static const char *model_own_broadcast(void)
{
    struct mb m = {.seed = 61};
    mb_input(&m, "x", 4, (int64_t[]){2, 5, 3, 8});
    const char *cn[] = {"cosv", "sinv", "den", "low"};
    for (int i = 0; i < 4; i++)
        mb_const(&m, cn[i], 4, (int64_t[]){1, 5, 1, 8}, NULL, i == 2 ? 0.5f : 1.0f);
    mb_node(&m, "relu", "Relu", "\"x\"", "r", "");
    mb_node(&m, "mul", "Mul", "\"r\",\"cosv\"", "a", "");
    mb_node(&m, "sub", "Sub", "\"sinv\",\"a\"", "b", "");
    mb_node(&m, "div", "Div", "\"b\",\"den\"", "c", "");
    mb_node(&m, "max", "Max", "\"c\",\"low\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_own_broadcast(void)
{
    const char *path = model_own_broadcast();
    int64_t xs[] = {2, 5, 3, 8};
    compare(path, 4, xs, 4, xs, (const char *[]){"relu", "mul", "sub", "div", "max", NULL});
    struct blob b = compile_blob(path);
    uint32_t total;
    int own = count_steps(&b, TEST_ODNN_S_BBIN, &total);
    printf("%d of %u steps on the own broadcast loop\n", own, total);
    TH_CHECK(own <= 4, "%d own broadcast steps for 4 binaries", own);
    free(b.bytes);
}

/* Swin V2's cosine attention logits: normalised queries by normalised keys,
 * both read through the head-split Transposes (strides oneDNN's brgemm
 * matmul does not take: it ran them on gemm:jit, whose first use in a
 * process makes its whole driver, 11-24 ms of the first run), 8 heads of
 * 49 x 16 by 16 x 49, then a scale (its epilogue) and no softmax, so that
 * no fused attention takes it. With AVX-512 or without, the debug log names the own
 * small product for it (and never under direct_conv = no); the values are
 * the cpu module's. */
static const char *model_strided_small_product(void)
{
    struct mb m = {.seed = 29};
    mb_input(&m, "x", 4, (int64_t[]){1, 49, 8, 16});
    mb_scalar(&m, "s", 0.5f);
    mb_node(&m, "qs", "Mul", "\"x\",\"s\"", "q", "");
    mb_node(&m, "ks", "Sigmoid", "\"x\"", "k", "");
    mb_node(&m, "tq", "Transpose", "\"q\"", "qt", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(&m, "tk", "Transpose", "\"k\"", "kt", "\"perm\":{\"ints\":[0,2,3,1]}");
    mb_node(&m, "qk", "MatMul", "\"qt\",\"kt\"", "l", "");
    mb_node(&m, "scale", "Mul", "\"l\",\"s\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_strided_small_product(void)
{
    const char *path = model_strided_small_product();
    int64_t xs[] = {1, 49, 8, 16}, ys[] = {1, 8, 49, 49};
    compare(path, 4, xs, 4, ys, (const char *[]){"qs", "ks", "tq", "tk", "qk", "scale", NULL});
    static struct wino_log logs[2];
    char used[96] = "";
    kernel_logs(path, NULL, logs, used);
    TH_CHECK(strstr(logs[0].text, "node 'qk': the module's own small product") != NULL,
             "the strided product is not the own small product; log:\n%s", logs[0].text);
    TH_CHECK(strstr(logs[1].text, "own small product") == NULL,
             "direct_conv = no used the own small product; log:\n%s", logs[1].text);
}

/* Attention on the module's own fused kernel (onednn_attn.c), against the
 * cpu module:
 * - 0: BERT's form, 2 x 4 heads of 12 over 37 positions (12 and 37 not
 *   multiples of 16: a key panel and value lanes partly used), Div by a
 *   scalar, a mask computed in the graph ([2, 1, 1, 37], broadcast over
 *   heads and queries; the Add's first input), heads split and merged by
 *   views;
 * - 1: Whisper's form, 3 batched heads of 200 queries (three blocks, the
 *   last of 8 rows), K^T a Transpose, Mul by a scalar, values 70 wide
 *   (two column chunks, the second of 6 lanes), a constant causal mask of
 *   -inf ([1, 200, 200], copied into a weight), the result a graph output;
 * - 2: as 1 with the softmax over the queries (axis 1), which is not
 *   attention's and must not fuse;
 * - 3: as 1 at opset 11 with axis 2, which is;
 * - 4: GPT-2's form: as 1 with Div, and the causal mask a constant bool
 *   condition of Where(c, scores, -3.4e38) instead of an Add;
 * - 5: DistilBERT's: as 0 with the mask as Where(c, -inf, scores), the
 *   condition computed from the input (ReduceMean, Greater, Reshape to
 *   [2, 1, 1, 37]) and read by the products' subgraph as its input;
 * - 6: BART's and OPT's: products over [6] heads (2 x 3 merged), the
 *   scores Reshaped to [2, 3, 20, 20] for a mask [2, 1, 1, 20] and a Max
 *   by -1.5 (OPT's floor; here it bites), then back to [6, 20, 20];
 * - 7: BLOOM's and Swin's: as 6 with a bias [6, 1, 20] (ALiBi, computed)
 *   added before the Reshape, Where(c, -1e4, scores) after it (c
 *   constant, [1, 1, 20, 20]), no Max, and the Reshape back after the
 *   Softmax.
 * Q, K, V (and 0's mask) are products of one projection of the input, so
 * that the core makes the model one subgraph. With AVX-512 the debug log
 * names the fused kernel for each but 2. */
static const char *model_fused_attention(int which)
{
    struct mb m = {.seed = 83 + which};
    if (which == 0 || which == 5) {
        mb_input(&m, "x", 3, (int64_t[]){2, 37, 48});
        const char *wn[] = {"wx", "wq", "wk", "wv"};
        for (int i = 0; i < 4; i++)
            mb_const(&m, wn[i], 2, (int64_t[]){48, 48}, NULL, 0.3f);
        mb_const(&m, "wm", 2, (int64_t[]){48, 1}, NULL, 0.5f);
        mb_scalar(&m, "scale", 3.4641016f);
        mb_scalar(&m, "big", -30.0f);
        mb_shape(&m, "heads", 4, (int64_t[]){2, 37, 4, 12});
        mb_shape(&m, "merged", 3, (int64_t[]){2, 37, 48});
        mb_shape(&m, "mshape", 4, (int64_t[]){2, 1, 1, 37});
        mb_node(&m, "in", "MatMul", "\"x\",\"wx\"", "h", "");
        mb_node(&m, "q", "MatMul", "\"h\",\"wq\"", "q", "");
        mb_node(&m, "k", "MatMul", "\"h\",\"wk\"", "k", "");
        mb_node(&m, "v", "MatMul", "\"h\",\"wv\"", "v", "");
        if (which == 0) {
            mb_node(&m, "mk", "MatMul", "\"h\",\"wm\"", "mk", "");
            mb_node(&m, "mt", "Transpose", "\"mk\"", "mt", "\"perm\":{\"ints\":[0,2,1]}");
            mb_node(&m, "mr", "Reshape", "\"mt\",\"mshape\"", "mr", "");
            mb_node(&m, "mrelu", "Relu", "\"mr\"", "mp", "");
            mb_node(&m, "mbig", "Mul", "\"mp\",\"big\"", "mask", "");
        }
        mb_node(&m, "rq", "Reshape", "\"q\",\"heads\"", "q4", "");
        mb_node(&m, "rk", "Reshape", "\"k\",\"heads\"", "k4", "");
        mb_node(&m, "rv", "Reshape", "\"v\",\"heads\"", "v4", "");
        mb_node(&m, "tq", "Transpose", "\"q4\"", "qt", "\"perm\":{\"ints\":[0,2,1,3]}");
        mb_node(&m, "tk", "Transpose", "\"k4\"", "kt", "\"perm\":{\"ints\":[0,2,3,1]}");
        mb_node(&m, "tv", "Transpose", "\"v4\"", "vt", "\"perm\":{\"ints\":[0,2,1,3]}");
        mb_node(&m, "qk", "MatMul", "\"qt\",\"kt\"", "s", "");
        mb_node(&m, "scaled", "Div", "\"s\",\"scale\"", "s2", "");
        if (which == 5) { /* from the input, outside the products' subgraph */
            mb_scalar(&m, "zero", 0.0f);
            mb_scalar(&m, "ninf", -INFINITY);
            mb_node(&m, "xm", "ReduceMean", "\"x\"", "xm",
                    "\"axes\":{\"ints\":[2]},\"keepdims\":{\"int\":0}");
            mb_node(&m, "gt", "Greater", "\"xm\",\"zero\"", "c2", "");
            mb_node(&m, "cr", "Reshape", "\"c2\",\"mshape\"", "cond", "");
            mb_node(&m, "masked", "Where", "\"cond\",\"ninf\",\"s2\"", "s3", "");
        } else {
            mb_node(&m, "masked", "Add", "\"mask\",\"s2\"", "s3", "");
        }
        mb_node(&m, "sm", "Softmax", "\"s3\"", "p", "\"axis\":{\"int\":-1}");
        mb_node(&m, "pv", "MatMul", "\"p\",\"vt\"", "o", "");
        mb_node(&m, "to", "Transpose", "\"o\"", "ot", "\"perm\":{\"ints\":[0,2,1,3]}");
        mb_node(&m, "ro", "Reshape", "\"ot\",\"merged\"", "y", "");
    } else if (which >= 6) {
        mb_input(&m, "x", 3, (int64_t[]){6, 20, 16});
        mb_const(&m, "wx", 2, (int64_t[]){16, 16}, NULL, 0.3f);
        mb_const(&m, "wq", 2, (int64_t[]){16, 16}, NULL, 0.5f);
        mb_const(&m, "wk", 2, (int64_t[]){16, 16}, NULL, 0.5f);
        mb_const(&m, "wv", 2, (int64_t[]){16, 24}, NULL, 0.3f);
        mb_const(&m, "mask", 4, (int64_t[]){2, 1, 1, 20}, NULL, 2.0f);
        mb_scalar(&m, "scale", 0.25f);
        mb_scalar(&m, "floor", -1.5f);
        mb_shape(&m, "split", 4, (int64_t[]){2, 3, 20, 20});
        mb_shape(&m, "merge", 3, (int64_t[]){6, 20, 20});
        mb_node(&m, "in", "MatMul", "\"x\",\"wx\"", "h", "");
        mb_node(&m, "q", "MatMul", "\"h\",\"wq\"", "q", "");
        mb_node(&m, "k", "MatMul", "\"h\",\"wk\"", "k", "");
        mb_node(&m, "v", "MatMul", "\"h\",\"wv\"", "v", "");
        mb_node(&m, "tk", "Transpose", "\"k\"", "kt", "\"perm\":{\"ints\":[0,2,1]}");
        mb_node(&m, "qk", "MatMul", "\"q\",\"kt\"", "s", "");
        mb_node(&m, "scaled", "Mul", "\"s\",\"scale\"", "s2", "");
        if (which == 7) { /* ALiBi-like: per head and key, from the input */
            mb_const(&m, "wb", 2, (int64_t[]){16, 20}, NULL, 0.3f);
            mb_node(&m, "xb", "ReduceMean", "\"x\"", "xb",
                    "\"axes\":{\"ints\":[1]},\"keepdims\":{\"int\":1}");
            mb_node(&m, "bias", "MatMul", "\"xb\",\"wb\"", "alibi", "");
            mb_node(&m, "biased", "Add", "\"s2\",\"alibi\"", "s2b", "");
            uint8_t keep[400];
            for (int i = 0; i < 400; i++)
                keep[i] = (i * 7 + i / 20) % 5 != 0 || i % 20 == 0;
            mb_raw(&m, "keep", "bool", 4, (int64_t[]){1, 1, 20, 20}, keep, sizeof keep);
            mb_scalar(&m, "low", -1e4f);
        }
        mb_node(&m, "r1", "Reshape", which == 7 ? "\"s2b\",\"split\"" : "\"s2\",\"split\"",
                "s4", "");
        if (which == 6) {
            mb_node(&m, "masked", "Add", "\"s4\",\"mask\"", "s5", "");
            mb_node(&m, "floored", "Max", "\"s5\",\"floor\"", "s6", "");
            mb_node(&m, "r2", "Reshape", "\"s6\",\"merge\"", "s3", "");
            mb_node(&m, "sm", "Softmax", "\"s3\"", "p", "\"axis\":{\"int\":-1}");
        } else {
            mb_node(&m, "masked", "Where", "\"keep\",\"s4\",\"low\"", "s5", "");
            mb_node(&m, "sm", "Softmax", "\"s5\"", "p4", "\"axis\":{\"int\":-1}");
            mb_node(&m, "r2", "Reshape", "\"p4\",\"merge\"", "p", "");
        }
        mb_node(&m, "pv", "MatMul", "\"p\",\"v\"", "y", "");
    } else {
        const int64_t s = 200;
        float *causal = malloc((size_t)(s * s) * sizeof *causal);
        TH_CHECK(causal != NULL, "out of memory");
        for (int64_t i = 0; i < s; i++)
            for (int64_t j = 0; j < s; j++)
                causal[i * s + j] = j <= i ? 0.0f : -INFINITY;
        m.opset = which == 3 ? 11 : 13;
        mb_input(&m, "x", 3, (int64_t[]){3, s, 32});
        mb_const(&m, "wx", 2, (int64_t[]){32, 32}, NULL, 0.3f);
        mb_const(&m, "wq", 2, (int64_t[]){32, 64}, NULL, 0.3f);
        mb_const(&m, "wk", 2, (int64_t[]){32, 64}, NULL, 0.3f);
        mb_const(&m, "wv", 2, (int64_t[]){32, 70}, NULL, 0.3f);
        mb_const(&m, "causal", 3, (int64_t[]){1, s, s}, causal, 1.0f);
        free(causal);
        mb_scalar(&m, "scale", which == 4 ? 8.0f : 0.125f);
        if (which == 4) {
            uint8_t *tri = malloc((size_t)(s * s));
            TH_CHECK(tri != NULL, "out of memory");
            for (int64_t i = 0; i < s * s; i++)
                tri[i] = i % s <= i / s;
            mb_raw(&m, "tri", "bool", 3, (int64_t[]){1, s, s}, tri, (size_t)(s * s));
            free(tri);
            mb_scalar(&m, "lowest", -3.4028235e38f);
        }
        mb_node(&m, "in", "MatMul", "\"x\",\"wx\"", "h", "");
        mb_node(&m, "q", "MatMul", "\"h\",\"wq\"", "q", "");
        mb_node(&m, "k", "MatMul", "\"h\",\"wk\"", "k", "");
        mb_node(&m, "v", "MatMul", "\"h\",\"wv\"", "v", "");
        mb_node(&m, "tk", "Transpose", "\"k\"", "kt", "\"perm\":{\"ints\":[0,2,1]}");
        mb_node(&m, "qk", "MatMul", "\"q\",\"kt\"", "s", "");
        if (which == 4) {
            mb_node(&m, "scaled", "Div", "\"s\",\"scale\"", "s2", "");
            mb_node(&m, "masked", "Where", "\"tri\",\"s2\",\"lowest\"", "s3", "");
        } else {
            mb_node(&m, "scaled", "Mul", "\"s\",\"scale\"", "s2", "");
            mb_node(&m, "masked", "Add", "\"s2\",\"causal\"", "s3", "");
        }
        mb_node(&m, "sm", "Softmax", "\"s3\"", "p",
                which == 2 ? "\"axis\":{\"int\":1}"
                : which == 3 ? "\"axis\":{\"int\":2}"
                             : "\"axis\":{\"int\":-1}");
        mb_node(&m, "pv", "MatMul", "\"p\",\"v\"", "y", "");
    }
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_fused_attention(void)
{
    char isa[64] = "";
    bool fused = onednn_avx512(isa);
    for (int w = 0; w < 8; w++) {
        const char *path = model_fused_attention(w);
        int64_t xs[3] = {2, 37, 48}, ys[3] = {2, 37, 48};
        if (w > 0 && w < 5) {
            xs[0] = ys[0] = 3, xs[1] = ys[1] = 200, xs[2] = 32, ys[2] = 70;
        } else if (w >= 6) {
            xs[0] = ys[0] = 6, xs[1] = ys[1] = 20, xs[2] = 16, ys[2] = 24;
        }
        compare(path, 3, xs, 3, ys,
                (const char *[]){"q", "k", "v", "qk", "scaled", "masked", "sm", "pv", NULL});
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        bool logged = strstr(log.text, "to 'pv': the module's own fused attention") != NULL;
        TH_CHECK(logged == (fused && w != 2), "model %d (%s): fused attention %s in the log:\n%s",
                 w, isa, logged ? "named" : "not named", log.text);
        static const char *const what[8] = {
            "(8 x 37 queries, 37 keys, 12 -> 12 wide, scaled, masked)",
            "(3 x 200 queries, 200 keys, 64 -> 70 wide, scaled, masked)", NULL,
            "(3 x 200 queries, 200 keys, 64 -> 70 wide, scaled, masked)",
            "(3 x 200 queries, 200 keys, 64 -> 70 wide, scaled, selected)",
            "(8 x 37 queries, 37 keys, 12 -> 12 wide, scaled, selected)",
            "(6 x 20 queries, 20 keys, 16 -> 24 wide, scaled, masked, floored)",
            "(6 x 20 queries, 20 keys, 16 -> 24 wide, scaled, biased, selected)"};
        if (fused && what[w] != NULL)
            TH_CHECK(strstr(log.text, what[w]) != NULL, "model %d's attention is not %s:\n%s", w,
                     what[w], log.text);
    }
}

/* torch 2's scaled_dot_product_attention as its exporters write it: the
 * Softmax's output read by IsNaN and by Where(IsNaN(p), 0, p) (its "safe
 * softmax"), then the second product. The constant mask [1, 1, 24, 24]
 * masks every key of queries 3 and 17 (-inf: those rows of the Softmax are
 * NaN, of the Where 0) and some keys of the others. WHICH 0: that
 * attention, fused with AVX-512; 1: the same Where(IsNaN(x), 0.5, x) alone
 * on the square root of a product (NaN where it is negative), a step of
 * its own.
 * Either way no node leaves onednn, and the values are the cpu module's
 * (which runs IsNaN and Where as written): no NaN, the masked rows 0. */
static const char *model_safe_softmax(int which)
{
    struct mb m = {.seed = 91 + which, .opset = 18};
    mb_input(&m, "x", 3, (int64_t[]){2, 24, 32});
    if (which == 1) {
        mb_const(&m, "w", 2, (int64_t[]){32, 32}, NULL, 0.3f);
        mb_scalar(&m, "half", 0.5f);
        mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "h", "");
        mb_node(&m, "sqrt", "Sqrt", "\"h\"", "l", "");
        mb_node(&m, "isnan", "IsNaN", "\"l\"", "c", "");
        mb_node(&m, "fill", "Where", "\"c\",\"half\",\"l\"", "f", "");
        mb_node(&m, "tanh", "Tanh", "\"f\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        return mb_write(&m);
    }
    float mask[24 * 24];
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 24; j++)
            mask[i * 24 + j] = i == 3 || i == 17 || (j * 5 + i) % 7 == 0 ? -INFINITY : 0.0f;
    const char *wn[] = {"wx", "wq", "wk", "wv"};
    for (int i = 0; i < 4; i++)
        mb_const(&m, wn[i], 2, (int64_t[]){32, 32}, NULL, 0.3f);
    mb_const(&m, "mask", 4, (int64_t[]){1, 1, 24, 24}, mask, 1.0f);
    mb_scalar(&m, "scale", 0.25f);
    mb_scalar(&m, "zero", 0.0f);
    mb_shape(&m, "heads", 4, (int64_t[]){2, 24, 4, 8});
    mb_shape(&m, "merged", 3, (int64_t[]){2, 24, 32});
    mb_node(&m, "in", "MatMul", "\"x\",\"wx\"", "h", "");
    mb_node(&m, "q", "MatMul", "\"h\",\"wq\"", "q", "");
    mb_node(&m, "k", "MatMul", "\"h\",\"wk\"", "k", "");
    mb_node(&m, "v", "MatMul", "\"h\",\"wv\"", "v", "");
    mb_heads_with(&m, "mask", 1);
    mb_node(&m, "out", "Tanh", "\"om\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

static void case_safe_softmax(void)
{
    char isa[64] = "";
    bool fused = onednn_avx512(isa);
    for (int w = 0; w < 2; w++) {
        const char *path = model_safe_softmax(w);
        int64_t xs[3] = {2, 24, 32};
        compare(path, 3, xs, 3, xs,
                w == 0 ? (const char *[]){"qk", "sm", "isnan", "fill", "pv", NULL}
                       : (const char *[]){"sqrt", "isnan", "fill", "tanh", NULL});
        /* the masked queries' rows are 0 (compare checks every value
         * against the cpu module's, which a NaN fails) */
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        if (w == 0) {
            bool logged = strstr(log.text, "to 'pv': the module's own fused attention") != NULL &&
                          strstr(log.text, "NaN rows as 0") != NULL;
            TH_CHECK(logged == fused, "%s: safe fused attention %s in the log:\n%s", isa,
                     logged ? "named" : "not named", log.text);
        }
        struct blob b = compile_blob(path);
        uint32_t total;
        int fills = count_steps(&b, TEST_ODNN_S_NANFILL, &total);
        TH_CHECK(fills == (w == 0 && fused ? 0 : 1), "model %d (%s): %d NaN-fill steps of %u", w,
                 isa, fills, total);
        free(b.bytes);
    }
}

/* Three 3x3 layers below 64 channels over HW x HW: 16 -> 32 with a ReLU
 * ("narrow"), 32 -> 64 with a ReLU ("relu") and 64 -> 48 with SiLU as
 * Sigmoid and Mul ("silu"). */
static const char *model_wino_narrow(int64_t hw)
{
    struct mb m = {.seed = 17};
    int64_t xs[] = {1, 16, hw, hw}, w1[] = {32, 16, 3, 3}, w2[] = {64, 32, 3, 3},
            w3[] = {48, 64, 3, 3}, b1[] = {32}, b2[] = {64}, b3[] = {48};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, w1, NULL, 0.1f);
    mb_const(&m, "b1", 1, b1, NULL, 0.1f);
    mb_const(&m, "w2", 4, w2, NULL, 0.08f);
    mb_const(&m, "b2", 1, b2, NULL, 0.1f);
    mb_const(&m, "w3", 4, w3, NULL, 0.06f);
    mb_const(&m, "b3", 1, b3, NULL, 0.1f);
    const char *pads = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "narrow", "Conv", "\"x\",\"w1\",\"b1\"", "c1", pads);
    mb_node(&m, "relu1", "Relu", "\"c1\"", "r1", "");
    mb_node(&m, "relu", "Conv", "\"r1\",\"w2\",\"b2\"", "c2", pads);
    mb_node(&m, "relu2", "Relu", "\"c2\"", "r2", "");
    mb_node(&m, "silu", "Conv", "\"r2\",\"w3\",\"b3\"", "c3", pads);
    mb_node(&m, "sig", "Sigmoid", "\"c3\"", "s3", "");
    mb_node(&m, "mul", "Mul", "\"c3\",\"s3\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* Below 64 channels Winograd pays only over many output tiles, and only
 * through F(4x4, 3x3) (odnn_wino_pays): over 56x56, 32 -> 64 and 64 -> 48
 * take it and 16 -> 32 stays direct; the SiLU after 64 -> 48, which
 * Winograd's kernels cannot fuse, becomes a step of its own (the log says
 * so) instead of keeping the layer direct; over 14x14 none takes it, nor
 * over 148x148, whose 37 x 37 tiles oneDNN's kernel can only block one at
 * a time (odnn_wino_tile_block: 1.5x slower than direct there). All agree
 * with the cpu module. AVX-512 only. */
static void case_winograd_narrow(void)
{
    static const int64_t sizes[] = {56, 148, 14};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        int64_t hw = sizes[si];
        const char *path = model_wino_narrow(hw);
        int64_t xs[] = {1, 16, hw, hw}, ys[] = {1, 48, hw, hw};
        compare_floor = 1e-5;
        compare(path, 4, xs, 4, ys, (const char *[]){"narrow", "relu", "silu", "mul", NULL});
        compare_floor = 0.0;
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with("winograd = auto", &log);
        pl_session_destroy(session_for(rt, path));
        char isa[64] = "";
        pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
        TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
        pl_runtime_destroy(rt);
        if (!(strncmp(isa, "avx512_core", 11) == 0 || strncmp(isa, "avx10", 5) == 0 ||
              strncmp(isa, "amx", 3) == 0))
            th_skip("oneDNN dispatches to %s, below AVX-512", isa);
        bool big = hw == 56;
        TH_CHECK((strstr(log.text, "node 'relu': Winograd convolution (jit_wino_4x3") != NULL) ==
                         big &&
                     (strstr(log.text, "node 'silu': Winograd convolution (jit_wino_4x3") !=
                      NULL) == big &&
                     (strstr(log.text, "node 'silu': Winograd with its activation as a step of "
                                       "its own") != NULL) == big &&
                     strstr(log.text, "node 'narrow': Winograd") == NULL,
                 "%lldx%lld: log:\n%s", (long long)hw, (long long)hw, log.text);
    }
}

/* ROWS rows by 2048x2048 constant weights (16 MiB), bias and Relu, then
 * by a second 2048x2048 (GEMM = 0: [1, 1, ROWS, 2048] in and out); or a
 * Gemm of [ROWS, 2048] by a transposed 1000x2048 and a bias (GEMM = 1). */
static const char *model_gemv(int64_t rows, int gemm)
{
    struct mb m = {.seed = 61};
    int64_t x4[] = {1, 1, rows, 2048}, x2[] = {rows, 2048}, ws[] = {2048, 2048},
            wt[] = {1000, 2048}, bs[] = {2048}, ct[] = {1000};
    if (gemm) {
        mb_input(&m, "x", 2, x2);
        mb_const(&m, "w", 2, wt, NULL, 0.02f);
        mb_const(&m, "c", 1, ct, NULL, 0.1f);
        mb_node(&m, "fc", "Gemm", "\"x\",\"w\",\"c\"", "y", "\"transB\":{\"int\":1}");
    } else {
        mb_input(&m, "x", 4, x4);
        mb_const(&m, "w1", 2, ws, NULL, 0.02f);
        mb_const(&m, "b1", 1, bs, NULL, 0.1f);
        mb_const(&m, "w2", 2, ws, NULL, 0.02f);
        mb_node(&m, "mm1", "MatMul", "\"x\",\"w1\"", "p", "");
        mb_node(&m, "bias", "Add", "\"p\",\"b1\"", "q", "");
        mb_node(&m, "relu", "Relu", "\"q\"", "r", "");
        mb_node(&m, "mm2", "MatMul", "\"r\",\"w2\"", "y", "");
    }
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* A product of one row by big constant weights reads the weights as the
 * model stores them: on the module's own matrix-vector kernel where the CPU
 * has AVX2 and FMA (onednn_smm.c), on oneDNN's gemm:jit (odnn_gemv_pd: it
 * streams them faster than brgemm does its packed copy) otherwise and with
 * direct_conv = no; the log names each such node, and none with 4 rows.
 * All agree with the cpu module (the own kernel: the transposed weights of
 * the Gemm, the row-major ones of the MatMuls, the bias and ReLU after the
 * first as its epilogue), and a blob of the one-row compile imports and
 * computes the same. */
static void case_gemv(void)
{
    static const char *const mm_nodes[] = {"mm1", "mm2", NULL}, *const fc_nodes[] = {"fc", NULL};
    char isa[64] = "";
    __builtin_cpu_init();
    bool own = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    for (int gemm = 0; gemm < 2; gemm++)
        for (int64_t rows = 1; rows <= 4; rows += 3)
            for (int direct = 1; direct >= 0; direct--) {
                const char *path = model_gemv(rows, gemm);
                int64_t x4[] = {1, 1, rows, 2048}, x2[] = {rows, 2048}, y2[] = {rows, 1000};
                if (gemm && direct)
                    compare(path, 2, x2, 2, y2, fc_nodes);
                else if (direct)
                    compare(path, 4, x4, 4, x4, mm_nodes);
                struct wino_log log;
                memset(&log, 0, sizeof log);
                pl_runtime *rt = onednn_runtime_with(direct ? NULL : "[onednn]\ndirect_conv = no\n",
                                                     &log);
                pl_session_destroy(session_for(rt, path));
                pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
                TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
                pl_runtime_destroy(rt);
                const char *const *nodes = gemm ? fc_nodes : mm_nodes;
                for (int k = 0; nodes[k] != NULL; k++) {
                    char want[160];
                    if (own && direct)
                        snprintf(want, sizeof want, "node '%s': one row by 2048x%d constant "
                                                    "weights%s on the module's own matrix-vector "
                                                    "kernel",
                                 nodes[k], gemm ? 1000 : 2048, gemm ? " (transposed)" : "");
                    else
                        snprintf(want, sizeof want,
                                 "node '%s': one row by 2048x%d constant weights on gemm:jit",
                                 nodes[k], gemm ? 1000 : 2048);
                    bool taken = strstr(log.text, want) != NULL;
                    TH_CHECK(taken == (rows == 1), "%s, %lld rows on %s: '%s' %s; log:\n%s",
                             gemm ? "Gemm" : "MatMul", (long long)rows, isa, want,
                             taken ? "logged" : "not logged", log.text);
                }
                if (!gemm && rows == 1 && direct) {
                    size_t n = count(4, x4);
                    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
                    TH_CHECK(x && y, "out of memory");
                    for (size_t i = 0; i < n; i++)
                        x[i] = sinf((float)i * 0.37f);
                    blob_roundtrip(path, x, x4, n, y);
                    free(x);
                    free(y);
                }
            }
}

/* The own matrix-vector kernel on shapes whose edges it handles apart:
 * K not a multiple of its 16-wide (transposed) or 4-row (row-major) steps,
 * N not a multiple of 8 (masked stores; a transposed matrix's rows past N
 * read again), fewer columns than a thread's share, and Gemm's alpha and
 * beta, a Sigmoid and a ReLU as its epilogue: each agrees with the cpu
 * module and the log names the kernel. */
static void case_gemv_edges(void)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        th_skip("the matrix-vector kernel needs AVX2 and FMA");
    static const char *const nodes[] = {"p", NULL};
    for (int shape = 0; shape < 3; shape++) {
        int64_t k = shape == 2 ? 8192 : 1031, n = shape == 0 ? 1027 : shape == 1 ? 1030 : 129;
        struct mb m = {.seed = 67};
        int64_t xs[] = {1, k}, ys[] = {1, n}, wt[] = {n, k}, wr[] = {k, n}, cs[] = {n};
        mb_input(&m, "x", 2, xs);
        if (shape == 1) { /* row-major [K, N], a Sigmoid after */
            mb_const(&m, "w", 2, wr, NULL, 0.05f);
            mb_node(&m, "p", "MatMul", "\"x\",\"w\"", "q", "");
            mb_node(&m, "act", "Sigmoid", "\"q\"", "y", "");
        } else { /* transposed [N, K] */
            mb_const(&m, "w", 2, wt, NULL, 0.05f);
            mb_const(&m, "c", 1, cs, NULL, 0.5f);
            mb_node(&m, "p", "Gemm", "\"x\",\"w\",\"c\"", shape == 0 ? "y" : "q",
                    shape == 0 ? "\"transB\":{\"int\":1},\"alpha\":{\"float\":0.5},"
                                 "\"beta\":{\"float\":2.0}"
                               : "\"transB\":{\"int\":1}");
            if (shape == 2)
                mb_node(&m, "act", "Relu", "\"q\"", "y", "");
        }
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        compare(path, 2, xs, 2, ys, nodes);
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rt = onednn_runtime_with(NULL, &log);
        pl_session_destroy(session_for(rt, path));
        pl_runtime_destroy(rt);
        char want[160];
        snprintf(want, sizeof want, "node 'p': one row by %lldx%lld constant weights%s on the "
                                    "module's own matrix-vector kernel",
                 (long long)k, (long long)n, shape == 1 ? "" : " (transposed)");
        TH_CHECK(strstr(log.text, want) != NULL, "'%s' not logged; log:\n%s", want, log.text);
    }
}

static void probes_sink(void *user, const char *key, const char *value)
{
    unsigned long long *c = user;
    if (strcmp(key, "kernel_probes") == 0)
        TH_CHECK(sscanf(value, "%llu asked, %llu remembered", &c[0], &c[1]) == 2,
                 "kernel_probes = %s", value);
}

/* The module's counts of implementation probes (configure's kernel_probes). */
static void probe_counts(pl_runtime *rt, unsigned long long *c)
{
    pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
    c[0] = c[1] = ~0ull;
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, probes_sink, c));
    TH_CHECK(c[0] != ~0ull, "configure gave no kernel_probes");
}

/* oneDNN's answers to the implementation probes (a binary's broadcast, a
 * grouped convolution's kernel) are remembered for the process
 * (onednn_memo.c): the first session asks each node's question more than
 * once and gets the later answers from memory; a second session of the
 * same model asks again and every answer is remembered. Both sessions
 * place every node alike and compute the same values. */
/* Whether a thread of this process is named NAME (/proc/self/task). */
static int thread_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        char path[300], comm[32] = "";
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        found = fgets(comm, sizeof comm, f) != NULL && strncmp(comm, name, strlen(name)) == 0;
        fclose(f);
    }
    closedir(d);
    return found;
}

/* Set in a child forked by case_gemm_warm: LeakSanitizer (the sanitized
 * build) stays off at its exit, where the memory the parent's warm-up
 * thread held on its stack, a thread the child does not have, reads as
 * leaked. */
static int in_forked_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
    return in_forked_child;
}

/* Whether forked CHILD exits within SECONDS (its wait status into
 * *STATUS); one that does not is killed. */
static int wait_child(pid_t child, int seconds, int *status)
{
    for (int i = 0; i < seconds * 100; i++) {
        pid_t got = waitpid(child, status, WNOHANG);
        if (got == child)
            return 1;
        usleep(10000);
    }
    kill(child, SIGKILL);
    waitpid(child, status, 0);
    return 0;
}

/* fork() with the output buffers flushed first (a child's exit() would
 * write them again); fails the case when it cannot. */
static pid_t fork_flushed(void)
{
    fflush(NULL);
    pid_t child = fork();
    TH_CHECK(child >= 0, "fork failed");
    return child;
}

/* gemm_warm's model: 4 heads of Q K^T, 64x64x64, both read from X
 * [1, 64, 4, 64] through Transposes (a product oneDNN runs on its JIT
 * GEMM on AVX-512: brgemm takes no batch-permuted views), written with
 * SEED. */
static const char *gemm_attention_model(uint32_t seed)
{
    struct mb m = {.seed = seed};
    int64_t xs[] = {1, 64, 4, 64};
    mb_input(&m, "x", 4, xs);
    mb_node(&m, "q", "Transpose", "\"x\"", "q", "\"perm\":{\"ints\":[0,2,1,3]}");
    mb_node(&m, "kt", "Transpose", "\"x\"", "kt", "\"perm\":{\"ints\":[0,2,3,1]}");
    mb_node(&m, "mm", "MatMul", "\"q\",\"kt\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return mb_write(&m);
}

/* An attention product oneDNN runs on its JIT GEMM (brgemm takes no
 * batch-permuted views: 4 heads of Q K^T, 64x64x64, both read from X
 * [1, S, H, D] through Transposes) has the module generate that GEMM's
 * kernels in a thread of its own while the session is made
 * (onednn_warm.c); the results are the product's, and a child forked while
 * that thread runs exits: the fork waits for the thread (pthread_atfork), so
 * the child inherits none of its locks, and the child's exit does not wait
 * for the parent's thread. */
static void case_gemm_warm(void)
{
    int64_t xs[] = {1, 64, 4, 64}, ys[] = {1, 4, 64, 64};
    const char *path = gemm_attention_model(61);
    pl_runtime *rt = onednn_runtime();
    pl_session *s = session_for(rt, path);
    /* the module's own products (below AVX-512) are not oneDNN's GEMM */
    int warming = thread_named("pl-onednn-warm");
    pid_t child = fork();
    TH_CHECK(child >= 0, "fork failed");
    if (child == 0) {
        in_forked_child = 1;
        exit(0); /* the module's destructor runs in the child */
    }
    int status = 0;
    int exited = wait_child(child, 30, &status);
    TH_CHECK(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0,
             "a child forked while the GEMM kernels were generated (thread %s) did not exit",
             warming ? "running" : "already done or none");
    size_t n = count(4, xs);
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    TH_CHECK(x && y, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.37f);
    run_one(s, "x", x, 4, xs, "y", y, 4, ys);
    for (int h = 0; h < 4; h++)
        for (int i = 0; i < 64; i++)
            for (int j = 0; j < 64; j++) {
                double want = 0;
                for (int d = 0; d < 64; d++)
                    want += (double)x[(i * 4 + h) * 64 + d] * x[(j * 4 + h) * 64 + d];
                float got = y[(h * 64 + i) * 64 + j];
                TH_CHECK(fabs(got - want) <= 1e-4 * (1 + fabs(want)), "y[%d][%d][%d] %g, want %g",
                         h, i, j, got, want);
            }
    printf("warm-up thread %s at the fork\n", warming ? "running" : "not running");
    free(x);
    free(y);
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
}

/* A runtime destroyed while the GEMM warm-up thread still runs: the
 * thread is joined when the module's context shuts down, not in its
 * destructor, which dlclose runs holding the loader's lock that oneDNN's
 * first JIT kernel takes (it opens its profiling collector with dlopen):
 * both waited forever, 14 of 20 runs of gemv_placement on an AVX2 EPYC.
 * Ten runtimes, each with a session of gemm_warm's attention product or
 * of gemv_placement's product by constant weights (in turn), made and
 * destroyed at once, each in a child of its own (whose oneDNN has made no
 * kernel yet: the thread runs in each) that must exit within 30 s; without
 * the fix the first child hung every time on that EPYC. */
static void case_gemm_warm_unload(void)
{
    const char *paths[2];
    paths[0] = gemm_attention_model(62);
    { /* gemv_placement's, where it hung: gemm:jit below AVX-512, and the
         first JIT kernel of the process is made on the warm-up thread */
        struct mb m = {.seed = 63};
        int64_t xs[] = {64, 512}, ws[] = {512, 2048};
        mb_input(&m, "x", 2, xs);
        mb_const(&m, "w", 2, ws, NULL, 0.04f);
        mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "a", "");
        mb_node(&m, "act", "Tanh", "\"a\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        paths[1] = mb_write(&m);
    }
    pl_runtime_destroy(onednn_runtime()); /* skips here when onednn is not loaded */
    for (int k = 0; k < 10; k++) {
        pid_t child = fork_flushed();
        if (child == 0) {
            pl_runtime *rt = onednn_runtime();
            pl_session_destroy(session_for(rt, paths[k % 2]));
            pl_runtime_destroy(rt);
            _exit(0);
        }
        int status = 0;
        TH_CHECK(wait_child(child, 30, &status),
                 "runtime %d, made and destroyed, did not finish in 30 s (hung unloading the "
                 "module while its GEMM warm-up ran?)", k);
        TH_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "runtime %d: status %d", k,
                 status);
    }
}

/* An application that exits with its runtime and session alive (exit()
 * right after making them, as an error path does) exits cleanly while the
 * module's GEMM warm-up has run: the compile waits for the thread, which
 * was still generating kernels when oneDNN's static destructors ran at
 * exit (SIGSEGV, or glibc's abort on a corrupt heap: 30 of 30 processes
 * with timm's coat_lite_tiny). Ten children, each making gemm_warm's
 * attention product (AVX-512: its GEMM runs on gemm:jit) and calling
 * exit(0). */
static void case_gemm_warm_exit(void)
{
    pl_runtime_destroy(onednn_runtime()); /* skips here when onednn is not loaded */
    for (int k = 0; k < 10; k++) {
        pid_t child = fork_flushed();
        if (child == 0) {
            /* the model written here: the child's exit removes its folder */
            in_forked_child = 1; /* what is alive at exit is not a leak here */
            pl_runtime *rt = onednn_runtime();
            (void)session_for(rt, gemm_attention_model(64));
            exit(0);
        }
        int status = 0;
        TH_CHECK(wait_child(child, 30, &status), "child %d did not exit in 30 s", k);
        TH_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                 "child %d, exiting with a live session: %s %d", k,
                 WIFSIGNALED(status) ? "signal" : "status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
}

/* A subgraph whose one product of two activations is part of the fused
 * attention (AVX-512) runs nothing on gemm:jit, so it starts no thread to
 * generate that GEMM's kernels: made while the session is, the thread took
 * a core from the first runs for 58 ms (gpt_neo: runs of 1.0 ms then
 * 1.5-6.5 ms), and now the compile would wait for it. The compile's debug
 * log says when it starts one; no such thread outlives the session's
 * creation anyway (case_gemm_warm_exit). The values agree with the cpu
 * module. */
static void case_no_gemm_warm(void)
{
    char isa[64] = "";
    bool fused = onednn_avx512(isa);
    const char *path = model_attention();
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session *s = session_for(rt, path);
    int warming = thread_named("pl-onednn-warm");
    pl_session_destroy(s);
    pl_runtime_destroy(rt);
    TH_CHECK(!warming, "the GEMM warm-up thread still runs after the session was made");
    TH_CHECK(strstr(log.text, "primitives") != NULL, "no compile in the log:\n%s", log.text);
    TH_CHECK(!fused || strstr(log.text, "JIT GEMM") == NULL,
             "a fused attention started the GEMM warm-up (%s):\n%s", isa, log.text);
    int64_t xs[] = {2, 6, 24};
    compare(path, 3, xs, 3, xs, (const char *[]){"qk", "sm", "pv", NULL});
}

static void case_probe_memo(void)
{
    struct mb m = {.seed = 101};
    int64_t xs[] = {1, 8, 10, 10}, bs[] = {1, 8, 1, 1};
    mb_input(&m, "x", 4, xs);
    mb_node(&m, "c", "Conv", "\"x\",\"cw\",\"cb\"", "a",
            "\"pads\":{\"ints\":[1,1,1,1]},\"group\":{\"int\":2}");
    mb_const(&m, "cw", 4, (int64_t[]){8, 4, 3, 3}, NULL, 0.3f);
    mb_const(&m, "cb", 1, (int64_t[]){8}, NULL, 0.1f);
    mb_const(&m, "s", 4, bs, NULL, 0.5f);
    mb_node(&m, "mul", "Mul", "\"a\",\"s\"", "b", "");
    mb_node(&m, "div", "Div", "\"b\",\"s\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    pl_runtime *rt = onednn_runtime();
    unsigned long long c0[2], c1[2], c2[2];
    probe_counts(rt, c0);
    pl_session *s1 = session_for(rt, path);
    probe_counts(rt, c1);
    pl_session *s2 = session_for(rt, path);
    probe_counts(rt, c2);
    TH_CHECK(c1[0] > c0[0] && c1[1] > c0[1],
             "first session: %llu probes asked, %llu remembered", c1[0] - c0[0], c1[1] - c0[1]);
    TH_CHECK(c2[0] > c1[0] && c2[1] - c1[1] == c2[0] - c1[0],
             "second session: %llu probes asked, %llu remembered", c2[0] - c1[0],
             c2[1] - c1[1]);
    json_t *r1 = th_explain(s1), *r2 = th_explain(s2);
    static const char *const nodes[] = {"c", "mul", "div"};
    for (int i = 0; i < 3; i++) {
        const char *b1 = json_string_value(json_object_get(th_placement_of(r1, nodes[i]), "backend"));
        const char *b2 = json_string_value(json_object_get(th_placement_of(r2, nodes[i]), "backend"));
        TH_CHECK(b1 != NULL && b2 != NULL && strcmp(b1, b2) == 0, "%s: %s, then %s", nodes[i],
                 b1 ? b1 : "-", b2 ? b2 : "-");
    }
    json_decref(r1);
    json_decref(r2);
    size_t n = count(4, xs);
    float *x = malloc(n * sizeof *x), *y1 = malloc(n * sizeof *y1), *y2 = malloc(n * sizeof *y2);
    TH_CHECK(x && y1 && y2, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = cosf((float)i * 0.31f);
    run_one(s1, "x", x, 4, xs, "y", y1, 4, xs);
    run_one(s2, "x", x, 4, xs, "y", y2, 4, xs);
    TH_CHECK(memcmp(y1, y2, n * sizeof *y1) == 0, "the two sessions' outputs differ");
    free(x);
    free(y1);
    free(y2);
    pl_session_destroy(s1);
    pl_session_destroy(s2);
    pl_runtime_destroy(rt);
}

/* A runtime offering onednn first and weighing costs, its [runtime]
 * section given RUNTIME_EXTRA (a line, or ""); skips when onednn is not
 * loaded. */
static pl_runtime *cost_runtime(const char *runtime_extra)
{
    const char *ini = th_path(th_tempdir(), "cost.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n%s\n[placement]\norder = onednn, cpu\n"
               "choose = cost\n",
            th_arg(0), runtime_extra);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    long oi = pl_runtime_find_module(rt, "onednn");
    if (oi < 0 || rt->modules[oi]->status != PL_MODULE_LOADED) {
        pl_runtime_destroy(rt);
        th_skip("the onednn module is not loaded (oneDNN missing?)");
    }
    return rt;
}

/* Placement by cost of a product of one row by constant weights (M = 1):
 * oneDNN's gemm:jit streams the 4 MiB matrix each call (123 us on two
 * threads) where the cpu module's kernel keeps each thread's share in its
 * core's cache (20-31 us), so with choose = cost the product of one row
 * goes to cpu and one of 64 rows (a real GEMM) stays on onednn; both agree
 * with the cpu module. An RNN a Loop or Scan runs a step at a time is
 * such products (piper's nakdimon: default 4.3 -> 3.9 ms, order = cpu 3.8). */
static void case_gemv_placement(void)
{
    for (int64_t rows = 1; rows <= 64; rows += 63) {
        struct mb m = {.seed = 71};
        int64_t xs[] = {rows, 512}, ws[] = {512, 2048}, ys[] = {rows, 2048};
        mb_input(&m, "x", 2, xs);
        mb_const(&m, "w", 2, ws, NULL, 0.04f);
        mb_node(&m, "mm", "MatMul", "\"x\",\"w\"", "a", "");
        mb_node(&m, "act", "Tanh", "\"a\"", "y", "");
        m.outputs[m.n_outputs++] = "y";
        const char *path = mb_write(&m);
        pl_runtime *rt = cost_runtime("");
        pl_session *s = session_for(rt, path);
        json_t *root = th_explain(s);
        const char *be = json_string_value(json_object_get(th_placement_of(root, "mm"), "backend"));
        const char *want = rows == 1 ? "cpu" : "onednn";
        TH_CHECK(be != NULL && strcmp(be, want) == 0, "%lld rows: the product ran on %s, expected %s",
                 (long long)rows, be ? be : "(none)", want);
        json_decref(root);
        pl_session_destroy(s);
        pl_runtime_destroy(rt);
        compare(path, 2, xs, 2, ys, NULL);
    }
}

/* The staged model of the quick_tails cases: rows of x known only at run
 * time, two 256 x 256 products and a Relu; a runtime of CACHE_LINE's
 * [runtime] line (or none) offering onednn first, weighing costs, and a
 * cpu-only one, each with a session of it. Skips when onednn is not
 * loaded. */
struct qt_pair {
    pl_runtime *rt, *rc;
    pl_session *s, *sc;
    bool conv; /* qt_open_conv's model */
};

static struct qt_pair qt_pair_of(const char *path, const char *cache_line);

static struct qt_pair qt_open(uint32_t seed, const char *cache_line)
{
    struct mb m = {.seed = seed};
    int64_t xs[] = {-1, 256}, ws[] = {256, 256};
    mb_input(&m, "x", 2, xs);
    mb_const(&m, "w1", 2, ws, NULL, 0.06f);
    mb_const(&m, "w2", 2, ws, NULL, 0.06f);
    mb_node(&m, "m1", "MatMul", "\"x\",\"w1\"", "a", "");
    mb_node(&m, "r", "Relu", "\"a\"", "ar", "");
    mb_node(&m, "m2", "MatMul", "\"ar\",\"w2\"", "y", "");
    m.outputs[m.n_outputs++] = "y";
    return qt_pair_of(mb_write(&m), cache_line);
}

/* qt_open's model where onednn's products beat the cpu module's (a full
 * plan takes them, AVX-512); below AVX-512 the cpu module's products cost
 * no more than oneDNN's (modules/cpu/cost.c, CPU_COST_AVX2_PACKED_FACTOR),
 * so there the model is two 16 -> 16 channel 3x3 convolutions "m1" and
 * "m2" (the module's own kernel, well ahead of cpu's in a full plan) over
 * x [1, 16, ROWS, 8] with a Relu between: ROWS is the free dim either way,
 * and the tails' decisions are the same ones. */
static struct qt_pair qt_open_conv(uint32_t seed, const char *cache_line)
{
    char isa[64] = "";
    if (onednn_avx512(isa))
        return qt_open(seed, cache_line);
    struct mb m = {.seed = seed};
    int64_t xs[] = {1, 16, -1, 8}, ws[] = {16, 16, 3, 3};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w1", 4, ws, NULL, 0.06f);
    mb_const(&m, "w2", 4, ws, NULL, 0.06f);
    const char *pads = "\"pads\":{\"ints\":[1,1,1,1]}";
    mb_node(&m, "m1", "Conv", "\"x\",\"w1\"", "a", pads);
    mb_node(&m, "r", "Relu", "\"a\"", "ar", "");
    mb_node(&m, "m2", "Conv", "\"ar\",\"w2\"", "y", pads);
    m.outputs[m.n_outputs++] = "y";
    struct qt_pair q = qt_pair_of(mb_write(&m), cache_line);
    q.conv = true;
    return q;
}

static struct qt_pair qt_pair_of(const char *path, const char *cache_line)
{
    struct qt_pair q = {0};
    q.rt = cost_runtime(cache_line);
    q.rc = runtime_with("cpu");
    q.s = session_for(q.rt, path);
    q.sc = session_for(q.rc, path);
    return q;
}

/* RUNS runs of ROWS rows on both sessions, the values agreeing; then the
 * explain JSON of the onednn session (the caller frees it) and its last
 * tail in *TAIL. */
static json_t *qt_runs(const struct qt_pair *q, int64_t rows, int runs, json_t **tail)
{
    int64_t d[4] = {rows, 256};
    int nd = 2;
    size_t n = (size_t)rows * 256;
    if (q->conv) {
        d[0] = 1, d[1] = 16, d[2] = rows, d[3] = 8;
        nd = 4;
        n = (size_t)rows * 128;
    }
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *yc = malloc(n * sizeof *yc);
    TH_CHECK(x && y && yc, "out of memory");
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i * 0.173f);
    for (int r = 0; r < runs; r++) {
        memset(y, 0, n * sizeof *y);
        run_one(q->s, "x", x, nd, d, "y", y, nd, d);
        run_one(q->sc, "x", x, nd, d, "y", yc, nd, d);
        double worst = 0, scale = 0;
        for (size_t i = 0; i < n; i++) {
            worst = fmax(worst, fabs((double)y[i] - yc[i]));
            scale = fmax(scale, fabs((double)yc[i]));
        }
        TH_CHECK(worst <= 1e-4 * scale, "%lld rows, run %d: %g off cpu's (scale %g)",
                 (long long)rows, r, worst, scale);
    }
    free(x);
    free(y);
    free(yc);
    json_t *root = th_explain(q->s);
    *tail = json_object_get(json_object_get(root, "staged"), "last_tail");
    TH_CHECK(json_is_object(*tail), "no staged.last_tail after %lld rows", (long long)rows);
    return root;
}

static void qt_close(struct qt_pair *q)
{
    pl_session_destroy(q->s);
    pl_session_destroy(q->sc);
    pl_runtime_destroy(q->rt);
    pl_runtime_destroy(q->rc);
}

/* Tails of a staged session in tiers (stage.c) on qt_open_conv's model. The
 * first tail plans in full (onednn). The next signature's plan is
 * expected to serve as few runs as the stage's plans have served on
 * average (two), so placement weighs onednn's compile (pl_cost.prepare_us)
 * against them: the products (or convolutions) go to cpu (rows 16, then 17), their reason
 * naming the compile. That signature used 8 times is planned again in
 * full: onednn. Values agree with a cpu-only runtime's at each tier. */
static void case_quick_tails(void)
{
    struct qt_pair q = qt_open_conv(97, "");
    /* (rows, runs of it, where m1 and m2 run after them) */
    static const struct {
        int64_t rows;
        int runs;
        const char *backend;
    } steps[] = {{16, 1, "onednn"}, {17, 1, "cpu"}, {17, 6, "cpu"}, {17, 1, "onednn"}};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        json_t *tail, *root = qt_runs(&q, steps[k].rows, steps[k].runs, &tail);
        for (int n = 0; n < 2; n++) {
            json_t *p = th_placement_of(tail, n ? "m2" : "m1");
            const char *backend = json_string_value(json_object_get(p, "backend"));
            const char *why = json_string_value(
                json_object_get(json_object_get(p, "reasons"), "onednn"));
            TH_CHECK(backend != NULL && strcmp(backend, steps[k].backend) == 0,
                     "step %zu (%lld rows): %s on %s, not %s (onednn: %s)", k,
                     (long long)steps[k].rows, n ? "m2" : "m1", backend, steps[k].backend,
                     why ? why : "-");
            if (strcmp(steps[k].backend, "cpu") == 0)
                TH_CHECK(why != NULL && strstr(why, "runs a plan serves") != NULL,
                         "step %zu: the reason does not name the compile: %s", k, why);
        }
        json_decref(root);
    }
    qt_close(&q);
}

/* The stage times its tiers (stage.c, STG_TIER_WEIGHT): at 4096 rows and
 * more a run of qt_open's model (two 4096 x 256 x 256 products) takes far
 * longer than planning its three nodes, so once three quick tails' runs
 * are timed (STG_EXPLORE_RUNS; the first run of a tier is not) the next new
 * signature is planned in full to measure that tier, where tiny
 * products (case_quick_tails) stay quick. The description says which tier
 * the last tail is and what each tier measured (the first full plan after
 * the first is timed only when it took over STG_WARM_FULL_MAX quick plans;
 * what follows depends on the times, and is not checked). Values agree
 * with a cpu-only runtime's. */
static void case_quick_tails_measured(void)
{
    struct qt_pair q = qt_open(101, "");
    static const int64_t rows[] = {4096, 4097, 4098, 4099, 4100, 4101};
    static const int quick[] = {0, 1, 1, 1, 1, 0};
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        json_t *tail, *root = qt_runs(&q, rows[k], 1, &tail);
        json_t *staged = json_object_get(root, "staged");
        json_t *last = json_object_get(staged, "last_tail_quick");
        TH_CHECK(json_is_boolean(last) && json_is_true(last) == quick[k],
                 "%lld rows: the last tail %s quick, expected %s", (long long)rows[k],
                 json_is_true(last) ? "is" : "is not", quick[k] ? "quick" : "full");
        if (k + 1 == sizeof rows / sizeof rows[0]) {
            json_t *f = json_object_get(staged, "full_tails"),
                   *qt = json_object_get(staged, "quick_tails");
            json_int_t fp = json_integer_value(json_object_get(f, "plans_timed"));
            json_int_t qp = json_integer_value(json_object_get(qt, "plans_timed"));
            double qplan = json_real_value(json_object_get(qt, "plan_ms"));
            double qrun = json_real_value(json_object_get(qt, "run_ms"));
            TH_CHECK(fp <= 1 && qp == 4 && qrun >= qplan,
                     "full plans timed %lld, quick %lld (expected at most 1 and 4); a quick "
                     "run %.3f ms, a quick plan %.3f",
                     (long long)fp, (long long)qp, qrun, qplan);
        }
        json_decref(root);
    }
    qt_close(&q);
}

/* A quick tail leaves out the modules the quick tail before it gave
 * nothing (stage.c, STG_SKIP_PLANS): rows 17 are planned for the runs the
 * plans before served (placement weighs onednn's compile: cpu, onednn
 * asked); rows 18, within 5/4 of that frontier, on cpu without asking
 * onednn (no reason of its own); rows 40, a frontier twice as large, ask
 * it again. Values agree with a cpu-only runtime's. */
static void case_quick_tails_skip(void)
{
    struct qt_pair q = qt_open_conv(99, "");
    static const struct {
        int64_t rows;
        const char *backend;
        int asked; /* whether m1 carries onednn's reason */
    } steps[] = {{16, "onednn", 0}, {17, "cpu", 1}, {18, "cpu", 0}, {19, "cpu", 0},
                 {40, "cpu", 1}};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        json_t *tail, *root = qt_runs(&q, steps[k].rows, 1, &tail);
        json_t *p = th_placement_of(tail, "m1");
        const char *backend = json_string_value(json_object_get(p, "backend"));
        const char *why =
            json_string_value(json_object_get(json_object_get(p, "reasons"), "onednn"));
        TH_CHECK(backend != NULL && strcmp(backend, steps[k].backend) == 0,
                 "step %zu (%lld rows): m1 on %s, not %s", k, (long long)steps[k].rows,
                 backend ? backend : "-", steps[k].backend);
        if (strcmp(steps[k].backend, "cpu") == 0)
            TH_CHECK((why != NULL) == steps[k].asked,
                     "step %zu (%lld rows): onednn %s asked (its reason: %s)", k,
                     (long long)steps[k].rows, steps[k].asked ? "not" : "was", why ? why : "-");
        json_decref(root);
    }
    qt_close(&q);
}

/* Signatures that come back after eviction (stage.c, STG_GHOSTS): 40 row
 * counts, each once a pass, three passes, on the cpu-only session. Used
 * once, at most 32 tails were kept, and a pass of 40 evicted every tail
 * before it came back: each call planned again, 32 kept after every pass.
 * The evicted signatures coming back raise that limit: all 40 are kept
 * after the second pass and the third. */
static void case_tails_come_back(void)
{
    struct qt_pair q = qt_open(100, "");
    int64_t d[] = {0, 256};
    float *x = calloc(56 * 256, sizeof *x), *y = malloc(56 * 256 * sizeof *y);
    TH_CHECK(x && y, "out of memory");
    for (int pass = 0; pass < 3; pass++) {
        for (int64_t rows = 17; rows < 57; rows++) {
            d[0] = rows;
            run_one(q.sc, "x", x, 2, d, "y", y, 2, d);
        }
        json_t *root = th_explain(q.sc);
        json_int_t kept = json_integer_value(
            json_object_get(json_object_get(root, "staged"), "tails_planned"));
        TH_CHECK(pass == 0 ? kept == 32 : kept == 40, "pass %d: %lld tails kept", pass,
                 (long long)kept);
        json_decref(root);
    }
    free(x);
    free(y);
    qt_close(&q);
}

/* A staged session's tails and the compile cache (compile.c): the first
 * tail is planned in full and its subgraph goes to the cache; a tail for a
 * later signature, planned for the runs the plans before it served (here
 * 61: the products (or convolutions) still go to onednn), compiles without the cache, since
 * writing it out cost more than compiling it; used 8 times, it is planned
 * again in full and stored. Values agree with a cpu-only runtime's. */
static void case_quick_tails_uncached(void)
{
    char line[4200];
    snprintf(line, sizeof line, "cache_dir = %s", th_path(th_tempdir(), "cache"));
    struct qt_pair q = qt_open_conv(98, line);
    /* (rows, runs of it, the cache state of the tail's subgraph after them) */
    static const struct {
        int64_t rows;
        int runs;
        const char *cache;
    } steps[] = {{64, 60, "stored"}, {63, 1, "off"}, {63, 6, "off"}, {63, 1, "stored"}};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        json_t *tail, *root = qt_runs(&q, steps[k].rows, steps[k].runs, &tail);
        const char *backend = json_string_value(
            json_object_get(th_placement_of(tail, "m1"), "backend"));
        TH_CHECK(backend != NULL && strcmp(backend, "onednn") == 0,
                 "step %zu (%lld rows): m1 on %s, not onednn", k, (long long)steps[k].rows,
                 backend ? backend : "-");
        json_t *sg = json_array_get(json_object_get(tail, "subgraphs"), 0);
        const char *cache = json_string_value(json_object_get(sg, "cache"));
        TH_CHECK(cache != NULL && strcmp(cache, steps[k].cache) == 0,
                 "step %zu (%lld rows): the tail's subgraph is '%s' in the cache, not '%s'", k,
                 (long long)steps[k].rows, cache ? cache : "-", steps[k].cache);
        json_decref(root);
    }
    qt_close(&q);
}

/* Winograd's scratchpad grows with the images a layer sees (oneDNN
 * transforms them all at once); runs share one scratchpad of the largest
 * need, so a layer whose scratchpad would pass ODNN_WINO_MAX_SCRATCH (48
 * MiB) runs in slices of the batch that fit, of one size where a divisor
 * of the batch is near (the weights' layout depends on the slice size).
 * 256 channels of 14x14 at batch 512 (about 1 GB of scratchpad): compiled
 * only, the log names the slices; a single image is not sliced (below); one such layer at batch 47 (about 71 MB
 * of scratchpad; 47 is prime, so the last slice overlaps the one before)
 * run against the cpu module. */
static void case_winograd_scratch_cap(void)
{
    struct wino_log one, many;
    memset(&one, 0, sizeof one);
    memset(&many, 0, sizeof many);
    pl_runtime *rt1 = onednn_runtime_with("winograd = auto", &one);
    pl_session_destroy(session_for(rt1, model_wino_batch(256, 1)));
    char isa[64] = "";
    pl_module *m = rt1->modules[pl_runtime_find_module(rt1, "onednn")];
    TH_CHECK_OK(m->api.configure(m->ctx, NULL, 0, isa_sink, isa));
    pl_runtime_destroy(rt1);
    if (strstr(one.text, "node 'conv1': Winograd") == NULL) {
        /* below AVX-512 oneDNN has no Winograd kernel: nothing to slice */
        TH_CHECK(strncmp(isa, "avx512_core", 11) != 0, "batch 1 on %s took no Winograd; log:\n%s",
                 isa, one.text);
        return;
    }
    TH_CHECK(strstr(one.text, "in slices") == NULL, "batch 1 in slices; log:\n%s", one.text);
    pl_runtime *rt2 = onednn_runtime_with("winograd = auto", &many);
    pl_session_destroy(session_for(rt2, model_wino_batch(256, 512)));
    pl_runtime_destroy(rt2);
    TH_CHECK(strstr(many.text, "node 'conv1': Winograd convolution") != NULL &&
                 strstr(many.text, "in slices of") != NULL,
             "batch 512 did not run Winograd in slices; log:\n%s", many.text);
    /* One image cannot be sliced: Winograd whole up to 128 MiB of
     * scratchpad (512 channels of 64x64: about 82 MB), direct above (of
     * 128x128: over 200 MB). */
    static const int64_t sides[2] = {64, 128};
    for (int k = 0; k < 2; k++) {
        struct wino_log whole;
        memset(&whole, 0, sizeof whole);
        pl_runtime *rt = onednn_runtime_with("winograd = auto", &whole);
        pl_session_destroy(session_for(rt, model_wino_one(512, 1, sides[k])));
        pl_runtime_destroy(rt);
        int wino = strstr(whole.text, "node 'conv1': Winograd convolution") != NULL;
        TH_CHECK(strstr(whole.text, "primitives") != NULL && wino == (k == 0) &&
                     strstr(whole.text, "in slices") == NULL,
                 "one image of 512 x %lld x %lld: Winograd %s; log:\n%s", (long long)sides[k],
                 (long long)sides[k], wino ? "taken" : "refused", whole.text);
    }

    static const int64_t batches[] = {47};
    for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
        int64_t xs[] = {batches[bi], 256, 14, 14};
        const char *path = model_wino_one(256, batches[bi], 14);
        size_t n = count(4, xs);
        float *x = malloc(n * sizeof *x), *y[2] = {calloc(n, sizeof(float)), calloc(n, sizeof(float))};
        TH_CHECK(x != NULL && y[0] != NULL && y[1] != NULL, "out of memory");
        for (size_t i = 0; i < n; i++)
            x[i] = sinf((float)i * 0.013f);
        struct wino_log log;
        memset(&log, 0, sizeof log);
        pl_runtime *rts[2] = {onednn_runtime_with("winograd = auto", &log), runtime_with("cpu")};
        for (int r = 0; r < 2; r++) {
            pl_session *sess = session_for(rts[r], path);
            run_one(sess, "x", x, 4, xs, "y", y[r], 4, xs);
            pl_session_destroy(sess);
            pl_runtime_destroy(rts[r]);
        }
        TH_CHECK(strstr(log.text, "node 'conv1': Winograd convolution") != NULL &&
                     strstr(log.text, "in slices of") != NULL,
                 "batch %lld: no slices; log:\n%s", (long long)batches[bi], log.text);
        double scale = 0;
        for (size_t i = 0; i < n; i++)
            scale = fmax(scale, fabs(y[1][i]));
        /* the zoo's measure (a sum of 2304 products through Winograd's
         * transforms is a few millionths of the largest output off) */
        for (size_t i = 0; i < n; i++)
            TH_CHECK(fabs(y[0][i] - y[1][i]) <= 1e-4 * scale,
                     "batch %lld: y[%zu] = %.9g, cpu %.9g (largest %.9g)", (long long)batches[bi],
                     i, y[0][i], y[1][i], scale);
        free(x);
        free(y[0]);
        free(y[1]);
    }
}

/* A column of a [3234, 91] softmax as the subgraph's output (SSDlite's
 * per-class scores): a copy from a strided view into a dense tensor that
 * oneDNN 2.6 gives only its generic reorder (0.25 ms each; 90 a run in
 * torchvision's SSDlite), run on the module's own strided loop instead
 * (the debug log says so); against the cpu module. */
static void case_strided_copy(void)
{
    struct mb m = {.seed = 93};
    int64_t xs[] = {3234, 91}, ys[] = {3234};
    mb_input(&m, "x", 2, xs);
    mb_node(&m, "sm", "Softmax", "\"x\"", "p", "\"axis\":{\"int\":1}");
    mb_i64_scalar(&m, "i", 7);
    mb_node(&m, "col", "Gather", "\"p\",\"i\"", "y", "\"axis\":{\"int\":1}");
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 2, xs, 1, ys, (const char *[]){"sm", "col", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    pl_runtime_destroy(rt);
    TH_CHECK(strstr(log.text, "'y': a strided copy on the module's own loop") != NULL,
             "no strided copy for the column; log:\n%s", log.text);

    /* Whole rows: a Slice dropping the last of 31 rows of 6x2 values per
     * batch (whisper's frames after its STFT), copied a row of 12 values at
     * a time (the dims merged), not a value at a time (5.9 ms for [2, 3001,
     * 201, 2] against 0.85 on cpu). */
    struct mb r = {.seed = 94};
    int64_t rx[] = {2, 31, 6, 2}, ry[] = {2, 30, 6, 2};
    mb_input(&r, "x", 4, rx);
    mb_shape(&r, "starts", 1, (const int64_t[]){0});
    mb_shape(&r, "ends", 1, (const int64_t[]){-1});
    mb_shape(&r, "axes", 1, (const int64_t[]){1});
    mb_node(&r, "relu", "Relu", "\"x\"", "a", "");
    mb_node(&r, "rows", "Slice", "\"a\",\"starts\",\"ends\",\"axes\"", "y", "");
    r.outputs[r.n_outputs++] = "y";
    path = mb_write(&r);
    compare(path, 4, rx, 4, ry, (const char *[]){"relu", "rows", NULL});
    memset(&log, 0, sizeof log);
    rt = onednn_runtime_with(NULL, &log);
    pl_session_destroy(session_for(rt, path));
    pl_runtime_destroy(rt);
    TH_CHECK(strstr(log.text, "a strided copy on the module's own loop") != NULL,
             "no strided copy for the rows; log:\n%s", log.text);
}

/* One weight at three scales, as a detection head runs over a feature
 * pyramid: Winograd's copy of the weights depends on the layer's shapes,
 * so only the scales with at least a quarter of the largest one's outputs
 * take it (32x32 and 16x16 here, which share one layout); the 8x8 one runs
 * direct. Results against the cpu module. */
static void case_winograd_pyramid(void)
{
    struct mb m = {.seed = 91};
    int64_t xs[] = {1, 64, 32, 32}, ws[] = {64, 64, 3, 3}, ys[] = {1, 64, 8, 8};
    mb_input(&m, "x", 4, xs);
    mb_const(&m, "w", 4, ws, NULL, 0.05f);
    static const char *const pad = "\"pads\":{\"ints\":[1,1,1,1]}";
    static const char *const pool =
        "\"kernel_shape\":{\"ints\":[2,2]},\"strides\":{\"ints\":[2,2]}";
    mb_node(&m, "c32", "Conv", "\"x\",\"w\"", "a", pad);
    mb_node(&m, "p16", "MaxPool", "\"a\"", "b", pool);
    mb_node(&m, "c16", "Conv", "\"b\",\"w\"", "c", pad);
    mb_node(&m, "p8", "MaxPool", "\"c\"", "d", pool);
    mb_node(&m, "c8", "Conv", "\"d\",\"w\"", "y", pad);
    m.outputs[m.n_outputs++] = "y";
    const char *path = mb_write(&m);
    compare(path, 4, xs, 4, ys, (const char *[]){"c32", "c16", "c8", NULL});
    struct wino_log log;
    memset(&log, 0, sizeof log);
    pl_runtime *rt = onednn_runtime_with("winograd = auto", &log);
    pl_session_destroy(session_for(rt, path));
    char isa[64] = "";
    pl_module *om = rt->modules[pl_runtime_find_module(rt, "onednn")];
    TH_CHECK_OK(om->api.configure(om->ctx, NULL, 0, isa_sink, isa));
    pl_runtime_destroy(rt);
    if (strncmp(isa, "avx512_core", 11) != 0)
        return; /* below AVX-512 oneDNN has no Winograd kernel */
    TH_CHECK(strstr(log.text, "node 'c8': direct, not Winograd") != NULL &&
                 strstr(log.text, "node 'c8': Winograd") == NULL &&
                 strstr(log.text, "node 'c16': direct, not Winograd") == NULL &&
                 strstr(log.text, "node 'c32': direct, not Winograd") == NULL,
             "the 8x8 scale not (only) direct; log:\n%s", log.text);
    TH_CHECK(strstr(log.text, "node 'c32': Winograd convolution") != NULL &&
                 strstr(log.text, "node 'c16': Winograd convolution") != NULL,
             "the 32x32 and 16x16 scales not Winograd on %s; log:\n%s", isa, log.text);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"conv_residual", case_conv_residual},
        {"conv_transpose_epilogue", case_conv_transpose_epilogue},
        {"pool_plain_sources", case_pool_plain_sources},
        {"concat_to_output", case_concat_to_output},
        {"gelu_tanh", case_gelu_tanh},
        {"gelu_tanh_factored", case_gelu_tanh_factored},
        {"where", case_where},
        {"resize_channels_last", case_resize_channels_last},
        {"conv_of_transposed", case_conv_of_transposed},
        {"residual_in_place", case_residual_in_place},
        {"depthwise_clip", case_depthwise_clip},
        {"prelu", case_prelu},
        {"conv_unit_width", case_conv_unit_width},
        {"concat_strided", case_concat_strided},
        {"matmul_gelu", case_matmul_gelu},
        {"squeeze_excite", case_squeeze_excite},
        {"channel_layernorm", case_channel_layernorm},
        {"layernorm", case_layernorm},
        {"softmax", case_softmax},
        {"pooling", case_pooling},
        {"own_pool", case_own_pool},
        {"own_resize", case_own_resize},
        {"own_tanh", case_own_tanh},
        {"global_avg_two_stage", case_global_avg_two_stage},
        {"shared_weights", case_shared_weights},
        {"winograd_pyramid", case_winograd_pyramid},
        {"strided_copy", case_strided_copy},
        {"own_matmul", case_own_matmul},
        {"no_ref_kernels", case_no_ref_kernels},
        {"concat", case_concat},
        {"dense_concat", case_dense_concat},
        {"binary_post_ops", case_binary_post_ops},
        {"concat_unblock", case_concat_unblock},
        {"grouped_no_gemm", case_grouped_no_gemm},
        {"team_released", case_team_released},
        {"team_one", case_team_one},
        {"team_owner_outlives_module", case_team_owner_outlives_module},
        {"pad_blocked", case_pad_blocked},
        {"ghost_concat", case_ghost_concat},
        {"pointwise_view", case_pointwise_view},
        {"conv1d", case_conv1d},
        {"slice_views", case_slice_views},
        {"concat_in_place", case_concat_in_place},
        {"resize", case_resize},
        {"channel_layernorm_affine", case_channel_layernorm_affine},
        {"small_one_thread", case_small_one_thread},
        {"solo_runs", case_solo_runs},
        {"rnn_team_cache", case_rnn_team_cache},
        {"direct_conv", case_direct_conv},
        {"explain_refusal", case_explain_refusal},
        {"export_import", case_export_import},
        {"decomposed_layernorm", case_decomposed_layernorm},
        {"import_mismatch", case_import_mismatch},
        {"configure", case_configure},
        {"warm_start", case_warm_start},
        {"winograd", case_winograd},
        {"winograd_budget", case_winograd_budget},
        {"winograd_scratch_cap", case_winograd_scratch_cap},
        {"gemv", case_gemv},
        {"gemv_edges", case_gemv_edges},
        {"gemv_placement", case_gemv_placement},
        {"quick_tails", case_quick_tails},
        {"quick_tails_uncached", case_quick_tails_uncached},
        {"quick_tails_skip", case_quick_tails_skip},
        {"quick_tails_measured", case_quick_tails_measured},
        {"tails_come_back", case_tails_come_back},
        {"probe_memo", case_probe_memo},
        {"gemm_warm", case_gemm_warm},
        {"gemm_warm_unload", case_gemm_warm_unload},
        {"gemm_warm_exit", case_gemm_warm_exit},
        {"no_gemm_warm", case_no_gemm_warm},
        {"winograd_narrow", case_winograd_narrow},
        {"narrow_channels_last", case_narrow_channels_last},
        {"tile_pad", case_tile_pad},
        {"bnorm_relu", case_bnorm_relu},
        {"bnorm_affine_layouts", case_bnorm_affine_layouts},
        {"bf16", case_bf16},
        {"bf16_f32_winograd", case_bf16_f32_winograd},
        {"narrow_conv", case_narrow_conv},
        {"dilated_phase", case_dilated_phase},
        {"winograd_ahead", case_winograd_ahead},
        {"attention", case_attention},
        {"fused_attention", case_fused_attention},
        {"safe_softmax", case_safe_softmax},
        {"strided_small_product", case_strided_small_product},
        {"own_broadcast", case_own_broadcast},
        {"views_copied", case_views_copied},
        {"conv_transpose", case_conv_transpose},
        {"big_weights", case_big_weights},
        {"reference_shapes", case_reference_shapes},
        {"dw_fusion", case_dw_fusion},
        {"post_op_chains", case_post_op_chains},
        {"post_op_pairs", case_post_op_pairs},
        {"affine_stack", case_affine_stack},
        {"broadcast_add", case_broadcast_add},
        {"view_unit_dims", case_view_unit_dims},
        {"reduce_squeezed", case_reduce_squeezed},
        {"reduce_middle", case_reduce_middle},
        {"conv3d", case_conv3d},
        {"rnn_refusals", case_rnn_refusals},
        {"rnn_blob", case_rnn_blob},
        {"rnn_blob_attrs", case_rnn_blob_attrs},
        {"unary_ops", case_unary_ops},
        {"swish_patterns", case_swish_patterns},
        {"hswish_explicit", case_hswish_explicit},
        {"denormal_weights", case_denormal_weights},
        {"denormal_big_weight", case_denormal_big_weight},
        {"max_min", case_max_min},
        {"channel_shuffle", case_channel_shuffle},
        {"squeeze_views", case_squeeze_views},
        {"logsoftmax", case_logsoftmax},
        {"reductions", case_reductions},
        {"reduce_as_product", case_reduce_as_product},
        {"global_pool_of_one", case_global_pool_of_one},
    {"reduce_max_infinity", case_reduce_max_infinity},
        {"padded_blocks", case_padded_blocks},
        {"permuted_broadcast", case_permuted_broadcast},
        {"keras_layernorm", case_keras_layernorm},
        {"qdq_pair", case_qdq_pair},
        {"int8_chain", case_int8_chain},
        {"int8_upsample", case_int8_upsample},
        {"int8_amx_old", case_int8_amx_old},
        {"matmul_rows_merged", case_matmul_rows_merged},
        {"rms_norm", case_rms_norm},
        {"merged_broadcast", case_merged_broadcast},
        {"dynamic_int8", case_dynamic_int8},
        {"erf_alone", case_erf_alone},
        {"qdq_shared_primitives", case_qdq_shared_primitives},
        {"instance_norm", case_instance_norm},
        {"expand", case_expand},
        {"dense_copy", case_dense_copy},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 1, "STAGE_DIR");
}
