// ggml-op compositions standing in for our CPU kernels off the CPU (see portable.cpp). nullptr: none exists, and
// the caller keeps the CPU kernel. Also the pairwise join of a result computed in pieces.
#pragma once
#include <vector>

#include "kernels/custom.h"

namespace o2g {

ggml_tensor* portable_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0, float p1);
ggml_tensor* portable_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k);
ggml_tensor* portable_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* portable_pow_scalar(Ctx& ctx, ggml_tensor* x, float e);

// Elementwise ops the lowerings call: on the CPU our kernels (kernels/custom.h); off it (or with the portable path
// forced) a composition of ggml ops where one exists, else the kernel.
ggml_tensor* custom_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0 = 0, float p1 = 0);
ggml_tensor* custom_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k);
ggml_tensor* custom_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b);

// x * gelu_erf(g) of one shape (GEGLU) off the CPU: ggml's split GLU reads both operands, or the strided sources
// they were copied from, in place. nullptr where the rows are not evenly strided or the device lacks it.
ggml_tensor* portable_mul_gelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* g);
// The input of y when y is ggml's exact gelu; else null.
ggml_tensor* ggml_gelu_erf_input(ggml_tensor* y);

// Pieces of one result (im2col bands, attention chunks) joined along `dim` pairwise: each element is copied about
// log2(pieces) times, not pieces / 2.
ggml_tensor* concat_pairwise(Ctx& ctx, std::vector<ggml_tensor*> parts, int dim);

}  // namespace o2g
