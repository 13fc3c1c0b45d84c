// fuse_gelu: GELU as exported before opset 20, 0.5 x (1 + Erf(x / sqrt 2)) (or Mul by 1/sqrt 2) with the product
// in any order (TorchScript writes (x a) 0.5, dynamo x (0.5 a)), becomes one onnx2ggml.Gelu node lowered to
// ggml_gelu_erf (f32, erff): five passes become one.
// The tanh form, 0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 x^3))) with the product in any order, becomes
// onnx2ggml.Gelu with approximate "tanh".
#include <cmath>

#include "passes/match.h"

namespace onnx2ggml {

namespace {


// A scalar constant standing for `want`: within its type's rounding (an fp16 file's sqrt 2 is 1.4140625, and the
// fused op's exact constant is nearer the computation the exporter wrote than that rounding).
bool scalar_near(GraphIndex& g, const std::string& v, double want) {
    float c;
    DType t;
    return scalar_constant(g, v, c, &t) && std::fabs(double(c) - want) <= rounding_of(t) * std::fabs(want);
}

// The nodes computing v = x^3 as Pow(x, 3) (in f32 between an fp16 file's Casts, or not) or Mul(x, Mul(x, x));
// empty if v is not that.
std::vector<int> cube_of(GraphIndex& g, const std::string& v, const std::string& x) {
    std::vector<int> nodes;
    int pw = g.sole(g.before_casts(v, nodes), "Pow");
    if (pw >= 0) {
        const Node& p = g.plan.node(g.m, pw);
        nodes.push_back(pw);
        return g.before_casts(p.inputs[0], nodes) == x && scalar_near(g, p.inputs[1], 3.0) ? nodes : std::vector<int>{};
    }
    int m3 = g.sole(v, "Mul");
    if (m3 < 0) return {};
    const Node& c = g.plan.node(g.m, m3);
    if (c.inputs[0] != x && c.inputs[1] != x) return {};
    int m2 = g.sole(other(c, x), "Mul");
    if (m2 < 0 || g.plan.node(g.m, m2).inputs[0] != x || g.plan.node(g.m, m2).inputs[1] != x) return {};
    return {m3, m2};
}

// x of x + 0.044715 x^3 (the cube as Pow(x, 3)), the Add's input; "" otherwise. Nodes read go to `nodes`.
std::string cubic_of(GraphIndex& g, const std::string& v, std::vector<int>& nodes) {
    int add = g.sole(v, "Add");
    if (add < 0) return "";
    const Node& a = g.plan.node(g.m, add);
    for (int side = 0; side < 2; side++) {
        int mul = g.sole(a.inputs[size_t(side)], "Mul");
        if (mul < 0) continue;
        const Node& mn = g.plan.node(g.m, mul);
        const std::string& x = a.inputs[size_t(1 - side)];
        for (int k = 0; k < 2; k++) {
            if (!scalar_near(g, mn.inputs[size_t(1 - k)], 0.044715)) continue;
            std::vector<int> cube = cube_of(g, mn.inputs[size_t(k)], x);
            if (cube.empty()) continue;
            nodes.insert(nodes.end(), {add, mul});
            nodes.insert(nodes.end(), cube.begin(), cube.end());
            return x;
        }
    }
    return "";
}

// The node ending 0.5 * x * a with the three factors multiplied in any order; -1 if a's uses are not that.
// The other node read goes to `nodes`.
int half_x_times(GraphIndex& g, const std::string& a, const std::string& x, std::vector<int>& nodes) {
    int m1 = g.only_consumer(a, "Mul");
    if (m1 < 0) return -1;
    const std::string& o1 = other(g.plan.node(g.m, m1), a);
    const std::string& y1 = g.plan.node(g.m, m1).outputs[0];
    int half = g.sole(o1, "Mul");
    if (half >= 0 && scalar_near(g, other(g.plan.node(g.m, half), x), 0.5) &&
        (g.plan.node(g.m, half).inputs[0] == x || g.plan.node(g.m, half).inputs[1] == x)) {
        nodes.push_back(half);  // (0.5 x) a
        return m1;
    }
    if (o1 != x && !scalar_near(g, o1, 0.5)) return -1;  // (x a) 0.5 or (0.5 a) x
    int m2 = g.only_consumer(y1, "Mul");
    if (m2 < 0) return -1;
    const std::string& o2 = other(g.plan.node(g.m, m2), y1);
    if (o1 == x ? !scalar_near(g, o2, 0.5) : o2 != x) return -1;
    nodes.push_back(m1);
    return m2;
}

// The tail both forms share: f = Erf or Tanh of x's scaled value, then 0.5 x (1 + f) in any order. Rewrites the
// last node as onnx2ggml.Gelu (internal, produced only by this pass; approximate "tanh" or none).
void fuse_tail(GraphIndex& g, const Node& f, const std::string& x, std::vector<int>& nodes, const char* approximate,
               std::set<int>& removed) {
    std::string fv = f.outputs[0];
    int add = g.consumer_past_casts(fv, "Add", nodes);  // an fp16 file's Erf in f32 between Casts
    if (add < 0 || !scalar_near(g, other(g.plan.node(g.m, add), fv), 1.0)) return;
    nodes.push_back(add);
    int last = half_x_times(g, g.plan.node(g.m, add).outputs[0], x, nodes);
    if (last < 0) return;
    Node fused;
    fused.op_type = "onnx2ggml.Gelu";
    fused.name = f.name;
    fused.inputs = {x};
    fused.outputs = g.plan.node(g.m, last).outputs;
    if (*approximate) {
        Attribute ap;
        ap.name = "approximate";
        ap.type = AttrType::STRING;
        ap.s = approximate;
        fused.attrs = {ap};
    }
    for (int n : nodes) removed.insert(n);
    g.plan.rewritten[last] = fused;
}

// The tanh GELU whose Tanh is node idx: rewrites its last node, returns the others to remove.
void fuse_tanh_form(GraphIndex& g, int idx, std::set<int>& removed) {
    const Node& t = g.plan.node(g.m, idx);
    if (t.op_type != "Tanh" || !t.domain.empty() || t.inputs.size() != 1) return;
    std::vector<int> nodes = {idx};
    int scale = g.sole(g.before_casts(t.inputs[0], nodes), "Mul");  // an fp16 file's Tanh kept in f32
    if (scale < 0) return;
    const Node& sn = g.plan.node(g.m, scale);
    std::string x;
    for (int k = 0; k < 2 && x.empty(); k++)
        if (scalar_near(g, sn.inputs[size_t(k)], std::sqrt(2.0 / M_PI))) x = cubic_of(g, sn.inputs[size_t(1 - k)], nodes);
    if (x.empty()) return;
    nodes.push_back(scale);
    fuse_tail(g, t, x, nodes, "tanh", removed);
}

// The erf GELU whose Erf is node idx, 0.5 x (1 + Erf(x / sqrt 2)) with the product in any order.
void fuse_erf_form(GraphIndex& g, int idx, std::set<int>& removed) {
    const Node& e = g.plan.node(g.m, idx);
    if (e.op_type != "Erf" || !e.domain.empty() || e.inputs.size() != 1) return;
    std::string x;
    std::vector<int> casts;
    const std::string arg = g.before_casts(e.inputs[0], casts);
    int div = g.sole(arg, "Div"), mul = g.sole(arg, "Mul");
    if (div >= 0 && scalar_near(g, g.plan.node(g.m, div).inputs[1], std::sqrt(2.0))) x = g.plan.node(g.m, div).inputs[0];
    for (int side = 0; side < 2 && mul >= 0 && x.empty(); side++)
        if (scalar_near(g, g.plan.node(g.m, mul).inputs[size_t(side)], std::sqrt(0.5)))
            x = g.plan.node(g.m, mul).inputs[size_t(1 - side)];
    if (x.empty()) return;
    std::vector<int> nodes = {idx, div >= 0 ? div : mul};
    nodes.insert(nodes.end(), casts.begin(), casts.end());
    fuse_tail(g, e, x, nodes, "", removed);
}

}  // namespace

void fuse_gelu(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        if (!removed.count(idx)) fuse_tanh_form(g, idx, removed);
        if (!removed.count(idx)) fuse_erf_form(g, idx, removed);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
