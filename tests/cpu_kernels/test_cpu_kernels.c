/* test_cpu_kernels.c — the cpu module's kernels, driven the way the core
 * drives them: a one-node graph with inferred shapes, a view of it, a
 * pl_node_desc, then get_kernel and kernel_run through the module's table.
 * Every kernel is compared against a plain reference loop written here
 * (computed in double), on shapes with broadcasting corners; then the
 * output requests (add-to, in place), the refusals, and concurrent runs of
 * one kernel. Linked against the core's object library. Usage:
 * test_cpu_kernels CASE STAGE_DIR. */
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

#define TK_MAX_IN 6
#define TK_MAX_RANK 8

static void tk_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void tk_fail(const char *file, int line, const char *fmt, ...)
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
            tk_fail(__FILE__, __LINE__, __VA_ARGS__);    \
    } while (0)

#define CHECK_OK(expr)                                                       \
    do {                                                                     \
        pl_status *tk_st_ = (expr);                                          \
        if (tk_st_ != NULL)                                                  \
            tk_fail(__FILE__, __LINE__, "%s failed: %s", #expr,              \
                    pl_status_message(tk_st_));                              \
    } while (0)

/* ---- the module ---------------------------------------------------------- */

static pl_runtime *tk_rt;
static pl_module *tk_mod;

/* A runtime whose only module is the staged cpu module, on 4 threads (more
 * than this machine may have: chunks then interleave on fewer cores). */
static void tk_setup(const char *stage_dir)
{
    char dir[] = "/tmp/plinth-cpu-kernels-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_cpu.so\nthreads = 4\n", stage_dir);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    CHECK_OK(pl_runtime_create(&o, &tk_rt));
    unlink(ini);
    rmdir(dir);
    long idx = pl_runtime_find_module(tk_rt, "cpu");
    CHECK(idx >= 0, "no cpu module in %s", stage_dir);
    tk_mod = tk_rt->modules[idx];
    CHECK(tk_mod->status == PL_MODULE_LOADED && tk_mod->ctx != NULL,
          "cpu module not loaded: %s", tk_mod->reason);
}

static void tk_teardown(void)
{
    pl_runtime_destroy(tk_rt);
}

/* ---- one-node graphs ----------------------------------------------------- */

typedef struct tk_shape {
    int ndim;               /* -1 with `absent`: an absent optional input */
    int64_t dims[TK_MAX_RANK];
    int absent;
} tk_shape;

typedef struct tk_attr {
    const char *name;
    char kind;              /* 'i' int, 'f' float, 'I' ints */
    int64_t i;
    double f;
    int64_t ints[TK_MAX_RANK];
    int n;
} tk_attr;

/* A node to test: op, input shapes (f32 unless dtype says), attributes,
 * opset (0: 13). Reshape's target shape is `reshape` (n_reshape values),
 * given as an i64 constant second input. */
typedef struct tk_spec {
    const char *op;
    int opset;
    int n_in;
    tk_shape in[TK_MAX_IN];
    tk_attr attrs[4];
    int n_attrs;
    int64_t reshape[TK_MAX_RANK];
    int n_reshape;
    pl_dtype dtype;          /* lanes 0: f32 */
} tk_spec;

typedef struct tk_node {
    const tk_spec *spec;
    pl_graph *g;
    pl_graph_view *view;
    pl_tensor in[TK_MAX_IN];
    pl_tensor out;
    pl_node_desc desc;
} tk_node;

static void tk_describe(const pl_graph *g, pl_tid t, pl_tensor *out)
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

/* Builds the graph of SPEC, infers its shapes and describes its node. */
static void tk_node_build(const tk_spec *spec, tk_node *n)
{
    memset(n, 0, sizeof *n);
    n->spec = spec;
    pl_dtype dt = spec->dtype.lanes ? spec->dtype : PL_DTYPE_F32;
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", spec->opset ? spec->opset : 13));
    char names[TK_MAX_IN][16];
    const char *in_names[TK_MAX_IN];
    for (int i = 0; i < spec->n_in; i++) {
        snprintf(names[i], sizeof names[i], "x%d", i);
        in_names[i] = names[i];
        if (spec->in[i].absent) {
            in_names[i] = "";
            continue;
        }
        pl_tid t;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, names[i], &t));
        CHECK_OK(pl_graph_set_type(n->g, t, dt, spec->in[i].ndim, spec->in[i].dims, NULL));
        CHECK_OK(pl_graph_add_input(n->g, t));
    }
    int n_in = spec->n_in;
    if (strcmp(spec->op, "Reshape") == 0) {
        pl_tid t;
        int64_t len = spec->n_reshape;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, "shape", &t));
        CHECK_OK(pl_graph_set_type(n->g, t, PL_DTYPE_I64, 1, &len, NULL));
        CHECK_OK(pl_graph_set_constant(n->g, t, spec->reshape,
                                       (size_t)len * sizeof(int64_t)));
        in_names[n_in++] = "shape";
    }
    const char *out_name = "y";
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "node", spec->op, "", in_names, (size_t)n_in, &out_name, 1,
                               &nid));
    for (int a = 0; a < spec->n_attrs; a++) {
        const tk_attr *at = &spec->attrs[a];
        if (at->kind == 'i')
            CHECK_OK(pl_graph_attr_int(n->g, nid, at->name, at->i));
        else if (at->kind == 'f')
            CHECK_OK(pl_graph_attr_float(n->g, nid, at->name, at->f));
        else
            CHECK_OK(pl_graph_attr_ints(n->g, nid, at->name, at->ints, (size_t)at->n));
    }
    pl_tid y = pl_graph_find_tensor(n->g, "y");
    CHECK_OK(pl_graph_add_output(n->g, y));
    CHECK_OK(pl_graph_validate(n->g));
    CHECK_OK(pl_opset_infer(tk_rt->opset, n->g));
    CHECK_OK(pl_graph_view_create(n->g, &nid, 1, &n->view));
    const pl_graph_node *gn = pl_graph_get_node(n->g, nid);
    for (size_t i = 0; i < gn->n_inputs; i++)
        tk_describe(n->g, gn->inputs[i], &n->in[i]);
    tk_describe(n->g, y, &n->out);
    n->desc = (pl_node_desc){
        .header = PL_ABI_HEADER_INIT(pl_node_desc),
        .name = "node",
        .op = spec->op,
        .domain = "",
        .opset_version = spec->opset ? spec->opset : 13,
        .graph = n->view,
        .node_index = 0,
        .n_inputs = gn->n_inputs,
        .inputs = n->in,
        .n_outputs = 1,
        .outputs = &n->out,
    };
}

