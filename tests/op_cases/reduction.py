"""Reduction cases: the Reduce* ops not covered in op_tests.py, ArgMin, Hardmax, LogSoftmax axes, CumSum, rank 5."""

from op_case import I64, R, case

x = R(2, 3, 4)
pos = R(2, 3, 4, lo=0.1, hi=2)
for op, inp in (("ReduceMin", x), ("ReduceProd", R(2, 3, 4, lo=0.5, hi=1.5)), ("ReduceL1", x), ("ReduceL2", x),
                ("ReduceLogSum", pos), ("ReduceLogSumExp", R(2, 3, 4, lo=-20, hi=20)), ("ReduceSumSquare", x)):
    case(op, inp, axes=[1], keepdims=1, opset=13)
    case(op, inp, axes=[0, 2], keepdims=0, opset=13)
    case(op, inp, I64(-1), keepdims=0, opset=18)
    case(op, inp, keepdims=1, opset=18)  # all axes
case("ReduceMin", R(3, 4, dtype="int64", lo=-50, hi=50), I64(0), keepdims=1, opset=18)
case("ReduceProd", R(3, 4, dtype="int64", lo=-3, hi=3), I64(1), keepdims=0, opset=18)

ties = R(3, 6, lo=0, hi=2, whole=True)
case("ArgMin", R(3, 4, 5), axis=1, keepdims=1, opset=13)
case("ArgMin", R(3, 4, 5), axis=-1, keepdims=0, opset=13)
case("ArgMin", ties, axis=1, select_last_index=1, opset=13)
case("ArgMin", ties, axis=0, keepdims=0, opset=13)

for axis in (-1, 0, 1):
    case("Hardmax", R(2, 3, 4), axis=axis, opset=13)
case("Hardmax", R(2, 3, 4), opset=11)  # default axis 1: over dims 1 and 2 together
case("Hardmax", R(2, 3, 4), axis=0, opset=11)
case("Hardmax", ties, axis=1, opset=13)  # first of equal maxima
case("LogSoftmax", R(2, 3, 4, lo=-20, hi=20), axis=0, opset=13)
case("LogSoftmax", R(2, 3, 4), axis=1, opset=13)
case("LogSoftmax", R(2, 3, 4), axis=2, opset=11)

case("CumSum", R(2, 3, 4), I64(1), opset=14)
case("CumSum", R(2, 3, 4), I64(-1), exclusive=1, opset=14)
case("CumSum", R(2, 3, 4), I64(0), reverse=1, opset=14)
case("CumSum", R(5, 7), I64(1), exclusive=1, reverse=1, opset=14)

# Rank 5: ggml folds the outer dims; the inner three still reduce and softmax.
r5 = R(2, 2, 3, 4, 5)
case("ReduceSum", r5, I64(-1), keepdims=0, opset=13)
case("ReduceMean", r5, I64(-1, -2), keepdims=1, opset=18)
case("ReduceMax", r5, keepdims=0, opset=18)
case("ReduceMax", R(2, 0, 4, dtype="bool"), I64(1), opset=20)  # empty set of bools: false
case("ReduceMin", R(2, 0, 3, dtype="bool"), I64(1), keepdims=0, opset=20)  # and true
case("Softmax", r5, axis=-1, opset=13)
case("Softmax", r5, axis=3, opset=11)
case("ArgMax", r5, axis=-2, keepdims=0, opset=13)

# Old opsets: the axes attribute (Reduce* before 18), host data, all axes.
case("ReduceMean", R(3, 4, 5), axes=[-1], opset=13)
case("ReduceProd", R(3, 4, dtype="int64", lo=1, hi=3), axes=[1], opset=13)  # host data
case("ReduceL2", R(3, 4, 5), opset=11)  # all axes

# Rank 5 (DiT blocks: a mean over the last dim of a rank-5 tensor).
case("ReduceMean", R(2, 3, 4, 5, 6), I64(-1), keepdims=1, opset=18)
case("ReduceSum", R(2, 3, 4, 5, 6), I64(1), keepdims=0, opset=13)
case("ReduceMax", R(2, 3, 4, 5, 6), I64(0, 3), keepdims=1, opset=18)  # folded and inner axes together
case("ReduceLogSum", R(2, 3, 4, 5, 2, 3, lo=0.5, hi=2), I64(1, 4), keepdims=0, opset=18)  # rank 6
