#!/usr/bin/env python3
"""Export a second model zoo with another exporter: Keras/TensorFlow models through tf2onnx.

    python3 bench/zoo/make_tf_zoo.py [--out DIR] [--only NAME,...] [--list]

(needs `pip install tensorflow-cpu tf2onnx onnxruntime`; the interpreter on PATH, not Debian's.)

The PyTorch zoo (make_zoo.py) exercises one exporter's idioms. tf2onnx writes other ones: NHWC
graphs with Transpose pairs around every layout-sensitive op, BatchNormalization folded to Mul/Add,
`SAME` padding as explicit Pad nodes or asymmetric pads, Keras RNNs as ONNX LSTM/GRU or as
Loop/Scan, MultiHeadAttention as Einsum, tf.image.resize as Resize with its own coordinate modes,
int64 shape arithmetic (Shape/Slice/Concat/Cast chains), Identity outputs named `Identity:0`.
The models here are written with Keras layers after published architectures, small enough to
commit (the files live in tests/zoo/tf, so CI needs no TensorFlow).

For every model NAME it writes into DIR (default tests/zoo/tf), in make_zoo.py's format:
  NAME.onnx, NAME.in.<input>.npy, NAME.ref.<output>.npy (TensorFlow's output, oneDNN off)
and DIR/manifest.json, read by run_zoo.py. Every model is also run by ONNX Runtime; its error
against TensorFlow is recorded (`ort_err`) and the export fails when it exceeds 1e-4, so a
reference is never a tf2onnx conversion bug.
"""
import argparse
import collections
import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # plain f32 reference

import numpy as np

from run_zoo import rel_error  # the zoo's one error measure (bench/zoo/run_zoo.py)

SEED = 4321


def spec(name, arch, build, inputs, opset=15, note="", dynamic=0):
    """DYNAMIC: how many leading dims of every input the exported model leaves unknown (batch,
    then sequence); the references are computed at the shapes INPUTS gives."""
    return dict(name=name, arch=arch, build=build, inputs=inputs, opset=opset, note=note,
                dynamic=dynamic)


# ----------------------------------------------------------------------------- architectures
# Each build() returns a Keras model; inputs are (name, shape, dtype, kind) with kind "unit"
# (uniform [0, 1)), "normal" or ("int", high).

def build_mobilenet_v2():
    import keras
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None,
                                          classes=10)


def build_mobilenet_v3():
    import keras
    from keras import layers as L
    base = keras.applications.MobileNetV3Small(input_shape=(96, 96, 3), alpha=0.75, weights=None,
                                               include_top=False, include_preprocessing=True)
    # the classifier top (a 1x1 convolution to 1024 channels) would be most of the file
    x0 = keras.Input((96, 96, 3), name="input")
    x = L.GlobalAveragePooling2D()(base(x0))
    return keras.Model(x0, L.Dense(10, activation="softmax")(L.Activation("hard_swish")(x)))


def build_resnet_v2():
    """Pre-activation ResNet (He et al. 2016), strided 3x3 with SAME padding (asymmetric pads)."""
    import keras
    from keras import layers as L
    x0 = keras.Input((64, 64, 3), name="image")
    x = L.Conv2D(16, 7, strides=2, padding="same")(x0)
    x = L.MaxPooling2D(3, strides=2, padding="same")(x)
    for width, stride in ((16, 1), (32, 2), (64, 2)):
        p = L.ReLU()(L.BatchNormalization()(x))
        short = x if stride == 1 and x.shape[-1] == width else L.Conv2D(width, 1, strides=stride)(p)
        y = L.Conv2D(width, 3, strides=stride, padding="same", use_bias=False)(p)
        y = L.ReLU()(L.BatchNormalization()(y))
        y = L.Conv2D(width, 3, padding="same")(y)
        x = L.Add()([short, y])
    x = L.ReLU()(L.BatchNormalization()(x))
    x = L.GlobalAveragePooling2D()(x)
    return keras.Model(x0, L.Dense(20, activation="softmax")(x))


