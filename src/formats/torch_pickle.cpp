// The restricted unpickler of torch.save files (src/formats/torch_checkpoint.h). It is an interpreter of the pickle
// opcodes torch emits whose only callables are the allow-listed globals below: no import, no call of anything
// named by the file. Values live in one arena (no reference cycles to leak), and every count and offset is checked.
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "common/error.h"
#include "formats/torch_checkpoint.h"

namespace o2g {

using onnx2ggml::fail;

namespace {

struct Val {
    enum Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor, Mark } kind = None;
    int64_t i = 0;
    std::string s;                   // Str; Global "module.name"; Storage's dtype
    std::vector<Val*> items;         // Tuple, List; Dict: key, value, key, value...
    const ZipEntry* entry = nullptr;  // Storage
    SafeTensor t;                    // Tensor
};

// Storage classes torch names in a persistent id: dtype as safetensors spells it, element size.
const std::map<std::string, std::pair<const char*, size_t>>& storage_types() {
    static const std::map<std::string, std::pair<const char*, size_t>> m = {
        {"torch.FloatStorage", {"F32", 4}},   {"torch.HalfStorage", {"F16", 2}},  {"torch.BFloat16Storage", {"BF16", 2}},
        {"torch.DoubleStorage", {"F64", 8}},  {"torch.LongStorage", {"I64", 8}},  {"torch.IntStorage", {"I32", 4}},
        {"torch.ShortStorage", {"I16", 2}},   {"torch.CharStorage", {"I8", 1}},   {"torch.ByteStorage", {"U8", 1}},
        {"torch.BoolStorage", {"BOOL", 1}}};
    return m;
}

const std::set<std::string>& allowed_globals() {
    static const std::set<std::string> g = {"collections.OrderedDict", "torch._utils._rebuild_tensor",
                                            "torch._utils._rebuild_tensor_v2", "torch._utils._rebuild_parameter",
                                            "torch._utils._rebuild_parameter_with_state"};
    return g;
}

class Unpickler {
public:
    Unpickler(const uint8_t* d, size_t n, const uint8_t* file, const std::vector<ZipEntry>& entries,
              const std::string& prefix, const std::string& path)
        : p_(d), end_(d + n), file_(file), path_(path) {
        for (const ZipEntry& e : entries)
            if (e.name.compare(0, prefix.size(), prefix) == 0) storages_[e.name.substr(prefix.size())] = &e;
    }
    Val* run();

private:
    const uint8_t* p_;
    const uint8_t* end_;
    const uint8_t* file_;
    std::string path_;
    std::map<std::string, const ZipEntry*> storages_;  // "data/0" -> entry
    std::vector<std::unique_ptr<Val>> arena_;
    std::vector<Val*> stack_;
    std::map<uint64_t, Val*> memo_;

