/* test_model.c — models through the public API: loading the examples,
 * their inferred types and memory plan in a session's description (the
 * plan's figures hold together),
 * errors that name the file and node, and a module's custom operator whose
 * shape function the core calls through the host table. Usage:
 * test_model CASE SOURCE_DIR CUSTOM_MODULE_FILE STAGE_DIR. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness.h"

/* A runtime whose configuration lists only MODULES (may be NULL) and, with
 * WITH_JSON, the staged json format module, which reads the models. */
static pl_runtime *make_runtime_json(const char *modules, bool with_json)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nthreads = 2\n");
    const char *json = th_path(th_arg(2), "libplinth_json.so");
    if (with_json && access(json, R_OK) != 0)
        th_skip("%s is not staged", json);
    if (modules || with_json)
        fprintf(f, "modules = %s%s%s\n", modules ? modules : "",
                modules && with_json ? ", " : "", with_json ? json : "");
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    return rt;
}

static pl_runtime *make_runtime(const char *modules)
{
    return make_runtime_json(modules, true);
}

/* The description of a session made from M (pl_session_describe). */
static json_t *explain_json(pl_model *m)
{
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    char *text = NULL;
    TH_CHECK_OK(pl_session_describe(s, &text));
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    TH_CHECK(root != NULL, "the description is not JSON: %s", err.text);
    pl_string_free(text);
    pl_session_destroy(s);
    return root;
}

/* The dtype and shape of tensor NAME as M's saved graph records them after
 * inference, as "f32[2,9]" into BUF. */
static const char *saved_type(pl_model *m, const char *name, char *buf, size_t size)
{
    const char *path = th_path(th_tempdir(), "saved_type.json");
    TH_CHECK_OK(pl_model_save_json(m, path));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    TH_CHECK(root != NULL, "%s: %s", path, err.text);
    json_t *t;
    size_t i;
    snprintf(buf, size, "(no tensor %s)", name);
    json_array_foreach(json_object_get(root, "tensors"), i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) != 0)
            continue;
        size_t n = (size_t)snprintf(buf, size, "%s[", json_string_value(json_object_get(t, "dtype")));
        json_t *d;
        size_t k;
        json_array_foreach(json_object_get(t, "shape"), k, d)
            n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%lld", k ? "," : "",
                                  (long long)json_integer_value(d));
        snprintf(buf + n, n < size ? size - n : 0, "]");
    }
    json_decref(root);
    return buf;
}

static const char *example(const char *name)
{
    char rel[64];
    snprintf(rel, sizeof rel, "examples/%s/model.json", name);
    return th_path(th_arg(0), rel);
}

static void check_plan_figures(json_t *root)
{
    json_t *dev = json_array_get(json_object_get(json_object_get(root, "memory"), "devices"), 0);
    TH_CHECK(dev != NULL, "no memory.devices[0]");
    json_int_t arena = json_integer_value(json_object_get(dev, "arena_bytes"));
    json_int_t lb = json_integer_value(json_object_get(dev, "lower_bound_bytes"));
    json_int_t naive = json_integer_value(json_object_get(dev, "naive_bytes"));
    TH_CHECK(lb > 0 && arena >= lb && naive >= arena,
             "plan figures out of order: arena %lld, lower bound %lld, naive %lld",
             (long long)arena, (long long)lb, (long long)naive);
}

