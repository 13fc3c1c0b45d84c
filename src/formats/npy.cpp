#include "onnx2ggml/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "common/platform.h"
#include "ir/dtype.h"

namespace onnx2ggml {

static const char* descr_of(DType t) {
    switch (t) {
        case DType::FLOAT: return "<f4";
        case DType::DOUBLE: return "<f8";
        case DType::FLOAT16: return "<f2";
        case DType::BFLOAT16: return "<u2";
        case DType::INT8: return "|i1";
        case DType::UINT8: return "|u1";
        case DType::INT16: return "<i2";
        case DType::UINT16: return "<u2";
        case DType::INT32: return "<i4";
        case DType::UINT32: return "<u4";
        case DType::INT64: return "<i8";
        case DType::UINT64: return "<u8";
        case DType::BOOL: return "|b1";
        case DType::INT4: case DType::INT2: return "|i1";
        default: return dtype_is_narrow(t) ? "|u1" : nullptr;
    }
}

static DType dtype_of(std::string d, const std::string& path) {
    if (!d.empty() && d[0] == '=') d[0] = '<';
    if (d.size() == 3 && d[0] == '|' && d[2] != '1') d[0] = '<';
    if (d == "<f4") return DType::FLOAT;
    if (d == "<f8") return DType::DOUBLE;
    if (d == "<f2") return DType::FLOAT16;
    if (d == "|i1" || d == "<i1") return DType::INT8;
    if (d == "|u1" || d == "<u1") return DType::UINT8;
    if (d == "<i2") return DType::INT16;
    if (d == "<u2") return DType::UINT16;
    if (d == "<i4") return DType::INT32;
    if (d == "<u4") return DType::UINT32;
    if (d == "<i8") return DType::INT64;
    if (d == "<u8") return DType::UINT64;
    if (d == "|b1" || d == "<b1") return DType::BOOL;
    fail(path, ": unsupported .npy dtype '", d, "'");
}

Tensor read_npy(const std::string& path, DType want) {
    std::ifstream f(platform::fs_path(path), std::ios::binary);
    O2G_CHECK(f, path, ": cannot open");
    char magic[8];
    f.read(magic, 8);
    O2G_CHECK(f && std::memcmp(magic, "\x93NUMPY", 6) == 0, path, ": not a .npy file");
    uint32_t hlen = 0;
    if (magic[6] == 1) {
        unsigned char b[2];
        f.read(reinterpret_cast<char*>(b), 2);
        hlen = b[0] | (b[1] << 8);
    } else {
        unsigned char b[4];
        f.read(reinterpret_cast<char*>(b), 4);
        hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
    }
    O2G_CHECK(f && hlen < (1u << 20), path, ": bad .npy header");
    std::string h(hlen, '\0');
    f.read(&h[0], hlen);
    O2G_CHECK(f, path, ": truncated .npy header");
    auto field = [&](const std::string& key) {
        auto p = h.find("'" + key + "'");
        O2G_CHECK(p != std::string::npos, path, ": .npy header has no '", key, "'");
        p = h.find(':', p);
        O2G_CHECK(p != std::string::npos, path, ": bad .npy header");
        return p + 1;
    };
    size_t p = field("descr");
    size_t q1 = h.find('\'', p), q2 = h.find('\'', q1 + 1);
    O2G_CHECK(q1 != std::string::npos && q2 != std::string::npos, path, ": bad .npy descr");
    std::string descr = h.substr(q1 + 1, q2 - q1 - 1);
    p = field("fortran_order");
    O2G_CHECK(h.compare(h.find_first_not_of(' ', p), 5, "False") == 0, path, ": Fortran-order .npy is not supported");
    p = field("shape");
    size_t a = h.find('(', p), b = h.find(')', a);
    O2G_CHECK(a != std::string::npos && b != std::string::npos, path, ": bad .npy shape");
    Tensor t;
    t.dtype = dtype_of(descr, path);
    if (want == DType::BFLOAT16 && t.dtype == DType::UINT16) t.dtype = DType::BFLOAT16;
    // Narrow types travel one element per byte: float formats as uint8 bit patterns, integers as their values.
    if (dtype_is_narrow(want) && (t.dtype == DType::UINT8 || t.dtype == DType::INT8)) t.dtype = want;
    std::stringstream ss(h.substr(a + 1, b - a - 1));
    std::string tok;
    while (std::getline(ss, tok, ',')) {
        if (tok.find_first_not_of(' ') == std::string::npos) continue;
        char* e = nullptr;
        long long v = strtoll(tok.c_str(), &e, 10);
        O2G_CHECK(v >= 0, path, ": bad .npy shape");
        t.shape.push_back(v);
    }
    size_t n = size_t(t.numel()) * dtype_size(t.dtype);
    t.data.resize(n);
    f.read(reinterpret_cast<char*>(t.data.data()), std::streamsize(n));
    O2G_CHECK(size_t(f.gcount()) == n, path, ": .npy data is shorter than its shape");
    return t;
}

void write_npy(const std::string& path, const Tensor& t) {
    const char* d = descr_of(t.dtype);
    O2G_CHECK(d, "cannot write dtype ", dtype_name(t.dtype), " to .npy");
    std::string shape = "(";
    for (size_t i = 0; i < t.shape.size(); i++) shape += std::to_string(t.shape[i]) + (t.shape.size() == 1 ? "," : i + 1 < t.shape.size() ? ", " : "");
    shape += ")";
    std::string h = std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': " + shape + ", }";
    size_t total = 10 + h.size() + 1;
    h += std::string((64 - total % 64) % 64, ' ') + "\n";
    std::ofstream f(platform::fs_path(path), std::ios::binary | std::ios::trunc);
    O2G_CHECK(f, path, ": cannot write");
    f.write("\x93NUMPY\x01\x00", 8);
    unsigned char len[2] = {uint8_t(h.size() & 0xff), uint8_t(h.size() >> 8)};
    f.write(reinterpret_cast<char*>(len), 2);
    f.write(h.data(), std::streamsize(h.size()));
    f.write(reinterpret_cast<const char*>(t.data.data()), std::streamsize(t.data.size()));
    O2G_CHECK(f, path, ": write failed");
}

}  // namespace onnx2ggml
