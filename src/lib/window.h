// Layout helpers shared by the convolution and pooling lowerings (src/lib/conv.cpp, src/lib/pool.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Pads (positive) or crops (negative) the two spatial ggml dims 0 (W) and 1 (H).
ggml_tensor* pad_crop_2d(Ctx& ctx, ggml_tensor* x, int64_t wb, int64_t we, int64_t hb, int64_t he);
// x made contiguous F32.
ggml_tensor* f32_cont(Ctx& ctx, ggml_tensor* x);

}  // namespace o2g
