#!/usr/bin/env python3
"""Quantize one float ONNX model with ONNX Runtime's tool, both forms, and time it against ORT.

    python3 bench/zoo/quantize_one.py MODEL.onnx INPUT.npy [--out DIR]

(needs `pip install onnxruntime onnx numpy`.) Writes DIR/NAME_qop.onnx (QOperator, per-channel
weights) and DIR/NAME_qdq.onnx (QDQ, per-tensor), u8 activations and s8 weights, calibrated
on the input and three perturbed copies, with ONNX Runtime's outputs next to them: NAME_FORM.ref.npy
with its optimisations off (the graph's ONNX semantics) and NAME_FORM.refopt.npy with its
defaults (QDQ groups fused into integer kernels, which `[graph] qdq = int8` reproduces). The
quant zoo (make_quant_zoo.py) holds small models for CI; this is for full-size ones, e.g.
torchvision's resnet18 at 224x224, exported with Debian's python3-torch:

    /usr/bin/python3 -c "import torch, torchvision, numpy as np; m = torchvision.models.resnet18().eval(); \\
        x = torch.randn(1, 3, 224, 224); torch.onnx.export(m, x, 'resnet18.onnx', opset_version=13, \\
        input_names=['input'], output_names=['output']); np.save('input.npy', x.numpy())"
    python3 bench/zoo/quantize_one.py resnet18.onnx input.npy --out /tmp/big8

then `plinth bench /tmp/big8/resnet18_qdq.onnx --input input=input.npy --threads 2` against
`../shared/bench/peer_bench.py /tmp/big8/resnet18_qdq.onnx --threads 2 --input input=input.npy`.
"""
import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    os.makedirs(a.out, exist_ok=True)
    name = os.path.splitext(os.path.basename(a.model))[0]
    pre = os.path.join(a.out, name + "_pre.onnx")
    quant_pre_process(a.model, pre)
    x = np.load(a.input)
    feed_name = onnx.load(pre).graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            rs = [np.random.RandomState(i) for i in range(4)]
            self.it = iter([{feed_name: (x + 0.1 * r.randn(*x.shape)).astype(np.float32)} for r in rs])

        def get_next(self):
            return next(self.it, None)

    for form, fmt, per_channel in (("qop", QuantFormat.QOperator, True), ("qdq", QuantFormat.QDQ, False)):
        path = os.path.join(a.out, "%s_%s.onnx" % (name, form))
        quantize_static(pre, path, Reader(), quant_format=fmt, per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        for suffix, level in (("ref", ort.GraphOptimizationLevel.ORT_DISABLE_ALL),
                              ("refopt", ort.GraphOptimizationLevel.ORT_ENABLE_ALL)):
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            so.intra_op_num_threads = 2
            y = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {feed_name: x})[0]
            np.save(os.path.join(a.out, "%s_%s.%s.npy" % (name, form, suffix)), y)
        print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
