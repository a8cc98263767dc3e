/* test_cpu_math.c — the cpu module's math family (modules/cpu/math*.c),
 * driven the way the core drives it: a one-node graph with shapes inferred
 * by the core's opset, a view of it, a pl_node_desc, then get_kernel and
 * kernel_run through the module's table. Every kernel is compared with a
 * plain reference loop written here (in double, or in int64 for integer
 * dtypes) on shapes with broadcasting corners, negative axes, keepdims,
 * absent optional inputs and outputs, integer and bool dtypes; then the
 * output requests (add-to, in place) and the refusals. Built on the
 * shared harness of tests/cpu_harness. Usage: test_cpu_math CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_harness.h"

/* Fills input I of SPEC: values the op is defined on, equalities for the
 * comparisons, nonzero integer divisors. */
static void tm_fill(const ch_spec *s, int i, pl_dtype dt, void *x, size_t n)
{
    const char *op = s->op;
    bool compare = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater");
    for (size_t j = 0; j < n; j++) {
        double v = ch_random();
        if (PL_DTYPE_EQ(dt, PL_DTYPE_BOOL)) {
            v = v > 0;
        } else if (!ch_is_float(dt)) {
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
        ch_store(x, dt, j, v);
    }
}

/* ---- reference loops ----------------------------------------------------- */

/* Wraps V to the integer dtype DT. */
static double tm_wrap(pl_dtype dt, int64_t v)
{
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I32))
        return (double)(int32_t)(uint32_t)(uint64_t)v;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_I8))
        return (double)(int8_t)(uint8_t)(uint64_t)v;
    if (PL_DTYPE_EQ(dt, PL_DTYPE_U8))
        return (double)(uint8_t)(uint64_t)v;
    return (double)v;
}

/* numpy's integer power, wrapping (a negative exponent: 1 / x^-y in
 * integers), or the truncated float power for a float exponent. */
static double tm_int_pow(pl_dtype dt, double x, double y, bool int_exponent)
{
    if (!int_exponent) {
        double v = trunc(pow(x, y)); /* NaN (a negative base) gives 0 */
        return isnan(v) ? 0 : tm_wrap(dt, fabs(v) < 9e18 ? (int64_t)v : v < 0 ? INT64_MIN : INT64_MAX);
    }
    int64_t b = (int64_t)x, e = (int64_t)y;
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;
    uint64_t r = 1;
    for (int64_t i = 0; i < e; i++)
        r *= (uint64_t)b;
    return tm_wrap(dt, (int64_t)r);
}

static double tm_unary(const ch_spec *s, double x, double lo, double hi)
{
    const char *op = s->op;
    if (!strcmp(op, "Sqrt")) return sqrt(x);
    if (!strcmp(op, "Exp")) return exp(x);
    if (!strcmp(op, "Log")) return log(x);
    if (!strcmp(op, "Neg")) return -x;
    if (!strcmp(op, "Abs")) return fabs(x);
    if (!strcmp(op, "Reciprocal")) return 1.0 / x;
    if (!strcmp(op, "Erf")) return erf(x);
    if (!strcmp(op, "LeakyRelu")) return x < 0 ? (double)(float)ch_attr_f(s, "alpha", 0.01) * x : x;
    if (!strcmp(op, "Relu")) return x < 0 ? 0 : x;
    if (!strcmp(op, "Sigmoid")) return 1 / (1 + exp(-x));
    if (!strcmp(op, "Tanh")) return tanh(x);
    /* Clip: min(max(x, lo), hi), so lo above hi gives hi (ONNX spells it out
     * from onnx 1.16; numpy.clip and ONNX Runtime agree) */
    x = x < lo ? lo : x;
    return x > hi ? hi : x;
}

