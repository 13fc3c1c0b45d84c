// Quantization ONNX ops: QuantizeLinear, DequantizeLinear (10-23, per tensor/axis/block), DynamicQuantizeLinear
// (11), MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv (10).
#include <algorithm>
#include <functional>

#include "ops/fold.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

// Input i as stored: integer data stays I32 (L.t makes it F32 for math ops, which would round int32 biases).
ggml_tensor* raw_t(Lower& L, int i) {
    ggml_tensor* x = L.b.tensor(L.in(i));
    if (Recorder* r = L.rec()) r->use(L.in(i), x);
    return x;
}
ggml_tensor* opt_raw(Lower& L, int i) { return L.has(i) ? raw_t(L, i) : nullptr; }

bool int_range(DType t, int64_t& lo, int64_t& hi) {
    switch (t) {
        case DType::UINT8: lo = 0; hi = 255; return true;
        case DType::INT8: lo = -128; hi = 127; return true;
        case DType::UINT16: lo = 0; hi = 65535; return true;
        case DType::INT16: lo = -32768; hi = 32767; return true;
        case DType::INT32: lo = -2147483648LL; hi = 2147483647LL; return true;
        case DType::UINT4: lo = 0; hi = 15; return true;
        case DType::INT4: lo = -8; hi = 7; return true;
        case DType::UINT2: lo = 0; hi = 3; return true;
        case DType::INT2: lo = -2; hi = 1; return true;
        default: return false;
    }
}

void lower_quant_common(Lower& L, bool dequant) {
    const Shape& xs = L.shape(0);
    const Shape& ss = L.shape(1);
    int r = int(xs.size());
    int64_t block = L.node.get_int("block_size", 0);
    // A scalar scale with a [1] zero point (onnx's own tests) is per tensor too.
    if (L.has(2) && L.shape(2) != ss && !(shape_numel(L.shape(2)) == 1 && shape_numel(ss) == 1))
        L.error("zero point and scale shapes differ");
    bool per_tensor = shape_numel(ss) == 1 && block == 0;
    int axis = 0;
    if (!per_tensor) {
        axis = norm_axis(L, L.node.get_int("axis", 1), r);
        int64_t A = xs[size_t(axis)];
        if (block > 0) {
            if (int(ss.size()) != r) L.error("blocked quantization needs scale of the input's rank");
            for (int i = 0; i < r; i++)
                if (i != axis ? ss[size_t(i)] != xs[size_t(i)] : ss[size_t(i)] != (A + block - 1) / block)
                    L.error("scale shape " + shape_str(ss) + " does not match blocks of " + std::to_string(block));
        } else if (ss.size() != 1 || ss[0] != A) {
            L.error("per-axis scale must be 1-D with the axis' size");
        }
    }
    DType out_t;
    int64_t lo = 0, hi = 0;
    int64_t od = L.node.get_int("output_dtype", 0);
    if (dequant) {
        if (!dtype_is_integer(L.dtype(0)) && !dtype_is_narrow(L.dtype(0)))
            L.error(std::string("input type ") + dtype_name(L.dtype(0)) + " is not supported");
        out_t = od ? DType(od) : L.dtype(1);
        if (!dtype_is_float(out_t)) L.error("output_dtype must be a float type");
    } else {
        out_t = L.has(2) ? L.dtype(2) : od ? DType(od) : DType::UINT8;
        if (od && L.has(2) && DType(od) != L.dtype(2)) L.error("output_dtype does not match the zero point type");
        if (!int_range(out_t, lo, hi) || out_t == DType::INT32)
            L.error(std::string("quantizing to ") + dtype_name(out_t) + " is not supported");
        if (L.node.has("precision") && L.node.get_int("precision", 0) != 0 &&
            DType(L.node.get_int("precision", 0)) != DType::FLOAT)
            L.error("precision other than float is not supported");
    }
    ggml_tensor* x = raw_t(L, 0);
    ggml_tensor* sc = L.t(1);
    ggml_tensor* zp = opt_raw(L, 2);
    int g = gdim(r, axis);
    // Rank > 4 with the axis among the folded outer dims: view x (and a blocked scale) as [outer, A, inner].
    bool fold = !per_tensor && r > 4 && g >= 3;
    if (fold) {
        size_t a = size_t(axis);
        x = reshape_ne(L, x, {dims_prod(xs, 0, a), xs[a], dims_prod(xs, a + 1, xs.size())});
        if (block > 0) {
            Shape fs = {dims_prod(ss, 0, a), ss[a], dims_prod(ss, a + 1, ss.size())};
            sc = reshape_ne(L, sc, fs);
            if (zp) zp = reshape_ne(L, zp, fs);
        }
        g = 1;
    }
    ggml_tensor* y = dequant ? O2G_CALL(L, o2g::dequantize_linear, x, sc, zp, o2g::DequantizeParams{g, block})
                             : O2G_CALL(L, o2g::quantize_linear, x, sc, zp, o2g::QuantizeParams{g, block, lo, hi});
    if (fold) y = reshape_ne(L, y, xs);
    L.out_shape(0, y, out_t, xs);
}