static void tk_node_free(tk_node *n)
{
    pl_graph_view_destroy(n->view);
    pl_graph_destroy(n->g);
}

static pl_kernel *tk_kernel(const tk_node *n)
{
    pl_kernel *k = NULL;
    size_t ws = 99;
    pl_status *st = tk_mod->api.get_kernel(tk_mod->ctx, 0, &n->desc, &k, &ws);
    CHECK(st == NULL, "get_kernel(%s) failed: %s", n->spec->op, pl_status_message(st));
    CHECK(k != NULL && ws == 0, "get_kernel(%s): no kernel or workspace %zu", n->spec->op, ws);
    return k;
}

/* ---- buffers and runs ---------------------------------------------------- */

static uint64_t tk_seed = 0x9e3779b97f4a7c15ull;

/* Uniform in [-2, 2). */
static float tk_random(void)
{
    tk_seed = tk_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(tk_seed >> 40) / (double)(1ull << 24) * 4.0 - 2.0);
}

static size_t tk_count(const int64_t *dims, int r)
{
    size_t n = 1;
    for (int d = 0; d < r; d++)
        n *= (size_t)dims[d];
    return n;
}

/* A tensor's buffer, placed at a byte offset inside a larger allocation so
 * that the kernels must honour byte_offset. */
typedef struct tk_buf {
    char *base;
    float *data;
    size_t n;
    size_t offset;
} tk_buf;

static void tk_buf_make(tk_buf *b, size_t n, size_t offset)
{
    b->n = n;
    b->offset = offset;
    b->base = malloc(offset + n * sizeof(float) + 1);
    CHECK(b->base != NULL, "out of memory");
    b->data = (float *)(void *)(b->base + offset);
}

static pl_tensor tk_host_tensor(const pl_tensor *desc, tk_buf *b)
{
    pl_tensor t = *desc;
    t.data = b->base;
    t.byte_offset = b->offset;
    return t;
}

static pl_status *tk_run(pl_kernel *k, size_t n_in, const pl_tensor *ins, pl_tensor *out,
                         pl_output_request req)
{
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context), .device = 0, .worker = 0,
                         .stream = NULL};
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args),
                        .run = &rc,
                        .n_inputs = n_in,
                        .inputs = ins,
                        .n_outputs = 1,
                        .outputs = out,
                        .requests = &req};
    return tk_mod->api.kernel_run(tk_mod->ctx, k, &args);
}

/* ---- reference loops ----------------------------------------------------- */

static void tk_unravel(size_t i, const int64_t *dims, int r, int64_t *idx)
{
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = (int64_t)(i % (size_t)dims[d]);
        i /= (size_t)dims[d];
    }
}

/* The flat index in a tensor of DIMS (rank R) of the output index IDX (rank
 * R_OUT), NumPy-broadcast: dims aligned right, size-1 dims read at 0. */
static size_t tk_ravel_bcast(const int64_t *idx, int r_out, const int64_t *dims, int r)
{
    size_t off = 0;
    for (int d = 0; d < r; d++) {
        int64_t i = idx[r_out - r + d];
        off = off * (size_t)dims[d] + (size_t)(dims[d] == 1 ? 0 : i);
    }
    return off;
}

/* Inputs of a reference: data and shapes. */
typedef struct tk_ref_in {
    const float *x[TK_MAX_IN];
    const int64_t *dims[TK_MAX_IN];
    int ndim[TK_MAX_IN];
    int n;
} tk_ref_in;

static int64_t tk_attr_i(const tk_spec *s, const char *name, int64_t dflt)
{
    for (int a = 0; a < s->n_attrs; a++)
        if (strcmp(s->attrs[a].name, name) == 0)
            return s->attrs[a].i;
    return dflt;
}

static double tk_attr_f(const tk_spec *s, const char *name, double dflt)
{
    for (int a = 0; a < s->n_attrs; a++)
        if (strcmp(s->attrs[a].name, name) == 0)
            return s->attrs[a].f;
    return dflt;
}

static const tk_attr *tk_attr_find(const tk_spec *s, const char *name)
{
    for (int a = 0; a < s->n_attrs; a++)
        if (strcmp(s->attrs[a].name, name) == 0)
            return &s->attrs[a];
    return NULL;
}

static void tk_ref_binary(const tk_spec *s, const tk_ref_in *in, const int64_t *od, int r,
                          double *ref, double *scale)
{
    int64_t idx[TK_MAX_RANK];
    size_t n = tk_count(od, r);
    for (size_t i = 0; i < n; i++) {
        tk_unravel(i, od, r, idx);
        double a = in->x[0][tk_ravel_bcast(idx, r, in->dims[0], in->ndim[0])];
        double b = in->x[1][tk_ravel_bcast(idx, r, in->dims[1], in->ndim[1])];
        double v = s->op[0] == 'A' ? a + b : s->op[0] == 'S' ? a - b : s->op[0] == 'M' ? a * b
                                                                                       : a / b;
        ref[i] = v;
        scale[i] = fabs(v) + fabs(a) + fabs(b);
    }
}

static void tk_ref_unary(const tk_spec *s, const tk_ref_in *in, size_t n, double *ref,
                         double *scale)
{
    for (size_t i = 0; i < n; i++) {
        double x = in->x[0][i];
        double v = strcmp(s->op, "Relu") == 0      ? (x < 0 ? 0 : x)
                   : strcmp(s->op, "Sigmoid") == 0 ? 1.0 / (1.0 + exp(-x))
                   : strcmp(s->op, "Tanh") == 0    ? tanh(x)
                                                   : x; /* copies */
        ref[i] = v;
        scale[i] = fabs(v);
    }
}

/* numpy.matmul, element by element over the output padded back to
 * [batch..., M, N]. */
