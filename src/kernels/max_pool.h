// 2-D max pooling on the CPU with the padding handled by skipping taps: no padded copy, no -inf mask add.
#pragma once
#include "kernels/isa.h"
#include "onnx2ggml/ops.h"

namespace o2g {

struct MaxPoolGeom {
    int64_t kw, kh, sw, sh, pw, ph, ow, oh;  // pw/ph: begin padding; taps past either edge are skipped
};
O2G_ISA_BEGIN
// x [W, H, C, N] F32 -> [ow, oh, C, N]. CPU only (a ggml custom op). Every window must hold an input tap.
ggml_tensor* max_pool2d_kernel(Ctx& ctx, ggml_tensor* x, const MaxPoolGeom& g);
// x [S, R] F32 -> [1, R]: each row's mean (global average pooling), summed in 16 float lanes per row, rows split
// between threads. ggml's MEAN runs on one thread with one serial double sum (SqueezeNet's last 1000 x 169: 0.4 ms,
// a tenth of the model). CPU only.
ggml_tensor* mean_rows_kernel(Ctx& ctx, ggml_tensor* x);

O2G_ISA_END
}  // namespace o2g
