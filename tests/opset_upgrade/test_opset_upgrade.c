/* test_opset_upgrade.c — the conversion of ai.onnx opset 1-6 graphs to
 * opset 7 (core/opset/src/opset_upgrade.c, run by pl_opset_infer): for each step,
 * the rewritten node (attributes gone or renamed, inputs replaced, a
 * constant or an Unsqueeze added) and the types inferred after it, and
 * every refusal with its message. The values the converted models compute
 * are checked against NumPy by the opset_upgrade.values.* tests (the same
 * directory's gen_old_models.py through the conformance runner). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "../failing_allocator.h"
#include "model.h"
#include "opset_harness.h"

/* ---- helpers -------------------------------------------------------------- */

/* Runs inference on G and reports a failure; true when it succeeded. G is
 * kept for the caller's checks (destroy it). */
static bool run_ok(pl_graph *g)
{
    pl_status *st = oh_run(g);
    if (st != NULL) {
        FAIL("inference failed: %s", pl_status_message(st));
        pl_status_free(st);
        return false;
    }
    return true;
}

static const pl_graph_node *node_of(pl_graph *g, const char *name)
{
    const pl_graph_node *n = pl_graph_get_node(g, pl_graph_find_node(g, name));
    if (n == NULL)
        FAIL("no node '%s'", name);
    return n;
}

/* The tensor input I of node NAME feeds from. */
static const pl_graph_tensor *input_of(pl_graph *g, const char *name, size_t i)
{
    const pl_graph_node *n = node_of(g, name);
    if (n == NULL || i >= n->n_inputs || n->inputs[i] == PL_TID_NONE) {
        FAIL("node '%s' has no input %zu", name, i);
        return NULL;
    }
    return pl_graph_get_tensor(g, n->inputs[i]);
}

static void expect_no_attr(pl_graph *g, const char *node, const char *attr)
{
    const pl_graph_node *n = node_of(g, node);
    if (n != NULL && pl_graph_node_attr(n, attr) != NULL)
        FAIL("node '%s' still has attribute '%s'", node, attr);
}

static void expect_attr_ints(pl_graph *g, const char *node, const char *attr,
                             const int64_t *v, int count)
{
    const pl_graph_node *n = node_of(g, node);
    const pl_attr *a = n ? pl_graph_node_attr(n, attr) : NULL;
    bool same = a != NULL && a->kind == PL_ATTR_INTS && a->n == (size_t)count;
    for (int i = 0; same && i < count; i++)
        same = a->ints[i] == v[i];
    if (!same)
        FAIL("node '%s': attribute '%s' is not the expected ints", node, attr);
}

/* Checks shape DIMS of tensor T and, when VALUES is given, that it is a
 * constant holding those f32 values. */
static void expect_tensor(const pl_graph_tensor *t, const int64_t *dims, int ndim,
                          const float *values)
{
    if (t == NULL)
        return;
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->dims[d] == dims[d];
    if (!same)
        FAIL("tensor '%s' has rank %d, not the expected shape", t->name, (int)t->ndim);
    size_t n;
    if (values != NULL && (t->data == NULL || !pl_dims_elements(dims, ndim, &n) ||
                           t->nbytes != n * sizeof(float) || memcmp(t->data, values, t->nbytes)))
        FAIL("tensor '%s' is not a constant with the expected values", t->name);
}

static void expect_opset(pl_graph *g, int64_t v)
{
    if (pl_graph_opset(g, "") != v)
        FAIL("the graph imports ai.onnx %lld, expected %lld", (long long)pl_graph_opset(g, ""),
             (long long)v);
}

/* An f32 constant of shape DIMS holding 0, 1, 2, … */
static void const_f32(pl_graph *g, const char *name, const int64_t *dims, int ndim)
{
    size_t n;
    if (!pl_dims_elements(dims, ndim, &n) || n > 64)
        exit(1);
    float v[64];
    for (size_t i = 0; i < n; i++)
        v[i] = (float)i;
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, F32, ndim, dims, NULL));
    OK(pl_graph_set_constant(g, t, v, n * sizeof *v));
}

/* A legacy broadcasting node: OP(a, b) with broadcast=1 and, when AXIS >=
 * 0, axis. */