    [[noreturn]] void bad(const std::string& what) const { fail(path_, ": data.pkl: ", what); }
    Val* make(Val::Kind k) {
        arena_.push_back(std::make_unique<Val>());
        arena_.back()->kind = k;
        return arena_.back().get();
    }
    const uint8_t* take(size_t n) {
        if (size_t(end_ - p_) < n) bad("truncated");
        const uint8_t* q = p_;
        p_ += n;
        return q;
    }
    uint64_t uint(int n) {
        const uint8_t* q = take(size_t(n));
        uint64_t v = 0;
        for (int k = n - 1; k >= 0; k--) v = (v << 8) | q[k];
        return v;
    }
    std::string line() {  // GLOBAL's newline-terminated module and name
        const uint8_t* nl = static_cast<const uint8_t*>(std::memchr(p_, '\n', size_t(end_ - p_)));
        if (!nl) bad("truncated GLOBAL");
        std::string s(reinterpret_cast<const char*>(p_), size_t(nl - p_));
        p_ = nl + 1;
        return s;
    }
    Val* pop() {
        if (stack_.empty() || stack_.back()->kind == Val::Mark) bad("stack underflow");
        Val* v = stack_.back();
        stack_.pop_back();
        return v;
    }
    std::vector<Val*> pop_mark() {  // the values above the topmost mark, the mark removed
        size_t m = stack_.size();
        while (m > 0 && stack_[m - 1]->kind != Val::Mark) m--;
        if (m == 0) bad("no MARK");
        std::vector<Val*> v(stack_.begin() + long(m), stack_.end());
        stack_.resize(m - 1);
        return v;
    }
    Val* str(size_t n) {
        Val* v = make(Val::Str);
        v->s.assign(reinterpret_cast<const char*>(take(n)), n);
        return v;
    }
    Val* integer(int64_t i) {
        Val* v = make(Val::Int);
        v->i = i;
        return v;
    }
    Val* tuple(std::vector<Val*> items) {
        Val* v = make(Val::Tuple);
        v->items = std::move(items);
        return v;
    }
    void set_items(Val* d, const std::vector<Val*>& kv) {
        if (d->kind != Val::Dict || kv.size() % 2) bad("SETITEMS on a non-dict");
        d->items.insert(d->items.end(), kv.begin(), kv.end());
    }
    Val* global(const std::string& name);
    Val* reduce(Val* fn, Val* args);
    Val* tensor(const std::vector<Val*>& a);
    Val* persistent(Val* pid);
    bool step();
};

Val* Unpickler::global(const std::string& name) {
    if (!allowed_globals().count(name) && !storage_types().count(name))
        bad("refuses global '" + printable(name) + "' (only tensors and dicts are read; nothing is executed)");
    Val* v = make(Val::Global);
    v->s = name;
    return v;
}

int64_t as_int(const Val* v) { return v->kind == Val::Int || v->kind == Val::Bool ? v->i : -1; }

Val* Unpickler::tensor(const std::vector<Val*>& a) {
    if (a.size() < 4 || a[0]->kind != Val::Storage || a[2]->kind != Val::Tuple || a[3]->kind != Val::Tuple ||
        a[2]->items.size() != a[3]->items.size() || a[2]->items.size() > 8)
        bad("malformed tensor (storage, offset, size, stride)");
    const Val* st = a[0];
    const size_t es = size_t(st->i);
    const int64_t off = as_int(a[1]);
    Val* v = make(Val::Tensor);
    int64_t numel = 1, expect = 1;
    for (size_t k = a[2]->items.size(); k-- > 0;) {
        const int64_t d = as_int(a[2]->items[k]), s = as_int(a[3]->items[k]);
        if (d < 0 || s < 0) bad("a tensor's size or stride is not a non-negative integer");
        if (d > 1 && s != expect) bad("a tensor is not contiguous (strided views are not read; save a .contiguous() copy)");
        if (d > 0 && numel > (int64_t(1) << 48) / d) bad("a tensor is too large");
        numel *= d;
        expect = numel ? numel : 1;
    }
    for (const Val* d : a[2]->items) v->t.shape.push_back(as_int(d));
    const uint64_t avail = st->entry->size / es;
    if (off < 0 || uint64_t(off) > avail || uint64_t(numel) > avail - uint64_t(off))
        bad("a tensor of " + std::to_string(numel) + " elements at offset " + std::to_string(off) +
            " lies past its storage '" + printable(st->entry->name) + "' of " + std::to_string(avail));
    v->t.dtype = st->s;
    v->t.data = file_ + st->entry->offset + size_t(off) * es;
    v->t.nbytes = size_t(numel) * es;
    return v;
}

Val* Unpickler::reduce(Val* fn, Val* args) {
    if (fn->kind != Val::Global || args->kind != Val::Tuple) bad("REDUCE of something that is not a known global");
    const std::string& f = fn->s;
    const std::vector<Val*>& a = args->items;
    if (f == "collections.OrderedDict") {
        if (!a.empty()) bad("OrderedDict with arguments");
        return make(Val::Dict);
    }
    if (f == "torch._utils._rebuild_tensor" || f == "torch._utils._rebuild_tensor_v2") return tensor(a);
    if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
        if (a.empty() || a[0]->kind != Val::Tensor) bad("a parameter without a tensor");
        return a[0];
    }
    bad("REDUCE of '" + printable(f) + "'");
}