static void tk_ref_matmul(const tk_ref_in *in, double *ref, double *scale)
{
    int ra = in->ndim[0], rb = in->ndim[1];
    int64_t ad[TK_MAX_RANK], bd[TK_MAX_RANK];
    int ra2 = ra, rb2 = rb;
    memcpy(ad, in->dims[0], (size_t)ra * sizeof(int64_t));
    memcpy(bd, in->dims[1], (size_t)rb * sizeof(int64_t));
    if (ra == 1) {
        ad[1] = ad[0];
        ad[0] = 1;
        ra2 = 2;
    }
    if (rb == 1) {
        bd[1] = 1;
        rb2 = 2;
    }
    int64_t m = ad[ra2 - 2], k = ad[ra2 - 1], n = bd[rb2 - 1];
    int nb = (ra2 > rb2 ? ra2 : rb2) - 2;
    int64_t od[TK_MAX_RANK + 2], idx[TK_MAX_RANK + 2];
    for (int d = 0; d < nb; d++) {
        int da = d - (nb - (ra2 - 2)), db = d - (nb - (rb2 - 2));
        int64_t x = da >= 0 ? ad[da] : 1, y = db >= 0 ? bd[db] : 1;
        od[d] = x > y ? x : y;
    }
    od[nb] = m;
    od[nb + 1] = n;
    size_t total = tk_count(od, nb + 2);
    for (size_t i = 0; i < total; i++) {
        tk_unravel(i, od, nb + 2, idx);
        size_t a_mat = tk_ravel_bcast(idx, nb, ad, ra2 - 2);
        size_t b_mat = tk_ravel_bcast(idx, nb, bd, rb2 - 2);
        double sum = 0, mag = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            double p = (double)in->x[0][a_mat * (size_t)(m * k) + (size_t)(idx[nb] * k + kk)] *
                       (double)in->x[1][b_mat * (size_t)(k * n) + (size_t)(kk * n + idx[nb + 1])];
            sum += p;
            mag += fabs(p);
        }
        ref[i] = sum;
        scale[i] = mag;
    }
}

static void tk_ref_gemm(const tk_spec *s, const tk_ref_in *in, const int64_t *od, double *ref,
                        double *scale)
{
    int ta = (int)tk_attr_i(s, "transA", 0), tb = (int)tk_attr_i(s, "transB", 0);
    double alpha = tk_attr_f(s, "alpha", 1.0), beta = tk_attr_f(s, "beta", 1.0);
    int64_t m = od[0], n = od[1], k = ta ? in->dims[0][0] : in->dims[0][1];
    bool has_c = in->n > 2 && in->x[2] != NULL;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0, mag = 0;
            for (int64_t kk = 0; kk < k; kk++) {
                double a = in->x[0][ta ? kk * m + i : i * k + kk];
                double b = in->x[1][tb ? j * k + kk : kk * n + j];
                sum += a * b;
                mag += fabs(a * b);
            }
            double v = alpha * sum, c = 0;
            if (has_c) {
                int64_t idx[2] = {i, j};
                c = beta * in->x[2][tk_ravel_bcast(idx, 2, in->dims[2], in->ndim[2])];
            }
            ref[i * n + j] = v + c;
            scale[i * n + j] = fabs(alpha) * mag + fabs(c);
        }
}

static void tk_ref_softmax(const tk_spec *s, const tk_ref_in *in, double *ref, double *scale)
{
    int r = in->ndim[0];
    const int64_t *d = in->dims[0];
    int opset = s->opset ? s->opset : 13;
    int64_t axis = tk_attr_i(s, "axis", opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += r;
    size_t outer = 1, len = 1, inner = 1;
    for (int i = 0; i < r; i++) {
        if (i < axis)
            outer *= (size_t)d[i];
        else if (i == axis || opset < 13)
            len *= (size_t)d[i];
        else
            inner *= (size_t)d[i];
    }
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            const float *x = in->x[0] + o * len * inner + j;
            double max = -INFINITY, sum = 0;
            for (size_t l = 0; l < len; l++)
                max = fmax(max, x[l * inner]);
            for (size_t l = 0; l < len; l++)
                sum += exp(x[l * inner] - max);
            for (size_t l = 0; l < len; l++) {
                size_t at = o * len * inner + l * inner + j;
                ref[at] = exp(x[l * inner] - max) / sum;
                scale[at] = ref[at];
            }
        }
}

static void tk_ref_transpose(const tk_spec *s, const tk_ref_in *in, const int64_t *od, int r,
                             double *ref, double *scale)
{
    const tk_attr *p = tk_attr_find(s, "perm");
    int64_t perm[TK_MAX_RANK], idx[TK_MAX_RANK];
    for (int d = 0; d < r; d++)
        perm[d] = p ? p->ints[d] : r - 1 - d;
    size_t n = tk_count(od, r);
    for (size_t i = 0; i < n; i++) {
        tk_unravel(i, od, r, idx);
        size_t off = 0;
        for (int d = 0; d < r; d++) {
            /* input dim d is output dim q where perm[q] == d */
            int q = 0;
            while (perm[q] != d)
                q++;
            off = off * (size_t)in->dims[0][d] + (size_t)idx[q];
        }
        ref[i] = in->x[0][off];
        scale[i] = fabs(ref[i]);
    }
}

static void tk_ref_concat(const tk_spec *s, const tk_ref_in *in, const int64_t *od, int r,
                          double *ref, double *scale)
{
    int64_t axis = tk_attr_i(s, "axis", 0), idx[TK_MAX_RANK];
    if (axis < 0)
        axis += r;
    size_t n = tk_count(od, r);
    for (size_t i = 0; i < n; i++) {
        tk_unravel(i, od, r, idx);
        int src = 0;
        while (idx[axis] >= in->dims[src][axis]) {
            idx[axis] -= in->dims[src][axis];
            src++;
        }
        size_t off = 0;
        for (int d = 0; d < r; d++)
            off = off * (size_t)in->dims[src][d] + (size_t)idx[d];
        ref[i] = in->x[src][off];
        scale[i] = fabs(ref[i]);
    }
}

/* The reference result of the node N on IN, and a magnitude per element
 * against which the error is measured. */
static void tk_reference(const tk_node *n, const tk_ref_in *in, double *ref, double *scale)
{
    const tk_spec *s = n->spec;
    const int64_t *od = n->out.shape;
    int r = n->out.ndim;
    const char *op = s->op;
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"))
        tk_ref_binary(s, in, od, r, ref, scale);
    else if (!strcmp(op, "MatMul"))
        tk_ref_matmul(in, ref, scale);
    else if (!strcmp(op, "Gemm"))
        tk_ref_gemm(s, in, od, ref, scale);
    else if (!strcmp(op, "Softmax"))
        tk_ref_softmax(s, in, ref, scale);
    else if (!strcmp(op, "Transpose"))
        tk_ref_transpose(s, in, od, r, ref, scale);
    else if (!strcmp(op, "Concat"))
        tk_ref_concat(s, in, od, r, ref, scale);
    else
        tk_ref_unary(s, in, tk_count(od, r), ref, scale);
}

