// Op library, Linear algebra: Det.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

// Det: determinants of x [M, M, batch...] -> [batch...] (partial pivoting in double, a ggml custom CPU kernel).
ggml_tensor* det(Ctx& ctx, ggml_tensor* x);

}  // namespace o2g
