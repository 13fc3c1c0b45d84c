"""Op cases: pools beyond tests/op_tests.py's MaxPool/AveragePool/Global*Pool cases (LpPool, the shared
window geometry, ranks 3 and 5 for global pools, GlobalLpPool)."""

from op_case import R, case

# MaxPool / AveragePool geometry through conv_geometry: SAME_LOWER, VALID, ceil_mode with a last window that
# would start in the padding.
case("MaxPool", R(1, 3, 8, 9), kernel_shape=[3, 2], strides=[2, 3], auto_pad="SAME_LOWER")
case("MaxPool", R(2, 2, 9, 8), kernel_shape=[3, 3], strides=[2, 2], auto_pad="VALID")
case("MaxPool", R(1, 2, 6, 6), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
case("AveragePool", R(1, 2, 6, 6), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
case("AveragePool", R(1, 3, 8, 9), kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_UPPER")
case("AveragePool", R(1, 3, 8, 9), kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_LOWER", count_include_pad=1)
case("AveragePool", R(2, 2, 13), kernel_shape=[3], strides=[2], auto_pad="VALID")

# Global pools at ranks 3 and 5 (3-D: N and C folded together in ggml's last dim).
case("GlobalMaxPool", R(2, 5, 9))
case("GlobalMaxPool", R(1, 3, 4, 5, 6))
case("GlobalAveragePool", R(2, 3, 4, 5, 3))

# LpPool: p = 1, 2, 3; 1-D to 3-D; pads, strides, dilations, auto_pad, ceil_mode (opset 18).
case("LpPool", R(1, 3, 7, 7), kernel_shape=[3, 3], p=2, opset=11)
case("LpPool", R(2, 2, 11), kernel_shape=[3], strides=[2], pads=[1, 1], p=1, opset=11)
case("LpPool", R(1, 2, 8, 7), kernel_shape=[2, 3], strides=[2, 2], auto_pad="SAME_UPPER", p=3, opset=11)
case("LpPool", R(1, 2, 9, 9), kernel_shape=[3, 3], strides=[2, 2], dilations=[2, 2], p=2, opset=18)
case("LpPool", R(1, 2, 8, 8), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 0], ceil_mode=1, p=2, opset=18)
case("LpPool", R(1, 2, 4, 5, 6), kernel_shape=[2, 2, 3], strides=[1, 2, 2], p=2, opset=18)
case("LpPool", R(1, 2, 7, 7), kernel_shape=[3, 3], p=2, opset=2)  # first opset with p as an int
case("LpPool", R(1, 2, 7, 7), kernel_shape=[3, 3], p=3, opset=18)

# Dilated and 3-D MaxPool / AveragePool (an im2col of the windows, each reduced): pads, ceil_mode, strides,
# count_include_pad, 1-D to 3-D.
case("MaxPool", R(1, 3, 9, 10), kernel_shape=[3, 2], dilations=[2, 3], strides=[1, 2])
case("MaxPool", R(1, 2, 8, 8), kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 2, 2, 1], ceil_mode=1, strides=[2, 2])
case("AveragePool", R(1, 2, 9, 9), kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 1, 1, 2], opset=19)
case("AveragePool", R(1, 2, 9, 9), kernel_shape=[3, 2], dilations=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1,
     opset=19)
case("MaxPool", R(2, 3, 11), kernel_shape=[3], dilations=[3], pads=[2, 1])
case("MaxPool", R(1, 2, 5, 6, 7), kernel_shape=[2, 3, 2])
case("MaxPool", R(2, 3, 6, 7, 5), kernel_shape=[3, 3, 3], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 1])
case("MaxPool", R(1, 2, 7, 7, 7), kernel_shape=[2, 2, 2], strides=[2, 2, 2], ceil_mode=1, dilations=[2, 1, 1])
case("AveragePool", R(1, 3, 6, 7, 8), kernel_shape=[3, 2, 3], strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0])
case("AveragePool", R(2, 2, 6, 7, 8), kernel_shape=[3, 3, 3], strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
     count_include_pad=1)
case("AveragePool", R(1, 2, 7, 8, 6), kernel_shape=[2, 3, 2], auto_pad="SAME_UPPER", strides=[2, 2, 2])

# GlobalLpPool: p = 1, 2 (exact in ggml) and 3 (exp/log); ranks 3 to 5; opset 18 (onnxruntime 1.23 has no kernel
# at 22, which only adds bfloat16).
case("GlobalLpPool", R(2, 3, 5, 6), opset=18)
case("GlobalLpPool", R(2, 5, 9), p=1, opset=18)
case("GlobalLpPool", R(1, 3, 4, 5, 6), p=3, opset=18)
case("GlobalLpPool", R(1, 4, 7, 7), p=2, opset=2)
case("GlobalLpPool", R(1, 3, 6, 5, dtype="float16"), p=3, opset=18)
