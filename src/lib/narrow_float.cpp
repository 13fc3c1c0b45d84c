// The narrow float formats (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0, float4e2m1) to and from their bit
// patterns. The oracle is onnx's reference Cast: ml_dtypes' conversion (round to nearest even), with
// onnx.numpy_helper.saturate_cast (clip to the finite range first) when saturate=1, and
// onnx.numpy_helper.to_float8e8m0 for e8m0.
#include <cmath>
#include <cstring>

#include "ir/dtype.h"

namespace onnx2ggml {

namespace {

struct Format {
    int exp_bits, man_bits, bias;
    bool ieee;      // e5m2: all-ones exponent is inf (mantissa 0) or NaN
    bool fnuz;      // no negative zero; 0x80 is the one NaN
    bool has_nan;   // false for float4e2m1
    double max;     // largest finite value
};

Format format_of(DType t) {
    switch (t) {
        case DType::FLOAT8E4M3FN: return {4, 3, 7, false, false, true, 448.0};
        case DType::FLOAT8E4M3FNUZ: return {4, 3, 8, false, true, true, 240.0};
        case DType::FLOAT8E5M2: return {5, 2, 15, true, false, true, 57344.0};
        case DType::FLOAT8E5M2FNUZ: return {5, 2, 16, false, true, true, 57344.0};
        default: return {2, 1, 1, false, false, false, 6.0};  // FLOAT4E2M1
    }
}

uint8_t nan_bits(const Format& f, bool neg) {
    if (f.fnuz) return 0x80;
    uint8_t sign = uint8_t(neg ? 1u << (f.exp_bits + f.man_bits) : 0);
    // e4m3fn: S.1111.111; e5m2: S.11111.10 (what ml_dtypes writes); float4 has none: ml_dtypes gives a zero.
    if (!f.has_nan) return uint8_t(sign ^ 0x8);
    return uint8_t(sign | (f.ieee ? 0x7E : 0x7F));
}

// |v| (finite) rounded to the format, as exponent and mantissa fields; 0xFF past the largest exponent.
uint8_t encode_magnitude(const Format& f, double a) {
    if (a == 0) return 0;
    const int min_exp = 1 - f.bias;  // exponent of the smallest normal
    int e2 = 0;
    std::frexp(a, &e2);  // a = m * 2^e2, m in [0.5, 1)
    const int k = std::max(e2 - 1, min_exp);
    double n = std::nearbyint(std::ldexp(a, f.man_bits - k));  // steps of 2^(k - man_bits), ties to even
    int exp_field = k == min_exp && n < std::ldexp(1.0, f.man_bits) ? 0 : k + f.bias;
    if (n >= std::ldexp(1.0, f.man_bits + 1)) {  // rounded up into the next binade
        n /= 2;
        exp_field++;
    }
    if (exp_field >= (1 << f.exp_bits)) return 0xFF;
    const int man = int(n) & ((1 << f.man_bits) - 1);
    return uint8_t((exp_field << f.man_bits) | man);
}

uint8_t encode_e8m0(float v, bool saturate, int mode) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, 4);
    uint32_t exp = (bits >> 23) & 0xFF;
    if (exp == 0xFF) return 0xFF;  // NaN and inf
    bool up = false;
    if (mode == E8M0_NEAREST) {
        bool g = bits & 0x400000, r = bits & 0x200000, s = bits & 0x1FFFFF;
        up = g && (r || s || exp > 0);
    } else if (mode == E8M0_UP) {
        up = (bits & 0x7FFFFF) != 0;
    }
    if (up && !(saturate && exp == 0xFE)) exp++;
    return uint8_t(exp);  // the sign is dropped, as in onnx.numpy_helper.to_float8e8m0
}

}  // namespace

double narrow_float_decode(DType t, uint8_t bits) {
    if (t == DType::FLOAT8E8M0) return bits == 0xFF ? NAN : std::ldexp(1.0, int(bits) - 127);
    const Format f = format_of(t);
    const int width = 1 + f.exp_bits + f.man_bits;
    bits &= uint8_t((1u << width) - 1);
    const bool neg = bits >> (width - 1);
    const int exp = (bits >> f.man_bits) & ((1 << f.exp_bits) - 1), man = bits & ((1 << f.man_bits) - 1);
    const int exp_max = (1 << f.exp_bits) - 1, man_max = (1 << f.man_bits) - 1;
    if (f.fnuz && bits == 0x80) return NAN;
    if (f.ieee && exp == exp_max) return man ? NAN : neg ? -INFINITY : INFINITY;
    if (f.has_nan && !f.ieee && !f.fnuz && exp == exp_max && man == man_max) return NAN;
    double mag = exp == 0 ? std::ldexp(double(man), 1 - f.bias - f.man_bits)
                          : std::ldexp(double(man + (1 << f.man_bits)), exp - f.bias - f.man_bits);
    return neg ? -mag : mag;
}

uint8_t narrow_float_encode(DType t, float v, bool saturate, int e8m0_round) {
    if (t == DType::FLOAT8E8M0) return encode_e8m0(v, saturate, e8m0_round);
    const Format f = format_of(t);
    const bool neg = std::signbit(v);
    const uint8_t sign = uint8_t(neg ? 1u << (f.exp_bits + f.man_bits) : 0);
    if (std::isnan(v)) return nan_bits(f, neg);
    double a = std::fabs(double(v));
    // Saturation clips first (inf included); float4e2m1 has neither inf nor NaN and always saturates.
    if ((saturate || !f.has_nan) && a > f.max) a = f.max;
    const uint8_t mag = std::isinf(a) ? 0xFF : encode_magnitude(f, a);
    const double back = mag == 0xFF ? INFINITY : narrow_float_decode(t, mag);
    if (!(back <= f.max)) {  // overflow (or the all-ones NaN code of e4m3fn)
        if (f.ieee) return uint8_t(sign | 0x7C);  // e5m2 overflows to inf
        return nan_bits(f, neg);
    }
    if (mag == 0 && f.fnuz) return 0;  // fnuz has no negative zero
    return uint8_t(sign | mag);
}

}  // namespace onnx2ggml
