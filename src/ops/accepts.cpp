// What an op accepts, from its table row's `accepts` spec, checked by the builder before any lowering runs, so
// that a lowering may index the shapes and attributes its row vouches for (the fuzzer's class of bug).
// Spec: space-separated rules (counts are written by scripts/op_schema.py from the ONNX schemas):
//   in=1..3  out=1  in=2..        input / output counts (".." alone: no upper bound)
//   r0>=1  r1=2  r0=3..5  r*>=1   rank of input 0, 1, ... or of every input (omitted inputs are not checked)
//   t0=float  t1=int              dtype class of an input
//   @name:T[rule]                 attribute type T (i f s t g is fs ss) and, for numbers, a rule on each value:
//                                 >=x >x <=x =a..b, or ~r0 (an axis of input 0: -r <= a < r), ~r0+ (-r-1 <= a <= r)
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/error.h"
#include "ops/op.h"

namespace onnx2ggml {

namespace {

std::vector<std::string> tokens(const char* spec) {
    std::vector<std::string> r;
    std::string cur;
    for (const char* p = spec; *p; p++) {
        if (*p == ' ') {
            if (!cur.empty()) r.push_back(cur);
            cur.clear();
        } else cur += *p;
    }
    if (!cur.empty()) r.push_back(cur);
    return r;
}

[[noreturn]] void bad_spec(const OpDef& d, const std::string& tok) {
    throw std::logic_error(std::string("op table: row ") + d.op + " (since " + std::to_string(d.since) +
                           "): bad accepts rule '" + tok + "'");
}

double number(const OpDef& d, const std::string& tok, const std::string& s) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end) bad_spec(d, tok);
    return v;
}

// "a..b", "a..", "a" (after '='), ">=a", ">a", "<=b" into [lo, hi]; false if the text is none of these.
struct Range {
    double lo = -1e300, hi = 1e300;
    bool lo_open = false;
};
bool parse_range(const OpDef& d, const std::string& tok, const std::string& s, Range& r) {
    if (s.rfind(">=", 0) == 0) r.lo = number(d, tok, s.substr(2));
    else if (s.rfind("<=", 0) == 0) r.hi = number(d, tok, s.substr(2));
    else if (s.rfind(">", 0) == 0) r.lo = number(d, tok, s.substr(1)), r.lo_open = true;
    else if (s.rfind("=", 0) == 0) {
        const std::string v = s.substr(1);
        const size_t dots = v.find("..");
        if (dots == std::string::npos) r.lo = r.hi = number(d, tok, v);
        else {
            r.lo = number(d, tok, v.substr(0, dots));
            if (dots + 2 < v.size()) r.hi = number(d, tok, v.substr(dots + 2));
        }
    } else return false;
    return true;
}
bool in_range(const Range& r, double v) { return (r.lo_open ? v > r.lo : v >= r.lo) && v <= r.hi; }

