"""dt_shrink: reduces a failing graph to a small one that still fails the
same way (same backend, same status), greedily: keep one output, cut the
graph after an earlier node, bypass nodes, drop optional inputs and
attributes, shrink input dims, and simplify constants, for as long as
something is accepted and the budget lasts.

shrink(graph, seed, still_fails, budget_s) -> graph. STILL_FAILS(graph,
inputs) says whether a candidate still fails; candidates the reference
cannot evaluate are never offered.
"""
import time

import numpy as np

import dt_ref
from dt_gen import input_values
from dt_graph import FLOAT_DTYPES, to_dtype

# Attributes a node cannot lose without becoming another op or invalid.
_REQUIRED = {"kernel_shape"}


def _valid(g, seed):
    try:
        with np.errstate(all="ignore"):
            env = dt_ref.evaluate(g, input_values(g, seed))
        return env
    except Exception:
        return None


class _Shrinker:
    def __init__(self, graph, seed, still_fails, budget_s):
        self.g = graph
        self.seed = seed
        self.still_fails = still_fails
        self.deadline = time.time() + budget_s
        self.tries = 0

    def out_of_time(self):
        return time.time() > self.deadline

    def attempt(self, cand):
        """Adopts CAND when it is valid and still fails."""
        if self.out_of_time():
            return False
        cand.prune()
        if not cand.outputs or not cand.nodes:
            return False
        if _valid(cand, self.seed) is None:
            return False
        self.tries += 1
        if self.still_fails(cand, input_values(cand, self.seed)):
            self.g = cand
            return True
        return False

    # ---- the passes ------------------------------------------------------

    def one_output(self):
        if len(self.g.outputs) < 2:
            return False
        for o in self.g.outputs:
            c = self.g.copy()
            c.outputs = [o]
            if self.attempt(c):
                return True
        return False

    def cut(self):
        """Makes an earlier node's output the graph's only output."""
        outs = set(self.g.outputs)
        for n in self.g.nodes:
            for o in n["outputs"]:
                if o in outs or not o:
                    continue
                c = self.g.copy()
                c.outputs = [o]
                if self.attempt(c):
                    return True
        return False

    def cut_front(self):
        """Makes a node's input tensor a graph input (drops what made it)."""
        env = _valid(self.g, self.seed)
        if env is None:
            return False
        dtype = self.g.tensors[self.g.inputs[0]]["dtype"] if self.g.inputs else "f32"
        made = {o for n in self.g.nodes for o in n["outputs"]}
        for n in self.g.nodes:
            for i in n["inputs"]:
                if i not in made or i in self.g.outputs:
                    continue
                c = self.g.copy()
                c.nodes = [m for m in c.nodes if i not in m["outputs"]]
                c.inputs.append(i)
                c.tensors[i] = {"dtype": dtype, "shape": list(np.shape(env[i]))}
                if self.attempt(c):
                    return True
        return False

    def bypass(self):
        """Replaces a node's output by one of its inputs of the same shape."""
        env = _valid(self.g, self.seed)
        if env is None:
            return False
        for k in range(len(self.g.nodes) - 1, -1, -1):
            n = self.g.nodes[k]
            if len(n["outputs"]) != 1:
                continue
            out = n["outputs"][0]
            for i in n["inputs"]:
                if not i or self.g.is_const(i) or np.shape(env[i]) != np.shape(env[out]):
                    continue
                c = self.g.copy()
                del c.nodes[k]
                for m in c.nodes:
                    m["inputs"] = [i if x == out else x for x in m["inputs"]]
                c.outputs = [i if x == out else x for x in c.outputs]
                c.outputs = list(dict.fromkeys(c.outputs))
                if i in c.inputs and i in c.outputs:
                    continue
                if self.attempt(c):
                    return True
        return False

    def drop_optional(self):
        for k, n in enumerate(self.g.nodes):
            if n["op"] not in ("Conv", "Gemm", "Clip", "LayerNormalization"):
                continue
            first = 2 if n["op"] != "Clip" else 1
            for j in range(len(n["inputs"]) - 1, first - 1, -1):
                if not n["inputs"][j]:
                    continue
                c = self.g.copy()
                ins = c.nodes[k]["inputs"]
                ins[j] = ""
                while ins and ins[-1] == "":
                    ins.pop()
                if self.attempt(c):
                    return True
        return False

    def drop_attributes(self):
        for k, n in enumerate(self.g.nodes):
            for a in list(n["attributes"]):
                if a in _REQUIRED:
                    continue
                c = self.g.copy()
                del c.nodes[k]["attributes"][a]
                if self.attempt(c):
                    return True
        return False

    def shrink_dims(self):
        for name in list(self.g.inputs):
            shape = self.g.tensors[name]["shape"]
            for axis, d in enumerate(shape):
                for new in sorted({1, d // 2, d - 1}):
                    if new < 1 or new >= d:
                        continue
                    for follow in (False, True):
                        c = self.g.copy()
                        c.tensors[name] = dict(c.tensors[name])
                        c.tensors[name]["shape"] = shape[:axis] + [new] + shape[axis + 1:]
                        if follow:
                            _follow_consts(c, len(shape) - axis, d, new)
                        if self.attempt(c):
                            return True
        return False

    def simplify_consts(self):
        for name, t in list(self.g.tensors.items()):
            if "value" not in t or t["dtype"] not in FLOAT_DTYPES:
                continue
            v = t["value"]
            cands = []
            if v.size > 1:
                cands.append(np.full(v.shape, float(np.round(np.mean(v), 1)) or 0.5))
            rounded = np.round(v, 1)
            if not np.array_equal(rounded, v):
                cands.append(rounded)
            if v.size >= 1 and not np.all(v == 1.0):
                cands.append(np.ones(v.shape))
            for values in cands:
                if np.array_equal(to_dtype(values, t["dtype"]), v):
                    continue
                c = self.g.copy()
                c.tensors[name] = dict(t, value=to_dtype(values, t["dtype"]))
                if self.attempt(c):
                    return True
        return False

    def run(self):
        passes = [self.one_output, self.cut, self.cut_front, self.bypass, self.drop_optional,
                  self.drop_attributes, self.shrink_dims, self.simplify_consts]
        progress = True
        while progress and not self.out_of_time():
            progress = False
            for p in passes:
                while not self.out_of_time() and p():
                    progress = True
        return self.g


def _follow_consts(g, from_end, old, new):
    """Slices every float constant whose dim FROM_END places from the end
    is OLD down to NEW (keeps a per-channel or general-broadcast constant
    in step with a shrunk input dim)."""
    for name, t in g.tensors.items():
        if "value" not in t or t["dtype"] not in FLOAT_DTYPES:
            continue
        v = t["value"]
        if v.ndim >= from_end and v.shape[v.ndim - from_end] == old:
            sl = [slice(None)] * v.ndim
            sl[v.ndim - from_end] = slice(0, new)
            g.tensors[name] = dict(t, value=v[tuple(sl)], shape=list(v[tuple(sl)].shape))


def shrink(graph, seed, still_fails, budget_s=60.0):
    s = _Shrinker(graph.copy(), seed, still_fails, budget_s)
    return s.run(), s.tries
