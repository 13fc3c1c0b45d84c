#!/usr/bin/env python3
"""Reference data for tests/embedding_tests.py: textual-inversion embedding files in the formats people download,
and what diffusers' load_textual_inversion makes of them on the small text encoders (seeded weights, rebuilt by the
export scripts' own code): the prompt's token ids and the encoder outputs.

Files written to tests/models/embeddings/ (random vectors, seeded):
  cat_toy.safetensors   diffusers learned_embeds, {"<cat-toy>": [32]}
  my_style.bin          diffusers learned_embeds saved by torch.save, {"<my-style>": [1, 32]}
  badhands.safetensors  {"emb_params": [3, 32]} (multi-vector, token = file stem)
  oldstyle.pt           A1111: string_to_token / string_to_param {"*": [2, 32]}, name, step (token = file stem)
  xlstyle.safetensors   SDXL: clip_l [2, 16], clip_g [2, 16]
  cases.json            per model: the --embedding arguments, prompts, ids; *.npy the encoder outputs; and two
                        examples/txt2img runs (SD 1.5, SDXL: 2 DDIM steps from the txt2img fixtures' initial noise)

The merges file is the one scripts/setup.sh fetched (.deps/clip). Usage: .venv/bin/python scripts/embedding_reference.py
"""
import json
import os
import sys

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import export_families as ef  # noqa: E402
import export_sd15  # noqa: E402
import sdxl_txt2img_reference as sx  # noqa: E402

OUT = os.path.join(REPO, "tests/models/embeddings")

SD15_PROMPTS = ["a photo of <cat-toy> in oldstyle",
                "badhands, <my-style> painting of a <Cat-Toy>,oldstyle_1 only",
                "a plain prompt"]
# Not both a token and its token_1 in one prompt: diffusers' maybe_convert_prompt replaces the token inside token_1 too.
SDXL_PROMPTS = ["xlstyle portrait of a cat", "a cat, xlstyle_1"]


def write_files():
    g = torch.Generator().manual_seed(2911)
    vec = lambda *shape: (torch.randn(*shape, generator=g) * 0.5).float()  # noqa: E731
    from safetensors.torch import save_file
    save_file({"<cat-toy>": vec(32)}, os.path.join(OUT, "cat_toy.safetensors"))
    torch.save({"<my-style>": vec(1, 32)}, os.path.join(OUT, "my_style.bin"))
    save_file({"emb_params": vec(3, 32)}, os.path.join(OUT, "badhands.safetensors"))
    # A1111 keeps the vectors as a tensor that requires grad, with the training step and checkpoint beside them.
    torch.save({"string_to_token": {"*": 265}, "string_to_param": {"*": vec(2, 32).requires_grad_(True)},
                "name": "oldstyle", "step": 1500, "sd_checkpoint": "abc123", "sd_checkpoint_name": "v1-5"},
               os.path.join(OUT, "oldstyle.pt"))
    save_file({"clip_l": vec(2, 16), "clip_g": vec(2, 16)}, os.path.join(OUT, "xlstyle.safetensors"))


def tokenizers():
    from transformers import CLIPTokenizer
    vocab, merges = sx.clip_vocab(sx.read_bpe(sx.find_bpe(None)))
    assert len(vocab) == 49408, len(vocab)
    return (CLIPTokenizer(vocab=dict(vocab), merges=list(merges), model_max_length=77),
            CLIPTokenizer(vocab=dict(vocab), merges=list(merges), pad_token="!", model_max_length=77))


def encode(pipe, tok, model, prompt, outputs, stem):
    """The ids diffusers' pipeline gives the prompt (multi-vector tokens expanded), and the encoder's outputs."""
    text = pipe.maybe_convert_prompt(prompt, tok)
    ids = tok(text, padding="max_length", max_length=77, truncation=True).input_ids
    with torch.no_grad():
        res = model(torch.tensor([ids], dtype=torch.int64))
    res = res if isinstance(res, tuple) else (res,)
    files = {}
    for name, t in zip(outputs, res):
        files[name] = f"{stem}.{name}.npy"
        np.save(os.path.join(OUT, files[name]), t.numpy().astype(np.float32))
    return {"prompt": prompt, "ids": ids, "outputs": files}


