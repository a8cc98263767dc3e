/* test_opset.c — shape and dtype inference of the core's opset, op by op.
 * Each case builds a small graph with graph.h, runs pl_opset_infer and
 * checks the output type, or the error and its message. Usage:
 * test_opset OP, where OP names an op (every case of that op runs; a
 * failure names the op and the case), or one of: bert_chain, registry,
 * declared_types, alloc_sweep, unknown_op, all. Linked against the core's
 * object library. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "graph.h"
#include "opset.h"
#include "status.h"

static const char *cur_op = "";
static const char *cur_case = "";
static int failures;
static pl_opset *opset;

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "FAIL op %s case '%s' (line %d): ", cur_op, cur_case,  \
                __LINE__);                                                     \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        failures++;                                                            \
    } while (0)

/* Aborts the program on a failure of the test's own scaffolding. */
static void ok(pl_status *st, int line)
{
    if (st != NULL) {
        fprintf(stderr, "op %s case '%s': setup failed at line %d: %s\n",
                cur_op, cur_case, line, pl_status_message(st));
        exit(1);
    }
}
#define OK(expr) ok((expr), __LINE__)

#define F32 PL_DTYPE_F32
#define I64 PL_DTYPE_I64
#define I32 PL_DTYPE_I32
#define BOOL PL_DTYPE_BOOL
#define F16 PL_DTYPE_F16
#define D(...) (const int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define SCALAR NULL, 0
#define UNRANKED NULL, -1

/* ---- graph building ------------------------------------------------------ */

static pl_graph *new_graph(const char *name, int64_t opset_version)
{
    cur_case = name;
    pl_graph *g = NULL;
    OK(pl_graph_create(&g));
    if (opset_version > 0)
        OK(pl_graph_set_opset(g, "", opset_version));
    return g;
}

/* A graph input of DTYPE and shape. */
static void input(pl_graph *g, const char *name, pl_dtype dt,
                  const int64_t *dims, int ndim)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, dt, ndim, dims, NULL));
    OK(pl_graph_add_input(g, t));
}

/* A graph input whose dims have symbolic names (NULL for a fixed dim). */
static void input_sym(pl_graph *g, const char *name, pl_dtype dt,
                      const int64_t *dims, int ndim, const char *const *params)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, dt, ndim, dims, params));
    OK(pl_graph_add_input(g, t));
}

/* An i64 vector initializer. */
static void const_i64(pl_graph *g, const char *name, const int64_t *v, int n)
{
    pl_tid t;
    int64_t dims[1] = {n};
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, I64, 1, dims, NULL));
    OK(pl_graph_set_constant(g, t, v, (size_t)n * sizeof *v));
}

static void const_i64_scalar(pl_graph *g, const char *name, int64_t v)
{
    pl_tid t;
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, I64, 0, NULL, NULL));
    OK(pl_graph_set_constant(g, t, &v, sizeof v));
}

static void const_f32(pl_graph *g, const char *name, const float *v, int n)
{
    pl_tid t;
    int64_t dims[1] = {n};
    OK(pl_graph_tensor_get_or_add(g, name, &t));
    OK(pl_graph_set_type(g, t, F32, 1, dims, NULL));
    OK(pl_graph_set_constant(g, t, v, (size_t)n * sizeof *v));
}

/* Splits a comma-separated list ("a,,b": the middle one absent). */
static size_t split_names(const char *list, char buf[][32], const char **out)
{
    size_t n = 0;
    if (list == NULL || list[0] == '\0')
        return 0;
    const char *p = list;
    for (;;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        snprintf(buf[n], 32, "%.*s", (int)len, p);
        out[n] = buf[n];
        n++;
        if (c == NULL)
            break;
        p = c + 1;
    }
    return n;
}

static pl_nid node_in(pl_graph *g, const char *name, const char *op,
                      const char *domain, const char *inputs,
                      const char *outputs)
{
    char ib[16][32], ob[16][32];
    const char *in[16], *out[16];
    size_t ni = split_names(inputs, ib, in), no = split_names(outputs, ob, out);
    pl_nid n;
    OK(pl_graph_add_node(g, name, op, domain, in, ni, out, no, &n));
    for (size_t i = 0; i < no; i++) {
        pl_tid t = pl_graph_find_tensor(g, out[i]);
        OK(pl_graph_add_output(g, t));
    }
    return n;
}

static pl_nid node(pl_graph *g, const char *name, const char *op,
                   const char *inputs, const char *outputs)
{
    return node_in(g, name, op, "", inputs, outputs);
}

static void attr_i(pl_graph *g, pl_nid n, const char *name, int64_t v)
{
    OK(pl_graph_attr_int(g, n, name, v));
}
static void attr_f(pl_graph *g, pl_nid n, const char *name, double v)
{
    OK(pl_graph_attr_float(g, n, name, v));
}
static void attr_s(pl_graph *g, pl_nid n, const char *name, const char *v)
{
    OK(pl_graph_attr_string(g, n, name, v, strlen(v)));
}
static void attr_is(pl_graph *g, pl_nid n, const char *name, const int64_t *v,
                    int count)
{
    OK(pl_graph_attr_ints(g, n, name, v, (size_t)count));
}

/* ---- checking --------------------------------------------------------------- */

static pl_status *run(pl_graph *g)
{
    pl_status *st = pl_graph_validate(g);
    if (st != NULL) {
        fprintf(stderr, "op %s case '%s': validate failed: %s\n", cur_op,
                cur_case, pl_status_message(st));
        exit(1);
    }
    return pl_opset_infer(opset, g);
}

static void check_tensor(pl_graph *g, const char *name, pl_dtype dt,
                         const int64_t *dims, int ndim)
{
    const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_find_tensor(g, name));
    char a[160], b[160];
    if (t == NULL) {
        FAIL("no tensor '%s'", name);
        return;
    }
    if (!PL_DTYPE_EQ(t->dtype, dt))
        FAIL("'%s' dtype %s, expected %s", name, pl_dtype_name(t->dtype),
             pl_dtype_name(dt));
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = t->dims[d] == dims[d];
    if (!same)
        FAIL("'%s' shape %s, expected %s", name,
             pl_dims_format(t->dims, t->ndim, a, sizeof a),
             pl_dims_format(dims, ndim, b, sizeof b));
}

/* Runs inference, expects success and output NAME of DT and DIMS. */
static void expect(pl_graph *g, const char *name, pl_dtype dt,
                   const int64_t *dims, int ndim)
{
    pl_status *st = run(g);
    if (st != NULL)
        FAIL("inference failed: %s", pl_status_message(st));
    else
        check_tensor(g, name, dt, dims, ndim);
    pl_status_free(st);
    pl_graph_destroy(g);
}

/* Runs inference and expects CODE with a message containing each of the
 * NULL-terminated fragments. */
static void expect_error(pl_graph *g, pl_code code, ...)
{
    pl_status *st = run(g);
    if (st == NULL) {
        FAIL("inference succeeded, an error was expected");
    } else {
        if (pl_status_code(st) != code)
            FAIL("code %s, expected %s (%s)", pl_code_name(pl_status_code(st)),
                 pl_code_name(code), pl_status_message(st));
        va_list ap;
        va_start(ap, code);
        for (const char *frag; (frag = va_arg(ap, const char *)) != NULL;)
            if (strstr(pl_status_message(st), frag) == NULL)
                FAIL("message '%s' lacks '%s'", pl_status_message(st), frag);
        va_end(ap);
    }
    pl_status_free(st);
    pl_graph_destroy(g);
}

/* ---- elementwise -------------------------------------------------------------- */

static void binary_cases(const char *op)
{
    pl_graph *g = new_graph("broadcast", 13);
    input(g, "a", F32, D(2, 1, 4));
    input(g, "b", F32, D(3, 1));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", F32, D(2, 3, 4));

    g = new_graph("scalar", 13);
    input(g, "a", F32, D(5));
    input(g, "b", F32, SCALAR);
    node(g, "n", op, "a,b", "y");
    expect(g, "y", F32, D(5));

    g = new_graph("unknown dim", 13);
    input(g, "a", F32, D(-1, 3));
    input(g, "b", F32, D(4, 3));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", F32, D(4, 3));

    g = new_graph("mismatch", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(4));
    node(g, "add1", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "node 'add1' (", op,
                 "): shapes [2,3] and [4] cannot be broadcast", NULL);

    g = new_graph("dtype mismatch", 13);
    input(g, "a", F32, D(2));
    input(g, "b", I64, D(2));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('b') is i64", "type T",
                 NULL);

    g = new_graph("arity", 13);
    input(g, "a", F32, D(2));
    node(g, "n", op, "a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 2 inputs, got 1", NULL);

    g = new_graph("bool refused", 13);
    input(g, "a", BOOL, D(2));
    input(g, "b", BOOL, D(2));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "has dtype bool", NULL);
}

