#!/usr/bin/env python3
"""One test per optimization pass: the pass must fire (seen in --stats node counts and ggml op counts) and the
numbers must stay within the fp32 bar against onnxruntime (max relative error 1e-5). Each pass also has a case
where it must not fire.

Usage: .venv/bin/python tests/pass_tests.py [--cli build/onnx2ggml] [--filter TEXT]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
from pass_cases_graphs import (affine_fold_cases, clip_cases, fp16_cases, gelu_erf_cases, geglu_attention_cases,  # noqa: E402
                               hard_swish_cases, narrow_product_cases, scalar_affine_cases)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cli, model, feeds, tmp, env=None, weights="f32"):
    path = os.path.join(tmp, "m.onnx")
    onnx.save(model, path)
    args = [cli, "run", path, "-o", os.path.join(tmp, "out"), "--stats", os.path.join(tmp, "s.json"), "--weights", weights]
    for k, v in feeds.items():
        np.save(os.path.join(tmp, k + ".npy"), v)
        args += ["--input", f"{k}={os.path.join(tmp, k + '.npy')}"]
    env = dict(env or {})
    args += env.pop("ARGS", "").split()  # CLI flags, e.g. --portable
    r = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **env})
    if r.returncode:
        raise RuntimeError(r.stderr)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    outs = [np.load(os.path.join(tmp, "out", o.name + ".npy")) for o in model.graph.output]
    rel = max(metrics.errors(w, g).rel for g, w in zip(outs, want))
    return json.load(open(os.path.join(tmp, "s.json"))), rel


def conv_bn(second_consumer: bool):
    rng = np.random.RandomState(0)
    C, M = 3, 8
    inits = [numpy_helper.from_array(rng.randn(M, C, 3, 3).astype(np.float32) * 0.3, "w"),
             numpy_helper.from_array(rng.randn(M).astype(np.float32), "b"),
             numpy_helper.from_array(rng.rand(M).astype(np.float32) + 0.5, "scale"),
             numpy_helper.from_array(rng.randn(M).astype(np.float32), "shift"),
             numpy_helper.from_array(rng.randn(M).astype(np.float32), "mean"),
             numpy_helper.from_array(rng.rand(M).astype(np.float32) + 0.5, "var")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["y"], epsilon=1e-3)]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if second_consumer:  # the conv output is needed as is: no fold
        outs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 10, 12])], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=9)


def silu(shared: bool):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if shared:  # the sigmoid is also an output: no fusion
        outs.append(helper.make_tensor_value_info("s", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12])], outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=9)


def quick_gelu(const_shape=()):
    """CLIP's quick GELU, x * Sigmoid(1.702 * x), with the 1.702 as a Constant of `const_shape`."""
    c = helper.make_tensor("c", TensorProto.FLOAT, list(const_shape), [1.702])
    nodes = [helper.make_node("Constant", [], ["c"], value=c), helper.make_node("Mul", ["x", "c"], ["xc"]),
             helper.make_node("Sigmoid", ["xc"], ["s"]), helper.make_node("Mul", ["x", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 10, 12])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=9)


def subgraph_reader(base, value):
    """`base` plus an If whose then-branch reads `value` from the outer scope: a use only a subgraph makes."""
    then_g = helper.make_graph([helper.make_node("Identity", [value], ["t_out"])], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["x"], ["e_out"])], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    g = base.graph
    g.initializer.append(numpy_helper.from_array(np.array(True), "cond"))
    g.node.append(helper.make_node("If", ["cond"], ["sub"], then_branch=then_g, else_branch=else_g))
    g.output.append(helper.make_tensor_value_info("sub", TensorProto.FLOAT, None))
    return base


def conv3x3(n, c, h, w, m, pads, bias=True):
    rng = np.random.RandomState(2)
    inits = [numpy_helper.from_array(rng.randn(m, c, 3, 3).astype(np.float32) * 0.2, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.randn(m).astype(np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["y"], pads=pads)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    x = rng.randn(n, c, h, w).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=9), {"x": x}


def depthwise(stride, pads, k=3, bias=True):
    rng = np.random.RandomState(7)
    C = 12
    inits = [numpy_helper.from_array(rng.randn(C, 1, k, k).astype(np.float32), "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.randn(C).astype(np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["y"], group=C, strides=[stride, stride], pads=pads)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 17, 23])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    x = rng.randn(2, C, 17, 23).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 15)], ir_version=9), {"x": x}


def group_norm(silu_after: bool, gamma_shape=(16, 1, 1), hw=(12, 10)):
    """PyTorch's opset-17 GroupNorm export: Reshape -> InstanceNormalization -> Reshape(Shape(x)) -> Mul -> Add."""
    rng = np.random.RandomState(3)
    C, G = 16, 4
    inits = [numpy_helper.from_array(np.array([0, G, -1], np.int64), "gshape"),
             numpy_helper.from_array(np.ones(G, np.float32), "ones"),
             numpy_helper.from_array(np.zeros(G, np.float32), "zeros"),
             numpy_helper.from_array(rng.randn(*gamma_shape).astype(np.float32), "gamma"),
             numpy_helper.from_array(rng.randn(*gamma_shape).astype(np.float32), "beta")]
    nodes = [helper.make_node("Reshape", ["x", "gshape"], ["r"]),
             helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=1e-6),
             helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Reshape", ["n", "xs"], ["r2"]),
             helper.make_node("Mul", ["r2", "gamma"], ["m"]),
             helper.make_node("Add", ["m", "beta"], ["a"])]
    out = "a"
    if silu_after:
        nodes += [helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["y"])]
        out = "y"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, *hw])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    x = (rng.randn(2, C, *hw) * 3 + 1).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": x}


def shape_of(x, axes, prefix, consts=()):
    """Nodes building Concat(Unsqueeze(Gather(Shape(x), a)) for a in axes, with constant pieces spliced in
    (consts: (position, values)); as torch exports a reshape target read from x.shape. Returns (nodes, name)."""
    nodes, parts = [], []
    for i, a in enumerate(axes):
        nodes += [helper.make_node("Shape", [x], [f"{prefix}s{i}"]),
                  helper.make_node("Constant", [], [f"{prefix}i{i}"],
                                   value=numpy_helper.from_array(np.array(a, np.int64))),
                  helper.make_node("Gather", [f"{prefix}s{i}", f"{prefix}i{i}"], [f"{prefix}g{i}"], axis=0),
                  helper.make_node("Constant", [], [f"{prefix}ax{i}"],
                                   value=numpy_helper.from_array(np.array([0], np.int64))),
                  helper.make_node("Unsqueeze", [f"{prefix}g{i}", f"{prefix}ax{i}"], [f"{prefix}u{i}"])]
        parts.append(f"{prefix}u{i}")
    for pos, vals in consts:
        nodes.append(helper.make_node("Constant", [], [f"{prefix}c{pos}"],
                                      value=numpy_helper.from_array(np.array(vals, np.int64))))
        parts.insert(pos, f"{prefix}c{pos}")
    nodes.append(helper.make_node("Concat", parts, [prefix + "shape"], axis=0))
    return nodes, prefix + "shape"


def group_norm_own(affine=True, silu_after=True, const_nodes=False, back_axes=(0, 1, 2, 3), hw=(12, 10)):
    """A model's own GroupNorm: both reshape targets built from x.shape through Shape/Gather/Unsqueeze/Concat
    ([N, G, -1], then [N, C, H, W]); weights as initializers or as Constant nodes; optionally no affine."""
    rng = np.random.RandomState(7)
    C, G = 16, 4
    consts = {"ones": np.ones(G, np.float32), "zeros": np.zeros(G, np.float32),
              "gamma": rng.randn(1, C, 1, 1).astype(np.float32), "beta": rng.randn(1, C, 1, 1).astype(np.float32)}
    inits, nodes = [], []
    for k, v in consts.items():
        if const_nodes:
            nodes.append(helper.make_node("Constant", [], [k], value=numpy_helper.from_array(v, k)))
        else:
            inits.append(numpy_helper.from_array(v, k))
    n1, t1 = shape_of("x", [0], "a", [(1, [G]), (2, [-1])])
    n2, t2 = shape_of("x", list(back_axes), "b")
    nodes += n1 + n2 + [helper.make_node("Reshape", ["x", t1], ["r"]),
                        helper.make_node("InstanceNormalization", ["r", "ones", "zeros"], ["n"], epsilon=1e-6),
                        helper.make_node("Reshape", ["n", t2], ["r2"])]
    out = "r2"
    if affine:
        nodes += [helper.make_node("Mul", ["r2", "gamma"], ["m"]), helper.make_node("Add", ["m", "beta"], ["a"])]
        out = "a"
    if silu_after:
        nodes += [helper.make_node("Sigmoid", [out], ["s"]), helper.make_node("Mul", [out, "s"], ["y"])]
        out = "y"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, *hw])],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    x = (rng.randn(2, C, *hw) * 3 + 1).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": x}


def group_norm_op(opset=21, silu="sigmoid", shared=False):
    """GroupNormalization (18: scale per group, 21: per channel) followed by SiLU as Sigmoid*Mul."""
    rng = np.random.RandomState(8)
    C, G = 16, 4
    n = G if opset == 18 else C
    inits = [numpy_helper.from_array(rng.randn(n).astype(np.float32), "scale"),
             numpy_helper.from_array(rng.randn(n).astype(np.float32), "bias")]
    nodes = [helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["a"], num_groups=G, epsilon=1e-5),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if shared:  # the normalized tensor is also an output: the SiLU stays apart
        outs.append(helper.make_tensor_value_info("a", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, C, 9, 7])], outs,
                          inits)
    x = (rng.randn(2, C, 9, 7) * 2 + 1).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), {"x": x}


