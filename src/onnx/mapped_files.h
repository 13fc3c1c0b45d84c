// Files the loader maps (models, external data), so that a SIGBUS from one that shrank while mapped can be
// reported as one error line naming the file instead of a crash.
#pragma once
#include <cstddef>
#include <string>

namespace onnx2ggml {

void register_mapping(const void* addr, size_t size, const std::string& path);
void unregister_mapping(const void* addr);

// Installs a process-wide SIGBUS handler: a fault inside a registered mapping prints
// "onnx2ggml: error: FILE: ..." and exits with status 1; any other SIGBUS is handled as before.
// Programs (the CLI) call it; the library does not, since signal handlers belong to the program.
void install_sigbus_guard();

}  // namespace onnx2ggml
