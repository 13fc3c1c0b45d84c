// SessionOptions::device_memory (and compiled programs' --device-memory): weights live in host memory, and each graph brings onto the device as many of the
// ones it reads as the budget leaves after its compute buffer; the rest are copied in by the scheduler as the
// nodes reading them run, on the same device, so results equal the unlimited run's.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "onnx2ggml/program.h"
#include "lib/segments.h"

namespace onnx2ggml {

// Where a weight store keeps what it puts on the device: the device's buffer type, and the buffers it owns (the
// budget adds its own there).
struct WeightHome {
    ggml_backend_buffer_type_t buft = nullptr;
    std::vector<ggml_backend_buffer_t>* buffers = nullptr;
};

// Places the unallocated tensors `ts` in new buffers of `buft` (usage WEIGHTS, at most the type's largest allocation
// each, appended to `owned`) and sets each from bytes(t); returns the bytes allocated. Shared by the budget's moves and
// a compiled program's weight upload.
size_t place_weights(ggml_backend_buffer_type_t buft, const std::vector<ggml_tensor*>& ts,
                     const std::function<const void*(const ggml_tensor*)>& bytes,
                     std::vector<ggml_backend_buffer_t>& owned);

// The distinct tensors g's nodes read (a view taken as its source) that `pick` keeps, in the order of first use:
// the weights a graph needs placed, uploaded or counted.
std::vector<ggml_tensor*> tensors_read(ggml_cgraph* g, const std::function<bool(const ggml_tensor*)>& pick);

// DeviceBudget::allocate with may_shrink: not even segments of the graph fit; nothing was moved or allocated.
struct BudgetTooSmall {};

struct DeviceBudget {
    size_t limit = 0;     // bytes; 0: no cap (nothing here is used)
    size_t resident = 0;  // weight bytes moved to the device so far

    // Places and allocates `graph` on `sched` (instead of place_inputs_on_main and ggml_backend_sched_alloc_graph):
    // measures its compute buffer with every weight on the host, moves the host weights it reads onto the device
    // while they fit in what `limit` leaves after that buffer, `others` (the device memory of the session's other
    // graphs) and the weights already there (less, should the buffer then come out larger than measured), and puts
    // every node reading a host weight on the device. Returns the bytes of host weights the scheduler copies in per
    // run; `compute` gets the graph's device compute buffer. A graph whose compute buffer alone does not fit is cut
    // into `segs` (schedulers for measuring them from `fresh`); it is then laid out by Segments::lay_out. If no cut
    // fits either: with `may_shrink`, BudgetTooSmall (the caller builds a leaner graph), else one warning line and
    // the graph allocated whole.
    size_t allocate(ggml_backend_sched_t sched, ggml_cgraph* graph, const WeightHome& w, const o2g::Backends& b,
                    size_t others, const std::string& path, bool quiet, size_t& compute,
                    std::unique_ptr<Segments>& segs, const Segments::NewSched& fresh, bool may_shrink);
    // Weight bytes that stay in host memory only.
    size_t host_bytes(const std::vector<ggml_backend_buffer_t>& buffers, ggml_backend_t device) const;
};

}  // namespace onnx2ggml
