#!/usr/bin/env python3
"""The small SD 1.5 parts as people download them: onnx2ggml on the files onnxruntime's own tools write.

scripts/make_flavours.py makes every flavour (Olive's and Amuse's optimizer options, NCHW GroupNorm, plain fp16,
fp16 with some ops kept in f32 between Casts; fp32 and fp16, keep_io_types both ways) into a temp dir. Each file
runs through `onnx2ggml run` on the first shape case of its part (tests/sd15_data.py inputs; float inputs cast to
float16 for -io16 files) and is compared with onnxruntime on the ORIGINAL fp32 part: rel = max abs err / max |ref|,
outputs read as float32.
  * fp32 flavours pass at rel <= 1e-4.
  * fp16 flavours pass at rel <= 3x onnxruntime's own error on the same file. Where onnxruntime's CPU provider
    cannot run that file (NhwcConv, GroupNorm, BiasSplitGelu, ... have no CPU kernel), the bar is 3x onnxruntime's
    error on the plain fp16 file of the same part and io types: the same weights, rounded by the same converter,
    so the same rounding error scale (column ort_on says which file gave it).
The committed exports of other exporters (flavours dynamo-opset18/21/23 and optimum-opset18,
tests/models/sd15_exports) and the plain fp16 flavours must also show in `info` the same fused counts (GroupNorm,
GroupNorm+SiLU, attention, GELU, LayerNorm, MatMul+bias, SiLU; fused by a pass or written as the op) as the plain
export, and each optimized fp16 flavour the same as its fp32 twin (when that flavour is made too): the fp16
converter's Casts and FLOAT16 constants must not stop a fusion.
The mmdit and t5 flavours are the families_small SD3 and Flux transformers and T5 encoder through onnxruntime's
optimizer (fp32, bar 1e-4); onnxruntime cannot run the original Flux file (Cos on double), so its reference is the
committed PyTorch output.
Then every file is `onnx2ggml compile`d (clean exit, header and weights written), and one program is built and
run (--build, default the Amuse fp16 UNet: the most contrib ops), bit-identical to `onnx2ggml run`.

Usage: .venv/bin/python tests/flavour_tests.py [--cli build/onnx2ggml] [--portable] [--device Vulkan0]
       [--threads 2] [--flavours REGEX] [--parts unet,vae_decoder,text_encoder] [--no-compile]
       [--build FLAVOUR/PART | --build none] [--keep] [--json FILE]
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
sys.path.insert(0, os.path.join(REPO, "scripts"))
import make_flavours  # noqa: E402
import sd15_data  # noqa: E402
from cli_common import off_device, sanitize_name  # noqa: E402

FP32_TOL = 1e-4
ORT_FACTOR = 3.0


def rel_err(ref, got):
    if got.shape != ref.shape:
        return None, f"shape {list(got.shape)} != ref {list(ref.shape)}"
    got = got.astype(np.float64)
    if not np.all(np.isfinite(got)):
        return None, "non-finite output"
    ref = ref.astype(np.float64)
    return float(np.max(np.abs(got - ref)) / max(float(np.max(np.abs(ref))), 1e-30)), None


def ort_run(model, feeds, threads):
    """{output name: array} or the reason onnxruntime could not run the file (first line of its error)."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(names, feeds))), None
    except Exception as e:  # noqa: BLE001 (onnxruntime raises several types; the message is what we report)
        msg = str(e).strip().splitlines()[0]
        m = re.search(r"(?:Could not find an implementation|Failed to find kernel) for (\S+?)(?:\(\d+\))? ", msg)
        return None, (f"no CPU kernel for {m.group(1)}" if m else msg[:160])


def feeds_for(model_path, feeds):
    """Float inputs cast to what the file declares (float16 for -io16 files)."""
    import onnx
    m = onnx.load(model_path, load_external_data=False)
    out = {}
    for vi in m.graph.input:
        if vi.name in feeds:
            a = feeds[vi.name]
            if a.dtype == np.float32 and vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT16:
                a = a.astype(np.float16)
            out[vi.name] = a
    return out


