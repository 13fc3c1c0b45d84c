// fuse_silu: Mul(x, Sigmoid(x)) (how PyTorch exports SiLU/Swish) becomes one node lowered to ggml_silu,
// saving a full pass over the tensor and the intermediate. Mul(x, Sigmoid(Mul(x, c))) with a constant scalar c
// (CLIP's quick GELU, c = 1.702) becomes onnx2ggml.Swish (alpha c), lowered like ONNX Swish.
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

void fuse_silu(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);  // counts reads inside If/Loop/Scan bodies too: such a Sigmoid output must stay
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& mul = plan.node(m, idx);
        if (mul.op_type != "Mul" || !mul.domain.empty() || mul.inputs.size() != 2) continue;
        for (int side = 0; side < 2; side++) {
            std::vector<int> casts;  // an fp16 file's Sigmoid kept in f32 between Casts: the fused op is f32
            const std::string s = g.before_casts(mul.inputs[size_t(side)], casts);
            const std::string& x = mul.inputs[size_t(1 - side)];
            int sig_idx = g.sole(s, "Sigmoid");
            if (sig_idx < 0 || removed.count(sig_idx)) continue;
            const Node& sig = plan.node(m, sig_idx);
            if (sig.inputs.size() != 1) continue;
            const std::string sig_in = g.before_casts(sig.inputs[0], casts);
            Node fused;
            fused.name = mul.name;
            fused.inputs = {x};
            fused.outputs = mul.outputs;
            if (sig_in == x) {
                fused.op_type = "onnx2ggml.SiLU";  // internal op, produced only by this pass
                removed.insert(sig_idx);
            } else {
                int scale_idx = g.sole(sig_in, "Mul");
                if (scale_idx < 0 || removed.count(scale_idx)) continue;
                const Node& sm = plan.node(m, scale_idx);
                if (sm.inputs.size() != 2) continue;
                int xs = sm.inputs[0] == x ? 1 : sm.inputs[1] == x ? 0 : -1;
                const TensorData* ct = xs < 0 ? nullptr : g.constant(sm.inputs[size_t(xs)]);
                float c = 0;
                // rank 0 only: a [1,1,...] constant would also broadcast x to a higher rank
                if (!ct || !ct->dims.empty() || !scalar_constant(g, sm.inputs[size_t(xs)], c) || !std::isfinite(c) ||
                    c == 0.f)
                    continue;
                fused.op_type = "onnx2ggml.Swish";
                fused.attrs = {float_attr("alpha", c)};
                removed.insert(sig_idx);
                removed.insert(scale_idx);
            }
            removed.insert(casts.begin(), casts.end());
            plan.rewritten[idx] = fused;
            break;
        }
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
