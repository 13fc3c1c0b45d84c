// The LoRA target table compile writes into NAME.gguf, so that programs can merge LoRA files at load without the
// ONNX graph (src/lora/lora.h reads it back).
#pragma once
#include <vector>

#include "emit/recorder.h"
#include "lora/lora.h"

namespace onnx2ggml {

// lora_targets(m) restricted to weights the GGUF holds as they are in the model (f32, same element count).
std::vector<o2g::LoraTarget> gguf_lora_targets(const Model& m, const std::vector<GgufEntry>& weights);

// The token-embedding table (for --embedding at load) when the GGUF holds it as in the model, [width, vocab] in
// f32/f16/bf16; "" otherwise.
std::string gguf_token_table(const Model& m, const std::vector<GgufEntry>& weights);

}  // namespace onnx2ggml
