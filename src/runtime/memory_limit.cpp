// The max_memory check: largest tensor first (cheap, and the usual culprit), then the measured compute buffer.
#include "runtime/memory_limit.h"

#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "lib/host_util.h"
#include "runtime/builder.h"

namespace onnx2ggml {

size_t effective_max_memory(size_t requested) { return requested ? requested : machine_memory(); }

namespace {

// "node 'Expand_3' (Expand) output 'y' [65536,65536,65536] float", from what the builder knows of `t`.
std::string describe(const ggml_tensor* t, const Builder& b) {
    auto it = b.origin.find(t);
    std::string value = it != b.origin.end() ? it->second : ggml_get_name(t);
    std::string s;
    for (const Node& n : b.model.graph.nodes)
        for (const std::string& o : n.outputs)
            if (!o.empty() && (value == o || value.rfind(o + ".", 0) == 0) && s.empty())
                s = "node '" + n.name + "' (" + n.op_type + ") output '" + value + "'";
    if (s.empty()) s = "tensor '" + value + "' (" + b.op_name(t) + ")";
    auto v = b.vals.find(value);
    if (v != b.vals.end() && v->second.present() && shape_numel(v->second.shape) == ggml_nelements(t))
        return s + " " + shape_str(v->second.shape) + " " + dtype_name(v->second.dtype);
    Shape ne;  // ggml order reversed: the ONNX order
    for (int d = ggml_n_dims(t) - 1; d >= 0; d--) ne.push_back(t->ne[d]);
    return s + " " + shape_str(ne) + " " + ggml_type_name(t->type);
}

}  // namespace

void check_graph_memory(ggml_backend_sched_t sched, ggml_cgraph* graph, int n_backends, const Builder& b,
                        size_t limit, bool user_limit) {
    const std::string& path = b.model.path;
    std::string what = user_limit ? "max_memory is " + bytes_str(double(limit))
                                  : "the machine has " + bytes_str(double(limit)) + " (set max_memory to change this)";
    const ggml_tensor* largest = nullptr;
    for (int i = 0; i < ggml_graph_n_nodes(graph); i++) {
        const ggml_tensor* t = ggml_graph_node(graph, i);
        if (!t->view_src && (!largest || ggml_nbytes(t) > ggml_nbytes(largest))) largest = t;
    }
    if (largest && ggml_nbytes(largest) > limit)
        fail(path, ": ", describe(largest, b), " needs ", bytes_str(double(ggml_nbytes(largest))), "; ", what);

    double host = 0;  // host tensors the build computed (borrowed initializer data is not counted)
    std::set<const uint8_t*> seen;
    for (const auto& [name, v] : b.vals)
        if (v.host && !v.host->mapped && !v.is_weight && seen.insert(v.host->data).second) host += double(v.host->nbytes);
    // Measuring splits the graph once more; with several backends (a device plus the CPU), the scheduler's copies
    // between them then came out with the wrong layout (every Vulkan model was wrong), so the compute buffer is
    // measured where there is one backend only. Elsewhere its allocation failing still gives one error line.
    if (n_backends != 1) return;
    std::vector<size_t> sizes(size_t(n_backends), 0);
    ggml_backend_sched_reserve_size(sched, graph, sizes.data());
    double compute = 0;
    for (size_t s : sizes) compute += double(s);
    if (compute + host > double(limit))
        fail(path, ": the graph needs ", bytes_str(compute), " of compute memory and ", bytes_str(host),
             " of host tensors; ", what, "; its largest tensor is ",
             largest ? describe(largest, b) + " (" + bytes_str(double(ggml_nbytes(largest))) + ")" : "none");
    // The measurement left the allocator without buffers: allocate them now (alloc_graph would not).
    O2G_CHECK(ggml_backend_sched_reserve(sched, graph), path, ": could not allocate ", bytes_str(compute),
              " of compute memory for the graph");
    ggml_backend_sched_reset(sched);
}

}  // namespace onnx2ggml
