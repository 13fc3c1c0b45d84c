"""Activation cases."""

from onnx import helper, numpy_helper

from op_case import R, W, case

x = R(3, 4, 5, lo=-4, hi=4)
case("Elu", x)
case("Elu", x, alpha=0.5)
case("Selu", x)
case("Selu", x, alpha=1.5, gamma=2.0)
case("Celu", x, opset=12)
case("Celu", x, alpha=2.0, opset=12)
case("ThresholdedRelu", x, opset=10)
case("ThresholdedRelu", x, alpha=0.5, opset=10)
case("HardSwish", R(3, 4, 5, lo=-5, hi=5), opset=14)
case("Softplus", R(3, 4, 5, lo=-20, hi=20))
case("Softsign", x)
case("Mish", R(3, 4, 5, lo=-6, hi=6), opset=18)
case("PRelu", R(2, 3, 4, 4), W(3, 1, 1), opset=16)  # per channel
case("PRelu", R(2, 3, 4), W(4), opset=16)
case("PRelu", R(3, 5), R(1), opset=16)  # one slope, as a graph input


def prelu_6_as_7(model):
    """Opset-6 PRelu's per-channel slope [C], written as opset 7's broadcast [C, 1, 1] (no reference runs opset 6)."""
    m = type(model)()
    m.CopyFrom(model)
    for init in m.graph.initializer:
        arr = numpy_helper.to_array(init)
        init.CopyFrom(numpy_helper.from_array(arr.reshape(arr.shape + (1,) * 2), init.name))
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("", 7))
    return m


case("PRelu", R(2, 3, 4, 4), W(3), opset=6, ref_model=prelu_6_as_7)  # old exports: one slope per channel
case("Shrink", x, opset=9)
case("Shrink", x, lambd=1.5, bias=0.3, opset=9)
case("Swish", x, opset=24)
case("Swish", x, alpha=0.7, opset=24)
case("SwiGLU", R(2, 3, 8), R(2, 3, 8), opset=28)
case("SwiGLU", R(4, 6), R(4, 6), alpha=1.702, opset=28)
