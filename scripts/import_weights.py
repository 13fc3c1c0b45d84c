#!/usr/bin/env python3
"""Turns a single-file Stable Diffusion checkpoint (original LDM key names, as model sites distribute them) into the
weights GGUF of an exported part, under its ONNX names:

    scripts/import_weights.py CHECKPOINT.safetensors MODEL.onnx -o weights.gguf [--part unet|vae|text_encoder]
        [--allow-partial] [--cli build/onnx2ggml]

A thin wrapper around `onnx2ggml import-weights MODEL.onnx CHECKPOINT -o weights.gguf` (no torch needed). Use the
result with `onnx2ggml run/bench MODEL.onnx --weights-file weights.gguf`, or with a program compiled from
MODEL.onnx (`PROGRAM --weights weights.gguf`). See docs/models.md, "Checkpoint import".
"""
import argparse
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("model")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--part", default="auto", help="auto (default), unet, vae, text_encoder or diffusers")
    ap.add_argument("--allow-partial", action="store_true", help="keep the model's own data for missing weights")
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    a = ap.parse_args()
    if not os.path.exists(a.cli):
        sys.exit(f"import_weights.py: {a.cli} not found; build it with scripts/build.sh or pass --cli")
    cmd = [a.cli, "import-weights", a.model, a.checkpoint, "-o", a.output, "--part", a.part]
    if a.allow_partial:
        cmd.append("--allow-partial")
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
