// In-memory ONNX model: graph, nodes, values with symbolic shapes, and zero-copy tensor data.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnx2ggml/dtype.h"

namespace onnx2ggml {

// A dimension: a known size (value >= 0) or a symbol (param non-empty, or unnamed if both unset).
struct Dim {
    int64_t value = -1;
    std::string param;
    bool known() const { return value >= 0; }
};

struct ValueInfo {
    std::string name;
    DType dtype = DType::UNDEFINED;
    bool is_tensor = true;  // false for sequence/map/optional types
    bool has_shape = false;
    std::vector<Dim> dims;
};

// Tensor payload. `data` points into memory owned by `keep` (file mapping or owned buffer).
struct TensorData {
    std::string name;
    DType dtype = DType::UNDEFINED;
    std::vector<int64_t> dims;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
    std::shared_ptr<const void> keep;
    bool mapped = false;  // data lives in a read-only file mapping (pages can be dropped and re-read)
    bool from_constant = false;  // a float Constant node's value, made an initializer at load (not a parameter)

    int64_t numel() const;
};

struct Graph;

enum class AttrType { UNDEFINED = 0, FLOAT = 1, INT = 2, STRING = 3, TENSOR = 4, GRAPH = 5,
                      SPARSE_TENSOR = 11, TYPE_PROTO = 13, FLOATS = 6, INTS = 7, STRINGS = 8,
                      TENSORS = 9, GRAPHS = 10, SPARSE_TENSORS = 12, TYPE_PROTOS = 14 };

struct Attribute {
    std::string name;
    AttrType type = AttrType::UNDEFINED;
    float f = 0;
    int64_t i = 0;
    std::string s;
    std::shared_ptr<TensorData> t;
    std::shared_ptr<Graph> g;
    std::vector<float> floats;
    std::vector<int64_t> ints;
    std::vector<std::string> strings;
    std::string ref_attr_name;
};

struct Node {
    std::string name;
    std::string op_type;
    std::string domain;
    std::vector<std::string> inputs;   // "" marks an omitted optional input
    std::vector<std::string> outputs;
    std::vector<Attribute> attrs;
    std::string scopes;  // torch.export's module scopes ("['', 'model', 'model.x_embedder', 'linear']"), if recorded

    const Attribute* attr(const std::string& n) const;
    bool has(const std::string& n) const { return attr(n) != nullptr; }
    int64_t get_int(const std::string& n, int64_t def) const;
    float get_float(const std::string& n, float def) const;
    std::string get_string(const std::string& n, const std::string& def) const;
    std::vector<int64_t> get_ints(const std::string& n, const std::vector<int64_t>& def = {}) const;
    std::vector<float> get_floats(const std::string& n, const std::vector<float>& def = {}) const;
    // "Conv 'conv1'" for messages.
    std::string describe() const;
};

struct Graph {
    std::string name;
    std::vector<Node> nodes;
    std::vector<ValueInfo> inputs;      // true graph inputs (initializers removed)
    std::vector<ValueInfo> outputs;
    std::vector<ValueInfo> value_info;
    std::map<std::string, std::shared_ptr<TensorData>> initializers;
};

struct Model {
    std::string path;       // file it came from
    int64_t ir_version = 0;
    std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
    std::string producer_name, producer_version;
    Graph graph;
    std::shared_ptr<const void> mapping;  // keeps the model file mapped

    int64_t opset(const std::string& domain = "") const;
};

// Loads a model file (and any external data, which must stay inside the model's folder).
std::shared_ptr<Model> load_model(const std::string& path);
// Parses a model from memory; `base_dir` resolves external data. The bytes must outlive the model
// unless `keep` owns them.
std::shared_ptr<Model> parse_model(const uint8_t* data, size_t size, const std::string& path,
                                   const std::string& base_dir, std::shared_ptr<const void> keep);


}  // namespace onnx2ggml
