// LoRA on ONNX models: which initializers are the weights of which modules (traced through the graph, since
// exporters rename and pre-transpose weights), and merging LoRA files into them when a session opens.
#pragma once
#include <vector>

#include "ir/ir.h"
#include "lora/lora.h"

namespace onnx2ggml {

// The weights of MatMul, Gemm and Conv nodes, with the module paths their node and initializer names (or torch.export's
// scope metadata) carry ("/unet/down_blocks.0/attentions.0/proj_in/Conv" -> "unet.down_blocks.0.attentions.0.proj_in")
// and how they
// are stored (a MatMul weight fed through Transpose is [out, in]; one the exporter folded is [in, out]).
std::vector<o2g::LoraTarget> lora_targets(const Model& m);

// Module paths a node's name or torch.export scope metadata give ("unet.down_blocks.0.resnets.0.norm1").
std::vector<std::string> node_module_paths(const Node& n);

// Replaces a float initializer's data (given as f32, stored in its own dtype) by an owned, aligned copy; `dims`,
// when given, are its new shape (an embedding table gains rows).
void set_initializer(Model& m, const std::string& name, const std::vector<float>& w,
                     const std::vector<int64_t>& dims = {});

// Merges the files into m's initializers (changed ones are replaced by owned copies, in their own dtype).
void apply_lora(Model& m, const std::vector<LoraFile>& files, bool quiet);

}  // namespace onnx2ggml
