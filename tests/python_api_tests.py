#!/usr/bin/env python3
"""API parity of the Python package with onnxruntime: the same calls on onnxruntime.InferenceSession and
onnx2ggml.InferenceSession must give the same input/output names, shapes (symbolic dims as strings) and types, and
the same outputs (dtype, shape, values within each fixture's tolerance), for the model fixtures of
tests/models/manifest.json and tests/models/sd15_small (first shape case of each), plus a model with inputs of every
numpy dtype. Also checks run() with chosen outputs, bytes models, errors, the GIL being released, and
SessionOptions.embeddings against diffusers (tests/models/embeddings), and SessionOptions.vae_tiling against the
CLI's --vae-tiling.

Usage: tests/python_api_tests.py [--filter REGEX] [--threads N]   (needs `pip install .` in this venv)
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import metrics  # noqa: E402
import model_data  # noqa: E402
import sd15_data  # noqa: E402
import onnx2ggml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
failures: list[str] = []


def check(cond: bool, what: str) -> None:
    print(f"  {'ok  ' if cond else 'FAIL'} {what}", flush=True)
    if not cond:
        failures.append(what)


def sessions(model, threads: int):
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = threads
    ref = onnxruntime.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    o = onnx2ggml.SessionOptions()
    o.intra_op_num_threads = threads
    ours = onnx2ggml.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    return ref, ours


def same_interface(label: str, ref, ours) -> None:
    for kind in ("get_inputs", "get_outputs"):
        want = [(a.name, a.shape, a.type) for a in getattr(ref, kind)()]
        got = [(a.name, a.shape, a.type) for a in getattr(ours, kind)()]
        check(want == got, f"{label}: {kind}() {got}" + ("" if want == got else f", onnxruntime {want}"))
    check(ours.get_providers() == ref.get_providers(), f"{label}: get_providers() {ours.get_providers()}")


def same_outputs(label: str, want: list, got: list, tol: float) -> None:
    check(len(want) == len(got), f"{label}: {len(got)} outputs (onnxruntime {len(want)})")
    for i, (w, g) in enumerate(zip(want, got)):
        if not isinstance(g, np.ndarray) or g.dtype != w.dtype or g.shape != w.shape:
            check(False, f"{label}: output {i} {getattr(g, 'dtype', type(g))} {getattr(g, 'shape', '')}, "
                         f"onnxruntime {w.dtype} {w.shape}")
            continue
        e = metrics.errors(w, g) if w.dtype.kind == "f" else None
        ok = np.array_equal(w, g) if e is None else (e.rel <= tol)
        check(ok, f"{label}: output {i} {g.dtype} {list(g.shape)}" + ("" if e is None else f" rel {e.rel:.2e}"))


def fixture_cases(filt: str | None):
    """(label, model path, feeds, tolerance) for the first shape case of every fixture."""
    with open(os.path.join(HERE, "models", "manifest.json")) as f:
        for e in json.load(f)["models"]:
            path = os.path.join(HERE, "models", e["file"])
            if e.get("external_data"):
                path = model_data.regenerate_external_data(path, os.path.join(REPO, "build", "model_data", e["name"]))
            yield e["name"], path, model_data.make_inputs(e, e["cases"][0], 0), e.get("tolerance", {}).get("rel", 1e-4)
    sd_dir = os.path.join(HERE, "models", "sd15_small")
    with open(os.path.join(sd_dir, "manifest.json")) as f:
        m = json.load(f)
    for e in m["parts"]:
        feeds = sd15_data.make_inputs(e["name"], e["inputs"], e["cases"][0], 0)
        yield f"sd15_small/{e['name']}", os.path.join(sd_dir, e["file"]), feeds, e.get("tolerance", {}).get("rel", 1e-4)


def dtype_model() -> tuple[bytes, dict]:
    """Inputs of every numpy dtype onnx2ggml holds: each passes through Identity and is cast to float and doubled."""
    types = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64,
             TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
             TensorProto.INT32: np.int32, TensorProto.INT64: np.int64, TensorProto.BOOL: np.bool_}
    nodes, inputs, outputs, feeds = [], [], [], {}
    rng = np.random.default_rng(0)
    for t, dt in types.items():
        name = np.dtype(dt).name
        inputs.append(helper.make_tensor_value_info(f"x_{name}", t, ["n", 3]))
        outputs += [helper.make_tensor_value_info(f"id_{name}", t, ["n", 3]),
                    helper.make_tensor_value_info(f"f_{name}", TensorProto.FLOAT, ["n", 3])]
        nodes += [helper.make_node("Identity", [f"x_{name}"], [f"id_{name}"]),
                  helper.make_node("Cast", [f"x_{name}"], [f"c_{name}"], to=TensorProto.FLOAT),
                  helper.make_node("Add", [f"c_{name}", f"c_{name}"], [f"f_{name}"])]
        feeds[f"x_{name}"] = (rng.standard_normal((2, 3)) * 20).astype(dt)
    graph = helper.make_graph(nodes, "dtypes", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString(), feeds


def gil_released(sess, feeds) -> int:
    """Python steps another thread makes while sess.run() runs (none if run() held the GIL)."""
    steps, running = [0], [True]

    def count():
        while running[0]:
            steps[0] += 1
            time.sleep(0)

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.01)
    before = steps[0]
    t0 = time.perf_counter()
    sess.run(None, feeds)
    dt = time.perf_counter() - t0
    during = steps[0] - before
    running[0] = False
    t.join()
    return during if dt > 0.05 else -1


def same_stats(label: str, got: dict, cli: str, path: str, feeds: dict) -> None:
    """stats() after a session's first run against the CLI's --stats for the same model and inputs."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [cli, "run", path, "-o", tmp, "--stats", os.path.join(tmp, "s.json"), "--threads", "2"]
        for k, v in feeds.items():
            np.save(os.path.join(tmp, f"in{len(args)}.npy"), v)
            args += ["--input", f"{k}={os.path.join(tmp, f'in{len(args)}.npy')}"]
        r = subprocess.run(args, capture_output=True, text=True)
        check(r.returncode == 0, f"{label}: CLI run for --stats: {r.stderr.strip()[-200:]}")
        if r.returncode:
            return
        want = json.load(open(os.path.join(tmp, "s.json")))
    for key in ("nodes", "ggml_nodes", "host_nodes", "ggml_ops", "transformed_weight_bytes", "segments",
                "carried_bytes"):
        check(got.get(key) == want.get(key), f"{label}: stats()['{key}'] {str(got.get(key))[:80]} "
              f"(CLI --stats: {str(want.get(key))[:80]})")


