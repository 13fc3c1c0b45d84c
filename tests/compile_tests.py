#!/usr/bin/env python3
"""Tests for `onnx2ggml compile`.

1. A sample of the ONNX node tests that pass in the run path (every test on the allow-list with
   --all) is compiled, built in one CMake project, run, and compared bit for bit with `onnx2ggml run`.
2. The VAE-decoder-like and CLIP-like models are compiled once and run at two input shapes each,
   bit-identical to `onnx2ggml run`.
3. A model whose names hold quotes, backslashes, newlines, '*/', '#include', '$(...)' and backticks
   is compiled, built and run; its numbers must match onnxruntime and no injected command may run.

Usage: .venv/bin/python tests/compile_tests.py [--sample N | --all] [--cli build/onnx2ggml] [-j N]
"""
from __future__ import annotations

import argparse
import glob
import os
import random
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_common import NPY_DTYPES, REPO_ROOT, sanitize_name  # noqa: E402

NODE_DIR = os.path.join(REPO_ROOT, ".venv/lib/python3.11/site-packages/onnx/backend/test/data/node")
ALLOWLIST = os.path.join(REPO_ROOT, "tests/node_tests_allowlist.txt")
WORK = os.path.join(REPO_ROOT, "build/compile_tests")
MARKER = "/tmp/onnx2ggml_injection_marker"


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def compile_model(cli, model, out, name):
    r = sh([cli, "compile", model, "-o", out, "--name", name])
    if r.returncode != 0:
        raise RuntimeError(f"compile {model}: {r.stderr.strip()}")


def write_inputs(model_path, data_dir, dest):
    """Writes a node test's inputs as .npy; returns the --input arguments."""
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    args = []
    for k, vi in enumerate(i for i in m.graph.input if i.name not in inits):
        pb = os.path.join(data_dir, f"input_{k}.pb")
        if not os.path.exists(pb):
            continue
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        arr = numpy_helper.to_array(t)
        if t.data_type == TensorProto.BFLOAT16:
            arr = arr.view(np.uint16) if arr.dtype.itemsize == 2 else arr
        path = os.path.join(dest, f"in{k}.npy")
        np.save(path, np.asarray(arr).astype(NPY_DTYPES.get(t.data_type, arr.dtype), copy=False))
        args += ["--input", f"{vi.name}={path}"]
    return args


def same_outputs(dir_a, dir_b):
    names = sorted(os.listdir(dir_a))
    if not names or names != sorted(os.listdir(dir_b)):
        return f"different output files: {names} vs {sorted(os.listdir(dir_b))}"
    for n in names:
        with open(os.path.join(dir_a, n), "rb") as fa, open(os.path.join(dir_b, n), "rb") as fb:
            if fa.read() != fb.read():
                return f"{n} differs"
    return None


