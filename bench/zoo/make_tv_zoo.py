#!/usr/bin/env python3
"""Export torchvision's architectures (random weights) as a zoo.

    python3 bench/zoo/make_tv_zoo.py [--out DIR] [--only NAME,...] [--torch-python P]

Debian's python3-torch comes with torchvision 0.14; every model is built with
weights=None (nothing downloaded), put in eval mode, and exported through
torch.onnx.export at opset 17 at a small input size, as deployments export them.
Classification, segmentation heads and the grouped (ResNeXt, RegNet), depthwise
(MobileNet, EfficientNet, MnasNet), channel-shuffle, dense, inception and window
attention (Swin, MaxViT) forms that real models use; a video net of 3-d
convolutions (R3D-18); and detectors (SSDlite, Faster R-CNN, RetinaNet, FCOS,
Mask and Keypoint R-CNN), whose post-processing (NonZero, NonMaxSuppression,
RoIAlign, TopK; Mask R-CNN's paste loop and Keypoint R-CNN's heatmap loop, Loops
whose bodies resize to box sizes) makes shapes that depend on the data. References are ONNX
Runtime's outputs with graph optimisations off (make_hf_zoo.finish); the python3 on
PATH needs onnxruntime and onnx, P (default /usr/bin/python3) torch and
torchvision. Writes make_zoo.py's format into DIR (default build/tv_zoo):
bench/zoo.py --zoo DIR times it against ONNX Runtime, bench/zoo/run_zoo.py checks it.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (constructor, input size, opset)
MODELS = {
    "tv_resnet18": ("resnet18", 128),
    "tv_resnext50": ("resnext50_32x4d", 96),
    "tv_mobilenet_v2": ("mobilenet_v2", 128),
    "tv_mobilenet_v3_l": ("mobilenet_v3_large", 128),
    "tv_efficientnet_b0": ("efficientnet_b0", 128),
    "tv_efficientnet_v2_s": ("efficientnet_v2_s", 96),
    "tv_regnet_y_400mf": ("regnet_y_400mf", 128),
    "tv_shufflenet_v2": ("shufflenet_v2_x1_0", 128),
    "tv_squeezenet1_1": ("squeezenet1_1", 128),
    "tv_mnasnet0_5": ("mnasnet0_5", 128),
    "tv_densenet121": ("densenet121", 96),
    "tv_googlenet": ("googlenet", 128),
    "tv_convnext_tiny": ("convnext_tiny", 96),
    "tv_swin_t": ("swin_t", 128),
    "tv_maxvit_t": ("maxvit_t", 224),
    "tv_deeplabv3_mnv3": ("segmentation.deeplabv3_mobilenet_v3_large", 128),
    "tv_lraspp_mnv3": ("segmentation.lraspp_mobilenet_v3_large", 128),
    # an input shape instead of a size: a clip of 8 frames (3-d convolutions)
    "tv_r3d_18": ("video.r3d_18", (1, 3, 8, 64, 64)),
    "tv_inception_v3": ("inception_v3", 160),
    # detection: boxes, scores and labels (NMS, RoIAlign, TopK, dynamic shapes)
    "tv_ssdlite": ("detection.ssdlite320_mobilenet_v3_large", 320),
    "tv_fasterrcnn_mnv3": ("detection.fasterrcnn_mobilenet_v3_large_320_fpn", 320),
    # at 320x320 (min_size = max_size = 320); random weights keep few boxes
    # above the usual score thresholds, so the R-CNNs and Faster R-CNN keep
    # every box (0.0)
    "tv_retinanet": ("detection.retinanet_resnet50_fpn", 320),
    "tv_fcos": ("detection.fcos_resnet50_fpn", 320),
    "tv_maskrcnn": ("detection.maskrcnn_resnet50_fpn", 320),
    "tv_keypointrcnn": ("detection.keypointrcnn_resnet50_fpn", 320),
}


def export(name, out):
    import torch
    import torchvision
    torch.manual_seed(0)
    ctor, size = MODELS[name]
    mod = torchvision.models
    for part in ctor.split(".")[:-1]:
        mod = getattr(mod, part)
    kw = {"weights": None}
    if ctor == "googlenet":
        kw.update(aux_logits=False, init_weights=True)
    if ctor == "inception_v3":
        kw.update(aux_logits=False, init_weights=True)
    if ctor.startswith("segmentation.") or ctor.startswith("detection."):
        kw.update(weights_backbone=None)
    if ctor in ("detection.retinanet_resnet50_fpn", "detection.fcos_resnet50_fpn"):
        kw.update(min_size=size, max_size=size)
    if ctor in ("detection.maskrcnn_resnet50_fpn", "detection.keypointrcnn_resnet50_fpn"):
        kw.update(min_size=size, max_size=size, box_score_thresh=0.0)
    # random weights score every box under the usual thresholds: the
    # outputs would be empty, and the check would check nothing. (FCOS
    # keeps its threshold: with none, its 97th and 98th boxes score within
    # 1e-7 of each other, and which comes first is rounding.)
    if ctor == "detection.fasterrcnn_mobilenet_v3_large_320_fpn":
        kw.update(box_score_thresh=0.0)
    model = getattr(mod, ctor.split(".")[-1])(**kw).eval()

    class First(torch.nn.Module):  # segmentation models return a dict
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            if ctor.startswith("detection."):  # a list of images in, of dicts out
                o = self.m([x[0]])[0]
                return tuple(o[k] for k in self.names)
            o = self.m(x)
            return o["out"] if isinstance(o, dict) else o

    x = torch.randn(*size) if isinstance(size, tuple) else torch.randn(1, 3, size, size)
    det = ctor.startswith("detection.")
    if det:
        x = torch.rand(1, 3, size, size)  # images in [0, 1]
    first = First(model).eval()
    with torch.no_grad():
        # boxes, scores, labels, then what else the model gives (masks, keypoints)
        keys = list(model([x[0]])[0]) if det else []
        first.names = ["boxes", "scores", "labels"] + sorted(set(keys) - {"boxes", "scores", "labels"})
        torch.onnx.export(first, (x,), os.path.join(out, name + ".onnx"),
                          opset_version=17, do_constant_folding=True, input_names=["input"],
                          output_names=first.names if det else ["output"])
    np.save(os.path.join(out, "%s.in.input.npy" % name), x.numpy())


def main():
    sys.path.insert(0, HERE)
    from make_hf_zoo import export_each, export_main
    a = export_main(__doc__, "build/tv_zoo", export)
    if a is None:
        return

    def adjust(name, e):
        # which of equal-scored detections a model keeps, and their order,
        # is rounding (run_zoo.untied_rows): Faster R-CNN's random weights
        # score all of its 100 boxes alike
        names = [o["name"] for o in e["outputs"]]
        for o in e["outputs"] if "scores" in names else []:
            if o["name"] != "scores":
                o["ranked_by"] = "scores"
        if name == "tv_keypointrcnn":
            # each heatmap is resampled to its box's ceil(width) x
            # ceil(height): a box at a whole number of pixels in the
            # reference may round to the next grid (run_zoo.unsized_rows)
            for o in e["outputs"]:
                if o["name"] in ("keypoints", "keypoints_scores"):
                    o["sized_by"] = "boxes"
            # its scores come from features sampled at box corners that
            # carry the backbone's rounding: ONNX Runtime's optimised graph
            # is 7.4e-5 off its unoptimised one, onednn's convolutions 1.0e-4
            e["tol"] = 2e-4
        if name == "tv_maskrcnn":
            # masks are resampled at box corners that carry the backbone's
            # rounding: ONNX Runtime's own optimised graph is 2.3e-4 off its
            # unoptimised one, Plinth's cpu module 4e-4, onednn's Winograd
            # convolutions 1.5e-3 (probabilities in [0, 1])
            e["tol"] = 2e-3
    export_each(__file__, a.only.split(",") if a.only else list(MODELS), a.out, a.torch_python,
                "torchvision + torch.onnx.export", lambda n: (n, "torchvision %s" % MODELS[n][0]),
                adjust)

if __name__ == "__main__":
    main()