static void case_explain_mlp(void)
{
    pl_runtime *rt = make_runtime_json(th_arg(2), false);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, example("mlp"), &m));
    /* fc1 + fc1_bias and fc2 + fc2_bias (MatMul + Add) load as Gemms. */
    TH_CHECK(pl_model_node_count(m) == 4, "mlp has %zu nodes, want 4", pl_model_node_count(m));
    json_t *root = explain_json(m);
    json_t *nodes = json_object_get(root, "placement");
    TH_CHECK(json_array_size(nodes) == 4, "the description places %zu nodes",
             json_array_size(nodes));
    TH_CHECK(strcmp(json_string_value(json_object_get(json_array_get(nodes, 0), "op")), "Gemm") == 0,
             "fc1 is not a Gemm");
    json_t *last = json_array_get(nodes, 3);
    TH_CHECK(strcmp(json_string_value(json_object_get(last, "op")), "Softmax") == 0,
             "last node is not Softmax");
    json_t *y = json_array_get(json_object_get(last, "outputs"), 0);
    json_t *shape = json_object_get(y, "shape");
    TH_CHECK(json_array_size(shape) == 2 &&
             json_integer_value(json_array_get(shape, 0)) == 1 &&
             json_integer_value(json_array_get(shape, 1)) == 10,
             "y is not [1,10]");
    check_plan_figures(root);
    json_decref(root);
    char buf[64];
    TH_CHECK(strcmp(saved_type(m, "y", buf, sizeof buf), "f32[1,10]") == 0, "y is %s", buf);
    /* The model keeps the runtime alive past pl_runtime_destroy. */
    pl_runtime_destroy(rt);
    TH_CHECK(pl_model_tensor_count(m) > 0, "model unusable after runtime destroy");
    pl_model_destroy(m);
}

static void case_explain_cnn(void)
{
    pl_runtime *rt = make_runtime_json(th_arg(2), false);
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, example("cnn"), &m));
    json_t *root = explain_json(m);
    check_plan_figures(root);
    json_t *dev = json_array_get(json_object_get(json_object_get(root, "memory"), "devices"), 0);
    TH_CHECK(json_integer_value(json_object_get(dev, "tensors_in_place")) > 0,
             "no tensor planned in place in a CNN with Relu after Conv");
    /* Conv with auto_pad SAME_UPPER keeps 16x16; the depthwise conv too. */
    json_t *nodes = json_object_get(root, "placement");
    bool seen = false;
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        if (strcmp(json_string_value(json_object_get(n, "node")), "dwconv") != 0)
            continue;
        json_t *shape = json_object_get(json_array_get(json_object_get(n, "outputs"), 0), "shape");
        TH_CHECK(json_integer_value(json_array_get(shape, 1)) == 32 &&
                 json_integer_value(json_array_get(shape, 2)) == 16,
                 "dwconv output shape wrong");
        seen = true;
    }
    TH_CHECK(seen, "dwconv not in explain");
    json_decref(root);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static const char *write_model(const char *json)
{
    const char *dir = th_tempdir();
    const char *path = th_path(dir, "model.json");
    FILE *f = fopen(path, "w");
    TH_CHECK(f != NULL, "cannot write %s", path);
    fputs(json, f);
    fclose(f);
    return path;
}

static void case_shape_error_names_node(void)
{
    pl_runtime *rt = make_runtime(NULL);
    const char *path = write_model(
        "{\"format\":\"plinth-graph\",\"version\":1,\"inputs\":[\"a\",\"b\"],"
        "\"outputs\":[\"c\"],\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\","
        "\"shape\":[2,3]},{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[4]}],"
        "\"nodes\":[{\"name\":\"add1\",\"op\":\"Add\",\"inputs\":[\"a\",\"b\"],"
        "\"outputs\":[\"c\"]}]}");
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL && m == NULL, "a non-broadcastable Add loaded");
    TH_CHECK_CONTAINS(pl_status_message(st), path);
    TH_CHECK_CONTAINS(pl_status_message(st), "node 'add1' (Add)");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

/* Four independent branches, each a NonZero's count as the opset lowers
 * it (a bool map cast to f32, kept for later, and to int64, summed at
 * once). Run breadth first, every branch's 32 KiB int64 copy is alive at
 * once (an arena of 200704 bytes); the session orders the units depth
 * first when that holds fewer bytes between them: one copy at a time. */
