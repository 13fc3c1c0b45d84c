// Op library, Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin, Softmax, LogSoftmax.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
