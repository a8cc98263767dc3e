#!/usr/bin/python3
"""Run Plinth's model zoo (made by make_zoo.py) and compare every output with PyTorch's.

    /usr/bin/python3 bench/zoo/run_zoo.py [--zoo DIR] [--plinth BIN] [--modules DIR]
        [--configs cpu,default] [--only NAME,...] [--fast] [--repros] [--runs N] [--bench-runs N]
        [--threads T] [--tol T]
        [--timeout S] [--check] [--make]

For every model of DIR/manifest.json and every configuration it runs

    plinth run MODEL.onnx --config INI --input NAME=FILE.npy ... --output-dir TMP --runs N

and compares each output with the reference: err = max|plinth - torch| / max|torch| over the
output (the error relative to the output's scale; an all-zero reference falls back to the absolute
error), the largest over all outputs. A model is `ok` when err <= --tol (default 1e-4; a
manifest entry's "tol" raises it for that model, an output entry's for that output), `wrong`
when it is larger or a shape/dtype differs or an output is missing, `refused` when plinth exits
non-zero (the reason is its last stderr line), `timeout` past --timeout.

Configurations: `cpu` is a generated INI with `order = cpu` (the cpu module only); `default` is
the repository's backend.ini (`order = onednn, cuda, cpu`). Both load modules from --modules
(default: the repository's modules.d).

Prints a markdown table (model, architecture, opset, nodes, one status per configuration, the
time of one inference per configuration) and a summary. The time is the median of
`plinth bench --runs N --warmup 2 --threads T` (T = --threads, default 1; the zoo's inputs, N = --bench-runs, default 10); with
--bench-runs 0 it is the sum of the per-step times `plinth run` prints for its --runs runs
(averaged, the first run, with its one-time compilation, included). --make runs make_zoo.py first (into --zoo). --check exits 1 when
anything is not ok (the CTest test zoo.models uses it with --repros); without torch it exits 77 (skip).
"""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def load_npy(path):
    import numpy as np
    return np.load(path, allow_pickle=False)


def rel_error(got, ref):
    """max|got - ref| / max|ref| in float64; NaN or Inf where the reference is finite is infinite
    error. Strings (NumPy's <U) are equal or not: 0 or infinite error."""
    import numpy as np
    if ref.dtype.kind in "US" or got.dtype.kind in "US":
        return 0.0 if got.dtype.kind == ref.dtype.kind and np.array_equal(got, ref) else float("inf")
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    if r.size == 0:
        return 0.0
    d = np.abs(g - r)
    if not np.all(np.isfinite(d)):
        return float("inf")
    scale = float(np.max(np.abs(r)))
    return float(np.max(d)) / (scale if scale > 0 else 1.0)


def untied_rows(got, ref, rank):
    """GOT and REF without the rows whose RANK (a 1-D output ranking them, a detector's scores)
    the reference shares with another row: which of equal-scored candidates a TopK or
    NonMaxSuppression keeps, and in which order, ONNX leaves open, and rounding a bit apart
    upstream picks others (a random-weight Faster R-CNN scores all 100 of its boxes alike).
    An output entry's "ranked_by" names RANK; its own comparison checks the scores."""
    import numpy as np
    if rank is None or rank.ndim != 1 or ref.ndim == 0 or ref.shape[0] != rank.shape[0]:
        return got, ref
    _, inverse, counts = np.unique(rank, return_inverse=True, return_counts=True)
    keep = counts[inverse] == 1
    return got[keep], ref[keep]


def unsized_rows(got, ref, boxes, margin=0.03):
    """GOT and REF without the rows whose reference box (BOXES, [rows, 4] as x1, y1, x2, y2)
    has a width or height within MARGIN pixels of a whole number (not on it: a box clipped
    to the image at both sides is whole in every run): a Keypoint R-CNN resamples
    each row's heatmap to ceil(width) x ceil(height) (torchvision's heatmaps_to_keypoints), so
    a box 92.001 pixels high in the reference and 91.99 after rounding a bit apart upstream
    (ONNX Runtime's own optimised graph is 0.02 px off its unoptimised one) gives another
    grid, and another maximum (3.6% off on one row of 100). An output entry's "sized_by"
    names BOXES; the boxes themselves are checked as they are."""
    import numpy as np
    if boxes is None or boxes.ndim != 2 or boxes.shape[1] != 4 or ref.ndim == 0 or \
            ref.shape[0] != boxes.shape[0]:
        return got, ref
    b = boxes.astype(np.float64)
    size = np.stack([b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    off = np.abs(size - np.round(size))
    near = (off > 0) & (off < margin)  # exactly whole: clipped to the image on both sides
    keep = ~near.any(axis=1)
    return got[keep], ref[keep]


def zoo_parser(doc, out_name, list_help="print the zoo and exit"):
    """The options every exporter script of this folder takes: --out (default build/OUT_NAME),
    --only and --list; the caller adds its own and parses."""
    import argparse
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "build", out_name))
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help=list_help)
    return ap


