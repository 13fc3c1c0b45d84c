// LoRA target table of compiled programs (src/emit/lora_table.h).
#include "emit/lora_table.h"

#include <map>

#include "runtime/embedding.h"
#include "runtime/lora.h"

namespace onnx2ggml {

std::vector<o2g::LoraTarget> gguf_lora_targets(const Model& m, const std::vector<GgufEntry>& weights) {
    std::map<std::string, const GgufEntry*> by_key;
    for (const GgufEntry& w : weights) by_key[w.key] = &w;
    std::vector<o2g::LoraTarget> out;
    for (o2g::LoraTarget& t : lora_targets(m)) {
        auto it = by_key.find(t.weight);
        if (it == by_key.end() || t.dims.size() > 4) continue;  // folded away, or stored with merged dims
        const GgufEntry& e = *it->second;
        int64_t n = 1, ne = e.ne[0] * e.ne[1] * e.ne[2] * e.ne[3];
        for (int64_t d : t.dims) n *= d;
        if (e.type == GGML_TYPE_F32 && n == ne) out.push_back(std::move(t));
    }
    return out;
}

std::string gguf_token_table(const Model& m, const std::vector<GgufEntry>& weights) {
    std::string table = token_embedding_table(m);
    if (table.empty()) return "";
    const std::vector<int64_t>& d = m.graph.initializers.at(table)->dims;
    for (const GgufEntry& e : weights)
        if (e.key == table && e.ne[0] == d[1] && e.ne[1] == d[0] && e.ne[2] == 1 && e.ne[3] == 1 &&
            (e.type == GGML_TYPE_F32 || e.type == GGML_TYPE_F16 || e.type == GGML_TYPE_BF16))
            return table;
    return "";
}

}  // namespace onnx2ggml
