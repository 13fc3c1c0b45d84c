// Op library, Tensor movement: Reshape, Transpose, Concat, Split, Slice, Expand, Tile, Pad, Cast, DepthToSpace.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
