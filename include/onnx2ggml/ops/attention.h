// Op library, Attention: fused attention (fuse_attention), Attention-23, LinearAttention, RotaryEmbedding, and the
// com.microsoft attentions (MultiHeadAttention, Attention).
// Included by onnx2ggml/ops.h; see its conventions. Functions marked "CPU kernel" run as ggml custom ops, so only
// on the CPU backend.
#pragma once

namespace o2g {

struct FusedAttentionParams {
    float scale = 1.0f;     // applied to the scores before the softmax
    bool one_head = false;  // Q, K, V are [B, T, D] (ggml [D, T, B]): one head each; the result is [B, Tq, Dv]
    bool zero_masked_rows = false;  // a query whose every key the mask holds at -inf (or below -1e30) gives 0
    void fields(FieldWriter& f) const {
        f("scale", scale);
        f("one_head", one_head);
        f("zero_masked_rows", zero_masked_rows);
    }
};
// softmax(scale * Q K^T + mask) V per head: Q [B, Tq, H, D], K [B, Tk, H, D], V [B, Tk, H, Dv] (ggml [D, H, T, B])
// -> [B, H, Tq, Dv]. q_scale and k_scale (may be null) are tensors multiplied into Q and K first; mask (may be
// null) broadcasts to the scores [B, H, Tq, Tk]. On the CPU one kernel (scores, softmax and P V per block of
// queries, no score matrix in memory); elsewhere, or with ONNX2GGML_GGML_ATTENTION set, ggml_mul_mat and
// ggml_soft_max_ext.
ggml_tensor* fused_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* q_scale,
                             ggml_tensor* k_scale, ggml_tensor* mask, const FusedAttentionParams& p);
// The same with Q's and K's scales known when the graph is built (one value each, say sqrt(1 / sqrt(D)) from Q's
// shape): they fold into the softmax's scale, and no pass over Q or K multiplies them in.
ggml_tensor* fused_attention_scaled(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                                    const HostTensor& q_scale, const HostTensor& k_scale, ggml_tensor* mask,
                                    FusedAttentionParams p);

struct AttentionParams {
    int64_t q_heads = 0;   // 3-D inputs [B, S, heads * head size]: the head counts; 0 for 4-D [B, heads, S, size]
    int64_t kv_heads = 0;
    float scale = 0.0f;    // 0: 1 / sqrt(head size)
    float softcap = 0.0f;  // > 0: softcap * tanh(scores / softcap)
    bool causal = false;
    bool bool_mask = false;  // attn_mask is boolean (1 attends, 0 does not) rather than added to the scores
    int qk_output = 0;       // attention_scores: 0 and 1 the scaled (and softcapped) scores, 2 after the masks,
                             // 3 after the softmax
    void fields(FieldWriter& f) const {
        f("q_heads", q_heads);
        f("kv_heads", kv_heads);
        f("scale", scale);
        f("softcap", softcap);
        f("causal", causal);
        f("bool_mask", bool_mask);
        f("qk_output", qk_output);
    }
};
// ONNX Attention-23: softmax(scale * Q K^T + masks) V with grouped KV heads. mask, past_key, past_value may be
// null; nonpad_kv_seqlen (per batch, empty: none) masks keys at and past each length.
ggml_tensor* attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* mask,
                       ggml_tensor* past_key, ggml_tensor* past_value, const Ints& nonpad_kv_seqlen,
                       const AttentionParams& p);
// Attention over heads given in the fused kernel's layout [B, T, H, D] (as fuse_attention hands Attention-23's to
// it) whose Q and K/V head counts differ (grouped-query): o2g::attention on their [B, H, T, D] views.
ggml_tensor* attention_grouped(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, const AttentionParams& p);
// Attention-23's present_key / present_value: past (may be null) followed by the new keys or values, as
// [B, kv heads, total length, head size].
ggml_tensor* attention_present(Ctx& ctx, ggml_tensor* past, ggml_tensor* cur, const AttentionParams& p);
// Attention-23's qk_matmul_output: the scores [B, q heads, S, total length] at the stage p.qk_output names.
ggml_tensor* attention_scores(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* mask, ggml_tensor* past_key,
                              const Ints& nonpad_kv_seqlen, const AttentionParams& p);

struct LinearAttentionParams {
    int64_t q_heads = 1;
    int64_t kv_heads = 1;
    float scale = 0.0f;  // 0: 1 / sqrt(head size)
    int rule = 3;        // update_rule: 0 linear, 1 gated, 2 delta, 3 gated_delta
    void fields(FieldWriter& f) const {
        f("q_heads", q_heads);
        f("kv_heads", kv_heads);
        f("scale", scale);
        f("rule", rule);
    }
};
// LinearAttention-27 over Q, K, V [B, T, heads * size]: the recurrent state update per (batch, kv head) and its
// read-out per query head (CPU kernel). past_state, decay (gated rules) and beta (delta rules) may be null.
ggml_tensor* linear_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* past_state,
                              ggml_tensor* decay, ggml_tensor* beta, const LinearAttentionParams& p);