/* ---- checking one node --------------------------------------------------- */

/* Fills an input with random values; Div's divisor stays away from 0. */
static void tk_fill(const tk_spec *s, int i, float *x, size_t n)
{
    for (size_t j = 0; j < n; j++) {
        float v = tk_random();
        if (i == 1 && strcmp(s->op, "Div") == 0)
            v = v < 0 ? v - 0.5f : v + 0.5f;
        /* Large magnitudes: the softmax must shift by the max. */
        if (strcmp(s->op, "Softmax") == 0)
            v *= 40.0f;
        x[j] = v;
    }
}

/* Runs SPEC's kernel with request REQ and compares with the reference.
 * ADD_TO starts from random output values; INPLACE hands input 0's buffer
 * as the output; ALIAS (with WRITE) does too, for the copies. */
static void tk_check_req(const tk_spec *spec, pl_output_request req, bool alias)
{
    tk_node n;
    tk_node_build(spec, &n);
    pl_kernel *k = tk_kernel(&n);
    size_t n_in = n.desc.n_inputs;
    tk_buf bufs[TK_MAX_IN + 1];
    pl_tensor ins[TK_MAX_IN + 1];
    tk_ref_in rin = {.n = (int)n_in};
    for (size_t i = 0; i < n_in; i++) {
        memset(&bufs[i], 0, sizeof bufs[i]);
        if (n.in[i].ndim < 0) {
            ins[i] = n.in[i];
            rin.x[i] = NULL;
            continue;
        }
        size_t cnt = tk_count(n.in[i].shape, n.in[i].ndim);
        if (PL_DTYPE_EQ(n.in[i].dtype, PL_DTYPE_I64)) {
            /* Reshape's shape: the kernel must not need it, but pass it. */
            tk_buf_make(&bufs[i], cnt * 2, 8);
            memcpy(bufs[i].data, spec->reshape, cnt * sizeof(int64_t));
        } else {
            tk_buf_make(&bufs[i], cnt, 4 * (i + 1));
            tk_fill(spec, (int)i, bufs[i].data, cnt);
        }
        ins[i] = tk_host_tensor(&n.in[i], &bufs[i]);
        rin.x[i] = bufs[i].data;
        rin.dims[i] = n.in[i].shape;
        rin.ndim[i] = n.in[i].ndim;
    }
    size_t cnt = tk_count(n.out.shape, n.out.ndim);
    double *ref = calloc(cnt + 1, sizeof *ref), *scale = calloc(cnt + 1, sizeof *scale);
    float *before = malloc((cnt + 1) * sizeof *before);
    CHECK(ref && scale && before, "out of memory");
    tk_reference(&n, &rin, ref, scale);

    tk_buf out;
    bool in_place = req == PL_REQ_INPLACE || alias;
    if (in_place) {
        out = bufs[0];
    } else {
        tk_buf_make(&out, cnt, 8);
        for (size_t j = 0; j < cnt; j++)
            out.data[j] = req == PL_REQ_ADD_TO ? tk_random() : NAN;
    }
    memcpy(before, out.data, cnt * sizeof(float));
    pl_tensor o = tk_host_tensor(&n.out, &out);
    CHECK_OK(tk_run(k, n_in, ins, &o, req));

    bool gemm = !strcmp(spec->op, "MatMul") || !strcmp(spec->op, "Gemm");
    for (size_t j = 0; j < cnt; j++) {
        double want = ref[j] + (req == PL_REQ_ADD_TO ? before[j] : 0.0);
        double mag = scale[j] + (req == PL_REQ_ADD_TO ? fabs(before[j]) : 0.0);
        double tol = (gemm ? 1e-5 : 2e-6) * mag + 1e-6;
        double got = out.data[j];
        CHECK(fabs(got - want) <= tol,
              "%s (request %d%s): element %zu of %zu is %.9g, expected %.9g (tolerance %.3g)",
              spec->op, (int)req, alias ? ", aliased" : "", j, cnt, got, want, tol);
    }
    tk_mod->api.kernel_release(tk_mod->ctx, k);
    for (size_t i = 0; i < n_in; i++)
        free(bufs[i].base);
    if (!in_place)
        free(out.base);
    free(ref);
    free(scale);
    free(before);
    tk_node_free(&n);
}

static void tk_check(const tk_spec *spec)
{
    tk_check_req(spec, PL_REQ_WRITE, false);
}

#define TK_COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define S(...) {__VA_ARGS__}
/* Shapes: T(ndim, dims...) */
#define T(r, ...) {.ndim = r, .dims = {__VA_ARGS__}}
#define T0 {.ndim = 0}
#define ABSENT {.ndim = -1, .absent = 1}
#define AI(nm, v) {.name = nm, .kind = 'i', .i = v}
#define AF(nm, v) {.name = nm, .kind = 'f', .f = v}
#define AIS(nm, cnt, ...) {.name = nm, .kind = 'I', .n = cnt, .ints = {__VA_ARGS__}}

/* ---- the node sets ------------------------------------------------------- */

/* Broadcasting corners shared by the four binary ops. */
static const tk_shape tk_binary_shapes[][2] = {
    {T(2, 3, 4), T(2, 3, 4)},          /* same shape */
    {T(2, 3, 4), T0},                  /* scalar right */
    {T0, T(2, 3, 4)},                  /* scalar left */
    {T0, T0},                          /* scalar, scalar */
    {T(3, 2, 3, 5), T(1, 5)},          /* row, rank mismatch */
    {T(1, 5), T(3, 2, 3, 5)},
    {T(3, 2, 3, 5), T(3, 2, 1, 5)},    /* size-1 middle dim */
    {T(2, 4, 1), T(2, 1, 6)},          /* both broadcast */
    {T(3, 1, 1, 7), T(2, 1, 7)},       /* rank mismatch and 1s */
    {T(4, 2, 1, 3, 1), T(4, 1, 4, 1, 5)},
    {T(2, 3, 1), T(1, 1, 1)},          /* all-ones rank-3 operand */
    {T(1, 1), T(1, 1)},                /* everything size 1 */
    {T(2, 0, 3), T(1, 3)},             /* empty */
    {T(2, 300, 257), T(1, 257)},       /* big enough for parallel chunks */
    {T(2, 200, 1), T(2, 1, 331)},
    {T(1, 100003), T(1, 100003)},
};

