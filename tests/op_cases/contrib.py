"""onnxruntime's contrib ops (com.microsoft, and the two it registers in the ONNX domain), as its transformer
optimizer writes them into Stable Diffusion, CLIP and T5 files.

Where onnxruntime's CPU provider has a kernel (Gelu, BiasGelu, FastGelu, QuickGelu, SkipLayerNormalization,
SkipSimplifiedLayerNormalization, LayerNormalization-1, SimplifiedLayerNormalization in the ONNX domain) it is the
reference. Where it has none (GroupNorm, SkipGroupNorm, NhwcConv, BiasSplitGelu, BiasAdd, the com.microsoft
SimplifiedLayerNormalization, the mean and inv_std_var outputs of the Skip* norms), the reference is the same
computation written in standard ONNX ops, in float32, run by onnxruntime."""

import functools
import math

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from op_case import R, W, case

MS = "com.microsoft"
F16 = "float16"


class _Body:
    """Standard ONNX nodes built one op at a time; op() returns the output name."""

    def __init__(self):
        self.nodes, self.n = [], 0

    def op(self, op_type, *inputs, outs=1, **attrs):
        names = [f"_r{self.n}_{k}" for k in range(outs)]
        self.n += 1
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outs == 1 else names

    def const(self, value, dtype="float32"):
        return self.op("Constant", value=numpy_helper.from_array(np.array(value, dtype=dtype)))

    def ints(self, *v):
        return self.const(list(v), "int64")

    def to(self, name, out):  # name under the output's name
        self.nodes.append(helper.make_node("Identity", [name], [out]))


class standard:
    """A ref_model: the contrib node replaced by body(b, ins, attrs) -> output names (None: not produced), computed
    in float32 (half inputs cast up, outputs cast to their declared types). A class, so that cases pickle."""

    def __init__(self, body):
        self.body = body

    def __call__(self, model):
        m = type(model)()
        m.CopyFrom(model)
        node = m.graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        types = {vi.name: vi.type.tensor_type.elem_type for vi in m.graph.input}
        types.update({t.name: t.data_type for t in m.graph.initializer})
        b = _Body()
        ins = [(b.op("Cast", n, to=TensorProto.FLOAT) if types[n] != TensorProto.FLOAT else n) if n else ""
               for n in node.input]
        results = self.body(b, ins, attrs)
        out_types = {o.name: o.type.tensor_type.elem_type for o in m.graph.output}
        for name, r in zip(node.output, results):
            if name:
                b.nodes.append(helper.make_node("Cast", [r], [name], to=out_types[name]))
        del m.graph.node[:]
        m.graph.node.extend(b.nodes)
        del m.opset_import[:]
        m.opset_import.append(helper.make_opsetid("", 18))
        return m


def in_onnx_domain(model):
    """The com.microsoft SimplifiedLayerNormalization as onnxruntime's ONNX-domain one (the CPU provider's)."""
    m = type(model)()
    m.CopyFrom(model)
    m.graph.node[0].domain = ""
    return m


# ---- normalization bodies ----

def _group_norm(b, x, gamma, beta, attrs):
    nhwc = attrs.get("channels_last", 1) == 1
    if nhwc:
        x = b.op("Transpose", x, perm=[0, 3, 1, 2])
    g = attrs["groups"]
    r = b.op("Reshape", x, b.ints(0, g, -1))
    d = b.op("Sub", r, b.op("ReduceMean", r, b.ints(2)))
    var = b.op("ReduceMean", b.op("Mul", d, d), b.ints(2))
    n = b.op("Div", d, b.op("Sqrt", b.op("Add", var, b.const(attrs.get("epsilon", 1e-5)))))
    n = b.op("Reshape", n, b.op("Shape", x))
    y = b.op("Add", b.op("Mul", n, b.op("Unsqueeze", gamma, b.ints(1, 2))), b.op("Unsqueeze", beta, b.ints(1, 2)))
    if attrs.get("activation", 0):
        y = b.op("Mul", y, b.op("Sigmoid", y))
    return b.op("Transpose", y, perm=[0, 2, 3, 1]) if nhwc else y


def group_norm_ref(b, ins, attrs):
    return [_group_norm(b, ins[0], ins[1], ins[2], attrs)]


