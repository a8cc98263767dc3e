/* test_cpu_shape.c — the cpu module's shape family, driven the way the core
 * drives it: a one-node graph with shapes inferred by the core's opset, a
 * view of it, a pl_node_desc, then get_kernel and kernel_run through the
 * module's table. Every output is compared byte for byte (Resize: within a
 * tolerance) with a reference loop written here, for every dtype where the
 * op moves bytes; errors the kernels must give (out-of-range indices,
 * bounds that do not fit) are checked by their message. The module, the
 * one-node graphs, buffers and index helpers come from the shared harness
 * (tests/cpu_harness); linked against the core's object library. Usage:
 * test_cpu_shape CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_harness.h"

/* ---- inputs and runs ------------------------------------------------------ */

/* Random contents of a tensor of DT: values for f32 and f64, 0 or 1 for
 * bool, any bits otherwise (the movers never look at them). */
static void ts_fill(pl_dtype dt, void *p, size_t n)
{
    char *c = p;
    for (size_t i = 0; i < n; i++) {
        if (PL_DTYPE_EQ(dt, PL_DTYPE_F32)) {
            float v = (float)ch_random();
            memcpy(c + i * 4, &v, 4);
        } else if (PL_DTYPE_EQ(dt, PL_DTYPE_F64)) {
            double v = (float)ch_random() * 1.0000001;
            memcpy(c + i * 8, &v, 8);
        } else if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) {
            c[i] = (char)(ch_bits() & 1);
        } else {
            for (size_t b = 0; b < pl_dtype_size(dt); b++)
                c[i * pl_dtype_size(dt) + b] = (char)ch_bits();
        }
    }
}

/* One run of a spec: its node, kernel, inputs and outputs. */
typedef struct ts_exec {
    ch_node n;
    pl_kernel *k;
    size_t n_in, n_out;
    ch_buf in[CH_MAX_IN];
    ch_buf out[CH_MAX_OUT];
    pl_tensor ins[CH_MAX_IN];
    pl_tensor outs[CH_MAX_OUT];
} ts_exec;

static void ts_exec_prepare(const ch_spec *spec, ts_exec *e)
{
    memset(e, 0, sizeof *e);
    ch_node_build(spec, &e->n);
    e->k = ch_kernel(&e->n.desc);
    e->n_in = e->n.desc.n_inputs;
    e->n_out = e->n.desc.n_outputs;
    for (size_t i = 0; i < e->n_in; i++) {
        const pl_tensor *d = &e->n.in[i];
        if (d->ndim < 0) {
            e->ins[i] = *d;
            continue;
        }
        size_t es = pl_dtype_size(d->dtype), cnt = ch_count(d->shape, d->ndim);
        ch_buf_make(&e->in[i], cnt * es, es * (i + 1));
        if (spec->in[i].value != NULL)
            memcpy(e->in[i].data, spec->in[i].value, cnt * es);
        else
            ts_fill(d->dtype, e->in[i].data, cnt);
        e->ins[i] = ch_host_tensor(d, &e->in[i]);
    }
    for (size_t o = 0; o < e->n_out; o++) {
        const pl_tensor *d = &e->n.out[o];
        size_t es = pl_dtype_size(d->dtype), cnt = ch_count(d->shape, d->ndim);
        ch_buf_make(&e->out[o], cnt * es, 8 * (o + 1));
        memset(e->out[o].data, 0xcd, cnt * es);
        e->outs[o] = ch_host_tensor(d, &e->out[o]);
    }
}

static pl_status *ts_exec_run(ts_exec *e, const pl_output_request *reqs)
{
    pl_output_request all[CH_MAX_OUT];
    for (size_t o = 0; o < e->n_out; o++)
        all[o] = reqs ? reqs[o] : PL_REQ_WRITE;
    return ch_run(e->k, e->n_in, e->ins, e->n_out, e->outs, all);
}

static void ts_exec_free(ts_exec *e)
{
    ch_mod->api.kernel_release(ch_mod->ctx, e->k);
    for (size_t i = 0; i < e->n_in; i++)
        free(e->in[i].base);
    for (size_t o = 0; o < e->n_out; o++)
        free(e->out[o].base);
    ch_node_free(&e->n);
}

/* ---- reference helpers ----------------------------------------------------- */

/* Integer I of a tensor of i64 or i32 at P. */
static int64_t ts_int(pl_dtype dt, const void *p, size_t i)
{
    if (dt.bits == 64) {
        int64_t v;
        memcpy(&v, (const char *)p + i * 8, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, (const char *)p + i * 4, 4);
    return v;
}

/* ---- reference loops (bytes; one output at a time) ------------------------- */

typedef struct ts_ctx {
    const ch_spec *s;
    const ts_exec *e;
    size_t es;       /* bytes per element of output O */
    size_t o;
} ts_ctx;

#define TS_X(c, i) ((const char *)(c)->e->in[i].data)
#define TS_XD(c, i) ((c)->e->n.in[i].shape)
#define TS_XR(c, i) ((c)->e->n.in[i].ndim)

static void ts_ref_transpose(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    const ch_attr *p = ch_attr_find(c->s, "perm");
    int64_t idx[CH_MAX_RANK], xi[CH_MAX_RANK];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        for (int q = 0; q < r; q++)
            xi[p ? p->ints[q] : r - 1 - q] = idx[q];
        memcpy(ref + i * c->es, TS_X(c, 0) + ch_ravel(xi, TS_XD(c, 0), r) * c->es, c->es);
    }
}

static void ts_ref_concat(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    int64_t axis = ch_attr_i(c->s, "axis", 0), idx[CH_MAX_RANK];
    if (axis < 0)
        axis += r;
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        size_t src = 0;
        while (idx[axis] >= TS_XD(c, src)[axis]) {
            idx[axis] -= TS_XD(c, src)[axis];
            src++;
        }
        memcpy(ref + i * c->es, TS_X(c, src) + ch_ravel(idx, TS_XD(c, src), r) * c->es, c->es);
    }
}

static void ts_ref_split(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    int64_t axis = ch_attr_i(c->s, "axis", 0), idx[CH_MAX_RANK], at = 0;
    if (axis < 0)
        axis += r;
    for (size_t p = 0; p < c->o; p++)
        at += c->e->n.out[p].shape[axis];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        idx[axis] += at;
        memcpy(ref + i * c->es, TS_X(c, 0) + ch_ravel(idx, TS_XD(c, 0), r) * c->es, c->es);
    }
}

/* Slice: bounds from the attributes (opset < 10) or inputs 1..4. */
static void ts_ref_slice(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    const ch_spec *s = c->s;
    int64_t start[CH_MAX_RANK] = {0}, step[CH_MAX_RANK], v[4][16];
    int n = 0;
    bool have[4] = {false};
    for (int d = 0; d < r; d++)
        step[d] = 1;
    for (int k = 0; k < 4; k++) {
        if ((s->opset ? s->opset : 13) < 10) {
            static const char *const names[3] = {"starts", "ends", "axes"};
            const ch_attr *a = k < 3 ? ch_attr_find(s, names[k]) : NULL;
            if (a) {
                memcpy(v[k], a->ints, sizeof a->ints);
                n = a->n;
                have[k] = true;
            }
        } else if (1 + k < s->n_in && !s->in[1 + k].absent) {
            const ch_in *in = &s->in[1 + k];
            n = (int)in->dims[0];
            for (int j = 0; j < n; j++)
                v[k][j] = ts_int(ch_dt(s, in), in->value, (size_t)j);
            have[k] = true;
        }
    }
    const int64_t *xd = TS_XD(c, 0);
    for (int j = 0; j < n; j++) {
        int64_t a = have[2] ? v[2][j] : j;
        if (a < 0)
            a += r;
        int64_t st = have[3] ? v[3][j] : 1, dim = xd[a];
        int64_t b = v[0][j] < 0 ? v[0][j] + dim : v[0][j];
        if (st > 0)
            b = b < 0 ? 0 : b > dim ? dim : b;
        else
            b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
        start[a] = b;
        step[a] = st;
    }
    int64_t idx[CH_MAX_RANK];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        for (int d = 0; d < r; d++)
            idx[d] = start[d] + idx[d] * step[d];
        memcpy(ref + i * c->es, TS_X(c, 0) + ch_ravel(idx, xd, r) * c->es, c->es);
    }
}

static void ts_ref_gather(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    int rx = TS_XR(c, 0), ri = TS_XR(c, 1);
    int64_t axis = ch_attr_i(c->s, "axis", 0);
    if (axis < 0)
        axis += rx;
    int64_t idx[2 * CH_MAX_RANK], xi[CH_MAX_RANK];
    pl_dtype it = c->e->n.in[1].dtype;
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        size_t at = ch_ravel(idx + axis, TS_XD(c, 1), ri);
        int64_t j = ts_int(it, TS_X(c, 1), at);
        for (int d = 0; d < rx; d++)
            xi[d] = d < axis ? idx[d] : d == axis ? (j < 0 ? j + TS_XD(c, 0)[axis] : j)
                                                 : idx[d - 1 + ri];
        memcpy(ref + i * c->es, TS_X(c, 0) + ch_ravel(xi, TS_XD(c, 0), rx) * c->es, c->es);
    }
}

