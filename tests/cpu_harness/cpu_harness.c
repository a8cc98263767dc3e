/* cpu_harness.c — the one-node kernel harness of the cpu module's test
 * programs: it drives the staged cpu module the way the core does, through
 * the core's object library, so that each program holds only its reference
 * loops and cases. See cpu_harness.h. */
#define _GNU_SOURCE
#include "cpu_harness.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

pl_runtime *ch_rt;
pl_module *ch_mod;

void ch_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

/* ---- the module ---------------------------------------------------------- */

void ch_setup(const char *stage_dir)
{
    char dir[] = "/tmp/plinth-cpu-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    char ini[4096];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    FILE *f = fopen(ini, "w");
    CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f, "[runtime]\nmodules = %s/libplinth_cpu.so\nthreads = 4\n", stage_dir);
    fclose(f);
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    CHECK_OK(pl_runtime_create(&o, &ch_rt));
    unlink(ini);
    rmdir(dir);
    long idx = pl_runtime_find_module(ch_rt, "cpu");
    CHECK(idx >= 0, "no cpu module in %s", stage_dir);
    ch_mod = ch_rt->modules[idx];
    CHECK(ch_mod->status == PL_MODULE_LOADED && ch_mod->ctx != NULL,
          "cpu module not loaded: %s", ch_mod->reason);
}

void ch_teardown(void)
{
    pl_runtime_destroy(ch_rt);
    ch_rt = NULL;
    ch_mod = NULL;
}

/* ---- one-node graphs ----------------------------------------------------- */

pl_dtype ch_dt(const ch_spec *s, const ch_in *in)
{
    if (in->dtype.lanes)
        return in->dtype;
    return s->dtype.lanes ? s->dtype : PL_DTYPE_F32;
}

void ch_describe(const pl_graph *g, pl_tid t, pl_tensor *out)
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

void ch_attr_set(pl_graph *g, pl_nid nid, const ch_attr *at)
{
    switch (at->kind) {
    case 'i':
        CHECK_OK(pl_graph_attr_int(g, nid, at->name, at->i));
        break;
    case 'f':
        CHECK_OK(pl_graph_attr_float(g, nid, at->name, at->f));
        break;
    case 'I':
        CHECK_OK(pl_graph_attr_ints(g, nid, at->name, at->ints, (size_t)at->n));
        break;
    case 's':
        CHECK_OK(pl_graph_attr_string(g, nid, at->name, at->s, strlen(at->s)));
        break;
    default: {
        int64_t one = 1;
        CHECK_OK(pl_graph_attr_tensor(g, nid, at->name, at->tdtype, 1, &one, at->tbytes,
                                      pl_dtype_size(at->tdtype)));
    }
    }
}

/* Adds input I of SPEC to G under NAME: a constant or a graph input. */
static void ch_input_add(pl_graph *g, const ch_spec *spec, const ch_in *in, const char *name)
{
    pl_tid t;
    pl_dtype dt = ch_dt(spec, in);
    CHECK_OK(pl_graph_tensor_get_or_add(g, name, &t));
    CHECK_OK(pl_graph_set_type(g, t, dt, in->ndim, in->dims, NULL));
    size_t cnt = ch_count(in->dims, in->ndim);
    if (in->constant) {
        char bytes[CH_MAX_RANK * 8];
        for (size_t e = 0; e < cnt; e++)
            ch_store(bytes, dt, e, in->vals[e]);
        CHECK_OK(pl_graph_set_constant(g, t, bytes, cnt * pl_dtype_size(dt)));
    } else if (in->value != NULL && !in->runtime) {
        CHECK_OK(pl_graph_set_constant(g, t, in->value, cnt * pl_dtype_size(dt)));
    } else {
        CHECK_OK(pl_graph_add_input(g, t));
    }
}

