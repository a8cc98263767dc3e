#!/usr/bin/env python3
"""bench/patterns.py — the slow-path finder: single patterns of real models, at the sizes real
models run them (a 1x64x56x56 feature map, a [1, 512, 768] sequence), timed on the default
backend.ini, on `order = cpu` and on ONNX Runtime, alternating, 2 threads. A kernel that falls
into a slow path (an unvectorised loop, a reference or nchw implementation, a post-op oneDNN
applies in C++ loops, a copy too many) shows here as a ratio far above 1, where the zoo's small
models hide it under fixed costs: this is how a 20x MaxPool of a plain input, a 20x
ConvTranspose with a fused ReLU and an 8x Pad were found. Timing only: nothing here asserts a
speed; a pattern no module runs is listed with the reason.

    python3 bench/patterns.py [--rounds R] [--runs N] [--threads N] [--only SUBSTRING] [--list]
                              [--save DIR]

Flags: `slow` where the default is above 1.5x ORT, `placement` where it is more than 5% slower
than `order = cpu`. ORT runs in ORT_PYTHON, as for bench/zoo.py. Needs onnx and numpy (Debian's
python3-onnx) to write the models, into a temporary folder.
"""
import argparse, os, subprocess, sys, tempfile

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo import ROOT, config, median, peer, plinth  # noqa: E402

RNG = np.random.default_rng(0)
FMAP = [1, 64, 56, 56]  # a ResNet stage-1 feature map
SEQ = [1, 512, 768]     # a BERT-base sequence


def W(name, *shape, scale=0.1):
    return nh.from_array((RNG.standard_normal(shape) * scale).astype(np.float32), name)


def F(name, v):
    return nh.from_array(np.array(v, np.float32), name)


def I(name, v):
    return nh.from_array(np.array(v, np.int64), name)


