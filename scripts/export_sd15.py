#!/usr/bin/env python3
"""Export Stable Diffusion 1.5 (VAE encoder/decoder, UNet, CLIP text encoder) to ONNX.

Developer-only (needs torch, diffusers, transformers: `scripts/setup.sh --with-torch`):

    .venv/bin/python scripts/export_sd15.py --small            # -> tests/models/sd15_small/ (committed)
    .venv/bin/python scripts/export_sd15.py                    # full size -> build/sd15_full/
    .venv/bin/python scripts/export_sd15.py --opset max        # newest opset of the exporter (20)
    .venv/bin/python scripts/export_sd15.py --weights DIR      # local diffusers folder (unet/ vae/ text_encoder/)
    .venv/bin/python scripts/export_sd15.py --weights sd15.safetensors   # original (LDM) single-file checkpoint
    .venv/bin/python scripts/export_sd15.py --small --parts text_encoder_bpe   # small tower, real CLIP vocabulary

The models are the real diffusers / transformers classes (AutoencoderKL, UNet2DConditionModel,
CLIPTextModel) built from the SD 1.5 configs below; without --weights they get seeded random
weights (no model hub is contacted). `--small` keeps the classes and block structure but shrinks
widths and depths so that the four graphs and the PyTorch reference outputs fit in a few MB.

Four graphs, each with dynamic batch / height / width / sequence axes:
  vae_encoder.onnx   sample [B,3,H,W] in [-1,1]  -> latent_mean, latent_logvar [B,4,H/8,W/8]
                     (the latent_dist parameters: mean, and logvar clamped to [-30, 20])
  vae_decoder.onnx   latent [B,4,h,w]            -> sample [B,3,8h,8w]   (vae.decode; the caller divides
                     latents by scaling_factor 0.18215 first, as the pipeline does)
  unet.onnx          sample [B,4,h,w], timestep [B] float32, encoder_hidden_states [B,S,768] -> out_sample
  text_encoder.onnx  input_ids [B,S] int64 -> last_hidden_state [B,S,768], pooler_output [B,768]

With --small, the extra part text_encoder_bpe (not in the default list) is the small text tower with CLIP's real
vocabulary of 49408 tokens, so that ids from the BPE tokenizer fit (examples/txt2img --prompt against diffusers).

Besides the graphs the script writes manifest.json (configs, inputs, shape cases) and, per part
and shape case, the PyTorch eager outputs as ref/<part>.<case>.<output>.npy. The inputs are not
stored: tests/sd15_data.py regenerates them from seeds. Each exported graph is also checked with
onnxruntime against PyTorch at every case (printed; --no-ort-check skips it).

Full-size graphs are written with all initializers in one external data file
(<part>.onnx.data, 64-byte aligned so onnx2ggml can map it without copying), which the UNet
(~3.4 GB of fp32 weights) needs anyway.

Exporter: the TorchScript exporter (dynamo=False). --dynamo selects the torch.export-based one; it also
works with onnx2ggml but is slower to export; with embedded weights its per-node metadata (stack traces) is
dropped. The committed dynamo fixtures (the flavours `dynamo-opsetN` of tests/flavour_tests.py) are made by
    for o in 18 21 23; do .venv/bin/python scripts/export_sd15.py --small --dynamo --opset $o \
        --parts unet,vae_decoder,text_encoder --out-dir tests/models/sd15_exports --no-refs; done
Opset 17 with TorchScript gives <part>.onnx and manifest.json; other variants get a suffix
(<part>.opset20.onnx + manifest.opset20.json, ".dynamo" for --dynamo) so they can sit side by side.
`--opset max` is 20 for TorchScript and 23 for --dynamo (torch 2.9).

--weights: a diffusers folder is read with from_pretrained(local_files_only=True) and its own configs;
a single file (the original CompVis/runwayml layout, e.g. v1-5-pruned-emaonly.safetensors) is converted
with diffusers' convert_ldm_*_checkpoint into the SD 1.5 configs below, and must match them exactly.
"""
import argparse
import io
import json
import os
import re
import shutil
import sys
import time
import warnings

import numpy as np
import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
import metrics  # noqa: E402
import model_data  # noqa: E402
import sd15_data  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