static void case_pow(void)
{
    pl_graph *g = new_graph("mixed types", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", I64, SCALAR);
    node(g, "n", "Pow", "a,b", "y");
    expect(g, "y", F32, D(2, 3));

    g = new_graph("broadcast", 13);
    input(g, "a", F32, D(4, 1));
    input(g, "b", F32, D(5));
    node(g, "n", "Pow", "a,b", "y");
    expect(g, "y", F32, D(4, 5));

    g = new_graph("bad base dtype", 13);
    input(g, "a", BOOL, D(4));
    input(g, "b", F32, D(4));
    node(g, "n", "Pow", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype bool", NULL);
}

static void compare_cases(const char *op)
{
    pl_graph *g = new_graph("bool output", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(3));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", BOOL, D(2, 3));

    g = new_graph("int inputs", 13);
    input(g, "a", I64, D(1, 4));
    input(g, "b", I64, D(3, 1));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", BOOL, D(3, 4));

    g = new_graph("mismatch", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(2));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "cannot be broadcast", NULL);
}

static void case_where(void)
{
    pl_graph *g = new_graph("three-way broadcast", 13);
    input(g, "c", BOOL, D(2, 1, 1));
    input(g, "x", F32, D(3, 1));
    input(g, "y", F32, D(4));
    node(g, "n", "Where", "c,x,y", "z");
    expect(g, "z", F32, D(2, 3, 4));

    g = new_graph("condition not bool", 13);
    input(g, "c", F32, D(2));
    input(g, "x", F32, D(2));
    input(g, "y", F32, D(2));
    node(g, "n", "Where", "c,x,y", "z");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('c') has dtype f32", NULL);

    g = new_graph("mismatch", 13);
    input(g, "c", BOOL, D(2));
    input(g, "x", F32, D(3));
    input(g, "y", F32, D(2));
    node(g, "n", "Where", "c,x,y", "z");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2] and [3] cannot be broadcast",
                 NULL);

    g = new_graph("opset 8 has no Where", 8);
    input(g, "c", BOOL, D(2));
    input(g, "x", F32, D(2));
    input(g, "y", F32, D(2));
    node(g, "n", "Where", "c,x,y", "z");
    expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 8)", NULL);
}

static void unary_cases(const char *op, bool int_ok)
{
    pl_graph *g = new_graph("same shape", 13);
    input(g, "x", F32, D(2, 3, 4));
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, D(2, 3, 4));

    const char *params[] = {"batch", NULL};
    g = new_graph("symbolic dim kept", 13);
    input_sym(g, "x", F16, D(-1, 7), params);
    node(g, "n", op, "x", "y");
    OK(run(g));
    const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_find_tensor(g, "y"));
    if (t->ndim != 2 || t->dims[0] != -1 || t->dims[1] != 7 || !t->dim_params ||
        !t->dim_params[0] || strcmp(t->dim_params[0], "batch") != 0)
        FAIL("symbolic dim 'batch' was not kept");
    pl_graph_destroy(g);

    g = new_graph("unknown rank", 13);
    input(g, "x", F32, UNRANKED);
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, UNRANKED);

    g = new_graph("int dtype", 13);
    input(g, "x", I64, D(3));
    node(g, "n", op, "x", "y");
    if (int_ok)
        expect(g, "y", I64, D(3));
    else
        expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i64",
                     NULL);

    g = new_graph("two outputs", 13);
    input(g, "x", F32, D(3));
    node(g, "n", op, "x", "y,z");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 1 output, got 2", NULL);
}

static void case_leakyrelu(void)
{
    unary_cases("LeakyRelu", false);
    pl_graph *g = new_graph("alpha attribute", 13);
    input(g, "x", F32, D(4));
    pl_nid n = node(g, "n", "LeakyRelu", "x", "y");
    attr_f(g, n, "alpha", 0.2);
    expect(g, "y", F32, D(4));

    g = new_graph("alpha of wrong kind", 13);
    input(g, "x", F32, D(4));
    n = node(g, "n", "LeakyRelu", "x", "y");
    attr_i(g, n, "alpha", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "attribute 'alpha' is int, expected float",
                 NULL);
}

static void case_clip(void)
{
    pl_graph *g = new_graph("opset 13 inputs", 13);
    input(g, "x", F32, D(2, 3));
    input(g, "lo", F32, SCALAR);
    input(g, "hi", F32, SCALAR);
    node(g, "n", "Clip", "x,lo,hi", "y");
    expect(g, "y", F32, D(2, 3));

    g = new_graph("only max", 13);
    input(g, "x", F32, D(2, 3));
    input(g, "hi", F32, SCALAR);
    node(g, "n", "Clip", "x,,hi", "y");
    expect(g, "y", F32, D(2, 3));

    g = new_graph("opset 6 attributes", 7);
    input(g, "x", F32, D(5));
    pl_nid n = node(g, "n", "Clip", "x", "y");
    attr_f(g, n, "min", 0.0);
    attr_f(g, n, "max", 6.0);
    expect(g, "y", F32, D(5));

    g = new_graph("attribute at opset 13", 13);
    input(g, "x", F32, D(5));
    n = node(g, "n", "Clip", "x", "y");
    attr_f(g, n, "min", 0.0);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'min' (opset 13)",
                 NULL);

    g = new_graph("min not scalar", 13);
    input(g, "x", F32, D(5));
    input(g, "lo", F32, D(2));
    node(g, "n", "Clip", "x,lo", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "min ('lo') must be a scalar", NULL);
}

static void softmax_cases(const char *op)
{
    pl_graph *g = new_graph("default axis", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, D(2, 3));

    g = new_graph("negative axis", 13);
    input(g, "x", F32, D(2, 3, 4));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_i(g, n, "axis", -3);
    expect(g, "y", F32, D(2, 3, 4));

    g = new_graph("axis out of range", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_i(g, n, "axis", 2);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2",
                 NULL);

    g = new_graph("opset 11 default axis 1", 11);
    input(g, "x", F32, D(2, 3));
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, D(2, 3));
}

static void case_identity(void)
{
    unary_cases("Identity", true);
    pl_graph *g = new_graph("bool", 13);
    input(g, "x", BOOL, D(3, 1));
    node(g, "n", "Identity", "x", "y");
    expect(g, "y", BOOL, D(3, 1));
}