void ch_node_build(const ch_spec *spec, ch_node *n)
{
    memset(n, 0, sizeof *n);
    n->spec = spec;
    int opset = spec->opset ? spec->opset : 13;
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", opset));
    char names[CH_MAX_IN][16];
    const char *in_names[CH_MAX_IN];
    for (int i = 0; i < spec->n_in; i++) {
        snprintf(names[i], sizeof names[i], "x%d", i);
        in_names[i] = spec->in[i].absent ? "" : names[i];
        if (!spec->in[i].absent)
            ch_input_add(n->g, spec, &spec->in[i], names[i]);
    }
    n->n_out = spec->n_out ? spec->n_out : 1;
    char onames[CH_MAX_OUT][16];
    const char *out_names[CH_MAX_OUT];
    for (int o = 0; o < n->n_out; o++) {
        snprintf(onames[o], sizeof onames[o], "y%d", o);
        out_names[o] = (spec->out_absent & (1u << o)) ? "" : onames[o];
    }
    for (int o = 0; o < n->n_out && spec->out_ndim > 0; o++) {
        pl_tid t;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, onames[o], &t));
        CHECK_OK(pl_graph_set_type(n->g, t, ch_dt(spec, &spec->in[0]), spec->out_ndim,
                                   spec->out_dims, NULL));
    }
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "node", spec->op, "", in_names, (size_t)spec->n_in,
                               out_names, (size_t)n->n_out, &nid));
    for (int a = 0; a < spec->n_attrs; a++)
        ch_attr_set(n->g, nid, &spec->attrs[a]);
    for (int o = 0; o < n->n_out; o++)
        if (out_names[o][0] != '\0')
            CHECK_OK(pl_graph_add_output(n->g, pl_graph_find_tensor(n->g, out_names[o])));
    CHECK_OK(pl_graph_validate(n->g));
    CHECK_OK(pl_opset_infer(ch_rt->opset, n->g));
    CHECK_OK(pl_graph_view_create(n->g, &nid, 1, &n->view));
    const pl_graph_node *gn = pl_graph_get_node(n->g, nid);
    for (size_t i = 0; i < gn->n_inputs; i++)
        ch_describe(n->g, gn->inputs[i], &n->in[i]);
    for (size_t o = 0; o < gn->n_outputs; o++)
        ch_describe(n->g, gn->outputs[o], &n->out[o]);
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

void ch_node_free(ch_node *n)
{
    pl_graph_view_destroy(n->view);
    pl_graph_destroy(n->g);
}

const ch_attr *ch_attr_find(const ch_spec *s, const char *name)
{
    for (int a = 0; a < s->n_attrs; a++)
        if (strcmp(s->attrs[a].name, name) == 0)
            return &s->attrs[a];
    return NULL;
}

int64_t ch_attr_i(const ch_spec *s, const char *name, int64_t dflt)
{
    const ch_attr *a = ch_attr_find(s, name);
    return a ? a->i : dflt;
}

double ch_attr_f(const ch_spec *s, const char *name, double dflt)
{
    const ch_attr *a = ch_attr_find(s, name);
    return a ? a->f : dflt;
}

const char *ch_attr_s(const ch_spec *s, const char *name, const char *dflt)
{
    const ch_attr *a = ch_attr_find(s, name);
    return a ? a->s : dflt;
}

/* The workspace the last kernel ch_kernel made asked for: ch_run hands it
 * that many bytes, as the core does. */
static const pl_kernel *ch_ws_kernel;
static size_t ch_ws_bytes;

pl_kernel *ch_kernel(const pl_node_desc *desc)
{
    pl_kernel *k = NULL;
    size_t ws = (size_t)-1;
    pl_status *st = ch_mod->api.get_kernel(ch_mod->ctx, 0, desc, &k, &ws);
    CHECK(st == NULL, "get_kernel(%s) failed: %s", desc->op, pl_status_message(st));
    CHECK(k != NULL && ws != (size_t)-1, "get_kernel(%s): no kernel or no workspace size",
          desc->op);
    ch_ws_kernel = k;
    ch_ws_bytes = ws;
    return k;
}

