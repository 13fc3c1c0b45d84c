#!/usr/bin/env python3
"""Per-op tests in the style of ggml's test-backend-ops.

Each case is one ONNX node with explicit attributes, input shapes/dtypes,
opset and tolerance.  The harness builds a one-node model with
onnx.helper, draws seeded random inputs, runs onnxruntime as the reference
and the onnx2ggml CLI as the subject, and compares:
  * shape and dtype exactly;
  * float outputs: max abs error and relative error
    (max abs error / max abs reference) against the case tolerance;
  * integer and bool outputs: exact equality.

Usage:
  tests/op_tests.py                 run every case against build/onnx2ggml
  tests/op_tests.py --list          print the cases
  tests/op_tests.py --filter Conv   cases whose op (or id, e.g. 'Conv#3')
                                    fully matches the regex
  tests/op_tests.py --runner ort    run the onnxruntime stand-in (harness check)
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import sys
import tempfile
import zlib
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import metrics  # noqa: E402
from cli_common import DEFAULT_CLI, cli_prefix, from_npy, one_line, run_model, runner_prefix, sanitize_name, to_npy  # noqa: E402

from op_case import CASES, DEFAULT_OPSET, DEFAULT_TOL, Case, In, I64, K, R, V, W, case, op_name  # noqa: E402,F401

# --------------------------------------------------------------------------
# The cases.  Shapes are small but odd-sized so that off-by-one errors in
# padding, strides and broadcasting show up.


def conv_cases():
    x = R(1, 3, 8, 8)
    case("Conv", x, W(4, 3, 3, 3), W(4), pads=[1, 1, 1, 1])
    case("Conv", x, W(4, 3, 3, 3), pads=[0, 1, 2, 1], strides=[2, 1])  # asymmetric pads
    case("Conv", x, W(4, 3, 3, 3), W(4), dilations=[2, 2], pads=[2, 2, 2, 2])
    case("Conv", R(2, 3, 9, 7), W(5, 3, 3, 5), W(5), pads=[1, 2, 1, 2], strides=[2, 3])
    case("Conv", R(1, 4, 7, 7), W(6, 2, 3, 3), W(6), group=2, pads=[1, 1, 1, 1])
    case("Conv", R(1, 6, 9, 9), W(6, 1, 3, 3), W(6), group=6, strides=[2, 2], pads=[1, 1, 1, 1])  # depthwise
    case("Conv", R(1, 2, 7, 7), W(3, 2, 4, 4), auto_pad="SAME_UPPER", strides=[2, 2])
    case("Conv", R(1, 2, 7, 7), W(3, 2, 4, 4), auto_pad="SAME_LOWER", strides=[2, 2])
    case("Conv", R(1, 2, 8, 6), W(3, 2, 2, 3), W(3), auto_pad="SAME_UPPER")
    case("Conv", R(1, 2, 7, 7), W(3, 2, 3, 3), auto_pad="VALID", strides=[2, 2])
    case("Conv", R(2, 3, 5, 5), W(8, 3, 1, 1))  # 1x1, no bias, batch 2
    case("Conv", R(1, 3, 16), W(5, 3, 3), W(5), strides=[2], pads=[1, 2])  # 1D
    case("Conv", R(1, 4, 15), W(4, 1, 5), group=4, dilations=[2], pads=[4, 4])  # 1D depthwise dilated
    # 3-D Conv is not supported yet: it must fail with a clear error (xfail).
    case("Conv", R(1, 2, 5, 6, 7), W(3, 2, 3, 3, 3), W(3), pads=[1, 1, 1, 1, 1, 1])
    case("Conv", x, R(4, 3, 3, 3), R(4), pads=[1, 1, 1, 1])  # weights as graph inputs


def conv_transpose_cases():
    case("ConvTranspose", R(1, 3, 5, 5), W(3, 2, 3, 3))
    case("ConvTranspose", R(1, 3, 5, 5), W(3, 2, 3, 3), W(2), strides=[2, 2])
    case("ConvTranspose", R(1, 3, 5, 5), W(3, 2, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])
    case("ConvTranspose", R(1, 3, 4, 6), W(3, 2, 3, 3), strides=[2, 3], pads=[0, 1, 1, 0])  # asymmetric pads
    case("ConvTranspose", R(1, 4, 4, 4), W(4, 3, 3, 3), W(6), group=2, strides=[2, 2])
    case("ConvTranspose", R(1, 4, 5, 5), W(4, 1, 3, 3), group=4, strides=[2, 2], pads=[1, 1, 1, 1])  # depthwise
    case("ConvTranspose", R(1, 2, 5, 5), W(2, 3, 3, 3), dilations=[2, 2])
    case("ConvTranspose", R(2, 3, 7), W(3, 4, 4), W(4), strides=[2], pads=[1, 1])  # 1D
    case("ConvTranspose", R(1, 2, 4, 4), W(2, 2, 3, 3), strides=[2, 2], output_shape=[9, 10])
    case("ConvTranspose", R(1, 2, 4, 4), W(2, 2, 4, 4), strides=[2, 2], auto_pad="SAME_UPPER")


def normalization_cases():
    case("InstanceNormalization", R(2, 3, 5, 5), W(3), W(3))
    case("InstanceNormalization", R(1, 4, 10), W(4), W(4), epsilon=1e-2)
    # GroupNormalization-18: scale/bias per group; -21: per channel.
    case("GroupNormalization", R(2, 6, 4, 4), W(3), W(3), num_groups=3, opset=18)
    case("GroupNormalization", R(2, 6, 4, 4), W(6), W(6), num_groups=3, opset=21)
    case("GroupNormalization", R(1, 4, 9), W(4), W(4), num_groups=1, epsilon=1e-3, opset=21)
    case("GroupNormalization", R(2, 4, 3, 3), W(4), W(4), num_groups=4, opset=21)
    case("LayerNormalization", R(2, 5, 8), W(8), W(8), axis=-1)
    case("LayerNormalization", R(2, 5, 8), W(5, 8), W(5, 8), axis=-2)
    case("LayerNormalization", R(2, 5, 8), W(8), axis=-1, epsilon=1e-3)  # no bias
    case("LayerNormalization", R(3, 4, 6), W(4, 6), W(4, 6), axis=1)
    case("LayerNormalization", R(4, 16), W(16), W(16))  # default axis -1
    bn = [W(3), W(3), W(3), W(3, lo=0.5, hi=2.0)]  # scale, B, mean, var > 0
    case("BatchNormalization", R(2, 3, 4, 4), *bn, opset=15)
    case("BatchNormalization", R(2, 3, 7), *bn, epsilon=1e-2, opset=15)
    case("BatchNormalization", R(5, 3), *bn, opset=15)
    case("BatchNormalization", R(1, 3, 4, 4), *bn, opset=9)


def resize_cases():
    x = R(1, 2, 4, 5)
    up2 = K([1, 1, 2, 2], "float32")
    down = K([1, 1, 0.5, 0.7], "float32")  # no source index lands on a rounding edge
    odd = K([1, 1, 1.5, 1.7], "float32")
    for mode in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        case("Resize", x, None, odd, mode="nearest", nearest_mode=mode,
             coordinate_transformation_mode="asymmetric", opset=19)
    for ctm in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "tf_half_pixel_for_nn"):
        case("Resize", x, None, odd, mode="nearest", coordinate_transformation_mode=ctm, opset=19)
    case("Resize", x, None, up2, mode="nearest", opset=19)  # defaults: half_pixel, round_prefer_floor
    case("Resize", x, None, down, mode="nearest", nearest_mode="floor", opset=19)
    for ctm in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"):
        case("Resize", x, None, odd, mode="linear", coordinate_transformation_mode=ctm, opset=19)
    case("Resize", x, None, up2, mode="linear", opset=19)
    case("Resize", x, None, down, mode="linear", coordinate_transformation_mode="pytorch_half_pixel", opset=19)
    # sizes instead of scales
    case("Resize", x, None, None, I64(1, 2, 7, 3), mode="nearest", opset=19)
    case("Resize", x, None, None, I64(1, 2, 9, 11), mode="linear", coordinate_transformation_mode="align_corners", opset=19)
    case("Resize", x, None, None, I64(1, 2, 3, 8), mode="linear", opset=13)
    case("Resize", x, K([], "float32"), up2, mode="nearest", opset=11)  # opset 11: roi input present but empty
    case("Resize", x, None, up2, mode="cubic", opset=19)
    # an empty axis stays empty (found by tests/fuzz: "on % in" divided by zero)
    case("Resize", R(1, 2, 0, 5), None, up2, mode="nearest", opset=19)
    case("Resize", R(1, 2, 4, 0), None, None, I64(1, 2, 8, 0), mode="linear", opset=19)


def matmul_cases():
    case("MatMul", R(3, 4), R(4, 5))
    case("MatMul", R(2, 3, 4), R(2, 4, 5))
    case("MatMul", R(2, 3, 4), W(4, 5))  # weights
    case("MatMul", R(4, 5), R(2, 5, 6))  # broadcast A
    case("MatMul", R(2, 1, 3, 4), R(1, 3, 4, 5))  # 4D two-sided broadcast
    case("MatMul", R(4), R(4, 5))  # 1D left operand
    case("MatMul", R(2, 3, 4), R(4))  # 1D right operand
    case("MatMul", R(7), R(7))  # both 1D -> scalar
    case("MatMul", R(64, 128), R(128, 32), tol=1e-5)
    case("Gemm", R(3, 4), R(4, 5), R(5))
    case("Gemm", R(4, 3), R(4, 5), R(3, 5), transA=1)
    case("Gemm", R(3, 4), W(5, 4), W(5), transB=1)  # the Linear layer pattern
    case("Gemm", R(4, 3), R(5, 4), R(3, 1), transA=1, transB=1, alpha=0.5, beta=2.0)
    case("Gemm", R(3, 4), R(4, 5), R(1, 5), alpha=-1.5)
    case("Gemm", R(3, 4), R(4, 5), R(), beta=0.25)  # scalar C
    case("Gemm", R(3, 4), R(4, 5), opset=13)  # no C


def softmax_cases():
    x = R(2, 3, 4)
    for axis in (-1, 0, 1, 2, -2):
        case("Softmax", x, axis=axis, opset=13)
    # Opset < 13: input is coerced to 2D at `axis` and softmax runs over the
    # flattened trailing dims.
    case("Softmax", x, opset=11)  # default axis=1 -> over dims 1 and 2
    case("Softmax", x, axis=0, opset=11)
    case("Softmax", x, axis=2, opset=11)
    case("Softmax", R(2, 3, 4, 5, lo=-20, hi=20), axis=-1, opset=13)  # large logits
    case("LogSoftmax", x, axis=-1, opset=13)
    case("LogSoftmax", x, axis=1, opset=11)


def einsum_cases():
    case("Einsum", R(2, 3, 4), R(2, 4, 5), equation="bij,bjk->bik", opset=12)
    case("Einsum", R(2, 2, 3, 4), R(2, 2, 5, 4), equation="bhqd,bhkd->bhqk", opset=12)
    case("Einsum", R(3, 4), equation="ij->ji", opset=12)
    case("Einsum", R(6), R(6), equation="i,i->", opset=12)
    case("Einsum", R(2, 3, 4), R(5, 4), equation="bid,jd->bij", opset=12)


def unary_cases():
    x = R(3, 4, 5)
    for op in ("Sigmoid", "Tanh", "Sin", "Cos", "Relu", "Erf", "Abs", "Neg"):
        case(op, x)
    case("Erf", R(64, lo=-4, hi=4))
    # a diffusion timestep embedding's arguments reach ~1000: off the CPU they are reduced to [-pi, pi] first
    case("Sin", R(1024, lo=-3000, hi=3000), tol=1e-6)
    case("Cos", R(1024, lo=-3000, hi=3000), tol=1e-6)
    case("Exp", R(3, 4, 5, lo=-5, hi=5))
    case("Log", R(3, 4, 5, lo=0.01, hi=10))
    case("Sqrt", R(3, 4, 5, lo=0, hi=10))
    case("Gelu", R(4, 17, lo=-5, hi=5), opset=20)
    case("Gelu", R(4, 17, lo=-5, hi=5), approximate="tanh", opset=20)
    case("LeakyRelu", x)
    case("LeakyRelu", x, alpha=0.2)
    case("HardSigmoid", R(3, 4, 5, lo=-6, hi=6))
    case("HardSigmoid", R(3, 4, 5, lo=-6, hi=6), alpha=0.5, beta=0.3)
    case("Pow", R(3, 4, lo=0.1, hi=3), R(3, 4, lo=-2, hi=2))
    case("Pow", R(3, 4), K(2.0, "float32"))  # square, negative bases fine
    case("Pow", R(3, 4, lo=0, hi=5), K(0.5, "float32"))
    case("Pow", R(2, 3, 4, lo=0.1, hi=3), R(4, lo=-1, hi=2))  # broadcast exponent
    case("Pow", R(3, 4, lo=0.5, hi=2), K(3, "int64"))  # integer exponent type
    # Clip: min/max as inputs from opset 11, as attributes before.
    case("Clip", x, K(-0.5, "float32"), K(0.7, "float32"), opset=13)
    case("Clip", x, K(-0.5, "float32"), opset=13)  # min only
    case("Clip", x, None, K(0.3, "float32"), opset=13)  # max only
    case("Clip", x, opset=13)  # no bounds: identity
    case("Clip", R(3, 4, dtype="int64", lo=-10, hi=10), K(-3, "int64"), K(4, "int64"), opset=13)
    case("Clip", x, min=-0.2, max=0.4, opset=6)
    case("Clip", x, min=-0.2, opset=6)


def binary_cases():
    shape_pairs = [
        ((2, 3, 4), (2, 3, 4)),
        ((2, 3, 4), (4,)),
        ((2, 1, 4), (3, 1)),  # two-sided broadcast -> (2, 3, 4)
        ((1, 3, 1), (2, 1, 5)),
        ((), (2, 3)),  # scalar left
        ((2, 3), (1,)),
    ]
    for op in ("Add", "Sub", "Mul", "Div"):
        for a, b in shape_pairs:
            divisor = dict(lo=0.5, hi=2.0) if op == "Div" else {}
            case(op, R(*a), R(*b, **divisor))
    case("Add", R(2, 3, dtype="int64", lo=-100, hi=100), R(3, dtype="int64", lo=-100, hi=100))
    case("Mul", R(2, 3, dtype="int32", lo=-100, hi=100), R(2, 3, dtype="int32", lo=-100, hi=100))
    # Integer Div truncates toward zero; values chosen to cover negative operands.
    case("Div", V([[7, -7, 9], [-9, 5, 0]], "int64"), V([[2, 2, -4], [4, -3, 7]], "int64"))
    case("Sub", R(4, dtype="int64", lo=-5, hi=5), W(2, 1, dtype="int64", lo=-5, hi=5))
    case("Add", R(2, 3, 4), W(3, 4))  # bias-like initializer


def logic_cases():
    case("Where", R(2, 1, 4, dtype="bool"), R(2, 3, 4), R(4))
    case("Where", R(3, 4, dtype="bool"), R(3, 4, dtype="int64", lo=-9, hi=9), K(0, "int64"))
    case("Where", R(1, 4, dtype="bool"), R(3, 1), R())
    # Small integer ranges cast to float make ties, so Equal sees true cases.
    ties = dict(lo=-2, hi=3)
    case("Equal", R(3, 4, dtype="int64", **ties), R(4, dtype="int64", **ties))
    case("Equal", R(2, 3, 4, dtype="int32", **ties), R(3, 1, dtype="int32", **ties))
    case("Equal", V([[1.0, 2.0, -0.0], [np.inf, 1.5, 0.1]], "float32"), V([1.0, 2.5, 0.0], "float32"))
    case("Equal", R(2, 3, dtype="bool"), R(2, 3, dtype="bool"))
    for op in ("Less", "Greater"):
        case(op, R(2, 3, 4), R(4))
        case(op, R(3, 1), R(1, 4))
        case(op, R(3, 4, dtype="int64", **ties), R(3, 4, dtype="int64", **ties))
    case("Not", R(3, 4, dtype="bool"))
    case("And", R(2, 3, dtype="bool"), R(3, dtype="bool"))
    case("Or", R(2, 3, dtype="bool"), R(2, 1, dtype="bool"))


def shape_cases():
    case("Trilu", R(4, 5), opset=14)  # upper, k=0
    case("Trilu", R(4, 5), upper=0, opset=14)
    case("Trilu", R(2, 4, 5), I64(1), opset=14)
    case("Trilu", R(2, 4, 5), K(-1, "int64"), upper=0, opset=14)
    case("Trilu", R(5, 3), K(-2, "int64"), opset=14)
    case("Trilu", R(3, 4, dtype="int64", lo=-9, hi=9), K(1, "int64"), upper=0, opset=14)
    case("Expand", R(3, 1), I64(2, 3, 4))
    case("Expand", R(2, 1, 6), I64(3, 1))  # shape of lower rank, broadcast both ways
    case("Expand", R(1, 4, dtype="int64", lo=0, hi=9), I64(3, 4))
    case("Tile", R(2, 3), I64(2, 2))
    case("Tile", R(2, 3, 4), I64(1, 3, 1))
    case("Tile", R(2, 3, dtype="int64", lo=0, hi=9), I64(3, 1))
    case("Range", K(1.0, "float32"), K(7.5, "float32"), K(1.5, "float32"), opset=11)
    case("Range", K(10, "int64"), K(-3, "int64"), K(-4, "int64"), opset=11)
    case("Range", K(0, "int32"), K(5, "int32"), K(1, "int32"), opset=11)
    case("ConstantOfShape", I64(2, 3), value=numpy_helper.from_array(np.array([1.5], np.float32)), opset=9)
    case("ConstantOfShape", I64(4), value=numpy_helper.from_array(np.array([7], np.int64)), opset=9)
    case("ConstantOfShape", I64(2, 1, 3), opset=9)  # default: float zeros
    x4 = R(2, 3, 4, 5)
    case("Shape", x4, opset=15)
    case("Shape", x4, start=1, opset=15)
    case("Shape", x4, start=1, end=-1, opset=15)
    case("Shape", x4, start=-2, opset=15)
    case("Shape", x4, start=-10, end=10, opset=15)  # out-of-range start/end clamp
    case("Size", R(2, 3, 4))
    case("Identity", R(2, 3))
    case("Identity", R(4, dtype="int64", lo=0, hi=9))
    case("Dropout", R(3, 4), opset=13)  # inference: identity
    case("Dropout", R(3, 4), outputs=2, opset=13)  # plus an all-true mask
    case("Dropout", R(3, 4), K(0.3, "float32"), opset=13)


def gather_slice_cases():
    case("Gather", R(5, 4), K([[0, -1, 2], [4, 1, -5]], "int64"), axis=0)
    case("Gather", R(3, 5), K([4, 0, -2], "int64"), axis=1)
    case("Gather", R(2, 3, 4), K([3, -4], "int64"), axis=-1)
    case("Gather", R(5, 4), K(-1, "int64"), axis=0)  # scalar index drops the axis
    case("Gather", R(5, 4, dtype="int64", lo=0, hi=99), K([1, 3], "int64"), axis=0)
    case("Gather", R(6, 3), R(2, 2, dtype="int64", lo=-6, hi=6), axis=0)  # runtime indices
    case("Gather", W(10, 4), R(2, 3, dtype="int64", lo=0, hi=10))  # embedding lookup
    case("GatherElements", R(3, 4), K([[0, 2, 1, -1], [2, 0, -3, 1]], "int64"), axis=0)
    case("GatherElements", R(3, 4), K([[3, 0], [-1, 1], [2, 2]], "int64"), axis=1)
    case("GatherElements", R(2, 3, 4), R(2, 3, 2, dtype="int64", lo=-4, hi=4), axis=-1)
    x = R(5, 6, 7)
    case("Slice", x, I64(1), I64(4), I64(1), opset=13)
    case("Slice", x, I64(-1), I64(-1000), I64(0), I64(-1), opset=13)  # reverse axis 0
    case("Slice", x, I64(5, 1), I64(0, 6), I64(-1, 1), I64(-2, 2), opset=13)  # negative step, negative axis
    case("Slice", x, I64(0, 2), I64(2**62, -1), I64(2, 1), opset=13)  # clamp huge end
    case("Slice", x, I64(-3, 1, 1), I64(100, 5, 7), opset=13)  # no axes: leading axes, clamp
    case("Slice", x, I64(-100), I64(3), I64(-1), opset=13)  # clamp negative start
    case("Slice", x, I64(6, 1), I64(-100, 6), I64(-1, 1), I64(-3, 2), opset=13)
    case("Split", R(6, 4), I64(2, 4), opset=13, outputs=2)
    case("Split", R(2, 9), I64(2, 3, 4), axis=-1, opset=13, outputs=3)
    case("Split", R(4, 6), axis=1, opset=13, outputs=2)  # equal halves
    case("Split", R(7, 3), num_outputs=3, opset=18, outputs=3)  # uneven: 3, 3, 1
    case("Split", R(2, 8), axis=-1, num_outputs=4, opset=18, outputs=4)
    case("Split", R(6, 4), split=[1, 5], opset=11, outputs=2)  # attribute form
    case("Concat", R(2, 3), R(2, 1), R(2, 4), axis=-1)
    case("Concat", R(1, 3, 2), R(4, 3, 2), axis=0)
    case("Concat", R(2, 2, dtype="int64", lo=0, hi=9), K([[7, 8]], "int64"), axis=-2)


def reshape_cases():
    case("Squeeze", R(1, 3, 1, 4), I64(0), opset=13)
    case("Squeeze", R(2, 1, 3, 1), I64(-1, 1), opset=13)
    case("Squeeze", R(1, 3, 1, 4), opset=13)  # all size-1 axes
    case("Squeeze", R(3, 1, 4), axes=[1], opset=11)
    case("Unsqueeze", R(3, 4), I64(0, -1), opset=13)
    case("Unsqueeze", R(3, 4), I64(1, 3), opset=13)
    case("Unsqueeze", R(3, 4), axes=[-3], opset=11)
    case("Unsqueeze", R(), I64(0), opset=13)  # scalar -> [1]
    for axis in (0, 1, 2, -1):
        case("Flatten", R(2, 3, 4, 5), axis=axis)
    case("Transpose", R(2, 3, 4))  # default: reverse
    case("Transpose", R(2, 3, 4, 5), perm=[0, 2, 3, 1])
    case("Transpose", R(3, 5), perm=[1, 0])
    case("Transpose", R(2, 3, 4, 5), perm=[3, 1, 0, 2])
    case("Reshape", R(2, 3, 4), I64(4, -1), opset=14)
    case("Reshape", R(2, 3, 4), I64(0, 12), opset=14)  # 0 copies the dim
    case("Reshape", R(2, 3, 4), I64(-1), opset=14)


def pad_cases():
    x = R(1, 2, 4, 5)
    case("Pad", x, I64(0, 0, 1, 2, 0, 0, 2, 1), K(1.5, "float32"), mode="constant", opset=18)
    case("Pad", x, I64(0, 0, 1, 2, 0, 0, 2, 1), mode="constant", opset=13)  # default value 0
    case("Pad", x, I64(0, 0, 2, 3, 0, 0, 1, 2), mode="reflect", opset=18)
    case("Pad", x, I64(0, 0, 2, 3, 0, 0, 1, 2), mode="edge", opset=18)
    case("Pad", x, I64(0, 0, -1, 1, 0, 0, 2, -2), mode="constant", opset=18)  # negative pads crop
    case("Pad", x, I64(1, 2), K(-1.0, "float32"), I64(-1), mode="constant", opset=18)  # axes input
    case("Pad", x, I64(1, 0, 0, 2), None, I64(-2, 3), mode="reflect", opset=18)
    case("Pad", R(3, 4), I64(1, 1, 1, 1), mode="wrap", opset=19)
    case("Pad", R(3, 4, dtype="int64", lo=0, hi=9), I64(1, 0, 0, 2), K(-7, "int64"), opset=18)
    case("Pad", R(3, 4), pads=[0, 1, 2, 0], value=2.0, opset=10)  # attribute form


def cast_cases():
    T = TensorProto
    floats = R(3, 5, lo=-20, hi=20)
    case("Cast", floats, to=T.INT64)  # truncation toward zero
    case("Cast", floats, to=T.INT32)
    case("Cast", R(3, 5, lo=0, hi=250), to=T.UINT8)
    case("Cast", R(3, 5, dtype="int64", lo=-1000, hi=1000), to=T.FLOAT)
    case("Cast", R(3, 5, dtype="int32", lo=-1000, hi=1000), to=T.INT64)
    case("Cast", R(3, 5, lo=-100, hi=100), to=T.FLOAT16)
    case("Cast", R(3, 5, dtype="float16"), to=T.FLOAT)
    case("Cast", V([[0.0, -0.0, 1.5], [np.nan, -2.0, 1e-8]], "float32"), to=T.BOOL,
         off_cpu="NaN casts to false: ggml ops have no comparison that is true for NaN")
    case("Cast", R(3, 5, dtype="bool"), to=T.FLOAT)
    case("Cast", R(3, 5, dtype="bool"), to=T.INT64)
    case("CastLike", R(3, 4, lo=-9, hi=9), K([0], "int64"), opset=15)
    narrow_cast_cases()


# Ties, overflow, subnormals, signed zero, inf and NaN for the narrow float formats (float8, float4e2m1).
NARROW_SPECIALS = [0.0, -0.0, 1.0, -1.5, 0.3, 464.0, 465.0, 448.0, 449.0, 500.0, -1e6, 57344.0, 61439.0, 61440.0,
                   240.0, 248.0, 6.0, 7.0, 2.5, 0.25, 0.75, 1e-3, -2**-9, 2**-10, 2**-17, 3 * 2**-17, 1e-20,
                   np.inf, -np.inf, np.nan]


def narrow_cast_cases():
    """float8, float4e2m1 and the 4- and 2-bit integers: cast on the host by ONNX's rounding and saturation rules.
    onnxruntime is the reference where it has the cast, onnx.reference (ml_dtypes) where not."""
    T = TensorProto
    specials = V(NARROW_SPECIALS, "float32")
    for to in (T.FLOAT8E4M3FN, T.FLOAT8E4M3FNUZ, T.FLOAT8E5M2, T.FLOAT8E5M2FNUZ):
        case("Cast", specials, to=to, opset=19)
        case("Cast", specials, to=to, saturate=0, opset=19)
        case("Cast", R(4, 9, lo=-600, hi=600), to=to, opset=19)
        case("Cast", R(3, 7, dtype="float16", lo=-65000, hi=65000), to=to, saturate=0, opset=19)
    case("Cast", V(NARROW_SPECIALS[:-1], "float32"), to=T.FLOAT4E2M1, opset=23)  # NaN: no float4 form
    case("Cast", R(4, 9, lo=-8, hi=8), to=T.FLOAT4E2M1, opset=23)
    for mode in ("up", "down", "nearest"):
        case("Cast", V([1.0, 1.5, 3.0, 0.7, 1e-40, 3e38, -6.0, np.inf, np.nan], "float32"), to=T.FLOAT8E8M0,
             round_mode=mode, opset=24)
    case("Cast", V([1.0, 2.0**-127, 2.0**127, 0.375, 3.0e38], "float32"), to=T.FLOAT8E8M0, saturate=0, opset=24)
    for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn"):
        case("Cast", V(np.arange(256 if name[5] == "8" else 16, dtype=np.uint8).view(name)), to=T.FLOAT, opset=23)
    case("Cast", V(np.arange(256, dtype=np.uint8).view("float8_e8m0fnu")), to=T.FLOAT16, opset=24)
    # Float to 4- and 2-bit ints truncates and keeps the low bits (ml_dtypes); ints wrap the same way.
    for to, opset in ((T.INT4, 21), (T.UINT4, 21), (T.INT2, 25), (T.UINT2, 25)):
        case("Cast", R(3, 7, lo=-20, hi=20), to=to, opset=opset)
        case("Cast", R(3, 7, dtype="int32", lo=-40, hi=40), to=to, opset=opset)
    for name, opset in (("int4", 21), ("uint4", 21), ("int2", 25), ("uint2", 25)):
        case("Cast", R(2, 9, dtype=name, lo=-8 if name[0] == "i" else 0, hi=8 if name[0] == "i" else 16), to=T.FLOAT,
             opset=opset)
    case("CastLike", R(3, 4, lo=-300, hi=300), V([0.0], "float8_e4m3fn"), opset=19)
    case("CastLike", V([1.5, -3.0, 7.0], "float8_e5m2"), R(1, lo=0, hi=1), opset=19)


def reduce_cases():
    x = R(2, 3, 4)
    # ReduceMean / ReduceMax: axes attribute before opset 18, input from 18.
    for op in ("ReduceMean", "ReduceMax"):
        case(op, x, axes=[1], keepdims=1)
        case(op, x, axes=[-1], keepdims=0)
        case(op, x, axes=[0, 2], keepdims=1)
        case(op, x, keepdims=0)  # all axes
        case(op, x, I64(1), keepdims=1, opset=18)
        case(op, x, I64(-1, 0), keepdims=0, opset=18)
        case(op, x, keepdims=1, opset=18)  # no axes input: reduce all
        case(op, x, noop_with_empty_axes=1, opset=18)  # no axes + noop: identity
    case("ReduceMax", R(3, 4, dtype="int64", lo=-50, hi=50), I64(1), keepdims=0, opset=18)
    # ReduceSum moved axes to an input already in opset 13.
    case("ReduceSum", x, axes=[1], keepdims=1, opset=11)
    case("ReduceSum", x, axes=[-2, -1], keepdims=0, opset=11)
    case("ReduceSum", x, I64(1), keepdims=1, opset=13)
    case("ReduceSum", x, I64(-1), keepdims=0, opset=13)
    case("ReduceSum", x, opset=13)  # all axes
    case("ReduceSum", x, noop_with_empty_axes=1, opset=13)
    case("ReduceSum", x, K([], "int64"), noop_with_empty_axes=1, opset=13)  # empty axes tensor
    case("ReduceSum", R(3, 4, dtype="int64", lo=-50, hi=50), I64(0), keepdims=0, opset=13)
    ties = R(3, 6, lo=0, hi=2, whole=True)  # values 0..2: repeated maxima
    case("ArgMax", R(3, 4, 5), axis=1, keepdims=1, opset=13)
    case("ArgMax", R(3, 4, 5), axis=-1, keepdims=0, opset=13)
    case("ArgMax", R(3, 4, 5), opset=13)  # default axis 0
    case("ArgMax", ties, axis=1, select_last_index=0, opset=13)
    case("ArgMax", ties, axis=1, select_last_index=1, opset=13)
    case("ArgMax", ties, axis=0, keepdims=0, select_last_index=1, opset=13)


def pool_cases():
    x = R(1, 2, 7, 7)
    case("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2])
    case("MaxPool", x, kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    case("MaxPool", x, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    case("MaxPool", x, kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 0, 1])  # asymmetric
    # pooling dilations are not supported yet: clear error expected (xfail).
    case("MaxPool", x, kernel_shape=[2, 2], dilations=[2, 2])
    case("MaxPool", x, kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    case("MaxPool", R(2, 3, 11), kernel_shape=[3], strides=[2], pads=[1, 1])  # 1D
    case("MaxPool", R(1, 2, 4, 4, lo=-10, hi=-1), kernel_shape=[3, 3], pads=[1, 1, 1, 1])  # pads never win
    case("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2])
    case("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=0)
    case("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    case("AveragePool", x, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    case("AveragePool", x, kernel_shape=[3, 3], strides=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1, opset=19)
    case("AveragePool", R(2, 3, 10), kernel_shape=[4], strides=[3], pads=[1, 2])  # 1D
    case("GlobalAveragePool", R(2, 3, 5, 5))
    case("GlobalAveragePool", R(1, 4, 7))
    case("GlobalMaxPool", R(2, 3, 5, 5))


for _build in (conv_cases, conv_transpose_cases, normalization_cases, resize_cases, matmul_cases,
               softmax_cases, einsum_cases, unary_cases, binary_cases, logic_cases, shape_cases,
               gather_slice_cases, reshape_cases, pad_cases, cast_cases, reduce_cases, pool_cases):
    _build()

# More cases, one file per op family (tests/op_cases/<family>.py calls case() when imported).
import importlib  # noqa: E402
import pkgutil  # noqa: E402

import op_cases  # noqa: E402

for _mod in sorted(m.name for m in pkgutil.iter_modules(op_cases.__path__)):
    importlib.import_module("op_cases." + _mod)


def _assign_ids() -> None:
    seen: dict[str, int] = {}
    for c in CASES:
        n = seen.get(op_name(c), 0)
        seen[op_name(c)] = n + 1
        c.id = f"{'ms.' if c.domain == 'com.microsoft' else ''}{c.op}#{n}"


_assign_ids()

# --------------------------------------------------------------------------
# Building and running a case


def make_inputs(c: Case) -> list[tuple[str, np.ndarray | None, bool]]:
    """(name, array, is_const) per node input; name '' for omitted ones."""
    rng = np.random.default_rng(zlib.crc32(c.id.encode()))
    out = []
    for k, spec in enumerate(c.inputs):
        if spec is None:
            out.append(("", None, False))
            continue
        arr = spec.value if spec.value is not None else random_array(rng, spec)
        out.append((f"{'w' if spec.const else 'x'}{k}", arr, spec.const))
    return out


NARROW_INTS = ("int4", "uint4", "int2", "uint2")  # ml_dtypes' names (numpy kind 'V')


def random_array(rng: np.random.Generator, spec: In) -> np.ndarray:
    dtype = np.dtype(spec.dtype)
    if dtype == bool:
        return rng.random(spec.shape) < 0.5
    if dtype.kind in "iu" or dtype.name in NARROW_INTS:
        lo = 0 if spec.lo is None else spec.lo
        hi = 10 if spec.hi is None else spec.hi
        return rng.integers(lo, hi, size=spec.shape).astype(dtype)
    if spec.lo is None:
        arr = rng.standard_normal(spec.shape)
    else:
        arr = rng.uniform(spec.lo, spec.hi, size=spec.shape)
    return (np.round(arr) if spec.whole else arr).astype(dtype)


def build_model(c: Case, inputs) -> onnx.ModelProto:
    outs = [f"y{k}" if k < c.outputs and (not c.out_types or c.out_types[k]) else "" for k in range(c.outputs)]
    node = helper.make_node(c.op, [name for name, _, _ in inputs], outs, name=f"{c.op}_node", domain=c.domain or None,
                            **c.attrs)
    outs = [o for o in outs if o]
    graph_inputs, inits = [], []
    for name, arr, const in inputs:
        if arr is None:
            continue
        if const:
            inits.append(numpy_helper.from_array(arr, name))
        else:
            elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, arr.shape))
    # Output types come from ONNX shape inference.
    graph = helper.make_graph([node], c.id.replace("#", "_"), graph_inputs,
                              [onnx.ValueInfoProto(name=o) for o in outs], inits)
    opsets = [helper.make_opsetid("", c.opset)] + ([helper.make_opsetid(c.domain, 1)] if c.domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = min(model.ir_version, 9)  # what onnxruntime 1.2x accepts
    known = _onnx_has(c)  # onnxruntime's contrib ops (some in the ONNX domain) have no ONNX schema
    if known:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    for k, out in enumerate(model.graph.output):
        if not known:  # no shape inference: the element type only
            types = [t for t in c.out_types if t] if c.out_types else []
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(types[k]) if types else inputs[0][1].dtype)
            out.type.CopyFrom(helper.make_tensor_type_proto(elem, None))
        elif not out.type.HasField("tensor_type") or not out.type.tensor_type.HasField("shape"):
            # Inference gives up on some function ops (GroupNormalization) and on Loop's outputs;
            # those used here are shape-preserving, like their first graph input.
            out.type.CopyFrom(model.graph.input[0].type)
    try:
        if known:
            onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        # GroupNormalization-18 is deprecated yet still found in models.
        if "deprecated" not in str(exc):
            raise
    return model


def _onnx_has(c: Case) -> bool:
    """Whether ONNX itself defines the case's op at its opset."""
    try:
        onnx.defs.get_schema(c.op, c.opset, c.domain)
        return True
    except onnx.defs.SchemaError:
        return False


