/* test_opset_more.c — shape and dtype inference of the core's second wave
 * of op schemas (core/src/opset_more.c), op by op. Each case builds a small
 * graph with graph.h, runs pl_opset_infer and checks the output type, or
 * the error and its message. Usage: test_opset_more OP, where OP names an
 * op (every case of that op runs; a failure names the op and the case), or
 * "all". Linked against the core's object library. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- unary ------------------------------------------------------------------ */

#define F64 PL_DTYPE_F64
#define U8 PL_DTYPE_U8
#define I8 PL_DTYPE_I8

/* The cases every unary op of the family shares: the shape and its
 * symbolic dims carried over, an unknown rank, a refused dtype BAD (whose
 * name is BAD_NAME), and no schema before SINCE. */
static void unary_cases(const char *op, pl_dtype dt, pl_dtype bad, const char *bad_name,
                        int since)
{
    pl_graph *g = new_graph("same shape", 17);
    input(g, "x", dt, D(2, 3, 4));
    node(g, "n", op, "x", "y");
    expect(g, "y", dt, D(2, 3, 4));

    const char *params[] = {"batch", NULL};
    g = new_graph("symbolic dim kept", 17);
    input_sym(g, "x", dt, D(-1, 7), params);
    node(g, "n", op, "x", "y");
    OK(run(g));
    const pl_graph_tensor *t = pl_graph_get_tensor(g, pl_graph_find_tensor(g, "y"));
    if (t->ndim != 2 || t->dims[0] != -1 || t->dims[1] != 7 || !t->dim_params ||
        !t->dim_params[0] || strcmp(t->dim_params[0], "batch") != 0)
        FAIL("symbolic dim 'batch' was not kept");
    pl_graph_destroy(g);

    g = new_graph("unknown rank", 17);
    input(g, "x", dt, UNRANKED);
    node(g, "n", op, "x", "y");
    expect(g, "y", dt, UNRANKED);

    char frag[64];
    snprintf(frag, sizeof frag, "input 0 ('x') has dtype %s", bad_name);
    g = new_graph("refused dtype", 17);
    input(g, "x", bad, D(3));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, frag, NULL);

    if (since > 7) {
        char want[64];
        snprintf(want, sizeof want, "no schema for this op (opset %d)", since - 1);
        g = new_graph("before its opset", since - 1);
        input(g, "x", dt, D(3));
        node(g, "n", op, "x", "y");
        expect_error(g, PL_CODE_UNSUPPORTED, want, NULL);
    }
}

#define FLOAT_UNARY(fn, op, since) \
    static void fn(void) { unary_cases(op, F32, I64, "i64", since); }
FLOAT_UNARY(c_floor, "Floor", 7)
FLOAT_UNARY(c_ceil, "Ceil", 7)
FLOAT_UNARY(c_round, "Round", 11)
FLOAT_UNARY(c_sin, "Sin", 7)
FLOAT_UNARY(c_cos, "Cos", 7)
FLOAT_UNARY(c_tan, "Tan", 7)
FLOAT_UNARY(c_asin, "Asin", 7)
FLOAT_UNARY(c_acos, "Acos", 7)
FLOAT_UNARY(c_atan, "Atan", 7)
FLOAT_UNARY(c_sinh, "Sinh", 9)
FLOAT_UNARY(c_cosh, "Cosh", 9)
FLOAT_UNARY(c_asinh, "Asinh", 9)
FLOAT_UNARY(c_acosh, "Acosh", 9)
FLOAT_UNARY(c_atanh, "Atanh", 9)
FLOAT_UNARY(c_softplus, "Softplus", 7)
FLOAT_UNARY(c_softsign, "Softsign", 7)
FLOAT_UNARY(c_hardswish, "HardSwish", 14)

/* An activation with float attributes: the defaults, set values, and an
 * attribute it does not have. */
static void activation_cases(const char *op, const char *attr, int since)
{
    unary_cases(op, F32, BOOL, "bool", since);
    pl_graph *g = new_graph("attribute set", 17);
    input(g, "x", F32, D(5));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_f(g, n, attr, 0.75);
    expect(g, "y", F32, D(5));

    g = new_graph("f64", 17);
    input(g, "x", F64, D(5, 1));
    node(g, "n", op, "x", "y");
    expect(g, "y", F64, D(5, 1));

    g = new_graph("unknown attribute", 17);
    input(g, "x", F32, D(5));
    n = node(g, "n", op, "x", "y");
    attr_f(g, n, "lambda", 0.5);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'lambda'", NULL);
}

