// fuse_matmul_bias: MatMul by a constant 2-D weight followed by Add of a constant 1-D bias (a Linear layer as
// PyTorch exports it) becomes one onnx2ggml.MatMulBias node: the CPU's packed-weight kernel adds the bias while
// writing its output, with no second pass over the result (nor a broadcast copy of the bias).
#include "passes/match.h"

namespace onnx2ggml {

namespace {

// Dims of a float initializer (data loaded or not) or Constant; null for anything else.
const TensorData* float_constant(GraphIndex& g, const std::string& v) {
    const TensorData* t = g.initializer(v);
    if (!t) t = g.constant(v);
    return t && t->dtype == DType::FLOAT ? t : nullptr;
}

}  // namespace

void fuse_matmul_bias(const Model& m, GraphPlan& plan) {
    GraphIndex g(m, plan);
    std::set<int> removed;
    for (int idx : plan.live_nodes) {
        const Node& mm = plan.node(m, idx);
        if (mm.op_type != "MatMul" || !mm.domain.empty() || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
        const TensorData* w = float_constant(g, mm.inputs[1]);
        if (!w || w->dims.size() != 2) continue;
        int add_idx = g.only_consumer(mm.outputs[0], "Add");
        if (add_idx < 0 || removed.count(add_idx)) continue;
        const Node& add = plan.node(m, add_idx);
        if (add.inputs.size() != 2 || add.outputs.size() != 1) continue;
        const std::string& bias = add.inputs[0] == mm.outputs[0] ? add.inputs[1] : add.inputs[0];
        const TensorData* b = float_constant(g, bias);
        if (!b || b->dims.size() != 1 || b->dims[0] != w->dims[1] || bias == mm.outputs[0]) continue;
        Node fused = mm;
        fused.op_type = "onnx2ggml.MatMulBias";  // internal op, produced only by this pass
        fused.inputs.push_back(bias);
        fused.outputs = add.outputs;
        plan.rewritten[add_idx] = fused;  // where the Add was: the bias may be made after the MatMul
        removed.insert(idx);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