pl_status *ch_refusal(const pl_node_desc *desc)
{
    pl_kernel *k = (pl_kernel *)desc; /* must be cleared */
    size_t ws = 7;
    pl_status *st = ch_mod->api.get_kernel(ch_mod->ctx, 0, desc, &k, &ws);
    CHECK(st != NULL, "get_kernel(%s) accepted the node", desc->op);
    CHECK(k == NULL && ws == 0, "a refusal left outputs set");
    return st;
}

void ch_expect_refusal(const ch_spec *spec, pl_code code, const char *message)
{
    ch_node n;
    ch_node_build(spec, &n);
    pl_status *st = ch_refusal(&n.desc);
    CHECK(pl_status_code(st) == code, "%s: code %s, expected %s (%s)", spec->op,
          pl_code_name(pl_status_code(st)), pl_code_name(code), pl_status_message(st));
    CHECK(strstr(pl_status_message(st), message) != NULL, "refusal \"%s\" lacks \"%s\"",
          pl_status_message(st), message);
    pl_status_free(st);
    ch_node_free(&n);
}

/* ---- buffers and runs ---------------------------------------------------- */

void ch_buf_make(ch_buf *b, size_t bytes, size_t offset)
{
    b->bytes = bytes;
    b->offset = offset;
    b->base = malloc(offset + bytes + 8);
    CHECK(b->base != NULL, "out of memory");
    b->data = b->base + offset;
}

pl_tensor ch_host_tensor(const pl_tensor *desc, const ch_buf *b)
{
    pl_tensor t = *desc;
    t.data = b->base;
    t.byte_offset = b->offset;
    return t;
}

pl_status *ch_run(pl_kernel *k, size_t n_in, const pl_tensor *ins, size_t n_out,
                  pl_tensor *outs, const pl_output_request *reqs)
{
    pl_run_context rc = {.header = PL_ABI_HEADER_INIT(pl_run_context)};
    size_t ws = k == ch_ws_kernel ? ch_ws_bytes : 0;
    void *work = ws ? aligned_alloc(64, (ws + 63) / 64 * 64) : NULL;
    CHECK(ws == 0 || work != NULL, "out of memory for %zu bytes of workspace", ws);
    pl_run_args args = {.header = PL_ABI_HEADER_INIT(pl_run_args),
                        .run = &rc,
                        .n_inputs = n_in,
                        .inputs = ins,
                        .n_outputs = n_out,
                        .outputs = outs,
                        .requests = reqs,
                        .workspace = work,
                        .workspace_bytes = ws};
    pl_status *st = ch_mod->api.kernel_run(ch_mod->ctx, k, &args);
    free(work);
    return st;
}

size_t ch_count(const int64_t *dims, int r)
{
    size_t n = 1;
    for (int d = 0; d < r; d++)
        n *= (size_t)dims[d];
    return n;
}

/* f16 and bf16 for the tests, written apart from the module's bit tricks
 * (half.h): the value is rounded in double at its binade's step with rint
 * (ties to even), then its bits are assembled from that exact value. */
double ch_round_format(double v, int mbits, int emin, int emax)
{
    if (isnan(v) || isinf(v) || v == 0)
        return v;
    int e;
    frexp(fabs(v), &e);
    e = e - 1 < emin ? emin : e - 1;
    double step = ldexp(1.0, e - mbits);
    double r = rint(v / step) * step;
    if (fabs(r) > ldexp(2.0 - ldexp(1.0, -mbits), emax))
        return copysign(INFINITY, v);
    return r;
}

uint16_t ch_f16_bits(double v)
{
    if (isnan(v))
        return 0x7e00;
    double r = ch_round_format(v, 10, -14, 15), a = fabs(r);
    uint16_t sign = signbit(r) ? 0x8000 : 0;
    if (isinf(a))
        return sign | 0x7c00;
    if (a < ldexp(1.0, -14))
        return sign | (uint16_t)(a * ldexp(1.0, 24));
    int e;
    double m = frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

double ch_f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double sign = h & 0x8000 ? -1 : 1;
    if (e == 0x1f)
        return m ? NAN : sign * INFINITY;
    return sign * (e ? ldexp(1024 + m, e - 25) : ldexp(m, -24));
}

