#!/usr/bin/env python3
"""bench/varlen.py — a model with a free dim called at varying sizes, Plinth against ONNX Runtime.

    python3 bench/varlen.py MODEL.onnx [--config INI] [--sizes 8:128] [--passes 3] [--batch 1]
                            [--threads 2] [--peer-only | --plinth-only]

Every symbolic dim of the model's inputs but a leading batch dim takes the size of the call (the
leading one --batch). Each pass calls the model once per size, in one random order (the same every
pass): the first pass sees every size new (Plinth plans a tail per new signature: docs/architecture.md,
"Shapes known only at run time"), later ones see them again. Integer inputs named like a mask get
ones, like token types zeros, like positions 0..n-1, others random ids in [1, 100); float inputs
random normals. Plinth and ONNX Runtime run in separate processes, one after the other (a runtime's
spinning threads would slow the other's calls); prints the median ms of a call per pass for each.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def feeds(inputs, n, batch, rng, np):
    """One call's inputs: [(name, onnx elem type, dims)] at size N."""
    out = {}
    for name, elem, dims in inputs:
        shape = []
        for i, d in enumerate(dims):
            if isinstance(d, int) and d > 0:
                shape.append(d)
            else:
                shape.append(batch if i == 0 and len(dims) > 1 else n)
        low = name.lower()
        if elem in (6, 7):  # int32, int64
            dt = np.int64 if elem == 7 else np.int32
            if "mask" in low:
                a = np.ones(shape, dt)
            elif "type" in low:
                a = np.zeros(shape, dt)
            elif "position" in low:
                a = np.broadcast_to(np.arange(shape[-1], dtype=dt), shape).copy()
            else:
                a = rng.integers(1, 100, size=shape).astype(dt)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        out[name] = a
    return out


def worker(args):
    import numpy as np
    import onnx
    m = onnx.load(args.model, load_external_data=False)
    init = {t.name for t in m.graph.initializer}
    inputs = []
    for i in m.graph.input:
        if i.name in init:
            continue
        t = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
        inputs.append((i.name, t.elem_type, dims))
    lo, hi = (int(v) for v in args.sizes.split(":"))
    rng = np.random.default_rng(0)
    sizes = rng.permutation(np.arange(lo, hi))
    if args.worker == "plinth":
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import plinth
        rt = plinth.Runtime(config=args.config) if args.config else plinth.Runtime()
        sess = rt.load_model(args.model).session()
        run = sess.run
    else:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        o = ort.InferenceSession(args.model, so, providers=["CPUExecutionProvider"])
        run = lambda f: o.run(None, f)  # noqa: E731
    medians = []
    for _ in range(args.passes):
        ts = []
        for n in sizes:
            f = feeds(inputs, int(n), args.batch, rng, np)
            t0 = time.perf_counter()
            run(f)
            ts.append((time.perf_counter() - t0) * 1e3)
        medians.append(float(np.median(ts)))
    print(json.dumps({"runtime": args.worker, "median_ms_per_pass": medians}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--config", help="Plinth's backend.ini (default: the usual search)")
    ap.add_argument("--sizes", default="8:128", help="LO:HI, the sizes of the free dims")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plinth-only", action="store_true")
    ap.add_argument("--peer-only", action="store_true")
    ap.add_argument("--worker", choices=["plinth", "ort"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # numpy's threads stay idle
    rows = []
    for w in ("plinth", "ort"):
        if (w == "plinth" and args.peer_only) or (w == "ort" and args.plinth_only):
            continue
        cmd = [sys.executable, os.path.abspath(__file__), args.model, "--worker", w,
               "--sizes", args.sizes, "--passes", str(args.passes), "--batch", str(args.batch),
               "--threads", str(args.threads)] + (["--config", args.config] if args.config else [])
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            tail = r.stderr.strip().splitlines()
            print(f"{w}: failed: {tail[-1] if tail else r.returncode}")
            continue
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print(f"{'runtime':10s}" + "".join(f"{'pass ' + str(p + 1):>10s}" for p in range(args.passes)))
    for row in rows:
        print(f"{row['runtime']:10s}" + "".join(f"{v:10.3f}" for v in row["median_ms_per_pass"]))


if __name__ == "__main__":
    sys.exit(main())
