// Op library, Matrix products: MatMul, Gemm, Einsum; fused attention.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