// MatMulInteger (a 0, b 1, zero points 2, 3) or QLinearMatMul (a 0, scale 1, zp 2, b 3, 4, 5, y 6, 7).
void lower_int_matmul(Lower& L, bool qlinear) {
    int ia = 0, ib = qlinear ? 3 : 1;
    Shape as = L.shape(ia), bs = L.shape(ib);
    bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as.insert(as.begin(), 1);
    if (b1) bs.push_back(1);
    if (as.size() < 2 || bs.size() < 2) L.error("operands must have rank >= 1");
    if (as.back() != bs[bs.size() - 2]) L.error("inner dimensions differ");
    size_t r = std::max(as.size(), bs.size());
    while (as.size() < r) as.insert(as.begin(), 1);
    while (bs.size() < r) bs.insert(bs.begin(), 1);
    Shape os = broadcast_shapes(L, Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
    os.push_back(as[r - 2]);
    os.push_back(bs[r - 1]);
    if (!folded_compatible(as, os) || !folded_compatible(bs, os)) L.error("broadcast across folded dims (rank > 4)");
    // Scales and zero points: one element, or 1-D per row of a / column of b (the library checks the count).
    for (int i : qlinear ? std::vector<int>{1, 2, 4, 5, 6, 7} : std::vector<int>{2, 3})
        if (L.has(i) && shape_numel(L.shape(i)) != 1 && L.rank(i) != 1)
            L.error("only per-tensor or per-row/column scales and zero points are supported");
    DType out_t = DType::INT32;
    ggml_tensor* y;
    if (qlinear) {
        if (!L.has(7) || shape_numel(L.shape(6)) != 1 || shape_numel(L.shape(7)) != 1)
            L.error("y scale and zero point must be scalars");
        out_t = L.dtype(7);
        o2g::QLinearMatMulParams p{a1, b1};
        if (!int_range(out_t, p.qmin, p.qmax)) L.error("unsupported output type");
        ggml_tensor *a = raw_t(L, 0), *b = raw_t(L, 3), *az = opt_raw(L, 2), *bz = opt_raw(L, 5);
        ggml_tensor *asc = L.t(1), *bsc = L.t(4), *ysc = L.t(6), *yz = raw_t(L, 7);
        y = O2G_CALL(L, o2g::qlinear_matmul, a, asc, az, b, bsc, bz, ysc, yz, p);
    } else {
        ggml_tensor *a = raw_t(L, 0), *b = raw_t(L, 1), *az = opt_raw(L, 2), *bz = opt_raw(L, 3);
        y = O2G_CALL(L, o2g::matmul_integer, a, b, az, bz, o2g::MatMulIntegerParams{a1, b1});
    }
    if (a1) os.erase(os.end() - 2);
    if (b1) os.pop_back();
    L.out_shape(0, y, out_t, os);
}

// Conv attributes of x (input 0) and w (input iw) as library lists (ONNX order, defaults filled).
void conv_attrs(Lower& L, int iw, o2g::Ints& strides, o2g::Ints& dilations, o2g::Ints& pads, int& auto_pad,
                int64_t& group) {
    const Shape& xs = L.shape(0);
    const Shape& ws = L.shape(iw);
    if (xs.size() < 3 || ws.size() != xs.size()) L.error("input and weight must have the same rank >= 3");
    size_t n = xs.size() - 2;
    if (n > 3) L.error("only 1 to 3 spatial dims are supported");
    auto k = L.node.get_ints("kernel_shape");
    if (!k.empty() && o2g::Ints(ws.begin() + 2, ws.end()) != k) L.error("kernel_shape does not match the weight");
    strides = L.node.get_ints("strides");
    dilations = L.node.get_ints("dilations");
    if (strides.empty()) strides.assign(n, 1);
    if (dilations.empty()) dilations.assign(n, 1);
    if (strides.size() != n || dilations.size() != n) L.error("kernel_shape/strides/dilations have wrong length");
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    pads = L.node.get_ints("pads");
    if (ap == "NOTSET") {
        auto_pad = 0;
        if (!pads.empty() && pads.size() != 2 * n) L.error("pads has wrong length");
    } else if (ap == "SAME_UPPER") auto_pad = 1;
    else if (ap == "SAME_LOWER") auto_pad = 2;
    else if (ap == "VALID") auto_pad = 3;
    else L.error("unknown auto_pad '" + ap + "'");
    if (pads.empty() || auto_pad != 0) pads.assign(2 * n, 0);
    group = L.node.get_int("group", 1);
    if (group <= 0 || xs[1] % group || ws[0] % group || ws[1] != xs[1] / group) L.error("bad group/channel counts");
}

// Runs `conv` on x, or for 3-D convolutions (rank 5, where ggml folds N and C) on each image [W, H, D, C],
// concatenating the results along ggml dim 3; returns the result with its ONNX shape in os.
ggml_tensor* per_image(Lower& L, ggml_tensor* x, const std::function<ggml_tensor*(ggml_tensor*)>& conv, int iw,
                       Shape& os) {
    const Shape& xs = L.shape(0);
    ggml_tensor* y = nullptr;
    if (xs.size() < 5) {
        y = conv(x);
    } else {
        x = O2G_CALL(L, o2g::cont, x);
        for (int64_t n = 0; n < xs[0]; n++) {
            ggml_tensor* xn = O2G_CALL(L, ggml_view_4d, x, xs[4], xs[3], xs[2], xs[1], int64_t(x->nb[1]),
                                       int64_t(x->nb[2]), int64_t(x->nb[3]), int64_t(n * xs[1]) * int64_t(x->nb[3]));
            ggml_tensor* yn = conv(xn);
            y = n == 0 ? yn : O2G_CALL(L, ggml_concat, y, yn, 3);
        }
    }
    int nd = int(xs.size()) - 2;
    os = {xs[0], L.shape(iw)[0]};
    for (int i = nd - 1; i >= 0; i--) os.push_back(y->ne[i]);
    return y;
}

}  // namespace

