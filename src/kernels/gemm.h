// CPU matrix product with a constant f32 weight (see gemm.cpp): Y = X W (+ bias), W packed once into 16-column
// panels. Used by o2g::matmul / o2g::gemm only when ctx.cpu and gemm_available().
#pragma once
#include "kernels/isa.h"
#include <cmath>

#include "kernels/conv_pointwise.h"  // ConvClamp
#include "onnx2ggml/ops.h"

namespace o2g {

// What gemm_const does to each finished output block while it is in cache, in this order.
struct GemmEpilogue {
    float swish = 0;                 // 0, or y sigmoid(swish y)
    ggml_tensor* residual = nullptr;  // null, or F32 of the output's shape [N, M, b2, b3], contiguous: added
};
constexpr int GEMM_PANEL = 16;
// The micro-kernel's register tile: rows, and panels side by side (callers round their blocks to these).
struct GemmTile {
    int rows, panels;
};

O2G_ISA_BEGIN
// Whether this build has the vector kernel (FMA or AVX-512); without it the product stays ggml's.
bool gemm_available();
// Whether a product of M rows, shared dim K and N columns should take this kernel (shape classes measured faster
// than ggml's MUL_MAT). ONNX2GGML_GEMM=0|1 forces the choice (measurements, tests).
bool gemm_wanted(int64_t M, int64_t K, int64_t N);
// x: F32 [K, M, b2, b3] (ggml order); w: a constant weight of ctx.weights, ONNX [K, N] (ggml [N, K]) or, when
// w_nk, ONNX [N, K] (ggml [K, N]); bias: F32 [N] or null. Returns ggml [N, M, b2, b3].
ggml_tensor* gemm_const(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, bool w_nk, ggml_tensor* bias,
                        const GemmEpilogue& ep = {});
// The same for a weight of any shape whose data is N rows of K (a convolution's [M, C, kH, kW]): x F32 [K, M, ...].
// transposed: x [K, M, B] gives [M, N, B] (M fastest: a convolution's NCHW output, with no transpose pass); only
// then `act`, a clamp on the finished sums (a fused ReLU/ReLU6).
ggml_tensor* gemm_const_rows(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, int64_t N, ggml_tensor* bias = nullptr,
                             bool transposed = false, ConvClamp act = {});
// The panels gemm_const_rows multiplies by: w (N rows of K) as [16, K, ceil(N/16)], made once per session. A 3x3
// convolution's (K = C*9) are also its taps for Winograd products that make their forms as they go.
ggml_tensor* gemm_row_panels(Ctx& ctx, ggml_tensor* w, int64_t N);
// B products at once (Winograd's A*A): x F32 [K, M, B], panels a constant F32 [16, K, ceil(N/16), B] (column
// n of product b at [n % 16, k, n / 16, b], zero past N). Returns [N, M, B], or [M, N, B] when transposed.
ggml_tensor* gemm_batched(Ctx& ctx, ggml_tensor* x, ggml_tensor* panels, int64_t N, bool transposed = false);

// The micro-kernel on its own, for kernels that make their panels as they go (the Winograd products): for each of
// `panels` panels (the i-th at panel + i ps, [kc][16]), the 16-column block C_i (at c + i cs, row stride ldc) =
// C_i (or 0 when `first`) + X[rows, kc] (row stride ldx) times the panel; the last panel has nv real columns.
// Returns false where this build has no vector kernel (gemm_available()).
bool gemm_panel_rows(const float* x, int64_t ldx, const float* panel, int64_t ps, int64_t panels, int64_t kc,
                     float* c, int64_t ldc, int64_t cs, int64_t rows, int nv, bool first);
GemmTile gemm_tile();  // panel width: output columns per panel

O2G_ISA_END
}  // namespace o2g
