#include "onnx2ggml/host_tensor.h"

#include <cmath>
#include <cstring>
#include <cstdint>
#include <new>

#include "common/error.h"
#include "lib/host_util.h"
#include "ggml.h"

namespace onnx2ggml {

int64_t shape_numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) {  // saturating: dims from a file may multiply past int64 (size checks then refuse it)
        const bool negative = (n < 0) != (d < 0);
        if (__builtin_mul_overflow(n, d, &n)) return negative ? INT64_MIN : INT64_MAX;
    }
    return n;
}

std::string shape_list(const Shape& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

std::string shape_str(const Shape& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) {
        if (i) r += ',';
        r += std::to_string(s[i]);
    }
    return r + "]";
}

template <typename T>
static T load(const uint8_t* p, int64_t i) {
    T v;
    std::memcpy(&v, p + i * int64_t(sizeof(T)), sizeof(T));
    return v;
}

template <typename T>
static void store(uint8_t* p, int64_t i, T v) {
    std::memcpy(p + i * int64_t(sizeof(T)), &v, sizeof(T));
}

double HostTensor::f64(int64_t i) const {
    switch (dtype) {
        case DType::FLOAT: return load<float>(data, i);
        case DType::DOUBLE: return load<double>(data, i);
        case DType::FLOAT16: return ggml_fp16_to_fp32(load<ggml_fp16_t>(data, i));
        case DType::BFLOAT16: return ggml_bf16_to_fp32(load<ggml_bf16_t>(data, i));
        case DType::UINT64: return double(load<uint64_t>(data, i));
        case DType::FLOAT8E4M3FN: case DType::FLOAT8E4M3FNUZ: case DType::FLOAT8E5M2: case DType::FLOAT8E5M2FNUZ:
        case DType::FLOAT8E8M0: case DType::FLOAT4E2M1: return narrow_float_decode(dtype, data[i]);
        default: return double(i64(i));
    }
}

// The 4- and 2-bit integers keep their low bits, as ml_dtypes' conversions (and onnx's Cast) do.
static int64_t wrap_narrow_int(DType t, int64_t v) {
    switch (t) {
        case DType::INT4: return ((v & 15) ^ 8) - 8;
        case DType::UINT4: return v & 15;
        case DType::INT2: return ((v & 3) ^ 2) - 2;
        case DType::UINT2: return v & 3;
        default: return v;
    }
}

int64_t HostTensor::i64(int64_t i) const {
    switch (dtype) {
        case DType::BOOL: return load<uint8_t>(data, i) != 0;
        case DType::UINT8: return load<uint8_t>(data, i);
        case DType::INT8: return load<int8_t>(data, i);
        case DType::UINT16: return load<uint16_t>(data, i);
        case DType::INT16: return load<int16_t>(data, i);
        case DType::INT32: return load<int32_t>(data, i);
        case DType::UINT32: return load<uint32_t>(data, i);
        case DType::INT64: return load<int64_t>(data, i);
        case DType::UINT64: return int64_t(load<uint64_t>(data, i));
        case DType::INT4: case DType::UINT4: case DType::INT2: case DType::UINT2:
            return wrap_narrow_int(dtype, load<int8_t>(data, i));
        default: {
            double v = f64(i);
            if (std::isnan(v)) return 0;
            if (v >= 9.2e18) return INT64_MAX;
            if (v <= -9.2e18) return INT64_MIN;
            return int64_t(v);
        }
    }
}

std::vector<int64_t> HostTensor::to_i64() const {
    std::vector<int64_t> r(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); i++) r[size_t(i)] = i64(i);
    return r;
}

std::vector<double> HostTensor::to_f64() const {
    std::vector<double> r(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); i++) r[size_t(i)] = f64(i);
    return r;
}

std::vector<float> HostTensor::to_f32() const {
    std::vector<float> r(static_cast<size_t>(numel()));
    if (dtype == DType::FLOAT) {
        if (!r.empty()) std::memcpy(r.data(), data, r.size() * 4);
        return r;
    }
    for (int64_t i = 0; i < numel(); i++) r[size_t(i)] = float(f64(i));
    return r;
}

HostTensor HostTensor::alloc(DType t, const Shape& s) {
    size_t es = dtype_size(t);
    O2G_CHECK(es > 0, "tensors of type ", dtype_name(t), " are not supported");
    check_host_size(s, es, "output");  // before the allocation: shapes can come from the model's data
    HostTensor h;
    h.dtype = t;
    h.shape = s;
    h.nbytes = size_t(shape_numel(s)) * es;
    // 64-byte aligned, so that a weight made on the host can always be used in place by ggml (32-byte tensor
    // alignment); new[]'s 16 made that depend on where malloc put it, and so the memory a run used.
    constexpr std::align_val_t align{64};
    const size_t n = h.nbytes ? h.nbytes : 1;
    auto buf = std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(::operator new[](n, align)),
                                          [](uint8_t* p) { ::operator delete[](p, align); });
    std::memset(buf.get(), 0, n);
    h.data = buf.get();
    h.keep = buf;
    return h;
}

void HostTensor::set_f64(int64_t i, double v) { set_f64(i, v, true, E8M0_UP); }

