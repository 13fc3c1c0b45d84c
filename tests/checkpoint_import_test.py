#!/usr/bin/env python3
"""Checkpoint import: a single-file LDM checkpoint put into the exported SD 1.5 parts, against PyTorch.

tests/models/checkpoint/sd15_small_ldm.safetensors holds weights B of the small SD 1.5 VAE, UNet and CLIP text
encoder under the original LDM key names (scripts/checkpoint_reference.py wrote it and checked it with diffusers'
own single-file conversion); the committed ONNX graphs in tests/models/sd15_small hold weights A.

tests/models/checkpoint/sdxl_small_unet_ldm.safetensors does the same for the SDXL-style UNet of
tests/models/families_small (SGM block names with label_emb and two-layer transformers).

1. `scripts/import_weights.py CHECKPOINT MODEL.onnx -o weights.gguf` for each part, then `onnx2ggml run
   --weights-file`: the outputs match B's PyTorch outputs (max relative error <= 1e-4), and without the file they do
   not (so the weights did change).
2. The text encoder and the VAE decoder compiled (`onnx2ggml compile`) and run with the imported GGUF (`--weights`):
   bit-identical to `onnx2ggml run --weights-file`.
3. Errors, each one line: a checkpoint that fits nothing of the model, a truncated checkpoint, a tensor of the wrong
   shape, a missing tensor (and --allow-partial), a weights file of another model.
4. torch .ckpt files (scripts/make_ckpt_fixtures.py): sd15_small_ldm.ckpt, torch.save's twin of the safetensors
   file, imports to byte-identical GGUFs; every tests/models/checkpoint/hostile/*.ckpt (os.system and eval
   REDUCEs, a tensor past its storage, a missing storage, a truncated or compressed archive) is refused with one
   line naming the cause, and nothing it asks for happens (no file created).

Needs no torch. Usage: .venv/bin/python tests/checkpoint_import_test.py [--cli build/onnx2ggml] [--no-compile]
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

FIXTURE = os.path.join(REPO_ROOT, "tests/models/checkpoint")
MODELS = os.path.join(REPO_ROOT, "tests/models")
TOL = 1e-4
failures: list[str] = []


def report(ok, what):
    print(("OK   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def sh(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, errors="replace")


def run(cli, model, feeds, out_dir, extra=()):
    """-> (CompletedProcess, {output name: array} or None)."""
    return run_arrays(cli, model, feeds, out_dir, 2, extra)


def one_error_line(r, needle):
    """Why r is not a clean one-line error containing `needle` ("" when it is)."""
    bad = [m for m in SANITIZER_MARKERS if m in r.stderr]
    errs = [ln for ln in r.stderr.splitlines() if ln.startswith(ERROR_PREFIX)]
    if bad or r.returncode < 0:
        return f"crashed ({bad or r.returncode}): {r.stderr.strip()[-300:]}"
    if r.returncode == 0:
        return "succeeded"
    if len(errs) != 1 or needle not in errs[0]:
        return f"expected one error line with {needle!r}: {r.stderr.strip()[-400:]!r}"
    return ""


# ----------------------------------------------------------------------------- safetensors editing (numpy only)

def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    return header, raw[8 + n:], meta


def write_safetensors(path, header, blobs, meta):
    """header: {name: {dtype, shape}}, blobs: {name: bytes} (offsets recomputed)."""
    h, data, off = {}, b"", 0
    for k, v in header.items():
        b = blobs[k]
        h[k] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [off, off + len(b)]}
        data += b
        off += len(b)
    if meta:
        h["__metadata__"] = meta
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)) + hb + data)


def edited_checkpoint(src, dst, drop=(), reshape=None):
    header, data, meta = read_safetensors(src)
    blobs = {k: data[v["data_offsets"][0]:v["data_offsets"][1]] for k, v in header.items()}
    for k in drop:
        del header[k]
    if reshape:  # name -> new shape (same element count)
        for k, s in reshape.items():
            header[k]["shape"] = s
    write_safetensors(dst, header, blobs, meta)


# ----------------------------------------------------------------------------- tests

def import_and_run(a, work, cases, ckpt):
    ggufs = {}
    for part in cases["parts"]:
        name, model = part["name"], os.path.join(MODELS, part["model"])
        gguf = os.path.join(work, name + ".gguf")
        src = os.path.join(FIXTURE, part["checkpoint"]) if "checkpoint" in part else ckpt
        r = sh([sys.executable, os.path.join(REPO_ROOT, "scripts/import_weights.py"), src, model, "-o", gguf,
                "--cli", a.cli])
        if r.returncode:
            report(False, f"{name}: import_weights.py failed: {r.stderr.strip()[-500:]}")
            continue
        filled = re.search(r"(\d+) of (\d+) weights filled", r.stderr)
        ggufs[name] = gguf
        feeds = sd15_data.make_inputs(f"{cases['seed_prefix']}/{name}", part["inputs"], part["case"], 0)
        rr, got = run(a.cli, model, feeds, os.path.join(work, "out_" + name), ["--weights-file", gguf])
        _, own = run(a.cli, model, feeds, os.path.join(work, "own_" + name))
        if got is None or own is None:
            report(False, f"{name}: run --weights-file failed: {rr.stderr.strip()[-500:]}")
            continue
        worst, moved = 0.0, np.inf
        for o in part["outputs"]:
            ref = np.load(os.path.join(FIXTURE, "ref", f"{name}.{o}.npy"))
            worst = max(worst, metrics.errors(ref, got[o]).rel)
            moved = min(moved, metrics.errors(ref, own[o]).rel)
        report(worst <= TOL and moved > 1e-2,
               f"{name}: {filled.group(0) if filled else '?'}; run --weights-file vs PyTorch (weights B): max rel "
               f"{worst:.2e} (bar {TOL:g}); the model's own weights A are off by {moved:.2f}")
    return ggufs


def compiled_program(a, work, cases, ggufs, name, out):
    """A part compiled, run with the imported GGUF (`--weights`). The text encoder's program reads CLIP's position
    embedding on the host (its Gather's indices are known at build time), and that weight must come from the file."""
    part = next(p for p in cases["parts"] if p["name"] == name)
    if name not in ggufs:
        return
    model = os.path.join(MODELS, part["model"])
    d = os.path.join(work, "program_" + name)
    r = sh([a.cli, "compile", model, "-o", d, "--name", "prog"])
    if r.returncode == 0:
        prefix = f"{REPO_ROOT}/build/install;{REPO_ROOT}/.deps/ggml-install"
        r = sh(["cmake", "-S", d, "-B", os.path.join(d, "build"), f"-DCMAKE_PREFIX_PATH={prefix}",
                "-DCMAKE_BUILD_TYPE=Release"])
    if r.returncode == 0:
        r = sh(["cmake", "--build", os.path.join(d, "build"), "-j2"])
    if r.returncode:
        report(False, f"compiling the {name}: {(r.stdout + r.stderr)[-600:]}")
        return
    feeds = sd15_data.make_inputs(f"{cases['seed_prefix']}/{name}", part["inputs"], part["case"], 0)
    args = [os.path.join(d, "build", "prog"), "--output-dir", os.path.join(d, "out"), "--threads", "2",
            "--weights", ggufs[name]]
    for n, arr in feeds.items():
        np.save(os.path.join(d, sanitize_name(n)), arr)
        args += ["--input", f"{n}={os.path.join(d, sanitize_name(n))}"]
    rc = sh(args)
    rr, got = run(a.cli, model, feeds, os.path.join(d, "out_run"), ["--weights-file", ggufs[name]])
    if rc.returncode or got is None:
        report(False, f"compiled {name} with the imported weights: {(rc.stderr + rr.stderr).strip()[-500:]}")
        return
    mine = {n: np.load(os.path.join(d, "out", sanitize_name(n))) for n in got}
    same = all(np.array_equal(mine[n], v) for n, v in got.items())
    ref = np.load(os.path.join(FIXTURE, "ref", f"{name}.{out}.npy"))
    rel = metrics.errors(ref, mine[out]).rel
    report(same and rel <= TOL, f"compiled {name} --weights IMPORTED.gguf: bit-identical to run --weights-file "
                                f"(max rel {rel:.2e} vs PyTorch)")


def errors(a, work, cases, ckpt, ggufs):
    unet = os.path.join(MODELS, "sd15_small/unet.onnx")
    vae_dec = os.path.join(MODELS, "sd15_small/vae_decoder.onnx")
    out = os.path.join(work, "err.gguf")

    def imp(model, path, *extra):
        return sh([a.cli, "import-weights", model, path, "-o", out] + list(extra))

    why = one_error_line(imp(unet, ckpt, "--part", "vae"), "weights are not in")
    report(not why, "VAE tensors into the UNet (--part vae): one error line" + (f" -- {why}" if why else ""))
    sdxl = os.path.join(MODELS, "families_small/sdxl_unet.onnx")
    if os.path.exists(sdxl):
        why = one_error_line(imp(sdxl, ckpt), "does not fit")
        report(not why, "SD 1.5 checkpoint into an SDXL UNet: one error line naming the tensor and both shapes" +
               (f" -- {why}" if why else ""))
    trunc = os.path.join(work, "truncated.safetensors")
    with open(ckpt, "rb") as f:
        raw = f.read()
    with open(trunc, "wb") as f:
        f.write(raw[:len(raw) // 2])
    why = one_error_line(imp(unet, trunc), "truncated.safetensors")
    report(not why, "truncated checkpoint: one error line" + (f" -- {why}" if why else ""))
    key = "model.diffusion_model.input_blocks.1.0.in_layers.2.weight"  # a 3x3 conv
    bad = os.path.join(work, "reshaped.safetensors")
    header, _, _ = read_safetensors(ckpt)
    shape = header[key]["shape"]
    edited_checkpoint(ckpt, bad, reshape={key: [shape[1], shape[0] * shape[2] * shape[3]]})
    why = one_error_line(imp(unet, bad), key)
    report(not why, "a tensor of another shape: one error line naming it" + (f" -- {why}" if why else ""))
    gone = "first_stage_model.decoder.mid.attn_1.q.weight"
    missing = os.path.join(work, "missing.safetensors")
    edited_checkpoint(ckpt, missing, drop=[gone])
    why = one_error_line(imp(vae_dec, missing), "--allow-partial")
    report(not why, "a missing tensor: one error line" + (f" -- {why}" if why else ""))
    r = imp(vae_dec, missing, "--allow-partial")
    report(r.returncode == 0 and "keep their own data" in r.stderr, "--allow-partial: imports the rest, with a warning")
    if "unet" in ggufs:
        r = sh([a.cli, "run", vae_dec, "--output-dir", os.path.join(work, "o"), "--input",
                "latent=" + os.path.join(work, "out_vae_decoder", "in_latent.npy"), "--weights-file", ggufs["unet"]])
        why = one_error_line(r, "unet.gguf")
        report(not why, "--weights-file of another model: one error line" + (f" -- {why}" if why else ""))


HOSTILE = {  # file -> what its one error line must say
    "os-system-reduce.ckpt": "refuses global 'os.system'",
    "stack-global-posix-system.ckpt": "refuses global 'posix.system'",
    "builtins-eval.ckpt": "refuses global 'builtins.eval'",
    "tensor-past-its-storage.ckpt": "lies past its storage",
    "storage-not-in-archive.ckpt": "is not in the archive",
    "truncated-archive.ckpt": "truncated",
    "compressed-entry.ckpt": "is compressed",
    "good-four-floats.ckpt": "none of its 1 tensors fits",  # the control: read, then found to fit nothing
}


def torch_checkpoints(a, work, cases, ggufs):
    twin = os.path.join(FIXTURE, "sd15_small_ldm.ckpt")
    for part in cases["parts"]:
        name = part["name"]
        if "checkpoint" in part or name not in ggufs:
            continue
        out = os.path.join(work, name + ".ckpt.gguf")
        r = sh([a.cli, "import-weights", os.path.join(MODELS, part["model"]), twin, "-o", out])
        same = r.returncode == 0 and open(out, "rb").read() == open(ggufs[name], "rb").read()
        report(same, f"{name}: the .ckpt twin imports to the same GGUF bytes as the .safetensors file" +
               ("" if r.returncode == 0 else f" -- {r.stderr.strip()[-300:]}"))
    hostile = os.path.join(FIXTURE, "hostile")
    found = sorted(os.listdir(hostile))
    report(found == sorted(HOSTILE), f"hostile .ckpt fixtures: {found}")
    model = os.path.join(MODELS, "sd15_small/vae_decoder.onnx")
    for f, needle in sorted(HOSTILE.items()):
        r = subprocess.run([a.cli, "import-weights", model, os.path.join(hostile, f), "-o",
                            os.path.join(work, "hostile.gguf")], capture_output=True, text=True, errors="replace",
                           cwd=work)
        why = one_error_line(r, needle)
        if os.path.exists(os.path.join(work, "O2G_PWNED")):
            why = "its command ran"
        report(not why, f"hostile/{f}: one error line ({needle})" + (f" -- {why}" if why else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled-program test")
    ap.add_argument("--keep", default=None, help="work in this folder and keep it")
    a = ap.parse_args()
    with open(os.path.join(FIXTURE, "cases.json")) as f:
        cases = json.load(f)
    ckpt = os.path.join(FIXTURE, cases["checkpoint"])
    work = a.keep or tempfile.mkdtemp(prefix="checkpoint_import_")
    os.makedirs(work, exist_ok=True)
    try:
        ggufs = import_and_run(a, work, cases, ckpt)
        if not a.no_compile:
            compiled_program(a, work, cases, ggufs, "text_encoder", "last_hidden_state")
            compiled_program(a, work, cases, ggufs, "vae_decoder", "sample")
        errors(a, work, cases, ckpt, ggufs)
        torch_checkpoints(a, work, cases, ggufs)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("checkpoint import tests: " + ("all passed" if not failures else f"{len(failures)} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
