// fuse_group_norm: how PyTorch (opset < 18) exports GroupNorm,
//   Reshape(x, [0, G, -1]) -> InstanceNormalization(ones, zeros) -> Reshape(back to Shape(x)) -> Mul(gamma) -> Add(beta)
// optionally followed by SiLU (already fused by fuse_silu), becomes one onnx2ggml.GroupNorm node: one kernel with
// the affine and the activation applied while normalizing, instead of five full passes over the tensor.
#include <map>

#include "passes/match.h"

namespace onnx2ggml {

namespace {

bool all_equal(const TensorData* t, int64_t n, float v) {
    if (!t || t->dtype != DType::FLOAT || t->numel() != n) return false;
    for (int64_t i = 0; i < n; i++) {
        float f;
        std::memcpy(&f, t->data + i * int64_t(sizeof f), sizeof f);  // raw_data may be unaligned
        if (f != v) return false;
    }
    return true;
}

// A per-channel parameter of a rank-4 [N, C, H, W] tensor: shape [C, 1, 1] or [1, C, 1, 1].
int64_t channel_param(const TensorData* t) {
    if (!t || t->dtype != DType::FLOAT) return -1;
    const auto& d = t->dims;
    if (d.size() != 3 && d.size() != 4) return -1;
    if (d.size() == 4 && d[0] != 1) return -1;
    if (d[d.size() - 1] != 1 || d[d.size() - 2] != 1) return -1;
    return d[d.size() - 3];
}

}  // namespace

void fuse_group_norm(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        if (removed.count(idx)) continue;
        const Node& in = plan.node(m, idx);
        if (in.op_type != "InstanceNormalization" || !in.domain.empty() || in.inputs.size() != 3) continue;
        const Node* r1 = g.producer_of(in.inputs[0], "Reshape");
        if (!r1 || g.uses[in.inputs[0]] != 1 || r1->get_int("allowzero", 0) != 0) continue;
        const TensorData* shape = g.constant(r1->inputs[1]);
        if (!shape || shape->dtype != DType::INT64 || shape->numel() != 3) continue;
        int64_t sv[3];
        std::memcpy(sv, shape->data, sizeof sv);  // raw_data may be unaligned
        const int64_t G = sv[1];
        if (sv[0] != 0 || G <= 0 || sv[2] != -1) continue;
        if (!all_equal(g.constant(in.inputs[1]), G, 1.f) || !all_equal(g.constant(in.inputs[2]), G, 0.f)) continue;
        const std::string& x = r1->inputs[0];
        int r2 = g.only_consumer(in.outputs[0], "Reshape");
        if (r2 < 0) continue;
        const Node* shp = g.producer_of(plan.node(m, r2).inputs[1], "Shape");
        if (!shp || shp->inputs[0] != x || shp->has("start") || shp->has("end")) continue;
        int mul = g.only_consumer(plan.node(m, r2).outputs[0], "Mul");
        if (mul < 0) continue;
        const Node& mn = plan.node(m, mul);
        const std::string& gamma = mn.inputs[0] == plan.node(m, r2).outputs[0] ? mn.inputs[1] : mn.inputs[0];
        int add = g.only_consumer(mn.outputs[0], "Add");
        if (add < 0) continue;
        const Node& an = plan.node(m, add);
        const std::string& beta = an.inputs[0] == mn.outputs[0] ? an.inputs[1] : an.inputs[0];
        int64_t C = channel_param(g.constant(gamma));
        if (C <= 0 || C % G || channel_param(g.constant(beta)) != C) continue;
        int last = add;
        int silu = g.only_consumer(an.outputs[0], "onnx2ggml.SiLU");
        if (silu >= 0) last = silu;

        Node fused;
        fused.op_type = "onnx2ggml.GroupNorm";  // internal op, produced only by this pass
        fused.name = in.name;
        fused.inputs = {x, gamma, beta};
        fused.outputs = plan.node(m, last).outputs;
        fused.attrs = {int_attr("num_groups", G), int_attr("silu", silu >= 0),
                       float_attr("epsilon", in.get_float("epsilon", 1e-5f))};
        for (int dead : {g.producer[in.inputs[0]], idx, r2, mul, add})
            if (dead != last) removed.insert(dead);
        plan.rewritten[last] = fused;
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
