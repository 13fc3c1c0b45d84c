// ONNX ModelProto → IR, with a bounds-checked zero-copy protobuf reader and safe external data.
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <limits>

#include "common/error.h"
#include "common/platform.h"
#include "onnx/tidy_graph.h"
#include "ir/ir.h"
#include "onnx/mapped_files.h"
#include "onnx/wire.h"

namespace onnx2ggml {

using wire::Reader;

namespace {

constexpr int kMaxGraphDepth = 32;    // nested subgraphs; bounds recursion on hostile input
constexpr int64_t kMaxRank = 64;

struct Mapping {
    platform::FileMap map;
    ~Mapping() {
        if (map.addr) {
            unregister_mapping(map.addr);
            platform::unmap_file(map);
        }
    }
};

std::shared_ptr<Mapping> map_file(const std::string& path, std::string& err) {
    auto m = std::make_shared<Mapping>();
    if (!platform::map_file(path, m->map, err)) return nullptr;
    register_mapping(m->map.addr, m->map.size, path);
    return m;
}

std::string dims_str(const std::vector<int64_t>& dims) {
    std::string r = "[";
    for (size_t i = 0; i < dims.size(); i++) {
        if (i) r += ',';
        r += std::to_string(dims[i]);
    }
    return r + "]";
}

std::string dir_of(const std::string& path) {
    auto pos = path.find_last_of(platform::kPathSeparators);
    if (pos == std::string::npos) return ".";
    if (pos == 0) return "/";
    return path.substr(0, pos);
}

// Attribute types by AttributeProto's value field number (0 where none), for the check below.
const char* const kAttrFieldType[24] = {nullptr, nullptr, "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS",
                                        "INTS", "STRINGS", "TENSORS", "GRAPHS", nullptr, nullptr, "TYPE_PROTO",
                                        "TYPE_PROTOS", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                        "SPARSE_TENSOR", "SPARSE_TENSORS"};
const int kAttrTypeField[15] = {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 22, 23, 14, 15};  // by AttrType

// An attribute whose type says one kind of value but which holds another is refused, as onnxruntime refuses it:
// reading the typed field would take a default the file never meant (epsilon typed INT, its -1e30 stored in f).
// A missing value reads as the field's default (proto3 writers leave zeros out).
void check_attribute_fields(const Node& n, const Attribute& a, uint64_t fields) {
    const int type = int(a.type);
    if (!a.ref_attr_name.empty() || a.type == AttrType::UNDEFINED) return;
    const std::string node = "node '" + (n.name.empty() && !n.outputs.empty() ? n.outputs[0] : n.name) + "' (" +
                             n.op_type + "): attribute '" + a.name + "'";
    O2G_CHECK(type > 0 && type < 15, node, " has unknown type ", type);
    const int own = kAttrTypeField[type];
    for (int f = 2; f < 24; f++)
        if (f != own && kAttrFieldType[f] && (fields >> f & 1))
            fail(node, " is typed ", kAttrFieldType[own], " but holds a ", kAttrFieldType[f], " value");
}

struct Parser {
    std::string path;      // model file, for messages
    std::string base_dir;  // external data root
    std::shared_ptr<const void> keep;
    std::map<std::string, std::shared_ptr<Mapping>> ext_files;

    std::string str(std::string_view s) { return std::string(s); }

    void parse_dim(Reader r, Dim& d) {
        uint32_t f, t;
        while (r.next(f, t)) {
            if (f == 1 && t == wire::VARINT) d.value = int64_t(r.varint());
            else if (f == 2 && t == wire::LEN) d.param = str(r.bytes());
            else r.skip(t);
        }
        if (d.value < 0) d.value = -1;
    }

