/* test_graph_json.c — tests of the JSON graph format: the core's writer
 * (core/src/graph_json.c) and the json format module's reader
 * (modules/json), which the tests reach as a model load does, through a
 * runtime that loads the staged module and pl_model_read_graph: a lossless
 * round trip through files, byte-identical re-saves, the JSON of subgraphs
 * that modules receive, one case per malformed model (each with the error
 * code and the message, position or JSON path included, that it must
 * produce), and allocation-failure sweeps over loading, saving and
 * printing. Linked against the core's object library.
 * Usage: test_graph_json CASE STAGE_DIR. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "../failing_allocator.h"
#include "graph.h"
#include "graph_json.h"
#include "model.h"
#include "status.h"

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Fails the test with the status's message when ST is not NULL. */
#define CHECK_OK(expr)                                                       \
    do {                                                                     \
        pl_status *st_ = (expr);                                             \
        if (st_ != NULL) {                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, \
                    #expr, pl_code_name(pl_status_code(st_)),                \
                    pl_status_message(st_));                                 \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static char tmp_root[256];   /* this run's scratch folder */
static const char *stage_dir; /* where the built modules are staged */
static pl_runtime *json_rt;   /* a runtime with the json module, made on first use */

/* Reads the model at PATH as a model load does: through the json format
 * module of a runtime, then the core's validation. */
static void make_runtime(void)
{
    {
        char ini[320], text[600], module[400];
        snprintf(ini, sizeof ini, "%s/backend.ini", tmp_root);
        snprintf(module, sizeof module, "%s/libplinth_json.so", stage_dir);
        if (access(module, R_OK) != 0) {
            fprintf(stderr, "%s is not staged: skipped\n", module);
            exit(77);
        }
        snprintf(text, sizeof text, "[runtime]\nmodules = %s\nthreads = 1\n", module);
        FILE *f = fopen(ini, "w");
        CHECK(f != NULL && fputs(text, f) >= 0 && fclose(f) == 0);
        pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                                .ignore_environment = true};
        pl_status *st = pl_runtime_create(&o, &json_rt);
        if (st != NULL) {
            fprintf(stderr, "cannot make a runtime: %s\n", pl_status_message(st));
            exit(1);
        }
    }
}

static pl_status *load_file(const char *path, pl_graph **out)
{
    return pl_model_read_graph(json_rt, path, out);
}

/* The same for TEXT, written to string.json in the scratch folder first. */
static pl_status *load_text(const char *text, size_t len, pl_graph **out)
{
    char path[320];
    snprintf(path, sizeof path, "%s/string.json", tmp_root);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(text, 1, len, f) == len);
    CHECK(fclose(f) == 0);
    return load_file(path, out);
}

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmp_root, name);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static unsigned char *read_file(const char *path, size_t *out_n)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n >= 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n + 1);
    CHECK(buf != NULL);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    *out_n = (size_t)n;
    return buf;
}

static void check_same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *da = read_file(a, &na), *db = read_file(b, &nb);
    if (na != nb || memcmp(da, db, na) != 0) {
        fprintf(stderr, "%s and %s differ (%zu and %zu bytes)\n", a, b, na, nb);
        exit(1);
    }
    free(da);
    free(db);
}

/* Number of mappings of files whose name contains NAME in this process:
 * a failed load must not leave its sidecar mapped. */
static int mappings_of(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return 0;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, name))
            n++;
    fclose(f);
    return n;
}

/* Writes TEXT with every ' turned into ", so that the cases read easily. */
static void write_json(const char *path, const char *text)
{
    size_t n = strlen(text);
    char *t = malloc(n + 1);
    CHECK(t != NULL);
    for (size_t i = 0; i <= n; i++)
        t[i] = text[i] == '\'' ? '"' : text[i];
    write_file(path, t, n);
    free(t);
}

static void expect_error(pl_status *st, pl_code code, const char *substring)
{
    if (st == NULL) {
        fprintf(stderr, "expected an error (%s) containing \"%s\", got success\n",
                pl_code_name(code), substring);
        exit(1);
    }
    const char *msg = pl_status_message(st);
    if (pl_status_code(st) != code || strstr(msg, substring) == NULL) {
        fprintf(stderr, "expected %s containing \"%s\"\n     got %s: %s\n",
                pl_code_name(code), substring, pl_code_name(pl_status_code(st)),
                msg);
        exit(1);
    }
    printf("ok: %s: %s\n", pl_code_name(code), msg);
    pl_status_free(st);
}

/* ---- the graph every round trip uses ------------------------------------ */

static const char *const string_list[] = {"plain", "\xff\xfe not utf-8",
                                          "caf\xc3\xa9", ""};

/* A graph that exercises every field of the format: all attribute kinds
 * (strings with NUL and invalid UTF-8, non-finite floats), constants of
 * several dtypes including an empty one, dim_params, an unknown rank and an
 * unknown dtype, an absent optional input, a second opset domain. */
static pl_graph *build_graph(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    CHECK_OK(pl_graph_set_opset(g, "", 13));
    CHECK_OK(pl_graph_set_opset(g, "com.example", 2));
    pl_tid x, w, b, e, s, y, z, out;
    CHECK_OK(pl_graph_tensor_get_or_add(g, "x", &x));
    int64_t xd[] = {-1, 3, 4, 4};
    const char *xp[] = {"batch", NULL, NULL, NULL};
    CHECK_OK(pl_graph_set_type(g, x, PL_DTYPE_F32, 4, xd, xp));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "conv1.weight", &w));
    int64_t wd[] = {2, 3, 3, 3};
    CHECK_OK(pl_graph_set_type(g, w, PL_DTYPE_F32, 4, wd, NULL));
    float wdata[54];
    for (int i = 0; i < 54; i++)
        wdata[i] = (float)i * 0.25f - 3.0f;
    CHECK_OK(pl_graph_set_constant(g, w, wdata, sizeof wdata));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "conv1.bias", &b));
    int64_t bd[] = {2};
    CHECK_OK(pl_graph_set_type(g, b, PL_DTYPE_BF16, 1, bd, NULL));
    uint16_t bdata[] = {0x3f80, 0xc000};
    CHECK_OK(pl_graph_set_constant(g, b, bdata, sizeof bdata));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "empty", &e));
    int64_t ed[] = {0, 5};
    CHECK_OK(pl_graph_set_type(g, e, PL_DTYPE_I64, 2, ed, NULL));
    CHECK_OK(pl_graph_set_constant(g, e, NULL, 0));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "scale", &s));
    CHECK_OK(pl_graph_set_type(g, s, PL_DTYPE_F64, 0, NULL, NULL));
    double sdata = -0.0;
    CHECK_OK(pl_graph_set_constant(g, s, &sdata, sizeof sdata));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "y", &y)); /* unknown everything */
    CHECK_OK(pl_graph_tensor_get_or_add(g, "z", &z));
    int64_t zd[] = {-1, 2, -1};
    const char *zp[] = {"batch", NULL, "len"};
    CHECK_OK(pl_graph_set_type(g, z, PL_DTYPE_U8, 3, zd, zp));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "out", &out));
    CHECK_OK(pl_graph_set_type(g, out, (pl_dtype){0, 0, 0}, -1, NULL, NULL));
    CHECK_OK(pl_graph_add_input(g, x));
    CHECK_OK(pl_graph_add_output(g, out));
    CHECK_OK(pl_graph_add_output(g, z));

    pl_nid conv, act, clip;
    const char *ci[] = {"x", "conv1.weight", "conv1.bias"};
    const char *co[] = {"y"};
    CHECK_OK(pl_graph_add_node(g, "conv1", "Conv", "", ci, 3, co, 1, &conv));
    int64_t ks[] = {3, 3};
    CHECK_OK(pl_graph_attr_ints(g, conv, "kernel_shape", ks, 2));
    CHECK_OK(pl_graph_attr_ints(g, conv, "empty_ints", NULL, 0));
    CHECK_OK(pl_graph_attr_int(g, conv, "group", -9223372036854775807LL - 1));
    CHECK_OK(pl_graph_attr_float(g, conv, "alpha", 0.1));
    CHECK_OK(pl_graph_attr_float(g, conv, "tiny", 4.9406564584124654e-324));
    CHECK_OK(pl_graph_attr_float(g, conv, "minus_inf", -INFINITY));
    uint64_t nan_bits = UINT64_C(0xfff000000000dead);
    double odd_nan;
    memcpy(&odd_nan, &nan_bits, sizeof odd_nan);
    double fl[] = {1.5, -0.0, INFINITY, NAN, odd_nan, 1e308, 3.141592653589793};
    CHECK_OK(pl_graph_attr_floats(g, conv, "floats", fl, 7));
    CHECK_OK(pl_graph_attr_string(g, conv, "auto_pad", "SAME_UPPER", 10));
    CHECK_OK(pl_graph_attr_string(g, conv, "blob", "a\0b\xff", 4));
    CHECK_OK(pl_graph_attr_string(g, conv, "empty_string", "", 0));
    CHECK_OK(pl_graph_attr_strings(g, conv, "names", string_list, 4));
    int64_t td[] = {2, 2};
    float tdata[] = {1.0f, -2.5f, NAN, 0.0f};
    CHECK_OK(pl_graph_attr_tensor(g, conv, "value", PL_DTYPE_F32, 2, td, tdata,
                                  sizeof tdata));
    int64_t scalar = 42;
    CHECK_OK(pl_graph_attr_tensor(g, conv, "scalar", PL_DTYPE_I64, 0, NULL,
                                  &scalar, sizeof scalar));
    const char *ai[] = {"y"};
    const char *ao[] = {"z", ""}; /* an optional output left out */
    CHECK_OK(pl_graph_add_node(g, "act", "Custom", "com.example", ai, 1, ao, 2,
                               &act));
    const char *li[] = {"z", "", "scale", "empty"};
    const char *lo[] = {"out"};
    CHECK_OK(pl_graph_add_node(g, NULL, "Clip", "", li, 4, lo, 1, &clip));
    CHECK_OK(pl_graph_validate(g));
    return g;
}

