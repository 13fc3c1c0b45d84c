#!/usr/bin/env python3
"""Tests for `onnx2ggml compile`: generated ggml programs against `onnx2ggml run`.

1. Node tests: every node test that `run` passes (the allow-list) is compiled. A program that compiles must give
   output bytes identical to `onnx2ggml run`. A model compile refuses must be refused cleanly (one error naming each
   node at fault); tests on tests/compile_allowlist.txt must compile. Refusals are summed up by reason.
2. Models (tests/models and tests/models/sd15_small manifests, and a Loop whose unrolled graph outgrows the first
   graph context): each compiled once, built once, run at two input shapes, bit-identical to `onnx2ggml run`.
3. A model whose names try code injection is compiled, built and run; it must match onnxruntime, no injected command
   may run, and no model text may reach the code outside string literals, comments and [A-Za-z0-9_] identifiers.
4. `nm` on a generated program: no loader, IR, op-table, pass or interpreter symbols.

All programs build in one CMake project against the installed op library (build/install, from scripts/build.sh),
the generated sources batched into a few unity-build targets.

Usage: .venv/bin/python tests/compile_tests.py [--filter REGEX] [--no-models] [--repo DIR] [-j N]
       [--write-allowlist]
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_common import NPY_DTYPES, REPO_ROOT, sanitize_name  # noqa: E402
import metrics  # noqa: E402
import model_data  # noqa: E402
import node_data  # noqa: E402
import sd15_data  # noqa: E402

NODE_DIR = node_data.node_dir()
ALLOWLIST = os.path.join(REPO_ROOT, "tests/node_tests_allowlist.txt")
COMPILE_ALLOWLIST = os.path.join(REPO_ROOT, "tests/compile_allowlist.txt")
MARKER = "/tmp/onnx2ggml_injection_marker"
BATCH = 60  # generated sources per unity-build target
# Models compile refuses today, and why; the test fails when one of them starts to compile (drop it here then).
KNOWN_REFUSALS = {}
# The families_small parts compiled here (each adds a build): those with rank > 4 shapes, and ControlNet (its
# hint and latent sizes are tied, so the second probe scales the first).
# Models whose repeated blocks must read as a loop over one block function: (function, blocks in the loop).
BLOCK_LOOPS = {"sd15_text_encoder": [("layers_block", 2)], "resnet18": [("layer1_block", 2)],
               "sd15_vae_decoder": [("up_blocks_block", 3), ("resnets_block", 2)],
               "sd15_unet": [("resnets_block", 2), ("resnets_block_2", 2)],
               "squeezenet1_1": [("features_block", 2), ("features_block", 2), ("features_block", 4)]}
FAMILIES_COMPILED = {"esrgan_x2", "sd3_transformer", "flux_transformer", "chroma_transformer", "controlnet"}


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def compile_model(cli, model, out, name, examples=()):
    """None when compiled; else (kind, message) with kind 'refused' (a clean per-node refusal) or 'error'."""
    r = sh([cli, "compile", model, "-o", out, "--name", name] + [x for e in examples for x in ("--example", e)])
    if r.returncode == 0:
        return None
    err = r.stderr.strip()
    if r.returncode == 1 and "cannot compile" in err and err.startswith("onnx2ggml: error:"):
        return "refused", err
    return "error", f"rc={r.returncode}: {err[-400:]}"


def refusal_reasons(err):
    """'Op: reason' per refused node of a compile error."""
    out = []
    for line in err.splitlines()[1:]:
        line = line.strip()
        if line.startswith("("):
            continue
        m = re.match(r"(\S+) node '.*?': (.*)", line)
        out.append(f"{m.group(1)}: {m.group(2)}" if m else line)
    return out


def write_node_inputs(model_path, data_dir, dest):
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
    names = sorted(os.listdir(dir_a)) if os.path.isdir(dir_a) else []
    if not names or names != sorted(os.listdir(dir_b)):
        return f"different output files: {names} vs {sorted(os.listdir(dir_b)) if os.path.isdir(dir_b) else []}"
    for n in names:
        with open(os.path.join(dir_a, n), "rb") as fa, open(os.path.join(dir_b, n), "rb") as fb:
            if fa.read() != fb.read():
                return f"{n} differs"
    return None


DRIVER = r'''// Test driver: runs one of the generated programs linked into it, like the generated main.cpp does.
#include <sys/stat.h>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>
#include "onnx2ggml/npy.h"
@INCLUDES@
struct Entry {
    const char* name;
    void* (*load)(const char*, const char*, int, const char*);
    bool (*run)(void*, const std::map<std::string, onnx2ggml::Tensor>&, std::vector<onnx2ggml::Tensor>&);
    void (*free)(void*);
    std::vector<std::string> (*inputs)();
    std::vector<std::string> (*outputs)();
    onnx2ggml::DType (*dtype)(const std::string&);
    double (*weights_mb)(void*);
};
static const Entry kEntries[] = {
@ENTRIES@
};
static std::string sanitize(std::string s) {
    for (char& c : s)
        if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    return s;
}
int main(int argc, char** argv) {
    if (argc < 4) return 2;
    const Entry* e = nullptr;
    for (const Entry& x : kEntries) if (strcmp(x.name, argv[1]) == 0) e = &x;
    if (!e) { fprintf(stderr, "no program %s\n", argv[1]); return 2; }
    std::string weights = argv[2], out_dir = argv[3];
    void* m = e->load(weights.c_str(), "", 2, "exact");
    if (!m) return 1;
    std::map<std::string, onnx2ggml::Tensor> feeds;
    try {
        for (int i = 4; i + 1 < argc; i += 2) feeds[argv[i]] = onnx2ggml::read_npy(argv[i + 1], e->dtype(argv[i]));
    } catch (const std::exception& ex) { fprintf(stderr, "%s\n", ex.what()); return 1; }
    std::vector<onnx2ggml::Tensor> outs;
    if (!e->run(m, feeds, outs)) return 1;
    fprintf(stderr, "weights_mb=%.6f\n", e->weights_mb(m));
    mkdir(out_dir.c_str(), 0755);
    auto names = e->outputs();
    std::set<std::string> used;
    for (size_t i = 0; i < outs.size(); i++) {
        std::string base = sanitize(names[i]), f = base;
        for (int k = 1; used.count(f); k++) f = base + "_" + std::to_string(k);
        used.insert(f);
        onnx2ggml::write_npy(out_dir + "/" + f + ".npy", outs[i]);
    }
    e->free(m);
    return 0;
}
'''


def build_project(work, programs, repo, jobs, vulkan=False):
    """programs: [(name, dir)]. One CMake project: unity-built batches of generated sources and one driver."""
    top = os.path.join(work, "project")
    os.makedirs(top, exist_ok=True)
    includes = "\n".join(f'#include "{d}/{n}.h"' for n, d in programs)
    entries = "\n".join(
        f'    {{"{n}", (void* (*)(const char*, const char*, int, const char*)){n}_load, '
        f'(bool (*)(void*, const std::map<std::string, onnx2ggml::Tensor>&, std::vector<onnx2ggml::Tensor>&)){n}_run, '
        f'(void (*)(void*)){n}_free, {n}_input_names, {n}_output_names, {n}_input_dtype, '
        f'(double (*)(void*)){n}_weights_mb}},' for n, d in programs)
    with open(os.path.join(top, "driver.cpp"), "w") as f:
        f.write(DRIVER.replace("@INCLUDES@", includes).replace("@ENTRIES@", entries))
    prefix = f"{repo}/build/install;{repo}/.deps/ggml-install"
    extra = []
    if vulkan:  # the op library and ggml built with Vulkan (scripts/setup.sh --with-vulkan, scripts/build.sh --vulkan)
        prefix = f"{repo}/build-vulkan/install;{repo}/.deps/ggml-vulkan-install;{repo}/.deps/vulkan/usr"
        lib = sh(["sh", "-c", "ldconfig -p | awk '/libvulkan.so.1 /{print $NF; exit}'"]).stdout.strip()
        extra = [f"-DVulkan_INCLUDE_DIR={repo}/.deps/vulkan/usr/include", f"-DVulkan_LIBRARY={lib}"]
    lines = ["cmake_minimum_required(VERSION 3.18)", "project(compile_tests C CXX)", "set(CMAKE_CXX_STANDARD 20)",
             "find_package(onnx2ggml CONFIG REQUIRED)",
             # The generated sources only describe graphs: -O0 keeps a build of many of them quick.
             "add_compile_options(-O0 -Wall -Wextra -Werror)"]
    libs = []
    for b in range(0, len(programs), BATCH):
        srcs = " ".join(f'"{d}/{n}.cpp"' for n, d in programs[b:b + BATCH])
        lib = f"batch{b // BATCH}"
        lines += [f"add_library({lib} STATIC {srcs})", f"target_link_libraries({lib} PUBLIC onnx2ggml::ops)",
                  f"set_target_properties({lib} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)"]
        libs.append(lib)
    lines += ["add_executable(driver driver.cpp)", f"target_link_libraries(driver PRIVATE {' '.join(libs)} onnx2ggml::ops)"]
    with open(os.path.join(top, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    b = os.path.join(top, "build")
    r = sh(["cmake", "-S", top, "-B", b, f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"] + extra)
    if r.returncode != 0:
        raise RuntimeError("configure failed:\n" + r.stdout[-3000:] + r.stderr[-3000:])
    t0 = time.time()
    r = sh(["cmake", "--build", b, f"-j{jobs}"])
    if r.returncode != 0:
        raise RuntimeError("build failed:\n" + (r.stdout + r.stderr)[-6000:])
    print(f"built {len(programs)} generated programs ({len(libs)} unity targets, -Wall -Wextra -Werror) "
          f"in {time.time() - t0:.0f} s")
    return os.path.join(b, "driver")


def strip_literals_and_comments(src: str) -> str:
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
        helper.make_node("Add", [bad[5], x], ["hin"], name=bad[7]),
        # Names the generated build function uses itself must not capture a model value.
        helper.make_node("Neg", ["hin"], ["w"], name="hout"),
        helper.make_node("Sub", ["w", x], [y], name="ctx"),
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


def deep_loop_model(path):
    """A Loop of 24 Adds per iteration whose trip count is an input: at 3000 iterations its graph needs more ggml
    tensors than a compiled program's first graph context holds (65536), so the program must build it again in a
    larger one (o2g::named) rather than let ggml abort. Returns two feeds: that count, and 3."""
    body_nodes, prev = [], "y_in"
    for i in range(24):
        body_nodes.append(helper.make_node("Add", [prev, "one"], [f"a{i}"]))
        prev = f"a{i}"
    body_nodes.append(helper.make_node("Identity", ["cond_in"], ["cond_out"]))
    body_nodes.append(helper.make_node("Identity", [prev], ["y_out"]))
    one = numpy_helper.from_array(np.full([4], 1e-3, np.float32), "one")
    body = helper.make_graph(body_nodes, "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [4])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [4])], [one])
    cond = numpy_helper.from_array(np.array(True), "cond")
    loop = helper.make_node("Loop", ["trips", "cond", "x"], ["y"], body=body)
    g = helper.make_graph([loop], "deep_loop", [helper.make_tensor_value_info("trips", TensorProto.INT64, []),
                                                helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [cond])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = np.arange(4, dtype=np.float32)
    return [{"trips": np.array(3000, np.int64), "x": x}, {"trips": np.array(3, np.int64), "x": x}]


def block_loops_missing(code, loops):
    """Why the generated code lacks its block functions, each called once per block in its loops ("" when it has
    them). loops: [(function, blocks in the loop)], a function that several runs share listed once per run."""
    body = code[code.find("\nvoid build("):]
    for fn in sorted({f for f, _ in loops}):
        if not re.search(r"\nstatic ggml_tensor\* " + fn + r"\(", code):
            return f"no block function {fn}"
        found = sorted(int(m.group(1)) for m in re.finditer(
            r"for \(int il = 0; il < (\d+); il\+\+\)\n\s+(\w+) = " + fn + r"\(ctx, \w+\[il\], \2[,)]", body))
        want = sorted(c for f, c in loops if f == fn)
        if found != want:
            return f"build() calls {fn} in loops over {found} blocks, not {want}"
        if len(re.findall(r"\b" + fn + r"\(", body)) != len(want):
            return f"build() calls {fn} outside its loops"
    return ""


def model_cases(work):
    """(stem, model path, [feeds, feeds]) for the committed model fixtures."""
    out = []
    with open(os.path.join(REPO_ROOT, "tests/models/manifest.json")) as f:
        for e in json.load(f)["models"]:
            src = os.path.join(REPO_ROOT, "tests/models", e["file"])
            path = (model_data.regenerate_external_data(src, os.path.join(REPO_ROOT, "build/model_data", e["name"]))
                    if e.get("external_data") else src)
            out.append((e["name"], path, [model_data.make_inputs(e, c, i) for i, c in enumerate(e["cases"][:2])]))
    sd = os.path.join(REPO_ROOT, "tests/models/sd15_small")
    with open(os.path.join(sd, "manifest.json")) as f:
        for e in json.load(f)["parts"]:
            feeds = [sd15_data.make_inputs(f"sd15_small/{e['name']}", e["inputs"], c, i)
                     for i, c in enumerate(e["cases"][:2])]
            out.append(("sd15_" + e["name"], os.path.join(sd, e["file"]), feeds))
    fam = os.path.join(REPO_ROOT, "tests/models/families_small")
    with open(os.path.join(fam, "manifest.json")) as f:  # the rank-5/6 patterns (DiT attention, RoPE, pixel-unshuffle)
        fm = json.load(f)
        for e in fm["parts"]:
            if e["name"] in FAMILIES_COMPILED:
                feeds = [sd15_data.make_inputs(f"{fm['prefix']}/{e['name']}", e["inputs"], c, i)
                         for i, c in enumerate(e["cases"][:2])]
                out.append((e["name"], os.path.join(fam, e["file"]), feeds))
    deep = os.path.join(work, "deep_loop.onnx")
    out.append(("deep_loop", deep, deep_loop_model(deep)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", default=REPO_ROOT, help="tree whose build/onnx2ggml and build/install are tested")
    ap.add_argument("--filter", help="only node tests whose name matches this regex (and no models unless --models)")
    ap.add_argument("--models", action="store_true", help="with --filter: run the models too")
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--write-allowlist", action="store_true", help="rewrite tests/compile_allowlist.txt")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--vulkan", metavar="MODEL_REGEX",
                    help="only the models matching this regex, compiled and built against build-vulkan, run on "
                         "Vulkan0 (lavapipe) and compared with `run` on Vulkan0")
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    build_dir = "build-vulkan" if a.vulkan else "build"
    if a.vulkan:
        os.environ["GGML_VK_VISIBLE_DEVICES"] = "0"  # ggml skips CPU-type Vulkan devices such as lavapipe otherwise
        a.filter, a.models = "^$", True
    cli = os.path.join(repo, build_dir, "onnx2ggml")
    work = os.path.join(repo, build_dir, "compile_tests")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    if os.path.exists(MARKER):
        os.remove(MARKER)
    failures = []

    with open(ALLOWLIST) as f:
        passing = sorted(l.strip() for l in f if l.strip() and not l.startswith("#"))
    if a.filter:
        passing = [t for t in passing if re.search(a.filter, t)]
    must = set()
    if os.path.exists(COMPILE_ALLOWLIST) and not a.write_allowlist:
        with open(COMPILE_ALLOWLIST) as f:
            must = {l.strip() for l in f if l.strip() and not l.startswith("#")}

    # 1. compile every node test
    t0 = time.time()
    programs, node_jobs, refused = [], [], collections.Counter()
    refused_tests = []
    with_examples = 0
    for i, t in enumerate(passing):
        name = f"n{i}"
        d = os.path.join(work, name)
        model = os.path.join(NODE_DIR, t, "model.onnx")
        res = compile_model(cli, model, d, name)
        if res and "--example" in res[1]:
            # Made-up data does not fit the graph (a reshape target): compile again with the test's inputs as examples.
            ex = os.path.join(work, name + "_examples")
            os.makedirs(ex)
            args = write_node_inputs(model, os.path.join(NODE_DIR, t, "test_data_set_0"), ex)
            res = compile_model(cli, model, d, name, args[1::2])
            with_examples += res is None
        if res is None:
            programs.append((name, d))
            node_jobs.append((t, name, d))
        elif res[0] == "refused":
            refused_tests.append(t)
            for r in set(refusal_reasons(res[1])):
                refused[r] += 1
            if t in must:
                failures.append(f"{t}: on the compile allow-list but refused: {res[1][-300:]}")
        else:
            failures.append(f"{t}: compile failed without a clean refusal: {res[1]}")
    print(f"node tests: {len(node_jobs)} of {len(passing)} compiled ({with_examples} with the test's inputs as "
          f"--example data), {len(refused_tests)} refused ({time.time() - t0:.0f} s)")
    for reason, n in refused.most_common(40):
        print(f"  refused x{n}: {reason[:160]}")

    # 2 and 3: models and the hostile-names model join the same build
    models = [] if (a.no_models or (a.filter and not a.models)) else model_cases(work)
    if a.vulkan:
        models = [m for m in models if re.search(a.vulkan, m[0])]
    for stem, path, feeds in models:
        d = os.path.join(work, stem)
        res = compile_model(cli, path, d, stem)
        if stem in KNOWN_REFUSALS:
            if res is None:
                failures.append(f"model {stem}: compiles now; drop it from KNOWN_REFUSALS")
                programs.append((stem, d))
            elif res[0] != "refused":
                failures.append(f"model {stem}: compile failed without a clean refusal: {res[1][-800:]}")
            else:
                print(f"OK   {stem}: refused as known ({KNOWN_REFUSALS[stem]})")
        elif res is None:
            programs.append((stem, d))
        else:
            failures.append(f"model {stem}: not compiled: {res[1][-1500:]}")
    hostile = os.path.join(work, "hostile.onnx")
    hx, hy = hostile_model(hostile)
    hd = os.path.join(work, "hostile")
    res = None if a.vulkan else compile_model(cli, hostile, hd, "hostile")
    if a.vulkan:
        pass
    elif res is None:
        programs.append(("hostile", hd))
    else:
        failures.append(f"hostile: not compiled: {res[1]}")
    driver = build_project(work, programs, repo, a.j, vulkan=bool(a.vulkan)) if programs else None

    def run_both(name, d, model, args, work_dir, weights=False):
        """None, or what differs. weights: also the weight bytes the program put on its device against the bytes
        of weights `run`'s graph reads (--stats weights_mb): the same, so no weight is on the device twice."""
        outc, outr = os.path.join(work_dir, "out_c"), os.path.join(work_dir, "out_r")
        stats = os.path.join(work_dir, "run_stats.json")
        rc = sh([driver, name, os.path.join(d, name + ".gguf"), outc] + [x for p in args for x in p])
        rr = sh([cli, "run", model, "--output-dir", outr, "--threads", "2", "--stats", stats] +
                [x for n, p in args for x in ("--input", f"{n}={p}")])
        if a.vulkan and not all("device Vulkan0" in r.stderr for r in (rc, rr)):
            return "did not run on Vulkan0: " + (rc.stderr + rr.stderr).strip()[-300:]
        err = (f"compiled program failed: {rc.stderr.strip()[-300:]}" if rc.returncode else
               f"run failed: {rr.stderr.strip()[-300:]}" if rr.returncode else same_outputs(outc, outr))
        if err or not weights:
            return err
        prog = float(re.search(r"weights_mb=([0-9.]+)", rc.stderr).group(1))
        ref = json.load(open(stats))["weights_mb"]
        print(f"     weights on the device: program {prog:.3f} MB, run's graph reads {ref:.3f} MB")
        if abs(prog - ref) > 0.01 * ref + 0.05:
            return f"the program holds {prog:.3f} MB of weights on its device, run's graph reads {ref:.3f} MB"
        return None

    bad_nodes = 0
    for t, name, d in node_jobs:
        tdir = os.path.join(NODE_DIR, t)
        args = write_node_inputs(os.path.join(tdir, "model.onnx"), os.path.join(tdir, "test_data_set_0"), d)
        pairs = [(args[k + 1].split("=", 1)[0], args[k + 1].split("=", 1)[1]) for k in range(0, len(args), 2)]
        err = run_both(name, d, os.path.join(tdir, "model.onnx"), pairs, d)
        if err:
            bad_nodes += 1
            failures.append(f"{t}: {err}")
    print(f"node tests compiled: {len(node_jobs) - bad_nodes}/{len(node_jobs)} bit-identical to `onnx2ggml run`")

    for stem, path, feeds in models:
        if (stem, os.path.join(work, stem)) not in programs:
            continue
        d = os.path.join(work, stem)
        for k, feed in enumerate(feeds):
            cdir = os.path.join(d, f"case{k}")
            os.makedirs(cdir, exist_ok=True)
            pairs = []
            for n, arr in feed.items():
                p = os.path.join(cdir, sanitize_name(n))  # NAME.npy
                np.save(p, arr)
                pairs.append((n, p))
            err = run_both(stem, d, path, pairs, cdir, weights=True)
            shapes = " ".join("x".join(map(str, v.shape)) for v in feed.values())
            print(("FAIL" if err else "OK  ") + f" {stem} at {shapes}: " + (err or "bit-identical to onnx2ggml run"))
            if err:
                failures.append(f"model {stem} at {shapes}: {err}")

    for stem, loops in BLOCK_LOOPS.items():
        if (stem, os.path.join(work, stem)) not in programs:
            continue
        err = block_loops_missing(open(os.path.join(work, stem, stem + ".cpp")).read(), loops)
        print(("FAIL" if err else "OK  ") + f" {stem}: " + (err or "repeated blocks are a loop over one block function"))
        if err:
            failures.append(f"model {stem}: {err}")

    if ("hostile", hd) in programs:
        import onnxruntime as ort
        x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
        p = os.path.join(hd, "x.npy")
        np.save(p, x)
        rc = sh([driver, "hostile", os.path.join(hd, "hostile.gguf"), os.path.join(hd, "out"), hx, p])
        want = ort.InferenceSession(hostile, providers=["CPUExecutionProvider"]).run(None, {hx: x})[0]
        err = None
        if rc.returncode:
            err = "program failed: " + rc.stderr[-300:]
        else:
            got = np.load(os.path.join(hd, "out", sanitize_name(hy)))
            rel = metrics.errors(want, got).rel
            if rel > 1e-5:
                err = f"relative error {rel:.2e}"
        if os.path.exists(MARKER):
            err = "an injected command ran (marker file exists)"
        code = strip_literals_and_comments(open(os.path.join(hd, "hostile.cpp")).read())
        # Model text may reach code only as [A-Za-z0-9_] identifiers: none of its punctuation survives.
        for needle in ("system(", "/etc", "$(", "`", "??", "\\", "*/", "/*"):
            if needle in code:
                err = f"model text '{needle}' reached the generated code outside a string literal or comment"
        print(("FAIL" if err else "OK  ") + " hostile names: " + (err or "built, ran, matched onnxruntime, nothing injected"))
        if err:
            failures.append("hostile: " + err)

    # 4. what a generated program links
    if driver:
        syms = sh(["nm", "-C", driver]).stdout
        leaked = sorted({m.group(0) for m in re.finditer(
            r"onnx2ggml::(load_model|parse_model|Builder|plan_graph|find_op|registered_ops|Lower|compile_model|"
            r"SessionImpl|run_node|fuse_\w+|fold_\w+)\b", syms)})
        print(("FAIL" if leaked else "OK  ") + " nm: " +
              (f"generated programs link {', '.join(leaked)}" if leaked else "no loader, IR, op-table or pass symbols"))
        if leaked:
            failures.append("nm: " + ", ".join(leaked))

    if a.write_allowlist and not a.filter:
        with open(COMPILE_ALLOWLIST, "w") as f:
            f.write("# Node tests `onnx2ggml compile` must compile (tests/compile_tests.py --write-allowlist).\n")
            for t, _, _ in node_jobs:
                f.write(t + "\n")
    for f_ in failures:
        print("FAIL " + f_)
    print("compile tests: " + ("all passed" if not failures else f"{len(failures)} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