PARTS = ["vae_encoder", "vae_decoder", "unet", "text_encoder"]
EXTRA_PARTS = ["text_encoder_bpe"]  # --small only, exported when named in --parts

# ----------------------------------------------------------------------------- configs

# Stable Diffusion 1.5 (runwayml/stable-diffusion-v1-5 / stable-diffusion-v1-5/stable-diffusion-v1-5)
FULL = {
    "vae": dict(in_channels=3, out_channels=3, latent_channels=4, act_fn="silu",
                down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
                block_out_channels=[128, 256, 512, 512], layers_per_block=2, norm_num_groups=32,
                sample_size=512, scaling_factor=0.18215),
    "unet": dict(sample_size=64, in_channels=4, out_channels=4, center_input_sample=False,
                 flip_sin_to_cos=True, freq_shift=0,
                 down_block_types=["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"],
                 up_block_types=["UpBlock2D"] + ["CrossAttnUpBlock2D"] * 3,
                 block_out_channels=[320, 640, 1280, 1280], layers_per_block=2, downsample_padding=1,
                 mid_block_scale_factor=1, act_fn="silu", norm_num_groups=32, norm_eps=1e-5,
                 cross_attention_dim=768, attention_head_dim=8),
    # openai/clip-vit-large-patch14 text tower (eos_token_id 2 = the legacy "argmax of ids" pooling)
    "text_encoder": dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                         num_attention_heads=12, max_position_embeddings=77, hidden_act="quick_gelu",
                         layer_norm_eps=1e-5, projection_dim=768, bos_token_id=0, eos_token_id=2,
                         pad_token_id=1),
}

# Same classes and block layout, reduced widths/depths (VAE keeps 4 blocks, i.e. the 8x scale).
SMALL = {
    "vae": dict(FULL["vae"], block_out_channels=[16, 16, 16, 16], layers_per_block=1, norm_num_groups=8,
                sample_size=64),
    "unet": dict(FULL["unet"], sample_size=32, down_block_types=["CrossAttnDownBlock2D", "DownBlock2D"],
                 up_block_types=["UpBlock2D", "CrossAttnUpBlock2D"], block_out_channels=[16, 32],
                 layers_per_block=1, norm_num_groups=8, cross_attention_dim=32, attention_head_dim=4),
    "text_encoder": dict(FULL["text_encoder"], vocab_size=1000, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, projection_dim=32),
}
SMALL["text_encoder_bpe"] = dict(SMALL["text_encoder"], vocab_size=49408)

SEQ = 77  # CLIP context length


def part_io(part, ctx, vocab):
    """Input specs, output names, dynamic axes, example shapes and test cases of one part.

    ctx: the UNet's cross_attention_dim; vocab: the text encoder's vocab_size."""
    if part == "vae_encoder":
        return dict(
            inputs=[{"name": "sample", "dtype": "float32", "distribution": "uniform", "range": [-1.0, 1.0]}],
            outputs=["latent_mean", "latent_logvar"],
            dynamic_axes={"sample": {0: "batch", 2: "height", 3: "width"},
                          "latent_mean": {0: "batch", 2: "latent_height", 3: "latent_width"},
                          "latent_logvar": {0: "batch", 2: "latent_height", 3: "latent_width"}},
            example={"sample": [1, 3, 128, 96]},
            small_cases=[{"sample": [1, 3, 256, 256]}, {"sample": [1, 3, 512, 384]}],
            full_cases=[{"sample": [1, 3, 256, 256]}])
    if part == "vae_decoder":
        return dict(
            inputs=[{"name": "latent", "dtype": "float32", "distribution": "normal"}],
            outputs=["sample"],
            dynamic_axes={"latent": {0: "batch", 2: "latent_height", 3: "latent_width"},
                          "sample": {0: "batch", 2: "height", 3: "width"}},
            example={"latent": [1, 4, 16, 12]},
            small_cases=[{"latent": [1, 4, 32, 32]}, {"latent": [1, 4, 64, 48]}],
            full_cases=[{"latent": [1, 4, 32, 32]}])
    if part == "unet":
        return dict(
            inputs=[{"name": "sample", "dtype": "float32", "distribution": "normal"},
                    {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1000.0]},
                    {"name": "encoder_hidden_states", "dtype": "float32", "distribution": "normal"}],
            outputs=["out_sample"],
            dynamic_axes={"sample": {0: "batch", 2: "height", 3: "width"}, "timestep": {0: "batch"},
                          "encoder_hidden_states": {0: "batch", 1: "sequence"},
                          "out_sample": {0: "batch", 2: "height", 3: "width"}},
            example={"sample": [2, 4, 16, 24], "timestep": [2], "encoder_hidden_states": [2, SEQ, ctx]},
            small_cases=[{"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, SEQ, ctx]},
                         {"sample": [2, 4, 48, 64], "timestep": [2], "encoder_hidden_states": [2, SEQ, ctx]}],
            full_cases=[{"sample": [2, 4, 32, 32], "timestep": [2], "encoder_hidden_states": [2, SEQ, ctx]}])
    if part in ("text_encoder", "text_encoder_bpe"):
        return dict(
            inputs=[{"name": "input_ids", "dtype": "int64", "distribution": "tokens",
                     "bos": vocab - 2, "eos": vocab - 1}],
            outputs=["last_hidden_state", "pooler_output"],
            dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                          "last_hidden_state": {0: "batch", 1: "sequence"}, "pooler_output": {0: "batch"}},
            example={"input_ids": [2, SEQ]},
            small_cases=[{"input_ids": [1, SEQ]}, {"input_ids": [2, SEQ]}],
            full_cases=[{"input_ids": [1, SEQ]}])
    raise ValueError(part)


