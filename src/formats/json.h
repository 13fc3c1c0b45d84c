// A small JSON reader for file headers we parse (safetensors, LoRA adapter metadata): bounded depth, exact
// integers, errors with the byte offset.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace o2g {

struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    double num = 0;
    bool is_int = false;  // a number written without fraction or exponent that fits int64
    int64_t i = 0;
    std::string str;
    std::vector<Json> arr;
    std::vector<std::pair<std::string, Json>> obj;  // in file order

    // Defined in json.cpp, where Json is complete: clang with libstdc++ in C++20 rejects the implicit ones
    // (the vector of pairs of an incomplete type).
    Json();
    Json(const Json&);
    Json(Json&&) noexcept;
    Json& operator=(const Json&);
    Json& operator=(Json&&) noexcept;
    ~Json();

    const Json* get(const std::string& key) const;  // nullptr if absent or not an object
};

// Parses one JSON value filling [p, p + n) (whitespace around it allowed). Throws std::runtime_error
// ("at byte K: what") on malformed text or nesting deeper than 64.
Json parse_json(const char* p, size_t n);

}  // namespace o2g