static void tm_ref_broadcast(const ch_node *n, const ch_data *d, ch_ref *r)
{
    const char *op = n->spec->op;
    const int64_t *od = n->out[0].shape;
    int ro = n->out[0].ndim, n_ops = !strcmp(op, "Where") ? 3 : 2;
    int64_t idx[CH_MAX_RANK];
    size_t cnt = ch_count(od, ro);
    pl_dtype dt = d->dt[n_ops == 3 ? 1 : 0];
    bool is_f = ch_is_float(dt);
    for (size_t e = 0; e < cnt; e++) {
        ch_unravel(e, od, ro, idx);
        double v[3];
        for (int j = 0; j < n_ops; j++)
            v[j] = ch_at(d, j, ch_ravel_bcast(idx, ro, d->dims[j], d->ndim[j]));
        double a = v[0], b = v[1], out;
        int64_t ia = (int64_t)a, ib = (int64_t)b;
        bool f32 = PL_DTYPE_EQ(dt, PL_DTYPE_F32);
        if (!strcmp(op, "Add")) out = is_f ? (f32 ? (double)((float)a + (float)b) : a + b)
                                           : tm_wrap(dt, ia + ib);
        else if (!strcmp(op, "Sub")) out = is_f ? a - b : tm_wrap(dt, ia - ib);
        else if (!strcmp(op, "Mul")) out = is_f ? a * b : tm_wrap(dt, ia * ib);
        else if (!strcmp(op, "Div")) out = is_f ? a / b : tm_wrap(dt, ia / ib);
        else if (!strcmp(op, "Pow"))
            out = is_f ? pow(a, b) : tm_int_pow(dt, a, b, !ch_is_float(d->dt[1]));
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

/* LogSoftmax, or Softmax (the same split and shift). */
static void tm_ref_logsoftmax(const ch_spec *s, const ch_data *d, ch_ref *r)
{
    bool softmax = !strcmp(s->op, "Softmax");
    int rk = d->ndim[0];
    int opset = s->opset ? s->opset : 13;
    int64_t axis = ch_attr_i(s, "axis", opset >= 13 ? -1 : 1);
    if (axis < 0)
        axis += rk > 0 ? rk : 1;
    size_t outer, len, inner;
    tm_split(d->dims[0], rk, axis, opset < 13, &outer, &len, &inner);
    for (size_t o = 0; o < outer; o++)
        for (size_t j = 0; j < inner; j++) {
            size_t base = o * len * inner + j;
            double max = -INFINITY, sum = 0;
            for (size_t l = 0; l < len; l++)
                max = fmax(max, ch_at(d, 0, base + l * inner));
            for (size_t l = 0; l < len; l++)
                sum += exp(ch_at(d, 0, base + l * inner) - max);
            for (size_t l = 0; l < len; l++) {
                double x = ch_at(d, 0, base + l * inner);
                r->v[0][base + l * inner] = softmax ? exp(x - max) / sum : x - max - log(sum);
                r->mag[0][base + l * inner] = softmax ? 1 : fabs(x) + fabs(max) + 1;
            }
        }
}

/* BatchNormalization and InstanceNormalization: planes of [N, C, ...]. */
static void tm_ref_planes(const ch_spec *s, const ch_data *d, ch_ref *r)
{
    bool bn = !strcmp(s->op, "BatchNormalization");
    double eps = (float)ch_attr_f(s, "epsilon", 1e-5);
    const int64_t *xd = d->dims[0];
    size_t c_n = (size_t)xd[1], planes = (size_t)xd[0] * c_n;
    size_t plane = ch_count(xd + 2, d->ndim[0] - 2);
    for (size_t p = 0; p < planes; p++) {
        size_t c = p % c_n;
        double mean, var;
        if (bn) {
            mean = ch_at(d, 3, c);
            var = ch_at(d, 4, c);
        } else {
            double sum = 0, sq = 0;
            for (size_t i = 0; i < plane; i++)
                sum += ch_at(d, 0, p * plane + i);
            mean = sum / (double)plane;
            for (size_t i = 0; i < plane; i++) {
                double dv = ch_at(d, 0, p * plane + i) - mean;
                sq += dv * dv;
            }
            var = sq / (double)plane;
        }
        double inv = 1.0 / sqrt(var + eps);
        for (size_t i = 0; i < plane; i++) {
            size_t e = p * plane + i;
            double x = ch_at(d, 0, e);
            r->v[0][e] = (x - mean) * inv * ch_at(d, 1, c) + ch_at(d, 2, c);
            r->mag[0][e] = (fabs(x) + fabs(mean)) * inv * fabs(ch_at(d, 1, c)) +
                           fabs(ch_at(d, 2, c)) + 1;
        }
    }
}

static void tm_ref_layernorm(const ch_node *n, const ch_data *d, ch_ref *r)
{
    const ch_spec *s = n->spec;
    int rk = d->ndim[0];
    int64_t axis = ch_attr_i(s, "axis", -1);
    if (axis < 0)
        axis += rk;
    double eps = (float)ch_attr_f(s, "epsilon", 1e-5);
    size_t rows = ch_count(d->dims[0], (int)axis);
    const int64_t *norm = d->dims[0] + axis;
    int nr = rk - (int)axis;
    size_t len = ch_count(norm, nr);
    bool bias = d->x[2] != NULL;
    int64_t idx[CH_MAX_RANK];
    for (size_t row = 0; row < rows; row++) {
        double sum = 0, sq = 0;
        for (size_t j = 0; j < len; j++)
            sum += ch_at(d, 0, row * len + j);
        double mean = sum / (double)len;
        for (size_t j = 0; j < len; j++) {
            double dv = ch_at(d, 0, row * len + j) - mean;
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
            ch_unravel(j, norm, nr, idx);
            double sc = ch_at(d, 1, ch_ravel_bcast(idx, nr, d->dims[1], d->ndim[1]));
            double b = bias ? ch_at(d, 2, ch_ravel_bcast(idx, nr, d->dims[2], d->ndim[2])) : 0;
            double x = ch_at(d, 0, row * len + j);
            r->v[0][row * len + j] = (x - mean) * inv * sc + b;
            r->mag[0][row * len + j] = (fabs(x) + fabs(mean)) * inv * fabs(sc) + fabs(b) + 1;
        }
    }
}

static void tm_ref_reduce(const ch_node *n, const ch_data *d, ch_ref *r)
{
    const ch_spec *s = n->spec;
    int rk = d->ndim[0];
    int opset = s->opset ? s->opset : 13;
    bool sum_op = !strcmp(s->op, "ReduceSum"), max_op = !strcmp(s->op, "ReduceMax");
    bool from_input = opset >= (sum_op ? 13 : 18);
    bool reduce[CH_MAX_RANK] = {false};
    int n_axes = 0;
    int64_t axes[CH_MAX_RANK];
    if (from_input) {
        if (s->n_in > 1 && !s->in[1].absent) {
            n_axes = (int)s->in[1].dims[0];
            for (int i = 0; i < n_axes; i++)
                axes[i] = (int64_t)s->in[1].vals[i];
        }
    } else {
        const ch_attr *a = ch_attr_find(s, "axes");
        if (a != NULL) {
            n_axes = a->n;
            memcpy(axes, a->ints, sizeof(int64_t) * (size_t)a->n);
        }
    }
    bool noop = from_input && ch_attr_i(s, "noop_with_empty_axes", 0);
    for (int i = 0; i < rk; i++)
        reduce[i] = n_axes == 0 && !noop;
    for (int i = 0; i < n_axes; i++)
        reduce[axes[i] < 0 ? axes[i] + rk : axes[i]] = true;
    size_t cnt_out = ch_count(n->out[0].shape, n->out[0].ndim);
    size_t cnt_in = ch_count(d->dims[0], rk), len = 1;
    for (int i = 0; i < rk; i++)
        if (reduce[i])
            len *= (size_t)d->dims[0][i];
    bool is_f = ch_is_float(d->dt[0]);
    for (size_t e = 0; e < cnt_out; e++) {
        pl_dtype xt = d->dt[0];
        double lowest = is_f ? -INFINITY
                        : PL_DTYPE_EQ(xt, PL_DTYPE_I32) ? (double)INT32_MIN
                        : PL_DTYPE_EQ(xt, PL_DTYPE_I8)  ? (double)INT8_MIN
                        : PL_DTYPE_EQ(xt, PL_DTYPE_U8)  ? 0
                                                        : (double)INT64_MIN;
        r->v[0][e] = max_op ? lowest : 0;
        r->mag[0][e] = 0;
    }
    int64_t idx[CH_MAX_RANK];
    for (size_t e = 0; e < cnt_in; e++) {
        ch_unravel(e, d->dims[0], rk, idx);
        size_t o = 0;
        for (int i = 0; i < rk; i++)
            if (!reduce[i])
                o = o * (size_t)d->dims[0][i] + (size_t)idx[i];
        double x = ch_at(d, 0, e);
        r->v[0][o] = max_op ? fmax(r->v[0][o], x) : r->v[0][o] + x;
        r->mag[0][o] += fabs(x);
    }
    if (!strcmp(s->op, "ReduceMean"))
        for (size_t e = 0; e < cnt_out; e++) {
            r->v[0][e] = len ? r->v[0][e] / (double)len : is_f ? NAN : 0;
            if (!is_f) /* integers: the sum divided, truncated */
                r->v[0][e] = trunc(r->v[0][e]);
            r->mag[0][e] /= len ? (double)len : 1.0;
        }
}

/* MatMul (numpy.matmul: 1-D operands promoted, batch dims broadcast) and
 * Gemm (alpha op(A) op(B) + beta C); integers wrap. */
static void tm_ref_matmul(const ch_node *n, const ch_data *d, ch_ref *r)
{
    const ch_spec *s = n->spec;
    bool gemm = !strcmp(s->op, "Gemm"), is_f = ch_is_float(d->dt[0]);
    int64_t ad[CH_MAX_RANK], bd[CH_MAX_RANK];
    int ar = d->ndim[0], br = d->ndim[1];
    memcpy(ad + (ar == 1), d->dims[0], sizeof(int64_t) * (size_t)ar);
    memcpy(bd, d->dims[1], sizeof(int64_t) * (size_t)br);
    if (ar == 1)
        ad[0] = 1, ar = 2;
    if (br == 1)
        bd[1] = 1, br = 2;
    bool ta = gemm && ch_attr_i(s, "transA", 0), tb = gemm && ch_attr_i(s, "transB", 0);
    double alpha = gemm ? ch_attr_f(s, "alpha", 1.0) : 1, beta = ch_attr_f(s, "beta", 1.0);
    int64_t m = ta ? ad[ar - 1] : ad[ar - 2], kk = ta ? ad[ar - 2] : ad[ar - 1];
    int64_t nn = tb ? bd[br - 2] : bd[br - 1];
    int rbatch = (ar > br ? ar : br) - 2;
    int64_t bdims[CH_MAX_RANK], idx[CH_MAX_RANK];
    for (int i = 0; i < rbatch; i++) {
        int ia = i - (rbatch - (ar - 2)), ib = i - (rbatch - (br - 2));
        int64_t x = ia >= 0 ? ad[ia] : 1, y = ib >= 0 ? bd[ib] : 1;
        bdims[i] = x == 1 ? y : x;
    }
    size_t batch = ch_count(bdims, rbatch);
    for (size_t e = 0; e < batch * (size_t)(m * nn); e++) {
        size_t bi = e / (size_t)(m * nn);
        int64_t i = (int64_t)(e % (size_t)(m * nn)) / nn, j = (int64_t)(e % (size_t)nn);
        ch_unravel(bi, bdims, rbatch, idx);
        size_t oa = ch_ravel_bcast(idx, rbatch, ad, ar - 2) * (size_t)(m * kk);
        size_t ob = ch_ravel_bcast(idx, rbatch, bd, br - 2) * (size_t)(kk * nn);
        double sum = 0, mag = 0;
        uint64_t isum = 0;
        for (int64_t q = 0; q < kk; q++) {
            double a = ch_at(d, 0, oa + (size_t)(ta ? q * m + i : i * kk + q));
            double b = ch_at(d, 1, ob + (size_t)(tb ? j * kk + q : q * nn + j));
            sum += a * b;
            mag += fabs(a * b);
            isum += (uint64_t)(int64_t)a * (uint64_t)(int64_t)b;
        }
        double v = is_f ? alpha * sum : tm_wrap(d->dt[0], (int64_t)isum);
        mag *= fabs(alpha);
        if (gemm && d->x[2] != NULL) {
            int64_t cidx[2] = {i, j};
            double cv = beta * ch_at(d, 2, ch_ravel_bcast(cidx, 2, d->dims[2], d->ndim[2]));
            v += cv;
            mag += fabs(cv);
        }
        r->v[0][e] = v;
        r->mag[0][e] = mag + fabs(v);
    }
}

static void tm_reference(const ch_node *n, const ch_data *d, ch_ref *r)
{
    const ch_spec *s = n->spec;
    const char *op = s->op;
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
        !strcmp(op, "Pow") || !strcmp(op, "Equal") || !strcmp(op, "Less") ||
        !strcmp(op, "Greater") || !strcmp(op, "Where")) {
        tm_ref_broadcast(n, d, r);
    } else if (!strcmp(op, "MatMul") || !strcmp(op, "Gemm")) {
        tm_ref_matmul(n, d, r);
    } else if (!strcmp(op, "LogSoftmax") || !strcmp(op, "Softmax")) {
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
            lo = (float)ch_attr_f(s, "min", -3.402823e+38);
            hi = (float)ch_attr_f(s, "max", 3.402823e+38);
        } else if (!strcmp(op, "Clip")) {
            if (s->n_in > 1 && d->x[1])
                lo = ch_at(d, 1, 0);
            if (s->n_in > 2 && d->x[2])
                hi = ch_at(d, 2, 0);
        }
        size_t cnt = ch_count(n->out[0].shape, n->out[0].ndim);
        bool is_f = ch_is_float(d->dt[0]);
        for (size_t e = 0; e < cnt; e++) {
            double x = ch_at(d, 0, e);
            double v = tm_unary(s, x, lo, hi);
            r->v[0][e] = is_f ? v : tm_wrap(d->dt[0], (int64_t)v);
            r->mag[0][e] = fabs(r->v[0][e]);
        }
    }
}

/* ---- checking one node --------------------------------------------------- */

static double tm_rtol(const char *op)
{
    if (!strncmp(op, "Reduce", 6) || strstr(op, "Normalization") || strstr(op, "Softmax") ||
        !strcmp(op, "MatMul") || !strcmp(op, "Gemm"))
        return 2e-5;
    return 2e-6;
}

static const ch_oracle tm_oracle = {tm_fill, tm_reference, tm_rtol};

/* Runs SPEC's kernel with request REQ and compares with the reference. */
static void tm_check_req(const ch_spec *spec, pl_output_request req)
{
    ch_check_req(&tm_oracle, spec, req);
}

static void tm_check(const ch_spec *spec) { tm_check_req(spec, PL_REQ_WRITE); }


static void tm_check_all(const ch_spec *specs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tm_check(&specs[i]);
}

/* Every dtype of ABI 1 that ONNX's arithmetic takes: f32 i64 i32 first
 * (the requests test those), then f64 i8 u8 f16 bf16. */
