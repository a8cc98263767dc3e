/* test_sdk_cost.c — plinth/cost.h, the header-only FLOPs and bytes of a
 * node that cost-aware placement starts from, on one-node views made here
 * (a pl_graph_api of the test's own over a struct pl_graph_view it
 * defines): a multiply-add counts 2, the products' K comes from the right
 * dim (transA included), a grouped and a transposed convolution count their
 * own shapes, an RNN counts every step, direction and gate, an unknown dim
 * makes a tensor count as empty. Usage: test_sdk_cost CASE. */
#include <plinth/cost.h>

#include <math.h>
#include <string.h>

#include "../harness.h"

/* One node: OP, tensors 0..n_in-1 its inputs, then its outputs. */
struct pl_graph_view {
    const char *op;
    size_t n_in, n_out;
    int32_t ndim[6];
    int64_t dims[6][6];
    int64_t trans_a;
    const char *direction;
    unsigned constants;    /* bit t: tensor t is a constant */
    size_t constant_bytes; /* what the view says all its constants take */
};

static size_t cv_one(const pl_graph_view *v) { (void)v; return 1; }
static const char *cv_op(const pl_graph_view *v, size_t n) { (void)n; return v->op; }
static int64_t cv_opset(const pl_graph_view *v, size_t n) { (void)v; (void)n; return 13; }
static size_t cv_in_count(const pl_graph_view *v, size_t n) { (void)n; return v->n_in; }
static size_t cv_out_count(const pl_graph_view *v, size_t n) { (void)n; return v->n_out; }
static int64_t cv_in(const pl_graph_view *v, size_t n, size_t i)
{
    (void)n;
    return i < v->n_in ? (int64_t)i : -1;
}
static int64_t cv_out(const pl_graph_view *v, size_t n, size_t i)
{
    (void)n;
    return i < v->n_out ? (int64_t)(v->n_in + i) : -1;
}
static int cv_type(const pl_graph_view *v, int64_t t, pl_dtype *dt, int32_t *ndim,
                   const int64_t **dims)
{
    *dt = PL_DTYPE_F32;
    *ndim = v->ndim[t];
    *dims = v->dims[t];
    return 1;
}
static int cv_attr_int(const pl_graph_view *v, size_t n, const char *name, int64_t *out)
{
    (void)n;
    if (strcmp(name, "transA") == 0 && v->trans_a) {
        *out = 1;
        return 1;
    }
    return 0;
}

static int cv_constant(const pl_graph_view *v, int64_t t, const void **data, size_t *bytes)
{
    static const float none;
    if (t < 0 || t >= 6 || !(v->constants & (1u << t)))
        return 0;
    *data = &none;
    *bytes = 0;
    return 1;
}
static size_t cv_constant_bytes(const pl_graph_view *v) { return v->constant_bytes; }

static const pl_graph_api cv_api = {
    .header = PL_ABI_HEADER_INIT(pl_graph_api),
    .node_count = cv_one,
    .node_op = cv_op,
    .node_opset = cv_opset,
    .node_input_count = cv_in_count,
    .node_output_count = cv_out_count,
    .node_input = cv_in,
    .node_output = cv_out,
    .tensor_type = cv_type,
    .attr_int = cv_attr_int,
    .tensor_constant = cv_constant,
    .constant_bytes = cv_constant_bytes,
};

/* The same, as a core of ABI 1.6 would give it: no constant_bytes. */
#define CV_API_1_6_SIZE (offsetof(pl_graph_api, tensor_digest) + sizeof(void (*)(void)))

static void cv_set(pl_graph_view *v, size_t t, int32_t nd, const int64_t *d)
{
    v->ndim[t] = nd;
    memcpy(v->dims[t], d, (size_t)nd * sizeof *d);
}

static double cv_flops(const pl_graph_view *v, double *bytes)
{
    double flops;
    pl_cost_work(&cv_api, v, 0, &flops, bytes);
    return flops;
}

