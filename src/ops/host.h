// Host-side helpers for shape, integer and boolean work evaluated at build time.
#pragma once

#include "lib/host_util.h"
#include "ops/op.h"

namespace onnx2ggml {


// Flat element offsets into `data` for GatherElements/ScatterElements: index tensor `idx` replaces the
// coordinate along `axis` (negative indices wrap; out-of-range ones are an error).
std::vector<int64_t> element_offsets(Lower& L, const Shape& data, const HostTensor& idx, int axis);

}  // namespace onnx2ggml