static pl_nid legacy(pl_graph *g, const char *op, const char *in, int64_t axis)
{
    pl_nid n = oh_node(g, "n", op, in, "y");
    oh_attr_i(g, n, "broadcast", 1);
    if (axis >= 0)
        oh_attr_i(g, n, "axis", axis);
    return n;
}

/* ---- legacy broadcasting (6 -> 7) ------------------------------------------- */

static void case_broadcast_axis_constant(void)
{
    /* B [3,4] from axis 1 of A [2,3,4,5]: B, used only there, is
     * reshaped to [3,4,1] where it lies. */
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)i;
    pl_graph *g = oh_new_graph("Add, constant B, axis 1", 6);
    oh_input(g, "a", F32, D(2, 3, 4, 5));
    const_f32(g, "b", D(3, 4));
    legacy(g, "Add", "a,b", 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 5));
        expect_tensor(input_of(g, "n", 1), D(3, 4, 1), v);
        if (strcmp(input_of(g, "n", 1)->name, "b") != 0)
            FAIL("B, used once, was copied instead of reshaped");
        expect_no_attr(g, "n", "broadcast");
        expect_no_attr(g, "n", "axis");
        expect_opset(g, 7);
        if (pl_graph_node_count(g) != 1 || pl_graph_tensor_count(g) != 3)
            FAIL("a constant B needs no new node or tensor (%zu nodes, %zu tensors)",
                 pl_graph_node_count(g), pl_graph_tensor_count(g));
    }
    pl_graph_destroy(g);

    /* B also feeds another node: that one keeps it, this one gets a
     * reshaped copy. */
    g = oh_new_graph("Add, shared constant B, axis 1", 6);
    oh_input(g, "a", F32, D(2, 3, 4, 5));
    const_f32(g, "b", D(3, 4));
    legacy(g, "Add", "a,b", 1);
    oh_node(g, "other", "Neg", "b", "nb");
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 5));
        oh_check_tensor(g, "nb", F32, D(3, 4));
        expect_tensor(input_of(g, "n", 1), D(3, 4, 1), v);
        expect_tensor(input_of(g, "other", 0), D(3, 4), v);
    }
    pl_graph_destroy(g);

    /* axis = rank(A) - rank(B): B already lines up at the end. */
    g = oh_new_graph("Mul, axis at the end", 6);
    oh_input(g, "a", F32, D(2, 3, 4));
    const_f32(g, "b", D(3, 4));
    legacy(g, "Mul", "a,b", 1);
    if (run_ok(g)) {
        expect_tensor(input_of(g, "n", 1), D(3, 4), NULL);
        if (strcmp(input_of(g, "n", 1)->name, "b") != 0)
            FAIL("B was replaced though it lined up");
    }
    pl_graph_destroy(g);
}

static void case_broadcast_axis_input(void)
{
    /* B a graph input: an Unsqueeze node before the node, linked in. */
    pl_graph *g = oh_new_graph("Sub, input B, axis 1", 6);
    oh_input(g, "a", F32, D(2, 3, 4, 5));
    oh_input(g, "b", F32, D(3));
    legacy(g, "Sub", "a,b", 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 5));
        const pl_graph_tensor *b = input_of(g, "n", 1);
        expect_tensor(b, D(3, 1, 1), NULL);
        const pl_graph_node *u = b ? pl_graph_get_node(g, b->producer) : NULL;
        if (u == NULL || strcmp(u->op, "Unsqueeze") != 0)
            FAIL("B is not produced by an Unsqueeze (after validation)");
        else
            expect_attr_ints(g, u->name, "axes", (const int64_t[]){1, 2}, 2);
        const pl_nid *topo = pl_graph_topo_order(g);
        if (topo == NULL || pl_graph_node_count(g) != 2 ||
            strcmp(pl_graph_get_node(g, topo[1])->name, "n") != 0)
            FAIL("the graph is not validated with the Unsqueeze first");
    }
    pl_graph_destroy(g);
}

static void case_broadcast_axis_intermediate(void)
{
    /* A is a node's output: its rank is known only once inference reached
     * it, which is when the conversion runs. */
    pl_graph *g = oh_new_graph("Div after Relu", 6);
    oh_input(g, "x", F32, D(2, 3, 4, 5));
    const_f32(g, "b", D(3));
    oh_node(g, "r", "Relu", "x", "a");
    pl_nid n = oh_node(g, "n", "Div", "a,b", "y");
    oh_attr_i(g, n, "broadcast", 1);
    oh_attr_i(g, n, "axis", 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 5));
        expect_tensor(input_of(g, "n", 1), D(3, 1, 1), (const float[]){0, 1, 2});
    }
    pl_graph_destroy(g);
}

