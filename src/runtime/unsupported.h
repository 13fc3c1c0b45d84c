// Finds every op in a model the runtime cannot run, so all are reported at once.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace onnx2ggml {

struct UnsupportedOp {
    std::string op_type, domain, node_name;
    int64_t opset;
};

std::vector<UnsupportedOp> find_unsupported(const Model& m);
// Throws one error listing every unsupported op (op type, node name, opset).
void check_supported(const Model& m);

}  // namespace onnx2ggml
