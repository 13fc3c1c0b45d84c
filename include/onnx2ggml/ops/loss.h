// Op library, Losses: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
