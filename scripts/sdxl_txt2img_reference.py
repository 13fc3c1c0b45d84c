#!/usr/bin/env python3
"""Reference for examples/txt2img's SDXL mode: diffusers' StableDiffusionXLPipeline (DDIM, SDXL's scheduler config)
run on the small SDXL pipeline that `scripts/export_families.py --sdxl-pipeline` exported (the same seeded modules,
built by the same code), from real prompts through two transformers CLIPTokenizers.

The tokenizers are made offline from CLIP's BPE merges (open_clip's bpe_simple_vocab_16e6.txt.gz; never committed):
tokenizer pads with <|endoftext|> as SDXL's CLIP-L tokenizer does, tokenizer_2 with "!" (id 0) as its CLIP-G one.
Cases: a prompt without negative prompt (force_zeros_for_empty_prompt: zero negative embeddings) and one with a
negative prompt. Per case, tests/models/sdxl_small/txt2img/<case>/ gets the prompt texts, the token ids the text
encoders were fed (recorded by hooks, so they are what the pipeline used), the initial and the final latent
(output_type="latent"), which tests/txt2img_test.py compares against without torch.

Usage: .venv/bin/pip download open_clip_torch --no-deps -d /tmp/oc
       .venv/bin/python scripts/sdxl_txt2img_reference.py [--bpe /tmp/oc/open_clip_torch-*.whl or the .txt.gz]
"""
import argparse
import glob
import gzip
import io
import json
import os
import shutil
import sys
import zipfile

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import export_families as ef  # noqa: E402

OUT = os.path.join(REPO, "tests/models/sdxl_small/txt2img")
STEPS, GUIDANCE, SIZE = 2, 5.0, 128
CASES = [
    dict(name="no_negative", prompt="a photo of an astronaut riding a horse on the moon", negative=None, seed=1),
    dict(name="negative", prompt="A watercolor painting of a lighthouse at dawn, highly detailed",
         negative="blurry, low quality", seed=2),
]


def byte_symbols():
    """CLIP's byte symbols in vocabulary order: the printable Latin-1 bytes as themselves first, then the other bytes
    as characters from 256 up."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    rest = [b for b in range(256) if b not in keep]
    return [chr(b) for b in keep] + [chr(256 + i) for i in range(len(rest))]


def read_bpe(path):
    """The merges text, from the .txt.gz or from an open_clip wheel that holds it."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            name = next(n for n in z.namelist() if n.endswith("bpe_simple_vocab_16e6.txt.gz"))
            data = z.read(name)
    else:
        with open(path, "rb") as f:
            data = f.read()
    return gzip.GzipFile(fileobj=io.BytesIO(data)).read().decode("utf-8")


def clip_vocab(bpe_text):
    """vocab {token: id} and merges as CLIP builds them: 256 byte symbols, the same with </w>, the first
    49152-256-2 merges, then the two special tokens (49408 ids)."""
    merges = [tuple(line.split()) for line in bpe_text.split("\n")[1:49152 - 256 - 2 + 1]]
    syms = byte_symbols()
    tokens = syms + [s + "</w>" for s in syms] + ["".join(m) for m in merges] + ["<|startoftext|>", "<|endoftext|>"]
    return {t: i for i, t in enumerate(tokens)}, merges


def find_bpe(arg):
    if arg:
        return arg
    hits = glob.glob(os.path.join(REPO, ".deps/clip/*.txt.gz")) + sorted(glob.glob("/tmp/oc/open_clip_torch-*.whl"))
    if not hits:
        raise SystemExit("no CLIP BPE file: `.venv/bin/pip download open_clip_torch --no-deps -d /tmp/oc` or --bpe")
    return hits[0]


def record_ids(module, log):
    module.register_forward_pre_hook(lambda m, args, kwargs: log.append(
        (args[0] if args else kwargs["input_ids"]).numpy().copy()), with_kwargs=True)