static void check_same_graph(const pl_graph *a, const pl_graph *b);

static void check_same_attr(const pl_attr *a, const pl_attr *b)
{
    CHECK(strcmp(a->name, b->name) == 0);
    CHECK(a->kind == b->kind);
    switch (a->kind) {
    case PL_ATTR_INT:
        CHECK(a->i == b->i);
        break;
    case PL_ATTR_FLOAT:
        CHECK(memcmp(&a->f, &b->f, sizeof a->f) == 0);
        break;
    case PL_ATTR_STRING:
        CHECK(a->s_len == b->s_len);
        CHECK(memcmp(a->s, b->s, a->s_len) == 0);
        break;
    case PL_ATTR_INTS:
        CHECK(a->n == b->n);
        CHECK(a->n == 0 || memcmp(a->ints, b->ints, a->n * sizeof *a->ints) == 0);
        break;
    case PL_ATTR_FLOATS:
        CHECK(a->n == b->n);
        CHECK(a->n == 0 || memcmp(a->floats, b->floats, a->n * sizeof *a->floats) == 0);
        break;
    case PL_ATTR_STRINGS:
        CHECK(a->n == b->n);
        for (size_t i = 0; i < a->n; i++)
            CHECK(strcmp(a->strings[i], b->strings[i]) == 0);
        break;
    case PL_ATTR_TENSOR:
        CHECK(PL_DTYPE_EQ(a->tensor->dtype, b->tensor->dtype));
        CHECK(a->tensor->ndim == b->tensor->ndim);
        CHECK(a->tensor->ndim == 0 ||
              memcmp(a->tensor->dims, b->tensor->dims,
                     (size_t)a->tensor->ndim * sizeof(int64_t)) == 0);
        CHECK(a->tensor->nbytes == b->tensor->nbytes);
        CHECK(memcmp(a->tensor->data, b->tensor->data, a->tensor->nbytes) == 0);
        break;
    case PL_ATTR_GRAPH:
    case PL_ATTR_GRAPHS:
        CHECK(a->n == b->n);
        for (size_t i = 0; i < a->n && i < b->n; i++)
            check_same_graph(a->graphs[i], b->graphs[i]);
        break;
    }
}

/* Field by field, in table order: ids survive the round trip. */
static void check_same_graph(const pl_graph *a, const pl_graph *b)
{
    CHECK(pl_graph_opset_count(a) == pl_graph_opset_count(b));
    for (size_t i = 0; i < pl_graph_opset_count(a); i++) {
        const char *da, *db;
        int64_t va, vb;
        pl_graph_opset_at(a, i, &da, &va);
        pl_graph_opset_at(b, i, &db, &vb);
        CHECK(strcmp(da, db) == 0 && va == vb);
    }
    CHECK(pl_graph_tensor_count(a) == pl_graph_tensor_count(b));
    for (pl_tid t = 0; t < pl_graph_tensor_count(a); t++) {
        const pl_graph_tensor *x = pl_graph_get_tensor(a, t);
        const pl_graph_tensor *y = pl_graph_get_tensor(b, t);
        CHECK(strcmp(x->name, y->name) == 0);
        CHECK(PL_DTYPE_EQ(x->dtype, y->dtype));
        CHECK(x->ndim == y->ndim);
        for (int32_t k = 0; k < x->ndim; k++) {
            CHECK(x->dims[k] == y->dims[k]);
            const char *px = x->dim_params ? x->dim_params[k] : NULL;
            const char *py = y->dim_params ? y->dim_params[k] : NULL;
            CHECK((px == NULL) == (py == NULL));
            CHECK(px == NULL || strcmp(px, py) == 0);
        }
        CHECK((x->data == NULL) == (y->data == NULL));
        CHECK(x->nbytes == y->nbytes);
        CHECK(x->nbytes == 0 || memcmp(x->data, y->data, x->nbytes) == 0);
        CHECK(x->is_input == y->is_input);
        CHECK(x->is_output == y->is_output);
    }
    CHECK(pl_graph_node_count(a) == pl_graph_node_count(b));
    for (pl_nid n = 0; n < pl_graph_node_count(a); n++) {
        const pl_graph_node *x = pl_graph_get_node(a, n);
        const pl_graph_node *y = pl_graph_get_node(b, n);
        CHECK(strcmp(x->name, y->name) == 0);
        CHECK(strcmp(x->op, y->op) == 0);
        CHECK(strcmp(x->domain, y->domain) == 0);
        CHECK(x->n_inputs == y->n_inputs && x->n_outputs == y->n_outputs);
        for (size_t k = 0; k < x->n_inputs; k++)
            CHECK(x->inputs[k] == y->inputs[k]);
        for (size_t k = 0; k < x->n_outputs; k++)
            CHECK(x->outputs[k] == y->outputs[k]);
        CHECK(x->n_attrs == y->n_attrs);
        for (size_t k = 0; k < x->n_attrs; k++)
            check_same_attr(&x->attrs[k], &y->attrs[k]);
    }
    CHECK(pl_graph_input_count(a) == pl_graph_input_count(b));
    for (size_t i = 0; i < pl_graph_input_count(a); i++)
        CHECK(pl_graph_input(a, i) == pl_graph_input(b, i));
    CHECK(pl_graph_output_count(a) == pl_graph_output_count(b));
    for (size_t i = 0; i < pl_graph_output_count(a); i++)
        CHECK(pl_graph_output(a, i) == pl_graph_output(b, i));
}

/* ---- positive cases ------------------------------------------------------ */

static void case_roundtrip(void)
{
    char dir_a[300], dir_b[300], json_a[320], json_b[320], side_a[320], side_b[320];
    path_in(dir_a, sizeof dir_a, "a");
    path_in(dir_b, sizeof dir_b, "b");
    CHECK(mkdir(dir_a, 0700) == 0 && mkdir(dir_b, 0700) == 0);
    snprintf(json_a, sizeof json_a, "%s/model.json", dir_a);
    snprintf(json_b, sizeof json_b, "%s/model.json", dir_b);
    snprintf(side_a, sizeof side_a, "%s/model.weights", dir_a);
    snprintf(side_b, sizeof side_b, "%s/model.weights", dir_b);

    pl_graph *g = build_graph();
    CHECK_OK(pl_graph_save_json(g, json_a, "model.weights"));
    pl_graph *g2;
    CHECK_OK(load_file(json_a, &g2));
    check_same_graph(g, g2);
    CHECK(pl_graph_topo_order(g2) != NULL);
    /* Constants at aligned offsets are borrowed from the mapping. */
    const pl_graph_tensor *w = pl_graph_get_tensor(g2, pl_graph_find_tensor(g2, "conv1.weight"));
    CHECK(w->data_borrowed && (uintptr_t)w->data % 64 == 0);

    CHECK_OK(pl_graph_save_json(g2, json_b, "model.weights"));
    check_same_file(json_a, json_b);
    check_same_file(side_a, side_b);

    /* Saving over the files G2 maps: the old sidecar stays mapped and
     * intact, the new files are the same bytes. */
    CHECK_OK(pl_graph_save_json(g2, json_a, "model.weights"));
    check_same_graph(g, g2);
    check_same_file(json_a, json_b);
    check_same_file(side_a, side_b);

    /* The sidecar layout: 64-byte aligned offsets. */
    size_t n;
    unsigned char *json = read_file(json_a, &n);
    json_error_t err;
    json_t *root = json_loadb((const char *)json, n, 0, &err);
    CHECK(root != NULL);
    json_t *tensors = json_object_get(root, "tensors");
    size_t constants = 0;
    for (size_t i = 0; i < json_array_size(tensors); i++) {
        json_t *d = json_object_get(json_array_get(tensors, i), "data");
        if (d == NULL)
            continue;
        constants++;
        CHECK(json_integer_value(json_object_get(d, "offset")) % 64 == 0);
    }
    CHECK(constants == 4);
    CHECK(strcmp(json_string_value(json_object_get(root, "weights")), "model.weights") == 0);
    json_decref(root);
    free(json);
    pl_graph_destroy(g2);
    pl_graph_destroy(g);
    CHECK(mappings_of("model.weights") == 0);
}

