#!/usr/bin/env python3
"""Exports the model families beyond SD 1.5 from diffusers and transformers to ONNX, with PyTorch reference outputs.

Parts: the diffusion transformers (SD3's MMDiT, Flux), an SDXL-style UNet (`added_cond_kwargs`: text_embeds and
time_ids, linear projections, deeper transformer stacks), ControlNet (its residuals are outputs), the TAESD decoder
(`AutoencoderTiny`) and CLIP-G (`CLIPTextModelWithProjection`). Writes DIR/<part>.onnx, DIR/ref/<part>.<case>.<output>.npy
and DIR/manifest.json in the format tests/sd15_tests.py reads, so the same harness checks them against PyTorch and
onnxruntime:
  .venv/bin/python scripts/export_families.py --small --out-dir tests/models/families_small
  .venv/bin/python tests/sd15_tests.py --manifest tests/models/families_small/manifest.json

Weights are random (seeded; ControlNet's zero-initialized output convs get random weights too, so that its outputs
say something); --small uses reduced widths and depths (the committed fixtures). Every part goes through the
TorchScript exporter (opset 17, rms_norm exported as its formula) except Flux, which goes through torch.export: the
TorchScript trace of its rotary embedding fixes the example's batch and lengths. The DiT blocks carry the rank-5/6
patterns of issue 10: attention's qkv split, Flux's rotary embedding, SD3's rank-6 unpatchify Einsum.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import warnings

import numpy as np
import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
import metrics  # noqa: E402
import sd15_data  # noqa: E402

SMALL = {
    "sd3_transformer": dict(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                            num_attention_heads=2, joint_attention_dim=32, caption_projection_dim=16,
                            pooled_projection_dim=32, out_channels=4, pos_embed_max_size=16),
    "flux_transformer": dict(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
                             num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
                             guidance_embeds=False, axes_dims_rope=(4, 6, 6)),
}
SMALL.update({
    "sdxl_unet": dict(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(16, 32),
                      down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                      up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                      attention_head_dim=(2, 4), use_linear_projection=True, addition_embed_type="text_time",
                      addition_time_embed_dim=8, projection_class_embeddings_input_dim=8 * 6 + 32,
                      transformer_layers_per_block=(1, 2), norm_num_groups=8),
    "controlnet": dict(in_channels=4, conditioning_channels=3, block_out_channels=(16, 32), layers_per_block=1,
                       down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), cross_attention_dim=32,
                       attention_head_dim=(2, 4), conditioning_embedding_out_channels=(8, 16), norm_num_groups=8),
    "taesd_decoder": dict(encoder_block_out_channels=(8, 8, 8, 8), decoder_block_out_channels=(8, 8, 8, 8),
                          num_encoder_blocks=(1, 1, 1, 1), num_decoder_blocks=(1, 1, 1, 1)),
    "clip_g": dict(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   max_position_embeddings=77, projection_dim=16, hidden_act="gelu", bos_token_id=98,
                   eos_token_id=99),
})
FULL = {k: {} for k in SMALL}  # diffusers' / transformers' defaults (not run here: see docs/models.md)


def part_io(part, cfg):
    f32 = lambda n, **kw: dict(name=n, dtype="float32", distribution="normal", **kw)  # noqa: E731
    t = {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1000.0]}
    if part == "sdxl_unet":
        return dict(inputs=[f32("sample"), t, f32("encoder_hidden_states"), f32("text_embeds"),
                            {"name": "time_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1024.0]}],
                    outputs=["out_sample"],
                    dynamic={"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0, 1],
                             "text_embeds": [0], "time_ids": [0]},
                    cases=[{"sample": [1, 4, 16, 16], "timestep": [1], "encoder_hidden_states": [1, 7, 32],
                            "text_embeds": [1, 32], "time_ids": [1, 6]},
                           {"sample": [2, 4, 24, 16], "timestep": [2], "encoder_hidden_states": [2, 5, 32],
                            "text_embeds": [2, 32], "time_ids": [2, 6]}])
    if part == "controlnet":
        return dict(inputs=[f32("sample"), t, f32("encoder_hidden_states"),
                            {"name": "controlnet_cond", "dtype": "float32", "distribution": "uniform",
                             "range": [0.0, 1.0]}],
                    outputs=[f"down_{k}" for k in range(4)] + ["mid"],
                    dynamic={"sample": [0, 2, 3], "timestep": [0], "encoder_hidden_states": [0, 1],
                             "controlnet_cond": [0, 2, 3]},
                    cases=[{"sample": [1, 4, 16, 16], "timestep": [1], "encoder_hidden_states": [1, 7, 32],
                            "controlnet_cond": [1, 3, 32, 32]},
                           {"sample": [2, 4, 16, 24], "timestep": [2], "encoder_hidden_states": [2, 5, 32],
                            "controlnet_cond": [2, 3, 32, 48]}])
    if part == "taesd_decoder":
        return dict(inputs=[f32("latent")], outputs=["sample"], dynamic={"latent": [0, 2, 3]},
                    cases=[{"latent": [1, 4, 8, 8]}, {"latent": [2, 4, 12, 8]}])
    if part == "clip_g":
        return dict(inputs=[{"name": "input_ids", "dtype": "int64", "distribution": "tokens",
                             "bos": cfg["bos_token_id"], "eos": cfg["eos_token_id"]}],
                    outputs=["text_embeds"], dynamic={"input_ids": [0]},
                    cases=[{"input_ids": [1, 77]}, {"input_ids": [2, 77]}])
    if part == "sd3_transformer":
        c, j, p = cfg.get("in_channels", 16), cfg.get("joint_attention_dim", 4096), cfg.get("pooled_projection_dim", 2048)
        return dict(
            inputs=[{"name": "hidden_states", "dtype": "float32", "distribution": "normal"},
                    {"name": "encoder_hidden_states", "dtype": "float32", "distribution": "normal"},
                    {"name": "pooled_projections", "dtype": "float32", "distribution": "normal"},
                    {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1000.0]}],
            outputs=["sample"],
            dynamic={"hidden_states": [0, 2, 3], "encoder_hidden_states": [0, 1], "pooled_projections": [0],
                     "timestep": [0]},
            cases=[{"hidden_states": [1, c, 8, 8], "encoder_hidden_states": [1, 8, j], "pooled_projections": [1, p],
                    "timestep": [1]},
                   {"hidden_states": [2, c, 12, 16], "encoder_hidden_states": [2, 5, j], "pooled_projections": [2, p],
                    "timestep": [2]}])
    c, j, p = cfg.get("in_channels", 64), cfg.get("joint_attention_dim", 4096), cfg.get("pooled_projection_dim", 768)
    return dict(
        inputs=[{"name": "hidden_states", "dtype": "float32", "distribution": "normal"},
                {"name": "encoder_hidden_states", "dtype": "float32", "distribution": "normal"},
                {"name": "pooled_projections", "dtype": "float32", "distribution": "normal"},
                {"name": "timestep", "dtype": "float32", "distribution": "uniform", "range": [0.0, 1.0]},
                {"name": "img_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 16.0]},
                {"name": "txt_ids", "dtype": "float32", "distribution": "uniform", "range": [0.0, 0.0]}],
        outputs=["sample"],
        dynamic={"hidden_states": [0, 1], "encoder_hidden_states": [0, 1], "pooled_projections": [0],
                 "timestep": [0], "img_ids": [0], "txt_ids": [0]},
        cases=[{"hidden_states": [1, 16, c], "encoder_hidden_states": [1, 8, j], "pooled_projections": [1, p],
                "timestep": [1], "img_ids": [16, 3], "txt_ids": [8, 3]},
               {"hidden_states": [2, 24, c], "encoder_hidden_states": [2, 6, j], "pooled_projections": [2, p],
                "timestep": [2], "img_ids": [24, 3], "txt_ids": [6, 3]}])


class SD3(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, hidden_states, encoder_hidden_states, pooled_projections, timestep):
        return self.model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                          pooled_projections=pooled_projections, timestep=timestep, return_dict=False)[0]


class Flux(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, hidden_states, encoder_hidden_states, pooled_projections, timestep, img_ids, txt_ids):
        return self.model(hidden_states=hidden_states, encoder_hidden_states=encoder_hidden_states,
                          pooled_projections=pooled_projections, timestep=timestep, img_ids=img_ids,
                          txt_ids=txt_ids, return_dict=False)[0]


@contextlib.contextmanager
def rms_norm_decomposed():
    """The TorchScript exporter has no aten::rms_norm; export its formula instead (what it computes is unchanged)."""
    orig = torch.nn.functional.rms_norm

    def rms_norm(x, shape, weight=None, eps=None):
        dims = tuple(range(-len(shape), 0))
        eps = torch.finfo(x.dtype).eps if eps is None else eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * weight if weight is not None else y

    torch.nn.functional.rms_norm = rms_norm
    try:
        yield
    finally:
        torch.nn.functional.rms_norm = orig


class SDXLUNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample, timestep, encoder_hidden_states, text_embeds, time_ids):
        return self.model(sample, timestep, encoder_hidden_states, return_dict=False,
                          added_cond_kwargs={"text_embeds": text_embeds, "time_ids": time_ids})[0]


class ControlNet(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, sample, timestep, encoder_hidden_states, controlnet_cond):
        down, mid = self.model(sample, timestep, encoder_hidden_states, controlnet_cond=controlnet_cond,
                               return_dict=False)
        return tuple(down) + (mid,)


class TaesdDecoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, latent):
        return self.model.decode(latent, return_dict=False)[0]


class ClipG(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids).text_embeds


WRAPPERS = {"sd3_transformer": lambda m: SD3(m), "flux_transformer": lambda m: Flux(m), "sdxl_unet": SDXLUNet,
            "controlnet": ControlNet, "taesd_decoder": TaesdDecoder, "clip_g": ClipG}


def build(part, cfg, seed):
    import diffusers
    torch.manual_seed(seed)
    if part == "clip_g":
        from transformers import CLIPTextConfig, CLIPTextModelWithProjection
        return CLIPTextModelWithProjection(CLIPTextConfig(**cfg)).eval()
    cls = {"sd3_transformer": diffusers.SD3Transformer2DModel, "flux_transformer": diffusers.FluxTransformer2DModel,
           "sdxl_unet": diffusers.UNet2DConditionModel, "controlnet": diffusers.ControlNetModel,
           "taesd_decoder": diffusers.AutoencoderTiny}[part]
    model = cls(**cfg).eval()
    if part == "controlnet":  # zero-initialized output convs would make every output 0
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.startswith(("controlnet_down_blocks", "controlnet_mid_block")):
                    p.copy_(torch.randn_like(p) * 0.1)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="reduced widths/depths (the committed test fixtures)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--parts", default=",".join(SMALL))
    ap.add_argument("--opset", type=int, default=17)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out_dir, "ref"), exist_ok=True)
    prefix = os.path.basename(os.path.normpath(args.out_dir))
    manifest = {"comment": "Generated by scripts/export_families.py. Model families beyond SD 1.5 (random seeded weights); "
                           "ref/*.npy: PyTorch eager outputs; inputs regenerated by tests/sd15_data.py.",
                "prefix": prefix, "weights": "random (seeded)",
                "versions": {"torch": torch.__version__.split("+")[0], "onnx": onnx.__version__}, "parts": []}
    for part in args.parts.split(","):
        cfg = dict((SMALL if args.small else FULL)[part])
        io_spec = part_io(part, cfg)
        model = build(part, cfg, seed=1234)
        names = [i["name"] for i in io_spec["inputs"]]
        wrapper = WRAPPERS[part](model)
        example = sd15_data.make_inputs(f"export/{part}", io_spec["inputs"], io_spec["cases"][0], 0)
        targs = tuple(torch.from_numpy(example[n]) for n in names)
        dyn = {n: {ax: f"{n}_{ax}" for ax in io_spec["dynamic"][n]} for n in names}
        for o in io_spec["outputs"]:
            dyn[o] = {0: "batch"}
        path = os.path.join(args.out_dir, part + ".onnx")
        dynamo = part == "flux_transformer"  # the TorchScript trace of Flux's rotary embedding fixes its lengths
        with warnings.catch_warnings(), torch.no_grad(), rms_norm_decomposed():
            warnings.simplefilter("ignore")
            if dynamo:
                ex = sd15_data.make_inputs(f"export/{part}", io_spec["inputs"], io_spec["cases"][1], 1)
                targs = tuple(torch.from_numpy(ex[n]) for n in names)  # batch 2: size 1 would be specialized
                auto = {n: {ax: torch.export.Dim.AUTO for ax in io_spec["dynamic"][n]} for n in names}
                proto = torch.onnx.export(wrapper, targs, dynamo=True, opset_version=max(args.opset, 18),
                                          input_names=names, output_names=io_spec["outputs"],
                                          dynamic_shapes=auto).model_proto
            else:
                buf = io.BytesIO()
                torch.onnx.export(wrapper, targs, buf, dynamo=False, opset_version=args.opset, input_names=names,
                                  output_names=io_spec["outputs"], dynamic_axes=dyn, do_constant_folding=True)
                proto = onnx.load_from_string(buf.getvalue())
        proto.producer_name, proto.doc_string = f"onnx2ggml-export_families (torch {torch.__version__.split('+')[0]})", ""
        onnx.save(proto, path)
        refs = []
        for ci, case in enumerate(io_spec["cases"]):
            feeds = sd15_data.make_inputs(f"{prefix}/{part}", io_spec["inputs"], case, ci)
            with torch.no_grad():
                ys = wrapper(*(torch.from_numpy(feeds[n]) for n in names))
            ys = ys if isinstance(ys, tuple) else (ys,)
            refs.append({})
            for o, y in zip(io_spec["outputs"], ys):
                rel = f"ref/{part}.{ci}.{o}.npy"
                np.save(os.path.join(args.out_dir, rel), y.numpy().astype(np.float32))
                refs[-1][o] = rel
            try:  # onnxruntime as a second opinion, where it has every kernel
                import onnxruntime as ort
                got = ort.InferenceSession(path).run(None, feeds)
                err = max(metrics.errors(y.numpy(), g)[1] for y, g in zip(ys, got))
                print(f"{part} case {ci}: onnxruntime vs PyTorch rel {err:.2e}")
            except Exception as e:  # noqa: BLE001
                print(f"{part} case {ci}: onnxruntime cannot run it: {str(e)[:120]}")
        entry = {"name": part, "file": part + ".onnx", "inputs": io_spec["inputs"], "outputs": io_spec["outputs"],
                 "cases": io_spec["cases"], "refs": refs, "opset": args.opset, "exporter": "torchscript",
                 "config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
                 "params": sum(p.numel() for p in model.parameters()), "tolerance": {"rel": 1e-4},
                 "ops": sorted({n.op_type for n in proto.graph.node})}
        if dynamo:
            entry["exporter"] = "dynamo"
            entry["ort"] = {"skip": "onnxruntime has no float64 Cos, which Flux's rotary embedding exports"}
        manifest["parts"].append(entry)
    with open(os.path.join(args.out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote", args.out_dir)


if __name__ == "__main__":
    main()