static void case_broadcast_plain(void)
{
    /* broadcast=1 without axis is suffix matching: NumPy's rule. */
    pl_graph *g = oh_new_graph("suffix", 6);
    oh_input(g, "a", F32, D(2, 3, 4));
    oh_input(g, "b", F32, D(4));
    legacy(g, "Add", "a,b", -1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4));
        expect_no_attr(g, "n", "broadcast");
        if (strcmp(input_of(g, "n", 1)->name, "b") != 0)
            FAIL("B was replaced for a suffix broadcast");
    }
    pl_graph_destroy(g);

    /* broadcast=0 (or absent): equal shapes. */
    g = oh_new_graph("no broadcast", 1);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2, 3));
    pl_nid n = oh_node(g, "n", "Pow", "a,b", "y");
    oh_attr_i(g, n, "broadcast", 0);
    oh_expect(g, "y", F32, D(2, 3));

    /* The comparisons and logical ops of opset 1 broadcast the same way. */
    g = oh_new_graph("Greater, axis 0", 1);
    oh_input(g, "a", F32, D(2, 3));
    const_f32(g, "b", D(2));
    legacy(g, "Greater", "a,b", 0);
    oh_expect(g, "y", BOOL, D(2, 3));

    g = oh_new_graph("And, axis 1", 6);
    oh_input(g, "a", BOOL, D(2, 3, 4));
    oh_input(g, "b", BOOL, D(3));
    legacy(g, "And", "a,b", 1);
    oh_expect(g, "y", BOOL, D(2, 3, 4));
}

static void case_broadcast_refused(void)
{
    pl_graph *g = oh_new_graph("A of unknown rank", 6);
    oh_input(g, "a", F32, UNRANKED);
    const_f32(g, "b", D(3));
    legacy(g, "Add", "a,b", 1);
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                    "node 'n' (Add): the legacy broadcast (broadcast=1, axis=1) needs the rank "
                    "of input 0 ('a'), which is unknown (converting ai.onnx opset 6 to 7)",
                    NULL);

    g = oh_new_graph("axis past the end", 6);
    oh_input(g, "a", F32, D(2, 3));
    const_f32(g, "b", D(3, 1));
    legacy(g, "Mul", "a,b", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                    "the legacy broadcast axis 1 does not fit input 1 ('b', rank 2) into input "
                    "0 ('a', rank 2)",
                    NULL);

    g = oh_new_graph("negative axis", 6);
    oh_input(g, "a", F32, D(2, 3));
    const_f32(g, "b", D(3));
    legacy(g, "Sub", "a,b", -1);
    oh_attr_i(g, pl_graph_find_node(g, "n"), "axis", -1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "the legacy broadcast axis -1 does not fit",
                    NULL);

    g = oh_new_graph("mismatched dims", 6);
    oh_input(g, "a", F32, D(2, 3, 4));
    const_f32(g, "b", D(4));
    legacy(g, "Add", "a,b", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "node 'n' (Add)", "cannot be broadcast", NULL);

    g = oh_new_graph("broadcast is a string", 6);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    pl_nid n = oh_node(g, "n", "Add", "a,b", "y");
    oh_attr_s(g, n, "broadcast", "yes");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "attribute 'broadcast' must be an int", NULL);
}

/* ---- attributes that went away ------------------------------------------------ */

static void case_consumed_inputs(void)
{
    pl_graph *g = oh_new_graph("Relu of opset 5", 5);
    oh_input(g, "x", F32, D(2, 3));
    pl_nid n = oh_node(g, "n", "Relu", "x", "y");
    oh_attr_is(g, n, "consumed_inputs", (const int64_t[]){1}, 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3));
        expect_no_attr(g, "n", "consumed_inputs");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Sum of opset 1", 1);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "z", F32, D(2, 3));
    n = oh_node(g, "n", "Sum", "x,z", "y");
    oh_attr_is(g, n, "consumed_inputs", (const int64_t[]){0, 0}, 2);
    oh_expect(g, "y", F32, D(2, 3));

    /* Opset 6 no longer has it: the node is wrong, and the error says the
     * opset it came from. */
    g = oh_new_graph("Relu of opset 6", 6);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", "Relu", "x", "y");
    oh_attr_is(g, n, "consumed_inputs", (const int64_t[]){1}, 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                    "unknown attribute 'consumed_inputs' (opset 7, converted from opset 6)",
                    NULL);
}