def attention_forms(form, B=2, T=37, S=45, H=2, D=24, const_nodes=False, softmax_axis=-1):
    """Attention as other exporters and hand-written modules spell it. form:
    "rank3_div": [B, T, C] Q, K^T by Transpose [0,2,1], scores divided by sqrt(C) (a VAE's own module);
    "two_step_k": [B, T, H, D] projections, K transposed [0,2,1,3] then [0,1,3,2], mask added, then Div by sqrt(D);
    "bh_qk": [B*H, T, D] heads, Q and K each multiplied by D**-0.25 before the product;
    "bh_reshape_k": as "two_step_k" without the mask, K^T made as torch's dynamo exporter does at opset 18: its head
    dims merged by a Reshape to [B*H, S, D], Transpose [0,2,1], and a Reshape back to [B, H, D, S], both targets
    read from K's shape;
    "where_safe": "where" with torch's safe softmax after it (Where(IsNaN(p), 0, p), as torch.export writes SDPA with a
    boolean mask), and two queries masked everywhere (onnxruntime: NaN, then 0)."""
    rng = np.random.RandomState(9)
    inits, nodes = [], []

    def const(name, v):
        if const_nodes:
            nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(v, name)))
        else:
            inits.append(numpy_helper.from_array(v, name))
    C = H * D
    if form == "rank3_div":
        shapes = {"q": [B, T, C], "k": [B, S, C], "v": [B, S, C]}
        const("div", np.array(np.sqrt(C), np.float32))
        nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                  helper.make_node("MatMul", ["q", "kt"], ["sc"]), helper.make_node("Div", ["sc", "div"], ["ss"]),
                  helper.make_node("Softmax", ["ss"], ["p"], axis=softmax_axis),
                  helper.make_node("MatMul", ["p", "v"], ["o"])]
    elif form == "two_step_k":
        shapes = {"q": [B, T, H, D], "k": [B, S, H, D], "v": [B, S, H, D], "mask": [B, 1, T, S]}
        const("div", np.array(np.sqrt(D), np.float32))
        nodes += [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["k"], ["k1"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["k1"], ["kt"], perm=[0, 1, 3, 2]),
                  helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]),
                  helper.make_node("MatMul", ["qt", "kt"], ["sc"]), helper.make_node("Add", ["sc", "mask"], ["sm"]),
                  helper.make_node("Div", ["sm", "div"], ["ss"]),
                  helper.make_node("Softmax", ["ss"], ["p"], axis=softmax_axis),
                  helper.make_node("MatMul", ["p", "vt"], ["o"])]
    elif form == "bh_reshape_k":
        shapes = {"q": [B, T, H, D], "k": [B, S, H, D], "v": [B, S, H, D]}
        const("div", np.array(np.sqrt(D), np.float32))
        merge, merged = shape_of("k1", [2, 3], "m", consts=[(0, [-1])])
        split, back = shape_of("k1", [0, 1, 3, 2], "b")
        nodes += [helper.make_node("Transpose", ["q"], ["qt"], perm=[0, 2, 1, 3]),
                  helper.make_node("Transpose", ["k"], ["k1"], perm=[0, 2, 1, 3]), *merge, *split,
                  helper.make_node("Reshape", ["k1", merged], ["k3"]),
                  helper.make_node("Transpose", ["k3"], ["k3t"], perm=[0, 2, 1]),
                  helper.make_node("Reshape", ["k3t", back], ["kt"]),
                  helper.make_node("Transpose", ["v"], ["vt"], perm=[0, 2, 1, 3]),
                  helper.make_node("MatMul", ["qt", "kt"], ["sc"]), helper.make_node("Div", ["sc", "div"], ["ss"]),
                  helper.make_node("Softmax", ["ss"], ["p"], axis=softmax_axis),
                  helper.make_node("MatMul", ["p", "vt"], ["o"])]
    elif form.startswith("where"):  # "where": fill -inf; "where_finite": fill -1e4, not a mask's equal
        shapes = {"q": [B, T, C], "k": [B, S, C], "v": [B, S, C], "keep": [T, S]}
        const("div", np.array(np.sqrt(C), np.float32))
        const("fill", np.array(-1e4 if form == "where_finite" else -np.inf, np.float32))
        nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
                  helper.make_node("MatMul", ["q", "kt"], ["sc"]), helper.make_node("Div", ["sc", "div"], ["ss"]),
                  helper.make_node("Where", ["keep", "ss", "fill"], ["sw"]),
                  helper.make_node("Softmax", ["sw"], ["p"], axis=softmax_axis)]
        if form == "where_safe":
            const("zero", np.array(0.0, np.float32))
            nodes += [helper.make_node("IsNaN", ["p"], ["nan"]), helper.make_node("Where", ["nan", "zero", "p"], ["ps"]),
                      helper.make_node("MatMul", ["ps", "v"], ["o"])]
        else:
            nodes.append(helper.make_node("MatMul", ["p", "v"], ["o"]))
    else:
        shapes = {"q": [B * H, T, D], "k": [B * H, S, D], "v": [B * H, S, D]}
        const("s", np.array(D ** -0.25, np.float32))
        nodes += [helper.make_node("Mul", ["q", "s"], ["qs"]), helper.make_node("Mul", ["s", "k"], ["ks"]),
                  helper.make_node("Transpose", ["ks"], ["kt"], perm=[0, 2, 1]),
                  helper.make_node("MatMul", ["qs", "kt"], ["sc"]),
                  helper.make_node("Softmax", ["sc"], ["p"], axis=softmax_axis),
                  helper.make_node("MatMul", ["p", "v"], ["o"])]
    ins = [helper.make_tensor_value_info(n, TensorProto.BOOL if n == "keep" else TensorProto.FLOAT, sh)
           for n, sh in shapes.items()]
    feeds = {n: rng.randn(*sh).astype(np.float32) for n, sh in shapes.items()}
    if "keep" in feeds:  # every query keeps at least one key (a row of -inf alone is NaN either way)
        feeds["keep"] = rng.rand(T, S) < 0.7
        feeds["keep"][:, 0] = True
        if form == "where_safe":
            feeds["keep"][[3, 20]] = False
    if "mask" in feeds:
        feeds["mask"] = (rng.rand(*shapes["mask"]) < 0.3).astype(np.float32) * -30
    g = helper.make_graph(nodes, "g", ins, [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def norm_decomposed(kind="layer", const_nodes=False, axes=(-1,), square="pow", inv="div", opset=13):
    """LayerNorm (kind "layer") or RMSNorm ("rms") written out in elementwise ops, over `axes` of x [2, 5, 6, 24]:
    ReduceMean, Sub, square (Pow 2 or Mul), ReduceMean, Add eps, Sqrt, Div (or Mul by Reciprocal), Mul gamma
    (LayerNorm: Add beta). Weights as initializers or Constant nodes; axes as an attribute (opset < 18) or input."""
    rng = np.random.RandomState(12)
    shape = [2, 5, 6, 24]
    nshape = [shape[a] for a in axes if a < 0] if all(a < 0 for a in axes) else [1]
    consts = {"gamma": (rng.rand(*nshape) + 0.5).astype(np.float32), "beta": rng.randn(*nshape).astype(np.float32),
              "two": np.array(2, np.float32), "eps": np.array(1e-5, np.float32)}
    inits, nodes = [], []
    for k, v in consts.items():
        if const_nodes:
            nodes.append(helper.make_node("Constant", [], [k], value=numpy_helper.from_array(v, k)))
        else:
            inits.append(numpy_helper.from_array(v, k))

    def mean(i, o):
        if opset >= 18:
            inits.append(numpy_helper.from_array(np.array(axes, np.int64), o + "_axes"))
            return helper.make_node("ReduceMean", [i, o + "_axes"], [o])
        return helper.make_node("ReduceMean", [i], [o], axes=list(axes))
    num = "x"
    if kind == "layer":
        nodes += [mean("x", "mu"), helper.make_node("Sub", ["x", "mu"], ["d"])]
        num = "d"
    nodes.append(helper.make_node("Pow", [num, "two"], ["sq"]) if square == "pow"
                 else helper.make_node("Mul", [num, num], ["sq"]))
    nodes += [mean("sq", "var"), helper.make_node("Add", ["var", "eps"], ["ve"]),
              helper.make_node("Sqrt", ["ve"], ["sd"])]
    if inv == "div":
        nodes.append(helper.make_node("Div", [num, "sd"], ["n"]))
    else:
        nodes += [helper.make_node("Reciprocal", ["sd"], ["rs"]), helper.make_node("Mul", [num, "rs"], ["n"])]
    nodes.append(helper.make_node("Mul", ["n", "gamma"], ["y"]))
    out = "y"
    if kind == "layer":
        nodes.append(helper.make_node("Add", ["y", "beta"], ["z"]))
        out = "z"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], inits)
    x = (rng.randn(*shape) * 2 + 0.5).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9), {"x": x}


