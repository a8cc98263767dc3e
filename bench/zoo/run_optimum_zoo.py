#!/usr/bin/env python3
"""Plinth against ONNX Runtime (graph optimisations off) on make_optimum_zoo.py's exports,
run the way applications run them.

    python3 bench/zoo/run_optimum_zoo.py [--zoo DIR] [--ini backend.ini] [--tol T] [NAME ...]

Decoders: a generation loop from an empty past (a dim of 0), a prompt of 5 tokens at
batch 2 with the second row left-padded, then a token a step, each engine fed its own
presents; encoder-decoders (t5, bart, whisper): the encoder, the first decoder and the
decoder with past, encoder pasts computed once; *_merged: decoder_model_merged's If on
use_cache_branch; the rest: plain forwards at two batch sizes and lengths. A model is
ok when every output of every call has the same shape as ONNX Runtime's and
max|plinth - ort| / max|ort| <= T (default 1e-4); integers exactly. Times are the
calls' sums: every call of a generation loop is a new shape, which Plinth plans
(docs/architecture.md, "Shapes known only at run time"). Exit status 1 when a model
is not ok.
"""
import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import plinth  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--zoo", default=os.path.join(ROOT, "build", "optimum_zoo"))
ap.add_argument("--ini", default=None, help="backend.ini (default: the tree's)")
ap.add_argument("--tol", type=float, default=1e-4)
ap.add_argument("names", nargs="*")
ARGS = ap.parse_args()
rt = plinth.Runtime(ARGS.ini, threads=2)
so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
rng = np.random.default_rng(0)


def Z(*parts):
    return os.path.join(ARGS.zoo, *parts)


class Pair:
    def __init__(self, path):
        self.o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.p = rt.load_model(path).session()
        self.ins = {i.name: i for i in self.o.get_inputs()}
        self.outs = [o.name for o in self.o.get_outputs()]
        self.worst = 0.0
        self.tp = self.to = 0.0
    def run(self, feeds_o, feeds_p=None):
        feeds_p = feeds_o if feeds_p is None else feeds_p
        t = time.perf_counter(); a = self.o.run(None, {k: v for k, v in feeds_o.items() if k in self.ins}); self.to += time.perf_counter() - t
        t = time.perf_counter(); b = self.p.run({k: v for k, v in feeds_p.items() if k in self.ins}); self.tp += time.perf_counter() - t
        ra, rb = dict(zip(self.outs, a)), b
        for k in self.outs:
            x, y = ra[k], rb[k]
            if x.shape != y.shape:
                raise AssertionError("%s: shape %s vs %s" % (k, x.shape, y.shape))
            if x.size and x.dtype.kind == "f":
                e = float(np.abs(x - y).max() / max(np.abs(x).max(), 1e-6))
                self.worst = max(self.worst, e)
            elif x.size:
                self.worst = max(self.worst, 0.0 if np.array_equal(x, y) else 1.0)
        return ra, rb

def dims(shape, env):
    out = []
    for d in shape:
        if isinstance(d, int): out.append(d)
        else: out.append(int(eval(d.replace(" x ", "*"), {}, env)))
    return out