static const pl_dtype tm_arith_dts[] = {
    {PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_INT, 64, 1}, {PL_TYPE_INT, 32, 1}, {PL_TYPE_FLOAT, 64, 1},
    {PL_TYPE_INT, 8, 1},    {PL_TYPE_UINT, 8, 1}, {PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
static const pl_dtype tm_compare_dts[] = {
    {PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_INT, 64, 1}, {PL_TYPE_INT, 32, 1},    {PL_TYPE_UINT, 8, 1},
    {PL_TYPE_INT, 8, 1},    {PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
/* The float dtypes besides f32. */
static const pl_dtype tm_float_dts[] = {
    {PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
#define TM_ARITH CH_COUNT(tm_arith_dts)

/* ---- unary --------------------------------------------------------------- */

static const ch_in tm_unary_shapes[] = {
    T0, T(1, 1), T(1, 7), T(3, 2, 3, 4), T(2, 0, 5), T(2, 517, 311),
};

/* OP on f32 f64 f16 bf16, and with INTS on i64 i32 i8 (and u8 with
 * UNSIGNED). */
static void tm_check_unary_dts(const char *op, bool ints, bool unsigned_too)
{
    static const pl_dtype dts[] = {
        {PL_TYPE_FLOAT, 32, 1},  {PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_FLOAT, 16, 1},
        {PL_TYPE_BFLOAT, 16, 1}, {PL_TYPE_INT, 64, 1},   {PL_TYPE_INT, 32, 1},
        {PL_TYPE_INT, 8, 1},     {PL_TYPE_UINT, 8, 1}};
    size_t n_dts = ints ? (unsigned_too ? 8 : 7) : 4;
    for (size_t t = 0; t < n_dts; t++)
        for (size_t i = 0; i < CH_COUNT(tm_unary_shapes); i++) {
            ch_spec s = {.op = op, .n_in = 1};
            s.in[0] = tm_unary_shapes[i];
            s.in[0].dtype = dts[t];
            tm_check(&s);
        }
}

static void tm_check_unary(const char *op, bool ints) { tm_check_unary_dts(op, ints, false); }

static void case_Sqrt(void) { tm_check_unary("Sqrt", false); }
static void case_Exp(void) { tm_check_unary("Exp", false); }
static void case_Log(void) { tm_check_unary("Log", false); }
static void case_Neg(void) { tm_check_unary("Neg", true); }
static void case_Abs(void) { tm_check_unary_dts("Abs", true, true); }

/* Relu Sigmoid Tanh (math_unary.c, every float dtype). */
static void case_activations(void)
{
    tm_check_unary("Relu", true);
    tm_check_unary("Sigmoid", false);
    tm_check_unary("Tanh", false);
    /* f16 and bf16 unary ops run tile by tile: every request, on tensors of
     * many tiles and a short last one */
    static const char *const ops[] = {"Relu", "Exp", "Sqrt", "Clip"};
    for (size_t o = 0; o < CH_COUNT(ops); o++)
        for (size_t h = 1; h < CH_COUNT(tm_float_dts); h++) {
            ch_spec s = {.op = ops[o], .n_in = 1, .dtype = tm_float_dts[h],
                         .in = {T(2, 517, 311)}};
            tm_check_req(&s, PL_REQ_ADD_TO);
            tm_check_req(&s, PL_REQ_INPLACE);
            s.in[0] = (ch_in)T(1, 1024); /* exactly one tile */
            tm_check_req(&s, PL_REQ_WRITE);
        }
}
static void case_Reciprocal(void) { tm_check_unary("Reciprocal", false); }
static void case_Erf(void) { tm_check_unary("Erf", false); }

static void case_LeakyRelu(void)
{
    tm_check_unary("LeakyRelu", false);
    static const ch_spec specs[] = {
        {.op = "LeakyRelu", .n_in = 1, .in = {T(2, 300, 200)}, .attrs = {AF("alpha", 0.2)},
         .n_attrs = 1},
        {.op = "LeakyRelu", .n_in = 1, .in = {T(1, 9)}, .attrs = {AF("alpha", -1.5)},
         .n_attrs = 1},
    };
    tm_check_all(specs, CH_COUNT(specs));
}

static const ch_spec tm_clip_specs[] = {
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

/* The opset-11 specs (bounds as inputs) on every other number dtype. */
static void case_Clip(void)
{
    tm_check_all(tm_clip_specs, CH_COUNT(tm_clip_specs));
    for (size_t t = 1; t < TM_ARITH; t++)
        for (size_t i = 0; i < 7; i++) {
            ch_spec s = tm_clip_specs[i];
            s.dtype = tm_arith_dts[t];
            tm_check(&s);
        }
}

/* ---- broadcasting -------------------------------------------------------- */

static const ch_in tm_binary_shapes[][2] = {
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
        for (size_t i = 0; i < CH_COUNT(tm_binary_shapes); i++) {
            ch_spec s = {.op = op, .n_in = 2};
            s.in[0] = tm_binary_shapes[i][0];
            s.in[1] = tm_binary_shapes[i][1];
            s.in[0].dtype = dts[t];
            s.in[1].dtype = exp_dt.lanes ? exp_dt : dts[t];
            tm_check(&s);
        }
}


static void case_Add(void) { tm_check_binary("Add", tm_arith_dts, TM_ARITH, (pl_dtype){0, 0, 0}); }
static void case_Sub(void) { tm_check_binary("Sub", tm_arith_dts, TM_ARITH, (pl_dtype){0, 0, 0}); }
static void case_Mul(void) { tm_check_binary("Mul", tm_arith_dts, TM_ARITH, (pl_dtype){0, 0, 0}); }

/* Integer division by zero fails the run; integer Div truncates. */
static void case_Div(void)
{
    tm_check_binary("Div", tm_arith_dts, TM_ARITH, (pl_dtype){0, 0, 0});
    for (int w = 0; w < 2; w++) {
        pl_dtype dt = w ? PL_DTYPE_I32 : PL_DTYPE_I64;
        ch_spec s = {.op = "Div", .n_in = 2, .in = {TD(dt, 1, 4), TD(dt, 1, 4)}};
        ch_node n;
        ch_node_build(&s, &n);
        pl_kernel *k = ch_kernel(&n.desc);
        int64_t a64[4] = {7, -7, 7, -9}, b64[4] = {2, 2, -2, 0}, o64[4] = {5, 5, 5, 5};
        int32_t a32[4] = {7, -7, 7, -9}, b32[4] = {2, 2, -2, 0}, o32[4] = {5, 5, 5, 5};
        pl_tensor ins[2] = {n.in[0], n.in[1]}, out = n.out[0];
        ins[0].data = w ? (void *)a32 : (void *)a64;
        ins[1].data = w ? (void *)b32 : (void *)b64;
        out.data = w ? (void *)o32 : (void *)o64;
        pl_output_request req = PL_REQ_WRITE;
        pl_status *st = ch_run(k, 2, ins, 1, &out, &req);
        CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT &&
                  strstr(pl_status_message(st), "cpu: Div: integer division by zero"),
              "division by zero: %s", st ? pl_status_message(st) : "accepted");
        pl_status_free(st);
        CHECK((w ? o32[0] : o64[0]) == 5, "a failed division wrote its output");
        if (w)
            b32[3] = -1;
        else
            b64[3] = -1;
        CHECK_OK(ch_run(k, 2, ins, 1, &out, &req));
        int64_t got[4];
        for (int i = 0; i < 4; i++)
            got[i] = w ? o32[i] : o64[i];
        CHECK(got[0] == 3 && got[1] == -3 && got[2] == -3 && got[3] == 9,
              "integer Div does not truncate: %lld %lld %lld %lld", (long long)got[0],
              (long long)got[1], (long long)got[2], (long long)got[3]);
        ch_mod->api.kernel_release(ch_mod->ctx, k);
        ch_node_free(&n);
    }
}

static void case_Pow(void)
{
    /* bases f32 i64 i32 f64 (ONNX's T), f16 and bf16; exponents of the
     * base's type and of several others */
    static const pl_dtype bases[] = {{PL_TYPE_FLOAT, 32, 1},  {PL_TYPE_INT, 64, 1},
                                     {PL_TYPE_INT, 32, 1},    {PL_TYPE_FLOAT, 64, 1},
                                     {PL_TYPE_FLOAT, 16, 1},  {PL_TYPE_BFLOAT, 16, 1}};
    static const pl_dtype exps_dt[] = {{0, 0, 0}, {PL_TYPE_INT, 64, 1}, {PL_TYPE_INT, 32, 1},
                                       {PL_TYPE_UINT, 8, 1}, {PL_TYPE_FLOAT, 32, 1}};
    for (size_t e = 0; e < CH_COUNT(exps_dt); e++)
        tm_check_binary("Pow", bases, CH_COUNT(bases), exps_dt[e]);
    /* the fast exponents, as constants the way exporters write them */
    static const double exps[] = {2.0, 0.5, 1.0, 3.0, -1.0};
    for (size_t i = 0; i < CH_COUNT(exps); i++) {
        ch_spec s = {.op = "Pow", .n_in = 2, .in = {T(3, 4, 30, 768), CONST_F(exps[i])}};
        tm_check(&s);
        ch_spec s1 = {.op = "Pow", .n_in = 2, .in = {T(1, 5), CONST_F(exps[i])}};
        tm_check(&s1);
    }
    ch_spec si = {.op = "Pow", .n_in = 2,
                  .in = {T(2, 3, 4), {.ndim = 0, .dtype = PL_DTYPE_I64, .constant = 1,
                                       .vals = {2}}}};
    tm_check(&si);
}

static void case_Equal(void)
{
    tm_check_binary("Equal", tm_compare_dts, CH_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
    static const pl_dtype b[] = {{PL_TYPE_BOOL, 8, 1}};
    tm_check_binary("Equal", b, 1, (pl_dtype){0, 0, 0});
}
static void case_Less(void)
{
    tm_check_binary("Less", tm_compare_dts, CH_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
}
static void case_Greater(void)
{
    tm_check_binary("Greater", tm_compare_dts, CH_COUNT(tm_compare_dts), (pl_dtype){0, 0, 0});
}

static const ch_in tm_where_shapes[][3] = {
    {T(2, 3, 4), T(2, 3, 4), T(2, 3, 4)},
    {T(2, 3, 4), T0, T0},
    {T(2, 3, 4), T(2, 3, 4), T0},                         /* x, or a constant */
    {T(2, 3, 70), T(1, 1), T(2, 3, 70)},                  /* a constant, or y */
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
    for (size_t t = 0; t < CH_COUNT(dts); t++)
        for (size_t i = 0; i < CH_COUNT(tm_where_shapes); i++) {
            ch_spec s = {.op = "Where", .n_in = 3};
            for (int j = 0; j < 3; j++)
                s.in[j] = tm_where_shapes[i][j];
            s.in[0].dtype = PL_DTYPE_BOOL;
            s.in[1].dtype = s.in[2].dtype = dts[t];
            tm_check(&s);
        }
}

/* ---- LogSoftmax and the normalisations ------------------------------------ */

static const ch_spec tm_logsoftmax_specs[] = {
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

/* SPECS again with every float tensor of each of DTS (OP: another op). */
static void tm_check_dts(const ch_spec *specs, size_t n, const pl_dtype *dts, size_t n_dts,
                         const char *op)
{
    for (size_t h = 0; h < n_dts; h++)
        for (size_t i = 0; i < n; i++) {
            ch_spec s = specs[i];
            s.dtype = dts[h];
            s.op = op != NULL ? op : s.op;
            tm_check(&s);
        }
}

/* LogSoftmax and Softmax on f32, f64 (in double), f16 and bf16. */
static void case_LogSoftmax(void)
{
    tm_check_all(tm_logsoftmax_specs, CH_COUNT(tm_logsoftmax_specs));
    tm_check_dts(tm_logsoftmax_specs, CH_COUNT(tm_logsoftmax_specs), tm_float_dts,
                 CH_COUNT(tm_float_dts), NULL);
}

/* MatMul on f64 (cblas_dgemm), i32 and i64 (wrapping loops), f16 and
 * bf16 (f32); Gemm on f64, f16 and bf16. f32 is tests/cpu_kernels'. */
static void case_MatMul_dtypes(void)
{
    static const ch_in shapes[][2] = {
        {T(2, 3, 4), T(2, 4, 5)},       {T(1, 4), T(2, 4, 5)},        {T(2, 3, 4), T(1, 4)},
        {T(1, 7), T(1, 7)},             {T(3, 2, 3, 4), T(2, 4, 5)},  {T(3, 2, 3, 4), T(3, 2, 4, 5)},
        {T(4, 2, 1, 3, 4), T(3, 3, 4, 6)}, {T(2, 70, 33), T(2, 33, 90)}, {T(2, 3, 0), T(2, 0, 5)},
        {T(3, 2, 0, 4), T(2, 4, 5)},
    };
    static const pl_dtype dts[] = {{PL_TYPE_FLOAT, 64, 1}, {PL_TYPE_INT, 32, 1},
                                   {PL_TYPE_INT, 64, 1},   {PL_TYPE_FLOAT, 16, 1},
                                   {PL_TYPE_BFLOAT, 16, 1}};
    for (size_t t = 0; t < CH_COUNT(dts); t++) {
        for (size_t i = 0; i < CH_COUNT(shapes); i++) {
            ch_spec s = {.op = "MatMul", .n_in = 2, .dtype = dts[t],
                         .in = {shapes[i][0], shapes[i][1]}};
            tm_check(&s);
            if (i == 0)
                tm_check_req(&s, PL_REQ_ADD_TO);
        }
        if (t == 1 || t == 2)
            continue;
        const ch_spec gemms[] = {
            {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(1, 5)}},
            {.op = "Gemm", .n_in = 3, .in = {T(2, 4, 3), T(2, 5, 4), T(2, 3, 1)},
             .attrs = {AI("transA", 1), AI("transB", 1), AF("alpha", 0.5), AF("beta", -2)},
             .n_attrs = 4},
            {.op = "Gemm", .n_in = 2, .in = {T(2, 64, 100), T(2, 100, 70)}},
            {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T0},
             .attrs = {AF("beta", 0)}, .n_attrs = 1},
        };
        for (size_t i = 0; i < CH_COUNT(gemms); i++) {
            ch_spec s = gemms[i];
            s.dtype = dts[t];
            tm_check(&s);
            tm_check_req(&s, PL_REQ_ADD_TO);
        }
    }
}

static void case_Softmax(void)
{
    static const pl_dtype all[] = {{PL_TYPE_FLOAT, 32, 1}, {PL_TYPE_FLOAT, 64, 1},
                                   {PL_TYPE_FLOAT, 16, 1}, {PL_TYPE_BFLOAT, 16, 1}};
    tm_check_dts(tm_logsoftmax_specs, CH_COUNT(tm_logsoftmax_specs), all, CH_COUNT(all),
                 "Softmax");
}

static const ch_spec tm_bn_specs[] = {
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

static void case_BatchNormalization(void)
{
    tm_check_all(tm_bn_specs, CH_COUNT(tm_bn_specs));
    tm_check_dts(tm_bn_specs, CH_COUNT(tm_bn_specs), tm_float_dts, CH_COUNT(tm_float_dts), NULL);
}

static const ch_spec tm_ln_specs[] = {
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

static void case_LayerNormalization(void)
{
    tm_check_all(tm_ln_specs, CH_COUNT(tm_ln_specs));
    tm_check_dts(tm_ln_specs, CH_COUNT(tm_ln_specs), tm_float_dts, CH_COUNT(tm_float_dts), NULL);
}

static const ch_spec tm_in_specs[] = {
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 2, 3, 4, 5), T(1, 3), T(1, 3)}},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(3, 2, 3, 7), T(1, 3), T(1, 3)},
     .attrs = {AF("epsilon", 0.5)}, .n_attrs = 1},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 1, 1, 1, 1), T(1, 1), T(1, 1)}},
    {.op = "InstanceNormalization", .n_in = 3, .in = {T(4, 2, 16, 40, 40), T(1, 16), T(1, 16)}},
};

static void case_InstanceNormalization(void)
{
    tm_check_all(tm_in_specs, CH_COUNT(tm_in_specs));
    tm_check_dts(tm_in_specs, CH_COUNT(tm_in_specs), tm_float_dts, CH_COUNT(tm_float_dts), NULL);
}

/* ---- reductions ------------------------------------------------------------ */

/* Shapes and axes, run for each op with keepdims 1 and 0, attribute axes
 * (opset 11) and input axes (opset 18; 13 for ReduceSum). */
static const struct {
    ch_in x;
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
        for (size_t i = 0; i < CH_COUNT(tm_reduce_cases); i++)
            for (int keep = 0; keep < 2; keep++)
                for (int form = 0; form < 2; form++) {
                    ch_spec s = {.op = op, .n_in = 1, .opset = form ? input_opset : 11};
                    s.in[0] = tm_reduce_cases[i].x;
                    s.in[0].dtype = dts[t];
                    s.attrs[s.n_attrs++] = (ch_attr)AI("keepdims", keep);
                    int na = tm_reduce_cases[i].n_axes;
                    if (form && na > 0) {
                        s.n_in = 2;
                        s.in[1] = (ch_in)AXES(na);
                        for (int a = 0; a < na; a++)
                            s.in[1].vals[a] = (double)tm_reduce_cases[i].axes[a];
                    } else if (na > 0) {
                        ch_attr a = AIS("axes", na);
                        memcpy(a.ints, tm_reduce_cases[i].axes, sizeof(int64_t) * (size_t)na);
                        s.attrs[s.n_attrs++] = a;
                    }
                    tm_check(&s);
                }
    /* input axes: an empty list with noop_with_empty_axes, an absent input */
    ch_spec noop = {.op = op, .opset = input_opset, .n_in = 2,
                    .in = {T(2, 3, 4), {.ndim = 1, .dims = {0}, .dtype = PL_DTYPE_I64,
                                        .constant = 1}},
                    .attrs = {AI("noop_with_empty_axes", 1)}, .n_attrs = 1};
    tm_check(&noop);
    ch_spec absent = {.op = op, .opset = input_opset, .n_in = 2, .in = {T(2, 3, 4), ABSENT},
                      .attrs = {AI("keepdims", 0)}, .n_attrs = 1};
    tm_check(&absent);
    ch_spec only = {.op = op, .opset = input_opset, .n_in = 1, .in = {T(2, 3, 4)}};
    tm_check(&only);
}

static void case_ReduceMean(void)
{
    tm_check_reduce("ReduceMean", tm_arith_dts, 3);
    tm_check_reduce("ReduceMean", tm_float_dts, CH_COUNT(tm_float_dts));
}
static void case_ReduceSum(void)
{
    tm_check_reduce("ReduceSum", tm_arith_dts, 3);
    tm_check_reduce("ReduceSum", tm_float_dts, CH_COUNT(tm_float_dts));
}
/* ReduceMax takes i8 and u8 too (opset 12 on). */
static void case_ReduceMax(void) { tm_check_reduce("ReduceMax", tm_arith_dts, TM_ARITH); }

/* ---- requests -------------------------------------------------------------- */

/* PL_REQ_ADD_TO on a selection of every kind of kernel. */
static void case_add_to(void)
{
    static const char *const unary[] = {"Sqrt", "Exp", "Neg", "Abs", "Erf", "LeakyRelu"};
    for (size_t o = 0; o < CH_COUNT(unary); o++)
        for (size_t i = 0; i < CH_COUNT(tm_unary_shapes); i++) {
            ch_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tm_unary_shapes[i];
            tm_check_req(&s, PL_REQ_ADD_TO);
        }
    ch_spec neg = {.op = "Neg", .n_in = 1, .in = {TD(PL_DTYPE_I64, 2, 3, 4)}};
    tm_check_req(&neg, PL_REQ_ADD_TO);
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (size_t o = 0; o < CH_COUNT(binary); o++)
        for (size_t t = 0; t < (strcmp(binary[o], "Pow") ? 3u : 1u); t++)
            for (size_t i = 0; i < CH_COUNT(tm_binary_shapes); i++) {
                ch_spec s = {.op = binary[o], .n_in = 2};
                s.in[0] = tm_binary_shapes[i][0];
                s.in[1] = tm_binary_shapes[i][1];
                s.in[0].dtype = s.in[1].dtype = tm_arith_dts[t];
                tm_check_req(&s, PL_REQ_ADD_TO);
            }
    for (size_t i = 0; i < CH_COUNT(tm_where_shapes); i++) {
        ch_spec s = {.op = "Where", .n_in = 3};
        for (int j = 0; j < 3; j++)
            s.in[j] = tm_where_shapes[i][j];
        s.in[0].dtype = PL_DTYPE_BOOL;
        tm_check_req(&s, PL_REQ_ADD_TO);
    }
    const struct {
        const ch_spec *specs;
        size_t n;
    } sets[] = {
        {tm_clip_specs, CH_COUNT(tm_clip_specs)},
        {tm_logsoftmax_specs, CH_COUNT(tm_logsoftmax_specs)},
        {tm_bn_specs, CH_COUNT(tm_bn_specs)},
        {tm_ln_specs, CH_COUNT(tm_ln_specs)},
        {tm_in_specs, CH_COUNT(tm_in_specs)},
    };
    for (size_t s = 0; s < CH_COUNT(sets); s++)
        for (size_t i = 0; i < sets[s].n; i++)
            tm_check_req(&sets[s].specs[i], PL_REQ_ADD_TO);
    static const char *const reduce[] = {"ReduceMean", "ReduceSum", "ReduceMax"};
    for (size_t o = 0; o < CH_COUNT(reduce); o++)
        for (size_t i = 0; i < CH_COUNT(tm_reduce_cases); i++) {
            ch_spec s = {.op = reduce[o], .opset = 11, .n_in = 1};
            s.in[0] = tm_reduce_cases[i].x;
            int na = tm_reduce_cases[i].n_axes;
            if (na > 0) {
                ch_attr a = AIS("axes", na);
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
    for (size_t o = 0; o < CH_COUNT(unary); o++)
        for (size_t i = 0; i < CH_COUNT(tm_unary_shapes); i++) {
            ch_spec s = {.op = unary[o], .n_in = 1};
            s.in[0] = tm_unary_shapes[i];
            tm_check_req(&s, PL_REQ_INPLACE);
        }
    static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow"};
    for (size_t o = 0; o < CH_COUNT(binary); o++)
        for (size_t t = 0; t < (strcmp(binary[o], "Pow") ? 3u : 1u); t++)
            for (size_t i = 0; i < CH_COUNT(tm_binary_shapes); i++) {
                ch_spec s = {.op = binary[o], .n_in = 2};
                s.in[0] = tm_binary_shapes[i][0];
                s.in[1] = tm_binary_shapes[i][1];
                s.in[0].dtype = s.in[1].dtype = tm_arith_dts[t];
                ch_node n;
                ch_node_build(&s, &n);
                size_t na = ch_count(n.in[0].shape, n.in[0].ndim);
                size_t nout = ch_count(n.out[0].shape, n.out[0].ndim);
                ch_node_free(&n);
                if (na == nout)
                    tm_check_req(&s, PL_REQ_INPLACE);
            }
    for (size_t i = 0; i < CH_COUNT(tm_clip_specs); i++)
        tm_check_req(&tm_clip_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < CH_COUNT(tm_logsoftmax_specs); i++)
        tm_check_req(&tm_logsoftmax_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < CH_COUNT(tm_bn_specs); i++)
        tm_check_req(&tm_bn_specs[i], PL_REQ_INPLACE);
    for (size_t i = 0; i < CH_COUNT(tm_in_specs); i++)
        tm_check_req(&tm_in_specs[i], PL_REQ_INPLACE);
}


/* ---- dtype edges ------------------------------------------------------------ */

/* Runs SPEC on inputs IN (values, one array per input, the spec's shapes)
 * and checks output 0 against WANT exactly (NaN matches NaN); with
 * FAIL_WITH, the run must fail with that message and leave the output. */
static void tm_exact(const ch_spec *spec, const double *const *in, const double *want,
                     const char *fail_with)
{
    ch_node n;
    ch_node_build(spec, &n);
    pl_kernel *k = ch_kernel(&n.desc);
    ch_buf bufs[CH_MAX_IN], out;
    pl_tensor ins[CH_MAX_IN], o;
    for (int i = 0; i < spec->n_in; i++) {
        size_t cnt = ch_count(n.in[i].shape, n.in[i].ndim);
        ch_buf_make(&bufs[i], cnt * pl_dtype_size(n.in[i].dtype) + 1, 8);
        for (size_t e = 0; e < cnt; e++)
            ch_store(bufs[i].data, n.in[i].dtype, e, in[i][e]);
        ins[i] = ch_host_tensor(&n.in[i], &bufs[i]);
    }
    size_t cnt = ch_count(n.out[0].shape, n.out[0].ndim);
    pl_dtype odt = n.out[0].dtype;
    ch_buf_make(&out, cnt * pl_dtype_size(odt) + 1, 8);
    for (size_t e = 0; e < cnt; e++)
        ch_store(out.data, odt, e, 77);
    o = ch_host_tensor(&n.out[0], &out);
    pl_output_request req = PL_REQ_WRITE;
    pl_status *st = ch_run(k, (size_t)spec->n_in, ins, 1, &o, &req);
    if (fail_with != NULL) {
        CHECK(st != NULL && strstr(pl_status_message(st), fail_with) != NULL,
              "%s %s: expected the error '%s', got '%s'", spec->op, pl_dtype_name(n.in[0].dtype),
              fail_with, st != NULL ? pl_status_message(st) : "success");
        pl_status_free(st);
        CHECK(ch_load(out.data, odt, 0) == 77, "%s: a failed run wrote its output", spec->op);
    } else {
        CHECK_OK(st);
        for (size_t e = 0; e < cnt; e++) {
            double got = ch_load(out.data, odt, e);
            CHECK(got == want[e] || (isnan(got) && isnan(want[e])),
                  "%s %s: element %zu is %.17g, expected %.17g", spec->op,
                  pl_dtype_name(n.in[0].dtype), e, got, want[e]);
        }
    }
    for (int i = 0; i < spec->n_in; i++)
        free(bufs[i].base);
    free(out.base);
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    ch_node_free(&n);
}

/* A binary (B given) or unary elementwise OP on N elements of DT. */
static void tm_exact_ew(const char *op, pl_dtype dt, size_t n, const double *a, const double *b,
                        const double *want, const char *fail_with)
{
    ch_spec s = {.op = op, .n_in = b != NULL ? 2 : 1, .dtype = dt,
                 .in = {T(1, (int64_t)n), T(1, (int64_t)n)}};
    const double *in[2] = {a, b};
    tm_exact(&s, in, want, fail_with);
}

#define TM_EW(op, dt, a, b, want) \
    tm_exact_ew(op, dt, CH_COUNT(want), a, b, want, NULL)

/* Integers wrap without undefined behaviour; integer Div truncates toward
 * zero and a zero divisor is an error (never a trap). */
static void tm_edges_int(void)
{
    const pl_dtype I8 = PL_DTYPE_I8, U8 = PL_DTYPE_U8, I32 = PL_DTYPE_I32, I64 = PL_DTYPE_I64;
    TM_EW("Add", I8, ((double[]){127, -128, 100}), ((double[]){1, -1, 100}),
          ((double[]){-128, 127, -56}));
    TM_EW("Add", U8, ((double[]){255, 200}), ((double[]){1, 100}), ((double[]){0, 44}));
    TM_EW("Sub", U8, ((double[]){0, 5}), ((double[]){1, 10}), ((double[]){255, 251}));
    TM_EW("Mul", U8, ((double[]){16, 255}), ((double[]){16, 255}), ((double[]){0, 1}));
    TM_EW("Mul", I8, ((double[]){-128, 64}), ((double[]){-1, 2}), ((double[]){-128, -128}));
    TM_EW("Div", I8, ((double[]){-128, -7, 7}), ((double[]){-1, 2, -2}),
          ((double[]){-128, -3, -3}));
    TM_EW("Div", U8, ((double[]){255, 7}), ((double[]){2, 3}), ((double[]){127, 2}));
    TM_EW("Add", I32, ((double[]){2147483647.0}), ((double[]){1}), ((double[]){-2147483648.0}));
    TM_EW("Mul", I64, ((double[]){4611686018427387904.0}), ((double[]){4}), ((double[]){0}));
    TM_EW("Abs", I8, ((double[]){-128, -5, 5}), NULL, ((double[]){-128, 5, 5}));
    TM_EW("Neg", I8, ((double[]){-128, -5, 0}), NULL, ((double[]){-128, 5, 0}));
    TM_EW("Abs", U8, ((double[]){200, 0}), NULL, ((double[]){200, 0}));
    TM_EW("Relu", I8, ((double[]){-128, 0, 127}), NULL, ((double[]){0, 0, 127}));
    TM_EW("Pow", I32, ((double[]){2, 3, -2, 2, 1, -1}), ((double[]){31, 2, 3, -1, -5, -3}),
          ((double[]){-2147483648.0, 9, -8, 0, 1, -1}));
    TM_EW("Pow", I64, ((double[]){3, -3}), ((double[]){39, 3}),
          ((double[]){4052555153018976267.0, -27}));
    const pl_dtype divs[] = {I8, U8, I32, I64};
    for (size_t i = 0; i < CH_COUNT(divs); i++)
        tm_exact_ew("Div", divs[i], 3, (double[]){7, 8, 9}, (double[]){1, 0, 2}, NULL,
                    "cpu: Div: integer division by zero");
    /* Pow of an integer base and a float exponent: truncated. */
    ch_spec pf = {.op = "Pow", .n_in = 2, .in = {TD(I32, 1, 3), TD(PL_DTYPE_F32, 1, 3)}};
    const double *pin[2] = {(double[]){4, 2, -8}, (double[]){0.5, 3.5, 1.0 / 3}};
    tm_exact(&pf, pin, (double[]){2, 11, 0}, NULL);
}

/* f64 computes in f64; NaN and infinities go through as IEEE says. */
static void tm_edges_float(void)
{
    const pl_dtype F64 = PL_DTYPE_F64;
    TM_EW("Add", F64, ((double[]){1}), ((double[]){1e-12}), ((double[]){1.0 + 1e-12}));
    TM_EW("Mul", F64, ((double[]){1.0 / 3}), ((double[]){3}), ((double[]){(1.0 / 3) * 3}));
    TM_EW("Sqrt", F64, ((double[]){2}), NULL, ((double[]){sqrt(2.0)}));
    TM_EW("Exp", F64, ((double[]){1, 700}), NULL, ((double[]){exp(1.0), exp(700.0)}));
    TM_EW("Tanh", F64, ((double[]){0.5}), NULL, ((double[]){tanh(0.5)}));
    TM_EW("Pow", F64, ((double[]){1.0000001}), ((double[]){1e7}), ((double[]){pow(1.0000001, 1e7)}));
    ch_spec mm = {.op = "MatMul", .n_in = 2, .dtype = F64, .in = {T(2, 1, 2), T(2, 2, 1)}};
    const double *mmi[2] = {(double[]){1, 1e-12}, (double[]){1, 1}};
    tm_exact(&mm, mmi, (double[]){1.0 + 1e-12}, NULL);
    ch_spec gm = {.op = "Gemm", .n_in = 3, .dtype = F64, .in = {T(2, 1, 2), T(2, 2, 1), T0},
                  .attrs = {AF("alpha", 0.1), AF("beta", 1e-13)}, .n_attrs = 2};
    const double *gmi[3] = {(double[]){10, 2e-11}, (double[]){1, 1}, (double[]){1}};
    tm_exact(&gm, gmi, (double[]){0.1 * (10 + 2e-11) + 1e-13}, NULL);
    /* LogSoftmax in double: the same operations as the kernel's, so exact */
    const double shift = 1e-9 + log(exp(0.0 - 1e-9) + exp(1e-9 - 1e-9));
    TM_EW("LogSoftmax", F64, ((double[]){0, 1e-9}), NULL, ((double[]){0 - shift, 1e-9 - shift}));
    /* LayerNormalization in double, the kernel's order of operations */
    ch_spec ln = {.op = "LayerNormalization", .opset = 17, .n_in = 2, .dtype = F64,
                  .in = {T(1, 3), T(1, 3)}};
    const double lx[3] = {1, 2, 4 + 1e-9}, ls[3] = {1, 0.5, 3};
    double mean = (lx[0] + lx[1] + lx[2]) / 3, var = 0, lw[3];
    for (int i = 0; i < 3; i++)
        var += (lx[i] - mean) * (lx[i] - mean);
    double inv = 1 / sqrt(var / 3 + (double)1e-5);
    for (int i = 0; i < 3; i++)
        lw[i] = (lx[i] - mean) * inv * ls[i];
    tm_exact(&ln, (const double *[]){lx, ls}, lw, NULL);
    const pl_dtype all[] = {PL_DTYPE_F32, F64, PL_DTYPE_F16, PL_DTYPE_BF16};
    for (size_t i = 0; i < CH_COUNT(all); i++) {
        TM_EW("Add", all[i], ((double[]){INFINITY, INFINITY, NAN}), ((double[]){-INFINITY, 1, 1}),
              ((double[]){NAN, INFINITY, NAN}));
        TM_EW("Div", all[i], ((double[]){1, -1, 0}), ((double[]){0, 0, 0}),
              ((double[]){INFINITY, -INFINITY, NAN}));
        TM_EW("Sqrt", all[i], ((double[]){-1, INFINITY}), NULL, ((double[]){NAN, INFINITY}));
        TM_EW("Less", all[i], ((double[]){NAN, -INFINITY}), ((double[]){1, 0}),
              ((double[]){0, 1}));
    }
}

/* f16 and bf16: computed in f32, rounded once to nearest even: ties,
 * subnormals (f16), overflow to infinity. The expected values were checked
 * against numpy.float16 and torch.bfloat16. */
static void tm_edges_half(void)
{
    const pl_dtype F16 = PL_DTYPE_F16, BF16 = PL_DTYPE_BF16;
    const double u = ldexp(1, -11), s = ldexp(1, -24); /* f16: half ulp at 1, least subnormal */
    TM_EW("Add", F16, ((double[]){1, 1 + 2 * u}), ((double[]){u, u}),
          ((double[]){1, 1 + 4 * u}));
    TM_EW("Mul", F16, ((double[]){ldexp(1, -14), s, 3 * s, -s}), ((double[]){0.5, 0.5, 0.5, 1}),
          ((double[]){ldexp(1, -15), 0, 2 * s, -s}));
    TM_EW("Neg", F16, ((double[]){s, 1023 * s}), NULL, ((double[]){-s, -1023 * s}));
    TM_EW("Add", F16, ((double[]){65504, 65504}), ((double[]){8, 16}),
          ((double[]){65504, INFINITY}));
    TM_EW("Exp", F16, ((double[]){12, -20}), NULL, ((double[]){INFINITY, 0}));
    const double v = ldexp(1, -8);
    TM_EW("Add", BF16, ((double[]){1, 1 + 2 * v}), ((double[]){v, v}),
          ((double[]){1, 1 + 4 * v}));
    TM_EW("Exp", BF16, ((double[]){12}), NULL, ((double[]){162816}));
    TM_EW("Mul", BF16, ((double[]){ldexp(1, -126)}), ((double[]){0.5}),
          ((double[]){ldexp(1, -127)}));
}

static void case_dtype_edges(void)
{
    tm_edges_int();
    tm_edges_float();
    tm_edges_half();
}

/* ---- refusals -------------------------------------------------------------- */

static void case_refusals(void)
{
    const pl_code U = PL_CODE_UNSUPPORTED;
    /* Dtypes ONNX does not define an op on are refused by the core's type
     * inference before a module sees them (tests/opset). */
    /* f16 is computed through f32 kernels, whose refusals it keeps */
    ch_spec relu_unknown = {.op = "Relu", .n_in = 1, .dtype = PL_DTYPE_F16, .in = {T(2, -1, 4)}};
    ch_expect_refusal(&relu_unknown, U, "cpu: Relu: output shape not fully known");
    ch_spec sum_rt = {.op = "ReduceSum", .n_in = 2, .dtype = PL_DTYPE_BF16,
                      .in = {T(2, 1, 1), TD(PL_DTYPE_I64, 1, 1)}};
    ch_expect_refusal(&sum_rt, U, "cpu: ReduceSum: axes (input 1) computed at run time");
    /* BatchNormalization with X f64 and scale f32 (ONNX's T and T1 may
     * differ): one dtype for all is supported */
    ch_spec bn_mixed = {.op = "BatchNormalization", .opset = 15, .n_in = 5,
                        .in = {TD(PL_DTYPE_F64, 3, 2, 3, 4), T(1, 3), T(1, 3), T(1, 3), T(1, 3)}};
    ch_expect_refusal(&bn_mixed, U, "cpu: BatchNormalization: unsupported dtype f32");
    /* ReduceMean takes i32 and i64 (truncating), not the 8-bit ones */
    ch_spec mean_i8 = {.op = "ReduceMean", .opset = 11, .n_in = 1, .in = {TD(PL_DTYPE_I8, 2, 3, 4)}};
    ch_expect_refusal(&mean_i8, U, "cpu: ReduceMean: unsupported dtype i8");
    /* axes computed at run time (a shape of 1s keeps the output known) */
    ch_spec axes_rt = {.op = "ReduceSum", .n_in = 2,
                       .in = {T(2, 1, 1), TD(PL_DTYPE_I64, 1, 1)}};
    ch_expect_refusal(&axes_rt, U, "cpu: ReduceSum: axes (input 1) computed at run time");
    /* (BatchNormalization with training_mode = 1 never reaches a module:
     * the core lowers it to the batch's statistics, test_batchnorm_training_mode) */
    ch_spec bn_stats = {.op = "BatchNormalization", .opset = 9, .n_in = 5,
                        .in = {T(3, 2, 3, 4), T(1, 3), T(1, 3), T(1, 3), T(1, 3)}, .n_out = 3};
    ch_expect_refusal(&bn_stats, U, "cpu: BatchNormalization: output 1");
    ch_spec ln_mid = {.op = "LayerNormalization", .opset = 17, .n_in = 2,
                      .in = {T(3, 2, 5, 6), T(2, 5, 1)}, .attrs = {AI("axis", 1)}, .n_attrs = 1};
    ch_expect_refusal(&ln_mid, U, "cpu: LayerNormalization: scale [5,1]");

    /* Requests a kernel cannot honour are errors, not crashes. */
    ch_spec eq = {.op = "Equal", .n_in = 2, .in = {T(1, 4), T(1, 4)}};
    ch_node n;
    ch_node_build(&eq, &n);
    pl_kernel *k = ch_kernel(&n.desc);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 3, 0};
    uint8_t o[4] = {9, 9, 9, 9};
    pl_tensor ins[2] = {n.in[0], n.in[1]}, out = n.out[0];
    ins[0].data = a;
    ins[1].data = b;
    out.data = o;
    pl_output_request req = PL_REQ_ADD_TO;
    pl_status *st = ch_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && strstr(pl_status_message(st), "cpu: Equal: "), "bool add-to accepted");
    pl_status_free(st);
    req = PL_REQ_INPLACE;
    st = ch_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "in-place Equal accepted");
    pl_status_free(st);
    req = PL_REQ_WRITE;
    ins[1].data = NULL;
    st = ch_run(k, 2, ins, 1, &out, &req);
    CHECK(st != NULL && strstr(pl_status_message(st), "input 1 has no data"),
          "missing input accepted");
    pl_status_free(st);
    ins[1].data = b;
    pl_tensor wrong = out;
    wrong.shape = (int64_t[]){5};
    st = ch_run(k, 2, ins, 1, &wrong, &req);
    CHECK(st != NULL && pl_status_code(st) == PL_CODE_INVALID_ARGUMENT, "wrong size accepted");
    pl_status_free(st);
    CHECK(o[0] == 9, "a refused run wrote its output");
    CHECK_OK(ch_run(k, 2, ins, 1, &out, &req));
    CHECK(o[0] == 1 && o[1] == 0 && o[2] == 1 && o[3] == 0, "Equal wrong");
    req = PL_REQ_NULL;
    out.data = NULL;
    CHECK_OK(ch_run(k, 2, ins, 1, &out, &req));
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    ch_node_free(&n);
}