static void case_no_constants(void)
{
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    const char *in[] = {"x"}, *out[] = {"y"};
    pl_tid x, y;
    CHECK_OK(pl_graph_add_node(g, "r", "Relu", NULL, in, 1, out, 1, NULL));
    x = pl_graph_find_tensor(g, "x");
    y = pl_graph_find_tensor(g, "y");
    CHECK_OK(pl_graph_add_input(g, x));
    CHECK_OK(pl_graph_add_output(g, y));
    char path[320], side[320];
    path_in(path, sizeof path, "plain.json");
    path_in(side, sizeof side, "unused.weights");
    CHECK_OK(pl_graph_save_json(g, path, NULL));
    CHECK_OK(pl_graph_save_json(g, path, "unused.weights"));
    CHECK(access(side, F_OK) != 0); /* no constant: no sidecar */
    pl_graph *g2;
    CHECK_OK(load_file(path, &g2));
    check_same_graph(g, g2);
    pl_graph_destroy(g2);
    pl_graph_destroy(g);
}

static void case_load_string(void)
{
    const char *text =
        "{\"format\": \"plinth-graph\", \"version\": 1, \"inputs\": [\"x\"],"
        " \"outputs\": [\"y\"], \"tensors\": [{\"name\": \"x\", \"dtype\": "
        "\"i32\", \"shape\": [2]}], \"nodes\": [{\"op\": \"Neg\", \"inputs\": "
        "[\"x\"], \"outputs\": [\"y\"], \"attributes\": {\"v\": {\"tensor\": "
        "{\"dtype\": \"i8\", \"shape\": [3], \"values\": [-128, 0, 127]}}, "
        "\"b\": {\"tensor\": {\"dtype\": \"bool\", \"shape\": [2], \"values\": "
        "[true, 0]}}}}]}";
    pl_graph *g;
    CHECK_OK(load_text(text, strlen(text), &g));
    const pl_graph_node *n = pl_graph_get_node(g, 0);
    CHECK(strcmp(n->name, "Neg_0") == 0); /* a generated name */
    const pl_attr *v = pl_graph_node_attr(n, "v");
    CHECK(v && v->kind == PL_ATTR_TENSOR && v->tensor->nbytes == 3);
    CHECK(((int8_t *)v->tensor->data)[0] == -128 && ((int8_t *)v->tensor->data)[2] == 127);
    const pl_attr *b = pl_graph_node_attr(n, "b");
    CHECK(((uint8_t *)b->tensor->data)[0] == 1 && ((uint8_t *)b->tensor->data)[1] == 0);
    pl_graph_destroy(g);

    /* One tensor listed twice as a model output (ONNX allows it; plinth
     * convert writes such a model's list as it is). */
    const char *twice =
        "{\"format\": \"plinth-graph\", \"version\": 1, \"inputs\": [\"x\"],"
        " \"outputs\": [\"y\", \"x\", \"y\"], \"tensors\": [{\"name\": \"x\", "
        "\"dtype\": \"f32\", \"shape\": [2]}], \"nodes\": [{\"op\": \"Neg\", "
        "\"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}";
    CHECK_OK(load_text(twice, strlen(twice), &g));
    CHECK(pl_graph_output_count(g) == 3 && pl_graph_output(g, 0) == pl_graph_output(g, 2));
    pl_graph_destroy(g);

    /* A sidecar is looked up next to the file, and checked even when no
     * constant uses it. */
    const char *with_weights =
        "{\"format\": \"plinth-graph\", \"version\": 1, \"weights\": \"w.bin\","
        " \"inputs\": [], \"outputs\": [], \"tensors\": [], \"nodes\": []}";
    expect_error(load_text(with_weights, strlen(with_weights), &g), PL_CODE_NOT_FOUND,
                 "string.json: weights: sidecar 'w.bin': No such file or directory");
    CHECK(g == NULL);
    /* Positions in short texts too. */
    expect_error(load_text("{\n  \"format\": }", 15, &g),
                 PL_CODE_INVALID_ARGUMENT, "string.json:2:");
}

/* Bodies (GRAPH and GRAPHS attributes) load, link their outer-scope
 * references as captures of their node, nest, and come back identical
 * through the writer. */
static void case_bodies(void)
{
    const char *text =
        "{\"format\": \"plinth-graph\", \"version\": 1, \"inputs\": [\"x\", \"c\"],"
        " \"outputs\": [\"y\"], \"tensors\": [{\"name\": \"x\", \"dtype\": \"f32\","
        " \"shape\": [2]}, {\"name\": \"c\", \"dtype\": \"bool\", \"shape\": []}],"
        " \"nodes\": [{\"name\": \"pick\", \"op\": \"If\", \"inputs\": [\"c\"], \"outputs\": [\"y\"],"
        " \"attributes\": {\"then_branch\": {\"graph\": {\"inputs\": [], \"outputs\": [\"t\"],"
        " \"nodes\": [{\"name\": \"inner\", \"op\": \"If\", \"inputs\": [\"c\"],"
        " \"outputs\": [\"t\"], \"attributes\": {\"then_branch\": {\"graph\": {\"inputs\": [],"
        " \"outputs\": [\"u\"], \"nodes\": [{\"name\": \"deep\", \"op\": \"Abs\","
        " \"inputs\": [\"nx\"], \"outputs\": [\"u\"]}]}},"
        " \"else_branch\": {\"graph\": {\"inputs\": [], \"outputs\": [\"x\"],"
        " \"nodes\": []}}}}]}},"
        " \"else_branch\": {\"graphs\": [{\"inputs\": [], \"outputs\": [\"x\"],"
        " \"nodes\": []}]}}},"
        " {\"name\": \"w\", \"op\": \"Neg\", \"inputs\": [\"x\"], \"outputs\": [\"nx\"]}]}";
    pl_graph *g;
    CHECK_OK(load_text(text, strlen(text), &g));
    /* 'pick' reads nx (two scopes down), x (an output of two bodies) and c
     * (inner's input) besides its formal input c; listed first, it is
     * ordered after the node making nx. */
    const pl_graph_node *n = pl_graph_get_node(g, 0);
    CHECK(n->n_formal_inputs == 1 && n->n_inputs == 4); /* + nx, x and c (inner's input) */
    bool has_nx = false, has_x = false;
    for (size_t i = n->n_formal_inputs; i < n->n_inputs; i++) {
        const char *name = pl_graph_get_tensor(g, n->inputs[i])->name;
        has_nx = has_nx || strcmp(name, "nx") == 0;
        has_x = has_x || strcmp(name, "x") == 0;
    }
    CHECK(has_nx && has_x);
    const pl_attr *then_a = pl_graph_node_attr(n, "then_branch");
    CHECK(then_a && then_a->kind == PL_ATTR_GRAPH && then_a->n == 1);
    const pl_graph *body = then_a->graphs[0];
    pl_tid nx = pl_graph_find_tensor(body, "nx");
    CHECK(nx != PL_TID_NONE && pl_graph_get_tensor(body, nx)->is_outer);
    const pl_attr *else_a = pl_graph_node_attr(n, "else_branch");
    CHECK(else_a && else_a->kind == PL_ATTR_GRAPHS && else_a->n == 1);
    const pl_nid *topo = pl_graph_topo_order(g);
    CHECK(topo && topo[0] == 1 && topo[1] == 0); /* the capture orders w first */
    char *out = NULL;
    CHECK_OK(pl_graph_to_json(g, NULL, 0, &out));
    pl_graph *back;
    CHECK_OK(load_text(out, strlen(out), &back));
    check_same_graph(g, back);
    char *again = NULL;
    CHECK_OK(pl_graph_to_json(back, NULL, 0, &again));
    CHECK(strcmp(out, again) == 0);
    pl_free(out);
    pl_free(again);
    pl_graph_destroy(back);
    pl_graph_destroy(g);
}

