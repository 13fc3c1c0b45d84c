// Builds one ggml graph for concrete input shapes: host evaluation of shape work, lowering of the rest.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"
#include "ir/ir.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/program.h"
#include "ops/op.h"

namespace onnx2ggml {

// Huge-page chunks that mid-size derived weights share (see aligned_f32 in builder.cpp). A chunk is freed when the
// last weight in it is.
struct HugeArena {
    static constexpr size_t HUGE_PAGE = size_t(2) << 20, CHUNK = size_t(32) << 20, MIN = size_t(256) << 10;
    std::shared_ptr<void> chunk;
    size_t used = 0;
    std::shared_ptr<void> take(size_t n);  // n bytes, 64-byte aligned, not zeroed
};

// Persistent device copies of initializers, shared by every graph built for one model.
struct WeightCache : o2g::WeightStore {
    ggml_backend_buffer_type_t buft = nullptr;
    // SessionOptions::device_memory: weights are committed here (host memory), and moved to `buft` per graph
    // (lib/device_budget.h).
    ggml_backend_buffer_type_t host_buft = nullptr;
    bool zero_copy = false;   // CPU device: aligned f32 weights are used in place from the file mapping
    bool native_cpu = false;  // the graph runs on the CPU: our CPU kernels (Winograd, attention) may be used
    ggml_backend_t backend = nullptr;  // the device the graph runs on (which ops it supports)
    bool fast = false;                 // SessionOptions::precision "fast"
    ggml_type matmul_type = GGML_TYPE_F32;  // constant MatMul/Gemm and conv weights (SessionOptions::weights)
    size_t max_alloc = 0;     // the device's largest buffer (0: no limit), see Ctx::max_alloc
    bool progress = false;    // show commit()'s conversions and uploads (a big model, see load_progress.h)
    bool keep_f16 = false;    // f16 weights' packed forms stay f16 (source_type): the CPU session's exact products
    ggml_context* mapped_ctx = nullptr;
    std::vector<std::shared_ptr<const void>> keep;
    std::map<std::string, ggml_tensor*> tensors;
    std::vector<ggml_context*> ctxs;
    std::vector<ggml_backend_buffer_t> buffers;
    // Created during a build, allocated and uploaded after it.
    ggml_context* pending_ctx = nullptr;
    std::vector<std::pair<ggml_tensor*, HostTensor>> pending;
    // Pending derived weights of a reduced type, converted when made so that their F32 form is not held until
    // commit (a UNet's whole F32 set at once: 4.97 GB peak RSS with --weights f16, against 3.74 GB with f32).
    std::map<const ggml_tensor*, std::vector<uint8_t>> converted;
    // Widened copies of f16/bf16 weights on the CPU, made only once a graph reads them (commit(graph)): a weight
    // read only through its packed form never takes f32 memory.
    ggml_context* lazy_ctx = nullptr;
    std::map<ggml_tensor*, HostTensor> lazy;
    HugeArena arena;        // where derived() puts mid-size weights
    size_t made_bytes = 0;  // weight bytes transformed or uploaded so far (RunStats::transformed_weight_bytes)

    ggml_tensor* get(const std::string& key, const HostTensor& h, ggml_type type);
    std::map<const ggml_tensor*, std::pair<std::string, HostTensor>> sources;  // weight tensor -> key, host data
    std::set<const ggml_tensor*> made;  // tensors derived() made (their host memory is ours)
    bool is_weight(const ggml_tensor* w) override { return sources.count(w) != 0; }
    ggml_type source_type(const ggml_tensor* w) override;
    ggml_tensor* f16_source(const ggml_tensor* w) override;
    ggml_tensor* wrap_in_place(const std::string& key, const HostTensor& h, ggml_type type, const uint8_t* base);
    ggml_tensor* derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                         const std::function<void(const float*, float*)>& make) override;
    void commit();  // allocate and upload pending tensors
    void commit(ggml_cgraph* g);  // the same, and the lazy weights g reads
    size_t unread_bytes(ggml_cgraph* g) const;  // derived forms g does not read
    static double graph_mb(ggml_cgraph* g);     // MB of the distinct weights g reads
    double megabytes() const;  // device weights, including those used in place from the file mapping
    ~WeightCache();
};

// Static facts about the graph, computed once per model by passes.
struct GraphPlan {
    std::vector<int> live_nodes;              // in topological order, dead code removed
    std::set<std::string> need_host;          // values whose data must be known at build time
    std::map<int, Node> rewritten;            // node index -> node as rewritten by a pass
    std::map<std::string, std::shared_ptr<TensorData>> initializers;  // constants added by passes