TRUNCATE_WHILE_MAPPED = r"""
import os, sys
import numpy as np
import onnx2ggml
model, weights = sys.argv[1], sys.argv[2]
sess = onnx2ggml.InferenceSession(model)
os.truncate(weights, 0)  # the session maps w.bin: its pages are gone now
sess.run(None, {"x": np.ones((64, 64), np.float32)})
print("ran")
"""


def truncated_while_mapped(work: str) -> None:
    """A weights file truncated under an open session: one error line naming it and exit status 1 (the guard the
    package installs at import), not SIGBUS."""
    from onnx import numpy_helper
    w = numpy_helper.from_array(np.full((64, 64), 2.0, np.float32), "W")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "W"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = os.path.join(work, "model.onnx")
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin",
              size_threshold=0)
    r = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_MAPPED, path, os.path.join(work, "w.bin")],
                       capture_output=True, text=True, timeout=120)
    last = (r.stderr.strip().splitlines() or [""])[-1]  # after the device line the session prints on open
    check(r.returncode == 1 and "w.bin" in last and "shrank" in last and "ran" not in r.stdout,
          f"weights truncated while mapped: exit {r.returncode}, '{last[:160]}'")


HOSTILE_REPLAY = r"""
import glob, sys
import numpy as np
import onnx2ggml
TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(double)": np.float64,
         "tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
         "tensor(bool)": np.bool_}
refused = ran = 0
for path in sys.argv[1:]:
    try:
        s = onnx2ggml.InferenceSession(path)
        feeds = {}
        for i in s.get_inputs():
            shape = [d if isinstance(d, int) and 0 <= d <= 64 else 1 for d in (i.shape or [])]
            feeds[i.name] = np.ones(shape, TYPES.get(i.type, np.float32))
        s.run(None, feeds)
        ran += 1
        print("ran", path, flush=True)
    except onnx2ggml.Error as e:
        msg = str(e)
        assert "\n" not in msg.strip(), (path, msg)
        refused += 1
        print("refused", path, msg[:160], flush=True)
print(f"alive: {refused} refused, {ran} ran")
"""


