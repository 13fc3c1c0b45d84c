"""Op cases: convolutions beyond tests/op_tests.py's Conv and ConvTranspose cases (DeformConv,
CausalConvWithState, run-time ConvTranspose weights, the shared window geometry)."""


from op_case import R, W, case

# Conv geometry through conv_geometry: SAME with strides, VALID 1-D, pads with a stride that leaves a tail.
# (SAME with dilations has no reference here: onnxruntime refuses it and onnx.reference pads it wrongly.)
case("Conv", R(1, 2, 9, 8), W(3, 2, 3, 3), W(3), auto_pad="SAME_UPPER", strides=[2, 3])
case("Conv", R(1, 2, 9, 8), W(3, 2, 3, 2), auto_pad="SAME_LOWER", strides=[3, 2])
case("Conv", R(2, 3, 17), W(4, 3, 4), auto_pad="VALID", strides=[3])
case("Conv", R(1, 3, 10, 9), W(2, 3, 3, 3), pads=[2, 0, 1, 2], strides=[3, 2])
# Conv paths: grouped (per-group im2col), Winograd-sized 3x3 stride 1 with a constant weight, 1x1 at batch 1.
case("Conv", R(1, 6, 8, 8), W(4, 3, 3, 3), W(4), group=2, strides=[2, 1], dilations=[1, 2], pads=[1, 2, 1, 2])
case("Conv", R(1, 8, 40, 40), W(16, 8, 3, 3, lo=-0.2, hi=0.2), W(16), pads=[1, 1, 1, 1], tol=1e-4)
case("Conv", R(1, 24, 9, 11), W(7, 24, 1, 1), W(7))
# Off the CPU, columns over 16 MiB (and over a quarter of the conv's input and output) are made in bands of output
# rows, each written into the output in place (the first and last with their padding in H): five bands each here, one
# with pads, stride and dilation differing in H; then three at batch 2 (the middle one read in place where the device allows).
case("Conv", R(1, 64, 130, 256, lo=-1, hi=1), W(4, 64, 3, 3, lo=-0.1, hi=0.1), W(4), pads=[1, 1, 1, 1], tol=1e-4)
case("Conv", R(1, 64, 261, 256, lo=-1, hi=1), W(3, 64, 3, 3, lo=-0.1, hi=0.1), pads=[2, 1, 2, 1], strides=[2, 1],
     dilations=[2, 1], tol=1e-4)
case("Conv", R(2, 32, 100, 200, lo=-1, hi=1), W(3, 32, 3, 3, lo=-0.1, hi=0.1), W(3), pads=[1, 1, 1, 1], tol=1e-4)
case("Conv", R(1, 5, 10, 10), W(5, 1, 5, 5), group=5, auto_pad="SAME_UPPER")  # depthwise, no bias

# ConvTranspose with the weight (and bias) as graph inputs: flipped in the graph, not once on the host.
case("ConvTranspose", R(1, 4, 5, 5), R(4, 3, 3, 3), R(6), group=2, strides=[2, 2], pads=[1, 0, 0, 1])
case("ConvTranspose", R(2, 3, 6), R(3, 2, 3), strides=[3], output_padding=[1])  # 1D
case("ConvTranspose", R(1, 2, 4, 5), W(2, 3, 2, 3), strides=[2, 2], auto_pad="SAME_LOWER")
# output_shape: an odd total padding puts its extra unit at the start unless SAME_UPPER.
case("ConvTranspose", R(1, 2, 4, 4), W(2, 3, 3, 3), strides=[2, 2], output_shape=[8, 8])
case("ConvTranspose", R(1, 2, 4, 4), W(2, 3, 3, 3), W(3), strides=[2, 2], output_shape=[8, 7], auto_pad="SAME_UPPER")
case("ConvTranspose", R(1, 2, 4, 5), W(2, 3, 3, 3), strides=[2, 2], output_shape=[8, 10], auto_pad="SAME_LOWER")
# Stride equal to the kernel, no padding (FPN and U-Net upsampling): one 1x1 product, then sub-pixel placement.
case("ConvTranspose", R(2, 5, 6, 7), W(5, 3, 2, 2), W(3), strides=[2, 2])
case("ConvTranspose", R(1, 4, 3, 5), W(4, 2, 2, 3), strides=[2, 3], kernel_shape=[2, 3])
case("ConvTranspose", R(1, 6, 4, 4), W(6, 1, 2, 2), W(1), strides=[2, 2], pads=[0, 0, 0, 0], output_padding=[0, 0])
case("ConvTranspose", R(1, 4, 4, 4), W(4, 2, 2, 2), strides=[2, 2], output_padding=[1, 1])  # not sub-pixel: general path

# DeformConv (19): offsets move the taps; a mask scales them.
for g, og in ((1, 1), (2, 2)):
    case("DeformConv", R(1, 4, 6, 5), W(4, 4 // g, 3, 3), R(1, og * 18, 4, 3, lo=-1.5, hi=1.5), W(4),
         group=g, offset_group=og, opset=19)
case("DeformConv", R(2, 2, 7, 7), W(3, 2, 2, 2), R(2, 8, 3, 4, lo=-2, hi=2), None, R(2, 4, 3, 4, lo=0, hi=1),
     strides=[2, 2], pads=[0, 1, 0, 0], dilations=[2, 1], opset=22)

# CausalConvWithState (27): two outputs, the conv and the new state.
case("CausalConvWithState", R(2, 3, 7), W(3, 1, 4), W(3), R(2, 3, 3), outputs=2, opset=27)
case("CausalConvWithState", R(1, 5, 6), W(5, 1, 3), None, None, activation="silu", outputs=2, opset=27)
case("CausalConvWithState", R(1, 2, 1), R(2, 1, 4), None, R(1, 2, 3), activation="swish", outputs=2, opset=27)

# 3-D Conv and ConvTranspose (rank 5, N*C folded in ggml's last dim): an F32 im2col_3d and one product per group.
case("Conv", R(2, 3, 5, 6, 7), W(4, 3, 3, 3, 3), W(4), pads=[1, 1, 1, 1, 1, 1])
case("Conv", R(1, 4, 6, 7, 8), W(6, 2, 2, 3, 3), W(6), group=2, strides=[2, 1, 2], dilations=[1, 2, 1],
     pads=[0, 1, 2, 1, 0, 1])
case("Conv", R(1, 2, 5, 5, 5), W(3, 2, 3, 3, 3), auto_pad="SAME_UPPER", strides=[2, 2, 2])
case("Conv", R(2, 3, 4, 5, 6), R(5, 3, 1, 3, 3))  # weight as a graph input
case("ConvTranspose", R(1, 3, 3, 4, 5), W(3, 2, 3, 3, 3), W(2), strides=[2, 2, 2], pads=[1, 0, 1, 1, 1, 0])
case("ConvTranspose", R(2, 4, 3, 3, 4), W(4, 1, 2, 3, 2), W(2), group=2, strides=[1, 2, 2], output_padding=[0, 1, 1])
case("ConvTranspose", R(1, 2, 3, 4, 3), R(2, 3, 3, 2, 2), dilations=[2, 1, 1])  # weight flipped in the graph
