// The few operating-system services onnx2ggml needs, behind one narrow interface: platform_posix.cpp
// (Linux, macOS) and platform_windows.cpp (Windows, mingw-w64 or MSVC) implement it. Paths are UTF-8 strings on
// every platform; the Windows side converts them to UTF-16 for the wide-character APIs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace onnx2ggml::platform {

// A whole file mapped read-only (addr is null for an empty file).
struct FileMap {
    void* addr = nullptr;
    size_t size = 0;
};
// false with err set ("cannot open file", "not a regular file", "mmap failed").
bool map_file(const std::string& path, FileMap& out, std::string& err);
void unmap_file(const FileMap& m);

// Memory hints; failure is harmless, and where the OS has no such hint they do nothing.
void advise_dont_need(void* p, size_t n);
void advise_huge_pages(void* p, size_t n);
// Aligned host memory, released with aligned_free (not std::free: Windows keeps aligned blocks apart).
void* aligned_alloc_bytes(size_t align, size_t n);
void aligned_free(void* p);

size_t page_size();
uint64_t physical_memory();  // 0 when unknown

// Characters that end a directory name in a path.
#ifdef _WIN32
inline constexpr const char* kPathSeparators = "/\\";
#else
inline constexpr const char* kPathSeparators = "/";
#endif

// A path for std::filesystem and the fstream constructors: UTF-8 bytes, whatever the narrow code page.
inline std::filesystem::path fs_path(const std::string& utf8) {
    return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}
std::FILE* open_file(const std::string& path, const char* mode);
// The resolved absolute path with '/' separators and symlinks followed, or "" if it does not exist.
std::string real_path(const std::string& path);
// The running executable's path, or "".
std::string executable_path();
// Peak resident set of this process in bytes, or 0 when unknown.
uint64_t peak_resident_bytes();

bool stderr_is_terminal();
// Async-signal-safe (usable from a fault handler).
void write_stderr(const char* s, size_t n);
[[noreturn]] void exit_now(int code);  // no atexit handlers, no destructors
void set_env(const char* name, const char* value);

// Calls report(addr) when a read of mapped memory faults because the file behind it shrank (SIGBUS on POSIX,
// EXCEPTION_IN_PAGE_ERROR on Windows). report exits if the address is one of ours; otherwise the fault takes
// its ordinary course.
void install_mapped_fault_handler(void (*report)(const void* addr));

// The command line as UTF-8 (on Windows argv is in the ANSI code page, which cannot hold every file name).
std::vector<std::string> utf8_args(int argc, char** argv);

}  // namespace onnx2ggml::platform
