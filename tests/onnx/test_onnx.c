/* test_onnx.c — the onnx module end to end through the public API. The test
 * writes every .onnx file itself with protobuf-c (code generated from the
 * same onnx.proto as the module's): good models (an MLP and a residual
 * graph, weights in raw_data, in float_data and in an external file) load,
 * run, and give bit-for-bit the outputs of the same model converted to
 * Plinth's JSON and loaded again; malformed files (truncated, corrupt, bad
 * shapes and sizes, external data escaping the folder, unsupported
 * features) each fail with their own message. The plinth CLI's run and
 * convert are tried on an ONNX file too.
 *
 * Usage: test_onnx CASE STAGE_DIR PLINTH_CLI. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "onnx.pb-c.h"

/* ---- writing models ------------------------------------------------------ */

enum {
    T_FLOAT = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
    T_UINT8 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8,
    T_INT8 = ONNX__TENSOR_PROTO__DATA_TYPE__INT8,
    T_UINT16 = ONNX__TENSOR_PROTO__DATA_TYPE__UINT16,
    T_INT16 = ONNX__TENSOR_PROTO__DATA_TYPE__INT16,
    T_COMPLEX64 = ONNX__TENSOR_PROTO__DATA_TYPE__COMPLEX64,
    T_INT32 = ONNX__TENSOR_PROTO__DATA_TYPE__INT32,
    T_INT64 = ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
    T_STRING = ONNX__TENSOR_PROTO__DATA_TYPE__STRING,
    T_BOOL = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL,
    T_FLOAT16 = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16,
};

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    TH_CHECK(p != NULL, "out of memory");
    return p;
}

static char *xstrdup(const char *s)
{
    char *d = xmalloc(strlen(s) + 1);
    strcpy(d, s);
    return d;
}

/* Appends ITEM to the malloc'd array ARR of N elements. */
#define APPEND(arr, n, item)                                        \
    do {                                                            \
        void *grown_ = realloc((arr), ((n) + 1) * sizeof *(arr));   \
        TH_CHECK(grown_ != NULL, "out of memory");                  \
        (arr) = grown_;                                             \
        (arr)[(n)++] = (item);                                      \
    } while (0)

static Onnx__ModelProto *tm_model(void)
{
    Onnx__ModelProto *m = xmalloc(sizeof *m);
    onnx__model_proto__init(m);
    m->has_ir_version = 1;
    m->ir_version = 8;
    m->producer_name = xstrdup("test_onnx");
    m->graph = xmalloc(sizeof *m->graph);
    onnx__graph_proto__init(m->graph);
    m->graph->name = xstrdup("g");
    return m;
}

static void tm_opset(Onnx__ModelProto *m, const char *domain, int64_t version)
{
    Onnx__OperatorSetIdProto *o = xmalloc(sizeof *o);
    onnx__operator_set_id_proto__init(o);
    o->domain = xstrdup(domain);
    o->has_version = 1;
    o->version = version;
    APPEND(m->opset_import, m->n_opset_import, o);
}

/* A tensor value_info; ndim -1: no shape; a dim -1 with PARAMS[i]: symbolic;
 * elem 0: no elem_type. */
static Onnx__ValueInfoProto *tm_vi(const char *name, int32_t elem, int ndim,
                                   const int64_t *dims, const char *const *params)
{
    Onnx__ValueInfoProto *vi = xmalloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = xstrdup(name);
    vi->type = xmalloc(sizeof *vi->type);
    onnx__type_proto__init(vi->type);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    Onnx__TypeProto__Tensor *tt = xmalloc(sizeof *tt);
    onnx__type_proto__tensor__init(tt);
    vi->type->tensor_type = tt;
    if (elem != 0) {
        tt->has_elem_type = 1;
        tt->elem_type = elem;
    }
    if (ndim >= 0) {
        tt->shape = xmalloc(sizeof *tt->shape);
        onnx__tensor_shape_proto__init(tt->shape);
        for (int i = 0; i < ndim; i++) {
            Onnx__TensorShapeProto__Dimension *d = xmalloc(sizeof *d);
            onnx__tensor_shape_proto__dimension__init(d);
            if (dims[i] == -1 && params && params[i]) {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                d->dim_param = xstrdup(params[i]);
            } else {
                d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                d->dim_value = dims[i];
            }
            APPEND(tt->shape->dim, tt->shape->n_dim, d);
        }
    }
    return vi;
}

static void tm_input(Onnx__ModelProto *m, Onnx__ValueInfoProto *vi)
{
    APPEND(m->graph->input, m->graph->n_input, vi);
}

static void tm_output(Onnx__ModelProto *m, Onnx__ValueInfoProto *vi)
{
    APPEND(m->graph->output, m->graph->n_output, vi);
}

/* Splits a comma-separated LIST ("" is one empty name, NULL none). */
static void tm_names(const char *list, char ***out, size_t *n)
{
    if (list == NULL)
        return;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        char *s = xmalloc(len + 1);
        memcpy(s, p, len);
        s[len] = '\0';
        APPEND(*out, *n, s);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
}

static Onnx__NodeProto *tm_node(Onnx__ModelProto *m, const char *op, const char *name,
                                const char *inputs, const char *outputs)
{
    Onnx__NodeProto *n = xmalloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = xstrdup(op);
    n->name = xstrdup(name);
    tm_names(inputs, &n->input, &n->n_input);
    tm_names(outputs, &n->output, &n->n_output);
    APPEND(m->graph->node, m->graph->n_node, n);
    return n;
}

static Onnx__AttributeProto *tm_attr(Onnx__NodeProto *n, const char *name, int kind)
{
    Onnx__AttributeProto *a = xmalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup(name);
    if (kind != 0) {
        a->has_type = 1;
        a->type = kind;
    }
    APPEND(n->attribute, n->n_attribute, a);
    return a;
}

static void tm_attr_i(Onnx__NodeProto *n, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1;
    a->i = v;
}

static void tm_attr_f(Onnx__NodeProto *n, const char *name, float v)
{
    Onnx__AttributeProto *a = tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1;
    a->f = v;
}

static void tm_attr_ints(Onnx__NodeProto *n, const char *name, size_t count,
                         const int64_t *v)
{
    Onnx__AttributeProto *a = tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->ints = xmalloc(count * sizeof *a->ints);
    memcpy(a->ints, v, count * sizeof *v);
    a->n_ints = count;
}

static void tm_attr_floats(Onnx__NodeProto *n, const char *name, size_t count,
                           const float *v)
{
    Onnx__AttributeProto *a = tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
    a->floats = xmalloc(count * sizeof *a->floats);
    memcpy(a->floats, v, count * sizeof *v);
    a->n_floats = count;
}

static void tm_attr_strings(Onnx__NodeProto *n, const char *name, size_t count,
                            const char *const *v, const size_t *lens)
{
    Onnx__AttributeProto *a =
        tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
    a->strings = xmalloc(count * sizeof *a->strings);
    for (size_t i = 0; i < count; i++) {
        size_t len = lens ? lens[i] : strlen(v[i]);
        a->strings[i].data = xmalloc(len);
        memcpy(a->strings[i].data, v[i], len);
        a->strings[i].len = len;
    }
    a->n_strings = count;
}

static void tm_attr_s(Onnx__NodeProto *n, const char *name, const char *v)
{
    Onnx__AttributeProto *a = tm_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.len = strlen(v);
    a->s.data = (uint8_t *)xstrdup(v);
}

static Onnx__TensorProto *tm_tensor(const char *name, int32_t elem, int ndim,
                                    const int64_t *dims)
{
    Onnx__TensorProto *t = xmalloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = xstrdup(name);
    if (elem != 0) {
        t->has_data_type = 1;
        t->data_type = elem;
    }
    if (ndim > 0) {
        t->dims = xmalloc((size_t)ndim * sizeof *t->dims);
        memcpy(t->dims, dims, (size_t)ndim * sizeof *dims);
    }
    t->n_dims = (size_t)ndim;
    return t;
}

static void tm_raw(Onnx__TensorProto *t, const void *data, size_t bytes)
{
    t->has_raw_data = 1;
    t->raw_data.data = xmalloc(bytes);
    memcpy(t->raw_data.data, data, bytes);
    t->raw_data.len = bytes;
}

static void tm_float_data(Onnx__TensorProto *t, const float *v, size_t n)
{
    t->float_data = xmalloc(n * sizeof *v);
    memcpy(t->float_data, v, n * sizeof *v);
    t->n_float_data = n;
}

static void tm_kv(Onnx__TensorProto *t, const char *key, const char *value)
{
    Onnx__StringStringEntryProto *e = xmalloc(sizeof *e);
    onnx__string_string_entry_proto__init(e);
    e->key = xstrdup(key);
    e->value = xstrdup(value);
    APPEND(t->external_data, t->n_external_data, e);
}

/* Marks T external: LOCATION, and OFFSET/LENGTH unless NULL. */
static void tm_external(Onnx__TensorProto *t, const char *location, const char *offset,
                        const char *length)
{
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    if (location)
        tm_kv(t, "location", location);
    if (offset)
        tm_kv(t, "offset", offset);
    if (length)
        tm_kv(t, "length", length);
}

static void tm_init(Onnx__ModelProto *m, Onnx__TensorProto *t)
{
    APPEND(m->graph->initializer, m->graph->n_initializer, t);
}

typedef struct tm_buf {
    uint8_t *data;
    size_t len;
} tm_buf;

/* Packs M (and frees it). */
static tm_buf tm_pack(Onnx__ModelProto *m)
{
    tm_buf b;
    b.len = onnx__model_proto__get_packed_size(m);
    b.data = xmalloc(b.len);
    TH_CHECK(onnx__model_proto__pack(m, b.data) == b.len, "pack size");
    onnx__model_proto__free_unpacked(m, NULL);
    return b;
}

static void tm_append(tm_buf *b, const void *bytes, size_t n)
{
    b->data = realloc(b->data, b->len + n);
    TH_CHECK(b->data != NULL, "out of memory");
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    TH_CHECK(f != NULL, "cannot write %s", path);
    TH_CHECK(len == 0 || fwrite(data, len, 1, f) == 1, "cannot write %s", path);
    fclose(f);
}

static const char *tm_write_buf(tm_buf b, const char *dir, const char *file)
{
    const char *path = th_path(dir, file);
    write_bytes(path, b.data, b.len);
    free(b.data);
    return path;
}

static const char *tm_write(Onnx__ModelProto *m, const char *dir, const char *file)
{
    return tm_write_buf(tm_pack(m), dir, file);
}

/* ---- runtime, loading, running ------------------------------------------- */

static pl_runtime *runtime_with(const char *extra)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "backend.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\n[placement]\norder = cpu\n%s\n",
            th_arg(0), extra ? extra : "");
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    TH_CHECK_OK(pl_runtime_create(&o, &rt));
    th_watch(rt);
    TH_CHECK(pl_runtime_find_module(rt, "onnx") >= 0, "the onnx module is not loaded");
    return rt;
}

static pl_model *load_ok(pl_runtime *rt, const char *path)
{
    pl_model *m = NULL;
    TH_CHECK_OK(pl_model_load(rt, path, &m));
    return m;
}

/* Loads PATH and checks that it fails with a message containing WANT. */
static void expect_load_error(pl_runtime *rt, const char *path, const char *want)
{
    pl_model *m = NULL;
    pl_status *st = pl_model_load(rt, path, &m);
    TH_CHECK(st != NULL, "%s loaded, expected an error containing \"%s\"", path, want);
    TH_CHECK(m == NULL, "a failed load left a model");
    fprintf(stderr, "error (as expected): %s\n", pl_status_message(st));
    TH_CHECK_CONTAINS(pl_status_message(st), want);
    pl_status_free(st);
}

/* Checks that ST is a failure whose message contains WANT, and frees it. */
static void expect_status(pl_status *st, const char *want)
{
    TH_CHECK(st != NULL, "succeeded, expected an error containing \"%s\"", want);
    fprintf(stderr, "error (as expected): %s\n", pl_status_message(st));
    TH_CHECK_CONTAINS(pl_status_message(st), want);
    pl_status_free(st);
}

enum { BATCH = 4, IN = 16, HID = 32, OUT = 8 };

/* A model of opset OPSET of DOMAIN with input x [BATCH, IN] and output y
 * [BATCH, Y_COLS], for the cases to add their nodes to. */
static Onnx__ModelProto *tm_xy_model(const char *domain, int opset, int64_t y_cols)
{
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, domain, opset);
    tm_input(mp, tm_vi("x", T_FLOAT, 2, (int64_t[]){BATCH, IN}, NULL));
    tm_output(mp, tm_vi("y", T_FLOAT, 2, (int64_t[]){BATCH, y_cols}, NULL));
    return mp;
}

static void make_values(float *v, size_t n, uint32_t seed, float scale)
{
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * scale;
    }
}

