#!/usr/bin/env python3
"""Export a model zoo with MXNet's own ONNX exporter (mx.onnx.export_model).

    python3 bench/zoo/make_mxnet_zoo.py [--out DIR] [--only NAME,...] [--list]

(needs MXNet 1.9.1, NumPy before 1.24 and ONNX 1.13 for the interpreter that runs it, a venv:
`python3 -m venv /tmp/mxenv && /tmp/mxenv/bin/pip install mxnet==1.9.1 "numpy<1.24"
onnx==1.13.1`.)

MXNet writes ONNX its own way: every weight as packed float_data rather than raw_data, every
initializer also listed as a graph input (IR version 8 allows it: an input with a default), its
own node names, BatchNormalization with MXNet's fix_gamma handled at export. The models are
the Gluon model zoo's (ResNet-18 v1, ResNet-50 v2, MobileNet 1.0, MobileNet V2 0.5, SqueezeNet
1.1, VGG-11 with batch norm, AlexNet, Inception V3), random weights and batch-norm statistics,
MXNet's own outputs as the references.

For every model NAME it writes into DIR (default build/mxnet_zoo), in make_zoo.py's format,
NAME.onnx, NAME.in.0.npy, NAME.ref.0.npy and DIR/manifest.json, read by run_zoo.py.
"""
import os
import tempfile

import numpy as np

from run_zoo import export_zoo, save_io, zoo_entry, zoo_parser  # bench/zoo/run_zoo.py

SEED = 4321
ZOO = [  # name, Gluon model zoo name, input shape
    ("resnet18_v1", "resnet18_v1", (1, 3, 112, 112)),
    ("resnet50_v2", "resnet50_v2", (1, 3, 112, 112)),
    ("mobilenet1_0", "mobilenet1.0", (1, 3, 112, 112)),
    ("mobilenetv2_0_5", "mobilenetv2_0.5", (1, 3, 112, 112)),
    ("squeezenet1_1", "squeezenet1.1", (1, 3, 224, 224)),
    ("vgg11_bn", "vgg11_bn", (1, 3, 64, 64)),
    ("alexnet", "alexnet", (1, 3, 224, 224)),
    ("inceptionv3", "inceptionv3", (1, 3, 299, 299)),
]


def export(name, zoo_name, shape, outdir, tmp):
    import mxnet as mx
    import onnx
    from mxnet.gluon.model_zoo import vision
    mx.random.seed(SEED)
    np.random.seed(SEED)
    net = vision.get_model(zoo_name, pretrained=False)
    net.initialize(mx.init.Xavier())
    net(mx.nd.zeros(shape))  # shapes are inferred on the first call
    for k, p in net.collect_params().items():  # statistics that matter
        if k.endswith("running_mean"):
            p.set_data(mx.nd.random.uniform(-0.2, 0.2, p.shape))
        if k.endswith("running_var"):
            p.set_data(mx.nd.random.uniform(0.5, 1.5, p.shape))
    net.hybridize()
    x = mx.nd.random.uniform(-1, 1, shape)
    y = net(x).asnumpy()
    prefix = os.path.join(tmp, name)
    net.export(prefix)
    path = os.path.join(outdir, name + ".onnx")
    mx.onnx.export_model(prefix + "-symbol.json", prefix + "-0000.params", [shape],
                         [np.float32], path)
    m = onnx.load(path)
    entry = zoo_entry(m, name, "MXNet Gluon " + zoo_name, "mx.onnx %s" % mx.__version__)
    return save_io(outdir, entry, [(m.graph.input[0].name, x.asnumpy())],
                   [(m.graph.output[0].name, y, {})])


def main():
    ap = zoo_parser(__doc__, "mxnet_zoo")
    a = ap.parse_args()
    specs = [z for z in ZOO if not a.only or z[0] in a.only.split(",")]
    if a.list:
        for name, zoo_name, shape in specs:
            print("%-16s %-16s %s" % (name, zoo_name, shape))
        return
    with tempfile.TemporaryDirectory() as tmp:
        export_zoo([(n, lambda n=n, z=z, s=s: export(n, z, s, a.out, tmp)) for n, z, s in specs],
                   a.out, "mx.onnx", SEED, "make_mxnet_zoo.py")


if __name__ == "__main__":
    main()
