// Direct 2-D convolution on NCHW for few input channels per group (depthwise convs; dense stems such as 3 -> 32
// channels), with the bias and a clamp (ReLU6) applied while writing: a group's input planes are copied once into
// zero-padded, stride-phase-split buffers, so every tap is a contiguous 8-wide load and the accumulators of 16
// output columns stay in registers across all taps.
#pragma once
#include "kernels/isa.h"
#include "kernels/conv_pointwise.h"

namespace o2g {

O2G_ISA_BEGIN
// x [W, H, C, N] F32, k [kW, kH, C/groups, M] F32, bias [M] F32 or null; symmetric padding pw/ph, unit dilation
// -> [OW, OH, M, N]. CPU only (a ggml custom op).
ggml_tensor* conv2d_direct_clamp(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh, int pw,
                                 int ph, ConvClamp act);

O2G_ISA_END
}  // namespace o2g
