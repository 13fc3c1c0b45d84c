// ggml_mul_mat with the shared dim padded for ggml's fast CPU sgemm (see sgemm_pad.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// ggml_mul_mat(a, b); on the CPU (ctx.cpu) the shared dim (ne0) of large F32 products is zero-padded to a
// multiple of 16 when it is not one, because ggml's fast F32 sgemm (llamafile) needs it and the fallback is
// several times slower.
ggml_tensor* mul_mat_padded(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);

}  // namespace o2g
