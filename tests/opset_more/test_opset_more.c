/* test_opset_more.c — shape and dtype inference of the core's second wave
 * of op schemas (core/opset/src/opset_math.c), op by op. Each case builds a small
 * graph with graph.h, runs pl_opset_infer and checks the output type, or
 * the error and its message. Usage: test_opset_more OP, where OP names an
 * op (every case of that op runs; a failure names the op and the case), or
 * "all". Linked against the core's object library and the shared harness
 * (tests/opset_harness). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opset_harness.h"

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
    oh_unary_shape_cases(op, 17, dt, dt);
    pl_graph *g;

    char frag[64];
    snprintf(frag, sizeof frag, "input 0 ('x') has dtype %s", bad_name);
    g = oh_new_graph("refused dtype", 17);
    oh_input(g, "x", bad, D(3));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, frag, NULL);

    if (since > 7) {
        char want[64];
        snprintf(want, sizeof want, "no schema for this op (opset %d)", since - 1);
        g = oh_new_graph("before its opset", since - 1);
        oh_input(g, "x", dt, D(3));
        oh_node(g, "n", op, "x", "y");
        oh_expect_error(g, PL_CODE_UNSUPPORTED, want, NULL);
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
    pl_graph *g = oh_new_graph("attribute set", 17);
    oh_input(g, "x", F32, D(5));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_f(g, n, attr, 0.75);
    oh_expect(g, "y", F32, D(5));

    g = oh_new_graph("f64", 17);
    oh_input(g, "x", F64, D(5, 1));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", F64, D(5, 1));

    g = oh_new_graph("unknown attribute", 17);
    oh_input(g, "x", F32, D(5));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_f(g, n, "lambda", 0.5);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'lambda'", NULL);
}

static void c_elu(void) { activation_cases("Elu", "alpha", 7); }
static void c_selu(void) { activation_cases("Selu", "gamma", 7); }
static void c_hardsigmoid(void) { activation_cases("HardSigmoid", "beta", 7); }
/* ThresholdedRelu is opset 10's; before it, ONNX's experimental op of the
 * same name, which the lowering runs as x * (x > alpha) (opset_lower.c):
 * no refusal before 10 to check. */
static void c_thresholdedrelu(void) { activation_cases("ThresholdedRelu", "alpha", 7); }

static void c_celu(void)
{
    unary_cases("Celu", F32, I64, "i64", 12);
    /* Celu is defined on f32 only. */
    pl_graph *g = oh_new_graph("f64 refused", 13);
    oh_input(g, "x", F64, D(5));
    oh_node(g, "n", "Celu", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype f64", NULL);
}

static void c_sign(void)
{
    unary_cases("Sign", F32, BOOL, "bool", 9);
    pl_graph *g = oh_new_graph("integers", 13);
    oh_input(g, "x", I8, D(4, 4));
    oh_node(g, "n", "Sign", "x", "y");
    oh_expect(g, "y", I8, D(4, 4));
}

static void c_shrink(void)
{
    unary_cases("Shrink", F32, BOOL, "bool", 9);
    pl_graph *g = oh_new_graph("integers with attributes", 13);
    oh_input(g, "x", I32, D(6));
    pl_nid n = oh_node(g, "n", "Shrink", "x", "y");
    oh_attr_f(g, n, "lambd", 1.5);
    oh_attr_f(g, n, "bias", 1.5);
    oh_expect(g, "y", I32, D(6));

    g = oh_new_graph("negative lambd", 13);
    oh_input(g, "x", F32, D(6));
    n = oh_node(g, "n", "Shrink", "x", "y");
    oh_attr_f(g, n, "lambd", -1.0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "lambd -1 is negative", NULL);
}

static void is_cases(const char *op, int since)
{
    pl_graph *g = oh_new_graph("bool output", 17);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", BOOL, D(2, 3));

    g = oh_new_graph("f64, scalar", 17);
    oh_input(g, "x", F64, SCALAR);
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", BOOL, SCALAR);

    g = oh_new_graph("integers refused", 17);
    oh_input(g, "x", I32, D(2));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i32", NULL);

    char want[64];
    snprintf(want, sizeof want, "no schema for this op (opset %d)", since - 1);
    g = oh_new_graph("before its opset", since - 1);
    oh_input(g, "x", F32, D(3));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, want, NULL);
}

