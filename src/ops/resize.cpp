// Resampling ops: Resize (10-19), Upsample (7-9), GridSample (16, 20, 22), AffineGrid (20).
#include <cmath>
#include <utility>

#include "ops/op.h"

namespace onnx2ggml {

namespace {

int option(Lower& L, const char* attr, const std::string& v, std::initializer_list<const char*> names) {
    int i = 0;
    for (const char* n : names) {
        if (v == n) return i;
        i++;
    }
    L.error(std::string(attr) + " '" + v + "' is not supported");
}

}  // namespace

// Resize and Upsample. Scales and roi must be known when the graph is built (constants); sizes may follow the
// input shape.
void lower_Resize(Lower& L) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    if (r > 4) L.error("Resize of rank > 4 is not supported");
    o2g::ResizeParams p;
    std::string mode = L.node.get_string("mode", "nearest");
    if (mode == "bilinear" && (L.node.op_type == "Upsample" || L.opset < 10)) mode = "linear";
    p.mode = option(L, "mode", mode, {"nearest", "linear", "cubic"});
    std::string ctm = L.node.get_string("coordinate_transformation_mode", L.opset < 11 ? "asymmetric" : "half_pixel");
    p.coord = option(L, "coordinate_transformation_mode", ctm,
                     {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                      "half_pixel_symmetric", "tf_crop_and_resize"});
    // Upsample and Resize-10 index nearest neighbours by flooring.
    const bool legacy = L.node.op_type == "Upsample" || L.opset < 11;
    p.nearest = option(L, "nearest_mode", L.node.get_string("nearest_mode", legacy ? "floor" : "round_prefer_floor"),
                       {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
    p.cubic_a = L.node.get_float("cubic_coeff_a", -0.75f);
    p.exclude_outside = L.node.get_int("exclude_outside", 0) != 0;
    p.extrapolation = L.node.get_float("extrapolation_value", 0.0f);
    if (L.node.get_int("antialias", 0) != 0) L.error("antialias is not supported");
    p.aspect = option(L, "keep_aspect_ratio_policy", L.node.get_string("keep_aspect_ratio_policy", "stretch"),
                      {"stretch", "not_larger", "not_smaller"});
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    for (auto a : axes) p.dims.push_back(gdim(r, norm_axis(L, a, r)));
    Sym sizes;
    if (L.node.op_type == "Upsample" || L.opset < 10) {
        if (L.opset < 9) p.scales = L.node.get_floats("scales");
        else
            for (double s : L.h(1).to_f64()) p.scales.push_back(float(s));
        p.dims.clear();
        for (int i = 0; i < r; i++) p.dims.push_back(gdim(r, i));
        p.aspect = 0;
    } else {
        const int si = L.opset >= 11 ? 2 : 1, zi = 3;
        const bool has_scales = L.has(si) && L.h(si).numel() > 0;
        const bool has_sizes = L.opset >= 11 && L.has(zi) && L.in(zi).shape.size() == 1 && L.in(zi).shape[0] > 0;
        if (has_sizes) sizes = L.sym(zi);
        else if (has_scales)
            for (double s : L.h(si).to_f64()) p.scales.push_back(float(s));
        else L.error("Resize needs scales or sizes");
        if (p.coord == 6 && L.opset >= 11 && L.has(1)) {
            std::vector<double> roi = L.h(1).to_f64();
            if (roi.size() == 2 * axes.size()) p.roi.assign(roi.begin(), roi.end());
        }
        if (!has_sizes) p.aspect = 0;
    }
    if (sizes.v.empty() && p.scales.size() != p.dims.size()) L.error("scales do not match the resized axes");
    if (!sizes.v.empty() && sizes.v.size() != p.dims.size()) L.error("sizes do not match the resized axes");
    L.out(0, O2G_CALL(L, o2g::resize, L.t(0), std::as_const(sizes), p), L.dtype(0), r);
}

void lower_GridSample(Lower& L) {
    const Shape& xs = L.shape(0);
    const Shape& gs = L.shape(1);
    const int k = int(xs.size()) - 2;
    if (k < 1 || k > 3) L.error("only 1 to 3 spatial dimensions are supported");
    if (int(gs.size()) != k + 2 || gs[0] != xs[0] || gs.back() != k)
        L.error("grid shape " + shape_str(gs) + " does not match input " + shape_str(xs));
    if (L.opset < 20 && k != 2) L.error("GridSample before opset 20 takes 4-D input");
    o2g::GridSampleParams p;
    p.mode = option(L, "mode", L.node.get_string("mode", L.opset >= 20 ? "linear" : "bilinear"),
                    {"linear", "nearest", "cubic", "bilinear", "bicubic"});
    if (p.mode == 3) p.mode = 0;  // bilinear
    if (p.mode == 4) p.mode = 2;  // bicubic
    p.padding = option(L, "padding_mode", L.node.get_string("padding_mode", "zeros"), {"zeros", "border", "reflection"});
    p.align_corners = L.node.get_int("align_corners", 0) != 0;
    p.spatial = k;
    if (k == 3) p.batch = xs[0];  // ggml folds rank 5: compile refuses when it changes
    Shape os = {xs[0], xs[1]};
    os.insert(os.end(), gs.begin() + 1, gs.end() - 1);
    L.out_shape(0, O2G_CALL(L, o2g::grid_sample, L.t(0), L.t(1), p), L.dtype(0), os);
}

void lower_AffineGrid(Lower& L) {
    const Shape& ts = L.shape(0);
    const Sym size = L.sym(1);
    if (size.v.size() != 4 && size.v.size() != 5) L.error("size must have 4 or 5 elements");
    const int k = int(size.v.size()) - 2;
    if (ts.size() != 3 || ts[0] != size.v[0] || ts[1] != k || ts[2] != k + 1)
        L.error("theta must be [N, " + std::to_string(k) + ", " + std::to_string(k + 1) + "]");
    o2g::AffineGridParams p;
    p.align_corners = L.node.get_int("align_corners", 0) != 0;
    Shape os = {size.v[0]};
    os.insert(os.end(), size.v.begin() + 2, size.v.end());
    os.push_back(k);
    L.out_shape(0, O2G_CALL(L, o2g::affine_grid, L.t(0), size, p), L.dtype(0), os);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& resize_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Resize", .since = 10, .ggml = lower_Resize, .host_inputs = {1,2,3}, .math = true},
        {.op = "Upsample", .since = 7, .ggml = lower_Resize, .host_inputs = {1}, .math = true},
        {.op = "GridSample", .since = 16, .ggml = lower_GridSample, .math = true},
        {.op = "AffineGrid", .since = 20, .ggml = lower_AffineGrid, .host_inputs = {1}, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