static void case_products(void)
{
    /* Conv: 2 x N x M x C/g x kH x kW x outH x outW. */
    pl_graph_view v = {.op = "Conv", .n_in = 2, .n_out = 1};
    cv_set(&v, 0, 4, (int64_t[]){2, 16, 8, 8});
    cv_set(&v, 1, 4, (int64_t[]){32, 4, 3, 3}); /* group 4 */
    cv_set(&v, 2, 4, (int64_t[]){2, 32, 8, 8});
    double bytes;
    double f = cv_flops(&v, &bytes);
    TH_CHECK(f == 2.0 * 2 * 32 * 4 * 9 * 64, "grouped Conv: %g FLOPs", f);
    TH_CHECK(bytes == 4.0 * (2 * 16 * 64 + 32 * 4 * 9 + 2 * 32 * 64), "Conv bytes: %g", bytes);
    /* ConvTranspose: W is [C, M/g, k...], and the input's spatial counts. */
    v.op = "ConvTranspose";
    cv_set(&v, 0, 4, (int64_t[]){1, 8, 5, 5});
    cv_set(&v, 1, 4, (int64_t[]){8, 3, 2, 2});
    cv_set(&v, 2, 4, (int64_t[]){1, 3, 10, 10});
    f = cv_flops(&v, &bytes);
    TH_CHECK(f == 2.0 * 1 * 8 * 3 * 4 * 25, "ConvTranspose: %g FLOPs", f);
    /* MatMul with a batch: every one of the B x M x N results is K long. */
    pl_graph_view m = {.op = "MatMul", .n_in = 2, .n_out = 1};
    cv_set(&m, 0, 3, (int64_t[]){4, 7, 5});
    cv_set(&m, 1, 2, (int64_t[]){5, 6});
    cv_set(&m, 2, 3, (int64_t[]){4, 7, 6});
    f = cv_flops(&m, &bytes);
    TH_CHECK(f == 2.0 * 4 * 7 * 6 * 5, "MatMul: %g FLOPs", f);
    /* Gemm with transA: A is [K, M]. */
    pl_graph_view gm = {.op = "Gemm", .n_in = 2, .n_out = 1, .trans_a = 1};
    cv_set(&gm, 0, 2, (int64_t[]){9, 3});
    cv_set(&gm, 1, 2, (int64_t[]){9, 4});
    cv_set(&gm, 2, 2, (int64_t[]){3, 4});
    f = cv_flops(&gm, &bytes);
    TH_CHECK(f == 2.0 * 3 * 4 * 9, "Gemm transA: %g FLOPs", f);
}

static void case_rnn_and_rest(void)
{
    /* A bidirectional GRU: 2 x T x N x dirs x 3H x (I + H). */
    pl_graph_view v = {.op = "GRU", .n_in = 3, .n_out = 1};
    cv_set(&v, 0, 3, (int64_t[]){20, 2, 16});
    cv_set(&v, 1, 3, (int64_t[]){2, 3 * 8, 16});
    cv_set(&v, 2, 3, (int64_t[]){2, 3 * 8, 8});
    cv_set(&v, 3, 4, (int64_t[]){20, 2, 2, 8});
    double bytes;
    double f = cv_flops(&v, &bytes);
    TH_CHECK(f == 2.0 * 20 * 2 * 2 * 24 * (16 + 8), "GRU: %g FLOPs", f);
    /* Elementwise: one per output element; the default time is memory-bound. */
    pl_graph_view e = {.op = "Relu", .n_in = 1, .n_out = 1};
    cv_set(&e, 0, 2, (int64_t[]){1000, 1000});
    cv_set(&e, 1, 2, (int64_t[]){1000, 1000});
    f = cv_flops(&e, &bytes);
    TH_CHECK(f == 1e6 && bytes == 8e6, "Relu: %g FLOPs, %g bytes", f, bytes);
    double us = pl_cost_default_us(&cv_api, &e, 0);
    TH_CHECK(fabs(us - 8e6 / (PL_COST_GBPS * 1e3)) < 1e-9, "Relu default: %g us", us);
    /* A transcendental one: pl_cost_per_element FLOPs an element; the
     * default time is whichever bound is slower on this host. */
    e.op = "Tanh";
    f = cv_flops(&e, &bytes);
    TH_CHECK(f == 1e6 * pl_cost_per_element("Tanh") && pl_cost_per_element("Tanh") > 1 &&
                 bytes == 8e6,
             "Tanh: %g FLOPs, %g bytes", f, bytes);
    us = pl_cost_default_us(&cv_api, &e, 0);
    double c_us = f / (pl_cost_gflops() * 1e3), m_us = 8e6 / (PL_COST_GBPS * 1e3);
    TH_CHECK(fabs(us - (c_us > m_us ? c_us : m_us)) < 1e-9, "Tanh default: %g us", us);
    e.op = "Relu";
    /* An unknown dim: the tensor counts as empty, nothing is negative. */
    e.dims[0][0] = -1;
    e.dims[1][0] = -1;
    f = cv_flops(&e, &bytes);
    TH_CHECK(f == 0 && bytes == 0, "unknown dims: %g FLOPs, %g bytes", f, bytes);
    TH_CHECK(pl_cost_default_us(&cv_api, &e, 0) == 0, "unknown dims cost time");
}

/* Ops that select from their first input read only what they write: a
 * Gather of 4 rows of a [30000, 256] table moves the rows and the indices,
 * not the 30 MB table; a Slice its result; a Shape nothing of its input.
 * A Gather whose output is larger than its input (rows repeated) still
 * counts its input once. */
