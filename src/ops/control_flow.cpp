// Control flow: If (opset 1-23), Loop (1-23), Scan (9-23). Bodies are unrolled into the one ggml graph;
// conditions and trip counts must be known on the host when the graph is built.
#include <algorithm>

#include "common/error.h"
#include "ops/op.h"
#include "ops/synth.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

constexpr int64_t kMaxIterations = 4096;  // unrolled; bounds graph size on hostile input

const Graph& body_of(Lower& L, const char* name) {
    const Attribute* a = L.node.attr(name);
    if (!a || !a->g) L.error(std::string("missing subgraph attribute '") + name + "'");
    return *a->g;
}

// Runs a subgraph with its inputs bound to `args`; returns its outputs.
std::vector<Val> run_body(Lower& L, const Graph& g, const std::vector<Val>& args) {
    Builder& b = L.b;
    if (args.size() != g.inputs.size())
        L.error("subgraph takes " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(args.size()));
    b.bind_initializers(g);
    for (size_t i = 0; i < args.size(); i++) {
        Val v = args[i];
        v.name = g.inputs[i].name;
        if (b.rec) b.rec->alias(v.name, args[i]);
        b.vals[v.name] = std::move(v);
    }
    for (const Node& n : g.nodes) b.run_node(n);
    std::vector<Val> outs;
    for (const auto& o : g.outputs) {
        auto it = b.vals.find(o.name);
        if (it == b.vals.end()) L.error("subgraph output '" + o.name + "' is not produced");
        outs.push_back(it->second);
    }
    return outs;
}

// Stacks values along a new axis (Unsqueeze + Concat).
Val stack(Lower& L, const std::vector<Val>& items, int64_t axis) {
    if (items.empty()) L.error("cannot stack zero iterations");
    std::vector<std::string> parts;
    // Unsqueeze's axes: an attribute before opset 13, an input from it (the row's counts check which).
    const bool axes_input = L.opset >= 13;
    std::string axes = axes_input ? L.b.add_const(HostTensor::from_i64(DType::INT64, {1}, {axis}), "axes") : "";
    Attribute ax;
    ax.name = "axes";
    ax.type = AttrType::INTS;
    ax.ints = {axis};
    for (size_t i = 0; i < items.size(); i++) {
        std::string in = bind(L, items[i], "item");
        Val u = axes_input ? synth(L, "Unsqueeze", {in, axes}, {}) : synth(L, "Unsqueeze", {in}, {ax});
        parts.push_back(bind(L, u, "unsq"));
    }
    if (parts.size() == 1) return L.b.vals[parts[0]];
    return synth(L, "Concat", parts, {int_attr("axis", axis)});
}

// Carried values on the host that the body returns on the device (a float Add of a host start and a host step) go
// to the device before the first iteration where there is a second, so that every iteration sees each one the same
// way: one body, which compile writes as one C++ loop body. Iteration 0 is built once, unrecorded, to find them;
// the values it bound are put back.
void carried_to_device(Lower& L, const Graph& body, std::vector<Val>& carried) {
    bool any_host = false;
    for (const Val& v : carried) any_host |= v.host != nullptr;
    if (!any_host) return;
    Builder& b = L.b;
    std::map<std::string, Val> vals = b.vals;
    RunStats stats = b.stats;
    Recorder* rec = b.rec;
    b.rec = nullptr;
    Val iv, cv;
    iv.dtype = DType::INT64;
    iv.host = std::make_shared<HostTensor>(HostTensor::from_i64(DType::INT64, {}, {0}));
    cv.dtype = DType::BOOL;
    cv.host = std::make_shared<HostTensor>(HostTensor::from_i64(DType::BOOL, {}, {1}));
    std::vector<Val> args = {iv, cv};
    args.insert(args.end(), carried.begin(), carried.end());
    std::vector<Val> outs = run_body(L, body, args);
    b.rec = rec;
    for (auto it = b.vals.begin(); it != b.vals.end();) {  // element-wise: L.ins point into the map
        auto old = vals.find(it->first);
        if (old == vals.end()) it = b.vals.erase(it);
        else it++->second = old->second;
    }
    b.stats = stats;
    if (outs.empty() || !outs[0].host || outs[0].host->i64(0) == 0) return;  // no second iteration
    for (size_t i = 0; i < carried.size() && 1 + i < outs.size(); i++)
        if (carried[i].host && !outs[1 + i].host) {
            carried[i].t = L.t(2 + int(i));
            carried[i].host.reset();
        }
}

}  // namespace

