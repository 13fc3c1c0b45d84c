// Op library, Convolutions: Conv, ConvTranspose (1-D and 2-D), DeformConv (2-D), CausalConvWithState, NhwcConv; the
// sliding-window geometry shared by convolutions and pools. Included by onnx2ggml/ops.h; see its conventions.
//
// Per-spatial-axis attributes (kernel, pads, strides, dilations, output_padding, output_shape) are kept in ONNX
// order, outermost first ({H, W}; pads {H_begin, W_begin, H_end, W_end}), as the attributes are written.
#pragma once
#include <string>

namespace o2g {

// ONNX auto_pad, as params hold it.
enum AutoPad : int { AUTO_PAD_NOTSET = 0, AUTO_PAD_SAME_UPPER = 1, AUTO_PAD_SAME_LOWER = 2, AUTO_PAD_VALID = 3 };
inline void auto_pad_field(FieldWriter& f, int auto_pad) {
    f.enum_field("auto_pad", auto_pad, {"AUTO_PAD_NOTSET", "AUTO_PAD_SAME_UPPER", "AUTO_PAD_SAME_LOWER", "AUTO_PAD_VALID"});
}
// "NOTSET" / "SAME_UPPER" / "SAME_LOWER" / "VALID" -> AutoPad; OpError for anything else.
int auto_pad_value(const std::string& s);

// Window geometry per spatial axis, ONNX order.
struct WindowGeometry {
    Ints in, kernel, strides, dilations, pad_begin, pad_end, out;
};
// Conv and pool geometry for input sizes `in`: pads from auto_pad (SAME_* depend on the input size) or `pads`
// ([begins..., ends...]; empty: 0), then ONNX's output size, floor((in + pads - dilated kernel) / stride) + 1, or
// with ceil_mode the ceiling, less a last window that would start in the end padding. Empty strides/dilations
// mean 1. OpError for an unknown auto_pad, wrong lengths, non-positive kernel/strides/dilations, an empty output.
WindowGeometry conv_geometry(const Ints& in, const Ints& kernel, int auto_pad, const Ints& pads, const Ints& strides,
                             const Ints& dilations, bool ceil_mode = false);
// ConvTranspose geometry: out = stride * (in - 1) + output_padding + dilated kernel - pads; with output_shape
// (its last in.size() values) or SAME_* (out = in * stride) the pads are what gives that size (an odd one at
// the end for SAME_UPPER, at the start otherwise).
WindowGeometry conv_transpose_geometry(const Ints& in, const Ints& kernel, int auto_pad, const Ints& pads,
                                       const Ints& strides, const Ints& dilations, const Ints& output_padding,
                                       const Ints& output_shape);
// The sizes of x's `dims` innermost ggml dims (its spatial axes), in ONNX order: outermost first.
Ints spatial_sizes(const ggml_tensor* x, int dims);

struct ConvParams {
    int dims = 2;                  // spatial dims: 1, 2 or 3
    int auto_pad = AUTO_PAD_NOTSET;
    Ints kernel{};                 // kernel_shape; empty: the weight's
    Ints pads{};                   // empty: 0
    Ints strides{};                // empty: 1
    Ints dilations{};              // empty: 1
    int64_t group = 1;
    int64_t out_channels = 0;      // 3-D: M, which the folded ne[3] (M*N, and the weight's M*C/group) cannot tell
    // A following Relu/Clip fused by the fuse_conv_activation pass: y = clamp(conv, clamp_min, clamp_max).
    bool clamp = false;
    float clamp_min = 0, clamp_max = 0;
    void fields(FieldWriter& f) const {
        f("dims", dims);
        auto_pad_field(f, auto_pad);
        f("kernel", kernel);
        f("pads", pads);
        f("strides", strides);
        f("dilations", dilations);
        f("group", group);
        if (out_channels) f("out_channels", out_channels);
        if (clamp) {
            f("clamp", clamp);
            f("clamp_min", clamp_min);
            f("clamp_max", clamp_max);
        }
    }
};
// Conv: x [W, H, C, N] (1-D: [L, C, N]), w [kW, kH, C/group, M] ([k, C/group, M]), bias [M] or null ->
// [OW, OH, M, N]. On the CPU a depthwise conv takes our depthwise kernel, a 1x1 stride-1 unpadded conv with a
// constant weight our pointwise kernel (both add the bias and apply a fused clamp while writing) and a 3x3
// stride-1 conv with a constant weight the Winograd kernel (weights transformed once); otherwise an F32 im2col and
// one matrix product (a 1x1 conv at batch 1 is the product alone), per group when 1 < group < C. 3-D: x [W, H, D, N*C], w [kW, kH, kD,
// M*C/group] -> [OW, OH, OD, M*N] (rank 5 folded), through ggml_im2col_3d in F32.
ggml_tensor* conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p);

