// LoRA key formats (src/lora/lora.h): sorts a safetensors file's tensor names into modules with up/down weights.
#include <cmath>
#include <map>

#include "formats/checkpoint_keys.h"
#include "formats/json.h"
#include "lora/lora.h"
#include "formats/safetensors.h"

namespace o2g {

namespace {

bool ends_with(const std::string& s, const std::string& t) {
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// kohya/A1111: lora_unet_<path>, lora_te_<path> (SD 1.x/2.x), lora_te1_/lora_te2_ (SDXL's two text encoders).
struct KohyaPrefix {
    const char* prefix;
    const char* component;
};
const KohyaPrefix kKohya[] = {{"lora_unet_", "unet"}, {"lora_te1_", "te"}, {"lora_te2_", "te2"}, {"lora_te_", "te"}};

// Dotted keys: the first path component may name the pipeline part.
std::string component_of(const std::string& first) {
    if (first == "unet") return "unet";
    if (first == "text_encoder") return "te";
    if (first == "text_encoder_2") return "te2";
    if (first == "transformer") return "transformer";
    return "";
}

// Prefix of a component's entries in diffusers' lora_adapter_metadata.
std::string metadata_prefix(const std::string& component) {
    if (component == "unet") return "unet.";
    if (component == "te") return "text_encoder.";
    if (component == "te2") return "text_encoder_2.";
    if (component == "transformer") return "transformer.";
    return "";
}

// Splits a dotted LoRA key into (stem, role): role 'd' down, 'u' up, 'a' alpha; ' ' when not a LoRA weight.
std::pair<std::string, char> split_dotted(const std::string& k) {
    // PEFT: PATH.lora_A.weight, or PATH.lora_A.ADAPTER.weight in a raw PEFT state dict.
    for (const char* ab : {".lora_A.", ".lora_B."}) {
        size_t p = k.rfind(ab);
        if (p == std::string::npos) continue;
        std::string rest = k.substr(p + 8);
        if (rest == "weight" || (ends_with(rest, ".weight") && rest.find('.') == rest.size() - 7))
            return {k.substr(0, p), ab[6] == 'A' ? 'd' : 'u'};
    }
    static const std::pair<const char*, char> suffixes[] = {
        {".lora.down.weight", 'd'},  {".lora.up.weight", 'u'},  // LoRACompatibleLinear/Conv (diffusers < 0.22)
        {".lora_linear_layer.down.weight", 'd'}, {".lora_linear_layer.up.weight", 'u'},  // text encoder MLPs
        {"_lora.down.weight", 'd'}, {"_lora.up.weight", 'u'},  // attention processors: attn1.processor.to_q_lora
        {".lora_down.weight", 'd'}, {".lora_up.weight", 'u'},  // kohya spelling on a dotted path
        {".alpha", 'a'},
    };
    for (auto& [s, role] : suffixes)
        if (ends_with(k, s)) {
            std::string stem = k.substr(0, k.size() - std::string(s).size());
            if (s[0] == '_') stem += "_lora";  // kept: the processor spelling is rewritten below
            return {stem, role};
        }
    return {"", ' '};
}

// Rewrites the attention-processor spelling (`attn1.processor.to_q_lora`, `self_attn.to_q_lora`) to module paths.
std::string processor_path(std::string stem, const std::string& component) {
    if (!ends_with(stem, "_lora")) return stem;
    stem.resize(stem.size() - 5);
    size_t dot = stem.rfind('.');
    std::string parent = dot == std::string::npos ? "" : stem.substr(0, dot), leaf = stem.substr(dot + 1);
    if (ends_with(parent, ".processor")) parent.resize(parent.size() - 10);
    bool clip = component == "te" || component == "te2" || ends_with(parent, "self_attn");
    static const std::map<std::string, std::string> clip_names = {
        {"to_q", "q_proj"}, {"to_k", "k_proj"}, {"to_v", "v_proj"}, {"to_out", "out_proj"}};
    if (clip && clip_names.count(leaf)) leaf = clip_names.at(leaf);
    else if (leaf == "to_out") leaf = "to_out.0";
    return parent.empty() ? leaf : parent + "." + leaf;
}

// The PEFT adapter config diffusers stores in the header (`lora_adapter_metadata`, keys prefixed per part).
struct AdapterMeta {
    Json json;
    bool present = false;
    const Json* get(const std::string& component, const std::string& key) const {
        if (!present) return nullptr;
        if (const Json* v = json.get(metadata_prefix(component) + key)) return v;
        return json.get(key);
    }
};

}  // namespace

LoraKeys parse_lora_keys(const SafetensorsFile& f) {
    AdapterMeta meta;
    auto m = f.metadata().find("lora_adapter_metadata");
    if (m != f.metadata().end()) {
        try {
            meta.json = parse_json(m->second.data(), m->second.size());
            meta.present = meta.json.kind == Json::Object;
        } catch (const std::exception&) {
            // Not ours to judge: without it, alphas default to the rank (scale 1), as in diffusers.
        }
    }
    LoraKeys out;
    std::map<std::string, size_t> index;  // component + ":" + path -> module
    auto module = [&](const std::string& component, const std::string& path, const std::string& dotted,
                      const std::string& name) -> LoraModule& {
        std::string key = component + ":" + path;
        auto it = index.find(key);
        if (it != index.end()) return out.modules[it->second];
        index[key] = out.modules.size();
        LoraModule mod;
        mod.name = printable(name);
        mod.component = component;
        mod.path = path;
        mod.dotted = dotted;
        out.modules.push_back(mod);
        return out.modules.back();
    };
    for (const SafeTensor& t : f.tensors()) {
        const std::string& k = t.name;
        const KohyaPrefix* kp = nullptr;
        for (const KohyaPrefix& p : kKohya)
            if (k.starts_with(p.prefix)) {
                kp = &p;
                break;
            }
        if (kp) {
            size_t dot = k.find('.');
            std::string stem = k.substr(0, dot), role = dot == std::string::npos ? "" : k.substr(dot + 1);
            char r = role == "lora_down.weight" ? 'd' : role == "lora_up.weight" ? 'u' : role == "alpha" ? 'a' : ' ';
            if (r == ' ') {
                out.unsupported.push_back(printable(k));
                continue;
            }
            LoraModule& mod = module(kp->component, stem.substr(std::string(kp->prefix).size()), "", stem);
            (r == 'd' ? mod.down : r == 'u' ? mod.up : mod.alpha) = &t;
            continue;
        }
        auto [stem, r] = split_dotted(k);
        if (r == ' ' || stem.empty()) {
            out.unsupported.push_back(printable(k));
            continue;
        }
        std::string name = stem;
        if (stem.starts_with("base_model.model.")) stem = stem.substr(17);
        std::string component = component_of(stem.substr(0, stem.find('.')));
        if (!component.empty()) stem = stem.substr(std::min(stem.size(), stem.find('.') + 1));
        stem = processor_path(stem, component);
        LoraModule& mod = module(component, flat_name(stem), stem, name);
        (r == 'd' ? mod.down : r == 'u' ? mod.up : mod.alpha) = &t;
    }
    // PEFT alphas: per-module patterns first, then the adapter's lora_alpha.
    for (LoraModule& mod : out.modules) {
        if (const Json* rs = meta.get(mod.component, "use_rslora")) mod.rslora = rs->kind == Json::Bool && rs->b;
        const Json* a = meta.get(mod.component, "lora_alpha");
        if (a && a->kind == Json::Number) mod.meta_alpha = float(a->num);
        const Json* pat = meta.get(mod.component, "alpha_pattern");
        if (pat && pat->kind == Json::Object && !mod.dotted.empty())
            for (auto& [p, v] : pat->obj)
                if (v.kind == Json::Number && (mod.dotted == p || ends_with(mod.dotted, "." + p)))
                    mod.meta_alpha = float(v.num);
    }
    return out;
}

}  // namespace o2g
