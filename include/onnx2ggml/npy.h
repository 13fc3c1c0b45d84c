// Reading and writing .npy files (little-endian, C order) as onnx2ggml::Tensor.
#pragma once
#include <string>

#include "onnx2ggml/tensor.h"

namespace onnx2ggml {

// bfloat16 has no numpy type: it travels as uint16 bit patterns (`want` reinterprets '<u2'). The narrow types
// (float8*, float4e2m1, int4/uint4/int2/uint2) travel one element per byte, as ml_dtypes holds them: the float
// formats as uint8 bit patterns, the integers as int8/uint8 values (`want` reinterprets '|u1'/'|i1').
Tensor read_npy(const std::string& path, DType want = DType::UNDEFINED);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace onnx2ggml
