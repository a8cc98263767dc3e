#!/usr/bin/env python3
"""tools/onnx_node_tests.py — writes the node tests of the installed onnx package
(its generators, onnx.backend.test.case.node) as the test data the conformance
runner reads: DIR/node/<test>/model.onnx and test_data_set_N/{input,output}_K.pb.

Debian's libonnx-testdata (what CI runs) stops at ONNX 1.12 / opset 17. PyPI's
onnx (1.23 has opset 28) ships the generators but no data; this writes them, so
that newer opsets are checked on every backend:

    python3 -m pip install onnx numpy          # into the python you run this with
    python3 tools/onnx_node_tests.py /tmp/onnx-node
    build/bin/conformance_runner suite build/tests/conformance/backend.ini \
        /tmp/onnx-node-summary.txt --known tests/conformance/known_differences.txt \
        /tmp/onnx-node/node

Not part of CI: CI has no network and Debian's onnx only. Inputs the writer cannot
express (sequences, optionals, maps) are skipped and counted.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node


def proto(value, name):
    if isinstance(value, TensorProto):
        return value
    if isinstance(value, list):
        return numpy_helper.from_list(value, name)
    if value is None:
        return numpy_helper.from_optional(value, name)
    if isinstance(value, dict):
        return numpy_helper.from_dict(value, name)
    return numpy_helper.from_array(np.asarray(value), name)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[0] + "\nusage: onnx_node_tests.py DIR")
    out = sys.argv[1]
    cases = node.collect_testcases(None)
    skipped = 0
    for case in cases:
        d = os.path.join(out, "node", case.name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds, exist_ok=True)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    try:
                        data = proto(v, infos[j].name).SerializeToString()
                    except Exception:  # a type the writer cannot express
                        skipped += 1
                        continue
                    with open(os.path.join(ds, f"{kind}_{j}.pb"), "wb") as f:
                        f.write(data)
    print(f"{len(cases)} node tests in {out}/node ({skipped} values skipped)")


if __name__ == "__main__":
    main()
