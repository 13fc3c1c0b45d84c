"""Elementwise math cases: unary math, Mod, variadic Sum/Mean/Max/Min, comparisons, logic, bitwise."""

import numpy as np

from op_case import R, V, W, case

x = R(3, 4, 5)
for op, lo, hi in (("Tan", -1.4, 1.4), ("Asin", -0.95, 0.95), ("Acos", -0.95, 0.95), ("Atan", -4, 4),
                   ("Sinh", -3, 3), ("Cosh", -3, 3), ("Asinh", -4, 4), ("Acosh", 1.05, 5), ("Atanh", -0.95, 0.95),
                   ("Floor", -5, 5), ("Ceil", -5, 5), ("Reciprocal", 0.5, 3)):
    case(op, R(3, 4, 5, lo=lo, hi=hi))
case("Reciprocal", R(2, 7, lo=-3, hi=-0.5))
case("Round", R(3, 4, 5, lo=-5, hi=5))
case("Round", V([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 3.51], "float32"))  # halves round to even
case("Sign", V([[-2.0, 0.0, 3.5], [-0.0, 1e-30, -7.0]], "float32"))
case("Sign", x)
special = V([1.0, np.nan, np.inf, -np.inf, 0.0, -2.0], "float32")
case("IsNaN", special)
case("IsInf", special)
case("IsInf", special, detect_positive=0)
case("IsInf", special, detect_negative=0)
case("IsInf", special, detect_positive=0, detect_negative=0)  # all false, NaN and inf included

# Mod: fmod=1 for floats (sign of the dividend); integer Mod (sign of the divisor) runs on the host.
case("Mod", R(3, 4, lo=-10, hi=10), R(4, lo=0.5, hi=3), fmod=1)
case("Mod", R(2, 3, lo=-10, hi=10), R(2, 1, lo=-3, hi=-0.5), fmod=1)
case("Mod", V([[7, -7, 9], [-9, 5, 0]], "int64"), V([[2, 2, -4], [4, -3, 7]], "int64"))
case("Mod", V([7, -7, 9, -9], "int32"), V([3, 3, -4, -4], "int32"), fmod=1)

# Variadic: any number of inputs, numpy broadcasting across all of them.
for op in ("Sum", "Mean", "Max", "Min"):
    case(op, R(2, 3, 4), R(3, 1), R(4))
    case(op, R(3, 4), R(3, 4))
    case(op, R(5))  # one input: itself
case("Max", R(3, 4, dtype="int64", lo=-50, hi=50), R(4, dtype="int64", lo=-50, hi=50))
for op in ("Max", "Min"):  # NaN either side propagates; a scalar or per-channel first operand (one CPU pass)
    case(op, V([[1.0, float("nan"), -2.0], [float("nan"), 0.5, 3.0]], "float32"), V([0.0, 1.0, float("nan")], "float32"),
         off_cpu="the portable select where(a > b, a, b) drops a NaN first operand")
    case(op, W(1), R(2, 6, 5, 7))
    case(op, R(1, 6, 1, 1), R(2, 6, 5, 7))
case("Sum", R(1, 4), R(3, 1), R(3, 4), R(1, 1))

ties = dict(lo=-2, hi=3)
for op in ("GreaterOrEqual", "LessOrEqual"):
    case(op, R(2, 3, 4), R(4))
    case(op, R(3, 4, dtype="int64", **ties), R(3, 4, dtype="int64", **ties))
    case(op, R(3, 4, lo=-2, hi=2, whole=True), R(3, 1, lo=-2, hi=2, whole=True))  # float ties
case("Xor", R(2, 3, dtype="bool"), R(3, dtype="bool"))
case("Xor", R(3, 1, dtype="bool"), R(1, 4, dtype="bool"))

# Bitwise ops work on integers, on the host.
case("BitShift", V([16, 4, 1, 255], "uint8"), V([1, 2, 3, 1], "uint8"), direction="LEFT", opset=11)
case("BitShift", V([16, 4, 1, 4000000000], "uint32"), V([1, 2, 3, 4], "uint32"), direction="RIGHT", opset=11)
case("BitShift", V([[1, 2], [3, 4]], "uint64"), V([5], "uint64"), direction="LEFT", opset=11)
# Signed types (28): arithmetic right shift; negative or too-wide shifts give the sign fill (-1 or 0).
case("BitShift", V([-16, -1, 100, -128, 7, -5], "int8"), V([2, 1, 3, 8, -1, 9], "int8"), direction="RIGHT", opset=28)
case("BitShift", V([-16, 3, 100, -7], "int32"), V([2, 30, 40, -2], "int32"), direction="LEFT", opset=28)
for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor"):
    case(op, R(3, 4, dtype="int32", lo=-100, hi=100), R(4, dtype="int32", lo=-100, hi=100), opset=18)
    case(op, R(5, dtype="uint8", lo=0, hi=255), R(5, dtype="uint8", lo=0, hi=255), opset=18)
