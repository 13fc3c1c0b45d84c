// Textual-inversion embedding files (src/lora/embedding.h): the formats people download, read into vectors.
#include "lora/embedding.h"

#include <cmath>

#include "common/error.h"
#include "formats/safetensors.h"
#include "onnx2ggml/host_tensor.h"

namespace onnx2ggml {

EmbeddingFile parse_embedding_arg(const std::string& arg) {
    EmbeddingFile f;
    f.path = arg;
    size_t colon = arg.rfind(':');
    // "C:\x.pt" and "dir:a/x.pt" keep their colon: a token holds no path separator.
    if (colon != std::string::npos && colon > 0 && arg.find_first_of("/\\", colon) == std::string::npos) {
        f.path = arg.substr(0, colon);
        f.token = arg.substr(colon + 1);
        if (f.path.size() == 1) f.path = arg, f.token.clear();  // a drive letter alone
    }
    O2G_CHECK(!f.path.empty(), "--embedding needs a file: '", arg, "'");
    O2G_CHECK(arg.back() != ':', "--embedding ", arg, ": empty token after ':'");
    return f;
}

std::vector<std::string> embedding_tokens(const EmbeddingFile& f, int64_t width, const std::string& set) {
    o2g::Embedding e = o2g::read_embedding(f);
    return o2g::embedding_tokens(e, o2g::embedding_vectors(e, width, set).count);
}

}  // namespace onnx2ggml

namespace o2g {

namespace {

std::string stem(const std::string& path) {
    size_t slash = path.find_last_of("/\\");
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    size_t dot = name.rfind('.');
    return dot == 0 || dot == std::string::npos ? name : name.substr(0, dot);
}

// The tensors that hold vectors, by format: SDXL's two, A1111's `string_to_param.*`, `emb_params`, or the one
// tensor of a diffusers file (its key is the token it was trained as).
std::vector<const SafeTensor*> vector_tensors(const SafetensorsFile& f) {
    std::vector<const SafeTensor*> r;
    for (const char* k : {"clip_l", "clip_g"})
        if (const SafeTensor* t = f.find(k)) r.push_back(t);
    if (!r.empty()) return r;
    for (const char* k : {"string_to_param.*", "emb_params"})
        if (const SafeTensor* t = f.find(k)) return {t};
    O2G_CHECK(f.tensors().size() == 1, f.path(), ": not a textual-inversion embedding: expected `clip_l`/`clip_g`, ",
              "`string_to_param`, `emb_params` or a single {token: tensor}, found ", f.tensors().size(), " tensors");
    return {&f.tensors()[0]};
}

}  // namespace

Embedding read_embedding(const onnx2ggml::EmbeddingFile& ef) {
    SafetensorsFile f(ef.path);
    Embedding e;
    e.path = ef.path;
    e.token = ef.token.empty() ? stem(ef.path) : ef.token;
    O2G_CHECK(!e.token.empty(), ef.path, ": no token (name the file or pass FILE:TOKEN)");
    for (const SafeTensor* t : vector_tensors(f)) {
        EmbeddingVectors v;
        v.key = t->name;
        const std::vector<int64_t>& s = t->shape;
        O2G_CHECK((s.size() == 1 || s.size() == 2) && s.back() > 0 && s.back() <= (1 << 16) &&
                      (s.size() == 1 || (s[0] > 0 && s[0] <= 1024)),
                  ef.path, ": tensor '", printable(t->name), "' is ", onnx2ggml::shape_list(s),
                  ", not [vectors, width] (at most 1024 vectors of width 65536)");
        O2G_CHECK(t->dtype == "F32" || t->dtype == "F16" || t->dtype == "BF16" || t->dtype == "F64", ef.path,
                  ": tensor '", printable(t->name), "' has dtype ", printable(t->dtype),
                  "; embedding vectors must be F32, F16, BF16 or F64");
        v.count = s.size() == 2 ? s[0] : 1;
        v.width = s.back();
        v.data = f.floats(*t);
        for (float x : v.data) O2G_CHECK(std::isfinite(x), ef.path, ": tensor '", printable(t->name), "' holds ", x);
        e.sets.push_back(std::move(v));
    }
    return e;
}

const EmbeddingVectors& embedding_vectors(const Embedding& e, int64_t width, const std::string& prefer) {
    const EmbeddingVectors* hit = nullptr;
    std::string widths;
    for (const EmbeddingVectors& v : e.sets) {
        widths += (widths.empty() ? "" : ", ") + std::to_string(v.width) + (e.sets.size() > 1 ? " (" + v.key + ")" : "");
        if (width != 0 && v.width != width) continue;
        if (!hit || (v.key == prefer && hit->key != prefer)) hit = &v;
    }
    O2G_CHECK(hit, e.path, ": embedding '", e.token, "' has vectors of width ", widths,
              ", the text encoder's token embeddings are ", width, " wide");
    return *hit;
}

std::vector<std::string> embedding_tokens(const Embedding& e, int64_t count) {
    std::vector<std::string> r{e.token};
    for (int64_t i = 1; i < count; i++) r.push_back(e.token + "_" + std::to_string(i));
    return r;
}

std::vector<float> embedding_rows(const std::vector<onnx2ggml::EmbeddingFile>& files, int64_t width,
                                  const std::string& prefer,
                                  const std::function<void(const Embedding&, const EmbeddingVectors&)>& each) {
    std::vector<float> rows;
    for (const onnx2ggml::EmbeddingFile& f : files) {
        const Embedding e = read_embedding(f);
        const EmbeddingVectors& v = embedding_vectors(e, width, prefer);
        rows.insert(rows.end(), v.data.begin(), v.data.end());
        if (each) each(e, v);
    }
    return rows;
}

}  // namespace o2g
