#!/usr/bin/env python3
"""LoRA merged at load time (`--lora FILE[:SCALE]`) against diffusers' load_lora_weights + fuse_lora.

1. Against PyTorch (needs torch, diffusers, peft: `scripts/setup.sh --with-torch`): the small SD 1.5 UNet and text
   encoder (tests/models/sd15_small) and the SDXL-style UNet (tests/models/families_small) are rebuilt in PyTorch
   with the fixtures' seeded weights (checked against the stored reference outputs), random LoRAs are written as
   .safetensors (kohya `lora_unet_*` keys with alphas and 3x3/1x1 conv LoRA for the SD 1.5 UNet, plus a second
   diffusers/PEFT file at another scale; diffusers/PEFT keys with `lora_adapter_metadata` alphas for the text
   encoder and the SDXL UNet), loaded and fused by diffusers, and compared with `onnx2ggml run --lora` on the
   committed ONNX files: max relative error <= 1e-4 (tests/metrics.py).
2. A compiled program (`onnx2ggml compile` of the text encoder) run with --lora: bit-identical to `onnx2ggml run
   --lora`, and `nm` finds no ONNX loader or IR in it.
3. Reports: modules that match no weight are listed in a warning (and change nothing); a file none of whose modules
   matches is an error.
4. Malformed safetensors (truncated header, offsets past the end of the file, bad JSON, wrong sizes, unsupported
   dtypes, a missing file): one clean error line naming the file, never a crash.

5. Against committed diffusers references (no torch; runs in CI, and after part 1 when torch is there):
   tests/models/lora/cases.json lists each case (model, LoRA files with scales, input case, outputs, what it checks);
   `onnx2ggml run --lora` on the committed LoRA files must match diffusers' fused outputs stored next to them (max
   abs and max rel error printed, rel <= 1e-4, every module merged, no warning). A missing file fails the test.
   `--write-fixtures` (needs torch) rewrites that folder from part 1: the LoRA files it generated (seeded) and the
   outputs diffusers got, never ours. The SGM-named SDXL kohya case is left out (its file is the largest, 296 KB).

Parts 2 to 5 need no torch: their LoRAs come from the ONNX graph's own weight names or from tests/models/lora.

Usage: .venv/bin/python tests/lora_tests.py [--cli build/onnx2ggml] [--threads 2] [--no-compile] [--no-torch]
                                            [--keep DIR] [--write-fixtures]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_common import DEFAULT_CLI, ERROR_PREFIX, REPO_ROOT, SANITIZER_MARKERS, run_arrays, sanitize_name  # noqa: E402
import metrics  # noqa: E402
import sd15_data  # noqa: E402

SD15 = os.path.join(REPO_ROOT, "tests/models/sd15_small")
FAMILIES = os.path.join(REPO_ROOT, "tests/models/families_small")
FIXTURES = os.path.join(REPO_ROOT, "tests/models/lora")
TOL = 1e-4
failures: list[str] = []
recorded: list[dict] = []  # the diffusers cases, for --write-fixtures
# Cases left out of tests/models/lora to keep it small: kohya's SGM-named SDXL LoRA is the largest file (296 KB; with
# it the folder is 884 KiB). It still runs against diffusers whenever torch is installed.
NOT_COMMITTED = ("sdxl unet, kohya with SGM",)


def report(ok, what):
    print(("OK   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace", **kw)


# ----------------------------------------------------------------------------- files

def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: np.ndarray (float32/float16)}; metadata: {str: str}."""
    header, blobs, offset = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("int32"): "I32"}[a.dtype]
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def lora_pair(rng, out_ch, in_shape, rank):
    """(down [rank, *in_shape], up [out, rank, 1...]): deltas about a third of a kaiming-sized weight."""
    fan_in = int(np.prod(in_shape))
    down = rng.standard_normal((rank,) + tuple(in_shape)) / np.sqrt(fan_in)
    up = rng.standard_normal((out_ch, rank) + (1,) * (len(in_shape) - 1)) * 0.3 / np.sqrt(rank)
    return down.astype(np.float32), up.astype(np.float32)


def kohya_tensors(modules, prefix, alphas):
    """modules: {dotted path: (down, up)} -> kohya keys (`lora_unet_down_blocks_0_...`) with `.alpha` scalars."""
    t = {}
    for path, (down, up) in modules.items():
        stem = prefix + path.replace(".", "_")
        t[stem + ".lora_down.weight"] = down
        t[stem + ".lora_up.weight"] = up
        if path in alphas:
            t[stem + ".alpha"] = np.array(alphas[path], dtype=np.float32)
    return t


def peft_tensors(modules, prefix):
    """diffusers/PEFT keys: `unet.down_blocks.0....to_q.lora_A.weight` / `lora_B.weight`."""
    t = {}
    for path, (down, up) in modules.items():
        t[f"{prefix}{path}.lora_A.weight"] = down
        t[f"{prefix}{path}.lora_B.weight"] = up
    return t


