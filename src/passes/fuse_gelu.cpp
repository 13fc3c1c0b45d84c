// fuse_gelu: GELU as exported before opset 20, Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5) (also with
// Mul(x, 1/sqrt 2)), becomes one onnx2ggml.Gelu node lowered to ggml_gelu_erf (f32, erff): five passes become one.
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

namespace {

bool near(float a, double b) { return std::fabs(double(a) - b) <= 1e-6 * std::fabs(b); }

}  // namespace

void fuse_gelu(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& e = plan.node(m, idx);
        if (e.op_type != "Erf" || !e.domain.empty() || e.inputs.size() != 1 || removed.count(idx)) continue;
        auto dp = g.producer.find(e.inputs[0]);
        if (dp == g.producer.end() || g.uses[e.inputs[0]] != 1) continue;
        const Node& d = plan.node(m, dp->second);
        float c;
        std::string x;
        if (d.op_type == "Div" && d.domain.empty() && scalar_constant(g, d.inputs[1], c) && near(c, std::sqrt(2.0)))
            x = d.inputs[0];
        else if (d.op_type == "Mul" && d.domain.empty()) {
            for (int side = 0; side < 2 && x.empty(); side++)
                if (scalar_constant(g, d.inputs[size_t(side)], c) && near(c, std::sqrt(0.5))) x = d.inputs[size_t(1 - side)];
        }
        if (x.empty()) continue;
        int add = g.only_consumer(e.outputs[0], "Add");
        if (add < 0) continue;
        const Node& a = plan.node(m, add);
        const std::string& one = a.inputs[0] == e.outputs[0] ? a.inputs[1] : a.inputs[0];
        if (!scalar_constant(g, one, c) || c != 1.f) continue;
        int mul1 = g.only_consumer(a.outputs[0], "Mul");
        if (mul1 < 0) continue;
        const Node& m1 = plan.node(m, mul1);
        if ((m1.inputs[0] == a.outputs[0] ? m1.inputs[1] : m1.inputs[0]) != x) continue;
        int mul2 = g.only_consumer(m1.outputs[0], "Mul");
        if (mul2 < 0) continue;
        const Node& m2 = plan.node(m, mul2);
        if (!scalar_constant(g, m2.inputs[0] == m1.outputs[0] ? m2.inputs[1] : m2.inputs[0], c) || c != 0.5f) continue;
        Node fused;
        fused.op_type = "onnx2ggml.Gelu";  // internal op, produced only by this pass
        fused.name = e.name;
        fused.inputs = {x};
        fused.outputs = m2.outputs;
        for (int dead : {dp->second, idx, add, mul1}) removed.insert(dead);
        plan.rewritten[mul2] = fused;
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
