/* test_cpu_index.c — the cpu module's index and loss families
 * (modules/cpu/index.c, topk.c, einsum.c, loss.c) and their schemas
 * (core/opset/src/opset_index.c, opset_loss.c), driven as the core drives them: a
 * one-node graph whose shapes the core's opset infers, a view of it, then
 * get_kernel and kernel_run through the module's table.
 *
 * Expected values are written out by hand from the ONNX definitions, or
 * computed here by plain loops of the definition (Einsum, DepthToSpace);
 * the cases aim at the edges: negative indices, indices out of range (a
 * clean error that leaves the output untouched), duplicate scatter indices
 * with each reduction, ties and NaN in TopK, K and depth known only at run
 * time, ignore_index, empty tensors and each op's refusals. Built on the
 * shared harness of tests/cpu_harness. Usage: test_cpu_index CASE STAGE_DIR. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_harness.h"

#define F32 PL_DTYPE_F32
#define F64 PL_DTYPE_F64
#define I64 PL_DTYPE_I64
#define I32 PL_DTYPE_I32
#define BOOL PL_DTYPE_BOOL

/* ---- one node, explicit tensors ------------------------------------------- */

/* A tensor of a case: dtype (lanes 0: f32), shape, and for an input its
 * data and whether it is a graph constant. ndim -1: an absent input, or an
 * output whose type is not declared (the inference gives it). */
typedef struct ti_t {
    pl_dtype dt;
    int ndim;
    int64_t dims[CH_MAX_RANK];
    const void *data;
    int constant;
} ti_t;

/* QLinearConv has nine inputs, more than the harness's nodes hold. */
#define TI_MAX_IN 9
/* TfIdfVectorizer has seven attributes. */
#define TI_MAX_ATTRS 8

typedef struct ti_case {
    const char *op;
    int opset; /* 0: 13 */
    int n_in;
    ti_t in[TI_MAX_IN];
    int n_attrs;
    ch_attr attrs[TI_MAX_ATTRS];
    int n_out; /* 0: 1 */
    ti_t out[CH_MAX_OUT];
} ti_case;

static pl_dtype ti_dt(const ti_t *t) { return t->dt.lanes ? t->dt : F32; }

/* A built node: graph, view, tensor descriptions (pointing into the
 * graph) and the pl_node_desc. */
typedef struct ti_node {
    pl_graph *g;
    pl_graph_view *view;
    pl_tensor in[TI_MAX_IN];
    pl_tensor out[CH_MAX_OUT];
    int n_out;
    pl_node_desc desc;
} ti_node;

static void ti_node_free(ti_node *n)
{
    pl_graph_view_destroy(n->view);
    pl_graph_destroy(n->g);
}

/* Builds case C as a one-node graph into N and infers it; returns the
 * inference's status (the graph is kept either way; free with
 * ti_node_free). */
static pl_status *ti_build(const ti_case *c, ti_node *n)
{
    memset(n, 0, sizeof *n);
    int opset = c->opset ? c->opset : 13;
    CHECK_OK(pl_graph_create(&n->g));
    CHECK_OK(pl_graph_set_opset(n->g, "", opset));
    char names[TI_MAX_IN + CH_MAX_OUT][16];
    const char *in_names[TI_MAX_IN], *out_names[CH_MAX_OUT];
    for (int i = 0; i < c->n_in; i++) {
        const ti_t *t = &c->in[i];
        snprintf(names[i], sizeof names[i], "x%d", i);
        in_names[i] = t->ndim < 0 ? "" : names[i];
        if (t->ndim < 0)
            continue;
        pl_tid tid;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, names[i], &tid));
        CHECK_OK(pl_graph_set_type(n->g, tid, ti_dt(t), t->ndim, t->dims, NULL));
        if (t->constant)
            CHECK_OK(pl_graph_set_constant(n->g, tid, t->data,
                                           ch_count(t->dims, t->ndim) * pl_dtype_size(ti_dt(t))));
        else
            CHECK_OK(pl_graph_add_input(n->g, tid));
    }
    n->n_out = c->n_out ? c->n_out : 1;
    for (int o = 0; o < n->n_out; o++) {
        char *name = names[TI_MAX_IN + o];
        snprintf(name, 16, "y%d", o);
        out_names[o] = name;
        pl_tid tid;
        CHECK_OK(pl_graph_tensor_get_or_add(n->g, name, &tid));
        if (c->out[o].ndim > 0 || c->out[o].dt.lanes != 0)
            CHECK_OK(pl_graph_set_type(n->g, tid, c->out[o].dt, c->out[o].ndim, c->out[o].dims,
                                       NULL));
    }
    pl_nid nid;
    CHECK_OK(pl_graph_add_node(n->g, "node", c->op, "", in_names, (size_t)c->n_in, out_names,
                               (size_t)n->n_out, &nid));
    for (int a = 0; a < c->n_attrs; a++)
        ch_attr_set(n->g, nid, &c->attrs[a]);
    for (int o = 0; o < n->n_out; o++)
        CHECK_OK(pl_graph_add_output(n->g, pl_graph_find_tensor(n->g, out_names[o])));
    CHECK_OK(pl_graph_validate(n->g));
    pl_status *st = pl_opset_infer(ch_rt->opset, n->g);
    if (st != NULL)
        return st;
    CHECK_OK(pl_graph_view_create(n->g, &nid, 1, &n->view));
    const pl_graph_node *gn = pl_graph_get_node(n->g, nid);
    for (size_t i = 0; i < gn->n_inputs; i++)
        ch_describe(n->g, gn->inputs[i], &n->in[i]);
    for (size_t o = 0; o < gn->n_outputs; o++)
        ch_describe(n->g, gn->outputs[o], &n->out[o]);
    n->desc = (pl_node_desc){
        .header = PL_ABI_HEADER_INIT(pl_node_desc),
        .name = "node",
        .op = c->op,
        .domain = "",
        .opset_version = opset,
        .graph = n->view,
        .n_inputs = gn->n_inputs,
        .inputs = n->in,
        .n_outputs = gn->n_outputs,
        .outputs = n->out,
    };
    return NULL;
}

/* Runs case C with request REQ on every output into OUTS (each as large as
 * the inferred output). Returns the run's status; fails the test if the
 * node does not infer or get a kernel. With REQ in place, OUTS[0] must be
 * input 0's data. */
static pl_status *ti_run_req(const ti_case *c, void *const *outs, pl_output_request req)
{
    ti_node n;
    pl_status *st = ti_build(c, &n);
    CHECK(st == NULL, "%s: inference failed: %s", c->op, pl_status_message(st));
    pl_kernel *k = ch_kernel(&n.desc);
    pl_tensor ins[TI_MAX_IN], ots[CH_MAX_OUT];
    pl_output_request reqs[CH_MAX_OUT];
    for (int i = 0; i < c->n_in; i++) {
        ins[i] = n.in[i];
        ins[i].data = (void *)c->in[i].data;
    }
    for (int o = 0; o < n.n_out; o++) {
        ots[o] = n.out[o];
        ots[o].data = outs[o];
        reqs[o] = req;
    }
    st = ch_run(k, (size_t)c->n_in, ins, (size_t)n.n_out, ots, reqs);
    ch_mod->api.kernel_release(ch_mod->ctx, k);
    ti_node_free(&n);
    return st;
}

static void ti_run(const ti_case *c, void *const *outs)
{
    pl_status *st = ti_run_req(c, outs, PL_REQ_WRITE);
    CHECK(st == NULL, "%s: run failed: %s", c->op, pl_status_message(st));
}

/* The run must fail with INVALID_ARGUMENT and a message holding MESSAGE,
 * leaving output 0 (BYTES of it) as it was. */
static void ti_run_fails(const ti_case *c, void *const *outs, size_t bytes, const char *message)
{
    unsigned char before[256];
    CHECK(bytes <= sizeof before, "output too large to compare");
    memcpy(before, outs[0], bytes);
    pl_status *st = ti_run_req(c, outs, PL_REQ_WRITE);
    CHECK(st != NULL, "%s: the run accepted bad input", c->op);
    CHECK(pl_status_code(st) == PL_CODE_INVALID_ARGUMENT &&
              strstr(pl_status_message(st), message) != NULL,
          "%s: error \"%s\" lacks \"%s\"", c->op, pl_status_message(st), message);
    pl_status_free(st);
    CHECK(memcmp(before, outs[0], bytes) == 0, "%s: a failed run wrote its output", c->op);
}

/* The inference must fail with a message holding MESSAGE. */
static void ti_infer_fails(const ti_case *c, const char *message)
{
    ti_node n;
    pl_status *st = ti_build(c, &n);
    CHECK(st != NULL, "%s: the inference accepted the node", c->op);
    CHECK(strstr(pl_status_message(st), message) != NULL, "%s: error \"%s\" lacks \"%s\"", c->op,
          pl_status_message(st), message);
    pl_status_free(st);
    ti_node_free(&n);
}

/* get_kernel must refuse case C with a message holding MESSAGE. */
static void ti_refused(const ti_case *c, const char *message)
{
    ti_node n;
    pl_status *st = ti_build(c, &n);
    CHECK(st == NULL, "%s: inference failed: %s", c->op, pl_status_message(st));
    st = ch_refusal(&n.desc);
    CHECK(strstr(pl_status_message(st), message) != NULL, "%s: refusal \"%s\" lacks \"%s\"",
          c->op, pl_status_message(st), message);
    pl_status_free(st);
    ti_node_free(&n);
}

/* Compares N floats of GOT with WANT (NaN equals NaN). */
static void ti_near(const char *what, const float *got, const double *want, size_t n, double tol)
{
    for (size_t i = 0; i < n; i++) {
        bool ok = isnan(want[i]) ? isnan(got[i]) : fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i]));
        CHECK(ok, "%s: element %zu is %.9g, expected %.9g", what, i, got[i], want[i]);
    }
}

static void ti_eq_i64(const char *what, const int64_t *got, const int64_t *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        CHECK(got[i] == want[i], "%s: element %zu is %lld, expected %lld", what, i,
              (long long)got[i], (long long)want[i]);
}

#define TI(dtype, r, ...) {.dt = dtype, .ndim = r, .dims = {__VA_ARGS__}}
#define TIN(dtype, ptr, r, ...) {.dt = dtype, .ndim = r, .dims = {__VA_ARGS__}, .data = ptr}
#define TIC(dtype, ptr, r, ...) \
    {.dt = dtype, .ndim = r, .dims = {__VA_ARGS__}, .data = ptr, .constant = 1}
#define TABSENT {.ndim = -1}
#define OUTS(...) ((void *const[]){__VA_ARGS__})

/* ---- GatherElements ---------------------------------------------------------- */

static void case_GatherElements(void)
{
    float data[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[6];
    int64_t idx[6] = {-1, 0, 2, 1, -3, 0};
    ti_case c = {.op = "GatherElements", .n_in = 2,
                 .in = {TIN(F32, data, 2, 3, 3), TIN(I64, idx, 2, 2, 3)}};
    ti_run(&c, OUTS(y));
    ti_near("axis 0, negative indices", y, (double[]){7, 2, 9, 4, 2, 3}, 6, 0);

    /* axis 1, i32 indices smaller than the data in the other dim */
    int32_t idx32[4] = {0, 0, 1, 0};
    ti_case c1 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(F32, data, 2, 3, 3), TIN(I32, idx32, 2, 2, 2)},
                  .n_attrs = 1, .attrs = {AI("axis", 1)}};
    ti_run(&c1, OUTS(y));
    ti_near("axis 1, i32", y, (double[]){1, 1, 5, 4}, 4, 0);

    /* i64 data beyond double precision moves exactly */
    int64_t big[3] = {(INT64_C(1) << 53) + 1, -7, INT64_MAX}, bi[2] = {2, 0}, by[2];
    ti_case c2 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(I64, big, 1, 3), TIN(I64, bi, 1, 2)}};
    ti_run(&c2, OUTS(by));
    ti_eq_i64("i64 data", by, (int64_t[]){INT64_MAX, (INT64_C(1) << 53) + 1}, 2);

    /* out of range, both ends */
    int64_t bad[6] = {0, 0, 0, 0, 3, 0};
    ti_case c3 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(F32, data, 2, 3, 3), TIN(I64, bad, 2, 2, 3)}};
    memset(y, 0x7f, sizeof y);
    ti_run_fails(&c3, OUTS(y), sizeof y, "index 3 (element 4 of the indices) is out of range");
    bad[4] = -4;
    ti_run_fails(&c3, OUTS(y), sizeof y, "index -4 (element 4 of the indices) is out of range");

    /* empty indices: an empty output, nothing read */
    ti_case c4 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(F32, data, 2, 3, 3), TIN(I64, idx, 2, 0, 3)}};
    ti_run(&c4, OUTS(y));

    /* indices larger than the data along another axis would read outside it */
    ti_case c6 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(F32, data, 2, 2, 2), TIN(I64, idx, 2, 3, 1)},
                  .n_attrs = 1, .attrs = {AI("axis", 1)}};
    ti_refused(&c6, "cpu: GatherElements: indices [3,1] exceed data [2,2] in dimension 0");

    /* ranks must agree */
    ti_case c5 = {.op = "GatherElements", .n_in = 2,
                  .in = {TIN(F32, data, 2, 3, 3), TIN(I64, idx, 1, 3)}};
    ti_infer_fails(&c5, "differ in rank");
}

/* ---- GatherND ------------------------------------------------------------------ */

