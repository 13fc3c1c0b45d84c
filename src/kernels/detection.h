// CPU kernel of RoiAlign (a ggml custom op): one work item per (RoI, channel).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Samples per bin side: sampling_ratio above it is refused at lowering, an adaptive grid is capped to it.
constexpr int64_t kMaxRoiGrid = 1024;
// Samples of one RoI (all its bins): a grid that would take more is made coarser, so a RoI from garbage data
// cannot make the kernel build a table of gigabytes (found by tests/fuzz: 200M samples, then 4M per RoI and
// channel: timeouts). Real grids are far below it (Mask R-CNN: 14 x 14 bins of 2 x 2; 56 x 56 of 4 x 4 is 50k).
constexpr int64_t kMaxRoiSamples = int64_t(1) << 20;

// src 0 x [W, H, C, N] F32, src 1 rois [4, R] F32, src 2 batch indices [R] (I32 or F32) -> [ow, oh, C, R].
struct RoiAlignKernelParams {
    int64_t oh, ow, sampling;
    float spatial_scale;
    bool half_pixel, max_mode;
};
void roi_align_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

}  // namespace o2g
