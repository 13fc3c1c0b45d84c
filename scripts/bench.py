#!/usr/bin/env python3
"""Speed of onnx2ggml against onnxruntime (CPU provider) on the same ONNX files, inputs and thread count,
measured one after the other in one run. Prints a table of median/min times and the ratio ours / ort.

Usage: .venv-bench/bin/python scripts/bench.py [--threads 2] [--runs 10] [--filter REGEX] [--model FILE.onnx ...]
Models default to every case of tests/models/manifest.json (external data regenerated from seeds);
--model adds ONNX files with random inputs (float inputs normal, int64 inputs zeros) at their fixed shapes,
with symbolic dims set by --dim NAME=VALUE. --sd15 DIR adds the four SD 1.5 parts at fixed benchmark shapes.
--corpus runs (only) the real models of tests/corpus.json (scripts/fetch_corpus.py fetches them) at their listed
shapes, and adds per model its parity against onnxruntime and the profile's share of elementwise/REPEAT/CONT time.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

NEWEST_ORT = "1.31.1"  # the newest on PyPI when the bars were set (scripts/setup.sh BENCH_PKGS)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORT_ENV = None  # the onnxruntime workers' environment (--avx2: a copy of onnxruntime without AVX-512 first)
sys.path.insert(0, os.path.join(REPO, "tests"))
from model_data import make_inputs, regenerate_external_data  # noqa: E402
import metrics  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "scripts"))
import fetch_corpus  # noqa: E402


def side_by_side(cli, model, feeds, threads, runs, warmup, tmp, procs=1, levels=(None,)):
    """`procs` processes of each runtime, alternating (ours, onnxruntime, ours, ...), so that both see the same
    phases of this VM, which speeds up and slows down by 20-40 % for minutes at a time. Each runtime's time is the
    median over its processes of each process's median, and the overall min.
    `levels`: ours once per x86-64 level (ONNX2GGML_CPU) in each round, None for the CPU's own.
    Returns ([(median, min, note) or (None, None, error) for ours at each level], (median, min, note) for
    onnxruntime)."""
    res, ort_res = {lv: [] for lv in levels}, []
    for _ in range(procs):
        for lv in levels:
            res[lv].append(ours_once(cli, model, feeds, threads, runs, warmup, tmp, lv))
        ort_res.append(onnxruntime(model, feeds, threads, runs, warmup, tmp))

    def summary(results, note, label):  # results: (median, min, ...) per process
        meds = sorted(r[0] for r in results)
        if len(meds) > 1:
            note += f"; {label}per-process medians {', '.join(f'{m:.0f}' for m in meds)}"
        return statistics.median(meds), min(r[1] for r in results), note

    ort_out = summary(ort_res, f"ort rss {max(r[2] for r in ort_res):.0f} MB", "ort ")
    ours = []
    for lv in levels:
        bad = [r for r in res[lv] if r[0] is None]
        ours.append(bad[0] if bad else summary(res[lv], res[lv][-1][2], ""))
    return ours, ort_out


def ours_once(cli, model, feeds, threads, runs, warmup, tmp, level=None):
    args = [cli, "bench", model, "--threads", str(threads), "--runs", str(runs), "--warmup", str(warmup)]
    env = {**os.environ, "ONNX2GGML_CPU": level} if level else None
    for name, arr in feeds.items():
        p = os.path.join(tmp, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")
        np.save(p, arr)
        args += ["--input", f"{name}={p}"]
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None, None, r.stderr.strip().splitlines()[-1]
    m = re.search(r"median_ms=([\d.]+) min_ms=([\d.]+)", r.stdout)
    rss = re.search(r"peak RSS: ([\d.]+) MB", r.stdout)
    work = re.search(r"work: ([\d.]+) GFLOP", r.stdout)
    ours_once.gflop = float(work.group(1)) if work else 0.0
    t = re.search(r"load: ([\d.]+) ms, graph build: ([\d.]+) ms, first run compute: ([\d.]+) ms", r.stdout)
    note = f"rss {rss.group(1)} MB" if rss else ""
    if t:
        note += f"; load {float(t.group(1)):.0f} ms, build {float(t.group(2)):.0f} ms, first run {float(t.group(3)):.0f} ms"
    return float(m.group(1)), float(m.group(2)), note


def onnxruntime(model, feeds, threads, runs, warmup, tmp):
    """onnxruntime in its own process, so that its peak RSS is its own: (median ms, min ms, peak RSS MB)."""
    npz = os.path.join(tmp, "ort_feeds.npz")
    np.savez(npz, **{f"i{k}": v for k, v in enumerate(feeds.values())})
    names = json.dumps(list(feeds))
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ort-worker", model, npz, names, str(threads),
                        str(runs), str(warmup)], capture_output=True, text=True, env=ORT_ENV)
    if r.returncode != 0:
        raise RuntimeError(f"onnxruntime on {model}: {r.stderr.strip().splitlines()[-1:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["median"], out["min"], out["rss_mb"]


def ort_worker(model, npz, names, threads, runs, warmup):
    import resource
    data = np.load(npz)
    feeds = {n: data[f"i{k}"] for k, n in enumerate(json.loads(names))}
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(threads)
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    for _ in range(int(warmup) + 1):
        s.run(None, feeds)
    times = []
    for _ in range(int(runs)):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t) * 1000)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"median": statistics.median(times), "min": min(times), "rss_mb": rss}))


def ort_outputs_worker(model, npz, names, threads, out):
    """Outputs of onnxruntime with all graph optimizations and with none: the second is its own noise floor."""
    data = np.load(npz)
    feeds = {n: data[f"i{k}"] for k, n in enumerate(json.loads(names))}
    res = {}
    for tag, level in (("opt", ort.GraphOptimizationLevel.ORT_ENABLE_ALL),
                       ("noopt", ort.GraphOptimizationLevel.ORT_DISABLE_ALL)):
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.graph_optimization_level = level
        outs = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        res.update({f"{tag}{k}": o for k, o in enumerate(outs)})
    np.savez(out, **res)


def parity(cli, model, feeds, threads, tmp, peak=0.0):
    """Ours against onnxruntime on the same inputs, from one `onnx2ggml run --profile` of two runs (the second is
    profiled warm). Returns (worst max abs error, worst max rel error, onnxruntime's own noise (max abs difference
    between its optimized and unoptimized outputs), ok, verdict shares "elem/REPEAT/CONT" (with " cliff" when the
    verdict warns, given the peak) or an error text)."""
    npz, out = os.path.join(tmp, "parity_feeds.npz"), os.path.join(tmp, "parity_ort.npz")
    np.savez(npz, **{f"i{k}": v for k, v in enumerate(feeds.values())})
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ort-outputs", model, npz, json.dumps(list(feeds)),
                        str(threads), out], capture_output=True, text=True, env=ORT_ENV)
    if r.returncode:
        return None, None, None, False, "onnxruntime: " + r.stderr.strip().splitlines()[-1]
    ref = np.load(out)
    args = [cli, "run", model, "--threads", str(threads), "--profile"]
    for k in range(2):
        args += (["--then"] if k else []) + [a for name in feeds for a in
                                             ("--input", f"{name}={_npy(tmp, name, feeds[name])}")]
        args += ["--output-dir", os.path.join(tmp, f"parity_out{k}")]
    env = {**os.environ, "ONNX2GGML_PEAK_GFLOPS": str(peak)} if peak else None
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode:
        return None, None, None, False, "ours: " + r.stderr.strip().splitlines()[-1]
    paths = re.findall(r"-> (\S*parity_out1\S*\.npy)$", r.stdout, re.M)
    worst_abs = worst_rel = noise = 0.0
    ok = True
    for k, p in enumerate(paths):
        want, got, unopt = ref[f"opt{k}"], np.load(p), ref[f"noopt{k}"]
        e = metrics.errors(want, got) if got.shape == want.shape else metrics.Errors(np.inf, np.inf, 0, 0)
        n = metrics.errors(want, unopt).abs
        ok &= e.rel <= 1e-4 or e.abs <= 2 * n
        worst_abs, worst_rel, noise = max(worst_abs, e.abs), max(worst_rel, e.rel), max(noise, n)
    ok &= len(paths) == len([k for k in ref.files if k.startswith("opt")])
    v = re.findall(r"verdict: elementwise ([\d.]+)%, REPEAT ([\d.]+)%, CONT ([\d.]+)%", r.stdout)
    shares = "/".join(f"{float(x):.0f}" for x in v[-1]) + "%" if v else "?"
    if "WARNING" in r.stdout.rsplit("verdict: ", 1)[-1].splitlines()[0]:
        shares += " cliff"
    return worst_abs, worst_rel, noise, ok, shares


def _npy(tmp, name, arr):
    p = os.path.join(tmp, re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy")
    np.save(p, arr)
    return p


def corpus_feeds(entry):
    """Inputs of a corpus model at its listed shapes; dtypes from the model. Fills: normal (float default), zeros,
    ones, int:LOW:HIGH, const:V."""
    m = onnx.load(fetch_corpus.model_path(entry), load_external_data=False)
    types = {vi.name: onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type) for vi in m.graph.input}
    rng = np.random.RandomState(0)
    feeds = {}
    for name, spec in entry["inputs"].items():
        shape, dt, fill = spec["shape"], types[name], spec.get("fill", "normal")
        if fill == "normal":
            a = rng.randn(*shape)
        elif fill in ("zeros", "ones"):
            a = np.full(shape, 1 if fill == "ones" else 0)
        elif fill.startswith("int:"):
            lo, hi = map(int, fill[4:].split(":"))
            a = rng.randint(lo, hi, size=shape)
        elif fill.startswith("const:"):
            a = np.full(shape, float(fill[6:]))
        else:
            raise ValueError(f"{entry['name']}: unknown fill '{fill}' for input {name}")
        feeds[name] = np.asarray(a).astype(dt)
    return feeds


def corpus_jobs(filter_re):
    jobs = []
    for e in fetch_corpus.load_corpus(filter_re):
        path = fetch_corpus.fetch(e, fetch_corpus.DEFAULT_DIR)
        jobs.append((e["name"], path, lambda e=e: corpus_feeds(e), e))
    return jobs


def print_corpus(rows):
    """The corpus as a Markdown table (for docs/models.md), after the timing lines."""
    print("\n| model | exporter | category | onnx2ggml ms | onnxruntime ms | ratio | GF/s ours / ort | "
          "max abs err | max rel err | ort noise | parity | elementwise/REPEAT/CONT |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    ratios = sorted(float(r[5]) for r in rows if r[5] not in ("", "failed"))
    if ratios:
        print(f"\n{len(rows)} models; ratio median {statistics.median(ratios):.2f}, worst {ratios[-1]:.2f}; "
              f"within 1.5x: {sum(x <= 1.5 for x in ratios)}; parity ok: {sum(r[10] == 'ok' for r in rows)}")


SD15_SHAPES = {"text_encoder": {"batch": 1, "sequence": 77},
               "unet": {"batch": 2, "height": 32, "width": 32, "sequence": 77},
               "vae_encoder": {"batch": 1, "height": 256, "width": 256},
               "vae_decoder": {"batch": 1, "latent_height": 32, "latent_width": 32}}


def random_feeds(model_path, dims):
    m = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.RandomState(0)
    feeds = {}
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 1) for d in t.shape.dim]
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        feeds[vi.name] = rng.randn(*shape).astype(dt) if dt.kind == "f" else np.zeros(shape, dt)
    return feeds


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--ort-worker":
        return ort_worker(*sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--ort-sgemm":
        return ort_sgemm()
    if len(sys.argv) > 1 and sys.argv[1] == "--ort-outputs":
        return ort_outputs_worker(*sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.path.join(REPO, "build/onnx2ggml"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--procs", type=int, default=1, help="onnx2ggml processes per model (median of their medians)")
    ap.add_argument("--filter", default="")
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE for symbolic dims of --model files")
    ap.add_argument("--sd15", default=None, metavar="DIR",
                    help="the SD 1.5 parts of scripts/export_sd15.py in DIR (e.g. build/sd15_full) at the shapes of "
                         "docs/performance.md: UNet 2x4x32x32 with a 2x77 context, VAE 32x32 latent / 256x256 image, "
                         "77 tokens")
    ap.add_argument("--peak", type=float, default=0.0,
                    help="this machine's fp32 peak in GFLOP/s (scripts/peak_flops.sh) to print the share reached")
    ap.add_argument("--cpu-levels", default="",
                    help="comma-separated x86-64 levels (v4,v3,v2) to run ours at, each against the same "
                         "onnxruntime runs (ONNX2GGML_CPU; onnxruntime keeps the CPU's own level)")
    ap.add_argument("--avx2", action="store_true",
                    help="AVX2 against AVX2 on an AVX-512 machine: ours at v3 (unless --cpu-levels) and onnxruntime "
                         "from a copy that sees no AVX-512 state (scripts/ort_isa.py, made in build/ort_avx2)")
    ap.add_argument("--corpus", action="store_true",
                    help="only the real models of tests/corpus.json (fetched into .deps/corpus when missing), with "
                         "parity against onnxruntime and the share of elementwise/REPEAT/CONT time")
    a = ap.parse_args()
    if a.avx2:
        use_ort_avx2(a)
    jobs = corpus_jobs(a.filter) if a.corpus else [j for j in collect_jobs(a) if re.search(a.filter, j[0])]
    print(f"onnxruntime {ort.__version__} (CPU provider); threads={a.threads} runs={a.runs} warmup={a.warmup}; "
          "times in ms (median / min); ratio = ours / onnxruntime; rss = peak RSS of each runtime's own process")
    if ort.__version__ != NEWEST_ORT:
        print(f"note: the issue's bars are against onnxruntime {NEWEST_ORT}: scripts/setup.sh --with-bench, then "
              f"run this with .venv-bench/bin/python")
    print("GFLOP: dense conv/matmul/attention work per run (direct-convolution count, from onnx2ggml bench); "
          "GF/s and % of peak at the median")
    if a.corpus:
        print("parity: max abs / max rel error (abs / max |ref|) of ours against onnxruntime (all optimizations); "
              "ok when rel <= 1e-4 or abs <= 2x onnxruntime's own noise (optimized vs unoptimized)")
    print(f"{'model':36} {'ours':>17} {'onnxruntime':>17} {'ratio':>6} {'GFLOP':>8} {'ours GF/s':>9} "
          f"{'ort GF/s':>9}  note")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, feeds_fn, entry in jobs:
            row = bench_one(a, label, path, feeds_fn(), entry, tmp)
            if row:
                rows.append(row)
    if a.corpus:
        print_corpus(rows)


def use_ort_avx2(a):
    """Points the onnxruntime workers at scripts/ort_isa.py's copy and prints its single-thread sgemm rate, which
    shows the ISA it runs (AVX2: at most 32 flops a cycle; AVX-512: 64)."""
    global ORT_ENV
    import ort_isa
    dest, n = ort_isa.avx2_copy(os.path.join(REPO, "build", "ort_avx2"))
    ORT_ENV = {**os.environ, "PYTHONPATH": dest + os.pathsep + os.environ.get("PYTHONPATH", "")}
    a.cpu_levels = a.cpu_levels or "v3"
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--ort-sgemm"], capture_output=True, text=True,
                       env=ORT_ENV, check=True)
    print(f"--avx2: onnxruntime from {dest} ({n} xgetbv rewritten): {r.stdout.strip()}; ours at {a.cpu_levels}")


def ort_sgemm():
    """One-thread 1024x1024x1024 MatMul rate of the importable onnxruntime, and where it was imported from."""
    from onnx import helper
    n = 1024
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "g",
                          [helper.make_tensor_value_info(x, 1, [n, n]) for x in "ab"],
                          [helper.make_tensor_value_info("c", 1, [n, n])])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.random.rand(n, n).astype(np.float32)
    s.run(None, {"a": x, "b": x})
    t = time.perf_counter()
    for _ in range(5):
        s.run(None, {"a": x, "b": x})
    print(f"sgemm 1024^3 on 1 thread {2 * n ** 3 * 5 / (time.perf_counter() - t) / 1e9:.0f} GF/s "
          f"({os.path.dirname(ort.__file__)})")


def collect_jobs(a):
    """(label, path, feeds function, None) for the manifest's cases, --model files and --sd15 parts."""
    dims = {k: int(v) for k, v in (d.split("=") for d in a.dim)}
    jobs = []
    manifest = json.load(open(os.path.join(REPO, "tests/models/manifest.json")))
    for e in manifest["models"]:
        path = os.path.normpath(os.path.join(REPO, "tests/models", e["file"]))
        if e.get("external_data"):
            path = regenerate_external_data(path, os.path.join(REPO, "build/model_data", e["name"]))
        for ci, case in enumerate(e["cases"]):
            label = e["name"] + " " + "/".join("x".join(map(str, v)) for v in case.values())
            jobs.append((label, path, lambda e=e, case=case, ci=ci: make_inputs(e, case, ci), None))
    for p in a.model:
        jobs.append((os.path.basename(p), p, lambda p=p: random_feeds(p, dims), None))
    if a.sd15:
        for part, d in SD15_SHAPES.items():
            p = os.path.join(a.sd15, part + ".onnx")
            jobs.append((f"sd15 {part}", p, lambda p=p, d=d: random_feeds(p, d), None))
    return jobs


