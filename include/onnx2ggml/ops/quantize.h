// Op library, Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv.
// Included by onnx2ggml/ops.h; see its conventions.
//
// Quantized values live on the device as I32 (uint8/int8/uint16/int16/int32 data); the arithmetic is exact
// (accumulation in double) and runs as ggml custom CPU kernels. Zero points may be null (zero).
#pragma once

namespace o2g {

// Scale and zero point per tensor (one element), per axis (1-D, x->ne[axis] elements) or per block along axis
// (x's shape with ne[axis] = ceil(ne[axis] / block_size)).
struct DequantizeParams {
    int axis = 0;            // ggml dim the scale runs along (per axis or per block)
    int64_t block_size = 0;  // > 0: blocked
    void fields(FieldWriter& f) const {
        f("axis", axis);
        f("block_size", block_size);
    }
};
struct QuantizeParams {
    int axis = 0;
    int64_t block_size = 0;
    int64_t qmin = 0, qmax = 255;  // saturation range of the quantized type
    void fields(FieldWriter& f) const {
        f("axis", axis);
        f("block_size", block_size);
        f("qmin", qmin);
        f("qmax", qmax);
    }
};
// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point), I32.
ggml_tensor* quantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* zero_point,
                             const QuantizeParams& p);
// DequantizeLinear: y = (x - zero_point) * scale, F32.
ggml_tensor* dequantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* zero_point,
                               const DequantizeParams& p);

// DynamicQuantizeLinear, first step: x's uint8 scale and zero point, F32 [2] = {scale, zero point}.
ggml_tensor* dynamic_quantize_scale_zero_point(Ctx& ctx, ggml_tensor* x);
// DynamicQuantizeLinear's output `output` from x and its scale_zero_point: 0 y (I32 holding uint8 values, x's
// shape), 1 y_scale (F32 scalar), 2 y_zero_point (I32 scalar).
ggml_tensor* dynamic_quantize_linear(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale_zero_point, int output);

// Integer matrix products with numpy batch broadcasting: a [K, M, batch...], b [N, K, batch...] -> [N, M, batch...].
// A 1-D operand (ONNX [K]) is a row (a) or a column (b) vector whose dim the result drops.
struct MatMulIntegerParams {
    bool a_vector = false, b_vector = false;
    void fields(FieldWriter& f) const {
        f("a_vector", a_vector);
        f("b_vector", b_vector);
    }
};
// MatMulInteger: (a - a_zero_point) x (b - b_zero_point) as I32; zero points per tensor, per row of a or per
// column of b.
ggml_tensor* matmul_integer(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* a_zero_point,
                            ggml_tensor* b_zero_point, const MatMulIntegerParams& p);
struct QLinearMatMulParams {
    bool a_vector = false, b_vector = false;
    int64_t qmin = 0, qmax = 255;  // saturation range of y's type
    void fields(FieldWriter& f) const {
        f("a_vector", a_vector);
        f("b_vector", b_vector);
        f("qmin", qmin);
        f("qmax", qmax);
    }
};
// QLinearMatMul: saturate(round_half_even(acc * (a_scale * b_scale / y_scale) + y_zero_point)); a's scale and
// zero point per tensor or per row, b's per tensor or per column, y's per tensor.
ggml_tensor* qlinear_matmul(Ctx& ctx, ggml_tensor* a, ggml_tensor* a_scale, ggml_tensor* a_zero_point, ggml_tensor* b,
                            ggml_tensor* b_scale, ggml_tensor* b_zero_point, ggml_tensor* y_scale,
                            ggml_tensor* y_zero_point, const QLinearMatMulParams& p);

// Integer convolution over `spatial` = strides.size() dims (1 to 3). x is [sp..., C, N] and w [k..., C/group, M]
// (1-D and 2-D), or, for 3-D, x [W, H, D, C] (one image: ggml holds 4 dims) and w [kw, kh, kd, M * C/group].
// Lists are per spatial dim in ONNX order (outermost first); pads are begins then ends.
struct ConvIntegerParams {
    Ints strides{}, dilations{}, pads{};
    int auto_pad = 0;  // 0 NOTSET (pads), 1 SAME_UPPER, 2 SAME_LOWER, 3 VALID
    int64_t group = 1;
    void fields(FieldWriter& f) const {
        f("strides", strides);
        f("dilations", dilations);
        f("pads", pads);
        auto_pad_field(f, auto_pad);
        f("group", group);
    }
};
// ConvInteger: sum (x - x_zero_point) * (w - w_zero_point) as I32 [out..., M, N]; x's zero point per tensor,
// w's per tensor or per output channel.
ggml_tensor* conv_integer(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* x_zero_point,
                          ggml_tensor* w_zero_point, const ConvIntegerParams& p);
struct QLinearConvParams {
    Ints strides{}, dilations{}, pads{};
    int auto_pad = 0;
    int64_t group = 1;
    int64_t qmin = 0, qmax = 255;  // saturation range of y's type
    void fields(FieldWriter& f) const {
        f("strides", strides);
        f("dilations", dilations);
        f("pads", pads);
        auto_pad_field(f, auto_pad);
        f("group", group);
        f("qmin", qmin);
        f("qmax", qmax);
    }
};
// QLinearConv: saturate(round_half_even((acc + bias) * (x_scale * w_scale / y_scale) + y_zero_point)), I32;
// w's scale and zero point per tensor or per output channel, the others per tensor; bias (I32) may be null.
ggml_tensor* qlinear_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* x_scale, ggml_tensor* x_zero_point, ggml_tensor* w,
                          ggml_tensor* w_scale, ggml_tensor* w_zero_point, ggml_tensor* y_scale,
                          ggml_tensor* y_zero_point, ggml_tensor* bias, const QLinearConvParams& p);

}  // namespace o2g
