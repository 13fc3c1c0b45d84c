// The compile recorder (see recorder.h). Every statement it writes is a call the lowering really made, so the
// program computes exactly what `onnx2ggml run` computes; what it cannot write down fails the node, by name.
#include "emit/recorder.h"

#include <cmath>
#include <cstring>

#include "emit/emit.h"
#include "runtime/unsupported.h"

namespace onnx2ggml {

namespace {

const char* kReserved[] = {"ctx", "w", "in", "out", "o2g", "int", "float", "double", "char", "bool", "void", "auto",
                           "const", "if", "else", "for", "while", "do", "return", "switch", "case", "default",
                           "break", "continue", "struct", "class", "union", "enum", "new", "delete", "this",
                           "true", "false", "nullptr", "static", "inline", "namespace", "using", "template",
                           "typename", "operator", "sizeof", "long", "short", "signed", "unsigned", "register",
                           "volatile", "extern", "goto", "friend", "virtual", "public", "private", "protected",
                           "try", "catch", "throw", "and", "or", "not", "xor", "NAN", "INFINITY", "INT64_MIN"};

bool is_int_literal(const std::string& s, int64_t& v) {
    if (s.empty()) return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size() || s.size() > 18) return false;
    for (size_t k = i; k < s.size(); k++)
        if (!isdigit(static_cast<unsigned char>(s[k]))) return false;
    v = std::stoll(s);
    return true;
}

// a OP b, folded when both are integer literals.
std::string arith(char op, const std::string& a, const std::string& b, bool is_float) {
    int64_t x, y;
    if (!is_float && is_int_literal(a, x) && is_int_literal(b, y)) {
        switch (op) {
            case '+': return std::to_string(x + y);
            case '-': return std::to_string(x - y);
            case '*': return std::to_string(x * y);
            case '/': if (y != 0) return std::to_string(x / y); break;
            case '%': if (y != 0) return std::to_string(x % y); break;
        }
    }
    if (!is_float && op == '*' && (a == "1" || b == "1")) return a == "1" ? b : a;
    if (!is_float && op == '/' && b == "1") return a;
    if (is_float) return "(double(" + a + ") " + op + " double(" + b + "))";
    if (op == '%') return "(" + a + " % " + b + ")";
    return "(" + a + " " + op + " " + b + ")";
}

// How a value no node output or graph input named is known: weights and constants a lowering added (Scan's
// step indices) are constants; anything else depends on input data.
HostExpr::Kind unnamed_kind(const Val& v) {
    return v.is_weight || (v.host && v.input_deps.empty()) ? HostExpr::Const : HostExpr::Data;
}

// a == b, folded for literals and for a dim (never negative) against a negative literal.
std::string equal_text(const std::string& a, const std::string& b) {
    int64_t x, y;
    bool la = is_int_literal(a, x), lb = is_int_literal(b, y);
    if (la && lb) return x == y ? "1" : "0";
    auto dim = [](const std::string& s) { return s.find("->ne[") != std::string::npos && s.find(' ') == std::string::npos; };
    if ((la && x < 0 && dim(b)) || (lb && y < 0 && dim(a))) return "0";
    return "(" + a + " == " + b + ")";
}

// Placeholder for call k's result inside this node's text, replaced by its name when the node ends.
std::string token_of(size_t k) {
    std::string t(1, '\x01');
    t += std::to_string(k);
    t += '\x02';
    return t;
}

}  // namespace

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
        if (h != host_.end() && h->second.kind == HostExpr::Var) return var_text(h->second) + ".shape";
        auto t = val_var.find(s.src->name);
        if (t != val_var.end() && s.v.size() <= 4 && s.src->t) {
            std::string r = "o2g::Ints{";
            for (size_t a = 0; a < s.v.size(); a++)
                r += (a ? ", " : "") + t->second + "->ne[" + std::to_string(s.v.size() - 1 - a) + "]";
            return r + "}";
        }
        fail_node("needs the shape of '" + s.src->name + "', which has no C++ form");
        return "";
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