def main():
    from diffusers import DDIMScheduler, StableDiffusionXLPipeline
    from transformers import CLIPTokenizer

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bpe", help="bpe_simple_vocab_16e6.txt.gz or an open_clip_torch wheel")
    args = ap.parse_args()
    vocab, merges = clip_vocab(read_bpe(find_bpe(args.bpe)))
    assert len(vocab) == 49408, len(vocab)
    tok = CLIPTokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=77)
    tok_2 = CLIPTokenizer(vocab=dict(vocab), merges=list(merges), pad_token="!", model_max_length=77)

    mods = {}
    for part, (kind, cfg, seed) in ef.SDXL_PIPELINE.items():
        mods[part] = ef.build(kind, cfg, seed)
    vae = mods["vae_decoder"]
    sched = DDIMScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                          clip_sample=False, set_alpha_to_one=False, steps_offset=1, timestep_spacing="leading",
                          prediction_type="epsilon")
    pipe = StableDiffusionXLPipeline(vae=vae, text_encoder=mods["text_encoder"], text_encoder_2=mods["text_encoder_2"],
                                     tokenizer=tok, tokenizer_2=tok_2, unet=mods["unet"], scheduler=sched,
                                     force_zeros_for_empty_prompt=True, add_watermarker=False)
    ids_1, ids_2 = [], []
    record_ids(mods["text_encoder"], ids_1)
    record_ids(mods["text_encoder_2"], ids_2)

    shutil.rmtree(OUT, ignore_errors=True)
    index = []
    for case in CASES:
        d = os.path.join(OUT, case["name"])
        os.makedirs(d)
        ids_1.clear()
        ids_2.clear()
        init = np.random.RandomState(case["seed"]).randn(1, 4, SIZE // 8, SIZE // 8).astype(np.float32)
        with torch.no_grad():
            lat = pipe(prompt=case["prompt"], negative_prompt=case["negative"], num_inference_steps=STEPS,
                       guidance_scale=GUIDANCE, height=SIZE, width=SIZE, latents=torch.from_numpy(init),
                       output_type="latent").images
        # encoder calls: the prompt, then the negative prompt if there is one
        assert len(ids_1) == len(ids_2) == (2 if case["negative"] else 1), (len(ids_1), len(ids_2))
        np.save(os.path.join(d, "tokens.npy"), ids_1[0][0].astype(np.int64))
        np.save(os.path.join(d, "tokens_2.npy"), ids_2[0][0].astype(np.int64))
        if case["negative"]:
            np.save(os.path.join(d, "negative_tokens.npy"), ids_1[1][0].astype(np.int64))
            np.save(os.path.join(d, "negative_tokens_2.npy"), ids_2[1][0].astype(np.int64))
        np.save(os.path.join(d, "init_latent.npy"), init)
        np.save(os.path.join(d, "ref_latent.npy"), lat.numpy().astype(np.float32))
        with open(os.path.join(d, "prompt.txt"), "w") as f:
            f.write(case["prompt"] + "\n")
        if case["negative"]:
            with open(os.path.join(d, "negative_prompt.txt"), "w") as f:
                f.write(case["negative"] + "\n")
        index.append({k: case[k] for k in ("name", "prompt", "negative")})
        print(case["name"], "tokens", ids_1[0][0][:12].tolist(), "tokens_2", ids_2[0][0][:12].tolist(),
              "latent max", float(lat.abs().max()))
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump({"pipeline": "diffusers StableDiffusionXLPipeline + DDIMScheduler (SDXL config: scaled_linear "
                               "0.00085..0.012, leading, steps_offset 1), force_zeros_for_empty_prompt",
                   "steps": STEPS, "guidance": GUIDANCE, "width": SIZE, "height": SIZE,
                   "time_ids": [SIZE, SIZE, 0, 0, SIZE, SIZE], "vae_scaling_factor": vae.config.scaling_factor,
                   "made_by": "scripts/sdxl_txt2img_reference.py", "checked_by": "tests/txt2img_test.py",
                   "cases": index}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
