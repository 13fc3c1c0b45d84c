#!/usr/bin/env python3
"""The checkpoint-import fixture: a single-file SD 1.5 checkpoint in the original LDM layout, and PyTorch outputs.

Developer-only (needs torch, diffusers, transformers: `scripts/setup.sh --with-torch`):

    .venv/bin/python scripts/checkpoint_reference.py          # -> tests/models/checkpoint/ (committed)

It builds the small SD 1.5 VAE, UNet and CLIP text encoder of `scripts/export_sd15.py --small` with weights of
another seed ("weights B"; the committed ONNX graphs in tests/models/sd15_small hold weights A), writes their state
dicts as ONE safetensors file under LDM key names (`model.diffusion_model.`, `first_stage_model.`,
`cond_stage_model.transformer.`, as model sites distribute SD checkpoints), and checks that diffusers' own
single-file conversion (convert_ldm_unet/vae/clip_checkpoint) gives back exactly B's state dicts: that conversion,
not this script's reverse mapping, is the reference for the layout. UNet and text encoder are stored as F16 (B is
rounded to F16 values first, so nothing is lost), the VAE as F32, like many published checkpoints.

Then it saves B's PyTorch outputs on the inputs tests/sd15_data.py makes from seeds (one case per part) as
ref/<part>.<output>.npy, and cases.json, which tests/checkpoint_import_test.py reads.
"""
import json
import os
import re
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
sys.path.insert(0, os.path.join(REPO, "tests"))
import export_sd15  # noqa: E402
import sd15_data  # noqa: E402

import torch  # noqa: E402

OUT = os.path.join(REPO, "tests/models/checkpoint")
SD15 = os.path.join(REPO, "tests/models/sd15_small")
SEED_PREFIX = "checkpoint_b"  # weights B; the fixtures' weights A come from "sd15_small"

# One small case per part (the VAE decoder's at 16x16 latents keeps its reference at 200 KB).
CASES = {
    "vae_encoder": {"sample": [1, 3, 128, 128]},
    "vae_decoder": {"latent": [1, 4, 16, 16]},
    "unet": {"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, 77, 32]},
    "text_encoder": {"input_ids": [2, 77]},
}

UNET_RESNET = {"norm1": "in_layers.0", "conv1": "in_layers.2", "time_emb_proj": "emb_layers.1",
               "norm2": "out_layers.0", "conv2": "out_layers.3", "conv_shortcut": "skip_connection"}


def unet_to_ldm(key, layers, attn_up):
    """diffusers UNet2DConditionModel key -> LDM key (below model.diffusion_model.)."""
    fixed = {"conv_in": "input_blocks.0.0", "time_embedding.linear_1": "time_embed.0",
             "time_embedding.linear_2": "time_embed.2", "conv_norm_out": "out.0", "conv_out": "out.2",
             "add_embedding.linear_1": "label_emb.0.0", "add_embedding.linear_2": "label_emb.0.2"}
    mod, param = key.rsplit(".", 1)
    if mod in fixed:
        return f"{fixed[mod]}.{param}"
    p = mod.split(".")
    if p[0] == "down_blocks":
        b = int(p[1])
        if p[2] == "downsamplers":
            return f"input_blocks.{1 + b * (layers + 1) + layers}.0.op.{param}"
        i = 1 + b * (layers + 1) + int(p[3])
        if p[2] == "resnets":
            return f"input_blocks.{i}.0.{UNET_RESNET[p[4]]}.{param}"
        return f"input_blocks.{i}.1.{'.'.join(p[4:])}.{param}"
    if p[0] == "mid_block":
        if p[1] == "resnets":
            return f"middle_block.{2 * int(p[2])}.{UNET_RESNET[p[3]]}.{param}"
        return f"middle_block.1.{'.'.join(p[3:])}.{param}"
    if p[0] == "up_blocks":
        b = int(p[1])
        if p[2] == "upsamplers":
            return f"output_blocks.{b * (layers + 1) + layers}.{2 if attn_up[b] else 1}.conv.{param}"
        i = b * (layers + 1) + int(p[3])
        if p[2] == "resnets":
            return f"output_blocks.{i}.0.{UNET_RESNET[p[4]]}.{param}"
        return f"output_blocks.{i}.1.{'.'.join(p[4:])}.{param}"
    raise KeyError(key)


VAE_ATTN = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}


