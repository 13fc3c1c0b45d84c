// Rank > 4 in rows whose op-library function reads its layout from ne: ggml folds the outer ONNX dims into
// ne[3], so such rows reshape around the fold through recorded calls (compile refuses these nodes when the
// sizes differ between its probe shapes; rank <= 4 never needs them).
#pragma once
#include "ops/op.h"

namespace onnx2ggml {

// x with the ggml ne of ONNX shape s (made contiguous first when it must change).
inline ggml_tensor* reshape_ne(Lower& L, ggml_tensor* x, const Shape& s) {
    int64_t ne[4];
    shape_to_ne(s, ne);
    if (x->ne[0] == ne[0] && x->ne[1] == ne[1] && x->ne[2] == ne[2] && x->ne[3] == ne[3]) return x;
    x = O2G_CALL(L, o2g::cont, x);
    return O2G_CALL(L, ggml_reshape_4d, x, ne[0], ne[1], ne[2], ne[3]);
}

// Product of s[b:e].
inline int64_t dims_prod(const Shape& s, size_t b, size_t e) {
    int64_t p = 1;
    for (size_t i = b; i < e && i < s.size(); i++) p *= s[i];
    return p;
}

}  // namespace onnx2ggml
