#!/usr/bin/env python3
"""One test per optimization pass: the pass must fire (seen in --stats node counts) and the numbers must
stay within the fp32 bar against onnxruntime (max relative error 1e-5).

Usage: .venv/bin/python tests/pass_tests.py [--cli build/onnx2ggml]
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cli, model, feeds, tmp):
    path = os.path.join(tmp, "m.onnx")
    onnx.save(model, path)
    args = [cli, "run", path, "-o", os.path.join(tmp, "out"), "--stats", os.path.join(tmp, "s.json")]
    for k, v in feeds.items():
        np.save(os.path.join(tmp, k + ".npy"), v)
        args += ["--input", f"{k}={os.path.join(tmp, k + '.npy')}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    outs = [np.load(os.path.join(tmp, "out", o.name + ".npy")) for o in model.graph.output]
    rel = max(float(np.abs(g - w).max() / max(np.abs(w).max(), 1e-30)) for g, w in zip(outs, want))
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build/onnx2ggml"))
    a = ap.parse_args()
    x = np.random.RandomState(1).randn(1, 3, 10, 12).astype(np.float32)
    failures = 0
    cases = [("fold_conv_batchnorm: Conv -> BN folds", conv_bn(False), 1),
             ("fold_conv_batchnorm: Conv output also used: no fold", conv_bn(True), 2),
             ("fuse_silu: Mul(x, Sigmoid(x)) becomes one ggml_silu", silu(False), 1),
             ("fuse_silu: Sigmoid also used: no fusion", silu(True), 2)]
    for label, model, want_nodes in cases:
        with tempfile.TemporaryDirectory() as tmp:
            stats, rel = run(a.cli, model, {"x": x}, tmp)
        ok = stats["nodes"] == want_nodes and rel <= 1e-5
        failures += not ok
        print(f"{'OK  ' if ok else 'FAIL'} {label}: {stats['nodes']} node(s) ran (want {want_nodes}), rel err {rel:.2e}")
    print("pass tests: " + ("all passed" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
