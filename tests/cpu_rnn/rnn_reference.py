#!/usr/bin/python3
"""rnn_reference.py — the cpu module's RNN, GRU and LSTM against a float64
NumPy reference written from ONNX's equations.

Each case builds a one-node ONNX model with onnx.helper, runs it through
`plinth run` (the onnx importer, the core's shape inference, the cpu
kernel) on the staged modules with the cpu module alone, and compares every
output the node produces with the reference within a relative tolerance of
1e-4 (absolute 1e-5). The error cases check that bad input is refused with
a one-line reason.

usage: rnn_reference.py CASE PLINTH_BINARY STAGE_DIR
Exits 77 (skipped) when NumPy or the onnx package is missing.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover - depends on the machine
    print("skipped: %s (needs python3-numpy and python3-onnx)" % e, file=sys.stderr)
    sys.exit(77)

RTOL = 1e-4
ATOL = 1e-5

# ---- the reference ---------------------------------------------------------

# name: (takes alpha, takes beta, default alpha, default beta)
ACTS = {
    "relu": (False, False, 0.0, 0.0),
    "tanh": (False, False, 0.0, 0.0),
    "sigmoid": (False, False, 0.0, 0.0),
    "affine": (True, True, 1.0, 0.0),
    "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0),
    "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5),
    "elu": (True, False, 1.0, 0.0),
    "softsign": (False, False, 0.0, 0.0),
    "softplus": (False, False, 0.0, 0.0),
}


def activate(fn, x):
    name, a, b = fn
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "tanh":
        return np.tanh(x)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if name == "affine":
        return a * x + b
    if name == "leakyrelu":
        return np.where(x >= 0, x, a * x)
    if name == "thresholdedrelu":
        return np.where(x > a, x, 0.0)
    if name == "scaledtanh":
        return a * np.tanh(b * x)
    if name == "hardsigmoid":
        return np.clip(a * x + b, 0.0, 1.0)
    if name == "elu":
        return np.where(x >= 0, x, a * np.expm1(np.minimum(x, 0.0)))
    if name == "softsign":
        return x / (1.0 + np.abs(x))
    if name == "softplus":
        return np.logaddexp(0.0, x)
    raise ValueError(name)


def resolve_acts(op, dirs, attrs):
    """Per direction, the activations (name, alpha, beta): alpha and beta
    consumed in order by the functions that take them."""
    count = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    default = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"],
               "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[op]
    names = attrs.get("activations", default)
    alphas = list(attrs.get("activation_alpha", []))
    betas = list(attrs.get("activation_beta", []))
    fns = []
    for n in names:
        key = n.lower()
        ta, tb, da, db = ACTS[key]
        a = alphas.pop(0) if ta and alphas else da
        b = betas.pop(0) if tb and betas else db
        fns.append((key, a, b))
    if len(fns) == count:
        fns = fns * dirs
    return [fns[d * count:(d + 1) * count] for d in range(dirs)]


def reference(op, ins, attrs):
    """Y, Y_h, Y_c of the node in float64 (Y_c None for RNN and GRU)."""
    layout = attrs.get("layout", 0)
    direction = attrs.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    clip = attrs.get("clip")
    X = ins["X"].astype(np.float64)
    W = ins["W"].astype(np.float64)
    R = ins["R"].astype(np.float64)
    h0 = ins.get("initial_h")
    c0 = ins.get("initial_c")
    if layout:
        X = X.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, N, _ = X.shape
    H = R.shape[2]
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    B = ins.get("B")
    B = np.zeros((dirs, 2 * G * H)) if B is None else B.astype(np.float64)
    P = ins.get("P")
    lens = ins.get("sequence_lens")
    acts = resolve_acts(op, dirs, attrs)

    def cl(v):
        return v if clip is None else np.clip(v, -clip, clip)

    Y = np.zeros((T, dirs, N, H))
    Yh = np.zeros((dirs, N, H))
    Yc = np.zeros((dirs, N, H))
    for d in range(dirs):
        f = acts[d]
        Wd, Rd = W[d], R[d]
        Wb, Rb = B[d, :G * H], B[d, G * H:]
        rev = direction == "reverse" or d == 1
        for n in range(N):
            L = T if lens is None else int(lens[n])
            h = np.zeros(H) if h0 is None else h0[d, n].astype(np.float64)
            c = np.zeros(H) if c0 is None else c0[d, n].astype(np.float64)
            steps = range(L - 1, -1, -1) if rev else range(L)
            for t in steps:
                x = X[t, n]
                if op == "RNN":
                    h = activate(f[0], cl(x @ Wd.T + h @ Rd.T + Wb + Rb))
                elif op == "GRU":
                    xw = x @ Wd.T + Wb
                    z = activate(f[0], cl(xw[:H] + h @ Rd[:H].T + Rb[:H]))
                    r = activate(f[0], cl(xw[H:2 * H] + h @ Rd[H:2 * H].T + Rb[H:2 * H]))
                    Rh, Rbh = Rd[2 * H:], Rb[2 * H:]
                    if attrs.get("linear_before_reset", 0):
                        pre = xw[2 * H:] + r * (h @ Rh.T + Rbh)
                    else:
                        pre = xw[2 * H:] + (r * h) @ Rh.T + Rbh
                    hh = activate(f[1], cl(pre))
                    h = (1 - z) * hh + z * h
                else:
                    g = x @ Wd.T + h @ Rd.T + Wb + Rb
                    gi, go, gf, gc = g[:H], g[H:2 * H], g[2 * H:3 * H], g[3 * H:]
                    p = None if P is None else P[d].astype(np.float64)
                    if p is not None:
                        gi = gi + p[:H] * c
                        gf = gf + p[2 * H:] * c
                    i = activate(f[0], cl(gi))
                    if attrs.get("input_forget", 0):
                        fg = 1 - i
                    else:
                        fg = activate(f[0], cl(gf))
                    cc = activate(f[1], cl(gc))
                    c = fg * c + i * cc
                    if p is not None:
                        go = go + p[H:2 * H] * c
                    o = activate(f[0], cl(go))
                    h = o * activate(f[2], c)
                Y[t, d, n] = h
            Yh[d, n] = h
            Yc[d, n] = c
    if layout:
        Y = Y.transpose(2, 0, 1, 3)
        Yh = Yh.transpose(1, 0, 2)
        Yc = Yc.transpose(1, 0, 2)
    return Y, Yh, (Yc if op == "LSTM" else None)


# ---- the cases -------------------------------------------------------------

class Case:
    """One node: op, sizes, which optional inputs it has, attributes, which
    outputs it names, and whether the weights are initializers."""

    def __init__(self, op, T=5, N=3, I=4, H=6, direction="forward", layout=0,
                 inputs=("B",), outputs=("Y", "Y_h", "Y_c"), attrs=None,
                 const_weights=True, opset=14, lens=None, expect_error=None,
                 hidden_attr=True, bad_bias=False, atol=ATOL):
        self.op, self.T, self.N, self.I, self.H = op, T, N, I, H
        self.direction, self.layout = direction, layout
        self.inputs, self.outputs = inputs, outputs
        self.attrs = dict(attrs or {})
        self.const_weights, self.opset, self.lens = const_weights, opset, lens
        self.expect_error, self.hidden_attr = expect_error, hidden_attr
        self.bad_bias = bad_bias
        self.atol = atol


def lstm(**kw):
    return Case("LSTM", **kw)


def gru(**kw):
    kw.setdefault("outputs", ("Y", "Y_h"))
    return Case("GRU", **kw)


def rnn(**kw):
    kw.setdefault("outputs", ("Y", "Y_h"))
    return Case("RNN", **kw)


ALL_IN = ("B", "sequence_lens", "initial_h", "initial_c", "P")
STATES = ("B", "initial_h", "initial_c")
MIXED = [5, 0, 3, 1, 2]

CASES = {
    "lstm_forward": lstm(),
    "lstm_reverse": lstm(direction="reverse", inputs=STATES),
    "lstm_bidirectional": lstm(direction="bidirectional", inputs=STATES),
    "lstm_no_bias": lstm(direction="bidirectional", inputs=()),
    "lstm_seq_lens": lstm(direction="bidirectional", N=5, inputs=ALL_IN, lens=MIXED),
    "lstm_peepholes": lstm(direction="bidirectional", inputs=("B", "initial_h", "initial_c", "P")),
    "lstm_clip": lstm(direction="bidirectional", inputs=STATES, attrs={"clip": 0.7}),
    "lstm_activations": lstm(direction="bidirectional", inputs=ALL_IN, lens=[4, 5, 1],
                             attrs={"activations": ["HardSigmoid", "LeakyRelu", "ScaledTanh",
                                                    "Sigmoid", "Softsign", "Elu"],
                                    "activation_alpha": [0.3, 0.05, 0.8, 0.9],
                                    "activation_beta": [0.45, 1.3]}),
    "lstm_one_direction_activations": lstm(direction="bidirectional",
                                           attrs={"activations": ["Sigmoid", "Relu", "Softsign"]}),
    "lstm_input_forget": lstm(direction="bidirectional", inputs=ALL_IN, lens=[2, 5, 4],
                              attrs={"input_forget": 1}),
    "lstm_layout1": lstm(direction="bidirectional", layout=1, N=5, inputs=ALL_IN, lens=MIXED),
    "lstm_only_y_c": lstm(direction="bidirectional", inputs=STATES, outputs=("Y_c",)),
    "lstm_only_y": lstm(direction="reverse", inputs=STATES, outputs=("Y",)),
    "lstm_y_and_y_c": lstm(inputs=ALL_IN, lens=[3, 5, 0], outputs=("Y", "Y_c")),
    "lstm_weights_as_inputs": lstm(direction="bidirectional", inputs=ALL_IN, lens=[1, 5, 3],
                                   const_weights=False),
    "lstm_opset7": lstm(direction="bidirectional", inputs=ALL_IN, lens=[4, 2, 5], opset=7),
    "lstm_no_hidden_attr": lstm(hidden_attr=False, inputs=STATES),
    "lstm_large": lstm(direction="bidirectional", T=7, N=37, I=19, H=67, inputs=ALL_IN,
                       lens=[(7 * i) % 8 for i in range(37)]),
    "lstm_no_features": lstm(direction="bidirectional", I=0, inputs=ALL_IN, lens=[2, 0, 5]),
    # From 1 MB of R a direction, on 4 threads, the recurrence splits by hidden units
    # (modules/cpu/rnn_build.c, rnn_split): 272 units in slices of 80, 80, 80 and 32.
    "lstm_split": lstm(direction="bidirectional", T=5, N=5, I=11, H=272,
                       inputs=("B", "sequence_lens", "initial_h", "initial_c", "P"), lens=MIXED,
                       attrs={"clip": 2.5}),
    "lstm_split_layout1": lstm(direction="reverse", layout=1, T=3, N=2, I=7, H=260,
                               inputs=STATES),
    "gru_forward": gru(),
    "gru_reverse": gru(direction="reverse", inputs=("B", "initial_h")),
    "gru_bidirectional": gru(direction="bidirectional", inputs=("B", "initial_h")),
    "gru_linear_before_reset": gru(direction="bidirectional", inputs=("B", "initial_h"),
                                   attrs={"linear_before_reset": 1}),
    "gru_seq_lens": gru(direction="bidirectional", N=5, inputs=("B", "sequence_lens", "initial_h"),
                        lens=MIXED),
    "gru_seq_lens_lbr": gru(direction="bidirectional", N=5,
                            inputs=("B", "sequence_lens", "initial_h"), lens=MIXED,
                            attrs={"linear_before_reset": 1}),
    "gru_clip": gru(direction="bidirectional", inputs=("B",), attrs={"clip": 0.5}),
    "gru_activations": gru(direction="bidirectional", inputs=("B", "initial_h"),
                           attrs={"activations": ["Affine", "ThresholdedRelu", "HardSigmoid",
                                                  "Softplus"],
                                  "activation_alpha": [0.4, 0.1, 0.25],
                                  "activation_beta": [0.5, 0.4]}),
    "gru_layout1": gru(direction="bidirectional", layout=1, N=5,
                       inputs=("B", "sequence_lens", "initial_h"), lens=MIXED,
                       attrs={"linear_before_reset": 1}),
    "gru_only_y_h": gru(direction="reverse", inputs=("B", "initial_h"), outputs=("Y_h",)),
    "gru_weights_as_inputs": gru(direction="bidirectional", inputs=("B", "initial_h"),
                                 const_weights=False),
    "gru_large": gru(direction="bidirectional", T=6, N=29, I=23, H=53,
                     inputs=("B", "sequence_lens", "initial_h"),
                     lens=[(5 * i) % 7 for i in range(29)]),
    "gru_split_lbr": gru(direction="bidirectional", T=5, N=5, I=9, H=300,
                         inputs=("B", "sequence_lens", "initial_h"), lens=MIXED,
                         attrs={"linear_before_reset": 1, "clip": 1.5}),
    "rnn_forward": rnn(),
    "rnn_reverse": rnn(direction="reverse", inputs=("B", "initial_h")),
    "rnn_bidirectional": rnn(direction="bidirectional", inputs=("B", "initial_h")),
    "rnn_seq_lens": rnn(direction="bidirectional", N=5, inputs=("B", "sequence_lens", "initial_h"),
                        lens=MIXED),
    "rnn_clip": rnn(direction="bidirectional", inputs=("B",), attrs={"clip": 0.3}),
    "rnn_relu_sigmoid": rnn(direction="bidirectional", inputs=("B", "initial_h"),
                            attrs={"activations": ["Relu", "Sigmoid"]}),
    "rnn_affine_elu": rnn(direction="bidirectional", inputs=("B", "initial_h"),
                          attrs={"activations": ["Affine", "Elu"],
                                 "activation_alpha": [0.7, 1.5], "activation_beta": [0.2]}),
    "rnn_defaults_of_alpha": rnn(direction="bidirectional", inputs=("B",),
                                 attrs={"activations": ["LeakyRelu", "HardSigmoid"]}),
    "rnn_layout1": rnn(direction="bidirectional", layout=1, N=5,
                       inputs=("B", "sequence_lens", "initial_h"), lens=MIXED),
    "rnn_only_y": rnn(inputs=(), outputs=("Y",)),
    "rnn_large": rnn(direction="bidirectional", T=9, N=21, I=17, H=45,
                     inputs=("B", "sequence_lens", "initial_h"),
                     lens=[(4 * i) % 10 for i in range(21)]),
    # 530 hidden units: a unit's pre-activation sums 535 products (weights
    # within 0.6, states within 1) of a few units to a value near 0, and its
    # f32 rounding depends on the order of the sum at 1e-5 (1.8e-5 off the
    # f64 reference with the GEMM's depth blocks of 256, within 1.4e-5 with
    # 128)
    "rnn_split": rnn(direction="bidirectional", T=3, N=3, I=5, H=530,
                     inputs=("B", "sequence_lens", "initial_h"), lens=[3, 0, 2], atol=5e-5),
    "rnn_weights_as_inputs": rnn(direction="reverse", inputs=("B", "initial_h"),
                                 const_weights=False),
    "error_seq_lens_too_long": lstm(inputs=ALL_IN, lens=[1, 6, 2], const_weights=False,
                                    expect_error="sequence_lens[1] = 6 is outside [0, 5]"),
    "error_bad_activation": gru(attrs={"activations": ["Sigmoid", "Swish"]},
                                expect_error="activation 'Swish' is not one of"),
    "error_activation_count": lstm(direction="bidirectional",
                                   attrs={"activations": ["Sigmoid", "Tanh"]},
                                   expect_error="2 activations; expected 3 per direction"),
    "error_bad_direction": rnn(direction="sideways",
                               expect_error="direction 'sideways' is not forward, reverse or "
                                            "bidirectional"),
    "error_bias_shape": gru(bad_bias=True, expect_error="B's second dim is 37 but 2 x gates x "
                                                        "hidden_size is 36"),
    "error_hidden_size": rnn(attrs={"hidden_size": 5}, hidden_attr=False,
                             expect_error="hidden_size is 5"),
}


def onnx_direction_count(case):
    return 2 if case.direction == "bidirectional" else 1


def make_inputs(case, rng):
    G = {"RNN": 1, "GRU": 3, "LSTM": 4}[case.op]
    D = onnx_direction_count(case)
    T, N, I, H = case.T, case.N, case.I, case.H

    def u(*shape, scale=1.0):
        return (rng.uniform(-scale, scale, size=shape)).astype(np.float32)

    state = (N, D, H) if case.layout else (D, N, H)
    ins = {"X": u(*((N, T, I) if case.layout else (T, N, I)))}
    ins["W"] = u(D, G * H, I, scale=0.6)
    ins["R"] = u(D, G * H, H, scale=0.6)
    if "B" in case.inputs:
        ins["B"] = u(D, 2 * G * H + (1 if case.bad_bias else 0), scale=0.5)
    if "sequence_lens" in case.inputs:
        ins["sequence_lens"] = np.array(case.lens, dtype=np.int32)
    if "initial_h" in case.inputs:
        ins["initial_h"] = u(*state)
    if "initial_c" in case.inputs and case.op == "LSTM":
        ins["initial_c"] = u(*state)
    if "P" in case.inputs and case.op == "LSTM":
        ins["P"] = u(D, 3 * H, scale=0.5)
    return ins


def build_model(case, ins, path):
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    if case.op != "LSTM":
        order = order[:6]
    names = [n if n in ins else "" for n in order]
    while names and names[-1] == "":
        names.pop()
    out_order = ["Y", "Y_h", "Y_c"] if case.op == "LSTM" else ["Y", "Y_h"]
    outs = [n if n in case.outputs else "" for n in out_order]
    while outs and outs[-1] == "":
        outs.pop()
    attrs = dict(case.attrs)
    attrs["direction"] = case.direction
    if case.hidden_attr:
        attrs["hidden_size"] = case.H
    if case.layout:
        attrs["layout"] = 1
    node = helper.make_node(case.op, names, outs, name="rnn0", **attrs)
    D = onnx_direction_count(case)
    T, N, H = case.T, case.N, case.H
    y_shape = [N, T, D, H] if case.layout else [T, D, N, H]
    s_shape = [N, D, H] if case.layout else [D, N, H]
    graph_outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT,
                                                   y_shape if o == "Y" else s_shape)
                     for o in outs if o]
    inits, graph_inputs = [], []
    for name, value in ins.items():
        if case.const_weights and name in ("W", "R", "B", "P"):
            inits.append(numpy_helper.from_array(value, name))
        else:
            elem = TensorProto.INT32 if value.dtype == np.int32 else TensorProto.FLOAT
            graph_inputs.append(helper.make_tensor_value_info(name, elem, list(value.shape)))
    graph = helper.make_graph([node], "rnn_case", graph_inputs, graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 7
    onnx.save(model, path)
    return [o for o in outs if o]


def run_case(name, plinth, stage):
    case = CASES[name]
    rng = np.random.default_rng(sum(ord(ch) for ch in name))
    ins = make_inputs(case, rng)
    with tempfile.TemporaryDirectory(prefix="plinth-rnn-") as tmp:
        model = os.path.join(tmp, "model.onnx")
        outs = build_model(case, ins, model)
        ini = os.path.join(tmp, "backend.ini")
        with open(ini, "w") as f:
            f.write("[runtime]\nmodules = %s\nthreads = 4\ncache_dir =\nlog = error\n"
                    "[placement]\norder = cpu\n" % stage)
        cmd = [plinth, "run", model, "--config", ini, "--output-dir", tmp]
        for n, v in ins.items():
            if case.const_weights and n in ("W", "R", "B", "P"):
                continue
            path = os.path.join(tmp, n + ".npy")
            np.save(path, v)
            cmd += ["--input", "%s=%s" % (n, path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if case.expect_error is not None:
            if proc.returncode == 0:
                print("%s: FAILED: plinth run succeeded; expected an error holding %r"
                      % (name, case.expect_error), file=sys.stderr)
                return 1
            if case.expect_error not in proc.stderr:
                print("%s: FAILED: the error does not hold %r:\n%s"
                      % (name, case.expect_error, proc.stderr), file=sys.stderr)
                return 1
            print("%s: refused as expected: %s" % (name, proc.stderr.strip().splitlines()[-1]))
            return 0
        if proc.returncode != 0:
            print("%s: FAILED: plinth run exited %d\n%s%s"
                  % (name, proc.returncode, proc.stdout, proc.stderr), file=sys.stderr)
            return 1
        attrs = dict(case.attrs, direction=case.direction, layout=case.layout)
        want = dict(zip(("Y", "Y_h", "Y_c"), reference(case.op, ins, attrs)))
        worst = 0.0
        for o in outs:
            got = np.load(os.path.join(tmp, o + ".npy"))
            ref = want[o]
            if got.shape != ref.shape or got.dtype != np.float32:
                print("%s: FAILED: %s is %s %s, expected float32 %s"
                      % (name, o, got.dtype, got.shape, ref.shape), file=sys.stderr)
                return 1
            err = np.abs(got.astype(np.float64) - ref)
            bound = case.atol + RTOL * np.abs(ref)
            if not np.all(err <= bound):
                at = np.unravel_index(np.argmax(err - bound), err.shape)
                print("%s: FAILED: %s%s = %.9g, reference %.9g (|err| %.3g)"
                      % (name, o, list(at), got[at], ref[at], err[at]), file=sys.stderr)
                return 1
            worst = max(worst, float(np.max(err / (case.atol + np.abs(ref)))))
        print("%s: %s match the reference (worst error %.3g of atol + |ref|)"
              % (name, ", ".join(outs), worst))
        return 0


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        print(";".join(CASES))
        return 0
    if len(sys.argv) != 4 or sys.argv[1] not in CASES:
        print("usage: %s CASE PLINTH_BINARY STAGE_DIR (CASE: %s)"
              % (sys.argv[0], ", ".join(CASES)), file=sys.stderr)
        return 2
    return run_case(*sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
