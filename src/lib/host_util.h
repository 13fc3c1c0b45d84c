// Index helpers for host tensors (row-major), shared by the op library's host functions and the op-table rows.
#pragma once
#include <string>
#include <vector>

#include "onnx2ggml/host_tensor.h"

struct ggml_tensor;

namespace onnx2ggml {

// An ONNX axis of a rank-`rank` tensor made non-negative; OpError naming `what` when out of range.
int64_t host_axis(int64_t axis, int64_t rank, const char* what);
// Physical memory, or the cgroup's limit when that is smaller (read once).
size_t machine_memory();
// The limit host tensors are checked against on this thread: `limit` bytes (0: machine_memory()) until reset.
// Returns the previous setting, so that a session can set it around a graph build and restore it.
size_t set_host_memory_limit(size_t limit);
size_t host_memory_limit();
// OpError, before anything is allocated, when `what` of shape `s` with `elem_bytes` per element would overflow
// or exceed host_memory_limit(); the message gives the shape and both sizes.
void check_host_size(const Shape& s, size_t elem_bytes, const char* what);
// "1.1 PiB", "512.0 MiB", "96 bytes".
std::string bytes_str(double bytes);
// Row-major strides.
std::vector<int64_t> strides_of(const Shape& s);
// A tensor of shape `out` whose element k is element map[k] (a flat index) of `src`.
HostTensor host_gather_flat(const HostTensor& src, const Shape& out, const std::vector<int64_t>& map);
// Rows of `inner` elements: output row k (of a tensor of shape os) is row rows[k] of x, or zeros for -1.
HostTensor host_take_rows(const HostTensor& x, int64_t inner, const std::vector<int64_t>& rows, const Shape& os);
// For each element of `out`, the flat index into a tensor of shape `in` under numpy broadcasting.
std::vector<int64_t> broadcast_index(const Shape& in, const Shape& out);

}  // namespace onnx2ggml

namespace o2g {
// Numpy broadcast of two shapes; OpError if they do not broadcast.
Shape broadcast_shape(const Shape& a, const Shape& b);
// The stored bytes of weight `t` of the compiled program whose graph this thread is building, where `t` is not on its
// device yet (program.cpp); else null.
const void* building_weight_bytes(const ggml_tensor* t);
}  // namespace o2g
