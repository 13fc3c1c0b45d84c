// Op library: elementwise math (see include/onnx2ggml/ops/math.h).
#include <utility>

#include "kernels/custom.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "lib/portable.h"
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {
using Bin = ggml_tensor* (*)(ggml_context*, ggml_tensor*, ggml_tensor*);

bool full(const ggml_tensor* x, const int64_t ne[4]) {
    return x->ne[0] == ne[0] && x->ne[1] == ne[1] && x->ne[2] == ne[2] && x->ne[3] == ne[3];
}

// ggml broadcasts only its second operand, and calls its row kernel once per element when that operand is
// broadcast along ne0 (a scalar, a per-channel scale). On the CPU such cases take one broadcasting pass of our
// own; elsewhere commutative ops swap their operands, Sub negates, and only Div repeats its first operand.
ggml_tensor* binary(Ctx& ctx, Bin fn, ArithK k, ggml_tensor* a, ggml_tensor* b) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    const bool a_full = full(a, ne), b_full = full(b, ne);
    if (a_full && (b_full || b->ne[0] == ne[0])) return fn(ctx, a, b);
    if (ctx.cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32) return broadcast_arith(ctx, a, b, k);
    if (a_full) return fn(ctx, a, b);
    if (b_full && (k == ArithK::Add || k == ArithK::Mul)) return fn(ctx, b, a);
    if (b_full && k == ArithK::Sub) return ggml_neg(ctx, ggml_sub(ctx, b, a));
    return fn(ctx, repeat_to(ctx, a, ne), b);
}
}  // namespace

ggml_tensor* add(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_add, ArithK::Add, a, b); }
ggml_tensor* sub(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_sub, ArithK::Sub, a, b); }
// x * gelu(g) of one shape (GEGLU, whatever node chain made the gelu) is one pass over both halves (on the CPU our
// kernel, elsewhere ggml's split GLU); a gelu with other uses is still computed for them.
ggml_tensor* mul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    if (ctx.cpu && a->type == GGML_TYPE_F32 && ggml_are_same_shape(a, b)) {
        if (ggml_tensor* g = gelu_erf_input(b)) return mul_gelu_vec(ctx, a, g);
        if (ggml_tensor* g = gelu_erf_input(a)) return mul_gelu_vec(ctx, b, g);
    }
    if (!ctx.cpu && ggml_are_same_shape(a, b))
        for (auto [x, gelu] : {std::pair(a, b), std::pair(b, a)})
            if (ggml_tensor* g = ggml_gelu_erf_input(gelu))
                if (ggml_tensor* y = portable_mul_gelu(ctx, x, g)) return y;
    return binary(ctx, ggml_mul, ArithK::Mul, a, b);
}
ggml_tensor* div(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return binary(ctx, ggml_div, ArithK::Div, a, b); }

ggml_tensor* pow(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Pow); }

ggml_tensor* scale_bias(Ctx& ctx, ggml_tensor* x, const ScaleBiasParams& p) {
    if (p.scale == 1.0f && p.bias == 0.0f) return x;
    return ggml_scale_bias(ctx, cont(ctx, x), p.scale, p.bias);
}

ggml_tensor* clip(Ctx& ctx, ggml_tensor* x, const ClipParams& p) {
    return ggml_clamp(ctx, x, std::min(p.min, p.max), p.max);
}

ggml_tensor* pow_scalar(Ctx& ctx, ggml_tensor* x, float e) {
    if (e == 1.0f) return x;
    if (e == 2.0f) return ggml_sqr(ctx, x);
    if (e == 0.5f) return ggml_sqrt(ctx, x);
    return custom_unary(ctx, x, UnaryK::PowScalar, e);  // portable_pow_scalar off the CPU
}

ggml_tensor* mod(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const ModParams& p) {
    return custom_binary(ctx, a, b, p.fmod ? BinaryK::Fmod : BinaryK::Mod);
}

// On the CPU one broadcasting pass (custom_binary would materialize both operands at the common shape).
ggml_tensor* maximum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    if (ctx.cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32) return broadcast_arith(ctx, a, b, ArithK::Max);
    return custom_binary(ctx, a, b, BinaryK::Max);
}
ggml_tensor* minimum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    if (ctx.cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32) return broadcast_arith(ctx, a, b, ArithK::Min);
    return custom_binary(ctx, a, b, BinaryK::Min);
}

// Off the CPU, ggml's sin and cos are built with fast math (CUDA's __sinf was 1.3e-4 off at |x| near 1000, as a
// diffusion timestep embedding takes them): x is first reduced to [-pi, pi] by Cody and Waite's two-part 2 pi,
// whose high part times any k below 2^15 is exact in f32.
static ggml_tensor* reduce_2pi(Ctx& ctx, ggml_tensor* x) {
    if (ctx.cpu) return x;
    const float hi = 6.28125f, lo = 1.9353071795864769e-3f;
    ggml_tensor* k = ggml_round(ctx, ggml_scale(ctx, x, float(0.5 / M_PI)));
    return ggml_sub(ctx, ggml_sub(ctx, x, ggml_scale(ctx, k, hi)), ggml_scale(ctx, k, lo));
}
ggml_tensor* sin(Ctx& ctx, ggml_tensor* x) { return ggml_sin(ctx, reduce_2pi(ctx, x)); }
ggml_tensor* cos(Ctx& ctx, ggml_tensor* x) { return ggml_cos(ctx, reduce_2pi(ctx, x)); }
ggml_tensor* erf(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Erf); }
ggml_tensor* tan(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Tan); }
ggml_tensor* asin(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Asin); }
ggml_tensor* acos(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Acos); }
ggml_tensor* atan(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Atan); }
ggml_tensor* sinh(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Sinh); }
ggml_tensor* cosh(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Cosh); }
ggml_tensor* asinh(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Asinh); }
ggml_tensor* acosh(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Acosh); }
ggml_tensor* atanh(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Atanh); }
ggml_tensor* reciprocal(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Reciprocal); }
ggml_tensor* round(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::RoundEven); }
ggml_tensor* sign(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Sign); }

ggml_tensor* is_nan(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::IsNaN); }

ggml_tensor* is_inf(Ctx& ctx, ggml_tensor* x, const IsInfParams& p) {
    // Nothing to detect: all false. clamp to [0, 0] maps NaN and inf to 0 too (scaling by 0 would give NaN).
    if (!p.detect_positive && !p.detect_negative) return ggml_clamp(ctx, x, 0.0f, 0.0f);
    UnaryK k = p.detect_positive && p.detect_negative ? UnaryK::IsInf : p.detect_positive ? UnaryK::IsInfPos
                                                                                          : UnaryK::IsInfNeg;
    return custom_unary(ctx, x, k);
}

ggml_tensor* equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Equal); }
ggml_tensor* less(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Less); }
ggml_tensor* less_or_equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    return custom_binary(ctx, a, b, BinaryK::LessEq);
}
ggml_tensor* greater(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Greater); }
ggml_tensor* greater_or_equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    return custom_binary(ctx, a, b, BinaryK::GreaterEq);
}
ggml_tensor* logical_and(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::And); }
ggml_tensor* logical_or(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Or); }
ggml_tensor* logical_xor(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) { return custom_binary(ctx, a, b, BinaryK::Xor); }
ggml_tensor* logical_not(Ctx& ctx, ggml_tensor* x) { return custom_unary(ctx, x, UnaryK::Not); }

ggml_tensor* where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b) { return custom_where(ctx, c, a, b); }

}  // namespace o2g
