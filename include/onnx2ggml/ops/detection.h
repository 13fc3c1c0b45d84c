// Op library, Detection: RoiAlign (NonMaxSuppression runs on the host).
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