def build_efficientnet():
    """EfficientNet-B0 style MBConv blocks: Rescaling preprocessing, swish,
    depthwise convolutions, squeeze-and-excitation with keepdims mean, residual with Dropout."""
    import keras
    from keras import layers as L
    x0 = keras.Input((64, 64, 3), name="image")
    x = L.Rescaling(1.0 / 127.5, offset=-1.0)(x0)
    x = L.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(x)
    x = L.Activation("swish")(L.BatchNormalization()(x))
    for cin, cout, stride, expand in ((16, 16, 1, 1), (16, 24, 2, 4), (24, 24, 1, 4), (24, 40, 2, 4)):
        inp = x
        if expand != 1:
            x = L.Conv2D(cin * expand, 1, use_bias=False)(x)
            x = L.Activation("swish")(L.BatchNormalization()(x))
        x = L.DepthwiseConv2D(3, strides=stride, padding="same", use_bias=False)(x)
        x = L.Activation("swish")(L.BatchNormalization()(x))
        se = L.GlobalAveragePooling2D(keepdims=True)(x)
        se = L.Conv2D(max(1, cin // 4), 1, activation="swish")(se)
        se = L.Conv2D(x.shape[-1], 1, activation="sigmoid")(se)
        x = L.Multiply()([x, se])
        x = L.BatchNormalization()(L.Conv2D(cout, 1, use_bias=False)(x))
        if stride == 1 and cin == cout:
            x = L.Add()([L.Dropout(0.2)(x), inp])
    x = L.GlobalAveragePooling2D()(L.Activation("swish")(x))
    return keras.Model(x0, L.Dense(10)(x))


def build_densenet():
    """DenseNet-BC: BN-ReLU-Conv1x1-BN-ReLU-Conv3x3 layers concatenated on the channel axis, a
    transition with AveragePooling2D."""
    import keras
    from keras import layers as L
    x0 = keras.Input((48, 48, 3), name="image")
    x = L.Conv2D(24, 3, padding="same", use_bias=False)(x0)
    for block in range(2):
        for _ in range(4):
            y = L.ReLU()(L.BatchNormalization()(x))
            y = L.Conv2D(48, 1, use_bias=False)(y)
            y = L.ReLU()(L.BatchNormalization()(y))
            y = L.Conv2D(12, 3, padding="same", use_bias=False)(y)
            x = L.Concatenate()([x, y])
        if block == 0:
            x = L.ReLU()(L.BatchNormalization()(x))
            x = L.Conv2D(x.shape[-1] // 2, 1, use_bias=False)(x)
            x = L.AveragePooling2D(2)(x)
    x = L.GlobalAveragePooling2D()(L.ReLU()(L.BatchNormalization()(x)))
    return keras.Model(x0, L.Dense(10)(x))


def build_xception():
    """Xception entry flow: SeparableConv2D, strided MaxPooling2D with SAME padding, 1x1 strided
    shortcuts."""
    import keras
    from keras import layers as L
    x0 = keras.Input((64, 64, 3), name="image")
    x = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(16, 3, strides=2, use_bias=False)(x0)))
    x = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(32, 3, use_bias=False)(x)))
    for width in (32, 64):
        short = L.BatchNormalization()(L.Conv2D(width, 1, strides=2, padding="same", use_bias=False)(x))
        y = L.SeparableConv2D(width, 3, padding="same", use_bias=False)(x)
        y = L.Activation("relu")(L.BatchNormalization()(y))
        y = L.SeparableConv2D(width, 3, padding="same", use_bias=False)(y)
        y = L.BatchNormalization()(y)
        y = L.MaxPooling2D(3, strides=2, padding="same")(y)
        x = L.Add()([y, short])
    x = L.GlobalMaxPooling2D()(x)
    return keras.Model(x0, L.Dense(10, activation="softmax")(x))


def build_unet():
    """U-Net: Conv2DTranspose and UpSampling2D (nearest and bilinear) decoders, skip connections
    concatenated on the NHWC channel axis, ZeroPadding2D and Cropping2D."""
    import keras
    from keras import layers as L
    x0 = keras.Input((64, 64, 3), name="image")
    e1 = L.Conv2D(8, 3, padding="same", activation="relu")(x0)
    e2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.MaxPooling2D()(e1))
    e3 = L.Conv2D(32, 3, padding="same", activation="relu")(L.MaxPooling2D()(e2))
    d2 = L.Conv2DTranspose(16, 2, strides=2)(e3)
    d2 = L.Conv2D(16, 3, padding="same", activation="relu")(L.Concatenate()([d2, e2]))
    d1 = L.UpSampling2D(interpolation="bilinear")(d2)
    d1 = L.Conv2D(8, 3, padding="same", activation="relu")(L.Concatenate()([d1, e1]))
    n = L.UpSampling2D(size=(2, 2), interpolation="nearest")(e3)
    n = L.Cropping2D(((1, 1), (2, 2)))(L.ZeroPadding2D(((1, 1), (2, 2)))(n))
    n = L.Conv2D(8, 1)(L.UpSampling2D(2)(n))
    return keras.Model(x0, L.Conv2D(2, 1, activation="sigmoid")(L.Add()([d1, n])))


