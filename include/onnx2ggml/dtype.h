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
// Bytes per element as the runtime holds it; 0 for types it cannot hold (string, complex). Narrow types take
// one byte per element, as ml_dtypes and the .npy files lay them out; the loader unpacks 4- and 2-bit data.
size_t dtype_size(DType t);
bool dtype_is_float(DType t);    // float, float16, bfloat16, double
bool dtype_is_integer(DType t);  // signed or unsigned ints, int4/uint4/int2/uint2 included
bool dtype_supported(DType t);   // types the runtime can hold
// The float8 formats, float4e2m1 and the 4- and 2-bit integers: held on the host one per byte and widened
// (to f32, or int32 for the integers) wherever they are read, as no device computes in them.
bool dtype_is_narrow(DType t);
int dtype_bits(DType t);  // bits of one element in an ONNX tensor's data: 4 or 2 for the packed integers/float4

// Narrow float formats (float8*, float4e2m1, float8e8m0) from and to their bit patterns, by ONNX's Cast rules:
// round to nearest even; `saturate` clamps out-of-range values (inf included) to the largest finite value,
// else they become inf or NaN where the format has them. float8e8m0 rounds by `e8m0_round` (E8M0_*).
enum E8M0Round { E8M0_UP = 0, E8M0_NEAREST = 1, E8M0_DOWN = 2 };
double narrow_float_decode(DType t, uint8_t bits);
uint8_t narrow_float_encode(DType t, float v, bool saturate, int e8m0_round = E8M0_UP);

}  // namespace onnx2ggml
