// The C++ emitter: builds the optimized graph at probe shapes with a ProgramRecorder watching, and writes what it
// recorded as a ggml program. Model strings reach the output only as escaped literals, scrubbed comments, or
// identifiers made of [A-Za-z0-9_] (c_identifier).
#include "emit/emit.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "common/platform.h"
#include "common/error.h"
#include "emit/blocks.h"
#include "emit/lora_table.h"
#include "emit/recorder.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "gguf.h"
#include "onnx2ggml/program.h"
#include "ops/tensor.h"
#include "passes/pipeline.h"
#include "runtime/builder.h"

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

extern const char* const kMain;
extern const char* const kHeader;
extern const char* const kModelCalls;
extern const char* const kCMake;

namespace {

// Identifiers of C++ code with their use counts (string literals and // comments skipped).
std::map<std::string, int> identifier_counts(const std::string& code) {
    std::map<std::string, int> n;
    auto word = [](char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t i = 0; i < code.size();) {
        char c = code[i];
        if (c == '"') {
            for (i++; i < code.size() && code[i] != '"'; i++)
                if (code[i] == '\\') i++;
            i++;
        } else if (c == '/' && i + 1 < code.size() && code[i + 1] == '/') {
            i = code.find('\n', i);
            if (i == std::string::npos) break;
        } else if (word(c)) {
            size_t b = i;
            while (i < code.size() && word(code[i])) i++;
            n[code.substr(b, i - b)]++;
        } else i++;
    }
    return n;
}

// A named result nothing reads (a dead value of a branch) becomes a plain `cb(...);` statement, so that the
// program has no unused variable.
std::string drop_unread_results(const std::string& body, const std::string& tail) {
    std::map<std::string, int> uses = identifier_counts(body + tail);
    std::string out, line;
    std::istringstream in(body);
    const std::string decl = "ggml_tensor* ";
    while (std::getline(in, line)) {
        size_t b = line.find_first_not_of(' ');
        size_t eq = line.find(" = cb(");
        if (b != std::string::npos && line.compare(b, decl.size(), decl) == 0 && eq != std::string::npos &&
            uses[line.substr(b + decl.size(), eq - b - decl.size())] == 1)
            line.erase(b, eq + 3 - b);
        out += line + "\n";
    }
    return out;
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream f(platform::fs_path(path), std::ios::binary | std::ios::trunc);
    O2G_CHECK(f, "cannot write '", path, "'");
    f << text;
    O2G_CHECK(f, "write to '", path, "' failed");
}

void write_gguf(const std::string& path, const std::vector<GgufEntry>& ws, const std::vector<o2g::LoraTarget>& lora,
                const std::string& token_table) {
    gguf_context* g = gguf_init_empty();
    std::vector<const char*> names;
    ggml_init_params p = {ggml_tensor_overhead() * (ws.size() + 1), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    for (size_t i = 0; i < ws.size(); i++) {
        const GgufEntry& w = ws[i];
        names.push_back(w.key.c_str());
        ggml_tensor* t = ggml_new_tensor(ctx, w.type, 4, w.ne);
        std::string tname(1, 'w');
        tname += std::to_string(i);
        ggml_set_name(t, tname.c_str());  // ONNX names can pass ggml's 63-byte limit
        t->data = const_cast<uint8_t*>(w.bytes.data());
        gguf_add_tensor(g, t);
    }
    gguf_set_val_str(g, "general.architecture", "onnx2ggml");
    gguf_set_arr_str(g, "onnx2ggml.names", names.data(), names.size());
    o2g::write_lora_targets(g, lora);  // for --lora at load
    if (!token_table.empty()) gguf_set_val_str(g, "onnx2ggml.token_table", token_table.c_str());  // --embedding
    bool ok = gguf_write_to_file(g, path.c_str(), false);
    gguf_free(g);
    ggml_free(ctx);
    O2G_CHECK(ok, "cannot write '", path, "'");
}

std::string subst(std::string t, const std::string& name) {
    for (size_t p; (p = t.find("@NAME@")) != std::string::npos;) t.replace(p, 6, name);
    return t;
}

// One build of the optimized graph at probe shapes, recorded.
struct Probe {
    std::map<std::string, int64_t> dims;  // symbolic dim -> value used
    int shift = 0;
    std::unique_ptr<ProgramRecorder> rec;
    std::vector<std::vector<int64_t>> shapes;  // per live node: rank then ne of its first device output
    std::string error;
    bool same_data = false;  // the pair this probe ends shares its input data (see probe_pair)
};

std::string dim_symbol(const ValueInfo& vi, size_t a) {
    const Dim& d = vi.dims[a];
    return d.param.empty() ? vi.name + "_dim" + std::to_string(a) : d.param;
}

// Symbolic dim j (in order of appearance) gets base * (j + 1 + shift): distinct values make comments name dims.
// Host-read inputs hold `data` + shift, or an example's data (+ shift when shift_examples), as their type.
Probe run_probe(const Model& m, const GraphPlan& plan, const std::map<std::string, Tensor>& examples, int64_t base,
                bool distinct, int shift, int data, bool shift_examples,
                const std::map<std::string, int64_t>* preset = nullptr) {
    Probe pr;
    pr.shift = shift;
    if (preset) pr.dims = *preset;
    auto host_read = [&](const ValueInfo& vi) { return !dtype_is_float(vi.dtype) || plan.need_host.count(vi.name); };
    // In the first probe an example fixes the symbolic dims it has, before the probe picks the others; the second
// picks its own (and uses an example only where its shape still fits).
    for (auto& vi : m.graph.inputs) {
        auto ex = examples.find(vi.name);
        if (shift || ex == examples.end() || !host_read(vi) || ex->second.shape.size() != vi.dims.size()) continue;
        for (size_t a = 0; a < vi.dims.size(); a++)
            if (!vi.dims[a].known() && !pr.dims.count(dim_symbol(vi, a))) pr.dims[dim_symbol(vi, a)] = ex->second.shape[a];
    }
    size_t fixed = pr.dims.size();
    std::vector<Tensor> ins;
    for (auto& vi : m.graph.inputs) {
        Tensor t;
        t.dtype = vi.dtype == DType::UNDEFINED ? DType::FLOAT : vi.dtype;
        for (size_t a = 0; a < vi.dims.size(); a++) {
            if (vi.dims[a].known()) {
                t.shape.push_back(vi.dims[a].value);
                continue;
            }
            std::string s = dim_symbol(vi, a);
            if (!pr.dims.count(s))
                pr.dims[s] = distinct ? base * int64_t(pr.dims.size() - fixed + 1 + size_t(shift)) : base;
            t.shape.push_back(pr.dims[s]);
        }
        // Integer inputs hold `data` in the first probe and data + 1 in the second, so that code that took an
        // input's values as numbers differs between them too (graph data must stay data).
        t.data.assign(size_t(t.numel()) * dtype_size(t.dtype), 0);
        // Inputs read on the host (integers, booleans, floats such as Resize scales) get data + shift, as their type.
        if (host_read(vi)) {
            auto ex = examples.find(vi.name);
            bool use_ex = ex != examples.end() && ex->second.shape == t.shape && ex->second.dtype == t.dtype;
            int64_t v = data + shift;
            if (use_ex) {
                t.data = ex->second.data;
                v = shift_examples ? shift : 0;
            }
            HostTensor h = HostTensor::alloc(t.dtype, t.shape);
            if (use_ex && h.nbytes) std::memcpy(h.mut(), t.data.data(), h.nbytes);
            for (int64_t k = 0; k < t.numel(); k++) {
                int64_t x = (use_ex ? h.i64(k) : 0) + v;
                if (use_ex && dtype_is_float(t.dtype)) h.set_f64(k, h.f64(k) + double(v));
                else h.set_i64(k, t.dtype == DType::BOOL ? (x % 2 + 2) % 2 : x);
            }
            if (h.nbytes) std::memcpy(t.data.data(), h.data, h.nbytes);
        }
        ins.push_back(std::move(t));
    }
    std::vector<const Tensor*> ptrs;
    for (auto& t : ins) ptrs.push_back(&t);
    ggml_init_params p = {ggml_tensor_overhead() * initial_graph_tensors(plan), nullptr, true};
    ggml_context* ctx = ggml_init(p);
    WeightCache w;
    w.buft = ggml_backend_cpu_buffer_type();
    w.native_cpu = true;
    try {
        Builder b(m, plan, w, ctx);
        pr.rec = std::make_unique<ProgramRecorder>(m, b);
        b.rec = pr.rec.get();
        b.bind_inputs(ptrs);
        b.build();
        pr.rec->finish();
        b.rec = nullptr;
    } catch (const std::exception& e) {
        pr.error = e.what();
        pr.rec.reset();
    }
    ggml_free(ctx);
    return pr;
}

// "[W, H, 512, N]": a node's ggml-order output shape, dims that differ between the probes written with the input
// dims they follow (s, s*k, s/k or s*t).
std::string shape_text(const std::vector<int64_t>& a, const std::vector<int64_t>* b,
                       const std::map<std::string, int64_t>& da, const std::map<std::string, int64_t>* db) {
    int rank = int(a[0]);
    std::string r = "[";
    for (int d = 0; d < std::max(rank, 1); d++) {
        int64_t x = a[size_t(1 + d)], y = b && b->size() == a.size() ? (*b)[size_t(1 + d)] : x;
        std::string t = std::to_string(x);
        if (x != y && db) {
            t = "?";
            auto b_of = [&](const std::string& n) { return db->at(n); };
            bool found = false;
            for (auto& [s, va] : da)  // one dim
                if (!found && va == x && b_of(s) == y) t = s, found = true;
            for (auto& [s, va] : da)  // a product of two (H * W)
                for (auto& [u, wa] : da)
                    if (!found && s <= u && va * wa == x && b_of(s) * b_of(u) == y) t = s + "*" + u, found = true;
            for (int64_t k = 2; k <= 64 && !found; k++)
                for (auto& [s, va] : da) {
                    if (found) break;
                    if (va * k == x && b_of(s) * k == y) t = s + "*" + std::to_string(k), found = true;
                    else if (va % k == 0 && b_of(s) % k == 0 && va / k == x && b_of(s) / k == y)
                        t = s + "/" + std::to_string(k), found = true;
                    for (auto& [u, wa] : da)
                        if (!found && s <= u && va * wa * k == x && b_of(s) * b_of(u) * k == y)
                            t = s + "*" + u + "*" + std::to_string(k), found = true;
                }
        }
        r += (d ? ", " : "") + t;
    }
    return r + "]";
}


// The two probe builds of one attempt (see compile_model); empty when the first does not build. Data that must fit
// the graph (a reshape target, split sizes) may build at one value only: the second probe then changes the dims
// alone, and the data stays checked by the recorder, which refuses a lowering that reads input data itself rather
// than passing it to the op library.
std::vector<Probe> probe_pair(const Model& m, const GraphPlan& plan, const std::map<std::string, Tensor>& ex, int value,
                              bool symbolic, bool symbolic_dims, std::string& first_error) {
    struct Try { int64_t base; bool distinct; };
    const Try dims[] = {{8, true}, {16, true}, {8, false}, {1, false}, {32, false}, {4, false}};
    std::vector<Probe> probes;
    for (const Try& t : dims) {
        Probe pr = run_probe(m, plan, ex, t.base, t.distinct, 0, value, false);
        if (pr.rec) {
            probes.push_back(std::move(pr));
            break;
        }
        if (first_error.empty()) first_error = pr.error;
    }
    if (probes.empty() || !symbolic) return probes;
    auto other_dims = [&](const Probe& pr) {  // every symbolic dim differs from the first probe's
        for (auto& [d, v] : pr.dims)
            if (probes[0].dims.count(d) && probes[0].dims.at(d) == v) return false;
        return true;
    };
    for (int v : {value + 1, value - 1})
        for (const Try& t : dims) {
            if (probes.size() == 2) return probes;
            Probe pr = run_probe(m, plan, ex, t.base, t.distinct, 1, v - 1, true);  // run_probe adds the shift
            if (pr.rec && other_dims(pr)) probes.push_back(std::move(pr));
        }
    for (const Try& t : dims) {
        if (probes.size() == 2 || !symbolic_dims) break;
        Probe pr = run_probe(m, plan, ex, t.base, t.distinct, 1, value - 1, false);  // the same data
        if (pr.rec && other_dims(pr)) probes.push_back(std::move(pr));
        if (probes.size() == 2) probes[1].same_data = true;
    }
    // Dims tied by a ratio (ControlNet's hint is 8x the latent): every dim of the first probe scaled.
    for (int64_t k : {2, 3}) {
        if (probes.size() == 2 || !symbolic_dims) break;
        std::map<std::string, int64_t> scaled = probes[0].dims;
        for (auto& [d, v] : scaled) v *= k;
        Probe pr = run_probe(m, plan, ex, 0, false, 1, value - 1, false, &scaled);
        if (pr.rec && other_dims(pr)) {
            probes.push_back(std::move(pr));
            probes[1].same_data = true;
        }
    }
    if (probes.size() == 1) probes[0].same_data = true;  // only one data value builds
    return probes;
}

// What keeps an attempt's code from being written down: the recorder's per-node failures, and code that came out
// different at the two probes (it depends on a probe's numbers: a dim or value fixed at compile time).
std::vector<std::string> probe_failures(const Model& m, const GraphPlan& plan, const std::vector<Probe>& probes,
                                        bool symbolic_dims) {
    const ProgramRecorder& r = *probes[0].rec;
    std::vector<std::string> failures = r.failures;
    if (r.shape_literals && probes.back().same_data && !probes[0].rec->host_inputs.empty())
        failures.push_back("graph: a rank > 4 shape is written as numbers, and the input data it may follow builds at "
                           "one value only, so compile cannot check it");
    if (symbolic_dims && probes.size() < 2)
        failures.push_back("graph: builds at one probe shape only, so compile cannot check that its code holds for "
                           "every input shape");
    if (probes.size() < 2) return failures;
    const ProgramRecorder& r2 = *probes[1].rec;
    for (size_t i = 0; i < r.node_code.size() && i < r2.node_code.size(); i++)
        if (r.node_code[i] != r2.node_code[i]) {
            const Node& n = plan.node(m, plan.live_nodes[i]);
            failures.push_back(n.describe() + ": its code depends on the input shapes or integer input data "
                               "(a dim or value the model leaves open would be fixed)");
        }
    if (r.epilogue != r2.epilogue)
        failures.push_back("graph outputs: returned differently at the two probes (a rank > 4 output's shape or a "
                           "host output would be fixed)");
    return failures;
}

// The probe builds compile writes down (throws when the graph cannot be written as a program).
std::vector<Probe> record_program(const Model& m, const GraphPlan& plan, const CompileOptions& opts) {
    o2g::load_backends();
    bool symbolic = false, symbolic_dims = false;
    for (auto& vi : m.graph.inputs) {
        for (auto& d : vi.dims) symbolic_dims |= !d.known();
        symbolic |= symbolic_dims;
        symbolic |= !dtype_is_float(vi.dtype) || plan.need_host.count(vi.name);  // the second probe also changes integer input data
    }
    for (auto& [name, t] : opts.examples) {
        const ValueInfo* vi = nullptr;
        for (auto& g : m.graph.inputs)
            if (g.name == name) vi = &g;
        O2G_CHECK(vi, m.path, ": example '", name, "' is not an input of the model");
        bool fits = t.shape.size() == vi->dims.size() && (vi->dtype == DType::UNDEFINED || t.dtype == vi->dtype);
        for (size_t a = 0; fits && a < t.shape.size(); a++) fits = !vi->dims[a].known() || vi->dims[a].value == t.shape[a];
        O2G_CHECK(fits, m.path, ": example '", name, "' is ", dtype_name(t.dtype), " ", shape_str(t.shape),
                  ", which does not fit the input's declared type and shape");
    }
    // Each attempt builds twice. The first probe: symbolic dims base * (j + 1), host-read inputs filled with the
    // user's examples or with one value. The second: other dims (base * (j + 2)) and other data (+1 or -1, e.g. axis 0
    // then -1 of a rank-1 input), so that anything taken from a probe's numbers differs between them. Attempts go
    // examples, zeros, ones: zeros may build a degenerate graph (an empty crop) that cannot be written down.
    std::vector<Probe> probes;
    std::vector<std::string> failures;
    std::string first_error;
    bool reads_data = false;
    for (auto& vi : m.graph.inputs) reads_data |= !dtype_is_float(vi.dtype) || plan.need_host.count(vi.name);
    std::vector<int> firsts = {0};
    if (reads_data) firsts = opts.examples.empty() ? std::vector<int>{0, 1} : std::vector<int>{0, 0, 1};
    for (size_t at = 0; at < firsts.size(); at++) {
        bool use_ex = !opts.examples.empty() && at == 0;
        std::vector<Probe> p = probe_pair(m, plan, use_ex ? opts.examples : std::map<std::string, Tensor>{}, firsts[at],
                                          symbolic, symbolic_dims, first_error);
        if (p.empty()) continue;
        std::vector<std::string> f = probe_failures(m, plan, p, symbolic_dims);
        if (f.empty() || probes.empty()) probes = std::move(p), failures = std::move(f);
        if (failures.empty()) break;
    }
    O2G_CHECK(!probes.empty(), m.path, ": cannot compile: the graph does not build from probe inputs (host-read input data ",
              opts.examples.empty() ? "0 or 1" : "from the examples, or 0 or 1", ": ", first_error,
              "); give example data for the inputs it reads with --example NAME=FILE.npy");
    if (!failures.empty()) {
        std::string msg = m.path + ": cannot compile " + std::to_string(failures.size()) + " node(s):";
        for (auto& f : failures) msg += "\n  " + f;
        if (reads_data && opts.examples.empty())
            msg += "\n  (the graph reads input data when it builds, and compile probed it with 0 and 1; real data may "
                   "build further: --example NAME=FILE.npy)";
        throw Error(msg);
    }
    return probes;
}

// Creates dir and its parents (like mkdir -p), or checks it is a directory.
void make_dirs(const std::string& dir) {
    const std::filesystem::path p = platform::fs_path(dir);
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
        std::filesystem::create_directories(p, ec);
        O2G_CHECK(std::filesystem::exists(p, ec), "cannot create '", dir, "'");
    } else
        O2G_CHECK(std::filesystem::is_directory(p, ec), "'", dir, "' is not a directory");
}

// Each live node's code and the comment that heads it: its index, name, op and output shape.
std::vector<NodeText> node_texts(const Model& m, const GraphPlan& plan, const std::vector<Probe>& probes) {
    const ProgramRecorder& r = *probes[0].rec;
    std::vector<NodeText> nodes;
    for (size_t i = 0; i < r.node_code.size(); i++) {
        if (r.node_code[i].empty()) continue;
        const Node& n = plan.node(m, plan.live_nodes[i]);
        std::string shape;
        if (i < r.node_shape.size() && !r.node_shape[i].empty())
            shape = " -> " + shape_text(r.node_shape[i], probes.size() == 2 ? &probes[1].rec->node_shape[i] : nullptr,
                                        probes[0].dims, probes.size() == 2 ? &probes[1].dims : nullptr);
        nodes.push_back({"    // [" + std::to_string(i) + "] " + c_comment(n.name.empty() ? "(unnamed)" : n.name) + ": " +
                         c_comment(n.op_type) + c_comment(shape) + "\n", r.node_code[i]});
    }
    return nodes;
}

// The model's graph as code: its weights struct, their loader, and build() with one block per node.
void write_graph_source(std::ostringstream& src, const Model& m, const GraphPlan& plan,
                        const std::vector<Probe>& probes, const std::string& name) {
    const ProgramRecorder& r = *probes[0].rec;
    src << "// Generated by onnx2ggml compile from " << c_comment(m.path) << ". Regenerate rather than edit.\n"
        << "// The optimized graph as ggml code: one block per ONNX node, in order, each a direct ggml call or a\n"
        << "// call into onnx2ggml's op library (onnx2ggml/ops.h). Dims are read from the inputs, so one build\n"
        << "// serves every input shape.\n"
        << "#include \"" << name << ".h\"\n\n#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstdio>\n"
        << "#include <memory>\n\n#include \"onnx2ggml/ops.h\"\n#include \"onnx2ggml/program.h\"\n\nnamespace " << name << "_graph {\n\n";
    src << "// Names a result after its ONNX value, so that graph dumps and debuggers show ONNX names (o2g::named also\n"
        << "// sees that the graph's context has room left, and has the graph built in a larger one if not).\n"
        << "[[maybe_unused]] static ggml_tensor* cb(ggml_tensor* t, const char* name) { return o2g::named(t, name); }\n\n";
    src << "// Weights and constants, loaded from " << name << ".gguf by ONNX name.\nstruct Weights {\n";
    for (auto& w : r.weights)
        src << "    ggml_tensor* " << w.field << " = nullptr;  // " << c_comment(w.key) << "\n";
    src << "};\n\nWeights load_weights(o2g::WeightFile& f) {\n    Weights w;\n";
    for (auto& w : r.weights) src << "    w." << w.field << " = f.get(" << c_string(w.key) << ");\n";
    src << "    (void)f;\n    return w;\n}\n\n";
    std::string tail;
    for (auto& e : r.epilogue) tail += "    " + e + "\n";
    std::string blocks, body = fold_blocks(node_texts(m, plan, probes), r.prologue, tail, blocks);
    if (!blocks.empty())
        src << "// ... and after the layer index il, the name pre + il + post (llama.cpp's cb(cur, name, il)).\n"
            << "[[maybe_unused]] static ggml_tensor* cb(ggml_tensor* t, const char* pre, int il, const char* post) {\n"
            << "    char name[256];\n    snprintf(name, sizeof name, \"%s%d%s\", pre, il, post);\n"
            << "    return cb(t, name);\n}\n\n"
            << "// ... or torch's suffix for a repeated name: pre + post, then pre + sep + il + post from il = 1.\n"
            << "[[maybe_unused]] static ggml_tensor* cb(ggml_tensor* t, const char* pre, const char* sep, int il, const char* post) {\n"
            << "    char name[256];\n    if (il) snprintf(name, sizeof name, \"%s%s%d%s\", pre, sep, il, post);\n"
            << "    else snprintf(name, sizeof name, \"%s%s\", pre, post);\n"
            << "    return cb(t, name);\n}\n\n" << blocks;
    src << "// Builds the graph for the shapes of `in` (and the data of `hin`, the inputs read on the host); fills `out`,\n"
        << "// or `hout` for outputs computed on the host, in graph-output order.\n"
        << "void build([[maybe_unused]] o2g::Ctx& ctx, const void* weights, [[maybe_unused]] ggml_tensor* const* in,\n"
        << "           [[maybe_unused]] const o2g::HostTensor* hin, [[maybe_unused]] ggml_tensor** out,\n"
        << "           [[maybe_unused]] o2g::HostTensor* hout) {\n"
        << "    [[maybe_unused]] const Weights& w = *static_cast<const Weights*>(weights);\n";
    for (auto& p : r.prologue) src << "    [[maybe_unused]] " << p << "\n";
    src << drop_unread_results(body, tail) << tail;
    src << "}\n\n";
    src << "}  // namespace " << name << "_graph\n\n";
}

// The program's C API around the graph: load, run, free and the I/O names.
void write_api_source(std::ostringstream& src, const Model& m, const ProgramRecorder& r, const std::string& name) {
    std::string ins = "{", outs = "{";
    for (size_t i = 0; i < m.graph.inputs.size(); i++) {
        const ValueInfo& v = m.graph.inputs[i];
        ins += "\n        {" + c_string(v.name) + ", o2g::DType(" + std::to_string(int(v.dtype)) + "), " +
               std::to_string(v.dims.size()) + (r.host_inputs.count(int(i)) ? ", true" : "") + "},";
    }
    for (size_t i = 0; i < m.graph.outputs.size(); i++) {
        const ValueInfo& v = m.graph.outputs[i];
        outs += "\n        {" + c_string(v.name) + ", o2g::DType(" + std::to_string(int(r.out_dtypes[i])) + "), " +
                std::to_string(r.out_ranks[i]) + "},";
    }
    src << "struct " << name << "_model {\n    std::unique_ptr<o2g::Program> program;\n    " << name << "_graph::Weights w;\n};\n\n"
        << name << "_model* " << name << "_load_with(const char* weights_path, const char* device, int threads,\n"
        << "        const std::vector<onnx2ggml::LoraFile>& lora, const std::vector<onnx2ggml::EmbeddingFile>& embeddings,\n"
        << "        const char* precision, const char* embedding_set) {\n"
        << "    try {\n        auto m = std::make_unique<" << name << "_model>();\n"
        << "        m->program = std::make_unique<o2g::Program>(\n            " << c_string(name)
        << ", std::vector<o2g::IoInfo>" << ins << "},\n        std::vector<o2g::IoInfo>" << outs << "},\n"
        << "        weights_path, device ? device : \"\", threads, precision ? precision : \"exact\", lora, embeddings,\n"
        << "        embedding_set ? embedding_set : \"\");\n"
        << "        m->w = " << name << "_graph::load_weights(m->program->weights());\n        return m.release();\n"
        << "    } catch (const std::exception& e) {\n        fprintf(stderr, \"" << name
        << ": error: %s\\n\", e.what());\n        return nullptr;\n    }\n}\n\n"
        << name << "_model* " << name << "_load_lora(const char* weights_path, const char* device, int threads,\n"
        << "        const std::vector<onnx2ggml::LoraFile>& lora, const char* precision) {\n"
        << "    return " << name << "_load_with(weights_path, device, threads, lora, {}, precision, \"\");\n}\n\n"
        << name << "_model* " << name << "_load(const char* weights_path, const char* device, int threads,\n"
        << "        const char* precision) {\n"
        << "    return " << name << "_load_lora(weights_path, device, threads, {}, precision);\n}\n\n"
        << subst(kModelCalls, name) << "std::vector<std::string> " << name << "_input_names() {\n    return {";
    for (auto& v : m.graph.inputs) src << c_string(v.name) << ", ";
    src << "};\n}\n\nstd::vector<std::string> " << name << "_output_names() {\n    return {";
    for (auto& v : m.graph.outputs) src << c_string(v.name) << ", ";
    src << "};\n}\n\nonnx2ggml::DType " << name << "_input_dtype(const std::string& n) {\n    (void)n;\n";
    for (auto& vi : m.graph.inputs)
        src << "    if (n == " << c_string(vi.name) << ") return onnx2ggml::DType(" << int(vi.dtype) << ");\n";
    src << "    return onnx2ggml::DType::UNDEFINED;\n}\n";

}

}  // namespace