// The final state [B, kv heads, Dk, Dv] of the linear_attention call (with the same params) that returned y.
ggml_tensor* linear_attention_state(Ctx& ctx, ggml_tensor* y, const LinearAttentionParams& p);

struct RotaryEmbeddingParams {
    int64_t heads = 0;       // 3-D input [B, S, heads * size]: the head count; 0 for 4-D [B, heads, S, size]
    int64_t rotary_dim = 0;  // 0: the whole head
    bool interleaved = false;
    void fields(FieldWriter& f) const {
        f("heads", heads);
        f("rotary_dim", rotary_dim);
        f("interleaved", interleaved);
    }
};
// Rotates pairs of the first rotary_dim values of each head by the cached cos/sin (rows picked by position_ids,
// which may be null: then the caches are [B, S, rotary_dim / 2]). CPU kernel.
ggml_tensor* rotary_embedding(Ctx& ctx, ggml_tensor* x, ggml_tensor* cos_cache, ggml_tensor* sin_cache,
                              ggml_tensor* position_ids, const RotaryEmbeddingParams& p);

// ---- com.microsoft contrib attentions (src/lib/contrib_attention.cpp) ----

struct ContribMaskParams {
    int64_t heads = 0;
    float scale = 0.0f;  // 0: 1 / sqrt(head size)
    bool causal = false;  // unidirectional: query i sees keys up to i (self-attention)
    float mask_filter_value = -10000.0f;  // added to the scores of masked keys
    // The key padding mask's rank: 0 none; 1 valid lengths [B] (or, for Attention, ends then starts [2B]);
    // 2 [B, T] and 3 [B, S, T] with 1 attending, 0 masked.
    int mask_rank = 0;
    void fields(FieldWriter& f) const {
        f("heads", heads);
        f("scale", scale);
        f("causal", causal);
        f("mask_filter_value", mask_filter_value);
        f("mask_rank", mask_rank);
    }
};
// com.microsoft MultiHeadAttention on the fused attention: softmax(scale Q K^T + masks + attention_bias) V ->
// [B, S, heads * Dv]. The forms follow the ONNX shapes q_shape and k_shape: Q [B, S, D] with K, V [B, T, D]
// (separate), K [B, T, heads, 2, H] and no V (packed KV), or K, V [B, heads, T, H] (BNSH, no bias added); or
// Q [B, S, heads, 3, H] with no K, V (packed QKV). bias [Dq + Dk + Dv], attention_bias [B or 1, heads or 1, S, T]
// and the key padding mask (host integers, p.mask_rank) may be absent.
ggml_tensor* multi_head_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* bias,
                                  ggml_tensor* attention_bias, const Ints& q_shape, const Ints& k_shape,
                                  const Ints& key_padding_mask, const ContribMaskParams& p);
// com.microsoft Attention: x [B, S, Din] projected by w [Din, Dq + Dk + Dv] (+ bias, may be null), split in
// sizes (empty: three equal parts), then as multi_head_attention's separate form.
ggml_tensor* contrib_attention(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias,
                               ggml_tensor* attention_bias, const Ints& sizes, const Ints& mask_index,
                               const ContribMaskParams& p);

// com.microsoft RotaryEmbedding: rotary_embedding with position_ids first, [B, S] or one offset [1] (positions
// offset .. offset + S - 1 in every batch), and 2-D caches [max position, rotary_dim / 2].
ggml_tensor* contrib_rotary_embedding(Ctx& ctx, ggml_tensor* x, ggml_tensor* position_ids, ggml_tensor* cos_cache,
                                      ggml_tensor* sin_cache, const RotaryEmbeddingParams& p);

struct RelativePositionBiasParams {
    int64_t max_distance = 0;
    bool bidirectional = false;
    void fields(FieldWriter& f) const {
        f("max_distance", max_distance);
        f("bidirectional", bidirectional);
    }
};
// com.microsoft RelativePositionBias (T5): [1, heads, query_length, key_length] from bias_table, whose data is
// [heads][buckets] though its shape reads (buckets, heads), indexed by T5's bucket of each key - query distance.
ggml_tensor* relative_position_bias(Ctx& ctx, ggml_tensor* bias_table, const Ints& query_length,
                                    const Ints& key_length, const RelativePositionBiasParams& p);

}  // namespace o2g