def skip_group_norm_body(b, ins, attrs, skip_2d):
    """SkipGroupNorm (X, gamma, beta, skip, bias?) -> Y, S; skip_2d: skip is [N, C]."""
    x, gamma, beta, skip = ins[:4]
    bias = ins[4] if len(ins) > 4 else ""
    nhwc = attrs.get("channels_last", 1) == 1
    if skip_2d:  # one value per image and channel
        skip = b.op("Reshape", skip, b.ints(0, 1, 1, -1) if nhwc else b.ints(0, -1, 1, 1))
    s = b.op("Add", x, skip)
    if bias:
        s = b.op("Add", s, bias if nhwc else b.op("Unsqueeze", bias, b.ints(1, 2)))
    return [_group_norm(b, s, gamma, beta, attrs), s]


def skip_group_norm_ref(skip_2d):
    return standard(functools.partial(skip_group_norm_body, skip_2d=skip_2d))


def skip_norm_body(b, ins, attrs, rms):
    """SkipLayerNormalization (input, skip, gamma, beta?, bias?) / SkipSimplifiedLayerNormalization (input, skip,
    gamma, bias?) with every output."""
    ins = ins + [""] * (5 - len(ins))
    x, skip, gamma = ins[:3]
    beta, bias = ("", ins[3]) if rms else (ins[3], ins[4])
    s = b.op("Add", x, skip)
    if bias:
        s = b.op("Add", s, bias)
    eps = attrs.get("epsilon", 1e-12)
    if rms:
        ms = b.op("ReduceMean", b.op("Mul", s, s), b.ints(-1))
        inv = b.op("Reciprocal", b.op("Sqrt", b.op("Add", ms, b.const(eps))))
        return [b.op("Mul", b.op("Mul", s, inv), gamma), None, inv, s]
    y, mean, inv = b.op("LayerNormalization", s, gamma, *([beta] if beta else []), outs=3, axis=-1, epsilon=eps)
    return [y, mean, inv, s]


def skip_norm_ref(rms):
    return standard(functools.partial(skip_norm_body, rms=rms))


# ---- GroupNorm, SkipGroupNorm ----
g8 = [W(8), W(8)]
case("GroupNorm", R(2, 5, 6, 8), *g8, domain=MS, groups=4, activation=0, ref_model=standard(group_norm_ref))
case("GroupNorm", R(2, 5, 6, 8), *g8, domain=MS, groups=2, activation=1, epsilon=1e-3,
     ref_model=standard(group_norm_ref))
case("GroupNorm", R(2, 8, 5, 6), *g8, domain=MS, groups=2, activation=1, channels_last=0,
     ref_model=standard(group_norm_ref))
case("GroupNorm", R(1, 8, 3, 7), *g8, domain=MS, groups=8, activation=0, channels_last=0,
     ref_model=standard(group_norm_ref))
case("GroupNorm", R(1, 4, 4, 8), R(8), R(8), domain=MS, groups=4, activation=1,  # affine as graph inputs
     ref_model=standard(group_norm_ref))
case("GroupNorm", R(1, 4, 6, 16, dtype=F16), W(16, dtype=F16), W(16, dtype=F16), domain=MS, groups=4,
     activation=1, ref_model=standard(group_norm_ref))
case("GroupNorm", R(1, 16, 4, 6, dtype=F16), W(16), W(16), domain=MS, groups=8, activation=0, channels_last=0,
     ref_model=standard(group_norm_ref))  # float32 gamma and beta with a half X (type M apart from T)
case("SkipGroupNorm", R(2, 4, 5, 8), *g8, R(2, 4, 5, 8), W(8), domain=MS, groups=2, activation=1, outputs=2,
     ref_model=skip_group_norm_ref(False))
case("SkipGroupNorm", R(2, 4, 5, 8), *g8, R(2, 1, 1, 8), domain=MS, groups=4, activation=0,
     ref_model=skip_group_norm_ref(False))
case("SkipGroupNorm", R(2, 4, 5, 8), *g8, R(2, 8), W(8), domain=MS, groups=4, activation=1, outputs=2,
     ref_model=skip_group_norm_ref(True))