static void case_is_test(void)
{
    pl_graph *g = oh_new_graph("BatchNormalization of opset 5", 5);
    oh_input(g, "x", F32, D(2, 3, 4, 4));
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "p%d", i);
        const_f32(g, name, D(3));
    }
    pl_nid n = oh_node(g, "n", "BatchNormalization", "x,p0,p1,p2,p3", "y");
    oh_attr_i(g, n, "is_test", 1);
    oh_attr_is(g, n, "consumed_inputs", (const int64_t[]){0, 0, 0, 1, 1}, 5);
    oh_attr_f(g, n, "epsilon", 1e-3);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 4));
        expect_no_attr(g, "n", "is_test");
        expect_no_attr(g, "n", "consumed_inputs");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Dropout of opset 6", 6);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", "Dropout", "x", "y");
    oh_attr_i(g, n, "is_test", 1);
    oh_attr_f(g, n, "ratio", 0.25);
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("Gemm of opset 6", 6);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3, 4));
    oh_input(g, "c", F32, D(4));
    n = oh_node(g, "n", "Gemm", "a,b,c", "y");
    oh_attr_i(g, n, "broadcast", 1);
    oh_expect(g, "y", F32, D(2, 4));
}

/* ---- attributes that changed form ----------------------------------------------- */

static void case_concat_axis(void)
{
    pl_graph *g = oh_new_graph("Concat of opset 3 without axis", 3);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2, 4));
    oh_node(g, "n", "Concat", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 7));

    g = oh_new_graph("Concat of opset 3 with axis 0", 3);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(4, 3));
    oh_attr_i(g, oh_node(g, "n", "Concat", "a,b", "y"), "axis", 0);
    oh_expect(g, "y", F32, D(6, 3));
}

static void case_reshape_attribute(void)
{
    pl_graph *g = oh_new_graph("Reshape of opset 4", 4);
    oh_input(g, "x", F32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", "Reshape", "x", "y");
    oh_attr_is(g, n, "shape", (const int64_t[]){0, -1}, 2);
    oh_attr_is(g, n, "consumed_inputs", (const int64_t[]){0}, 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 12));
        const pl_graph_tensor *s = input_of(g, "n", 1);
        if (s == NULL || s->data == NULL || !PL_DTYPE_EQ(s->dtype, I64) ||
            s->nbytes != 2 * sizeof(int64_t) || ((const int64_t *)s->data)[1] != -1)
            FAIL("the shape input is not the int64 constant [0,-1]");
        expect_no_attr(g, "n", "shape");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Reshape of opset 4 without shape", 4);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_node(g, "n", "Reshape", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                    "node 'n' (Reshape): no attribute 'shape'; before opset 5 the new shape is "
                    "the ints attribute 'shape' (converting ai.onnx opset 4 to 7)",
                    NULL);
}

static void case_pad_paddings(void)
{
    pl_graph *g = oh_new_graph("Pad of opset 1", 1);
    oh_input(g, "x", F32, D(2, 3));
    pl_nid n = oh_node(g, "n", "Pad", "x", "y");
    oh_attr_is(g, n, "paddings", (const int64_t[]){0, 1, 2, 3}, 4);
    oh_attr_s(g, n, "mode", "edge");
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(4, 7));
        expect_attr_ints(g, "n", "pads", (const int64_t[]){0, 1, 2, 3}, 4);
        expect_no_attr(g, "n", "paddings");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Pad of opset 1 without paddings", 1);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Pad", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "'paddings', which is missing", NULL);

    /* Pad-2 has 'pads' already. */
    g = oh_new_graph("Pad of opset 2", 2);
    oh_input(g, "x", F32, D(2, 3));
    oh_attr_is(g, oh_node(g, "n", "Pad", "x", "y"), "pads", (const int64_t[]){1, 0, 1, 0}, 4);
    oh_expect(g, "y", F32, D(4, 3));
}

