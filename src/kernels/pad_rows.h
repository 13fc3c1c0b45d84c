// Row padding CPU kernel (ggml custom op), for the op library's padded mul_mat (src/lib/matmul.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// x (contiguous F32) with each row (ne0) widened by `pad` zeros.
ggml_tensor* pad_rows(Ctx& ctx, ggml_tensor* x, int64_t pad);

}  // namespace o2g