static void c_isnan(void) { is_cases("IsNaN", 9); }

static void c_isinf(void)
{
    is_cases("IsInf", 10);
    pl_graph *g = oh_new_graph("detect flags", 13);
    oh_input(g, "x", F32, D(7));
    pl_nid n = oh_node(g, "n", "IsInf", "x", "y");
    oh_attr_i(g, n, "detect_negative", 0);
    oh_expect(g, "y", BOOL, D(7));
}

static void c_not(void) { unary_cases("Not", BOOL, F32, "f32", 7); }

/* ---- broadcasting ------------------------------------------------------------ */

/* Two-input broadcasting: a broadcast, a scalar, a mismatch, a refused
 * dtype; the output is OUT (BOOL for logical and comparison ops, else the
 * input's). */
static void binary_cases(const char *op, pl_dtype dt, pl_dtype out, pl_dtype bad,
                         const char *bad_name)
{
    pl_graph *g = oh_new_graph("broadcast", 17);
    oh_input(g, "a", dt, D(2, 1, 4));
    oh_input(g, "b", dt, D(3, 1));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", out, D(2, 3, 4));

    g = oh_new_graph("scalar", 17);
    oh_input(g, "a", dt, SCALAR);
    oh_input(g, "b", dt, D(5));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", out, D(5));

    g = oh_new_graph("mismatch", 17);
    oh_input(g, "a", dt, D(2, 3));
    oh_input(g, "b", dt, D(4));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2,3] and [4] cannot be broadcast", NULL);

    char frag[64];
    snprintf(frag, sizeof frag, "input 0 ('a') has dtype %s", bad_name);
    g = oh_new_graph("refused dtype", 17);
    oh_input(g, "a", bad, D(2));
    oh_input(g, "b", bad, D(2));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, frag, NULL);

    g = oh_new_graph("operands differ", 17);
    oh_input(g, "a", dt, D(2));
    oh_input(g, "b", bad, D(2));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('b') has dtype", NULL);
}

static void c_and(void) { binary_cases("And", BOOL, BOOL, F32, "f32"); }
static void c_or(void) { binary_cases("Or", BOOL, BOOL, I64, "i64"); }
static void c_xor(void) { binary_cases("Xor", BOOL, BOOL, U8, "u8"); }

static void order_cases(const char *op)
{
    binary_cases(op, F32, BOOL, BOOL, "bool");
    pl_graph *g = oh_new_graph("integers", 13);
    oh_input(g, "a", I64, D(3, 1));
    oh_input(g, "b", I64, D(1, 4));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", BOOL, D(3, 4));

    g = oh_new_graph("opset 11 has none", 11);
    oh_input(g, "a", F32, D(3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 11)", NULL);
}

static void c_greaterorequal(void) { order_cases("GreaterOrEqual"); }
static void c_lessorequal(void) { order_cases("LessOrEqual"); }

static void c_mod(void)
{
    binary_cases("Mod", I32, I32, BOOL, "bool");
    pl_graph *g = oh_new_graph("float with fmod", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    pl_nid n = oh_node(g, "n", "Mod", "a,b", "y");
    oh_attr_i(g, n, "fmod", 1);
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("float without fmod", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", "Mod", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "fmod must be 1 for floating-point inputs",
                 NULL);
}

static void c_bitshift(void)
{
    pl_graph *g = oh_new_graph("left", 13);
    oh_input(g, "a", U8, D(3, 1));
    oh_input(g, "b", U8, D(4));
    pl_nid n = oh_node(g, "n", "BitShift", "a,b", "y");
    oh_attr_s(g, n, "direction", "LEFT");
    oh_expect(g, "y", U8, D(3, 4));

    g = oh_new_graph("bad direction", 13);
    oh_input(g, "a", U8, D(3));
    oh_input(g, "b", U8, D(3));
    n = oh_node(g, "n", "BitShift", "a,b", "y");
    oh_attr_s(g, n, "direction", "UP");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "direction 'UP' is neither LEFT nor RIGHT", NULL);

    g = oh_new_graph("direction required", 13);
    oh_input(g, "a", U8, D(3));
    oh_input(g, "b", U8, D(3));
    oh_node(g, "n", "BitShift", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "direction", NULL);

    g = oh_new_graph("signed refused", 13);
    oh_input(g, "a", I32, D(3));
    oh_input(g, "b", I32, D(3));
    n = oh_node(g, "n", "BitShift", "a,b", "y");
    oh_attr_s(g, n, "direction", "RIGHT");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i32", NULL);
}

static void c_prelu(void)
{
    pl_graph *g = oh_new_graph("channel slope", 13);
    oh_input(g, "x", F32, D(2, 3, 4, 4));
    oh_input(g, "s", F32, D(3, 1, 1));
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect(g, "y", F32, D(2, 3, 4, 4));

    g = oh_new_graph("scalar slope", 13);
    oh_input(g, "x", F32, D(5));
    oh_input(g, "s", F32, SCALAR);
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect(g, "y", F32, D(5));

    g = oh_new_graph("slope wider than X", 13);
    oh_input(g, "x", F32, D(3));
    oh_input(g, "s", F32, D(2, 3));
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "slope [2,3] does not broadcast to X [3]", NULL);

    g = oh_new_graph("slope mismatch", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "s", F32, D(4));
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "does not broadcast", NULL);

    g = oh_new_graph("integers from opset 9", 8);
    oh_input(g, "x", I32, D(2));
    oh_input(g, "s", I32, D(2));
    oh_node(g, "n", "PRelu", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i32", NULL);
}

