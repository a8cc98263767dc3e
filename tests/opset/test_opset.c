/* test_opset.c — shape and dtype inference of the core's opset, op by op.
 * Each case builds a small graph with graph.h, runs pl_opset_infer and
 * checks the output type, or the error and its message. Usage:
 * test_opset OP, where OP names an op (every case of that op runs; a
 * failure names the op and the case), or one of: bert_chain, registry,
 * declared_types, alloc_sweep, unknown_op, all. Linked against the core's
 * object library and the shared harness (tests/opset_harness). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "../failing_allocator.h"
#include "opset_harness.h"

/* ---- elementwise -------------------------------------------------------------- */

static void binary_cases(const char *op)
{
    pl_graph *g = oh_new_graph("broadcast", 13);
    oh_input(g, "a", F32, D(2, 1, 4));
    oh_input(g, "b", F32, D(3, 1));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", F32, D(2, 3, 4));

    g = oh_new_graph("scalar", 13);
    oh_input(g, "a", F32, D(5));
    oh_input(g, "b", F32, SCALAR);
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", F32, D(5));

    g = oh_new_graph("unknown dim", 13);
    oh_input(g, "a", F32, D(-1, 3));
    oh_input(g, "b", F32, D(4, 3));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", F32, D(4, 3));

    g = oh_new_graph("mismatch", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(4));
    oh_node(g, "add1", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "node 'add1' (", op,
                 "): shapes [2,3] and [4] cannot be broadcast", NULL);

    g = oh_new_graph("dtype mismatch", 13);
    oh_input(g, "a", F32, D(2));
    oh_input(g, "b", I64, D(2));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('b') is i64", "type T",
                 NULL);

    g = oh_new_graph("arity", 13);
    oh_input(g, "a", F32, D(2));
    oh_node(g, "n", op, "a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 2 inputs, got 1", NULL);

    g = oh_new_graph("bool refused", 13);
    oh_input(g, "a", BOOL, D(2));
    oh_input(g, "b", BOOL, D(2));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "has dtype bool", NULL);
}

static void case_pow(void)
{
    pl_graph *g = oh_new_graph("mixed types", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", I64, SCALAR);
    oh_node(g, "n", "Pow", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("broadcast", 13);
    oh_input(g, "a", F32, D(4, 1));
    oh_input(g, "b", F32, D(5));
    oh_node(g, "n", "Pow", "a,b", "y");
    oh_expect(g, "y", F32, D(4, 5));

    g = oh_new_graph("bad base dtype", 13);
    oh_input(g, "a", BOOL, D(4));
    oh_input(g, "b", F32, D(4));
    oh_node(g, "n", "Pow", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('a') has dtype bool", NULL);
}

static void compare_cases(const char *op)
{
    pl_graph *g = oh_new_graph("bool output", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", BOOL, D(2, 3));

    g = oh_new_graph("int inputs", 13);
    oh_input(g, "a", I64, D(1, 4));
    oh_input(g, "b", I64, D(3, 1));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect(g, "y", BOOL, D(3, 4));

    g = oh_new_graph("mismatch", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2));
    oh_node(g, "n", op, "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "cannot be broadcast", NULL);
}

static void case_where(void)
{
    pl_graph *g = oh_new_graph("three-way broadcast", 13);
    oh_input(g, "c", BOOL, D(2, 1, 1));
    oh_input(g, "x", F32, D(3, 1));
    oh_input(g, "y", F32, D(4));
    oh_node(g, "n", "Where", "c,x,y", "z");
    oh_expect(g, "z", F32, D(2, 3, 4));

    g = oh_new_graph("condition not bool", 13);
    oh_input(g, "c", F32, D(2));
    oh_input(g, "x", F32, D(2));
    oh_input(g, "y", F32, D(2));
    oh_node(g, "n", "Where", "c,x,y", "z");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('c') has dtype f32", NULL);

    g = oh_new_graph("mismatch", 13);
    oh_input(g, "c", BOOL, D(2));
    oh_input(g, "x", F32, D(3));
    oh_input(g, "y", F32, D(2));
    oh_node(g, "n", "Where", "c,x,y", "z");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [2] and [3] cannot be broadcast",
                 NULL);

    g = oh_new_graph("opset 8 has no Where", 8);
    oh_input(g, "c", BOOL, D(2));
    oh_input(g, "x", F32, D(2));
    oh_input(g, "y", F32, D(2));
    oh_node(g, "n", "Where", "c,x,y", "z");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op (opset 8)", NULL);
}

static void unary_cases(const char *op, bool int_ok)
{
    oh_unary_shape_cases(op, 13, F32, F16);
    pl_graph *g;

    g = oh_new_graph("int dtype", 13);
    oh_input(g, "x", I64, D(3));
    oh_node(g, "n", op, "x", "y");
    if (int_ok)
        oh_expect(g, "y", I64, D(3));
    else
        oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 0 ('x') has dtype i64",
                     NULL);

    g = oh_new_graph("two outputs", 13);
    oh_input(g, "x", F32, D(3));
    oh_node(g, "n", op, "x", "y,z");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 1 output, got 2", NULL);
}

static void case_leakyrelu(void)
{
    unary_cases("LeakyRelu", false);
    pl_graph *g = oh_new_graph("alpha attribute", 13);
    oh_input(g, "x", F32, D(4));
    pl_nid n = oh_node(g, "n", "LeakyRelu", "x", "y");
    oh_attr_f(g, n, "alpha", 0.2);
    oh_expect(g, "y", F32, D(4));

    g = oh_new_graph("alpha of wrong kind", 13);
    oh_input(g, "x", F32, D(4));
    n = oh_node(g, "n", "LeakyRelu", "x", "y");
    oh_attr_i(g, n, "alpha", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "attribute 'alpha' is int, expected float",
                 NULL);
}

static void case_clip(void)
{
    pl_graph *g = oh_new_graph("opset 13 inputs", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "lo", F32, SCALAR);
    oh_input(g, "hi", F32, SCALAR);
    oh_node(g, "n", "Clip", "x,lo,hi", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("only max", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "hi", F32, SCALAR);
    oh_node(g, "n", "Clip", "x,,hi", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("opset 6 attributes", 7);
    oh_input(g, "x", F32, D(5));
    pl_nid n = oh_node(g, "n", "Clip", "x", "y");
    oh_attr_f(g, n, "min", 0.0);
    oh_attr_f(g, n, "max", 6.0);
    oh_expect(g, "y", F32, D(5));

    g = oh_new_graph("attribute at opset 13", 13);
    oh_input(g, "x", F32, D(5));
    n = oh_node(g, "n", "Clip", "x", "y");
    oh_attr_f(g, n, "min", 0.0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'min' (opset 13)",
                 NULL);

    g = oh_new_graph("min not scalar", 13);
    oh_input(g, "x", F32, D(5));
    oh_input(g, "lo", F32, D(2));
    oh_node(g, "n", "Clip", "x,lo", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "min ('lo') must be a scalar", NULL);
}

static void softmax_cases(const char *op)
{
    pl_graph *g = oh_new_graph("default axis", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("negative axis", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "axis", -3);
    oh_expect(g, "y", F32, D(2, 3, 4));

    g = oh_new_graph("axis out of range", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "axis", 2);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2",
                 NULL);

    g = oh_new_graph("opset 11 default axis 1", 11);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", F32, D(2, 3));
}

static void case_identity(void)
{
    unary_cases("Identity", true);
    pl_graph *g = oh_new_graph("bool", 13);
    oh_input(g, "x", BOOL, D(3, 1));
    oh_node(g, "n", "Identity", "x", "y");
    oh_expect(g, "y", BOOL, D(3, 1));
}

static void case_cast(void)
{
    pl_graph *g = oh_new_graph("to int64", 13);
    oh_input(g, "x", F32, D(2, 3));
    pl_nid n = oh_node(g, "n", "Cast", "x", "y");
    oh_attr_i(g, n, "to", 7);
    oh_expect(g, "y", I64, D(2, 3));

    g = oh_new_graph("to float16", 13);
    oh_input(g, "x", I32, D(4));
    n = oh_node(g, "n", "Cast", "x", "y");
    oh_attr_i(g, n, "to", 10);
    oh_expect(g, "y", F16, D(4));

    g = oh_new_graph("missing to", 13);
    oh_input(g, "x", F32, D(4));
    oh_node(g, "n", "Cast", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'to'", NULL);

    g = oh_new_graph("to string", 13);
    oh_input(g, "x", F32, D(4));
    n = oh_node(g, "n", "Cast", "x", "y");
    oh_attr_i(g, n, "to", 8);
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "cast to ONNX data type 8", NULL);
}

static void case_dropout(void)
{
    pl_graph *g = oh_new_graph("inference with mask", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Dropout", "x", "y,mask");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(2, 3));
    oh_check_tensor(g, "mask", BOOL, D(2, 3));
    pl_graph_destroy(g);

    g = oh_new_graph("ratio input", 13);
    oh_input(g, "x", F32, D(4));
    oh_input(g, "r", F32, SCALAR);
    oh_node(g, "n", "Dropout", "x,r", "y");
    oh_expect(g, "y", F32, D(4));

    g = oh_new_graph("opset 7 ratio attribute", 7);
    oh_input(g, "x", F32, D(4));
    pl_nid n = oh_node(g, "n", "Dropout", "x", "y");
    oh_attr_f(g, n, "ratio", 0.1);
    oh_expect(g, "y", F32, D(4));

    g = oh_new_graph("bad ratio", 10);
    oh_input(g, "x", F32, D(4));
    n = oh_node(g, "n", "Dropout", "x", "y");
    oh_attr_f(g, n, "ratio", 1.5);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "ratio 1.5 is outside", NULL);
}

/* ---- neural network ------------------------------------------------------------- */

static void case_matmul(void)
{
    pl_graph *g = oh_new_graph("batched broadcast", 13);
    oh_input(g, "a", F32, D(2, 1, 3, 4));
    oh_input(g, "b", F32, D(5, 4, 6));
    oh_node(g, "n", "MatMul", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 5, 3, 6));

    g = oh_new_graph("vector times matrix", 13);
    oh_input(g, "a", F32, D(4));
    oh_input(g, "b", F32, D(4, 6));
    oh_node(g, "n", "MatMul", "a,b", "y");
    oh_expect(g, "y", F32, D(6));

    g = oh_new_graph("matrix times vector", 13);
    oh_input(g, "a", F32, D(3, 4));
    oh_input(g, "b", F32, D(4));
    oh_node(g, "n", "MatMul", "a,b", "y");
    oh_expect(g, "y", F32, D(3));

    g = oh_new_graph("inner mismatch", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(4, 5));
    oh_node(g, "mm", "MatMul", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'mm' (MatMul): inner dimensions differ: [2,3] x [4,5]", NULL);

    g = oh_new_graph("scalar", 13);
    oh_input(g, "a", F32, SCALAR);
    oh_input(g, "b", F32, D(4, 5));
    oh_node(g, "n", "MatMul", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "rank >= 1", NULL);
}

static void case_gemm(void)
{
    pl_graph *g = oh_new_graph("transposes", 13);
    oh_input(g, "a", F32, D(4, 3));
    oh_input(g, "b", F32, D(5, 4));
    oh_input(g, "c", F32, D(5));
    pl_nid n = oh_node(g, "n", "Gemm", "a,b,c", "y");
    oh_attr_i(g, n, "transA", 1);
    oh_attr_i(g, n, "transB", 1);
    oh_expect(g, "y", F32, D(3, 5));

    g = oh_new_graph("no C", 13);
    oh_input(g, "a", F32, D(3, 4));
    oh_input(g, "b", F32, D(4, 5));
    oh_node(g, "n", "Gemm", "a,b", "y");
    oh_expect(g, "y", F32, D(3, 5));

    g = oh_new_graph("no C at opset 7", 7);
    oh_input(g, "a", F32, D(3, 4));
    oh_input(g, "b", F32, D(4, 5));
    oh_node(g, "n", "Gemm", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 3 inputs, got 2", NULL);

    g = oh_new_graph("bad C", 13);
    oh_input(g, "a", F32, D(3, 4));
    oh_input(g, "b", F32, D(4, 5));
    oh_input(g, "c", F32, D(2, 5));
    oh_node(g, "n", "Gemm", "a,b,c", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "C [2,5] cannot be broadcast to [3,5]",
                 NULL);

    g = oh_new_graph("rank 3", 13);
    oh_input(g, "a", F32, D(1, 3, 4));
    oh_input(g, "b", F32, D(4, 5));
    oh_node(g, "n", "Gemm", "a,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "must be matrices", NULL);
}

static pl_graph *conv_graph(const char *name, const int64_t *x, int xr,
                            const int64_t *w, int wr)
{
    pl_graph *g = oh_new_graph(name, 13);
    oh_input(g, "x", F32, x, xr);
    oh_input(g, "w", F32, w, wr);
    return g;
}

static void case_conv(void)
{
    pl_graph *g = conv_graph("pads and strides", D(1, 3, 32, 32), D(8, 3, 3, 3));
    pl_nid n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_is(g, n, "pads", D(1, 1, 1, 1));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 8, 16, 16));

    g = conv_graph("dilations", D(1, 3, 32, 32), D(8, 3, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_is(g, n, "dilations", D(2, 2));
    oh_expect(g, "y", F32, D(1, 8, 28, 28));

    g = conv_graph("groups", D(2, 8, 10, 10), D(16, 2, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_i(g, n, "group", 4);
    oh_expect(g, "y", F32, D(2, 16, 8, 8));

    g = conv_graph("SAME_UPPER", D(1, 3, 7, 7), D(4, 3, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_s(g, n, "auto_pad", "SAME_UPPER");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 4, 4, 4));

    g = conv_graph("SAME_LOWER", D(1, 3, 8, 5), D(4, 3, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_s(g, n, "auto_pad", "SAME_LOWER");
    oh_expect(g, "y", F32, D(1, 4, 8, 5));

    g = conv_graph("VALID", D(1, 3, 7, 9), D(4, 3, 3, 2));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_s(g, n, "auto_pad", "VALID");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 4, 3, 4));

    g = conv_graph("1-D with bias", D(2, 4, 20), D(6, 4, 5));
    oh_input(g, "b", F32, D(6));
    oh_node(g, "n", "Conv", "x,w,b", "y");
    oh_expect(g, "y", F32, D(2, 6, 16));

    g = conv_graph("channel mismatch", D(1, 3, 8, 8), D(8, 4, 3, 3));
    oh_node(g, "conv1", "Conv", "x,w", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "node 'conv1' (Conv): X [1,3,8,8] has 3 "
                 "channels but W [8,4,3,3] with group 1 expects 4", NULL);

    g = conv_graph("rank mismatch", D(1, 3, 8, 8), D(8, 3, 3));
    oh_node(g, "n", "Conv", "x,w", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "must have the same rank", NULL);

    g = conv_graph("bad auto_pad", D(1, 3, 8, 8), D(8, 3, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_s(g, n, "auto_pad", "SAME");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "auto_pad 'SAME' is not", NULL);

    g = conv_graph("pads of wrong length", D(1, 3, 8, 8), D(8, 3, 3, 3));
    n = oh_node(g, "n", "Conv", "x,w", "y");
    oh_attr_is(g, n, "pads", D(1, 1));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "'pads' has 2 values, expected 4", NULL);

    g = conv_graph("kernel larger than input", D(1, 3, 2, 2), D(8, 3, 3, 3));
    oh_node(g, "n", "Conv", "x,w", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "larger than the padded input", NULL);

    g = conv_graph("bias size", D(1, 3, 8, 8), D(8, 3, 3, 3));
    oh_input(g, "b", F32, D(4));
    oh_node(g, "n", "Conv", "x,w,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "bias [4] must be [8]", NULL);

    g = conv_graph("dynamic batch", D(-1, 3, 8, 8), D(8, 3, 3, 3));
    oh_node(g, "n", "Conv", "x,w", "y");
    oh_expect(g, "y", F32, D(-1, 8, 6, 6));
}

static void case_conv_transpose(void)
{
    pl_graph *g = conv_graph("stride 2", D(1, 8, 4, 4), D(8, 3, 3, 3));
    pl_nid n = oh_node(g, "n", "ConvTranspose", "x,w", "y");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 3, 9, 9));

    g = conv_graph("pads, output_padding, groups", D(1, 8, 4, 4), D(8, 2, 3, 3));
    n = oh_node(g, "n", "ConvTranspose", "x,w", "y");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_attr_is(g, n, "pads", D(1, 1, 1, 1));
    oh_attr_is(g, n, "output_padding", D(1, 1));
    oh_attr_i(g, n, "group", 2);
    oh_expect(g, "y", F32, D(1, 4, 8, 8));

    g = conv_graph("SAME_UPPER", D(1, 8, 5, 5), D(8, 3, 3, 3));
    n = oh_node(g, "n", "ConvTranspose", "x,w", "y");
    oh_attr_s(g, n, "auto_pad", "SAME_UPPER");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 3, 10, 10));

    g = conv_graph("output_shape", D(1, 8, 5, 5), D(8, 3, 3, 3));
    n = oh_node(g, "n", "ConvTranspose", "x,w", "y");
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_attr_is(g, n, "output_shape", D(10, 11));
    oh_expect(g, "y", F32, D(1, 3, 10, 11));

    g = conv_graph("channel mismatch", D(1, 4, 5, 5), D(8, 3, 3, 3));
    oh_node(g, "n", "ConvTranspose", "x,w", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "has 4 channels but W", NULL);
}

static void pool_cases(const char *op)
{
    pl_graph *g = oh_new_graph("kernel and stride", 13);
    oh_input(g, "x", F32, D(1, 3, 32, 32));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(2, 2));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 3, 16, 16));

    g = oh_new_graph("ceil_mode", 13);
    oh_input(g, "x", F32, D(1, 3, 6, 6));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(3, 3));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_attr_i(g, n, "ceil_mode", 1);
    oh_expect(g, "y", F32, D(1, 3, 3, 3));

    g = oh_new_graph("floor mode", 13);
    oh_input(g, "x", F32, D(1, 3, 6, 6));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(3, 3));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_expect(g, "y", F32, D(1, 3, 2, 2));

    g = oh_new_graph("ceil_mode drops a window in the padding", 13);
    oh_input(g, "x", F32, D(1, 1, 5, 5));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(2, 2));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_attr_is(g, n, "pads", D(1, 1, 1, 1));
    oh_attr_i(g, n, "ceil_mode", 1);
    oh_expect(g, "y", F32, D(1, 1, 3, 3));

    g = oh_new_graph("SAME_LOWER", 13);
    oh_input(g, "x", F32, D(2, 4, 7, 5));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(3, 3));
    oh_attr_is(g, n, "strides", D(2, 2));
    oh_attr_s(g, n, "auto_pad", "SAME_LOWER");
    oh_expect(g, "y", F32, D(2, 4, 4, 3));

    g = oh_new_graph("VALID 3-D", 13);
    oh_input(g, "x", F32, D(1, 2, 9, 9, 9));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(3, 3, 3));
    oh_attr_s(g, n, "auto_pad", "VALID");
    oh_expect(g, "y", F32, D(1, 2, 7, 7, 7));

    g = oh_new_graph("kernel_shape missing", 13);
    oh_input(g, "x", F32, D(1, 3, 8, 8));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'kernel_shape'",
                 NULL);

    g = oh_new_graph("kernel_shape rank", 13);
    oh_input(g, "x", F32, D(1, 3, 8, 8));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(3));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "'kernel_shape' has 1 values, expected 2",
                 NULL);

    g = oh_new_graph("ceil_mode before opset 10", 9);
    oh_input(g, "x", F32, D(1, 3, 8, 8));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "kernel_shape", D(2, 2));
    oh_attr_i(g, n, "ceil_mode", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'ceil_mode' (opset 9)",
                 NULL);
}