static void case_split_input(void)
{
    pl_graph *g = oh_new_graph("Split of opset 1, lengths as input", 1);
    oh_input(g, "x", F32, D(2, 6));
    oh_const_f32(g, "s", (const float[]){1, 5}, 2);
    oh_attr_i(g, oh_node(g, "n", "Split", "x,s", "y0,y1"), "axis", 1);
    if (run_ok(g)) {
        oh_check_tensor(g, "y0", F32, D(2, 1));
        oh_check_tensor(g, "y1", F32, D(2, 5));
        expect_attr_ints(g, "n", "split", (const int64_t[]){1, 5}, 2);
        if (node_of(g, "n")->n_inputs != 1)
            FAIL("the lengths input is still there");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Split of opset 1 without axis", 1);
    oh_input(g, "x", F32, D(2, 6));
    oh_node(g, "n", "Split", "x", "y0,y1");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                    "no attribute 'axis'; opset 1 leaves Split's default axis unspecified", NULL);

    g = oh_new_graph("Split of opset 1, computed lengths", 1);
    oh_input(g, "x", F32, D(2, 6));
    oh_input(g, "s", F32, D(2));
    oh_attr_i(g, oh_node(g, "n", "Split", "x,s", "y0,y1"), "axis", 1);
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "input 1 ('s'), the lengths, must be a constant",
                    NULL);

    g = oh_new_graph("Split of opset 1, fractional lengths", 1);
    oh_input(g, "x", F32, D(2, 6));
    oh_const_f32(g, "s", (const float[]){1.5f, 4.5f}, 2);
    oh_attr_i(g, oh_node(g, "n", "Split", "x,s", "y0,y1"), "axis", 1);
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "must be a constant of at most 64 integers", NULL);
}

static void case_tile_inputs(void)
{
    pl_graph *g = oh_new_graph("Tile of opset 5", 5);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64_scalar(g, "tiles", 3);
    oh_const_i64_scalar(g, "axis", -2);
    oh_node(g, "n", "Tile", "x,tiles,axis", "y");
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 9, 4));
        const pl_graph_tensor *r = input_of(g, "n", 1);
        if (r == NULL || r->data == NULL || r->nbytes != 3 * sizeof(int64_t) ||
            memcmp(r->data, (const int64_t[]){1, 3, 1}, r->nbytes) != 0)
            FAIL("repeats is not the constant [1,3,1]");
    }
    pl_graph_destroy(g);

    g = oh_new_graph("Tile of opset 5, computed tiles", 5);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "tiles", I64, SCALAR);
    oh_const_i64_scalar(g, "axis", 0);
    oh_node(g, "n", "Tile", "x,tiles,axis", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "tiles and axis, must be constants", NULL);

    g = oh_new_graph("Tile of opset 5, axis out of range", 5);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64_scalar(g, "tiles", 2);
    oh_const_i64_scalar(g, "axis", 2);
    oh_node(g, "n", "Tile", "x,tiles,axis", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 and tiles 2 do not fit input 0 of rank 2",
                    NULL);
}

static void case_cast_string(void)
{
    pl_graph *g = oh_new_graph("Cast of opset 5", 5);
    oh_input(g, "x", F32, D(2, 3));
    oh_attr_s(g, oh_node(g, "n", "Cast", "x", "y"), "to", "DOUBLE");
    oh_expect(g, "y", PL_DTYPE_F64, D(2, 3));

    g = oh_new_graph("Cast of opset 5 to a bad name", 5);
    oh_input(g, "x", F32, D(2, 3));
    oh_attr_s(g, oh_node(g, "n", "Cast", "x", "y"), "to", "REAL");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                    "attribute 'to' is 'REAL', not a TensorProto type name", NULL);
}

static void case_selu_defaults(void)
{
    pl_graph *g = oh_new_graph("Selu of opset 5", 5);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Selu", "x", "y");
    if (run_ok(g)) {
        const pl_attr *a = pl_graph_node_attr(node_of(g, "n"), "alpha");
        const pl_attr *c = pl_graph_node_attr(node_of(g, "n"), "gamma");
        if (a == NULL || a->f != (double)1.6732f || c == NULL || c->f != (double)1.0507f)
            FAIL("Selu-1's defaults 1.6732 and 1.0507 are not written out");
    }
    pl_graph_destroy(g);

    /* Opset 6 has the new defaults: nothing to write. */
    g = oh_new_graph("Selu of opset 6", 6);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Selu", "x", "y");
    if (run_ok(g))
        expect_no_attr(g, "n", "alpha");
    pl_graph_destroy(g);
}

