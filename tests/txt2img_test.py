#!/usr/bin/env python3
"""examples/txt2img against the diffusers pipelines: final latent after 2 DDIM steps from the same initial noise.
SD 1.5: 32x32 latent (256x256) on the small SD 1.5 models (reference made by scripts/sd15_txt2img_reference.py),
from token ids and from --prompt/--negative-prompt text (the C++ CLIP tokenizer, merges file from scripts/setup.sh,
and the small text tower with the real vocabulary, against the pipeline given the same strings). SDXL: 16x16 latent
(128x128) on the small SDXL pipeline, a prompt without a negative prompt (zero unconditional embeddings) and one with
(scripts/sdxl_txt2img_reference.py), each from the ids the real CLIP tokenizers gave and from the prompt text.
Also checks that PNGs are written.

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
XL = os.path.join(REPO, "tests/models/sdxl_small")


def sd15_case():
    return ("SD 1.5 (2 DDIM steps, 32x32 latent)", f"{REF}/ref_latent.npy",
            ["--text-encoder", f"{SD}/text_encoder.onnx", "--unet", f"{SD}/unet.onnx",
             "--vae-decoder", f"{SD}/vae_decoder.onnx", "--tokens", f"{REF}/tokens.npy",
             "--uncond-tokens", f"{REF}/uncond_tokens.npy", "--init-latent", f"{REF}/init_latent.npy",
             "--steps", "2", "--guidance", "7.5", "--width", "256", "--height", "256", "--pad", "1"])


def sdxl_cases():
    with open(f"{XL}/txt2img/cases.json") as f:
        spec = json.load(f)
    for case in spec["cases"]:
        d = f"{XL}/txt2img/{case['name']}"
        base = ["--text-encoder", f"{XL}/text_encoder.onnx", "--text-encoder-2", f"{XL}/text_encoder_2.onnx",
                "--unet", f"{XL}/unet.onnx", "--vae-decoder", f"{XL}/vae_decoder.onnx",
                "--init-latent", f"{d}/init_latent.npy", "--steps", str(spec["steps"]),
                "--guidance", str(spec["guidance"]), "--width", str(spec["width"]), "--height", str(spec["height"])]
        # Without a negative prompt, encoder 2 re-pads encoder 1's ids with its own pad (what a tokenizer in C++ does);
        # with one, every encoder gets its own files.
        ids = ["--tokens", f"{d}/tokens.npy"]
        text = ["--prompt", case["prompt"]]
        if case["negative"] is not None:
            ids += ["--tokens-2", f"{d}/tokens_2.npy", "--uncond-tokens", f"{d}/negative_tokens.npy",
                    "--uncond-tokens-2", f"{d}/negative_tokens_2.npy"]
            text += ["--negative-prompt", case["negative"]]
        title = f"SDXL {case['name']} ({spec['steps']} DDIM steps, {spec['width'] // 8}x{spec['height'] // 8} latent)"
        yield title + " from ids", f"{d}/ref_latent.npy", base + ids
        yield title + " from --prompt", f"{d}/ref_latent.npy", base + text


def check(binary, title, ref, args):
    with tempfile.TemporaryDirectory() as tmp:
        png, lat = os.path.join(tmp, "out.png"), os.path.join(tmp, "latent.npy")
        r = subprocess.run([binary] + args + ["--threads", "2", "--save-latent", lat, "-o", png],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL txt2img {title}: exited with", r.returncode, r.stderr[-500:])
            return False
        got, want = np.load(lat), np.load(ref)
        err, rel = metrics.errors(want, got)[:2] if got.shape == want.shape else (float("inf"), float("inf"))
        with open(png, "rb") as f:
            is_png = f.read(8) == b"\x89PNG\r\n\x1a\n"
    ok = rel <= 1e-4 and is_png and got.shape == want.shape
    print(f"{'OK  ' if ok else 'FAIL'} txt2img vs diffusers, {title}: max abs err {err:.3e}, "
          f"max rel err {rel:.3e} (bar 1e-4); PNG {'written' if is_png else 'MISSING'}")
    return ok



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build/txt2img"))
    a = ap.parse_args()
    if not os.path.exists(a.bin):
        print(f"FAIL: {a.bin} not built (needs zlib: apt-get install zlib1g-dev)")
        return 1
    with open(f"{REF}/prompt.json", encoding="utf-8") as f:
        p = json.load(f)
    sd15_text = ("SD 1.5 from --prompt", f"{REF}/ref_latent_prompt.npy",
                 ["--text-encoder", f"{SD}/text_encoder_bpe.onnx", "--unet", f"{SD}/unet.onnx",
                  "--vae-decoder", f"{SD}/vae_decoder.onnx", "--prompt", p["prompt"],
                  "--negative-prompt", p["negative_prompt"], "--init-latent", f"{REF}/init_latent.npy",
                  "--steps", "2", "--guidance", "7.5", "--width", "256", "--height", "256"])
    results = [check(a.bin, *case) for case in [sd15_case(), sd15_text, *sdxl_cases()]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
