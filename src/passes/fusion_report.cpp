// fusion_report: which fusions fired and which fusible-looking nodes were left as they are, for `info` and
// `run --stats`: a user sees when a model misses the fast path (a GroupNorm spelled in a form no pass knows).
#include "passes/pipeline.h"

namespace onnx2ggml {

namespace {

// Nodes a fusion would have absorbed, by what is left of them; the note says which fusion missed.
const std::map<std::string, std::string>& fusible_kinds() {
    static const std::map<std::string, std::string> k = {
        {"InstanceNormalization", "not in a GroupNorm"}, {"ReduceMean", "a norm's mean, not fused"},
        {"Softmax", "not in an attention"},               {"Erf", "not in a GELU"},
        {"Tanh", "not in a GELU"},                        {"Sigmoid", "not in a SiLU"},
        {"BatchNormalization", "not folded into a Conv"},
    };
    return k;
}

}  // namespace

FusionReport fusion_report(const Model& m, const GraphPlan& plan) {
    FusionReport r;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        if (!n.domain.empty()) continue;
        if (n.op_type.rfind("onnx2ggml.", 0) == 0) {
            std::string name = n.op_type.substr(10);
            if (name == "GroupNorm" && n.get_int("silu", 0)) name += "+SiLU";
            r.fused[name]++;
        } else if (n.op_type == "GroupNormalization" || n.op_type == "LayerNormalization" ||
                   n.op_type == "RMSNormalization" || n.op_type == "Attention" || n.op_type == "Gelu") {
            r.native[n.op_type]++;  // the model's own op, lowered to the same kernels
        } else if (fusible_kinds().count(n.op_type)) {
            r.unfused[n.op_type]++;
        }
    }
    return r;
}

std::string fusion_note(const std::string& op) {
    auto it = fusible_kinds().find(op);
    return it != fusible_kinds().end() ? it->second : "";
}

}  // namespace onnx2ggml