# ----------------------------------------------------------------------------- wrappers

class VaeEncoder(nn.Module):
    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, sample):
        dist = self.vae.encode(sample).latent_dist
        return dist.mean, dist.logvar


class VaeDecoder(nn.Module):
    def __init__(self, vae):
        super().__init__()
        self.vae = vae

    def forward(self, latent):
        return self.vae.decode(latent, return_dict=False)[0]


class Unet(nn.Module):
    def __init__(self, unet):
        super().__init__()
        self.unet = unet

    def forward(self, sample, timestep, encoder_hidden_states):
        return self.unet(sample, timestep, encoder_hidden_states, return_dict=False)[0]


class TextEncoder(nn.Module):
    def __init__(self, text_encoder):
        super().__init__()
        self.text_encoder = text_encoder

    def forward(self, input_ids):
        out = self.text_encoder(input_ids=input_ids)
        return out.last_hidden_state, out.pooler_output


# ----------------------------------------------------------------------------- models

def _randomize_norms(model, seed):
    """Non-trivial GroupNorm/LayerNorm affine parameters (defaults are 1 and 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.GroupNorm, nn.LayerNorm)) and m.weight is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) * 0.8 + 0.6)
                if m.bias is not None:
                    m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.4 - 0.2)


def _load_ldm_checkpoint(path):
    from safetensors.torch import load_file
    if path.endswith(".safetensors"):
        return load_file(path)
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    return ckpt.get("state_dict", ckpt)


def _load_state(module, state, what):
    missing, unexpected = module.load_state_dict(state, strict=False)
    unexpected = [k for k in unexpected if not k.endswith("position_ids")]
    if missing or unexpected:
        raise SystemExit(f"{what}: checkpoint does not match the SD 1.5 architecture: "
                         f"{len(missing)} missing (e.g. {missing[:3]}), {len(unexpected)} unexpected "
                         f"(e.g. {unexpected[:3]})")


def build_model(kind, cfg, seed_name, weights=None):
    """kind: vae | unet | text_encoder | text_encoder_bpe -> eval-mode torch module (fp32)."""
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    def fresh():
        torch.manual_seed(model_data.name_seed(seed_name, "torch") % (2 ** 31))
        if kind == "vae":
            m = AutoencoderKL(**cfg["vae"])
        elif kind == "unet":
            m = UNet2DConditionModel(**cfg["unet"])
        else:
            m = CLIPTextModel(CLIPTextConfig(**cfg[kind]))
        return m

    if weights is None:
        m = fresh()
        _randomize_norms(m, model_data.name_seed(seed_name, "norm") % (2 ** 31))
    elif os.path.isdir(weights):
        sub = {"vae": "vae", "unet": "unet", "text_encoder": "text_encoder"}[kind]
        if kind == "vae":
            m = AutoencoderKL.from_pretrained(weights, subfolder=sub, local_files_only=True)
        elif kind == "unet":
            m = UNet2DConditionModel.from_pretrained(weights, subfolder=sub, local_files_only=True)
        elif not os.path.exists(os.path.join(weights, sub, "model.safetensors")):
            m = CLIPTextModel.from_pretrained(os.path.join(weights, sub), local_files_only=True)
        else:  # state read by hand: transformers 5 saves CLIP's keys without the "text_model." of 4.x
            from safetensors.torch import load_file
            folder = os.path.join(weights, sub)
            m = CLIPTextModel(CLIPTextConfig.from_pretrained(folder, local_files_only=True))
            own = set(m.state_dict())
            state = {("text_model." + k if "text_model." + k in own else k[len("text_model."):]
                      if k.startswith("text_model.") and k not in own else k): v
                     for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
            _load_state(m, state, folder)
    else:  # original Stable Diffusion single-file checkpoint (.safetensors / .ckpt)
        from diffusers.loaders import single_file_utils as sfu
        ckpt = _load_ldm_checkpoint(weights)
        m = fresh()
        if kind == "vae":
            state = sfu.convert_ldm_vae_checkpoint(ckpt, dict(m.config))
        elif kind == "unet":
            state = sfu.convert_ldm_unet_checkpoint(ckpt, dict(m.config))
        else:
            state = sfu.convert_ldm_clip_checkpoint(ckpt)
            own = set(m.state_dict())
            state = {(k[len("text_model."):] if k.startswith("text_model.") and k not in own else k): v
                     for k, v in state.items()}
        _load_state(m, state, f"{weights} ({kind})")
    m = m.float().eval()
    if kind.startswith("text_encoder"):
        m.config._attn_implementation = "eager"  # plain MatMul/Softmax attention with an additive causal mask
    return m


def make_wrapper(part, cfg, prefix, weights, cache):
    kind = {"vae_encoder": "vae", "vae_decoder": "vae"}.get(part, part)
    if kind not in cache:
        cache[kind] = build_model(kind, cfg, f"{prefix}/{kind}", weights)
    m = cache[kind]
    return {"vae_encoder": VaeEncoder, "vae_decoder": VaeDecoder, "unet": Unet,
            "text_encoder": TextEncoder, "text_encoder_bpe": TextEncoder}[part](m).eval()


def count_params(part, wrapper):
    """Parameters the part's graph uses (the VAE wrappers share one AutoencoderKL)."""
    if part == "vae_encoder":
        mods = [wrapper.vae.encoder, wrapper.vae.quant_conv]
    elif part == "vae_decoder":
        mods = [wrapper.vae.decoder, wrapper.vae.post_quant_conv]
    else:
        mods = [wrapper]
    return sum(p.numel() for m in mods if m is not None for p in m.parameters())