static void case_selecting(void)
{
    pl_graph_view v = {.op = "Gather", .n_in = 2, .n_out = 1};
    cv_set(&v, 0, 2, (int64_t[]){30000, 256});
    cv_set(&v, 1, 1, (int64_t[]){4});
    cv_set(&v, 2, 2, (int64_t[]){4, 256});
    double bytes;
    cv_flops(&v, &bytes);
    TH_CHECK(bytes == 2 * 4 * 256 * 4.0 + 4 * 4.0, "Gather of 4 rows: %g bytes", bytes);
    v.op = "Slice";
    cv_flops(&v, &bytes);
    TH_CHECK(bytes == 2 * 4 * 256 * 4.0 + 4 * 4.0, "Slice: %g bytes", bytes);
    v.op = "Shape";
    v.n_in = 1;
    cv_set(&v, 1, 1, (int64_t[]){2});
    cv_flops(&v, &bytes);
    TH_CHECK(bytes == 2 * 4.0, "Shape: %g bytes", bytes);
    /* every row 3 times: the input once, the output whole */
    v.op = "Gather";
    v.n_in = 2;
    cv_set(&v, 0, 2, (int64_t[]){2, 256});
    cv_set(&v, 1, 1, (int64_t[]){6});
    cv_set(&v, 2, 2, (int64_t[]){6, 256});
    cv_flops(&v, &bytes);
    TH_CHECK(bytes == 2 * 256 * 4.0 + 6 * 4.0 + 6 * 256 * 4.0, "repeating Gather: %g bytes", bytes);
    /* and an op that reads its whole input still counts it */
    v.op = "Relu";
    v.n_in = 1;
    cv_set(&v, 1, 2, (int64_t[]){2, 256});
    v.n_out = 1;
    cv_flops(&v, &bytes);
    TH_CHECK(bytes == 2 * 2 * 256 * 4.0, "Relu: %g bytes", bytes);
}

/* Weights that fit in a core's cache are read at PL_COST_CACHE_GBPS, the
 * activations still at PL_COST_GBPS; a model whose constants do not fit,
 * or a core that does not say (ABI 1.6), reads them at PL_COST_GBPS. */
static void case_resident_weights(void)
{
    /* One row by a 512x512 weight (1 MB): memory-bound either way. */
    pl_graph_view v = {.op = "MatMul", .n_in = 2, .n_out = 1, .constants = 2};
    cv_set(&v, 0, 2, (int64_t[]){1, 512});
    cv_set(&v, 1, 2, (int64_t[]){512, 512});
    cv_set(&v, 2, 2, (int64_t[]){1, 512});
    double w = 512.0 * 512 * 4, act = 2 * 512.0 * 4;
    double slow = (w + act) / (PL_COST_GBPS * 1e3);
    double fast = w / (PL_COST_CACHE_GBPS * 1e3) + act / (PL_COST_GBPS * 1e3);
    TH_CHECK(PL_COST_CACHE_GBPS > PL_COST_GBPS && fast < slow, "rates");
    v.constant_bytes = (size_t)w;
    TH_CHECK(w <= PL_COST_CACHE_BYTES && pl_cost_weights_resident(&cv_api, &v),
             "1 MB of weights does not count as resident");
    double us = pl_cost_default_us(&cv_api, &v, 0);
    TH_CHECK(fabs(us - fast) < 1e-9, "resident: %g us, want %g", us, fast);
    /* the model's constants as a whole do not fit */
    v.constant_bytes = PL_COST_CACHE_BYTES + 1;
    TH_CHECK(!pl_cost_weights_resident(&cv_api, &v), "one byte over the cache counts as resident");
    us = pl_cost_default_us(&cv_api, &v, 0);
    TH_CHECK(fabs(us - slow) < 1e-9, "not resident: %g us, want %g", us, slow);
    /* an activation is never read at the cache rate */
    v.constant_bytes = (size_t)w;
    v.constants = 0;
    us = pl_cost_default_us(&cv_api, &v, 0);
    TH_CHECK(fabs(us - slow) < 1e-9, "no constants: %g us, want %g", us, slow);
    /* a core of ABI 1.6 */
    v.constants = 2;
    pl_graph_api old = cv_api;
    old.header.struct_size = (uint32_t)CV_API_1_6_SIZE;
    old.header.abi_minor = 6;
    TH_CHECK(!pl_cost_weights_resident(&old, &v), "an ABI 1.6 table counts as resident (no constant_bytes)");
    us = pl_cost_default_us(&old, &v, 0);
    TH_CHECK(fabs(us - slow) < 1e-9, "ABI 1.6: %g us, want %g", us, slow);
}

int main(int argc, char **argv)
{
    static const th_case cases[] = {
        {"products", case_products},
        {"rnn_and_rest", case_rnn_and_rest},
        {"selecting", case_selecting},
        {"resident_weights", case_resident_weights},
    };
    return th_main(argc, argv, cases, sizeof cases / sizeof cases[0], 0, "");
}
