#!/usr/bin/env python3
"""One session, several input shapes in turn (a new one, then an earlier one again), each checked against onnxruntime.

The graph is cached per shape; a convolution's weight is prepared once, when the session opens, in the one form
that the im2col product and both Winograd tiles read (the Winograd forms are made inside the product). This checks
that a new shape builds correct numbers from what an earlier shape left behind (no state leaks across shapes), that
no later shape transforms a weight (RunStats transformed_weight_bytes is 0), even one that moves a conv between
im2col, F(2,3) and F(4,3), and that an earlier shape's graph is reused. The tile follows the shape alone, so a
shape's output never depends on what ran before, and it follows the image size, not the batch, so an image gives
the same bits at batch 1 and batch 2.

Usage: .venv/bin/python tests/shape_change_test.py [--cli build/onnx2ggml]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits, nodes, x = [], [], "x"
    for i, (ci, co) in enumerate([(4, 16), (16, 16)]):
        w = (rng.standard_normal((co, ci, 3, 3)) / np.sqrt(ci * 9)).astype(np.float32)
        b = rng.standard_normal(co).astype(np.float32) * 0.1
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes.append(helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        x = f"r{i}"
    g = helper.make_graph(nodes, "shape_change",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, "h", "w"])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", 16, "h", "w"])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def run_sequence(cli: str, shapes, tmp: str) -> bool:
    """Runs `shapes` in one session; each run is checked against onnxruntime and by its stats. A shape's
    expectation: "first", "new" (no weight transformed) or "hit" (cached graph reused, no weight transformed)."""
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((1, 4, h, w)).astype(np.float32) for (h, w), _ in shapes]
    path = os.path.join(tmp, "m.onnx")
    onnx.save(model(), path)
    args = [cli, "run", path, "--threads", "2"]
    for k, f in enumerate(feeds):
        np.save(os.path.join(tmp, f"x{k}.npy"), f)
        args += (["--then"] if k else []) + ["--input", f"x={tmp}/x{k}.npy", "--output-dir", f"{tmp}/out{k}",
                                             "--stats", f"{tmp}/s{k}.json"]
    env = {k: v for k, v in os.environ.items() if k != "ONNX2GGML_WINOGRAD"}  # the session's own choice
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode:
        print("FAIL onnx2ggml run:", r.stderr.strip())
        return False
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ok = True
    for k, (f, (_, expect)) in enumerate(zip(feeds, shapes)):
        want = sess.run(None, {"x": f})[0]
        got = np.load(os.path.join(tmp, f"out{k}", "r1.npy"))
        rel = metrics.errors(want, got).rel if got.shape == want.shape else float("inf")
        with open(os.path.join(tmp, f"s{k}.json")) as fh:
            s = json.load(fh)
        made = s["transformed_weight_bytes"]
        good = rel <= 1e-5
        if expect in ("new", "hit"):
            good &= made == 0
        if expect == "first":  # the second conv's panels (16 x 16 x 9 floats) were made when the session opened
            good &= made < 16 * 16 * 9 * 4
        if expect == "hit":
            good &= s["cache_hit"]
        ok &= good
        print(f"{'OK  ' if good else 'FAIL'} run {k} shape {list(f.shape)} ({expect}): rel err {rel:.2e}, "
              f"weights transformed {made} bytes, cache hit {s['cache_hit']}, build {s['build_ms']:.1f} ms")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    a = ap.parse_args()
    # Per image: output pixels below 256 take im2col, from 256 F(2,3), from 1024 F(4,3); each "new" below that
    # changes the path is marked.
    sequences = [
        [((12, 12), "first"), ((20, 20), "new"), ((12, 12), "hit"), ((24, 24), "new"), ((32, 32), "new"),
         ((20, 20), "hit"), ((40, 40), "new"), ((64, 64), "new"), ((48, 48), "new")],  # 20: F(2,3), 32: F(4,3)
        [((64, 64), "first"), ((12, 20), "new"), ((16, 12), "new"), ((64, 64), "hit")],  # 12x20: im2col
    ]
    ok = True
    for seq in sequences:
        with tempfile.TemporaryDirectory() as tmp:
            ok &= run_sequence(a.cli, seq, tmp)
    for hw in ((32, 32), (20, 20)):
        with tempfile.TemporaryDirectory() as tmp:
            ok &= batch_invariant(a.cli, hw, tmp)
    ok &= prepared_at_open(a.cli)
    ok &= profile_verdict(a.cli)
    return 0 if ok else 1


def batch_invariant(cli: str, hw, tmp: str) -> bool:
    """Image x alone, then x beside another image: the first image's output must be the same bits (before the tile
    followed the image size, batch 2 at 32x32 took F(4,3) and batch 1 F(2,3))."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4) + hw).astype(np.float32)
    feeds = [x, np.concatenate([x, rng.standard_normal(x.shape).astype(np.float32)])]
    path = os.path.join(tmp, "m.onnx")
    onnx.save(model(), path)
    args = [cli, "run", path, "--threads", "2"]
    for k, f in enumerate(feeds):
        np.save(os.path.join(tmp, f"x{k}.npy"), f)
        args += (["--then"] if k else []) + ["--input", f"x={tmp}/x{k}.npy", "--output-dir", f"{tmp}/out{k}"]
    env = {k: v for k, v in os.environ.items() if k != "ONNX2GGML_WINOGRAD"}
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode:
        print("FAIL onnx2ggml run:", r.stderr.strip())
        return False
    one, two = (np.load(os.path.join(tmp, f"out{k}", "r1.npy")) for k in range(2))
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": feeds[1]})[0]
    rel = metrics.errors(want, two).rel
    differ = int(np.count_nonzero(one[0] != two[0]))
    good = differ == 0 and rel <= 1e-5
    print(f"{'OK  ' if good else 'FAIL'} batch invariance at {hw[0]}x{hw[1]}: image 0 at batch 1 and batch 2 differs "
          f"in {differ} values (want 0), batch 2 rel err {rel:.2e}")
    return good