static void case_maxpool(void)
{
    pool_cases("MaxPool");
    pl_graph *g = oh_new_graph("dilations and indices", 13);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    pl_nid n = oh_node(g, "n", "MaxPool", "x", "y,idx");
    oh_attr_is(g, n, "kernel_shape", D(3, 3));
    oh_attr_is(g, n, "dilations", D(2, 2));
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(1, 3, 6, 6));
    oh_check_tensor(g, "idx", I64, D(1, 3, 6, 6));
    pl_graph_destroy(g);
}

static void global_pool_cases(const char *op)
{
    pl_graph *g = oh_new_graph("2-D", 13);
    oh_input(g, "x", F32, D(2, 3, 7, 7));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", F32, D(2, 3, 1, 1));

    g = oh_new_graph("3-D dynamic", 13);
    oh_input(g, "x", F32, D(-1, 5, 4, -1, 2));
    oh_node(g, "n", op, "x", "y");
    oh_expect(g, "y", F32, D(-1, 5, 1, 1, 1));

    g = oh_new_graph("rank 2", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", op, "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "must have rank >= 3", NULL);
}

static void case_batchnorm(void)
{
    pl_graph *g = oh_new_graph("inference", 13);
    oh_input(g, "x", F32, D(2, 4, 5, 5));
    oh_input(g, "s", F32, D(4));
    oh_input(g, "b", F32, D(4));
    oh_input(g, "m", F32, D(4));
    oh_input(g, "v", F32, D(4));
    oh_node(g, "n", "BatchNormalization", "x,s,b,m,v", "y");
    oh_expect(g, "y", F32, D(2, 4, 5, 5));

    g = oh_new_graph("opset 9", 9);
    oh_input(g, "x", F32, D(2, 4));
    oh_input(g, "s", F32, D(4));
    oh_input(g, "b", F32, D(4));
    oh_input(g, "m", F32, D(4));
    oh_input(g, "v", F32, D(4));
    pl_nid n = oh_node(g, "n", "BatchNormalization", "x,s,b,m,v", "y");
    oh_attr_f(g, n, "epsilon", 1e-3);
    oh_expect(g, "y", F32, D(2, 4));

    g = oh_new_graph("scale size", 13);
    oh_input(g, "x", F32, D(2, 4, 5, 5));
    oh_input(g, "s", F32, D(3));
    oh_input(g, "b", F32, D(4));
    oh_input(g, "m", F32, D(4));
    oh_input(g, "v", F32, D(4));
    oh_node(g, "bn", "BatchNormalization", "x,s,b,m,v", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'bn' (BatchNormalization): scale ('s') is [3], expected [4]",
                 NULL);

    g = oh_new_graph("missing input", 13);
    oh_input(g, "x", F32, D(2, 4, 5, 5));
    oh_input(g, "s", F32, D(4));
    oh_node(g, "n", "BatchNormalization", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 5 inputs, got 2", NULL);
}

static void case_layernorm(void)
{
    pl_graph *g = oh_new_graph("last axis", 17);
    oh_input(g, "x", F32, D(2, 8, 16));
    oh_input(g, "s", F32, D(16));
    oh_input(g, "b", F32, D(16));
    oh_node(g, "n", "LayerNormalization", "x,s,b", "y,mean,inv");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(2, 8, 16));
    oh_check_tensor(g, "mean", F32, D(2, 8, 1));
    oh_check_tensor(g, "inv", F32, D(2, 8, 1));
    pl_graph_destroy(g);

    g = oh_new_graph("axis 1", 17);
    oh_input(g, "x", F32, D(2, 8, 16));
    oh_input(g, "s", F32, D(8, 16));
    pl_nid n = oh_node(g, "n", "LayerNormalization", "x,s", "y");
    oh_attr_i(g, n, "axis", -2);
    oh_expect(g, "y", F32, D(2, 8, 16));

    g = oh_new_graph("scale mismatch", 17);
    oh_input(g, "x", F32, D(2, 8, 16));
    oh_input(g, "s", F32, D(8));
    oh_node(g, "n", "LayerNormalization", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "scale ('s') [8] does not match the normalised shape [16]", NULL);

    g = oh_new_graph("axis out of range", 17);
    oh_input(g, "x", F32, D(2, 8));
    oh_input(g, "s", F32, D(8));
    n = oh_node(g, "n", "LayerNormalization", "x,s", "y");
    oh_attr_i(g, n, "axis", 2);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range", NULL);
}

