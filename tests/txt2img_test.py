#!/usr/bin/env python3
"""examples/txt2img against the diffusers pipeline: final latent after 2 DDIM steps at 32x32 latent (256x256)
on the small SD 1.5 models, from the same token ids and initial noise (reference made by
scripts/sd15_txt2img_reference.py). Also checks that a PNG is written. Then the same from text: --prompt and
--negative-prompt through the C++ CLIP tokenizer (merges file from scripts/setup.sh) and the small text tower with
the real vocabulary, against the pipeline given the same strings (transformers' CLIPTokenizer).

Usage: .venv/bin/python tests/txt2img_test.py [--bin build/txt2img]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SD = os.path.join(REPO, "tests/models/sd15_small")
REF = os.path.join(SD, "txt2img")


def run(bin_path, what, text_encoder, inputs, ref):
    with tempfile.TemporaryDirectory() as tmp:
        png, lat = os.path.join(tmp, "out.png"), os.path.join(tmp, "latent.npy")
        cmd = [bin_path, "--text-encoder", f"{SD}/{text_encoder}", "--unet", f"{SD}/unet.onnx",
               "--vae-decoder", f"{SD}/vae_decoder.onnx", *inputs, "--init-latent", f"{REF}/init_latent.npy",
               "--steps", "2", "--guidance", "7.5", "--width", "256", "--height", "256", "--threads", "2",
               "--save-latent", lat, "-o", png]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {what}: txt2img exited with", r.returncode, r.stderr[-500:])
            return False
        got, want = np.load(lat), np.load(f"{REF}/{ref}")
        err, rel = metrics.errors(want, got)[:2] if got.shape == want.shape else (float("inf"), float("inf"))
        with open(png, "rb") as f:
            is_png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    ok = rel <= 1e-4 and is_png and got.shape == want.shape
    print(f"{'OK  ' if ok else 'FAIL'} {what} vs diffusers (2 DDIM steps, 32x32 latent): max abs err {err:.3e}, "
          f"max rel err {rel:.3e} (bar 1e-4); PNG {'written' if is_png else 'MISSING'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build/txt2img"))
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        print(f"FAIL: {a.bin} not built (needs zlib: apt-get install zlib1g-dev)")
        return 1
    ok = run(a.bin, "txt2img --tokens", "text_encoder.onnx",
             ["--tokens", f"{REF}/tokens.npy", "--uncond-tokens", f"{REF}/uncond_tokens.npy", "--pad", "1"], "ref_latent.npy")
    with open(f"{REF}/prompt.json", encoding="utf-8") as f:
        p = json.load(f)
    ok &= run(a.bin, "txt2img --prompt", "text_encoder_bpe.onnx",
              ["--prompt", p["prompt"], "--negative-prompt", p["negative_prompt"]], "ref_latent_prompt.npy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
