// LoRA on ONNX models (src/runtime/lora.h): weight tracing and the merge into initializers.
#include "runtime/lora.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <new>

#include "common/error.h"
#include "ggml.h"
#include "onnx2ggml/host_tensor.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

// "/unet/down_blocks.0/attentions.0/proj_in/Conv" -> "unet.down_blocks.0.attentions.0.proj_in": the TorchScript
// exporter names nodes after the module scope that made them, with the op last.
std::string path_from_node(const std::string& name) {
    if (name.size() < 2 || name[0] != '/') return "";
    size_t last = name.rfind('/');
    if (last == 0) return "";
    std::string p = name.substr(1, last - 1);
    for (char& c : p)
        if (c == '/') c = '.';
    return p;
}

// "unet.conv_in.weight" -> "unet.conv_in"; folded constants ("onnx::MatMul_1624") say nothing.
std::string path_from_initializer(const std::string& name) {
    const std::string w = ".weight";
    if (name.compare(0, 6, "onnx::") == 0 || name.size() <= w.size() ||
        name.compare(name.size() - w.size(), w.size(), w) != 0)
        return "";
    return name.substr(0, name.size() - w.size());
}

// torch.export's name_scopes "['', 'model', 'model.x_embedder', 'linear']": the module is the entry before the
// op's own ("model.x_embedder"). Its node and folded weight are named "node_MatMul_6" and "val_5".
std::string path_from_scopes(const std::string& scopes) {
    std::vector<std::string> items;
    for (size_t i = 0; i < scopes.size(); i++) {
        char q = scopes[i];
        if (q != '\'' && q != '"') continue;
        size_t e = scopes.find(q, i + 1);
        if (e == std::string::npos) return "";
        items.push_back(scopes.substr(i + 1, e - i - 1));
        i = e;
    }
    return items.size() >= 2 ? items[items.size() - 2] : "";
}

bool float_weight(DType t) { return t == DType::FLOAT || t == DType::FLOAT16 || t == DType::BFLOAT16; }

}  // namespace

std::vector<o2g::LoraTarget> lora_targets(const Model& m) {
    const Graph& g = m.graph;
    std::map<std::string, const Node*> producer;
    for (const Node& n : g.nodes)
        for (const std::string& o : n.outputs) producer[o] = &n;
    std::vector<o2g::LoraTarget> out;
    std::map<std::string, size_t> at;  // initializer -> target
    for (const Node& n : g.nodes) {
        if (!n.domain.empty() || n.inputs.size() < 2) continue;
        bool in_out;  // the weight as the op reads it is [in, out]
        float gain = 1;
        if (n.op_type == "MatMul") {
            in_out = true;
        } else if (n.op_type == "Gemm") {
            in_out = n.get_int("transB", 0) == 0;
            gain = n.get_float("alpha", 1.0f);
        } else if (n.op_type == "Conv") {
            in_out = false;
        } else {
            continue;
        }
        // Back to the initializer through Transpose (each flips the layout), Identity and Cast.
        std::string w = n.inputs[1];
        for (int step = 0; step < 8 && !g.initializers.count(w); step++) {
            auto p = producer.find(w);
            if (p == producer.end() || p->second->inputs.empty()) break;
            const Node& q = *p->second;
            if (q.op_type == "Transpose") {
                std::vector<int64_t> perm = q.get_ints("perm");
                if (!(perm.empty() || perm == std::vector<int64_t>{1, 0})) break;
                in_out = !in_out;
            } else if (q.op_type != "Identity" && q.op_type != "Cast") {
                break;
            }
            w = q.inputs[0];
        }
        auto init = g.initializers.find(w);
        if (init == g.initializers.end() || gain == 0) continue;
        const TensorData& td = *init->second;
        size_t rank = td.dims.size();
        if (!float_weight(td.dtype) || (n.op_type == "Conv" ? rank < 3 : rank != 2)) continue;
        o2g::LoraLayout layout = in_out ? o2g::LoraLayout::InOut : o2g::LoraLayout::OutIn;
        auto it = at.find(w);
        if (it == at.end()) {
            it = at.emplace(w, out.size()).first;
            o2g::LoraTarget t;
            t.weight = w;
            t.dims = td.dims;
            t.layout = layout;
            t.gain = gain;
            out.push_back(t);
        }
        o2g::LoraTarget& t = out[it->second];
        if (t.layout != layout || t.gain != gain) continue;  // read two ways: keep the first reading
        for (const std::string& p : {path_from_node(n.name), path_from_initializer(w), path_from_scopes(n.scopes)}) {
            bool seen = false;
            for (auto& q : t.paths) seen |= q == p;
            if (!p.empty() && !seen) t.paths.push_back(p);
        }
    }
    std::vector<o2g::LoraTarget> named;
    for (auto& t : out)
        if (!t.paths.empty()) named.push_back(std::move(t));
    return named;
}

std::vector<std::string> node_module_paths(const Node& n) {
    std::vector<std::string> r;
    for (const std::string& p : {path_from_node(n.name), path_from_scopes(n.scopes)})
        if (!p.empty() && std::find(r.begin(), r.end(), p) == r.end()) r.push_back(p);
    return r;
}

void set_initializer(Model& m, const std::string& name, const std::vector<float>& w,
                     const std::vector<int64_t>& dims) {
    std::shared_ptr<TensorData>& slot = m.graph.initializers.at(name);
    const TensorData& td = *slot;
    int64_t numel = td.numel();
    if (!dims.empty()) {
        numel = 1;
        for (int64_t d : dims) numel *= d;
    }
    O2G_CHECK(size_t(numel) == w.size(), m.path, ": initializer '", name, "' has ", numel, " elements, not ", w.size());
    O2G_CHECK(float_weight(td.dtype), m.path, ": initializer '", name, "' is ", dtype_name(td.dtype), ", not a float");
    // 64-byte aligned, so that CPU sessions can still map the weight without a copy.
    const size_t n = size_t(numel) * dtype_size(td.dtype);
    std::shared_ptr<uint8_t> buf(static_cast<uint8_t*>(::operator new(n ? n : 1, std::align_val_t(64))),
                                 [](uint8_t* p) { ::operator delete(p, std::align_val_t(64)); });
    if (td.dtype == DType::FLOAT) std::memcpy(buf.get(), w.data(), n);
    else if (td.dtype == DType::FLOAT16)
        ggml_fp32_to_fp16_row(w.data(), reinterpret_cast<ggml_fp16_t*>(buf.get()), int64_t(w.size()));
    else
        ggml_fp32_to_bf16_row(w.data(), reinterpret_cast<ggml_bf16_t*>(buf.get()), int64_t(w.size()));
    auto merged = std::make_shared<TensorData>();
    merged->name = td.name;
    merged->dtype = td.dtype;
    merged->dims = dims.empty() ? td.dims : dims;
    merged->data = buf.get();
    merged->nbytes = n;
    merged->keep = buf;
    slot = merged;
}

void apply_lora(Model& m, const std::vector<LoraFile>& files, bool quiet) {
    if (files.empty()) return;
    std::vector<o2g::LoraTarget> targets = lora_targets(m);
    o2g::merge_lora(files, targets, m.path, quiet, [&](size_t i, const std::function<void(float*)>& add) {
        const TensorData& td = *m.graph.initializers.at(targets[i].weight);
        std::vector<float> w = initializer_host(td).to_f32();
        add(w.data());
        set_initializer(m, targets[i].weight, w);
    });
}

}  // namespace onnx2ggml