static void tk_check_binary(const char *op)
{
    for (size_t i = 0; i < TK_COUNT(tk_binary_shapes); i++) {
        tk_spec s = {.op = op, .n_in = 2};
        s.in[0] = tk_binary_shapes[i][0];
        s.in[1] = tk_binary_shapes[i][1];
        tk_check(&s);
    }
}

static const tk_shape tk_unary_shapes[] = {
    T0, T(1, 1), T(1, 7), T(3, 2, 3, 4), T(2, 0, 5), T(2, 517, 311),
};

static void tk_check_unary(const char *op)
{
    for (size_t i = 0; i < TK_COUNT(tk_unary_shapes); i++) {
        tk_spec s = {.op = op, .n_in = 1};
        s.in[0] = tk_unary_shapes[i];
        tk_check(&s);
    }
}

static const tk_spec tk_matmul_specs[] = {
    {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 4), T(2, 4, 5)}},
    {.op = "MatMul", .n_in = 2, .in = {T(2, 1, 1), T(2, 1, 1)}},
    {.op = "MatMul", .n_in = 2, .in = {T(1, 4), T(2, 4, 5)}},          /* 1-D A */
    {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 4), T(1, 4)}},          /* 1-D B */
    {.op = "MatMul", .n_in = 2, .in = {T(1, 6), T(1, 6)}},             /* dot */
    {.op = "MatMul", .n_in = 2, .in = {T(1, 4), T(3, 2, 4, 5)}},       /* 1-D A, batched B */
    {.op = "MatMul", .n_in = 2, .in = {T(4, 2, 3, 5, 4), T(1, 4)}},    /* batched A, 1-D B */
    {.op = "MatMul", .n_in = 2, .in = {T(3, 2, 3, 4), T(3, 2, 4, 5)}}, /* batched */
    {.op = "MatMul", .n_in = 2, .in = {T(3, 2, 3, 4), T(2, 4, 5)}},    /* shared B: folded */
    {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 4), T(3, 2, 4, 5)}},    /* shared A */
    {.op = "MatMul", .n_in = 2, .in = {T(4, 2, 1, 3, 4), T(3, 3, 4, 5)}}, /* batch broadcast */
    {.op = "MatMul", .n_in = 2, .in = {T(3, 1, 3, 4), T(3, 2, 4, 5)}},
    {.op = "MatMul", .n_in = 2, .in = {T(3, 2, 3, 4), T(3, 1, 4, 5)}}, /* B broadcast once */
    {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 0), T(2, 0, 5)}},       /* K = 0 */
    {.op = "MatMul", .n_in = 2, .in = {T(2, 0, 4), T(2, 4, 5)}},       /* M = 0 */
    {.op = "MatMul", .n_in = 2, .in = {T(2, 130, 70), T(2, 70, 90)}},  /* row blocks */
    {.op = "MatMul", .n_in = 2, .in = {T(3, 3, 40, 33), T(2, 33, 50)}},
    {.op = "MatMul", .n_in = 2, .in = {T(3, 2, 100, 64), T(3, 2, 64, 48)}},
    {.op = "MatMul", .n_in = 2, .in = {T(2, 1, 300), T(2, 300, 1)}},
};

static const tk_spec tk_gemm_specs[] = {
    {.op = "Gemm", .n_in = 2, .in = {T(2, 3, 4), T(2, 4, 5)}},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(2, 3, 5)}},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(1, 5)}},     /* bias row */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(2, 3, 1)}},  /* column */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(2, 1, 5)}},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T0}},          /* scalar */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(1, 1)}},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), ABSENT}},      /* C left out */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 4, 3), T(2, 4, 5), T(1, 5)},
     .attrs = {AI("transA", 1)}, .n_attrs = 1},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 5, 4), T(1, 5)},
     .attrs = {AI("transB", 1)}, .n_attrs = 1},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 4, 3), T(2, 5, 4), T(2, 3, 5)},
     .attrs = {AI("transA", 1), AI("transB", 1), AF("alpha", 0.5), AF("beta", -2.0)},
     .n_attrs = 4},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(2, 3, 5)},
     .attrs = {AF("beta", 0.0)}, .n_attrs = 1},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 0), T(2, 0, 5), T(1, 5)}},     /* K = 0 */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 200, 96), T(2, 80, 96), T(1, 80)},
     .attrs = {AI("transB", 1), AF("alpha", 1.5)}, .n_attrs = 2},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 96, 200), T(2, 96, 80), T(2, 200, 1)},
     .attrs = {AI("transA", 1), AF("beta", 0.25)}, .n_attrs = 2},
    /* one row against 768 KiB of B: below the MACs that split a product,
     * split by columns for its bytes (a batch-1 dense layer) */
    {.op = "Gemm", .n_in = 3, .in = {T(2, 1, 1536), T(2, 131, 1536), T(1, 131)},
     .attrs = {AI("transB", 1)}, .n_attrs = 1},
    {.op = "Gemm", .n_in = 3, .in = {T(2, 1, 1536), T(2, 1536, 131), T(2, 1, 131)}},
};

static const tk_spec tk_softmax_specs[] = {
    {.op = "Softmax", .n_in = 1, .in = {T(2, 3, 5)}},
    {.op = "Softmax", .n_in = 1, .in = {T(1, 1)}},
    {.op = "Softmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "Softmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
    {.op = "Softmax", .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", -2)}, .n_attrs = 1},
    {.op = "Softmax", .n_in = 1, .in = {T(3, 3, 7, 150)}, .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "Softmax", .n_in = 1, .in = {T(3, 4, 1, 6)}, .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "Softmax", .n_in = 1, .in = {T(2, 400, 300)}},
    {.op = "Softmax", .n_in = 1, .in = {T(2, 0, 3)}},
    /* opset 11: the dims from axis on are one row */
    {.op = "Softmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)}},
    {.op = "Softmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", 2)},
     .n_attrs = 1},
    {.op = "Softmax", .opset = 11, .n_in = 1, .in = {T(3, 2, 3, 5)}, .attrs = {AI("axis", -3)},
     .n_attrs = 1},
};

static const tk_spec tk_reshape_specs[] = {
    {.op = "Reshape", .n_in = 1, .in = {T(2, 3, 4)}, .reshape = {4, 3}, .n_reshape = 2},
    {.op = "Reshape", .n_in = 1, .in = {T(3, 2, 3, 4)}, .reshape = {-1}, .n_reshape = 1},
    {.op = "Reshape", .n_in = 1, .in = {T(2, 30, 1000)}, .reshape = {0, -1, 10},
     .n_reshape = 3},
    {.op = "Reshape", .n_in = 1, .in = {T(1, 1)}, .reshape = {0}, .n_reshape = 0},
};

static const tk_spec tk_flatten_specs[] = {
    {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}},
    {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
    {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}, .attrs = {AI("axis", -1)}, .n_attrs = 1},
    {.op = "Flatten", .n_in = 1, .in = {T(2, 300, 700)}},
};