def attention23(rank=4, mask=True, causal=False, B=2, T=37, S=45, H=2, D=24, heads_from=False):
    """ONNX Attention-23: [B, H, T, D] heads, or [B, T, H*D] with the head counts; an additive float mask.
    heads_from: the heads are Transposes [0,2,1,3] of [B, T, H, D] inputs, as torch's dynamo exporter writes SDPA."""
    rng = np.random.RandomState(10)
    nodes = []
    if heads_from:
        shapes = {"q": [B, T, H, D], "k": [B, S, H, D], "v": [B, S, H, D]}
        nodes = [helper.make_node("Transpose", [n], [n + "h"], perm=[0, 2, 1, 3]) for n in "qkv"]
        attrs = {}
    elif rank == 4:
        shapes = {"q": [B, H, T, D], "k": [B, H, S, D], "v": [B, H, S, D]}
        attrs = {}
    else:
        shapes = {"q": [B, T, H * D], "k": [B, S, H * D], "v": [B, S, H * D]}
        attrs = {"q_num_heads": H, "kv_num_heads": H}
    if causal:
        attrs["is_causal"] = 1
    ins = ["qh", "kh", "vh"] if heads_from else ["q", "k", "v"]
    if mask:
        shapes["m"] = [T, S]
        ins.append("m")
    feeds = {n: rng.randn(*sh).astype(np.float32) for n, sh in shapes.items()}
    if mask:
        feeds["m"] = (rng.rand(T, S) < 0.3).astype(np.float32) * -30
    g = helper.make_graph(nodes + [helper.make_node("Attention", ins, ["o"], **attrs)], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in shapes.items()],
                          [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 23)], ir_version=10), feeds


