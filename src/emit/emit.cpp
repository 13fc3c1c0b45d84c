// The C++ emitter. Model strings only ever reach the output as escaped literals or scrubbed
// comments; the only identifier derived from the model is the sanitized program name.
#include "emit/emit.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/error.h"
#include "ggml.h"
#include "gguf.h"
#include "ops/tensor.h"
#include "passes/pipeline.h"
#include "runtime/builder.h"
#include "ggml-cpu.h"
#include "ggml-backend.h"

#ifndef ONNX2GGML_SOURCE_DIR
#define ONNX2GGML_SOURCE_DIR ""
#endif

namespace onnx2ggml {

std::string c_identifier(const std::string& s) {
    std::string r;
    for (char c : s) r += (isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (r.empty() || isdigit(static_cast<unsigned char>(r[0]))) r = "m_" + r;
    return r;
}

std::string c_string(const std::string& s) {
    static const char* safe = " _.,:;/+=<>()[]{}!@#%&|^~-*";
    std::string r = "\"";
    for (unsigned char c : s) {
        if (isalnum(c) || (c && std::strchr(safe, c))) r += char(c);
        else {
            char buf[8];
            snprintf(buf, sizeof buf, "\\%03o", c);  // octal escapes take at most 3 digits: unambiguous
            r += buf;
        }
    }
    return r + "\"";
}

std::string c_comment(const std::string& s) {
    std::string r;
    for (unsigned char c : s) {
        if (r.size() >= 120) {
            r += "...";
            break;
        }
        // No backslash (line splicing), no '?' (trigraphs), nothing outside printable ASCII.
        r += (c >= 0x20 && c < 0x7f && c != '\\' && c != '?') ? char(c) : '_';
    }
    return r;
}

namespace {

std::string float_lit(float f) {
    if (std::isnan(f)) return "std::numeric_limits<float>::quiet_NaN()";
    if (std::isinf(f)) return f > 0 ? "std::numeric_limits<float>::infinity()" : "-std::numeric_limits<float>::infinity()";
    char buf[64];
    snprintf(buf, sizeof buf, "%.9gf", double(f));
    std::string s = buf;
    if (s.find_first_of(".en") == std::string::npos) s.insert(s.size() - 1, ".0");
    return s;
}

std::string dtype_lit(DType t) {
    static const char* names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64",
                                  "STRING", "BOOL", "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64",
                                  "COMPLEX128", "BFLOAT16"};
    int i = int(t);
    if (i >= 0 && i < int(sizeof(names) / sizeof(names[0]))) return std::string("DType::") + names[i];
    return "DType(" + std::to_string(i) + ")";
}

std::string int_lit(int64_t v) {
    if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
    return std::to_string(v) + "LL";
}

template <typename T, typename F>
std::string list(const std::vector<T>& v, F f) {
    std::string r = "{";
    for (size_t i = 0; i < v.size(); i++) r += (i ? ", " : "") + f(v[i]);
    return r + "}";
}

std::string strs(const std::vector<std::string>& v) { return list(v, [](const std::string& s) { return c_string(s); }); }

struct WeightEntry {
    std::string key;
    DType dtype;
    std::vector<int64_t> dims;
    std::vector<uint8_t> converted;  // when the stored type differs from the source
    const TensorData* src;
};

struct Emitter {
    const Model& m;
    DType weight_type;
    std::vector<WeightEntry> weights;
    std::vector<std::string> functions;  // graph builders, subgraphs first
    int next_graph = 0;
    std::map<std::string, const ValueInfo*> infos;

    void add_weight(const std::string& key, const TensorData& td, bool is_initializer) {
        O2G_CHECK(dtype_supported(td.dtype), "tensor '", td.name, "' has unsupported type ", dtype_name(td.dtype));
        WeightEntry w{key, td.dtype, td.dims, {}, &td};
        if (is_initializer && td.dtype == DType::FLOAT && weight_type != DType::FLOAT) {
            w.dtype = weight_type;
            size_t n = size_t(td.numel());
            w.converted.resize(n * 2);
            for (size_t i = 0; i < n; i++) {
                float f;
                std::memcpy(&f, td.data + i * 4, 4);
                uint16_t h = weight_type == DType::FLOAT16 ? ggml_fp32_to_fp16(f) : ggml_fp32_to_bf16(f).bits;
                std::memcpy(w.converted.data() + i * 2, &h, 2);
            }
        }
        weights.push_back(std::move(w));
    }

    std::map<std::string, Shape> probed;  // value shapes from a build at the probe shapes

    std::string shape_comment(const std::string& value) {
        auto pit = probed.find(value);
        if (pit != probed.end()) {
            std::string s = " [";
            for (size_t i = pit->second.size(); i-- > 0;) s += std::to_string(pit->second[i]) + (i ? ", " : "");
            return s + "]";
        }
        auto it = infos.find(value);
        if (it == infos.end() || !it->second->has_shape) return "";
        const ValueInfo& vi = *it->second;
        std::string s = " [";
        for (size_t i = vi.dims.size(); i-- > 0;) {  // ggml order: innermost first
            const Dim& d = vi.dims[i];
            s += (d.known() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param) + (i ? ", " : "");
        }
        return s + "]";
    }

    std::string value_info(const ValueInfo& vi) {
        std::string dt = dtype_lit(vi.dtype);
        if (!vi.has_shape) return "tensor_unranked(" + c_string(vi.name) + ", " + dt + ")";
        return "tensor(" + c_string(vi.name) + ", " + dt + ", " + list(vi.dims, [](const Dim& d) {
                   return d.known() ? "dim(" + int_lit(d.value) + ")" : "sym(" + c_string(d.param) + ")";
               }) + ")";
    }

    std::string attribute(const Attribute& a) {
        std::string n = c_string(a.name);
        switch (a.type) {
            case AttrType::INT: return "a_int(" + n + ", " + int_lit(a.i) + ")";
            case AttrType::FLOAT: return "a_float(" + n + ", " + float_lit(a.f) + ")";
            case AttrType::STRING: return "a_str(" + n + ", std::string(" + c_string(a.s) + ", " + std::to_string(a.s.size()) + "))";
            case AttrType::INTS: return "a_ints(" + n + ", " + list(a.ints, int_lit) + ")";
            case AttrType::FLOATS: return "a_floats(" + n + ", " + list(a.floats, float_lit) + ")";
            case AttrType::STRINGS: return "a_strings(" + n + ", " + strs(a.strings) + ")";
            case AttrType::TENSOR: {
                O2G_CHECK(a.t, "attribute '", a.name, "' has no tensor");
                std::string key = "a" + std::to_string(weights.size());
                add_weight(key, *a.t, false);
                return "W.a_tensor(" + n + ", " + c_string(key) + ")";
            }
            case AttrType::GRAPH: return "a_graph(" + n + ", graph_" + std::to_string(emit_graph(*a.g)) + "(W))";
            default: fail("attribute '", a.name, "' has a type the compiler does not support (", int(a.type), ")");
        }
    }

    int emit_graph(const Graph& g) {
        int id = next_graph++;
        for (auto& vi : g.value_info) infos[vi.name] = &vi;
        for (auto& vi : g.inputs) infos[vi.name] = &vi;
        for (auto& vi : g.outputs) infos[vi.name] = &vi;
        for (auto& [name, td] : g.initializers) add_weight("g" + std::to_string(id) + "|" + name, *td, true);
        std::ostringstream f;
        f << "// Graph " << id << (g.name.empty() ? "" : ": " + c_comment(g.name)) << "\n";
        f << "static Graph graph_" << id << "(const Weights& W) {\n";
        f << "    Graph g;\n    g.name = " << c_string(g.name) << ";\n";
        f << "    g.inputs = " << list(g.inputs, [&](const ValueInfo& v) { return value_info(v); }) << ";\n";
        f << "    g.outputs = " << list(g.outputs, [&](const ValueInfo& v) { return value_info(v); }) << ";\n";
        f << "    W.attach_initializers(g, " << id << ");\n\n";
        for (size_t i = 0; i < g.nodes.size(); i++) {
            const Node& n = g.nodes[i];
            std::string attrs;
            for (auto& a : n.attrs) attrs += (attrs.empty() ? "" : ", ") + attribute(a);
            f << "    // [" << i << "] " << c_comment(n.name.empty() ? "(unnamed)" : n.name) << ": " << c_comment(n.op_type)
              << " -> " << c_comment(n.outputs.empty() ? "" : n.outputs[0])
              << c_comment(n.outputs.empty() ? "" : shape_comment(n.outputs[0])) << "\n";
            f << "    g.nodes.push_back(node(" << c_string(n.op_type) << ", " << c_string(n.domain) << ", "
              << c_string(n.name) << ", " << strs(n.inputs) << ", " << strs(n.outputs) << ", {" << attrs << "}));\n";
        }
        f << "    return g;\n}\n";
        functions.push_back(f.str());
        return id;
    }
};

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    O2G_CHECK(f, "cannot write '", path, "'");
    f << text;
    O2G_CHECK(f, "write to '", path, "' failed");
}

void write_gguf(const std::string& path, std::vector<WeightEntry>& ws) {
    gguf_context* g = gguf_init_empty();
    std::vector<const char*> names;
    std::vector<std::string> shapes;
    std::vector<int32_t> types;
    size_t n_data = 0;
    for (auto& w : ws)
        if (size_t(shape_numel(w.dims)) * dtype_size(w.dtype) > 0) n_data++;
    ggml_init_params p = {ggml_tensor_overhead() * (n_data + 1), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    for (size_t i = 0; i < ws.size(); i++) {
        auto& w = ws[i];
        names.push_back(w.key.c_str());
        types.push_back(int32_t(w.dtype));
        std::string s;
        for (size_t d = 0; d < w.dims.size(); d++) s += (d ? "," : "") + std::to_string(w.dims[d]);
        shapes.push_back(s);
        size_t es = dtype_size(w.dtype);
        int64_t n = shape_numel(w.dims);
        if (n * int64_t(es) == 0) continue;
        ggml_type t = es == 1 ? GGML_TYPE_I8 : es == 2 ? (w.dtype == DType::FLOAT16 ? GGML_TYPE_F16 : w.dtype == DType::BFLOAT16 ? GGML_TYPE_BF16 : GGML_TYPE_I16)
                    : es == 4 ? (w.dtype == DType::FLOAT ? GGML_TYPE_F32 : GGML_TYPE_I32)
                              : (w.dtype == DType::DOUBLE ? GGML_TYPE_F64 : GGML_TYPE_I64);
        ggml_tensor* tt = ggml_new_tensor_1d(ctx, t, n);
        ggml_set_name(tt, ("w" + std::to_string(i)).c_str());
        tt->data = const_cast<uint8_t*>(w.converted.empty() ? w.src->data : w.converted.data());
        gguf_add_tensor(g, tt);
    }
    std::vector<const char*> shape_ptrs;
    for (auto& s : shapes) shape_ptrs.push_back(s.c_str());
    gguf_set_val_str(g, "general.architecture", "onnx2ggml");
    gguf_set_arr_str(g, "onnx2ggml.names", names.data(), names.size());
    gguf_set_arr_str(g, "onnx2ggml.shapes", shape_ptrs.data(), shape_ptrs.size());
    gguf_set_arr_data(g, "onnx2ggml.dtypes", GGUF_TYPE_INT32, types.data(), types.size());
    bool ok = gguf_write_to_file(g, path.c_str(), false);
    gguf_free(g);
    ggml_free(ctx);
    O2G_CHECK(ok, "cannot write '", path, "'");
}

const char* kMain = R"TPL(// Generated by onnx2ggml compile: runs @NAME@ like `onnx2ggml run`.
#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "@NAME@.h"
#include "onnx2ggml/npy.h"

static std::string sanitize(std::string s) {
    for (char& c : s)
        if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    return s;
}

int main(int argc, char** argv) {
    std::string weights = @NAME@_WEIGHTS, out_dir, device;
    int threads = 0;
    std::vector<std::pair<std::string, std::string>> inputs;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) { fprintf(stderr, "@NAME@: error: %s needs a value\n", a.c_str()); exit(2); }
            return argv[++i];
        };
        if (a == "--input" || a == "-i") {
            std::string v = next();
            auto eq = v.find('=');
            inputs.emplace_back(eq == std::string::npos ? "" : v.substr(0, eq), eq == std::string::npos ? v : v.substr(eq + 1));
        } else if (a == "--output-dir" || a == "-o") out_dir = next();
        else if (a == "--threads" || a == "-t") threads = atoi(next().c_str());
        else if (a == "--device") device = next();
        else if (a == "--weights") weights = next();
        else {
            fprintf(stderr, "usage: @NAME@ --input [NAME=]FILE.npy ... --output-dir DIR [--threads N] [--device NAME] [--weights FILE.gguf]\n");
            return 2;
        }
    }
    if (out_dir.empty()) { fprintf(stderr, "@NAME@: error: --output-dir is required\n"); return 2; }
    @NAME@_model* m = @NAME@_load(weights.c_str(), device.c_str(), threads);
    if (!m) return 1;
    int rc = 0;
    try {
        auto in_names = @NAME@_input_names();
        std::map<std::string, onnx2ggml::Tensor> feeds;
        size_t pos = 0;
        for (auto& [name, file] : inputs) {
            std::string n = name.empty() ? (pos < in_names.size() ? in_names[pos++] : "") : name;
            if (n.empty()) throw std::runtime_error("more inputs given than the model has");
            feeds[n] = onnx2ggml::read_npy(file, @NAME@_input_dtype(n));
        }
        std::vector<onnx2ggml::Tensor> outs;
        if (!@NAME@_run(m, feeds, outs)) throw std::runtime_error("run failed");
        struct stat st;
        if (stat(out_dir.c_str(), &st) != 0 && mkdir(out_dir.c_str(), 0755) != 0)
            throw std::runtime_error("cannot create output directory '" + out_dir + "'");
        auto out_names = @NAME@_output_names();
        std::set<std::string> used;
        for (size_t i = 0; i < outs.size(); i++) {
            std::string base = sanitize(out_names[i]), f = base;
            for (int k = 1; used.count(f); k++) f = base + "_" + std::to_string(k);
            used.insert(f);
            onnx2ggml::write_npy(out_dir + "/" + f + ".npy", outs[i]);
        }
    } catch (const std::exception& e) {
        fprintf(stderr, "@NAME@: error: %s\n", e.what());
        rc = 1;
    }
    @NAME@_free(m);
    return rc;
}
)TPL";