def sgm_name(path, layers, up_attn):
    """A diffusers UNet module path in the SGM/LDM UNet's spelling that kohya writes SDXL LoRAs in, or None."""
    fixed = {"conv_in": "input_blocks.0.0", "conv_out": "out.2", "time_embedding.linear_1": "time_embed.0",
             "time_embedding.linear_2": "time_embed.2", "add_embedding.linear_1": "label_emb.0.0",
             "add_embedding.linear_2": "label_emb.0.2"}
    if path in fixed:
        return fixed[path]
    res = {"conv1": "in_layers.2", "conv2": "out_layers.3", "time_emb_proj": "emb_layers.1",
           "conv_shortcut": "skip_connection"}
    per, p = layers + 1, path.split(".")
    if p[0] == "down_blocks":
        b = int(p[1])
        if p[2] == "downsamplers":
            return f"input_blocks.{(b + 1) * per}.0.op"
        i = 1 + b * per + int(p[3])
        return f"input_blocks.{i}.0.{res[p[4]]}" if p[2] == "resnets" else f"input_blocks.{i}.1." + ".".join(p[4:])
    if p[0] == "mid_block":
        if p[1] == "attentions":
            return "middle_block.1." + ".".join(p[3:])
        return f"middle_block.{0 if p[2] == '0' else 2}.{res[p[3]]}"
    if p[0] == "up_blocks":
        b = int(p[1])
        if p[2] == "upsamplers":
            return f"output_blocks.{b * per + layers}.{2 if up_attn[b] else 1}.conv"
        i = b * per + int(p[3])
        return f"output_blocks.{i}.0.{res[p[4]]}" if p[2] == "resnets" else f"output_blocks.{i}.1." + ".".join(p[4:])
    return None


# ----------------------------------------------------------------------------- onnx2ggml

def run_cli(cli, model, feeds, loras, out_dir, threads, extra=()):
    """-> (CompletedProcess, {output name: array} or None); a crash or sanitizer report is a failure."""
    r, outs = run_arrays(cli, model, feeds, out_dir, threads, list(extra) + [x for lf in loras for x in ("--lora", lf)])
    bad = [m for m in SANITIZER_MARKERS if m in r.stderr]
    if bad or r.returncode < 0:
        report(False, f"{os.path.basename(model)}: crashed or a sanitizer report ({bad or r.returncode}): "
                      f"{r.stderr.strip()[-400:]}")
    return r, outs


def manifest_part(manifest_dir, name):
    with open(os.path.join(manifest_dir, "manifest.json")) as f:
        man = json.load(f)
    return man["prefix"], next(p for p in man["parts"] if p["name"] == name)


def case_inputs(prefix, part, ci=0):
    return sd15_data.make_inputs(f"{prefix}/{part['name']}", part["inputs"], part["cases"][ci], ci)


# ----------------------------------------------------------------------------- LoRAs from the ONNX graph (no torch)

def onnx_linear_modules(model_path):
    """{dotted module path below the wrapper: (in, out)} of the MatMul weights of an exported text encoder."""
    import onnx
    m = onnx.load(model_path)
    inits = {i.name: list(i.dims) for i in m.graph.initializer}
    mods = {}
    for n in m.graph.node:
        if n.op_type == "MatMul" and n.input[1] in inits and len(inits[n.input[1]]) == 2:
            path = ".".join(n.name.strip("/").split("/")[1:-1])  # drop the wrapper and the op
            mods[path] = tuple(inits[n.input[1]])  # folded Linear weight: [in, out]
    return mods


def te_kohya_lora(model_path, seed, rank=4):
    """A kohya text-encoder LoRA on every MatMul weight; CLIP's module paths start at text_model."""
    rng = np.random.default_rng(seed)
    mods = {}
    for path, (n_in, n_out) in onnx_linear_modules(model_path).items():
        mods["text_model." + path] = lora_pair(rng, n_out, (n_in,), rank)
    return kohya_tensors(mods, "lora_te_", {p: 2.0 for p in mods})


# ----------------------------------------------------------------------------- part 1: against diffusers