static void case_instancenorm(void)
{
    pl_graph *g = oh_new_graph("2-D", 13);
    oh_input(g, "x", F32, D(2, 3, 5, 5));
    oh_input(g, "s", F32, D(3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", "InstanceNormalization", "x,s,b", "y");
    oh_expect(g, "y", F32, D(2, 3, 5, 5));

    g = oh_new_graph("1-D", 13);
    oh_input(g, "x", F32, D(2, 3, 5));
    oh_input(g, "s", F32, D(3));
    oh_input(g, "b", F32, D(3));
    oh_node(g, "n", "InstanceNormalization", "x,s,b", "y");
    oh_expect(g, "y", F32, D(2, 3, 5));

    g = oh_new_graph("B size", 13);
    oh_input(g, "x", F32, D(2, 3, 5));
    oh_input(g, "s", F32, D(3));
    oh_input(g, "b", F32, D(2));
    oh_node(g, "n", "InstanceNormalization", "x,s,b", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "B ('b') is [2], expected [3]", NULL);
}

static void reduce_cases(const char *op, bool axes_input_at_13)
{
    pl_graph *g = oh_new_graph("axes attribute, keepdims", 11);
    oh_input(g, "x", F32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(1, -1));
    oh_expect(g, "y", F32, D(2, 1, 1));

    g = oh_new_graph("all axes, no keepdims", 11);
    oh_input(g, "x", F32, D(2, 3, 4));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_i(g, n, "keepdims", 0);
    oh_expect(g, "y", F32, SCALAR);

    g = oh_new_graph("axis out of range", 11);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", op, "x", "y");
    oh_attr_is(g, n, "axes", D(2));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 2 is out of range for rank 2", NULL);

    g = oh_new_graph("opset 13 form", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    if (axes_input_at_13) {
        oh_const_i64(g, "axes", D(0));
        n = oh_node(g, "n", op, "x,axes", "y");
    } else {
        n = oh_node(g, "n", op, "x", "y");
        oh_attr_is(g, n, "axes", D(0));
    }
    oh_attr_i(g, n, "keepdims", 0);
    oh_expect(g, "y", F32, D(3, 4));

    g = oh_new_graph("opset 18 axes input", 18);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "axes", D(-2));
    n = oh_node(g, "n", op, "x,axes", "y");
    oh_attr_i(g, n, "keepdims", 0);
    oh_expect(g, "y", F32, D(2, 4));

    g = oh_new_graph("runtime axes with keepdims", 18);
    oh_input(g, "x", F32, D(2, 1, 4));
    oh_input(g, "axes", I64, D(1));
    oh_node(g, "n", op, "x,axes", "y");
    oh_expect(g, "y", F32, D(-1, 1, -1));
}

/* ---- shape ops ------------------------------------------------------------------- */

static void case_reshape(void)
{
    pl_graph *g = oh_new_graph("-1 and 0", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "s", D(0, -1));
    oh_node(g, "n", "Reshape", "x,s", "y");
    oh_expect(g, "y", F32, D(2, 12));

    g = oh_new_graph("unknown shape values", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_input(g, "s", I64, D(3));
    oh_node(g, "n", "Reshape", "x,s", "y");
    oh_expect(g, "y", F32, D(-1, -1, -1));

    g = oh_new_graph("element count mismatch", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "s", D(4, 2));
    oh_node(g, "r", "Reshape", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'r' (Reshape): cannot reshape [2,3] (6 elements) into [4,2]",
                 NULL);

    g = oh_new_graph("two -1", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "s", D(-1, -1));
    oh_node(g, "n", "Reshape", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "more than one -1", NULL);

    g = oh_new_graph("allowzero", 14);
    oh_input(g, "x", F32, D(0, 3));
    oh_const_i64(g, "s", D(3, 0));
    pl_nid n = oh_node(g, "n", "Reshape", "x,s", "y");
    oh_attr_i(g, n, "allowzero", 1);
    oh_expect(g, "y", F32, D(3, 0));

    g = oh_new_graph("shape of wrong dtype", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "s", F32, D(2));
    oh_node(g, "n", "Reshape", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('s') has dtype f32", NULL);
}

static void case_flatten(void)
{
    pl_graph *g = oh_new_graph("default axis", 13);
    oh_input(g, "x", F32, D(2, 3, 4, 5));
    oh_node(g, "n", "Flatten", "x", "y");
    oh_expect(g, "y", F32, D(2, 60));

    g = oh_new_graph("negative axis", 13);
    oh_input(g, "x", F32, D(2, 3, 4, 5));
    pl_nid n = oh_node(g, "n", "Flatten", "x", "y");
    oh_attr_i(g, n, "axis", -1);
    oh_expect(g, "y", F32, D(24, 5));

    g = oh_new_graph("axis 0", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", "Flatten", "x", "y");
    oh_attr_i(g, n, "axis", 0);
    oh_expect(g, "y", F32, D(1, 6));

    g = oh_new_graph("axis out of range", 13);
    oh_input(g, "x", F32, D(2, 3));
    n = oh_node(g, "n", "Flatten", "x", "y");
    oh_attr_i(g, n, "axis", 3);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 3 is out of range for rank 2", NULL);
}

static void case_transpose(void)
{
    pl_graph *g = oh_new_graph("perm", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    pl_nid n = oh_node(g, "n", "Transpose", "x", "y");
    oh_attr_is(g, n, "perm", D(1, 2, 0));
    oh_expect(g, "y", F32, D(3, 4, 2));

    g = oh_new_graph("default reverses", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_node(g, "n", "Transpose", "x", "y");
    oh_expect(g, "y", F32, D(4, 3, 2));

    g = oh_new_graph("not a permutation", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    n = oh_node(g, "n", "Transpose", "x", "y");
    oh_attr_is(g, n, "perm", D(0, 0, 1));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "perm is not a permutation", NULL);

    g = oh_new_graph("perm length", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    n = oh_node(g, "n", "Transpose", "x", "y");
    oh_attr_is(g, n, "perm", D(1, 0));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "perm has 2 values but the input has rank 3",
                 NULL);
}

static void case_concat(void)
{
    pl_graph *g = oh_new_graph("axis 1", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2, 5));
    oh_input(g, "c", F32, D(2, 1));
    pl_nid n = oh_node(g, "n", "Concat", "a,b,c", "y");
    oh_attr_i(g, n, "axis", 1);
    oh_expect(g, "y", F32, D(2, 9));

    g = oh_new_graph("negative axis", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(4, 3));
    n = oh_node(g, "n", "Concat", "a,b", "y");
    oh_attr_i(g, n, "axis", -2);
    oh_expect(g, "y", F32, D(6, 3));

    g = oh_new_graph("other dim mismatch", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(4, 5));
    n = oh_node(g, "n", "Concat", "a,b", "y");
    oh_attr_i(g, n, "axis", 0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "has dimension 1 = 5, other inputs have 3",
                 NULL);

    g = oh_new_graph("rank mismatch", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_input(g, "b", F32, D(2));
    n = oh_node(g, "n", "Concat", "a,b", "y");
    oh_attr_i(g, n, "axis", 0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "different ranks: [2,3] and [2]", NULL);

    g = oh_new_graph("axis missing", 13);
    oh_input(g, "a", F32, D(2, 3));
    oh_node(g, "n", "Concat", "a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "missing required attribute 'axis'", NULL);
}

static void case_split(void)
{
    pl_graph *g = oh_new_graph("equal parts", 13);
    oh_input(g, "x", F32, D(6, 4));
    oh_node(g, "n", "Split", "x", "a,b,c");
    OK(oh_run(g));
    oh_check_tensor(g, "a", F32, D(2, 4));
    oh_check_tensor(g, "c", F32, D(2, 4));
    pl_graph_destroy(g);

    g = oh_new_graph("split input", 13);
    oh_input(g, "x", F32, D(6, 4));
    oh_const_i64(g, "sp", D(1, 3));
    pl_nid n = oh_node(g, "n", "Split", "x,sp", "a,b");
    oh_attr_i(g, n, "axis", -1);
    OK(oh_run(g));
    oh_check_tensor(g, "a", F32, D(6, 1));
    oh_check_tensor(g, "b", F32, D(6, 3));
    pl_graph_destroy(g);

    g = oh_new_graph("split attribute at opset 11", 11);
    oh_input(g, "x", F32, D(5));
    n = oh_node(g, "n", "Split", "x", "a,b");
    oh_attr_is(g, n, "split", D(2, 3));
    OK(oh_run(g));
    oh_check_tensor(g, "a", F32, D(2));
    oh_check_tensor(g, "b", F32, D(3));
    pl_graph_destroy(g);

    g = oh_new_graph("sizes do not add up", 13);
    oh_input(g, "x", F32, D(6));
    oh_const_i64(g, "sp", D(1, 2));
    oh_node(g, "n", "Split", "x,sp", "a,b");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "split sizes add up to 3 but axis 0 has 6",
                 NULL);

    g = oh_new_graph("uneven", 13);
    oh_input(g, "x", F32, D(7));
    oh_node(g, "n", "Split", "x", "a,b");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "does not split evenly", NULL);

    g = oh_new_graph("split attribute at opset 13", 13);
    oh_input(g, "x", F32, D(5));
    n = oh_node(g, "n", "Split", "x", "a,b");
    oh_attr_is(g, n, "split", D(2, 3));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'split' (opset 13)",
                 NULL);
}

static void case_slice(void)
{
    pl_graph *g = oh_new_graph("negative and clamped", 13);
    oh_input(g, "x", F32, D(10, 20));
    oh_const_i64(g, "st", D(1, -5));
    oh_const_i64(g, "en", D(1000, INT64_MAX));
    oh_node(g, "n", "Slice", "x,st,en", "y");
    oh_expect(g, "y", F32, D(9, 5));

    g = oh_new_graph("axes and steps", 13);
    oh_input(g, "x", F32, D(10, 20, 30));
    oh_const_i64(g, "st", D(0, 29));
    oh_const_i64(g, "en", D(20, -31));
    oh_const_i64(g, "ax", D(-2, 2));
    oh_const_i64(g, "sp", D(3, -2));
    oh_node(g, "n", "Slice", "x,st,en,ax,sp", "y");
    oh_expect(g, "y", F32, D(10, 7, 15));

    g = oh_new_graph("opset 9 attributes", 9);
    oh_input(g, "x", F32, D(10, 20));
    pl_nid n = oh_node(g, "n", "Slice", "x", "y");
    oh_attr_is(g, n, "starts", D(2));
    oh_attr_is(g, n, "ends", D(-2));
    oh_attr_is(g, n, "axes", D(1));
    oh_expect(g, "y", F32, D(10, 16));

    g = oh_new_graph("runtime bounds", 13);
    oh_input(g, "x", F32, D(10, 20));
    oh_input(g, "st", I64, D(1));
    oh_input(g, "en", I64, D(1));
    oh_const_i64(g, "ax", D(1));
    oh_node(g, "n", "Slice", "x,st,en,ax", "y");
    oh_expect(g, "y", F32, D(10, -1));

    g = oh_new_graph("zero step", 13);
    oh_input(g, "x", F32, D(10));
    oh_const_i64(g, "st", D(0));
    oh_const_i64(g, "en", D(5));
    oh_const_i64(g, "ax", D(0));
    oh_const_i64(g, "sp", D(0));
    oh_node(g, "n", "Slice", "x,st,en,ax,sp", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "step on axis 0 is 0", NULL);

    g = oh_new_graph("length mismatch", 13);
    oh_input(g, "x", F32, D(10));
    oh_const_i64(g, "st", D(0, 1));
    oh_const_i64(g, "en", D(5));
    oh_node(g, "n", "Slice", "x,st,en", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "different lengths", NULL);
}

static void case_squeeze(void)
{
    pl_graph *g = oh_new_graph("axes input", 13);
    oh_input(g, "x", F32, D(1, 3, 1, 4));
    oh_const_i64(g, "ax", D(0, -2));
    oh_node(g, "n", "Squeeze", "x,ax", "y");
    oh_expect(g, "y", F32, D(3, 4));

    g = oh_new_graph("all ones", 13);
    oh_input(g, "x", F32, D(1, 3, 1, 4));
    oh_node(g, "n", "Squeeze", "x", "y");
    oh_expect(g, "y", F32, D(3, 4));

    g = oh_new_graph("axes attribute at opset 11", 11);
    oh_input(g, "x", F32, D(1, 3, 1));
    pl_nid n = oh_node(g, "n", "Squeeze", "x", "y");
    oh_attr_is(g, n, "axes", D(-1));
    oh_expect(g, "y", F32, D(1, 3));

    g = oh_new_graph("not size 1", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "ax", D(1));
    oh_node(g, "n", "Squeeze", "x,ax", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "cannot squeeze axis 1 of [2,3]", NULL);

    g = oh_new_graph("axes attribute at opset 13", 13);
    oh_input(g, "x", F32, D(1, 3));
    n = oh_node(g, "n", "Squeeze", "x", "y");
    oh_attr_is(g, n, "axes", D(0));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'axes'", NULL);
}

static void case_unsqueeze(void)
{
    pl_graph *g = oh_new_graph("axes input", 13);
    oh_input(g, "x", F32, D(3, 4));
    oh_const_i64(g, "ax", D(0, -1));
    oh_node(g, "n", "Unsqueeze", "x,ax", "y");
    oh_expect(g, "y", F32, D(1, 3, 4, 1));

    g = oh_new_graph("scalar", 13);
    oh_input(g, "x", F32, SCALAR);
    oh_const_i64(g, "ax", D(0));
    oh_node(g, "n", "Unsqueeze", "x,ax", "y");
    oh_expect(g, "y", F32, D(1));

    g = oh_new_graph("axes attribute at opset 12", 12);
    oh_input(g, "x", F32, D(3, 4));
    pl_nid n = oh_node(g, "n", "Unsqueeze", "x", "y");
    oh_attr_is(g, n, "axes", D(1));
    oh_expect(g, "y", F32, D(3, 1, 4));

    g = oh_new_graph("duplicate axes", 13);
    oh_input(g, "x", F32, D(3));
    oh_const_i64(g, "ax", D(0, -3));
    oh_node(g, "n", "Unsqueeze", "x,ax", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis -3 is given twice", NULL);

    g = oh_new_graph("axes missing", 13);
    oh_input(g, "x", F32, D(3));
    oh_node(g, "n", "Unsqueeze", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "expects 2 inputs, got 1", NULL);
}

static void case_gather(void)
{
    pl_graph *g = oh_new_graph("embedding", 13);
    oh_input(g, "x", F32, D(100, 16));
    oh_input(g, "i", I64, D(2, 8));
    oh_node(g, "n", "Gather", "x,i", "y");
    oh_expect(g, "y", F32, D(2, 8, 16));

    g = oh_new_graph("scalar index, negative axis", 13);
    oh_input(g, "x", F32, D(3, 4, 5));
    oh_const_i64_scalar(g, "i", 2);
    pl_nid n = oh_node(g, "n", "Gather", "x,i", "y");
    oh_attr_i(g, n, "axis", -2);
    oh_expect(g, "y", F32, D(3, 5));

    g = oh_new_graph("index out of range", 13);
    oh_input(g, "x", F32, D(3, 4));
    oh_const_i64(g, "i", D(0, 4));
    n = oh_node(g, "n", "Gather", "x,i", "y");
    oh_attr_i(g, n, "axis", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "index 4 is out of range for axis 1 of size 4", NULL);

    g = oh_new_graph("float indices", 13);
    oh_input(g, "x", F32, D(3, 4));
    oh_input(g, "i", F32, D(2));
    oh_node(g, "n", "Gather", "x,i", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 ('i') has dtype f32", NULL);
}

static void case_constant(void)
{
    pl_graph *g = oh_new_graph("tensor value", 13);
    int64_t dims[2] = {2, 3};
    float data[6] = {0};
    pl_nid n = oh_node(g, "n", "Constant", "", "y");
    OK(pl_graph_attr_tensor(g, n, "value", F32, 2, dims, data, sizeof data));
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("value_ints", 13);
    n = oh_node(g, "n", "Constant", "", "y");
    oh_attr_is(g, n, "value_ints", D(1, 2, 3, 4));
    oh_expect(g, "y", I64, D(4));

    g = oh_new_graph("value_float", 13);
    n = oh_node(g, "n", "Constant", "", "y");
    oh_attr_f(g, n, "value_float", 1.5);
    oh_expect(g, "y", F32, SCALAR);

    g = oh_new_graph("two values", 13);
    n = oh_node(g, "n", "Constant", "", "y");
    oh_attr_f(g, n, "value_float", 1.5);
    oh_attr_i(g, n, "value_int", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "both given", NULL);

    g = oh_new_graph("no value", 13);
    oh_node(g, "n", "Constant", "", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "no value attribute", NULL);
}

static void case_shape(void)
{
    pl_graph *g = oh_new_graph("rank 3", 13);
    oh_input(g, "x", F32, D(2, -1, 4));
    oh_node(g, "n", "Shape", "x", "y");
    oh_expect(g, "y", I64, D(3));

    g = oh_new_graph("start and end (opset 15)", 15);
    oh_input(g, "x", F32, D(2, 3, 4, 5));
    pl_nid n = oh_node(g, "n", "Shape", "x", "y");
    oh_attr_i(g, n, "start", 1);
    oh_attr_i(g, n, "end", -1);
    oh_expect(g, "y", I64, D(2));

    g = oh_new_graph("unknown rank", 13);
    oh_input(g, "x", F32, UNRANKED);
    oh_node(g, "n", "Shape", "x", "y");
    oh_expect(g, "y", I64, D(-1));

    g = oh_new_graph("start before opset 15", 13);
    oh_input(g, "x", F32, D(2));
    n = oh_node(g, "n", "Shape", "x", "y");
    oh_attr_i(g, n, "start", 1);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "unknown attribute 'start'", NULL);
}

static void case_expand(void)
{
    pl_graph *g = oh_new_graph("broadcast up", 13);
    oh_input(g, "x", F32, D(3, 1));
    oh_const_i64(g, "s", D(2, 1, 6));
    oh_node(g, "n", "Expand", "x,s", "y");
    oh_expect(g, "y", F32, D(2, 3, 6));

    g = oh_new_graph("shape smaller than input", 13);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "s", D(1, 4));
    oh_node(g, "n", "Expand", "x,s", "y");
    oh_expect(g, "y", F32, D(2, 3, 4));

    g = oh_new_graph("runtime shape", 13);
    oh_input(g, "x", F32, D(3, 1));
    oh_input(g, "s", I64, D(3));
    oh_node(g, "n", "Expand", "x,s", "y");
    oh_expect(g, "y", F32, D(-1, 3, -1));

    g = oh_new_graph("incompatible", 13);
    oh_input(g, "x", F32, D(3, 2));
    oh_const_i64(g, "s", D(3, 4));
    oh_node(g, "n", "Expand", "x,s", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "shapes [3,2] and [3,4] cannot be broadcast",
                 NULL);
}

static void case_pad(void)
{
    pl_graph *g = oh_new_graph("pads input", 13);
    oh_input(g, "x", F32, D(1, 3, 4, 4));
    oh_const_i64(g, "p", D(0, 0, 1, 2, 0, 0, 3, 4));
    oh_node(g, "n", "Pad", "x,p", "y");
    oh_expect(g, "y", F32, D(1, 3, 8, 10));

    g = oh_new_graph("negative pads crop", 13);
    oh_input(g, "x", F32, D(5, 5));
    oh_const_i64(g, "p", D(-1, 0, -1, 2));
    pl_nid n = oh_node(g, "n", "Pad", "x,p", "y");
    oh_attr_s(g, n, "mode", "reflect");
    oh_expect(g, "y", F32, D(3, 7));

    g = oh_new_graph("opset 2 attributes", 7);
    oh_input(g, "x", F32, D(2, 2));
    n = oh_node(g, "n", "Pad", "x", "y");
    oh_attr_is(g, n, "pads", D(1, 1, 1, 1));
    oh_attr_f(g, n, "value", 0.5);
    oh_expect(g, "y", F32, D(4, 4));

    g = oh_new_graph("opset 18 axes", 18);
    oh_input(g, "x", F32, D(2, 3, 4));
    oh_const_i64(g, "p", D(1, 1));
    oh_const_i64(g, "ax", D(-1));
    oh_node(g, "n", "Pad", "x,p,,ax", "y");
    oh_expect(g, "y", F32, D(2, 3, 6));

    g = oh_new_graph("pads length", 13);
    oh_input(g, "x", F32, D(2, 2));
    oh_const_i64(g, "p", D(1, 1));
    oh_node(g, "n", "Pad", "x,p", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "pads has 2 values, expected 4", NULL);

    g = oh_new_graph("bad mode", 13);
    oh_input(g, "x", F32, D(2, 2));
    oh_const_i64(g, "p", D(1, 1, 1, 1));
    n = oh_node(g, "n", "Pad", "x,p", "y");
    oh_attr_s(g, n, "mode", "mirror");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "mode 'mirror'", NULL);
}

static void case_resize(void)
{
    pl_graph *g = oh_new_graph("scales", 13);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    oh_const_f32(g, "sc", (const float[]){1, 1, 2, 1.5f}, 4);
    oh_node(g, "n", "Resize", "x,,sc", "y");
    oh_expect(g, "y", F32, D(1, 3, 20, 15));

    /* tf2onnx writes out/in as an f32 scale: 40/24 is 1.6666666f, and 24 x
     * that is 39.9999991 exactly but 40 in f32, as ONNX Runtime and
     * TensorFlow size it; 10 x 0.29f is 2.9000001 either way. */
    g = oh_new_graph("f32 scale product", 15);
    oh_input(g, "x", F32, D(1, 3, 24, 10));
    oh_const_f32(g, "sc", (const float[]){1, 1, 40.0f / 24.0f, 0.29f}, 4);
    oh_node(g, "n", "Resize", "x,,sc", "y");
    oh_expect(g, "y", F32, D(1, 3, 40, 2));

    g = oh_new_graph("sizes", 13);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    oh_const_i64(g, "sz", D(1, 3, 7, 9));
    pl_nid n = oh_node(g, "n", "Resize", "x,,,sz", "y");
    oh_attr_s(g, n, "mode", "linear");
    oh_expect(g, "y", F32, D(1, 3, 7, 9));

    g = oh_new_graph("opset 11 empty scales", 11);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    oh_const_f32(g, "roi", (const float[]){0}, 0);
    oh_const_f32(g, "sc", (const float[]){0}, 0);
    oh_const_i64(g, "sz", D(1, 3, 5, 5));
    oh_node(g, "n", "Resize", "x,roi,sc,sz", "y");
    oh_expect(g, "y", F32, D(1, 3, 5, 5));

    g = oh_new_graph("opset 10", 10);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    oh_const_f32(g, "sc", (const float[]){1, 1, 0.5f, 0.5f}, 4);
    oh_node(g, "n", "Resize", "x,sc", "y");
    oh_expect(g, "y", F32, D(1, 1, 2, 2));

    g = oh_new_graph("scales length", 13);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    oh_const_f32(g, "sc", (const float[]){2, 2}, 2);
    oh_node(g, "n", "Resize", "x,,sc", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "scales has 2 values for rank 4", NULL);

    g = oh_new_graph("neither", 13);
    oh_input(g, "x", F32, D(1, 3, 10, 10));
    oh_node(g, "n", "Resize", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "neither scales nor sizes", NULL);
}

static void case_constant_of_shape(void)
{
    pl_graph *g = oh_new_graph("from constant", 13);
    oh_const_i64(g, "s", D(2, 3));
    oh_node(g, "n", "ConstantOfShape", "s", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("int64 value", 13);
    oh_const_i64(g, "s", D(4));
    pl_nid n = oh_node(g, "n", "ConstantOfShape", "s", "y");
    int64_t one = 1, dims1[1] = {1};
    OK(pl_graph_attr_tensor(g, n, "value", I64, 1, dims1, &one, sizeof one));
    oh_expect(g, "y", I64, D(4));

    g = oh_new_graph("runtime shape", 13);
    oh_input(g, "s", I64, D(3));
    oh_node(g, "n", "ConstantOfShape", "s", "y");
    oh_expect(g, "y", F32, D(-1, -1, -1));
}

static void case_range(void)
{
    pl_graph *g = oh_new_graph("ints", 13);
    oh_const_i64_scalar(g, "a", 0);
    oh_const_i64_scalar(g, "b", 10);
    oh_const_i64_scalar(g, "c", 3);
    oh_node(g, "n", "Range", "a,b,c", "y");
    oh_expect(g, "y", I64, D(4));

    g = oh_new_graph("runtime", 13);
    oh_input(g, "a", I64, SCALAR);
    oh_input(g, "b", I64, SCALAR);
    oh_input(g, "c", I64, SCALAR);
    oh_node(g, "n", "Range", "a,b,c", "y");
    oh_expect(g, "y", I64, D(-1));

    g = oh_new_graph("empty", 13);
    oh_const_i64_scalar(g, "a", 5);
    oh_const_i64_scalar(g, "b", 1);
    oh_const_i64_scalar(g, "c", 1);
    oh_node(g, "n", "Range", "a,b,c", "y");
    oh_expect(g, "y", I64, D(0));
}

/* PyTorch's F.pad (opset 11 and later) computes Pad's pads from its own
 * argument: Concat with zeros, Reshape to [-1, 2], Slice reversing the
 * rows, Transpose, Reshape to [-1], Cast. The values pass through the
 * rank-2 steps, and the Pad reads a folded constant (a kernel needs its
 * pads when it is made); before, the Pad's output shape was unknown and
 * cpu refused it ("output shape not fully known"). */
static void case_fold_pad_table(void)
{
    pl_graph *g = oh_new_graph("F.pad's table", 13);
    oh_input(g, "x", F32, D(1, 3, 8, 8));
    oh_const_i64(g, "given", D(1, 1, 2, 2));
    oh_const_i64(g, "zeros", D(0, 0, 0, 0));
    oh_const_i64(g, "pairs", D(-1, 2));
    oh_const_i64(g, "st", D(-1));
    oh_const_i64(g, "en", D(INT64_MIN + 1));
    oh_const_i64(g, "ax", D(0));
    oh_const_i64(g, "sp", D(-1));
    oh_const_i64(g, "flat", D(-1));
    pl_nid cat = oh_node(g, "cat", "Concat", "given,zeros", "c");
    oh_attr_i(g, cat, "axis", 0);
    oh_node(g, "r1", "Reshape", "c,pairs", "r");
    oh_node(g, "rev", "Slice", "r,st,en,ax,sp", "s");
    pl_nid tr = oh_node(g, "tr", "Transpose", "s", "t");
    oh_attr_is(g, tr, "perm", D(1, 0));
    oh_node(g, "r2", "Reshape", "t,flat", "p");
    pl_nid cast = oh_node(g, "cast", "Cast", "p", "q");
    oh_attr_i(g, cast, "to", 7);
    oh_node(g, "pad", "Pad", "x,q", "y");
    OK(oh_run(g));
    oh_check_tensor(g, "s", I64, D(4, 2));
    oh_check_tensor(g, "y", F32, D(1, 3, 12, 10));
    const pl_graph_node *pad = pl_graph_get_node(g, pl_graph_find_node(g, "pad"));
    const pl_graph_tensor *pads = pl_graph_get_tensor(g, pad->inputs[1]);
    static const int64_t want[8] = {0, 0, 2, 1, 0, 0, 2, 1};
    if (pads->data == NULL || pads->nbytes != sizeof want || memcmp(pads->data, want, sizeof want))
        oh_fail(__LINE__, "Pad reads '%s', %s", pads->name,
                pads->data == NULL ? "not a constant" : "a constant of other values");
    pl_graph_destroy(g);
}

static void case_tile(void)
{
    pl_graph *g = oh_new_graph("repeats", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "r", D(2, 1));
    oh_node(g, "n", "Tile", "x,r", "y");
    oh_expect(g, "y", F32, D(4, 3));

    g = oh_new_graph("runtime repeats", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_input(g, "r", I64, D(2));
    oh_node(g, "n", "Tile", "x,r", "y");
    oh_expect(g, "y", F32, D(-1, -1));

    g = oh_new_graph("repeats length", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "r", D(2));
    oh_node(g, "n", "Tile", "x,r", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "repeats has 1 values for rank 2", NULL);
}

/* ---- whole-graph cases ------------------------------------------------------------ */

/* x:[2,8,16] -> Shape -> Gather(0) -> Unsqueeze -> Concat([8,4,4]) ->
 * Reshape(x) gives [2,8,4,4], as in BERT exported by PyTorch. */
static void bert_chain_graph(pl_graph **out, int64_t batch, const char *sym)
{
    pl_graph *g = oh_new_graph("bert chain", 13);
    const char *params[3] = {sym, NULL, NULL};
    oh_input_sym(g, "x", F32, D(batch, 8, 16), params);
    oh_const_i64_scalar(g, "zero", 0);
    oh_const_i64(g, "ax0", D(0));
    oh_const_i64(g, "tail", D(8, 4, 4));
    oh_node(g, "shape", "Shape", "x", "s");
    oh_node(g, "gather", "Gather", "s,zero", "b");
    oh_node(g, "unsq", "Unsqueeze", "b,ax0", "b1");
    pl_nid n = oh_node(g, "concat", "Concat", "b1,tail", "target");
    oh_attr_i(g, n, "axis", 0);
    oh_node(g, "reshape", "Reshape", "x,target", "y");
    *out = g;
}

static void case_bert_chain(void)
{
    pl_graph *g;
    bert_chain_graph(&g, 2, NULL);
    oh_expect(g, "y", F32, D(2, 8, 4, 4));

    /* A symbolic batch stays unknown but the rest is still computed, and
     * the chain's Cast of the shape keeps the values. */
    bert_chain_graph(&g, -1, "batch");
    pl_nid n = oh_node(g, "cast", "Cast", "target", "target32");
    oh_attr_i(g, n, "to", 6);
    n = oh_node(g, "cast_back", "Cast", "target32", "target64");
    oh_attr_i(g, n, "to", 7);
    oh_node(g, "reshape2", "Reshape", "x,target64", "y2");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(-1, 8, 4, 4));
    oh_check_tensor(g, "y2", F32, D(-1, 8, 4, 4));
    pl_graph_destroy(g);

    /* Arithmetic on shape values: [batch*8, 16] through Mul and Concat. */
    g = oh_new_graph("arithmetic", 13);
    oh_input(g, "x", F32, D(3, 8, 16));
    oh_const_i64(g, "i0", D(0));
    oh_const_i64(g, "i1", D(1));
    oh_const_i64(g, "i2", D(2));
    oh_node(g, "shape", "Shape", "x", "s");
    oh_node(g, "g0", "Gather", "s,i0", "d0");
    oh_node(g, "g1", "Gather", "s,i1", "d1");
    oh_node(g, "g2", "Gather", "s,i2", "d2");
    oh_node(g, "mul", "Mul", "d0,d1", "d01");
    pl_nid c = oh_node(g, "concat", "Concat", "d01,d2", "target");
    oh_attr_i(g, c, "axis", 0);
    oh_node(g, "reshape", "Reshape", "x,target", "y");
    oh_expect(g, "y", F32, D(24, 16));

    /* Slice of a shape and Equal/Where picking a value. */
    g = oh_new_graph("slice and where", 13);
    oh_input(g, "x", F32, D(4, 6, 2));
    oh_const_i64(g, "st", D(1));
    oh_const_i64(g, "en", D(3));
    oh_const_i64(g, "minus1", D(-1, -1));
    oh_const_i64(g, "twelve", D(12, 1));
    oh_node(g, "shape", "Shape", "x", "s");
    oh_node(g, "slice", "Slice", "s,st,en", "hw");
    oh_node(g, "eq", "Equal", "hw,minus1", "cond");
    oh_node(g, "where", "Where", "cond,twelve,hw", "t2");
    oh_const_i64(g, "lead", D(4));
    c = oh_node(g, "concat", "Concat", "lead,t2", "target");
    oh_attr_i(g, c, "axis", 0);
    oh_node(g, "reshape", "Reshape", "x,target", "y");
    oh_expect(g, "y", F32, D(4, 6, 2));

    /* tf2onnx's Einsum: the product of some dims through ReduceProd, the
     * larger of two shapes' dims through Max (x [2,3,5] -> [6, 5]). */
    g = oh_new_graph("reduceprod and max", 13);
    oh_input(g, "x", F32, D(2, 3, 5));
    oh_input(g, "w", F32, D(1, 1, 5));
    oh_const_i64(g, "i01", D(0, 1));
    oh_const_i64(g, "i2", D(2));
    oh_node(g, "shape", "Shape", "x", "s");
    oh_node(g, "shape_w", "Shape", "w", "sw");
    oh_node(g, "g01", "Gather", "s,i01", "d01");
    n = oh_node(g, "prod", "ReduceProd", "d01", "lead");
    oh_attr_i(g, n, "keepdims", 1);
    oh_node(g, "g2", "Gather", "s,i2", "d2");
    oh_node(g, "g2w", "Gather", "sw,i2", "d2w");
    oh_node(g, "max", "Max", "d2,d2w", "last");
    c = oh_node(g, "concat", "Concat", "lead,last", "target");
    oh_attr_i(g, c, "axis", 0);
    oh_node(g, "reshape", "Reshape", "x,target", "y");
    oh_expect(g, "y", F32, D(6, 5));
}

static void case_declared_types(void)
{
    /* A declared (value_info) type fills an unknown part of a graph
     * output when the graph's inputs have known shapes (the model's
     * contract)... */
    pl_graph *g = oh_new_graph("fills unknown", 13);
    oh_input(g, "x", F32, D(6));
    oh_input(g, "s", I64, D(2));
    oh_node(g, "r", "Reshape", "x,s", "y");
    pl_tid y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F32, 2, (const int64_t[]){2, -1}, NULL));
    oh_expect(g, "y", F32, D(2, -1));
    /* ...but not when an input's dim is open: the declared one is the size
     * the export traced (PyThaiNLP's thai2rom decoder declares [1, 11] for
     * an output as long as its open input), and the session computes it. */
    g = oh_new_graph("open input", 13);
    oh_input(g, "x", F32, D(-1, 3));
    oh_node(g, "n", "Relu", "x", "y");
    y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F32, 2, (const int64_t[]){5, -1}, NULL));
    oh_expect(g, "y", F32, D(-1, 3));

    /* ...a shape it contradicts gives way to the inferred one (ONNX
     * Runtime's lenient merge: exporters leave stale value_info), and the
     * graph notes both; a dtype conflict is an error. */
    static const struct {
        int ndim;
        int64_t dims[2];
        const char *note;
    } conflicts[] = {
        {2, {2, 4}, "output 'y' of node 'relu1' is declared [2,4] but inferred [2,3]: the "
                    "inferred shape is used"},
        {1, {6}, "output 'y' of node 'relu1' is declared [6] but inferred [2,3]"},
    };
    for (size_t k = 0; k < sizeof conflicts / sizeof conflicts[0]; k++) {
        g = oh_new_graph("conflict", 13);
        oh_input(g, "x", F32, D(2, 3));
        oh_node(g, "relu1", "Relu", "x", "y");
        y = pl_graph_find_tensor(g, "y");
        OK(pl_graph_set_type(g, y, F32, conflicts[k].ndim, conflicts[k].dims, NULL));
        pl_status *st = oh_run(g);
        if (st != NULL)
            FAIL("inference failed: %s", pl_status_message(st));
        pl_status_free(st);
        oh_check_tensor(g, "y", F32, D(2, 3));
        if (pl_graph_note_count(g) != 1 || strstr(pl_graph_note_at(g, 0), conflicts[k].note) == NULL)
            FAIL("note %zu: %s", pl_graph_note_count(g),
                 pl_graph_note_count(g) ? pl_graph_note_at(g, 0) : "(none)");
        pl_graph_destroy(g);
    }

    g = oh_new_graph("dtype conflict", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Relu", "x", "y");
    y = pl_graph_find_tensor(g, "y");
    OK(pl_graph_set_type(g, y, F16, -1, NULL, NULL));
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "declared f16 but inferred f32", NULL);

    /* ...on a graph output: elsewhere the declared dtype is an exporter's
     * value_info, which gives way to the inferred one, noted (a float16
     * conversion's stale f16 for what a Cast makes f32). */
    g = oh_new_graph("stale value_info dtype", 13);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "cast1", "Cast", "x", "y");
    oh_attr_i(g, pl_graph_find_node(g, "cast1"), "to", 1);
    oh_node(g, "relu2", "Relu", "y", "z");
    pl_graph_clear_outputs(g);
    OK(pl_graph_add_output(g, pl_graph_find_tensor(g, "z")));
    OK(pl_graph_set_type(g, pl_graph_find_tensor(g, "y"), F16, 2, (const int64_t[]){2, 3}, NULL));
    pl_status *st = oh_run(g);
    if (st != NULL)
        FAIL("inference failed: %s", pl_status_message(st));
    pl_status_free(st);
    oh_check_tensor(g, "y", F32, D(2, 3));
    oh_check_tensor(g, "z", F32, D(2, 3));
    if (pl_graph_note_count(g) != 1 ||
        strstr(pl_graph_note_at(g, 0), "output 'y' of node 'cast1' is declared f16 but inferred "
                                       "f32: the inferred type is used") == NULL)
        FAIL("note %zu: %s", pl_graph_note_count(g),
             pl_graph_note_count(g) ? pl_graph_note_at(g, 0) : "(none)");
    pl_graph_destroy(g);
}

