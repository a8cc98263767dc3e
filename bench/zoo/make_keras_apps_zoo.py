#!/usr/bin/env python3
"""Keras Applications at full size through tf2onnx: the architectures as Keras ships them.

    python3 bench/zoo/make_keras_apps_zoo.py [--out DIR] [--only NAME,...] [--list]
        [--opset N] [--batch-free]

(needs `pip install tensorflow-cpu tf2onnx onnxruntime onnx` in the interpreter that runs it;
a venv does: `python3 -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu tf2onnx
onnxruntime onnx`.)

make_tf_zoo.py's models are small re-writings of published architectures, committed to the
tree. These are `keras.applications`' own models at 224x224 (299 for the Inceptions and
Xception; weights=None: random weights, and classifier_activation=None: logits, since a
softmax over random logits is one-hot and would hide any error), exported the way a user
exports them, `tf2onnx.convert.from_function` at opset 17. Keras 3.15 with TensorFlow 2.21
and tf2onnx 1.17 cannot export three of its applications: ConvNeXt (a depthwise convolution
stays a StatefulPartitionedCall), EfficientNet (its Normalization layer's constants become
graph inputs) and EfficientNetV2 with its preprocessing (the same; it runs here without);
VGG16's export took more than this 24 GiB machine had (TensorFlow, the tf2onnx graph and
ONNX Runtime's check each hold its 528 MB of weights several times). tf2onnx's own transpose optimizer can fail
on some graphs and leave a Transpose before and after every NHWC op (it logs a ValueError and
goes on: those models are kept as written, since users get them so).

Each model's inputs are a uint8-valued image in [0, 255] (what the models' preprocessing
expects) and the references TensorFlow's outputs (oneDNN's optimisations in TensorFlow off);
ONNX Runtime's error against them is recorded as `ort_err`, and an export whose ONNX Runtime
error passes 1e-4 fails (tf2onnx's conversion would be wrong, not a reference). Writes
make_zoo.py's format (NAME.onnx, NAME.in.*.npy, NAME.ref.*.npy, manifest.json) into DIR
(default build/keras_apps_zoo): `bench/zoo/run_zoo.py --zoo DIR` checks Plinth against the
references, `bench/zoo.py --zoo DIR` times it against ONNX Runtime.
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import make_tf_zoo as tfz  # noqa: E402  (the export and the manifest entry)

# (the keras.applications name, the zoo's name); 224x224x3 unless the model wants another
APPS = [
    ("DenseNet121", "ka_densenet121"),
    ("EfficientNetV2B0", "ka_efficientnetv2_b0"),
    ("InceptionResNetV2", "ka_inception_resnet_v2"),
    ("InceptionV3", "ka_inception_v3"),
    ("MobileNet", "ka_mobilenet"),
    ("MobileNetV2", "ka_mobilenet_v2"),
    ("MobileNetV3Small", "ka_mobilenet_v3_small"),
    ("MobileNetV3Large", "ka_mobilenet_v3_large"),
    ("NASNetMobile", "ka_nasnet_mobile"),
    ("ResNet50", "ka_resnet50"),
    ("ResNet50V2", "ka_resnet50_v2"),
    ("ResNet101V2", "ka_resnet101_v2"),
    ("Xception", "ka_xception"),
]
SIZE = {"InceptionV3": 299, "InceptionResNetV2": 299, "Xception": 299}


def specs(opset, batch_free):
    out = []
    for app, name in APPS:
        hw = SIZE.get(app, 224)

        def build(app=app, hw=hw):
            import keras
            kw = dict(include_preprocessing=False) if app.startswith("EfficientNetV2") else {}
            return getattr(keras.applications, app)(weights=None, input_shape=(hw, hw, 3),
                                                    classifier_activation=None, **kw)

        out.append(tfz.spec(name, "keras.applications." + app, build,
                            [("input", (1, hw, hw, 3), "float32", ("uint", 256))],
                            opset=opset, note="batch unknown" if batch_free else "",
                            dynamic=1 if batch_free else 0))
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "build", "keras_apps_zoo"))
    ap.add_argument("--only", default="", help="comma-separated zoo names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--batch-free", action="store_true", help="leave the batch dim unknown")
    a = ap.parse_args()
    zoo = tfz.select(specs(a.opset, a.batch_free), a.only, "make_keras_apps_zoo.py")
    if a.list:
        for s in zoo:
            print("%-24s %s" % (s["name"], s["arch"]))
        return
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    zoo_all = specs(a.opset, a.batch_free)
    tfz.export_all(zoo, zoo_all, a.out, True, "make_keras_apps_zoo.py")


if __name__ == "__main__":
    main()
