/* test_cpu_math.c — the cpu module's math family (modules/cpu/math*.c),
 * driven the way the core drives it: a one-node graph with shapes inferred
 * by the core's opset, a view of it, a pl_node_desc, then get_kernel and
 * kernel_run through the module's table. Every kernel is compared with a
 * plain reference loop written here (in double, or in int64 for integer
 * dtypes) on shapes with broadcasting corners, negative axes, keepdims,
 * absent optional inputs and outputs, integer and bool dtypes; then the
 * output requests (add-to, in place) and the refusals. Linked against the
 * core's object library. Usage: test_cpu_math CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graph.h"
#include "graph_view.h"
#include "opset.h"
#include "registry.h"

#define TM_MAX_IN 6
#define TM_MAX_OUT 3
#define TM_MAX_RANK 8

static void tm_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void tm_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond))                                     \
            tm_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)

#define CHECK_OK(expr)                                                       \
    do {                                                                     \
        pl_status *tm_st_ = (expr);                                          \
        if (tm_st_ != NULL)                                                  \
            tm_fail(__FILE__, __LINE__, "%s failed: %s", #expr,              \
                    pl_status_message(tm_st_));                              \
    } while (0)

/* ---- the module ---------------------------------------------------------- */

static pl_runtime *tm_rt;
static pl_module *tm_mod;

/* A runtime whose only module is the staged cpu module, on 4 threads. */
static void tm_setup(const char *stage_dir)
{
    char dir[] = "/tmp/plinth-cpu-math-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_cpu.so\nthreads = 4\n", stage_dir);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    CHECK_OK(pl_runtime_create(&o, &tm_rt));
    unlink(ini);
    rmdir(dir);
    long idx = pl_runtime_find_module(tm_rt, "cpu");
    CHECK(idx >= 0, "no cpu module in %s", stage_dir);
    tm_mod = tm_rt->modules[idx];
    CHECK(tm_mod->status == PL_MODULE_LOADED && tm_mod->ctx != NULL,
          "cpu module not loaded: %s", tm_mod->reason);
}

/* ---- one-node graphs ----------------------------------------------------- */

/* An input: shape, dtype (lanes 0: f32), absent, or a constant holding
 * VALS (the axes of a reduction, Clip's bounds). */
typedef struct tm_in {
    int ndim;
    int64_t dims[TM_MAX_RANK];
    pl_dtype dtype;
    int absent;
    int constant;
    double vals[TM_MAX_RANK];
} tm_in;

typedef struct tm_attr {
    const char *name;
    char kind;              /* 'i' int, 'f' float, 'I' ints */
    int64_t i;
    double f;
    int64_t ints[TM_MAX_RANK];
    int n;
} tm_attr;

/* A node to test: op, inputs, attributes, opset (0: 13), outputs (0: 1)
 * of which those in OUT_ABSENT (bit o) are left unnamed. */
typedef struct tm_spec {
    const char *op;
    int opset;
    int n_in;
    tm_in in[TM_MAX_IN];
    tm_attr attrs[4];
    int n_attrs;
    int n_out;
    unsigned out_absent;
} tm_spec;

typedef struct tm_node {
    const tm_spec *spec;
    pl_graph *g;
    pl_graph_view *view;
    pl_tensor in[TM_MAX_IN];
    pl_tensor out[TM_MAX_OUT];
    int n_out;
    pl_node_desc desc;
} tm_node;

static pl_dtype tm_dt(pl_dtype d) { return d.lanes ? d : PL_DTYPE_F32; }

static void tm_describe(const pl_graph *g, pl_tid t, pl_tensor *out)
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

static size_t tm_count(const int64_t *dims, int r)
{
    size_t n = 1;
    for (int d = 0; d < r; d++)
        n *= (size_t)dims[d];
    return n;
}

/* Writes VALS (COUNT of them) as dtype DT into BYTES. */
static void tm_store(void *bytes, pl_dtype dt, size_t i, double v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32))
        ((float *)bytes)[i] = (float)v;
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64))
        ((double *)bytes)[i] = v;
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_I64))
        ((int64_t *)bytes)[i] = (int64_t)v;
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_I32))
        ((int32_t *)bytes)[i] = (int32_t)v;
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        ((int8_t *)bytes)[i] = (int8_t)v;
    else
        ((uint8_t *)bytes)[i] = (uint8_t)v;
}

static double tm_load(const void *bytes, pl_dtype dt, size_t i)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F32))
        return ((const float *)bytes)[i];
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F64))
        return ((const double *)bytes)[i];
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I64))
        return (double)((const int64_t *)bytes)[i];
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I32))
        return ((const int32_t *)bytes)[i];
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        return ((const int8_t *)bytes)[i];
    return ((const uint8_t *)bytes)[i];
}

static bool tm_is_float(pl_dtype dt)
{
    return dt.code == PL_TYPE_FLOAT || dt.code == PL_TYPE_BFLOAT;
}

static void tm_node_build(const tm_spec *spec, tm_node *n)
{
    memset(n, 0, sizeof *n);
    n->spec = spec;
    int opset = spec->opset ? spec->opset : 13;
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", opset));
    char names[TM_MAX_IN][16];
    const char *in_names[TM_MAX_IN];
    for (int i = 0; i < spec->n_in; i++) {
        snprintf(names[i], sizeof names[i], "x%d", i);
        in_names[i] = names[i];
        const tm_in *ti = &spec->in[i];
        if (ti->absent) {
            in_names[i] = "";
            continue;
        }
        pl_tid t;
        pl_dtype dt = tm_dt(ti->dtype);
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, names[i], &t));
        CHECK_OK(pl_graph_set_type(n->g, t, dt, ti->ndim, ti->dims, NULL));
        if (ti->constant) {
            size_t cnt = tm_count(ti->dims, ti->ndim);
            char bytes[TM_MAX_RANK * 8];
            for (size_t e = 0; e < cnt; e++)
                tm_store(bytes, dt, e, ti->vals[e]);
            CHECK_OK(pl_graph_set_constant(n->g, t, bytes, cnt * pl_dtype_size(dt)));
        } else {
            CHECK_OK(pl_graph_add_input(n->g, t));
        }
    }
    n->n_out = spec->n_out ? spec->n_out : 1;
    const char *out_names[TM_MAX_OUT] = {"y0", "y1", "y2"};
    for (int o = 0; o < n->n_out; o++)
        if (spec->out_absent & (1u << o))
            out_names[o] = "";
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "node", spec->op, "", in_names, (size_t)spec->n_in,
                               out_names, (size_t)n->n_out, &nid));
    for (int a = 0; a < spec->n_attrs; a++) {
        const tm_attr *at = &spec->attrs[a];
        if (at->kind == 'i')
            CHECK_OK(pl_graph_attr_int(n->g, nid, at->name, at->i));
        else if (at->kind == 'f')
            CHECK_OK(pl_graph_attr_float(n->g, nid, at->name, at->f));
        else
            CHECK_OK(pl_graph_attr_ints(n->g, nid, at->name, at->ints, (size_t)at->n));
    }
    for (int o = 0; o < n->n_out; o++)
        if (out_names[o][0] != '\0')
            CHECK_OK(pl_graph_add_output(n->g, pl_graph_find_tensor(n->g, out_names[o])));
    CHECK_OK(pl_graph_validate(n->g));
    CHECK_OK(pl_opset_infer(tm_rt->opset, n->g));
    CHECK_OK(pl_graph_view_create(n->g, &nid, 1, &n->view));
    const pl_graph_node *gn = pl_graph_get_node(n->g, nid);
    for (size_t i = 0; i < gn->n_inputs; i++)
        tm_describe(n->g, gn->inputs[i], &n->in[i]);
    for (size_t o = 0; o < gn->n_outputs; o++)
        tm_describe(n->g, gn->outputs[o], &n->out[o]);
    n->desc = (pl_node_desc){
        .header = PL_ABI_HEADER_INIT(pl_node_desc),
        .name = "node",
        .op = spec->op,
        .domain = "",
        .opset_version = opset,
        .graph = n->view,
        .node_index = 0,
        .n_inputs = gn->n_inputs,
        .inputs = n->in,
        .n_outputs = gn->n_outputs,
        .outputs = n->out,
    };
}

static void tm_node_free(tm_node *n)
{
    pl_graph_view_destroy(n->view);
    pl_graph_destroy(n->g);
}

