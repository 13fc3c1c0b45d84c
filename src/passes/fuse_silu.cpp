// fuse_silu: Mul(x, Sigmoid(x)) (how PyTorch exports SiLU/Swish) becomes one node lowered to ggml_silu,
// saving a full pass over the tensor and the intermediate.
#include "passes/match.h"

namespace onnx2ggml {

void fuse_silu(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);  // counts reads inside If/Loop/Scan bodies too: such a Sigmoid output must stay
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& mul = plan.node(m, idx);
        if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2) continue;
        for (int side = 0; side < 2; side++) {
            const std::string& s = mul.inputs[size_t(side)];
            const std::string& x = mul.inputs[size_t(1 - side)];
            int sig_idx = g.sole(s, "Sigmoid");
            if (sig_idx < 0 || removed.count(sig_idx)) continue;
            const Node& sig = plan.node(m, sig_idx);
            if (sig.inputs.size() != 1 || sig.inputs[0] != x) continue;
            Node fused;
            fused.op_type = "onnx2ggml.SiLU";  // internal op, produced only by this pass
            fused.name = mul.name;
            fused.inputs = {x};
            fused.outputs = mul.outputs;
            plan.rewritten[idx] = fused;
            removed.insert(sig_idx);
            break;
        }
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