std::string ProgramRecorder::host_literal(const HostTensor& h) {
    if (h.numel() > 4096) return "";
    std::string shape = "{", vals = "{";
    for (size_t i = 0; i < h.shape.size(); i++) shape += (i ? ", " : "") + std::to_string(h.shape[i]);
    bool is_float = dtype_is_float(h.dtype);
    for (int64_t k = 0; k < h.numel(); k++) {
        if (k) vals += ", ";
        if (!is_float) {
            int64_t v = h.i64(k);
            vals += v == INT64_MIN ? std::string("INT64_MIN") : std::to_string(v);
            continue;
        }
        double d = h.f64(k);
        if (std::isnan(d)) vals += "NAN";
        else if (std::isinf(d)) vals += d > 0 ? "INFINITY" : "-INFINITY";
        else {
            char buf[40];
            snprintf(buf, sizeof buf, "%.17g", d);
            std::string x = buf;
            if (x.find_first_of(".e") == std::string::npos) x += ".0";
            vals += x;
        }
    }
    return std::string(is_float ? "o2g::host_floats(" : "o2g::host_ints(") + arg_text(*this, h.dtype) + ", " +
           shape + "}, " + vals + "})";
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
    if (k == HostExpr::Const) return lit();
    if (k == HostExpr::Var) return var_text(it->second);
    if (k == HostExpr::Sym && a.src->rank() <= 1 && it->second.e.size() == size_t(a.h->numel())) {
        std::string shape = "{", list;
        if (a.src->rank()) shape += std::to_string(a.h->numel());
        shape += "}";
        for (size_t i = 0; i < it->second.e.size(); i++) list += (i ? ", " : "") + it->second.e[i];
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
        auto sv = std::make_shared<Saved>(Saved{node_, node_on_host_, std::move(calls_), std::move(local_),
                                                std::move(pre_), std::move(direct_reads_), std::move(host_stmts_),
                                                std::move(passed_), std::move(node_fail_), std::move(nested_code_),
                                                std::move(host_calls_)});
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
    fields_.clear();
    field_vals_.clear();
}

std::vector<std::string> ProgramRecorder::host_elems(Lower& L, int i, bool& ok) {
    Val& v = L.in(i);
    auto it = host_.find(v.name);
    if (it != host_.end() && it->second.kind == HostExpr::Sym) return it->second.e;
    std::vector<std::string> r;
    if (!v.host || v.host->numel() > 64) {
        ok = false;
        return r;
    }
    for (int64_t k = 0; k < v.host->numel(); k++) {
        if (dtype_is_float(v.dtype)) {
            double d = v.host->f64(k);
            if (!std::isfinite(d)) ok = false;
            char buf[40];
            snprintf(buf, sizeof buf, "%.17g", d);
            std::string s = buf;
            if (s.find_first_of(".e") == std::string::npos) s += ".0";
            r.push_back(s);
        } else {
            r.push_back(std::to_string(v.host->i64(k)));
        }
    }
    return r;
}

// Shape arithmetic over symbolic dims: the host ops exporters put between Shape and Reshape.
HostExpr ProgramRecorder::eval_sym(Lower& L, const std::vector<const HostExpr*>& in, std::string& why) {
    HostExpr r;
    r.kind = HostExpr::Sym;
    const std::string& op = L.node.op_type;
    Val& out = L.outs[0];
    bool ok = true;
    auto elems = [&](int i) { return host_elems(L, i, ok); };
    int64_t n_out = out.host ? out.host->numel() : -1;
    if (n_out < 0 || n_out > 64) {
        why = "it is computed by " + op + " from shape-dependent values into a shape-dependent number of elements";
        return HostExpr{HostExpr::Bad, {}, why};
    }
    bool is_float = dtype_is_float(out.dtype);
    if (op == "Identity" || op == "Squeeze" || op == "Unsqueeze" || op == "Reshape" || op == "Flatten") {
        r.e = elems(0);
    } else if (op == "Cast" || op == "CastLike") {
        r.e = elems(0);
        bool from_float = dtype_is_float(L.dtype(0));
        if (from_float && !is_float)
            for (auto& e : r.e) e = "int64_t(" + e + ")";
        if (dtype_is_integer(out.dtype) || out.dtype == DType::BOOL) {
        } else if (!from_float) {
            for (auto& e : r.e) e = "double(" + e + ")";
        }
        if (out.dtype == DType::BOOL)
            for (auto& e : r.e) e = "(" + e + " != 0)";
    } else if (op == "Gather" && L.node.get_int("axis", 0) == 0 && L.rank(0) <= 1 && L.has(1) &&
               L.in(1).host && in[1]->kind == HostExpr::Const) {
        auto d = elems(0);
        for (int64_t k : L.in(1).host->to_i64()) {
            int64_t idx = k < 0 ? k + int64_t(d.size()) : k;
            if (idx < 0 || idx >= int64_t(d.size())) ok = false;
            else r.e.push_back(d[size_t(idx)]);
        }
    } else if (op == "Concat") {
        for (int i = 0; i < L.n_in(); i++) {
            if (!L.has(i)) continue;
            if (L.rank(i) > 1) ok = false;
            auto e = elems(i);
            r.e.insert(r.e.end(), e.begin(), e.end());
        }
    } else if (op == "Slice" && L.rank(0) == 1) {
        for (int i = 1; i < L.n_in(); i++)
            if (L.has(i) && in[size_t(i)]->kind != HostExpr::Const) ok = false;
        auto d = elems(0);
        int64_t n = int64_t(d.size());
        int64_t start = L.ints(1)[0], end = L.ints(2)[0], step = L.has(4) ? L.ints(4)[0] : 1;
        if (step == 0) ok = false;
        auto clampi = [&](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
        if (start < 0) start += n;
        if (end < 0) end += n;
        if (step > 0) {
            start = clampi(start, 0, n);
            end = clampi(end, 0, n);
            for (int64_t k = start; k < end && ok; k += step) r.e.push_back(d[size_t(k)]);
        } else if (step < 0) {
            start = clampi(start, -1, n - 1);
            end = clampi(end, -1, n - 1);
            for (int64_t k = start; k > end && ok; k += step) r.e.push_back(d[size_t(k)]);
        }
    } else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Equal" ||
               op == "Max" || op == "Min") {
        auto a = elems(0), b = elems(1);
        size_t n = std::max(a.size(), b.size());
        if ((a.size() != n && a.size() != 1) || (b.size() != n && b.size() != 1)) ok = false;
        for (size_t k = 0; k < n && ok; k++) {
            const std::string& x = a[a.size() == 1 ? 0 : k];
            const std::string& y = b[b.size() == 1 ? 0 : k];
            if (op == "Equal") r.e.push_back(equal_text(x, y));
            else if (op == "Max") r.e.push_back("std::max<int64_t>(" + x + ", " + y + ")");
            else if (op == "Min") r.e.push_back("std::min<int64_t>(" + x + ", " + y + ")");
            else r.e.push_back(arith(op == "Add" ? '+' : op == "Sub" ? '-' : op == "Mul" ? '*' : op == "Div" ? '/' : '%',
                                     x, y, is_float));
        }
    } else if ((op == "Floor" || op == "Ceil" || op == "Sqrt") && is_float) {
        r.e = elems(0);
        std::string f = op == "Floor" ? "std::floor" : op == "Ceil" ? "std::ceil" : "std::sqrt";
        for (auto& e : r.e) e = f + "(double(" + e + "))";
    } else if (op == "Where") {
        auto c = elems(0), a = elems(1), b = elems(2);
        size_t n = size_t(n_out);
        for (size_t k = 0; k < n && ok; k++) {
            auto pick = [&](const std::vector<std::string>& v) -> std::string {
                if (v.size() == 1) return v[0];
                if (v.size() == n) return v[k];
                ok = false;
                return "";
            };
            std::string cc = pick(c), aa = pick(a), bb = pick(b);
            if (ok) r.e.push_back(cc == "1" ? aa : cc == "0" ? bb : "(" + cc + " ? " + aa + " : " + bb + ")");
        }
    } else {
        ok = false;
    }
    if (!ok || int64_t(r.e.size()) != n_out) {
        why = "it is computed on the host by " + op + " from shape-dependent values, which compile cannot write down yet";
        return HostExpr{HostExpr::Bad, {}, why};
    }
    return r;
}

void ProgramRecorder::classify_host_outputs(Lower& L) {
    const OpDef* def = find_op(L.node.domain, L.node.op_type, L.opset);
    std::vector<HostExpr> ins(size_t(L.n_in()));
    std::vector<const HostExpr*> ptrs;
    bool all_const = true, any_data = false, any_bad = false, any_var = false;
    std::string why;
    for (int i = 0; i < L.n_in(); i++) {
        HostExpr& h = ins[size_t(i)];
        if (L.has(i)) {
            Val& v = L.in(i);
            auto it = host_.find(v.name);
            if (it != host_.end()) h = it->second;
            else if (unnamed_kind(v) == HostExpr::Const) h.kind = HostExpr::Const;
            else if (v.t) h = HostExpr{HostExpr::Bad, {}, "it is a device tensor"};
            else h = HostExpr{HostExpr::Data, {}, "it depends on the data of input '" + v.name + "'"};
            if (def && def->shape_only) h.kind = HostExpr::Const;  // only the shape is read: handled below
            all_const &= h.kind == HostExpr::Const;
            any_data |= h.kind == HostExpr::Data;
            any_bad |= h.kind == HostExpr::Bad;
            any_var |= h.kind == HostExpr::Var;
            if (h.kind == HostExpr::Data || h.kind == HostExpr::Bad) why = h.why;
        }
        ptrs.push_back(&h);
    }
    for (size_t o = 0; o < L.outs.size(); o++) {
        Val& out = L.outs[o];
        if (!out.present() || out.t || o >= L.node.outputs.size() || L.node.outputs[o].empty()) continue;
        const std::string& name = L.node.outputs[o];
        HostExpr r;
        if (def && def->shape_only) {
            Val& x = L.in(0);
            int rank = x.rank();
            std::vector<std::string> dims;
            auto xin = input_index_.find(x.name);
            auto xh = host_.find(x.name);
            // Constants have fixed shapes, and so do symbolic vectors (their length is fixed when they are written).
            bool static_shape = x.is_weight || (xh != host_.end() && (xh->second.kind == HostExpr::Const ||
                                                                      xh->second.kind == HostExpr::Sym));
            for (int a = 0; a < rank; a++) {
                if (static_shape) dims.push_back(std::to_string(x.shape[size_t(a)]));
                else if (xin != input_index_.end()) {
                    const ValueInfo& vi = m_.graph.inputs[size_t(xin->second)];
                    bool fixed = vi.has_shape && size_t(a) < vi.dims.size() && vi.dims[size_t(a)].known();
                    dims.push_back(fixed ? std::to_string(vi.dims[size_t(a)].value)
                                         : val_var[x.name] + "->ne[" + std::to_string(rank - 1 - a) + "]");
                } else if (xh != host_.end() && xh->second.kind == HostExpr::Var)
                    dims.push_back(var_text(xh->second) + ".shape[" + std::to_string(a) + "]");
                else if (val_var.count(x.name) && rank <= 4)
                    dims.push_back(val_var[x.name] + "->ne[" + std::to_string(rank - 1 - a) + "]");
                else {
                    r = HostExpr{HostExpr::Bad, {}, "the shape of '" + x.name + "' has no C++ form"};
                    break;
                }
            }
            if (r.kind != HostExpr::Bad) {
                if (L.node.op_type == "Size") {
                    std::string p = "1";
                    for (auto& d : dims) p = arith('*', p, d, false);
                    r.kind = HostExpr::Sym;
                    r.e = {p};
                } else {
                    int64_t s = L.node.get_int("start", 0), e = L.node.get_int("end", rank);
                    if (s < 0) s += rank;
                    if (e < 0) e += rank;
                    s = std::max<int64_t>(0, std::min<int64_t>(s, rank));
                    e = std::max<int64_t>(s, std::min<int64_t>(e, rank));
                    r.kind = HostExpr::Sym;
                    r.e.assign(dims.begin() + s, dims.begin() + e);
                }
                bool all_lit = true;
                int64_t dummy;
                for (auto& d : r.e) all_lit &= is_int_literal(d, dummy);
                if (all_lit) r = HostExpr{HostExpr::Const, {}, ""};
            }
        } else if (!out.name.empty() && host_.count(out.name)) {  // a subgraph's output, or an input passed on
            r = host_[out.name];
        } else if (all_const) {
            r.kind = HostExpr::Const;
        } else {
            int passed = -1;  // an output that is one of the inputs (Identity, a no-op reduction)
            for (int i = 0; i < L.n_in(); i++)
                if (L.has(i) && out.host && out.host == L.in(i).host) passed = i;
            auto call = host_calls_.find(int(o));
            if (passed >= 0) r = ins[size_t(passed)];
            else if (o == 0 && !any_data && !any_bad && !any_var) r = eval_sym(L, ptrs, r.why);
            else r = HostExpr{HostExpr::Bad, {}, any_data || any_bad ? why : "it is computed on the host by " +
                                                  L.node.op_type + ", whose host evaluation is not an op-library call yet"};
            // Where shape arithmetic has no expression, the host function call computes the value in the program.
            if (r.kind == HostExpr::Bad && call != host_calls_.end() && !call->second.empty()) {
                std::string id = ident(name);
                host_stmts_.push_back("o2g::HostTensor " + id + " = " + call->second + ";");
                r = HostExpr{HostExpr::Var, {id}, ""};
            }
        }
        host_[name] = r;
        if (out.host) host_by_ptr_[out.host.get()] = r;
    }
}

void ProgramRecorder::node_end(Lower& L, bool on_host) {
    const Node& n = L.node;
    classify_host_outputs(L);
    bool device = !calls_.empty();
    for (auto& o : L.outs) device |= o.t != nullptr;
    for (const auto& r : direct_reads_)
        if ((device || !host_stmts_.empty()) && !passed_.count(r)) {
            fail_node("reads '" + r + "' itself, a host value that depends on input shapes or data (it must reach "
                      "the op library as an argument)");
            break;
        }
    // Names: each output takes its value's name; other results are "<first output>_<k>".
    std::vector<std::string> names(calls_.size());
    for (size_t o = 0; o < L.outs.size() && o < n.outputs.size(); o++) {
        ggml_tensor* t = L.outs[o].t;
        if (!t || n.outputs[o].empty()) continue;
        for (size_t k = calls_.size(); k-- > 0;)
            if (calls_[k].first == t) {
                if (names[k].empty()) names[k] = ident(n.outputs[o]);
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
        if (it != local_.end()) out_vars[o] = resolve(it->second);
        else if (named != val_var.end()) out_vars[o] = named->second;  // made by a subgraph node, or passed on
        else fail_node("its lowering is not written as op-library calls yet");
    }
    if (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan")
        for (const auto& r : direct_reads_)
            if (!passed_.count(r))
                fail_node("its branch or trip count depends on '" + r + "', which compiled programs do not unroll over yet");
    std::string code = nested_code_;
    for (auto& h : host_stmts_) code += "    " + h + "\n";
    if (device || !pre_.empty()) {
        for (auto& p : pre_) code += "    " + resolve(p) + "\n";
        for (size_t k = 0; k < calls_.size(); k++)
            code += "    ggml_tensor* " + names[k] + " = " + resolve(calls_[k].second) + ";\n";
        for (size_t o = 0; o < out_vars.size(); o++) {
            if (out_vars[o].empty()) continue;
            bool made_here = false;
            for (auto& nm : names) made_here |= nm == out_vars[o];
            if (made_here) code += "    ggml_set_name(" + out_vars[o] + ", " + c_string(n.outputs[o]) + ");\n";
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
    if (!saved_.empty()) {  // back to the enclosing control-flow node
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
        nested_code_ = std::move(sv->nested) + code;
        return;
    }
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
            if (!declared) {
                failures.push_back("graph output '" + name + "': rank " + std::to_string(out_ranks.back()) +
                                   " without a fixed shape in the model; compiled programs return device outputs of "
                                   "rank > 4 only at the shape the model declares");
                continue;
            }
            epilogue.push_back("hout[" + slot + "].shape = o2g::Ints" + o2g::ints_literal(v->second.shape) + ";");
        }
    }
}

}  // namespace onnx2ggml
