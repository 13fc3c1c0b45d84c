// Runtime of generated programs: devices, GGUF weights and the per-shape graph cache (include/onnx2ggml/program.h).
#include "onnx2ggml/program.h"

#include "common/platform.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "ggml-alloc.h"
#include "ggml-cpu.h"
#include "gguf.h"
#include "lora/embedding.h"
#include "lib/device_budget.h"
#include "lib/host_util.h"
#include "lora/lora.h"
#include "ops/tensor.h"

namespace o2g {

using onnx2ggml::fail;
namespace platform = onnx2ggml::platform;
using onnx2ggml::HostTensor;

// ---- weights ----

struct WeightFile::Impl {
    std::string path;
    ggml_backend_t backend = nullptr;
    bool native_cpu = false;
    gguf_context* gguf = nullptr;
    ggml_context* meta = nullptr;     // tensors as stored, allocated in `buffers`
    std::vector<ggml_context*> extra;  // derived tensors, one context each (they are few)
    std::vector<ggml_backend_buffer_t> buffers;
    const uint8_t* map = nullptr;
    size_t map_size = 0;
    std::map<std::string, ggml_tensor*> by_name;
    std::map<const ggml_tensor*, const uint8_t*> host;  // weight -> its bytes in the file mapping
    std::map<std::pair<const ggml_tensor*, std::string>, ggml_tensor*> derived;
    std::vector<std::vector<uint8_t>> merged;  // bytes of weights a LoRA changed (`host` points here)
    ggml_backend_buffer_type_t home = nullptr;  // where weights and derived forms go: the device's, or host memory

