// mark_host_values: values whose data must be known at build time (shapes, axes, indices), and
// everything they are computed from. These run on the host; the rest is lowered to ggml.
#include "ops/op.h"
#include "passes/pipeline.h"

namespace onnx2ggml {

namespace {

// Values the model declares with a narrow element type (float8, float4e2m1, 4- and 2-bit ints).
std::set<std::string> narrow_values(const Graph& g) {
    std::set<std::string> r;
    for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
        for (const ValueInfo& vi : *list)
            if (dtype_is_narrow(vi.dtype)) r.insert(vi.name);
    for (const auto& [name, td] : g.initializers)
        if (dtype_is_narrow(td->dtype)) r.insert(name);
    return r;
}

// No device computes in a narrow type: a node that makes one (a Cast to float8, a CastLike or QuantizeLinear whose
// type input is int4) runs on the host, where the rounding rules are exact. DequantizeLinear only reads one, which
// uploads widened: int4-weight models keep their dequantization on the device.
bool touches_narrow(const Node& n, const std::set<std::string>& narrow) {
    for (const char* a : {"to", "output_dtype"}) {
        const Attribute* at = n.attr(a);
        if (at && at->type == AttrType::INT && dtype_is_narrow(DType(int32_t(at->i)))) return true;
    }
    for (const auto& v : n.outputs)
        if (narrow.count(v)) return true;
    if (n.op_type == "DequantizeLinear") return false;
    for (const auto& v : n.inputs)
        if (narrow.count(v)) return true;
    return false;
}

// Whether v can be computed when the graph is built: constants and shapes through ops with a host form. A
// graph input's data is not known then. Memoized in `seen`: a model's DAG may share inputs many times over.
bool host_computable(const Model& m, const GraphPlan& plan, const std::map<std::string, int>& producer,
                     const std::string& v, int depth, std::map<std::string, bool>& seen) {
    auto known = seen.find(v);
    if (known != seen.end()) return known->second;
    bool ok;
    auto it = producer.find(v);
    if (it == producer.end()) {
        ok = m.graph.initializers.count(v) > 0;
    } else {
        const Node& n = plan.node(m, it->second);
        const OpDef* def = find_op(n.domain, n.op_type, m.opset(n.domain));
        ok = def && def->host && !def->control && depth <= 24;
        if (ok && !def->shape_only)
            for (const auto& i : n.inputs)
                if (!i.empty() && !host_computable(m, plan, producer, i, depth + 1, seen)) ok = false;
    }
    return seen[v] = ok;
}

}  // namespace

void mark_host_values(const Model& m, GraphPlan& plan) {
    auto& need = plan.need_host;
    const std::set<std::string> narrow = narrow_values(m.graph);
    std::map<std::string, int> producer;
    std::map<std::string, bool> seen;
    for (int idx : plan.live_nodes)
        for (const auto& o : plan.node(m, idx).outputs) producer[o] = idx;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        const OpDef* def = find_op(n.domain, n.op_type, m.opset(n.domain));
        if (!def) continue;
        for (int i : def->host_inputs)
            if (i < int(n.inputs.size()) && !n.inputs[size_t(i)].empty()) need.insert(n.inputs[size_t(i)]);
        for (int i : def->build_time_inputs)
            if (i < int(n.inputs.size()) && !n.inputs[size_t(i)].empty() &&
                host_computable(m, plan, producer, n.inputs[size_t(i)], 0, seen))
                need.insert(n.inputs[size_t(i)]);
        if (touches_narrow(n, narrow))
            for (const auto* list : {&n.inputs, &n.outputs})
                for (const auto& v : *list)
                    if (!v.empty()) need.insert(v);
    }
    for (auto it = plan.live_nodes.rbegin(); it != plan.live_nodes.rend(); ++it) {
        const Node& n = plan.node(m, *it);
        bool needed = false;
        for (const auto& o : n.outputs)
            if (need.count(o)) needed = true;
        if (!needed) continue;
        const OpDef* def = find_op(n.domain, n.op_type, m.opset(n.domain));
        if (!def || !def->host || def->shape_only) continue;  // cannot run on the host; the op reports it when lowered
        for (const auto& i : n.inputs)
            if (!i.empty()) need.insert(i);
    }
}

}  // namespace onnx2ggml
