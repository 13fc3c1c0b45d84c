// exp(x) in GCC/Clang vectors of any width, for the CPU kernels (softmax, GELU) built -march=native.
#pragma once
#include <cstring>

namespace o2g {

// x <= 0 (or slightly above), W at a time: 2^k * p(r), r = x - k ln2 in [-ln2/2, ln2/2], degree-7 Taylor
// polynomial (relative error below 1e-7); exp(x < -87) = 0. VF: float vector, VI: int32 vector of the same width.
template <typename VF, typename VI>
inline VF exp_nonpos(VF x) {
    const VF lo = x < -87.0f ? VF{} - 87.0f : x;
    const VF y = lo * 1.44269504f + 0.5f;
    VF k = __builtin_convertvector(__builtin_convertvector(y, VI), VF);
    k = k + __builtin_convertvector(k > y, VF);  // floor: truncation rounds negatives up; true is -1
    const VF r = (lo - k * 0.693145752f) - k * 1.42860677e-6f;
    VF p = r * (1.f / 5040) + 1.f / 720;
    p = p * r + 1.f / 120;
    p = p * r + 1.f / 24;
    p = p * r + 1.f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.f;
    p = p * r + 1.f;
    const VI bits = (__builtin_convertvector(k, VI) + 127) << 23;
    VF two_k;
    std::memcpy(&two_k, &bits, sizeof bits);
    return x < -87.0f ? VF{} : p * two_k;
}

}  // namespace o2g