static void case_GatherND(void)
{
    int32_t d[4] = {0, 1, 2, 3}, y[4];
    int64_t i1[4] = {0, 0, 1, 1};
    ti_case c = {.op = "GatherND", .n_in = 2, .in = {TIN(I32, d, 2, 2, 2), TIN(I64, i1, 2, 2, 2)}};
    ti_run(&c, OUTS(y));
    CHECK(y[0] == 0 && y[1] == 3, "GatherND elements: %d %d", y[0], y[1]);

    int64_t i2[2] = {1, -2};
    ti_case c2 = {.op = "GatherND", .n_in = 2, .in = {TIN(I32, d, 2, 2, 2), TIN(I64, i2, 2, 2, 1)}};
    ti_run(&c2, OUTS(y));
    CHECK(y[0] == 2 && y[1] == 3 && y[2] == 0 && y[3] == 1, "GatherND rows: %d %d %d %d", y[0],
          y[1], y[2], y[3]);

    /* batch_dims 1: batch b picks row idx[b] of data[b] */
    float d3[8] = {0, 1, 2, 3, 4, 5, 6, 7}, y3[4];
    int64_t i3[2] = {1, 0};
    ti_case c3 = {.op = "GatherND", .n_in = 2,
                  .in = {TIN(F32, d3, 3, 2, 2, 2), TIN(I64, i3, 2, 2, 1)},
                  .n_attrs = 1, .attrs = {AI("batch_dims", 1)}};
    ti_run(&c3, OUTS(y3));
    ti_near("batch_dims 1", y3, (double[]){2, 3, 4, 5}, 4, 0);

    int64_t bad[2] = {2, 0};
    ti_case c4 = {.op = "GatherND", .n_in = 2, .in = {TIN(I32, d, 2, 2, 2), TIN(I64, bad, 2, 1, 2)}};
    y[0] = 42;
    ti_run_fails(&c4, OUTS(y), sizeof y[0], "index 2 (element 0 of the indices) is out of range");

    /* the indices' last dim cannot exceed the data's rank */
    int64_t three[3] = {0, 0, 0};
    ti_case c5 = {.op = "GatherND", .n_in = 2, .in = {TIN(I32, d, 2, 2, 2), TIN(I64, three, 1, 3)}};
    ti_infer_fails(&c5, "last dim 3 must be in [1, 2]");
    ti_case c6 = {.op = "GatherND", .n_in = 2, .in = {TIN(I32, d, 2, 2, 2), TIN(I32, d, 1, 2)}};
    ti_infer_fails(&c6, "has dtype i32");
}

/* ---- ScatterElements, Scatter ------------------------------------------------------ */

static void ti_scatter_red(const char *red, int opset, const float *upd, const double *want)
{
    float data[5] = {1, 2, 3, 4, 5}, y[5];
    int64_t idx[2] = {1, 1};
    ti_case c = {.op = "ScatterElements", .opset = opset, .n_in = 3,
                 .in = {TIN(F32, data, 2, 1, 5), TIN(I64, idx, 2, 1, 2), TIN(F32, upd, 2, 1, 2)},
                 .n_attrs = 2, .attrs = {AI("axis", 1), AS("reduction", red)}};
    ti_run(&c, OUTS(y));
    ti_near(red, y, want, 5, 1e-6);
}

static void case_ScatterElements(void)
{
    float data[5] = {1, 2, 3, 4, 5}, upd[2] = {1.1f, 2.1f}, y[5];
    int64_t idx[2] = {1, -2};
    ti_case c = {.op = "ScatterElements", .n_in = 3,
                 .in = {TIN(F32, data, 2, 1, 5), TIN(I64, idx, 2, 1, 2), TIN(F32, upd, 2, 1, 2)},
                 .n_attrs = 1, .attrs = {AI("axis", 1)}};
    ti_run(&c, OUTS(y));
    ti_near("negative index", y, (double[]){1, 1.1f, 3, 2.1f, 5}, 5, 0);

    /* duplicates: each reduction combines all updates in order */
    ti_scatter_red("add", 16, upd, (double[]){1, 2 + 1.1 + 2.1, 3, 4, 5});
    ti_scatter_red("mul", 16, upd, (double[]){1, 2 * 1.1 * 2.1, 3, 4, 5});
    float mm[2] = {7, -1};
    ti_scatter_red("max", 18, mm, (double[]){1, 7, 3, 4, 5});
    ti_scatter_red("min", 18, mm, (double[]){1, -1, 3, 4, 5});
    ti_case c16 = c;
    c16.opset = 16;
    c16.n_attrs = 2;
    c16.attrs[1] = (ch_attr)AS("reduction", "max");
    ti_infer_fails(&c16, "reduction 'max' is not one opset 16 allows");

    /* axis 0 over a matrix, i32 indices and data */
    int32_t m[9] = {0}, mu[6] = {1, 2, 3, 4, 5, 6}, my[9];
    int32_t mi[6] = {1, 0, 2, 0, 2, 1};
    ti_case c2 = {.op = "ScatterElements", .n_in = 3,
                  .in = {TIN(I32, m, 2, 3, 3), TIN(I32, mi, 2, 2, 3), TIN(I32, mu, 2, 2, 3)}};
    ti_run(&c2, OUTS(my));
    int32_t want[9] = {4, 2, 0, 1, 0, 6, 0, 5, 3};
    for (int i = 0; i < 9; i++)
        CHECK(my[i] == want[i], "axis 0: element %d is %d, expected %d", i, my[i], want[i]);

    /* out of range: a clean error, the output untouched */
    int64_t bad[2] = {1, 5};
    ti_case c3 = c;
    c3.in[1].data = bad;
    memset(y, 0, sizeof y);
    ti_run_fails(&c3, OUTS(y), sizeof y, "index 5 (element 1 of the indices) is out of range");

    /* in place: the output is the data's buffer */
    float inplace[5] = {1, 2, 3, 4, 5};
    ti_case c4 = c;
    c4.in[0].data = inplace;
    CHECK_OK(ti_run_req(&c4, OUTS(inplace), PL_REQ_INPLACE));
    ti_near("in place", inplace, (double[]){1, 1.1f, 3, 2.1f, 5}, 5, 0);

    /* add-to: the result is added to what the output holds */
    float acc[5] = {10, 10, 10, 10, 10};
    CHECK_OK(ti_run_req(&c, OUTS(acc), PL_REQ_ADD_TO));
    ti_near("add to", acc, (double[]){11, 11.1f, 13, 12.1f, 15}, 5, 1e-6);

    /* the deprecated Scatter of opset 9 and 10 is ScatterElements */
    ti_case c5 = c;
    c5.op = "Scatter";
    c5.opset = 10;
    ti_run(&c5, OUTS(y));
    ti_near("Scatter", y, (double[]){1, 1.1f, 3, 2.1f, 5}, 5, 0);
}

/* ---- ScatterND ---------------------------------------------------------------- */

static void case_ScatterND(void)
{
    float d[8] = {1, 2, 3, 4, 5, 6, 7, 8}, u[4] = {9, 10, 11, 12}, y[8];
    int64_t idx[4] = {4, 3, 1, 7};
    ti_case c = {.op = "ScatterND", .n_in = 3,
                 .in = {TIN(F32, d, 1, 8), TIN(I64, idx, 2, 4, 1), TIN(F32, u, 1, 4)}};
    ti_run(&c, OUTS(y));
    ti_near("elements", y, (double[]){1, 11, 3, 10, 9, 6, 7, 12}, 8, 0);

    int64_t dup[4] = {0, 0, -8, 7};
    ti_case c2 = c;
    c2.opset = 16;
    c2.in[1].data = dup;
    c2.n_attrs = 1;
    c2.attrs[0] = (ch_attr)AS("reduction", "add");
    ti_run(&c2, OUTS(y));
    ti_near("add", y, (double[]){1 + 9 + 10 + 11, 2, 3, 4, 5, 6, 7, 8 + 12}, 8, 0);
    c2.attrs[0] = (ch_attr)AS("reduction", "mul");
    ti_run(&c2, OUTS(y));
    ti_near("mul", y, (double[]){9 * 10 * 11, 2, 3, 4, 5, 6, 7, 8 * 12}, 8, 0);

    /* slices: rows of a matrix */
    float m[6] = {1, 2, 3, 4, 5, 6}, mu[3] = {7, 8, 9}, my[6];
    int64_t row[1] = {-1};
    ti_case c3 = {.op = "ScatterND", .n_in = 3,
                  .in = {TIN(F32, m, 2, 2, 3), TIN(I64, row, 2, 1, 1), TIN(F32, mu, 2, 1, 3)}};
    ti_run(&c3, OUTS(my));
    ti_near("rows", my, (double[]){1, 2, 3, 7, 8, 9}, 6, 0);

    int64_t bad[4] = {4, 3, 8, 7};
    ti_case c4 = c;
    c4.in[1].data = bad;
    memset(y, 0, sizeof y);
    ti_run_fails(&c4, OUTS(y), sizeof y, "index 8 (element 2 of the indices) is out of range");

    ti_case c5 = c3;
    c5.in[2].dims[1] = 2;
    ti_infer_fails(&c5, "the updates [1,2] are not of shape [1,3]");
}

/* ---- TopK ---------------------------------------------------------------------- */

/* TopK of the vector X (N values) with K constant: values and indices. */
static void ti_topk(const float *x, int64_t n, int64_t k, int largest, const double *want_v,
                    const int64_t *want_i)
{
    float y[8];
    int64_t yi[8];
    ti_case c = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                 .in = {TIN(F32, x, 1, n), TIC(I64, &k, 1, 1)},
                 .n_attrs = 1, .attrs = {AI("largest", largest)}};
    ti_run(&c, OUTS(y, yi));
    ti_near("TopK values", y, want_v, (size_t)k, 0);
    ti_eq_i64("TopK indices", yi, want_i, (size_t)k);
}

static void case_TopK(void)
{
    /* ties: the lower index first */
    float ties[5] = {3, 1, 3, 2, 3};
    ti_topk(ties, 5, 3, 1, (double[]){3, 3, 3}, (int64_t[]){0, 2, 4});
    ti_topk(ties, 5, 2, 0, (double[]){1, 2}, (int64_t[]){1, 3});
    float lo[4] = {2, 1, 1, 0};
    ti_topk(lo, 4, 3, 0, (double[]){0, 1, 1}, (int64_t[]){3, 1, 2});
    /* NaN is the largest */
    float nan[3] = {1, NAN, 3};
    ti_topk(nan, 3, 2, 1, (double[]){NAN, 3}, (int64_t[]){1, 2});
    ti_topk(nan, 3, 2, 0, (double[]){1, 3}, (int64_t[]){0, 2});
    /* -0 and +0 are equal: the lower index first either way */
    float zeros[4] = {0.5f, -0.0f, 0.0f, -1.0f};
    ti_topk(zeros, 4, 3, 1, (double[]){0.5, 0, 0}, (int64_t[]){0, 1, 2});
    ti_topk(zeros, 4, 3, 0, (double[]){-1, 0, 0}, (int64_t[]){3, 1, 2});

    /* A line much longer than K (the bounded-heap path) with many ties and
     * NaNs, against a full stable ordering, for K = 1..7 both ways. */
    enum { LONG = 300 };
    float xl[LONG];
    for (int i = 0; i < LONG; i++)
        xl[i] = i % 37 == 5 ? NAN : (float)((i * 7919) % 23);
    for (int largest = 0; largest < 2; largest++)
        for (int64_t kk = 1; kk <= 7; kk++) {
            /* reference: selection by repeated scans for the next in order */
            bool used[LONG] = {false};
            double want_v[8];
            int64_t want_i[8];
            for (int64_t j = 0; j < kk; j++) {
                int best = -1;
                for (int i = 0; i < LONG; i++) {
                    if (used[i])
                        continue;
                    if (best < 0) {
                        best = i;
                        continue;
                    }
                    bool in = isnan(xl[i]), bn = isnan(xl[best]);
                    bool better = largest ? (in && !bn) || (!in && !bn && xl[i] > xl[best])
                                          : (!in && bn) || (!in && !bn && xl[i] < xl[best]);
                    if (better)
                        best = i;
                }
                used[best] = true;
                want_v[j] = xl[best];
                want_i[j] = best;
            }
            ti_topk(xl, LONG, kk, largest, want_v, want_i);
        }

    /* axis 0 of a matrix */
    float m[6] = {1, 5, 4, 2, 3, 3}, my[4];
    int64_t mi[4], k2 = 2;
    ti_case c = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                 .in = {TIN(F32, m, 2, 3, 2), TIC(I64, &k2, 1, 1)},
                 .n_attrs = 1, .attrs = {AI("axis", 0)}};
    ti_run(&c, OUTS(my, mi));
    ti_near("axis 0", my, (double[]){4, 5, 3, 3}, 4, 0);
    ti_eq_i64("axis 0 indices", mi, (int64_t[]){1, 0, 2, 2}, 4);

    /* i64 values that double cannot tell apart */
    int64_t big[2] = {INT64_C(1) << 53, (INT64_C(1) << 53) + 1}, by, bi, k1 = 1;
    ti_case cb = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                  .in = {TIN(I64, big, 1, 2), TIC(I64, &k1, 1, 1)}};
    ti_run(&cb, OUTS(&by, &bi));
    CHECK(bi == 1 && by == big[1], "i64 TopK picked %lld at %lld", (long long)by, (long long)bi);

    /* K at run time: the outputs' declared shape must match it */
    float x[4] = {4, 1, 3, 2}, y[2];
    int64_t yi[2], krt = 2;
    ti_case cr = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                  .in = {TIN(F32, x, 1, 4), TIN(I64, &krt, 1, 1)},
                  .out = {TI(F32, 1, 2), TI(I64, 1, 2)}};
    ti_run(&cr, OUTS(y, yi));
    ti_near("K at run time", y, (double[]){4, 3}, 2, 0);
    ti_eq_i64("K at run time indices", yi, (int64_t[]){0, 2}, 2);
    krt = 3;
    ti_run_fails(&cr, OUTS(y, yi), sizeof y, "K is 3 at run time, but the outputs have 2");

    /* K = 0: empty outputs */
    int64_t k0 = 0;
    ti_case c0 = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                  .in = {TIN(F32, x, 1, 4), TIC(I64, &k0, 1, 1)}};
    ti_run(&c0, OUTS(y, yi));

    /* opset 1: K is an attribute */
    ti_case c1 = {.op = "TopK", .opset = 1, .n_in = 1, .n_out = 2, .in = {TIN(F32, x, 1, 4)},
                  .n_attrs = 1, .attrs = {AI("k", 2)}};
    ti_node n;
    pl_status *st = ti_build(&c1, &n);
    CHECK(st == NULL && n.out[0].ndim == 1 && n.out[0].shape[0] == 2,
          "opset 1 TopK infers [2]: %s", st ? pl_status_message(st) : "wrong shape");
    ti_node_free(&n);

    int64_t k5 = 5;
    ti_case cbig = cr;
    cbig.in[1] = (ti_t)TIC(I64, &k5, 1, 1);
    memset(cbig.out, 0, sizeof cbig.out);
    ti_infer_fails(&cbig, "K 5 exceeds the 4 elements of axis 0");
    float bools[1] = {0};
    ti_case cbool = {.op = "TopK", .opset = 11, .n_in = 2, .n_out = 2,
                     .in = {TIN(BOOL, bools, 1, 1), TIC(I64, &k1, 1, 1)}};
    ti_infer_fails(&cbool, "has dtype bool");
}