static pl_kernel *tm_kernel(const tm_node *n)
{
    pl_kernel *k = NULL;
    size_t ws = 99;
    pl_status *st = tm_mod->api.get_kernel(tm_mod->ctx, 0, &n->desc, &k, &ws);
    CHECK(st == NULL, "get_kernel(%s) failed: %s", n->spec->op, pl_status_message(st));
    CHECK(k != NULL && ws == 0, "get_kernel(%s): no kernel or workspace %zu", n->spec->op, ws);
    return k;
}

/* ---- buffers and runs ---------------------------------------------------- */

static uint64_t tm_seed = 0x9e3779b97f4a7c15ull;

/* Uniform in [-2, 2). */
static double tm_random(void)
{
    tm_seed = tm_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(tm_seed >> 40) / (double)(1ull << 24) * 4.0 - 2.0;
}

/* A buffer at a byte offset inside a larger allocation, so that kernels
 * must honour byte_offset. */
typedef struct tm_buf {
    char *base;
    void *data;
    size_t offset;
} tm_buf;

static void tm_buf_make(tm_buf *b, size_t bytes, size_t offset)
{
    b->offset = offset;
    b->base = malloc(offset + bytes + 8);
    CHECK(b->base != NULL, "out of memory");
    b->data = b->base + offset;
}

static pl_tensor tm_host_tensor(const pl_tensor *desc, const tm_buf *b)
{
    pl_tensor t = *desc;
    t.data = b->base;
    t.byte_offset = b->offset;
    return t;
}

static pl_status *tm_run(pl_kernel *k, size_t n_in, const pl_tensor *ins, size_t n_out,
                         pl_tensor *outs, const pl_output_request *reqs)
{
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args),
                        .run = &rc,
                        .n_inputs = n_in,
                        .inputs = ins,
                        .n_outputs = n_out,
                        .outputs = outs,
                        .requests = reqs};
    return tm_mod->api.kernel_run(tm_mod->ctx, k, &args);
}

/* The value of input I at element E. */
typedef struct tm_data {
    const void *x[TM_MAX_IN];
    pl_dtype dt[TM_MAX_IN];
    const int64_t *dims[TM_MAX_IN];
    int ndim[TM_MAX_IN];
} tm_data;

static double tm_at(const tm_data *d, int i, size_t e) { return tm_load(d->x[i], d->dt[i], e); }

/* Fills input I of SPEC: values the op is defined on, equalities for the
 * comparisons, nonzero integer divisors. */
static void tm_fill(const tm_spec *s, int i, pl_dtype dt, void *x, size_t n)
{
    const char *op = s->op;
    bool compare = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater");
    for (size_t j = 0; j < n; j++) {
        double v = tm_random();
        if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) {
            v = v > 0;
        } else if (!tm_is_float(dt)) {
            v = floor(v * (PL_DTYPE_EQ(dt, PL_DTYPE_U8) ? -60 : 30));
            if (PL_DTYPE_EQ(dt, PL_DTYPE_U8))
                v = fabs(v);
            if (compare)
                v = floor(v / 10);
            if (i == 1 && !strcmp(op, "Div") && v == 0)
                v = 3;
            if (i == 1 && !strcmp(op, "Pow"))
                v = fmod(v, 4);
        } else {
            if (compare)
                v = floor(v * 2) / 2;
            if (!strcmp(op, "Sqrt") || !strcmp(op, "Log") || (i == 0 && !strcmp(op, "Pow")))
                v = fabs(v) + 0.05;
            if ((i == 1 && !strcmp(op, "Div")) || !strcmp(op, "Reciprocal"))
                v = v < 0 ? v - 0.5 : v + 0.5;
            if (!strcmp(op, "LogSoftmax"))
                v *= 40;
            if (!strcmp(op, "BatchNormalization") && i == 4)
                v = fabs(v) + 0.1; /* variance */
        }
        tm_store(x, dt, j, v);
    }
}

/* ---- reference loops ----------------------------------------------------- */

static void tm_unravel(size_t i, const int64_t *dims, int r, int64_t *idx)
{
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = (int64_t)(i % (size_t)dims[d]);
        i /= (size_t)dims[d];
    }
}

/* The flat index in a tensor of DIMS (rank R) of the output index IDX
 * (rank R_OUT), NumPy-broadcast. */
static size_t tm_ravel_bcast(const int64_t *idx, int r_out, const int64_t *dims, int r)
{
    size_t off = 0;
    for (int d = 0; d < r; d++) {
        int64_t i = idx[r_out - r + d];
        off = off * (size_t)dims[d] + (size_t)(dims[d] == 1 ? 0 : i);
    }
    return off;
}

static const tm_attr *tm_attr_find(const tm_spec *s, const char *name)
{
    for (int a = 0; a < s->n_attrs; a++)
        if (strcmp(s->attrs[a].name, name) == 0)
            return &s->attrs[a];
    return NULL;
}

static int64_t tm_attr_i(const tm_spec *s, const char *name, int64_t dflt)
{
    const tm_attr *a = tm_attr_find(s, name);
    return a ? a->i : dflt;
}

static double tm_attr_f(const tm_spec *s, const char *name, double dflt)
{
    const tm_attr *a = tm_attr_find(s, name);
    return a ? a->f : dflt;
}

/* Wraps V to the integer dtype DT. */
static double tm_wrap(pl_dtype dt, int64_t v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I32))
        return (double)(int32_t)(uint32_t)(uint64_t)v;
    return (double)v;
}

static double tm_unary(const tm_spec *s, double x, double lo, double hi)
{
    const char *op = s->op;
    if (!strcmp(op, "Sqrt")) return sqrt(x);
    if (!strcmp(op, "Exp")) return exp(x);
    if (!strcmp(op, "Log")) return log(x);
    if (!strcmp(op, "Neg")) return -x;
    if (!strcmp(op, "Abs")) return fabs(x);
    if (!strcmp(op, "Reciprocal")) return 1.0 / x;
    if (!strcmp(op, "Erf")) return erf(x);
    if (!strcmp(op, "LeakyRelu")) return x < 0 ? (double)(float)tm_attr_f(s, "alpha", 0.01) * x : x;
    return x < lo ? lo : x > hi ? hi : x; /* Clip */
}

/* Results of a node: per output, values and magnitudes for the tolerance. */
typedef struct tm_ref {
    double *v[TM_MAX_OUT];
    double *mag[TM_MAX_OUT];
} tm_ref;

static void tm_ref_broadcast(const tm_node *n, const tm_data *d, tm_ref *r)
{
    const char *op = n->spec->op;
    const int64_t *od = n->out[0].shape;
    int ro = n->out[0].ndim, n_ops = !strcmp(op, "Where") ? 3 : 2;
    int64_t idx[TM_MAX_RANK];
    size_t cnt = tm_count(od, ro);
    pl_dtype dt = d->dt[n_ops == 3 ? 1 : 0];
    bool is_f = tm_is_float(dt);
    for (size_t e = 0; e < cnt; e++) {
        tm_unravel(e, od, ro, idx);
        double v[3];
        for (int j = 0; j < n_ops; j++)
            v[j] = tm_at(d, j, tm_ravel_bcast(idx, ro, d->dims[j], d->ndim[j]));
        double a = v[0], b = v[1], out;
        int64_t ia = (int64_t)a, ib = (int64_t)b;
        if (!strcmp(op, "Add")) out = is_f ? (double)((float)a + (float)b) : tm_wrap(dt, ia + ib);
        else if (!strcmp(op, "Sub")) out = is_f ? a - b : tm_wrap(dt, ia - ib);
        else if (!strcmp(op, "Mul")) out = is_f ? a * b : tm_wrap(dt, ia * ib);
        else if (!strcmp(op, "Div")) out = is_f ? a / b : tm_wrap(dt, ia / ib);
        else if (!strcmp(op, "Pow")) out = pow(a, b);
        else if (!strcmp(op, "Equal")) out = a == b;
        else if (!strcmp(op, "Less")) out = a < b;
        else if (!strcmp(op, "Greater")) out = a > b;
        else out = a != 0 ? v[1] : v[2];
        r->v[0][e] = out;
        r->mag[0][e] = fabs(out) + fabs(a) + fabs(b);
    }
}

