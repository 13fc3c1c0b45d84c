// Op library, Activations: Relu, Sigmoid, SiLU, Gelu, LeakyRelu, Elu, Selu, HardSigmoid, Softplus, ....
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