/* ---- OneHot ------------------------------------------------------------------- */

static void case_OneHot(void)
{
    int64_t idx[4] = {0, -1, 5, 2};
    float depth = 4, values[2] = {0, 1}, y[16];
    ti_case c = {.op = "OneHot", .opset = 11, .n_in = 3,
                 .in = {TIN(I64, idx, 1, 4), TIC(F32, &depth, 0), TIN(F32, values, 1, 2)}};
    ti_run(&c, OUTS(y));
    /* -1 is the last class; 5 is out of range: all off */
    ti_near("axis -1", y, (double[]){1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0}, 16, 0);

    ti_case c0 = c;
    c0.n_attrs = 1;
    c0.attrs[0] = (ch_attr)AI("axis", 0);
    ti_run(&c0, OUTS(y));
    ti_near("axis 0", y, (double[]){1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0}, 16, 0);

    /* float indices are truncated; i32 values with off 3, on 7 */
    float fidx[2] = {1.7f, -0.5f};
    int32_t iv[2] = {3, 7}, iy[6];
    int64_t d3 = 3;
    ti_case cf = {.op = "OneHot", .opset = 11, .n_in = 3,
                  .in = {TIN(F32, fidx, 1, 2), TIC(I64, &d3, 1, 1), TIN(I32, iv, 1, 2)}};
    ti_run(&cf, OUTS(iy));
    int32_t want[6] = {3, 7, 3, 7, 3, 3};
    for (int i = 0; i < 6; i++)
        CHECK(iy[i] == want[i], "float indices: element %d is %d, expected %d", i, iy[i],
              want[i]);

    /* depth at run time, checked against the declared output */
    float drt = 4;
    ti_case cr = c;
    cr.in[1] = (ti_t)TIN(F32, &drt, 0);
    cr.out[0] = (ti_t)TI(F32, 2, 4, 4);
    ti_run(&cr, OUTS(y));
    drt = 5;
    ti_run_fails(&cr, OUTS(y), sizeof y, "depth 5 at run time, but the output has 4 classes");

    float d0 = 0;
    ti_case cz = c;
    cz.in[1].data = &d0;
    ti_infer_fails(&cz, "depth 0 is below 1");
}

/* ---- DepthToSpace, SpaceToDepth --------------------------------------------------- */

static void case_DepthToSpace(void)
{
    enum { N = 2, C = 8, H = 2, W = 3, B = 2, CC = C / (B * B) };
    float x[N * C * H * W], y[N * C * H * W], back[N * C * H * W];
    for (int i = 0; i < N * C * H * W; i++)
        x[i] = (float)i;
    for (int mode = 0; mode < 2; mode++) {
        ti_case c = {.op = "DepthToSpace", .n_in = 1, .in = {TIN(F32, x, 4, N, C, H, W)},
                     .n_attrs = 2,
                     .attrs = {AI("blocksize", B), AS("mode", mode ? "CRD" : "DCR")}};
        ti_run(&c, OUTS(y));
        /* y[n, c, h*B + i, w*B + j] = x[n, channel, h, w] */
        for (int n = 0; n < N; n++)
            for (int cc = 0; cc < CC; cc++)
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < B; i++)
                        for (int w = 0; w < W; w++)
                            for (int j = 0; j < B; j++) {
                                int ch = mode ? cc * B * B + i * B + j : (i * B + j) * CC + cc;
                                float want = x[((n * C + ch) * H + h) * W + w];
                                float got = y[((n * CC + cc) * H * B + h * B + i) * W * B + w * B + j];
                                CHECK(got == want, "%s: y[%d,%d,%d,%d] = %g, expected %g",
                                      mode ? "CRD" : "DCR", n, cc, h * B + i, w * B + j, got,
                                      want);
                            }
    }
    /* SpaceToDepth undoes DepthToSpace of the same mode (SpaceToDepth 28's
     * mode; DCR before) */
    for (int mode = 0; mode < 2; mode++) {
        ti_case d = {.op = "DepthToSpace", .n_in = 1, .in = {TIN(F32, x, 4, N, C, H, W)},
                     .n_attrs = 2,
                     .attrs = {AI("blocksize", B), AS("mode", mode ? "CRD" : "DCR")}};
        ti_run(&d, OUTS(y));
        ti_case s = {.op = "SpaceToDepth", .opset = 28, .n_in = 1,
                     .in = {TIN(F32, y, 4, N, CC, H * B, W * B)}, .n_attrs = 2,
                     .attrs = {AI("blocksize", B), AS("mode", mode ? "CRD" : "DCR")}};
        ti_run(&s, OUTS(back));
        CHECK(memcmp(back, x, sizeof x) == 0, "SpaceToDepth(DepthToSpace(x)) is not x (%s)",
              mode ? "CRD" : "DCR");
    }

    ti_case bad = {.op = "DepthToSpace", .n_in = 1, .in = {TIN(F32, x, 4, 1, 6, 2, 2)},
                   .n_attrs = 1, .attrs = {AI("blocksize", 2)}};
    ti_infer_fails(&bad, "6 channels are not a multiple of blocksize² 4");
    ti_case bad2 = {.op = "SpaceToDepth", .n_in = 1, .in = {TIN(F32, x, 4, 1, 1, 3, 2)},
                    .n_attrs = 1, .attrs = {AI("blocksize", 2)}};
    ti_infer_fails(&bad2, "dimension 2 (3) is not a multiple of blocksize 2");
}

/* ---- EyeLike, Hardmax, CastLike ------------------------------------------------------ */

static void case_EyeLike(void)
{
    float x[12], y[12];
    ti_case c = {.op = "EyeLike", .opset = 9, .n_in = 1, .in = {TIN(F32, x, 2, 3, 4)},
                 .n_attrs = 1, .attrs = {AI("k", 1)}};
    ti_run(&c, OUTS(y));
    ti_near("k 1", y, (double[]){0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 12, 0);
    int32_t iy[12];
    ti_case c2 = {.op = "EyeLike", .opset = 9, .n_in = 1, .in = {TIN(F32, x, 2, 3, 4)},
                  .n_attrs = 2, .attrs = {AI("k", -2), AI("dtype", 6)}};
    ti_run(&c2, OUTS(iy));
    for (int i = 0; i < 12; i++)
        CHECK(iy[i] == (i == 8), "k -2 as i32: element %d is %d", i, iy[i]);
    ti_case c3 = {.op = "EyeLike", .opset = 9, .n_in = 1, .in = {TIN(F32, x, 1, 4)}};
    ti_infer_fails(&c3, "the input has rank 1; EyeLike needs 2");
}

static void case_Hardmax(void)
{
    /* opset 13: along one axis, the first of equal maxima */
    float x[6] = {1, 3, 3, 2, 1, 0}, y[8];
    ti_case c = {.op = "Hardmax", .n_in = 1, .in = {TIN(F32, x, 2, 2, 3)}};
    ti_run(&c, OUTS(y));
    ti_near("opset 13", y, (double[]){0, 1, 0, 1, 0, 0}, 6, 0);

    float x3[8] = {1, 2, 3, 0, 5, 1, 1, 5};
    ti_case c13 = {.op = "Hardmax", .n_in = 1, .in = {TIN(F32, x3, 3, 2, 2, 2)},
                   .n_attrs = 1, .attrs = {AI("axis", 1)}};
    ti_run(&c13, OUTS(y));
    ti_near("opset 13 axis 1", y, (double[]){0, 1, 1, 0, 1, 0, 0, 1}, 8, 0);
    /* opset 11: the input as a matrix split at the axis */
    ti_case c11 = c13;
    c11.opset = 11;
    ti_run(&c11, OUTS(y));
    ti_near("opset 11 axis 1", y, (double[]){0, 0, 1, 0, 1, 0, 0, 0}, 8, 0);

    ti_case c2 = {.op = "Hardmax", .n_in = 1, .in = {TIN(F32, x, 2, 2, 3)},
                  .n_attrs = 1, .attrs = {AI("axis", 2)}};
    ti_infer_fails(&c2, "axis 2 is out of range for rank 2");
}

static void case_CastLike(void)
{
    float x[3] = {1.5f, -2.7f, 300.25f};
    int32_t like = 0, iy[3];
    ti_case c = {.op = "CastLike", .opset = 15, .n_in = 2,
                 .in = {TIN(F32, x, 1, 3), TIN(I32, &like, 1, 1)}};
    ti_run(&c, OUTS(iy));
    CHECK(iy[0] == 1 && iy[1] == -2 && iy[2] == 300, "CastLike to i32: %d %d %d", iy[0], iy[1],
          iy[2]);
    double dl = 0, dy[3];
    ti_case c2 = {.op = "CastLike", .opset = 15, .n_in = 2,
                  .in = {TIN(F32, x, 1, 3), TIN(F64, &dl, 0)}};
    ti_run(&c2, OUTS(dy));
    CHECK(dy[0] == 1.5 && dy[1] == (double)-2.7f && dy[2] == 300.25, "CastLike to f64");
}

/* ---- Einsum ------------------------------------------------------------------------ */

static void ti_fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)ch_random();
}

/* N f64 results Y within 1e-12 of WANT. */
static void ti_near64(const char *what, const double *y, const double *want, int n)
{
    for (int i = 0; i < n; i++)
        CHECK(fabs(y[i] - want[i]) < 1e-12, "%s: element %d is %.17g, expected %.17g", what, i,
              y[i], want[i]);
}

/* The batched product of A [2 or 1 (A_ONE), 3, 4] by B [2, 4, 5] into
 * WANT, as [b, i, k] or, KBI, as [k, b, i]. */
static void ti_bmm_want(const float *a, bool a_one, const float *b, bool kbi, double *want)
{
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++)
                    s += (double)a[((a_one ? 0 : n) * 3 + i) * 4 + j] * b[(n * 4 + j) * 5 + k];
                want[kbi ? (k * 2 + n) * 3 + i : (n * 3 + i) * 5 + k] = s;
            }
}

