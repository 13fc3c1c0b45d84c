#!/usr/bin/env python3
"""Malformed and hostile inputs must give a clean error, never a crash.

Every failing case must exit non-zero with an `onnx2ggml: error:` message
that names the problem, and must not crash (no signal, no sanitizer
report).  Cases:
  (a) a valid model truncated at several byte offsets
  (b) random bytes            (c) an empty file        (d) a missing file
  (e) an input of the wrong shape (the message must name the input)
  (f) an input of the wrong dtype (the message must name the input)
  (g) two unknown ops: the message names both op types and node names, and
      `info` lists both after `unsupported:`
  (h) external data whose location escapes the model folder, or is absolute
  (i) an output named `../../evil` lands in --output-dir as `.._.._evil.npy`
      and nothing is written outside it
  (j)-(m) size limits and bad external data: see malformed_limits.py
plus positive controls (the valid model runs; legitimate external data
loads) so that a CLI rejecting everything cannot pass.

Usage: tests/malformed_tests.py [--cli build/onnx2ggml] [--runner ort] [-v]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import metrics  # noqa: E402
from malformed_limits import run_limit_cases  # noqa: E402
from cli_common import DEFAULT_CLI, ERROR_PREFIX, CliResult, cli_prefix, one_line, run_cli, runner_prefix  # noqa: E402

INPUT_NAME = "pixel_values"  # distinctive, so "the message names the input" is checkable
INPUT_SHAPE = (1, 3, 4, 4)
TIMEOUT = 30.0


class CaseFailed(Exception):
    pass


# --------------------------------------------------------------------------
# Models


def make_model(graph: onnx.GraphProto) -> onnx.ModelProto:
    # IR 9 / opset 17: what exporters commonly produce (and onnxruntime reads).
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def weights() -> np.ndarray:
    return np.arange(np.prod(INPUT_SHAPE[1:]), dtype=np.float32).reshape(INPUT_SHAPE[1:]) / 10


def valid_model(weight_tensor: onnx.TensorProto | None = None) -> onnx.ModelProto:
    """x -> Relu -> Mul(W) -> y, with an initializer so that truncations can
    land inside tensor data as well as inside the graph structure."""
    w = weight_tensor if weight_tensor is not None else numpy_helper.from_array(weights(), "W")
    nodes = [
        helper.make_node("Relu", [INPUT_NAME], ["r"], name="relu_node"),
        helper.make_node("Mul", ["r", "W"], ["logits"], name="mul_node"),
    ]
    graph = helper.make_graph(
        nodes, "valid",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, INPUT_SHAPE)],
        [w],
    )
    return make_model(graph)


def expected_output(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) * weights()


def unknown_ops_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("FooBar", [INPUT_NAME], ["t"], name="foo_node"),
        helper.make_node("Relu", ["t"], ["u"], name="relu_node"),
        helper.make_node("Quux", ["u"], ["logits"], name="quux_node"),
    ]
    graph = helper.make_graph(
        nodes, "unknown_ops",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, INPUT_SHAPE)],
    )
    return make_model(graph)


def external_weight(location: str) -> onnx.TensorProto:
    """W stored outside the model file at `location`."""
    t = onnx.TensorProto(name="W", data_type=TensorProto.FLOAT, dims=list(INPUT_SHAPE[1:]))
    t.data_location = TensorProto.EXTERNAL
    nbytes = weights().nbytes
    for key, value in (("location", location), ("offset", "0"), ("length", str(nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def output_name_model(names: list[str]) -> onnx.ModelProto:
    """Identity from the input to each of the given output names."""
    nodes = [helper.make_node("Identity", [INPUT_NAME], [n], name=f"id{k}") for k, n in enumerate(names)]
    graph = helper.make_graph(
        nodes, "names",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, INPUT_SHAPE) for n in names],
    )
    return make_model(graph)


def model_parses(data: bytes) -> bool:
    try:
        onnx.ModelProto().ParseFromString(data)
        return True
    except Exception:  # protobuf's DecodeError and friends
        return False


# --------------------------------------------------------------------------
# Checks


class Harness:
    def __init__(self, prefix: list[str], work: str, verbose: bool):
        self.prefix, self.work, self.verbose = prefix, work, verbose
        self.results: list[tuple[str, bool, str]] = []
        self.input_npy = self.save_npy("input.npy", np.random.default_rng(0).standard_normal(INPUT_SHAPE).astype(np.float32))

    def path(self, *parts: str) -> str:
        p = os.path.join(self.work, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def save_npy(self, name: str, arr: np.ndarray) -> str:
        p = self.path("inputs", name)
        np.save(p, arr)
        return p

    def write(self, rel: str, data: bytes) -> str:
        p = self.path(rel)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def run(self, model: str, inputs: list[str] | None = None, out: str | None = None) -> CliResult:
        args = ["run", model]
        for spec in inputs if inputs is not None else [f"{INPUT_NAME}={self.input_npy}"]:
            args += ["--input", spec]
        args += ["--output-dir", out or tempfile.mkdtemp(dir=self.work, prefix="out_")]
        return run_cli(self.prefix, args, TIMEOUT)

    def info(self, model: str) -> CliResult:
        return run_cli(self.prefix, ["info", model], TIMEOUT)

    def case(self, name: str, fn, *args) -> None:
        try:
            note = fn(*args) or ""
            self.results.append((name, True, note))
            print(f"PASS {name}" + (f"  ({note})" if note and self.verbose else ""), flush=True)
        except CaseFailed as exc:
            self.results.append((name, False, str(exc)))
            print(f"FAIL {name}: {exc}", flush=True)


def no_crash(res: CliResult) -> None:
    if res.timed_out:
        raise CaseFailed(f"timed out after {TIMEOUT:g} s")
    crash = res.crash()
    if crash:
        raise CaseFailed(f"CRASH ({crash}); stderr: {one_line(res.stderr, 300)}")


def expect_error(res: CliResult, *must_mention: str, any_of: tuple[str, ...] = ()) -> str:
    """The run failed cleanly with an error line mentioning every string in
    must_mention (case-insensitive) and, if given, at least one of any_of.
    Returns the error line."""
    no_crash(res)
    if res.returncode == 0:
        raise CaseFailed("exit code 0, expected an error")
    line = next((l for l in res.stderr.splitlines() if l.startswith(ERROR_PREFIX)), None)
    if line is None:
        raise CaseFailed(f"exit {res.returncode} but no '{ERROR_PREFIX}' line; stderr: {one_line(res.stderr, 300)}")
    # The problem may be spelled out over the error line and what follows it.
    text = res.stderr[res.stderr.index(line):].lower()
    missing = [m for m in must_mention if m.lower() not in text]
    if missing:
        raise CaseFailed(f"message does not mention {missing}: {one_line(line, 300)}")
    if any_of and not any(a.lower() in text for a in any_of):
        raise CaseFailed(f"message mentions none of {list(any_of)}: {one_line(line, 300)}")
    return one_line(line, 200)


def expect_success(res: CliResult) -> None:
    no_crash(res)
    if res.returncode != 0:
        raise CaseFailed(f"exit {res.returncode}: {one_line(res.error_line(), 300)}")


def check_output(out_dir: str, file_name: str, want: np.ndarray) -> None:
    p = os.path.join(out_dir, file_name)
    if not os.path.exists(p):
        raise CaseFailed(f"no output file {file_name} in --output-dir (found: {sorted(os.listdir(out_dir))})")
    got = np.load(p, allow_pickle=False)
    if got.shape != want.shape or not metrics.close(want, got, 1e-5, 1e-6).all():
        raise CaseFailed(f"{file_name}: wrong values")


# --------------------------------------------------------------------------
# The cases


def run_all(h: Harness) -> None:
    model_bytes = valid_model().SerializeToString()
    good = h.write("valid/model.onnx", model_bytes)
    x = np.load(h.input_npy)

    def control_valid():
        out = tempfile.mkdtemp(dir=h.work, prefix="out_")
        expect_success(h.run(good, out=out))
        check_output(out, "logits.npy", expected_output(x))

    h.case("control: valid model runs", control_valid)

    # (a) truncations.  Offsets where protobuf itself still parses (a cut on
    # a field boundary) are skipped: they are not malformed at byte level.
    n = len(model_bytes)
    offsets = sorted({1, 2, 5, 10, 20, n // 4, n // 3, n // 2, 2 * n // 3, 3 * n // 4, n - 20, n - 5, n - 1})
    for off in offsets:
        data = model_bytes[:off]
        if model_parses(data):
            continue
        path = h.write(f"truncated/model_{off}.onnx", data)
        h.case(f"(a) truncated at {off}/{n} bytes: run", lambda p=path: expect_error(h.run(p)))
        h.case(f"(a) truncated at {off}/{n} bytes: info", lambda p=path: expect_error(h.info(p)))

    # (b) random bytes
    for seed, size in ((1, 1), (2, 7), (3, 100), (4, 4096), (5, 65536)):
        data = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()
        path = h.write(f"random/model_{seed}.onnx", data)
        h.case(f"(b) random bytes ({size} B): run", lambda p=path: expect_error(h.run(p)))
        h.case(f"(b) random bytes ({size} B): info", lambda p=path: expect_error(h.info(p)))

    # (c) empty file: parses as an empty ModelProto, which has no graph.
    empty = h.write("empty/model.onnx", b"")
    h.case("(c) empty file: run", lambda: expect_error(h.run(empty)))
    h.case("(c) empty file: info", lambda: expect_error(h.info(empty)))

    # (d) missing file: the message should name it.
    missing = os.path.join(h.work, "no_such_dir", "missing_model.onnx")
    h.case("(d) nonexistent file: run", lambda: expect_error(h.run(missing), "missing_model.onnx"))
    h.case("(d) nonexistent file: info", lambda: expect_error(h.info(missing), "missing_model.onnx"))

    input_cases(h, good)
    unknown_op_cases(h)
    graph_structure_cases(h)
    external_data_cases(h)
    output_dir_cases(h)
    run_limit_cases(h, good, expect_error, expect_success, valid_model, external_weight, CaseFailed)


def input_cases(h: Harness, good: str) -> None:
    rng = np.random.default_rng(1)
    bad_inputs = {
        "(e) input rank mismatch [1,3,4]": rng.standard_normal((1, 3, 4)).astype(np.float32),
        "(e) input dim mismatch [1,3,5,4]": rng.standard_normal((1, 3, 5, 4)).astype(np.float32),
        "(e) input dim mismatch [2,3,4,4]": rng.standard_normal((2, 3, 4, 4)).astype(np.float32),
        "(f) input dtype int32": rng.integers(0, 5, INPUT_SHAPE).astype(np.int32),
        "(f) input dtype float64": rng.standard_normal(INPUT_SHAPE),
        "(f) input dtype float16": rng.standard_normal(INPUT_SHAPE).astype(np.float16),
    }
    for k, (name, arr) in enumerate(bad_inputs.items()):
        npy = h.save_npy(f"bad_{k}.npy", arr)
        h.case(name, lambda p=npy: expect_error(h.run(good, [f"{INPUT_NAME}={p}"]), INPUT_NAME))
        h.case(name + " (positional --input)", lambda p=npy: expect_error(h.run(good, [p]), INPUT_NAME))
    h.case("input not given", lambda: expect_error(h.run(good, []), INPUT_NAME))
    h.case("input name not in the model",
           lambda: expect_error(h.run(good, [f"no_such_input={h.input_npy}"]), "no_such_input"))
    not_npy = h.write("inputs/not_npy.npy", b"this is not a numpy file")
    h.case("input file is not .npy", lambda: expect_error(h.run(good, [f"{INPUT_NAME}={not_npy}"]), "not_npy.npy"))
    gone = os.path.join(h.work, "inputs", "gone.npy")
    h.case("input file missing", lambda: expect_error(h.run(good, [f"{INPUT_NAME}={gone}"]), "gone.npy"))

    # A sequence-typed graph output (SplitToSequence): refused when the session opens (it crashed at run before).
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 6])
    seq = onnx.helper.make_tensor_sequence_value_info("seq", onnx.TensorProto.FLOAT, None)
    node = onnx.helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1)
    seq_model = onnx.helper.make_model(onnx.helper.make_graph([node], "seq_out", [x], [seq]),
                                       opset_imports=[onnx.helper.make_opsetid("", 17)])
    seq_path = h.write("inputs/sequence_output.onnx", seq_model.SerializeToString())
    seq_x = h.save_npy("seq_x.npy", rng.standard_normal((3, 6)).astype(np.float32))
    h.case("sequence-typed graph output", lambda: expect_error(h.run(seq_path, [f"x={seq_x}"]), "seq", "not a tensor"))


def unknown_op_cases(h: Harness) -> None:
    path = h.write("unknown/model.onnx", unknown_ops_model().SerializeToString())
    h.case("(g) two unknown ops: run names both ops and nodes",
           lambda: expect_error(h.run(path), "FooBar", "Quux", "foo_node", "quux_node"))

    def info_lists_both():
        res = h.info(path)
        expect_success(res)
        block = unsupported_block(res.stdout)
        if block is None:
            raise CaseFailed(f"no line starting 'unsupported:' in info output: {one_line(res.stdout, 300)}")
        missing = [op for op in ("FooBar", "Quux") if op not in block]
        if missing:
            raise CaseFailed(f"'unsupported:' section lacks {missing}: {one_line(block)}")
        return one_line(block)

    h.case("(g) two unknown ops: info lists both after 'unsupported:'", info_lists_both)


def graph_structure_cases(h: Harness) -> None:
    """Node order is free (sorted at load, as onnxruntime does); a true cycle or a name written twice is one line."""
    H = onnx.helper
    x = H.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = H.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)

    def graph_case(name, nodes, *mention):
        g = H.make_graph(nodes, "g", [x], [y])
        path = h.write(f"structure/{name}.onnx", make_model(g).SerializeToString())
        h.case(f"graph structure: {name}", lambda: expect_error(h.run(path), *mention))

    graph_case("cycle", [H.make_node("Relu", ["x"], ["a"], name="start"),
                         H.make_node("Add", ["a", "c"], ["b"], name="loop_add"),
                         H.make_node("Neg", ["b"], ["c"], name="loop_neg"),
                         H.make_node("Identity", ["b"], ["y"], name="end")], "cycle", "loop_")
    graph_case("node reads its own output", [H.make_node("Add", ["x", "y"], ["y"], name="self_add")],
               "cycle", "self_add")
    graph_case("value produced twice", [H.make_node("Relu", ["x"], ["y"], name="first"),
                                        H.make_node("Neg", ["x"], ["y"], name="second")],
               "produced twice", "first", "second")


def external_data_cases(h: Harness) -> None:
    # Models sit at ext/deep/<k>/model.onnx.  Decoys make the escaping
    # relative paths point at real files, so a CLI that merely fails to open
    # the file does not pass by accident: the message must say why the path
    # is refused.
    h.write("ext/etc/passwd", weights().tobytes())  # ../../etc/passwd
    h.write("ext/deep/decoy.bin", weights().tobytes())  # ../decoy.bin
    refusal_words = ("escap", "outside", "absolute", "not allowed", "not permitted", "forbidden")
    for k, (label, location) in enumerate((
        ("relative path escaping the folder", "../../etc/passwd"),
        ("relative path escaping one level", "../decoy.bin"),
        ("absolute path", "/etc/passwd"),
        ("path with .. in the middle", "sub/../../decoy.bin"),
    )):
        path = h.write(f"ext/deep/{k}/model.onnx", valid_model(external_weight(location)).SerializeToString())
        h.case(f"(h) external data, {label} ({location}): run",
               lambda p=path: expect_error(h.run(p), any_of=refusal_words))

    def control_external():
        # Legitimate external data next to the model must still work.
        h.write("ext/ok/weights.bin", weights().tobytes())
        path = h.write("ext/ok/model.onnx", valid_model(external_weight("weights.bin")).SerializeToString())
        out = tempfile.mkdtemp(dir=h.work, prefix="out_")
        expect_success(h.run(path, out=out))
        check_output(out, "logits.npy", expected_output(np.load(h.input_npy)))

    h.case("control: external data beside the model loads", control_external)


def output_dir_cases(h: Harness) -> None:
    def contained():
        # Fresh tree: root/a/b/out is the output dir; anything else that
        # appears under root was written outside it.
        root = tempfile.mkdtemp(dir=h.work, prefix="contain_")
        out = os.path.join(root, "a", "b", "out")
        os.makedirs(out)
        abs_name = os.path.join(root, "abs_evil")
        names = ["../../evil", abs_name, "ok/../../sub"]
        model = os.path.join(root, "model.onnx")
        onnx.save(output_name_model(names), model)
        before = snapshot(root)
        expect_success(h.run(model, out=out))
        x = np.load(h.input_npy)
        expected = {".._.._evil.npy", abs_name.replace("/", "_") + ".npy", "ok_.._.._sub.npy"}
        for fname in expected:
            check_output(out, fname, x)
        created = snapshot(root) - before
        outside = sorted(p for p in created if not p.startswith(os.path.relpath(out, root) + os.sep))
        if outside:
            raise CaseFailed(f"files created outside --output-dir: {outside}")
        extra = sorted(set(os.listdir(out)) - expected)
        if extra:
            raise CaseFailed(f"unexpected files in --output-dir: {extra}")

    h.case("(i) output names '../../evil', absolute, 'ok/../../sub' stay inside --output-dir", contained)


def unsupported_block(text: str) -> str | None:
    """The `unsupported:` line plus the indented lines under it (the ops
    may be listed on the line itself or one per indented line)."""
    lines = text.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("unsupported:"):
            block = [line]
            for more in lines[k + 1:]:
                if not more[:1].isspace():
                    break
                block.append(more)
            return "\n".join(block)
    return None


def snapshot(root: str) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + dirnames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=DEFAULT_CLI, help="onnx2ggml binary (default: build/onnx2ggml)")
    p.add_argument("--runner", choices=("cli", "ort"), default="cli",
                   help="'ort' uses the onnxruntime stand-in (only to check this script)")
    p.add_argument("-v", "--verbose", action="store_true", help="show the error message of passing cases")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args()
    if args.runner == "cli" and not os.access(args.cli, os.X_OK):
        sys.exit(f"CLI not found or not executable: {args.cli}")
    prefix = cli_prefix(args.cli) if args.runner == "cli" else runner_prefix(args.cli, "ort")

    work = tempfile.mkdtemp(prefix="o2g_malformed_")
    try:
        h = Harness(prefix, work, args.verbose)
        run_all(h)
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    failed = [name for name, ok, _ in h.results if not ok]
    print(f"\nmalformed tests: {len(h.results) - len(failed)}/{len(h.results)} passed")
    for name in failed:
        print(f"  failed: {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