/* Whether this process has OpenBLAS mapped. */
static bool tm_blas_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL, "cannot read /proc/self/maps");
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = strstr(line, "libopenblas") != NULL;
    fclose(f);
    return found;
}

/* OpenBLAS is opened by the first kernel that needs it (modules/cpu/blas.h),
 * not when the module loads: f32 products run on the module's own SGEMM, so
 * a runtime that makes none of the others never pays for it. */
static void case_blas_lazy(void)
{
    CHECK(!tm_blas_mapped(), "OpenBLAS is mapped once the cpu module has loaded");
    ch_spec f32 = {.op = "MatMul", .n_in = 2, .in = {T(2, 3, 4), T(2, 4, 5)}};
    ch_spec gemm = {.op = "Gemm", .n_in = 3, .in = {T(2, 3, 4), T(2, 4, 5), T(1, 5)}};
    tm_check(&f32);
    tm_check(&gemm);
    CHECK(!tm_blas_mapped(), "an f32 MatMul or Gemm opened OpenBLAS");
    ch_spec f64 = f32;
    f64.dtype = (pl_dtype){PL_TYPE_FLOAT, 64, 1};
    tm_check(&f64);
    CHECK(tm_blas_mapped(), "an f64 MatMul ran without OpenBLAS");
}

/* Runs the one-input f32 kernel of SPEC on the N values V, into OUT. */
static void tm_run_f32(const ch_spec *spec, const float *v, float *out, int n)
{
    ch_node nd;
    ch_node_build(spec, &nd);
    pl_kernel *k = ch_kernel(&nd.desc);
    ch_buf in, o;
    ch_buf_make(&in, (size_t)n * sizeof(float), 8);
    ch_buf_make(&o, (size_t)n * sizeof(float), 8);
    for (int i = 0; i < n; i++)
        ch_store(in.data, PL_DTYPE_F32, (size_t)i, v[i]);
    pl_tensor x = ch_host_tensor(&nd.in[0], &in), y = ch_host_tensor(&nd.out[0], &o);
    pl_output_request req = PL_REQ_WRITE;
    CHECK_OK(ch_run(k, 1, &x, 1, &y, &req));
    for (int i = 0; i < n; i++)
        out[i] = (float)ch_load(o.data, PL_DTYPE_F32, (size_t)i);
    free(in.base);
    free(o.base);
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    ch_node_free(&nd);
}