static void case_cast(void)
{
    pl_graph *g = new_graph("to int64", 13);
    input(g, "x", F32, D(2, 3));
    pl_nid n = node(g, "n", "Cast", "x", "y");
    attr_i(g, n, "to", 7);
    expect(g, "y", I64, D(2, 3));

    g = new_graph("to float16", 13);
    input(g, "x", I32, D(4));
    n = node(g, "n", "Cast", "x", "y");
    attr_i(g, n, "to", 10);
    expect(g, "y", F16, D(4));

    g = new_graph("missing to", 13);
    input(g, "x", F32, D(4));
    node(g, "n", "Cast", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'to'", NULL);

    g = new_graph("to string", 13);
    input(g, "x", F32, D(4));
    n = node(g, "n", "Cast", "x", "y");
    attr_i(g, n, "to", 8);
    expect_error(g, PL_CODE_UNSUPPORTED, "cast to ONNX data type 8", NULL);
}

static void case_dropout(void)
{
    pl_graph *g = new_graph("inference with mask", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", "Dropout", "x", "y,mask");
    OK(run(g));
    check_tensor(g, "y", F32, D(2, 3));
    check_tensor(g, "mask", BOOL, D(2, 3));
    pl_graph_destroy(g);

    g = new_graph("ratio input", 13);
    input(g, "x", F32, D(4));
    input(g, "r", F32, SCALAR);
    node(g, "n", "Dropout", "x,r", "y");
    expect(g, "y", F32, D(4));

    g = new_graph("opset 7 ratio attribute", 7);
    input(g, "x", F32, D(4));
    pl_nid n = node(g, "n", "Dropout", "x", "y");
    attr_f(g, n, "ratio", 0.1);
    expect(g, "y", F32, D(4));

    g = new_graph("bad ratio", 10);
    input(g, "x", F32, D(4));
    n = node(g, "n", "Dropout", "x", "y");
    attr_f(g, n, "ratio", 1.5);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "ratio 1.5 is outside", NULL);
}

/* ---- neural network ------------------------------------------------------------- */

static void case_matmul(void)
{
    pl_graph *g = new_graph("batched broadcast", 13);
    input(g, "a", F32, D(2, 1, 3, 4));
    input(g, "b", F32, D(5, 4, 6));
    node(g, "n", "MatMul", "a,b", "y");
    expect(g, "y", F32, D(2, 5, 3, 6));

    g = new_graph("vector times matrix", 13);
    input(g, "a", F32, D(4));
    input(g, "b", F32, D(4, 6));
    node(g, "n", "MatMul", "a,b", "y");
    expect(g, "y", F32, D(6));

    g = new_graph("matrix times vector", 13);
    input(g, "a", F32, D(3, 4));
    input(g, "b", F32, D(4));
    node(g, "n", "MatMul", "a,b", "y");
    expect(g, "y", F32, D(3));

    g = new_graph("inner mismatch", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(4, 5));
    node(g, "mm", "MatMul", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'mm' (MatMul): inner dimensions differ: [2,3] x [4,5]", NULL);

    g = new_graph("scalar", 13);
    input(g, "a", F32, SCALAR);
    input(g, "b", F32, D(4, 5));
    node(g, "n", "MatMul", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "rank >= 1", NULL);
}

static void case_gemm(void)
{
    pl_graph *g = new_graph("transposes", 13);
    input(g, "a", F32, D(4, 3));
    input(g, "b", F32, D(5, 4));
    input(g, "c", F32, D(5));
    pl_nid n = node(g, "n", "Gemm", "a,b,c", "y");
    attr_i(g, n, "transA", 1);
    attr_i(g, n, "transB", 1);
    expect(g, "y", F32, D(3, 5));

    g = new_graph("no C", 13);
    input(g, "a", F32, D(3, 4));
    input(g, "b", F32, D(4, 5));
    node(g, "n", "Gemm", "a,b", "y");
    expect(g, "y", F32, D(3, 5));

    g = new_graph("no C at opset 7", 7);
    input(g, "a", F32, D(3, 4));
    input(g, "b", F32, D(4, 5));
    node(g, "n", "Gemm", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 3 inputs, got 2", NULL);

    g = new_graph("bad C", 13);
    input(g, "a", F32, D(3, 4));
    input(g, "b", F32, D(4, 5));
    input(g, "c", F32, D(2, 5));
    node(g, "n", "Gemm", "a,b,c", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "C [2,5] cannot be broadcast to [3,5]",
                 NULL);

    g = new_graph("rank 3", 13);
    input(g, "a", F32, D(1, 3, 4));
    input(g, "b", F32, D(4, 5));
    node(g, "n", "Gemm", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "must be matrices", NULL);
}

static pl_graph *conv_graph(const char *name, const int64_t *x, int xr,
                            const int64_t *w, int wr)
{
    pl_graph *g = new_graph(name, 13);
    input(g, "x", F32, x, xr);
    input(g, "w", F32, w, wr);
    return g;
}

static void case_conv(void)
{
    pl_graph *g = conv_graph("pads and strides", D(1, 3, 32, 32), D(8, 3, 3, 3));
    pl_nid n = node(g, "n", "Conv", "x,w", "y");
    attr_is(g, n, "pads", D(1, 1, 1, 1));
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 8, 16, 16));

    g = conv_graph("dilations", D(1, 3, 32, 32), D(8, 3, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_is(g, n, "dilations", D(2, 2));
    expect(g, "y", F32, D(1, 8, 28, 28));

    g = conv_graph("groups", D(2, 8, 10, 10), D(16, 2, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_i(g, n, "group", 4);
    expect(g, "y", F32, D(2, 16, 8, 8));

    g = conv_graph("SAME_UPPER", D(1, 3, 7, 7), D(4, 3, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_s(g, n, "auto_pad", "SAME_UPPER");
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 4, 4, 4));

    g = conv_graph("SAME_LOWER", D(1, 3, 8, 5), D(4, 3, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_s(g, n, "auto_pad", "SAME_LOWER");
    expect(g, "y", F32, D(1, 4, 8, 5));

    g = conv_graph("VALID", D(1, 3, 7, 9), D(4, 3, 3, 2));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_s(g, n, "auto_pad", "VALID");
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 4, 3, 4));

    g = conv_graph("1-D with bias", D(2, 4, 20), D(6, 4, 5));
    input(g, "b", F32, D(6));
    node(g, "n", "Conv", "x,w,b", "y");
    expect(g, "y", F32, D(2, 6, 16));

    g = conv_graph("channel mismatch", D(1, 3, 8, 8), D(8, 4, 3, 3));
    node(g, "conv1", "Conv", "x,w", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "node 'conv1' (Conv): X [1,3,8,8] has 3 "
                 "channels but W [8,4,3,3] with group 1 expects 4", NULL);

    g = conv_graph("rank mismatch", D(1, 3, 8, 8), D(8, 3, 3));
    node(g, "n", "Conv", "x,w", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "must have the same rank", NULL);

    g = conv_graph("bad auto_pad", D(1, 3, 8, 8), D(8, 3, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_s(g, n, "auto_pad", "SAME");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "auto_pad 'SAME' is not", NULL);

    g = conv_graph("pads of wrong length", D(1, 3, 8, 8), D(8, 3, 3, 3));
    n = node(g, "n", "Conv", "x,w", "y");
    attr_is(g, n, "pads", D(1, 1));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "'pads' has 2 values, expected 4", NULL);

    g = conv_graph("kernel larger than input", D(1, 3, 2, 2), D(8, 3, 3, 3));
    node(g, "n", "Conv", "x,w", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "larger than the padded input", NULL);

    g = conv_graph("bias size", D(1, 3, 8, 8), D(8, 3, 3, 3));
    input(g, "b", F32, D(4));
    node(g, "n", "Conv", "x,w,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "bias [4] must be [8]", NULL);

    g = conv_graph("dynamic batch", D(-1, 3, 8, 8), D(8, 3, 3, 3));
    node(g, "n", "Conv", "x,w", "y");
    expect(g, "y", F32, D(-1, 8, 6, 6));
}

static void case_conv_transpose(void)
{
    pl_graph *g = conv_graph("stride 2", D(1, 8, 4, 4), D(8, 3, 3, 3));
    pl_nid n = node(g, "n", "ConvTranspose", "x,w", "y");
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 3, 9, 9));

    g = conv_graph("pads, output_padding, groups", D(1, 8, 4, 4), D(8, 2, 3, 3));
    n = node(g, "n", "ConvTranspose", "x,w", "y");
    attr_is(g, n, "strides", D(2, 2));
    attr_is(g, n, "pads", D(1, 1, 1, 1));
    attr_is(g, n, "output_padding", D(1, 1));
    attr_i(g, n, "group", 2);
    expect(g, "y", F32, D(1, 4, 8, 8));

    g = conv_graph("SAME_UPPER", D(1, 8, 5, 5), D(8, 3, 3, 3));
    n = node(g, "n", "ConvTranspose", "x,w", "y");
    attr_s(g, n, "auto_pad", "SAME_UPPER");
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 3, 10, 10));

    g = conv_graph("output_shape", D(1, 8, 5, 5), D(8, 3, 3, 3));
    n = node(g, "n", "ConvTranspose", "x,w", "y");
    attr_is(g, n, "strides", D(2, 2));
    attr_is(g, n, "output_shape", D(10, 11));
    expect(g, "y", F32, D(1, 3, 10, 11));

    g = conv_graph("channel mismatch", D(1, 4, 5, 5), D(8, 3, 3, 3));
    node(g, "n", "ConvTranspose", "x,w", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "has 4 channels but W", NULL);
}

static void pool_cases(const char *op)
{
    pl_graph *g = new_graph("kernel and stride", 13);
    input(g, "x", F32, D(1, 3, 32, 32));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(2, 2));
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 3, 16, 16));

    g = new_graph("ceil_mode", 13);
    input(g, "x", F32, D(1, 3, 6, 6));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(3, 3));
    attr_is(g, n, "strides", D(2, 2));
    attr_i(g, n, "ceil_mode", 1);
    expect(g, "y", F32, D(1, 3, 3, 3));

    g = new_graph("floor mode", 13);
    input(g, "x", F32, D(1, 3, 6, 6));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(3, 3));
    attr_is(g, n, "strides", D(2, 2));
    expect(g, "y", F32, D(1, 3, 2, 2));

    g = new_graph("ceil_mode drops a window in the padding", 13);
    input(g, "x", F32, D(1, 1, 5, 5));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(2, 2));
    attr_is(g, n, "strides", D(2, 2));
    attr_is(g, n, "pads", D(1, 1, 1, 1));
    attr_i(g, n, "ceil_mode", 1);
    expect(g, "y", F32, D(1, 1, 3, 3));

    g = new_graph("SAME_LOWER", 13);
    input(g, "x", F32, D(2, 4, 7, 5));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(3, 3));
    attr_is(g, n, "strides", D(2, 2));
    attr_s(g, n, "auto_pad", "SAME_LOWER");
    expect(g, "y", F32, D(2, 4, 4, 3));

    g = new_graph("VALID 3-D", 13);
    input(g, "x", F32, D(1, 2, 9, 9, 9));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(3, 3, 3));
    attr_s(g, n, "auto_pad", "VALID");
    expect(g, "y", F32, D(1, 2, 7, 7, 7));

    g = new_graph("kernel_shape missing", 13);
    input(g, "x", F32, D(1, 3, 8, 8));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'kernel_shape'",
                 NULL);

    g = new_graph("kernel_shape rank", 13);
    input(g, "x", F32, D(1, 3, 8, 8));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(3));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "'kernel_shape' has 1 values, expected 2",
                 NULL);

    g = new_graph("ceil_mode before opset 10", 9);
    input(g, "x", F32, D(1, 3, 8, 8));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "kernel_shape", D(2, 2));
    attr_i(g, n, "ceil_mode", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'ceil_mode' (opset 9)",
                 NULL);
}