def torch_cases(a, work):
    try:
        import torch
        import diffusers  # noqa: F401
        import peft  # noqa: F401
    except ImportError as e:
        print(f"SKIP against PyTorch: {e} (scripts/setup.sh --with-torch installs torch, diffusers and peft)")
        return
    import warnings
    import diffusers.utils.logging
    import transformers.utils.logging
    warnings.filterwarnings("ignore")
    diffusers.utils.logging.set_verbosity_error()
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(a.threads)
    sys.path.insert(0, os.path.join(REPO_ROOT, "scripts"))
    import export_families
    import export_sd15
    from diffusers import DDIMScheduler, StableDiffusionPipeline, StableDiffusionXLPipeline
    from torch import nn

    def modules_of(model, keep, rank, seed, conv=True):
        """Random LoRA pairs for the Linear (and Conv2d) modules whose path ends with one of `keep` (None: all)."""
        rng = np.random.default_rng(seed)
        out = {}
        for name, mod in model.named_modules():
            if keep is not None and not any(name == k or name.endswith("." + k) for k in keep):
                continue
            if isinstance(mod, nn.Linear):
                out[name] = lora_pair(rng, mod.out_features, (mod.in_features,), rank)
            elif conv and isinstance(mod, nn.Conv2d):
                out[name] = lora_pair(rng, mod.out_channels, (mod.in_channels,) + tuple(mod.kernel_size), rank)
        return out

    def check_rebuilt(what, y, ref_path):
        err = metrics.errors(np.load(ref_path), y)
        report(err.rel <= 1e-5, f"{what}: PyTorch rebuilt with the fixture's seeded weights (rel {err.rel:.1e} "
                                f"against the stored reference)")
        return err.rel <= 1e-5

    def compare(what, model_path, feeds, loras, n_modules, want, base, out_name, src):
        recorded.append(dict(what=what, model=model_path, loras=loras, n_modules=n_modules, want=want,
                             out_name=out_name, src=src))
        r, got = run_cli(a.cli, model_path, feeds, loras, os.path.join(work, "out_" + what.split()[0]), a.threads)
        if got is None:
            report(False, f"{what}: onnx2ggml failed: {r.stderr.strip()[-600:]}")
            return
        err = metrics.errors(want, got[out_name])
        moved = metrics.errors(base, want).rel
        merged = sum(int(n) for n in re.findall(r"(\d+) modules merged", r.stderr))
        warned = [l for l in r.stderr.splitlines() if "warning" in l]
        report(err.rel <= TOL and moved > 1e-2 and merged == n_modules and not warned,
               f"{what}: max abs {err.abs:.2e}, rel {err.rel:.2e} against diffusers fuse_lora "
               f"(the LoRA moves the output by rel {moved:.2f}; {merged} of {n_modules} modules merged)" +
               (f" {warned}" if warned else ""))

    def pipeline(cls, **parts):
        sched = DDIMScheduler()
        if cls is StableDiffusionXLPipeline:
            return cls(vae=None, text_encoder=parts.get("te"), text_encoder_2=None, tokenizer=None, tokenizer_2=None,
                       unet=parts.get("unet"), scheduler=sched)
        return cls(vae=None, text_encoder=parts.get("te"), tokenizer=None, unet=parts.get("unet"), scheduler=sched,
                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)

    # SD 1.5 UNet: kohya LoRA on every Linear and Conv2d (3x3 and 1x1), alpha != rank, scale 0.8; plus a
    # diffusers/PEFT LoRA on the attention projections at scale 0.5 (--lora given twice).
    prefix, part = manifest_part(SD15, "unet")
    unet = export_sd15.build_model("unet", export_sd15.SMALL, f"{prefix}/unet")
    te = export_sd15.build_model("text_encoder", export_sd15.SMALL, f"{prefix}/text_encoder")
    pipe = pipeline(StableDiffusionPipeline, unet=unet, te=te)  # each file below loads into one of them
    feeds = case_inputs(prefix, part)
    args = [torch.from_numpy(feeds[i["name"]]) for i in part["inputs"]]
    with torch.no_grad():
        base = unet(*args, return_dict=False)[0].numpy()
    if check_rebuilt("sd15 unet", base, os.path.join(SD15, part["refs"][0]["out_sample"])):
        k_mods = modules_of(unet, None, rank=4, seed=11)
        kfile = os.path.join(work, "unet_kohya.safetensors")
        write_safetensors(kfile, kohya_tensors(k_mods, "lora_unet_", {p: 3.0 for p in k_mods}))
        p_mods = modules_of(unet, ["to_q", "to_k", "to_v", "to_out.0"], rank=2, seed=12)
        pfile = os.path.join(work, "unet_peft.safetensors")
        write_safetensors(pfile, peft_tensors(p_mods, "unet."))
        pipe.load_lora_weights(kfile, adapter_name="kohya")
        pipe.load_lora_weights(pfile, adapter_name="peft")
        pipe.set_adapters(["kohya", "peft"], adapter_weights=[0.8, 0.5])
        pipe.fuse_lora(components=["unet"], lora_scale=1.0)
        with torch.no_grad():
            want = unet(*args, return_dict=False)[0].numpy()
        n_conv = sum(1 for d, _ in k_mods.values() if d.ndim == 4)
        compare(f"sd15 unet, kohya ({len(k_mods)} modules, {n_conv} conv) at 0.8 + PEFT ({len(p_mods)}) at 0.5",
                os.path.join(SD15, part["file"]), feeds, [kfile + ":0.8", pfile + ":0.5"], len(k_mods) + len(p_mods),
                want, base, "out_sample", (SD15, "unet", 0))

    # SD 1.5 text encoder: diffusers/PEFT keys, alpha from lora_adapter_metadata (alpha 6, rank 4), scale 1.
    prefix, part = manifest_part(SD15, "text_encoder")
    feeds = case_inputs(prefix, part, 1)
    ids = torch.from_numpy(feeds["input_ids"])
    with torch.no_grad():
        base = te(input_ids=ids).last_hidden_state.numpy()
    if check_rebuilt("sd15 text encoder", base, os.path.join(SD15, part["refs"][1]["last_hidden_state"])):
        keep = ["q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"]
        mods = modules_of(te, keep, rank=4, seed=21)
        tfile = os.path.join(work, "te_peft.safetensors")
        meta = {"text_encoder.r": 4, "text_encoder.lora_alpha": 6, "text_encoder.target_modules": keep}
        write_safetensors(tfile, peft_tensors(mods, "text_encoder."),
                          {"format": "pt", "lora_adapter_metadata": json.dumps(meta)})
        pipe.load_lora_weights(tfile, adapter_name="te")
        pipe.fuse_lora(components=["text_encoder"], lora_scale=1.0)
        with torch.no_grad():
            want = te(input_ids=ids).last_hidden_state.numpy()
        compare(f"sd15 text encoder, PEFT ({len(mods)} modules, alpha 6 / rank 4 from metadata)",
                os.path.join(SD15, part["file"]), feeds, [tfile], len(mods), want, base, "last_hidden_state",
                (SD15, "text_encoder", 1))

    # SDXL-style UNet: diffusers/PEFT keys with lora_alpha and an alpha_pattern, Linear and Conv2d, scale 0.7.
    prefix, part = manifest_part(FAMILIES, "sdxl_unet")
    cfg = dict(export_families.SMALL["sdxl_unet"])
    xl = export_families.build("sdxl_unet", cfg, seed=1234)
    wrapper = export_families.SDXLUNet(xl)
    feeds = case_inputs(prefix, part)
    args = [torch.from_numpy(feeds[i["name"]]) for i in part["inputs"]]
    with torch.no_grad():
        base = wrapper(*args).numpy()
    if check_rebuilt("sdxl unet", base, os.path.join(FAMILIES, part["refs"][0]["out_sample"])):
        keep = ["to_q", "to_k", "to_v", "to_out.0", "proj_in", "proj_out", "ff.net.0.proj", "ff.net.2", "conv1",
                "conv2", "time_emb_proj", "linear_1", "linear_2"]
        mods = modules_of(xl, keep, rank=4, seed=31)
        xfile = os.path.join(work, "sdxl_peft.safetensors")
        meta = {"unet.r": 4, "unet.lora_alpha": 8, "unet.alpha_pattern": {"attn2.to_k": 2},
                "unet.target_modules": keep}
        write_safetensors(xfile, peft_tensors(mods, "unet."),
                          {"format": "pt", "lora_adapter_metadata": json.dumps(meta)})
        pipe = pipeline(StableDiffusionXLPipeline, unet=xl)
        pipe.load_lora_weights(xfile)
        pipe.fuse_lora(components=["unet"], lora_scale=0.7)
        with torch.no_grad():
            want = wrapper(*args).numpy()
        compare(f"sdxl unet, PEFT ({len(mods)} modules, alpha 8 and an alpha_pattern) at 0.7",
                os.path.join(FAMILIES, part["file"]), feeds, [xfile + ":0.7"], len(mods), want, base, "out_sample",
                (FAMILIES, "sdxl_unet", 0))

        # kohya's SDXL spelling: SGM/LDM block names (lora_unet_input_blocks_4_1_...), every Linear and Conv2d.
        xl = export_families.build("sdxl_unet", cfg, seed=1234)
        wrapper = export_families.SDXLUNet(xl)
        mods = modules_of(xl, None, rank=4, seed=32)
        up_attn = ["CrossAttn" in t for t in cfg["up_block_types"]]
        sgm = {sgm_name(p, cfg["layers_per_block"], up_attn): v for p, v in mods.items()}
        sfile = os.path.join(work, "sdxl_kohya_sgm.safetensors")
        write_safetensors(sfile, kohya_tensors(sgm, "lora_unet_", {p: 2.0 for p in sgm}))
        pipe = pipeline(StableDiffusionXLPipeline, unet=xl)
        pipe.load_lora_weights(sfile)
        pipe.fuse_lora(components=["unet"], lora_scale=1.0)
        with torch.no_grad():
            want = wrapper(*args).numpy()
        n_conv = sum(1 for d, _ in mods.values() if d.ndim == 4)
        compare(f"sdxl unet, kohya with SGM block names ({len(mods)} modules, {n_conv} conv)",
                os.path.join(FAMILIES, part["file"]), feeds, [sfile], len(mods), want, base, "out_sample",
                (FAMILIES, "sdxl_unet", 0))

    def fused(kind, lora_file, scale, args):
        """The reference: a fresh seeded small transformer of `kind` (flux_transformer, chroma_transformer) with the
        LoRA loaded and fused by its diffusers pipeline, run on args."""
        from diffusers import ChromaPipeline, FlowMatchEulerDiscreteScheduler, FluxPipeline
        t = export_families.build(kind, dict(export_families.SMALL[kind]), seed=1234)
        if kind == "flux_transformer":
            pipe = FluxPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=None, text_encoder=None,
                                tokenizer=None, text_encoder_2=None, tokenizer_2=None, transformer=t)
        else:
            pipe = ChromaPipeline(scheduler=FlowMatchEulerDiscreteScheduler(), vae=None, text_encoder=None,
                                  tokenizer=None, transformer=t)
        pipe.load_lora_weights(lora_file)
        pipe.fuse_lora(components=["transformer"], lora_scale=scale)
        with torch.no_grad():
            return wrap(kind, t)(*args).numpy()

    def wrap(kind, t):
        return export_families.Flux(t) if kind == "flux_transformer" else export_families.Chroma(t)

    def family_case(kind, ci):
        """A family fixture's case ci: its manifest part, the seeded PyTorch transformer, the feeds, the torch
        arguments and the transformer's output on them."""
        prefix, part = manifest_part(FAMILIES, kind)
        t = export_families.build(kind, dict(export_families.SMALL[kind]), seed=1234)
        feeds = case_inputs(prefix, part, ci)
        args = [torch.from_numpy(feeds[i["name"]]) for i in part["inputs"]]
        with torch.no_grad():
            return part, t, feeds, args, wrap(kind, t)(*args).numpy()

    # Flux transformer, exported by torch.export: its folded MatMul weights are named "val_N" and its nodes
    # "node_MatMul_N", so the module comes from the scope metadata. diffusers/PEFT keys, every Linear, scale 0.6.
    fpart, fx, ffeeds, fargs, fbase = family_case("flux_transformer", 0)
    part, feeds, args, base = fpart, ffeeds, fargs, fbase
    if check_rebuilt("flux transformer", base, os.path.join(FAMILIES, part["refs"][0]["sample"])):
        mods = modules_of(fx, None, rank=4, seed=61)
        ffile = os.path.join(work, "flux_peft.safetensors")
        write_safetensors(ffile, peft_tensors(mods, "transformer."))
        want = fused("flux_transformer", ffile, 0.6, args)
        compare(f"flux transformer (torch.export), PEFT ({len(mods)} modules) at 0.6",
                os.path.join(FAMILIES, part["file"]), feeds, [ffile + ":0.6"], len(mods), want, base, "sample",
                (FAMILIES, "flux_transformer", 0))

    # Chroma (torch.export too): diffusers/PEFT keys on every Linear, the approximator's included, scale 0.8, at the
    # case with T5 padding masked
    part, cx, feeds, args, base = family_case("chroma_transformer", 1)

    if check_rebuilt("chroma transformer", base, os.path.join(FAMILIES, part["refs"][1]["sample"])):
        mods = modules_of(cx, None, rank=4, seed=67)
        cfile = os.path.join(work, "chroma_peft.safetensors")
        write_safetensors(cfile, peft_tensors(mods, "transformer."))
        want = fused("chroma_transformer", cfile, 0.8, args)
        compare(f"chroma transformer (torch.export), PEFT ({len(mods)} modules) at 0.8",
                os.path.join(FAMILIES, part["file"]), feeds, [cfile + ":0.8"], len(mods), want, base, "sample",
                (FAMILIES, "chroma_transformer", 1))

        # kohya keys in the original (BFL) names Chroma LoRAs are published with: fused qkv projections, alphas.
        # The modules diffusers' kohya converter maps at any width: not the single blocks' linear1 (split as Flux's
        # 3072), nor img_in, txt_in and final_layer (written without `transformer.`, then not loaded).
        ccfg = export_families.SMALL["chroma_transformer"]
        inner = ccfg["num_attention_heads"] * ccfg["attention_head_dim"]
        rng = np.random.default_rng(71)
        shapes = {}
        for i in range(ccfg["num_layers"]):
            for s in ("img", "txt"):
                shapes.update({f"double_blocks.{i}.{s}_attn.qkv": (3 * inner, inner),
                               f"double_blocks.{i}.{s}_attn.proj": (inner, inner),
                               f"double_blocks.{i}.{s}_mlp.0": (4 * inner, inner),
                               f"double_blocks.{i}.{s}_mlp.2": (inner, 4 * inner)})
        for i in range(ccfg["num_single_layers"]):
            shapes[f"single_blocks.{i}.linear2"] = (inner, 5 * inner)
        mods = {p: lora_pair(rng, o, (n,), 4) for p, (o, n) in shapes.items()}
        kfile = os.path.join(work, "chroma_kohya.safetensors")
        write_safetensors(kfile, kohya_tensors(mods, "lora_unet_", {p: 2.0 for p in mods}))
        want = fused("chroma_transformer", kfile, 1.0, args)
        compare(f"chroma transformer, kohya with BFL names ({len(mods)} modules, fused qkv, alpha 2)",
                os.path.join(FAMILIES, part["file"]), feeds, [kfile], len(mods), want, base, "sample",
                (FAMILIES, "chroma_transformer", 1))

        # The same LoRA as ComfyUI writes it: dotted BFL paths under `diffusion_model.`, scale 0.5
        cfile = os.path.join(work, "chroma_comfyui.safetensors")
        comfy = {}
        for p, (down, up) in mods.items():
            comfy[f"diffusion_model.{p}.lora_down.weight"] = down
            comfy[f"diffusion_model.{p}.lora_up.weight"] = up
            comfy[f"diffusion_model.{p}.alpha"] = np.array(2.0, dtype=np.float32)
        write_safetensors(cfile, comfy)
        want = fused("chroma_transformer", cfile, 0.5, args)
        compare(f"chroma transformer, ComfyUI's diffusion_model. BFL keys ({len(mods)} modules, alpha 2) at 0.5",
                os.path.join(FAMILIES, part["file"]), feeds, [cfile + ":0.5"], len(mods), want, base, "sample",
                (FAMILIES, "chroma_transformer", 1))

        # The BFL modules that converter cannot map here, against the same pairs under diffusers' names through
        # PEFT: the single blocks' linear1, its up rows split as q, k, v and the MLP input (as that converter splits
        # Flux's); img_in, txt_in, final_layer.linear; the approximator's layers (in_layer / out_layer are
        # linear_1 / linear_2 in diffusers' Chroma checkpoint converter).
        rng = np.random.default_rng(73)
        hid, cin = ccfg["approximator_hidden_dim"], ccfg["in_channels"]
        names = {"img_in": ("x_embedder", inner, cin),
                 "txt_in": ("context_embedder", inner, ccfg["joint_attention_dim"]),
                 "final_layer.linear": ("proj_out", cin, inner),
                 "distilled_guidance_layer.in_proj": ("distilled_guidance_layer.in_proj", hid,
                                                      ccfg["approximator_num_channels"]),
                 "distilled_guidance_layer.out_proj": ("distilled_guidance_layer.out_proj", inner, hid)}
        for i in range(ccfg["approximator_layers"]):
            for bfl, dif in (("in_layer", "linear_1"), ("out_layer", "linear_2")):
                names[f"distilled_guidance_layer.layers.{i}.{bfl}"] = (f"distilled_guidance_layer.layers.{i}.{dif}",
                                                                       hid, hid)
        mods = {b: lora_pair(rng, o, (n,), 4) for b, (_, o, n) in names.items()}
        peft = {names[b][0]: pair for b, pair in mods.items()}
        for i in range(ccfg["num_single_layers"]):
            down, up = lora_pair(rng, 7 * inner, (inner,), 4)
            mods[f"single_blocks.{i}.linear1"] = (down, up)
            for k, d in enumerate(("attn.to_q", "attn.to_k", "attn.to_v")):
                peft[f"single_transformer_blocks.{i}.{d}"] = (down, up[k * inner:(k + 1) * inner])
            peft[f"single_transformer_blocks.{i}.proj_mlp"] = (down, up[3 * inner:])
        kfile2 = os.path.join(work, "chroma_kohya_rest.safetensors")
        write_safetensors(kfile2, kohya_tensors(mods, "lora_unet_", {}))
        pfile = os.path.join(work, "chroma_kohya_rest_as_peft.safetensors")
        write_safetensors(pfile, peft_tensors(peft, "transformer."))
        want = fused("chroma_transformer", pfile, 0.7, args)
        compare(f"chroma transformer, kohya with BFL names: linear1, img_in, txt_in, final_layer, approximator "
                f"({len(mods)} modules) at 0.7", os.path.join(FAMILIES, part["file"]), feeds, [kfile2 + ":0.7"],
                len(mods), want, base, "sample", (FAMILIES, "chroma_transformer", 1))

    # Flux with kohya's BFL keys: fused qkv, the AdaLN modulations (img_mod_lin, txt_mod_lin, modulation_lin), the
    # block projections; what diffusers' kohya converter loads at small width (see Chroma's above)
    part, feeds, args, base = fpart, ffeeds, fargs, fbase  # the first Flux section's case
    cfg = export_families.SMALL["flux_transformer"]
    inner = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    shapes = {}
    for i in range(cfg["num_layers"]):
        for s in ("img", "txt"):
            shapes.update({f"double_blocks.{i}.{s}_attn.qkv": (3 * inner, inner),
                           f"double_blocks.{i}.{s}_attn.proj": (inner, inner),
                           f"double_blocks.{i}.{s}_mlp.0": (4 * inner, inner),
                           f"double_blocks.{i}.{s}_mlp.2": (inner, 4 * inner),
                           f"double_blocks.{i}.{s}_mod.lin": (6 * inner, inner)})
    for i in range(cfg["num_single_layers"]):
        shapes.update({f"single_blocks.{i}.linear2": (inner, 5 * inner),
                       f"single_blocks.{i}.modulation.lin": (3 * inner, inner)})
    rng = np.random.default_rng(79)
    mods = {p: lora_pair(rng, o, (n,), 4) for p, (o, n) in shapes.items()}
    ffile = os.path.join(work, "flux_kohya.safetensors")
    write_safetensors(ffile, kohya_tensors(mods, "lora_unet_", {p: 8.0 for p in mods}))
    want = fused("flux_transformer", ffile, 0.9, args)
    compare(f"flux transformer, kohya with BFL names ({len(mods)} modules, fused qkv, modulations, alpha 8) at 0.9",
            os.path.join(FAMILIES, part["file"]), feeds, [ffile + ":0.9"], len(mods), want, base, "sample",
            (FAMILIES, "flux_transformer", 0))


