// 8 floats as one vector (GCC/Clang vector extension: one AVX register), for the CPU kernels built -march=native.
#pragma once
#include <cstring>

#include "ggml.h"
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace o2g {

typedef float v8 __attribute__((vector_size(32)));

// Unaligned load of 8 floats.
inline v8 load8(const float* p) {
    v8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// 8 halves widened to floats (F16C where the build has it).
inline v8 load8(const ggml_fp16_t* p) {
#if defined(__F16C__)
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    v8 v;
    std::memcpy(&v, &f, sizeof v);
    return v;
#else
    v8 v;
    for (int i = 0; i < 8; i++) v[i] = ggml_fp16_to_fp32(p[i]);
    return v;
#endif
}

}  // namespace o2g
