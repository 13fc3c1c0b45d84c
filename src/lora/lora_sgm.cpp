// SGM/LDM UNet module names (kohya's SDXL LoRAs: lora_unet_input_blocks_4_1_...) as diffusers module paths.
#include <string>

#include "lora/lora.h"

namespace o2g {

namespace {

// Reads "N_" (or "N" at the end) at s[pos].
bool read_index(const std::string& s, size_t& pos, int& v) {
    size_t b = pos;
    v = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - b < 6) v = v * 10 + (s[pos++] - '0');
    if (pos == b) return false;
    if (pos == s.size()) return true;
    if (s[pos] != '_') return false;
    pos++;
    return true;
}

// A ResBlock's layers: in_layers.2 is conv1, out_layers.3 conv2, emb_layers.1 the time projection, and the
// norms before them (for checkpoint import; LoRAs do not touch norms).
std::string resnet_layer(const std::string& rest) {
    if (rest == "in_layers_0") return "norm1";
    if (rest == "out_layers_0") return "norm2";
    if (rest == "in_layers_2") return "conv1";
    if (rest == "out_layers_3") return "conv2";
    if (rest == "emb_layers_1") return "time_emb_proj";
    if (rest == "skip_connection") return "conv_shortcut";
    return "";
}

std::string join(const std::string& head, const std::string& tail) { return tail.empty() ? "" : head + tail; }

}  // namespace

std::string sgm_unet_path(const std::string& p, int layers) {
    static const std::pair<const char*, const char*> fixed[] = {
        {"input_blocks_0_0", "conv_in"}, {"out_0", "conv_norm_out"}, {"out_2", "conv_out"},
        {"time_embed_0", "time_embedding_linear_1"},
        {"time_embed_2", "time_embedding_linear_2"}, {"label_emb_0_0", "add_embedding_linear_1"},
        {"label_emb_0_2", "add_embedding_linear_2"}};
    for (auto& [sgm, diffusers] : fixed)
        if (p == sgm) return diffusers;
    if (layers < 1) return "";
    const int per = layers + 1;  // SGM blocks per resolution level: the resnets (+ attention), then a sampler
    int i = 0, j = 0;
    size_t pos = 0;
    auto at = [&](const char* prefix) {
        size_t n = std::string(prefix).size();
        if (p.compare(0, n, prefix) != 0) return false;
        pos = n;
        return true;
    };
    if (at("input_blocks_") && read_index(p, pos, i) && read_index(p, pos, j) && i >= 1) {
        std::string rest = p.substr(pos), b = std::to_string((i - 1) / per), l = std::to_string((i - 1) % per);
        if ((i - 1) % per == layers) return j == 0 && rest == "op" ? "down_blocks_" + b + "_downsamplers_0_conv" : "";
        if (j == 0) return join("down_blocks_" + b + "_resnets_" + l + "_", resnet_layer(rest));
        if (j == 1) return join("down_blocks_" + b + "_attentions_" + l + "_", rest);
        return "";
    }
    if (at("middle_block_") && read_index(p, pos, j)) {
        std::string rest = p.substr(pos);
        if (j == 0) return join("mid_block_resnets_0_", resnet_layer(rest));
        if (j == 1) return join("mid_block_attentions_0_", rest);
        if (j == 2) return join("mid_block_resnets_1_", resnet_layer(rest));
        return "";
    }
    if (at("output_blocks_") && read_index(p, pos, i) && read_index(p, pos, j)) {
        std::string rest = p.substr(pos), b = std::to_string(i / per), l = std::to_string(i % per);
        if (rest == "conv" && j >= 1) return "up_blocks_" + b + "_upsamplers_0_conv";  // after the attention, if any
        if (j == 0) return join("up_blocks_" + b + "_resnets_" + l + "_", resnet_layer(rest));
        if (j == 1) return join("up_blocks_" + b + "_attentions_" + l + "_", rest);
    }
    return "";
}

}  // namespace o2g
