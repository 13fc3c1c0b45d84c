"""Shared helpers for model fixtures (no torch needed).

* externalize_initializers(): move float initializers of a model to one external data
  file (used by scripts/export_models.py; the data file itself is never committed).
* regenerate_external_data(): rebuild that data file deterministically from seeds:
  one numpy RNG per initializer, seeded from a hash of its name, values scaled by the
  role the tensor plays in the graph (conv/matmul weight, bias, BatchNormalization
  parameter, ...) so activations stay in a sane range.
* make_inputs(): seeded random inputs for a manifest entry and shape case.
"""
import hashlib
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto

DATA_ALIGN = 64
BASE_SEED = "onnx2ggml-fixture-v1"  # bump to change all generated data
FLOAT_TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16,
               TensorProto.DOUBLE: np.float64}


def name_seed(name: str, salt: str = BASE_SEED) -> int:
    """Stable 64-bit seed from a string (independent of PYTHONHASHSEED and platform)."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{name}".encode()).digest()[:8], "little")


# ----------------------------------------------------------------------------- externalize

def externalize_initializers(model: onnx.ModelProto, location: str) -> int:
    """Mark every floating-point initializer as external data in `location`.

    Offsets are assigned in initializer order, each aligned to DATA_ALIGN bytes. Integer
    initializers (shapes, indices) stay embedded because they cannot be regenerated
    randomly. The raw bytes are dropped: the graph alone is what gets committed.
    Returns the size the data file will have.
    """
    offset = 0
    for init in model.graph.initializer:
        if init.data_type not in FLOAT_TYPES:
            continue
        nbytes = int(np.prod(init.dims, dtype=np.int64)) * np.dtype(FLOAT_TYPES[init.data_type]).itemsize
        offset = (offset + DATA_ALIGN - 1) // DATA_ALIGN * DATA_ALIGN
        init.ClearField("raw_data")
        init.ClearField("float_data")
        init.ClearField("double_data")
        init.ClearField("int32_data")
        del init.external_data[:]
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(nbytes))):
            entry = init.external_data.add()
            entry.key, entry.value = key, value
        init.data_location = TensorProto.EXTERNAL
        offset += nbytes
    return offset


# ----------------------------------------------------------------------------- regenerate

def _consumers(graph: onnx.GraphProto):
    """name -> list of (node, input index), looking through Identity nodes."""
    uses = {}
    for node in graph.node:
        for idx, name in enumerate(node.input):
            if name:
                uses.setdefault(name, []).append((node, idx))

    def resolve(name, depth=0):
        out = []
        for node, idx in uses.get(name, []):
            if node.op_type == "Identity" and depth < 8:
                out.extend(resolve(node.output[0], depth + 1))
            else:
                out.append((node, idx))
        return out

    return resolve


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _fan_in_of_weight(node, idx, shape):
    """fan_in of the weight tensor `shape` used as input `idx` of `node`, or None."""
    op = node.op_type
    if op in ("Conv", "ConvTranspose") and idx == 1 and len(shape) >= 3:
        if op == "Conv":
            return int(np.prod(shape[1:]))
        return int(shape[0] * np.prod(shape[2:])) // max(1, _attr(node, "group", 1))
    if op == "Gemm" and idx in (0, 1) and len(shape) == 2:
        trans = _attr(node, "transB" if idx == 1 else "transA", 0)
        if idx == 1:
            return shape[1] if trans else shape[0]
        return shape[0] if trans else shape[1]
    if op == "MatMul" and len(shape) >= 2:
        return shape[-2] if idx == 1 else shape[-1]
    return None


def _generate(name, shape, dtype, graph_consumers):
    rng = np.random.default_rng(name_seed(name))
    shape = tuple(int(d) for d in shape)
    uses = graph_consumers(name)
    node, idx = uses[0] if uses else (None, -1)
    op = node.op_type if node is not None else ""

    def uni(lo, hi):
        return rng.uniform(lo, hi, size=shape)

    fan_in = _fan_in_of_weight(node, idx, shape) if node is not None else None
    if fan_in:
        if op in ("Conv", "ConvTranspose"):
            vals = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)  # kaiming normal (ReLU gain)
            if op == "Conv" and _attr(node, "group", 1) == 1 and fan_in > 1:
                # zero-sum filters: after ReLUs the activations have a positive mean, which
                # random filters would turn into an input-independent offset that grows with
                # depth and drowns the input's influence on the output
                flat = vals.reshape(shape[0], -1)
                flat -= flat.mean(axis=1, keepdims=True)
                vals = flat.reshape(shape) * np.sqrt(fan_in / (fan_in - 1))
        else:
            bound = 1.0 / np.sqrt(fan_in)
            vals = uni(-bound, bound)
    elif op == "BatchNormalization":
        # 1 scale, 2 bias, 3 running mean, 4 running var (must be positive)
        vals = {1: lambda: uni(0.6, 1.4), 2: lambda: uni(-0.2, 0.2),
                3: lambda: uni(-0.2, 0.2), 4: lambda: uni(0.5, 1.5)}.get(idx, lambda: uni(-0.1, 0.1))()
    elif op in ("InstanceNormalization", "LayerNormalization", "GroupNormalization"):
        vals = uni(0.6, 1.4) if idx == 1 else uni(-0.2, 0.2)
    elif op in ("Conv", "ConvTranspose", "Gemm") and idx == 2:
        vals = uni(-0.1, 0.1)
    elif op in ("Sqrt", "Log", "Div") and len(shape) <= 1:
        vals = uni(0.5, 1.5)
    else:
        vals = uni(-0.1, 0.1)
    return np.ascontiguousarray(vals.astype(dtype))


def regenerate_external_data(model_path: str, out_dir: str) -> str:
    """Copy `model_path` into `out_dir` and write its external data file(s) there.

    Returns the path of the copied model. Files are rewritten only when missing or stale
    (a stamp file records the hash of the graph they were generated for).
    """
    os.makedirs(out_dir, exist_ok=True)
    with open(model_path, "rb") as f:
        graph_bytes = f.read()
    with open(os.path.abspath(__file__), "rb") as f:  # generator code is part of the stamp
        stamp_val = hashlib.sha256(graph_bytes + f.read()).hexdigest()
    dst_model = os.path.join(out_dir, os.path.basename(model_path))
    stamp = dst_model + ".stamp"
    model = onnx.load_from_string(graph_bytes)  # never resolves external data

    files = {}
    for init in model.graph.initializer:
        if init.data_location != TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in init.external_data}
        files.setdefault(info["location"], []).append((init, int(info.get("offset", 0)), info.get("length")))

    if os.path.exists(stamp) and os.path.exists(dst_model):
        with open(stamp) as f:
            fresh = f.read().strip() == stamp_val
        if fresh and all(os.path.exists(os.path.join(out_dir, loc)) for loc in files):
            return dst_model

    consumers = _consumers(model.graph)
    for location, entries in files.items():
        if os.path.isabs(location) or ".." in location.replace("\\", "/").split("/"):
            raise ValueError(f"refusing external data location {location!r}")
        data_path = os.path.join(out_dir, location)
        os.makedirs(os.path.dirname(data_path) or out_dir, exist_ok=True)
        with open(data_path + ".tmp", "wb") as f:
            for init, offset, length in sorted(entries, key=lambda e: e[1]):
                if init.data_type not in FLOAT_TYPES:
                    raise ValueError(f"{init.name}: cannot regenerate non-float external tensor")
                arr = _generate(init.name, init.dims, FLOAT_TYPES[init.data_type], consumers)
                data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
                if length is not None and int(length) != len(data):
                    raise ValueError(f"{init.name}: length {length} != {len(data)}")
                if f.tell() > offset:
                    raise ValueError(f"{init.name}: overlapping external data")
                f.write(b"\0" * (offset - f.tell()))
                f.write(data)
        os.replace(data_path + ".tmp", data_path)
    shutil.copyfile(model_path, dst_model)
    with open(stamp, "w") as f:
        f.write(stamp_val + "\n")
    return dst_model


# ----------------------------------------------------------------------------- inputs

NP_DTYPES = {"float32": np.float32, "float16": np.float16, "int64": np.int64, "int32": np.int32,
             "bool": np.bool_}


def make_inputs(entry: dict, case: dict, case_index: int) -> dict:
    """Seeded inputs for manifest `entry` and one shape `case` {input name: shape}."""
    feeds = {}
    for spec in entry["inputs"]:
        name = spec["name"]
        shape = tuple(case[name])
        dtype = NP_DTYPES[spec["dtype"]]
        rng = np.random.default_rng(name_seed(f"{entry['name']}/{name}/{case_index}", "inputs"))
        if np.issubdtype(dtype, np.integer):
            lo, hi = spec.get("range", [0, 100])
            arr = rng.integers(lo, hi, size=shape, dtype=np.int64)
            # optional: force the last position of the last axis to a given value (e.g. an EOS id)
            if "last_value" in spec and arr.size:
                arr[..., -1] = spec["last_value"]
            arr = arr.astype(dtype)
        elif dtype == np.bool_:
            arr = rng.random(size=shape) < 0.5
        else:
            dist = spec.get("distribution", "normal")
            if dist == "uniform":
                lo, hi = spec.get("range", [-1.0, 1.0])
                arr = rng.uniform(lo, hi, size=shape)
            else:
                arr = rng.standard_normal(size=shape) * spec.get("std", 1.0)
            arr = arr.astype(dtype)
        feeds[name] = arr
    return feeds
