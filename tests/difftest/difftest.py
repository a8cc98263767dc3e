#!/usr/bin/python3
"""difftest: Plinth's differential tester, in the spirit of ggml's
test-backend-ops. Random small graphs (dt_gen) run on every backend that is
loaded (order = cpu; onednn, cpu; example_acc, cpu; cuda, cpu), each
compared with the cpu module, and the cpu module compared with a numpy
float64 reference (dt_ref) that shares no code with it.

  difftest.py ci --family F --seeds A:B [--dtype D]    fixed seeds (CTest); --strict B:
                                                        B must run each graph's first node
  difftest.py --soak SECONDS [--dtypes f32,f16,...]    random seeds until time is up;
                                                        every failure is printed with its
                                                        seed, shrunk and saved
  difftest.py regress FILE.json                        one regression file (CTest)
  difftest.py one SEED --family F [--keep DIR]         one graph, verbosely

Common options: --lib PATH (libplinth.so), --modules DIR (modules.d),
--threads N, --known FILE (known failures), --module FILE.so (test that
module file alone, against cpu: a vendor's module, beside plinth
check-module). Exit codes: 0 all as expected,
1 a failure (or a known failure that now passes), 2 usage, 77 numpy or the
library missing (CTest's skip code).

Known failures (known_failures.txt beside this script): one per line,
`<graph id> <backend> <what is wrong>`, graph id `regression:<file stem>`
or `seed:<family>:<dtype>:<seed>`. Such a (graph, backend) must fail: when
it passes the run fails too, saying to remove the line — the list is
cleared as fixes land.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import numpy as np
except ImportError:
    print("difftest: numpy is missing (install python3-numpy); skipped")
    sys.exit(77)

import dt_check  # noqa: E402
import dt_gen  # noqa: E402
import dt_shrink  # noqa: E402
from dt_graph import Graph  # noqa: E402
from dt_plinth import Backend, Library  # noqa: E402

ORDERS = [("cpu", ["cpu"]), ("onednn", ["onednn", "cpu"]),
          ("example_acc", ["example_acc", "cpu"]), ("cuda", ["cuda", "cpu"])]


def load_known(path):
    known = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    parts = line.split(None, 2)
                    known[(parts[0], parts[1])] = parts[2] if len(parts) > 2 else ""
    return known


def module_name(path):
    """The name in the identity note of the module file PATH (module.h:
    namesz 7, descsz 72, type "PLN1", owner "Plinth", then the ABI and the
    name), or None."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    at = data.find(struct.pack("<III", 7, 72, 0x504C4E31) + b"Plinth\0\0")
    if at < 0:
        return None
    name = data[at + 20 + 8:at + 20 + 8 + 32]
    return name.split(b"\0", 1)[0].decode()


