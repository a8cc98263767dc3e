#!/usr/bin/env python3
"""Export a model zoo from TensorFlow Lite files through tf2onnx's TFLite front end.

    python3 bench/zoo/make_tflite_zoo.py [--out DIR] [--only NAME,...] [--list] [--no-mediapipe]

(needs `pip install tensorflow-cpu tf2onnx onnxruntime` for the interpreter that runs it, and
pip able to download the mediapipe 0.10.14 wheel, whose .tflite files are taken as they ship.)

TFLite models reach ONNX through `tf2onnx --tflite`, which translates TFLite's own ops, not a
TensorFlow graph: NHWC with Transposes around every layout-sensitive op, fused activations split
out, TFLite's quantization as QuantizeLinear/DequantizeLinear with per-channel int8 weights,
Keras 3 layers as TFLite lowered them (a nearest UpSampling2D as ExpandDims, Tile, Reshape). The
models:
- MediaPipe's own models (face detection and landmarks, iris, palm detection, hand landmarks,
  pose landmarks, hand recrop; f16 weights dequantized at load), as shipped in its wheel; those
  with MediaPipe's custom ops (face_landmark_with_attention, the selfie segmenters' transposed
  convolution with bias) and the sparse ones tf2onnx cannot convert are reported and skipped;
- Keras MobileNetV2 (alpha 0.5, 128x128), MobileNetV3Small (96x96), a small U-Net-like net
  (strided and depthwise convolutions, batch norm, ReLU6, residual Add, Conv2DTranspose, nearest
  UpSampling2D, Concatenate, pools, softmax) and an MLP, each converted by the TFLite converter
  five ways: f32, f16 weights, dynamic-range int8 weights, full int8 with float input and
  output, and full int8 with int8 input and output.

For every model NAME it writes into DIR (default build/tflite_zoo), in make_zoo.py's format,
NAME.onnx, NAME.in.<input>.npy and NAME.ref.<output>.npy, the reference being the TFLite
interpreter's output, and DIR/manifest.json for run_zoo.py. ONNX Runtime's error against TFLite
is recorded (`ort_err`), and each output's tolerance is 1.5 times ONNX Runtime's error on it, at
least 1e-4: TFLite's integer kernels round where QDQ's float arithmetic does not, and an output
near zero (pose_landmark_full's presence score on a random image, 1e-9) makes any difference a
large relative one. A float model ONNX Runtime differs on by over 2e-2 on an output of some
size is not written.
"""
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np

from run_zoo import export_zoo, rel_error, save_io, zoo_entry, zoo_parser  # bench/zoo/run_zoo.py

SEED = 4321
MEDIAPIPE = "mediapipe==0.10.14"
MODES = ("f32", "f16", "dyn", "int8", "int8io")


def keras_models():
    import keras
    L = keras.layers

    def unet():
        i = keras.Input((64, 64, 3))
        x = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(i)
        y = L.DepthwiseConv2D(3, padding="same")(x)
        y = L.ReLU(6.0)(L.BatchNormalization()(y))
        z = L.Conv2DTranspose(8, 3, strides=2, padding="same")(L.Add()([x, y]))
        z = L.Concatenate()([z, L.UpSampling2D()(L.Conv2D(8, 1)(x))])
        z = L.GlobalAveragePooling2D()(L.AveragePooling2D(2)(z))
        return keras.Model(i, L.Dense(10, activation="softmax")(z))

    def mlp():
        i = keras.Input((32,))
        x = L.Dense(64, activation="tanh")(i)
        return keras.Model(i, L.Dense(5)(L.Dense(64, activation="sigmoid")(x)))

    return {
        "mnv2": (lambda: keras.applications.MobileNetV2(input_shape=(128, 128, 3), alpha=0.5,
                                                        weights=None, classifier_activation=None),
                 (128, 128, 3)),
        "mnv3s": (lambda: keras.applications.MobileNetV3Small(
            input_shape=(96, 96, 3), weights=None, include_preprocessing=False,
            classifier_activation=None), (96, 96, 3)),
        "unet": (unet, (64, 64, 3)),
        "mlp": (mlp, (32,)),
    }


def tflite_of_keras(build, shape, mode):
    import keras
    import tensorflow as tf
    keras.utils.set_random_seed(SEED)
    model = build()
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "f32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "f16":
        conv.target_spec.supported_types = [tf.float16]
    if mode.startswith("int8"):
        def rep():
            r = np.random.RandomState(SEED)
            for _ in range(8):
                yield [r.uniform(-1, 1, (1,) + shape).astype(np.float32)]
        conv.representative_dataset = rep
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if mode == "int8io":
            conv.inference_input_type = tf.int8
            conv.inference_output_type = tf.int8
    return conv.convert()


