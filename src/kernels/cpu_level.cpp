// CPU level detection for the run-time kernel dispatch (kernels/dispatch.cpp): cpuid feature bits and the OS's
// saved register state (xgetbv), by the x86-64 psABI's level definitions.
#include "kernels/cpu_level.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "common/error.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define O2G_X86_LEVELS 1
#include <cpuid.h>
#endif

namespace o2g {

#if defined(O2G_X86_LEVELS)
namespace {

bool bits(unsigned reg, std::initializer_list<int> b) {
    for (int i : b)
        if (!(reg >> i & 1)) return false;
    return true;
}

// The highest level this CPU and OS can run.
int detect_level() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 1;
    const unsigned c1 = c;
    unsigned c81 = 0;
    if (__get_cpuid(0x80000001, &a, &b, &c, &d)) c81 = c;
    // v2: SSE3, SSSE3, CX16, SSE4.1, SSE4.2, POPCNT, LAHF/SAHF.
    if (!bits(c1, {0, 9, 13, 19, 20, 23}) || !bits(c81, {0})) return 1;
    // v3: AVX, AVX2, BMI1/2, F16C, FMA, LZCNT, MOVBE, with the OS saving ymm state.
    unsigned b7 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) b7 = b;
    if (!bits(c1, {12, 22, 27, 28, 29}) || !bits(b7, {3, 5, 8}) || !bits(c81, {5})) return 2;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0x6) != 0x6) return 2;
    // v4: AVX-512 F, DQ, CD, BW, VL, with the OS saving zmm state.
    if (!bits(b7, {16, 17, 28, 30, 31}) || (lo & 0xE6) != 0xE6) return 3;
    return 4;
}

int pick_level() {
    const int have = detect_level();
    if (have < 2) onnx2ggml::fail("this CPU lacks x86-64-v2 (SSE4.2, POPCNT), which onnx2ggml's CPU code needs");
    const char* want = std::getenv("ONNX2GGML_CPU");
    if (!want || !*want) return have;
    int w = 0;
    if (!std::strcmp(want, "v2") || !std::strcmp(want, "x86-64-v2")) w = 2;
    if (!std::strcmp(want, "v3") || !std::strcmp(want, "x86-64-v3")) w = 3;
    if (!std::strcmp(want, "v4") || !std::strcmp(want, "x86-64-v4")) w = 4;
    if (!w) {
        std::fprintf(stderr, "onnx2ggml: ONNX2GGML_CPU=%s is not one of v2, v3, v4; using x86-64-v%d\n", want, have);
        return have;
    }
    if (w > have) {
        std::fprintf(stderr, "onnx2ggml: ONNX2GGML_CPU=%s asks for more than this CPU has; using x86-64-v%d\n", want,
                     have);
        return have;
    }
    return w;
}

}  // namespace

int cpu_level() {
    static const int level = pick_level();
    return level;
}

#else
int cpu_level() { return 0; }
#endif

const char* cpu_level_name() {
#if defined(O2G_CPU_DISPATCH)
    switch (cpu_level()) {
        case 4: return "x86-64-v4 (AVX-512)";
        case 3: return "x86-64-v3 (AVX2, FMA)";
        default: return "x86-64-v2 (SSE4.2)";
    }
#elif defined(O2G_NATIVE_KERNELS)
    return "built for one -march (ONNX2GGML_NATIVE)";
#elif defined(__aarch64__)
    return "AArch64 NEON";
#else
    return "generic";
#endif
}

}  // namespace o2g
