// Protobuf tree of an ONNX model and the mutations the session fuzzer applies to it (see model_mutator.h).
#include "model_mutator.h"

#include <climits>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "onnx/wire.h"
#include "ops/op.h"  // registered_ops

namespace fuzz {
namespace {

using onnx2ggml::wire::Reader;

enum Msg { RAW = -1, MODEL, GRAPH, NODE, ATTR, TENSOR, VALUE_INFO, TYPE, TENSOR_TYPE, SHAPE, DIM, ENTRY, OPSET };

// Which length-delimited fields hold a sub-message, and of what type.
Msg child_type(Msg parent, uint32_t field) {
    switch (parent) {
        case MODEL: return field == 7 ? GRAPH : field == 8 ? OPSET : RAW;
        case GRAPH: return field == 1 ? NODE : field == 5 ? TENSOR : (field >= 11 && field <= 13) ? VALUE_INFO : RAW;
        case NODE: return field == 5 ? ATTR : RAW;
        case ATTR: return (field == 5 || field == 9) ? TENSOR : (field == 6 || field == 10) ? GRAPH : RAW;
        case TENSOR: return field == 13 ? ENTRY : RAW;
        case VALUE_INFO: return field == 2 ? TYPE : RAW;
        case TYPE: return field == 1 ? TENSOR_TYPE : RAW;
        case TENSOR_TYPE: return field == 2 ? SHAPE : RAW;
        case SHAPE: return field == 1 ? DIM : RAW;
        default: return RAW;
    }
}

struct Field {
    uint32_t num = 0, wt = 0;
    uint64_t v = 0;        // VARINT, I32, I64
    std::string s;         // LEN payload when not a parsed message
    Msg type = RAW;        // LEN: the message it holds, parsed into kids
    std::vector<Field> kids;
};

void parse(std::string_view bytes, Msg type, std::vector<Field>& out) {
    Reader r(bytes);
    uint32_t num, wt;
    while (r.next(num, wt)) {
        Field f;
        f.num = num;
        f.wt = wt;
        switch (wt) {
            case onnx2ggml::wire::VARINT: f.v = r.varint(); break;
            case onnx2ggml::wire::I32: f.v = r.fixed32(); break;
            case onnx2ggml::wire::I64: f.v = r.fixed64(); break;
            case onnx2ggml::wire::LEN: {
                std::string_view sub = r.bytes();
                Msg ct = child_type(type, num);
                if (ct != RAW) {
                    try {
                        parse(sub, ct, f.kids);
                        f.type = ct;
                        break;
                    } catch (const onnx2ggml::Error&) {
                        f.kids.clear();  // not a message after all: kept as bytes
                    }
                }
                f.s.assign(sub);
                break;
            }
            default: onnx2ggml::fail("wire type ", wt);
        }
        out.push_back(std::move(f));
    }
}

void put_varint(std::string& o, uint64_t v) {
    while (v >= 0x80) {
        o.push_back(char(v | 0x80));
        v >>= 7;
    }
    o.push_back(char(v));
}

void write(const std::vector<Field>& fields, std::string& o) {
    for (const Field& f : fields) {
        put_varint(o, (uint64_t(f.num) << 3) | f.wt);
        switch (f.wt) {
            case onnx2ggml::wire::VARINT: put_varint(o, f.v); break;
            case onnx2ggml::wire::I32: for (int k = 0; k < 4; k++) o.push_back(char(f.v >> (8 * k))); break;
            case onnx2ggml::wire::I64: for (int k = 0; k < 8; k++) o.push_back(char(f.v >> (8 * k))); break;
            default: {
                std::string sub;
                if (f.type != RAW) write(f.kids, sub); else sub = f.s;
                put_varint(o, sub.size());
                o += sub;
            }
        }
    }
}

Field varint_field(uint32_t num, uint64_t v) {
    Field f;
    f.num = num;
    f.wt = onnx2ggml::wire::VARINT;
    f.v = v;
    return f;
}
Field bytes_field(uint32_t num, std::string s) {
    Field f;
    f.num = num;
    f.wt = onnx2ggml::wire::LEN;
    f.s = std::move(s);
    return f;
}

// Every message in the tree, by type, so a mutation can pick one uniformly.
void collect(std::vector<Field>& fields, std::vector<std::vector<Field*>>& by_type) {
    for (Field& f : fields) {
        if (f.type == RAW) continue;
        by_type[f.type].push_back(&f);
        collect(f.kids, by_type);
    }
}

// Op types to mutate a node into: the op table's own list (ops/registry.cpp), so a new op is fuzzed without a
// copy here. Sorted, so a libFuzzer seed replays the same mutations. The internal fused ops ("onnx2ggml.X") are
// left out: only passes make them. A contrib op ("domain:Op") also sets the node's domain.
struct OpNames {
    std::vector<std::string> standard, contrib;  // contrib: "domain:Op"
};
const OpNames& op_names() {
    static const OpNames names = [] {
        OpNames n;
        for (const std::string& op : onnx2ggml::registered_ops()) {
            if (op.rfind("onnx2ggml.", 0) == 0) continue;
            (op.find(':') == std::string::npos ? n.standard : n.contrib).push_back(op);
        }
        return n;
    }();
    return names;
}
const char* const kAttrs[] = {
    "axis", "axes", "perm", "pads", "strides", "kernel_shape", "dilations", "group", "keepdims", "epsilon",
    "mode", "transA", "transB", "alpha", "beta", "blocksize", "k", "largest", "sorted", "to", "split",
    "num_outputs", "output_padding", "output_shape", "auto_pad", "ceil_mode", "exclusive", "reverse", "upper",
    "batch_dims", "num_groups", "allowzero", "coordinate_transformation_mode", "value", "direction",
    "hidden_size", "onesided", "inverse", "groups", "activation", "channels_last",
};
const int64_t kInts[] = {0, 1, 2, 3, 4, -1, -2, -3, 7, 16, 64, 255, 65536, INT32_MAX, INT64_MAX, INT64_MIN,
                         int64_t(1) << 32, int64_t(1) << 40};
const float kFloats[] = {0.f, 1.f, -1.f, 0.5f, 1e-5f, 1e30f, -1e30f, 3.4e38f, 1e-45f};

struct Mutator {
    std::mt19937 rng;
    std::vector<Field>& root;
    std::vector<std::vector<Field*>> by_type;

