#!/usr/bin/env python3
"""bench/zoo.py — the model zoo timed on Plinth's default backend.ini, on `order = cpu`, on
`precision = bf16`, on ONNX Runtime and (with --openvino) on OpenVINO's CPU plugin,
alternating in one run, with the geometric means and checks issue 15 is judged by.

    python3 bench/zoo.py [--zoo DIR] [--rounds R] [--runs N] [--threads N] [--openvino]
                         [--no-bf16] [--no-warm] [--json] [MODEL ...]

DIR (default build/tests/zoo/zoo) holds the zoo that `ctest -R zoo.models` (or
bench/zoo/make_zoo.py) exports; MODEL names pick some of it (`vit_s`, `convnext_s.onnx`).
Each model's inputs are DIR/<model>.in.<input>.npy. The Plinth configurations are the
repository's backend.ini with the module folder made absolute and the cache off (a cold
session each time): as it is ("default"), with `order = cpu`, and with the onednn
section's `precision = bf16`. The peers run through ../shared/bench/peer_bench.py with
ORT_PYTHON (default /tmp/ortenv/bin/python; `python3 -m venv --system-site-packages
/tmp/ortenv && /tmp/ortenv/bin/pip install onnxruntime openvino`). Every time is the median
over R rounds of each tool's own median of N runs; load is the default configuration's
load (runtime + model + session, cold) and its model + session part ("sess_ms": what an
application that already made its runtime pays per model) against the peer's session
creation (which, like sess_ms, leaves out importing the peer's library; ONNX Runtime leaves
work to a session's first run that Plinth does when it makes the session, so model + session +
first run is checked against the peer's session + first run too), and RSS each
process's peak. "warm_ses" is model + session again with a compiled-subgraph cache that one
run before the rounds filled, against half the peer's session creation.

Prints one row per model, then: the geometric means of default/ORT and cpu/ORT (and
default/OpenVINO), the models above 1.0x ORT, the models where the default is more than 5%
slower than `order = cpu`, those where bf16 is slower than f32 (of the models where it
computes anything in bf16: the onednn module's debug log counts its bf16 primitives; a
model with none runs the same primitives under both, marked "=" after bf16/def, and is
listed apart, since a difference there is noise), where the load or the
peak RSS is above ORT's, and where the core's arena (`plinth explain`'s memory plan, the worst
device of the default and `order = cpu` configurations; column "arena") is above 1.05x its
lower bound. Timing only: nothing here asserts a speed.
"""
import argparse, glob, json, math, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config(tmp, name, order=None, bf16=False, cache=None, choose=None, log=None):
    text = open(os.path.join(ROOT, "backend.ini")).read()
    text = re.sub(r"(?m)^modules = .*$", "modules = " + os.path.join(ROOT, "modules.d"), text)
    text = re.sub(r"(?m)^cache_dir = .*$", "cache_dir =" + (" " + cache if cache else ""), text)
    if order:
        text = re.sub(r"(?m)^order = .*$", "order = " + order, text)
    if choose:
        text = re.sub(r"(?m)^choose = .*$", "choose = " + choose, text)
    if bf16:
        text = re.sub(r"(?m)^\[onednn\]$", "[onednn]\nprecision = bf16", text)
    if log:
        text = re.sub(r"(?m)^log = .*$", "log = " + log, text)
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def inputs(zoo, model):
    return sorted(glob.glob(os.path.join(zoo, model + ".in.*.npy")))


_MANIFEST_NAMES = {}


def input_name(p):
    """The graph input file P feeds: the manifest's name for it (a file name cannot
    hold every input name: Caffe2's 'gpu_0/data_0' is stored as gpu_0_data_0), else
    the <input> part of <model>.in.<input>.npy."""
    zoo = os.path.dirname(p)
    if zoo not in _MANIFEST_NAMES:
        names = {}
        try:
            with open(os.path.join(zoo, "manifest.json")) as f:
                m = json.load(f)
            for e in m.get("models", []) if isinstance(m, dict) else m:
                for i in e.get("inputs", []) if isinstance(e, dict) else []:
                    if isinstance(i, dict) and "file" in i and "name" in i:
                        names[i["file"]] = i["name"]
        except (OSError, ValueError, AttributeError):
            pass
        _MANIFEST_NAMES[zoo] = names
    return _MANIFEST_NAMES[zoo].get(os.path.basename(p),
                                    re.sub(r".*\.in\.(.*)\.npy$", r"\1", p))