# ---- MatMul/Gemm weights prepared at session open ----
# Their transposed (or --weights f16) forms do not depend on the input shape, so the session makes them when it
# opens: the first run of a session transforms no weight (before, it transposed them during its graph build).

def matmul_model() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((64, 48)).astype(np.float32) / 8  # MatMul B [K, N]: transposed once
    g = rng.standard_normal((64, 32)).astype(np.float32) / 8  # Gemm B, transB=0: transposed once
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Gemm", ["x", "g"], ["z"])]
    graph = helper.make_graph(nodes, "prepared",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 48]),
                               helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 32])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(g, "g")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def prepared_at_open(cli: str) -> bool:
    ok = True
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal((n, 64)).astype(np.float32) for n in (5, 33)]
    for weights, tol in (("f32", 1e-5), ("f16", 2e-3)):  # f16: the host copy goes once the device has it
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(matmul_model(), path)
            args = [cli, "run", path, "--threads", "2", "--weights", weights]
            for k, f in enumerate(feeds):
                np.save(os.path.join(tmp, f"x{k}.npy"), f)
                args += (["--then"] if k else []) + ["--input", f"x={tmp}/x{k}.npy", "--output-dir", f"{tmp}/o{k}",
                                                     "--stats", f"{tmp}/s{k}.json"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode:
                print("FAIL onnx2ggml run:", r.stderr.strip())
                return False
            sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            for k, f in enumerate(feeds):
                with open(os.path.join(tmp, f"s{k}.json")) as fh:
                    made = json.load(fh)["transformed_weight_bytes"]
                want = sess.run(None, {"x": f})
                rel = max(metrics.errors(w, np.load(os.path.join(tmp, f"o{k}", f"{name}.npy"))).rel
                          for name, w in zip("yz", want))
                good = made == 0 and rel <= tol
                ok &= good
                print(f"{'OK  ' if good else 'FAIL'} MatMul/Gemm weights made at open ({weights}), run {k} "
                      f"rows {f.shape[0]}: weights transformed {made} bytes (want 0), rel err {rel:.2e}")
    return ok



# ---- the cliff detector of `bench --profile` ----
# Its last line gives the share of elementwise/REPEAT/CONT time and warns when the run is below 25% of the machine's
# peak while those dominate (issue 32): a chain of per-channel broadcast ops must warn, a MatMul chain must not.

def verdict_model(matmul: bool):
    rng = np.random.default_rng(5)
    if matmul:
        inits = [numpy_helper.from_array(rng.standard_normal((384, 384)).astype(np.float32) / 20, f"w{i}")
                 for i in range(3)]
        nodes = [helper.make_node("MatMul", [["x", "y0", "y1"][i], f"w{i}"], [f"y{i}"]) for i in range(3)]
        shape = [256, 384]
    else:  # the first operand broadcast too, as exporters write `bias - x`
        c = rng.standard_normal((32, 1, 1)).astype(np.float32)
        inits = [numpy_helper.from_array(c + 2, "s"), numpy_helper.from_array(c, "b")]
        nodes = [helper.make_node("Sub", ["b", "x"], ["y0"]), helper.make_node("Mul", ["y0", "s"], ["y1"]),
                 helper.make_node("Div", ["y1", "s"], ["y2"])]
        shape = [2, 32, 96, 96]
    g = helper.make_graph(nodes, "verdict", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y2", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), shape


def profile_verdict(cli: str) -> bool:
    ok = True
    env = {k: v for k, v in os.environ.items() if k != "ONNX2GGML_PEAK_GFLOPS"}
    # (matmul model, peak, whether the warning must appear): a huge peak puts the MatMul chain below 25% too, so
    # only the share of elementwise time keeps it quiet; no peak gives the shares without a judgement.
    for matmul, peak, want in ((False, "200", True), (True, "1e6", False), (False, None, False)):
        with tempfile.TemporaryDirectory() as tmp:
            m, shape = verdict_model(matmul)
            path, x = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "x.npy")
            onnx.save(m, path)
            np.save(x, np.random.default_rng(6).standard_normal(shape).astype(np.float32))
            args = [cli, "bench", path, "--input", f"x={x}", "--threads", "2", "--runs", "2", "--warmup", "0",
                    "--profile"] + (["--peak", peak] if peak else [])
            r = subprocess.run(args, capture_output=True, text=True, env=env)
            line = next((ln for ln in r.stdout.splitlines() if ln.startswith("verdict: ")), "")
            shares = [float(v) for v in re.findall(r"([\d.]+)%", line)[:3]]
            warned = "WARNING" in line
            good = r.returncode == 0 and len(shares) == 3 and warned == want
            good &= (sum(shares) >= 50) == (not matmul) and (peak is not None or "peak unknown" in line)
            ok &= good
            print(f"{'OK  ' if good else 'FAIL'} bench --profile verdict, {'MatMul' if matmul else 'broadcast'} "
                  f"chain, peak {peak}: warning {warned} (want {want}): {line or r.stderr.strip()}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
