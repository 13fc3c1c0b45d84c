// platform.h on Windows: file mappings, a vectored exception handler, and UTF-16 conversions at every call that
// takes a path (the narrow "A" functions read the ANSI code page, which cannot hold every UTF-8 name).
#ifdef _WIN32
#include "common/platform.h"

#ifndef NOMINMAX
#define NOMINMAX
#endif
#define WIN32_LEAN_AND_MEAN
#define PSAPI_VERSION 2  // GetProcessMemoryInfo from kernel32, no psapi.lib
#include <windows.h>
#include <io.h>
#include <psapi.h>
#include <shellapi.h>

#include <cstdlib>

namespace onnx2ggml::platform {

namespace {

std::wstring wide(const std::string& s) {
    if (s.empty()) return {};
    int n = MultiByteToWideChar(CP_UTF8, 0, s.data(), int(s.size()), nullptr, 0);
    std::wstring w(size_t(n > 0 ? n : 0), L'\0');
    if (n > 0) MultiByteToWideChar(CP_UTF8, 0, s.data(), int(s.size()), w.data(), n);
    return w;
}

std::string utf8(const wchar_t* w, size_t len) {
    if (!len) return {};
    int n = WideCharToMultiByte(CP_UTF8, 0, w, int(len), nullptr, 0, nullptr, nullptr);
    std::string s(size_t(n > 0 ? n : 0), '\0');
    if (n > 0) WideCharToMultiByte(CP_UTF8, 0, w, int(len), s.data(), n, nullptr, nullptr);
    return s;
}

// Windows paths as the rest of the code expects them: '/' separators, no "\\?\" prefix.
std::string portable_path(std::wstring w) {
    if (w.rfind(L"\\\\?\\UNC\\", 0) == 0) w = L"\\\\" + w.substr(8);
    else if (w.rfind(L"\\\\?\\", 0) == 0) w = w.substr(4);
    for (wchar_t& c : w)
        if (c == L'\\') c = L'/';
    return utf8(w.data(), w.size());
}

}  // namespace

bool map_file(const std::string& path, FileMap& out, std::string& err) {
    // Others may read, write and delete meanwhile, as on POSIX (writers are what the fault handler is for).
    HANDLE f = CreateFileW(wide(path).c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                           nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (f == INVALID_HANDLE_VALUE) {
        // A directory cannot be opened without FILE_FLAG_BACKUP_SEMANTICS: say what POSIX says.
        DWORD a = GetFileAttributesW(wide(path).c_str());
        const bool dir = a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY);
        err = dir ? "not a regular file" : "cannot open file";
        return false;
    }
    LARGE_INTEGER size;
    if (GetFileType(f) != FILE_TYPE_DISK || !GetFileSizeEx(f, &size)) {
        CloseHandle(f);
        err = "not a regular file";
        return false;
    }
    out = {};
    if (size.QuadPart > 0) {
        HANDLE m = CreateFileMappingW(f, nullptr, PAGE_READONLY, 0, 0, nullptr);
        void* p = m ? MapViewOfFile(m, FILE_MAP_READ, 0, 0, 0) : nullptr;
        if (m) CloseHandle(m);  // the view keeps the mapping
        if (!p) {
            CloseHandle(f);
            err = "mmap failed";
            return false;
        }
        out = {p, size_t(size.QuadPart)};
    }
    CloseHandle(f);
    return true;
}

void unmap_file(const FileMap& m) {
    if (m.addr) UnmapViewOfFile(m.addr);
}

// Windows has no hint that drops clean file pages or asks for transparent huge pages.
void advise_dont_need(void*, size_t) {}
void advise_huge_pages(void*, size_t) {}

void* aligned_alloc_bytes(size_t align, size_t n) { return _aligned_malloc(n, align); }
void aligned_free(void* p) { _aligned_free(p); }

size_t page_size() {
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return si.dwPageSize;
}

uint64_t physical_memory() {
    MEMORYSTATUSEX ms;
    ms.dwLength = sizeof ms;
    return GlobalMemoryStatusEx(&ms) ? ms.ullTotalPhys : 0;
}

std::FILE* open_file(const std::string& path, const char* mode) {
    return _wfopen(wide(path).c_str(), wide(mode).c_str());
}

std::string real_path(const std::string& path) {
    // FILE_FLAG_BACKUP_SEMANTICS opens directories too.
    HANDLE f = CreateFileW(wide(path).c_str(), 0, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                           OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, nullptr);
    if (f == INVALID_HANDLE_VALUE) return "";
    std::wstring w(MAX_PATH, L'\0');
    DWORD n = GetFinalPathNameByHandleW(f, w.data(), DWORD(w.size()), FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    if (n >= w.size()) {
        w.resize(n + 1);
        n = GetFinalPathNameByHandleW(f, w.data(), DWORD(w.size()), FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    }
    CloseHandle(f);
    if (n == 0 || n >= w.size()) return "";
    w.resize(n);
    return portable_path(w);
}

std::string executable_path() {
    std::wstring w(32768, L'\0');
    DWORD n = GetModuleFileNameW(nullptr, w.data(), DWORD(w.size()));
    if (n == 0 || n >= w.size()) return "";
    w.resize(n);
    return portable_path(w);
}

uint64_t peak_resident_bytes() {
    PROCESS_MEMORY_COUNTERS pmc;
    return GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof pmc) ? pmc.PeakWorkingSetSize : 0;
}

bool stderr_is_terminal() { return _isatty(_fileno(stderr)); }

void write_stderr(const char* s, size_t n) {
    DWORD w = 0;
    WriteFile(GetStdHandle(STD_ERROR_HANDLE), s, DWORD(n), &w, nullptr);
}

void exit_now(int code) { _exit(code); }

void set_env(const char* name, const char* value) { _putenv_s(name, value); }

namespace {

void (*g_report)(const void*) = nullptr;

// A read of a mapped page the file no longer backs raises EXCEPTION_IN_PAGE_ERROR (Windows itself refuses to
// truncate a mapped local file, so this comes from network shares and removable media); wine raises an access
// violation instead when a Linux process truncates the file. The second parameter is the address; reads only
// (parameter 0 is 0), since a write into our read-only view would be a bug, not a lost page. g_report ignores
// addresses outside our mappings, and everything goes on to the next handler.
LONG WINAPI on_exception(EXCEPTION_POINTERS* e) {
    const EXCEPTION_RECORD* r = e->ExceptionRecord;
    const bool lost_page = r->ExceptionCode == EXCEPTION_IN_PAGE_ERROR ||
                           (r->ExceptionCode == EXCEPTION_ACCESS_VIOLATION && r->ExceptionInformation[0] == 0);
    if (lost_page && r->NumberParameters >= 2) g_report(reinterpret_cast<const void*>(r->ExceptionInformation[1]));
    return EXCEPTION_CONTINUE_SEARCH;
}

}  // namespace

void install_mapped_fault_handler(void (*report)(const void* addr)) {
    g_report = report;
    AddVectoredExceptionHandler(1, on_exception);
}

std::vector<std::string> utf8_args(int argc, char** argv) {
    int n = 0;
    wchar_t** w = CommandLineToArgvW(GetCommandLineW(), &n);
    if (!w) return std::vector<std::string>(argv, argv + argc);
    std::vector<std::string> args;
    for (int i = 0; i < n; i++) args.push_back(utf8(w[i], wcslen(w[i])));
    LocalFree(w);
    return args;
}

}  // namespace onnx2ggml::platform
#endif  // _WIN32
