#!/usr/bin/env python3
"""Exports the diffusion transformers (SD3's MMDiT, Flux) from diffusers to ONNX, with PyTorch reference outputs.

Writes DIR/<part>.onnx, DIR/ref/<part>.<case>.<output>.npy and DIR/manifest.json in the format
tests/sd15_tests.py reads, so the same harness checks them against PyTorch and onnxruntime:
  .venv/bin/python scripts/export_dit.py --small --out-dir tests/models/dit_small
  .venv/bin/python tests/sd15_tests.py --manifest tests/models/dit_small/manifest.json

Weights are random (seeded); --small uses reduced widths and depths (the committed fixtures). Both parts go through
the TorchScript exporter (like scripts/export_sd15.py) with batch and sequence or image dims dynamic; rms_norm is
exported as its formula, which that exporter lacks. These blocks carry the patterns issue 10 is about: attention's rank-5 qkv split, Flux's rank-5/6 rotary
embedding, SD3's rank-6 unpatchify Einsum.
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
FULL = {"sd3_transformer": {}, "flux_transformer": {}}  # diffusers' defaults: SD3-medium and Flux.1-dev sizes


def part_io(part, cfg):
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


def build(part, cfg, seed):
    from diffusers import FluxTransformer2DModel, SD3Transformer2DModel
    torch.manual_seed(seed)
    cls = SD3Transformer2DModel if part == "sd3_transformer" else FluxTransformer2DModel
    return cls(**cfg).eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small", action="store_true", help="reduced widths/depths (the committed test fixtures)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--parts", default="sd3_transformer,flux_transformer")
    ap.add_argument("--opset", type=int, default=17)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out_dir, "ref"), exist_ok=True)
    prefix = os.path.basename(os.path.normpath(args.out_dir))
    manifest = {"comment": "Generated by scripts/export_dit.py. Diffusion transformers (random seeded weights); "
                           "ref/*.npy: PyTorch eager outputs; inputs regenerated by tests/sd15_data.py.",
                "prefix": prefix, "weights": "random (seeded)",
                "versions": {"torch": torch.__version__.split("+")[0], "onnx": onnx.__version__}, "parts": []}
    for part in args.parts.split(","):
        cfg = dict((SMALL if args.small else FULL)[part])
        io_spec = part_io(part, cfg)
        model = build(part, cfg, seed=1234)
        names = [i["name"] for i in io_spec["inputs"]]
        wrapper = (SD3 if part == "sd3_transformer" else Flux)(model)
        example = sd15_data.make_inputs(f"export/{part}", io_spec["inputs"], io_spec["cases"][0], 0)
        targs = tuple(torch.from_numpy(example[n]) for n in names)
        dyn = {n: {ax: f"{n}_{ax}" for ax in io_spec["dynamic"][n]} for n in names}
        dyn["sample"] = {0: "batch"}
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
        proto.producer_name, proto.doc_string = f"onnx2ggml-export_dit (torch {torch.__version__.split('+')[0]})", ""
        onnx.save(proto, path)
        refs = []
        for ci, case in enumerate(io_spec["cases"]):
            feeds = sd15_data.make_inputs(f"{prefix}/{part}", io_spec["inputs"], case, ci)
            with torch.no_grad():
                y = wrapper(*(torch.from_numpy(feeds[n]) for n in names)).numpy().astype(np.float32)
            rel = f"ref/{part}.{ci}.sample.npy"
            np.save(os.path.join(args.out_dir, rel), y)
            refs.append({"sample": rel})
            try:  # onnxruntime as a second opinion, where it has every kernel
                import onnxruntime as ort
                got = ort.InferenceSession(path).run(None, feeds)[0]
                err = metrics.errors(y, got)
                print(f"{part} case {ci}: onnxruntime vs PyTorch max abs {err[0]:.2e} rel {err[1]:.2e}")
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