static void ts_ref_expand_tile(const ts_ctx *c, const int64_t *od, int r, char *ref, bool tile)
{
    int rx = TS_XR(c, 0);
    const int64_t *xd = TS_XD(c, 0);
    int64_t idx[CH_MAX_RANK], xi[CH_MAX_RANK];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        for (int d = 0; d < rx; d++) {
            int64_t v = idx[r - rx + d];
            xi[d] = tile ? v % xd[d] : xd[d] == 1 ? 0 : v;
        }
        memcpy(ref + i * c->es, TS_X(c, 0) + ch_ravel(xi, xd, rx) * c->es, c->es);
    }
}

/* Pad: pads from the attribute (opset < 11) or input 1; axes input 3. */
static void ts_ref_pad(const ts_ctx *c, const int64_t *od, int r, char *ref)
{
    const ch_spec *s = c->s;
    int opset = s->opset ? s->opset : 13;
    int64_t pads[32], begin[CH_MAX_RANK] = {0};
    int np;
    if (opset < 11) {
        const ch_attr *a = ch_attr_find(s, "pads");
        np = a->n;
        memcpy(pads, a->ints, (size_t)np * sizeof *pads);
    } else {
        np = (int)s->in[1].dims[0];
        for (int j = 0; j < np; j++)
            pads[j] = ts_int(PL_DTYPE_I64, s->in[1].value, (size_t)j);
    }
    int na = np / 2;
    for (int j = 0; j < na; j++) {
        int64_t a = j;
        if (s->n_in > 3 && !s->in[3].absent) {
            a = ts_int(ch_dt(s, &s->in[3]), s->in[3].value, (size_t)j);
            if (a < 0)
                a += r;
        }
        begin[a] = pads[j];
    }
    const char *mode = ch_attr_s(s, "mode", "constant");
    char value[8] = {0};
    if (opset >= 11 && s->n_in > 2 && !s->in[2].absent)
        memcpy(value, TS_X(c, 2), c->es);
    else if (opset < 11) {
        const ch_attr *a = ch_attr_find(s, "value");
        float f = a ? (float)a->f : 0.0f;
        memcpy(value, &f, 4);
    }
    const int64_t *xd = TS_XD(c, 0);
    int64_t idx[CH_MAX_RANK];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        bool fill = false;
        for (int d = 0; d < r; d++) {
            int64_t v = idx[d] - begin[d], n = xd[d];
            if (v >= 0 && v < n)
                ;
            else if (mode[0] == 'c')
                fill = true;
            else if (mode[0] == 'w') {
                /* the kept part [lo, hi) repeated, stepping by its length */
                int64_t end = od[d] - n - begin[d];
                int64_t lo = begin[d] < 0 ? -begin[d] : 0, hi = end < 0 ? n + end : n;
                while (v < lo)
                    v += hi - lo;
                while (v >= hi)
                    v -= hi - lo;
            } else if (mode[0] == 'e' || n == 1)
                v = v < 0 ? 0 : n - 1;
            else
                while (v < 0 || v >= n)
                    v = v < 0 ? -v : 2 * (n - 1) - v;
            idx[d] = v;
        }
        memcpy(ref + i * c->es, fill ? value : TS_X(c, 0) + ch_ravel(idx, xd, r) * c->es, c->es);
    }
}

/* The expected bytes of output O of E. */
static void ts_reference(const ts_exec *e, size_t o, char *ref)
{
    const ch_spec *s = e->n.spec;
    const pl_tensor *out = &e->n.out[o];
    ts_ctx c = {.s = s, .e = e, .es = pl_dtype_size(out->dtype), .o = o};
    const int64_t *od = out->shape;
    int r = out->ndim;
    const char *op = s->op;
    size_t cnt = ch_count(od, r);
    if (!strcmp(op, "Transpose"))
        ts_ref_transpose(&c, od, r, ref);
    else if (!strcmp(op, "Concat"))
        ts_ref_concat(&c, od, r, ref);
    else if (!strcmp(op, "Split"))
        ts_ref_split(&c, od, r, ref);
    else if (!strcmp(op, "Slice"))
        ts_ref_slice(&c, od, r, ref);
    else if (!strcmp(op, "Gather"))
        ts_ref_gather(&c, od, r, ref);
    else if (!strcmp(op, "Expand") || !strcmp(op, "Tile"))
        ts_ref_expand_tile(&c, od, r, ref, op[0] == 'T');
    else if (!strcmp(op, "Pad"))
        ts_ref_pad(&c, od, r, ref);
    else if (!strcmp(op, "Dropout") && o == 1) {
        for (size_t i = 0; i < cnt; i++) {
            if (PL_DTYPE_EQ(out->dtype, PL_DTYPE_BOOL)) {
                ref[i] = 1;
            } else {
                float one = 1.0f;
                memcpy(ref + i * 4, &one, 4);
            }
        }
    } else
        memcpy(ref, TS_X(&c, 0), cnt * c.es); /* the copies */
}

/* ---- checking one node --------------------------------------------------- */

static void ts_check(const ch_spec *spec)
{
    ts_exec e;
    ts_exec_prepare(spec, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    for (size_t o = 0; o < e.n_out; o++) {
        size_t bytes = e.out[o].bytes, es = pl_dtype_size(e.n.out[o].dtype);
        char *ref = malloc(bytes + 1);
        CHECK(ref != NULL, "out of memory");
        ts_reference(&e, o, ref);
        for (size_t b = 0; b < bytes; b++)
            CHECK(ref[b] == e.out[o].data[b],
                  "%s (opset %d, dtype %u/%u): output %zu element %zu of %zu differs", spec->op,
                  spec->opset ? spec->opset : 13, e.n.out[o].dtype.code, e.n.out[o].dtype.bits,
                  o, b / es, bytes / es);
        free(ref);
    }
    ts_exec_free(&e);
}

static const pl_dtype ts_dtypes[] = {
    {PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_FLOAT, 16, 1},
    {PL_TYPE_BFLOAT, 16, 1}, {PL_TYPE_UINT, 8, 1},  {PL_TYPE_INT, 8, 1},
    {PL_TYPE_INT, 32, 1},   {PL_TYPE_INT, 64, 1},   {PL_TYPE_BOOL, 8, 1},
};

/* Checks every spec in every dtype of ABI 1. */
static void ts_check_all_dtypes(const ch_spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < CH_COUNT(ts_dtypes); d++) {
            ch_spec s = specs[i];
            s.dtype = ts_dtypes[d];
            ts_check(&s);
        }
}

/* get_kernel must refuse SPEC with a message holding MESSAGE. */
static void ts_expect_refusal(const ch_spec *spec, const char *message)
{
    ch_node n;
    ch_node_build(spec, &n);
    pl_kernel *k = (pl_kernel *)&n;
    size_t ws = 7;
    pl_status *st = ch_mod->api.get_kernel(ch_mod->ctx, 0, &n.desc, &k, &ws);
    CHECK(st != NULL, "get_kernel(%s) accepted the node", spec->op);
    CHECK(k == NULL && ws == 0, "a refusal left outputs set");
    CHECK(strstr(pl_status_message(st), message) != NULL, "refusal \"%s\" lacks \"%s\"",
          pl_status_message(st), message);
    pl_status_free(st);
    ch_node_free(&n);
}

/* The run of SPEC must fail with a message holding MESSAGE. */
static void ts_expect_run_error(const ch_spec *spec, const char *message)
{
    ts_exec e;
    ts_exec_prepare(spec, &e);
    pl_status *st = ts_exec_run(&e, NULL);
    CHECK(st != NULL, "%s: the run succeeded", spec->op);
    CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT &&
              strstr(pl_status_message(st), message) != NULL,
          "run error \"%s\" lacks \"%s\"", pl_status_message(st), message);
    pl_status_free(st);
    ts_exec_free(&e);
}

/* More shorthands (cpu_harness.h has the rest): C64/C32 a constant
 * i64/i32 vector, R64 an i64 vector handed to the run. */
#define C64(n, ...) {.ndim = 1, .dims = {n}, .dtype = {PL_TYPE_INT, 64, 1}, \
                     .value = (const int64_t[]){__VA_ARGS__}}
#define C32(n, ...) {.ndim = 1, .dims = {n}, .dtype = {PL_TYPE_INT, 32, 1}, \
                     .value = (const int32_t[]){__VA_ARGS__}}
#define R64(n, ...) {.ndim = 1, .dims = {n}, .dtype = {PL_TYPE_INT, 64, 1}, .runtime = 1, \
                     .value = (const int64_t[]){__VA_ARGS__}}

/* ---- the copies ------------------------------------------------------------ */

