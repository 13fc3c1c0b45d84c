// Session: device choice, input validation, graph build and cache per input signature, execution.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "common/error.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/ops.h"
#include "onnx2ggml/program.h"
#include "passes/pipeline.h"
#include "kernels/conv_pointwise.h"
#include "kernels/gemm.h"
#include "runtime/builder.h"
#include "runtime/checkpoint_import.h"
#include "lib/device_budget.h"
#include "runtime/load_progress.h"
#include "lib/conv_plan.h"
#include "lib/host_util.h"
#include "runtime/embedding.h"
#include "runtime/lora.h"
#include "runtime/memory_limit.h"
#include "runtime/unsupported.h"

namespace onnx2ggml {

namespace {

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

struct CachedGraph {
    ggml_context* ctx = nullptr;
    ggml_cgraph* graph = nullptr;
    std::unique_ptr<Builder> builder;
    std::vector<std::string> output_names;
    std::map<int, std::vector<uint8_t>> keyed_data;  // input index -> data the graph was built for
    ggml_backend_sched_t sched = nullptr;  // one per graph: its allocation is kept for reruns
    std::vector<BackendShare> shares;      // where the scheduler put the nodes
    int splits = 0;
    bool allocated = false;
    double compute_mb = 0, unshared_mb = 0;  // graph memory as allocated, and what it would be without reuse
    double weights_mb = -1;                  // weights this graph reads (-1: not counted yet)
    size_t unread_bytes = 0, unread_at = SIZE_MAX;  // prepared forms it does not read, when the session held unread_at
    size_t device_compute = 0, copied = 0;  // with device_memory: its device compute buffer, host weights copied per run
    std::unique_ptr<Segments> segments;     // with device_memory, for a graph whose compute buffer alone does not fit
    ~CachedGraph() {
        if (sched) ggml_backend_sched_free(sched);
        if (ctx) ggml_free(ctx);
    }
};

class SessionImpl : public Session {
public:
    SessionImpl(std::shared_ptr<Model> model, const SessionOptions& opts) {
        model_ = std::move(model);
        if (!opts.weights_file.empty()) {  // into a copy too
            auto own = std::make_shared<Model>(*model_);
            apply_weights_file(*own, opts.weights_file, opts.quiet);
            model_ = std::move(own);
        }
        if (!opts.lora.empty()) {  // merged into a copy: the caller's model keeps its weights
            auto merged = std::make_shared<Model>(*model_);
            apply_lora(*merged, opts.lora, opts.quiet);
            model_ = std::move(merged);
        }
        if (!opts.embeddings.empty()) {
            auto own = std::make_shared<Model>(*model_);
            apply_embeddings(*own, opts.embeddings, opts.embedding_set, opts.quiet);
            model_ = std::move(own);
        }
        check_supported(*model_);
        // Sequences, maps and optionals run inside a graph; only tensors cross the API.
        for (const auto* list : {&model_->graph.inputs, &model_->graph.outputs})
            for (const ValueInfo& vi : *list)
                O2G_CHECK(vi.is_tensor, model_->path, ": graph ", list == &model_->graph.inputs ? "input" : "output",
                          " '", vi.name, "' is not a tensor (a sequence, map or optional); only tensors cross the API");
        plan_ = plan_graph(*model_);
        init_device(opts);
        profiling_ = opts.profile;
        quiet_ = opts.quiet;
        max_memory_ = effective_max_memory(opts.max_memory);
        user_limit_ = opts.max_memory != 0;
        tiling_ = opts.tiling;
        weights_.buft = ggml_backend_get_default_buffer_type(backend_);
        if (opts.device_memory) {
            O2G_CHECK(!backends_->is_cpu(), "device_memory caps a GPU's memory; the device is ", device_,
                      ", whose memory is the host's (use max_memory to cap what a graph takes)");
            budget_.limit = opts.device_memory;
            // Pinned memory where the device has it: faster copies to the device.
            ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(ggml_backend_get_device(backend_));
            weights_.host_buft = host ? host : ggml_backend_cpu_buffer_type();
        }
        weights_.backend = backend_;
        weights_.fast = opts.precision == "fast";
        weights_.zero_copy = ggml_backend_dev_type(ggml_backend_get_device(backend_)) == GGML_BACKEND_DEVICE_TYPE_CPU;
        weights_.native_cpu = weights_.zero_copy && accel_ == nullptr && !opts.portable;
        // Weights the run reads in place (CPU) are read here once, visibly; elsewhere the upload in
        // WeightCache::commit reads them and shows its own progress, so they are not read twice. After the
        // weights file and LoRA, so replaced weights are not read at all.
        weights_.progress = load_progress_wanted(*model_, opts.progress);
        if (weights_.progress && weights_.zero_copy) read_weights_with_progress(*model_);
        weights_.max_alloc = ggml_backend_buft_get_max_size(weights_.buft);
        const std::map<std::string, ggml_type> kinds = {
            {"", backends_->product_weights()}, {"f32", GGML_TYPE_F32}, {"f16", GGML_TYPE_F16}, {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0}};
        auto kind = kinds.find(opts.weights);
        O2G_CHECK(kind != kinds.end(), "weights must be f32, f16, bf16 or q8_0, not '", opts.weights, "'");
        weights_.matmul_type = kind->second;
        // Exact products on our CPU kernels read f16 weights' packed forms as f16 (widened on load).
        weights_.keep_f16 = weights_.native_cpu && weights_.matmul_type == GGML_TYPE_F32 && o2g::gemm_available();
        prepare_weights();
    }
    ~SessionImpl() override { cache_.clear(); }