void lower_QuantizeLinear(Lower& L) {
    if (!dtype_is_float(L.dtype(0))) L.error("input must be float");
    // To a narrow float (float8, float4e2m1): on the host, where mark_host_values put the inputs, rounded by
    // ONNX's Cast rules. The 4- and 2-bit integers are plain integer ranges for the device kernel.
    DType to = L.has(2) ? L.dtype(2) : DType(L.node.get_int("output_dtype", 0));
    if (dtype_is_narrow(to) && !dtype_is_integer(to)) {
        if (!L.has(2)) L.error("quantizing to a narrow float needs the zero point input");
        if (!L.in(0).host || !L.in(1).host || !L.in(2).host) L.error("quantizing to a narrow float needs host inputs");
        const bool per_tensor = shape_numel(L.shape(1)) == 1 && L.node.get_int("block_size", 0) == 0;
        const int64_t axis = per_tensor ? 0 : norm_axis(L, L.node.get_int("axis", 1), L.rank(0));
        const bool saturate = L.node.get_int("saturate", 1) != 0;
        O2G_HOST(L, 0, o2g::host_quantize_narrow, L.hv(0), L.hv(1), L.hv(2), axis, L.node.get_int("block_size", 0),
                 saturate);
        L.b.stats.host_float_nodes++;  // float math on the host: --stats says so
        return;
    }
    lower_quant_common(L, false);
}
void lower_DequantizeLinear(Lower& L) { lower_quant_common(L, true); }