/* Variadic Min Max Sum Mean. */
static void variadic_cases(const char *op, bool ints)
{
    pl_graph *g = oh_new_graph("three inputs", 13);
    oh_input(g, "a", F32, D(2, 1, 1));
    oh_input(g, "b", F32, D(3, 1));
    oh_input(g, "c", F32, D(4));
    oh_node(g, "n", op, "a,b,c", "y");
    oh_expect(g, "y", F32, D(2, 3, 4));

    g = oh_new_graph("one input", 13);
    oh_input(g, "a", F32, D(6));
    oh_node(g, "n", op, "a", "y");
    oh_expect(g, "y", F32, D(6));

    g = oh_new_graph("mismatch", 13);
    oh_input(g, "a", F32, D(2));
    oh_input(g, "b", F32, D(2));
    oh_input(g, "c", F32, D(3));
    oh_node(g, "n", op, "a,b,c", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2] and [3] cannot be broadcast", NULL);

    g = oh_new_graph("integers", 13);
    oh_input(g, "a", I64, D(2));
    oh_input(g, "b", I64, D(2));
    oh_node(g, "n", op, "a,b", "y");
    if (ints)
        oh_expect(g, "y", I64, D(2));
    else
        oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i64", NULL);

    g = oh_new_graph("integers before opset 12", 11);
    oh_input(g, "a", I64, D(2));
    oh_node(g, "n", op, "a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype i64", NULL);

    g = oh_new_graph("no input", 13);
    oh_node(g, "n", op, "", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "inputs, got 0", NULL);
}

static void c_min(void) { variadic_cases("Min", true); }
static void c_max(void) { variadic_cases("Max", true); }
static void c_sum(void) { variadic_cases("Sum", false); }
static void c_mean(void) { variadic_cases("Mean", false); }

/* ---- reductions -------------------------------------------------------------- */

static void reduce_cases(const char *op)
{
    pl_graph *g = oh_new_graph("keepdims", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(1));
    oh_expect(g, "y", F32, D(2, 1, 4));

    g = oh_new_graph("no keepdims, negative axes", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(-1, 0));
    oh_attr_i(g, n, "keepdims", 0);
    oh_expect(g, "y", F32, D(3));

    g = oh_new_graph("every axis by default", 13);
    oh_input(g, "x", I32, D(2, 3, 4));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", I32, D(1, 1, 1));

    g = oh_new_graph("axes as input (opset 18)", 18);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "axes", (const int64_t[]){2}, 1);
    n = oh_node(g, "n", op, "x,axes", "y");
    oh_attr_i(g, n, "keepdims", 0);
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("noop with empty axes (opset 18)", 18);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "noop_with_empty_axes", 1);
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("axis out of range", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(2));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = oh_new_graph("axis twice", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(1, -1));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -1 is given twice", NULL);

    g = oh_new_graph("bool refused", 13);
    oh_input(g, "x", BOOL, D(2, 3));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype bool", NULL);
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
    pl_graph *g = oh_new_graph("default axis, keepdims", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", I64, D(1, 3, 4));

    g = oh_new_graph("negative axis, no keepdims", 13);
    oh_input(g, "x", I32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "axis", -1);
    oh_attr_i(g, n, "keepdims", 0);
    oh_attr_i(g, n, "select_last_index", 1);
    oh_expect(g, "y", I64, D(2, 3));

    g = oh_new_graph("axis out of range", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "axis", -3);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -3 is out of range for rank 2", NULL);

    g = oh_new_graph("select_last_index before opset 12", 11);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "select_last_index", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'select_last_index'", NULL);
}

