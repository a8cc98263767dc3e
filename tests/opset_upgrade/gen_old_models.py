#!/usr/bin/python3
"""gen_old_models.py OUTDIR CASE... -- writes one ONNX backend-test directory
per CASE under OUTDIR (model.onnx, test_data_set_0/{input,output}_N.pb and,
where the default tolerances would hide the difference a case checks,
data.json): a model importing an old ai.onnx opset (1 to 7) built with the
onnx package, and its expected outputs computed by NumPy from the operator's
definition at that opset (legacy broadcasting, per-channel PRelu, Selu's old
defaults ...), never from the converted graph. tests/opset_upgrade runs each
directory through the conformance runner.

CMake passes the case names it registers; a name this script does not know,
or a case it has that CMake does not register, is an error, so the two lists
cannot drift apart.

Needs numpy and onnx (Debian: python3-numpy, python3-onnx). Exits 0 after
writing every case, 1 on an error."""
import os
import sys
import zlib

import numpy as np
import onnx
from onnx import helper, numpy_helper

F32 = np.float32


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


class Case:
    """One model: OPSET, NODES, graph INPUTS and OUTPUTS (name -> array:
    the values fed and expected), INITS (name -> array) and optional
    tolerances."""

    def __init__(self, opset, nodes, inputs, outputs, inits=None, rtol=None, atol=None):
        self.opset, self.nodes = opset, nodes
        self.inputs, self.outputs = inputs, outputs
        self.inits = inits or {}
        self.rtol, self.atol = rtol, atol


def vinfo(name, array):
    elem = helper.np_dtype_to_tensor_dtype(array.dtype) if hasattr(
        helper, "np_dtype_to_tensor_dtype") else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype]
    return helper.make_tensor_value_info(name, elem, list(array.shape))


