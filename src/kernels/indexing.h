// Indexing CPU kernels ggml lacks, as ggml custom ops (the op library's lowerings: lib/indexing.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// out = d; out[off[k]] = reduce(out[off[k]], u[k]) in order (reduce: SCATTER_*). d, u: F32 or I32, contiguous,
// one type; off: I32 element offsets into d.
ggml_tensor* scatter_kernel(Ctx& ctx, ggml_tensor* d, ggml_tensor* u, ggml_tensor* off, int reduce);

// The K largest (or smallest) of each row of F32 x [n, rows...], ties by index -> values (F32) or indices (I32).
ggml_tensor* topk_kernel(Ctx& ctx, ggml_tensor* x, int64_t K, bool largest, bool indices);

// Running product over [outer, A, inner] of contiguous F32 or I32 x; integers wrap like the int64 reference.
struct CumKernelParams {
    int64_t outer, A, inner;
    bool exclusive, reverse;
};
ggml_tensor* cumprod_kernel(Ctx& ctx, ggml_tensor* x, const CumKernelParams& p);

// out [ne] = 0; out[off[k]] = x[k] (or += when add); off[k] < 0 skips (MaxUnpool, Col2Im). x contiguous.
ggml_tensor* place_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* off, const int64_t ne[4], bool add);

}  // namespace o2g