uint16_t ch_bf16_bits(double v)
{
    if (isnan(v))
        return 0x7fc0;
    float f = (float)ch_round_format(v, 7, -126, 127); /* exact in f32 */
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return (uint16_t)(b >> 16);
}

double ch_bf16_value(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

double ch_rounding(pl_dtype dt, double v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        return fabs(v) * ldexp(1.0, -11) + ldexp(1.0, -25);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        return fabs(v) * ldexp(1.0, -8);
    return 0.0;
}

void ch_store(void *bytes, pl_dtype dt, size_t i, double v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        ((uint16_t *)bytes)[i] = ch_f16_bits(v);
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        ((uint16_t *)bytes)[i] = ch_bf16_bits(v);
    else if (PL_DTYPE_EQ(dt, PL_DTYPE_F32))
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

double ch_load(const void *bytes, pl_dtype dt, size_t i)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_F16))
        return ch_f16_value(((const uint16_t *)bytes)[i]);
    if (PL_DTYPE_EQ(dt, PL_DTYPE_BF16))
        return ch_bf16_value(((const uint16_t *)bytes)[i]);
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

bool ch_is_float(pl_dtype dt)
{
    return dt.code == PL_TYPE_FLOAT || dt.code == PL_TYPE_BFLOAT;
}

static uint64_t ch_seed = 0x9e3779b97f4a7c15ull;

uint32_t ch_bits(void)
{
    ch_seed = ch_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(ch_seed >> 32);
}

double ch_random(void)
{
    return (double)(ch_bits() >> 8) / (double)(1u << 24) * 4.0 - 2.0;
}

/* ---- index helpers --------------------------------------------------------- */

void ch_unravel(size_t i, const int64_t *dims, int r, int64_t *idx)
{
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = (int64_t)(i % (size_t)dims[d]);
        i /= (size_t)dims[d];
    }
}

size_t ch_ravel(const int64_t *idx, const int64_t *dims, int r)
{
    size_t off = 0;
    for (int d = 0; d < r; d++)
        off = off * (size_t)dims[d] + (size_t)idx[d];
    return off;
}

size_t ch_ravel_bcast(const int64_t *idx, int r_out, const int64_t *dims, int r)
{
    size_t off = 0;
    for (int d = 0; d < r; d++) {
        int64_t i = idx[r_out - r + d];
        off = off * (size_t)dims[d] + (size_t)(dims[d] == 1 ? 0 : i);
    }
    return off;
}

/* ---- checking one node against a reference ------------------------------- */

double ch_at(const ch_data *d, int i, size_t e) { return ch_load(d->x[i], d->dt[i], e); }