// ('storage', storage class, key, location, numel) -> the zip entry data/<key>.
Val* Unpickler::persistent(Val* pid) {
    const auto& it = pid->items;
    if (pid->kind != Val::Tuple || it.size() != 5 || it[0]->kind != Val::Str || it[0]->s != "storage" ||
        it[1]->kind != Val::Global || !storage_types().count(it[1]->s) || it[2]->kind != Val::Str)
        bad("a persistent id that is not a storage");
    auto e = storages_.find("data/" + it[2]->s);
    if (e == storages_.end()) bad("storage '" + printable(it[2]->s) + "' is not in the archive");
    Val* v = make(Val::Storage);
    v->s = storage_types().at(it[1]->s).first;
    v->i = int64_t(storage_types().at(it[1]->s).second);
    v->entry = e->second;
    return v;
}

// One opcode; false at STOP.
// Long: one switch over the pickle opcodes this reader accepts.
bool Unpickler::step() {
    const uint8_t op = *take(1);
    switch (op) {
        case 0x80: take(1); break;                          // PROTO
        case 0x95: take(8); break;                          // FRAME (framing is advisory)
        case '.': return false;                             // STOP
        case '(': stack_.push_back(make(Val::Mark)); break;  // MARK
        case '}': stack_.push_back(make(Val::Dict)); break;
        case ']': stack_.push_back(make(Val::List)); break;
        case ')': stack_.push_back(tuple({})); break;
        case 't': stack_.push_back(tuple(pop_mark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
            std::vector<Val*> v(size_t(op - 0x84));
            for (size_t k = v.size(); k-- > 0;) v[k] = pop();
            stack_.push_back(tuple(std::move(v)));
            break;
        }
        case 'N': stack_.push_back(make(Val::None)); break;
        case 0x88: case 0x89: stack_.push_back(integer(op == 0x88)), stack_.back()->kind = Val::Bool; break;
        case 'K': stack_.push_back(integer(int64_t(uint(1)))); break;
        case 'M': stack_.push_back(integer(int64_t(uint(2)))); break;
        case 'J': stack_.push_back(integer(int64_t(int32_t(uint32_t(uint(4)))))); break;
        case 0x8a: {  // LONG1: a little-endian two's complement of n bytes
            const size_t n = size_t(uint(1));
            if (n > 8) bad("an integer wider than 64 bits");
            const uint8_t* q = take(n);
            uint64_t v = 0;
            for (size_t k = n; k-- > 0;) v = (v << 8) | q[k];
            if (n > 0 && n < 8 && (q[n - 1] & 0x80)) v |= ~uint64_t(0) << (8 * n);
            stack_.push_back(integer(int64_t(v)));
            break;
        }
        case 'G': {  // BINFLOAT, big-endian
            uint64_t b = 0;
            for (const uint8_t* q = take(8); q < p_; q++) b = (b << 8) | *q;
            Val* v = make(Val::Float);
            std::memcpy(&v->i, &b, 8);
            stack_.push_back(v);
            break;
        }
        case 'X': case 'B': case 'T': stack_.push_back(str(size_t(uint(4)))); break;
        case 0x8c: case 'C': case 'U': stack_.push_back(str(size_t(uint(1)))); break;
        case 0x8d: case 0x8e: stack_.push_back(str(size_t(uint(8)))); break;
        case 'c': {  // GLOBAL module\nname\n
            std::string mod = line();
            stack_.push_back(global(mod + "." + line()));
            break;
        }
        case 0x93: {  // STACK_GLOBAL
            Val* name = pop();
            Val* mod = pop();
            if (name->kind != Val::Str || mod->kind != Val::Str) bad("STACK_GLOBAL of non-strings");
            stack_.push_back(global(mod->s + "." + name->s));
            break;
        }
        case 'R': {
            Val* args = pop();
            Val* fn = pop();
            stack_.push_back(reduce(fn, args));
            break;
        }
        case 'Q': stack_.push_back(persistent(pop())); break;  // BINPERSID
        case 'b': {  // BUILD: only an empty state (an OrderedDict's, a parameter's)
            Val* state = pop();
            if (stack_.empty()) bad("BUILD on an empty stack");
            if (state->kind != Val::None && !((state->kind == Val::Dict || state->kind == Val::Tuple) && state->items.empty()))
                bad("BUILD with a state (objects are not rebuilt)");
            break;
        }
        case 's': {
            Val* v = pop();
            Val* k = pop();
            if (stack_.empty()) bad("SETITEM on an empty stack");
            set_items(stack_.back(), {k, v});
            break;
        }
        case 'u': {
            std::vector<Val*> kv = pop_mark();
            if (stack_.empty()) bad("SETITEMS on an empty stack");
            set_items(stack_.back(), kv);
            break;
        }
        case 'a': case 'e': {  // APPEND, APPENDS
            std::vector<Val*> v = op == 'a' ? std::vector<Val*>{pop()} : pop_mark();
            if (stack_.empty() || stack_.back()->kind != Val::List) bad("APPEND to a non-list");
            stack_.back()->items.insert(stack_.back()->items.end(), v.begin(), v.end());
            break;
        }
        case 'q': case 'r': case 0x94: {  // BINPUT, LONG_BINPUT, MEMOIZE
            const uint64_t id = op == 'q' ? uint(1) : op == 'r' ? uint(4) : memo_.size();
            if (stack_.empty()) bad("PUT on an empty stack");
            memo_[id] = stack_.back();
            break;
        }
        case 'h': case 'j': {  // BINGET, LONG_BINGET
            auto it = memo_.find(op == 'h' ? uint(1) : uint(4));
            if (it == memo_.end()) bad("GET of an unset memo entry");
            stack_.push_back(it->second);
            break;
        }
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': if (stack_.empty()) bad("DUP on an empty stack"); stack_.push_back(stack_.back()); break;
        default: {
            char buf[8];
            snprintf(buf, sizeof buf, "0x%02x", op);
            bad(std::string("unsupported opcode ") + buf + " (only what torch.save writes is read)");
        }
    }
    return true;
}

Val* Unpickler::run() {
    while (step()) {
        if (stack_.size() > (size_t(1) << 20)) bad("stack too deep");
    }
    if (stack_.size() != 1 || stack_[0]->kind != Val::Dict) bad("the pickled object is not a dict of tensors");
    Val* root = stack_[0];
    for (size_t k = 0; k + 1 < root->items.size(); k += 2)  // a checkpoint's weights are its state_dict
        if (root->items[k]->kind == Val::Str && root->items[k]->s == "state_dict" && root->items[k + 1]->kind == Val::Dict)
            return root->items[k + 1];
    return root;
}

// Tensors of nested dicts, named by their key path. A bounded walk: shared or deep sub-dicts cannot blow it up.
struct Walk {
    size_t visits = 0, name_bytes = 0;
};
void flatten(const Val* d, const std::string& prefix, int depth, std::vector<SafeTensor>& out, Walk& w,
             const std::string& path) {
    if (depth > 16) fail(path, ": data.pkl: dicts nested more than 16 deep");
    for (size_t k = 0; k + 1 < d->items.size(); k += 2) {
        if (++w.visits > 10000000) fail(path, ": data.pkl: more than 10^7 entries");
        const Val* key = d->items[k];
        const Val* v = d->items[k + 1];
        std::string name;
        if (key->kind == Val::Str) name = key->s;
        else if (key->kind == Val::Int) name = std::to_string(key->i);
        else continue;
        name = prefix + name;
        if (v->kind == Val::Tensor) {
            if (out.size() >= (size_t(1) << 20) || (w.name_bytes += name.size()) > (size_t(1) << 26))
                fail(path, ": data.pkl: more than 2^20 tensors or 64 MB of names");
            out.push_back(v->t);
            out.back().name = name;
        } else if (v->kind == Val::Dict) {
            flatten(v, name + ".", depth + 1, out, w, path);
        }
    }
}

}  // namespace

std::vector<SafeTensor> read_torch_checkpoint(const uint8_t* data, size_t size, const std::string& path) {
    const std::vector<ZipEntry> entries = read_zip_directory(data, size, path);
    const ZipEntry* pkl = nullptr;
    for (const ZipEntry& e : entries) {
        const size_t slash = e.name.find('/');
        if (slash != std::string::npos && e.name.compare(slash, std::string::npos, "/data.pkl") == 0) {
            if (pkl) fail(path, ": two data.pkl entries in the archive");
            pkl = &e;
        }
    }
    if (!pkl) fail(path, ": a zip archive without <name>/data.pkl (not a torch.save file)");
    const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);  // "archive/"
    Unpickler u(data + pkl->offset, pkl->size, data, entries, prefix, path);
    std::vector<SafeTensor> out;
    Walk w;
    flatten(u.run(), "", 0, out, w, path);
    return out;
}

}  // namespace o2g