static void case_Reshape(void)
{
    const ch_spec specs[] = {
        {.op = "Reshape", .n_in = 2, .in = {T(3, 2, 3, 4), C64(2, 6, -1)}},
        {.op = "Reshape", .n_in = 2, .in = {T(3, 2, 4, 6), C64(3, 2, 0, -1)}, .opset = 14},
        {.op = "Reshape", .n_in = 2, .in = {T(2, 1, 1), C64(0)}},
        {.op = "Reshape", .opset = 14, .n_in = 2, .in = {T(2, 0, 3), C64(3, 3, 0, 5)},
         .attrs = {AI("allowzero", 1)}, .n_attrs = 1},
        {.op = "Reshape", .n_in = 2, .in = {T(3, 4, 300, 211), C64(1, -1)}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Flatten(void)
{
    const ch_spec specs[] = {
        {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}},
        {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}, .attrs = {AI("axis", -1)}, .n_attrs = 1},
        {.op = "Flatten", .n_in = 1, .in = {T(3, 2, 3, 4)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Identity(void)
{
    const ch_spec specs[] = {
        {.op = "Identity", .n_in = 1, .in = {T0}},
        {.op = "Identity", .n_in = 1, .in = {T(2, 7, 5)}},
        {.op = "Identity", .n_in = 1, .in = {T(2, 0, 5)}},
        {.op = "Identity", .n_in = 1, .in = {T(2, 513, 301)}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Squeeze(void)
{
    const ch_spec specs[] = {
        {.op = "Squeeze", .n_in = 2, .in = {T(4, 1, 3, 1, 2), C64(2, 0, -2)}},
        {.op = "Squeeze", .n_in = 1, .in = {T(4, 1, 3, 1, 2)}},
        {.op = "Squeeze", .n_in = 1, .in = {T(3, 3, 1, 2)}, .opset = 11,
         .attrs = {AIS("axes", 1, -2)}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Unsqueeze(void)
{
    const ch_spec specs[] = {
        {.op = "Unsqueeze", .n_in = 2, .in = {T(2, 3, 2), C64(2, 0, -1)}},
        {.op = "Unsqueeze", .n_in = 2, .in = {T0, C64(1, 0)}},
        {.op = "Unsqueeze", .n_in = 1, .in = {T(2, 3, 2)}, .opset = 11,
         .attrs = {AIS("axes", 1, 1)}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Dropout(void)
{
    static const unsigned char no = 0, yes = 1;
    static const float ratio = 0.25f;
    static const pl_dtype floats[] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_FLOAT, 64, 1},
                                      {PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
    for (size_t d = 0; d < CH_COUNT(floats); d++) {
        ch_spec a = {.op = "Dropout", .n_in = 1, .in = {T(2, 3, 5)}, .dtype = floats[d]};
        ts_check(&a);
        ch_spec b = a;
        b.n_out = 2; /* the mask, bool */
        ts_check(&b);
        ch_spec c = {.op = "Dropout", .n_in = 3, .n_out = 2, .dtype = floats[d],
                     .in = {T(3, 2, 3, 4),
                            {.ndim = 0, .dtype = {PL_TYPE_FLOAT, 32, 1}, .value = &ratio},
                            {.ndim = 0, .dtype = {PL_TYPE_BOOL, 8, 1}, .value = &no}}};
        ts_check(&c);
    }
    /* opset 7: the mask has the data's dtype (all 1.0) */
    ch_spec old = {.op = "Dropout", .opset = 7, .n_in = 1, .n_out = 2, .in = {T(2, 4, 3)},
                   .attrs = {AF("ratio", 0.5)}, .n_attrs = 1};
    ts_check(&old);
    ch_spec train = {.op = "Dropout", .n_in = 3, .n_out = 2,
                     .in = {T(2, 3, 5), {.ndim = 0, .dtype = {PL_TYPE_FLOAT, 32, 1}, .value = &ratio},
                            {.ndim = 0, .dtype = {PL_TYPE_BOOL, 8, 1}, .value = &yes}}};
    ts_expect_refusal(&train, "cpu: Dropout: training_mode is a constant true");
    /* training_mode handed to the run (jax2onnx's Flax `deterministic`):
     * false passes the data through, in every float dtype */
    for (size_t d = 0; d < CH_COUNT(floats); d++) {
        ch_spec off = {.op = "Dropout", .n_in = 3, .n_out = 2, .dtype = floats[d],
                       .in = {T(2, 4, 5),
                              {.ndim = 0, .dtype = {PL_TYPE_FLOAT, 32, 1}, .value = &ratio},
                              {.ndim = 0, .dtype = {PL_TYPE_BOOL, 8, 1}, .runtime = 1,
                               .value = &no}}};
        ts_check(&off);
    }
}

/* Dropout with training_mode true at run time: every element of y is 0 or
 * x / (1 - ratio), as the mask says; about 1 - ratio of them kept; a seed
 * attribute gives the same mask every run (and a runtime ratio is read);
 * a ratio outside [0, 1) fails the run. */
static void case_DropoutTraining(void)
{
    static const unsigned char yes = 1;
    static const float ratio = 0.25f, bad = 1.0f;
    const ch_in mode = {.ndim = 0, .dtype = {PL_TYPE_BOOL, 8, 1}, .runtime = 1, .value = &yes};
    ch_spec specs[2] = {
        {.op = "Dropout", .n_in = 3, .n_out = 2, .dtype = {PL_TYPE_FLOAT, 32, 1},
         .in = {T(3, 4, 10, 25), {.ndim = 0, .dtype = {PL_TYPE_FLOAT, 32, 1}, .value = &ratio},
                mode},
         .attrs = {AI("seed", 7)}, .n_attrs = 1},
        {.op = "Dropout", .n_in = 3, .n_out = 2, .dtype = {PL_TYPE_FLOAT, 32, 1},
         .in = {T(3, 4, 10, 25),
                {.ndim = 0, .dtype = {PL_TYPE_FLOAT, 32, 1}, .runtime = 1, .value = &ratio},
                mode}},
    };
    for (int v = 0; v < 2; v++) {
        unsigned char first[1000];
        for (int run = 0; run < 2; run++) {
            ts_exec e;
            ts_exec_prepare(&specs[v], &e);
            CHECK_OK(ts_exec_run(&e, NULL));
            const float *x = (const float *)(const void *)e.in[0].data;
            const float *y = (const float *)(const void *)e.out[0].data;
            const unsigned char *m = (const unsigned char *)e.out[1].data;
            size_t kept = 0;
            for (size_t i = 0; i < 1000; i++) {
                CHECK(m[i] <= 1, "variant %d: mask element %zu is %d", v, i, m[i]);
                float want = m[i] ? (float)(x[i] * (1.0 / 0.75)) : 0.0f;
                CHECK(y[i] == want, "variant %d: y[%zu] = %g, want %g (x %g, mask %d)", v, i,
                      y[i], want, x[i], m[i]);
                kept += m[i];
                if (run == 1)
                    CHECK(m[i] == first[i], "variant %d: the second run's mask differs at %zu",
                          v, i);
                else
                    first[i] = m[i];
            }
            CHECK(kept > 690 && kept < 810, "variant %d: %zu of 1000 kept at ratio 0.25", v,
                  kept);
            ts_exec_free(&e);
        }
    }
    ch_spec one = specs[1];
    one.in[1].value = &bad;
    ts_expect_run_error(&one, "ratio 1 is outside [0, 1) in training mode");
}

/* ---- strided and slab movers ----------------------------------------------- */

static void case_Transpose(void)
{
    const ch_spec specs[] = {
        {.op = "Transpose", .n_in = 1, .in = {T(2, 3, 5)}},
        {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 7, 3, 8)},
         .attrs = {AIS("perm", 4, 0, 2, 1, 3)}, .n_attrs = 1},           /* BERT heads */
        {.op = "Transpose", .n_in = 1, .in = {T(4, 2, 3, 70, 40)},
         .attrs = {AIS("perm", 4, 0, 1, 3, 2)}, .n_attrs = 1},           /* K^T: tiled */
        {.op = "Transpose", .n_in = 1, .in = {T(3, 1, 4, 1)},
         .attrs = {AIS("perm", 3, 2, 0, 1)}, .n_attrs = 1},
        {.op = "Transpose", .n_in = 1, .in = {T(3, 4, 0, 3)}},
        {.op = "Transpose", .n_in = 1, .in = {T(2, 333, 517)}},          /* big tiled */
        {.op = "Transpose", .n_in = 1, .in = {T(5, 2, 3, 4, 5, 6)},
         .attrs = {AIS("perm", 5, 4, 2, 0, 3, 1)}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Concat(void)
{
    const ch_spec specs[] = {
        {.op = "Concat", .n_in = 2, .in = {T(2, 2, 3), T(2, 4, 3)}, .attrs = {AI("axis", 0)},
         .n_attrs = 1},
        {.op = "Concat", .n_in = 3, .in = {T(3, 2, 3, 4), T(3, 2, 1, 4), T(3, 2, 0, 4)},
         .attrs = {AI("axis", -2)}, .n_attrs = 1},
        {.op = "Concat", .n_in = 1, .in = {T(1, 7)}, .attrs = {AI("axis", 0)}, .n_attrs = 1},
        {.op = "Concat", .n_in = 3, .in = {T(2, 300, 64), T(2, 300, 1), T(2, 300, 200)},
         .attrs = {AI("axis", -1)}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Split(void)
{
    const ch_spec specs[] = {
        {.op = "Split", .n_in = 1, .n_out = 3, .in = {T(2, 6, 4)}},
        {.op = "Split", .n_in = 2, .n_out = 3, .in = {T(3, 2, 7, 3), C64(3, 2, 0, 5)},
         .attrs = {AI("axis", -2)}, .n_attrs = 1},
        {.op = "Split", .opset = 11, .n_in = 1, .n_out = 2, .in = {T(2, 3, 5)},
         .attrs = {AI("axis", 1), AIS("split", 2, 1, 4)}, .n_attrs = 2},
        {.op = "Split", .opset = 18, .n_in = 1, .n_out = 3, .in = {T(1, 8)},
         .attrs = {AI("num_outputs", 3)}, .n_attrs = 1},                  /* 3, 3, 2 */
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
    ch_spec dyn = {.op = "Split", .n_in = 2, .n_out = 2, .in = {T(1, 6), R64(2, 3, 3)},
                   .out_ndim = 1, .out_dims = {3}};
    ts_expect_refusal(&dyn, "cpu: Split: split (input 1) is not a constant");
}

static void case_Slice(void)
{
    const ch_spec specs[] = {
        {.op = "Slice", .n_in = 3, .in = {T(2, 5, 6), C64(2, 1, 0), C64(2, 4, 3)}},
        {.op = "Slice", .n_in = 5, .in = {T(3, 4, 5, 6), C64(2, -1, 1), C64(2, -100, 5),
                                          C64(2, -1, 0), C64(2, -2, 2)}},  /* backwards */
        {.op = "Slice", .n_in = 5, .in = {T(2, 5, 6), C32(1, 10), C32(1, -7),
                                          C32(1, 1), C32(1, -3)}},          /* clamped, i32 */
        {.op = "Slice", .n_in = 4, .in = {T(3, 3, 4, 5), C64(1, 0),
                                          C64(1, INT64_MAX), C64(1, -1)}},
        {.op = "Slice", .n_in = 5, .in = {T(1, 10), C64(1, 8), C64(1, 1), ABSENT, C64(1, -3)}},
        {.op = "Slice", .n_in = 3, .in = {T(2, 4, 4), C64(1, 3), C64(1, 1)}},  /* empty */
        {.op = "Slice", .opset = 9, .n_in = 1, .in = {T(3, 4, 5, 6)},
         .attrs = {AIS("starts", 2, 1, -3), AIS("ends", 2, 3, 100), AIS("axes", 2, 0, -1)},
         .n_attrs = 3},
        {.op = "Slice", .n_in = 5, .in = {T(3, 64, 100, 33), C64(2, 3, 99),
                                          C64(2, 60, 0), C64(2, 0, 1), C64(2, 2, -2)}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
    /* bounds known only at run time: the output's shape is declared */
    ch_spec dyn = {.op = "Slice", .n_in = 5, .out_ndim = 2, .out_dims = {2, 3},
                   .in = {T(2, 5, 6), R64(2, -1, 1), R64(2, 1, 4), R64(2, 0, 1),
                          R64(2, -2, 1)}};
    ts_check(&dyn);
    ch_spec bad = dyn;
    bad.out_dims[1] = 4; /* the run's bounds give [2,3] */
    ts_expect_run_error(&bad, "cpu: Slice: the bounds give [2,3], the output is [2,4]");
}

static void case_Gather(void)
{
    const ch_spec specs[] = {
        {.op = "Gather", .n_in = 2, .in = {T(2, 5, 3), C64(3, 4, -1, 0)}},
        {.op = "Gather", .n_in = 2, .in = {T(3, 2, 5, 3), {.ndim = 2, .dims = {2, 2},
                                           .dtype = {PL_TYPE_INT, 32, 1},
                                           .value = (const int32_t[]){-5, 4, 2, 2}}},
         .attrs = {AI("axis", -2)}, .n_attrs = 1},
        {.op = "Gather", .n_in = 2, .in = {T(2, 4, 3), {.ndim = 0, .dtype = {PL_TYPE_INT, 64, 1},
                                                        .value = (const int64_t[]){-1}}},
         .attrs = {AI("axis", 1)}, .n_attrs = 1},
        /* an embedding table, many rows; indices at run time */
        {.op = "Gather", .n_in = 2, .in = {T(2, 1000, 64), {.ndim = 2, .dims = {2, 3},
                                           .dtype = {PL_TYPE_INT, 64, 1}, .runtime = 1,
                                           .value = (const int64_t[]){999, 0, 17, -1, 500, 3}}}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
    ch_spec big = {.op = "Gather", .n_in = 2,
                   .in = {T(2, 5, 4), {.ndim = 1, .dims = {3}, .dtype = {PL_TYPE_INT, 32, 1},
                                       .runtime = 1, .value = (const int32_t[]){1, 5, 0}}}};
    ts_expect_run_error(&big, "index 5 (element 1 of the indices) is out of range");
    ch_spec neg = {.op = "Gather", .n_in = 2,
                   .in = {T(2, 5, 4), {.ndim = 1, .dims = {2}, .dtype = {PL_TYPE_INT, 64, 1},
                                       .runtime = 1, .value = (const int64_t[]){-6, 0}}}};
    ts_expect_run_error(&neg, "cpu: Gather: index -6 (element 0");
}

static void case_Expand(void)
{
    const ch_spec specs[] = {
        {.op = "Expand", .n_in = 2, .in = {T(2, 3, 1), C64(2, 3, 4)}},
        {.op = "Expand", .n_in = 2, .in = {T(2, 1, 4), C64(3, 2, 3, 1)}},
        {.op = "Expand", .n_in = 2, .in = {T0, C64(2, 2, 3)}},
        {.op = "Expand", .n_in = 2, .in = {T(3, 2, 1, 5), C64(1, 1)}},
        {.op = "Expand", .n_in = 2, .in = {T(2, 1, 300), C64(3, 4, 200, 300)}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Tile(void)
{
    const ch_spec specs[] = {
        {.op = "Tile", .n_in = 2, .in = {T(2, 2, 3), C64(2, 2, 3)}},
        {.op = "Tile", .n_in = 2, .in = {T(3, 2, 1, 3), C64(3, 1, 4, 1)}},
        {.op = "Tile", .n_in = 2, .in = {T(1, 5), C64(1, 0)}},
        {.op = "Tile", .n_in = 2, .in = {T(2, 50, 70), C64(2, 3, 5)}},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
}

static void case_Pad(void)
{
    const ch_spec specs[] = {
        {.op = "Pad", .n_in = 2, .in = {T(2, 3, 4), C64(4, 1, 2, 2, 0)}},
        {.op = "Pad", .n_in = 2, .in = {T(2, 3, 4), C64(4, 2, 3, 2, 3)},
         .attrs = {AS("mode", "reflect")}, .n_attrs = 1},
        {.op = "Pad", .n_in = 2, .in = {T(3, 2, 3, 4), C64(6, 0, 1, 5, 1, 0, 2)},
         .attrs = {AS("mode", "edge")}, .n_attrs = 1},
        {.op = "Pad", .n_in = 2, .in = {T(2, 5, 6), C64(4, -1, 2, -2, 1)}},    /* crop */
        /* the last axis cropped at both ends, cropped at one end and padded at
         * the other, and padded by more than its length (each row: copied
         * middle, mapped edges) */
        {.op = "Pad", .n_in = 2, .in = {T(2, 3, 7), C64(4, 1, -2, 0, -3)}},
        {.op = "Pad", .n_in = 2, .in = {T(2, 3, 7), C64(4, 0, -3, 1, 2)},
         .attrs = {AS("mode", "edge")}, .n_attrs = 1},
        {.op = "Pad", .n_in = 2, .in = {T(2, 2, 3), C64(4, 0, 9, 1, 5)}},
        {.op = "Pad", .n_in = 2, .in = {T(2, 2, 3), C64(4, 0, 7, 0, 8)},
         .attrs = {AS("mode", "reflect")}, .n_attrs = 1},
        {.op = "Pad", .n_in = 2, .in = {T(2, 1, 4), C64(4, 2, 1, 2, 1)},
         .attrs = {AS("mode", "reflect")}, .n_attrs = 1},
        {.op = "Pad", .n_in = 2, .in = {T(4, 2, 3, 64, 64), C64(8, 0, 0, 3, 3, 0, 0, 3, 3)},
         .attrs = {AS("mode", "reflect")}, .n_attrs = 1},
        {.op = "Pad", .opset = 18, .n_in = 4, .in = {T(3, 2, 3, 4), C64(2, 1, 2), ABSENT,
                                                     C64(1, -2)}},
        /* opset 19's wrap: pads within the length, beyond it (5 and 7 on
         * 2 and 3), and with crops, where the kept part is the period */
        {.op = "Pad", .opset = 19, .n_in = 2, .in = {T(2, 3, 4), C64(4, 1, 2, 2, 3)},
         .attrs = {AS("mode", "wrap")}, .n_attrs = 1},
        {.op = "Pad", .opset = 19, .n_in = 2, .in = {T(2, 2, 3), C64(4, 5, 0, 0, 7)},
         .attrs = {AS("mode", "wrap")}, .n_attrs = 1},
        {.op = "Pad", .opset = 19, .n_in = 2, .in = {T(3, 2, 5, 6), C64(6, 0, -1, 2, 1, 3, -2)},
         .attrs = {AS("mode", "wrap")}, .n_attrs = 1},
    };
    ts_check_all_dtypes(specs, CH_COUNT(specs));
    /* a constant value: an input of the data's dtype (opset 11) or the
     * attribute (opset 2 semantics, f32) */
    static const float seven = 7.5f;
    ch_spec cv = {.op = "Pad", .n_in = 3, .in = {T(2, 3, 4), C64(4, 1, 1, 1, 1),
                                                 {.ndim = 0, .value = &seven}}};
    ts_check(&cv);
    ch_spec cv_run = cv;
    cv_run.in[2].runtime = 1;
    ts_check(&cv_run);
    ch_spec attr = {.op = "Pad", .opset = 7, .n_in = 1, .in = {T(2, 3, 4)},
                    .attrs = {AIS("pads", 4, 0, 2, 1, 0), AF("value", -3.25)}, .n_attrs = 2};
    ts_check(&attr);
}

/* ---- small tensors ------------------------------------------------------- */

static void ts_expect_i64(const ch_spec *spec, const int64_t *want, size_t n)
{
    ts_exec e;
    ts_exec_prepare(spec, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    CHECK(e.out[0].bytes == n * 8, "%s: %zu bytes, expected %zu", spec->op, e.out[0].bytes, n * 8);
    for (size_t i = 0; i < n; i++)
        CHECK(ts_int(PL_DTYPE_I64, e.out[0].data, i) == want[i], "%s: value %zu is %lld, not %lld",
              spec->op, i, (long long)ts_int(PL_DTYPE_I64, e.out[0].data, i), (long long)want[i]);
    ts_exec_free(&e);
}

static void case_Shape(void)
{
    for (size_t d = 0; d < CH_COUNT(ts_dtypes); d++) {
        ch_spec s = {.op = "Shape", .n_in = 1, .in = {T(4, 2, 3, 0, 5)}, .dtype = ts_dtypes[d]};
        ts_expect_i64(&s, (const int64_t[]){2, 3, 0, 5}, 4);
    }
    ch_spec s15 = {.op = "Shape", .opset = 15, .n_in = 1, .in = {T(4, 2, 3, 4, 5)},
                   .attrs = {AI("start", 1), AI("end", -1)}, .n_attrs = 2};
    ts_expect_i64(&s15, (const int64_t[]){3, 4}, 2);
    ch_spec s15b = {.op = "Shape", .opset = 15, .n_in = 1, .in = {T(4, 2, 3, 4, 5)},
                    .attrs = {AI("start", -10)}, .n_attrs = 1};
    ts_expect_i64(&s15b, (const int64_t[]){2, 3, 4, 5}, 4);
    ch_spec scalar = {.op = "Shape", .n_in = 1, .in = {T0}};
    ts_expect_i64(&scalar, NULL, 0);
}

static void case_ConstantOfShape(void)
{
    /* default: f32 zeros */
    ch_spec z = {.op = "ConstantOfShape", .n_in = 1, .in = {C64(2, 3, 4)}};
    ts_exec e;
    ts_exec_prepare(&z, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    for (size_t i = 0; i < 12; i++) {
        float v;
        memcpy(&v, e.out[0].data + i * 4, 4);
        CHECK(v == 0.0f && !signbit(v), "ConstantOfShape default: %g", (double)v);
    }
    ts_exec_free(&e);
    /* every dtype, from a value attribute: 8 bytes of pattern */
    for (size_t d = 0; d < CH_COUNT(ts_dtypes); d++) {
        ch_spec s = {.op = "ConstantOfShape", .n_in = 1, .in = {C64(3, 2, 5, 7)}, .n_attrs = 1,
                     .attrs = {{.name = "value", .kind = 't', .tdtype = ts_dtypes[d],
                                .tbytes = {1, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x7f}}}};
        ts_exec_prepare(&s, &e);
        CHECK_OK(ts_exec_run(&e, NULL));
        size_t es = pl_dtype_size(ts_dtypes[d]);
        CHECK(e.out[0].bytes == 70 * es, "ConstantOfShape: %zu bytes", e.out[0].bytes);
        for (size_t i = 0; i < 70; i++)
            CHECK(memcmp(e.out[0].data + i * es, s.attrs[0].tbytes, es) == 0,
                  "ConstantOfShape dtype %zu: element %zu wrong", d, i);
        ts_exec_free(&e);
    }
    ch_spec empty = {.op = "ConstantOfShape", .n_in = 1, .in = {C64(2, 0, 3)}};
    ts_exec_prepare(&empty, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    ts_exec_free(&e);
}

static void case_Range(void)
{
    /* i64 and i32, constants (the output's size is known) */
    ch_spec a = {.op = "Range", .n_in = 3, .dtype = PL_DTYPE_I64,
                 .in = {{.ndim = 0, .value = (const int64_t[]){10}},
                        {.ndim = 0, .value = (const int64_t[]){-3}},
                        {.ndim = 0, .value = (const int64_t[]){-4}}}};
    ts_expect_i64(&a, (const int64_t[]){10, 6, 2, -2}, 4);
    ch_spec b = {.op = "Range", .n_in = 3, .dtype = PL_DTYPE_I32,
                 .in = {{.ndim = 0, .value = (const int32_t[]){1}},
                        {.ndim = 0, .value = (const int32_t[]){8}},
                        {.ndim = 0, .value = (const int32_t[]){3}}}};
    ts_exec e;
    ts_exec_prepare(&b, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    CHECK(e.out[0].bytes == 12 && ts_int(PL_DTYPE_I32, e.out[0].data, 0) == 1 &&
              ts_int(PL_DTYPE_I32, e.out[0].data, 1) == 4 &&
              ts_int(PL_DTYPE_I32, e.out[0].data, 2) == 7, "Range i32 wrong");
    ts_exec_free(&e);
    /* f32: start + i * delta */
    ch_spec f = {.op = "Range", .n_in = 3,
                 .in = {{.ndim = 0, .value = (const float[]){0.5f}},
                        {.ndim = 0, .value = (const float[]){2.0f}},
                        {.ndim = 0, .value = (const float[]){0.3f}}}};
    ts_exec_prepare(&f, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    CHECK(e.out[0].bytes == 5 * 4, "Range f32: %zu bytes", e.out[0].bytes);
    for (int i = 0; i < 5; i++) {
        float v, want = 0.5f + (float)i * 0.3f;
        memcpy(&v, e.out[0].data + i * 4, 4);
        CHECK(v == want, "Range f32: element %d is %g, not %g", i, (double)v, (double)want);
    }
    ts_exec_free(&e);
    /* values at run time that disagree with the declared size */
    ch_spec run = {.op = "Range", .n_in = 3, .dtype = PL_DTYPE_I64, .out_ndim = 1,
                   .out_dims = {3},
                   .in = {{.ndim = 0, .runtime = 1, .value = (const int64_t[]){0}},
                          {.ndim = 0, .runtime = 1, .value = (const int64_t[]){10}},
                          {.ndim = 0, .runtime = 1, .value = (const int64_t[]){2}}}};
    ts_expect_run_error(&run, "cpu: Range: start 0, limit 10 and delta 2 give 5 values");
}

/* ---- Cast ------------------------------------------------------------------ */

/* Casts N elements at SRC (FROM) to TO; the bytes land in OUT. */
static void ts_cast(pl_dtype from, const void *src, size_t n, pl_dtype to, void *out)
{
    static const int onnx[][3] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_UINT, 8, 2},
                                  {PL_TYPE_INT, 8, 3},    {PL_TYPE_INT, 32, 6},
                                  {PL_TYPE_INT, 64, 7},   {PL_TYPE_BOOL, 8, 9},
                                  {PL_TYPE_FLOAT, 16, 10}, {PL_TYPE_FLOAT, 64, 11},
                                  {PL_TYPE_BFLOAT, 16, 16}};
    int64_t code = 0;
    for (size_t i = 0; i < CH_COUNT(onnx); i++)
        if (onnx[i][0] == to.code && onnx[i][1] == to.bits)
            code = onnx[i][2];
    ch_spec s = {.op = "Cast", .n_in = 1, .dtype = from, .attrs = {AI("to", code)}, .n_attrs = 1,
                 .in = {{.ndim = 1, .dims = {(int64_t)n}, .runtime = 1, .value = src}}};
    ts_exec e;
    ts_exec_prepare(&s, &e);
    CHECK(PL_DTYPE_EQ(e.n.out[0].dtype, to), "Cast: inferred output dtype differs");
    CHECK_OK(ts_exec_run(&e, NULL));
    memcpy(out, e.out[0].data, n * pl_dtype_size(to));
    ts_exec_free(&e);
}

/* What Cast of V (exact in FROM) to TO gives, computed here: floats to
 * integers truncate (the values stay in range), integers wrap, anything
 * to bool is != 0, f16 and bf16 round to nearest even. */
static double ts_cast_expect(pl_dtype from, double v, pl_dtype to)
{
    int64_t i = (int64_t)trunc(v);
    (void)from;
    if (PL_DTYPE_EQ(to, PL_DTYPE_BOOL))
        return v != 0;
    if (PL_DTYPE_EQ(to, PL_DTYPE_F32))
        return (float)v;
    if (PL_DTYPE_EQ(to, PL_DTYPE_F16))
        return ch_f16_value(ch_f16_bits(v));
    if (PL_DTYPE_EQ(to, PL_DTYPE_BF16))
        return ch_bf16_value(ch_bf16_bits(v));
    if (PL_DTYPE_EQ(to, PL_DTYPE_U8))
        return (uint8_t)(uint64_t)i;
    if (PL_DTYPE_EQ(to, PL_DTYPE_I8))
        return (int8_t)(uint8_t)(uint64_t)i;
    if (PL_DTYPE_EQ(to, PL_DTYPE_I32))
        return (int32_t)(uint32_t)(uint64_t)i;
    return PL_DTYPE_EQ(to, PL_DTYPE_I64) ? (double)i : v;
}

/* Every pair of the nine dtypes, on values each source holds exactly. */
static void case_Cast_pairs(void)
{
    static const pl_dtype all[] = {
        {PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_FLOAT, 16, 1},
        {PL_TYPE_BFLOAT, 16, 1}, {PL_TYPE_UINT, 8, 1},  {PL_TYPE_INT, 8, 1},
        {PL_TYPE_INT, 32, 1},   {PL_TYPE_INT, 64, 1},   {PL_TYPE_BOOL, 8, 1}};
    static const double floats[] = {0, 1, -1, 2.5, -2.75, 100.5, 0.1, 120};
    static const double sints[] = {0, 1, -1, 100, -100, 127, -128, 64};
    static const double uints[] = {0, 1, 255, 100, 128, 200, 7, 64};
    static const double bools[] = {0, 1, 1, 0, 1, 0, 0, 1};
    for (size_t f = 0; f < CH_COUNT(all); f++)
        for (size_t t = 0; t < CH_COUNT(all); t++) {
            pl_dtype from = all[f], to = all[t];
            const double *v = from.code == PL_TYPE_BOOL   ? bools
                              : from.code == PL_TYPE_UINT ? uints
                              : from.code == PL_TYPE_INT  ? sints
                                                          : floats;
            unsigned char src[8 * 8], dst[8 * 8];
            for (size_t i = 0; i < 8; i++)
                ch_store(src, from, i, v[i]);
            ts_cast(from, src, 8, to, dst);
            for (size_t i = 0; i < 8; i++) {
                double want = ts_cast_expect(from, ch_load(src, from, i), to);
                double got = ch_load(dst, to, i);
                CHECK(got == want, "Cast %s -> %s of %.9g: %.9g, expected %.9g",
                      pl_dtype_name(from), pl_dtype_name(to), ch_load(src, from, i), got, want);
            }
        }
}

static void case_Cast(void)
{
    /* f32 -> integers: truncation toward zero; -> bool: != 0 */
    const float f[] = {2.9f, -2.9f, 0.5f, -0.5f, 0.0f, 100.0f, -7.0f};
    int64_t i64[7];
    ts_cast(PL_DTYPE_F32, f, 7, PL_DTYPE_I64, i64);
    const int64_t want64[] = {2, -2, 0, 0, 0, 100, -7};
    CHECK(memcmp(i64, want64, sizeof want64) == 0, "f32 -> i64 wrong");
    int32_t i32[7];
    ts_cast(PL_DTYPE_F32, f, 7, PL_DTYPE_I32, i32);
    for (int i = 0; i < 7; i++)
        CHECK(i32[i] == (int32_t)want64[i], "f32 -> i32 element %d: %d", i, i32[i]);
    int8_t i8[7];
    ts_cast(PL_DTYPE_F32, f, 7, PL_DTYPE_I8, i8);
    CHECK(i8[0] == 2 && i8[1] == -2 && i8[5] == 100 && i8[6] == -7, "f32 -> i8 wrong");
    unsigned char b[7];
    ts_cast(PL_DTYPE_F32, f, 7, PL_DTYPE_BOOL, b);
    const unsigned char wantb[] = {1, 1, 1, 1, 0, 1, 1};
    CHECK(memcmp(b, wantb, 7) == 0, "f32 -> bool wrong");
    /* integers wrap; bool -> f32 is 0 or 1 */
    const int64_t big[] = {300, -1, 65537, -129};
    uint8_t u8[4];
    ts_cast(PL_DTYPE_I64, big, 4, PL_DTYPE_U8, u8);
    CHECK(u8[0] == 44 && u8[1] == 255 && u8[2] == 1 && u8[3] == 127, "i64 -> u8 wrong");
    float fb[7];
    ts_cast(PL_DTYPE_BOOL, wantb, 7, PL_DTYPE_F32, fb);
    for (int i = 0; i < 7; i++)
        CHECK(fb[i] == (float)wantb[i], "bool -> f32 element %d", i);
    const int64_t exact[] = {16777217, -3, 1 << 20};
    float fe[3];
    ts_cast(PL_DTYPE_I64, exact, 3, PL_DTYPE_F32, fe);
    CHECK(fe[0] == 16777216.0f && fe[1] == -3.0f && fe[2] == 1048576.0f, "i64 -> f32 wrong");
    /* f32 -> i32 past the range: saturate to i64, then wrap (the typed
     * loop's edges); NaN gives 0; i64 -> i32 wraps */
    const float edge[] = {2147483520.0f, 2147483648.0f, -2147483648.0f, -2147483904.0f,
                          3e9f, NAN, -3e9f, 1e30f};
    int32_t ie[8];
    ts_cast(PL_DTYPE_F32, edge, 8, PL_DTYPE_I32, ie);
    const int32_t want_e[] = {2147483520, INT32_MIN, INT32_MIN, 2147483392,
                              (int32_t)(uint32_t)3000000000u, 0, (int32_t)1294967296, -1};
    for (int i = 0; i < 8; i++)
        CHECK(ie[i] == want_e[i], "f32 -> i32 of %g: %d, expected %d", (double)edge[i], ie[i],
              want_e[i]);
    const int64_t wide[] = {4294967297LL, -4294967297LL, INT64_MAX};
    int32_t iw[3];
    ts_cast(PL_DTYPE_I64, wide, 3, PL_DTYPE_I32, iw);
    CHECK(iw[0] == 1 && iw[1] == -1 && iw[2] == -1, "i64 -> i32 does not wrap");

    /* f16: specials and rounding, by their bits */
    const float hs[] = {1.0f, -2.0f, 65504.0f, 65520.0f, 5.9604645e-08f, 2.9802322e-08f,
                        2.9802326e-08f, 1.0009765625f, 1.00048828125f, 1.00146484375f,
                        INFINITY, -INFINITY, 0.0f, -0.0f, 6.1035156e-05f, 0.333333343f};
    const uint16_t want_h[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0001, 0x3c01,
                               0x3c00, 0x3c02, 0x7c00, 0xfc00, 0x0000, 0x8000, 0x0400, 0x3555};
    uint16_t h[16];
    ts_cast(PL_DTYPE_F32, hs, 16, PL_DTYPE_F16, h);
    for (int i = 0; i < 16; i++)
        CHECK(h[i] == want_h[i], "f32 %.9g -> f16: 0x%04x, expected 0x%04x", (double)hs[i], h[i],
              want_h[i]);
    float back[16];
    ts_cast(PL_DTYPE_F16, want_h, 16, PL_DTYPE_F32, back);
    CHECK(back[0] == 1.0f && back[2] == 65504.0f && back[4] == 5.9604645e-08f &&
              isinf(back[10]) && back[13] == 0.0f && signbit(back[13]) &&
              back[14] == 6.1035156e-05f, "f16 -> f32 wrong");
    const uint16_t hnan = 0x7e00;
    float fnan;
    ts_cast(PL_DTYPE_F16, &hnan, 1, PL_DTYPE_F32, &fnan);
    CHECK(isnan(fnan), "f16 NaN -> f32 is not NaN");
    const float nan = NAN;
    ts_cast(PL_DTYPE_F32, &nan, 1, PL_DTYPE_F16, h);
    CHECK((h[0] & 0x7c00) == 0x7c00 && (h[0] & 0x3ff) != 0, "f32 NaN -> f16: 0x%04x", h[0]);
    ts_cast(PL_DTYPE_F32, &nan, 1, PL_DTYPE_BF16, h);
    CHECK((h[0] & 0x7f80) == 0x7f80 && (h[0] & 0x7f) != 0, "f32 NaN -> bf16: 0x%04x", h[0]);

    /* bf16: round to nearest even on the top 16 bits */
    const uint32_t fbits[] = {0x3f800000, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff,
                              0x00000001, 0xc0490fdb};
    const uint16_t want_bf[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x0000, 0xc049};
    float fv[7];
    memcpy(fv, fbits, sizeof fv);
    uint16_t bf[7];
    ts_cast(PL_DTYPE_F32, fv, 7, PL_DTYPE_BF16, bf);
    for (int i = 0; i < 7; i++)
        CHECK(bf[i] == want_bf[i], "f32 0x%08x -> bf16: 0x%04x, expected 0x%04x", fbits[i],
              bf[i], want_bf[i]);
    float fbf[7];
    ts_cast(PL_DTYPE_BF16, want_bf, 7, PL_DTYPE_F32, fbf);
    for (int i = 0; i < 7; i++) {
        uint32_t u;
        memcpy(&u, &fbf[i], 4);
        CHECK(u == (uint32_t)want_bf[i] << 16, "bf16 0x%04x -> f32 0x%08x", want_bf[i], u);
    }

    /* round trips through every dtype: small integers survive them all */
    float small[64];
    for (int i = 0; i < 64; i++)
        small[i] = (float)i;
    for (size_t d = 0; d < CH_COUNT(ts_dtypes); d++) {
        char mid[64 * 8];
        float again[64];
        ts_cast(PL_DTYPE_F32, small, 64, ts_dtypes[d], mid);
        ts_cast(ts_dtypes[d], mid, 64, PL_DTYPE_F32, again);
        bool is_bool = PL_DTYPE_EQ(ts_dtypes[d], PL_DTYPE_BOOL);
        for (int i = 0; i < 64; i++) {
            float want = is_bool ? (small[i] != 0) : small[i];
            CHECK(again[i] == want, "f32 -> dtype %zu -> f32: %g became %g", d, (double)small[i],
                  (double)again[i]);
        }
    }
    /* every f16 value survives f16 -> f64 -> f16 and f16 -> f32 -> f16 */
    static uint16_t all[65536], out16[65536];
    static double dv[65536];
    static float f32v[65536];
    for (int i = 0; i < 65536; i++)
        all[i] = (uint16_t)i;
    ts_cast(PL_DTYPE_F16, all, 65536, PL_DTYPE_F64, dv);
    ts_cast(PL_DTYPE_F64, dv, 65536, PL_DTYPE_F16, out16);
    for (int i = 0; i < 65536; i++) {
        bool is_nan = (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0;
        CHECK(is_nan ? isnan(dv[i]) : out16[i] == all[i], "f16 0x%04x round trip gave 0x%04x",
              i, out16[i]);
    }
    ts_cast(PL_DTYPE_BF16, all, 65536, PL_DTYPE_F32, f32v);
    ts_cast(PL_DTYPE_F32, f32v, 65536, PL_DTYPE_BF16, out16);
    for (int i = 0; i < 65536; i++) {
        bool is_nan = (i & 0x7f80) == 0x7f80 && (i & 0x7f) != 0;
        CHECK(is_nan || out16[i] == all[i], "bf16 0x%04x round trip gave 0x%04x", i, out16[i]);
    }
}

/* ---- Resize ---------------------------------------------------------------- */

/* The reference: ONNX's formulas, in double. */
static double ts_resize_coord(const char *mode, int64_t i, int64_t in, int64_t out, double scale)
{
    if (!strcmp(mode, "half_pixel"))
        return (i + 0.5) / scale - 0.5;
    if (!strcmp(mode, "pytorch_half_pixel"))
        return out > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
    if (!strcmp(mode, "align_corners"))
        return out == 1 ? 0.0 : (double)i * (double)(in - 1) / (double)(out - 1);
    return i / scale;
}

static int64_t ts_resize_nearest(const char *mode, double x)
{
    double fl = floor(x);
    if (!strcmp(mode, "floor"))
        return (int64_t)fl;
    if (!strcmp(mode, "ceil"))
        return (int64_t)ceil(x);
    if (x - fl == 0.5)
        return (int64_t)(!strcmp(mode, "round_prefer_ceil") ? fl + 1 : fl);
    return (int64_t)floor(x + 0.5);
}

static void ts_check_resize(const ch_spec *spec, const double *scales_or_null)
{
    ts_exec e;
    ts_exec_prepare(spec, &e);
    CHECK_OK(ts_exec_run(&e, NULL));
    const int64_t *xd = e.n.in[0].shape, *od = e.n.out[0].shape;
    int r = e.n.in[0].ndim;
    int opset = spec->opset ? spec->opset : 13;
    const char *mode = ch_attr_s(spec, "mode", "nearest");
    const char *coord = opset < 11 ? "asymmetric"
                                   : ch_attr_s(spec, "coordinate_transformation_mode", "half_pixel");
    const char *nmode = opset < 11 ? "floor" : ch_attr_s(spec, "nearest_mode", "round_prefer_floor");
    const float *x = (const float *)(const void *)e.in[0].data;
    const float *y = (const float *)(const void *)e.out[0].data;
    int64_t idx[CH_MAX_RANK];
    for (size_t i = 0; i < ch_count(od, r); i++) {
        ch_unravel(i, od, r, idx);
        /* corners: each axis gives one or two (index, weight) */
        int64_t lo[CH_MAX_RANK], hi[CH_MAX_RANK];
        double w[CH_MAX_RANK];
        for (int d = 0; d < r; d++) {
            double sc = scales_or_null ? scales_or_null[d] : (double)od[d] / (double)xd[d];
            double c = ts_resize_coord(coord, idx[d], xd[d], od[d], sc);
            if (xd[d] == od[d] && sc == 1.0)
                c = (double)idx[d];
            if (mode[0] == 'n') {
                int64_t j = ts_resize_nearest(nmode, c);
                lo[d] = hi[d] = j < 0 ? 0 : j >= xd[d] ? xd[d] - 1 : j;
                w[d] = 0;
            } else {
                double fl = floor(c);
                lo[d] = (int64_t)fl;
                hi[d] = lo[d] + 1;
                w[d] = c - fl;
                lo[d] = lo[d] < 0 ? 0 : lo[d] >= xd[d] ? xd[d] - 1 : lo[d];
                hi[d] = hi[d] < 0 ? 0 : hi[d] >= xd[d] ? xd[d] - 1 : hi[d];
            }
        }
        double want = 0, mag = 0;
        for (int corner = 0; corner < (1 << r); corner++) {
            double wt = 1;
            int64_t at[CH_MAX_RANK];
            for (int d = 0; d < r; d++) {
                bool up = (corner >> d) & 1;
                wt *= up ? w[d] : 1 - w[d];
                at[d] = up ? hi[d] : lo[d];
            }
            if (wt == 0)
                continue;
            double v = x[ch_ravel(at, xd, r)];
            want += wt * v;
            mag += fabs(wt * v);
        }
        CHECK(fabs(y[i] - want) <= 1e-5 * mag + 1e-6,
              "Resize %s/%s/%s: element %zu is %.9g, expected %.9g", mode, coord, nmode, i,
              (double)y[i], want);
    }
    ts_exec_free(&e);
}

static void case_Resize(void)
{
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    static const float up[] = {1.0f, 1.0f, 2.0f, 2.5f}, down[] = {1.0f, 1.0f, 0.6f, 0.5f};
    static const double upd[] = {1.0, 1.0, 2.0, 2.5}, downd[] = {1.0, 1.0, 0.6f, 0.5};
    for (size_t c = 0; c < CH_COUNT(coords); c++) {
        for (size_t n = 0; n < CH_COUNT(nearests); n++) {
            for (int dir = 0; dir < 2; dir++) {
                ch_spec s = {.op = "Resize", .opset = 13, .n_in = 3,
                             .in = {T(4, 2, 3, 5, 4), ABSENT,
                                    {.ndim = 1, .dims = {4}, .value = dir ? down : up}},
                             .attrs = {AS("mode", "nearest"),
                                       AS("coordinate_transformation_mode", coords[c]),
                                       AS("nearest_mode", nearests[n])},
                             .n_attrs = 3};
                ts_check_resize(&s, dir ? downd : upd);
            }
        }
        for (int dir = 0; dir < 2; dir++) {
            ch_spec s = {.op = "Resize", .opset = 13, .n_in = 3,
                         .in = {T(4, 2, 3, 5, 4), ABSENT,
                                {.ndim = 1, .dims = {4}, .value = dir ? down : up}},
                         .attrs = {AS("mode", "linear"),
                                   AS("coordinate_transformation_mode", coords[c])},
                         .n_attrs = 2};
            ts_check_resize(&s, dir ? downd : upd);
            /* sizes instead of scales */
            ch_spec z = {.op = "Resize", .opset = 11, .n_in = 4,
                         .in = {T(4, 1, 2, 7, 6), C64(0), C64(0), C64(4, 1, 2, 3, 13)},
                         .attrs = {AS("mode", dir ? "linear" : "nearest"),
                                   AS("coordinate_transformation_mode", coords[c])},
                         .n_attrs = 2};
            z.in[1] = (ch_in){.ndim = 1, .dims = {0}, .value = up};
            z.in[2] = (ch_in){.ndim = 1, .dims = {0}, .value = up};
            ts_check_resize(&z, NULL);
        }
    }
    /* 1-D and 3-D (trilinear on NCDHW) linear, and a big one */
    ch_spec one = {.op = "Resize", .n_in = 4,
                   .in = {T(1, 9), ABSENT, ABSENT, C64(1, 20)},
                   .attrs = {AS("mode", "linear")}, .n_attrs = 1};
    ts_check_resize(&one, NULL);
    ch_spec three = {.op = "Resize", .n_in = 4,
                     .in = {T(5, 1, 2, 3, 4, 5), ABSENT, ABSENT, C64(5, 1, 2, 5, 7, 3)},
                     .attrs = {AS("mode", "linear")}, .n_attrs = 1};
    ts_check_resize(&three, NULL);
    ch_spec big = {.op = "Resize", .n_in = 4,
                   .in = {T(4, 2, 8, 64, 48), ABSENT, ABSENT, C64(4, 2, 8, 128, 96)},
                   .attrs = {AS("mode", "linear"), AS("coordinate_transformation_mode",
                                                      "align_corners")},
                   .n_attrs = 2};
    ts_check_resize(&big, NULL);
    /* Nearest on u8 (a QOperator model resizes its quantized tensors) and
     * i64: the same picks as on f32, byte for byte. */
    {
        uint8_t xu[2 * 3 * 4];
        int64_t xl[2 * 3 * 4];
        float xf[2 * 3 * 4];
        for (int i = 0; i < 24; i++)
            xu[i] = (uint8_t)(i * 7 + 3), xl[i] = (int64_t)i * 1000003, xf[i] = (float)xu[i];
        static const pl_dtype dts[3] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_UINT, 8, 1},
                                        {PL_TYPE_INT, 64, 1}};
        const void *xs[3] = {xf, xu, xl};
        ts_exec e[3];
        for (int k = 0; k < 3; k++) {
            ch_spec s = {.op = "Resize", .opset = 13, .n_in = 3, .dtype = dts[k],
                         .in = {{.ndim = 4, .dims = {1, 2, 3, 4}, .dtype = dts[k], .value = xs[k]},
                                ABSENT, {.ndim = 1, .dims = {4}, .dtype = dts[0], .value = up}},
                         .attrs = {AS("mode", "nearest"),
                                   AS("coordinate_transformation_mode", "asymmetric"),
                                   AS("nearest_mode", "floor")},
                         .n_attrs = 3};
            ts_exec_prepare(&s, &e[k]);
            CHECK_OK(ts_exec_run(&e[k], NULL));
        }
        size_t n = e[0].out[0].bytes / 4;
        CHECK(n == 2 * 6 * 10 && e[1].out[0].bytes == n && e[2].out[0].bytes == 8 * n,
              "Resize u8/i64: %zu, %zu and %zu bytes", e[0].out[0].bytes, e[1].out[0].bytes,
              e[2].out[0].bytes);
        for (size_t i = 0; i < n; i++) {
            float f;
            int64_t l;
            memcpy(&f, e[0].out[0].data + i * 4, 4);
            memcpy(&l, e[2].out[0].data + i * 8, 8);
            uint8_t u = ((const uint8_t *)e[1].out[0].data)[i];
            CHECK((float)u == f && l == (int64_t)(u - 3) / 7 * 1000003,
                  "Resize u8/i64: element %zu is %u / %lld, f32 says %g", i, u, (long long)l,
                  (double)f);
        }
        for (int k = 0; k < 3; k++)
            ts_exec_free(&e[k]);
        ch_spec lin = {.op = "Resize", .opset = 13, .n_in = 3, .dtype = dts[1],
                       .in = {{.ndim = 4, .dims = {1, 2, 3, 4}, .dtype = dts[1], .value = xu},
                              ABSENT, {.ndim = 1, .dims = {4}, .dtype = dts[0], .value = up}},
                       .attrs = {AS("mode", "linear")}, .n_attrs = 1};
        ts_expect_refusal(&lin, "linear and cubic modes take f32 data only");
    }
    /* opset 10: scales, asymmetric, nearest rounds down */
    ch_spec v10 = {.op = "Resize", .opset = 10, .n_in = 2,
                   .in = {T(4, 1, 2, 3, 4), {.ndim = 1, .dims = {4}, .value = up}}};
    ts_check_resize(&v10, upd);
    /* cubic runs over two resized axes (its results are checked against
     * ONNX's reference by the conformance tests resize_*_cubic*); three are
     * refused */
    ch_spec cubic = {.op = "Resize", .n_in = 4,
                     .in = {T(5, 1, 2, 3, 4, 5), ABSENT, ABSENT, C64(5, 1, 2, 5, 7, 3)},
                     .attrs = {AS("mode", "cubic")}, .n_attrs = 1};
    ts_expect_refusal(&cubic, "cpu: Resize: cubic mode over 3 resized axes (at most 2)");
}

/* ---- output requests ------------------------------------------------------ */

/* Add-to (f32 and i32), a skipped output, in place and aliased copies. */
static void case_requests(void)
{
    const ch_spec specs[] = {
        {.op = "Transpose", .n_in = 1, .in = {T(3, 4, 5, 6)}},
        {.op = "Gather", .n_in = 2, .in = {T(2, 5, 3), C64(3, 4, -1, 0)}},
        {.op = "Pad", .n_in = 2, .in = {T(2, 3, 4), C64(4, 1, 2, 2, 0)}},
        {.op = "Reshape", .n_in = 2, .in = {T(3, 2, 3, 4), C64(2, 6, -1)}},
    };
    for (size_t i = 0; i < CH_COUNT(specs); i++)
        for (int t = 0; t < 2; t++) {
            ch_spec s = specs[i];
            s.dtype = t ? PL_DTYPE_I32 : PL_DTYPE_F32;
            ts_exec e;
            ts_exec_prepare(&s, &e);
            size_t n = e.out[0].bytes / 4;
            char *ref = malloc(n * 4), *before = malloc(n * 4);
            CHECK(ref && before, "out of memory");
            ts_reference(&e, 0, ref);
            if (t)
                for (size_t j = 0; j < n; j++)
                    ((int32_t *)(void *)e.out[0].data)[j] = (int32_t)(ch_bits() % 1000);
            else
                ts_fill(PL_DTYPE_F32, e.out[0].data, n);
            memcpy(before, e.out[0].data, n * 4);
            pl_output_request add = PL_REQ_ADD_TO;
            CHECK_OK(ts_exec_run(&e, &add));
            for (size_t j = 0; j < n; j++) {
                if (t) {
                    int32_t a, b, g;
                    memcpy(&a, ref + j * 4, 4);
                    memcpy(&b, before + j * 4, 4);
                    memcpy(&g, e.out[0].data + j * 4, 4);
                    CHECK(g == (int32_t)((uint32_t)a + (uint32_t)b), "%s add_to i32 wrong", s.op);
                } else {
                    float a, b, g;
                    memcpy(&a, ref + j * 4, 4);
                    memcpy(&b, before + j * 4, 4);
                    memcpy(&g, e.out[0].data + j * 4, 4);
                    CHECK(g == a + b, "%s add_to f32: element %zu is %g, expected %g", s.op, j,
                          (double)g, (double)(a + b));
                }
            }
            /* a skipped output is not touched */
            memcpy(before, e.out[0].data, n * 4);
            pl_output_request skip = PL_REQ_NULL;
            CHECK_OK(ts_exec_run(&e, &skip));
            CHECK(memcmp(before, e.out[0].data, n * 4) == 0, "%s: skipped output written", s.op);
            /* in place: only the copies */
            pl_output_request inplace = PL_REQ_INPLACE;
            pl_status *st = ts_exec_run(&e, &inplace);
            bool copy = strcmp(s.op, "Reshape") == 0;
            CHECK(copy ? st == NULL : st != NULL, "%s: in place %s", s.op,
                  copy ? "refused" : "accepted");
            pl_status_free(st);
            free(ref);
            free(before);
            ts_exec_free(&e);
        }
    /* a copy whose output is its input's buffer, and Dropout in place with
     * its mask written */
    const ch_spec copies[] = {
        {.op = "Identity", .n_in = 1, .in = {T(2, 7, 9)}, .dtype = {PL_TYPE_INT, 8, 1}},
        {.op = "Dropout", .n_in = 1, .n_out = 2, .in = {T(2, 7, 9)}},
        {.op = "Unsqueeze", .n_in = 2, .in = {T(2, 3, 4), C64(1, 0)}, .dtype = {PL_TYPE_FLOAT, 16, 1}},
    };
    for (size_t i = 0; i < CH_COUNT(copies); i++) {
        for (int mode = 0; mode < 2; mode++) {
            ts_exec e;
            ts_exec_prepare(&copies[i], &e);
            size_t bytes = e.in[0].bytes;
            char *keep = malloc(bytes);
            CHECK(keep != NULL, "out of memory");
            memcpy(keep, e.in[0].data, bytes);
            e.outs[0].data = e.ins[0].data;
            e.outs[0].byte_offset = e.ins[0].byte_offset;
            pl_output_request reqs[2] = {mode ? PL_REQ_INPLACE : PL_REQ_WRITE, PL_REQ_WRITE};
            CHECK_OK(ts_exec_run(&e, reqs));
            CHECK(memcmp(keep, e.in[0].data, bytes) == 0, "%s: aliased copy changed the data",
                  copies[i].op);
            if (e.n_out == 2)
                for (size_t j = 0; j < e.out[1].bytes; j++)
                    CHECK(e.out[1].data[j] == 1, "Dropout mask element %zu is not 1", j);
            free(keep);
            ts_exec_free(&e);
        }
    }
}

static const struct {
    const char *name;
    void (*run)(void);
} ts_cases[] = {
    {"Reshape", case_Reshape},     {"Flatten", case_Flatten},
    {"Identity", case_Identity},   {"Squeeze", case_Squeeze},
    {"Unsqueeze", case_Unsqueeze}, {"Dropout", case_Dropout},
    {"DropoutTraining", case_DropoutTraining},
    {"Transpose", case_Transpose}, {"Concat", case_Concat},
    {"Split", case_Split},         {"Slice", case_Slice},
    {"Gather", case_Gather},       {"Expand", case_Expand},
    {"Pad", case_Pad},             {"Tile", case_Tile},
    {"Shape", case_Shape},         {"ConstantOfShape", case_ConstantOfShape},
    {"Range", case_Range},         {"Cast", case_Cast}, {"Cast_pairs", case_Cast_pairs},
    {"Resize", case_Resize},       {"requests", case_requests},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < CH_COUNT(ts_cases); i++) {
        if (strcmp(argv[1], ts_cases[i].name) != 0)
            continue;
        ch_setup(argv[2]);
        ts_cases[i].run();
        ch_teardown();
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
