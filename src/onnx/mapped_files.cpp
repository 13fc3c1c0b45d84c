// A fixed table of mapped files that a signal handler can read, and the SIGBUS guard that uses it (on Windows the
// same report comes from EXCEPTION_IN_PAGE_ERROR: common/platform_windows.cpp).
//
// Why a guard: weights are read in place from the mapping (zero-copy, also by ggml's worker threads), so a file
// truncated after it was opened turns the next read of a lost page into SIGBUS. Sizes are checked when a file
// is mapped; the only way left to report a later truncation is the signal itself. Copying every file instead
// would double the memory of large models.
#include "onnx/mapped_files.h"

#include "common/platform.h"

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

// Async-signal-safe message building.
struct ErrorLine {
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

// Called from the fault handler: async-signal-safe. Exits when the address lies in one of our mappings.
void report_mapped_fault(const void* addr) {
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    for (Slot& s : g_slots) {
        uintptr_t base = s.addr.load(std::memory_order_acquire);
        if (base <= kClaimed || a < base || a - base >= s.size) continue;
        ErrorLine l;
        l.add("onnx2ggml: error: ");
        l.add(s.path);
        l.add(": the file shrank while it was mapped (byte ");
        l.add_u64(a - base);
        l.add(" of the ");
        l.add_u64(s.size);
        l.add(" it had when opened is gone); was it truncated or rewritten in place?\n");
        platform::write_stderr(l.buf, l.n);
        platform::exit_now(1);
    }
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

void install_sigbus_guard() { platform::install_mapped_fault_handler(report_mapped_fault); }

}  // namespace onnx2ggml