static void case_Einsum(void)
{
    /* batched matmul against its triple loop */
    float a[2 * 3 * 4], b[2 * 4 * 5], y[2 * 3 * 5];
    double want[2 * 3 * 5];
    ti_fill(a, 24);
    ti_fill(b, 40);
    ti_case c = {.op = "Einsum", .opset = 12, .n_in = 2,
                 .in = {TIN(F32, a, 3, 2, 3, 4), TIN(F32, b, 3, 2, 4, 5)},
                 .n_attrs = 1, .attrs = {AS("equation", "bij, bjk -> bik")}};
    ti_run(&c, OUTS(y));
    ti_bmm_want(a, false, b, false, want);
    ti_near("bij,bjk->bik", y, want, 30, 1e-6);
    /* the same in f64 takes the general road (f32 takes sgemm's) */
    double a64[24], b64[40], y64[30];
    for (int i = 0; i < 24; i++)
        a64[i] = a[i];
    for (int i = 0; i < 40; i++)
        b64[i] = b[i];
    ti_case c64 = c;
    c64.in[0] = (ti_t)TIN(F64, a64, 3, 2, 3, 4);
    c64.in[1] = (ti_t)TIN(F64, b64, 3, 2, 4, 5);
    ti_run(&c64, OUTS(y64));
    ti_near64("f64 bij,bjk->bik", y64, want, 30);
    /* a label summed within one input only ("k") is not a matrix product */
    ti_case c1 = c;
    c1.attrs[0] = (ch_attr)AS("equation", "bij,bjk->bi");
    ti_run(&c1, OUTS(y));
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++) {
            double s1 = 0;
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 5; k++)
                    s1 += (double)a[(n * 3 + i) * 4 + j] * b[(n * 4 + j) * 5 + k];
            want[n * 3 + i] = s1;
        }
    ti_near("bij,bjk->bi", y, want, 6, 1e-5);

    /* the same product written in another order (the result scattered):
     * bij,bjk->kbi */
    ti_case sc = c;
    sc.attrs[0] = (ch_attr)AS("equation", "bij,bjk->kbi");
    ti_run(&sc, OUTS(y));
    ti_bmm_want(a, false, b, true, want);
    ti_near("bij,bjk->kbi", y, want, 30, 1e-6);

    /* matrices by vectors (a mixture of experts' weights by its tokens):
     * bkh,bh->bk over 11 summed values (one pass of eight and a tail) */
    float mv_a[2 * 3 * 11], mv_b[2 * 11];
    ti_fill(mv_a, 66);
    ti_fill(mv_b, 22);
    ti_case mv = {.op = "Einsum", .opset = 12, .n_in = 2,
                  .in = {TIN(F32, mv_a, 3, 2, 3, 11), TIN(F32, mv_b, 2, 2, 11)},
                  .n_attrs = 1, .attrs = {AS("equation", "bkh,bh->bk")}};
    ti_run(&mv, OUTS(y));
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++) {
            double s = 0;
            for (int j = 0; j < 11; j++)
                s += (double)mv_a[(n * 3 + i) * 11 + j] * mv_b[n * 11 + j];
            want[n * 3 + i] = s;
        }
    ti_near("bkh,bh->bk", y, want, 6, 1e-6);

    /* attention scores: bhqd,bhkd->bhqk */
    ti_case att = {.op = "Einsum", .opset = 12, .n_in = 2,
                   .in = {TIN(F32, a, 4, 1, 2, 3, 4), TIN(F32, b, 4, 1, 2, 5, 4)},
                   .n_attrs = 1, .attrs = {AS("equation", "bhqd,bhkd->bhqk")}};
    ti_run(&att, OUTS(y));
    for (int h = 0; h < 2; h++)
        for (int q = 0; q < 3; q++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int d = 0; d < 4; d++)
                    s += (double)a[(h * 3 + q) * 4 + d] * b[(h * 5 + k) * 4 + d];
                want[(h * 3 + q) * 5 + k] = s;
            }
    ti_near("bhqd,bhkd->bhqk", y, want, 30, 1e-6);

    /* implicit output: labels seen once, sorted ("ba" is the transpose) */
    float m[6] = {1, 2, 3, 4, 5, 6};
    ti_case t = {.op = "Einsum", .opset = 12, .n_in = 1, .in = {TIN(F32, m, 2, 2, 3)},
                 .n_attrs = 1, .attrs = {AS("equation", "ba")}};
    ti_run(&t, OUTS(y));
    ti_near("ba", y, (double[]){1, 4, 2, 5, 3, 6}, 6, 0);

    /* diagonal and trace, through the ellipsis too */
    float sq[2 * 3 * 3];
    for (int i = 0; i < 18; i++)
        sq[i] = (float)i;
    ti_case dg = {.op = "Einsum", .opset = 12, .n_in = 1, .in = {TIN(F32, sq, 3, 2, 3, 3)},
                  .n_attrs = 1, .attrs = {AS("equation", "...ii ->...i")}};
    ti_run(&dg, OUTS(y));
    ti_near("...ii->...i", y, (double[]){0, 4, 8, 9, 13, 17}, 6, 0);
    ti_case tr = {.op = "Einsum", .opset = 12, .n_in = 1, .in = {TIN(F32, sq, 3, 2, 3, 3)},
                  .n_attrs = 1, .attrs = {AS("equation", "bii")}};
    ti_run(&tr, OUTS(y));
    ti_near("bii (trace)", y, (double[]){12, 39}, 2, 0);

    /* ellipsis dims broadcast: [2,1,2,3] x [4,3,2] */
    float e1[12], e2[24], ey[2 * 4 * 2 * 2];
    double ew[32];
    ti_fill(e1, 12);
    ti_fill(e2, 24);
    ti_case el = {.op = "Einsum", .opset = 12, .n_in = 2,
                  .in = {TIN(F32, e1, 4, 2, 1, 2, 3), TIN(F32, e2, 3, 4, 3, 2)},
                  .n_attrs = 1, .attrs = {AS("equation", "...ij,...jk->...ik")}};
    ti_run(&el, OUTS(ey));
    for (int p = 0; p < 2; p++)
        for (int q = 0; q < 4; q++)
            for (int i = 0; i < 2; i++)
                for (int k = 0; k < 2; k++) {
                    double s = 0;
                    for (int j = 0; j < 3; j++)
                        s += (double)e1[(p * 2 + i) * 3 + j] * e2[(q * 3 + j) * 2 + k];
                    ew[((p * 4 + q) * 2 + i) * 2 + k] = s;
                }
    ti_near("ellipsis broadcast", ey, ew, 32, 1e-6);

    /* integers, and a scalar output */
    int64_t im[6] = {1, 2, 3, 4, 5, 6}, iv[3] = {1, -1, 2}, iy[2];
    ti_case ic = {.op = "Einsum", .opset = 12, .n_in = 2,
                  .in = {TIN(I64, im, 2, 2, 3), TIN(I64, iv, 1, 3)},
                  .n_attrs = 1, .attrs = {AS("equation", "ij,j->i")}};
    ti_run(&ic, OUTS(iy));
    ti_eq_i64("ij,j->i", iy, (int64_t[]){5, 11}, 2);
    ti_case dot = {.op = "Einsum", .opset = 12, .n_in = 2,
                   .in = {TIN(F32, m, 1, 3), TIN(F32, m + 3, 1, 3)},
                   .n_attrs = 1, .attrs = {AS("equation", "i,i")}};
    ti_run(&dot, OUTS(y));
    ti_near("i,i", y, (double[]){4 + 10 + 18}, 1, 0);

    /* an empty summed label gives zeros */
    ti_case emp = {.op = "Einsum", .opset = 12, .n_in = 2,
                   .in = {TIN(F32, m, 2, 2, 0), TIN(F32, m, 2, 0, 3)},
                   .n_attrs = 1, .attrs = {AS("equation", "ij,jk->ik")}};
    memset(y, 0x7f, sizeof y);
    ti_run(&emp, OUTS(y));
    ti_near("empty sum", y, (double[]){0, 0, 0, 0, 0, 0}, 6, 0);

    ti_case bad = t;
    bad.attrs[0] = (ch_attr)AS("equation", "ij->ik");
    ti_infer_fails(&bad, "output label 'k' is in no input");
    bad.attrs[0] = (ch_attr)AS("equation", "ijk");
    ti_infer_fails(&bad, "input 0 has rank 2 but its term has 3 labels");
    bad.attrs[0] = (ch_attr)AS("equation", "ii");
    ti_infer_fails(&bad, "label 'i' has sizes 2 and 3");
    bad.attrs[0] = (ch_attr)AS("equation", "i$");
    ti_infer_fails(&bad, "does not have 1 well-formed input terms");

    /* a label of size 1 in one input broadcasts against the other's, as
     * numpy's einsum and ONNX Runtime take it (jax2onnx's attention logits,
     * "...BTNH,...BSNH->...BNTS" with one B of 1): "bij,bjk->bik" of
     * [1, 3, 4] by [2, 4, 5] (the matrix-product road, f32) and in f64
     * (the general road); sizes 2 and 3 still refused */
    ti_case lb = c;
    lb.in[0] = (ti_t)TIN(F32, a, 3, 1, 3, 4);
    ti_run(&lb, OUTS(y));
    ti_bmm_want(a, true, b, false, want);
    ti_near("bij,bjk->bik, b of 1 and 2", y, want, 30, 1e-6);
    ti_case lb64 = c64;
    lb64.in[0] = (ti_t)TIN(F64, a64, 3, 1, 3, 4);
    ti_run(&lb64, OUTS(y64));
    ti_near64("f64 b of 1 and 2", y64, want, 30);
    ti_case lbad = c;
    lbad.in[0] = (ti_t)TIN(F32, a, 3, 3, 2, 4);
    ti_infer_fails(&lbad, "label 'b' has sizes 3 and 2");
}

/* ---- the losses -------------------------------------------------------------------- */

static void case_NegativeLogLikelihoodLoss(void)
{
    /* scores [N=2, C=3], targets [2, 0] */
    float x[6] = {-1.0f, -2.0f, -0.5f, -0.25f, -3.0f, -1.5f}, y[4];
    int64_t t[2] = {2, 0};
    float w[3] = {0.2f, 0.3f, 0.5f};
    ti_case c = {.op = "NegativeLogLikelihoodLoss", .n_in = 2,
                 .in = {TIN(F32, x, 2, 2, 3), TIN(I64, t, 1, 2)},
                 .n_attrs = 1, .attrs = {AS("reduction", "none")}};
    ti_run(&c, OUTS(y));
    ti_near("none", y, (double[]){0.5, 0.25}, 2, 1e-7);
    c.attrs[0] = (ch_attr)AS("reduction", "sum");
    ti_run(&c, OUTS(y));
    ti_near("sum", y, (double[]){0.75}, 1, 1e-7);
    /* mean with weights: sum of w[t] * -x over the sum of w[t] */
    ti_case cw = c;
    cw.n_in = 3;
    cw.in[2] = (ti_t)TIN(F32, w, 1, 3);
    cw.attrs[0] = (ch_attr)AS("reduction", "mean");
    ti_run(&cw, OUTS(y));
    ti_near("weighted mean", y, (double[]){(0.5 * 0.5 + 0.2 * 0.25) / 0.7}, 1, 1e-6);

    /* ignore_index: that target weighs nothing */
    ti_case ci = cw;
    ci.n_attrs = 2;
    ci.attrs[1] = (ch_attr)AI("ignore_index", 0);
    ti_run(&ci, OUTS(y));
    ti_near("mean, one ignored", y, (double[]){0.5}, 1, 1e-6);
    /* a negative ignore_index, and a target equal to it */
    int64_t tn[2] = {-1, 1};
    ti_case cn = c;
    cn.in[1].data = tn;
    cn.n_attrs = 2;
    cn.attrs[0] = (ch_attr)AS("reduction", "none");
    cn.attrs[1] = (ch_attr)AI("ignore_index", -1);
    ti_run(&cn, OUTS(y));
    ti_near("negative ignore_index", y, (double[]){0, 3}, 2, 1e-7);
    /* everything ignored: the mean is 0/0 */
    int64_t all[2] = {1, 1};
    ti_case ca = cn;
    ca.in[1].data = all;
    ca.attrs[0] = (ch_attr)AS("reduction", "mean");
    ca.attrs[1] = (ch_attr)AI("ignore_index", 1);
    ti_run(&ca, OUTS(y));
    ti_near("all ignored", y, (double[]){NAN}, 1, 0);

    /* targets out of range, unless ignored: a clean error */
    int64_t bad[2] = {2, 3};
    ti_case cb = c;
    cb.in[1].data = bad;
    cb.attrs[0] = (ch_attr)AS("reduction", "none");
    y[0] = y[1] = 9;
    ti_run_fails(&cb, OUTS(y), 2 * sizeof(float),
                 "target 3 (element 1 of the targets) is out of range for 3 classes");
    bad[1] = -1;
    ti_run_fails(&cb, OUTS(y), 2 * sizeof(float), "target -1 (element 1 of the targets)");

    /* N-d: [N=1, C=2, d=2], i32 targets */
    float xd[4] = {-1, -2, -3, -4};
    int32_t td[2] = {1, 0};
    ti_case cd = {.op = "NegativeLogLikelihoodLoss", .n_in = 2,
                  .in = {TIN(F32, xd, 3, 1, 2, 2), TIN(I32, td, 2, 1, 2)},
                  .n_attrs = 1, .attrs = {AS("reduction", "none")}};
    ti_run(&cd, OUTS(y));
    ti_near("N-d", y, (double[]){3, 2}, 2, 0);

    ti_case cs = cd;
    cs.in[1] = (ti_t)TIN(I32, td, 2, 1, 3);
    ti_infer_fails(&cs, "the targets [1,3] do not match the scores [1,2,2]");
    ti_case cr = cd;
    cr.attrs[0] = (ch_attr)AS("reduction", "avg");
    ti_infer_fails(&cr, "reduction 'avg' is none of none, sum, mean");
}

static void case_SoftmaxCrossEntropyLoss(void)
{
    /* one sample, three classes: loss = logsumexp(x) - x[t] */
    double x64[6] = {1, 2, 3, 0.5, 0.5, 0.5}, y64[6], lp[6];
    int64_t t[2] = {2, 0};
    ti_case c = {.op = "SoftmaxCrossEntropyLoss", .n_in = 2, .n_out = 2,
                 .in = {TIN(F64, x64, 2, 2, 3), TIN(I64, t, 1, 2)},
                 .n_attrs = 1, .attrs = {AS("reduction", "none")}};
    ti_run(&c, OUTS(y64, lp));
    double lse0 = log(exp(1.0) + exp(2.0) + exp(3.0)), lse1 = 0.5 + log(3.0);
    double want[6] = {1 - lse0, 2 - lse0, 3 - lse0, 0.5 - lse1, 0.5 - lse1, 0.5 - lse1};
    for (int i = 0; i < 6; i++)
        CHECK(fabs(lp[i] - want[i]) < 1e-12, "log_prob %d: %.17g, expected %.17g", i, lp[i],
              want[i]);
    CHECK(fabs(y64[0] - (lse0 - 3)) < 1e-12 && fabs(y64[1] - log(3.0)) < 1e-12,
          "losses %.17g %.17g", y64[0], y64[1]);

    /* weighted mean and ignore_index, f32, log_prob not asked for */
    float x[6] = {1, 2, 3, 0.5f, 0.5f, 0.5f}, w[3] = {1, 2, 4}, y[1];
    ti_case cw = {.op = "SoftmaxCrossEntropyLoss", .n_in = 3,
                  .in = {TIN(F32, x, 2, 2, 3), TIN(I64, t, 1, 2), TIN(F32, w, 1, 3)}};
    ti_run(&cw, OUTS(y));
    ti_near("weighted mean", y, (double[]){(4 * (lse0 - 3) + 1 * log(3.0)) / 5}, 1, 1e-6);
    ti_case ci = cw;
    ci.n_attrs = 1;
    ci.attrs[0] = (ch_attr)AI("ignore_index", 2);
    ti_run(&ci, OUTS(y));
    ti_near("mean, one ignored", y, (double[]){log(3.0)}, 1, 1e-6);

    int64_t bad[2] = {5, 0};
    ti_case cb = cw;
    cb.in[1].data = bad;
    y[0] = 1;
    ti_run_fails(&cb, OUTS(y), sizeof y, "target 5 (element 0 of the targets) is out of range");

    /* empty batch, reduction none: nothing to compute */
    ti_case ce = {.op = "SoftmaxCrossEntropyLoss", .n_in = 2,
                  .in = {TIN(F32, x, 2, 0, 3), TIN(I64, t, 1, 0)},
                  .n_attrs = 1, .attrs = {AS("reduction", "none")}};
    ti_run(&ce, OUTS(y));
}


/* ---- quantization ---------------------------------------------------------------- */

#define U8 PL_DTYPE_U8
#define I8 PL_DTYPE_I8

static void ti_eq_bytes(const char *what, const void *got, const void *want, size_t n,
                        bool is_signed)
{
    for (size_t i = 0; i < n; i++) {
        int g = is_signed ? ((const int8_t *)got)[i] : ((const uint8_t *)got)[i];
        int w = is_signed ? ((const int8_t *)want)[i] : ((const uint8_t *)want)[i];
        CHECK(g == w, "%s: element %zu is %d, expected %d", what, i, g, w);
    }
}

static void case_QuantizeLinear(void)
{
    /* round half to even, then saturate */
    float x[8] = {0, 2, 3, 1000, -254, -1000, 2.5f, 5}, scale = 2;
    uint8_t zp = 128, y[8];
    ti_case c = {.op = "QuantizeLinear", .n_in = 3,
                 .in = {TIN(F32, x, 1, 8), TIN(F32, &scale, 0), TIN(U8, &zp, 0)}};
    ti_run(&c, OUTS(y));
    ti_eq_bytes("u8", y, (uint8_t[]){128, 129, 130, 255, 1, 0, 129, 130}, 8, false);
    /* without a zero point: u8, negatives saturate to 0 */
    ti_case c0 = c;
    c0.n_in = 2;
    ti_run(&c0, OUTS(y));
    ti_eq_bytes("no zero point", y, (uint8_t[]){0, 1, 2, 255, 0, 0, 1, 2}, 8, false);
    /* per axis, i8 */
    float xa[4] = {1, -2.5f, 30, 55}, sa[2] = {1, 10};
    int8_t za[2] = {0, -5}, ya[4];
    ti_case ca = {.op = "QuantizeLinear", .n_in = 3,
                  .in = {TIN(F32, xa, 3, 1, 2, 2), TIN(F32, sa, 1, 2), TIN(I8, za, 1, 2)}};
    ti_run(&ca, OUTS(ya));
    ti_eq_bytes("per axis", ya, (int8_t[]){1, -2, -2, 1}, 4, true);
    /* per last axis, i8: a scale and zero point per element of each row;
     * halves round to even, out of range saturates */
    float xl[6] = {2.5f, -3, 1000, 3.5f, 0.75f, -1000}, sl[3] = {1, 0.5f, 0.25f};
    int8_t zl[3] = {0, 10, -3}, yl[6];
    ti_case cl = {.op = "QuantizeLinear", .n_in = 3,
                  .in = {TIN(F32, xl, 2, 2, 3), TIN(F32, sl, 1, 3), TIN(I8, zl, 1, 3)}};
    ti_run(&cl, OUTS(yl));
    ti_eq_bytes("per last axis", yl, (int8_t[]){2, 4, 127, 4, 12, -128}, 6, true);
    float zero = 0;
    ti_case cz = c;
    cz.in[1].data = &zero;
    memset(y, 7, sizeof y);
    ti_run_fails(&cz, OUTS(y), sizeof y, "scale 0 is 0; it must be nonzero");
    ti_case cbad = ca;
    cbad.in[1].dims[0] = 3;
    ti_infer_fails(&cbad, "the scale [3] is neither a scalar nor one per entry");
}

