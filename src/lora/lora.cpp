// LoRA merging (src/lora/lora.h): module-to-weight matching, deltas and reports.
#include "lora/lora.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "common/error.h"
#include "ggml.h"
#include "formats/safetensors.h"
#include "onnx2ggml/host_tensor.h"
#include "onnx2ggml/program.h"

namespace onnx2ggml {

LoraFile parse_lora_arg(const std::string& arg) {
    LoraFile f;
    f.path = arg;
    size_t colon = arg.rfind(':');
    if (colon != std::string::npos && colon + 1 < arg.size()) {
        const char* s = arg.c_str() + colon + 1;
        char* end = nullptr;
        float v = std::strtof(s, &end);
        if (end && *end == '\0' && std::isfinite(v)) {
            f.path = arg.substr(0, colon);
            f.scale = v;
        }
    }
    O2G_CHECK(!f.path.empty(), "--lora needs a file: '", arg, "'");
    return f;
}

}  // namespace onnx2ggml

namespace o2g {

using onnx2ggml::fail;

namespace {

// Module paths of the targets, indexed by every suffix that starts at a component ("to_q", "attn1_to_q", ...)
// written with '_' for '.', the way kohya keys are; a LoRA module path is looked up whole.
struct TargetIndex {
    std::map<std::string, std::vector<std::pair<size_t, std::string>>> by_suffix;  // -> (target, full path)

    explicit TargetIndex(const std::vector<LoraTarget>& targets) {
        for (size_t i = 0; i < targets.size(); i++)
            for (const std::string& path : targets[i].paths) {
                std::vector<std::string> parts;
                for (size_t b = 0, e; b <= path.size(); b = e + 1) {
                    e = path.find('.', b);
                    if (e == std::string::npos) e = path.size();
                    parts.push_back(path.substr(b, e - b));
                }
                std::string suffix;
                for (size_t k = parts.size(); k-- > 0;) {
                    suffix = parts[k] + (suffix.empty() ? "" : "_" + suffix);
                    auto& v = by_suffix[suffix];
                    if (v.empty() || v.back().first != i) v.emplace_back(i, path);
                }
            }
    }
    const std::vector<std::pair<size_t, std::string>>* find(const std::string& flat_path) const {
        auto it = by_suffix.find(flat_path);
        return it == by_suffix.end() ? nullptr : &it->second;
    }
};

// A module's delta as [out, cols] = up [out, rank] @ down [rank, cols], cols = in * kernel.
struct Shape2 {
    int64_t out = 0, rank = 0, cols = 0;
};

// Why up/down cannot be added to target t ("" when they can).
std::string misfit(const LoraModule& m, const LoraTarget& t, Shape2& s) {
    const auto& u = m.up->shape;
    const auto& d = m.down->shape;
    if (u.size() < 2 || d.size() < 2 || d[0] <= 0 || u[1] != d[0] || onnx2ggml::shape_numel(u) != u[0] * u[1])
        return "up " + onnx2ggml::shape_list(u) + " and down " + onnx2ggml::shape_list(d) + " are not a LoRA pair";
    s.out = u[0];
    s.rank = d[0];
    s.cols = onnx2ggml::shape_numel(d) / d[0];
    bool fits = t.layout == LoraLayout::OutIn
                    ? t.dims.size() >= 2 && t.dims[0] == s.out && onnx2ggml::shape_numel(t.dims) == s.out * s.cols
                    : t.dims.size() == 2 && t.dims[1] == s.out && t.dims[0] == s.cols;
    if (fits) return "";
    return "delta [" + std::to_string(s.out) + ", " + std::to_string(s.cols) + "] does not fit weight '" + t.weight +
           "' " + onnx2ggml::shape_list(t.dims) + (t.layout == LoraLayout::InOut ? " ([in, out])" : "");
}

struct Contribution {
    const SafetensorsFile* file;
    const LoraModule* module;
    Shape2 shape;
    float scale;       // file scale * alpha / rank / gain
    int64_t row0 = 0;  // the first of up's rows this target takes (a fused BFL projection's part)
};

// up [out, rank] @ down [rank, cols] in the target's layout ([out, cols], or [cols, out] for InOut), by ggml's CPU
// matmul: at full size (rank 128 on 1280x1280 weights, hundreds of modules) a plain loop takes minutes.
std::vector<float> lora_product(const std::vector<float>& up, const std::vector<float>& down, const Shape2& s,
                                bool in_out) {
    const int64_t out = s.out, rank = s.rank, cols = s.cols;
    size_t floats = size_t(out * rank + rank * cols + out * cols);
    ggml_init_params p = {floats * sizeof(float) + 4 * ggml_tensor_overhead() + ggml_graph_overhead() + 4096, nullptr,
                          false};
    ggml_context* ctx = ggml_init(p);
    if (!ctx) fail("out of memory merging a LoRA module");
    // ggml_mul_mat(a, b) = b @ a^T over rows of length rank: up rows are [rank] already, down needs transposing.
    ggml_tensor* u = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, rank, out);
    ggml_tensor* dt = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, rank, cols);
    std::memcpy(u->data, up.data(), up.size() * sizeof(float));
    float* dtp = static_cast<float*>(dt->data);
    for (int64_t k = 0; k < rank; k++)
        for (int64_t j = 0; j < cols; j++) dtp[j * rank + k] = down[size_t(k * cols + j)];
    ggml_tensor* prod = in_out ? ggml_mul_mat(ctx, u, dt) : ggml_mul_mat(ctx, dt, u);  // [cols, out] / [out, cols]
    ggml_cgraph* g = ggml_new_graph(ctx);
    ggml_build_forward_expand(g, prod);
    // ggml's CPU backend through the registry: the CPU code registered for this machine's level.
    load_backends();
    ggml_backend_t cpu = ggml_backend_init_by_type(GGML_BACKEND_DEVICE_TYPE_CPU, nullptr);
    if (!cpu) {
        ggml_free(ctx);
        fail("no ggml CPU backend to merge a LoRA module");
    }
    set_backend_threads(cpu, int(std::max(1u, std::min(16u, std::thread::hardware_concurrency()))));
    const ggml_status st = ggml_backend_graph_compute(cpu, g);
    ggml_backend_free(cpu);
    if (st != GGML_STATUS_SUCCESS) {
        ggml_free(ctx);
        fail("ggml failed merging a LoRA module");
    }
    std::vector<float> r(size_t(out * cols));
    std::memcpy(r.data(), prod->data, r.size() * sizeof(float));
    ggml_free(ctx);
    return r;
}

