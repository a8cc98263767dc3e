#!/usr/bin/env python3
"""bench/node_profile.py — where a model's time goes, node by node, in Plinth and in ONNX
Runtime, side by side: the tool to find the operator that makes a model slower than its peer.

    python3 bench/node_profile.py MODEL.onnx [--config backend.ini] [--runs N] [--threads N]
                                  [--input NAME=FILE.npy ...] [--top K]

Plinth runs the model through its Python binding on the given backend.ini (default: the
repository's, module folder absolute, cache off) after a warm-up: kernel steps are timed by the
engine, and compiled subgraphs whose module can say (ABI 1.17's compiled_times: onednn) are
timed node by node (Session.profile_nodes). ONNX Runtime runs the same inputs with its profiler
(intra-op threads as given, sequential execution) and its per-node kernel times are read from
the profile. Inputs come from --input, else MODEL's zoo files (<model>.in.<input>.npy beside it),
else random values of the declared shapes (open dims 1).

Prints the mean time a run per operator type on both sides and their ratio, slowest types
first, and the K nodes that lose the most time to ONNX Runtime. Both fuse: Plinth gives a fused
chain's work to its first node (the others count 0), ONNX Runtime names it after the output of
its last (its NCHWc layout pass: `<output>_nchwc`); ORT's time of a node Plinth counts 0 goes
back along first inputs to the node Plinth gave the work to. Fusions that differ (ORT's
FusedMatMul folds a scale Plinth runs apart) still show as two rows. Timing only: nothing here
asserts anything.
"""
import argparse, collections, glob, json, os, re, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def default_ini(tmp):
    text = open(os.path.join(ROOT, "backend.ini")).read()
    text = re.sub(r"(?m)^modules = .*$", "modules = " + os.path.join(ROOT, "modules.d"), text)
    text = re.sub(r"(?m)^cache_dir = .*$", "cache_dir =", text)
    path = os.path.join(tmp, "backend.ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def feeds_for(model, given, np):
    import onnx
    feeds = {}
    for g in given:
        name, path = g.split("=", 1)
        feeds[name] = np.load(path)
    base = model[:-5] if model.endswith(".onnx") else model
    for path in glob.glob(base + ".in.*.npy"):
        name = path[len(base) + 4:-4]
        feeds.setdefault(name, np.load(path))
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.default_rng(0)
    types = {1: np.float32, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64}
    for vi in m.graph.input:
        if vi.name in inits or vi.name in feeds:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dt = types.get(t.elem_type, np.float32)
        feeds[vi.name] = (rng.standard_normal(shape).astype(dt) if dt in (np.float32, np.float16,
                                                                          np.float64)
                          else np.zeros(shape, dt))
    output_of = {o: n.name for n in m.graph.node for o in n.output}
    inputs_of = {n.name: list(n.input) for n in m.graph.node}
    return feeds, {n.name: n.op_type for n in m.graph.node}, output_of, inputs_of


def plinth_nodes(model, ini, feeds, runs, warmup):
    import plinth
    rt = plinth.Runtime(config=ini)
    try:
        m = rt.load_model(model)
        s = m.session()
        for _ in range(warmup):
            s.run(feeds)
        before = {i: (st["total_ns"], st["runs"]) for i, st in enumerate(s.steps())}
        s.profile_nodes(True)
        for _ in range(runs):
            s.run(feeds)
        desc = s.describe()
        out = collections.defaultdict(float)
        for i, st in enumerate(s.steps()):
            ns, n = st["total_ns"] - before.get(i, (0, 0))[0], st["runs"] - before.get(i, (0, 0))[1]
            step_ms = ns / 1e6 / n if n else 0.0
            if "nodes" in st:
                inside = 0.0
                for t in st["nodes"]:
                    ms = t["total_ns"] / 1e6 / t["runs"] if t["runs"] else 0.0
                    out[t["node"]] += ms
                    inside += ms
                out["(" + st["backend"] + " beyond its nodes)"] += max(0.0, step_ms - inside)
                continue
            fused = desc["steps"][i].get("fused", []) if i < len(desc["steps"]) else []
            head = st["name"].rsplit(" (", 1)[0]
            if fused and head.endswith("+" + "+".join(fused)):
                head = head[:-len("+" + "+".join(fused))]
            out[head if not st["name"].startswith("copy") else "(copies)"] += step_ms
        s.close()
        m.close()
        return out
    finally:
        rt.close()


def ort_nodes(model, feeds, runs, warmup, threads, tmp, output_of):
    """ONNX Runtime's kernel time a run per node, over RUNS runs after WARMUP (the profile's
    node events after the end of the WARMUP-th run), and each node's op. A node of ORT's own
    layout pass (NCHWc) is named after the output it writes (`<output>_nchwc`): it is counted
    for the model's node that writes that output."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tmp, "ort")
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(warmup + runs):
        sess.run(None, feeds)
    events = json.load(open(sess.end_profiling()))
    ends = sorted(e["ts"] + e["dur"] for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")
    after = ends[warmup - 1] if 0 < warmup <= len(ends) else 0
    out, ops = collections.defaultdict(float), {}
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time") or \
                e["ts"] <= after:
            continue
        node = e["name"][:-len("_kernel_time")]
        if node.endswith("_nchwc") and node[:-len("_nchwc")] in output_of:
            node = output_of[node[:-len("_nchwc")]]
        out[node] += e["dur"] / 1e3
        ops.setdefault(node, e.get("args", {}).get("op_name", "?"))
    return {k: v / runs for k, v in out.items()}, ops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--config")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    import numpy as np
    tmp = tempfile.mkdtemp(prefix="node_profile-")
    ini = args.config or default_ini(tmp)
    feeds, op_of, output_of, inputs_of = feeds_for(args.model, args.input, np)
    pl = plinth_nodes(args.model, ini, feeds, args.runs, args.warmup)
    ort_raw, ort_op = ort_nodes(args.model, feeds, args.runs, args.warmup, args.threads, tmp,
                                output_of)
    # ONNX Runtime names a fused node after its last node (Conv + Relu as the Relu's output);
    # Plinth gives the work to the first. A node Plinth folded into another's work (0, or not
    # listed) hands ORT's time back to the producer of its first input, as far as it goes.
    first_in = {n: ins[0] for n, ins in inputs_of.items() if ins}
    ort_t = collections.defaultdict(float)
    for node, ms in ort_raw.items():
        seen = set()
        while pl.get(node, 0.0) == 0.0 and first_in.get(node) in output_of and node not in seen:
            seen.add(node)
            node = output_of[first_in[node]]
        ort_t[node] += ms
    by_type = collections.defaultdict(lambda: [0.0, 0.0])
    for node, ms in pl.items():
        by_type[op_of.get(node, node if node.startswith("(") else "?")][0] += ms
    for node, ms in ort_t.items():
        by_type[op_of.get(node, ort_op.get(node, "?")) if ort_op.get(node) != "ReorderInput" and
                ort_op.get(node) != "ReorderOutput" else "(layout reorders)"][1] += ms
    print(f"{'operator':<34} {'plinth_ms':>10} {'ort_ms':>10} {'ratio':>7}")
    for op, (a, b) in sorted(by_type.items(), key=lambda kv: -max(kv[1])):
        if max(a, b) < 0.005:
            continue
        print(f"{op:<34} {a:10.3f} {b:10.3f} {a / b if b > 0 else float('inf'):7.2f}")
    print(f"{'total':<34} {sum(pl.values()):10.3f} {sum(ort_t.values()):10.3f}")
    lost = sorted(((pl.get(n, 0.0) - ort_t.get(n, 0.0), n) for n in set(pl) | set(ort_t)
                   if not n.startswith("(")), reverse=True)
    print(f"\nnodes losing the most to ONNX Runtime (ms a run: plinth, ort):")
    for d, n in lost[:args.top]:
        if d <= 0:
            break
        print(f"  {d:8.3f}  {n} ({op_of.get(n, ort_op.get(n, '?'))}): "
              f"{pl.get(n, 0.0):.3f}, {ort_t.get(n, 0.0):.3f}")


if __name__ == "__main__":
    main()
