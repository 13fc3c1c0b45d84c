// Host-side helpers for shape, integer and boolean work evaluated at build time.
#pragma once
#include <functional>

#include "ops/op.h"

namespace onnx2ggml {

// For each element of `out`, the flat index into a tensor of shape `in` under numpy broadcasting.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out);
// A tensor of shape `out` whose element k is element map[k] (a flat index) of `src`.
HostTensor host_gather_flat(const HostTensor& src, const Shape& out, const std::vector<int64_t>& map);
// Rows of `inner` elements: output row k (of a tensor of shape os) is row rows[k] of x, or zeros for -1.
HostTensor host_take_rows(const HostTensor& x, int64_t inner, const std::vector<int64_t>& rows, const Shape& os);
// Row-major strides.
std::vector<int64_t> strides_of(const Shape& s);

// Flat element offsets into `data` for GatherElements/ScatterElements: index tensor `idx` replaces the
// coordinate along `axis` (negative indices wrap; out-of-range ones are an error).
std::vector<int64_t> element_offsets(Lower& L, const Shape& data, const HostTensor& idx, int axis);

// Elementwise n-ary evaluation with broadcasting. Integer inputs use int64 math, others double.
HostTensor host_map(Lower& L, DType out_dtype, const std::vector<int>& inputs,
                    const std::function<double(const double*)>& f_float,
                    const std::function<int64_t(const int64_t*)>& f_int);

}  // namespace onnx2ggml
