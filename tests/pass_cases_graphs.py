"""Pass cases for graphs as other tools write them: weights as Constant nodes, per-channel affine chains after
convolutions (paddle2onnx's BatchNorm and learnable-affine blocks), nodes out of topological order (the fp16
converter's Casts). Each case is (label, (model, feeds), ONNX nodes that must run, {ggml op: count}, env)."""

import numpy as np
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
