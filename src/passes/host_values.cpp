// mark_host_values: values whose data must be known at build time (shapes, axes, indices), and
// everything they are computed from. These run on the host; the rest is lowered to ggml.
#include "ops/op.h"
#include "passes/pipeline.h"

namespace onnx2ggml {

void mark_host_values(const Model& m, GraphPlan& plan) {
    auto& need = plan.need_host;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        const OpDef* def = find_op(n.domain, n.op_type, m.opset(n.domain));
        if (!def) continue;
        for (int i : def->host_inputs)
            if (i < int(n.inputs.size()) && !n.inputs[size_t(i)].empty()) need.insert(n.inputs[size_t(i)]);
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