static void case_DequantizeLinear(void)
{
    uint8_t x[4] = {0, 3, 128, 255}, zp = 128;
    float scale = 2, y[4];
    ti_case c = {.op = "DequantizeLinear", .n_in = 3,
                 .in = {TIN(U8, x, 1, 4), TIN(F32, &scale, 0), TIN(U8, &zp, 0)}};
    ti_run(&c, OUTS(y));
    ti_near("u8", y, (double[]){-256, -250, 0, 254}, 4, 0);
    int32_t xi[2] = {-5, 7};
    float half = 0.5f;
    ti_case ci = {.op = "DequantizeLinear", .n_in = 2,
                  .in = {TIN(I32, xi, 1, 2), TIN(F32, &half, 0)}};
    ti_run(&ci, OUTS(y));
    ti_near("i32", y, (double[]){-2.5, 3.5}, 2, 0);
    int8_t xa[4] = {-128, 127, 0, -1}, za[2] = {0, -1};
    float sa[2] = {1, 0.25f};
    ti_case ca = {.op = "DequantizeLinear", .n_in = 3,
                  .in = {TIN(I8, xa, 2, 2, 2), TIN(F32, sa, 1, 2), TIN(I8, za, 1, 2)},
                  .n_attrs = 1, .attrs = {AI("axis", 0)}};
    ti_run(&ca, OUTS(y));
    ti_near("per axis 0", y, (double[]){-128, 127, 0.25, 0}, 4, 0);
    /* the same per axis at opset 11: ONNX Runtime's quantizer writes
     * per-channel weights so into opset-11 models, and ONNX Runtime runs
     * them */
    ti_case c11 = ca;
    c11.opset = 11;
    memset(y, 0, sizeof y);
    ti_run(&c11, OUTS(y));
    ti_near("per axis 0, opset 11", y, (double[]){-128, 127, 0.25, 0}, 4, 0);
    /* per axis, u8 [3, 5, 4]: the last axis (a parameter per element of
     * a row) and the middle one (a block of 4 per parameter), against the
     * formula element by element */
    uint8_t xb[60], zb[5] = {0, 7, 128, 200, 255};
    float sb[5] = {0.5f, 1, 0.125f, 3, 0.01f}, yb[60];
    double want[60];
    for (int e = 0; e < 60; e++)
        xb[e] = (uint8_t)(e * 37 + 11);
    for (int axis = 1; axis <= 2; axis++) {
        int n = axis == 2 ? 4 : 5, inner = axis == 2 ? 1 : 4;
        ti_case cb = {.op = "DequantizeLinear", .n_in = 3,
                      .in = {TIN(U8, xb, 3, 3, 5, 4), TIN(F32, sb, 1, n), TIN(U8, zb, 1, n)},
                      .n_attrs = 1, .attrs = {AI("axis", axis)}};
        for (int e = 0; e < 60; e++) {
            int q = (e / inner) % n;
            want[e] = ((float)xb[e] - (float)zb[q]) * sb[q];
        }
        ti_run(&cb, OUTS(yb));
        ti_near(axis == 2 ? "u8, per last axis" : "u8, per middle axis", yb, want, 60, 0);
    }
}

static void case_DynamicQuantizeLinear(void)
{
    /* ONNX's own example */
    float x[6] = {0, 2, -3, -2.5f, 1.34f, 0.5f}, scale;
    uint8_t y[6], zp;
    ti_case c = {.op = "DynamicQuantizeLinear", .opset = 11, .n_in = 1, .n_out = 3,
                 .in = {TIN(F32, x, 1, 6)}};
    ti_run(&c, OUTS(y, &scale, &zp));
    CHECK(fabsf(scale - 0.0196078438f) < 1e-9f && zp == 153, "scale %.9g zero point %d",
          scale, zp);
    ti_eq_bytes("y", y, (uint8_t[]){153, 255, 0, 26, 221, 179}, 6, false);
    /* all zeros: scale 0, everything 0 */
    float z[3] = {0, 0, 0};
    ti_case cz = {.op = "DynamicQuantizeLinear", .opset = 11, .n_in = 1, .n_out = 3,
                  .in = {TIN(F32, z, 1, 3)}};
    ti_run(&cz, OUTS(y, &scale, &zp));
    CHECK(scale == 0 && zp == 0 && y[0] == 0 && y[2] == 0, "all zeros: scale %g zp %d", scale,
          zp);
}

static void case_MatMulInteger(void)
{
    /* ONNX's example: (A - 12) @ B */
    uint8_t a[12] = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, b[6] = {1, 4, 2, 5, 3, 6};
    uint8_t za = 12, zb = 0, zrows[4] = {12, 12, 12, 12};
    int32_t y[8], want[8] = {-38, -83, -44, -98, -50, -113, -56, -128};
    ti_case c = {.op = "MatMulInteger", .opset = 10, .n_in = 4,
                 .in = {TIN(U8, a, 2, 4, 3), TIN(U8, b, 2, 3, 2), TIN(U8, &za, 0),
                        TIN(U8, &zb, 0)}};
    ti_run(&c, OUTS(y));
    for (int i = 0; i < 8; i++)
        CHECK(y[i] == want[i], "element %d is %d, expected %d", i, y[i], want[i]);
    ti_case cr = c;
    cr.in[2] = (ti_t)TIN(U8, zrows, 1, 4);
    ti_run(&cr, OUTS(y));
    for (int i = 0; i < 8; i++)
        CHECK(y[i] == want[i], "per row: element %d is %d, expected %d", i, y[i], want[i]);
    /* a batch of A against one B, no zero points, i8 */
    int8_t a3[6] = {1, -2, 3, -4, 5, -6}, b3[3] = {1, 1, -1};
    int32_t y3[2];
    ti_case c3 = {.op = "MatMulInteger", .opset = 10, .n_in = 2,
                  .in = {TIN(I8, a3, 3, 2, 1, 3), TIN(I8, b3, 2, 3, 1)}};
    ti_run(&c3, OUTS(y3));
    CHECK(y3[0] == -4 && y3[1] == 7, "batched i8: %d %d", y3[0], y3[1]);

    /* K = 700 (the SGEMM path, in exact slices: 700 x 255 x 255 is far
     * past 2^24), u8 A with a zero point per row, u8 B with one per
     * column, against sums in int64 */
    enum { M = 3, K = 700, N = 5 };
    static uint8_t al[M * K], bl[K * N];
    uint8_t zar[M] = {0, 255, 128}, zbc[N] = {255, 0, 17, 200, 3};
    for (int i = 0; i < M * K; i++)
        al[i] = (uint8_t)((i * 131 + 7) % 256);
    for (int i = 0; i < K * N; i++)
        bl[i] = (uint8_t)((i * 197 + 3) % 256);
    int32_t yl[M * N];
    ti_case cl = {.op = "MatMulInteger", .opset = 10, .n_in = 4,
                  .in = {TIN(U8, al, 2, M, K), TIN(U8, bl, 2, K, N), TIN(U8, zar, 1, M),
                         TIN(U8, zbc, 1, N)}};
    ti_run(&cl, OUTS(yl));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            int64_t want_l = 0;
            for (int q = 0; q < K; q++)
                want_l += (int64_t)(al[i * K + q] - zar[i]) * (bl[q * N + j] - zbc[j]);
            CHECK(yl[i * N + j] == (int32_t)want_l, "K = 700: [%d, %d] is %d, expected %lld", i,
                  j, yl[i * N + j], (long long)want_l);
        }
}

static void case_QLinearMatMul(void)
{
    /* ONNX's example */
    uint8_t a[8] = {208, 236, 0, 238, 3, 214, 255, 29};
    uint8_t b[12] = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
    float as = 0.0066f, bs = 0.00705f, ys = 0.0107f;
    uint8_t az = 113, bz = 114, yz = 118, y[6];
    ti_case c = {.op = "QLinearMatMul", .opset = 10, .n_in = 8,
                 .in = {TIN(U8, a, 2, 2, 4), TIN(F32, &as, 1, 1), TIN(U8, &az, 1, 1),
                        TIN(U8, b, 2, 4, 3), TIN(F32, &bs, 1, 1), TIN(U8, &bz, 1, 1),
                        TIN(F32, &ys, 1, 1), TIN(U8, &yz, 1, 1)}};
    ti_run(&c, OUTS(y));
    ti_eq_bytes("y", y, (uint8_t[]){168, 115, 255, 1, 66, 151}, 6, false);

    /* Requantized in f32 as ONNX Runtime does: the sum -2797 times
     * 0.036949772f * 0.041918486f / 0.055899527f is -77.5 in f32 (rounds
     * to -78, y 50) but -77.4999984 in double (y 51). */
    uint8_t a2[2] = {200, 3}, b2[2] = {6, 21}, az2 = 0, bz2 = 20, yz2 = 128, y2;
    float as2 = 0.036949772f, bs2 = 0.041918486f, ys2 = 0.055899527f;
    ti_case c2 = {.op = "QLinearMatMul", .opset = 10, .n_in = 8,
                  .in = {TIN(U8, a2, 2, 1, 2), TIN(F32, &as2, 1, 1), TIN(U8, &az2, 1, 1),
                         TIN(U8, b2, 2, 2, 1), TIN(F32, &bs2, 1, 1), TIN(U8, &bz2, 1, 1),
                         TIN(F32, &ys2, 1, 1), TIN(U8, &yz2, 1, 1)}};
    ti_run(&c2, OUTS(&y2));
    ti_eq_bytes("f32 requantization", &y2, (uint8_t[]){50}, 1, false);
}

/* ---- signal ---------------------------------------------------------------------- */

static void ti_window(const char *op, int periodic, const double *want)
{
    int64_t size = 4;
    double y[4];
    ti_case c = {.op = op, .opset = 17, .n_in = 1, .in = {TIC(I64, &size, 0)},
                 .n_attrs = 2, .attrs = {AI("periodic", periodic), AI("output_datatype", 11)}};
    ti_run(&c, OUTS(y));
    for (int i = 0; i < 4; i++)
        CHECK(fabs(y[i] - want[i]) < 1e-12, "%s periodic %d: element %d is %.17g, expected %.17g",
              op, periodic, i, y[i], want[i]);
}

static void case_Windows(void)
{
    ti_window("HannWindow", 1, (double[]){0, 0.5, 1, 0.5});
    ti_window("HannWindow", 0, (double[]){0, 0.75, 0.75, 0});
    ti_window("BlackmanWindow", 1, (double[]){0, 0.34, 1, 0.34});
    double a0 = 25.0 / 46.0, a1 = 1 - a0;
    ti_window("HammingWindow", 1, (double[]){a0 - a1, a0, a0 + a1, a0});
    /* the size at run time must match the declared output */
    int32_t size = 4;
    float y[4];
    ti_case c = {.op = "HannWindow", .opset = 17, .n_in = 1, .in = {TIN(I32, &size, 0)},
                 .out = {TI(F32, 1, 4)}};
    ti_run(&c, OUTS(y));
    ti_near("run-time size", y, (double[]){0, 0.5, 1, 0.5}, 4, 1e-7);
    size = 5;
    ti_run_fails(&c, OUTS(y), sizeof y, "size 5 at run time, but the output has 4 elements");
}

static void case_DFT(void)
{
    float x[4] = {1, 2, 3, 4}, y[12], back[8];
    ti_case c = {.op = "DFT", .opset = 17, .n_in = 1, .in = {TIN(F32, x, 3, 1, 4, 1)}};
    ti_run(&c, OUTS(y));
    ti_near("DFT", y, (double[]){10, 0, -2, 2, -2, 0, -2, -2}, 8, 1e-6);
    ti_case ci = {.op = "DFT", .opset = 17, .n_in = 1, .in = {TIN(F32, y, 3, 1, 4, 2)},
                  .n_attrs = 1, .attrs = {AI("inverse", 1)}};
    float spectrum[8];
    memcpy(spectrum, y, sizeof spectrum);
    ci.in[0].data = spectrum;
    ti_run(&ci, OUTS(back));
    ti_near("inverse", back, (double[]){1, 0, 2, 0, 3, 0, 4, 0}, 8, 1e-6);
    ti_case co = c;
    co.n_attrs = 1;
    co.attrs[0] = (ch_attr)AI("onesided", 1);
    ti_run(&co, OUTS(y));
    ti_near("onesided", y, (double[]){10, 0, -2, 2, -2, 0}, 6, 1e-6);
    /* zero padding to dft_length 6: bins 0 and 3 */
    int64_t six = 6;
    ti_case cp = c;
    cp.n_in = 2;
    cp.in[1] = (ti_t)TIC(I64, &six, 0);
    ti_run(&cp, OUTS(y));
    CHECK(fabsf(y[0] - 10) < 1e-5f && fabsf(y[6] + 2) < 1e-5f && fabsf(y[7]) < 1e-5f,
          "padded: X0 %g, X3 %g%+gi", y[0], y[6], y[7]);
    ti_case cb = c;
    cb.n_attrs = 1;
    cb.attrs[0] = (ch_attr)AI("axis", 2);
    ti_infer_fails(&cb, "axis 2 is out of range for rank 3");
    /* inverse and onesided: numpy's irfft. The onesided spectrum of
     * {1, 2, 3, 4} ({10, -2+2i, -2}, the imaginary parts of bins 0 and 2
     * set to junk they must not read) gives the signal back, real. */
    float half[6] = {10, 7, -2, 2, -2, 5}, sig[4];
    ti_case cr = {.op = "DFT", .opset = 17, .n_in = 1, .in = {TIN(F32, half, 3, 1, 3, 2)},
                  .n_attrs = 2, .attrs = {AI("inverse", 1), AI("onesided", 1)}};
    ti_run(&cr, OUTS(sig));
    ti_near("irfft", sig, (double[]){1, 2, 3, 4}, 4, 1e-6);
    /* an odd length (dft_length 5): bins 0..2 of {1, 2, 3, 4, 5}'s spectrum */
    float x5[5] = {1, 2, 3, 4, 5}, s5[6], b5[5];
    ti_case c5 = {.op = "DFT", .opset = 17, .n_in = 1, .in = {TIN(F32, x5, 3, 1, 5, 1)},
                  .n_attrs = 1, .attrs = {AI("onesided", 1)}};
    ti_run(&c5, OUTS(s5));
    int64_t five = 5;
    ti_case cr5 = {.op = "DFT", .opset = 17, .n_in = 2,
                   .in = {TIN(F32, s5, 3, 1, 3, 2), TIC(I64, &five, 0)},
                   .n_attrs = 2, .attrs = {AI("inverse", 1), AI("onesided", 1)}};
    ti_run(&cr5, OUTS(b5));
    ti_near("irfft of 5", b5, (double[]){1, 2, 3, 4, 5}, 5, 1e-5);
}