static void case_unaligned_offset(void)
{
    char side[320], json[320];
    path_in(side, sizeof side, "model.weights");
    path_in(json, sizeof json, "model.json");
    unsigned char bytes[80] = {0};
    float v[2] = {1.25f, -7.5f};
    memcpy(bytes + 3, v, sizeof v);   /* misaligned */
    memcpy(bytes + 64, v, sizeof v);  /* aligned */
    write_file(side, bytes, sizeof bytes);
    write_json(json,
               "{'format':'plinth-graph','version':1,'weights':'model.weights',"
               "'inputs':[],'outputs':['a','b'],'tensors':["
               "{'name':'a','dtype':'f32','shape':[2],'data':{'offset':3,'length':8}},"
               "{'name':'b','dtype':'f32','shape':[2],'data':{'offset':64,'length':8}}],"
               "'nodes':[]}");
    pl_graph *g;
    CHECK_OK(load_file(json, &g));
    const pl_graph_tensor *a = pl_graph_get_tensor(g, 0), *b = pl_graph_get_tensor(g, 1);
    CHECK(!a->data_borrowed && memcmp(a->data, v, sizeof v) == 0);
    CHECK(b->data_borrowed && memcmp(b->data, v, sizeof v) == 0);
    pl_graph_destroy(g);
    CHECK(mappings_of("model.weights") == 0);
}

/* A constant keeps the dim_params the JSON gives it (the builder does not
 * retype a tensor declared already), and an empty constant in an empty
 * sidecar loads (the core maps nothing for an empty file). */
static void case_constant_types(void)
{
    char side[320], json[320], empty[320], json2[320];
    path_in(side, sizeof side, "model.weights");
    path_in(json, sizeof json, "model.json");
    float v[2] = {1.5f, -2.0f};
    write_file(side, v, sizeof v);
    write_json(json,
               "{'format':'plinth-graph','version':1,'weights':'model.weights',"
               "'inputs':[],'outputs':['w'],'tensors':[{'name':'w','dtype':'f32',"
               "'shape':[2],'dim_params':['n'],'data':{'offset':0,'length':8}}],"
               "'nodes':[]}");
    pl_graph *g;
    CHECK_OK(load_file(json, &g));
    const pl_graph_tensor *w = pl_graph_get_tensor(g, 0);
    CHECK(w->dim_params != NULL && strcmp(w->dim_params[0], "n") == 0);
    CHECK(w->nbytes == 8 && memcmp(w->data, v, 8) == 0);
    pl_graph_destroy(g);

    path_in(empty, sizeof empty, "empty.weights");
    path_in(json2, sizeof json2, "empty.json");
    write_file(empty, "", 0);
    write_json(json2,
               "{'format':'plinth-graph','version':1,'weights':'empty.weights',"
               "'inputs':[],'outputs':['e'],'tensors':[{'name':'e','dtype':'i64',"
               "'shape':[0,3],'data':{'offset':0,'length':0}}],'nodes':[]}");
    CHECK_OK(load_file(json2, &g));
    const pl_graph_tensor *e = pl_graph_get_tensor(g, 0);
    CHECK(e->data != NULL && e->nbytes == 0);
    pl_graph_destroy(g);
}

/* Damaged texts: a saved model with bytes replaced, inserted or cut off,
 * thousands of times (a fixed seed). Each load either succeeds or fails
 * with a one-line message naming the file, never with a crash, a hang or
 * (under ASan) a leak, and never leaves the sidecar mapped. */
static void case_damaged_texts(void)
{
    char json[320], damaged[320];
    path_in(json, sizeof json, "model.json");
    path_in(damaged, sizeof damaged, "damaged.json");
    pl_graph *src = build_graph();
    CHECK_OK(pl_graph_save_json(src, json, "model.weights"));
    pl_graph_destroy(src);
    size_t n;
    unsigned char *text = read_file(json, &n);
    unsigned char *buf = malloc(n + 16);
    CHECK(buf != NULL);
    static const char pieces[] = "{}[]\",:0-9.eE tnfux\\\xc3\xff";
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int loaded = 0, refused = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(buf, text, n);
        size_t len = n;
        int edits = 1 + (int)(seed % 3);
        for (int k = 0; k < edits; k++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            size_t at = (size_t)(seed >> 33) % len;
            char c = pieces[(seed >> 20) % (sizeof pieces - 1)];
            switch ((seed >> 8) % 4) {
            case 0: /* replace */
                buf[at] = (unsigned char)c;
                break;
            case 1: /* insert */
                memmove(buf + at + 1, buf + at, len - at);
                buf[at] = (unsigned char)c;
                len++;
                break;
            case 2: /* delete */
                memmove(buf + at, buf + at + 1, len - at - 1);
                len--;
                break;
            default: /* cut */
                len = at + 1;
                break;
            }
            if (len + 4 > n + 16)
                break;
        }
        write_file(damaged, buf, len);
        pl_graph *g = (pl_graph *)1;
        pl_status *st = load_file(damaged, &g);
        if (st == NULL) {
            CHECK(g != NULL);
            pl_graph_destroy(g);
            loaded++;
            continue;
        }
        CHECK(g == NULL);
        const char *msg = pl_status_message(st);
        if (strncmp(msg, damaged, strlen(damaged)) != 0 || strchr(msg, '\n') != NULL ||
            pl_status_code(st) == PL_CODE_INTERNAL) {
            fprintf(stderr, "round %d: bad refusal: %s: %s\n", round,
                    pl_code_name(pl_status_code(st)), msg);
            exit(1);
        }
        pl_status_free(st);
        refused++;
        CHECK(mappings_of("model.weights") == 0);
    }
    printf("%d damaged texts loaded, %d refused\n", loaded, refused);
    CHECK(refused > 1000);
    free(buf);
    free(text);
}

static void case_sidecar_link_inside(void)
{
    char sub[320], target[320], link[320], json[320];
    path_in(sub, sizeof sub, "data");
    CHECK(mkdir(sub, 0700) == 0);
    path_in(target, sizeof target, "data/real.bin");
    path_in(link, sizeof link, "model.weights");
    path_in(json, sizeof json, "model.json");
    float v[2] = {1.0f, 2.0f};
    write_file(target, v, sizeof v);
    CHECK(symlink("data/real.bin", link) == 0);
    write_json(json,
               "{'format':'plinth-graph','version':1,'weights':'model.weights',"
               "'inputs':[],'outputs':['a'],'tensors':[{'name':'a','dtype':'f32',"
               "'shape':[2],'data':{'offset':0,'length':8}}],'nodes':[]}");
    pl_graph *g;
    CHECK_OK(load_file(json, &g));
    pl_graph_destroy(g);
    /* A path into a subfolder is fine too. */
    write_json(json,
               "{'format':'plinth-graph','version':1,'weights':'data/real.bin',"
               "'inputs':[],'outputs':['a'],'tensors':[{'name':'a','dtype':'f32',"
               "'shape':[2],'data':{'offset':0,'length':8}}],'nodes':[]}");
    CHECK_OK(load_file(json, &g));
    pl_graph_destroy(g);
}

/* A parsed pl_graph_to_json text; checks the fixed header fields. */
static json_t *to_json_parsed(const pl_graph *g, const pl_nid *nodes, size_t n)
{
    char *text;
    CHECK_OK(pl_graph_to_json(g, nodes, n, &text));
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (root == NULL) {
        fprintf(stderr, "to_json gave bad JSON: %s\n%s\n", err.text, text);
        exit(1);
    }
    pl_free(text);
    CHECK(strcmp(json_string_value(json_object_get(root, "format")), "plinth-graph") == 0);
    CHECK(json_integer_value(json_object_get(root, "version")) == 1);
    CHECK(json_object_get(root, "weights") == NULL);
    return root;
}

/* "a,b,c" from a JSON array of strings, into BUF. */
static const char *joined(json_t *arr, char *buf, size_t size)
{
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? "," : "",
                 json_string_value(json_array_get(arr, i)));
    }
    return buf;
}

static const char *tensor_names(json_t *root, char *buf, size_t size)
{
    json_t *tensors = json_object_get(root, "tensors");
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(tensors); i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "%s%s", i ? "," : "",
                 json_string_value(json_object_get(json_array_get(tensors, i), "name")));
    }
    return buf;
}