// com.microsoft NhwcConv (2-D): x [C, W, H, N] (ONNX NHWC), w [C/group, kW, kH, M] (ONNX [M, kH, kW, C/group]),
// bias [M] or null -> [M, OW, OH, N], through conv() with x and the result permuted (two copies); a constant
// weight is reordered once.
ggml_tensor* nhwc_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p);
// NhwcConv's weight in conv()'s order [kW, kH, C/group, M] (a constant one reordered once, at load).
ggml_tensor* nhwc_conv_weight(Ctx& ctx, ggml_tensor* w);

struct ConvTransposeParams {
    int dims = 2;  // spatial dims: 1, 2 or 3
    int auto_pad = AUTO_PAD_NOTSET;
    Ints kernel{};        // kernel_shape; empty: the weight's
    Ints pads{};          // empty: 0
    Ints strides{};       // empty: 1
    Ints dilations{};     // empty: 1
    Ints output_padding{};  // empty: 0
    Ints output_shape{};  // empty: from the other attributes
    int64_t group = 1;
    int64_t out_channels = 0;  // 3-D: M, which the folded ne[3] cannot tell
    void fields(FieldWriter& f) const {
        f("dims", dims);
        auto_pad_field(f, auto_pad);
        f("kernel", kernel);
        f("pads", pads);
        f("strides", strides);
        f("dilations", dilations);
        f("output_padding", output_padding);
        f("output_shape", output_shape);
        f("group", group);
        if (out_channels) f("out_channels", out_channels);
    }
};
// ConvTranspose: x [W, H, C, N] (1-D: [L, C, N]), w [kW, kH, M/group, C] ([k, M/group, C]), bias [M] or null
// -> [OW, OH, M, N]: the input dilated by the strides and padded, convolved with the flipped weight (flipped once
// for a constant weight, in the graph otherwise). 3-D: x [W, H, D, N*C], w [kW, kH, kD, C*M/group] -> [OW, OH,
// OD, M*N], the same way with a 3-D convolution.
ggml_tensor* conv_transpose(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvTransposeParams& p);

struct DeformConvParams {
    Ints kernel{};   // kernel_shape {kH, kW}; empty: the weight's
    Ints pads{};     // empty: 0
    Ints strides{};  // empty: 1
    Ints dilations{};  // empty: 1
    int64_t group = 1;
    int64_t offset_group = 1;
    void fields(FieldWriter& f) const {
        f("kernel", kernel);
        f("pads", pads);
        f("strides", strides);
        f("dilations", dilations);
        f("group", group);
        f("offset_group", offset_group);
    }
};
// DeformConv (2-D): x [W, H, C, N], w [kW, kH, C/group, M], offset [OW, OH, offset_group*kH*kW*2, N],
// bias [M] or null, mask [OW, OH, offset_group*kH*kW, N] or null -> [OW, OH, M, N]. A CPU kernel (the only
// one) samples the deformed im2col (bilinear, zero outside), then one matrix product per group.
ggml_tensor* deform_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* offset, ggml_tensor* bias,
                         ggml_tensor* mask, const DeformConvParams& p);

struct CausalConvParams {
    bool silu = false;  // activation "silu" / "swish"
    void fields(FieldWriter& f) const { f("silu", silu); }
};
// CausalConvWithState output 0: depthwise causal conv1d of x [L, C, N] with w [k, 1, C] over
// [past_state | x] (past [k-1, C, N], or zeros when null), plus bias [C] (or null), optionally SiLU -> [L, C, N].
ggml_tensor* causal_conv_with_state(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ggml_tensor* past,
                                    const CausalConvParams& p);
// CausalConvWithState output 1: the last k-1 steps of [past_state | x] -> [k-1, C, N] (k > 1).
ggml_tensor* causal_conv_state(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* past);

}  // namespace o2g
