// fuse_silu: Mul(x, Sigmoid(x)) (how PyTorch exports SiLU/Swish) becomes one node lowered to ggml_silu,
// saving a full pass over the tensor and the intermediate.
#include <map>

#include "passes/pipeline.h"

namespace onnx2ggml {

void fuse_silu(const Model& m, GraphPlan& plan) {
    std::map<std::string, int> uses, producer;
    for (const Node& n : m.graph.nodes)
        for (auto& i : n.inputs) uses[i]++;
    for (auto& o : m.graph.outputs) uses[o.name]++;
    for (int idx : plan.live_nodes)
        for (auto& o : plan.node(m, idx).outputs) producer[o] = idx;
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& mul = plan.node(m, idx);
        if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2) continue;
        for (int side = 0; side < 2; side++) {
            const std::string& s = mul.inputs[size_t(side)];
            const std::string& x = mul.inputs[size_t(1 - side)];
            auto p = producer.find(s);
            if (p == producer.end() || uses[s] != 1 || removed.count(p->second)) continue;
            const Node& sig = plan.node(m, p->second);
            if (sig.op_type != "Sigmoid" || !sig.domain.empty() || sig.inputs.size() != 1 || sig.inputs[0] != x) continue;
            Node fused;
            fused.op_type = "onnx2ggml.SiLU";  // internal op, produced only by this pass
            fused.name = mul.name;
            fused.inputs = {x};
            fused.outputs = mul.outputs;
            plan.rewritten[idx] = fused;
            removed.insert(p->second);
            break;
        }
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
