#!/usr/bin/env python3
"""Flux.1 at full width with fewer blocks (issue 29 item 4): does a Flux-class model run within a desktop's memory
at --weights bf16 and q8_0?

Builds diffusers' real FluxTransformer2DModel at Flux.1's width (3072 hidden, 24 heads of 128, rotary axes
16/56/56, joint_attention_dim 4096, pooled_projection_dim 768, in_channels 64) with --double/--single blocks and
seeded weights, exports it with the dynamo exporter (weights in one external file), saves the inputs and the PyTorch
f32 output, then runs `build/onnx2ggml run` at each --weights type and prints the error against PyTorch, the
time of the graph and of each block (--profile, by module scope) and peak RSS (/usr/bin/time).

  scripts/flux_width.py --out-dir build/flux_width [--double 2 --single 4] [--tokens 128] [--skip-export]

The export is several GB (each double block 1.36 GB in f32, each single 0.57 GB): it goes to an ignored folder.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INPUTS = ["hidden_states", "encoder_hidden_states", "pooled_projections", "timestep", "img_ids", "txt_ids"]


def config(double, single):
    return dict(patch_size=1, in_channels=64, num_layers=double, num_single_layers=single, attention_head_dim=128,
                num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768, guidance_embeds=False,
                axes_dims_rope=(16, 56, 56))


def make_inputs(latent, tokens, seed=7):
    """A latent of latent x latent, packed 2x2 as FluxPipeline does: (latent/2)^2 image tokens of 64 channels."""
    rng = np.random.default_rng(seed)
    side = latent // 2
    ids = np.zeros((side, side, 3), np.float32)
    ids[..., 1] = np.arange(side)[:, None]
    ids[..., 2] = np.arange(side)[None, :]
    return {"hidden_states": rng.standard_normal((1, side * side, 64), np.float32),
            "encoder_hidden_states": rng.standard_normal((1, tokens, 4096), np.float32),
            "pooled_projections": rng.standard_normal((1, 768), np.float32),
            "timestep": np.array([0.5], np.float32),  # the pipeline passes t / 1000
            "img_ids": ids.reshape(-1, 3), "txt_ids": np.zeros((tokens, 3), np.float32)}


def export(args, out):
    import torch
    import diffusers
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from export_families import Flux, strip_node_metadata  # the wrapper the small Flux fixture uses
    torch.manual_seed(1234)
    model = diffusers.FluxTransformer2DModel(**config(args.double, args.single)).eval()
    params = sum(p.numel() for p in model.parameters())
    feeds = make_inputs(args.latent, args.tokens)
    for n, v in feeds.items():
        np.save(os.path.join(out, n + ".npy"), v)
    wrapper = Flux(model)
    targs = tuple(torch.from_numpy(feeds[n]) for n in INPUTS)
    with torch.no_grad():
        t0 = time.perf_counter()
        ref = wrapper(*targs)
        t_ref = time.perf_counter() - t0
        np.save(os.path.join(out, "ref.npy"), ref.numpy().astype(np.float32))
        prog = torch.onnx.export(wrapper, targs, dynamo=True, opset_version=18, input_names=INPUTS,
                                 output_names=["sample"])
    strip_node_metadata(prog.model_proto.graph)
    path = os.path.join(out, "flux.onnx")
    prog.save(path, external_data=True)
    info = {"config": {k: list(v) if isinstance(v, tuple) else v for k, v in config(args.double, args.single).items()},
            "params": params, "torch_seconds": t_ref, "torch_threads": torch.get_num_threads(),
            "shapes": {n: list(v.shape) for n, v in feeds.items()}}
    with open(os.path.join(out, "export.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"exported {params / 1e9:.3f} B params; PyTorch f32 {t_ref:.2f}s on {torch.get_num_threads()} threads",
          flush=True)


def node_blocks(path):
    """ONNX node name -> ("double"|"single", block index) from the exporter's module scopes."""
    import onnx
    scope = re.compile(r"model\.(single_transformer_blocks|transformer_blocks)\.(\d+)'")
    out = {}
    for n in onnx.load(path, load_external_data=False).graph.node:
        for p in n.metadata_props:
            m = scope.search(p.value) if p.key == "pkg.torch.onnx.name_scopes" else None
            if m:
                out[n.name] = ("single" if m.group(1).startswith("single") else "double", m.group(2))
    return out


