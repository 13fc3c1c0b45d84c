// The compile recorder (see recorder.h). Every statement it writes is a call the lowering really made, so the
// program computes exactly what `onnx2ggml run` computes; what it cannot write down fails the node, by name.
#include "emit/recorder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "emit/emit.h"
#include "runtime/unsupported.h"

namespace onnx2ggml {

namespace {

// The value a fused node's first output gets as a C++ variable: the module its node sits in and what the fusion
// computes ("/up/resnets.0/norm1/InstanceNormalization" fused with SiLU: up_resnets_0_norm1_gn_silu), not the last
// node of the chain it replaced; "" for other nodes.
std::string fused_var_name(const Node& n) {
    const std::string prefix = "onnx2ggml.";
    size_t slash = n.name.rfind('/');
    if (n.op_type.rfind(prefix, 0) != 0 || slash == std::string::npos || slash == 0) return "";
    static const std::map<std::string, std::string> what = {
        {"GroupNorm", "gn"}, {"Attention", "attn"}, {"MatMulBias", "linear"}, {"ScaleBias", "scale_bias"},
        {"Gelu", "gelu"}, {"SiLU", "silu"}};
    std::string op = n.op_type.substr(prefix.size());
    auto it = what.find(op);
    std::string w = it != what.end() ? it->second : op;
    if (op == "GroupNorm" && n.get_int("silu", 0)) w += "_silu";
    return n.name.substr(0, slash) + "/" + w;
}

// Names the generated build function uses itself, and C++ words: no ONNX value may take them.
const char* kReserved[] = {"ctx", "w", "in", "out", "hin", "hout", "weights", "o2g", "std", "int", "float", "double",
                           "char", "bool", "void", "auto", "const", "if", "else", "for", "while", "do", "return",
                           "switch", "case", "default", "break", "continue", "struct", "class", "union", "enum",
                           "new", "delete", "this", "true", "false", "nullptr", "static", "inline", "namespace",
                           "using", "template", "typename", "operator", "sizeof", "long", "short", "signed",
                           "unsigned", "register", "volatile", "extern", "goto", "friend", "virtual", "public",
                           "private", "protected", "try", "catch", "throw", "and", "or", "not", "xor", "NAN",
                           "INFINITY", "INT64_MIN"};

// Placeholder for call k's result inside this node's text, replaced by its name when the node ends.
std::string token_of(size_t k) {
    std::string t(1, '\x01');
    t += std::to_string(k);
    t += '\x02';
    return t;
}

}  // namespace

// How a value no node output or graph input named is known: weights and constants a lowering added (Scan's
// step indices) are constants; anything else depends on input data.
HostExpr::Kind unnamed_kind(const Val& v) {
    return v.is_weight || (v.host && v.input_deps.empty()) ? HostExpr::Const : HostExpr::Data;
}

ProgramRecorder::ProgramRecorder(const Model& m, Builder& b) : m_(m), b_(b) {
    for (const char* r : kReserved) idents_.insert(r);
    for (size_t i = 0; i < m.graph.inputs.size(); i++) {
        const ValueInfo& vi = m.graph.inputs[i];
        input_index_[vi.name] = int(i);
        std::string id = ident(vi.name);
        val_var[vi.name] = id;
        // Integer inputs (and float ones read as shapes or indices) are read on the host when the graph is built.
        host_[vi.name] = HostExpr{HostExpr::Var, {"hin[" + std::to_string(i) + "]"}, ""};
        prologue.push_back("ggml_tensor* " + id + " = in[" + std::to_string(i) + "];  // " + c_comment(vi.name));
    }
}

std::string ProgramRecorder::ident(const std::string& value) {
    std::string s = c_identifier(value), r;
    for (char c : s)  // no leading, trailing or doubled underscores
        if (c != '_' || (!r.empty() && r.back() != '_')) r += c;
    while (!r.empty() && r.back() == '_') r.pop_back();
    const std::string suffix = "_output_0";  // what exporters append to every node's first output
    if (r.size() > suffix.size() && r.compare(r.size() - suffix.size(), suffix.size(), suffix) == 0)
        r.erase(r.size() - suffix.size());
    if (r.size() > 48) {  // the end of an exporter's path names the value best; cut at a word boundary
        size_t cut = r.find('_', r.size() - 48);
        r = cut == std::string::npos ? r.substr(r.size() - 48) : r.substr(cut + 1);
    }
    if (r.empty() || isdigit(static_cast<unsigned char>(r[0]))) r = "v_" + r;
    std::string u = r;
    for (int k = 2; idents_.count(u); k++) u = r + "_" + std::to_string(k);
    idents_.insert(u);
    return u;
}

void ProgramRecorder::fail_node(const std::string& why) {
    if (node_fail_.empty()) node_fail_ = why;
}

std::string ProgramRecorder::tensor_text(const ggml_tensor* t) {
    auto it = local_.find(t);
    if (it != local_.end()) return it->second;
    fail_node("uses a ggml tensor made outside an op-library call");
    return "";
}

std::string ProgramRecorder::ints_text(const Sym& s) {
    if (!s.src) return "o2g::Ints" + o2g::ints_literal(s.v);
    if (s.shape) {  // a value's shape: fixed for constants and shape vectors, read from tensors otherwise
        auto h = host_.find(s.src->name);
        if (h == host_.end() ? unnamed_kind(*s.src) == HostExpr::Const
                             : (h->second.kind == HostExpr::Const || h->second.kind == HostExpr::Sym))
            return "o2g::Ints" + o2g::ints_literal(s.v);
        if (h != host_.end() && h->second.kind == HostExpr::Var && s.src->host) return var_text(h->second) + ".shape";
        auto sv = s.src->t ? shape_var_.find(s.src->t) : shape_var_.end();
        if (sv != shape_var_.end()) return sv->second;
        auto t = val_var.find(s.src->name);
        if (t != val_var.end() && s.v.size() <= 4 && s.src->t) {
            std::string r = "o2g::Ints{";
            for (size_t a = 0; a < s.v.size(); a++)
                r += (a ? ", " : "") + t->second + "->ne[" + std::to_string(s.v.size() - 1 - a) + "]";
            return r + "}";
        }
        // A rank > 4 shape (ne folds its outer dims): written as numbers, which the two probes check.
        shape_literals = true;
        return "o2g::Ints" + o2g::ints_literal(s.v);
    }
    passed_.insert(s.src->name);
    auto it = host_.find(s.src->name);
    HostExpr::Kind k = it != host_.end() ? it->second.kind : unnamed_kind(*s.src);
    if (k == HostExpr::Const) return "o2g::Ints" + o2g::ints_literal(s.v);
    if (k == HostExpr::Sym && it->second.e.size() == s.v.size()) {
        std::string r = "o2g::Ints{";
        for (size_t i = 0; i < s.v.size(); i++) r += (i ? ", " : "") + it->second.e[i];
        return r + "}";
    }
    if (k == HostExpr::Var) return var_text(it->second) + ".to_i64()";
    fail_node("needs '" + s.src->name + "' to build its graph, and " +
              (it != host_.end() && !it->second.why.empty() ? it->second.why : "that value depends on input data"));
    return "";
}

void ProgramRecorder::param_field(const Val& v, const std::string& field, char kind, int rank) {
    auto it = host_.find(v.name);
    HostExpr::Kind k = it != host_.end() ? it->second.kind : unnamed_kind(v);
    std::string e;
    std::string first = k == HostExpr::Var ? var_text(it->second) + ".i64(0)" : k == HostExpr::Sym && !it->second.e.empty() ? it->second.e[0] : "";
    if (kind == 'a') {
        if (first.empty()) return;
        e = "o2g::ggml_axis(" + first + ", " + std::to_string(rank) + ")";
    } else if (k == HostExpr::Var) e = kind == 'f' ? "float(" + var_text(it->second) + ".f64(0))" : var_text(it->second) + ".to_f32()";
    else if (k == HostExpr::Sym && !it->second.e.empty()) {
        if (kind == 'f') e = "float(" + it->second.e[0] + ")";
        else {
            e = "std::vector<float>{";
            for (size_t i = 0; i < it->second.e.size(); i++) e += (i ? ", " : "") + std::string("float(") + it->second.e[i] + ")";
            e += "}";
        }
    } else return;  // a constant stays a literal; data compile cannot follow stays a direct read (refused)
    fields_.emplace_back(field, e);
    field_vals_.push_back(v.name);
}

bool ProgramRecorder::wants_field(const std::string& field) {
    for (auto& f : fields_)
        if (f.first == field) return true;
    return false;
}

// Replaces the literal of params field `.field = ...` in a call's text with `expr`; false if it is not there.
static bool replace_field(std::string& text, const std::string& field, const std::string& expr) {
    std::string key = "." + field + " = ";
    size_t p = text.find(key);
    if (p == std::string::npos) return false;
    size_t b = p + key.size(), e = b;
    int depth = 0;
    for (; e < text.size(); e++) {
        char c = text[e];
        if (c == '{') depth++;
        else if (c == '}' && depth-- == 0) break;
        else if (c == ',' && depth == 0) break;
        if (depth == 0 && c == '}') {
            e++;
            break;
        }
    }
    text.replace(b, e - b, expr);
    return true;
}

void ProgramRecorder::call(ggml_tensor* result, const std::string& text_in) {
    std::string text = text_in;
    for (size_t i = 0; i < fields_.size();) {  // a field waits for the call whose params have it
        if (!text.empty() && replace_field(text, fields_[i].first, fields_[i].second)) {
            passed_.insert(field_vals_[i]);
            fields_.erase(fields_.begin() + long(i));
            field_vals_.erase(field_vals_.begin() + long(i));
        } else i++;
    }
    if (text.empty()) {
        fail_node("an argument of an op-library call has no C++ form");
        return;
    }
    std::string token = token_of(calls_.size());
    calls_.emplace_back(result, text);
    local_[result] = token;
}

std::string ProgramRecorder::var_text(const HostExpr& h) {
    const std::string& v = h.e[0];
    if (v.rfind("hin[", 0) == 0) host_inputs.insert(std::stoi(v.substr(4)));
    return v;
}

// A float weight the graph reads on the host comes from the weights file too, read back when the graph is built, so
// that another weights file (`import-weights`, --lora) reaches it; small ones stay literals.
std::string ProgramRecorder::host_weight_text(const Val& v, const HostTensor& h) {
    if (!v.is_weight || h.dtype != DType::FLOAT || h.numel() <= 64 || h.shape.size() > 4) return "";
    std::string field;
    auto bound = val_var.find(v.name);
    int64_t ne[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < h.shape.size(); i++) ne[h.shape.size() - 1 - i] = h.shape[i];
    for (const GgufEntry& e : weights)
        if (e.key == v.name && e.type == GGML_TYPE_F32 && std::equal(ne, ne + 4, e.ne)) field = e.field;
    if (field.empty()) {
        if (bound != val_var.end()) return "";  // bound as a tensor of another layout: keep the literal
        GgufEntry e;
        e.key = v.name;
        e.field = field = ident(v.name);
        e.type = GGML_TYPE_F32;
        std::copy(ne, ne + 4, e.ne);
        e.bytes = device_bytes(h, GGML_TYPE_F32, v.name);
        host_weight_entry_[v.name] = weights.size();
        weights.push_back(std::move(e));
    }
    std::string shape = "{";
    for (size_t i = 0; i < h.shape.size(); i++) shape += (i ? ", " : "") + std::to_string(h.shape[i]);
    return "o2g::host_weight(w." + field + ", " + shape + "})";
}

std::string ProgramRecorder::host_text(const HostArg& a) {
    auto lit = [&]() {
        std::string t = host_literal(*a.h);
        if (t.empty()) fail_node("a host constant of " + std::to_string(a.h->numel()) + " elements is too large to write inline");
        return t;
    };
    if (!a.src) return lit();
    passed_.insert(a.src->name);
    auto it = host_.find(a.src->name);
    HostExpr::Kind k = it != host_.end() ? it->second.kind : unnamed_kind(*a.src);
    if (k == HostExpr::Const) {
        std::string wt = host_weight_text(*a.src, *a.h);
        return wt.empty() ? lit() : wt;
    }
    if (k == HostExpr::Var) return var_text(it->second);
    if (k == HostExpr::Sym && a.src->rank() <= 1 && it->second.e.size() == size_t(a.h->numel())) {
        std::string shape = "{", list;
        if (a.src->rank()) shape += std::to_string(a.h->numel());
        shape += "}";
        for (size_t i = 0; i < it->second.e.size(); i++) list += (i ? ", " : "") + it->second.e[i];
        std::string one = scalar_literal(a.h->dtype, shape, list);
        if (!one.empty()) return one;
        return std::string(dtype_is_float(a.h->dtype) ? "o2g::host_floats(" : "o2g::host_ints(") +
               arg_text(*this, a.h->dtype) + ", " + shape + ", {" + list + "})";
    }
    fail_node("needs '" + a.src->name + "' on the host, and " +
              (it != host_.end() && !it->second.why.empty() ? it->second.why : "that value depends on input data"));
    return "";
}

void ProgramRecorder::host_call(int out, const std::string& text) {
    if (text.empty()) fail_node("an argument of a host function call has no C++ form");
    host_calls_[out] = text;
}

void ProgramRecorder::bind(const Val& v, ggml_tensor* t) {
    auto in = input_index_.find(v.name);
    if (in != input_index_.end()) {
        local_[t] = tensor_var_[t] = val_var[v.name];
        return;
    }
    auto it = host_.find(v.name);
    HostExpr::Kind k = it != host_.end() ? it->second.kind : (v.is_weight || v.input_deps.empty()) ? HostExpr::Const
                                                                                                 : HostExpr::Data;
    if (k == HostExpr::Const) {
        auto hw = host_weight_entry_.find(v.name);  // already in the file, for a host read of the same weight
        if (hw != host_weight_entry_.end()) {
            const GgufEntry& h = weights[hw->second];
            if (h.type == t->type && std::equal(h.ne, h.ne + 4, t->ne)) {
                val_var[v.name] = "w." + h.field;
                local_[t] = tensor_var_[t] = val_var[v.name];
                return;
            }
        }
        GgufEntry e;
        e.key = v.name;
        e.field = ident(v.name);
        e.type = t->type;
        for (int i = 0; i < 4; i++) e.ne[i] = t->ne[i];
        e.bytes = device_bytes(*v.host, t->type, v.name);
        val_var[v.name] = "w." + e.field;
        local_[t] = tensor_var_[t] = val_var[v.name];
        weights.push_back(std::move(e));
        return;
    }
    if (k == HostExpr::Sym && v.rank() <= 1 && it->second.e.size() == size_t(v.host->numel())) {
        std::string id = ident(v.name), list;
        for (size_t i = 0; i < it->second.e.size(); i++) list += (i ? ", " : "") + it->second.e[i];
        pre_.push_back("ggml_tensor* " + id + " = " +
                       (dtype_is_float(v.dtype) ? "ctx.floats_tensor({" + list + "});"
                                                : "ctx.ints_tensor(o2g::Ints{" + list + "}, " + arg_text(*this, t->type) + ");"));
        val_var[v.name] = id;
        local_[t] = tensor_var_[t] = id;
        return;
    }
    if (k == HostExpr::Var) {
        std::string id = ident(v.name);
        pre_.push_back("ggml_tensor* " + id + " = o2g::host_constant(ctx, " + var_text(it->second) + ", " +
                       arg_text(*this, t->type) + ");");
        val_var[v.name] = id;
        local_[t] = tensor_var_[t] = id;
        return;
    }
    fail_node("uses '" + v.name + "' as a tensor, and " +
              (it != host_.end() && !it->second.why.empty() ? it->second.why : "that value depends on input data"));
}

void ProgramRecorder::shape_call(const ggml_tensor* t, const std::string& text) {
    // Only at the top level of the build function, where later nodes and the outputs can see the variable.
    if (!saved_.empty() || !node_) return;
    std::string id = ident((node_->outputs.empty() ? std::string("t") : node_->outputs[0]) + "_shape");
    pre_.push_back("const o2g::Ints " + id + " = " + text + ";");
    shape_var_[t] = id;
}

void ProgramRecorder::use(const Val& v, ggml_tensor* t) {
    auto by_tensor = tensor_var_.find(t);  // exact even where unrolled subgraphs reuse a value name
    if (by_tensor != tensor_var_.end()) {
        local_[t] = by_tensor->second;
        return;
    }
    auto it = val_var.find(v.name);
    if (it != val_var.end()) local_[t] = it->second;
}

void ProgramRecorder::host_read(const Val& v) {
    auto it = host_.find(v.name);
    bool constant = it != host_.end() ? it->second.kind == HostExpr::Const : unnamed_kind(v) == HostExpr::Const;
    if (!constant) direct_reads_.push_back(v.name);
}

// The state of one node's recording, set aside while the nodes of its subgraph (If, Loop, Scan) record.
struct ProgramRecorder::Saved {
    const Node* node;
    bool on_host;
    std::vector<std::pair<ggml_tensor*, std::string>> calls;
    std::map<const ggml_tensor*, std::string> local;
    std::vector<std::string> pre, direct_reads, host_stmts;
    std::set<std::string> passed;
    std::string fail, nested;
    std::map<int, std::string> host_calls;
    std::string branch_cond;
    Branch branch[2];
    LoopRec loop;
};

void ProgramRecorder::alias(const std::string& to, const Val& from) {
    auto t = from.t ? tensor_var_.find(from.t) : tensor_var_.end();
    if (t != tensor_var_.end()) val_var[to] = t->second;
    auto hp = from.host ? host_by_ptr_.find(from.host.get()) : host_by_ptr_.end();
    if (hp != host_by_ptr_.end()) host_[to] = hp->second;
    if (t != tensor_var_.end() || hp != host_by_ptr_.end()) return;
    if (!from.name.empty()) {
        auto v = val_var.find(from.name);
        if (v != val_var.end()) val_var[to] = v->second;
        auto h = host_.find(from.name);
        if (h != host_.end()) host_[to] = h->second;
        else if (from.host && !from.is_weight && !from.input_deps.empty())
            host_[to] = HostExpr{HostExpr::Data, {}, "it depends on input data"};
        return;
    }
    // A value the lowering made itself (loop counter, condition): a constant of the unrolled code.
    if (from.host) host_[to] = HostExpr{HostExpr::Const, {}, ""};
}

void ProgramRecorder::node_begin(const Node& n, bool on_host) {
    if (node_) {  // a subgraph node inside a control-flow node: its code goes into the enclosing node's block
        for (auto& p : pre_) nested_code_ += "    " + p + "\n";  // what the enclosing node made so far comes first
        pre_.clear();
        auto sv = std::make_shared<Saved>(Saved{node_, node_on_host_, std::move(calls_), std::move(local_),
                                                std::move(pre_), std::move(direct_reads_), std::move(host_stmts_),
                                                std::move(passed_), std::move(node_fail_), std::move(nested_code_),
                                                std::move(host_calls_), std::move(branch_cond_),
                                                {std::move(branch_[0]), std::move(branch_[1])},
                                                std::move(loop_)});
        saved_.push_back(sv);
    }
    nested_code_.clear();
    node_ = &n;
    node_on_host_ = on_host;
    calls_.clear();
    local_.clear();
    pre_.clear();
    direct_reads_.clear();
    passed_.clear();
    node_fail_.clear();
    host_calls_.clear();
    host_stmts_.clear();
    branch_cond_.clear();
    branch_[0] = branch_[1] = Branch{};
    loop_ = LoopRec{};
    fields_.clear();
    field_vals_.clear();
}

// A host value that depends on input shapes or data must reach the op library as an argument; read directly, the
// generated code would hold for the probe's value only.
void ProgramRecorder::check_direct_reads(const Node& n, bool device) {
    // Control flow on input data or shapes that did not become a C++ if or for (a Scan, a loop that ran no
    // iteration at the probe): its unrolled code would hold for one value only. That is the reason to give.
    if (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan")
        for (const auto& r : direct_reads_)
            if (!passed_.count(r)) {
                fail_node(std::string(n.op_type == "If" ? "its branch" : "its trip count or condition") +
                          " depends on '" + r + "', which follows input shapes or data, and compile could not write "
                          "it as C++ control flow, so the unrolled code would hold for that one value only");
                break;
            }
    for (const auto& r : direct_reads_)
        if ((device || !host_stmts_.empty()) && !passed_.count(r)) {
            fail_node("reads '" + r + "' itself, a host value that depends on input shapes or data (it must reach "
                      "the op library as an argument)");
            break;
        }
}

// Ends a node inside a control-flow node's body: its code joins the body and the enclosing node's state returns.
void ProgramRecorder::restore_enclosing(const std::string& code) {
    std::shared_ptr<Saved> sv = saved_.back();
    saved_.pop_back();
    node_ = sv->node;
    node_on_host_ = sv->on_host;
    calls_ = std::move(sv->calls);
    local_ = std::move(sv->local);
    pre_ = std::move(sv->pre);
    direct_reads_ = std::move(sv->direct_reads);
    host_stmts_ = std::move(sv->host_stmts);
    passed_ = std::move(sv->passed);
    node_fail_ = std::move(sv->fail);
    host_calls_ = std::move(sv->host_calls);
    branch_cond_ = std::move(sv->branch_cond);
    branch_[0] = std::move(sv->branch[0]);
    branch_[1] = std::move(sv->branch[1]);
    loop_ = std::move(sv->loop);
    nested_code_ = std::move(sv->nested) + code;
}

void ProgramRecorder::node_end(Lower& L, bool on_host) {
    const Node& n = L.node;
    classify_host_outputs(L);
    bool device = !calls_.empty();
    for (auto& o : L.outs) device |= o.t != nullptr;
    check_direct_reads(n, device);
    // Names: each output takes its value's name; other results are "<first output>_<k>".
    std::vector<std::string> names(calls_.size());
    const std::string fused = fused_var_name(n);
    for (size_t o = 0; o < L.outs.size() && o < n.outputs.size(); o++) {
        ggml_tensor* t = L.outs[o].t;
        if (!t || n.outputs[o].empty()) continue;
        for (size_t k = calls_.size(); k-- > 0;)
            if (calls_[k].first == t) {
                if (names[k].empty()) names[k] = ident(o == 0 && !fused.empty() ? fused : n.outputs[o]);
                break;
            }
    }
    std::string base = n.outputs.empty() ? "t" : n.outputs[0];
    for (size_t k = 0; k < calls_.size(); k++)
        if (names[k].empty()) names[k] = ident(base + "_" + std::to_string(k));
    auto resolve = [&](std::string s) {
        for (size_t k = 0; k < calls_.size(); k++) {
            std::string tok = token_of(k);
            for (size_t p; (p = s.find(tok)) != std::string::npos;) s.replace(p, tok.size(), names[k]);
        }
        return s;
    };
    std::vector<std::string> out_vars(n.outputs.size());
    for (size_t o = 0; o < L.outs.size() && o < n.outputs.size(); o++) {
        ggml_tensor* t = L.outs[o].t;
        if (!t || n.outputs[o].empty()) continue;
        auto it = local_.find(t);
        auto named = L.outs[o].name.empty() ? val_var.end() : val_var.find(L.outs[o].name);
        if (loop_.on) continue;  // control_code names them
        if (it != local_.end()) out_vars[o] = resolve(it->second);
        else if (named != val_var.end()) out_vars[o] = named->second;  // made by a subgraph node, or passed on
        else fail_node("its lowering is not written as op-library calls yet");
    }
    std::string code = nested_code_;
    if (!branch_cond_.empty() || loop_.on) code = control_code(n, out_vars);
    for (auto& h : host_stmts_) code += "    " + h + "\n";
    if (device || !pre_.empty()) {
        for (auto& p : pre_) code += "    " + resolve(p) + "\n";
        // An output made here is named after its ONNX value in the same statement, through the generated file's
        // cb() (llama.cpp's model graphs name theirs so): cb(o2g::add(ctx, a, b), "/x/Add_output_0").
        std::vector<std::string> value_name(calls_.size());
        for (size_t o = 0; o < out_vars.size(); o++)
            for (size_t k = 0; k < calls_.size(); k++)
                if (!out_vars[o].empty() && names[k] == out_vars[o]) value_name[k] = n.outputs[o];
        for (size_t k = 0; k < calls_.size(); k++) {
            std::string call = resolve(calls_[k].second);
            if (!value_name[k].empty()) call = "cb(" + call + ", " + c_string(value_name[k]) + ")";
            code += "    ggml_tensor* " + names[k] + " = " + call + ";\n";
        }
    }
    if (!node_fail_.empty()) {
        failures.push_back(n.describe() + ": " + node_fail_);
        code = "    // not compiled: " + c_comment(node_fail_) + "\n";
        for (size_t o = 0; o < n.outputs.size(); o++) out_vars[o] = "nullptr";
    }
    for (size_t o = 0; o < out_vars.size(); o++)
        if (!out_vars[o].empty()) {
            val_var[n.outputs[o]] = out_vars[o];
            if (L.outs[o].t) tensor_var_[L.outs[o].t] = out_vars[o];
        }
    if (!saved_.empty()) return restore_enclosing(code);  // back to the enclosing control-flow node
    node_code.push_back(code);
    std::vector<int64_t> shape;
    if (!L.outs.empty() && L.outs[0].t && L.outs[0].rank() <= 4) {
        shape.push_back(L.outs[0].rank());
        for (int d = 0; d < 4; d++) shape.push_back(L.outs[0].t->ne[d]);
    }
    node_shape.push_back(shape);
    node_ = nullptr;
    (void)on_host;
}

void ProgramRecorder::finish() {
    for (size_t i = 0; i < m_.graph.outputs.size(); i++) {
        const std::string& name = m_.graph.outputs[i].name;
        auto v = b_.vals.find(name);
        DType dt = m_.graph.outputs[i].dtype;
        if (dt == DType::UNDEFINED && v != b_.vals.end()) dt = v->second.dtype;
        out_dtypes.push_back(dt);
        out_ranks.push_back(v != b_.vals.end() ? v->second.rank() : 0);
        std::string slot = std::to_string(i);
        const ValueInfo& vi = m_.graph.outputs[i];
        if (vi.has_shape && v != b_.vals.end() && vi.dims.size() != size_t(out_ranks.back())) {
            failures.push_back("graph output '" + name + "': rank " + std::to_string(out_ranks.back()) +
                               " at the probe inputs, but the model declares rank " + std::to_string(vi.dims.size()) +
                               " (its rank depends on input data)");
            continue;
        }
        if (v != b_.vals.end() && v->second.host && !v->second.t) {  // computed on the host: returned from there
            auto h = host_.find(name);
            HostExpr::Kind k = h != host_.end() ? h->second.kind : unnamed_kind(v->second);
            std::string text;
            if (k == HostExpr::Var) text = var_text(h->second);
            else if (k == HostExpr::Const) text = host_literal(*v->second.host);
            else if (k == HostExpr::Sym) {
                node_fail_.clear();
                text = host_text(HostArg{v->second.host.get(), &v->second});
            }
            if (text.empty())
                failures.push_back("graph output '" + name + "': it is computed on the host, and " +
                                   (h != host_.end() && !h->second.why.empty() ? h->second.why : "compile cannot write it down"));
            else epilogue.push_back("hout[" + slot + "] = " + text + ";");
            continue;
        }
        auto it = val_var.find(name);
        if (it == val_var.end() || it->second == "nullptr") {
            if (it == val_var.end()) failures.push_back("graph output '" + name + "': no tensor computes it");
            continue;
        }
        epilogue.push_back("out[" + slot + "] = " + it->second + ";");
        // Rank > 4: ggml folds the outer dims, so the program is told the ONNX shape (compile checks it is the same
        // at both probes).
        if (out_ranks.back() > 4) {
            bool declared = vi.has_shape && vi.dims.size() == v->second.shape.size();
            for (size_t a = 0; declared && a < vi.dims.size(); a++)
                declared = vi.dims[a].known() && vi.dims[a].value == v->second.shape[a];
            auto sv = shape_var_.find(v->second.t);
            if (!declared && sv != shape_var_.end()) {  // the shape the build computed
                epilogue.push_back("hout[" + slot + "].shape = " + sv->second + ";");
                continue;
            }
            if (!declared) {
                failures.push_back("graph output '" + name + "': rank " + std::to_string(out_ranks.back()) +
                                   " with a shape that the model does not fix and no op-library shape function "
                                   "computes (ggml folds dims past 4), so compile cannot write it down");
                continue;
            }
            epilogue.push_back("hout[" + slot + "].shape = o2g::Ints" + o2g::ints_literal(v->second.shape) + ";");
        }
    }
}

}  // namespace onnx2ggml