    void merge_lora(const std::vector<onnx2ggml::LoraFile>& files);
    void add_embeddings(const std::vector<onnx2ggml::EmbeddingFile>& files, const std::string& set);
};

// The token table compile named gains the rows: a new, taller tensor takes its place.
void WeightFile::Impl::add_embeddings(const std::vector<onnx2ggml::EmbeddingFile>& files, const std::string& set) {
    int64_t k = gguf_find_key(gguf, "onnx2ggml.token_table");
    if (k < 0 || gguf_get_kv_type(gguf, k) != GGUF_TYPE_STRING)
        fail(path, ": no token-embedding table in this weights file (not a text encoder, or compiled before onnx2ggml "
                   "took embeddings)");
    std::string name = gguf_get_val_str(gguf, k);
    auto it = by_name.find(name);
    if (it == by_name.end()) fail(path, ": the token table '", name, "' is not among its weights");
    const ggml_tensor* old = it->second;
    if (old->type != GGML_TYPE_F32 && old->type != GGML_TYPE_F16 && old->type != GGML_TYPE_BF16)
        fail(path, ": the token table '", name, "' is ", ggml_type_name(old->type), ", not f32, f16 or bf16");
    const int64_t width = old->ne[0];
    const std::vector<float> rows = embedding_rows(files, width, set);
    const int64_t added = int64_t(rows.size()) / width;
    std::vector<uint8_t> bytes(ggml_nbytes(old) + size_t(ggml_row_size(old->type, width * added)));
    std::memcpy(bytes.data(), host.at(old), ggml_nbytes(old));
    uint8_t* tail = bytes.data() + ggml_nbytes(old);
    if (old->type == GGML_TYPE_F32) std::memcpy(tail, rows.data(), rows.size() * 4);
    else if (old->type == GGML_TYPE_F16)
        ggml_fp32_to_fp16_row(rows.data(), reinterpret_cast<ggml_fp16_t*>(tail), int64_t(rows.size()));
    else
        ggml_fp32_to_bf16_row(rows.data(), reinterpret_cast<ggml_bf16_t*>(tail), int64_t(rows.size()));
    ggml_init_params p = {ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    extra.push_back(ctx);
    ggml_tensor* t = ggml_new_tensor_2d(ctx, old->type, width, old->ne[1] + added);
    merged.push_back(std::move(bytes));
    host[t] = merged.back().data();
    by_name[name] = t;
}

// The LoRA table compile wrote names the weights (by ONNX name) and their module paths; sizes come from the tensors.
void WeightFile::Impl::merge_lora(const std::vector<onnx2ggml::LoraFile>& files) {
    std::vector<LoraTarget> targets;
    try {
        targets = read_lora_targets(gguf);
    } catch (const std::exception& e) {
        fail(path, ": ", e.what());
    }
    std::vector<LoraTarget> usable;
    for (LoraTarget& t : targets) {
        auto it = by_name.find(t.weight);
        if (it == by_name.end()) continue;
        const ggml_tensor* w = it->second;
        if (w->type != GGML_TYPE_F32 && w->type != GGML_TYPE_F16 && w->type != GGML_TYPE_BF16) continue;
        const int r = int(t.dims.size());
        for (int a = 0; a < r; a++) t.dims[size_t(a)] = w->ne[r - 1 - a];
        usable.push_back(std::move(t));
    }
    if (usable.empty())
        fail(path, ": no LoRA targets in this weights file (no MatMul, Gemm or Conv weights, or compiled before "
                   "onnx2ggml merged LoRA files)");
    o2g::merge_lora(files, usable, path, false, [&](size_t i, const std::function<void(float*)>& add) {
        ggml_tensor* t = by_name.at(usable[i].weight);
        const uint8_t* src = host.at(t);
        std::vector<float> f(size_t(ggml_nelements(t)));
        if (t->type == GGML_TYPE_F32) std::memcpy(f.data(), src, f.size() * 4);
        else ggml_get_type_traits(t->type)->to_float(src, f.data(), int64_t(f.size()));
        add(f.data());
        std::vector<uint8_t> bytes(ggml_nbytes(t));
        if (t->type == GGML_TYPE_F32) std::memcpy(bytes.data(), f.data(), bytes.size());
        else if (t->type == GGML_TYPE_F16)
            ggml_fp32_to_fp16_row(f.data(), reinterpret_cast<ggml_fp16_t*>(bytes.data()), int64_t(f.size()));
        else
            ggml_fp32_to_bf16_row(f.data(), reinterpret_cast<ggml_bf16_t*>(bytes.data()), int64_t(f.size()));
        merged.push_back(std::move(bytes));
        host[t] = merged.back().data();
    });
}

WeightFile::WeightFile(const std::string& path, ggml_backend_t backend, bool native_cpu,
                       const std::vector<onnx2ggml::LoraFile>& lora,
                       const std::vector<onnx2ggml::EmbeddingFile>& embeddings, const std::string& embedding_set)
    : impl_(new Impl) {
    Impl& m = *impl_;
    m.path = path;
    m.backend = backend;
    m.home = ggml_backend_get_default_buffer_type(backend);
    m.native_cpu = native_cpu;
    gguf_init_params gp = {true, &m.meta};
    m.gguf = gguf_init_from_file(path.c_str(), gp);
    if (!m.gguf) fail(path, ": not a readable GGUF weights file");
    int64_t k_names = gguf_find_key(m.gguf, "onnx2ggml.names");
    if (k_names < 0 || gguf_get_arr_type(m.gguf, k_names) != GGUF_TYPE_STRING)
        fail(path, ": not an onnx2ggml weights file (no onnx2ggml.names)");
    platform::FileMap fm;
    std::string err;
    if (!platform::map_file(path, fm, err)) fail(path, ": ", err);
    m.map_size = fm.size;
    m.map = static_cast<const uint8_t*>(fm.addr);
    size_t data0 = gguf_get_data_offset(m.gguf);
    size_t n = gguf_get_arr_n(m.gguf, k_names);
    // Nothing goes to the device yet: upload() brings the weights a graph reads as stored when it is built, so a
    // weight read only in a derived form (F16 in fast mode off the CPU, Winograd's on it) never takes room there.
    for (size_t i = 0; i < n; i++) {
        std::string name = gguf_get_arr_str(m.gguf, k_names, i);
        std::string tname(1, 'w');
        tname += std::to_string(i);
        int64_t ti = gguf_find_tensor(m.gguf, tname.c_str());
        if (ti < 0) fail(path, ": tensor '", name, "' (", tname, ") is missing");
        ggml_tensor* t = ggml_get_tensor(m.meta, tname.c_str());
        size_t off = data0 + gguf_get_tensor_offset(m.gguf, ti), nb = ggml_nbytes(t);
        if (off > m.map_size || nb > m.map_size - off)
            fail(path, ": tensor '", name, "' of ", nb, " bytes lies outside the file (", m.map_size, " bytes)");
        m.by_name[name] = t;
        m.host[t] = m.map + off;
    }
    if (!lora.empty()) m.merge_lora(lora);
    if (!embeddings.empty()) m.add_embeddings(embeddings, embedding_set);
}

WeightFile::~WeightFile() {
    Impl& m = *impl_;
    for (auto b : m.buffers) ggml_backend_buffer_free(b);
    for (auto c : m.extra) ggml_free(c);
    if (m.meta) ggml_free(m.meta);
    if (m.gguf) gguf_free(m.gguf);
    if (m.map) platform::unmap_file({const_cast<uint8_t*>(m.map), m.map_size});
}

ggml_tensor* WeightFile::get(const std::string& name) const {
    auto it = impl_->by_name.find(name);
    if (it == impl_->by_name.end()) fail(impl_->path, ": no weight named '", name, "'");
    return it->second;
}

bool WeightFile::is_weight(const ggml_tensor* w) { return impl_->host.count(w) != 0; }

void WeightFile::upload(ggml_cgraph* g) {
    Impl& m = *impl_;
    auto used = onnx2ggml::tensors_read(g, [&m](const ggml_tensor* s) { return !s->buffer && m.host.count(s); });
    if (used.empty()) return;
    // In buffers of at most the device's largest allocation each (a full-size UNet's F32 weights are 3.3 GB).
    onnx2ggml::place_weights(m.home, used, [&m](const ggml_tensor* t) { return m.host.at(t); }, m.buffers);
}

const void* WeightFile::stored_bytes(const ggml_tensor* w) const {
    auto it = impl_->host.find(w);
    return it == impl_->host.end() ? nullptr : it->second;
}

double WeightFile::device_mb() const {
    double b = 0;
    ggml_backend_buffer_type_t device = ggml_backend_get_default_buffer_type(impl_->backend);
    for (auto buf : impl_->buffers)
        if (ggml_backend_buffer_get_type(buf) == device) b += double(ggml_backend_buffer_get_size(buf));
    return b / 1048576.0;
}

void WeightFile::keep_in_host(ggml_backend_buffer_type_t host) { impl_->home = host; }
std::vector<ggml_backend_buffer_t>& WeightFile::buffers() { return impl_->buffers; }

ggml_tensor* WeightFile::derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                                 const std::function<void(const float*, float*)>& make) {
    Impl& m = *impl_;
    auto key = std::make_pair(w, kind + "#" + ggml_type_name(type));
    auto it = m.derived.find(key);
    if (it != m.derived.end()) return it->second;
    auto h = m.host.find(w);
    if (h == m.host.end()) fail("internal: '", ggml_get_name(w), "' is not a weight");
    std::vector<float> src(size_t(ggml_nelements(w)));
    if (w->type == GGML_TYPE_F32) std::memcpy(src.data(), h->second, src.size() * 4);
    else if (w->type == GGML_TYPE_I32)  // an integer weight (MatMulNBits' packed bytes): its values
        for (size_t i = 0; i < src.size(); i++) src[i] = float(reinterpret_cast<const int32_t*>(h->second)[i]);
    else ggml_get_type_traits(w->type)->to_float(h->second, src.data(), int64_t(src.size()));
    std::vector<float> dst(size_t(ne[0] * ne[1] * ne[2] * ne[3]));
    make(src.data(), dst.data());
    ggml_init_params p = {ggml_tensor_overhead(), nullptr, true};
    ggml_context* c = ggml_init(p);
    m.extra.push_back(c);
    ggml_tensor* t = ggml_new_tensor(c, type, 4, ne);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(c, m.home);
    if (!buf) fail(m.path, ": could not allocate device memory for a derived weight");
    ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    m.buffers.push_back(buf);
    if (type == GGML_TYPE_F32) ggml_backend_tensor_set(t, dst.data(), 0, dst.size() * 4);
    else {
        std::vector<uint8_t> q(ggml_nbytes(t));
        ggml_quantize_chunk(type, dst.data(), q.data(), 0, ne[1] * ne[2] * ne[3], ne[0], nullptr);
        ggml_backend_tensor_set(t, q.data(), 0, q.size());
    }
    m.derived[key] = t;
    // A weight derived from this one (NhwcConv's reordered kernel, then Winograd-transformed) is made as `run` makes
    // it: in host memory its values are readable in place.
    if (type == GGML_TYPE_F32 && ggml_backend_buffer_is_host(buf)) m.host[t] = static_cast<const uint8_t*>(t->data);
    return t;
}

// ---- programs ----

struct Program::Graph {
    ggml_context* ctx = nullptr;
    ggml_cgraph* graph = nullptr;
    ggml_backend_sched_t sched = nullptr;
    std::vector<ggml_tensor*> inputs, outputs;
    std::vector<HostTensor> host_outputs;  // outputs computed on the host when the graph was built
    std::vector<std::pair<ggml_tensor*, std::vector<uint8_t>>> uploads;
    std::unique_ptr<onnx2ggml::Segments> segments;  // with device_memory, when the compute buffer alone does not fit
    size_t device_compute = 0;                        // with device_memory: its compute buffer on the device
    ~Graph() {
        segments.reset();
        if (sched) ggml_backend_sched_free(sched);
        if (ctx) ggml_free(ctx);
    }
};

Program::Program(const char* name, std::vector<IoInfo> inputs, std::vector<IoInfo> outputs,
                 const std::string& weights_path, const std::string& device, int threads,
                 const std::string& precision, const std::vector<onnx2ggml::LoraFile>& lora,
                 const std::vector<onnx2ggml::EmbeddingFile>& embeddings, const std::string& embedding_set)
    : name_(name), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
    backends_ = open_backends(device, threads, false, precision);
    weights_ = std::make_unique<WeightFile>(weights_path, backends_->main, backends_->is_cpu() && !backends_->accel,
                                            lora, embeddings, embedding_set);
}

