// Op library, Activations: Relu, Sigmoid, SiLU, Gelu, LeakyRelu, Elu, Selu, HardSigmoid, Softplus, ....
// Included by onnx2ggml/ops.h; see its conventions. Relu, Sigmoid, Tanh, SiLU, HardSwish and LeakyRelu are one
// ggml call each (ggml_relu, ggml_sigmoid, ggml_tanh, ggml_silu, ggml_hardswish, ggml_leaky_relu) and are called
// as ggml directly. Functions marked "CPU kernel" run as ggml custom ops, so only on the CPU backend.
#pragma once

namespace o2g {

// max(x, 0) - slope * max(-x, 0), slope broadcast to x (either side may broadcast).
ggml_tensor* prelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* slope);

struct EluParams {
    float alpha = 1.0f;
    void fields(FieldWriter& f) const { f("alpha", alpha); }
};
// x >= 0 ? x : alpha * expm1(x) (CPU kernel).
ggml_tensor* elu(Ctx& ctx, ggml_tensor* x, const EluParams& p);

struct SeluParams {
    float alpha = 1.67326319217681884765625f;
    float gamma = 1.05070102214813232421875f;
    void fields(FieldWriter& f) const { f("alpha", alpha); f("gamma", gamma); }
};
// gamma * (x > 0 ? x : alpha * exp(x) - alpha) (CPU kernel).
ggml_tensor* selu(Ctx& ctx, ggml_tensor* x, const SeluParams& p);

struct CeluParams {
    float alpha = 1.0f;
    void fields(FieldWriter& f) const { f("alpha", alpha); }
};
// max(0, x) + min(0, alpha * expm1(x / alpha)) (CPU kernel).
ggml_tensor* celu(Ctx& ctx, ggml_tensor* x, const CeluParams& p);

struct ThresholdedReluParams {
    float alpha = 1.0f;
    void fields(FieldWriter& f) const { f("alpha", alpha); }
};
// x > alpha ? x : 0 (CPU kernel).
ggml_tensor* thresholded_relu(Ctx& ctx, ggml_tensor* x, const ThresholdedReluParams& p);

struct HardSigmoidParams {
    float alpha = 0.2f;
    float beta = 0.5f;
    void fields(FieldWriter& f) const { f("alpha", alpha); f("beta", beta); }
};
// clamp(alpha * x + beta, 0, 1).
ggml_tensor* hard_sigmoid(Ctx& ctx, ggml_tensor* x, const HardSigmoidParams& p);
// x * hard_sigmoid(x): ONNX HardSwish is alpha 1/6, beta 1/2 (the fuse_hard_swish pass finds others too).
ggml_tensor* hard_swish(Ctx& ctx, ggml_tensor* x, const HardSigmoidParams& p);

// log(1 + exp(x)), x / (1 + |x|), x * tanh(softplus(x)) (CPU kernels, computed in double where it matters).
ggml_tensor* softplus(Ctx& ctx, ggml_tensor* x);
ggml_tensor* softsign(Ctx& ctx, ggml_tensor* x);
ggml_tensor* mish(Ctx& ctx, ggml_tensor* x);

struct GeluParams {
    bool tanh = false;  // the tanh approximation (ONNX approximate="tanh"); false: exact erf form
    void fields(FieldWriter& f) const { f("tanh", tanh); }
};
// 0.5 x (1 + erf(x / sqrt 2)) via ggml_gelu_erf, or the tanh form composed in F32 (ggml_gelu uses an F16 table).
ggml_tensor* gelu(Ctx& ctx, ggml_tensor* x, const GeluParams& p);

struct ShrinkParams {
    float lambd = 0.5f;
    float bias = 0.0f;
    void fields(FieldWriter& f) const { f("lambd", lambd); f("bias", bias); }
};
// x < -lambd ? x + bias : x > lambd ? x - bias : 0 (F32 input; CPU kernel).
ggml_tensor* shrink(Ctx& ctx, ggml_tensor* x, const ShrinkParams& p);

struct SwishParams {
    float alpha = 1.0f;
    void fields(FieldWriter& f) const { f("alpha", alpha); }
};
// x * sigmoid(alpha * x).
ggml_tensor* swish(Ctx& ctx, ggml_tensor* x, const SwishParams& p);
// ONNX SwiGLU (28): swish(a) * b, a and b of one shape.
ggml_tensor* swiglu(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const SwishParams& p);

// com.microsoft BiasSplitGelu: h = x + bias (bias [D] along dim 0 of x [D, ...]), split in two halves along dim 0,
// left * gelu(right) (erf form) -> [D/2, ...].
ggml_tensor* bias_split_gelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* bias);

}  // namespace o2g
