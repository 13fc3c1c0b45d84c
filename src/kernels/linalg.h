// CPU kernel of Det (a ggml custom op).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Determinants of the [M, M] blocks of src 0 (ne [M, M * count]) -> dst [count], partial pivoting in double.
void det_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

}  // namespace o2g