Program::~Program() {
    cache_.clear();
    weights_.reset();
}

static void ne_of(const std::vector<int64_t>& shape, int64_t ne[4]) {
    for (int i = 0; i < 4; i++) ne[i] = 1;
    int r = int(shape.size());
    for (int a = 0; a < r; a++) ne[std::min(r - 1 - a, 3)] *= shape[size_t(a)];
}

std::vector<Tensor> Program::run(const std::map<std::string, Tensor>& inputs, BuildFn build, const void* w) {
    for (auto& [name, t] : inputs) {
        bool found = false;
        for (auto& io : inputs_) found |= name == io.name;
        if (!found) fail(name_, ": the model has no input named '", name, "'");
    }
    std::vector<const Tensor*> ins;
    for (auto& io : inputs_) {
        auto it = inputs.find(io.name);
        if (it == inputs.end()) fail(name_, ": missing input '", io.name, "'");
        ins.push_back(&it->second);
    }
    return run(ins, build, w);
}

// The cache key of a run: each input's shape, and the data of inputs the graph's build reads (host inputs).
std::string Program::shape_key(const std::vector<const Tensor*>& ins) const {
    if (ins.size() != inputs_.size()) fail(name_, ": ", ins.size(), " inputs given, the model has ", inputs_.size());
    std::string key;
    for (size_t i = 0; i < ins.size(); i++) {
        const Tensor& t = *ins[i];
        const IoInfo& io = inputs_[i];
        if (t.dtype != io.dtype)
            fail(name_, ": input '", io.name, "' has type ", onnx2ggml::dtype_name(t.dtype), ", the model expects ",
                 onnx2ggml::dtype_name(io.dtype));
        if (int(t.shape.size()) != io.rank)
            fail(name_, ": input '", io.name, "' has rank ", t.shape.size(), ", the model expects ", io.rank);
        if (t.data.size() != size_t(t.numel()) * onnx2ggml::dtype_size(t.dtype))
            fail(name_, ": input '", io.name, "' holds ", t.data.size(), " bytes, its shape needs ",
                 size_t(t.numel()) * onnx2ggml::dtype_size(t.dtype));
        key += onnx2ggml::shape_str(t.shape) + ";";
        if (io.host) key.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());  // graph depends on it
    }
    return key;
}

