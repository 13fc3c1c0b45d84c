// ONNX TensorProto element types (values match onnx.proto).
#pragma once
#include <cstddef>
#include <cstdint>

namespace onnx2ggml {

enum class DType : int32_t {
    UNDEFINED = 0, FLOAT = 1, UINT8 = 2, INT8 = 3, UINT16 = 4, INT16 = 5, INT32 = 6, INT64 = 7,
    STRING = 8, BOOL = 9, FLOAT16 = 10, DOUBLE = 11, UINT32 = 12, UINT64 = 13, COMPLEX64 = 14,
    COMPLEX128 = 15, BFLOAT16 = 16, FLOAT8E4M3FN = 17, FLOAT8E4M3FNUZ = 18, FLOAT8E5M2 = 19,
    FLOAT8E5M2FNUZ = 20, UINT4 = 21, INT4 = 22, FLOAT4E2M1 = 23, FLOAT8E8M0 = 24, UINT2 = 25, INT2 = 26,
};

const char* dtype_name(DType t);
// Bytes per element; 0 for types we cannot hold as plain arrays (string, sub-byte, complex).
size_t dtype_size(DType t);
bool dtype_is_float(DType t);    // float, float16, bfloat16, double
bool dtype_is_integer(DType t);  // signed or unsigned ints
bool dtype_supported(DType t);   // types the runtime can hold

}  // namespace onnx2ggml