std::string num_text(double v) {
    if (v > -1e15 && v < 1e15 && v == double(int64_t(v))) return std::to_string(int64_t(v));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string range_text(const Range& r) {
    if (r.lo == r.hi) return num_text(r.lo);
    if (r.hi >= 1e300) return (r.lo_open ? "> " : ">= ") + num_text(r.lo);
    if (r.lo <= -1e300) return "<= " + num_text(r.hi);
    return num_text(r.lo) + " to " + num_text(r.hi);
}

// The in= and out= rules against the node's input and output counts: "" when they hold.
std::string count_error(const OpDef& d, const Node& n) {
    for (const std::string& tok : tokens(d.accepts)) {
        Range r;
        const bool in = tok.rfind("in", 0) == 0 && parse_range(d, tok, tok.substr(2), r);
        const bool out = !in && tok.rfind("out", 0) == 0 && parse_range(d, tok, tok.substr(3), r);
        const size_t k = in ? n.inputs.size() : n.outputs.size();
        if ((in || out) && !in_range(r, double(k)))
            return "has " + std::to_string(k) + (in ? " inputs" : " outputs") + "; this op takes " + range_text(r);
    }
    return "";
}

std::string input_name(const Lower& L, int i) {
    return "input " + std::to_string(i) + " '" + L.node.inputs[size_t(i)] + "'";
}

void check_rank(const Lower& L, const OpDef& d, const std::string& tok, const std::string& idx, const Range& r) {
    for (int i = 0; i < L.n_in(); i++) {
        if ((idx != "*" && i != int(number(d, tok, idx))) || !L.has(i) || L.ins[size_t(i)]->seq) continue;
        const int rank = L.ins[size_t(i)]->rank();
        if (!in_range(r, rank))
            L.error(input_name(L, i) + " has rank " + std::to_string(rank) + "; this op needs rank " + range_text(r));
    }
}

void check_dtype(const Lower& L, const OpDef& d, const std::string& tok, int i, const std::string& cls) {
    if (!L.has(i)) return;
    const DType t = L.ins[size_t(i)]->dtype;
    const bool ok = cls == "float" ? dtype_is_float(t) : cls == "int" ? dtype_is_integer(t)
                  : cls == "bool"  ? t == DType::BOOL
                                   : (bad_spec(d, tok), false);
    if (!ok)
        L.error(input_name(L, i) + " is " + dtype_name(t) + "; this op needs " +
                (cls == "int" ? "an integer" : "a " + cls) + " tensor");
}

bool type_matches(const std::string& ty, AttrType t) {
    if (ty == "i") return t == AttrType::INT;
    if (ty == "f") return t == AttrType::FLOAT || t == AttrType::INT;  // an integer literal for a float is harmless
    if (ty == "s") return t == AttrType::STRING;
    if (ty == "t") return t == AttrType::TENSOR;
    if (ty == "g") return t == AttrType::GRAPH;
    if (ty == "is") return t == AttrType::INTS;
    if (ty == "fs") return t == AttrType::FLOATS || t == AttrType::INTS;
    if (ty == "ss") return t == AttrType::STRINGS;
    return false;
}
const char* type_text(const std::string& ty) {
    if (ty == "i") return "an int";
    if (ty == "f") return "a float";
    if (ty == "s") return "a string";
    if (ty == "t") return "a tensor";
    if (ty == "g") return "a graph";
    return ty == "is" ? "a list of ints" : ty == "fs" ? "a list of floats" : "a list of strings";
}

// @name:T[rule]
void check_attr(const Lower& L, const OpDef& d, const std::string& tok) {
    const size_t colon = tok.find(':');
    if (colon == std::string::npos) bad_spec(d, tok);
    const std::string name = tok.substr(1, colon - 1);
    size_t k = colon + 1;
    while (k < tok.size() && std::isalpha(static_cast<unsigned char>(tok[k]))) k++;
    const std::string ty = tok.substr(colon + 1, k - colon - 1), rule = tok.substr(k);
    static const std::vector<std::string> types = {"i", "f", "s", "t", "g", "is", "fs", "ss"};
    if (std::find(types.begin(), types.end(), ty) == types.end()) bad_spec(d, tok);
    const Attribute* a = L.node.attr(name);
    if (!a) return;  // the default applies, and the row's defaults are valid
    if (!type_matches(ty, a->type)) L.error("attribute '" + name + "' must be " + type_text(ty));
    if (rule.empty()) return;
    std::vector<double> vals;
    if (a->type == AttrType::INT) vals = {double(a->i)};
    else if (a->type == AttrType::FLOAT) vals = {double(a->f)};
    else if (a->type == AttrType::INTS) vals.assign(a->ints.begin(), a->ints.end());
    else if (a->type == AttrType::FLOATS) vals.assign(a->floats.begin(), a->floats.end());
    else bad_spec(d, tok);
    Range r;
    std::string what;
    if (rule.rfind("~r", 0) == 0) {  // an axis of input n
        const bool past = rule.back() == '+';
        const int n = int(number(d, tok, rule.substr(2, rule.size() - 2 - past)));
        if (!L.has(n)) return;
        const int rank = L.ins[size_t(n)]->rank() + past;
        r.lo = -rank, r.hi = rank - 1;
        what = "an axis of " + input_name(L, n) + " (rank " + std::to_string(L.ins[size_t(n)]->rank()) + "): " +
               (rank ? range_text(r) : "none exists");
    } else if (parse_range(d, tok, rule, r)) what = range_text(r);
    else bad_spec(d, tok);
    for (double v : vals)
        if (!in_range(r, v) || v != v) L.error("attribute '" + name + "' is " + num_text(v) + "; it must be " + what);
}

}  // namespace

void check_accepts(const Lower& L, const OpDef& d) {
    const std::string counts = count_error(d, L.node);
    if (!counts.empty()) L.error(counts);
    for (const std::string& tok : tokens(d.accepts)) {
        Range r;
        if (tok[0] == '@') check_attr(L, d, tok);
        else if (tok.rfind("in", 0) == 0 || tok.rfind("out", 0) == 0) continue;  // counted above
        else if (tok[0] == 'r' && tok.size() > 2) {
            const size_t op = tok.find_first_of("<>=");
            if (op == std::string::npos || !parse_range(d, tok, tok.substr(op), r)) bad_spec(d, tok);
            check_rank(L, d, tok, tok.substr(1, op - 1), r);
        } else if (tok[0] == 't' && tok.find('=') != std::string::npos) {
            const size_t eq = tok.find('=');
            check_dtype(L, d, tok, int(number(d, tok, tok.substr(1, eq - 1))), tok.substr(eq + 1));
        } else bad_spec(d, tok);
    }
}

void check_counts(const Model& m, const Node& n) {
    const int64_t opset = m.opset(n.domain);
    const OpDef* d = find_op(n.domain, n.op_type, opset);
    const std::string e = d ? count_error(*d, n) : "";
    if (!e.empty()) throw Error(m.path + ": " + n.describe() + " (opset " + std::to_string(opset) + "): " + e);
}

}  // namespace onnx2ggml