static const tk_spec tk_identity_specs[] = {
    {.op = "Identity", .n_in = 1, .in = {T0}},
    {.op = "Identity", .n_in = 1, .in = {T(3, 2, 3, 4)}},
    {.op = "Identity", .n_in = 1, .in = {T(2, 0, 4)}},
    {.op = "Identity", .n_in = 1, .in = {T(2, 300, 700)}},
};

static const tk_spec tk_transpose_specs[] = {
    {.op = "Transpose", .n_in = 1, .in = {T(2, 3, 4)}},                    /* default */
    {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 3, 4, 5)}},              /* reverse */
    {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 3, 4, 5)}, .attrs = {AIS("perm", 4, 0, 2, 1, 3)},
     .n_attrs = 1},
    {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 3, 4, 5)}, .attrs = {AIS("perm", 4, 0, 1, 2, 3)},
     .n_attrs = 1},                                                        /* identity */
    {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 3, 4, 5)}, .attrs = {AIS("perm", 4, 2, 3, 0, 1)},
     .n_attrs = 1},                                                        /* merged pairs */
    {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 1, 4, 1)}, .attrs = {AIS("perm", 4, 3, 2, 1, 0)},
     .n_attrs = 1},
    {.op = "Transpose", .n_in = 1, .in = {T(3, 1, 5, 1)}, .attrs = {AIS("perm", 3, 2, 0, 1)},
     .n_attrs = 1},
    {.op = "Transpose", .n_in = 1, .in = {T0}},
    {.op = "Transpose", .n_in = 1, .in = {T(1, 9)}},
    {.op = "Transpose", .n_in = 1, .in = {T(3, 2, 0, 3)}},
    {.op = "Transpose", .n_in = 1, .in = {T(2, 513, 397)}},
    {.op = "Transpose", .n_in = 1, .in = {T(4, 8, 128, 12, 33)},
     .attrs = {AIS("perm", 4, 0, 2, 1, 3)}, .n_attrs = 1},
};