/* [outer, len, inner] of an axis (LogSoftmax's rule for OPSET). */
static void tm_split(const int64_t *dims, int r, int64_t axis, bool flatten, size_t *outer,
                     size_t *len, size_t *inner)
{
    *outer = *len = *inner = 1;
    for (int i = 0; i < r; i++) {
        if (i < axis)
            *outer *= (size_t)dims[i];
        else if (i == axis || flatten)
            *len *= (size_t)dims[i];
        else
            *inner *= (size_t)dims[i];
    }
}

static void tm_ref_logsoftmax(const tm_spec *s, const tm_data *d, tm_ref *r)
{
    int rk = d->ndim[0];
    int opset = s->opset ? s->opset : 13;
    int64_t axis = tm_attr_i(s, "axis", opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += rk > 0 ? rk : 1;
    size_t outer, len, inner;
    tm_split(d->dims[0], rk, axis, opset < 13, &outer, &len, &inner);
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            size_t base = o * len * inner + j;
            double max = -INFINITY, sum = 0;
            for (size_t l = 0; l < len; l++)
                max = fmax(max, tm_at(d, 0, base + l * inner));
            for (size_t l = 0; l < len; l++)
                sum += exp(tm_at(d, 0, base + l * inner) - max);
            for (size_t l = 0; l < len; l++) {
                double x = tm_at(d, 0, base + l * inner);
                r->v[0][base + l * inner] = x - max - log(sum);
                r->mag[0][base + l * inner] = fabs(x) + fabs(max) + 1;
            }
        }
}

/* BatchNormalization and InstanceNormalization: planes of [N, C, ...]. */
static void tm_ref_planes(const tm_spec *s, const tm_data *d, tm_ref *r)
{
    bool bn = !strcmp(s->op, "BatchNormalization");
    double eps = (float)tm_attr_f(s, "epsilon", 1e-5);
    const int64_t *xd = d->dims[0];
    size_t c_n = (size_t)xd[1], planes = (size_t)xd[0] * c_n;
    size_t plane = tm_count(xd + 2, d->ndim[0] - 2);
    for (size_t p = 0; p < planes; p++) {
        size_t c = p % c_n;
        double mean, var;
        if (bn) {
            mean = tm_at(d, 3, c);
            var = tm_at(d, 4, c);
        } else {
            double sum = 0, sq = 0;
            for (size_t i = 0; i < plane; i++)
                sum += tm_at(d, 0, p * plane + i);
            mean = sum / (double)plane;
            for (size_t i = 0; i < plane; i++) {
                double dv = tm_at(d, 0, p * plane + i) - mean;
                sq += dv * dv;
            }
            var = sq / (double)plane;
        }
        double inv = 1.0 / sqrt(var + eps);
        for (size_t i = 0; i < plane; i++) {
            size_t e = p * plane + i;
            double x = tm_at(d, 0, e);
            r->v[0][e] = (x - mean) * inv * tm_at(d, 1, c) + tm_at(d, 2, c);
            r->mag[0][e] = (fabs(x) + fabs(mean)) * inv * fabs(tm_at(d, 1, c)) +
                           fabs(tm_at(d, 2, c)) + 1;
        }
    }
}

static void tm_ref_layernorm(const tm_node *n, const tm_data *d, tm_ref *r)
{
    const tm_spec *s = n->spec;
    int rk = d->ndim[0];
    int64_t axis = tm_attr_i(s, "axis", -1);
    if (axis < 0)
        axis += rk;
    double eps = (float)tm_attr_f(s, "epsilon", 1e-5);
    size_t rows = tm_count(d->dims[0], (int)axis);
    const int64_t *norm = d->dims[0] + axis;
    int nr = rk - (int)axis;
    size_t len = tm_count(norm, nr);
    bool bias = d->x[2] != NULL;
    int64_t idx[TM_MAX_RANK];
    for (size_t row = 0; row < rows; row++) {
        double sum = 0, sq = 0;
        for (size_t j = 0; j < len; j++)
            sum += tm_at(d, 0, row * len + j);
        double mean = sum / (double)len;
        for (size_t j = 0; j < len; j++) {
            double dv = tm_at(d, 0, row * len + j) - mean;
            sq += dv * dv;
        }
        double inv = 1.0 / sqrt(sq / (double)len + eps);
        if (r->v[1]) {
            r->v[1][row] = mean;
            r->mag[1][row] = fabs(mean) + 1;
        }
        if (r->v[2]) {
            r->v[2][row] = inv;
            r->mag[2][row] = inv * 10;
        }
        for (size_t j = 0; j < len; j++) {
            tm_unravel(j, norm, nr, idx);
            double sc = tm_at(d, 1, tm_ravel_bcast(idx, nr, d->dims[1], d->ndim[1]));
            double b = bias ? tm_at(d, 2, tm_ravel_bcast(idx, nr, d->dims[2], d->ndim[2])) : 0;
            double x = tm_at(d, 0, row * len + j);
            r->v[0][row * len + j] = (x - mean) * inv * sc + b;
            r->mag[0][row * len + j] = (fabs(x) + fabs(mean)) * inv * fabs(sc) + fabs(b) + 1;
        }
    }
}

static void tm_ref_reduce(const tm_node *n, const tm_data *d, tm_ref *r)
{
    const tm_spec *s = n->spec;
    int rk = d->ndim[0];
    int opset = s->opset ? s->opset : 13;
    bool sum_op = !strcmp(s->op, "ReduceSum"), max_op = !strcmp(s->op, "ReduceMax");
    bool from_input = opset >= (sum_op ? 13 : 18);
    bool reduce[TM_MAX_RANK] = {false};
    int n_axes = 0;
    int64_t axes[TM_MAX_RANK];
    if (from_input) {
        if (s->n_in > 1 && !s->in[1].absent) {
            n_axes = (int)s->in[1].dims[0];
            for (int i = 0; i < n_axes; i++)
                axes[i] = (int64_t)s->in[1].vals[i];
        }
    } else {
        const tm_attr *a = tm_attr_find(s, "axes");
        if (a != NULL) {
            n_axes = a->n;
            memcpy(axes, a->ints, sizeof(int64_t) * (size_t)a->n);
        }
    }
    bool noop = from_input && tm_attr_i(s, "noop_with_empty_axes", 0);
    for (int i = 0; i < rk; i++)
        reduce[i] = n_axes == 0 && !noop;
    for (int i = 0; i < n_axes; i++)
        reduce[axes[i] < 0 ? axes[i] + rk : axes[i]] = true;
    size_t cnt_out = tm_count(n->out[0].shape, n->out[0].ndim);
    size_t cnt_in = tm_count(d->dims[0], rk), len = 1;
    for (int i = 0; i < rk; i++)
        if (reduce[i])
            len *= (size_t)d->dims[0][i];
    bool is_f = tm_is_float(d->dt[0]);
    for (size_t e = 0; e < cnt_out; e++) {
        r->v[0][e] = max_op ? (is_f ? -INFINITY
                                    : PL_DTYPE_EQ(d->dt[0], PL_DTYPE_I32) ? (double)INT32_MIN
                                                                           : (double)INT64_MIN)
                            : 0;
        r->mag[0][e] = 0;
    }
    int64_t idx[TM_MAX_RANK];
    for (size_t e = 0; e < cnt_in; e++) {
        tm_unravel(e, d->dims[0], rk, idx);
        size_t o = 0;
        for (int i = 0; i < rk; i++)
            if (!reduce[i])
                o = o * (size_t)d->dims[0][i] + (size_t)idx[i];
        double x = tm_at(d, 0, e);
        r->v[0][o] = max_op ? fmax(r->v[0][o], x) : r->v[0][o] + x;
        r->mag[0][o] += fabs(x);
    }
    if (!strcmp(s->op, "ReduceMean"))
        for (size_t e = 0; e < cnt_out; e++) {
            r->v[0][e] = len ? r->v[0][e] / (double)len : NAN;
            r->mag[0][e] /= len ? (double)len : 1.0;
        }
}