def model(nodes, inputs, outputs, inits, opset=13):
    g = h.make_graph(nodes, "pattern",
                     [h.make_tensor_value_info(k, T.FLOAT, s) for k, s in inputs],
                     [h.make_tensor_value_info(k, T.FLOAT, None) for k in outputs], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def N(op, ins, outs, **attrs):
    return h.make_node(op, ins, outs, **attrs)


def clip6():
    return [F("lo", 0.0), F("hi", 6.0)]


def patterns():
    """name -> ONNX model."""
    x, c = [("x", FMAP)], FMAP[1]
    p = {}
    conv = lambda o, **a: N("Conv", ["x", "w", "b"], [o], pads=[1, 1, 1, 1], **a)
    wb = lambda cin=c, cout=c, k=3, g=1: [W("w", cout, cin // g, k, k), W("b", cout)]
    p["conv_bias_relu"] = model([conv("c"), N("Relu", ["c"], ["y"])], x, ["y"], wb())
    p["conv_add_relu"] = model([conv("c"), N("Add", ["c", "x"], ["a"]), N("Relu", ["a"], ["y"])],
                               x, ["y"], wb())
    p["conv_silu"] = model([conv("c"), N("Sigmoid", ["c"], ["s"]), N("Mul", ["c", "s"], ["y"])],
                           x, ["y"], wb())
    p["conv_bn_relu"] = model([N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                               N("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
                               N("Relu", ["n"], ["y"])], x, ["y"],
                              [W("w", c, c, 3, 3), W("s", c), W("bb", c), W("m", c),
                               F("v", np.abs(RNG.standard_normal(c)) + 1)])
    # the 3x3 layers of ResNet's later stages (Winograd F(4x4) / F(2x2) / the
    # direct kernel below AVX-512, onednn_winograd.c chooses by shape)
    for cs, hw in ((128, 28), (256, 14), (512, 7)):
        p[f"conv3x3_c{cs}_{hw}"] = model([conv("c"), N("Relu", ["c"], ["y"])],
                                         [("x", [1, cs, hw, hw])], ["y"], wb(cs, cs))
    p["conv_relu6"] = model([conv("c"), N("Clip", ["c", "lo", "hi"], ["y"])], x, ["y"],
                            wb() + clip6())
    p["dw_relu6"] = model([conv("c", group=c), N("Clip", ["c", "lo", "hi"], ["y"])], x, ["y"],
                          wb(g=c) + clip6())
    p["dw_s2"] = model([N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[2, 2], group=c)],
                       x, ["y"], [W("w", c, 1, 3, 3)])
    p["grouped32"] = model([N("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], group=32)],
                           [("x", [1, 128, 28, 28])], ["y"], [W("w", 128, 4, 3, 3)])
    p["conv5x5"] = model([N("Conv", ["x", "w"], ["y"], pads=[2, 2, 2, 2])],
                         [("x", [1, 32, 56, 56])], ["y"], [W("w", 32, 32, 5, 5)])
    p["stem7x7_s2"] = model([N("Conv", ["x", "w", "b"], ["y"], pads=[3, 3, 3, 3], strides=[2, 2])],
                            [("x", [1, 3, 224, 224])], ["y"], [W("w", 64, 3, 7, 7), W("b", 64)])
    p["dilated2"] = model([N("Conv", ["x", "w"], ["y"], pads=[2, 2, 2, 2], dilations=[2, 2])],
                          x, ["y"], [W("w", c, c, 3, 3)])
    p["dilated6_aspp"] = model([N("Conv", ["x", "w", "b"], ["c"], pads=[6] * 4, dilations=[6, 6]),
                                N("Relu", ["c"], ["y"])], [("x", [1, 128, 32, 32])], ["y"],
                               [W("w", 128, 128, 3, 3), W("b", 128)])
    p["conv1d"] = model([N("Conv", ["x", "w", "b"], ["y"], pads=[1, 1])], [("x", [1, 256, 400])],
                        ["y"], [W("w", 256, 256, 3), W("b", 256)])
    up = dict(kernel_shape=[2, 2], strides=[2, 2])
    p["deconv_k2s2_bias_relu"] = model([N("ConvTranspose", ["x", "w", "b"], ["u"], **up),
                                        N("Relu", ["u"], ["y"])], [("x", [1, 64, 64, 64])], ["y"],
                                       [W("w", 64, 32, 2, 2), W("b", 32)])
    p["deconv_k4s2p1"] = model([N("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[4, 4],
                                  strides=[2, 2], pads=[1, 1, 1, 1])], [("x", [1, 64, 32, 32])],
                               ["y"], [W("w", 64, 32, 4, 4)])
    p["maxpool_3x3_s2"] = model([N("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                   pads=[1, 1, 1, 1])], x, ["y"], [])
    p["maxpool_2x2"] = model([N("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
                             x, ["y"], [])
    p["avgpool_3x3"] = model([N("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                pads=[1, 1, 1, 1])], x, ["y"], [])
    p["gap_fc"] = model([N("GlobalAveragePool", ["x"], ["g"]), N("Flatten", ["g"], ["f"]),
                         N("Gemm", ["f", "w", "b"], ["y"], transB=1)], x, ["y"],
                        [W("w", 1000, c), W("b", 1000)])
    p["instance_norm"] = model([N("InstanceNormalization", ["x", "s", "b"], ["y"])], x, ["y"],
                               [W("s", c), W("b", c)])
    p["group_norm_decomposed"] = model(
        [N("Reshape", ["x", "s1"], ["r"]), N("InstanceNormalization", ["r", "g1", "b0"], ["n"]),
         N("Reshape", ["n", "s2"], ["n2"]), N("Mul", ["n2", "gs"], ["m"]),
         N("Add", ["m", "gb"], ["y"])], x, ["y"],
        [I("s1", [1, 32, -1]), F("g1", np.ones(32)), F("b0", np.zeros(32)), I("s2", FMAP),
         W("gs", c, 1, 1), W("gb", c, 1, 1)])
    p["concat4_output"] = model([N("Concat", ["x", "x", "x", "x"], ["y"], axis=1)], x, ["y"], [])
    p["pad_constant"] = model([N("Pad", ["x", "p"], ["y"])], x, ["y"], [I("p", [0, 0, 1, 1] * 2)])
    p["pad_reflect"] = model([N("Pad", ["x", "p"], ["y"], mode="reflect")], x, ["y"],
                             [I("p", [0, 0, 1, 1] * 2)])
    p["slice_step2"] = model([N("Slice", ["x", "st", "en", "ax", "sp"], ["y"])], x, ["y"],
                             [I("st", [0, 0]), I("en", [56, 56]), I("ax", [2, 3]), I("sp", [2, 2])])
    p["transpose_nhwc"] = model([N("Transpose", ["x"], ["y"], perm=[0, 2, 3, 1])], x, ["y"], [])
    p["depth_to_space"] = model([N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], x,
                                ["y"], [])
    for mode, extra in [("nearest", dict(coordinate_transformation_mode="asymmetric",
                                         nearest_mode="floor")),
                        ("linear", {}), ("linear_align", dict(coordinate_transformation_mode=
                                                              "align_corners")),
                        ("cubic", {})]:
        p["resize_" + mode] = model([N("Resize", ["x", "", "sc"], ["y"],
                                       mode=mode.split("_")[0], **extra)],
                                    [("x", [1, 16 if mode == "cubic" else c, 56, 56])], ["y"],
                                    [F("sc", [1, 1, 2, 2])])
    p["hardswish"] = model([N("HardSwish", ["x"], ["y"])], x, ["y"], [], opset=14)
    p["sigmoid"] = model([N("Sigmoid", ["x"], ["y"])], x, ["y"], [])
    p["mul_add_per_channel"] = model([N("Mul", ["x", "s"], ["m"]), N("Add", ["m", "b"], ["y"])],
                                     x, ["y"], [W("s", c, 1, 1), W("b", c, 1, 1)])
    p["where_scalars"] = model([N("Greater", ["x", "z"], ["g"]), N("Where", ["g", "x", "m"], ["y"])],
                               x, ["y"], [F("z", 0.0), F("m", -1.0)])
    s = [("x", SEQ)]
    d = SEQ[-1]
    p["layernorm"] = model([N("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)], s, ["y"],
                           [W("s", d), W("b", d)], opset=17)
    p["layernorm_decomposed"] = model(
        [N("ReduceMean", ["x"], ["m"], axes=[-1]), N("Sub", ["x", "m"], ["d"]),
         N("Pow", ["d", "two"], ["p"]), N("ReduceMean", ["p"], ["v"], axes=[-1]),
         N("Add", ["v", "eps"], ["ve"]), N("Sqrt", ["ve"], ["r"]), N("Div", ["d", "r"], ["n"]),
         N("Mul", ["n", "g"], ["ng"]), N("Add", ["ng", "b"], ["y"])], s, ["y"],
        [F("two", 2.0), F("eps", 1e-5), F("g", np.ones(d)), F("b", np.zeros(d))])
    p["matmul_bias_gelu_erf"] = model(
        [N("MatMul", ["x", "w"], ["mm"]), N("Add", ["mm", "b"], ["a"]),
         N("Div", ["a", "sq"], ["q"]), N("Erf", ["q"], ["e"]), N("Add", ["e", "one"], ["e1"]),
         N("Mul", ["a", "e1"], ["g"]), N("Mul", ["g", "half"], ["y"])], [("x", [1, 128, 256])],
        ["y"], [W("w", 256, 1024), W("b", 1024), F("sq", 1.4142135), F("one", 1.0),
                F("half", 0.5)])
    p["gelu_tanh"] = model(
        [N("Mul", ["x", "x"], ["x2"]), N("Mul", ["x2", "x"], ["x3"]), N("Mul", ["x3", "c"], ["q"]),
         N("Add", ["x", "q"], ["i"]), N("Mul", ["i", "k"], ["ki"]), N("Tanh", ["ki"], ["t"]),
         N("Add", ["t", "one"], ["t1"]), N("Mul", ["x", "t1"], ["g"]),
         N("Mul", ["g", "half"], ["y"])], s, ["y"],
        [F("c", 0.044715), F("k", 0.7978845608), F("one", 1.0), F("half", 0.5)])
    p["softmax_last"] = model([N("Softmax", ["x"], ["y"], axis=-1)], [("x", [1, 8, 128, 128])],
                              ["y"], [])
    p["attention_core"] = model([N("MatMul", ["q", "k"], ["sc"]),
                                 N("Softmax", ["sc"], ["pr"], axis=-1),
                                 N("MatMul", ["pr", "q"], ["y"])],
                                [("q", [1, 8, 128, 64]), ("k", [1, 8, 64, 128])], ["y"], [])
    p["log"] = model([N("Log", ["x"], ["y"])], s, ["y"], [])
    p["reducemean_last"] = model([N("ReduceMean", ["x"], ["y"], axes=[-1])], s, ["y"], [])
    p["lstm_50x64_h128"] = model([N("LSTM", ["x", "w", "r", "b"], ["y"], hidden_size=128)],
                                 [("x", [50, 1, 64])], ["y"],
                                 [W("w", 1, 512, 64), W("r", 1, 512, 128), W("b", 1, 1024)])
    # tf2onnx's NHWC blocks: Transpose, Conv, Relu, Transpose back, a per-channel affine
    nodes, inits, cur = [], [], "x"
    for i in range(4):
        nodes += [N("Transpose", [cur], [f"t{i}"], perm=[0, 3, 1, 2]),
                  N("Conv", [f"t{i}", f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  N("Relu", [f"c{i}"], [f"r{i}"]),
                  N("Transpose", [f"r{i}"], [f"n{i}"], perm=[0, 2, 3, 1]),
                  N("Mul", [f"n{i}", f"s{i}"], [f"m{i}"]), N("Add", [f"m{i}", f"a{i}"], [f"o{i}"])]
        inits += [W(f"w{i}", 32, 32, 3, 3), W(f"b{i}", 32), W(f"s{i}", 32), W(f"a{i}", 32)]
        cur = f"o{i}"
    p["tf2onnx_nhwc_blocks"] = model(nodes, [("x", [1, 56, 56, 32])], [cur], inits)
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="patterns whose name holds this")
    ap.add_argument("--list", action="store_true", help="print the pattern names and stop")
    ap.add_argument("--save", metavar="DIR", help="write the models to DIR (to profile one with "
                    "`plinth explain` or `perf`) and stop")
    args = ap.parse_args()
    pats = {k: v for k, v in patterns().items() if args.only in k}
    if args.list:
        print("\n".join(pats))
        return
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        for name, m in pats.items():
            onnx.save(m, os.path.join(args.save, name + ".onnx"))
        print(f"{len(pats)} models in {args.save}")
        return
    py = os.environ.get("ORT_PYTHON") or "python3"
    script = os.environ.get("PEER_BENCH") or os.path.join(ROOT, "..", "shared", "bench",
                                                          "peer_bench.py")
    if not os.access(os.path.join(ROOT, "build/bin/plinth"), os.X_OK):
        sys.exit("patterns.py: build/bin/plinth is not built")
    with tempfile.TemporaryDirectory() as tmp:
        default_ini = config(tmp, "default.ini")
        cpu_ini = config(tmp, "cpu.ini", order="cpu")
        ort_ok = os.path.exists(script)
        print(f"{'pattern':<24}{'default_ms':>11}{'cpu_ms':>9}{'ort_ms':>9}{'def/ort':>8}"
              f"{'def/cpu':>8}  flags")
        flagged = []
        for name, m in pats.items():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(m, path)
            t = {"default": [], "cpu": [], "ort": []}
            err = None
            for _ in range(args.rounds):
                for key, ini in (("default", default_ini), ("cpu", cpu_ini)):
                    r, e = plinth(path, ini, [], args)
                    if r:
                        t[key].append(r[0])
                    err = err or e
                if ort_ok:
                    r, _ = peer("ort", path, [], args, py, script)
                    if r:
                        t["ort"].append(r[0])
            if not t["default"]:
                print(f"{name:<24} refused: {err}")
                flagged.append((name, "refused"))
                continue
            d, c = median(t["default"]), median(t["cpu"]) if t["cpu"] else float("nan")
            o = median(t["ort"]) if t["ort"] else float("nan")
            flags = []
            if o == o and d > 1.5 * o:
                flags.append("slow")
            if c == c and d > 1.05 * c:
                flags.append("placement")
            if flags:
                flagged.append((name, ",".join(flags)))
            print(f"{name:<24}{d:>11.3f}{c:>9.3f}{o:>9.3f}{d / o:>8.2f}{d / c:>8.2f}  "
                  f"{','.join(flags)}", flush=True)
        print(f"\nflagged: {len(flagged)} of {len(pats)}" +
              "".join(f"\n  {n}: {f}" for n, f in flagged))


if __name__ == "__main__":
    main()
