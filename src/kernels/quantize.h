// CPU kernels of the quantization ops (ggml custom ops over contiguous data; integers as I32, exact in double).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Quantize (I32 out) or dequantize (F32 out) x (src 0) with scale (src 1, F32) and zero point (src 2): element
// i = (outer, a, in) of [outer, A, inner] takes scale 0 (nscale 1), a (per axis) or its block's.
struct QuantKernelParams {
    bool dequant;
    int64_t A, inner, block, nscale;
    bool has_zp;
    double lo, hi;
};
void quant_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// DynamicQuantizeLinear: stats of src 0 -> dst F32 {scale, zero point}; apply: src 0 x, src 1 stats.
void dq_stats_kernel(ggml_tensor* dst, int ith, int nth, void* ud);
struct DqApplyParams { int part; };  // 0: y, 1: zero point
void dq_apply_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// Integer matmul of a [K, M, a2, a3] and b [N, K, b2, b3] (batch dims tile: o2 and o3 are multiples) -> [N, M, o2, o3]; srcs a, b,
// then the zero points present, then (qlinear) a scale, b scale, y scale, y zero point.
struct MatmulKernelParams {
    int64_t M, K, N, a2, a3, b2, b3, o2, o3;
    int azp, bzp;  // 0 none, 1 per tensor, 2 per row (a) / per column (b)
    bool qlinear;
    int asc, bsc;  // scale modes like zero points
    double lo, hi;
};
void matmul_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// Convolution x [N, C, in_sp...] * w [M, C/group, k...] -> [N, M, out_sp...] (row-major), accumulation in double;
// srcs x, w, then the zero points present.
struct ConvKernelParams {
    Ints in_sp, k, s, d, pb, out_sp;
    int64_t N, C, M, group;
    bool xzp, wzp_per, wzp;
    bool to_int;  // I32 out (ConvInteger), else F32
};
void conv_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// QLinearConv requantization of acc [N, M, inner] (src 0) with srcs x scale, w scale, y scale, y zero point, bias.
struct RequantKernelParams { int64_t M, inner; bool per_w, bias; double lo, hi; };
void requant_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

}  // namespace o2g