def run_ours(args, model, feeds, work):
    os.makedirs(work, exist_ok=True)
    cmd = [args.cli, "run", model, "--output-dir", os.path.join(work, "out"), "--threads", str(args.threads),
           "--stats", os.path.join(work, "stats.json")]
    for n, a in feeds.items():
        p = os.path.join(work, sanitize_name(n))
        np.save(p, a)
        cmd += ["--input", f"{n}={p}"]
    if args.device:
        cmd += ["--device", args.device]
    env = dict(os.environ, **({"ONNX2GGML_PORTABLE": "1"} if args.portable else {}))
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    wall = time.perf_counter() - t0
    if r.returncode:
        return None, wall, " | ".join(r.stderr.strip().splitlines()[-2:])[-400:]
    if args.device:
        with open(os.path.join(work, "stats.json")) as f:
            why = off_device(json.load(f), args.device)
        if why:
            return None, wall, why
    outs = {}
    for f in os.listdir(os.path.join(work, "out")):
        outs[f] = np.load(os.path.join(work, "out", f))
    return outs, wall, None


def check_flavour(args, fl, path, ref, base_feeds, plain_err, work):
    feeds = feeds_for(path, base_feeds)
    ours, wall, err = run_ours(args, path, feeds, os.path.join(work, "ours"))
    ort_outs, ort_why = ort_run(path, feeds, args.threads)
    row = {"flavour": fl["flavour"], "part": fl["part"], "contrib": fl["contrib"], "time_s": wall,
           "ours": None, "ort": None, "ort_on": "this file", "bar": FP32_TOL, "error": err}
    if ort_outs is not None:
        row["ort"] = max(rel_err(ref[n].astype(np.float32), o.astype(np.float32))[0] for n, o in ort_outs.items())
    else:
        row["ort_on"] = f"cannot: {ort_why}"
    if fl["fp16"]:
        if row["ort"] is None:
            row["ort_on"] += "; bar from plain " + ("fp16-io16" if fl["io16"] else "fp16-io32")
            base = plain_err.get((fl["part"], fl["io16"]))
        else:
            base = row["ort"]
            if not (fl["optimized"] or fl["exporter"]) and fl["flavour"] not in make_flavours.FP16_BLOCK:  # plain
                plain_err[(fl["part"], fl["io16"])] = base
        row["bar"] = None if base is None else ORT_FACTOR * base
    if ours is not None:
        errs = []
        for name, r in ref.items():
            got = ours.get(sanitize_name(name))
            if got is None:
                row["error"] = f"missing output {name}"
                break
            e, why = rel_err(r, got)
            if why:
                row["error"] = f"{name}: {why}"
                break
            errs.append(e)
        else:
            row["ours"] = max(errs)
    row["pass"] = (row["error"] is None and row["ours"] is not None and row["bar"] is not None
                   and row["ours"] <= row["bar"])
    if row["error"] is None and row["bar"] is None:
        row["error"] = "no onnxruntime error to set the fp16 bar"
    return row


# The fused kinds a dynamo export must show as often as our plain export: the same computation on the same
# kernels, whether a pass fused it or the exporter wrote the op (GroupNormalization-21, Gelu-20, Attention-23).
CANONICAL = {"GroupNormalization": "GroupNorm", "LayerNormalization": "LayerNorm", "RMSNormalization": "RMSNorm"}
COMPARED_KINDS = ("GroupNorm", "GroupNorm+SiLU", "Attention", "Gelu", "LayerNorm", "RMSNorm", "MatMulBias", "SiLU")


def fused_kinds(cli, model):
    """{kind: count} from `onnx2ggml info`'s fusion lines (fused by a pass or the model's own op)."""
    r = subprocess.run([cli, "info", model], capture_output=True, text=True)
    counts = {}
    for line in r.stdout.splitlines():
        if line.startswith(("fusions:", "fused-kind ops in the model:")):
            for op, n in re.findall(r" (\S+) x(\d+)", line.split(":", 1)[1]):
                kind = CANONICAL.get(op, op)
                counts[kind] = counts.get(kind, 0) + int(n)
    return {k: counts[k] for k in COMPARED_KINDS if k in counts}


def fp32_twin(fl, made, out_dir):
    """(label, file) whose fused counts an fp16 or exporter flavour must show: other exporters' files and the plain
    fp16 ones against our plain export, an optimized fp16 file against the same optimizer's fp32 file (if made);
    None for the rest. The fp16 converter's Casts and FLOAT16 constants must not stop a fusion."""
    if fl["exporter"] or (fl["fp16"] and not fl["optimized"]):
        return "plain export", os.path.join(make_flavours.SMALL, fl["part"] + ".onnx")
    if not fl["fp16"]:
        return None
    twin = re.sub(r"-fp16-io(16|32)$", "-fp32", fl["flavour"])
    for other in made:
        if other["flavour"] == twin and other["part"] == fl["part"]:
            return twin, os.path.join(out_dir, other["file"])
    return None