static void case_maxpool(void)
{
    pool_cases("MaxPool");
    pl_graph *g = new_graph("dilations and indices", 13);
    input(g, "x", F32, D(1, 3, 10, 10));
    pl_nid n = node(g, "n", "MaxPool", "x", "y,idx");
    attr_is(g, n, "kernel_shape", D(3, 3));
    attr_is(g, n, "dilations", D(2, 2));
    OK(run(g));
    check_tensor(g, "y", F32, D(1, 3, 6, 6));
    check_tensor(g, "idx", I64, D(1, 3, 6, 6));
    pl_graph_destroy(g);
}

static void global_pool_cases(const char *op)
{
    pl_graph *g = new_graph("2-D", 13);
    input(g, "x", F32, D(2, 3, 7, 7));
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, D(2, 3, 1, 1));

    g = new_graph("3-D dynamic", 13);
    input(g, "x", F32, D(-1, 5, 4, -1, 2));
    node(g, "n", op, "x", "y");
    expect(g, "y", F32, D(-1, 5, 1, 1, 1));

    g = new_graph("rank 2", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "must have rank >= 3", NULL);
}

static void case_batchnorm(void)
{
    pl_graph *g = new_graph("inference", 13);
    input(g, "x", F32, D(2, 4, 5, 5));
    input(g, "s", F32, D(4));
    input(g, "b", F32, D(4));
    input(g, "m", F32, D(4));
    input(g, "v", F32, D(4));
    node(g, "n", "BatchNormalization", "x,s,b,m,v", "y");
    expect(g, "y", F32, D(2, 4, 5, 5));

    g = new_graph("opset 9", 9);
    input(g, "x", F32, D(2, 4));
    input(g, "s", F32, D(4));
    input(g, "b", F32, D(4));
    input(g, "m", F32, D(4));
    input(g, "v", F32, D(4));
    pl_nid n = node(g, "n", "BatchNormalization", "x,s,b,m,v", "y");
    attr_f(g, n, "epsilon", 1e-3);
    expect(g, "y", F32, D(2, 4));

    g = new_graph("scale size", 13);
    input(g, "x", F32, D(2, 4, 5, 5));
    input(g, "s", F32, D(3));
    input(g, "b", F32, D(4));
    input(g, "m", F32, D(4));
    input(g, "v", F32, D(4));
    node(g, "bn", "BatchNormalization", "x,s,b,m,v", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'bn' (BatchNormalization): scale ('s') is [3], expected [4]",
                 NULL);

    g = new_graph("missing input", 13);
    input(g, "x", F32, D(2, 4, 5, 5));
    input(g, "s", F32, D(4));
    node(g, "n", "BatchNormalization", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 5 inputs, got 2", NULL);
}

static void case_layernorm(void)
{
    pl_graph *g = new_graph("last axis", 17);
    input(g, "x", F32, D(2, 8, 16));
    input(g, "s", F32, D(16));
    input(g, "b", F32, D(16));
    node(g, "n", "LayerNormalization", "x,s,b", "y,mean,inv");
    OK(run(g));
    check_tensor(g, "y", F32, D(2, 8, 16));
    check_tensor(g, "mean", F32, D(2, 8, 1));
    check_tensor(g, "inv", F32, D(2, 8, 1));
    pl_graph_destroy(g);

    g = new_graph("axis 1", 17);
    input(g, "x", F32, D(2, 8, 16));
    input(g, "s", F32, D(8, 16));
    pl_nid n = node(g, "n", "LayerNormalization", "x,s", "y");
    attr_i(g, n, "axis", -2);
    expect(g, "y", F32, D(2, 8, 16));

    g = new_graph("scale mismatch", 17);
    input(g, "x", F32, D(2, 8, 16));
    input(g, "s", F32, D(8));
    node(g, "n", "LayerNormalization", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "scale ('s') [8] does not match the normalised shape [16]", NULL);

    g = new_graph("axis out of range", 17);
    input(g, "x", F32, D(2, 8));
    input(g, "s", F32, D(8));
    n = node(g, "n", "LayerNormalization", "x,s", "y");
    attr_i(g, n, "axis", 2);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range", NULL);
}

static void case_instancenorm(void)
{
    pl_graph *g = new_graph("2-D", 13);
    input(g, "x", F32, D(2, 3, 5, 5));
    input(g, "s", F32, D(3));
    input(g, "b", F32, D(3));
    node(g, "n", "InstanceNormalization", "x,s,b", "y");
    expect(g, "y", F32, D(2, 3, 5, 5));

    g = new_graph("1-D", 13);
    input(g, "x", F32, D(2, 3, 5));
    input(g, "s", F32, D(3));
    input(g, "b", F32, D(3));
    node(g, "n", "InstanceNormalization", "x,s,b", "y");
    expect(g, "y", F32, D(2, 3, 5));

    g = new_graph("B size", 13);
    input(g, "x", F32, D(2, 3, 5));
    input(g, "s", F32, D(3));
    input(g, "b", F32, D(2));
    node(g, "n", "InstanceNormalization", "x,s,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "B ('b') is [2], expected [3]", NULL);
}

static void reduce_cases(const char *op, bool axes_input_at_13)
{
    pl_graph *g = new_graph("axes attribute, keepdims", 11);
    input(g, "x", F32, D(2, 3, 4));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(1, -1));
    expect(g, "y", F32, D(2, 1, 1));

    g = new_graph("all axes, no keepdims", 11);
    input(g, "x", F32, D(2, 3, 4));
    n = node(g, "n", op, "x", "y");
    attr_i(g, n, "keepdims", 0);
    expect(g, "y", F32, SCALAR);

    g = new_graph("axis out of range", 11);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(2));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = new_graph("opset 13 form", 13);
    input(g, "x", F32, D(2, 3, 4));
    if (axes_input_at_13) {
        const_i64(g, "axes", D(0));
        n = node(g, "n", op, "x,axes", "y");
    } else {
        n = node(g, "n", op, "x", "y");
        attr_is(g, n, "axes", D(0));
    }
    attr_i(g, n, "keepdims", 0);
    expect(g, "y", F32, D(3, 4));

    g = new_graph("opset 18 axes input", 18);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "axes", D(-2));
    n = node(g, "n", op, "x,axes", "y");
    attr_i(g, n, "keepdims", 0);
    expect(g, "y", F32, D(2, 4));

    g = new_graph("runtime axes with keepdims", 18);
    input(g, "x", F32, D(2, 1, 4));
    input(g, "axes", I64, D(1));
    node(g, "n", op, "x,axes", "y");
    expect(g, "y", F32, D(-1, 1, -1));
}

/* ---- shape ops ------------------------------------------------------------------- */

static void case_reshape(void)
{
    pl_graph *g = new_graph("-1 and 0", 13);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "s", D(0, -1));
    node(g, "n", "Reshape", "x,s", "y");
    expect(g, "y", F32, D(2, 12));

    g = new_graph("unknown shape values", 13);
    input(g, "x", F32, D(2, 3, 4));
    input(g, "s", I64, D(3));
    node(g, "n", "Reshape", "x,s", "y");
    expect(g, "y", F32, D(-1, -1, -1));

    g = new_graph("element count mismatch", 13);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "s", D(4, 2));
    node(g, "r", "Reshape", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'r' (Reshape): cannot reshape [2,3] (6 elements) into [4,2]",
                 NULL);

    g = new_graph("two -1", 13);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "s", D(-1, -1));
    node(g, "n", "Reshape", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "more than one -1", NULL);

    g = new_graph("allowzero", 14);
    input(g, "x", F32, D(0, 3));
    const_i64(g, "s", D(3, 0));
    pl_nid n = node(g, "n", "Reshape", "x,s", "y");
    attr_i(g, n, "allowzero", 1);
    expect(g, "y", F32, D(3, 0));

    g = new_graph("shape of wrong dtype", 13);
    input(g, "x", F32, D(2, 3));
    input(g, "s", F32, D(2));
    node(g, "n", "Reshape", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('s') has dtype f32", NULL);
}

static void case_flatten(void)
{
    pl_graph *g = new_graph("default axis", 13);
    input(g, "x", F32, D(2, 3, 4, 5));
    node(g, "n", "Flatten", "x", "y");
    expect(g, "y", F32, D(2, 60));

    g = new_graph("negative axis", 13);
    input(g, "x", F32, D(2, 3, 4, 5));
    pl_nid n = node(g, "n", "Flatten", "x", "y");
    attr_i(g, n, "axis", -1);
    expect(g, "y", F32, D(24, 5));

    g = new_graph("axis 0", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", "Flatten", "x", "y");
    attr_i(g, n, "axis", 0);
    expect(g, "y", F32, D(1, 6));

    g = new_graph("axis out of range", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", "Flatten", "x", "y");
    attr_i(g, n, "axis", 3);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 3 is out of range for rank 2", NULL);
}

static void case_transpose(void)
{
    pl_graph *g = new_graph("perm", 13);
    input(g, "x", F32, D(2, 3, 4));
    pl_nid n = node(g, "n", "Transpose", "x", "y");
    attr_is(g, n, "perm", D(1, 2, 0));
    expect(g, "y", F32, D(3, 4, 2));

    g = new_graph("default reverses", 13);
    input(g, "x", F32, D(2, 3, 4));
    node(g, "n", "Transpose", "x", "y");
    expect(g, "y", F32, D(4, 3, 2));

    g = new_graph("not a permutation", 13);
    input(g, "x", F32, D(2, 3, 4));
    n = node(g, "n", "Transpose", "x", "y");
    attr_is(g, n, "perm", D(0, 0, 1));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "perm is not a permutation", NULL);

    g = new_graph("perm length", 13);
    input(g, "x", F32, D(2, 3, 4));
    n = node(g, "n", "Transpose", "x", "y");
    attr_is(g, n, "perm", D(1, 0));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "perm has 2 values but the input has rank 3",
                 NULL);
}