case("BitwiseNot", R(3, 4, dtype="int32", lo=-100, hi=100), opset=18)
case("BitwiseNot", R(6, dtype="uint8", lo=0, hi=255), opset=18)

# Rank 5 and 6, broadcast as Flux's rotary embedding does ([1, 1, L, D/2, 2, 2] * [B, H, L, D/2, 1, 2]).
case("Mul", R(1, 1, 4, 3, 2, 2), R(2, 3, 4, 3, 1, 2))
case("Add", R(2, 3, 4, 5, 6), R(5, 6))
case("Sub", R(2, 3, 4, 5, 6), R(1, 3, 1, 1, 1))

# Broadcasts ggml cannot do natively (first operand, or the second along ne0) take one pass of our own on the CPU:
# scalars either side, per channel either side, both operands broadcast, one long row split over threads.
for op in ("Add", "Sub", "Mul", "Div"):
    case(op, W(1, lo=0.5, hi=2), R(2, 6, 5, 7, lo=0.5, hi=2))
    case(op, R(2, 6, 5, 7), W(6, 1, 1, lo=0.5, hi=2))
    case(op, R(1, 6, 1, 1, lo=0.5, hi=2), R(2, 6, 5, 7, lo=0.5, hi=2))
    case(op, R(3, 1, 9), R(1, 4, 1, lo=0.5, hi=2))
    case(op, R(1), R(1, 1, 20000, lo=0.5, hi=2))


def legacy_as_7(model):
    """Opsets 1-6 broadcast/axis written as opset 7: B unsqueezed to trailing 1s, then numpy broadcasting (neither
    onnxruntime nor onnx.reference runs the axis attribute)."""
    from onnx import helper

    m = type(model)()
    m.CopyFrom(model)
    node = m.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    del node.attribute[:]
    if "axis" in attrs:
        ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in m.graph.input}
        ra, rb = ranks[node.input[0]], ranks[node.input[1]]
        axis = attrs["axis"] % ra
        trailing = list(range(rb, ra - axis))
        if trailing:
            m.graph.node.insert(0, helper.make_node("Unsqueeze", [node.input[1]], ["b_aligned"], axes=trailing))
            m.graph.node[1].input[1] = "b_aligned"
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", 7))
    return m


# Opsets 1-6: B broadcasts into A only with broadcast=1, from `axis` (default: A's trailing dims).
for op in ("Add", "Sub", "Mul", "Div"):
    case(op, R(2, 3, 4, 5), R(3, 4, lo=0.5, hi=2), broadcast=1, axis=1, opset=6, ref_model=legacy_as_7)
case("Add", R(2, 3, 4, 5), R(3), broadcast=1, axis=1, opset=6, ref_model=legacy_as_7)  # per channel (Caffe2 bias)
case("Mul", R(2, 3, 4, 5), R(2), broadcast=1, axis=0, opset=6, ref_model=legacy_as_7)
case("Sub", R(2, 3, 4, 5), R(4, 5), broadcast=1, opset=6, ref_model=legacy_as_7)  # trailing dims
case("Div", R(2, 3, 4, 5), R(5, lo=0.5, hi=2), broadcast=1, axis=-1, opset=6, ref_model=legacy_as_7)
case("Add", R(3, 4), R(3, 4), opset=6, ref_model=legacy_as_7)
case("Add", R(2, 3, 4, 5), R(3, 4), broadcast=1, axis=1, opset=1, ref_model=legacy_as_7)
case("Pow", R(2, 3, 4, lo=0.5, hi=2), R(3, lo=0.5, hi=2), broadcast=1, axis=1, opset=1, ref_model=legacy_as_7)
case("Greater", R(2, 3, 4), R(3), broadcast=1, axis=1, opset=1, ref_model=legacy_as_7)
case("Equal", V([[1, 2, 3], [4, 5, 6]], "int64"), V([2, 5], "int64"), broadcast=1, axis=0, opset=1,
     ref_model=legacy_as_7)  # integers: the host path
case("Mul", V([[1, 2, 3], [4, 5, 6]], "int64"), V([2, 5], "int64"), broadcast=1, axis=0, opset=6,
     ref_model=legacy_as_7)
