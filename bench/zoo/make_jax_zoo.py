#!/usr/bin/env python3
"""JAX and Flax models exported by jax2onnx, as a zoo: a fifth exporter.

    P/bin/python bench/zoo/make_jax_zoo.py [--out DIR] [--plugins] [--only SUBSTR,...] [--limit N]

jax2onnx converts JAX functions and Flax (nnx, linen) and Equinox modules to ONNX
(opset 23 by default) through its own lowering of every JAX primitive: graphs unlike
PyTorch's, TensorFlow's or PaddlePaddle's (lax.dot_general as Einsum or MatMul with
Transposes, lax.scan and fori_loop as Loop/Scan, lax.cond as If, gathers and scatters with
their JAX dimension numbers, symbolic batch dims carried as Shape arithmetic, ONNX functions
for @onnx_function modules). Its package registers its own test cases: about 150 models
(GPT, ViT, CLIP, DINOv3, GPT-OSS, MaxText and MaxDiffusion blocks, CNNs, autoencoders, GRU
cells, loops; `register_example`) and, with --plugins, about 1650 cases of single primitives
and jnp/lax functions. Each is exported as its test case describes (symbolic dims such as
'B' stay symbolic in the graph and are 3 in the inputs; the cases' own input values where
they give them, else seeded random ones of their dtypes), run by ONNX Runtime (graph
optimisations off: the references) and by JAX itself: a case ONNX Runtime cannot run, or
whose outputs ONNX Runtime and JAX disagree on (beyond 1e-3 of the largest), is skipped as
the converter's problem, and so is one drawing random numbers (Bernoulli,
RandomUniform...: no two engines draw alike). f64-only cases are left out. P is a python with jax2onnx and
onnxruntime (`python3 -m venv /tmp/jenv && /tmp/jenv/bin/pip install jax2onnx onnxruntime`).
Writes make_zoo.py's format into DIR (default build/jax_zoo): bench/zoo/run_zoo.py checks it,
bench/zoo.py times it.
"""
import argparse
import json
import os
import re
import sys
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SYM = 3  # the value of every symbolic dim in the inputs
RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
              "Bernoulli", "Multinomial"}


def cases(plugins):
    import jax2onnx.plugins.plugin_system as ps
    ps.import_all_plugins()
    metas = [(k, m) for k, m in ps.EXAMPLE_REGISTRY.items()]
    if plugins:
        metas += [(k, getattr(p, "metadata", None) or {}) for k, p in ps.PLUGIN_REGISTRY.items()]
    for key, meta in metas:
        for tc in meta.get("testcases", []):
            if tc.get("run_only_f64_variant") or tc.get("enable_double_precision") or \
                    tc.get("skip_numeric_validation"):
                continue
            yield key, tc


def inputs_of(tc, rng):
    """(export specs, feed arrays) of testcase TC."""
    import jax
    if "input_values" in tc:
        vals = [np.asarray(v) for v in tc["input_values"]]
        return vals, vals
    shapes = tc.get("input_shapes", [])
    dtypes = tc.get("input_dtypes") or [np.float32] * len(shapes)
    specs, feeds = [], []
    for shape, dt in zip(shapes, dtypes):
        dt = np.dtype(dt)
        conc = tuple(SYM if isinstance(d, str) else int(d) for d in shape)
        if dt == np.float32:
            specs.append(tuple(shape))
        else:
            specs.append(jax.ShapeDtypeStruct(conc, dt))
        if dt.kind == "f":
            feeds.append(rng.standard_normal(conc).astype(dt))
        elif dt.kind == "b":
            feeds.append(rng.integers(0, 2, conc).astype(bool))
        else:
            feeds.append(rng.integers(0, 3, conc).astype(dt))
    return specs, feeds


