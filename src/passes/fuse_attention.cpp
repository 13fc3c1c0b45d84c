// fuse_attention: scaled dot-product attention, however an exporter spells it, becomes one
// onnx2ggml.Attention(Q, K, V, sq, sk[, mask]) node over [B, T, H, D] projections (or [B', T, D] for rank-3 heads):
//   O = MatMul(Cast*(Softmax(S, -1)), Vh),  S = MatMul(Qh, Kt), scaled and masked in any order
// where Qh [B, H, Tq, D] and Vh [B, H, Tk, Dv] (or [B', T, D]) and Kt [B, H, D, Tk] (or [B', D, Tk]) are reached
// through any chain of Transposes (composed: K transposed in one step or two, or as [B·H, ., .] between two
// Reshapes) and scalar Mul/Div (on Q, on K or on the scores, before or after the mask Add). Constant scales
// become the node's `scale`; other Mul operands ride in sq/sk (torch's sqrt(1/sqrt(d)) from the shape). A scale
// after the mask scales the mask too (a new Mul/Div node); a boolean mask through Where(c, S, -inf) becomes the
// additive Where(c, 0, -inf). torch's safe softmax after the Softmax (Where(IsNaN(p), 0, p): fully masked queries
// give 0) becomes the attribute zero_masked_rows.
// Where a composed transpose is not the one the kernel reads, one Transpose node is added; the head transposes
// otherwise become views, the scales move into the softmax, and no score matrix is written on the CPU.
#include <map>

#include "passes/shape_expr.h"

namespace onnx2ggml {

namespace {

struct Scores {
    int product = -1;                   // the Q K^T MatMul
    std::string mask;                   // an additive mask, or a Where's condition
    const Node* after_mask = nullptr;   // the one scale applied after the mask
    const Node* where = nullptr;        // the Where applying a boolean mask; the scores its input where_side
    int where_side = 0;
};

struct Match {
    GraphIndex& u;
    ShapeFacts& f;
    const std::set<int>& removed;
    std::vector<int> dead;
    float scale = 1.f;

