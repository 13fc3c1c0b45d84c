// Activation ONNX ops, opsets 1-28: Relu, Sigmoid, Tanh, LeakyRelu, PRelu, Elu, Selu, Celu, HardSigmoid,
// HardSwish, Softplus, Softsign, Mish, Gelu, ThresholdedRelu, Shrink, Swish, SwiGLU (28); com.microsoft Gelu, BiasGelu,
// FastGelu, QuickGelu and BiasSplitGelu (1); and the fused onnx2ggml.SiLU, onnx2ggml.Swish and onnx2ggml.Gelu (erf
// form) that the fuse passes produce.
#include <cmath>

#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

namespace {
}  // namespace

void lower_Relu(Lower& L) { out_same(L, O2G_CALL(L, ggml_relu, L.t(0))); }
void lower_Sigmoid(Lower& L) { out_same(L, O2G_CALL(L, ggml_sigmoid, L.t(0))); }
void lower_SiLU(Lower& L) { out_same(L, O2G_CALL(L, ggml_silu, L.t(0))); }
void lower_Tanh(Lower& L) { out_same(L, O2G_CALL(L, ggml_tanh, L.t(0))); }
void lower_HardSwish(Lower& L) { out_same(L, O2G_CALL(L, o2g::hard_swish, L.t(0), o2g::HardSigmoidParams{1.0f / 6.0f, 0.5f})); }
void lower_Softsign(Lower& L) { out_same(L, O2G_CALL(L, o2g::softsign, L.t(0))); }
void lower_Softplus(Lower& L) { out_same(L, O2G_CALL(L, o2g::softplus, L.t(0))); }
void lower_Mish(Lower& L) { out_same(L, O2G_CALL(L, o2g::mish, L.t(0))); }

void host_Relu(Lower& L) {
    O2G_HOST(L, 0, o2g::host_map, std::vector<HostArg>{L.hv(0)}, o2g::HostMapParams{o2g::HOST_RELU, L.dtype(0)});
}

void lower_LeakyRelu(Lower& L) {
    out_same(L, O2G_CALL(L, ggml_leaky_relu, L.t(0), L.node.get_float("alpha", 0.01f), false));
}
void lower_Elu(Lower& L) {
    o2g::EluParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    out_same(L, O2G_CALL(L, o2g::elu, L.t(0), p));
}
void lower_Selu(Lower& L) {
    o2g::SeluParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    p.gamma = L.node.get_float("gamma", p.gamma);
    out_same(L, O2G_CALL(L, o2g::selu, L.t(0), p));
}
void lower_Celu(Lower& L) {
    o2g::CeluParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    out_same(L, O2G_CALL(L, o2g::celu, L.t(0), p));
}
void lower_ThresholdedRelu(Lower& L) {
    o2g::ThresholdedReluParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    out_same(L, O2G_CALL(L, o2g::thresholded_relu, L.t(0), p));
}
void lower_HardSigmoid(Lower& L) {
    o2g::HardSigmoidParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    p.beta = L.node.get_float("beta", p.beta);
    out_same(L, O2G_CALL(L, o2g::hard_sigmoid, L.t(0), p));
}
void lower_FusedHardSwish(Lower& L) {
    o2g::HardSigmoidParams p;
    p.alpha = L.node.get_float("alpha", 1.0f / 6.0f);
    p.beta = L.node.get_float("beta", 0.5f);
    out_same(L, O2G_CALL(L, o2g::hard_swish, L.t(0), p));
}

void lower_PRelu(Lower& L) {
    Shape out = broadcast_shapes(L, L.shape(0), L.shape(1));
    if (!folded_compatible(L.shape(0), out) || !folded_compatible(L.shape(1), out))
        L.error("broadcast across folded dims (rank > 4)");
    L.out_shape(0, O2G_CALL(L, o2g::prelu, L.t(0), L.t(1)), L.dtype(0), out);
}

// Before opset 7 a 1-D slope as long as the channel dim applies per channel (axis 1), as in Caffe.
void lower_PRelu_1(Lower& L) {
    const Shape& xs = L.shape(0);
    int64_t C = L.rank(1) == 1 ? L.shape(1)[0] : 0;
    if (L.rank(0) < 3 || C <= 1 || C != xs[1]) return lower_PRelu(L);
    Shape s(xs.size() - 1, 1);
    s[0] = C;
    ggml_tensor* slope = O2G_CALL(L, o2g::reshape, L.t(1), Sym{s, nullptr}, o2g::ReshapeParams{1, false});
    L.out_shape(0, O2G_CALL(L, o2g::prelu, L.t(0), slope), L.dtype(0), xs);
}

// Gelu (20) and onnx2ggml.Gelu (the erf form, from fuse_gelu).
void lower_Gelu(Lower& L) {
    std::string a = L.node.get_string("approximate", "none");
    if (a != "none" && a != "tanh") L.error("approximate must be 'none' or 'tanh', not '" + a + "'");
    o2g::GeluParams p;
    p.tanh = a == "tanh";
    out_same(L, O2G_CALL(L, o2g::gelu, L.t(0), p));
}

