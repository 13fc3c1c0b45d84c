#include "passes/pipeline.h"

#include "ops/op.h"

namespace onnx2ggml {

const std::vector<Pass>& pipeline() {
    static const std::vector<Pass> passes = {
        {"fold_conv_affine", fold_conv_affine},
        {"fuse_hard_swish", fuse_hard_swish},
        {"fuse_conv_activation", fuse_conv_activation},
        {"fuse_silu", fuse_silu},
        {"fuse_group_norm", fuse_group_norm},
        {"fuse_attention", fuse_attention},
        {"fuse_gelu", fuse_gelu},
        {"fuse_layer_norm", fuse_layer_norm},
        {"fuse_matmul_bias", fuse_matmul_bias},
        {"fuse_scalar_affine", fuse_scalar_affine},  // last: the patterns above hold scalar steps of their own
        {"remove_dead_nodes", remove_dead_nodes},
        {"mark_host_values", mark_host_values},
    };
    return passes;
}

GraphPlan plan_graph(const Model& m) {
    GraphPlan plan;
    // A node with more or fewer inputs or outputs than its op takes is refused here, naming it: the passes' pattern
    // matches index them as their op's schema says.
    for (const Node& n : m.graph.nodes) check_counts(m, n);
    for (int i = 0; i < int(m.graph.nodes.size()); i++) plan.live_nodes.push_back(i);
    for (const Pass& p : pipeline()) p.run(m, plan);
    return plan;
}

}  // namespace onnx2ggml