/* Runs a session of M once on X (BATCH x IN) and returns output OUT_NAME
 * (BATCH x N) in a malloc'd copy. */
static float *run_once(pl_model *m, const float *x, int64_t batch, const char *out_name,
                       size_t n)
{
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    int64_t xs[2] = {batch, IN};
    pl_io in = {.name = "x", .tensor = {.data = (void *)x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = xs, .struct_size = sizeof(pl_tensor)}};
    pl_io out = {.name = out_name};
    TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
    TH_CHECK(out.tensor.data != NULL, "no output");
    TH_CHECK(out.tensor.ndim == 2 && out.tensor.shape[0] == batch &&
                 out.tensor.shape[1] == (int64_t)n,
             "output shape");
    float *copy = xmalloc((size_t)batch * n * sizeof *copy);
    memcpy(copy, out.tensor.data, (size_t)batch * n * sizeof *copy);
    pl_buffer_free(out.tensor.data);
    pl_session_destroy(s);
    return copy;
}

/* ---- the good models ---------------------------------------------------------- */

typedef enum storage { S_RAW, S_FLOAT_DATA, S_EXTERNAL, S_MIXED } storage;

typedef struct weights {
    float w1[IN * HID], b1[HID], w2[OUT * HID], b2[OUT]; /* MLP */
    float r1[IN * IN], c1[IN], r2[IN * OUT], c2[OUT];     /* residual */
} weights;

static weights W;

/* One weight tensor stored as MODE says; external ones are written into
 * DIR/weights.bin at *io_offset, which advances (the first one sits at 0,
 * aligned; later ones at odd offsets, so both mapping paths are used). */
static void add_weight(Onnx__ModelProto *m, storage mode, int index, const char *dir,
                       const char *name, const float *v, int ndim, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)dims[i];
    Onnx__TensorProto *t = tm_tensor(name, T_FLOAT, ndim, dims);
    storage how = mode == S_MIXED ? (storage)(index % 3) : mode;
    if (how == S_RAW) {
        tm_raw(t, v, n * sizeof *v);
    } else if (how == S_FLOAT_DATA) {
        tm_float_data(t, v, n);
    } else {
        const char *path = th_path(dir, "weights.bin");
        FILE *f = fopen(path, "ab");
        TH_CHECK(f != NULL, "cannot write %s", path);
        long at = ftell(f);
        if (index > 0) { /* an odd offset: the core must copy, not map */
            fputc(0xAB, f);
            at++;
        }
        fwrite(v, sizeof *v, n, f);
        fclose(f);
        char off[32], len[32];
        snprintf(off, sizeof off, "%ld", at);
        snprintf(len, sizeof len, "%zu", n * sizeof *v);
        tm_external(t, "weights.bin", off, index % 2 ? len : NULL);
    }
    tm_init(m, t);
}

/* z = softmax(Gemm(relu(x W1 + b1), W2^T, b2)); x is [batch, 16] with
 * "batch" symbolic when SYMBOLIC. */
static const char *write_mlp(storage mode, const char *dir, const char *file, bool symbolic)
{
    Onnx__ModelProto *m = tm_model();
    tm_opset(m, "", 13);
    const char *params[2] = {"batch", NULL};
    int64_t xd[2] = {symbolic ? -1 : BATCH, IN}, zd[2] = {symbolic ? -1 : BATCH, OUT};
    tm_input(m, tm_vi("x", T_FLOAT, 2, xd, params));
    tm_output(m, tm_vi("z", T_FLOAT, 2, zd, params));
    add_weight(m, mode, 0, dir, "w1", W.w1, 2, (int64_t[]){IN, HID});
    add_weight(m, mode, 1, dir, "b1", W.b1, 1, (int64_t[]){HID});
    add_weight(m, mode, 2, dir, "w2", W.w2, 2, (int64_t[]){OUT, HID});
    add_weight(m, mode, 3, dir, "b2", W.b2, 1, (int64_t[]){OUT});
    tm_node(m, "MatMul", "mm1", "x,w1", "a1");
    tm_node(m, "Add", "add1", "a1,b1", "a2");
    tm_node(m, "Relu", "relu1", "a2", "h");
    Onnx__NodeProto *gemm = tm_node(m, "Gemm", "fc", "h,w2,b2", "y");
    tm_attr_i(gemm, "transB", 1);
    tm_attr_f(gemm, "alpha", 1.0f);
    tm_attr_i(tm_node(m, "Softmax", "softmax", "y", "z"), "axis", -1);
    return tm_write(m, dir, file);
}

static void mlp_reference(const float *x, int batch, float *z)
{
    for (int b = 0; b < batch; b++) {
        double h[HID], y[OUT], mx = -1e300, sum = 0;
        for (int j = 0; j < HID; j++) {
            double acc = W.b1[j];
            for (int k = 0; k < IN; k++)
                acc += (double)x[b * IN + k] * W.w1[k * HID + j];
            h[j] = acc > 0 ? acc : 0;
        }
        for (int j = 0; j < OUT; j++) {
            double acc = W.b2[j];
            for (int k = 0; k < HID; k++)
                acc += h[k] * W.w2[j * HID + k];
            y[j] = acc;
            mx = acc > mx ? acc : mx;
        }
        for (int j = 0; j < OUT; j++)
            sum += exp(y[j] - mx);
        for (int j = 0; j < OUT; j++)
            z[b * OUT + j] = (float)(exp(y[j] - mx) / sum);
    }
}

/* y = tanh(reshape(relu(x R1 + c1) + x, shape) R2 + c2); the shape comes
 * from a Constant node (value tensor in int64_data). */
static const char *write_residual(storage mode, const char *dir, const char *file)
{
    Onnx__ModelProto *m = tm_model();
    tm_opset(m, "", 13);
    tm_input(m, tm_vi("x", T_FLOAT, 2, (int64_t[]){BATCH, IN}, NULL));
    tm_output(m, tm_vi("y", T_FLOAT, 2, (int64_t[]){BATCH, OUT}, NULL));
    tm_input(m, tm_vi("r1", T_FLOAT, 2, (int64_t[]){IN, IN}, NULL)); /* old style */
    add_weight(m, mode, 0, dir, "r1", W.r1, 2, (int64_t[]){IN, IN});
    add_weight(m, mode, 1, dir, "c1", W.c1, 1, (int64_t[]){IN});
    add_weight(m, mode, 2, dir, "r2", W.r2, 2, (int64_t[]){IN, OUT});
    add_weight(m, mode, 3, dir, "c2", W.c2, 1, (int64_t[]){OUT});
    tm_node(m, "MatMul", "mm1", "x,r1", "a1");
    tm_node(m, "Add", "add1", "a1,c1", "a2");
    tm_node(m, "Relu", "relu1", "a2", "h");
    tm_node(m, "Add", "skip", "h,x", "r");
    Onnx__NodeProto *c = tm_node(m, "Constant", "shape_const", NULL, "shape");
    Onnx__AttributeProto *a = tm_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tm_tensor("", T_INT64, 1, (int64_t[]){2});
    a->t->int64_data = xmalloc(2 * sizeof(int64_t));
    a->t->int64_data[0] = BATCH;
    a->t->int64_data[1] = IN;
    a->t->n_int64_data = 2;
    tm_node(m, "Reshape", "reshape", "r,shape", "r2d");
    tm_node(m, "MatMul", "mm2", "r2d,r2", "a3");
    tm_node(m, "Add", "add2", "a3,c2", "a4");
    tm_node(m, "Tanh", "tanh", "a4", "y");
    return tm_write(m, dir, file);
}

static void residual_reference(const float *x, float *y)
{
    for (int b = 0; b < BATCH; b++) {
        double r[IN];
        for (int j = 0; j < IN; j++) {
            double acc = W.c1[j];
            for (int k = 0; k < IN; k++)
                acc += (double)x[b * IN + k] * W.r1[k * IN + j];
            r[j] = (acc > 0 ? acc : 0) + x[b * IN + j];
        }
        for (int j = 0; j < OUT; j++) {
            double acc = W.c2[j];
            for (int k = 0; k < IN; k++)
                acc += r[k] * W.r2[k * OUT + j];
            y[b * OUT + j] = (float)tanh(acc);
        }
    }
}

static void init_weights(void)
{
    make_values((float *)&W, sizeof W / sizeof(float), 7, 0.5f);
}

/* Runs PATH's model, checks it against REFERENCE, then converts it to
 * JSON, loads that and checks the outputs are bit-for-bit the same. */
static void check_model(pl_runtime *rt, const char *path, const char *out_name,
                        void (*reference)(const float *, float *))
{
    float x[BATCH * IN], want[BATCH * OUT];
    make_values(x, BATCH * IN, 3, 2.0f);
    reference(x, want);
    pl_model *m = load_ok(rt, path);
    TH_CHECK(pl_model_tensor_count(m) > 0, "empty model");
    float *z = run_once(m, x, BATCH, out_name, OUT);
    for (int i = 0; i < BATCH * OUT; i++)
        TH_CHECK(fabsf(z[i] - want[i]) <= 1e-5f, "%s[%d] = %.9g, reference %.9g", out_name, i,
                 z[i], want[i]);
    const char *json = th_path(th_tempdir(), "converted.json");
    TH_CHECK_OK(pl_model_save_json(m, json));
    pl_model_destroy(m);
    pl_model *mj = load_ok(rt, json);
    float *zj = run_once(mj, x, BATCH, out_name, OUT);
    TH_CHECK(memcmp(z, zj, sizeof(float) * BATCH * OUT) == 0,
             "ONNX -> JSON -> run differs from ONNX -> run");
    pl_model_destroy(mj);
    free(z);
    free(zj);
}

static void mlp_ref4(const float *x, float *z)
{
    mlp_reference(x, BATCH, z);
}

static void good_mlp(storage mode)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    check_model(rt, write_mlp(mode, th_tempdir(), "mlp.onnx", false), "z", mlp_ref4);
    pl_runtime_destroy(rt);
}

static void good_residual(storage mode)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    check_model(rt, write_residual(mode, th_tempdir(), "residual.onnx"), "y",
                residual_reference);
    pl_runtime_destroy(rt);
}

static void case_mlp_raw(void) { good_mlp(S_RAW); }
static void case_mlp_float_data(void) { good_mlp(S_FLOAT_DATA); }
static void case_mlp_external(void) { good_mlp(S_EXTERNAL); }
static void case_mlp_mixed(void) { good_mlp(S_MIXED); }
static void case_residual_raw(void) { good_residual(S_RAW); }
static void case_residual_float_data(void) { good_residual(S_FLOAT_DATA); }
static void case_residual_external(void) { good_residual(S_EXTERNAL); }
static void case_residual_mixed(void) { good_residual(S_MIXED); }

/* Input ["batch", 16]: bound to 4 and run. */
/* Weights in raw_data big enough for the core to read them from the file
 * itself (builder_constant_model_file), after the import, in pieces of 4
 * MiB spread over the runtime's two threads (graph_builder.c): a 6 MiB
 * matrix (two pieces), its bias and a second matrix, behind a 3-byte
 * initializer that leaves them at unaligned offsets. The matrix (an output
 * through an Identity) is compared byte for byte with the file's, the
 * product with a reference in double. */