def check_fused_counts(cli, made, out_dir):
    """Failure lines for files whose fused counts differ from their fp32 twin's (fp32_twin)."""
    failures, cache = [], {}
    for fl in made:
        twin = fp32_twin(fl, made, out_dir)
        if twin is None:
            continue
        label, path = twin
        if path not in cache:
            cache[path] = fused_kinds(cli, path)
        want, got = cache[path], fused_kinds(cli, os.path.join(out_dir, fl["file"]))
        ok = got == want
        print(f"  {'ok  ' if ok else 'FAIL'} fused counts {fl['flavour']}/{fl['part']}: {got}"
              + ("" if ok else f" != {label} {want}"))
        if not ok:
            failures.append(f"{fl['flavour']}/{fl['part']}: fused counts {got} != {label} {want}")
    return failures


def compile_all(args, made, out_dir, feeds_of, work):
    """Compile every file; build and run one (args.build) against `onnx2ggml run`. Returns failure lines."""
    import compile_tests
    failures, programs = [], {}
    for fl in made:
        name = re.sub(r"\W", "_", f"{fl['flavour']}_{fl['part']}")
        d = os.path.join(work, "compiled", name)
        res = compile_tests.compile_model(args.cli, os.path.join(out_dir, fl["file"]), d, name)
        if res is not None:
            failures.append(f"compile {fl['flavour']}/{fl['part']}: {res[0]}: {res[1][-400:]}")
        else:
            programs[f"{fl['flavour']}/{fl['part']}"] = (name, d, fl)
    print(f"compiled {len(programs)}/{len(made)} files")
    if args.build == "none":
        return failures
    if args.build not in programs:
        return failures + [f"--build {args.build}: not among the compiled files"]
    name, d, fl = programs[args.build]
    t0 = time.perf_counter()
    driver = compile_tests.build_project(os.path.join(work, "build_one"), [(name, d)], REPO, args.threads)
    path = os.path.join(out_dir, fl["file"])
    pairs = []
    for n, a in feeds_for(path, feeds_of[fl["part"]]).items():
        p = os.path.join(d, sanitize_name(n))
        np.save(p, a)
        pairs.append((n, p))
    outc, outr = os.path.join(d, "out_c"), os.path.join(d, "out_r")
    rc = subprocess.run([driver, name, os.path.join(d, name + ".gguf"), outc] + [x for p in pairs for x in p],
                        capture_output=True, text=True)
    rr = subprocess.run([args.cli, "run", path, "--output-dir", outr, "--threads", "2"] +
                        [x for n, p in pairs for x in ("--input", f"{n}={p}")], capture_output=True, text=True)
    why = (f"compiled program failed: {rc.stderr.strip()[-300:]}" if rc.returncode else
           f"run failed: {rr.stderr.strip()[-300:]}" if rr.returncode else compile_tests.same_outputs(outc, outr))
    print(("FAIL" if why else "OK  ") + f" {args.build} compiled, built and run: "
          f"{why or 'bit-identical to onnx2ggml run'} ({time.perf_counter() - t0:.0f} s)")
    return failures + ([f"compiled {args.build}: {why}"] if why else [])


def references(sources, threads):
    """onnxruntime on each ORIGINAL fp32 part at its first shape case: ({part: {output: array}}, {part: feeds},
    {part: what the reference is}). sources: {part: fixture folder name}. Where onnxruntime's CPU provider cannot
    run an original (the Flux transformer's double-precision Cos), the committed PyTorch outputs are the reference."""
    import onnx
    refs, feeds_of, ref_on = {}, {}, {}
    for part, source in sorted(sources.items()):
        folder = os.path.join(REPO, "tests", "models", source)
        with open(os.path.join(folder, "manifest.json")) as f:
            manifest = json.load(f)
        e = next(p for p in manifest["parts"] if p["name"] == part)
        feeds_of[part] = sd15_data.make_inputs(f"{manifest.get('prefix', source)}/{part}", e["inputs"],
                                               e["cases"][0], 0)
        src = os.path.join(folder, e["file"])
        names = [o.name for o in onnx.load(src, load_external_data=False).graph.output]
        outs, why = ort_run(src, feeds_of[part], threads)
        ref_on[part] = "onnxruntime"
        if outs is None and e.get("refs"):
            outs, ref_on[part] = {n: np.load(os.path.join(folder, r)) for n, r in e["refs"][0].items()}, "PyTorch"
        if outs is None:
            raise SystemExit(f"error: onnxruntime cannot run the original {part}: {why}")
        refs[part] = {n: outs[n] for n in names}
    return refs, feeds_of, ref_on


