#!/usr/bin/env python3
"""bench/cost_check.py — checks `choose = cost`'s estimates against measured time, one
subgraph at a time, on whole models: for each model of a zoo it places the graph with
`choose = first` (every subgraph onednn can take, each carrying the estimate `choose = cost`
would weigh: onednn's and the nodes' on cpu), times every step of a run of that placement
and of `order = cpu`, and sums the cpu steps of each subgraph's nodes. A row is flagged when
the estimates pick the slower backend for a subgraph by more than 10%, and the summary gives
how far each backend's estimates are from what was measured (geometric mean and spread of
measured/estimated) and the time the wrong picks cost. Timing only: nothing here asserts a
speed. Step times come from `plinth run --warmup`, so each is the step alone: a subgraph's
thread handoff shows in the steps around it, not in its own.

    python3 bench/cost_check.py [--zoo DIR ...] [--runs N] [--threads N] [--only SUBSTRING]
                                [--rows all|flagged]

A zoo folder holds MODEL.onnx with MODEL.in.NAME.npy inputs (bench/zoo/make_zoo.py's layout);
without --zoo it reads build/tests/zoo/zoo, tests/zoo/tf and tests/zoo/quant.
"""
import argparse, glob, json, math, os, re, subprocess, sys, tempfile

try:
    import numpy as np
except ImportError:  # then models with symbolic dims are skipped
    np = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo import config  # noqa: E402  (the zoo's configurations)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLINTH = os.path.join(ROOT, "build/bin/plinth")


def inputs_of(model):
    """--input NAME=FILE and --shape NAME=DIMS for each input file (a model with symbolic
    dims is placed at the shapes it runs with)."""
    base = model[:-len(".onnx")]
    args = []
    for f in sorted(glob.glob(base + ".in.*.npy")):
        name = f[len(base) + 4:-4]
        args += ["--input", name + "=" + f]
        if np is not None:
            shape = np.load(f, mmap_mode="r").shape
            args += ["--shape", name + "=" + ",".join(map(str, shape))]
    return args