static void case_STFT(void)
{
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[18];
    int64_t step = 2, fl = 4;
    ti_case c = {.op = "STFT", .opset = 17, .n_in = 4,
                 .in = {TIN(F32, x, 3, 1, 8, 1), TIC(I64, &step, 0), TABSENT, TIC(I64, &fl, 0)}};
    ti_run(&c, OUTS(y));
    /* each frame: bin 0 its sum, bin 1 -2+2i, bin 2 -2 */
    ti_near("STFT", y,
            (double[]){10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0, 26, 0, -2, 2, -2, 0}, 18, 1e-6);
    float w[4] = {0, 1, 1, 0};
    ti_case cw = {.op = "STFT", .opset = 17, .n_in = 3,
                  .in = {TIN(F32, x, 3, 1, 8, 1), TIC(I64, &step, 0), TIN(F32, w, 1, 4)}};
    ti_run(&cw, OUTS(y));
    CHECK(fabsf(y[0] - 5) < 1e-6f && fabsf(y[6] - 9) < 1e-6f, "windowed: %g %g", y[0], y[6]);
    /* frame_step at run time must give the output's frames */
    int64_t rstep = 2;
    ti_case cr = c;
    cr.in[1] = (ti_t)TIN(I64, &rstep, 0);
    cr.out[0] = (ti_t)TI(F32, 4, 1, 3, 3, 2);
    ti_run(&cr, OUTS(y));
    rstep = 3;
    ti_run_fails(&cr, OUTS(y), sizeof y, "frame_step 3 at run time does not give the output's 3");
    /* a signal [batch, length] is real, as [batch, length, 1] */
    float y2[18];
    ti_case c2 = c;
    c2.in[0] = (ti_t)TIN(F32, x, 2, 1, 8);
    ti_run(&c2, OUTS(y2));
    ti_near("STFT of [1, 8]", y2,
            (double[]){10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0, 26, 0, -2, 2, -2, 0}, 18, 1e-6);
    ti_case c4 = c;
    c4.in[0] = (ti_t)TIN(F32, x, 4, 1, 8, 1, 1);
    ti_infer_fails(&c4, "the signal must be [batch, length] or [batch, length, 1 or 2]");
}

/* The direct sum of N complex values X (interleaved) into Y: sign -1 the
 * forward transform, +1 the unscaled inverse; each angle reduced exactly. */
static void ti_direct_dft(const double *x, size_t n, double sign, double *y)
{
    for (size_t k = 0; k < n; k++) {
        double re = 0, im = 0;
        for (size_t j = 0; j < n; j++) {
            double ang = sign * 2 * M_PI * (double)((uint64_t)j * k % n) / (double)n;
            double c = cos(ang), s = sin(ang);
            re += x[2 * j] * c - x[2 * j + 1] * s;
            im += x[2 * j] * s + x[2 * j + 1] * c;
        }
        y[2 * k] = re;
        y[2 * k + 1] = im;
    }
}

static void ti_close(const char *what, size_t n, const double *got, const double *want,
                     size_t count)
{
    double norm = 1, worst = 0;
    for (size_t i = 0; i < count; i++)
        norm = fmax(norm, fabs(want[i]));
    for (size_t i = 0; i < count; i++)
        worst = fmax(worst, fabs(got[i] - want[i]));
    CHECK(worst <= 1e-12 * norm, "%s of length %zu: off by %.3g (largest value %.3g)", what, n,
          worst, norm);
}

/* The fast transforms against the direct sums, for lengths of every kind
 * the plan takes apart: powers of two and four, small odd radices (3, 5,
 * 7, 11 and mixes), primes above the largest radix and a product with one
 * (Bluestein), and 1. Forward, inverse, onesided and its inverse (irfft). */
static void case_FFTLengths(void)
{
    static const size_t lens[] = {1,   2,   3,   4,   5,   6,   7,   8,    12,   15,  16,
                                  25,  27,  49,  60,  64,  67,  97,  100,  121,  128, 200,
                                  243, 256, 400, 509, 512, 1000, 1009, 1024, 2018, 1407};
    uint64_t seed = 7;
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        size_t n = lens[li], half = n / 2 + 1;
        double *x = malloc(n * 16), *want = malloc(n * 16), *y = malloc(n * 16),
               *back = malloc(n * 16), *real = malloc(n * 16), *rwant = malloc(n * 16);
        CHECK(x && want && y && back && real && rwant, "out of memory");
        for (size_t i = 0; i < 2 * n; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            x[i] = (double)(seed >> 11) / 9007199254740992.0 * 2 - 1;
        }
        ti_direct_dft(x, n, -1, want);
        ti_case c = {.op = "DFT", .opset = 17, .n_in = 1,
                     .in = {TIN(F64, x, 3, 1, (int64_t)n, 2)}};
        ti_run(&c, OUTS(y));
        ti_close("forward", n, y, want, 2 * n);
        ti_case ci = c;
        ci.in[0].data = want;
        ci.n_attrs = 1;
        ci.attrs[0] = (ch_attr)AI("inverse", 1);
        ti_run(&ci, OUTS(back));
        ti_close("inverse", n, back, x, 2 * n);
        /* a real signal: onesided bins, then back through irfft */
        for (size_t i = 0; i < n; i++) {
            real[2 * i] = x[2 * i];
            real[2 * i + 1] = 0;
        }
        ti_direct_dft(real, n, -1, rwant);
        for (size_t i = 0; i < n; i++)
            real[i] = x[2 * i];
        ti_case co = {.op = "DFT", .opset = 17, .n_in = 1,
                      .in = {TIN(F64, real, 3, 1, (int64_t)n, 1)}, .n_attrs = 1,
                      .attrs = {AI("onesided", 1)}};
        ti_run(&co, OUTS(y));
        ti_close("onesided", n, y, rwant, 2 * half);
        int64_t len = (int64_t)n;
        ti_case cr = {.op = "DFT", .opset = 17, .n_in = 2,
                      .in = {TIN(F64, y, 3, 1, (int64_t)half, 2), TIC(I64, &len, 0)},
                      .n_attrs = 2, .attrs = {AI("inverse", 1), AI("onesided", 1)}};
        ti_run(&cr, OUTS(back));
        ti_close("irfft", n, back, real, n);
        free(x), free(want), free(y), free(back), free(real), free(rwant);
    }
}

static void case_MelWeightMatrix(void)
{
    /* 3 mel bins of a 16-point DFT at 8 kHz over 0..4 kHz: the filter
     * edges fall on spectrogram bins 0, 0, 1, 3, 5 */
    int64_t bins = 3, dft = 16, rate = 8000;
    float lo = 0, hi = 4000, y[27];
    ti_case c = {.op = "MelWeightMatrix", .opset = 17, .n_in = 5,
                 .in = {TIC(I64, &bins, 0), TIC(I64, &dft, 0), TIN(I64, &rate, 0), TIN(F32, &lo, 0),
                        TIN(F32, &hi, 0)}};
    ti_run(&c, OUTS(y));
    double want[27] = {1, 0, 0, 0, 1, 0, 0, 0.5, 0.5, 0, 0, 1, 0, 0, 0.5};
    ti_near("filters", y, want, 27, 0);
    hi = 9000;
    ti_run_fails(&c, OUTS(y), sizeof y, "falls outside the 9 spectrogram bins");
}

static void case_LpNormalization(void)
{
    /* rows (3, 4) and (0, 0): L2 gives (0.6, 0.8) and zeros; L1 of the
     * columns (3, 0) and (4, 0) gives ones and zeros */
    float x[4] = {3, 4, 0, 0}, y[4];
    ti_case c = {.op = "LpNormalization", .opset = 1, .n_in = 1, .in = {TIN(F32, x, 2, 2, 2)}};
    ti_run(&c, OUTS(y));
    ti_near("L2 rows", y, (double[]){0.6, 0.8, 0, 0}, 4, 1e-7);
    c.n_attrs = 2;
    c.attrs[0] = (ch_attr)AI("axis", 0);
    c.attrs[1] = (ch_attr)AI("p", 1);
    ti_run(&c, OUTS(y));
    ti_near("L1 columns", y, (double[]){1, 1, 0, 0}, 4, 0);
    c.attrs[1] = (ch_attr)AI("p", 3);
    ti_infer_fails(&c, "p is 3; it must be 1 or 2");
    /* GlobalLpPool: the p-norm of each plane */
    float px[8] = {3, 4, 0, 0, 1, -1, 1, -1}, py[2];
    ti_case g = {.op = "GlobalLpPool", .opset = 2, .n_in = 1, .in = {TIN(F32, px, 4, 1, 2, 2, 2)}};
    ti_run(&g, OUTS(py));
    ti_near("GlobalLpPool p 2", py, (double[]){5, 2}, 2, 1e-7);
    g.n_attrs = 1;
    g.attrs[0] = (ch_attr)AI("p", 1);
    ti_run(&g, OUTS(py));
    ti_near("GlobalLpPool p 1", py, (double[]){7, 4}, 2, 1e-7);
    /* LpPool: the p-norm of each window's taps inside the input (|x|, so
     * the -2 counts as 2; padding adds nothing) */
    float lx[9] = {1, -2, 3, 4, 5, 6, 7, 8, 9}, ly[4];
    ti_case l = {.op = "LpPool", .opset = 18, .n_in = 1, .in = {TIN(F32, lx, 4, 1, 1, 3, 3)},
                 .n_attrs = 1, .attrs = {AIS("kernel_shape", 2, 2, 2)}};
    ti_run(&l, OUTS(ly));
    ti_near("LpPool p 2", ly, (double[]){sqrt(46), sqrt(74), sqrt(154), sqrt(206)}, 4, 1e-6);
    l.n_attrs = 2;
    l.attrs[1] = (ch_attr)AI("p", 3);
    ti_run(&l, OUTS(ly));
    ti_near("LpPool p 3", ly, (double[]){cbrt(198), cbrt(376), cbrt(1044), cbrt(1582)}, 4, 1e-6);
    l.n_attrs = 4;
    l.attrs[1] = (ch_attr)AI("p", 1);
    l.attrs[2] = (ch_attr)AIS("pads", 4, 1, 1, 1, 1);
    l.attrs[3] = (ch_attr)AIS("strides", 2, 2, 2);
    ti_run(&l, OUTS(ly));
    ti_near("LpPool p 1, padded, stride 2", ly, (double[]){1, 5, 11, 28}, 4, 1e-6);
}

/* ---- ReverseSequence, MaxUnpool, Det, LRN, MeanVarianceNormalization ----------- */

static void case_ReverseSequence(void)
{
    float x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    int64_t lens[4] = {4, 3, 2, 1};
    ti_case c = {.op = "ReverseSequence", .opset = 10, .n_in = 2,
                 .in = {TIN(F32, x, 2, 4, 4), TIN(I64, lens, 1, 4)},
                 .n_attrs = 2, .attrs = {AI("batch_axis", 1), AI("time_axis", 0)}};
    ti_run(&c, OUTS(y));
    ti_near("time major", y, (double[]){12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15},
            16, 0);
    ti_case cb = c;
    cb.attrs[0] = (ch_attr)AI("batch_axis", 0);
    cb.attrs[1] = (ch_attr)AI("time_axis", 1);
    ti_run(&cb, OUTS(y));
    ti_near("batch major", y, (double[]){3, 2, 1, 0, 6, 5, 4, 7, 9, 8, 10, 11, 12, 13, 14, 15},
            16, 0);
    lens[2] = 5;
    ti_run_fails(&c, OUTS(y), sizeof y, "sequence length 5 (batch entry 2) is outside [0, 4]");
}

static void case_MaxUnpool(void)
{
    float x[4] = {5, 6, 7, 8}, y[25];
    int64_t idx[4] = {5, 7, 13, 15};
    ti_case c = {.op = "MaxUnpool", .opset = 11, .n_in = 2,
                 .in = {TIN(F32, x, 4, 1, 1, 2, 2), TIN(I64, idx, 4, 1, 1, 2, 2)},
                 .n_attrs = 2, .attrs = {AIS("kernel_shape", 2, 2, 2), AIS("strides", 2, 2, 2)}};
    ti_run(&c, OUTS(y));
    ti_near("4x4", y, (double[]){0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}, 16, 0);
    /* a larger output_shape keeps the coordinates */
    int64_t shape[4] = {1, 1, 5, 5};
    ti_case cs = c;
    cs.n_in = 3;
    cs.in[2] = (ti_t)TIC(I64, shape, 1, 4);
    ti_run(&cs, OUTS(y));
    CHECK(y[6] == 5 && y[8] == 6 && y[16] == 7 && y[18] == 8 && y[5] == 0 && y[24] == 0,
          "5x5: %g %g %g %g", y[6], y[8], y[16], y[18]);
    idx[3] = 16;
    ti_run_fails(&c, OUTS(y), 16 * sizeof(float),
                 "index 16 (element 3 of I) is outside the unpooled tensor");
}

/* Col2Im: every tap of every block position adds into the image; those in
 * the padding are dropped. */