/* Log's own f32 logarithm (fastmath.h, and its eight-lane copy) against
 * double log over 2^-149 .. 2^127 and around 1, where it loses most:
 * within 2 ulp of the rounded result, log(1) exactly 0. */
static void case_log_sweep(void)
{
    enum { N = 40000 };
    ch_spec s = {.op = "Log", .n_in = 1, .in = {T(1, N)}};
    float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys);
    CHECK(xs && ys, "out of memory");
    for (int i = 0; i < N; i++)
        xs[i] = (float)(i < N / 2 ? ldexp(1.0 + (i % 97) / 97.0, -149 + (i * 276) / N)
                                  : 1.0 + ((double)(i - N / 2) - N / 4) * ldexp(1, -18));
    tm_run_f32(&s, xs, ys, N);
    for (int i = 0; i < N; i++) {
        float xv = xs[i], got = ys[i];
        float want = (float)log((double)xv);
        float ulp = nextafterf(fabsf(want), INFINITY) - fabsf(want);
        CHECK(xv != 1.0f || got == 0.0f, "log(1) = %g", (double)got);
        CHECK(fabsf(got - want) <= 2 * ulp, "log(%a) = %a, want %a", (double)xv, (double)got,
              (double)want);
    }
    free(xs);
    free(ys);
}

