#!/usr/bin/python3
"""torch_export.py — PyTorch's nn.LSTM, nn.GRU and nn.RNN (two layers,
bidirectional, batch_first) exported with torch.onnx.export and run through
`plinth run` with the cpu module alone, against PyTorch's own output.

Every output (y, h_n and, for LSTM, c_n) must agree within a relative
tolerance of 1e-4 (absolute 1e-5, for values near 0). The model's weights
are initializers, as torch.onnx.export writes them.

The packed cases (lstm_packed, gru_packed) check sequence_lens: one
bidirectional layer on a padded batch through pack_padded_sequence against
an ONNX node built from the same weights with sequence_lens.

usage: torch_export.py CASE PLINTH_BINARY STAGE_DIR
       (CASE: lstm, gru, rnn, lstm_packed, gru_packed)
Exits 77 (skipped) when torch, NumPy or onnx is missing.
"""
import os
import subprocess
import sys
import tempfile
import warnings

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover - depends on the machine
    print("skipped: %s (needs python3-torch and python3-numpy)" % e, file=sys.stderr)
    sys.exit(77)

RTOL = 1e-4
ATOL = 1e-5

CASES = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}
# The packed cases: one bidirectional layer fed a padded batch through
# pack_padded_sequence, against one ONNX node with sequence_lens built here
# from the module's weights (torch.onnx.export cannot export packing).
PACKED = {"lstm_packed": torch.nn.LSTM, "gru_packed": torch.nn.GRU}


def run_plinth(name, plinth, stage, tmp, path, inputs):
    """Runs PATH with the named .npy INPUTS; the outputs' directory, or None
    after printing why the run failed."""
    ini = os.path.join(tmp, "backend.ini")
    with open(ini, "w") as f:
        f.write("[runtime]\nmodules = %s\nthreads = 2\ncache_dir =\nlog = error\n"
                "[placement]\norder = cpu\n" % stage)
    cmd = [plinth, "run", path, "--config", ini, "--output-dir", tmp]
    for n, v in inputs.items():
        np.save(os.path.join(tmp, n + ".npy"), v)
        cmd += ["--input", "%s=%s" % (n, os.path.join(tmp, n + ".npy"))]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print("%s: FAILED: plinth run exited %d\n%s%s"
              % (name, proc.returncode, proc.stdout, proc.stderr), file=sys.stderr)
        return None
    return tmp


def compare(name, tmp, out_names, want):
    """Compares each output file with PyTorch's tensor; 0 when all agree."""
    report = []
    for o, ref in zip(out_names, want):
        got = np.load(os.path.join(tmp, o + ".npy")).astype(np.float64)
        ref = ref.numpy().astype(np.float64)
        if got.shape != ref.shape:
            print("%s: FAILED: %s is %s, PyTorch's %s" % (name, o, got.shape, ref.shape),
                  file=sys.stderr)
            return 1
        err = np.abs(got - ref)
        if not np.all(err <= ATOL + RTOL * np.abs(ref)):
            at = np.unravel_index(np.argmax(err - RTOL * np.abs(ref)), err.shape)
            print("%s: FAILED: %s%s = %.9g, PyTorch %.9g" % (name, o, list(at), got[at],
                                                            ref[at]), file=sys.stderr)
            return 1
        rel = err / np.maximum(np.abs(ref), 1e-3)
        report.append("%s max abs %.2e, max rel (|ref| >= 1e-3) %.2e" % (o, err.max(), rel.max()))
    print("%s: matches PyTorch %s: %s" % (name, torch.__version__, "; ".join(report)))
    return 0


