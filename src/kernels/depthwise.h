// Depthwise 2-D convolution as a ggml custom op (see depthwise.cpp). Used by o2g::conv only when ctx.cpu.
#pragma once
#include "kernels/isa.h"
#include "onnx2ggml/ops.h"

namespace o2g {

O2G_ISA_BEGIN
// Dilation 1: x [W, H, C, N], k F32 [kW, kH, 1, C], bias F32 [C] or null.
ggml_tensor* conv2d_depthwise(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh, int pw,
                              int ph);
O2G_ISA_END

}  // namespace o2g