    Mutator(std::vector<Field>& r, uint32_t seed) : rng(seed), root(r) { refresh(); }
    // Pointers into the tree go stale when a mutation adds or removes fields: gathered again after each one.
    void refresh() {
        by_type.assign(OPSET + 1, {});
        collect(root, by_type);
    }

    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); }
    template <typename T, size_t N> T pick_of(const T (&a)[N]) { return a[pick(N)]; }
    int64_t some_int() { return pick(4) ? pick_of(kInts) : int64_t(pick(9)) - 4; }
    Field* any(Msg t) { return by_type[t].empty() ? nullptr : by_type[t][pick(by_type[t].size())]; }
    // The `num` fields of a message.
    std::vector<Field*> fields(Field* m, uint32_t num) {
        std::vector<Field*> out;
        for (Field& f : m->kids)
            if (f.num == num) out.push_back(&f);
        return out;
    }
    void set(Field* m, Field f) {
        for (Field& k : m->kids)
            if (k.num == f.num) {
                k = std::move(f);
                return;
            }
        m->kids.push_back(std::move(f));
    }
    void drop(Field* m, uint32_t num) {
        std::vector<Field> keep;
        for (Field& k : m->kids)
            if (k.num != num) keep.push_back(std::move(k));
        m->kids = std::move(keep);
    }
    // Packed or repeated int64s (ints attribute, tensor dims) as one packed field.
    std::vector<int64_t> get_ints(Field* m, uint32_t num) {
        std::vector<int64_t> v;
        for (Field* f : fields(m, num)) {
            if (f->wt == onnx2ggml::wire::VARINT) v.push_back(int64_t(f->v));
            else if (f->wt == onnx2ggml::wire::LEN) {
                try {
                    Reader r(f->s);
                    while (!r.done()) v.push_back(int64_t(r.varint()));
                } catch (const onnx2ggml::Error&) {
                }
            }
        }
        return v;
    }
    void set_ints(Field* m, uint32_t num, const std::vector<int64_t>& v) {
        drop(m, num);
        std::string s;
        for (int64_t x : v) put_varint(s, uint64_t(x));
        m->kids.push_back(bytes_field(num, s));
    }
    void mutate_ints(std::vector<int64_t>& v) {
        size_t c = pick(4);
        if (v.empty() || c == 0) v.insert(v.begin() + (v.empty() ? 0 : pick(v.size() + 1)), some_int());
        else if (c == 1) v.erase(v.begin() + pick(v.size()));
        else v[pick(v.size())] = some_int();
    }