def build_audio_cnn():
    """Keyword-spotting 1-D CNN: causal and dilated Conv1D, SeparableConv1D, AveragePooling1D,
    LeakyReLU/ELU, GlobalMaxPooling1D."""
    import keras
    from keras import layers as L
    x0 = keras.Input((400, 13), name="mfcc")
    x = L.Conv1D(32, 5, padding="causal")(x0)
    x = L.LeakyReLU(negative_slope=0.1)(x)
    x = L.Conv1D(32, 3, dilation_rate=2, padding="same", activation="elu")(x)
    x = L.AveragePooling1D(2)(x)
    x = L.SeparableConv1D(48, 5, padding="same", activation="relu")(x)
    x = L.MaxPooling1D(2, padding="same")(x)
    x = L.Conv1D(64, 3, strides=2, padding="valid", activation="selu")(x)
    x = L.GlobalMaxPooling1D()(x)
    return keras.Model(x0, L.Dense(12)(x))


def build_text_lstm():
    """Text classifier: Embedding (int32 token ids), Bidirectional LSTM, GRU, Dense."""
    import keras
    from keras import layers as L
    x0 = keras.Input((24,), dtype="int32", name="tokens")
    x = L.Embedding(500, 32)(x0)
    x = L.Bidirectional(L.LSTM(24, return_sequences=True))(x)
    x = L.GRU(32)(x)
    return keras.Model(x0, L.Dense(4, activation="softmax")(x))


def build_seq_gru():
    """Sequence tagger: stacked GRU (reset_after, Keras' default) and SimpleRNN with tanh,
    TimeDistributed Dense."""
    import keras
    from keras import layers as L
    x0 = keras.Input((30, 16), name="frames")
    x = L.GRU(32, return_sequences=True)(x0)
    x = L.SimpleRNN(24, return_sequences=True)(x)
    x = L.LSTM(16, return_sequences=True, go_backwards=False)(x)
    return keras.Model(x0, L.TimeDistributed(L.Dense(5))(x))


def position_embedding(length, width):
    """Learned position embeddings added to the tokens (a layer weight, as BERT and ViT have)."""
    import keras

    class AddPosition(keras.layers.Layer):
        def build(self, shape):
            self.pos = self.add_weight(shape=(1, length, width), initializer="random_normal")

        def call(self, x):
            return x + self.pos

    return AddPosition()


def gelu_erf(x):
    """Exact GELU through erf (Keras 3's gelu uses erfc, which tf2onnx cannot convert; BERT
    exports compute it this way)."""
    import tensorflow as tf
    import keras

    class Gelu(keras.layers.Layer):
        def call(self, x):
            return 0.5 * x * (1.0 + tf.math.erf(x * 0.7071067811865476))

    return Gelu()(x)


def build_transformer():
    """BERT-style encoder: token and position embeddings, MultiHeadAttention (Einsum),
    LayerNormalization, exact GELU (Erf), residuals, mean pooling."""
    import keras
    from keras import layers as L
    x0 = keras.Input((32,), dtype="int32", name="input_ids")
    x = position_embedding(32, 64)(L.Embedding(1000, 64)(x0))
    for _ in range(2):
        a = L.MultiHeadAttention(num_heads=4, key_dim=16)(x, x)
        x = L.LayerNormalization(epsilon=1e-12)(x + a)
        f = gelu_erf(L.Dense(128)(x))
        f = L.Dense(64)(f)
        x = L.LayerNormalization(epsilon=1e-12)(x + f)
    x = L.GlobalAveragePooling1D()(x)
    return keras.Model(x0, L.Dense(2)(x))


def build_vit():
    """Vision transformer: patch embedding as a strided Conv2D, Reshape to tokens, class token
    by concatenation, MultiHeadAttention, LayerNormalization, tanh-approximated GELU."""
    import keras
    from keras import layers as L

    class ClassToken(L.Layer):
        def build(self, shape):
            self.cls = self.add_weight(shape=(1, 1, shape[-1]), initializer="random_normal")

        def call(self, x):
            b = keras.ops.shape(x)[0]
            return keras.ops.concatenate([keras.ops.broadcast_to(self.cls, (b, 1, x.shape[-1])), x], 1)

    x0 = keras.Input((32, 32, 3), name="image")
    x = L.Conv2D(48, 4, strides=4)(x0)
    x = L.Reshape((64, 48))(x)
    x = ClassToken()(x)
    x = position_embedding(65, 48)(x)
    for _ in range(2):
        h = L.LayerNormalization(epsilon=1e-6)(x)
        x = x + L.MultiHeadAttention(num_heads=3, key_dim=16)(h, h)
        h = L.LayerNormalization(epsilon=1e-6)(x)
        h = L.Dense(96)(h)
        h = keras.activations.gelu(h, approximate=True)
        x = x + L.Dense(48)(h)
    x = L.LayerNormalization(epsilon=1e-6)(x)
    return keras.Model(x0, L.Dense(10)(x[:, 0]))


