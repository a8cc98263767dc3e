#!/usr/bin/env python3
"""tests/control: models with control flow (If, Loop, Scan) exported by
torch.onnx from TorchScript, run through the plinth CLI and compared with
PyTorch (max|plinth - torch| / max|torch| <= 1e-4), and malformed bodies
that must be refused with a one-line error naming the node.

    control_models.py torch NAME --plinth CLI --modules DIR --work DIR
    control_models.py onnx NAME --plinth CLI --modules DIR --work DIR
    control_models.py bad NAME --plinth CLI --modules DIR --work DIR
    control_models.py list

Models are generated into --work each time (nothing binary is committed).
Exit 0 pass, 1 fail, 77 skip (no torch/onnx under this interpreter)."""
import argparse
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover
    print("skip: numpy is missing")
    sys.exit(77)


# ---- models exported from PyTorch ----------------------------------------

def torch_models():
    import torch
    from torch import nn

    class DataIf(nn.Module):
        """A data-dependent `if`: the branch depends on the input's values."""

        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 6)

        def forward(self, x):
            h = self.lin(x)
            if bool(h.sum() > 0):
                y = torch.relu(h) * 2.0 + 1.0
            else:
                y = torch.tanh(h) - x
            return y

    class DecodeLoop(nn.Module):
        """A `for` loop of decoding steps: a gated recurrent step fed its
        own output (written out: the exporter has no aten::gru_cell)."""

        def __init__(self):
            super().__init__()
            self.gates = nn.Linear(4 + 8, 2 * 8)
            self.cand = nn.Linear(4 + 8, 8)
            self.out = nn.Linear(8, 4)

        def forward(self, x, h, pos):
            acc = torch.zeros_like(x)
            for t in range(pos.size(0)):
                x = x + pos[t]
                zr = torch.sigmoid(self.gates(torch.cat([x, h], dim=1)))
                z, r = zr[:, :8], zr[:, 8:]
                n = torch.tanh(self.cand(torch.cat([x, r * h], dim=1)))
                h = (1 - z) * n + z * h
                x = torch.softmax(self.out(h), dim=1)
                acc = acc + x
            return acc, h

    class RnnLoop(nn.Module):
        """An RNN wrapped in control flow: an LSTM cell stepped over the
        sequence by a scripted loop (its trip count is the sequence length),
        then a data-dependent choice between two heads."""

        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(3, 5)
            self.head_a = nn.Linear(5, 2)
            self.head_b = nn.Linear(5, 2)

        def forward(self, x, h, c):
            for t in range(x.size(0)):
                h, c = self.cell(x[t], (h, c))
            if bool(h.mean() > 0):
                y = self.head_a(h)
            else:
                y = self.head_b(h)
            return y, c

    class PasteLoop(nn.Module):
        """Mask R-CNN's paste loop (torchvision's _onnx_paste_masks_in_image_loop):
        the rows kept by a data test, each resized to a size read from the
        data and zero-padded to 8x8, grown one row at a time by torch.cat:
        a Loop whose trip count and body shapes depend on the data."""

        def forward(self, x):
            m = x[x.mean((1, 2)) > -0.2]
            sizes = (m.abs().sum((1, 2)) * 10.0).long() % 5 + 3
            res = torch.zeros(0, 8, 8)
            for i in range(m.size(0)):
                s = int(sizes[i])
                r = nn.functional.interpolate(m[i][None, None], size=(s, s), mode="bilinear",
                                              align_corners=False)[0, 0]
                col = torch.cat((r, torch.zeros(8 - s, s)), 0)
                full = torch.cat((col, torch.zeros(8, 8 - s)), 1)
                res = torch.cat((res, full.unsqueeze(0)), 0)
            return res

    class GrowLoop(nn.Module):
        """A carried tensor that grows by a different number of rows each
        iteration (i + 1 of them): its shape changes from one iteration to the
        next."""

        def forward(self, x):
            acc = x[:0]
            for i in range(x.size(0)):
                acc = torch.cat((acc, x[: i + 1] * float(i)), 0)
            return acc

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)

    def rnd(*shape):
        return torch.randn(*shape, generator=g)

    return {
        "data_if": (DataIf(), ["x"], ["y"],
                    [(rnd(3, 6),), (-5.0 - rnd(3, 6).abs(),), (5.0 + rnd(3, 6).abs(),)]),
        "decode_loop": (DecodeLoop(), ["x", "h", "pos"], ["acc", "h_out"],
                        [(rnd(2, 4), rnd(2, 8), rnd(6, 4)), (rnd(2, 4), rnd(2, 8), rnd(6, 4))]),
        "rnn_loop": (RnnLoop(), ["x", "h", "c"], ["y", "c_out"],
                     [(rnd(7, 2, 3), rnd(2, 5), rnd(2, 5)),
                      (rnd(7, 2, 3), 3.0 + rnd(2, 5).abs(), rnd(2, 5)),
                      (rnd(7, 2, 3), -3.0 - rnd(2, 5).abs(), rnd(2, 5))]),
        # the second set keeps no row: the loop runs no iteration
        "paste_loop": (PasteLoop(), ["x"], ["y"],
                       [(rnd(6, 4, 4),), (-1.0 - rnd(6, 4, 4).abs(),), (rnd(6, 4, 4) + 0.3,)]),
        "grow_loop": (GrowLoop(), ["x"], ["y"], [(rnd(4, 3),), (rnd(4, 3),)]),
    }


def ops_of(path):
    import onnx
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
    walk(onnx.load(path).graph)
    return ops


def run_plinth(args, model, inputs, work, tag, extra=(), config=()):
    cmd = [args.plinth] + list(config) + ["run", model, "--output-dir",
                                          os.path.join(work, tag)] + list(extra)
    for name, path in inputs:
        cmd += ["--input", "%s=%s" % (name, path)]
    env = dict(os.environ, PLINTH_MODULE_PATH=args.modules)
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def case_torch(args, name):
    try:
        import torch
        import onnx  # noqa: F401
    except ImportError:
        print("skip: torch or onnx is missing under %s" % sys.executable)
        return 77
    module, in_names, out_names, sets = torch_models()[name]
    module.eval()
    scripted = torch.jit.script(module)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    torch.onnx.export(scripted, sets[0], path, opset_version=13, input_names=in_names,
                      output_names=out_names)
    ops = ops_of(path)
    print("%s: ops %s" % (name, ",".join(sorted(ops))))
    if not ops & {"If", "Loop", "Scan"}:
        print("FAIL: the export has no control flow")
        return 1
    worst = 0.0
    for k, inputs in enumerate(sets):
        with torch.no_grad():
            want = scripted(*inputs)
        if not isinstance(want, tuple):
            want = (want,)
        files = []
        for n_, t in zip(in_names, inputs):
            f = os.path.join(work, "set%d_%s.npy" % (k, n_))
            np.save(f, t.numpy())
            files.append((n_, f))
        r = run_plinth(args, path, files, work, "out%d" % k)
        if r.returncode != 0:
            print("FAIL: plinth run (set %d): %s" % (k, (r.stderr or r.stdout).strip()))
            return 1
        for n_, w in zip(out_names, want):
            got = np.load(os.path.join(work, "out%d" % k, n_ + ".npy"))
            w = w.numpy()
            if got.shape != w.shape:
                print("FAIL: set %d output %s has shape %s, PyTorch %s" % (k, n_, got.shape, w.shape))
                return 1
            if w.size == 0:
                print("set %d %s: empty, shape %s" % (k, n_, w.shape))
                continue
            err = float(np.max(np.abs(got - w)) / max(float(np.max(np.abs(w))), 1e-30))
            worst = max(worst, err)
            print("set %d %s: max rel err %.3g" % (k, n_, err))
    if worst > 1e-4:
        print("FAIL: error %.3g over 1e-4" % worst)
        return 1
    print("pass: %d input sets, worst relative error %.3g" % (len(sets), worst))
    return 0


# ---- models built with onnx.helper, checked against NumPy --------------------

