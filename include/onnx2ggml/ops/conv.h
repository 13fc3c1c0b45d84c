// Op library, Convolutions: Conv, ConvTranspose (1-D and 2-D), depthwise and Winograd paths on the CPU.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
