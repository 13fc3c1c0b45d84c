"""Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
ConvInteger, QLinearConv."""

import numpy as np
from op_case import K, R, V, W, case

u8, i8 = "uint8", "int8"

# QuantizeLinear: per tensor, per axis, blocked, int8/int16 targets, rank 5 (axis among the folded dims).
case("QuantizeLinear", R(2, 3, 4), K(0.05), K(128, u8), opset=13)
case("QuantizeLinear", R(2, 3, 4), K(0.02), opset=13)  # no zero point: uint8
case("QuantizeLinear", R(2, 3, 4), K([0.02, 0.05, 0.1]), K([0, -10, 5], i8), axis=1, opset=13)
case("QuantizeLinear", R(3, 4, 2), K([0.02, 0.04]), K([1, 2], u8), axis=-1, opset=19)
case("QuantizeLinear", R(2, 6), K([[0.02, 0.05, 0.1], [0.03, 0.01, 0.2]]), K([[0, 3, -4], [2, 0, 1]], i8),
     axis=1, block_size=2, opset=21)
case("QuantizeLinear", R(2, 5), K(0.001), K(100, "int16"), opset=21)
case("QuantizeLinear", R(2, 3, 2, 2, 3), K([0.02, 0.05]), K([10, 200], u8), axis=0, opset=13)  # folded axis
case("QuantizeLinear", R(2, 3, 2, 2, 3), K([0.02, 0.05, 0.1]), K([10, 20, 30], u8), axis=1, opset=13)
# DequantizeLinear
case("DequantizeLinear", R(2, 3, 4, dtype=u8, lo=0, hi=256), K(0.05), K(128, u8), opset=13)
case("DequantizeLinear", R(2, 3, 4, dtype=i8, lo=-128, hi=128), K([0.02, 0.05, 0.1]), K([0, -10, 5], i8), axis=1,
     opset=13)
case("DequantizeLinear", R(3, 5, dtype="int32", lo=-100000, hi=100000), K(0.001), opset=13)
case("DequantizeLinear", R(2, 6, dtype=i8, lo=-128, hi=128), K([[0.02, 0.05, 0.1], [0.03, 0.01, 0.2]]),
     K([[0, 3, -4], [2, 0, 1]], i8), axis=1, block_size=2, opset=21)
case("DequantizeLinear", R(2, 3, 2, 2, 3, dtype=u8, lo=0, hi=256), K([0.02, 0.05]), K([10, 200], u8), axis=0,
     opset=13)
# DynamicQuantizeLinear: y, y_scale, y_zero_point
case("DynamicQuantizeLinear", R(3, 4), outputs=3)
case("DynamicQuantizeLinear", R(2, 5, lo=0.5, hi=3.0), outputs=3)  # all positive: zero point 0

# MatMulInteger: zero points per tensor and per row/column, batch broadcast, 1-D operands.
case("MatMulInteger", R(3, 4, dtype=u8, lo=0, hi=256), R(4, 5, dtype=u8, lo=0, hi=256), K(12, u8), K(200, u8))
case("MatMulInteger", R(2, 3, 4, dtype=i8, lo=-128, hi=128), W(4, 5, dtype=i8, lo=-128, hi=128))
case("MatMulInteger", R(3, 4, dtype=u8, lo=0, hi=256), R(4, 5, dtype=i8, lo=-128, hi=128), K(3, u8),
     K([0, 1, -1, 2, 3], i8))  # b zero point per column (onnxruntime takes a's per tensor only)
case("MatMulInteger", R(4, dtype=u8, lo=0, hi=256), R(2, 4, 3, dtype=u8, lo=0, hi=256), K(7, u8))
case("MatMulInteger", R(2, 1, 3, 4, dtype=u8, lo=0, hi=256), R(3, 4, 2, dtype=u8, lo=0, hi=256))
case("MatMulInteger", R(3, 4, dtype=u8, lo=0, hi=256), R(4, dtype=u8, lo=0, hi=256))
# QLinearMatMul
case("QLinearMatMul", R(3, 4, dtype=u8, lo=0, hi=256), K(0.02), K(120, u8), R(4, 5, dtype=u8, lo=0, hi=256),
     K(0.03), K(130, u8), K(0.5), K(128, u8), opset=10)
case("QLinearMatMul", R(2, 3, 4, dtype=i8, lo=-128, hi=128), K(0.02), K(-3, i8), W(4, 5, dtype=i8, lo=-128, hi=128),
     K(0.01), K(0, i8), K(0.1), K(5, i8), opset=10)

# ConvInteger / QLinearConv: padding, strides, groups, auto_pad, 1-D, 3-D with two images.
case("ConvInteger", R(1, 2, 5, 5, dtype=u8, lo=0, hi=256), W(3, 2, 3, 3, dtype=u8, lo=0, hi=256), K(100, u8),
     pads=[1, 1, 1, 1])
