#!/usr/bin/env python3
"""fp16 weights stay fp16 in exact mode, and change nothing but the memory.

One model with FLOAT16 initializers on every product our CPU gemm packs (Conv 3x3 by Winograd F(4,3), Conv 3x3
stride 2 by im2col, Conv 1x1, MatMul, Gemm with transB) and its twin with the same values widened to FLOAT: the
reference. Both run through the CLI; each output must equal the twin's within 1e-6 relative (f16 -> f32 is exact,
so the kernels that widen panels as they load give the same sums), and `--stats` must show the fp16 model's weights
at most 0.6 of the twin's (its packed panels are f16, and its embedding table, read by a Gather of token ids, stays
f16: get_rows widens only the rows it gathers). Then again with --portable (the path other backends take,
which widens every weight): equal outputs there too.

Last, --weights bf16|q8_0 from an f32 file convert weight by weight (issue 29: Flux at full width): a chain of 24
MatMuls whose 384 MB of f32 weights sit in an external file must hold the converted set once in RSS, plus a few f32
weights in flight and what the f32 run holds besides its weights (which must peak above 0.9 of them: the measure
sees the weights).

Usage: tests/fp16_weights_test.py [--cli build/onnx2ggml] [--threads 2]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUTS = ["wino", "im2col", "pointwise", "matmul", "gemm", "embed"]


def model(weights, fp16):
    """x [1, 32, 32, 32] -> five products in a chain, and ids [1, 16] -> rows of the table emb; outputs as float32."""
    t = TensorProto.FLOAT16 if fp16 else TensorProto.FLOAT
    inits = [numpy_helper.from_array(v.astype(np.float16 if fp16 else np.float32), k) for k, v in weights.items()]
    inits.append(numpy_helper.from_array(np.array([48, 256], np.int64), "shape2d"))
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["c1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Conv", ["c2", "w3", "b3"], ["c3"]),
        helper.make_node("Reshape", ["c3", "shape2d"], ["r"]),  # [48, 256], then [256, 48]
        helper.make_node("Transpose", ["r"], ["rt"], perm=[1, 0]),
        helper.make_node("MatMul", ["rt", "w4"], ["m"]),
        helper.make_node("Gemm", ["m", "w5", "b5"], ["g"], transB=1),
        helper.make_node("Gather", ["emb", "ids"], ["e"]),
    ]
    for src, out in zip(["c1", "c2", "c3", "m", "g", "e"], OUTPUTS):
        nodes.append(helper.make_node("Cast", [src], [out], to=TensorProto.FLOAT))
    graph = helper.make_graph(nodes, "fp16_weights", [helper.make_tensor_value_info("x", t, [1, 32, 32, 32]),
                                                      helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 16])],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in OUTPUTS], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(cli, path, x, ids, tmp, tag, threads, extra):
    xin, out, stats = os.path.join(tmp, tag + "_x.npy"), os.path.join(tmp, tag), os.path.join(tmp, tag + ".json")
    idin = os.path.join(tmp, "ids.npy")
    np.save(xin, x)
    np.save(idin, ids)
    cmd = [cli, "run", path, "--input", "x=" + xin, "--input", "ids=" + idin, "--output-dir", out, "--stats", stats,
           "--threads", str(threads)] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL {tag}: {r.stderr.strip()}")
    with open(stats) as f:
        mb = json.load(f)["weights_mb"]
    return {o: np.load(os.path.join(out, o + ".npy")) for o in OUTPUTS}, mb


def stream_check(cli, tmp, threads):
    """Peak RSS (`bench`'s, VmHWM: getrusage's would carry this process's) and error of --weights f32|bf16|q8_0 on
    a 384 MB f32 MatMul chain. Returns the number of failures."""
    rng = np.random.default_rng(29)
    n, k = 24, 2048
    ws = [(rng.standard_normal((k, k), np.float32) / np.sqrt(k)).astype(np.float32) for _ in range(n)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"h{i}", f"w{i}"], [f"h{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(nodes, "stream", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, k])],
                              [helper.make_tensor_value_info(f"h{n}", TensorProto.FLOAT, [8, k])],
                              [numpy_helper.from_array(w, f"w{i}") for i, w in enumerate(ws)])
    path, xin = os.path.join(tmp, "stream.onnx"), os.path.join(tmp, "sx.npy")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path,
              save_as_external_data=True, all_tensors_to_one_file=True, location="stream.data")
    x = rng.standard_normal((8, k)).astype(np.float32)
    ref = x.astype(np.float64)
    for w in ws:
        ref = ref @ w.astype(np.float64)
    np.save(xin, x)
    f32_mb, failed, base = n * k * k * 4 / 1048576, 0, 0.0
    # bytes per f32 weight byte, and the error bound of each type
    for wtype, size, tol in (("f32", 1.0, 1e-5), ("bf16", 0.5, 2e-2), ("q8_0", 34 / 128, 5e-2)):
        out = os.path.join(tmp, "s_" + wtype)
        common = [path, "--input", "x=" + xin, "--threads", str(threads), "--weights", wtype]
        r = subprocess.run([cli, "run", *common, "--output-dir", out], capture_output=True, text=True)
        b = subprocess.run([cli, "bench", *common, "--runs", "1", "--warmup", "0"], capture_output=True, text=True)
        if r.returncode or b.returncode:
            sys.exit(f"FAIL weight streaming {wtype}: {(r.stderr + b.stderr).strip()}")
        rss = float(re.search(r"peak RSS: ([\d.]+) MB", b.stdout).group(1))
        y = np.load(os.path.join(out, f"h{n}.npy"))
        err = float(np.abs(y - ref).max() / np.abs(ref).max())
        if wtype == "f32":  # in place from the mapping: what the process holds besides the weights
            base = rss - f32_mb
            ok, bound = rss > 0.9 * f32_mb, f"above 0.9x the f32 weights' {f32_mb:.0f} MB"
        else:  # the converted set once, and a few f32 weights (16 MB each) in flight
            limit = base + size * f32_mb + 3 * f32_mb / n
            ok, bound = rss < limit, f"at most {limit:.0f} MB: the converted {size * f32_mb:.0f} MB once"
        ok = ok and err <= tol
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} weights {wtype:5s} from the f32 file: peak RSS {rss:.0f} MB ({bound}), "
              f"relative error vs numpy {err:.2e} (at most {tol:g})")
    return failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    rng = np.random.default_rng(16)
    shapes = {"w1": (32, 32, 3, 3), "b1": (32,), "w2": (64, 32, 3, 3), "b2": (64,), "w3": (48, 64, 1, 1),
              "b3": (48,), "w4": (48, 160), "w5": (96, 160), "b5": (96,), "emb": (8192, 64)}
    # Values that f16 holds exactly: the twin's f32 weights are the fp16 model's, widened.
    weights = {k: (rng.standard_normal(s) * 0.2).astype(np.float16).astype(np.float32) for k, s in shapes.items()}
    x = rng.standard_normal((1, 32, 32, 32)).astype(np.float16)
    ids = rng.integers(0, 8192, (1, 16)).astype(np.int64)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        p16, p32 = os.path.join(tmp, "fp16.onnx"), os.path.join(tmp, "fp32.onnx")
        onnx.save(model(weights, True), p16)
        onnx.save(model(weights, False), p32)
        for mode, extra in (("native", []), ("portable", ["--portable"])):
            y16, mb16 = run(args.cli, p16, x, ids, tmp, mode + "16", args.threads, extra)
            y32, mb32 = run(args.cli, p32, x.astype(np.float32), ids, tmp, mode + "32", args.threads, extra)
            for o in OUTPUTS:
                err = float(np.max(np.abs(y16[o] - y32[o])) / max(float(np.max(np.abs(y32[o]))), 1e-30))
                ok = y16[o].shape == y32[o].shape and err <= 1e-6
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {mode:8s} {o:9s} relative error vs the f32-widened model {err:.2e}")
            if mode == "native":
                ok = mb16 <= 0.6 * mb32
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {mode:8s} weights {mb16:.3f} MB fp16, {mb32:.3f} MB widened "
                      f"({mb16 / mb32:.2f}; at most 0.6)")
        failed += stream_check(args.cli, tmp, args.threads)
    print("fp16 weights:", "FAILED" if failed else "passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
