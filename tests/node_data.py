"""The official ONNX backend node tests as files: model.onnx, test_data_set_*/{input,output}_*.pb and, where a
test sets its own tolerances, data.json.

onnx up to 1.22 shipped these files in its wheel; from 1.23 on it builds the cases in memory
(onnx.backend.test.loader.load_model_tests(kind="node")), so the first caller writes them once per onnx version
into the ignored build/ folder, in the layout the wheel had. Everything downstream (tests/node_tests.py,
tests/compile_tests.py, the CLI) keeps reading files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import onnx
from onnx import numpy_helper

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
CACHE_DIR = os.path.join(REPO_ROOT, "build", "onnx_node_data", f"onnx-{onnx.__version__}", "node")

# The backend test runner's defaults (onnx/backend/test/loader).
DEFAULT_RTOL = 1e-3
DEFAULT_ATOL = 1e-7


def node_dir() -> str:
    """The folder holding one sub-folder per node test, written on first use where onnx ships none."""
    if os.path.isdir(SHIPPED_DIR) and os.listdir(SHIPPED_DIR):
        return SHIPPED_DIR
    if not os.path.isdir(CACHE_DIR):
        materialize(CACHE_DIR)
    return CACHE_DIR


def materialize(dest: str) -> None:
    from onnx.backend.test.loader import load_model_tests

    os.makedirs(os.path.dirname(dest), exist_ok=True)
    # Written beside the destination and renamed into place: a concurrent run sees all of it or none.
    tmp = tempfile.mkdtemp(prefix=".node-", dir=os.path.dirname(dest))
    try:
        for case in load_model_tests(kind="node"):
            write_case(os.path.join(tmp, case.name), case)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process got there first
            if not os.path.isdir(dest):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_case(case_dir: str, case) -> None:
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    if (case.rtol, case.atol) != (DEFAULT_RTOL, DEFAULT_ATOL):
        with open(os.path.join(case_dir, "data.json"), "w") as f:
            json.dump({"rtol": case.rtol, "atol": case.atol}, f)
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        set_dir = os.path.join(case_dir, f"test_data_set_{i}")
        os.makedirs(set_dir)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(set_dir, f"{kind}_{j}.pb"), "wb") as f:
                    f.write(to_proto(value, infos[j]).SerializeToString())


def to_proto(value, info: onnx.ValueInfoProto):
    """A data set value as the proto onnx's own generate-data tool writes (onnx/backend/test/cmd_tools.py)."""
    kind = info.type.WhichOneof("value")
    if kind == "map_type":
        return numpy_helper.from_dict(value, info.name)
    if kind == "sequence_type":
        return numpy_helper.from_list(value, info.name)
    if kind == "optional_type":
        return numpy_helper.from_optional(value, info.name)
    if isinstance(value, onnx.TensorProto):
        return value
    return numpy_helper.from_array(value, info.name)
