// Graph passes: named steps run in order over a model, filling a GraphPlan.
#pragma once
#include <map>
#include <string>
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

// Fusions that fired (internal node kinds, GroupNorm+SiLU apart from GroupNorm), the model's own fused-kind ops,
// and live nodes of kinds a fusion absorbs (Softmax outside an attention, ...), each with a count.
struct FusionReport {
    std::map<std::string, int> fused, native, unfused;
};
FusionReport fusion_report(const Model& m, const GraphPlan& plan);
// Why a node of this kind in FusionReport::unfused is listed ("not in an attention").
std::string fusion_note(const std::string& op);

void fold_conv_affine(const Model& m, GraphPlan& plan);
void fuse_hard_swish(const Model& m, GraphPlan& plan);
void fuse_scalar_affine(const Model& m, GraphPlan& plan);
void fuse_silu(const Model& m, GraphPlan& plan);
void fuse_conv_activation(const Model& m, GraphPlan& plan);
void fuse_group_norm(const Model& m, GraphPlan& plan);
void fuse_attention(const Model& m, GraphPlan& plan);
void fuse_gelu(const Model& m, GraphPlan& plan);
void fuse_layer_norm(const Model& m, GraphPlan& plan);
void fuse_matmul_bias(const Model& m, GraphPlan& plan);
void remove_dead_nodes(const Model& m, GraphPlan& plan);
void mark_host_values(const Model& m, GraphPlan& plan);

}  // namespace onnx2ggml
