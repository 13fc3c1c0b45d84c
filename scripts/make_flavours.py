#!/usr/bin/env python3
"""Rewrites the small SD 1.5 parts the way published Stable Diffusion ONNX downloads are made.

Every flavour is made by onnxruntime's own Python package from tests/models/sd15_small (nothing is committed but
this script; a few CPU seconds per optimized part, the UNet most):
  olive        optimize_model(model_type=unet|vae|clip) with FusionOptions' defaults, as Olive's SD examples
               run the OrtTransformersOptimization pass;
  amuse        the options of the TensorStack/Amuse converter, set one by one: NHWC GroupNorm, NhwcConv,
               SkipGroupNorm, BiasSplitGelu, BiasAdd, packed MultiHeadAttention (QKV and KV), SkipLayerNorm;
  nchw         the defaults with channels-first GroupNorm (channels_last=0), plain Conv and MultiHeadAttention
               with separate Q, K and V inputs (no packing);
  fp16         no fusion: onnxruntime.transformers.float16.convert_float_to_float16 only;
  fp16-f32ops  the same with op_block_list (normalizations, Softmax, Erf, ReduceMean, Pow, Sqrt kept in f32 between
               Cast nodes, as mixed-precision fp16 files are made: fusions must read through those Casts);
  dynamo-opsetN  torch 2.9's dynamo exporter at opsets 18, 21 and 23 (each also as dynamo-opsetN-fp16-io32,
               through the fp16 converter), and
  optimum-opset18  the text encoder through optimum's exporter (its SD pipeline's "clip-text" config): committed
               files (tests/models/sd15_exports, made by scripts/export_sd15.py --dynamo / --optimum; see
               tests/models/README.md), copied here so that one folder holds every flavour.
The other model families (tests/models/families_small) go through their own optimizer types, fp32 only:
  mmdit        optimize_model(model_type="mmdit") of the SD3 and Flux transformers (LayerNormalization,
               SimplifiedLayerNormalization, FastGelu, MultiHeadAttention);
  t5           optimize_model(model_type="t5") of the T5 v1.1 encoder (SkipSimplifiedLayerNormalization, FastGelu;
               with its attention mask also RelativePositionBias and contrib Attention).
Each optimized flavour in fp32 and in fp16; every fp16 flavour with keep_io_types True (suffix -io32: float
inputs and outputs stay float32) and False (-io16). Writes OUT/<flavour>/<part>.onnx and OUT/flavours.json
(flavour, part, file, fp16, io16, contrib ops, the op counts), and prints the contrib ops of each file.

Usage: .venv/bin/python scripts/make_flavours.py OUT [--parts unet,vae_decoder,text_encoder] [--flavours REGEX]
       [--src DIR]   (another manifest folder, e.g. the full-size parts of scripts/export_sd15.py; files over
                      2 GB are written with external data, as the originals are)
       [--exports DIR] (where the other exporters' files are: tests/models/sd15_exports for the small parts; for
                      full-size ones, the --out-dir of `export_sd15.py --dynamo --opset N`)
(--parts picks the SD 1.5 parts; the family flavours are made only from the committed small fixtures, and the
exporter flavours with --src only when --exports is given.)
"""
import argparse
import collections
import contextlib
import io
import json
import logging
import os
import re
import shutil
import sys
import time

import onnx

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = os.path.join(REPO, "tests", "models", "sd15_small")
EXPORTS = os.path.join(REPO, "tests", "models", "sd15_exports")
FAMILIES = os.path.join(REPO, "tests", "models", "families_small")
# The optimizer's model type for each part (the VAE encoder and decoder are both "vae").
MODEL_TYPES = {"unet": "unet", "vae_decoder": "vae", "vae_encoder": "vae", "text_encoder": "clip",
               "text_encoder_bpe": "clip"}
DEFAULT_PARTS = ("unet", "vae_decoder", "text_encoder")
AMUSE_OPTIONS = {"enable_nhwc_conv": True, "group_norm_channels_last": True, "enable_group_norm": True,
                 "enable_skip_group_norm": True, "enable_bias_splitgelu": True, "enable_bias_add": True,
                 "enable_packed_qkv": True, "enable_packed_kv": True, "enable_skip_layer_norm": True,
                 "enable_bias_skip_layer_norm": True, "enable_gelu": True, "enable_bias_gelu": True,
                 "enable_layer_norm": True, "enable_attention": True, "use_multi_head_attention": True}
NCHW_OPTIONS = {"enable_nhwc_conv": False, "group_norm_channels_last": False, "enable_packed_qkv": False,
                "enable_packed_kv": False}
