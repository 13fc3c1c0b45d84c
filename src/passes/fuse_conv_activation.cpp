// fuse_conv_activation: Conv followed by Relu or by a Clip with constant bounds (ReLU6) becomes one
// onnx2ggml.ConvClamp node, so the CPU's 1x1 convolution kernel applies the activation while writing its output
// (no separate pass over the tensor); other convolutions apply it as the Relu/Clip would have.
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

void fuse_conv_activation(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& conv = plan.node(m, idx);
        if (conv.op_type != "Conv" || !conv.domain.empty() || conv.outputs.size() != 1) continue;
        int act_idx = g.only_consumer(conv.outputs[0], "Relu");
        float lo = 0, hi = INFINITY;
        if (act_idx < 0) {
            act_idx = g.only_consumer(conv.outputs[0], "Clip");
            if (act_idx < 0) continue;
            const Node& clip = plan.node(m, act_idx);
            if (clip.inputs.empty() || clip.inputs[0] != conv.outputs[0]) continue;
            lo = clip.get_float("min", -INFINITY);  // before opset 11: attributes; from 11: constant inputs
            hi = clip.get_float("max", INFINITY);
            if (clip.inputs.size() > 1 && !clip.inputs[1].empty() && !scalar_constant(g, clip.inputs[1], lo)) continue;
            if (clip.inputs.size() > 2 && !clip.inputs[2].empty() && !scalar_constant(g, clip.inputs[2], hi)) continue;
            if (std::isnan(lo) || std::isnan(hi)) continue;
            lo = std::min(lo, hi);  // Clip's rule for min > max: every value becomes max
        }
        const Node& act = plan.node(m, act_idx);
        if (act.outputs.size() != 1 || removed.count(act_idx)) continue;
        Node fused = conv;
        fused.op_type = "onnx2ggml.ConvClamp";  // internal op, produced only by this pass
        fused.outputs = act.outputs;
        fused.attrs.push_back(float_attr("clamp_min", lo));
        fused.attrs.push_back(float_attr("clamp_max", hi));
        plan.rewritten[idx] = fused;
        removed.insert(act_idx);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