    void parse_type(Reader r, ValueInfo& vi) {
        uint32_t f, t;
        while (r.next(f, t)) {
            if (f == 1 && t == wire::LEN) {  // tensor_type
                Reader tt(r.bytes());
                uint32_t f2, t2;
                while (tt.next(f2, t2)) {
                    if (f2 == 1 && t2 == wire::VARINT) vi.dtype = DType(int32_t(tt.varint()));
                    else if (f2 == 2 && t2 == wire::LEN) {
                        vi.has_shape = true;
                        Reader sh(tt.bytes());
                        uint32_t f3, t3;
                        while (sh.next(f3, t3)) {
                            if (f3 == 1 && t3 == wire::LEN) {
                                O2G_CHECK(int64_t(vi.dims.size()) < kMaxRank, "tensor rank too large");
                                vi.dims.emplace_back();
                                parse_dim(Reader(sh.bytes()), vi.dims.back());
                            } else sh.skip(t3);
                        }
                    } else tt.skip(t2);
                }
            } else if (t == wire::LEN && (f == 4 || f == 5 || f == 8 || f == 9)) {
                vi.is_tensor = false;  // sequence, map, sparse or optional
                r.skip(t);
            } else r.skip(t);
        }
    }

    ValueInfo parse_value_info(Reader r) {
        ValueInfo vi;
        uint32_t f, t;
        while (r.next(f, t)) {
            if (f == 1 && t == wire::LEN) vi.name = str(r.bytes());
            else if (f == 2 && t == wire::LEN) parse_type(Reader(r.bytes()), vi);
            else r.skip(t);
        }
        return vi;
    }

    const uint8_t* external(const std::string& tname, const std::string& location, int64_t offset,
                            int64_t length, size_t need, std::shared_ptr<const void>& hold) {
        O2G_CHECK(!location.empty(), path, ": tensor '", tname, "': external data has no location");
        O2G_CHECK(location[0] != '/' && location.find('\\') == std::string::npos,
                  path, ": tensor '", tname, "': external data path '", location,
                  "' is absolute; it must stay inside the model's folder");
        // Reject any '..' component, then check the resolved path (symlinks) too.
        size_t start = 0;
        while (start <= location.size()) {
            size_t end = location.find('/', start);
            if (end == std::string::npos) end = location.size();
            O2G_CHECK(location.substr(start, end - start) != "..", path, ": tensor '", tname,
                      "': external data path '", location, "' escapes the model's folder");
            start = end + 1;
        }
        std::string full = base_dir + "/" + location;
        std::string sb = platform::real_path(base_dir), sf = platform::real_path(full);
        O2G_CHECK(!sb.empty() && !sf.empty(), path, ": tensor '", tname, "': external data file '", location,
                  "' not found next to the model");
        O2G_CHECK(sf.size() > sb.size() && sf.compare(0, sb.size(), sb) == 0 && sf[sb.size()] == '/',
                  path, ": tensor '", tname, "': external data path '", location,
                  "' resolves outside the model's folder");
        auto it = ext_files.find(sf);
        if (it == ext_files.end()) {
            std::string err;
            auto m = map_file(sf, err);
            O2G_CHECK(m, path, ": tensor '", tname, "': external data file '", location, "': ", err);
            it = ext_files.emplace(sf, m).first;
        }
        auto& m = it->second;
        O2G_CHECK(offset >= 0, path, ": tensor '", tname, "': negative external data offset ", offset);
        if (length < 0) length = int64_t(need);  // absent: the shape says
        O2G_CHECK(uint64_t(length) == need, path, ": tensor '", tname, "': external data length ", length,
                  " does not match its shape (", need, " bytes)");
        // Written so that offset + need cannot wrap.
        O2G_CHECK(uint64_t(offset) <= m->map.size && need <= m->map.size - uint64_t(offset), path, ": tensor '",
                  tname, "': external data [", offset, ", +", need, ") runs past the end of '", location,
                  "' (", m->map.size, " bytes)");
        hold = m;
        return static_cast<const uint8_t*>(m->map.addr) + offset;
    }

    // 4- and 2-bit elements come packed, low bits first; the runtime holds one per byte.
    std::shared_ptr<TensorData> parse_tensor(Reader r) {
        auto td = parse_tensor_packed(r);
        const int bits = dtype_bits(td->dtype);
        if (bits >= 8 || !td->data) return td;
        size_t n = 1;
        for (int64_t d : td->dims) n *= size_t(d);  // checked against the data's size when parsed
        const size_t per_byte = size_t(8 / bits);
        auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[n ? n : 1]);
        for (size_t i = 0; i < n; i++) {
            uint8_t v = uint8_t((td->data[i / per_byte] >> ((i % per_byte) * size_t(bits))) & ((1u << bits) - 1));
            // Signed types are sign-extended to int8; float4e2m1 keeps its bit pattern.
            if (td->dtype == DType::INT4 || td->dtype == DType::INT2)
                v = uint8_t(int8_t(uint8_t(v << (8 - bits))) >> (8 - bits));
            buf[i] = v;
        }
        td->data = buf.get();
        td->nbytes = n;
        td->keep = buf;
        td->mapped = false;
        return td;
    }

