"""Seeded inputs for the Stable Diffusion 1.5 fixtures (no torch needed).

Shared by scripts/export_sd15.py (which feeds them to PyTorch for the stored reference
outputs) and tests/sd15_tests.py (which regenerates them for onnxruntime and onnx2ggml),
so the inputs never need to be committed.

Input specs (one per graph input, in the manifest):
  {"name", "dtype": "float32", "distribution": "normal"|"uniform", "range": [lo, hi]}
  {"name", "dtype": "int64", "distribution": "tokens", "bos": ID, "eos": ID}
  {"name", "dtype": "int64", "distribution": "padding_mask"}: 1 on a random-length prefix of each row, 0 after
The "tokens" layout mimics the SD 1.5 CLIP tokenizer: BOS at position 0, a random prompt
of random length, then EOS repeated to the end (the tokenizer pads with EOS), so the
pooled output's argmax picks the first EOS of each row.
"""
import numpy as np

import model_data

NP_DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32}


def make_inputs(entry_name: str, input_specs: list, case: dict, case_index: int) -> dict:
    """{input name: array} for shape case `case` ({input name: shape}) of fixture `entry_name`."""
    feeds = {}
    for spec in input_specs:
        name = spec["name"]
        shape = tuple(int(d) for d in case[name])
        rng = np.random.default_rng(model_data.name_seed(f"{entry_name}/{name}/{case_index}", "inputs"))
        dist = spec.get("distribution", "normal")
        dtype = NP_DTYPES[spec["dtype"]]
        if dist == "tokens":
            bos, eos = int(spec["bos"]), int(spec["eos"])
            ids = rng.integers(0, min(bos, eos), size=shape, dtype=np.int64)
            rows = ids.reshape(-1, shape[-1])
            seq = shape[-1]
            for row in rows:
                n_words = int(rng.integers(1, max(2, seq - 1)))  # prompt tokens between BOS and EOS
                row[0] = bos
                row[1 + n_words:] = eos
            arr = rows.reshape(shape)
        elif dist == "padding_mask":  # at least one key kept per row
            arr = np.zeros(shape, np.int64).reshape(-1, shape[-1])
            for row in arr:
                row[:int(rng.integers(1, shape[-1] + 1))] = 1
            arr = arr.reshape(shape)
        elif dist == "uniform":
            lo, hi = spec.get("range", [-1.0, 1.0])
            arr = rng.uniform(lo, hi, size=shape)
        else:
            arr = rng.standard_normal(size=shape) * spec.get("std", 1.0)
        feeds[name] = np.ascontiguousarray(arr.astype(dtype))
    return feeds
