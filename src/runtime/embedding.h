// Textual inversion on ONNX text encoders: the token-embedding table, found by tracing the graph (the Gather whose
// indices come from a graph input such as input_ids), gains the embeddings' rows when a session opens.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"
#include "onnx2ggml/embedding.h"

namespace onnx2ggml {

// The initializer that is the token-embedding table ([vocab, width]); "" when the graph has none.
std::string token_embedding_table(const Model& m);

// Appends every file's vectors to the table, in order (token, token_1, ... of the first file, then the next), the
// ids the tokenizer gives them. `prefer` picks an SDXL file's set where both fit the width ("clip_l", "clip_g").
void apply_embeddings(Model& m, const std::vector<EmbeddingFile>& files, const std::string& prefer, bool quiet);

}  // namespace onnx2ggml
