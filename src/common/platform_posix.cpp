// platform.h on POSIX systems (Linux, macOS): mmap, sigaction, sysconf, /proc.
#ifndef _WIN32
#include "common/platform.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

namespace onnx2ggml::platform {

bool map_file(const std::string& path, FileMap& out, std::string& err) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = "cannot open file";
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        err = "not a regular file";
        return false;
    }
    out = {};
    if (st.st_size > 0) {
        void* p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            err = "mmap failed";
            return false;
        }
        out = {p, size_t(st.st_size)};
    }
    close(fd);  // the mapping keeps the file
    return true;
}

void unmap_file(const FileMap& m) {
    if (m.addr && m.size) munmap(m.addr, m.size);
}

void advise_dont_need(void* p, size_t n) { madvise(p, n, MADV_DONTNEED); }

void advise_huge_pages(void* p, size_t n) {
#ifdef MADV_HUGEPAGE
    madvise(p, n, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

void* aligned_alloc_bytes(size_t align, size_t n) {
    void* p = nullptr;
    return posix_memalign(&p, align, n) == 0 ? p : nullptr;
}

void aligned_free(void* p) { std::free(p); }

size_t page_size() { return size_t(sysconf(_SC_PAGESIZE)); }

uint64_t physical_memory() {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

std::FILE* open_file(const std::string& path, const char* mode) { return std::fopen(path.c_str(), mode); }

std::string real_path(const std::string& path) {
    char r[PATH_MAX];
    return realpath(path.c_str(), r) ? std::string(r) : std::string();
}

std::string executable_path() {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    return n > 0 ? std::string(exe, size_t(n)) : std::string();
}

uint64_t peak_resident_bytes() {
    // VmHWM first: getrusage's maxrss survives exec and can report the parent's.
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("VmHWM:", 0) == 0) return uint64_t(std::atol(line.c_str() + 6)) * 1024;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
#if defined(__APPLE__)
    return uint64_t(ru.ru_maxrss);  // bytes on macOS (no /proc there), KiB on Linux
#else
    return uint64_t(ru.ru_maxrss) * 1024;
#endif
}

bool stderr_is_terminal() { return isatty(STDERR_FILENO); }

void write_stderr(const char* s, size_t n) {
    ssize_t w = write(STDERR_FILENO, s, n);
    (void)w;
}

void exit_now(int code) { _exit(code); }

void set_env(const char* name, const char* value) { setenv(name, value, 1); }

namespace {

struct sigaction g_previous;
void (*g_report)(const void*) = nullptr;

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
    g_report(info->si_addr);  // exits if the address is in a registered mapping
    // Not ours: what was there before.
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, ctx);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        return g_previous.sa_handler(sig);
    }
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

}  // namespace

void install_mapped_fault_handler(void (*report)(const void* addr)) {
    g_report = report;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
}

std::vector<std::string> utf8_args(int argc, char** argv) { return std::vector<std::string>(argv, argv + argc); }

}  // namespace onnx2ggml::platform
#endif  // !_WIN32