def feeds(ins):
    out = []
    for p in ins:
        out += ["--input", input_name(p) + "=" + p]
    return out


def last_json(r):
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def plinth(model_path, ini, ins, args):
    cmd = [os.path.join(ROOT, "build/bin/plinth"), "bench", model_path, "--config", ini,
           "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", "5", "--json"]
    j, err = last_json(subprocess.run(cmd + feeds(ins), capture_output=True, text=True))
    return (j["median_ms"], j["load_ms"], j["peak_rss_mb"], j["model_ms"] + j["session_ms"],
            j["model_ms"] + j["session_ms"] + j.get("first_run_ms", 0.0)) if j else None, err


def peer(runtime, model_path, ins, args, py, script):
    cmd = [py, script, model_path, "--runtime", runtime, "--threads", str(args.threads),
           "--runs", str(args.runs), "--warmup", "5"]
    j, err = last_json(subprocess.run(cmd + feeds(ins), capture_output=True, text=True))
    return (j["median_ms"], j["load_ms"], j["maxrss_kb"] / 1024.0, j["load_ms"],
            j["load_ms"] + j["first_run_ms"]) if j else None, err


def arena_ratio(model_path, ini, ins):
    """The worst arena / lower bound over the devices of `plinth explain`'s memory plan."""
    import numpy
    shapes = []
    for p in ins:
        shapes += ["--shape", input_name(p) + "=" +
                   ",".join(str(d) for d in numpy.load(p, mmap_mode="r").shape)]
    r = subprocess.run([os.path.join(ROOT, "build/bin/plinth"), "explain", model_path,
                        "--config", ini, "--json"] + shapes, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    devs = json.loads(r.stdout)["memory"]["devices"]
    return max([d["arena_bytes"] / d["lower_bound_bytes"] for d in devs
                if d["lower_bound_bytes"]] or [1.0])


def bf16_layers(model_path, ini, ins):
    """How many primitives compute in bf16 under INI (precision = bf16): the onednn
    module's debug line for each compiled subgraph ("... N in bf16"). None when the
    load fails. 0: precision = bf16 changes nothing in this model, so its time is
    f32's and a difference between the two columns is noise."""
    r = subprocess.run([os.path.join(ROOT, "build/bin/plinth"), "bench", model_path,
                        "--config", ini, "--runs", "1", "--warmup", "0"] + feeds(ins),
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return sum(int(n) for n in re.findall(r"(\d+) in bf16", r.stderr))


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
    ap.add_argument("--openvino", action="store_true", help="also time OpenVINO's CPU plugin")
    ap.add_argument("--no-bf16", action="store_true", help="leave out precision = bf16")
    ap.add_argument("--no-warm", action="store_true",
                    help="leave out the load with a warm compiled-subgraph cache")
    ap.add_argument("--json", action="store_true", help="end with one JSON object of the table")
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    py = os.environ.get("ORT_PYTHON") or (
        "/tmp/ortenv/bin/python" if os.access("/tmp/ortenv/bin/python", os.X_OK) else "python3")
    script = os.environ.get("PEER_BENCH") or os.path.join(ROOT, "..", "shared", "bench",
                                                          "peer_bench.py")
    if not os.access(os.path.join(ROOT, "build/bin/plinth"), os.X_OK):
        sys.exit("zoo.py: build/bin/plinth is not built (bash tools/dev.sh demo)")
    if not os.path.exists(script):
        sys.exit(f"zoo.py: {script} not found (set PEER_BENCH)")
    names = [os.path.basename(m)[:-5] if m.endswith(".onnx") else m for m in args.models] or \
        sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(args.zoo, "*.onnx")))
    if not names:
        sys.exit(f"zoo.py: no models in {args.zoo} (ctest -R zoo.models exports them)")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tools = [("default", lambda p, i: plinth(p, config(tmp, "default.ini"), i, args)),
                 ("cpu", lambda p, i: plinth(p, config(tmp, "cpu.ini", "cpu"), i, args))]
        if not args.no_bf16:
            tools.append(("bf16", lambda p, i: plinth(p, config(tmp, "bf16.ini", bf16=True), i,
                                                      args)))
        if not args.no_warm:
            cache = os.path.join(tmp, "cache")
            os.makedirs(cache, mode=0o700, exist_ok=True)
            warm_ini = config(tmp, "warm.ini", cache=cache)
            tools.append(("warm", lambda p, i: plinth(p, warm_ini, i, args)))
        tools.append(("ort", lambda p, i: peer("ort", p, i, args, py, script)))
        if args.openvino:
            tools.append(("openvino", lambda p, i: peer("openvino", p, i, args, py, script)))
        keys = [k for k, _ in tools]
        print(f"{'model':<22}" + "".join(f"{k + '_ms':>12}" for k in keys) +
              f"{'def/ort':>8}{'def/cpu':>8}" + (f"{'bf16/def':>9}" if "bf16" in keys else "") +
              (f"{'def/ov':>7}" if args.openvino else "") +
              f"{'load_ms':>9}{'sess_ms':>9}" + (f"{'warm_ses':>9}" if "warm" in keys else "") +
              f"{'ort_load':>9}{'rss_mb':>8}{'ort_rss':>8}{'arena':>7}",
              flush=True)
        for name in names:
            path = os.path.join(args.zoo, name + ".onnx")
            ins = inputs(args.zoo, name)
            got, why = {k: [] for k in keys}, None
            if "warm" in keys:  # fills the cache: every timed "warm" load then hits it
                plinth(path, warm_ini, ins, args)
            for r in range(args.rounds):
                for k, fn in (tools if r % 2 == 0 else tools[::-1]):
                    v, err = fn(path, ins)
                    got[k].append(v)
                    why = why or err
            row = {"model": name}
            for k in keys:
                ok = [v for v in got[k] if v is not None]
                row[k + "_ms"] = median([v[0] for v in ok])
                row[k + "_load_ms"] = median([v[1] for v in ok])
                row[k + "_rss_mb"] = median([v[2] for v in ok])
                row[k + "_sess_ms"] = median([v[3] for v in ok])
                row[k + "_first_ms"] = median([v[4] for v in ok])
            arenas = [arena_ratio(path, config(tmp, n + ".ini", o), ins)
                      for n, o in (("default", None), ("cpu", "cpu"))]
            row["arena_vs_lower_bound"] = None if None in arenas else max(arenas)
            if "bf16" in keys:
                row["bf16_layers"] = bf16_layers(
                    path, config(tmp, "bf16-debug.ini", bf16=True, log="debug"), ins)
            row["error"] = why if any(row[k + "_ms"] is None for k in keys) else None
            rows.append(row)

            def ratio(a, b, w=8):
                return f"{a / b:{w}.2f}" if a and b else f"{'n/a':>{w}}"
            fmt = lambda v, w=12: f"{v:{w}.3f}" if v is not None else f"{'failed':>{w}}"
            line = f"{name:<22}" + "".join(fmt(row[k + "_ms"]) for k in keys)
            line += ratio(row["default_ms"], row["ort_ms"]) + ratio(row["default_ms"],
                                                                     row["cpu_ms"])
            if "bf16" in keys:
                line += ratio(row["bf16_ms"], row["default_ms"], 8) + \
                    ("=" if row.get("bf16_layers") == 0 else " ")
            if args.openvino:
                line += ratio(row["default_ms"], row["openvino_ms"], 7)
            line += fmt(row["default_load_ms"], 9) + fmt(row["default_sess_ms"], 9)
            if "warm" in keys:
                line += fmt(row["warm_sess_ms"], 9)
            line += fmt(row["ort_load_ms"], 9)
            line += fmt(row["default_rss_mb"], 8)[:-2] + "  " + fmt(row["ort_rss_mb"], 8)[:-2]
            line += fmt(row["arena_vs_lower_bound"], 7)
            print(line + (f"  ({why})" if row["error"] else ""), flush=True)
    ok = [r for r in rows if r["error"] is None]

    def geo(key, peer_key="ort_ms"):
        return math.exp(sum(math.log(r[key] / r[peer_key]) for r in ok) / len(ok)) if ok else None
    summary = {"models": len(rows), "timed": len(ok), "threads": args.threads,
               "geomean_default_vs_ort": geo("default_ms"),
               "geomean_cpu_vs_ort": geo("cpu_ms"),
               "above_ort": [r["model"] for r in ok if r["default_ms"] > r["ort_ms"]],
               "default_5pct_slower_than_cpu":
                   [r["model"] for r in ok if r["default_ms"] > 1.05 * r["cpu_ms"]],
               "load_above_ort": [r["model"] for r in ok
                                  if r["default_load_ms"] > r["ort_load_ms"]],
               "session_above_ort": [r["model"] for r in ok
                                     if r["default_sess_ms"] > r["ort_load_ms"]],
               "first_result_above_ort": [r["model"] for r in ok
                                          if r["default_first_ms"] > r["ort_first_ms"]],
               "rss_above_ort": [r["model"] for r in ok if r["default_rss_mb"] > r["ort_rss_mb"]],
               "warm_session_above_half_ort": [r["model"] for r in ok if "warm_sess_ms" in r and
                                               r["warm_sess_ms"] > 0.5 * r["ort_load_ms"]],
               "arena_above_1_05": [r["model"] for r in rows
                                    if (r["arena_vs_lower_bound"] or 9) > 1.05]}
    if "bf16_ms" in (ok[0] if ok else {}):
        # a model with no bf16 primitive computes the same under both: not judged
        summary["bf16_slower_than_f32"] = [r["model"] for r in ok
                                           if r["bf16_ms"] > r["default_ms"] and
                                           r.get("bf16_layers") != 0]
        summary["bf16_same_as_f32"] = [r["model"] for r in ok if r.get("bf16_layers") == 0]
        summary["geomean_bf16_vs_f32"] = geo("bf16_ms", "default_ms")
    if args.openvino:
        summary["geomean_default_vs_openvino"] = geo("default_ms", "openvino_ms")
        summary["geomean_openvino_vs_ort"] = geo("openvino_ms")
    print()
    if ok:
        print(f"geometric mean over {len(ok)} models ({args.threads} threads): default/ORT "
              f"{summary['geomean_default_vs_ort']:.2f}, order = cpu/ORT "
              f"{summary['geomean_cpu_vs_ort']:.2f}" +
              (f", default/OpenVINO {summary['geomean_default_vs_openvino']:.2f}, "
               f"OpenVINO/ORT {summary['geomean_openvino_vs_ort']:.2f}" if args.openvino else "") +
              (f", bf16/f32 {summary['geomean_bf16_vs_f32']:.2f}"
               if "geomean_bf16_vs_f32" in summary else ""))
    for key, text in (("above_ort", "above 1.0x ORT"),
                      ("default_5pct_slower_than_cpu", "default more than 5% slower than "
                                                       "order = cpu"),
                      ("bf16_slower_than_f32", "precision = bf16 slower than f32 (of the "
                                               "models it changes)"),
                      ("bf16_same_as_f32", "precision = bf16 computes nothing in bf16 (the "
                                           "same primitives as f32; '=' after bf16/def)"),
                      ("load_above_ort", "cold load (runtime + model + session) above ORT's "
                                         "session creation"),
                      ("session_above_ort", "model + session above ORT's session creation"),
                      ("first_result_above_ort", "model + session + first run above ORT's "
                                                 "session + first run"),
                      ("rss_above_ort", "peak RSS above ORT's"),
                      ("warm_session_above_half_ort", "model + session with a warm cache above "
                                                      "half ORT's session creation"),
                      ("arena_above_1_05", "core arena above 1.05x its lower bound "
                                           "(default or order = cpu)")):
        if key in summary:
            print(f"{text}: {len(summary[key])} ({', '.join(summary[key])})")
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary}))


if __name__ == "__main__":
    main()
