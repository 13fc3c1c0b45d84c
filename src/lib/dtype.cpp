#include "ir/dtype.h"

namespace onnx2ggml {

const char* dtype_name(DType t) {
    switch (t) {
        case DType::FLOAT: return "float";
        case DType::UINT8: return "uint8";
        case DType::INT8: return "int8";
        case DType::UINT16: return "uint16";
        case DType::INT16: return "int16";
        case DType::INT32: return "int32";
        case DType::INT64: return "int64";
        case DType::STRING: return "string";
        case DType::BOOL: return "bool";
        case DType::FLOAT16: return "float16";
        case DType::DOUBLE: return "double";
        case DType::UINT32: return "uint32";
        case DType::UINT64: return "uint64";
        case DType::COMPLEX64: return "complex64";
        case DType::COMPLEX128: return "complex128";
        case DType::BFLOAT16: return "bfloat16";
        case DType::FLOAT8E4M3FN: return "float8e4m3fn";
        case DType::FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
        case DType::FLOAT8E5M2: return "float8e5m2";
        case DType::FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
        case DType::UINT4: return "uint4";
        case DType::INT4: return "int4";
        case DType::FLOAT4E2M1: return "float4e2m1";
        case DType::FLOAT8E8M0: return "float8e8m0";
        case DType::UINT2: return "uint2";
        case DType::INT2: return "int2";
        default: return "undefined";
    }
}

size_t dtype_size(DType t) {
    switch (t) {
        case DType::BOOL: case DType::UINT8: case DType::INT8: return 1;
        case DType::UINT16: case DType::INT16: case DType::FLOAT16: case DType::BFLOAT16: return 2;
        case DType::FLOAT: case DType::INT32: case DType::UINT32: return 4;
        case DType::DOUBLE: case DType::INT64: case DType::UINT64: return 8;
        default: return dtype_is_narrow(t) ? 1 : 0;
    }
}

bool dtype_is_narrow(DType t) {
    switch (t) {
        case DType::FLOAT8E4M3FN: case DType::FLOAT8E4M3FNUZ: case DType::FLOAT8E5M2: case DType::FLOAT8E5M2FNUZ:
        case DType::FLOAT8E8M0: case DType::FLOAT4E2M1: case DType::UINT4: case DType::INT4: case DType::UINT2:
        case DType::INT2: return true;
        default: return false;
    }
}

int dtype_bits(DType t) {
    switch (t) {
        case DType::UINT4: case DType::INT4: case DType::FLOAT4E2M1: return 4;
        case DType::UINT2: case DType::INT2: return 2;
        default: return int(dtype_size(t)) * 8;
    }
}

bool dtype_is_float(DType t) {
    return t == DType::FLOAT || t == DType::FLOAT16 || t == DType::BFLOAT16 || t == DType::DOUBLE;
}

bool dtype_is_integer(DType t) {
    switch (t) {
        case DType::UINT8: case DType::INT8: case DType::UINT16: case DType::INT16: case DType::INT32:
        case DType::INT64: case DType::UINT32: case DType::UINT64: case DType::UINT4: case DType::INT4:
        case DType::UINT2: case DType::INT2: return true;
        default: return false;
    }
}

bool dtype_supported(DType t) { return dtype_size(t) != 0; }

}  // namespace onnx2ggml
