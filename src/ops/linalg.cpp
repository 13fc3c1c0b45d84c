// Linear algebra ONNX ops: Det (11, 22).
#include "ops/fold.h"
#include "ops/host.h"

namespace onnx2ggml {

void lower_Det(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 2 || xs[size_t(r - 1)] != xs[size_t(r - 2)]) L.error("input must be [..., M, M]");
    if (xs.back() == 0) L.error("empty matrices are not supported");
    Shape os(xs.begin(), xs.end() - 2);
    if (shape_numel(os) == 0) L.error("the output would be empty, which ggml cannot hold");
    ggml_tensor* x = L.t(0);
    ggml_tensor* y = O2G_CALL(L, o2g::det, x);
    // Rank > 4: y is [x ne2, folded x ne3]; the batch dims folded into ne3 need unfolding.
    L.out_shape(0, reshape_ne(L, y, os), L.dtype(0), os);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& linalg_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Det", .since = 11, .accepts = "in=1 out=1", .ggml = lower_Det, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
