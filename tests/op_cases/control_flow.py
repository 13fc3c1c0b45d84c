"""Control flow: If, Loop, Scan (their bodies run node by node while the graph is built)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from op_case import I64, K, R, case


def _vi(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr, np.float32)))


# If: each branch yields its own constant; the condition is an initializer.
_then = helper.make_graph([_const("t", [[1.5, -2.0, 3.0]])], "then", [], [_vi("t", shape=[1, 3])])
_else = helper.make_graph([_const("e", [[0.25, 4.0, -1.0]])], "else", [], [_vi("e", shape=[1, 3])])
case("If", K(True), then_branch=_then, else_branch=_else, opset=13)
case("If", K(False), then_branch=_then, else_branch=_else, opset=13)

# Loop: 3 iterations of acc = acc * 0.5 + 1 (a scan output would leave the outer output without a shape).
_body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]), _const("half", 0.5), _const("one", 1.0),
     helper.make_node("Mul", ["acc_in", "half"], ["m"]), helper.make_node("Add", ["m", "one"], ["acc_out"])],
    "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("acc_in", shape=[2, 3])],
    [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", shape=[2, 3])])
case("Loop", I64(3), K(True), R(2, 3), body=_body, opset=11)

# Scan: running sum over the first axis of a [4, 3] sequence.
_sbody = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]),
                            helper.make_node("Identity", ["s_out"], ["y_t"])],
                           "scan_body", [_vi("s_in", shape=[3]), _vi("x_t", shape=[3])],
                           [_vi("s_out", shape=[3]), _vi("y_t", shape=[3])])
case("Scan", R(3), R(4, 3), body=_sbody, num_scan_inputs=1, opset=11, outputs=2)

# Sequences inside a graph (torch.export writes `unbind` as SplitToSequence + SequenceAt), here in Loop bodies so
# that the graph's own inputs and outputs stay tensors.
_k = [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v, np.int64)))
      for n, v in (("split", [1, 2]), ("p0", 0), ("p1", 1), ("pl", -1))]
_rotate = helper.make_graph(  # columns [a | b c] -> [b c | a], through an empty sequence and inserts
    _k + [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
          helper.make_node("SplitToSequence", ["acc_in", "split"], ["s"], axis=1),
          helper.make_node("SequenceAt", ["s", "p0"], ["a"]), helper.make_node("SequenceAt", ["s", "p1"], ["b"]),
          helper.make_node("SequenceEmpty", [], ["e"], dtype=TensorProto.FLOAT),
          helper.make_node("SequenceInsert", ["e", "b"], ["e1"]),
          helper.make_node("SequenceInsert", ["e1", "a"], ["s2"]),
          helper.make_node("ConcatFromSequence", ["s2"], ["acc_out"], axis=1)],
    "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("acc_in", shape=[2, 3])],
    [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", shape=[2, 3])])
case("Loop", I64(2), K(True), R(2, 3), body=_rotate, opset=13)
_reverse_rows = helper.make_graph(  # rows unbound (keepdims=0), last moved first, stacked again, plus the count
    _k + [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
          helper.make_node("SplitToSequence", ["acc_in"], ["s"], axis=0, keepdims=0),
          helper.make_node("SequenceAt", ["s", "pl"], ["last"]),
          helper.make_node("SequenceErase", ["s"], ["s2"]),
          helper.make_node("SequenceInsert", ["s2", "last", "p0"], ["s3"]),
          helper.make_node("ConcatFromSequence", ["s3"], ["st"], axis=0, new_axis=1),
          helper.make_node("SequenceLength", ["s3"], ["n"]),
          helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
          helper.make_node("Add", ["st", "nf"], ["acc_out"])],
    "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("acc_in", shape=[3, 4])],
    [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", shape=[3, 4])])
case("Loop", I64(1), K(True), R(3, 4), body=_reverse_rows, opset=13)
_pair = helper.make_graph(  # SequenceConstruct of two values, the second taken back
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]), _const("one", 1.0), _k[2],
     helper.make_node("Mul", ["acc_in", "one"], ["m"]),
     helper.make_node("SequenceConstruct", ["acc_in", "m"], ["s"]),
     helper.make_node("SequenceAt", ["s", "p1"], ["x"]), helper.make_node("Add", ["x", "one"], ["acc_out"])],
    "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("acc_in", shape=[2, 2])],
    [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", shape=[2, 2])])
case("Loop", I64(2), K(True), R(2, 2), body=_pair, opset=13)
