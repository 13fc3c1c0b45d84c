// `onnx2ggml tokenize`: CLIP BPE token ids of a text, as Stable Diffusion's text encoders read them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "onnx2ggml/clip_tokenizer.h"

namespace onnx2ggml {

int cmd_tokenize(const std::vector<std::string>& args) {
    std::string vocab, text;
    int64_t pad = ClipTokenizer::kEos;
    int length = ClipTokenizer::kContext;
    bool have_text = false, raw = false;
    std::vector<EmbeddingFile> embeddings;
    int64_t width = 0;
    std::string prefer;
    for (size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error("tokenize: " + a + " needs a value");
            return args[++i];
        };
        auto integer = [&]() -> long long {
            std::string v = next();
            char* end = nullptr;
            long long x = std::strtoll(v.c_str(), &end, 10);
            if (v.empty() || *end) throw Error("tokenize: " + a + " needs an integer, got '" + v + "'");
            return x;
        };
        if (a == "--vocab") vocab = next();
        else if (a == "--pad") pad = integer();
        else if (a == "--length") length = int(std::min(integer(), 1LL << 20));
        else if (a == "--no-special") raw = true;
        else if (a == "--embedding") embeddings.push_back(parse_embedding_arg(next()));
        else if (a == "--width") width = integer();
        else if (a == "--embedding-set") prefer = next();
        else if (!have_text) text = a, have_text = true;
        else throw Error("tokenize takes one text (quote it); unexpected '" + a + "'");
    }
    if (!have_text) throw Error("tokenize: no text given");
    if (vocab.empty()) vocab = default_clip_vocab_path();
    if (vocab.empty())
        throw Error("tokenize: no CLIP vocabulary found: run scripts/setup.sh, or pass --vocab or set ONNX2GGML_CLIP_VOCAB");
    ClipTokenizer tok(vocab);
    tok.add_embeddings(embeddings, width, prefer);
    std::vector<int64_t> ids = raw ? tok.encode(text) : tok.tokenize(text, pad, length);
    for (size_t i = 0; i < ids.size(); i++) printf("%s%lld", i ? " " : "", (long long)ids[i]);
    printf("\n");
    return 0;
}

}  // namespace onnx2ggml
