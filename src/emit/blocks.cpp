// Runs of structurally identical blocks in build(), folded into one function called per block. The recorded code
// is tokenized; a block's template abstracts its local variables, the values it takes from before (the previous
// block's output, values shared by every block such as an attention mask, and one value per block made before the
// run, such as a UNet's skip connection), its weight fields and the names it gives results. Blocks whose templates
// are equal and whose only link is that output become a loop; the calls and their order stay those of `run`, so the
// numbers do not change. Runs with the same code share one function.
#include "emit/blocks.h"

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace onnx2ggml {

namespace {

struct Tok {
    enum Kind { Id, Weight, Str, Other } kind;
    std::string s;
};

bool word_char(char c) { return isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Identifiers after '.', '->' or '::' are members and qualified names (left as they are); `w.F` is weight F.
std::vector<Tok> tokenize(const std::string& line) {
    std::vector<Tok> t;
    for (size_t i = 0; i < line.size();) {
        char c = line[i];
        size_t b = i;
        if (c == '"') {
            for (i++; i < line.size() && line[i] != '"'; i++)
                if (line[i] == '\\') i++;
            t.push_back({Tok::Str, line.substr(b, ++i - b)});
        } else if (isdigit(static_cast<unsigned char>(c))) {
            while (i < line.size() && (word_char(line[i]) || line[i] == '.' ||
                                       ((line[i] == '+' || line[i] == '-') && (line[i - 1] == 'e' || line[i - 1] == 'E'))))
                i++;
            t.push_back({Tok::Other, line.substr(b, i - b)});
        } else if (word_char(c)) {
            while (i < line.size() && word_char(line[i])) i++;
            std::string id = line.substr(b, i - b);
            bool member = b > 0 && (line[b - 1] == '.' || line[b - 1] == '>' || line[b - 1] == ':');
            if (id == "w" && !member && i < line.size() && line[i] == '.') {
                size_t e = ++i;
                while (e < line.size() && word_char(line[e])) e++;
                t.push_back({Tok::Weight, line.substr(i, e - i)});
                i = e;
            } else t.push_back({member ? Tok::Other : Tok::Id, id});
        } else {
            t.push_back({Tok::Other, std::string(1, c)});
            i++;
        }
    }
    return t;
}

// "TYPE NAME = ..." or "TYPE NAME;": the declared name and its type, or false.
bool declaration(const std::string& line, std::string& name, std::string& type) {
    static const std::regex re(R"(^\s*((?:const\s+)?[A-Za-z_][\w:]*(?:<[^=;]*>)?(?:\s*\*\s*|\s+))([A-Za-z_]\w*)\s*(?:=[^=]|;))");
    std::smatch m;
    if (!std::regex_search(line, m, re)) return false;
    type = m[1].str();
    while (!type.empty() && type.back() == ' ') type.pop_back();
    name = m[2].str();
    return type != "return" && type != "throw" && type != "else" && type != "delete";
}

struct Line {
    std::string text;
    std::vector<Tok> toks;
    std::string decl, type;  // what it declares, if anything
};

struct Program {
    std::vector<std::vector<Line>> nodes;  // per node: its lines
    std::map<std::string, std::pair<int, std::string>> vars;  // variable -> (declaring node, -1: prologue; type)
    std::vector<std::map<std::string, int>> uses;             // per node: variable -> occurrences
    std::map<std::string, int> total;
};

// One candidate block: a node range analysed against the run it would belong to.
struct Seg {
    bool ok = false;
    std::string tmpl;
    std::vector<std::string> ext, weights, strs, locals, hoisted;
    std::vector<bool> str_last;  // per name: the last argument of its call (where cb takes it)
    std::vector<int> body;  // indices of its non-hoisted lines, as (node << 16 | line)
    std::string out;
    int named = 0;
};

bool plain(const std::string& s) {
    size_t b = s.find_first_not_of(' ');
    if (b == std::string::npos) return true;
    std::string t = s.substr(b);
    return t.rfind("for (", 0) && t.rfind("if (", 0) && t.rfind("}", 0) && t.rfind("else", 0) && t.back() != '{';
}

Seg analyse(const Program& P, int a, int b, int run_start) {
    Seg s;
    std::set<std::string> hoisted_vars, locals;
    std::map<std::string, std::string> ph;  // variable or weight -> placeholder
    for (int n = a; n < b; n++)
        for (size_t li = 0; li < P.nodes[size_t(n)].size(); li++) {
            const Line& l = P.nodes[size_t(n)][li];
            if (l.text.find_first_not_of(' ') != std::string::npos && l.text.compare(l.text.find_first_not_of(' '), 2, "//") == 0)
                continue;
            if (!plain(l.text)) return s;
            bool hoist = !l.decl.empty(), named = false;
            for (const Tok& t : l.toks) {
                if (t.kind == Tok::Weight) hoist = false;
                if (t.kind != Tok::Id) continue;
                if (t.s == "cb") hoist = false, named = true;
                if (t.s == "in" || t.s == "hin" || t.s == "out" || t.s == "hout" || t.s == "w") return s;
                auto v = P.vars.find(t.s);
                if (v != P.vars.end() && t.s != l.decl && v->second.first >= run_start && !hoisted_vars.count(t.s))
                    hoist = false;
            }
            if (hoist) {
                hoisted_vars.insert(l.decl);
                s.hoisted.push_back(l.text);
                continue;
            }
            s.named += named;
            s.body.push_back(n << 16 | int(li));
            for (const Tok& t : l.toks) {
                std::string p;
                if (t.kind == Tok::Weight) {
                    if (!ph.count("w." + t.s)) ph["w." + t.s] = "W" + std::to_string(s.weights.size()), s.weights.push_back(t.s);
                    p = ph["w." + t.s];
                } else if (t.kind == Tok::Str) {
                    p = "S";
                    s.strs.push_back(t.s);
                    size_t at = size_t(&t - l.toks.data()) + 1;
                    while (at < l.toks.size() && l.toks[at].s == " ") at++;
                    s.str_last.push_back(at < l.toks.size() && l.toks[at].s == ")");
                } else if (t.kind == Tok::Id && (t.s == l.decl || locals.count(t.s))) {
                    if (!ph.count(t.s)) ph[t.s] = "L" + std::to_string(s.locals.size()), s.locals.push_back(t.s);
                    p = ph[t.s];
                } else if (t.kind == Tok::Id && P.vars.count(t.s)) {
                    if (!ph.count(t.s)) ph[t.s] = "E" + std::to_string(s.ext.size()), s.ext.push_back(t.s);
                    p = ph[t.s];
                } else p = t.s;
                s.tmpl += p + '\x01';
            }
            s.tmpl += '\n';
            if (!l.decl.empty()) locals.insert(l.decl), s.out = l.decl;
        }
    s.ok = !s.weights.empty() && s.named >= 3 && !s.out.empty() && P.vars.at(s.out).second == "ggml_tensor*";
    return s;
}

// The cb arguments that give a name differing by block (string literals, quotes included), or "": "P<n>Q" with n
// counting up by one (`"P", il + n0, "Q"`), or torch's suffixes for repeated names, "PQ", "P_1Q", "P_2Q"
// (`"P", "_", il, "Q"`); il counts from `base`. `pre` gets P, `first` n0.
std::string name_args(const std::vector<std::string>& v, long base = 0, std::string* pre = nullptr, long* first_n = nullptr) {
    for (size_t i = 1; i + 1 < v[0].size(); i++) {  // torch's suffixes
        bool ok = true;
        for (size_t k = 1; k < v.size() && ok; k++) ok = v[k] == v[0].substr(0, i) + "_" + std::to_string(k) + v[0].substr(i);
        if (!ok) continue;
        if (pre) *pre = "";  // names no block
        return v[0].substr(0, i) + "\", \"_\", il" + (base ? " - " + std::to_string(base) : "") + ", \"" + v[0].substr(i);
    }
    size_t p = 0, q = 0;
    auto all = [&](auto f) { return std::all_of(v.begin(), v.end(), f); };
    while (all([&](const std::string& x) { return p < x.size() && x[p] == v[0][p]; })) p++;
    while (all([&](const std::string& x) { return q + p < x.size() && x[x.size() - 1 - q] == v[0][v[0].size() - 1 - q]; })) q++;
    if (p == 0 || isdigit(static_cast<unsigned char>(v[0][p - 1]))) return "";
    long first = 0;
    for (size_t k = 0; k < v.size(); k++) {
        std::string mid = v[k].substr(p, v[k].size() - p - q);
        if (mid.empty() || mid.size() > 6 || !std::all_of(mid.begin(), mid.end(), ::isdigit)) return "";
        if (k == 0) first = std::stol(mid);
        else if (std::stol(mid) != first + long(k)) return "";
    }
    if (pre) *pre = v[0].substr(0, p);
    if (first_n) *first_n = first;
    first -= base;
    return v[0].substr(0, p) + "\", il" + (first > 0 ? " + " + std::to_string(first) : first < 0 ? " - " + std::to_string(-first) : "") +
           ", \"" + v[0].substr(v[0].size() - q);
}

struct Run {
    int start, period, count;
    std::vector<Seg> segs;
    int carry = -1;              // the external that is the previous block's output
    std::vector<bool> per_block;  // per external: differs by block (a UNet's skip connection), else shared
};

// Checks that the blocks link only through their outputs and name their results by block index.
bool validate(const Program& P, Run& r) {
    r.segs.clear();
    for (int k = 0; k < r.count; k++) {
        r.segs.push_back(analyse(P, r.start + k * r.period, r.start + (k + 1) * r.period, r.start));
        if (!r.segs.back().ok || r.segs.back().tmpl != r.segs[0].tmpl) return false;
    }
    const Seg& s0 = r.segs[0];
    r.carry = -1;
    r.per_block.assign(s0.ext.size(), false);
    for (size_t j = 0; j < s0.ext.size(); j++) {
        bool carry = true, shared = true;
        for (int k = 1; k < r.count; k++) {
            carry &= r.segs[size_t(k)].ext[j] == r.segs[size_t(k - 1)].out;
            shared &= r.segs[size_t(k)].ext[j] == s0.ext[j];
        }
        if (carry && r.carry < 0) r.carry = int(j);
        else if (!shared)
            for (auto& s : r.segs) {  // made before the run, one per block
                auto v = P.vars.at(s.ext[j]);
                if (v.first >= r.start || v.second != "ggml_tensor*") return false;
                r.per_block[j] = true;
            }
    }
    if (r.carry < 0 || P.vars.at(s0.ext[size_t(r.carry)]).second != "ggml_tensor*") return false;
    for (int k = 0; k < r.count; k++) {
        const Seg& s = r.segs[size_t(k)];
        for (const std::string& v : s.locals) {
            int inside = 0, next = 0;
            for (int n = r.start + k * r.period; n < r.start + (k + 1) * r.period; n++) inside += P.uses[size_t(n)].count(v) ? P.uses[size_t(n)].at(v) : 0;
            if (v == s.out && k + 1 < r.count)
                for (int n = r.start + (k + 1) * r.period; n < r.start + (k + 2) * r.period; n++)
                    next += P.uses[size_t(n)].count(v) ? P.uses[size_t(n)].at(v) : 0;
            if (!(v == s.out && k + 1 == r.count) && P.total.at(v) - inside != next) return false;
        }
    }
    for (size_t j = 0; j < s0.strs.size(); j++) {
        std::vector<std::string> v;
        for (auto& s : r.segs) v.push_back(s.strs[j]);
        if (std::any_of(v.begin(), v.end(), [&](const std::string& x) { return x != v[0]; }) &&
            (!s0.str_last[j] || name_args(v).empty()))
            return false;
    }
    return true;
}

Program parse(const std::vector<NodeText>& nodes, const std::vector<std::string>& prologue) {
    Program P;
    std::string name, type;
    for (const std::string& l : prologue)
        if (declaration(l, name, type)) P.vars[name] = {-1, type};
    for (size_t n = 0; n < nodes.size(); n++) {
        P.nodes.emplace_back();
        P.uses.emplace_back();
        std::istringstream in(nodes[n].code);
        std::string text;
        while (std::getline(in, text)) {
            Line l{text, tokenize(text), "", ""};
            if (declaration(text, l.decl, l.type)) P.vars[l.decl] = {int(n), l.type};
            P.nodes[n].push_back(std::move(l));
        }
    }
    for (size_t n = 0; n < nodes.size(); n++)
        for (const Line& l : P.nodes[n])
            for (const Tok& t : l.toks)
                if (t.kind == Tok::Id && P.vars.count(t.s)) P.uses[n][t.s]++, P.total[t.s]++;
    return P;
}

// A cheap per-node signature (its named results with identifiers blanked) to find candidate runs.
std::vector<size_t> signatures(const Program& P) {
    std::vector<size_t> sig;
    for (auto& node : P.nodes) {
        std::string s;
        for (const Line& l : node) {
            if (l.text.find("cb(") == std::string::npos) continue;
            for (const Tok& t : l.toks) s += t.kind == Tok::Other ? t.s : t.kind == Tok::Id && !P.vars.count(t.s) ? t.s : "#";
            s += '\n';
        }
        sig.push_back(std::hash<std::string>()(s));
    }
    return sig;
}

std::vector<Run> find_runs(const Program& P) {
    std::vector<size_t> sig = signatures(P);
    int n = int(sig.size()) - 1;  // the last is build()'s tail
    std::vector<Run> runs;
    for (int i = 0; i < n;) {
        std::vector<Run> cands;
        for (int p = 1; i + 2 * p <= n; p++) {
            int k = 1;
            while (i + (k + 1) * p <= n && std::equal(sig.begin() + i, sig.begin() + i + p, sig.begin() + i + k * p)) k++;
            if (k >= 2) cands.push_back({i, p, k, {}, -1});
        }
        std::stable_sort(cands.begin(), cands.end(),
                         [](const Run& x, const Run& y) { return x.period * x.count > y.period * y.count; });
        bool found = false;
        for (size_t c = 0; c < cands.size() && c < 16 && !found; c++)
            for (Run r = cands[c]; r.count >= 2 && !found; r.count--)
                if (validate(P, r)) runs.push_back(r), found = true;
        i = found ? i + runs.back().period * runs.back().count : i + 1;
    }
    return runs;
}

// "a_b_3_c_d" against "a_b_4_c_d": the part after the tokens that differ ("c_d"); "" where none is left.
std::string strip_index(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        std::vector<std::string> t;
        std::stringstream in(s);
        for (std::string x; std::getline(in, x, '_');) t.push_back(x);
        return t;
    };
    std::vector<std::string> x = split(a), y = split(b);
    auto number = [](const std::string& t) { return !t.empty() && std::all_of(t.begin(), t.end(), ::isdigit); };
    if (x.size() != y.size()) {  // "up_blocks_1_Concat" against "up_blocks_1_Concat_1": after the last number
        std::string r;
        for (auto& t : x) r = number(t) ? "" : r + (r.empty() ? "" : "_") + t;
        return r == a || r.empty() || isdigit(static_cast<unsigned char>(r[0])) ? "" : r;
    }
    size_t d = x.size();
    for (size_t i = 0; i < x.size(); i++)
        if (x[i] != y[i]) d = i;
    std::string r;
    for (size_t i = d + 1; i < x.size() && d < x.size(); i++) r += (r.empty() ? "" : "_") + x[i];
    return r.empty() || isdigit(static_cast<unsigned char>(r[0])) ? "" : r;
}

std::string unique(std::string name, std::set<std::string>& taken) {
    std::string r = name;
    for (int k = 2; taken.count(r); k++) r = name + "_" + std::to_string(k);
    taken.insert(r);
    return r;
}

// A node's head comment for the block function: its index left out, the first number that differs from the next
// block's written as '*', and its shape only where every block has the same.
std::string block_head(const std::string& h0, const std::string& h1) {
    static const std::regex idx(R"(\[\d+\] )");
    std::string a = std::regex_replace(h0, idx, ""), b = std::regex_replace(h1, idx, "");
    size_t sa = a.find(" -> "), sb = b.find(" -> ");
    if (sa != std::string::npos && sb != std::string::npos && a.substr(sa) != b.substr(sb))
        a = a.substr(0, sa) + "\n", b = b.substr(0, sb) + "\n";
    size_t p = 0;
    while (p < a.size() && p < b.size() && a[p] == b[p]) p++;
    while (p > 0 && isdigit(static_cast<unsigned char>(a[p - 1]))) p--;
    size_t e = p;
    while (e < a.size() && isdigit(static_cast<unsigned char>(a[e]))) e++;
    return e > p ? a.substr(0, p) + "*" + a.substr(e) : a;
}

// The names the block function gives the block's locals, weights and inputs.
struct BlockNames {
    std::string fn, type, array, carry;
    std::map<size_t, std::string> inputs;   // per-block input -> the array of them in build()
    long base = 0;                          // the index the first block's names carry (features.3: 3)
    std::map<std::string, std::string> var;  // block 0's local or input -> its name in the function
    std::vector<std::string> field;          // per weight
};

BlockNames block_names(const Program& P, const Run& r, std::set<std::string>& taken) {
    const Seg &s0 = r.segs[0], &s1 = r.segs[1];
    BlockNames n;
    std::string base = "block", pre;
    for (size_t j = 0; j < s0.strs.size() && base == "block"; j++) {
        std::vector<std::string> v;
        for (auto& s : r.segs) v.push_back(s.strs[j]);
        if (v[0] != v[1] && !name_args(v, 0, &pre).empty()) {
            std::string t = pre.substr(pre.find_last_of('/') + 1), id;
            for (char c : t) id += word_char(c) ? c : '_';
            while (!id.empty() && id.back() == '_') id.pop_back();
            while (!id.empty() && id[0] == '_') id.erase(0, 1);
            if (!id.empty() && !isdigit(static_cast<unsigned char>(id[0]))) base = id;
            name_args(v, 0, nullptr, &n.base);
        }
    }
    n.fn = unique(base + "_block", taken);
    n.type = unique(n.fn + "_w", taken);
    n.array = unique(base + "_w", taken);
    std::set<std::string> local{"ctx", "b", "il", "cb", "o2g"};
    for (size_t j = 0; j < s0.ext.size(); j++)
        if (int(j) != r.carry && !r.per_block[j]) local.insert(s0.ext[j]), n.var[s0.ext[j]] = s0.ext[j];
    n.carry = unique("x", local);
    for (size_t j = 0; j < s0.ext.size(); j++)
        if (r.per_block[j]) n.var[s0.ext[j]] = unique("skip", local), n.inputs[j] = unique(base + "_" + n.var[s0.ext[j]], taken);
    n.var[s0.ext[size_t(r.carry)]] = n.carry;
    for (size_t j = 0; j < s0.locals.size(); j++) {
        std::string s = strip_index(s0.locals[j], s1.locals[j]);
        n.var[s0.locals[j]] = unique(s.empty() ? "t" + std::to_string(j) : s, local);
    }
    std::set<std::string> fields;
    for (size_t j = 0; j < s0.weights.size(); j++) {
        std::string s = strip_index(s0.weights[j], s1.weights[j]);
        for (int id : s0.body) {  // unnamed (onnx::MatMul_300): after the result that reads it
            const Line& l = P.nodes[size_t(id >> 16)][size_t(id & 0xffff)];
            for (const Tok& t : l.toks)
                if (s.empty() && t.kind == Tok::Weight && t.s == s0.weights[j] && !l.decl.empty()) s = n.var[l.decl] + "_w";
        }
        n.field.push_back(unique(s.empty() ? "w" + std::to_string(j) : s, fields));
    }
    return n;
}

// One line of block 0, written for block il.
std::string block_line(const Line& l, const Run& r, const BlockNames& n, size_t& str_at, const Program& P, int node) {
    const Seg& s0 = r.segs[0];
    std::string out;
    for (const Tok& t : l.toks) {
        if (t.kind == Tok::Weight) {
            size_t j = size_t(std::find(s0.weights.begin(), s0.weights.end(), t.s) - s0.weights.begin());
            out += "b." + n.field[j];
        } else if (t.kind == Tok::Str) {
            std::vector<std::string> v;
            for (auto& s : r.segs) v.push_back(s.strs[str_at]);
            str_at++;
            out += v[0] != v[1] ? name_args(v, n.base) : t.s;
        } else if (t.kind == Tok::Id && n.var.count(t.s)) out += n.var.at(t.s);
        else out += t.s;
    }
    // A result nothing reads stays a plain cb(...) statement, as in build().
    size_t eq = out.find(" = cb(");
    if (!l.decl.empty() && l.decl != s0.out && P.uses[size_t(node)].at(l.decl) == 1 && P.total.at(l.decl) == 1 &&
        eq != std::string::npos)
        out.erase(out.find_first_not_of(' '), eq + 3 - out.find_first_not_of(' '));
    return out + "\n";
}

// A block function and its weights struct; `key` is its code without comments, which later runs may share.
struct BlockFn {
    std::string key, text, fn, type;
    int runs = 1;
};

std::string write_blocks(const Program& P, const std::vector<NodeText>& nodes, const Run& r, std::set<std::string>& taken,
                         std::vector<BlockFn>& fns) {
    const Seg& s0 = r.segs[0];
    BlockNames n = block_names(P, r, taken);
    std::ostringstream d;
    d << "// A block that repeats with other weights: the weights of one, and its nodes.\n"
      << "struct @TYPE@ {\n";
    for (auto& f : n.field) d << "    ggml_tensor* " << f << ";\n";
    d << "};\n\nstatic ggml_tensor* @FN@([[maybe_unused]] o2g::Ctx& ctx, const @TYPE@& b, ggml_tensor* " << n.carry;
    for (size_t j = 0; j < s0.ext.size(); j++) {
        if (int(j) == r.carry) continue;
        if (r.per_block[j]) {
            d << ", ggml_tensor* " << n.var.at(s0.ext[j]);
            continue;
        }
        std::string type = P.vars.at(s0.ext[j]).second;
        if (type.rfind("const ", 0) == 0) type = type.substr(6);
        d << ", " << (type == "ggml_tensor*" ? type + " " : "const " + type + "& ") << s0.ext[j];
    }
    bool names = false;
    std::string lines;
    size_t str_at = 0;
    for (int node = r.start; node < r.start + r.period; node++) {
        lines += block_head(nodes[size_t(node)].head, nodes[size_t(node + r.period)].head);
        for (int id : s0.body)
            if ((id >> 16) == node) lines += block_line(P.nodes[size_t(node)][size_t(id & 0xffff)], r, n, str_at, P, node);
    }
    names = lines.find(", il") != std::string::npos;
    d << ", " << (names ? "" : "[[maybe_unused]] ") << "int il) {\n" << lines << "    return " << n.var.at(s0.out)
      << ";\n}\n\n";
    std::string key;
    std::istringstream in(d.str());
    for (std::string l; std::getline(in, l);)
        if (l.find("//") == std::string::npos) key += l + "\n";
    auto same = std::find_if(fns.begin(), fns.end(), [&](const BlockFn& f) { return f.key == key; });
    if (same != fns.end()) {  // the same code as an earlier run's function: call that one
        taken.erase(n.fn), taken.erase(n.type);
        n.fn = same->fn, n.type = same->type;
        same->runs++;
    } else fns.push_back({key, d.str(), n.fn, n.type});

    auto index = [&](int node) {
        const std::string& h = nodes[size_t(node)].head;
        size_t a = h.find('['), e = h.find(']');
        return a == std::string::npos || e == std::string::npos ? std::string() : h.substr(a, e + 1 - a);
    };
    std::string b = "    // " + index(r.start) + ".." + index(r.start + r.period * r.count - 1) + ": " +
                    std::to_string(r.count) + " blocks in a row, one call of " + n.fn + " each\n";
    for (auto& s : r.segs)
        for (auto& h : s.hoisted) b += h + "\n";
    b += "    const " + n.type + " " + n.array + "[" + std::to_string(r.count) + "] = {\n";
    for (auto& s : r.segs) {
        b += "        {";
        for (size_t j = 0; j < s.weights.size(); j++) b += (j ? ", w." : "w.") + s.weights[j];
        b += "},\n";
    }
    b += "    };\n";
    for (auto& [j, array] : n.inputs) {
        b += "    ggml_tensor* const " + array + "[" + std::to_string(r.count) + "] = {";
        for (size_t k = 0; k < r.segs.size(); k++) b += (k ? ", " : "") + r.segs[k].ext[j];
        b += "};\n";
    }
    const std::string& out = r.segs.back().out;
    b += "    ggml_tensor* " + out + " = " + s0.ext[size_t(r.carry)] + ";\n";
    b += "    for (int il = 0; il < " + std::to_string(r.count) + "; il++)\n        " + out + " = " + n.fn + "(ctx, " +
         n.array + "[il], " + out;
    for (size_t j = 0; j < s0.ext.size(); j++)
        if (int(j) != r.carry) b += ", " + (r.per_block[j] ? n.inputs.at(j) + "[il]" : s0.ext[j]);
    return b + ", il" + (n.base ? " + " + std::to_string(n.base) : "") + ");\n";
}

}  // namespace

std::string fold_blocks(const std::vector<NodeText>& nodes, const std::vector<std::string>& prologue,
                        const std::string& tail, std::string& defs) {
    std::vector<NodeText> all = nodes;
    all.push_back({"", tail});  // read by nothing in a run: counted, never folded
    Program P = parse(all, prologue);
    std::vector<Run> runs = find_runs(P);
    std::string body;
    std::set<std::string> taken;
    std::vector<BlockFn> fns;
    for (auto& [v, d] : P.vars) taken.insert(v);
    size_t next = 0;
    for (size_t i = 0; i < nodes.size();) {
        if (next < runs.size() && int(i) == runs[next].start) {
            body += write_blocks(P, nodes, runs[next], taken, fns);
            i += size_t(runs[next].period * runs[next].count);
            next++;
            continue;
        }
        body += nodes[i].head + nodes[i].code;
        i++;
    }
    static const std::regex shape(R"( -> \[[^\]]*\]$)");
    for (BlockFn& f : fns) {
        std::string text, line;
        std::istringstream in(f.text);
        while (std::getline(in, line))  // a function several runs share: its shapes are those of one
            text += (f.runs > 1 && line.find("    // ") == 0 ? std::regex_replace(line, shape, "") : line) + "\n";
        for (const std::string& ph : {std::string("@FN@"), std::string("@TYPE@")})
            for (size_t p; (p = text.find(ph)) != std::string::npos;) text.replace(p, ph.size(), ph == "@FN@" ? f.fn : f.type);
        defs += text;
    }
    return body;
}

}  // namespace onnx2ggml
