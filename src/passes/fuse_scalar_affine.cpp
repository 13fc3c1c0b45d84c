// fuse_scalar_affine: two or more Mul, Div, Add or Sub steps by scalar constants in a row (paddle's learnable
// affine blocks, normalizations written out, `x * 2 - 1`) become one onnx2ggml.ScaleBias node, y = x * scale +
// bias: one pass over the tensor instead of one per step, and none for a chain that does nothing (x / 1). Steps
// after a Conv were already folded into its weights.
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

namespace {

// One step y = op(v, c) or op(c, v) with c a scalar constant: updates scale and bias (y = x * scale + bias), the
// largest constant rank seen, and returns the step's output; "" if node n is not such a step.
std::string step(GraphIndex& g, const Node& n, const std::string& v, double& scale, double& bias, int& rank) {
    const std::string& op = n.op_type;
    if (!n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[0] == n.inputs[1]) return "";
    if (op != "Mul" && op != "Div" && op != "Add" && op != "Sub") return "";
    const int vi = n.inputs[0] == v ? 0 : n.inputs[1] == v ? 1 : -1;
    float c;
    if (vi < 0 || !scalar_constant(g, n.inputs[size_t(1 - vi)], c)) return "";
    if (op == "Div" && (vi != 0 || c == 0.0f)) return "";
    if (op == "Mul") scale *= c, bias *= c;
    else if (op == "Div") scale /= c, bias /= c;
    else if (op == "Add") bias += c;
    else if (vi == 0) bias -= c;
    else scale = -scale, bias = c - bias;  // c - v
    rank = std::max(rank, int(g.constant(n.inputs[size_t(1 - vi)])->dims.size()));
    return n.outputs[0];
}

}  // namespace

void fuse_scalar_affine(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        if (removed.count(idx)) continue;
        const Node& first = plan.node(m, idx);
        double scale = 1, bias = 0;
        int rank = 0;
        std::string x;
        for (int k = 0; k < 2 && x.empty() && first.inputs.size() == 2; k++) {
            scale = 1, bias = 0, rank = 0;
            if (!step(g, first, first.inputs[size_t(k)], scale, bias, rank).empty()) x = first.inputs[size_t(k)];
        }
        if (x.empty()) continue;
        // A chain starts where x is not itself the output of such a step (that step starts it instead).
        if (auto p = g.producer.find(x); p != g.producer.end() && g.uses[x] == 1) {
            double s = 1, b = 0;
            int r = 0;
            const Node& pn = plan.node(m, p->second);
            bool pstep = false;
            for (auto& in : pn.inputs) pstep |= !step(g, pn, in, s, b, r).empty();
            if (pstep) continue;
        }
        std::vector<int> steps = {idx};
        std::string y = first.outputs[0];
        for (int next; (next = g.single_consumer(y)) >= 0 && !removed.count(next);) {
            std::string out = step(g, plan.node(m, next), y, scale, bias, rank);
            if (out.empty()) break;
            steps.push_back(next);
            y = out;
        }
        // One step alone is already one pass, unless it does nothing (diffusers' division by an output scale of 1).
        const bool identity = scale == 1.0 && bias == 0.0;
        if ((steps.size() < 2 && !identity) || !std::isfinite(scale) || !std::isfinite(bias)) continue;
        Node fused = first;
        fused.op_type = "onnx2ggml.ScaleBias";  // internal op, produced only by this pass
        fused.inputs = {x};
        fused.outputs = {y};
        fused.attrs = {float_attr("scale", float(scale)), float_attr("bias", float(bias)), int_attr("rank", rank)};
        plan.rewritten[idx] = fused;
        removed.insert(steps.begin() + 1, steps.end());
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
