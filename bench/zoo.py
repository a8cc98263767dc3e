#!/usr/bin/env python3
"""bench/zoo.py — the model zoo timed on Plinth's default backend.ini, on `order = cpu` and on
ONNX Runtime, alternating in one run, with the geometric means issue 15 is judged by.

    python3 bench/zoo.py [--zoo DIR] [--rounds R] [--runs N] [--threads N] [--json] [MODEL ...]

DIR (default build/tests/zoo/zoo) holds the zoo that `ctest -R zoo.models` (or
bench/zoo/make_zoo.py) exports; MODEL names pick some of it (`vit_s`, `convnext_s.onnx`).
Each model's inputs are DIR/<model>.in.<input>.npy. Both Plinth configurations are the
repository's backend.ini with the module folder made absolute and the cache off (a cold
session each time); ONNX Runtime runs through ../shared/bench/peer_bench.py with ORT_PYTHON
(default /tmp/ortenv/bin/python; see bench/vs_ort.sh for the one-line install). Every
number is the median over R rounds of each tool's own median of N runs.

Prints one row per model (ms, and Plinth/ORT ratios), then the geometric mean of default/ORT
and cpu/ORT, the models above 1.0x ORT, and the models where the default is more than 5%
slower than `order = cpu`. Timing only: nothing here asserts a speed.
"""
import argparse, glob, json, math, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(tmp, name, order):
    text = open(os.path.join(ROOT, "backend.ini")).read()
    text = re.sub(r"(?m)^modules = .*$", "modules = " + os.path.join(ROOT, "modules.d"), text)
    text = re.sub(r"(?m)^cache_dir = .*$", "cache_dir =", text)
    if order:
        text = re.sub(r"(?m)^order = .*$", "order = " + order, text)
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def inputs(zoo, model):
    return sorted(glob.glob(os.path.join(zoo, model + ".in.*.npy")))


def plinth(model_path, ini, ins, args):
    cmd = [os.path.join(ROOT, "build/bin/plinth"), "bench", model_path, "--config", ini,
           "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", "5", "--json"]
    for p in ins:
        cmd += ["--input", re.sub(r".*\.in\.(.*)\.npy$", r"\1", p) + "=" + p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"], None


def ort(model_path, ins, args, py, peer):
    cmd = [py, peer, model_path, "--runtime", "ort", "--threads", str(args.threads),
           "--runs", str(args.runs), "--warmup", "5"]
    for p in ins:
        cmd += ["--input", re.sub(r".*\.in\.(.*)\.npy$", r"\1", p) + "=" + p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"], None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    k = len(xs) // 2
    return xs[k] if len(xs) % 2 else (xs[k - 1] + xs[k]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build/tests/zoo/zoo"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="end with one JSON object of the table")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    py = os.environ.get("ORT_PYTHON") or (
        "/tmp/ortenv/bin/python" if os.access("/tmp/ortenv/bin/python", os.X_OK) else "python3")
    peer = os.environ.get("PEER_BENCH") or os.path.join(ROOT, "..", "shared", "bench",
                                                        "peer_bench.py")
    if not os.access(os.path.join(ROOT, "build/bin/plinth"), os.X_OK):
        sys.exit("zoo.py: build/bin/plinth is not built (bash tools/dev.sh demo)")
    if not os.path.exists(peer):
        sys.exit(f"zoo.py: {peer} not found (set PEER_BENCH)")
    names = [os.path.basename(m)[:-5] if m.endswith(".onnx") else m for m in args.models] or \
        sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(args.zoo, "*.onnx")))
    if not names:
        sys.exit(f"zoo.py: no models in {args.zoo} (ctest -R zoo.models exports them)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        default_ini = config(tmp, "default.ini", None)
        cpu_ini = config(tmp, "cpu.ini", "cpu")
        print(f"{'model':<24} {'default_ms':>10} {'cpu_ms':>10} {'ort_ms':>10} "
              f"{'def/ort':>8} {'cpu/ort':>8} {'def/cpu':>8}", flush=True)
        for name in names:
            path = os.path.join(args.zoo, name + ".onnx")
            ins = inputs(args.zoo, name)
            d, c, o, why = [], [], [], None
            for _ in range(args.rounds):
                for series, fn in ((d, lambda: plinth(path, default_ini, ins, args)),
                                   (c, lambda: plinth(path, cpu_ini, ins, args)),
                                   (o, lambda: ort(path, ins, args, py, peer))):
                    v, err = fn()
                    series.append(v)
                    why = why or err
            md, mc, mo = median(d), median(c), median(o)
            rows.append({"model": name, "default_ms": md, "cpu_ms": mc, "ort_ms": mo,
                         "error": why if None in (md, mc, mo) else None})

            def ratio(a, b):
                return f"{a / b:8.2f}" if a and b else f"{'n/a':>8}"
            fmt = lambda v: f"{v:10.3f}" if v is not None else f"{'failed':>10}"
            print(f"{name:<24} {fmt(md)} {fmt(mc)} {fmt(mo)} {ratio(md, mo)} {ratio(mc, mo)} "
                  f"{ratio(md, mc)}" + (f"  ({why})" if rows[-1]["error"] else ""), flush=True)
    ok = [r for r in rows if r["error"] is None]

    def geo(key):
        return math.exp(sum(math.log(r[key] / r["ort_ms"]) for r in ok) / len(ok)) if ok else None
    summary = {"models": len(rows), "timed": len(ok), "geomean_default_vs_ort": geo("default_ms"),
               "geomean_cpu_vs_ort": geo("cpu_ms"),
               "above_ort": [r["model"] for r in ok if r["default_ms"] > r["ort_ms"]],
               "default_5pct_slower_than_cpu":
                   [r["model"] for r in ok if r["default_ms"] > 1.05 * r["cpu_ms"]]}
    print()
    if ok:
        print(f"geometric mean over {len(ok)} models: default/ORT "
              f"{summary['geomean_default_vs_ort']:.2f}, order = cpu/ORT "
              f"{summary['geomean_cpu_vs_ort']:.2f}")
    print(f"above 1.0x ORT: {len(summary['above_ort'])} ({', '.join(summary['above_ort'])})")
    print(f"default more than 5% slower than order = cpu: "
          f"{len(summary['default_5pct_slower_than_cpu'])} "
          f"({', '.join(summary['default_5pct_slower_than_cpu'])})")
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}))


if __name__ == "__main__":
    main()