def print_table(rows):
    hdr = ("flavour", "part", "contrib ops", "ours", "onnxruntime", "bar", "result", "time_s", "onnxruntime on")
    table = [(r["flavour"], r["part"], ",".join(r["contrib"]) or "-", fmt(r["ours"]), fmt(r["ort"]), fmt(r["bar"]),
              "PASS" if r["pass"] else "FAIL", f"{r['time_s']:.2f}", r["ort_on"]) for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(hdr, *table)]
    print()
    for cells in [hdr] + table:
        print("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip())


def fmt(x):
    return "-" if x is None else f"{x:.2e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"))
    ap.add_argument("--portable", action="store_true", help="ONNX2GGML_PORTABLE=1 (the ggml-op path of GPUs)")
    ap.add_argument("--device", default=None, help="ggml device (e.g. Vulkan0); fails a file with nodes elsewhere")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--flavours", default=None, help="regex on flavour names")
    ap.add_argument("--parts", default=",".join(make_flavours.DEFAULT_PARTS))
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--build", default="amuse-fp16-io16/unet", help="FLAVOUR/PART to build and run, or none")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    args.cli = os.path.abspath(args.cli)
    if not os.access(args.cli, os.X_OK):
        print(f"error: CLI not found: {args.cli}", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    work = tempfile.mkdtemp(prefix="onnx2ggml_flavours_")
    try:
        out_dir = os.path.join(work, "flavours")
        # The plain fp16 files first: an optimized fp16 file onnxruntime cannot run takes its bar from them.
        fp16_opt = [n for n, o, fp16, _ in make_flavours.FLAVOURS if o is not None and fp16]
        flv = args.flavours or "."
        if args.flavours and any(re.search(args.flavours, n) for n in fp16_opt):
            flv += "|^fp16-"
        make_flavours.main([out_dir, "--parts", args.parts, "--flavours", flv])
        with open(os.path.join(out_dir, "flavours.json")) as f:
            made = sorted(json.load(f), key=lambda fl: fl["optimized"])
        t_made = time.perf_counter() - t_start
        refs, feeds_of, ref_on = references({fl["part"]: fl["source"] for fl in made}, args.threads)
        rows, plain_err = [], {}
        for fl in made:
            row = check_flavour(args, fl, os.path.join(out_dir, fl["file"]), refs[fl["part"]], feeds_of[fl["part"]],
                                plain_err, os.path.join(work, "run", fl["flavour"], fl["part"]))
            if ref_on[fl["part"]] != "onnxruntime":
                row["ort_on"] += f"; reference: {ref_on[fl['part']]} on the original"
            rows.append(row)
            print(f"  {'ok  ' if row['pass'] else 'FAIL'} {row['flavour']:16s} {row['part']:13s} ours {fmt(row['ours'])}"
                  f" bar {fmt(row['bar'])} ({row['time_s']:.2f}s) {row['error'] or ''}", flush=True)
        failures = [f"{r['flavour']}/{r['part']}: {r['error'] or 'error ' + fmt(r['ours']) + ' > ' + fmt(r['bar'])}"
                    for r in rows if not r["pass"]]
        failures += check_fused_counts(args.cli, made, out_dir)
        if not args.no_compile:
            failures += compile_all(args, made, out_dir, feeds_of, work)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print_table(rows)
    print(f"\n(errors: max abs err / max |ref| against onnxruntime on the original fp32 part; flavours made in "
          f"{t_made:.1f}s; {'portable, ' if args.portable else ''}{args.device or 'CPU'}, {args.threads} threads)")
    for f in failures:
        print("FAILED:", f)
    print(f"{sum(r['pass'] for r in rows)}/{len(rows)} files passed, {len(failures)} failures "
          f"({time.perf_counter() - t_start:.0f}s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
