// Op library: the com.microsoft attentions (see include/onnx2ggml/ops/attention.h), all on fused_attention.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

std::string dims(const Ints& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// FusedHeads as fused_attention takes them: ggml [head size, heads, length, B].
struct FusedHeads {
    ggml_tensor *q, *k, *v;
};

// Part `part` of a packed [B, len, heads, parts, H] input (ggml ne [H, parts, heads, B * len] once folded) as
// [H, heads, len, B].
ggml_tensor* unpack(Ctx& ctx, ggml_tensor* x, int64_t B, int64_t part) {
    x = cont(ctx, x);
    const int64_t len = x->ne[3] / B;
    return ggml_view_4d(ctx, x, x->ne[0], x->ne[2], len, B, x->nb[2], x->nb[3], size_t(len) * x->nb[3],
                        size_t(part) * x->nb[1]);
}

// [D, len, B] as [D / heads, heads, len, B].
ggml_tensor* split(Ctx& ctx, ggml_tensor* x, int64_t heads) {
    if (heads <= 0 || x->ne[0] % heads)
        throw OpError("multi_head_attention: hidden size " + std::to_string(x->ne[0]) + " is not divisible by " +
                      std::to_string(heads) + " heads");
    return ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0] / heads, heads, x->ne[1], x->ne[2]);
}

// x [H, heads, len, B] + bias[off, off + H * heads).
ggml_tensor* add_qkv_bias(Ctx& ctx, ggml_tensor* x, ggml_tensor* bias, int64_t off) {
    if (!bias) return x;
    const int64_t n = x->ne[0] * x->ne[1];
    if (off + n > bias->ne[0]) throw OpError("multi_head_attention: bias of " + std::to_string(bias->ne[0]) +
                                             " values is too short for Q, K and V");
    ggml_tensor* b = ggml_view_2d(ctx, bias, x->ne[0], x->ne[1], size_t(x->ne[0]) * bias->nb[0],
                                  size_t(off) * bias->nb[0]);
    return ggml_add(ctx, f32_cont(ctx, x), cont(ctx, b));
}

// The key padding mask and the causal mask as one additive F32 mask [T, S or 1, 1, B] (null when neither).
ggml_tensor* padding_mask(Ctx& ctx, const Ints& m, int64_t S, int64_t T, int64_t B, const ContribMaskParams& p) {
    if (p.mask_rank == 0 && !p.causal) return nullptr;
    const bool rows = p.mask_rank == 3 || p.causal;
    const int64_t Sm = rows ? S : 1;
    std::vector<float> a(size_t(T * Sm * B), 0.0f);
    const float f = p.mask_filter_value;
    const auto at = [&](int64_t b, int64_t i, int64_t j) -> float& { return a[size_t((b * Sm + i) * T + j)]; };
    const int64_t n = int64_t(m.size());
    if (p.mask_rank == 1 && n != B && n != 2 * B)
        throw OpError("contrib attention: a 1-D key padding mask needs batch (or 2 * batch) values, not " +
                      std::to_string(n));
    if ((p.mask_rank == 2 && n != B * T) || (p.mask_rank == 3 && n != B * S * T))
        throw OpError("contrib attention: key padding mask of " + std::to_string(n) + " values for batch " +
                      std::to_string(B) + ", " + std::to_string(S) + " queries, " + std::to_string(T) + " keys");
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < Sm; i++)
            for (int64_t j = 0; j < T; j++) {
                bool masked = false;
                if (p.mask_rank == 1) masked = j >= m[size_t(b)] || (n == 2 * B && j < m[size_t(B + b)]);
                else if (p.mask_rank == 2) masked = m[size_t(b * T + j)] == 0;
                else if (p.mask_rank == 3) masked = m[size_t((b * S + i) * T + j)] == 0;
                if (masked) at(b, i, j) += f;
                if (p.causal && j > i) at(b, i, j) += f;
            }
    const int64_t ne[4] = {T, Sm, 1, B};
    return ctx.constant_f32(ne, a);
}