static void c_elu(void) { activation_cases("Elu", "alpha", 7); }
static void c_selu(void) { activation_cases("Selu", "gamma", 7); }
static void c_hardsigmoid(void) { activation_cases("HardSigmoid", "beta", 7); }
static void c_thresholdedrelu(void) { activation_cases("ThresholdedRelu", "alpha", 10); }

static void c_celu(void)
{
    unary_cases("Celu", F32, I64, "i64", 12);
    /* Celu is defined on f32 only. */
    pl_graph *g = new_graph("f64 refused", 13);
    input(g, "x", F64, D(5));
    node(g, "n", "Celu", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype f64", NULL);
}

static void c_sign(void)
{
    unary_cases("Sign", F32, BOOL, "bool", 9);
    pl_graph *g = new_graph("integers", 13);
    input(g, "x", I8, D(4, 4));
    node(g, "n", "Sign", "x", "y");
    expect(g, "y", I8, D(4, 4));
}

static void c_shrink(void)
{
    unary_cases("Shrink", F32, BOOL, "bool", 9);
    pl_graph *g = new_graph("integers with attributes", 13);
    input(g, "x", I32, D(6));
    pl_nid n = node(g, "n", "Shrink", "x", "y");
    attr_f(g, n, "lambd", 1.5);
    attr_f(g, n, "bias", 1.5);
    expect(g, "y", I32, D(6));

    g = new_graph("negative lambd", 13);
    input(g, "x", F32, D(6));
    n = node(g, "n", "Shrink", "x", "y");
    attr_f(g, n, "lambd", -1.0);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "lambd -1 is negative", NULL);
}

static void is_cases(const char *op, int since)
{
    pl_graph *g = new_graph("bool output", 17);
    input(g, "x", F32, D(2, 3));
    node(g, "n", op, "x", "y");
    expect(g, "y", BOOL, D(2, 3));

    g = new_graph("f64, scalar", 17);
    input(g, "x", F64, SCALAR);
    node(g, "n", op, "x", "y");
    expect(g, "y", BOOL, SCALAR);

    g = new_graph("integers refused", 17);
    input(g, "x", I32, D(2));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i32", NULL);

    char want[64];
    snprintf(want, sizeof want, "no schema for this op (opset %d)", since - 1);
    g = new_graph("before its opset", since - 1);
    input(g, "x", F32, D(3));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_UNSUPPORTED, want, NULL);
}

static void c_isnan(void) { is_cases("IsNaN", 9); }

static void c_isinf(void)
{
    is_cases("IsInf", 10);
    pl_graph *g = new_graph("detect flags", 13);
    input(g, "x", F32, D(7));
    pl_nid n = node(g, "n", "IsInf", "x", "y");
    attr_i(g, n, "detect_negative", 0);
    expect(g, "y", BOOL, D(7));
}

static void c_not(void) { unary_cases("Not", BOOL, F32, "f32", 7); }

/* ---- broadcasting ------------------------------------------------------------ */

/* Two-input broadcasting: a broadcast, a scalar, a mismatch, a refused
 * dtype; the output is OUT (BOOL for logical and comparison ops, else the
 * input's). */
static void binary_cases(const char *op, pl_dtype dt, pl_dtype out, pl_dtype bad,
                         const char *bad_name)
{
    pl_graph *g = new_graph("broadcast", 17);
    input(g, "a", dt, D(2, 1, 4));
    input(g, "b", dt, D(3, 1));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", out, D(2, 3, 4));

    g = new_graph("scalar", 17);
    input(g, "a", dt, SCALAR);
    input(g, "b", dt, D(5));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", out, D(5));

    g = new_graph("mismatch", 17);
    input(g, "a", dt, D(2, 3));
    input(g, "b", dt, D(4));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2,3] and [4] cannot be broadcast", NULL);

    char frag[64];
    snprintf(frag, sizeof frag, "input 0 ('a') has dtype %s", bad_name);
    g = new_graph("refused dtype", 17);
    input(g, "a", bad, D(2));
    input(g, "b", bad, D(2));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, frag, NULL);

    g = new_graph("operands differ", 17);
    input(g, "a", dt, D(2));
    input(g, "b", bad, D(2));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('b') has dtype", NULL);
}

static void c_and(void) { binary_cases("And", BOOL, BOOL, F32, "f32"); }
static void c_or(void) { binary_cases("Or", BOOL, BOOL, I64, "i64"); }
static void c_xor(void) { binary_cases("Xor", BOOL, BOOL, U8, "u8"); }