void add_delta(float* w, const LoraTarget& t, const Contribution& c) {
    std::vector<float> up = c.file->floats(*c.module->up);
    if (c.row0 > 0 || size_t(c.shape.out * c.shape.rank) < up.size())
        up = std::vector<float>(up.begin() + c.row0 * c.shape.rank, up.begin() + (c.row0 + c.shape.out) * c.shape.rank);
    std::vector<float> d = lora_product(up, c.file->floats(*c.module->down), c.shape, t.layout == LoraLayout::InOut);
    for (size_t i = 0; i < d.size(); i++) w[i] += c.scale * d[i];
}

const char* component_words(const std::string& c) {
    if (c == "unet") return "UNet";
    if (c == "te") return "text-encoder";
    if (c == "te2") return "second-text-encoder";
    if (c == "transformer") return "transformer";
    return "";
}

std::string name_list(const std::vector<std::string>& names, size_t limit) {
    std::string r;
    for (size_t i = 0; i < names.size() && i < limit; i++) r += (i ? ", " : "") + names[i];
    if (names.size() > limit) r += ", ... (" + std::to_string(names.size() - limit) + " more)";
    return r;
}

void warn(const std::string& msg) { fprintf(stderr, "onnx2ggml: warning: %s\n", msg.c_str()); }

// What one LoRA file's modules matched, for its report.
struct FileMatches {
    std::map<size_t, std::string> claimed;                      // target -> component that set it
    std::map<std::string, std::vector<std::string>> unmatched;  // component -> module names
    std::map<std::string, std::vector<std::string>> misfits;    // component -> "name: why not merged"
    std::map<std::string, int> matched_in;                      // component -> modules merged
    std::vector<std::string> incomplete;
    std::set<size_t> touched;
    size_t matched() const {
        size_t n = 0;
        for (auto& [c, k] : matched_in) n += size_t(k);
        return n;
    }
};

// The weights a module's path may name: as written, without CLIP's "text_model_", or as an SGM UNet path.
const std::vector<std::pair<size_t, std::string>>* candidates(const TargetIndex& index, const LoraModule& m,
                                                               int unet_layers) {
    auto* cands = index.find(m.path);
    if (!cands && m.path.compare(0, 11, "text_model_") == 0) cands = index.find(m.path.substr(11));
    if (!cands && (m.component == "unet" || m.component.empty())) {
        std::string d = sgm_unet_path(m.path, unet_layers);
        if (!d.empty()) cands = index.find(d);
    }
    if (!cands && m.component != "te" && m.component != "te2") {  // Flux/Chroma's own names, one module
        std::vector<std::string> bfl = bfl_flux_paths(m.path);
        if (bfl.size() == 1) cands = index.find(bfl[0]);
    }
    return cands;
}

