// Checkpoint import (src/runtime/checkpoint_import.h): which checkpoint tensor each initializer is, and the copy.
#include "runtime/checkpoint_import.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "common/error.h"
#include "ggml.h"
#include "gguf.h"
#include "formats/checkpoint_keys.h"
#include "formats/safetensors.h"
#include "onnx2ggml/host_tensor.h"
#include "runtime/lora.h"

namespace onnx2ggml {

namespace {

bool ends_with(const std::string& s, const std::string& t) {
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

bool float_init(const TensorData& t) {
    return t.dtype == DType::FLOAT || t.dtype == DType::FLOAT16 || t.dtype == DType::BFLOAT16;
}

std::string name_list(const std::vector<std::string>& names, size_t limit) {
    std::string r;
    for (size_t i = 0; i < names.size() && i < limit; i++) r += (i ? ", " : "") + names[i];
    if (names.size() > limit) r += ", ...";
    return r;
}

// A name an initializer may have in the checkpoint: a dotted parameter path, and whether the initializer holds the
// transposed matrix ([in, out], a folded MatMul weight).
struct Candidate {
    std::vector<std::string> parts;
    bool in_out = false;
    bool weight = false;  // names a module parameter: the initializer must be filled
};

// Every float initializer's candidate names: its own (TorchScript keeps parameter names), the module paths of the
// MatMul/Gemm/Conv that reads it (traced as for LoRA), and the module of a node that reads it as a norm's scale or
// shift (GroupNorm exports as InstanceNormalization, then Mul and Add by [C, 1, 1] constants) or a bias.
std::map<std::string, std::vector<Candidate>> candidates(const Model& m) {
    std::map<std::string, std::vector<Candidate>> out;
    const auto& inits = m.graph.initializers;
    auto param_name = [](const std::string& name) {
        return name.compare(0, 6, "onnx::") != 0 && (ends_with(name, ".weight") || ends_with(name, ".bias"));
    };
    for (auto& [name, t] : inits) {
        if (!float_init(*t) || t->from_constant) continue;  // a Constant node's value: not a parameter
        out[name];
        if (param_name(name)) out[name].push_back({o2g::split_path(name), false, true});
    }
    // The TorchScript exporter merges equal tensors into one initializer that Identity nodes pass on under each
    // parameter's own name.
    std::map<std::string, std::string> root;
    auto root_of = [&](const std::string& v) {
        auto r = root.find(v);
        return r == root.end() ? v : r->second;
    };
    for (const Node& n : m.graph.nodes) {
        if (!n.domain.empty() || n.op_type != "Identity" || n.inputs.empty() || n.outputs.empty()) continue;
        std::string r = root_of(n.inputs[0]);
        if (!out.count(r)) continue;
        root[n.outputs[0]] = r;
        if (param_name(n.outputs[0])) out[r].push_back({o2g::split_path(n.outputs[0]), false, true});
    }
    for (const o2g::LoraTarget& t : lora_targets(m)) {
        if (t.gain != 1 || !out.count(t.weight)) continue;
        for (const std::string& p : t.paths)
            out[t.weight].push_back({o2g::split_path(p + ".weight"), t.layout == o2g::LoraLayout::InOut, true});
    }
    for (const Node& n : m.graph.nodes) {
        if (!n.domain.empty()) continue;
        for (size_t i = 0; i < n.inputs.size(); i++) {
            auto it = out.find(root_of(n.inputs[i]));
            if (it == out.end()) continue;
            const std::string& op = n.op_type;
            std::string role;
            if (op == "Mul" || op == "Gather" || ((op == "LayerNormalization" || op == "GroupNormalization") && i == 1))
                role = "weight";
            else if (op == "Add" || ((op == "Conv" || op == "Gemm" || op == "LayerNormalization" ||
                                      op == "GroupNormalization") && i == 2))
                role = "bias";
            if (role.empty()) continue;
            for (const std::string& p : node_module_paths(n)) it->second.push_back({o2g::split_path(p + "." + role), false, false});
        }
    }
    return out;
}

using Part = std::map<std::string, o2g::CheckpointEntry>;

// The checkpoint name a candidate has in `part`: its longest suffix of at least two components, '_'-joined.
const std::pair<const std::string, o2g::CheckpointEntry>* lookup(const Part& part, const Candidate& c) {
    for (size_t s = 0; s + 2 <= c.parts.size(); s++) {
        std::string k;
        for (size_t i = s; i < c.parts.size(); i++) k += (i > s ? "_" : "") + c.parts[i];
        auto it = part.find(k);
        if (it != part.end()) return &*it;
    }
    return nullptr;
}

// Whether some tensor of `part` belongs to the candidate's module (a norm without its Mul's name is still a norm).
bool module_in(const Part& part, const Candidate& c) {
    for (size_t s = 0; s + 2 <= c.parts.size(); s++) {
        std::string k;
        for (size_t i = s; i + 1 < c.parts.size(); i++) k += (i > s ? "_" : "") + c.parts[i];
        k += "_";
        auto it = part.lower_bound(k);
        if (it != part.end() && it->first.compare(0, k.size(), k) == 0) return true;
    }
    return false;
}

std::vector<int64_t> squeezed(const std::vector<int64_t>& s) {
    std::vector<int64_t> r;
    for (int64_t d : s)
        if (d != 1) r.push_back(d);
    return r;
}

struct KeyMatch {
    const o2g::SafeTensor* tensor;
    bool in_out;
};

// Whether a checkpoint tensor fits an initializer (the same dims up to size-1 ones, or the transpose of a matrix).
bool fits(const o2g::SafeTensor& t, const o2g::CheckpointEntry& e, const TensorData& init, bool in_out) {
    std::vector<int64_t> s = t.shape;
    if (e.squeeze)
        while (s.size() > 2 && s.back() == 1) s.pop_back();
    if (in_out) return s.size() == 2 && init.dims.size() == 2 && init.dims[0] == s[1] && init.dims[1] == s[0];
    return squeezed(s) == squeezed(init.dims);
}

std::vector<float> values(const o2g::SafetensorsFile& f, const KeyMatch& mt) {
    std::vector<float> v = f.floats(*mt.tensor);
    if (!mt.in_out) return v;
    const int64_t rows = mt.tensor->shape[0], cols = int64_t(v.size()) / rows;  // [out, in] -> [in, out]
    std::vector<float> t(v.size());
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) t[size_t(c * rows + r)] = v[size_t(r * cols + c)];
    return t;
}

// The part to import: the one asked for, or the one whose tensors fill the most initializers.
std::string choose_part(const Model& m, const o2g::SafetensorsFile& f, const o2g::CheckpointParts& cp,
                        const std::map<std::string, std::vector<Candidate>>& cands, const ImportOptions& o,
                        const std::string& checkpoint) {
    std::string part_name = o.part == "diffusers" ? "" : o.part;
    if (o.part == "auto") {
        size_t best = 0;
        for (auto& [p, part] : cp.parts) {
            size_t n = 0;
            for (auto& [init, cs] : cands)
                for (const Candidate& c : cs)
                    if (auto hit = lookup(part, c)) {
                        n += fits(*hit->second.tensor, hit->second, *m.graph.initializers.at(init), c.in_out);
                        break;
                    }
            if (n > best) best = n, part_name = p;
        }
        if (best == 0) {
            std::string parts;
            for (auto& [p, part] : cp.parts)
                parts += (parts.empty() ? "" : ", ") + o2g::part_words(p) + " " + std::to_string(part.size());
            fail(checkpoint, ": none of its ", f.tensors().size(), " tensors fits a weight of ", m.path,
                 parts.empty() ? std::string() : " (tensors per part: " + parts + ")",
                 cp.unsupported.empty() ? std::string()
                                        : "; OpenCLIP-format text encoders (cond_stage_model.model.*, "
                                          "conditioner.embedders.1.model.*) are not supported");
        }
    } else if (o.part != "unet" && o.part != "vae" && o.part != "text_encoder" && o.part != "diffusers") {
        fail("--part must be auto, unet, vae, text_encoder or diffusers, not '", o.part, "'");
    }
    return part_name;
}

// The warnings and the summary line of an import.
void report_import(const Model& m, const std::string& checkpoint, const ImportOptions& o, const o2g::CheckpointParts& cp,
                   const Part& part, const std::string& part_name, const std::set<std::string>& used,
                   const std::vector<std::string>& unfilled, size_t filled, size_t weights) {
    auto warn = [&](const std::string& s) {
        if (!o.quiet) fprintf(stderr, "onnx2ggml: warning: %s: %s\n", checkpoint.c_str(), s.c_str());
    };
    if (!unfilled.empty())
        warn(std::to_string(unfilled.size()) + " weights of " + m.path + " keep their own data (first: " +
             name_list(unfilled, 3) + ")");
    std::vector<std::string> unused;
    for (auto& [n, e] : part)
        if (!used.count(e.tensor->name)) unused.push_back(o2g::printable(e.tensor->name));
    if (!unused.empty())
        warn(std::to_string(unused.size()) + " " + o2g::part_words(part_name) + " tensors match no weight of " +
             m.path + " (first: " + name_list(unused, 3) + ")");
    std::string others;
    for (auto& [p, other] : cp.parts)
        if (p != part_name) others += (others.empty() ? "" : ", ") + o2g::part_words(p) + " " + std::to_string(other.size());
    if (!cp.unsupported.empty())
        warn(std::to_string(cp.unsupported.size()) + " OpenCLIP text-encoder tensors are not read (that format is not "
             "supported; first: " + name_list(cp.unsupported, 1) + ")");
    if (!o.quiet) {
        fprintf(stderr, "onnx2ggml: import %s -> %s: %s, %zu of %zu weights filled from %zu tensors%s%s\n",
                checkpoint.c_str(), m.path.c_str(), o2g::part_words(part_name).c_str(), filled, weights, used.size(),
                others.empty() ? "" : "; other parts not used: ", others.c_str());
        if (!cp.unknown.empty())
            fprintf(stderr, "onnx2ggml: %zu tensors of no known part skipped (first: %s)\n", cp.unknown.size(),
                    name_list(cp.unknown, 3).c_str());
    }
}

}  // namespace

void import_checkpoint(Model& m, const std::string& checkpoint, const ImportOptions& o) {
    o2g::SafetensorsFile f(checkpoint);
    o2g::CheckpointParts cp = o2g::read_checkpoint_keys(f);
    auto cands = candidates(m);

    const std::string part_name = choose_part(m, f, cp, cands, o, checkpoint);
    const Part empty;
    auto pit = cp.parts.find(part_name);
    const Part& part = pit == cp.parts.end() ? empty : pit->second;

    std::set<std::string> used;
    std::vector<std::string> unfilled;
    size_t filled = 0, weights = 0;
    std::map<std::string, std::vector<float>> data;
    std::string first_misfit, shared;  // the first of each error: a wrong model shows as misfits first
    for (auto& [init, cs] : cands) {
        const TensorData& td = *m.graph.initializers.at(init);
        std::vector<KeyMatch> ok;
        std::string misfit;
        bool weight = false;
        for (const Candidate& c : cs) {
            auto hit = lookup(part, c);
            weight |= c.weight || (hit != nullptr) || module_in(part, c);
            if (!hit) continue;
            const o2g::SafeTensor& t = *hit->second.tensor;
            if (fits(t, hit->second, td, c.in_out)) {
                bool seen = false;
                for (const KeyMatch& mt : ok) seen |= mt.tensor == &t;
                if (!seen) ok.push_back({&t, c.in_out});
            } else if (misfit.empty()) {
                misfit = checkpoint + ": tensor '" + o2g::printable(t.name) + "' " + onnx2ggml::shape_list(t.shape) +
                         " does not fit initializer '" + init + "' " + onnx2ggml::shape_list(td.dims) +
                         (c.in_out ? " (a transposed [in, out] matrix)" : "") + " of " + m.path;
            }
        }
        if (!weight) continue;
        weights++;
        if (ok.empty()) {
            if (!misfit.empty() && first_misfit.empty()) first_misfit = misfit;
            unfilled.push_back(init);
            continue;
        }
        std::vector<float> v = values(f, ok[0]);
        for (size_t k = 1; k < ok.size() && shared.empty(); k++)
            if (values(f, ok[k]) != v)
                shared = m.path + ": initializer '" + init + "' is shared by '" + o2g::printable(ok[0].tensor->name) +
                         "' and '" + o2g::printable(ok[k].tensor->name) + "', which differ in " + checkpoint +
                         " (the exporter merged equal tensors); export the model again with weights that differ";
        for (const KeyMatch& mt : ok) used.insert(mt.tensor->name);
        data[init] = std::move(v);
        filled++;
    }
    if (!first_misfit.empty()) fail(first_misfit);
    if (!shared.empty()) fail(shared);
    if (!unfilled.empty() && !o.allow_partial)
        fail(m.path, ": ", unfilled.size(), " of its ", weights, " weights are not in ", checkpoint, " (",
             o2g::part_words(part_name), " tensors; first: ", name_list(unfilled, 3),
             "); --allow-partial keeps the model's own data for them");
    for (auto& [init, v] : data) set_initializer(m, init, v);

    report_import(m, checkpoint, o, cp, part, part_name, used, unfilled, filled, weights);
}

void apply_weights_file(Model& m, const std::string& path, bool quiet) {
    ggml_context* ctx = nullptr;
    gguf_init_params gp = {false, &ctx};
    gguf_context* g = gguf_init_from_file(path.c_str(), gp);
    if (!g) fail(path, ": not a readable GGUF weights file");
    std::unique_ptr<gguf_context, void (*)(gguf_context*)> g_owner(g, gguf_free);
    std::unique_ptr<ggml_context, void (*)(ggml_context*)> ctx_owner(ctx, ggml_free);
    int64_t k = gguf_find_key(g, "onnx2ggml.names");
    if (k < 0 || gguf_get_kv_type(g, k) != GGUF_TYPE_ARRAY || gguf_get_arr_type(g, k) != GGUF_TYPE_STRING)
        fail(path, ": not an onnx2ggml weights file (no onnx2ggml.names)");
    size_t taken = 0;
    std::set<std::string> seen;
    for (size_t i = 0, n = gguf_get_arr_n(g, k); i < n; i++) {
        std::string name = gguf_get_arr_str(g, k, i);
        auto it = m.graph.initializers.find(name);
        if (it == m.graph.initializers.end()) continue;  // a constant the graph folds from initializers
        const TensorData& td = *it->second;
        char tname[32];  // a buffer: gcc 12 warns (-Wrestrict) on "w" + std::to_string(i) here
        snprintf(tname, sizeof tname, "w%zu", i);
        ggml_tensor* t = ggml_get_tensor(ctx, tname);
        if (!t) fail(path, ": tensor '", name, "' is missing");
        if (ggml_nelements(t) != td.numel())
            fail(path, ": tensor '", name, "' has ", ggml_nelements(t), " elements; the initializer of ", m.path,
                 " is ", onnx2ggml::shape_list(td.dims));
        if (!float_init(td) || !(t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16 || t->type == GGML_TYPE_BF16)) {
            // Integer constants: the same type and size, or the file is not of this model.
            const std::map<DType, ggml_type> same = {{DType::INT32, GGML_TYPE_I32}, {DType::INT8, GGML_TYPE_I8},
                                                     {DType::INT16, GGML_TYPE_I16}};
            auto s = same.find(td.dtype);
            if (s == same.end() || s->second != t->type)
                fail(path, ": tensor '", name, "' is ", ggml_type_name(t->type), "; the initializer of ", m.path, " is ",
                     dtype_name(td.dtype));
            continue;  // integer data is not a weight anyone imports
        }
        std::vector<float> v(size_t(ggml_nelements(t)));
        if (t->type == GGML_TYPE_F32) std::memcpy(v.data(), t->data, v.size() * sizeof(float));
        else if (t->type == GGML_TYPE_F16)
            ggml_fp16_to_fp32_row(static_cast<const ggml_fp16_t*>(t->data), v.data(), int64_t(v.size()));
        else
            ggml_bf16_to_fp32_row(static_cast<const ggml_bf16_t*>(t->data), v.data(), int64_t(v.size()));
        set_initializer(m, name, v);
        seen.insert(name);
        taken++;
    }
    if (taken == 0) fail(path, ": none of its tensors is an initializer of ", m.path);
    std::vector<std::string> missing;
    for (auto& [name, t] : m.graph.initializers)
        if (float_init(*t) && !t->from_constant && t->numel() > 1 && !seen.count(name)) missing.push_back(name);
    if (!missing.empty() && !quiet)
        fprintf(stderr, "onnx2ggml: warning: %s: %zu float initializers of %s are not in it and keep their data "
                "(first: %s)\n", path.c_str(), missing.size(), m.path.c_str(), name_list(missing, 3).c_str());
}

}  // namespace onnx2ggml