const char* kHeader = R"TPL(// Generated by onnx2ggml compile. Embedding API for @NAME@.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "onnx2ggml/onnx2ggml.h"

struct @NAME@_model;

// Loads weights (a GGUF file with tensors under their ONNX initializer names) and opens a ggml device
// ("" or nullptr: the first GPU, else the CPU). Prints the device used. Returns nullptr on error.
@NAME@_model* @NAME@_load(const char* weights_path, const char* device = nullptr, int threads = 0);
// Runs the model at any input shape; outputs come in graph-output order. Returns false on error.
bool @NAME@_run(@NAME@_model* m, const std::map<std::string, onnx2ggml::Tensor>& inputs,
                std::vector<onnx2ggml::Tensor>& outputs);
void @NAME@_free(@NAME@_model* m);

std::vector<std::string> @NAME@_input_names();
std::vector<std::string> @NAME@_output_names();
onnx2ggml::DType @NAME@_input_dtype(const std::string& name);
)TPL";

const char* kCMake = R"TPL(# Generated by onnx2ggml compile.
#   cmake -S . -B build && cmake --build build      ->  build/@NAME@
#   add -DGGML_CUDA=ON, -DGGML_VULKAN=ON or -DGGML_METAL=ON for those backends.
cmake_minimum_required(VERSION 3.18)
project(@NAME@ LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(ONNX2GGML_ROOT "@ROOT@" CACHE PATH "onnx2ggml source tree (builds the library and ggml)")
if(NOT TARGET onnx2ggml)
  set(ONNX2GGML_TESTS OFF CACHE BOOL "" FORCE)
  add_subdirectory(${ONNX2GGML_ROOT} ${CMAKE_BINARY_DIR}/onnx2ggml EXCLUDE_FROM_ALL)
endif()
add_library(@NAME@_model STATIC @NAME@.cpp)
target_link_libraries(@NAME@_model PUBLIC onnx2ggml)
target_include_directories(@NAME@_model PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
add_executable(@NAME@ main.cpp)
target_link_libraries(@NAME@ PRIVATE @NAME@_model)
# Default weights: the GGUF next to the sources (override with --weights).
target_compile_definitions(@NAME@ PRIVATE @NAME@_WEIGHTS="${CMAKE_CURRENT_SOURCE_DIR}/@NAME@.gguf")
)TPL";

// Builds the graph (no compute, no weight upload) at a probe shape to annotate each node with its
// ggml-order output shape. Symbolic dims take the first value in the list that builds.
std::string probe_shapes(const Model& m, std::map<std::string, Shape>& out) {
    static bool quiet = [] { ggml_backend_load_all(); return true; }();
    (void)quiet;
    GraphPlan plan = plan_graph(m);
    for (int64_t v : {8, 16, 32, 1, 64}) {
        std::vector<Tensor> ins;
        std::string note = "shapes at probe:";
        for (auto& vi : m.graph.inputs) {
            Tensor t;
            t.dtype = vi.dtype == DType::UNDEFINED ? DType::FLOAT : vi.dtype;
            for (auto& d : vi.dims) t.shape.push_back(d.known() ? d.value : v);
            t.data.assign(size_t(t.numel()) * dtype_size(t.dtype), 0);
            note += " " + vi.name + shape_str(t.shape);
            ins.push_back(std::move(t));
        }
        std::vector<const Tensor*> ptrs;
        for (auto& t : ins) ptrs.push_back(&t);
        size_t size = std::max<size_t>(8192, plan.live_nodes.size() * 24);
        ggml_init_params p = {ggml_tensor_overhead() * size * 2 + ggml_graph_overhead_custom(size, false), nullptr, true};
        ggml_context* ctx = ggml_init(p);
        WeightCache w;
        w.buft = ggml_backend_cpu_buffer_type();
        try {
            Builder b(m, plan, w, ctx);
            b.bind_inputs(ptrs);
            b.build();
            for (auto& [name, val] : b.vals) out[name] = val.shape;
            ggml_free(ctx);
            return note;
        } catch (const std::exception&) {
            ggml_free(ctx);
            out.clear();
        }
    }
    return "shapes: the probe build did not succeed; none shown";
}

std::string subst(std::string t, const std::string& name) {
    for (size_t p; (p = t.find("@NAME@")) != std::string::npos;) t.replace(p, 6, name);
    return t;
}

}  // namespace

