// fuse_hard_swish: x * clip(a*x + b, 0, 1), however an exporter spells it, becomes one onnx2ggml.HardSwish node
// (alpha a, beta b): one pass instead of four. Spellings matched by what they compute:
//   x * HardSigmoid(x)                          (HardSigmoid's own alpha and beta)
//   x * (Clip(x + b, 0, c) / c)  or  * (1/c)    (paddle2onnx, tf2onnx: relu6(x + 3) / 6)
//   (x * Clip(x + b, 0, c)) / c                 (torch's decomposed hardswish)
// Clip bounds are attributes (opset < 11) or constant inputs; the offset may be on either side of the Add.
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

namespace {

// The single-use producer of v with op type op, or null.
const Node* sole_node(GraphIndex& g, const std::string& v, const char* op) {
    int i = g.sole(v, op);
    return i < 0 ? nullptr : &g.plan.node(g.m, i);
}

// Node n is Clip(x + b, 0, hi) for some input x: sets x, b and hi.
bool clip_of_shifted(GraphIndex& g, const Node& clip, std::string& x, float& b, float& hi) {
    if (clip.inputs.empty()) return false;
    float lo = clip.get_float("min", -INFINITY);
    hi = clip.get_float("max", INFINITY);
    if (clip.inputs.size() > 1 && !clip.inputs[1].empty() && !scalar_constant(g, clip.inputs[1], lo)) return false;
    if (clip.inputs.size() > 2 && !clip.inputs[2].empty() && !scalar_constant(g, clip.inputs[2], hi)) return false;
    if (lo != 0.0f || !(hi > 0.0f) || std::isinf(hi)) return false;
    const Node* add = sole_node(g, clip.inputs[0], "Add");
    if (!add || add->inputs.size() != 2) return false;
    for (int k = 0; k < 2; k++)
        if (scalar_constant(g, add->inputs[size_t(1 - k)], b)) {
            x = add->inputs[size_t(k)];
            return true;
        }
    return false;
}

// v = clip(a*x + b, 0, 1) of input x: sets alpha and beta. `nodes` collects the matched nodes.
bool hard_gate(GraphIndex& g, const std::string& v, const std::string& x, float& alpha, float& beta,
               std::vector<int>& nodes) {
    if (int i = g.sole(v, "HardSigmoid"); i >= 0) {
        const Node& hs = g.plan.node(g.m, i);
        if (hs.inputs.empty() || hs.inputs[0] != x) return false;
        alpha = hs.get_float("alpha", 0.2f);
        beta = hs.get_float("beta", 0.5f);
        nodes.push_back(i);
        return true;
    }
    for (const char* op : {"Div", "Mul"}) {
        int i = g.sole(v, op);
        if (i < 0) continue;
        const Node& d = g.plan.node(g.m, i);
        if (d.inputs.size() != 2) return false;
        const bool div = op[0] == 'D';
        for (int k = 0; k < (div ? 1 : 2); k++) {  // Div: the clip is the dividend; Mul: either side
            float c, b, hi;
            std::string src;
            if (!scalar_constant(g, d.inputs[size_t(1 - k)], c) || c == 0.0f) continue;
            const float s = div ? 1.0f / c : c;  // clip(x + b, 0, hi) * s, in [0, 1] when hi * s == 1
            int ci = g.sole(d.inputs[size_t(k)], "Clip");
            if (ci < 0 || !clip_of_shifted(g, g.plan.node(g.m, ci), src, b, hi) || src != x) continue;
            if (std::fabs(hi * s - 1.0f) > 1e-6f) continue;
            alpha = s;
            beta = b * s;
            nodes.push_back(i);
            nodes.push_back(ci);
            nodes.push_back(g.producer[g.plan.node(g.m, ci).inputs[0]]);
            return true;
        }
        return false;
    }
    return false;
}

}  // namespace

void fuse_hard_swish(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        if (!n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 || removed.count(idx)) continue;
        float alpha = 0, beta = 0;
        std::vector<int> nodes;
        std::string x;
        if (n.op_type == "Mul") {  // x * gate(x)
            for (int k = 0; k < 2 && x.empty(); k++)
                if (nodes.clear(); hard_gate(g, n.inputs[size_t(1 - k)], n.inputs[size_t(k)], alpha, beta, nodes))
                    x = n.inputs[size_t(k)];
        } else if (n.op_type == "Div") {  // (x * clip(x + b, 0, c)) / c
            float c, b, hi;
            std::string src;
            const Node* mul = sole_node(g, n.inputs[0], "Mul");
            if (!mul || !scalar_constant(g, n.inputs[1], c) || c == 0.0f || mul->inputs.size() != 2) continue;
            for (int k = 0; k < 2 && x.empty(); k++) {
                int ci = g.sole(mul->inputs[size_t(1 - k)], "Clip");
                if (ci < 0 || !clip_of_shifted(g, plan.node(m, ci), src, b, hi) || src != mul->inputs[size_t(k)] ||
                    std::fabs(hi / c - 1.0f) > 1e-6f)
                    continue;
                x = src, alpha = 1.0f / c, beta = b / c;
                nodes = {g.producer[n.inputs[0]], ci, g.producer[plan.node(m, ci).inputs[0]]};
            }
        }
        if (x.empty()) continue;
        bool clash = false;
        for (int k : nodes) clash |= removed.count(k) > 0;
        if (clash) continue;
        Node fused = n;
        fused.op_type = "onnx2ggml.HardSwish";  // internal op, produced only by this pass
        fused.inputs = {x};
        fused.attrs = {float_attr("alpha", alpha), float_attr("beta", beta)};
        plan.rewritten[idx] = fused;
        removed.insert(nodes.begin(), nodes.end());
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
