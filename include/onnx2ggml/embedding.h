// Textual-inversion embeddings added to a CLIP text encoder when it loads (`--embedding FILE[:TOKEN]`,
// SessionOptions::embeddings) and to the CLIP tokenizer (ClipTokenizer::add_embeddings). Files: A1111 .pt
// (`string_to_param`), .safetensors with `emb_params`, diffusers learned_embeds ({token: tensor}, .bin or
// .safetensors), SDXL files with `clip_l` and `clip_g`.
#pragma once
#include <string>
#include <vector>

namespace onnx2ggml {

struct EmbeddingFile {
    std::string path;
    std::string token;  // the prompt word; "" takes the file name without folder and extension, as the apps do
};

// "FILE" or "FILE:TOKEN" as given to --embedding (a suffix after the last ':' holding no '/' or '\' is the token).
EmbeddingFile parse_embedding_arg(const std::string& arg);

}  // namespace onnx2ggml
