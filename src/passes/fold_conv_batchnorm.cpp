// fold_conv_batchnorm: Conv -> BatchNormalization (inference, constant parameters) becomes one Conv with
// scaled weights and a shifted bias, computed once when the model is planned.
#include <cmath>
#include <cstring>
#include "passes/match.h"

namespace onnx2ggml {

namespace {

std::shared_ptr<TensorData> constant(const Model& m, const GraphPlan&, const std::string& name) {
    auto it = m.graph.initializers.find(name);
    if (it == m.graph.initializers.end() || it->second->dtype != DType::FLOAT || !it->second->data) return nullptr;
    return it->second;
}

std::vector<float> floats(const TensorData& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    if (!v.empty()) std::memcpy(v.data(), t.data, v.size() * 4);
    return v;
}

std::shared_ptr<TensorData> make(const std::string& name, const std::vector<int64_t>& dims, std::vector<float> v) {
    auto buf = std::make_shared<std::vector<float>>(std::move(v));
    auto t = std::make_shared<TensorData>();
    t->name = name;
    t->dtype = DType::FLOAT;
    t->dims = dims;
    t->data = reinterpret_cast<const uint8_t*>(buf->data());
    t->nbytes = buf->size() * 4;
    t->keep = buf;
    return t;
}

}  // namespace

void fold_conv_batchnorm(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);  // counts reads inside If/Loop/Scan bodies too: such a Conv output must stay
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& bn = plan.node(m, idx);
        if (bn.op_type != "BatchNormalization" || !bn.domain.empty() || bn.inputs.size() < 5 ||
            bn.get_int("training_mode", 0) != 0 || (bn.outputs.size() > 1 && !bn.outputs[1].empty()))
            continue;
        int conv_idx = g.sole(bn.inputs[0], "Conv");
        if (conv_idx < 0) continue;
        const Node& conv = plan.node(m, conv_idx);
        if (conv.inputs.size() < 2) continue;
        auto w = constant(m, plan, conv.inputs[1]);
        std::shared_ptr<TensorData> b = conv.inputs.size() > 2 && !conv.inputs[2].empty() ? constant(m, plan, conv.inputs[2]) : nullptr;
        if (!w || (conv.inputs.size() > 2 && !conv.inputs[2].empty() && !b)) continue;
        auto sc = constant(m, plan, bn.inputs[1]), sh = constant(m, plan, bn.inputs[2]),
             mean = constant(m, plan, bn.inputs[3]), var = constant(m, plan, bn.inputs[4]);
        if (!sc || !sh || !mean || !var || w->dims.empty()) continue;
        int64_t M = w->dims[0];
        if (sc->numel() != M || sh->numel() != M || mean->numel() != M || var->numel() != M || (b && b->numel() != M))
            continue;
        double eps = bn.get_float("epsilon", 1e-5f);
        auto W = floats(*w), S = floats(*sc), Sh = floats(*sh), Mu = floats(*mean), V = floats(*var);
        std::vector<float> B = b ? floats(*b) : std::vector<float>(size_t(M), 0.0f);
        int64_t per = w->numel() / M;
        for (int64_t o = 0; o < M; o++) {
            double a = double(S[size_t(o)]) / std::sqrt(double(V[size_t(o)]) + eps);
            for (int64_t k = 0; k < per; k++) W[size_t(o * per + k)] = float(W[size_t(o * per + k)] * a);
            B[size_t(o)] = float((double(B[size_t(o)]) - Mu[size_t(o)]) * a + Sh[size_t(o)]);
        }
        std::string wn = conv.inputs[1] + "#bnfold:" + bn.outputs[0], bname = wn + ":bias";
        plan.initializers[wn] = make(wn, w->dims, std::move(W));
        plan.initializers[bname] = make(bname, {M}, std::move(B));
        Node fused = conv;
        fused.inputs = {conv.inputs[0], wn, bname};
        fused.outputs = {bn.outputs[0]};
        plan.rewritten[conv_idx] = fused;
        removed.insert(idx);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