    // Removes nodes a pass has fused away, keeping the order of the rest.
    void drop(const std::set<int>& removed) {
        std::vector<int> live;
        for (int idx : live_nodes)
            if (!removed.count(idx)) live.push_back(idx);
        live_nodes = std::move(live);
    }

    const Node& node(const Model& m, int idx) const {
        auto it = rewritten.find(idx);
        return it != rewritten.end() ? it->second : m.graph.nodes[size_t(idx)];
    }
};

// A graph needs more ggml tensors than its context was made for (Builder::can_grow): build again in a larger one.
struct ContextFull : std::runtime_error {
    using std::runtime_error::runtime_error;
};
// Tensors a graph context starts with: most graphs need far fewer; banded convolutions and unrolled Loops more.
size_t initial_graph_tensors(const GraphPlan& plan);
constexpr size_t kMaxGraphTensors = size_t(1) << 20;

class Builder {
public:
    Builder(const Model& m, const GraphPlan& plan, WeightCache& w, ggml_context* ctx)
        : model(m), plan(plan), weights(w), ctx(ctx) {
        octx.ggml = ctx;
        octx.cpu = w.native_cpu;
        octx.weights = &w;
        octx.matmul_type = w.matmul_type;
        octx.max_alloc = w.max_alloc;
        octx.fast = w.fast;
        if (w.backend) o2g::set_device(octx, w.backend);
    }

    // Graph inputs (already validated), in graph-input order.
    void bind_inputs(const std::vector<const Tensor*>& inputs);
    void build();

    // ggml tensor for a value (uploads host data as a constant).
    ggml_tensor* tensor(Val& v);
    // A host-computed constant (index tables, masks) as a graph tensor.
    ggml_tensor* constant(const HostTensor& h, const std::string& name);

    const Model& model;
    const GraphPlan& plan;
    WeightCache& weights;
    ggml_context* ctx;
    o2g::Ctx octx;               // what op-library calls build with
    Recorder* rec = nullptr;     // set by `compile`
    std::map<std::string, Val> vals;
    RunStats stats;
    bool host_mode = false;
    bool can_grow = false;  // a full context throws ContextFull (the caller rebuilds larger) instead of refusing
    size_t ctx_reserve = 0;  // context bytes kept for the graph object made after building
    bool current_math = false;  // the node being lowered computes floats  // the node being lowered runs on the host

    // Constant/input tensors in the graph context, set after allocation.
    // Converted once at build time; graph memory is re-set on each run since ggml may reuse it.
    std::vector<std::pair<ggml_tensor*, std::vector<uint8_t>>> uploads;
    std::vector<std::pair<ggml_tensor*, int>> input_tensors;  // tensor, graph input index
    std::set<int> value_keyed_inputs;  // inputs whose data the graph depends on
    // ONNX value each ggml tensor was created for (ggml names are cut at 63 bytes; profiles use this).
    std::map<const ggml_tensor*, std::string> origin;
    // Our custom CPU kernels by name ("winograd_input", "group_norm"): stats and profiles show them instead of
    // ggml's generic CUSTOM.
    std::map<const ggml_tensor*, std::string> kernel;
    std::string op_name(const ggml_tensor* t) const {
        auto it = kernel.find(t);
        return it != kernel.end() ? "CUSTOM:" + it->second : ggml_op_desc(t);
    }

    // Lowers one node (also used for subgraph bodies and nodes synthesized by control flow).
    void run_node(const Node& n);
    void name_intermediates(const Node& n);
    // A value name no model uses (for nodes synthesized by control flow).
    std::string fresh_name(const std::string& hint) { return hint + "#" + std::to_string(fresh_++); }
    // Binds a host constant under a fresh name and returns the name.
    std::string add_const(const HostTensor& h, const std::string& hint);
    // Binds a subgraph's initializers (its nodes then run through run_node).
    void bind_initializers(const Graph& g);

private:
    int fresh_ = 0;
    ggml_tensor* last_tensor_ = nullptr;  // newest tensor already named
};

ggml_type device_type(DType t);  // F32 for float/bool, I32 for ints
HostTensor initializer_host(const TensorData& td);  // an initializer's bytes as a HostTensor (no copy)
// Gives a read-only file mapping's pages back to the kernel (they are re-read if touched again).
void drop_pages(const uint8_t* p, size_t n);
// Asks for transparent huge pages on a host-memory ggml buffer before it is first touched: fewer TLB misses,
// and the same cache behaviour in every process (with 4 KiB pages the Winograd GEMM's run time varied by 25%
// from one process to the next, with the physical placement of its pages).
void advise_huge_pages(ggml_backend_buffer_t buf);

}  // namespace onnx2ggml
