// Op library, Detection: RoiAlign (NonMaxSuppression runs on the host).
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

struct RoiAlignParams {
    int64_t output_height = 1, output_width = 1, sampling_ratio = 0;  // sampling_ratio 0: adaptive
    float spatial_scale = 1.0f;
    bool half_pixel = true;  // coordinate_transformation_mode half_pixel (else output_half_pixel)
    bool max_mode = false;   // mode max (else avg)
    void fields(FieldWriter& f) const {
        f("output_height", output_height);
        f("output_width", output_width);
        f("sampling_ratio", sampling_ratio);
        f("spatial_scale", spatial_scale);
        f("half_pixel", half_pixel);
        f("max_mode", max_mode);
    }
};
// RoiAlign of x [W, H, C, N] over rois [4, R] (x0, y0, x1, y1) from images batch_indices [R]
// -> [output_width, output_height, C, R]; a RoI with a bad batch index gives NaN.
ggml_tensor* roi_align(Ctx& ctx, ggml_tensor* x, ggml_tensor* rois, ggml_tensor* batch_indices,
                       const RoiAlignParams& p);

}  // namespace o2g
