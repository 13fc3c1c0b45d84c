// Folds runs of structurally identical blocks of build() (transformer layers, ResNet blocks that differ only in
// their weights) into one function called per block, so that a 12-layer encoder reads as a loop.
#pragma once
#include <string>
#include <vector>

namespace onnx2ggml {

// One live node's code and the comment line that heads it.
struct NodeText {
    std::string head, code;
};

// Writes build()'s body from the nodes; runs of two or more blocks become a loop over one block function, whose
// weights struct and definition go to `defs` (left empty where there is no run: the body is then the plain one).
// `prologue` holds the statements that declare build()'s inputs and dims, `tail` those that return its outputs.
std::string fold_blocks(const std::vector<NodeText>& nodes, const std::vector<std::string>& prologue,
                        const std::string& tail, std::string& defs);

}  // namespace onnx2ggml
