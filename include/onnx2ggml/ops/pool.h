// Op library, Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LpPool.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
