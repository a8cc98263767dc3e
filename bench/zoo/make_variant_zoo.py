#!/usr/bin/env python3
"""Variants of a zoo the way users transform models they did not export.

    python3 bench/zoo/make_variant_zoo.py KIND --src ZOO --out DIR [--only a,b]

KIND is one of
  f16       onnxconverter_common's float16 conversion (keep_io_types), the
            usual way models are halved for deployment; tolerance 2e-2
  opset     onnx.version_converter to --opset (default 21)
  quant     onnxruntime.quantization.quantize_static in four recipes: QDQ
            with i8 activations and per-channel weights (qdq_ss_pc), QDQ
            u8/u8 (qdq_uu), QOperator i8/i8 per channel (qop_ss_pc) and
            QOperator u8/i8 per channel (qop_us_pc), calibrated on the
            model's own input; tolerance 3e-2
  ortopt    onnxruntime.transformers.optimizer's fusions (--opt-level 0,
            the default: the Python fusions, no ONNX Runtime pass; 1 or 2 add
            ONNX Runtime's basic or extended passes, saved; 99 also its
            NCHWc layout, which Plinth refuses by design) for the transformer
            architectures of make_hf_zoo.py: Attention,
            SkipLayerNormalization, EmbedLayerNormalization, BiasGelu,
            FastGelu, QuickGelu; tolerance 1e-3; with --f16, then the
            optimizer's convert_float_to_float16(keep_io_types) (the usual
            fp16 export: fused ops typed f16), tolerance 2e-2. The optimizer
            imports torch: run this kind with a python that has it
  wq4       weight-only 4-bit quantization of MatMul weights by ONNX
            Runtime's tools: MatMulNBitsQuantizer (block 32, symmetric:
            com.microsoft MatMulNBits) and MatMulBnb4Quantizer (block 32,
            FP4 and NF4: MatMulBnb4); tolerance 1e-3
  batch     the first dim of every graph input left free ("batch", the
            graph outputs' first dims unknown, value_info dropped: what
            torch.onnx.export's dynamic_axes writes) and run at --batch rows
            (the source input and rows of it moved by noise, or rolled for
            integers); models whose exports fix the batch elsewhere (a
            Reshape to [1, ...]) fail in ONNX Runtime and are skipped

SRC is a zoo in make_zoo.py's format (manifest.json, NAME.onnx,
NAME.in.*.npy); every written model gets ONNX Runtime's outputs (graph
optimisations off) as its references, and a model ONNX Runtime cannot run is
skipped with the reason. Needs onnx, onnxruntime, numpy (and
onnxconverter-common for f16) for the python3 on PATH. Check a variant zoo
with run_zoo.py (--zoo DIR) and time it with bench/zoo.py (--zoo DIR).

What they found (2026-12-06): ortopt at opt_level 99 -- BERT's fused
Attention with EmbedLayerNormalization's mask_index over a symbolic batch
refused; ortopt --f16 -- every fused op refused ('only float32'); wq4 --
MatMulBnb4 unknown; all fixed.

What they found (2026-12-03): float16 conversion's stale value_info refused
(three PyPI models), DistilBERT's EmbedLayerNormalization without a mask
refused, per-channel DequantizeLinear at opset 11 refused, and com.microsoft
QLinearAdd, QLinearMul and QLinearAveragePool rounding otherwise than ONNX
Runtime (QOperator PP-OCR v4 0.29 off); all fixed.
"""
import argparse
import json
import os
import sys

import numpy as np