static void case_order_depth_first(void)
{
    pl_runtime *rt = make_runtime(th_arg(2));
    char json[8192];
    size_t n = (size_t)snprintf(json, sizeof json,
                                "{\"format\":\"plinth-graph\",\"version\":1,\"opset_import\":"
                                "[{\"domain\":\"\",\"version\":13}],\"inputs\":[\"x0\",\"x1\","
                                "\"x2\",\"x3\",\"z\"],\"outputs\":[\"t\",\"s0\",\"s1\",\"s2\","
                                "\"s3\"],\"tensors\":[{\"name\":\"z\",\"dtype\":\"f32\","
                                "\"shape\":[1]}");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(json + n, sizeof json - n,
                              ",{\"name\":\"x%d\",\"dtype\":\"f32\",\"shape\":[4096]}", i);
    n += (size_t)snprintf(json + n, sizeof json - n, "],\"nodes\":[");
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(
            json + n, sizeof json - n,
            "{\"name\":\"gt%d\",\"op\":\"Greater\",\"inputs\":[\"x%d\",\"z\"],\"outputs\":"
            "[\"b%d\"]},{\"name\":\"tof%d\",\"op\":\"Cast\",\"inputs\":[\"b%d\"],\"outputs\":"
            "[\"f%d\"],\"attributes\":{\"to\":{\"int\":1}}},{\"name\":\"toi%d\",\"op\":\"Cast\","
            "\"inputs\":[\"b%d\"],\"outputs\":[\"l%d\"],\"attributes\":{\"to\":{\"int\":7}}},"
            "{\"name\":\"count%d\",\"op\":\"ReduceSum\",\"inputs\":[\"l%d\"],\"outputs\":"
            "[\"s%d\"]},",
            i, i, i, i, i, i, i, i, i, i, i, i);
    snprintf(json + n, sizeof json - n,
             "{\"name\":\"add01\",\"op\":\"Add\",\"inputs\":[\"f0\",\"f1\"],\"outputs\":[\"a01\"]},"
             "{\"name\":\"add23\",\"op\":\"Add\",\"inputs\":[\"f2\",\"f3\"],\"outputs\":[\"a23\"]},"
             "{\"name\":\"add\",\"op\":\"Add\",\"inputs\":[\"a01\",\"a23\"],\"outputs\":[\"t\"]}]}");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, write_model(json), &m));
    json_t *root = explain_json(m);
    check_plan_figures(root);
    json_t *dev = json_array_get(json_object_get(json_object_get(root, "memory"), "devices"), 0);
    json_int_t arena = json_integer_value(json_object_get(dev, "arena_bytes"));
    printf("arena %lld bytes\n", (long long)arena);
    TH_CHECK(arena < 2 * 32768 + 4 * 16384,
             "arena %lld bytes: the branches' int64 copies were alive together", (long long)arena);
    json_decref(root);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static void case_unknown_op(void)
{
    pl_runtime *rt = make_runtime(NULL);
    const char *path = write_model(
        "{\"format\":\"plinth-graph\",\"version\":1,\"inputs\":[\"a\"],"
        "\"outputs\":[\"c\"],\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\","
        "\"shape\":[2,3]}],\"nodes\":[{\"name\":\"r\",\"op\":\"Repeat\","
        "\"domain\":\"com.plinth.test\",\"inputs\":[\"a\"],\"outputs\":[\"c\"]}]}");
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL, "an op nobody registered loaded");
    TH_CHECK_CONTAINS(pl_status_message(st), "node 'r' (Repeat");
    TH_CHECK_CONTAINS(pl_status_message(st), "com.plinth.test");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

/* A graph without outputs is a valid graph JSON document but not a model:
 * refused at load, naming the file. */
static void case_no_outputs(void)
{
    pl_runtime *rt = make_runtime(NULL);
    const char *path = write_model(
        "{\"format\":\"plinth-graph\",\"version\":1,\"inputs\":[\"a\"],"
        "\"outputs\":[],\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\","
        "\"shape\":[2,3]}],\"nodes\":[{\"name\":\"act\",\"op\":\"Relu\","
        "\"inputs\":[\"a\"],\"outputs\":[\"c\"]}]}");
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL && m == NULL, "a model without outputs loaded");
    TH_CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "code %s",
             pl_code_name(pl_status_code(st)));
    TH_CHECK_CONTAINS(pl_status_message(st), path);
    TH_CHECK_CONTAINS(pl_status_message(st), "declares no outputs");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

/* A configuration that leaves the json format module out cannot load a
 * JSON model, and says so in one line naming the file. */