static void c_argmax(void) { arg_cases("ArgMax"); }
static void c_argmin(void) { arg_cases("ArgMin"); }

/* ---- Trilu, CumSum, Size ------------------------------------------------------ */

static void c_trilu(void)
{
    pl_graph *g = oh_new_graph("batched", 14);
    oh_input(g, "x", I64, D(2, 3, 5));
    oh_node(g, "n", "Trilu", "x", "y");
    oh_expect(g, "y", I64, D(2, 3, 5));

    g = oh_new_graph("with k, lower", 14);
    oh_input(g, "x", F32, D(4, 4));
    oh_input(g, "k", I64, SCALAR);
    pl_nid n = oh_node(g, "n", "Trilu", "x,k", "y");
    oh_attr_i(g, n, "upper", 0);
    oh_expect(g, "y", F32, D(4, 4));

    g = oh_new_graph("rank 1", 14);
    oh_input(g, "x", F32, D(4));
    oh_node(g, "n", "Trilu", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input has rank 1, Trilu needs at least 2", NULL);

    g = oh_new_graph("k not a scalar", 14);
    oh_input(g, "x", F32, D(4, 4));
    oh_input(g, "k", I64, D(2));
    oh_node(g, "n", "Trilu", "x,k", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "k must be a scalar", NULL);

    g = oh_new_graph("opset 13 has none", 13);
    oh_input(g, "x", F32, D(4, 4));
    oh_node(g, "n", "Trilu", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 13)", NULL);
}

static void c_cumsum(void)
{
    pl_graph *g = oh_new_graph("axis input", 14);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "a", I32, SCALAR);
    pl_nid n = oh_node(g, "n", "CumSum", "x,a", "y");
    oh_attr_i(g, n, "exclusive", 1);
    oh_attr_i(g, n, "reverse", 1);
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("constant axis", 14);
    oh_input(g, "x", I64, D(5));
    oh_const_i64_scalar(g, "a", -1);
    oh_node(g, "n", "CumSum", "x,a", "y");
    oh_expect(g, "y", I64, D(5));

    g = oh_new_graph("constant axis out of range", 14);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64_scalar(g, "a", 2);
    oh_node(g, "n", "CumSum", "x,a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = oh_new_graph("axis not a scalar", 14);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "a", I64, D(2));
    oh_node(g, "n", "CumSum", "x,a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis must be a scalar", NULL);

    g = oh_new_graph("f32 axis refused", 14);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "a", F32, SCALAR);
    oh_node(g, "n", "CumSum", "x,a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('a') has dtype f32", NULL);
}

static void c_size(void)
{
    pl_graph *g = oh_new_graph("scalar i64", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Size", "x", "y");
    oh_expect(g, "y", I64, SCALAR);

    g = oh_new_graph("unknown dims", 13);
    oh_input(g, "x", BOOL, D(-1, 3));
    oh_node(g, "n", "Size", "x", "y");
    oh_expect(g, "y", I64, SCALAR);

    /* The size is a known value: Reshape to [size] gets a known shape. */
    g = oh_new_graph("known value", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "axes", (const int64_t[]){0}, 1);
    oh_node(g, "n", "Size", "x", "s");
    oh_node(g, "u", "Unsqueeze", "s,axes", "v");
    oh_node(g, "r", "Reshape", "x,v", "y");
    oh_expect(g, "y", F32, D(24));

    g = oh_new_graph("two inputs", 13);
    oh_input(g, "x", F32, D(2));
    oh_input(g, "z", F32, D(2));
    oh_node(g, "n", "Size", "x,z", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 1 input, got 2", NULL);
}

/* ---- main -------------------------------------------------------------------- */

static const oh_case cases[] = {
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
    return oh_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
