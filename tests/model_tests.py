#!/usr/bin/env python3
"""Whole-model tests: onnxruntime (reference) vs the onnx2ggml CLI.

For every entry of tests/models/manifest.json and every shape case:
  * external-data models: the graph is copied to build/model_data/<name>/ and its data
    file regenerated there from seeds (tests/model_data.py); others run in place;
  * seeded random inputs are written as .npy files;
  * onnxruntime computes the reference, `onnx2ggml run` computes ours;
  * per output: max abs error and rel = max abs err / max |ref|; pass if rel <= tolerance.

Usage:
  .venv/bin/python tests/model_tests.py [--cli build/onnx2ggml] [--filter REGEX]
      [--threads N] [--runner cli|ort] [--tol X] [--keep] [--timeout S]

--runner ort swaps the CLI for a stand-in that honours the same command line but runs
onnxruntime (with graph optimisations off), to validate this harness without the binary.
Exit status is non-zero if any case fails.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from cli_common import bitwise_diff, cli_prefix, local_twin, off_device  # noqa: E402
import metrics  # noqa: E402
import model_data  # noqa: E402


def sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


# ----------------------------------------------------------------------------- ort stand-in

def ort_cli_main(argv):
    """`run MODEL --input NAME=FILE ... --output-dir DIR [--threads N] [--stats FILE]` with onnxruntime (its stats
    file names the runner only: no weight forms, no device)."""
    import onnxruntime as ort
    ap = argparse.ArgumentParser(prog="ort-stand-in")
    ap.add_argument("cmd", choices=["run"])
    ap.add_argument("model")
    ap.add_argument("--input", action="append", default=[])
    ap.add_argument("--output-dir", required=True)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--stats")
    a = ap.parse_args(argv)
    feeds = {}
    for item in a.input:
        name, _, path = item.partition("=")
        feeds[name] = np.load(path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if a.threads:
        so.intra_op_num_threads = a.threads
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(names, feeds)
    os.makedirs(a.output_dir, exist_ok=True)
    for name, val in zip(names, outs):
        np.save(os.path.join(a.output_dir, sanitize(name) + ".npy"), val)
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump({"runner": "onnxruntime"}, f)
    return 0


# ----------------------------------------------------------------------------- harness

def reference(model_path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def compare(ref, got):
    if got.shape != ref.shape:
        return None, None, f"shape {list(got.shape)} != ref {list(ref.shape)}"
    if ref.dtype.kind in "iub" and got.dtype.kind not in "iub":
        return None, None, f"dtype {got.dtype} != ref {ref.dtype}"
    e = metrics.errors(ref, got)
    return e.abs, e.rel, ("non-finite mismatch" if e.nan_bad or e.inf_bad else None)


def run_case(args, entry, model_path, case, ci, work):
    feeds = model_data.make_inputs(entry, case, ci)
    case_dir = os.path.join(work, f"{entry['name']}_{ci}")
    out_dir = os.path.join(case_dir, "out")
    os.makedirs(case_dir, exist_ok=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = list(args.cmd_prefix) + ["run", model_path]
    for name, arr in feeds.items():
        p = os.path.join(case_dir, sanitize(name) + ".npy")
        np.save(p, arr)
        cmd += ["--input", f"{name}={p}"]
    cmd += ["--output-dir", out_dir]
    stats = os.path.join(case_dir, "stats.json")
    cmd += ["--stats", stats]
    if args.device:
        cmd += ["--device", args.device]
    if args.rpc:
        cmd += ["--rpc", args.rpc]
    if args.threads:
        cmd += ["--threads", str(args.threads)]

    t0 = time.perf_counter()
    ref = reference(model_path, feeds)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        rc, log = proc.returncode, (proc.stdout + proc.stderr)
    except subprocess.TimeoutExpired:
        rc, log = "timeout", ""
    t_cli = time.perf_counter() - t0

    rows = []
    tol = args.tol if args.tol is not None else entry.get("tolerance", {}).get("rel", 1e-4)
    shape_s = " ".join("x".join(map(str, case[i["name"]])) for i in entry["inputs"])
    if rc != 0:
        tail = " | ".join(log.strip().splitlines()[-3:])[-300:]
        rows.append((entry["name"], shape_s, "-", None, None, tol, False, f"exit {rc}: {tail}", t_ref, t_cli))
        return rows
    with open(stats) as f:
        st = json.load(f)
    # One conv plan: every weight form the session made is one the graph's kernels read.
    why = f"{st['unread_weight_bytes']} bytes of weight forms no kernel reads" if st.get("unread_weight_bytes") else None
    if args.device:  # every float op on the device: no CPU fallback
        why = off_device(st, args.device) or why
    if args.rpc and not why:  # the remote device computes what the same graph gives here, bit for bit
        local = os.path.join(case_dir, "local")
        shutil.rmtree(local, ignore_errors=True)
        proc = subprocess.run(local_twin(cmd, local), capture_output=True, text=True, timeout=args.timeout)
        why = f"local run: exit {proc.returncode}" if proc.returncode else bitwise_diff(out_dir, local)
    if why:
        rows.append((entry["name"], shape_s, "-", None, None, tol, False, why, t_ref, t_cli))
    for name, r in ref.items():
        path = os.path.join(out_dir, sanitize(name) + ".npy")
        if not os.path.exists(path):
            rows.append((entry["name"], shape_s, name, None, None, tol, False, "missing output", t_ref, t_cli))
            continue
        try:
            got = np.load(path)
        except Exception as e:  # noqa: BLE001
            rows.append((entry["name"], shape_s, name, None, None, tol, False, f"bad npy: {e}", t_ref, t_cli))
            continue
        err, rel, why = compare(r, got)
        ok = why is None and rel is not None and rel <= tol
        rows.append((entry["name"], shape_s, name, err, rel, tol, ok, why or "", t_ref, t_cli))
    return rows


def fmt(x):
    return "-" if x is None else f"{x:.3e}"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--ort-stand-in":
        return ort_cli_main(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--runner", choices=["cli", "ort"], default="cli")
    ap.add_argument("--filter", default=None, help="regex on model name")
    ap.add_argument("--manifest", default=os.path.join(HERE, "models", "manifest.json"))
    ap.add_argument("--data-dir", default=os.path.join(REPO, "build", "model_data"),
                    help="where external data is regenerated (ignored folder)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--device", default=None,
                    help="run on this ggml device (e.g. Vulkan0) and fail any model with ggml nodes computed elsewhere")
    ap.add_argument("--rpc", default=None, metavar="HOST:PORT",
                    help="ggml RPC servers (with --device RPC0): each run must also equal the same graph run on the "
                         "local CPU (--portable) bit for bit")
    ap.add_argument("--tol", type=float, default=None, help="override every model's rel tolerance")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir with inputs/outputs")
    args = ap.parse_args(argv)

    if args.runner == "ort":
        args.cmd_prefix = [sys.executable, os.path.abspath(__file__), "--ort-stand-in"]
    else:
        if not os.access(args.cli, os.X_OK):
            print(f"error: CLI not found or not executable: {args.cli}", file=sys.stderr)
            return 2
        args.cmd_prefix = cli_prefix(args.cli)

    with open(args.manifest) as f:
        manifest = json.load(f)
    entries = [e for e in manifest["models"] if not args.filter or re.search(args.filter, e["name"])]
    if not entries:
        print("no models selected", file=sys.stderr)
        return 2

    work = tempfile.mkdtemp(prefix="onnx2ggml_models_")
    rows = []
    try:
        for entry in entries:
            src = os.path.normpath(os.path.join(os.path.dirname(args.manifest), entry["file"]))
            if entry.get("external_data"):
                model_path = model_data.regenerate_external_data(src, os.path.join(args.data_dir, entry["name"]))
            else:
                model_path = src
            for ci, case in enumerate(entry["cases"]):
                new = run_case(args, entry, model_path, case, ci, work)
                for r in new:
                    print(f"  {'ok  ' if r[6] else 'FAIL'} {r[0]} [{r[1]}] {r[2]}: rel {fmt(r[4])} "
                          f"(ort {r[8]:.2f}s, run {r[9]:.2f}s) {r[7]}", flush=True)
                rows.extend(new)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    hdr = ("model", "inputs", "output", "max_abs_err", "rel_err", "tol", "result", "ort_s", "run_s", "note")
    table = [(r[0], r[1], r[2], fmt(r[3]), fmt(r[4]), f"{r[5]:.0e}", "PASS" if r[6] else "FAIL",
              f"{r[8]:.2f}", f"{r[9]:.2f}", r[7]) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(hdr, *table)]
    widths[-1] = 0
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    print()
    print(line(hdr))
    print(line(["-" * w for w in widths[:-1]] + ["----"]))
    for t in table:
        print(line(t))
    failed = sum(1 for r in rows if not r[6])
    print(f"\n{len(rows) - failed}/{len(rows)} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