// alpha / rank (or / sqrt(rank) for rsLoRA), once the module's tensors are checked.
float alpha_ratio(const SafetensorsFile& f, const LoraModule& m, int64_t rank_dim) {
    f.check_floats(*m.up);  // before anything is merged or reported
    f.check_floats(*m.down);
    const float rank = float(rank_dim);
    if (m.alpha && m.alpha->numel() != 1)
        fail(f.path(), ": tensor '", printable(m.alpha->name), "' should hold one alpha value");
    float alpha = m.alpha ? f.floats(*m.alpha)[0] : m.meta_alpha > 0 ? m.meta_alpha : rank;
    return m.rslora ? alpha / std::sqrt(rank) : alpha / rank;
}

// Matches one module to its weights and adds its deltas to the plan, or records why it was not merged.
void match_module(const onnx2ggml::LoraFile& lf, const SafetensorsFile& f, const LoraModule& m,
                  const std::vector<LoraTarget>& targets, const std::vector<std::pair<size_t, std::string>>& cands,
                  FileMatches& r, std::map<size_t, std::vector<Contribution>>& plan) {
    std::vector<std::pair<size_t, Shape2>> fit;
    std::set<std::string> full_paths;
    std::string why;
    for (auto& [ti, full] : cands) {
        Shape2 s;
        std::string w = misfit(m, targets[ti], s);
        if (w.empty()) {
            fit.emplace_back(ti, s);
            full_paths.insert(full);
        } else if (why.empty()) {
            why = w;
        }
    }
    if (fit.empty()) return r.misfits[m.component].push_back(m.name + ": " + why);
    if (full_paths.size() > 1)
        return r.misfits[m.component].push_back(m.name + ": matches several modules (" +
                                                name_list({full_paths.begin(), full_paths.end()}, 4) + ")");
    const float ratio = alpha_ratio(f, m, fit[0].second.rank);
    for (auto& [ti, s] : fit) {
        auto c = r.claimed.find(ti);
        if (c != r.claimed.end() && c->second != m.component)
            return r.misfits[m.component].push_back(m.name + ": its weight was already set by " +
                                                    component_words(c->second) + " keys of this file");
    }
    for (auto& [ti, s] : fit) {
        r.claimed[ti] = m.component;
        r.touched.insert(ti);
        plan[ti].push_back({&f, &m, s, lf.scale * ratio / targets[ti].gain});
    }
    r.matched_in[m.component]++;
}

// A fused BFL projection (qkv, a single block's linear1) over the diffusers modules `paths`: up's rows split among
// them in order, as many as each one's weight has; down is shared. False when it is not one, or the model lacks one
// of its modules.
bool match_fused(const onnx2ggml::LoraFile& lf, const SafetensorsFile& f, const LoraModule& m,
                 const std::vector<LoraTarget>& targets, const TargetIndex& index,
                 const std::vector<std::string>& paths, FileMatches& r,
                 std::map<size_t, std::vector<Contribution>>& plan) {
    if (paths.size() < 2) return false;
    const auto& u = m.up->shape;
    const auto& d = m.down->shape;
    auto misfit_of = [&](const std::string& why) {
        r.misfits[m.component].push_back(m.name + ": " + why);
        return true;
    };
    if (u.size() != 2 || d.size() != 2 || d[0] <= 0 || u[1] != d[0])
        return misfit_of("up " + onnx2ggml::shape_list(u) + " and down " + onnx2ggml::shape_list(d) + " are not a LoRA pair");
    std::vector<std::pair<size_t, Shape2>> parts;
    int64_t rows = 0;
    for (const std::string& p : paths) {
        auto* cands = index.find(p);
        if (!cands) return false;
        if (cands->size() != 1) return misfit_of(p + " matches several modules");
        const LoraTarget& t = targets[(*cands)[0].first];
        const bool out_in = t.layout == LoraLayout::OutIn;
        if (t.dims.size() != 2 || (out_in ? t.dims[1] : t.dims[0]) != d[1])
            return misfit_of("down " + onnx2ggml::shape_list(d) + " does not fit weight '" + t.weight + "' " + onnx2ggml::shape_list(t.dims));
        Shape2 s;
        s.out = out_in ? t.dims[0] : t.dims[1], s.rank = d[0], s.cols = d[1];
        parts.emplace_back((*cands)[0].first, s);
        rows += s.out;
    }
    if (rows != u[0])
        return misfit_of("up has " + std::to_string(u[0]) + " rows, its modules' weights " + std::to_string(rows));
    const float ratio = alpha_ratio(f, m, d[0]);
    for (auto& [ti, s] : parts) {
        auto c = r.claimed.find(ti);
        if (c != r.claimed.end() && c->second != m.component)
            return misfit_of(std::string("its weight was already set by ") + component_words(c->second) +
                             " keys of this file");
    }
    int64_t row0 = 0;
    for (auto& [ti, s] : parts) {
        r.claimed[ti] = m.component;
        r.touched.insert(ti);
        plan[ti].push_back({&f, &m, s, lf.scale * ratio / targets[ti].gain, row0});
        row0 += s.out;
    }
    r.matched_in[m.component]++;
    return true;
}