# ----------------------------------------------------------------------------- part 1b: committed references

def write_fixtures(out_dir=FIXTURES):
    """The recorded diffusers cases -> out_dir: the LoRA files, diffusers' fused outputs (.npy), cases.json."""
    os.makedirs(out_dir, exist_ok=True)
    for n in os.listdir(out_dir):
        if n.endswith((".npy", ".safetensors")) or n == "cases.json":
            os.remove(os.path.join(out_dir, n))
    cases = []
    for i, c in enumerate(c for c in recorded if not c["what"].startswith(NOT_COMMITTED)):
        loras = []
        for spec in c["loras"]:
            path, _, scale = spec.partition(":")
            shutil.copyfile(path, os.path.join(out_dir, os.path.basename(path)))
            loras.append({"file": os.path.basename(path), "scale": float(scale) if scale else 1.0})
        manifest_dir, part_name, ci = c["src"]
        ref = f"case{i}.{c['out_name']}.npy"
        np.save(os.path.join(out_dir, ref), c["want"].astype(np.float32))
        cases.append({"what": c["what"], "manifest": os.path.relpath(manifest_dir, REPO_ROOT), "part": part_name,
                      "case": ci, "loras": loras, "outputs": {c["out_name"]: ref}, "modules_merged": c["n_modules"],
                      "checks": f"max rel error <= {TOL} against diffusers load_lora_weights + fuse_lora; every "
                                f"LoRA module merged, no warning"})
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump({"source": "tests/lora_tests.py --write-fixtures (diffusers load_lora_weights + fuse_lora, "
                             "PyTorch eager, float32)", "tolerance_rel": TOL, "cases": cases}, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(out_dir, n)) for n in os.listdir(out_dir))
    print(f"wrote {len(cases)} cases into {os.path.relpath(out_dir, REPO_ROOT)} ({total / 1024:.0f} KiB)")


