// Op library, Elementwise math: binary arithmetic with numpy broadcasting, unary math, comparisons, logic, Where.
// Included by onnx2ggml/ops.h; see its conventions. Ops that are one ggml call (Exp, Log, Sqrt, Abs, Neg, Floor,
// Ceil, Sin, Cos, Clip as ggml_clamp) are called as ggml directly. Functions marked "CPU kernel" run as ggml
// custom ops (exact std:: math), so only on the CPU backend.
#pragma once

namespace o2g {

// a (+ - * /) b with numpy broadcasting (either side may broadcast).
ggml_tensor* add(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* sub(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* mul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* div(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);

// a ** b with broadcasting (std::pow; CPU kernel).
ggml_tensor* pow(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
// x ** e for a constant exponent: x for 1, ggml_sqr for 2, ggml_sqrt for 0.5, else std::pow (CPU kernel).
ggml_tensor* pow_scalar(Ctx& ctx, ggml_tensor* x, float e);

struct ClipParams {
    float min = -INFINITY, max = INFINITY;  // min > max: every value becomes max (the spec)
    void fields(FieldWriter& f) const { f("min", min); f("max", max); }
};
ggml_tensor* clip(Ctx& ctx, ggml_tensor* x, const ClipParams& p);

struct ScaleBiasParams {
    float scale = 1, bias = 0;
    void fields(FieldWriter& f) const { f("scale", scale); f("bias", bias); }
};
// x * scale + bias in one pass (a chain of scalar Mul/Div/Add/Sub steps, fused).
ggml_tensor* scale_bias(Ctx& ctx, ggml_tensor* x, const ScaleBiasParams& p);

struct ModParams {
    bool fmod = false;  // true: C fmod (sign of a); false: Python-style mod (sign of b)
    void fields(FieldWriter& f) const { f("fmod", fmod); }
};
// a mod b with broadcasting (CPU kernel).
ggml_tensor* mod(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const ModParams& p);

// Elementwise max/min with broadcasting; NaN if either is NaN (CPU kernel). ONNX Max/Min of n inputs chain these.
ggml_tensor* maximum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* minimum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);

// Unary math, exact std:: functions (CPU kernels).
ggml_tensor* sin(Ctx& ctx, ggml_tensor* x);  // off the CPU after a reduction to [-pi, pi]
ggml_tensor* cos(Ctx& ctx, ggml_tensor* x);
ggml_tensor* erf(Ctx& ctx, ggml_tensor* x);
ggml_tensor* tan(Ctx& ctx, ggml_tensor* x);
ggml_tensor* asin(Ctx& ctx, ggml_tensor* x);
ggml_tensor* acos(Ctx& ctx, ggml_tensor* x);
ggml_tensor* atan(Ctx& ctx, ggml_tensor* x);
ggml_tensor* sinh(Ctx& ctx, ggml_tensor* x);
ggml_tensor* cosh(Ctx& ctx, ggml_tensor* x);
ggml_tensor* asinh(Ctx& ctx, ggml_tensor* x);
ggml_tensor* acosh(Ctx& ctx, ggml_tensor* x);
ggml_tensor* atanh(Ctx& ctx, ggml_tensor* x);
ggml_tensor* reciprocal(Ctx& ctx, ggml_tensor* x);  // 1 / x
ggml_tensor* round(Ctx& ctx, ggml_tensor* x);       // half to even
ggml_tensor* sign(Ctx& ctx, ggml_tensor* x);        // -1, 0 or 1

// Tests giving booleans (F32 0/1), CPU kernels.
ggml_tensor* is_nan(Ctx& ctx, ggml_tensor* x);
struct IsInfParams {
    bool detect_positive = true;
    bool detect_negative = true;
    void fields(FieldWriter& f) const { f("detect_positive", detect_positive); f("detect_negative", detect_negative); }
};
ggml_tensor* is_inf(Ctx& ctx, ggml_tensor* x, const IsInfParams& p);

// Comparisons and logic with broadcasting; inputs are numbers or booleans, results booleans (CPU kernels).
ggml_tensor* equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* less(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* less_or_equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* greater(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* greater_or_equal(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* logical_and(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* logical_or(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* logical_xor(Ctx& ctx, ggml_tensor* a, ggml_tensor* b);
ggml_tensor* logical_not(Ctx& ctx, ggml_tensor* x);

// c ? a : b elementwise, all three broadcast to a common shape (CPU kernel).
ggml_tensor* where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b);

}  // namespace o2g
