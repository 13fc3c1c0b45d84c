// fusion_report: which fusions fired and which fusible-looking nodes were left as they are, for `info` and
// `run --stats`: a user sees when a model misses the fast path (a GroupNorm spelled in a form no pass knows).
#include <set>

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

// Ops of the file that are already what a fusion would make (standard ones since opsets 17-23, and the contrib
// ops onnxruntime's optimizer writes): lowered to the same kernels, so counted beside the fusions.
bool fused_kind_op(const Node& n) {
    static const std::set<std::string> standard = {"GroupNormalization", "LayerNormalization", "RMSNormalization",
                                                   "Attention", "Gelu"};
    static const std::set<std::string> contrib = {
        "GroupNorm", "SkipGroupNorm", "MultiHeadAttention", "Attention", "BiasSplitGelu", "BiasGelu", "FastGelu",
        "Gelu", "QuickGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "LayerNormalization",
        "SimplifiedLayerNormalization", "RotaryEmbedding"};
    if (n.domain.empty() || n.domain == "ai.onnx")
        return standard.count(n.op_type) != 0 || n.op_type == "SimplifiedLayerNormalization";
    return n.domain == "com.microsoft" && contrib.count(n.op_type) != 0;
}

}  // namespace

FusionReport fusion_report(const Model& m, const GraphPlan& plan) {
    FusionReport r;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        if (fused_kind_op(n)) {
            r.native[n.domain.empty() ? n.op_type : "ms." + n.op_type]++;  // the model's own op, same kernels
            continue;
        }
        if (!n.domain.empty()) continue;
        if (n.op_type.rfind("onnx2ggml.", 0) == 0) {
            std::string name = n.op_type.substr(10);
            if (name == "GroupNorm" && n.get_int("silu", 0)) name += "+SiLU";
            r.fused[name]++;
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
