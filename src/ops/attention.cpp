// Attention ops: Attention (23), LinearAttention (27), RotaryEmbedding (23), and onnx2ggml.Attention
// (fuse_attention).
#include "ops/op.h"

namespace onnx2ggml {

namespace {

}  // namespace

// onnx2ggml.Attention(Q, K, V [B, T, H, D] or [B', T, D], sq, sk[, mask]) -> [B, H, Tq, Dv] or [B', Tq, Dv]:
// fuse_attention. Attribute scale (constant factors) and scales known when the graph is built fold into the
// softmax; others (one value each) are multiplied into Q or K. The mask is added to the scores.
// Attribute to_float: the pattern cast the probabilities to float (the kernel computes in F32 in any case).
// Attribute zero_masked_rows: torch's safe softmax (Where(IsNaN(p), 0, p)) followed it: masked-out rows give 0.
void lower_AttentionFused(Lower& L) {
    const int r = L.rank(0);
    auto heads = [&](int i) {  // rank 3: one head
        Shape s = L.shape(i);
        if (s.size() == 3) s = {s[0], s[1], 1, s[2]};
        return s;
    };
    const Shape qs = heads(0), ks = heads(1), vs = heads(2);
    if (L.node.get_int("grouped_ok", 0) && r == 4 && qs[2] != ks[2]) {  // Attention-23 with fewer K/V heads
        if (L.has(3) || L.has(4) || L.has(5)) L.error("fused attention: grouped heads with scales or a mask");
        o2g::AttentionParams p;
        p.scale = L.node.get_float("scale", 1.0f);
        if (L.node.get_int("default_scale", 0)) p.scale /= std::sqrt(float(qs[3]));
        L.out(0, O2G_CALL(L, o2g::attention_grouped, L.t(0), L.t(1), L.t(2), p), L.dtype(0), 4);
        return;
    }
    if ((r != 3 && r != 4) || L.rank(1) != r || L.rank(2) != r || qs[0] != ks[0] || ks[0] != vs[0] ||
        qs[2] != ks[2] || ks[2] != vs[2] || qs[3] != ks[3] || ks[1] != vs[1])
        L.error("fused attention: Q, K, V shapes do not match");
    o2g::FusedAttentionParams p;
    p.scale = L.node.get_float("scale", 1.0f);
    if (L.node.get_int("default_scale", 0)) p.scale /= std::sqrt(float(qs[3]));  // Attention-23 without `scale`
    p.one_head = r == 3;
    p.zero_masked_rows = L.node.get_int("zero_masked_rows", 0) != 0;
    bool host = true;
    for (int i : {3, 4}) {
        if (L.has(i) && shape_numel(L.shape(i)) != 1) L.error("fused attention: a Q or K scale with more than one value");
        host &= !L.has(i) || L.in(i).host;
    }
    ggml_tensor* mask = L.has(5) ? L.t(5) : nullptr;
    if (mask && L.rank(5) > 4) L.error("fused attention: mask of rank " + std::to_string(L.rank(5)));
    const DType out = L.node.get_int("to_float", 0) ? DType::FLOAT : L.dtype(2);  // P V has V's type
    if (host && (L.has(3) || L.has(4))) {  // scales known at build time (mark_host_values): into the softmax's
        static const HostTensor one = HostTensor::from_f64(DType::FLOAT, {}, {1.0});
        auto scale = [&](int i) { return L.has(i) ? L.hv(i) : HostArg{&one, nullptr}; };
        L.out(0, O2G_CALL(L, o2g::fused_attention_scaled, L.t(0), L.t(1), L.t(2), scale(3), scale(4), mask, p), out, r);
        return;
    }
    ggml_tensor* side[2] = {L.has(3) ? L.t(3) : nullptr, L.has(4) ? L.t(4) : nullptr};
    L.out(0, O2G_CALL(L, o2g::fused_attention, L.t(0), L.t(1), L.t(2), side[0], side[1], mask, p), out, r);
}

void lower_Attention(Lower& L) {
    const int r = L.rank(0);
    if ((r != 3 && r != 4) || L.rank(1) != r || L.rank(2) != r) L.error("Q, K and V must all be 3-D or all 4-D");
    const Shape &qs = L.shape(0), &ks = L.shape(1), &vs = L.shape(2);
    o2g::AttentionParams p;
    int64_t B = qs[0], Hq, Hkv, D, Dk, Dv;
    if (r == 3) {
        Hq = p.q_heads = L.node.get_int("q_num_heads", 0);
        Hkv = p.kv_heads = L.node.get_int("kv_num_heads", 0);
        if (Hq <= 0 || Hkv <= 0) L.error("3-D inputs need q_num_heads and kv_num_heads");
        if (qs[2] % Hq || ks[2] % Hkv || vs[2] % Hkv) L.error("hidden sizes are not divisible by the head counts");
        D = qs[2] / Hq;
        Dk = ks[2] / Hkv;
        Dv = vs[2] / Hkv;
        if (ks[1] != vs[1]) L.error("K and V sequence lengths differ");
    } else {
        Hq = qs[1], D = qs[3], Hkv = ks[1], Dk = ks[3], Dv = vs[3];
        if (vs[1] != Hkv || vs[2] != ks[2]) L.error("K and V shapes do not match");
        if (L.node.has("q_num_heads") && L.node.get_int("q_num_heads", 0) != Hq) L.error("q_num_heads != Q heads");
    }
    if (Dk != D) L.error("Q and K head sizes differ");
    if (Hq % Hkv) L.error("q heads must be a multiple of kv heads");
    // Attention-25's sliding window, and a causal mask placed by nonpad_kv_seqlen, are not built yet: refuse them
    // rather than attend over keys the model excludes.
    for (const char* a : {"left_window_size", "right_window_size"})
        if (L.node.get_int(a, -1) >= 0) L.error(std::string(a) + " (sliding-window attention) is not implemented");
    if (L.has(6) && L.node.get_int("is_causal", 0)) L.error("is_causal with nonpad_kv_seqlen is not implemented");
    if (L.has(4) != L.has(5)) L.error("past_key and past_value must be given together");
    if (L.has(4)) {
        const Shape &pk = L.shape(4), &pv = L.shape(5);
        if (pk.size() != 4 || pv.size() != 4 || pk[0] != B || pk[1] != Hkv || pk[3] != D || pv[1] != Hkv ||
            pv[2] != pk[2] || pv[3] != Dv)
            L.error("past_key/past_value shapes do not match");
    }
    if (L.has(3) && (L.rank(3) < 1 || L.rank(3) > 4)) L.error("attn_mask must have rank 1..4");
    p.scale = L.node.has("scale") ? L.node.get_float("scale", 1.0f) : 0.0f;
    if (L.node.has("scale") && p.scale == 0.0f) L.error("scale 0 is not supported");
    p.softcap = L.node.get_float("softcap", 0.0f);
    p.causal = L.node.get_int("is_causal", 0) != 0;
    p.bool_mask = L.has(3) && L.dtype(3) == DType::BOOL;
    p.qk_output = int(L.node.get_int("qk_matmul_output_mode", 0));
    if (p.qk_output < 0 || p.qk_output > 3) L.error("unknown qk_matmul_output_mode");
    const Sym nonpad = L.has(6) ? L.sym(6) : Sym{};
    if (L.has(6)) {
        if (int64_t(nonpad.v.size()) != B) L.error("nonpad_kv_seqlen must have batch_size elements");
    }
    ggml_tensor* mask = L.has(3) ? L.t(3) : nullptr;
    ggml_tensor* pk = L.has(4) ? L.t(4) : nullptr;
    ggml_tensor* pv = L.has(5) ? L.t(5) : nullptr;
    const DType dt = L.dtype(0);
    L.out(0, O2G_CALL(L, o2g::attention, L.t(0), L.t(1), L.t(2), mask, pk, pv, nonpad, p), dt, r);
    if (wanted_out(L, 1)) L.out(1, O2G_CALL(L, o2g::attention_present, pk, L.t(1), p), dt, 4);
    if (wanted_out(L, 2)) L.out(2, O2G_CALL(L, o2g::attention_present, pv, L.t(2), p), dt, 4);
    if (wanted_out(L, 3)) L.out(3, O2G_CALL(L, o2g::attention_scores, L.t(0), L.t(1), mask, pk, nonpad, p), dt, 4);
}

void lower_LinearAttention(Lower& L) {
    for (int i = 0; i < 3; i++)
        if (L.rank(i) != 3) L.error("query, key and value must be 3-D (batch, length, heads * head_size)");
    const Shape &qs = L.shape(0), &ks = L.shape(1), &vs = L.shape(2);
    o2g::LinearAttentionParams p;
    p.q_heads = L.node.get_int("q_num_heads", 0);
    p.kv_heads = L.node.get_int("kv_num_heads", 0);
    if (p.q_heads <= 0 || p.kv_heads <= 0) L.error("q_num_heads and kv_num_heads must be given and positive");
    if (p.q_heads % p.kv_heads) L.error("q_num_heads must be a multiple of kv_num_heads");
    const int64_t B = qs[0], T = qs[1];
    if (ks[0] != B || vs[0] != B || ks[1] != T || vs[1] != T) L.error("query, key and value batch/length differ");
    if (qs[2] % p.q_heads || vs[2] % p.kv_heads) L.error("hidden sizes are not divisible by the head counts");
    const int64_t Dk = qs[2] / p.q_heads, Dv = vs[2] / p.kv_heads, Hkv = p.kv_heads;
    if (ks[2] != Hkv * Dk) L.error("key hidden size must be kv_num_heads * query head size");
    const std::string rule = L.node.get_string("update_rule", "gated_delta");
    if (rule == "linear") p.rule = 0;
    else if (rule == "gated") p.rule = 1;
    else if (rule == "delta") p.rule = 2;
    else if (rule == "gated_delta") p.rule = 3;
    else L.error("unknown update_rule '" + rule + "'");
    const bool gating = p.rule == 1 || p.rule == 3, delta = p.rule >= 2;
    if (gating != L.has(4)) L.error("update_rule '" + rule + (gating ? "' needs" : "' takes no") + " decay input");
    if (delta != L.has(5)) L.error("update_rule '" + rule + (delta ? "' needs" : "' takes no") + " beta input");
    p.scale = L.node.get_float("scale", 0.0f);
    DType sdt = L.dtype(0);
    if (L.has(3)) {
        if (L.shape(3) != Shape{B, Hkv, Dk, Dv}) L.error("past_state must have shape (B, kv_num_heads, d_k, d_v)");
        sdt = L.dtype(3);
    }
    if (gating) {
        const Shape& ds = L.shape(4);
        if (ds.size() != 3 || ds[0] != B || ds[1] != T || (ds[2] != Hkv && ds[2] != Hkv * Dk))
            L.error("decay must have shape (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k)");
    }
    if (delta) {
        const Shape& bs = L.shape(5);
        if (bs.size() != 3 || bs[0] != B || bs[1] != T || (bs[2] != Hkv && bs[2] != 1))
            L.error("beta must have shape (B, T, kv_num_heads) or (B, T, 1)");
    }
    ggml_tensor* y = O2G_CALL(L, o2g::linear_attention, L.t(0), L.t(1), L.t(2), L.has(3) ? L.t(3) : nullptr,
                              gating ? L.t(4) : nullptr, delta ? L.t(5) : nullptr, p);
    L.out(0, y, L.dtype(0), 3);
    if (wanted_out(L, 1)) L.out(1, O2G_CALL(L, o2g::linear_attention_state, y, p), sdt, 4);
}

void lower_RotaryEmbedding(Lower& L) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    o2g::RotaryEmbeddingParams p;
    p.interleaved = L.node.get_int("interleaved", 0) != 0;
    int64_t B, S, D;
    if (r == 4) {
        B = xs[0], S = xs[2], D = xs[3];
    } else if (r == 3) {
        p.heads = L.node.get_int("num_heads", 0);
        if (p.heads <= 0) L.error("3-D input needs num_heads");
        if (xs[2] % p.heads) L.error("hidden size is not divisible by num_heads");
        B = xs[0], S = xs[1], D = xs[2] / p.heads;
    } else L.error("input must be 3-D or 4-D");
    p.rotary_dim = L.node.get_int("rotary_embedding_dim", 0);
    const int64_t rd = p.rotary_dim == 0 ? D : p.rotary_dim;
    if (rd < 0 || rd > D || rd % 2) L.error("rotary_embedding_dim must be even and at most the head size");
    const Shape &cs = L.shape(1), &ss = L.shape(2);
    if (cs != ss) L.error("cos_cache and sin_cache shapes differ");
    if (cs.empty() || cs.back() != rd / 2) L.error("cache last dimension must be rotary_embedding_dim / 2");
    if (L.has(3)) {
        if (cs.size() != 2) L.error("with position_ids the caches must be 2-D (max_position, rotary_dim / 2)");
        if (L.shape(3) != Shape{B, S}) L.error("position_ids must have shape (batch, sequence)");
        if (const HostTensor* ph = L.in(3).host.get())  // a check only; the kernel writes NaN for bad ids
            for (int64_t i = 0; i < ph->numel(); i++)
                if (ph->i64(i) < 0 || ph->i64(i) >= cs[0]) L.error("position id out of range of the caches");
    } else if (cs != Shape{B, S, rd / 2}) L.error("without position_ids the caches must be (batch, sequence, rotary_dim / 2)");
    L.out(0, O2G_CALL(L, o2g::rotary_embedding, L.t(0), L.t(1), L.t(2), L.has(3) ? L.t(3) : nullptr, p), L.dtype(0),
          r);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----
double attention_flops(Lower& L) {
    Shape q = L.shape(0), k = L.shape(1), v = L.shape(2);  // [B, T, H, D] or [B', T, D]
    for (Shape* s : {&q, &k, &v})
        if (s->size() == 3) *s = {(*s)[0], (*s)[1], 1, (*s)[2]};
    return 2 * double(q[0]) * double(q[2]) * double(q[1]) * double(k[1]) * double(q[3] + v[3]);
}

const std::vector<OpDef>& attention_ops() {
    static const std::vector<OpDef> t = {
        {.op = "onnx2ggml.Attention", .since = 1, .ggml = lower_AttentionFused, .build_time_inputs = {3, 4}, .math = true, .flops = attention_flops},  // fuse_attention
        {.op = "Attention", .since = 23, .accepts = "in=3..7 out=1..4",
         .ggml = lower_Attention, .host_inputs = {6}, .math = true},
        {.op = "LinearAttention", .since = 27, .accepts = "in=3..6 out=2", .ggml = lower_LinearAttention, .math = true},
        {.op = "RotaryEmbedding", .since = 23, .accepts = "in=3..4 out=1", .ggml = lower_RotaryEmbedding, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