// A file that matched nothing is an error; modules left out are warnings, per part of the pipeline.
void report_file(const onnx2ggml::LoraFile& lf, const SafetensorsFile& f, const LoraKeys& k, FileMatches& r,
                 const std::string& model, bool quiet) {
    if (r.matched() == 0) {
        std::vector<std::string> first;
        for (auto& [c, v] : r.misfits) first.insert(first.end(), v.begin(), v.end());
        if (first.empty())
            for (const LoraModule& m : k.modules) first.push_back(m.name);
        for (const std::string& u : k.unsupported) first.push_back(u);
        fail(f.path(), ": none of its ", k.modules.size(), " LoRA modules matches a weight of ", model,
             first.empty() ? std::string(" (no LoRA keys found)") : " (" + name_list(first, 3) + ")");
    }
    std::set<std::string> parts;
    for (auto& [c, v] : r.unmatched) parts.insert(c);
    for (auto& [c, v] : r.misfits) parts.insert(c);
    for (const std::string& c : parts) {
        const std::vector<std::string>& u = r.unmatched[c];
        const std::vector<std::string>& mf = r.misfits[c];
        if (r.matched_in.count(c) == 0 && !c.empty()) {  // a part of the pipeline this model is not: counted
            std::vector<std::string> all(u);
            all.insert(all.end(), mf.begin(), mf.end());
            warn(f.path() + ": " + std::to_string(all.size()) + " " + component_words(c) +
                 " LoRA modules match no weight of " + model + " (another part of the pipeline): " + name_list(all, 3));
            continue;
        }
        if (!u.empty())
            warn(f.path() + ": " + std::to_string(u.size()) + " LoRA modules match no weight of " + model + ": " +
                 name_list(u, u.size()));
        if (!mf.empty())
            warn(f.path() + ": " + std::to_string(mf.size()) + " LoRA modules not merged: " + name_list(mf, mf.size()));
    }
    if (!r.incomplete.empty())
        warn(f.path() + ": " + std::to_string(r.incomplete.size()) + " incomplete LoRA modules: " +
             name_list(r.incomplete, r.incomplete.size()));
    if (!k.unsupported.empty())
        warn(f.path() + ": " + std::to_string(k.unsupported.size()) +
             " keys are not LoRA up/down/alpha weights this reader merges (LoHa, LoKr, DoRA, biases?): " +
             name_list(k.unsupported, k.unsupported.size()));
    if (!quiet)
        fprintf(stderr, "onnx2ggml: lora %s (scale %g): %zu modules merged into %zu weights\n", f.path().c_str(),
                double(lf.scale), r.matched(), r.touched.size());
}

}  // namespace

size_t merge_lora(const std::vector<onnx2ggml::LoraFile>& files, const std::vector<LoraTarget>& targets,
                  const std::string& model, bool quiet, const LoraMerge& merge) {
    TargetIndex index(targets);
    int unet_layers = 0;  // layers_per_block, for SGM names
    while (unet_layers < 16 && index.find("down_blocks_0_resnets_" + std::to_string(unet_layers) + "_conv1"))
        unet_layers++;
    std::vector<std::unique_ptr<SafetensorsFile>> open;
    std::vector<std::unique_ptr<LoraKeys>> keys;
    std::map<size_t, std::vector<Contribution>> plan;  // target -> deltas to add
    for (const onnx2ggml::LoraFile& lf : files) {
        open.push_back(std::make_unique<SafetensorsFile>(lf.path));
        const SafetensorsFile& f = *open.back();
        keys.push_back(std::make_unique<LoraKeys>(parse_lora_keys(f)));
        const LoraKeys& k = *keys.back();
        FileMatches r;
        for (const LoraModule& m : k.modules) {
            if (!m.up || !m.down) {
                const char* what = m.up ? " (no down weight)" : m.down ? " (no up weight)" : " (alpha only)";
                r.incomplete.push_back(m.name + what);
            } else if (auto* cands = candidates(index, m, unet_layers)) {
                match_module(lf, f, m, targets, *cands, r, plan);
            } else if (!match_fused(lf, f, m, targets, index, bfl_flux_paths(m.path), r, plan)) {
                r.unmatched[m.component].push_back(m.name);
            }
        }
        report_file(lf, f, k, r, model, quiet);
    }
    for (auto& entry : plan) {  // not a structured binding: clang 14 cannot capture one in the lambda
        const auto& list = entry.second;
        const LoraTarget& t = targets[entry.first];
        merge(entry.first, [&](float* w) {
            for (const Contribution& c : list) add_delta(w, t, c);
        });
    }
    return plan.size();
}

}  // namespace o2g
