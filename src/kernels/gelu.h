// Exact (erf) GELU on the CPU, 8 floats at a time (ggml's calls erff once per element: 3% of an SD UNet step).
#pragma once
#include "kernels/isa.h"
#include "onnx2ggml/ops.h"

namespace o2g {

O2G_ISA_BEGIN
// 0.5 x (1 + erf(x / sqrt 2)) of contiguous F32 x, with 1 + erf(z) taken as erfc(-z): no cancellation for
// negative x. Relative error of erfc below 1.2e-7 (Numerical Recipes' Chebyshev fit); CPU only.
ggml_tensor* gelu_erf_vec(Ctx& ctx, ggml_tensor* x);
// The input of y when y is a gelu_erf_vec node (its strided source when the node copied one first); else null.
ggml_tensor* gelu_erf_input(ggml_tensor* y);
// a * gelu(g) in one pass over F32 tensors of one shape (GEGLU): rows are read through their strides.
ggml_tensor* mul_gelu_vec(Ctx& ctx, ggml_tensor* a, ggml_tensor* g);

O2G_ISA_END
}  // namespace o2g