/* Erf on a grid of [-6, 6] (its AVX2 lanes and the scalar tail) within
 * 1e-6 of double erf, with erf(+-0) = +-0, erf(+-inf) = +-1 and NaN kept. */
static void case_erf_sweep(void)
{
    enum { N = 120007 }; /* odd: the last N % 8 run on the scalar tail */
    ch_spec s = {.op = "Erf", .n_in = 1, .in = {T(1, N)}};
    float *xs = malloc(N * sizeof *xs), *ys = malloc(N * sizeof *ys);
    CHECK(xs && ys, "out of memory");
    const double edges[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 0.6, -0.6, 0.5999999, 1e-30};
    for (int i = 0; i < N; i++)
        xs[i] = (float)(i < (int)CH_COUNT(edges) ? edges[i] : -6.0 + 12.0 * i / (N - 1));
    tm_run_f32(&s, xs, ys, N);
    for (int i = 0; i < N; i++) {
        float xv = xs[i], got = ys[i];
        double want = erf((double)xv);
        if (isnan(xv)) {
            CHECK(isnan(got), "erf(NaN) = %g", (double)got);
            continue;
        }
        CHECK(fabs(got - want) <= 1e-6 && signbit(got) == signbit(xv),
              "erf(%.9g) = %.9g, want %.9g (element %d)", (double)xv, (double)got, want, i);
    }
    free(xs);
    free(ys);
}

