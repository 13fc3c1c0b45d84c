#!/usr/bin/env python3
"""Reference for examples/txt2img: the diffusers StableDiffusionPipeline (DDIM, SD 1.5 scheduler config) run on
the same small seeded models that scripts/export_sd15.py --small exported, from the same token ids and initial
noise. Writes tests/models/sd15_small/txt2img/{tokens,uncond_tokens,init_latent,ref_latent}.npy, which
tests/txt2img_test.py compares against at test time (no torch needed there).

Then the same from text: the pipeline gets prompt and negative_prompt strings, tokenized by transformers'
CLIPTokenizer built from the merges file scripts/setup.sh fetched, and the small text tower with CLIP's real
vocabulary (text_encoder_bpe.onnx, export_sd15.py --small --parts text_encoder_bpe). Writes prompt.json and
ref_latent_prompt.npy (same init_latent.npy).

Usage: scripts/setup.sh --with-torch && .venv/bin/python scripts/sd15_txt2img_reference.py
"""
import json
import os
import sys
import tempfile

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import clip_tokenizer_reference as ctr  # noqa: E402
import export_sd15 as ex  # noqa: E402

OUT = os.path.join(REPO, "tests/models/sd15_small/txt2img")
STEPS, GUIDANCE, SIZE = 2, 7.5, 256
PROMPT = "A watercolor painting of a red Fox in the snow, highly detailed, 4k -- trending on ArtStation!"
NEGATIVE = "blurry, low-quality, watermark's"


def main():
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    os.makedirs(OUT, exist_ok=True)
    cfg = ex.SMALL
    te = ex.build_model("text_encoder", cfg, "sd15_small/text_encoder")
    unet = ex.build_model("unet", cfg, "sd15_small/unet")
    vae = ex.build_model("vae", cfg, "sd15_small/vae")
    tc = cfg["text_encoder"]
    bos, eos, pad = tc["bos_token_id"], tc["eos_token_id"], tc["pad_token_id"]
    prompt = np.full(77, pad, np.int64)
    prompt[:5] = [bos, 5, 17, 300, eos]
    uncond = np.full(77, pad, np.int64)
    uncond[:2] = [bos, eos]
    with torch.no_grad():
        pe = te(torch.from_numpy(prompt[None]))[0]
        ne = te(torch.from_numpy(uncond[None]))[0]
    init = np.random.RandomState(1234).randn(1, 4, SIZE // 8, SIZE // 8).astype(np.float32)
    sched = DDIMScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                          clip_sample=False, set_alpha_to_one=False, steps_offset=1, timestep_spacing="leading",
                          prediction_type="epsilon")
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=te, tokenizer=None, unet=unet, scheduler=sched,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    with torch.no_grad():
        lat = pipe(prompt_embeds=pe, negative_prompt_embeds=ne, num_inference_steps=STEPS, guidance_scale=GUIDANCE,
                   height=SIZE, width=SIZE, latents=torch.from_numpy(init), output_type="latent").images
    np.save(os.path.join(OUT, "tokens.npy"), prompt)
    np.save(os.path.join(OUT, "uncond_tokens.npy"), uncond)
    np.save(os.path.join(OUT, "init_latent.npy"), init)
    np.save(os.path.join(OUT, "ref_latent.npy"), lat.numpy().astype(np.float32))
    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write(f"diffusers StableDiffusionPipeline + DDIMScheduler (SD 1.5 config), {STEPS} steps, guidance {GUIDANCE}, "
                f"{SIZE}x{SIZE}, special tokens bos={bos} eos={eos} pad={pad}.\n"
                "Produced by scripts/sd15_txt2img_reference.py; checked by tests/txt2img_test.py.\n")
    print("reference latent", lat.shape, float(lat.abs().max()))

    te_bpe = ex.build_model("text_encoder_bpe", cfg, "sd15_small/text_encoder_bpe")
    with tempfile.TemporaryDirectory() as tmp:
        tok = ctr.hf_tokenizer(tmp)
        pipe = StableDiffusionPipeline(vae=vae, text_encoder=te_bpe, tokenizer=tok, unet=unet, scheduler=sched,
                                       safety_checker=None, feature_extractor=None, requires_safety_checker=False)
        with torch.no_grad():
            lat = pipe(prompt=PROMPT, negative_prompt=NEGATIVE, num_inference_steps=STEPS, guidance_scale=GUIDANCE,
                       height=SIZE, width=SIZE, latents=torch.from_numpy(init), output_type="latent").images
        ids = tok(PROMPT, padding="max_length", max_length=77, truncation=True).input_ids
    with open(os.path.join(OUT, "prompt.json"), "w") as f:
        json.dump({"prompt": PROMPT, "negative_prompt": NEGATIVE, "prompt_ids": ids}, f, indent=1)
        f.write("\n")
    np.save(os.path.join(OUT, "ref_latent_prompt.npy"), lat.numpy().astype(np.float32))
    with open(os.path.join(OUT, "README.md"), "a") as f:
        f.write("ref_latent_prompt.npy: the same pipeline from the text in prompt.json (prompt and negative_prompt, "
                "transformers' CLIPTokenizer, pad 49407) with text_encoder_bpe.onnx; same init_latent.npy.\n")
    print("reference latent from text", lat.shape, float(lat.abs().max()))


if __name__ == "__main__":
    main()