std::string compile_model(const Model& m, const CompileOptions& opts) {
    std::string name = opts.name;
    if (name.empty()) {
        std::string base = m.path.substr(m.path.find_last_of('/') + 1);
        auto dot = base.rfind('.');
        name = dot == std::string::npos ? base : base.substr(0, dot);
    }
    name = c_identifier(name);
    const std::string dir = opts.out_dir;
    make_dirs(dir);
    GraphPlan plan = plan_graph(m);
    std::vector<Probe> probes = record_program(m, plan, opts);
    ProgramRecorder& r = *probes[0].rec;

    std::ostringstream src;
    write_graph_source(src, m, plan, probes, name);
    write_api_source(src, m, r, name);

    std::string cmake = subst(kCMake, name);
    cmake.replace(cmake.find("@ROOT@"), 6, ONNX2GGML_SOURCE_DIR);
    write_file(dir + "/" + name + ".h", subst(kHeader, name));
    write_file(dir + "/" + name + ".cpp", src.str());
    write_file(dir + "/main.cpp", subst(kMain, name));
    write_file(dir + "/CMakeLists.txt", cmake);
    write_gguf(dir + "/" + name + ".gguf", r.weights, gguf_lora_targets(m, r.weights), gguf_token_table(m, r.weights));
    return name;
}

