/* test_onnx_lift.c — the onnx module's raw_data lift (modules/onnx/
 * onnx_lift.c) on its own: models written here with protobuf-c are lifted,
 * the lifted wire form decodes to the same model with every initializer's
 * raw_data pointing into the original buffer, and layouts the lift must not
 * touch (no raw_data at all, two graph fields, an initializer with raw_data
 * twice, truncated data) are left to the plain decoder.
 *
 * Usage: test_onnx_lift CASE. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "onnx_internal.h"

#define CHECK(cond) TH_CHECK(cond, "%s", #cond)

/* Never called: onnx_lift.c uses no host function. */
const pl_host_api *ox_host;

static Onnx__TensorProto *tensor(const char *name, int32_t type, int64_t n, const void *raw,
                                 size_t raw_len)
{
    Onnx__TensorProto *t = calloc(1, sizeof *t);
    CHECK(t != NULL);
    onnx__tensor_proto__init(t);
    t->name = strdup(name);
    t->has_data_type = 1;
    t->data_type = type;
    t->n_dims = 1;
    t->dims = malloc(sizeof *t->dims);
    t->dims[0] = n;
    if (raw != NULL) {
        t->has_raw_data = 1;
        t->raw_data.len = raw_len;
        t->raw_data.data = malloc(raw_len ? raw_len : 1);
        memcpy(t->raw_data.data, raw, raw_len);
    }
    return t;
}

/* A model of three initializers: W (1000 floats of raw_data), B (two
 * floats of packed float_data, lifted as raw_data on a little-endian host
 * when they fill B's shape) and S (three int64 of raw_data), fields of the
 * model on both sides of its graph, and one node. B_DIM is B's shape: 2, or
 * another count its two values do not fill. */
static float w_vals[1000];
static const int64_t s_vals[3] = {7, -1, 1LL << 40};
static const float b_vals[2] = {1.5f, -2.5f};