static void tm_reference(const tm_node *n, const tm_data *d, tm_ref *r)
{
    const tm_spec *s = n->spec;
    const char *op = s->op;
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
        !strcmp(op, "Pow") || !strcmp(op, "Equal") || !strcmp(op, "Less") ||
        !strcmp(op, "Greater") || !strcmp(op, "Where")) {
        tm_ref_broadcast(n, d, r);
    } else if (!strcmp(op, "LogSoftmax")) {
        tm_ref_logsoftmax(s, d, r);
    } else if (!strcmp(op, "BatchNormalization") || !strcmp(op, "InstanceNormalization")) {
        tm_ref_planes(s, d, r);
    } else if (!strcmp(op, "LayerNormalization")) {
        tm_ref_layernorm(n, d, r);
    } else if (!strncmp(op, "Reduce", 6)) {
        tm_ref_reduce(n, d, r);
    } else {
        double lo = -INFINITY, hi = INFINITY;
        int opset = s->opset ? s->opset : 13;
        if (!strcmp(op, "Clip") && opset < 11) {
            lo = (float)tm_attr_f(s, "min", -3.402823e+38);
            hi = (float)tm_attr_f(s, "max", 3.402823e+38);
        } else if (!strcmp(op, "Clip")) {
            if (s->n_in > 1 && d->x[1])
                lo = tm_at(d, 1, 0);
            if (s->n_in > 2 && d->x[2])
                hi = tm_at(d, 2, 0);
        }
        size_t cnt = tm_count(n->out[0].shape, n->out[0].ndim);
        bool is_f = tm_is_float(d->dt[0]);
        for (size_t e = 0; e < cnt; e++) {
            double x = tm_at(d, 0, e);
            double v = tm_unary(s, x, lo, hi);
            r->v[0][e] = is_f ? v : tm_wrap(d->dt[0], (int64_t)v);
            r->mag[0][e] = fabs(r->v[0][e]);
        }
    }
}

/* ---- checking one node --------------------------------------------------- */

static double tm_rtol(const char *op)
{
    if (!strncmp(op, "Reduce", 6) || strstr(op, "Normalization") || !strcmp(op, "LogSoftmax"))
        return 2e-5;
    return 2e-6;
}

/* Runs SPEC's kernel with request REQ on every present output and compares
 * with the reference. ADD_TO starts from random output values; INPLACE
 * hands input 0's buffer as output 0. */
static void tm_check_req(const tm_spec *spec, pl_output_request req)
{
    tm_node n;
    tm_node_build(spec, &n);
    pl_kernel *k = tm_kernel(&n);
    size_t n_in = n.desc.n_inputs, n_out = n.desc.n_outputs;
    tm_buf bufs[TM_MAX_IN], obufs[TM_MAX_OUT];
    pl_tensor ins[TM_MAX_IN], outs[TM_MAX_OUT];
    tm_data d;
    memset(&d, 0, sizeof d);
    for (size_t i = 0; i < n_in; i++) {
        memset(&bufs[i], 0, sizeof bufs[i]);
        if (n.in[i].ndim < 0) {
            ins[i] = n.in[i];
            continue;
        }
        pl_dtype dt = n.in[i].dtype;
        size_t cnt = tm_count(n.in[i].shape, n.in[i].ndim);
        tm_buf_make(&bufs[i], cnt * pl_dtype_size(dt), 8 * (i + 1));
        if (spec->in[i].constant)
            for (size_t e = 0; e < cnt; e++)
                tm_store(bufs[i].data, dt, e, spec->in[i].vals[e]);
        else
            tm_fill(spec, (int)i, dt, bufs[i].data, cnt);
        ins[i] = tm_host_tensor(&n.in[i], &bufs[i]);
        d.x[i] = bufs[i].data;
        d.dt[i] = dt;
        d.dims[i] = n.in[i].shape;
        d.ndim[i] = n.in[i].ndim;
    }
    tm_ref r;
    memset(&r, 0, sizeof r);
    pl_output_request reqs[TM_MAX_OUT];
    double *before[TM_MAX_OUT] = {NULL};
    size_t cnt[TM_MAX_OUT] = {0};
    for (size_t o = 0; o < n_out; o++) {
        memset(&obufs[o], 0, sizeof obufs[o]);
        reqs[o] = PL_REQ_NULL;
        outs[o] = n.out[o];
        if (n.out[o].ndim < 0)
            continue;
        reqs[o] = o == 0 ? req : (req == PL_REQ_INPLACE ? PL_REQ_WRITE : req);
        cnt[o] = tm_count(n.out[o].shape, n.out[o].ndim);
        r.v[o] = calloc(cnt[o] + 1, sizeof(double));
        r.mag[o] = calloc(cnt[o] + 1, sizeof(double));
        before[o] = calloc(cnt[o] + 1, sizeof(double));
        CHECK(r.v[o] && r.mag[o] && before[o], "out of memory");
        pl_dtype dt = n.out[o].dtype;
        if (o == 0 && req == PL_REQ_INPLACE) {
            obufs[o] = bufs[0];
        } else {
            tm_buf_make(&obufs[o], cnt[o] * pl_dtype_size(dt), 16);
            for (size_t e = 0; e < cnt[o]; e++)
                tm_store(obufs[o].data, dt, e,
                         req == PL_REQ_ADD_TO ? floor(tm_random() * 10) : 77);
        }
        for (size_t e = 0; e < cnt[o]; e++)
            before[o][e] = tm_load(obufs[o].data, dt, e);
        outs[o] = tm_host_tensor(&n.out[o], &obufs[o]);
    }
    tm_reference(&n, &d, &r);
    CHECK_OK(tm_run(k, n_in, ins, n_out, outs, reqs));
    for (size_t o = 0; o < n_out; o++) {
        if (r.v[o] == NULL)
            continue;
        pl_dtype dt = n.out[o].dtype;
        bool is_f = tm_is_float(dt);
        for (size_t e = 0; e < cnt[o]; e++) {
            double add = req == PL_REQ_ADD_TO ? before[o][e] : 0.0;
            double want = r.v[o][e] + add;
            double got = tm_load(obufs[o].data, dt, e);
            double tol = is_f ? tm_rtol(spec->op) * (r.mag[o][e] + fabs(add)) + 1e-6 : 0.0;
            bool same = (isnan(want) && isnan(got)) || want == got || fabs(got - want) <= tol;
            CHECK(same,
                  "%s (opset %d, request %d): output %zu element %zu of %zu is %.9g, expected "
                  "%.9g (tolerance %.3g)",
                  spec->op, spec->opset ? spec->opset : 13, (int)req, o, e, cnt[o], got, want,
                  tol);
        }
    }
    tm_mod->api.kernel_release(tm_mod->ctx, k);
    for (size_t i = 0; i < n_in; i++)
        free(bufs[i].base);
    for (size_t o = 0; o < n_out; o++) {
        if (!(o == 0 && req == PL_REQ_INPLACE))
            free(obufs[o].base);
        free(r.v[o]);
        free(r.mag[o]);
        free(before[o]);
    }
    tm_node_free(&n);
}

static void tm_check(const tm_spec *spec) { tm_check_req(spec, PL_REQ_WRITE); }

#define TM_COUNT(a) (sizeof(a) / sizeof((a)[0]))
/* Shapes: T(ndim, dims...), of dtype TD(dtype, ndim, dims...). */
#define T(r, ...) {.ndim = r, .dims = {__VA_ARGS__}}
#define TD(dt, r, ...) {.ndim = r, .dims = {__VA_ARGS__}, .dtype = dt}
#define T0 {.ndim = 0}
#define TD0(dt) {.ndim = 0, .dtype = dt}
#define ABSENT {.ndim = -1, .absent = 1}
/* An i64 constant vector (axes). */
#define AXES(cnt, ...) {.ndim = 1, .dims = {cnt}, .dtype = PL_DTYPE_I64, .constant = 1, .vals = {__VA_ARGS__}}
/* An f32 scalar constant. */
#define CONST_F(v) {.ndim = 0, .constant = 1, .vals = {v}}
#define AI(nm, v) {.name = nm, .kind = 'i', .i = v}
#define AF(nm, v) {.name = nm, .kind = 'f', .f = v}
#define AIS(nm, cnt, ...) {.name = nm, .kind = 'I', .n = cnt, .ints = {__VA_ARGS__}}

static void tm_check_all(const tm_spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tm_check(&specs[i]);
}

/* ---- unary --------------------------------------------------------------- */

static const tm_in tm_unary_shapes[] = {
    T0, T(1, 1), T(1, 7), T(3, 2, 3, 4), T(2, 0, 5), T(2, 517, 311),
};