    bool once() {
        switch (pick(14)) {
            case 0: {  // op type
                Field* n = any(NODE);
                if (!n) return false;
                const OpNames& ops = op_names();
                if (pick(4) == 0 && !ops.contrib.empty()) {
                    const std::string& op = ops.contrib[pick(ops.contrib.size())];
                    const size_t colon = op.find(':');
                    set(n, bytes_field(4, op.substr(colon + 1)));
                    set(n, bytes_field(7, op.substr(0, colon)));
                } else {
                    set(n, bytes_field(4, ops.standard[pick(ops.standard.size())]));
                    drop(n, 7);  // the ONNX domain
                }
                return true;
            }
            case 1: {  // an attribute's value
                Field* a = any(ATTR);
                if (!a) return false;
                if (!fields(a, 3).empty() || pick(3) == 0) set(a, varint_field(3, uint64_t(some_int())));
                if (!fields(a, 2).empty()) {
                    Field f;
                    f.num = 2;
                    f.wt = onnx2ggml::wire::I32;
                    float x = pick_of(kFloats);
                    uint32_t u;
                    std::memcpy(&u, &x, 4);
                    f.v = u;
                    set(a, f);
                }
                if (!fields(a, 8).empty()) {
                    auto v = get_ints(a, 8);
                    mutate_ints(v);
                    set_ints(a, 8, v);
                }
                if (pick(8) == 0) set(a, varint_field(20, pick(15)));  // attribute type
                return true;
            }
            case 2: {  // a new attribute, int or ints
                Field* n = any(NODE);
                if (!n) return false;
                Field a;
                a.num = 5;
                a.wt = onnx2ggml::wire::LEN;
                a.type = ATTR;
                a.kids.push_back(bytes_field(1, pick_of(kAttrs)));
                if (pick(2)) {
                    a.kids.push_back(varint_field(20, 2));
                    a.kids.push_back(varint_field(3, uint64_t(some_int())));
                } else {
                    a.kids.push_back(varint_field(20, 7));
                    std::vector<int64_t> v(pick(5));
                    for (auto& x : v) x = some_int();
                    std::string s;
                    for (int64_t x : v) put_varint(s, uint64_t(x));
                    a.kids.push_back(bytes_field(8, s));
                }
                n->kids.push_back(std::move(a));
                return true;
            }
            case 3: {  // a declared dim of an input, output or value_info
                Field* d = any(DIM);
                if (!d) return false;
                drop(d, 1);
                drop(d, 2);
                if (pick(4) == 0) d->kids.push_back(bytes_field(2, pick(2) ? "N" : "batch"));
                else d->kids.push_back(varint_field(1, uint64_t(some_int())));
                return true;
            }
            case 4: {  // an initializer's dims
                Field* t = any(TENSOR);
                if (!t) return false;
                auto v = get_ints(t, 1);
                mutate_ints(v);
                set_ints(t, 1, v);
                return true;
            }
            case 5: {  // an initializer's raw bytes: truncated, grown or changed
                Field* t = any(TENSOR);
                if (!t) return false;
                auto raw = fields(t, 9);
                if (raw.empty()) return false;
                std::string& s = raw[0]->s;
                size_t c = pick(3);
                if (c == 0) s.resize(s.empty() ? 0 : pick(s.size()));
                else if (c == 1) s.append(1 + pick(16), char(pick(256)));
                else if (!s.empty()) s[pick(s.size())] = char(pick(256));
                return true;
            }
            case 6: {  // an initializer's or a declared value's element type
                if (pick(2)) {
                    Field* t = any(TENSOR);
                    if (!t) return false;
                    set(t, varint_field(2, pick(24)));
                } else {
                    Field* t = any(TENSOR_TYPE);
                    if (!t) return false;
                    set(t, varint_field(1, pick(24)));
                }
                return true;
            }
            case 7: {  // external data fields
                Field* t = any(TENSOR);
                if (!t) return false;
                if (pick(2)) drop(t, 9);
                set(t, varint_field(14, pick(4) ? 1 : pick(3)));
                drop(t, 13);
                static const char* const locs[] = {"weights.bin", "missing.bin", "../weights.bin", "/etc/passwd",
                                                   "./weights.bin", "", "sub/../weights.bin", "."};
                auto entry = [&](const char* k, std::string v) {
                    Field e;
                    e.num = 13;
                    e.wt = onnx2ggml::wire::LEN;
                    e.type = ENTRY;
                    e.kids.push_back(bytes_field(1, k));
                    e.kids.push_back(bytes_field(2, std::move(v)));
                    t->kids.push_back(std::move(e));
                };
                entry("location", pick_of(locs));
                if (pick(2)) entry("offset", std::to_string(pick(3) ? int64_t(pick(70000)) : some_int()));
                if (pick(2)) entry("length", pick(4) ? std::to_string(some_int()) : "12x");
                return true;
            }
            case 8: {  // rewire a node input or output to another name
                Field* n = any(NODE);
                Field* m = any(NODE);
                if (!n || !m) return false;
                auto to = fields(n, pick(2) ? 1 : 2);
                auto from = fields(m, pick(2) ? 1 : 2);
                if (to.empty()) return false;
                to[pick(to.size())]->s = from.empty() || pick(5) == 0 ? std::string() : from[pick(from.size())]->s;
                return true;
            }
            case 9: {  // drop or duplicate a node, an input or an attribute
                Field* g = any(GRAPH);
                if (!g || g->kids.empty()) return false;
                size_t i = pick(g->kids.size());
                if (pick(2)) g->kids.erase(g->kids.begin() + i);
                else g->kids.push_back(g->kids[i]);
                return true;
            }
            case 10: {  // opset version
                Field* o = any(OPSET);
                if (!o) return false;
                set(o, varint_field(2, pick(3) ? 1 + pick(24) : uint64_t(some_int())));
                return true;
            }
            case 11: {  // drop a field of a node or attribute
                Field* n = pick(2) ? any(NODE) : any(ATTR);
                if (!n || n->kids.empty()) return false;
                n->kids.erase(n->kids.begin() + pick(n->kids.size()));
                return true;
            }
            case 12: {  // a scalar field anywhere in a tensor: dims, data_type, data_location as varints
                Field* t = any(TENSOR);
                if (!t || t->kids.empty()) return false;
                Field& f = t->kids[pick(t->kids.size())];
                if (f.wt != onnx2ggml::wire::VARINT) return false;
                f.v = uint64_t(some_int());
                return true;
            }
            default: {  // IR version
                for (Field& f : root)
                    if (f.num == 1 && f.wt == onnx2ggml::wire::VARINT) f.v = 1 + pick(11);
                return true;
            }
        }
    }
};

}  // namespace

bool mutate_model(std::string& model, uint32_t seed) {
    std::vector<Field> root;
    try {
        parse(model, MODEL, root);
    } catch (const onnx2ggml::Error&) {
        return false;
    }
    Mutator m(root, seed);
    int want = 1 + int(m.pick(3)), done = 0;
    for (int tries = 0; done < want && tries < 20; tries++) {
        done += m.once();
        m.refresh();
    }
    if (!done) return false;
    model.clear();
    write(root, model);
    return true;
}

}  // namespace fuzz
