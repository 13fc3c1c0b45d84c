// Concatenation CPU kernel (ggml custom op), for the op library's concat (src/lib/movement.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// a and b (contiguous, one type) joined along ggml dim `dim` by block copies: ggml's CPU concat copies one
// element at a time, with an index computation for each.
ggml_tensor* concat_blocks(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, int dim);

}  // namespace o2g
