// Regularizes a loaded graph: topological node order, one producer per value, float Constant nodes as initializers.
#pragma once
#include "ir/ir.h"

namespace onnx2ggml {

// Throws a one-line error naming the model and a node for a cycle or a value produced twice.
void tidy_graph(Model& m);

}  // namespace onnx2ggml