void ch_check_req(const ch_oracle *oracle, const ch_spec *spec, pl_output_request req)
{
    ch_node n;
    ch_node_build(spec, &n);
    pl_kernel *k = ch_kernel(&n.desc);
    size_t n_in = n.desc.n_inputs, n_out = n.desc.n_outputs;
    ch_buf bufs[CH_MAX_IN], obufs[CH_MAX_OUT];
    pl_tensor ins[CH_MAX_IN], outs[CH_MAX_OUT];
    ch_data d;
    memset(&d, 0, sizeof d);
    for (size_t i = 0; i < n_in; i++) {
        memset(&bufs[i], 0, sizeof bufs[i]);
        if (n.in[i].ndim < 0) {
            ins[i] = n.in[i];
            continue;
        }
        pl_dtype dt = n.in[i].dtype;
        size_t cnt = ch_count(n.in[i].shape, n.in[i].ndim);
        ch_buf_make(&bufs[i], cnt * pl_dtype_size(dt), 8 * (i + 1));
        if (spec->in[i].constant)
            for (size_t e = 0; e < cnt; e++)
                ch_store(bufs[i].data, dt, e, spec->in[i].vals[e]);
        else
            oracle->fill(spec, (int)i, dt, bufs[i].data, cnt);
        ins[i] = ch_host_tensor(&n.in[i], &bufs[i]);
        d.x[i] = bufs[i].data;
        d.dt[i] = dt;
        d.dims[i] = n.in[i].shape;
        d.ndim[i] = n.in[i].ndim;
    }
    ch_ref r;
    memset(&r, 0, sizeof r);
    pl_output_request reqs[CH_MAX_OUT];
    double *before[CH_MAX_OUT] = {NULL};
    size_t cnt[CH_MAX_OUT] = {0};
    for (size_t o = 0; o < n_out; o++) {
        memset(&obufs[o], 0, sizeof obufs[o]);
        reqs[o] = PL_REQ_NULL;
        outs[o] = n.out[o];
        if (n.out[o].ndim < 0)
            continue;
        reqs[o] = o == 0 ? req : (req == PL_REQ_INPLACE ? PL_REQ_WRITE : req);
        cnt[o] = ch_count(n.out[o].shape, n.out[o].ndim);
        r.v[o] = calloc(cnt[o] + 1, sizeof(double));
        r.mag[o] = calloc(cnt[o] + 1, sizeof(double));
        before[o] = calloc(cnt[o] + 1, sizeof(double));
        CHECK(r.v[o] && r.mag[o] && before[o], "out of memory");
        pl_dtype dt = n.out[o].dtype;
        if (o == 0 && req == PL_REQ_INPLACE) {
            obufs[o] = bufs[0];
        } else {
            ch_buf_make(&obufs[o], cnt[o] * pl_dtype_size(dt), 16);
            for (size_t e = 0; e < cnt[o]; e++)
                ch_store(obufs[o].data, dt, e,
                         req == PL_REQ_ADD_TO ? floor(ch_random() * 10) : 77);
        }
        for (size_t e = 0; e < cnt[o]; e++)
            before[o][e] = ch_load(obufs[o].data, dt, e);
        outs[o] = ch_host_tensor(&n.out[o], &obufs[o]);
    }
    oracle->reference(&n, &d, &r);
    CHECK_OK(ch_run(k, n_in, ins, n_out, outs, reqs));
    for (size_t o = 0; o < n_out; o++) {
        if (r.v[o] == NULL)
            continue;
        pl_dtype dt = n.out[o].dtype;
        bool is_f = ch_is_float(dt);
        for (size_t e = 0; e < cnt[o]; e++) {
            double add = req == PL_REQ_ADD_TO ? before[o][e] : 0.0;
            double want = r.v[o][e] + add;
            double got = ch_load(obufs[o].data, dt, e);
            double tol = is_f ? oracle->rtol(spec->op) * (r.mag[o][e] + fabs(add)) + 1e-6 +
                                    ch_rounding(dt, want)
                              : 0.0;
            bool same = (isnan(want) && isnan(got)) || want == got || fabs(got - want) <= tol;
            char shape[128];
            CHECK(same,
                  "%s (opset %d, request %d, input %s %s): output %zu element %zu of %zu is "
                  "%.9g, expected %.9g (tolerance %.3g)",
                  spec->op, spec->opset ? spec->opset : 13, (int)req,
                  pl_dtype_name(n.in[0].dtype),
                  pl_dims_format(n.in[0].shape, n.in[0].ndim, shape, sizeof shape), o, e,
                  cnt[o], got, want, tol);
        }
    }
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    for (size_t i = 0; i < n_in; i++)
        free(bufs[i].base);
    for (size_t o = 0; o < n_out; o++) {
        if (!(o == 0 && req == PL_REQ_INPLACE))
            free(obufs[o].base);
        free(r.v[o]);
        free(r.mag[o]);
        free(before[o]);
    }
    ch_node_free(&n);
}