def bench_one(a, label, path, feeds, entry, tmp):
    """Times one model and prints its line; for a corpus entry, also its parity. Returns the corpus table row."""
    levels = tuple(a.cpu_levels.split(",")) if a.cpu_levels else (None,)
    ours, (rm, rn, ort_note) = side_by_side(a.cli, path, feeds, a.threads, a.runs, a.warmup, tmp, a.procs, levels)
    row = None
    for lv, (om, on, note) in zip(levels, ours):
        row = print_one(a, label + (f" [{lv}]" if lv else ""), path, feeds, entry, tmp, om, on, note, rm, rn, ort_note)
    return row


def print_one(a, label, path, feeds, entry, tmp, om, on, note, rm, rn, ort_note):
    """Prints one line of ours against onnxruntime; for a corpus entry, also its parity. Returns its table row."""
    note = f"{note}; {ort_note}"
    par = parity(a.cli, path, feeds, a.threads, tmp, a.peak) if entry else None
    if par:
        ab, rel, noise, ok, shares = par
        note = (f"parity {'ok' if ok else 'FAILED'}: abs {ab:.1e} rel {rel:.1e} ort noise {noise:.1e}; "
                f"elem/REPEAT/CONT {shares}; " if ab is not None else f"parity FAILED: {shares}; ") + note
    row = None
    if entry:
        exp = entry["producer"]
        row = [label, exp, entry["category"], "failed" if om is None else f"{om:.2f}", f"{rm:.2f}",
               "failed" if om is None else f"{om / rm:.2f}", "", "", "", "", "FAILED", ""]
        if par[0] is not None:
            row[7:12] = [f"{par[0]:.1e}", f"{par[1]:.1e}", f"{par[2]:.1e}", "ok" if par[3] else "FAILED", par[4]]
    if om is None:
        print(f"{label:36} {'failed':>17} {rm:8.2f} /{rn:7.2f} {'':>6}  {note}")
        return row
    gf = ours_once.gflop
    share = ""
    if a.peak and gf:
        share = f"  peak share: ours {100 * gf / (om / 1e3) / a.peak:.0f}%, ort {100 * gf / (rm / 1e3) / a.peak:.0f}%"
    print(f"{label:36} {om:8.2f} /{on:7.2f} {rm:8.2f} /{rn:7.2f} {om / rm:6.2f} {gf:8.2f} "
          f"{gf / (om / 1e3):9.1f} {gf / (rm / 1e3):9.1f}  {note}{share}", flush=True)
    if row:
        row[6] = f"{gf / (om / 1e3):.1f} / {gf / (rm / 1e3):.1f}" if gf else "-"
    return row

if __name__ == "__main__":
    main()