def fixture_cases(a, work):
    """`onnx2ggml run --lora` on the committed LoRA files against the committed diffusers outputs (no torch)."""
    index = os.path.join(FIXTURES, "cases.json")
    if not os.path.exists(index):
        report(False, f"committed diffusers references: {os.path.relpath(index, REPO_ROOT)} is missing")
        return
    with open(index) as f:
        spec = json.load(f)
    tol = spec.get("tolerance_rel", TOL)
    for i, c in enumerate(spec["cases"]):
        what = "committed reference: " + c["what"]
        needed = [l["file"] for l in c["loras"]] + list(c["outputs"].values())
        missing = [n for n in needed if not os.path.exists(os.path.join(FIXTURES, n))]
        if missing:
            report(False, f"{what}: missing {', '.join(missing)} in tests/models/lora")
            continue
        manifest_dir = os.path.join(REPO_ROOT, c["manifest"])
        prefix, part = manifest_part(manifest_dir, c["part"])
        feeds = case_inputs(prefix, part, c["case"])
        loras = [f"{os.path.join(FIXTURES, l['file'])}:{l['scale']!r}" for l in c["loras"]]
        r, got = run_cli(a.cli, os.path.join(manifest_dir, part["file"]), feeds, loras,
                         os.path.join(work, f"fix{i}"), a.threads)
        if got is None:
            report(False, f"{what}: onnx2ggml failed: {r.stderr.strip()[-600:]}")
            continue
        merged = sum(int(n) for n in re.findall(r"(\d+) modules merged", r.stderr))
        warned = [l for l in r.stderr.splitlines() if "warning" in l]
        ok, msg = merged == c["modules_merged"] and not warned, []
        for name, ref in c["outputs"].items():
            if name not in got:
                ok = False
                msg.append(f"{name}: no such output")
                continue
            err = metrics.errors(np.load(os.path.join(FIXTURES, ref)), got[name])
            ok = ok and err.rel <= tol
            msg.append(f"{name}: max abs {err.abs:.2e}, max rel {err.rel:.2e}")
        report(ok, f"{what}: {'; '.join(msg)} (bar rel {tol:g}; {merged} of {c['modules_merged']} modules merged)" +
               (f" {warned}" if warned else ""))


