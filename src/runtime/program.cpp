#include "onnx2ggml/program.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"
#include "gguf.h"

namespace onnx2ggml::program {

ValueInfo tensor(const char* name, DType dtype, std::vector<Dim> dims) {
    ValueInfo v;
    v.name = name;
    v.dtype = dtype;
    v.has_shape = true;
    v.dims = std::move(dims);
    return v;
}

ValueInfo tensor_unranked(const char* name, DType dtype) {
    ValueInfo v;
    v.name = name;
    v.dtype = dtype;
    return v;
}

static Attribute attr(const char* name, AttrType t) {
    Attribute a;
    a.name = name;
    a.type = t;
    return a;
}
Attribute a_int(const char* name, int64_t v) { Attribute a = attr(name, AttrType::INT); a.i = v; return a; }
Attribute a_float(const char* name, float v) { Attribute a = attr(name, AttrType::FLOAT); a.f = v; return a; }
Attribute a_str(const char* name, std::string v) { Attribute a = attr(name, AttrType::STRING); a.s = std::move(v); return a; }
Attribute a_ints(const char* name, std::vector<int64_t> v) { Attribute a = attr(name, AttrType::INTS); a.ints = std::move(v); return a; }
Attribute a_floats(const char* name, std::vector<float> v) { Attribute a = attr(name, AttrType::FLOATS); a.floats = std::move(v); return a; }
Attribute a_strings(const char* name, std::vector<std::string> v) { Attribute a = attr(name, AttrType::STRINGS); a.strings = std::move(v); return a; }
Attribute a_graph(const char* name, Graph g) {
    Attribute a = attr(name, AttrType::GRAPH);
    a.g = std::make_shared<Graph>(std::move(g));
    return a;
}

Node node(const char* op_type, const char* domain, const char* name, std::vector<std::string> inputs,
          std::vector<std::string> outputs, std::vector<Attribute> attrs) {
    Node n;
    n.op_type = op_type;
    n.domain = domain;
    n.name = name;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    return n;
}

namespace {
struct Mapping {
    void* addr = nullptr;
    size_t size = 0;
    ~Mapping() {
        if (addr) munmap(addr, size);
    }
};
}  // namespace

Weights::Weights(const std::string& path) : path_(path) {
    gguf_init_params params = {true, nullptr};
    gguf_context* g = gguf_init_from_file(path.c_str(), params);
    O2G_CHECK(g, path, ": not a readable GGUF weights file");
    auto cleanup = std::shared_ptr<gguf_context>(g, gguf_free);
    int64_t k_names = gguf_find_key(g, "onnx2ggml.names"), k_types = gguf_find_key(g, "onnx2ggml.dtypes"),
            k_shapes = gguf_find_key(g, "onnx2ggml.shapes");
    O2G_CHECK(k_names >= 0 && k_types >= 0 && k_shapes >= 0, path, ": not an onnx2ggml weights file");
    size_t n = gguf_get_arr_n(g, k_names);
    O2G_CHECK(gguf_get_arr_n(g, k_types) == n && gguf_get_arr_n(g, k_shapes) == n &&
                  gguf_get_arr_type(g, k_types) == GGUF_TYPE_INT32,
              path, ": inconsistent weights metadata");
    const int32_t* types = static_cast<const int32_t*>(gguf_get_arr_data(g, k_types));

    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    O2G_CHECK(fd >= 0, path, ": cannot open");
    struct stat st;
    fstat(fd, &st);
    auto m = std::make_shared<Mapping>();
    m->size = size_t(st.st_size);
    m->addr = m->size ? mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    close(fd);
    O2G_CHECK(m->addr != MAP_FAILED, path, ": mmap failed");
    mapping_ = m;
    size_t base = gguf_get_data_offset(g);
    for (size_t i = 0; i < n; i++) {
        auto td = std::make_shared<TensorData>();
        td->name = gguf_get_arr_str(g, k_names, i);
        td->dtype = DType(types[i]);
        std::string shape = gguf_get_arr_str(g, k_shapes, i);
        for (size_t p = 0; p < shape.size();) {
            size_t q = shape.find(',', p);
            if (q == std::string::npos) q = shape.size();
            td->dims.push_back(std::strtoll(shape.substr(p, q - p).c_str(), nullptr, 10));
            p = q + 1;
        }
        size_t need = size_t(td->numel()) * dtype_size(td->dtype);
        if (need > 0) {
            int64_t ti = gguf_find_tensor(g, ("w" + std::to_string(i)).c_str());
            O2G_CHECK(ti >= 0 && gguf_get_tensor_size(g, ti) == need, path, ": tensor '", td->name,
                      "' is missing or has the wrong size");
            size_t off = base + gguf_get_tensor_offset(g, ti);
            O2G_CHECK(off + need <= m->size, path, ": tensor '", td->name, "' runs past the end of the file");
            td->data = static_cast<const uint8_t*>(m->addr) + off;
        }
        td->nbytes = need;
        td->keep = m;
        td->mapped = true;
        tensors_[td->name] = td;
    }
}

void Weights::attach_initializers(Graph& g, int graph_id) const {
    std::string prefix = "g" + std::to_string(graph_id) + "|";
    for (auto& [key, td] : tensors_)
        if (key.compare(0, prefix.size(), prefix) == 0) {
            auto t = std::make_shared<TensorData>(*td);
            t->name = key.substr(prefix.size());
            g.initializers[t->name] = t;
        }
}

Attribute Weights::a_tensor(const char* name, const std::string& key) const {
    auto it = tensors_.find(key);
    O2G_CHECK(it != tensors_.end(), path_, ": weights file has no tensor '", key, "'");
    Attribute a = attr(name, AttrType::TENSOR);
    a.t = it->second;
    return a;
}

std::shared_ptr<Model> make_model(Graph g, std::map<std::string, int64_t> opsets, int64_t ir_version,
                                  const std::string& path) {
    auto m = std::make_shared<Model>();
    m->graph = std::move(g);
    m->opsets = std::move(opsets);
    m->ir_version = ir_version;
    m->path = path;
    return m;
}

}  // namespace onnx2ggml::program