def onnx_models():
    """name -> (model, {input: array}, {output: expected array})."""
    import onnx
    from onnx import TensorProto, helper as h, numpy_helper
    f = TensorProto.FLOAT
    rng = np.random.default_rng(3)
    m = {}

    # nested: a Loop (trip count an input, no scan outputs) whose body holds
    # an If whose branches read x of the model's graph two scopes out, and
    # k, a constant of the model, one scope out.
    then_b = h.make_graph([h.make_node("Add", ["acc", "x"], ["t_out"], name="then_add")],
                          "then", [], [h.make_tensor_value_info("t_out", f, [3])])
    else_b = h.make_graph([h.make_node("Mul", ["acc", "x"], ["e_out"], name="else_mul")],
                          "else", [], [h.make_tensor_value_info("e_out", f, [3])])
    body = h.make_graph(
        [h.make_node("Less", ["i", "k"], ["early"], name="early"),
         h.make_node("If", ["early"], ["acc_out"], name="pick", then_branch=then_b,
                     else_branch=else_b),
         h.make_node("Identity", ["c"], ["c_out"], name="keep")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("c", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc_out", f, [3])])
    g = h.make_graph(
        [h.make_node("Loop", ["n", "", "acc0"], ["acc"], name="repeat", body=body)], "nested",
        [h.make_tensor_value_info("n", TensorProto.INT64, []),
         h.make_tensor_value_info("x", f, [3]), h.make_tensor_value_info("acc0", f, [3])],
        [h.make_tensor_value_info("acc", f, [3])],
        [numpy_helper.from_array(np.array(2, dtype=np.int64), "k")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    x = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    a0 = rng.uniform(-1, 1, 3).astype(np.float32)
    acc = a0.copy()
    for i in range(5):
        acc = acc + x if i < 2 else acc * x
    m["nested"] = (model, {"n": np.array(5, dtype=np.int64), "x": x, "acc0": a0}, {"acc": acc})

    # rank1_loop: paddle2onnx's Loop, its body declaring the iteration number
    # and the condition [1] where ONNX says scalars (SLANet, PP-Structure's
    # table model); they are fed in the rank the body declares, as ONNX
    # Runtime does. The condition stops it after i = 3 of a trip count 10.
    body = h.make_graph(
        [h.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT, name="as_float"),
         h.make_node("Add", ["acc", "fi"], ["acc_out"], name="add_i"),
         h.make_node("Less", ["i", "three"], ["c_out"], name="go_on")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, [1]),
         h.make_tensor_value_info("c", TensorProto.BOOL, [1]),
         h.make_tensor_value_info("acc", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, [1]),
         h.make_tensor_value_info("acc_out", f, [3])])
    g = h.make_graph(
        [h.make_node("Loop", ["n", "c0", "acc0"], ["acc"], name="repeat", body=body)],
        "rank1_loop",
        [h.make_tensor_value_info("n", TensorProto.INT64, [1]),
         h.make_tensor_value_info("c0", TensorProto.BOOL, [1]),
         h.make_tensor_value_info("acc0", f, [3])],
        [h.make_tensor_value_info("acc", f, [3])],
        [numpy_helper.from_array(np.array([3], dtype=np.int64), "three")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    a0 = rng.uniform(-1, 1, 3).astype(np.float32)
    m["rank1_loop"] = (model, {"n": np.array([10], dtype=np.int64),
                               "c0": np.array([True]), "acc0": a0},
                       {"acc": a0 + np.float32(0 + 1 + 2 + 3)})

    # scan_axes: Scan-11 over axis 1 of one input and, reversed, axis 0 of
    # another; scan outputs along axis 1 and reversed along axis 0.
    sb = h.make_graph(
        [h.make_node("Add", ["s", "a"], ["s1"], name="add_a"),
         h.make_node("Mul", ["s1", "b"], ["s_out"], name="mul_b"),
         h.make_node("Neg", ["s_out"], ["neg"], name="neg")],
        "body",
        [h.make_tensor_value_info("s", f, [2]), h.make_tensor_value_info("a", f, [2]),
         h.make_tensor_value_info("b", f, [2])],
        [h.make_tensor_value_info("s_out", f, [2]), h.make_tensor_value_info("s_out", f, [2]),
         h.make_tensor_value_info("neg", f, [2])])
    g = h.make_graph(
        [h.make_node("Scan", ["s0", "A", "B"], ["s", "ys", "zs"], name="sweep", body=sb,
                     num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                     scan_output_axes=[1, -2], scan_output_directions=[0, 1])],
        "scan_axes",
        [h.make_tensor_value_info("s0", f, [2]), h.make_tensor_value_info("A", f, [2, 4]),
         h.make_tensor_value_info("B", f, [4, 2])],
        [h.make_tensor_value_info("s", f, [2]), h.make_tensor_value_info("ys", f, [2, 4]),
         h.make_tensor_value_info("zs", f, [4, 2])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 11)])
    s0 = rng.uniform(-1, 1, 2).astype(np.float32)
    A = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    B = rng.uniform(0.5, 1.5, (4, 2)).astype(np.float32)
    st = s0.copy()
    ys = np.zeros((2, 4), np.float32)
    zs = np.zeros((4, 2), np.float32)
    for t in range(4):
        st = (st + A[:, t]) * B[3 - t]
        ys[:, t] = st
        zs[3 - t] = -st
    m["scan_axes"] = (model, {"s0": s0, "A": A, "B": B}, {"s": st, "ys": ys, "zs": zs})

    # scan8_batch: Scan-8 with a batch of 3 and sequence_lens absent.
    sb8 = h.make_graph(
        [h.make_node("Add", ["s", "x"], ["s_out"], name="add"),
         h.make_node("Identity", ["s_out"], ["y"], name="y")],
        "body", [h.make_tensor_value_info("s", f, [2]), h.make_tensor_value_info("x", f, [2])],
        [h.make_tensor_value_info("s_out", f, [2]), h.make_tensor_value_info("y", f, [2])])
    g = h.make_graph(
        [h.make_node("Scan", ["", "init", "X"], ["s", "Y"], name="sweep8", body=sb8,
                     num_scan_inputs=1, directions=[1])],
        "scan8_batch",
        [h.make_tensor_value_info("init", f, [3, 2]), h.make_tensor_value_info("X", f, [3, 4, 2])],
        [h.make_tensor_value_info("s", f, [3, 2]), h.make_tensor_value_info("Y", f, [3, 4, 2])])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 8)])
    init = rng.uniform(-1, 1, (3, 2)).astype(np.float32)
    X = rng.uniform(-1, 1, (3, 4, 2)).astype(np.float32)
    S = init.copy()
    Y = np.zeros((3, 4, 2), np.float32)
    for t in range(4):
        S = S + X[:, 3 - t]
        Y[:, t] = S
    m["scan8_batch"] = (model, {"init": init, "X": X}, {"s": S, "Y": Y})

    # while_counter: a while loop as tf2onnx writes one: M a constant, the
    # condition computed by the body (iteration < M and a carried int32
    # counter, cast to float, below a bound), the initial condition computed
    # from constants, and a scan output whose row count only that condition
    # decides. Its trip count is known before the run (4 here: t = 1, 3, 5,
    # 7 and 7 + 2 is past 8).
    i32 = TensorProto.INT32
    wb = h.make_graph(
        [h.make_node("Add", ["t", "two"], ["t_out"], name="step"),
         h.make_node("Cast", ["t_out"], ["tf"], name="to_float", to=f),
         h.make_node("Less", ["tf", "bound"], ["below"], name="below"),
         h.make_node("Cast", ["i"], ["i32"], name="iter32", to=i32),
         h.make_node("Add", ["i32", "one"], ["i1"], name="next_iter"),
         h.make_node("Less", ["i1", "m32"], ["more"], name="more"),
         h.make_node("And", ["below", "more"], ["c_out"], name="both"),
         h.make_node("Mul", ["acc", "x"], ["acc_out"], name="scale"),
         h.make_node("Identity", ["acc_out"], ["row"], name="row")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("c", TensorProto.BOOL, []),
         h.make_tensor_value_info("t", i32, []),
         h.make_tensor_value_info("acc", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("t_out", i32, []),
         h.make_tensor_value_info("acc_out", f, [3]),
         h.make_tensor_value_info("row", f, [3])],
        [numpy_helper.from_array(np.array(2, dtype=np.int32), "two"),
         numpy_helper.from_array(np.array(1, dtype=np.int32), "one"),
         numpy_helper.from_array(np.array(8.5, dtype=np.float32), "bound")])
    g = h.make_graph(
        [h.make_node("Less", ["zero", "bound0"], ["c0"], name="first_cond"),
         h.make_node("Loop", ["m", "c0", "t0", "x"], ["t_end", "acc", "rows"], name="while",
                     body=wb)],
        "while_counter",
        [h.make_tensor_value_info("x", f, [3])],
        [h.make_tensor_value_info("t_end", i32, []), h.make_tensor_value_info("acc", f, [3]),
         h.make_tensor_value_info("rows", f, None)],
        [numpy_helper.from_array(np.array(9, dtype=np.int64), "m"),
         numpy_helper.from_array(np.array(9, dtype=np.int32), "m32"),
         numpy_helper.from_array(np.array(1, dtype=np.int32), "t0"),
         numpy_helper.from_array(np.array(0.0, dtype=np.float32), "zero"),
         numpy_helper.from_array(np.array(8.5, dtype=np.float32), "bound0")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    x = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    t, acc, rows, it = 1, x.copy(), [], 0
    while True:
        t += 2
        acc = acc * x
        rows.append(acc)
        it += 1
        if not (t < 8.5 and it < 9):
            break
    m["while_counter"] = (model, {"x": x}, {"t_end": np.array(t, np.int32), "acc": acc,
                                            "rows": np.stack(rows)})

    # shape_if: If on a shape (PyTorch's `if x.size(-1) == 1: x = x.squeeze(-1)`),
    # whose branches give outputs of different ranks and leave their types
    # empty as PyTorch's exporter does; x declared [-1, 3, 1] as paddle2onnx
    # writes a dynamic batch. The taken branch holds another If on a shape,
    # reading a tensor of the branch; a second If's branch makes a tensor
    # named like one of the graph ("h"). With the shapes known at the
    # session, every condition folds and the branches taken run in place.
    no_type = onnx.TypeProto()
    i64 = TensorProto.INT64
    inner_t = h.make_graph([h.make_node("Neg", ["sq"], ["neg"], name="neg")], "inner_then", [],
                           [h.make_value_info("neg", no_type)])
    inner_e = h.make_graph([h.make_node("Identity", ["sq"], ["same"], name="same")],
                           "inner_else", [], [h.make_value_info("same", no_type)])
    then_b = h.make_graph(
        [h.make_node("Squeeze", ["x", "last"], ["sq"], name="squeeze"),
         h.make_node("Shape", ["sq"], ["sq_shape"], name="sq_shape"),
         h.make_node("Gather", ["sq_shape", "zero"], ["rows"], name="rows", axis=0),
         h.make_node("Equal", ["rows", "two"], ["two_rows"], name="two_rows"),
         h.make_node("If", ["two_rows"], ["picked"], name="inner", then_branch=inner_t,
                     else_branch=inner_e)],
        "then", [], [h.make_value_info("picked", no_type)])
    else_b = h.make_graph([h.make_node("Identity", ["x"], ["kept"], name="kept")], "else", [],
                          [h.make_value_info("kept", no_type)])
    then2 = h.make_graph([h.make_node("Mul", ["y0", "y0"], ["h"], name="square"),
                          h.make_node("Abs", ["h"], ["sq_abs"], name="square_abs")], "then2", [],
                         [h.make_value_info("sq_abs", no_type)])
    else2 = h.make_graph([h.make_node("Abs", ["y0"], ["a"], name="abs")], "else2", [],
                         [h.make_value_info("a", no_type)])
    g = h.make_graph(
        [h.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
         h.make_node("Gather", ["x_shape", "minus1"], ["lastdim"], name="lastdim", axis=0),
         h.make_node("Equal", ["lastdim", "one"], ["is_one"], name="is_one"),
         h.make_node("If", ["is_one"], ["y0"], name="maybe_squeeze", then_branch=then_b,
                     else_branch=else_b),
         h.make_node("Size", ["y0"], ["n"], name="size"),
         h.make_node("Less", ["n", "seven"], ["small"], name="small"),
         h.make_node("If", ["small"], ["h_out"], name="second", then_branch=then2,
                     else_branch=else2),
         h.make_node("Relu", ["x"], ["h"], name="h"),
         h.make_node("Add", ["h_out", "bias"], ["y"], name="y")],
        "shape_if",
        [h.make_tensor_value_info("x", f, [-1, 3, 1])],
        [h.make_tensor_value_info("y", f, None), h.make_tensor_value_info("h", f, None)],
        [numpy_helper.from_array(np.array([-1], dtype=np.int64), "last"),
         numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
         numpy_helper.from_array(np.array(2, dtype=np.int64), "two"),
         numpy_helper.from_array(np.array(-1, dtype=np.int64), "minus1"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
         numpy_helper.from_array(np.array(7, dtype=np.int64), "seven"),
         numpy_helper.from_array(np.array([0.5, -0.25, 1.0], dtype=np.float32), "bias")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    x = rng.uniform(-1, 1, (2, 3, 1)).astype(np.float32)
    y0 = -x[:, :, 0]
    m["shape_if"] = (model, {"x": x}, {"y": y0 * y0 + np.array([0.5, -0.25, 1.0], np.float32),
                                       "h": np.maximum(x, 0)})

    # runtime_if_then / _else: an If on an input's value (Silero VAD's
    # sample rate) whose branches read integer constants of the graph (the
    # dynamo exporter hoists a Pad's pads and a Reshape's shape out of
    # them): their shapes are known only with those constants, and then
    # agree, so the If is planned. The else branch holds an If on a shape
    # whose untaken branch does not even hold for these shapes (a Squeeze
    # of an axis of 6): only the branch a known condition takes is
    # inferred.
    sq_t = h.make_graph([h.make_node("Identity", ["x"], ["xi"], name="keep_x")], "keep", [],
                        [h.make_value_info("xi", no_type)])
    sq_e = h.make_graph([h.make_node("Squeeze", ["x", "one_axis"], ["xs"], name="bad_squeeze")],
                        "squeeze", [], [h.make_value_info("xs", no_type)])
    rt_then = h.make_graph(
        [h.make_node("Pad", ["x", "pads"], ["p"], name="pad_t"),
         h.make_node("Reshape", ["p", "shape3"], ["r"], name="reshape_t")],
        "then", [], [h.make_value_info("r", no_type)])
    rt_else = h.make_graph(
        [h.make_node("Shape", ["x"], ["xshape"], name="xshape"),
         h.make_node("Gather", ["xshape", "one"], ["cols"], name="cols", axis=0),
         h.make_node("Equal", ["cols", "six"], ["is_six"], name="is_six"),
         h.make_node("If", ["is_six"], ["q"], name="maybe_squeeze2", then_branch=sq_t,
                     else_branch=sq_e),
         h.make_node("Pad", ["q", "pads"], ["p2"], name="pad_e"),
         h.make_node("Neg", ["p2"], ["n2"], name="neg_e"),
         h.make_node("Reshape", ["n2", "shape3"], ["r2"], name="reshape_e")],
        "else", [], [h.make_value_info("r2", no_type)])
    g = h.make_graph(
        [h.make_node("If", ["flag"], ["y"], name="by_flag", then_branch=rt_then,
                     else_branch=rt_else)],
        "runtime_if",
        [h.make_tensor_value_info("x", f, [2, 6]),
         h.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [h.make_tensor_value_info("y", f, None)],
        [numpy_helper.from_array(np.array([0, 1, 0, 1], dtype=np.int64), "pads"),
         numpy_helper.from_array(np.array([2, 4, 2], dtype=np.int64), "shape3"),
         numpy_helper.from_array(np.array([1], dtype=np.int64), "one_axis"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
         numpy_helper.from_array(np.array(6, dtype=np.int64), "six")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    x = rng.uniform(-1, 1, (2, 6)).astype(np.float32)
    padded = np.pad(x, ((0, 0), (1, 1))).reshape(2, 4, 2)
    m["runtime_if_then"] = (model, {"x": x, "flag": np.array(True)}, {"y": padded})
    m["runtime_if_else"] = (model, {"x": x, "flag": np.array(False)}, {"y": -padded})

    # runtime_if_broken: an If on an input's value whose else branch does not
    # hold for these shapes at all (a Reshape of 12 values to [3, 5]: Silero
    # VAD's 8 kHz branch fed 16 kHz frames): the model loads, the then
    # branch gives the types, and a run taking it is right.
    bad_e = h.make_graph([h.make_node("Reshape", ["x", "shape35"], ["bad"], name="bad_reshape")],
                         "bad_else", [], [h.make_value_info("bad", no_type)])
    ok_t = h.make_graph([h.make_node("Relu", ["x"], ["ok"], name="relu_t")], "ok_then", [],
                        [h.make_value_info("ok", no_type)])
    g = h.make_graph(
        [h.make_node("If", ["flag"], ["y"], name="by_flag", then_branch=ok_t,
                     else_branch=bad_e)],
        "runtime_if_broken",
        [h.make_tensor_value_info("x", f, [2, 6]),
         h.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [h.make_tensor_value_info("y", f, None)],
        [numpy_helper.from_array(np.array([3, 5], dtype=np.int64), "shape35")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m["runtime_if_broken"] = (model, {"x": x, "flag": np.array(True)}, {"y": np.maximum(x, 0)})

    # while_data_rows: a while loop (no M, no initial condition) whose
    # condition reads the data (the sum of a carried f32 against a bound)
    # and that gives a scan output: how many rows it has is known only by
    # running it (the staged session runs the Loop on its own, a pivot).
    # From [1, 2]: -[1, 2] sums under 0.5, [1, 2] does not: two rows.
    body = h.make_graph([h.make_node("Neg", ["v"], ["v_out"], name="neg"),
                         h.make_node("ReduceSum", ["v_out"], ["s"], name="sum", keepdims=0),
                         h.make_node("Less", ["s", "lim"], ["c_out"], name="test"),
                         h.make_node("Identity", ["v"], ["row"], name="row")],
                        "body", [h.make_tensor_value_info("i", TensorProto.INT64, []),
                                 h.make_tensor_value_info("c", TensorProto.BOOL, []),
                                 h.make_tensor_value_info("v", f, [2])],
                        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                         h.make_tensor_value_info("v_out", f, [2]),
                         h.make_tensor_value_info("row", f, [2])],
                        [numpy_helper.from_array(np.array(0.5, dtype=np.float32), "lim")])
    g = h.make_graph([h.make_node("Loop", ["", "", "x"], ["y", "rows"], name="repeat",
                                  body=body)],
                     "while_data_rows", [h.make_tensor_value_info("x", f, [2])],
                     [h.make_tensor_value_info("y", f, [2]),
                      h.make_tensor_value_info("rows", f, None)])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    x2 = np.array([1, 2], np.float32)
    m["while_data_rows"] = (model, {"x": x2}, {"y": x2, "rows": np.stack([x2, -x2])})

    # placeholder_carry: paddle2onnx's pattern (SLANet-plus): carried values
    # that enter as a scalar placeholder while the body declares [2, 6, 3]
    # and writes a fresh tensor of that shape each iteration (their shape
    # changes after the first), next to a sum over a slice [:, :i + 1] of
    # an outer tensor, whose shape changes every iteration: 40 iterations
    # plan 40 tails, more than a staged session used to keep, so every
    # run planned them all again. The Loop runs on its own (a pivot). A
    # third carried value (paddle2onnx carries weights so) passes through
    # unchanged: the run keeps it instead of copying it every iteration.
    i64 = TensorProto.INT64
    body = h.make_graph(
        [h.make_node("Cast", ["i"], ["fi"], name="fi", to=TensorProto.FLOAT),
         h.make_node("Mul", ["x", "fi"], ["ph_out"], name="fresh"),
         h.make_node("Add", ["i", "one64"], ["end"], name="end"),
         h.make_node("Unsqueeze", ["end", "zero64"], ["ends"], name="ends"),
         h.make_node("Slice", ["src", "zero1", "ends", "one1"], ["prefix"], name="prefix"),
         h.make_node("ReduceSum", ["prefix", "one1"], ["psum"], name="psum", keepdims=0),
         h.make_node("Add", ["acc", "psum"], ["acc_out"], name="accumulate"),
         h.make_node("Identity", ["c"], ["c_out"], name="cond")],
        "body", [h.make_tensor_value_info("i", i64, []),
                 h.make_tensor_value_info("c", TensorProto.BOOL, []),
                 h.make_tensor_value_info("ph", f, ["n", 6, 3]),
                 h.make_tensor_value_info("acc", f, [2]),
                 h.make_tensor_value_info("wk", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("ph_out", f, ["n", 6, 3]),
         h.make_tensor_value_info("acc_out", f, [2]),
         h.make_tensor_value_info("wk", f, [3])],
        [numpy_helper.from_array(np.array(1, np.int64), "one64"),
         numpy_helper.from_array(np.array([0], np.int64), "zero64"),
         numpy_helper.from_array(np.array([0], np.int64), "zero1"),
         numpy_helper.from_array(np.array([1], np.int64), "one1")])
    g = h.make_graph(
        [h.make_node("Loop", ["trips", "go", "ph0", "acc0", "w0"], ["ph_end", "acc_end", "w_end"],
                     name="decode", body=body)],
        "placeholder_carry",
        [h.make_tensor_value_info("x", f, [2, 6, 3]), h.make_tensor_value_info("src", f, [2, 40])],
        [h.make_tensor_value_info("ph_end", f, None), h.make_tensor_value_info("acc_end", f, None),
         h.make_tensor_value_info("w_end", f, None)],
        [numpy_helper.from_array(np.array(40, np.int64), "trips"),
         numpy_helper.from_array(np.array(True), "go"),
         numpy_helper.from_array(np.array(0, np.float32), "ph0"),
         numpy_helper.from_array(np.zeros(2, np.float32), "acc0"),
         numpy_helper.from_array(np.array([1.5, -2.0, 0.25], np.float32), "w0")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    rng = np.random.RandomState(5)
    xp, src = rng.randn(2, 6, 3).astype(np.float32), rng.randn(2, 40).astype(np.float32)
    m["placeholder_carry"] = (model, {"x": xp, "src": src},
                              {"ph_end": xp * 39,
                               "acc_end": np.cumsum(src, axis=1).sum(axis=1).astype(np.float32),
                               "w_end": np.array([1.5, -2.0, 0.25], np.float32)})

    # if_data_branch: an If on an input whose then branch computes a shape
    # from the data (NonZero): the branch cannot be planned once, so the If
    # runs on its own and what follows is planned on what it gave.
    then_b = h.make_graph([h.make_node("NonZero", ["xs"], ["nz"], name="nz")], "nz_then", [],
                          [h.make_tensor_value_info("nz", TensorProto.INT64, None)])
    else_b = h.make_graph([h.make_node("Identity", ["seven"], ["sv"], name="sv")], "seven_else",
                          [], [h.make_tensor_value_info("sv", TensorProto.INT64, None)])
    g = h.make_graph(
        [h.make_node("If", ["flag"], ["picked"], name="by_data", then_branch=then_b,
                     else_branch=else_b),
         h.make_node("Add", ["picked", "one"], ["y"], name="after")],
        "if_data_branch",
        [h.make_tensor_value_info("xs", f, [6]),
         h.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [h.make_tensor_value_info("y", TensorProto.INT64, None)],
        [numpy_helper.from_array(np.array([[7]], dtype=np.int64), "seven"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    xs = np.array([0, 1.5, 0, -2, 3, 0], np.float32)
    m["if_data_then"] = (model, {"xs": xs, "flag": np.array(True)},
                         {"y": np.array(np.nonzero(xs), np.int64) + 1})
    m["if_data_else"] = (model, {"xs": xs, "flag": np.array(False)},
                         {"y": np.array([[8]], np.int64)})

    # if_cond_2d: openWakeWord's models (torch 1.12) branch on a comparison
    # of a Gemm's [1, 1] output: a condition of one element but rank 2,
    # which ONNX Runtime runs. True for x.w >= 0.5, else False.
    then_b = h.make_graph([h.make_node("Mul", ["p", "two"], ["t_out"], name="double")],
                          "then", [], [h.make_tensor_value_info("t_out", f, [1, 1])])
    else_b = h.make_graph([h.make_node("Neg", ["p"], ["e_out"], name="negate")],
                          "else", [], [h.make_tensor_value_info("e_out", f, [1, 1])])
    g = h.make_graph(
        [h.make_node("Gemm", ["x", "w"], ["p"], name="score", transB=1),
         h.make_node("GreaterOrEqual", ["p", "half"], ["ge"], name="ge"),
         h.make_node("If", ["ge"], ["y"], name="pick", then_branch=then_b,
                     else_branch=else_b)],
        "if_cond_2d", [h.make_tensor_value_info("x", f, [1, 4])],
        [h.make_tensor_value_info("y", f, [1, 1])],
        [numpy_helper.from_array(np.full((1, 4), 0.25, np.float32), "w"),
         numpy_helper.from_array(np.array(0.5, np.float32), "half"),
         numpy_helper.from_array(np.array(2, np.float32), "two")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 14)])
    for case, x in (("then", np.array([[1, 1, 1, 0.5]], np.float32)),
                    ("else", np.array([[1, 0, 0, 0.5]], np.float32))):
        p = x @ np.full((4, 1), 0.25, np.float32)
        m["if_cond_2d_" + case] = (model, {"x": x}, {"y": p * 2 if p[0, 0] >= 0.5 else -p})

    # loop_invariant: tf2onnx hands a Keras RNN's weights to its Loop as
    # carried values the body passes through unchanged (piper's nakdimon).
    # W (a constant) and b (an input) are read from outside instead, their
    # final values' readers reading the initial ones (EXPLAIN_EXPECT); t,
    # whose final value is a graph output, stays carried.
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"], name="keep"),
         h.make_node("MatMul", ["acc", "W_in"], ["p"], name="mm"),
         h.make_node("Add", ["p", "b_in"], ["q"], name="add"),
         h.make_node("Add", ["q", "t_in"], ["acc_out"], name="add_t"),
         h.make_node("Identity", ["acc_out"], ["row"], name="row")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("c", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc", f, [1, 3]), h.make_tensor_value_info("W_in", f, [3, 3]),
         h.make_tensor_value_info("b_in", f, [3]), h.make_tensor_value_info("t_in", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("acc_out", f, [1, 3]),
         h.make_tensor_value_info("W_in", f, [3, 3]), h.make_tensor_value_info("b_in", f, [3]),
         h.make_tensor_value_info("t_in", f, [3]), h.make_tensor_value_info("row", f, [1, 3])])
    g = h.make_graph(
        [h.make_node("Loop", ["n", "", "acc0", "W", "b", "t"],
                     ["acc", "W_fin", "b_fin", "t_fin", "rows"], name="rnn", body=body),
         h.make_node("Neg", ["W_fin"], ["w_neg"], name="w_neg"),
         h.make_node("Mul", ["b_fin", "b_fin"], ["b_sq"], name="b_sq")],
        "loop_invariant",
        [h.make_tensor_value_info("n", TensorProto.INT64, []),
         h.make_tensor_value_info("acc0", f, [1, 3]), h.make_tensor_value_info("b", f, [3]),
         h.make_tensor_value_info("t", f, [3])],
        [h.make_tensor_value_info("acc", f, [1, 3]), h.make_tensor_value_info("w_neg", f, [3, 3]),
         h.make_tensor_value_info("b_sq", f, [3]), h.make_tensor_value_info("t_fin", f, [3]),
         h.make_tensor_value_info("rows", f, None)],
        [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (3, 3)).astype(np.float32), "W")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    W = numpy_helper.to_array(g.initializer[0])
    a0 = rng.uniform(-1, 1, (1, 3)).astype(np.float32)
    b = rng.uniform(-1, 1, 3).astype(np.float32)
    t = rng.uniform(-1, 1, 3).astype(np.float32)
    acc, rows = a0, []
    for _ in range(3):
        acc = acc @ W + b + t
        rows.append(acc)
    m["loop_invariant"] = (model, {"n": np.array(3, dtype=np.int64), "acc0": a0, "b": b, "t": t},
                           {"acc": acc, "w_neg": -W, "b_sq": b * b, "t_fin": t,
                            "rows": np.stack(rows)})

    # loop_hoist_nodes: paddle2onnx's attention decoders (SLANet) pass the
    # encoder's features to the Loop as a carried value given back as
    # Squeeze(Unsqueeze(x, 0) + 0.0, 0) and project them by the same matrix
    # every step. The features are read from outside (the chain gives the
    # value back), the chain is dropped, and every node that then reads
    # only what all iterations share goes before the Loop, its axes
    # constant copied with it (EXPLAIN_EXPECT): the projection, its sum
    # over the rows, the Transpose of the recurrent weights; the product by
    # h stays.
    C = np.array
    body = h.make_graph(
        [h.make_node("Constant", [], ["ax0"], name="ax0", value=numpy_helper.from_array(
            C([0], np.int64), "ax0v")),
         h.make_node("Constant", [], ["zero"], name="zero", value=numpy_helper.from_array(
            C([0.0], np.float32), "zerov")),
         h.make_node("Unsqueeze", ["feat_in", "ax0"], ["u"], name="u"),
         h.make_node("Add", ["u", "zero"], ["z"], name="z"),
         h.make_node("Squeeze", ["z", "ax0"], ["feat_out"], name="sq"),
         h.make_node("MatMul", ["feat_in", "Wk"], ["kp"], name="kp"),
         h.make_node("ReduceSum", ["kp", "ax0"], ["s"], name="s", keepdims=1),
         h.make_node("Transpose", ["Wr"], ["wrt"], name="wrt", perm=[1, 0]),
         h.make_node("MatMul", ["h_in", "wrt"], ["hr"], name="hr"),
         h.make_node("Add", ["hr", "s"], ["pre"], name="pre"),
         h.make_node("Tanh", ["pre"], ["h_out"], name="act"),
         h.make_node("Identity", ["h_out"], ["row"], name="row"),
         h.make_node("Identity", ["c"], ["c_out"], name="keep")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("c", TensorProto.BOOL, []),
         h.make_tensor_value_info("h_in", f, [1, 3]),
         h.make_tensor_value_info("feat_in", f, [4, 3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("h_out", f, [1, 3]),
         h.make_tensor_value_info("feat_out", f, [4, 3]),
         h.make_tensor_value_info("row", f, [1, 3])])
    Wk = rng.uniform(-0.5, 0.5, (3, 3)).astype(np.float32)
    Wr = rng.uniform(-0.5, 0.5, (3, 3)).astype(np.float32)
    g = h.make_graph(
        [h.make_node("Loop", ["n", "", "h0", "feat"], ["h_fin", "feat_fin", "rows"], name="lh",
                     body=body)],
        "loop_hoist_nodes",
        [h.make_tensor_value_info("n", TensorProto.INT64, []),
         h.make_tensor_value_info("h0", f, [1, 3]), h.make_tensor_value_info("feat", f, [4, 3])],
        [h.make_tensor_value_info("h_fin", f, [1, 3]),
         h.make_tensor_value_info("rows", f, None)],
        [numpy_helper.from_array(Wk, "Wk"), numpy_helper.from_array(Wr, "Wr")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    h0 = rng.uniform(-1, 1, (1, 3)).astype(np.float32)
    feat = rng.uniform(-1, 1, (4, 3)).astype(np.float32)
    hh, rows = h0, []
    for _ in range(3):
        hh = np.tanh(hh @ Wr.T + (feat @ Wk).sum(0, keepdims=True))
        rows.append(hh)
    m["loop_hoist_nodes"] = (model, {"n": np.array(3, dtype=np.int64), "h0": h0, "feat": feat},
                             {"h_fin": hh, "rows": np.stack(rows)})

    # loop_dead_carried: a while loop (its condition k + 1 < limit) with a
    # scan output, which the core splits into a Loop that counts the trips
    # and one that runs them (pl_opset_loop_count_split). The counting Loop
    # needs only k: acc and junk are dropped from it with the nodes that
    # computed them; junk, whose final value nothing reads, from the other
    # too (EXPLAIN_EXPECT). k's final value is not read either, but the
    # condition depends on it: it stays.
    body = h.make_graph(
        [h.make_node("Add", ["k", "one"], ["k_out"], name="step"),
         h.make_node("Less", ["k_out", "limit"], ["c_out"], name="more"),
         h.make_node("MatMul", ["acc", "W"], ["p"], name="mm"),
         h.make_node("Add", ["p", "b"], ["acc_out"], name="add"),
         h.make_node("Add", ["junk", "junk"], ["junk_out"], name="junk"),
         h.make_node("Identity", ["acc_out"], ["row"], name="row")],
        "body",
        [h.make_tensor_value_info("i", TensorProto.INT64, []),
         h.make_tensor_value_info("c", TensorProto.BOOL, []),
         h.make_tensor_value_info("k", TensorProto.INT64, []),
         h.make_tensor_value_info("acc", f, [1, 3]), h.make_tensor_value_info("junk", f, [3])],
        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         h.make_tensor_value_info("k_out", TensorProto.INT64, []),
         h.make_tensor_value_info("acc_out", f, [1, 3]),
         h.make_tensor_value_info("junk_out", f, [3]), h.make_tensor_value_info("row", f, [1, 3])])
    g = h.make_graph(
        [h.make_node("Loop", ["", "c0", "k0", "acc0", "junk0"], ["k_fin", "acc", "junk_fin", "rows"],
                     name="dl", body=body)],
        "loop_dead_carried",
        [h.make_tensor_value_info("c0", TensorProto.BOOL, []),
         h.make_tensor_value_info("limit", TensorProto.INT64, []),
         h.make_tensor_value_info("acc0", f, [1, 3]), h.make_tensor_value_info("junk0", f, [3])],
        [h.make_tensor_value_info("acc", f, [1, 3]), h.make_tensor_value_info("rows", f, None)],
        [numpy_helper.from_array(rng.uniform(-0.5, 0.5, (3, 3)).astype(np.float32), "W"),
         numpy_helper.from_array(rng.uniform(-1, 1, 3).astype(np.float32), "b"),
         numpy_helper.from_array(np.array(0, dtype=np.int64), "k0"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    W = numpy_helper.to_array(g.initializer[0])
    b = numpy_helper.to_array(g.initializer[1])
    a0 = rng.uniform(-1, 1, (1, 3)).astype(np.float32)
    acc, rows = a0, []
    for _ in range(4):  # k + 1 = 1, 2, 3 continue; 4 stops after its trip
        acc = acc @ W + b
        rows.append(acc)
    m["loop_dead_carried"] = (model, {"c0": np.array(True), "limit": np.array(4, dtype=np.int64),
                                      "acc0": a0, "junk0": np.ones(3, np.float32)},
                              {"acc": acc, "rows": np.stack(rows)})

    # loop_product: tf2onnx's Keras RNN that it could not fuse (piper's
    # nakdimon): a while loop whose counter t steps by 1, the step's input
    # Gather(X, t) times the input weights (a carried value passed through)
    # and the state times the recurrent ones. The first product is hoisted
    # (EXPLAIN_EXPECT): X @ W made once before the Loop, the body gathers
    # its row. So is the one of 'seq', whose rows along axis 1 the
    # iteration number picks, its trip count a constant of as many rows.
    # Not hoisted (EXPLAIN_REJECT): 'emb' gathers rows of a constant table
    # (the product of all of it is work no iteration asked for) and 'few'
    # runs 2 trips over 5 rows. 'lin' is PyTorch's scripted loop of
    # `linear(x[t])`: a Gemm by the transposed weights with a bias, hoisted
    # as a MatMul by their transpose, the bias added to the gathered row.
    # 'gru' multiplies its step's row by two matrices (as a GRU's gates do)
    # and sums it: both products are hoisted, each gathering its own row.
    T, B, E, H = 5, 2, 3, 4

    def rnn_body(name, gather_axis, counter, x_name, gemm=False, gates=False):
        mm_x = (h.make_node("Gemm", ["x_t", "Wt", "bias"], ["p"], name="mm_x", transB=1) if gemm
                else h.make_node("MatMul", ["x_t", "W_in"], ["p"], name="mm_x"))
        nodes = [h.make_node("Gather", [x_name, counter], ["x_t"], name="read", axis=gather_axis),
                 mm_x,
                 h.make_node("MatMul", ["h", "R"], ["q"], name="mm_h"),
                 h.make_node("Add", ["p", "q"], ["s" if not gates else "s0"], name="sum")]
        if gates:  # two products of x_t and a reduction of it (which keeps 'read')
            nodes += [h.make_node("MatMul", ["x_t", "W2"], ["p2"], name="mm_x2"),
                      h.make_node("ReduceSum", ["x_t", "ax1"], ["r"], name="rsum", keepdims=1),
                      h.make_node("Add", ["s0", "p2"], ["s1"], name="sum2"),
                      h.make_node("Add", ["s1", "r"], ["s"], name="sum3")]
        nodes += [h.make_node("Tanh", ["s"], ["h_out"], name="act"),
                 h.make_node("Identity", ["h_out"], ["row"], name="row")]
        ins = [h.make_tensor_value_info("i", TensorProto.INT64, []),
               h.make_tensor_value_info("c", TensorProto.BOOL, [])]
        outs = [h.make_tensor_value_info("c_out", TensorProto.BOOL, [])]
        if counter == "k":
            nodes += [h.make_node("Add", ["k", "one_in"], ["k_out"], name="step"),
                      h.make_node("Less", ["k_out", "limit"], ["c_out"], name="more")]
            ins.append(h.make_tensor_value_info("k", TensorProto.INT64, []))
            outs.append(h.make_tensor_value_info("k_out", TensorProto.INT64, []))
        else:
            nodes.append(h.make_node("Identity", ["c"], ["c_out"], name="keep"))
        ins += [h.make_tensor_value_info("h", f, [B, H]), h.make_tensor_value_info("W_in", f, [E, H])]
        outs += [h.make_tensor_value_info("h_out", f, [B, H]),
                 h.make_tensor_value_info("W_in", f, [E, H]),
                 h.make_tensor_value_info("row", f, [B, H])]
        body = h.make_graph(nodes, name + "_body", ins, outs,
                            [numpy_helper.from_array(np.array(1, np.int64), "one_in")])
        return body

    W = rng.uniform(-0.5, 0.5, (E, H)).astype(np.float32)
    R = rng.uniform(-0.5, 0.5, (H, H)).astype(np.float32)
    table = rng.uniform(-1, 1, (T, B, E)).astype(np.float32)
    X = rng.uniform(-1, 1, (T, B, E)).astype(np.float32)
    seq = rng.uniform(-1, 1, (B, T, E)).astype(np.float32)
    h0 = np.zeros((B, H), np.float32)
    bias = rng.uniform(-0.5, 0.5, H).astype(np.float32)
    W2 = rng.uniform(-0.5, 0.5, (E, H)).astype(np.float32)
    loops = [("rnn", ["", "c0", "k0", "h0", "W"], rnn_body("rnn", 0, "k", "X")),
             ("seq", ["trips", "c0", "h0", "W"], rnn_body("seq", 1, "i", "seq")),
             ("emb", ["", "c0", "k0", "h0", "W"], rnn_body("emb", 0, "k", "table")),
             ("few", ["two", "c0", "h0", "W"], rnn_body("few", 0, "i", "X")),
             ("lin", ["trips", "c0", "h0", "W"], rnn_body("lin", 0, "i", "X", gemm=True)),
             ("gru", ["", "c0", "k0", "h0", "W"], rnn_body("gru", 0, "k", "X", gates=True))]
    nodes, outputs, want = [], [], {}
    for name, ins, body in loops:
        carried = ["k_fin"] if "k0" in ins else []
        nodes.append(h.make_node("Loop", ins, [name + "_" + o for o in carried + ["h", "W", "rows"]],
                                 name=name, body=body))
        outputs += [h.make_tensor_value_info(name + "_h", f, [B, H]),
                    h.make_tensor_value_info(name + "_rows", f, None)]
        src = {"rnn": X, "seq": seq.transpose(1, 0, 2), "emb": table, "few": X[:2], "lin": X,
               "gru": X}[name]
        hh, rows = h0, []
        for x_t in src:
            if name == "gru":
                hh = np.tanh(x_t @ W + hh @ R + x_t @ W2 + x_t.sum(1, keepdims=True))
            else:
                hh = np.tanh((x_t @ W + bias if name == "lin" else x_t @ W) + hh @ R)
            rows.append(hh)
        want[name + "_h"] = hh
        want[name + "_rows"] = np.stack(rows)
    g = h.make_graph(
        nodes, "loop_product",
        [h.make_tensor_value_info("X", f, [T, B, E]), h.make_tensor_value_info("seq", f, [B, T, E]),
         h.make_tensor_value_info("c0", TensorProto.BOOL, []),
         h.make_tensor_value_info("limit", TensorProto.INT64, [])],
        outputs,
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(np.ascontiguousarray(W.T), "Wt"),
         numpy_helper.from_array(bias, "bias"), numpy_helper.from_array(table, "table"),
         numpy_helper.from_array(W2, "W2"), numpy_helper.from_array(np.array([1], np.int64), "ax1"), numpy_helper.from_array(h0, "h0"),
         numpy_helper.from_array(np.array(0, np.int64), "k0"),
         numpy_helper.from_array(np.array(T, np.int64), "trips"),
         numpy_helper.from_array(np.array(2, np.int64), "two")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m["loop_product"] = (model, {"X": X, "seq": seq, "c0": np.array(True),
                                 "limit": np.array(T, np.int64)}, want)

    # scan_product: tf2onnx writes a TF1 custom RNN cell as a Scan over the
    # sequence, the body multiplying each slice. Both products are hoisted
    # (EXPLAIN_EXPECT): 'xs' along axis 0, its slice read by the MatMul
    # alone (the scan input goes, the product is scanned instead), and 'ys'
    # scanned along axis 1 in reverse by a Gemm with transB and bias, its
    # slice also summed (it stays a scan input beside its product's).
    body = h.make_graph(
        [h.make_node("MatMul", ["x_t", "Wx"], ["px"], name="mm_x"),
         h.make_node("Gemm", ["y_t", "Wyt", "by"], ["py"], name="mm_y", transB=1),
         h.make_node("ReduceSum", ["y_t", "ax1"], ["ry"], name="ry", keepdims=1),
         h.make_node("MatMul", ["h", "R"], ["q"], name="mm_h"),
         h.make_node("Add", ["px", "py"], ["s0"], name="s0"),
         h.make_node("Add", ["s0", "q"], ["s1"], name="s1"),
         h.make_node("Add", ["s1", "ry"], ["s2"], name="s2"),
         h.make_node("Tanh", ["s2"], ["h_out"], name="act"),
         h.make_node("Identity", ["h_out"], ["row"], name="row")],
        "scan_body",
        [h.make_tensor_value_info("h", f, [B, H]), h.make_tensor_value_info("x_t", f, [B, E]),
         h.make_tensor_value_info("y_t", f, [B, E])],
        [h.make_tensor_value_info("h_out", f, [B, H]), h.make_tensor_value_info("row", f, [B, H])])
    Wx = rng.uniform(-0.5, 0.5, (E, H)).astype(np.float32)
    Wy = rng.uniform(-0.5, 0.5, (E, H)).astype(np.float32)
    by = rng.uniform(-0.5, 0.5, H).astype(np.float32)
    g = h.make_graph(
        [h.make_node("Scan", ["h0", "xs", "ys"], ["h_fin", "rows"], name="scan", body=body,
                     num_scan_inputs=2, scan_input_axes=[0, 1], scan_input_directions=[0, 1])],
        "scan_product",
        [h.make_tensor_value_info("xs", f, [T, B, E]), h.make_tensor_value_info("ys", f, [B, T, E])],
        [h.make_tensor_value_info("h_fin", f, [B, H]), h.make_tensor_value_info("rows", f, None)],
        [numpy_helper.from_array(Wx, "Wx"), numpy_helper.from_array(np.ascontiguousarray(Wy.T), "Wyt"),
         numpy_helper.from_array(by, "by"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(h0, "h0"), numpy_helper.from_array(np.array([1], np.int64), "ax1")])
    model = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    xs = rng.uniform(-1, 1, (T, B, E)).astype(np.float32)
    ys = rng.uniform(-1, 1, (B, T, E)).astype(np.float32)
    hh, rows = h0, []
    for t in range(T):
        y_t = ys[:, T - 1 - t]
        hh = np.tanh(xs[t] @ Wx + (y_t @ Wy + by) + hh @ R + y_t.sum(1, keepdims=True))
        rows.append(hh)
    m["scan_product"] = (model, {"xs": xs, "ys": ys}, {"h_fin": hh, "rows": np.stack(rows)})
    return m


# What `plinth explain` must say of a case of onnx_models (a rewrite that
# happened), beside the outputs being right.
EXPLAIN_EXPECT = {
    "loop_invariant": ["Loop 'rnn': 2 carried values its body passes through unchanged read "
                       "from outside instead ('W', 'b')"],
    "loop_product": ["Loop 'rnn': MatMul 'mm_x' (the row of 'X' Gather 'read' takes each "
                     "iteration, by 'W') hoisted out of the body",
                     "Loop 'seq': MatMul 'mm_x' (the row of 'seq' Gather 'read' takes each "
                     "iteration, by 'W') hoisted out of the body",
                     "Loop 'lin': Gemm 'mm_x' (the row of 'X' Gather 'read' takes each "
                     "iteration, by 'Wt') hoisted out of the body",
                     "Loop 'gru': MatMul 'mm_x' (the row of 'X' Gather 'read' takes each "
                     "iteration, by 'W') hoisted out of the body",
                     "Loop 'gru': MatMul 'mm_x2' (the row of 'X' Gather 'read' takes each "
                     "iteration, by 'W2') hoisted out of the body"],
    "scan_product": ["Scan 'scan': MatMul 'mm_x' (of the slice of 'xs' each iteration, by "
                     "'Wx') hoisted out of the body",
                     "Scan 'scan': Gemm 'mm_y' (of the slice of 'ys' each iteration, by 'Wyt') "
                     "hoisted out of the body"],
    "loop_hoist_nodes": ["Loop 'lh': 1 carried value its body passes through unchanged read "
                         "from outside instead ('feat')",
                         "Loop 'lh': 3 nodes computing nothing the body reads dropped "
                         "(Unsqueeze 'u', Add 'z', Squeeze 'sq')",
                         "Loop 'lh': 3 nodes reading only what every iteration shares computed "
                         "once, before the Loop (", "MatMul 'kp'", "ReduceSum 's'",
                         "Transpose 'wrt'"],
    "loop_dead_carried": ["Loop 'dl': 1 of 3 carried values dropped",
                          "Loop 'dl_counting': 2 of 4 carried values dropped",
                          "its body runs 3 of its 7 nodes"],
}

# What `plinth explain` must not say of a case of onnx_models (a rewrite
# that would be wrong or wasteful there).
EXPLAIN_REJECT = {
    "loop_product": ["Loop 'emb': MatMul", "Loop 'few': MatMul", "products left in",
                     "kept in its body"],
    "scan_product": ["products left in", "kept in its body"],
    # h changes every iteration: its product stays in the body
    "loop_hoist_nodes": ["MatMul 'hr'", "Tanh 'act'", "its body kept as it is",
                         "nodes left in its body"],
}

# A node of the case's bodies that a [placement] pin names in one more run.
PIN_BODY = {"loop_product": "mm_h"}

# Steps `plinth run --runs 2 --warmup 1` must list (backend, name), in
# order: a staged session's pivot and the steps of the tail planned at run
# time come after the prefix's (pl_session_step_info).
STEPS_EXPECT = {
    "if_data_then": [("control", "by_data"), ("cpu", "after (Add, cpu)")],
}


def import_onnx():
    """The onnx package, or None (and says so) when this Python has none:
    the case then skips (77)."""
    try:
        import onnx
    except ImportError:
        print("skip: onnx is missing under %s" % sys.executable)
        return None
    return onnx


def case_onnx(args, name):
    onnx = import_onnx()
    if onnx is None:
        return 77
    model, inputs, want = onnx_models()[name]
    work = os.path.join(args.work, "onnx_" + name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    files = []
    for n_, a in inputs.items():
        fp = os.path.join(work, n_ + ".npy")
        np.save(fp, a)
        files.append((n_, fp))
    # The ONNX file, then its JSON form (bodies written and read back).
    env = dict(os.environ, PLINTH_MODULE_PATH=args.modules)
    js = os.path.join(work, "model.json")
    r = subprocess.run([args.plinth, "convert", path, js], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print("FAIL: convert: %s" % (r.stderr or r.stdout).strip())
        return 1
    if name in EXPLAIN_EXPECT:
        env = dict(os.environ, PLINTH_MODULE_PATH=args.modules)
        r = subprocess.run([args.plinth, "explain", path] +
                           sum([["--shape", "%s=%s" % (k, ",".join(map(str, a.shape)) or "")]
                                for k, a in inputs.items() if a.ndim > 0], []),
                           capture_output=True, text=True, env=env)
        for want_text in EXPLAIN_EXPECT[name]:
            if want_text not in r.stdout:
                print("FAIL: explain does not say \"%s\":\n%s%s" % (want_text, r.stdout,
                                                                    r.stderr))
                return 1
        for bad_text in EXPLAIN_REJECT.get(name, []):
            if bad_text in r.stdout:
                print("FAIL: explain says \"%s\":\n%s" % (bad_text, r.stdout))
                return 1
    # The ONNX file and its JSON form on the default placement, then the
    # ONNX file with every node on cpu and with the vendor template first
    # (bodies are sessions of their own, placed like models).
    runs = [("onnx", path, ()), ("json", js, ())]
    for order in ("cpu", "example_acc, cpu"):
        ini = os.path.join(work, "order_%s.ini" % order.split(",")[0])
        with open(ini, "w") as f:
            f.write("[placement]\norder = %s\n" % order)
        runs.append(("onnx_" + order.split(",")[0], path, ("--config", ini)))
    if name in PIN_BODY:  # a pin names a body's node (every body that has it)
        ini = os.path.join(work, "pinned.ini")
        with open(ini, "w") as f:
            f.write("[placement]\norder = example_acc, cpu\npin = %s=cpu\n" % PIN_BODY[name])
        runs.append(("onnx_pinned", path, ("--config", ini)))
        bad = os.path.join(work, "pinned_bad.ini")
        with open(bad, "w") as f:
            f.write("[placement]\norder = example_acc, cpu\npin = %s_typo=cpu\n" % PIN_BODY[name])
        r = run_plinth(args, path, files, work, "out_bad", ["--runs", "1"], ("--config", bad))
        if r.returncode == 0 or "names a node the model does not have" not in r.stderr:
            print("FAIL: a pin naming no node was not refused: %s" % (r.stderr or r.stdout))
            return 1
    for tag, src, config in runs:
        r = run_plinth(args, src, files, work, "out_" + tag, ["--runs", "2", "--warmup", "1"],
                       config)
        if r.returncode != 0:
            print("FAIL: plinth run (%s): %s" % (tag, (r.stderr or r.stdout).strip()))
            return 1
        listed = [line.split(None, 3)[2:] for line in r.stdout.split("steps (2 runs):")[-1]
                  .splitlines() if " ms " in line]
        if (name in STEPS_EXPECT and not config and
                [tuple(x) for x in listed] != STEPS_EXPECT[name]):
            print("FAIL: plinth run (%s) lists the steps %s, expected %s:\n%s" %
                  (tag, listed, STEPS_EXPECT[name], r.stdout))
            return 1
        for n_, w in want.items():
            got = np.load(os.path.join(work, "out_" + tag, n_ + ".npy"))
            if got.shape != w.shape:
                print("FAIL: %s output %s has shape %s, expected %s" % (tag, n_, got.shape, w.shape))
                return 1
            if w.size == 0:
                print("%s %s: empty, shape %s" % (tag, n_, w.shape))
                continue
            err = float(np.max(np.abs(got - w)) / max(float(np.max(np.abs(w))), 1e-30))
            print("%s %s: max rel err %.3g" % (tag, n_, err))
            if err > 1e-5:
                print("FAIL")
                return 1
    return 0


# ---- malformed bodies --------------------------------------------------------

def bad_models():
    from onnx import TensorProto, helper as h, numpy_helper

    f = TensorProto.FLOAT
    scalar_b = h.make_tensor_value_info("cond", TensorProto.BOOL, [])
    x = h.make_tensor_value_info("x", f, [2])
    y = h.make_tensor_value_info("y", f, [2])

    def branch(name, outs):
        nodes = [h.make_node("Neg", ["x"], [o], name=name + "_" + o) for o in outs]
        return h.make_graph(nodes, name, [], [h.make_tensor_value_info(o, f, [2]) for o in outs])

    def model(nodes, inputs, outputs, opset=13):
        g = h.make_graph(nodes, "bad", inputs, outputs)
        return h.make_model(g, opset_imports=[h.make_opsetid("", opset)])

    loop_body_ok_inputs = [h.make_tensor_value_info("i", TensorProto.INT64, []),
                           h.make_tensor_value_info("c", TensorProto.BOOL, []),
                           h.make_tensor_value_info("v", f, [2])]
    m = {}
    # If: then_branch gives 2 outputs, the node has 1.
    m["if_branch_outputs"] = (
        model([h.make_node("If", ["cond"], ["y"], name="choose",
                           then_branch=branch("then", ["a", "b"]),
                           else_branch=branch("else", ["e"]))], [scalar_b, x], [y]),
        "node 'choose' (If): then_branch has 0 inputs and 2 outputs; it must have 0 and 1")
    # If: the branches disagree on the dtype.
    int_branch = h.make_graph([h.make_node("Constant", [], ["k"], name="kc",
                                           value=h.make_tensor("kv", TensorProto.INT64, [2], [1, 2]))],
                              "else", [], [h.make_tensor_value_info("k", TensorProto.INT64, [2])])
    m["if_branch_dtypes"] = (
        model([h.make_node("If", ["cond"], ["y"], name="choose",
                           then_branch=branch("then", ["a"]), else_branch=int_branch)],
              [scalar_b, x], [h.make_tensor_value_info("y", f, None)]),
        "node 'choose' (If): output 0 is f32 in then_branch but i64 in else_branch")
    # Loop: the body takes 2 inputs for 1 carried value (needs 3).
    body = h.make_graph([h.make_node("Identity", ["c"], ["c_out"], name="pass"),
                         h.make_node("Not", ["c"], ["c_not"], name="flip")], "body",
                        loop_body_ok_inputs[:2],
                        [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                         h.make_tensor_value_info("c_not", TensorProto.BOOL, [])])
    trips = h.make_tensor_value_info("n", TensorProto.INT64, [])
    m["loop_body_inputs"] = (
        model([h.make_node("Loop", ["n", "", "x"], ["y"], name="repeat", body=body)],
              [trips, x], [y]),
        "node 'repeat' (Loop): body has 2 inputs and 2 outputs; it must have 3 and 2")
    # Loop: the body gives too few outputs (cond and 0 carried for 1 carried).
    body2 = h.make_graph([h.make_node("Identity", ["c"], ["c_out"], name="pass")], "body",
                         loop_body_ok_inputs, [h.make_tensor_value_info("c_out", TensorProto.BOOL, [])])
    m["loop_body_outputs"] = (
        model([h.make_node("Loop", ["n", "", "x"], ["y"], name="repeat", body=body2)],
              [trips, x], [y]),
        "node 'repeat' (Loop): body has 3 inputs and 1 output; it must have 3 and 2")
    # Loop: the carried value changes dtype.
    body3 = h.make_graph([h.make_node("Identity", ["c"], ["c_out"], name="pass"),
                          h.make_node("Cast", ["v"], ["v_out"], name="cast", to=TensorProto.INT64)],
                         "body", loop_body_ok_inputs,
                         [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                          h.make_tensor_value_info("v_out", TensorProto.INT64, [2])])
    m["loop_carried_dtype"] = (
        model([h.make_node("Loop", ["n", "", "x"], ["y"], name="repeat", body=body3)],
              [trips, x], [h.make_tensor_value_info("y", f, None)]),
        "node 'repeat' (Loop): carried value 0 enters as f32 but the body gives i64")
    # Scan: the body takes 1 input for 1 state + 1 scan input.
    sbody = h.make_graph([h.make_node("Identity", ["s"], ["s_out"], name="pass")], "body",
                         [h.make_tensor_value_info("s", f, [2])],
                         [h.make_tensor_value_info("s_out", f, [2])])
    xs = h.make_tensor_value_info("xs", f, [3, 2])
    m["scan_body_inputs"] = (
        model([h.make_node("Scan", ["x", "xs"], ["y"], name="sweep", body=sbody,
                           num_scan_inputs=1)], [x, xs], [y], opset=11),
        "node 'sweep' (Scan): body has 1 input and 1 output; it must have 2 and 1")
    # A body reads a name defined nowhere.
    ghost = h.make_graph([h.make_node("Add", ["x", "ghost"], ["a"], name="add_ghost")], "then", [],
                         [h.make_tensor_value_info("a", f, [2])])
    m["body_undefined_name"] = (
        model([h.make_node("If", ["cond"], ["y"], name="choose", then_branch=ghost,
                           else_branch=branch("else", ["e"]))], [scalar_b, x], [y]),
        "node 'choose' (If): attribute 'then_branch': node 'add_ghost' (Add): input 'ghost' is not "
        "defined by any node, input or constant of this body or an enclosing graph")
    # A Loop with a scan output whose trip count is only known at run time.
    body4 = h.make_graph([h.make_node("Identity", ["c"], ["c_out"], name="pass"),
                          h.make_node("Neg", ["v"], ["v_out"], name="neg"),
                          h.make_node("Identity", ["v"], ["row"], name="row")],
                         "body", loop_body_ok_inputs,
                         [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                          h.make_tensor_value_info("v_out", f, [2]),
                          h.make_tensor_value_info("row", f, [2])])
    # The same Loop with its scan output's shape declared: it runs when the
    # trip count given matches, and a run that stops after 3 of the 5
    # planned rows fails naming the node.
    # A Loop run to know its outputs (a pivot: its body's NonZero makes its
    # row's length data) whose rows come out of different lengths: the run
    # fails naming the node, the iteration and both shapes.
    body6 = h.make_graph([h.make_node("Gather", ["xs", "i"], ["v"], name="pick", axis=0),
                          h.make_node("NonZero", ["v"], ["row"], name="nz"),
                          h.make_node("Identity", ["c"], ["c_out"], name="keep")],
                         "body", [h.make_tensor_value_info("i", TensorProto.INT64, []),
                                  h.make_tensor_value_info("c", TensorProto.BOOL, [])],
                         [h.make_tensor_value_info("c_out", TensorProto.BOOL, []),
                          h.make_tensor_value_info("row", TensorProto.INT64, None)])
    m["loop_rows_disagree"] = (
        model([h.make_node("Loop", ["n", ""], ["rows"], name="ragged", body=body6)],
              [trips, h.make_tensor_value_info("xs", f, [2, 4])],
              [h.make_tensor_value_info("rows", TensorProto.INT64, None)]),
        "node 'ragged' (Loop): scan output 0 is [1,2] at iteration 1 and [1,1] at iteration 0; "
        "its shape must not change",
        {"n": np.array(2, dtype=np.int64),
         "xs": np.array([[1, 0, 0, 0], [1, 1, 0, 0]], np.float32)})
    m["loop_planned_rows"] = (
        model([h.make_node("Loop", ["n", "", "x"], ["y", "rows"], name="repeat", body=body4)],
              [trips, x], [y, h.make_tensor_value_info("rows", f, [5, 2])]),
        "node 'repeat' (Loop): stopped after 3 iterations, but its scan output 0 was planned "
        "for 5",
        {"n": np.array(3, dtype=np.int64), "x": np.ones(2, np.float32)})
    # (The same Loop with the scan output's shape left open runs: the trip
    # count is a graph input of one element, so the session is staged and
    # planned per count: test_plinth's test_data_dependent_shapes.)
    return m


def case_bad(args, name):
    onnx = import_onnx()
    if onnx is None:
        return 77
    entry = bad_models()[name]
    model, want = entry[0], entry[1]
    work = os.path.join(args.work, "bad_" + name)
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    env = dict(os.environ, PLINTH_MODULE_PATH=args.modules)
    cmd = [args.plinth, "run", path]
    for n_, a in (entry[2] if len(entry) > 2 else {}).items():
        fp = os.path.join(work, n_ + ".npy")
        np.save(fp, a)
        cmd += ["--input", "%s=%s" % (n_, fp)]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    msg = (r.stderr or r.stdout).strip()
    print("plinth said: %s" % msg)
    if r.returncode == 0:
        print("FAIL: the model ran")
        return 1
    if "\n" in msg:
        print("FAIL: the error is not one line")
        return 1
    if want not in msg:
        print("FAIL: expected the error to contain: %s" % want)
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["torch", "onnx", "bad", "list"])
    ap.add_argument("name", nargs="?")
    ap.add_argument("--plinth")
    ap.add_argument("--modules")
    ap.add_argument("--work", default="control_models")
    args = ap.parse_args()
    if args.kind == "list":
        print(" ".join(["data_if", "decode_loop", "rnn_loop"]))
        return 0
    if args.kind == "torch":
        return case_torch(args, args.name)
    if args.kind == "onnx":
        return case_onnx(args, args.name)
    return case_bad(args, args.name)


if __name__ == "__main__":
    sys.exit(main())