# (name, fusion options or None for no optimizer, fp16, keep_io_types)
FLAVOURS = [("olive-fp32", {}, False, True), ("olive-fp16-io32", {}, True, True),
            ("olive-fp16-io16", {}, True, False),
            ("amuse-fp32", AMUSE_OPTIONS, False, True), ("amuse-fp16-io32", AMUSE_OPTIONS, True, True),
            ("amuse-fp16-io16", AMUSE_OPTIONS, True, False),
            ("nchw-fp32", NCHW_OPTIONS, False, True),
            ("fp16-io32", None, True, True), ("fp16-io16", None, True, False),
            ("fp16-f32ops-io32", None, True, True)]
# op_block_list of the fp16 flavours that keep ops in f32 (the converter wraps them in Casts)
FP16_BLOCK = {"fp16-f32ops-io32": ["InstanceNormalization", "LayerNormalization", "Softmax", "Erf", "ReduceMean",
                                   "Pow", "Sqrt"]}
# (flavour, file suffix, parts) of the committed exports made by other exporters than ours
EXPORTS_FLAVOURS = [(f"dynamo-opset{o}", f".opset{o}.dynamo", DEFAULT_PARTS) for o in (18, 21, 23)] + \
    [("optimum-opset18", ".opset18.optimum", ("text_encoder",))]
EXPORTS_FP16 = ("dynamo-opset18", "dynamo-opset21", "dynamo-opset23")  # also made as <name>-fp16-io32
# (flavour, optimizer model type, families_small parts)
FAMILY_FLAVOURS = [("mmdit-fp32", "mmdit", ("sd3_transformer", "flux_transformer")),
                   ("t5-fp32", "t5", ("t5_encoder", "t5_encoder_masked"))]


def fusion_options(model_type, overrides):
    from onnxruntime.transformers.fusion_options import FusionOptions
    opts = FusionOptions(model_type)
    for k, v in overrides.items():
        if not hasattr(opts, k):
            raise SystemExit(f"error: this onnxruntime's FusionOptions has no {k}")
        setattr(opts, k, v)
    return opts


def patch_num_heads():
    """onnxruntime 1.23's UNet attention fusion calls int() on a shape-[1] array, an error since NumPy 2.4 (the
    torch 2 pattern, heads from a Concat); read that one value as a scalar instead."""
    import numpy as np
    import onnxruntime.transformers.optimizer  # noqa: F401 (puts its folder on sys.path: its modules import flat)
    from fusion_attention_unet import FusionAttentionUnet
    orig = FusionAttentionUnet.get_num_heads
    if getattr(orig, "patched", False):
        return

    def get_num_heads(self, reshape_q, is_torch2=False):
        try:
            return orig(self, reshape_q, is_torch2)
        except TypeError:
            value = self.model.get_constant_value(self.model.get_parent(reshape_q, 1).input[2])
            return int(np.asarray(value).reshape(-1)[0])
    get_num_heads.patched = True
    FusionAttentionUnet.get_num_heads = get_num_heads


@contextlib.contextmanager
def quiet():
    """The optimizer logs every fusion and prints shape-inference warnings; keep the output to our table."""
    logging.disable(logging.WARNING)
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):  # the mmdit fusion progress bar
            yield
    finally:
        logging.disable(logging.NOTSET)


def make_one(src, dst, model_type, options, fp16, keep_io, block=None):
    from onnxruntime.transformers.float16 import convert_float_to_float16
    from onnxruntime.transformers.optimizer import optimize_model
    patch_num_heads()
    with quiet():
        if options is None:
            model = onnx.load(src)
            big = sum(len(t.raw_data) for t in model.graph.initializer) > 1_900_000_000
            # shape inference serializes the model: not past protobuf's 2 GB (the full-size UNet)
            model = convert_float_to_float16(model, keep_io_types=keep_io, op_block_list=block, disable_shape_infer=big)
        else:
            opt = optimize_model(src, model_type=model_type, opt_level=0,
                                 optimization_options=fusion_options(model_type, options))
            if fp16:
                opt.convert_float_to_float16(keep_io_types=keep_io)
            model = opt.model
    big = sum(len(t.raw_data) for t in model.graph.initializer) > 1_900_000_000  # protobuf's 2 GB limit
    onnx.save(model, dst, save_as_external_data=big, location=os.path.basename(dst) + ".data" if big else None)
    return model


def copy_export(src, dst):
    """Copies an exporter's file, and links (or copies) the external data files it names beside it."""
    shutil.copyfile(src, dst)
    locations = {e.value for t in onnx.load(src, load_external_data=False).graph.initializer
                 for e in t.external_data if e.key == "location"}
    for loc in locations:
        to = os.path.join(os.path.dirname(dst), loc)
        if os.path.exists(to):
            os.remove(to)
        try:
            os.link(os.path.join(os.path.dirname(src), loc), to)
        except OSError:
            shutil.copyfile(os.path.join(os.path.dirname(src), loc), to)