def hostile_files_in_one_interpreter() -> None:
    """Every committed fuzz finding, plus an attribute whose type and data field disagree, through the package in one
    interpreter: each raises onnx2ggml.Error (one line) or runs, and the interpreter lives to the end."""
    from onnx import AttributeProto
    files = sorted(glob.glob(os.path.join(HERE, "fuzz", "regressions", "*", "*")))
    ln = helper.make_node("LayerNormalization", ["x", "s"], ["y"])
    eps = ln.attribute.add()
    eps.name, eps.type, eps.f = "epsilon", AttributeProto.INT, -1e30
    g = helper.make_graph([ln], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [helper.make_tensor("s", TensorProto.FLOAT, [4], [1.0] * 4)])
    with tempfile.TemporaryDirectory() as work:
        bad_eps = os.path.join(work, "layer_norm_int_typed_epsilon.onnx")
        with open(bad_eps, "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString())
        r = subprocess.run([sys.executable, "-c", HOSTILE_REPLAY, *files, bad_eps], capture_output=True, text=True,
                           timeout=600, cwd=work)
    lines = r.stdout.splitlines()
    last = lines[-1] if lines else r.stderr.strip()[-300:]
    check(r.returncode == 0 and last.startswith("alive"),
          f"{len(files) + 1} hostile files in one interpreter: exit {r.returncode}, '{last[:200]}'")
    check(any(ln.startswith("refused") and "epsilon" in ln and "typed INT" in ln for ln in lines),
          "attribute typed INT holding a FLOAT value: refused at load, naming it")


def embedding_cases() -> None:
    """SessionOptions.embeddings (strings "FILE[:TOKEN]" and (path, token) pairs) against diffusers'
    load_textual_inversion outputs in tests/models/embeddings (scripts/embedding_reference.py)."""
    d = os.path.join(REPO, "tests/models/embeddings")
    with open(os.path.join(d, "cases.json")) as f:
        doc = json.load(f)
    for m in doc["models"]:
        o = onnx2ggml.SessionOptions()
        o.intra_op_num_threads = 2
        o.embeddings = [os.path.join(d, e) if i % 2 == 0 else (os.path.join(d, e.partition(":")[0]), e.partition(":")[2])
                        for i, e in enumerate(m["embeddings"])]
        o.embedding_set = m.get("set", "")
        sess = onnx2ggml.InferenceSession(os.path.join(REPO, m["model"]), o)
        names = [x.name for x in sess.get_outputs()]
        for c in m["cases"]:
            got = dict(zip(names, sess.run(None, {"input_ids": np.array([c["ids"]], dtype=np.int64)})))
            for out, ref in c["outputs"].items():
                err = float(np.abs(got[out] - np.load(os.path.join(d, ref))).max())
                check(err <= 1e-5, f"embeddings {os.path.basename(m['model'])} {out} of {c['prompt']!r}: "
                                   f"max abs error {err:.2e} (bar 1e-5)")


def tiling_case(cli: str, threads: int) -> None:
    """SessionOptions.vae_tiling / tile_size / tile_overlap give the CLI's tiled decode, bit for bit, in its tiles."""
    vae = os.path.join(REPO, "tests/models/sd15_small/vae_decoder.onnx")
    x = np.random.default_rng(7).standard_normal((1, 4, 48, 40)).astype(np.float32)
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "x.npy"), x)
        for extra, size, overlap in [(["--vae-tiling", "--tile-size", "24"], 24, None),
                                     (["--tile-size", "16", "--tile-overlap", "2"], 16, 2)]:
            r = subprocess.run([cli, "run", vae, "--input", os.path.join(work, "x.npy"), "-o", work, "--threads",
                                str(threads), *extra], capture_output=True, text=True)
            o = onnx2ggml.SessionOptions()
            o.intra_op_num_threads = threads
            o.vae_tiling, o.tile_size, o.tile_overlap = overlap is None, size, overlap
            sess = onnx2ggml.InferenceSession(vae, o)
            got = sess.run(None, {"latent": x})[0]
            same = r.returncode == 0 and np.array_equal(got, np.load(os.path.join(work, "sample.npy")))
            check(same and sess.stats()["tiles"] > 1, f"tiling {' '.join(extra)}: {sess.stats()['tiles']} tiles, "
                                                      f"{'the CLI' if same else 'NOT the CLI'}'s bytes")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", default=None, help="regex on the fixture name")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cli", default=os.path.join(REPO, "build", "onnx2ggml"), help="for the stats() check")
    args = ap.parse_args(argv)
    print(f"onnx2ggml {onnx2ggml.__version__} from {os.path.dirname(onnx2ggml.__file__)}")

    for label, path, feeds, tol in fixture_cases(args.filter):
        if args.filter and not re.search(args.filter, label):
            continue
        t0 = time.perf_counter()
        ref, ours = sessions(path, args.threads)
        same_interface(label, ref, ours)
        want = ref.run(None, feeds)
        got = ours.run(None, feeds)
        same_outputs(label, want, got, tol)
        if "unet" in label:
            same_stats(label, ours.stats(), args.cli, path, feeds)
        names = [o.name for o in ref.get_outputs()][::-1]
        same_outputs(f"{label} run({names})", ref.run(names, feeds), ours.run(names, feeds), tol)
        if "unet" in label:
            steps = gil_released(ours, feeds)
            check(steps != 0, f"{label}: GIL released while the graph runs ({steps} Python steps meanwhile)")
        print(f"  {label}: {time.perf_counter() - t0:.1f} s", flush=True)

    if not args.filter or re.search(args.filter, "dtypes"):
        blob, feeds = dtype_model()
        ref, ours = sessions(blob, args.threads)
        same_interface("dtypes (bytes)", ref, ours)
        # ints and bools exact; float64 within 1e-6 (ggml has no f64: doubles pass through f32)
        same_outputs("dtypes (bytes)", ref.run(None, feeds), ours.run(None, feeds), 1e-6)

        bad = {"x_float32": np.zeros((2, 3), np.float32)}
        for label, call in [("missing input", lambda s: s.run(None, bad)),
                            ("unknown output", lambda s: s.run(["nope"], feeds)),
                            ("wrong dtype", lambda s: s.run(None, {**feeds, "x_float32": feeds["x_float64"]})),
                            ("bad file", lambda s: type(s)(b"not an onnx model"))]:
            try:
                call(ref)
                ref_raised = False
            except Exception:  # noqa: BLE001
                ref_raised = True
            try:
                call(ours)
                check(False, f"error on {label}: no exception (onnxruntime raised: {ref_raised})")
            except onnx2ggml.Error as e:
                msg = str(e)
                check(ref_raised and "\n" not in msg and isinstance(e, RuntimeError),
                      f"error on {label}: onnx2ggml.Error '{msg[:150]}'")

    if not args.filter or re.search(args.filter, "dtypes"):
        # max_memory reaches the C++ session: 16 bytes refuses the dtype model's graph, naming max_memory.
        opts = onnx2ggml.SessionOptions()
        opts.max_memory = 16
        try:
            onnx2ggml.InferenceSession(blob, opts).run(None, feeds)
            check(False, "SessionOptions.max_memory = 16: the run was not refused")
        except onnx2ggml.Error as e:
            check("max_memory" in str(e) and "\n" not in str(e), f"SessionOptions.max_memory = 16: '{str(e)[:150]}'")
        # device_memory reaches it too: on the CPU device the cap is refused in one line (docs/backends.md).
        opts = onnx2ggml.SessionOptions()
        opts.device = "CPU"
        opts.device_memory = 1 << 30
        try:
            onnx2ggml.InferenceSession(blob, opts)
            check(False, "SessionOptions.device_memory on the CPU: not refused")
        except onnx2ggml.Error as e:
            check("device_memory" in str(e) and "\n" not in str(e),
                  f"SessionOptions.device_memory on the CPU: '{str(e)[:150]}'")
        with tempfile.TemporaryDirectory() as work:
            truncated_while_mapped(work)
    if not args.filter or re.search(args.filter, "hostile"):
        hostile_files_in_one_interpreter()
    if not args.filter or re.search(args.filter, "embeddings"):
        embedding_cases()
    if not args.filter or re.search(args.filter, "tiling"):
        tiling_case(args.cli, args.threads)
    print()
    if failures:
        print(f"{len(failures)} checks FAILED")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