# ----------------------------------------------------------------------------- export

def _consolidate_external_data(onnx_path, location):
    """Rewrite every external tensor of `onnx_path` into one file `location` (64-byte aligned)."""
    folder = os.path.dirname(onnx_path)
    proto = onnx.load(onnx_path, load_external_data=False)
    sources = set()
    offset = 0
    tmp = os.path.join(folder, location + ".tmp")
    with open(tmp, "wb") as out:
        for init in proto.graph.initializer:
            if init.data_location == onnx.TensorProto.EXTERNAL:
                info = {e.key: e.value for e in init.external_data}
                src = os.path.join(folder, info["location"])
                with open(src, "rb") as f:
                    f.seek(int(info.get("offset", 0)))
                    data = f.read(int(info["length"])) if "length" in info else f.read()
                sources.add(src)
            elif init.HasField("raw_data") and len(init.raw_data) >= 1024:
                data = init.raw_data
                init.ClearField("raw_data")
            else:
                continue
            pad = (-offset) % model_data.DATA_ALIGN
            out.write(b"\0" * pad)
            offset += pad
            out.write(data)
            del init.external_data[:]
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
                e = init.external_data.add()
                e.key, e.value = key, value
            init.data_location = onnx.TensorProto.EXTERNAL
            offset += len(data)
    for src in sources:
        if os.path.abspath(src) != os.path.abspath(os.path.join(folder, location)):
            os.remove(src)
    os.replace(tmp, os.path.join(folder, location))
    with open(onnx_path, "wb") as f:
        f.write(proto.SerializeToString())
    return offset