class Tester:
    def __init__(self, args):
        self.work = tempfile.mkdtemp(prefix="plinth-difftest-")
        self.lib = Library(args.lib)
        self.backends = []
        self.skipped = []
        orders, module_dir = ORDERS, os.path.abspath(args.modules)
        if args.module:
            name = module_name(args.module)
            if name is None:
                raise SystemExit("difftest: %s: no Plinth identity note" % args.module)
            orders = [("cpu", ["cpu"]), (name, [name, "cpu"])]
            mod_dir = os.path.dirname(os.path.abspath(args.module))
            if mod_dir != module_dir:
                module_dir = "%s, %s" % (module_dir, mod_dir)
        for name, order in orders:
            b = Backend(self.lib, name, order, module_dir, self.work, args.threads)
            ok, why = b.available()
            if ok:
                self.backends.append(b)
            else:
                self.skipped.append((name, why))
                b.close()
        self.known = load_known(args.known)
        self.stats = {b.name: {"pass": 0, "idle": 0, "unsupported": 0, "fail": 0,
                               "known": 0, "ran": 0} for b in self.backends}
        self.graphs = 0
        self.ref_errors = 0
        self.verbose = args.verbose
        self.first_refusal = None  # cpu's first "unsupported", for vacuous()

    def close(self):
        for b in self.backends:
            b.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def names(self):
        return [b.name for b in self.backends]

    def generate(self, gid, seed, family, dtype):
        """The graph of SEED, or None (counted as a generator error and
        printed) when the generator fails on it: a bug of the tester."""
        try:
            return dt_gen.generate(seed, family, dtype)
        except Exception as e:
            self.ref_errors += 1
            self.graphs += 1
            print("FAIL %s: generator: %s: %s" % (gid, type(e).__name__, e), flush=True)
            return None

    def run_graph(self, gid, graph, inputs):
        """Checks one graph. Returns the unexpected problems as lines, and
        the failing verdicts."""
        err, verdicts = dt_check.check(graph, inputs, self.backends, self.work)
        self.graphs += 1
        problems = []
        if err:
            self.ref_errors += 1
            problems.append("%s: reference: %s" % (gid, err))
            return problems, []
        failed = []
        for v in verdicts:
            if v.placed.get(v.backend, 0) > 0:
                self.stats[v.backend]["ran"] += 1
            known = (gid, v.backend) in self.known
            if v.status == "fail":
                failed.append(v)
                if known:
                    self.stats[v.backend]["known"] += 1
                    print("%s: %s: known failure (%s): %s" % (gid, v.backend,
                                                               self.known[(gid, v.backend)],
                                                               v.detail))
                    continue
                problems.append("%s: %s: %s" % (gid, v.backend, v.detail))
            elif known:
                problems.append("%s: %s: listed as a known failure (%s) but it is now %s: "
                                "remove the line from known_failures.txt"
                                % (gid, v.backend, self.known[(gid, v.backend)], v.status))
            self.stats[v.backend][v.status] += 1
            if v.backend == "cpu" and v.status == "unsupported" and self.first_refusal is None:
                self.first_refusal = "%s: %s" % (gid, v.detail)
            if self.verbose and v.status in ("unsupported", "idle"):
                print("%s: %s: %s: %s" % (gid, v.backend, v.status, v.detail))
        return problems, failed

    def vacuous(self):
        """A line saying why the run proved nothing, or None: cpu, the
        reference every backend is compared with, ran none of the graphs (a
        soak whose every graph was refused once reported 0 failures: the
        json format module was missing from its module folder)."""
        if self.graphs == 0 or "cpu" not in self.stats or self.stats["cpu"]["ran"] > 0:
            return None
        return "cpu ran none of the %d graphs, so nothing was compared; the first " \
               "refusal: %s" % (self.graphs, self.first_refusal or "none recorded")

    def summary(self, seconds):
        print("difftest: %d graphs in %.1f s (%.1f graphs/s)" % (
            self.graphs, seconds, self.graphs / seconds if seconds > 0 else 0))
        for name, why in self.skipped:
            print("  %-12s not run: %s" % (name, why))
        for name, s in self.stats.items():
            print("  %-12s took nodes of %d graphs: %d passed, %d failed (%d of them known);"
                  " took no node of %d; unsupported %d" % (
                      name, s["ran"], s["pass"], s["fail"] + s["known"], s["known"], s["idle"],
                      s["unsupported"]))
        if self.ref_errors:
            print("  reference errors (generator bugs): %d" % self.ref_errors)


def list_known(t, args, gid, graph, seed, failed):
    """Prints known_failures.txt lines for the failures of one graph: each
    shrunk and matched by signature with a file in regressions/."""
    sigs = saved_signatures(args.out)
    for v in failed:
        small, final, _ = shrink_failure(t, graph, seed, v, 20.0)
        sig = signature(small, final)
        stem = sigs.get(sig)
        tag = t.known.get(("regression:%s" % stem, v.backend)) if stem else None
        what = tag or ("the bug of regression:%s" % stem if stem else "NEW: %s" % sig)
        print("KNOWN %s %s %s" % (gid, v.backend, what), flush=True)


