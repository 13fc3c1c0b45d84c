#!/usr/bin/env python3
"""The checks scripts/gpu_bench.sh runs on a lent GPU besides the SD 1.5 timings (issue 27):

  tiling   the full-size VAE decoder at a 128x128 latent (a 1024x1024 image) on DEVICE, untiled and with
           --vae-tiling: seam error (max and mean abs, max over the output's range), compute buffers and times;
           fails when the tiled buffer is not below a third of the untiled one or the seam error is above
           diffusers' own tiled decode's (tests/tiling_test.py measured it on the small VAE: 8.2 % of the range).
  compiled a program from `onnx2ggml compile` (the full-size VAE decoder), built with CMAKE_PREFIX_PATH at the
           installed op library and the CUDA ggml, run on DEVICE: the same bits as `onnx2ggml run` on DEVICE.
  summary  one table of the sd15_tests JSON files: error, median time, compute buffer, ggml nodes and copies.

Usage: python3 scripts/gpu_checks.py tiling|compiled --cli CLI --manifest MANIFEST [--device CUDA0] [--prefix P]
       python3 scripts/gpu_checks.py summary FILE.json ...
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from tiling_test import DIFFUSERS_MAX_REL  # noqa: E402  (diffusers' tiled_decode against its untiled decode)


def part_model(manifest: str, name: str) -> str:
    m = json.load(open(manifest))
    return os.path.join(os.path.dirname(manifest), next(p["file"] for p in m["parts"] if p["name"] == name))


def run(cli, model, x, d, tag, device, extra=()):
    np.save(f"{d}/{tag}.npy", x)
    t0 = time.time()
    p = subprocess.run([cli, "run", model, "--input", f"{d}/{tag}.npy", "-o", f"{d}/{tag}", "--stats",
                        f"{d}/{tag}.json", "--device", device, *extra], capture_output=True, text=True, timeout=300)
    if p.returncode:
        raise SystemExit(f"{tag}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    out = f"{d}/{tag}"
    return np.load(os.path.join(out, os.listdir(out)[0])), json.load(open(f"{d}/{tag}.json")), time.time() - t0


def tiling(args) -> int:
    model = part_model(args.manifest, "vae_decoder")
    latent = np.random.default_rng(5).standard_normal((1, 4, 128, 128)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        ref, su, wu = run(args.cli, model, latent, d, "untiled", args.device)
        y, st, wt = run(args.cli, model, latent, d, "tiled", args.device, ["--vae-tiling"])
    diff = np.abs(y - ref)
    rel = float(diff.max() / (ref.max() - ref.min()))
    print(f"VAE decoder 128x128 latent -> {ref.shape[2]}x{ref.shape[3]} on {args.device}:")
    print(f"  untiled: compute buffer {su['compute_buffer_mb']:.1f} MB, compute {su['compute_ms']:.0f} ms "
          f"(run {wu:.1f} s)")
    print(f"  --vae-tiling: {st['tiles']} tiles, compute buffer {st['compute_buffer_mb']:.1f} MB, compute "
          f"{st['compute_ms']:.0f} ms (run {wt:.1f} s); seam error max abs {diff.max():.4f}, mean abs "
          f"{diff.mean():.5f}, max / range {rel:.4f}")
    fails = []
    if st["compute_buffer_mb"] * 3 > su["compute_buffer_mb"]:
        fails.append("tiled compute buffer not below a third of the untiled one")
    if rel > DIFFUSERS_MAX_REL or not np.isfinite(y).all():
        fails.append(f"seam error {rel:.4f} of the range, above diffusers' {DIFFUSERS_MAX_REL}")
    print("tiling:", "ok" if not fails else "FAILED: " + "; ".join(fails))
    return 1 if fails else 0


def compiled(args) -> int:
    from cli_common import bitwise_diff

    model = part_model(args.manifest, "vae_decoder")
    latent = np.random.default_rng(1).standard_normal((1, 4, 32, 32)).astype(np.float32)
    with tempfile.TemporaryDirectory() as d:
        np.save(f"{d}/latent.npy", latent)
        steps = [[args.cli, "compile", model, "-o", f"{d}/src", "--name", "vae"],
                 ["cmake", "-S", f"{d}/src", "-B", f"{d}/b", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                  f"-DCMAKE_PREFIX_PATH={args.prefix}"],
                 ["cmake", "--build", f"{d}/b"],
                 [f"{d}/b/vae", "--input", f"{d}/latent.npy", "--output-dir", f"{d}/prog", "--device", args.device],
                 [args.cli, "run", model, "--input", f"{d}/latent.npy", "--output-dir", f"{d}/run", "--device",
                  args.device]]
        why = None
        for cmd in steps:
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            print(f"  {os.path.basename(cmd[0])} {cmd[1]}: exit {p.returncode} in {time.time() - t0:.1f} s")
            if p.returncode:
                why = f"{os.path.basename(cmd[0])}: exit {p.returncode}: {(p.stdout + p.stderr).strip()[-400:]}"
                break
        why = why or bitwise_diff(f"{d}/prog", f"{d}/run")
    print("compiled program on", args.device + ":", why or "the same bits as `onnx2ggml run`")
    return 1 if why else 0


def summary(files) -> int:
    print(f"{'file':<22} {'part':<13} {'max rel':>9} {'median ms':>10} {'buffer MB':>10} {'nodes':>6} "
          f"{'CONT':>5} {'PERMUTE':>7} {'FA':>4}")
    for f in files:
        if not os.path.exists(f):
            print(f"{os.path.basename(f):<22} missing")
            continue
        for res in json.load(open(f)):
            for run in res["runs"].values():
                st = run.get("stats", {})
                ops = st.get("ggml_ops", {})
                rels = [o[2] for o in run["outputs"] if o[2] is not None]
                bench = run.get("bench_ms") or (float("nan"),)
                print(f"{os.path.basename(f):<22} {res['part']:<13} {max(rels, default=float('nan')):>9.2e} "
                      f"{bench[0]:>10.1f} {st.get('compute_buffer_mb', float('nan')):>10.1f} "
                      f"{st.get('ggml_graph_nodes', 0):>6} {ops.get('CONT', 0):>5} {ops.get('PERMUTE', 0):>7} "
                      f"{ops.get('FLASH_ATTN_EXT', 0):>4}" + (f"  {run['error']}" if run.get("error") else ""))
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "summary":
        return summary(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("check", choices=["tiling", "compiled"])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--device", default="CUDA0")
    ap.add_argument("--prefix", default="", help="CMAKE_PREFIX_PATH for the compiled program")
    args = ap.parse_args()
    return tiling(args) if args.check == "tiling" else compiled(args)


if __name__ == "__main__":
    sys.exit(main())