case("ConvInteger", R(2, 4, 7, 6, dtype=u8, lo=0, hi=256), W(4, 2, 3, 2, dtype=u8, lo=0, hi=256), K(3, u8),
     K(9, u8), group=2, strides=[2, 1], pads=[0, 1, 2, 0])
case("ConvInteger", R(1, 2, 7, 7, dtype=u8, lo=0, hi=256), W(3, 2, 4, 4, dtype=u8, lo=0, hi=256),
     auto_pad="SAME_UPPER", strides=[2, 2])
case("ConvInteger", R(1, 3, 11, dtype=u8, lo=0, hi=256), W(2, 3, 3, dtype=u8, lo=0, hi=256), K(128, u8),
     dilations=[2], pads=[1, 2])
case("ConvInteger", R(2, 2, 4, 5, 4, dtype=u8, lo=0, hi=256), W(3, 2, 2, 3, 2, dtype=u8, lo=0, hi=256), K(50, u8),
     pads=[1, 0, 1, 0, 1, 1])
case("QLinearConv", R(1, 2, 5, 5, dtype=u8, lo=0, hi=256), K(0.02), K(100, u8), W(3, 2, 3, 3, dtype=u8, lo=0, hi=256),
     K(0.01), K(128, u8), K(0.4), K(120, u8), W(3, dtype="int32", lo=-1000, hi=1000), pads=[1, 1, 1, 1], opset=10)
# uint8 x with int8 w: 7-bit x, as onnxruntime's u8s8 kernels saturate 16-bit pair sums beyond that.
case("QLinearConv", R(1, 4, 6, 6, dtype=u8, lo=0, hi=128), K(0.02), K(60, u8),
     W(4, 2, 3, 3, dtype=i8, lo=-128, hi=128), K([0.01, 0.02, 0.015, 0.03]), K([0, 0, 0, 0], i8), K(0.3), K(110, u8),
     group=2, strides=[2, 2], opset=10)
case("QLinearConv", R(2, 2, 3, 4, 4, dtype=u8, lo=0, hi=256), K(0.02), K(100, u8),
     W(2, 2, 2, 2, 2, dtype=u8, lo=0, hi=256), K(0.01), K(128, u8), K(0.4), K(120, u8), opset=10)

# Narrow types (int4/uint4/int2/uint2, float8): widened on the host. int4 initializers are stored packed (two per
# byte, an odd count leaves half a byte), so these also check the loader's unpacking.
case("DequantizeLinear", K([[-8, -3, 0, 5, 7], [1, 2, 3, 4, -1]], "int4"), K([0.5, 0.25]), K([1, -2], "int4"), axis=0,
     opset=21)
case("DequantizeLinear", R(3, 5, dtype="uint4", lo=0, hi=16), K(0.1), K(8, "uint4"), opset=21)
# An int4 weight with a scale computed at run time (a graph input): dequantized on the device.
case("DequantizeLinear", K([[-8, 7, 0, 3], [1, -1, 5, -6], [2, 2, -3, 4]], "int4"), R(3), axis=0, opset=21)
case("DequantizeLinear", K([-2, -1, 0, 1, 1, -2, 0], "int2"), K(1.5), opset=25)
case("DequantizeLinear", V([0.0, 0.5, -3.0, 448.0, -0.015625], "float8_e4m3fn"), K(2.0), opset=19)
case("DequantizeLinear", V([0.0, 1.5, -3.0, 57344.0, np.inf], "float8_e5m2"), K(0.5), opset=19)
case("QuantizeLinear", R(3, 4, lo=-30, hi=30), K([2.0, 3.0, 4.0]), K([1, -1, 0], "int4"), axis=0, opset=21)
case("QuantizeLinear", R(2, 6, lo=-10, hi=40), K(2.5), K(3, "uint4"), opset=21)
case("QuantizeLinear", R(2, 5, lo=-4, hi=4), K(1.0), K(0, "int2"), opset=25)
case("QuantizeLinear", R(2, 5, lo=-2, hi=8), K(1.0), K(1, "uint2"), opset=25)
# To float8/float4e2m1: on the host, rounded and saturated by Cast's rules (onnx.reference is the oracle).
case("QuantizeLinear", R(3, 5, lo=-2000, hi=2000), K(2.0), K(0.0, "float8_e4m3fn"), opset=19)
case("QuantizeLinear", R(3, 5, lo=-2000, hi=2000), K(2.0), K(0.0, "float8_e4m3fn"), saturate=0, opset=19)
case("QuantizeLinear", R(2, 3, 4, lo=-9e4, hi=9e4), K([1.0, 0.5, 3.0]), K([0.0, 1.0, -2.0], "float8_e5m2"), axis=1,
     opset=21)
case("QuantizeLinear", R(2, 6, lo=-500, hi=500), K([[1.0, 2.0], [4.0, 0.5]]), K([[0.0, 0.0], [0.0, 0.0]],
     "float8_e4m3fnuz"), axis=1, block_size=3, opset=21)
case("QuantizeLinear", R(4, 5, lo=-20, hi=20), K(1.5), K(0.0, "float4_e2m1fn"), opset=23)
