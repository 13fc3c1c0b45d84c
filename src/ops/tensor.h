// Host tensors (shape and integer work done at bind time) and runtime values.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"

struct ggml_tensor;

namespace onnx2ggml {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);

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
    void set_i64(int64_t i, int64_t v);
    static HostTensor from_i64(DType t, const Shape& s, const std::vector<int64_t>& v);
    static HostTensor from_f64(DType t, const Shape& s, const std::vector<double>& v);
    HostTensor reshaped(const Shape& s) const;
    HostTensor cast(DType to) const;
};

// A value during graph build: on the device (ggml tensor), on the host, or both.
struct Val {
    DType dtype = DType::UNDEFINED;
    Shape shape;
    ggml_tensor* t = nullptr;               // F32 for float/bool, I32 for integers
    std::shared_ptr<HostTensor> host;       // set when the data is known at build time
    bool is_weight = false;                 // initializer: uploaded once and cached
    std::string name;
    std::set<int> input_deps;               // graph inputs whose data this host value depends on
    bool present() const { return dtype != DType::UNDEFINED; }
    int rank() const { return int(shape.size()); }
};

}  // namespace onnx2ggml