def reference(model: onnx.ModelProto, feeds: dict) -> tuple[list[np.ndarray], str]:
    """Reference outputs and which implementation produced them:
    onnxruntime, or onnx's own ReferenceEvaluator for the few op versions
    onnxruntime lacks or gets wrong (it is the spec's executable form)."""
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # no deprecation chatter on stderr
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 4
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        return sess.run(None, feeds), "ort"
    except Exception as ort_exc:
        from onnx.reference import ReferenceEvaluator

        try:
            outs = ReferenceEvaluator(model).run(None, feeds)
        except Exception as ref_exc:
            raise RuntimeError(f"onnxruntime: {ort_exc}; onnx.reference: {ref_exc}") from ref_exc
        return [np.asarray(o) for o in outs], "onnx.reference"


def compare(got: np.ndarray, want: np.ndarray, tol: float | None) -> tuple[bool, str]:
    """(ok, summary).  Float outputs use relative error against `tol`;
    integer and bool outputs must match exactly."""
    if got.shape != want.shape:
        return False, f"shape {list(got.shape)}, expected {list(want.shape)}"
    if got.dtype != want.dtype:
        return False, f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind == "V" and want.dtype.itemsize == 1:  # float8/float4/int4...: exact, NaNs equal
        g, w = got.astype(np.float32), want.astype(np.float32)
        bad = int((~((g == w) | (np.isnan(g) & np.isnan(w)))).sum())
        return bad == 0, f"{bad}/{want.size} elements differ" if bad else "exact"
    if want.dtype.kind not in "fc":
        bad = int((got != want).sum())
        return bad == 0, f"{bad}/{want.size} elements differ" if bad else "exact"
    if tol is None:
        tol = DEFAULT_TOL.get(want.dtype, 1e-5)
    e = metrics.errors(want, got, zero_ref="abs")  # a NaN/inf mismatch makes e.rel infinite
    text = f"max abs err {e.abs:.3g}, rel err {e.rel:.3g} (tol {tol:g})"
    if e.nan_bad or e.inf_bad:
        text += f", {e.nan_bad} NaN and {e.inf_bad} inf mismatches"
    return e.rel <= tol, text