void HostTensor::set_f64(int64_t i, double v, bool saturate, int e8m0_round) {
    uint8_t* p = mut();
    switch (dtype) {
        case DType::FLOAT8E4M3FN: case DType::FLOAT8E4M3FNUZ: case DType::FLOAT8E5M2: case DType::FLOAT8E5M2FNUZ:
        case DType::FLOAT8E8M0: case DType::FLOAT4E2M1:
            p[i] = narrow_float_encode(dtype, float(v), saturate, e8m0_round);
            break;
        case DType::FLOAT: store<float>(p, i, float(v)); break;
        case DType::DOUBLE: store<double>(p, i, v); break;
        case DType::FLOAT16: store<ggml_fp16_t>(p, i, ggml_fp32_to_fp16(float(v))); break;
        case DType::BFLOAT16: store<ggml_bf16_t>(p, i, ggml_fp32_to_bf16(float(v))); break;
        case DType::BOOL: store<uint8_t>(p, i, v != 0); break;
        default: {
            // float -> int conversion truncates toward zero, as onnxruntime's Cast does
            if (std::isnan(v)) v = 0;
            set_i64(i, v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : int64_t(v));
        }
    }
}

void HostTensor::set_i64(int64_t i, int64_t v) {
    uint8_t* p = mut();
    switch (dtype) {
        case DType::BOOL: store<uint8_t>(p, i, v != 0); break;
        case DType::UINT8: store<uint8_t>(p, i, uint8_t(v)); break;
        case DType::INT8: store<int8_t>(p, i, int8_t(v)); break;
        case DType::UINT16: store<uint16_t>(p, i, uint16_t(v)); break;
        case DType::INT16: store<int16_t>(p, i, int16_t(v)); break;
        case DType::INT32: store<int32_t>(p, i, int32_t(v)); break;
        case DType::UINT32: store<uint32_t>(p, i, uint32_t(v)); break;
        case DType::INT64: store<int64_t>(p, i, v); break;
        case DType::UINT64: store<uint64_t>(p, i, uint64_t(v)); break;
        case DType::INT4: case DType::UINT4: case DType::INT2: case DType::UINT2:
            store<int8_t>(p, i, int8_t(wrap_narrow_int(dtype, v)));
            break;
        default: set_f64(i, double(v));
    }
}

HostTensor HostTensor::from_i64(DType t, const Shape& s, const std::vector<int64_t>& v) {
    HostTensor h = alloc(t, s);
    O2G_CHECK(int64_t(v.size()) == h.numel(), "internal: value count mismatch");
    for (size_t i = 0; i < v.size(); i++) h.set_i64(int64_t(i), v[i]);
    return h;
}

HostTensor HostTensor::from_f64(DType t, const Shape& s, const std::vector<double>& v) {
    HostTensor h = alloc(t, s);
    O2G_CHECK(int64_t(v.size()) == h.numel(), "internal: value count mismatch");
    for (size_t i = 0; i < v.size(); i++) h.set_f64(int64_t(i), v[i]);
    return h;
}

HostTensor HostTensor::reshaped(const Shape& s) const {
    O2G_CHECK(shape_numel(s) == numel(), "internal: reshape ", shape_str(shape), " -> ", shape_str(s));
    HostTensor h = *this;
    h.shape = s;
    return h;
}

HostTensor HostTensor::cast(DType to, bool saturate, int e8m0_round) const {
    if (to == dtype) return *this;
    HostTensor h = alloc(to, shape);
    bool src_int = dtype_is_integer(dtype) || dtype == DType::BOOL;
    for (int64_t i = 0; i < numel(); i++) {
        if (src_int && (dtype_is_integer(to) || to == DType::BOOL)) h.set_i64(i, i64(i));
        else h.set_f64(i, f64(i), saturate, e8m0_round);
    }
    return h;
}

std::vector<uint8_t> device_bytes(const HostTensor& h, ggml_type type, const std::string& name) {
    int64_t n = h.numel();
    if ((type == GGML_TYPE_F16 && h.dtype == DType::FLOAT16) || (type == GGML_TYPE_BF16 && h.dtype == DType::BFLOAT16))
        return std::vector<uint8_t>(h.data, h.data + size_t(n) * 2);  // as stored: no f32 copy of a big table
    if (type == GGML_TYPE_F16 || type == GGML_TYPE_BF16 || type == GGML_TYPE_Q8_0) {  // --weights: reduced precision
        std::vector<float> f = h.to_f32();
        const int64_t row = h.shape.empty() ? 1 : h.shape.back(), rows = row ? n / row : 0;
        std::vector<uint8_t> out(ggml_row_size(type, row) * size_t(rows));
        if (n) ggml_quantize_chunk(type, f.data(), out.data(), 0, rows, row, nullptr);
        return out;
    }
    std::vector<uint8_t> out(size_t(n) * 4);
    if (type == GGML_TYPE_F32) {
        if (h.dtype == DType::FLOAT) {
            if (n) std::memcpy(out.data(), h.data, size_t(n) * 4);
        } else {
            auto* o = reinterpret_cast<float*>(out.data());
            for (int64_t i = 0; i < n; i++) o[i] = float(h.f64(i));
        }
    } else {
        auto* o = reinterpret_cast<int32_t*>(out.data());
        for (int64_t i = 0; i < n; i++) {
            int64_t v = h.i64(i);
            O2G_CHECK(v >= INT32_MIN && v <= INT32_MAX, "value ", v, " of '", name,
                      "' does not fit the int32 the device computes with");
            o[i] = int32_t(v);
        }
    }
    return out;
}

}  // namespace onnx2ggml