    // Long: one switch over TensorProto's fields, then the checks that tie its data to its shape.
    std::shared_ptr<TensorData> parse_tensor_packed(Reader r) {
        auto td = std::make_shared<TensorData>();
        std::string_view raw;
        bool has_raw = false, external_loc = false;
        std::vector<uint64_t> ints;     // int32_data / int64_data / uint64_data
        std::vector<uint32_t> f32s;     // float_data
        std::vector<uint64_t> f64s;     // double_data
        int typed_field = 0;
        std::string ext_location;
        int64_t ext_offset = 0, ext_length = -1;
        uint32_t f, t;
        while (r.next(f, t)) {
            switch (f) {
                case 1: wire::read_varints(r, t, [&](uint64_t v) {
                            O2G_CHECK(td->dims.size() < size_t(kMaxRank), "tensor rank too large");
                            td->dims.push_back(int64_t(v));
                        }); break;
                case 2: O2G_CHECK(t == wire::VARINT, "bad data_type"); td->dtype = DType(int32_t(r.varint())); break;
                case 4: typed_field = 4; wire::read_fixed32s(r, t, [&](uint32_t v) { f32s.push_back(v); }); break;
                case 5: typed_field = 5; wire::read_varints(r, t, [&](uint64_t v) { ints.push_back(v); }); break;
                case 7: typed_field = 7; wire::read_varints(r, t, [&](uint64_t v) { ints.push_back(v); }); break;
                case 11: typed_field = 11; wire::read_varints(r, t, [&](uint64_t v) { ints.push_back(v); }); break;
                case 10: typed_field = 10; wire::read_fixed64s(r, t, [&](uint64_t v) { f64s.push_back(v); }); break;
                case 8: O2G_CHECK(t == wire::LEN, "bad tensor name"); td->name = str(r.bytes()); break;
                case 9: O2G_CHECK(t == wire::LEN, "bad raw_data"); raw = r.bytes(); has_raw = true; break;
                case 13: {
                    O2G_CHECK(t == wire::LEN, "bad external_data");
                    Reader kv(r.bytes());
                    std::string key, value;
                    uint32_t f2, t2;
                    while (kv.next(f2, t2)) {
                        if (f2 == 1 && t2 == wire::LEN) key = str(kv.bytes());
                        else if (f2 == 2 && t2 == wire::LEN) value = str(kv.bytes());
                        else kv.skip(t2);
                    }
                    auto to_i64 = [&](const std::string& s) {
                        // Digits only: no sign, no spaces, nothing strtoll would clamp at LLONG_MAX.
                        char* e = nullptr;
                        errno = 0;
                        long long v = strtoll(s.c_str(), &e, 10);
                        O2G_CHECK(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos &&
                                      e && *e == 0 && errno == 0,
                                  path, ": tensor '", td->name, "': bad external data ", key, " '", s,
                                  "' (not a non-negative 64-bit integer)");
                        return int64_t(v);
                    };
                    if (key == "location") ext_location = value;
                    else if (key == "offset") ext_offset = to_i64(value);
                    else if (key == "length") ext_length = to_i64(value);
                    break;
                }
                case 14: O2G_CHECK(t == wire::VARINT, "bad data_location"); external_loc = r.varint() == 1; break;
                default: r.skip(t);
            }
        }
        std::string shape = dims_str(td->dims);
        for (int64_t d : td->dims)
            O2G_CHECK(d >= 0, path, ": tensor '", td->name, "' has a negative dim in its shape ", shape);
        size_t esize = dtype_size(td->dtype);
        if (esize == 0) {
            td->data = nullptr;  // kept for its shape; using it is an error later
            td->nbytes = 0;
            return td;
        }
        // Sizes come from the file and may be hostile: count in 64 bits with overflow checks, and compare with
        // the data actually present before anything is allocated.
        uint64_t n = 1, need64 = 0;
        bool overflow = false;
        uint64_t nonzero = 1;  // ggml refuses a shape whose dims past 0 multiply beyond int64, empty or not
        for (int64_t d : td->dims) {
            overflow |= __builtin_mul_overflow(n, uint64_t(d), &n);
            if (d > 1) overflow |= __builtin_mul_overflow(nonzero, uint64_t(d), &nonzero) || nonzero > INT64_MAX;
        }
        overflow |= __builtin_mul_overflow(n, uint64_t(esize), &need64);
        O2G_CHECK(!overflow && need64 <= (uint64_t(1) << 62), path, ": tensor '", td->name, "' ", shape, " ",
                  dtype_name(td->dtype), " is too large (", overflow ? "more than 2^64" : std::to_string(need64),
                  " bytes)");
        const int bits = dtype_bits(td->dtype);
        if (bits < 8) need64 = (n * uint64_t(bits) + 7) / 8;  // packed; parse_tensor unpacks
        size_t need = size_t(need64);
        if (external_loc) {
            td->data = external(td->name, ext_location, ext_offset, ext_length, need, td->keep);
            td->mapped = true;
            td->nbytes = need;
            return td;
        }
        if (has_raw) {
            O2G_CHECK(raw.size() == need, path, ": tensor '", td->name, "' ", shape, " ", dtype_name(td->dtype),
                      ": raw_data has ", raw.size(), " bytes, its shape needs ", need);
            td->data = reinterpret_cast<const uint8_t*>(raw.data());
            td->nbytes = need;
            td->keep = keep;
            td->mapped = keep != nullptr;
            return td;
        }
        size_t count = typed_field == 4 ? f32s.size() : typed_field == 10 ? f64s.size() : ints.size();
        if (typed_field == 4 && (td->dtype == DType::COMPLEX64)) count /= 2;
        if (bits < 8) n = need;  // packed bytes, one per int32_data entry
        O2G_CHECK(count == n, path, ": tensor '", td->name, "' ", shape, " ", dtype_name(td->dtype), " has ", count,
                  " values, its shape needs ", n);
        // float_data and double_data are copied as they are: their width must be the element's (or the decode
        // below writes past the buffer).
        size_t width = typed_field == 4 ? (td->dtype == DType::COMPLEX64 ? 8 : 4) : typed_field == 10 ? 8 : esize;
        O2G_CHECK(width == esize, path, ": tensor '", td->name, "' ", shape, " ", dtype_name(td->dtype),
                  " stores its values in ", typed_field == 4 ? "float_data" : "double_data", " (", width,
                  " bytes each); its type needs ", esize);
        // Typed fields: decode once into an owned buffer (its size now bounded by the values in the file).
        auto buf = std::shared_ptr<uint8_t[]>(new uint8_t[need ? need : 1]);
        uint8_t* out = buf.get();
        for (size_t i = 0; i < n; i++) {
            switch (typed_field) {
                case 4: std::memcpy(out + i * 4, &f32s[i], 4); break;
                case 10: std::memcpy(out + i * 8, &f64s[i], 8); break;
                default: {
                    uint64_t v = ints[i];
                    if (td->dtype == DType::FLOAT16 || td->dtype == DType::BFLOAT16) {
                        uint16_t h = uint16_t(v);
                        std::memcpy(out + i * 2, &h, 2);
                    } else if (esize == 1) out[i] = uint8_t(v);
                    else if (esize == 2) { uint16_t h = uint16_t(v); std::memcpy(out + i * 2, &h, 2); }
                    else if (esize == 4) { uint32_t h = uint32_t(v); std::memcpy(out + i * 4, &h, 4); }
                    else std::memcpy(out + i * 8, &v, 8);
                }
            }
        }
        td->data = out;
        td->nbytes = need;
        td->keep = buf;
        return td;
    }