def cmd_ci(t, args):
    a, b = (int(v) for v in args.seeds.split(":"))
    problems = []
    start = time.time()
    for seed in range(a, b):
        gid = "seed:%s:%s:%d" % (args.family, args.dtype, seed)
        made = t.generate(gid, seed, args.family, args.dtype)
        if made is None:
            problems.append("%s: generator failed" % gid)
            continue
        g, inputs = made
        p, failed = t.run_graph(gid, g, inputs)
        problems += p
        for b in t.backends:
            head = g.nodes[0]["name"] if g.nodes else None
            where, reasons = b.nodes.get(head, ("nothing", {}))
            if b.name in (args.strict or []) and where != b.name:
                problems.append("%s: %s: the first node (%s) ran on %s, but --strict %s wants "
                                "it there; reasons: %s" % (gid, b.name, head, where, b.name,
                                                           reasons))
        if args.list_known:
            list_known(t, args, gid, g, seed, failed)
    t.summary(time.time() - start)
    if t.vacuous():
        problems.append(t.vacuous())
    for p in problems:
        print("FAIL " + p)
    listed = [k for k in t.known if k[0].startswith("seed:%s:%s:" % (args.family, args.dtype))
              and a <= int(k[0].rsplit(":", 1)[1]) < b and k[1] not in t.names()]
    for k in listed:
        print("note: known failure %s %s: backend not loaded here" % k)
    return 1 if problems else 0


def signature(graph, verdict):
    """What a shrunk failure looks like, coarsely, to tell a new bug from
    another instance of one already saved: the backend, the ops (products
    as Prod, a binary with a one-element constant as BinC1, with another
    constant as BinC; Gemm's alpha and beta named) with "wrong values", or
    the error's message without names and paths."""
    ops = []
    for n in graph.nodes:
        op = n["op"]
        if op in ("Conv", "ConvTranspose", "MatMul", "Gemm"):
            extra = [a for a in ("alpha", "beta") if a in n["attributes"]]
            op = "Prod" + "".join("[%s]" % a for a in extra)
        elif op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"):
            consts = [i for i in n["inputs"] if graph.is_const(i)]
            if consts:
                op = "BinC1" if graph.tensors[consts[0]]["value"].size == 1 else "BinC"
        ops.append(op)
    if " vs " not in verdict.detail:
        # An error: its message, less names and paths, is the signature.
        return "%s: error: %s" % (verdict.backend,
                                  re.sub(r"'[^']*'|/\S+", "_", verdict.detail)[:100])
    return "%s: %s: wrong values" % (verdict.backend, "-".join(ops))


def saved_signatures(out_dir):
    sigs = {}
    for path in glob.glob(os.path.join(out_dir, "*.note.json")):
        with open(path) as f:
            sig = json.load(f).get("signature")
        if sig:
            sigs[sig] = os.path.basename(path)[:-len(".note.json")]
    return sigs


def save_regression(graph, seed, verdict, family, dtype, out_dir, original_nodes):
    """Writes the shrunk graph and its note; returns (stem, None), or
    (None, the stem of an earlier file) when one with the same signature
    exists."""
    os.makedirs(out_dir, exist_ok=True)
    sig = signature(graph, verdict)
    earlier = saved_signatures(out_dir).get(sig)
    if earlier:
        return None, earlier
    stem = "%s_%s_%s_%d" % (verdict.backend, family, dtype, seed)
    graph.save(os.path.join(out_dir, stem + ".json"))
    note = {"input_seed": seed, "backend": verdict.backend, "family": family, "dtype": dtype,
            "signature": sig, "bug": "", "caught": verdict.detail,
            "nodes": [n["op"] for n in graph.nodes],
            "shrunk_from_nodes": original_nodes}
    with open(os.path.join(out_dir, stem + ".note.json"), "w") as f:
        json.dump(note, f, indent=1)
        f.write("\n")
    return stem, None


