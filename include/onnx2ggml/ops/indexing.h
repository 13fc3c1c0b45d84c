// Op library, Indexing: Gather, GatherElements, GatherND, ScatterND, ScatterElements, Trilu, CumSum.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