def attention(k_shared: bool, D=40, T=64):
    """SDPA as torch exports it: heads split by Reshape + Transpose, sqrt(scale) on Q and K, Softmax, MatMul."""
    rng = np.random.RandomState(4)
    B, S, H = 2, 77, 4
    s = np.array((1 / np.sqrt(D)) ** 0.5, np.float32)
    inits = [numpy_helper.from_array(s, "sq"), numpy_helper.from_array(np.array([B, T, H, D], np.int64), "qshape"),
             numpy_helper.from_array(np.array([B, S, H, D], np.int64), "kvshape")]
    nodes = [helper.make_node("Reshape", ["q", "qshape"], ["qr"]),
             helper.make_node("Reshape", ["k", "kvshape"], ["kr"]),
             helper.make_node("Reshape", ["v", "kvshape"], ["vr"]),
             helper.make_node("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1]),
             helper.make_node("Transpose", ["vr"], ["vt"], perm=[0, 2, 1, 3]),
             helper.make_node("Mul", ["qt", "sq"], ["qs"]), helper.make_node("Mul", ["kt", "sq"], ["ks"]),
             helper.make_node("MatMul", ["qs", "ks"], ["sc"]), helper.make_node("Softmax", ["sc"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "vt"], ["o"])]
    outs = [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)]
    if k_shared:  # the transposed K is also an output: no fusion
        outs.append(helper.make_tensor_value_info("kt", TensorProto.FLOAT, None))
    ins = [helper.make_tensor_value_info("q", TensorProto.FLOAT, [B, T, H * D]),
           helper.make_tensor_value_info("k", TensorProto.FLOAT, [B, S, H * D]),
           helper.make_tensor_value_info("v", TensorProto.FLOAT, [B, S, H * D])]
    g = helper.make_graph(nodes, "g", ins, outs, inits)
    feeds = {"q": rng.randn(B, T, H * D).astype(np.float32), "k": rng.randn(B, S, H * D).astype(np.float32),
             "v": rng.randn(B, S, H * D).astype(np.float32)}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def clip_attention(mask="causal", scores_out=False, const_scale=True, T=77, D=64):
    """CLIP's attention as transformers exports it: Transposes, MatMul, Mul by the scale, Add of the causal mask
    (mask: "causal" constant [1, 1, T, T]; "input" a graph input [B, 1, T, T]; "keys" [B, 1, 1, T], one value per
    key), Softmax, two Casts to float, MatMul."""
    rng = np.random.RandomState(5)
    B, H = 2, 3
    inits = [numpy_helper.from_array(np.array([B, T, H, D], np.int64), "shape")]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [B, T, H * D]) for n in "qkv"]
    feeds = {n: rng.randn(B, T, H * D).astype(np.float32) for n in "qkv"}
    if const_scale:
        inits.append(numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale"))
    else:  # a graph input: not a constant, no fusion
        ins.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, []))
        feeds["scale"] = np.array(D ** -0.5, np.float32)
    if mask == "causal":
        inits.append(numpy_helper.from_array(np.triu(np.full((T, T), np.finfo(np.float32).min, np.float32), 1)
                                             .reshape(1, 1, T, T), "mask"))
    elif mask == "padded":  # each row masked from a random key on (-inf or the dtype minimum); one row everywhere
        ins.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [B, 1, T, T]))
        m = (rng.rand(B, 1, T, T) < 0.2).astype(np.float32) * -1e4
        ends = rng.randint(1, T + 1, size=(B, T))
        for b in range(B):
            for t in range(T):
                m[b, 0, t, ends[b, t]:] = -np.inf if (b + t) % 2 else np.finfo(np.float32).min
        m[1, 0, 3, :] = np.finfo(np.float32).min
        feeds["mask"] = m
    else:
        shape = [B, 1, T, T] if mask == "input" else [B, 1, 1, T]
        ins.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, shape))
        feeds["mask"] = (rng.rand(*shape) < 0.3).astype(np.float32) * -1e4
    nodes = [helper.make_node("Reshape", [n, "shape"], [n + "r"]) for n in "qkv"]
    nodes += [helper.make_node("Transpose", ["qr"], ["qt"], perm=[0, 2, 1, 3]),
              helper.make_node("Transpose", ["kr"], ["kt"], perm=[0, 2, 3, 1]),
              helper.make_node("Transpose", ["vr"], ["vt"], perm=[0, 2, 1, 3]),
              helper.make_node("MatMul", ["qt", "kt"], ["sc"]), helper.make_node("Mul", ["sc", "scale"], ["ss"]),
              helper.make_node("Add", ["ss", "mask"], ["sm"]), helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
              helper.make_node("Cast", ["p"], ["pc"], to=TensorProto.FLOAT),
              helper.make_node("Cast", ["pc"], ["pc2"], to=TensorProto.FLOAT),
              helper.make_node("MatMul", ["pc2", "vt"], ["o"])]
    outs = [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)]
    if scores_out:  # the masked scores are also an output: no fusion
        outs.append(helper.make_tensor_value_info("sm", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", ins, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def gelu(div_form: bool, half=0.5):
    """GELU as torch exports it before opset 20: Mul(Mul(x, Add(Erf(x / sqrt2), 1)), 0.5)."""
    inits = [numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"),
             numpy_helper.from_array(np.array(0.70710677, np.float32), "rsqrt2"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(half, np.float32), "half")]
    first = (helper.make_node("Div", ["x", "sqrt2"], ["d"]) if div_form
             else helper.make_node("Mul", ["rsqrt2", "x"], ["d"]))
    nodes = [first, helper.make_node("Erf", ["d"], ["e"]), helper.make_node("Add", ["e", "one"], ["a"]),
             helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Mul", ["m", "half"], ["y"])]
    shape = [2, 77, 96] if div_form else [2, 77, 97]  # 14938 values: not a whole number of vectors
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    x = (np.random.RandomState(6).randn(*shape) * 3).astype(np.float32)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": x}


def gelu_tanh(form="pow", const_nodes=False, kappa=0.044715):
    """The tanh GELU written out: 0.5 x (1 + Tanh(sqrt(2/pi) (x + kappa x^3))). form "pow": Pow(x, 3), product
    (0.5 x)(1 + t) (HF's NewGELU); "mul": Mul(x, Mul(x, x)), product 0.5 (x (1 + t)) (torch's own export)."""
    rng = np.random.RandomState(13)
    consts = {"c": np.array(np.sqrt(2 / np.pi), np.float32), "k": np.array(kappa, np.float32),
              "three": np.array(3, np.float32), "one": np.array(1, np.float32), "half": np.array(0.5, np.float32)}
    inits, nodes = [], []
    for name, v in consts.items():
        if const_nodes:
            nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(v, name)))
        else:
            inits.append(numpy_helper.from_array(v, name))
    if form == "pow":
        nodes.append(helper.make_node("Pow", ["x", "three"], ["x3"]))
    else:
        nodes += [helper.make_node("Mul", ["x", "x"], ["x2"]), helper.make_node("Mul", ["x", "x2"], ["x3"])]
    nodes += [helper.make_node("Mul", ["k", "x3"], ["kx3"]), helper.make_node("Add", ["x", "kx3"], ["in"]),
              helper.make_node("Mul", ["in", "c"], ["ci"]), helper.make_node("Tanh", ["ci"], ["t"]),
              helper.make_node("Add", ["t", "one"], ["a"])]
    if form == "pow":
        nodes += [helper.make_node("Mul", ["half", "x"], ["hx"]), helper.make_node("Mul", ["hx", "a"], ["y"])]
    else:
        nodes += [helper.make_node("Mul", ["x", "a"], ["xa"]), helper.make_node("Mul", ["half", "xa"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 37, 61])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return (helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9),
            {"x": (rng.randn(2, 37, 61) * 3).astype(np.float32)})


def matmul(K):
    rng = np.random.RandomState(5)
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"])], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 50, K]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [3, K, 70])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    feeds = {"a": rng.randn(3, 50, K).astype(np.float32), "b": rng.randn(3, K, 70).astype(np.float32)}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


# ---- fuse_conv_activation, the 1x1 (pointwise) conv kernel and the max-pool kernel ----
def conv_act(act, k=1, stride=1, n=1, c=10, m=13, h=9, w=11, opset=13, conv_out=False, bias=True, group=1):
    """Conv (k x k) then `act`: "relu", "clip6" (bounds as inputs), "clip_attr" (opset 10 attributes),
    "clip_dyn" (max a graph input: not constant), or None."""
    rng = np.random.RandomState(11)
    inits = [numpy_helper.from_array(rng.randn(m, c // group, k, k).astype(np.float32) * 0.3, "w")]
    ins = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(rng.randn(m).astype(np.float32), "b"))
        ins.append("b")
    nodes = [helper.make_node("Conv", ins, ["c" if act else "y"], strides=[stride, stride], pads=[k // 2] * 4,
                              group=group)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, w])]
    feeds = {"x": rng.randn(n, c, h, w).astype(np.float32)}
    if act == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif act == "clip6":
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif act == "clip_attr":
        nodes.append(helper.make_node("Clip", ["c"], ["y"], min=-0.5, max=1.5))
    elif act == "clip_dyn":
        inits.append(numpy_helper.from_array(np.array(0, np.float32), "lo"))
        inputs.append(helper.make_tensor_value_info("hi", TensorProto.FLOAT, []))
        feeds["hi"] = np.array(1.0, np.float32)
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if conv_out:  # the conv output itself is wanted: no fusion
        outs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    g = helper.make_graph(nodes, "g", inputs, outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9), feeds


def conv_act_cases():
    pw = "CUSTOM:conv_pointwise"
    return [
        ("fuse_conv_activation: 1x1 Conv + Relu -> pointwise kernel (odd sizes), no transpose/add/relu",
         conv_act("relu"), 1, {pw: 1, "CONT": None, "ADD": None, "RELU": None, "MUL_MAT": None}, {}),
        ("fuse_conv_activation: 1x1 Conv + Clip(0, 6) inputs, batch 2, no bias",
         conv_act("clip6", n=2, bias=False, c=32, m=24, h=14, w=14), 1, {pw: 1, "CLAMP": None}, {}),
        ("fuse_conv_activation: 1x1 Conv + Clip attributes (opset 10)", conv_act("clip_attr", opset=10), 1,
         {pw: 1, "CLAMP": None}, {}),
        ("fuse_conv_activation: 3x3 Conv + Clip (im2col): the gemm kernel adds the bias and clamps",
         conv_act("clip6", k=3), 1, {pw: None, "CUSTOM:gemm": 1, "CLAMP": None, "ADD": None, "CUSTOM:transpose": None},
         {}),
        ("fuse_conv_activation: 3x3 Conv + Relu (im2col), no bias, K = 450 (two shared-dim blocks): clamp at the end",
         conv_act("relu", k=3, c=50, m=20, bias=False), 1, {"CUSTOM:gemm": 1, "RELU": None}, {}),
        ("fuse_conv_activation: 3x3 Conv + Clip with ONNX2GGML_GEMM=0: a broadcasting bias add and ggml's clamp",
         conv_act("clip6", k=3), 1, {"CUSTOM:gemm": None, "CLAMP": 1, "CUSTOM:add_bcast": 1}, {"ONNX2GGML_GEMM": "0"}),
        ("fuse_conv_activation: 3x3 Conv + Relu at 48x48 (Winograd): bias and relu in the output transform",
         conv_act("relu", k=3, c=8, m=16, h=48, w=48), 1,
         {"CUSTOM:winograd4_output": 1, "RELU": None, "ADD": None}, {}),
        ("fuse_conv_activation: 3x3 Conv + Clip(0, 6) at 27x27 (Winograd F(2,3)), batch 2: clamp in the transform",
         conv_act("clip6", k=3, n=2, c=8, m=20, h=27, w=27), 1,
         {"CUSTOM:winograd2_output": 1, "CLAMP": None, "ADD": None}, {}),
        ("fuse_conv_activation: conv output also a graph output: no fusion", conv_act("relu", conv_out=True), 2,
         {pw: 1, "RELU": 1}, {}),
        ("fuse_conv_activation: Clip bound not constant: no fusion", conv_act("clip_dyn"), 2, {pw: 1}, {}),
        ("conv path: 1x1 Conv without activation takes the pointwise kernel", conv_act(None, c=7, m=6, h=4, w=4), 1,
         {pw: 1, "ADD": None}, {}),
        ("conv path: 1x1 stride-2 Conv: no pointwise kernel", conv_act("relu", stride=2), 1, {pw: None}, {}),
        ("fuse_conv_activation: depthwise 3x3/2 Conv + Clip(0, 6): clamp in the depthwise kernel",
         conv_act("clip6", k=3, stride=2, c=24, m=24, group=24, h=29, w=31), 1,
         {"CUSTOM:depthwise": 1, "CLAMP": None, "ADD": None}, {}),
        ("depthwise 3x3/2 (pad 1), 53 columns: 16-column deinterleave plus a tail, batch 2 reusing the buffer",
         conv_act("clip6", k=3, stride=2, n=2, c=12, m=12, group=12, h=40, w=53), 1,
         {"CUSTOM:depthwise": 1, "CLAMP": None}, {}),
        ("depthwise 5x5/2 (pad 2, even), 37 columns, no activation",
         conv_act(None, k=5, stride=2, n=1, c=7, m=7, group=7, h=21, w=37), 1, {"CUSTOM:depthwise": 1}, {}),
        ("conv path: stem 3 -> 16 channels, 3x3/2 + Clip(0, 6), batch 2: the direct kernel, no im2col",
         conv_act("clip6", k=3, stride=2, n=2, c=3, m=16, h=41, w=45), 1,
         {"CUSTOM:conv_direct": 1, "IM2COL": None, "CLAMP": None}, {}),
        ("conv path: 4 -> 5 channels, 3x3/1 at 9x11 (no Winograd at that size): the direct kernel",
         conv_act("relu", k=3, stride=1, c=4, m=5), 1, {"CUSTOM:conv_direct": 1, "IM2COL": None, "RELU": None}, {}),
        ("conv path: 3 -> 16 channels, 3x3/1 at 48x48 (a Winograd size): the direct kernel",
         conv_act(None, k=3, stride=1, c=3, m=16, h=48, w=48), 1,
         {"CUSTOM:conv_direct": 1, "CUSTOM:winograd4_input": None, "IM2COL": None}, {}),
        ("conv path: stem 3 -> 10 channels, 7x7/2 pad 3 + Relu (ResNet's conv1): the direct kernel, no im2col",
         conv_act("relu", k=7, stride=2, c=3, m=10, h=33, w=37), 1,
         {"CUSTOM:conv_direct": 1, "IM2COL": None, "RELU": None}, {}),
        ("conv path: 4 -> 8 channels, 7x7/2 (196 taps, over the direct kernel's 160): im2col",
         conv_act("relu", k=7, stride=2, c=4, m=8, h=33, w=37), 1, {"CUSTOM:conv_direct": None, "IM2COL": 1}, {}),
        ("conv path: 3x3 Conv + Relu at 14x14 (ResNet's layer3): Winograd F(2,3)",
         conv_act("relu", k=3, c=8, m=16, h=14, w=14), 1, {"CUSTOM:winograd2_output": 1, "IM2COL": None}, {}),
        ("conv path: 3x3 Conv + Relu at 13x13 (SqueezeNet's last fire modules): Winograd F(2,3)",
         conv_act("relu", k=3, c=8, m=16, h=13, w=13), 1, {"CUSTOM:winograd2_output": 1, "IM2COL": None}, {}),
        ("conv path: 3x3 Conv + Relu at 12x12: under Winograd's size, im2col",
         conv_act("relu", k=3, c=8, m=16, h=12, w=12), 1, {"CUSTOM:winograd2_output": None, "IM2COL": 1}, {}),
        ("conv path: 8 input channels: not the direct kernel (im2col)",
         conv_act("clip6", k=3, stride=2, c=8, m=16, h=21, w=23), 1, {"CUSTOM:conv_direct": None, "IM2COL": 1}, {}),
        ("fuse_conv_activation: depthwise 5x5/3 Conv + Relu, batch 2, no bias",
         conv_act("relu", k=5, stride=3, n=2, c=9, m=9, group=9, h=20, w=37, bias=False), 1,
         {"CUSTOM:depthwise": 1, "RELU": None}, {}),
        # ggml's product (ONNX2GGML_GEMM=0: the path of builds without FMA)
        ("conv path: im2col 3x3 with a 7x7 output (49 rows): weight-first product, transposed back",
         conv3x3(1, 8, 7, 7, 16, [1, 1, 1, 1]), 1, {"IM2COL": 1, "MUL_MAT": 1, "CUSTOM:transpose": 1},
         {"ONNX2GGML_GEMM": "0"}),
        ("conv path: im2col 3x3 with an 8x8 output: no swap", conv3x3(1, 8, 8, 8, 16, [1, 1, 1, 1]), 1,
         {"IM2COL": 1, "MUL_MAT": 1, "CUSTOM:transpose": None}, {"ONNX2GGML_GEMM": "0"}),
        ("conv path: im2col 3x3, 7x7 output, batch 2, 12 output channels: the gemm kernel stores NCHW per image",
         conv3x3(2, 5, 7, 7, 12, [1, 1, 1, 1]), 1,
         {"IM2COL": 1, "CUSTOM:gemm": 1, "CUSTOM:transpose": None, "PERMUTE": None}, {}),
        ("concat: channels of NCHW (SqueezeNet's fire modules), batch 2 -> block copies, not ggml's CONCAT",
         concat([(2, 64, 27, 27), (2, 48, 27, 27)], 1), 1, {"CUSTOM:concat": 1, "CONCAT": None}, {}),
        ("concat: three float16 inputs on the last axis (blocks of 6, 2 and 4 bytes)",
         concat([(3, 5, 3), (3, 5, 1), (3, 5, 2)], -1, np.float16), 1, {"CUSTOM:concat": 2, "CONCAT": None}, {}),
        ("concat: --portable keeps ggml's CONCAT", concat([(2, 6, 5, 4), (2, 3, 5, 4)], 1), 1,
         {"CUSTOM:concat": None, "CONCAT": 1}, {"ARGS": "--portable"}),
        ("pool path: MaxPool 3x3/2 ceil_mode (SqueezeNet) -> max_pool kernel, no pad/mask/pool_2d",
         pool2d("MaxPool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 1,
         {"CUSTOM:max_pool": 1, "POOL_2D": None, "ADD": None}, {}),
        ("pool path: MaxPool 3x3/2 pads 1 (ResNet), batch 2", pool2d("MaxPool", n=2, kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1]), 1, {"CUSTOM:max_pool": 1, "PAD": None, "ADD": None}, {}),
        ("pool path: MaxPool 3x3/2 ceil_mode, 43 wide: the 8-wide column pass (stride 2) and a scalar tail",
         pool2d("MaxPool", w=43, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1), 1, {"CUSTOM:max_pool": 1}, {}),
        ("pool path: MaxPool 3x3/1 pads 1, 29 wide: the 8-wide column pass (stride 1)",
         pool2d("MaxPool", w=29, kernel_shape=[3, 3], pads=[1, 1, 1, 1]), 1, {"CUSTOM:max_pool": 1}, {}),
        ("pool path: MaxPool 2x3, asymmetric pads, strides 1x2", pool2d("MaxPool", kernel_shape=[2, 3],
         strides=[1, 2], pads=[0, 2, 1, 1]), 1, {"CUSTOM:max_pool": 1}, {}),
        ("pool path: AveragePool keeps ggml's pool", pool2d("AveragePool", kernel_shape=[3, 3], strides=[2, 2]), 1,
         {"CUSTOM:max_pool": None, "POOL_2D": 1}, {}),
        ("pool path: dilated MaxPool: no max_pool kernel", pool2d("MaxPool", kernel_shape=[2, 2], dilations=[2, 2]),
         1, {"CUSTOM:max_pool": None}, {}),
    ]


def pool2d(op, n=1, w=13, **attrs):
    rng = np.random.RandomState(13)
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, 5, 15, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return (helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=9),
            {"x": rng.randn(n, 5, 15, w).astype(np.float32)})
# ---- end fuse_conv_activation ----


def concat(shapes, axis, dtype=np.float32):
    rng = np.random.RandomState(17)
    names = [f"x{i}" for i in range(len(shapes))]
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    g = helper.make_graph([helper.make_node("Concat", names, ["y"], axis=axis)], "g",
                          [helper.make_tensor_value_info(n, t, list(sh)) for n, sh in zip(names, shapes)],
                          [helper.make_tensor_value_info("y", t, None)])
    feeds = {n: (rng.randn(*sh) * 50).astype(dtype) for n, sh in zip(names, shapes)}
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=9), feeds