static void case_big_raw_weights(void)
{
    enum { K = 1024, N1 = 1536, N2 = 8, B = 2 };
    float *w1 = xmalloc(sizeof(float) * K * N1), *b1 = xmalloc(sizeof(float) * N1);
    float *w2 = xmalloc(sizeof(float) * N1 * N2), x[B * K], y[B * N2];
    make_values(w1, K * N1, 5, 0.05f);
    make_values(b1, N1, 6, 0.5f);
    make_values(w2, N1 * N2, 8, 0.05f);
    make_values(x, B * K, 9, 1.0f);
    Onnx__ModelProto *m = tm_model();
    tm_opset(m, "", 13);
    tm_input(m, tm_vi("x", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){B, K}, NULL));
    tm_output(m, tm_vi("y", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){B, N2}, NULL));
    tm_output(m, tm_vi("w1_out", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){K, N1},
                       NULL));
    Onnx__TensorProto *pad = tm_tensor("pad", ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, 1,
                                       (int64_t[]){3});
    tm_raw(pad, "abc", 3);
    tm_init(m, pad);
    Onnx__TensorProto *t = tm_tensor("w1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2,
                                     (int64_t[]){K, N1});
    tm_raw(t, w1, sizeof(float) * K * N1);
    tm_init(m, t);
    t = tm_tensor("b1", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 1, (int64_t[]){N1});
    tm_raw(t, b1, sizeof(float) * N1);
    tm_init(m, t);
    t = tm_tensor("w2", ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, 2, (int64_t[]){N1, N2});
    tm_raw(t, w2, sizeof(float) * N1 * N2);
    tm_init(m, t);
    tm_node(m, "MatMul", "mm1", "x,w1", "h");
    tm_node(m, "Add", "add1", "h,b1", "hb");
    tm_node(m, "MatMul", "mm2", "hb,w2", "y");
    tm_node(m, "Identity", "keep", "w1", "w1_out");
    const char *path = tm_write(m, th_tempdir(), "big_raw.onnx");
    pl_runtime *rt = runtime_with(NULL);
    pl_model *model = load_ok(rt, path);
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(model, NULL, &s));
    int64_t xs[2] = {B, K}, ys[2] = {B, N2};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32, .shape = xs,
                                        .struct_size = sizeof(pl_tensor)}};
    int64_t ws[2] = {K, N1};
    float *w1_out = xmalloc(sizeof(float) * K * N1);
    pl_io out[2] = {{.name = "y", .tensor = {.data = y, .ndim = 2, .dtype = PL_DTYPE_F32,
                                             .shape = ys, .struct_size = sizeof(pl_tensor)}},
                    {.name = "w1_out", .tensor = {.data = w1_out, .ndim = 2, .dtype = PL_DTYPE_F32,
                                                  .shape = ws, .struct_size = sizeof(pl_tensor)}}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, out, 2));
    /* every byte of the matrix, both pieces, as the file holds it */
    TH_CHECK(memcmp(w1_out, w1, sizeof(float) * K * N1) == 0, "w1 read back differs");
    free(w1_out);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N2; j++) {
            double want = 0;
            for (int n = 0; n < N1; n++) {
                double h = b1[n];
                for (int k = 0; k < K; k++)
                    h += (double)x[b * K + k] * w1[(size_t)k * N1 + n];
                want += h * w2[n * N2 + j];
            }
            TH_CHECK(fabs(y[b * N2 + j] - want) <= 1e-4 * (1 + fabs(want)),
                     "y[%d][%d] = %.9g, reference %.9g", b, j, y[b * N2 + j], want);
        }
    pl_session_destroy(s);
    pl_model_destroy(model);
    pl_runtime_destroy(rt);
    free(w1), free(b1), free(w2);
}

static void case_symbolic_batch(void)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    pl_model *m = load_ok(rt, write_mlp(S_RAW, th_tempdir(), "mlp.onnx", true));
    TH_CHECK_OK(pl_model_bind_input(m, "x", 2, (int64_t[]){4, 16}));
    float x[BATCH * IN], want[BATCH * OUT];
    make_values(x, BATCH * IN, 5, 2.0f);
    mlp_reference(x, BATCH, want);
    float *z = run_once(m, x, BATCH, "z", OUT);
    for (int i = 0; i < BATCH * OUT; i++)
        TH_CHECK(fabsf(z[i] - want[i]) <= 1e-5f, "z[%d] = %.9g, reference %.9g", i, z[i],
                 want[i]);
    free(z);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* The residual model lists r1 as an input too (older exporters): it is a
 * constant, and the session has x alone as its input. */
static void case_initializers_as_inputs(void)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    pl_model *m = load_ok(rt, write_residual(S_RAW, th_tempdir(), "residual.onnx"));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    TH_CHECK(pl_session_input_count(s) == 1, "%zu inputs, expected 1",
             pl_session_input_count(s));
    TH_CHECK(strcmp(pl_session_input_name(s, 0), "x") == 0, "input is not x");
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* String tensors through the C API (core/src/strtab.h): x (strings) -> an
 * Identity y and Equal(x, "b"); the input's dtype reads PL_DTYPE_STRING,
 * a run gives y as pointers into one buffer, strings the model never saw
 * included; a NULL element, a numeric tensor for a string input and a
 * caller's buffer for a string output are refused with the reason; the
 * JSON writer refuses the model. */
static void case_strings_c_api(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "", 19);
    tm_input(mp, tm_vi("x", T_STRING, 1, (int64_t[]){3}, NULL));
    tm_output(mp, tm_vi("y", T_STRING, 1, (int64_t[]){3}, NULL));
    tm_output(mp, tm_vi("e", T_BOOL, 1, (int64_t[]){3}, NULL));
    Onnx__TensorProto *b = tm_tensor("b", T_STRING, 0, NULL);
    b->string_data = xmalloc(sizeof *b->string_data);
    b->string_data[0].data = (uint8_t *)xstrdup("b");
    b->string_data[0].len = 1;
    b->n_string_data = 1;
    tm_init(mp, b);
    tm_node(mp, "Identity", "id", "x", "y");
    tm_node(mp, "Equal", "eq", "x,b", "e");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "strings.onnx"));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    pl_dtype dt;
    pl_session_input_type(s, 0, &dt, NULL, NULL);
    TH_CHECK(PL_DTYPE_EQ(dt, PL_DTYPE_STRING), "input x reads code %u, %u bits", dt.code,
             dt.bits);
    pl_session_output_type(s, 1, &dt, NULL, NULL);
    TH_CHECK(PL_DTYPE_EQ(dt, PL_DTYPE_BOOL), "output e is not bool");
    const char *words[3] = {"a", "b", "never seen"};
    int64_t shape[1] = {3};
    pl_io in = {"x", {.data = words, .device = {PL_DEVICE_CPU, 0}, .ndim = 1,
                      .dtype = PL_DTYPE_STRING, .shape = shape, .struct_size = sizeof(pl_tensor)}};
    pl_io out[2] = {{.name = "y"}, {.name = "e"}};
    TH_CHECK_OK(pl_session_run(s, &in, 1, out, 2));
    TH_CHECK(PL_DTYPE_EQ(out[0].tensor.dtype, PL_DTYPE_STRING), "y is not strings");
    const char *const *y = out[0].tensor.data;
    const uint8_t *e = out[1].tensor.data;
    for (int i = 0; i < 3; i++) {
        TH_CHECK(strcmp(y[i], words[i]) == 0, "y[%d] = \"%s\", expected \"%s\"", i, y[i],
                 words[i]);
        TH_CHECK(y[i] != words[i], "y[%d] points at the caller's string", i);
        TH_CHECK(e[i] == (i == 1), "e[%d] = %d", i, e[i]);
    }
    pl_buffer_free(out[0].tensor.data);
    pl_buffer_free(out[1].tensor.data);
    /* refusals, each with its reason */
    const char *with_null[3] = {"a", NULL, "c"};
    in.tensor.data = with_null;
    memset(out, 0, sizeof out);
    out[0].name = "y";
    expect_status(pl_session_run(s, &in, 1, out, 1), "input 'x': string element 1 is NULL");
    TH_CHECK(out[0].tensor.data == NULL, "a failed run left an output buffer");
    int64_t ids[3] = {0, 1, 2};
    in.tensor.data = ids;
    in.tensor.dtype = PL_DTYPE_I64;
    expect_status(pl_session_run(s, &in, 1, out, 1),
                  "input 'x' is a string tensor: give its elements as const char *");
    in.tensor.data = words;
    in.tensor.dtype = PL_DTYPE_STRING;
    const char *mine[3];
    out[0].tensor = (pl_tensor){.data = mine, .device = {PL_DEVICE_CPU, 0}, .ndim = 1,
                                .dtype = PL_DTYPE_STRING, .shape = shape,
                                .struct_size = sizeof(pl_tensor)};
    expect_status(pl_session_run(s, &in, 1, out, 1),
                  "output 'y' is a string tensor: leave its data NULL");
    expect_status(pl_model_save_json(m, th_path(th_tempdir(), "strings.json")),
                  "string tensors, which Plinth's JSON graph format does not carry");
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* The ops on text from several threads at once on one session (the run's
 * string table, ABI 1.14, takes strings from kernels of every thread): x
 * (strings [N]) -> StringNormalizer LOWER -> n; com.microsoft Tokenizer
 * (tokenexp [a-z]+, padded with "-") of n -> t, whose width depends on the
 * text (a staged session: each thread's runs plan tails of other widths);
 * StringConcat(n, "!") -> c. Each thread runs its own words and checks
 * them. */
enum { TX_THREADS = 4, TX_RUNS = 25 };

typedef struct tx_job {
    pl_session *s;
    int id;
    int failures;
} tx_job;

static void *tx_thread(void *arg)
{
    tx_job *j = arg;
    char words[3][48], lower[3][48], want_c[3][160];
    for (int r = 0; r < TX_RUNS; r++) {
        /* thread 0's words have one token; others' up to id + 2 */
        for (int i = 0; i < 3; i++) {
            int toks = 1 + (j->id + r + i) % (j->id + 2);
            int len = 0;
            for (int k = 0; k < toks; k++)
                len += snprintf(words[i] + len, sizeof words[i] - (size_t)len, "%sW%cr%d",
                                k ? " " : "", 'a' + j->id, k);
            for (int c = 0; c <= len; c++)
                lower[i][c] = (char)(words[i][c] >= 'A' && words[i][c] <= 'Z' ? words[i][c] + 32
                                                                              : words[i][c]);
            snprintf(want_c[i], sizeof want_c[i], "%s!", lower[i]);
        }
        const char *x[3] = {words[0], words[1], words[2]};
        int64_t shape[1] = {3};
        pl_io in = {"x", {.data = x, .device = {PL_DEVICE_CPU, 0}, .ndim = 1,
                          .dtype = PL_DTYPE_STRING, .shape = shape,
                          .struct_size = sizeof(pl_tensor)}};
        pl_io out[3] = {{.name = "n"}, {.name = "t"}, {.name = "c"}};
        pl_status *st = pl_session_run(j->s, &in, 1, out, 3);
        if (st != NULL) {
            fprintf(stderr, "thread %d run %d: %s\n", j->id, r, pl_status_message(st));
            pl_status_free(st);
            j->failures++;
            continue;
        }
        const char *const *n = out[0].tensor.data, *const *t = out[1].tensor.data,
                          *const *c = out[2].tensor.data;
        int64_t width = out[1].tensor.ndim == 2 ? out[1].tensor.shape[1] : -1;
        j->failures += width < 1 || width > j->id + 2 ? 1 : 0; /* [a-z]+: "wXr" per word */
        for (int i = 0; i < 3; i++) {
            j->failures += strcmp(n[i], lower[i]) != 0;
            j->failures += strcmp(c[i], want_c[i]) != 0;
            /* the tokens of "wxr0 wxr1": "wxr", "r" ... as [a-z]+ finds them */
            char joined[128] = "";
            for (int64_t k = 0; k < width; k++)
                if (strcmp(t[i * width + k], "-") != 0)
                    snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s|",
                             t[i * width + k]);
            char want[128] = "";
            for (const char *p = lower[i]; *p;) {
                size_t run = strspn(p, "abcdefghijklmnopqrstuvwxyz");
                if (run > 0)
                    snprintf(want + strlen(want), sizeof want - strlen(want), "%.*s|",
                             (int)run, p);
                p += run ? run : 1;
            }
            if (strcmp(joined, want) != 0) {
                fprintf(stderr, "thread %d run %d: tokens %s, expected %s\n", j->id, r, joined,
                        want);
                j->failures++;
            }
        }
        for (int o = 0; o < 3; o++)
            pl_buffer_free(out[o].tensor.data);
    }
    return NULL;
}

