// Op library, Matrix products: MatMul, Gemm, Einsum, and the padded ggml_mul_mat they (and convolutions) use.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once
#include "onnx2ggml/host_tensor.h"

namespace o2g {

// ggml_mul_mat(a, b) = a^T b over ne0. On the CPU, when the shared dim is not a multiple of 16 and the product
// is large, both operands are zero-padded to one first: ggml's fast F32 sgemm (llamafile) needs it and its
// fallback is several times slower.
ggml_tensor* mul_mat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
// ggml_mul_mat as every backend must compute it at the session's precision (exact mode: no TF32 on CUDA), with no
// CPU padding: for products whose operands are not worth copying (im2col columns, attention probabilities).
ggml_tensor* device_mul_mat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);

// Storage type of constant weight w in a product over shared dim K (MatMul, Gemm, convolutions): ctx.matmul_type
// (SessionOptions::weights) where w is F32 and ggml's kernels take rows of K (multiples of 32), else F32.
ggml_type product_weight_type(const Ctx& ctx, const ggml_tensor* w, int64_t K);
// Constant weight w's values in their order, stored as `type` with sizes `ne` (made once, at load; `kind` names it).
ggml_tensor* weight_as(Ctx& ctx, const ggml_tensor* w, const char* kind, ggml_type type, const int64_t ne[4]);
// Storage type of an exact product's packed panels (our CPU gemm, Winograd's taps): F16 where the weight came as f16
// (the kernels widen it on load, so products stay exact and the weight takes half the memory), else F32.
ggml_type panel_weight_type(const Ctx& ctx, const ggml_tensor* w);

struct MatMulParams {
    bool a_vector = false;  // A is 1-D (ONNX [K]): a row vector, its dim dropped from the result
    bool b_vector = false;  // B is 1-D (ONNX [K]): a column vector, its dim dropped from the result
    float swish_alpha = 0;  // matmul_bias only: 0, or the result becomes y sigmoid(alpha y) (CLIP's quick GELU)
    void fields(FieldWriter& f) const { f("a_vector", a_vector); f("b_vector", b_vector); f("swish_alpha", swish_alpha); }
};
// numpy matmul: A [..., M, K] x B [..., K, N] (ggml [K, M, ...] and [N, K, ...]) with broadcast batch dims. A
// constant weight B is transposed once (ctx.weights) and kept at ctx.matmul_type where its rows allow.
ggml_tensor* matmul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const MatMulParams& p);
// matmul(a, b) + bias [N] (fuse_matmul_bias), then p.swish_alpha's activation, then + residual (numpy broadcast;
// null: none). On the CPU's packed-weight path the kernel applies all three while it writes its output.
ggml_tensor* matmul_bias(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* bias, ggml_tensor* residual,
                         const MatMulParams& p);

struct GemmParams {
    bool trans_a = false;
    bool trans_b = false;
    float alpha = 1.0f;
    float beta = 1.0f;
    void fields(FieldWriter& f) const {
        f("trans_a", trans_a);
        f("trans_b", trans_b);
        f("alpha", alpha);
        f("beta", beta);
    }
};
// alpha * A' B' + beta * C for 2-D A and B (transposed when asked); C (may be null) broadcasts to [M, N].
ggml_tensor* gemm(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* c, const GemmParams& p);

struct EinsumParams {
    // Subscripts as ASCII letter codes, in ONNX axis order: of the first operand, of the second (empty with
    // one operand), and of the output. "bij,bjk->bik" is {98, 105, 106}, {98, 106, 107}, {98, 105, 107}.
    Ints a{}, b{}, out{};
    void fields(FieldWriter& f) const { f("a", a); f("b", b); f("out", out); }
};
// Einsum of one operand (permutes and sums) or two (a contraction through one batched ggml_mul_mat); no
// ellipsis, no repeated subscripts within an operand, ranks up to 4.
ggml_tensor* einsum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const EinsumParams& p);

struct MatMulNBitsParams {
    int64_t K = 0, N = 0;
    int64_t bits = 4;
    int64_t block_size = 0;
    void fields(FieldWriter& f) const {
        f("K", K);
        f("N", N);
        f("bits", bits);
        f("block_size", block_size);
    }
};
// com.microsoft MatMulNBits: a [..., K] times the block-quantized weight b (uint8 [N, K / block_size, blob],
// values packed low bits first; its data in b_data) dequantized as (q - zero point) * scale, + bias [N] (may be
// null). scales [N * blocks]; zero_points (empty: 2^(bits - 1)) packed uint8 or float [N * blocks]. The weight is
// dequantized once, kept at ctx.matmul_type where its rows allow (a derived weight), or per graph without a store.
ggml_tensor* matmul_nbits(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const HostTensor& b_data, const HostTensor& scales,
                          const HostTensor& zero_points, ggml_tensor* bias, const MatMulNBitsParams& p);

}  // namespace o2g
