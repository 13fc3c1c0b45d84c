// Lowerings that build their result from other ONNX ops (control flow, sequences) run synthesized nodes.
#pragma once
#include <string>
#include <vector>

#include "ops/op.h"

namespace onnx2ggml {

// Runs a synthesized single node (lowered, recorded and named like any node) and returns its first output.
Val synth(Lower& L, const std::string& op, const std::vector<std::string>& inputs, std::vector<Attribute> attrs);
Attribute int_attr(const char* name, int64_t v);
// Value v under a fresh name (hint#k), so that a synthesized node can take it as an input.
std::string bind(Lower& L, Val v, const std::string& hint);

}  // namespace onnx2ggml