// softmax(scale Q K^T + masks) V over h, as [heads * Dv, S, B].
ggml_tensor* run_heads(Ctx& ctx, const FusedHeads& h, ggml_tensor* attention_bias, const Ints& mask,
                       const ContribMaskParams& p) {
    const int64_t S = h.q->ne[2], T = h.k->ne[2], N = h.q->ne[1], B = h.q->ne[3];
    if (h.q->ne[0] != h.k->ne[0] || h.k->ne[1] != N || h.v->ne[1] != N || h.k->ne[3] != B || h.v->ne[3] != B ||
        h.v->ne[2] != T)
        throw OpError("multi_head_attention: Q [" + std::to_string(B) + ", " + std::to_string(S) + ", " +
                      std::to_string(N) + ", " + std::to_string(h.q->ne[0]) + "] does not match K and V");
    ggml_tensor* m = padding_mask(ctx, mask, S, T, B, p);
    if (attention_bias) {
        ggml_tensor* ab = f32_cont(ctx, attention_bias);  // [T, S, N or 1, B or 1]
        if (ab->ne[0] != T || ab->ne[1] != S || (ab->ne[2] != N && ab->ne[2] != 1) || (ab->ne[3] != B && ab->ne[3] != 1))
            throw OpError("multi_head_attention: attention_bias does not have shape (batch or 1, heads or 1, " +
                          std::to_string(S) + ", " + std::to_string(T) + ")");
        if (m) {
            const int64_t ne[4] = {T, S, ab->ne[2], B};
            m = ggml_add(ctx, repeat_to(ctx, ab, ne), m);
        } else {
            m = ab;
        }
    }
    FusedAttentionParams fp;
    fp.scale = p.scale != 0.0f ? p.scale : float(1.0 / std::sqrt(double(h.q->ne[0])));
    ggml_tensor* y = fused_attention(ctx, f32_cont(ctx, h.q), f32_cont(ctx, h.k), f32_cont(ctx, h.v), nullptr, nullptr, m, fp);
    y = ggml_cont(ctx, ggml_permute(ctx, y, 0, 2, 1, 3));  // [Dv, Tq, N, B] -> [Dv, N, Tq, B]
    return ggml_reshape_3d(ctx, y, y->ne[0] * y->ne[1], y->ne[2], y->ne[3]);
}

}  // namespace

ggml_tensor* multi_head_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* bias,
                                  ggml_tensor* attention_bias, const Ints& q_shape, const Ints& k_shape,
                                  const Ints& key_padding_mask, const ContribMaskParams& p) {
    const int64_t N = p.heads;
    if (N <= 0) throw OpError("multi_head_attention: heads must be positive");
    FusedHeads h{};
    bool kv_bias = true;
    if (q_shape.size() == 5) {  // packed QKV [B, S, N, 3, H]
        if (k || v) throw OpError("multi_head_attention: packed QKV takes no key or value");
        if (q_shape[2] != N || q_shape[3] != 3) throw OpError("multi_head_attention: packed QKV " + dims(q_shape) +
                                                              " is not (batch, length, heads, 3, head size)");
        h = {unpack(ctx, q, q_shape[0], 0), unpack(ctx, q, q_shape[0], 1), unpack(ctx, q, q_shape[0], 2)};
    } else if (q_shape.size() == 3 && k) {
        h.q = split(ctx, q, N);
        const int64_t B = q_shape[0];
        if (k_shape.size() == 5) {  // packed KV [B, T, N, 2, H]
            if (v) throw OpError("multi_head_attention: packed KV takes no value");
            if (k_shape[0] != B || k_shape[2] != N || k_shape[3] != 2)
                throw OpError("multi_head_attention: packed KV " + dims(k_shape) +
                              " is not (batch, length, heads, 2, head size)");
            h.k = unpack(ctx, k, B, 0);
            h.v = unpack(ctx, k, B, 1);
        } else if (k_shape.size() == 4 && v) {  // BNSH [B, N, T, H]: projected already, no bias
            h.k = ggml_permute(ctx, k, 0, 2, 1, 3);
            h.v = ggml_permute(ctx, v, 0, 2, 1, 3);
            kv_bias = false;
        } else if (k_shape.size() == 3 && v) {
            h.k = split(ctx, k, N);
            h.v = split(ctx, v, N);
        } else {
            throw OpError("multi_head_attention: key " + dims(k_shape) + " is not [B, T, D], [B, T, N, 2, H] or "
                          "[B, N, T, H] with a value to match");
        }
    } else {
        throw OpError("multi_head_attention: query " + dims(q_shape) +
                      " must be [B, S, D] with a key, or packed QKV [B, S, N, 3, H]");
    }
    if (bias) {
        bias = f32_cont(ctx, bias);
        const int64_t dq = h.q->ne[0] * N, dk = h.k->ne[0] * N, dv = h.v->ne[0] * N;
        if (bias->ne[0] != dq + dk + dv)
            throw OpError("multi_head_attention: bias has " + std::to_string(bias->ne[0]) + " values, not " +
                          std::to_string(dq + dk + dv));
        h.q = add_qkv_bias(ctx, h.q, bias, 0);
        if (kv_bias) {
            h.k = add_qkv_bias(ctx, h.k, bias, dq);
            h.v = add_qkv_bias(ctx, h.v, bias, dq + dk);
        }
    }
    return run_heads(ctx, h, attention_bias, key_padding_mask, p);
}

