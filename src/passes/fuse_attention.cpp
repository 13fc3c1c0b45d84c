// fuse_attention: scaled dot-product attention as PyTorch exports it (heads split by Reshape + Transpose),
//   S = MatMul(Transpose(Q,[0,2,1,3]) [* sq], Transpose(K,[0,2,3,1]) [* sk]);  P = Softmax(S, -1);
//   O = MatMul(P, Transpose(V,[0,2,1,3]))
// becomes one onnx2ggml.Attention(Q, K, V, sq, sk[, mask]) node over the un-transposed [B, T, H, D] projections:
// the head transposes become views, the scales move into ggml_soft_max_ext, and K is copied once instead of twice.
// CLIP's form is matched too: a scalar Mul after the first MatMul (a scale), an Add before the Softmax (the
// causal mask), and Casts to float of the probabilities.
#include <map>

#include "passes/match.h"

namespace onnx2ggml {

void fuse_attention(const Model& m, GraphPlan& plan) {
    GraphIndex u(m, plan);
    std::set<int> removed;
    // Uses of each value by Shape/Size nodes, which read only its shape: the producer may stay for them (its
    // ggml tensor is then never computed, since nothing reads its data).
    std::map<std::string, int> shape_uses;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(m, idx);
        if ((n.op_type == "Shape" || n.op_type == "Size") && n.domain.empty() && !n.inputs.empty()) shape_uses[n.inputs[0]]++;
    }
    auto transposed = [&](const std::string& v, std::vector<int64_t> perm, int& idx) -> const Node* {
        auto it = u.producer.find(v);
        idx = -1;
        if (it == u.producer.end() || removed.count(it->second)) return nullptr;
        const Node& t = plan.node(m, it->second);
        if (t.op_type != "Transpose" || !t.domain.empty() || t.get_ints("perm") != perm) return nullptr;
        int others = u.uses[v] - shape_uses[v];
        if (others != 1) return nullptr;
        if (shape_uses[v] == 0) idx = it->second;  // removable
        return &t;
    };
    for (int idx : plan.live_nodes) {
        const Node& o = plan.node(m, idx);
        if (o.op_type != "MatMul" || !o.domain.empty() || o.inputs.size() != 2 || removed.count(idx)) continue;
        std::string p_in = o.inputs[0];
        std::vector<int> casts;  // Cast(to=FLOAT) of the probabilities
        bool cast_ok = true;
        for (int c; (c = u.sole(p_in, "Cast")) >= 0; p_in = plan.node(m, c).inputs[0]) {
            cast_ok = plan.node(m, c).get_int("to", 0) == 1;
            if (!cast_ok) break;
            casts.push_back(c);
        }
        int sm_i = cast_ok ? u.sole(p_in, "Softmax") : -1;
        if (sm_i < 0) continue;
        const Node& sm = plan.node(m, sm_i);
        int64_t axis = sm.get_int("axis", m.opset("") >= 13 ? -1 : 1);
        if (axis != -1 && axis != 3) continue;  // rank 4 is checked below through the transposes
        std::string s_in = sm.inputs[0], mask, post;
        // Add(scores, mask), either side
        int add_i = u.sole(s_in, "Add");
        if (add_i >= 0) {
            const Node& a = plan.node(m, add_i);
            for (int side = 0; side < 2 && mask.empty(); side++) {
                auto p = u.producer.find(a.inputs[size_t(side)]);
                const std::string& op = p == u.producer.end() ? std::string() : plan.node(m, p->second).op_type;
                if (op == "MatMul" || op == "Mul") {
                    s_in = a.inputs[size_t(side)];
                    mask = a.inputs[size_t(1 - side)];
                }
            }
            if (mask.empty()) continue;
        }
        // Mul(scores, scalar constant)
        int post_i = u.sole(s_in, "Mul");
        if (post_i >= 0) {
            const Node& pm = plan.node(m, post_i);
            float c;
            for (int side = 0; side < 2 && post.empty(); side++)
                if (scalar_constant(u, pm.inputs[size_t(1 - side)], c) && u.producer_of(pm.inputs[size_t(side)], "MatMul")) {
                    s_in = pm.inputs[size_t(side)];
                    post = pm.inputs[size_t(1 - side)];
                }
            if (post.empty()) continue;
        }
        int s_i = u.sole(s_in, "MatMul");
        if (s_i < 0) continue;
        const Node& s = plan.node(m, s_i);
        // Optional scalar scale on each side: Mul(Transpose(..), scale).
        std::string q_in = s.inputs[0], k_in = s.inputs[1], sq, sk;
        int mq = -1, mk = -1;
        auto unscale = [&](std::string& v, std::string& scale, int& mul) {
            int i = u.sole(v, "Mul");
            if (i < 0) return;
            const Node& n = plan.node(m, i);
            for (int side = 0; side < 2; side++) {
                auto p = u.producer.find(n.inputs[size_t(side)]);
                if (p != u.producer.end() && plan.node(m, p->second).op_type == "Transpose") {
                    v = n.inputs[size_t(side)];
                    scale = n.inputs[size_t(1 - side)];
                    mul = i;
                    return;
                }
            }
        };
        unscale(q_in, sq, mq);
        unscale(k_in, sk, mk);
        int tq, tk, tv;
        const Node* nq = transposed(q_in, {0, 2, 1, 3}, tq);
        const Node* nk = transposed(k_in, {0, 2, 3, 1}, tk);
        const Node* nv = transposed(o.inputs[1], {0, 2, 1, 3}, tv);
        if (!nq || !nk || !nv) continue;
        if (!post.empty()) {  // (c Q) K^T: the scale goes to a side without one
            if (sq.empty()) sq = post;
            else if (sk.empty()) sk = post;
            else continue;
        }
        Node fused;
        fused.op_type = "onnx2ggml.Attention";  // internal op, produced only by this pass
        fused.name = s.name;
        fused.inputs = {nq->inputs[0], nk->inputs[0], nv->inputs[0], sq, sk};
        if (!mask.empty()) fused.inputs.push_back(mask);
        if (!casts.empty()) fused.attrs.push_back(int_attr("to_float", 1));
        fused.outputs = o.outputs;
        for (int dead : {tq, tk, tv, s_i, sm_i, mq, mk, add_i, post_i})
            if (dead >= 0) removed.insert(dead);
        for (int dead : casts) removed.insert(dead);
        plan.rewritten[idx] = fused;
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
