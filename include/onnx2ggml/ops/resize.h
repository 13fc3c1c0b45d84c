// Op library, Resampling: Resize, Upsample, GridSample, AffineGrid.
// Included by onnx2ggml/ops.h; see its conventions. Functions marked "CPU kernel" run as ggml custom ops, so only
// on the CPU backend.
#pragma once

namespace o2g {

struct ResizeParams {
    int mode = 0;      // 0 nearest, 1 linear, 2 cubic
    int coord = 0;     // coordinate transformation: 0 half_pixel, 1 pytorch_half_pixel, 2 align_corners,
                       // 3 asymmetric, 4 tf_half_pixel_for_nn, 5 half_pixel_symmetric, 6 tf_crop_and_resize
    int nearest = 0;   // nearest rounding: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
    float cubic_a = -0.75f;
    bool exclude_outside = false;
    float extrapolation = 0.0f;  // tf_crop_and_resize: value outside the image
    int aspect = 0;    // with sizes: keep_aspect_ratio_policy 0 stretch, 1 not_larger, 2 not_smaller
    Ints dims{};                // ggml dims the entries of scales, sizes and roi apply to, in their order
    std::vector<float> scales{};  // per entry of dims (unused when sizes are given)
    std::vector<float> roi{};   // tf_crop_and_resize: starts then ends per entry of dims; empty: 0 and 1
    void fields(FieldWriter& f) const {
        f("mode", mode);
        f("coord", coord);
        f("nearest", nearest);
        f("cubic_a", cubic_a);
        f("exclude_outside", exclude_outside);
        f("extrapolation", extrapolation);
        f("aspect", aspect);
        f("dims", dims);
        f("scales", scales);
        f("roi", roi);
    }
};
// ONNX Resize (and Upsample): output sizes from `sizes` (per entry of p.dims; empty: from p.scales), then one
// separable pass per resized dim: gathers of host-computed taps blended by their weights (exact for every mode),
// or ggml's nearest interpolation for integer nearest upscaling.
ggml_tensor* resize(Ctx& ctx, ggml_tensor* x, const Ints& sizes, const ResizeParams& p);

struct GridSampleParams {
    int mode = 0;     // 0 linear, 1 nearest, 2 cubic
    int padding = 0;  // 0 zeros, 1 border, 2 reflection
    bool align_corners = false;
    int spatial = 2;  // spatial dims (1 to 3): x is ONNX [N, C, spatial...], grid [N, out spatial..., spatial]
    int64_t batch = 0;  // 3 spatial dims only: N (ggml folds N with C, and N with the first output dim)
    void fields(FieldWriter& f) const {
        f("mode", mode);
        f("padding", padding);
        f("align_corners", align_corners);
        f("spatial", spatial);
        f("batch", batch);
    }
};
// Samples x at the grid's normalized coordinates (CPU kernel, coordinates in double as the reference does).
ggml_tensor* grid_sample(Ctx& ctx, ggml_tensor* x, ggml_tensor* grid, const GridSampleParams& p);

struct AffineGridParams {
    bool align_corners = false;
    void fields(FieldWriter& f) const { f("align_corners", align_corners); }
};
// Sampling grid [N, spatial..., k] for theta [N, k, k+1] and ONNX size {N, C, spatial...} (k = 2 or 3).
ggml_tensor* affine_grid(Ctx& ctx, ggml_tensor* theta, const Ints& size, const AffineGridParams& p);

}  // namespace o2g