ggml_tensor* contrib_attention(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias,
                               ggml_tensor* attention_bias, const Ints& sizes, const Ints& mask_index,
                               const ContribMaskParams& p) {
    const int64_t total = w->ne[0];  // w [Din, Dq + Dk + Dv] is ggml [Dq + Dk + Dv, Din]
    Ints sz = sizes;
    if (sz.empty()) {
        if (total % 3) throw OpError("contrib_attention: weights of width " + std::to_string(total) +
                                     " do not split in three equal parts");
        sz = {total / 3, total / 3, total / 3};
    }
    if (sz.size() != 3 || sz[0] != sz[1] || sz[0] + sz[1] + sz[2] != total)
        throw OpError("contrib_attention: qkv_hidden_sizes " + dims(sz) + " do not split weights of width " +
                      std::to_string(total) + " as (hidden, hidden, v_hidden)");
    if (bias && bias->ne[0] != total)
        throw OpError("contrib_attention: bias has " + std::to_string(bias->ne[0]) + " values, not " +
                      std::to_string(total));
    if (bias) bias = f32_cont(ctx, bias);
    MatMulParams mp;
    ggml_tensor* qkv = bias ? matmul_bias(ctx, x, w, bias, nullptr, mp) : matmul(ctx, x, w, mp);  // [total, S, B]
    qkv = cont(ctx, qkv);
    const auto part = [&](int64_t off, int64_t n) {
        return split(ctx, ggml_view_3d(ctx, qkv, n, qkv->ne[1], qkv->ne[2], qkv->nb[1], qkv->nb[2],
                                       size_t(off) * qkv->nb[0]), p.heads);
    };
    const FusedHeads h{part(0, sz[0]), part(sz[0], sz[1]), part(sz[0] + sz[1], sz[2])};
    return run_heads(ctx, h, attention_bias, mask_index, p);
}

ggml_tensor* contrib_rotary_embedding(Ctx& ctx, ggml_tensor* x, ggml_tensor* position_ids, ggml_tensor* cos_cache,
                                      ggml_tensor* sin_cache, const RotaryEmbeddingParams& p) {
    const int64_t S = x->ne[1], B = p.heads > 0 ? x->ne[2] : x->ne[3];  // [D, S, B] or [H, S, N, B]
    if (ggml_nelements(position_ids) == 1 && B * S != 1) {  // an offset: positions offset + s in every batch
        ggml_tensor* off = ggml_cast(ctx, cont(ctx, position_ids), GGML_TYPE_F32);
        ggml_tensor* pos = ggml_add(ctx, ggml_arange(ctx, 0.0f, float(S), 1.0f), ggml_reshape_1d(ctx, off, 1));
        position_ids = ggml_repeat(ctx, ggml_reshape_2d(ctx, pos, S, 1), ggml_new_tensor_2d(ctx, GGML_TYPE_F32, S, B));
    } else if (ggml_nelements(position_ids) != B * S) {
        throw OpError("contrib_rotary_embedding: position_ids must be (batch, sequence) or (1)");
    }
    if (ggml_n_dims(cos_cache) > 2) throw OpError("contrib_rotary_embedding: the caches must be 2-D");
    return rotary_embedding(ctx, x, cos_cache, sin_cache, position_ids, p);
}

namespace {

// T5's bucket of relative position rel (key - query), in float as onnxruntime's kernel computes it.
int64_t t5_bucket(int64_t rel, int64_t buckets, const RelativePositionBiasParams& p) {
    int64_t base = 0;
    if (p.bidirectional) {
        buckets /= 2;
        if (rel > 0) base = buckets;
        rel = rel < 0 ? -rel : rel;
    } else {
        rel = rel > 0 ? 0 : -rel;
    }
    const int64_t exact = buckets / 2;
    if (rel < exact) return base + rel;
    float scaled = std::log(float(rel) / float(exact)) / std::log(float(p.max_distance) / float(exact)) *
                   float(buckets - exact);
    if (!(scaled > 0)) scaled = 0;  // NaN or negative: a max_distance not above the exact buckets (a malformed file)
    scaled = std::min(scaled, float(buckets));
    return base + std::min<int64_t>(exact + int64_t(scaled), buckets - 1);
}

}  // namespace

ggml_tensor* relative_position_bias(Ctx& ctx, ggml_tensor* bias_table, const Ints& query_length,
                                    const Ints& key_length, const RelativePositionBiasParams& p) {
    if (query_length.size() != 1 || key_length.size() != 1 || query_length[0] < 0 || key_length[0] < 0)
        throw OpError("relative_position_bias: query_length and key_length must be one value each, at least 0");
    const int64_t S = query_length[0], T = key_length[0], N = bias_table->ne[0], nb = bias_table->ne[1];
    if (nb < (p.bidirectional ? 4 : 2) || p.max_distance <= 0)
        throw OpError("relative_position_bias: " + std::to_string(nb) + " buckets, max_distance " +
                      std::to_string(p.max_distance));
    Ints idx(size_t(S * T));
    for (int64_t i = 0; i < S; i++)
        for (int64_t j = 0; j < T; j++) idx[size_t(i * T + j)] = t5_bucket(j - i, nb, p);
    // The data is [heads][buckets]: rows of buckets for get_rows once transposed.
    ggml_tensor* table = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, f32_cont(ctx, bias_table), nb, N)));
    ggml_tensor* rows = ggml_get_rows(ctx, table, ctx.ints_tensor(idx, GGML_TYPE_I32));  // [N, S * T]
    ggml_tensor* y = ggml_reshape_3d(ctx, rows, N, T, S);
    return ggml_cont(ctx, ggml_permute(ctx, y, 2, 0, 1, 3));  // [T, S, N, 1]
}

}  // namespace o2g