static void case_concat(void)
{
    pl_graph *g = new_graph("axis 1", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(2, 5));
    input(g, "c", F32, D(2, 1));
    pl_nid n = node(g, "n", "Concat", "a,b,c", "y");
    attr_i(g, n, "axis", 1);
    expect(g, "y", F32, D(2, 9));

    g = new_graph("negative axis", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(4, 3));
    n = node(g, "n", "Concat", "a,b", "y");
    attr_i(g, n, "axis", -2);
    expect(g, "y", F32, D(6, 3));

    g = new_graph("other dim mismatch", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(4, 5));
    n = node(g, "n", "Concat", "a,b", "y");
    attr_i(g, n, "axis", 0);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "has dimension 1 = 5, other inputs have 3",
                 NULL);

    g = new_graph("rank mismatch", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(2));
    n = node(g, "n", "Concat", "a,b", "y");
    attr_i(g, n, "axis", 0);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "different ranks: [2,3] and [2]", NULL);

    g = new_graph("axis missing", 13);
    input(g, "a", F32, D(2, 3));
    node(g, "n", "Concat", "a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'axis'", NULL);
}

static void case_split(void)
{
    pl_graph *g = new_graph("equal parts", 13);
    input(g, "x", F32, D(6, 4));
    node(g, "n", "Split", "x", "a,b,c");
    OK(run(g));
    check_tensor(g, "a", F32, D(2, 4));
    check_tensor(g, "c", F32, D(2, 4));
    pl_graph_destroy(g);

    g = new_graph("split input", 13);
    input(g, "x", F32, D(6, 4));
    const_i64(g, "sp", D(1, 3));
    pl_nid n = node(g, "n", "Split", "x,sp", "a,b");
    attr_i(g, n, "axis", -1);
    OK(run(g));
    check_tensor(g, "a", F32, D(6, 1));
    check_tensor(g, "b", F32, D(6, 3));
    pl_graph_destroy(g);

    g = new_graph("split attribute at opset 11", 11);
    input(g, "x", F32, D(5));
    n = node(g, "n", "Split", "x", "a,b");
    attr_is(g, n, "split", D(2, 3));
    OK(run(g));
    check_tensor(g, "a", F32, D(2));
    check_tensor(g, "b", F32, D(3));
    pl_graph_destroy(g);

    g = new_graph("sizes do not add up", 13);
    input(g, "x", F32, D(6));
    const_i64(g, "sp", D(1, 2));
    node(g, "n", "Split", "x,sp", "a,b");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "split sizes add up to 3 but axis 0 has 6",
                 NULL);

    g = new_graph("uneven", 13);
    input(g, "x", F32, D(7));
    node(g, "n", "Split", "x", "a,b");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "does not split evenly", NULL);

    g = new_graph("split attribute at opset 13", 13);
    input(g, "x", F32, D(5));
    n = node(g, "n", "Split", "x", "a,b");
    attr_is(g, n, "split", D(2, 3));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'split' (opset 13)",
                 NULL);
}

static void case_slice(void)
{
    pl_graph *g = new_graph("negative and clamped", 13);
    input(g, "x", F32, D(10, 20));
    const_i64(g, "st", D(1, -5));
    const_i64(g, "en", D(1000, INT64_MAX));
    node(g, "n", "Slice", "x,st,en", "y");
    expect(g, "y", F32, D(9, 5));

    g = new_graph("axes and steps", 13);
    input(g, "x", F32, D(10, 20, 30));
    const_i64(g, "st", D(0, 29));
    const_i64(g, "en", D(20, -31));
    const_i64(g, "ax", D(-2, 2));
    const_i64(g, "sp", D(3, -2));
    node(g, "n", "Slice", "x,st,en,ax,sp", "y");
    expect(g, "y", F32, D(10, 7, 15));

    g = new_graph("opset 9 attributes", 9);
    input(g, "x", F32, D(10, 20));
    pl_nid n = node(g, "n", "Slice", "x", "y");
    attr_is(g, n, "starts", D(2));
    attr_is(g, n, "ends", D(-2));
    attr_is(g, n, "axes", D(1));
    expect(g, "y", F32, D(10, 16));

    g = new_graph("runtime bounds", 13);
    input(g, "x", F32, D(10, 20));
    input(g, "st", I64, D(1));
    input(g, "en", I64, D(1));
    const_i64(g, "ax", D(1));
    node(g, "n", "Slice", "x,st,en,ax", "y");
    expect(g, "y", F32, D(10, -1));

    g = new_graph("zero step", 13);
    input(g, "x", F32, D(10));
    const_i64(g, "st", D(0));
    const_i64(g, "en", D(5));
    const_i64(g, "ax", D(0));
    const_i64(g, "sp", D(0));
    node(g, "n", "Slice", "x,st,en,ax,sp", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "step on axis 0 is 0", NULL);

    g = new_graph("length mismatch", 13);
    input(g, "x", F32, D(10));
    const_i64(g, "st", D(0, 1));
    const_i64(g, "en", D(5));
    node(g, "n", "Slice", "x,st,en", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "different lengths", NULL);
}

static void case_squeeze(void)
{
    pl_graph *g = new_graph("axes input", 13);
    input(g, "x", F32, D(1, 3, 1, 4));
    const_i64(g, "ax", D(0, -2));
    node(g, "n", "Squeeze", "x,ax", "y");
    expect(g, "y", F32, D(3, 4));

    g = new_graph("all ones", 13);
    input(g, "x", F32, D(1, 3, 1, 4));
    node(g, "n", "Squeeze", "x", "y");
    expect(g, "y", F32, D(3, 4));

    g = new_graph("axes attribute at opset 11", 11);
    input(g, "x", F32, D(1, 3, 1));
    pl_nid n = node(g, "n", "Squeeze", "x", "y");
    attr_is(g, n, "axes", D(-1));
    expect(g, "y", F32, D(1, 3));

    g = new_graph("not size 1", 13);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "ax", D(1));
    node(g, "n", "Squeeze", "x,ax", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "cannot squeeze axis 1 of [2,3]", NULL);

    g = new_graph("axes attribute at opset 13", 13);
    input(g, "x", F32, D(1, 3));
    n = node(g, "n", "Squeeze", "x", "y");
    attr_is(g, n, "axes", D(0));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'axes'", NULL);
}

