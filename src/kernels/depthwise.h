// Depthwise 2-D convolution on NCHW with the bias and a clamp (ReLU6) applied while writing: each plane is copied
// once into a zero-padded, stride-phase-split buffer, so every tap is a contiguous 8-wide load and the accumulators
// of 16 output columns stay in registers across all taps.
#pragma once
#include "kernels/conv_pointwise.h"

namespace o2g {

// x [W, H, C, N] F32, k [kW, kH, 1, C] F32, bias [C] F32 or null; symmetric padding pw/ph, unit dilation ->
// [OW, OH, C, N]. CPU only (a ggml custom op).
ggml_tensor* conv2d_depthwise_clamp(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh,
                                    int pw, int ph, ConvClamp act);

}  // namespace o2g
