// Convolution ONNX ops: Conv (1-22) and ConvTranspose (1-22), 1-D to 3-D, DeformConv (19-22), CausalConvWithState
// (27), com.microsoft NhwcConv (1, 2-D), and the fused onnx2ggml.ConvClamp (Conv + Relu/Clip). Rows read
// attributes into params; the lowering is the op library's (src/lib/conv.cpp, conv3d.cpp).
#include <algorithm>

#include "ops/op.h"

namespace onnx2ggml {

namespace {

int auto_pad(Lower& L) { return o2g::auto_pad_value(L.node.get_string("auto_pad", "NOTSET")); }

// Per-spatial-axis attributes must have one value per axis (pads: two), when given.
void check_lengths(Lower& L, int sp, std::initializer_list<std::pair<const char*, size_t>> attrs) {
    for (auto [name, per_axis] : attrs) {
        auto v = L.node.get_ints(name);
        if (!v.empty() && v.size() != per_axis * size_t(sp))
            L.error(std::string(name) + " has " + std::to_string(v.size()) + " values for " + std::to_string(sp) +
                    " spatial axes");
    }
}

ggml_tensor* optional(Lower& L, int i) { return L.has(i) ? L.t(i) : nullptr; }

// The window attributes Conv, NhwcConv and ConvTranspose share, checked for `sp` spatial axes.
template <typename P>
P window_params(Lower& L, int sp) {
    check_lengths(L, sp, {{"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}});
    P p;
    p.dims = sp;
    p.auto_pad = auto_pad(L);
    p.kernel = L.node.get_ints("kernel_shape");
    p.pads = L.node.get_ints("pads");
    p.strides = L.node.get_ints("strides");
    p.dilations = L.node.get_ints("dilations");
    p.group = L.node.get_int("group", 1);
    // Attributes at their defaults stay empty (the op library's 1 and 0), so that compile writes them as it would by
    // hand: {.kernel = {3, 3}} rather than {.kernel = {3, 3}, .pads = {0, 0, 0, 0}, .strides = {1, 1}, ...}.
    auto all = [](const o2g::Ints& v, int64_t x) {
        return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
    };
    if (all(p.strides, 1)) p.strides.clear();
    if (all(p.dilations, 1)) p.dilations.clear();
    if (all(p.pads, 0) && p.pads.size() == size_t(2 * sp)) p.pads.clear();
    return p;
}

o2g::ConvParams conv_params(Lower& L, int sp) {
    o2g::ConvParams p = window_params<o2g::ConvParams>(L, sp);
    if (p.auto_pad == o2g::AUTO_PAD_NOTSET) check_lengths(L, sp, {{"pads", 2}});
    return p;
}

}  // namespace

// A 3-D result [OW, OH, OD, M*N] as its rank-5 ONNX shape.
void out_3d(Lower& L, ggml_tensor* y, int64_t M) {
    L.out_shape(0, y, L.dtype(0), {L.shape(0)[0], M, y->ne[2], y->ne[1], y->ne[0]});
}

// ---- Conv (1-D to 3-D) ----
void lower_Conv(Lower& L) {
    int sp = L.rank(0) - 2;
    if (sp < 1 || sp > 3) L.error("only 1-D to 3-D convolutions are supported");
    if (L.rank(1) != L.rank(0)) L.error("the weight's rank must be the input's");
    o2g::ConvParams p = conv_params(L, sp);
    if (p.kernel == o2g::Ints(L.shape(1).begin() + 2, L.shape(1).end())) p.kernel.clear();  // the weight's: no need
    if (L.node.op_type == "onnx2ggml.ConvClamp") {  // Conv + Relu/Clip, from the fuse_conv_activation pass
        p.clamp = true;
        p.clamp_min = L.node.get_float("clamp_min", -INFINITY);
        p.clamp_max = L.node.get_float("clamp_max", INFINITY);
    }
    if (sp == 3) {
        p.out_channels = L.shape(1)[0];  // a weight dim: fixed by the model
        return out_3d(L, O2G_CALL(L, o2g::conv, L.t(0), L.t(1), optional(L, 2), p), p.out_channels);
    }
    L.out(0, O2G_CALL(L, o2g::conv, L.t(0), L.t(1), optional(L, 2), p), L.dtype(0), L.rank(0));
}

// ---- com.microsoft NhwcConv: Conv's attributes on x [N, H, W, C] and w [M, kH, kW, C/group] -> [N, OH, OW, M] ----
void lower_NhwcConv(Lower& L) {
    if (L.rank(0) != 4 || L.rank(1) != 4) L.error("only 2-D NHWC convolutions (rank-4 input and weight) are supported");
    o2g::ConvParams p = conv_params(L, 2);
    L.out(0, O2G_CALL(L, o2g::nhwc_conv, L.t(0), L.t(1), optional(L, 2), p), L.dtype(0), 4);
}

// ---- ConvTranspose (1-D to 3-D) ----
void lower_ConvTranspose(Lower& L) {
    int sp = L.rank(0) - 2;
    if (sp < 1 || sp > 3) L.error("only 1-D to 3-D transposed convolutions are supported");
    if (L.rank(1) != L.rank(0)) L.error("the weight's rank must be the input's");
    check_lengths(L, sp, {{"output_padding", 1}});
    o2g::ConvTransposeParams p = window_params<o2g::ConvTransposeParams>(L, sp);
    p.output_padding = L.node.get_ints("output_padding");
    p.output_shape = L.node.get_ints("output_shape");
    if (!p.output_shape.empty() && p.output_shape.size() < size_t(sp))
        L.error("output_shape has " + std::to_string(p.output_shape.size()) + " values for " + std::to_string(sp) +
                " spatial axes");
    if (sp == 3) {
        p.out_channels = L.shape(1)[1] * p.group;  // weight dims: fixed by the model
        return out_3d(L, O2G_CALL(L, o2g::conv_transpose, L.t(0), L.t(1), optional(L, 2), p), p.out_channels);
    }
    L.out(0, O2G_CALL(L, o2g::conv_transpose, L.t(0), L.t(1), optional(L, 2), p), L.dtype(0), L.rank(0));
}

// ---- DeformConv (19/22, 2-D) ----
void lower_DeformConv(Lower& L) {
    if (L.rank(0) != 4 || L.rank(1) != 4 || L.rank(2) != 4) L.error("only 2-D DeformConv is supported");
    if (L.has(3) && L.rank(3) != 1) L.error("B must have shape (out_channels)");
    if (L.has(4) && L.rank(4) != 4) L.error("mask must be 4-D");
    check_lengths(L, 2, {{"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"pads", 2}});
    o2g::DeformConvParams p;
    p.kernel = L.node.get_ints("kernel_shape");
    p.pads = L.node.get_ints("pads");
    p.strides = L.node.get_ints("strides");
    p.dilations = L.node.get_ints("dilations");
    p.group = L.node.get_int("group", 1);
    p.offset_group = L.node.get_int("offset_group", 1);
    L.out(0, O2G_CALL(L, o2g::deform_conv, L.t(0), L.t(1), L.t(2), optional(L, 3), optional(L, 4), p), L.dtype(0), 4);
}

// ---- CausalConvWithState (27): depthwise causal conv1d over [past_state | input] ----
void lower_CausalConvWithState(Lower& L) {
    if (L.rank(0) != 3 || L.rank(1) != 3) L.error("input and weight must be 3-D");
    if (L.has(2) && L.rank(2) != 1) L.error("bias must have shape (channels)");
    if (L.has(3) && L.rank(3) != 3) L.error("past_state must have shape (batch, channels, k - 1)");
    std::string act = L.node.get_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish") L.error("unknown activation '" + act + "'");
    o2g::CausalConvParams p;
    p.silu = act != "none";
    const int64_t K = L.shape(1)[2];  // a weight dim: fixed by the model
    // An empty past_state (k = 1) is left out: ggml cannot hold empty tensors.
    const bool past = L.has(3) && shape_numel(L.shape(3)) != 0;
    if (L.has(3) && !past && K > 1) L.error("past_state must have shape (batch, channels, k - 1)");
    DType dt = L.dtype(0);
    L.out(0, O2G_CALL(L, o2g::causal_conv_with_state, L.t(0), L.t(1), optional(L, 2), past ? L.t(3) : nullptr, p),
          dt, 3);
    if (!wanted_out(L, 1)) return;
    if (K == 1) {  // the state keeps the last k - 1 = 0 steps: empty, so made on the host
        const HostTensor zero = HostTensor::from_f64(dt, {}, {0.0});
        const Sym shape{{L.shape(0)[0], L.shape(0)[1], 0}, nullptr};
        return O2G_HOST(L, 1, o2g::host_constant_of_shape, shape, HostArg{&zero, nullptr});
    }
    L.out(1, O2G_CALL(L, o2g::causal_conv_state, L.t(0), L.t(1), past ? L.t(3) : nullptr), dt, 3);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----
// Conv: each output value sums over C/g x kernel; ConvTranspose: each input value spreads over Cout/g x kernel.
double conv_flops(Lower& L) {
    if (!L.has(1) || L.rank(1) < 3) return 0;
    const Shape& w = L.shape(1);
    double k = 1;
    for (size_t i = 2; i < w.size(); i++) k *= double(w[i]);
    if (L.node.op_type == "NhwcConv")  // w [M, kH, kW, C/g]
        return 2 * double(shape_numel(L.outs[0].shape)) * double(w[3]) * double(w[1] * w[2]);
    bool conv = L.node.op_type != "ConvTranspose";
    return 2 * double(shape_numel(conv ? L.outs[0].shape : L.shape(0))) * double(w[1]) * k;
}

const std::vector<OpDef>& conv_ops() {
    static const std::vector<OpDef> t = {
        {.op = "CausalConvWithState", .since = 27, .accepts = "in=2..4 out=2",
         .ggml = lower_CausalConvWithState, .math = true},
        {.op = "DeformConv", .since = 19, .accepts = "in=3..5 out=1", .ggml = lower_DeformConv, .math = true},
        {.op = "Conv", .since = 1,
         .accepts = "in=2..3 out=1 r0=3..5 r1=3..5 @group:i>=1 @kernel_shape:is>=1 @strides:is>=1 @dilations:is>=1 @auto_pad:s",
         .ggml = lower_Conv, .math = true, .flops = conv_flops},
        // produced by the fuse_conv_activation pass
        {.op = "onnx2ggml.ConvClamp", .since = 1, .ggml = lower_Conv, .math = true, .flops = conv_flops},
        {.op = "NhwcConv", .domain = "com.microsoft", .since = 1, .accepts = "in=2..3 out=1 r0=4 r1=4 @group:i>=1",
         .ggml = lower_NhwcConv, .math = true, .flops = conv_flops},
        {.op = "ConvTranspose", .since = 1,
         .accepts = "in=2..3 out=1 r0=3..5 r1=3..5 @group:i>=1 @kernel_shape:is>=1 @strides:is>=1 @dilations:is>=1 @auto_pad:s",
         .ggml = lower_ConvTranspose, .host_inputs = {1}, .math = true, .flops = conv_flops},
    };
    return t;
}

}  // namespace onnx2ggml
