"""dt_check: one graph through the numpy reference and every backend, and
the verdicts: cpu against numpy, every other backend against cpu.

A verdict per backend is one of
  pass         outputs match (and the backend took at least one node)
  idle         outputs match but the backend took no node: not a pass
  unsupported  the graph could not be run for lack of an op or dtype (a
               node nobody takes, a dtype the opset or cpu refuses)
  fail         wrong values, wrong shape, NaN where a number is due, or an
               error in loading, placing or running that is not a refusal
"""
import os

import numpy as np

import dt_ref
from dt_graph import FLOAT_DTYPES, from_storage, storage
from dt_plinth import PL_CODE_UNSUPPORTED, PlinthError

# (rtol, atol relative to the output's largest magnitude) per dtype.
TOLERANCE = {"f32": (1e-4, 3e-5), "f64": (1e-9, 1e-11), "f16": (1e-2, 4e-3),
             "bf16": (5e-2, 2e-2)}


def compare(expected, got, dtype):
    """None when GOT matches EXPECTED (float64/int64 arrays), else a line
    naming the first bad element, the expected and the got value."""
    if tuple(expected.shape) != tuple(got.shape):
        return "shape %s, expected %s" % (list(got.shape), list(expected.shape))
    if expected.size == 0:
        return None
    if dtype not in FLOAT_DTYPES:
        bad = expected != got
        tol = None
    else:
        rtol, atol = TOLERANCE[dtype]
        fin = np.isfinite(expected)
        scale = max(1.0, float(np.max(np.abs(expected[fin]))) if fin.any() else 1.0)
        tol = atol * scale + rtol * np.abs(np.where(fin, expected, 0))
        with np.errstate(invalid="ignore"):
            diff = np.abs(got - expected)
            bad = ~(diff <= tol)
        same_special = (np.isnan(expected) & np.isnan(got)) | (
            np.isinf(expected) & (got == expected))
        bad &= ~same_special
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    n = int(bad.sum())
    with np.errstate(invalid="ignore"):
        err = np.where(bad, np.abs(got - expected), 0)
    worst = tuple(int(i) for i in np.unravel_index(np.nanargmax(err) if np.isfinite(err).any()
                                                   else 0, err.shape))
    return ("%d of %d elements differ; at %s expected %.9g got %.9g; worst at %s expected "
            "%.9g got %.9g%s" % (n, expected.size, list(idx), expected[idx], got[idx],
                                 list(worst), expected[worst], got[worst],
                                 "" if tol is None else " (tolerance %.3g)" % tol[worst]))


class Verdict:
    def __init__(self, backend, status, detail="", placed=None, outputs=None):
        self.backend = backend
        self.status = status
        self.detail = detail
        self.placed = placed or {}
        self.outputs = outputs

    def __repr__(self):
        return "%s: %s %s" % (self.backend, self.status, self.detail)


def _refusal(err, dtype):
    """True when ERR means 'cannot run this', not 'ran it wrong'."""
    if err.code == PL_CODE_UNSUPPORTED:
        return True
    if dtype != "f32" and err.stage in ("load", "session"):
        return True
    return False


def run_backend(backend, json_path, inputs, dtype):
    feed = [(n, storage(v, dtype), dtype) for n, v in inputs]
    try:
        outs, placed = backend.run(json_path, feed)
    except PlinthError as e:
        status = "unsupported" if _refusal(e, dtype) else "fail"
        return Verdict(backend.name, status, str(e).replace("\n", " "), e.placed)
    return Verdict(backend.name, "pass", "", placed,
                   {k: from_storage(a, dt) for k, (a, dt) in outs.items()})


def _judge(v, expected, dtype, against, module):
    """Sets V's status from its outputs against EXPECTED."""
    if v.status != "pass":
        return
    for name, exp in expected.items():
        got = v.outputs.get(name)
        if got is None:
            v.status, v.detail = "fail", "output %s missing" % name
            return
        why = compare(exp, got, dtype)
        if why:
            v.status, v.detail = "fail", "output %s vs %s: %s" % (name, against, why)
            return
    if v.placed.get(module, 0) == 0:
        v.status = "idle"
        v.detail = "took no node (placement %s)" % v.placed


def check(graph, inputs, backends, work_dir, only=None):
    """Runs GRAPH with INPUTS ({name: values}). Returns (ref_error or None,
    [Verdict]): cpu against numpy first, then each backend of BACKENDS (the
    cpu one first) against cpu. ONLY: names of the backends to run
    (cpu always runs)."""
    dtype = graph.tensors[graph.inputs[0]]["dtype"] if graph.inputs else "f32"
    try:
        with np.errstate(all="ignore"):
            env = dt_ref.evaluate(graph, inputs)
        expected = {o: env[o] for o in graph.outputs}
    except Exception as e:  # the reference refusing a graph is a generator bug
        return "%s: %s" % (type(e).__name__, e), []
    path = os.path.join(work_dir, "model.json")
    graph.save(path)
    feed = [(n, inputs[n]) for n in graph.inputs]
    verdicts = []
    cpu = None
    for b in backends:
        if only is not None and b.name != "cpu" and b.name not in only:
            continue
        v = run_backend(b, path, feed, dtype)
        if b.name == "cpu":
            _judge(v, expected, dtype, "numpy", "cpu")
            cpu = v
        elif cpu is not None and cpu.status in ("pass", "idle"):
            _judge(v, cpu.outputs, dtype, "cpu", b.name)
        else:
            _judge(v, expected, dtype, "numpy", b.name)
        verdicts.append(v)
    return None, verdicts