std::string compile_model(const Model& m, const CompileOptions& opts) {
    O2G_CHECK(opts.weights == DType::FLOAT || opts.weights == DType::FLOAT16 || opts.weights == DType::BFLOAT16,
              "--weights must be f32, f16 or bf16");
    std::string name = opts.name;
    if (name.empty()) {
        std::string base = m.path.substr(m.path.find_last_of('/') + 1);
        auto dot = base.rfind('.');
        name = dot == std::string::npos ? base : base.substr(0, dot);
    }
    name = c_identifier(name);
    std::string dir = opts.out_dir;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) {
        for (size_t p = 1; p <= dir.size(); p++)  // like mkdir -p
            if (p == dir.size() || dir[p] == '/') mkdir(dir.substr(0, p).c_str(), 0755);
        O2G_CHECK(stat(dir.c_str(), &st) == 0, "cannot create '", dir, "'");
    }
    else O2G_CHECK(S_ISDIR(st.st_mode), "'", dir, "' is not a directory");

    Emitter e{m, opts.weights, {}, {}, 0, {}, {}};
    std::string probe_note = probe_shapes(m, e.probed);
    e.emit_graph(m.graph);

    std::ostringstream src;
    src << "// Generated by onnx2ggml compile from " << c_comment(m.path) << ". Regenerate rather than edit.\n"
        << "// One statement per ONNX node, in topological order. The library lowers each node to ggml exactly as\n"
        << "// `onnx2ggml run` does; shapes are symbolic until run time. Comments: [index] node: op -> output [ggml shape]\n"
        << "// " << c_comment(probe_note) << "\n"
        << "#include \"" << name << ".h\"\n\n#include <cstdio>\n#include <limits>\n#include <memory>\n\n"
        << "#include \"onnx2ggml/program.h\"\n\n"
        << "using namespace onnx2ggml;\nusing namespace onnx2ggml::program;\n\n";
    for (auto& f : e.functions) src << f << "\n";  // emitted children first, so subgraphs precede their users
    std::string opsets = "{";
    for (auto& [d, v] : m.opsets) opsets += "{" + c_string(d) + ", " + int_lit(v) + "}, ";
    opsets += "}";
    src << "struct " << name << "_model {\n    std::unique_ptr<Session> session;\n};\n\n"
        << name << "_model* " << name << "_load(const char* weights_path, const char* device, int threads) {\n"
        << "    try {\n"
        << "        Weights W(weights_path);\n"
        << "        auto model = make_model(graph_0(W), " << opsets << ", " << int_lit(m.ir_version) << ", weights_path);\n"
        << "        SessionOptions o;\n        o.device = device ? device : \"\";\n        o.threads = threads;\n"
        << "        auto* r = new " << name << "_model;\n        r->session = Session::open(model, o);\n        return r;\n"
        << "    } catch (const std::exception& ex) {\n"
        << "        fprintf(stderr, \"" << name << ": error: %s\\n\", ex.what());\n        return nullptr;\n    }\n}\n\n"
        << "bool " << name << "_run(" << name << "_model* m, const std::map<std::string, Tensor>& inputs, std::vector<Tensor>& outputs) {\n"
        << "    try {\n        outputs = m->session->run(inputs);\n        return true;\n"
        << "    } catch (const std::exception& ex) {\n"
        << "        fprintf(stderr, \"" << name << ": error: %s\\n\", ex.what());\n        return false;\n    }\n}\n\n"
        << "void " << name << "_free(" << name << "_model* m) { delete m; }\n\n"
        << "std::vector<std::string> " << name << "_input_names() { return " << list(m.graph.inputs, [](const ValueInfo& v) { return c_string(v.name); }) << "; }\n"
        << "std::vector<std::string> " << name << "_output_names() { return " << list(m.graph.outputs, [](const ValueInfo& v) { return c_string(v.name); }) << "; }\n"
        << "onnx2ggml::DType " << name << "_input_dtype(const std::string& n) {\n";
    for (auto& vi : m.graph.inputs)
        src << "    if (n == " << c_string(vi.name) << ") return " << dtype_lit(vi.dtype) << ";\n";
    src << "    return onnx2ggml::DType::UNDEFINED;\n}\n";

    std::string root = ONNX2GGML_SOURCE_DIR;
    std::string cmake = subst(kCMake, name);
    cmake.replace(cmake.find("@ROOT@"), 6, root);
    write_file(dir + "/" + name + ".h", subst(kHeader, name));
    write_file(dir + "/" + name + ".cpp", src.str());
    write_file(dir + "/main.cpp", subst(kMain, name));
    write_file(dir + "/CMakeLists.txt", cmake);
    write_gguf(dir + "/" + name + ".gguf", e.weights);
    return name;
}

}  // namespace onnx2ggml