def zoo_entry(model, name, arch, exporter, **extra):
    """A manifest entry for the ONNX MODEL as make_zoo.py writes them: NAME, ARCH, the EXPORTER,
    the opset, node and op counts and parameters, and EXTRA keys (ort_err, say)."""
    import collections
    import numpy as np
    g = model.graph
    entry = dict(name=name, arch=arch, opset=max((o.version for o in model.opset_import
                                                  if o.domain in ("", "ai.onnx")), default=0),
                 note="", fast=False, repro=False, exporter=exporter, nodes=len(g.node),
                 ops=dict(collections.Counter(n.op_type for n in g.node)),
                 params=int(sum(int(np.prod(t.dims)) for t in g.initializer)))
    entry.update(extra)
    return entry


def save_io(outdir, entry, inputs, outputs):
    """Writes a manifest ENTRY's arrays into OUTDIR as make_zoo.py names them and lists them in
    its "inputs" and "outputs": INPUTS (name, array) as NAME.in.K.npy, OUTPUTS (name, array,
    extra keys of the output entry, a "tol" say) as NAME.ref.K.npy."""
    import numpy as np
    entry.setdefault("inputs", [])
    entry.setdefault("outputs", [])
    for k, (name, x) in enumerate(inputs):
        f = "%s.in.%d.npy" % (entry["name"], k)
        np.save(os.path.join(outdir, f), x)
        entry["inputs"].append(dict(name=name, file=f, shape=list(x.shape), dtype=str(x.dtype)))
    for k, (name, y, extra) in enumerate(outputs):
        f = "%s.ref.%d.npy" % (entry["name"], k)
        np.save(os.path.join(outdir, f), y)
        entry["outputs"].append(dict(name=name, file=f, shape=list(y.shape), dtype=str(y.dtype),
                                     max_abs=float(np.abs(y.astype(np.float64)).max()) if y.size else 0.0,
                                     **extra))
    return entry


def export_zoo(jobs, out, exporter, seed, prog):
    """Runs JOBS, (name, function making the manifest entry), into OUT: a job that fails is
    reported and its NAME.onnx removed, and OUT/manifest.json is rewritten after each (a long
    run killed keeps what it made). Returns the names that failed."""
    os.makedirs(out, exist_ok=True)
    entries, failed = [], []
    for name, make in jobs:
        print("%s: exporting %s" % (prog, name), file=sys.stderr, flush=True)
        try:
            entries.append(make())
        except Exception as e:  # report and go on with the others
            failed.append(name)
            if os.path.exists(os.path.join(out, name + ".onnx")):
                os.remove(os.path.join(out, name + ".onnx"))
            print("%s: %s: %s" % (prog, name, str(e).splitlines()[0] if str(e) else type(e).__name__),
                  file=sys.stderr)
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(dict(exporter=exporter, seed=seed, models=entries), f, indent=1)
    print("%s: %d models -> %s" % (prog, len(entries), os.path.abspath(out)), file=sys.stderr)
    if failed:
        print("%s: not exported: %s" % (prog, ", ".join(failed)), file=sys.stderr)
    return failed


