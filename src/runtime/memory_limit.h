// SessionOptions::max_memory: what a session may allocate, and the check that refuses a graph before it does.
#pragma once
#include <cstddef>

#include "ggml-backend.h"

namespace onnx2ggml {

class Builder;

// `requested` bytes, or the machine's memory (physical RAM, or the cgroup limit when smaller) for 0.
size_t effective_max_memory(size_t requested);

// Refuses, with an error naming the graph's largest tensor, its node and the sizes, a graph whose compute buffer
// (measured by the scheduler without allocating) plus the host tensors its build made would exceed `limit`.
// Within the limit, it then reserves (allocates) the compute buffers, and leaves the scheduler reset: assign
// backends again before ggml_backend_sched_alloc_graph.
void check_graph_memory(ggml_backend_sched_t sched, ggml_cgraph* graph, int n_backends, const Builder& b,
                        size_t limit, bool user_limit);

}  // namespace onnx2ggml