static void case_prelu_channel(void)
{
    pl_graph *g = oh_new_graph("PRelu of opset 6, slope [C]", 6);
    oh_input(g, "x", F32, D(2, 3, 4, 5));
    const_f32(g, "s", D(3));
    oh_node(g, "n", "PRelu", "x,s", "y");
    if (run_ok(g)) {
        oh_check_tensor(g, "y", F32, D(2, 3, 4, 5));
        expect_tensor(input_of(g, "n", 1), D(3, 1, 1), (const float[]){0, 1, 2});
    }
    pl_graph_destroy(g);

    /* One slope for all, or rank 2 input: nothing to do. */
    g = oh_new_graph("PRelu of opset 6, slope [1]", 6);
    oh_input(g, "x", F32, D(2, 3, 4));
    const_f32(g, "s", D(1));
    oh_node(g, "n", "PRelu", "x,s", "y");
    if (run_ok(g) && strcmp(input_of(g, "n", 1)->name, "s") != 0)
        FAIL("a shared slope was replaced");
    pl_graph_destroy(g);

    g = oh_new_graph("PRelu of opset 6, X of unknown rank", 6);
    oh_input(g, "x", F32, UNRANKED);
    const_f32(g, "s", D(3));
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                    "a per-channel slope ('s') needs the rank of input 0 ('x')", NULL);
}

static void case_variadic_same_shape(void)
{
    /* Max-6 serves opsets 6 and 7 (the schemas began at 8 before). */
    pl_graph *g = oh_new_graph("Max of opset 7", 7);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2, -1));
    oh_node(g, "n", "Max", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("Mean of opset 6, shapes differ", 6);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", "Mean", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                    "inputs 0 [2,3] and 1 [3] differ in shape; before opset 8 the inputs do not "
                    "broadcast",
                    NULL);

    g = oh_new_graph("Min of opset 8 broadcasts", 8);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", "Min", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 3));
}

/* ---- what is left alone ------------------------------------------------------ */

static void case_other_domains(void)
{
    /* A custom op's 'axis' is its own business; the opset stays 7+ nodes. */
    pl_graph *g = oh_new_graph("custom domain", 6);
    OK(pl_graph_set_opset(g, "com.acme", 1));
    oh_input(g, "x", F32, D(2));
    oh_node_in(g, "c", "Add", "com.acme", "x,x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                    "node 'c' (Add, domain 'com.acme'): no schema for this op (opset 1)", NULL);

    /* A graph of opset 7 is not touched: its Add has no 'broadcast'. */
    g = oh_new_graph("opset 7", 7);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    legacy(g, "Add", "a,b", -1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'broadcast' (opset 7)",
                    NULL);
}

static const char *ou_stage_dir;

static void case_json_format(void)
{
    /* Plinth's JSON format carries opset_import too: the same conversion. */
    oh_cur_case = "JSON graph of opset 6";
    static const char text[] =
        "{\"format\":\"plinth-graph\",\"version\":1,"
        "\"opset_import\":[{\"domain\":\"\",\"version\":6}],"
        "\"inputs\":[\"a\",\"b\"],\"outputs\":[\"y\"],"
        "\"tensors\":[{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[2,3,4]},"
        "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[3]}],"
        "\"nodes\":[{\"name\":\"n\",\"op\":\"Add\",\"inputs\":[\"a\",\"b\"],"
        "\"outputs\":[\"y\"],\"attributes\":{\"broadcast\":{\"int\":1},\"axis\":{\"int\":1}}}]}";
    /* Read as a model load reads it: through the json format module of a
     * runtime, which the staged module is loaded into. */
    if (ou_stage_dir == NULL) {
        FAIL("no stage folder given (the json module is read from there)");
        return;
    }
    char dir[] = "/tmp/plinth_ou_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        FAIL("mkdtemp failed");
        return;
    }
    char ini[300], model[300];
    snprintf(ini, sizeof ini, "%s/backend.ini", dir);
    snprintf(model, sizeof model, "%s/model.json", dir);
    FILE *f = fopen(ini, "w");
    if (f != NULL) {
        fprintf(f, "[runtime]\nmodules = %s/libplinth_json.so\nthreads = 1\n", ou_stage_dir);
        fclose(f);
    }
    f = fopen(model, "w");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
    pl_runtime_options o = {.struct_size = sizeof o, .config_path = ini,
                            .ignore_environment = true};
    pl_runtime *rt = NULL;
    pl_graph *g = NULL;
    pl_status *st = pl_runtime_create(&o, &rt);
    if (st == NULL)
        st = pl_model_read_graph(rt, model, &g);
    pl_runtime_destroy(rt);
    unlink(ini);
    unlink(model);
    rmdir(dir);
    if (st != NULL) {
        FAIL("the JSON graph did not load: %s", pl_status_message(st));
        pl_status_free(st);
        return;
    }
    st = pl_opset_infer(oh_opset, g);
    if (st != NULL) {
        FAIL("inference failed: %s", pl_status_message(st));
        pl_status_free(st);
    } else {
        oh_check_tensor(g, "y", F32, D(2, 3, 4));
        expect_tensor(input_of(g, "n", 1), D(3, 1), NULL);
        expect_opset(g, 7);
    }
    pl_graph_destroy(g);
}