def packed_case(name, plinth, stage):
    """A bidirectional layer on sequences of mixed lengths: ONNX's
    sequence_lens against PyTorch's packed sequences (outputs past a
    sequence's end are 0; the reverse direction starts at its last step)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError as e:  # pragma: no cover - depends on the machine
        print("skipped: %s (needs python3-onnx)" % e, file=sys.stderr)
        return 77
    lstm = PACKED[name] is torch.nn.LSTM
    torch.manual_seed(99)
    T, N, I, H = 6, 4, 5, 8
    lens = [6, 2, 4, 1]
    model = PACKED[name](I, H, bidirectional=True).eval()
    x = torch.randn(T, N, I)
    for n, L in enumerate(lens):
        x[L:, n] = 0.0
    with torch.no_grad():
        packed = torch.nn.utils.rnn.pack_padded_sequence(x, torch.tensor(lens),
                                                         enforce_sorted=False)
        out, state = model(packed)
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)
    y = y.reshape(T, N, 2, H).permute(0, 2, 1, 3)
    want = [y, state[0], state[1]] if lstm else [y, state]
    # PyTorch's gates are i, f, g, o (LSTM) and r, z, n (GRU); ONNX's are
    # i, o, f, c and z, r, h. PyTorch's GRU is ONNX's linear_before_reset.
    order = [0, 3, 1, 2] if lstm else [1, 0, 2]

    def gates(t):
        return np.concatenate([t.detach().numpy().reshape(len(order), H, -1)[g]
                               for g in order]).reshape(len(order) * H, -1)

    W, R, B = [], [], []
    for sfx in ("", "_reverse"):
        W.append(gates(getattr(model, "weight_ih_l0" + sfx)))
        R.append(gates(getattr(model, "weight_hh_l0" + sfx)))
        B.append(np.concatenate([gates(getattr(model, "bias_ih_l0" + sfx)).ravel(),
                                 gates(getattr(model, "bias_hh_l0" + sfx)).ravel()]))
    inits = [numpy_helper.from_array(np.stack(v).astype(np.float32), n)
             for n, v in (("W", W), ("R", R), ("B", B))]
    outs = ["Y", "Y_h", "Y_c"] if lstm else ["Y", "Y_h"]
    attrs = {"hidden_size": H, "direction": "bidirectional"}
    if not lstm:
        attrs["linear_before_reset"] = 1
    node = helper.make_node("LSTM" if lstm else "GRU", ["X", "W", "R", "B", "lens"], outs,
                            name="rnn0", **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, N, I]),
         helper.make_tensor_value_info("lens", TensorProto.INT32, [N])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [T, 2, N, H] if o == "Y"
                                       else [2, N, H]) for o in outs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 7
    with tempfile.TemporaryDirectory(prefix="plinth-torch-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save(m, path)
        if run_plinth(name, plinth, stage, tmp, path,
                      {"X": x.numpy(), "lens": np.array(lens, dtype=np.int32)}) is None:
            return 1
        return compare(name, tmp, outs, want)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in list(CASES) + list(PACKED):
        print("usage: %s CASE PLINTH_BINARY STAGE_DIR (CASE: %s)"
              % (sys.argv[0], ", ".join(list(CASES) + list(PACKED))), file=sys.stderr)
        return 2
    name, plinth, stage = sys.argv[1:]
    if name in PACKED:
        return packed_case(name, plinth, stage)
    torch.manual_seed(1234)
    batch, seq, inp, hidden = 3, 7, 10, 16
    model = CASES[name](inp, hidden, num_layers=2, bidirectional=True, batch_first=True).eval()
    x = torch.randn(batch, seq, inp)
    with torch.no_grad():
        out = model(x)
    y, state = out
    want = [y, state[0], state[1]] if name == "lstm" else [y, state]
    out_names = ["y", "h_n", "c_n"][:len(want)]
    with tempfile.TemporaryDirectory(prefix="plinth-torch-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (x,), path, opset_version=14, input_names=["x"],
                              output_names=out_names)
        if run_plinth(name, plinth, stage, tmp, path, {"x": x.numpy()}) is None:
            return 1
        return compare(name, tmp, out_names, want)


if __name__ == "__main__":
    sys.exit(main())
