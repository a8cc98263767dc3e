#!/usr/bin/python3
"""torch_export.py — PyTorch's nn.LSTM, nn.GRU and nn.RNN (two layers,
bidirectional, batch_first) exported with torch.onnx.export and run through
`plinth run` with the cpu module alone, against PyTorch's own output.

Every output (y, h_n and, for LSTM, c_n) must agree within a relative
tolerance of 1e-4 (absolute 1e-5, for values near 0). The model's weights
are initializers, as torch.onnx.export writes them.

usage: torch_export.py CASE PLINTH_BINARY STAGE_DIR    (CASE: lstm, gru, rnn)
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


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in CASES:
        print("usage: %s CASE PLINTH_BINARY STAGE_DIR (CASE: lstm, gru, rnn)" % sys.argv[0],
              file=sys.stderr)
        return 2
    name, plinth, stage = sys.argv[1:]
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
        np.save(os.path.join(tmp, "x.npy"), x.numpy())
        ini = os.path.join(tmp, "backend.ini")
        with open(ini, "w") as f:
            f.write("[runtime]\nmodules = %s\nthreads = 2\ncache_dir =\nlog = error\n"
                    "[placement]\norder = cpu\n" % stage)
        cmd = [plinth, "run", path, "--config", ini, "--input",
               "x=" + os.path.join(tmp, "x.npy"), "--output-dir", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print("%s: FAILED: plinth run exited %d\n%s%s"
                  % (name, proc.returncode, proc.stdout, proc.stderr), file=sys.stderr)
            return 1
        if ("(%s, cpu)" % name.upper()) not in proc.stdout:
            print("%s: FAILED: no %s step ran on cpu:\n%s" % (name, name.upper(), proc.stdout),
                  file=sys.stderr)
            return 1
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
            report.append("%s max abs %.2e, max rel (|ref| >= 1e-3) %.2e"
                          % (o, err.max(), rel.max()))
        print("%s: matches PyTorch %s: %s" % (name, torch.__version__, "; ".join(report)))
        return 0


if __name__ == "__main__":
    sys.exit(main())
