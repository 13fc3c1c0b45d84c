"""Pass cases for graphs as other tools write them: weights as Constant nodes, per-channel affine chains after
convolutions (paddle2onnx's BatchNorm and learnable-affine blocks), nodes out of topological order (the fp16
converter's Casts). Each case is (label, (model, feeds), ONNX nodes that must run, {ggml op: count}, env)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

X = {"x": np.random.RandomState(1).randn(2, 3, 10, 12).astype(np.float32)}


def _const(name, arr, as_node):
    """An initializer, or a Constant node carrying the same tensor."""
    t = numpy_helper.from_array(np.asarray(arr, np.float32), name)
    return (helper.make_node("Constant", [], [name], value=t), None) if as_node else (None, t)


def _model(nodes, inits, out="y", opset=15, x_shape=(2, 3, 10, 12)):
    g = helper.make_graph([n for n in nodes if n is not None], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], [t for t in inits if t is not None])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def conv_affine(as_node, chain, transposed=False, group=1):
    """Conv (or ConvTranspose) -> the `chain` of (op, constant shape, constant first) steps -> y."""
    rng = np.random.RandomState(0)
    C, M = 3 * group, 4 * group
    w_shape = (C, M // group, 3, 3) if transposed else (M, C // group, 3, 3)
    pieces = [_const("w", rng.randn(*w_shape) * 0.3, as_node), _const("b", rng.randn(M), as_node)]
    op = "ConvTranspose" if transposed else "Conv"
    kw = dict(strides=[2, 2], pads=[1, 1, 0, 0]) if transposed else dict(pads=[1, 1, 1, 1])
    nodes = [helper.make_node(op, ["x", "w", "b"], ["t0"], group=group, **kw)]
    for i, (step, shape, first) in enumerate(chain):
        src, dst = f"t{i}", f"t{i + 1}"
        if step == "BN":
            names = [f"bn{i}_{k}" for k in ("s", "h", "m", "v")]
            vals = [rng.rand(M) + 0.5, rng.randn(M), rng.randn(M), rng.rand(M) + 0.5]
            pieces += [_const(n, v, as_node) for n, v in zip(names, vals)]
            nodes.append(helper.make_node("BatchNormalization", [src] + names, [dst], epsilon=1e-3))
            continue
        c = f"c{i}"
        pieces.append(_const(c, rng.rand(*shape) + 0.5, as_node))
        nodes.append(helper.make_node(step, [c, src] if first else [src, c], [dst]))
    nodes.append(helper.make_node("Identity", [f"t{len(chain)}"], ["y"]))
    x_shape = (2, C, 10, 12)
    feeds = {"x": np.random.RandomState(1).randn(*x_shape).astype(np.float32)}
    return _model(nodes + [p[0] for p in pieces], [p[1] for p in pieces], x_shape=x_shape), feeds


def reversed_order():
    """x -> Cast(f64) -> Relu -> Cast(f32) -> Conv, with every node listed after its consumers."""
    rng = np.random.RandomState(2)
    w = numpy_helper.from_array(rng.randn(4, 3, 3, 3).astype(np.float32), "w")
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TensorProto.DOUBLE),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Cast", ["r"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Conv", ["f", "w"], ["y"], pads=[1, 1, 1, 1])]
    return _model(nodes[::-1], [w]), X


def affine_fold_cases():
    per_ch, scalar = (1, 4, 1, 1), (1,)
    chain = [("Mul", scalar, True), ("Add", (4, 1, 1), False), ("BN", None, False), ("Div", per_ch, False),
             ("Sub", scalar, False)]
    cases = []
    for as_node in (False, True):
        how = "Constant-node" if as_node else "initializer"
        cases.append((f"fold_conv_affine: Conv -> Mul -> Add -> BN -> Div -> Sub, {how} weights: one Conv",
                      conv_affine(as_node, chain), 2, {"CUSTOM:mul_bcast": None, "CUSTOM:add_bcast": None}, {}))
    cases += [
        ("fold_conv_affine: grouped ConvTranspose (stride 2) -> BN -> Mul, Constant-node weights: one ConvTranspose",
         conv_affine(True, [("BN", None, False), ("Mul", (1, 8, 1, 1), False)], transposed=True, group=2), 2,
         {"CUSTOM:mul_bcast": None}, {}),
        ("fold_conv_affine: a Mul varying along H is not per channel: no fold",
         conv_affine(True, [("Mul", (1, 1, 10, 1), False)]), 3, {}, {}),
        ("fold_conv_affine: Sub with the conv output second (c - y): no fold",
         conv_affine(False, [("Sub", scalar, True)]), 3, {}, {}),
        ("graph order: nodes listed after their consumers are sorted (as the fp16 converter writes Casts)",
         reversed_order(), 4, {}, {}),
    ]
    return cases


def hard_swish(form, as_node=False, hi=6.0, opset=13):
    """x * clip(x + 3, 0, hi) / 6 in one of the spellings exporters write; constants as initializers or nodes."""
    pieces = [_const("three", [3.0], as_node), _const("six", [6.0], as_node), _const("sixth", [1 / 6], as_node)]
    if opset >= 11:
        pieces += [_const("zero", 0.0, as_node), _const("hi", hi, as_node)]
        clip = helper.make_node("Clip", ["s", "zero", "hi"], ["c"])
    else:
        clip = helper.make_node("Clip", ["s"], ["c"], min=0.0, max=hi)
    shifted = [helper.make_node("Add", ["three", "x"], ["s"]), clip]
    if form == "hardsigmoid":
        nodes = [helper.make_node("HardSigmoid", ["x"], ["g"], alpha=1 / 6), helper.make_node("Mul", ["g", "x"], ["y"])]
    elif form == "hardsigmoid_default":  # alpha 0.2: not ggml's hardswish, still one fused node
        nodes = [helper.make_node("HardSigmoid", ["x"], ["g"]), helper.make_node("Mul", ["x", "g"], ["y"])]
    elif form == "div":
        nodes = shifted + [helper.make_node("Div", ["c", "six"], ["g"]), helper.make_node("Mul", ["x", "g"], ["y"])]
    elif form == "mul":
        nodes = shifted + [helper.make_node("Mul", ["sixth", "c"], ["g"]), helper.make_node("Mul", ["g", "x"], ["y"])]
    else:  # torch: (x * relu6(x + 3)) / 6
        nodes = shifted + [helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
    X4 = {"x": (np.random.RandomState(3).randn(2, 3, 10, 12) * 4).astype(np.float32)}
    return _model(nodes + [p[0] for p in pieces], [p[1] for p in pieces], opset=opset), X4


def hard_swish_cases():
    one = {"CUSTOM:hard_swish": 1, "CLAMP": None, "CUSTOM:div_bcast": None, "CUSTOM:add_bcast": None}
    return [
        ("fuse_hard_swish: x * HardSigmoid(x, alpha 1/6) becomes one hard-swish pass", hard_swish("hardsigmoid"), 1, one, {}),
        ("fuse_hard_swish: x * HardSigmoid(x) (alpha 0.2): one fused pass",
         hard_swish("hardsigmoid_default"), 1, {"CUSTOM:hard_swish": 1, "CLAMP": None}, {}),
        ("fuse_hard_swish: --portable takes ggml's hardswish", hard_swish("div"), 1, {"HARDSWISH": 1},
         {"ARGS": "--portable"}),
        ("fuse_hard_swish: x * (Clip(3 + x, 0, 6) / 6), Constant-node constants", hard_swish("div", True), 1, one, {}),
        ("fuse_hard_swish: x * (1/6 * Clip(3 + x, 0, 6)), initializers", hard_swish("mul"), 1, one, {}),
        ("fuse_hard_swish: (x * Clip(3 + x, 0, 6)) / 6 (torch), Clip attributes (opset 10)",
         hard_swish("torch", True, opset=10), 1, one, {}),
        ("fuse_hard_swish: Clip(x + 3, 0, 5) / 6 does not reach 1: no fusion", hard_swish("div", hi=5.0), 4,
         {"CUSTOM:hard_swish": None, "HARDSWISH": None}, {}),
    ]


def scalar_chain(steps, as_node=False, x_shape=(2, 3, 10, 12)):
    """x -> Relu -> the scalar `steps` ((op, value, constant first, constant shape)) -> y."""
    nodes, pieces = [helper.make_node("Relu", ["x"], ["t0"])], []
    for i, (op, v, first, shape) in enumerate(steps):
        c = f"c{i}"
        pieces.append(_const(c, np.full(shape, v), as_node))
        nodes.append(helper.make_node(op, [c, f"t{i}"] if first else [f"t{i}", c], [f"t{i + 1}"]))
    nodes.append(helper.make_node("Identity", [f"t{len(steps)}"], ["y"]))
    feeds = {"x": np.random.RandomState(4).randn(*x_shape).astype(np.float32)}
    return _model(nodes + [p[0] for p in pieces], [p[1] for p in pieces], x_shape=x_shape), feeds


def scalar_affine_cases():
    lab = [("Mul", 1.3, True, (1,)), ("Add", -0.2, False, (1,))]
    return [
        ("fuse_scalar_affine: Mul(s, x) -> Add(x, b) (paddle's learnable affine), Constant nodes: one pass",
         scalar_chain(lab, True), 3, {"SCALE": 1, "CUSTOM:mul_bcast": None, "CUSTOM:add_bcast": None}, {}),
        ("fuse_scalar_affine: Div -> Sub(c, x) -> Mul -> Add of rank-0 and [1] constants: one pass",
         scalar_chain([("Div", 4.0, False, ()), ("Sub", 1.0, True, (1,)), ("Mul", 2.0, False, ()),
                       ("Add", 0.5, True, ())]), 3, {"SCALE": 1}, {}),
        ("fuse_scalar_affine: [1, 1, 1, 1, 1] constants widen a rank-1 x to rank 5",
         scalar_chain([("Mul", 3.0, False, (1, 1, 1, 1, 1)), ("Add", 1.0, False, (1,))], x_shape=(7,)), 3,
         {"SCALE": 1}, {}),
        ("fuse_scalar_affine: one scalar step alone stays as it is",
         scalar_chain([("Mul", 3.0, False, (1,))]), 3, {"SCALE": None, "CUSTOM:mul_bcast": 1}, {}),
        ("fuse_scalar_affine: a division by 1 alone is dropped",
         scalar_chain([("Div", 1.0, False, (1,))]), 3, {"SCALE": None, "CUSTOM:div_bcast": None, "DIV": None}, {}),
        ("fuse_scalar_affine: Div(c, x) is not affine: no fusion",
         scalar_chain([("Div", 2.0, True, (1,)), ("Add", 1.0, False, (1,))]), 4, {"SCALE": None}, {}),
    ]


def clip_device_floor(with_max):
    """Clip(x, max(x) - 80[, max(x) - 1]): bounds computed from the input on the device (a dB floor)."""
    pieces = [_const("eighty", 80.0, False)] + ([_const("one", 1.0, False)] if with_max else [])
    nodes = [helper.make_node("ReduceMax", ["x"], ["m"], keepdims=0),
             helper.make_node("Sub", ["m", "eighty"], ["lo"])]
    if with_max:
        nodes.append(helper.make_node("Sub", ["m", "one"], ["hi"]))
    nodes.append(helper.make_node("Clip", ["x", "lo", "hi"] if with_max else ["x", "lo"], ["y"]))
    feeds = {"x": (np.random.RandomState(5).randn(2, 3, 10, 12) * 60).astype(np.float32)}
    return _model(nodes, [p[1] for p in pieces]), feeds


def clip_cases():
    return [("Clip: a lower bound computed on the device clamps through a broadcasting max", clip_device_floor(False),
             3, {"CUSTOM:max_bcast": 1}, {}),
            ("Clip: both bounds computed on the device", clip_device_floor(True), 4,
             {"CUSTOM:max_bcast": 1, "CUSTOM:min_bcast": 1}, {})]


def gelu_erf(order, as_node=False, half=0.5, other="x"):
    """Erf GELU with its product 0.5 * x * (1 + Erf(x / sqrt2)) in another order than TorchScript's (x a) 0.5:
    "dynamo" x (0.5 a) as torch's dynamo exporter writes it, "half_x" (0.5 x) a with Mul(x, 1/sqrt2). `other`: the
    value the last Mul multiplies (not x: not a GELU)."""
    root = _const("sqrt2", 1.4142135, as_node) if order == "dynamo" else _const("rsqrt2", 0.70710677, as_node)
    pieces = [root, _const("one", 1.0, as_node), _const("half", half, as_node)]
    nodes = [helper.make_node("Abs", ["x"], ["ax"])]
    if order == "dynamo":
        nodes += [helper.make_node("Div", ["x", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["half", "a"], ["h"]),
                  helper.make_node("Mul", [other, "h"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["x", "rsqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["one", "e"], ["a"]), helper.make_node("Mul", [other, "half"], ["hx"]),
                  helper.make_node("Mul", ["hx", "a"], ["y"])]
    if other == "x":
        nodes = nodes[1:]
    feeds = {"x": (np.random.RandomState(6).randn(2, 77, 97) * 3).astype(np.float32)}
    return _model(nodes + [p[0] for p in pieces], [p[1] for p in pieces], opset=17, x_shape=(2, 77, 97)), feeds


def gelu_erf_cases():
    fused = {"CUSTOM:gelu_erf": 1, "ERF": None}
    none = {"CUSTOM:gelu_erf": None, "GELU_ERF": None}
    return [
        ("fuse_gelu: erf GELU as dynamo writes it, x (0.5 (1 + erf)): one kernel", gelu_erf("dynamo"), 1, fused, {}),
        ("fuse_gelu: dynamo's order, Constant-node weights", gelu_erf("dynamo", as_node=True), 1, fused, {}),
        ("fuse_gelu: (0.5 x)(1 + erf), Mul by 1/sqrt2, Constant-node weights", gelu_erf("half_x", as_node=True), 1,
         fused, {}),
        ("fuse_gelu: dynamo's order on the portable path: ggml_gelu_erf", gelu_erf("dynamo"), 1,
         {"GELU_ERF": 1, "CUSTOM:gelu_erf": None}, {"ARGS": "--portable"}),
        ("fuse_gelu: dynamo's order times |x|, not x: no fusion", gelu_erf("dynamo", other="ax"), 5, none, {}),
        ("fuse_gelu: (0.25 x)(1 + erf), not GELU's half: no fusion", gelu_erf("half_x", half=0.25), 5, none, {}),
    ]


# Cases whose graphs also run as onnxruntime's fp16 converter writes them (FLOAT16 weights and constants, f16
# inputs), plain and with some ops kept in f32 between Casts: the same nodes must run, the same kernels fire (or
# not, for the near misses). onnxruntime computes those files in f16 and the fused kernels in f32, hence the wider
# bar (about 4 f16 roundings of the largest value).
FP16_PICKS = ("fold_conv_affine: Conv -> Mul -> Add -> BN -> Div -> Sub, initializer weights: one Conv",
              "fold_conv_affine: grouped ConvTranspose (stride 2) -> BN -> Mul, Constant-node weights: one ConvTranspose",
              "fuse_group_norm: own GroupNorm, targets from Shape/Gather/Concat, + SiLU",
              "fuse_group_norm: own GroupNorm, weights as Constant nodes",
              "fuse_layer_norm: decomposed LayerNorm (Pow, Div) becomes one ggml_norm",
              "fuse_layer_norm: decomposed RMSNorm (Pow, Div) becomes one ggml_rms_norm",
              "fuse_attention: rank-3, divisor a Constant node",
              "fuse_gelu: erf GELU (Div form) becomes one vectorized gelu_erf kernel",
              "fuse_gelu: erf GELU as dynamo writes it, x (0.5 (1 + erf)): one kernel",
              "fuse_gelu: tanh GELU, Pow(x, 3), (0.5 x)(1 + t), becomes one node",
              "fuse_silu: quick GELU x*Sigmoid(1.702x) becomes silu(1.702x)/1.702",
              "fuse_attention: CLIP form (scale Mul after the MatMul, causal mask Add, Casts) becomes one kernel",
              "fuse_attention: CLIP form, one mask value per key [2, 1, 1, 77]",
              "fuse_attention: boolean mask through Where(keep, S, -inf): one kernel, mask Where(keep, 0, -inf)",
              "fuse_attention: Where with a finite fill (-1e4, not an additive mask's equal): no fusion",
              "fuse_gelu: scale 0.25 is not GELU: no fusion",
              "fuse_gelu: (0.25 x)(1 + erf), not GELU's half: no fusion")


FP16_KEPT_F32 = ["InstanceNormalization", "Softmax", "Erf", "Tanh", "ReduceMean", "Pow", "Sqrt", "Sigmoid"]


def fp16_cases(cases):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    out = []
    for label, (model, feeds), want_nodes, want_ops, env, *opts in cases:
        if label not in FP16_PICKS:
            continue
        f16 = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
        named = onnx.ModelProto()
        named.CopyFrom(model)
        for i, n in enumerate(named.graph.node):  # the converter names its Casts after the nodes
            n.name = n.name or f"n{i}"
        for tag, block in (("", None), (", ops in f32", FP16_KEPT_F32)):  # the second: Casts around those ops
            m16 = convert_float_to_float16(named, keep_io_types=False, op_block_list=block)
            casts = [sum(n.op_type == "Cast" for n in g.graph.node) for g in (m16, model)]
            added = casts[0] - casts[1]
            want = want_nodes + added if "no fusion" in label else want_nodes  # unfused, the Casts run too
            out.append((f"fp16 file{tag}: " + label, (m16, f16), want, want_ops, env, {"tol": 4e-3}))
    return out


def geglu(gelu_form="op", same_shape=True):
    """diffusers' GEGLU: a projection's halves h, g by Slice, then h * gelu(g). gelu_form "op": Gelu-20; "erf": the
    erf chain TorchScript writes. same_shape False: the gate is one row broadcast over the tokens (not GEGLU)."""
    rng = np.random.RandomState(12)
    D = 48
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
             (("s0", [0]), ("e0", [D]), ("e1", [2 * D]), ("ax", [-1]), ("r0", [0]), ("r1", [1]), ("ax1", [1]))]
    inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
              (("sqrt2", 1.4142135), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "ax"], ["h"]),
             helper.make_node("Slice", ["x", "e0", "e1", "ax"], ["g0"])]
    if same_shape:
        nodes.append(helper.make_node("Identity", ["g0"], ["g"]))
    else:
        nodes.append(helper.make_node("Slice", ["g0", "r0", "r1", "ax1"], ["g"]))
    if gelu_form == "op":
        nodes.append(helper.make_node("Gelu", ["g"], ["gg"]))
    else:
        nodes += [helper.make_node("Div", ["g", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["g", "a"], ["m"]),
                  helper.make_node("Mul", ["m", "half"], ["gg"])]
    nodes.append(helper.make_node("Mul", ["h", "gg"], ["y"]))
    feeds = {"x": (rng.randn(2, 77, 2 * D) * 2).astype(np.float32)}
    return _model(nodes, inits, opset=20, x_shape=(2, 77, 2 * D)), feeds


def sdpa_shape_scale(B=2, T=37, S=45, H=2, D=24):
    """Attention as TorchScript exports scaled_dot_product_attention: Q and K each multiplied by
    sqrt(1 / sqrt(D)), D read from Q's shape (Shape, Slice, Cast, Sqrt, Div, Sqrt)."""
    rng = np.random.RandomState(13)
    shapes = {"q": [B * H, T, D], "k": [B * H, S, D], "v": [B * H, S, D]}
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("m1", [-1]), ("big", [2 ** 62]))]
    inits.append(numpy_helper.from_array(np.array(1.0, np.float32), "one"))
    nodes = [helper.make_node("Shape", ["q"], ["qs"]), helper.make_node("Slice", ["qs", "m1", "big"], ["d"]),
             helper.make_node("Cast", ["d"], ["df"], to=TensorProto.FLOAT), helper.make_node("Sqrt", ["df"], ["sd"]),
             helper.make_node("Div", ["one", "sd"], ["inv"]), helper.make_node("Sqrt", ["inv"], ["s"]),
             helper.make_node("Mul", ["q", "s"], ["qm"]), helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("Mul", ["kt", "s"], ["km"]), helper.make_node("MatMul", ["qm", "km"], ["sc"]),
             helper.make_node("Softmax", ["sc"], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in shapes.items()]
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    feeds = {n: rng.randn(*sh).astype(np.float32) for n, sh in shapes.items()}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def geglu_attention_cases():
    return [
        ("GEGLU: h * Gelu(g), the halves of one projection: one mul_gelu pass over strided views", geglu("op"), 5,
         {"CUSTOM:mul_gelu": 1, "CUSTOM:gelu_erf": None, "MUL": None, "CONT": None}, {}),
        ("GEGLU: h * the erf GELU chain (fused first): one mul_gelu pass", geglu("erf"), 5,
         {"CUSTOM:mul_gelu": 1, "CUSTOM:gelu_erf": None, "MUL": None}, {}),
        ("GEGLU: a gate broadcast over the tokens is not GEGLU: gelu, then a broadcasting Mul", geglu("op", False),
         5, {"CUSTOM:mul_gelu": None, "CUSTOM:gelu_erf": 1}, {}),
        ("GEGLU on the portable path: ggml's split GLU on the halves, not copied (no gelu, mul or cont)", geglu("op"),
         5, {"CUSTOM:mul_gelu": None, "GEGLU_ERF": 1, "GELU_ERF": None, "MUL": None, "CONT": None},
         {"ARGS": "--portable"}),
        ("GEGLU on the portable path, a gate broadcast over the tokens: gelu, then a broadcasting Mul",
         geglu("op", False), 5, {"GEGLU_ERF": None, "GELU_ERF": 1, "MUL": 1}, {"ARGS": "--portable"}),
        ("fuse_attention: TorchScript's SDPA, Q and K * sqrt(1/sqrt(D)) from Q's shape: the scale folds at build time",
         sdpa_shape_scale(), 7, {"CUSTOM:attention": 1, "MUL": None, "SQRT": None, "SOFT_MAX": None}, {}),
    ]


def narrow_conv(out_channels=8):
    """A 3x3 conv of 32 channels to `out_channels` (as the UNet's conv_out): off the CPU, its product's second
    operand is the kernel, with out_channels columns."""
    rng = np.random.RandomState(14)
    w = numpy_helper.from_array((rng.randn(out_channels, 32, 3, 3) * 0.1).astype(np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    feeds = {"x": rng.randn(2, 32, 12, 12).astype(np.float32)}
    return _model([node], [w], x_shape=(2, 32, 12, 12)), feeds


def narrow_product_cases():
    return [
        ("exact, portable: a product with 4-16 columns is computed transposed (CUDA's mmf would take it in TF32)",
         narrow_conv(8), 1, {"TRANSPOSE": 1, "MUL_MAT": 1}, {"ARGS": "--portable"}),
        ("fast, portable: the same product as ggml lays it out", narrow_conv(8), 1, {"TRANSPOSE": None, "MUL_MAT": 1},
         {"ARGS": "--portable --precision fast"}),
        ("exact, portable: 32 output channels, the usual layout", narrow_conv(32), 1, {"TRANSPOSE": None, "MUL_MAT": 1},
         {"ARGS": "--portable"}),
    ]