def build_tf_ops():
    """Raw TensorFlow ops a model's pre/post-processing uses: tf.image.resize (bilinear with
    half-pixel centres, nearest), depth_to_space/space_to_depth, strided and reversed slices,
    reductions, tf.where, top_k, cumsum, tile, split, clip_by_value, pad with REFLECT."""
    import keras
    import tensorflow as tf

    class Ops(keras.layers.Layer):
        def call(self, x):
            r = tf.image.resize(x, (48, 40), method="bilinear")
            n = tf.image.resize(x, (16, 12), method="nearest")
            d = tf.nn.space_to_depth(x, 2)
            d = tf.nn.depth_to_space(d * 0.5 + 1.0, 2)
            rev = x[:, ::-1, 1::2, :]
            m = tf.reduce_mean(x, axis=[1, 2], keepdims=True)
            s = tf.math.reduce_std(x, axis=-1, keepdims=True)
            w = tf.where(x > m, x - m, tf.zeros_like(x)) / (s + 1.0)
            c = tf.cumsum(w, axis=2)
            p = tf.pad(x, [[0, 0], [2, 2], [1, 1], [0, 0]], mode="REFLECT")
            t = tf.tile(tf.reduce_max(x, axis=[1, 2]), [1, 3])
            a, b = tf.split(x, 2, axis=1)
            v, _ = tf.math.top_k(tf.reshape(x, [-1, 24 * 24 * 3]), k=5)
            feats = [tf.reduce_sum(r, [1, 2, 3]), tf.reduce_sum(n * n, [1, 2, 3]),
                     tf.reduce_sum(d - x, [1, 2, 3]), tf.reduce_sum(rev, [1, 2, 3]),
                     tf.reduce_sum(c, [1, 2, 3]), tf.reduce_sum(tf.abs(p), [1, 2, 3]),
                     tf.reduce_sum(a * b, [1, 2, 3])]
            return tf.concat([tf.stack(feats, 1), t, v,
                              tf.clip_by_value(tf.reduce_min(x, [1, 2]), 0.1, 0.5)], 1)

    x0 = keras.Input((24, 24, 3), name="image")
    return keras.Model(x0, Ops()(x0))


def build_detector_head():
    """SSD-style head: multi-scale feature maps, per-scale box and class convolutions reshaped to
    (N, anchors, 4/classes) and concatenated, sigmoid scores, box decoding with exp."""
    import keras
    from keras import layers as L
    x0 = keras.Input((64, 64, 3), name="image")
    f1 = L.Conv2D(16, 3, strides=2, padding="same", activation="relu6")(x0)
    f2 = L.Conv2D(32, 3, strides=2, padding="same", activation="relu6")(f1)
    f3 = L.Conv2D(32, 3, strides=2, padding="same", activation="relu6")(f2)
    boxes, scores = [], []
    for f in (f2, f3):
        b = L.Conv2D(3 * 4, 3, padding="same")(f)
        c = L.Conv2D(3 * 5, 3, padding="same")(f)
        boxes.append(L.Reshape((-1, 4))(b))
        scores.append(L.Reshape((-1, 5))(c))
    b = L.Concatenate(axis=1)(boxes)
    s = L.Activation("sigmoid")(L.Concatenate(axis=1)(scores))
    wh = keras.ops.exp(b[..., 2:]) * 0.1
    xy = b[..., :2] * 0.1
    return keras.Model(x0, [keras.ops.concatenate([xy - wh / 2, xy + wh / 2], -1), s])


