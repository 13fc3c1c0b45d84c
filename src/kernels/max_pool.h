// 2-D max pooling on the CPU with the padding handled by skipping taps: no padded copy, no -inf mask add.
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

struct MaxPoolGeom {
    int64_t kw, kh, sw, sh, pw, ph, ow, oh;  // pw/ph: begin padding; taps past either edge are skipped
};
// x [W, H, C, N] F32 -> [ow, oh, C, N]. CPU only (a ggml custom op). Every window must hold an input tap.
ggml_tensor* max_pool2d_kernel(Ctx& ctx, ggml_tensor* x, const MaxPoolGeom& g);

}  // namespace o2g