static void tm_check_unary(const char *op, bool ints)
{
    for (size_t i = 0; i < TM_COUNT(tm_unary_shapes); i++) {
        tm_spec s = {.op = op, .n_in = 1};
        s.in[0] = tm_unary_shapes[i];
        tm_check(&s);
        if (ints) {
            s.in[0].dtype = PL_DTYPE_I64;
            tm_check(&s);
            s.in[0].dtype = PL_DTYPE_I32;
            tm_check(&s);
        }
    }
}

static void case_Sqrt(void) { tm_check_unary("Sqrt", false); }
static void case_Exp(void) { tm_check_unary("Exp", false); }
static void case_Log(void) { tm_check_unary("Log", false); }
static void case_Neg(void) { tm_check_unary("Neg", true); }
static void case_Abs(void) { tm_check_unary("Abs", true); }
static void case_Reciprocal(void) { tm_check_unary("Reciprocal", false); }
static void case_Erf(void) { tm_check_unary("Erf", false); }

static void case_LeakyRelu(void)
{
    tm_check_unary("LeakyRelu", false);
    static const tm_spec specs[] = {
        {.op = "LeakyRelu", .n_in = 1, .in = {T(2, 300, 200)}, .attrs = {AF("alpha", 0.2)},
         .n_attrs = 1},
        {.op = "LeakyRelu", .n_in = 1, .in = {T(1, 9)}, .attrs = {AF("alpha", -1.5)},
         .n_attrs = 1},
    };
    tm_check_all(specs, TM_COUNT(specs));
}

static const tm_spec tm_clip_specs[] = {
    /* opset 11+: bounds as inputs, constant or not, either absent */
    {.op = "Clip", .n_in = 3, .in = {T(2, 300, 200), CONST_F(0), CONST_F(6)}},     /* ReLU6 */
    {.op = "Clip", .n_in = 3, .in = {T(3, 2, 3, 4), T0, T0}},
    {.op = "Clip", .n_in = 3, .in = {T(3, 2, 3, 4), ABSENT, CONST_F(0.5)}},
    {.op = "Clip", .n_in = 2, .in = {T(3, 2, 3, 4), CONST_F(-0.5)}},
    {.op = "Clip", .n_in = 1, .in = {T(1, 7)}},
    {.op = "Clip", .n_in = 3, .in = {T(2, 0, 3), ABSENT, ABSENT}},
    {.op = "Clip", .opset = 11, .n_in = 3, .in = {T0, CONST_F(-1), CONST_F(1)}},
    /* before opset 11: bounds as attributes, defaults when absent */
    {.op = "Clip", .opset = 7, .n_in = 1, .in = {T(2, 30, 17)},
     .attrs = {AF("min", -0.25), AF("max", 1.0)}, .n_attrs = 2},
    {.op = "Clip", .opset = 7, .n_in = 1, .in = {T(2, 30, 17)}, .attrs = {AF("max", 0.0)},
     .n_attrs = 1},
    {.op = "Clip", .opset = 7, .n_in = 1, .in = {T(2, 30, 17)}},
};

static void case_Clip(void) { tm_check_all(tm_clip_specs, TM_COUNT(tm_clip_specs)); }

/* ---- broadcasting -------------------------------------------------------- */

static const tm_in tm_binary_shapes[][2] = {
    {T(2, 3, 4), T(2, 3, 4)},          /* same shape */
    {T(2, 3, 4), T0},                  /* scalar right */
    {T0, T(2, 3, 4)},                  /* scalar left */
    {T0, T0},
    {T(3, 2, 3, 5), T(1, 5)},          /* row, rank mismatch */
    {T(1, 5), T(3, 2, 3, 5)},
    {T(3, 2, 3, 768), T(3, 2, 3, 1)},  /* BERT: [B,S,H] - mean[B,S,1] */
    {T(3, 2, 1, 5), T(3, 2, 3, 5)},    /* size-1 middle dim, left */
    {T(2, 4, 1), T(2, 1, 6)},          /* both broadcast */
    {T(3, 1, 1, 7), T(2, 1, 7)},
    {T(4, 2, 1, 3, 1), T(4, 1, 4, 1, 5)},
    {T(1, 1), T(1, 1)},
    {T(2, 0, 3), T(1, 3)},             /* empty */
    {T(2, 300, 257), T(1, 257)},       /* parallel chunks */
    {T(1, 100003), T(1, 100003)},
};

static void tm_check_binary(const char *op, const pl_dtype *dts, size_t n_dts, pl_dtype exp_dt)
{
    for (size_t t = 0; t < n_dts; t++)
        for (size_t i = 0; i < TM_COUNT(tm_binary_shapes); i++) {
            tm_spec s = {.op = op, .n_in = 2};
            s.in[0] = tm_binary_shapes[i][0];
            s.in[1] = tm_binary_shapes[i][1];
            s.in[0].dtype = dts[t];
            s.in[1].dtype = exp_dt.lanes ? exp_dt : dts[t];
            tm_check(&s);
        }
}

static const pl_dtype tm_arith_dts[] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_INT, 64, 1},
                                        {PL_TYPE_INT, 32, 1}};
static const pl_dtype tm_compare_dts[] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_INT, 64, 1},
                                          {PL_TYPE_INT, 32, 1}, {PL_TYPE_UINT, 8, 1},
                                          {PL_TYPE_INT, 8, 1}};

static void case_Add(void) { tm_check_binary("Add", tm_arith_dts, 3, (pl_dtype){0, 0, 0}); }
static void case_Sub(void) { tm_check_binary("Sub", tm_arith_dts, 3, (pl_dtype){0, 0, 0}); }
static void case_Mul(void) { tm_check_binary("Mul", tm_arith_dts, 3, (pl_dtype){0, 0, 0}); }

/* Integer division by zero fails the run; integer Div truncates. */
static void case_Div(void)
{
    tm_check_binary("Div", tm_arith_dts, 3, (pl_dtype){0, 0, 0});
    for (int w = 0; w < 2; w++) {
        pl_dtype dt = w ? PL_DTYPE_I32 : PL_DTYPE_I64;
        tm_spec s = {.op = "Div", .n_in = 2, .in = {TD(dt, 1, 4), TD(dt, 1, 4)}};
        tm_node n;
        tm_node_build(&s, &n);
        pl_kernel *k = tm_kernel(&n);
        int64_t a64[4] = {7, -7, 7, -9}, b64[4] = {2, 2, -2, 0}, o64[4] = {5, 5, 5, 5};
        int32_t a32[4] = {7, -7, 7, -9}, b32[4] = {2, 2, -2, 0}, o32[4] = {5, 5, 5, 5};
        pl_tensor ins[2] = {n.in[0], n.in[1]}, out = n.out[0];
        ins[0].data = w ? (void *)a32 : (void *)a64;
        ins[1].data = w ? (void *)b32 : (void *)b64;
        out.data = w ? (void *)o32 : (void *)o64;
        pl_output_request req = PL_REQ_WRITE;
        pl_status *st = tm_run(k, 2, ins, 1, &out, &req);
        CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT &&
                  strstr(pl_status_message(st), "cpu: Div: integer division by zero"),
              "division by zero: %s", st ? pl_status_message(st) : "accepted");
        pl_status_free(st);
        CHECK((w ? o32[0] : o64[0]) == 5, "a failed division wrote its output");
        if (w)
            b32[3] = -1;
        else
            b64[3] = -1;
        CHECK_OK(tm_run(k, 2, ins, 1, &out, &req));
        int64_t got[4];
        for (int i = 0; i < 4; i++)
            got[i] = w ? o32[i] : o64[i];
        CHECK(got[0] == 3 && got[1] == -3 && got[2] == -3 && got[3] == 9,
              "integer Div does not truncate: %lld %lld %lld %lld", (long long)got[0],
              (long long)got[1], (long long)got[2], (long long)got[3]);
        tm_mod->api.kernel_release(tm_mod->ctx, k);
        tm_node_free(&n);
    }
}

