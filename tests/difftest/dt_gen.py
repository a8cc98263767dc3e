"""dt_gen: random small graphs for the differential tester.

generate(seed, family, dtype) -> (graph, inputs): a Graph (dt_graph) and its
input values. Each family builds a head (a convolution, a product, a pool, a
normalisation, movement ops, ...) and then random chains of elementwise ops:
unary ops, binaries with scalar / one-element / per-channel / general
broadcast constants, and binaries of two activations (residual adds). The
generator evaluates the reference as it goes, so it picks only ops whose
inputs are well-conditioned (no Sqrt of values near zero, no Exp of large
values, no division by near-zero), and a mismatch is a bug, not rounding.

Input values come from input_values(graph, seed) alone, so a regression
file needs only its graph and the seed.
"""
import zlib

import numpy as np

import dt_ref
from dt_graph import FLOAT_DTYPES, Graph, to_dtype

FAMILIES = ("conv", "matmul", "eltwise", "pool", "norm", "shape", "mixed", "deconv")
# Families run only when named (not by "any" or the soak, whose seeds would
# otherwise change family): rnn, one RNN, GRU or LSTM node; wideconv, the
# conv family with 8 to 40 channels in and out in steps of 8, in one group
# or in groups of 2 or 4 channels, or 2 or 3 groups of 16 or 24 (the channel
# blocks the onednn module's own direct and grouped kernels take), and 3x3 layers of 24 to 64 channels on
# 7x7 to 18x18 maps (its Winograd variant).
MORE_FAMILIES = ("rnn", "wideconv", "quant", "qdq", "dynq", "kernels", "siblings", "loop")


def I(v):
    return ("int", int(v))


def F(v):
    return ("float", float(v))


def INTS(v):
    return ("ints", [int(x) for x in v])


def S(v):
    return ("string", v)


def input_values(graph, seed):
    """Each input's values from SEED and its name alone, so dropping one
    input leaves the others' values as they were."""
    vals = {}
    for name in graph.inputs:
        rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
        t = graph.tensors[name]
        if t["dtype"] in FLOAT_DTYPES:
            v = rng.standard_normal(t["shape"])
        elif t["dtype"] in ("u8", "i8"):  # every byte (the quant family)
            lo = -128 if t["dtype"] == "i8" else 0
            v = rng.integers(lo, lo + 256, t["shape"])
        else:
            v = rng.integers(-4, 5, t["shape"])
        vals[name] = to_dtype(v, t["dtype"])
    return vals


