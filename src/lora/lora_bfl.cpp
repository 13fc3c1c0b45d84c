// Flux's and Chroma's original (BFL) module names, as kohya and ComfyUI write their LoRAs, as diffusers paths.
#include <string>
#include <vector>

#include "lora/lora.h"

namespace o2g {

namespace {

bool take(const std::string& s, size_t& pos, const std::string& word) {
    if (s.compare(pos, word.size(), word) != 0) return false;
    pos += word.size();
    return true;
}

// "N_" at s[pos]: the block index, as text.
bool take_index(const std::string& s, size_t& pos, std::string& index) {
    size_t b = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - b < 6) pos++;
    if (pos == b || pos >= s.size() || s[pos] != '_') return false;
    index = s.substr(b, pos - b);
    pos++;
    return true;
}

std::vector<std::string> prefixed(const std::string& head, std::initializer_list<const char*> tails) {
    std::vector<std::string> r;
    for (const char* t : tails) r.push_back(head + t);
    return r;
}

std::vector<std::string> double_block(const std::string& b, const std::string& rest) {
    const bool img = rest.compare(0, 4, "img_") == 0, txt = rest.compare(0, 4, "txt_") == 0;
    if (!img && !txt) return {};
    const std::string r = rest.substr(4);
    if (r == "attn_qkv")
        return img ? prefixed(b, {"attn_to_q", "attn_to_k", "attn_to_v"})
                   : prefixed(b, {"attn_add_q_proj", "attn_add_k_proj", "attn_add_v_proj"});
    if (r == "attn_proj") return {b + (img ? "attn_to_out_0" : "attn_to_add_out")};
    if (r == "mlp_0") return {b + (img ? "ff_net_0_proj" : "ff_context_net_0_proj")};
    if (r == "mlp_2") return {b + (img ? "ff_net_2" : "ff_context_net_2")};
    if (r == "mod_lin") return {b + (img ? "norm1_linear" : "norm1_context_linear")};
    return {};
}

}  // namespace

std::vector<std::string> bfl_flux_paths(const std::string& path) {
    static const std::pair<const char*, const char*> fixed[] = {
        {"img_in", "x_embedder"}, {"txt_in", "context_embedder"}, {"final_layer_linear", "proj_out"},
        {"time_in_in_layer", "time_text_embed_timestep_embedder_linear_1"},
        {"time_in_out_layer", "time_text_embed_timestep_embedder_linear_2"},
        {"vector_in_in_layer", "time_text_embed_text_embedder_linear_1"},
        {"vector_in_out_layer", "time_text_embed_text_embedder_linear_2"},
        {"guidance_in_in_layer", "time_text_embed_guidance_embedder_linear_1"},
        {"guidance_in_out_layer", "time_text_embed_guidance_embedder_linear_2"}};
    size_t pos = 0;
    take(path, pos, "diffusion_model_");  // ComfyUI's and ai-toolkit's prefix
    const std::string p = path.substr(pos);
    for (auto& [bfl, diffusers] : fixed)
        if (p == bfl) return {diffusers};
    std::string i;
    pos = 0;
    if (take(p, pos, "double_blocks_") && take_index(p, pos, i))
        return double_block("transformer_blocks_" + i + "_", p.substr(pos));
    pos = 0;
    if (take(p, pos, "single_blocks_") && take_index(p, pos, i)) {
        const std::string b = "single_transformer_blocks_" + i + "_", r = p.substr(pos);
        if (r == "linear1") return prefixed(b, {"attn_to_q", "attn_to_k", "attn_to_v", "proj_mlp"});
        if (r == "linear2") return {b + "proj_out"};
        if (r == "modulation_lin") return {b + "norm_linear"};
        return {};
    }
    if (p == "distilled_guidance_layer_in_proj" || p == "distilled_guidance_layer_out_proj") return {p};
    pos = 0;  // Chroma's approximator: only its MLP layers' names differ
    if (take(p, pos, "distilled_guidance_layer_layers_") && take_index(p, pos, i)) {
        const std::string b = "distilled_guidance_layer_layers_" + i + "_", r = p.substr(pos);
        if (r == "in_layer") return {b + "linear_1"};
        if (r == "out_layer") return {b + "linear_2"};
    }
    return {};
}

}  // namespace o2g