def shrink_failure(t, graph, seed, verdict, budget):
    backend = verdict.backend

    def still_fails(cand, inputs):
        err, vs = dt_check.check(cand, inputs, t.backends, t.work,
                                 only=[backend] if backend != "cpu" else [])
        if err:
            return False
        by = {v.backend: v for v in vs}
        if backend != "cpu" and by["cpu"].status not in ("pass", "idle"):
            return False
        return by.get(backend) is not None and by[backend].status == "fail"

    small, tries = dt_shrink.shrink(graph, seed, still_fails, budget)
    _, vs = dt_check.check(small, dt_gen.input_values(small, seed), t.backends, t.work,
                           only=[backend])
    final = [v for v in vs if v.backend == backend][0]
    return small, final, tries


def soak_parent(argv, args):
    """Runs the soak in worker processes, so that a crash (a signal) is
    reported with the graph that caused it and the soak goes on."""
    start = time.time()
    base = args.seed if args.seed is not None else time.time_ns() % (1 << 31)
    print("soak: %g s from seed %d" % (args.seconds, base), flush=True)
    crashes = 0
    rc = 0
    state = tempfile.mktemp(prefix="plinth-difftest-current-")
    k = 0
    while time.time() - start < args.seconds:
        left = args.seconds - (time.time() - start)
        cmd = [sys.executable, os.path.abspath(__file__)] + argv + [
            "soak", str(left), "--dtypes", args.dtypes, "--families", args.families,
            "--seed", str(base + k),
            "--state", state]
        k += 1
        r = subprocess.run(cmd)
        if r.returncode < 0:
            crashes += 1
            gid = open(state).read().strip() if os.path.exists(state) else "?"
            print("CRASH %s: signal %d (seed of the soak worker %d)" % (gid, -r.returncode,
                                                                         base + k - 1),
                  flush=True)
            rc = 1
        elif r.returncode != 0:
            rc = r.returncode
    if os.path.exists(state):
        os.unlink(state)
    print("soak: %.0f s, %d crashes" % (time.time() - start, crashes))
    return rc


def cmd_soak(t, args):
    dtypes = args.dtypes.split(",")
    families = args.families.split(",")
    for f in families:
        if f not in dt_gen.FAMILIES + dt_gen.MORE_FAMILIES:
            print("difftest: unknown family '%s' in --families" % f)
            return 2
    rng = random.Random(args.seed)
    start = time.time()
    found = []
    while time.time() - start < args.seconds:
        seed = rng.randrange(1 << 31)
        family = rng.choice(families)
        dtype = rng.choice(dtypes)
        gid = "seed:%s:%s:%d" % (family, dtype, seed)
        with open(args.state, "w") as f:
            f.write(gid)
        made = t.generate(gid, seed, family, dtype)
        if made is None:
            continue
        g, inputs = made
        problems, failed = t.run_graph(gid, g, inputs)
        for p in problems:
            print("FAIL " + p, flush=True)
        for v in failed:
            if (gid, v.backend) in t.known:
                continue
            small, final, tries = shrink_failure(t, g, seed, v, args.shrink_budget)
            if final.status != "fail":
                print("  shrink of %s on %s lost the failure" % (gid, v.backend))
                continue
            stem, earlier = save_regression(small, seed, final, family, dtype, args.out,
                                            len(g.nodes))
            if earlier:
                print("  shrunk %d -> %d nodes: same signature as %s" % (
                    len(g.nodes), len(small.nodes), earlier), flush=True)
                continue
            print("  shrunk %d -> %d nodes in %d tries: %s/%s.json: %s" % (
                len(g.nodes), len(small.nodes), tries, args.out, stem, final.detail),
                flush=True)
            found.append(stem)
    t.summary(time.time() - start)
    print("soak: %d failures saved%s" % (len(found), ": " + ", ".join(found) if found else ""))
    if t.vacuous():
        print("FAIL " + t.vacuous())
    return 1 if found or t.ref_errors or t.vacuous() else 0


