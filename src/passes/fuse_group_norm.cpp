// fuse_group_norm: group normalization as exporters write it becomes one onnx2ggml.GroupNorm node: one kernel with
// the affine and the activation applied while normalizing, instead of up to five full passes over the tensor.
//   Reshape(x, [N, G, -1]) -> InstanceNormalization(ones, zeros) -> Reshape(back to x's shape)
//     [-> Mul(gamma [C,1,1]) -> Add(beta)] [-> SiLU]
// The targets are compared by what they hold, not by the nodes that built them: [0 or dim 0 of x, G, -1], and
// Shape(x) or any Shape/Gather/Concat/constant vector equal to it. Without the affine, the normalization's own
// per-group ones and zeros are the scale and bias. GroupNormalization (18, 21) followed by SiLU (fuse_silu's, or
// Swish with alpha 1) also becomes onnx2ggml.GroupNorm with silu set.
#include <map>

#include "passes/shape_expr.h"

namespace onnx2ggml {

namespace {

bool all_equal(const TensorData* t, int64_t n, float v) {
    if (!t || !float_dtype(t->dtype) || t->numel() != n) return false;
    for (int64_t i = 0; i < n; i++)
        if (float_at(*t, i) != v) return false;
    return true;
}

// A per-channel parameter of a rank-4 [N, C, H, W] tensor: shape [C, 1, 1] or [1, C, 1, 1].
int64_t channel_param(const TensorData* t) {
    if (!t || !float_dtype(t->dtype)) return -1;
    const auto& d = t->dims;
    if (d.size() != 3 && d.size() != 4) return -1;
    if (d.size() == 4 && d[0] != 1) return -1;
    if (d[d.size() - 1] != 1 || d[d.size() - 2] != 1) return -1;
    return d[d.size() - 3];
}

// The groups G of a Reshape of x to [0 or N, G, -1] (N: x's dim 0); 0 if it is not one.
int64_t group_split(ShapeFacts& f, const std::string& target, const std::string& x) {
    std::vector<SymInt> t;
    if (!f.ints(target, t) || t.size() != 3 || !t[1].known() || t[1].value <= 0 || !t[2].known() || t[2].value != -1)
        return 0;
    const SymInt n = f.dim(x, 0);
    const bool batch = t[0].known() ? t[0].value == 0 || (n.known() && n.value == t[0].value) : t[0].is_dim(x, 0);
    return batch ? t[1].value : 0;
}

// The single SiLU after v (fuse_silu's node, or Swish with alpha 1), or -1.
int silu_after(GraphIndex& g, const std::string& v) {
    int s = g.only_consumer(v, "onnx2ggml.SiLU");
    if (s >= 0) return s;
    s = g.only_consumer(v, "Swish");
    return s >= 0 && g.plan.node(g.m, s).get_float("alpha", 1.f) == 1.f ? s : -1;
}

// The Mul(gamma) -> Add(beta) after v, per-channel constants [C,1,1] or [1,C,1,1]; false if absent.
bool affine_after(GraphIndex& g, const std::string& v, int& mul, int& add, std::string& gamma, std::string& beta,
                  int64_t& C) {
    mul = g.only_consumer(v, "Mul");
    if (mul < 0) return false;
    const Node& mn = g.plan.node(g.m, mul);
    gamma = mn.inputs[0] == v ? mn.inputs[1] : mn.inputs[0];
    add = g.only_consumer(mn.outputs[0], "Add");
    if (add < 0) return false;
    const Node& an = g.plan.node(g.m, add);
    beta = an.inputs[0] == mn.outputs[0] ? an.inputs[1] : an.inputs[0];
    C = channel_param(g.constant(gamma));
    return C > 0 && channel_param(g.constant(beta)) == C;
}

void fuse_decomposed(const Model& m, GraphPlan& plan, GraphIndex& g, ShapeFacts& f, int idx, std::set<int>& removed) {
    const Node& in = plan.node(m, idx);
    if (in.op_type != "InstanceNormalization" || !in.domain.empty() || in.inputs.size() != 3) return;
    std::vector<int> casts;  // an fp16 file's Casts to f32 and back around the normalization: the kernel is f32
    const std::string in_x = g.before_casts(in.inputs[0], casts);
    const Node* r1 = g.producer_of(in_x, "Reshape");
    if (!r1 || g.uses[in_x] != 1 || r1->get_int("allowzero", 0) != 0) return;
    const std::string& x = r1->inputs[0];
    const int64_t G = group_split(f, r1->inputs[1], x);
    if (G <= 0 || !all_equal(g.constant(in.inputs[1]), G, 1.f) || !all_equal(g.constant(in.inputs[2]), G, 0.f)) return;
    std::string in_y = in.outputs[0];
    int r2 = g.consumer_past_casts(in_y, "Reshape", casts);
    if (r2 < 0 || plan.node(m, r2).get_int("allowzero", 0) != 0) return;
    if (!f.is_shape_of(plan.node(m, r2).inputs[1], x, 1)) return;  // a 0 keeps the normalization's dim 0 (N)
    const std::string& y = plan.node(m, r2).outputs[0];
    const int rank = f.rank(x);
    int mul = -1, add = -1;
    int64_t C = 0;
    std::string gamma, beta;
    if (affine_after(g, y, mul, add, gamma, beta, C)) {
        if (C % G || (rank >= 0 && rank != 4)) return;  // [C,1,1] is per channel only at rank 4
    } else {
        if (rank < 3 || rank > 4) return;  // the fused lowering's channel axis is r - 2
        mul = add = -1;
        gamma = in.inputs[1], beta = in.inputs[2];  // per-group ones and zeros
    }
    int last = add >= 0 ? add : r2;
    int silu = silu_after(g, plan.node(m, last).outputs[0]);
    if (silu >= 0) last = silu;

    Node fused;
    fused.op_type = "onnx2ggml.GroupNorm";  // internal op, produced only by this pass
    fused.name = in.name;
    fused.inputs = {x, gamma, beta};
    fused.outputs = plan.node(m, last).outputs;
    fused.attrs = {int_attr("num_groups", G), int_attr("silu", silu >= 0),
                   float_attr("epsilon", in.get_float("epsilon", 1e-5f))};
    for (int dead : {g.producer[in_x], idx, r2, mul, add})
        if (dead >= 0 && dead != last) removed.insert(dead);
    removed.insert(casts.begin(), casts.end());
    plan.rewritten[last] = fused;
}

// GroupNormalization -> SiLU: the activation goes into the normalization kernel.
void fuse_standard(const Model& m, GraphPlan& plan, GraphIndex& g, ShapeFacts& f, int idx, std::set<int>& removed) {
    const Node& gn = plan.node(m, idx);
    if (gn.op_type != "GroupNormalization" || !gn.domain.empty() || gn.inputs.size() != 3 || gn.outputs.size() != 1)
        return;
    const int rank = f.rank(gn.inputs[0]);
    if (rank < 3 || rank > 4 || gn.get_int("stash_type", 1) != 1) return;
    int silu = silu_after(g, gn.outputs[0]);
    if (silu < 0) return;
    Node fused;
    fused.op_type = "onnx2ggml.GroupNorm";
    fused.name = gn.name;
    fused.inputs = gn.inputs;  // per group (opset 18) or per channel (21): the kernel takes either
    fused.outputs = plan.node(m, silu).outputs;
    fused.attrs = {int_attr("num_groups", gn.get_int("num_groups", 1)), int_attr("silu", 1),
                   float_attr("epsilon", gn.get_float("epsilon", 1e-5f))};
    removed.insert(idx);
    plan.rewritten[silu] = fused;
}

}  // namespace

void fuse_group_norm(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    ShapeFacts f(g);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        if (removed.count(idx)) continue;
        fuse_decomposed(m, plan, g, f, idx, removed);
        fuse_standard(m, plan, g, f, idx, removed);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