case("SkipGroupNorm", R(2, 8, 4, 5), *g8, R(2, 8, 4, 5), W(8), domain=MS, groups=2, activation=1, channels_last=0,
     outputs=2, ref_model=skip_group_norm_ref(False))
case("SkipGroupNorm", R(2, 8, 4, 5), *g8, R(2, 8), domain=MS, groups=4, activation=0, channels_last=0,
     outputs=2, ref_model=skip_group_norm_ref(True))
case("SkipGroupNorm", R(1, 4, 4, 16, dtype=F16), W(16, dtype=F16), W(16, dtype=F16), R(1, 4, 4, 16, dtype=F16),
     W(16, dtype=F16), domain=MS, groups=4, activation=1, outputs=2,
     ref_model=skip_group_norm_ref(False))

# ---- NhwcConv: Conv's attributes, x [N, H, W, C], w [M, kH, kW, C/group] ----


def nhwc_conv_ref(b, ins, attrs):
    x = b.op("Transpose", ins[0], perm=[0, 3, 1, 2])
    w = b.op("Transpose", ins[1], perm=[0, 3, 1, 2])
    y = b.op("Conv", x, w, *ins[2:], **attrs)
    return [b.op("Transpose", y, perm=[0, 2, 3, 1])]


conv_ref = standard(nhwc_conv_ref)
case("NhwcConv", R(1, 7, 7, 3), W(4, 3, 3, 3), W(4), domain=MS, pads=[1, 1, 1, 1], ref_model=conv_ref)
case("NhwcConv", R(2, 9, 8, 3), W(5, 3, 3, 3), domain=MS, strides=[2, 2], ref_model=conv_ref)
case("NhwcConv", R(1, 8, 8, 16), W(16, 3, 3, 16), W(16), domain=MS, pads=[1, 1, 1, 1], ref_model=conv_ref)  # Winograd
case("NhwcConv", R(1, 6, 6, 4), W(6, 3, 3, 2), W(6), domain=MS, group=2, pads=[1, 1, 1, 1], ref_model=conv_ref)
case("NhwcConv", R(1, 6, 6, 4), W(4, 3, 3, 1), domain=MS, group=4, pads=[1, 1, 1, 1], ref_model=conv_ref)
case("NhwcConv", R(1, 5, 5, 8), W(16, 1, 1, 8), W(16), domain=MS, ref_model=conv_ref)  # pointwise
case("NhwcConv", R(1, 7, 6, 3), W(4, 3, 3, 3), domain=MS, dilations=[2, 2], auto_pad="SAME_UPPER",
     ref_model=conv_ref)
case("NhwcConv", R(1, 6, 6, 3), R(4, 3, 3, 3), R(4), domain=MS, pads=[1, 0, 1, 0], ref_model=conv_ref)  # runtime w
case("NhwcConv", R(1, 6, 6, 4, dtype=F16), W(8, 3, 3, 4, dtype=F16), W(8, dtype=F16), domain=MS,
     pads=[1, 1, 1, 1], ref_model=conv_ref)

# ---- BiasSplitGelu, BiasAdd ----


def bias_split_gelu_ref(b, ins, attrs):
    h = b.op("Add", ins[0], ins[1])
    left, right = b.op("Split", h, axis=-1, num_outputs=2, outs=2)
    erf = b.op("Erf", b.op("Mul", right, b.const(1 / math.sqrt(2))))
    gelu = b.op("Mul", b.op("Mul", right, b.const(0.5)), b.op("Add", erf, b.const(1.0)))
    return [b.op("Mul", left, gelu)]


case("BiasSplitGelu", R(2, 5, 16, lo=-4, hi=4), W(16), domain=MS, ref_model=standard(bias_split_gelu_ref))
case("BiasSplitGelu", R(1, 4, 32, dtype=F16, lo=-4, hi=4), W(32, dtype=F16), domain=MS,
     ref_model=standard(bias_split_gelu_ref))


def bias_add_ref(b, ins, attrs):
    return [b.op("Add", b.op("Add", ins[0], ins[1]), ins[2])]


