// Graph passes: named steps run in order over a model, filling a GraphPlan.
#pragma once
#include <vector>

#include "ir/ir.h"
#include "runtime/builder.h"

namespace onnx2ggml {

struct Pass {
    const char* name;
    void (*run)(const Model& m, GraphPlan& plan);
};

// The pipeline, in order.
const std::vector<Pass>& pipeline();
GraphPlan plan_graph(const Model& m);

void fold_conv_affine(const Model& m, GraphPlan& plan);
void fuse_hard_swish(const Model& m, GraphPlan& plan);
void fuse_scalar_affine(const Model& m, GraphPlan& plan);
void fuse_silu(const Model& m, GraphPlan& plan);
void fuse_conv_activation(const Model& m, GraphPlan& plan);
void fuse_group_norm(const Model& m, GraphPlan& plan);
void fuse_attention(const Model& m, GraphPlan& plan);
void fuse_gelu(const Model& m, GraphPlan& plan);
void fuse_matmul_bias(const Model& m, GraphPlan& plan);
void remove_dead_nodes(const Model& m, GraphPlan& plan);
void mark_host_values(const Model& m, GraphPlan& plan);

}  // namespace onnx2ggml
