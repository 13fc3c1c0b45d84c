// Reading and writing .npy files (little-endian, C order) as onnx2ggml::Tensor.
#pragma once
#include <string>

#include "onnx2ggml/tensor.h"

namespace onnx2ggml {

// bfloat16 has no numpy type: it travels as uint16 bit patterns (`want` reinterprets '<u2').
Tensor read_npy(const std::string& path, DType want = DType::UNDEFINED);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace onnx2ggml
