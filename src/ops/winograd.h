// Winograd 3x3 convolution on the CPU (see winograd.cpp), and the weight cache it shares with other lowerings.
#pragma once
#include <string>

#include "ops/op.h"

namespace onnx2ggml {

// A constant weight (input i) transformed once on the host and cached on the device under its name + suffix,
// stored as `type` (F32, or the reduced precision of --weights for matrix-product weights).
ggml_tensor* cached_weight(Lower& L, int i, const std::string& suffix, HostTensor (*fn)(const HostTensor&),
                           ggml_type type = GGML_TYPE_F32);

// Output tile size for a 3x3 stride-1 convolution with N*OH*OW output pixels: 4 or 2, or 0 for the im2col path.
// ONNX2GGML_WINOGRAD=0|2|4 forces one choice (measurements, tests).
int winograd_tile(int64_t out_pixels);
// x: ggml [W, H, C, N]; input wi: constant weight [CO, C, 3, 3]; bias: [CO] or null; symmetric pads pw, ph.
ggml_tensor* conv2d_winograd(Lower& L, int m, ggml_tensor* x, int wi, ggml_tensor* bias, int pw, int ph);

// Depthwise 2-D convolution on the CPU (dilation 1): x [W, H, C, N], k [kW, kH, 1, C], bias [C] or null.
ggml_tensor* conv2d_depthwise(Lower& L, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh, int pw,
                              int ph);

}  // namespace onnx2ggml
