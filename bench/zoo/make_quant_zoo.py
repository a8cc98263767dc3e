#!/usr/bin/env python3
"""Quantize models of the PyTorch zoo with ONNX Runtime's quantization tool, as deployments do.

    python3 bench/zoo/make_quant_zoo.py [--zoo DIR] [--out DIR] [--list] [--only NAME,...]

(needs `pip install onnxruntime onnx numpy`: the interpreter on PATH; DIR is the PyTorch zoo that
`ctest -R zoo.models` exports, default build/tests/zoo/zoo.)

Int8 models in the field mostly come from onnxruntime.quantization, in three forms:
  qdq  quantize_static, QuantFormat.QDQ: QuantizeLinear/DequantizeLinear pairs around float ops
       (u8 activations, s8 weights, per-tensor), calibrated on a few perturbed inputs;
  qop  quantize_static, QuantFormat.QOperator: QLinearConv, QLinearMatMul, QLinearAdd and the
       like, with some ops (Resize, MaxPool, Concat) run on the u8 tensors themselves;
  dyn  quantize_dynamic: DynamicQuantizeLinear, MatMulInteger and ConvInteger on s8 weights,
       an LSTM as com.microsoft DynamicQuantizeLSTM (X and the hidden state quantized as it runs).
Each model is preprocessed with quant_pre_process first, as the tool's documentation asks.

References are ONNX Runtime's outputs with graph optimisations off (ORT_DISABLE_ALL): the
ONNX semantics of the graph as written. With its optimisations on, ONNX Runtime fuses
DequantizeLinear -> op -> QuantizeLinear into integer kernels that round differently (an
AveragePool in u8, say); that error is recorded as `ort_opt_err`. Writes, in make_zoo.py's
format, NAME.onnx, NAME.in.*.npy, NAME.ref.*.npy and manifest.json into DIR (default
tests/zoo/quant, committed: CI needs no ONNX Runtime). The CTest tests zoo.quant.cpu (cpu module,
1e-4) and zoo.quant.default (the default backend.ini, 3e-2: onednn computes the float ops of a
QDQ graph in another order, and a rounding that lands on .5 moves one step) check them.
"""
import argparse
import collections
import json
import os
import sys

import numpy as np

from run_zoo import rel_error  # the zoo's one error measure (bench/zoo/run_zoo.py)

# (torch zoo model, forms): small enough to commit, and every form on some model.
PICK = [
    ("resnet50_s", ("qdq", "qop")),
    ("mobilenet_v3_s", ("qdq", "qop", "dyn")),
    ("squeezenet_s", ("qop",)),
    ("yolo_s", ("qop",)),
    ("transformer_causal", ("qdq", "dyn")),
    ("vit_s", ("qdq",)),
    ("bilstm", ("qdq", "dyn")),
    ("lstm2", ("dyn",)),
    ("wav2vec_fe", ("qdq",)),
    ("convnext_s", ("dyn",)),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default=os.path.join(root, "build", "tests", "zoo", "zoo"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "zoo", "quant"))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", default="",
                    help="comma-separated model names (resnet50_s_qdq, ...): make only these and "
                         "merge them into the manifest already in --out")
    a = ap.parse_args()
    if a.list:
        for name, forms in PICK:
            print("%-20s %s" % (name, " ".join(forms)))
        return
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self, feeds):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    manifest = {e["name"]: e for e in json.load(open(os.path.join(a.zoo, "manifest.json")))["models"]}
    os.makedirs(a.out, exist_ok=True)
    only = set(x for x in a.only.split(",") if x)
    entries = []
    if only:
        known = set("%s_%s" % (b, f) for b, fs in PICK for f in fs)
        if only - known:
            sys.exit("make_quant_zoo.py: not in the pick: %s" % ", ".join(sorted(only - known)))
        kept = json.load(open(os.path.join(a.out, "manifest.json")))["models"]
        entries = [e for e in kept if e["name"] not in only]
    for base, forms in PICK:
        forms = tuple(f for f in forms if not only or "%s_%s" % (base, f) in only)
        if not forms:
            continue
        e = manifest[base]
        feeds = {i["name"]: np.load(os.path.join(a.zoo, i["file"])) for i in e["inputs"]}
        rng = np.random.RandomState(7)
        calib = [{k: (v + 0.1 * rng.standard_normal(v.shape)).astype(v.dtype)
                  if v.dtype == np.float32 else v for k, v in feeds.items()} for _ in range(4)]
        pre = os.path.join(a.out, base + ".pre.onnx")
        quant_pre_process(os.path.join(a.zoo, base + ".onnx"), pre, skip_symbolic_shape=True)
        for form in forms:
            name = "%s_%s" % (base, form)
            path = os.path.join(a.out, name + ".onnx")
            print("make_quant_zoo.py: %s" % name, file=sys.stderr, flush=True)
            if form == "dyn":
                quantize_dynamic(pre, path, weight_type=QuantType.QInt8)
            else:
                quantize_static(pre, path, Reader(calib),
                                quant_format=QuantFormat.QDQ if form == "qdq" else QuantFormat.QOperator,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            ys = ref.run(None, feeds)
            opt = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
            mp = onnx.load(path)
            entry = dict(name=name, arch="%s, %s" % (e["arch"], {"qdq": "QDQ int8", "qop": "QOperator int8",
                                                                 "dyn": "dynamic int8"}[form]),
                         opset=e["opset"], note="", fast=False, repro=False,
                         exporter="onnxruntime %s quantization" % ort.__version__,
                         nodes=len(mp.graph.node),
                         ops=dict(collections.Counter(n.op_type for n in mp.graph.node)),
                         ort_opt_err=max(rel_error(o, y) for o, y in zip(opt, ys)),
                         inputs=[], outputs=[])
            for i in e["inputs"]:
                f = "%s.in.%s.npy" % (name, i["name"])
                np.save(os.path.join(a.out, f), feeds[i["name"]])
                entry["inputs"].append(dict(i, file=f))
            for o, y in zip(ref.get_outputs(), ys):
                f = "%s.ref.%s.npy" % (name, o.name)
                np.save(os.path.join(a.out, f), y)
                entry["outputs"].append(dict(name=o.name, file=f, shape=list(y.shape),
                                             dtype=str(y.dtype),
                                             max_abs=float(np.abs(y).max()) if y.size else 0.0))
            entries.append(entry)
        os.remove(pre)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(dict(exporter="onnxruntime.quantization", models=entries), f, indent=1)
    print("make_quant_zoo.py: %d models -> %s" % (len(entries), os.path.abspath(a.out)), file=sys.stderr)


if __name__ == "__main__":
    main()