def sd15_case(tok):
    from diffusers import StableDiffusionPipeline
    te = export_sd15.build_model("text_encoder_bpe", export_sd15.SMALL, "sd15_small/text_encoder_bpe")
    pipe = StableDiffusionPipeline(vae=None, text_encoder=te, tokenizer=tok, unet=None, scheduler=None,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    args = ["cat_toy.safetensors:<cat-toy>", "my_style.bin:<my-style>", "badhands.safetensors", "oldstyle.pt"]
    for a in args:
        path, _, token = a.partition(":")
        pipe.load_textual_inversion(os.path.join(OUT, path), token=token or os.path.splitext(path)[0])
    wrapper = export_sd15.TextEncoder(te).eval()
    cases = [encode(pipe, tok, wrapper, p, ["last_hidden_state", "pooler_output"], f"sd15.{i}")
             for i, p in enumerate(SD15_PROMPTS)]
    return {"model": "tests/models/sd15_small/text_encoder_bpe.onnx", "embeddings": args, "cases": cases}


def sdxl_cases(tok, tok_2):
    from diffusers import StableDiffusionXLPipeline
    from safetensors.torch import load_file
    mods = {part: ef.build(kind, cfg, seed) for part, (kind, cfg, seed) in ef.SDXL_PIPELINE.items()
            if part.startswith("text_encoder")}
    pipe = StableDiffusionXLPipeline(vae=None, text_encoder=mods["text_encoder"], text_encoder_2=mods["text_encoder_2"],
                                     tokenizer=tok, tokenizer_2=tok_2, unet=None, scheduler=None,
                                     add_watermarker=False)
    sd = load_file(os.path.join(OUT, "xlstyle.safetensors"))
    out = []
    for part, key, t in (("text_encoder", "clip_l", tok), ("text_encoder_2", "clip_g", tok_2)):
        pipe.load_textual_inversion(sd[key], token="xlstyle", text_encoder=mods[part], tokenizer=t)
        wrapper = ef.SDXLTextEncoder(mods[part]).eval()
        names = ["penultimate_hidden_state"] + (["text_embeds"] if part == "text_encoder_2" else [])
        cases = [encode(pipe, t, wrapper, p, names, f"sdxl.{part}.{i}") for i, p in enumerate(SDXL_PROMPTS)]
        out.append({"model": f"tests/models/sdxl_small/{part}.onnx", "embeddings": ["xlstyle.safetensors"],
                    "set": key, "pad": t.pad_token_id, "cases": cases})
    return out


def ddim():
    from diffusers import DDIMScheduler
    return DDIMScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                         clip_sample=False, set_alpha_to_one=False, steps_offset=1, timestep_spacing="leading",
                         prediction_type="epsilon")


def denoise(pipe, run, init, out):
    with torch.no_grad():
        lat = pipe(prompt=run["prompt"], negative_prompt=run["negative"], num_inference_steps=run["steps"],
                   guidance_scale=run["guidance"], height=run["size"], width=run["size"],
                   latents=torch.from_numpy(np.load(os.path.join(REPO, init))), output_type="latent").images
    np.save(os.path.join(OUT, out), lat.numpy().astype(np.float32))
    return dict(run, init_latent=init, latent=out)


def sd15_txt2img():
    """StableDiffusionPipeline on the small SD 1.5 models with the embeddings loaded, as txt2img --prompt runs."""
    from diffusers import StableDiffusionPipeline
    cfg = export_sd15.SMALL
    te = export_sd15.build_model("text_encoder_bpe", cfg, "sd15_small/text_encoder_bpe")
    unet = export_sd15.build_model("unet", cfg, "sd15_small/unet")
    vae = export_sd15.build_model("vae", cfg, "sd15_small/vae")
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=te, tokenizer=tokenizers()[0], unet=unet, scheduler=ddim(),
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    args = ["cat_toy.safetensors:<cat-toy>", "badhands.safetensors", "oldstyle.pt"]
    for a in args:
        path, _, token = a.partition(":")
        pipe.load_textual_inversion(os.path.join(OUT, path), token=token or os.path.splitext(path)[0])
    run = {"family": "sd15", "embeddings": args, "prompt": "a watercolor of <cat-toy> in the snow, oldstyle",
           "negative": "badhands, blurry", "steps": 2, "guidance": 7.5, "size": 256}
    return denoise(pipe, run, "tests/models/sd15_small/txt2img/init_latent.npy", "txt2img_sd15_latent.npy")


def sdxl_txt2img():
    from diffusers import StableDiffusionXLPipeline
    from safetensors.torch import load_file
    mods = {part: ef.build(kind, cfg, seed) for part, (kind, cfg, seed) in ef.SDXL_PIPELINE.items()}
    tok, tok_2 = tokenizers()
    pipe = StableDiffusionXLPipeline(vae=mods["vae_decoder"], text_encoder=mods["text_encoder"],
                                     text_encoder_2=mods["text_encoder_2"], tokenizer=tok, tokenizer_2=tok_2,
                                     unet=mods["unet"], scheduler=ddim(), force_zeros_for_empty_prompt=True,
                                     add_watermarker=False)
    sd = load_file(os.path.join(OUT, "xlstyle.safetensors"))
    pipe.load_textual_inversion(sd["clip_l"], token="xlstyle", text_encoder=mods["text_encoder"], tokenizer=tok)
    pipe.load_textual_inversion(sd["clip_g"], token="xlstyle", text_encoder=mods["text_encoder_2"], tokenizer=tok_2)
    run = {"family": "sdxl", "embeddings": ["xlstyle.safetensors"], "prompt": "xlstyle photo of a lighthouse",
           "negative": "blurry", "steps": 2, "guidance": 5.0, "size": 128}
    return denoise(pipe, run, "tests/models/sdxl_small/txt2img/negative/init_latent.npy", "txt2img_sdxl_latent.npy")


def main():
    os.makedirs(OUT, exist_ok=True)
    write_files()
    tok, tok_2 = tokenizers()
    import diffusers
    import transformers
    doc = {"comment": "Generated by scripts/embedding_reference.py: diffusers' load_textual_inversion on the small "
                      "text encoders; ids after maybe_convert_prompt, padded to 77.",
           "versions": {"torch": torch.__version__, "diffusers": diffusers.__version__,
                        "transformers": transformers.__version__},
           "models": [sd15_case(tok)] + sdxl_cases(*tokenizers()),
           "txt2img": [sd15_txt2img(), sdxl_txt2img()]}
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
