// com.microsoft attention ops (contrib opset 1): MultiHeadAttention and Attention (on the fused attention),
// RotaryEmbedding, RelativePositionBias, and MatMulNBits (a weight-only quantized product).
#include <cmath>

#include "ops/op.h"

namespace onnx2ggml {

namespace {

// Attributes shared by both ops; the mask's rank is checked by the caller.
o2g::ContribMaskParams mask_params(Lower& L, int mask_input) {
    o2g::ContribMaskParams p;
    p.heads = L.node.get_int("num_heads", 0);
    if (p.heads <= 0) L.error("num_heads must be given and positive");
    p.scale = L.node.get_float("scale", 0.0f);  // 0 (or absent): 1 / sqrt(head size), as onnxruntime reads it
    p.causal = L.node.get_int("unidirectional", 0) != 0;
    p.mask_filter_value = L.node.get_float("mask_filter_value", -10000.0f);
    if (L.has(mask_input)) {
        if (L.dtype(mask_input) != DType::INT32) L.error("the mask must be int32");
        p.mask_rank = L.rank(mask_input);
    }
    return p;
}

// attention_bias: [B or 1, N or 1, S, T].
void check_attention_bias(Lower& L, int i, int64_t B, int64_t N, int64_t S, int64_t T) {
    if (!L.has(i)) return;
    const Shape& s = L.shape(i);
    if (s.size() != 4 || (s[0] != B && s[0] != 1) || (s[1] != N && s[1] != 1) || s[2] != S || s[3] != T)
        L.error("attention_bias " + shape_str(s) + " is not (batch or 1, num_heads or 1, " + std::to_string(S) +
                ", " + std::to_string(T) + ")");
}

void check_mask(Lower& L, int i, int64_t B, int64_t S, int64_t T, bool ends_starts) {
    if (!L.has(i)) return;
    const Shape& s = L.shape(i);
    const bool ok = (s.size() == 1 && (s[0] == B || (ends_starts && s[0] == 2 * B))) ||
                    (s.size() == 2 && s == Shape{B, T}) || (s.size() == 3 && s == Shape{B, S, T});
    if (!ok)
        L.error("mask " + shape_str(s) + " is not supported: (batch)" + (ends_starts ? ", (2 * batch)" : "") +
                ", (batch, " + std::to_string(T) + ") or (batch, " + std::to_string(S) + ", " + std::to_string(T) +
                ")");
}

}  // namespace

// MultiHeadAttention(query, key, value, bias, key_padding_mask, attention_bias) -> output. past_key/past_value,
// the present outputs, and the 3 * batch + 2 mask are refused.
void lower_MultiHeadAttention(Lower& L) {
    o2g::ContribMaskParams p = mask_params(L, 4);
    const int64_t N = p.heads;
    for (int i = 6; i < L.n_in(); i++)
        if (L.has(i)) L.error("past_key, past_value, past_sequence_length and cache_indirection are not supported");
    for (size_t o = 1; o < 4; o++)
        if (wanted_out(L, o)) L.error("the present_key, present_value and qk outputs are not supported");
    const Shape& qs = L.shape(0);
    int64_t B, S, T, D, Dk, Dv;
    if (qs.size() == 5) {
        if (L.has(1) || L.has(2)) L.error("packed QKV (5-D query) takes no key or value");
        if (qs[2] != N || qs[3] != 3) L.error("packed QKV " + shape_str(qs) + " is not (batch, length, num_heads, 3, "
                                              "head size)");
        B = qs[0], S = T = qs[1], D = Dk = Dv = N * qs[4];
    } else if (qs.size() == 3) {
        if (!L.has(1)) L.error("a 3-D query needs a key");
        if (qs[2] % N) L.error("query hidden size is not divisible by num_heads");
        const Shape& ks = L.shape(1);
        B = qs[0], S = qs[1], D = qs[2];
        if (ks.size() == 5) {
            if (L.has(2)) L.error("packed KV (5-D key) takes no value");
            if (ks[0] != B || ks[2] != N || ks[3] != 2 || ks[4] * N != D)
                L.error("packed KV " + shape_str(ks) + " is not (batch, length, num_heads, 2, head size)");
            T = ks[1], Dk = Dv = D;
        } else if (ks.size() == 4) {
            if (!L.has(2) || L.rank(2) != 4) L.error("a 4-D (BNSH) key needs a 4-D value");
            const Shape& vs = L.shape(2);
            if (ks[0] != B || ks[1] != N || ks[3] * N != D || vs[0] != B || vs[1] != N || vs[2] != ks[2])
                L.error("key " + shape_str(ks) + " and value " + shape_str(vs) + " are not (batch, num_heads, "
                        "length, head size)");
            T = ks[2], Dk = D, Dv = vs[3] * N;
        } else if (ks.size() == 3) {
            if (!L.has(2) || L.rank(2) != 3) L.error("a 3-D key needs a 3-D value");
            const Shape& vs = L.shape(2);
            if (ks[0] != B || vs[0] != B || ks[1] != vs[1] || ks[2] != D || vs[2] % N)
                L.error("key " + shape_str(ks) + " and value " + shape_str(vs) + " do not match the query");
            T = ks[1], Dk = D, Dv = vs[2];
        } else {
            L.error("key of rank " + std::to_string(ks.size()) + " (3, 4 or 5 expected)");
        }
    } else {
        L.error("query of rank " + std::to_string(qs.size()) + " (3, or 5 for packed QKV)");
    }
    if (L.has(3) && L.shape(3) != Shape{D + Dk + Dv}) L.error("bias must have shape (" + std::to_string(D + Dk + Dv) + ")");
    check_mask(L, 4, B, S, T, false);
    check_attention_bias(L, 5, B, N, S, T);
    if (p.causal && S != T) L.error("unidirectional needs self-attention (query and key of one length)");
    const Sym mask = L.has(4) ? L.sym(4) : Sym{};
    ggml_tensor* k = L.has(1) ? L.t(1) : nullptr;
    ggml_tensor* v = L.has(2) ? L.t(2) : nullptr;
    ggml_tensor* bias = L.has(3) ? L.t(3) : nullptr;
    ggml_tensor* ab = L.has(5) ? L.t(5) : nullptr;
    const Sym ks = L.has(1) ? L.shape_sym(1) : Sym{};
    L.out(0, O2G_CALL(L, o2g::multi_head_attention, L.t(0), k, v, bias, ab, L.shape_sym(0), ks, mask, p), L.dtype(0),
          3);
}

// Attention(input, weights, bias, mask_index, past, attention_bias, past_sequence_length) -> output. past and
// present, rotary and the 4-D and 3 * batch + 2 masks are refused.
void lower_ContribAttention(Lower& L) {
    o2g::ContribMaskParams p = mask_params(L, 3);
    if (L.has(4) || L.has(6) || wanted_out(L, 1)) L.error("past and present are not supported");
    if (L.node.get_int("do_rotary", 0)) L.error("do_rotary is not supported");
    if (L.node.get_int("past_present_share_buffer", 0)) L.error("past_present_share_buffer is not supported");
    if (L.rank(0) != 3 || L.rank(1) != 2) L.error("input must be 3-D and weights 2-D");
    const Shape &xs = L.shape(0), &ws = L.shape(1);
    if (ws[0] != xs[2]) L.error("weights " + shape_str(ws) + " do not take an input of width " + std::to_string(xs[2]));
    o2g::Ints sizes = L.node.get_ints("qkv_hidden_sizes");
    if (sizes.empty()) {
        if (ws[1] % 3) L.error("weights width is not 3 * hidden size; qkv_hidden_sizes is needed");
        sizes = {ws[1] / 3, ws[1] / 3, ws[1] / 3};
    }
    if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] + sizes[1] + sizes[2] != ws[1])
        L.error("qkv_hidden_sizes must be (hidden, hidden, v_hidden) summing to the weights width");
    if (sizes[0] % p.heads || sizes[2] % p.heads) L.error("hidden sizes are not divisible by num_heads");
    if (L.has(2) && L.shape(2) != Shape{ws[1]}) L.error("bias must have shape (" + std::to_string(ws[1]) + ")");
    const int64_t B = xs[0], S = xs[1];
    check_mask(L, 3, B, S, S, true);
    check_attention_bias(L, 5, B, p.heads, S, S);
    const Sym mask = L.has(3) ? L.sym(3) : Sym{};
    ggml_tensor* bias = L.has(2) ? L.t(2) : nullptr;
    ggml_tensor* ab = L.has(5) ? L.t(5) : nullptr;
    L.out(0, O2G_CALL(L, o2g::contrib_attention, L.t(0), L.t(1), bias, ab, sizes, mask, p), L.dtype(0), 3);
}

// RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input [B, S, D] (num_heads 0: heads of
// 2 * cache width) or [B, N, S, H]; position_ids [B, S] or one offset [1].
void lower_ContribRotaryEmbedding(Lower& L) {
    if (L.node.get_int("is_packed_batching", 0)) L.error("is_packed_batching is not supported");
    if (L.node.get_float("scale", 1.0f) != 1.0f) L.error("scale other than 1 is not supported");
    const Shape &xs = L.shape(0), &cs = L.shape(2), &ps = L.shape(1);
    if (cs.size() != 2 || L.shape(3) != cs) L.error("cos_cache and sin_cache must both be (max position, rotary dim / 2)");
    o2g::RotaryEmbeddingParams p;
    p.interleaved = L.node.get_int("interleaved", 0) != 0;
    p.rotary_dim = L.node.get_int("rotary_embedding_dim", 0);
    int64_t B, S, H;
    if (xs.size() == 4) {
        B = xs[0], S = xs[2], H = xs[3];
    } else if (xs.size() == 3) {
        p.heads = L.node.get_int("num_heads", 0);
        if (p.heads <= 0 && p.rotary_dim > 0) L.error("rotary_embedding_dim needs num_heads");
        H = p.heads > 0 ? xs[2] / p.heads : 2 * cs[1];
        if (H <= 0 || xs[2] % H) L.error("hidden size " + std::to_string(xs[2]) + " is not a multiple of the head size");
        if (p.heads <= 0) p.heads = xs[2] / H;
        B = xs[0], S = xs[1];
    } else {
        L.error("input must be 3-D or 4-D");
    }
    const int64_t rd = p.rotary_dim > 0 ? p.rotary_dim : H;
    if (rd > H || rd % 2 || cs[1] != rd / 2) L.error("caches of width " + std::to_string(cs[1]) + " for rotary dim " +
                                                     std::to_string(rd) + " of head size " + std::to_string(H));
    if (ps != Shape{B, S} && ps != Shape{1}) L.error("position_ids must be (batch, sequence) or (1)");
    if (const HostTensor* ph = L.in(1).host.get())  // a check only; the kernel writes NaN for bad ids
        for (int64_t i = 0; i < ph->numel(); i++)
            if (ph->i64(i) < 0 || ph->i64(i) + (ps.size() == 1 ? S - 1 : 0) >= cs[0])
                L.error("position id out of range of the caches");
    L.out(0, O2G_CALL(L, o2g::contrib_rotary_embedding, L.t(0), L.t(1), L.t(2), L.t(3), p), L.dtype(0),
          int(xs.size()));
}