static void case_unknown_op(void)
{
    pl_graph *g = oh_new_graph("custom domain", 13);
    OK(pl_graph_set_opset(g, "com.acme", 1));
    oh_input(g, "x", F32, D(2));
    oh_node_in(g, "x1", "FooOp", "com.acme", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                 "node 'x1' (FooOp, domain 'com.acme'): no schema for this op (opset 1)",
                 NULL);

    g = oh_new_graph("default domain", 13);
    oh_input(g, "x", F32, D(2));
    oh_node(g, "x1", "NoSuchOp", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                 "node 'x1' (NoSuchOp): no schema for this op (opset 13)", NULL);

    /* Opset 6 is converted to 7 (tests/opset_upgrade): Relu is there,
     * MaxRoiPool is not, and the error says from which opset it came. */
    g = oh_new_graph("opset 6 converted", 6);
    oh_input(g, "x", F32, D(2));
    oh_node(g, "n", "Relu", "x", "y");
    oh_expect(g, "y", F32, D(2));

    g = oh_new_graph("opset 6 without a schema", 6);
    oh_input(g, "x", F32, D(1, 1, 2, 2));
    oh_node(g, "n", "MaxRoiPool", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED,
                    "node 'n' (MaxRoiPool): no schema for this op (opset 7, converted from "
                    "opset 6)",
                    NULL);

    g = oh_new_graph("no import defaults to 13", 0);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "ax", D(0));
    oh_node(g, "n", "Unsqueeze", "x,ax", "y");
    oh_expect(g, "y", F32, D(1, 2, 3));
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
    oh_cur_case = "register and find";
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
    OK(pl_opset_register(set, &s, 1, PL_SCHEMA_COPY));
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

    oh_cur_case = "duplicate refused";
    strcpy(name, "FooOp");
    strcpy(domain, "com.acme");
    pl_status *st = pl_opset_register(set, &s, 1, PL_SCHEMA_COPY);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT ||
        !strstr(pl_status_message(st), "already registered"))
        FAIL("duplicate: %s", pl_status_message(st));
    pl_status_free(st);

    oh_cur_case = "malformed refused";
    pl_op_schema bad = s;
    bad.max_inputs = 0;
    bad.min_inputs = 2;
    st = pl_opset_register(set, &bad, 1, PL_SCHEMA_COPY);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT)
        FAIL("malformed schema accepted");
    pl_status_free(st);

    /* Built-in and registered schemas share one registry and one way in:
     * a built-in schema registered again is a duplicate like any other. */
    oh_cur_case = "built-in duplicate refused";
    const pl_op_schema *add = pl_opset_find(set, "", "Add", 13);
    if (add == NULL)
        FAIL("no built-in Add");
    st = pl_opset_register(set, add, 1, PL_SCHEMA_COPY);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT ||
        !strstr(pl_status_message(st), "already registered"))
        FAIL("built-in re-registered: %s", pl_status_message(st));
    pl_status_free(st);

    /* A table is added whole or not at all. */
    oh_cur_case = "table all or nothing";
    size_t n_now = pl_opset_count(set);
    pl_op_schema table[3] = {s, s, s};
    table[0].name = "BarOp";
    table[1].name = "BazOp";
    table[2].name = "BarOp"; /* repeats table[0] */
    st = pl_opset_register(set, table, 3, PL_SCHEMA_STATIC);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT ||
        !strstr(pl_status_message(st), "BarOp"))
        FAIL("table with a repeated key: %s", pl_status_message(st));
    pl_status_free(st);
    if (pl_opset_count(set) != n_now || pl_opset_find(set, "com.acme", "BazOp", 1) != NULL)
        FAIL("a refused table left %zu schemas (had %zu)", pl_opset_count(set), n_now);
    st = pl_opset_register(set, table, 2, PL_SCHEMA_COPY);
    if (st != NULL)
        FAIL("copied table: %s", pl_status_message(st));
    if (pl_opset_count(set) != n_now + 2 ||
        pl_opset_find(set, "com.acme", "BazOp", 1) == &table[1])
        FAIL("copied table: count %zu, or the schema was not copied", pl_opset_count(set));

    /* A body attribute (If's, Loop's) is a kind a schema may declare: the
     * check once stopped at PL_ATTR_TENSOR, which would refuse If. */
    oh_cur_case = "graph attribute accepted";
    pl_attr_spec body_attr[1] = {{.name = "body", .kind = PL_ATTR_GRAPH, .required = true}};
    pl_op_schema with_body = s;
    with_body.name = "LoopOp";
    with_body.attrs = body_attr;
    with_body.n_attrs = 1;
    st = pl_opset_register(set, &with_body, 1, PL_SCHEMA_COPY);
    if (st != NULL)
        FAIL("graph attribute refused: %s", pl_status_message(st));
    pl_status_free(st);
    body_attr[0].kind = (pl_attr_kind)(PL_ATTR_GRAPHS + 1);
    with_body.name = "LoopOp2";
    st = pl_opset_register(set, &with_body, 1, PL_SCHEMA_COPY);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT)
        FAIL("attribute kind past GRAPHS accepted: %s", pl_status_message(st));
    pl_status_free(st);

    /* A static table is borrowed, as the built-in tables are. */
    oh_cur_case = "static table borrowed";
    static const pl_op_schema quux = {.name = "QuuxOp", .domain = "com.acme",
                                      .since_version = 1, .min_inputs = 1,
                                      .max_inputs = 1, .min_outputs = 1,
                                      .max_outputs = 1};
    OK(pl_opset_register(set, &quux, 1, PL_SCHEMA_STATIC));
    if (pl_opset_find(set, "com.acme", "QuuxOp", 5) != &quux)
        FAIL("static schema not borrowed");
    st = pl_opset_register(set, &quux, 1, (pl_schema_storage)7);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT)
        FAIL("bad storage accepted: %s", pl_status_message(st));
    pl_status_free(st);
    st = pl_opset_register(set, NULL, 2, PL_SCHEMA_COPY);
    if (pl_status_code(st) != PL_CODE_INVALID_ARGUMENT)
        FAIL("NULL table accepted: %s", pl_status_message(st));
    pl_status_free(st);

    oh_cur_case = "custom op inference";
    pl_opset *saved = oh_opset;
    oh_opset = set;
    pl_graph *g = oh_new_graph("custom op inference", 13);
    OK(pl_graph_set_opset(g, "com.acme", 1));
    oh_input(g, "x", F32, D(2, 3));
    oh_node_in(g, "foo", "FooOp", "com.acme", "x", "y");
    oh_expect(g, "y", F32, D(2, 6));

    g = oh_new_graph("custom op type check", 13);
    oh_input(g, "x", I64, D(2, 3));
    oh_node_in(g, "foo", "FooOp", "com.acme", "x", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT,
                 "node 'foo' (FooOp, domain 'com.acme'): input 0 ('x') has dtype i64",
                 NULL);
    oh_opset = saved;

    oh_cur_case = "versions";
    const pl_op_schema *a = pl_opset_find(oh_opset, "", "Softmax", 11);
    const pl_op_schema *b = pl_opset_find(oh_opset, "ai.onnx", "Softmax", 13);
    const pl_op_schema *c2 = pl_opset_find(oh_opset, "", "Softmax", 17);
    if (!a || !b || a->since_version != 7 || b->since_version != 13 || c2 != b)
        FAIL("Softmax versions resolve wrongly");
    if (pl_opset_inplace_input(pl_opset_find(oh_opset, "", "Relu", 13), 0) != 0 ||
        pl_opset_inplace_input(pl_opset_find(oh_opset, "", "Cast", 13), 0) != -1)
        FAIL("in-place info wrong");

    oh_cur_case = "per-runtime";
    if (pl_opset_find(oh_opset, "com.acme", "FooOp", 1) != NULL)
        FAIL("a registration leaked into another set");
    pl_opset_destroy(set);

    oh_cur_case = "broadcast helper";
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
        /* Built on the failing allocator, disarmed: inference
         * changes the graph, and those allocations are swept too. */
        pl_sweep_fail_at(-1);
        bert_chain_graph(&g, -1, "batch");
        oh_cur_case = "alloc sweep";
        oh_node(g, "relu", "Relu", "y", "z");
        OK(pl_graph_validate(g));
        pl_sweep_fail_at(n);
        pl_status *st = pl_opset_infer(oh_opset, g);
        pl_sweep_fail_at(0);
        if (st == NULL) {
            oh_check_tensor(g, "z", F32, D(-1, 8, 4, 4));
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
        pl_sweep_fail_at(n);
        pl_status *st = pl_opset_create(&set);
        pl_op_schema s = {.name = "Foo", .domain = "d", .since_version = 1,
                          .min_inputs = 1, .max_inputs = 1, .min_outputs = 1,
                          .max_outputs = 1};
        if (st == NULL)
            st = pl_opset_register(set, &s, 1, PL_SCHEMA_COPY);
        pl_sweep_fail_at(0);
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

/* Opsets after 17: a version that only admits more types runs on the
 * schema before it; a version that changed the op (opset_history.c) needs a
 * schema of its own or the node is refused, naming the change. */
static void case_newer_opsets(void)
{
    if (pl_opset_changed_after("Mod", 10, 27) != 0 || pl_opset_changed_after("Mod", 10, 28) != 28 ||
        pl_opset_changed_after("Relu", 14, 28) != 0 ||
        pl_opset_changed_after("Resize", 13, 25) != 19 ||
        pl_opset_changed_after("Resize", 19, 25) != 0)
        FAIL("pl_opset_changed_after disagrees with ONNX's history");

    pl_graph *g = oh_new_graph("Relu at 22 (bfloat16 added only)", 22);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "n", "Relu", "x", "y");
    oh_expect(g, "y", F32, D(2, 3));

    g = oh_new_graph("Cast at 25 with saturate", 25);
    oh_input(g, "x", F32, D(4));
    pl_nid n = oh_node(g, "n", "Cast", "x", "y");
    oh_attr_i(g, n, "to", 7);
    oh_attr_i(g, n, "saturate", 0);
    oh_expect(g, "y", I64, D(4));

    g = oh_new_graph("Cast at 17 knows no saturate", 17);
    oh_input(g, "x", F32, D(4));
    n = oh_node(g, "n", "Cast", "x", "y");
    oh_attr_i(g, n, "to", 7);
    oh_attr_i(g, n, "saturate", 0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "saturate", NULL);

    /* DFT 20's axis is an input, -2 (the last signal axis) when absent */
    g = oh_new_graph("DFT at 20, the axis absent", 20);
    oh_input(g, "x", F32, D(1, 8, 1));
    oh_node(g, "n", "DFT", "x", "y");
    oh_expect(g, "y", F32, D(1, 8, 2));
    g = oh_new_graph("DFT at 20, a constant axis, onesided", 20);
    oh_input(g, "x", F32, D(1, 8, 6, 1));
    oh_const_i64(g, "ax", D(2));
    pl_nid dft = oh_node(g, "n", "DFT", "x,,ax", "y");
    oh_attr_i(g, dft, "onesided", 1);
    oh_expect(g, "y", F32, D(1, 8, 4, 2));
    g = oh_new_graph("DFT at 20, the inverse of a onesided spectrum", 20);
    oh_input(g, "x", F32, D(1, 5, 2));
    dft = oh_node(g, "n", "DFT", "x", "y");
    oh_attr_i(g, dft, "onesided", 1);
    oh_attr_i(g, dft, "inverse", 1);
    oh_expect(g, "y", F32, D(1, 8, 1)); /* 2 (5 - 1) real values */
    g = oh_new_graph("DFT at 20, a computed axis", 20);
    oh_input(g, "x", F32, D(1, 8, 1));
    oh_input(g, "ax", I64, D());
    oh_node(g, "n", "DFT", "x,,ax", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "the axis 'ax' must be a constant", NULL);

    g = oh_new_graph("Mod at 28 (its own schema)", 28);
    oh_input(g, "a", I32, D(4));
    oh_input(g, "b", I32, D(4));
    oh_node(g, "n", "Mod", "a,b", "y");
    oh_expect(g, "y", I32, D(4));

    /* f16 with stash_type 1 (the default): computed in f32, cast back */
    g = oh_new_graph("Range at 27 on f16 (stash_type)", 27);
    oh_input(g, "s", F16, D());
    oh_input(g, "l", F16, D());
    oh_input(g, "d", F16, D());
    oh_node(g, "n", "Range", "s,l,d", "y");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F16, D(-1));
    const pl_graph_node *cast = pl_graph_get_node(g, pl_graph_find_node(g, "n"));
    if (strcmp(cast->op, "Cast") != 0)
        FAIL("Range on f16 became %s, not a Cast of an f32 Range", cast->op);
    pl_graph_destroy(g);
    g = oh_new_graph("Range at 27 on f16 accumulated in f16", 27);
    oh_input(g, "s", F16, D());
    oh_input(g, "l", F16, D());
    oh_input(g, "d", F16, D());
    pl_nid rg = oh_node(g, "n", "Range", "s,l,d", "y");
    oh_attr_i(g, rg, "stash_type", 10);
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "Range on f16 with stash_type 10", NULL);

    g = oh_new_graph("SpaceToDepth at 28, mode CRD", 28);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    pl_nid s2d = oh_node(g, "n", "SpaceToDepth", "x", "y");
    oh_attr_i(g, s2d, "blocksize", 2);
    oh_attr_s(g, s2d, "mode", "CRD");
    oh_expect(g, "y", F32, D(1, 4, 2, 2)); /* kept for the kernels */

    g = oh_new_graph("SpaceToDepth at 28, mode XYZ", 28);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    s2d = oh_node(g, "n", "SpaceToDepth", "x", "y");
    oh_attr_i(g, s2d, "blocksize", 2);
    oh_attr_s(g, s2d, "mode", "XYZ");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "mode 'XYZ' is neither DCR nor CRD", NULL);

    g = oh_new_graph("SpaceToDepth at 28, mode DCR", 28);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    s2d = oh_node(g, "n", "SpaceToDepth", "x", "y");
    oh_attr_i(g, s2d, "blocksize", 2);
    oh_attr_s(g, s2d, "mode", "DCR");
    oh_expect(g, "y", F32, D(1, 4, 2, 2));

    /* SwiGLU 28: Swish(A) * B */
    g = oh_new_graph("SwiGLU at 28", 28);
    oh_input(g, "a", F32, D(2, 6));
    oh_input(g, "b", F32, D(2, 6));
    oh_node(g, "n", "SwiGLU", "a,b", "y");
    oh_expect(g, "y", F32, D(2, 6));
    g = oh_new_graph("SwiGLU at 28 without B", 28);
    oh_input(g, "a", F32, D(2, 6));
    oh_node(g, "n", "SwiGLU", "a", "y");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "input 1 (B) is absent", NULL);

    /* TensorScatter 24: a ScatterElements into the cache, its shape */
    g = oh_new_graph("TensorScatter at 24", 24);
    oh_input(g, "cache", F32, D(2, 3, 8, 4));
    oh_input(g, "upd", F32, D(2, 3, 2, 4));
    oh_input(g, "at", I64, D(2));
    pl_nid ts = oh_node(g, "n", "TensorScatter", "cache,upd,at", "y");
    oh_attr_s(g, ts, "mode", "circular");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(2, 3, 8, 4));
    const pl_graph_node *sc = pl_graph_get_node(g, pl_graph_find_node(g, "n"));
    if (strcmp(sc->op, "ScatterElements") != 0)
        FAIL("TensorScatter became %s, not ScatterElements", sc->op);
    pl_graph_destroy(g);
    g = oh_new_graph("TensorScatter at 24 on the batch axis", 24);
    oh_input(g, "cache", F32, D(2, 8));
    oh_input(g, "upd", F32, D(1, 8));
    ts = oh_node(g, "n", "TensorScatter", "cache,upd", "y");
    oh_attr_i(g, ts, "axis", 0);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "axis 0 is out of range", NULL);

    /* CausalConvWithState 27: Concat (or a Pad of zeros) -> Conv of C groups
     * [-> x * Sigmoid(x)], present_state the last K - 1 steps */
    g = oh_new_graph("CausalConvWithState at 27", 27);
    oh_input(g, "x", F32, D(2, 4, 6));
    oh_input(g, "w", F32, D(4, 1, 3));
    oh_input(g, "past", F32, D(2, 4, 2));
    pl_nid cc = oh_node(g, "n", "CausalConvWithState", "x,w,,past", "y,state");
    oh_attr_s(g, cc, "activation", "silu");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(2, 4, 6));
    oh_check_tensor(g, "state", F32, D(2, 4, 2));
    pl_graph_destroy(g);
    g = oh_new_graph("CausalConvWithState at 27, no past state", 27);
    oh_input(g, "x", F32, D(1, 3, 5));
    oh_input(g, "w", F32, D(3, 1, 4));
    oh_node(g, "n", "CausalConvWithState", "x,w", "y,state");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(1, 3, 5));
    oh_check_tensor(g, "state", F32, D(1, 3, 3));
    pl_graph_destroy(g);
    g = oh_new_graph("CausalConvWithState at 27, activation gelu", 27);
    oh_input(g, "x", F32, D(1, 3, 5));
    oh_input(g, "w", F32, D(3, 1, 4));
    cc = oh_node(g, "n", "CausalConvWithState", "x,w", "y");
    oh_attr_s(g, cc, "activation", "gelu");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "activation 'gelu'", NULL);

    g = oh_new_graph("opset 29", 29);
    oh_input(g, "x", F32, D(2));
    oh_node(g, "n", "Relu", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "imports ai.onnx opset 29",
                    "opsets up to 28", NULL);
}