def cmd_regress(t, args):
    graph = Graph.load(args.file)
    note_path = args.file[:-len(".json")] + ".note.json"
    with open(note_path) as f:
        note = json.load(f)
    gid = "regression:%s" % os.path.basename(args.file)[:-len(".json")]
    inputs = dt_gen.input_values(graph, note["input_seed"])
    print("%s: caught %s: %s" % (gid, note["backend"], note["caught"]))
    start = time.time()
    problems, _ = t.run_graph(gid, graph, inputs)
    t.summary(time.time() - start)
    if t.vacuous():
        problems.append(t.vacuous())
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


def cmd_one(t, args):
    g, inputs = dt_gen.generate(args.seed, args.family, args.dtype)
    for n in g.nodes:
        print("  %s %s %s -> %s %s" % (n["name"], n["op"], n["inputs"], n["outputs"],
                                       n["attributes"]))
    print("  outputs %s" % g.outputs)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        g.save(os.path.join(args.keep, "model.json"))
    gid = "seed:%s:%s:%d" % (args.family, args.dtype, args.seed)
    problems, failed = t.run_graph(gid, g, inputs)
    for p in problems:
        print("FAIL " + p)
    if args.shrink:
        for v in failed:
            small, final, tries = shrink_failure(t, g, args.seed, v, args.shrink_budget)
            stem, earlier = save_regression(small, args.seed, final, args.family, args.dtype,
                                            args.out, len(g.nodes))
            print("shrunk to %d nodes (%d tries): %s: %s" % (len(small.nodes), tries,
                                                              stem or "same as " + earlier,
                                                              final.detail))
    t.summary(1)
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--modules", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--module", help="test this module file (and cpu) only")
    ap.add_argument("--known", default=os.path.join(HERE, "known_failures.txt"))
    ap.add_argument("--out", default=os.path.join(HERE, "regressions"))
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="also print every unsupported graph and idle backend")
    ap.add_argument("--shrink-budget", type=float, default=60.0)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ci")
    p.add_argument("--family", required=True,
                   choices=dt_gen.FAMILIES + dt_gen.MORE_FAMILIES + ("any",))
    p.add_argument("--seeds", required=True)
    p.add_argument("--dtype", default="f32")
    p.add_argument("--list-known", action="store_true",
                   help="shrink each failure and print its known_failures.txt line")
    p.add_argument("--strict", action="append", metavar="BACKEND",
                   help="a graph fails when BACKEND (if loaded) did not run its first "
                        "node: for families whose head it must take (rnn: onednn)")
    p = sub.add_parser("soak")
    p.add_argument("seconds", type=float)
    p.add_argument("--dtypes", default="f32")
    p.add_argument("--families", default=",".join(dt_gen.FAMILIES + dt_gen.MORE_FAMILIES),
                   help="comma-separated families to draw from (default: all, rnn included)")
    p.add_argument("--seed", type=int)
    p.add_argument("--state", help="(worker) the file naming the graph being run")
    p = sub.add_parser("regress")
    p.add_argument("file")
    p = sub.add_parser("one")
    p.add_argument("seed", type=int)
    p.add_argument("--family", default="any")
    p.add_argument("--dtype", default="f32")
    p.add_argument("--keep")
    p.add_argument("--shrink", action="store_true")
    argv = sys.argv[1:]
    if "--soak" in argv:  # `--soak SECONDS [soak options]` spells `soak SECONDS ...`
        k = argv.index("--soak")
        argv = argv[:k] + ["soak"] + argv[k + 1:]
    args = ap.parse_args(argv)
    if not os.path.exists(args.lib):
        print("difftest: %s not found; skipped" % args.lib)
        return 77
    np.seterr(all="ignore")
    if args.cmd == "soak" and args.state is None:
        return soak_parent(argv[:argv.index("soak")], args)
    t = Tester(args)
    try:
        return {"ci": cmd_ci, "soak": cmd_soak, "regress": cmd_regress,
                "one": cmd_one}[args.cmd](t, args)
    finally:
        t.close()


if __name__ == "__main__":
    sys.exit(main())
