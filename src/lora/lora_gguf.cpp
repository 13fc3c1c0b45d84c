// The LoRA target table in GGUF metadata (src/lora/lora.h): one row per (weight, module path).
#include <map>
#include <stdexcept>

#include "gguf.h"
#include "lora/lora.h"

namespace o2g {

static const char* kWeight = "onnx2ggml.lora.weight";
static const char* kPath = "onnx2ggml.lora.path";
static const char* kLayout = "onnx2ggml.lora.layout";
static const char* kGain = "onnx2ggml.lora.gain";
static const char* kRank = "onnx2ggml.lora.rank";  // of the stored weight: GGUF tensors always have 4 dims

void write_lora_targets(gguf_context* g, const std::vector<LoraTarget>& targets) {
    std::vector<const char*> weights, paths;
    std::vector<int32_t> layouts, ranks;
    std::vector<float> gains;
    for (const LoraTarget& t : targets)
        for (const std::string& p : t.paths) {  // one row per (weight, path)
            weights.push_back(t.weight.c_str());
            paths.push_back(p.c_str());
            layouts.push_back(int32_t(t.layout));
            gains.push_back(t.gain);
            ranks.push_back(int32_t(t.dims.size()));
        }
    if (weights.empty()) return;
    gguf_set_arr_str(g, kWeight, weights.data(), weights.size());
    gguf_set_arr_str(g, kPath, paths.data(), paths.size());
    gguf_set_arr_data(g, kLayout, GGUF_TYPE_INT32, layouts.data(), layouts.size());
    gguf_set_arr_data(g, kGain, GGUF_TYPE_FLOAT32, gains.data(), gains.size());
    gguf_set_arr_data(g, kRank, GGUF_TYPE_INT32, ranks.data(), ranks.size());
}

std::vector<LoraTarget> read_lora_targets(const gguf_context* g) {
    int64_t kw = gguf_find_key(g, kWeight), kp = gguf_find_key(g, kPath), kl = gguf_find_key(g, kLayout),
            kg = gguf_find_key(g, kGain), kr = gguf_find_key(g, kRank);
    std::vector<LoraTarget> out;
    if (kw < 0) return out;
    auto arr_of = [&](int64_t k, gguf_type type) {
        return k >= 0 && gguf_get_kv_type(g, k) == GGUF_TYPE_ARRAY && gguf_get_arr_type(g, k) == type;
    };
    if (!arr_of(kw, GGUF_TYPE_STRING) || !arr_of(kp, GGUF_TYPE_STRING) || !arr_of(kl, GGUF_TYPE_INT32) ||
        !arr_of(kg, GGUF_TYPE_FLOAT32) || !arr_of(kr, GGUF_TYPE_INT32))
        throw std::runtime_error("malformed LoRA target table (onnx2ggml.lora.*)");
    size_t n = gguf_get_arr_n(g, kw);
    if (gguf_get_arr_n(g, kp) != n || gguf_get_arr_n(g, kl) != n || gguf_get_arr_n(g, kg) != n ||
        gguf_get_arr_n(g, kr) != n)
        throw std::runtime_error("malformed LoRA target table (onnx2ggml.lora.* lengths differ)");
    const auto* layouts = static_cast<const int32_t*>(gguf_get_arr_data(g, kl));
    const auto* gains = static_cast<const float*>(gguf_get_arr_data(g, kg));
    const auto* ranks = static_cast<const int32_t*>(gguf_get_arr_data(g, kr));
    std::map<std::string, size_t> at;
    for (size_t i = 0; i < n; i++) {
        std::string w = gguf_get_arr_str(g, kw, i);
        if ((layouts[i] != 0 && layouts[i] != 1) || ranks[i] < 1 || ranks[i] > 4)
            throw std::runtime_error("malformed LoRA target table (layout or rank)");
        auto it = at.find(w);
        if (it == at.end()) {
            it = at.emplace(w, out.size()).first;
            LoraTarget t;
            t.weight = w;
            t.layout = LoraLayout(layouts[i]);
            t.gain = gains[i];
            t.dims.assign(size_t(ranks[i]), 0);  // sizes: the caller knows the tensor
            out.push_back(t);
        }
        out[it->second].paths.push_back(gguf_get_arr_str(g, kp, i));
    }
    return out;
}

}  // namespace o2g
