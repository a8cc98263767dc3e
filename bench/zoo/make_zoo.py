#!/usr/bin/python3
"""Export Plinth's model zoo: small, deterministic PyTorch models of many architectures, in ONNX.

Run with Debian's interpreter (python3-torch 1.13, python3-onnx 1.12; no torchvision needed):

    /usr/bin/python3 bench/zoo/make_zoo.py [--out DIR] [--only NAME,...] [--fast] [--list]

Every architecture is written here with torch.nn, after its published structure but at a small
width and resolution so the whole zoo exports in well under a minute and runs fast. Weights are
PyTorch's default random init under a fixed seed (BatchNorm running statistics are calibrated on a
fixed random batch so activations stay near unit scale); exports are eval mode, static shapes,
constant folding on, one thread (so the reference output is reproducible).

For every model NAME it writes into DIR (default build/zoo):
  NAME.onnx                 the exported model
  NAME.in.<input>.npy       the fixed-seed input, one file per graph input
  NAME.ref.<output>.npy     PyTorch's output for it, one file per graph output
and DIR/manifest.json: one entry per model (name, architecture, opset, node count, op histogram,
input/output names and files) that run_zoo.py reads. Besides the zoo it exports a few tiny
reproducers (REPROS, names repro_*) of the failures the zoo found.

--fast exports only a quick subset (the CTest test `zoo.models` exports them all).
"""
import argparse
import collections
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
DEFAULT_OPSET = 13