ZOO = [
    spec("tf_mobilenet_v2", "Keras MobileNetV2", build_mobilenet_v2, [("input", (1, 96, 96, 3), "float32", "unit")], opset=13),
    spec("tf_mobilenet_v3", "Keras MobileNetV3Small", build_mobilenet_v3, [("input", (1, 96, 96, 3), "float32", ("uint", 255))], opset=15),
    spec("tf_resnet_v2", "pre-activation ResNet", build_resnet_v2, [("image", (2, 64, 64, 3), "float32", "normal")], opset=13),
    spec("tf_efficientnet", "EfficientNet MBConv", build_efficientnet, [("image", (1, 64, 64, 3), "float32", ("uint", 255))], opset=17),
    spec("tf_densenet", "DenseNet-BC", build_densenet, [("image", (1, 48, 48, 3), "float32", "normal")], opset=15),
    spec("tf_xception", "Xception entry flow", build_xception, [("image", (1, 64, 64, 3), "float32", "normal")], opset=11),
    spec("tf_unet", "U-Net", build_unet, [("image", (1, 64, 64, 3), "float32", "unit")], opset=15),
    spec("tf_audio_cnn", "1-D keyword-spotting CNN", build_audio_cnn, [("mfcc", (2, 400, 13), "float32", "normal")], opset=15),
    spec("tf_text_lstm", "Embedding + BiLSTM + GRU", build_text_lstm, [("tokens", (2, 24), "int32", ("int", 500))], opset=15),
    spec("tf_seq_gru", "GRU + SimpleRNN + LSTM tagger", build_seq_gru, [("frames", (2, 30, 16), "float32", "normal")], opset=13),
    spec("tf_transformer", "BERT-style encoder", build_transformer, [("input_ids", (2, 32), "int32", ("int", 1000))], opset=15),
    spec("tf_vit", "Vision transformer", build_vit, [("image", (2, 32, 32, 3), "float32", "normal")], opset=17),
    spec("tf_ops", "TensorFlow pre/post-processing ops", build_tf_ops, [("image", (2, 24, 24, 3), "float32", "normal")], opset=15),
    spec("tf_ssd_head", "SSD detection head", build_detector_head, [("image", (1, 64, 64, 3), "float32", "unit")], opset=13),
    # Unknown batch and sequence length in the file, bound from the inputs at run time: the
    # GRU's while loop then takes its trip count from the bound shape.
    spec("tf_text_lstm_dyn", "Embedding + BiLSTM + GRU, dynamic batch and length", build_text_lstm,
         [("tokens", (3, 29), "int32", ("int", 500))], opset=18, dynamic=2,
         note="batch and length unknown"),
    spec("tf_efficientnet_dyn", "EfficientNet MBConv, dynamic batch", build_efficientnet,
         [("image", (3, 64, 64, 3), "float32", ("uint", 255))], opset=18, dynamic=1,
         note="batch unknown"),
]


def make_input(shape, dtype, kind, rng):
    if kind == "unit":
        return rng.random_sample(shape).astype(dtype)
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    if kind[0] == "int":
        return rng.randint(0, kind[1], size=shape).astype(dtype)
    if kind[0] == "uint":
        return np.floor(rng.random_sample(shape) * kind[1]).astype(dtype)
    raise ValueError(kind)


def randomise_statistics(model, rng):
    """Keras initialises BatchNormalization to the identity; give every one non-trivial moving
    statistics and affine parameters so folding them is actually tested."""
    for layer in model.layers:
        if type(layer).__name__ == "BatchNormalization":
            ws = layer.get_weights()
            n = ws[0].shape[0]
            new = []
            for w, v in zip(ws, layer.weights):
                nm = v.name if hasattr(v, "name") else ""
                if "gamma" in nm:
                    new.append((0.5 + rng.random_sample(n)).astype(np.float32))
                elif "beta" in nm:
                    new.append((0.2 * rng.standard_normal(n)).astype(np.float32))
                elif "moving_mean" in nm:
                    new.append((0.1 * rng.standard_normal(n)).astype(np.float32))
                elif "moving_variance" in nm:
                    new.append((0.5 + rng.random_sample(n)).astype(np.float32))
                else:
                    new.append(w)
            layer.set_weights(new)