void write_weights_gguf(const Model& m, const std::string& path) {
    std::vector<GgufEntry> entries;
    GraphPlan plan = plan_graph(m);
    try {
        std::vector<Probe> probes = record_program(m, plan, CompileOptions{});
        entries = std::move(probes[0].rec->weights);
    } catch (const std::exception& e) {
        fprintf(stderr, "onnx2ggml: note: %s: no compiled-program entries (the initializers only, for --weights-file): "
                "%s\n", m.path.c_str(), std::string(e.what()).substr(0, 200).c_str());
    }
    // Float initializers the program does not read as they are (folded, fused): for `--weights-file`.
    std::map<std::string, bool> have;
    for (const GgufEntry& e : entries) have[e.key] = true;
    std::vector<std::string> baked;
    for (auto& [name, td] : m.graph.initializers)
        if (!entries.empty() && !have.count(name) && dtype_is_float(td->dtype) && td->numel() > 1) baked.push_back(name);
    if (!baked.empty())
        fprintf(stderr, "onnx2ggml: warning: %s: a program compiled from it does not read %zu of its initializers from "
                "a weights file (folded, or read on the host and written into its source; first: %s%s): it keeps "
                "their compile-time data\n", m.path.c_str(), baked.size(), baked[0].c_str(),
                baked.size() > 1 ? ", ..." : "");
    for (auto& [name, td] : m.graph.initializers) {
        ggml_type type = td->dtype == DType::FLOAT ? GGML_TYPE_F32 : td->dtype == DType::FLOAT16 ? GGML_TYPE_F16
                         : td->dtype == DType::BFLOAT16 ? GGML_TYPE_BF16 : GGML_TYPE_COUNT;
        if (have.count(name) || type == GGML_TYPE_COUNT || td->numel() == 0) continue;
        GgufEntry e;
        e.key = name;
        e.type = type;
        for (int i = 0; i < 4; i++) e.ne[i] = 1;
        size_t r = td->dims.size();
        for (size_t a = 0; a < r; a++) e.ne[std::min<size_t>(3, r - 1 - a)] *= td->dims[a];  // ONNX order reversed
        e.bytes.assign(td->data, td->data + td->nbytes);
        entries.push_back(std::move(e));
    }
    write_gguf(path, entries, gguf_lora_targets(m, entries), gguf_token_table(m, entries));
}

}  // namespace onnx2ggml
