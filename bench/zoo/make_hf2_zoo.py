#!/usr/bin/env python3
"""Export current Hugging Face architectures with current PyTorch (its dynamo exporter) as a zoo.

    python3 bench/zoo/make_hf2_zoo.py --torch-python P [--out DIR] [--only NAME,...] [--legacy]

make_hf_zoo.py exports through Debian's torch 1.13 and transformers 4.36, what deployments
ran in 2023. Models shipped today come from torch 2.x and transformers 5, whose graphs
differ: torch.onnx.export's default is the dynamo exporter (opset 18 and later, onnxscript's
rewrites, the weights possibly in external data), attention is written through
scaled_dot_product_attention, masks are built from vmapped index comparisons, and the
architectures are newer (Qwen2/3, Gemma 1-3, Phi-3, Granite, OLMo-2, SmolLM, ModernBERT,
DINOv2, SigLIP, ConvNeXt V2, Swin V2, Hiera...). Every model here is built from a small
config with random weights (nothing downloaded), in eval mode, with the first output
(last_hidden_state or logits) as the graph's output. --legacy exports with the TorchScript
exporter of the same torch instead (dynamo=False, opset 17), the other path current users
take. P is a python with torch >= 2.5, transformers >= 4.50 and onnxscript
(`python3 -m venv /tmp/t2env && /tmp/t2env/bin/pip install torch transformers onnxscript
onnx`); the python3 on PATH needs onnxruntime and onnx (references: ONNX Runtime's outputs
with graph optimisations off). Writes make_zoo.py's format into DIR (default
build/hf2_zoo): bench/zoo/run_zoo.py checks it, bench/zoo.py times it.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def models():
    import torch
    import transformers as T

    def ids(b, s):
        return torch.randint(0, 1000, (b, s))

    def text(b, s, pad=0):
        """input_ids and an attention mask whose first row has PAD padded positions at its end"""
        mask = torch.ones(b, s, dtype=torch.long)
        if pad:
            mask[0, s - pad:] = 0
        return {"input_ids": ids(b, s), "attention_mask": mask}

    def dec(cfg_cls, **kw):
        base = dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
                    vocab_size=1000, max_position_embeddings=512)
        base.update(kw)
        return cfg_cls(**base)

    m = {}
    # decoders (causal masks, rotary embeddings, RMSNorm, gated MLPs, grouped KV heads)
    m["llama"] = lambda: (T.LlamaModel(dec(T.LlamaConfig, num_key_value_heads=2)), text(2, 40, pad=7))
    m["qwen2"] = lambda: (T.Qwen2Model(dec(T.Qwen2Config, num_key_value_heads=2)), text(1, 48))
    m["qwen3"] = lambda: (T.Qwen3Model(dec(T.Qwen3Config, num_key_value_heads=2, head_dim=64)), text(1, 48))
    m["gemma"] = lambda: (T.GemmaModel(dec(T.GemmaConfig, num_key_value_heads=1, head_dim=64)), text(1, 40))
    m["gemma2"] = lambda: (T.Gemma2Model(dec(T.Gemma2Config, num_key_value_heads=2, head_dim=64,
                                             sliding_window=16)), text(1, 40))
    m["gemma3"] = lambda: (T.Gemma3TextModel(dec(T.Gemma3TextConfig, num_key_value_heads=2, head_dim=64,
                                                 sliding_window=16, num_hidden_layers=3)), text(1, 40))
    m["phi3"] = lambda: (T.Phi3Model(dec(T.Phi3Config, num_key_value_heads=4, pad_token_id=0)), text(1, 40))
    m["granite"] = lambda: (T.GraniteModel(dec(T.GraniteConfig, num_key_value_heads=2)), text(1, 40))
    m["olmo2"] = lambda: (T.Olmo2Model(dec(T.Olmo2Config, num_key_value_heads=4)), text(1, 40))
    m["mistral"] = lambda: (T.MistralModel(dec(T.MistralConfig, num_key_value_heads=2, sliding_window=16)),
                            text(1, 40))
    m["gpt2"] = lambda: (T.GPT2Model(T.GPT2Config(n_embd=256, n_layer=2, n_head=4, vocab_size=1000)),
                         text(2, 32, pad=5))
    m["smollm_lm"] = lambda: (T.LlamaForCausalLM(dec(T.LlamaConfig, num_key_value_heads=1,
                                                     tie_word_embeddings=True)), text(1, 32))
    # encoders
    m["bert"] = lambda: (T.BertModel(T.BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                                  intermediate_size=512, vocab_size=1000)), text(2, 48, pad=9))
    m["modernbert"] = lambda: (T.ModernBertModel(T.ModernBertConfig(
        hidden_size=256, num_hidden_layers=3, num_attention_heads=4, intermediate_size=512, vocab_size=1000,
        local_attention=16, global_attn_every_n_layers=2, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        cls_token_id=1, sep_token_id=2)), text(1, 48))
    m["xlm_roberta"] = lambda: (T.XLMRobertaModel(T.XLMRobertaConfig(
        hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, vocab_size=1000)),
        text(1, 48))
    m["deberta_v2"] = lambda: (T.DebertaV2Model(T.DebertaV2Config(
        hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512, vocab_size=1000)),
        text(1, 48))
    m["t5enc"] = lambda: (T.T5EncoderModel(T.T5Config(d_model=256, d_kv=32, d_ff=512, num_layers=2, num_heads=8,
                                                      vocab_size=1000)), text(1, 48))
    # vision
    m["vit"] = lambda: (T.ViTModel(T.ViTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3,
                                               intermediate_size=384, image_size=96, patch_size=16)),
                        {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["dinov2"] = lambda: (T.Dinov2Model(T.Dinov2Config(hidden_size=192, num_hidden_layers=2, num_attention_heads=3,
                                                        intermediate_size=384, image_size=98, patch_size=14)),
                           {"pixel_values": torch.randn(1, 3, 98, 98)})
    m["siglip_vision"] = lambda: (T.SiglipVisionModel(T.SiglipVisionConfig(
        hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=96,
        patch_size=16)), {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["clip_vision"] = lambda: (T.CLIPVisionModel(T.CLIPVisionConfig(
        hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=384, image_size=96,
        patch_size=16)), {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["convnextv2"] = lambda: (T.ConvNextV2Model(T.ConvNextV2Config(hidden_sizes=[32, 64, 128, 256],
                                                                    depths=[1, 1, 2, 1])),
                               {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["swinv2"] = lambda: (T.Swinv2Model(T.Swinv2Config(image_size=112, embed_dim=32, depths=[1, 1, 2],
                                                        num_heads=[2, 4, 8], window_size=7)),
                           {"pixel_values": torch.randn(1, 3, 112, 112)})
    m["hiera"] = lambda: (T.HieraModel(T.HieraConfig(embed_dim=32, image_size=[128, 128], depths=[1, 1, 1, 1],
                                                     num_heads=[1, 2, 4, 8])),
                          {"pixel_values": torch.randn(1, 3, 128, 128)})
    m["efficientnet"] = lambda: (T.EfficientNetModel(T.EfficientNetConfig(image_size=96, width_coefficient=1.0,
                                                                          depth_coefficient=1.0, hidden_dim=1280)),
                                 {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["detr_backbone_free"] = lambda: (T.DPTModel(T.DPTConfig(hidden_size=192, num_hidden_layers=4,
                                                              num_attention_heads=3, intermediate_size=384,
                                                              image_size=96, patch_size=16,
                                                              out_indices=[0, 1, 2, 3],
                                                              backbone_out_indices=[0, 1, 2, 3])),
                                       {"pixel_values": torch.randn(1, 3, 96, 96)})
    # audio
    m["whisper_enc"] = lambda: (T.WhisperForAudioClassification(T.WhisperConfig(
        d_model=192, encoder_layers=2, encoder_attention_heads=4, encoder_ffn_dim=384, num_mel_bins=40,
        max_source_positions=100)), {"input_features": torch.randn(1, 40, 200)})
    m["wav2vec2"] = lambda: (T.Wav2Vec2Model(T.Wav2Vec2Config(hidden_size=192, num_hidden_layers=2,
                                                              num_attention_heads=4, intermediate_size=384,
                                                              conv_dim=(64,) * 7, num_conv_pos_embeddings=32)),
                             {"input_values": torch.randn(1, 16000)})
    m["hubert"] = lambda: (T.HubertModel(T.HubertConfig(hidden_size=192, num_hidden_layers=2,
                                                        num_attention_heads=4, intermediate_size=384,
                                                        conv_dim=(64,) * 7, num_conv_pos_embeddings=32)),
                           {"input_values": torch.randn(1, 16000)})
    m["ast"] = lambda: (T.ASTModel(T.ASTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3,
                                               intermediate_size=384, max_length=128, num_mel_bins=64)),
                        {"input_values": torch.randn(1, 128, 64)})
    # second round (2026-12-06): a state space model's scan unrolled, a gated relative position
    # bias, patched time series, pyramid, focal-modulation and depth-estimation vision models, CLIP
    # whole. (Mixtral's and Qwen2-MoE's experts do not export with torch 2.15's dynamo exporter
    # (transformers' grouped_mm_fallback), nor EnCodec's padding; a random MobileViTV2's
    # activations fall to subnormals, which time nothing useful.)
    m["mamba"] = lambda: (T.MambaModel(T.MambaConfig(hidden_size=128, num_hidden_layers=2, vocab_size=1000,
                                                     state_size=8, expand=2)), {"input_ids": ids(1, 24)})
    m["wavlm"] = lambda: (T.WavLMModel(T.WavLMConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=4,
                                                     intermediate_size=384, conv_dim=(64,) * 7,
                                                     num_conv_pos_embeddings=32)),
                          {"input_values": torch.randn(1, 16000)})
    m["patchtst"] = lambda: (T.PatchTSTModel(T.PatchTSTConfig(num_input_channels=3, context_length=64,
                                                              patch_length=8, patch_stride=8, d_model=64,
                                                              num_hidden_layers=2, num_attention_heads=4,
                                                              ffn_dim=128)),
                             {"past_values": torch.randn(1, 64, 3)})
    m["pvt_v2"] = lambda: (T.PvtV2Model(T.PvtV2Config(hidden_sizes=[32, 64, 160, 256], depths=[1, 1, 1, 1])),
                           {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["focalnet"] = lambda: (T.FocalNetModel(T.FocalNetConfig(embed_dim=32, depths=[1, 1, 2, 1])),
                             {"pixel_values": torch.randn(1, 3, 96, 96)})
    m["clip"] = lambda: (T.CLIPModel(T.CLIPConfig(
        text_config=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                         vocab_size=1000),
        vision_config=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256,
                           image_size=64, patch_size=16))),
        dict(text(2, 16), pixel_values=torch.randn(2, 3, 64, 64)))
    m["depth_anything"] = lambda: (T.DepthAnythingForDepthEstimation(T.DepthAnythingConfig(
        backbone_config=dict(model_type="dinov2", hidden_size=96, num_hidden_layers=4, num_attention_heads=3,
                             intermediate_size=192, image_size=98, patch_size=14,
                             out_indices=[1, 2, 3, 4], reshape_hidden_states=False),
        reassemble_hidden_size=96, neck_hidden_sizes=[24, 48, 96, 96], fusion_hidden_size=32)),
        {"pixel_values": torch.randn(1, 3, 98, 98)})
    m["segformer"] = lambda: (T.SegformerForSemanticSegmentation(T.SegformerConfig(
        hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], decoder_hidden_size=64, num_labels=5)),
        {"pixel_values": torch.randn(1, 3, 96, 96)})
    return m


def export(name, out, legacy):
    """NAME exported into OUT/NAME.onnx; its inputs saved beside it."""
    import torch
    torch.manual_seed(0)
    model, inputs = models()[name]()
    model.eval()
    with torch.no_grad():  # weights a config leaves zero would make the output zero
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                torch.nn.init.normal_(p, std=0.02)

    class First(torch.nn.Module):  # the first output (last_hidden_state, logits)
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *a):
            kw = dict(zip(inputs, a))
            if "use_cache" in self.m.forward.__code__.co_varnames:
                kw["use_cache"] = False
            o = self.m(**kw)
            if hasattr(o, "keys"):
                return o[list(o.keys())[0]]
            return o[0] if isinstance(o, (tuple, list)) else o

    path = os.path.join(out, name + ".onnx")
    with torch.no_grad():
        if legacy:
            torch.onnx.export(First(model).eval(), tuple(inputs.values()), path, dynamo=False, opset_version=17,
                              input_names=list(inputs), output_names=["output"])
        else:
            torch.onnx.export(First(model).eval(), tuple(inputs.values()), path, dynamo=True,
                              input_names=list(inputs), output_names=["output"])
    for k, v in inputs.items():
        np.save(os.path.join(out, "%s.in.%s.npy" % (name, k)), v.numpy())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/hf2_zoo")
    ap.add_argument("--only", default="", help="comma-separated names")
    ap.add_argument("--legacy", action="store_true", help="the TorchScript exporter (dynamo=False, opset 17)")
    ap.add_argument("--torch-python", required=True)
    ap.add_argument("--export", help=argparse.SUPPRESS)  # in the torch interpreter: one model
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.export:
        export(a.export, a.out, a.legacy)
        return
    sys.path.insert(0, HERE)
    from make_hf_zoo import export_with_feeds
    names = a.only.split(",") if a.only else list(NAMES)
    exporter = "transformers 5 + torch 2 torch.onnx.export(dynamo=%s)" % (not a.legacy)
    entries = []  # --only adds to (or replaces in) a manifest already there
    mpath = os.path.join(a.out, "manifest.json")
    if a.only and os.path.exists(mpath):
        with open(mpath) as f:
            entries = [e for e in json.load(f)["models"] if e["name"] not in names]
    for name in names:
        cmd = [a.torch_python, os.path.abspath(__file__), "--export", name, "--out", a.out,
               "--torch-python", a.torch_python] + (["--legacy"] if a.legacy else [])
        e = export_with_feeds("make_hf2_zoo.py", cmd, a.out, name, "transformers %s" % name)
        if e is None:
            continue
        e["exporter"] = exporter
        entries.append(e)
        with open(mpath, "w") as f:
            json.dump(dict(exporter=exporter, models=entries), f, indent=1)
    print("make_hf2_zoo.py: %d models -> %s" % (len(entries), os.path.abspath(a.out)), file=sys.stderr)


NAMES = ["llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "granite", "olmo2", "mistral", "gpt2",
         "smollm_lm", "bert", "modernbert", "xlm_roberta", "deberta_v2", "t5enc", "vit", "dinov2", "siglip_vision",
         "clip_vision", "convnextv2", "swinv2", "hiera", "efficientnet", "detr_backbone_free", "whisper_enc",
         "wav2vec2", "hubert", "ast", "mamba", "wavlm", "patchtst", "pvt_v2", "focalnet", "clip",
         "depth_anything", "segformer"]

if __name__ == "__main__":
    main()