    // `fields`: a bit per value field present (1 << field number), for check_attribute_fields.
    Attribute parse_attribute(Reader r, int depth, uint64_t& fields) {
        Attribute a;
        uint32_t f, t;
        fields = 0;
        while (r.next(f, t)) {
            if (f < 64 && f != 1 && f != 20 && f != 21 && f != 13) fields |= uint64_t(1) << f;  // not name/type/ref/doc
            switch (f) {
                case 1: O2G_CHECK(t == wire::LEN, "bad attribute name"); a.name = str(r.bytes()); break;
                case 20: O2G_CHECK(t == wire::VARINT, "bad attribute type"); a.type = AttrType(int(r.varint())); break;
                case 2: O2G_CHECK(t == wire::I32, "bad attribute f"); { uint32_t v = r.fixed32(); std::memcpy(&a.f, &v, 4); } break;
                case 3: O2G_CHECK(t == wire::VARINT, "bad attribute i"); a.i = int64_t(r.varint()); break;
                case 4: O2G_CHECK(t == wire::LEN, "bad attribute s"); a.s = str(r.bytes()); break;
                case 5: O2G_CHECK(t == wire::LEN, "bad attribute t"); a.t = parse_tensor(Reader(r.bytes())); break;
                case 6: {
                    O2G_CHECK(t == wire::LEN, "bad attribute g");
                    a.g = std::make_shared<Graph>();
                    parse_graph(Reader(r.bytes()), *a.g, depth + 1);
                    break;
                }
                case 7: wire::read_fixed32s(r, t, [&](uint32_t v) { float x; std::memcpy(&x, &v, 4); a.floats.push_back(x); }); break;
                case 8: wire::read_varints(r, t, [&](uint64_t v) { a.ints.push_back(int64_t(v)); }); break;
                case 9: O2G_CHECK(t == wire::LEN, "bad attribute strings"); a.strings.push_back(str(r.bytes())); break;
                case 21: O2G_CHECK(t == wire::LEN, "bad ref_attr_name"); a.ref_attr_name = str(r.bytes()); break;
                default: r.skip(t);  // tensors, graphs, sparse tensors, type protos: unused by the runtime
            }
        }
        if (a.type == AttrType::UNDEFINED) {  // IR < 3 models may omit the type
            if (a.t) a.type = AttrType::TENSOR;
            else if (a.g) a.type = AttrType::GRAPH;
            else if (!a.floats.empty()) a.type = AttrType::FLOATS;
            else if (!a.ints.empty()) a.type = AttrType::INTS;
            else if (!a.strings.empty()) a.type = AttrType::STRINGS;
            else if (!a.s.empty()) a.type = AttrType::STRING;
        }
        return a;
    }

