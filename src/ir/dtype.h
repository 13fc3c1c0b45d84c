// ONNX TensorProto data types and their properties.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "onnx2ggml/dtype.h"

namespace onnx2ggml {



const char* dtype_name(DType t);
// Bytes per element; 0 for types we cannot hold as plain arrays (string, sub-byte, complex).
size_t dtype_size(DType t);
bool dtype_is_float(DType t);    // float, float16, bfloat16, double
bool dtype_is_integer(DType t);  // signed or unsigned ints
bool dtype_supported(DType t);   // types the runtime can hold

}  // namespace onnx2ggml
