// ShapeFacts: ranks and symbolic shape vectors for fusion passes (see shape_expr.h).
#include "passes/shape_expr.h"

#include <set>

namespace onnx2ggml {

namespace {

// Ops whose output 0 has the rank of input 0.
const std::set<std::string>& same_rank_ops() {
    static const std::set<std::string> s = {
        "Abs", "AveragePool", "BatchNormalization", "Cast", "Ceil", "Clip", "Conv", "ConvTranspose", "Cos",
        "CumSum", "Dropout", "Elu", "Erf", "Exp", "Floor", "Gelu", "GroupNormalization", "HardSigmoid", "HardSwish",
        "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Log", "LogSoftmax", "LpNormalization",
        "MaxPool", "Mish", "Neg", "Pad", "PRelu", "Reciprocal", "Relu", "Resize", "RMSNormalization", "Round",
        "Not", "IsNaN", "IsInf", "Sign", "Selu", "Sigmoid", "Sin", "Slice", "Softmax", "Tile", "Trilu", "Softplus", "Softsign", "Sqrt", "Swish", "Tanh", "Upsample",
        "onnx2ggml.SiLU", "onnx2ggml.Swish", "onnx2ggml.Gelu", "onnx2ggml.GroupNorm", "onnx2ggml.ConvClamp",
        "onnx2ggml.LayerNorm", "onnx2ggml.RMSNorm"};
    return s;
}

// Elementwise ops with broadcasting: the output has the largest input rank.
const std::set<std::string>& broadcast_ops() {
    static const std::set<std::string> s = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Where", "Mod",
                                            "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                            "Xor", "Sum", "Mean", "BitShift"};
    return s;
}

bool read_ints(const TensorData* t, std::vector<int64_t>& out) {
    if (!t || (t->dtype != DType::INT64 && t->dtype != DType::INT32) || t->dims.size() > 1) return false;
    out.resize(size_t(t->numel()));
    for (size_t i = 0; i < out.size(); i++) {
        if (t->dtype == DType::INT64) {
            std::memcpy(&out[i], t->data + i * 8, 8);  // raw_data may be unaligned
        } else {
            int32_t v;
            std::memcpy(&v, t->data + i * 4, 4);
            out[i] = v;
        }
    }
    return true;
}

}  // namespace

ShapeFacts::ShapeFacts(GraphIndex& g) : g(g) {
    for (int idx : g.plan.live_nodes)
        for (const std::string& o : g.plan.node(g.m, idx).outputs)
            if (!o.empty()) rank(o);
}

const ValueInfo* ShapeFacts::declared(const std::string& v) const {
    for (auto* list : {&g.m.graph.inputs, &g.m.graph.value_info, &g.m.graph.outputs})
        for (const ValueInfo& vi : *list)
            if (vi.name == v && vi.has_shape) return &vi;
    return nullptr;
}

int ShapeFacts::rank(const std::string& v) {
    auto it = rank_memo.find(v);
    if (it != rank_memo.end()) return it->second;
    if (depth > 200) return -1;  // a deep chain: give up rather than recurse further
    depth++;
    int r = rank_uncached(v);
    depth--;
    rank_memo[v] = r;
    return r;
}

int ShapeFacts::rank_uncached(const std::string& v) {
    if (const TensorData* t = g.initializer(v)) return int(t->dims.size());
    if (const ValueInfo* vi = declared(v)) return int(vi->dims.size());
    auto p = g.producer.find(v);
    if (p == g.producer.end()) return -1;
    const Node& n = g.plan.node(g.m, p->second);
    if (!n.domain.empty() || n.outputs.empty() || n.outputs[0] != v) return -1;
    const std::string& op = n.op_type;
    if (op == "Constant") {
        const TensorData* t = g.constant(v);
        return t ? int(t->dims.size()) : -1;
    }
    if (n.inputs.empty()) return -1;
    if (same_rank_ops().count(op) || op == "Transpose" || op == "Concat") return rank(n.inputs[0]);
    if (broadcast_ops().count(op) || op == "MatMul") {
        int r = 0;
        for (const std::string& i : n.inputs) {
            int ri = i.empty() ? 0 : rank(i);
            if (ri < 0) return -1;
            r = std::max(r, ri);
        }
        return r;
    }
    if (op == "Reshape" && n.inputs.size() == 2) {
        std::vector<SymInt> t;
        return ints(n.inputs[1], t) ? int(t.size()) : -1;
    }
    if (op == "Shape" || op == "Range" || op == "NonZero") return op == "NonZero" ? 2 : 1;
    if (op == "Size") return 0;
    if (op == "ConstantOfShape" || op == "Expand") {
        std::vector<SymInt> t;
        if (!ints(n.inputs.back(), t)) return -1;
        if (op == "ConstantOfShape") return int(t.size());
        const int ri = rank(n.inputs[0]);
        return ri < 0 ? -1 : std::max(ri, int(t.size()));
    }
    if (op == "Gather" && n.inputs.size() == 2) {
        const int rd = rank(n.inputs[0]), ri = rank(n.inputs[1]);
        return rd >= 1 && ri >= 0 ? rd - 1 + ri : -1;
    }
    if ((op == "Unsqueeze" || op == "Squeeze") && n.inputs.size() == 2) {
        std::vector<int64_t> axes;
        const int ri = rank(n.inputs[0]);
        if (ri < 0 || !read_ints(g.constant(n.inputs[1]), axes)) return -1;
        return op == "Unsqueeze" ? ri + int(axes.size()) : ri - int(axes.size());
    }
    return -1;
}

SymInt ShapeFacts::dim(const std::string& v, int axis) {
    SymInt s;
    const ValueInfo* vi = declared(v);
    if (vi && axis >= 0 && axis < int(vi->dims.size()) && vi->dims[size_t(axis)].known()) {
        s.value = vi->dims[size_t(axis)].value;
        return s;
    }
    s.of = v;
    s.axis = axis;
    return s;
}

namespace {

// Elementwise Mul/Add/Sub/Div of two symbolic int lists (one may broadcast); a result only the run knows is "?".
bool arith_ints(const std::string& op, const std::vector<SymInt>& a, const std::vector<SymInt>& b,
                std::vector<SymInt>& out) {
    if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return false;
    for (size_t i = 0; i < std::max(a.size(), b.size()); i++) {
        const SymInt &x = a[a.size() == 1 ? 0 : i], &y = b[b.size() == 1 ? 0 : i];
        SymInt e{0, "?", -1};
        if (x.known() && y.known() && (op != "Div" || (y.value > 0 && x.value >= 0))) {
            e.of.clear();
            e.value = op == "Mul" ? x.value * y.value : op == "Add" ? x.value + y.value
                      : op == "Sub" ? x.value - y.value : x.value / y.value;
        }
        out.push_back(e);
    }
    return true;
}

}  // namespace

bool ShapeFacts::ints(const std::string& v, std::vector<SymInt>& out) {
    out.clear();
    if (depth > 200) return false;
    std::vector<int64_t> c;
    if (read_ints(g.constant(v), c)) {
        for (int64_t e : c) out.push_back(SymInt{e, "", -1});
        return true;
    }
    auto p = g.producer.find(v);
    if (p == g.producer.end()) return false;
    const Node& n = g.plan.node(g.m, p->second);
    if (!n.domain.empty() || n.inputs.empty()) return false;
    const std::string& op = n.op_type;
    struct Depth {
        int& d;
        explicit Depth(int& d) : d(d) { d++; }
        ~Depth() { d--; }
    } guard(depth);
    if (op == "Shape") {
        const int r = rank(n.inputs[0]);
        if (r < 0) return false;
        int64_t start = n.get_int("start", 0), end = n.get_int("end", r);
        if (start < 0) start += r;
        if (end < 0) end += r;
        start = std::max<int64_t>(0, std::min<int64_t>(start, r));
        end = std::max<int64_t>(start, std::min<int64_t>(end, r));
        for (int64_t a = start; a < end; a++) out.push_back(dim(n.inputs[0], int(a)));
        return true;
    }
    if (op == "Identity" || op == "Unsqueeze" || op == "Squeeze" || op == "Reshape" ||
        (op == "Cast" && (n.get_int("to", 0) == int64_t(DType::INT64) || n.get_int("to", 0) == int64_t(DType::INT32))))
        return ints(n.inputs[0], out);  // element lists are flat: a scalar and a 1-element vector read alike
    if (op == "Concat") {
        for (const std::string& i : n.inputs) {
            std::vector<SymInt> part;
            if (!ints(i, part)) return false;
            out.insert(out.end(), part.begin(), part.end());
        }
        return true;
    }
    if ((op == "Mul" || op == "Add" || op == "Sub" || op == "Div") && n.inputs.size() == 2) {
        std::vector<SymInt> a, b;
        return ints(n.inputs[0], a) && ints(n.inputs[1], b) && arith_ints(op, a, b, out);
    }
    if (op == "Gather" && n.inputs.size() == 2 && n.get_int("axis", 0) == 0) {
        std::vector<SymInt> data;
        std::vector<int64_t> idx;
        if (!read_ints(g.constant(n.inputs[1]), idx)) return false;
        if (!ints(n.inputs[0], data)) {  // elements unknown, their count is not (a Reshape's rank needs only that)
            out.assign(idx.size(), SymInt{0, "?", -1});
            return true;
        }
        for (int64_t i : idx) {
            if (i < 0) i += int64_t(data.size());
            if (i < 0 || i >= int64_t(data.size())) return false;
            out.push_back(data[size_t(i)]);
        }
        return true;
    }
    if (op == "Slice" && n.inputs.size() >= 3) {
        std::vector<SymInt> data;
        std::vector<int64_t> st, en, ax{0}, sp{1};
        if (!ints(n.inputs[0], data) || !read_ints(g.constant(n.inputs[1]), st) ||
            !read_ints(g.constant(n.inputs[2]), en))
            return false;
        if (n.inputs.size() > 3 && !n.inputs[3].empty() && !read_ints(g.constant(n.inputs[3]), ax)) return false;
        if (n.inputs.size() > 4 && !n.inputs[4].empty() && !read_ints(g.constant(n.inputs[4]), sp)) return false;
        if (st.size() != 1 || en.size() != 1 || ax.size() != 1 || (ax[0] != 0 && ax[0] != -1) || sp.size() != 1 ||
            sp[0] != 1)
            return false;
        const int64_t len = int64_t(data.size());
        int64_t s = st[0] < 0 ? st[0] + len : st[0], e = en[0] < 0 ? en[0] + len : en[0];
        s = std::max<int64_t>(0, std::min(s, len));
        e = std::max(s, std::min(e, len));
        out.assign(data.begin() + s, data.begin() + e);
        return true;
    }
    return false;
}

bool ShapeFacts::is_shape_of(const std::string& target, const std::string& x, int zero_ok) {
    // The exporters' own form, Shape(x) itself: equal whatever x's rank.
    if (const Node* s = g.producer_of(target, "Shape"))
        if (s->inputs[0] == x && !s->has("start") && !s->has("end")) return true;
    std::vector<SymInt> t;
    if (!ints(target, t) || int(t.size()) != rank(x)) return false;
    int minus_one = 0;
    for (int a = 0; a < int(t.size()); a++) {
        const SymInt& e = t[size_t(a)];
        SymInt want = dim(x, a);
        if (e.known() && e.value == 0 && a < zero_ok) continue;
        if (e.known() && e.value == -1 && ++minus_one == 1) continue;  // the one left over is x's, by element count
        if (e.known() ? want.known() && want.value == e.value : e.is_dim(x, a)) continue;
        return false;
    }
    return true;
}

}  // namespace onnx2ggml
