// Files the loader maps (models, external data), so that a SIGBUS from one that shrank while mapped can be
// reported as one error line naming the file instead of a crash.
#pragma once
#include <cstddef>
#include <string>

#include "onnx2ggml/onnx2ggml.h"  // install_sigbus_guard

namespace onnx2ggml {

void register_mapping(const void* addr, size_t size, const std::string& path);
void unregister_mapping(const void* addr);

}  // namespace onnx2ggml