def decoder(path, B=2, prompt=5, steps=8, H=4):
    pr = Pair(path)
    ids = rng.integers(3, 1000, (B, prompt)).astype(np.int64)
    mask_row = np.ones((B, prompt), np.int64); mask_row[1, :2] = 0  # left padding
    past_names = [n for n in pr.ins if n.startswith("past_key_values")]
    env = dict(batch_size=B, past_sequence_length=0, num_heads=H)
    po = {n: np.zeros(dims(pr.ins[n].shape, env), np.float32) for n in past_names}
    pp = dict(po)
    cur, P, mask = ids, 0, mask_row
    for step in range(steps):
        S = cur.shape[1]
        f = {"input_ids": cur, "attention_mask": mask}
        if "position_ids" in pr.ins:
            pos = np.cumsum(mask, 1) - 1; pos[mask == 0] = 1
            f["position_ids"] = pos[:, -S:].astype(np.int64)
        ra, rb = pr.run({**f, **po}, {**f, **pp})
        nxt = ra["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        po = {n: ra[n.replace("past_key_values", "present")] for n in past_names}
        pp = {n: rb[n.replace("past_key_values", "present")] for n in past_names}
        mask = np.concatenate([mask, np.ones((B, 1), np.int64)], 1)
        cur = nxt
    return pr

def seq2seq(d, B=2, L=9, steps=6, whisper=False):
    enc = Pair(d + "/encoder_model.onnx")
    if whisper:
        feats = rng.standard_normal((B, 80, 3000)).astype(np.float32)
        eo, ep = enc.run({"input_features": feats})
        emask = None
    else:
        ids = rng.integers(3, 1000, (B, L)).astype(np.int64)
        emask = np.ones((B, L), np.int64); emask[1, -3:] = 0
        eo, ep = enc.run({"input_ids": ids, "attention_mask": emask})
    hs_o, hs_p = eo["last_hidden_state"], ep["last_hidden_state"]
    dec, decp = Pair(d + "/decoder_model.onnx"), Pair(d + "/decoder_with_past_model.onnx")
    cur = np.zeros((B, 1), np.int64)
    f = {"input_ids": cur, "encoder_hidden_states": hs_o}
    if emask is not None: f["encoder_attention_mask"] = emask
    fp = dict(f, encoder_hidden_states=hs_p)
    ra, rb = dec.run(f, fp)
    past_names = [n for n in decp.ins if n.startswith("past_key_values")]
    enc_o = {n: ra[n.replace("past_key_values", "present")] for n in past_names if ".encoder." in n}
    enc_p = {n: rb[n.replace("past_key_values", "present")] for n in past_names if ".encoder." in n}
    for step in range(steps):
        po = {n: ra[n.replace("past_key_values", "present")] for n in past_names if ".decoder." in n}
        pp = {n: rb[n.replace("past_key_values", "present")] for n in past_names if ".decoder." in n}
        po.update(enc_o); pp.update(enc_p)
        cur = ra["logits"][:, -1].argmax(-1)[:, None].astype(np.int64)
        f = {"input_ids": cur, **po}; fp = {"input_ids": cur, **pp}
        if emask is not None: f["encoder_attention_mask"] = fp["encoder_attention_mask"] = emask
        if "encoder_hidden_states" in decp.ins:
            f["encoder_hidden_states"] = hs_o; fp["encoder_hidden_states"] = hs_p
        ra, rb = decp.run(f, fp)
    return [enc, dec, decp]

def merged(d, B=2, L=9, steps=5, whisper=False):
    enc = Pair(d + "/encoder_model.onnx")
    if whisper:
        eo, ep = enc.run({"input_features": rng.standard_normal((B, 80, 3000)).astype(np.float32)}); emask = None
    else:
        ids = rng.integers(3, 1000, (B, L)).astype(np.int64)
        emask = np.ones((B, L), np.int64); emask[1, -3:] = 0
        eo, ep = enc.run({"input_ids": ids, "attention_mask": emask})
    m = Pair(d + "/decoder_model_merged.onnx")
    past_names = [n for n in m.ins if n.startswith("past_key_values")]
    E = eo["last_hidden_state"].shape[1]
    env = dict(batch_size=B, past_decoder_sequence_length=1, encoder_sequence_length_out=E, encoder_sequence_length=E)
    po = {n: np.zeros(dims(m.ins[n].shape, env), np.float32) for n in past_names}; pp = dict(po)
    cur = np.zeros((B, 1), np.int64); use = False
    for step in range(steps):
        f = {"input_ids": cur, "use_cache_branch": np.array([use]), "encoder_hidden_states": eo["last_hidden_state"], **po}
        fp = {"input_ids": cur, "use_cache_branch": np.array([use]), "encoder_hidden_states": ep["last_hidden_state"], **pp}
        if emask is not None: f["encoder_attention_mask"] = fp["encoder_attention_mask"] = emask
        ra, rb = m.run(f, fp)
        keep = (lambda n: True) if not use else (lambda n: ".decoder." in n)
        po.update({n: ra[n.replace("past_key_values", "present")] for n in past_names if keep(n)})
        pp.update({n: rb[n.replace("past_key_values", "present")] for n in past_names if keep(n)})
        cur = ra["logits"][:, -1].argmax(-1)[:, None].astype(np.int64); use = True
    return [enc, m]

def plain(path, feeds_list):
    pr = Pair(path)
    for f in feeds_list: pr.run(f)
    return pr

def text(B, L):
    return {"input_ids": rng.integers(3, 1000, (B, L)).astype(np.int64), "attention_mask": np.ones((B, L), np.int64)}

JOBS = {
    "gpt2": lambda: [decoder(Z("gpt2_onnx", "model.onnx"))],
    "llama": lambda: [decoder(Z("llama_onnx", "model.onnx"))],
    "gpt_neox": lambda: [decoder(Z("gpt_neox_onnx", "model.onnx"))],
    "opt": lambda: [decoder(Z("opt_onnx", "model.onnx"))],
    "bloom": lambda: [decoder(Z("bloom_onnx", "model.onnx"))],
    "falcon": lambda: [decoder(Z("falcon_onnx", "model.onnx"))],
    "phi": lambda: [decoder(Z("phi_onnx", "model.onnx"))],
    "codegen": lambda: [decoder(Z("codegen_onnx", "model.onnx"))],
    "gptj": lambda: [decoder(Z("gptj_onnx", "model.onnx"))],
    "mistral": lambda: [decoder(Z("mistral_onnx", "model.onnx"), steps=24)],  # past the window
    "gpt_bigcode": lambda: [decoder(Z("gpt_bigcode_onnx", "model.onnx"))],
    "t5": lambda: seq2seq(Z("t5_onnx")),
    "t5_merged": lambda: merged(Z("t5_onnx")),
    "bart": lambda: seq2seq(Z("bart_onnx")),
    "bart_merged": lambda: merged(Z("bart_onnx")),
    "whisper": lambda: seq2seq(Z("whisper_onnx"), whisper=True),
    "whisper_merged": lambda: merged(Z("whisper_onnx"), whisper=True),
    "bert": lambda: [plain(Z("bert_onnx", "model.onnx"), [dict(text(1, 7), token_type_ids=np.zeros((1, 7), np.int64)),
                                                        dict(text(3, 20), token_type_ids=np.zeros((3, 20), np.int64))])],
    "roberta": lambda: [plain(Z("roberta_onnx", "model.onnx"), [text(1, 7), text(3, 20)])],
    "deberta": lambda: [plain(Z("deberta_onnx", "model.onnx"), [text(1, 7), text(3, 20)])],
    "vit": lambda: [plain(Z("vit_onnx", "model.onnx"),
                          [{"pixel_values": rng.standard_normal((n, 3, 64, 64)).astype(np.float32)}
                           for n in (1, 3)])],
}

bad = 0
print("| model | result | max rel. error | ORT ms | Plinth ms |")
print("|---|---|---|---|---|")
for name in ARGS.names or JOBS:
    try:
        prs = JOBS[name]()
        w = max(p.worst for p in prs)
        ok = w <= ARGS.tol
        print("| %s | %s | %.1e | %.1f | %.1f |" % (name, "ok" if ok else "DIFFERS", w,
              sum(p.to for p in prs) * 1e3, sum(p.tp for p in prs) * 1e3), flush=True)
    except Exception as e:  # a refusal or a crash of one model is its row
        ok = False
        print("| %s | FAILED: %s | | | |" % (name, str(e)[:300].replace("\n", " ")), flush=True)
    bad += not ok
sys.exit(1 if bad else 0)