def export(s, outdir):
    import keras
    import onnx
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx

    keras.utils.set_random_seed(SEED)
    rng = np.random.RandomState(SEED)
    model = s["build"]()
    randomise_statistics(model, rng)
    sig = tuple(tf.TensorSpec((None,) * s["dynamic"] + tuple(shape[s["dynamic"]:]),
                              getattr(tf, dtype), name=name)
                for name, shape, dtype, _ in s["inputs"])

    @tf.function(input_signature=sig)
    def forward(*xs):
        out = model(list(xs) if len(xs) > 1 else xs[0], training=False)
        return out if isinstance(out, (list, tuple)) else [out]

    path = os.path.join(outdir, s["name"] + ".onnx")
    mp, _ = tf2onnx.convert.from_function(forward, input_signature=sig, opset=s["opset"],
                                          output_path=path)
    xs = [make_input(shape, dtype, kind, rng) for _, shape, dtype, kind in s["inputs"]]
    ys = [np.asarray(y) for y in forward(*[tf.constant(x) for x in xs])]
    out_names = [o.name for o in mp.graph.output]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, {name: x for (name, _, _, _), x in zip(s["inputs"], xs)})
    ort_err = max(rel_error(g, y) for g, y in zip(got, ys))
    if ort_err > 1e-4:
        raise SystemExit("make_tf_zoo.py: %s: ONNX Runtime differs from TensorFlow by %.2e; "
                         "tf2onnx converted it wrongly, not a usable reference" % (s["name"], ort_err))
    entry = dict(name=s["name"], arch=s["arch"], opset=s["opset"], note=s["note"], fast=False,
                 repro=False, exporter="tf2onnx %s, TensorFlow %s" % (tf2onnx.__version__, tf.__version__),
                 nodes=len(mp.graph.node), ops=dict(collections.Counter(n.op_type for n in mp.graph.node)),
                 params=int(sum(int(np.prod(t.dims)) for t in mp.graph.initializer)),
                 ort_err=ort_err, inputs=[], outputs=[])
    for (name, _, _, _), x in zip(s["inputs"], xs):
        f = "%s.in.%s.npy" % (s["name"], name)
        np.save(os.path.join(outdir, f), x)
        entry["inputs"].append(dict(name=name, file=f, shape=list(x.shape), dtype=str(x.dtype)))
    for name, y in zip(out_names, ys):
        f = "%s.ref.%s.npy" % (s["name"], re.sub(r"[^A-Za-z0-9_.-]", "_", name))
        np.save(os.path.join(outdir, f), y)
        entry["outputs"].append(dict(name=name, file=f, shape=list(y.shape), dtype=str(y.dtype),
                                     max_abs=float(np.abs(y).max()) if y.size else 0.0))
    return entry


def select(specs, only, prog):
    """The specs ONLY (comma-separated names; empty: all) names; an unknown name ends PROG."""
    if not only:
        return specs
    want = only.split(",")
    unknown = sorted(set(want) - {s["name"] for s in specs})
    if unknown:
        sys.exit("%s: unknown model(s): %s" % (prog, ", ".join(unknown)))
    return [s for s in specs if s["name"] in want]


def export_all(specs, zoo, out, keep, prog):
    """Exports SPECS into OUT and writes its manifest after each (a long run killed keeps
    what it made), the entries in ZOO's order, keeping those already there when KEEP; ends
    PROG naming the specs that failed."""
    os.makedirs(out, exist_ok=True)
    mpath = os.path.join(out, "manifest.json")
    old = {}
    if keep and os.path.exists(mpath):
        with open(mpath) as f:
            old = {e["name"]: e for e in json.load(f)["models"]}
    failed, entries = [], list(old.values())
    for s in specs:
        print("%s: exporting %s" % (prog, s["name"]), file=sys.stderr, flush=True)
        try:
            old[s["name"]] = export(s, out)
        except Exception as e:  # report and go on with the others
            failed.append(s["name"])
            print("%s: %s: %s: %s" % (prog, s["name"], type(e).__name__,
                                      str(e).splitlines()[0] if str(e) else ""), file=sys.stderr)
        entries = [old[z["name"]] for z in zoo if z["name"] in old]
        with open(mpath, "w") as f:
            json.dump(dict(exporter="tf2onnx", seed=SEED, models=entries), f, indent=1)
    print("%s: %d models -> %s" % (prog, len(entries), os.path.abspath(out)), file=sys.stderr)
    if failed:
        sys.exit("%s: not exported: %s" % (prog, ", ".join(failed)))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "tests", "zoo", "tf"))
    ap.add_argument("--only", default="", help="comma-separated model names (the manifest keeps the others)")
    ap.add_argument("--list", action="store_true", help="print the zoo and exit")
    a = ap.parse_args()
    specs = select(ZOO, a.only, "make_tf_zoo.py")
    if a.list:
        for s in specs:
            print("%-18s %-36s opset %2d" % (s["name"], s["arch"], s["opset"]))
        return
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    export_all(specs, ZOO, a.out, bool(a.only), "make_tf_zoo.py")

if __name__ == "__main__":
    main()