/* Ops of opsets 18 and later in the schemas' form (opset_lower.c): the
 * functions become their chains, the node itself the last op, and newer
 * attributes Plinth cannot run are refused by name. */
static int op_count(const pl_graph *g, const char *op)
{
    int k = 0;
    for (size_t i = 0; i < pl_graph_node_count(g); i++)
        k += strcmp(pl_graph_get_node(g, (pl_nid)i)->op, op) == 0;
    return k;
}

static void case_lowered_ops(void)
{
    pl_graph *g = oh_new_graph("Gelu 20 becomes the erf chain", 20);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "gelu", "Gelu", "x", "y");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(2, 3));
    if (op_count(g, "Gelu") != 0 || op_count(g, "Erf") != 1 || op_count(g, "Mul") != 2 ||
        strcmp(pl_graph_get_node(g, pl_graph_find_node(g, "gelu"))->op, "Mul") != 0)
        FAIL("Gelu was not expanded into Div, Erf, Add, Mul, Mul ending at the node");
    pl_graph_destroy(g);

    g = oh_new_graph("Gelu 17 has no schema", 17);
    oh_input(g, "x", F32, D(2, 3));
    oh_node(g, "gelu", "Gelu", "x", "y");
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "no schema for this op", NULL);

    g = oh_new_graph("Gelu with a bad approximate", 20);
    oh_input(g, "x", F32, D(2, 3));
    pl_nid n = oh_node(g, "gelu", "Gelu", "x", "y");
    oh_attr_s(g, n, "approximate", "sigmoid");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "approximate is 'sigmoid'", NULL);

    g = oh_new_graph("GroupNormalization 21 on an unknown batch", 21);
    int64_t dims[4] = {-1, 4, 5, 5};
    oh_input(g, "x", F32, dims, 4);
    oh_input(g, "s", F32, D(4));
    oh_input(g, "b", F32, D(4));
    n = oh_node(g, "gn", "GroupNormalization", "x,s,b", "y");
    oh_attr_i(g, n, "num_groups", 2);
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, dims, 4);
    if (op_count(g, "InstanceNormalization") != 1 || op_count(g, "Shape") != 1 ||
        op_count(g, "Unsqueeze") != 2)
        FAIL("GroupNormalization: expected InstanceNormalization, a Shape for the unknown "
             "batch and an Unsqueeze for each computed per-channel input");
    pl_graph_destroy(g);

    g = oh_new_graph("GroupNormalization 18 with computed per-group scale", 18);
    oh_input(g, "x", F32, D(2, 4, 3));
    oh_input(g, "s", F32, D(2));
    oh_input(g, "b", F32, D(2));
    n = oh_node(g, "gn", "GroupNormalization", "x,s,b", "y");
    oh_attr_i(g, n, "num_groups", 2);
    oh_expect_error(g, PL_CODE_UNSUPPORTED, "repeated per channel only when constant", NULL);

    g = oh_new_graph("GroupNormalization groups not dividing channels", 21);
    oh_input(g, "x", F32, D(2, 6, 3));
    oh_input(g, "s", F32, D(6));
    oh_input(g, "b", F32, D(6));
    n = oh_node(g, "gn", "GroupNormalization", "x,s,b", "y");
    oh_attr_i(g, n, "num_groups", 4);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "num_groups 4 does not divide the 6", NULL);

    /* antialias 1 stays for the kernels (the cpu module runs it) */
    g = oh_new_graph("Resize 18 antialias", 18);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    oh_const_f32(g, "scales", (const float[]){1, 1, 0.5f, 0.5f}, 4);
    n = oh_node(g, "rs", "Resize", "x,,scales", "y");
    oh_attr_i(g, n, "antialias", 1);
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, (const int64_t[]){1, 1, 2, 2}, 4);
    if (pl_graph_node_attr(pl_graph_get_node(g, pl_graph_find_node(g, "rs")), "antialias") ==
        NULL)
        FAIL("Resize 18: antialias 1 should stay on the node");
    pl_graph_destroy(g);

    /* axes [3, 2]: constant scales become a constant for every axis;
     * computed sizes are spread by a ScatterElements into the Shape */
    g = oh_new_graph("Resize 18 axes", 18);
    oh_input(g, "x", F32, D(1, 1, 2, 2));
    oh_const_f32(g, "scales", (const float[]){3, 2}, 2);
    n = oh_node(g, "rs", "Resize", "x,,scales", "y");
    oh_attr_is(g, n, "axes", (const int64_t[]){3, 2}, 2);
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, (const int64_t[]){1, 1, 4, 6}, 4);
    if (op_count(g, "ScatterElements") != 0 ||
        pl_graph_node_attr(pl_graph_get_node(g, pl_graph_find_node(g, "rs")), "axes") != NULL)
        FAIL("Resize 18 axes: expected constant scales and no axes left");
    pl_graph_destroy(g);

    g = oh_new_graph("Resize 18 axes, sizes computed", 18);
    oh_input(g, "x", F32, D(1, 1, 2, 2));
    oh_input(g, "sz", PL_DTYPE_I64, D(2));
    n = oh_node(g, "rs", "Resize", "x,,,sz", "y");
    oh_attr_is(g, n, "axes", (const int64_t[]){-1, 2}, 2);
    OK(oh_run(g));
    if (op_count(g, "ScatterElements") != 1 || op_count(g, "Shape") != 1)
        FAIL("Resize 18 axes with computed sizes: expected a ScatterElements into a Shape");
    pl_graph_destroy(g);

    g = oh_new_graph("Resize 19 at defaults", 19);
    oh_input(g, "x", F32, D(1, 1, 4, 4));
    oh_const_f32(g, "scales", (const float[]){1, 1, 2, 2}, 4);
    n = oh_node(g, "rs", "Resize", "x,,scales", "y");
    oh_attr_i(g, n, "antialias", 0);
    oh_attr_is(g, n, "axes", (const int64_t[]){0, 1, 2, 3}, 4);
    oh_attr_s(g, n, "keep_aspect_ratio_policy", "stretch");
    oh_expect(g, "y", F32, D(1, 1, 8, 8));

    /* half_pixel_symmetric is half_pixel where every output size is
     * scale x input exactly (always with sizes); else the mode stays, for
     * the kernels (the cpu module's computes it, others refuse it) */
    for (int whole = 1; whole >= 0; whole--) {
        g = oh_new_graph(whole ? "Resize 19 half_pixel_symmetric, whole sizes"
                               : "Resize 19 half_pixel_symmetric, fractional sizes",
                         19);
        oh_input(g, "x", F32, D(1, 1, 4, 4));
        float f = whole ? 2.0f : 0.6f;
        oh_const_f32(g, "scales", (const float[]){1, 1, f, f}, 4);
        n = oh_node(g, "rs", "Resize", "x,,scales", "y");
        oh_attr_s(g, n, "coordinate_transformation_mode", "half_pixel_symmetric");
        OK(oh_run(g));
        int64_t side = whole ? 8 : 2;
        oh_check_tensor(g, "y", F32, (const int64_t[]){1, 1, side, side}, 4);
        const pl_attr *ct = pl_graph_node_attr(pl_graph_get_node(g, pl_graph_find_node(g, "rs")),
                                               "coordinate_transformation_mode");
        const char *want = whole ? "half_pixel" : "half_pixel_symmetric";
        if (ct == NULL || ct->kind != PL_ATTR_STRING || strcmp(ct->s, want) != 0)
            FAIL("Resize 19 half_pixel_symmetric, %s sizes: expected %s",
                 whole ? "whole" : "fractional", want);
        pl_graph_destroy(g);
    }

    /* keep_aspect_ratio_policy: one scale for the listed axes (the
     * smallest, not_larger, of 6/4 and 9/3), other axes kept; 4 x 1.5 = 6
     * and 3 x 1.5 = 4.5, which rounds to 5 and scales give 4: refused;
     * with 4 and 2 (2 x 1.5 = 3) it becomes constant scales */
    static const struct {
        const char *name, *policy;
        int64_t w, sizes[2], out[2]; /* out[0] 0: refused, naming axis 3 */
    } aspect[] = {{"Resize 18 not_larger, rounding up", "not_larger", 3, {6, 9}, {0, 0}},
                  {"Resize 18 not_larger", "not_larger", 2, {6, 9}, {6, 3}},
                  {"Resize 18 not_smaller", "not_smaller", 2, {6, 4}, {8, 4}}};
    for (size_t i = 0; i < sizeof aspect / sizeof aspect[0]; i++) {
        g = oh_new_graph(aspect[i].name, 18);
        oh_input(g, "x", F32, D(1, 1, 4, aspect[i].w));
        oh_const_i64(g, "sz", aspect[i].sizes, 2);
        n = oh_node(g, "rs", "Resize", "x,,,sz", "y");
        oh_attr_is(g, n, "axes", (const int64_t[]){2, 3}, 2);
        oh_attr_s(g, n, "keep_aspect_ratio_policy", aspect[i].policy);
        if (aspect[i].out[0] == 0) {
            oh_expect_error(g, PL_CODE_UNSUPPORTED, "axis 3 resizes to 5", NULL);
            continue;
        }
        OK(oh_run(g));
        oh_check_tensor(g, "y", F32, (const int64_t[]){1, 1, aspect[i].out[0], aspect[i].out[1]},
                        4);
        pl_graph_destroy(g);
    }

    g = oh_new_graph("Pad 19 wrap", 19);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "pads", (const int64_t[]){0, 1, 0, 1}, 4);
    n = oh_node(g, "pad", "Pad", "x,pads", "y");
    oh_attr_s(g, n, "mode", "wrap");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, (const int64_t[]){2, 5}, 2);
    pl_graph_destroy(g);
    /* before 19 wrap is not a mode */
    g = oh_new_graph("Pad 18 wrap", 18);
    oh_input(g, "x", F32, D(2, 3));
    oh_const_i64(g, "pads", (const int64_t[]){0, 1, 0, 1}, 4);
    n = oh_node(g, "pad", "Pad", "x,pads", "y");
    oh_attr_s(g, n, "mode", "wrap");
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "mode 'wrap' is not constant", NULL);

    g = oh_new_graph("DequantizeLinear 21 blocked", 21);
    oh_input(g, "q", PL_DTYPE_U8, D(4, 8));
    oh_input(g, "s", F32, D(4, 2));
    n = oh_node(g, "dq", "DequantizeLinear", "q,s", "y");
    oh_attr_i(g, n, "block_size", 4);
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(4, 8));
    pl_graph_destroy(g);
    /* one scale per block of 4 along axis 1: [4, 2], not [4, 3] */
    g = oh_new_graph("DequantizeLinear 21 blocked, a scale too many", 21);
    oh_input(g, "q", PL_DTYPE_U8, D(4, 8));
    oh_input(g, "s", F32, D(4, 3));
    n = oh_node(g, "dq", "DequantizeLinear", "q,s", "y");
    oh_attr_i(g, n, "block_size", 4);
    oh_expect_error(g, PL_CODE_INVALID_ARGUMENT, "block_size 4 along axis 1", NULL);

    g = oh_new_graph("GridSample 20 linear is 16's bilinear", 20);
    oh_input(g, "x", F32, D(1, 2, 4, 4));
    oh_input(g, "grid", F32, D(1, 3, 3, 2));
    n = oh_node(g, "gs", "GridSample", "x,grid", "y");
    oh_attr_s(g, n, "mode", "linear");
    OK(oh_run(g));
    oh_check_tensor(g, "y", F32, D(1, 2, 3, 3));
    const pl_attr *mode = pl_graph_node_attr(pl_graph_get_node(g, pl_graph_find_node(g, "gs")),
                                             "mode");
    if (mode == NULL || strcmp(mode->s, "bilinear") != 0)
        FAIL("GridSample 20's 'linear' was not renamed 'bilinear'");
    pl_graph_destroy(g);
}