static void case_Pow(void)
{
    tm_check_binary("Pow", tm_arith_dts, 1, (pl_dtype){0, 0, 0});
    tm_check_binary("Pow", tm_arith_dts, 1, PL_DTYPE_I64);
    tm_check_binary("Pow", tm_arith_dts, 1, PL_DTYPE_I32);
    /* the fast exponents, as constants the way exporters write them */
    static const double exps[] = {2.0, 0.5, 1.0, 3.0, -1.0};
    for (size_t i = 0; i < TM_COUNT(exps); i++) {
        tm_spec s = {.op = "Pow", .n_in = 2, .in = {T(3, 4, 30, 768), CONST_F(exps[i])}};
        tm_check(&s);
        tm_spec s1 = {.op = "Pow", .n_in = 2, .in = {T(1, 5), CONST_F(exps[i])}};
        tm_check(&s1);
    }
    tm_spec si = {.op = "Pow", .n_in = 2,
                  .in = {T(2, 3, 4), {.ndim = 0, .dtype = PL_DTYPE_I64, .constant = 1,
                                       .vals = {2}}}};
    tm_check(&si);
}

static void case_Equal(void)
{
    tm_check_binary("Equal", tm_compare_dts, TM_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
    static const pl_dtype b[] = {{PL_TYPE_BOOL, 8, 1}};
    tm_check_binary("Equal", b, 1, (pl_dtype){0, 0, 0});
}
static void case_Less(void)
{
    tm_check_binary("Less", tm_compare_dts, TM_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
}
static void case_Greater(void)
{
    tm_check_binary("Greater", tm_compare_dts, TM_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
}

static const tm_in tm_where_shapes[][3] = {
    {T(2, 3, 4), T(2, 3, 4), T(2, 3, 4)},
    {T(2, 3, 4), T0, T0},
    {T0, T(2, 3, 4), T(1, 4)},
    {T(2, 3, 1), T(1, 5), T0},
    {T(4, 2, 1, 12, 1), T(4, 1, 1, 12, 12), T(1, 1)},     /* attention mask */
    {T(1, 1), T(2, 1, 1), T(1, 1)},
    {T(2, 0, 3), T(1, 3), T(1, 3)},
    {T(2, 300, 257), T(2, 300, 257), T(1, 257)},
};

static void case_Where(void)
{
    static const pl_dtype dts[] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_INT, 64, 1},
                                   {PL_TYPE_INT, 32, 1},   {PL_TYPE_BOOL, 8, 1},
                                   {PL_TYPE_UINT, 8, 1},   {PL_TYPE_FLOAT, 64, 1}};
    for (size_t t = 0; t < TM_COUNT(dts); t++)
        for (size_t i = 0; i < TM_COUNT(tm_where_shapes); i++) {
            tm_spec s = {.op = "Where", .n_in = 3};
            for (int j = 0; j < 3; j++)
                s.in[j] = tm_where_shapes[i][j];
            s.in[0].dtype = PL_DTYPE_BOOL;
            s.in[1].dtype = s.in[2].dtype = dts[t];
            tm_check(&s);
        }
}

/* ---- LogSoftmax and the normalisations ------------------------------------ */

static const tm_spec tm_logsoftmax_specs[] = {
    {.op = "LogSoftmax", .n_in = 1, .in = {T(2, 3, 5)}},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(1, 1)}},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", -2)},
     .n_attrs = 1},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(3, 3, 7, 150)}, .attrs = {AI("axis", 1)},
     .n_attrs = 1},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(2, 400, 300)}},
    {.op = "LogSoftmax", .n_in = 1, .in = {T(2, 0, 3)}},
    /* before opset 13: the dims from axis on are one row */
    {.op = "LogSoftmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)}},
    {.op = "LogSoftmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 2)},
     .n_attrs = 1},
    {.op = "LogSoftmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)},
     .attrs = {AI("axis", -3)}, .n_attrs = 1},
};

static void case_LogSoftmax(void)
{
    tm_check_all(tm_logsoftmax_specs, TM_COUNT(tm_logsoftmax_specs));
}

static const tm_spec tm_bn_specs[] = {
    {.op = "BatchNormalization", .n_in = 5,
     .in = {T(4, 2, 3, 4, 5), T(1, 3), T(1, 3), T(1, 3), T(1, 3)}},
    {.op = "BatchNormalization", .n_in = 5, .in = {T(2, 6, 3), T(1, 3), T(1, 3), T(1, 3), T(1, 3)},
     .attrs = {AF("epsilon", 0.01)}, .n_attrs = 1},
    {.op = "BatchNormalization", .opset = 9, .n_in = 5,
     .in = {T(3, 2, 4, 7), T(1, 4), T(1, 4), T(1, 4), T(1, 4)}},
    {.op = "BatchNormalization", .opset = 7, .n_in = 5,
     .in = {T(4, 1, 2, 1, 1), T(1, 2), T(1, 2), T(1, 2), T(1, 2)}},
    {.op = "BatchNormalization", .opset = 15, .n_in = 5,
     .in = {T(4, 2, 32, 56, 56), T(1, 32), T(1, 32), T(1, 32), T(1, 32)},
     .attrs = {AI("training_mode", 0)}, .n_attrs = 1},
    {.op = "BatchNormalization", .n_in = 5,
     .in = {T(4, 0, 3, 4, 5), T(1, 3), T(1, 3), T(1, 3), T(1, 3)}},
};

static void case_BatchNormalization(void) { tm_check_all(tm_bn_specs, TM_COUNT(tm_bn_specs)); }

static const tm_spec tm_ln_specs[] = {
    {.op = "LayerNormalization", .opset = 17, .n_in = 3, .in = {T(3, 2, 5, 768), T(1, 768), T(1, 768)}},
    {.op = "LayerNormalization", .opset = 17, .n_in = 2, .in = {T(3, 2, 5, 16), T(1, 16)}},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3, .in = {T(3, 2, 5, 16), T(1, 16), ABSENT}},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3,
     .in = {T(3, 2, 5, 6), T(2, 5, 6), T(2, 5, 6)}, .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3,
     .in = {T(3, 2, 5, 6), T(1, 6), T(2, 1, 6)}, .attrs = {AI("axis", -2)}, .n_attrs = 1},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3,
     .in = {T(3, 2, 5, 6), T(1, 1), T(1, 6)}, .attrs = {AI("axis", -2), AF("epsilon", 0.1)},
     .n_attrs = 2},
    /* Mean and InvStdDev requested, all or some */
    {.op = "LayerNormalization", .opset = 17, .n_in = 3,
     .in = {T(3, 4, 7, 33), T(1, 33), T(1, 33)}, .n_out = 3},
    {.op = "LayerNormalization", .opset = 17, .n_in = 2, .in = {T(3, 4, 7, 33), T(2, 7, 33)},
     .attrs = {AI("axis", 1)}, .n_attrs = 1, .n_out = 3, .out_absent = 2u},
    {.op = "LayerNormalization", .opset = 17, .n_in = 2, .in = {T(2, 5, 8), T(1, 8)},
     .n_out = 2},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3, .in = {T(2, 0, 8), T(1, 8), T(1, 8)}},
    {.op = "LayerNormalization", .opset = 17, .n_in = 3,
     .in = {T(2, 512, 1024), T(1, 1024), T(1, 1024)}},
};

static void case_LayerNormalization(void) { tm_check_all(tm_ln_specs, TM_COUNT(tm_ln_specs)); }

static const tm_spec tm_in_specs[] = {
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 2, 3, 4, 5), T(1, 3), T(1, 3)}},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(3, 2, 3, 7), T(1, 3), T(1, 3)},
     .attrs = {AF("epsilon", 0.5)}, .n_attrs = 1},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 1, 1, 1, 1), T(1, 1), T(1, 1)}},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 2, 16, 40, 40), T(1, 16), T(1, 16)}},
};

static void case_InstanceNormalization(void) { tm_check_all(tm_in_specs, TM_COUNT(tm_in_specs)); }

/* ---- reductions ------------------------------------------------------------ */

/* Shapes and axes, run for each op with keepdims 1 and 0, attribute axes
 * (opset 11) and input axes (opset 18; 13 for ReduceSum). */
