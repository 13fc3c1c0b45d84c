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
import re
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


def build_program(tmp: str, model: str, name: str, check):
    """`onnx2ggml compile` of `model`, built against build-vulkan's installed op library: the program's path, or
    None (a failed check says why)."""
    out = os.path.join(tmp, "prog_" + name)
    p = subprocess.run([os.path.join(ROOT, "build-vulkan", "onnx2ggml"), "compile", model, "-o", out, "--name", name],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"program {name}: compiled ({p.stderr.strip()[-300:]})")
    if p.returncode:
        return None
    lib = subprocess.run(["sh", "-c", "ldconfig -p | awk '/libvulkan.so.1 /{print $NF; exit}'"],
                         capture_output=True, text=True).stdout.strip()
    prefix = ";".join(os.path.join(ROOT, d) for d in ("build-vulkan/install", ".deps/ggml-vulkan-install",
                                                      ".deps/vulkan/usr"))
    b = os.path.join(out, "build")
    for cmd in (["cmake", "-S", out, "-B", b, f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release",
                 "-DCMAKE_CXX_FLAGS_RELEASE=-O1",  # the generated code only describes the graph
                 f"-DVulkan_INCLUDE_DIR={ROOT}/.deps/vulkan/usr/include", f"-DVulkan_LIBRARY={lib}"],
                ["cmake", "--build", b, "-j2"]):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if p.returncode:
            check(False, f"program {name}: {' '.join(cmd[:2])} failed: {(p.stdout + p.stderr)[-600:]}")
            return None
    return os.path.join(b, name)


def program_case(tmp: str, check, args, model: str, part: dict, prefix: str) -> None:
    """A compiled program with --device-memory: the UNet (at an 8x8 latent: lavapipe's time) at its compute buffer
    plus half its weights, and the skips graph in segments, each bit-identical to the unlimited runs."""
    t0 = time.time()
    unet = build_program(tmp, model, "unet", check)
    skips = build_program(tmp, os.path.join(tmp, "skips.onnx"), "skips", check)
    print(f"      programs compiled and built in {time.time() - t0:.0f} s")

    def run(prog, tag, ins, extra):
        out = os.path.join(tmp, "prog_out_" + tag)
        p = subprocess.run([prog, *ins, "--device", args.device, "-t", str(args.threads), "-o", out, "--runs", "2",
                            *extra], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"program {tag}: exit {p.returncode} {p.stderr.strip()[-300:]}")
        m = re.search(r"weights ([0-9.]+) MB on the device", p.stderr)
        return p, (float(m.group(1)) if m else -1.0), out

    if unet:
        case = {i["name"]: s for i, s in zip(part["inputs"], ([2, 4, 8, 8], [2], [2, 77, 32]))}
        ins = []
        for name, arr in sd15_data.make_inputs(f"{prefix}_unet", part["inputs"], case, 0).items():
            np.save(os.path.join(tmp, "p8_" + name + ".npy"), arr)
            ins += ["-i", f"{name}={os.path.join(tmp, 'p8_' + name + '.npy')}"]
        ref_dir = os.path.join(tmp, "p8_run")
        p = subprocess.run([args.cli, "run", model, "--device", args.device, "-t", str(args.threads), *ins,
                            "-o", ref_dir, "--stats", ref_dir + ".json"], capture_output=True, text=True, timeout=600)
        check(p.returncode == 0, f"unet at 8x8 (run): exit {p.returncode} {p.stderr.strip()[-300:]}")
        st = json.load(open(ref_dir + ".json")) if p.returncode == 0 else None
        if st:
            budget = st["backends"][args.device]["buffer_bytes"] + int(st["weights_mb"] * 1048576) // 2
            _, w_full, out_full = run(unet, "unet", ins, [])
            p, w_part, out_part = run(unet, "unet_budget", ins, ["--device-memory", str(budget)])
            same = p.returncode == 0 and all(
                np.array_equal(np.load(os.path.join(d, o + ".npy")), np.load(os.path.join(ref_dir, o + ".npy")))
                for d in (out_full, out_part) for o in part["outputs"])
            check(same, "program unet: unlimited and --device-memory outputs bit-identical to `run`'s")
            print(f"      program unet: weights on the device {w_full:.3f} MB unlimited, {w_part:.3f} MB at {budget} B")
            check(0 <= w_part < w_full, "program unet: fewer weights on the device under the budget")
    if skips:
        x = ["-i", f"x={os.path.join(tmp, 'skips_x.npy')}"]
        p0, _, o0 = run(skips, "skips", x, [])
        budget_skips = int(json.load(open(os.path.join(tmp, "skips.json")))["backends"][args.device]["buffer_bytes"])
        p1, _, o1 = run(skips, "skips_budget", x, ["--device-memory", str(budget_skips * 3 // 8)])
        if p0.returncode == 0 and p1.returncode == 0:
            check(all(np.array_equal(np.load(os.path.join(o0, o + ".npy")), np.load(os.path.join(o1, o + ".npy")))
                      for o in ("y", "a8")), "program skips: in segments, bit-identical to its unlimited run")
            check("segments" in p1.stderr, "program skips: a line says it runs in segments")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build-vulkan", "onnx2ggml"))
    ap.add_argument("--device", default="Vulkan0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--manifest", default=MANIFEST, help="another SD 1.5 manifest (the full-size parts on a GPU)")
    ap.add_argument("--program", action="store_true",
                    help="also a compiled program's --device-memory (built against build-vulkan/install)")
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
        if args.program:
            program_case(tmp, check, args, model, part, manifest["prefix"])

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
