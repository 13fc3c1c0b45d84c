// How the compile recorder knows host values (see recorder.h): shape arithmetic over symbolic dims written as C++
// expressions, and the kind of every host output (constant, expression, host variable, or not expressible).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "emit/emit.h"
#include "emit/recorder.h"

namespace onnx2ggml {

namespace {

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

// a == b, folded for literals and for a dim (never negative) against a negative literal.
std::string equal_text(const std::string& a, const std::string& b) {
    int64_t x, y;
    bool la = is_int_literal(a, x), lb = is_int_literal(b, y);
    if (la && lb) return x == y ? "1" : "0";
    auto dim = [](const std::string& s) { return s.find("->ne[") != std::string::npos && s.find(' ') == std::string::npos; };
    if ((la && x < 0 && dim(b)) || (lb && y < 0 && dim(a))) return "0";
    return "(" + a + " == " + b + ")";
}

// Slice of a 1-D symbolic vector, with ONNX's clamping of start and end (step != 0).
std::vector<std::string> slice_elems(const std::vector<std::string>& d, int64_t start, int64_t end, int64_t step) {
    const int64_t n = int64_t(d.size());
    auto clampi = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; };
    if (start < 0) start += n;
    if (end < 0) end += n;
    std::vector<std::string> r;
    if (step > 0) {
        start = clampi(start, 0, n);
        end = clampi(end, 0, n);
        for (int64_t k = start; k < end; k += step) r.push_back(d[size_t(k)]);
    } else {
        start = clampi(start, -1, n - 1);
        end = clampi(end, -1, n - 1);
        for (int64_t k = start; k > end; k += step) r.push_back(d[size_t(k)]);
    }
    return r;
}

// Where over symbolic elements (each operand one element or n); a literal condition picks its side.
std::vector<std::string> where_elems(const std::vector<std::string>& c, const std::vector<std::string>& a,
                                     const std::vector<std::string>& b, size_t n, bool& ok) {
    std::vector<std::string> r;
    for (size_t k = 0; k < n && ok; k++) {
        auto pick = [&](const std::vector<std::string>& v) -> std::string {
            if (v.size() == 1) return v[0];
            if (v.size() == n) return v[k];
            ok = false;
            return "";
        };
        std::string cc = pick(c), aa = pick(a), bb = pick(b);
        if (ok) r.push_back(cc == "1" ? aa : cc == "0" ? bb : "(" + cc + " ? " + aa + " : " + bb + ")");
    }
    return r;
}

}  // namespace

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
        const int64_t step = L.has(4) ? L.ints(4)[0] : 1;
        if (step == 0) ok = false;
        else r.e = slice_elems(d, L.ints(1)[0], L.ints(2)[0], step);
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
        r.e = where_elems(elems(0), elems(1), elems(2), size_t(n_out), ok);
    } else {
        ok = false;
    }
    if (!ok || int64_t(r.e.size()) != n_out) {
        why = "it is computed on the host by " + op + " from shape-dependent values, which compile cannot write down yet";
        return HostExpr{HostExpr::Bad, {}, why};
    }
    return r;
}

// Shape or Size of input 0: its dims as literals where fixed, else as expressions over the program's tensors.
HostExpr ProgramRecorder::shape_expr(Lower& L) {
    HostExpr r;
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
        else if (x.t && shape_var_.count(x.t))  // rank > 4: its recorded shape statement
            dims.push_back(shape_var_.at(x.t) + "[" + std::to_string(a) + "]");
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
        // Device-only outputs have nothing to classify; one that is both (an input passed on) keeps its host kind.
        if (!out.present() || !out.host || o >= L.node.outputs.size() || L.node.outputs[o].empty()) continue;
        const std::string& name = L.node.outputs[o];
        HostExpr r;
        if (def && def->shape_only) {
            r = shape_expr(L);
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

std::string scalar_literal(DType t, const std::string& shape, const std::string& value) {
    if ((t != DType::INT64 && t != DType::FLOAT) || (shape != "{}" && shape != "{1}") || value.empty()) return "";
    return std::string(t == DType::INT64 ? "o2g::host_i64(" : "o2g::host_f32(") + value + (shape == "{}" ? ")" : ", {1})");
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
    std::string one = scalar_literal(h.dtype, shape + "}", vals.substr(1));
    if (!one.empty()) return one;
    return std::string(is_float ? "o2g::host_floats(" : "o2g::host_ints(") + arg_text(*this, h.dtype) + ", " +
           shape + "}, " + vals + "})";
}

}  // namespace onnx2ggml
