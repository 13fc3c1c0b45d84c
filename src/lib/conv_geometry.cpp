// Op library: window geometry of Conv, ConvTranspose and pooling (see include/onnx2ggml/ops/conv.h): output
// sizes and pads from ONNX attributes, bounded so that no hostile size overflows the arithmetic.
#include <algorithm>
#include <string>

#include "kernels/window.h"
#include "lib/window.h"

namespace o2g {

// ---- geometry ----

int auto_pad_value(const std::string& s) {
    if (s == "NOTSET") return AUTO_PAD_NOTSET;
    if (s == "SAME_UPPER") return AUTO_PAD_SAME_UPPER;
    if (s == "SAME_LOWER") return AUTO_PAD_SAME_LOWER;
    if (s == "VALID") return AUTO_PAD_VALID;
    throw OpError("unknown auto_pad '" + s + "'");
}

namespace {

Ints or_fill(const Ints& v, size_t n, int64_t def, const char* what) {
    if (v.empty()) return Ints(n, def);
    if (v.size() != n)
        throw OpError(std::string(what) + " " + ints_literal(v) + " has " + std::to_string(v.size()) + " values for " +
                      std::to_string(n) + " spatial axes");
    return v;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

constexpr int64_t kMaxWindow = int64_t(1) << 30;  // kernel, stride, dilation and pad sizes beyond any real model

void check_window(const Ints& in, const Ints& kernel, const Ints& s, const Ints& d) {
    if (kernel.size() != in.size())
        throw OpError("kernel_shape " + ints_literal(kernel) + " has " + std::to_string(kernel.size()) + " values for " +
                      std::to_string(in.size()) + " spatial axes");
    for (size_t i = 0; i < in.size(); i++)
        if (kernel[i] < 1 || s[i] < 1 || d[i] < 1)
            throw OpError("kernel_shape " + ints_literal(kernel) + ", strides " + ints_literal(s) + " and dilations " + ints_literal(d) +
                          " must be positive");
    for (size_t i = 0; i < in.size(); i++)
        if (kernel[i] > kMaxWindow || s[i] > kMaxWindow || d[i] > kMaxWindow)
            throw OpError("kernel_shape " + ints_literal(kernel) + ", strides " + ints_literal(s) + " or dilations " + ints_literal(d) +
                          " out of range");
}

// Bounds pads so the window arithmetic cannot overflow int64 (a hostile model's pads of 2^63-1: tests/fuzz).
void check_pads(const Ints& pads, const char* what) {
    for (int64_t p : pads)
        if (p > kMaxWindow || p < -kMaxWindow) throw OpError(std::string(what) + " " + ints_literal(pads) + " out of range");
}

// The window's sizes, strides and dilations (1 where not given), checked.
WindowGeometry window_base(const Ints& in, const Ints& kernel, const Ints& strides, const Ints& dilations) {
    const size_t n = in.size();
    WindowGeometry g;
    g.in = in;
    g.kernel = kernel;
    g.strides = or_fill(strides, n, 1, "strides");
    g.dilations = or_fill(dilations, n, 1, "dilations");
    check_window(in, kernel, g.strides, g.dilations);
    return g;
}

}  // namespace

WindowGeometry conv_geometry(const Ints& in, const Ints& kernel, int auto_pad, const Ints& pads, const Ints& strides,
                             const Ints& dilations, bool ceil_mode) {
    const size_t n = in.size();
    WindowGeometry g = window_base(in, kernel, strides, dilations);
    check_pads(pads, "pads");
    if (auto_pad < AUTO_PAD_NOTSET || auto_pad > AUTO_PAD_VALID)
        throw OpError("unknown auto_pad value " + std::to_string(auto_pad));
    g.pad_begin.assign(n, 0);
    g.pad_end.assign(n, 0);
    g.out.assign(n, 0);
    if (auto_pad == AUTO_PAD_NOTSET && !pads.empty()) {
        if (pads.size() != 2 * n)
            throw OpError("pads " + ints_literal(pads) + " has " + std::to_string(pads.size()) + " values for " +
                          std::to_string(n) + " spatial axes");
        for (size_t i = 0; i < n; i++) {
            g.pad_begin[i] = pads[i];
            g.pad_end[i] = pads[i + n];
        }
    }
    for (size_t i = 0; i < n; i++) {
        const int64_t s = g.strides[i], ek = (kernel[i] - 1) * g.dilations[i] + 1;
        int64_t o;
        if (auto_pad == AUTO_PAD_SAME_UPPER || auto_pad == AUTO_PAD_SAME_LOWER) {
            o = ceil_div(in[i], s);
            int64_t total = std::max<int64_t>(0, (o - 1) * s + ek - in[i]);
            g.pad_begin[i] = auto_pad == AUTO_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            g.pad_end[i] = total - g.pad_begin[i];
        } else if (auto_pad == AUTO_PAD_VALID) {
            o = floor_div(in[i] - ek, s) + 1;
        } else {
            int64_t span = in[i] + g.pad_begin[i] + g.pad_end[i] - ek;
            o = (ceil_mode ? ceil_div(span, s) : floor_div(span, s)) + 1;
            if (ceil_mode && (o - 1) * s >= in[i] + g.pad_begin[i]) o--;  // a last window starting in the padding
        }
        if (o < 1)
            throw OpError("the output would be empty: input " + ints_literal(in) + ", kernel_shape " + ints_literal(kernel) +
                          ", strides " + ints_literal(g.strides) + ", dilations " + ints_literal(g.dilations) + ", pads " +
                          ints_literal(g.pad_begin) + " / " + ints_literal(g.pad_end));
        g.out[i] = o;
    }
    return g;
}

WindowGeometry conv_transpose_geometry(const Ints& in, const Ints& kernel, int auto_pad, const Ints& pads,
                                       const Ints& strides, const Ints& dilations, const Ints& output_padding,
                                       const Ints& output_shape) {
    const size_t n = in.size();
    WindowGeometry g = window_base(in, kernel, strides, dilations);
    Ints op = or_fill(output_padding, n, 0, "output_padding");
    check_pads(pads, "pads");
    check_pads(op, "output_padding");
    if (auto_pad < AUTO_PAD_NOTSET || auto_pad > AUTO_PAD_VALID)
        throw OpError("unknown auto_pad value " + std::to_string(auto_pad));
    if (!output_shape.empty() && output_shape.size() < n)
        throw OpError("output_shape " + ints_literal(output_shape) + " has fewer than " + std::to_string(n) + " values");
    const bool same = auto_pad == AUTO_PAD_SAME_UPPER || auto_pad == AUTO_PAD_SAME_LOWER;
    if (auto_pad == AUTO_PAD_NOTSET && output_shape.empty() && !pads.empty() && pads.size() != 2 * n)
        throw OpError("pads " + ints_literal(pads) + " has " + std::to_string(pads.size()) + " values for " +
                      std::to_string(n) + " spatial axes");
    g.pad_begin.assign(n, 0);
    g.pad_end.assign(n, 0);
    g.out.assign(n, 0);
    for (size_t i = 0; i < n; i++) {
        const int64_t full = g.strides[i] * (in[i] - 1) + op[i] + (kernel[i] - 1) * g.dilations[i] + 1;
        if (!output_shape.empty() || same) {
            const int64_t target = !output_shape.empty() ? output_shape[output_shape.size() - n + i] : in[i] * g.strides[i];
            const int64_t total = full - target;
            // An odd unit of padding goes at the end for SAME_UPPER, at the start otherwise (the spec; onnxruntime
            // agrees). A larger output than the full one (negative padding) grows at the end, SAME_LOWER's at the
            // start: no reference defines it (onnxruntime leaves that part unwritten).
            const bool odd_first = total >= 0 ? auto_pad != AUTO_PAD_SAME_UPPER : auto_pad == AUTO_PAD_SAME_LOWER;
            g.pad_begin[i] = odd_first ? total - total / 2 : total / 2;
            g.pad_end[i] = total - g.pad_begin[i];
        } else if (auto_pad == AUTO_PAD_NOTSET && !pads.empty()) {
            g.pad_begin[i] = pads[i];
            g.pad_end[i] = pads[i + n];
        }
        g.out[i] = full - g.pad_begin[i] - g.pad_end[i];
        if (g.out[i] < 1)
            throw OpError("the output would be empty: input " + ints_literal(in) + ", kernel_shape " + ints_literal(kernel) +
                          ", strides " + ints_literal(g.strides) + ", pads " + ints_literal(g.pad_begin) + " / " + ints_literal(g.pad_end));
        // The pads and kernel are bounded to 2^30 (check_pads, window_base); an output_shape is too (fuzz: INT64_MAX).
        if (g.out[i] > (int64_t(1) << 30))
            throw OpError("output size " + std::to_string(g.out[i]) + " is above 2^30 (output_shape " +
                          ints_literal(output_shape) + ")");
    }
    return g;
}

Ints spatial_sizes(const ggml_tensor* x, int dims) {
    Ints r(static_cast<size_t>(dims));
    for (int i = 0; i < dims; i++) r[size_t(i)] = x->ne[dims - 1 - i];
    return r;
}

}  // namespace o2g