def vae_to_ldm(key, n_levels):
    """diffusers AutoencoderKL key -> (LDM key below first_stage_model., reshape to a 1x1 conv)."""
    mod, param = key.rsplit(".", 1)
    part, rest = mod.split(".", 1) if "." in mod else (mod, "")
    if part in ("quant_conv", "post_quant_conv"):
        return key, False
    m = re.fullmatch(r"(down|up)_blocks\.(\d+)\.(resnets|downsamplers|upsamplers)\.(\d+)\.?(.*)", rest)
    if m:
        kind, b, what, j, tail = m.groups()
        b = int(b) if kind == "down" else n_levels - 1 - int(b)  # LDM numbers decoder levels from the bottom
        if what == "resnets":
            tail = "nin_shortcut" if tail == "conv_shortcut" else tail
            return f"{part}.{kind}.{b}.block.{j}.{tail}.{param}", False
        return f"{part}.{kind}.{b}.{'downsample' if kind == 'down' else 'upsample'}.conv.{param}", False
    m = re.fullmatch(r"mid_block\.resnets\.(\d+)\.(.*)", rest)
    if m:
        return f"{part}.mid.block_{int(m.group(1)) + 1}.{m.group(2)}.{param}", False
    m = re.fullmatch(r"mid_block\.attentions\.0\.(.*)", rest)
    if m:
        return f"{part}.mid.attn_1.{VAE_ATTN[m.group(1)]}.{param}", param == "weight" and m.group(1) != "group_norm"
    names = {"conv_in": "conv_in", "conv_out": "conv_out", "conv_norm_out": "norm_out"}
    return f"{part}.{names[rest]}.{param}", False


def to_f16_values(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())


def sdxl_unet(sfu, save_file):
    """The SDXL-style UNet of tests/models/families_small (SGM keys with label_emb, transformer depth) with weights B,
    as a UNet-only LDM file; -> its cases.json entry."""
    import export_families
    cfg = dict(export_families.SMALL["sdxl_unet"])
    unet = export_families.build("sdxl_unet", cfg, seed=4321)  # the fixture's weights A come from seed 1234
    to_f16_values(unet)
    layers = cfg["layers_per_block"]
    attn_up = ["CrossAttn" in t for t in cfg["up_block_types"]]
    ckpt = {"model.diffusion_model." + unet_to_ldm(k, layers, attn_up): v.half().contiguous()
            for k, v in unet.state_dict().items()}
    back = sfu.convert_ldm_unet_checkpoint({k: v.float() for k, v in ckpt.items()}, dict(unet.config))
    want = unet.state_dict()
    if set(back) != set(want) or any(not torch.equal(back[k].float(), want[k].float()) for k in want):
        raise SystemExit("sdxl unet: diffusers' conversion does not give back weights B")
    print(f"sdxl unet: diffusers' convert_ldm_unet_checkpoint gives back all {len(want)} tensors of weights B exactly")
    path = os.path.join(OUT, "sdxl_small_unet_ldm.safetensors")
    save_file(ckpt, path, metadata={"format": "pt"})
    print(f"wrote {path}: {len(ckpt)} tensors, {os.path.getsize(path) / 1e6:.2f} MB")
    with open(os.path.join(REPO, "tests/models/families_small/manifest.json")) as f:
        part = next(p for p in json.load(f)["parts"] if p["name"] == "sdxl_unet")
    case = part["cases"][0]
    feeds = sd15_data.make_inputs(f"{SEED_PREFIX}/sdxl_unet", part["inputs"], case, 0)
    with torch.no_grad():
        out = export_families.SDXLUNet(unet.float().eval())(*[torch.from_numpy(feeds[i["name"]])
                                                              for i in part["inputs"]])
    np.save(os.path.join(OUT, "ref", "sdxl_unet.out_sample.npy"), out.numpy().astype(np.float32))
    return {"name": "sdxl_unet", "model": "families_small/" + part["file"], "checkpoint": os.path.basename(path),
            "inputs": part["inputs"], "case": case, "outputs": ["out_sample"]}