static void case_unsqueeze(void)
{
    pl_graph *g = new_graph("axes input", 13);
    input(g, "x", F32, D(3, 4));
    const_i64(g, "ax", D(0, -1));
    node(g, "n", "Unsqueeze", "x,ax", "y");
    expect(g, "y", F32, D(1, 3, 4, 1));

    g = new_graph("scalar", 13);
    input(g, "x", F32, SCALAR);
    const_i64(g, "ax", D(0));
    node(g, "n", "Unsqueeze", "x,ax", "y");
    expect(g, "y", F32, D(1));

    g = new_graph("axes attribute at opset 12", 12);
    input(g, "x", F32, D(3, 4));
    pl_nid n = node(g, "n", "Unsqueeze", "x", "y");
    attr_is(g, n, "axes", D(1));
    expect(g, "y", F32, D(3, 1, 4));

    g = new_graph("duplicate axes", 13);
    input(g, "x", F32, D(3));
    const_i64(g, "ax", D(0, -3));
    node(g, "n", "Unsqueeze", "x,ax", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -3 is given twice", NULL);

    g = new_graph("axes missing", 13);
    input(g, "x", F32, D(3));
    node(g, "n", "Unsqueeze", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 2 inputs, got 1", NULL);
}

static void case_gather(void)
{
    pl_graph *g = new_graph("embedding", 13);
    input(g, "x", F32, D(100, 16));
    input(g, "i", I64, D(2, 8));
    node(g, "n", "Gather", "x,i", "y");
    expect(g, "y", F32, D(2, 8, 16));

    g = new_graph("scalar index, negative axis", 13);
    input(g, "x", F32, D(3, 4, 5));
    const_i64_scalar(g, "i", 2);
    pl_nid n = node(g, "n", "Gather", "x,i", "y");
    attr_i(g, n, "axis", -2);
    expect(g, "y", F32, D(3, 5));

    g = new_graph("index out of range", 13);
    input(g, "x", F32, D(3, 4));
    const_i64(g, "i", D(0, 4));
    n = node(g, "n", "Gather", "x,i", "y");
    attr_i(g, n, "axis", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "index 4 is out of range for axis 1 of size 4", NULL);

    g = new_graph("float indices", 13);
    input(g, "x", F32, D(3, 4));
    input(g, "i", F32, D(2));
    node(g, "n", "Gather", "x,i", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('i') has dtype f32", NULL);
}

static void case_constant(void)
{
    pl_graph *g = new_graph("tensor value", 13);
    int64_t dims[2] = {2, 3};
    float data[6] = {0};
    pl_nid n = node(g, "n", "Constant", "", "y");
    OK(pl_graph_attr_tensor(g, n, "value", F32, 2, dims, data, sizeof data));
    expect(g, "y", F32, D(2, 3));

    g = new_graph("value_ints", 13);
    n = node(g, "n", "Constant", "", "y");
    attr_is(g, n, "value_ints", D(1, 2, 3, 4));
    expect(g, "y", I64, D(4));

    g = new_graph("value_float", 13);
    n = node(g, "n", "Constant", "", "y");
    attr_f(g, n, "value_float", 1.5);
    expect(g, "y", F32, SCALAR);

    g = new_graph("two values", 13);
    n = node(g, "n", "Constant", "", "y");
    attr_f(g, n, "value_float", 1.5);
    attr_i(g, n, "value_int", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "both given", NULL);

    g = new_graph("no value", 13);
    node(g, "n", "Constant", "", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "no value attribute", NULL);
}

static void case_shape(void)
{
    pl_graph *g = new_graph("rank 3", 13);
    input(g, "x", F32, D(2, -1, 4));
    node(g, "n", "Shape", "x", "y");
    expect(g, "y", I64, D(3));

    g = new_graph("start and end (opset 15)", 15);
    input(g, "x", F32, D(2, 3, 4, 5));
    pl_nid n = node(g, "n", "Shape", "x", "y");
    attr_i(g, n, "start", 1);
    attr_i(g, n, "end", -1);
    expect(g, "y", I64, D(2));

    g = new_graph("unknown rank", 13);
    input(g, "x", F32, UNRANKED);
    node(g, "n", "Shape", "x", "y");
    expect(g, "y", I64, D(-1));

    g = new_graph("start before opset 15", 13);
    input(g, "x", F32, D(2));
    n = node(g, "n", "Shape", "x", "y");
    attr_i(g, n, "start", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'start'", NULL);
}

static void case_expand(void)
{
    pl_graph *g = new_graph("broadcast up", 13);
    input(g, "x", F32, D(3, 1));
    const_i64(g, "s", D(2, 1, 6));
    node(g, "n", "Expand", "x,s", "y");
    expect(g, "y", F32, D(2, 3, 6));

    g = new_graph("shape smaller than input", 13);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "s", D(1, 4));
    node(g, "n", "Expand", "x,s", "y");
    expect(g, "y", F32, D(2, 3, 4));

    g = new_graph("runtime shape", 13);
    input(g, "x", F32, D(3, 1));
    input(g, "s", I64, D(3));
    node(g, "n", "Expand", "x,s", "y");
    expect(g, "y", F32, D(-1, 3, -1));

    g = new_graph("incompatible", 13);
    input(g, "x", F32, D(3, 2));
    const_i64(g, "s", D(3, 4));
    node(g, "n", "Expand", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [3,2] and [3,4] cannot be broadcast",
                 NULL);
}

static void case_pad(void)
{
    pl_graph *g = new_graph("pads input", 13);
    input(g, "x", F32, D(1, 3, 4, 4));
    const_i64(g, "p", D(0, 0, 1, 2, 0, 0, 3, 4));
    node(g, "n", "Pad", "x,p", "y");
    expect(g, "y", F32, D(1, 3, 8, 10));

    g = new_graph("negative pads crop", 13);
    input(g, "x", F32, D(5, 5));
    const_i64(g, "p", D(-1, 0, -1, 2));
    pl_nid n = node(g, "n", "Pad", "x,p", "y");
    attr_s(g, n, "mode", "reflect");
    expect(g, "y", F32, D(3, 7));

    g = new_graph("opset 2 attributes", 7);
    input(g, "x", F32, D(2, 2));
    n = node(g, "n", "Pad", "x", "y");
    attr_is(g, n, "pads", D(1, 1, 1, 1));
    attr_f(g, n, "value", 0.5);
    expect(g, "y", F32, D(4, 4));

    g = new_graph("opset 18 axes", 18);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "p", D(1, 1));
    const_i64(g, "ax", D(-1));
    node(g, "n", "Pad", "x,p,,ax", "y");
    expect(g, "y", F32, D(2, 3, 6));

    g = new_graph("pads length", 13);
    input(g, "x", F32, D(2, 2));
    const_i64(g, "p", D(1, 1));
    node(g, "n", "Pad", "x,p", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "pads has 2 values, expected 4", NULL);

    g = new_graph("bad mode", 13);
    input(g, "x", F32, D(2, 2));
    const_i64(g, "p", D(1, 1, 1, 1));
    n = node(g, "n", "Pad", "x,p", "y");
    attr_s(g, n, "mode", "mirror");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "mode 'mirror'", NULL);
}

static void case_resize(void)
{
    pl_graph *g = new_graph("scales", 13);
    input(g, "x", F32, D(1, 3, 10, 10));
    const_f32(g, "sc", (const float[]){1, 1, 2, 1.5f}, 4);
    node(g, "n", "Resize", "x,,sc", "y");
    expect(g, "y", F32, D(1, 3, 20, 15));

    g = new_graph("sizes", 13);
    input(g, "x", F32, D(1, 3, 10, 10));
    const_i64(g, "sz", D(1, 3, 7, 9));
    pl_nid n = node(g, "n", "Resize", "x,,,sz", "y");
    attr_s(g, n, "mode", "linear");
    expect(g, "y", F32, D(1, 3, 7, 9));

    g = new_graph("opset 11 empty scales", 11);
    input(g, "x", F32, D(1, 3, 10, 10));
    const_f32(g, "roi", (const float[]){0}, 0);
    const_f32(g, "sc", (const float[]){0}, 0);
    const_i64(g, "sz", D(1, 3, 5, 5));
    node(g, "n", "Resize", "x,roi,sc,sz", "y");
    expect(g, "y", F32, D(1, 3, 5, 5));

    g = new_graph("opset 10", 10);
    input(g, "x", F32, D(1, 1, 4, 4));
    const_f32(g, "sc", (const float[]){1, 1, 0.5f, 0.5f}, 4);
    node(g, "n", "Resize", "x,sc", "y");
    expect(g, "y", F32, D(1, 1, 2, 2));

    g = new_graph("scales length", 13);
    input(g, "x", F32, D(1, 3, 10, 10));
    const_f32(g, "sc", (const float[]){2, 2}, 2);
    node(g, "n", "Resize", "x,,sc", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "scales has 2 values for rank 4", NULL);

    g = new_graph("neither", 13);
    input(g, "x", F32, D(1, 3, 10, 10));
    node(g, "n", "Resize", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "neither scales nor sizes", NULL);
}

static void case_constant_of_shape(void)
{
    pl_graph *g = new_graph("from constant", 13);
    const_i64(g, "s", D(2, 3));
    node(g, "n", "ConstantOfShape", "s", "y");
    expect(g, "y", F32, D(2, 3));

    g = new_graph("int64 value", 13);
    const_i64(g, "s", D(4));
    pl_nid n = node(g, "n", "ConstantOfShape", "s", "y");
    int64_t one = 1, dims1[1] = {1};
    OK(pl_graph_attr_tensor(g, n, "value", I64, 1, dims1, &one, sizeof one));
    expect(g, "y", I64, D(4));

    g = new_graph("runtime shape", 13);
    input(g, "s", I64, D(3));
    node(g, "n", "ConstantOfShape", "s", "y");
    expect(g, "y", F32, D(-1, -1, -1));
}

static void case_range(void)
{
    pl_graph *g = new_graph("ints", 13);
    const_i64_scalar(g, "a", 0);
    const_i64_scalar(g, "b", 10);
    const_i64_scalar(g, "c", 3);
    node(g, "n", "Range", "a,b,c", "y");
    expect(g, "y", I64, D(4));

    g = new_graph("runtime", 13);
    input(g, "a", I64, SCALAR);
    input(g, "b", I64, SCALAR);
    input(g, "c", I64, SCALAR);
    node(g, "n", "Range", "a,b,c", "y");
    expect(g, "y", I64, D(-1));

    g = new_graph("empty", 13);
    const_i64_scalar(g, "a", 5);
    const_i64_scalar(g, "b", 1);
    const_i64_scalar(g, "c", 1);
    node(g, "n", "Range", "a,b,c", "y");
    expect(g, "y", I64, D(0));
}

static void case_tile(void)
{
    pl_graph *g = new_graph("repeats", 13);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "r", D(2, 1));
    node(g, "n", "Tile", "x,r", "y");
    expect(g, "y", F32, D(4, 3));

    g = new_graph("runtime repeats", 13);
    input(g, "x", F32, D(2, 3));
    input(g, "r", I64, D(2));
    node(g, "n", "Tile", "x,r", "y");
    expect(g, "y", F32, D(-1, -1));

    g = new_graph("repeats length", 13);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "r", D(2));
    node(g, "n", "Tile", "x,r", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "repeats has 1 values for rank 2", NULL);
}

