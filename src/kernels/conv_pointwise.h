// 1x1 convolution straight on the NCHW layout, with the bias and a clamp (ReLU, ReLU6/Clip) applied while the
// output is written: no transpose of the input, no separate bias add or activation pass.
#pragma once
#include "kernels/isa.h"
#include <cmath>

#include "onnx2ggml/ops.h"

namespace o2g {

// The activation applied in the epilogue: y = min(max(conv + bias, lo), hi); ±inf bounds (the default): none.
struct ConvClamp {
    float lo = -INFINITY, hi = INFINITY;
    bool active() const { return lo != -INFINITY || hi != INFINITY; }
    // On n contiguous floats, as selects (vectorized; a NaN compares false and stays).
    void apply(float* v, int64_t n) const {
        for (int64_t q = 0; q < n; q++) v[q] = v[q] < lo ? lo : v[q];
        for (int64_t q = 0; q < n; q++) v[q] = v[q] > hi ? hi : v[q];
    }
};

O2G_ISA_BEGIN
// x [W, H, C, N] (F32), w a constant weight [1, 1, C, M] (packed once into 6-row panels), bias [M] F32 or null ->
// y [W, H, M, N]. CPU only (a ggml custom op).
ggml_tensor* conv2d_pointwise(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ConvClamp act);

// x [A, B, N] F32 contiguous -> [B, A, N], in 32x32 blocks (ggml's cont of a permute copies element by element
// along the strided side). CPU only (a ggml custom op).
ggml_tensor* transpose_blocked(Ctx& ctx, ggml_tensor* x);

O2G_ISA_END
}  // namespace o2g