def main():
    from diffusers.loaders import single_file_utils as sfu
    from safetensors.torch import save_file

    cfg = export_sd15.SMALL
    cache = {}
    for kind in ("vae", "unet", "text_encoder"):
        cache[kind] = export_sd15.build_model(kind, cfg, f"{SEED_PREFIX}/{kind}")
    to_f16_values(cache["unet"])
    to_f16_values(cache["text_encoder"])

    ckpt = {}
    ucfg = cfg["unet"]
    layers = ucfg["layers_per_block"]
    attn_up = ["CrossAttn" in t for t in ucfg["up_block_types"]]
    for k, v in cache["unet"].state_dict().items():
        ckpt["model.diffusion_model." + unet_to_ldm(k, layers, attn_up)] = v.half()
    n_levels = len(cfg["vae"]["block_out_channels"])
    for k, v in cache["vae"].state_dict().items():
        ldm, conv = vae_to_ldm(k, n_levels)
        ckpt["first_stage_model." + ldm] = v[:, :, None, None] if conv else v
    for k, v in cache["text_encoder"].state_dict().items():
        ckpt["cond_stage_model.transformer.text_model." + k] = v.half()
    # Real SD 1.x checkpoints carry CLIP's position ids; the importer reports them as unused.
    ckpt["cond_stage_model.transformer.text_model.embeddings.position_ids"] = torch.arange(77)[None]
    ckpt = {k: v.contiguous() for k, v in ckpt.items()}

    # The reference for the layout: diffusers' single-file conversion must give back B exactly.
    f32 = {k: v.float() if v.is_floating_point() else v for k, v in ckpt.items()}
    back = {
        "unet": sfu.convert_ldm_unet_checkpoint(f32, dict(cache["unet"].config)),
        "vae": sfu.convert_ldm_vae_checkpoint(f32, dict(cache["vae"].config)),
        "text_encoder": {k[len("text_model."):]: v for k, v in sfu.convert_ldm_clip_checkpoint(f32).items()
                         if not k.endswith("position_ids")},
    }
    for kind, state in back.items():
        want = cache[kind].state_dict()
        if set(state) != set(want):
            raise SystemExit(f"{kind}: diffusers' conversion gives other keys: missing {sorted(set(want) - set(state))[:3]}, "
                             f"extra {sorted(set(state) - set(want))[:3]}")
        bad = [k for k in want if state[k].shape != want[k].shape or not torch.equal(state[k].float(), want[k].float())]
        if bad:
            raise SystemExit(f"{kind}: diffusers' conversion differs at {bad[:3]}")
        print(f"{kind}: diffusers' convert_ldm_* gives back all {len(want)} tensors of weights B exactly")

    os.makedirs(os.path.join(OUT, "ref"), exist_ok=True)
    path = os.path.join(OUT, "sd15_small_ldm.safetensors")
    save_file(ckpt, path, metadata={"format": "pt"})
    print(f"wrote {path}: {len(ckpt)} tensors, {os.path.getsize(path) / 1e6:.2f} MB")

    with open(os.path.join(SD15, "manifest.json")) as f:
        man = json.load(f)
    cases = {"comment": "written by scripts/checkpoint_reference.py; inputs from tests/sd15_data.py",
             "checkpoint": os.path.basename(path), "seed_prefix": SEED_PREFIX, "parts": []}
    for part in man["parts"]:
        name = part["name"]
        wrapper = export_sd15.make_wrapper(name, cfg, SEED_PREFIX, None, cache)
        feeds = sd15_data.make_inputs(f"{SEED_PREFIX}/{name}", part["inputs"], CASES[name], 0)
        with torch.no_grad():
            outs = wrapper(*[torch.from_numpy(feeds[i["name"]]) for i in part["inputs"]])
        if isinstance(outs, torch.Tensor):
            outs = (outs,)
        for o, t in zip(part["outputs"], outs):
            np.save(os.path.join(OUT, "ref", f"{name}.{o}.npy"), t.numpy().astype(np.float32))
        cases["parts"].append({"name": name, "model": f"sd15_small/{part['file']}", "inputs": part["inputs"],
                               "case": CASES[name], "outputs": part["outputs"]})
        print(f"{name}: reference outputs {[tuple(t.shape) for t in outs]}")
    cases["parts"].append(sdxl_unet(sfu, save_file))
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
