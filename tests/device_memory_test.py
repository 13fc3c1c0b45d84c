"""--device-memory (SessionOptions::device_memory) on a GPU device: the small SD 1.5 UNet under a budget against the
unlimited run of the same device, which is the reference (docs/backends.md, "Small GPUs").

Cases, each a fresh `onnx2ggml run` with --stats:
  * unlimited: the reference outputs, and the weight bytes the graph reads (weights_mb);
  * --device-memory at half the unlimited run's device compute buffer: the graph runs in segments whose largest
    buffer fits (stats "segments" >= 2, a line on stderr says so), the tensors crossing a cut carried through host
    memory and weights copied in per run; outputs bit-identical;
  * --device-memory at half the weights, where that exceeds the compute buffer (the full-size UNet): one piece,
    some weights on the device, the others copied;
  * --device-memory at the compute buffer plus half the weights: one piece, 0 < device_weight_bytes <= half, the
    other weights copied; outputs bit-identical;
  * --device-memory abc: refused in one line naming the option;
  * --device CPU with --device-memory: refused in one line (the CPU's memory is the host's: --max-memory caps it).
No node may compute on the CPU in any run (the same device computes every node, whence identical results).

With --manifest of the full-size parts, scripts/gpu_bench.sh runs the same cases on CUDA.

Usage: GGML_VK_VISIBLE_DEVICES=0 .venv/bin/python tests/device_memory_test.py [--cli build-vulkan/onnx2ggml]
           [--device Vulkan0] [--threads 2] [--manifest tests/models/sd15_small/manifest.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import sd15_data

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
MANIFEST = os.path.join(TESTS, "models", "sd15_small", "manifest.json")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build-vulkan", "onnx2ggml"))
    ap.add_argument("--device", default="Vulkan0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--manifest", default=MANIFEST, help="another SD 1.5 manifest (the full-size parts on a GPU)")
    args = ap.parse_args()
    manifest = json.load(open(args.manifest))
    part = next(p for p in manifest["parts"] if p["name"] == "unet")
    model = os.path.join(os.path.dirname(args.manifest), part["file"])
    failures = []

    def check(ok: bool, what: str) -> None:
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        feeds = sd15_data.make_inputs(f"{manifest['prefix']}_unet", part["inputs"], part["cases"][0], 0)
        inputs = []
        for name, arr in feeds.items():
            np.save(os.path.join(tmp, name + ".npy"), arr)
            inputs += ["-i", f"{name}={os.path.join(tmp, name + '.npy')}"]

        def run(tag: str, extra: list, device: str = args.device):
            out = os.path.join(tmp, tag)
            cmd = [args.cli, "run", model, "--device", device, "-t", str(args.threads), *inputs, "-o", out,
                   "--stats", out + ".json", *extra]
            t0 = time.time()
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            secs = time.time() - t0
            if p.returncode != 0:
                return p, None, None, secs
            stats = json.load(open(out + ".json"))
            outs = {o: np.load(os.path.join(out, o + ".npy")) for o in part["outputs"]}
            return p, stats, outs, secs

        def on_cpu(stats) -> int:
            return stats["backends"].get("CPU", {}).get("compute_nodes", 0)

        p, ref_stats, ref, secs = run("unlimited", [])
        check(p.returncode == 0, f"unlimited run ({secs:.1f} s): exit {p.returncode}"
              + (f" {p.stderr.strip()[-300:]}" if p.returncode else ""))
        if p.returncode != 0:
            return 1
        half = int(ref_stats["weights_mb"] * 1048576) // 2
        check(ref_stats["copied_weight_bytes"] == 0, "unlimited: no weight bytes copied")
        print(f"      weights read {ref_stats['weights_mb'] * 1048576:.0f} bytes; compute buffer "
              f"{ref_stats['compute_buffer_mb']:.1f} MB; compute {ref_stats['compute_ms']:.0f} ms")

        def budget_case(tag: str, budget: int):
            p, stats, outs, secs = run(tag, ["--device-memory", str(budget)])
            check(p.returncode == 0, f"{tag} ({budget} bytes, {secs:.1f} s): exit {p.returncode}"
                  + (f" {p.stderr.strip()[-300:]}" if p.returncode else ""))
            if p.returncode != 0:
                return None, p
            same = all(np.array_equal(outs[o], ref[o]) for o in part["outputs"])
            check(same, f"{tag}: outputs bit-identical to the unlimited run")
            check(on_cpu(stats) == 0, f"{tag}: no node computes on the CPU ({on_cpu(stats)})")
            print(f"      device weights {stats['device_weight_bytes']} B, host weights "
                  f"{stats['host_weight_bytes']} B, "
                  f"copied per run {stats['copied_weight_bytes']} B, {stats['splits']} splits, compute "
                  f"{stats['compute_ms']:.0f} ms (unlimited {ref_stats['compute_ms']:.0f} ms)")
            return stats, p

        def device_buffer(stats) -> int:  # the device's compute buffer (compute_buffer_mb adds the CPU's)
            return stats["backends"][args.device]["buffer_bytes"]

        full = device_buffer(ref_stats)
        check(ref_stats["segments"] == 0, "unlimited: the graph runs in one piece")
        # Below the compute buffer: the graph runs in segments that fit, their carried tensors through host memory.
        budget = full // 2
        s_seg, p = budget_case("half the compute buffer", budget)
        if s_seg:
            held = device_buffer(s_seg) + s_seg["device_weight_bytes"]
            check(s_seg["segments"] >= 2, f"half the compute buffer: runs in segments ({s_seg['segments']})")
            check(held <= budget, f"half the compute buffer: largest segment + device weights {held} <= {budget}")
            check(s_seg["carried_bytes"] > 0 and s_seg["copied_weight_bytes"] > 0,
                  f"half the compute buffer: {s_seg['carried_bytes']} B carried, {s_seg['copied_weight_bytes']} B of "
                  "weights copied per run")
            check("runs in" in p.stderr and "segments" in p.stderr, "half the compute buffer: a line says so")
        if half > full:  # a full-size UNet: the compute buffer and some weights fit in half the weights
            s_half, _ = budget_case("half the weights", half)
            if s_half:
                held = device_buffer(s_half) + s_half["device_weight_bytes"]
                check(s_half["copied_weight_bytes"] > 0 and s_half["segments"] == 0,
                      "half the weights: one piece, weight bytes copied from host memory")
                check(0 < s_half["device_weight_bytes"] and held <= half,
                      f"half the weights: compute buffer + device weights {held} <= budget {half}")
        budget = full + half
        s_part, _ = budget_case("compute buffer + half the weights", budget)
        if s_part:
            check(s_part["segments"] == 0, "partial: the graph runs in one piece")
            check(0 < s_part["device_weight_bytes"] <= half,
                  f"partial: 0 < device weights {s_part['device_weight_bytes']} <= {half}")
            held = device_buffer(s_part) + s_part["device_weight_bytes"]
            check(held <= budget, f"partial: compute buffer + device weights {held} <= budget {budget}")
            check(0 < s_part["copied_weight_bytes"], "partial: the other weights copied in")

        def refused(tag: str, p, *needles) -> None:
            err = p.stderr.strip().splitlines()
            last = err[-1] if err else ""
            check(p.returncode != 0 and last.startswith("onnx2ggml: error:") and all(n in last for n in needles)
                  and sum(l.startswith("onnx2ggml: error:") for l in err) == 1,
                  f"{tag}: refused in one line: '{last[:200]}'")

        refused("--device-memory abc", run("abc", ["--device-memory", "abc"])[0], "--device-memory", "abc")
        refused("--device CPU --device-memory 1G", run("cpu", ["--device-memory", "1G"], device="CPU")[0],
                "device_memory", "CPU")
    print("all passed" if not failures else f"{len(failures)} FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