add_ref = standard(bias_add_ref)
case("BiasAdd", R(2, 5, 8), W(8), R(2, 5, 8), domain=MS, ref_model=add_ref)
case("BiasAdd", R(1, 6, 16, dtype=F16), W(16, dtype=F16), R(1, 6, 16, dtype=F16), domain=MS, ref_model=add_ref)

# ---- Gelu, BiasGelu, FastGelu, QuickGelu (onnxruntime's CPU kernels) ----
case("Gelu", R(4, 17, lo=-5, hi=5), domain=MS)
case("Gelu", R(3, 8, dtype=F16, lo=-5, hi=5), domain=MS)
case("BiasGelu", R(2, 3, 8, lo=-4, hi=4), W(8), domain=MS)
case("BiasGelu", R(2, 3, 8, dtype=F16, lo=-4, hi=4), W(8, dtype=F16), domain=MS)
case("FastGelu", R(2, 3, 8, lo=-5, hi=5), domain=MS)
case("FastGelu", R(2, 3, 8, lo=-5, hi=5), W(8), domain=MS)
case("FastGelu", R(4, 16, dtype=F16, lo=-5, hi=5), W(16, dtype=F16), domain=MS)
case("QuickGelu", R(3, 4, 5, lo=-6, hi=6), domain=MS)
case("QuickGelu", R(3, 4, 5, lo=-6, hi=6), domain=MS, alpha=1.0)
case("QuickGelu", R(3, 8, dtype=F16, lo=-6, hi=6), domain=MS)

# ---- SkipLayerNormalization, SkipSimplifiedLayerNormalization ----
x, h = R(2, 3, 16), W(16)
case("SkipLayerNormalization", x, R(2, 3, 16), h, W(16), W(16), domain=MS)
case("SkipLayerNormalization", x, R(2, 3, 16), h, domain=MS, epsilon=1e-5)  # no beta, no bias
case("SkipLayerNormalization", x, R(3, 16), h, W(16), domain=MS)  # skip broadcast over the batch
case("SkipLayerNormalization", x, R(1, 3, 16), h, None, W(16), domain=MS, outputs=4,
     out_types=["float32", None, None, "float32"])  # bias without beta; the sum output
case("SkipLayerNormalization", R(6, 16), R(6, 16), h, W(16), W(16), domain=MS, outputs=4,
     out_types=["float32"] * 4, ref_model=skip_norm_ref(False))  # 2-D, mean and inv_std_var
case("SkipLayerNormalization", R(2, 3, 16, dtype=F16), R(2, 3, 16, dtype=F16), W(16, dtype=F16),
     W(16, dtype=F16), W(16, dtype=F16), domain=MS, outputs=4, out_types=[F16, None, None, F16])
case("SkipSimplifiedLayerNormalization", x, R(2, 3, 16), h, domain=MS)
case("SkipSimplifiedLayerNormalization", x, R(2, 3, 16), h, W(16), domain=MS, epsilon=1e-6, outputs=4,
     out_types=["float32", None, None, "float32"])
case("SkipSimplifiedLayerNormalization", x, R(2, 3, 16), h, W(16), domain=MS, outputs=4,
     out_types=["float32", None, "float32", "float32"], ref_model=skip_norm_ref(True))
case("SkipSimplifiedLayerNormalization", R(2, 3, 16, dtype=F16), R(2, 3, 16, dtype=F16), W(16, dtype=F16),
     domain=MS, outputs=4, out_types=[F16, None, None, F16])

# ---- SimplifiedLayerNormalization, in the ONNX domain and com.microsoft (LayerNormalization-1: normalization.py) ----
case("SimplifiedLayerNormalization", R(2, 3, 8), W(8), opset=13, outputs=2, out_types=["float32"] * 2)
case("SimplifiedLayerNormalization", R(2, 3, 8), W(3, 8), opset=13, axis=1, epsilon=1e-3)
case("SimplifiedLayerNormalization", R(2, 3, 8, dtype=F16), W(8, dtype=F16), opset=13)
case("SimplifiedLayerNormalization", R(2, 3, 8), W(8), domain=MS, outputs=2, out_types=["float32"] * 2,
     ref_model=in_onnx_domain)
case("SimplifiedLayerNormalization", R(4, 8, dtype=F16), W(8, dtype=F16), domain=MS, ref_model=in_onnx_domain)