def mediapipe_files(tmp):
    """The .tflite files of the mediapipe wheel: name -> bytes."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", MEDIAPIPE,
                    "-d", tmp], check=True)
    wheel = glob.glob(os.path.join(tmp, "mediapipe-*.whl"))[0]
    out = {}
    with zipfile.ZipFile(wheel) as z:
        for n in z.namelist():
            if n.startswith("mediapipe/modules/") and n.endswith(".tflite"):
                out["mp_" + os.path.basename(n)[:-7]] = z.read(n)
    return out


def fixed_batch(path):
    """Sets an open leading dim of every input and output to 1 (the TFLite converter's batch)."""
    import onnx
    m = onnx.load(path)
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) > 0 and not dims[0].HasField("dim_value"):
            dims[0].Clear()
            dims[0].dim_value = 1
    onnx.save(m, path)
    return m


def export(name, blob, outdir, tmp, quantized):
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx
    src = os.path.join(tmp, name + ".tflite")
    with open(src, "wb") as f:
        f.write(blob)
    path = os.path.join(outdir, name + ".onnx")
    r = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--tflite", src, "--output", path,
                        "--opset", "17"], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        raise RuntimeError("tf2onnx failed: " + (r.stdout + r.stderr).strip().splitlines()[-1])
    m = fixed_batch(path)
    interp = tf.lite.Interpreter(model_content=blob)
    interp.allocate_tensors()
    rng = np.random.RandomState(SEED)
    xs = []
    for d in interp.get_input_details():
        shape = [int(s) if s > 0 else 1 for s in d["shape"]]
        dt = np.dtype(d["dtype"])
        x = (rng.randint(-128, 128, shape).astype(dt) if dt.kind == "i" and dt.itemsize == 1
             else rng.uniform(-1, 1, shape).astype(dt))
        interp.set_tensor(d["index"], x)
        xs.append(x)
    interp.invoke()
    outs = interp.get_output_details()
    refs = [interp.get_tensor(d["index"]) for d in outs]
    names_in = [v.name for v in m.graph.input]
    names_out = [v.name for v in m.graph.output]
    if len(names_in) != len(xs) or len(names_out) != len(refs):
        raise RuntimeError("the ONNX model's inputs or outputs do not match the TFLite model's")
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, dict(zip(names_in, xs)))
    # TFLite lists outputs in its own order: each ONNX output is the TFLite tensor of its name
    # (tf2onnx keeps them), else the one of its shape and nearest values
    order, left = [], list(range(len(refs)))
    for n, g in zip(names_out, got):
        named = [k for k in left if outs[k]["name"] == n and refs[k].shape == g.shape]
        k = named[0] if named else min((k for k in left if refs[k].shape == g.shape),
                                       key=lambda k: rel_error(g, refs[k]), default=None)
        if k is None:
            raise RuntimeError("no TFLite output of shape %s" % (g.shape,))
        order.append(k)
        left.remove(k)
    refs = [refs[k] for k in order]
    errs = [rel_error(g, y) for g, y in zip(got, refs)]
    ort_err = max(errs)
    entry = zoo_entry(m, name, "TFLite via tf2onnx: " + name,
                      "tf2onnx %s (--tflite), TensorFlow %s" % (tf2onnx.__version__, tf.__version__),
                      ort_err=ort_err)
    for e, y in zip(errs, refs):
        if not quantized and e > 2e-2 and float(np.abs(y.astype(np.float64)).max()) >= 1e-3:
            raise RuntimeError("ONNX Runtime differs from TFLite by %.2e: not a usable reference"
                               % e)
    return save_io(outdir, entry, list(zip(names_in, xs)),
                   [(n, y, dict(tol=max(1e-4, 1.5 * e))) for n, y, e in zip(names_out, refs, errs)])


def main():
    ap = zoo_parser(__doc__, "tflite_zoo", "print the Keras part of the zoo and exit")
    ap.add_argument("--no-mediapipe", action="store_true", help="leave MediaPipe's models out")
    a = ap.parse_args()
    keras_specs = [(n + "_" + mode, n, mode) for n in ("mnv2", "mnv3s", "unet", "mlp") for mode in MODES]
    if a.list:
        for name, _, mode in keras_specs:
            print(name)
        return
    only = set(a.only.split(",")) if a.only else None
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        if not a.no_mediapipe:
            for name, blob in sorted(mediapipe_files(tmp).items()):
                jobs.append((name, lambda b=blob: b, False))
        builds = keras_models()
        for name, model, mode in keras_specs:
            build, shape = builds[model]
            jobs.append((name, lambda b=build, s=shape, m=mode: tflite_of_keras(b, s, m),
                         mode not in ("f32", "f16")))
        export_zoo([(name, lambda n=name, b=blob, q=q: export(n, b(), a.out, tmp, q))
                    for name, blob, q in jobs if only is None or name in only],
                   a.out, "tf2onnx --tflite", SEED, "make_tflite_zoo.py")


if __name__ == "__main__":
    main()
