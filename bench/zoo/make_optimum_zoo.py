#!/usr/bin/env python3
"""Export transformers architectures through Hugging Face optimum, with dynamic axes and
KV caches, as their users deploy them (random weights, small configs, nothing downloaded).

    python3 bench/zoo/make_optimum_zoo.py [--out DIR] [--only NAME,...] [--torch-python P]

P (default /usr/bin/python3) needs Debian's python3-torch and
`pip install --user --break-system-packages transformers==4.36.2 optimum==1.16.2` plus
onnxruntime for P (`--no-deps onnxruntime==1.20.1 flatbuffers coloredlogs humanfriendly`:
optimum checks its exports with it). Writes DIR/NAME (the saved transformers model) and
DIR/NAME_onnx (optimum's export: model.onnx with past_key_values inputs for decoders,
encoder_model / decoder_model / decoder_with_past_model / decoder_model_merged for
encoder-decoders). bench/zoo/run_optimum_zoo.py runs them against ONNX Runtime.

The other zoos run one shape per model. These are run the way applications do: a
generation loop whose past grows a token a step from an empty one (a dim of 0), left
padding in the attention mask, the merged decoder's If on use_cache_branch, encoder
pasts computed once and fed back, and plain models at two batch sizes and lengths.
"""
import argparse
import os
import subprocess
import sys

SMALL = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, max_position_embeddings=256)

# name: (config class, model class, config keywords, optimum task)
SPECS = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel",
             dict(n_layer=2, n_head=4, n_embd=64, vocab_size=1000, n_positions=256), None),
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(SMALL, num_key_value_heads=2), None),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM", dict(SMALL, rotary_pct=0.5), None),
    "opt": ("OPTConfig", "OPTForCausalLM",
            dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 ffn_dim=128, word_embed_proj_dim=64, max_position_embeddings=256), None),
    "bloom": ("BloomConfig", "BloomForCausalLM",
              dict(vocab_size=1000, hidden_size=64, n_layer=2, n_head=4), None),
    "falcon": ("FalconConfig", "FalconForCausalLM",
               dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    new_decoder_architecture=False, multi_query=True, alibi=False, bias=False),
               None),
    "phi": ("PhiConfig", "PhiForCausalLM", dict(SMALL, partial_rotary_factor=0.5), None),
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM",
                dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                     n_positions=256, n_ctx=256), None),
    "gptj": ("GPTJConfig", "GPTJForCausalLM",
             dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                  n_positions=256), None),
    "mistral": ("MistralConfig", "MistralForCausalLM",
                dict(SMALL, num_key_value_heads=2, sliding_window=16), None),
    "gpt_bigcode": ("GPTBigCodeConfig", "GPTBigCodeForCausalLM",
                    dict(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=256,
                         multi_query=True), None),
    "t5": ("T5Config", "T5ForConditionalGeneration",
           dict(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4,
                decoder_start_token_id=0), "text2text-generation-with-past"),
    "bart": ("BartConfig", "BartForConditionalGeneration",
             dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                  decoder_ffn_dim=128, max_position_embeddings=256),
             "text2text-generation-with-past"),
    "whisper": ("WhisperConfig", "WhisperForConditionalGeneration",
                dict(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                     decoder_ffn_dim=128, num_mel_bins=80, max_source_positions=1500,
                     max_target_positions=256, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                     decoder_start_token_id=0, suppress_tokens=[], begin_suppress_tokens=[]),
                "automatic-speech-recognition-with-past"),
    "bert": ("BertConfig", "BertModel",
             dict(num_hidden_layers=4, num_attention_heads=4, hidden_size=256,
                  intermediate_size=1024, vocab_size=30522), "feature-extraction"),
    "roberta": ("RobertaConfig", "RobertaModel", dict(SMALL, max_position_embeddings=260),
                "feature-extraction"),
    "deberta": ("DebertaV2Config", "DebertaV2Model",
                dict(SMALL, relative_attention=True, position_buckets=32,
                     pos_att_type=["p2c", "c2p"]), "feature-extraction"),
    "vit": ("ViTConfig", "ViTForImageClassification",
            dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, image_size=64, patch_size=8, num_labels=10),
            "image-classification"),
}


def export(out, names):
    import torch
    import transformers as T
    from optimum.exporters.onnx import main_export
    for name in names:
        cfg, cls, kw, task = SPECS[name]
        torch.manual_seed(0)
        src = os.path.join(out, name)
        try:
            getattr(T, cls)(getattr(T, cfg)(**kw)).eval().save_pretrained(src)
            main_export(src, output=src + "_onnx", task=task or "text-generation-with-past",
                        opset=14, device="cpu", do_validation=False)
            print("exported", name, flush=True)
        except Exception as e:  # one architecture's failure is reported, not fatal
            print("FAILED", name, repr(e)[:300], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/optimum_zoo")
    ap.add_argument("--only", default="")
    ap.add_argument("--torch-python", default="/usr/bin/python3")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    names = [n for n in a.only.split(",") if n] or list(SPECS)
    os.makedirs(a.out, exist_ok=True)
    if a.inner:
        export(a.out, names)
        return
    sys.exit(subprocess.call([a.torch_python, os.path.abspath(__file__), "--inner", "--out",
                              a.out, "--only", ",".join(names)]))


if __name__ == "__main__":
    main()