    Node parse_node(Reader r, int depth) {
        Node n;
        std::vector<uint64_t> attr_fields;
        uint32_t f, t;
        while (r.next(f, t)) {
            switch (f) {
                case 1: O2G_CHECK(t == wire::LEN, "bad node input"); n.inputs.push_back(str(r.bytes())); break;
                case 2: O2G_CHECK(t == wire::LEN, "bad node output"); n.outputs.push_back(str(r.bytes())); break;
                case 3: O2G_CHECK(t == wire::LEN, "bad node name"); n.name = str(r.bytes()); break;
                case 4: O2G_CHECK(t == wire::LEN, "bad op_type"); n.op_type = str(r.bytes()); break;
                case 7: O2G_CHECK(t == wire::LEN, "bad domain"); n.domain = str(r.bytes()); break;
                case 5: {
                    O2G_CHECK(t == wire::LEN, "bad attribute");
                    uint64_t fields = 0;
                    n.attrs.push_back(parse_attribute(Reader(r.bytes()), depth, fields));
                    attr_fields.push_back(fields);
                    break;
                }
                case 9: {  // metadata_props: torch.export keeps the module scope, which names can lose
                    O2G_CHECK(t == wire::LEN, "bad node metadata");
                    Reader e(r.bytes());
                    std::string key, value;
                    uint32_t ef, et;
                    while (e.next(ef, et)) {
                        if (ef == 1 && et == wire::LEN) key = str(e.bytes());
                        else if (ef == 2 && et == wire::LEN) value = str(e.bytes());
                        else e.skip(et);
                    }
                    if (key == "pkg.torch.onnx.name_scopes") n.scopes = value;
                    break;
                }
                default: r.skip(t);
            }
        }
        if (n.domain == "ai.onnx") n.domain.clear();
        for (size_t i = 0; i < n.attrs.size(); i++) check_attribute_fields(n, n.attrs[i], attr_fields[i]);
        return n;
    }