static void case_Col2Im(void)
{
    /* 3x3 image, 2x2 blocks at stride 1: each pixel sums the windows
     * covering it (all ones: the coverage counts) */
    float ones[16], y[9];
    for (int i = 0; i < 16; i++)
        ones[i] = 1;
    int64_t img[2] = {3, 3}, blk[2] = {2, 2};
    ti_case c = {.op = "Col2Im", .opset = 18, .n_in = 3,
                 .in = {TIN(F32, ones, 3, 1, 4, 4), TIC(I64, img, 1, 2), TIC(I64, blk, 1, 2)}};
    ti_run(&c, OUTS(y));
    ti_near("coverage", y, (double[]){1, 2, 1, 2, 4, 2, 1, 2, 1}, 9, 0);
    /* pads 1 and stride 2: 2x2 positions of the padded 5x5, each pixel
     * from one tap; x[t][l] = 10 t + l names the tap and position */
    float x[16];
    for (int t = 0; t < 4; t++)
        for (int l = 0; l < 4; l++)
            x[t * 4 + l] = (float)(10 * t + l);
    ti_case cp = c;
    cp.in[0] = (ti_t)TIN(F32, x, 3, 1, 4, 4);
    cp.n_attrs = 2;
    cp.attrs[0] = (ch_attr)AIS("pads", 4, 1, 1, 1, 1);
    cp.attrs[1] = (ch_attr)AIS("strides", 2, 2, 2);
    ti_run(&cp, OUTS(y));
    ti_near("padded, stride 2", y, (double[]){30, 21, 31, 12, 3, 13, 32, 23, 33}, 9, 0);
    /* two channels of 1-D blocks of 3 with dilation 2 over 5 values: one
     * position (taps at 0, 2, 4) */
    float x1[6] = {1, 2, 3, 4, 5, 6}, y1[10];
    int64_t img1[1] = {5}, blk1[1] = {3};
    ti_case c1 = {.op = "Col2Im", .opset = 18, .n_in = 3,
                  .in = {TIN(F32, x1, 3, 1, 6, 1), TIC(I64, img1, 1, 1), TIC(I64, blk1, 1, 1)},
                  .n_attrs = 1, .attrs = {AIS("dilations", 1, 2)}};
    ti_run(&c1, OUTS(y1));
    ti_near("1-D dilated", y1, (double[]){1, 0, 2, 0, 3, 4, 0, 5, 0, 6}, 10, 0);
}

static void case_Det(void)
{
    /* a 2x2, a 3x3 that needs pivoting, a singular one */
    float x[2 * 9] = {0, 1, 0, 1, 0, 0, 0, 0, 2, 1, 2, 3, 2, 4, 6, 0, 1, 1}, y[2];
    ti_case c = {.op = "Det", .opset = 11, .n_in = 1, .in = {TIN(F32, x, 3, 2, 3, 3)}};
    ti_run(&c, OUTS(y));
    ti_near("3x3", y, (double[]){-2, 0}, 2, 1e-7);
    float m[4] = {1, 2, 3, 4};
    ti_case c2 = {.op = "Det", .opset = 11, .n_in = 1, .in = {TIN(F32, m, 2, 2, 2)}};
    ti_run(&c2, OUTS(y));
    ti_near("2x2", y, (double[]){-2}, 1, 1e-7);
    ti_case bad = {.op = "Det", .opset = 11, .n_in = 1, .in = {TIN(F32, m, 2, 1, 4)}};
    ti_infer_fails(&bad, "is not a (batch of) square matrices");
}

static void case_LRN(void)
{
    float x[3] = {1, 2, 3}, y[3];
    ti_case c = {.op = "LRN", .n_in = 1, .in = {TIN(F32, x, 4, 1, 3, 1, 1)},
                 .n_attrs = 4,
                 .attrs = {AI("size", 3), AF("alpha", 3), AF("beta", 1), AF("bias", 1)}};
    ti_run(&c, OUTS(y));
    ti_near("size 3", y, (double[]){1.0 / 6, 2.0 / 15, 3.0 / 14}, 3, 1e-6);
    /* an even size looks one channel further up than down */
    c.attrs[0] = (ch_attr)AI("size", 2);
    c.attrs[1] = (ch_attr)AF("alpha", 2);
    ti_run(&c, OUTS(y));
    ti_near("size 2", y, (double[]){1.0 / 6, 2.0 / 14, 3.0 / 10}, 3, 1e-6);
}

static void case_MeanVarianceNormalization(void)
{
    /* [1, 2, 2, 1]: channel 0 holds 1 and 3, channel 1 twice 5 */
    float x[4] = {1, 3, 5, 5}, y[4];
    ti_case c = {.op = "MeanVarianceNormalization", .n_in = 1, .in = {TIN(F32, x, 4, 1, 2, 2, 1)}};
    ti_run(&c, OUTS(y));
    ti_near("default axes", y, (double[]){-1, 1, 0, 0}, 4, 1e-6);
    ti_case c1 = c;
    c1.n_attrs = 1;
    c1.attrs[0] = (ch_attr)AIS("axes", 1, 1);
    ti_run(&c1, OUTS(y));
    ti_near("axis 1", y, (double[]){-1, -1, 1, 1}, 4, 1e-6);
}

/* ---- GridSample, RoiAlign, ConvInteger, QLinearConv ------------------------------- */

/* GridSample of X = [[1, 2], [3, 4]] at one grid point. */
static double ti_grid(const char *mode, const char *pad, int align, float gx, float gy)
{
    float x[4] = {1, 2, 3, 4}, g[2] = {gx, gy}, y;
    ti_case c = {.op = "GridSample", .opset = 16, .n_in = 2,
                 .in = {TIN(F32, x, 4, 1, 1, 2, 2), TIN(F32, g, 4, 1, 1, 1, 2)},
                 .n_attrs = 3,
                 .attrs = {AS("mode", mode), AS("padding_mode", pad), AI("align_corners", align)}};
    ti_run(&c, OUTS(&y));
    return y;
}

static void ti_expect(const char *what, double got, double want)
{
    CHECK(fabs(got - want) <= 1e-6 * (1 + fabs(want)), "%s: %.9g, expected %.9g", what, got,
          want);
}

/* GridSample 20 of the volume X[z][y][x] = 1 + 4z + 2y + x (2 x 2 x 2) at
 * one grid point (x, y, z). */
static double ti_grid3(const char *mode, const char *pad, int align, float gx, float gy,
                       float gz)
{
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, g[3] = {gx, gy, gz}, y;
    ti_case c = {.op = "GridSample", .opset = 20, .n_in = 2,
                 .in = {TIN(F32, x, 5, 1, 1, 2, 2, 2), TIN(F32, g, 5, 1, 1, 1, 1, 3)},
                 .n_attrs = 3,
                 .attrs = {AS("mode", mode), AS("padding_mode", pad), AI("align_corners", align)}};
    ti_run(&c, OUTS(&y));
    return y;
}

/* 4-D bilinear and nearest sampling of f32 (taps per block of points,
 * shared by the channels, split over points and channels) against the
 * same inputs in f64 (the generic path, per element), in every padding
 * and alignment: 2 x 37 channels of 7 x 9 at 9 x 13 points (channels split
 * among the threads), and 1 x 3 of 5 x 6 at 20 x 17 (two blocks of points;
 * grid values beyond [-1, 1], and exactly on -1, 0 and 1). */
static void ti_grid_f32_paths(void)
{
    static const int shapes[2][6] = {{2, 37, 7, 9, 9, 13}, {1, 3, 5, 6, 20, 17}};
    const char *modes[] = {"bilinear", "nearest"}, *pads[] = {"zeros", "border", "reflection"};
    uint32_t seed = 11;
    for (int s = 0; s < 2; s++) {
        const int *d = shapes[s];
        size_t nx = (size_t)d[0] * d[1] * d[2] * d[3], ng = (size_t)d[0] * d[4] * d[5] * 2;
        size_t ny = (size_t)d[0] * d[1] * d[4] * d[5];
        float *x = malloc(nx * sizeof *x), *g = malloc(ng * sizeof *g), *y = malloc(ny * sizeof *y);
        double *x64 = malloc(nx * sizeof *x64), *g64 = malloc(ng * sizeof *g64);
        double *y64 = malloc(ny * sizeof *y64);
        CHECK(x && g && y && x64 && g64 && y64, "out of memory");
        for (size_t i = 0; i < nx; i++) {
            seed = seed * 1664525u + 1013904223u;
            x64[i] = x[i] = (float)((seed >> 8) % 2001) / 100.0f - 10.0f;
        }
        for (size_t i = 0; i < ng; i++) {
            seed = seed * 1664525u + 1013904223u;
            g64[i] = g[i] = i % 11 == 0   ? (float)((int)(seed >> 8) % 3 - 1)
                            : (float)((seed >> 8) % 2501) / 1000.0f - 1.25f;
        }
        for (int m = 0; m < 2; m++)
            for (int p = 0; p < 3; p++)
                for (int align = 0; align < 2; align++) {
                    ti_case c = {.op = "GridSample", .opset = 16, .n_in = 2,
                                 .in = {TIN(F32, x, 4, d[0], d[1], d[2], d[3]),
                                        TIN(F32, g, 4, d[0], d[4], d[5], 2)},
                                 .n_attrs = 3,
                                 .attrs = {AS("mode", modes[m]), AS("padding_mode", pads[p]),
                                           AI("align_corners", align)}};
                    ti_case c64 = c;
                    c64.in[0] = (ti_t)TIN(F64, x64, 4, d[0], d[1], d[2], d[3]);
                    c64.in[1] = (ti_t)TIN(F64, g64, 4, d[0], d[4], d[5], 2);
                    ti_run(&c, OUTS(y));
                    ti_run(&c64, OUTS(y64));
                    char what[96];
                    snprintf(what, sizeof what, "f32 %s %s align %d, shape %d", modes[m],
                             pads[p], align, s);
                    ti_near(what, y, y64, ny, 2e-6);
                }
        free(x), free(g), free(y), free(x64), free(g64), free(y64);
    }
}

static void case_GridSample(void)
{
    ti_expect("bilinear corners, centre", ti_grid("bilinear", "zeros", 1, 0, 0), 2.5);
    ti_expect("bilinear corners, top left", ti_grid("bilinear", "zeros", 1, -1, -1), 1);
    ti_expect("bilinear corners, top right", ti_grid("bilinear", "zeros", 1, 1, -1), 2);
    /* align_corners 0: -1 is half a pixel outside */
    ti_expect("zeros outside", ti_grid("bilinear", "zeros", 0, -1, -1), 0.25);
    ti_expect("border outside", ti_grid("bilinear", "border", 0, -1, -1), 1);
    ti_expect("reflection beyond", ti_grid("bilinear", "reflection", 0, 1.5f, 0), 3);
    ti_expect("nearest", ti_grid("nearest", "zeros", 0, 0.1f, -0.6f), 2);
    ti_expect("bicubic on a pixel", ti_grid("bicubic", "zeros", 1, -1, -1), 1);
    ti_expect("bicubic, zeros", ti_grid("bicubic", "zeros", 1, 0, 0), 3.525390625);
    ti_expect("bicubic, border", ti_grid("bicubic", "border", 1, 0, 0), 2.5);
    /* 5-D (opset 20): trilinear and nearest */
    ti_expect("trilinear, centre", ti_grid3("linear", "zeros", 1, 0, 0, 0), 4.5);
    ti_expect("trilinear, corner", ti_grid3("linear", "zeros", 1, -1, -1, -1), 1);
    ti_expect("trilinear, x 1 z 1", ti_grid3("linear", "zeros", 1, 1, -1, 1), 6);
    /* align_corners 0: -1 is half a voxel outside on each axis: 1/8 of 1 */
    ti_expect("trilinear, zeros outside", ti_grid3("linear", "zeros", 0, -1, -1, -1), 0.125);
    ti_expect("trilinear, border outside", ti_grid3("linear", "border", 0, -1, -1, -1), 1);
    ti_expect("nearest 3-D", ti_grid3("nearest", "zeros", 0, 0.1f, -0.6f, 0.7f), 6);
    float x[4] = {0}, g[4] = {0};
    ti_case bad = {.op = "GridSample", .opset = 16, .n_in = 2,
                   .in = {TIN(F32, x, 4, 1, 1, 2, 2), TIN(F32, g, 4, 1, 1, 2, 1)}};
    ti_infer_fails(&bad, "the grid [N, H_out, W_out, 2]");
    ti_case badm = bad;
    badm.in[1].dims[3] = 2;
    badm.in[1].dims[2] = 1;
    badm.n_attrs = 1;
    badm.attrs[0] = (ch_attr)AS("mode", "cubic");
    ti_infer_fails(&badm, "mode 'cubic' is none of bilinear, nearest, bicubic");
    /* 5-D before opset 20, and cubic on 5-D */
    float x3[8] = {0}, g3[3] = {0};
    ti_case bad3 = {.op = "GridSample", .opset = 16, .n_in = 2,
                    .in = {TIN(F32, x3, 5, 1, 1, 2, 2, 2), TIN(F32, g3, 5, 1, 1, 1, 1, 3)}};
    ti_infer_fails(&bad3, "from opset 20 and not bicubic");
    bad3.opset = 20;
    bad3.n_attrs = 1;
    bad3.attrs[0] = (ch_attr)AS("mode", "cubic");
    ti_infer_fails(&bad3, "from opset 20 and not bicubic");
    ti_grid_f32_paths();
}

static void case_RoiAlign(void)
{
    /* X[y][x] = 4y + x: bilinear samples of it are exact */
    float x[16], rois[4] = {0, 0, 3, 3}, y;
    for (int i = 0; i < 16; i++)
        x[i] = (float)i;
    int64_t b = 0;
    ti_case c = {.op = "RoiAlign", .opset = 16, .n_in = 3,
                 .in = {TIN(F32, x, 4, 1, 1, 4, 4), TIN(F32, rois, 2, 1, 4), TIN(I64, &b, 1, 1)},
                 .n_attrs = 1, .attrs = {AI("sampling_ratio", 1)}};
    ti_run(&c, OUTS(&y));
    ti_expect("half_pixel", y, 5);
    ti_case co = c;
    co.n_attrs = 2;
    co.attrs[1] = (ch_attr)AS("coordinate_transformation_mode", "output_half_pixel");
    ti_run(&co, OUTS(&y));
    ti_expect("output_half_pixel", y, 7.5);
    b = 1;
    y = 0;
    ti_run_fails(&c, OUTS(&y), sizeof y,
                 "batch index 1 (roi 0) is out of range for a batch of 1");
    ti_case cm = c;
    cm.n_attrs = 2;
    cm.attrs[1] = (ch_attr)AS("mode", "max");
    ti_refused(&cm, "cpu: RoiAlign: mode 'max' (only avg");
}

