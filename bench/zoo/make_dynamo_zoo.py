#!/usr/bin/env python3
"""Export torchvision's architectures (random weights) with PyTorch 2's dynamo
exporter, as a zoo.

    python3 bench/zoo/make_dynamo_zoo.py --torch-python P [--out DIR] [--only NAME,...]

torch.onnx.export(..., dynamo=True) is the exporter current PyTorch uses by
default: it writes opset 18+ graphs (ReduceMean's axes an input, Split's
num_outputs, Resize 18...), the weights in external data (NAME.onnx.data) and
its own rewrites (onnxscript's optimizer), a different exporter from the
TorchScript one the other zoos (make_tv_zoo.py) go through. Debian's torch
1.13 has no dynamo exporter: P is a python with torch >= 2.5, torchvision and
onnxscript (`python3 -m venv /tmp/t2env && /tmp/t2env/bin/pip install torch
torchvision onnxscript onnx`). References are ONNX Runtime's outputs with
graph optimisations off (make_hf_zoo.finish; the python3 on PATH needs
onnxruntime and onnx). Writes make_zoo.py's format into DIR (default
build/dynamo_zoo): bench/zoo/run_zoo.py checks it, bench/zoo.py times it.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (constructor expression on torchvision.models as tv, input shape)
MODELS = {
    "dz_resnet18": ("tv.resnet18()", (1, 3, 96, 96)),
    "dz_mobilenet_v3_s": ("tv.mobilenet_v3_small()", (1, 3, 96, 96)),
    "dz_efficientnet_b0": ("tv.efficientnet_b0()", (1, 3, 96, 96)),
    "dz_convnext_tiny": ("tv.convnext_tiny()", (1, 3, 64, 64)),
    "dz_swin_t": ("tv.swin_t()", (1, 3, 96, 96)),
    "dz_vit_b_16": ("tv.vit_b_16(image_size=64)", (1, 3, 64, 64)),
    "dz_regnet_y": ("tv.regnet_y_400mf()", (1, 3, 96, 96)),
    "dz_shufflenet": ("tv.shufflenet_v2_x1_0()", (1, 3, 96, 96)),
    "dz_densenet121": ("tv.densenet121()", (1, 3, 64, 64)),
    "dz_googlenet": ("tv.googlenet(aux_logits=False, init_weights=True)", (1, 3, 96, 96)),
    "dz_inception": ("tv.inception_v3(aux_logits=False, init_weights=True)", (1, 3, 96, 96)),
    "dz_mnasnet": ("tv.mnasnet0_5()", (1, 3, 96, 96)),
    "dz_maxvit": ("tv.maxvit_t()", (1, 3, 224, 224)),
    "dz_deeplabv3": ("tv.segmentation.deeplabv3_mobilenet_v3_large(weights=None, "
                     "weights_backbone=None, aux_loss=False)", (1, 3, 96, 96)),
    "dz_lraspp": ("tv.segmentation.lraspp_mobilenet_v3_large(weights=None, "
                  "weights_backbone=None)", (1, 3, 96, 96)),
    "dz_r3d": ("tv.video.r3d_18()", (1, 3, 8, 64, 64)),
}

EXPORT = r'''
import os, sys, warnings, numpy as np, torch, torchvision
warnings.simplefilter("ignore")
tv = torchvision.models
out, name, ctor, shape = sys.argv[1], sys.argv[2], sys.argv[3], eval(sys.argv[4])
class First(torch.nn.Module):  # segmentation models return a dict
    def __init__(s, m):
        super().__init__()
        s.m = m
    def forward(s, x):
        o = s.m(x)
        return o["out"] if isinstance(o, dict) else o
torch.manual_seed(0)
m = First(eval(ctor).eval()).eval()
# weights a constructor leaves all zero (ViT's head) would make the output
# zero whatever the rest computes: drawn instead, so the check checks
with torch.no_grad():
    for p in m.parameters():
        if p.dim() > 1 and not p.any():
            torch.nn.init.normal_(p, std=0.02)
x = torch.randn(*shape)
with torch.no_grad():
    torch.onnx.export(m, (x,), os.path.join(out, name + ".onnx"), dynamo=True,
                      input_names=["input"], output_names=["output"])
np.save(os.path.join(out, name + ".in.input.npy"), x.numpy())
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/dynamo_zoo")
    ap.add_argument("--only", default="")
    ap.add_argument("--torch-python", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    sys.path.insert(0, HERE)
    from make_hf_zoo import finish
    entries = []
    for name in (a.only.split(",") if a.only else list(MODELS)):
        ctor, shape = MODELS[name]
        print("make_dynamo_zoo.py: %s" % name, file=sys.stderr, flush=True)
        p = subprocess.run([a.torch_python, "-c", EXPORT, a.out, name, ctor, repr(shape)],
                           capture_output=True, text=True)
        if p.returncode != 0:  # an exporter gap is reported, not fatal
            print("make_dynamo_zoo.py: %s: export failed: %s" % (name, p.stderr.strip()[-400:]),
                  file=sys.stderr)
            continue
        feeds = {"input": np.load(os.path.join(a.out, "%s.in.input.npy" % name))}
        e = finish(a.out, name, "torchvision %s (dynamo)" % ctor.split("(")[0][3:], feeds)
        e["exporter"] = "torchvision + torch.onnx.export(dynamo=True)"
        entries.append(e)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(dict(exporter="torch.onnx.export(dynamo=True)", models=entries), f, indent=1)
    print("make_dynamo_zoo.py: %d models -> %s" % (len(entries), os.path.abspath(a.out)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