def export_part(wrapper, part, io_spec, path, opset, dynamo, external):
    feeds = sd15_data.make_inputs("export/" + part, io_spec["inputs"], io_spec["example"], 0)
    args = tuple(torch.from_numpy(feeds[i["name"]]) for i in io_spec["inputs"])
    names = [i["name"] for i in io_spec["inputs"]]
    t0 = time.perf_counter()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        if dynamo:
            dyn = {n: {ax: torch.export.Dim.AUTO for ax in io_spec["dynamic_axes"][n]} for n in names}
            prog = torch.onnx.export(wrapper, args, dynamo=True, opset_version=opset, input_names=names,
                                     output_names=io_spec["outputs"], dynamic_shapes=dyn, external_data=external)
            if external:
                prog.save(path, external_data=True)
                proto = None
            else:
                proto = prog.model_proto
        elif external:
            tmpdir = path + ".parts"
            shutil.rmtree(tmpdir, ignore_errors=True)
            os.makedirs(tmpdir)
            tmp_path = os.path.join(tmpdir, os.path.basename(path))
            torch.onnx.export(wrapper, args, tmp_path, dynamo=False, opset_version=opset, input_names=names,
                              output_names=io_spec["outputs"], dynamic_axes=io_spec["dynamic_axes"],
                              do_constant_folding=True, external_data=True)
            proto = None
        else:
            buf = io.BytesIO()
            torch.onnx.export(wrapper, args, buf, dynamo=False, opset_version=opset, input_names=names,
                              output_names=io_spec["outputs"], dynamic_axes=io_spec["dynamic_axes"],
                              do_constant_folding=True)
            proto = onnx.load_from_string(buf.getvalue())
    t_export = time.perf_counter() - t0
    producer = f"onnx2ggml-export_sd15 (torch {torch.__version__.split('+')[0]})"
    if proto is not None:  # embedded weights
        proto.producer_name, proto.doc_string = producer, ""
        for node in proto.graph.node:  # dynamo's stack traces and module paths: half the file, and local paths
            del node.metadata_props[:]
        onnx.checker.check_model(proto, full_check=True)
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
    else:
        location = os.path.basename(path) + ".data"
        if not dynamo:
            os.replace(tmp_path, path)
            for fn in os.listdir(tmpdir):  # per-tensor files written by the exporter
                os.replace(os.path.join(tmpdir, fn), os.path.join(os.path.dirname(path), fn))
            os.rmdir(tmpdir)
        _consolidate_external_data(path, location)
        proto = onnx.load(path, load_external_data=False)
        proto.producer_name, proto.doc_string = producer, ""
        with open(path, "wb") as f:
            f.write(proto.SerializeToString())
        onnx.checker.check_model(path, full_check=True)
    return proto, t_export


def export_optimum(model, path, opset):
    """The text encoder as optimum exports it in a Stable Diffusion pipeline (its "clip-text" ONNX config; optimum
    and its transformers pin live in a separate venv, see --optimum). Returns the proto and the export time."""
    from pathlib import Path

    from optimum.exporters.onnx.convert import export
    from optimum.exporters.onnx.model_configs import CLIPTextOnnxConfig
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        export(model, CLIPTextOnnxConfig(model.config, task="feature-extraction"), Path(path), opset=opset)
    proto = onnx.load(path)
    proto.producer_name = f"onnx2ggml-export_sd15 (optimum, torch {torch.__version__.split('+')[0]})"
    onnx.checker.check_model(proto, full_check=True)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    return proto, time.perf_counter() - t0


# ----------------------------------------------------------------------------- references

def torch_outputs(wrapper, io_spec, feeds):
    args = tuple(torch.from_numpy(feeds[i["name"]]) for i in io_spec["inputs"])
    with torch.no_grad():
        out = wrapper(*args)
    out = out if isinstance(out, (tuple, list)) else (out,)
    return {name: o.detach().cpu().numpy().astype(np.float32) for name, o in zip(io_spec["outputs"], out)}