def gemm_model(op, a_shape, k, n, const_w=True, trans_b=False, bias=None, **attrs):
    """MatMul/Gemm of a [.., M, K] input by a [K, N] weight ([N, K] when trans_b): a constant initializer unless
    const_w is False (then a graph input)."""
    rng = np.random.RandomState(7)
    w = (rng.randn(*((n, k) if trans_b else (k, n))) / np.sqrt(k)).astype(np.float32)
    ins, inits, feeds = ["a", "w"], [], {"a": rng.randn(*a_shape).astype(np.float32)}
    vis = [helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape))]
    if const_w:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        vis.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.shape)))
        feeds["w"] = w
    if bias is not None:
        ins.append("c")
        inits.append(numpy_helper.from_array(rng.randn(*bias).astype(np.float32), "c"))
    if op == "Gemm" and trans_b:
        attrs["transB"] = 1
    g = helper.make_graph([helper.make_node(op, ins, ["y"], **attrs)], "g", vis,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def linear(bias_shape=(37,), const_w=True, bias_first=False, identity=False, a_shape=(2, 77, 100), then=None):
    """MatMul by a [100, 37] weight, then Add of a bias (a Linear layer as torch exports it); bias_first: Add(b, y);
    identity: the bias reached through an Identity node (how exporters share equal initializers); then: what
    follows, "quick_gelu" (or "quick_gelu_shared": y also an output) or the shape of a residual input Add(r, y)."""
    model, feeds = gemm_model("MatMul", a_shape, 100, 37, const_w)
    g = model.graph
    g.output[0].name = "mm"
    g.node[0].output[0] = "mm"
    g.initializer.append(numpy_helper.from_array(np.random.RandomState(8).randn(*bias_shape).astype(np.float32), "b"))
    b = "b"
    if identity:
        g.node.append(helper.make_node("Identity", ["b"], ["bi"]))
        b = "bi"
    g.node.append(helper.make_node("Add", [b, "mm"] if bias_first else ["mm", b], ["y"]))
    g.output[0].name = "y"
    if then == "quick_gelu" or then == "quick_gelu_shared":  # y * Sigmoid(1.702 y), as CLIP's MLP
        c = helper.make_tensor("c", TensorProto.FLOAT, [], [1.702])
        g.node.extend([helper.make_node("Constant", [], ["c"], value=c), helper.make_node("Mul", ["y", "c"], ["yc"]),
                       helper.make_node("Sigmoid", ["yc"], ["s"]), helper.make_node("Mul", ["y", "s"], ["z"])])
        g.output[0].name = "z"
        if then == "quick_gelu_shared":  # the Linear's output is also a graph output
            g.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    elif then:  # a residual Add of a graph input r of shape `then`
        g.input.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, list(then)))
        feeds["r"] = np.random.RandomState(9).randn(*then).astype(np.float32)
        g.node.append(helper.make_node("Add", ["r", "y"], ["z"]))
        g.output[0].name = "z"
    return model, feeds


def linear_cases():
    G = "CUSTOM:gemm"
    return [("fuse_matmul_bias: MatMul + Add(bias) -> gemm kernel with the bias in its epilogue", linear(), 1,
             {G: 1, "ADD": None, "MUL_MAT": None}, {}),
            ("fuse_matmul_bias: Add(bias, y) with the bias through an Identity", linear(bias_first=True, identity=True),
             2, {G: 1, "ADD": None}, {}),
            ("fuse_matmul_bias: 1-D input [100]", linear(a_shape=(100,)), 1, {G: 1, "ADD": None}, {}),
            ("fuse_matmul_bias: ggml path with ONNX2GGML_GEMM=0 (MUL_MAT then ADD)", linear(), 1,
             {G: None, "MUL_MAT": 1, "ADD": 1}, {"ONNX2GGML_GEMM": "0"}),
            ("fuse_matmul_bias: bias [1, 37] (not 1-D): no fusion", linear(bias_shape=(1, 37)), 2, {G: 1, "ADD": 1}, {}),
            ("fuse_matmul_bias: weight a graph input: no fusion", linear(const_w=False), 2,
             {G: None, "MUL_MAT": 1, "ADD": 1}, {}),
            ("fuse_matmul_bias: Linear + quick GELU: the kernel applies y sigmoid(1.702 y) as it writes",
             linear(then="quick_gelu"), 1, {G: 1, "ADD": None, "SILU": None, "SCALE": None}, {}),
            ("fuse_matmul_bias: Linear + quick GELU, N=37 and 4 rows (partial panel, short tile)",
             linear(then="quick_gelu", a_shape=(4, 100)), 1, {G: 1, "SILU": None}, {}),
            ("fuse_matmul_bias: Linear + quick GELU on the ggml path (ONNX2GGML_GEMM=0)", linear(then="quick_gelu"),
             1, {G: None, "MUL_MAT": 1, "SILU": 1}, {"ONNX2GGML_GEMM": "0"}),
            ("fuse_matmul_bias: Linear output also a graph output: no quick GELU fusion",
             linear(then="quick_gelu_shared"), 2, {G: 1, "SILU": 1}, {}),
            ("fuse_matmul_bias: Linear + residual Add(r, y): the kernel adds r as it writes",
             linear(then=(2, 77, 37)), 1, {G: 1, "ADD": None}, {}),
            ("fuse_matmul_bias: residual [1, 77, 37] broadcast over the batch: fused node, ggml ADD after the kernel",
             linear(then=(1, 77, 37)), 1, {G: 1, "ADD": 1}, {}),
            ("fuse_matmul_bias: residual [3, 2, 77, 37] broadcasts the product up a rank: one broadcasting add",
             linear(then=(3, 2, 77, 37)), 1, {G: 1, "CUSTOM:add_bcast": 1}, {}),
            ("fuse_matmul_bias: 1-D input [100] + residual [37]", linear(a_shape=(100,), then=(37,)), 1,
             {G: 1, "ADD": 1}, {}),
            ("fuse_matmul_bias: residual on the ggml path (ONNX2GGML_GEMM=0)", linear(then=(2, 77, 37)), 1,
             {G: None, "MUL_MAT": 1, "ADD": 2}, {"ONNX2GGML_GEMM": "0"})]