static void case_strings_text_threads(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "", 20);
    tm_opset(mp, "com.microsoft", 1);
    tm_input(mp, tm_vi("x", T_STRING, 1, (int64_t[]){-1}, (const char *[]){"n"}));
    tm_output(mp, tm_vi("n", T_STRING, 1, (int64_t[]){-1}, (const char *[]){"n"}));
    tm_output(mp, tm_vi("t", T_STRING, -1, NULL, NULL));
    tm_output(mp, tm_vi("c", T_STRING, 1, (int64_t[]){-1}, (const char *[]){"n"}));
    Onnx__TensorProto *bang = tm_tensor("bang", T_STRING, 0, NULL);
    bang->string_data = xmalloc(sizeof *bang->string_data);
    bang->string_data[0].data = (uint8_t *)xstrdup("!");
    bang->string_data[0].len = 1;
    bang->n_string_data = 1;
    tm_init(mp, bang);
    tm_attr_s(tm_node(mp, "StringNormalizer", "norm", "x", "n"), "case_change_action", "LOWER");
    Onnx__NodeProto *tok = tm_node(mp, "Tokenizer", "tok", "n", "t");
    tok->domain = xstrdup("com.microsoft");
    tm_attr_i(tok, "mark", 0);
    tm_attr_i(tok, "mincharnum", 1);
    tm_attr_s(tok, "pad_value", "-");
    tm_attr_s(tok, "tokenexp", "[a-z]+");
    tm_node(mp, "StringConcat", "cat", "n,bang", "c");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "text_threads.onnx"));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    pthread_t th[TX_THREADS];
    tx_job jobs[TX_THREADS];
    for (int i = 0; i < TX_THREADS; i++) {
        jobs[i] = (tx_job){.s = s, .id = i};
        TH_CHECK(pthread_create(&th[i], NULL, tx_thread, &jobs[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < TX_THREADS; i++) {
        pthread_join(th[i], NULL);
        TH_CHECK(jobs[i].failures == 0, "thread %d: %d wrong outputs", i, jobs[i].failures);
    }
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* Every form of Constant: value_float, value_floats, value_int (unused),
 * value_ints (a Reshape shape). y = reshape(x + 0.5 + v, [4, 16]). */
static void case_constant_forms(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_xy_model("ai.onnx", 13, IN);
    float v[IN];
    make_values(v, IN, 11, 1.0f);
    tm_attr_f(tm_node(mp, "Constant", "half", NULL, "h"), "value_float", 0.5f);
    tm_attr_floats(tm_node(mp, "Constant", "vec", NULL, "v"), "value_floats", IN, v);
    tm_attr_i(tm_node(mp, "Constant", "kay", NULL, "k"), "value_int", 42);
    tm_attr_ints(tm_node(mp, "Constant", "shp", NULL, "s"), "value_ints", 2,
                 (int64_t[]){BATCH, IN});
    tm_node(mp, "Add", "add_h", "x,h", "a");
    tm_node(mp, "Add", "add_v", "a,v", "b");
    tm_node(mp, "Reshape", "reshape", "b,s", "y");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "constants.onnx"));
    float x[BATCH * IN];
    make_values(x, BATCH * IN, 2, 2.0f);
    float *y = run_once(m, x, BATCH, "y", IN);
    for (int i = 0; i < BATCH * IN; i++) {
        float want = (x[i] + 0.5f) + v[i % IN];
        TH_CHECK(y[i] == want, "y[%d] = %.9g, expected %.9g", i, y[i], want);
    }
    free(y);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* A sparse tensor as ONNX holds it: VALUES (NNZ floats) at INDICES (NNZ
 * linear ones, or NNZ rows of RANK coordinates when COORDS) of a dense
 * tensor of DIMS. */
static Onnx__SparseTensorProto *tm_sparse(const char *name, int rank, const int64_t *dims,
                                          size_t nnz, const float *values,
                                          const int64_t *indices, bool coords)
{
    Onnx__SparseTensorProto *sp = xmalloc(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    sp->values = tm_tensor(name, T_FLOAT, 1, (int64_t[]){(int64_t)nnz});
    tm_float_data(sp->values, values, nnz);
    size_t n_idx = coords ? nnz * (size_t)rank : nnz;
    sp->indices = coords ? tm_tensor("", 7, 2, (int64_t[]){(int64_t)nnz, rank})
                         : tm_tensor("", 7, 1, (int64_t[]){(int64_t)nnz});
    tm_raw(sp->indices, indices, n_idx * sizeof *indices);
    sp->n_dims = (size_t)rank;
    sp->dims = xmalloc((size_t)rank * sizeof *sp->dims);
    memcpy(sp->dims, dims, (size_t)rank * sizeof *dims);
    return sp;
}

/* Sparse tensors become dense constants: a sparse initializer with linear
 * indices and a Constant's sparse_value with one coordinate per axis
 * (ONNX Runtime takes both). */
static void case_sparse_forms(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_xy_model("ai.onnx", 13, IN);
    const float wv[3] = {1.5f, -2.0f, 4.0f}, cv[2] = {0.25f, 8.0f};
    const int64_t wi[3] = {0, IN + 3, BATCH * IN - 1}, ci[2] = {2, IN - 1};
    Onnx__SparseTensorProto *w =
        tm_sparse("w", 2, (int64_t[]){BATCH, IN}, 3, wv, wi, false);
    APPEND(mp->graph->sparse_initializer, mp->graph->n_sparse_initializer, w);
    tm_attr(tm_node(mp, "Constant", "cst", NULL, "c"), "sparse_value",
            ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR)
        ->sparse_tensor = tm_sparse("c", 1, (int64_t[]){IN}, 2, cv, ci, true);
    tm_node(mp, "Add", "add_w", "x,w", "a");
    tm_node(mp, "Add", "add_c", "a,c", "y");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "sparse.onnx"));
    float x[BATCH * IN];
    make_values(x, BATCH * IN, 5, 2.0f);
    float *y = run_once(m, x, BATCH, "y", IN);
    for (int i = 0; i < BATCH * IN; i++) {
        float wd = i == 0 ? wv[0] : i == IN + 3 ? wv[1] : i == BATCH * IN - 1 ? wv[2] : 0.0f;
        float cd = i % IN == 2 ? cv[0] : i % IN == IN - 1 ? cv[1] : 0.0f;
        float want = (x[i] + wd) + cd;
        TH_CHECK(y[i] == want, "y[%d] = %.9g, expected %.9g", i, y[i], want);
    }
    free(y);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* A tensor listed twice among a model's outputs (ONNX Runtime takes such a
 * model and returns it at both places), and a graph input listed as an
 * output twice: outputs y = Relu(x), z = -y, y, x, x; "batch" fixed or
 * symbolic (a staged session). Each request gets its own buffer with the
 * values; a repeated request into the caller's buffer is written there; one
 * of the wrong shape fails the run naming the output and leaves every
 * request as it was; pl_session_run_arrays copies too. Output c is an
 * initializer (a staged session copies it too). */
static void output_twice(bool symbolic)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "", 17);
    const char *params[2] = {"batch", NULL};
    int64_t d[2] = {symbolic ? -1 : BATCH, IN};
    tm_input(mp, tm_vi("x", T_FLOAT, 2, d, params));
    const char *outs[6] = {"y", "z", "y", "x", "x", "c"};
    for (int i = 0; i < 5; i++)
        tm_output(mp, tm_vi(outs[i], T_FLOAT, 2, d, params));
    tm_output(mp, tm_vi("c", T_FLOAT, 1, (int64_t[]){IN}, NULL));
    float cv[IN];
    make_values(cv, IN, 3, 1.0f);
    Onnx__TensorProto *ct = tm_tensor("c", T_FLOAT, 1, (int64_t[]){IN});
    tm_raw(ct, cv, sizeof cv);
    tm_init(mp, ct);
    tm_node(mp, "Relu", "relu", "x", "y");
    tm_node(mp, "Neg", "neg", "y", "z");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "twice.onnx"));
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    TH_CHECK(pl_session_output_count(s) == 6, "%zu outputs, expected 6",
             pl_session_output_count(s));
    for (size_t i = 0; i < 6; i++)
        TH_CHECK(strcmp(pl_session_output_name(s, i), outs[i]) == 0, "output %zu is %s", i,
                 pl_session_output_name(s, i));
    float x[BATCH * IN], mine[BATCH * IN];
    make_values(x, BATCH * IN, 7, 2.0f);
    int64_t xs[2] = {BATCH, IN}, wrong[2] = {BATCH, IN - 1};
    pl_io in = {.name = "x", .tensor = {.data = x, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = xs, .struct_size = sizeof(pl_tensor)}};
    for (int round = 0; round < 3; round++) {
        pl_io out[6];
        for (int i = 0; i < 6; i++)
            out[i] = (pl_io){.name = outs[i]};
        if (round >= 1) { /* the repeated y into the caller's buffer */
            memset(mine, 0, sizeof mine);
            out[2].tensor = (pl_tensor){.data = mine, .ndim = 2, .dtype = PL_DTYPE_F32,
                                        .shape = round == 1 ? xs : wrong,
                                        .struct_size = sizeof(pl_tensor)};
        }
        pl_status *st = pl_session_run(s, &in, 1, out, 6);
        if (round == 2) {
            TH_CHECK(st != NULL, "a repeated output of the wrong shape was taken");
            TH_CHECK_CONTAINS(pl_status_message(st), "output 'y' (asked for again) must be");
            pl_status_free(st);
            for (int i = 0; i < 6; i++)
                TH_CHECK((i == 2) == (out[i].tensor.data != NULL),
                         "request %d changed by a failed run", i);
            continue;
        }
        TH_CHECK_OK(st);
        TH_CHECK(out[5].tensor.data != NULL && out[5].tensor.ndim == 1 &&
                     out[5].tensor.shape[0] == IN &&
                     memcmp(out[5].tensor.data, cv, sizeof cv) == 0,
                 "the constant output differs");
        for (int i = 0; i < 5; i++) {
            TH_CHECK(out[i].tensor.data != NULL && out[i].tensor.ndim == 2 &&
                         out[i].tensor.shape[0] == BATCH && out[i].tensor.shape[1] == IN,
                     "request %d: no data or the wrong shape", i);
            for (int j = 0; j < i; j++)
                TH_CHECK(out[i].tensor.data != out[j].tensor.data,
                         "requests %d and %d share a buffer", j, i);
        }
        TH_CHECK(round == 0 || out[2].tensor.data == mine, "the caller's buffer was not used");
        for (int k = 0; k < BATCH * IN; k++) {
            float r = x[k] > 0.0f ? x[k] : 0.0f;
            const float *v[5];
            for (int i = 0; i < 5; i++)
                v[i] = out[i].tensor.data;
            TH_CHECK(v[0][k] == r && v[2][k] == r && v[1][k] == -r && v[3][k] == x[k] &&
                         v[4][k] == x[k],
                     "element %d: y %g, z %g, y %g, x %g, x %g (x = %g)", k, v[0][k], v[1][k],
                     v[2][k], v[3][k], v[4][k], x[k]);
        }
        for (int i = 0; i < 6; i++)
            if (out[i].tensor.data != mine)
                pl_buffer_free(out[i].tensor.data);
    }
    if (!symbolic) { /* (a staged session runs only pl_session_run) */
        pl_array *xa = NULL;
        TH_CHECK_OK(pl_array_create(rt, NULL, 0, PL_DTYPE_F32, 2, xs, &xa));
        TH_CHECK_OK(pl_array_copy_from_host(xa, x, sizeof x));
        pl_array_io ain = {.name = "x", .array = xa}, aout[3] = {{"y", NULL}, {"z", NULL}, {"y", NULL}};
        TH_CHECK_OK(pl_session_run_arrays(s, &ain, 1, aout, 3));
        float a[BATCH * IN], b[BATCH * IN];
        TH_CHECK_OK(pl_array_copy_to_host(aout[0].array, a, sizeof a));
        TH_CHECK_OK(pl_array_copy_to_host(aout[2].array, b, sizeof b));
        for (int k = 0; k < BATCH * IN; k++)
            TH_CHECK(a[k] == (x[k] > 0.0f ? x[k] : 0.0f) && b[k] == a[k],
                     "arrays: element %d: y %g and %g", k, a[k], b[k]);
        for (int i = 0; i < 3; i++)
            pl_array_destroy(aout[i].array);
        pl_array_destroy(xa);
    }
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static void case_output_twice(void) { output_twice(false); }
static void case_output_twice_symbolic(void) { output_twice(true); }

/* Weight-only 4-bit quantisation as ONNX 21 writes it: W [IN, 6] of INT4
 * (raw_data, two a byte) or UINT4 (int32_data, one byte an entry), a blocked
 * DequantizeLinear along axis 0 in blocks of 3 (the last block short: 16 =
 * 5 * 3 + 1) with a 4-bit zero point, then MatMul. y must be x times the
 * dequantized W, exactly as computed here. */
enum { Q4_N = 6, Q4_BLOCK = 3, Q4_BLOCKS = (IN + Q4_BLOCK - 1) / Q4_BLOCK };

static void q4_tensor(Onnx__ModelProto *mp, const char *name, bool is_signed, const int *v,
                      int rows)
{
    size_t n = (size_t)rows * Q4_N, packed = (n + 1) / 2;
    Onnx__TensorProto *t = tm_tensor(name, is_signed ? 22 : 21, 2, (int64_t[]){rows, Q4_N});
    uint8_t bytes[IN * Q4_N];
    memset(bytes, 0, sizeof bytes);
    for (size_t i = 0; i < n; i++)
        bytes[i / 2] |= (uint8_t)((v[i] & 15) << (i % 2 ? 4 : 0));
    if (is_signed) {
        tm_raw(t, bytes, packed);
    } else {
        t->int32_data = xmalloc(packed * sizeof *t->int32_data);
        for (size_t i = 0; i < packed; i++)
            t->int32_data[i] = bytes[i];
        t->n_int32_data = packed;
    }
    tm_init(mp, t);
}