    void parse_graph(Reader r, Graph& g, int depth) {
        O2G_CHECK(depth < kMaxGraphDepth, path, ": subgraphs nested too deeply");
        std::vector<ValueInfo> inputs;
        uint32_t f, t;
        while (r.next(f, t)) {
            switch (f) {
                case 1: O2G_CHECK(t == wire::LEN, "bad graph node"); g.nodes.push_back(parse_node(Reader(r.bytes()), depth)); break;
                case 2: O2G_CHECK(t == wire::LEN, "bad graph name"); g.name = str(r.bytes()); break;
                case 5: {
                    O2G_CHECK(t == wire::LEN, "bad initializer");
                    auto td = parse_tensor(Reader(r.bytes()));
                    g.initializers[td->name] = td;
                    break;
                }
                case 11: O2G_CHECK(t == wire::LEN, "bad graph input"); inputs.push_back(parse_value_info(Reader(r.bytes()))); break;
                case 12: O2G_CHECK(t == wire::LEN, "bad graph output"); g.outputs.push_back(parse_value_info(Reader(r.bytes()))); break;
                case 13: O2G_CHECK(t == wire::LEN, "bad value_info"); g.value_info.push_back(parse_value_info(Reader(r.bytes()))); break;
                default: r.skip(t);
            }
        }
        // Before IR 4 initializers were also listed as inputs; they are constants here either way.
        for (auto& vi : inputs)
            if (!g.initializers.count(vi.name)) g.inputs.push_back(std::move(vi));
    }

    void parse_model(Reader r, Model& m) {
        bool has_graph = false;
        uint32_t f, t;
        while (r.next(f, t)) {
            switch (f) {
                case 1: O2G_CHECK(t == wire::VARINT, "bad ir_version"); m.ir_version = int64_t(r.varint()); break;
                case 2: O2G_CHECK(t == wire::LEN, "bad producer_name"); m.producer_name = str(r.bytes()); break;
                case 3: O2G_CHECK(t == wire::LEN, "bad producer_version"); m.producer_version = str(r.bytes()); break;
                case 7: O2G_CHECK(t == wire::LEN, "bad graph"); parse_graph(Reader(r.bytes()), m.graph, 0); has_graph = true; break;
                case 8: {
                    O2G_CHECK(t == wire::LEN, "bad opset_import");
                    Reader o(r.bytes());
                    std::string domain;
                    int64_t version = 0;
                    uint32_t f2, t2;
                    while (o.next(f2, t2)) {
                        if (f2 == 1 && t2 == wire::LEN) domain = str(o.bytes());
                        else if (f2 == 2 && t2 == wire::VARINT) version = int64_t(o.varint());
                        else o.skip(t2);
                    }
                    if (domain == "ai.onnx") domain.clear();
                    m.opsets[domain] = version;
                    break;
                }
                default: r.skip(t);
            }
        }
        O2G_CHECK(has_graph && m.ir_version > 0, "no ONNX model found (missing ir_version or graph)");
        if (m.opsets.empty()) m.opsets[""] = 1;  // IR 1/2 models carry no opset_import
    }
};

}  // namespace

std::shared_ptr<Model> parse_model(const uint8_t* data, size_t size, const std::string& path,
                                   const std::string& base_dir, std::shared_ptr<const void> keep) {
    auto m = std::make_shared<Model>();
    m->path = path;
    m->mapping = keep;
    Parser p;
    p.path = path;
    p.base_dir = base_dir;
    p.keep = keep;
    try {
        p.parse_model(Reader(data, size), *m);
    } catch (const Error& e) {
        std::string msg = e.what();
        if (msg.rfind(path, 0) == 0) throw;
        fail(path, ": not a valid ONNX model: ", msg);
    }
    tidy_graph(*m);
    return m;
}

std::shared_ptr<Model> load_model(const std::string& path) {
    std::string err;
    auto m = map_file(path, err);
    O2G_CHECK(m, path, ": ", err);
    O2G_CHECK(m->map.size > 0, path, ": not a valid ONNX model: file is empty");
    return parse_model(static_cast<const uint8_t*>(m->map.addr), m->map.size, path, dir_of(path), m);
}

}  // namespace onnx2ggml
