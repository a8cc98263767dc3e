#!/usr/bin/env python3
"""Export a model zoo with a third exporter: PaddlePaddle models through paddle2onnx.

    python3 bench/zoo/make_paddle_zoo.py [--out DIR] [--only NAME,...] [--list]

(needs `pip install paddlepaddle paddle2onnx onnx onnxruntime` for the interpreter that runs
it; a venv: Paddle pins its own NumPy and protobuf.)

paddle2onnx translates Paddle's program (PIR since Paddle 3) op by op with idioms of its own:
pools and interpolations with Paddle's attributes turned into ONNX ones, Paddle's fused ops split
again, its shapes as int64 Shape/Slice chains. The models: paddle.vision's classifiers (ResNet,
ResNeXt, Wide ResNet, MobileNet V1/V2/V3, ShuffleNet V2, SqueezeNet, DenseNet, Inception V3,
AlexNet, LeNet) at small sizes, a pre-norm Transformer encoder with GELU over int64 token ids, a
bidirectional two-layer LSTM into a GRU, and one-op-family models (group and instance norm,
PReLU, pixel shuffle, adaptive pools, grid_sample, interpolations, top-k, cumsum, gathers,
einsum, norms, reductions, strided and reversed slices, tile/expand, 1-D dilated and 3-D
convolutions, pools with ceil_mode, softmax on inner axes, dropout at inference). Weights are
random (nothing is downloaded).

For every model NAME it writes into DIR (default build/paddle_zoo), in make_zoo.py's format:
  NAME.onnx, NAME.in.x.npy, NAME.ref.<output>.npy (Paddle's own output)
and DIR/manifest.json, read by run_zoo.py. ONNX Runtime's error against Paddle is recorded
(`ort_err`), and a model whose conversion ONNX's reference evaluator also disagrees with is not
written (paddle2onnx 2.1 mis-converts an adaptive average pool to a size that does not divide
the input, GroupNorm and mixed Pad modes: ONNX Runtime and Plinth agree there, and both differ
from Paddle). An AveragePool with ceil_mode where ONNX Runtime 1.20 differs from Paddle and
from ONNX's reference is kept: the reference is right.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

from run_zoo import export_zoo, rel_error, save_io, zoo_entry, zoo_parser  # bench/zoo/run_zoo.py

SEED = 4321


def vision(name, build, shape):
    return dict(name=name, arch="paddle.vision " + name, build=build, shape=shape, dtype="float32")


def op_family(name, fn):
    return dict(name=name, arch="paddle ops: " + name, fn=fn, shape=[1, 4, 8, 8], dtype="float32")


def zoo():
    import paddle
    import paddle.nn as nn
    import paddle.nn.functional as F
    import paddle.vision.models as M

    class TxEnc(nn.Layer):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(100, 64)
            layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu",
                                               normalize_before=True)
            self.enc = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(64, 5)

        def forward(self, ids):
            return self.head(self.enc(self.emb(ids)).mean(axis=1))

    class Rnn(nn.Layer):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 32, num_layers=2, direction="bidirect")
            self.gru = nn.GRU(64, 24)
            self.fc = nn.Linear(24, 3)

        def forward(self, x):
            y, _ = self.lstm(x)
            y, _ = self.gru(y)
            return self.fc(y[:, -1])

    class Ops(nn.Layer):
        """A convolution and the layers the one-op-family models use, then FN."""
        def __init__(self, fn):
            super().__init__()
            self.fn = fn
            self.c = nn.Conv2D(4, 8, 3, padding=1)
            self.inorm = nn.InstanceNorm2D(8)
            self.pr = nn.PReLU(8)
            self.lin = nn.Linear(8, 6)

        def forward(self, x):
            return self.fn(self, x)

    specs = [
        vision("resnet18", lambda: M.resnet18(), [1, 3, 112, 112]),
        vision("resnext50", lambda: M.resnext50_32x4d(), [1, 3, 64, 64]),
        vision("wide_resnet50", lambda: M.wide_resnet50_2(), [1, 3, 64, 64]),
        vision("mobilenet_v1", lambda: M.mobilenet_v1(scale=0.5), [1, 3, 112, 112]),
        vision("mobilenet_v2", lambda: M.mobilenet_v2(scale=0.5), [1, 3, 112, 112]),
        vision("mobilenet_v3_small", lambda: M.mobilenet_v3_small(), [1, 3, 112, 112]),
        vision("shufflenet_v2", lambda: M.shufflenet_v2_x0_5(), [1, 3, 112, 112]),
        vision("squeezenet", lambda: M.squeezenet1_1(), [1, 3, 112, 112]),
        vision("densenet121", lambda: M.densenet121(), [1, 3, 64, 64]),
        vision("inception_v3", lambda: M.inception_v3(), [1, 3, 299, 299]),
        vision("alexnet", lambda: M.alexnet(num_classes=10), [1, 3, 224, 224]),
        vision("lenet", lambda: M.LeNet(), [1, 1, 28, 28]),
        dict(name="txenc", arch="paddle.nn.TransformerEncoder, pre-norm, GELU", build=TxEnc,
             shape=[2, 12], dtype="int64"),
        dict(name="rnn", arch="paddle.nn.LSTM (2 layers, bidirect) -> GRU", build=Rnn,
             shape=[2, 7, 16], dtype="float32"),
    ]
    ops = {
        "instnorm": lambda m, x: m.inorm(m.c(x)),
        "prelu": lambda m, x: m.pr(m.c(x)),
        "pixelshuffle": lambda m, x: F.pixel_shuffle(m.c(x), 2),
        "adaptive_max": lambda m, x: F.adaptive_max_pool2d(m.c(x), 4),
        "grid_sample": lambda m, x: F.grid_sample(
            x, paddle.tanh(m.c(x)[:, :2].transpose([0, 2, 3, 1])), align_corners=False),
        "interp_nearest": lambda m, x: F.interpolate(m.c(x), size=[13, 7], mode="nearest"),
        "interp_area": lambda m, x: F.interpolate(m.c(x), size=[4, 4], mode="area"),
        "topk_argmax": lambda m, x: paddle.topk(m.c(x).flatten(1), 5)[0] +
        paddle.argmax(x.flatten(1), axis=1, keepdim=True).astype("float32"),
        "cumsum_flip": lambda m, x: paddle.cumsum(paddle.flip(x, [2]), axis=3),
        "gather_select": lambda m, x: paddle.gather(x, paddle.to_tensor([2, 0, 1]), axis=2).sum() +
        paddle.index_select(x, paddle.to_tensor([1, 3]), axis=1),
        "where_clip": lambda m, x: paddle.where(x > 0, x * 2, paddle.clip(x, -0.3, 0.3)),
        "layernorm_last": lambda m, x: F.layer_norm(x, x.shape[-1:]),
        "einsum": lambda m, x: paddle.einsum("nchw,nchv->ncwv", x, x),
        "matmul_bcast": lambda m, x: paddle.matmul(x, x.transpose([0, 1, 3, 2])) / 4.0,
        "norms": lambda m, x: F.normalize(x, axis=1) + paddle.linalg.norm(x, axis=-1, keepdim=True),
        "reduce_mix": lambda m, x: x.max(axis=1, keepdim=True) - x.min(axis=[2, 3], keepdim=True) +
        x.prod(axis=1, keepdim=True) + x.logsumexp(axis=1, keepdim=True) +
        x.std(axis=1, keepdim=True),
        "strided_slice": lambda m, x: x[:, ::2, 1::3, ::-1] * 3,
        "tile_expand": lambda m, x: paddle.tile(x[:, :1], [1, 3, 1, 2]) +
        paddle.expand(x.mean(axis=[2, 3], keepdim=True)[:, :3], [1, 3, 8, 16]),
        "conv1d_dil": lambda m, x: F.conv1d(x.flatten(2), paddle.ones([5, 4, 3]) * 0.1,
                                            dilation=2, padding=2),
        "conv3d": lambda m, x: F.conv3d(x.unsqueeze(1), paddle.ones([2, 1, 3, 3, 3]) * 0.05,
                                        padding=1),
        "pool_ceil": lambda m, x: F.max_pool2d(x, 3, stride=2, ceil_mode=True) +
        F.avg_pool2d(x, 3, stride=2, ceil_mode=True, exclusive=False),
        "softmax_axis": lambda m, x: F.softmax(x, axis=2) + F.log_softmax(x, axis=1),
        "linear_3d": lambda m, x: m.lin(m.c(x).transpose([0, 2, 3, 1])),
        "dropout_eval": lambda m, x: F.dropout(x, 0.5, training=False) +
        F.dropout2d(x, 0.3, training=False),
    }
    for name, fn in ops.items():
        s = op_family(name, fn)
        s["build"] = (lambda f: lambda: Ops(f))(fn)
        specs.append(s)
    return specs


def export(s, outdir, tmp):
    import onnx
    import onnxruntime as ort
    import paddle
    import paddle2onnx
    from onnx.reference import ReferenceEvaluator

    paddle.seed(SEED)
    model = s["build"]()
    model.eval()
    spec = [paddle.static.InputSpec(shape=s["shape"], dtype=s["dtype"], name="x")]
    saved = os.path.join(tmp, s["name"])
    paddle.jit.save(model, os.path.join(saved, "model"), input_spec=spec)
    program = [f for f in os.listdir(saved) if f.endswith((".json", ".pdmodel"))][0]
    path = os.path.join(outdir, s["name"] + ".onnx")
    r = subprocess.run([sys.executable, "-m", "paddle2onnx.command", "--model_dir", saved,
                        "--model_filename", program, "--params_filename", "model.pdiparams",
                        "--save_file", path, "--opset_version", "17"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        raise RuntimeError("paddle2onnx failed: " + (r.stdout + r.stderr).strip().splitlines()[-1])
    rng = np.random.RandomState(SEED)
    x = (rng.randint(0, 100, s["shape"]).astype(np.int64) if s["dtype"] == "int64"
         else rng.uniform(-1, 1, s["shape"]).astype(np.float32))
    y = model(paddle.to_tensor(x))
    y = (y[0] if isinstance(y, (list, tuple)) else y).numpy()
    m = onnx.load(path)
    feed = {m.graph.input[0].name: x}
    ort_err = rel_error(ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                        .run(None, feed)[0], y)
    if ort_err > 1e-4:
        ref_err = rel_error(ReferenceEvaluator(m).run(None, feed)[0], y)
        if ref_err > 1e-4:
            os.remove(path)
            raise RuntimeError("paddle2onnx converted it wrongly: ONNX's reference differs from "
                               "Paddle by %.2e (ONNX Runtime by %.2e)" % (ref_err, ort_err))
    entry = zoo_entry(m, s["name"], s["arch"], "paddle2onnx %s, Paddle %s"
                      % (paddle2onnx.__version__, paddle.__version__), ort_err=ort_err)
    return save_io(outdir, entry, [(m.graph.input[0].name, x)], [(m.graph.output[0].name, y, {})])


def main():
    ap = zoo_parser(__doc__, "paddle_zoo")
    a = ap.parse_args()
    specs = zoo()
    if a.only:
        want = a.only.split(",")
        unknown = sorted(set(want) - {s["name"] for s in specs})
        if unknown:
            sys.exit("make_paddle_zoo.py: unknown model(s): " + ", ".join(unknown))
        specs = [s for s in specs if s["name"] in want]
    if a.list:
        for s in specs:
            print("%-18s %s" % (s["name"], s["arch"]))
        return
    with tempfile.TemporaryDirectory() as tmp:
        export_zoo([(s["name"], lambda s=s: export(s, a.out, tmp)) for s in specs], a.out,
                   "paddle2onnx", SEED, "make_paddle_zoo.py")


if __name__ == "__main__":
    main()
