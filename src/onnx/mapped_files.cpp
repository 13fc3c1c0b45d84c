// A fixed table of mapped files that a signal handler can read, and the SIGBUS guard that uses it.
//
// Why a guard: weights are read in place from the mapping (zero-copy, also by ggml's worker threads), so a file
// truncated after it was opened turns the next read of a lost page into SIGBUS. Sizes are checked when a file
// is mapped; the only way left to report a later truncation is the signal itself. Copying every file instead
// would double the memory of large models.
#include "onnx/mapped_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace onnx2ggml {

namespace {

constexpr int kSlots = 256;
constexpr uintptr_t kClaimed = 1;  // a slot being filled in

struct Slot {
    std::atomic<uintptr_t> addr{0};
    size_t size = 0;
    char path[480] = {};
};
Slot g_slots[kSlots];
struct sigaction g_previous;

// Async-signal-safe message building.
struct Line {
    char buf[1024];
    size_t n = 0;
    void add(const char* s) {
        while (*s && n < sizeof(buf) - 1) buf[n++] = *s++;
    }
    void add_u64(uint64_t v) {
        char d[24];
        int k = 0;
        do d[k++] = char('0' + v % 10), v /= 10; while (v);
        while (k && n < sizeof(buf) - 1) buf[n++] = d[--k];
    }
};

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
    uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
        uintptr_t base = s.addr.load(std::memory_order_acquire);
        if (base <= kClaimed || a < base || a - base >= s.size) continue;
        Line l;
        l.add("onnx2ggml: error: ");
        l.add(s.path);
        l.add(": the file shrank while it was mapped (byte ");
        l.add_u64(a - base);
        l.add(" of the ");
        l.add_u64(s.size);
        l.add(" it had when opened is gone); was it truncated or rewritten in place?\n");
        ssize_t w = write(STDERR_FILENO, l.buf, l.n);
        (void)w;
        _exit(1);
    }
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

void register_mapping(const void* addr, size_t size, const std::string& path) {
    if (!addr || !size) return;
    for (Slot& s : g_slots) {
        uintptr_t expect = 0;
        if (!s.addr.compare_exchange_strong(expect, kClaimed)) continue;
        s.size = size;
        size_t n = std::min(path.size(), sizeof(s.path) - 1);
        std::memcpy(s.path, path.data(), n);
        s.path[n] = 0;
        s.addr.store(reinterpret_cast<uintptr_t>(addr), std::memory_order_release);
        return;
    }
    // Table full: the file works as before, only without a named error on SIGBUS.
}

void unregister_mapping(const void* addr) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (Slot& s : g_slots) {
        uintptr_t expect = a;
        if (a > kClaimed && s.addr.compare_exchange_strong(expect, 0)) return;
    }
}

void install_sigbus_guard() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
}

}  // namespace onnx2ggml