static void case_ConvInteger(void)
{
    /* ONNX's example: padding stands for the zero point */
    uint8_t x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w[4] = {1, 1, 1, 1}, xz = 1;
    int32_t y[16];
    ti_case c = {.op = "ConvInteger", .opset = 10, .n_in = 3,
                 .in = {TIN(U8, x, 4, 1, 1, 3, 3), TIN(U8, w, 4, 1, 1, 2, 2), TIN(U8, &xz, 0)}};
    ti_run(&c, OUTS(y));
    int32_t want[4] = {12, 16, 24, 28};
    for (int i = 0; i < 4; i++)
        CHECK(y[i] == want[i], "no padding: element %d is %d, expected %d", i, y[i], want[i]);
    ti_case cp = c;
    cp.n_attrs = 1;
    cp.attrs[0] = (ch_attr)AIS("pads", 4, 1, 1, 1, 1);
    ti_run(&cp, OUTS(y));
    int32_t wantp[16] = {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9};
    for (int i = 0; i < 16; i++)
        CHECK(y[i] == wantp[i], "pads: element %d is %d, expected %d", i, y[i], wantp[i]);
    /* two groups of one channel each, i8 */
    int8_t gx[4] = {1, 2, 3, 4}, gw[2] = {2, 3};
    int32_t gy[4];
    ti_case cg = {.op = "ConvInteger", .opset = 10, .n_in = 2,
                  .in = {TIN(I8, gx, 4, 1, 2, 1, 2), TIN(I8, gw, 4, 2, 1, 1, 1)},
                  .n_attrs = 1, .attrs = {AI("group", 2)}};
    ti_run(&cg, OUTS(gy));
    CHECK(gy[0] == 2 && gy[1] == 4 && gy[2] == 9 && gy[3] == 12, "groups: %d %d %d %d", gy[0],
          gy[1], gy[2], gy[3]);
}

/* One ConvInteger against a direct loop: u8 input, i8
 * weights (graph constants when CONSTANT, else packed at run time) with a
 * zero point per output channel, pads [T, L, B, R]. */
typedef struct ti_narrow {
    int64_t n, c, m, h, w, kh, kw, group, stride, dil, pads[4];
    int constant;
} ti_narrow;

static void ti_convint_narrow(const ti_narrow *q)
{
    const int64_t cg = q->c / q->group, mg = q->m / q->group;
    const int64_t oh = (q->h + q->pads[0] + q->pads[2] - (q->kh - 1) * q->dil - 1) / q->stride + 1;
    const int64_t ow = (q->w + q->pads[1] + q->pads[3] - (q->kw - 1) * q->dil - 1) / q->stride + 1;
    size_t nx = (size_t)(q->n * q->c * q->h * q->w), nw = (size_t)(q->m * cg * q->kh * q->kw);
    size_t ny = (size_t)(q->n * q->m * oh * ow);
    uint8_t *x = malloc(nx), xz = 117;
    int8_t *w = malloc(nw), *wz = malloc((size_t)q->m);
    int32_t *y = malloc(ny * sizeof *y);
    CHECK(x && w && wz && y, "out of memory");
    uint32_t r = 12345u + (uint32_t)(q->c * 31 + q->stride * 7 + q->dil);
    for (size_t i = 0; i < nx; i++)
        x[i] = (uint8_t)((r = r * 1664525u + 1013904223u) >> 24);
    for (size_t i = 0; i < nw; i++)
        w[i] = (int8_t)((r = r * 1664525u + 1013904223u) >> 24);
    for (int64_t i = 0; i < q->m; i++)
        wz[i] = (int8_t)(i * 37 % 255 - 127);
    ti_case c = {.op = "ConvInteger", .opset = 10, .n_in = 4,
                 .in = {{.dt = U8, .ndim = 4, .dims = {q->n, q->c, q->h, q->w}, .data = x},
                        {.dt = I8, .ndim = 4, .dims = {q->m, cg, q->kh, q->kw}, .data = w,
                         .constant = q->constant},
                        {.dt = U8, .ndim = 0, .data = &xz, .constant = 1},
                        {.dt = I8, .ndim = 1, .dims = {q->m}, .data = wz, .constant = 1}},
                 .n_attrs = 4,
                 .attrs = {AI("group", q->group), AIS("strides", 2, q->stride, q->stride),
                           AIS("dilations", 2, q->dil, q->dil),
                           AIS("pads", 4, q->pads[0], q->pads[1], q->pads[2], q->pads[3])}};
    ti_run(&c, OUTS(y));
    size_t bad = 0;
    for (int64_t b = 0; b < q->n; b++)
        for (int64_t m = 0; m < q->m; m++)
            for (int64_t i = 0; i < oh; i++)
                for (int64_t j = 0; j < ow; j++) {
                    int32_t want = 0;
                    for (int64_t cc = 0; cc < cg; cc++)
                        for (int64_t u = 0; u < q->kh; u++)
                            for (int64_t v = 0; v < q->kw; v++) {
                                int64_t ih = i * q->stride - q->pads[0] + u * q->dil;
                                int64_t iw = j * q->stride - q->pads[1] + v * q->dil;
                                int32_t xv = ih < 0 || ih >= q->h || iw < 0 || iw >= q->w
                                                 ? xz
                                                 : x[((b * q->c + m / mg * cg + cc) * q->h + ih) *
                                                         q->w + iw];
                                want += (xv - xz) *
                                        (w[((m * cg + cc) * q->kh + u) * q->kw + v] - wz[m]);
                            }
                    size_t at = (size_t)(((b * q->m + m) * oh + i) * ow + j);
                    if (y[at] != want && bad++ < 3)
                        CHECK(0, "ConvInteger c %lld m %lld %lldx%lld stride %lld dil "
                                 "%lld group %lld: y[%zu] = %d, expected %d",
                              (long long)q->c, (long long)q->m, (long long)q->h,
                              (long long)q->w, (long long)q->stride, (long long)q->dil,
                              (long long)q->group, at, y[at], want);
                }
    free(x);
    free(w);
    free(wz);
    free(y);
}

/* The cpu module's ways through an integer convolution (quant_conv.c),
 * each against a direct loop. Outputs narrower than 8 columns read the
 * input channels-last (qc_hwc_fits): channel counts off its blocks of 8,
 * stride, dilation (each tap its own run), groups, asymmetric padding,
 * two images, weights constant or not; then one over CPU_IGEMM_SERIAL_MACS
 * on one image, split by output channels over the pool. Then the implicit
 * products over the pool (stride 1 and 2), their padded input made once
 * by chunks of channels (qc_plan.shared_pad). */
static void case_ConvInteger_paths(void)
{
    const ti_narrow cases[] = {
        {2, 20, 6, 5, 6, 3, 3, 1, 1, 1, {1, 1, 1, 1}, 1},
        {2, 20, 6, 5, 6, 3, 3, 1, 1, 1, {1, 1, 1, 1}, 0},
        {1, 13, 5, 9, 7, 3, 3, 1, 2, 1, {1, 0, 2, 1}, 1},
        {2, 16, 4, 6, 6, 3, 2, 2, 1, 2, {2, 1, 2, 1}, 1},
        {1, 24, 9, 4, 4, 1, 1, 1, 2, 1, {0, 0, 0, 0}, 0},
        {1, 256, 256, 7, 7, 3, 3, 1, 1, 1, {1, 1, 1, 1}, 1},
        {1, 64, 64, 28, 28, 3, 3, 1, 1, 1, {1, 1, 1, 1}, 1},
        {1, 64, 64, 56, 56, 3, 3, 1, 2, 1, {1, 1, 1, 1}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ti_convint_narrow(&cases[i]);
}

static void case_QLinearConv(void)
{
    uint8_t x[4] = {10, 20, 30, 40}, w = 3, xz = 10, wz = 1, yz = 5, y[4];
    float xs = 0.5f, ws = 2, ys = 1;
    int32_t bias = 7;
    ti_case c = {.op = "QLinearConv", .opset = 10, .n_in = 9,
                 .in = {TIN(U8, x, 4, 1, 1, 2, 2), TIN(F32, &xs, 0), TIN(U8, &xz, 0),
                        TIN(U8, &w, 4, 1, 1, 1, 1), TIN(F32, &ws, 0), TIN(U8, &wz, 0),
                        TIN(F32, &ys, 0), TIN(U8, &yz, 0), TIN(I32, &bias, 1, 1)}};
    ti_run(&c, OUTS(y));
    /* round((((x - 10) * (3 - 1)) + 7) * 0.5 * 2 / 1) + 5 */
    ti_eq_bytes("QLinearConv", y, (uint8_t[]){12, 32, 52, 72}, 4, false);
    ti_case cb = c;
    cb.in[8].dt = F32;
    ti_refused(&cb, "the bias must be 1 i32 values");

    /* Requantized in f32 as ONNX Runtime does: (10 - 0) * (0 - 100) - 1797
     * = -2797, times 0.036949772f * 0.041918486f / 0.055899527f: -77.5 in
     * f32 (y 50), -77.4999984 in double (y 51). */
    uint8_t x2 = 10, w2 = 0, xz2 = 0, wz2 = 100, yz2 = 128, y2;
    float xs2 = 0.036949772f, ws2 = 0.041918486f, ys2 = 0.055899527f;
    int32_t bias2 = -1797;
    ti_case c2 = {.op = "QLinearConv", .opset = 10, .n_in = 9,
                  .in = {TIN(U8, &x2, 4, 1, 1, 1, 1), TIN(F32, &xs2, 0), TIN(U8, &xz2, 0),
                         TIN(U8, &w2, 4, 1, 1, 1, 1), TIN(F32, &ws2, 0), TIN(U8, &wz2, 0),
                         TIN(F32, &ys2, 0), TIN(U8, &yz2, 0), TIN(I32, &bias2, 1, 1)}};
    ti_run(&c2, OUTS(&y2));
    ti_eq_bytes("f32 requantization", &y2, (uint8_t[]){50}, 1, false);
}

/* ---- TfIdfVectorizer ------------------------------------------------------------- */

static void case_TfIdfVectorizer(void)
{
    /* pool: unigrams 1, 3; bigrams (1, 2), (1, 3) */
    int64_t x[5] = {1, 2, 1, 2, 3};
    float y[4];
    ti_case c = {.op = "TfIdfVectorizer", .opset = 9, .n_in = 1, .in = {TIN(I64, x, 1, 5)},
                 .n_attrs = 6,
                 .attrs = {AI("min_gram_length", 1), AI("max_gram_length", 2),
                           AI("max_skip_count", 1), AS("mode", "TF"),
                           AIS("ngram_counts", 2, 0, 2), AIS("ngram_indexes", 4, 0, 1, 2, 3)}};
    ch_attr pool = {.name = "pool_int64s", .kind = 'I', .n = 6, .ints = {1, 3, 1, 2, 1, 3}};
    c.attrs[c.n_attrs++] = pool;
    /* unigrams once, (1, 2) twice at skip 0, (1, 3) once at skip 1 */
    ti_run(&c, OUTS(y));
    ti_near("TF, skips", y, (double[]){2, 1, 2, 1}, 4, 0);
    ti_case c0 = c;
    c0.attrs[2] = (ch_attr)AI("max_skip_count", 0);
    ti_run(&c0, OUTS(y));
    ti_near("TF, no skip", y, (double[]){2, 1, 2, 0}, 4, 0);
    /* batch of two rows of i32 tokens, bigrams only */
    int32_t xb[6] = {1, 2, 3, 3, 1, 3};
    float yb[8];
    ti_case cb = c0;
    cb.in[0] = (ti_t)TIN(I32, xb, 2, 2, 3);
    cb.attrs[0] = (ch_attr)AI("min_gram_length", 2);
    ti_run(&cb, OUTS(yb));
    ti_near("rows", yb, (double[]){0, 0, 1, 0, 0, 0, 0, 1}, 8, 0);
    ti_case cz = c;
    cz.attrs[4] = (ch_attr)AIS("ngram_counts", 2, 0, 3);
    ti_refused(&cz, "ngram_counts does not split the pool into whole 2-grams");
    ti_case cm = c;
    cm.attrs[3] = (ch_attr)AS("mode", "BM25");
    ti_infer_fails(&cm, "mode 'BM25' is none of TF, IDF, TFIDF");
}

static const struct {
    const char *name;
    void (*run)(void);
} ti_cases[] = {
#define TI_CASE(n) {#n, case_##n}
    TI_CASE(GatherElements), TI_CASE(GatherND), TI_CASE(ScatterElements), TI_CASE(ScatterND),
    TI_CASE(TopK), TI_CASE(OneHot), TI_CASE(DepthToSpace), TI_CASE(EyeLike), TI_CASE(Hardmax),
    TI_CASE(CastLike), TI_CASE(Einsum), TI_CASE(NegativeLogLikelihoodLoss),
    TI_CASE(SoftmaxCrossEntropyLoss), TI_CASE(QuantizeLinear), TI_CASE(DequantizeLinear),
    TI_CASE(DynamicQuantizeLinear), TI_CASE(MatMulInteger), TI_CASE(QLinearMatMul),
    TI_CASE(Windows), TI_CASE(DFT), TI_CASE(FFTLengths), TI_CASE(STFT), TI_CASE(ReverseSequence), TI_CASE(MaxUnpool), TI_CASE(Col2Im),
    TI_CASE(Det), TI_CASE(LRN), TI_CASE(MeanVarianceNormalization), TI_CASE(GridSample),
    TI_CASE(RoiAlign), TI_CASE(ConvInteger), TI_CASE(ConvInteger_paths), TI_CASE(QLinearConv),
    TI_CASE(TfIdfVectorizer),
    TI_CASE(MelWeightMatrix), TI_CASE(LpNormalization),
#undef TI_CASE
};

int main(int argc, char **argv)
{
    alarm(110);
    if (argc < 3) {
        fprintf(stderr, "usage: %s CASE STAGE_DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < CH_COUNT(ti_cases); i++) {
        if (strcmp(argv[1], ti_cases[i].name) != 0)
            continue;
        ch_setup(argv[2]);
        ti_cases[i].run();
        ch_teardown();
        printf("ok %s\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
