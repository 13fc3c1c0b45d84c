#!/usr/bin/env python3
"""Reduced-precision weights (`--weights f16|bf16|q8_0`) against f32: error and speed, side by side.

For one ONNX model and its inputs, runs `onnx2ggml run` with each weight type and compares every output with
the f32 output: max abs error, max relative error (max abs err / max |f32|) and PSNR over the f32 output's
range. Then times each with `onnx2ggml bench` (same threads, one after the other) and prints a table.

Usage: .venv/bin/python scripts/precision.py MODEL.onnx --input NAME=FILE.npy ... [--threads 2] [--runs 3]
          [--types f16,bf16,q8_0]
"""
from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--cli", default=os.path.join(REPO, "build/onnx2ggml"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--types", default="f16,bf16,q8_0")
    a = ap.parse_args()
    ins = sum([["--input", i] for i in a.input], [])
    types = ["f32"] + [t for t in a.types.split(",") if t and t != "f32"]
    outs, times = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in types:
            d = os.path.join(tmp, t)
            r = subprocess.run([a.cli, "run", a.model, *ins, "-o", d, "--threads", str(a.threads), "--weights", t],
                               capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"{t}: {r.stderr.strip()}")
            outs[t] = {f: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".npy")}
        for t in types:
            r = subprocess.run([a.cli, "bench", a.model, *ins, "--threads", str(a.threads), "--runs", str(a.runs),
                                "--warmup", "1", "--weights", t], capture_output=True, text=True)
            m = re.search(r"median_ms=([\d.]+) min_ms=([\d.]+)", r.stdout)
            times[t] = (float(m.group(1)), float(m.group(2))) if m else (math.nan, math.nan)
    print(f"model: {a.model}, {a.threads} threads, median/min of {a.runs} runs")
    print(f"{'weights':8} {'output':24} {'max abs err':>12} {'max rel err':>12} {'PSNR dB':>8} {'median ms':>10} "
          f"{'min ms':>9} {'speed-up':>8}")
    for t in types:
        for f, ref in outs["f32"].items():
            got = outs[t][f].astype(np.float64)
            ref = ref.astype(np.float64)
            err = np.abs(got - ref)
            rel = err.max() / max(np.abs(ref).max(), 1e-30)
            rng = ref.max() - ref.min()
            mse = float(np.mean(err ** 2))
            psnr = math.inf if mse == 0 else 10 * math.log10(rng ** 2 / mse)
            print(f"{t:8} {f[:-4][:24]:24} {err.max():12.3e} {rel:12.3e} {psnr:8.1f} {times[t][0]:10.1f} "
                  f"{times[t][1]:9.1f} {times['f32'][1] / times[t][1]:8.2f}")


if __name__ == "__main__":
    main()
