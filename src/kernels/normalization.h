// Normalization CPU kernels (ggml custom ops), for the op library's CPU paths (src/lib/normalization.cpp).
#pragma once
#include "kernels/isa.h"
#include "onnx2ggml/ops.h"

namespace o2g {

O2G_ISA_BEGIN
// Group norm of x [W, H, C, N] (contiguous F32) with per-channel gamma/beta [C] (F32): y = x * a + b per channel,
// mean and variance in double over two read passes, one work item per (group, image).
ggml_tensor* group_norm_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* gamma, ggml_tensor* beta, int64_t groups,
                               float eps);
O2G_ISA_END
// Each ggml row (ne0) divided by its L1 (p = 1) or L2 norm; 0 where the norm is 0 (sums in double).
ggml_tensor* lp_norm_rows(Ctx& ctx, ggml_tensor* x, int p);
// LRN across the channels of x [W, H, C, N] (contiguous F32).
ggml_tensor* lrn_kernel(Ctx& ctx, ggml_tensor* x, const LrnParams& p);

}  // namespace o2g