static const tk_spec tk_concat_specs[] = {
    {.op = "Concat", .n_in = 2, .in = {T(2, 2, 3), T(2, 4, 3)}, .attrs = {AI("axis", 0)},
     .n_attrs = 1},
    {.op = "Concat", .n_in = 3, .in = {T(2, 2, 3), T(2, 2, 1), T(2, 2, 5)},
     .attrs = {AI("axis", 1)}, .n_attrs = 1},
    {.op = "Concat", .n_in = 3, .in = {T(3, 2, 3, 4), T(3, 2, 1, 4), T(3, 2, 2, 4)},
     .attrs = {AI("axis", -2)}, .n_attrs = 1},
    {.op = "Concat", .n_in = 2, .in = {T(3, 2, 3, 4), T(3, 2, 3, 1)}, .attrs = {AI("axis", -1)},
     .n_attrs = 1},
    {.op = "Concat", .n_in = 3, .in = {T(2, 2, 3), T(2, 2, 0), T(2, 2, 2)},
     .attrs = {AI("axis", 1)}, .n_attrs = 1},                             /* empty input */
    {.op = "Concat", .n_in = 1, .in = {T(1, 7)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
    {.op = "Concat", .n_in = 4, .in = {T(2, 300, 64), T(2, 300, 64), T(2, 300, 1), T(2, 300, 200)},
     .attrs = {AI("axis", 1)}, .n_attrs = 1},
};

static void tk_check_all(const tk_spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tk_check(&specs[i]);
}

/* ---- cases --------------------------------------------------------------- */

static void case_Add(void) { tk_check_binary("Add"); }
static void case_Sub(void) { tk_check_binary("Sub"); }
static void case_Mul(void) { tk_check_binary("Mul"); }
static void case_Div(void) { tk_check_binary("Div"); }
static void case_Relu(void) { tk_check_unary("Relu"); }
static void case_Sigmoid(void) { tk_check_unary("Sigmoid"); }
static void case_Tanh(void) { tk_check_unary("Tanh"); }
static void case_MatMul(void) { tk_check_all(tk_matmul_specs, TK_COUNT(tk_matmul_specs)); }
static void case_Gemm(void) { tk_check_all(tk_gemm_specs, TK_COUNT(tk_gemm_specs)); }
static void case_Softmax(void) { tk_check_all(tk_softmax_specs, TK_COUNT(tk_softmax_specs)); }
static void case_Reshape(void) { tk_check_all(tk_reshape_specs, TK_COUNT(tk_reshape_specs)); }
static void case_Flatten(void) { tk_check_all(tk_flatten_specs, TK_COUNT(tk_flatten_specs)); }
static void case_Identity(void) { tk_check_all(tk_identity_specs, TK_COUNT(tk_identity_specs)); }
static void case_Transpose(void)
{
    tk_check_all(tk_transpose_specs, TK_COUNT(tk_transpose_specs));
}
static void case_Concat(void) { tk_check_all(tk_concat_specs, TK_COUNT(tk_concat_specs)); }

/* Every op with PL_REQ_ADD_TO: the output starts random and must end as
 * that plus the result. */
static void case_add_to(void)
{
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div"};
    static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Identity", "Flatten"};
    for (size_t o = 0; o < TK_COUNT(binary); o++)
        for (size_t i = 0; i < TK_COUNT(tk_binary_shapes); i++) {
            tk_spec s = {.op = binary[o], .n_in = 2};
            s.in[0] = tk_binary_shapes[i][0];
            s.in[1] = tk_binary_shapes[i][1];
            tk_check_req(&s, PL_REQ_ADD_TO, false);
        }
    for (size_t o = 0; o < TK_COUNT(unary); o++)
        for (size_t i = 0; i < TK_COUNT(tk_unary_shapes); i++) {
            tk_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tk_unary_shapes[i];
            if (strcmp(s.op, "Flatten") == 0 && s.in[0].ndim == 0)
                continue; /* Flatten needs rank >= 1 */
            tk_check_req(&s, PL_REQ_ADD_TO, false);
        }
    const struct {
        const tk_spec *specs;
        size_t n;
    } sets[] = {
        {tk_matmul_specs, TK_COUNT(tk_matmul_specs)},
        {tk_gemm_specs, TK_COUNT(tk_gemm_specs)},
        {tk_softmax_specs, TK_COUNT(tk_softmax_specs)},
        {tk_reshape_specs, TK_COUNT(tk_reshape_specs)},
        {tk_transpose_specs, TK_COUNT(tk_transpose_specs)},
        {tk_concat_specs, TK_COUNT(tk_concat_specs)},
    };
    for (size_t s = 0; s < TK_COUNT(sets); s++)
        for (size_t i = 0; i < sets[s].n; i++)
            tk_check_req(&sets[s].specs[i], PL_REQ_ADD_TO, false);
}

/* PL_REQ_INPLACE on the ops whose schema allows it: the output is input
 * 0's buffer. The copies also accept a plain write whose output aliases
 * the input, and must then leave the bytes alone. */
static void case_inplace(void)
{
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div"};
    static const char *const unary[] = {"Relu", "Sigmoid", "Tanh", "Identity"};
    for (size_t o = 0; o < TK_COUNT(binary); o++)
        for (size_t i = 0; i < TK_COUNT(tk_binary_shapes); i++) {
            tk_spec s = {.op = binary[o], .n_in = 2};
            s.in[0] = tk_binary_shapes[i][0];
            s.in[1] = tk_binary_shapes[i][1];
            size_t na = tk_count(s.in[0].dims, s.in[0].ndim);
            tk_node n;
            tk_node_build(&s, &n);
            size_t nout = tk_count(n.out.shape, n.out.ndim);
            tk_node_free(&n);
            if (na != nout)
                continue; /* input 0 is broadcast: not the output's size */
            tk_check_req(&s, PL_REQ_INPLACE, false);
        }
    for (size_t o = 0; o < TK_COUNT(unary); o++)
        for (size_t i = 0; i < TK_COUNT(tk_unary_shapes); i++) {
            tk_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tk_unary_shapes[i];
            tk_check_req(&s, PL_REQ_INPLACE, false);
        }
    for (size_t i = 0; i < TK_COUNT(tk_softmax_specs); i++)
        tk_check_req(&tk_softmax_specs[i], PL_REQ_INPLACE, false);
    for (size_t i = 0; i < TK_COUNT(tk_reshape_specs); i++) {
        tk_check_req(&tk_reshape_specs[i], PL_REQ_INPLACE, false);
        tk_check_req(&tk_reshape_specs[i], PL_REQ_WRITE, true);
    }
    for (size_t i = 0; i < TK_COUNT(tk_flatten_specs); i++) {
        tk_check_req(&tk_flatten_specs[i], PL_REQ_INPLACE, false);
        tk_check_req(&tk_flatten_specs[i], PL_REQ_WRITE, true);
    }
    for (size_t i = 0; i < TK_COUNT(tk_identity_specs); i++)
        tk_check_req(&tk_identity_specs[i], PL_REQ_WRITE, true);
}

/* get_kernel on a node; returns the refusal, failing if there was none. */
static pl_status *tk_refusal(const pl_node_desc *desc)
{
    pl_kernel *k = (pl_kernel *)desc; /* must be cleared */
    size_t ws = 7;
    pl_status *st = tk_mod->api.get_kernel(tk_mod->ctx, 0, desc, &k, &ws);
    CHECK(st != NULL, "get_kernel(%s) accepted the node", desc->op);
    CHECK(k == NULL && ws == 0, "a refusal left outputs set");
    return st;
}

static void tk_expect_refusal(const tk_spec *spec, pl_code code, const char *message)
{
    tk_node n;
    tk_node_build(spec, &n);
    pl_status *st = tk_refusal(&n.desc);
    CHECK(pl_status_code(st) == code, "%s: code %s, expected %s (%s)", spec->op,
          pl_code_name(pl_status_code(st)), pl_code_name(code), pl_status_message(st));
    CHECK(strstr(pl_status_message(st), message) != NULL, "refusal \"%s\" lacks \"%s\"",
          pl_status_message(st), message);
    pl_status_free(st);
    tk_node_free(&n);
}

static void case_refusals(void)
{
    /* (Every dtype ONNX gives these ops is taken now: tests/cpu_math checks
     * f64, f16, bf16 and the integers.) */
    /* (Concat takes every dtype since the shape family took it over.) */
    /* shapes the core could not infer */
    tk_spec add_unknown = {.op = "Add", .n_in = 2, .in = {T(2, -1, 4), T(1, 4)}};
    tk_expect_refusal(&add_unknown, PL_CODE_UNSUPPORTED, "cpu: Add: output shape not fully known");
    tk_spec mm_unknown = {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 4), T(2, 4, -1)}};
    tk_expect_refusal(&mm_unknown, PL_CODE_UNSUPPORTED,
                      "cpu: MatMul: output shape not fully known");
    tk_spec relu_rank = {.op = "Relu", .n_in = 1, .in = {{.ndim = -1}}};
    tk_expect_refusal(&relu_rank, PL_CODE_UNSUPPORTED, "cpu: Relu: output shape not fully known");
    /* an op with no kernel: the refusal comes before the node is read */
    {
        pl_node_desc d = {.header = PL_ABI_HEADER_INIT(pl_node_desc), .name = "e",
                          .op = "Loop", .domain = ""};
        pl_status *st = tk_refusal(&d);
        CHECK(strstr(pl_status_message(st), "cpu: no kernel for op 'Loop' yet") != NULL,
              "refusal \"%s\"", pl_status_message(st));
        pl_status_free(st);
    }

    /* another domain, and a description without a view */
    pl_tensor x = {.ndim = 1, .dtype = PL_DTYPE_F32, .shape = (int64_t[]){4},
                   .struct_size = sizeof(pl_tensor)};
    pl_node_desc d = {.header = PL_ABI_HEADER_INIT(pl_node_desc), .name = "n", .op = "Relu",
                      .domain = "com.vendor", .opset_version = 1, .n_inputs = 1, .inputs = &x,
                      .n_outputs = 1, .outputs = &x};
    pl_status *st = tk_refusal(&d);
    CHECK(pl_status_code(st) == PL_CODE_UNSUPPORTED, "foreign domain: wrong code");
    CHECK(strstr(pl_status_message(st), "cpu: ") == pl_status_message(st) &&
              strstr(pl_status_message(st), "com.vendor") != NULL,
          "foreign domain refused with \"%s\"", pl_status_message(st));
    pl_status_free(st);
    d.domain = "";
    d.op = "Transpose"; /* reads perm: needs the view */
    st = tk_refusal(&d);
    CHECK(strstr(pl_status_message(st), "cpu: Transpose: ") == pl_status_message(st),
          "viewless Transpose refused with \"%s\"", pl_status_message(st));
    pl_status_free(st);
    d.op = "Relu"; /* reads no attribute: fine without a view */
    pl_kernel *k = NULL;
    size_t ws = 0;
    CHECK_OK(tk_mod->api.get_kernel(tk_mod->ctx, 0, &d, &k, &ws));
    /* Runs that break the contract are errors, not crashes. */
    float buf[4] = {1, -2, 3, -4}, out[4];
    pl_tensor in_t = x, out_t = x;
    in_t.data = buf;
    out_t.data = out;
    CHECK_OK(tk_run(k, 1, &in_t, &out_t, PL_REQ_WRITE));
    CHECK(out[0] == 1 && out[1] == 0 && out[2] == 3 && out[3] == 0, "viewless Relu wrong");
    pl_tensor wrong = out_t;
    wrong.shape = (int64_t[]){5};
    st = tk_run(k, 1, &in_t, &wrong, PL_REQ_WRITE);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "wrong size accepted");
    pl_status_free(st);
    in_t.data = NULL;
    st = tk_run(k, 1, &in_t, &out_t, PL_REQ_WRITE);
    CHECK(st != NULL && strstr(pl_status_message(st), "cpu: Relu: ") != NULL,
          "missing input data accepted");
    pl_status_free(st);
    /* A skipped output touches nothing, even without data. */
    CHECK_OK(tk_run(k, 1, &in_t, &out_t, PL_REQ_NULL));
    tk_mod->api.kernel_release(tk_mod->ctx, k);

    /* In place is refused where no input may be overwritten. */
    tk_node n;
    tk_node_build(&tk_matmul_specs[0], &n);
    k = tk_kernel(&n);
    float a[12] = {0}, b[20] = {0}, c[15];
    pl_tensor ins[2] = {n.in[0], n.in[1]}, o = n.out;
    ins[0].data = a;
    ins[1].data = b;
    o.data = c;
    st = tk_run(k, 2, ins, &o, PL_REQ_INPLACE);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT,
          "in-place MatMul accepted");
    pl_status_free(st);
    tk_mod->api.kernel_release(tk_mod->ctx, k);
    tk_node_free(&n);
}

