#!/usr/bin/env python3
"""Export ultralytics' detectors (random weights) through its own exporter as a zoo.

    python3 bench/zoo/make_ultralytics_zoo.py [--out DIR] [--only NAME,...] [--torch-python P]

ultralytics is how most YOLO models reach ONNX: `YOLO(...).export(format="onnx")`
fuses Conv + BatchNorm, switches each head to its export form (anchors and
strides computed in the graph, boxes decoded to xywh, DFL as a Softmax and a
1x1 convolution, masks' prototypes, keypoints, rotated boxes) and calls
torch.onnx.export. This zoo runs that exporter on every family its version
ships: YOLOv3-tiny, v5u, v6, v8 (detect, P2 / P6 heads, GhostNet blocks,
segment, pose, classify), v9 (GELAN, ADown), v10 (NMS-free: TopK and
GatherElements in the graph), YOLO11 (C2PSA attention; all five tasks),
YOLO12 (area attention), YOLO26 (end-to-end head; all tasks) and RT-DETR
(a transformer decoder with multi-scale deformable attention as GridSample),
plus the exporter's options users pick: `dynamic=True` (every axis
symbolic), `nms=True` (NMS written into the graph) and an opset-12 export.
Each model is built from its yaml (nothing downloaded), at 320 x 320
(640 / 2; P6 models at 384), one image in [0, 1]. References are ONNX
Runtime's outputs with graph optimisations off (make_hf_zoo.finish).

P (default /usr/bin/python3) needs Debian's python3-torch and ultralytics on
its path, e.g. `pip install --target DIR --no-deps ultralytics
opencv-python-headless ultralytics-thop` and PYTHONPATH=DIR (8.4.190 here);
the python3 on PATH needs onnxruntime and onnx. Writes make_zoo.py's format
into DIR (default build/ultralytics_zoo): bench/zoo/run_zoo.py checks it,
bench/zoo.py --zoo DIR times it. A model the exporter or ONNX Runtime cannot
take is reported and skipped.
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# zoo name -> (yaml, export options beyond format / imgsz / opset / device)
MODELS = {
    "yolov3_tiny": ("yolov3-tiny.yaml", {}),
    "yolov5nu": ("yolov5n.yaml", {}),
    "yolov6n": ("yolov6n.yaml", {}),
    "yolov8n": ("yolov8n.yaml", {}),
    "yolov8n_p2": ("yolov8n-p2.yaml", {}),
    "yolov8n_p6": ("yolov8n-p6.yaml", {"imgsz": 384}),
    "yolov8n_ghost": ("yolov8n-ghost.yaml", {}),
    "yolov8n_seg": ("yolov8n-seg.yaml", {}),
    "yolov8n_pose": ("yolov8n-pose.yaml", {}),
    "yolov8n_cls": ("yolov8n-cls.yaml", {"imgsz": 224}),
    "yolov9t": ("yolov9t.yaml", {}),
    "yolov10n": ("yolov10n.yaml", {}),
    "yolo11n": ("yolo11n.yaml", {}),
    "yolo11n_seg": ("yolo11n-seg.yaml", {}),
    "yolo11n_pose": ("yolo11n-pose.yaml", {}),
    "yolo11n_obb": ("yolo11n-obb.yaml", {}),
    "yolo11n_cls": ("yolo11n-cls.yaml", {"imgsz": 224}),
    "yolo11n_dynamic": ("yolo11n.yaml", {"dynamic": True}),
    "yolo11n_nms": ("yolo11n.yaml", {"nms": True}),
    "yolo11n_opset12": ("yolo11n.yaml", {"opset": 12}),
    "yolo12n": ("yolo12n.yaml", {}),
    "yolo26n": ("yolo26n.yaml", {}),
    "yolo26n_seg": ("yolo26n-seg.yaml", {}),
    "yolo26n_pose": ("yolo26n-pose.yaml", {}),
    "yolo26n_obb": ("yolo26n-obb.yaml", {}),
    "rtdetr_l": ("rtdetr-l.yaml", {}),
}


def export(name, out):
    import shutil
    import tempfile

    import torch
    from ultralytics import RTDETR, YOLO
    torch.manual_seed(0)
    yaml, opts = MODELS[name]
    opts = dict(opts)
    size = opts.pop("imgsz", 320)
    opset = opts.pop("opset", 17)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)  # the exporter writes beside the yaml's name
        try:
            model = (RTDETR if yaml.startswith("rtdetr") else YOLO)(yaml)
            path = model.export(format="onnx", imgsz=size, opset=opset, simplify=False, device="cpu", **opts)
            shutil.copy(path, os.path.join(out, "ul_%s.onnx" % name))
        finally:
            os.chdir(cwd)
    rng = np.random.default_rng(0)
    np.save(os.path.join(out, "ul_%s.in.images.npy" % name), rng.random((1, 3, size, size), dtype=np.float32))


def main():
    sys.path.insert(0, HERE)
    from make_hf_zoo import export_each, export_main
    a = export_main(__doc__, "build/ultralytics_zoo", lambda name, out: export(name, os.path.abspath(out)))
    if a is None:
        return

    def adjust(name, e):
        if e["ort_opt_err"] > 5e-5:
            # outputs in pixels (boxes up to 320): checked at twice what ONNX
            # Runtime's own optimised graph reproduces
            e["tol"] = max(1e-4, 2 * e["ort_opt_err"])
    export_each(__file__, a.only.split(",") if a.only else list(MODELS), a.out, a.torch_python,
                "ultralytics 8.4 + torch.onnx.export", lambda n: ("ul_" + n, "ultralytics " + n), adjust,
                input_name="images")


if __name__ == "__main__":
    main()