def op_counts(model):
    c = collections.Counter()
    for n in model.graph.node:
        c[f"{n.domain}.{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type] += 1
    return dict(sorted(c.items()))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--parts", default=",".join(DEFAULT_PARTS), help="comma-separated sd15_small part names")
    ap.add_argument("--flavours", default=None, help="regex on flavour names")
    ap.add_argument("--src", default=SMALL, help="folder with the parts and their manifest.json")
    ap.add_argument("--exports", default=None, help="folder of the other exporters' files (default: the committed "
                                                    "small ones, with the default --src only)")
    args = ap.parse_args(argv)
    with open(os.path.join(args.src, "manifest.json")) as f:
        manifest = {p["name"]: p for p in json.load(f)["parts"]}
    parts = [p for p in args.parts.split(",") if p]
    for p in parts:
        if p not in manifest or p not in MODEL_TYPES:
            raise SystemExit(f"error: unknown part {p} (have {', '.join(MODEL_TYPES)})")
    os.makedirs(args.out, exist_ok=True)
    made = []
    t_all = time.perf_counter()

    def record(name, part, source, dst, model, t0, fp16=False, keep_io=True, optimized=True, exporter=False):
        ops = op_counts(model)
        contrib = sorted(k.split(".", 2)[-1] for k in ops if k.startswith("com.microsoft."))
        made.append({"flavour": name, "part": part, "source": source, "file": os.path.relpath(dst, args.out),
                     "fp16": fp16, "io16": fp16 and not keep_io, "optimized": optimized, "exporter": exporter,
                     "contrib": contrib, "ops": ops})
        print(f"{name:16s} {part:16s} {time.perf_counter() - t0:5.2f}s  "
              f"contrib: {', '.join(contrib) if contrib else '-'}", flush=True)

    for name, options, fp16, keep_io in FLAVOURS:
        if args.flavours and not re.search(args.flavours, name):
            continue
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        for part in parts:
            src = os.path.join(args.src, manifest[part]["file"])
            dst = os.path.join(args.out, name, part + ".onnx")
            t0 = time.perf_counter()
            model = make_one(src, dst, MODEL_TYPES[part], options, fp16, keep_io, FP16_BLOCK.get(name))
            record(name, part, os.path.basename(os.path.normpath(args.src)), dst, model, t0, fp16, keep_io,
                   options is not None)
    small = os.path.abspath(args.src) == os.path.abspath(SMALL)  # the committed exports are of the small parts
    exports = args.exports or (EXPORTS if small else None)
    for name, suffix, exported in EXPORTS_FLAVOURS if exports else ():
        for part in [p for p in parts if p in exported]:
            src = os.path.join(exports, part + suffix + ".onnx")
            if not os.path.exists(src) and not small:
                continue  # a full-size export folder need not hold every exporter's files
            source = os.path.basename(os.path.normpath(args.src))
            if not args.flavours or re.search(args.flavours, name):
                os.makedirs(os.path.join(args.out, name), exist_ok=True)
                dst = os.path.join(args.out, name, part + ".onnx")
                t0 = time.perf_counter()
                copy_export(src, dst)
                record(name, part, source, dst, onnx.load(dst, load_external_data=False), t0, optimized=False,
                       exporter=True)
            fp16_name = name + "-fp16-io32"
            if name in EXPORTS_FP16 and (not args.flavours or re.search(args.flavours, fp16_name)):
                os.makedirs(os.path.join(args.out, fp16_name), exist_ok=True)
                dst = os.path.join(args.out, fp16_name, part + ".onnx")
                t0 = time.perf_counter()
                model = make_one(src, dst, MODEL_TYPES[part], None, True, True)
                record(fp16_name, part, source, dst, model, t0, True, True, optimized=False, exporter=True)
    for name, model_type, family_parts in FAMILY_FLAVOURS:
        if not small or (args.flavours and not re.search(args.flavours, name)):
            continue
        os.makedirs(os.path.join(args.out, name), exist_ok=True)
        for part in family_parts:
            dst = os.path.join(args.out, name, part + ".onnx")
            t0 = time.perf_counter()
            model = make_one(os.path.join(FAMILIES, part + ".onnx"), dst, model_type, {}, False, True)
            record(name, part, "families_small", dst, model, t0)
    with open(os.path.join(args.out, "flavours.json"), "w") as f:
        json.dump(made, f, indent=1)
    print(f"{len(made)} files in {args.out} ({time.perf_counter() - t_all:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
