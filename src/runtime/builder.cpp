#include "runtime/builder.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "runtime/load_progress.h"
#include "lib/abort_context.h"
#include "lib/host_util.h"
#include "ggml-cpu.h"

namespace onnx2ggml {

HostTensor initializer_host(const TensorData& td) {
    HostTensor h;
    h.dtype = td.dtype;
    h.shape = td.dims;
    h.data = td.data;
    h.nbytes = td.nbytes;
    h.keep = td.keep;
    h.mapped = td.mapped;
    return h;
}

ggml_type device_type(DType t) { return dtype_is_integer(t) ? GGML_TYPE_I32 : GGML_TYPE_F32; }

// Host data converted to the device element type (F32 or I32).
ggml_tensor* WeightCache::get(const std::string& key, const HostTensor& h, ggml_type type) {
    auto it = tensors.find(key);
    if (it != tensors.end()) return it->second;
    if (!pending_ctx) {
        ggml_init_params p = {ggml_tensor_overhead() * 4096, nullptr, true};
        pending_ctx = ggml_init(p);
    }
    int64_t ne[4];
    shape_to_ne(h.shape, ne);
    if (zero_copy && type == GGML_TYPE_F32 && h.dtype == DType::FLOAT && h.keep && h.nbytes > 0 &&
        reinterpret_cast<uintptr_t>(h.data) % 32 == 0) {  // ggml's tensor alignment
        // No second copy: a CPU buffer wraps the mmapped (or pass-owned) bytes directly.
        if (!mapped_ctx) {
            ggml_init_params mp = {ggml_tensor_overhead() * 65536, nullptr, true};
            mapped_ctx = ggml_init(mp);
        }
        ggml_tensor* t = ggml_new_tensor(mapped_ctx, type, 4, ne);
        ggml_set_name(t, key.c_str());
        void* ptr = const_cast<uint8_t*>(h.data);
        ggml_backend_buffer_t buf = ggml_backend_cpu_buffer_from_ptr(ptr, h.nbytes);
        O2G_CHECK(buf && ggml_backend_tensor_alloc(buf, t, ptr) == GGML_STATUS_SUCCESS, "could not map weight '", key, "'");
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        buffers.push_back(buf);
        keep.push_back(h.keep);
        tensors[key] = t;
        sources[t] = {key, h};
        return t;
    }
    ggml_tensor* t = ggml_new_tensor(pending_ctx, type, 4, ne);
    ggml_set_name(t, key.c_str());
    tensors[key] = t;
    sources[t] = {key, h};
    pending.emplace_back(t, h);
    if (pending.size() >= 4000) commit();  // context capacity
    return t;
}

void drop_pages(const uint8_t* p, size_t n) {
    uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    uintptr_t b = (uintptr_t(p) + page - 1) & ~(page - 1), e = (uintptr_t(p) + n) & ~(page - 1);
    if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

std::shared_ptr<void> HugeArena::take(size_t n) {
    n = (n + 63) & ~size_t(63);
    O2G_CHECK(n <= CHUNK, "internal: a ", bytes_str(double(n)), " weight in a huge-page chunk");
    if (!chunk || used + n > CHUNK) {
        void* p = nullptr;
        O2G_CHECK(posix_memalign(&p, HUGE_PAGE, CHUNK) == 0, "out of memory for a ", bytes_str(double(CHUNK)),
                  " chunk of derived weights");
#ifdef MADV_HUGEPAGE
        madvise(p, CHUNK, MADV_HUGEPAGE);  // a hint: failure is harmless; untouched pages stay unmapped
#endif
        chunk = std::shared_ptr<void>(p, std::free);
        used = 0;
    }
    std::shared_ptr<void> part(chunk, static_cast<uint8_t*>(chunk.get()) + used);  // keeps the chunk alive
    used += n;
    return part;
}

namespace {

// Host memory for a derived weight: 64-byte aligned so the CPU buffer wraps it in place (no second copy in a
// ggml buffer), and not zero-filled (the transform writes every element). The kernels stream these from memory every
// run, so they sit on huge pages where possible: a big one on its own, mid-size ones (a 768x768 projection, 2.4 MB)
// packed into shared chunks. On 4 KiB pages the text encoder's projections ran 15 % slower (TLB misses).
HostTensor aligned_f32(const int64_t ne[4], HugeArena& arena) {
    HostTensor h;
    h.dtype = DType::FLOAT;
    h.shape = {ne[3], ne[2], ne[1], ne[0]};
    check_host_size(h.shape, 4, "derived weight");
    h.nbytes = size_t(shape_numel(h.shape)) * 4;
    const size_t huge = HugeArena::HUGE_PAGE;
    if (h.nbytes >= HugeArena::MIN && h.nbytes <= HugeArena::CHUNK / 4) {
        h.keep = arena.take(h.nbytes);
        h.data = static_cast<const uint8_t*>(h.keep.get());
        return h;
    }
    const size_t align = h.nbytes >= 2 * huge ? huge : 64;
    void* p = nullptr;
    O2G_CHECK(posix_memalign(&p, align, std::max<size_t>(h.nbytes, 64)) == 0, "out of memory for a ",
              bytes_str(double(h.nbytes)), " derived weight");
#ifdef MADV_HUGEPAGE
    if (align == huge) madvise(p, h.nbytes & ~(huge - 1), MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
    h.keep = std::shared_ptr<void>(p, std::free);
    h.data = static_cast<const uint8_t*>(p);
    return h;
}

}  // namespace

ggml_tensor* WeightCache::derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                                  const std::function<void(const float*, float*)>& make) {
    auto src = sources.find(w);
    O2G_CHECK(src != sources.end(), "internal: '", ggml_get_name(w), "' is not a weight");
    const auto& [name, h] = src->second;
    std::string key = name + "#" + kind + (type == GGML_TYPE_F32 ? "" : std::string("#") + ggml_type_name(type));
    auto it = tensors.find(key);
    if (it != tensors.end()) return it->second;
    HostTensor out = aligned_f32(ne, arena);
    // F32 sources are read in place; others (and a derived weight whose host copy went to the device) once
    // converted.
    std::vector<float> f;
    const float* in = reinterpret_cast<const float*>(h.data);
    if (!h.data && h.nbytes) {
        O2G_CHECK(w->type == GGML_TYPE_F32, "internal: the host copy of '", ggml_get_name(w), "' was released");
        f.resize(size_t(ggml_nelements(w)));
        ggml_backend_tensor_get(w, f.data(), 0, f.size() * 4);
        in = f.data();
    } else if (h.dtype != DType::FLOAT || reinterpret_cast<uintptr_t>(h.data) % alignof(float) != 0) {
        f = h.to_f32();
        in = f.data();
    }
    make(in, reinterpret_cast<float*>(out.mut()));
    f = {};
    // The original is often only read for this transform: give its mapped pages back (re-read if needed later).
    if (h.mapped) drop_pages(h.data, h.nbytes);
    ggml_tensor* t = get(key, out, type);
    made.insert(t);
    if (type != GGML_TYPE_F32 && !pending.empty() && pending.back().first == t) {
        std::vector<uint8_t>& bytes = converted[t] = device_bytes(out, type, key);
        made_bytes += bytes.size();
        pending.back().second = HostTensor();
        sources[t].second.keep.reset();
        sources[t].second.data = nullptr;
    } else {
        made_bytes += out.nbytes;
    }
    return t;
}

void advise_huge_pages(ggml_backend_buffer_t buf) {
#ifdef MADV_HUGEPAGE
    if (!buf || !ggml_backend_buffer_is_host(buf)) return;
    const uintptr_t huge = uintptr_t(2) << 20;
    uintptr_t b = uintptr_t(ggml_backend_buffer_get_base(buf));
    uintptr_t e = b + ggml_backend_buffer_get_size(buf);
    b = (b + huge - 1) & ~(huge - 1);
    e &= ~(huge - 1);
    if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);  // a hint: failure is harmless
#else
    (void)buf;
#endif
}

void WeightCache::commit() {
    if (!pending_ctx) return;
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(pending_ctx, buft);
    O2G_CHECK(buf || pending.empty(), "could not allocate device memory for the weights");
    if (buf) {
        advise_huge_pages(buf);
        ggml_backend_buffer_set_usage(buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
        buffers.push_back(buf);
    }
    size_t total = 0;
    for (auto& [t, h] : pending) total += ggml_nbytes(t);
    LoadProgress shown("weights to " + std::string(ggml_backend_buft_name(buft)), total, progress && total >= (64u << 20));
    for (auto& [t, h] : pending) {
        auto done = converted.find(t);
        std::vector<uint8_t> bytes;
        if (done != converted.end()) {
            bytes = std::move(done->second);
            converted.erase(done);
        } else {
            bytes = device_bytes(h, t->type, ggml_get_name(t));
        }
        if (!bytes.empty()) ggml_backend_tensor_set(t, bytes.data(), 0, bytes.size());
        shown.add(ggml_nbytes(t));
        // Only the device copy is used from now on: the file's pages go back to the kernel, and the host copy
        // of a derived weight is freed (derived() reads the device copy back should it be needed again).
        if (h.mapped) drop_pages(h.data, h.nbytes);
        if (made.count(t)) {
            HostTensor& kept = sources[t].second;
            kept.keep.reset();
            kept.data = nullptr;
        } else made_bytes += bytes.size();  // derived weights were counted when made
    }
    ctxs.push_back(pending_ctx);
    pending_ctx = nullptr;
    pending.clear();
}

double WeightCache::megabytes() const {
    double b = 0;
    for (auto buf : buffers) b += double(ggml_backend_buffer_get_size(buf));
    return b / 1048576.0;
}

WeightCache::~WeightCache() {
    for (auto b : buffers) ggml_backend_buffer_free(b);
    if (mapped_ctx) ggml_free(mapped_ctx);
    for (auto c : ctxs) ggml_free(c);
    if (pending_ctx) ggml_free(pending_ctx);
}

// ---- Lower ----

Val& Lower::in(int i) {
    if (!has(i)) error("input " + std::to_string(i) + " is required");
    return *ins[size_t(i)];
}

std::string Lower::where() const {
    return b.model.path + ": " + node.describe() + " (opset " + std::to_string(opset) + ")";
}

void Lower::error(const std::string& what) const { throw Error(where() + ": " + what); }

ggml_tensor* Lower::t(int i) {
    ggml_tensor* x = b.tensor(in(i));
    if (b.rec) b.rec->use(in(i), x);
    // Float kernels read F32; integer data feeding math (e.g. MaxPool on uint8) is converted.
    if (b.current_math && x->type == GGML_TYPE_I32) x = O2G_CALL(*this, ggml_cast, x, GGML_TYPE_F32);
    return x;
}

const HostTensor& Lower::h(int i) {
    Val& v = in(i);
    if (!v.host)
        error("input '" + v.name + "' must be known before the graph runs (a shape, axis or index), "
              "but it is computed on the device");
    if (!b.host_mode) b.value_keyed_inputs.insert(v.input_deps.begin(), v.input_deps.end());
    if (b.rec && !reading_sym_) b.rec->host_read(v);
    return *v.host;
}

Sym Lower::sym(int i) {
    reading_sym_ = true;
    Sym s{ints(i), &in(i)};
    reading_sym_ = false;
    if (b.rec) b.rec->host_read(in(i));  // cleared when the Sym reaches an op-library call
    return s;
}

// Output i of the node; a file may give a node fewer outputs than its op writes.
static Val& out_at(Lower& L, int i) {
    if (i < 0 || size_t(i) >= L.outs.size())
        L.error("has " + std::to_string(L.outs.size()) + " outputs; the op writes output " + std::to_string(i));
    return L.outs[size_t(i)];
}

void Lower::out(int i, ggml_tensor* x, DType dt, int rank) {
    if (rank > 4) error("rank " + std::to_string(rank) + " output; ggml holds at most 4 dims");
    Val& o = out_at(*this, i);
    o.dtype = dt;
    o.t = x;
    o.shape = ne_to_shape(x, rank);
    for (int d = rank; d < 4; d++)
        if (x->ne[d] != 1) error("internal: ggml result has more dims than its ONNX rank");
}

void Lower::out_shape(int i, ggml_tensor* x, DType dt, const Shape& s) {
    int64_t ne[4];
    shape_to_ne(s, ne);
    if (ne[0] != x->ne[0] || ne[1] != x->ne[1] || ne[2] != x->ne[2] || ne[3] != x->ne[3])
        error("internal: ggml result does not match ONNX shape " + shape_str(s));
    Val& o = out_at(*this, i);
    o.dtype = dt;
    o.t = x;
    o.shape = s;
}

void Lower::out_host(int i, HostTensor h) {
    Val& o = out_at(*this, i);
    o.dtype = h.dtype;
    o.shape = h.shape;
    o.host = std::make_shared<HostTensor>(std::move(h));
}

void Lower::pass(int i, int j) {
    Val& src = in(j);
    Val& o = out_at(*this, i);
    o.dtype = src.dtype;
    o.shape = src.shape;
    o.t = src.t;
    o.host = src.host;
    o.input_deps = src.input_deps;
    o.is_weight = src.is_weight;
    o.name = src.name;
}

ggml_tensor* Lower::constant(const HostTensor& h) {
    return b.constant(h, (node.outputs.empty() ? node.name : node.outputs[0]) + ".const");
}

ggml_tensor* Lower::cont(ggml_tensor* x) { return ggml_is_contiguous(x) ? x : ggml_cont(ctx, x); }

o2g::Ctx& Lower::octx() { return b.octx; }
Recorder* Lower::rec() { return b.rec; }

void Lower::record(Recorder& r, const char* name, ggml_tensor* result, const std::vector<std::string>& args) {
    std::string text = name;
    text += "(ctx";
    for (const auto& a : args) {
        if (a.empty()) {
            r.call(result, "");  // an argument the generated code cannot name
            return;
        }
        text += ", " + a;
    }
    r.call(result, text + ")");
}

std::vector<float> Lower::param_floats(int i, const char* field) {
    std::vector<float> v = h(i).to_f32();
    if (b.rec) b.rec->param_field(in(i), field, 'F');
    return v;
}
float Lower::param_float(int i, const char* field) {
    if (h(i).numel() < 1) error("input " + std::to_string(i) + " is empty");
    if (b.rec) b.rec->param_field(in(i), field, 'f');
    return float(h(i).f64(0));
}

int Lower::param_axis(int i, const char* field, int rank) {
    if (h(i).numel() != 1) error("input " + std::to_string(i) + " must hold one axis");
    int d = o2g::ggml_axis(h(i).i64(0), rank);
    if (b.rec) b.rec->param_field(in(i), field, 'a', rank);
    return d;
}

HostArg Lower::hv(int i) {
    reading_sym_ = true;
    HostArg a{&h(i), &in(i)};
    reading_sym_ = false;
    return a;
}

std::vector<HostTensor> call_arg(const std::vector<HostArg>& a) {
    std::vector<HostTensor> r;
    for (const HostArg& x : a) r.push_back(*x.h);
    return r;
}
std::string arg_text(Recorder& r, const HostArg& a) { return r.host_text(a); }
std::string arg_text(Recorder& r, const std::vector<HostArg>& a) {
    std::string t = "{";
    for (size_t i = 0; i < a.size(); i++) {
        std::string x = r.host_text(a[i]);
        if (x.empty()) return "";
        t += (i ? ", " : "") + x;
    }
    return t + "}";
}
std::string arg_text(Recorder&, DType t) { return o2g::dtype_literal(t); }

std::string arg_text(Recorder& r, ggml_tensor* t) { return t ? r.tensor_text(t) : "nullptr"; }
std::string arg_text(Recorder& r, const Sym& s) { return r.ints_text(s); }
std::string arg_text(Recorder&, const o2g::Ints& v) { return "o2g::Ints" + o2g::ints_literal(v); }
std::string arg_text(Recorder&, int64_t v) { return v == INT64_MIN ? "INT64_MIN" : std::to_string(v); }
std::string arg_text(Recorder&, float v) { return o2g::float_literal(v); }
std::string arg_text(Recorder&, bool v) { return v ? "true" : "false"; }
std::string arg_text(Recorder&, ggml_type t) {
    std::string n = ggml_type_name(t);
    for (char& c : n) c = char(toupper(static_cast<unsigned char>(c)));
    return "GGML_TYPE_" + n;
}
std::string arg_text(Recorder&, ggml_op_pool p) { return p == GGML_OP_POOL_MAX ? "GGML_OP_POOL_MAX" : "GGML_OP_POOL_AVG"; }

// ---- Builder ----

ggml_tensor* Builder::tensor(Val& v) {
    if (v.t) return v.t;
    O2G_CHECK(v.host, "value '", v.name, "' of type ", dtype_name(v.dtype), " is not supported");
    value_keyed_inputs.insert(v.input_deps.begin(), v.input_deps.end());
    ggml_type type = device_type(v.dtype);
    if (v.is_weight) {
        v.t = weights.get(v.name, *v.host, type);
        if (rec) rec->bind(v, v.t);
        return v.t;
    }
    int64_t ne[4];
    shape_to_ne(v.shape, ne);
    v.t = ggml_new_tensor(ctx, type, 4, ne);
    ggml_set_name(v.t, v.name.c_str());
    ggml_set_input(v.t);
    uploads.emplace_back(v.t, device_bytes(*v.host, type, v.name));
    if (rec) rec->bind(v, v.t);
    return v.t;
}

ggml_tensor* Builder::constant(const HostTensor& h, const std::string& name) {
    Val v;
    v.name = name;
    v.dtype = h.dtype;
    v.shape = h.shape;
    v.host = std::make_shared<HostTensor>(h);
    return tensor(v);
}

std::string Builder::add_const(const HostTensor& h, const std::string& hint) {
    std::string name = fresh_name(hint);
    Val v;
    v.name = name;
    v.dtype = h.dtype;
    v.shape = h.shape;
    v.host = std::make_shared<HostTensor>(h);
    vals[name] = std::move(v);
    return name;
}

void Builder::bind_initializers(const Graph& g) {
    for (auto& [name, td] : g.initializers) {
        Val v;
        v.name = name;
        v.dtype = td->dtype;
        v.shape = td->dims;
        v.is_weight = true;
        if (!dtype_supported(td->dtype)) {  // kept so users get a clear type error
            vals[name] = std::move(v);
            continue;
        }
        v.host = std::make_shared<HostTensor>(initializer_host(*td));
        vals[name] = std::move(v);
    }
}

void Builder::bind_inputs(const std::vector<const Tensor*>& inputs) {
    const Graph& g = model.graph;
    bind_initializers(g);
    if (!plan.initializers.empty()) {
        Graph extra;
        extra.initializers = plan.initializers;
        bind_initializers(extra);
    }
    for (size_t i = 0; i < g.inputs.size(); i++) {
        const ValueInfo& vi = g.inputs[i];
        const Tensor* in = inputs[i];
        if (!in) continue;  // optional input left out
        Val v;
        v.name = vi.name;
        v.dtype = in->dtype;
        v.shape = in->shape;
        bool on_host = !dtype_is_float(in->dtype) || plan.need_host.count(vi.name);
        if (on_host) {
            HostTensor h = HostTensor::alloc(in->dtype, in->shape);
            if (h.nbytes) std::memcpy(h.mut(), in->data.data(), h.nbytes);
            v.host = std::make_shared<HostTensor>(std::move(h));
            v.input_deps.insert(int(i));
        }
        if (dtype_is_float(in->dtype)) {
            int64_t ne[4];
            shape_to_ne(in->shape, ne);
            v.t = ggml_new_tensor(ctx, GGML_TYPE_F32, 4, ne);
            ggml_set_name(v.t, vi.name.c_str());
            ggml_set_input(v.t);
            input_tensors.emplace_back(v.t, int(i));
        }
        vals[vi.name] = std::move(v);
    }
}

void Builder::build() {
    for (int idx : plan.live_nodes) run_node(plan.node(model, idx));
    for (auto& u : octx.uploads) uploads.push_back(std::move(u));
    octx.uploads.clear();
    for (auto& [t, k] : octx.labels) kernel[t] = k;
    octx.labels.clear();
}

void Builder::run_node(const Node& n) {
    int64_t opset = model.opset(n.domain);
    const OpDef* def = find_op(n.domain, n.op_type, opset);
    Lower L{*this, ctx, n, opset, {}, {}};
    if (!def) L.error("unsupported op");
    bool all_host = true, any_float = false, in_cone = false, big_weight = false;
    for (const auto& name : n.inputs) {
        if (name.empty()) {
            L.ins.push_back(nullptr);
            continue;
        }
        auto it = vals.find(name);
        if (it == vals.end()) L.error("input '" + name + "' is not produced by any earlier node or graph input");
        Val& v = it->second;
        if (!v.host && v.present()) all_host = false;
        if (dtype_is_float(v.dtype)) any_float = true;
        // A table like a token embedding: look it up on the device rather than copy its rows on the host.
        if (v.is_weight && dtype_is_float(v.dtype) && shape_numel(v.shape) > 4096) big_weight = true;
        L.ins.push_back(&v);
    }
    for (const auto& o : n.outputs)
        if (plan.need_host.count(o)) in_cone = true;
    L.outs.resize(n.outputs.size());
    check_accepts(L, *def);  // before any lowering indexes a shape or attribute

    bool on_host;
    if (def->shape_only || def->control) on_host = true;
    else if (def->host && all_host && (in_cone || !def->math || !any_float) && !(big_weight && def->ggml && !in_cone))
        on_host = true;
    else if (def->ggml) on_host = false;
    else if (def->host && all_host) on_host = true;
    else if (def->host) {
        for (int i = 0; i < L.n_in(); i++)
            if (L.has(i) && !L.in(i).host)
                L.error("this op runs on the host only, but its input '" + L.in(i).name + "' is computed on the device");
        on_host = true;
    } else L.error("unsupported op");

    host_mode = on_host;
    current_math = def->math;
    if (rec) rec->node_begin(n, on_host);
    try {
        o2g::AbortContext abort_context(L.where());  // a GGML_ASSERT while lowering names this node
        (on_host ? def->host : def->ggml)(L);
    } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.find(L.where()) != std::string::npos) throw;
        throw Error(L.where() + ": " + msg);
    } catch (const o2g::OpError& e) {
        throw Error(L.where() + ": " + e.what());
    }
    host_mode = false;
    if (!on_host && def->flops && !L.outs.empty() && L.outs[0].present()) stats.gflop += def->flops(L) / 1e9;
    if (rec) rec->node_end(L, on_host);