def gemm_cases():
    """CPU gemm kernel (src/kernels/gemm.cpp): products by a constant f32 weight, sizes off its 6x16 tile."""
    G = "CUSTOM:gemm"
    return [("gemm kernel: MatMul by a constant weight, M=77 K=100 N=37", gemm_model("MatMul", (77, 100), 100, 37), 1,
             {G: 1, "MUL_MAT": None, "CUSTOM:pad_rows": None}, {}),
            ("gemm kernel: MatMul, batched A [2, 3, 13, 100]", gemm_model("MatMul", (2, 3, 13, 100), 100, 37), 1,
             {G: 1, "MUL_MAT": None}, {}),
            ("gemm kernel: Gemm transB=1 with bias row (added in the kernel)",
             gemm_model("Gemm", (77, 100), 100, 37, trans_b=True, bias=(37,)), 1, {G: 1, "MUL_MAT": None, "ADD": None}, {}),
            ("gemm kernel: Gemm transB=0, alpha/beta and a [M, N] C",
             gemm_model("Gemm", (77, 100), 100, 37, bias=(77, 37), alpha=0.5, beta=2.0), 1, {G: 1, "ADD": 1}, {}),
            ("gemm kernel: K=3000 spans several K blocks, N=50", gemm_model("MatMul", (1, 20, 3000), 3000, 50), 1,
             {G: 1}, {}),
            ("gemm kernel: weight is a graph input: ggml's MUL_MAT", gemm_model("MatMul", (77, 100), 100, 37, False), 1,
             {G: None, "MUL_MAT": 1}, {}),
            ("gemm kernel: 4 rows, fewer than a tile (a weight has one form whatever M)",
             gemm_model("Gemm", (4, 100), 100, 37, trans_b=True), 1, {G: 1, "MUL_MAT": None}, {}),
            ("gemm kernel: MatMul of a vector [100] by the weight", gemm_model("MatMul", (100,), 100, 37), 1,
             {G: 1, "MUL_MAT": None}, {}),
            ("gemm kernel: ONNX2GGML_GEMM=0 turns it off", gemm_model("MatMul", (77, 100), 100, 37), 1,
             {G: None, "MUL_MAT": 1}, {"ONNX2GGML_GEMM": "0"})]


def reduced_weight_cases():
    """--weights f16|bf16|q8_0 reaching convolutions: (label, (model, feeds), nodes, ops, env, opts). opts: weights,
    tol (rel err against onnxruntime's f32) and size (the graph's weights_mb at most this fraction of the f32
    run's: the weight really is held at the reduced type)."""
    w2, w4 = "CUSTOM:winograd2_input", "CUSTOM:winograd4_input"
    return [("reduced weights: Winograd F(2,3) product by an f16 weight (product [M_out, T, 16]); its f16 forms are "
             "16/9 x 1/2 of the f32 weight, which the f32 product reads as it is",
             conv3x3(2, 64, 20, 20, 24, [1, 1, 1, 1]), 1, {w2: 1, "MUL_MAT": 1, "CUSTOM:winograd2_product": None}, {},
             {"weights": "f16", "tol": 2e-3, "size": 0.9}),
            ("reduced weights: bf16 at a F(4,3) output size takes F(2,3) (F(4,3) magnifies the rounding); its bf16 "
             "forms are 16/9 x 1/2 of the f32 weight, which F(4,3) reads as it is",
             conv3x3(1, 32, 48, 48, 16, [1, 1, 1, 1]), 1, {w2: 1, w4: None}, {},
             {"weights": "bf16", "tol": 1e-2, "size": 0.9}),
            ("reduced weights: im2col product by a q8_0 weight, weight first, no gemm kernel",
             conv3x3(1, 32, 6, 6, 16, [1, 1, 1, 1]), 1,
             {"IM2COL": 1, "MUL_MAT": 1, "CUSTOM:gemm": None, "CUSTOM:transpose": 1}, {},
             {"weights": "q8_0", "tol": 2e-2, "size": 0.3}),
            ("reduced weights: 1x1 conv by an f16 weight: im2col product, not the f32 pointwise kernel",
             conv_act(None, c=64, m=40), 1, {"MUL_MAT": 1, "CUSTOM:conv_pointwise": None}, {},
             {"weights": "f16", "tol": 2e-3, "size": 0.51}),
            ("reduced weights: 8 input channels (rows of 72, not whole q8_0 blocks): kept f32, F(4,3)",
             conv3x3(1, 8, 48, 48, 16, [1, 1, 1, 1]), 1, {w4: 1}, {}, {"weights": "f16", "tol": 1e-5, "size": 1.0})]