static const struct {
    tm_in x;
    int n_axes;
    int64_t axes[4];
} tm_reduce_cases[] = {
    {T(3, 2, 5, 768), 1, {-1}},            /* BERT's mean over the last axis */
    {T(3, 2, 3, 4), 1, {1}},               /* middle */
    {T(3, 2, 3, 4), 1, {0}},               /* leading */
    {T(3, 2, 3, 4), 2, {0, 2}},            /* interleaved */
    {T(4, 2, 3, 4, 5), 2, {-1, -2}},       /* spatial */
    {T(4, 2, 3, 4, 5), 2, {1, 3}},
    {T(4, 2, 3, 4, 5), 3, {0, 2, 3}},
    {T(3, 2, 1, 4), 1, {1}},               /* a size-1 reduced dim */
    {T(3, 2, 3, 4), 0, {0}},               /* no axes: everything */
    {T(1, 7), 1, {0}},
    {T0, 0, {0}},
    {T(3, 2, 0, 4), 1, {1}},               /* reducing an empty dim */
    {T(2, 3, 0), 1, {0}},                  /* empty output */
    {T(3, 8, 300, 300), 1, {1}},           /* parallel tiles */
    {T(2, 3000, 100), 1, {0}},
};

static void tm_check_reduce(const char *op, const pl_dtype *dts, size_t n_dts)
{
    int input_opset = !strcmp(op, "ReduceSum") ? 13 : 18;
    for (size_t t = 0; t < n_dts; t++)
        for (size_t i = 0; i < TM_COUNT(tm_reduce_cases); i++)
            for (int keep = 0; keep < 2; keep++)
                for (int form = 0; form < 2; form++) {
                    tm_spec s = {.op = op, .n_in = 1, .opset = form ? input_opset : 11};
                    s.in[0] = tm_reduce_cases[i].x;
                    s.in[0].dtype = dts[t];
                    s.attrs[s.n_attrs++] = (tm_attr)AI("keepdims", keep);
                    int na = tm_reduce_cases[i].n_axes;
                    if (form && na > 0) {
                        s.n_in = 2;
                        s.in[1] = (tm_in)AXES(na);
                        for (int a = 0; a < na; a++)
                            s.in[1].vals[a] = (double)tm_reduce_cases[i].axes[a];
                    } else if (na > 0) {
                        tm_attr a = AIS("axes", na);
                        memcpy(a.ints, tm_reduce_cases[i].axes, sizeof(int64_t) * (size_t)na);
                        s.attrs[s.n_attrs++] = a;
                    }
                    tm_check(&s);
                }
    /* input axes: an empty list with noop_with_empty_axes, an absent input */
    tm_spec noop = {.op = op, .opset = input_opset, .n_in = 2,
                    .in = {T(2, 3, 4), {.ndim = 1, .dims = {0}, .dtype = PL_DTYPE_I64,
                                        .constant = 1}},
                    .attrs = {AI("noop_with_empty_axes", 1)}, .n_attrs = 1};
    tm_check(&noop);
    tm_spec absent = {.op = op, .opset = input_opset, .n_in = 2, .in = {T(2, 3, 4), ABSENT},
                      .attrs = {AI("keepdims", 0)}, .n_attrs = 1};
    tm_check(&absent);
    tm_spec only = {.op = op, .opset = input_opset, .n_in = 1, .in = {T(2, 3, 4)}};
    tm_check(&only);
}

static void case_ReduceMean(void) { tm_check_reduce("ReduceMean", tm_arith_dts, 1); }
static void case_ReduceSum(void) { tm_check_reduce("ReduceSum", tm_arith_dts, 3); }
static void case_ReduceMax(void) { tm_check_reduce("ReduceMax", tm_arith_dts, 3); }

/* ---- requests -------------------------------------------------------------- */

/* PL_REQ_ADD_TO on a selection of every kind of kernel. */
static void case_add_to(void)
{
    static const char *const unary[] = {"Sqrt", "Exp", "Neg", "Abs", "Erf", "LeakyRelu"};
    for (size_t o = 0; o < TM_COUNT(unary); o++)
        for (size_t i = 0; i < TM_COUNT(tm_unary_shapes); i++) {
            tm_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tm_unary_shapes[i];
            tm_check_req(&s, PL_REQ_ADD_TO);
        }
    tm_spec neg = {.op = "Neg", .n_in = 1, .in = {TD(PL_DTYPE_I64, 2, 3, 4)}};
    tm_check_req(&neg, PL_REQ_ADD_TO);
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (size_t o = 0; o < TM_COUNT(binary); o++)
        for (size_t t = 0; t < (strcmp(binary[o], "Pow") ? 3u : 1u); t++)
            for (size_t i = 0; i < TM_COUNT(tm_binary_shapes); i++) {
                tm_spec s = {.op = binary[o], .n_in = 2};
                s.in[0] = tm_binary_shapes[i][0];
                s.in[1] = tm_binary_shapes[i][1];
                s.in[0].dtype = s.in[1].dtype = tm_arith_dts[t];
                tm_check_req(&s, PL_REQ_ADD_TO);
            }
    for (size_t i = 0; i < TM_COUNT(tm_where_shapes); i++) {
        tm_spec s = {.op = "Where", .n_in = 3};
        for (int j = 0; j < 3; j++)
            s.in[j] = tm_where_shapes[i][j];
        s.in[0].dtype = PL_DTYPE_BOOL;
        tm_check_req(&s, PL_REQ_ADD_TO);
    }
    const struct {
        const tm_spec *specs;
        size_t n;
    } sets[] = {
        {tm_clip_specs, TM_COUNT(tm_clip_specs)},
        {tm_logsoftmax_specs, TM_COUNT(tm_logsoftmax_specs)},
        {tm_bn_specs, TM_COUNT(tm_bn_specs)},
        {tm_ln_specs, TM_COUNT(tm_ln_specs)},
        {tm_in_specs, TM_COUNT(tm_in_specs)},
    };
    for (size_t s = 0; s < TM_COUNT(sets); s++)
        for (size_t i = 0; i < sets[s].n; i++)
            tm_check_req(&sets[s].specs[i], PL_REQ_ADD_TO);
    static const char *const reduce[] = {"ReduceMean", "ReduceSum", "ReduceMax"};
    for (size_t o = 0; o < TM_COUNT(reduce); o++)
        for (size_t i = 0; i < TM_COUNT(tm_reduce_cases); i++) {
            tm_spec s = {.op = reduce[o], .opset = 11, .n_in = 1};
            s.in[0] = tm_reduce_cases[i].x;
            int na = tm_reduce_cases[i].n_axes;
            if (na > 0) {
                tm_attr a = AIS("axes", na);
                memcpy(a.ints, tm_reduce_cases[i].axes, sizeof(int64_t) * (size_t)na);
                s.attrs[s.n_attrs++] = a;
            }
            tm_check_req(&s, PL_REQ_ADD_TO);
        }
}

/* PL_REQ_INPLACE where the schema allows it: output 0 is input 0's buffer. */
static void case_inplace(void)
{
    static const char *const unary[] = {"Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal",
                                        "Erf", "LeakyRelu"};
    for (size_t o = 0; o < TM_COUNT(unary); o++)
        for (size_t i = 0; i < TM_COUNT(tm_unary_shapes); i++) {
            tm_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tm_unary_shapes[i];
            tm_check_req(&s, PL_REQ_INPLACE);
        }
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (size_t o = 0; o < TM_COUNT(binary); o++)
        for (size_t t = 0; t < (strcmp(binary[o], "Pow") ? 3u : 1u); t++)
            for (size_t i = 0; i < TM_COUNT(tm_binary_shapes); i++) {
                tm_spec s = {.op = binary[o], .n_in = 2};
                s.in[0] = tm_binary_shapes[i][0];
                s.in[1] = tm_binary_shapes[i][1];
                s.in[0].dtype = s.in[1].dtype = tm_arith_dts[t];
                tm_node n;
                tm_node_build(&s, &n);
                size_t na = tm_count(n.in[0].shape, n.in[0].ndim);
                size_t nout = tm_count(n.out[0].shape, n.out[0].ndim);
                tm_node_free(&n);
                if (na == nout)
                    tm_check_req(&s, PL_REQ_INPLACE);
            }
    for (size_t i = 0; i < TM_COUNT(tm_clip_specs); i++)
        tm_check_req(&tm_clip_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < TM_COUNT(tm_logsoftmax_specs); i++)
        tm_check_req(&tm_logsoftmax_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < TM_COUNT(tm_bn_specs); i++)
        tm_check_req(&tm_bn_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < TM_COUNT(tm_in_specs); i++)
        tm_check_req(&tm_in_specs[i], PL_REQ_INPLACE);
}

/* ---- refusals -------------------------------------------------------------- */