static Onnx__ModelProto *model_b(bool raw_w, bool raw_s, int64_t b_dim)
{
    for (int i = 0; i < 1000; i++)
        w_vals[i] = (float)i * 0.25f - 3.0f;
    Onnx__ModelProto *m = calloc(1, sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = strdup("lift-test");
    m->doc_string = strdup("after the graph");
    m->n_opset_import = 1;
    m->opset_import = malloc(sizeof *m->opset_import);
    m->opset_import[0] = calloc(1, sizeof **m->opset_import);
    onnx__operator_set_id_proto__init(m->opset_import[0]);
    m->opset_import[0]->has_version = 1;
    m->opset_import[0]->version = 13;
    Onnx__GraphProto *g = calloc(1, sizeof *g);
    onnx__graph_proto__init(g);
    g->name = strdup("g");
    g->n_initializer = 3;
    g->initializer = malloc(3 * sizeof *g->initializer);
    g->initializer[0] = tensor("W", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1000,
                               raw_w ? w_vals : NULL, sizeof w_vals);
    Onnx__TensorProto *b = tensor("B", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, b_dim, NULL, 0);
    b->n_float_data = 2;
    b->float_data = malloc(2 * sizeof(float));
    b->float_data[0] = 1.5f;
    b->float_data[1] = -2.5f;
    g->initializer[1] = b;
    g->initializer[2] = tensor("S", ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 3,
                               raw_s ? s_vals : NULL, sizeof s_vals);
    g->n_node = 1;
    g->node = malloc(sizeof *g->node);
    g->node[0] = calloc(1, sizeof **g->node);
    onnx__node_proto__init(g->node[0]);
    g->node[0]->op_type = strdup("Identity");
    g->node[0]->n_input = 1;
    g->node[0]->input = malloc(sizeof(char *));
    g->node[0]->input[0] = strdup("W");
    m->graph = g;
    return m;
}

static Onnx__ModelProto *model(bool raw_w, bool raw_s)
{
    return model_b(raw_w, raw_s, 2);
}

/* Whether this host lifts float_data (little-endian: its values are the
 * bytes raw_data would hold). */
static bool lifts_floats(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return true;
#else
    return false;
#endif
}

static uint8_t *pack(Onnx__ModelProto *m, size_t *len)
{
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(*len);
    CHECK(onnx__model_proto__pack(m, buf) == *len);
    onnx__model_proto__free_unpacked(m, NULL);
    return buf;
}

static void case_lifted(void)
{
    size_t len;
    uint8_t *buf = pack(model(true, true), &len);
    ox_lifted l;
    CHECK(ox_lift(buf, len, &l));
    CHECK(l.n_raws == 3);
    CHECK(l.len + sizeof w_vals + sizeof s_vals + (lifts_floats() ? sizeof b_vals : 0) <= len);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, l.len, l.buf);
    CHECK(m != NULL && m->graph != NULL && m->graph->n_initializer == 3);
    for (size_t i = 0; i < 3; i++)
        CHECK(!m->graph->initializer[i]->has_raw_data);
    CHECK(ox_lift_attach(m, &l));
    Onnx__TensorProto *w = m->graph->initializer[0], *b = m->graph->initializer[1],
                      *s = m->graph->initializer[2];
    /* The weights are read where they lie in the file's buffer. */
    CHECK(w->has_raw_data && w->raw_data.len == sizeof w_vals);
    CHECK(w->raw_data.data > buf && w->raw_data.data + w->raw_data.len <= buf + len);
    CHECK(memcmp(w->raw_data.data, w_vals, sizeof w_vals) == 0);
    CHECK(s->has_raw_data && s->raw_data.len == sizeof s_vals);
    CHECK(s->raw_data.data > buf && s->raw_data.data + s->raw_data.len <= buf + len);
    CHECK(memcmp(s->raw_data.data, s_vals, sizeof s_vals) == 0);
    /* B's float_data is read where it lies too, as raw_data. */
    if (lifts_floats()) {
        CHECK(b->has_raw_data && b->raw_data.len == sizeof b_vals && b->n_float_data == 0);
        CHECK(b->raw_data.data > buf && b->raw_data.data + b->raw_data.len <= buf + len);
        CHECK(memcmp(b->raw_data.data, b_vals, sizeof b_vals) == 0);
    } else {
        CHECK(!b->has_raw_data && b->n_float_data == 2 && b->float_data[1] == -2.5f);
    }
    /* Everything else decodes as before. */
    CHECK(strcmp(w->name, "W") == 0 && w->n_dims == 1 && w->dims[0] == 1000);
    CHECK(strcmp(s->name, "S") == 0 && s->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64);
    CHECK(strcmp(m->producer_name, "lift-test") == 0);
    CHECK(strcmp(m->doc_string, "after the graph") == 0);
    CHECK(m->ir_version == 8 && m->n_opset_import == 1 && m->opset_import[0]->version == 13);
    CHECK(m->graph->n_node == 1 && strcmp(m->graph->node[0]->op_type, "Identity") == 0);
    /* Detached, protobuf-c frees only what it allocated (ASan watches). */
    ox_lift_detach(m, &l);
    CHECK(!w->has_raw_data && w->raw_data.data == NULL);
    CHECK(!b->has_raw_data && b->raw_data.data == NULL);
    onnx__model_proto__free_unpacked(m, NULL);
    ox_lift_free(&l);
    CHECK(l.buf == NULL && l.raws == NULL);
    free(buf);
}

/* Only S has raw_data, and B's two floats do not fill its shape of 3 (the
 * decoder reports that): W and B keep their places as empty records. */
static void case_partly(void)
{
    size_t len;
    uint8_t *buf = pack(model_b(false, true, 3), &len);
    ox_lifted l;
    CHECK(ox_lift(buf, len, &l));
    CHECK(l.n_raws == 3 && l.raws[0].len == SIZE_MAX && l.raws[1].len == SIZE_MAX);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, l.len, l.buf);
    CHECK(m != NULL && ox_lift_attach(m, &l));
    CHECK(!m->graph->initializer[0]->has_raw_data);
    CHECK(!m->graph->initializer[1]->has_raw_data && m->graph->initializer[1]->n_float_data == 2);
    CHECK(m->graph->initializer[2]->has_raw_data &&
          memcmp(m->graph->initializer[2]->raw_data.data, s_vals, sizeof s_vals) == 0);
    ox_lift_detach(m, &l);
    onnx__model_proto__free_unpacked(m, NULL);
    ox_lift_free(&l);
    free(buf);
}

