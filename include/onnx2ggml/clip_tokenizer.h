// CLIP's byte-level BPE tokenizer (the one Stable Diffusion's text encoders were trained with), read from
// OpenAI's merges file bpe_simple_vocab_16e6.txt[.gz]. It follows transformers' CLIPTokenizer, which diffusers
// uses: NFC, whitespace runs to one space, per-character lowercase, CLIP's pre-token pattern, BPE with `</w>`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx2ggml/embedding.h"

namespace onnx2ggml {

class ClipTokenizer {
public:
    static constexpr int64_t kBos = 49406;  // <|startoftext|>
    static constexpr int64_t kEos = 49407;  // <|endoftext|>
    static constexpr int kContext = 77;

    // Reads the merges file (gzip or plain text). Throws one line naming the file and line on bad content.
    explicit ClipTokenizer(const std::string& merges_path);

    // BPE ids of the text, without start or end tokens; stops after the piece that reaches `limit` ids.
    std::vector<int64_t> encode(const std::string& text, size_t limit = SIZE_MAX) const;
    // Start, the ids (cut to length - 2), end, then `pad` up to `length`.
    std::vector<int64_t> tokenize(const std::string& text, int64_t pad = kEos, int length = kContext) const;

    size_t vocab_size() const { return vocab_.size(); }

    // Adds textual-inversion tokens after the vocabulary, in the order given: a file of n vectors adds token,
    // token_1, ..., token_{n-1} (diffusers' load_textual_inversion), and the token in a prompt stands for all n.
    // Tokens match anywhere in the lowercased text, longest first, as transformers matches added tokens. `width`
    // picks an SDXL file's set (0: the first; `prefer` names one when widths tie). A token the vocabulary or an
    // earlier file has is a one-line error. Ids continue from next_id() (the encoder's table rows).
    void add_embeddings(const std::vector<EmbeddingFile>& files, int64_t width = 0, const std::string& prefer = "");
    int64_t next_id() const { return next_id_; }

private:
    struct Merge {
        int rank;
        int64_t result;
    };
    void bpe(const std::string& piece, std::vector<int64_t>& out) const;
    void encode_text(const std::string& text, std::vector<int64_t>& ids, size_t limit) const;

    struct Added {
        std::vector<char32_t> text;  // lowercased, as it is matched
        std::vector<int64_t> ids;   // the token's own id, then those of token_1, ... when the prompt names token
    };
    std::vector<Added> added_;
    int64_t next_id_ = kEos + 1;

    std::unordered_map<std::string, int64_t> vocab_;  // token in byte-to-unicode form -> id
    std::unordered_map<uint64_t, Merge> merges_;      // (left id << 32 | right id) -> rank and merged id
    int64_t byte_id_[256], byte_end_id_[256];         // a byte alone, and as the last of a word (with </w>)
};

// The merges file scripts/setup.sh fetched: $ONNX2GGML_CLIP_VOCAB, else .deps/clip/ of this source tree or next to
// the executable's parent folder. Empty when none exists.
std::string default_clip_vocab_path();

}  // namespace onnx2ggml