static void tm_expect_refusal(const tm_spec *spec, pl_code code, const char *message)
{
    tm_node n;
    tm_node_build(spec, &n);
    pl_kernel *k = (pl_kernel *)&n; /* must be cleared */
    size_t ws = 7;
    pl_status *st = tm_mod->api.get_kernel(tm_mod->ctx, 0, &n.desc, &k, &ws);
    CHECK(st != NULL, "get_kernel(%s) accepted the node", spec->op);
    CHECK(k == NULL && ws == 0, "a refusal left outputs set");
    CHECK(pl_status_code(st) == code, "%s: code %s, expected %s (%s)", spec->op,
          pl_code_name(pl_status_code(st)), pl_code_name(code), pl_status_message(st));
    CHECK(strstr(pl_status_message(st), message) != NULL, "refusal \"%s\" lacks \"%s\"",
          pl_status_message(st), message);
    pl_status_free(st);
    tm_node_free(&n);
}

static void case_refusals(void)
{
    const pl_code U = PL_CODE_UNSUPPORTED;
    tm_spec add_f64 = {.op = "Add", .n_in = 2, .in = {TD(PL_DTYPE_F64, 1, 4), TD(PL_DTYPE_F64, 1, 4)}};
    tm_expect_refusal(&add_f64, U, "cpu: Add: unsupported dtype f64");
    tm_spec add_u8 = {.op = "Add", .n_in = 2, .in = {TD(PL_DTYPE_U8, 1, 4), TD(PL_DTYPE_U8, 1, 4)}};
    tm_expect_refusal(&add_u8, U, "cpu: Add: unsupported dtype u8");
    tm_spec pow_f64 = {.op = "Pow", .n_in = 2, .in = {TD(PL_DTYPE_F64, 1, 4), T(1, 4)}};
    tm_expect_refusal(&pow_f64, U, "cpu: Pow: unsupported dtype f64");
    tm_spec pow_int = {.op = "Pow", .n_in = 2, .in = {TD(PL_DTYPE_I64, 1, 4), T(1, 4)}};
    tm_expect_refusal(&pow_int, U, "cpu: Pow: unsupported dtype i64");
    tm_spec pow_u8 = {.op = "Pow", .n_in = 2, .in = {T(1, 4), TD(PL_DTYPE_U8, 1, 4)}};
    tm_expect_refusal(&pow_u8, U, "cpu: Pow: unsupported dtype u8");
    tm_spec less_f16 = {.op = "Less", .n_in = 2, .in = {TD(PL_DTYPE_F16, 1, 4), TD(PL_DTYPE_F16, 1, 4)}};
    tm_expect_refusal(&less_f16, U, "cpu: Less: unsupported dtype f16");
    tm_spec sqrt_f64 = {.op = "Sqrt", .n_in = 1, .in = {TD(PL_DTYPE_F64, 1, 4)}};
    tm_expect_refusal(&sqrt_f64, U, "cpu: Sqrt: unsupported dtype f64");
    tm_spec abs_u8 = {.op = "Abs", .n_in = 1, .in = {TD(PL_DTYPE_U8, 1, 4)}};
    tm_expect_refusal(&abs_u8, U, "cpu: Abs: unsupported dtype u8");
    tm_spec clip_i64 = {.op = "Clip", .n_in = 1, .in = {TD(PL_DTYPE_I64, 1, 4)}};
    tm_expect_refusal(&clip_i64, U, "cpu: Clip: unsupported dtype i64");
    tm_spec mean_i64 = {.op = "ReduceMean", .opset = 11, .n_in = 1, .in = {TD(PL_DTYPE_I64, 2, 3, 4)}};
    tm_expect_refusal(&mean_i64, U, "cpu: ReduceMean: unsupported dtype i64");
    /* axes computed at run time (a shape of 1s keeps the output known) */
    tm_spec axes_rt = {.op = "ReduceSum", .n_in = 2,
                       .in = {T(2, 1, 1), TD(PL_DTYPE_I64, 1, 1)}};
    tm_expect_refusal(&axes_rt, U, "cpu: ReduceSum: axes (input 1) computed at run time");
    tm_spec bn_train = {.op = "BatchNormalization", .opset = 15, .n_in = 5,
                        .in = {T(3, 2, 3, 4), T(1, 3), T(1, 3), T(1, 3), T(1, 3)},
                        .attrs = {AI("training_mode", 1)}, .n_attrs = 1};
    tm_expect_refusal(&bn_train, U, "cpu: BatchNormalization: training_mode=1");
    tm_spec bn_stats = {.op = "BatchNormalization", .opset = 9, .n_in = 5,
                        .in = {T(3, 2, 3, 4), T(1, 3), T(1, 3), T(1, 3), T(1, 3)}, .n_out = 3};
    tm_expect_refusal(&bn_stats, U, "cpu: BatchNormalization: output 1");
    tm_spec ln_mid = {.op = "LayerNormalization", .opset = 17, .n_in = 2,
                      .in = {T(3, 2, 5, 6), T(2, 5, 1)}, .attrs = {AI("axis", 1)}, .n_attrs = 1};
    tm_expect_refusal(&ln_mid, U, "cpu: LayerNormalization: scale [5,1]");

    /* Requests a kernel cannot honour are errors, not crashes. */
    tm_spec eq = {.op = "Equal", .n_in = 2, .in = {T(1, 4), T(1, 4)}};
    tm_node n;
    tm_node_build(&eq, &n);
    pl_kernel *k = tm_kernel(&n);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 3, 0};
    uint8_t o[4] = {9, 9, 9, 9};
    pl_tensor ins[2] = {n.in[0], n.in[1]}, out = n.out[0];
    ins[0].data = a;
    ins[1].data = b;
    out.data = o;
    pl_output_request req = PL_REQ_ADD_TO;
    pl_status *st = tm_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && strstr(pl_status_message(st), "cpu: Equal: "), "bool add-to accepted");
    pl_status_free(st);
    req = PL_REQ_INPLACE;
    st = tm_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "in-place Equal accepted");
    pl_status_free(st);
    req = PL_REQ_WRITE;
    ins[1].data = NULL;
    st = tm_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && strstr(pl_status_message(st), "input 1 has no data"),
          "missing input accepted");
    pl_status_free(st);
    ins[1].data = b;
    pl_tensor wrong = out;
    wrong.shape = (int64_t[]){5};
    st = tm_run(k, 2, ins, 1, &wrong, &req);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "wrong size accepted");
    pl_status_free(st);
    CHECK(o[0] == 9, "a refused run wrote its output");
    CHECK_OK(tm_run(k, 2, ins, 1, &out, &req));
    CHECK(o[0] == 1 && o[1] == 0 && o[2] == 1 && o[3] == 0, "Equal wrong");
    req = PL_REQ_NULL;
    out.data = NULL;
    CHECK_OK(tm_run(k, 2, ins, 1, &out, &req));
    tm_mod->api.kernel_release(tm_mod->ctx, k);
    tm_node_free(&n);
}

static const struct {
    const char *name;
    void (*run)(void);
} tm_cases[] = {
    {"Sqrt", case_Sqrt},
    {"Exp", case_Exp},
    {"Log", case_Log},
    {"Neg", case_Neg},
    {"Abs", case_Abs},
    {"Reciprocal", case_Reciprocal},
    {"Erf", case_Erf},
    {"LeakyRelu", case_LeakyRelu},
    {"Clip", case_Clip},
    {"Add", case_Add},
    {"Sub", case_Sub},
    {"Mul", case_Mul},
    {"Div", case_Div},
    {"Pow", case_Pow},
    {"Equal", case_Equal},
    {"Less", case_Less},
    {"Greater", case_Greater},
    {"Where", case_Where},
    {"LogSoftmax", case_LogSoftmax},
    {"BatchNormalization", case_BatchNormalization},
    {"LayerNormalization", case_LayerNormalization},
    {"InstanceNormalization", case_InstanceNormalization},
    {"ReduceMean", case_ReduceMean},
    {"ReduceSum", case_ReduceSum},
    {"ReduceMax", case_ReduceMax},
    {"add_to", case_add_to},
    {"inplace", case_inplace},
    {"refusals", case_refusals},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < TM_COUNT(tm_cases); i++) {
        if (strcmp(argv[1], tm_cases[i].name) != 0)
            continue;
        tm_setup(argv[2]);
        tm_cases[i].run();
        pl_runtime_destroy(tm_rt);
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