    std::set<int> deps;
    if (on_host)
        for (Val* v : L.ins)
            if (v) deps.insert(v->input_deps.begin(), v->input_deps.end());
    for (size_t i = 0; i < n.outputs.size(); i++) {
        if (n.outputs[i].empty()) continue;
        Val& o = L.outs[i];
        if (!o.present()) {
            if (i == 0) L.error("internal: produced no output");
            continue;  // optional output the lowering does not produce
        }
        o.name = n.outputs[i];
        if (on_host) o.input_deps.insert(deps.begin(), deps.end());
        if (o.t && ggml_get_name(o.t)[0] == 0) ggml_set_name(o.t, o.name.c_str());
        vals[o.name] = std::move(o);
    }
    // Intermediates get "<first output>.k" so profiles and dumps map back to ONNX values.
    int k = 0;
    for (ggml_tensor* t = last_tensor_ ? ggml_get_next_tensor(ctx, last_tensor_) : ggml_get_first_tensor(ctx); t;
         t = ggml_get_next_tensor(ctx, t)) {
        if (ggml_get_name(t)[0] == 0) ggml_format_name(t, "%s.%d", n.outputs.empty() ? "" : n.outputs[0].c_str(), k++);
        if (!n.outputs.empty()) origin[t] = n.outputs[0];
        last_tensor_ = t;
    }

    stats.nodes++;
    if (on_host) {
        stats.host_nodes++;
        if (def->math && any_float && !in_cone) stats.host_float_nodes++;
    } else stats.ggml_nodes++;
}

}  // namespace onnx2ggml