static void int4_weights(bool is_signed)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_xy_model("ai.onnx", 21, Q4_N);
    int q[IN * Q4_N], zp[Q4_BLOCKS * Q4_N];
    float scale[Q4_BLOCKS * Q4_N], x[BATCH * IN];
    uint32_t r = 7;
    for (int i = 0; i < IN * Q4_N; i++, r = r * 1664525u + 1013904223u)
        q[i] = (int)(r >> 28) - (is_signed ? 8 : 0);
    for (int i = 0; i < Q4_BLOCKS * Q4_N; i++, r = r * 1664525u + 1013904223u)
        zp[i] = (int)(r >> 28) - (is_signed ? 8 : 0);
    make_values(scale, Q4_BLOCKS * Q4_N, 3, 0.1f);
    make_values(x, BATCH * IN, 4, 2.0f);
    q4_tensor(mp, "wq", is_signed, q, IN);
    q4_tensor(mp, "wz", is_signed, zp, Q4_BLOCKS);
    Onnx__TensorProto *ts = tm_tensor("ws", T_FLOAT, 2, (int64_t[]){Q4_BLOCKS, Q4_N});
    tm_raw(ts, scale, sizeof scale);
    tm_init(mp, ts);
    Onnx__NodeProto *dq = tm_node(mp, "DequantizeLinear", "dq", "wq,ws,wz", "w");
    tm_attr_i(dq, "axis", 0);
    tm_attr_i(dq, "block_size", Q4_BLOCK);
    tm_node(mp, "MatMul", "mm", "x,w", "y");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "int4.onnx"));
    float *y = run_once(m, x, BATCH, "y", Q4_N);
    for (int b = 0; b < BATCH; b++)
        for (int j = 0; j < Q4_N; j++) {
            double want = 0;
            for (int k = 0; k < IN; k++) {
                int blk = (k / Q4_BLOCK) * Q4_N + j;
                want += (double)x[b * IN + k] *
                        (double)((float)(q[k * Q4_N + j] - zp[blk]) * scale[blk]);
            }
            TH_CHECK(fabs(y[b * Q4_N + j] - want) <= 1e-5 * (1 + fabs(want)),
                     "y[%d][%d] = %.9g, expected %.9g", b, j, y[b * Q4_N + j], want);
        }
    free(y);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

static void case_int4_weights(void) { int4_weights(true); }
static void case_uint4_weights(void) { int4_weights(false); }

/* A 4-bit initializer read by anything but DequantizeLinear's x or zero
 * point is refused by name (it is held one value a byte: an Add would
 * compute on it as i8, a QuantizeLinear to 4 bits would not saturate). */
static void case_int4_elsewhere(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "ai.onnx", 21);
    tm_input(mp, tm_vi("x", T_INT8, 2, (int64_t[]){IN, Q4_N}, NULL));
    tm_output(mp, tm_vi("y", T_INT8, 2, (int64_t[]){IN, Q4_N}, NULL));
    int q[IN * Q4_N] = {0};
    q4_tensor(mp, "wq", true, q, IN);
    tm_node(mp, "Add", "plus", "x,wq", "y");
    expect_load_error(rt, tm_write(mp, th_tempdir(), "int4_add.onnx"),
                      "node 'plus' (Add): input 1 'wq' is an INT4 or UINT4 initializer");
    pl_runtime_destroy(rt);
}

/* TensorScatter 24, the KV-cache update (mode circular): each batch entry's
 * update rows are written from write_indices[b] on, modulo the cache's
 * length, the rest of the cache as it was; write_indices is a run-time
 * input, so the lowering's indices are computed at run time. */
static void case_tensor_scatter(void)
{
    enum { TB = 2, TL = 5, TS = 3, TD = 2 };
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "ai.onnx", 24);
    tm_input(mp, tm_vi("cache", T_FLOAT, 3, (int64_t[]){TB, TL, TD}, NULL));
    tm_input(mp, tm_vi("upd", T_FLOAT, 3, (int64_t[]){TB, TS, TD}, NULL));
    tm_input(mp, tm_vi("at", T_INT64, 1, (int64_t[]){TB}, NULL));
    tm_output(mp, tm_vi("y", T_FLOAT, 3, (int64_t[]){TB, TL, TD}, NULL));
    Onnx__NodeProto *n = tm_node(mp, "TensorScatter", "kv", "cache,upd,at", "y");
    tm_attr_i(n, "axis", 1);
    Onnx__AttributeProto *mode = tm_attr(n, "mode", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    mode->s.data = (uint8_t *)xstrdup("circular");
    mode->s.len = strlen("circular");
    mode->has_s = 1;
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "tensor_scatter.onnx"));
    float cache[TB * TL * TD], upd[TB * TS * TD], want[TB * TL * TD];
    make_values(cache, TB * TL * TD, 21, 1.0f);
    make_values(upd, TB * TS * TD, 22, 1.0f);
    int64_t at[TB] = {1, 4}; /* the second wraps: rows 4, 0, 1 */
    memcpy(want, cache, sizeof cache);
    for (int b = 0; b < TB; b++)
        for (int r = 0; r < TS; r++)
            for (int d = 0; d < TD; d++)
                want[(b * TL + (at[b] + r) % TL) * TD + d] = upd[(b * TS + r) * TD + d];
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    int64_t cs[3] = {TB, TL, TD}, us[3] = {TB, TS, TD}, as[1] = {TB};
    pl_io in[3] = {
        {.name = "cache", .tensor = {.struct_size = sizeof(pl_tensor), .data = cache, .ndim = 3,
                                     .dtype = PL_DTYPE_F32, .shape = cs}},
        {.name = "upd", .tensor = {.struct_size = sizeof(pl_tensor), .data = upd, .ndim = 3,
                                   .dtype = PL_DTYPE_F32, .shape = us}},
        {.name = "at", .tensor = {.struct_size = sizeof(pl_tensor), .data = at, .ndim = 1,
                                  .dtype = PL_DTYPE_I64, .shape = as}}};
    pl_io out = {.name = "y"};
    TH_CHECK_OK(pl_session_run(s, in, 3, &out, 1));
    const float *y = out.tensor.data;
    for (int i = 0; i < TB * TL * TD; i++)
        TH_CHECK(y[i] == want[i], "y[%d] = %.9g, expected %.9g", i, y[i], want[i]);
    pl_buffer_free(out.tensor.data);
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* BitCast 26: f32 [2, 3] read as i32, bit for bit (and an f32 to i16,
 * which changes the width, refused by name). */
static void case_bitcast(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "ai.onnx", 26);
    tm_input(mp, tm_vi("x", T_FLOAT, 2, (int64_t[]){2, 3}, NULL));
    tm_output(mp, tm_vi("y", T_INT32, 2, (int64_t[]){2, 3}, NULL));
    tm_attr_i(tm_node(mp, "BitCast", "bits", "x", "y"), "to", T_INT32);
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "bitcast.onnx"));
    float x[6] = {1.0f, -2.5f, 0.0f, -0.0f, 3.0e38f, 1.0e-40f};
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    int64_t xs[2] = {2, 3};
    pl_io in = {.name = "x", .tensor = {.struct_size = sizeof(pl_tensor), .data = x, .ndim = 2,
                                        .dtype = PL_DTYPE_F32, .shape = xs}};
    pl_io out = {.name = "y"};
    TH_CHECK_OK(pl_session_run(s, &in, 1, &out, 1));
    TH_CHECK(PL_DTYPE_EQ(out.tensor.dtype, PL_DTYPE_I32), "y is not i32");
    TH_CHECK(memcmp(out.tensor.data, x, sizeof x) == 0, "y's bits differ from x's");
    pl_buffer_free(out.tensor.data);
    pl_session_destroy(s);
    pl_model_destroy(m);

    mp = tm_model();
    tm_opset(mp, "ai.onnx", 26);
    tm_input(mp, tm_vi("x", T_FLOAT, 1, (int64_t[]){4}, NULL));
    tm_output(mp, tm_vi("y", T_INT16, 1, (int64_t[]){4}, NULL));
    tm_attr_i(tm_node(mp, "BitCast", "narrow", "x", "y"), "to", T_INT16);
    expect_load_error(rt, tm_write(mp, th_tempdir(), "bitcast_width.onnx"),
                      "f32 and i16 differ in width");
    pl_runtime_destroy(rt);
}

/* CausalConvWithState 27 with a past state and SiLU: y[b, c, t] =
 * silu(sum_j w[c, 0, j] * [past | x][b, c, t + j] + bias[c]) and
 * present_state the last K - 1 steps of [past | x], against a reference. */
static void case_causal_conv(void)
{
    enum { CB = 2, CC = 3, CL = 5, CK = 3 };
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_model();
    tm_opset(mp, "ai.onnx", 27);
    tm_input(mp, tm_vi("x", T_FLOAT, 3, (int64_t[]){CB, CC, CL}, NULL));
    tm_input(mp, tm_vi("past", T_FLOAT, 3, (int64_t[]){CB, CC, CK - 1}, NULL));
    tm_output(mp, tm_vi("y", T_FLOAT, 3, (int64_t[]){CB, CC, CL}, NULL));
    tm_output(mp, tm_vi("state", T_FLOAT, 3, (int64_t[]){CB, CC, CK - 1}, NULL));
    float wv[CC * CK], bv[CC];
    make_values(wv, CC * CK, 31, 1.0f);
    make_values(bv, CC, 32, 1.0f);
    Onnx__TensorProto *wt = tm_tensor("w", T_FLOAT, 3, (int64_t[]){CC, 1, CK});
    tm_raw(wt, wv, sizeof wv);
    tm_init(mp, wt);
    Onnx__TensorProto *bt = tm_tensor("b", T_FLOAT, 1, (int64_t[]){CC});
    tm_raw(bt, bv, sizeof bv);
    tm_init(mp, bt);
    Onnx__NodeProto *n = tm_node(mp, "CausalConvWithState", "cc", "x,w,b,past", "y,state");
    Onnx__AttributeProto *act =
        tm_attr(n, "activation", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    act->s.data = (uint8_t *)xstrdup("silu");
    act->s.len = 4;
    act->has_s = 1;
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "causal_conv.onnx"));
    float x[CB * CC * CL], past[CB * CC * (CK - 1)];
    make_values(x, CB * CC * CL, 33, 2.0f);
    make_values(past, CB * CC * (CK - 1), 34, 2.0f);
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(m, NULL, &s));
    int64_t xs[3] = {CB, CC, CL}, ps[3] = {CB, CC, CK - 1};
    pl_io in[2] = {
        {.name = "x", .tensor = {.struct_size = sizeof(pl_tensor), .data = x, .ndim = 3,
                                 .dtype = PL_DTYPE_F32, .shape = xs}},
        {.name = "past", .tensor = {.struct_size = sizeof(pl_tensor), .data = past, .ndim = 3,
                                    .dtype = PL_DTYPE_F32, .shape = ps}}};
    pl_io out[2] = {{.name = "y"}, {.name = "state"}};
    TH_CHECK_OK(pl_session_run(s, in, 2, out, 2));
    const float *y = out[0].tensor.data, *st = out[1].tensor.data;
    for (int b = 0; b < CB; b++)
        for (int c = 0; c < CC; c++) {
            float cat[CK - 1 + CL];
            for (int t = 0; t < CK - 1; t++)
                cat[t] = past[(b * CC + c) * (CK - 1) + t];
            for (int t = 0; t < CL; t++)
                cat[CK - 1 + t] = x[(b * CC + c) * CL + t];
            for (int t = 0; t < CL; t++) {
                double v = bv[c];
                for (int j = 0; j < CK; j++)
                    v += (double)wv[c * CK + j] * cat[t + j];
                double want = v / (1.0 + exp(-v));
                float got = y[(b * CC + c) * CL + t];
                TH_CHECK(fabs(got - want) <= 1e-5 * (1 + fabs(want)),
                         "y[%d,%d,%d] = %.9g, expected %.9g", b, c, t, got, want);
            }
            for (int t = 0; t < CK - 1; t++)
                TH_CHECK(st[(b * CC + c) * (CK - 1) + t] == cat[CL + t],
                         "state[%d,%d,%d] = %.9g, expected %.9g", b, c, t,
                         st[(b * CC + c) * (CK - 1) + t], cat[CL + t]);
        }
    pl_buffer_free(out[0].tensor.data);
    pl_buffer_free(out[1].tensor.data);
    pl_session_destroy(s);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* A float16 conversion's stale value_info (onnxconverter_common, keep_io_types):
 * the graph output y is declared f32 in the outputs and f16 in value_info,
 * and the intermediate a f16 though Relu of an f32 makes it f32. The
 * outputs' declaration wins over value_info, and an intermediate's stale
 * dtype gives way to the inferred one, as in ONNX Runtime. */