void lower_DynamicQuantizeLinear(Lower& L) {
    const Shape& xs = L.shape(0);
    ggml_tensor* x = L.t(0);
    ggml_tensor* st = O2G_CALL(L, o2g::dynamic_quantize_scale_zero_point, x);
    L.out_shape(0, O2G_CALL(L, o2g::dynamic_quantize_linear, x, st, 0), DType::UINT8, xs);
    if (wanted_out(L, 1)) L.out_shape(1, O2G_CALL(L, o2g::dynamic_quantize_linear, x, st, 1), L.dtype(0), {});
    if (wanted_out(L, 2)) L.out_shape(2, O2G_CALL(L, o2g::dynamic_quantize_linear, x, st, 2), DType::UINT8, {});
}

void lower_MatMulInteger(Lower& L) { lower_int_matmul(L, false); }
void lower_QLinearMatMul(Lower& L) { lower_int_matmul(L, true); }

void lower_ConvInteger(Lower& L) {
    o2g::ConvIntegerParams p;
    conv_attrs(L, 1, p.strides, p.dilations, p.pads, p.auto_pad, p.group);
    ggml_tensor *x = raw_t(L, 0), *w = raw_t(L, 1), *xz = opt_raw(L, 2), *wz = opt_raw(L, 3);
    Shape os;
    ggml_tensor* y = per_image(
        L, x, [&](ggml_tensor* xi) { return O2G_CALL(L, o2g::conv_integer, xi, w, xz, wz, p); }, 1, os);
    L.out_shape(0, y, DType::INT32, os);
}

void lower_QLinearConv(Lower& L) {
    o2g::QLinearConvParams p;
    conv_attrs(L, 3, p.strides, p.dilations, p.pads, p.auto_pad, p.group);
    int64_t M = L.shape(3)[0], nw = shape_numel(L.shape(4));
    if (nw != 1 && nw != M) L.error("w_scale must be a scalar or per output channel");
    if (shape_numel(L.shape(1)) != 1 || shape_numel(L.shape(6)) != 1 || !L.has(7) || shape_numel(L.shape(7)) != 1)
        L.error("x/y scales and y zero point must be scalars");
    DType out_t = L.dtype(7);
    if (!int_range(out_t, p.qmin, p.qmax)) L.error("unsupported output type");
    ggml_tensor *x = raw_t(L, 0), *w = raw_t(L, 3), *xz = opt_raw(L, 2), *wz = opt_raw(L, 5);
    ggml_tensor *xs = L.t(1), *ws = L.t(4), *ys = L.t(6), *yz = raw_t(L, 7), *bias = opt_raw(L, 8);
    Shape os;
    ggml_tensor* y = per_image(
        L, x, [&](ggml_tensor* xi) { return O2G_CALL(L, o2g::qlinear_conv, xi, xs, xz, w, ws, wz, ys, yz, bias, p); },
        3, os);
    L.out_shape(0, y, out_t, os);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& quantize_ops() {
    static const std::vector<OpDef> t = {
        {.op = "QuantizeLinear", .since = 10, .accepts = "in=2..3 out=1", .ggml = lower_QuantizeLinear, .math = true},
        {.op = "DequantizeLinear", .since = 10, .accepts = "in=2..3 out=1",
         .ggml = lower_DequantizeLinear, .math = true},
        {.op = "DynamicQuantizeLinear", .since = 11, .accepts = "in=1 out=3",
         .ggml = lower_DynamicQuantizeLinear, .math = true},
        {.op = "MatMulInteger", .since = 10, .accepts = "in=2..4 out=1", .ggml = lower_MatMulInteger, .math = true},
        {.op = "QLinearMatMul", .since = 10, .accepts = "in=8 out=1", .ggml = lower_QLinearMatMul, .math = true},
        {.op = "ConvInteger", .since = 10, .accepts = "in=2..4 out=1", .ggml = lower_ConvInteger, .math = true},
        {.op = "QLinearConv", .since = 10, .accepts = "in=8..9 out=1", .ggml = lower_QLinearConv, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
