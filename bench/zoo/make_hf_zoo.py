#!/usr/bin/env python3
"""Export Hugging Face transformers architectures (random weights, small configs) as a zoo.

    python3 bench/zoo/make_hf_zoo.py [--out DIR] [--only NAME,...] [--full] [--no-dyn] [--torch-python P]

(the python3 on PATH needs onnxruntime and onnx, which compute the references and the
quantization; P, default /usr/bin/python3, needs Debian's python3-torch and `pip install
--user --break-system-packages transformers==4.36.2`, and exports.) No weights are
downloaded: every model is built from a config.

The PyTorch and TF zoos are models written for this project; these are the architectures
deployments export from the transformers library, with its attention masks, RMSNorms,
rotary embeddings, relative position buckets, windowed attention and convolutional
feature extractors, each through torch.onnx.export at opset 17 (14 for two) as those users
do. With --dyn (default) each text model is also quantized with onnxruntime's
quantize_dynamic (s8 weights), the common recipe for BERT-like models on CPUs
(NAME_dq). References are ONNX Runtime's outputs with graph optimisations off.
Writes make_zoo.py's format (NAME.onnx, NAME.in.*.npy, NAME.ref.*.npy, manifest.json)
into DIR (default build/hf_zoo), which bench/zoo.py --zoo DIR times against ONNX Runtime
and bench/zoo/run_zoo.py --zoo DIR checks.
"""
import argparse
import collections
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def models():
    import torch
    import transformers as T

    def ids(b, s):
        return torch.randint(0, 1000, (b, s))

    m = {}
    m["bert"] = lambda: (T.BertModel(T.BertConfig(hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                                                  intermediate_size=1024, vocab_size=1000)),
                         {"input_ids": ids(1, 128), "attention_mask": torch.ones(1, 128, dtype=torch.long)})
    m["gpt2"] = lambda: (T.GPT2Model(T.GPT2Config(n_embd=256, n_layer=4, n_head=4, vocab_size=1000,
                                                  n_positions=256)), {"input_ids": ids(1, 64)})
    m["distilbert"] = lambda: (T.DistilBertModel(T.DistilBertConfig(dim=256, n_layers=3, n_heads=4, hidden_dim=1024,
                                                                    vocab_size=1000)),
                               {"input_ids": ids(2, 64), "attention_mask": torch.ones(2, 64, dtype=torch.long)})
    m["roberta"] = lambda: (T.RobertaModel(T.RobertaConfig(hidden_size=256, num_hidden_layers=3, num_attention_heads=4,
                                                           intermediate_size=1024, vocab_size=1000)),
                            {"input_ids": ids(1, 96)})
    m["albert"] = lambda: (T.AlbertModel(T.AlbertConfig(hidden_size=256, embedding_size=128, num_hidden_layers=3,
                                                        num_attention_heads=4, intermediate_size=1024,
                                                        vocab_size=1000)), {"input_ids": ids(1, 64)})
    m["t5enc"] = lambda: (T.T5EncoderModel(T.T5Config(d_model=256, d_kv=32, d_ff=512, num_layers=3, num_heads=8,
                                                      vocab_size=1000)), {"input_ids": ids(1, 64)})
    m["bart"] = lambda: (T.BartModel(T.BartConfig(d_model=256, encoder_layers=2, decoder_layers=2,
                                                  encoder_attention_heads=4, decoder_attention_heads=4,
                                                  encoder_ffn_dim=512, decoder_ffn_dim=512, vocab_size=1000)),
                         {"input_ids": ids(1, 32)})
    m["deberta"] = lambda: (T.DebertaV2Model(T.DebertaV2Config(hidden_size=256, num_hidden_layers=2,
                                                               num_attention_heads=4, intermediate_size=512,
                                                               vocab_size=1000)), {"input_ids": ids(1, 64)})
    m["clip_text"] = lambda: (T.CLIPTextModel(T.CLIPTextConfig(hidden_size=256, num_hidden_layers=3,
                                                               num_attention_heads=4, intermediate_size=512,
                                                               vocab_size=1000)), {"input_ids": ids(1, 77)})
    m["llama"] = lambda: (T.LlamaModel(T.LlamaConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                                     intermediate_size=512, vocab_size=1000)),
                          {"input_ids": ids(1, 48)})
    m["vit"] = lambda: (T.ViTModel(T.ViTConfig(hidden_size=192, num_hidden_layers=4, num_attention_heads=3,
                                               intermediate_size=768, image_size=96, patch_size=16)),
                        {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["swin"] = lambda: (T.SwinModel(T.SwinConfig(image_size=112, embed_dim=48, depths=[2, 2, 2], num_heads=[2, 4, 8],
                                                  window_size=7)), {"pixel_values": torch.randn(1, 3, 112, 112)})
    m["convnext_hf"] = lambda: (T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[48, 96, 192, 384], depths=[1, 1, 3, 1])),
                                {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["wav2vec2"] = lambda: (T.Wav2Vec2Model(T.Wav2Vec2Config(hidden_size=192, num_hidden_layers=2,
                                                              num_attention_heads=4, intermediate_size=384,
                                                              conv_dim=(64,) * 7, num_conv_pos_embeddings=32)),
                             {"input_values": torch.randn(1, 16000)})
    m["segformer"] = lambda: (T.SegformerForSemanticSegmentation(T.SegformerConfig(
        hidden_sizes=[32, 64, 160, 256], depths=[1, 1, 1, 1], decoder_hidden_size=128)),
        {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["mobilevit"] = lambda: (T.MobileViTModel(T.MobileViTConfig(image_size=128, hidden_sizes=[96, 120, 144],
                                                                 neck_hidden_sizes=[16, 32, 48, 64, 80, 96, 384])),
                              {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["resnet_hf"] = lambda: (T.ResNetModel(T.ResNetConfig(hidden_sizes=[64, 128, 256, 512], depths=[1, 1, 1, 1],
                                                           embedding_size=32)),
                              {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["yolos"] = lambda: (T.YolosModel(T.YolosConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3,
                                                     intermediate_size=384, image_size=[128, 128],
                                                     num_detection_tokens=20)),
                          {"pixel_values": torch.randn(1, 3, 128, 128)})
    # a second batch: other attention forms (ALiBi, local windows, sliding
    # windows, relative position bias, attention biases), bottlenecks,
    # pooling mixers and convolutional stems
    m["whisper_enc"] = lambda: (T.WhisperForAudioClassification(T.WhisperConfig(
        d_model=192, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=384, num_mel_bins=40,
        max_source_positions=100)), {"input_features": torch.randn(1, 40, 200)})
    m["mobilebert"] = lambda: (T.MobileBertModel(T.MobileBertConfig(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=256, embedding_size=64,
        intra_bottleneck_size=64, vocab_size=1000)), {"input_ids": ids(1, 64)})
    m["electra"] = lambda: (T.ElectraModel(T.ElectraConfig(
        embedding_size=128, hidden_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=512,
        vocab_size=1000)), {"input_ids": ids(1, 64), "attention_mask": torch.ones(1, 64, dtype=torch.long)})
    m["squeezebert"] = lambda: (T.SqueezeBertModel(T.SqueezeBertConfig(
        hidden_size=256, embedding_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=512,
        vocab_size=1000)), {"input_ids": ids(1, 64)})
    m["opt"] = lambda: (T.OPTModel(T.OPTConfig(
        hidden_size=256, num_hidden_layers=3, num_attention_heads=4, ffn_dim=512, vocab_size=1000,
        word_embed_proj_dim=256, max_position_embeddings=256)), {"input_ids": ids(1, 48)})
    m["bloom"] = lambda: (T.BloomModel(T.BloomConfig(
        hidden_size=256, n_layer=2, n_head=4, vocab_size=1000)), {"input_ids": ids(1, 48)})
    m["gpt_neo"] = lambda: (T.GPTNeoModel(T.GPTNeoConfig(
        hidden_size=256, num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]],
        window_size=16, vocab_size=1000, max_position_embeddings=256)), {"input_ids": ids(1, 48)})
    m["mistral"] = lambda: (T.MistralModel(T.MistralConfig(
        hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=512, vocab_size=1000, sliding_window=16)), {"input_ids": ids(1, 48)})
    m["deit"] = lambda: (T.DeiTModel(T.DeiTConfig(
        hidden_size=192, num_hidden_layers=3, num_attention_heads=3, intermediate_size=384, image_size=96,
        patch_size=16)), {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["beit"] = lambda: (T.BeitModel(T.BeitConfig(
        hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=96,
        patch_size=16, use_relative_position_bias=True)), {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["levit"] = lambda: (T.LevitModel(T.LevitConfig(
        image_size=128, hidden_sizes=[64, 96, 128], num_attention_heads=[2, 3, 4], depths=[1, 1, 1],
        key_dim=[16, 16, 16])), {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["poolformer"] = lambda: (T.PoolFormerModel(T.PoolFormerConfig(
        hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1])), {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["regnet"] = lambda: (T.RegNetModel(T.RegNetConfig(
        hidden_sizes=[32, 64, 128, 256], depths=[1, 1, 2, 1], groups_width=16, embedding_size=16)),
        {"pixel_values": torch.randn(1, 3, 96, 96)})
    # full-size configurations (the defaults of each config class: what
    # checkpoints on the hub hold), random weights: the sizes above are
    # small enough for CI, these are what deployments run (--full)
    m["bert_base"] = lambda: (T.BertModel(T.BertConfig()),
                              {"input_ids": ids(1, 128), "attention_mask": torch.ones(1, 128, dtype=torch.long)})
    m["distilbert_base"] = lambda: (T.DistilBertModel(T.DistilBertConfig()),
                                    {"input_ids": ids(1, 128), "attention_mask": torch.ones(1, 128, dtype=torch.long)})
    m["gpt2_base"] = lambda: (T.GPT2Model(T.GPT2Config()), {"input_ids": ids(1, 128)})
    m["vit_base"] = lambda: (T.ViTModel(T.ViTConfig()), {"pixel_values": torch.randn(1, 3, 224, 224)})
    m["t5_small_enc"] = lambda: (T.T5EncoderModel(T.T5Config()), {"input_ids": ids(1, 128)})
    m["whisper_base_enc"] = lambda: (T.WhisperForAudioClassification(T.WhisperConfig(
        d_model=512, encoder_layers=6, encoder_attention_heads=8, encoder_ffn_dim=2048)),
        {"input_features": torch.randn(1, 80, 3000)})
    return m


# quantize_dynamic is applied to these (their MatMuls carry the work)
DYN = ["bert", "distilbert", "gpt2", "t5enc", "clip_text", "llama", "vit", "mobilebert", "opt", "whisper_enc",
       "bert_base", "gpt2_base"]


def export(name, build, out):
    """NAME exported by torch.onnx.export into OUT; returns the input arrays."""
    import torch
    torch.manual_seed(0)
    model, inputs = build()
    model.eval()

    class First(torch.nn.Module):  # the first output (last_hidden_state, logits)
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            o = self.m(**dict(zip(inputs, a)))
            if hasattr(o, "keys"):
                return o[list(o.keys())[0]]
            return o[0] if isinstance(o, (tuple, list)) else o

    with torch.no_grad():
        torch.onnx.export(First(model).eval(), tuple(inputs.values()), os.path.join(out, name + ".onnx"),
                          opset_version=14 if name in ("albert", "roberta") else 17, do_constant_folding=True,
                          input_names=list(inputs), output_names=["output"])
    return {k: v.numpy() for k, v in inputs.items()}


def finish(out, name, arch, feeds):
    """ORT's references (optimisations off) and the manifest entry of OUT/NAME.onnx."""
    import onnx
    import onnxruntime as ort
    from run_zoo import rel_error
    path = os.path.join(out, name + ".onnx")
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: feeds[i.name] for i in ref.get_inputs()}
    ys = ref.run(None, feeds)
    opt = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    mp = onnx.load(path)
    opset = max(o.version for o in mp.opset_import if o.domain in ("", "ai.onnx"))
    e = dict(name=name, arch=arch, opset=opset, note="", fast=False, repro=False,
             exporter="transformers + torch.onnx.export", nodes=len(mp.graph.node),
             ops=dict(collections.Counter(n.op_type for n in mp.graph.node)),
             ort_opt_err=max(rel_error(o, y) for o, y in zip(opt, ys)), inputs=[], outputs=[])
    for k, v in feeds.items():
        f = "%s.in.%s.npy" % (name, k)
        np.save(os.path.join(out, f), v)
        e["inputs"].append(dict(name=k, file=f, shape=list(v.shape), dtype=str(v.dtype)))
    for o, y in zip(ref.get_outputs(), ys):
        f = "%s.ref.%s.npy" % (name, o.name)
        np.save(os.path.join(out, f), y)
        e["outputs"].append(dict(name=o.name, file=f, shape=list(y.shape), dtype=str(y.dtype),
                                 max_abs=float(np.abs(y).max()) if y.size else 0.0))
    return e


def export_main(doc, default_out, export_one):
    """The command line of a zoo script whose models export one by one in a
    torch interpreter: --out (default DEFAULT_OUT, made if missing), --only,
    --torch-python, and the hidden --export NAME that export_each runs, for
    which EXPORT_ONE(NAME, OUT) is called and None returned; else the parsed
    arguments."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--only", default="")
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--export", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.export:
        export_one(a.export, a.out)
        return None
    return a


def export_each(script, names, out, torch_python, exporter, arch_of, adjust=None, input_name="input"):
    """Runs `SCRIPT --export NAME --out OUT` under TORCH_PYTHON for each name
    (an exporter's failure reported and skipped), then finish() on
    OUT/NAME.onnx with OUT/NAME.in.INPUT_NAME.npy as the input (a model ONNX
    Runtime refuses skipped too); ADJUST(name, entry) may edit each entry.
    Writes OUT/manifest.json after every model; returns the entries."""
    tag = os.path.basename(script)
    entries = []
    for name in names:
        print("%s: %s" % (tag, name), file=sys.stderr, flush=True)
        p = subprocess.run([torch_python, os.path.abspath(script), "--export", name, "--out", out],
                           capture_output=True, text=True)
        if p.returncode != 0:  # an exporter gap is reported, not fatal
            print("%s: %s: export failed: %s" % (tag, name, p.stderr.strip()[-400:]), file=sys.stderr)
            continue
        zname = arch_of(name)[0]
        feeds = {input_name: np.load(os.path.join(out, "%s.in.%s.npy" % (zname, input_name)))}
        try:
            e = finish(out, zname, arch_of(name)[1], feeds)
        except Exception as ex:  # ONNX Runtime refuses the export
            print("%s: %s: ONNX Runtime: %s" % (tag, name, str(ex)[:300]), file=sys.stderr)
            continue
        e["exporter"] = exporter
        if adjust is not None:
            adjust(name, e)
        entries.append(e)
        with open(os.path.join(out, "manifest.json"), "w") as f:
            json.dump(dict(exporter=exporter, models=entries), f, indent=1)
    print("%s: %d models -> %s" % (tag, len(entries), os.path.abspath(out)), file=sys.stderr)
    return entries


def export_with_feeds(tag, cmd, out, name, arch):
    """Runs CMD (an export of NAME into OUT writing OUT/NAME.in.*.npy), then
    finish() with those inputs; the manifest entry, or None (reported) when
    the exporter fails or ONNX Runtime cannot run what it wrote."""
    print("%s: %s" % (tag, name), file=sys.stderr, flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:  # an exporter gap is reported, not fatal
        print("%s: %s: export failed: %s" % (tag, name, p.stderr.strip()[-400:]), file=sys.stderr)
        return None
    prefix = name + ".in."
    feeds = {f[len(prefix):-4]: np.load(os.path.join(out, f)) for f in os.listdir(out)
             if f.startswith(prefix) and f.endswith(".npy")}
    try:
        return finish(out, name, arch, feeds)
    except Exception as e:  # no reference: ONNX Runtime cannot run the export (Trilu of bool)
        print("%s: %s: skipped, ONNX Runtime cannot run it: %s"
              % (tag, name, str(e).splitlines()[0][:200]), file=sys.stderr)
        return None


NAMES = ["bert", "gpt2", "distilbert", "roberta", "albert", "t5enc", "bart", "deberta", "clip_text", "llama",
         "vit", "swin", "convnext_hf", "wav2vec2", "segformer", "mobilevit", "resnet_hf", "yolos",
         "whisper_enc", "mobilebert", "electra", "squeezebert", "opt", "bloom", "gpt_neo", "mistral", "deit",
         "beit", "levit", "poolformer", "regnet"]
FULL = ["bert_base", "distilbert_base", "gpt2_base", "vit_base", "t5_small_enc", "whisper_base_enc"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/hf_zoo")
    ap.add_argument("--only", default="", help="comma-separated names")
    ap.add_argument("--no-dyn", action="store_true", help="skip the quantize_dynamic copies")
    ap.add_argument("--full", action="store_true", help="the full-size configurations instead (%s)" % ", ".join(FULL))
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--export", help=argparse.SUPPRESS)  # in the torch interpreter: one model
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.export:
        feeds = export(a.export, models()[a.export], a.out)
        for k, v in feeds.items():
            np.save(os.path.join(a.out, "%s.in.%s.npy" % (a.export, k)), v)
        return
    sys.path.insert(0, HERE)
    names = a.only.split(",") if a.only else FULL if a.full else NAMES
    entries = []
    for name in names:
        cmd = [a.torch_python, os.path.abspath(__file__), "--export", name, "--out", a.out]
        e = export_with_feeds("make_hf_zoo.py", cmd, a.out, name, "transformers %s" % name)
        if e is None:
            continue
        entries.append(e)
        feeds = {i["name"]: np.load(os.path.join(a.out, i["file"])) for i in e["inputs"]}
        if name in DYN and not a.no_dyn:
            from onnxruntime.quantization import QuantType, quantize_dynamic
            quantize_dynamic(os.path.join(a.out, name + ".onnx"), os.path.join(a.out, name + "_dq.onnx"),
                             weight_type=QuantType.QInt8)
            try:
                entries.append(finish(a.out, name + "_dq", "transformers %s, dynamic int8" % name, feeds))
            except Exception as e:  # ONNX Runtime cannot run what its own quantizer wrote (ConvInteger s8)
                print("make_hf_zoo.py: %s_dq: skipped, ONNX Runtime cannot run it: %s"
                      % (name, str(e).splitlines()[0][:200]), file=sys.stderr)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(dict(exporter="transformers + torch.onnx.export", models=entries), f, indent=1)
    print("make_hf_zoo.py: %d models -> %s" % (len(entries), os.path.abspath(a.out)), file=sys.stderr)


if __name__ == "__main__":
    main()
