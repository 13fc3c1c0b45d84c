// Layout helpers shared by the convolution and pooling lowerings (src/lib/conv.cpp, conv3d.cpp, pool.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Pads (positive) or crops (negative) the two spatial ggml dims 0 (W) and 1 (H).
ggml_tensor* pad_crop_2d(Ctx& ctx, ggml_tensor* x, int64_t wb, int64_t we, int64_t hb, int64_t he);

// 3-D helpers (src/lib/conv3d.cpp), shared by o2g::conv's and o2g::conv_transpose's 3-D paths. Rank-5 tensors
// arrive folded as [W, H, D, N*C].
ggml_tensor* conv3d(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p);
// Pads (positive) or crops (negative) ggml dims 0-2; b and e are in ggml order (W, H, D).
ggml_tensor* pad_crop_3d(Ctx& ctx, ggml_tensor* x, const int64_t b[3], const int64_t e[3]);
// Convolution of x [W, H, D, N*C] with k [kW, kH, kD, M*C/group] -> [OW, OH, OD, M*N]; padding symmetric (pd).
ggml_tensor* conv3d_core(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, int64_t N, int64_t C, int64_t M, int64_t group,
                         const int s[3], const int pd[3], const int d[3]);
// A 3-D ConvTranspose's checks (out_channels and group against the weight's C*M/group kernels, the input's N*C,
// kernel_shape); returns the input channels C.
int64_t check_conv_transpose3d(const ggml_tensor* x, const ggml_tensor* w, const ConvTransposeParams& p);
// y + bias [M] (checked: one value per output channel) over y [OW, OH, OD, M*N].
ggml_tensor* conv3d_bias(Ctx& ctx, ggml_tensor* y, ggml_tensor* bias, int64_t M);

}  // namespace o2g