def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def write_entry(src, dst, e, name, path, feeds, tol, extra=None):
    """Runs PATH in ONNX Runtime on FEEDS and returns the manifest entry."""
    s = ort_session(path)
    names = {x.name for x in s.get_inputs()}
    ne = dict(e)
    ne.update({"name": name, "inputs": [], "outputs": [], "tol": tol})
    ne.update(extra or {})
    for i in e["inputs"]:
        if i["name"] not in names:
            continue
        f = name + ".in." + i["file"].split(".in.", 1)[1]
        np.save(os.path.join(dst, f), feeds[i["name"]])
        ni = dict(i)
        ni["file"] = f
        ni["shape"] = list(feeds[i["name"]].shape)
        ne["inputs"].append(ni)
    run_feeds = {k: v for k, v in feeds.items() if k in names}
    outs = s.run(None, run_feeds)
    # ONNX Runtime's own optimised graph against those references: where it
    # moves the outputs more than the variant's tolerance (QDQ graphs, whose
    # fused integer kernels round where the float graph does not), that is
    # how far apart two right answers are; the check allows twice it
    import onnxruntime as ort
    opt = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, run_feeds)
    ne["ort_opt_err"] = max([float(np.abs(np.asarray(u, np.float64) - np.asarray(v, np.float64)).max()
                                   / max(float(np.abs(np.asarray(v, np.float64)).max()), 1e-30))
                             for u, v in zip(opt, outs) if np.asarray(v).size and np.asarray(v).dtype.kind == "f"]
                            or [0.0])
    ne["tol"] = max(tol, 2 * ne["ort_opt_err"])
    for o, v in zip(s.get_outputs(), outs):
        v = np.asarray(v)
        f = name + ".ref." + o.name.replace("/", "_") + ".npy"
        np.save(os.path.join(dst, f), v)
        ne["outputs"].append({"name": o.name, "file": f, "shape": list(v.shape),
                              "dtype": str(v.dtype),
                              "max_abs": float(np.abs(v.astype(np.float64)).max())
                              if v.size and v.dtype.kind == "f" else 0.0})
    return ne