static void case_to_json_subgraph(void)
{
    /* x -A-> t1 -B(t1, w)-> t2 -C-> y ; t1 -D-> y2 ; outputs y, y2 */
    pl_graph *g;
    CHECK_OK(pl_graph_create(&g));
    CHECK_OK(pl_graph_set_opset(g, "", 17));
    pl_tid x, w;
    CHECK_OK(pl_graph_tensor_get_or_add(g, "x", &x));
    int64_t d[] = {4};
    CHECK_OK(pl_graph_set_type(g, x, PL_DTYPE_F32, 1, d, NULL));
    CHECK_OK(pl_graph_tensor_get_or_add(g, "w", &w));
    CHECK_OK(pl_graph_set_type(g, w, PL_DTYPE_F32, 1, d, NULL));
    float wv[4] = {1, 2, 3, 4};
    CHECK_OK(pl_graph_set_constant(g, w, wv, sizeof wv));
    const char *a_in[] = {"x"}, *a_out[] = {"t1"};
    const char *b_in[] = {"t1", "w"}, *b_out[] = {"t2"};
    const char *c_in[] = {"t2"}, *c_out[] = {"y"};
    const char *d_in[] = {"t1"}, *d_out[] = {"y2"};
    pl_nid A, B, C, D;
    CHECK_OK(pl_graph_add_node(g, "A", "Relu", "", a_in, 1, a_out, 1, &A));
    CHECK_OK(pl_graph_add_node(g, "B", "Add", "", b_in, 2, b_out, 1, &B));
    CHECK_OK(pl_graph_add_node(g, "C", "Relu", "", c_in, 1, c_out, 1, &C));
    CHECK_OK(pl_graph_add_node(g, "D", "Neg", "", d_in, 1, d_out, 1, &D));
    CHECK_OK(pl_graph_add_input(g, x));
    CHECK_OK(pl_graph_add_output(g, pl_graph_find_tensor(g, "y")));
    CHECK_OK(pl_graph_add_output(g, pl_graph_find_tensor(g, "y2")));
    CHECK_OK(pl_graph_validate(g));
    char buf[256];

    pl_nid only_b[] = {B};
    json_t *r = to_json_parsed(g, only_b, 1);
    CHECK(strcmp(joined(json_object_get(r, "inputs"), buf, sizeof buf), "t1") == 0);
    CHECK(strcmp(joined(json_object_get(r, "outputs"), buf, sizeof buf), "t2") == 0);
    CHECK(strcmp(tensor_names(r, buf, sizeof buf), "w,t1,t2") == 0);
    json_t *jw = json_array_get(json_object_get(r, "tensors"), 0);
    json_t *data = json_object_get(jw, "data");
    CHECK(data != NULL && json_object_get(data, "offset") == NULL);
    CHECK(json_integer_value(json_object_get(data, "length")) == 16);
    CHECK(json_array_size(json_object_get(r, "nodes")) == 1);
    CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(r, "opset_import"), 0),
                                             "version")) == 17);
    json_decref(r);

    pl_nid ab[] = {A, B};
    r = to_json_parsed(g, ab, 2);
    CHECK(strcmp(joined(json_object_get(r, "inputs"), buf, sizeof buf), "x") == 0);
    CHECK(strcmp(joined(json_object_get(r, "outputs"), buf, sizeof buf), "t1,t2") == 0);
    json_decref(r);

    pl_nid cd[] = {C, D};
    r = to_json_parsed(g, cd, 2);
    CHECK(strcmp(joined(json_object_get(r, "inputs"), buf, sizeof buf), "t2,t1") == 0);
    CHECK(strcmp(joined(json_object_get(r, "outputs"), buf, sizeof buf), "y,y2") == 0);
    json_decref(r);

    /* The whole graph: its own inputs and outputs, every tensor. */
    r = to_json_parsed(g, NULL, 0);
    CHECK(strcmp(joined(json_object_get(r, "inputs"), buf, sizeof buf), "x") == 0);
    CHECK(strcmp(joined(json_object_get(r, "outputs"), buf, sizeof buf), "y,y2") == 0);
    CHECK(strcmp(tensor_names(r, buf, sizeof buf), "x,w,t1,t2,y,y2") == 0);
    json_decref(r);

    /* Such a text names no sidecar, so it cannot be loaded as a model. */
    char *text;
    CHECK_OK(pl_graph_to_json(g, NULL, 0, &text));
    pl_graph *g2;
    expect_error(load_text(text, strlen(text), &g2),
                 PL_CODE_INVALID_ARGUMENT,
                 "string.json: tensors[1] ('w').data: missing required key 'offset'");
    pl_free(text);

    pl_nid bad[] = {B, 99};
    expect_error(pl_graph_to_json(g, bad, 2, &text), PL_CODE_INVALID_ARGUMENT,
                 "node id 99 is out of range");
    CHECK(text == NULL);
    pl_nid twice[] = {B, B};
    expect_error(pl_graph_to_json(g, twice, 2, &text), PL_CODE_INVALID_ARGUMENT,
                 "node 1 ('B') is listed twice");
    pl_graph_destroy(g);
}

static void case_save_errors(void)
{
    pl_graph *g = build_graph();
    char path[320];
    path_in(path, sizeof path, "m.json");
    expect_error(pl_graph_save_json(g, path, NULL), PL_CODE_INVALID_ARGUMENT,
                 "the sidecar name '(null)' is not a plain file name");
    expect_error(pl_graph_save_json(g, path, "../w"), PL_CODE_INVALID_ARGUMENT,
                 "is not a plain file name");
    expect_error(pl_graph_save_json(g, path, "m.json"), PL_CODE_INVALID_ARGUMENT,
                 "the sidecar cannot have the JSON file's own name");
    char missing[320];
    path_in(missing, sizeof missing, "no/such/dir/m.json");
    expect_error(pl_graph_save_json(g, missing, "w.bin"), PL_CODE_NOT_FOUND,
                 "no/such/dir/w.bin: cannot create");
    /* A name JSON cannot hold. */
    pl_graph *h;
    CHECK_OK(pl_graph_create(&h));
    pl_tid t;
    CHECK_OK(pl_graph_tensor_get_or_add(h, "bad\xff", &t));
    expect_error(pl_graph_save_json(h, path, NULL), PL_CODE_INVALID_ARGUMENT,
                 "tensor 0's name is not valid UTF-8");
    pl_graph_destroy(h);
    pl_graph_destroy(g);
}

/* ---- allocation-failure sweeps ------------------------------------------- */

/* The core leaves jansson's allocator alone; an application may set it, and
 * this test, as the application, sends it through the sweep's failing
 * allocator too, so that each jansson allocation fails in turn as well and
 * the parser's and writer's out-of-memory paths are swept with the core's. */
static void *sweep_json_malloc(size_t n)
{
    pl_allocator a = pl_failing_allocator_value(&pl_sweep_fa);
    void *p = NULL;
    return a.ctl(a.self, PL_ALLOCATOR_MALLOC, n ? n : 1, &p) ? p : NULL;
}

static void sweep_json_free(void *p)
{
    if (p == NULL)
        return;
    pl_allocator a = pl_failing_allocator_value(&pl_sweep_fa);
    a.ctl(a.self, PL_ALLOCATOR_FREE, 0, &p);
}

static void sweep_jansson_too(void)
{
    pl_sweep_fail_at(0);
    json_set_alloc_funcs(sweep_json_malloc, sweep_json_free);
}

static void case_alloc_sweep_load(void)
{
    sweep_jansson_too();
    char json[320];
    path_in(json, sizeof json, "model.json");
    pl_graph *src = build_graph();
    CHECK_OK(pl_graph_save_json(src, json, "model.weights"));
    pl_graph_destroy(src);
    long n;
    for (n = 1; n < 1000000; n++) {
        pl_graph *g = (pl_graph *)1;
        pl_sweep_fail_at(n);
        pl_status *st = load_file(json, &g);
        pl_sweep_fail_at(0);
        if (st == NULL) {
            CHECK(g != NULL);
            pl_graph_destroy(g);
            break;
        }
        CHECK(g == NULL);
        if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
            fprintf(stderr, "allocation %ld failed: got %s: %s\n", n,
                    pl_code_name(pl_status_code(st)), pl_status_message(st));
            exit(1);
        }
        pl_status_free(st);
        CHECK(mappings_of("model.weights") == 0);
    }
    printf("load succeeded once %ld allocations were allowed\n", n);
    CHECK(n > 20);
}