def bn_act(cin, cout, k=3, s=1, p=None, groups=1, act=nn.ReLU, dilation=1):
    if p is None:
        p = dilation * (k // 2)
    layers = [nn.Conv2d(cin, cout, k, s, p, groups=groups, dilation=dilation, bias=False),
              nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


# ------------------------------------------------------------------ classification backbones


class Bottleneck(nn.Module):
    """ResNet-50 bottleneck: 1x1 reduce, 3x3 (stride here, as in torchvision v1.5), 1x1 expand x4."""
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * self.expansion
        self.c1 = bn_act(cin, width, 1)
        self.c2 = bn_act(width, width, 3, stride)
        self.c3 = bn_act(width, cout, 1, act=None)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = bn_act(cin, cout, 1, stride, 0, act=None)

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        return F.relu(self.c3(self.c2(self.c1(x))) + idt)


class ResNet50ish(nn.Module):
    """ResNet-50 layout (stem 7x7/2 + maxpool, stages of bottlenecks, GAP, FC) at width 1/4 and
    depths [1, 2, 2, 1]."""

    def __init__(self, base=16, depths=(1, 2, 2, 1), classes=100):
        super().__init__()
        self.stem = nn.Sequential(bn_act(3, base, 7, 2, 3), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for i, d in enumerate(depths):
            w = base * 2 ** i
            for j in range(d):
                blocks.append(Bottleneck(cin, w, 2 if (j == 0 and i > 0) else 1))
                cin = w * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VGGish(nn.Module):
    """VGG-11 layout (3x3 convs, 2x2 maxpools, three FC layers with dropout) at width 1/8."""

    def __init__(self, cfg=(8, "M", 16, "M", 32, 32, "M", 64, 64, "M", 64, 64, "M"), classes=10):
        super().__init__()
        layers, cin = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(cin * 2 * 2, 128), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(128, 128), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(128, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size=4):
        super().__init__()
        self.net = nn.Sequential(nn.BatchNorm2d(cin), nn.ReLU(), nn.Conv2d(cin, bn_size * growth, 1, bias=False),
                                 nn.BatchNorm2d(bn_size * growth), nn.ReLU(),
                                 nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False))

    def forward(self, feats):
        return self.net(torch.cat(feats, 1))


class DenseNetish(nn.Module):
    """DenseNet-121 pattern (pre-activation BN-ReLU-Conv, dense concat, transitions with 2x2
    avgpool) with growth 8 and blocks of [3, 3, 3]."""

    def __init__(self, growth=8, blocks=(3, 3, 3), classes=10):
        super().__init__()
        c = 2 * growth
        self.stem = nn.Sequential(nn.Conv2d(3, c, 7, 2, 3, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.ModuleList()
        self.trans = nn.ModuleList()
        for i, n in enumerate(blocks):
            layers = nn.ModuleList()
            for _ in range(n):
                layers.append(DenseLayer(c, growth))
                c += growth
            self.blocks.append(layers)
            if i != len(blocks) - 1:
                self.trans.append(nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False),
                                                nn.AvgPool2d(2, 2)))
                c //= 2
        self.norm = nn.BatchNorm2d(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for i, layers in enumerate(self.blocks):
            feats = [x]
            for layer in layers:
                feats.append(layer(feats))
            x = torch.cat(feats, 1)
            if i < len(self.trans):
                x = self.trans[i](x)
        x = F.relu(self.norm(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Fire(nn.Module):
    def __init__(self, cin, squeeze, e1, e3):
        super().__init__()
        self.s = nn.Conv2d(cin, squeeze, 1)
        self.e1 = nn.Conv2d(squeeze, e1, 1)
        self.e3 = nn.Conv2d(squeeze, e3, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.s(x))
        return torch.cat([F.relu(self.e1(x)), F.relu(self.e3(x))], 1)


class SqueezeNetish(nn.Module):
    """SqueezeNet 1.1 (fire modules, ceil-mode maxpools, conv classifier + GAP) at width 1/2."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 32, 3, 2), nn.ReLU(), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(32, 8, 32, 32), Fire(64, 8, 32, 32), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), nn.MaxPool2d(3, 2, ceil_mode=True),
            Fire(128, 24, 96, 96), Fire(192, 32, 128, 128))
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(256, classes, 1), nn.ReLU(),
                                        nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def channel_shuffle(x, groups):
    b, c, h, w = x.shape
    x = x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(b, c, h, w)


class ShuffleUnit(nn.Module):
    """ShuffleNet V2 unit: channel split (stride 1) or two branches (stride 2), concat, shuffle."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        bc = cout // 2
        if stride > 1:
            self.b1 = nn.Sequential(bn_act(cin, cin, 3, stride, groups=cin, act=None), bn_act(cin, bc, 1))
            bin_ = cin
        else:
            self.b1 = None
            bin_ = bc
        self.b2 = nn.Sequential(bn_act(bin_, bc, 1), bn_act(bc, bc, 3, stride, groups=bc, act=None),
                                bn_act(bc, bc, 1))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.b2(x2)), 1)
        else:
            out = torch.cat((self.b1(x), self.b2(x)), 1)
        return channel_shuffle(out, 2)


class ShuffleNetV2ish(nn.Module):
    def __init__(self, widths=(24, 48, 96, 192), repeats=(2, 3, 2), classes=10):
        super().__init__()
        self.stem = nn.Sequential(bn_act(3, widths[0], 3, 2), nn.MaxPool2d(3, 2, 1))
        units, cin = [], widths[0]
        for w, r in zip(widths[1:], repeats):
            units.append(ShuffleUnit(cin, w, 2))
            units += [ShuffleUnit(w, w, 1) for _ in range(r - 1)]
            cin = w
        self.units = nn.Sequential(*units)
        self.head = bn_act(cin, 256, 1)
        self.fc = nn.Linear(256, classes)

    def forward(self, x):
        x = self.head(self.units(self.stem(x)))
        return self.fc(x.mean([2, 3]))


class SqueezeExcite(nn.Module):
    def __init__(self, c, rc, act=nn.SiLU, gate=nn.Sigmoid):
        super().__init__()
        self.fc1 = nn.Conv2d(c, rc, 1)
        self.fc2 = nn.Conv2d(rc, c, 1)
        self.act = act()
        self.gate = gate()

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * self.gate(self.fc2(self.act(self.fc1(s))))


class MBConv(nn.Module):
    """EfficientNet MBConv: 1x1 expand (SiLU), depthwise kxk (SiLU), squeeze-excite, 1x1 project,
    residual when shapes allow."""

    def __init__(self, cin, cout, k, s, expand):
        super().__init__()
        mid = cin * expand
        layers = []
        if expand != 1:
            layers.append(bn_act(cin, mid, 1, act=nn.SiLU))
        layers += [bn_act(mid, mid, k, s, groups=mid, act=nn.SiLU), SqueezeExcite(mid, max(1, cin // 4)),
                   bn_act(mid, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.res = s == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


class EfficientNetish(nn.Module):
    """EfficientNet-B0 stage layout (expand ratios, 3x3/5x5 kernels, strides) at width 1/2 and one
    block per stage, except two in stage 2."""

    def __init__(self, classes=10):
        super().__init__()
        cfg = [(1, 8, 1, 1, 3), (6, 12, 2, 2, 3), (6, 20, 1, 2, 5), (6, 40, 1, 2, 3),
               (6, 56, 1, 1, 5), (6, 96, 1, 2, 5), (6, 160, 1, 1, 3)]
        self.stem = bn_act(3, 16, 3, 2, act=nn.SiLU)
        blocks, cin = [], 16
        for e, c, n, s, k in cfg:
            for i in range(n):
                blocks.append(MBConv(cin, c, k, s if i == 0 else 1, e))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.head = bn_act(cin, 320, 1, act=nn.SiLU)
        self.fc = nn.Linear(320, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class MobileNetV3Block(nn.Module):
    def __init__(self, cin, mid, cout, k, s, se, act):
        super().__init__()
        layers = [bn_act(cin, mid, 1, act=act), bn_act(mid, mid, k, s, groups=mid, act=act)]
        if se:
            layers.append(SqueezeExcite(mid, mid // 4, act=nn.ReLU, gate=nn.Hardsigmoid))
        layers.append(bn_act(mid, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.res = s == 1 and cin == cout

    def forward(self, x):
        y = self.block(x)
        return x + y if self.res else y


class MobileNetV3ish(nn.Module):
    """MobileNetV3-Small pattern: hardswish, hard-sigmoid squeeze-excite, inverted residuals."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = bn_act(3, 16, 3, 2, act=nn.Hardswish)
        self.blocks = nn.Sequential(
            MobileNetV3Block(16, 16, 16, 3, 2, True, nn.ReLU),
            MobileNetV3Block(16, 72, 24, 3, 2, False, nn.ReLU),
            MobileNetV3Block(24, 88, 24, 3, 1, False, nn.ReLU),
            MobileNetV3Block(24, 96, 40, 5, 2, True, nn.Hardswish),
            MobileNetV3Block(40, 240, 40, 5, 1, True, nn.Hardswish))
        self.head = bn_act(40, 144, 1, act=nn.Hardswish)
        self.fc = nn.Sequential(nn.Linear(144, 256), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(256, classes))

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class LayerNorm2d(nn.Module):
    """ConvNeXt's channels-first LayerNorm: normalise over C with mean/var written out."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, permute to NHWC, LayerNorm, Linear 4x, GELU, Linear, layer scale, residual."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6)
        self.pw1 = nn.Linear(c, 4 * c)
        self.pw2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.5))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.pw2(F.gelu(self.pw1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtish(nn.Module):
    """ConvNeXt-T layout (4x4/4 patchify stem, LayerNorm, 2x2/2 downsampling) at dims 24..192 and
    depths [1, 1, 2, 1]."""

    def __init__(self, dims=(24, 48, 96, 192), depths=(1, 1, 2, 1), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], 4, 4), LayerNorm2d(dims[0]))
        self.stages = nn.ModuleList()
        for i, (d, n) in enumerate(zip(dims, depths)):
            mods = []
            if i > 0:
                mods += [LayerNorm2d(dims[i - 1]), nn.Conv2d(dims[i - 1], d, 2, 2)]
            mods += [ConvNeXtBlock(d) for _ in range(n)]
            self.stages.append(nn.Sequential(*mods))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.fc = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = self.stem(x)
        for s in self.stages:
            x = s(x)
        return self.fc(self.norm(x.mean([-2, -1])))


# ------------------------------------------------------------------ detection


class TinyBackbone(nn.Module):
    """ResNet-ish basic-block backbone returning C3, C4, C5 (strides 8, 16, 32)."""

    def __init__(self, w=16):
        super().__init__()
        self.stem = bn_act(3, w, 3, 2)
        self.s2 = nn.Sequential(bn_act(w, 2 * w, 3, 2), bn_act(2 * w, 2 * w))
        self.s3 = nn.Sequential(bn_act(2 * w, 4 * w, 3, 2), bn_act(4 * w, 4 * w))
        self.s4 = nn.Sequential(bn_act(4 * w, 8 * w, 3, 2), bn_act(8 * w, 8 * w))
        self.s5 = nn.Sequential(bn_act(8 * w, 16 * w, 3, 2), bn_act(16 * w, 16 * w))
        self.channels = (4 * w, 8 * w, 16 * w)

    def forward(self, x):
        c3 = self.s3(self.s2(self.stem(x)))
        c4 = self.s4(c3)
        c5 = self.s5(c4)
        return c3, c4, c5


class FPN(nn.Module):
    """Feature pyramid (lateral 1x1, top-down nearest 2x upsampling + add, 3x3 smoothing), with a
    PANet-style bottom-up path that concatenates, and a max-pooled P6; outputs P3..P6 flattened and
    concatenated into one tensor."""

    def __init__(self, out=32):
        super().__init__()
        self.body = TinyBackbone()
        self.lat = nn.ModuleList(nn.Conv2d(c, out, 1) for c in self.body.channels)
        self.smooth = nn.ModuleList(nn.Conv2d(out, out, 3, padding=1) for _ in self.body.channels)
        self.down = nn.ModuleList(nn.Conv2d(out, out, 3, 2, 1) for _ in range(2))
        self.fuse = nn.ModuleList(nn.Conv2d(2 * out, out, 1) for _ in range(2))

    def forward(self, x):
        c3, c4, c5 = self.body(x)
        p5 = self.lat[2](c5)
        p4 = self.lat[1](c4) + F.interpolate(p5, scale_factor=2.0, mode="nearest")
        p3 = self.lat[0](c3) + F.interpolate(p4, size=c3.shape[-2:], mode="nearest")
        p3, p4, p5 = self.smooth[0](p3), self.smooth[1](p4), self.smooth[2](p5)
        n4 = self.fuse[0](torch.cat([p4, self.down[0](p3)], 1))
        n5 = self.fuse[1](torch.cat([p5, self.down[1](n4)], 1))
        p6 = F.max_pool2d(n5, 1, 2)
        return torch.cat([t.flatten(2) for t in (p3, n4, n5, p6)], 2)


class YOLOish(nn.Module):
    """YOLOv3/v5-style head over a small backbone with an upsample+concat neck: per scale a 1x1
    conv to A*(5+C), reshape to [B, A, 5+C, H, W], permute, sigmoid, grid offsets and anchor
    scaling (exp for w/h), reshaped to [B, N, 5+C] and concatenated over scales."""

    def __init__(self, classes=4, anchors=3):
        super().__init__()
        self.body = TinyBackbone()
        c3, c4, c5 = self.body.channels
        self.na, self.no = anchors, 5 + classes
        self.reduce = bn_act(c5, c4, 1, act=nn.LeakyReLU)
        self.mix = bn_act(2 * c4, c4, 3, act=nn.LeakyReLU)
        self.heads = nn.ModuleList([nn.Conv2d(c4, self.na * self.no, 1), nn.Conv2d(c5, self.na * self.no, 1)])
        self.strides = (16, 32)
        g = torch.Generator().manual_seed(SEED + 7)
        self.register_buffer("anchors", torch.rand(2, anchors, 2, generator=g) * 3 + 0.5)

    def forward(self, x):
        _, c4, c5 = self.body(x)
        up = F.interpolate(self.reduce(c5), scale_factor=2.0, mode="nearest")
        f4 = self.mix(torch.cat([up, c4], 1))
        outs = []
        for i, f in enumerate((f4, c5)):
            p = self.heads[i](f)
            b, _, h, w = p.shape
            p = p.view(b, self.na, self.no, h, w).permute(0, 1, 3, 4, 2).contiguous()
            ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            grid = torch.stack((xs, ys), 2).view(1, 1, h, w, 2).float()
            xy = (torch.sigmoid(p[..., :2]) * 2 - 0.5 + grid) * self.strides[i]
            wh = torch.exp(p[..., 2:4].clamp(max=4.0)) * self.anchors[i].view(1, self.na, 1, 1, 2) * self.strides[i]
            conf = torch.sigmoid(p[..., 4:])
            # Boxes in units of the image size (as YOLO's normalised xywh), so every column is O(1).
            box = torch.cat((xy, wh), -1) / float(x.shape[-1])
            outs.append(torch.cat((box, conf), -1).view(b, -1, self.no))
        return torch.cat(outs, 1)


# ------------------------------------------------------------------ segmentation


class UNetish(nn.Module):
    """UNet: double 3x3 conv blocks, maxpool down, ConvTranspose 2x2/2 up, skip concats, 1x1 head."""

    def __init__(self, base=8, depth=3, classes=3):
        super().__init__()

        def block(i, o):
            return nn.Sequential(bn_act(i, o), bn_act(o, o))

        self.downs = nn.ModuleList()
        c = 3
        for d in range(depth):
            self.downs.append(block(c, base * 2 ** d))
            c = base * 2 ** d
        self.mid = block(c, 2 * c)
        c *= 2
        self.ups = nn.ModuleList()
        self.upblocks = nn.ModuleList()
        for d in reversed(range(depth)):
            o = base * 2 ** d
            self.ups.append(nn.ConvTranspose2d(c, o, 2, 2))
            self.upblocks.append(block(2 * o, o))
            c = o
        self.head = nn.Conv2d(c, classes, 1)

    def forward(self, x):
        skips = []
        for d in self.downs:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for up, blk, s in zip(self.ups, self.upblocks, reversed(skips)):
            x = blk(torch.cat([up(x), s], 1))
        return self.head(x)


class DeepLabish(nn.Module):
    """DeepLabV3: output-stride-8 backbone (dilated 3x3 in the last stages), ASPP with rates
    1/6/12/18 plus image pooling (upsampled back), concat, 1x1 projection, bilinear upsampling to
    the input size."""

    def __init__(self, classes=5):
        super().__init__()
        self.body = nn.Sequential(bn_act(3, 16, 3, 2), bn_act(16, 32, 3, 2), bn_act(32, 64, 3, 2),
                                  bn_act(64, 64, dilation=2), bn_act(64, 64, dilation=4))
        self.aspp = nn.ModuleList([bn_act(64, 32, 1)] + [bn_act(64, 32, dilation=r) for r in (6, 12, 18)])
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), bn_act(64, 32, 1))
        self.project = bn_act(5 * 32, 32, 1)
        self.head = nn.Sequential(bn_act(32, 32), nn.Conv2d(32, classes, 1))

    def forward(self, x):
        size = x.shape[-2:]
        f = self.body(x)
        branches = [m(f) for m in self.aspp]
        branches.append(F.interpolate(self.pool(f), size=f.shape[-2:], mode="bilinear", align_corners=False))
        y = self.head(self.project(torch.cat(branches, 1)))
        return F.interpolate(y, size=size, mode="bilinear", align_corners=False)


# ------------------------------------------------------------------ audio (1-D convolutions)


class Wav2VecFE(nn.Module):
    """wav2vec 2.0 feature extractor (conv 10/5 with GroupNorm per channel, then 3/2 and 2/2 convs,
    GELU) at 64 channels, then the feature projection (LayerNorm, Linear) and the convolutional
    relative positional embedding (grouped Conv1d k=16, GELU, residual)."""

    def __init__(self, c=64, dim=96):
        super().__init__()
        layers = [nn.Conv1d(1, c, 10, 5, bias=False), nn.GroupNorm(c, c), nn.GELU()]
        for k, s in ((3, 2), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2)):
            layers += [nn.Conv1d(c, c, k, s, bias=False), nn.GELU()]
        self.conv = nn.Sequential(*layers)
        self.ln = nn.LayerNorm(c)
        self.proj = nn.Linear(c, dim)
        self.pos = nn.Conv1d(dim, dim, 16, padding=8, groups=4)

    def forward(self, wav):  # [B, T]
        f = self.conv(wav.unsqueeze(1)).transpose(1, 2)  # [B, T', C]
        x = self.proj(self.ln(f))
        p = F.gelu(self.pos(x.transpose(1, 2))[:, :, :-1]).transpose(1, 2)
        return x + p


class TCN(nn.Module):
    """Temporal convolutional network (Bai et al. 2018): residual blocks of two dilated causal
    Conv1d (left padding, then chopped), ReLU, dilations 1, 2, 4, 8; 1x1 downsample on the skip
    when widths differ; linear head on the last step."""

    def __init__(self, cin=8, widths=(32, 32, 48, 48), k=3, classes=6):
        super().__init__()
        self.blocks = nn.ModuleList()
        c = cin
        for i, w in enumerate(widths):
            d = 2 ** i
            self.blocks.append(nn.ModuleDict(dict(
                c1=nn.Conv1d(c, w, k, padding=(k - 1) * d, dilation=d),
                c2=nn.Conv1d(w, w, k, padding=(k - 1) * d, dilation=d),
                down=nn.Conv1d(c, w, 1) if c != w else nn.Identity())))
            c = w
        self.k = k
        self.fc = nn.Linear(c, classes)

    def forward(self, x):  # [B, C, T]
        t = x.shape[-1]
        for i, b in enumerate(self.blocks):
            y = F.relu(b["c1"](x)[:, :, :t])
            y = F.relu(b["c2"](y)[:, :, :t])
            x = F.relu(y + b["down"](x))
        return self.fc(x[:, :, -1])


# ------------------------------------------------------------------ recurrent


class LSTMNet(nn.Module):
    """Two-layer LSTM (batch_first), linear head on every step."""

    def __init__(self, cin=16, hidden=32, layers=2, bidirectional=False, classes=8):
        super().__init__()
        self.rnn = nn.LSTM(cin, hidden, layers, batch_first=True, bidirectional=bidirectional)
        self.fc = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


class GRUNet(nn.Module):
    """Bidirectional one-layer GRU (sequence-first), linear head on every step."""

    def __init__(self, cin=16, hidden=24, classes=8):
        super().__init__()
        self.rnn = nn.GRU(cin, hidden, 1, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y)


class ConvRNN(nn.Module):
    """CRNN for speech (DeepSpeech2-like): Conv2d front end over a spectrogram, then a GRU and a
    tanh RNN, log-softmax over characters."""

    def __init__(self, mels=32, classes=12):
        super().__init__()
        self.conv = nn.Sequential(bn_act(1, 8, 3, (2, 1)), bn_act(8, 8, 3, (2, 1)))
        self.gru = nn.GRU(8 * (mels // 4), 32, batch_first=True)
        self.rnn = nn.RNN(32, 32, batch_first=True, nonlinearity="tanh")
        self.fc = nn.Linear(32, classes)

    def forward(self, spec):  # [B, 1, mels, T]
        f = self.conv(spec)
        b, c, m, t = f.shape
        f = f.reshape(b, c * m, t).transpose(1, 2)
        y, _ = self.gru(f)
        y, _ = self.rnn(y)
        return F.log_softmax(self.fc(y), -1)


# ------------------------------------------------------------------ transformers


class TransformerCausal(nn.Module):
    """nn.TransformerEncoder (post-LN, ReLU FF, 2 layers, 4 heads, d 64) over token embeddings
    plus sinusoidal positions, with a causal attention mask (float -inf above the diagonal), LM
    head."""

    def __init__(self, vocab=200, seq=24, d=64, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        pos = torch.arange(seq).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(seq, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):  # [B, S] int64
        x = self.emb(ids) * math.sqrt(self.emb.embedding_dim) + self.pe
        return self.head(self.enc(x, mask=self.mask))


class TransformerPadMask(nn.Module):
    """nn.TransformerEncoder (pre-LN, GELU, 2 layers, seq-first) over a float feature sequence with
    a key-padding mask given as a second (bool) input; mean pooling over valid steps."""

    def __init__(self, cin=20, d=48, heads=4, layers=2, classes=5):
        super().__init__()
        self.inp = nn.Linear(cin, d)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.1, activation="gelu", norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        self.fc = nn.Linear(d, classes)

    def forward(self, x, pad):  # x [S, B, cin], pad [B, S] bool (True = padding)
        y = self.enc(self.inp(x), src_key_padding_mask=pad)  # [S, B, d]
        keep = (~pad).t().unsqueeze(-1).float()
        return self.fc((y * keep).sum(0) / keep.sum(0))


class ViTish(nn.Module):
    """ViT: 8x8/8 patch embedding (Conv2d), class token, learned positions, pre-LN encoder blocks
    written with nn.MultiheadAttention, GELU MLP, LayerNorm, head on the class token."""

    def __init__(self, img=32, patch=8, d=64, heads=4, layers=3, classes=10):
        super().__init__()
        n = (img // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict(dict(
                ln1=nn.LayerNorm(d), attn=nn.MultiheadAttention(d, heads, batch_first=True),
                ln2=nn.LayerNorm(d), mlp=nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)))))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        for b in self.blocks:
            h = b["ln1"](x)
            x = x + b["attn"](h, h, h, need_weights=False)[0]
            x = x + b["mlp"](b["ln2"](x))
        return self.head(self.norm(x)[:, 0])


# ------------------------------------------------------------------ the opset series


class OpsetMix(nn.Module):
    """A small CNN whose ops all changed form across opsets 9..17: Clip (ReLU6; attributes in 9,
    inputs from 11), Upsample (9) vs Resize (11+), Slice (attributes in 9, inputs from 10),
    Split/Squeeze/Unsqueeze/ReduceSum (axes as inputs from 13), Softmax (2-D coercion before 13),
    LayerNormalization (one op at 17), Pad (inputs from 11), plus BatchNorm and pooling.
    pad=False pads by concatenating zeros instead of F.pad (whose exported pads input Plinth
    cannot fold yet), so that the rest of the series is checked too."""

    def __init__(self, classes=10, pad=True):
        super().__init__()
        self.pad = pad
        self.c1 = bn_act(3, 16, 3, 2, act=nn.ReLU6)
        self.c2 = bn_act(16, 32, 3, 2, 0, act=nn.ReLU6)
        self.c3 = bn_act(32, 32, 3, 1)
        self.ln = nn.LayerNorm(32)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        a = self.c1(x)                                     # [1,16,16,16]
        if self.pad:
            a1 = F.pad(a, (1, 0, 1, 0))                    # [1,16,17,17]
        else:
            n, c, h, w = a.shape
            a1 = torch.cat([a.new_zeros(n, c, h, 1), a], 3)
            a1 = torch.cat([a.new_zeros(n, c, 1, w + 1), a1], 2)
        b = self.c2(a1)                                    # [1,32,8,8]
        u = F.interpolate(b, scale_factor=2.0, mode="nearest")[:, :16]  # Upsample/Resize + Slice
        y = self.c3(torch.cat([a, u], 1))
        y1, y2 = torch.split(y, [12, 20], dim=1)
        y = torch.cat([y2, y1 * 0.5], 1)
        t = self.ln(y.flatten(2).transpose(1, 2))          # [1,256,32]
        att = torch.softmax(t.unsqueeze(1) @ t.transpose(1, 2).unsqueeze(1) / 8.0, -1).squeeze(1)
        z = (att @ t).sum(1) / 256.0                       # ReduceSum
        return torch.log_softmax(self.fc(z), -1)


# ------------------------------------------------------------------ the zoo

# export: "eval" (PyTorch folds batch norms into the convolutions) or "preserve" (they stay as
# BatchNormalization nodes, weights behind Identity nodes, as other exporters leave them);
# dynamic: torch.onnx's dynamic_axes (symbolic dims in the model, bound by the inputs at run time).
Spec = collections.namedtuple("Spec", "name arch cls kwargs inputs opset fast note export dynamic",
                              defaults=("eval", None))


def img(shape):
    return [("input", shape, "randn")]


ZOO = [
    Spec("resnet50_s", "ResNet-50 bottleneck", ResNet50ish, {}, img((1, 3, 64, 64)), 13, False, ""),
    Spec("resnet50_s_op9", "ResNet-50 bottleneck", ResNet50ish, {}, img((1, 3, 64, 64)), 9, False, ""),
    Spec("resnet50_s_b4", "ResNet-50 bottleneck", ResNet50ish, {}, img((4, 3, 32, 32)), 13, True, "batch 4"),
    Spec("resnet50_s_bn", "ResNet-50 bottleneck", ResNet50ish, {}, img((1, 3, 64, 64)), 13, False,
         "batch norms not folded", "preserve"),
    Spec("vgg11_s", "VGG", VGGish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("densenet_s", "DenseNet", DenseNetish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("squeezenet_s", "SqueezeNet", SqueezeNetish, {}, img((1, 3, 96, 96)), 13, True, ""),
    Spec("shufflenet_v2_s", "ShuffleNetV2", ShuffleNetV2ish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("efficientnet_s", "EfficientNet MBConv", EfficientNetish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("mobilenet_v3_s", "MobileNetV3", MobileNetV3ish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("convnext_s", "ConvNeXt", ConvNeXtish, {}, img((1, 3, 64, 64)), 13, False, ""),
    Spec("convnext_s_op17", "ConvNeXt", ConvNeXtish, {}, img((1, 3, 64, 64)), 17, True, "LayerNormalization op"),
    Spec("fpn_s", "FPN + PAN", FPN, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("yolo_s", "YOLO head", YOLOish, {}, img((1, 3, 64, 64)), 13, False, ""),
    Spec("yolo_s_op11", "YOLO head", YOLOish, {}, img((1, 3, 64, 64)), 11, True, ""),
    Spec("unet_s", "UNet", UNetish, {}, img((1, 3, 32, 32)), 13, True, ""),
    Spec("deeplab_s", "DeepLabV3 ASPP", DeepLabish, {}, img((1, 3, 64, 64)), 13, True, ""),
    Spec("wav2vec_fe", "wav2vec2 feature extractor", Wav2VecFE, {}, [("wav", (1, 4000), "randn")], 13, True, ""),
    Spec("tcn", "TCN", TCN, {}, [("input", (2, 8, 64), "randn")], 13, True, ""),
    Spec("lstm2", "LSTM", LSTMNet, {}, [("input", (2, 10, 16), "randn")], 13, False, ""),
    Spec("bilstm", "LSTM", LSTMNet, dict(layers=1, bidirectional=True), [("input", (1, 7, 16), "randn")], 13, False, "bidirectional"),
    Spec("bigru", "GRU", GRUNet, {}, [("input", (9, 2, 16), "randn")], 13, False, ""),
    Spec("crnn", "Conv + GRU + RNN", ConvRNN, {}, [("spec", (1, 1, 32, 20), "randn")], 13, False, ""),
    Spec("transformer_causal", "nn.TransformerEncoder", TransformerCausal, {}, [("ids", (2, 24), "ids200")], 13, True, "causal mask"),
    Spec("transformer_causal_dyn", "nn.TransformerEncoder", TransformerCausal, {}, [("ids", (2, 24), "ids200")],
         13, False, "symbolic batch and length", "eval", {"ids": {0: "batch", 1: "length"}}),
    Spec("transformer_padmask", "nn.TransformerEncoder", TransformerPadMask, {},
         [("x", (12, 2, 20), "randn"), ("pad", (2, 12), "pad")], 13, True, "key padding mask input (bool)"),
    Spec("vit_s", "ViT", ViTish, {}, img((1, 3, 32, 32)), 13, True, ""),
    Spec("vit_s_dyn", "ViT", ViTish, {}, img((1, 3, 32, 32)), 13, False, "symbolic batch", "eval",
         {"input": {0: "batch"}}),
    Spec("vit_s_op9", "ViT", ViTish, {}, img((1, 3, 32, 32)), 9, True, ""),
    Spec("vit_s_op17", "ViT", ViTish, {}, img((1, 3, 32, 32)), 17, False, "LayerNormalization op"),
    Spec("opsetmix_op9", "opset series", OpsetMix, {}, img((1, 3, 32, 32)), 9, False, ""),
    Spec("opsetmix_op11", "opset series", OpsetMix, {}, img((1, 3, 32, 32)), 11, False, ""),
    Spec("opsetmix_op13", "opset series", OpsetMix, {}, img((1, 3, 32, 32)), 13, False, ""),
    Spec("opsetmix_op17", "opset series", OpsetMix, {}, img((1, 3, 32, 32)), 17, False, ""),
    Spec("opsetmix_nopad_op9", "opset series", OpsetMix, dict(pad=False), img((1, 3, 32, 32)), 9, False, "no F.pad"),
    Spec("opsetmix_nopad_op11", "opset series", OpsetMix, dict(pad=False), img((1, 3, 32, 32)), 11, True, "no F.pad"),
    Spec("opsetmix_nopad_op13", "opset series", OpsetMix, dict(pad=False), img((1, 3, 32, 32)), 13, True, "no F.pad"),
    Spec("opsetmix_nopad_op17", "opset series", OpsetMix, dict(pad=False), img((1, 3, 32, 32)), 17, True, "no F.pad"),
]


# ------------------------------------------------------------------ reproducers
#
# The smallest models that show each failure the zoo found (see bench/zoo/README.md). They are
# exported with the zoo (entries marked "repro"); run_zoo.py shows them with --repros.


class ReproMeanLayerNorm(nn.Module):
    """ReduceMean over the last axis (keepdims=0) feeding LayerNormalization: the tail of
    ConvNeXt (global mean pool, then LayerNorm)."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(8)

    def forward(self, x):
        return self.ln(x.mean(-1))


class ReproPad(nn.Module):
    """F.pad: torch 1.13 computes the pads input at run time (ConstantOfShape, Concat, Reshape,
    Slice with step -1, Transpose, Reshape, Cast) from opset 11 on."""

    def forward(self, x):
        return F.pad(x, (1, 0, 1, 0))


class ReproUpsample(nn.Module):
    """Nearest 2x upsampling: Upsample at opset 9, Resize from 11."""

    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


class ReproRNN(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.rnn = getattr(nn, kind)(4, 5, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


REPROS = [
    Spec("repro_mean_layernorm", "reproducer", ReproMeanLayerNorm, {}, [("input", (1, 4, 8, 3), "randn")], 17, False,
         "ReduceMean(axes=[-1], keepdims=0) -> LayerNormalization"),
    Spec("repro_pad_op13", "reproducer", ReproPad, {}, [("input", (1, 2, 3, 3), "randn")], 13, False, "F.pad"),
    Spec("repro_upsample_op9", "reproducer", ReproUpsample, {}, [("input", (1, 2, 3, 3), "randn")], 9, False, "Upsample"),
    Spec("repro_lstm", "reproducer", ReproRNN, dict(kind="LSTM"), [("input", (1, 3, 4), "randn")], 13, False, "LSTM"),
    Spec("repro_gru", "reproducer", ReproRNN, dict(kind="GRU"), [("input", (1, 3, 4), "randn")], 13, False, "GRU"),
    Spec("repro_rnn", "reproducer", ReproRNN, dict(kind="RNN"), [("input", (1, 3, 4), "randn")], 13, False, "RNN"),
]


def calibrate_bn(m, inputs):
    """Give BatchNorm layers running statistics measured on a fixed random batch (as
    shared/bench/make_models.py does): with default stats (mean 0, var 1) activations drift far
    from unit scale and tolerance checks lose meaning."""
    bns = [x for x in m.modules() if isinstance(x, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    g = torch.Generator().manual_seed(SEED + 2)
    (name, shape, kind), = inputs
    batch = (max(4, shape[0]),) + tuple(shape[1:])
    m.train()
    with torch.no_grad():
        m(torch.randn(batch, generator=g))
    m.eval()


def make_inputs(spec):
    g = torch.Generator().manual_seed(SEED + 1)
    xs = []
    for name, shape, kind in spec.inputs:
        if kind == "randn":
            xs.append(torch.randn(shape, generator=g))
        elif kind == "ids200":
            xs.append(torch.randint(0, 200, shape, generator=g, dtype=torch.int64))
        elif kind == "pad":  # [B, S]: batch row b has its last 3*b steps padded
            pad = torch.zeros(shape, dtype=torch.bool)
            for b in range(shape[0]):
                if b:
                    pad[b, shape[1] - 3 * b:] = True
            xs.append(pad)
        else:
            raise ValueError(kind)
    return xs


def build(spec):
    torch.manual_seed(SEED)
    m = spec.cls(**spec.kwargs)
    calibrate_bn(m, spec.inputs)
    return m.eval()


def export(spec, outdir):
    import onnx
    m = build(spec)
    xs = make_inputs(spec)
    with torch.no_grad():
        y = m(*xs)
    ys = list(y) if isinstance(y, (tuple, list)) else [y]
    out_names = ["output"] if len(ys) == 1 else ["output%d" % i for i in range(len(ys))]
    in_names = [n for n, _, _ in spec.inputs]
    path = os.path.join(outdir, spec.name + ".onnx")
    import warnings
    # Exported with autograd on: under no_grad, eval-mode nn.MultiheadAttention takes its fused
    # fast path (aten::_native_multi_head_attention), which torch 1.13 cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        preserve = spec.export == "preserve"
        torch.onnx.export(m, tuple(xs), path, opset_version=spec.opset,
                          do_constant_folding=not preserve,
                          training=torch.onnx.TrainingMode.PRESERVE if preserve
                          else torch.onnx.TrainingMode.EVAL,
                          input_names=in_names, output_names=out_names,
                          dynamic_axes=spec.dynamic)
    mo = onnx.load(path)
    onnx.checker.check_model(mo)
    entry = dict(name=spec.name, arch=spec.arch, opset=spec.opset, note=spec.note, fast=spec.fast,
                 repro=spec.arch == "reproducer",
                 nodes=len(mo.graph.node),
                 ops=dict(collections.Counter(n.op_type for n in mo.graph.node)),
                 params=sum(int(np.prod(t.dims)) for t in mo.graph.initializer),
                 inputs=[], outputs=[])
    for n, x in zip(in_names, xs):
        f = "%s.in.%s.npy" % (spec.name, n)
        np.save(os.path.join(outdir, f), x.numpy())
        entry["inputs"].append(dict(name=n, file=f, shape=list(x.shape), dtype=str(x.numpy().dtype)))
    for n, yv in zip(out_names, ys):
        f = "%s.ref.%s.npy" % (spec.name, n)
        a = yv.detach().numpy()
        np.save(os.path.join(outdir, f), a)
        entry["outputs"].append(dict(name=n, file=f, shape=list(a.shape), dtype=str(a.dtype),
                                     max_abs=float(np.abs(a).max()) if a.size else 0.0))
    return entry


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "..", "build", "zoo"))
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--fast", action="store_true", help="only the models of the quick CTest subset")
    ap.add_argument("--list", action="store_true", help="print the zoo and exit")
    a = ap.parse_args()
    specs = ZOO + REPROS
    if a.only:
        want = a.only.split(",")
        unknown = sorted(set(want) - {s.name for s in specs})
        if unknown:
            sys.exit("make_zoo.py: unknown model(s): %s" % ", ".join(unknown))
        specs = [s for s in specs if s.name in want]
    if a.fast:
        specs = [s for s in specs if s.fast]
    if a.list:
        for s in specs:
            print("%-22s %-28s opset %2d %s" % (s.name, s.arch, s.opset, s.note))
        return
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)  # the reduction order depends on the thread count
    entries = []
    for s in specs:
        print("make_zoo.py: exporting %s" % s.name, file=sys.stderr, flush=True)
        entries.append(export(s, a.out))
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(dict(torch=torch.__version__, seed=SEED, models=entries), f, indent=1)
    zoo = [e for e in entries if not e["repro"]]
    print("make_zoo.py: %d models of %d architectures, %d reproducers -> %s" % (
        len(zoo), len({e["arch"] for e in zoo}), len(entries) - len(zoo), os.path.abspath(a.out)),
        file=sys.stderr)


if __name__ == "__main__":
    main()