static void case_stale_value_info_dtype(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_xy_model("", 13, IN);
    APPEND(mp->graph->value_info, mp->graph->n_value_info,
           tm_vi("y", T_FLOAT16, 2, (int64_t[]){BATCH, IN}, NULL));
    APPEND(mp->graph->value_info, mp->graph->n_value_info,
           tm_vi("a", T_FLOAT16, 2, (int64_t[]){BATCH, IN}, NULL));
    tm_node(mp, "Relu", "relu", "x", "a");
    tm_node(mp, "Neg", "neg", "a", "y");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "stale_vi.onnx"));
    float x[BATCH * IN];
    make_values(x, BATCH * IN, 3, 2.0f);
    float *y = run_once(m, x, BATCH, "y", IN);
    for (int i = 0; i < BATCH * IN; i++) {
        float want = -(x[i] > 0 ? x[i] : 0.0f);
        TH_CHECK(y[i] == want, "y[%d] = %.9g, expected %.9g", i, y[i], want);
    }
    free(y);
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* The file is named .pb: the module recognises a ModelProto by its first
 * bytes. A file that is neither is refused by every module. */
static void case_by_content(void)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    const char *dir = th_tempdir();
    pl_model *m = load_ok(rt, write_mlp(S_RAW, dir, "model.pb", false));
    pl_model_destroy(m);
    const char *other = th_path(dir, "other.bin");
    write_bytes(other, "\x01\x02\x03\x04 not a model", 17);
    expect_load_error(rt, other, "no loaded format module reads it");
    pl_runtime_destroy(rt);
}

/* Integer-coded tensors (int32_data for u8, i8, bool, f16; int64_data)
 * load as constants of the right dtype and size. */
static void case_int32_data_types(void)
{
    pl_runtime *rt = runtime_with(NULL);
    Onnx__ModelProto *mp = tm_xy_model("", 13, IN);
    const int32_t types[] = {T_UINT8, T_INT8, T_BOOL, T_FLOAT16, T_INT32};
    const int32_t values[] = {255, -128, 1, 0x3c00, -7};
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        Onnx__TensorProto *t = tm_tensor(name, types[i], 1, (int64_t[]){3});
        t->int32_data = xmalloc(3 * sizeof(int32_t));
        for (int k = 0; k < 3; k++)
            t->int32_data[k] = k == 0 ? values[i] : 0;
        t->n_int32_data = 3;
        tm_init(mp, t);
        tm_output(mp, tm_vi(name, 0, -1, NULL, NULL));
    }
    tm_node(mp, "Relu", "relu", "x", "y");
    pl_model *m = load_ok(rt, tm_write(mp, th_tempdir(), "ints.onnx"));
    /* Saving writes every constant back out with its dtype's size. */
    TH_CHECK_OK(pl_model_save_json(m, th_path(th_tempdir(), "ints.json")));
    pl_model_destroy(m);
    pl_runtime_destroy(rt);
}

/* FLOATS and STRINGS attributes reach the core: Relu has no such
 * attributes, so the core's inference (after the import) names them. */
static void case_attrs_reach_core(void)
{
    pl_runtime *rt = runtime_with(NULL);
    const char *dir = th_tempdir();
    for (int pass = 0; pass < 2; pass++) {
        Onnx__ModelProto *mp = tm_model();
        tm_opset(mp, "", 13);
        tm_input(mp, tm_vi("x", T_FLOAT, 1, (int64_t[]){3}, NULL));
        tm_output(mp, tm_vi("y", T_FLOAT, 1, (int64_t[]){3}, NULL));
        Onnx__NodeProto *n = tm_node(mp, "Relu", "relu", "x", "y");
        if (pass == 0)
            tm_attr_floats(n, "alphas", 2, (float[]){1.5f, 2.5f});
        else
            tm_attr_strings(n, "modes", 2, (const char *const[]){"a", "bc"}, NULL);
        expect_load_error(rt, tm_write(mp, dir, pass ? "s.onnx" : "f.onnx"),
                          pass ? "modes" : "alphas");
    }
    pl_runtime_destroy(rt);
}

/* Thousands of randomly damaged copies of a good model (bytes flipped,
 * overwritten, cut, duplicated): each load either succeeds or fails with a
 * message naming the file; none crashes, hangs or leaks. */
static void case_mutations(void)
{
    init_weights();
    pl_runtime *rt = runtime_with(NULL);
    const char *dir = th_tempdir();
    const char *good = write_mlp(S_MIXED, dir, "good.onnx", true);
    FILE *f = fopen(good, "rb");
    TH_CHECK(f != NULL, "cannot read %s", good);
    uint8_t base[16384];
    size_t len = fread(base, 1, sizeof base, f);
    fclose(f);
    TH_CHECK(len > 0 && len < sizeof base, "model size %zu", len);
    const char *path = th_path(dir, "mutant.onnx");
    uint8_t buf[2 * sizeof base];
    uint32_t s = 12345;
    size_t loaded = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, base, len);
        size_t n = len;
        int edits = 1 + iter % 4;
        for (int e = 0; e < edits && n > 0; e++) {
            s = s * 1664525u + 1013904223u;
            size_t at = (s >> 8) % n;
            switch ((s >> 4) % 4) {
            case 0:
                buf[at] ^= (uint8_t)(1u << ((s >> 20) % 8));
                break;
            case 1:
                buf[at] = (uint8_t)(s >> 24);
                break;
            case 2:
                n = at;
                break;
            default: { /* duplicate a slice */
                size_t k = 1 + (s >> 16) % 32;
                if (at + k <= n && n + k <= sizeof buf) {
                    memmove(buf + at + k, buf + at, n - at);
                    n += k;
                }
                break;
            }
            }
        }
        write_bytes(path, buf, n);
        pl_model *m = NULL;
        pl_status *st = pl_model_load(rt, path, &m);
        if (st == NULL) {
            loaded++;
            pl_model_destroy(m);
        } else {
            TH_CHECK(strlen(pl_status_message(st)) > 0, "empty error message");
            pl_status_free(st);
        }
    }
    fprintf(stderr, "%zu of 3000 mutants loaded\n", loaded);
    pl_runtime_destroy(rt);
}

/* ---- the plinth CLI --------------------------------------------------------- */