/* Shapes as messages print them: a scalar is "[]" (it printed "]"). */
static void case_dims_format(void)
{
    char b[64];
    static const int64_t dims[3] = {-1, 501, 8};
    if (strcmp(pl_dims_format(dims, 0, b, sizeof b), "[]") != 0)
        FAIL("a scalar prints '%s', not '[]'", b);
    if (strcmp(pl_dims_format(dims, 3, b, sizeof b), "[?,501,8]") != 0)
        FAIL("[?,501,8] prints '%s'", b);
    if (strcmp(pl_dims_format(dims, -1, b, sizeof b), "(unknown rank)") != 0)
        FAIL("an unknown rank prints '%s'", b);
}

static const oh_case cases[] = {
    {"newer_opsets", case_newer_opsets},
    {"lowered_ops", case_lowered_ops},
    {"dims_format", case_dims_format},
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
    {"Range", case_range}, {"Tile", case_tile}, {"fold_pad_table", case_fold_pad_table},
    {"bert_chain", case_bert_chain}, {"declared_types", case_declared_types},
    {"unknown_op", case_unknown_op}, {"registry", case_registry},
    {"alloc_sweep", case_alloc_sweep},
};

int main(int argc, char **argv)
{
    return oh_main(argc, argv, cases, sizeof cases / sizeof cases[0]);
}
