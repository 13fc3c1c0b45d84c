// Op library: activations (see include/onnx2ggml/ops/activation.h).
#include <cmath>

#include "kernels/custom.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "lib/portable.h"
#include "onnx2ggml/ops.h"

namespace o2g {

ggml_tensor* prelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* slope) {
    int64_t ne[4];
    broadcast_ne(x, slope, ne);
    x = repeat_to(ctx, x, ne);
    ggml_tensor* neg = ggml_relu(ctx, ggml_neg(ctx, x));
    return ggml_sub(ctx, ggml_relu(ctx, x), ggml_mul(ctx, neg, slope));
}

ggml_tensor* elu(Ctx& ctx, ggml_tensor* x, const EluParams& p) { return custom_unary(ctx, x, UnaryK::EluA, p.alpha); }
ggml_tensor* selu(Ctx& ctx, ggml_tensor* x, const SeluParams& p) {
    return custom_unary(ctx, x, UnaryK::Selu, p.alpha, p.gamma);
}
ggml_tensor* celu(Ctx& ctx, ggml_tensor* x, const CeluParams& p) { return custom_unary(ctx, x, UnaryK::Celu, p.alpha); }
ggml_tensor* thresholded_relu(Ctx& ctx, ggml_tensor* x, const ThresholdedReluParams& p) {
    return custom_unary(ctx, x, UnaryK::ThresholdedRelu, p.alpha);
}

ggml_tensor* hard_sigmoid(Ctx& ctx, ggml_tensor* x, const HardSigmoidParams& p) {
    return ggml_clamp(ctx, ggml_scale_bias(ctx, x, p.alpha, p.beta), 0.0f, 1.0f);
}

ggml_tensor* hard_swish(Ctx& ctx, ggml_tensor* x, const HardSigmoidParams& p) {
    const bool onnx_form = std::fabs(p.alpha - 1.0f / 6.0f) < 1e-7f && p.beta == 0.5f;
    if (ctx.cpu && x->type == GGML_TYPE_F32) return hard_swish_cpu(ctx, x, onnx_form ? 1.0f / 6.0f : p.alpha, p.beta);
    // ggml's hardswish is x * clamp((x + 3) / 6, 0, 1): the usual 1/6, 1/2 in one pass.
    if (onnx_form) return ggml_hardswish(ctx, x);
    return ggml_mul(ctx, x, hard_sigmoid(ctx, x, p));
}

ggml_tensor* softplus(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Softplus); }
ggml_tensor* softsign(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Softsign); }
ggml_tensor* mish(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Mish); }

ggml_tensor* gelu(Ctx& ctx, ggml_tensor* x, const GeluParams& p) {
    if (!p.tanh) return ctx.cpu && x->type == GGML_TYPE_F32 ? gelu_erf_vec(ctx, x) : ggml_gelu_erf(ctx, x);
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    ggml_tensor* x3 = ggml_mul(ctx, ggml_sqr(ctx, x), x);
    ggml_tensor* in = ggml_scale(ctx, ggml_add(ctx, x, ggml_scale(ctx, x3, 0.044715f)), 0.7978845608028654f);
    ggml_tensor* t = ggml_scale_bias(ctx, ggml_tanh(ctx, in), 0.5f, 0.5f);
    return ggml_mul(ctx, x, t);
}

ggml_tensor* shrink(Ctx& ctx, ggml_tensor* x, const ShrinkParams& p) {
    if (x->type != GGML_TYPE_F32) throw OpError(std::string("shrink needs F32 input, not ") + ggml_type_name(x->type));
    return custom_unary(ctx, x, UnaryK::Shrink, p.lambd, p.bias);
}

// x sigmoid(a x) = silu(a x) / a: ggml's silu is vectorized where its sigmoid is not (and its gelu_quick, the a =
// 1.702 case, reads an f16 table); 1/a is kept away from overflow.
ggml_tensor* swish(Ctx& ctx, ggml_tensor* x, const SwishParams& p) {
    if (p.alpha == 1.0f) return ggml_silu(ctx, x);
    const float a = std::fabs(p.alpha);
    if (a > 1e-6f && a < 1e6f) return ggml_scale(ctx, ggml_silu(ctx, ggml_scale(ctx, x, p.alpha)), 1.0f / p.alpha);
    return ggml_mul(ctx, x, ggml_sigmoid(ctx, ggml_scale(ctx, x, p.alpha)));
}

ggml_tensor* swiglu(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const SwishParams& p) {
    if (!ggml_are_same_shape(a, b)) throw OpError("SwiGLU: A and B must have one shape (no broadcasting)");
    return ggml_mul(ctx, swish(ctx, a, p), b);
}

ggml_tensor* bias_split_gelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* bias) {
    const int64_t D = x->ne[0];
    if (D % 2 || ggml_nelements(bias) != D)
        throw OpError("bias_split_gelu: the last dim (" + std::to_string(D) + ") must be even and match the bias (" +
                      std::to_string(ggml_nelements(bias)) + " values)");
    ggml_tensor* h = ggml_add(ctx, cont(ctx, x), ggml_reshape_1d(ctx, cont(ctx, bias), D));
    auto half = [&](int64_t k) {
        return ggml_view_4d(ctx, h, D / 2, h->ne[1], h->ne[2], h->ne[3], h->nb[1], h->nb[2], h->nb[3],
                            size_t(k * (D / 2)) * h->nb[0]);
    };
    if (ctx.cpu && h->type == GGML_TYPE_F32) return mul_gelu_vec(ctx, half(0), half(1));
    if (ggml_tensor* y = portable_mul_gelu(ctx, half(0), half(1))) return y;
    return ggml_mul(ctx, ggml_cont(ctx, half(0)), gelu(ctx, ggml_cont(ctx, half(1)), GeluParams{}));
}

}  // namespace o2g
