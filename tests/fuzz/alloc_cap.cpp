// The harnesses' memory cap: operator new and delete, replaced, on top of malloc (which ASan still intercepts,
// so overflows, use after free and leaks are still found). ASan's own operator new reports any allocation
// it cannot serve as a fatal "out of memory", even with allocator_may_return_null; a size a hostile model
// declares must instead come back as std::bad_alloc, which the harnesses count as refused input (see
// fuzz_common.h). Lost: ASan's new/delete-versus-malloc/free mismatch check.
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

size_t cap_bytes() {
    static const size_t cap = [] {
        const char* e = getenv("FUZZ_MAX_ALLOC_MB");
        return size_t(e ? atoll(e) : 1024) << 20;
    }();
    return cap;
}

void* allocate(size_t n, size_t align, bool nothrow) {
    void* p = nullptr;
    if (n <= cap_bytes()) {
        if (align <= alignof(std::max_align_t)) p = malloc(n ? n : 1);
        else p = aligned_alloc(align, (n + align - 1) / align * align);
    }
    if (!p && !nothrow) throw std::bad_alloc();
    return p;
}

}  // namespace

void* operator new(size_t n) { return allocate(n, 0, false); }
void* operator new[](size_t n) { return allocate(n, 0, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0, true); }
void* operator new(size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new[](size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, size_t(a), true); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return allocate(n, size_t(a), true); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { free(p); }
