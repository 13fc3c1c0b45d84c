// 8 floats as one vector (GCC/Clang vector extension: one AVX register, two NEON registers on AArch64), for the
// CPU kernels built -march=native.
#pragma once
#include <cstring>

#include "ggml.h"
#if defined(__F16C__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace o2g {

typedef float v8 __attribute__((vector_size(32)));

// Unaligned load of 8 floats.
inline v8 load8(const float* p) {
    v8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// 8 halves widened to floats (F16C or NEON where the build has it).
inline v8 load8(const ggml_fp16_t* p) {
#if defined(__F16C__)
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    v8 v;
    std::memcpy(&v, &f, sizeof v);
    return v;
#elif defined(__ARM_NEON)  // FCVTL: baseline ARMv8-A
    const float16_t* h = reinterpret_cast<const float16_t*>(p);
    const float32x4_t lo = vcvt_f32_f16(vld1_f16(h)), hi = vcvt_f32_f16(vld1_f16(h + 4));
    v8 v;
    std::memcpy(&v, &lo, sizeof lo);
    std::memcpy(reinterpret_cast<char*>(&v) + sizeof lo, &hi, sizeof hi);
    return v;
#else
    v8 v;
    for (int i = 0; i < 8; i++) v[i] = ggml_fp16_to_fp32(p[i]);
    return v;
#endif
}

}  // namespace o2g