def fixture_fusions(cli):
    """Issue 26's acceptance point: tests/models/vae_decoder_custom.onnx (an SD-style VAE decoder with its own
    GroupNorm and attention modules, exported by torch) fuses every GroupNorm and both attentions, as `run --stats`
    and `info` report, and matches onnxruntime. Returns the number of failures."""
    path = os.path.join(REPO, "tests", "models", "vae_decoder_custom.onnx")
    want = {"GroupNorm": 2, "GroupNorm+SiLU": 5, "Attention": 2}
    feeds = {"latent": np.random.RandomState(11).randn(2, 4, 6, 10).astype(np.float32)}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            stats, rel = run(cli, onnx.load(path), feeds, tmp)
        except RuntimeError as e:
            print(f"FAIL vae_decoder_custom fusions: {str(e).strip().splitlines()[-1]}")
            return 1
    info = subprocess.run([cli, "info", path], capture_output=True, text=True).stdout
    fused = {k: v for k, v in stats.get("fusions", {}).items() if k in want}
    info_ok = all(f"{k} x{v}" in info for k, v in want.items()) and "left unfused: none" in info
    ok = fused == want and not stats.get("unfused") and rel <= 1e-5 and info_ok
    print(f"{'OK  ' if ok else 'FAIL'} vae_decoder_custom: fusions {fused} (want {want}), unfused "
          f"{stats.get('unfused')}, info lines {'match' if info_ok else 'DIFFER'}, rel err {rel:.2e}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build/onnx2ggml"))
    ap.add_argument("--filter", default="", help="run only the cases whose label contains this text")
    a = ap.parse_args()
    x = {"x": np.random.RandomState(1).randn(1, 3, 10, 12).astype(np.float32)}
    failures = 0
    W = "ONNX2GGML_WINOGRAD"
    GN_CONST, GN_CONST_NOAFF, GN_PERM = 1, 1, 35  # float Constant nodes are initializers from load (tidy_graph)
    # (label, (model, feeds), ONNX nodes that must run, {ggml op: count; None = must be absent}, env)
    cases = [("fold_conv_affine: Conv -> BN folds", (conv_bn(False), x), 1, {}, {}),
             ("fold_conv_affine: Conv output also used: no fold", (conv_bn(True), x), 2, {}, {}),
             ("fuse_silu: Mul(x, Sigmoid(x)) becomes one ggml_silu", (silu(False), x), 1, {"SILU": 1}, {}),
             ("fuse_silu: Sigmoid also used: no fusion", (silu(True), x), 2, {"SILU": None}, {}),
             ("fuse_silu: Sigmoid also read inside an If body: no fusion", (subgraph_reader(silu(False), "s"), x), 4,
              {"SILU": None}, {}),
             ("fuse_silu: quick GELU x*Sigmoid(1.702x) becomes silu(1.702x)/1.702", (quick_gelu(), x), 1,
              {"SILU": 1, "SIGMOID": None, "MUL": None}, {}),
             ("fuse_silu: quick GELU with a [1,1,1,1,1] constant (would broadcast x to rank 5): no fusion",
              (quick_gelu((1, 1, 1, 1, 1)), x), 3, {"SILU": None, "SIGMOID": 1}, {}),
             ("fold_conv_affine: Conv output also read inside an If body: no fold",
              (subgraph_reader(conv_bn(False), "c"), x), 4, {}, {}),
             ("fuse_group_norm: 6-node GroupNorm + SiLU becomes one kernel", group_norm(True), 1,
              {"CUSTOM:group_norm": 1, "SILU": 1, "NORM": None, "MUL": None, "ADD": None}, {}),
             ("fuse_group_norm: without SiLU", group_norm(False), 1, {"CUSTOM:group_norm": 1, "SILU": None}, {}),
             ("fuse_group_norm: affine per pixel ([12,10]), not per channel: the norm fuses without it, Mul/Add stay",
              group_norm(False, (12, 10)), 3, {"CUSTOM:group_norm": 1, "MUL": 1, "ADD": 1}, {}),
             ("fuse_group_norm: own GroupNorm, targets from Shape/Gather/Concat, + SiLU", group_norm_own(), 1,
              {"CUSTOM:group_norm": 1, "SILU": 1, "NORM": None, "MUL": None, "ADD": None}, {}),
             ("fuse_group_norm: own GroupNorm, weights as Constant nodes", group_norm_own(const_nodes=True), GN_CONST,
              {"CUSTOM:group_norm": 1, "SILU": 1, "MUL": None, "ADD": None}, {}),
             ("fuse_group_norm: no affine, + SiLU", group_norm_own(affine=False), 1,
              {"CUSTOM:group_norm": 1, "SILU": 1, "MUL": None}, {}),
             ("fuse_group_norm: no affine, Constant-node ones/zeros, no SiLU",
              group_norm_own(affine=False, silu_after=False, const_nodes=True), GN_CONST_NOAFF,
              {"CUSTOM:group_norm": 1, "SILU": None}, {}),
             ("fuse_group_norm: reshape back to [N, C, W, H] (not x's shape): no fusion",
              group_norm_own(back_axes=(0, 1, 3, 2)), GN_PERM, {"CUSTOM:group_norm": None}, {}),
             ("fuse_group_norm: GroupNormalization-21 + SiLU becomes one kernel", group_norm_op(21), 1,
              {"CUSTOM:group_norm": 1, "SILU": 1, "SIGMOID": None, "MUL": None}, {}),
             ("fuse_group_norm: GroupNormalization-18 (per-group scale) + SiLU", group_norm_op(18), 1,
              {"CUSTOM:group_norm": 1, "SILU": 1, "SIGMOID": None}, {}),
             ("fuse_group_norm: GroupNormalization-21 also an output: SiLU stays apart", group_norm_op(21, shared=True),
              2, {"CUSTOM:group_norm": 1}, {}),
             ("fuse_attention: rank-3 [B, T, C], K^T by Transpose [0,2,1], scores / sqrt(C)",
              attention_forms("rank3_div"), 1, {"CUSTOM:attention": 1, "SOFT_MAX": None, "DIV": None, "MUL_MAT": None},
              {}),
             ("fuse_attention: rank-3, divisor a Constant node", attention_forms("rank3_div", const_nodes=True), 1,
              {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("fuse_attention: K transposed in two steps, mask added, then / sqrt(D) (mask scaled too)",
              attention_forms("two_step_k"), 2, {"CUSTOM:attention": 1, "SOFT_MAX": None, "MUL_MAT": None}, {}),
             ("fuse_attention: K^T through a [B*H, S, D] Reshape pair (dynamo, opset 18): read in place, no copy",
              attention_forms("bh_reshape_k"), 1, {"CUSTOM:attention": 1, "CONT": None, "SOFT_MAX": None}, {}),
             ("fuse_attention: [B*H, T, D] heads, Q and K each * D**-0.25", attention_forms("bh_qk"), 1,
              {"CUSTOM:attention": 1, "SOFT_MAX": None, "MUL": None}, {}),
             ("fuse_attention: boolean mask through Where(keep, S, -inf): one kernel, mask Where(keep, 0, -inf)",
              attention_forms("where"), 3, {"CUSTOM:attention": 1, "SOFT_MAX": None, "MUL_MAT": None}, {}),
             ("fuse_attention: Where with a finite fill (-1e4, not an additive mask's equal): no fusion",
              attention_forms("where_finite"), 6, {"CUSTOM:attention": None, "SOFT_MAX": 1}, {}),
             ("fuse_attention: torch's safe softmax Where(IsNaN(p), 0, p), two queries masked everywhere: one kernel",
              attention_forms("where_safe"), 3, {"CUSTOM:attention": 1, "SOFT_MAX": None, "MUL_MAT": None}, {}),
             ("fuse_attention: safe softmax on the ggml path (chunked products; masked rows multiplied by 0)",
              attention_forms("where_safe"), 3, {"SOFT_MAX": 1, "STEP": 2, "CLAMP": 1},
              {"ONNX2GGML_GGML_ATTENTION": "1", "ONNX2GGML_FLASH_ATTENTION": "0"}),
             ("fuse_attention: safe softmax, portable, fast: flash attention with the mask held at f16's minimum",
              attention_forms("where_safe"), 3, {"FLASH_ATTN_EXT": 1, "SOFT_MAX": None, "STEP": 2},
              {"ARGS": "--portable --precision fast"}, {"tol": 3e-3}),
             ("fuse_attention: [B*H, T, D] heads on the ggml path (chunked products)", attention_forms("bh_qk"), 1,
              {"SOFT_MAX": 1, "MUL": None, "MUL_MAT": 2},
              {"ONNX2GGML_GGML_ATTENTION": "1", "ONNX2GGML_FLASH_ATTENTION": "0"}),
             ("fuse_attention: [B*H, T, D] heads on the ggml path: ggml_flash_attn_ext, F32 K and V",
              attention_forms("bh_qk"), 1, {"FLASH_ATTN_EXT": 1, "SOFT_MAX": None, "MUL_MAT": None, "MUL": None},
              {"ONNX2GGML_GGML_ATTENTION": "1"}),
             ("fuse_attention: masked, portable, exact: chunked products (flash attention reads its mask as F16)",
              attention_forms("two_step_k"), 2, {"FLASH_ATTN_EXT": None, "SOFT_MAX": 1}, {"ARGS": "--portable"}),
             ("fuse_attention: masked, portable, fast: flash attention, F16 K, V and mask",
              attention_forms("two_step_k"), 2, {"FLASH_ATTN_EXT": 1, "SOFT_MAX": None}, {"ARGS": "--portable --precision fast"},
              {"tol": 3e-3}),
             ("fuse_attention: Softmax over the queries (axis 1), not the keys: no fusion",
              attention_forms("rank3_div", softmax_axis=1), 5, {"CUSTOM:attention": None, "SOFT_MAX": 1}, {}),
             ("fuse_layer_norm: decomposed LayerNorm (Pow, Div) becomes one ggml_norm", norm_decomposed(), 1,
              {"NORM": 1, "SQRT": None, "DIV": None, "SUB": None, "MEAN": None}, {}),
             ("fuse_layer_norm: LayerNorm over the last two axes, Mul(d, d), weights as Constant nodes, opset 18",
              norm_decomposed(const_nodes=True, axes=(-2, -1), square="mul", opset=18), 1, {"NORM": 1, "SQRT": None},
              {}),
             ("fuse_layer_norm: decomposed RMSNorm (Pow, Div) becomes one ggml_rms_norm", norm_decomposed("rms"), 1,
              {"RMS_NORM": 1, "SQRT": None, "DIV": None}, {}),
             ("fuse_layer_norm: RMSNorm by Mul(x, Reciprocal), Constant weights",
              norm_decomposed("rms", const_nodes=True, inv="recip"), 1, {"RMS_NORM": 1, "SQRT": None}, {}),
             ("fuse_layer_norm: normalized over axis 1 (not the last axes): no fusion", norm_decomposed(axes=(1,)), 8,
              {"NORM": None}, {}),
             ("Attention-23 [B, H, T, D] with a float mask: the fused kernel", attention23(), 1,
              {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("Attention-23 over Transposes of [B, T, H, D] (dynamo, opset 23): heads read in place, no copy",
              attention23(mask=False, heads_from=True), 1, {"CUSTOM:attention": 1, "CONT": None}, {}),
             ("Attention-23 [B, T, H*D] with head counts: the fused kernel", attention23(rank=3, mask=False), 1,
              {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("Attention-23 causal: not the fused kernel's form (ggml softmax)", attention23(causal=True), 1,
              {"CUSTOM:attention": None, "SOFT_MAX": 1}, {}),
             ("fuse_attention: Transpose/Mul/MatMul/Softmax/MatMul becomes one CPU attention kernel",
              attention(False), 4, {"CUSTOM:attention": 1, "SOFT_MAX": None, "MUL": None, "MUL_MAT": None}, {}),
             ("fuse_attention: odd sizes (T=37, S=77, D=24)", attention(False, D=24, T=37), 4,
              {"CUSTOM:attention": 1}, {}),
             ("fuse_attention: ggml path (soft_max_ext with the folded scale)", attention(False), 4,
              {"SOFT_MAX": 1, "MUL": None, "MUL_MAT": 2},
              {"ONNX2GGML_GGML_ATTENTION": "1", "ONNX2GGML_FLASH_ATTENTION": "0"}),
             ("fuse_attention: transposed K also an output: fused, read past it (the Transpose stays for the output)",
              attention(True), 5, {"CUSTOM:attention": 1, "MUL": None}, {}),
             ("fuse_attention: CLIP form (scale Mul after the MatMul, causal mask Add, Casts) becomes one kernel",
              clip_attention(), 4, {"CUSTOM:attention": 1, "SOFT_MAX": None, "ADD": None, "MUL_MAT": None}, {}),
             ("fuse_attention: CLIP form, per-batch mask [2, 1, 37, 37] a graph input, odd T and D",
              clip_attention("input", T=37, D=24), 4, {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("attention kernel: rows masked from a key on stop there (scores, softmax, P V); odd T and D",
              clip_attention("padded", T=45, D=24), 4, {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("fuse_attention: CLIP form, one mask value per key [2, 1, 1, 77]", clip_attention("keys"), 4,
              {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("fuse_attention: CLIP form on the ggml path (scale, mask add, soft_max)", clip_attention("input"), 4,
              {"SOFT_MAX": 1, "ADD": 1, "MUL_MAT": 2}, {"ONNX2GGML_GGML_ATTENTION": "1"}),
             ("fuse_attention: CLIP form, masked scores also an output: no fusion", clip_attention(scores_out=True),
              13, {"CUSTOM:attention": None, "SOFT_MAX": 1}, {}),
             ("fuse_attention: CLIP form, scale a graph input (not a constant): no fusion",
              clip_attention(const_scale=False), 13, {"CUSTOM:attention": None, "SOFT_MAX": 1}, {}),
             ("fuse_gelu: erf GELU (Div form) becomes one vectorized gelu_erf kernel", gelu(True), 1,
              {"CUSTOM:gelu_erf": 1, "GELU_ERF": None}, {}),
             ("fuse_gelu: erf GELU (Mul by 1/sqrt2 form), 14938 values (a tail past the 8-wide vectors)", gelu(False),
              1, {"CUSTOM:gelu_erf": 1}, {}),
             ("fuse_gelu: --portable takes ggml_gelu_erf", gelu(True), 1, {"GELU_ERF": 1, "CUSTOM:gelu_erf": None},
              {"ARGS": "--portable"}),
             ("fuse_gelu: scale 0.25 is not GELU: no fusion", gelu(True, 0.25), 5,
              {"GELU_ERF": None, "CUSTOM:gelu_erf": None}, {}),
             ("fuse_gelu: tanh GELU, Pow(x, 3), (0.5 x)(1 + t), becomes one node", gelu_tanh(), 1,
              {"TANH": 1, "POW": None}, {}),
             ("fuse_gelu: tanh GELU, Mul(x, Mul(x, x)), 0.5 (x (1 + t)), Constant-node weights",
              gelu_tanh("mul", const_nodes=True), 1, {"TANH": 1}, {}),
             ("fuse_gelu: tanh form with kappa 0.05 (not GELU's): no fusion", gelu_tanh(kappa=0.05), 8,
              {"TANH": 1}, {}),
             ("matmul K=40: shared dim padded to 48 for the CPU sgemm", matmul(40), 1, {"CUSTOM:pad_rows": 2, "MUL_MAT": 1}, {}),
             ("matmul K=64: no padding", matmul(64), 1, {"CUSTOM:pad_rows": None}, {}),
             ("conv path: Winograd F(4,3) chosen for a 48x48 output, its 36 products made with their forms "
              "(no stored 4x form)",
              conv3x3(1, 8, 48, 48, 16, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd4_input": 1, "CUSTOM:winograd4_product": 1, "CUSTOM:winograd4_output": 1,
               "CUSTOM:gemm": None, "MUL_MAT": None, "IM2COL": None, "ADD": None}, {}),
             ("conv path: F(4,3) product with its forms: 80 input channels (2 blocks of 64), 225 tiles (2 row blocks), "
              "40 output channels (a lone, part-filled panel)",
              conv3x3(1, 80, 60, 60, 40, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd4_product": 1, "CUSTOM:gemm": None, "MUL_MAT": None}, {}),
             ("conv path: F(4,3) with ONNX2GGML_WINOGRAD_FORMS=stored: the stored 4x form in the gemm kernel",
              conv3x3(1, 8, 48, 48, 16, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd4_product": None, "CUSTOM:gemm": 1, "MUL_MAT": None},
              {"ONNX2GGML_WINOGRAD_FORMS": "stored"}),
             ("conv path: Winograd F(4,3) with ONNX2GGML_GEMM=0: ggml's batched MUL_MAT",
              conv3x3(1, 8, 48, 48, 16, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd4_input": 1, "CUSTOM:gemm": None, "MUL_MAT": 1}, {"ONNX2GGML_GEMM": "0"}),
             ("conv path: im2col kept for a 6x6 output, product in the gemm kernel",
              conv3x3(1, 8, 6, 6, 16, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd4_input": None, "IM2COL": 1, "CUSTOM:gemm": 1, "MUL_MAT": None,
               "CUSTOM:transpose": None}, {}),
             ("conv path: im2col, batch 2, 7 output channels (off the 16-column panel), gemm kernel",
              conv3x3(2, 5, 7, 9, 7, [1, 1, 1, 1]), 1,
              {"IM2COL": 1, "CUSTOM:gemm": 1, "MUL_MAT": None, "CUSTOM:transpose": None}, {}),
             ("conv path: im2col with ONNX2GGML_GEMM=0: ggml's product", conv3x3(1, 8, 6, 6, 16, [1, 1, 1, 1]), 1,
              {"IM2COL": 1, "CUSTOM:gemm": None, "MUL_MAT": 1}, {"ONNX2GGML_GEMM": "0"}),
             ("conv path: forced F(4,3), odd sizes, batch 2, no bias, 7 output channels (a padded panel)",
              conv3x3(2, 5, 13, 11, 7, [1, 1, 1, 1], False),
              1, {"CUSTOM:winograd4_input": 1, "CUSTOM:winograd4_output": 1, "CUSTOM:winograd4_product": 1,
                  "IM2COL": None}, {W: "4"}),
             ("conv path: forced F(2,3), no padding", conv3x3(1, 6, 9, 14, 5, [0, 0, 0, 0]), 1,
              {"CUSTOM:winograd2_input": 1, "CUSTOM:winograd2_product": 1, "CUSTOM:winograd2_output": 1,
               "IM2COL": None}, {W: "2"}),
             ("conv path: F(2,3) at 20x20, batch 2, 144 input channels (2 blocks), its 16 products made with their "
              "forms", conv3x3(2, 144, 20, 20, 40, [1, 1, 1, 1]), 1,
              {"CUSTOM:winograd2_product": 1, "CUSTOM:gemm": None, "MUL_MAT": None}, {}),
             ("conv path: forced F(4,3), asymmetric pads", conv3x3(1, 6, 10, 10, 4, [0, 1, 2, 0]), 1,
              {"CUSTOM:winograd4_output": 1, "IM2COL": None}, {W: "4"}),
             ("conv path: forced im2col", conv3x3(1, 8, 48, 48, 16, [1, 1, 1, 1]), 1, {"CUSTOM:winograd4_output": None, "IM2COL": 1},
              {W: "0"}),
             ("conv path: depthwise 3x3 stride 1 kernel", depthwise(1, [1, 1, 1, 1]), 1,
              {"CUSTOM:depthwise": 1, "CONV_2D_DW": None, "ADD": None}, {}),
             ("conv path: depthwise 3x3 stride 2, asymmetric pads, no bias", depthwise(2, [0, 1, 1, 0], bias=False),
              1, {"CUSTOM:depthwise": 1}, {}),
             ("conv path: depthwise 5x5 stride 2", depthwise(2, [2, 2, 2, 2], k=5), 1, {"CUSTOM:depthwise": 1}, {}),
             # CPU kernel tiles (AVX2 / AVX-512 register blocking): edges of every tile
             ("attention kernel: D=80, T=130 (3 query blocks, last one 2 rows; 80 value columns)",
              attention(False, D=80, T=130), 4, {"CUSTOM:attention": 1, "SOFT_MAX": None}, {}),
             ("group_norm kernel: 6068 values a group (two 4096 blocks, a tail past the 16 lanes)",
              group_norm(True, hw=(37, 41)), 1, {"CUSTOM:group_norm": 1}, {})]
    cases += conv_act_cases()
    cases += gemm_cases()
    cases += linear_cases()
    cases += reduced_weight_cases()
    cases += affine_fold_cases()
    cases += hard_swish_cases()
    cases += scalar_affine_cases()
    cases += clip_cases()
    cases += gelu_erf_cases()
    cases += geglu_attention_cases()
    cases += narrow_product_cases()
    cases += fp16_cases(cases)
    for label, (model, feeds), want_nodes, want_ops, env, *opts in cases:
        if a.filter not in label:
            continue
        opts = opts[0] if opts else {}
        size_note = ""
        with tempfile.TemporaryDirectory() as tmp:
            try:
                stats, rel = run(a.cli, model, feeds, tmp, env, opts.get("weights", "f32"))
                if "size" in opts:
                    f32_mb = run(a.cli, model, feeds, tmp, env)[0]["weights_mb"]
                    size_note = f", weights {stats['weights_mb'] / f32_mb:.3f} of f32's (want <= {opts['size']})"
            except RuntimeError as e:  # e.g. a fused-away value a subgraph still reads
                failures += 1
                print(f"FAIL {label}: {str(e).strip().splitlines()[-1]}")
                continue
        ops = stats.get("ggml_ops", {})
        bad_ops = [f"{op}={ops.get(op, 0)} (want {'none' if n is None else n})" for op, n in want_ops.items()
                   if (n is None and ops.get(op, 0)) or (n is not None and ops.get(op, 0) != n)]
        tol = opts.get("tol", 1e-5)
        ok = (stats["nodes"] == want_nodes and rel <= tol and not bad_ops and
              ("size" not in opts or stats["weights_mb"] <= opts["size"] * f32_mb + 1e-9))
        failures += not ok
        print(f"{'OK  ' if ok else 'FAIL'} {label}: {stats['nodes']} node(s) ran (want {want_nodes}), rel err {rel:.2e}"
              + (f" (tol {tol:g})" if tol != 1e-5 else "") + size_note
              + (f"; ggml ops: {', '.join(bad_ops)}" if bad_ops else ""))
    if a.filter in "vae_decoder_custom fusions":
        failures += fixture_fusions(a.cli)
    print("pass tests: " + ("all passed" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