static void case_alloc_sweep_save(void)
{
    sweep_jansson_too();
    pl_graph *g = build_graph();
    char json[320], side[320];
    path_in(json, sizeof json, "model.json");
    path_in(side, sizeof side, "model.weights");
    long n;
    for (n = 1; n < 1000000; n++) {
        pl_sweep_fail_at(n);
        pl_status *st = pl_graph_save_json(g, json, "model.weights");
        pl_sweep_fail_at(0);
        if (st == NULL)
            break;
        if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
            fprintf(stderr, "allocation %ld failed: got %s: %s\n", n,
                    pl_code_name(pl_status_code(st)), pl_status_message(st));
            exit(1);
        }
        pl_status_free(st);
        CHECK(access(json, F_OK) != 0); /* nothing half-written */
    }
    printf("save succeeded once %ld allocations were allowed\n", n);
    pl_graph *g2;
    CHECK_OK(load_file(json, &g2));
    check_same_graph(g, g2);
    pl_graph_destroy(g2);
    pl_graph_destroy(g);
}

static void case_alloc_sweep_to_json(void)
{
    sweep_jansson_too();
    pl_graph *g = build_graph();
    pl_nid sub[] = {1, 2};
    for (int pass = 0; pass < 2; pass++) {
        long n;
        for (n = 1; n < 1000000; n++) {
            char *text = (char *)1;
            pl_sweep_fail_at(n);
            pl_status *st = pass ? pl_graph_to_json(g, sub, 2, &text)
                                 : pl_graph_to_json(g, NULL, 0, &text);
            pl_sweep_fail_at(0);
            if (st == NULL) {
                pl_free(text);
                break;
            }
            CHECK(text == NULL);
            CHECK(pl_status_code(st) == PL_CODE_OUT_OF_MEMORY);
            pl_status_free(st);
        }
        printf("to_json (pass %d) succeeded once %ld allocations were allowed\n",
               pass, n);
    }
    pl_graph_destroy(g);
}

/* ---- malformed models ---------------------------------------------------- */

/* The pieces most cases share ('' become ""). */
#define HDR "'format':'plinth-graph','version':1,"
#define W "'weights':'model.weights',"
#define TX "{'name':'x','dtype':'f32','shape':[2]}"
#define TW "{'name':'w','dtype':'f32','shape':[2],'data':{'offset':0,'length':8}}"
#define ADD(ins, attrs) \
    "{'name':'add','op':'Add','inputs':[" ins "],'outputs':['y']" attrs "}"
#define MODEL(tensors, nodes) \
    "{" HDR W "'inputs':['x'],'outputs':['y'],'tensors':[" tensors "],'nodes':[" nodes "]}"
#define ATTR(body) MODEL(TX "," TW, ADD("'x','w'", ",'attributes':{" body "}"))

enum setup {
    SETUP_NONE = 0,
    SETUP_LINK_OUT,   /* model.weights is a link to a file outside */
    SETUP_DIR,        /* a folder 'sub' next to the model */
    SETUP_BIG_FILE,   /* model.json is a sparse file over the size limit */
    SETUP_DEEP        /* the text is generated: nested arrays */
};

typedef struct bad_case {
    const char *name;
    const char *json;
    pl_code code;
    const char *message;
    enum setup setup;
} bad_case;