/* A DOUBLE initializer's packed double_data is lifted like float_data. */
static void case_doubles(void)
{
    static const double d_vals[2] = {0.25, -8.0};
    Onnx__ModelProto *m0 = model(false, false);
    Onnx__TensorProto *b = m0->graph->initializer[1];
    b->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    free(b->float_data);
    b->float_data = NULL;
    b->n_float_data = 0;
    b->n_double_data = 2;
    b->double_data = malloc(sizeof d_vals);
    memcpy(b->double_data, d_vals, sizeof d_vals);
    size_t len;
    uint8_t *buf = pack(m0, &len);
    ox_lifted l;
    if (!lifts_floats()) {
        CHECK(!ox_lift(buf, len, &l));
        free(buf);
        return;
    }
    CHECK(ox_lift(buf, len, &l) && l.n_raws == 3 && l.raws[1].len == sizeof d_vals);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, l.len, l.buf);
    CHECK(m != NULL && ox_lift_attach(m, &l));
    Onnx__TensorProto *t = m->graph->initializer[1];
    CHECK(t->has_raw_data && t->n_double_data == 0 && t->raw_data.len == sizeof d_vals &&
          memcmp(t->raw_data.data, d_vals, sizeof d_vals) == 0);
    ox_lift_detach(m, &l);
    onnx__model_proto__free_unpacked(m, NULL);
    ox_lift_free(&l);
    free(buf);
}

/* Layouts the lift leaves alone. */
static void case_left_alone(void)
{
    size_t len;
    ox_lifted l;
    /* No raw_data anywhere, and float_data that does not fill its shape. */
    uint8_t *buf = pack(model_b(false, false, 3), &len);
    CHECK(!ox_lift(buf, len, &l) && l.buf == NULL && l.raws == NULL);
    free(buf);

    /* float_data of an INT32 tensor (the decoder refuses it): not lifted. */
    Onnx__ModelProto *mi = model_b(false, false, 2);
    mi->graph->initializer[1]->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    buf = pack(mi, &len);
    CHECK(!ox_lift(buf, len, &l));
    free(buf);

    /* Two graph fields: protobuf merges them; the lift would not. */
    buf = pack(model(true, true), &len);
    uint8_t *twice = malloc(2 * len);
    memcpy(twice, buf, len);
    memcpy(twice + len, buf, len);
    CHECK(!ox_lift(twice, 2 * len, &l));
    free(twice);

    /* Cut short: half a model. */
    CHECK(!ox_lift(buf, len / 2, &l));
    free(buf);

    /* An initializer with raw_data twice (the last one wins when decoded). */
    Onnx__TensorProto *t = tensor("W", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, w_vals, 4);
    size_t tn = onnx__tensor_proto__get_packed_size(t);
    uint8_t *tb = malloc(2 * tn);
    onnx__tensor_proto__pack(t, tb);
    onnx__tensor_proto__pack(t, tb + tn);
    onnx__tensor_proto__free_unpacked(t, NULL);
    CHECK(2 * tn < 0x80);
    uint8_t graph[256], model_buf[260];
    size_t gn = 0;
    graph[gn++] = 5 << 3 | 2; /* initializer */
    graph[gn++] = (uint8_t)(2 * tn);
    memcpy(graph + gn, tb, 2 * tn);
    gn += 2 * tn;
    size_t mn = 0;
    model_buf[mn++] = 7 << 3 | 2; /* graph */
    model_buf[mn++] = (uint8_t)gn;
    memcpy(model_buf + mn, graph, gn);
    mn += gn;
    CHECK(!ox_lift(model_buf, mn, &l));
    free(tb);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {{"lifted", case_lifted}, {"partly", case_partly},
                 {"doubles", case_doubles}, {"left_alone", case_left_alone}};
    if (argc != 2) {
        fprintf(stderr, "usage: test_onnx_lift CASE\n");
        return 2;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0) {
            cases[i].fn();
            printf("onnx_lift.%s: ok\n", argv[1]);
            return 0;
        }
    fprintf(stderr, "no case %s\n", argv[1]);
    return 2;
}
