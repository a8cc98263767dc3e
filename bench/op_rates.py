#!/usr/bin/env python3
"""bench/op_rates.py — checks the cost model behind `choose = cost` against this machine, one op
at a time: for each single-node model of a grid (convolutions 1x1, 3x3, depthwise, strided,
dilated, 1-D and 2-D; transposed convolutions; matrix products; eltwise and binary ops) it
times the node on onednn (`order = onednn, cpu`, `choose = first`) and on cpu (`order = cpu`),
alternating, and reads `plinth explain --json`'s estimate of both. A row is flagged when the
estimates pick the slower backend by more than 10% (what `choose = cost` would then get wrong on
this CPU), and the summary gives, per op class, the measured onednn/cpu ratio against the
estimated one. Timing only: nothing here asserts a speed.

    python3 bench/op_rates.py [--rounds R] [--runs N] [--threads N] [--only SUBSTRING]

Needs the onnx and numpy Python packages; writes its models into a temporary folder.
"""
import argparse, json, math, os, re, subprocess, sys, tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo import config, last_json, median  # noqa: E402  (the zoo's configurations and helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLINTH = os.path.join(ROOT, "build/bin/plinth")


def conv(name, n, c, m, spatial, k, stride=1, dil=1, group=1, transpose=False):
    """A Conv (or ConvTranspose) of an N x C x SPATIAL input, M outputs, kernel K."""
    r = len(spatial)
    pad = 0 if transpose else (k - 1) * dil // 2
    w_shape = [c, m // group] + [k] * r if transpose else [m, c // group] + [k] * r
    rng = np.random.default_rng(1)
    w = helper.make_tensor("w", TensorProto.FLOAT, w_shape,
                           rng.standard_normal(int(np.prod(w_shape))).astype(np.float32) * 0.1)
    b = helper.make_tensor("b", TensorProto.FLOAT, [m], np.zeros(m, np.float32))
    attrs = dict(kernel_shape=[k] * r, strides=[stride] * r, group=group)
    if not transpose:
        attrs.update(dilations=[dil] * r, pads=[pad] * (2 * r))
    node = helper.make_node("ConvTranspose" if transpose else "Conv", ["x", "w", "b"], ["y"],
                            **attrs)
    if transpose:
        out = [(s - 1) * stride + k for s in spatial]
    else:
        out = [(s + 2 * pad - dil * (k - 1) - 1) // stride + 1 for s in spatial]
    flops = 2.0 * n * m * math.prod(out) * (c // group) * k ** r
    g = helper.make_graph([node], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c] + spatial)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m] + out)],
                          [w, b])
    return g, flops


def matmul(name, m, k, n):
    rng = np.random.default_rng(2)
    w = helper.make_tensor("w", TensorProto.FLOAT, [k, n],
                           rng.standard_normal(k * n).astype(np.float32) * 0.1)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    return g, 2.0 * m * k * n


def gemm(name, m, k, n):
    """Gemm(x[m,k], W[n,k], b[n], transB = 1): a Linear layer as torch.onnx exports it."""
    rng = np.random.default_rng(3)
    w = helper.make_tensor("w", TensorProto.FLOAT, [n, k],
                           rng.standard_normal(k * n).astype(np.float32) * 0.1)
    b = helper.make_tensor("b", TensorProto.FLOAT, [n], rng.standard_normal(n).astype(np.float32))
    g = helper.make_graph([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w, b])
    return g, 2.0 * m * k * n


def bmm(name, b, m, k, n):
    """MatMul of two activations, [b, m, k] @ [b, k, n]: attention's scores and context."""
    g = helper.make_graph([helper.make_node("MatMul", ["x", "x2"], ["y"])], name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, m, k]),
                           helper.make_tensor_value_info("x2", TensorProto.FLOAT, [b, k, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, m, n])])
    return g, 2.0 * b * m * k * n


