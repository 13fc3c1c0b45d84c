"""Movement ops: reshapes past rank 4, old-opset forms of Pad/Split/Slice/Reshape/Squeeze/Unsqueeze,
DepthToSpace/SpaceToDepth, CenterCropPad, ReverseSequence, casts and the host-evaluated constants (Constant,
EyeLike, BitCast)."""

import numpy as np
from onnx import TensorProto, numpy_helper

from op_case import I64, K, R, V, W, case

# Reshapes whose input or output has rank > 4 (ggml folds the outer dims).
case("Reshape", R(2, 3, 4, 5), I64(2, 3, 2, 2, 5), opset=14)
case("Reshape", R(2, 3, 2, 2, 5), I64(0, 0, -1), opset=14)  # 0 copies folded dims
case("Unsqueeze", R(2, 3, 4, 5), I64(2), opset=13)
case("Squeeze", R(2, 1, 3, 4, 5), I64(1), opset=13)
case("Flatten", R(2, 3, 2, 2, 5), axis=3)
case("Expand", R(3, 1), I64(2, 1, 1, 3, 4))
case("Transpose", R(2, 3), perm=[0, 1])  # identity
# Rank 5 and 6: regrouped into at most a few 4-dim ggml permutes.
case("Transpose", R(2, 5, 3, 4, 6), perm=[2, 0, 3, 1, 4])  # attention's qkv split (B, L, 3, H, D)
case("Transpose", R(2, 3, 2, 2, 4, 5), perm=[0, 1, 4, 2, 5, 3])  # PixelShuffle at opset 9 (N, C, r, r, H, W)
case("Transpose", R(2, 3, 4, 5, 6, 7), perm=[5, 3, 1, 4, 2, 0])  # every dim moves
case("Transpose", R(3, 1, 4, 1, 5), perm=[4, 3, 2, 1, 0])  # size-1 dims
case("Transpose", R(2, 3, 4, 5, 6), perm=[0, 1, 2, 4, 3])  # adjacent dims stay together: one permute
case("Slice", R(2, 3, 4, 5, 6), I64(1, 0), I64(3, -1), I64(1, 4), opset=13)  # rank 5
case("Concat", R(2, 3, 4, 5, 1), R(2, 3, 4, 5, 1), axis=-1)  # rank 5: Flux's rope stack
case("Split", R(2, 3, 4, 5, 2), axis=-1, outputs=2, opset=13)  # rank 5: a rotary embedding's unbind
case("Split", R(2, 3, 6, 2, 2, 3), I64(1, 5), axis=2, outputs=2, opset=13)  # rank 6, uneven
case("Concat", R(2, 1, 3, 2, 2, 3), R(2, 2, 3, 2, 2, 3), R(2, 3, 3, 2, 2, 3), axis=1)  # rank 6, three inputs
case("Slice", R(2, 3, 4, 5, 2, 2), I64(0, 1), I64(1, 2), I64(-2, -1), opset=13)  # rank 6, Flux's rope halves
case("Slice", R(2, 3, 4, 5, 6), I64(3, 0), I64(0, 6), I64(3, 4), I64(-1, 2), opset=13)  # rank 5, steps

# Old opsets: attributes where later opsets take inputs, and the first opset of each input form.
case("Pad", R(2, 3), pads=[1, 0, 0, 2], value=1.5, opset=2)
case("Pad", R(2, 3), pads=[0, 1, 2, 0], mode="edge", opset=10)
case("Pad", R(2, 3), I64(1, 0, 0, 2), K(2.5), opset=11)  # pads and value as inputs
case("Pad", R(2, 3, 4), I64(1, 2), None, I64(1), opset=18)  # axes input, no value
case("Pad", R(2, 3, 4), I64(1, 2), K(-1.0), I64(-1), mode="reflect", opset=19)
case("Split", R(6, 4), split=[2, 4], outputs=2, opset=2)
case("Split", R(6, 4), axis=1, outputs=2, opset=11)  # equal parts
case("Split", R(5, 4, dtype="int64", lo=-9, hi=9), split=[2, 3], outputs=2, opset=11)  # host data
case("Split", R(5, 4, dtype="int64", lo=-9, hi=9), num_outputs=2, outputs=2, opset=18)  # host data, uneven
case("Slice", R(5, 6), starts=[1], ends=[100], opset=1)  # no axes: leading axes, clamp
case("Slice", R(5, 6), starts=[1, 0], ends=[4, -1], axes=[0, 1], opset=9)
case("Slice", R(5, 6, dtype="int64", lo=-9, hi=9), starts=[1], ends=[3], axes=[1], opset=9)  # host data
case("Slice", R(5, 6), I64(1), I64(4), I64(1), I64(2), opset=10)  # inputs, with steps
case("Reshape", R(2, 3, 4), shape=[6, 4], opset=4)
case("Reshape", R(2, 3, 4), I64(0, -1), opset=5)
case("Reshape", R(2, 3, 4), I64(2, 0, -1), allowzero=0, opset=14)
case("Squeeze", R(2, 1, 3, 1), opset=11)  # no axes: all size-1 axes
case("Unsqueeze", R(2, 3), axes=[0, 3], opset=11)

case("DepthToSpace", R(1, 8, 2, 3), blocksize=2, opset=13)  # DCR
case("DepthToSpace", R(2, 12, 2, 2), blocksize=2, mode="CRD", opset=13)
case("SpaceToDepth", R(1, 3, 4, 6), blocksize=2, opset=13)
case("SpaceToDepth", R(2, 2, 6, 3), blocksize=3, opset=13)
case("SpaceToDepth", R(2, 3, 4, 6), blocksize=2, mode="CRD", opset=28)
case("SpaceToDepth", R(1, 2, 6, 3), blocksize=3, mode="DCR", opset=28)

case("CenterCropPad", R(5, 7), I64(3, 10), opset=18)  # crop one axis, pad the other
case("CenterCropPad", R(2, 6, 4), I64(4, 7), axes=[1, -1], opset=18)
case("CenterCropPad", R(3, 4, dtype="int64", lo=0, hi=9), I64(5, 2), opset=18)  # host data
case("ReverseSequence", R(4, 3, 2), K([4, 2, 3], "int64"), batch_axis=1, time_axis=0, opset=10)
case("ReverseSequence", R(3, 5), K([5, 1, 3], "int64"), batch_axis=0, time_axis=1, opset=10)
case("ReverseSequence", R(3, 4, dtype="int64", lo=0, hi=99), K([4, 1, 2], "int64"), batch_axis=0, time_axis=1,
     opset=10)

case("Cast", R(2, 3, dtype="int64", lo=-5, hi=5), to=TensorProto.BOOL)
case("Cast", R(3, 4, lo=-50, hi=50), to=TensorProto.BFLOAT16, tol=1e-2)
case("Cast", R(3, 4, dtype="float16"), to=TensorProto.FLOAT16)  # nothing to do

case("Constant", value=numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3)))
case("Constant", value_ints=[3, -1, 4])
case("Constant", value_float=2.5)
case("EyeLike", W(3, 4), k=1, opset=9)
case("EyeLike", W(4, 4), k=-2, dtype=TensorProto.INT64, opset=9)
case("BitCast", V([1.0, -2.5, 0.0], "float32"), to=TensorProto.INT32, opset=26)
case("BitCast", V([[1, -2], [3, 4]], "int64"), to=TensorProto.DOUBLE, opset=26)
