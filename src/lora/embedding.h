// Textual-inversion embedding files read into vectors, apart from ONNX: the tokenizer takes their tokens, and a
// text encoder's token-embedding table takes their rows (src/runtime/embedding.cpp traces the table).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "onnx2ggml/embedding.h"

namespace o2g {

// One set of vectors in a file: SD 1.5/2.x files hold one, SDXL files one per encoder ("clip_l", "clip_g").
struct EmbeddingVectors {
    std::string key;     // the tensor's name in the file
    int64_t count = 0;   // vectors (a multi-vector embedding is used as token, token_1, ..., token_{count-1})
    int64_t width = 0;   // the text encoder's hidden size they fit
    std::vector<float> data;  // count * width, row by row
};

struct Embedding {
    std::string path;
    std::string token;
    std::vector<EmbeddingVectors> sets;
};

// Reads one file (safetensors or torch zip, never running a pickle). Errors are one line naming the file.
Embedding read_embedding(const onnx2ggml::EmbeddingFile& f);

// The set for an encoder whose table is `width` wide (0: any width). Where several sets fit, the one named `prefer`
// ("clip_l", "clip_g") wins, else the first. No set of that width is an error naming the file, token and sizes.
const EmbeddingVectors& embedding_vectors(const Embedding& e, int64_t width, const std::string& prefer = "");

// Every file's set for `width` (embedding_vectors), in order, as the rows a token table gains; `each` (may be
// empty) hears each file with the set taken, so a caller can say which ids it got.
std::vector<float> embedding_rows(const std::vector<onnx2ggml::EmbeddingFile>& files, int64_t width,
                                  const std::string& prefer,
                                  const std::function<void(const Embedding&, const EmbeddingVectors&)>& each = {});

// The tokens a set adds, in table order: token, token_1, ..., as diffusers' load_textual_inversion adds them.
std::vector<std::string> embedding_tokens(const Embedding& e, int64_t count);

}  // namespace o2g
