// Op library, Normalization: BatchNormalization, InstanceNormalization, GroupNorm (fused), LayerNormalization, ....
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