def last_line(text, model=None):
    """The last non-empty line, without the `plinth: MODEL: ` prefix that every line repeats."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    line = lines[-1] if lines else "(no message)"
    for prefix in ("plinth: ", (model or "") + ": "):
        if prefix.strip() and line.startswith(prefix):
            line = line[len(prefix):]
    return line


def run_one(plinth, model, ini, zoo, entry, runs, timeout, tol):
    """-> dict(status, err, detail, ms)."""
    with tempfile.TemporaryDirectory(prefix="plinth-zoo-") as tmp:
        cmd = [plinth, "run", os.path.join(zoo, entry["name"] + ".onnx"), "--config", ini,
               "--output-dir", tmp, "--runs", str(runs)]
        for i in entry["inputs"]:
            cmd += ["--input", "%s=%s" % (i["name"], os.path.join(zoo, i["file"]))]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               timeout=timeout, cwd=tmp)
        except subprocess.TimeoutExpired:
            return dict(status="timeout", err=None, detail="over %d s" % timeout, ms=None)
        wall = (time.monotonic() - t0) * 1e3
        if p.returncode != 0:
            return dict(status="refused", err=None, detail=last_line(p.stderr or p.stdout, cmd[2]), ms=None,
                        wall=wall)
        steps = re.findall(r"^\s+([0-9.]+) ms\s", p.stdout.split("\nsteps", 1)[-1], re.M)
        ms = sum(float(s) for s in steps) if steps else None
        worst, detail, bad = 0.0, "", False
        refs = {o["name"]: load_npy(os.path.join(zoo, o["file"])) for o in entry["outputs"]}
        for o in entry["outputs"]:
            path = os.path.join(tmp, o["name"].replace("/", "_") + ".npy")
            if not os.path.exists(path):
                return dict(status="wrong", err=None, detail="output %s missing" % o["name"], ms=ms)
            got = load_npy(path)
            ref = refs[o["name"]]
            if list(got.shape) != list(ref.shape):
                return dict(status="wrong", err=None, ms=ms,
                            detail="output %s shape %s, expected %s" % (o["name"], list(got.shape), list(ref.shape)))
            rank = refs.get(o.get("ranked_by"))
            if o.get("sized_by") is not None:  # before untied_rows drops rows of the boxes
                sized = refs.get(o["sized_by"])
                if rank is not None and sized is not None and rank.ndim == 1 and \
                        sized.ndim == 2 and sized.shape[0] == rank.shape[0] == ref.shape[0]:
                    got, ref = unsized_rows(got, ref, sized)
                    rank = unsized_rows(rank, rank, sized)[0]
                else:
                    got, ref = unsized_rows(got, ref, sized)
            got, ref = untied_rows(got, ref, rank)
            e = rel_error(got, ref)
            if e > worst or not detail:
                worst, detail = e, o["name"]
            # an output entry's "tol" raises the model's for that output alone
            bad |= e > max(tol, entry.get("tol", 0.0), o.get("tol", 0.0))
        status = "wrong" if bad else "ok"
        return dict(status=status, err=worst, detail=detail, ms=ms, wall=wall)


def bench_one(plinth, ini, zoo, entry, runs, threads, timeout):
    """Median milliseconds of one inference from `plinth bench --json` (None on failure)."""
    cmd = [plinth, "bench", os.path.join(zoo, entry["name"] + ".onnx"), "--config", ini,
           "--runs", str(runs), "--warmup", "2", "--threads", str(threads), "--json"]
    for i in entry["inputs"]:
        cmd += ["--input", "%s=%s" % (i["name"], os.path.join(zoo, i["file"]))]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout)
        if p.returncode != 0:
            return None
        return float(json.loads(p.stdout.strip().splitlines()[-1])["median_ms"])
    except (subprocess.TimeoutExpired, ValueError, KeyError, IndexError):
        return None


def fmt_status(r):
    if r["status"] == "ok":
        return "ok (%.1e)" % r["err"]
    if r["status"] == "wrong":
        if r["err"] is None:
            return "**wrong** (%s)" % r["detail"]
        return "**wrong** (%.1e)" % r["err"]
    reason = r["detail"].replace("|", "\\|")
    if len(reason) > 160:
        reason = reason[:157] + "..."
    return "**%s** (%s)" % (r["status"], reason)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zoo", default=os.path.join(ROOT, "build", "zoo"))
    ap.add_argument("--plinth", default=os.path.join(ROOT, "build", "bin", "plinth"))
    ap.add_argument("--modules", default=os.path.join(ROOT, "modules.d"))
    ap.add_argument("--default-ini", default=os.path.join(ROOT, "backend.ini"))
    ap.add_argument("--cache", default="",
                    help="the default configuration with its compile cache in this folder "
                         "(run twice: the second run checks what warm loads import)")
    ap.add_argument("--configs", default="cpu,default")
    ap.add_argument("--only", default="")
    ap.add_argument("--fast", action="store_true")
    ap.add_argument("--repros", action="store_true", help="also run the repro_* models")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--bench-runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1,
                    help="plinth bench --threads (default 1: on a loaded machine, two threads "
                         "time mostly the scheduler)")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--qdq", choices=("int8", "float"), default=None,
                    help="[graph] qdq in both configurations (default: cpu takes Plinth's "
                         "default, default the INI's)")
    a = ap.parse_args()

    try:
        import numpy  # noqa: F401
        if a.make:
            import torch  # noqa: F401
            import onnx  # noqa: F401
    except ImportError as e:
        print("run_zoo.py: skipped: %s (needs python3-numpy, python3-torch, python3-onnx)" % e)
        return 77
    if a.make:
        cmd = [sys.executable, os.path.join(HERE, "make_zoo.py"), "--out", a.zoo]
        if a.only:
            cmd += ["--only", a.only]
        if a.fast:
            cmd.append("--fast")
        r = subprocess.run(cmd)
        if r.returncode != 0:
            print("run_zoo.py: make_zoo.py failed (exit %d)" % r.returncode, file=sys.stderr)
            return 1
    man_path = os.path.join(a.zoo, "manifest.json")
    if not os.path.exists(man_path):
        print("run_zoo.py: %s not found: run make_zoo.py (or pass --make)" % man_path, file=sys.stderr)
        return 1
    if not os.access(a.plinth, os.X_OK):
        print("run_zoo.py: %s is not an executable: build Plinth first" % a.plinth, file=sys.stderr)
        return 1
    entries = json.load(open(man_path))["models"]
    if a.only:
        want = set(a.only.split(","))
        entries = [e for e in entries if e["name"] in want]
    elif not a.repros:
        entries = [e for e in entries if not e.get("repro")]
    if a.fast:
        entries = [e for e in entries if e.get("fast")]

    modules = os.path.abspath(a.modules)
    ini_dir = tempfile.mkdtemp(prefix="plinth-zoo-ini-")
    atexit.register(shutil.rmtree, ini_dir, ignore_errors=True)
    configs = []
    for c in a.configs.split(","):
        if c == "cpu":
            path = os.path.join(ini_dir, "cpu.ini")
            with open(path, "w") as f:
                f.write("[runtime]\nmodules = %s\n\n[placement]\norder = cpu\n" % modules)
                if a.qdq:
                    f.write("\n[graph]\nqdq = %s\n" % a.qdq)
        elif c == "default":
            # The repository's backend.ini, with modules from --modules and no compile
            # cache (or the one --cache names).
            text = open(a.default_ini).read()
            text = re.sub(r"(?m)^modules\s*=.*$", "modules = %s" % modules, text)
            text = re.sub(r"(?m)^cache_dir\s*=.*$",
                          "cache_dir =" + (" " + os.path.abspath(a.cache) if a.cache else ""),
                          text)
            if a.qdq:
                text = re.sub(r"(?m)^qdq\s*=.*$", "", text)
                text = re.sub(r"(?m)^\[graph\]\s*$", "[graph]\nqdq = %s" % a.qdq, text)
            path = os.path.join(ini_dir, "default.ini")
            with open(path, "w") as f:
                f.write(text)
        else:
            print("run_zoo.py: unknown configuration %r (cpu, default)" % c, file=sys.stderr)
            return 2
        configs.append((c, path))

    rows, bad = [], 0
    for e in entries:
        res = []
        for c, ini in configs:
            r = run_one(os.path.abspath(a.plinth), e["name"], ini, os.path.abspath(a.zoo), e,
                        a.runs, a.timeout, a.tol)
            if a.bench_runs > 0 and r["status"] in ("ok", "wrong"):
                r["ms"] = bench_one(os.path.abspath(a.plinth), ini, os.path.abspath(a.zoo), e,
                                    a.bench_runs, a.threads, a.timeout)
            res.append(r)
            if r["status"] != "ok":
                bad += 1
            print("run_zoo.py: %-22s %-8s %s" % (e["name"], c, fmt_status(r)), file=sys.stderr, flush=True)
        rows.append((e, res))

    head = ["model", "architecture", "opset", "nodes"] + [c for c, _ in configs] + ["ms (%s)" % c for c, _ in configs]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * 2 + ["---"] * len(configs) + ["---:"] * len(configs)) + "|")
    for e, res in rows:
        name = e["name"] + (" (%s)" % e["note"] if e.get("note") else "")
        cells = [name, e["arch"], str(e["opset"]), str(e["nodes"])]
        cells += [fmt_status(r) for r in res]
        cells += ["%.2f" % r["ms"] if r.get("ms") is not None else "-" for r in res]
        print("| " + " | ".join(cells) + " |")
    print()
    for i, (c, _) in enumerate(configs):
        counts = {}
        for _, res in rows:
            counts[res[i]["status"]] = counts.get(res[i]["status"], 0) + 1
        print("- %s: %s of %d models" % (c, ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())), len(rows)))
    print("- %d models, %d architectures; tolerance max|plinth - ref| / max|ref| <= %g"
          % (len(rows), len({e["arch"] for e, _ in rows}), a.tol))
    return 1 if (a.check and bad) else 0


if __name__ == "__main__":
    sys.exit(main())
