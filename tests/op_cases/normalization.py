"""Normalization cases beyond tests/op_tests.py's: RMS, Lp, mean-variance, LRN, statistics outputs, parameters
computed in the graph."""

from op_case import R, W, case

case("RMSNormalization", R(2, 5, 8), W(8), opset=23)
case("RMSNormalization", R(2, 3, 4, 6), W(4, 6), axis=2, epsilon=1e-3, opset=23)
case("RMSNormalization", R(3, 7), W(7), axis=0, opset=23)
case("LpNormalization", R(3, 4, 5))  # default: L2 over the last axis
case("LpNormalization", R(3, 4, 5), axis=1, p=1)
case("LpNormalization", R(2, 3, 4, 5), axis=0, p=2)
case("MeanVarianceNormalization", R(2, 3, 4, 5), axes=[0, 2, 3], opset=13)  # the default (no reference runs it)
case("MeanVarianceNormalization", R(2, 3, 4, 5), axes=[1], opset=13)
case("MeanVarianceNormalization", R(3, 4, 6), axes=[0, 2], opset=13)
case("LRN", R(1, 5, 4, 4), size=3)
case("LRN", R(2, 6, 3, 5), size=5, alpha=1e-2, beta=0.5, bias=2.0, opset=13)
# Mean and InvStdDev outputs.
case("LayerNormalization", R(2, 5, 8), W(8), W(8), outputs=3)
case("LayerNormalization", R(3, 4, 6), W(4, 6), axis=1, outputs=3, epsilon=1e-3)
# Parameters as graph inputs: computed in the graph rather than folded.
case("BatchNormalization", R(2, 3, 4, 4), R(3), R(3), R(3), R(3, lo=0.5, hi=2.0), opset=15)
case("BatchNormalization", R(4), W(1), W(1), W(1), W(1, lo=0.5, hi=2.0), opset=15)  # rank 1: one channel
case("BatchNormalization", R(2, 3, 4, 5, 6), W(3), W(3), W(3), W(3, lo=0.5, hi=2.0), opset=15)  # rank 5 (3-D)
case("BatchNormalization", R(2, 4, 3, 2, 5), R(4), R(4), R(4), R(4, lo=0.5, hi=2.0), opset=15)
case("GroupNormalization", R(2, 6, 5), R(6), R(6), num_groups=2, opset=21)
case("GroupNormalization", R(3, 8), W(8), W(8), num_groups=4, opset=21)  # no spatial dims
# LayerNormalization before opset 17 is onnxruntime's contrib op in the ONNX domain: Y of the scale's type, Mean and
# InvStdDev in float.
case("LayerNormalization", R(2, 3, 8), W(8), W(8), opset=13, outputs=3, out_types=["float32"] * 3)
case("LayerNormalization", R(2, 3, 8), W(3, 8), opset=13, axis=1, epsilon=1e-3)
case("LayerNormalization", R(2, 3, 8, dtype="float16"), W(8, dtype="float16"), W(8, dtype="float16"), opset=13,
     outputs=3, out_types=["float16", "float32", "float32"])