    const Model& model() const override { return *model_; }
    const RunStats& stats() const override { return stats_; }
    std::string device() const override { return device_; }
    const std::vector<ProfileEntry>& profile() const override { return profile_; }

    std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) override;

private:
    std::vector<Tensor> run_once(const std::map<std::string, Tensor>& inputs);
    void init_device(const SessionOptions& opts);
    std::vector<const Tensor*> check_inputs(const std::map<std::string, Tensor>& inputs, std::string& key);
    std::unique_ptr<CachedGraph> build(const std::vector<const Tensor*>& ins);
    std::unique_ptr<CachedGraph> build_in(const std::vector<const Tensor*>& ins, size_t tensors);
    CachedGraph* build_cached(const std::string& key, const std::vector<const Tensor*>& ins);
    CachedGraph* allocated(const std::string& key, const std::vector<const Tensor*>& ins, CachedGraph* c);
    void allocate(CachedGraph& c, Builder& b, bool may_shrink);
    void set_inputs(Builder& b, const std::vector<const Tensor*>& ins);
    std::vector<Tensor> read_outputs(CachedGraph& c);
    void prepare_weights();

    std::shared_ptr<Model> model_;
    GraphPlan plan_;
    std::unique_ptr<o2g::Backends> backends_;
    ggml_backend_t backend_ = nullptr, cpu_ = nullptr, accel_ = nullptr;  // owned by backends_
    std::string device_;
    WeightCache weights_;
    DeviceBudget budget_;  // SessionOptions::device_memory
    std::map<std::string, std::unique_ptr<CachedGraph>> cache_;
    RunStats stats_;
    bool profiling_ = false;
    bool quiet_ = false;
    size_t max_memory_ = 0;
    bool user_limit_ = false;
    TileOptions tiling_;
    std::vector<ProfileEntry> profile_;
    const Builder* builder_ = nullptr;  // of the graph being profiled
    double last_ms_ = 0;
    // Calls of run() on one session share the graph cache, its buffers and the stats: one at a time.
    std::mutex run_mu_;