// Runs a synthesized single node and returns its first output.
Val synth(Lower& L, const std::string& op, const std::vector<std::string>& inputs, std::vector<Attribute> attrs) {
    Node n;
    n.op_type = op;
    n.name = L.node.name + "/" + op;
    n.inputs = inputs;
    n.outputs = {L.b.fresh_name(L.node.name + "/" + op)};
    n.attrs = std::move(attrs);
    L.b.run_node(n);
    return L.b.vals[n.outputs[0]];
}

Attribute int_attr(const char* name, int64_t v) {
    Attribute a;
    a.name = name;
    a.type = AttrType::INT;
    a.i = v;
    return a;
}

std::string bind(Lower& L, Val v, const std::string& hint) {
    std::string name = L.b.fresh_name(hint);
    if (L.b.rec) L.b.rec->alias(name, v);
    v.name = name;
    L.b.vals[name] = std::move(v);
    return name;
}

void lower_If(Lower& L) {
    bool cond = L.h(0).i64(0) != 0;
    std::string c = L.b.rec ? L.b.rec->branch_cond(L.in(0)) : "";
    std::vector<Val> outs[2];
    for (int k : {1, 0}) {
        // Under compile, a condition that follows input data or shapes becomes a C++ if: both branches are built
        // (as device tensors, since the program picks one when it runs), and the graph uses this probe's.
        if (c.empty() && k != int(cond)) continue;
        outs[k] = run_body(L, body_of(L, k ? "then_branch" : "else_branch"), {});
        if (outs[k].size() < L.outs.size()) L.error("branch produces too few outputs");
        if (c.empty()) continue;
        for (size_t i = 0; i < L.outs.size(); i++)
            if (!outs[k][i].t) L.b.tensor(outs[k][i]);
        L.b.rec->branch_end(k, outs[k]);
    }
    for (size_t i = 0; i < L.outs.size(); i++) {
        L.outs[i] = outs[int(cond)][i];
        L.outs[i].input_deps.clear();
    }
}

void lower_Loop(Lower& L) {
    const Graph& body = body_of(L, "body");
    int64_t trip = L.has(0) ? L.h(0).i64(0) : kMaxIterations;
    bool cond = L.has(1) ? L.h(1).i64(0) != 0 : true;
    if (!L.has(0) && !L.has(1)) L.error("a Loop with neither trip count nor condition never ends");
    int n_carried = L.n_in() - 2;
    std::vector<Val> carried;
    for (int i = 0; i < n_carried; i++) carried.push_back(L.in(2 + i));
    int n_scan = int(body.outputs.size()) - 1 - n_carried;
    std::vector<std::vector<Val>> scans(size_t(std::max(n_scan, 0)));
    if (trip > 1 && cond) carried_to_device(L, body, carried);
    // Under compile, a trip count or condition that follows input data or shapes becomes a C++ for: iteration 0 is
    // recorded as its body, and the rest of this probe's iterations are built unrecorded.
    Recorder* rec = L.b.rec;
    bool program_loop = false;
    int64_t it = 0;
    for (; it < trip && cond; it++) {
        if (it >= kMaxIterations) L.error("more than " + std::to_string(kMaxIterations) + " iterations to unroll");
        Val iv, cv;
        iv.dtype = DType::INT64;
        iv.host = std::make_shared<HostTensor>(HostTensor::from_i64(DType::INT64, {}, {it}));
        cv.dtype = DType::BOOL;
        cv.host = std::make_shared<HostTensor>(HostTensor::from_i64(DType::BOOL, {}, {1}));
        if (it == 0 && rec)
            program_loop = rec->loop_begin(L.has(0) ? &L.in(0) : nullptr, L.has(1) ? &L.in(1) : nullptr, carried, iv);
        if (it == 1 && program_loop) L.b.rec = nullptr;
        std::vector<Val> args = {iv, cv};
        args.insert(args.end(), carried.begin(), carried.end());
        auto outs = run_body(L, body, args);
        const Val& co = outs[0];
        if (!co.host) L.error("the loop condition is computed on the device; it must be known on the host");
        cond = co.host->i64(0) != 0;
        for (int i = 0; i < n_carried; i++) carried[size_t(i)] = outs[size_t(1 + i)];
        for (int k = 0; k < n_scan; k++) scans[size_t(k)].push_back(outs[size_t(1 + n_carried + k)]);
        if (it == 0 && program_loop)
            rec->loop_end(co, std::vector<Val>(outs.begin() + 1, outs.begin() + 1 + n_carried),
                          std::vector<Val>(outs.begin() + 1 + n_carried, outs.end()));
    }
    if (program_loop) L.b.rec = nullptr;
    for (int i = 0; i < n_carried && size_t(i) < L.outs.size(); i++) L.outs[size_t(i)] = carried[size_t(i)];
    for (int k = 0; k < n_scan && size_t(n_carried + k) < L.outs.size(); k++) {
        if (L.node.outputs[size_t(n_carried + k)].empty()) continue;
        L.outs[size_t(n_carried + k)] = stack(L, scans[size_t(k)], 0);
    }
    L.b.rec = rec;
    for (auto& o : L.outs) o.input_deps.clear();
}

