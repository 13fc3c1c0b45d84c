#!/usr/bin/env python3
"""Stand-in for the onnx2ggml CLI that runs models with onnxruntime.

It speaks the same command line and .npy file interface as
`onnx2ggml run` / `onnx2ggml info`, so the test harnesses can be validated
(`--runner ort`) before the C++ binary exists.  It is not a reference
implementation of the contract's error messages; it only approximates them.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto  # noqa: E402

from cli_common import ERROR_PREFIX, NPY_DTYPES, sanitize_name, to_npy  # noqa: E402


class UserError(Exception):
    pass


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are real inputs (old IR lists initializers too)."""
    inits = {init.name for init in model.graph.initializer}
    return [vi for vi in model.graph.input if vi.name not in inits]


def load_model(path: str) -> onnx.ModelProto:
    if not os.path.exists(path):
        raise UserError(f"cannot open model file '{path}': no such file")
    try:
        # External data is left alone: onnxruntime resolves (and vets) it.
        return onnx.load(path, load_external_data=False)
    except Exception as exc:  # protobuf raises several types
        raise UserError(f"failed to parse model '{path}': {exc}") from exc


def parse_inputs(specs: list[str], model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """--input NAME=FILE or positional --input FILE, as the CLI accepts."""
    declared = graph_inputs(model)
    names = {vi.name: vi for vi in declared}
    feeds: dict[str, np.ndarray] = {}
    positional = 0
    for spec in specs:
        name, sep, path = spec.rpartition("=")
        if not sep or name not in names:
            if positional >= len(declared):
                raise UserError(f"too many inputs: model has {len(declared)}")
            name, path = declared[positional].name, spec
            positional += 1
        vi = names[name]
        try:
            arr = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise UserError(f"input '{name}': cannot read '{path}': {exc}") from exc
        elem = vi.type.tensor_type.elem_type
        if elem == TensorProto.BFLOAT16:
            raise UserError(f"input '{name}': bfloat16 not supported by the ort stand-in")
        if elem in NPY_DTYPES and arr.dtype != NPY_DTYPES[elem]:
            raise UserError(
                f"input '{name}': dtype {arr.dtype} does not match model type "
                f"{TensorProto.DataType.Name(elem)}"
            )
        feeds[name] = arr
    return feeds


def cmd_run(args: argparse.Namespace) -> None:
    import onnxruntime as ort

    model = load_model(args.model)
    feeds = parse_inputs(args.input or [], model)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads or 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 4
    try:
        sess = ort.InferenceSession(args.model, opts, providers=["CPUExecutionProvider"])
        results = sess.run(None, feeds)
    except Exception as exc:
        raise UserError(" ".join(str(exc).split())) from exc
    os.makedirs(args.output_dir, exist_ok=True)
    for vi, value in zip(model.graph.output, results):
        if not isinstance(value, np.ndarray) or value.dtype == object:
            raise UserError(f"output '{vi.name}': not a numeric tensor")
        elem = vi.type.tensor_type.elem_type
        arr = to_npy(value, elem) if elem in NPY_DTYPES else value
        np.save(os.path.join(args.output_dir, sanitize_name(vi.name)), arr)
    if args.stats:
        n = len(model.graph.node)
        stats = {"nodes": n, "ggml_nodes": n, "host_nodes": 0, "host_float_nodes": 0}
        with open(args.stats, "w") as f:
            json.dump(stats, f)


def cmd_info(args: argparse.Namespace) -> None:
    model = load_model(args.model)
    for vi in graph_inputs(model):
        print(f"input: {vi.name}")
    for vi in model.graph.output:
        print(f"output: {vi.name}")
    for imp in model.opset_import:
        print(f"opset: {imp.domain or 'ai.onnx'} {imp.version}")
    counts = collections.Counter(node.op_type for node in model.graph.node)
    for op, n in sorted(counts.items()):
        print(f"op: {op} {n}")
    unknown = [
        f"{node.op_type} ({node.name})"
        for node in model.graph.node
        if not onnx.defs.has(node.op_type, node.domain)
    ]
    print("unsupported: " + ", ".join(unknown))


def main() -> int:
    parser = argparse.ArgumentParser(prog="ort_runner")
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("model")
    run.add_argument("--input", action="append")
    run.add_argument("--output-dir", required=True)
    run.add_argument("--threads", type=int)
    run.add_argument("--stats")
    info = sub.add_parser("info")
    info.add_argument("model")
    args = parser.parse_args()
    try:
        cmd_run(args) if args.cmd == "run" else cmd_info(args)
    except UserError as exc:
        print(f"{ERROR_PREFIX} {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
