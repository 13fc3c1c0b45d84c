// 8 floats as one vector (GCC/Clang vector extension: one AVX register), for the CPU kernels built -march=native.
#pragma once
#include <cstring>

namespace o2g {

typedef float v8 __attribute__((vector_size(32)));

// Unaligned load of 8 floats.
inline v8 load8(const float* p) {
    v8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

}  // namespace o2g
