#!/usr/bin/env python3
"""Our portable ggml graph against stable-diffusion.cpp's hand-written one, same device, same seeded SD 1.5 weights,
in one alternating run (issue 27): the VAE decode (32x32 latent -> 256x256) and one CFG UNet step (ours: one batch-2
pass; sd.cpp: cond + uncond, two batch-1 passes).

Each round runs sd-cli once per flag set (its default flags, --diffusion-fa, and that with the direct
convolutions), then ours once per part, so a slow phase of the host hits both. Per part it prints the medians, the ratios ours / sd.cpp, the compute buffers and our
ggml node counts by op type. sd.cpp's figures are its own log lines ("sampling completed", "decode_first_stage
completed": 10 ms resolution, graph build and allocation included); ours are `onnx2ggml bench --runs 1 --warmup 1`
(compute only; its "first run" line, which adds the graph build and allocation, is printed beside).

  .venv/bin/python scripts/sdcpp_compare.py --sd15 build/sd15_full --sdcli build/sdcpp/build/bin/sd-cli \\
      [--sdcpp-dir build/sdcpp] [--device CPU|Vulkan0] [--cli build/onnx2ggml] [--rounds 3] [--flags default,fa]
      [--warmup 1]

sd-cli runs through scripts/sdcpp_bench.sh (SDCPP_CLI, RUNS=1), which also made it and its checkpoint
(SDCPP_CKPT_ONLY=1; SDCPP_BACKEND=vulkan for Vulkan).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
FLAGS = {"default": [], "fa": ["--diffusion-fa"],
         "fa+direct": ["--diffusion-fa", "--diffusion-conv-direct", "--vae-conv-direct"]}


def sdcpp_once(args, flags):
    """One sd-cli run through scripts/sdcpp_bench.sh (RUNS=1, its command line and log parsing), with its buffers."""
    env = dict(os.environ, SDCPP_CLI=args.sdcli, SDCPP_DIR=args.sdcpp_dir, RUNS="1", THREADS=str(args.threads),
               SDCPP_EXTRA_ARGS=" ".join(flags), PYTHON=sys.executable)
    p = subprocess.run([os.path.join(REPO, "scripts", "sdcpp_bench.sh")], env=env, capture_output=True, text=True,
                       timeout=3600)
    m = re.search(r"^run 1 \(.*\): unet step \(cond \+ uncond\) (\d+) ms, vae decode (\d+) ms  \(log: (.*)\)$",
                  p.stdout, re.M)
    if p.returncode or not m:
        raise SystemExit(f"sdcpp_bench.sh failed ({' '.join(flags) or 'default'}):\n{(p.stdout + p.stderr)[-2000:]}")
    bufs = {k: float(v) for k, v in re.findall(r"(\w+) compute buffer size: ([0-9.]+) MB", open(m.group(3)).read())}
    return {"unet": float(m.group(1)), "vae_decoder": float(m.group(2)),
            "buf_unet": bufs.get("unet"), "buf_vae_decoder": bufs.get("vae")}


def ours_cmd(args, verb, model, inputs, *extra):
    cmd = [args.cli, verb, model, *inputs, "--threads", str(args.threads), "--device", args.device, *extra]
    return cmd + (["--portable"] if args.device == "CPU" else [])


def ours_once(args, model, inputs, precision, stats):
    """One timed run after args.warmup untimed ones; `stats` gets the first run's --stats."""
    p = subprocess.run(ours_cmd(args, "bench", model, inputs, "--runs", "1", "--warmup", str(args.warmup),
                                "--precision", precision, "--stats", stats),
                       capture_output=True, text=True, timeout=3600)
    if p.returncode:
        raise SystemExit(f"onnx2ggml bench failed:\n{(p.stdout + p.stderr)[-2000:]}")
    med = float(re.search(r"median_ms=([0-9.]+)", p.stdout).group(1))
    m = re.search(r"graph build: ([0-9.]+) ms, first run compute: ([0-9.]+) ms", p.stdout)
    return med, float(m.group(1)) + float(m.group(2)) if m else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sd15", required=True, help="folder of the full-size SD 1.5 parts (manifest.json)")
    ap.add_argument("--sdcli", required=True)
    ap.add_argument("--sdcpp-dir", default=os.path.join(REPO, "build", "sdcpp"),
                    help="scripts/sdcpp_bench.sh's folder, holding its checkpoint (SDCPP_CKPT_ONLY=1 makes it)")
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--device", default="CPU")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flags", default=",".join(FLAGS), help="sd-cli's flag sets to run, of " + ",".join(FLAGS))
    ap.add_argument("--precision", default="exact", help="ours, one or more of exact,fast (fast: F16 product weights "
                    "off the CPU, as sd.cpp's convs)")
    ap.add_argument("--warmup", type=int, default=1, help="our untimed runs before the timed one (0 on lavapipe, "
                    "where the first run's graph build is small beside its compute)")
    args = ap.parse_args()
    import sd15_data

    manifest = json.load(open(os.path.join(args.sd15, "manifest.json")))
    parts = {p["name"]: p for p in manifest["parts"]}
    precisions = args.precision.split(",")
    ours = [f"{w}{q}" for q in precisions for w in ("ours_", "first_")]
    res = {f"{k}_{name}": [] for k in ours for name in ("unet", "vae_decoder")}
    flag_sets = {f: FLAGS[f] for f in args.flags.split(",")}
    res.update({f"{f}_{k}": [] for f in flag_sets for k in ("unet", "vae_decoder")})
    sd_bufs, our_stats = {}, {}
    with tempfile.TemporaryDirectory() as d:
        feeds = {}
        for name in ("unet", "vae_decoder"):
            p = parts[name]
            case = p["cases"][0]  # the UNet's batch-2 32x32 step, the decoder's 32x32 latent
            feeds[name] = []
            for k, arr in sd15_data.make_inputs(f"{manifest['prefix']}_{name}", p["inputs"], case, 0).items():
                np.save(f"{d}/{name}_{k}.npy", arr)
                feeds[name] += ["--input", f"{k}={d}/{name}_{k}.npy"]
        for r in range(args.rounds):
            for f, flags in flag_sets.items():
                t = sdcpp_once(args, flags)
                res[f"{f}_unet"].append(t["unet"])
                res[f"{f}_vae_decoder"].append(t["vae_decoder"])
                sd_bufs[f] = (t["buf_unet"], t["buf_vae_decoder"])
                print(f"  sd.cpp {f}: unet {t['unet']:.0f} ms, vae decode {t['vae_decoder']:.0f} ms", flush=True)
            for q in precisions:
                for name in ("unet", "vae_decoder"):
                    med, first = ours_once(args, os.path.join(args.sd15, parts[name]["file"]), feeds[name], q,
                                           f"{d}/{name}_{q}.json")
                    res[f"ours_{q}_{name}"].append(med)
                    res[f"first_{q}_{name}"].append(first)
                    our_stats[(name, q)] = json.load(open(f"{d}/{name}_{q}.json"))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f}" for k, v in res.items()), flush=True)
    md = {k: statistics.median(v) for k, v in res.items()}
    print(f"\n{args.device}, {args.threads} threads, {args.rounds} alternating rounds (medians, ms; sd.cpp's fastest is "
          f"the best of its flag sets {', '.join(flag_sets)} for that part):")
    print(f"{'part':<18} {'ours':>7} {'ours 1st':>9} {'sd default':>11} {'ratio':>6} {'sd fastest':>17} {'ratio':>6}  "
          f"compute buffer MB: ours, then sd.cpp per flag set")
    for i, name in enumerate(("unet", "vae_decoder")):
        dft = md[f"default_{name}"]
        best = min(flag_sets, key=lambda f: md[f"{f}_{name}"])
        fst = md[f"{best}_{name}"]
        bufs = ", ".join(f"{f} {sd_bufs[f][i]}" for f in flag_sets)
        for q in precisions:
            o, label = md[f"ours_{q}_{name}"], f"{name} {q}"
            print(f"{label:<18} {o:>7.0f} {md[f'first_{q}_{name}']:>9.0f} {dft:>11.0f} {o / dft:>6.2f} {fst:>6.0f} "
                  f"({best:>9}) {o / fst:>6.2f}  {our_stats[(name, q)]['compute_buffer_mb']:.1f}; {bufs}")
    for (name, q), st in our_stats.items():
        ops = sorted(st["ggml_ops"].items(), key=lambda kv: -kv[1])
        print(f"ours {name} {q}: {st['ggml_graph_nodes']} ggml nodes, weights {st['weights_mb']:.0f} MB: " +
              ", ".join(f"{k} {v}" for k, v in ops[:14]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