/* Opset 18's BitwiseAnd, BitwiseOr, BitwiseXor (i32 [2,3] with a [3]
 * broadcast; i8 and u8 same-shape) and BitwiseNot (i8, u8, i64), against C's
 * operators (floats never reach the kernels: the schema admits integers). */
static void case_bitwise(void)
{
    static const char *const ops[3] = {"BitwiseAnd", "BitwiseOr", "BitwiseXor"};
    static const pl_dtype dts[3] = {PL_DTYPE_I32, PL_DTYPE_I8, PL_DTYPE_U8};
    for (int o = 0; o < 3; o++)
        for (int d = 0; d < 3; d++) {
            ch_spec sp = {.op = ops[o], .opset = 18, .dtype = dts[d], .n_in = 2,
                          .in = {T(2, 2, 3), T(2, 2, 3)}};
            if (d == 0)
                sp.in[1] = (ch_in)T(1, 3); /* broadcast along the rows */
            ch_node n;
            ch_node_build(&sp, &n);
            pl_kernel *k = ch_kernel(&n.desc);
            ch_buf a, b, y;
            size_t es = pl_dtype_size(dts[d]), nb = d == 0 ? 3 : 6;
            ch_buf_make(&a, 6 * es, 8);
            ch_buf_make(&b, nb * es, 8);
            ch_buf_make(&y, 6 * es, 8);
            const int64_t av[6] = {0x5a, -7, 12, 0x7f, -128, 3}, bv[6] = {0x0f, 5, -1, 0x33, 1, 2};
            for (int i = 0; i < 6; i++)
                ch_store(a.data, dts[d], (size_t)i, (double)(d == 2 ? (av[i] & 0xff) : av[i]));
            for (size_t i = 0; i < nb; i++)
                ch_store(b.data, dts[d], i, (double)(d == 2 ? (bv[i] & 0xff) : bv[i]));
            pl_tensor ta = ch_host_tensor(&n.in[0], &a), tb = ch_host_tensor(&n.in[1], &b);
            pl_tensor ty = ch_host_tensor(&n.out[0], &y);
            pl_tensor ins[2] = {ta, tb};
            pl_output_request req = PL_REQ_WRITE;
            CHECK_OK(ch_run(k, 2, ins, 1, &ty, &req));
            for (int i = 0; i < 6; i++) {
                int64_t x = (int64_t)ch_load(a.data, dts[d], (size_t)i);
                int64_t z = (int64_t)ch_load(b.data, dts[d], (size_t)(d == 0 ? i % 3 : i));
                int64_t want = o == 0 ? (x & z) : o == 1 ? (x | z) : (x ^ z);
                int64_t got = (int64_t)ch_load(y.data, dts[d], (size_t)i);
                CHECK(got == want, "%s %s element %d: %lld, want %lld", ops[o],
                      pl_dtype_name(dts[d]), i, (long long)got, (long long)want);
            }
            free(a.base);
            free(b.base);
            free(y.base);
            ch_mod->api.kernel_release(ch_mod->ctx, k);
            ch_node_free(&n);
        }
    static const pl_dtype ndts[3] = {PL_DTYPE_I8, PL_DTYPE_U8, PL_DTYPE_I64};
    for (int d = 0; d < 3; d++) {
        ch_spec sp = {.op = "BitwiseNot", .opset = 18, .dtype = ndts[d], .n_in = 1,
                      .in = {T(1, 5)}};
        ch_node n;
        ch_node_build(&sp, &n);
        pl_kernel *k = ch_kernel(&n.desc);
        ch_buf a, y;
        size_t es = pl_dtype_size(ndts[d]);
        ch_buf_make(&a, 5 * es, 8);
        ch_buf_make(&y, 5 * es, 8);
        const int64_t av[5] = {0, 1, 100, d == 1 ? 255 : -1, d == 1 ? 128 : -100};
        for (int i = 0; i < 5; i++)
            ch_store(a.data, ndts[d], (size_t)i, (double)av[i]);
        pl_tensor ta = ch_host_tensor(&n.in[0], &a), ty = ch_host_tensor(&n.out[0], &y);
        pl_output_request req = PL_REQ_WRITE;
        CHECK_OK(ch_run(k, 1, &ta, 1, &ty, &req));
        for (int i = 0; i < 5; i++) {
            int64_t got = (int64_t)ch_load(y.data, ndts[d], (size_t)i);
            int64_t want = d == 1 ? (~av[i] & 0xff) : d == 0 ? (int8_t)~av[i] : ~av[i];
            CHECK(got == want, "BitwiseNot %s element %d: %lld, want %lld",
                  pl_dtype_name(ndts[d]), i, (long long)got, (long long)want);
        }
        free(a.base);
        free(y.base);
        ch_mod->api.kernel_release(ch_mod->ctx, k);
        ch_node_free(&n);
    }
}

/* The integer dtypes of ABI 1.11 (i16, u16, u32, u64), which the module
 * computes on its i32 and i64 kernels (dtype_wrap.c): binary ops on [2,3]
 * with a [3] broadcast, at the edges of each range, against C's
 * arithmetic at the dtype's width (sums and products wrap; quotients and
 * comparisons exact; u64 compared unsigned, its order kept through the
 * flipped top bit), and u64's refusal of Div. */