    const Node* single(const std::string& v, int& idx, int uses = 1) {
        auto it = u.producer.find(v);
        idx = it == u.producer.end() ? -1 : it->second;
        if (idx < 0 || removed.count(idx) || u.uses[v] != uses) return nullptr;
        const Node& n = u.plan.node(u.m, idx);
        return n.domain.empty() ? &n : nullptr;
    }
    // A constant scalar factor of Mul (c) or Div (1 / c) node n, the other operand in x.
    bool const_factor(const Node& n, std::string& x, float& c) {
        if (n.inputs.size() != 2) return false;
        if (n.op_type == "Div") {
            if (!scalar_constant(u, n.inputs[1], c) || c == 0.f) return false;
            x = n.inputs[0], c = 1.f / c;
            return true;
        }
        if (n.op_type != "Mul") return false;
        for (int side = 0; side < 2; side++)
            if (scalar_constant(u, n.inputs[size_t(side)], c)) {
                x = n.inputs[size_t(1 - side)];
                return true;
            }
        return false;
    }
    // The scores before the softmax: scalar scales and one mask (an Add, or a Where with fill -inf or the float
    // minimum), in any order, down to the Q K^T product.
    bool scores(std::string s_in, Scores& sc) {
        std::vector<const Node*> pending;  // scales met (walking back) before the mask
        for (int hops = 0; hops < 8; hops++) {
            int i;
            const Node* n = single(s_in, i);
            std::string x;
            float c;
            if (!n) return false;
            if (n->op_type == "MatMul") {
                sc.product = i;
                return true;
            }
            if (const_factor(*n, x, c)) {
                if (sc.mask.empty()) pending.push_back(n);
                scale *= c;
                s_in = x;
            } else if (n->op_type == "Add" && sc.mask.empty() && n->inputs.size() == 2 && pending.size() <= 1) {
                int side = -1;
                for (int k = 0; k < 2 && side < 0; k++) {
                    auto p = u.producer.find(n->inputs[size_t(k)]);
                    const std::string op = p == u.producer.end() ? "" : u.plan.node(u.m, p->second).op_type;
                    if (op == "MatMul" || op == "Mul" || op == "Div") side = k;
                }
                if (side < 0) return false;
                s_in = n->inputs[size_t(side)], sc.mask = n->inputs[size_t(1 - side)];
                if (!pending.empty()) sc.after_mask = pending[0];
            } else if (n->op_type == "Where" && sc.mask.empty() && pending.empty() && n->inputs.size() == 3) {
                // Where(c, S, fill): the additive mask Where(c, 0, fill) gives the same probabilities when the fill
                // is -inf or the float minimum (for a finite fill S + fill is not fill)
                // (-65504 in an fp16 file: f16's minimum, as far below any score as -inf)
                DType t;
                for (int k = 1; k <= 2 && !sc.where; k++)
                    if (scalar_constant(u, n->inputs[size_t(k)], c, &t) &&
                        c <= (t == DType::FLOAT16 ? -65504.f : -1e30f))
                        sc.where = n, sc.where_side = 3 - k, sc.mask = n->inputs[0];
                if (!sc.where) return false;
                s_in = n->inputs[size_t(sc.where_side)];
            } else if (!u.float_cast(i)) {  // an fp16 file's Cast to f32 before a Softmax kept in f32: read past
                return false;
            } else {
                s_in = n->inputs[0];
            }
            dead.push_back(i);
        }
        return false;
    }
    // torch's safe softmax (SDPA with a boolean mask, torch >= 2.5): Where(IsNaN(p), 0, p), so that a query whose
    // keys are all masked gives 0 rather than NaN. p becomes the Softmax output, which these two nodes read.
    bool safe_softmax(std::string& p) {
        int wi, ni;
        const Node* w = single(p, wi);
        float zero;
        if (!w || w->op_type != "Where" || w->inputs.size() != 3 || !scalar_constant(u, w->inputs[1], zero) ||
            zero != 0.f)
            return false;
        const Node* isnan = single(w->inputs[0], ni);
        if (!isnan || isnan->op_type != "IsNaN" || isnan->inputs[0] != w->inputs[2]) return false;
        dead.push_back(wi);
        dead.push_back(ni);
        p = w->inputs[2];
        return true;
    }
    // Casts of the probabilities p between float types (the fp16 converter writes Cast(to f16) twice there): the
    // kernel keeps them in f32, nearer the computation than the f16 rounding onnxruntime does. p becomes the
    // Softmax output; to_float: the cast nearest the product (which sets its type) is to f32. False at another Cast.
    bool prob_casts(std::string& p, bool& to_float) {
        bool first = true;
        for (int c; (c = u.sole(p, "Cast")) >= 0 && !removed.count(c); p = u.plan.node(u.m, c).inputs[0]) {
            const int64_t to = u.plan.node(u.m, c).get_int("to", 0);
            if (!float_dtype(DType(int32_t(to)))) return false;
            if (first) to_float = to == int64_t(DType::FLOAT);
            first = false;
            dead.push_back(c);
        }
        return true;
    }
    // Walks from v back through Transposes and scalar scales. wanted = transpose(v, r) is what the kernel reads;
    // on return v is the source and r the perm from it. A non-constant Mul operand (rank <= 1) goes to `side`.
    // Nodes with other readers stay (as does every node before them), and the kernel reads past them.
    void unwind(std::string& v, std::vector<int64_t>& r, std::string* side) {
        bool chain_dead = true;
        for (int hops = 0; hops < 16; hops++) {
            auto p = u.producer.find(v);
            if (p == u.producer.end() || removed.count(p->second)) return;
            const Node& n = u.plan.node(u.m, p->second);
            if (!n.domain.empty()) return;
            chain_dead = chain_dead && u.uses[v] == 1;
            std::string x;
            float c;
            if (n.op_type == "Transpose") {
                std::vector<int64_t> perm = n.get_ints("perm");
                if (perm.size() != r.size()) return;
                std::vector<int64_t> comp(r.size());
                for (size_t i = 0; i < r.size(); i++) comp[i] = perm[size_t(r[i])];
                r = comp;
                x = n.inputs[0];
            } else if (const_factor(n, x, c)) {
                scale *= c;
            } else if (n.op_type == "Reshape" && r.size() == 4) {
                std::vector<int64_t> perm;
                std::vector<std::pair<int, std::string>> chain;
                if (!head_merge_view(v, x, perm, chain)) return;
                std::vector<int64_t> comp(4);
                for (size_t i = 0; i < 4; i++) comp[i] = perm[size_t(r[i])];
                r = comp;
                for (const auto& [idx, out] : chain)
                    if ((chain_dead = chain_dead && u.uses[out] == 1)) dead.push_back(idx);
            } else if (side && side->empty() && n.op_type == "Mul" && n.inputs.size() == 2) {
                int s = -1;
                for (int i = 0; i < 2 && s < 0; i++) {
                    const int rk = f.rank(n.inputs[size_t(i)]);
                    if (rk >= 0 && rk <= 1 && f.rank(n.inputs[size_t(1 - i)]) == int(r.size())) s = i;
                }
                if (s < 0) return;
                *side = n.inputs[size_t(s)];
                x = n.inputs[size_t(1 - s)];
            } else {
                return;
            }
            if (chain_dead) dead.push_back(p->second);
            v = x;
        }
    }
    // v = Reshape(y, [a, b, c', d']) with y = Reshape(src, [-1, c, d]) (src's two head dims merged) through
    // rank-3 Transposes that keep the merged dim first: how torch's dynamo exporter at opset 18 transposes K. Then
    // v is the view transpose(src, p4) if the two targets say so; chain: the nodes after src, with their outputs.
    bool head_merge_view(const std::string& v, std::string& src, std::vector<int64_t>& p4,
                         std::vector<std::pair<int, std::string>>& chain) {
        const Node& split = u.plan.node(u.m, u.producer.at(v));
        if (split.inputs.size() != 2 || f.rank(split.inputs[0]) != 3) return false;
        std::vector<int64_t> net{0, 1, 2};
        std::string y = split.inputs[0];
        for (int hops = 0; hops < 4; hops++) {
            auto p = u.producer.find(y);
            if (p == u.producer.end() || removed.count(p->second)) return false;
            const Node& n = u.plan.node(u.m, p->second);
            if (!n.domain.empty()) return false;
            chain.push_back({p->second, y});
            if (n.op_type == "Transpose") {
                const std::vector<int64_t> perm = n.get_ints("perm");
                if (perm.size() != 3) return false;
                for (int64_t& a : net) a = perm[size_t(a)];
                y = n.inputs[0];
                continue;
            }
            if (n.op_type != "Reshape" || n.inputs.size() != 2 || f.rank(n.inputs[0]) != 4 || net[0] != 0)
                return false;
            src = n.inputs[0];
            p4 = {0, 1, net[1] + 1, net[2] + 1};
            std::vector<SymInt> merged, back;
            if (!f.ints(n.inputs[1], merged) || !f.ints(split.inputs[1], back) || merged.size() != 3 ||
                back.size() != 4)
                return false;
            auto minus1 = [](const SymInt& s) { return s.known() && s.value == -1; };
            const bool a = same_dim(back[0], src, 0), b = same_dim(back[1], src, 1);
            return minus1(merged[0]) && same_dim(merged[1], src, 2) && same_dim(merged[2], src, 3) &&
                   ((a && b) || (a && minus1(back[1])) || (minus1(back[0]) && b)) &&
                   same_dim(back[2], src, int(p4[2])) && same_dim(back[3], src, int(p4[3]));
        }
        return false;
    }
    // Whether shape entry t is dimension `axis` of src, both read back through Transposes.
    bool same_dim(SymInt t, const std::string& src, int axis) {
        SymInt d = through_transposes(f.dim(src, axis));
        t = through_transposes(t);
        if (t.known() || d.known()) return t.known() && d.known() && t.value == d.value;
        return t.of != "?" && t.of == d.of && t.axis == d.axis;
    }
    SymInt through_transposes(SymInt s) {  // dim a of Transpose(x, p) is dim p[a] of x
        for (int hops = 0; hops < 8 && !s.known() && s.of != "?"; hops++) {
            auto p = u.producer.find(s.of);
            if (p == u.producer.end()) break;
            const Node& n = u.plan.node(u.m, p->second);
            const std::vector<int64_t> perm = n.op_type == "Transpose" ? n.get_ints("perm") : std::vector<int64_t>{};
            if (!n.domain.empty() || s.axis < 0 || s.axis >= int(perm.size())) break;
            s = f.dim(n.inputs[0], int(perm[size_t(s.axis)]));
        }
        return s;
    }
};

// The additive mask the kernel reads: a boolean one made additive (Where(c, 0, fill)), and a scale applied
// after the mask applied to it as well (softmax(c (S + M)) = softmax(c S + c M)); new nodes go to `added`.
std::string mask_nodes(Match& mt, const Scores& sc, const std::string& out, std::vector<Node>& added) {
    std::string mask = sc.mask;
    if (sc.where) {
        static const float kZero = 0.f;  // all-zero bits: 0 in f32, f16 and bf16 alike
        const TensorData* fill = mt.u.constant(sc.where->inputs[size_t(3 - sc.where_side)]);
        const DType type = fill ? fill->dtype : DType::FLOAT;  // Where's branches share the fill's type
        Node zero;
        zero.op_type = "Constant";
        zero.name = sc.where->name + "/zero";
        zero.outputs = {out + "#zero"};
        Attribute v;
        v.name = "value";
        v.type = AttrType::TENSOR;
        v.t = std::make_shared<TensorData>();
        v.t->name = zero.outputs[0];
        v.t->dtype = type;
        v.t->data = reinterpret_cast<const uint8_t*>(&kZero);
        v.t->nbytes = type == DType::FLOAT ? sizeof kZero : 2;
        zero.attrs = {v};
        Node w = *sc.where;
        w.name += "/mask";
        w.outputs = {out + "#mask"};
        w.inputs[size_t(sc.where_side)] = zero.outputs[0];
        added.push_back(zero);
        added.push_back(w);
        mask = w.outputs[0];
    }
    if (sc.after_mask) {
        std::string x;
        float c;
        mt.const_factor(*sc.after_mask, x, c);
        Node t;
        t.op_type = sc.after_mask->op_type;
        t.name = sc.after_mask->name + "/mask";
        t.inputs = {mask, sc.after_mask->inputs[0] == x ? sc.after_mask->inputs[1] : sc.after_mask->inputs[0]};
        t.outputs = {out + "#mask_scaled"};
        added.push_back(t);
        mask = t.outputs[0];
    }
    return mask;
}

bool identity(const std::vector<int64_t>& p) {
    for (size_t i = 0; i < p.size(); i++)
        if (p[i] != int64_t(i)) return false;
    return true;
}

Attribute ints_attr(const std::string& name, const std::vector<int64_t>& v) {
    Attribute a;
    a.type = AttrType::INTS;
    a.name = name;
    a.ints = v;
    return a;
}

// The fused node in place of node idx (named `name`, with idx's outputs): q, k, v read through the composed
// perms (a Transpose node added where one is not the identity), the mask given, mt's scale and the attributes.
struct Heads {
    std::string q, k, v, sq, sk;
    std::vector<int64_t> rq, rk, rv;
};
void emit_fused(Match& mt, int idx, const std::string& name, Heads h, const std::string& mask,
                std::vector<Attribute> attrs, std::vector<Node>& added, std::set<int>& removed) {
    const Node& o = mt.u.plan.node(mt.u.m, idx);
    auto view = [&](std::string& x, const std::vector<int64_t>& perm, const char* tag) {
        if (identity(perm)) return;
        Node t;
        t.op_type = "Transpose";
        t.name = name + "/" + tag;
        t.inputs = {x};
        t.outputs = {o.outputs[0] + "#" + tag};
        t.attrs = {ints_attr("perm", perm)};
        added.push_back(t);
        x = t.outputs[0];
    };
    view(h.q, h.rq, "q");
    view(h.k, h.rk, "k");
    view(h.v, h.rv, "v");
    Node fused;
    fused.op_type = "onnx2ggml.Attention";  // internal op, produced only by this pass
    fused.name = name;
    fused.inputs = {h.q, h.k, h.v, h.sq, h.sk};
    if (!mask.empty()) fused.inputs.push_back(mask);
    fused.attrs = std::move(attrs);
    if (mt.scale != 1.f) fused.attrs.push_back(float_attr("scale", mt.scale));
    fused.outputs = o.outputs;
    for (int dead : mt.dead) removed.insert(dead);
    mt.u.plan.rewritten[idx] = fused;
}

// Walks back from the three heads (each the kernel's [B, T, H, D] through its perm); false when a scale sits on V
// or a source is not of rank r. sides: non-constant scales of Q and K may ride in sq/sk.
bool unwind_heads(Match& mt, Heads& h, int r, bool sides = true) {
    mt.unwind(h.q, h.rq, sides ? &h.sq : nullptr);
    mt.unwind(h.k, h.rk, sides ? &h.sk : nullptr);
    const float score_scale = mt.scale;
    mt.unwind(h.v, h.rv, nullptr);
    if (mt.scale != score_scale) return false;  // a scale on V is not the kernel's
    for (const std::string* x : {&h.q, &h.k, &h.v})
        if (mt.f.rank(*x) != r) return false;
    return true;
}

// MatMul(Softmax(scaled, masked Q K^T), V), found from its last MatMul o at idx.
void fuse_product(Match& mt, int idx, std::map<int, std::vector<Node>>& added, std::set<int>& removed) {
    const Model& m = mt.u.m;
    const Node& o = mt.u.plan.node(m, idx);
    std::string p_in = o.inputs[0];
    bool to_float = false, zero_rows = mt.safe_softmax(p_in), ok = zero_rows || mt.prob_casts(p_in, to_float);
    int sm_i;
    const Node* sm = ok ? mt.single(p_in, sm_i, zero_rows ? 2 : 1) : nullptr;
    if (!sm || sm->op_type != "Softmax") return;
    mt.dead.push_back(sm_i);
    Scores sc;
    if (!mt.scores(sm->inputs[0], sc)) return;
    const Node& s = mt.u.plan.node(m, sc.product);
    // The product's rank; a mask must not broadcast the scores to a higher one (unknown: only up to 4, the
    // kernel's own limit, which it checks).
    const int r = mt.f.rank(s.outputs[0]), mask_rank = sc.mask.empty() ? 0 : mt.f.rank(sc.mask);
    if ((r != 3 && r != 4) || mask_rank > r || (mask_rank < 0 && r != 4)) return;
    const int64_t axis = sm->get_int("axis", m.opset("") >= 13 ? -1 : 1);
    if (axis != -1 && axis != r - 1) return;
    mt.dead.push_back(sc.product);
    Heads h{s.inputs[0], s.inputs[1], o.inputs[1], "", "", {0, 2, 1, 3}, {0, 3, 1, 2}, {0, 2, 1, 3}};
    if (r == 3) h.rq = h.rv = {0, 1, 2}, h.rk = {0, 2, 1};
    if (!unwind_heads(mt, h, r)) return;
    std::vector<Node>& add = added[idx];
    const std::string mask = sc.mask.empty() ? "" : mask_nodes(mt, sc, o.outputs[0], add);
    std::vector<Attribute> attrs;
    if (to_float) attrs.push_back(int_attr("to_float", 1));
    if (zero_rows) attrs.push_back(int_attr("zero_masked_rows", 1));
    emit_fused(mt, idx, s.name, h, mask, attrs, add, removed);
}

// Attention-23/24 in its plain form ([B, H, T, D] heads; no mask, cache, causal mask or softcap): the same kernel,
// its heads read through the exporter's Transposes (torch's dynamo exporter at opset 23 writes SDPA this way) rather
// than copied. Without `scale` the op's default 1/sqrt(D) applies (attribute default_scale). A masked one keeps
// lower_Attention, which reads a boolean mask as well.
void fuse_attention_op(Match& mt, int idx, std::map<int, std::vector<Node>>& added, std::set<int>& removed) {
    const Node& a = mt.u.plan.node(mt.u.m, idx);
    if (a.inputs.size() < 3 || a.outputs.empty()) return;  // malformed: the op table's check names it later
    for (size_t i = 1; i < a.outputs.size(); i++)
        if (!a.outputs[i].empty() && mt.u.uses[a.outputs[i]]) return;
    for (size_t i = 3; i < a.inputs.size(); i++)
        if (!a.inputs[i].empty()) return;
    if (a.get_int("is_causal", 0) || a.get_float("softcap", 0.f) != 0.f || a.get_int("qk_matmul_output_mode", 0) ||
        a.has("q_num_heads") || a.has("kv_num_heads") || mt.f.rank(a.inputs[0]) != 4)
        return;
    std::vector<Attribute> attrs{int_attr("grouped_ok", 1)};  // fewer K/V heads than Q's: o2g::attention_grouped
    if (a.has("scale")) mt.scale = a.get_float("scale", 1.f);
    else attrs.push_back(int_attr("default_scale", 1));
    Heads h{a.inputs[0], a.inputs[1], a.inputs[2], "", "", {0, 2, 1, 3}, {0, 2, 1, 3}, {0, 2, 1, 3}};
    if (!unwind_heads(mt, h, 4, false)) return;
    emit_fused(mt, idx, a.name, h, "", attrs, added[idx], removed);
}

}  // namespace

void fuse_attention(const Model& m, GraphPlan& plan) {
    GraphIndex u(m, plan);
    ShapeFacts f(u);
    std::set<int> removed;
    std::map<int, std::vector<Node>> added;  // nodes to insert before the fused node at this index
    for (int idx : plan.live_nodes) {
        const Node& o = plan.node(m, idx);
        if (!o.domain.empty() || removed.count(idx)) continue;
        Match mt{u, f, removed, {}, 1.f};
        if (o.op_type == "MatMul" && o.inputs.size() == 2) fuse_product(mt, idx, added, removed);
        else if (o.op_type == "Attention" && o.inputs.size() >= 3) fuse_attention_op(mt, idx, added, removed);
    }
    plan.drop(removed);
    if (added.empty()) return;
    int next = int(m.graph.nodes.size());
    if (!plan.rewritten.empty()) next = std::max(next, plan.rewritten.rbegin()->first + 1);
    std::vector<int> live;
    for (int idx : plan.live_nodes) {
        for (Node& n : added[idx]) {
            plan.rewritten[next] = n;
            live.push_back(next++);
        }
        live.push_back(idx);
    }
    plan.live_nodes = live;
}

}  // namespace onnx2ggml