def explain(model, ini, inputs):
    shapes = [a for k, a in enumerate(inputs) if k > 0 and inputs[k - 1] == "--shape"]
    r = subprocess.run([PLINTH, "explain", model, "--config", ini, "--json"] +
                       [x for a in shapes for x in ("--shape", a)], capture_output=True,
                       text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def step_times(model, ini, inputs, args):
    """Mean ms of each step of a run, in the session's step order."""
    r = subprocess.run([PLINTH, "run", model, "--config", ini, "--threads", str(args.threads),
                        "--runs", str(args.runs), "--warmup", "10"] + inputs,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    out = r.stdout.split("\nsteps (", 1)[-1].splitlines()[1:]
    return [float(m.group(1)) for m in (re.match(r"\s+([0-9.]+) ms ", ln) for ln in out) if m]


def node_of_step(step):
    """The node a cpu step runs: its name before ' (Op, backend)'."""
    return step["name"].rsplit(" (", 1)[0]


def check_model(model, ini_first, ini_cpu, args):
    inputs = inputs_of(model)
    first, cpu = explain(model, ini_first, inputs), explain(model, ini_cpu, inputs)
    if first is None or cpu is None:
        return [], "explain failed"
    t_first = step_times(model, ini_first, inputs, args)
    t_cpu = step_times(model, ini_cpu, inputs, args)
    if t_first is None or t_cpu is None or len(t_first) != len(first["steps"]) or \
            len(t_cpu) != len(cpu["steps"]):
        return [], "run failed"
    on_cpu = {}
    for st, t in zip(cpu["steps"], t_cpu):
        on_cpu[node_of_step(st)] = t * 1e3
        for f in st.get("fused") or []:
            on_cpu.setdefault(f, 0.0)
    rows = []
    for st, t in zip(first["steps"], t_first):
        m = re.match(r"subgraph (\d+) \((\w+),", st["name"])
        if not m:
            continue
        sg = next(s for s in first["subgraphs"] if s["id"] == int(m.group(1)))
        est = sg.get("estimate")
        if not est or est.get("alternative") != "cpu":
            continue
        known = [n for n in sg["nodes"] if n in on_cpu]
        if len(known) < 0.9 * len(sg["nodes"]):
            continue  # the cpu placement's graph is not this one's
        meas_c = sum(on_cpu[n] for n in known)
        # the handoff is in the steps around the subgraph, not in its time
        est_o = est["total_us"] - est.get("handoff_us", 0)
        rows.append(dict(model=os.path.basename(model)[:-5], sg=sg["id"], nodes=len(sg["nodes"]),
                         est_o=est_o, meas_o=t * 1e3, est_c=est["alternative_us"], meas_c=meas_c,
                         handoff=est.get("handoff_us", 0), compute=est["compute_us"],
                         launch=est["launch_us"], boundary=est["boundary_us"]))
    return rows, None


def conv_kinds(model):
    """Node name -> the kind of convolution (dw, 1x1, stem, kxk) for the Conv-like nodes of
    MODEL whose weights are initializers (needs the onnx package; {} without)."""
    try:
        import onnx
    except ImportError:
        return {}
    m = onnx.load(model, load_external_data=False)
    dims = {i.name: list(i.dims) for i in m.graph.initializer}
    out = {}
    for n in m.graph.node:
        wi = {"Conv": 1, "ConvTranspose": 1, "QLinearConv": 3, "ConvInteger": 1}.get(n.op_type)
        if wi is None or len(n.input) <= wi or n.input[wi] not in dims:
            continue
        w = dims[n.input[wi]]
        group = next((a.i for a in n.attribute if a.name == "group"), 1)
        taps = math.prod(w[2:]) if len(w) > 2 else 1
        cin = w[1] * group if len(w) > 1 else 0
        out[n.name] = ("1d" if len(w) == 3 else
                       "dw" if group > 1 and w[1] == 1 else "grouped" if group > 1
                       else "stem" if cin <= 4 else "1x1" if taps == 1 else "kxk")
    return out


def check_nodes(model, ini_cpu, args, by_op):
    """Each cpu step of MODEL against its node's estimate (explain's estimate_us), summed
    into BY_OP[op] = [log ratios, measured us]."""
    inputs = inputs_of(model)
    cpu = explain(model, ini_cpu, inputs)
    t_cpu = step_times(model, ini_cpu, inputs, args) if cpu else None
    if cpu is None or t_cpu is None or len(t_cpu) != len(cpu["steps"]):
        return "explain or run failed"
    est = {p["node"]: (p["op"], p.get("estimate_us")) for p in cpu["placement"]}
    maps = {}  # a convolution's output map: its elements per channel, bucketed
    for p in cpu["placement"]:
        shape = (p.get("outputs") or [{}])[0].get("shape") or []
        if "Conv" in p["op"] and len(shape) >= 3 and all(isinstance(d, int) for d in shape):
            m = math.prod(shape[2:])
            maps[p["node"]] = "<=64" if m <= 64 else "<=512" if m <= 512 else ">512"
    kinds = conv_kinds(model)
    for st, t in zip(cpu["steps"], t_cpu):
        name = node_of_step(st)
        op, e = est.get(name, (None, None))
        if op is not None and name in kinds:
            op += ":" + kinds[name]
            if args.maps and name in maps:
                op += ":" + maps[name]
        if op is None or not e or t <= 0:
            continue
        acc = by_op.setdefault(op, [[], 0.0])
        acc[0].append(math.log(t * 1e3 / e))
        acc[1] += t * 1e3
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zoo", action="append")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    ap.add_argument("--rows", choices=["all", "flagged"], default="all")
    ap.add_argument("--nodes", action="store_true",
                    help="instead: each cpu node's estimate against its step, by op")
    ap.add_argument("--maps", action="store_true",
                    help="with --nodes: convolutions also by the size of their output map")
    args = ap.parse_args()
    if not os.access(PLINTH, os.X_OK):
        sys.exit("cost_check.py: build/bin/plinth is not built (bash tools/dev.sh demo)")
    zoos = args.zoo or [os.path.join(ROOT, d) for d in ("build/tests/zoo/zoo", "tests/zoo/tf",
                                                          "tests/zoo/quant")]
    rows = []
    if args.nodes:
        by_op = {}
        with tempfile.TemporaryDirectory() as tmp:
            ini_cpu = config(tmp, "cpu.ini", "cpu", choose="first")
            for zoo in zoos:
                for model in sorted(glob.glob(os.path.join(zoo, "*.onnx"))):
                    if args.only in os.path.basename(model):
                        err = check_nodes(model, ini_cpu, args, by_op)
                        if err:
                            print(f"{os.path.basename(model)[:-5]}: {err}", flush=True)
        print(f"{'op':<24}{'nodes':>6}{'measured us':>12}{'meas/est':>9}{'10th-90th':>12}")
        for op, (xs, total) in sorted(by_op.items(), key=lambda kv: -kv[1][1]):
            xs.sort()
            q = lambda f: math.exp(xs[min(len(xs) - 1, int(f * len(xs)))])
            print(f"{op:<24}{len(xs):>6}{total:>12.0f}{math.exp(sum(xs) / len(xs)):>9.2f}"
                  f"{q(0.1):>6.2f}-{q(0.9):.2f}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ini_first = config(tmp, "first.ini", "onednn, cpu", choose="first")
        ini_cpu = config(tmp, "cpu.ini", "cpu", choose="first")
        print(f"{'model':<28}{'sg':>3}{'nodes':>6}{'onednn est':>11}{'meas':>8}"
              f"{'cpu est':>9}{'meas':>8}  picks (est / measured)", flush=True)
        for zoo in zoos:
            for model in sorted(glob.glob(os.path.join(zoo, "*.onnx"))):
                if args.only not in os.path.basename(model):
                    continue
                got, err = check_model(model, ini_first, ini_cpu, args)
                if err:
                    print(f"{os.path.basename(model)[:-5]:<28}  ({err})", flush=True)
                for r in got:
                    pick_e = "onednn" if r["est_o"] + r["handoff"] <= r["est_c"] else "cpu"
                    pick_m = "onednn" if r["meas_o"] + r["handoff"] <= r["meas_c"] else "cpu"
                    slow = r["meas_o"] + r["handoff"] if pick_e == "onednn" else r["meas_c"]
                    best = min(r["meas_o"] + r["handoff"], r["meas_c"])
                    r["lost"] = slow - best
                    r["wrong"] = slow > 1.1 * best
                    rows.append(r)
                    if args.rows == "all" or r["wrong"]:
                        print(f"{r['model']:<28}{r['sg']:>3}{r['nodes']:>6}{r['est_o']:>11.1f}"
                              f"{r['meas_o']:>8.1f}{r['est_c']:>9.1f}{r['meas_c']:>8.1f}  "
                              f"{pick_e} / {pick_m}"
                              f"{'  <- ' + format(r['lost'], '.0f') + ' us lost' if r['wrong'] else ''}",
                              flush=True)
    print()

    def spread(key_m, key_e, name):
        xs = [math.log(r[key_m] / r[key_e]) for r in rows if r[key_m] > 0 and r[key_e] > 0]
        if not xs:
            return
        xs.sort()
        q = lambda f: math.exp(xs[min(len(xs) - 1, int(f * len(xs)))])
        print(f"{name}: measured/estimated geometric mean {math.exp(sum(xs) / len(xs)):.2f}, "
              f"10th-90th percentile {q(0.1):.2f}-{q(0.9):.2f} over {len(xs)} subgraphs")
    spread("meas_o", "est_o", "onednn")
    spread("meas_c", "est_c", "cpu   ")
    if np is not None and len(rows) >= 4:
        # measured onednn time against the estimate's parts, each row weighted by
        # 1/measured (relative error): how much each part is under- or overstated
        a = np.array([[r["compute"], r["launch"], r["boundary"]] for r in rows])
        y = np.array([r["meas_o"] for r in rows])
        w = 1.0 / np.maximum(y, 1.0)
        coef = np.linalg.lstsq(a * w[:, None], y * w, rcond=None)[0]
        print(f"onednn: measured ~ {coef[0]:.2f} x compute + {coef[1]:.2f} x launch + "
              f"{coef[2]:.2f} x boundary (least squares, relative)")
    wrong = [r for r in rows if r["wrong"]]
    print(f"slower picks: {len(wrong)} of {len(rows)} subgraphs, "
          f"{sum(r['lost'] for r in wrong):.0f} us a run lost "
          f"({', '.join(sorted(set(r['model'] for r in wrong)))})")


if __name__ == "__main__":
    main()