/* Every allocation of a conversion fails in turn: out of memory, never a
 * crash or a leak (the ASan build checks that). */
static void case_alloc_sweep(void)
{
    long n;
    for (n = 1; n < 100000; n++) {
        /* Built on the failing allocator, disarmed: inference
         * changes the graph, and those allocations are swept too. */
        pl_sweep_fail_at(-1);
        pl_graph *g = oh_new_graph("alloc sweep", 4);
        oh_input(g, "x", F32, D(2, 3, 4, 5));
        oh_input(g, "b", F32, D(3));
        const_f32(g, "c", D(3, 4));
        pl_nid r = oh_node(g, "r", "Reshape", "x", "a");
        oh_attr_is(g, r, "shape", (const int64_t[]){2, 3, 4, 5}, 4);
        legacy(g, "Add", "a,b", 1);
        pl_nid m = oh_node(g, "m", "Mul", "y,c", "z");
        oh_attr_i(g, m, "broadcast", 1);
        oh_attr_i(g, m, "axis", 1);
        OK(pl_graph_validate(g));
        pl_sweep_fail_at(n);
        pl_status *st = pl_opset_infer(oh_opset, g);
        pl_sweep_fail_at(0);
        bool done = st == NULL;
        if (done)
            oh_check_tensor(g, "z", F32, D(2, 3, 4, 5));
        else if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
            FAIL("allocation %ld failed with %s: %s", n, pl_code_name(pl_status_code(st)),
                 pl_status_message(st));
            done = true;
        }
        pl_status_free(st);
        pl_graph_destroy(g);
        if (done)
            break;
    }
    if (n < 5)
        FAIL("the conversion made only %ld allocations; the sweep tested nothing", n);
    printf("alloc sweep: %ld allocation points\n", n - 1);
}

static const oh_case cases[] = {
    {"broadcast_axis_constant", case_broadcast_axis_constant},
    {"broadcast_axis_input", case_broadcast_axis_input},
    {"broadcast_axis_intermediate", case_broadcast_axis_intermediate},
    {"broadcast_plain", case_broadcast_plain},
    {"broadcast_refused", case_broadcast_refused},
    {"consumed_inputs", case_consumed_inputs},
    {"is_test", case_is_test},
    {"concat_axis", case_concat_axis},
    {"reshape_attribute", case_reshape_attribute},
    {"pad_paddings", case_pad_paddings},
    {"split_input", case_split_input},
    {"tile_inputs", case_tile_inputs},
    {"cast_string", case_cast_string},
    {"selu_defaults", case_selu_defaults},
    {"prelu_channel", case_prelu_channel},
    {"variadic_same_shape", case_variadic_same_shape},
    {"other_domains", case_other_domains},
    {"json_format", case_json_format},
    {"alloc_sweep", case_alloc_sweep},
};

int main(int argc, char **argv)
{
    /* test_opset_upgrade CASE [STAGE_DIR]: the stage folder holds the json
     * module that case json_format reads its graph with. */
    ou_stage_dir = argc > 2 ? argv[2] : NULL;
    return oh_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
