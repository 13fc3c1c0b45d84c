// fold_conv_affine: a Conv or ConvTranspose with constant weights, followed by any chain of per-output-channel
// affine steps with constant parameters (inference BatchNormalization; Mul or Div by, Add or Sub of, a scalar or
// a [M, 1, ...] constant), becomes one convolution with scaled weights and a shifted bias, computed once when the
// model is planned. The parameters may be initializers or Constant nodes (paddle2onnx and tf2onnx write those),
// f32 or an fp16 converter's f16/bf16 (the folded weight keeps the type the conv reads).
#include <cmath>
#include <cstring>

#include "passes/match.h"

namespace onnx2ggml {

namespace {

// A float constant's values (f32, or an fp16 converter's f16/bf16), widened exactly.
std::vector<double> doubles(const TensorData& t) {
    HostTensor h;
    h.dtype = t.dtype;
    h.shape = t.dims;
    h.data = t.data;
    h.nbytes = t.nbytes;
    return t.numel() ? h.to_f64() : std::vector<double>{};
}

// A new initializer of element type `type`, each value rounded once from double.
std::shared_ptr<TensorData> make(const std::string& name, const std::vector<int64_t>& dims, DType type,
                                 const std::vector<double>& v) {
    HostTensor h = HostTensor::from_f64(type, dims, v);
    auto t = std::make_shared<TensorData>();
    t->name = name;
    t->dtype = type;
    t->dims = dims;
    t->data = h.data;
    t->nbytes = h.nbytes;
    t->keep = h.keep;
    return t;
}

const TensorData* loaded_float_constant(GraphIndex& g, const std::string& v) {
    const TensorData* t = v.empty() ? nullptr : g.constant(v);
    return t && float_dtype(t->dtype) && (t->data || !t->numel()) ? t : nullptr;
}

// The element type the conv reads its weight as: the constant's own, or f32 where an fp16 file widens it by a Cast.
DType seen_type(GraphIndex& g, const std::string& v, const TensorData& t) {
    return g.producer_of(g.through_identity(v), "Cast") ? DType::FLOAT : t.dtype;
}

// A constant that broadcasts to one value per channel of a rank-`rank` NC... tensor with M channels: M values
// (a scalar is repeated). Empty if it varies along any other axis or would widen the output.
std::vector<double> per_channel(const TensorData& c, int rank, int64_t M) {
    const int r = int(c.dims.size());
    if (r > rank) return {};
    int64_t n = 1;
    for (int a = 0; a < r; a++) {
        const int64_t d = c.dims[size_t(a)];
        const bool channel_axis = rank - r + a == 1;
        if (d != 1 && !(channel_axis && d == M)) return {};
        n *= d;
    }
    std::vector<double> v = doubles(c);
    if (n == 1) return std::vector<double>(size_t(M), v.empty() ? 0.0 : v[0]);
    return v;
}

// y = x * A + B per channel, extended by one more step (node n reading `y`); false if n is not such a step.
bool absorb(GraphIndex& g, const Node& n, const std::string& y, int rank, int64_t M, std::vector<double>& A,
            std::vector<double>& B) {
    if (!n.domain.empty() || n.outputs.size() != 1) return false;
    if (n.op_type == "BatchNormalization") {
        if (n.inputs.size() < 5 || n.inputs[0] != y || n.get_int("training_mode", 0) != 0) return false;
        const TensorData *sc = loaded_float_constant(g, n.inputs[1]), *sh = loaded_float_constant(g, n.inputs[2]),
                         *mu = loaded_float_constant(g, n.inputs[3]), *var = loaded_float_constant(g, n.inputs[4]);
        if (!sc || !sh || !mu || !var || sc->numel() != M || sh->numel() != M || mu->numel() != M || var->numel() != M)
            return false;
        const double eps = n.get_float("epsilon", 1e-5f);
        auto S = doubles(*sc), Sh = doubles(*sh), Mu = doubles(*mu), V = doubles(*var);
        for (size_t o = 0; o < size_t(M); o++) {
            const double a = S[o] / std::sqrt(V[o] + eps);
            A[o] *= a;
            B[o] = (B[o] - Mu[o]) * a + Sh[o];
        }
        return true;
    }
    const bool mul = n.op_type == "Mul", div = n.op_type == "Div", add = n.op_type == "Add", sub = n.op_type == "Sub";
    if (!(mul || div || add || sub) || n.inputs.size() != 2) return false;
    // y must be the first operand of Div and Sub; either operand of Mul and Add.
    const int yi = n.inputs[0] == y ? 0 : n.inputs[1] == y ? 1 : -1;
    if (yi < 0 || n.inputs[0] == n.inputs[1] || ((div || sub) && yi != 0)) return false;
    const TensorData* c = loaded_float_constant(g, n.inputs[size_t(1 - yi)]);
    if (!c) return false;
    std::vector<double> v = per_channel(*c, rank, M);
    if (v.empty()) return false;
    for (size_t o = 0; o < size_t(M); o++) {
        if (mul) A[o] *= v[o], B[o] *= v[o];
        else if (div) A[o] /= v[o], B[o] /= v[o];
        else if (add) B[o] += v[o];
        else B[o] -= v[o];
    }
    return true;
}

}  // namespace

void fold_conv_affine(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);  // counts reads inside If/Loop/Scan bodies too: such a Conv output must stay
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& conv = plan.node(m, idx);
        const bool transposed = conv.op_type == "ConvTranspose";
        if ((conv.op_type != "Conv" && !transposed) || !conv.domain.empty() || conv.outputs.size() != 1 ||
            conv.inputs.size() < 2 || removed.count(idx))
            continue;
        const TensorData* w = loaded_float_constant(g, conv.inputs[1]);
        const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
        const TensorData* b = has_bias ? loaded_float_constant(g, conv.inputs[2]) : nullptr;
        if (!w || w->dims.size() < 3 || (has_bias && !b)) continue;
        const int rank = int(w->dims.size());  // the output's rank, as the weight's
        const int64_t group = std::max<int64_t>(1, conv.get_int("group", 1));
        const int64_t M = transposed ? w->dims[1] * group : w->dims[0];
        if (M <= 0 || (b && b->numel() != M) || (transposed && w->dims[0] % group)) continue;
        std::vector<double> A(size_t(M), 1.0), B(size_t(M), 0.0);
        std::string y = conv.outputs[0];
        std::vector<int> steps;
        for (int next; (next = g.single_consumer(y)) >= 0 && !removed.count(next);) {
            const Node& n = plan.node(m, next);
            if (!absorb(g, n, y, rank, M, A, B)) break;
            steps.push_back(next);
            y = n.outputs[0];
        }
        if (steps.empty()) continue;
        std::vector<double> W = doubles(*w), bias = b ? doubles(*b) : std::vector<double>(size_t(M), 0.0);
        const int64_t per = w->numel() / w->dims[0];  // one row of dim 0
        const int64_t cin_g = w->dims[0] / group, m_g = transposed ? w->dims[1] : 0, taps = transposed ? per / m_g : 0;
        for (int64_t r = 0; r < w->dims[0]; r++)
            for (int64_t k = 0; k < per; k++) {
                // Conv: dim 0 is the output channel. ConvTranspose: [C, M/group, taps], output (C / cin_g) * m_g + j.
                const int64_t o = transposed ? (r / cin_g) * m_g + k / taps : r;
                W[size_t(r * per + k)] *= A[size_t(o)];
            }
        for (size_t o = 0; o < size_t(M); o++) bias[o] = bias[o] * A[o] + B[o];
        // Kept at the weight's type (an fp16 file's conv reads f16): rounded once, after the fold.
        const DType wt = seen_type(g, conv.inputs[1], *w);
        std::string wn = conv.inputs[1] + "#fold:" + y, bname = wn + ":bias";
        plan.initializers[wn] = make(wn, w->dims, wt, W);
        plan.initializers[bname] = make(bname, {M}, b ? seen_type(g, conv.inputs[2], *b) : wt, bias);
        Node fused = conv;
        fused.inputs = {conv.inputs[0], wn, bname};
        fused.outputs = {y};
        plan.rewritten[idx] = fused;
        removed.insert(steps.begin(), steps.end());
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
