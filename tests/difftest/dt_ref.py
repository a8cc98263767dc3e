"""dt_ref: the differential tester's independent reference. Every op the
generator makes, written from ONNX's operator definitions in numpy float64
(int64 for integer dtypes) — never from the cpu module's code. After each
node its outputs are rounded to the graph's dtype, as Plinth stores them.

evaluate(graph, inputs) -> {tensor name: value}; a node the reference does
not know, or inputs it cannot take, raise RefError.
"""
import math
from fractions import Fraction

import numpy as np

from dt_graph import FLOAT_DTYPES, to_dtype


class RefError(Exception):
    pass


_erf = np.frompyfunc(math.erf, 1, 1)


def _a(node, name, default):
    v = node["attributes"].get(name)
    return default if v is None else v[1]


def _window_geometry(node, x_shape, kernel, dilations, strides, ceil_mode=False):
    """Begin pads, end pads and output sizes of a conv or pool window."""
    d = len(kernel)
    spatial = x_shape[2:]
    auto = _a(node, "auto_pad", "NOTSET")
    pads = list(_a(node, "pads", [0] * (2 * d)))
    if len(pads) != 2 * d:
        raise RefError("pads of %d values for %d spatial dims" % (len(pads), d))
    begin, end, out = [], [], []
    for i in range(d):
        s, k, dil, st = spatial[i], kernel[i], dilations[i], strides[i]
        ext = (k - 1) * dil + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-s // st)
            total = max(0, (o - 1) * st + ext - s)
            small = total // 2
            b = small if auto == "SAME_UPPER" else total - small
            e = total - b
        elif auto == "VALID":
            b = e = 0
            o = (s - ext) // st + 1
        else:
            b, e = pads[i], pads[i + d]
            span = s + b + e - ext
            if span < 0:
                raise RefError("window larger than the padded input")
            if ceil_mode:
                o = -(-span // st) + 1
                if (o - 1) * st >= s + b:
                    o -= 1
            else:
                o = span // st + 1
        if o < 1:
            raise RefError("empty output")
        begin.append(b)
        end.append(e)
        out.append(o)
    return begin, end, out


def conv(node, x, w, b=None):
    d = x.ndim - 2
    if d < 1 or w.ndim != x.ndim:
        raise RefError("Conv ranks")
    kernel = list(w.shape[2:])
    strides = list(_a(node, "strides", [1] * d))
    dil = list(_a(node, "dilations", [1] * d))
    group = _a(node, "group", 1)
    n, c = x.shape[:2]
    m = w.shape[0]
    if c % group or m % group or w.shape[1] * group != c:
        raise RefError("Conv channels")
    begin, end, out = _window_geometry(node, x.shape, kernel, dil, strides)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(begin, end)))
    y = np.zeros((n, group, m // group) + tuple(out))
    wg = w.reshape((group, m // group, c // group) + tuple(kernel))
    for off in np.ndindex(*kernel):
        sl = tuple(slice(off[i] * dil[i], off[i] * dil[i] + strides[i] * (out[i] - 1) + 1,
                         strides[i]) for i in range(d))
        patch = xp[(slice(None), slice(None)) + sl].reshape((n, group, c // group) + tuple(out))
        y += np.einsum("ngc...,gmc->ngm...", patch, wg[(Ellipsis,) + off])
    y = y.reshape((n, m) + tuple(out))
    if b is not None:
        y += b.reshape((1, m) + (1,) * d)
    return y


def conv_transpose(node, x, w, b=None):
    """ONNX ConvTranspose without output_shape or auto_pad: the full
    output, then `pads` cropped from either end (output_padding adds to the
    end)."""
    d = x.ndim - 2
    if d < 1 or w.ndim != x.ndim:
        raise RefError("ConvTranspose ranks")
    if "output_shape" in node["attributes"] or _a(node, "auto_pad", "NOTSET") != "NOTSET":
        raise RefError("ConvTranspose: output_shape and auto_pad are not in the reference")
    kernel = list(w.shape[2:])
    strides = list(_a(node, "strides", [1] * d))
    dil = list(_a(node, "dilations", [1] * d))
    opad = list(_a(node, "output_padding", [0] * d))
    pads = list(_a(node, "pads", [0] * (2 * d)))
    group = _a(node, "group", 1)
    n, c = x.shape[:2]
    if c % group or w.shape[0] != c:
        raise RefError("ConvTranspose channels")
    mg = w.shape[1]
    full = [strides[i] * (x.shape[2 + i] - 1) + (kernel[i] - 1) * dil[i] + 1 + opad[i]
            for i in range(d)]
    y = np.zeros((n, group, mg) + tuple(full))
    xg = x.reshape((n, group, c // group) + x.shape[2:])
    wg = w.reshape((group, c // group, mg) + tuple(kernel))
    for off in np.ndindex(*kernel):
        sl = tuple(slice(off[i] * dil[i], off[i] * dil[i] + strides[i] * (x.shape[2 + i] - 1) + 1,
                         strides[i]) for i in range(d))
        y[(slice(None), slice(None), slice(None)) + sl] += np.einsum(
            "ngc...,gcm->ngm...", xg, wg[(Ellipsis,) + off])
    crop = tuple(slice(pads[i], full[i] - pads[i + d]) for i in range(d))
    y = y[(slice(None), slice(None), slice(None)) + crop]
    if any(s < 1 for s in y.shape[3:]):
        raise RefError("ConvTranspose: empty output")
    y = y.reshape((n, group * mg) + y.shape[3:])
    if b is not None:
        y += b.reshape((1, -1) + (1,) * d)
    return y


def pool(node, x, kind):
    d = x.ndim - 2
    kernel = list(_a(node, "kernel_shape", None))
    strides = list(_a(node, "strides", [1] * d))
    dil = list(_a(node, "dilations", [1] * d))
    ceil = bool(_a(node, "ceil_mode", 0))
    begin, end, out = _window_geometry(node, x.shape, kernel, dil, strides, ceil)
    index = []
    valid = []
    inpad = []
    for i in range(d):
        s = x.shape[2 + i]
        p = (np.arange(out[i])[:, None] * strides[i] + np.arange(kernel[i])[None, :] * dil[i]
             - begin[i])
        v = (p >= 0) & (p < s)
        shape = [1] * (2 * d)
        shape[2 * i], shape[2 * i + 1] = out[i], kernel[i]
        index.append(np.clip(p, 0, s - 1).reshape(shape))
        valid.append(v.reshape(shape))
        inpad.append(((p >= -begin[i]) & (p < s + end[i])).reshape(shape))
    g = x[(slice(None), slice(None)) + tuple(index)]
    mask = np.ones(g.shape[2:], dtype=bool)
    padm = np.ones(g.shape[2:], dtype=bool)
    for v, q in zip(valid, inpad):
        mask = mask & v
        padm = padm & q
    kaxes = tuple(2 + 2 * i + 1 for i in range(d))
    if kind == "max":
        y = np.where(mask, g, -np.inf).max(axis=kaxes)
    else:
        total = np.where(mask, g, 0.0).sum(axis=kaxes)
        cnt = (padm if _a(node, "count_include_pad", 0) else mask).sum(axis=tuple(
            2 * i + 1 for i in range(d)))
        y = total / cnt
    return y


def _resize_coord(ctm, i, n_in, n_out, scale):
    """ONNX Resize's input coordinate of output index I along one axis."""
    if ctm == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if ctm == "pytorch_half_pixel":
        return (i + 0.5) / scale - 0.5 if n_out > 1 else 0.0
    if ctm == "align_corners":
        return 0.0 if n_out == 1 else i * (n_in - 1) / (n_out - 1)
    if ctm == "tf_half_pixel_for_nn":
        return (i + 0.5) / scale
    if ctm == "asymmetric":
        return i / scale
    raise RefError("Resize: coordinate_transformation_mode %s is not in the reference" % ctm)


def _resize_axis(node, x, axis, n_out, scale):
    """X resized along AXIS to N_OUT (scale SCALE) as ONNX defines it:
    nearest picks one input, linear blends two neighbours, cubic four with
    Keys' weights; neighbours past the edge repeat it (or, with
    exclude_outside, weigh nothing and the rest are renormalised)."""
    mode = _a(node, "mode", "nearest")
    ctm = _a(node, "coordinate_transformation_mode", "half_pixel")
    n_in = x.shape[axis]
    if n_in == n_out and scale == 1.0:
        return x
    rows = []
    for i in range(n_out):
        c = _resize_coord(ctm, i, n_in, n_out, scale)
        if mode == "nearest":
            nm = _a(node, "nearest_mode", "round_prefer_floor")
            j = {"round_prefer_floor": math.ceil(c - 0.5), "round_prefer_ceil":
                 math.floor(c + 0.5), "floor": math.floor(c), "ceil": math.ceil(c)}[nm]
            taps, w = [j], [1.0]
        elif mode == "linear":
            f = math.floor(c)
            taps, w = [f, f + 1], [1.0 - (c - f), c - f]
        elif mode == "cubic":
            a = _a(node, "cubic_coeff_a", -0.75)
            f = math.floor(c)
            t = c - f

            def keys(d):
                d = abs(d)
                if d <= 1:
                    return ((a + 2) * d - (a + 3)) * d * d + 1
                if d < 2:
                    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
                return 0.0
            taps = [f - 1, f, f + 1, f + 2]
            w = [keys(t + 1), keys(t), keys(1 - t), keys(2 - t)]
            if _a(node, "exclude_outside", 0):
                w = [wk if 0 <= j < n_in else 0.0 for wk, j in zip(w, taps)]
                total = sum(w)
                w = [wk / total for wk in w] if total != 0 else w
        else:
            raise RefError("Resize: mode %s is not in the reference" % mode)
        acc = 0.0
        for j, wk in zip(taps, w):
            acc = acc + wk * np.take(x, [min(max(j, 0), n_in - 1)], axis=axis)
        rows.append(acc)
    return np.concatenate(rows, axis=axis)


def resize(node, x, scales, sizes):
    """Resize of the spatial axes of X (batch and channels kept), axis by
    axis (the 2-D kernels are products of the 1-D ones)."""
    y = np.asarray(x, np.float64)
    for axis in range(2, x.ndim):
        if sizes is not None and len(sizes):
            n_out = int(sizes[axis])
            scale = n_out / x.shape[axis]
        else:
            scale = float(scales[axis])
            n_out = int(math.floor(x.shape[axis] * scale))
        y = _resize_axis(node, y, axis, n_out, scale)
    return y


def pool_has_empty_window(attrs, x_shape):
    """True when some window of a pool with ATTRS over X_SHAPE covers
    padding only."""
    node = {"attributes": attrs}
    d = len(x_shape) - 2
    kernel = list(_a(node, "kernel_shape", None))
    strides = list(_a(node, "strides", [1] * d))
    dil = list(_a(node, "dilations", [1] * d))
    begin, _, out = _window_geometry(node, x_shape, kernel, dil, strides,
                                     bool(_a(node, "ceil_mode", 0)))
    for i in range(d):
        p = (np.arange(out[i])[:, None] * strides[i] + np.arange(kernel[i])[None, :] * dil[i]
             - begin[i])
        if not ((p >= 0) & (p < x_shape[2 + i])).any(axis=1).all():
            return True
    return False


def _axes_input(node, env, i):
    if len(node["inputs"]) > i and node["inputs"][i]:
        return [int(a) for a in np.asarray(env[node["inputs"][i]]).reshape(-1)]
    return None


def _reduce(node, env, x, fn):
    axes = _a(node, "axes", None)
    if axes is None:
        axes = _axes_input(node, env, 1)
    keep = bool(_a(node, "keepdims", 1))
    if axes is None or len(axes) == 0:
        if _a(node, "noop_with_empty_axes", 0):
            return x
        axes = list(range(x.ndim))
    axes = tuple(a % x.ndim for a in axes)
    return fn(x, axis=axes, keepdims=keep)


def _unary(op, node, x):
    if op == "Relu":
        return np.maximum(x, 0)
    if op == "LeakyRelu":
        a = _a(node, "alpha", 0.01)
        return np.where(x >= 0, x, a * x)
    if op == "Elu":
        a = _a(node, "alpha", 1.0)
        return np.where(x > 0, x, a * (np.exp(np.minimum(x, 0)) - 1))
    if op == "Selu":
        a = _a(node, "alpha", 1.67326319217681884765625)
        g = _a(node, "gamma", 1.05070102214813232421875)
        return g * np.where(x > 0, x, a * (np.exp(np.minimum(x, 0)) - 1))
    if op == "Celu":
        a = _a(node, "alpha", 1.0)
        return np.maximum(0, x) + np.minimum(0, a * (np.exp(x / a) - 1))
    if op == "Sigmoid":
        return 1 / (1 + np.exp(-x))
    if op == "Tanh":
        return np.tanh(x)
    if op == "Abs":
        return np.abs(x)
    if op == "Neg":
        return -x
    if op == "Exp":
        return np.exp(x)
    if op == "Log":
        return np.log(x)
    if op == "Sqrt":
        return np.sqrt(x)
    if op == "Erf":
        return np.asarray(_erf(x), dtype=np.float64)
    if op == "HardSigmoid":
        a, b = _a(node, "alpha", 0.2), _a(node, "beta", 0.5)
        return np.clip(a * x + b, 0, 1)
    if op == "HardSwish":
        return x * np.clip(x / 6 + 0.5, 0, 1)
    if op == "Softplus":
        return np.logaddexp(0, x)
    if op == "Softsign":
        return x / (1 + np.abs(x))
    if op == "Sin":
        return np.sin(x)
    if op == "Cos":
        return np.cos(x)
    if op == "Identity":
        return x
    return None


def _binary(op, a, b, integer):
    if op == "Add":
        return a + b
    if op == "Sub":
        return a - b
    if op == "Mul":
        return a * b
    if op == "Div":
        if integer:
            return np.trunc(a / b).astype(np.int64)
        return a / b
    if op == "Pow":
        return np.power(a, b)
    if op == "Max":
        return np.maximum(a, b)
    if op == "Min":
        return np.minimum(a, b)
    if op == "PRelu":
        return np.where(a >= 0, a, a * b)
    return None


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


_RNN_ACTS = {"tanh": np.tanh, "relu": lambda x: np.maximum(x, 0.0), "sigmoid": _sigmoid}
_RNN_DEFAULTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def recurrent(node, ins):
    """ONNX's RNN, GRU and LSTM (the activations Tanh, Relu and Sigmoid;
    no clip, no input_forget, every sequence full length): [Y, Y_h(, Y_c)]
    as ONNX defines them, step by step."""
    op = node["op"]
    ins = ins + [None] * (8 - len(ins))
    x, w, r, b, lens, h0, c0, p = ins[:8]
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    if "clip" in node["attributes"] or _a(node, "input_forget", 0):
        raise RefError("%s: clip and input_forget are not in the reference" % op)
    layout = _a(node, "layout", 0)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    seq, batch = x.shape[0], x.shape[1]
    if lens is not None and np.any(lens != seq):
        raise RefError("%s: sequence_lens shorter than the sequence" % op)
    dirs, hidden = w.shape[0], r.shape[2]
    direction = _a(node, "direction", "forward")
    acts = _a(node, "activations", _RNN_DEFAULTS[op])
    count = len(_RNN_DEFAULTS[op])
    lbr = _a(node, "linear_before_reset", 0)
    gh = gates * hidden
    y = np.zeros((seq, dirs, batch, hidden))
    yh = np.zeros((dirs, batch, hidden))
    yc = np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        fn = [_RNN_ACTS[a.lower()] for a in
              (acts[d * count:(d + 1) * count] if len(acts) == count * dirs else acts[:count])]
        wd, rd = w[d], r[d]
        wb = b[d][:gh] if b is not None else np.zeros(gh)
        rb = b[d][gh:] if b is not None else np.zeros(gh)
        h = h0[d] if h0 is not None else np.zeros((batch, hidden))
        c = c0[d] if c0 is not None else np.zeros((batch, hidden))
        reverse = direction == "reverse" or d == 1
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            xt = x[t]

            def gate(k):
                s = slice(k * hidden, (k + 1) * hidden)
                return xt @ wd[s].T + wb[s], h @ rd[s].T + rb[s]
            if op == "RNN":
                xi, hi = gate(0)
                h = fn[0](xi + hi)
            elif op == "GRU":
                xz, hz = gate(0)
                xr, hr = gate(1)
                xh, hh = gate(2)
                z = fn[0](xz + hz)
                rr = fn[0](xr + hr)
                s = slice(2 * hidden, 3 * hidden)
                if lbr:
                    cand = fn[1](xh + rr * hh)
                else:
                    cand = fn[1](xh + (rr * h) @ rd[s].T + rb[s])
                h = (1 - z) * cand + z * h
            else:
                xi, hi = gate(0)
                xo, ho = gate(1)
                xf, hf = gate(2)
                xc, hc = gate(3)
                pi, po, pf = (p[d][k * hidden:(k + 1) * hidden] if p is not None
                              else np.zeros(hidden) for k in range(3))
                i = fn[0](xi + hi + pi * c)
                f = fn[0](xf + hf + pf * c)
                c = f * c + i * fn[1](xc + hc)
                o = fn[0](xo + ho + po * c)
                h = o * fn[2](c)
            y[t, d] = h
        yh[d], yc[d] = h, c
    if layout:
        y = y.transpose(2, 0, 1, 3)
        yh = yh.transpose(1, 0, 2)
        yc = yc.transpose(1, 0, 2)
    return [y, yh, yc][:len(node["outputs"])]


def eval_node(node, env, dtype_of):
    """Outputs of NODE (a list) from the values in ENV."""
    op = node["op"]
    ins = [env[i] if i else None for i in node["inputs"]]
    x = ins[0]
    integer = dtype_of(node["inputs"][0]) not in FLOAT_DTYPES
    y = _unary(op, node, x) if len(ins) == 1 else None
    if y is not None:
        return [y]
    if op in ("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu") and len(ins) == 2:
        return [_binary(op, ins[0], ins[1], integer)]
    if op == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
        return [np.minimum(np.maximum(x, lo), hi)]
    if op in ("RNN", "GRU", "LSTM"):
        return recurrent(node, ins)
    if op == "Conv":
        return [conv(node, x, ins[1], ins[2] if len(ins) > 2 else None)]
    if op == "Resize":
        return [resize(node, x, ins[2] if len(ins) > 2 else None,
                       ins[3] if len(ins) > 3 else None)]
    if op in ("ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul"):
        return [integer_product(node, ins, dtype_of)]
    if op == "DynamicQuantizeLinear":
        return dynamic_quantize(x)
    if op == "Pad":  # constant mode, pads as input 1 (begins, then ends), the fill input 2
        pads = [int(v) for v in np.asarray(ins[1]).reshape(-1)]
        r = x.ndim
        fill = float(np.asarray(ins[2]).reshape(-1)[0]) if len(ins) > 2 and ins[2] is not None \
            else 0.0
        return [np.pad(x, [(pads[i], pads[r + i]) for i in range(r)], constant_values=fill)
                .astype(x.dtype)]
    if op == "Expand":  # broadcasts both ways (numpy's rule)
        return [x * np.ones([int(d) for d in np.asarray(ins[1]).reshape(-1)])]
    if op == "Cast":
        return [x]
    if op == "Greater":
        return [x > ins[1]]
    if op == "Less":
        return [x < ins[1]]
    if op == "Gather":
        return [np.take(x, np.asarray(ins[1]).astype(np.int64), axis=_a(node, "axis", 0))]
    if op == "Loop":
        return loop(node, env, dtype_of)
    if op == "Scan":
        return scan(node, env, dtype_of)
    if op == "Where":
        return [np.where(x != 0, ins[1], ins[2])]
    if op in ("QuantizeLinear", "DequantizeLinear"):
        return [quantize(op, ins, dtype_of(node["inputs"][2]) if len(ins) > 2 else "u8")]
    if op == "ConvTranspose":
        return [conv_transpose(node, x, ins[1], ins[2] if len(ins) > 2 else None)]
    if op == "MatMul":
        return [np.matmul(x, ins[1])]
    if op == "Gemm":
        a = x.T if _a(node, "transA", 0) else x
        b = ins[1].T if _a(node, "transB", 0) else ins[1]
        y = _a(node, "alpha", 1.0) * (a @ b)
        if len(ins) > 2 and ins[2] is not None:
            y = y + _a(node, "beta", 1.0) * ins[2]
        return [y]
    if op == "MaxPool":
        return [pool(node, x, "max")]
    if op == "AveragePool":
        return [pool(node, x, "avg")]
    if op == "GlobalAveragePool":
        return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
    if op == "GlobalMaxPool":
        return [x.max(axis=tuple(range(2, x.ndim)), keepdims=True)]
    if op == "BatchNormalization":
        sh = (1, -1) + (1,) * (x.ndim - 2)
        sc, b, mean, var = (t.reshape(sh) for t in ins[1:5])
        return [(x - mean) / np.sqrt(var + _a(node, "epsilon", 1e-5)) * sc + b]
    if op == "InstanceNormalization":
        axes = tuple(range(2, x.ndim))
        sh = (1, -1) + (1,) * (x.ndim - 2)
        mu = x.mean(axis=axes, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
        return [(x - mu) / np.sqrt(var + _a(node, "epsilon", 1e-5)) * ins[1].reshape(sh)
                + ins[2].reshape(sh)]
    if op == "LayerNormalization":
        axis = _a(node, "axis", -1) % x.ndim
        axes = tuple(range(axis, x.ndim))
        mu = x.mean(axis=axes, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
        y = (x - mu) / np.sqrt(var + _a(node, "epsilon", 1e-5)) * ins[1]
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2]
        return [y]
    if op == "Softmax":
        axis = _a(node, "axis", -1)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return [e / e.sum(axis=axis, keepdims=True)]
    if op == "ReduceMean":
        return [_reduce(node, env, x, np.mean)]
    if op == "ReduceSum":
        return [_reduce(node, env, x, np.sum)]
    if op == "ReduceMax":
        return [_reduce(node, env, x, np.max)]
    if op == "Concat":
        return [np.concatenate(ins, axis=_a(node, "axis", 0))]
    if op == "Split":
        axis = _a(node, "axis", 0) % x.ndim
        sizes = _axes_input(node, env, 1)
        n = len(node["outputs"])
        if sizes is None:
            if x.shape[axis] % n:
                raise RefError("Split: uneven")
            sizes = [x.shape[axis] // n] * n
        if sum(sizes) != x.shape[axis] or len(sizes) != n:
            raise RefError("Split sizes")
        return np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    if op == "Reshape":
        shape = [int(s) for s in ins[1]]
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Flatten":
        axis = _a(node, "axis", 1) % (x.ndim + 1) if x.ndim else 0
        lead = int(np.prod(x.shape[:axis], dtype=np.int64))
        return [x.reshape(lead, -1)]
    if op == "Transpose":
        perm = _a(node, "perm", None)
        return [np.transpose(x, perm)]
    if op == "Slice":
        starts, ends = [int(v) for v in ins[1]], [int(v) for v in ins[2]]
        axes = [int(v) for v in ins[3]] if len(ins) > 3 and ins[3] is not None \
            else list(range(len(starts)))
        steps = [int(v) for v in ins[4]] if len(ins) > 4 and ins[4] is not None \
            else [1] * len(starts)
        sl = [slice(None)] * x.ndim
        for s, e, a, st in zip(starts, ends, axes, steps):
            dim = x.shape[a]
            if st > 0:
                s = min(max(s + dim if s < 0 else s, 0), dim)
                e = min(max(e + dim if e < 0 else e, 0), dim)
            else:
                s = min(max(s + dim if s < 0 else s, -1), dim - 1)
                e = min(max(e + dim if e < 0 else e, -1), dim - 1)
                if e < 0:
                    e = None
            sl[a % x.ndim] = slice(s, e, st)
        return [x[tuple(sl)]]
    raise RefError("the reference has no %s" % op)


def _wrap_i32(v):
    return (np.asarray(v, dtype=np.int64) + 2**31) % 2**32 - 2**31


def integer_product(node, ins, dtype_of):
    """ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul: exact sums of
    (x - x_zero_point) * (w - w_zero_point) (float64 holds them), wrapped to
    i32; the QLinear forms add the bias and requantize in f32 as ONNX
    Runtime does: round_half_even(f32(sum) * f32(f32(sx * sw) / sy)) + zy,
    saturated."""
    op = node["op"]
    ql = op.startswith("QLinear")
    x, w = ins[0], ins[3 if ql else 1]
    iwz = 5 if ql else 3
    xz = ins[2] if len(ins) > 2 else None
    wz = ins[iwz] if len(ins) > iwz else None
    xz = np.zeros([]) if xz is None else np.asarray(xz, dtype=np.float64)
    wz = np.zeros([]) if wz is None else np.asarray(wz, dtype=np.float64)
    xf = np.asarray(x, dtype=np.float64)
    wf = np.asarray(w, dtype=np.float64)
    conv_like = op in ("ConvInteger", "QLinearConv")
    if conv_like:
        m = w.shape[0]
        wf = wf - wz.reshape((m,) + (1,) * (w.ndim - 1)) if wz.size > 1 else wf - wz
        xf = xf - xz
        acc = conv(node, xf, wf)
        chan = (1, m) + (1,) * (acc.ndim - 2)
    else:
        n = w.shape[-1]
        wf = wf - (wz.reshape((1, n)) if wz.size > 1 else wz)
        xf = xf - (xz.reshape((-1, 1)) if xz.size > 1 else xz)
        acc = np.matmul(xf, wf)
        chan = (1,) * (acc.ndim - 1) + (n,)
    acc = _wrap_i32(acc)
    if not ql:
        return acc
    if conv_like and len(ins) > 8 and ins[8] is not None:
        acc = _wrap_i32(acc + np.asarray(ins[8], dtype=np.int64).reshape(chan))
    sx, sw, sy = (np.asarray(ins[i], dtype=np.float32) for i in (1, 4, 6))
    mult = (sx * (sw.reshape(chan) if sw.size > 1 else sw)).astype(np.float32) / sy
    v = np.rint((acc.astype(np.float32) * mult.astype(np.float32)).astype(np.float32))
    zy = np.asarray(ins[7], dtype=np.float64)
    signed = dtype_of(node["inputs"][7]) == "i8"
    return np.clip(v.astype(np.float64) + zy, -128 if signed else 0, 127 if signed else 255)


def quantize(op, ins, qdtype):
    """QuantizeLinear / DequantizeLinear with one scale and zero point, in
    f32 as ONNX defines them: round(x / s) half to even, + zp, saturated to
    QDTYPE; (q - zp) * s."""
    x, s = ins[0], np.float32(ins[1])
    zp = int(ins[2]) if len(ins) > 2 and ins[2] is not None else 0
    if op == "DequantizeLinear":
        return (np.asarray(x - zp, dtype=np.float32) * s).astype(np.float64)
    lo, hi = (-128, 127) if qdtype == "i8" else (0, 255)
    q = np.rint(np.asarray(x, dtype=np.float32) / s).astype(np.float64) + zp
    return np.clip(q, lo, hi).astype(np.int64)


# ONNX's TensorProto codes of the dtypes a Cast may name here.
CAST_TO = {1: "f32", 2: "u8", 3: "i8", 6: "i32", 7: "i64", 11: "f64"}


def dynamic_quantize(x):
    """DynamicQuantizeLinear in f32 as ONNX defines it: the range of X with
    0 in it, scale = (max - min) / 255, zero point = round(clamp(0 - min /
    scale, 0, 255)), y = saturate(round(x / scale) + zero point), rounding
    half to even; a zero range gives scale 0, zero point 0 and zeros."""
    xf = np.asarray(x, dtype=np.float32)
    lo = np.float32(min(0.0, float(xf.min()) if xf.size else 0.0))
    hi = np.float32(max(0.0, float(xf.max()) if xf.size else 0.0))
    scale = np.float32((hi - lo) / np.float32(255.0))
    if not scale > 0:
        return [np.zeros(xf.shape, np.int64), np.float64(scale), np.int64(0)]
    zp = np.float32(np.clip(np.float32(0.0) - lo / scale, 0, 255))
    zp = np.float32(np.rint(zp))
    y = np.clip(np.rint(xf / scale) + zp, 0, 255)
    return [y.astype(np.int64), np.float64(scale), np.int64(zp)]


def _out_dtypes(node, dtypes):
    """The dtype of each of NODE's outputs."""
    if node["op"] == "DynamicQuantizeLinear":
        return ["u8", "f32", "u8"][:len(node["outputs"])]
    if node["op"] == "Scan":  # the states', then the scan outputs' (float)
        n = len(node["inputs"]) - _a(node, "num_scan_inputs", 1)
        states = [dtypes.get(i, "f32") for i in node["inputs"][:n]]
        return (states + ["f32"] * len(node["outputs"]))[:len(node["outputs"])]
    if node["op"] == "Loop":  # the carried values', then the scan outputs' (float)
        carried = [dtypes.get(i, "f32") for i in node["inputs"][2:]]
        return (carried + ["f32"] * len(node["outputs"]))[:len(node["outputs"])]
    return [_out_dtype(node, dtypes)] * len(node["outputs"])


def _out_dtype(node, dtypes):
    """The dtype NODE's outputs have: its first input's, but for the
    integer products, (de)quantization, comparisons and Where."""
    op = node["op"]
    if op == "QuantizeLinear":
        return dtypes.get(node["inputs"][2], "u8") if len(node["inputs"]) > 2 else "u8"
    if op == "DequantizeLinear":
        return "f32"
    if op in ("ConvInteger", "MatMulInteger"):
        return "i32"
    if op == "Cast":
        return CAST_TO.get(_a(node, "to", 1), "f32")
    if op in ("QLinearConv", "QLinearMatMul"):
        return dtypes.get(node["inputs"][7], "u8")
    if op in ("Greater", "Less"):
        return "bool"
    if op == "Where":
        return dtypes.get(node["inputs"][1], "f32")
    return dtypes.get(node["inputs"][0], "f32")


def loop(node, env, dtype_of):
    """An ONNX Loop: its body (a Graph) run while the trip count and the
    condition allow, the carried values threaded through, each scan
    output stacked; the body reads ENV's values by name."""
    body = node["attributes"]["body"][1]
    ins = node["inputs"]
    trips = int(env[ins[0]]) if ins[0] else None
    cond = bool(env[ins[1]]) if len(ins) > 1 and ins[1] else True
    nc = len(ins) - 2
    carried = [env[i] for i in ins[2:]]
    dts = {i: dtype_of(i) for i in body.outer_reads()}
    dts.update({body.inputs[0]: "i64", body.inputs[1]: "bool"})
    for j in range(nc):
        dts[body.inputs[2 + j]] = dtype_of(ins[2 + j])
    scans, it = None, 0
    while (trips is None or it < trips) and cond:
        feeds = {body.inputs[0]: np.int64(it), body.inputs[1]: np.bool_(cond)}
        for j in range(nc):
            feeds[body.inputs[2 + j]] = carried[j]
        benv = evaluate(body, feeds, outer=env, outer_dtypes=dts)
        cond = bool(benv[body.outputs[0]])
        carried = [benv[o] for o in body.outputs[1:1 + nc]]
        row = [benv[o] for o in body.outputs[1 + nc:]]
        scans = [[r] for r in row] if scans is None else [s + [r] for s, r in zip(scans, row)]
        it += 1
        if it > 10000:
            raise RefError("Loop: over 10000 iterations")
    if scans is None and len(body.outputs) > 1 + nc:
        raise RefError("Loop: no iteration ran (the scan outputs' shapes are open)")
    return carried + [np.stack(s) for s in scans or []]


def scan(node, env, dtype_of):
    """An ONNX Scan (opset 9 on): the body run on each slice of the scan
    inputs along their axes (from the end where their direction is 1), the
    states threaded through, each scan output stacked along its axis (in
    reverse where its direction is 1)."""
    body = node["attributes"]["body"][1]
    ins = node["inputs"]
    m = _a(node, "num_scan_inputs", 1)
    n = len(ins) - m
    state = [env[i] for i in ins[:n]]
    xs = [env[i] for i in ins[n:]]
    axes = [a % xs[j].ndim for j, a in enumerate(_a(node, "scan_input_axes", [0] * m))]
    dirs = _a(node, "scan_input_directions", [0] * m)
    k = len(body.outputs) - n
    out_axes = _a(node, "scan_output_axes", [0] * k)
    out_dirs = _a(node, "scan_output_directions", [0] * k)
    dts = {i: dtype_of(i) for i in body.outer_reads()}
    for j in range(len(ins)):
        dts[body.inputs[j]] = dtype_of(ins[j])
    trips = xs[0].shape[axes[0]]
    rows = [[] for _ in range(k)]
    for t in range(trips):
        feeds = {body.inputs[j]: state[j] for j in range(n)}
        for j in range(m):
            feeds[body.inputs[n + j]] = np.take(xs[j], trips - 1 - t if dirs[j] else t,
                                                axis=axes[j])
        benv = evaluate(body, feeds, outer=env, outer_dtypes=dts)
        state = [benv[o] for o in body.outputs[:n]]
        for j in range(k):
            rows[j].append(benv[body.outputs[n + j]])
    if trips == 0 and k:
        raise RefError("Scan: no slice (the scan outputs' shapes are open)")
    outs = list(state)
    for j in range(k):
        r = np.stack(rows[j][::-1] if out_dirs[j] else rows[j])
        outs.append(np.moveaxis(r, 0, out_axes[j] % r.ndim))
    return outs


def _f32(fr):
    """The float32 nearest the rational FR, ties to even."""
    f = np.float32(float(fr))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda c: (abs(Fraction(float(c)) - fr),
                                     int(np.asarray(c, np.float32).view(np.uint32)) & 1))


def _fmaf(x, y, z):
    """C's fmaf: x * y + z rounded once to float32."""
    return _f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))


def _qparam(graph, name, want_float):
    """The one value of constant NAME (a scale when WANT_FLOAT, else an
    8-bit zero point), or None."""
    t = graph.tensors.get(name) if name else None
    if t is None or "value" not in t or np.asarray(t["value"]).size != 1:
        return None
    if want_float:
        v = float(np.asarray(t["value"]).ravel()[0])
        ok = t["dtype"] == "f32" and v > 0 and math.isfinite(v)
        return np.float32(v) if ok else None
    return int(np.asarray(t["value"]).ravel()[0]) if t["dtype"] in ("u8", "i8") else None


def qdq_binary_group(graph, node, writer, readers):
    """When QuantizeLinear NODE reads an Add or Mul whose one reader it is
    and whose inputs are DequantizeLinear outputs, all of one 8-bit type
    with one scale and zero point each: ('Add' or 'Mul', [(a, scale, zero
    point), (b, ...)], its scale, zero point, type); else None. Such a group
    runs as com.microsoft QLinearAdd / QLinearMul under [graph] qdq = int8
    (core/src/algebra.c, pl_alg_qdq_binary), in ONNX Runtime's arithmetic."""
    ins = node["inputs"]
    op = writer.get(ins[0])
    if op is None or op["op"] not in ("Add", "Mul") or op.get("domain", "") not in ("", "ai.onnx") \
            or len(op["inputs"]) != 2 or readers.get(ins[0], 0) != 1 \
            or ins[0] in graph.outputs or len(ins) < 3:
        return None
    sc, zc = _qparam(graph, ins[1], True), _qparam(graph, ins[2], False)
    if sc is None or zc is None:
        return None
    qdt = graph.tensors[ins[2]]["dtype"]  # a zero point has its values' type
    ops = []
    for t in op["inputs"]:
        dq = writer.get(t)
        if dq is None or dq["op"] != "DequantizeLinear" or len(dq["inputs"]) < 3 \
                or dq.get("attributes", {}).get("block_size"):
            return None
        s, z = _qparam(graph, dq["inputs"][1], True), _qparam(graph, dq["inputs"][2], False)
        if s is None or z is None or graph.tensors[dq["inputs"][2]]["dtype"] != qdt:
            return None
        ops.append((dq["inputs"][0], s, z))
    return op["op"], ops, sc, zc, qdt


def qlinear_binary(op, vals, sc, zc, qdt):
    """com.microsoft QLinearAdd / QLinearMul as ONNX Runtime computes them
    on x86 (sdk/include/plinth/qlinear.h): VALS [(A, its scale, zero point),
    (B, ...)], C's scale SC, zero point ZC, type QDT. Add: rA = sA / sC, rB =
    sB / sC, fixed = zC - fma(rA, zA, rB * zB), c = sat(rne(fma(a, rA,
    fma(b, rB, fixed)))); Mul: c = sat(rne((float)((a - zA) * (b - zB)) *
    (sA * sB / sC) + zC)), each f32 step rounded apart."""
    (a, sa, za), (b, sb, zb) = vals
    lo, hi = (-128, 127) if qdt == "i8" else (0, 255)
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    out = np.empty(a.shape, np.int64)
    if op == "Add":
        ra, rb = np.float32(sa / sc), np.float32(sb / sc)
        fixed = np.float32(np.float32(zc) - _fmaf(ra, np.float32(za),
                                                  np.float32(rb * np.float32(zb))))
    else:
        ratio = np.float32(np.float32(sa * sb) / sc)
    for i, (av, bv) in enumerate(zip(a.ravel(), b.ravel())):
        if op == "Add":
            t = _fmaf(np.float32(av), ra, _fmaf(np.float32(bv), rb, fixed))
        else:
            t = np.float32(np.float32(np.float32((int(av) - za) * (int(bv) - zb)) * ratio) +
                           np.float32(zc))
        out.ravel()[i] = lo if not t < 2.0 ** 31 else min(max(int(np.rint(t)), lo), hi)
    return out


def evaluate(graph, inputs, outer=None, outer_dtypes=None):
    """Every tensor's value; INPUTS: name -> values (float64/int64). A
    body's: OUTER holds the values it reads by name, OUTER_DTYPES their
    dtypes and its inputs'."""
    env = dict(outer or {})
    dtypes = dict(outer_dtypes or {})
    for name, t in graph.tensors.items():
        dtypes[name] = t["dtype"]
        if "value" in t:
            env[name] = t["value"]
    for name in graph.inputs:
        env[name] = inputs[name]
    writer = {o: n for n in graph.nodes for o in n["outputs"] if o}
    readers = {}
    for n in graph.nodes:
        for t in n["inputs"]:
            readers[t] = readers.get(t, 0) + 1
    for node in graph.nodes:
        group = qdq_binary_group(graph, node, writer, readers) \
            if node["op"] == "QuantizeLinear" and outer is None else None
        if group is not None:
            op, ops, sc, zc, qdt = group
            outs = [qlinear_binary(op, [(env[t], s, z) for t, s, z in ops], sc, zc, qdt)]
        else:
            outs = eval_node(node, env, lambda n: dtypes.get(n, "f32"))
        dts = _out_dtypes(node, dtypes)
        if len(outs) != len([o for o in node["outputs"]]):
            raise RefError("%s: %d outputs" % (node["op"], len(outs)))
        for o, v, dt in zip(node["outputs"], outs, dts):
            v = np.asarray(v, dtype=np.float64 if dt in FLOAT_DTYPES else np.int64)
            env[o] = to_dtype(v, dt)
            dtypes[o] = dt
    return env
