// Host tensors: integer, boolean and shape values computed when a graph is built (Shape, Range, Gather on
// indices, masks). `onnx2ggml run` keeps them on the host; compiled programs hold them in variables and pass
// them to the host functions of the op library (onnx2ggml/ops/host.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ggml.h"
#include "onnx2ggml/dtype.h"

namespace onnx2ggml {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);
// "[1, 4, 64, 64]", as error messages write a shape.
std::string shape_list(const Shape& s);

// A tensor whose data is known on the host. Data may be borrowed (kept alive by `keep`).
struct HostTensor {
    DType dtype = DType::UNDEFINED;
    Shape shape;
    const uint8_t* data = nullptr;
    size_t nbytes = 0;
    std::shared_ptr<const void> keep;
    bool mapped = false;  // see TensorData::mapped

    int64_t numel() const { return shape_numel(shape); }
    // Element i converted; valid for every supported dtype.
    double f64(int64_t i) const;
    int64_t i64(int64_t i) const;
    std::vector<int64_t> to_i64() const;
    std::vector<double> to_f64() const;
    std::vector<float> to_f32() const;

    static HostTensor alloc(DType t, const Shape& s);  // zero-filled, owned
    uint8_t* mut() { return const_cast<uint8_t*>(data); }  // only for tensors from alloc()
    void set_f64(int64_t i, double v);
    // Narrow float targets round by ONNX's Cast rules (see narrow_float_encode); other types ignore the flags.
    void set_f64(int64_t i, double v, bool saturate, int e8m0_round);
    void set_i64(int64_t i, int64_t v);
    static HostTensor from_i64(DType t, const Shape& s, const std::vector<int64_t>& v);
    static HostTensor from_f64(DType t, const Shape& s, const std::vector<double>& v);
    HostTensor reshaped(const Shape& s) const;
    HostTensor cast(DType to, bool saturate = true, int e8m0_round = E8M0_UP) const;
};

// Bytes of `h` as a device tensor of `type` (F32 for floats and booleans, I32 for integers; F16/BF16/Q8_0 rows
// for reduced-precision weights). Integers outside int32 are an error naming `name`.
std::vector<uint8_t> device_bytes(const HostTensor& h, ggml_type type, const std::string& name);

}  // namespace onnx2ggml

namespace o2g {
using onnx2ggml::DType;
using onnx2ggml::HostTensor;
using onnx2ggml::Shape;
}  // namespace o2g