void lower_Shrink(Lower& L) {
    o2g::ShrinkParams p;
    p.lambd = L.node.get_float("lambd", p.lambd);
    p.bias = L.node.get_float("bias", p.bias);
    out_same(L, O2G_CALL(L, o2g::shrink, L.t(0), p));
}
void host_Shrink(Lower& L) {
    double lambd = L.node.get_float("lambd", 0.5f), bias = L.node.get_float("bias", 0.0f);
    const HostTensor& x = L.h(0);
    HostTensor o = HostTensor::alloc(x.dtype, x.shape);
    for (int64_t i = 0; i < x.numel(); i++) {
        double v = x.f64(i);
        o.set_f64(i, v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
    L.out_host(0, o);
}

// Swish (24): x * sigmoid(alpha * x).
void lower_Swish(Lower& L) {
    o2g::SwishParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    out_same(L, O2G_CALL(L, o2g::swish, L.t(0), p));
}

// SwiGLU (28): swish(A) * B.
void lower_SwiGLU(Lower& L) {
    if (L.shape(0) != L.shape(1)) L.error("A and B must have one shape (SwiGLU does not broadcast)");
    o2g::SwishParams p;
    p.alpha = L.node.get_float("alpha", p.alpha);
    out_same(L, O2G_CALL(L, o2g::swiglu, L.t(0), L.t(1), p));
}

// com.microsoft BiasGelu(A, B) = Gelu(A + B), erf form; FastGelu(X, bias?) the tanh form. The bias lies along
// the last axis.
void lower_bias_gelu(Lower& L, bool tanh) {
    ggml_tensor* x = L.t(0);
    if (L.has(1)) {
        const Shape& xs = L.shape(0);
        if (L.rank(0) > 4 || L.rank(1) != 1 || xs.empty() || L.shape(1)[0] != xs.back())
            L.error("the bias must be 1-D, as long as the last axis of an input of rank 1 to 4");
        x = O2G_CALL(L, o2g::add, x, L.t(1));
    }
    o2g::GeluParams p;
    p.tanh = tanh;
    out_same(L, O2G_CALL(L, o2g::gelu, x, p));
}
void lower_BiasGelu(Lower& L) { lower_bias_gelu(L, false); }
void lower_FastGelu(Lower& L) { lower_bias_gelu(L, true); }

// com.microsoft QuickGelu: x * sigmoid(alpha * x).
void lower_QuickGelu(Lower& L) {
    o2g::SwishParams p;
    p.alpha = L.node.get_float("alpha", 1.702f);
    out_same(L, O2G_CALL(L, o2g::swish, L.t(0), p));
}

// com.microsoft BiasSplitGelu: X [N, S, D] + bias [D], halves of the last axis -> left * gelu(right) [N, S, D/2].
void lower_BiasSplitGelu(Lower& L) {
    const Shape& xs = L.shape(0);
    if (L.rank(0) != 3 || L.rank(1) != 1 || L.shape(1)[0] != xs[2] || xs[2] % 2)
        L.error("expects X [N, S, D] and bias [D] with D even");
    L.out(0, O2G_CALL(L, o2g::bias_split_gelu, L.t(0), L.t(1)), L.dtype(0), 3);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& activation_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Relu", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Relu, .host = host_Relu, .math = true},
        {.op = "Sigmoid", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Sigmoid, .math = true},
        {.op = "onnx2ggml.SiLU", .since = 1, .ggml = lower_SiLU, .math = true},  // produced by the fuse_silu pass
        {.op = "onnx2ggml.Gelu", .since = 1, .ggml = lower_Gelu, .math = true},  // fuse_gelu (erf form)
        {.op = "onnx2ggml.Swish", .since = 1, .ggml = lower_Swish, .math = true},  // fuse_silu (x sigmoid(c x))
        {.op = "Tanh", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Tanh, .math = true},
        {.op = "Softsign", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Softsign, .math = true},
        {.op = "Softplus", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Softplus, .math = true},
        {.op = "Mish", .since = 18, .accepts = "in=1 out=1", .ggml = lower_Mish, .math = true},
        {.op = "SwiGLU", .since = 28, .accepts = "in=2 out=1", .ggml = lower_SwiGLU, .math = true},
        {.op = "HardSwish", .since = 14, .accepts = "in=1 out=1", .ggml = lower_HardSwish, .math = true},
        {.op = "HardSigmoid", .since = 1, .accepts = "in=1 out=1", .ggml = lower_HardSigmoid, .math = true},
        {.op = "onnx2ggml.HardSwish", .since = 1, .ggml = lower_FusedHardSwish, .math = true},  // fuse_hard_swish
        {.op = "LeakyRelu", .since = 1, .accepts = "in=1 out=1", .ggml = lower_LeakyRelu, .math = true},
        {.op = "PRelu", .since = 1, .accepts = "in=2 out=1", .ggml = lower_PRelu_1, .math = true},
        {.op = "PRelu", .since = 7, .accepts = "in=2 out=1", .ggml = lower_PRelu, .math = true},
        {.op = "Elu", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Elu, .math = true},
        {.op = "Selu", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Selu, .math = true},
        {.op = "Celu", .since = 12, .accepts = "in=1 out=1", .ggml = lower_Celu, .math = true},
        {.op = "ThresholdedRelu", .since = 10, .accepts = "in=1 out=1", .ggml = lower_ThresholdedRelu, .math = true},
        {.op = "Gelu", .since = 20, .accepts = "in=1 out=1", .ggml = lower_Gelu, .math = true},
        {.op = "Shrink", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Shrink, .host = host_Shrink, .math = true},
        {.op = "Swish", .since = 24, .accepts = "in=1 out=1", .ggml = lower_Swish, .math = true},
        {.op = "Gelu", .domain = "com.microsoft", .since = 1, .ggml = lower_Gelu, .math = true},
        {.op = "BiasGelu", .domain = "com.microsoft", .since = 1, .ggml = lower_BiasGelu, .math = true},
        {.op = "FastGelu", .domain = "com.microsoft", .since = 1, .ggml = lower_FastGelu, .math = true},
        {.op = "QuickGelu", .domain = "com.microsoft", .since = 1, .ggml = lower_QuickGelu, .math = true},
        {.op = "BiasSplitGelu", .domain = "com.microsoft", .since = 1, .ggml = lower_BiasSplitGelu, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