def run_case(c: Case, prefix: list[str], timeout: float) -> tuple[str, bool, str]:
    """(case id, passed, message)."""
    try:
        return _run_case(c, prefix, timeout)
    except Exception as exc:  # a harness bug must not hide the other cases
        return c.id, False, f"harness error: {type(exc).__name__}: {one_line(str(exc))}"


def _run_case(c: Case, prefix: list[str], timeout: float) -> tuple[str, bool, str]:
    try:
        inputs = make_inputs(c)
        model = build_model(c, inputs)
        feeds = {name: arr for name, arr, const in inputs if arr is not None and not const}
        want, ref_name = reference(c.ref_model(model) if c.ref_model else model, feeds)
    except Exception as exc:  # the case itself is wrong, or no reference has it
        return c.id, False, f"reference failed: {one_line(str(exc), 300)}"
    with tempfile.TemporaryDirectory(prefix="o2g_op_") as tmp:
        model_path = os.path.join(tmp, "model.onnx")
        onnx.save(model, model_path)
        named = []
        for vi in model.graph.input:
            path = os.path.join(tmp, f"{vi.name}.npy")
            np.save(path, to_npy(feeds[vi.name], vi.type.tensor_type.elem_type))
            named.append((vi.name, path))
        out_dir = os.path.join(tmp, "out")
        res = run_model(prefix, model_path, named, out_dir, timeout=timeout)
        if res.timed_out:
            return c.id, False, f"timeout after {timeout:g} s"
        if res.crash():
            return c.id, False, f"CRASH: {res.crash()}"
        if res.returncode != 0:
            return c.id, False, f"exit {res.returncode}: {one_line(res.error_line(), 300)}"
        cid, ok, msg = compare_outputs(c, model, out_dir, want)
        return cid, ok, msg if ref_name == "ort" else f"{msg} [reference: {ref_name}]"


