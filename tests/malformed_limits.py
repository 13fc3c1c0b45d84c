"""Size limits and bad external data, for malformed_tests.py (issue 12, items 2 and 5).

Every case must end in one clean `onnx2ggml: error:` line that names the
tensor or node and gives the sizes, never a signal, a sanitizer report or a
bare std::bad_alloc:
  (j) initializers whose dims promise far more data than the file holds
      (the 80-byte 2^60-element model a fuzzer found, raw_data, dims whose
      product overflows 64 bits)
  (k) shape bombs: ConstantOfShape, Expand (host and device), Tile, Pad
  (l) --max-memory: a model that runs normally is refused under a small
      budget, naming its node and the sizes; a bad size is refused
  (m) external data: truncated file, offset past the end, offset + length
      wrapping 2^64, negative / garbage / out-of-range offset strings, a
      length that does not match the shape, and a file truncated after the
      model was opened (while mapped)
  (o) what an op's table row accepts (src/ops/accepts.cpp): input and output
      counts, ranks, dtypes, attribute types and ranges; each one line naming
      the node, the input or attribute, and the rule
  (n) Gather indices computed on the device (Cast of a float input), which
      cannot be checked before the run: negative ones wrap as onnxruntime
      does, out-of-range ones must not abort the process (ggml_get_rows
      asserts on them)
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading

import numpy as np
import onnx
from onnx import TensorProto, helper

from cli_common import run_cli

BOMB = [65536, 65536, 65536]
BOMB_TEXT = "65536,65536,65536"


def _model(nodes, inputs, outputs, inits=(), opset=17) -> bytes:
    g = helper.make_graph(nodes, "limits", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)
    return m.SerializeToString()


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def initializer_cases(h, expect_error, CaseFailed) -> None:
    # (j) The fuzzer's model: one initializer, dims [2^60], a single float_data value, read by Identity.
    huge = TensorProto(name="big_w", data_type=TensorProto.FLOAT, dims=[1 << 60], float_data=[1.0])
    data = _model([helper.make_node("Identity", ["big_w"], ["y"], name="id")], [], [_vi("y", None)], [huge])
    if len(data) > 120:
        raise CaseFailed(f"the model should be tiny, it has {len(data)} bytes")
    p = h.write("limits/typed_2p60.onnx", data)
    h.case(f"(j) {len(data)}-byte model, initializer dims [2^60] with one float_data value: info",
           lambda: expect_error(h.info(p), "big_w", str(1 << 60), "1 values"))
    h.case("(j) initializer dims [2^60] with one float_data value: run",
           lambda: expect_error(h.run(p, []), "big_w", str(1 << 60)))

    raw = TensorProto(name="raw_w", data_type=TensorProto.FLOAT, dims=[1 << 58], raw_data=b"\0" * 4)
    p2 = h.write("limits/raw_2p58.onnx", _model([helper.make_node("Identity", ["raw_w"], ["y"])], [],
                                                [_vi("y", None)], [raw]))
    h.case("(j) initializer dims [2^58] with 4 bytes of raw_data",
           lambda: expect_error(h.info(p2), "raw_w", str(1 << 60), "4 bytes"))

    wrap = TensorProto(name="wrap_w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40], float_data=[1.0])
    p3 = h.write("limits/wrap.onnx", _model([helper.make_node("Identity", ["wrap_w"], ["y"])], [],
                                            [_vi("y", None)], [wrap]))
    h.case("(j) initializer dims [2^40, 2^40] (overflows 64 bits)",
           lambda: expect_error(h.info(p3), "wrap_w", f"[{1 << 40},{1 << 40}]", "too large"))


    # double_data (8 bytes a value) on a float tensor: was decoded past the end of a 4-byte-per-value buffer.
    dd = TensorProto(name="dd_w", data_type=TensorProto.FLOAT, dims=[64], double_data=[1.0] * 64)
    p4 = h.write("limits/double_as_float.onnx", _model([helper.make_node("Identity", ["dd_w"], ["y"])], [],
                                                      [_vi("y", None)], [dd]))
    h.case("(j) float initializer with its values in double_data",
           lambda: expect_error(h.info(p4), "dd_w", "[64]", "double_data", "8 bytes"))


def bomb_cases(h, expect_error) -> None:
    shape_c = helper.make_node("Constant", [], ["shape"], value=_ints("v", BOMB), name="shape_const")

    # (k) ConstantOfShape: evaluated on the host.
    cos = helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos_bomb")
    p = h.write("limits/cos.onnx", _model([shape_c, cos], [], [_vi("y", None)]))
    h.case("(k) ConstantOfShape [65536,65536,65536]",
           lambda: expect_error(h.run(p, []), "cos_bomb", "ConstantOfShape", BOMB_TEXT, "PiB"))

    # Expand of a graph input: lowered to ggml, refused by the graph-memory check.
    exp = helper.make_node("Expand", ["x", "shape"], ["y"], name="expand_bomb")
    px = h.write("limits/expand_dev.onnx", _model([shape_c, exp], [_vi("x", [1])], [_vi("y", None)]))
    x1 = h.save_npy("x1.npy", np.ones([1], np.float32))
    h.case("(k) Expand of an input to [65536,65536,65536] (device graph)",
           lambda: expect_error(h.run(px, [f"x={x1}"]), "expand_bomb", "Expand", BOMB_TEXT, "PiB"))

    # An Expand whose element count overflows int64 (a GGML_ASSERT in ggml_new_tensor before it was checked).
    s90 = helper.make_node("Constant", [], ["s90"], value=_ints("s90", [1 << 30] * 3))
    e90 = helper.make_node("Expand", ["x", "s90"], ["y"], name="expand_2p90")
    p90 = h.write("limits/expand_2p90.onnx", _model([s90, e90], [_vi("x", [1])], [_vi("y", None)]))
    h.case("(k) Expand of an input to [2^30,2^30,2^30] (2^90 elements)",
           lambda: expect_error(h.run(p90, [f"x={x1}"]), "expand_2p90", "Expand", "2^63", str(1 << 30)))

    # Pad of an input on the device by 2^40: ggml's pad amounts are int, so it was silently cut to 0.
    pads_dev = helper.make_node("Constant", [], ["pd"], value=_ints("pd", [0, 1 << 40, 0, 0]))
    pad_dev = helper.make_node("Pad", ["x2", "pd"], ["y"], name="pad_dev")
    ppd = h.write("limits/pad_dev.onnx", _model([pads_dev, pad_dev], [_vi("x2", [2, 2])], [_vi("y", None)]))
    x2 = h.save_npy("x2.npy", np.ones([2, 2], np.float32))
    h.case("(k) Pad of an input by 2^40 (device)",
           lambda: expect_error(h.run(ppd, [f"x2={x2}"]), "pad_dev", "Pad", str(1 << 40)))

    # Expand of a constant: evaluated on the host.
    one = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.INT64, [1], [3]))
    exp_h = helper.make_node("Expand", ["c", "shape"], ["y"], name="expand_host")
    ph = h.write("limits/expand_host.onnx", _model([one, shape_c, exp_h], [], [_vi("y", None, TensorProto.INT64)]))
    h.case("(k) Expand of an int64 constant to [65536,65536,65536] (host)",
           lambda: expect_error(h.run(ph, []), "expand_host", "Expand", BOMB_TEXT, "PiB"))

    # Tile: repeats whose product with the input dims overflows, then one that is merely huge.
    c2 = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.INT64, [4], [1, 2, 3, 4]))
    for label, reps, words in (("overflowing 64 bits", [1 << 62], ["overflow", str(1 << 62)]),
                               ("of 2^40", [1 << 40], [str(4 << 40), "TiB"])):
        rep = helper.make_node("Constant", [], ["r"], value=_ints("r", reps))
        tile = helper.make_node("Tile", ["c", "r"], ["y"], name="tile_bomb")
        pt = h.write(f"limits/tile_{reps[0]}.onnx", _model([c2, rep, tile], [], [_vi("y", None, TensorProto.INT64)]))
        h.case(f"(k) Tile with repeats {label}",
               lambda pt=pt, words=words: expect_error(h.run(pt, []), "tile_bomb", "Tile", *words))

    # Pad: pads that overflow the dim, on the host.
    pads = helper.make_node("Constant", [], ["p"], value=_ints("p", [0, (1 << 63) - 1]))
    pad = helper.make_node("Pad", ["c", "p"], ["y"], name="pad_bomb")
    pp = h.write("limits/pad.onnx", _model([c2, pads, pad], [], [_vi("y", None, TensorProto.INT64)]))
    h.case("(k) Pad by 2^63-1 (overflows the dim)",
           lambda: expect_error(h.run(pp, []), "pad_bomb", "Pad", "overflow"))


def max_memory_cases(h, good: str, expect_error, expect_success) -> None:
    def run(extra, model=good):
        out = tempfile.mkdtemp(dir=h.work, prefix="out_")
        args = ["run", model, "--input", f"pixel_values={h.input_npy}", "--output-dir", out] + extra
        return run_cli(h.prefix, args, 30.0)

    # (l) The valid model's tensors are 192 bytes: it runs under 1M and is refused under 100 bytes.
    h.case("(l) --max-memory 1M: the valid model still runs", lambda: expect_success(run(["--max-memory", "1M"])))
    h.case("(l) --max-memory 100: refused, naming the node and the sizes",
           lambda: expect_error(run(["--max-memory", "100"]), "max_memory is 100 bytes", "192 bytes",
                                "[1,3,4,4]", any_of=("relu_node", "mul_node")))
    # Every tensor (192 bytes) fits under 250 bytes, but x, Relu(x) and Sigmoid(x) are live at once: the measured
    # compute buffer does not.
    nodes = [helper.make_node("Relu", ["pixel_values"], ["a"], name="relu_a"),
             helper.make_node("Sigmoid", ["pixel_values"], ["b"], name="sig_b"),
             helper.make_node("Add", ["a", "b"], ["logits"], name="add_ab")]
    two = h.write("limits/two_branches.onnx", _model(nodes, [_vi("pixel_values", [1, 3, 4, 4])],
                                                     [_vi("logits", [1, 3, 4, 4])]))
    h.case("(l) --max-memory 250: every tensor fits, the compute buffer does not",
           lambda: expect_error(run(["--max-memory", "250"], two), "bytes of compute memory", "max_memory is 250 bytes",
                                "192 bytes", any_of=("relu_a", "sig_b", "add_ab")))
    h.case("(l) --max-memory 12X: refused as a size",
           lambda: expect_error(run(["--max-memory", "12X"]), "--max-memory", "12X"))


def external_cases(h, expect_error, expect_success, valid_model, external_weight, CaseFailed) -> None:
    w = np.arange(48, dtype=np.float32).tobytes()  # the 192 bytes W [3,4,4] needs

    def ext_model(k, entries, data=w):
        d = f"limits/ext/{k}"
        h.write(f"{d}/w.bin", data)
        t = external_weight("w.bin")
        del t.external_data[:]
        for key, value in entries:
            e = t.external_data.add()
            e.key, e.value = key, value
        return h.write(f"{d}/model.onnx", valid_model(t).SerializeToString())

    loc = ("location", "w.bin")
    cases = [
        ("truncated file (100 of 192 bytes)", [loc], w[:100], ["'W'", "w.bin", "100 bytes", "192"]),
        ("offset past the end", [loc, ("offset", "4096")], w, ["'W'", "4096", "192 bytes"]),
        ("offset + length wrapping 2^64", [loc, ("offset", str((1 << 63) - 1)), ("length", "192")], w,
         ["'W'", str((1 << 63) - 1), "runs past the end"]),
        ("negative offset", [loc, ("offset", "-5")], w, ["'W'", "offset", "'-5'"]),
        ("garbage offset", [loc, ("offset", "12abc")], w, ["'W'", "offset", "'12abc'"]),
        ("offset beyond int64", [loc, ("offset", "99999999999999999999")], w, ["'W'", "99999999999999999999"]),
        ("negative length", [loc, ("length", "-1")], w, ["'W'", "length", "'-1'"]),
        ("length not matching the shape", [loc, ("length", "96")], w, ["'W'", "96", "192 bytes"]),
    ]
    for k, (label, entries, data, words) in enumerate(cases):
        p = ext_model(k, entries, data)
        h.case(f"(m) external data, {label}", lambda p=p, words=words: expect_error(h.run(p), *words))

    h.case("(m) external data truncated while mapped (after the model was opened)",
           lambda: truncated_while_mapped(h, ext_model("live", [loc]), expect_error, CaseFailed))


def truncated_while_mapped(h, model: str, expect_error, CaseFailed):
    """The CLI opens the session (mapping w.bin) before it reads its input; the input is a FIFO, so the
    test truncates w.bin while the CLI waits on it, then lets it run. Reading W then touches lost pages."""
    from cli_common import CliResult

    weights = os.path.join(os.path.dirname(model), "w.bin")
    fifo = os.path.join(tempfile.mkdtemp(dir=h.work, prefix="fifo_"), "x.npy")
    os.mkfifo(fifo)
    out = tempfile.mkdtemp(dir=h.work, prefix="out_")
    argv = h.prefix + ["run", model, "--input", f"pixel_values={fifo}", "--output-dir", out]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    result = {}
    reader = threading.Thread(target=lambda: result.update(zip(("out", "err"), proc.communicate(timeout=60))))
    reader.start()
    try:
        with open(fifo, "wb") as f:  # blocks until the CLI opens the input, i.e. after the session opened
            os.truncate(weights, 0)
            f.write(open(h.input_npy, "rb").read())
    finally:
        reader.join(70)
    if proc.returncode is None:
        proc.kill()
        raise CaseFailed("the CLI did not finish")
    res = CliResult(argv, proc.returncode, result.get("out", b"").decode(errors="replace"),
                    result.get("err", b"").decode(errors="replace"))
    return expect_error(res, "w.bin", "shrank", "192")


def device_index_cases(h, expect_success, CaseFailed) -> None:
    import onnxruntime as ort
    from onnx import numpy_helper
    data = np.arange(15, dtype=np.float32).reshape(5, 3)
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=TensorProto.INT64, name="cast_i"),
             helper.make_node("Gather", ["data", "i"], ["y"], axis=0, name="gather_dev")]
    path = h.write("limits/device_gather.onnx", _model(nodes, [_vi("x", [6])], [_vi("y", [6, 3])],
                                                        [numpy_helper.from_array(data, "data")]))

    def run(x):
        np.save(os.path.join(h.work, "dev_idx.npy"), x)
        out = tempfile.mkdtemp(dir=h.work, prefix="out_")
        res = run_cli(h.prefix, ["run", path, "--input", f"x={h.work}/dev_idx.npy", "--output-dir", out], 30.0)
        expect_success(res)
        return np.load(os.path.join(out, "y.npy"))

    def negatives():
        x = np.array([0, 4, -1, -5, 2, 3], np.float32)
        want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        got = run(x)
        if not np.array_equal(got, want):
            raise CaseFailed(f"rows {got[:, 0]} where onnxruntime gives {want[:, 0]}")

    h.case("(n) device-computed Gather indices, negative ones: as onnxruntime", negatives)
    def out_of_range():
        run(np.array([7, -9, 0, 1e9, -1e9, 2], np.float32))  # onnxruntime refuses; we clamp rather than abort

    h.case("(n) device-computed Gather indices out of range: no abort", out_of_range)


def table_rule_cases(h, expect_error) -> None:
    x = _vi("pixel_values", [1, 3, 4, 4])  # the harness's default input
    idx = helper.make_tensor("idx", TensorProto.INT64, [], [0])
    fidx = helper.make_tensor("fidx", TensorProto.FLOAT, [1], [0.0])
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 3, 1, 1], [1.0] * 6)
    cases = [  # (label, nodes, initializers, words the error must name)
        ("input count", [helper.make_node("Relu", ["pixel_values", "pixel_values"], ["y"], name="relu_two")], [],
         ["relu_two", "has 2 inputs", "takes 1"]),
        ("output count", [helper.make_node("Relu", ["pixel_values"], ["y", "z"], name="relu_two_out")], [],
         ["relu_two_out", "has 2 outputs", "takes 1"]),
        ("rank of a scalar", [helper.make_node("ReduceSum", ["pixel_values"], ["s"], keepdims=0, name="sum_all"),
                              helper.make_node("Gather", ["s", "idx"], ["y"], name="gather_scalar")], [idx],
         ["gather_scalar", "input 0 's'", "rank 0", "needs rank >= 1"]),
        ("fixed rank", [helper.make_node("Flatten", ["pixel_values"], ["f"], name="flat"),
                        helper.make_node("LRN", ["f"], ["y"], size=3, name="lrn_2d")], [],
         ["lrn_2d", "input 0 'f'", "rank 2", "needs rank 4"]),
        ("dtype", [helper.make_node("Gather", ["pixel_values", "fidx"], ["y"], name="gather_float_idx")], [fidx],
         ["gather_float_idx", "input 1 'fidx'", "float", "needs an integer tensor"]),
        ("axis out of range", [helper.make_node("Softmax", ["pixel_values"], ["y"], axis=4, name="softmax_axis")], [],
         ["softmax_axis", "attribute 'axis' is 4", "an axis of input 0", "-4 to 3"]),
        ("attribute type", [helper.make_node("LayerNormalization", ["pixel_values", "w"], ["y"], epsilon="tiny",
                                             name="ln_string_eps")], [w],
         ["ln_string_eps", "attribute 'epsilon'", "must be a float"]),
        ("attribute range", [helper.make_node("InstanceNormalization", ["pixel_values", "w", "w"], ["y"],
                                              epsilon=-1e30, name="in_negative_eps")], [w],
         ["in_negative_eps", "attribute 'epsilon'", "must be >= 0"]),
        ("list attribute range", [helper.make_node("Conv", ["pixel_values", "w"], ["y"], strides=[1, 0],
                                                   name="conv_zero_stride")], [w],
         ["conv_zero_stride", "attribute 'strides' is 0", "must be >= 1"]),
    ]
    # Type and data field disagree (epsilon typed INT, its value in f): onnxruntime refuses the file at load.
    ln = helper.make_node("LayerNormalization", ["pixel_values", "w"], ["y"], name="ln_int_typed_eps")
    eps = ln.attribute.add()
    eps.name, eps.type, eps.f = "epsilon", onnx.AttributeProto.INT, -1e30
    cases.append(("attribute type and data field", [ln], [w], ["ln_int_typed_eps", "'epsilon'", "typed INT", "FLOAT"]))
    for label, nodes, inits, words in cases:
        path = h.write(f"limits/table_{label.replace(' ', '_')}.onnx", _model(nodes, [x], [_vi("y", None)], inits))
        h.case(f"(o) table rule: {label}", lambda path=path, words=words: expect_error(h.run(path), *words))


def run_limit_cases(h, good, expect_error, expect_success, valid_model, external_weight, CaseFailed) -> None:
    table_rule_cases(h, expect_error)
    initializer_cases(h, expect_error, CaseFailed)
    device_index_cases(h, expect_success, CaseFailed)
    bomb_cases(h, expect_error)
    max_memory_cases(h, good, expect_error, expect_success)
    external_cases(h, expect_error, expect_success, valid_model, external_weight, CaseFailed)