    // Called by the scheduler around each node: asks, then reports it computed.
    static bool on_node(ggml_tensor* t, bool ask, void* user) {
        auto* s = static_cast<SessionImpl*>(user);
        if (ask) return true;
        double now = now_ms();
        const Builder& b = *s->builder_;
        auto it = b.origin.find(t);  // full ONNX name (ggml names are cut at 63 bytes)
        s->profile_.push_back({it != b.origin.end() ? it->second : ggml_get_name(t), b.op_name(t), now - s->last_ms_});
        s->last_ms_ = now;
        return true;
    }
};

void SessionImpl::init_device(const SessionOptions& opts) {
    o2g::add_rpc_servers(opts.rpc);
    backends_ = o2g::open_backends(opts.device, opts.threads, opts.quiet, opts.precision);
    backend_ = backends_->main;
    cpu_ = backends_->cpu;
    accel_ = backends_->accel;
    device_ = backends_->description;
}

// The conv's algorithm inputs from its attributes and weight d = [M, C/g, kH, kW] (an f32 image assumed: the
// graph's activations are).
o2g::ConvCase conv_case(const Node& n, const std::vector<int64_t>& d, bool cpu) {
    auto at = [&](const char* attr, size_t i) {
        const auto v = n.get_ints(attr);
        return i < v.size() ? v[i] : 1;
    };
    o2g::ConvCase c;
    c.group = n.get_int("group", 1);
    c.M = d[0], c.C = d[1] * c.group, c.kH = d[2], c.kW = d[3];
    c.sH = at("strides", 0), c.sW = at("strides", 1), c.dH = at("dilations", 0), c.dW = at("dilations", 1);
    for (int64_t e : n.get_ints("pads")) c.unpadded &= e == 0;
    c.constant_w = true;
    c.cpu = cpu;
    return c;
}

// Constant MatMul and Gemm weights take the same form (transposed, or at SessionOptions::weights precision) for
// every input shape, and so do f32 convolution weights on the CPU (the panels that im2col and both Winograd tiles
// multiply by): made here, once, through the op library's own calls, so that graph builds find them made and the
// time shows as load time.
void SessionImpl::prepare_weights() {
    const Graph& g = model_->graph;
    auto initializer = [&](const std::string& name) -> const TensorData* {
        auto it = g.initializers.find(name);
        if (it != g.initializers.end()) return it->second.get();
        auto p = plan_.initializers.find(name);
        return p != plan_.initializers.end() ? p->second.get() : nullptr;
    };
    // (ONNX2GGML_GEMM=0, gemm_wanted false at any size: the convs multiply with ggml's product, by no panels.)
    const bool conv_panels = weights_.native_cpu && weights_.matmul_type == GGML_TYPE_F32 && o2g::gemm_available() &&
                             o2g::gemm_wanted(1, 1, 1);
    for (int idx : plan_.live_nodes) {
        const Node& n = plan_.node(*model_, idx);
        const bool matmul = n.op_type == "MatMul", gemm = n.op_type == "Gemm";
        const bool nhwc = n.op_type == "NhwcConv" && n.domain == "com.microsoft";
        const bool conv = n.op_type == "onnx2ggml.ConvClamp" || (n.op_type == "Conv" && n.domain.empty()) || nhwc;
        if ((!n.domain.empty() && n.domain != "ai.onnx" && !conv) || !(matmul || gemm || conv) || n.inputs.size() < 2)
            continue;
        const TensorData* td = initializer(n.inputs[1]);
        // A product the builder runs on the host (all inputs known) reads no device weight.
        if (!td || initializer(n.inputs[0]) || !dtype_is_float(td->dtype) || !dtype_supported(td->dtype) ||
            td->dims.size() < 2 || td->dims.size() > 4 || (gemm && td->dims.size() != 2) || n.outputs.empty() ||
            plan_.need_host.count(n.outputs[0]))
            continue;
        bool pointwise = false;
        if (conv) {  // only the form the algorithm o2g::conv will choose reads (lib/conv_plan.h)
            const auto& f = td->dims;  // NhwcConv's weight is [M, kH, kW, C/g]
            const std::vector<int64_t> d = nhwc && f.size() == 4 ? std::vector<int64_t>{f[0], f[3], f[1], f[2]} : f;
            // A group that does not divide M is refused when the graph is built (and C = C/g * g could overflow).
            const int64_t group = n.get_int("group", 1);
            if (!conv_panels || d.size() != 4 || group < 1 || group > d[0] || d[0] % group) continue;
            const o2g::ConvCase cc = conv_case(n, d, weights_.native_cpu);
            const o2g::ConvAlgo algo = o2g::conv_algorithm(cc);
            pointwise = algo == o2g::ConvAlgo::Pointwise;
            if (!pointwise && !o2g::conv_reads_panels(cc, algo)) continue;
        }
        ggml_tensor* w = weights_.get(n.inputs[1], initializer_host(*td), device_type(td->dtype));  // as bound
        ggml_init_params p = {ggml_tensor_overhead() * 64, nullptr, true};
        ggml_context* scratch = ggml_init(p);
        O2G_CHECK(scratch, "out of memory preparing weights");
        o2g::Ctx octx;
        octx.ggml = scratch;
        octx.cpu = weights_.native_cpu;
        octx.weights = &weights_;
        octx.matmul_type = weights_.matmul_type;
        octx.max_alloc = weights_.max_alloc;
        try {
            if (nhwc) w = o2g::nhwc_conv_weight(octx, w);  // the form conv() is given
            if (pointwise) {
                ggml_tensor* x = ggml_new_tensor_4d(scratch, GGML_TYPE_F32, 1, 1, w->ne[2], 1);  // [1, 1, C, 1]
                o2g::conv2d_pointwise(octx, x, w, nullptr, {});
            } else if (conv) {
                o2g::gemm_row_panels(octx, w, td->dims[0]);
            } else if (matmul) {
                ggml_tensor* a = ggml_new_tensor_2d(scratch, GGML_TYPE_F32, w->ne[1], 1);  // A [1, K]
                o2g::matmul(octx, a, w, o2g::MatMulParams{});
            } else {
                o2g::GemmParams gp;
                gp.trans_a = n.get_int("transA", 0) != 0;
                gp.trans_b = n.get_int("transB", 0) != 0;
                const int64_t K = gp.trans_b ? w->ne[0] : w->ne[1];
                ggml_tensor* a = gp.trans_a ? ggml_new_tensor_2d(scratch, GGML_TYPE_F32, 1, K)
                                            : ggml_new_tensor_2d(scratch, GGML_TYPE_F32, K, 1);
                o2g::gemm(octx, a, w, nullptr, gp);
            }
        } catch (const std::exception&) {
            // A product that does not fit is reported by the graph build, with the node's name.
        }
        ggml_free(scratch);
    }
    weights_.commit();
}

std::vector<const Tensor*> SessionImpl::check_inputs(const std::map<std::string, Tensor>& inputs, std::string& key) {
    const Graph& g = model_->graph;
    std::vector<const Tensor*> ins(g.inputs.size(), nullptr);
    for (auto& [name, t] : inputs) {
        bool found = false;
        for (auto& vi : g.inputs) found |= vi.name == name;
        O2G_CHECK(found, model_->path, ": the model has no input named '", name, "'");
    }
    for (size_t i = 0; i < g.inputs.size(); i++) {
        const ValueInfo& vi = g.inputs[i];
        auto it = inputs.find(vi.name);
        O2G_CHECK(it != inputs.end(), model_->path, ": missing input '", vi.name, "'");
        const Tensor& t = it->second;
        O2G_CHECK(vi.is_tensor, model_->path, ": input '", vi.name, "' is not a tensor; only tensor inputs are supported");
        O2G_CHECK(vi.dtype == DType::UNDEFINED || vi.dtype == t.dtype, model_->path, ": input '", vi.name,
                  "' has type ", dtype_name(t.dtype), ", the model expects ", dtype_name(vi.dtype));
        O2G_CHECK(dtype_supported(t.dtype), model_->path, ": input '", vi.name, "' has unsupported type ",
                  dtype_name(t.dtype));
        for (int64_t d : t.shape) O2G_CHECK(d >= 0, model_->path, ": input '", vi.name, "' has a negative dim");
        O2G_CHECK(t.data.size() == size_t(t.numel()) * dtype_size(t.dtype), model_->path, ": input '", vi.name,
                  "' holds ", t.data.size(), " bytes, its shape needs ", size_t(t.numel()) * dtype_size(t.dtype));
        if (vi.has_shape) {
            std::string expect = "[";
            for (size_t d = 0; d < vi.dims.size(); d++)
                expect += (d ? "," : "") + (vi.dims[d].known() ? std::to_string(vi.dims[d].value)
                                                               : vi.dims[d].param.empty() ? "?" : vi.dims[d].param);
            expect += "]";
            O2G_CHECK(t.shape.size() == vi.dims.size(), model_->path, ": input '", vi.name, "' has shape ",
                      shape_str(t.shape), ", the model expects ", expect);
            // Named dims are not checked against each other, as in onnxruntime: diffusers' ONNX pipelines feed a
            // UNet timestep of [1] beside a sample of batch 2, both declared 'batch', and the graph broadcasts.
            for (size_t d = 0; d < vi.dims.size(); d++)
                O2G_CHECK(!vi.dims[d].known() || vi.dims[d].value == t.shape[d], model_->path, ": input '", vi.name,
                          "' has shape ", shape_str(t.shape), ", the model expects ", expect);
        }
        ins[i] = &t;
        key += vi.name + ":" + std::to_string(int(t.dtype)) + shape_str(t.shape) + ";";
    }
    return ins;
}

// A graph too large for its context (banded convolutions at large sizes) is built again in one 4x larger.
std::unique_ptr<CachedGraph> SessionImpl::build(const std::vector<const Tensor*>& ins) {
    for (size_t tensors = initial_graph_tensors(plan_);; tensors *= 4) {
        try {
            return build_in(ins, tensors);
        } catch (const ContextFull&) {
        }
    }
}

std::unique_ptr<CachedGraph> SessionImpl::build_in(const std::vector<const Tensor*>& ins, size_t tensors) {
    auto c = std::make_unique<CachedGraph>();
    // Graph nodes are tensors of this context; its leaves may also be weights held elsewhere.
    size_t graph_size = 2 * tensors, reserve = ggml_graph_overhead_custom(graph_size, false);
    c->ctx = ggml_init({ggml_tensor_overhead() * tensors + reserve, nullptr, true});
    O2G_CHECK(c->ctx, "out of memory creating the graph context");
    c->builder = std::make_unique<Builder>(*model_, plan_, weights_, c->ctx);
    Builder& b = *c->builder;
    b.can_grow = true;
    b.ctx_reserve = reserve;
    b.bind_inputs(ins);
    // Host tensors made while building are checked against max_memory too (before each allocation).
    struct HostLimit {
        size_t old;
        ~HostLimit() { set_host_memory_limit(old); }
    } host_limit{set_host_memory_limit(user_limit_ ? max_memory_ : 0)};
    b.build();
    c->graph = ggml_new_graph_custom(c->ctx, graph_size, false);
    for (const auto& o : model_->graph.outputs) {
        auto it = b.vals.find(o.name);
        O2G_CHECK(it != b.vals.end(), model_->path, ": graph output '", o.name, "' is not produced by any node");
        Val& v = it->second;
        // Declared a tensor, made a sequence (fuzz: a node's op type changed to SplitToSequence).
        O2G_CHECK(!v.seq, model_->path, ": graph output '", o.name, "' is a sequence; only tensors can be outputs");
        c->output_names.push_back(o.name);
        if (v.host) {
            b.value_keyed_inputs.insert(v.input_deps.begin(), v.input_deps.end());
            continue;
        }
        if (shape_numel(v.shape) == 0) {  // empty outputs never reach ggml
            v.host = std::make_shared<HostTensor>(HostTensor::alloc(v.dtype, v.shape));
            continue;
        }
        ggml_tensor* t = v.t;
        // An output made of nothing ggml or the host holds (fuzz: a Dropout of an initializer of element type -1).
        O2G_CHECK(t, model_->path, ": graph output '", o.name, "' has no value (", dtype_name(v.dtype), ")");
        // Leaves, views and weights are copied so the output owns contiguous memory.
        if (t->op == GGML_OP_NONE || t->view_src || !ggml_is_contiguous(t) || (t->flags & GGML_TENSOR_FLAG_INPUT))
            t = ggml_cont(c->ctx, t);
        ggml_set_output(t);
        ggml_build_forward_expand(c->graph, t);
        v.t = t;
    }
    weights_.commit(c->graph);
    for (int i : b.value_keyed_inputs) c->keyed_data[i] = ins[size_t(i)]->data;
    return c;
}

CachedGraph* SessionImpl::build_cached(const std::string& key, const std::vector<const Tensor*>& ins) {
    auto& slot = cache_[key];
    slot = build(ins);
    // Op counts once per graph (stats of every run copy them).
    for (int i = 0; i < ggml_graph_n_nodes(slot->graph); i++)
        slot->builder->stats.ggml_ops[slot->builder->op_name(ggml_graph_node(slot->graph, i))]++;
    return slot.get();
}

// `c` allocated; under a device_memory budget that not even segments of it fit, built again first with attention's
// score chunks and im2col bands at most a sixteenth of the budget each (the largest tensor, max_alloc, an eighth) (for this graph and later ones: an unlimited
// run's bytes are then matched within rounding, not bit for bit).
CachedGraph* SessionImpl::allocated(const std::string& key, const std::vector<const Tensor*>& ins, CachedGraph* c) {
    try {
        // (Chunks and bands are at most 64 MiB anyway: a budget 16 times that leaves them as they are.)
        allocate(*c, *c->builder, budget_.limit && weights_.max_alloc > budget_.limit / 8 && budget_.limit < (1ull << 30));
        return c;
    } catch (const BudgetTooSmall&) {
    }
    weights_.max_alloc = budget_.limit / 8;
    if (!quiet_)
        fprintf(stderr, "onnx2ggml: %s: device_memory is %s, which not even segments of the graph fit: it is built "
                "again with attention chunks and im2col bands of at most %s each\n", model_->path.c_str(),
                bytes_str(double(budget_.limit)).c_str(), bytes_str(double(weights_.max_alloc / 2)).c_str());
    c = build_cached(key, ins);
    allocate(*c, *c->builder, false);
    return c;
}

// Places the graph on the backends, checks it against the memory limits and allocates it, once per graph.
void SessionImpl::allocate(CachedGraph& c, Builder& b, bool may_shrink) {
    std::vector<ggml_backend_t> bk;  // in priority order
    if (accel_) bk.push_back(accel_);
    bk.push_back(backend_);
    if (cpu_) bk.push_back(cpu_);
    auto new_sched = [bk, graph = c.graph]() { return o2g::new_scheduler(bk, graph); };
    c.sched = new_sched();
    o2g::place_inputs_on_main(c.sched, c.graph, *backends_);
    check_graph_memory(c.sched, c.graph, int(bk.size()), b, max_memory_, user_limit_);
    if (budget_.limit) {
        c.weights_mb = WeightCache::graph_mb(c.graph);  // before the scheduler puts copies in place of host weights
        size_t others = 0;  // the device memory of the session's other graphs
        for (auto& [key, g] : cache_) others += g.get() != &c ? g->device_compute : 0;
        c.copied = budget_.allocate(c.sched, c.graph, {weights_.buft, &weights_.buffers}, *backends_, others,
                                    model_->path, quiet_, c.device_compute, c.segments, new_sched, may_shrink);
    } else {
        o2g::place_inputs_on_main(c.sched, c.graph, *backends_);  // the measurement reset the scheduler
        O2G_CHECK(ggml_backend_sched_alloc_graph(c.sched, c.graph), model_->path,
                  ": could not allocate the graph's device memory");
    }
    c.allocated = true;
    if (c.segments) {  // laid out one segment after another in one buffer: no huge pages to advise (a device's)
        ggml_backend_sched_free(c.sched);  // its buffers grew to the whole graph's when it was measured
        c.sched = new_sched();
        c.shares = c.segments->lay_out(c.sched, c.splits, c.copied, !quiet_);
        for (const auto& s : c.shares) c.compute_mb += double(s.buffer_bytes) / 1048576.0;
        return;
    }
    c.shares = o2g::placement(c.sched, c.graph, *backends_, c.splits);
    std::set<ggml_backend_buffer_t> bufs;
    for (int i = 0; i < ggml_graph_n_nodes(c.graph); i++) bufs.insert(ggml_graph_node(c.graph, i)->buffer);
    for (ggml_backend_buffer_t buf : bufs) advise_huge_pages(buf);
    // ggml-alloc reuses memory of dead intermediates and computes in place where it can: report both.
    for (const auto& s : c.shares) c.compute_mb += double(s.buffer_bytes) / 1048576.0;
    for (int i = 0; i < ggml_graph_n_nodes(c.graph); i++) {
        ggml_tensor* t = ggml_graph_node(c.graph, i);
        if (!t->view_src) c.unshared_mb += double(ggml_nbytes(t)) / 1048576.0;
    }
    if (!quiet_) o2g::warn_fallback(c.shares, c.sched, c.graph, *backends_);
}

// This run's input data, converted to what the graph's input tensors hold.
void SessionImpl::set_inputs(Builder& b, const std::vector<const Tensor*>& ins) {
    for (auto& [t, idx] : b.input_tensors) {
        if (!t->buffer) continue;  // input not used by the device graph
        const Tensor& in = *ins[size_t(idx)];
        if (in.dtype == DType::FLOAT) {
            if (!in.data.empty()) ggml_backend_tensor_set(t, in.data.data(), 0, in.data.size());
        } else {
            HostTensor h;
            h.dtype = in.dtype;
            h.shape = in.shape;
            h.data = in.data.data();
            h.nbytes = in.data.size();
            auto f = h.to_f32();
            if (!f.empty()) ggml_backend_tensor_set(t, f.data(), 0, f.size() * 4);
        }
    }
}

// The outputs of the last run, cast to the types the model declares.
std::vector<Tensor> SessionImpl::read_outputs(CachedGraph& c) {
    Builder& b = *c.builder;
    std::vector<Tensor> outs;
    for (size_t i = 0; i < c.output_names.size(); i++) {
        Val& v = b.vals[c.output_names[i]];
        const ValueInfo& vi = model_->graph.outputs[i];
        Tensor out;
        out.dtype = v.dtype;
        out.shape = v.shape;
        HostTensor src;
        std::vector<uint8_t> dev;
        if (v.host) {
            src = *v.host;
        } else {
            dev.resize(size_t(shape_numel(v.shape)) * 4);
            if (!dev.empty() && !(c.segments && c.segments->read(v.t, dev.data(), dev.size())))
                ggml_backend_tensor_get(v.t, dev.data(), 0, dev.size());
            src.dtype = v.t->type == GGML_TYPE_I32 ? DType::INT32 : DType::FLOAT;
            src.shape = v.shape;
            src.data = dev.data();
            src.nbytes = dev.size();
        }
        DType want = vi.dtype != DType::UNDEFINED ? vi.dtype : v.dtype;
        out.dtype = want;
        if (src.dtype == want) {
            out.data.assign(src.data, src.data + src.nbytes);
        } else {
            HostTensor cv = src.cast(want);
            out.data.assign(cv.data, cv.data + cv.nbytes);
        }
        outs.push_back(std::move(out));
    }
    return outs;
}

std::vector<Tensor> SessionImpl::run(const std::map<std::string, Tensor>& inputs) {
    std::lock_guard<std::mutex> lock(run_mu_);
    if (tiling_.size <= 0) return run_once(inputs);
    // Every tile has one shape, so one graph and one compute buffer serve them all; times add up.
    double build = 0, compute = 0, gflop = 0;
    TileReport rep;
    auto one = [&](const std::map<std::string, Tensor>& feeds) {
        auto outs = run_once(feeds);
        build += stats_.build_ms;
        compute += stats_.compute_ms;
        gflop += stats_.gflop;
        return outs;
    };
    auto outs = run_tiled(one, inputs, tiling_, &rep);
    stats_.build_ms = build;
    stats_.compute_ms = compute;
    stats_.gflop = gflop;
    stats_.tiles = rep.tiles;
    return outs;
}

std::vector<Tensor> SessionImpl::run_once(const std::map<std::string, Tensor>& inputs) {
    std::string key;
    auto ins = check_inputs(inputs, key);
    double t0 = now_ms();
    size_t made0 = weights_.made_bytes;
    CachedGraph* c = nullptr;
    auto it = cache_.find(key);
    if (it != cache_.end()) {
        bool same = true;
        for (auto& [i, data] : it->second->keyed_data) same &= data == ins[size_t(i)]->data;
        if (same) c = it->second.get();
    }
    bool hit = c != nullptr;
    if (!c) c = build_cached(key, ins);
    const double build_ms = hit ? 0 : now_ms() - t0;
    double t1 = now_ms();
    if (!c->allocated && ggml_graph_n_nodes(c->graph) > 0) c = allocated(key, ins, c);
    Builder& b = *c->builder;
    stats_ = b.stats;
    stats_.cache_hit = hit;
    stats_.build_ms = build_ms;
    stats_.ggml_graph_nodes = ggml_graph_n_nodes(c->graph);
    stats_.transformed_weight_bytes = weights_.made_bytes - made0;

    if (ggml_graph_n_nodes(c->graph) > 0) {
        set_inputs(b, ins);
        for (auto& [t, bytes] : b.uploads)
            if (!bytes.empty() && t->buffer) ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        profile_.clear();
        builder_ = &b;
        ggml_backend_sched_set_eval_callback(c->sched, profiling_ ? on_node : nullptr, this);
        last_ms_ = now_ms();
        if (c->segments) c->segments->compute(c->sched);
        else O2G_CHECK(ggml_backend_sched_graph_compute(c->sched, c->graph) == GGML_STATUS_SUCCESS, "graph compute failed");
    }
    stats_.compute_ms = now_ms() - t1;
    stats_.compute_buffer_mb = c->compute_mb;
    stats_.unshared_mb = c->unshared_mb;
    if (c->weights_mb < 0) c->weights_mb = WeightCache::graph_mb(c->graph);
    if (c->unread_at != weights_.made.size()) {  // once per graph, and again only when the session made more forms
        c->unread_bytes = weights_.unread_bytes(c->graph);
        c->unread_at = weights_.made.size();
    }
    stats_.unread_weight_bytes = c->unread_bytes;
    stats_.weights_mb = c->weights_mb;
    stats_.splits = c->splits;
    stats_.backends = c->shares;
    if (budget_.limit) {
        stats_.device_weight_bytes = budget_.resident;
        stats_.host_weight_bytes = budget_.host_bytes(weights_.buffers, backend_);
        stats_.copied_weight_bytes = c->copied;
        stats_.segments = c->segments ? c->segments->count() : 0;
        stats_.carried_bytes = c->segments ? c->segments->carried_bytes() : 0;
    }

    return read_outputs(*c);
}

}  // namespace

std::unique_ptr<Session> Session::open(const std::string& model_path, const SessionOptions& opts) {
    return std::make_unique<SessionImpl>(load_model(model_path), opts);
}

std::unique_ptr<Session> Session::open(std::shared_ptr<Model> model, const SessionOptions& opts) {
    return std::make_unique<SessionImpl>(std::move(model), opts);
}

}  // namespace onnx2ggml
