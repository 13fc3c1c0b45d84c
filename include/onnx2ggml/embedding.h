// Textual-inversion embeddings added to a CLIP text encoder when it loads (`--embedding FILE[:TOKEN]`,
// SessionOptions::embeddings) and to the CLIP tokenizer (ClipTokenizer::add_embeddings). Files: A1111 .pt
// (`string_to_param`), .safetensors with `emb_params`, diffusers learned_embeds ({token: tensor}, .bin or
// .safetensors), SDXL files with `clip_l` and `clip_g`.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace onnx2ggml {

struct EmbeddingFile {
    std::string path;
    std::string token;  // the prompt word; "" takes the file name without folder and extension, as the apps do
};

// "FILE" or "FILE:TOKEN" as given to --embedding (a suffix after the last ':' holding no '/' or '\' is the token).
EmbeddingFile parse_embedding_arg(const std::string& arg);

// The tokens a file adds, in table order (token, token_1, ...), for the set an encoder `width` wide takes (0: any;
// `set` as SessionOptions::embedding_set): for tokenizers other than ClipTokenizer (Python's). Throws one line.
std::vector<std::string> embedding_tokens(const EmbeddingFile& f, int64_t width = 0, const std::string& set = "");

}  // namespace onnx2ggml
