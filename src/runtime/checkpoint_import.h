// Weights of a single-file checkpoint put into an exported model (`onnx2ggml import-weights`), and a weights GGUF
// read back into a model's initializers (`--weights-file`).
#pragma once
#include <string>

#include "ir/ir.h"

namespace onnx2ggml {

struct ImportOptions {
    std::string part = "auto";  // unet | vae | text_encoder | diffusers (keys already in diffusers names) | auto
    bool allow_partial = false;  // keep the model's own data for weights the checkpoint lacks
    bool quiet = false;
};

// Replaces the initializers of m by the checkpoint's tensors. Each initializer is matched by its own name and by the
// module paths the graph gives it (MatMul/Gemm/Conv weights traced back through Transpose/Identity/Cast, as for
// LoRA; a norm's Mul/Add constants), under the diffusers names of src/formats/checkpoint_keys.h. Errors (one line):
// a tensor that does not fit its initializer, an initializer shared by tensors that differ, weights left unfilled
// (unless allow_partial), a checkpoint that matches nothing. Unused tensors are reported on stderr.
void import_checkpoint(Model& m, const std::string& checkpoint, const ImportOptions& o);

// Takes initializer data from a weights GGUF (as `compile` or `import-weights` write it) by name; values the file
// holds that are not initializers (folded constants) are left to the graph, which recomputes them.
void apply_weights_file(Model& m, const std::string& path, bool quiet);

}  // namespace onnx2ggml