static const bad_case bad_cases[] = {
    {"truncated", "{" HDR "'inputs':[", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:47 (byte 47): premature end of input: the object that starts "
     "at 1:1 is not closed", SETUP_NONE},
    {"empty_file", "", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:0 (byte 0): no JSON object (the text is empty)", SETUP_NONE},
    {"bad_token", "{" HDR "'inputs': [x]}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:49 (byte 48): invalid token near 'x'", SETUP_NONE},
    {"trailing_garbage", MODEL(TX "," TW, ADD("'x','w'", "")) " 1",
     PL_CODE_INVALID_ARGUMENT,
     "model.json:1:288 (byte 287): end of file expected after the top-level "
     "object", SETUP_NONE},
    {"two_objects", "{} {}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:4 (byte 3): end of file expected after the top-level object",
     SETUP_NONE},
    {"unclosed_string", "{'format", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:8 (byte 8): premature end of input inside a string: the "
     "object that starts at 1:1 is not closed", SETUP_NONE},
    {"bad_token_line4", "{\n  'format': 'plinth-graph',\n  'version': 1,\n"
     "  'inputs': [x]\n}", PL_CODE_INVALID_ARGUMENT,
     "model.json:4:14 (byte 59): invalid token near 'x'", SETUP_NONE},
    {"number_too_long", "{'version': 1" "0000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000"
     "0000000000000000000000000000000000000000000000000000000000000000000000000"
     "00000000000000000000}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:269 (byte 268): a number or word longer than 256 characters",
     SETUP_NONE},
    {"nul_in_string", "{" HDR "'inputs':['a\\u0000b']}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:57 (byte 56): \\u0000 is not allowed without JSON_ALLOW_NUL", SETUP_NONE},
    {"bad_utf8", "{" HDR "'inputs':['caf\xc3']}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:52 (byte 51): unable to decode byte 0xc3", SETUP_NONE},
    {"top_not_object", "[1, 2]", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:1 (byte 0): '{' expected: a model is a JSON object", SETUP_NONE},
    {"top_scalar", "'just a string'", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:1 (byte 0): '{' expected: a model is a JSON object", SETUP_NONE},
    {"wrong_format", "{'format':'onnx','version':1}", PL_CODE_INVALID_ARGUMENT,
     "model.json: format: 'onnx' is not \"plinth-graph\"", SETUP_NONE},
    {"bad_version", "{'format':'plinth-graph','version':2}", PL_CODE_UNSUPPORTED,
     "model.json: version: version 2 is not supported (this reader knows version 1)", SETUP_NONE},
    {"version_type", "{'format':'plinth-graph','version':'1'}", PL_CODE_INVALID_ARGUMENT,
     "model.json: version: expected an integer, got a string", SETUP_NONE},
    {"missing_format", "{'version':1}", PL_CODE_INVALID_ARGUMENT,
     "model.json: missing required key 'format'", SETUP_NONE},
    {"missing_nodes", "{" HDR "'inputs':[],'outputs':[],'tensors':[]}",
     PL_CODE_INVALID_ARGUMENT, "model.json: missing required key 'nodes'", SETUP_NONE},
    {"unknown_top_key", "{" HDR "'wieghts':'w.bin','inputs':[],'outputs':[],"
     "'tensors':[],'nodes':[]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: unknown key 'wieghts'", SETUP_NONE},
    {"tensors_not_array", "{" HDR "'inputs':[],'outputs':[],'tensors':{},'nodes':[]}",
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors: expected an array of tensor objects, got an object", SETUP_NONE},
    {"tensor_not_object", MODEL(TX ",3", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1]: expected an object, got an integer", SETUP_NONE},
    {"tensor_missing_name", MODEL("{'dtype':'f32'}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0]: missing required key 'name'", SETUP_NONE},
    {"tensor_empty_name", MODEL("{'name':''}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0].name: must not be empty", SETUP_NONE},
    {"tensor_unknown_key", MODEL("{'name':'x','shpae':[2]}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x'): unknown key 'shpae'", SETUP_NONE},
    {"duplicate_tensor", MODEL(TX "," TW "," TX, ADD("'x','w'", "")),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[2] ('x'): duplicate tensor name (first at tensors[0])", SETUP_NONE},
    {"duplicate_node", MODEL(TX "," TW, ADD("'x','w'", "") "," ADD("'x'", "")),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[1] ('add'): duplicate node name (first at nodes[0])", SETUP_NONE},
    {"duplicate_json_key", "{" HDR "'format':'plinth-graph'}", PL_CODE_INVALID_ARGUMENT,
     "model.json:1:45 (byte 44): duplicate object key near '\"format\"'", SETUP_NONE},
    {"cycle", "{" HDR "'inputs':[],'outputs':['p'],'tensors':[],'nodes':["
     "{'name':'a','op':'Relu','inputs':['q'],'outputs':['p']},"
     "{'name':'b','op':'Relu','inputs':['p'],'outputs':['q']}]}",
     PL_CODE_INVALID_ARGUMENT, "model.json: node 'a' (Relu) is on a cycle", SETUP_NONE},
    {"dangling_input", MODEL(TX "," TW, ADD("'x','nope'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').inputs[1]: tensor 'nope' is not defined by "
     "any node, graph input or constant", SETUP_NONE},
    {"produced_twice", MODEL(TX "," TW, ADD("'x','w'", "") ","
     "{'name':'add2','op':'Add','inputs':['x','x'],'outputs':['y']}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[1] ('add2').outputs[0]: tensor 'y' is already produced "
     "by nodes[0] ('add')", SETUP_NONE},
    {"produces_constant", MODEL(TX "," TW, ADD("'x','w'", "") ","
     "{'name':'n2','op':'Neg','inputs':['x'],'outputs':['w']}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[1] ('n2').outputs[0]: tensor 'w' is a constant and "
     "cannot also be produced by a node", SETUP_NONE},
    {"output_undefined", "{" HDR W "'inputs':['x'],'outputs':['y','zz'],'tensors':["
     TX "," TW "],'nodes':[" ADD("'x','w'", "") "]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: outputs[1]: tensor 'zz' is not defined by any node, graph "
     "input or constant", SETUP_NONE},
    {"input_listed_twice", "{" HDR W "'inputs':['x','x'],'outputs':['y'],'tensors':["
     TX "," TW "],'nodes':[" ADD("'x','w'", "") "]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: inputs[1]: 'x' is listed twice", SETUP_NONE},
    {"input_is_constant", "{" HDR W "'inputs':['x','w'],'outputs':['y'],'tensors':["
     TX "," TW "],'nodes':[" ADD("'x','w'", "") "]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: inputs[1]: 'w' is a constant; a graph input is given at run time", SETUP_NONE},
    {"negative_dim", MODEL("{'name':'x','dtype':'f32','shape':[2,-2]}", ""),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').shape[1]: -2 is not a dim (expected an "
     "integer >= -1, -1 meaning unknown)", SETUP_NONE},
    {"dim_not_integer", MODEL("{'name':'x','dtype':'f32','shape':[2,1.5]}", ""),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').shape[1]: expected an integer, got a real number", SETUP_NONE},
    {"rank_too_big", MODEL("{'name':'x','dtype':'f32','shape':"
     "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').shape: rank 17 exceeds the maximum of 16", SETUP_NONE},
    {"shape_overflow", MODEL("{'name':'x','dtype':'f32','shape':"
     "[4294967296,4294967296]}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').shape: the byte size of this f32 shape "
     "overflows size_t", SETUP_NONE},
    {"shape_bytes_overflow", MODEL("{'name':'x','dtype':'i64','shape':"
     "[2305843009213693952, 2]}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').shape: the byte size of this i64 shape "
     "overflows size_t", SETUP_NONE},
    {"unknown_dtype", MODEL("{'name':'x','dtype':'f128','shape':[2]}", ""),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').dtype: unknown dtype 'f128'", SETUP_NONE},
    {"dim_params_length", MODEL("{'name':'x','dtype':'f32','shape':[2,3],"
     "'dim_params':['n']}", ""), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[0] ('x').dim_params: expected an array of 2 strings "
     "or nulls, one per dim", SETUP_NONE},
    {"offset_past_end", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'offset':256,'length':8}}", ADD("'x','w'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: offset 256 + length 8 lies past the "
     "end of 'model.weights' (256 bytes)", SETUP_NONE},
    {"offset_length_overflow", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'offset':9223372036854775807,'length':8}}", ADD("'x','w'", "")),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: offset 9223372036854775807 + length 8 "
     "lies past the end of 'model.weights' (256 bytes)", SETUP_NONE},
    {"offset_too_big", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'offset':18446744073709551616,'length':8}}", ADD("'x','w'", "")),
     PL_CODE_INVALID_ARGUMENT, "model.json:1:219 (byte 218): too big integer near '18446744073709551616'", SETUP_NONE},
    {"negative_offset", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'offset':-64,'length':8}}", ADD("'x','w'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: offset: expected an integer >= 0", SETUP_NONE},
    {"length_mismatch", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'offset':0,'length':12}}", ADD("'x','w'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: length 12 does not match the 8 bytes "
     "its dtype (f32) and shape need", SETUP_NONE},
    {"constant_unknown_shape", MODEL(TX ",{'name':'w','dtype':'f32','shape':[-1],"
     "'data':{'offset':0,'length':8}}", ADD("'x','w'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: a constant needs a known dtype and a "
     "fully known shape", SETUP_NONE},
    {"data_without_offset", MODEL(TX ",{'name':'w','dtype':'f32','shape':[2],"
     "'data':{'length':8}}", ADD("'x','w'", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: missing required key 'offset'", SETUP_NONE},
    {"constant_without_weights", "{" HDR "'inputs':['x'],'outputs':['y'],'tensors':["
     TX "," TW "],'nodes':[" ADD("'x','w'", "") "]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: tensors[1] ('w').data: a constant, but the model names no "
     "\"weights\" file", SETUP_NONE},
    {"sidecar_dotdot", "{" HDR "'weights':'sub/../../model.weights','inputs':[],"
     "'outputs':[],'tensors':[],'nodes':[]}", PL_CODE_PERMISSION_DENIED,
     "model.json: weights: sidecar 'sub/../../model.weights' has a '..' component; it "
     "must lie inside the model's folder", SETUP_NONE},
    {"sidecar_absolute", "{" HDR "'weights':'/etc/passwd','inputs':[],"
     "'outputs':[],'tensors':[],'nodes':[]}", PL_CODE_PERMISSION_DENIED,
     "model.json: weights: sidecar '/etc/passwd' is an absolute path", SETUP_NONE},
    {"sidecar_link_outside", MODEL(TX "," TW, ADD("'x','w'", "")),
     PL_CODE_PERMISSION_DENIED, "outside the model's folder",
     SETUP_LINK_OUT},
    {"sidecar_missing", "{" HDR "'weights':'absent.bin','inputs':[],"
     "'outputs':[],'tensors':[],'nodes':[]}", PL_CODE_NOT_FOUND,
     "weights: sidecar 'absent.bin': No such file or directory", SETUP_NONE},
    {"sidecar_not_file", "{" HDR "'weights':'sub','inputs':[],"
     "'outputs':[],'tensors':[],'nodes':[]}", PL_CODE_INVALID_ARGUMENT,
     "weights: sidecar 'sub' is not a regular file", SETUP_DIR},
    {"empty_op", MODEL(TX "," TW, "{'name':'add','op':'','inputs':['x'],'outputs':['y']}"),
     PL_CODE_INVALID_ARGUMENT, "model.json: nodes[0] ('add').op: must not be empty", SETUP_NONE},
    {"missing_op", MODEL(TX "," TW, "{'name':'add','inputs':['x'],'outputs':['y']}"),
     PL_CODE_INVALID_ARGUMENT, "model.json: nodes[0] ('add'): missing required key 'op'", SETUP_NONE},
    {"node_not_object", MODEL(TX "," TW, "[]"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0]: expected an object, got an array", SETUP_NONE},
    {"node_no_outputs", MODEL(TX "," TW,
     "{'name':'add','op':'Add','inputs':['x','w'],'outputs':[]}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').outputs: a node needs at least one named "
     "output", SETUP_NONE},
    {"node_no_named_output", MODEL(TX "," TW,
     "{'name':'add','op':'Add','inputs':['x','w'],'outputs':['','']}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').outputs: a node needs at least one named "
     "output", SETUP_NONE},
    {"node_output_not_string", MODEL(TX "," TW, "{'name':'add','op':'Add',"
     "'inputs':['x','w'],'outputs':['y',null]}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').outputs[1]: expected a tensor name, got null",
     SETUP_NONE},
    {"node_input_not_string", MODEL(TX "," TW, ADD("'x',7", "")), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').inputs[1]: expected a tensor name, got an integer", SETUP_NONE},
    {"unknown_attr_kind", ATTR("'k':{'complex':1}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k: unknown attribute kind 'complex'", SETUP_NONE},
    {"attr_two_kinds", ATTR("'k':{'int':1,'float':2.0}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k: has 2 kinds ('int', 'float', "
     "...); an attribute has exactly one", SETUP_NONE},
    {"attr_no_kind", ATTR("'k':{}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k: expected an object with one key "
     "naming the kind", SETUP_NONE},
    {"body_not_object", ATTR("'k':{'graph':3}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k.graph: expected a graph object", SETUP_NONE},
    {"body_bad_dtype", ATTR("'k':{'graph':{'inputs':[],'outputs':[],'tensors':"
     "[{'name':'q','dtype':'f99'}],'nodes':[]}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k.graph.tensors[0] ('q').dtype", SETUP_NONE},
    {"body_undefined", ATTR("'k':{'graph':{'inputs':[],'outputs':['z'],'nodes':"
     "[{'name':'r','op':'Relu','inputs':['ghost'],'outputs':['z']}]}}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: node 'add' (Add): attribute 'k': node 'r' (Relu): input 'ghost' is not "
     "defined by any node, input or constant of this body or an enclosing graph", SETUP_NONE},
    {"bodies_not_array", ATTR("'k':{'graphs':{}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k.graphs: expected an array of graph objects",
     SETUP_NONE},
    {"attr_bare_value", ATTR("'k':3"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.k: expected an object with one key "
     "naming the kind (int, float, string, string_hex, ints, floats, strings, "
     "tensor, graph, graphs), got an integer", SETUP_NONE},
    {"attr_ints_not_array", ATTR("'kernel_shape':{'ints':3}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.kernel_shape.ints: expected an "
     "array of integers, got an integer", SETUP_NONE},
    {"attr_ints_element", ATTR("'kernel_shape':{'ints':[3,'a']}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.kernel_shape.ints[1]: expected an "
     "integer, got a string", SETUP_NONE},
    {"attr_int_real", ATTR("'axis':{'int':1.5}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.axis.int: expected an integer, got "
     "a real number", SETUP_NONE},
    {"attr_bad_float", ATTR("'alpha':{'float':'bogus'}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.alpha.float: expected a number", SETUP_NONE},
    {"attr_bad_nan_bits", ATTR("'alpha':{'float':'nan:0x3ff0000000000000'}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.alpha.float: expected a number", SETUP_NONE},
    {"attr_odd_hex", ATTR("'mode':{'string_hex':'abc'}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.mode.string_hex: odd number of hex "
     "digits (3)", SETUP_NONE},
    {"attr_bad_hex", ATTR("'mode':{'string_hex':'zz'}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.mode.string_hex: 'zz' at character "
     "0 is not a hex byte", SETUP_NONE},
    {"attr_strings_nul", ATTR("'names':{'strings':['a',{'string_hex':'6100'}]}"),
     PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.names.strings[1].string_hex: "
     "contains a NUL byte", SETUP_NONE},
    {"attr_tensor_size", ATTR("'value':{'tensor':{'dtype':'f32','shape':[2],"
     "'data_hex':'0000803f'}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.value.tensor.data_hex: 4 bytes of "
     "hex data, the dtype and shape need 8", SETUP_NONE},
    {"attr_tensor_range", ATTR("'value':{'tensor':{'dtype':'i8','shape':[2],"
     "'values':[1,300]}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.value.tensor.values[1]: 300 is out "
     "of range for i8", SETUP_NONE},
    {"attr_tensor_unknown_dim", ATTR("'value':{'tensor':{'dtype':'f32','shape':[-1],"
     "'data_hex':''}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.value.tensor.shape[0]: -1 is not a "
     "dim (expected an integer >= 0)", SETUP_NONE},
    {"attr_tensor_both_data", ATTR("'value':{'tensor':{'dtype':'f32','shape':[1],"
     "'data_hex':'0000803f','values':[1.0]}}"), PL_CODE_INVALID_ARGUMENT,
     "model.json: nodes[0] ('add').attributes.value.tensor: expected exactly one "
     "of 'data_hex' and 'values'", SETUP_NONE},
    {"opset_duplicate", "{" HDR "'opset_import':[{'domain':'','version':13},"
     "{'version':11}],'inputs':[],'outputs':[],'tensors':[],'nodes':[]}",
     PL_CODE_INVALID_ARGUMENT,
     "model.json: opset_import[1]: domain '' is imported twice", SETUP_NONE},
    {"opset_default_twice", "{" HDR "'opset_import':[{'domain':'','version':13},"
     "{'domain':'ai.onnx','version':11}],'inputs':[],'outputs':[],'tensors':[],"
     "'nodes':[]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: opset_import[1]: domain 'ai.onnx' is imported twice", SETUP_NONE},
    {"opset_bad_version", "{" HDR "'opset_import':[{'domain':'','version':0}],"
     "'inputs':[],'outputs':[],'tensors':[],'nodes':[]}", PL_CODE_INVALID_ARGUMENT,
     "model.json: opset_import[0]: version: expected an integer >= 1", SETUP_NONE},
    {"deep_nesting", NULL, PL_CODE_INVALID_ARGUMENT,
     "model.json:1:102 (byte 101): nesting deeper than 32 levels", SETUP_DEEP},
    {"text_too_big", NULL, PL_CODE_INVALID_ARGUMENT,
     "model.json: 1073741825 bytes of JSON exceed the limit of 1073741824",
     SETUP_BIG_FILE},
};

static const bad_case *find_bad_case(const char *name)
{
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++)
        if (strcmp(bad_cases[i].name, name) == 0)
            return &bad_cases[i];
    return NULL;
}

static void run_bad_case(const bad_case *c)
{
    char json[320], side[320];
    path_in(json, sizeof json, "model.json");
    path_in(side, sizeof side, "model.weights");
    unsigned char bytes[256];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)i;
    switch (c->setup) {
    case SETUP_LINK_OUT: {
        /* A real file next to the model's folder, reached through a link. */
        char outside[320], dir[320];
        path_in(outside, sizeof outside, "outside.bin");
        write_file(outside, bytes, sizeof bytes);
        path_in(dir, sizeof dir, "model");
        CHECK(mkdir(dir, 0700) == 0);
        path_in(json, sizeof json, "model/model.json");
        path_in(side, sizeof side, "model/model.weights");
        CHECK(symlink("../outside.bin", side) == 0);
        break;
    }
    case SETUP_DIR: {
        char sub[320];
        path_in(sub, sizeof sub, "sub");
        CHECK(mkdir(sub, 0700) == 0);
        write_file(side, bytes, sizeof bytes);
        break;
    }
    default:
        write_file(side, bytes, sizeof bytes);
        break;
    }
    if (c->setup == SETUP_BIG_FILE) {
        int fd = open(json, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0);
        CHECK(ftruncate(fd, ((off_t)1 << 30) + 1) == 0); /* sparse: costs nothing */
        close(fd);
    } else if (c->setup == SETUP_DEEP) {
        /* 40 levels of arrays in "nodes", then 100000 more: refused before
         * jansson recurses. */
        char *t = malloc(300000);
        CHECK(t != NULL);
        int n = snprintf(t, 300000, "{\"format\":\"plinth-graph\",\"version\":1,"
                                    "\"inputs\":[],\"outputs\":[],\"nodes\":");
        for (int i = 0; i < 100000; i++)
            t[n++] = '[';
        for (int i = 0; i < 100000; i++)
            t[n++] = ']';
        t[n++] = '}';
        write_file(json, t, (size_t)n);
        free(t);
    } else {
        write_json(json, c->json);
    }
    pl_graph *g = (pl_graph *)1;
    expect_error(load_file(json, &g), c->code, c->message);
    CHECK(g == NULL);
    CHECK(mappings_of("model.weights") == 0);
}

/* ---- driver -------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"roundtrip", case_roundtrip},
    {"bodies", case_bodies},
    {"no_constants", case_no_constants},
    {"load_string", case_load_string},
    {"unaligned_offset", case_unaligned_offset},
    {"sidecar_link_inside", case_sidecar_link_inside},
    {"constant_types", case_constant_types},
    {"damaged_texts", case_damaged_texts},
    {"to_json_subgraph", case_to_json_subgraph},
    {"save_errors", case_save_errors},
    {"alloc_sweep_load", case_alloc_sweep_load},
    {"alloc_sweep_save", case_alloc_sweep_save},
    {"alloc_sweep_to_json", case_alloc_sweep_to_json},
};

int main(int argc, char **argv)
{
    alarm(110); /* under CTest's 120 s: a hang fails with a name */
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    stage_dir = argv[2];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_root, sizeof tmp_root, "%s/plinth_gj_XXXXXX",
             tmp && tmp[0] ? tmp : "/tmp");
    CHECK(mkdtemp(tmp_root) != NULL);
    make_runtime(); /* before any case, so that no sweep reaches it */
    bool found = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, argv[1]) == 0) {
            cases[i].fn();
            found = true;
        }
    if (!found && strncmp(argv[1], "bad_", 4) == 0 && find_bad_case(argv[1] + 4)) {
        run_bad_case(find_bad_case(argv[1] + 4));
        found = true;
    }
    pl_runtime_destroy(json_rt);
    nftw(tmp_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (!found) {
        fprintf(stderr, "unknown case '%s'\n", argv[1]);
        return 2;
    }
    printf("%s: passed\n", argv[1]);
    return 0;
}