def build_project(dirs, jobs):
    """One CMake build for many generated programs (the library and ggml are built once)."""
    top = os.path.join(WORK, "project")
    os.makedirs(top, exist_ok=True)
    with open(os.path.join(top, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.18)\nproject(compile_tests C CXX)\n")
        f.write("set(CMAKE_CXX_STANDARD 17)\nif(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n")
        # The library (and ggml) optimized once; the generated sources only describe graphs, so -O0 keeps
        # a build of many of them quick.
        f.write(f'set(ONNX2GGML_TESTS OFF CACHE BOOL "" FORCE)\nadd_subdirectory("{REPO_ROOT}" onnx2ggml EXCLUDE_FROM_ALL)\n')
        f.write("add_compile_options(-O0)\n")
        for d in dirs:
            f.write(f'add_subdirectory("{d}" "{os.path.basename(d)}")\n')
    b = os.path.join(top, "build")
    r = sh(["cmake", "-S", top, "-B", b])
    if r.returncode != 0:
        raise RuntimeError("configure failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    t0 = time.time()
    r = sh(["cmake", "--build", b, f"-j{jobs}"])
    if r.returncode != 0:
        raise RuntimeError("build failed:\n" + (r.stdout + r.stderr)[-5000:])
    print(f"built {len(dirs)} generated programs in {time.time() - t0:.0f} s")
    return b


def strip_literals_and_comments(src: str) -> str:
    """The C++ source with string/char literals and // comments removed (what the compiler parses as code)."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == '"' or c == "'":
            q, i = c, i + 1
            while i < n and src[i] != q:
                i += 2 if src[i] == "\\" else 1
            i += 1
        elif src.startswith("//", i):
            while i < n and src[i] != "\n":
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def hostile_model(path):
    """A small model whose every name is an injection attempt."""
    bad = [
        'x"; system("touch ' + MARKER + '"); //',
        "back\\slash\\",
        "new\nline\r\n",
        "*/ #include </etc/passwd> /*",
        "$(touch " + MARKER + ")",
        "`touch " + MARKER + "`",
        "??/ trigraph ??=",
        "\x01\x7f\xff unicode é",
    ]
    x, w, h, y = bad[0], bad[1], bad[2], bad[4]
    nodes = [
        helper.make_node("MatMul", [x, w], [h], name=bad[3]),
        helper.make_node("Relu", [h], [bad[5]], name=bad[6]),
        helper.make_node("Add", [bad[5], x], [y], name=bad[7]),
    ]
    rng = np.random.RandomState(0)
    W = numpy_helper.from_array(rng.randn(4, 4).astype(np.float32), w)
    g = helper.make_graph(nodes, "graph */ \"name\" $(touch " + MARKER + ")",
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["b\"atch", 4])],
                          [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["b\"atch", 4])], [W])
    m = helper.make_model(g, producer_name="prod`touch " + MARKER + "`\\", opset_imports=[helper.make_opsetid("", 17)],
                          ir_version=9)
    onnx.save(m, path)
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO_ROOT, "build/onnx2ggml"))
    ap.add_argument("--sample", type=int, default=100, help="node tests to compile (default 100)")
    ap.add_argument("--all", action="store_true", help="compile every allow-listed node test")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    if os.path.exists(MARKER):
        os.remove(MARKER)

    with open(ALLOWLIST) as f:
        passing = sorted(l.strip() for l in f if l.strip() and not l.startswith("#"))
    chosen = passing if a.all else sorted(random.Random(7).sample(passing, min(a.sample, len(passing))))
    # Subgraph-carrying models always take part (they exercise nested graph emission).
    chosen += [t for t in ("test_if", "test_loop11", "test_scan9_sum", "test_range_float_type_positive_delta_expanded")
               if t in passing and t not in chosen]
    dirs, jobs_meta = [], []
    for i, t in enumerate(chosen):
        d = os.path.join(WORK, f"p{i}")
        name = f"p{i}"
        try:
            compile_model(cli, os.path.join(NODE_DIR, t, "model.onnx"), d, name)
        except RuntimeError as e:
            print(f"FAIL {t}: {e}")
            return 1
        dirs.append(d)
        jobs_meta.append((t, name))
    # SD-like models and the hostile-names model join the same build.
    for stem in ("vae_decoder_like", "clip_text_like"):
        d = os.path.join(WORK, stem)
        compile_model(cli, os.path.join(REPO_ROOT, "tests/models", stem + ".onnx"), d, stem)
        dirs.append(d)
    hostile = os.path.join(WORK, "hostile.onnx")
    hx, hy = hostile_model(hostile)
    hd = os.path.join(WORK, "hostile")
    compile_model(cli, hostile, hd, "hostile")
    dirs.append(hd)
    build = build_project(dirs, a.j)
    failures = 0

    # 1. node tests: generated program vs onnx2ggml run, byte for byte
    for t, name in jobs_meta:
        tdir = os.path.join(NODE_DIR, t)
        work = os.path.join(WORK, name)
        args = write_inputs(os.path.join(tdir, "model.onnx"), os.path.join(tdir, "test_data_set_0"), work)
        rc = sh([os.path.join(build, name, name)] + args + ["--output-dir", os.path.join(work, "out_c"), "--threads", "2"])
        rr = sh([cli, "run", os.path.join(tdir, "model.onnx")] + args + ["--output-dir", os.path.join(work, "out_r"), "--threads", "2"])
        err = (f"compiled program failed: {rc.stderr.strip()[-300:]}" if rc.returncode else
               f"run failed: {rr.stderr.strip()[-300:]}" if rr.returncode else
               same_outputs(os.path.join(work, "out_c"), os.path.join(work, "out_r")))
        if err:
            failures += 1
            print(f"FAIL {t}: {err}")
    print(f"node tests compiled: {len(jobs_meta) - failures}/{len(jobs_meta)} bit-identical to `onnx2ggml run`")

    # 2. SD-like models at two shapes from one compiled program
    rng = np.random.RandomState(0)
    cases = {"vae_decoder_like": [("latent", rng.randn(1, 4, 8, 8).astype(np.float32)),
                                  ("latent", rng.randn(1, 4, 12, 16).astype(np.float32))],
             "clip_text_like": [("input_ids", rng.randint(0, 100, (1, 7)).astype(np.int64)),
                                ("input_ids", rng.randint(0, 100, (2, 16)).astype(np.int64))]}
    for stem, inputs in cases.items():
        for k, (iname, arr) in enumerate(inputs):
            work = os.path.join(WORK, stem, f"case{k}")
            os.makedirs(work, exist_ok=True)
            p = os.path.join(work, "in.npy")
            np.save(p, arr)
            rc = sh([os.path.join(build, stem, stem), "--input", f"{iname}={p}", "-o", os.path.join(work, "c"), "-t", "2"])
            rr = sh([cli, "run", os.path.join(REPO_ROOT, "tests/models", stem + ".onnx"), "--input", f"{iname}={p}",
                     "-o", os.path.join(work, "r"), "-t", "2"])
            err = (rc.stderr[-300:] if rc.returncode else rr.stderr[-300:] if rr.returncode else
                   same_outputs(os.path.join(work, "c"), os.path.join(work, "r")))
            shape = "x".join(map(str, arr.shape))
            print(("FAIL" if err else "OK  ") + f" {stem} at {shape}: " + (err or "bit-identical to onnx2ggml run"))
            failures += bool(err)

    # 3. hostile names: builds, runs, matches onnxruntime, and nothing injected ran
    import onnxruntime as ort
    x = rng.randn(3, 4).astype(np.float32)
    p = os.path.join(hd, "x.npy")
    np.save(p, x)
    rc = sh([os.path.join(build, "hostile", "hostile"), "--input", p, "-o", os.path.join(hd, "out"), "-t", "2"])
    want = ort.InferenceSession(hostile, providers=["CPUExecutionProvider"]).run(None, {hx: x})[0]
    err = None
    if rc.returncode:
        err = "program failed: " + rc.stderr[-300:]
    else:
        got = np.load(os.path.join(hd, "out", sanitize_name(hy)))
        rel = float(np.abs(got - want).max() / np.abs(want).max())
        if rel > 1e-5:
            err = f"relative error {rel:.2e}"
    if os.path.exists(MARKER):
        err = "an injected command ran (marker file exists)"
    code = strip_literals_and_comments(open(os.path.join(hd, "hostile.cpp")).read())
    for needle in ("passwd", "touch", "system(", "trigraph", "slash"):
        if needle in code:
            err = f"model text '{needle}' reached the generated code outside a string literal or comment"
    print(("FAIL" if err else "OK  ") + " hostile names: " + (err or "built, ran, matched onnxruntime, nothing injected ran"))
    failures += bool(err)
    print("compile tests: " + ("all passed" if not failures else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