namespace {

// The context a compiled program's graph is being built in, which named() checks for room: ggml aborts on the first
// tensor past a context's end, and banded convolutions at large sizes or Loops unrolled many times can need more.
struct Building {
    ggml_context* ctx = nullptr;
    size_t reserve = 0;  // kept for the graph itself and its outputs' copies
    WeightFile* weights = nullptr;
};
thread_local Building building;

struct GraphFull : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace

const void* building_weight_bytes(const ggml_tensor* t) {
    return building.weights ? building.weights->stored_bytes(t) : nullptr;
}

ggml_tensor* named(ggml_tensor* t, const char* name) {
    ggml_set_name(t, name);
    const Building& b = building;  // room for the largest statement (a conv of 32 bands) after this one
    if (b.ctx && ggml_get_mem_size(b.ctx) - ggml_used_mem(b.ctx) < b.reserve + 1024 * ggml_tensor_overhead())
        throw GraphFull("graph context full");
    return t;
}

// Builds and allocates the graph for these inputs' shapes (the compiled program's `build` writes its nodes), in a
// context 4x larger each time one fills up, to at most 2^20 tensors (as a session does).
std::unique_ptr<Program::Graph> Program::build_graph(const std::vector<const Tensor*>& ins, BuildFn build,
                                                      const void* w) {
    std::vector<HostTensor> hin(ins.size());
    for (size_t i = 0; i < ins.size(); i++) {
        hin[i].dtype = ins[i]->dtype;
        hin[i].shape = ins[i]->shape;
        hin[i].data = ins[i]->data.data();
        hin[i].nbytes = ins[i]->data.size();
    }
    for (size_t max_nodes = 65536;; max_nodes *= 4) {
        try {
            return build_in(ins, hin, build, w, max_nodes);
        } catch (const GraphFull&) {
            if (max_nodes >= (size_t(1) << 20))
                fail(name_, ": the graph needs more than ", max_nodes, " ggml tensors; a Loop unrolled too many times?");
        } catch (const onnx2ggml::BudgetTooSmall&) {  // as a session: smaller attention chunks and im2col bands
            max_alloc_ = budget_->limit / 8;
            fprintf(stderr, "%s: device_memory is %.1f MB, which not even segments of the graph fit: it is built again "
                    "with attention chunks and im2col bands of at most %.1f MB each\n", name_.c_str(),
                    double(budget_->limit) / 1048576.0, double(max_alloc_ / 2) / 1048576.0);
            max_nodes /= 4;
        }
    }
}

std::unique_ptr<Program::Graph> Program::build_in(const std::vector<const Tensor*>& ins,
                                                   const std::vector<HostTensor>& hin, BuildFn build, const void* w,
                                                   size_t max_nodes) {
    auto g = std::make_unique<Graph>();
    const size_t reserve = ggml_graph_overhead_custom(max_nodes, false) + 64 * ggml_tensor_overhead();
    ggml_init_params p = {ggml_tensor_overhead() * max_nodes + reserve, nullptr, true};
    g->ctx = ggml_init(p);
    if (!g->ctx) fail(name_, ": out of memory creating the graph context");
    for (size_t i = 0; i < ins.size(); i++) {
        int64_t ne[4];
        ne_of(ins[i]->shape, ne);
        ggml_type type = onnx2ggml::dtype_is_integer(ins[i]->dtype) ? GGML_TYPE_I32 : GGML_TYPE_F32;
        ggml_tensor* t = ggml_new_tensor(g->ctx, type, 4, ne);
        ggml_set_name(t, inputs_[i].name);
        ggml_set_input(t);
        g->inputs.push_back(t);
    }
    Ctx ctx;
    ctx.ggml = g->ctx;
    ctx.cpu = backends_->is_cpu() && !backends_->accel;
    ctx.max_alloc = max_alloc_;
    if (!ctx.max_alloc) ctx.max_alloc = ggml_backend_buft_get_max_size(ggml_backend_get_default_buffer_type(backends_->main));
    ctx.weights = weights_.get();
    ctx.fast = backends_->precision == "fast";
    ctx.matmul_type = backends_->product_weights();
    set_device(ctx, backends_->main);
    g->outputs.assign(outputs_.size(), nullptr);
    g->host_outputs.assign(outputs_.size(), HostTensor{});
    struct Guard {
        ~Guard() { building = {}; }
    } guard;
    building = {g->ctx, reserve, weights_.get()};
    try {
        build(ctx, w, g->inputs.data(), hin.data(), g->outputs.data(), g->host_outputs.data());
    } catch (const OpError& e) {
        fail(name_, ": ", e.what());
    }
    building = {};
    for (auto& h : g->host_outputs) {  // an owned copy: a result may borrow this run's input data
        if (h.dtype == DType::UNDEFINED) continue;
        HostTensor c = HostTensor::alloc(h.dtype, h.shape);
        if (h.nbytes) std::memcpy(c.mut(), h.data, h.nbytes);
        h = c;
    }
    g->uploads = std::move(ctx.uploads);
    allocate_graph(*g, max_nodes);
    return g;
}

// Marks the outputs and places and allocates the graph on the backends.
void Program::allocate_graph(Graph& g, size_t max_nodes) {
    g.graph = ggml_new_graph_custom(g.ctx, max_nodes, false);
    for (size_t i = 0; i < g.outputs.size(); i++) {
        ggml_tensor*& t = g.outputs[i];
        if (!t) {
            if (g.host_outputs[i].dtype == DType::UNDEFINED) fail(name_, ": internal: an output was not built");
            continue;
        }
        if (ggml_nelements(t) == 0) continue;  // empty outputs never reach ggml
        if (t->op == GGML_OP_NONE || t->view_src || !ggml_is_contiguous(t) || (t->flags & GGML_TENSOR_FLAG_INPUT))
            t = ggml_cont(g.ctx, t);
        ggml_set_output(t);
        ggml_build_forward_expand(g.graph, t);
    }
    if (ggml_graph_n_nodes(g.graph) == 0) return;  // every output came from the host
    weights_->upload(g.graph);
    auto bk = backends_->in_priority_order();
    g.sched = new_scheduler(bk, g.graph);
    int splits = 0;
    if (budget_) {  // as a session's (lib/device_budget.h): weights that fit move to the device, the rest are copied in
        size_t others = 0, copied = 0;
        for (auto& [key, o] : cache_) others += o ? o->device_compute : 0;
        auto fresh = [bk, graph = g.graph]() { return new_scheduler(bk, graph); };
        // (Chunks and bands are at most 64 MiB anyway: a budget 16 times that leaves them as they are.)
        const size_t limit = budget_->limit;
        const bool may_shrink = limit < (1ull << 30) && (max_alloc_ == 0 || max_alloc_ > limit / 8);
        budget_->allocate(g.sched, g.graph, {ggml_backend_get_default_buffer_type(backends_->main), &weights_->buffers()},
                          *backends_, others, name_, false, g.device_compute, g.segments, fresh, may_shrink);
        if (g.segments) {  // its scheduler's buffers grew to the whole graph's when it was measured
            ggml_backend_sched_free(g.sched);
            g.sched = fresh();
            g.segments->lay_out(g.sched, splits, copied, true);
            return;
        }
    } else {
        place_inputs_on_main(g.sched, g.graph, *backends_);
        if (!ggml_backend_sched_alloc_graph(g.sched, g.graph))
            fail(name_, ": could not allocate the graph's device memory");
    }
    warn_fallback(placement(g.sched, g.graph, *backends_, splits), g.sched, g.graph, *backends_);
}

void Program::set_device_memory(size_t bytes) {
    if (!cache_.empty()) fail(name_, ": device_memory must be set before the first run");
    if (backends_->is_cpu())
        fail(name_, ": device_memory caps a GPU's memory; the device is ", backends_->description,
             ", whose memory is the host's");
    budget_ = std::make_unique<onnx2ggml::DeviceBudget>();
    budget_->limit = bytes;
    // Weights wait in host memory (pinned where the device has it: faster copies) until a graph's budget moves them.
    ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(ggml_backend_get_device(backends_->main));
    weights_->keep_in_host(host ? host : ggml_backend_cpu_buffer_type());
}

std::vector<Tensor> Program::run(const std::vector<const Tensor*>& ins, BuildFn build, const void* w) {
    std::lock_guard<std::mutex> lock(run_mu_);
    const std::string key = shape_key(ins);
    auto t0 = std::chrono::steady_clock::now();
    auto& slot = cache_[key];
    build_ms_ = 0;
    if (!slot) {
        slot = build_graph(ins, build, w);
        build_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    Graph& g = *slot;
    for (size_t i = 0; i < ins.size(); i++) {
        ggml_tensor* t = g.inputs[i];
        if (!t->buffer || ins[i]->data.empty()) continue;  // not read by the graph
        const Tensor& in = *ins[i];
        if (in.dtype == DType::FLOAT) {
            ggml_backend_tensor_set(t, in.data.data(), 0, in.data.size());
            continue;
        }
        HostTensor h;
        h.dtype = in.dtype;
        h.shape = in.shape;
        h.data = in.data.data();
        h.nbytes = in.data.size();
        HostTensor c = h.cast(t->type == GGML_TYPE_I32 ? DType::INT32 : DType::FLOAT);
        ggml_backend_tensor_set(t, c.data, 0, c.nbytes);
    }
    for (auto& [t, bytes] : g.uploads)
        if (!bytes.empty() && t->buffer) ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
    if (g.segments) g.segments->compute(g.sched);
    else if (g.sched && ggml_backend_sched_graph_compute(g.sched, g.graph) != GGML_STATUS_SUCCESS)
        fail(name_, ": graph compute failed");
    std::vector<Tensor> outs;
    for (size_t i = 0; i < outputs_.size(); i++) outs.push_back(read_output(g, i));
    return outs;
}

// Output i of the last run, from the device or from what the build computed on the host.
Tensor Program::read_output(const Graph& g, size_t i) const {
    ggml_tensor* t = g.outputs[i];
    const IoInfo& io = outputs_[i];
    Tensor out;
    out.dtype = io.dtype;
    if (!t) {  // computed on the host
        const HostTensor& h = g.host_outputs[i];
        HostTensor c = h.cast(io.dtype == DType::UNDEFINED ? h.dtype : io.dtype);
        out.dtype = c.dtype;
        out.shape = c.shape;
        out.data.assign(c.data, c.data + c.nbytes);
        return out;
    }
    if (io.rank > 4) {  // folded dims: the build gave the ONNX shape
        out.shape = g.host_outputs[i].shape;
        int64_t n = 1;
        for (int64_t d : out.shape) n *= d;
        if (int(out.shape.size()) != io.rank || n != ggml_nelements(t))
            fail(name_, ": internal: output '", io.name, "' has no shape of rank ", io.rank);
    } else
        for (int a = 0; a < io.rank; a++) out.shape.push_back(t->ne[io.rank - 1 - a]);
    std::vector<uint8_t> dev(ggml_nbytes(t));
    if (!dev.empty() && !(g.segments && g.segments->read(t, dev.data(), dev.size())) && t->buffer)
        ggml_backend_tensor_get(t, dev.data(), 0, dev.size());
    HostTensor src;
    src.dtype = t->type == GGML_TYPE_I32 ? DType::INT32 : DType::FLOAT;
    src.shape = out.shape;
    src.data = dev.data();
    src.nbytes = dev.size();
    HostTensor c = src.cast(io.dtype);
    out.data.assign(c.data, c.data + c.nbytes);
    return out;
}

}  // namespace o2g