def block_times(profile_text, blocks):
    """ms per block of each kind (the mean over blocks) from --profile's per-node lines."""
    per = {"double": {}, "single": {}}
    for line in profile_text.split("time per ggml op")[0].splitlines():  # the last run's per-node lines
        m = re.match(r"\s*([\d.]+) ms\s+[\d.]+%\s+\S+ '(.+)'$", line)
        if m and m.group(2) in blocks:
            kind, i = blocks[m.group(2)]
            per[kind][i] = per[kind].get(i, 0.0) + float(m.group(1))
    return {k + "_ms": (sum(v.values()) / len(v) if v else None) for k, v in per.items()}


def run(args, out, wtype):
    res = os.path.join(out, "out_" + wtype)
    os.makedirs(res, exist_ok=True)
    stat_files = [os.path.join(out, f"stats_{wtype}_{k}.json") for k in range(args.runs)]
    model = os.path.join(out, "flux.onnx")
    cmd = ["/usr/bin/time", "-v", args.cli, "run", model,
           "--threads", str(args.threads), "--weights", wtype]
    # Runs in one session: the first reads (and converts) the weights, the last is timed warm.
    for k, stat in enumerate(stat_files):
        cmd += ["--then"] if k else []
        cmd += ["--output-dir", res, "--stats", stat]
        for n in INPUTS:
            cmd += ["--input", f"{n}={os.path.join(out, n + '.npy')}"]
    if args.profile:
        cmd.append("--profile")
    t0 = time.perf_counter()
    env = dict(os.environ, ONNX2GGML_PROFILE_NODES="100000")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if p.returncode:
        sys.exit(f"{wtype}: onnx2ggml failed:\n{p.stderr[-3000:]}")
    with open(os.path.join(out, f"log_{wtype}.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1)) * 1024
    ref = np.load(os.path.join(out, "ref.npy"))
    got = np.load(os.path.join(res, os.listdir(res)[0]))
    err = float(np.abs(got.astype(np.float64) - ref).max())
    rel = err / float(np.abs(ref).max())
    with open(stat_files[-1]) as f, open(stat_files[0]) as g:
        st, cold = json.load(f), json.load(g)
    row = {"weights": wtype, "max_abs": err, "rel": rel, "peak_rss_gb": rss / 1e9, "wall_s": wall,
           "compute_ms": st["compute_ms"], "first_run_ms": cold["build_ms"] + cold["compute_ms"],
           "weights_gb": st["weights_mb"] * 1048576 / 1e9, "stats": st,
           **(block_times(p.stdout.split("time per ONNX node")[-1], node_blocks(model)) if args.profile else {})}
    print(json.dumps({k: v for k, v in row.items() if k != "stats"}), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "build", "flux_width"))
    ap.add_argument("--double", type=int, default=2)
    ap.add_argument("--single", type=int, default=4)
    ap.add_argument("--latent", type=int, default=32, help="latent side (image tokens: (side/2)^2)")
    ap.add_argument("--tokens", type=int, default=128, help="T5 tokens")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "onnx2ggml"))
    ap.add_argument("--runs", type=int, default=2, help="runs in one session (the last one's time is reported)")
    ap.add_argument("--weights", default="f32,bf16,q8_0")
    ap.add_argument("--profile", action="store_true", help="per-block times from --profile")
    ap.add_argument("--skip-export", action="store_true", help="reuse OUT_DIR's export")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    if not args.skip_export:
        export(args, args.out_dir)
    rows = [run(args, args.out_dir, w) for w in args.weights.split(",")]
    with open(os.path.join(args.out_dir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