static uint64_t tm_wide_get(const void *p, pl_dtype dt, size_t i)
{
    switch (pl_dtype_size(dt)) {
    case 2: return dt.code == PL_TYPE_INT ? (uint64_t)(int64_t)((const int16_t *)p)[i]
                                          : ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static void tm_wide_put(void *p, pl_dtype dt, size_t i, uint64_t v)
{
    switch (pl_dtype_size(dt)) {
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

static void case_wide_ints(void)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Less", "Max",
                                      "Equal", "BitwiseXor", "BitShift"};
    const pl_dtype dts[4] = {PL_DTYPE_I16, PL_DTYPE_U16, PL_DTYPE_U32, PL_DTYPE_U64};
    /* as each dtype's bits (sign-extended for i16) */
    const uint64_t av[4][6] = {
        {32767, (uint64_t)-32768, 1234, (uint64_t)-7, 0, 300},
        {65535, 40000, 1, 0, 300, 7},
        {4294967295u, 3000000000u, 1, 0, 70000, 7},
        {UINT64_MAX, 0x8000000000000001ull, 1, 0, 1ull << 40, 7}};
    const uint64_t bv[4][3] = {{3, (uint64_t)-2, 32767},
                               {3, 65535, 2},
                               {3, 4294967295u, 2},
                               {3, 0x8000000000000000ull, 2}};
    for (int d = 0; d < 4; d++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            const char *op = ops[o];
            pl_dtype dt = dts[d];
            bool sgn = d == 0, shift = !strcmp(op, "BitShift");
            int bits = (int)pl_dtype_size(dt) * 8;
            uint64_t mask = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
            ch_spec sp = {.op = op, .opset = 18, .dtype = dt, .n_in = 2,
                          .in = {T(2, 2, 3), T(1, 3)}};
            if (shift) {
                if (sgn)
                    continue; /* signed shifts are opset 28's */
                sp.opset = 11;
                sp.attrs[0] = (ch_attr){.name = "direction", .kind = 's', .s = "LEFT"};
                sp.n_attrs = 1;
            }
            bool compare = !strcmp(op, "Less") || !strcmp(op, "Equal");
            ch_node n;
            ch_node_build(&sp, &n);
            pl_kernel *k = NULL;
            size_t ws = 0;
            pl_status *st = ch_mod->api.get_kernel(ch_mod->ctx, 0, &n.desc, &k, &ws);
            if (d == 3 && (!strcmp(op, "Div") || shift)) {
                /* no exact i64 kernel computes these on u64's bits */
                CHECK(st != NULL && strstr(pl_status_message(st), "u64") != NULL,
                      "%s on u64 accepted, or refused without naming u64", op);
                pl_status_free(st);
                ch_node_free(&n);
                continue;
            }
            CHECK(st == NULL, "%s on %s: %s", op, pl_dtype_name(dt),
                  st ? pl_status_message(st) : "");
            pl_status_free(st);
            if (k == NULL) {
                ch_node_free(&n);
                continue;
            }
            ch_buf a, b, y;
            size_t es = pl_dtype_size(dt);
            ch_buf_make(&a, 6 * es, 8);
            ch_buf_make(&b, 3 * es, 8);
            ch_buf_make(&y, 6 * (compare ? 1 : es), 8);
            for (size_t i = 0; i < 6; i++)
                tm_wide_put(a.data, dt, i, av[d][i]);
            for (size_t i = 0; i < 3; i++)
                tm_wide_put(b.data, dt, i, shift ? (uint64_t)(i * 5 + 1) : bv[d][i]);
            pl_tensor ins[2] = {ch_host_tensor(&n.in[0], &a), ch_host_tensor(&n.in[1], &b)};
            pl_tensor ty = ch_host_tensor(&n.out[0], &y);
            pl_output_request req = PL_REQ_WRITE;
            CHECK_OK(ch_run(k, 2, ins, 1, &ty, &req));
            for (size_t i = 0; i < 6; i++) {
                uint64_t x = tm_wide_get(a.data, dt, i), z = tm_wide_get(b.data, dt, i % 3);
                int64_t xs = (int64_t)x, zs = (int64_t)z; /* i16: sign-extended */
                bool lt = sgn ? xs < zs : (x & mask) < (z & mask);
                uint64_t want;
                if (!strcmp(op, "Add")) want = x + z;
                else if (!strcmp(op, "Sub")) want = x - z;
                else if (!strcmp(op, "Mul")) want = x * z;
                else if (!strcmp(op, "Div"))
                    want = sgn ? (uint64_t)(xs / zs) : (x & mask) / (z & mask);
                else if (!strcmp(op, "Less")) want = lt;
                else if (!strcmp(op, "Equal")) want = (x & mask) == (z & mask);
                else if (!strcmp(op, "Max")) want = lt ? z : x;
                else if (!strcmp(op, "BitwiseXor")) want = x ^ z;
                else want = z >= (uint64_t)bits ? 0 : x << z;
                uint64_t got = compare ? ((const uint8_t *)y.data)[i] : tm_wide_get(y.data, dt, i);
                want &= compare ? 1 : mask;
                got &= compare ? 1 : mask;
                CHECK(got == want, "%s %s element %zu: %llu, want %llu", op, pl_dtype_name(dt), i,
                      (unsigned long long)got, (unsigned long long)want);
            }
            free(a.base);
            free(b.base);
            free(y.base);
            ch_mod->api.kernel_release(ch_mod->ctx, k);
            ch_node_free(&n);
        }
}

/* Mod with fmod = 0 on floats, defined from opset 28 as floor modulo (the
 * sign of the divisor) with ONNX's special cases; refused before 28. */
static void case_mod_floor(void)
{
    enum { N = 9 };
    const double xv[N] = {5.5, -5.5, 5.5, -5.5, 0.0, -0.0, INFINITY, 3, 3};
    const double yv[N] = {2, 2, -2, -2, 3, -3, 2, INFINITY, -INFINITY};
    const double want[N] = {1.5, 0.5, -0.5, -1.5, 0.0, -0.0, NAN, 3, -INFINITY};
    ch_spec sp = {.op = "Mod", .opset = 28, .n_in = 2, .in = {T(1, N), T(1, N)},
                  .attrs = {AI("fmod", 0)}, .n_attrs = 1};
    ch_node n;
    ch_node_build(&sp, &n);
    pl_kernel *k = ch_kernel(&n.desc);
    ch_buf a, b, y;
    ch_buf_make(&a, N * 4, 8);
    ch_buf_make(&b, N * 4, 8);
    ch_buf_make(&y, N * 4, 8);
    for (int i = 0; i < N; i++) {
        ch_store(a.data, PL_DTYPE_F32, (size_t)i, xv[i]);
        ch_store(b.data, PL_DTYPE_F32, (size_t)i, yv[i]);
    }
    pl_tensor ins[2] = {ch_host_tensor(&n.in[0], &a), ch_host_tensor(&n.in[1], &b)};
    pl_tensor ty = ch_host_tensor(&n.out[0], &y);
    pl_output_request req = PL_REQ_WRITE;
    CHECK_OK(ch_run(k, 2, ins, 1, &ty, &req));
    for (int i = 0; i < N; i++) {
        double got = ch_load(y.data, PL_DTYPE_F32, (size_t)i);
        bool same = isnan(want[i]) ? isnan(got) : got == want[i] && signbit(got) == signbit(want[i]);
        CHECK(same, "Mod(%g, %g) with fmod 0 = %g, want %g", xv[i], yv[i], got, want[i]);
    }
    free(a.base);
    free(b.base);
    free(y.base);
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    ch_node_free(&n);
}

/* f32 Exp, Sigmoid, Tanh and Log run eight lanes at a time where the CPU
 * has AVX2 (math_unary.c) and the last N % 8 elements on the scalar loop.
 * For each edge value (NaN, infinities, overflowing and underflowing
 * inputs, signed zeros, the Taylor/exp boundary of Tanh, Log's 1, its
 * sqrt(1/2) split, a subnormal and negatives) nine copies are run:
 * every lane must agree with the scalar tail within 2 ulp, NaN with NaN. */
static void case_unary_lanes(void)
{
    static const char *const ops[] = {"Exp", "Sigmoid", "Tanh", "Log"};
    const double edges[] = {NAN, INFINITY, -INFINITY, 100, -100, 88.5, -87.5, 1e-30, -0.0,
                            0.0, 0.2499, 0.25, -0.2501, 0.3, -5, 9.5, -20,
                            1.0, 0.7071, 0.7072, 1e-40, 3.4e38, 2.0};
    for (size_t o = 0; o < CH_COUNT(ops); o++)
        for (size_t e = 0; e < CH_COUNT(edges); e++) {
            ch_spec s = {.op = ops[o], .n_in = 1, .in = {T(1, 9)}};
            ch_node n;
            ch_node_build(&s, &n);
            pl_kernel *k = ch_kernel(&n.desc);
            ch_buf in, out;
            ch_buf_make(&in, 9 * sizeof(float) + 1, 8);
            ch_buf_make(&out, 9 * sizeof(float) + 1, 8);
            for (int i = 0; i < 9; i++)
                ch_store(in.data, PL_DTYPE_F32, (size_t)i, edges[e]);
            pl_tensor x = ch_host_tensor(&n.in[0], &in), y = ch_host_tensor(&n.out[0], &out);
            pl_output_request req = PL_REQ_WRITE;
            CHECK_OK(ch_run(k, 1, &x, 1, &y, &req));
            float tail = (float)ch_load(out.data, PL_DTYPE_F32, 8);
            for (int i = 0; i < 8; i++) {
                float lane = (float)ch_load(out.data, PL_DTYPE_F32, (size_t)i);
                bool same = (isnan(lane) && isnan(tail)) || lane == tail ||
                            fabsf(lane - tail) <= 2 * fabsf(nextafterf(tail, INFINITY) - tail);
                CHECK(same, "%s(%g): lane %d gives %.9g, the scalar tail %.9g", ops[o], edges[e],
                      i, lane, tail);
            }
            free(in.base);
            free(out.base);
            ch_mod->api.kernel_release(ch_mod->ctx, k);
            ch_node_free(&n);
        }
}

/* e^x out of f32's normal range, on the eight-lane loops and the scalar
 * tail: exactly 0 below -87.34 (never a denormal, which would make every
 * product reading it take microcode assists), +inf above 88.73; Sigmoid 1
 * far right and 0 far left (below -88.73). And Softmax over a causal mask (-inf, -1e9, -FLT_MAX above
 * the diagonal, rows of 24 = three lanes of eight and none left over, and
 * of 21): masked entries exactly 0, no denormal anywhere, rows summing to
 * 1. (The old clamp gave e^-inf = 1.2e-38 and Softmax rows of 2e-40s: a
 * masked [8,24,24] attention's MatMul ran 9x slower on them.) */
static void case_exp_range(void)
{
    enum { N = 19 };
    const float lows[] = {-INFINITY, -1e9f, -3.4e38f, -87.5f, -100.0f, -103.0f, -150.0f};
    const float highs[] = {INFINITY, 89.0f, 100.0f, 1e9f};
    float v[N], y[N];
    ch_spec e = {.op = "Exp", .n_in = 1, .in = {T(1, N)}};
    ch_spec sg = {.op = "Sigmoid", .n_in = 1, .in = {T(1, N)}};
    for (size_t i = 0; i < CH_COUNT(lows); i++) {
        for (int j = 0; j < N; j++)
            v[j] = lows[i];
        tm_run_f32(&e, v, y, N);
        for (int j = 0; j < N; j++)
            CHECK(y[j] == 0.0f, "exp(%g) = %g (element %d), want 0", (double)lows[i],
                  (double)y[j], j);
        for (int j = 0; j < N; j++)
            v[j] = -lows[i];
        tm_run_f32(&sg, v, y, N);
        for (int j = 0; j < N; j++)
            CHECK(y[j] == 1.0f, "sigmoid(%g) = %g (element %d), want 1", (double)-lows[i],
                  (double)y[j], j);
        if (lows[i] > -89.0f)
            continue; /* 1 / (1 + e^87.5) is a true denormal */
        for (int j = 0; j < N; j++)
            v[j] = lows[i];
        tm_run_f32(&sg, v, y, N);
        for (int j = 0; j < N; j++)
            CHECK(y[j] == 0.0f, "sigmoid(%g) = %g (element %d), want 0", (double)lows[i],
                  (double)y[j], j);
    }
    for (size_t i = 0; i < CH_COUNT(highs); i++) {
        for (int j = 0; j < N; j++)
            v[j] = highs[i];
        tm_run_f32(&e, v, y, N);
        for (int j = 0; j < N; j++)
            CHECK(isinf(y[j]) && y[j] > 0, "exp(%g) = %g (element %d), want inf",
                  (double)highs[i], (double)y[j], j);
    }
    const float masks[] = {-INFINITY, -1e9f, -3.4e38f};
    const int lens[] = {24, 21};
    for (size_t m = 0; m < CH_COUNT(masks); m++)
        for (size_t l = 0; l < CH_COUNT(lens); l++) {
            const int len = lens[l], n = len * len;
            float *x = malloc((size_t)n * sizeof *x), *p = malloc((size_t)n * sizeof *p);
            CHECK(x && p, "out of memory");
            for (int r = 0; r < len; r++)
                for (int c = 0; c < len; c++)
                    x[r * len + c] = c > r ? masks[m] : (float)((r * 7 + c * 3) % 11) * 0.3f;
            ch_spec sm = {.op = "Softmax", .n_in = 1, .in = {T(2, len, len)},
                          .attrs = {AI("axis", -1)}, .n_attrs = 1};
            tm_run_f32(&sm, x, p, n);
            for (int r = 0; r < len; r++) {
                double sum = 0;
                for (int c = 0; c < len; c++) {
                    float q = p[r * len + c];
                    sum += q;
                    CHECK(c <= r || q == 0.0f, "softmax row %d col %d under mask %g: %g, want 0",
                          r, c, (double)masks[m], (double)q);
                    CHECK(q == 0.0f || q >= FLT_MIN, "softmax row %d col %d: denormal %g", r, c,
                          (double)q);
                }
                CHECK(fabs(sum - 1.0) < 1e-5, "softmax row %d sums to %.9g", r, sum);
            }
            free(x);
            free(p);
        }
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
    {"activations", case_activations},
    {"dtype_edges", case_dtype_edges},
    {"wide_ints", case_wide_ints},
    {"Softmax", case_Softmax},
    {"MatMul_dtypes", case_MatMul_dtypes},
    {"blas_lazy", case_blas_lazy},
    {"unary_lanes", case_unary_lanes},
    {"log_sweep", case_log_sweep},
    {"erf_sweep", case_erf_sweep},
    {"exp_range", case_exp_range},
    {"bitwise", case_bitwise},
    {"mod_floor", case_mod_floor},
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < CH_COUNT(tm_cases); i++) {
        if (strcmp(argv[1], tm_cases[i].name) != 0)
            continue;
        ch_setup(argv[2]);
        tm_cases[i].run();
        ch_teardown();
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