class Gen:
    def __init__(self, seed, dtype):
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.dtype = dtype
        self.g = Graph()
        self.env = {}
        self.float = dtype in FLOAT_DTYPES

    # ---- building ---------------------------------------------------------

    def r(self, lo, hi):
        """An integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def p(self, prob):
        return self.rng.random() < prob

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def input(self, shape):
        name = self.g.add_input("x%d" % len(self.g.inputs), self.dtype, shape)
        self.env[name] = input_values(self.g, self.seed)[name]
        return name

    def const(self, values, dtype=None):
        name = self.g.add_const(np.asarray(values), dtype or self.dtype)
        self.env[name] = self.g.tensors[name]["value"]
        return name

    def weights(self, shape, scale=None):
        if not self.float:
            return self.const(self.rng.integers(-2, 3, shape))
        fan = max(1, int(np.prod(shape[1:])))
        s = scale if scale is not None else 1.0 / np.sqrt(fan)
        return self.const(self.rng.uniform(-1, 1, shape) * s * 1.7)

    def i64(self, values):
        return self.const(np.asarray(values, dtype=np.int64), "i64")

    def node(self, op, inputs, attrs=None, n_out=1):
        outs = self.g.add_node(op, inputs, attrs, n_out)
        node = self.g.nodes[-1]
        dt = {n: t["dtype"] for n, t in self.g.tensors.items()}
        vals = dt_ref.eval_node(node, self.env, lambda n: dt.get(n, self.dtype))
        for o, v in zip(node["outputs"], vals):
            kind = np.float64 if self.float else np.int64
            self.env[o] = to_dtype(np.asarray(v, dtype=kind), self.dtype)
        return outs

    def shape(self, t):
        return list(self.env[t].shape)

    def stats(self, t):
        v = self.env[t]
        if v.size == 0:
            return 0.0, 0.0, 0.0
        return float(np.min(v)), float(np.max(v)), float(np.max(np.abs(v)))

    # ---- constants for binaries -----------------------------------------

    def bconst(self, x, kind=None, positive=False, away=False):
        """A constant that broadcasts to X: scalar ([]), one element
        ([1] or [1,..,1]), per-channel (axis 1), last-axis, or general."""
        shape = self.shape(x)
        kinds = ["scalar", "one", "one_full"]
        if len(shape) >= 2:
            kinds += ["channel", "channel_short"]
        if len(shape) >= 1:
            kinds += ["last", "general", "full"]
        kind = kind or self.pick(kinds)
        if kind == "scalar":
            cs = []
        elif kind == "one":
            cs = [1]
        elif kind == "one_full":
            cs = [1] * len(shape)
        elif kind == "channel":
            cs = [1, shape[1]] + [1] * (len(shape) - 2)
        elif kind == "channel_short":
            cs = [shape[1]] + [1] * (len(shape) - 2)
        elif kind == "last":
            cs = [shape[-1]]
        elif kind == "full":
            cs = list(shape)
        else:
            cs = [d if self.p(0.5) else 1 for d in shape]
            drop = self.r(0, len(cs))
            cs = cs[drop:]
        if not self.float:
            v = self.rng.integers(1, 4, cs) * (1 if positive else self.rng.choice([-1, 1], cs))
            return self.const(v)
        if positive or away:
            v = self.rng.uniform(0.5, 2.0, cs)
            if away and not positive:
                v = v * self.rng.choice([-1.0, 1.0], cs)
        else:
            v = self.rng.uniform(-1.5, 1.5, cs)
        return self.const(v)

    # ---- elementwise chains ------------------------------------------------

    def unary(self, x):
        lo, hi, mag = self.stats(x)
        if not self.float:
            op = self.pick(["Relu", "Abs", "Neg"])
            return self.node(op, [x])
        ops = ["Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "Clip", "Abs", "HardSigmoid",
               "Softplus", "Neg", "HardSwish", "Selu", "Softsign", "Celu", "gelu", "PRelu",
               "Sin", "Cos"]
        if hi < 8:
            ops.append("Exp")
        if lo > 0.05:
            ops += ["Sqrt", "Log"]
        op = self.pick(ops)
        if op == "LeakyRelu":
            return self.node(op, [x], {"alpha": F(self.pick([0.01, 0.1, 0.2, 0.5]))}
                             if self.p(0.7) else None)
        if op in ("Elu", "Celu"):
            return self.node(op, [x], {"alpha": F(self.pick([0.5, 1.0, 1.5]))}
                             if self.p(0.7) else None)
        if op == "HardSigmoid":
            return self.node(op, [x], {"alpha": F(self.pick([0.2, 0.25, 1 / 6])),
                                       "beta": F(0.5)} if self.p(0.7) else None)
        if op == "Clip":
            a = float(self.rng.uniform(-1.5, 0))
            b = float(self.rng.uniform(0.1, 6))
            which = self.r(0, 3)
            ins = [x]
            if which in (1, 3):
                ins.append(self.const(np.array(a)))
            if which in (2, 3):
                if len(ins) == 1:
                    ins.append("")
                ins.append(self.const(np.array(b)))
            return self.node(op, ins)
        if op == "gelu":
            return self.gelu(x)
        if op == "PRelu":
            shape = self.shape(x)
            slope_shape = [shape[1]] + [1] * (len(shape) - 2) if len(shape) >= 2 and self.p(0.6) \
                else [1] * min(1, len(shape))
            return self.node(op, [x, self.const(self.rng.uniform(0, 0.5, slope_shape))])
        return self.node(op, [x])

    def gelu(self, x):
        """The erf form of GELU, as exporters write it."""
        d = self.node("Div", [x, self.const(np.array(np.sqrt(2.0)))])
        e = self.node("Erf", [d])
        a = self.node("Add", [e, self.const(np.array(1.0))])
        m = self.node("Mul", [x, a])
        return self.node("Mul", [m, self.const(np.array(0.5))])

    def binary_const(self, x):
        lo, hi, mag = self.stats(x)
        ops = ["Add", "Sub", "Mul", "Div", "Max", "Min"]
        if self.float:
            ops.append("Pow")
        op = self.pick(ops)
        scalarish = self.pick(["scalar", "one", "one_full"]) if self.p(0.5) else None
        if op == "Div":
            c = self.bconst(x, scalarish, away=True)
        elif op == "Pow":
            if lo > 0.05 and self.p(0.5):
                e = self.pick([0.5, 1.5, 2.0, -1.0])
            else:
                e = self.pick([2.0, 3.0, 1.0])
            if mag > 8:
                e = 1.0
            c = self.const(np.full([1] * self.r(0, 1), e))
        else:
            c = self.bconst(x, scalarish)
        ins = [x, c]
        if op in ("Add", "Mul", "Max", "Min") and self.p(0.25):
            ins.reverse()
        return self.node(op, ins)

    def binary_act(self, x, y):
        """X op Y for two activations (Y broadcasts to X or they match)."""
        lo, hi, mag = self.stats(y)
        ops = ["Add", "Add", "Sub", "Mul", "Max", "Min"]
        if self.float and (lo > 0.3 or hi < -0.3):
            ops.append("Div")
        op = self.pick(ops)
        ins = [x, y] if self.p(0.6) else [y, x]
        if op in ("Sub", "Div"):
            ins = [x, y]
        return self.node(op, ins)

    def tame(self, x):
        """Keeps magnitudes moderate so chains stay well-conditioned."""
        lo, hi, mag = self.stats(x)
        if mag > 30 and self.float:
            return self.node(self.pick(["Tanh", "Sigmoid", "Softsign"]), [x])
        return x

    def chain(self, x, length=None, pool_acts=None):
        """A random chain of elementwise ops after X."""
        n = length if length is not None else self.r(1, 5)
        acts = [x] + list(pool_acts or [])
        for _ in range(n):
            x = self.tame(x)
            k = self.rng.random()
            if k < 0.45:
                x = self.unary(x)
            elif k < 0.85:
                x = self.binary_const(x)
            else:
                same = [a for a in acts if self.shape(a) == self.shape(x) and a != x]
                if same:
                    x = self.binary_act(x, self.pick(same))
                else:
                    x = self.binary_const(x)
            acts.append(x)
        return self.tame(x)

    def const_chain(self, x):
        """Two or more binaries of a constant in a row (Conv -> Mul(c) ->
        Add(d): the pattern fused post-ops get wrong, and that the core's
        optimiser takes into a Conv's weights, or after a 2-D MatMul into a
        Gemm): one element, or one per channel (axis 1)."""
        for _ in range(self.r(2, 4)):
            op = self.pick(["Mul", "Add", "Sub", "Div", "Mul", "Add"])
            kinds = ["scalar", "one", "one_full"]
            if len(self.shape(x)) >= 2:
                kinds += ["channel", "channel_short"]
            kind = self.pick(kinds)
            c = self.bconst(x, kind, away=(op == "Div"))
            x = self.node(op, [x, c] if op in ("Sub", "Div") or self.p(0.7) else [c, x])
        return x

    def tail(self, x, extra=()):
        if self.p(0.35):
            x = self.const_chain(x)
        x = self.chain(x, pool_acts=extra)
        if self.p(0.3):
            x = self.const_chain(x)
        return x

    # ---- heads ------------------------------------------------------------

    def conv(self, x=None, wide=False):
        d = self.pick([1, 2, 2, 2, 3]) if x is None else len(self.shape(x)) - 2
        # Sometimes (wide, 2-D) a layer the onednn module's Winograd variant
        # takes below AVX-512 (onednn_winograd.c): 3x3, stride 1, 24 to 64
        # channels in, 7x7 to 18x18 maps (F(2x2) and F(4x4), edge tiles),
        # any pads up to 2 per side.
        wino = wide and x is None and d == 2 and self.p(0.3)
        # ... or, of those, one dilated along one axis or both, the onednn
        # module runs by phase on AVX-512 (onednn_phase.c): 64 to 80
        # channels, stride 1, maps of 7 phase rows and columns or more, any
        # pads up to twice the dilation per side.
        if wino and self.p(0.4):
            dil = [self.pick([1, 2, 3]) for _ in range(2)]
            if dil == [1, 1]:
                dil[self.r(0, 1)] = 2
            cin = 8 * self.r(8, 10)
            x = self.input([self.r(1, 2), cin] + [self.r(9 * di + 2, 9 * di + 16) for di in dil])
            pads = [self.r(0, 2 * dil[i % 2]) for i in range(4)]
            m = 8 * self.r(8, 10)
            ins = [x, self.weights([m, cin, 3, 3])]
            if self.p(0.6):
                ins.append(self.weights([m], scale=0.5))
            return self.node("Conv", ins, {"kernel_shape": INTS([3, 3]), "pads": INTS(pads),
                                           "dilations": INTS(dil)})
        if wino:
            cin = 8 * self.r(3, 8)
            x = self.input([self.r(1, 2), cin, self.r(7, 18), self.r(7, 18)])
            pads = [self.r(0, 2) for _ in range(4)]
            m = 8 * self.r(2, 6)
            ins = [x, self.weights([m, cin, 3, 3])]
            if self.p(0.6):
                ins.append(self.weights([m], scale=0.5))
            return self.node("Conv", ins, {"kernel_shape": INTS([3, 3]), "pads": INTS(pads)})
        dense = 0
        if x is None:
            groups = self.pick([1, 1, 1, 2, 3, "dw"]) if not wide else 1
            cin = (self.r(1, 4) * (1 if groups == "dw" else groups)
                   if groups != "dw" else self.r(1, 6))
            if wide:
                cin = 8 * self.r(1, 5)
                # or 2 or 4 channels per group in and out (ResNeXt's
                # 32x4d): the onednn module's grouped kernel
                if self.p(0.3):
                    groups = cin // self.pick([2, 4])
                # or 2 or 3 groups of whole channel blocks, 16 or 24 a
                # group (ShuffleNet v1, RegNet): the direct kernel group
                # by group, 1x1 as well
                elif self.p(0.3):
                    groups = self.pick([2, 3])
                    cin = groups * 8 * self.r(2, 3)
                    dense = groups
            size = {1: (3, 16), 2: (3, 10), 3: (2, 6)}[d]
            x = self.input([self.r(1, 2), cin] + [self.r(*size) for _ in range(d)])
        else:
            groups = self.pick([1, 1, "dw"]) if not wide else 1
        shape = self.shape(x)
        cin = shape[1]
        if groups == "dw":
            g = cin
            m = cin * self.pick([1, 1, 2])
        else:
            g = groups if cin % groups == 0 else 1
            m = g * self.r(1, 4) if not wide else 8 * self.r(1, 5) if g == 1 else cin
            if dense:
                m = g * 8 * self.r(2, 4)
        ks, st, dil, pads = [], [], [], [[], []]
        # Sometimes an ASPP branch: a dilated kernel padded to keep the size,
        # on a map that may be narrower than the dilation (outer taps that
        # read only padding, which the optimiser cuts off).
        aspp = self.p(0.15)
        one = dense and self.p(0.5)  # the direct kernel takes them 1x1
        for s in shape[2:]:
            k = 1 if one else self.r(1, min(5 if d == 1 else 3, s + 2))
            di = self.pick([1, 1, 1, 2]) if k > 1 else 1
            if aspp:
                k, di = self.pick([2, 3, 3]), self.pick([2, 3, 4, 6, 12])
            ext = (k - 1) * di + 1
            pb, pe = self.r(0, k - 1), self.r(0, k - 1)
            if aspp:
                pb = pe = di * (k - 1) // 2 + self.r(0, 1)
            if s + pb + pe < ext:
                pe += ext - (s + pb + pe)
            ks.append(k)
            st.append(self.pick([1, 1, 2, 3]))
            dil.append(di)
            pads[0].append(pb)
            pads[1].append(pe)
        attrs = {"kernel_shape": INTS(ks)}
        if self.p(0.1):
            attrs["auto_pad"] = S(self.pick(["SAME_UPPER", "SAME_LOWER", "VALID"]))
            if attrs["auto_pad"][1] == "VALID" and any(
                    (k - 1) * di + 1 > s for k, di, s in zip(ks, dil, shape[2:])):
                attrs["auto_pad"] = S("SAME_UPPER")
        elif any(pads[0] + pads[1]) or self.p(0.3):
            attrs["pads"] = INTS(pads[0] + pads[1])
        if any(s != 1 for s in st) or self.p(0.3):
            attrs["strides"] = INTS(st)
        if any(x != 1 for x in dil) or self.p(0.2):
            attrs["dilations"] = INTS(dil)
        if g != 1 or self.p(0.2):
            attrs["group"] = I(g)
        if "auto_pad" in attrs and attrs["auto_pad"][1] != "VALID":
            attrs.pop("dilations", None)
            dil = [1] * d
        w = self.weights([m, cin // g] + ks)
        ins = [x, w]
        if self.p(0.6):
            ins.append(self.weights([m], scale=0.5))
        return self.node("Conv", ins, attrs)

    def deconv(self):
        """ConvTranspose: 1-D to 3-D, strides, dilations, asymmetric pads,
        output_padding, groups, with or without bias."""
        d = self.pick([1, 2, 2, 2, 3])
        g = self.pick([1, 1, 1, 2, 3])
        cin = g * self.r(1, 3)
        size = {1: (2, 10), 2: (2, 7), 3: (2, 4)}[d]
        x = self.input([self.r(1, 2), cin] + [self.r(*size) for _ in range(d)])
        mg = self.r(1, 3)
        ks, st, dil, pads, opad = [], [], [], [[], []], []
        for s in self.shape(x)[2:]:
            k = self.r(1, 3 if d > 1 else 4)
            di = self.pick([1, 1, 2]) if k > 1 else 1
            stv = self.pick([1, 1, 2, 3])
            ext = (k - 1) * di + 1
            full = stv * (s - 1) + ext
            pb = self.r(0, min(k - 1, 2))
            pe = self.r(0, min(k - 1, 2))
            if pb + pe >= full:
                pb = pe = 0
            op = self.r(0, max(stv, di) - 1) if self.p(0.3) else 0
            ks.append(k)
            st.append(stv)
            dil.append(di)
            pads[0].append(pb)
            pads[1].append(pe)
            opad.append(op)
        attrs = {"kernel_shape": INTS(ks)}
        if any(pads[0] + pads[1]) or self.p(0.3):
            attrs["pads"] = INTS(pads[0] + pads[1])
        if any(v != 1 for v in st) or self.p(0.3):
            attrs["strides"] = INTS(st)
        if any(v != 1 for v in dil):
            attrs["dilations"] = INTS(dil)
        if any(opad):
            attrs["output_padding"] = INTS(opad)
        if g != 1 or self.p(0.2):
            attrs["group"] = I(g)
        ins = [x, self.weights([cin, mg] + ks)]
        if self.p(0.6):
            ins.append(self.weights([g * mg], scale=0.5))
        return self.node("ConvTranspose", ins, attrs)

    def matmul(self):
        """A MatMul or Gemm; a quarter of them add a graph input of the
        result's shape after it (sometimes after a Relu): the residual a
        fused product sums into its destination."""
        y = self.product()
        if self.p(0.25):
            if self.p(0.5):
                y = self.node("Relu", [y])
            y = self.node("Add", [y, self.input(self.shape(y))])
        return y

    def product(self):
        if self.p(0.4):
            return self.gemm()
        rank = self.pick([2, 2, 3, 4])
        mdim, k, n = self.r(1, 12), self.r(1, 16), self.wide_n()
        batch = [self.r(1, 3) for _ in range(rank - 2)]
        a = self.input(batch + [mdim, k])
        kind = self.pick(["const2d", "const2d", "const_batch", "act"])
        if kind == "const2d":
            b = self.weights([k, n])
        elif kind == "const_batch":
            bb = [d if self.p(0.5) else 1 for d in batch]
            b = self.weights(bb[self.r(0, len(bb)):] + [k, n])
        else:
            bb = [d if self.p(0.5) else 1 for d in batch]
            b = self.input(bb + [k, n])
        return self.node("MatMul", [a, b])

    def wide_n(self):
        """A product's N: mostly small, sometimes rows of a multiple of 1
        KiB, which the onednn module stores padded below AVX-512."""
        return self.pick([256, 512, 768]) if self.p(0.15) else self.r(1, 12)

    def gemm(self):
        mdim, k, n = self.r(1, 12), self.r(1, 16), self.wide_n()
        ta, tb = self.r(0, 1), self.r(0, 1)
        a = self.input([k, mdim] if ta else [mdim, k])
        b = self.weights([n, k] if tb else [k, n])
        attrs = {}
        if ta or self.p(0.2):
            attrs["transA"] = I(ta)
        if tb or self.p(0.2):
            attrs["transB"] = I(tb)
        if self.p(0.4):
            attrs["alpha"] = F(self.pick([0.5, 2.0, -1.0, 0.25]))
        ins = [a, b]
        if self.p(0.7):
            cshape = self.pick([[n], [1], [mdim, n], [mdim, 1], [], [1, n]])
            ins.append(self.weights(cshape, scale=0.5))
            if self.p(0.4):
                attrs["beta"] = F(self.pick([0.5, 2.0, -1.0]))
        return self.node("Gemm", ins, attrs)

    def resize(self, x):
        """A Resize of X's spatial axes in one of ONNX's modes and
        coordinate transformations, to sizes (or a scale that gives a
        whole size, where every reading of the spec agrees), up or down,
        often between two convolutions (a channel-blocked source and
        destination)."""
        shape = self.shape(x)
        mode = self.pick(["nearest", "linear", "linear", "cubic"])
        ctms = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
        if mode == "nearest":
            ctms.append("tf_half_pixel_for_nn")
        attrs = {"mode": S(mode), "coordinate_transformation_mode": S(self.pick(ctms))}
        if mode == "nearest":
            attrs["nearest_mode"] = S(self.pick(["round_prefer_floor", "round_prefer_ceil",
                                                 "floor", "ceil"]))
        if mode == "cubic":
            if self.p(0.5):
                attrs["cubic_coeff_a"] = F(self.pick([-0.5, -0.75]))
            if self.p(0.5):
                attrs["exclude_outside"] = I(1)
        if self.p(0.3):
            k = self.pick([2, 2, 3])
            scales = [1.0, 1.0, float(k), float(k)]
            ins = [x, "", self.const(np.asarray(scales, np.float32), "f32")]
        else:
            sizes = shape[:2] + [self.r(1, 2 * s + 3) for s in shape[2:]]
            ins = [x, "", "", self.i64(sizes)]
        y = self.node("Resize", ins, attrs)
        return self.conv(y) if self.p(0.5) else y

    def spatial_pad(self, x):
        r = len(self.shape(x))
        pads = [0, 0] + [self.r(0, 2) for _ in range(r - 2)] + [0, 0] + \
            [self.r(0, 2) for _ in range(r - 2)]
        ins = [x, self.i64(pads)]
        if self.p(0.5):
            ins.append(self.const(np.asarray(self.pick([0.0, 0.0, 1.5, -2.0]), dtype=np.float32)))
        return self.node("Pad", ins)

    def pool(self, x=None):
        if x is None:
            d = self.pick([1, 2, 2, 3])
            size = {1: (3, 14), 2: (3, 10), 3: (2, 6)}[d]
            x = self.input([self.r(1, 2), self.r(1, 5)] + [self.r(*size) for _ in range(d)])
            if self.p(0.5):
                x = self.conv(x)
                # A constant Pad of the spatial axes between them (HGNetV2's
                # stem, timm's padded average pools): the onednn module
                # pads a convolution's blocked or channels-last output in
                # its layout (odnn_pad_blocked).
                if d == 2 and self.p(0.35):
                    x = self.spatial_pad(x)
            if d == 2 and self.p(0.3):
                return self.resize(x)
        shape = self.shape(x)
        d = len(shape) - 2
        op = self.pick(["MaxPool", "MaxPool", "AveragePool", "AveragePool",
                        "GlobalAveragePool", "GlobalMaxPool"])
        if op.startswith("Global"):
            return self.node(op, [x])
        ks, st, pads, dil = [], [], [[], []], []
        for s in shape[2:]:
            k = self.r(1, min(4, s + 1))
            di = self.pick([1, 1, 2]) if op == "MaxPool" and k > 1 else 1
            ext = (k - 1) * di + 1
            pb, pe = self.r(0, min(k - 1, 2)), self.r(0, min(k - 1, 2))
            if s + pb + pe < ext:
                pe = min(pe + ext - (s + pb + pe), k - 1)
                if s + pb + pe < ext:
                    k, di, ext, pb, pe = 1, 1, 1, 0, 0
            ks.append(k)
            st.append(self.pick([1, 2, 2, 3]))
            pads[0].append(pb)
            pads[1].append(pe)
            dil.append(di)
        attrs = {"kernel_shape": INTS(ks)}
        if any(pads[0] + pads[1]) or self.p(0.2):
            attrs["pads"] = INTS(pads[0] + pads[1])
        if any(s != 1 for s in st) or self.p(0.2):
            attrs["strides"] = INTS(st)
        if any(v != 1 for v in dil):
            attrs["dilations"] = INTS(dil)
        ceil = self.p(0.35)
        if ceil:
            attrs["ceil_mode"] = I(1)
        if op == "AveragePool" and self.p(0.5) and not ceil:
            attrs["count_include_pad"] = I(1)
        if "pads" in attrs and dt_ref.pool_has_empty_window(attrs, shape):
            # A window that sees only padding has no defined max or mean
            # (cpu says -inf, onednn -FLT_MAX): not what this tests.
            del attrs["pads"]
            attrs.pop("ceil_mode", None)
            attrs.pop("dilations", None)
            attrs["kernel_shape"] = INTS([min(k, s) for k, s in zip(ks, shape[2:])])
        return self.node(op, [x], attrs)

    def norm(self, x=None):
        if x is None:
            rank = self.pick([2, 3, 4, 4, 5])
            x = self.input([self.r(1, 3)] + [self.r(1, 6)] + [self.r(1, 8) for _ in
                                                            range(rank - 2)])
            if rank >= 3 and self.p(0.3):
                x = self.conv(x)
        shape = self.shape(x)
        ops = ["LayerNormalization", "decomposed_ln", "Softmax", "ReduceMean", "ReduceSum"]
        if len(shape) >= 2:
            ops.append("BatchNormalization")
        if len(shape) >= 3:
            ops.append("InstanceNormalization")
        op = self.pick(ops)
        if op in ("InstanceNormalization", "LayerNormalization", "decomposed_ln") and \
                self.flat(x, op):
            # Normalising near-constant data amplifies rounding by
            # 1/sqrt(epsilon): a mismatch there is not a bug.
            op = "Softmax"
        c = shape[1] if len(shape) >= 2 else 1
        if op == "BatchNormalization":
            ins = [x, self.const(self.rng.uniform(0.5, 1.5, [c])),
                   self.const(self.rng.uniform(-0.5, 0.5, [c])),
                   self.const(self.rng.uniform(-0.5, 0.5, [c])),
                   self.const(self.rng.uniform(0.25, 2.0, [c]))]
            attrs = {"epsilon": F(self.pick([1e-5, 1e-3]))} if self.p(0.5) else None
            return self.node(op, ins, attrs)
        if op == "InstanceNormalization":
            ins = [x, self.const(self.rng.uniform(0.5, 1.5, [c])),
                   self.const(self.rng.uniform(-0.5, 0.5, [c]))]
            return self.node(op, ins, {"epsilon": F(1e-5)} if self.p(0.3) else None)
        if op == "LayerNormalization":
            axis = self.r(1 if len(shape) > 1 else 0, len(shape) - 1) if self.p(0.4) else -1
            norm_shape = shape[axis % len(shape):]
            ins = [x, self.const(self.rng.uniform(0.5, 1.5, norm_shape))]
            if self.p(0.7):
                ins.append(self.const(self.rng.uniform(-0.5, 0.5, norm_shape)))
            attrs = {}
            if axis != -1 or self.p(0.3):
                attrs["axis"] = I(axis)
            if self.p(0.3):
                attrs["epsilon"] = F(1e-3)
            return self.node(op, ins, attrs)
        if op == "decomposed_ln":
            return self.decomposed_ln(x)
        if op == "Softmax":
            attrs = {"axis": I(self.r(-len(shape), len(shape) - 1))} if self.p(0.6) else None
            return self.node(op, [x], attrs)
        axes = sorted(set(self.r(0, len(shape) - 1) for _ in range(self.r(1, len(shape)))))
        if self.p(0.3):
            axes = [a - len(shape) for a in axes]
        keep = self.r(0, 1)
        if op == "ReduceMean":
            return self.node(op, [x], {"axes": INTS(axes), "keepdims": I(keep)})
        return self.node(op, [x, self.i64(axes)], {"keepdims": I(keep)})

    def flat(self, x, op):
        """True when some group OP normalises over has a variance too small
        for f32 rounding to stay within tolerance after normalising."""
        v = self.env[x]
        if v.ndim == 0:
            return True
        axes = tuple(range(2, v.ndim)) if op == "InstanceNormalization" else (v.ndim - 1,)
        if not axes:
            return True
        var = v.var(axis=axes)
        return float(np.min(var)) < 1e-3 * max(1.0, float(np.max(np.abs(v))) ** 2)

    def decomposed_ln(self, x):
        """LayerNorm as exporters decompose it (nine nodes)."""
        h = self.shape(x)[-1]
        mu = self.node("ReduceMean", [x], {"axes": INTS([-1])})
        dlt = self.node("Sub", [x, mu])
        sq = self.node("Pow", [dlt, self.const(np.array(2.0))])
        var = self.node("ReduceMean", [sq], {"axes": INTS([-1])})
        ve = self.node("Add", [var, self.const(np.array(1e-5))])
        sd = self.node("Sqrt", [ve])
        nrm = self.node("Div", [dlt, sd])
        sc = self.node("Mul", [nrm, self.const(self.rng.uniform(0.5, 1.5, [h]))])
        return self.node("Add", [sc, self.const(self.rng.uniform(-0.5, 0.5, [h]))])

    def movement(self, x=None):
        if x is None:
            rank = self.r(1, 4)
            x = self.input([self.r(1, 5) for _ in range(rank)])
        if not self.shape(x):
            x = self.node("Reshape", [x, self.i64([1])])
        shape = self.shape(x)
        rank = len(shape)
        op = self.pick(["Concat", "Split", "Reshape", "Transpose", "Slice", "Flatten"])
        if op == "Concat":
            axis = self.r(0, rank - 1)
            others = []
            for _ in range(self.r(1, 2)):
                s = list(shape)
                s[axis] = self.r(1, 4)
                others.append(self.weights(s, 1.0) if self.p(0.4) else self.chain(
                    self.input(s), 1))
            parts = [x] + others
            if self.p(0.5):
                parts.reverse()
            return self.node(op, parts, {"axis": I(axis - rank if self.p(0.3) else axis)})
        if op == "Split":
            axis = self.r(0, rank - 1)
            n = shape[axis]
            if n < 2:
                return self.node("Identity", [x])
            cut = self.r(1, n - 1)
            ins = [x]
            if self.p(0.6) or n % 2:
                ins.append(self.i64([cut, n - cut]))
            outs = self.node(op, ins, {"axis": I(axis)}, n_out=2)
            a, b = outs
            if self.shape(a) == self.shape(b) and self.p(0.6):
                return self.node(self.pick(["Add", "Mul", "Max"]), [a, b])
            return self.pick([a, b])
        if op == "Reshape":
            total = int(np.prod(shape))
            dims = []
            rest = total
            for _ in range(self.r(1, 3)):
                divs = [v for v in range(1, rest + 1) if rest % v == 0]
                v = self.pick(divs)
                dims.append(v)
                rest //= v
            dims.append(rest)
            if self.p(0.4):
                dims[self.r(0, len(dims) - 1)] = -1
            return self.node(op, [x, self.i64(dims)])
        if op == "Transpose":
            perm = list(self.rng.permutation(rank))
            return self.node(op, [x], {"perm": INTS(perm)} if self.p(0.8) else None)
        if op == "Slice":
            axes, starts, ends, steps = [], [], [], []
            for a in range(rank):
                if self.p(0.6) and shape[a] > 1:
                    s = self.r(0, shape[a] - 1)
                    e = self.r(s + 1, shape[a])
                    st = self.pick([1, 1, 2])
                    if self.p(0.2):
                        s, e, st = e - 1, (s - 1 if s > 0 else -shape[a] - 1), -1
                    axes.append(a)
                    starts.append(s - shape[a] if self.p(0.2) and s >= 0 else s)
                    ends.append(e)
                    steps.append(st)
            if not axes:
                axes, starts, ends, steps = [0], [0], [shape[0]], [1]
            ins = [x, self.i64(starts), self.i64(ends), self.i64(axes)]
            if any(s != 1 for s in steps) or self.p(0.3):
                ins.append(self.i64(steps))
            return self.node(op, ins)
        axis = self.r(0, rank)
        return self.node("Flatten", [x], {"axis": I(axis)})

    def eltwise(self):
        rank = self.r(1, 4)
        x = self.input([self.r(1, 6) for _ in range(rank)])
        if self.p(0.3):
            s = [d if self.p(0.5) else 1 for d in self.shape(x)]
            y = self.input(s[self.r(0, len(s) - 1):] or [1])
            x = self.binary_act(x, self.chain(y, self.r(0, 2)))
        return x

    # ---- families -----------------------------------------------------------

    def build(self, family):
        extra = []
        if family in ("conv", "wideconv"):
            wide = family == "wideconv"
            x = self.conv(wide=wide)
            if self.p(0.3):
                extra.append(self.conv(self.g.nodes[0]["inputs"][0], wide=wide))
                if self.shape(extra[0]) != self.shape(x):
                    extra = []
        elif family == "matmul":
            x = self.matmul()
        elif family == "eltwise":
            x = self.eltwise()
        elif family == "pool":
            x = self.pool()
        elif family == "norm":
            x = self.norm()
        elif family == "shape":
            x = self.movement()
            if self.p(0.5):
                x = self.movement(self.chain(x, self.r(0, 2)))
        elif family == "mixed":
            x = self.mixed()
        elif family == "deconv":
            x = self.deconv()
        elif family == "rnn":
            return self.recurrent()
        elif family == "quant":
            return self.quant()
        elif family == "qdq":
            return self.qdq()
        elif family == "dynq":
            return self.dynq()
        elif family == "kernels":
            x = self.kernels()
        elif family == "siblings":
            x = self.siblings()
        elif family == "loop":
            return self.loop()
        else:
            raise ValueError("unknown family %s" % family)
        y = self.tail(x, extra)
        outs = [y]
        # Sometimes the head's output too: a graph output that later nodes
        # also read (it keeps fusions from swallowing it).
        if y != x and x not in self.g.tensors and self.p(0.25):
            outs.insert(0, x)
        self.g.outputs = outs
        return self.g

    def q8(self, shape, signed):
        lo = -128 if signed else 0
        return self.rng.integers(lo, lo + 256, shape)

    def quant(self):
        """One integer product: ConvInteger or QLinearConv of any spatial
        rank, group and window, or MatMulInteger / QLinearMatMul with batch
        dims; u8 or i8 operands, zero points one or per channel / row /
        column, i32 bias. Results are exact integers."""
        xs_signed, ws_signed = self.p(0.3), self.p(0.5)
        self.dtype = "i8" if xs_signed else "u8"
        if self.p(0.15):
            return self._quant_maxpool()
        xdt, wdt = self.dtype, "i8" if ws_signed else "u8"
        op = self.pick(["ConvInteger", "QLinearConv", "QLinearConv", "MatMulInteger",
                        "QLinearMatMul"])
        ql = op.startswith("QLinear")
        attrs = {}
        if op.endswith("Conv") or op == "ConvInteger":
            d = self.pick([1, 2, 2, 2, 3])
            groups = self.pick([1, 1, 1, 2, "dw"])
            g = 1 if groups == 1 else 2 if groups == 2 else self.r(1, 6)
            cg = 1 if groups == "dw" else self.pick([1, 3, 8, 17, 40])
            mg = self.pick([1, 2, 8, 9, 24, 40]) if groups != "dw" else self.pick([1, 1, 2])
            size = {1: (1, 40), 2: (1, 14), 3: (1, 6)}[d]
            dims = [self.r(*size) for _ in range(d)]
            if d == 2 and self.p(0.3):  # rows wide enough for the plane loops
                dims[1] = self.r(16, 72)
            if d == 2 and groups == 1 and self.p(0.2):
                # a map whose padded copy is over the cpu module's 256 KiB
                # (quant_conv.c's QC_PAD_MAX_BYTES): the im2col that checks
                # bounds run by run
                cg, mg, dims = 17, self.pick([1, 2, 8]), [self.r(125, 140), self.r(125, 140)]
            x = self.input([self.r(1, 2), g * cg] + dims)
            sp = self.shape(x)[2:]
            ks, st, dil, pb, pe = [], [], [], [], []
            # depthwise 2-D windows up to 7x7 (ConvNeXt's): the cpu
            # module's channels-last loop takes the wide ones
            wide = d == 2 and groups == "dw" and self.p(0.5)
            # a stride-2 2-D window over rows of 16 or more (a network's
            # stem, ResNet's downsampling): the cpu module reads its input
            # as four parity phases without an im2col
            stem = d == 2 and groups != "dw" and sp[1] >= 16 and self.p(0.5)
            for s in sp:
                k = min(self.pick([5, 7]), s + 2) if wide else \
                    self.pick([1, 3, 7]) if stem else \
                    self.r(1, min(5 if d == 1 else 3, s + 2))
                di = self.pick([1, 1, 2]) if k > 1 and not stem else 1
                ext = (k - 1) * di + 1
                b, e = self.r(0, k - 1), self.r(0, k - 1)
                if s + b + e < ext:
                    e += ext - (s + b + e)
                ks.append(k)
                st.append(2 if stem else self.pick([1, 1, 2, 3]))
                dil.append(di)
                pb.append(b)
                pe.append(e)
            attrs = {"kernel_shape": INTS(ks), "strides": INTS(st), "dilations": INTS(dil),
                     "group": I(g)}
            if self.p(0.2) and all(t == 1 for t in dil):
                fits = all(k <= s for k, s in zip(ks, sp))  # VALID needs the window inside
                attrs["auto_pad"] = S(self.pick(["SAME_UPPER", "SAME_LOWER"] +
                                                (["VALID"] if fits else [])))
            else:
                attrs["pads"] = INTS(pb + pe)
            m = g * mg
            w = self.const(self.q8([m, cg] + ks, ws_signed), wdt)
            n_per = m
        else:
            k = self.pick([1, 3, 4, 7, 16, 33, 64, 130])
            rows = self.r(1, 40)
            batch = [self.r(1, 3) for _ in range(self.r(0, 2))]
            x = self.input(batch + [rows, k])
            n = self.pick([1, 5, 16, 31, 32, 33, 70])
            if self.p(0.3):  # B an input too (packed at run time), maybe batched
                ws_signed, wdt = xs_signed, xdt  # the feed has one dtype
                w = self.input(batch[len(batch) - self.r(0, len(batch)):] + [k, n])
            else:
                w = self.const(self.q8([k, n], ws_signed), wdt)
            n_per, m = n, rows
        per_w = self.p(0.5)
        wz = self.const(self.q8([n_per] if per_w else [], ws_signed), wdt)
        xz = self.const(self.q8([], xs_signed), xdt)
        if op == "MatMulInteger" and self.p(0.3):  # a zero point per row of A
            xz = self.const(self.q8([m], xs_signed), xdt)
        if not ql:
            return self._quant_node(op, [x, w, xz, wz], attrs)
        ys_signed = self.p(0.3)
        ydt = "i8" if ys_signed else "u8"
        xscale = self.const(np.float32(self.rng.uniform(0.01, 0.1)), "f32")
        wscale = self.const(np.float32(self.rng.uniform(0.01, 0.1, [n_per] if per_w else [])),
                            "f32")
        # the output's scale from the products' reach, so outputs spread
        reach = 127.0 * 255.0 * max(1, int(np.prod(self.env[w].shape)) // max(1, n_per))
        yscale = self.const(np.float32(0.05 * 0.05 * reach / 40.0 * self.rng.uniform(0.3, 3)),
                            "f32")
        yz = self.const(self.q8([], ys_signed), ydt)
        ins = [x, xscale, xz, w, wscale, wz, yscale, yz]
        if op == "QLinearConv" and self.p(0.6):
            ins.append(self.const(self.rng.integers(-5000, 5000, [m]), "i32"))
        return self._quant_node(op, ins, attrs)

    def kernels(self):
        """The ops the onednn module runs as its own kernels because oneDNN
        2.6 has none: an Erf outside a GELU pattern (as QDQ models leave it),
        Expand (grouped-query attention's repeated heads, or any broadcast
        to a shape of equal or higher rank), and GroupNorm as exporters
        write it (Reshape -> InstanceNormalization -> Reshape -> Mul -> Add,
        one group or several), and Where (transformers' attention masks: a
        bool condition, constant or made outside the subgraph by a Greater,
        each of the three inputs broadcasting to the output or not, a
        constant or computed value on either side), and attention as
        exporters write it (the onednn module's fused kernel on AVX-512);
        sizes up to a few 10K values, so the kernels' thread teams and tails
        run."""
        op = self.pick(["Erf", "Expand", "Expand", "GroupNorm", "Where", "Where", "Attention",
                        "Attention"])
        if op == "Where":
            return self.where()
        if op == "Attention":
            return self.attention()
        if op == "Erf":
            x = self.input([self.r(1, 3), self.r(1, 64), self.r(1, 300)])
            x = self.node("Mul", [x, self.const(np.array(self.pick([0.5, 2.0, 4.0])))])
            return self.node("Erf", [x])
        if op == "Expand":
            if self.p(0.5):  # [B, KV, 1, S, D] -> [B, KV, R, S, D], then the heads merged
                b, kv, rep, sq, d = (self.r(1, 2), self.r(1, 4), self.r(2, 4), self.r(1, 48),
                                     self.pick([16, 32, 64]))
                x = self.chain(self.input([b, kv, 1, sq, d]), 1)
                e = self.node("Expand", [x, self.i64([b, kv, rep, sq, d])])
                return self.node("Reshape", [e, self.i64([b, kv * rep, sq, d])])
            rank = self.r(1, 4)
            out = [self.r(1, 6) for _ in range(rank + self.r(0, 1))]
            xs = [d if self.p(0.5) else 1 for d in out[len(out) - rank:]]
            x = self.chain(self.input(xs), 1)
            shape = [d if self.p(0.7) else 1 for d in out]  # Expand broadcasts both ways
            return self.node("Expand", [x, self.i64(shape)])
        n, c = self.r(1, 2), self.pick([4, 8, 16, 32])
        g = self.pick([1, 2, c])
        h, w = self.r(1, 24), self.r(1, 24)
        x = self.input([n, c, h, w])
        if self.flat_groups(x, g):
            return self.node("Relu", [x])
        r = self.node("Reshape", [x, self.i64([n, g, -1])])
        nrm = self.node("InstanceNormalization",
                        [r, self.const(np.ones(g)), self.const(np.zeros(g))],
                        {"epsilon": F(1e-5)})
        y = self.node("Reshape", [nrm, self.i64([n, c, h, w])])
        y = self.node("Mul", [y, self.const(self.rng.uniform(0.5, 1.5, [c, 1, 1]))])
        return self.node("Add", [y, self.const(self.rng.uniform(-0.5, 0.5, [c, 1, 1]))])

    def siblings(self):
        """Products of one input by constant matrices, as transformers'
        query, key and value projections are written (the optimiser puts
        them side by side and splits the result: algebra.c,
        pl_alg_siblings): 2-4 MatMuls of x [batch.., M, K], each maybe with
        the Add of a per-column bias ([N] or [1, .., 1, N], either side),
        one sometimes by the same weights as the one before; then an
        attention of the first three (same widths), or each through a short
        chain and all concatenated on the last axis."""
        if not self.float:
            return self.matmul()
        rank = self.pick([2, 3, 3, 4])
        batch = [self.r(1, 3) for _ in range(rank - 2)]
        m, k = self.r(1, 40), self.pick([self.r(1, 24), 64, 192])
        x = self.chain(self.input(batch + [m, k]), self.r(0, 1))
        nb, same = self.r(2, 4), self.p(0.5)
        n0 = self.r(1, 48)
        outs, w = [], None
        for _ in range(nb):
            n = n0 if same else self.r(1, 48)
            if w is None or self.shape(w)[1] != n or not self.p(0.15):
                w = self.weights([k, n])
            y = self.node("MatMul", [x, w])
            if self.p(0.7):
                bshape = [n] if self.p(0.7) else [1] * (rank - 1) + [n]
                b = self.const(self.rng.uniform(-0.5, 0.5, bshape))
                y = self.node("Add", [y, b] if self.p(0.6) else [b, y])
            outs.append(y)
        if same and nb >= 3 and self.p(0.5):
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            kt = self.node("Transpose", [outs[1]], {"perm": INTS(perm)})
            sc = self.node("MatMul", [outs[0], kt])
            sc = self.node("Mul", [sc, self.const(np.float32(0.125), "f32")])
            pr = self.node("Softmax", [sc], {"axis": I(-1)})
            return self.node("MatMul", [pr, outs[2]])
        return self.node("Concat", [self.chain(o, self.r(0, 1)) for o in outs],
                         {"axis": I(-1)})

    def recur(self, body, terms, h_in, H):
        """A recurrent cell's step in BODY: the row's TERMS plus the product of
        the carried state H_IN by an H x H matrix, through an activation."""
        terms.append(body.add_node("MatMul", [h_in, self.weights([H, H])]))
        acc = terms[0]
        for t in terms[1:]:
            acc = body.add_node("Add", [acc, t])
        return body.add_node(self.pick(["Tanh", "Sigmoid", "Relu"]), [acc])

    def loop(self):
        """A recurrence in an ONNX Loop, as exporters write one (tf2onnx's
        Keras RNNs it cannot fuse, PyTorch's scripted loops): the step's row
        Gather(X, t) of a sequence X (along axis 0 or 1) at the iteration
        number, or at a carried counter from 0, 1 or 2 stepped by 1 whose
        Less against a limit is the condition (a while loop, sometimes stopping before the
        rows run out); 1-3 products of the row (MatMul, or Gemm by the
        transposed matrix with a bias) by constant matrices or by one the
        Loop carries through unchanged, sometimes a reduction of the row
        too, the state's product by a recurrent matrix and an activation;
        the final state, the states and sometimes the first product's rows
        as scan outputs. The optimiser hoists the row products out of the
        body (optimize.c, pl_graph_hoist_loop_products) and the carried
        matrix out of the carried values; a count Loop splits off a while
        loop with scan outputs."""
        if self.dtype != "f32":
            return self.matmul()
        if self.p(0.35):
            return self.scan_rnn()
        T, B = self.r(1, 6), self.r(1, 3)
        E, H = self.pick([1, 3, 8, 17]), self.pick([1, 4, 16, 33])
        axis = self.pick([0, 0, 1])
        x = self.input([T, B, E] if axis == 0 else [B, T, E])
        if self.p(0.3):
            x = self.chain(x, 1)
        body = Graph(self.g.opset)
        body.fresh = lambda prefix: self.g.fresh("lp_" + prefix)
        i_in = body.add_input(body.fresh("i"), "i64", [])
        c_in = body.add_input(body.fresh("cond"), "bool", [])
        counted = self.p(0.5)
        k_in = body.add_input(body.fresh("k"), "i64", []) if counted else None
        h_in = body.add_input(body.fresh("h"), "f32", [B, H])
        carry_w = self.p(0.4)
        w_in = body.add_input(body.fresh("w"), "f32", [E, H]) if carry_w else None
        row = body.add_node("Gather", [x, k_in or i_in], {"axis": I(axis)})
        terms = []
        for j in range(self.r(1, 3)):
            if self.p(0.35):
                args = [row, self.weights([H, E])]
                if self.p(0.7):
                    args.append(self.const(self.rng.uniform(-0.5, 0.5, [H] if self.p(0.6)
                                                            else [1, H])))
                terms.append(body.add_node("Gemm", args, {"transB": I(1)}))
            else:
                w = w_in if j == 0 and carry_w else self.weights([E, H])
                terms.append(body.add_node("MatMul", [row, w]))
        first = terms[0]
        if self.p(0.3):
            terms.append(body.add_node("ReduceSum", [row, self.i64([1])], {"keepdims": I(1)}))
        h_out = self.recur(body, terms, h_in, H)
        if counted:  # from k0 to the limit, at most T rows
            k_out = body.add_node("Add", [k_in, self.i64(1)])
            limit = T if self.p(0.6) else self.r(1, T)
            k0 = self.r(0, min(2, limit - 1))
            cond = body.add_node("Less", [k_out, self.i64(limit)])
        else:
            cond = body.add_node("Identity", [c_in])
        scans = [body.add_node("Identity", [h_out])]
        if self.p(0.3):
            scans.append(body.add_node("Identity", [first]))
        body.outputs = [cond] + ([k_out] if counted else []) + [h_out] + \
            ([w_in] if carry_w else []) + scans
        trips = self.i64(T) if not counted or self.p(0.3) else ""
        h0 = self.input([B, H]) if self.p(0.5) else self.const(np.zeros([B, H]))
        ins = [trips, self.const(np.array(True), "bool")] + ([self.i64(k0)] if counted else []) + \
            [h0] + ([self.weights([E, H])] if carry_w else [])
        outs = self.node("Loop", ins, {"body": ("graph", body)}, n_out=len(body.outputs) - 1)
        nc = len(ins) - 2
        h_fin = outs[nc - 1 - (1 if carry_w else 0)]
        keep = [h_fin] + [o for o in outs[nc:] if self.p(0.7)]
        self.g.outputs = keep
        return self.g

    def scan_rnn(self):
        """The loop family's recurrence as a Scan (tf2onnx writes a TF1
        custom RNN cell so): 1-2 sequences scanned along axis 0 or 1, either
        direction, each slice multiplied by constant matrices (MatMul, or
        Gemm by the transposed matrix with a bias), sometimes also summed;
        the state's recurrent product and an activation; the final state
        and the states (along axis 0 or 1, either direction) as outputs."""
        T, B = self.r(1, 6), self.r(1, 3)
        H = self.pick([1, 4, 16, 33])
        body = Graph(self.g.opset)
        body.fresh = lambda prefix: self.g.fresh("sc_" + prefix)
        h_in = body.add_input(body.fresh("h"), "f32", [B, H])
        seqs, axes, dirs, terms = [], [], [], []
        for _ in range(self.r(1, 2)):
            E, axis = self.pick([1, 3, 8, 17]), self.pick([0, 0, 1])
            x = self.input([T, B, E] if axis == 0 else [B, T, E])
            seqs.append(self.chain(x, 1) if self.p(0.2) else x)
            axes.append(axis if self.p(0.7) else axis - 3)
            dirs.append(self.r(0, 1))
            sl = body.add_input(body.fresh("x"), "f32", [B, E])
            for _ in range(self.r(1, 2)):
                if self.p(0.35):
                    args = [sl, self.weights([H, E])]
                    if self.p(0.7):
                        args.append(self.const(self.rng.uniform(-0.5, 0.5, [H])))
                    terms.append(body.add_node("Gemm", args, {"transB": I(1)}))
                else:
                    terms.append(body.add_node("MatMul", [sl, self.weights([E, H])]))
            if self.p(0.3):
                terms.append(body.add_node("ReduceSum", [sl, self.i64([1])], {"keepdims": I(1)}))
        h_out = self.recur(body, terms, h_in, H)
        body.outputs = [h_out, body.add_node("Identity", [h_out])]
        attrs = {"body": ("graph", body), "num_scan_inputs": I(len(seqs))}
        if any(a != 0 for a in axes) or self.p(0.3):
            attrs["scan_input_axes"] = INTS(axes)
        if any(dirs) or self.p(0.3):
            attrs["scan_input_directions"] = INTS(dirs)
        if self.p(0.3):
            attrs["scan_output_axes"] = INTS([self.r(0, 1)])
        if self.p(0.3):
            attrs["scan_output_directions"] = INTS([self.r(0, 1)])
        h0 = self.input([B, H]) if self.p(0.5) else self.const(np.zeros([B, H]))
        outs = self.node("Scan", [h0] + seqs, attrs, n_out=2)
        self.g.outputs = [o for o in outs if self.p(0.7)] or [outs[0]]
        return self.g

    def attention(self):
        """MatMul(Q, K^T) [-> Mul or Div by a scalar] [-> Where(c, scores,
        fill), either way round] [-> Add a mask] -> Softmax over the keys ->
        MatMul(., V): batch dims 0-2 (V's and the masks' broadcast), Q a
        graph input or a head-splitting Transpose of [B, S, H, D], K^T given
        or a Transpose of K, masks and conditions of broadcast shapes,
        constant or computed, queries 1-110, keys 1-70, widths 1-40 (the
        kernel's tiles, key panels and value lanes all partly used); often
        something after it, sometimes a score's intermediate read twice
        (which must not fuse)."""
        if not self.float:
            return self.where()
        nb = self.r(0, 2)
        batch = [self.r(1, 3) for _ in range(nb)]
        s, n, d, dv = self.r(1, 110), self.r(1, 70), self.r(1, 40), self.r(1, 40)
        if nb == 2 and self.p(0.35):
            return self.attention_regrouped(batch, s, n, d, dv)
        if nb == 2 and self.p(0.5):
            q = self.node("Transpose", [self.input([batch[0], s, batch[1], d])],
                          {"perm": INTS([0, 2, 1, 3])})
        else:
            q = self.chain(self.input(batch + [s, d]), self.r(0, 1))
        if self.p(0.5):
            perm = list(range(nb)) + [nb + 1, nb]
            k = self.node("Transpose", [self.input(batch + [n, d])], {"perm": INTS(perm)})
        else:
            k = self.input(batch + [d, n])
        y = self.node("MatMul", [q, k])
        full = batch + [s, n]

        def bshape():  # right-aligned, each dim kept or 1, maybe of lower rank
            sub = full[self.r(0, len(full) - 1):]
            return [dd if self.p(0.6) else 1 for dd in sub]

        if self.p(0.7):
            c = np.float32(self.pick([0.125, 0.35, 8.0, 2.5]))
            y = self.node(self.pick(["Mul", "Div"]), [y, self.const(c, "f32")])
        if self.p(0.4):
            if self.p(0.5):
                cond = self.const(self.rng.random(bshape()) < 0.7, "bool")
            else:
                cond = self.node("Greater", [self.input(bshape()),
                                             self.const(np.float32(-0.4), "f32")])
            fill = self.const(np.float32(self.pick([-1e9, -3.5, 0.0, -3.4028235e38])), "f32")
            y = self.node("Where", [cond, y, fill] if self.p(0.5) else [cond, fill, y])
        if self.p(0.6):
            if self.p(0.5):
                m = self.const(self.attention_mask(bshape(), n))
            else:
                m = self.chain(self.input(bshape()), 1)
            y = self.node("Add", [m, y] if self.p(0.5) else [y, m])
        if self.p(0.15):  # the scores read twice: no fusion
            y = self.node("Add", [y, self.node("Relu", [y])])
        p = self.node("Softmax", [y], {"axis": I(-1)} if self.p(0.7) else
                      {"axis": I(len(full) - 1)})
        vb = [b if self.p(0.7) else 1 for b in batch]
        v = self.input(vb[self.r(0, len(vb)):] + [n, dv])
        return self.node("MatMul", [p, v])

    def attention_mask(self, shape, n):
        """A constant additive mask of SHAPE: values in [-2, 2], and where
        it spans the N keys about a fifth of them -1e4, never the first (a
        row of scores shifted by -1e4 keeps only a thousandth's precision in
        f32, which no backend can match the float64 reference on)."""
        m = self.rng.uniform(-2, 2, shape)
        if len(shape) and shape[-1] == n and n > 1:
            cut = self.rng.random(shape) < 0.2
            cut[..., 0] = False
            m = np.where(cut, -1e4, m)
        return m

    def attention_regrouped(self, batch, s, n, d, dv):
        """BART's, CLIP's, OPT's, Swin's and BLOOM's attention: products
        over the heads merged into one batch dim, maybe a bias added, the
        scores Reshaped to [B, H, S, N] for the masks (and OPT's Max by a
        scalar floor), then back before or after the Softmax."""
        merged = [batch[0] * batch[1]]
        q = self.chain(self.input(merged + [s, d]), self.r(0, 1))
        k = self.node("Transpose", [self.input(merged + [n, d])], {"perm": INTS([0, 2, 1])})
        y = self.node("MatMul", [q, k])
        if self.p(0.6):
            y = self.node(self.pick(["Mul", "Div"]), [y, self.const(np.float32(0.35), "f32")])
        if self.p(0.4):  # a bias before the Reshape (Swin's positions, BLOOM's ALiBi)
            bsh = [dd if self.p(0.5) else 1 for dd in merged + [s, n]][self.r(0, 2):]
            bias = (self.const(self.rng.uniform(-1, 1, bsh)) if self.p(0.5)
                    else self.chain(self.input(bsh), 1))
            y = self.node("Add", [y, bias])
        full = batch + [s, n]
        y = self.node("Reshape", [y, self.i64(full)])
        sub = full[self.r(0, 3):]
        shape = [dd if self.p(0.5) else 1 for dd in sub]
        if self.p(0.5):
            m = self.const(self.attention_mask(shape, n))
        else:
            m = self.chain(self.input(shape), 1)
        y = self.node("Add", [y, m])
        if self.p(0.5):
            y = self.node("Max", [y, self.const(np.float32(self.pick([-1.0, -3.4028235e38])),
                                                "f32")])
        if self.p(0.7):
            y = self.node("Reshape", [y, self.i64(merged + [s, n])])
            p = self.node("Softmax", [y], {"axis": I(-1)})
        else:  # BLOOM's: the Reshape back after the Softmax
            p = self.node("Softmax", [y], {"axis": I(-1)})
            p = self.node("Reshape", [p, self.i64(merged + [s, n])])
        v = self.input(merged + [n, dv])
        return self.node("MatMul", [p, v])

    def where(self):
        rank = self.r(1, 4)
        out = [self.r(1, 5) for _ in range(rank - 1)] + [self.r(1, 40)]

        def bshape():  # right-aligned, each dim kept or 1, maybe of lower rank
            sub = out[self.r(0, rank - 1):]
            return [d if self.p(0.6) else 1 for d in sub]

        if self.p(0.5):
            cond = self.const(self.rng.random(bshape()) < 0.5, "bool")
        else:
            c = self.chain(self.input(bshape()), 1)
            cond = self.node("Greater", [c, self.const(np.float32(0.1), "f32")])
        vals = []
        for _ in range(2):
            if self.p(0.35):
                vals.append(self.const(np.float32(self.pick([-1e9, 0.0, -3.5]))))
            elif self.p(0.3):
                vals.append(self.const(self.rng.uniform(-2, 2, bshape())))
            else:
                vals.append(self.chain(self.input(bshape()), 1))
        if all(v not in self.g.inputs and self.g.tensors.get(v, {}).get("value") is not None
               for v in vals):  # both constant: a computed value on one side
            vals[1] = self.chain(self.input(out), 1)
        # the output's full shape from some input, or else an Add makes it
        y = self.node("Where", [cond] + vals)
        if self.shape(y) != out:
            y = self.node("Add", [y, self.const(np.zeros(out))])
        return y

    def flat_groups(self, x, g):
        """True when some group of X's channels has too small a variance to
        normalise within tolerance (see flat)."""
        v = self.env[x]
        grouped = v.reshape(v.shape[0], g, -1)
        var = grouped.var(axis=2)
        return float(np.min(var)) < 1e-3 * max(1.0, float(np.max(np.abs(v))) ** 2)

    def dynq(self):
        """Products as onnxruntime.quantization.quantize_dynamic writes
        them: an f32 activation (maybe through a Relu, maybe all zero) ->
        DynamicQuantizeLinear -> one or two MatMulIntegers by constant i8
        weights (zero point absent or 0) with the quantizer's zero point ->
        Cast to f32 -> Mul by x_scale * w_scale (one or per column, either
        order) [-> Add of a bias] [-> Relu | Tanh]; batch dims 0-2; the
        quantizer's outputs sometimes graph outputs too. The quantizer runs
        in f32 as ONNX defines it and the sums are exact, so every backend
        that computes it so matches the reference to f32 rounding."""
        self.dtype = "f32"
        self.float = True
        self.qdt = {}
        k = self.pick([1, 4, 16, 33, 64, 130])
        batch = [self.r(1, 3) for _ in range(self.r(0, 2))]
        x = self.input(batch + [self.r(1, 40), k])
        if self.p(0.1):
            x = self._qnode("Mul", [x, self.const(np.float32(0.0), "f32")])
        elif self.p(0.5):
            x = self._qnode("Relu", [x])
        q, s, z = self.g.add_node("DynamicQuantizeLinear", [x], None, 3)
        for o, v, dt in zip((q, s, z), dt_ref.dynamic_quantize(self.env[x]), ("u8", "f32", "u8")):
            self.env[o] = to_dtype(np.asarray(v, np.float64 if dt == "f32" else np.int64), dt)
            self.qdt[o] = dt
        outs = []
        for _ in range(self.r(1, 2)):
            n = self.pick([1, 5, 16, 33, 70])
            w = self.const(self.q8([k, n], True), "i8")
            per = self.p(0.4)
            ws = self.const(np.float32(self.rng.uniform(0.001, 0.01, [n] if per else [])), "f32")
            sc = self._qnode("Mul", [s, ws] if self.p(0.5) else [ws, s])
            ins = [q, w, z]
            if self.p(0.3):
                ins.append(self.const(np.zeros([n] if self.p(0.5) else [], np.int64), "i8"))
            acc = self._qnode("MatMulInteger", ins)
            f = self._qnode("Cast", [acc], {"to": I(1)})
            y = self._qnode("Mul", [f, sc] if self.p(0.5) else [sc, f])
            if self.p(0.6):
                b = self.const(np.float32(self.rng.uniform(-1, 1, [n])), "f32")
                y = self._qnode("Add", [b, y] if self.p(0.5) else [y, b])
            if self.p(0.3):
                y = self._qnode(self.pick(["Relu", "Tanh"]), [y])
            outs.append(y)
        if len(outs) == 2 and self.shape(outs[0]) == self.shape(outs[1]) and self.p(0.5):
            outs = [self._qnode("Add", outs)]
        if self.p(0.15):
            outs.append(self.pick([q, s, z]))
        self.g.outputs = outs
        return self.g

    def _quant_maxpool(self):
        """A 2-D MaxPool of the 8-bit dtype (quantized networks pool
        their u8 activations): any window, stride, dilation, padding and
        ceil_mode whose windows all see the input."""
        x = self.input([self.r(1, 2), self.r(1, 6), self.r(1, 30), self.r(1, 40)])
        shape = self.shape(x)
        axes = []  # per spatial axis: kernel, stride, dilation, pad begin, pad end
        for sz in shape[2:]:
            k = self.r(1, min(4, sz + 1))
            di = self.pick([1, 1, 2]) if k > 1 else 1
            b, e = self.r(0, min(k - 1, 2)), self.r(0, min(k - 1, 2))
            fits = sz + b + e >= (k - 1) * di + 1
            axes.append((k, self.pick([1, 2, 2, 3]), di, b, e) if fits else
                        (1, self.pick([1, 2, 2, 3]), 1, 0, 0))
        ks, st, dil, pb, pe = (list(v) for v in zip(*axes))
        attrs = {"kernel_shape": INTS(ks), "strides": INTS(st), "dilations": INTS(dil),
                 "pads": INTS(pb + pe)}
        if self.p(0.35):
            attrs["ceil_mode"] = I(1)
        if dt_ref.pool_has_empty_window(attrs, shape):
            attrs = {"kernel_shape": INTS([min(k, sz) for k, sz in zip(ks, shape[2:])]),
                     "strides": INTS(st)}
        out = self.g.add_node("MaxPool", [x], attrs)
        node = self.g.nodes[-1]
        xv = self.env[x]
        self.env[out] = dt_ref.pool(node, xv.astype(np.float64), "max").astype(xv.dtype)
        self.g.outputs = [out]
        return self.g

    def _quant_node(self, op, ins, attrs):
        out = self.g.add_node(op, ins, attrs)
        node = self.g.nodes[-1]
        dt = {n: t["dtype"] for n, t in self.g.tensors.items()}
        self.env[out] = dt_ref.eval_node(node, self.env, lambda n: dt.get(n, self.dtype))[0]
        self.g.outputs = [out]
        return self.g

    def qdq(self):
        """Layers in ONNX Runtime's QDQ format: an 8-bit input dequantized,
        then one to three layers, each output through a QuantizeLinear ->
        DequantizeLinear pair of one scale and zero point as an exporter
        puts around every activation: Conv (any group, window and stride,
        bias or not, maybe a Relu), Gemm or MatMul by a constant, the Add of
        two such branches, MaxPool, GlobalAveragePool. Weights are
        multiples of 1/8, biases of 1/64 and every scale but the last a
        power of two, so each f32 sum is exact in any order and ties fall
        on .5 exactly; the last scale is any f32. Outputs are compared
        exactly (the input dtype is 8-bit)."""
        signed = self.p(0.3)
        self.dtype = "i8" if signed else "u8"
        self.qdt = {}
        four_d = self.p(0.7)
        if four_d:  # under 64 channels: no Winograd (not exact)
            shape = [self.r(1, 2), self.pick([1, 3, 8, 16, 17, 32]), self.r(1, 12),
                     self.r(1, 16)]
        else:
            shape = [self.r(1, 8), self.pick([4, 16, 33, 48])]
        q = self.input(shape)
        self.qdt[q] = self.dtype
        x = self._dq(q, 2.0 ** -self.r(2, 5), self.rng.integers(-20, 21) if signed
                     else self.rng.integers(100, 157), self.dtype)
        self.grid = {}
        layers = self.r(1, 3)
        for k in range(layers):
            if x in self.grid and self.p(0.35):
                # a view or MaxPool of a pair's values, quantized again with
                # that pair's scale and zero point (what ONNX Runtime's
                # quantizer writes after a Reshape or Transpose)
                sc, z = self.grid[x]
                if self.p(0.5):  # equal values in tensors of their own
                    sc = self.const(np.float32(self.env[sc]), "f32")
                    z = self.const(np.asarray(self.env[z]), self.g.tensors[z]["dtype"])
                x = self._qdq_move(x, four_d)
                q = self._qnode("QuantizeLinear", [x, sc, z])
                x = self._qnode("DequantizeLinear", [q, sc, z])
                self.grid[x] = (sc, z)
                continue
            x = self._qdq_layer(x, four_d)
            x = self._qdq_pair(x, last=k == layers - 1)
        self.g.outputs = [x]
        return self.g

    def _qdq_move(self, x, four_d):
        """An op that only moves or picks X's values (or clips them at 0)."""
        shape = self.shape(x)
        op = self.pick(["Transpose", "MaxPool", "Relu", "Reshape"] if four_d
                       else ["Transpose", "Relu", "Reshape"])
        if op == "Transpose":
            perm = [0, 1, 3, 2] if four_d else [1, 0]
            return self._qnode("Transpose", [x], {"perm": INTS(perm)})
        if op == "MaxPool":
            k = [self.r(1, min(3, shape[2])), self.r(1, min(3, shape[3]))]
            return self._qnode("MaxPool", [x], {"kernel_shape": INTS(k)})
        if op == "Reshape":  # the same rank, two axes' sizes swapped
            to = [shape[0], shape[1], shape[3], shape[2]] if four_d else [shape[1], shape[0]]
            return self._qnode("Reshape", [x, self.const(np.asarray(to, np.int64), "i64")])
        return self._qnode("Relu", [x])

    def _qnode(self, op, ins, attrs=None):
        out = self.g.add_node(op, ins, attrs)
        node = self.g.nodes[-1]
        dts = dict((n, t["dtype"]) for n, t in self.g.tensors.items())
        dts.update(self.qdt)
        v = dt_ref.eval_node(node, self.env, lambda n: dts.get(n, "f32"))[0]
        dt = dt_ref._out_dtype(node, dts)
        self.qdt[out] = dt
        kind = np.float64 if dt in FLOAT_DTYPES else np.int64
        self.env[out] = to_dtype(np.asarray(v, dtype=kind), dt)
        return out

    def _dq(self, q, scale, zp, qdt):
        return self._qnode("DequantizeLinear", [q, self.const(np.float32(scale), "f32"),
                                                self.const(np.asarray(zp), qdt)])

    def _qdq_pair(self, x, last):
        lo, hi, mag = self.stats(x)
        mag = max(mag, 1e-3)
        if last:  # any f32
            scale = float(np.float32(mag / 100.0 * self.rng.uniform(0.5, 1.5)))
        else:
            scale = 2.0 ** round(np.log2(mag / 100.0) + self.rng.uniform(-1, 1))
        qdt = self.pick(["u8", "u8", "i8"])
        if qdt == "i8":
            zp = int(self.rng.integers(-10, 11))
        elif lo >= 0 or self.p(0.2):
            zp = 0  # the clip of a Relu the quantizer folded
        else:
            zp = int(self.rng.integers(110, 146))
        sc = self.const(np.float32(scale), "f32")
        z = self.const(np.asarray(zp), qdt)
        q = self._qnode("QuantizeLinear", [x, sc, z])
        y = self._qnode("DequantizeLinear", [q, sc, z])
        if hasattr(self, "grid"):
            self.grid[y] = (sc, z)
        return y

    def _qdq_weights(self, shape):
        return self.const(self.rng.integers(-4, 5, shape) / 8.0, "f32")

    def _qdq_layer(self, x, four_d):
        shape = self.shape(x)
        ops = ["Conv", "Conv", "Conv", "Add", "MaxPool", "GlobalAveragePool"] if four_d \
            else ["Gemm", "MatMul", "Add"]
        op = self.pick(ops)
        if op == "GlobalAveragePool" and (shape[2] * shape[3]) & (shape[2] * shape[3] - 1):
            op = "Conv"  # a mean over a count not a power of two is not exact
        if op == "Add":
            a = self._qdq_pair(self._qdq_layer_product(x, four_d, same=True), last=False)
            return self._qnode("Add", [x, a] if self.p(0.5) else [a, x])
        if op == "MaxPool":
            k = [self.r(1, min(3, shape[2])), self.r(1, min(3, shape[3]))]
            return self._qnode("MaxPool", [x], {"kernel_shape": INTS(k),
                                                "strides": INTS([self.pick([1, 2])] * 2)})
        if op == "GlobalAveragePool":
            return self._qnode(op, [x])
        y = self._qdq_layer_product(x, four_d, same=False, op=op)
        if self.p(0.3):
            y = self._qnode("Relu", [y])
        return y

    def _qdq_layer_product(self, x, four_d, same, op=None):
        """A Conv (4-D) or Gemm/MatMul (2-D) of X; SAME keeps X's shape."""
        shape = self.shape(x)
        if four_d:
            c = shape[1]
            m = c if same else self.pick([1, 4, 8, 16, 24, 32])
            g = self.pick([1, 1, 1, c]) if m == c else 1
            if same:
                k, st, pads = self.pick([1, 3]), 1, None
                pads = [k // 2] * 4
            else:
                k = self.pick([1, 1, 3, 3, 5])
                k = min(k, shape[2], shape[3])
                st = self.pick([1, 1, 2])
                pads = [self.r(0, k // 2) for _ in range(4)]
            w = self._qdq_weights([m, c // g, k, k])
            ins = [x, w]
            if self.p(0.7):
                ins.append(self.const(self.rng.integers(-64, 65, [m]) / 64.0, "f32"))
            return self._qnode("Conv", ins, {"kernel_shape": INTS([k, k]),
                                             "strides": INTS([st, st]), "pads": INTS(pads),
                                             "group": I(g)})
        n = shape[1] if same else self.pick([1, 8, 16, 31, 64])
        op = op or self.pick(["Gemm", "MatMul"])
        if op == "MatMul":
            return self._qnode("MatMul", [x, self._qdq_weights([shape[1], n])])
        tb = self.p(0.5)
        w = self._qdq_weights([n, shape[1]] if tb else [shape[1], n])
        ins = [x, w]
        if self.p(0.7):
            ins.append(self.const(self.rng.integers(-64, 65, [n]) / 64.0, "f32"))
        return self._qnode("Gemm", ins, {"transB": I(1)} if tb else None)

    def recurrent(self):
        """One RNN, GRU or LSTM in a combination oneDNN's cells compute
        (default activations, or Tanh/Relu/Sigmoid for RNN; no clip; full
        sequences): every direction, both layouts, initial states or not,
        B, peepholes, linear_before_reset, explicit default activations and
        a constant sequence_lens of full lengths; outputs a random non-empty
        subset of Y, Y_h (and Y_c), a dropped one either absent ("") or
        computed and unread; sometimes an elementwise chain after one."""
        op = self.pick(["RNN", "GRU", "LSTM"])
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        direction = self.pick(["forward", "reverse", "bidirectional"])
        dirs = 2 if direction == "bidirectional" else 1
        layout = self.r(0, 1)
        seq = self.pick([1, 1, 2, 3, 5])
        batch = self.r(1, 4)
        inp = self.r(1, 8) if self.p(0.8) else self.pick([31, 64])
        hidden = self.pick([1, 2, 3, 4, 8, 16, 33, 64])
        x = self.input([batch, seq, inp] if layout else [seq, batch, inp])
        sw, sr = 1.0 / np.sqrt(inp), 1.0 / np.sqrt(hidden)
        w = self.weights([dirs, gates * hidden, inp], sw)
        r = self.weights([dirs, gates * hidden, hidden], sr)
        attrs = {"direction": S(direction)}
        if layout or self.p(0.3):
            attrs["layout"] = I(layout)
        if self.p(0.3):
            attrs["hidden_size"] = I(hidden)
        if op == "RNN":
            act = self.pick(["Tanh", "Relu", "Sigmoid", None])
            if act is not None:
                attrs["activations"] = ("strings", [act] * (dirs if self.p(0.5) else 1))
        elif self.p(0.25):
            acts = ["Sigmoid", "Tanh", "Tanh"][:gates - 1 if op == "GRU" else 3]
            attrs["activations"] = ("strings", acts * (dirs if self.p(0.5) else 1))
        if op == "GRU" and self.p(0.5):
            attrs["linear_before_reset"] = I(1)
        elif op == "GRU" and self.p(0.2):
            attrs["linear_before_reset"] = I(0)
        state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
        ins = [x, w, r]
        ins.append(self.weights([dirs, 2 * gates * hidden], 0.5) if self.p(0.7) else "")
        ins.append(self.const(np.full([batch], seq), "i32") if self.p(0.15) else "")
        ins.append(self.input(state) if self.p(0.5) else "")
        if op == "LSTM":
            ins.append(self.input(state) if self.p(0.5) else "")
            ins.append(self.weights([dirs, 3 * hidden], 0.5) if self.p(0.5) else "")
        while ins and ins[-1] == "":
            ins.pop()
        n_out = 3 if op == "LSTM" else 2
        outs = self.node(op, ins, attrs, n_out)
        keep = [o for o in outs if self.p(0.6)] or [self.pick(outs)]
        node = self.g.nodes[-1]
        if self.p(0.5):
            node["outputs"] = [o if o in keep else "" for o in outs]
            while node["outputs"][-1] == "":
                node["outputs"].pop()
        if self.p(0.3):
            k = self.r(0, len(keep) - 1)
            keep[k] = self.chain(keep[k], self.r(1, 2))
        self.g.outputs = keep
        return self.g

    def mixed(self):
        if not self.float:
            x = self.pick([self.matmul, self.eltwise])()
            return self.movement(self.chain(x, 2))
        x = self.conv()
        x = self.chain(x, self.r(1, 3))
        if self.p(0.5):
            x = self.pool(x)
        if self.p(0.5):
            x = self.conv(x) if len(self.shape(x)) > 2 and min(self.shape(x)[2:]) >= 1 else x
            x = self.chain(x, self.r(1, 2))
        if self.p(0.5):
            x = self.norm(x)
        if self.p(0.5):
            x = self.movement(x)
        return x


def generate(seed, family, dtype="f32"):
    """The graph of SEED for FAMILY ('conv', ...; 'any' picks one by the
    seed) in DTYPE, and its input values."""
    if family == "any":
        family = FAMILIES[seed % len(FAMILIES)]
    gen = Gen(seed, dtype)
    if not gen.float and family in ("conv", "pool", "norm", "deconv"):
        family = "matmul" if family == "conv" else "eltwise"
    g = gen.build(family)
    g.prune()
    return g, input_values(g, seed)