def variants(kind, args, e, model_path, feeds):
    """Yields (name, writer(path), tol, extra) for one source model."""
    import onnx
    if kind == "f16":
        from onnxconverter_common import float16
        if any(i["dtype"] != "float32" for i in e["inputs"]):
            return
        def w(path):
            m = float16.convert_float_to_float16(onnx.load(model_path), keep_io_types=True)
            onnx.save(m, path)
        yield e["name"] + "_f16", w, 2e-2, {}
    elif kind == "opset":
        from onnx import version_converter
        def w(path):
            onnx.save(version_converter.convert_version(onnx.load(model_path), args.opset), path)
        yield f"{e['name']}_v{args.opset}", w, e.get("tol", 1e-4), {"opset": args.opset}
    elif kind == "quant":
        from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                              quantize_static)
        from onnxruntime.quantization.shape_inference import quant_pre_process
        pre = os.path.join(args.out, e["name"] + ".pre.onnx")
        try:
            quant_pre_process(model_path, pre, skip_symbolic_shape=True)
        except Exception:
            pre = model_path
        recipes = {
            "qdq_ss_pc": (QuantFormat.QDQ, QuantType.QInt8, QuantType.QInt8, True),
            "qdq_uu": (QuantFormat.QDQ, QuantType.QUInt8, QuantType.QUInt8, False),
            "qop_ss_pc": (QuantFormat.QOperator, QuantType.QInt8, QuantType.QInt8, True),
            "qop_us_pc": (QuantFormat.QOperator, QuantType.QUInt8, QuantType.QInt8, True),
        }
        for rname, (fmt, act, wt, pc) in recipes.items():
            class Reader(CalibrationDataReader):
                def __init__(self):
                    self.d = [feeds]
                def get_next(self):
                    return self.d.pop() if self.d else None
            def w(path, fmt=fmt, act=act, wt=wt, pc=pc, Reader=Reader):
                quantize_static(pre, path, Reader(), quant_format=fmt, activation_type=act,
                                weight_type=wt, per_channel=pc)
            yield f"{e['name']}_{rname}", w, 3e-2, {}
    elif kind == "ortopt":
        from onnxruntime.transformers import optimizer
        types = {"bert": "bert", "distilbert": "bert", "roberta": "bert", "albert": "bert",
                 "electra": "bert", "gpt2": "gpt2", "vit": "vit", "clip_text": "clip",
                 "t5_enc": "t5", "bart": "bart", "swin": "swin", "llama": "gpt2",
                 "deberta": "bert", "mobilebert": "bert", "whisper_enc": "bert", "opt": "gpt2",
                 "deit": "vit", "beit": "vit", "gpt_neo": "gpt_neox",
                 # make_hf_zoo.py's full-size models (--full)
                 "bert_base": "bert", "distilbert_base": "bert", "gpt2_base": "gpt2",
                 "vit_base": "vit", "t5_small_enc": "t5", "whisper_base_enc": "bert"}
        if e["name"] not in types:
            return
        def w(path):
            om = optimizer.optimize_model(model_path, model_type=types[e["name"]], num_heads=0,
                                          hidden_size=0, opt_level=args.opt_level, use_gpu=False)
            if args.f16:
                om.convert_float_to_float16(keep_io_types=True)
            om.save_model_to_file(path)
        tag = "_ortopt" + (str(args.opt_level) if args.opt_level else "") + \
              ("_f16" if args.f16 else "")
        yield e["name"] + tag, w, 2e-2 if args.f16 else 1e-3, {}
    elif kind == "wq4":
        from onnxruntime.quantization import matmul_bnb4_quantizer as bnb4
        try:
            from onnxruntime.quantization import matmul_nbits_quantizer as nbits
            NBits = nbits.MatMulNBitsQuantizer
        except ImportError:  # ONNX Runtime before 1.21
            from onnxruntime.quantization import matmul_4bits_quantizer as nbits
            NBits = nbits.MatMul4BitsQuantizer
        def nb(path):
            q = NBits(onnx.load(model_path), block_size=32, is_symmetric=True)
            q.process()
            onnx.save(q.model.model, path)
        yield e["name"] + "_nbits4", nb, 1e-3, {}
        for qt, tag in ((0, "fp4"), (1, "nf4")):
            def bb(path, qt=qt):
                q = bnb4.MatMulBnb4Quantizer(onnx.load(model_path), qt, 32)
                q.process()
                onnx.save(q.model.model, path)
            yield f"{e['name']}_bnb4_{tag}", bb, 1e-3, {}
    elif kind == "batch":
        if any(not i["shape"] or i["shape"][0] != 1 for i in e["inputs"]):
            return
        def w(path):
            m = onnx.load(model_path)
            inits = {t.name for t in m.graph.initializer}
            for v in list(m.graph.input) + list(m.graph.output):
                if v.name in inits or not v.type.HasField("tensor_type") or \
                        not v.type.tensor_type.shape.dim:
                    continue
                d = v.type.tensor_type.shape.dim[0]
                d.Clear()
                if v in m.graph.input:
                    d.dim_param = "batch"
            del m.graph.value_info[:]
            onnx.save(m, path)
        rng = np.random.default_rng(7)
        rows = {}
        for k, x in feeds.items():
            r = [x]
            for j in range(1, args.batch):
                if x.dtype.kind == "f":
                    scale = np.asarray(0.1 * (float(np.abs(x).mean()) + 1e-3), x.dtype)
                    r.append(x + rng.standard_normal(x.shape).astype(x.dtype) * scale)
                else:
                    r.append(np.roll(x, j, axis=-1))
            rows[k] = np.concatenate(r, 0)
        yield f"{e['name']}_b{args.batch}", w, e.get("tol", 1e-4), {"feeds": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=["f16", "opset", "quant", "ortopt", "batch", "wq4"])
    ap.add_argument("--src", required=True, help="a zoo folder (manifest.json)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated source model names")
    ap.add_argument("--opset", type=int, default=21)
    ap.add_argument("--batch", type=int, default=3, help="rows for the batch kind")
    ap.add_argument("--opt-level", type=int, default=0, choices=[0, 1, 2, 99],
                    help="the ortopt kind's optimizer level")
    ap.add_argument("--f16", action="store_true",
                    help="ortopt: convert to float16 after the fusions")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    m = json.load(open(os.path.join(args.src, "manifest.json")))
    only = set(args.only.split(",")) if args.only else None
    out = {"exporter": f"{args.kind} variants of " + m.get("exporter", args.src), "models": []}
    for e in m["models"]:
        if only and e["name"] not in only:
            continue
        model_path = os.path.join(args.src, e["name"] + ".onnx")
        feeds = {i["name"]: np.load(os.path.join(args.src, i["file"])) for i in e["inputs"]}
        for name, write, tol, extra in variants(args.kind, args, e, model_path, feeds):
            path = os.path.join(args.out, name + ".onnx")
            try:
                write(path)
                extra = dict(extra)
                run = extra.pop("feeds", feeds)
                out["models"].append(write_entry(args.src, args.out, e, name, path, run, tol,
                                                 extra))
                print("ok", name, flush=True)
            except Exception as ex:  # the converter's or ONNX Runtime's failure: not Plinth's
                print("skip", name, str(ex).replace("\n", " ")[:200], flush=True)
    json.dump(out, open(os.path.join(args.out, "manifest.json"), "w"), indent=1)
    print(f"{len(out['models'])} models -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