def rel_err(ref, got):
    return tuple(metrics.errors(ref, got)[:2])  # (max abs err, rel err)


def ort_check(path, feeds, refs, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    t0 = time.perf_counter()
    got = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    dt = time.perf_counter() - t0
    return {name: rel_err(ref, got[name]) for name, ref in refs.items()}, dt


# ----------------------------------------------------------------------------- main

def ref_file(part, ci, output, suffix=""):
    return f"ref/{part}{suffix}.{ci}.{sanitize(output)}.npy"


def sanitize(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def loaded_configs(cache):
    """JSON-able configs of the models loaded with --weights."""
    out = {}
    for kind, m in cache.items():
        conf = m.config.to_dict() if hasattr(m.config, "to_dict") else dict(m.config)
        out[kind] = {k: v for k, v in conf.items() if not k.startswith("_") or k == "_class_name"}
    return out


def shape_str(case):
    return " ".join("x".join(map(str, s)) for s in case.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="reduced widths/depths (the committed test fixtures)")
    ap.add_argument("--out-dir", default=None,
                    help="default: tests/models/sd15_small (--small) or build/sd15_full")
    ap.add_argument("--parts", default=",".join(PARTS), help="comma list of " + ",".join(PARTS + EXTRA_PARTS))
    ap.add_argument("--opset", default=None, help="ONNX opset, or 'max' for the newest the exporter supports "
                                                  "(default 17; 18 with --optimum)")
    ap.add_argument("--dynamo", action="store_true", help="torch.export-based exporter instead of TorchScript")
    ap.add_argument("--optimum", action="store_true",
                    help="the text encoder through optimum's exporter (opset 18 unless --opset; run with a venv that "
                         "has optimum-onnx, and --weights from --save-pretrained)")
    ap.add_argument("--weights", default=None,
                    help="local diffusers folder (unet/ vae/ text_encoder/) or SD 1.5 single-file .safetensors/.ckpt")
    ap.add_argument("--save-pretrained", default=None, metavar="DIR",
                    help="write each part's model as a diffusers/transformers folder DIR/<model> instead of exporting "
                         "(input for other exporters, e.g. optimum-cli)")
    ap.add_argument("--no-refs", action="store_true", help="skip the PyTorch reference outputs")
    ap.add_argument("--no-ort-check", action="store_true", help="skip the onnxruntime vs PyTorch check")
    ap.add_argument("--threads", type=int, default=0, help="torch / onnxruntime threads (0: default)")
    args = ap.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    args.opset = args.opset or ("18" if args.optimum else "17")
    if args.optimum and args.parts != "text_encoder":
        raise SystemExit("--optimum exports the text encoder only: --parts text_encoder")
    if args.opset == "max":
        from torch.onnx import _constants
        opset = _constants.ONNX_MAX_OPSET if args.dynamo else _constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET
    else:
        opset = int(args.opset)
    cfg = SMALL if args.small else FULL
    prefix = "sd15_small" if args.small else "sd15"
    default_dir = os.path.join(REPO, "tests", "models", "sd15_small") if args.small else \
        os.path.join(REPO, "build", "sd15_full")
    out_dir = os.path.abspath(args.out_dir or default_dir)
    os.makedirs(os.path.join(out_dir, "ref"), exist_ok=True)
    parts = [p for p in args.parts.split(",") if p]
    for p in parts:
        if p not in PARTS + EXTRA_PARTS or (p in EXTRA_PARTS and not args.small):
            raise SystemExit(f"unknown part {p!r}" + (" (--small only)" if p in EXTRA_PARTS else ""))

    import diffusers
    import transformers
    # opset 17 / TorchScript keeps plain names; other variants get a suffix so they can sit side by side
    suffix = ("" if opset == 17 else f".opset{opset}") + (".dynamo" if args.dynamo else "") + \
        (".optimum" if args.optimum else "")
    manifest_path = os.path.join(out_dir, f"manifest{suffix}.json")
    old = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = {e["name"]: e for e in json.load(f).get("parts", [])}

    cache = {}
    entries = []
    for part in PARTS + EXTRA_PARTS:
        if part not in parts:
            if part in old:
                entries.append(old[part])
            continue
        wrapper = make_wrapper(part, cfg, prefix, args.weights, cache)
        if args.save_pretrained:
            kind = {"vae_encoder": "vae", "vae_decoder": "vae"}.get(part, part)
            cache[kind].save_pretrained(os.path.join(args.save_pretrained, kind))
            print(f"{part}: saved {os.path.join(args.save_pretrained, kind)}")
            continue
        # with --weights the loaded configs decide the context width and vocabulary
        ctx = cache["unet"].config.cross_attention_dim if "unet" in cache else cfg["unet"]["cross_attention_dim"]
        te = part if part.startswith("text_encoder") else "text_encoder"
        vocab = cache[te].config.vocab_size if te in cache else cfg[te]["vocab_size"]
        io_spec = part_io(part, ctx, vocab)
        cases = io_spec["small_cases"] if args.small else io_spec["full_cases"]
        n_params = count_params(part, wrapper)
        fname = part + suffix + ".onnx"
        path = os.path.join(out_dir, fname)
        if args.optimum:
            proto, t_export = export_optimum(cache[part], path, opset)
        else:
            proto, t_export = export_part(wrapper, part, io_spec, path, opset, args.dynamo, external=not args.small)
        ops = sorted({n.op_type for n in proto.graph.node})
        size = os.path.getsize(path) + (os.path.getsize(path + ".data") if os.path.exists(path + ".data") else 0)
        print(f"{part}: {n_params} params, {len(proto.graph.node)} nodes, {size / 1e6:.2f} MB, "
              f"export {t_export:.1f}s -> {path}", flush=True)

        entry = {
            "name": part,
            "file": fname,
            "opset": opset,
            "exporter": "optimum" if args.optimum else "dynamo" if args.dynamo else "torchscript",
            "params": n_params,
            "external_data": not args.small,
            "inputs": io_spec["inputs"],
            "outputs": io_spec["outputs"],
            "cases": cases,
            "refs": [],
            "tolerance": {"rel": 1e-4},
            "ops": ops,
        }
        for ci, case in enumerate(cases):
            feeds = sd15_data.make_inputs(f"{prefix}/{part}", io_spec["inputs"], case, ci)
            if args.no_refs:
                continue
            t0 = time.perf_counter()
            refs = torch_outputs(wrapper, io_spec, feeds)
            t_torch = time.perf_counter() - t0
            files = {}
            for name, arr in refs.items():
                rel = ref_file(part, ci, name, suffix)
                np.save(os.path.join(out_dir, rel), arr)
                files[name] = rel
            entry["refs"].append(files)
            stats = ", ".join(f"{n} {list(a.shape)} max|.| {np.abs(a).max():.3g} std {a.std():.3g}"
                              for n, a in refs.items())
            line = f"  case {ci} [{shape_str(case)}]: torch {t_torch:.2f}s; {stats}"
            if not args.no_ort_check:
                errs, t_ort = ort_check(path, feeds, refs, args.threads)
                line += f"; ort {t_ort:.2f}s " + " ".join(f"{n}: rel {r:.2e}" for n, (_, r) in errs.items())
            print(line, flush=True)
        entries.append(entry)

    if args.save_pretrained:
        return
    manifest = {
        "comment": "Generated by scripts/export_sd15.py. Stable Diffusion 1.5 parts "
                   + ("(reduced sizes, random seeded weights)" if args.small else "(full size)")
                   + "; ref/*.npy: PyTorch eager outputs; inputs regenerated by tests/sd15_data.py.",
        "prefix": prefix,
        "versions": {"torch": torch.__version__.split("+")[0], "diffusers": diffusers.__version__,
                     "transformers": transformers.__version__, "onnx": onnx.__version__},
        "weights": "random (seeded)" if args.weights is None else os.path.basename(os.path.normpath(args.weights)),
        "configs": cfg if args.weights is None else loaded_configs(cache),
        "parts": entries,
    }
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, default=str)
        f.write("\n")
    print(f"wrote {manifest_path}")


if __name__ == "__main__":
    main()