def write(case_name, c, outdir):
    d = os.path.join(outdir, case_name)
    sets = os.path.join(d, "test_data_set_0")
    os.makedirs(sets, exist_ok=True)
    graph = helper.make_graph(
        c.nodes, case_name,
        [vinfo(n, a) for n, a in c.inputs.items()],
        [vinfo(n, a) for n, a in c.outputs.items()],
        initializer=[numpy_helper.from_array(a, n) for n, a in c.inits.items()])
    m = helper.make_model(graph, producer_name="plinth tests/opset_upgrade",
                          opset_imports=[helper.make_opsetid("", c.opset)])
    m.ir_version = 3
    onnx.save(m, os.path.join(d, "model.onnx"))
    for kind, values in (("input", c.inputs), ("output", c.outputs)):
        for i, (n, a) in enumerate(values.items()):
            with open(os.path.join(sets, "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(a, n).SerializeToString())
    if c.rtol is not None or c.atol is not None:
        with open(os.path.join(d, "data.json"), "w") as f:
            f.write('{"rtol": %r, "atol": %r}\n' % (c.rtol or 1e-3, c.atol or 1e-7))


# ---- the cases -------------------------------------------------------------

def legacy_unsqueeze(b, rank_a, axis):
    """B lined up with A from AXIS, as opsets 1-6 broadcast it."""
    return b.reshape(b.shape + (1,) * (rank_a - axis - b.ndim))


def add_axis_constant(r):
    a = r.standard_normal((2, 3, 4, 5)).astype(F32)
    b = r.standard_normal((3, 4)).astype(F32)
    return Case(6, [node("Add", ["a", "b"], ["y"], broadcast=1, axis=1)],
                {"a": a}, {"y": a + legacy_unsqueeze(b, 4, 1)}, {"b": b})


def mul_axis_input(r):
    a = r.standard_normal((2, 3, 4)).astype(F32)
    b = r.standard_normal((3,)).astype(F32)
    return Case(6, [node("Mul", ["a", "b"], ["y"], broadcast=1, axis=1)],
                {"a": a, "b": b}, {"y": a * legacy_unsqueeze(b, 3, 1)})


def sub_axis_after_relu(r):
    x = r.standard_normal((2, 3, 4, 5)).astype(F32)
    b = r.standard_normal((3,)).astype(F32)
    return Case(6, [node("Relu", ["x"], ["a"]),
                    node("Sub", ["a", "b"], ["y"], broadcast=1, axis=1)],
                {"x": x}, {"y": np.maximum(x, 0) - legacy_unsqueeze(b, 4, 1)}, {"b": b})


def div_suffix(r):
    a = r.standard_normal((2, 3, 4)).astype(F32)
    b = r.uniform(0.5, 2.0, (4,)).astype(F32)
    return Case(6, [node("Div", ["a", "b"], ["y"], broadcast=1)],
                {"a": a, "b": b}, {"y": a / b})


def pow_axis0(r):
    a = r.uniform(0.5, 2.0, (2, 3)).astype(F32)
    b = np.array([2.0, 0.5], F32)
    return Case(1, [node("Pow", ["a", "b"], ["y"], broadcast=1, axis=0)],
                {"a": a}, {"y": (a ** legacy_unsqueeze(b, 2, 0)).astype(F32)}, {"b": b})


def greater_axis0(r):
    a = r.standard_normal((2, 3)).astype(F32)
    b = r.standard_normal((2,)).astype(F32)
    return Case(1, [node("Greater", ["a", "b"], ["y"], broadcast=1, axis=0)],
                {"a": a, "b": b}, {"y": a > legacy_unsqueeze(b, 2, 0)})


def reshape_attribute(r):
    x = r.standard_normal((2, 3, 4)).astype(F32)
    return Case(4, [node("Reshape", ["x"], ["y"], shape=[4, -1], consumed_inputs=[0])],
                {"x": x}, {"y": x.reshape(4, 6)})


def concat_default_axis(r):
    a = r.standard_normal((2, 3)).astype(F32)
    b = r.standard_normal((2, 4)).astype(F32)
    return Case(3, [node("Concat", ["a", "b"], ["y"])],
                {"a": a, "b": b}, {"y": np.concatenate([a, b], axis=1)})


def pad_paddings(r):
    x = r.standard_normal((2, 3)).astype(F32)
    return Case(1, [node("Pad", ["x"], ["y"], paddings=[0, 1, 2, 3], mode="edge")],
                {"x": x}, {"y": np.pad(x, ((0, 2), (1, 3)), mode="edge")})


def split_input(r):
    x = r.standard_normal((2, 6)).astype(F32)
    return Case(1, [node("Split", ["x", "s"], ["y0", "y1"], axis=1)],
                {"x": x}, {"y0": x[:, :2], "y1": x[:, 2:]},
                {"s": np.array([2, 4], F32)})


def tile_inputs(r):
    x = r.standard_normal((2, 3)).astype(F32)
    return Case(5, [node("Tile", ["x", "tiles", "axis"], ["y"])],
                {"x": x}, {"y": np.tile(x, (1, 3))},
                {"tiles": np.array(3, np.int64), "axis": np.array(1, np.int64)})


def cast_string(r):
    x = (r.standard_normal((2, 3)) * 4).astype(F32)
    return Case(5, [node("Cast", ["x"], ["y"], to="INT32")],
                {"x": x}, {"y": np.trunc(x).astype(np.int32)})


def selu_defaults(r):
    # Opset 1's defaults, float 1.6732 and 1.0507; opset 6's are 1.67326..
    # and 1.05070.. The default rtol (1e-3) would not tell them apart.
    x = r.uniform(-3.0, 1.0, (3, 4)).astype(F32)
    alpha, gamma = F32(1.6732), F32(1.0507)
    y = np.where(x > 0, gamma * x, gamma * (alpha * np.exp(x) - alpha)).astype(F32)
    return Case(5, [node("Selu", ["x"], ["y"])], {"x": x}, {"y": y}, rtol=1e-5, atol=1e-6)


def prelu_channel(r):
    x = r.standard_normal((2, 3, 4, 5)).astype(F32)
    s = np.array([0.1, 0.2, 0.3], F32)
    return Case(6, [node("PRelu", ["x", "s"], ["y"])],
                {"x": x}, {"y": np.where(x < 0, x * s.reshape(3, 1, 1), x)}, {"s": s})


def batchnorm_is_test(r):
    x = r.standard_normal((2, 3, 4, 4)).astype(F32)
    scale, bias = r.standard_normal(3).astype(F32), r.standard_normal(3).astype(F32)
    mean, var = r.standard_normal(3).astype(F32), r.uniform(0.5, 2, 3).astype(F32)
    eps = F32(1e-3)
    c = lambda v: v.reshape(1, 3, 1, 1)
    y = c(scale) * (x - c(mean)) / np.sqrt(c(var) + eps) + c(bias)
    return Case(5, [node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"],
                         is_test=1, epsilon=1e-3, consumed_inputs=[0, 0, 0, 1, 1])],
                {"x": x}, {"y": y.astype(F32)},
                {"scale": scale, "bias": bias, "mean": mean, "var": var})


def dropout_is_test(r):
    x = r.standard_normal((2, 3)).astype(F32)
    return Case(6, [node("Dropout", ["x"], ["y"], is_test=1, ratio=0.3)], {"x": x}, {"y": x})


def gemm_broadcast(r):
    a = r.standard_normal((2, 3)).astype(F32)
    b = r.standard_normal((3, 4)).astype(F32)
    c = r.standard_normal((4,)).astype(F32)
    return Case(6, [node("Gemm", ["a", "b", "c"], ["y"], broadcast=1, alpha=0.5, beta=2.0)],
                {"a": a, "b": b}, {"y": (0.5 * a @ b + 2.0 * c).astype(F32)}, {"c": c})


def max_same_shape(r):
    a, b, c = (r.standard_normal((2, 3)).astype(F32) for _ in range(3))
    return Case(6, [node("Max", ["a", "b", "c"], ["y"])],
                {"a": a, "b": b, "c": c}, {"y": np.maximum(np.maximum(a, b), c)})


def min_opset7(r):
    a, b = (r.standard_normal((2, 3)).astype(F32) for _ in range(2))
    return Case(7, [node("Min", ["a", "b"], ["y"])], {"a": a, "b": b}, {"y": np.minimum(a, b)})


def sum_consumed_inputs(r):
    a, b = (r.standard_normal((2, 3)).astype(F32) for _ in range(2))
    return Case(1, [node("Sum", ["a", "b"], ["y"], consumed_inputs=[0, 0])],
                {"a": a, "b": b}, {"y": a + b})


def upsample_ref(x, scales, linear):
    """Upsample 7/9: output size floor(in * scale), input coordinate
    out / scale (asymmetric); nearest takes its floor, linear blends the
    two neighbours (the last one repeated at the edge)."""
    y = x.astype(np.float64)
    for axis, s in enumerate(scales):
        n_in = y.shape[axis]
        n_out = int(np.floor(n_in * s))
        c = np.arange(n_out) / s
        i0 = np.minimum(np.floor(c).astype(np.int64), n_in - 1)
        if not linear:
            y = np.take(y, i0, axis=axis)
            continue
        i1 = np.minimum(i0 + 1, n_in - 1)
        w = (c - i0).reshape([-1 if k == axis else 1 for k in range(y.ndim)])
        y = np.take(y, i0, axis=axis) * (1 - w) + np.take(y, i1, axis=axis) * w
    return y.astype(F32)


def upsample7_nearest(r):
    x = r.standard_normal((1, 2, 3, 4)).astype(F32)
    scales = [1.0, 1.0, 2.0, 1.5]
    return Case(7, [node("Upsample", ["x"], ["y"], mode="nearest", scales=scales)],
                {"x": x}, {"y": upsample_ref(x, scales, False)})


def upsample9_linear(r):
    x = r.standard_normal((1, 2, 3, 4)).astype(F32)
    scales = np.array([1.0, 1.0, 2.0, 2.5], F32)
    return Case(9, [node("Upsample", ["x", "s"], ["y"], mode="linear")],
                {"x": x}, {"y": upsample_ref(x, scales, True)}, inits={"s": scales})


def conv2d(x, w, pad):
    n, c, h, wd = x.shape
    k, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, k, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i:i + kh, j:j + kw].astype(np.float64)
            y[:, :, i, j] = np.tensordot(patch, w.astype(np.float64), ([1, 2, 3], [1, 2, 3]))
    return y