/* ---- whole-graph cases ------------------------------------------------------------ */

/* x:[2,8,16] -> Shape -> Gather(0) -> Unsqueeze -> Concat([8,4,4]) ->
 * Reshape(x) gives [2,8,4,4], as in BERT exported by PyTorch. */
static void bert_chain_graph(pl_graph **out, int64_t batch, const char *sym)
{
    pl_graph *g = new_graph("bert chain", 13);
    const char *params[3] = {sym, NULL, NULL};
    input_sym(g, "x", F32, D(batch, 8, 16), params);
    const_i64_scalar(g, "zero", 0);
    const_i64(g, "ax0", D(0));
    const_i64(g, "tail", D(8, 4, 4));
    node(g, "shape", "Shape", "x", "s");
    node(g, "gather", "Gather", "s,zero", "b");
    node(g, "unsq", "Unsqueeze", "b,ax0", "b1");
    pl_nid n = node(g, "concat", "Concat", "b1,tail", "target");
    attr_i(g, n, "axis", 0);
    node(g, "reshape", "Reshape", "x,target", "y");
    *out = g;
}

static void case_bert_chain(void)
{
    pl_graph *g;
    bert_chain_graph(&g, 2, NULL);
    expect(g, "y", F32, D(2, 8, 4, 4));

    /* A symbolic batch stays unknown but the rest is still computed, and
     * the chain's Cast of the shape keeps the values. */
    bert_chain_graph(&g, -1, "batch");
    pl_nid n = node(g, "cast", "Cast", "target", "target32");
    attr_i(g, n, "to", 6);
    n = node(g, "cast_back", "Cast", "target32", "target64");
    attr_i(g, n, "to", 7);
    node(g, "reshape2", "Reshape", "x,target64", "y2");
    OK(run(g));
    check_tensor(g, "y", F32, D(-1, 8, 4, 4));
    check_tensor(g, "y2", F32, D(-1, 8, 4, 4));
    pl_graph_destroy(g);

    /* Arithmetic on shape values: [batch*8, 16] through Mul and Concat. */
    g = new_graph("arithmetic", 13);
    input(g, "x", F32, D(3, 8, 16));
    const_i64(g, "i0", D(0));
    const_i64(g, "i1", D(1));
    const_i64(g, "i2", D(2));
    node(g, "shape", "Shape", "x", "s");
    node(g, "g0", "Gather", "s,i0", "d0");
    node(g, "g1", "Gather", "s,i1", "d1");
    node(g, "g2", "Gather", "s,i2", "d2");
    node(g, "mul", "Mul", "d0,d1", "d01");
    pl_nid c = node(g, "concat", "Concat", "d01,d2", "target");
    attr_i(g, c, "axis", 0);
    node(g, "reshape", "Reshape", "x,target", "y");
    expect(g, "y", F32, D(24, 16));

    /* Slice of a shape and Equal/Where picking a value. */
    g = new_graph("slice and where", 13);
    input(g, "x", F32, D(4, 6, 2));
    const_i64(g, "st", D(1));
    const_i64(g, "en", D(3));
    const_i64(g, "minus1", D(-1, -1));
    const_i64(g, "twelve", D(12, 1));
    node(g, "shape", "Shape", "x", "s");
    node(g, "slice", "Slice", "s,st,en", "hw");
    node(g, "eq", "Equal", "hw,minus1", "cond");
    node(g, "where", "Where", "cond,twelve,hw", "t2");
    const_i64(g, "lead", D(4));
    c = node(g, "concat", "Concat", "lead,t2", "target");
    attr_i(g, c, "axis", 0);
    node(g, "reshape", "Reshape", "x,target", "y");
    expect(g, "y", F32, D(4, 6, 2));
}

static void case_declared_types(void)
{
    /* A declared (value_info) type fills an unknown part... */
    pl_graph *g = new_graph("fills unknown", 13);
    input(g, "x", F32, D(-1, 3));
    node(g, "n", "Relu", "x", "y");
    pl_tid y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F32, 2, (const int64_t[]){5, -1}, NULL));
    expect(g, "y", F32, D(5, 3));

    /* ...and a conflict names both. */
    g = new_graph("conflict", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "relu1", "Relu", "x", "y");
    y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F32, 2, (const int64_t[]){2, 4}, NULL));
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'relu1' (Relu): output 'y' is declared [2,4] but inferred [2,3]",
                 NULL);

    g = new_graph("dtype conflict", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", "Relu", "x", "y");
    y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F16, -1, NULL, NULL));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "declared f16 but inferred f32", NULL);

    g = new_graph("rank conflict", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", "Relu", "x", "y");
    y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F32, 1, (const int64_t[]){6}, NULL));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "(rank 1) but inferred [2,3] (rank 2)",
                 NULL);
}

static void case_unknown_op(void)
{
    pl_graph *g = new_graph("custom domain", 13);
    OK(pl_graph_set_opset(g, "com.acme", 1));
    input(g, "x", F32, D(2));
    node_in(g, "x1", "FooOp", "com.acme", "x", "y");
    expect_error(g, PL_CODE_UNSUPPORTED,
                 "node 'x1' (FooOp, domain 'com.acme'): no schema for this op (opset 1)",
                 NULL);

    g = new_graph("default domain", 13);
    input(g, "x", F32, D(2));
    node(g, "x1", "NoSuchOp", "x", "y");
    expect_error(g, PL_CODE_UNSUPPORTED,
                 "node 'x1' (NoSuchOp): no schema for this op (opset 13)", NULL);

    g = new_graph("opset too old", 6);
    input(g, "x", F32, D(2));
    node(g, "n", "Relu", "x", "y");
    expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 6)", NULL);

    g = new_graph("no import defaults to 13", 0);
    input(g, "x", F32, D(2, 3));
    const_i64(g, "ax", D(0));
    node(g, "n", "Unsqueeze", "x,ax", "y");
    expect(g, "y", F32, D(1, 2, 3));
}

static int foo_user;

static pl_status *foo_infer(pl_infer_ctx *ctx)
{
    /* FooOp doubles the last dim. */
    const pl_graph_tensor *x = pl_infer_input(ctx, 0);
    if (x->ndim < 1)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "needs rank >= 1");
    int64_t dims[PL_GRAPH_MAX_RANK];
    memcpy(dims, x->dims, (size_t)x->ndim * sizeof *dims);
    dims[x->ndim - 1] *= 2;
    if (pl_infer_user_data(ctx) != (void *)&foo_user)
        return pl_infer_error(ctx, PL_CODE_INTERNAL, "user data lost");
    if (pl_infer_attr_int(ctx, "factor") != 2)
        return pl_infer_error(ctx, PL_CODE_INVALID_ARGUMENT, "factor must be 2");
    return pl_infer_set_output(ctx, 0, (pl_dtype){0, 0, 0}, x->ndim, dims, NULL);
}

