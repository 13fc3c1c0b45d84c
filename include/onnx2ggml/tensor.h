// A dense host tensor in ONNX (row-major) order: what sessions and generated programs take and return.
#pragma once
#include <cstdint>
#include <vector>

#include "onnx2ggml/dtype.h"

namespace onnx2ggml {

struct Tensor {
    DType dtype = DType::FLOAT;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;

    int64_t numel() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
    template <typename T> T* as() { return reinterpret_cast<T*>(data.data()); }
    template <typename T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

}  // namespace onnx2ggml