def old_cnn(r):
    # The shape of 2017's exports: Conv, a bias Add with axis=1, Relu,
    # MaxPool, Reshape with the shape attribute, Gemm with broadcast,
    # Softmax -- at opset 3.
    x = r.standard_normal((2, 2, 6, 6)).astype(F32)
    w = (r.standard_normal((3, 2, 3, 3)) * 0.5).astype(F32)
    bias = r.standard_normal(3).astype(F32)
    fw = (r.standard_normal((4, 27)) * 0.3).astype(F32)
    fb = r.standard_normal(4).astype(F32)
    h = np.maximum(conv2d(x, w, 1) + bias.reshape(3, 1, 1), 0)
    h = h.reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5))
    z = h.reshape(2, 27) @ fw.T.astype(np.float64) + fb
    e = np.exp(z - z.max(axis=1, keepdims=True))
    y = (e / e.sum(axis=1, keepdims=True)).astype(F32)
    nodes = [
        node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Add", ["c", "bias"], ["cb"], broadcast=1, axis=1),
        node("Relu", ["cb"], ["r"], consumed_inputs=[1]),
        node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        node("Reshape", ["p"], ["f"], shape=[2, 27]),
        node("Gemm", ["f", "fw", "fb"], ["z"], broadcast=1, transB=1),
        node("Softmax", ["z"], ["y"]),
    ]
    return Case(3, nodes, {"x": x}, {"y": y}, {"w": w, "bias": bias, "fw": fw, "fb": fb})


CASES = {f.__name__: f for f in (
    add_axis_constant, mul_axis_input, sub_axis_after_relu, div_suffix, pow_axis0,
    greater_axis0, reshape_attribute, concat_default_axis, pad_paddings, split_input,
    tile_inputs, cast_string, selu_defaults, prelu_channel, batchnorm_is_test,
    dropout_is_test, gemm_broadcast, max_same_shape, min_opset7, sum_consumed_inputs,
    old_cnn, upsample7_nearest, upsample9_linear)}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 1
    outdir, names = argv[1], argv[2:]
    unknown = sorted(set(names) - set(CASES))
    missing = sorted(set(CASES) - set(names))
    if unknown or missing:
        print("gen_old_models.py: cases not in the script: %s; cases CMake does not "
              "register: %s" % (unknown, missing), file=sys.stderr)
        return 1
    for name in names:
        write(name, CASES[name](rng_for(name)), outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