/* ---- concurrency --------------------------------------------------------- */

typedef struct tk_thread {
    pl_kernel *kernel;
    const tk_node *node;
    int seed;
    int failures;
} tk_thread;

static void *tk_thread_main(void *arg)
{
    tk_thread *t = arg;
    const tk_node *n = t->node;
    int64_t m = n->in[0].shape[1], k = n->in[0].shape[2], nn = n->in[1].shape[1];
    int64_t batch = n->in[0].shape[0];
    size_t na = (size_t)(batch * m * k), nb = (size_t)(k * nn), no = (size_t)(batch * m * nn);
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *o = malloc(no * sizeof *o);
    if (!a || !b || !o) {
        t->failures++;
        return NULL;
    }
    for (int round = 0; round < 25; round++) {
        /* Exact small integers: every thread's result is exact. */
        for (size_t i = 0; i < na; i++)
            a[i] = (float)((int)(i * 7 + (size_t)t->seed * 13 + (size_t)round) % 5 - 2);
        for (size_t i = 0; i < nb; i++)
            b[i] = (float)((int)(i * 3 + (size_t)t->seed + (size_t)round * 5) % 7 - 3);
        pl_tensor ins[2] = {n->in[0], n->in[1]}, out = n->out;
        ins[0].data = a;
        ins[1].data = b;
        out.data = o;
        pl_status *st = tk_run(t->kernel, 2, ins, &out, PL_REQ_WRITE);
        if (st != NULL) {
            t->failures++;
            pl_status_free(st);
            continue;
        }
        for (int64_t bi = 0; bi < batch; bi++)
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < nn; j++) {
                    float want = 0;
                    for (int64_t kk = 0; kk < k; kk++)
                        want += a[(bi * m + i) * k + kk] * b[kk * nn + j];
                    if (o[(bi * m + i) * nn + j] != want)
                        t->failures++;
                }
    }
    free(a);
    free(b);
    free(o);
    return NULL;
}

/* Four threads run one MatMul kernel at once on their own buffers. */
static void case_concurrent(void)
{
    tk_spec s = {.op = "MatMul", .n_in = 2, .in = {T(3, 2, 96, 64), T(2, 64, 72)}};
    tk_node n;
    tk_node_build(&s, &n);
    pl_kernel *k = tk_kernel(&n);
    pthread_t th[4];
    tk_thread t[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (tk_thread){.kernel = k, .node = &n, .seed = i + 1};
        CHECK(pthread_create(&th[i], NULL, tk_thread_main, &t[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        CHECK(t[i].failures == 0, "thread %d: %d wrong results", i, t[i].failures);
    tk_mod->api.kernel_release(tk_mod->ctx, k);
    tk_node_free(&n);
}

static const struct {
    const char *name;
    void (*run)(void);
} tk_cases[] = {
    {"Add", case_Add},           {"Sub", case_Sub},
    {"Mul", case_Mul},           {"Div", case_Div},
    {"Relu", case_Relu},         {"Sigmoid", case_Sigmoid},
    {"Tanh", case_Tanh},         {"MatMul", case_MatMul},
    {"Gemm", case_Gemm},         {"Softmax", case_Softmax},
    {"Reshape", case_Reshape},   {"Flatten", case_Flatten},
    {"Identity", case_Identity}, {"Transpose", case_Transpose},
    {"Concat", case_Concat},     {"add_to", case_add_to},
    {"inplace", case_inplace},   {"refusals", case_refusals},
    {"concurrent", case_concurrent},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < TK_COUNT(tk_cases); i++) {
        if (strcmp(argv[1], tk_cases[i].name) != 0)
            continue;
        tk_setup(argv[2]);
        tk_cases[i].run();
        tk_teardown();
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
