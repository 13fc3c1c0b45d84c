#!/usr/bin/env python3
"""Textual-inversion embeddings (`--embedding FILE[:TOKEN]`) against diffusers' load_textual_inversion.

tests/models/embeddings/ holds embedding files in every format people download (diffusers learned_embeds as
.safetensors and .bin, `emb_params`, A1111 .pt, SDXL clip_l/clip_g) and, from scripts/embedding_reference.py,
the ids diffusers' pipelines gave each prompt and the encoder outputs they got. For each case:
`onnx2ggml tokenize --embedding ...` must give the same ids, and `onnx2ggml run --embedding ...` on the small text
encoders (SD 1.5, SDXL's two) must give the same outputs within 1e-5 (an fp16 copy of the SD 1.5 one within fp16's
rounding); examples/txt2img --embedding must give
diffusers' final latent (2 DDIM steps, relative error 1e-4, as tests/txt2img_test.py). Then the one-line errors: a
file of the wrong width, a token the vocabulary has, a file that is no embedding, a model without a token table.

Usage: .venv/bin/python tests/embedding_tests.py [--cli build/onnx2ggml] [--txt2img build/txt2img]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics  # noqa: E402
from cli_common import DEFAULT_CLI, ERROR_PREFIX, REPO_ROOT, run_arrays  # noqa: E402

DIR = os.path.join(REPO_ROOT, "tests/models/embeddings")
VOCAB = os.path.join(REPO_ROOT, ".deps/clip/bpe_simple_vocab_16e6.txt.gz")
TOL = 1e-5
failures = []


def report(ok, what):
    print(("OK   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def emb_args(m):
    args = [x for e in m["embeddings"] for x in ("--embedding", os.path.join(DIR, e))]
    return args + (["--embedding-set", m["set"]] if m.get("set") else [])


def tokenize(cli, m, prompt):
    pad = m.get("pad", 49407)
    r = subprocess.run([cli, "tokenize", "--vocab", VOCAB, "--pad", str(pad), *emb_args(m), prompt],
                       capture_output=True, text=True)
    return [int(x) for x in r.stdout.split()] if r.returncode == 0 else r.stderr.strip()


def reference_cases(cli, work):
    doc = json.load(open(os.path.join(DIR, "cases.json")))
    for mi, m in enumerate(doc["models"]):
        model = os.path.join(REPO_ROOT, m["model"])
        name = os.path.relpath(model, os.path.join(REPO_ROOT, "tests/models"))
        for ci, c in enumerate(m["cases"]):
            ids = tokenize(cli, m, c["prompt"])
            report(ids == c["ids"], f"{name}: ids of {c['prompt']!r}" + ("" if ids == c["ids"] else
                                                                          f"\n     want {c['ids']}\n     got  {ids}"))
            feeds = {"input_ids": np.array([c["ids"]], dtype=np.int64)}  # the reference's ids, even if ours differ
            r, outs = run_arrays(cli, model, feeds, os.path.join(work, f"{mi}_{ci}"), 2, emb_args(m))
            if outs is None:
                report(False, f"{name}: run failed: {r.stderr.strip()[-300:]}")
                continue
            for out, ref in c["outputs"].items():
                want = np.load(os.path.join(DIR, ref))
                got = outs.get(out)
                err = float(np.abs(got - want).max()) if got is not None and got.shape == want.shape else float("inf")
                report(err <= TOL, f"{name}: {out} of {c['prompt']!r}: max abs error {err:.2e} (bar {TOL:.0e})")


def txt2img_runs(binary, work):
    doc = json.load(open(os.path.join(DIR, "cases.json")))
    for t in doc["txt2img"]:
        m = os.path.join(REPO_ROOT, "tests/models", t["family"] + "_small")
        models = ["--text-encoder", os.path.join(m, "text_encoder_bpe.onnx" if t["family"] == "sd15" else "text_encoder.onnx")]
        if t["family"] == "sdxl":
            models += ["--text-encoder-2", os.path.join(m, "text_encoder_2.onnx")]
        models += ["--unet", os.path.join(m, "unet.onnx"), "--vae-decoder", os.path.join(m, "vae_decoder.onnx")]
        lat = os.path.join(work, f"txt2img_{t['family']}.npy")
        args = [binary, *models, "--prompt", t["prompt"], "--negative-prompt", t["negative"], "--vocab", VOCAB,
                "--init-latent", os.path.join(REPO_ROOT, t["init_latent"]), "--steps", str(t["steps"]),
                "--guidance", str(t["guidance"]), "--width", str(t["size"]), "--height", str(t["size"]),
                "--threads", "2", "--save-latent", lat, "-o", os.path.join(work, "out.png")]
        args += [x for e in t["embeddings"] for x in ("--embedding", os.path.join(DIR, e))]
        r = subprocess.run(args, capture_output=True, text=True)
        title = f"txt2img {t['family']} --embedding, {t['prompt']!r}"
        if r.returncode:
            report(False, f"{title}: exited with {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        err, rel = metrics.errors(np.load(os.path.join(DIR, t["latent"])), np.load(lat))[:2]
        report(rel <= 1e-4, f"{title}: final latent max abs error {err:.2e}, max rel {rel:.2e} (bar rel 1e-4)")


def compiled_program(cli, work):
    """The SD 1.5 case through `onnx2ggml compile`: the program's --embedding against diffusers' outputs."""
    m = json.load(open(os.path.join(DIR, "cases.json")))["models"][0]
    d = os.path.join(work, "te_program")
    r = subprocess.run([cli, "compile", os.path.join(REPO_ROOT, m["model"]), "-o", d, "--name", "te"],
                       capture_output=True, text=True)
    if r.returncode == 0:
        prefix = f"{REPO_ROOT}/build/install;{REPO_ROOT}/.deps/ggml-install"
        r = subprocess.run(["cmake", "-S", d, "-B", os.path.join(d, "build"), f"-DCMAKE_PREFIX_PATH={prefix}",
                            "-DCMAKE_BUILD_TYPE=Release"], capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["cmake", "--build", os.path.join(d, "build"), "-j2"], capture_output=True, text=True)
    if r.returncode:
        report(False, f"compiling the SD 1.5 text encoder: {(r.stdout + r.stderr)[-600:]}")
        return
    for ci, c in enumerate(m["cases"]):
        ids, out = os.path.join(d, f"ids{ci}.npy"), os.path.join(d, f"out{ci}")
        np.save(ids, np.array([c["ids"]], dtype=np.int64))
        r = subprocess.run([os.path.join(d, "build", "te"), "--input", f"input_ids={ids}", "--output-dir", out,
                            "--threads", "2", *emb_args(m)], capture_output=True, text=True)
        if r.returncode:
            report(False, f"compiled text encoder --embedding: {r.stderr.strip()[-300:]}")
            continue
        for name, ref in c["outputs"].items():
            err = float(np.abs(np.load(os.path.join(out, name + ".npy")) - np.load(os.path.join(DIR, ref))).max())
            report(err <= TOL, f"compiled text encoder: {name} of {c['prompt']!r}: max abs error {err:.2e}")


def expect_error(cli, what, args, needles):
    r = subprocess.run([cli, *args], capture_output=True, text=True)
    msg = r.stderr.strip()
    ok = r.returncode == 1 and msg.startswith(ERROR_PREFIX) and "\n" not in msg and all(n in msg for n in needles)
    report(ok, f"error, {what}: {msg}")


def fp16_model(cli, work):
    """Published SD ONNX files often hold fp16 weights: the fp16 table gains rows rounded to fp16. Against
    diffusers' fp32 outputs, so the bar is fp16's (relative 5e-3 of the output's scale)."""
    try:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError:
        print("skip fp16 model: onnx or onnxruntime.transformers missing")
        return
    m = json.load(open(os.path.join(DIR, "cases.json")))["models"][0]
    path = os.path.join(work, "te_fp16.onnx")
    onnx.save(convert_float_to_float16(onnx.load(os.path.join(REPO_ROOT, m["model"])), keep_io_types=True), path)
    c = m["cases"][1]
    r, outs = run_arrays(cli, path, {"input_ids": np.array([c["ids"]], dtype=np.int64)}, os.path.join(work, "fp16"),
                         2, emb_args(m))
    if outs is None:
        report(False, f"fp16 text encoder --embedding: {r.stderr.strip()[-300:]}")
        return
    want = np.load(os.path.join(DIR, c["outputs"]["last_hidden_state"]))
    rel = float(np.abs(outs["last_hidden_state"] - want).max() / np.abs(want).max())
    report(rel <= 5e-3, f"fp16 text encoder: last_hidden_state of {c['prompt']!r}: max rel error {rel:.1e} (bar 5e-3)")


def write_safetensors(path, tensors):
    """tensors: {name: np.ndarray}; written by hand so that malformed cases need no torch."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        dt = {"float32": "F32", "float16": "F16", "int32": "I32"}[str(a.dtype)]
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + b"".join(blobs))


def hostile_files(cli, work):
    """Files that are embeddings in form only: one error line naming the file, never a crash."""
    cases = {"rank3": {"emb_params": np.zeros((1, 2, 32), np.float32)},
             "no_vectors": {"emb_params": np.zeros((0, 32), np.float32)},
             "ints": {"emb_params": np.zeros((1, 32), np.int32)},
             "nan": {"emb_params": np.full((1, 32), np.nan, np.float32)},
             "too_many": {"emb_params": np.zeros((1025, 4), np.float16)}}
    for name, tensors in cases.items():
        path = os.path.join(work, name + ".safetensors")
        write_safetensors(path, tensors)
        expect_error(cli, f"malformed embedding ({name})", ["tokenize", "--vocab", VOCAB, "--embedding", path, "x"],
                     [path, "'emb_params'"])
    with open(os.path.join(DIR, "oldstyle.pt"), "rb") as f:
        data = f.read()
    cut = os.path.join(work, "cut.pt")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    expect_error(cli, "truncated A1111 .pt", ["tokenize", "--vocab", VOCAB, "--embedding", cut, "x"], [cut])


def errors(cli, work):
    te = os.path.join(REPO_ROOT, "tests/models/sd15_small/text_encoder_bpe.onnx")
    xl = os.path.join(DIR, "xlstyle.safetensors")
    ids = os.path.join(work, "ids.npy")
    np.save(ids, np.full((1, 77), 49407, dtype=np.int64))
    run = ["run", te, "--input", f"input_ids={ids}", "--output-dir", os.path.join(work, "err")]
    expect_error(cli, "wrong width", run + ["--embedding", xl], [xl, "'xlstyle'", "width 16", "32 wide"])
    cat = os.path.join(DIR, "cat_toy.safetensors")
    expect_error(cli, "token in the vocabulary", ["tokenize", "--vocab", VOCAB, "--embedding", cat + ":cat", "x"],
                 [cat, "'cat'", "49408 in the CLIP vocabulary"])
    expect_error(cli, "same token twice", ["tokenize", "--vocab", VOCAB, "--embedding", cat + ":<a>", "--embedding",
                                           os.path.join(DIR, "my_style.bin") + ":<a>", "x"], ["my_style.bin", "'<a>'"])
    lora = os.path.join(REPO_ROOT, "tests/models/lora/te_peft.safetensors")
    expect_error(cli, "not an embedding", run + ["--embedding", lora], [lora, "not a textual-inversion embedding"])
    cnn = os.path.join(REPO_ROOT, "tests/models/small_cnn.onnx")
    x = os.path.join(work, "x.npy")
    np.save(x, np.zeros((1, 3, 32, 32), np.float32))
    expect_error(cli, "model without a token table", ["run", cnn, "--input", x, "--output-dir", work, "--embedding", cat],
                 ["small_cnn.onnx", cat, "no token-embedding table"])
    with tempfile.NamedTemporaryFile(suffix=".safetensors", dir=work, delete=False) as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"x\": \"oops\"}   ")
    expect_error(cli, "malformed file", ["tokenize", "--vocab", VOCAB, "--embedding", f.name, "x"], [f.name])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=DEFAULT_CLI)
    ap.add_argument("--txt2img", default=os.path.join(REPO_ROOT, "build/txt2img"))
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled program (it builds one)")
    a = ap.parse_args()
    if not os.path.exists(VOCAB):
        print(f"FAIL: {VOCAB} missing: run scripts/setup.sh")
        return 1
    with tempfile.TemporaryDirectory() as work:
        reference_cases(a.cli, work)
        txt2img_runs(a.txt2img, work)
        if not a.no_compile:
            compiled_program(a.cli, work)
        errors(a.cli, work)
        hostile_files(a.cli, work)
        fp16_model(a.cli, work)
    print(f"{len(failures)} failure(s)" if failures else "all embedding checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
