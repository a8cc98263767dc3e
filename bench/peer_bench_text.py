#!/usr/bin/env python3
"""../shared/bench/peer_bench.py for models with string inputs: the same timing of ONNX
Runtime or OpenVINO, with tensor(string) inputs given as NumPy `<U` .npy files (what
bench/zoo/make_ml_zoo.py writes for its text pipelines) handed over as object arrays, as
ONNX Runtime's Python API takes strings. Every other model times exactly as through
peer_bench.py. bench/zoo.py uses it through PEER_BENCH:

    PEER_BENCH=bench/peer_bench_text.py python3 bench/zoo.py --zoo build/ml_zoo ...
"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("PEER_BENCH_DIR") or
                os.path.join(HERE, "..", "..", "shared", "bench"))
import peer_bench  # noqa: E402

peer_bench.NP.setdefault("tensor(string)", object)
_load = np.load


def _load_strings(*args, **kwargs):
    a = _load(*args, **kwargs)
    return a.astype(object) if a.dtype.kind == "U" else a


peer_bench.np.load = _load_strings

if __name__ == "__main__":
    sys.exit(peer_bench.main())