# ----------------------------------------------------------------------------- part 2: compiled program

def compiled_program(a, work):
    prefix, part = manifest_part(SD15, "text_encoder")
    model = os.path.join(SD15, part["file"])
    lfile = os.path.join(work, "te_kohya_compiled.safetensors")
    write_safetensors(lfile, te_kohya_lora(model, seed=41))
    d = os.path.join(work, "te_program")
    r = sh([a.cli, "compile", model, "-o", d, "--name", "te"])
    if r.returncode:
        report(False, f"compile: {r.stderr.strip()[-400:]}")
        return
    prefix_path = f"{REPO_ROOT}/build/install;{REPO_ROOT}/.deps/ggml-install"
    b = os.path.join(d, "build")
    r = sh(["cmake", "-S", d, "-B", b, f"-DCMAKE_PREFIX_PATH={prefix_path}", "-DCMAKE_BUILD_TYPE=Release"])
    if r.returncode == 0:
        r = sh(["cmake", "--build", b, f"-j{a.threads}"])
    if r.returncode:
        report(False, f"building the compiled program: {(r.stdout + r.stderr)[-800:]}")
        return
    exe = os.path.join(b, "te")
    feeds = case_inputs(prefix, part, 1)
    inp = os.path.join(d, "input_ids.npy")
    np.save(inp, feeds["input_ids"])
    outc = os.path.join(d, "out")
    rc = sh([exe, "--input", f"input_ids={inp}", "--output-dir", outc, "--threads", str(a.threads),
             "--lora", lfile + ":0.9"])
    rr, got = run_cli(a.cli, model, feeds, [lfile + ":0.9"], os.path.join(d, "out_run"), a.threads)
    _, plain = run_cli(a.cli, model, feeds, [], os.path.join(d, "out_plain"), a.threads)
    if rc.returncode or got is None:
        report(False, f"compiled program with --lora: {(rc.stderr + rr.stderr).strip()[-600:]}")
        return
    same = all(np.array_equal(np.load(os.path.join(outc, sanitize_name(n))), v) for n, v in got.items())
    moved = metrics.errors(plain["last_hidden_state"], got["last_hidden_state"]).rel
    report(same and moved > 1e-2, f"compiled text encoder with --lora: bit-identical to `onnx2ggml run --lora` "
                                  f"(the LoRA moves the output by rel {moved:.2f})")
    syms = sh(["nm", "-C", exe]).stdout
    leaked = sorted(set(re.findall(r"onnx2ggml::(load_model|parse_model|Builder|plan_graph|lora_targets|apply_lora)\b",
                                   syms)))
    report(not leaked, "nm: the program merges LoRA without the ONNX loader or IR" +
           (f" (links {', '.join(leaked)})" if leaked else ""))