def eltwise(name, op, shape, binary=False):
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)]
    inits = []
    if binary:
        inits.append(helper.make_tensor("c", TensorProto.FLOAT, [shape[1]] + [1] * (len(shape) - 2),
                                        np.linspace(-1, 1, shape[1]).astype(np.float32)))
    node = helper.make_node(op, ["x", "c"] if binary else ["x"], ["y"])
    g = helper.make_graph([node], name, ins,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return g, float(math.prod(shape))


def grid():
    models = []
    for c, h in ((16, 56), (64, 28), (128, 14), (256, 7)):
        models.append(("conv3x3", f"conv3x3_c{c}_h{h}", *conv("m", 1, c, c, [h, h], 3)))
        models.append(("conv1x1", f"conv1x1_c{c}_h{h}", *conv("m", 1, c, c, [h, h], 1)))
        models.append(("depthwise", f"dw3x3_c{c}_h{h}", *conv("m", 1, c, c, [h, h], 3, group=c)))
    models.append(("conv3x3", "conv3x3_c3_h112_s2", *conv("m", 1, 3, 16, [112, 112], 3, stride=2)))
    models.append(("stem", "conv7x7_c3_h64_s2", *conv("m", 1, 3, 16, [64, 64], 7, stride=2)))
    models.append(("stem", "conv7x7_c3_h224_s2", *conv("m", 1, 3, 64, [224, 224], 7, stride=2)))
    models.append(("stem", "conv3x3_c3_h96_s2", *conv("m", 1, 3, 32, [96, 96], 3, stride=2)))
    models.append(("conv3x3", "conv3x3_c64_h28_s2", *conv("m", 1, 64, 128, [28, 28], 3, stride=2)))
    for d in (2, 4, 12):
        models.append(("dilated", f"conv3x3_c64_h16_d{d}",
                       *conv("m", 1, 64, 64, [16, 16], 3, dil=d)))
    for d in (1, 2, 8):
        models.append(("conv1d" if d == 1 else "dilated", f"conv1d_c48_l64_d{d}",
                       *conv("m", 2, 48, 48, [64], 3, dil=d)))
    models.append(("convT", "convT2x2_c16_h32", *conv("m", 1, 16, 8, [32, 32], 2, stride=2,
                                                        transpose=True)))
    models.append(("convT", "convT3x3_c32_h16", *conv("m", 1, 32, 16, [16, 16], 3, stride=2,
                                                        transpose=True)))
    for m, k, n in ((64, 256, 256), (197, 192, 768), (8, 512, 512), (1, 1024, 1024),
                    (1, 512, 100), (17, 64, 64), (17, 64, 192), (17, 256, 64), (50, 128, 128)):
        models.append(("matmul", f"matmul_{m}x{k}x{n}", *matmul("m", m, k, n)))
    for m, k, n in ((1, 512, 1000), (1, 2048, 1000), (32, 512, 100)):
        models.append(("matmul", f"gemm_tb_{m}x{k}x{n}", *gemm("m", m, k, n)))
    for b, m, k, n in ((4, 17, 16, 17), (4, 17, 17, 16), (12, 64, 64, 64), (8, 128, 32, 128)):
        models.append(("bmm", f"bmm_{b}x{m}x{k}x{n}", *bmm("m", b, m, k, n)))
    for op in ("Relu", "Sigmoid", "Tanh"):
        models.append(("eltwise", f"{op.lower()}_64x28x28", *eltwise("m", op, [1, 64, 28, 28])))
    models.append(("binary", "add_bcast_64x28x28", *eltwise("m", "Add", [1, 64, 28, 28], True)))
    models.append(("binary", "mul_bcast_64x28x28", *eltwise("m", "Mul", [1, 64, 28, 28], True)))
    return models


def bench(model, ini, args):
    r = subprocess.run([PLINTH, "bench", model, "--config", ini, "--threads", str(args.threads),
                        "--runs", str(args.runs), "--warmup", "10", "--json"],
                       capture_output=True, text=True)
    j, err = last_json(r)
    return (j["median_ms"] if j else None), err


def explain(model, ini):
    """(backend the default configuration picks, onednn's estimate, cpu's estimate) in us."""
    r = subprocess.run([PLINTH, "explain", model, "--config", ini, "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, None, None
    j = json.loads(r.stdout)
    backend = j["placement"][0]["backend"] if j["placement"] else None
    for s in j.get("subgraphs", []):
        e = s.get("estimate")
        if e:
            return backend, e["total_us"], e.get("alternative_us")
    # Refused by onednn on cost: the reason carries both numbers.
    for p in j["placement"]:
        why = " ".join(p.get("reasons", {}).values())
        m = re.search(r"about ([0-9.]+) us here .* against ([0-9.]+) us on cpu", why)
        if m:
            return backend, float(m.group(1)), float(m.group(2))
    return backend, None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    if not os.access(PLINTH, os.X_OK):
        sys.exit("op_rates.py: build/bin/plinth is not built (bash tools/dev.sh demo)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        ini_default = config(tmp, "default.ini", "onednn, cpu", choose="cost")
        ini_odnn = config(tmp, "onednn.ini", "onednn, cpu", choose="first")
        ini_cpu = config(tmp, "cpu.ini", "cpu", choose="first")
        print(f"{'model':<24}{'class':<10}{'MFLOP':>8}{'onednn_ms':>11}{'cpu_ms':>9}"
              f"{'GF/s odnn':>10}{'GF/s cpu':>9}{'meas o/c':>9}{'est o/c':>8}  picks", flush=True)
        for cls, name, g, flops in grid():
            if args.only not in name:
                continue
            model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            t_o, t_c, err = [], [], None
            for r in range(args.rounds):
                for ini, acc in ((ini_odnn, t_o), (ini_cpu, t_c))[:: 1 if r % 2 == 0 else -1]:
                    v, e = bench(path, ini, args)
                    acc.append(v)
                    err = err or e
            o, c = median(t_o), median(t_c)
            picks, est_o, est_c = explain(path, ini_default)
            meas = o / c if o and c else None
            est = est_o / est_c if est_o and est_c else None
            wrong = meas is not None and ((picks == "onednn" and meas > 1.1) or
                                          (picks == "cpu" and meas < 1 / 1.1))
            rows.append(dict(model=name, cls=cls, mflop=flops / 1e6, onednn_ms=o, cpu_ms=c,
                             measured=meas, estimated=est, picks=picks, wrong=wrong, error=err))
            gf = lambda t: f"{flops / (t * 1e6):10.1f}" if t else f"{'n/a':>10}"
            fmt = lambda v, w=9: f"{v:{w}.3f}" if v is not None else f"{'n/a':>{w}}"
            print(f"{name:<24}{cls:<10}{flops / 1e6:8.2f}{fmt(o, 11)}{fmt(c)}{gf(o)}{gf(c)[1:]}"
                  f"{fmt(meas)}{fmt(est, 8)}  {picks}{'  <- slower pick' if wrong else ''}"
                  f"{'  (' + err + ')' if err else ''}", flush=True)
    print()
    for cls in dict.fromkeys(r["cls"] for r in rows):
        ms = [r["measured"] for r in rows if r["cls"] == cls and r["measured"]]
        es = [r["estimated"] for r in rows if r["cls"] == cls and r["estimated"]]
        geo = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")
        print(f"{cls:<10} onednn/cpu measured {geo(ms):.2f}, estimated {geo(es):.2f}")
    print(f"slower picks: {sum(r['wrong'] for r in rows)} of {len(rows)} "
          f"({', '.join(r['model'] for r in rows if r['wrong'])})")


if __name__ == "__main__":
    main()
