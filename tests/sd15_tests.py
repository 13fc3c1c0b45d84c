#!/usr/bin/env python3
"""Stable Diffusion 1.5 parts: onnx2ggml and onnxruntime vs stored PyTorch outputs.

For every part (vae_encoder, vae_decoder, unet, text_encoder) in the manifest written by
scripts/export_sd15.py and every shape case:
  * the seeded inputs are regenerated (tests/sd15_data.py) and written as .npy;
  * `onnx2ggml run` and onnxruntime (a child process, default graph optimisations) each run
    the ONNX graph with the same thread count;
  * each result is compared with the PyTorch eager output stored next to the graph
    (ref/<part>.<case>.<output>.npy): max abs error, and rel = max abs err / max |ref|.
A case passes when both runtimes give rel <= tolerance (1e-4) for every output.
No torch is needed.

Usage:
  .venv/bin/python tests/sd15_tests.py [--manifest tests/models/sd15_small/manifest.json]
      [--cli build/onnx2ggml] [--threads 2] [--filter REGEX] [--tol X] [--no-ort]
      [--rss] [--timeout S] [--keep] [--json FILE]

--rss runs both children under /usr/bin/time -v and reports their peak resident set size.
The full-size graphs (scripts/export_sd15.py without --small) go through the same harness:
  .venv/bin/python tests/sd15_tests.py --manifest build/sd15_full/manifest.json --rss
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
from cli_common import bitwise_diff, local_twin, off_device  # noqa: E402
import metrics  # noqa: E402
import sd15_data  # noqa: E402


def sanitize(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


# ----------------------------------------------------------------------------- ort child

def ort_child(argv):
    """`--ort-child MODEL OUT_DIR THREADS NAME=FILE...`: run onnxruntime, save outputs, print timings."""
    import onnxruntime as ort
    model, out_dir, threads = argv[0], argv[1], int(argv[2])
    feeds = {}
    for item in argv[3:]:
        name, _, path = item.partition("=")
        feeds[name] = np.load(path)
    t0 = time.perf_counter()
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    t1 = time.perf_counter()
    names = [o.name for o in sess.get_outputs()]
    outs = sess.run(names, feeds)
    t2 = time.perf_counter()
    os.makedirs(out_dir, exist_ok=True)
    for name, val in zip(names, outs):
        np.save(os.path.join(out_dir, sanitize(name) + ".npy"), val)
    print(json.dumps({"session_ms": (t1 - t0) * 1e3, "run_ms": (t2 - t1) * 1e3}))
    return 0


# ----------------------------------------------------------------------------- harness

def compare(ref, got):
    """(max abs err, rel err, problem or None)"""
    if got.shape != ref.shape:
        return None, None, f"shape {list(got.shape)} != ref {list(ref.shape)}"
    e = metrics.errors(ref, got)
    return e.abs, e.rel, ("non-finite output" if e.nan_bad or e.inf_bad else None)


def run_child(cmd, timeout, rss):
    """Run cmd -> (rc, log, wall seconds, peak RSS in MiB or None)."""
    full = (["/usr/bin/time", "-v"] + cmd) if rss else cmd
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", time.perf_counter() - t0, None
    wall = time.perf_counter() - t0
    peak = None
    if rss:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
        peak = int(m.group(1)) / 1024 if m else None
        err = "\n".join(l for l in err.splitlines() if not l.startswith("\t"))  # drop time -v report
        err = err.replace("Command exited with non-zero status", "exit status")
    return rc, out + err, wall, peak


def check_outputs(entry, manifest_dir, ci, out_dir):
    rows = []
    for name, rel_path in entry["refs"][ci].items():
        ref = np.load(os.path.join(manifest_dir, rel_path))
        path = os.path.join(out_dir, sanitize(name) + ".npy")
        if not os.path.exists(path):
            rows.append((name, None, None, "missing output"))
            continue
        err, rel, why = compare(ref, np.load(path))
        rows.append((name, err, rel, why))
    return rows


def run_case(args, manifest, manifest_dir, entry, ci, case, work):
    prefix = manifest["prefix"]
    feeds = sd15_data.make_inputs(f"{prefix}/{entry['name']}", entry["inputs"], case, ci)
    case_dir = os.path.join(work, f"{entry['name']}_{ci}")
    os.makedirs(case_dir, exist_ok=True)
    inputs = []
    for name, arr in feeds.items():
        p = os.path.join(case_dir, sanitize(name) + ".npy")
        np.save(p, arr)
        inputs.append((name, p))
    model = os.path.join(manifest_dir, entry["file"])
    result = {"part": entry["name"], "case": ci,
              "shapes": " ".join("x".join(map(str, case[i["name"]])) for i in entry["inputs"]), "runs": {}}

    # ours
    out_dir = os.path.join(case_dir, "ours")
    stats = os.path.join(case_dir, "stats.json")
    cmd = [args.cli, "run", model] + [a for n, p in inputs for a in ("--input", f"{n}={p}")]
    cmd += ["--output-dir", out_dir, "--threads", str(args.threads), "--stats", stats]
    if args.device:
        cmd += ["--device", args.device]
    if args.rpc:
        cmd += ["--rpc", args.rpc]
    if args.precision:
        cmd += ["--precision", args.precision]
    rc, log, wall, peak = run_child(cmd, args.timeout, args.rss)
    run = {"wall_s": wall, "rss_mib": peak, "rc": rc}
    if rc == 0 and os.path.exists(stats):
        with open(stats) as f:
            st = json.load(f)
        run["compute_s"] = st.get("compute_ms", 0) / 1e3
        run["build_s"] = st.get("build_ms", 0) / 1e3
        run["stats"] = st
    run["outputs"] = check_outputs(entry, manifest_dir, ci, out_dir) if rc == 0 else []
    run["error"] = None if rc == 0 else f"exit {rc}: " + " | ".join(log.strip().splitlines()[-3:])[-400:]
    if rc == 0 and args.device:  # every float op on the device: no CPU fallback
        run["error"] = off_device(run.get("stats", {}), args.device)
    if rc == 0 and args.rpc and not run["error"]:  # the remote device computes what the same graph gives here
        local = os.path.join(case_dir, "local")
        lrc, llog, _, _ = run_child(local_twin(cmd, local), args.timeout, False)
        run["error"] = f"local run: exit {lrc}" if lrc else bitwise_diff(out_dir, local)
    if rc == 0 and run.get("stats", {}).get("unread_weight_bytes") and not run["error"]:  # one conv plan
        run["error"] = f"{run['stats']['unread_weight_bytes']} bytes of weight forms no kernel reads"

    if args.bench and rc == 0:  # `onnx2ggml bench` on the same inputs: median of its runs after warm-up
        bcmd = [args.cli, "bench", model] + [a for n, p in inputs for a in ("--input", f"{n}={p}")]
        bcmd += ["--threads", str(args.threads), "--runs", str(args.bench), "--warmup", "2"] + cmd[cmd.index(stats) + 1:]
        brc, blog, _, _ = run_child(bcmd, args.timeout, False)
        m = re.search(r"median_ms=([0-9.]+) min_ms=([0-9.]+)", blog)
        run["bench_ms"] = (float(m.group(1)), float(m.group(2))) if brc == 0 and m else None
    result["runs"]["onnx2ggml"] = run

    # onnxruntime, unless the manifest says why it cannot run this part
    if not args.no_ort and "ort" in entry:
        result["ort_skipped"] = entry["ort"].get("skip", "")
    if not args.no_ort and "ort" not in entry:
        out_dir = os.path.join(case_dir, "ort")
        cmd = [sys.executable, os.path.abspath(__file__), "--ort-child", model, out_dir, str(args.threads)]
        cmd += [f"{n}={p}" for n, p in inputs]
        rc, log, wall, peak = run_child(cmd, args.timeout, args.rss)
        run = {"wall_s": wall, "rss_mib": peak, "rc": rc}
        if rc == 0:
            timing = json.loads(log.strip().splitlines()[0])
            run["compute_s"] = timing["run_ms"] / 1e3
            run["build_s"] = timing["session_ms"] / 1e3
        run["outputs"] = check_outputs(entry, manifest_dir, ci, out_dir) if rc == 0 else []
        run["error"] = None if rc == 0 else f"exit {rc}: " + " | ".join(log.strip().splitlines()[-3:])[-400:]
        result["runs"]["onnxruntime"] = run
    return result


def fmt(x, spec=".2e"):
    return "-" if x is None else format(x, spec)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--ort-child":
        return ort_child(argv[1:])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=os.path.join(HERE, "models", "sd15_small", "manifest.json"))
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default=None,
                    help="run on this ggml device (e.g. Vulkan0) and fail any part with ggml nodes computed elsewhere")
    ap.add_argument("--rpc", default=None, metavar="HOST:PORT",
                    help="ggml RPC servers (with --device RPC0): each run must also equal the same graph run on the "
                         "local CPU (--portable) bit for bit")
    ap.add_argument("--precision", choices=["exact", "fast"], default=None, help="onnx2ggml's --precision")
    ap.add_argument("--bench", type=int, default=0, metavar="N",
                    help="also time onnx2ggml with `bench --runs N` on each case's inputs (median and min ms)")
    ap.add_argument("--filter", default=None, help="regex on part name")
    ap.add_argument("--tol", type=float, default=None, help="override the manifest's rel tolerance")
    ap.add_argument("--no-ort", action="store_true", help="skip onnxruntime")
    ap.add_argument("--rss", action="store_true", help="peak RSS of each run via /usr/bin/time -v")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir with inputs and outputs")
    ap.add_argument("--json", default=None, help="write all results to this file")
    ap.add_argument("--require-op", action="append", default=[], metavar="OP",
                    help="fail unless some case's ggml graph holds this op (repeatable)")
    args = ap.parse_args(argv)

    args.cli = os.path.abspath(args.cli)
    if not os.access(args.cli, os.X_OK):
        print(f"error: CLI not found or not executable: {args.cli}", file=sys.stderr)
        return 2
    if args.rss and not os.access("/usr/bin/time", os.X_OK):
        print("error: --rss needs /usr/bin/time (apt-get install time)", file=sys.stderr)
        return 2
    with open(args.manifest) as f:
        manifest = json.load(f)
    manifest_dir = os.path.dirname(os.path.abspath(args.manifest))
    entries = [e for e in manifest["parts"] if not args.filter or re.search(args.filter, e["name"])]
    if not entries:
        print("no parts selected", file=sys.stderr)
        return 2

    t_start = time.perf_counter()
    work = tempfile.mkdtemp(prefix="onnx2ggml_sd15_")
    results, rows = [], []
    try:
        for entry in entries:
            tol = args.tol if args.tol is not None else entry.get("tolerance", {}).get("rel", 1e-4)
            if len(entry.get("refs", [])) != len(entry["cases"]):
                print(f"error: {entry['name']}: manifest has no reference outputs (exported with --no-refs?)",
                      file=sys.stderr)
                return 2
            for ci, case in enumerate(entry["cases"]):
                res = run_case(args, manifest, manifest_dir, entry, ci, case, work)
                results.append(res)
                if "ort_skipped" in res:
                    print(f"  skip {entry['name']} [{res['shapes']}] onnxruntime: {res['ort_skipped']}")
                for runtime, run in res["runs"].items():
                    ok_run = run["error"] is None
                    if not ok_run:
                        rows.append((entry["name"], res["shapes"], runtime, "-", None, None, tol, False, run))
                    for name, err, rel, why in run["outputs"]:
                        ok = why is None and rel is not None and rel <= tol
                        rows.append((entry["name"], res["shapes"], runtime, name, err, rel, tol, ok, run))
                    for r in rows[-max(1, len(run["outputs"])):]:
                        timing = f"{run['wall_s']:.2f}s"
                        if run.get("compute_s") is not None:
                            timing += f", compute {run['compute_s']:.2f}s"
                        if run.get("bench_ms"):
                            timing += ", bench median {:.1f} ms, min {:.1f} ms".format(*run["bench_ms"])
                        if run["rss_mib"] is not None:
                            timing += f", peak RSS {run['rss_mib']:.0f} MiB"
                        note = run["error"] or ""
                        print(f"  {'ok  ' if r[7] else 'FAIL'} {r[0]} [{r[1]}] {r[2]} {r[3]}: "
                              f"max abs {fmt(r[4])} rel {fmt(r[5])} ({timing}) {note}", flush=True)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    hdr = ("part", "inputs", "runtime", "output", "max_abs_err", "rel_err", "tol", "result",
           "wall_s", "compute_s", "rss_MiB", "note")
    table = [(r[0], r[1], r[2], r[3], fmt(r[4]), fmt(r[5]), f"{r[6]:.0e}", "PASS" if r[7] else "FAIL",
              f"{r[8]['wall_s']:.2f}", fmt(r[8].get("compute_s"), ".2f"), fmt(r[8]["rss_mib"], ".0f"),
              (r[8]["error"] or "")[:200])
             for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(hdr, *table)]
    widths[-1] = 0
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    print()
    print(line(hdr))
    print(line(["-" * w for w in widths[:-1]] + ["----"]))
    for t in table:
        print(line(t))
    failed = sum(1 for r in rows if not r[7])
    print(f"\n{len(rows) - failed}/{len(rows)} passed ({time.perf_counter() - t_start:.1f}s, "
          f"{args.threads} threads)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    for op in args.require_op:  # the device's plan: e.g. Vulkan's direct convolutions at the larger shapes
        used = sum(run.get("stats", {}).get("ggml_ops", {}).get(op, 0) for r in results for run in r["runs"].values())
        print(f"{'ok  ' if used else 'FAIL'} {op}: {used} ggml nodes over all cases (--require-op)")
        failed += 0 if used else 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