// RelativePositionBias(bias_table, query_length, key_length) -> [1, num_heads, query_length, key_length].
void lower_RelativePositionBias(Lower& L) {
    if (L.rank(0) != 2) L.error("bias_table must be 2-D (num_buckets, num_heads)");
    o2g::RelativePositionBiasParams p;
    if (!L.node.has("max_distance")) L.error("max_distance is required");
    p.max_distance = L.node.get_int("max_distance", 0);
    p.bidirectional = L.node.get_int("is_bidirectional", 0) != 0;
    const Sym q = L.sym(1), k = L.sym(2);
    if (q.v.size() != 1 || k.v.size() != 1) L.error("query_length and key_length must hold one value each");
    L.out(0, O2G_CALL(L, o2g::relative_position_bias, L.t(0), q, k, p), L.dtype(0), 4);
}

// MatMulNBits(A, B, scales, zero_points, g_idx, bias): A times the block-quantized constant weight, dequantized once.
void lower_MatMulNBits(Lower& L) {
    o2g::MatMulNBitsParams p;
    p.K = L.node.get_int("K", 0), p.N = L.node.get_int("N", 0);
    p.bits = L.node.get_int("bits", 4), p.block_size = L.node.get_int("block_size", 0);
    if (p.K <= 0 || p.N <= 0) L.error("attributes K and N must be given and positive");
    if (p.bits != 4 && p.bits != 8) L.error("bits " + std::to_string(p.bits) + " (4 and 8 are supported)");
    if (p.block_size < 16 || (p.block_size & (p.block_size - 1))) L.error("block_size must be a power of 2, at least 16");
    if (L.has(4)) L.error("g_idx is not supported");
    const Shape& as = L.shape(0);
    if (as.empty() || as.size() > 4 || as.back() != p.K) L.error("A " + shape_str(as) + " must end in K = " +
                                                                  std::to_string(p.K) + " (rank 1 to 4)");
    const int64_t blocks = (p.K + p.block_size - 1) / p.block_size;
    if (L.dtype(1) != DType::UINT8 || L.shape(1) != Shape{p.N, blocks, p.block_size * p.bits / 8})
        L.error("B must be uint8 (N, blocks, block_size * bits / 8)");
    if (L.in(2).host == nullptr || (L.shape(2) != Shape{p.N * blocks} && L.shape(2) != Shape{p.N, blocks}))
        L.error("scales must be constant, (N * blocks) or (N, blocks)");
    static const HostTensor none = HostTensor::from_f64(DType::FLOAT, {0}, {});  // no zero points
    if (L.has(3) && L.in(3).host == nullptr) L.error("zero_points must be constant");
    if (L.has(5) && L.shape(5) != Shape{p.N}) L.error("bias must have shape (N)");
    Shape ys = as;
    ys.back() = p.N;
    ggml_tensor* bias = L.has(5) ? L.t(5) : nullptr;
    const HostArg zp = L.has(3) ? L.hv(3) : HostArg{&none, nullptr};
    L.out(0, O2G_CALL(L, o2g::matmul_nbits, L.t(0), L.t(1), L.hv(1), L.hv(2), zp, bias, p), L.dtype(0),
          int(ys.size()));
}

// ---- the table: one row per op this file lowers ----
const std::vector<OpDef>& contrib_attention_ops() {
    static const std::vector<OpDef> t = {
        {.op = "MultiHeadAttention", .domain = "com.microsoft", .ggml = lower_MultiHeadAttention, .host_inputs = {4},
         .math = true},
        {.op = "Attention", .domain = "com.microsoft", .ggml = lower_ContribAttention, .host_inputs = {3},
         .math = true},
        {.op = "RotaryEmbedding", .domain = "com.microsoft", .ggml = lower_ContribRotaryEmbedding, .math = true},
        {.op = "RelativePositionBias", .domain = "com.microsoft", .ggml = lower_RelativePositionBias,
         .host_inputs = {1, 2}},
        {.op = "MatMulNBits", .domain = "com.microsoft", .ggml = lower_MatMulNBits, .host_inputs = {1, 2, 3},
         .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