static void case_json_module_missing(void)
{
    pl_runtime *rt = make_runtime_json(NULL, false);
    const char *path = example("mlp");
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL && m == NULL, "a JSON model loaded without the json module");
    TH_CHECK(pl_status_code(st) == PL_CODE_UNSUPPORTED, "code %s",
             pl_code_name(pl_status_code(st)));
    TH_CHECK_CONTAINS(pl_status_message(st), path);
    TH_CHECK_CONTAINS(pl_status_message(st), "the json format module is not loaded");
    TH_CHECK(strchr(pl_status_message(st), '\n') == NULL, "not one line: %s",
             pl_status_message(st));
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

/* A folder holding only the custom-op module, with safe modes. */
static const char *custom_module_dir(void)
{
    const char *dir = th_path(th_tempdir(), "mods");
    th_mkdir(dir, 0755);
    const char *dst = th_path(dir, "libplinth_fx_custom.so");
    FILE *in = fopen(th_arg(1), "rb");
    FILE *out = fopen(dst, "wb");
    TH_CHECK(in && out, "cannot copy %s", th_arg(1));
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    chmod(dst, 0644);
    return dir;
}

static void case_custom_op(void)
{
    pl_runtime *rt = make_runtime(custom_module_dir());
    TH_CHECK(pl_runtime_find_module(rt, "fx_custom") >= 0, "fx_custom did not load");
    const char *path = write_model(
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":13},"
        "{\"domain\":\"com.plinth.test\",\"version\":1}],"
        "\"inputs\":[\"a\"],\"outputs\":[\"d\"],\"tensors\":[{\"name\":\"a\","
        "\"dtype\":\"f32\",\"shape\":[2,3]}],\"nodes\":["
        "{\"name\":\"rep\",\"op\":\"Repeat\",\"domain\":\"com.plinth.test\","
        "\"inputs\":[\"a\"],\"outputs\":[\"c\"],\"attributes\":{\"times\":{\"int\":3},"
        "\"axis\":{\"int\":1}}},"
        "{\"name\":\"act\",\"op\":\"Relu\",\"inputs\":[\"c\"],\"outputs\":[\"d\"]}]}");
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    char buf[64];
    TH_CHECK(strcmp(saved_type(m, "c", buf, sizeof buf), "f32[2,9]") == 0, "c is %s", buf);
    TH_CHECK(strcmp(saved_type(m, "d", buf, sizeof buf), "f32[2,9]") == 0, "d is %s", buf);
    pl_model_destroy(m);

    /* The module's refusal reaches the user with the node's name. */
    path = write_model(
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"com.plinth.test\",\"version\":1}],"
        "\"inputs\":[\"a\"],\"outputs\":[\"c\"],\"tensors\":[{\"name\":\"a\","
        "\"dtype\":\"f32\",\"shape\":[2,3]}],\"nodes\":["
        "{\"name\":\"bad\",\"op\":\"Repeat\",\"domain\":\"com.plinth.test\","
        "\"inputs\":[\"a\"],\"outputs\":[\"c\"],\"attributes\":{\"axis\":{\"int\":5}}}]}");
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL, "an out-of-range axis was accepted");
    TH_CHECK_CONTAINS(pl_status_message(st), "node 'bad' (Repeat, domain 'com.plinth.test')");
    TH_CHECK_CONTAINS(pl_status_message(st), "fx_custom");
    TH_CHECK_CONTAINS(pl_status_message(st), "axis 5 out of range for rank 2");
    pl_status_free(st);
    pl_runtime_destroy(rt);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"explain_mlp", case_explain_mlp},
        {"explain_cnn", case_explain_cnn},
        {"shape_error_names_node", case_shape_error_names_node},
        {"unknown_op", case_unknown_op},
        {"no_outputs", case_no_outputs},
        {"custom_op", case_custom_op},
        {"json_module_missing", case_json_module_missing},
        {"order_depth_first", case_order_depth_first},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 3,
                   "SOURCE_DIR CUSTOM_MODULE_FILE STAGE_DIR");
}
