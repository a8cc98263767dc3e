#!/usr/bin/env python3
"""Export timm's image architectures (random weights) as a zoo.

    python3 bench/zoo/make_timm_zoo.py [--out DIR] [--only NAME,...] [--torch-python P]

timm (pytorch-image-models) holds most image architectures people deploy and
many written nowhere else: SAME-padded TensorFlow ports (tf_efficientnet_*,
tf_mobilenetv3_*), reparameterisable nets (RepVGG, MobileOne, FastViT), attention
in many forms (CaiT's class attention, XCiT's cross-covariance, CrossViT, PiT's
pooling, Twins, PVTv2, CoaT, MaxViT, GCViT, EdgeNeXt, EfficientFormer, LeViT,
EVA-02's rotary embeddings), self-attention convolutions (BoTNet, HaloNet,
LambdaNet), MLPs (gMLP, ResMLP), normalisation-free nets, split attention
(ResNeSt, SKNet), HRNet's multi-resolution fusion and more. Each model is built
with pretrained=False (nothing downloaded), in eval mode, and exported through
torch.onnx.export at opset 17 at its own input size (the size its positional
embeddings fix), one image. References are ONNX Runtime's outputs with graph
optimisations off (make_hf_zoo.finish). P (default /usr/bin/python3) needs
Debian's python3-torch and `pip install --user --break-system-packages --no-deps
timm==0.9.16` (the last timm that supports torch 1.13); the python3 on PATH
needs onnxruntime and onnx. Writes make_zoo.py's format into DIR (default
build/timm_zoo): bench/zoo/run_zoo.py checks it, bench/zoo.py --zoo DIR times it.
A model the exporter or ONNX Runtime cannot take is reported and skipped.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# timm names, one or two small members of each family
MODELS = [
    "resnet10t", "seresnext26d_32x4d", "skresnet18", "resnest14d", "res2net50_26w_4s",
    "ecaresnet26t", "resnetblur18", "regnetx_002", "regnety_002", "regnetz_b16", "dla34",
    "dpn48b", "efficientnet_b0", "efficientnetv2_rw_t", "tf_efficientnet_lite0",
    "tf_efficientnetv2_b0", "tf_mobilenetv3_small_minimal_100", "mobilenetv3_small_050",
    "mixnet_s", "tf_mixnet_s", "mnasnet_small", "fbnetv3_b", "lcnet_050", "ghostnet_050",
    "hardcorenas_a", "ese_vovnet19b_dw", "cs3darknet_s", "rexnet_100", "tinynet_e",
    "gernet_s", "repvgg_a0", "mobileone_s0", "fastvit_t8", "efficientformer_l1",
    "efficientformerv2_s0", "levit_128s", "vit_tiny_patch16_224", "deit_tiny_distilled_patch16_224",
    "cait_xxs24_224", "xcit_nano_12_p16_224", "crossvit_tiny_240", "pit_ti_224", "convit_tiny",
    "swinv2_cr_tiny_ns_224", "coat_lite_tiny", "pvt_v2_b0", "twins_pcpvt_small",
    "poolformer_s12", "gmlp_ti16_224", "resmlp_12_224", "gcvit_xxtiny", "edgenext_xx_small",
    "mobilevit_xxs", "mobilevitv2_050", "nf_regnet_b0", "hrnet_w18_small", "selecsls42b",
    "botnet26t_256", "halonet26t", "lambda_resnet26t", "visformer_tiny", "convnextv2_atto",
    "inception_next_tiny", "coatnet_nano_rw_224", "maxvit_nano_rw_256", "davit_tiny",
    "hgnetv2_b0", "repghostnet_050", "eva02_tiny_patch14_224", "sequencer2d_s", "nest_tiny",
    "tresnet_m", "legacy_xception", "inception_v4", "focalnet_tiny_srf", "volo_d1_224",
]


def export(name, out):
    import timm
    import torch
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    size = model.pretrained_cfg.get("input_size", (3, 224, 224))
    x = torch.randn(1, *size)
    with torch.no_grad():
        torch.onnx.export(model, (x,), os.path.join(out, "timm_%s.onnx" % name), opset_version=17,
                          do_constant_folding=True, input_names=["input"], output_names=["output"])
    np.save(os.path.join(out, "timm_%s.in.input.npy" % name), x.numpy())


def main():
    sys.path.insert(0, HERE)
    from make_hf_zoo import export_each, export_main
    a = export_main(__doc__, "build/timm_zoo", export)
    if a is None:
        return

    def adjust(name, e):
        if e["ort_opt_err"] > 5e-5:
            # random weights that ONNX Runtime's own optimised graph
            # reproduces only to ort_opt_err (efficientnetv2_rw_t: 7e-4,
            # activations in the hundreds) are checked at twice that
            e["tol"] = max(1e-4, 2 * e["ort_opt_err"])
    export_each(__file__, a.only.split(",") if a.only else MODELS, a.out, a.torch_python,
                "timm + torch.onnx.export", lambda n: ("timm_" + n, "timm " + n), adjust)

if __name__ == "__main__":
    main()
