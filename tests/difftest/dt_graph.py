"""dt_graph: the differential tester's graph, as Plinth's JSON graph format
(docs/graph-format.md) holds it: inputs with dtypes and shapes, constants
(weights, written to a sidecar), nodes with typed attributes, outputs.

Values live here as float64 (or int64) numpy arrays; a tensor's dtype says
how they are stored in the file and fed to Plinth: they are rounded to that
dtype when made (to_dtype), so the reference computes from exactly the
bytes Plinth reads.
"""
import json
import os

import numpy as np

FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
INT_DTYPES = ("i32", "i64", "i8", "u8")


def bf16_bits(x):
    """float values -> bf16 bit patterns (uint16), round to nearest even."""
    shape = np.shape(x)  # ascontiguousarray makes a 0-d array 1-d
    f = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (f + 0x7FFF + ((f >> 16) & 1)) >> 16
    return rounded.astype(np.uint16).reshape(shape)


def bf16_value(bits):
    """bf16 bit patterns -> float64 values, any rank (a 0-d array too: numpy
    turns a 0-d shift result into a scalar, whose view cannot change dtype)."""
    b = np.asarray(bits)
    wide = np.left_shift(b.reshape(-1).astype(np.uint32), 16)
    return wide.view(np.float32).astype(np.float64).reshape(b.shape)


def storage(values, dtype):
    """VALUES as the numpy array whose bytes Plinth reads for DTYPE."""
    v = np.asarray(values)
    if dtype == "f32":
        return v.astype(np.float32)
    if dtype == "f64":
        return v.astype(np.float64)
    if dtype == "f16":
        return v.astype(np.float16)
    if dtype == "bf16":
        return bf16_bits(v)
    if dtype == "bool":
        return v.astype(np.bool_)
    return v.astype({"i32": np.int32, "i64": np.int64, "i8": np.int8, "u8": np.uint8}[dtype])


def from_storage(arr, dtype):
    """The values of ARR (as storage() makes them) in float64 or int64."""
    if dtype == "bf16":
        return bf16_value(arr)
    if dtype in FLOAT_DTYPES:
        return arr.astype(np.float64)
    return arr.astype(np.int64)


def to_dtype(values, dtype):
    """VALUES rounded to what DTYPE can hold (float64/int64 again)."""
    return from_storage(storage(values, dtype), dtype)