def flat_outputs(y):
    import jax
    return [np.asarray(a) for a in jax.tree_util.tree_leaves(y)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/jax_zoo")
    ap.add_argument("--plugins", action="store_true", help="also the single-primitive cases")
    ap.add_argument("--only", default="", help="comma-separated substrings of names")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, HERE)
    import onnx
    from jax2onnx import to_onnx
    from make_hf_zoo import finish
    from run_zoo import rel_error
    only = [s for s in a.only.split(",") if s]
    entries, skipped, seen = [], {}, set()
    for key, tc in cases(a.plugins):
        name = "jx_" + re.sub(r"[^A-Za-z0-9_]+", "_", "%s_%s" % (key.split("::")[-1], tc["testcase"]))[:90]
        if name in seen or (only and not any(s in name for s in only)):
            continue
        seen.add(name)
        if a.limit and len(entries) >= a.limit:
            break
        rng = np.random.default_rng(len(seen))
        try:
            fn = tc["callable"]
            if hasattr(fn, "instantiate"):  # a module built on demand (construct_and_call)
                fn = fn.instantiate()
            specs, feeds = inputs_of(tc, rng)
            kw = {}
            for k in ("inputs_as_nchw", "outputs_as_nchw", "normalization_mode"):
                if k in tc:
                    kw[k] = tc[k]
            params = tc.get("input_params")
            m = to_onnx(fn, specs, input_params=params, model_name=name,
                        opset=tc.get("opset_version", 23), return_mode="proto", **kw)
            drawn = sorted({n.op_type for n in m.graph.node} & RANDOM_OPS)
            if drawn:  # random draws: no two engines agree on them
                raise RuntimeError("draws random numbers (%s)" % ", ".join(drawn))
            path = os.path.join(a.out, name + ".onnx")
            onnx.save(m, path)
            gin = [i.name for i in m.graph.input]
            values = list(feeds) + [np.asarray(v) for v in (params or {}).values()]
            fd = dict(zip(gin, values))
            e = finish(a.out, name, "jax2onnx %s" % key, fd)
            want = flat_outputs(fn(*feeds, **(params or {})))
            got = [np.load(os.path.join(a.out, o["file"])) for o in e["outputs"]]
            if len(want) == len(got):
                errs = [rel_error(np.asarray(g, np.float64), np.asarray(w, np.float64))
                        for g, w in zip(got, want) if g.shape == w.shape and w.dtype.kind in "fiub"]
                e["jax_err"] = max(errs) if errs else 0.0
                if e["jax_err"] > 1e-3:
                    raise RuntimeError("ONNX Runtime and JAX disagree by %.2g" % e["jax_err"])
            e["exporter"] = "jax2onnx"
            # where ONNX Runtime's optimised run, or JAX itself, differs from
            # the references by more than 5e-5, two right answers are that
            # far apart (igamma's gradient: a series of 192 Pow and Exp)
            spread = max(e["ort_opt_err"], e.get("jax_err", 0.0))
            if spread > 5e-5:
                e["tol"] = max(1e-4, 2 * spread)
            entries.append(e)
            print("make_jax_zoo.py: ok %s" % name, file=sys.stderr, flush=True)
        except Exception as ex:  # the converter's or ONNX Runtime's, not Plinth's
            reason = str(ex).strip().splitlines()[0][:160] if str(ex).strip() else type(ex).__name__
            skipped[name] = reason
            print("make_jax_zoo.py: skip %s: %s" % (name, reason), file=sys.stderr, flush=True)
            for f in os.listdir(a.out):
                if f.startswith(name + "."):
                    os.remove(os.path.join(a.out, f))
        with open(os.path.join(a.out, "manifest.json"), "w") as f:
            json.dump(dict(exporter="jax2onnx", models=entries, skipped=skipped), f, indent=1)
    print("make_jax_zoo.py: %d models, %d skipped -> %s" % (len(entries), len(skipped),
                                                          os.path.abspath(a.out)), file=sys.stderr)


if __name__ == "__main__":
    main()
