// Error type carrying context (file, node, op, opset) for every user-facing failure.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace onnx2ggml {

struct Error : std::runtime_error {
    explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] inline void fail(Args&&... args) {
    std::ostringstream ss;
    (ss << ... << args);
    throw Error(ss.str());
}

#define O2G_CHECK(cond, ...)                      \
    do {                                          \
        if (!(cond)) ::onnx2ggml::fail(__VA_ARGS__); \
    } while (0)

}  // namespace onnx2ggml