static int run_cli(const char *args, const char *log)
{
    const char *dir = th_tempdir();
    const char *ini = th_path(dir, "cli.ini");
    FILE *f = fopen(ini, "w");
    TH_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s\nthreads = 2\ncache_dir =\n[placement]\norder = cpu\n",
            th_arg(0));
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' --config '%s' %s > '%s' 2>&1", th_arg(1), ini, args, log);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    TH_CHECK(f != NULL, "cannot read %s", path);
    char *text = xmalloc(65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

static void case_cli_run(void)
{
    init_weights();
    const char *dir = th_tempdir();
    const char *model = write_mlp(S_EXTERNAL, dir, "mlp.onnx", false);
    const char *log = th_path(dir, "run.log");
    char args[2048];
    snprintf(args, sizeof args, "run '%s' --output-dir '%s'", model, dir);
    int rc = run_cli(args, log);
    char *text = slurp(log);
    TH_CHECK(rc == 0, "plinth run exited %d:\n%s", rc, text);
    TH_CHECK_CONTAINS(text, "z");
    free(text);
    TH_CHECK(th_exists(th_path(dir, "z.npy")), "no z.npy written");
    /* A broken file: exit 1 and the module's message. */
    const char *bad = th_path(dir, "bad.onnx");
    write_bytes(bad, "\x08\x08\x3a\xff\xff\xff\xff\x0f", 8);
    snprintf(args, sizeof args, "run '%s'", bad);
    rc = run_cli(args, log);
    text = slurp(log);
    TH_CHECK(rc == 1, "plinth run of a corrupt file exited %d:\n%s", rc, text);
    TH_CHECK_CONTAINS(text, "not a valid ONNX protobuf");
    free(text);
}

static void case_cli_convert(void)
{
    init_weights();
    const char *dir = th_tempdir();
    const char *model = write_residual(S_MIXED, dir, "residual.onnx");
    const char *json = th_path(dir, "out.json");
    const char *log = th_path(dir, "convert.log");
    char args[2048];
    snprintf(args, sizeof args, "convert '%s' '%s'", model, json);
    int rc = run_cli(args, log);
    char *text = slurp(log);
    TH_CHECK(rc == 0, "plinth convert exited %d:\n%s", rc, text);
    free(text);
    TH_CHECK(th_exists(th_path(dir, "out.weights")), "no out.weights beside out.json");
    pl_runtime *rt = runtime_with(NULL);
    float x[BATCH * IN];
    make_values(x, BATCH * IN, 9, 2.0f);
    pl_model *a = load_ok(rt, model), *b = load_ok(rt, json);
    float *ya = run_once(a, x, BATCH, "y", OUT), *yb = run_once(b, x, BATCH, "y", OUT);
    TH_CHECK(memcmp(ya, yb, sizeof(float) * BATCH * OUT) == 0,
             "plinth convert's JSON runs differently from the ONNX file");
    free(ya);
    free(yb);
    pl_model_destroy(a);
    pl_model_destroy(b);
    pl_runtime_destroy(rt);
}

/* ---- malformed files ----------------------------------------------------------- */

/* The base of most malformed cases: y = relu(x w), x [2,3], w [3,4]. */
static Onnx__ModelProto *base_model(void)
{
    Onnx__ModelProto *m = tm_model();
    tm_opset(m, "", 13);
    tm_input(m, tm_vi("x", T_FLOAT, 2, (int64_t[]){2, 3}, NULL));
    tm_output(m, tm_vi("y", T_FLOAT, 2, (int64_t[]){2, 4}, NULL));
    float w[12] = {0};
    Onnx__TensorProto *t = tm_tensor("w", T_FLOAT, 2, (int64_t[]){3, 4});
    tm_raw(t, w, sizeof w);
    tm_init(m, t);
    tm_node(m, "MatMul", "mm", "x,w", "a");
    tm_node(m, "Relu", "relu", "a", "y");
    return m;
}

static Onnx__NodeProto *node_named(Onnx__ModelProto *m, const char *name)
{
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (strcmp(m->graph->node[i]->name, name) == 0)
            return m->graph->node[i];
    th_fail(__FILE__, __LINE__, "no node %s", name);
}

static void set_opset(Onnx__ModelProto *m, int64_t v) { m->opset_import[0]->version = v; }

static void m_no_graph(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    onnx__graph_proto__free_unpacked(m->graph, NULL);
    m->graph = NULL;
}
static void m_old_ir(Onnx__ModelProto *m, const char *d) { (void)d; m->ir_version = 2; }
static void m_opset_0(Onnx__ModelProto *m, const char *d) { (void)d; set_opset(m, 0); }
static void m_opset_99(Onnx__ModelProto *m, const char *d) { (void)d; set_opset(m, 99); }
static void m_no_ai_onnx_opset(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    free(m->opset_import[0]->domain);
    m->opset_import[0]->domain = xstrdup("com.example");
}
static void m_domain_no_opset(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    node_named(m, "relu")->domain = xstrdup("com.example");
}
static void m_unknown_domain_op(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_opset(m, "com.example", 1);
    Onnx__NodeProto *n = node_named(m, "relu");
    n->domain = xstrdup("com.example");
    free(n->op_type);
    n->op_type = xstrdup("Frobnicate");
}
static void m_duplicate_opset(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_opset(m, "ai.onnx", 12);
}
static void m_negative_dim_input(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->input[0]->type->tensor_type->shape->dim[1]->dim_value = -3;
}
static void m_negative_dim_initializer(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->initializer[0]->dims[0] = -2;
}
static void m_raw_size(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->initializer[0]->raw_data.len = 10;
}
static void m_float_data_count(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TensorProto *t = m->graph->initializer[0];
    free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->has_raw_data = 0;
    tm_float_data(t, (float[]){1, 2, 3, 4, 5}, 5);
}
static void m_no_data(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TensorProto *t = m->graph->initializer[0];
    free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->has_raw_data = 0;
}
static void m_two_data_fields(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    float v[12] = {0};
    tm_float_data(m->graph->initializer[0], v, 12);
}
static void m_shape_overflow(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_init(m, tm_tensor("huge", T_FLOAT, 3,
                         (int64_t[]){(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40}));
}
static void m_rank_too_big(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    int64_t dims[17];
    for (int i = 0; i < 17; i++)
        dims[i] = 1;
    Onnx__TensorProto *t = tm_tensor("deep", T_FLOAT, 17, dims);
    tm_raw(t, "\0\0\0\0", 4);
    tm_init(m, t);
}
static void m_unknown_elem_input(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->input[0]->type->tensor_type->elem_type = 99;
}
static void m_unknown_elem_initializer(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->initializer[0]->data_type = 77;
}
static void m_string_initializer(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    /* strings load (python OnnxTest.test_onnx_strings); two declared, one given */
    Onnx__TensorProto *t = tm_tensor("names", T_STRING, 1, (int64_t[]){2});
    t->string_data = xmalloc(sizeof *t->string_data);
    t->string_data[0].data = (uint8_t *)xstrdup("abc");
    t->string_data[0].len = 3;
    t->n_string_data = 1;
    tm_init(m, t);
}
static void m_complex64_input(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->input[0]->type->tensor_type->elem_type = T_COMPLEX64;
}
static void m_duplicate_initializer(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    float w[12] = {0};
    Onnx__TensorProto *t = tm_tensor("w", T_FLOAT, 2, (int64_t[]){3, 4});
    tm_raw(t, w, sizeof w);
    tm_init(m, t);
}
static void m_duplicate_node_names(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    free(node_named(m, "relu")->name);
    m->graph->node[1]->name = xstrdup("mm");
}
static void m_empty_outputs(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__NodeProto *n = node_named(m, "relu");
    for (size_t i = 0; i < n->n_output; i++)
        n->output[i][0] = '\0';
    char *extra = xstrdup("");
    APPEND(n->output, n->n_output, extra);
}
static void m_no_graph_outputs(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    for (size_t i = 0; i < m->graph->n_output; i++)
        onnx__value_info_proto__free_unpacked(m->graph->output[i], NULL);
    m->graph->n_output = 0;
}
static void m_missing_input(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__NodeProto *n = node_named(m, "mm");
    free(n->input[1]);
    n->input[1] = xstrdup("ghost");
}
static void m_cycle(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    /* mm reads relu's output; relu reads mm's. */
    Onnx__NodeProto *n = node_named(m, "mm");
    free(n->input[0]);
    n->input[0] = xstrdup("b");
    free(node_named(m, "relu")->output[0]);
    node_named(m, "relu")->output[0] = xstrdup("b");
    tm_node(m, "Identity", "id", "b", "y");
}
static Onnx__GraphProto *empty_graph(void)
{
    Onnx__GraphProto *g = xmalloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = xstrdup("sub");
    return g;
}
static void m_graph_attribute(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_attr(node_named(m, "relu"), "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g =
        empty_graph();
}
static void m_if_subgraph(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__NodeProto *n = tm_node(m, "If", "if1", "cond", "out");
    tm_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = empty_graph();
    tm_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = empty_graph();
}
static void m_sparse_attribute(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__SparseTensorProto *sp = xmalloc(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    tm_attr(node_named(m, "relu"), "sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR)
        ->sparse_tensor = sp;
}
static void m_type_proto_attribute(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TypeProto *tp = xmalloc(sizeof *tp);
    onnx__type_proto__init(tp);
    tm_attr(node_named(m, "relu"), "tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO)->tp =
        tp;
}
static void m_tensors_attribute(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_attr(node_named(m, "relu"), "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
}
static void m_attr_no_type(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_attr(node_named(m, "relu"), "nothing", 0);
}
static void m_attr_no_name(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_attr_i(node_named(m, "relu"), "", 1);
}
static void m_ref_attr(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__AttributeProto *a =
        tm_attr(node_named(m, "relu"), "alpha", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->ref_attr_name = xstrdup("outer_alpha");
}
static void m_strings_nul(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_attr_strings(node_named(m, "relu"), "names", 1, (const char *const[]){"a\0b"},
                    (size_t[]){3});
}

/* Replaces the initializer w by an external one with the given entries,
 * writing DIR/w.bin of SIZE bytes first. */
static void external_w(Onnx__ModelProto *m, const char *dir, const char *location,
                       const char *offset, const char *length, size_t size)
{
    if (size > 0) {
        void *zeros = calloc(1, size);
        write_bytes(th_path(dir, "w.bin"), zeros, size);
        free(zeros);
    }
    Onnx__TensorProto *t = m->graph->initializer[0];
    free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    t->has_raw_data = 0;
    tm_external(t, location, offset, length);
}
static void m_external_absolute(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "/etc/passwd", NULL, NULL, 0);
}
static void m_external_dotdot(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "sub/../../w.bin", NULL, NULL, 48);
}
static void m_external_symlink(Onnx__ModelProto *m, const char *d)
{
    const char *outside = th_tempdir();
    write_bytes(th_path(outside, "secret.bin"), "0123456789012345678901234567890123456789012345678",
                48);
    TH_CHECK(symlink(th_path(outside, "secret.bin"), th_path(d, "link.bin")) == 0, "symlink");
    external_w(m, d, "link.bin", NULL, NULL, 0);
}
static void m_external_offset_past(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", "100000", NULL, 48);
}
static void m_external_length_past(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", "16", "48", 48);
}
static void m_external_length_mismatch(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", "0", "8", 48);
}
static void m_external_no_location(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, NULL, "0", NULL, 48);
}
static void m_external_bad_offset(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", "12abc", NULL, 48);
}
static void m_external_missing_file(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "nowhere.bin", NULL, NULL, 0);
}
static void m_external_and_raw(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", NULL, NULL, 48);
    tm_raw(m->graph->initializer[0], "abcd", 4);
}
static void m_external_unknown_key(Onnx__ModelProto *m, const char *d)
{
    external_w(m, d, "w.bin", NULL, NULL, 48);
    tm_kv(m->graph->initializer[0], "compression", "zstd");
}
static void m_input_no_name(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->input[0]->name[0] = '\0';
}
static void m_initializer_no_name(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    m->graph->initializer[0]->name[0] = '\0';
}
static void m_input_no_type(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    onnx__type_proto__free_unpacked(m->graph->input[0]->type, NULL);
    m->graph->input[0]->type = NULL;
}
static void m_input_sequence(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TypeProto *tp = m->graph->input[0]->type;
    protobuf_c_message_free_unpacked(&tp->tensor_type->base, NULL);
    Onnx__TypeProto__Sequence *seq = xmalloc(sizeof *seq);
    onnx__type_proto__sequence__init(seq);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = seq;
}
/* The output as skl2onnx's ZipMap types it, a sequence of maps, made by a
 * node that is no ZipMap. */
static void m_output_zipmap(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TypeProto *tp = m->graph->output[0]->type;
    protobuf_c_message_free_unpacked(&tp->tensor_type->base, NULL);
    Onnx__TypeProto__Map *map = xmalloc(sizeof *map);
    onnx__type_proto__map__init(map);
    map->has_key_type = 1;
    map->key_type = 7; /* int64 */
    Onnx__TypeProto *elem = xmalloc(sizeof *elem);
    onnx__type_proto__init(elem);
    elem->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
    elem->map_type = map;
    Onnx__TypeProto__Sequence *seq = xmalloc(sizeof *seq);
    onnx__type_proto__sequence__init(seq);
    seq->elem_type = elem;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    tp->sequence_type = seq;
}
static void m_int32_out_of_range(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__TensorProto *t = tm_tensor("bytes", T_UINT8, 1, (int64_t[]){2});
    t->int32_data = xmalloc(2 * sizeof(int32_t));
    t->int32_data[0] = 1;
    t->int32_data[1] = 300;
    t->n_int32_data = 2;
    tm_init(m, t);
}
static void m_sparse_initializer(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__SparseTensorProto *sp = xmalloc(sizeof *sp);
    onnx__sparse_tensor_proto__init(sp);
    APPEND(m->graph->sparse_initializer, m->graph->n_sparse_initializer, sp);
}
static void m_sparse_outside(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    const float v[2] = {1, 2};
    APPEND(m->graph->sparse_initializer, m->graph->n_sparse_initializer,
           tm_sparse("sp", 2, (int64_t[]){2, 3}, 2, v, (const int64_t[]){0, 1, 2, 3}, true));
}
static void m_sparse_huge(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    const float v[1] = {1};
    APPEND(m->graph->sparse_initializer, m->graph->n_sparse_initializer,
           tm_sparse("sp", 2, (int64_t[]){1 << 20, 1 << 20}, 1, v, (const int64_t[]){7}, false));
}
static void m_constant_no_value(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_node(m, "Constant", "c", NULL, "cval");
}
static void m_constant_string(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    Onnx__AttributeProto *a = tm_attr(tm_node(m, "Constant", "c", NULL, "cval"),
                                      "value_string",
                                      ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    a->has_s = 1;
    a->s.data = xmalloc(3); /* "h\0i": Plinth's strings end at a NUL */
    memcpy(a->s.data, "h\0i", 3);
    a->s.len = 3;
}
static void m_duplicate_input(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_input(m, tm_vi("x", T_FLOAT, 2, (int64_t[]){2, 3}, NULL));
}
static void m_many_nodes(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_node(m, "Identity", "id", "y", "y2");
}
static void m_long_name(Onnx__ModelProto *m, const char *d)
{
    (void)d;
    tm_node(m, "Identity", "a_node_name_longer_than_the_limit", "y", "y2");
}

/* ---- byte-level damage ---------------------------------------------------------- */

static void b_empty(tm_buf *b) { b->len = 0; }
static void b_garbage(tm_buf *b)
{
    static const char text[] = "hello, this is not an ONNX model at all\n";
    memcpy(b->data, text, sizeof text - 1);
    b->len = sizeof text - 1;
}
/* Cuts at byte 1: the ir_version tag without its value. */
static void b_trunc_tag(tm_buf *b) { b->len = 1; }
/* Cuts inside the graph's length-delimited header (tag + length). */
static void b_trunc_header(tm_buf *b) { b->len = 3; }
static void b_trunc_half(tm_buf *b) { b->len /= 2; }
static void b_trunc_last(tm_buf *b) { b->len -= 1; }
/* Cuts inside the raw_data of w (48 zero bytes). */
static void b_trunc_raw(tm_buf *b)
{
    static const uint8_t zeros[48];
    for (size_t i = 0; i + 48 <= b->len; i++)
        if (memcmp(b->data + i, zeros, 48) == 0) {
            b->len = i + 20;
            return;
        }
    th_fail(__FILE__, __LINE__, "raw_data not found");
}
static void b_wire_ir_version(tm_buf *b) { b->data[0] = 0x0d; /* field 1, 32-bit */ }
static void b_wire_graph(tm_buf *b) { tm_append(b, "\x38\x01", 2); /* field 7, varint */ }
static void b_wire_group(tm_buf *b) { tm_append(b, "\x6b", 1); /* field 13, group start */ }
static void b_field_zero(tm_buf *b) { tm_append(b, "\x02\x00", 2); }
static void b_absurd_length(tm_buf *b)
{
    /* graph (field 7, length-delimited) claiming 2^60 bytes */
    uint8_t bytes[16] = {0x3a};
    size_t n = 1;
    uint64_t v = (uint64_t)1 << 60;
    while (v >= 0x80) {
        bytes[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    bytes[n++] = (uint8_t)v;
    tm_append(b, bytes, n);
}
static void b_overlong_varint(tm_buf *b)
{
    tm_append(b, "\x28\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
}
/* A graph input whose type nests 1000 sequence types. */
static void b_deep_nesting(tm_buf *b)
{
    size_t cap = 1 << 16, len = 0;
    uint8_t *msg = xmalloc(cap), *tmp = xmalloc(cap);
    for (int level = 0; level < 1000; level++) {
        /* Sequence { elem_type (1) = msg } inside TypeProto { sequence_type (4) } */
        uint8_t hdr[12];
        size_t h = 0;
        hdr[h++] = 0x0a;
        for (size_t v = len; ; v >>= 7) {
            hdr[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        size_t seq_len = h + len;
        uint8_t hdr2[12];
        size_t h2 = 0;
        hdr2[h2++] = 0x22;
        for (size_t v = seq_len; ; v >>= 7) {
            hdr2[h2++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        TH_CHECK(h2 + seq_len <= cap, "nesting buffer");
        memcpy(tmp, hdr2, h2);
        memcpy(tmp + h2, hdr, h);
        memcpy(tmp + h2 + h, msg, len);
        len = h2 + seq_len;
        uint8_t *swap = msg;
        msg = tmp;
        tmp = swap;
    }
    /* ValueInfoProto { name "q", type (2) = msg }, GraphProto { input (11) },
     * ModelProto { graph (7) } */
    const uint8_t *inner = msg;
    size_t inner_len = len;
    uint8_t *layers[3] = {NULL, NULL, NULL};
    const uint8_t tags[3] = {0x12, 0x5a, 0x3a};
    for (int k = 0; k < 3; k++) {
        uint8_t *out = xmalloc(inner_len + 16);
        size_t o = 0;
        if (k == 0) {
            out[o++] = 0x0a;
            out[o++] = 1;
            out[o++] = 'q';
        }
        out[o++] = tags[k];
        for (size_t v = inner_len; ; v >>= 7) {
            out[o++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
            if (v < 0x80)
                break;
        }
        memcpy(out + o, inner, inner_len);
        layers[k] = out;
        inner = out;
        inner_len = o + inner_len;
    }
    tm_append(b, inner, inner_len);
    for (int k = 0; k < 3; k++)
        free(layers[k]);
    free(msg);
    free(tmp);
}

/* ---- the table of malformed cases ------------------------------------------------- */

typedef struct bad_case {
    const char *name;
    void (*mutate)(Onnx__ModelProto *m, const char *dir);
    void (*damage)(tm_buf *b);
    const char *expect;
    const char *ini; /* extra backend.ini text */
} bad_case;

#define CORRUPT "not a valid ONNX protobuf (truncated or corrupt)"

static const bad_case bad_cases[] = {
    {"empty_file", NULL, b_empty, "empty file", NULL},
    {"garbage", NULL, b_garbage, CORRUPT, NULL},
    {"trunc_tag", NULL, b_trunc_tag, CORRUPT, NULL},
    {"trunc_header", NULL, b_trunc_header, CORRUPT, NULL},
    {"trunc_half", NULL, b_trunc_half, CORRUPT, NULL},
    {"trunc_last", NULL, b_trunc_last, CORRUPT, NULL},
    {"trunc_raw", NULL, b_trunc_raw, CORRUPT, NULL},
    {"wire_ir_version", NULL, b_wire_ir_version, "field 'ir_version' of onnx.ModelProto: wire type 5", NULL},
    {"wire_graph", NULL, b_wire_graph, "field 'graph' of onnx.ModelProto: wire type 0", NULL},
    {"wire_group", NULL, b_wire_group, "wire type 3 (group start) is not used by ONNX", NULL},
    {"field_zero", NULL, b_field_zero, "field number 0 is invalid", NULL},
    {"absurd_length", NULL, b_absurd_length, "claims 1152921504606846976 bytes", NULL},
    {"overlong_varint", NULL, b_overlong_varint, "longer than 10 bytes", NULL},
    {"deep_nesting", NULL, b_deep_nesting, "nested deeper than 64 levels", NULL},
    {"no_graph", m_no_graph, NULL, "the model has no graph", NULL},
    {"old_ir_version", m_old_ir, NULL, "ir_version 2 is too old", NULL},
    {"opset_0", m_opset_0, NULL, "model imports ai.onnx opset 0; supported: 1 to 28", NULL},
    {"opset_99", m_opset_99, NULL, "model imports ai.onnx opset 99; supported: 1 to 28", NULL},
    {"no_ai_onnx_opset", m_no_ai_onnx_opset, NULL,
     "node 'mm' (MatMul) is in domain 'ai.onnx', which the model's opset_import does not list", NULL},
    {"domain_no_opset", m_domain_no_opset, NULL,
     "node 'relu' (Relu) is in domain 'com.example', which the model's opset_import does not list", NULL},
    {"unknown_domain_op", m_unknown_domain_op, NULL, "Frobnicate", NULL},
    {"duplicate_opset", m_duplicate_opset, NULL,
     "opset_import lists domain 'ai.onnx' twice, at versions 13 and 12", NULL},
    {"negative_dim_input", m_negative_dim_input, NULL,
     "graph input 'x': dimension 1 is -3; dims are >= 0, -1 (unknown) or symbolic", NULL},
    {"negative_dim_initializer", m_negative_dim_initializer, NULL,
     "initializer 'w': dimension 0 is -2", NULL},
    {"raw_data_size", m_raw_size, NULL,
     "initializer 'w': raw_data has 10 bytes, shape [3,4] of f32 needs 48", NULL},
    {"float_data_count", m_float_data_count, NULL,
     "initializer 'w': float_data has 5 values, shape [3,4] needs 12", NULL},
    {"no_data", m_no_data, NULL, "initializer 'w': no data", NULL},
    {"two_data_fields", m_two_data_fields, NULL, "more than one field", NULL},
    {"shape_overflow", m_shape_overflow, NULL, "initializer 'huge': shape [1099511627776,1099511627776,1099511627776] overflows", NULL},
    {"rank_too_big", m_rank_too_big, NULL, "initializer 'deep': rank 17, at most 16", NULL},
    {"unknown_elem_input", m_unknown_elem_input, NULL, "graph input 'x': unknown elem_type 99", NULL},
    {"unknown_elem_initializer", m_unknown_elem_initializer, NULL,
     "initializer 'w': unknown elem_type 77", NULL},
    {"string_initializer", m_string_initializer, NULL,
     "initializer 'names': string_data has 1 strings, the shape needs 2", NULL},
    {"complex64_input", m_complex64_input, NULL,
     "graph input 'x': elem_type COMPLEX64 is not supported", NULL},
    {"duplicate_initializer", m_duplicate_initializer, NULL,
     "initializer 'w' is listed twice among the initializers", NULL},
    {"duplicate_node_names", m_duplicate_node_names, NULL,
     "node 'mm' (Relu): the name is already used by another node", NULL},
    {"empty_outputs", m_empty_outputs, NULL, "node 'relu' (Relu) has no named output", NULL},
    {"no_graph_outputs", m_no_graph_outputs, NULL,
     "model.onnx: the graph declares no outputs", NULL},
    {"missing_input", m_missing_input, NULL,
     "node 'mm' (MatMul): input 'ghost' is not defined by any node, input or constant", NULL},
    {"cycle", m_cycle, NULL, "is on a cycle", NULL},
    {"graph_attribute", m_graph_attribute, NULL,
     "node 'relu' (Relu): unknown attribute 'body'", NULL},
    {"if_subgraph", m_if_subgraph, NULL,
     "node 'if1' (If): input 'cond' is not defined by any node, input or constant", NULL},
    {"sparse_attribute", m_sparse_attribute, NULL,
     "node 'relu' (Relu): attribute 'sp' has kind SPARSE_TENSOR, unsupported", NULL},
    {"type_proto_attribute", m_type_proto_attribute, NULL,
     "node 'relu' (Relu): attribute 'tp' has kind TYPE_PROTO, unsupported", NULL},
    {"tensors_attribute", m_tensors_attribute, NULL,
     "node 'relu' (Relu): attribute 'ts' has kind TENSORS, unsupported", NULL},
    {"attr_no_type", m_attr_no_type, NULL,
     "node 'relu' (Relu): attribute 'nothing' has no type and no value", NULL},
    {"attr_no_name", m_attr_no_name, NULL, "node 'relu' (Relu): attribute #0 has no name", NULL},
    {"ref_attr", m_ref_attr, NULL, "refers to function attribute 'outer_alpha'", NULL},
    {"strings_nul", m_strings_nul, NULL, "attribute 'names': string 0 contains a NUL byte", NULL},
    {"external_absolute", m_external_absolute, NULL,
     "initializer 'w': external data location '/etc/passwd' is absolute", NULL},
    {"external_dotdot", m_external_dotdot, NULL, "has a '..' component", NULL},
    {"external_symlink", m_external_symlink, NULL, "outside the model's folder", NULL},
    {"external_offset_past", m_external_offset_past, NULL, "offset 100000 lies past the end", NULL},
    {"external_length_past", m_external_length_past, NULL, "offset 16 + length 48 exceeds", NULL},
    {"external_length_mismatch", m_external_length_mismatch, NULL,
     "initializer 'w': external data length is 8 bytes, shape [3,4] of f32 needs 48", NULL},
    {"external_no_location", m_external_no_location, NULL, "external_data has no location", NULL},
    {"external_bad_offset", m_external_bad_offset, NULL,
     "external data offset '12abc' is not a non-negative integer", NULL},
    {"external_missing_file", m_external_missing_file, NULL, "nowhere.bin", NULL},
    {"external_and_raw", m_external_and_raw, NULL, "also carries data of its own", NULL},
    {"external_unknown_key", m_external_unknown_key, NULL, "unknown external_data key 'compression'", NULL},
    {"input_no_name", m_input_no_name, NULL, "graph input #0 has no name", NULL},
    {"initializer_no_name", m_initializer_no_name, NULL, "initializer #0 has no name", NULL},
    {"input_no_type", m_input_no_type, NULL, "graph input 'x' has no type", NULL},
    {"input_sequence", m_input_sequence, NULL, "graph input 'x' has a sequence type", NULL},
    {"output_zipmap", m_output_zipmap, NULL,
     "graph output 'y' is a sequence of maps that no ZipMap makes; Plinth gives only tensors "
     "(a classifier's ZipMap output as the tensor it zips)",
     NULL},
    {"int32_out_of_range", m_int32_out_of_range, NULL,
     "initializer 'bytes': int32_data[1] = 300 is out of range for UINT8", NULL},
    {"sparse_initializer", m_sparse_initializer, NULL, "sparse initializer #0 has no name", NULL},
    {"sparse_outside", m_sparse_outside, NULL,
     "sparse initializer 'sp': index 1 lies outside the dense shape", NULL},
    {"sparse_huge", m_sparse_huge, NULL,
     "sparse initializer 'sp': its dense form takes 4398046511104 bytes, more than", NULL},
    {"constant_no_value", m_constant_no_value, NULL, "node 'c' (Constant): a Constant has exactly one attribute", NULL},
    {"constant_string", m_constant_string, NULL,
     "attribute 'value_string': string 0 holds a NUL byte", NULL},
    {"duplicate_input", m_duplicate_input, NULL, "listed twice as a graph input", NULL},
    {"file_too_large", NULL, NULL, "over the limit of 64 (the onnx module's max_file_bytes)",
     "[onnx]\nmax_file_bytes = 64\n"},
    {"too_many_nodes", m_many_nodes, NULL, "more than 2 nodes (the onnx module's max_nodes)",
     "[onnx]\nmax_nodes = 2\n"},
    {"long_name", m_long_name, NULL, "over the limit of 16 (the onnx module's max_name_bytes)",
     "[onnx]\nmax_name_bytes = 16\n"},
};
#define N_BAD (sizeof bad_cases / sizeof bad_cases[0])

static const bad_case *current_bad;

static void run_bad(void)
{
    const bad_case *c = current_bad;
    const char *dir = th_tempdir();
    Onnx__ModelProto *m = base_model();
    if (c->mutate)
        c->mutate(m, dir);
    tm_buf b = tm_pack(m);
    if (c->damage)
        c->damage(&b);
    const char *path = tm_write_buf(b, dir, "model.onnx");
    pl_runtime *rt = runtime_with(c->ini);
    expect_load_error(rt, path, c->expect);
    pl_runtime_destroy(rt);
}

/* skl2onnx lists ai.onnx twice at one version (as "" twice, or as "" and
 * "ai.onnx"): the model loads and runs, as in ONNX Runtime; two versions of
 * it are refused (bad_cases: duplicate_opset). */
static void case_opset_listed_twice(void)
{
    const char *dir = th_tempdir();
    Onnx__ModelProto *m = base_model();
    tm_opset(m, "", 13);
    tm_opset(m, "ai.onnx", 13);
    const char *path = tm_write_buf(tm_pack(m), dir, "model.onnx");
    pl_runtime *rt = runtime_with(NULL);
    pl_model *pm = load_ok(rt, path);
    pl_session *s = NULL;
    TH_CHECK_OK(pl_session_create(pm, NULL, &s));
    pl_session_destroy(s);
    pl_model_destroy(pm);
    pl_runtime_destroy(rt);
}

/* ---- dispatch ------------------------------------------------------------------- */

static const th_case cases[] = {
    {"mlp_raw", case_mlp_raw},
    {"big_raw_weights", case_big_raw_weights},
    {"mlp_float_data", case_mlp_float_data},
    {"mlp_external", case_mlp_external},
    {"mlp_mixed", case_mlp_mixed},
    {"residual_raw", case_residual_raw},
    {"residual_float_data", case_residual_float_data},
    {"residual_external", case_residual_external},
    {"residual_mixed", case_residual_mixed},
    {"symbolic_batch", case_symbolic_batch},
    {"initializers_as_inputs", case_initializers_as_inputs},
    {"strings_c_api", case_strings_c_api},
    {"strings_text_threads", case_strings_text_threads},
    {"constant_forms", case_constant_forms},
    {"sparse_forms", case_sparse_forms},
    {"output_twice", case_output_twice},
    {"output_twice_symbolic", case_output_twice_symbolic},
    {"int4_weights", case_int4_weights},
    {"uint4_weights", case_uint4_weights},
    {"int4_elsewhere", case_int4_elsewhere},
    {"tensor_scatter", case_tensor_scatter},
    {"bitcast", case_bitcast},
    {"causal_conv", case_causal_conv},
    {"stale_value_info_dtype", case_stale_value_info_dtype},
    {"by_content", case_by_content},
    {"int32_data_types", case_int32_data_types},
    {"attrs_reach_core", case_attrs_reach_core},
    {"mutations", case_mutations},
    {"opset_listed_twice", case_opset_listed_twice},
    {"cli_run", case_cli_run},
    {"cli_convert", case_cli_convert},
};

int main(int argc, char **argv)
{
    for (size_t i = 0; argc >= 2 && i < N_BAD; i++)
        if (strcmp(argv[1], bad_cases[i].name) == 0) {
            current_bad = &bad_cases[i];
            th_case one = {bad_cases[i].name, run_bad};
            return th_main(argc, argv, &one, 1, 2, "STAGE_DIR PLINTH_CLI");
        }
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 2,
                   "STAGE_DIR PLINTH_CLI");
}
