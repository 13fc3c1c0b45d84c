// JSON reader (src/formats/json.h): recursive descent over a byte range, never reading past its end.
#include "formats/json.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace o2g {

Json::Json() = default;
Json::Json(const Json&) = default;
Json::Json(Json&&) noexcept = default;
Json& Json::operator=(const Json&) = default;
Json& Json::operator=(Json&&) noexcept = default;
Json::~Json() = default;

const Json* Json::get(const std::string& key) const {
    if (kind != Object) return nullptr;
    for (auto& [k, v] : obj)
        if (k == key) return &v;
    return nullptr;
}

namespace {

struct Reader {
    const char* p;
    size_t n, pos = 0;

    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("at byte " + std::to_string(pos) + ": " + what);
    }
    bool at_end() const { return pos >= n; }
    char peek() const { return at_end() ? '\0' : p[pos]; }
    void skip_ws() {
        while (!at_end() && (p[pos] == ' ' || p[pos] == '\t' || p[pos] == '\n' || p[pos] == '\r')) pos++;
    }
    void expect(char c) {
        if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
        pos++;
    }
    void literal(const char* word) {
        for (const char* w = word; *w; w++) {
            if (at_end() || p[pos] != *w) fail(std::string("expected '") + word + "'");
            pos++;
        }
    }

    static void put_utf8(std::string& s, uint32_t c) {
        if (c < 0x80) {
            s += char(c);
        } else if (c < 0x800) {
            s += char(0xC0 | (c >> 6));
            s += char(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            s += char(0xE0 | (c >> 12));
            s += char(0x80 | ((c >> 6) & 0x3F));
            s += char(0x80 | (c & 0x3F));
        } else {
            s += char(0xF0 | (c >> 18));
            s += char(0x80 | ((c >> 12) & 0x3F));
            s += char(0x80 | ((c >> 6) & 0x3F));
            s += char(0x80 | (c & 0x3F));
        }
    }

    uint32_t hex4() {
        if (n - pos < 4) fail("truncated \\u escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
            char c = p[pos++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
            else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }

    std::string string() {
        expect('"');
        std::string s;
        for (;;) {
            if (at_end()) fail("unterminated string");
            char c = p[pos++];
            if (c == '"') return s;
            if (static_cast<unsigned char>(c) < 0x20) fail("control character in a string");
            if (c != '\\') {
                s += c;
                continue;
            }
            if (at_end()) fail("unterminated escape");
            char e = p[pos++];
            switch (e) {
            case '"': s += '"'; break;
            case '\\': s += '\\'; break;
            case '/': s += '/'; break;
            case 'b': s += '\b'; break;
            case 'f': s += '\f'; break;
            case 'n': s += '\n'; break;
            case 'r': s += '\r'; break;
            case 't': s += '\t'; break;
            case 'u': {
                uint32_t c1 = hex4();
                if (c1 >= 0xD800 && c1 < 0xDC00 && n - pos >= 6 && p[pos] == '\\' && p[pos + 1] == 'u') {
                    pos += 2;
                    uint32_t c2 = hex4();
                    if (c2 < 0xDC00 || c2 >= 0xE000) fail("bad surrogate pair");
                    c1 = 0x10000 + ((c1 - 0xD800) << 10) + (c2 - 0xDC00);
                }
                put_utf8(s, c1);
                break;
            }
            default: fail("bad escape");
            }
        }
    }

    Json number() {
        size_t start = pos;
        bool integral = true;
        if (peek() == '-') pos++;
        if (!(peek() >= '0' && peek() <= '9')) fail("bad number");
        while (peek() >= '0' && peek() <= '9' && !at_end()) pos++;
        if (peek() == '.' && !at_end()) {
            integral = false;
            pos++;
            if (!(peek() >= '0' && peek() <= '9')) fail("bad number");
            while (peek() >= '0' && peek() <= '9' && !at_end()) pos++;
        }
        if ((peek() == 'e' || peek() == 'E') && !at_end()) {
            integral = false;
            pos++;
            if (peek() == '+' || peek() == '-') pos++;
            if (!(peek() >= '0' && peek() <= '9')) fail("bad number");
            while (peek() >= '0' && peek() <= '9' && !at_end()) pos++;
        }
        std::string text(p + start, pos - start);
        Json v;
        v.kind = Json::Number;
        v.num = std::strtod(text.c_str(), nullptr);
        if (integral) {
            errno = 0;
            char* end = nullptr;
            long long x = std::strtoll(text.c_str(), &end, 10);
            if (errno == 0 && end && *end == '\0') {
                v.is_int = true;
                v.i = x;
            }
        }
        return v;
    }

    Json value(int depth) {
        if (depth > 64) fail("nested too deeply");
        skip_ws();
        if (at_end()) fail("unexpected end");
        Json v;
        char c = p[pos];
        if (c == '{') {
            v.kind = Json::Object;
            pos++;
            skip_ws();
            if (peek() == '}' && !at_end()) {
                pos++;
                return v;
            }
            for (;;) {
                skip_ws();
                std::string k = string();
                skip_ws();
                expect(':');
                v.obj.emplace_back(std::move(k), value(depth + 1));
                skip_ws();
                if (peek() == ',' && !at_end()) {
                    pos++;
                    continue;
                }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.kind = Json::Array;
            pos++;
            skip_ws();
            if (peek() == ']' && !at_end()) {
                pos++;
                return v;
            }
            for (;;) {
                v.arr.push_back(value(depth + 1));
                skip_ws();
                if (peek() == ',' && !at_end()) {
                    pos++;
                    continue;
                }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.kind = Json::String;
            v.str = string();
            return v;
        }
        if (c == 't') {
            literal("true");
            v.kind = Json::Bool;
            v.b = true;
            return v;
        }
        if (c == 'f') {
            literal("false");
            v.kind = Json::Bool;
            return v;
        }
        if (c == 'n') {
            literal("null");
            return v;
        }
        return number();
    }
};

}  // namespace

Json parse_json(const char* p, size_t n) {
    Reader r{p, n};
    Json v = r.value(0);
    r.skip_ws();
    if (!r.at_end()) r.fail("unexpected text after the value");
    return v;
}

}  // namespace o2g