class Graph:
    """A graph under construction or being shrunk. tensors: name ->
    {"dtype", "shape"} for inputs and constants ("value" too for
    constants); other tensors are left for Plinth to infer."""

    def __init__(self, opset=17):
        self.opset = opset
        self.inputs = []
        self.outputs = []
        self.tensors = {}
        self.nodes = []
        self._names = 0

    def fresh(self, prefix):
        self._names += 1
        return "%s%d" % (prefix, self._names)

    def add_input(self, name, dtype, shape):
        self.inputs.append(name)
        self.tensors[name] = {"dtype": dtype, "shape": list(shape)}
        return name

    def add_const(self, values, dtype, prefix="c"):
        name = self.fresh(prefix)
        v = to_dtype(values, dtype)
        self.tensors[name] = {"dtype": dtype, "shape": list(v.shape), "value": v}
        return name

    def add_node(self, op, inputs, attrs=None, n_out=1, prefix=None):
        name = self.fresh((prefix or op.lower()) + "_")
        outs = [self.fresh("t") for _ in range(n_out)]
        self.nodes.append({"name": name, "op": op, "inputs": list(inputs),
                           "outputs": outs, "attributes": dict(attrs or {})})
        return outs if n_out > 1 else outs[0]

    def is_const(self, name):
        return name in self.tensors and "value" in self.tensors[name]

    def copy(self):
        g = Graph(self.opset)
        g.inputs = list(self.inputs)
        g.outputs = list(self.outputs)
        g.tensors = {k: dict(v) for k, v in self.tensors.items()}
        g.nodes = [dict(n, inputs=list(n["inputs"]), outputs=list(n["outputs"]),
                        attributes=dict(n["attributes"])) for n in self.nodes]
        g._names = self._names
        return g

    def outer_reads(self):
        """The names this graph (a body) and its bodies read from outside:
        used without being a body input or made by a body node."""
        made = set(self.inputs) | {o for n in self.nodes for o in n["outputs"]} | \
            {k for k, t in self.tensors.items() if "value" in t}
        reads = set()
        for n in self.nodes:
            reads.update(i for i in node_reads(n) if i)
        reads.update(self.outputs)
        return reads - made

    def prune(self):
        """Drops nodes, constants and inputs that no output depends on."""
        need = set(self.outputs)
        keep = []
        for n in reversed(self.nodes):
            if any(o in need for o in n["outputs"]):
                keep.append(n)
                need.update(i for i in node_reads(n) if i)
        self.nodes = list(reversed(keep))
        self.inputs = [i for i in self.inputs if i in need]
        self.tensors = {k: v for k, v in self.tensors.items()
                        if k in need or k in self.inputs}

    # ---- files ----------------------------------------------------------

    def body_doc(self):
        """This graph as a body attribute holds it (no constants of its
        own: a body reads the model's by name)."""
        tensors = []
        for name, t in self.tensors.items():
            if "value" in t:
                raise ValueError("a body's constants belong to the model: %s" % name)
            tensors.append({"name": name, "dtype": t["dtype"], "shape": list(t["shape"])})
        return {"inputs": self.inputs, "outputs": self.outputs, "tensors": tensors,
                "nodes": [_node_doc(n) for n in self.nodes]}

    def to_doc(self, weights_name):
        """The JSON document and the sidecar's bytes."""
        sidecar = bytearray()
        tensors = []
        for name, t in self.tensors.items():
            entry = {"name": name, "dtype": t["dtype"], "shape": list(t["shape"])}
            if "value" in t:
                data = storage(t["value"], t["dtype"]).tobytes()
                while len(sidecar) % 64:
                    sidecar.append(0)
                entry["data"] = {"offset": len(sidecar), "length": len(data)}
                sidecar += data
            tensors.append(entry)
        nodes = [_node_doc(n) for n in self.nodes]
        doc = {"format": "plinth-graph", "version": 1,
               "opset_import": [{"domain": "", "version": self.opset}]}
        if sidecar:
            doc["weights"] = weights_name
        doc.update({"inputs": self.inputs, "outputs": self.outputs,
                    "tensors": tensors, "nodes": nodes})
        return doc, bytes(sidecar)

    def save(self, json_path):
        base = os.path.splitext(os.path.basename(json_path))[0]
        doc, sidecar = self.to_doc(base + ".weights")
        if sidecar:
            with open(os.path.splitext(json_path)[0] + ".weights", "wb") as f:
                f.write(sidecar)
        with open(json_path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")

    @staticmethod
    def load(json_path):
        with open(json_path) as f:
            doc = json.load(f)
        sidecar = b""
        if "weights" in doc:
            with open(os.path.join(os.path.dirname(json_path), doc["weights"]), "rb") as f:
                sidecar = f.read()
        g = Graph.from_doc(doc, sidecar,
                           doc["opset_import"][0]["version"] if doc.get("opset_import") else 13)
        g._names = len(g.tensors) + len(g.nodes) + 1000
        return g

    @staticmethod
    def from_doc(doc, sidecar, opset):
        g = Graph(opset)
        g.inputs = list(doc["inputs"])
        g.outputs = list(doc["outputs"])
        from dt_plinth import DTYPES
        for t in doc.get("tensors", []):
            entry = {"dtype": t["dtype"], "shape": list(t["shape"])}
            if "data" in t:
                d = t["data"]
                npdt = DTYPES[t["dtype"]][2]
                raw = np.frombuffer(sidecar[d["offset"]:d["offset"] + d["length"]], dtype=npdt)
                entry["value"] = from_storage(raw.reshape(t["shape"]), t["dtype"])
            g.tensors[t["name"]] = entry
        for n in doc["nodes"]:
            g.nodes.append({"name": n["name"], "op": n["op"], "inputs": list(n["inputs"]),
                            "outputs": list(n["outputs"]),
                            "attributes": {k: _attr_value(v, opset)
                                           for k, v in n.get("attributes", {}).items()}})
        return g


def node_reads(n):
    """The names node N reads: its inputs and what its bodies read from
    outside themselves."""
    reads = list(n["inputs"])
    for kind, val in n["attributes"].values():
        if kind == "graph":
            reads += sorted(val.outer_reads())
    return reads


def _node_doc(n):
    node = {"name": n["name"], "op": n["op"], "inputs": n["inputs"], "outputs": n["outputs"]}
    if n["attributes"]:
        node["attributes"] = {k: _attr_json(v) for k, v in n["attributes"].items()}
    return node


def _attr_json(v):
    kind, val = v
    if kind == "float":
        return {"float": float(val)}
    if kind == "floats":
        return {"floats": [float(x) for x in val]}
    if kind == "ints":
        return {"ints": [int(x) for x in val]}
    if kind == "int":
        return {"int": int(val)}
    if kind == "graph":
        return {"graph": val.body_doc()}
    return {kind: val}


def _attr_value(j, opset=17):
    (kind, val), = j.items()
    if kind == "graph":
        return (kind, Graph.from_doc(val, b"", opset))
    return (kind, val)

