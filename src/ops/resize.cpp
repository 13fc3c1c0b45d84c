// Resampling ops: Resize (10-19), Upsample (7-9), GridSample (16, 20, 22), AffineGrid (20).
#include <cmath>

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

// Attributes every form of Resize and Upsample reads. Upsample and Resize-10 have no coordinate_transformation_mode
// or nearest_mode: they map asymmetric and pick neighbours by flooring, Resize-11's defaults differ.
o2g::ResizeParams resize_params(Lower& L, bool legacy) {
    const int r = L.rank(0);
    if (r > 4) L.error("Resize of rank > 4 is not supported");
    o2g::ResizeParams p;
    std::string mode = L.node.get_string("mode", "nearest");
    if (mode == "bilinear" && L.node.op_type == "Upsample") mode = "linear";
    p.mode = option(L, "mode", mode, {"nearest", "linear", "cubic"});
    std::string ctm = L.node.get_string("coordinate_transformation_mode", legacy ? "asymmetric" : "half_pixel");
    p.coord = option(L, "coordinate_transformation_mode", ctm,
                     {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                      "half_pixel_symmetric", "tf_crop_and_resize"});
    p.nearest = option(L, "nearest_mode", L.node.get_string("nearest_mode", legacy ? "floor" : "round_prefer_floor"),
                       {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
    p.cubic_a = L.node.get_float("cubic_coeff_a", -0.75f);
    p.exclude_outside = L.node.get_int("exclude_outside", 0) != 0;
    p.extrapolation = L.node.get_float("extrapolation_value", 0.0f);
    if (L.node.get_int("antialias", 0) != 0) L.error("antialias is not supported");
    return p;
}

// Output from scales or sizes, one per resized axis (p.dims).
void resize_out(Lower& L, const o2g::ResizeParams& p, const Sym& sizes) {
    if (sizes.v.empty() && p.scales.size() != p.dims.size()) L.error("scales do not match the resized axes");
    if (!sizes.v.empty() && sizes.v.size() != p.dims.size()) L.error("sizes do not match the resized axes");
    L.out(0, O2G_CALL(L, o2g::resize, L.t(0), sizes, p), L.dtype(0), L.rank(0));
}

// Upsample and Resize-10: one scale for every axis.
void resize_all_axes(Lower& L, const std::vector<float>& scales) {
    o2g::ResizeParams p = resize_params(L, true);
    p.scales = scales;
    for (int i = 0; i < L.rank(0); i++) p.dims.push_back(gdim(L.rank(0), i));
    resize_out(L, p, Sym{});
}

}  // namespace

// ---- Resize, Upsample ----
// Scales and roi must be known when the graph is built; compile passes them on as params fields, sizes as Ints.
// Upsample-7: the scales attribute.
void lower_Upsample_7(Lower& L) { resize_all_axes(L, L.node.get_floats("scales")); }
// Upsample-9 and Resize-10: the scales input.
void lower_Resize_10(Lower& L) {
    resize_all_axes(L, L.param_floats(1, "scales"));
}
// Resize-11 on: inputs roi, scales, sizes (18: axes, keep_aspect_ratio_policy).
void lower_Resize(Lower& L) {
    o2g::ResizeParams p = resize_params(L, false);
    const int r = L.rank(0);
    p.aspect = option(L, "keep_aspect_ratio_policy", L.node.get_string("keep_aspect_ratio_policy", "stretch"),
                      {"stretch", "not_larger", "not_smaller"});
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    for (auto a : axes) p.dims.push_back(gdim(r, norm_axis(L, a, r)));
    const bool has_scales = L.has(2) && shape_numel(L.shape(2)) > 0;
    const bool has_sizes = L.has(3) && L.in(3).shape.size() == 1 && L.in(3).shape[0] > 0;
    Sym sizes;
    if (has_sizes) sizes = L.sym(3);
    else if (has_scales) p.scales = L.param_floats(2, "scales");
    else L.error("Resize needs scales or sizes");
    if (p.coord == 6 && L.has(1) && shape_numel(L.shape(1)) == int64_t(2 * axes.size()))
        p.roi = L.param_floats(1, "roi");
    if (!has_sizes) p.aspect = 0;
    resize_out(L, p, sizes);
}

// ---- GridSample, AffineGrid ----
// GridSample-16 takes 4-D input and names its modes bilinear / bicubic (default bilinear); 20 adds N-D input and
// linear / cubic (default linear).
static void grid_sample(Lower& L, const char* default_mode) {
    const Shape& xs = L.shape(0);
    const Shape& gs = L.shape(1);
    const int k = int(xs.size()) - 2;
    if (k < 1 || k > 3) L.error("only 1 to 3 spatial dimensions are supported");
    if (int(gs.size()) != k + 2 || gs[0] != xs[0] || gs.back() != k)
        L.error("grid shape " + shape_str(gs) + " does not match input " + shape_str(xs));
    o2g::GridSampleParams p;
    p.mode = option(L, "mode", L.node.get_string("mode", default_mode),
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
void lower_GridSample_16(Lower& L) {
    if (L.rank(0) != 4) L.error("GridSample before opset 20 takes 4-D input");
    grid_sample(L, "bilinear");
}
void lower_GridSample(Lower& L) { grid_sample(L, "linear"); }

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
        {.op = "Resize", .since = 10, .accepts = "in=2 out=1 t1=float",
         .ggml = lower_Resize_10, .host_inputs = {1}, .math = true},
        {.op = "Resize", .since = 11, .accepts = "in=1..4 out=1 t2=float t3=int",
         .ggml = lower_Resize, .host_inputs = {1,2,3}, .math = true},
        {.op = "Upsample", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Upsample_7, .math = true},
        {.op = "Upsample", .since = 9, .accepts = "in=2 out=1 t1=float",
         .ggml = lower_Resize_10, .host_inputs = {1}, .math = true},
        {.op = "GridSample", .since = 16, .accepts = "in=2 out=1", .ggml = lower_GridSample_16, .math = true},
        {.op = "GridSample", .since = 20, .accepts = "in=2 out=1", .ggml = lower_GridSample, .math = true},
        {.op = "AffineGrid", .since = 20, .accepts = "in=2 out=1",
         .ggml = lower_AffineGrid, .host_inputs = {1}, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
