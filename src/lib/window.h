// Layout helpers shared by the convolution and pooling lowerings (src/lib/conv.cpp, conv3d.cpp, pool.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Pads (positive) or crops (negative) the two spatial ggml dims 0 (W) and 1 (H).
ggml_tensor* pad_crop_2d(Ctx& ctx, ggml_tensor* x, int64_t wb, int64_t we, int64_t hb, int64_t he);

// ConvTranspose weight [Cin, Cog, kH, kW] -> Conv weight [Cog*group, Cin/group, kH, kW], every tap reversed (a
// 3-D kernel passes kD*kH as kH: reversing the flattened taps flips every axis). On the host for a constant weight,
// in the graph otherwise.
void flip_for_conv_transpose(const float* f, float* o, int64_t Cin, int64_t Cog, int64_t kH, int64_t kW,
                             int64_t group);
ggml_tensor* flip_in_graph(Ctx& ctx, ggml_tensor* w, int64_t Cin, int64_t Cog, int64_t kH, int64_t kW,
                           int64_t group);

// 3-D Conv and ConvTranspose (src/lib/conv3d.cpp), which o2g::conv and o2g::conv_transpose call for dims 3.
ggml_tensor* conv3d(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p);
ggml_tensor* conv_transpose3d(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias,
                              const ConvTransposeParams& p);

}  // namespace o2g