def compare_outputs(c: Case, model, out_dir: str, want: list[np.ndarray]) -> tuple[str, bool, str]:
    notes, ok = [], True
    for k, (vi, ref) in enumerate(zip(model.graph.output, want)):
        path = os.path.join(out_dir, sanitize_name(vi.name))
        if not os.path.exists(path):
            return c.id, False, f"output {k}: no file {os.path.basename(path)}"
        got = from_npy(np.load(path, allow_pickle=False), vi.type.tensor_type.elem_type)
        good, text = compare(got, ref, c.tol)
        ok &= good
        notes.append(text if len(want) == 1 else f"out{k}: {text}")
    return c.id, ok, "; ".join(notes)


# --------------------------------------------------------------------------
# Driver


def select(pattern: str | None) -> list[Case]:
    if not pattern:
        return CASES
    rx = re.compile(pattern)
    return [c for c in CASES if rx.fullmatch(c.op) or rx.fullmatch(c.id) or rx.fullmatch(op_name(c))]


def tested_ops() -> set:
    """Ops with a case, as `onnx2ggml ops` names them ("domain:Op" for contrib ops); ops inside subgraph
    attributes count too (sequence ops run in Loop bodies). Also read by scripts/regenerate.py --check."""
    def ops_in(graph):
        for n in graph.node:
            yield n.op_type
            for a in n.attribute:
                if a.HasField("g"):
                    yield from ops_in(a.g)
    tested = {op_name(c) for c in CASES}
    for c in CASES:
        for v in c.attrs.values():
            if isinstance(v, onnx.GraphProto):
                tested.update(ops_in(v))
    return tested


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cli", default=DEFAULT_CLI, help="onnx2ggml binary (default: build/onnx2ggml)")
    p.add_argument("--runner", choices=("cli", "ort"), default="cli",
                   help="'ort' runs the subject with onnxruntime too (checks the harness)")
    p.add_argument("--filter", help="regex that must fully match the op type or the case id")
    p.add_argument("--list", action="store_true", help="print the selected cases and exit")
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per CLI run")
    p.add_argument("-q", "--quiet", action="store_true", help="print only failing cases")
    p.add_argument("--coverage", action="store_true",
                   help="fail if a registered op (onnx2ggml ops) has no case; run nothing else")
    args = p.parse_args()
    if args.coverage:
        import subprocess
        ops = subprocess.run(cli_prefix(args.cli) + ["ops"], capture_output=True, text=True, check=True).stdout.split()
        tested = tested_ops()
        missing = [op for op in ops if op not in tested and not op.startswith("onnx2ggml.")]
        print(f"op coverage: {len(ops) - len(missing)}/{len(ops)} registered ops have a case"
              + (f"; none for: {' '.join(missing)}" if missing else ""))
        return 1 if missing else 0

    cases = select(args.filter)
    if not cases:
        sys.exit("no cases selected")
    if args.list:
        for c in cases:
            print(c.describe())
        print(f"{len(cases)} cases, {len({c.op for c in cases})} ops")
        return 0
    if args.runner == "cli" and not os.access(args.cli, os.X_OK):
        sys.exit(f"CLI not found or not executable: {args.cli} (build it, or pass --cli / --runner ort)")
    prefix = cli_prefix(args.cli) if args.runner == "cli" else runner_prefix(args.cli, "ort")

    by_id = {c.id: c for c in cases}
    failed, xfailed, xpassed = [], [], []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, c, prefix, args.timeout) for c in cases]
        for fut in futures:  # in case order, so output reads like the list
            cid, ok, msg = fut.result()
            status = verdict(by_id[cid], ok, msg)
            {"FAIL": failed, "XFAIL": xfailed, "XPASS": xpassed}.get(status, []).append(cid)
            if status != "OK" or not args.quiet:
                print(f"{status:<5} {cid:<26} {msg}", flush=True)
    ops_failed = sorted({by_id[cid].op for cid in failed})
    print(f"\nop tests: {len(cases) - len(failed) - len(xfailed)}/{len(cases)} passed, "
          f"{len(failed)} failed, {len(xfailed)} known failures (xfail)"
          + (f"; xfail cases that now pass (drop their xfail): {', '.join(xpassed)}" if xpassed else "")
          + (f"; failing ops: {', '.join(ops_failed)}" if failed else ""))
    return 1 if failed else 0


OFF_CPU = os.environ.get("ONNX2GGML_PORTABLE") == "1" or os.environ.get("ONNX2GGML_DEVICE", "CPU").upper() != "CPU"


def verdict(c: Case, ok: bool, msg: str) -> str:
    """OK / FAIL, or for known limitations XFAIL (failed with a clean
    error exit, as unsupported features must) / XPASS (works now)."""
    if OFF_CPU and c.off_cpu and not ok:
        return "XFAIL"  # a documented difference of the ggml-op path (Case.off_cpu)
    if not c.xfail:
        return "OK" if ok else "FAIL"
    if ok:
        return "XPASS"
    return "XFAIL" if msg.startswith("exit ") else "FAIL"  # wrong values or a crash are real failures


if __name__ == "__main__":
    sys.exit(main())
