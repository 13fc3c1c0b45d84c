// Op library: detection (see include/onnx2ggml/ops/detection.h).
#include <string>

#include "kernels/custom.h"
#include "kernels/detection.h"

namespace o2g {

ggml_tensor* roi_align(Ctx& ctx, ggml_tensor* x, ggml_tensor* rois, ggml_tensor* batch_indices,
                       const RoiAlignParams& p) {
    if (p.output_height < 1 || p.output_width < 1) throw OpError("output_height and output_width must be positive");
    // Detection heads pool 7x7 to 56x56 bins; the cap bounds the samples a RoI takes (fuzz: 64 x 65536 bins).
    if (p.output_height * p.output_width > (int64_t(1) << 18))
        throw OpError("output_height x output_width " + std::to_string(p.output_height) + " x " +
                      std::to_string(p.output_width) + " is above 2^18 bins per RoI");
    if (p.sampling_ratio < 0 || p.sampling_ratio > kMaxRoiGrid)
        throw OpError("sampling_ratio " + std::to_string(p.sampling_ratio) + " is out of range (0 to " +
                      std::to_string(kMaxRoiGrid) + ")");
    int64_t R = rois->ne[1];
    if (rois->ne[0] != 4 || rois->ne[2] != 1 || rois->ne[3] != 1) throw OpError("rois must be [4, num_rois]");
    if (ggml_nelements(batch_indices) != R || batch_indices->ne[0] != R)
        throw OpError("batch_indices must be [num_rois] (" + std::to_string(R) + ")");
    RoiAlignKernelParams k{p.output_height, p.output_width, p.sampling_ratio, p.spatial_scale, p.half_pixel,
                           p.max_mode};
    ggml_tensor* args[3] = {f32_cont(ctx, x), f32_cont(ctx, rois), cont(ctx, batch_indices)};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, k.ow, k.oh, x->ne[2], R, args, 3, roi_align_kernel, GGML_N_TASKS_MAX,
                          keep_params(k));
}

}  // namespace o2g
