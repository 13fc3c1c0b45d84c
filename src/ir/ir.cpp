#include "ir/ir.h"

#include "common/error.h"

namespace onnx2ggml {

int64_t TensorData::numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

const Attribute* Node::attr(const std::string& n) const {
    for (const auto& a : attrs)
        if (a.name == n) return &a;
    return nullptr;
}

int64_t Node::get_int(const std::string& n, int64_t def) const {
    const Attribute* a = attr(n);
    return a ? a->i : def;
}

float Node::get_float(const std::string& n, float def) const {
    const Attribute* a = attr(n);
    if (!a) return def;
    return a->type == AttrType::INT ? float(a->i) : a->f;
}

std::string Node::get_string(const std::string& n, const std::string& def) const {
    const Attribute* a = attr(n);
    return a ? a->s : def;
}

std::vector<int64_t> Node::get_ints(const std::string& n, const std::vector<int64_t>& def) const {
    const Attribute* a = attr(n);
    return a ? a->ints : def;
}

std::vector<float> Node::get_floats(const std::string& n, const std::vector<float>& def) const {
    const Attribute* a = attr(n);
    return a ? a->floats : def;
}

std::string Node::describe() const {
    std::string d = op_type;
    if (!domain.empty() && domain != "ai.onnx") d = domain + "." + d;
    d += " node '" + name + "'";
    return d;
}

int64_t Model::opset(const std::string& domain) const {
    auto it = opsets.find(domain);
    if (it == opsets.end() && domain.empty()) it = opsets.find("ai.onnx");
    return it == opsets.end() ? 0 : it->second;
}

}  // namespace onnx2ggml