void lower_Scan(Lower& L) {
    const Graph& body = body_of(L, "body");
    int m = int(L.node.get_int("num_scan_inputs", 0));
    int n_state = L.n_in() - m;
    if (m <= 0 || n_state < 0) L.error("bad num_scan_inputs");
    auto in_axes = L.node.get_ints("scan_input_axes", std::vector<int64_t>(size_t(m), 0));
    auto in_dirs = L.node.get_ints("scan_input_directions", std::vector<int64_t>(size_t(m), 0));
    int n_scan_out = int(body.outputs.size()) - n_state;
    auto out_axes = L.node.get_ints("scan_output_axes", std::vector<int64_t>(size_t(n_scan_out), 0));
    auto out_dirs = L.node.get_ints("scan_output_directions", std::vector<int64_t>(size_t(n_scan_out), 0));
    // The node's outputs are the body's, and each per-input or per-output list has one entry each (found by
    // tests/fuzz: a body with more outputs than the node wrote past its output list).
    if (n_scan_out < 0 || body.outputs.size() != L.outs.size())
        L.error("the body has " + std::to_string(body.outputs.size()) + " outputs, the node " +
                std::to_string(L.outs.size()) + " (" + std::to_string(n_state) + " states)");
    if (in_axes.size() != size_t(m) || in_dirs.size() != size_t(m) || out_axes.size() != size_t(n_scan_out) ||
        out_dirs.size() != size_t(n_scan_out))
        L.error("scan_input_axes/directions need " + std::to_string(m) + " values and scan_output_axes/directions " +
                std::to_string(n_scan_out));
    std::vector<std::string> xs;
    int64_t T = -1;
    for (int j = 0; j < m; j++) {
        Val& x = L.in(n_state + j);
        int r = x.rank();
        int64_t a = in_axes[size_t(j)] < 0 ? in_axes[size_t(j)] + r : in_axes[size_t(j)];
        if (a < 0 || a >= r) L.error("scan input axis out of range");
        in_axes[size_t(j)] = a;
        if (T >= 0 && x.shape[size_t(a)] != T) L.error("scan inputs differ in sequence length");
        T = x.shape[size_t(a)];
        xs.push_back(x.name);
    }
    if (T > kMaxIterations) L.error("more than " + std::to_string(kMaxIterations) + " iterations to unroll");
    std::vector<Val> state;
    for (int i = 0; i < n_state; i++) state.push_back(L.in(i));
    std::vector<std::vector<Val>> outs_k(static_cast<size_t>(n_scan_out));
    for (int64_t t = 0; t < T; t++) {
        std::vector<Val> args = state;
        for (int j = 0; j < m; j++) {
            int64_t idx = in_dirs[size_t(j)] ? T - 1 - t : t;
            std::string iname = L.b.add_const(HostTensor::from_i64(DType::INT64, {}, {idx}), "t");
            args.push_back(synth(L, "Gather", {xs[size_t(j)], iname}, {int_attr("axis", in_axes[size_t(j)])}));
        }
        auto outs = run_body(L, body, args);
        for (int i = 0; i < n_state; i++) state[size_t(i)] = outs[size_t(i)];
        for (int k = 0; k < n_scan_out; k++) outs_k[size_t(k)].push_back(outs[size_t(n_state + k)]);
    }
    for (int i = 0; i < n_state; i++) L.outs[size_t(i)] = state[size_t(i)];
    for (int k = 0; k < n_scan_out; k++) {
        auto items = outs_k[size_t(k)];
        if (out_dirs[size_t(k)]) std::reverse(items.begin(), items.end());
        int r = items.empty() ? 1 : items[0].rank() + 1;
        int64_t a = out_axes[size_t(k)] < 0 ? out_axes[size_t(k)] + r : out_axes[size_t(k)];
        L.outs[size_t(n_state + k)] = stack(L, items, a);
    }
    for (auto& o : L.outs) o.input_deps.clear();
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& control_flow_ops() {
    static const std::vector<OpDef> t = {
        {.op = "If", .since = 1, .accepts = "in=1 out=1..", .host = lower_If, .host_inputs = {0}, .control = true},
        {.op = "Loop", .since = 1, .accepts = "in=2.. out=1..",
         .host = lower_Loop, .host_inputs = {0, 1}, .control = true},
        // No Scan-8 (batch axis, sequence_lens): such models are reported as unsupported.
        {.op = "Scan", .since = 9, .accepts = "in=1.. out=1..", .host = lower_Scan, .control = true},
    };
    return t;
}

}  // namespace onnx2ggml
