#include "runtime/builder.h"

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
std::string params_text(Recorder& r, const o2g::FieldWriter& w, const o2g::FieldWriter& defaults) {
    std::string out;
    for (const auto& [name, lit] : w.items) {
        bool is_default = false;
        for (const auto& [dn, dl] : defaults.items)
            if (dn == name) is_default = dl == lit;
        if (is_default && !r.wants_field(name)) continue;
        out += (out.empty() ? "." : ", .") + name + " = " + lit;
    }
    return "{" + out + "}";
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

// Intermediates get "<first output>.k" so profiles and dumps map back to ONNX values.
void Builder::name_intermediates(const Node& n) {
    int k = 0;
    for (ggml_tensor* t = last_tensor_ ? ggml_get_next_tensor(ctx, last_tensor_) : ggml_get_first_tensor(ctx); t;
         t = ggml_get_next_tensor(ctx, t)) {
        if (ggml_get_name(t)[0] == 0) ggml_format_name(t, "%s.%d", n.outputs.empty() ? "" : n.outputs[0].c_str(), k++);
        if (!n.outputs.empty()) origin[t] = n.outputs[0];
        last_tensor_ = t;
    }
}

size_t initial_graph_tensors(const GraphPlan& plan) { return 2 * std::max<size_t>(8192, plan.live_nodes.size() * 24); }

// The graph context holds a fixed number of tensors; banded convolutions at large sizes and Loops unrolled many
// times can need more than it was made for, and ggml would abort on the first tensor past it. With room for less
// than a node's worth left, a session rebuilds in a larger context (ContextFull); past kMaxGraphTensors, or where
// the caller cannot rebuild, the node is refused.
static void check_context_room(Lower& L, const Builder& b, ggml_context* ctx) {
    size_t cap = (ggml_get_mem_size(ctx) - b.ctx_reserve) / ggml_tensor_overhead();
    if (ggml_get_mem_size(ctx) - ggml_used_mem(ctx) >= b.ctx_reserve + 256 * ggml_tensor_overhead()) return;
    if (b.can_grow && cap < kMaxGraphTensors) throw ContextFull("graph context full");
    L.error("the graph needs more ggml tensors than its context holds (" + std::to_string(cap) +
            "); a Loop unrolled too many times?");
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
    check_context_room(L, *this, ctx);

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
    name_intermediates(n);

    stats.nodes++;
    if (on_host) {
        stats.host_nodes++;
        if (def->math && any_float && !in_cone) stats.host_float_nodes++;
    } else stats.ggml_nodes++;
}

}  // namespace onnx2ggml
