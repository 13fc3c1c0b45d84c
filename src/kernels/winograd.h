// CPU convolution kernels (see winograd.cpp): Winograd 3x3, as ggml custom ops. Used by o2g::conv
// only when ctx.cpu.
#pragma once
#include "kernels/isa.h"
#include <cmath>

#include "kernels/conv_pointwise.h"  // ConvClamp
#include "onnx2ggml/ops.h"

namespace o2g {

O2G_ISA_BEGIN
// Output tile size for a 3x3 stride-1 convolution with OH*OW output pixels per image: 4 or 2, or 0 for the im2col
// path. Not the batch: an image gives the same bits at any batch size (a UNet with and without guidance).
// ONNX2GGML_WINOGRAD=0|2|4 forces one choice (measurements, tests).
int winograd_tile(int64_t image_pixels);
// x: [W, H, C, N]; w: a constant weight of ctx.weights [3, 3, C, CO] (f32: its gemm panels, shared with the im2col
// path, the forms made in the product; reduced precision: its stored forms); bias: F32 [CO] or null; symmetric pads
// pw, ph; act: a clamp applied in the output transform.
ggml_tensor* conv2d_winograd(Ctx& ctx, int m, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, int pw, int ph,
                             ConvClamp act = {});

O2G_ISA_END
}  // namespace o2g