# ----------------------------------------------------------------------------- parts 3 and 4: reports and errors

def reports_and_errors(a, work):
    prefix, part = manifest_part(SD15, "text_encoder")
    model = os.path.join(SD15, part["file"])
    feeds = case_inputs(prefix, part)
    good = te_kohya_lora(model, seed=51)
    gfile = os.path.join(work, "te_good.safetensors")
    write_safetensors(gfile, good)
    r, want = run_cli(a.cli, model, feeds, [gfile], os.path.join(work, "rep_good"), a.threads)
    if want is None:
        report(False, f"kohya text-encoder LoRA from the graph: {r.stderr.strip()[-400:]}")
        return

    # Unmatched modules: a layer the model lacks, UNet keys (another part of the pipeline), a shape that fits nothing.
    rng = np.random.default_rng(52)
    extra = dict(good)
    extra.update(kohya_tensors({"text_model.encoder.layers.7.self_attn.q_proj": lora_pair(rng, 32, (32,), 4)},
                               "lora_te_", {}))
    extra.update(kohya_tensors({"down_blocks.0.attentions.0.proj_in": lora_pair(rng, 16, (16,), 4),
                                "mid_block.resnets.0.conv1": lora_pair(rng, 32, (32, 3, 3), 4)}, "lora_unet_", {}))
    extra.update(kohya_tensors({"text_model.encoder.layers.0.mlp.fc9": lora_pair(rng, 32, (32,), 4)}, "lora_te_", {}))
    bad_shape = {"lora_te_text_model_encoder_layers_0_mlp_fc2.lora_down.weight": np.zeros((4, 48), np.float32),
                 "lora_te_text_model_encoder_layers_0_mlp_fc2.lora_up.weight": np.zeros((32, 4), np.float32)}
    extra = {k: v for k, v in extra.items() if not k.startswith("lora_te_text_model_encoder_layers_0_mlp_fc2")}
    extra.update(bad_shape)
    efile = os.path.join(work, "te_extra.safetensors")
    write_safetensors(efile, extra)
    good_wo_fc2 = {k: v for k, v in good.items() if not k.startswith("lora_te_text_model_encoder_layers_0_mlp_fc2")}
    g2file = os.path.join(work, "te_good_wo_fc2.safetensors")
    write_safetensors(g2file, good_wo_fc2)
    r, got = run_cli(a.cli, model, feeds, [efile], os.path.join(work, "rep_extra"), a.threads)
    _, want2 = run_cli(a.cli, model, feeds, [g2file], os.path.join(work, "rep_good2"), a.threads)
    warn = "\n".join(l for l in r.stderr.splitlines() if "warning" in l)
    named = all(s in warn for s in ("lora_te_text_model_encoder_layers_7_self_attn_q_proj",
                                    "lora_te_text_model_encoder_layers_0_mlp_fc9",
                                    "lora_te_text_model_encoder_layers_0_mlp_fc2", "2 UNet LoRA modules"))
    same = got is not None and want2 is not None and all(np.array_equal(got[n], want2[n]) for n in got)
    report(named and same, "unmatched LoRA modules are reported and change nothing" +
           ("" if named else f" (warnings: {warn[-600:]!r})") + ("" if same else " (outputs differ)"))

    def expect_error(what, path, loras, needle):
        r, _ = run_cli(a.cli, model, feeds, loras, os.path.join(work, "err"), a.threads)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        ok = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith(ERROR_PREFIX) and path in lines[0]
              and needle in lines[0])
        report(ok, f"{what}: " + (lines[0] if ok else f"rc={r.returncode} stderr={r.stderr.strip()[-400:]!r}"))

    only_unet = os.path.join(work, "only_unet.safetensors")
    write_safetensors(only_unet, kohya_tensors({"mid_block.resnets.0.conv1": lora_pair(rng, 32, (32, 3, 3), 4)},
                                               "lora_unet_", {}))
    expect_error("a LoRA for another model", only_unet, [only_unet], "none of its 1 LoRA modules")

    raw = open(gfile, "rb").read()
    hlen = struct.unpack("<Q", raw[:8])[0]
    cases = {
        "too short": (raw[:5], "shorter than the 8-byte header length"),
        "truncated header": (raw[:8 + hlen // 2], "the header claims"),
        "bad JSON": (struct.pack("<Q", 9) + b'{"a": [1,', "malformed safetensors header"),
        "offsets past the end": (raw[:8 + hlen + 100], "lie past the end of the data"),
    }
    header = json.loads(raw[8:8 + hlen])
    first = next(k for k in header if k != "__metadata__")

    def with_header(h):
        b = json.dumps(h).encode()
        return struct.pack("<Q", len(b)) + b + raw[8 + hlen:]

    h = json.loads(json.dumps(header))
    h[first]["data_offsets"][1] += 4
    cases["size not the dtype's"] = (with_header(h), "its dtype F32 and shape need")
    h = json.loads(json.dumps(header))
    h[first]["data_offsets"] = [10, 2]
    cases["offsets reversed"] = (with_header(h), "begin <= end")
    h = json.loads(json.dumps(header))
    h[first]["dtype"] = "I32"
    cases["integer LoRA weight"] = (with_header(h), "LoRA weights must be F32, F16, BF16 or F64")
    h = json.loads(json.dumps(header))
    h[first]["shape"] = [-1, 32]
    cases["negative dim"] = (with_header(h), "not a non-negative integer")
    for what, (data, needle) in cases.items():
        p = os.path.join(work, "bad_" + what.replace(" ", "_") + ".safetensors")
        with open(p, "wb") as f:
            f.write(data)
        expect_error(f"malformed safetensors ({what})", p, [p], needle)
    missing = os.path.join(work, "missing.safetensors")
    expect_error("a missing file", missing, [missing + ":0.5"], "cannot open")

    # Mutated files: truncated anywhere, or bytes of the header changed; a clean exit or one error line, never a crash.
    rng = np.random.default_rng(53)
    bad = 0
    for k in range(a.mutations):
        data = bytearray(raw)
        if k % 3 == 0:
            data = data[:int(rng.integers(0, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 4))):
                data[int(rng.integers(0, 8 + hlen))] = int(rng.integers(0, 256))
        p = os.path.join(work, "mutated.safetensors")
        with open(p, "wb") as f:
            f.write(bytes(data))
        r, _ = run_cli(a.cli, model, feeds, [p], os.path.join(work, "mut"), a.threads)
        err = [l for l in r.stderr.splitlines() if l.startswith(ERROR_PREFIX)]
        if not (r.returncode == 0 or (r.returncode == 1 and len(err) == 1)):
            bad += 1
            print(f"     mutation {k}: rc={r.returncode} {r.stderr.strip()[-300:]!r}")
    report(bad == 0, f"{a.mutations} mutated LoRA files: each ran or stopped with one error line")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled-program test")
    ap.add_argument("--no-torch", action="store_true", help="skip the comparisons against diffusers")
    ap.add_argument("--write-fixtures", action="store_true",
                    help="(needs torch) write the LoRA files and diffusers' outputs into tests/models/lora")
    ap.add_argument("--keep", default=None, help="work in this folder and keep it")
    ap.add_argument("--mutations", type=int, default=30, help="mutated safetensors files to try")
    a = ap.parse_args()
    work = a.keep or tempfile.mkdtemp(prefix="lora_tests_")
    os.makedirs(work, exist_ok=True)
    try:
        reports_and_errors(a, work)
        if not a.no_torch:
            torch_cases(a, work)
            if a.write_fixtures:
                if not recorded:
                    report(False, "--write-fixtures: no diffusers case ran (torch, diffusers and peft needed)")
                else:
                    write_fixtures()
        fixture_cases(a, work)
        if not a.no_compile:
            compiled_program(a, work)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("lora tests: " + ("all passed" if not failures else f"{len(failures)} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
