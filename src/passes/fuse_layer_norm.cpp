// fuse_layer_norm: LayerNorm and RMSNorm written out in elementwise ops (exports before opset 17, and models'
// own modules) become one onnx2ggml.LayerNorm / onnx2ggml.RMSNorm node, lowered like LayerNormalization-17 and
// RMSNormalization-23 (ggml_norm / ggml_rms_norm): one pass instead of eight.
//   LayerNorm: d = x - ReduceMean(x);  d / Sqrt(ReduceMean(d^2) + eps) * gamma [+ beta]
//   RMSNorm:   x / Sqrt(ReduceMean(x^2) + eps) * gamma      (d^2 as Pow(d, 2) or Mul(d, d); "/ s" as * (1 / s))
// over the last k axes; gamma (and beta) constants that broadcast over those axes only.
#include "passes/shape_expr.h"

namespace onnx2ggml {

namespace {

// The normalized axes of ReduceMean node n as a count k of trailing axes of a rank-r input (r < 0: unknown, only
// negative axes then); 0 if they are not the last ones or the reduction drops them.
int trailing_axes(GraphIndex& g, const Node& n, int r) {
    if (n.get_int("keepdims", 1) != 1) return 0;
    std::vector<int64_t> axes = n.get_ints("axes");
    if (n.inputs.size() > 1 && !n.inputs[1].empty()) {
        const TensorData* t = g.constant(n.inputs[1]);
        if (!t || t->dtype != DType::INT64) return 0;
        axes.resize(size_t(t->numel()));
        std::memcpy(axes.data(), t->data, axes.size() * 8);
    }
    if (axes.empty()) return 0;
    std::set<int64_t> neg;
    for (int64_t a : axes) {
        if (a >= 0 && r < 0) return 0;
        neg.insert(a >= 0 ? a - r : a);
    }
    const int k = int(neg.size());
    return *neg.begin() == -k && *neg.rbegin() == -1 ? k : 0;
}

// The square of v: Pow(v, 2) or Mul(v, v); its node index, or -1. Casts to f32 before a Pow kept in f32 (an fp16
// file's) go to `casts`.
int square_of(GraphIndex& g, const std::string& sq, std::string& v, std::vector<int>& casts) {
    auto p = g.producer.find(sq);
    if (p == g.producer.end() || g.uses[sq] != 1) return -1;
    const Node& n = g.plan.node(g.m, p->second);
    float c;
    if (!n.domain.empty() || n.inputs.size() != 2) return -1;
    if (n.op_type == "Pow" && scalar_constant(g, n.inputs[1], c) && c == 2.f) v = g.before_casts(n.inputs[0], casts);
    else if (n.op_type == "Mul" && n.inputs[0] == n.inputs[1]) v = n.inputs[0];
    else return -1;
    return p->second;
}

// A per-feature constant over the last k axes: rank <= k, or leading ones.
bool feature_param(GraphIndex& g, const std::string& v, int k) {
    const TensorData* t = g.constant(v);
    if (!t || !float_dtype(t->dtype)) return false;
    for (size_t i = 0; i + size_t(k) < t->dims.size(); i++)
        if (t->dims[i] != 1) return false;
    return true;
}

// Matches y = num / Sqrt(ReduceMean(sq) + eps) at node idx (Div, or Mul by Reciprocal); fills the parts.
struct Scaled {
    std::string num, sq_in;
    const Node* mean = nullptr;
    float eps = 0;
    std::vector<int> nodes;
};
bool scaled(GraphIndex& g, int idx, Scaled& s) {
    const Node& n = g.plan.node(g.m, idx);
    if (!n.domain.empty() || n.inputs.size() != 2) return false;
    std::string den;
    if (n.op_type == "Div") {
        s.num = n.inputs[0], den = n.inputs[1];
    } else if (n.op_type == "Mul") {
        for (int side = 0; side < 2 && den.empty(); side++) {  // * Reciprocal(z) or * (1 / z)
            int r = g.sole(n.inputs[size_t(side)], "Reciprocal"), q = g.sole(n.inputs[size_t(side)], "Div");
            float one = 0;
            if (r >= 0) den = g.plan.node(g.m, r).inputs[0];
            else if (q >= 0 && scalar_constant(g, g.plan.node(g.m, q).inputs[0], one) && one == 1.f)
                den = g.plan.node(g.m, q).inputs[1], r = q;
            if (den.empty()) continue;
            s.nodes.push_back(r);
            s.num = n.inputs[size_t(1 - side)];
        }
    }
    // (an fp16 file may keep Sqrt, ReduceMean and Pow in f32 between Casts: read past them)
    int sq = den.empty() ? -1 : g.sole(g.before_casts(den, s.nodes), "Sqrt");
    if (sq < 0) return false;
    int add = g.sole(g.before_casts(g.plan.node(g.m, sq).inputs[0], s.nodes), "Add");
    if (add < 0) return false;
    const Node& a = g.plan.node(g.m, add);
    std::string var;
    for (int side = 0; side < 2 && var.empty(); side++)
        if (scalar_constant(g, a.inputs[size_t(side)], s.eps)) var = a.inputs[size_t(1 - side)];
    int mean = var.empty() ? -1 : g.sole(g.before_casts(var, s.nodes), "ReduceMean");
    if (mean < 0) return false;
    s.mean = &g.plan.node(g.m, mean);
    s.sq_in = g.before_casts(s.mean->inputs[0], s.nodes);
    s.nodes.insert(s.nodes.end(), {sq, add, mean});
    return true;
}

// The ReduceMean node of a LayerNorm's numerator num = x - ReduceMean(x), read by the square and the division only
// (`reads` times); -1 if num is not that. x and the nodes (Sub, casts, mean) are filled.
int centered(GraphIndex& g, const std::string& num, int reads, std::string& x, std::vector<int>& nodes) {
    int sub = g.producer.count(num) ? g.producer[num] : -1;
    const Node* d = g.producer_of(num, "Sub");
    if (!d || g.uses[num] != reads || g.uses[d->inputs[1]] != 1) return -1;
    std::vector<int> casts;
    int mean = g.sole(g.before_casts(d->inputs[1], casts), "ReduceMean");
    if (mean < 0 || g.before_casts(g.plan.node(g.m, mean).inputs[0], casts) != d->inputs[0]) return -1;
    x = d->inputs[0];
    nodes.push_back(sub);
    nodes.push_back(mean);
    nodes.insert(nodes.end(), casts.begin(), casts.end());
    return mean;
}

}  // namespace

void fuse_layer_norm(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    ShapeFacts f(g);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        Scaled s;
        if (removed.count(idx) || !scaled(g, idx, s)) continue;
        std::string sq_of;
        int sq = square_of(g, s.sq_in, sq_of, s.nodes);
        if (sq < 0 || sq_of != s.num) continue;
        s.nodes.push_back(sq);
        // LayerNorm: the numerator is x - ReduceMean(x), read by the square and the division only.
        std::string x = s.num;
        std::vector<int> centering;
        const int mean0 = centered(g, s.num, plan.node(m, sq).op_type == "Mul" ? 3 : 2, x, centering);
        const bool layer = mean0 >= 0;
        const int r = f.rank(x);
        const int k = trailing_axes(g, *s.mean, r);
        if (k <= 0 || (layer && trailing_axes(g, plan.node(m, mean0), r) != k)) continue;
        s.nodes.insert(s.nodes.end(), centering.begin(), centering.end());
        // The affine: Mul(gamma) [-> Add(beta)], gamma required (the lowerings take a scale).
        const std::string& y = plan.node(m, idx).outputs[0];
        int mul = g.only_consumer(y, "Mul");
        if (mul < 0 || !feature_param(g, other(plan.node(m, mul), y), k)) continue;
        const std::string gamma = other(plan.node(m, mul), y);
        int last = mul, add = -1;
        std::string beta;
        if (layer) {
            add = g.only_consumer(plan.node(m, mul).outputs[0], "Add");
            if (add >= 0 && feature_param(g, other(plan.node(m, add), plan.node(m, mul).outputs[0]), k))
                beta = other(plan.node(m, add), plan.node(m, mul).outputs[0]), last = add;
        }
        Node fused;
        fused.op_type = layer ? "onnx2ggml.LayerNorm" : "onnx2ggml.RMSNorm";  // internal ops, made only here
        fused.name = plan.node(m, idx).name;
        fused.inputs = {x, gamma};
        if (!beta.empty()) fused.inputs.push_back(beta);
        fused.outputs = plan.node(m, last).outputs;
        fused.attrs = {int_attr("axis", -k), float_attr("epsilon", s.eps)};
        for (int dead : s.nodes) removed.insert(dead);
        removed.insert(idx);
        if (last != mul) removed.insert(mul);
        plan.rewritten[last] = fused;
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
