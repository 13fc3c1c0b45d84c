// fuse_matmul_bias: MatMul by a constant 2-D weight followed by Add of a constant 1-D bias (a Linear layer as
// PyTorch exports it) becomes one onnx2ggml.MatMulBias node: the CPU's packed-weight kernel adds the bias while
// writing its output, with no second pass over the result (nor a broadcast copy of the bias). A Swish (quick GELU)
// or an Add of another value (a residual) that alone reads the result joins it: attribute swish_alpha, input 3.
#include "passes/match.h"

namespace onnx2ggml {

namespace {

// Dims of a float initializer (data loaded or not) or Constant, f32 or an fp16 file's f16/bf16; null otherwise.
const TensorData* float_constant(GraphIndex& g, const std::string& v) {
    const TensorData* t = g.initializer(v);
    if (!t) t = g.constant(v);
    return t && float_dtype(t->dtype) ? t : nullptr;
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
        int at = add_idx;  // where the last fused node was: every input is made by then
        // Then the layer's activation (CLIP's quick GELU, which fuse_silu made onnx2ggml.Swish) or a residual Add:
        // the kernel applies either as it writes its output.
        const std::string& y = add.outputs[0];
        int next = g.only_consumer(y, "onnx2ggml.Swish");
        if (next >= 0 && !removed.count(next) && plan.node(m, next).outputs.size() == 1) {
            const Node& sw = plan.node(m, next);
            fused.attrs.push_back(float_attr("swish_alpha", sw.get_float("alpha", 1.0f)));
            fused.outputs = sw.outputs;
            removed.insert(add_idx);
            at = next;
        } else if ((next = g.only_consumer(y, "Add")) >= 0 && !removed.count(next)) {
            const Node& r = plan.node(m, next);
            if (r.inputs.size() == 2 && r.outputs.size() == 1 && r.inputs[0] != r.inputs[1]) {
                fused.inputs.push_back(r.inputs[0] == y ? r.inputs[1] : r.inputs[0]);
                fused.outputs = r.outputs;
                removed.insert(add_idx);
                at = next;
            }
        }
        plan.rewritten[at] = fused;
        removed.insert(idx);
    }
    plan.drop(removed);
}

}  // namespace onnx2ggml
