"""--device-memory (SessionOptions::device_memory) on a GPU device: the small SD 1.5 UNet under a budget against the
unlimited run of the same device, which is the reference (docs/backends.md, "Small GPUs").

Cases, each a fresh `onnx2ggml run` with --stats:
  * unlimited: the reference outputs, and the weight bytes the graph reads (weights_mb);
  * --device-memory at half the unlimited run's device compute buffer, which one attention chunk fills: no cut
    into segments fits, so the graph is built again with smaller attention chunks and im2col bands (a line says
    so); within 1e-5 of the output's range, compute buffer + device weights within the budget;
  * --device-memory at half the weights, where that exceeds the compute buffer (the full-size UNet): one piece,
    some weights on the device, the others copied;
  * --device-memory at the compute buffer plus half the weights: one piece, 0 < device_weight_bytes <= half, the
    other weights copied; outputs bit-identical;
  * --device-memory abc: refused in one line naming the option;
  * --device CPU with --device-memory: refused in one line (the CPU's memory is the host's: --max-memory caps it);
  * a graph of 16 live 4 MB tensors (skip connections) at 3/8 of its compute buffer: it runs in segments (stats
    "segments" >= 2, a line says so), the tensors crossing a cut carried through host memory; outputs, one of them
    made in an early segment, bit-identical to the unlimited run.
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


def skips_model(path: str, n: int = 16, size: int = 1 << 20) -> None:
    """n tensors of `size` floats, each kept alive to the end (as a UNet's skip connections), then summed in reverse:
    its compute buffer holds all of them, while segments of it need only a few."""
    from onnx import TensorProto, helper, numpy_helper
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Mul", [prev, "c"], [f"a{i}"]))
        prev = f"a{i}"
    acc = f"a{n - 1}"
    for i in range(n - 2, -1, -1):
        nodes.append(helper.make_node("Add", [acc, f"a{i}"], [f"s{i}"]))
        acc = f"s{i}"
    nodes.append(helper.make_node("Identity", [acc], ["y"]))
    c = numpy_helper.from_array(np.linspace(0.9, 1.1, size, dtype=np.float32), "c")
    g = helper.make_graph(nodes, "skips", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size]),
                           helper.make_tensor_value_info(f"a{n // 2}", TensorProto.FLOAT, [size])], [c])
    import onnx
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)


def segments_case(tmp: str, check, args) -> None:
    """A graph whose compute buffer does not fit the budget but segments of it do: bit-identical, in segments."""
    model = os.path.join(tmp, "skips.onnx")
    skips_model(model)
    np.save(os.path.join(tmp, "skips_x.npy"), np.random.RandomState(0).rand(1 << 20).astype(np.float32))

    def run(tag, extra):
        out = os.path.join(tmp, tag)
        p = subprocess.run([args.cli, "run", model, "--device", args.device, "-t", str(args.threads), "-i",
                            f"x={os.path.join(tmp, 'skips_x.npy')}", "-o", out, "--stats", out + ".json", *extra],
                           capture_output=True, text=True, timeout=600)
        if p.returncode:
            return p, None, None
        return p, json.load(open(out + ".json")), {o: np.load(os.path.join(out, o + ".npy")) for o in ("y", "a8")}

    p, ref_stats, ref = run("skips", [])
    check(p.returncode == 0, f"skips, unlimited: exit {p.returncode} {p.stderr.strip()[-300:]}")
    if p.returncode:
        return
    full = ref_stats["backends"][args.device]["buffer_bytes"]
    budget = full * 3 // 8
    p, st, outs = run("skips_budget", ["--device-memory", str(budget)])
    check(p.returncode == 0, f"skips at {budget} bytes (unlimited: {full}): exit {p.returncode} {p.stderr.strip()[-300:]}")
    if p.returncode:
        return
    held = st["backends"][args.device]["buffer_bytes"] + st["device_weight_bytes"]
    print(f"      skips: {st['segments']} segments, largest + leaves {st['backends'][args.device]['buffer_bytes']} B "
          f"(unlimited {full} B), {st['carried_bytes']} B carried per run, {st['splits']} splits")
    check(st["segments"] >= 2 and st["carried_bytes"] > 0, f"skips: runs in segments ({st['segments']})")
    check(held <= budget, f"skips: largest segment + leaves + device weights {held} <= {budget}")
    check(all(np.array_equal(outs[o], ref[o]) for o in ref), "skips: both outputs bit-identical to the unlimited run "
          "(one made in an early segment)")
    check("segments" in p.stderr, "skips: a line says it runs in segments")


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
        # Below the compute buffer, which one attention chunk of the small UNet fills: no cut into segments fits, so
        # the graph is built again with smaller chunks and bands; the same within rounding, not bit for bit.
        budget = full // 2
        p, s_lean, lean, secs = run("half the compute buffer", ["--device-memory", str(budget)])
        check(p.returncode == 0, f"half the compute buffer ({budget} bytes, {secs:.1f} s): exit {p.returncode}")
        if s_lean:
            held = device_buffer(s_lean) + s_lean["device_weight_bytes"]
            err = max(float(np.abs(lean[o] - ref[o]).max() / max(np.abs(ref[o]).max(), 1e-30)) for o in ref)
            check(err <= 1e-5, f"half the compute buffer: max error {err:.2e} of the output's range <= 1e-5")
            check(held <= budget, f"half the compute buffer: compute buffer + device weights {held} <= {budget}")
            check("built again" in p.stderr, "half the compute buffer: a line says the graph was built again")
            check(on_cpu(s_lean) == 0, f"half the compute buffer: no node computes on the CPU ({on_cpu(s_lean)})")
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

        segments_case(tmp, check, args)

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
