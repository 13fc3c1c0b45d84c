// Op library: com.microsoft MatMulNBits (see include/onnx2ggml/ops/matmul.h). No ggml quantized type stores
// these blocks as they are (Q4_0 keeps an F16 scale, a fixed zero point of 8 and another nibble order), so the
// weight is dequantized once to the product's storage type.
#include <string>
#include <vector>

#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

// Value j of packed bytes p, `bits` wide (4 or 8), low bits first.
int unpack(const uint8_t* p, int64_t j, int64_t bits) {
    const int64_t per = 8 / bits;
    return (p[j / per] >> ((j % per) * bits)) & ((1 << bits) - 1);
}

// W [N][K] = (q - zero point) * scale, from B's bytes [N][blocks][blob].
void dequantize(const uint8_t* b, const HostTensor& scales, const HostTensor& zp, const MatMulNBitsParams& p,
                float* w) {
    const int64_t blocks = (p.K + p.block_size - 1) / p.block_size, blob = p.block_size * p.bits / 8;
    const int64_t zrow = (blocks * p.bits + 7) / 8;  // packed zero point bytes per row
    const std::vector<float> s = scales.to_f32();
    const bool has_zp = zp.dtype != DType::UNDEFINED && zp.numel() > 0, packed_zp = has_zp && zp.dtype == DType::UINT8;
    const std::vector<float> zf = has_zp && !packed_zp ? zp.to_f32() : std::vector<float>();
    for (int64_t n = 0; n < p.N; n++)
        for (int64_t blk = 0; blk < blocks; blk++) {
            const int64_t i = n * blocks + blk;
            float z = float(1 << (p.bits - 1));
            if (packed_zp) z = float(unpack(zp.data + n * zrow, blk, p.bits));
            else if (!zf.empty()) z = zf[size_t(i)];
            const uint8_t* q = b + i * blob;
            for (int64_t j = 0; j < p.block_size && blk * p.block_size + j < p.K; j++)
                w[n * p.K + blk * p.block_size + j] = (float(unpack(q, j, p.bits)) - z) * s[size_t(i)];
        }
}

}  // namespace

ggml_tensor* matmul_nbits(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const HostTensor& b_data, const HostTensor& scales,
                          const HostTensor& zero_points, ggml_tensor* bias, const MatMulNBitsParams& p) {
    if (p.bits != 4 && p.bits != 8) throw OpError("matmul_nbits: bits " + std::to_string(p.bits));
    if (p.block_size < 16 || (p.block_size & (p.block_size - 1)))
        throw OpError("matmul_nbits: block_size " + std::to_string(p.block_size) + " is not a power of 2 from 16");
    const int64_t blocks = (p.K + p.block_size - 1) / p.block_size;
    if (b_data.numel() != p.N * blocks * (p.block_size * p.bits / 8) || b_data.dtype != DType::UINT8)
        throw OpError("matmul_nbits: B is not uint8 (N, blocks, block_size * bits / 8)");
    if (scales.numel() != p.N * blocks) throw OpError("matmul_nbits: scales do not hold N * blocks values");
    const int64_t zn = zero_points.dtype == DType::UNDEFINED ? 0 : zero_points.numel();  // empty: absent
    if (zn && zn != (zero_points.dtype == DType::UINT8 ? p.N * ((blocks * p.bits + 7) / 8) : p.N * blocks))
        throw OpError("matmul_nbits: zero_points do not hold a value for each block");
    if (a->ne[0] != p.K) throw OpError("matmul_nbits: A's last dim is not K = " + std::to_string(p.K));
    const int64_t ne[4] = {p.K, p.N, 1, 1};
    ggml_tensor* w;
    if (b->op == GGML_OP_CPY && b->src[0]) b = b->src[0];  // the builder's F32 copy of the uint8 weight
    if (ctx.weights && ctx.weights->is_weight(b)) {  // once per weight, as the store's other derived forms
        const ggml_type type = ctx.matmul_type != GGML_TYPE_F32 && p.K % 32 == 0 ? ctx.matmul_type : GGML_TYPE_F32;
        w = ctx.weights->derived(b, "nbits", type, ne, [&](const float* src, float* dst) {
            std::vector<uint8_t> bytes(size_t(b_data.numel()));
            for (size_t i = 0; i < bytes.size(); i++) bytes[i] = uint8_t(src[i]);
            dequantize(bytes.data(), scales, zero_points, p, dst);
        });
    } else {
        std::vector<float> f(size_t(p.K * p.N));
        dequantize(b_data.data, scales, zero_points, p, f.data());
        w = ctx.constant_f32(ne, f);
    }
    a = cont(ctx, a);
    if (a->type != GGML_TYPE_F32) a = ggml_cast(ctx, a, GGML_TYPE_F32);
    ggml_tensor* y = mul_mat(ctx, w, a);  // [N, ...]
    if (bias) y = ggml_add(ctx, y, bias->type == GGML_TYPE_F32 ? bias : ggml_cast(ctx, bias, GGML_TYPE_F32));
    return y;
}

}  // namespace o2g
