// LDM/SGM single-file checkpoint keys as diffusers names (src/formats/checkpoint_keys.h).
#include "formats/checkpoint_keys.h"

#include <algorithm>
#include <cstdlib>

#include "lora/lora.h"
#include "formats/safetensors.h"

namespace o2g {

namespace {

bool starts_with(const std::string& s, const std::string& t) { return s.compare(0, t.size(), t) == 0; }

std::string join(const std::vector<std::string>& p, size_t from, size_t to, char sep) {
    std::string r;
    for (size_t i = from; i < to && i < p.size(); i++) r += (i > from ? std::string(1, sep) : "") + p[i];
    return r;
}

bool is_index(const std::string& s) {
    return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "input_blocks.1.1.proj_in.weight" -> "down_blocks_0_attentions_0_proj_in_weight" (flat: '_' for '.').
std::string unet_name(const std::string& key, int layers) {
    size_t dot = key.rfind('.');
    if (dot == std::string::npos) return "";
    std::vector<std::string> mod = split_path(key.substr(0, dot));
    std::string path = sgm_unet_path(join(mod, 0, mod.size(), '_'), layers);
    return path.empty() ? "" : path + "_" + key.substr(dot + 1);
}

// The original VAE (encoder.down.N.block.M, mid.attn_1.q, decoder.up.N counted from the bottom) in diffusers'
// AutoencoderKL names, dotted; `levels` is the number of decoder levels.
std::string vae_name(const std::string& key, int levels, bool& squeeze) {
    std::vector<std::string> p = split_path(key);
    squeeze = false;
    if (p.size() < 2) return "";
    const std::string& param = p.back();
    if (p[0] == "quant_conv" || p[0] == "post_quant_conv") return p.size() == 2 ? key : "";
    if (p[0] != "encoder" && p[0] != "decoder") return "";
    std::string part = p[0], rest = join(p, 1, p.size() - 1, '.');
    if (rest == "conv_in" || rest == "conv_out") return part + "." + rest + "." + param;
    if (rest == "norm_out") return part + ".conv_norm_out." + param;
    if (p.size() >= 5 && (p[1] == "down" || p[1] == "up") && is_index(p[2])) {
        int level = std::atoi(p[2].c_str());
        if (p[1] == "up") {
            if (level >= levels) return "";
            level = levels - 1 - level;
        }
        std::string blocks = part + "." + p[1] + "_blocks." + std::to_string(level) + ".";
        if (p[3] == "block" && p.size() == 7 && is_index(p[4])) {
            std::string layer = p[5] == "nin_shortcut" ? "conv_shortcut" : p[5];
            return blocks + "resnets." + p[4] + "." + layer + "." + param;
        }
        if ((p[3] == "downsample" || p[3] == "upsample") && p.size() == 6 && p[4] == "conv")
            return blocks + (p[3] == "downsample" ? "downsamplers" : "upsamplers") + ".0.conv." + param;
        return "";
    }
    if (p.size() == 5 && p[1] == "mid" && (p[2] == "block_1" || p[2] == "block_2"))
        return part + ".mid_block.resnets." + (p[2] == "block_1" ? "0." : "1.") + p[3] + "." + param;
    if (p.size() == 5 && p[1] == "mid" && p[2] == "attn_1") {
        static const std::pair<const char*, const char*> attn[] = {
            {"norm", "group_norm"}, {"q", "to_q"}, {"k", "to_k"}, {"v", "to_v"}, {"proj_out", "to_out.0"}};
        for (auto& [ldm, diffusers] : attn)
            if (p[3] == ldm) {
                squeeze = p[3] != "norm" && param == "weight";
                return part + ".mid_block.attentions.0." + diffusers + "." + param;
            }
    }
    return "";
}

}  // namespace

std::string flat_name(std::string s) {
    for (char& c : s)
        if (c == '.') c = '_';
    return s;
}

std::vector<std::string> split_path(const std::string& s) {
    std::vector<std::string> parts;
    for (size_t b = 0, e; b <= s.size(); b = e + 1) {
        e = s.find('.', b);
        if (e == std::string::npos) e = s.size();
        parts.push_back(s.substr(b, e - b));
    }
    return parts;
}

std::string part_words(const std::string& part) {
    if (part == "unet") return "UNet";
    if (part == "vae") return "VAE";
    if (part == "text_encoder") return "text encoder";
    if (part == "text_encoder_2") return "second text encoder";
    return "checkpoint";
}

CheckpointParts read_checkpoint_keys(const SafetensorsFile& f) {
    static const std::string kUnet = "model.diffusion_model.", kVae = "first_stage_model.",
                             kClip = "cond_stage_model.transformer.", kClipXl = "conditioner.embedders.0.transformer.";
    static const char* kOpenClip[] = {"cond_stage_model.model.", "conditioner.embedders.1.model."};
    // What the UNet and VAE mappings need to know of the layout: layers per block (the first downsampler is
    // input_blocks.{layers + 1}.0.op) and the number of decoder levels.
    int unet_layers = 0, vae_levels = 0, last_input = 0;
    for (const SafeTensor& t : f.tensors()) {
        if (starts_with(t.name, kUnet + "input_blocks.")) {
            std::vector<std::string> p = split_path(t.name.substr(kUnet.size()));
            if (p.size() > 3 && is_index(p[1])) {
                int i = std::atoi(p[1].c_str());
                last_input = std::max(last_input, i);
                if (p[2] == "0" && p[3] == "op" && i >= 2 && (unet_layers == 0 || i - 1 < unet_layers))
                    unet_layers = i - 1;
            }
        }
        if (starts_with(t.name, kVae + "decoder.up.")) {
            std::vector<std::string> p = split_path(t.name.substr(kVae.size()));
            if (p.size() > 2 && is_index(p[2])) vae_levels = std::max(vae_levels, std::atoi(p[2].c_str()) + 1);
        }
    }
    if (unet_layers == 0) unet_layers = last_input;  // one level: no downsampler

    // Keys without an LDM prefix are diffusers names, unless the file is an LDM checkpoint (then: EMA copies, ...).
    bool has_ldm = false;
    for (const SafeTensor& t : f.tensors())
        has_ldm |= starts_with(t.name, kUnet) || starts_with(t.name, kVae) || starts_with(t.name, kClip) ||
                   starts_with(t.name, kClipXl) || starts_with(t.name, kOpenClip[0]) || starts_with(t.name, kOpenClip[1]);
    CheckpointParts out;
    for (const SafeTensor& t : f.tensors()) {
        const std::string& k = t.name;
        std::string part, name;
        CheckpointEntry e;
        e.tensor = &t;
        bool ldm = true;
        if (starts_with(k, kUnet)) {
            part = "unet";
            name = unet_name(k.substr(kUnet.size()), unet_layers);
        } else if (starts_with(k, kVae)) {
            part = "vae";
            name = flat_name(vae_name(k.substr(kVae.size()), vae_levels, e.squeeze));
        } else if (starts_with(k, kClip) || starts_with(k, kClipXl)) {
            part = "text_encoder";
            name = k.substr(starts_with(k, kClip) ? kClip.size() : kClipXl.size());
            if (starts_with(name, "text_model.")) name = name.substr(11);
            name = flat_name(name);
        } else if (starts_with(k, kOpenClip[0]) || starts_with(k, kOpenClip[1])) {
            out.unsupported.push_back(printable(k));
            continue;
        } else if (has_ldm) {
            out.unknown.push_back(printable(k));
            continue;
        } else {
            ldm = false;
            name = starts_with(k, "text_model.") ? k.substr(11) : k;
            name = flat_name(name);
        }
        if (name.empty()) {
            if (ldm) out.unknown.push_back(printable(k));
            continue;
        }
        out.parts[part][name] = e;
    }
    return out;
}

}  // namespace o2g
