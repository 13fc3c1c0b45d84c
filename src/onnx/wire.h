// Minimal, bounds-checked protobuf wire-format reader. Zero-copy: strings and bytes are views into the input.
#pragma once
#include <cstdint>
#include <cstring>
#include <string_view>

#include "common/error.h"

namespace onnx2ggml::wire {

enum WireType : uint32_t { VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5 };

struct Reader {
    const uint8_t* p;
    const uint8_t* end;

    Reader(const uint8_t* b, size_t n) : p(b), end(b + n) {}
    explicit Reader(std::string_view s) : Reader(reinterpret_cast<const uint8_t*>(s.data()), s.size()) {}

    bool done() const { return p >= end; }

    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            O2G_CHECK(p < end, "truncated varint");
            uint8_t b = *p++;
            v |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        fail("malformed varint");
    }
    uint32_t fixed32() {
        O2G_CHECK(end - p >= 4, "truncated fixed32");
        uint32_t v;
        std::memcpy(&v, p, 4);
        p += 4;
        return v;
    }
    uint64_t fixed64() {
        O2G_CHECK(end - p >= 8, "truncated fixed64");
        uint64_t v;
        std::memcpy(&v, p, 8);
        p += 8;
        return v;
    }
    std::string_view bytes() {
        uint64_t n = varint();
        O2G_CHECK(n <= uint64_t(end - p), "length-delimited field runs past the end of its message");
        std::string_view s(reinterpret_cast<const char*>(p), size_t(n));
        p += n;
        return s;
    }
    // Reads a tag; returns false at end of message.
    bool next(uint32_t& field, uint32_t& type) {
        if (done()) return false;
        uint64_t tag = varint();
        field = uint32_t(tag >> 3);
        type = uint32_t(tag & 7);
        O2G_CHECK(field != 0, "invalid field number 0");
        return true;
    }
    void skip(uint32_t type) {
        switch (type) {
            case VARINT: varint(); break;
            case I64: fixed64(); break;
            case LEN: bytes(); break;
            case I32: fixed32(); break;
            default: fail("unsupported protobuf wire type ", type);
        }
    }
};

// Repeated scalars may arrive packed (LEN) or one per tag.
template <typename F>
inline void read_varints(Reader& r, uint32_t type, F&& push) {
    if (type == LEN) {
        Reader sub(r.bytes());
        while (!sub.done()) push(sub.varint());
    } else {
        O2G_CHECK(type == VARINT, "expected varint field");
        push(r.varint());
    }
}
template <typename F>
inline void read_fixed32s(Reader& r, uint32_t type, F&& push) {
    if (type == LEN) {
        Reader sub(r.bytes());
        while (!sub.done()) push(sub.fixed32());
    } else {
        O2G_CHECK(type == I32, "expected fixed32 field");
        push(r.fixed32());
    }
}
template <typename F>
inline void read_fixed64s(Reader& r, uint32_t type, F&& push) {
    if (type == LEN) {
        Reader sub(r.bytes());
        while (!sub.done()) push(sub.fixed64());
    } else {
        O2G_CHECK(type == I64, "expected fixed64 field");
        push(r.fixed64());
    }
}

}  // namespace onnx2ggml::wire