static void order_cases(const char *op)
{
    binary_cases(op, F32, BOOL, BOOL, "bool");
    pl_graph *g = new_graph("integers", 13);
    input(g, "a", I64, D(3, 1));
    input(g, "b", I64, D(1, 4));
    node(g, "n", op, "a,b", "y");
    expect(g, "y", BOOL, D(3, 4));

    g = new_graph("opset 11 has none", 11);
    input(g, "a", F32, D(3));
    input(g, "b", F32, D(3));
    node(g, "n", op, "a,b", "y");
    expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 11)", NULL);
}

static void c_greaterorequal(void) { order_cases("GreaterOrEqual"); }
static void c_lessorequal(void) { order_cases("LessOrEqual"); }

static void c_mod(void)
{
    binary_cases("Mod", I32, I32, BOOL, "bool");
    pl_graph *g = new_graph("float with fmod", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(3));
    pl_nid n = node(g, "n", "Mod", "a,b", "y");
    attr_i(g, n, "fmod", 1);
    expect(g, "y", F32, D(2, 3));

    g = new_graph("float without fmod", 13);
    input(g, "a", F32, D(2, 3));
    input(g, "b", F32, D(3));
    node(g, "n", "Mod", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "fmod must be 1 for floating-point inputs",
                 NULL);
}

static void c_bitshift(void)
{
    pl_graph *g = new_graph("left", 13);
    input(g, "a", U8, D(3, 1));
    input(g, "b", U8, D(4));
    pl_nid n = node(g, "n", "BitShift", "a,b", "y");
    attr_s(g, n, "direction", "LEFT");
    expect(g, "y", U8, D(3, 4));

    g = new_graph("bad direction", 13);
    input(g, "a", U8, D(3));
    input(g, "b", U8, D(3));
    n = node(g, "n", "BitShift", "a,b", "y");
    attr_s(g, n, "direction", "UP");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "direction 'UP' is neither LEFT nor RIGHT", NULL);

    g = new_graph("direction required", 13);
    input(g, "a", U8, D(3));
    input(g, "b", U8, D(3));
    node(g, "n", "BitShift", "a,b", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "direction", NULL);

    g = new_graph("signed refused", 13);
    input(g, "a", I32, D(3));
    input(g, "b", I32, D(3));
    n = node(g, "n", "BitShift", "a,b", "y");
    attr_s(g, n, "direction", "RIGHT");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i32", NULL);
}

static void c_prelu(void)
{
    pl_graph *g = new_graph("channel slope", 13);
    input(g, "x", F32, D(2, 3, 4, 4));
    input(g, "s", F32, D(3, 1, 1));
    node(g, "n", "PRelu", "x,s", "y");
    expect(g, "y", F32, D(2, 3, 4, 4));

    g = new_graph("scalar slope", 13);
    input(g, "x", F32, D(5));
    input(g, "s", F32, SCALAR);
    node(g, "n", "PRelu", "x,s", "y");
    expect(g, "y", F32, D(5));

    g = new_graph("slope wider than X", 13);
    input(g, "x", F32, D(3));
    input(g, "s", F32, D(2, 3));
    node(g, "n", "PRelu", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "slope [2,3] does not broadcast to X [3]", NULL);

    g = new_graph("slope mismatch", 13);
    input(g, "x", F32, D(2, 3));
    input(g, "s", F32, D(4));
    node(g, "n", "PRelu", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "does not broadcast", NULL);

    g = new_graph("integers from opset 9", 8);
    input(g, "x", I32, D(2));
    input(g, "s", I32, D(2));
    node(g, "n", "PRelu", "x,s", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i32", NULL);
}

/* Variadic Min Max Sum Mean. */
static void variadic_cases(const char *op, bool ints)
{
    pl_graph *g = new_graph("three inputs", 13);
    input(g, "a", F32, D(2, 1, 1));
    input(g, "b", F32, D(3, 1));
    input(g, "c", F32, D(4));
    node(g, "n", op, "a,b,c", "y");
    expect(g, "y", F32, D(2, 3, 4));

    g = new_graph("one input", 13);
    input(g, "a", F32, D(6));
    node(g, "n", op, "a", "y");
    expect(g, "y", F32, D(6));

    g = new_graph("mismatch", 13);
    input(g, "a", F32, D(2));
    input(g, "b", F32, D(2));
    input(g, "c", F32, D(3));
    node(g, "n", op, "a,b,c", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2] and [3] cannot be broadcast", NULL);

    g = new_graph("integers", 13);
    input(g, "a", I64, D(2));
    input(g, "b", I64, D(2));
    node(g, "n", op, "a,b", "y");
    if (ints)
        expect(g, "y", I64, D(2));
    else
        expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i64", NULL);

    g = new_graph("integers before opset 12", 11);
    input(g, "a", I64, D(2));
    node(g, "n", op, "a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i64", NULL);

    g = new_graph("no input", 13);
    node(g, "n", op, "", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "inputs, got 0", NULL);
}

static void c_min(void) { variadic_cases("Min", true); }
static void c_max(void) { variadic_cases("Max", true); }
static void c_sum(void) { variadic_cases("Sum", false); }
static void c_mean(void) { variadic_cases("Mean", false); }

/* ---- reductions -------------------------------------------------------------- */

static void reduce_cases(const char *op)
{
    pl_graph *g = new_graph("keepdims", 13);
    input(g, "x", F32, D(2, 3, 4));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(1));
    expect(g, "y", F32, D(2, 1, 4));

    g = new_graph("no keepdims, negative axes", 13);
    input(g, "x", F32, D(2, 3, 4));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(-1, 0));
    attr_i(g, n, "keepdims", 0);
    expect(g, "y", F32, D(3));

    g = new_graph("every axis by default", 13);
    input(g, "x", I32, D(2, 3, 4));
    node(g, "n", op, "x", "y");
    expect(g, "y", I32, D(1, 1, 1));

    g = new_graph("axes as input (opset 18)", 18);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "axes", (const int64_t[]){2}, 1);
    n = node(g, "n", op, "x,axes", "y");
    attr_i(g, n, "keepdims", 0);
    expect(g, "y", F32, D(2, 3));

    g = new_graph("noop with empty axes (opset 18)", 18);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_i(g, n, "noop_with_empty_axes", 1);
    expect(g, "y", F32, D(2, 3));

    g = new_graph("axis out of range", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(2));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = new_graph("axis twice", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_is(g, n, "axes", D(1, -1));
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -1 is given twice", NULL);

    g = new_graph("bool refused", 13);
    input(g, "x", BOOL, D(2, 3));
    node(g, "n", op, "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype bool", NULL);
}