static void case_registry(void)
{
    cur_case = "register and find";
    pl_opset *set = NULL;
    OK(pl_opset_create(&set));
    size_t before = pl_opset_count(set);
    char name[16] = "FooOp", domain[16] = "com.acme", tname[4] = "T";
    pl_attr_spec attrs[1] = {{.name = "factor", .kind = PL_ATTR_INT, .default_int = 2}};
    pl_op_schema s = {.name = name, .domain = domain, .since_version = 1,
                      .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
                      .max_outputs = 1, .attrs = attrs, .n_attrs = 1,
                      .types = {{tname, PL_TS_FLOAT}}, .input_types = {tname},
                      .output_types = {tname}, .n_inplace = 1,
                      .inplace_input = {0}, .infer = foo_infer,
                      .infer_user = &foo_user};
    OK(pl_opset_register(set, &s));
    /* The set copied everything: scribbling on the caller's strings must
     * not matter. */
    strcpy(name, "Broken");
    strcpy(domain, "x");
    strcpy(tname, "Z");
    attrs[0].name = "nothing";
    if (pl_opset_count(set) != before + 1)
        FAIL("count %zu after one registration of %zu", pl_opset_count(set), before);
    const pl_op_schema *f = pl_opset_find(set, "com.acme", "FooOp", 3);
    if (f == NULL || strcmp(f->name, "FooOp") != 0 || pl_opset_inplace_input(f, 0) != 0 ||
        pl_opset_inplace_input(f, 1) != -1)
        FAIL("registered schema not found intact");
    if (pl_opset_find(set, "com.acme", "FooOp", 0) != NULL)
        FAIL("found a schema below its since_version");

    cur_case = "duplicate refused";
    strcpy(name, "FooOp");
    strcpy(domain, "com.acme");
    pl_status *st = pl_opset_register(set, &s);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT ||
        !strstr(pl_status_message(st), "already registered"))
        FAIL("duplicate: %s", pl_status_message(st));
    pl_status_free(st);

    cur_case = "malformed refused";
    pl_op_schema bad = s;
    bad.max_inputs = 0;
    bad.min_inputs = 2;
    st = pl_opset_register(set, &bad);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT)
        FAIL("malformed schema accepted");
    pl_status_free(st);

    cur_case = "custom op inference";
    pl_opset *saved = opset;
    opset = set;
    pl_graph *g = new_graph("custom op inference", 13);
    OK(pl_graph_set_opset(g, "com.acme", 1));
    input(g, "x", F32, D(2, 3));
    node_in(g, "foo", "FooOp", "com.acme", "x", "y");
    expect(g, "y", F32, D(2, 6));

    g = new_graph("custom op type check", 13);
    input(g, "x", I64, D(2, 3));
    node_in(g, "foo", "FooOp", "com.acme", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'foo' (FooOp, domain 'com.acme'): input 0 ('x') has dtype i64",
                 NULL);
    opset = saved;

    cur_case = "versions";
    const pl_op_schema *a = pl_opset_find(opset, "", "Softmax", 11);
    const pl_op_schema *b = pl_opset_find(opset, "ai.onnx", "Softmax", 13);
    const pl_op_schema *c2 = pl_opset_find(opset, "", "Softmax", 17);
    if (!a || !b || a->since_version != 7 || b->since_version != 13 || c2 != b)
        FAIL("Softmax versions resolve wrongly");
    if (pl_opset_inplace_input(pl_opset_find(opset, "", "Relu", 13), 0) != 0 ||
        pl_opset_inplace_input(pl_opset_find(opset, "", "Cast", 13), 0) != -1)
        FAIL("in-place info wrong");

    cur_case = "per-runtime";
    if (pl_opset_find(opset, "com.acme", "FooOp", 1) != NULL)
        FAIL("a registration leaked into another set");
    pl_opset_destroy(set);

    cur_case = "broadcast helper";
    int64_t out[4];
    int r;
    if (!pl_opset_broadcast((const int64_t[]){2, 1, 4}, 3, (const int64_t[]){3, 1}, 2,
                            out, &r) || r != 3 || out[0] != 2 || out[1] != 3 || out[2] != 4)
        FAIL("broadcast [2,1,4] [3,1]");
    if (pl_opset_broadcast((const int64_t[]){2, 3}, 2, (const int64_t[]){4}, 1, out, &r))
        FAIL("broadcast [2,3] [4] accepted");
}

/* Fails the Nth allocation for N = 1, 2, … until inference succeeds; each
 * failure must be out-of-memory and leave nothing leaked (ASan checks). */
static void case_alloc_sweep(void)
{
    long n;
    for (n = 1; n < 100000; n++) {
        pl_graph *g;
        pl_alloc_fail_at(0);
        bert_chain_graph(&g, -1, "batch");
        cur_case = "alloc sweep";
        node(g, "relu", "Relu", "y", "z");
        OK(pl_graph_validate(g));
        pl_alloc_fail_at(n);
        pl_status *st = pl_opset_infer(opset, g);
        pl_alloc_fail_at(0);
        if (st == NULL) {
            check_tensor(g, "z", F32, D(-1, 8, 4, 4));
            pl_graph_destroy(g);
            break;
        }
        if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY) {
            FAIL("allocation %ld failed with %s: %s", n,
                 pl_code_name(pl_status_code(st)), pl_status_message(st));
            pl_status_free(st);
            pl_graph_destroy(g);
            break;
        }
        pl_status_free(st);
        pl_graph_destroy(g);
    }
    if (n < 3)
        FAIL("inference made only %ld allocations; the sweep tested nothing", n);
    printf("alloc sweep: %ld allocation points\n", n - 1);

    /* The opset's own creation and registration, too. */
    for (n = 1; n < 1000; n++) {
        pl_opset *set = NULL;
        pl_alloc_fail_at(n);
        pl_status *st = pl_opset_create(&set);
        pl_op_schema s = {.name = "Foo", .domain = "d", .since_version = 1,
                          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
                          .max_outputs = 1};
        if (st == NULL)
            st = pl_opset_register(set, &s);
        pl_alloc_fail_at(0);
        pl_opset_destroy(set);
        if (st == NULL)
            break;
        if (pl_status_code(st) != PL_CODE_OUT_OF_MEMORY)
            FAIL("opset allocation %ld failed with %s", n, pl_status_message(st));
        pl_status_free(st);
    }
}

/* ---- dispatch ---------------------------------------------------------------------- */

static void c_add(void) { binary_cases("Add"); }
static void c_sub(void) { binary_cases("Sub"); }
static void c_mul(void) { binary_cases("Mul"); }
static void c_div(void) { binary_cases("Div"); }
static void c_equal(void) { compare_cases("Equal"); }
static void c_less(void) { compare_cases("Less"); }
static void c_greater(void) { compare_cases("Greater"); }
static void c_sqrt(void) { unary_cases("Sqrt", false); }
static void c_exp(void) { unary_cases("Exp", false); }
static void c_log(void) { unary_cases("Log", false); }
static void c_neg(void) { unary_cases("Neg", true); }
static void c_abs(void) { unary_cases("Abs", true); }
static void c_reciprocal(void) { unary_cases("Reciprocal", false); }
static void c_relu(void) { unary_cases("Relu", true); }
static void c_sigmoid(void) { unary_cases("Sigmoid", false); }
static void c_tanh(void) { unary_cases("Tanh", false); }
static void c_erf(void) { unary_cases("Erf", true); }
static void c_softmax(void) { softmax_cases("Softmax"); }
static void c_logsoftmax(void) { softmax_cases("LogSoftmax"); }
static void c_avgpool(void) { pool_cases("AveragePool"); }
static void c_gap(void) { global_pool_cases("GlobalAveragePool"); }
static void c_gmp(void) { global_pool_cases("GlobalMaxPool"); }
static void c_rmean(void) { reduce_cases("ReduceMean", false); }
static void c_rsum(void) { reduce_cases("ReduceSum", true); }
static void c_rmax(void) { reduce_cases("ReduceMax", false); }

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"Add", c_add}, {"Sub", c_sub}, {"Mul", c_mul}, {"Div", c_div},
    {"Pow", case_pow}, {"Equal", c_equal}, {"Less", c_less},
    {"Greater", c_greater}, {"Where", case_where}, {"Sqrt", c_sqrt},
    {"Exp", c_exp}, {"Log", c_log}, {"Neg", c_neg}, {"Abs", c_abs},
    {"Reciprocal", c_reciprocal}, {"Relu", c_relu},
    {"LeakyRelu", case_leakyrelu}, {"Sigmoid", c_sigmoid}, {"Tanh", c_tanh},
    {"Erf", c_erf}, {"Clip", case_clip}, {"Softmax", c_softmax},
    {"LogSoftmax", c_logsoftmax}, {"Identity", case_identity},
    {"Cast", case_cast}, {"Dropout", case_dropout}, {"MatMul", case_matmul},
    {"Gemm", case_gemm}, {"Conv", case_conv},
    {"ConvTranspose", case_conv_transpose}, {"MaxPool", case_maxpool},
    {"AveragePool", c_avgpool}, {"GlobalAveragePool", c_gap},
    {"GlobalMaxPool", c_gmp}, {"BatchNormalization", case_batchnorm},
    {"LayerNormalization", case_layernorm},
    {"InstanceNormalization", case_instancenorm}, {"ReduceMean", c_rmean},
    {"ReduceSum", c_rsum}, {"ReduceMax", c_rmax}, {"Reshape", case_reshape},
    {"Flatten", case_flatten}, {"Transpose", case_transpose},
    {"Concat", case_concat}, {"Split", case_split}, {"Slice", case_slice},
    {"Squeeze", case_squeeze}, {"Unsqueeze", case_unsqueeze},
    {"Gather", case_gather}, {"Constant", case_constant},
    {"Shape", case_shape}, {"Expand", case_expand}, {"Pad", case_pad},
    {"Resize", case_resize}, {"ConstantOfShape", case_constant_of_shape},
    {"Range", case_range}, {"Tile", case_tile},
    {"bert_chain", case_bert_chain}, {"declared_types", case_declared_types},
    {"unknown_op", case_unknown_op}, {"registry", case_registry},
    {"alloc_sweep", case_alloc_sweep},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s OP|all\n", argv[0]);
        return 2;
    }
    OK(pl_opset_create(&opset));
    bool found = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(argv[1], "all") != 0 && strcmp(argv[1], cases[i].name) != 0)
            continue;
        found = true;
        cur_op = cases[i].name;
        cases[i].fn();
    }
    pl_opset_destroy(opset);
    if (!found) {
        fprintf(stderr, "unknown case '%s'\n", argv[1]);
        return 2;
    }
    if (failures)
        fprintf(stderr, "%d failure(s)\n", failures);
    return failures ? 1 : 0;
}
