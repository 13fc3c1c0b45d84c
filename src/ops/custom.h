// Lowering-side access to the exact CPU kernels (src/kernels/custom.h) for ops not yet written as op-library
// functions. Shapes are broadcast the ONNX way (rank > 4 folded) before the kernel sees them.
#pragma once
#include "kernels/custom.h"
#include "ops/op.h"

namespace onnx2ggml {

using o2g::BinaryK;
using o2g::keep_params;
using o2g::ReduceK;
using o2g::UnaryK;

inline ggml_tensor* custom_rows(Lower& L, ggml_tensor* x, ReduceK k) { return o2g::custom_rows(L.octx(), x, k); }
inline ggml_tensor* custom_unary(Lower& L, ggml_tensor* x, UnaryK k, float p0 = 0, float p1 = 0) {
    return o2g::custom_unary(L.octx(), x, k, p0, p1);
}
inline ggml_tensor* custom_binary(Lower& L, ggml_tensor* a, const Shape& sa, ggml_tensor* b, const Shape& sb,
                                  const Shape& out, BinaryK k) {
    return o2g::custom_binary(L.octx(), broadcast_to(L, a, sa, out), broadcast_to(L, b, sb, out), k);
}
inline ggml_tensor* custom_where(Lower& L, ggml_tensor* c, const Shape& sc, ggml_tensor* a, const Shape& sa,
                                 ggml_tensor* b, const Shape& sb, const Shape& out) {
    return o2g::custom_where(L.octx(), broadcast_to(L, c, sc, out), broadcast_to(L, a, sa, out),
                             broadcast_to(L, b, sb, out));
}

}  // namespace onnx2ggml
