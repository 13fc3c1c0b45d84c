#!/usr/bin/env python3
"""Speed of our CPU kernels on their own, as a share of the machine's FMA peak: each case is a one-node ONNX model
(a MatMul by a constant weight, or a convolution) run with `onnx2ggml bench --profile`; the kernel's time is its
ggml op's line in the profile (the minimum over --reps processes). Prints GFLOP/s and % of peak. Not a test.

Usage: .venv/bin/python scripts/kernel_bench.py [--cli build/onnx2ggml] [--threads 1,2] [--filter REGEX]
       [--peak1 GF --peak2 GF] [--reps 3] [--runs 10]
Without --peakN the peak is measured with scripts/peak_flops.sh N. Figures: gemm counts 2*M*K*N; a Winograd
product counts its real multiplies (2 * tiles * A^2 * CI * CO); a conv's whole time counts the direct conv's flops.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, M, K, N): Y[M, N] = X[M, K] W[K, N]
GEMMS = [("gemm 1024^3", 1024, 1024, 1024), ("gemm 2048^3", 2048, 2048, 2048),
         ("gemm unet 4096x320x320", 4096, 320, 320), ("gemm unet 1024x640x640", 1024, 640, 640),
         ("gemm unet 4096x320x2560", 4096, 320, 2560), ("gemm unet 4096x1280x320", 4096, 1280, 320),
         ("gemm clip 77x768x3072", 77, 768, 3072), ("gemm clip 77x768x768", 77, 768, 768),
         ("gemm clip 77x3072x768", 77, 3072, 768)]
# (name, N, C, H, W, CO, k, stride, groups)
CONVS = [("conv3x3 unet 320@64", 1, 320, 64, 64, 320, 3, 1, 1), ("conv3x3 unet 640@32", 2, 640, 32, 32, 640, 3, 1, 1),
         ("conv3x3 vae 512@128", 1, 512, 128, 128, 512, 3, 1, 1), ("conv3x3 vae 256@256", 1, 256, 256, 256, 256, 3, 1, 1),
         ("conv3x3 resnet 64@56", 1, 64, 56, 56, 64, 3, 1, 1), ("conv3x3 resnet 256@14", 1, 256, 14, 14, 256, 3, 1, 1),
         ("conv1x1 mobilenet 96->24@56", 1, 96, 56, 56, 24, 1, 1, 1),
         ("conv1x1 mobilenet 32->192@28", 1, 32, 28, 28, 192, 1, 1, 1),
         ("conv1x1 squeeze 128->16@55", 1, 128, 55, 55, 16, 1, 1, 1),
         ("conv1x1 unet 320->320@64", 1, 320, 64, 64, 320, 1, 1, 1),
         ("dw3x3 mobilenet 144@56", 1, 144, 56, 56, 144, 3, 1, 144),
         ("dw3x3s2 mobilenet 144@56", 1, 144, 56, 56, 144, 3, 2, 144),
         ("conv3x3s2 resnet 64@112", 1, 64, 112, 112, 64, 3, 2, 1),
         ("conv7x7s2 resnet 3@224", 1, 3, 224, 224, 64, 7, 2, 1)]


def gemm_model(M, K, N, path):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((K, N), dtype=np.float32) / np.sqrt(K), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": rng.standard_normal((M, K), dtype=np.float32)}


def conv_model(N, C, H, W, CO, k, s, groups, path):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((CO, C // groups, k, k), dtype=np.float32) / np.sqrt(C * k * k / groups), "w")
    b = numpy_helper.from_array(rng.standard_normal(CO, dtype=np.float32), "b")
    p = k // 2
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[k, k], pads=[p] * 4, strides=[s, s],
                            group=groups)
    OH, OW = (H + 2 * p - k) // s + 1, (W + 2 * p - k) // s + 1
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, C, H, W])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N, CO, OH, OW])], [w, b])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"x": rng.standard_normal((N, C, H, W), dtype=np.float32)}, 2.0 * N * OH * OW * CO * (C // groups) * k * k, (N, OH, OW, C, CO)


def profile(cli, model, feeds, threads, runs, tmp):
    """(median wall ms, {ggml op: ms}) of one `onnx2ggml bench --profile` process."""
    args = [cli, "bench", model, "--threads", str(threads), "--runs", str(runs), "--warmup", "2", "--profile"]
    for name, arr in feeds.items():
        p = os.path.join(tmp, name + ".npy")
        np.save(p, arr)
        args += ["--input", f"{name}={p}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    ops, in_ops = {}, False
    for line in out.splitlines():
        if line.startswith("time per ggml op"):
            in_ops = True
        elif in_ops and (m := re.match(r"\s*([\d.]+) ms\s+[\d.]+%\s+(.*)", line)):
            ops[m.group(2).strip()] = float(m.group(1))
    return float(re.search(r"min_ms=([\d.]+)", out).group(1)), ops


def best(cli, model, feeds, threads, runs, reps, tmp):
    wall, ops = None, {}
    for _ in range(reps):
        w, o = profile(cli, model, feeds, threads, runs, tmp)
        wall = w if wall is None else min(wall, w)
        for k, v in o.items():
            ops[k] = min(ops.get(k, v), v)
    return wall, ops


def peak(threads):
    out = subprocess.run([os.path.join(REPO, "scripts", "peak_flops.sh"), str(threads)], capture_output=True,
                         text=True, check=True).stdout
    return float(re.search(r"([\d.]+) GFLOP/s", out).group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--filter", default="")
    ap.add_argument("--reps", type=int, default=3, help="processes per case (the minimum is kept)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--peak1", type=float)
    ap.add_argument("--peak2", type=float)
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    peaks = {t: getattr(a, f"peak{t}", None) or peak(t) for t in threads}
    print("peak: " + ", ".join(f"{peaks[t]:.1f} GFLOP/s on {t} thread(s)" for t in threads))
    print(f"{'case':34} {'thr':>3} {'kernel':24} {'ms':>9} {'GFLOP/s':>8} {'%peak':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.onnx")
        for name, M, K, N in GEMMS:
            if not re.search(a.filter, name):
                continue
            feeds = gemm_model(M, K, N, model)
            for t in threads:
                _, ops = best(a.cli, model, feeds, t, a.runs, a.reps, tmp)
                ms = ops.get("CUSTOM:gemm") or max(ops.values())
                gf = 2.0 * M * K * N / ms / 1e6
                print(f"{name:34} {t:3} {'gemm':24} {ms:9.3f} {gf:8.1f} {100 * gf / peaks[t]:6.1f}", flush=True)
        for name, *shape in CONVS:
            if not re.search(a.filter, name):
                continue
            feeds, flops, (n, oh, ow, ci, co) = conv_model(*shape, model)
            for t in threads:
                wall, ops = best(a.cli, model, feeds, t, a.runs, a.reps, tmp)
                for op, ms in sorted(ops.items(), key=lambda kv: -kv[1]):
                    if ms < 0.02 * sum(ops.values()):
                        continue
                    if m := re.search(r"winograd(\d)_product", op):
                        tile, a2 = int(m.group(1)), (int(m.group(1)) + 2) ** 2
                        gf = 2.0 * n * -(-oh // tile) * -(-ow // tile) * a2 * ci * co / ms / 1e6
                        print(f"{name:34} {t:3} {op[:24]:24} {ms:9.3f} {gf:8.1f} {100 * gf / peaks[t]:6.1f}")
                    else:
                        print(f"{name:34} {t:3} {op[:24]:24} {ms:9.3f}")
                tot = sum(ops.values())
                gf = flops / tot / 1e6
                print(f"{name:34} {t:3} {'(conv, direct flops)':24} {tot:9.3f} {gf:8.1f} {100 * gf / peaks[t]:6.1f}",
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