static void c_reducemin(void) { reduce_cases("ReduceMin"); }
static void c_reduceprod(void) { reduce_cases("ReduceProd"); }
static void c_reducel1(void) { reduce_cases("ReduceL1"); }
static void c_reducel2(void) { reduce_cases("ReduceL2"); }
static void c_reducesumsquare(void) { reduce_cases("ReduceSumSquare"); }
static void c_reducelogsum(void) { reduce_cases("ReduceLogSum"); }
static void c_reducelogsumexp(void) { reduce_cases("ReduceLogSumExp"); }

static void arg_cases(const char *op)
{
    pl_graph *g = new_graph("default axis, keepdims", 13);
    input(g, "x", F32, D(2, 3, 4));
    node(g, "n", op, "x", "y");
    expect(g, "y", I64, D(1, 3, 4));

    g = new_graph("negative axis, no keepdims", 13);
    input(g, "x", I32, D(2, 3, 4));
    pl_nid n = node(g, "n", op, "x", "y");
    attr_i(g, n, "axis", -1);
    attr_i(g, n, "keepdims", 0);
    attr_i(g, n, "select_last_index", 1);
    expect(g, "y", I64, D(2, 3));

    g = new_graph("axis out of range", 13);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_i(g, n, "axis", -3);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -3 is out of range for rank 2", NULL);

    g = new_graph("select_last_index before opset 12", 11);
    input(g, "x", F32, D(2, 3));
    n = node(g, "n", op, "x", "y");
    attr_i(g, n, "select_last_index", 1);
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'select_last_index'", NULL);
}

static void c_argmax(void) { arg_cases("ArgMax"); }
static void c_argmin(void) { arg_cases("ArgMin"); }

/* ---- Trilu, CumSum, Size ------------------------------------------------------ */

static void c_trilu(void)
{
    pl_graph *g = new_graph("batched", 14);
    input(g, "x", I64, D(2, 3, 5));
    node(g, "n", "Trilu", "x", "y");
    expect(g, "y", I64, D(2, 3, 5));

    g = new_graph("with k, lower", 14);
    input(g, "x", F32, D(4, 4));
    input(g, "k", I64, SCALAR);
    pl_nid n = node(g, "n", "Trilu", "x,k", "y");
    attr_i(g, n, "upper", 0);
    expect(g, "y", F32, D(4, 4));

    g = new_graph("rank 1", 14);
    input(g, "x", F32, D(4));
    node(g, "n", "Trilu", "x", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input has rank 1, Trilu needs at least 2", NULL);

    g = new_graph("k not a scalar", 14);
    input(g, "x", F32, D(4, 4));
    input(g, "k", I64, D(2));
    node(g, "n", "Trilu", "x,k", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "k must be a scalar", NULL);

    g = new_graph("opset 13 has none", 13);
    input(g, "x", F32, D(4, 4));
    node(g, "n", "Trilu", "x", "y");
    expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 13)", NULL);
}

static void c_cumsum(void)
{
    pl_graph *g = new_graph("axis input", 14);
    input(g, "x", F32, D(2, 3));
    input(g, "a", I32, SCALAR);
    pl_nid n = node(g, "n", "CumSum", "x,a", "y");
    attr_i(g, n, "exclusive", 1);
    attr_i(g, n, "reverse", 1);
    expect(g, "y", F32, D(2, 3));

    g = new_graph("constant axis", 14);
    input(g, "x", I64, D(5));
    const_i64_scalar(g, "a", -1);
    node(g, "n", "CumSum", "x,a", "y");
    expect(g, "y", I64, D(5));

    g = new_graph("constant axis out of range", 14);
    input(g, "x", F32, D(2, 3));
    const_i64_scalar(g, "a", 2);
    node(g, "n", "CumSum", "x,a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = new_graph("axis not a scalar", 14);
    input(g, "x", F32, D(2, 3));
    input(g, "a", I64, D(2));
    node(g, "n", "CumSum", "x,a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis must be a scalar", NULL);

    g = new_graph("f32 axis refused", 14);
    input(g, "x", F32, D(2, 3));
    input(g, "a", F32, SCALAR);
    node(g, "n", "CumSum", "x,a", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('a') has dtype f32", NULL);
}

static void c_size(void)
{
    pl_graph *g = new_graph("scalar i64", 13);
    input(g, "x", F32, D(2, 3));
    node(g, "n", "Size", "x", "y");
    expect(g, "y", I64, SCALAR);

    g = new_graph("unknown dims", 13);
    input(g, "x", BOOL, D(-1, 3));
    node(g, "n", "Size", "x", "y");
    expect(g, "y", I64, SCALAR);

    /* The size is a known value: Reshape to [size] gets a known shape. */
    g = new_graph("known value", 13);
    input(g, "x", F32, D(2, 3, 4));
    const_i64(g, "axes", (const int64_t[]){0}, 1);
    node(g, "n", "Size", "x", "s");
    node(g, "u", "Unsqueeze", "s,axes", "v");
    node(g, "r", "Reshape", "x,v", "y");
    expect(g, "y", F32, D(24));

    g = new_graph("two inputs", 13);
    input(g, "x", F32, D(2));
    input(g, "z", F32, D(2));
    node(g, "n", "Size", "x,z", "y");
    expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 1 input, got 2", NULL);
}

/* ---- main -------------------------------------------------------------------- */

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"Floor", c_floor}, {"Ceil", c_ceil}, {"Round", c_round}, {"Sign", c_sign},
    {"Sin", c_sin}, {"Cos", c_cos}, {"Tan", c_tan}, {"Asin", c_asin}, {"Acos", c_acos},
    {"Atan", c_atan}, {"Sinh", c_sinh}, {"Cosh", c_cosh}, {"Asinh", c_asinh},
    {"Acosh", c_acosh}, {"Atanh", c_atanh}, {"Softplus", c_softplus},
    {"Softsign", c_softsign}, {"Elu", c_elu}, {"Selu", c_selu}, {"Celu", c_celu},
    {"HardSigmoid", c_hardsigmoid}, {"HardSwish", c_hardswish},
    {"ThresholdedRelu", c_thresholdedrelu}, {"Shrink", c_shrink}, {"IsNaN", c_isnan},
    {"IsInf", c_isinf}, {"Not", c_not}, {"And", c_and}, {"Or", c_or}, {"Xor", c_xor},
    {"GreaterOrEqual", c_greaterorequal}, {"LessOrEqual", c_lessorequal}, {"Mod", c_mod},
    {"BitShift", c_bitshift}, {"PRelu", c_prelu}, {"Min", c_min}, {"Max", c_max},
    {"Sum", c_sum}, {"Mean", c_mean}, {"ReduceMin", c_reducemin},
    {"ReduceProd", c_reduceprod}, {"ReduceL1", c_reducel1}, {"ReduceL2", c_reducel2},
    {"ReduceSumSquare", c_reducesumsquare}, {"ReduceLogSum", c_reducelogsum},
    {"ReduceLogSumExp", c_reducelogsumexp}, {"ArgMax", c_argmax}, {"ArgMin", c_argmin},
    {"Trilu", c_trilu}, {"CumSum", c_cumsum}, {"Size", c_size},
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
