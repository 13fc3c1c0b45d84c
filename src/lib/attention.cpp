// Op library: attention (see include/onnx2ggml/ops/attention.h).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/custom.h"
#include "lib/portable.h"
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

std::string ne_str(const ggml_tensor* t) {
    return "[" + std::to_string(t->ne[0]) + ", " + std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[2]) + ", " +
           std::to_string(t->ne[3]) + "]";
}

// softmax(scale q k^T + mask) v through ggml_flash_attn_ext, q and k [D, T, H, B], v [Dv, Tk, H, B], the mask F32
// [Tk, Tq|1, H|1, B|1]: [Dv, Tq, H, B] as a view of its [Dv, H, Tq, B] result, or null where the device lacks it.
// Exact mode keeps K and V in F32 with F32 accumulation, unmasked, on devices whose kernel keeps them so; fast mode
// gives it F16 K, V and mask. ONNX2GGML_FLASH_ATTENTION=0
// builds the chunked products instead (for comparisons).
ggml_tensor* flash_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* mask, float scale) {
    const char* env = getenv("ONNX2GGML_FLASH_ATTENTION");
    // Exact mode: not where the kernel rounds K and V to F16 (CUDA), nor masked, since it reads the mask as F16
    // (T5's position bias).
    if ((env && std::string(env) == "0") || !ctx.supports || (!ctx.fast && (mask || !ctx.exact_flash_attention)))
        return nullptr;
    if (mask && mask->ne[1] != q->ne[1])  // one row per query: the kernel does not broadcast over them
        mask = ggml_repeat(ctx, mask, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, mask->ne[0], q->ne[1], mask->ne[2], mask->ne[3]));
    if (mask) mask = ggml_cast(ctx, mask, GGML_TYPE_F16);
    auto attend = [&](ggml_tensor* q, ggml_tensor* k, ggml_tensor* v) -> ggml_tensor* {
        if (ctx.fast) {
            k = ggml_cast(ctx, k, GGML_TYPE_F16);
            v = ggml_cast(ctx, v, GGML_TYPE_F16);
        }
        ggml_tensor* y = ggml_flash_attn_ext(ctx, q, k, v, mask, scale, 0.0f, 0.0f);
        if (!ctx.fast) ggml_prec_set_acc(y, GGML_PREC_F32);
        return ctx.supports(y) ? y : nullptr;
    };
    ggml_tensor* y = attend(q, k, v);
    // Head sizes a kernel refuses (Vulkan's: not a multiple of 8) are zero-padded: a zero column adds nothing to
    // q k^T, and V's extra columns are cut from the result.
    const int64_t Dv = v->ne[0], D8 = (q->ne[0] + 7) / 8 * 8, Dv8 = (Dv + 7) / 8 * 8;
    if (!y && (D8 != q->ne[0] || Dv8 != Dv)) {
        auto pad = [&](ggml_tensor* t, int64_t to) {
            return to == t->ne[0] ? t : ggml_pad(ctx, t, int(to - t->ne[0]), 0, 0, 0);
        };
        y = attend(pad(q, D8), pad(k, D8), pad(v, Dv8));
        if (y && Dv8 != Dv) y = ggml_view_4d(ctx, y, Dv, y->ne[1], y->ne[2], y->ne[3], y->nb[1], y->nb[2], y->nb[3], 0);
    }
    return y ? ggml_permute(ctx, y, 0, 2, 1, 3) : nullptr;  // [Dv, H, Tq, B] -> [Dv, Tq, H, B]
}

}  // namespace

ggml_tensor* fused_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* q_scale,
                             ggml_tensor* k_scale, ggml_tensor* mask, const FusedAttentionParams& p) {
    if (p.one_head) {  // [D, T, B] as [D, 1, T, B]; the result back to [Dv, Tq, B]
        auto heads = [&](ggml_tensor* t) {
            return ggml_reshape_4d(ctx, cont(ctx, t), t->ne[0], 1, t->ne[1], t->ne[2] * t->ne[3]);
        };
        if (mask && mask->ne[2] > 1)  // [Tk, Tq, B] as [Tk, Tq, 1, B]
            mask = ggml_reshape_4d(ctx, cont(ctx, mask), mask->ne[0], mask->ne[1], 1, mask->ne[2]);
        FusedAttentionParams p4 = p;
        p4.one_head = false;
        ggml_tensor* y = fused_attention(ctx, heads(q), heads(k), heads(v), q_scale, k_scale, mask, p4);
        return ggml_reshape_3d(ctx, cont(ctx, y), y->ne[0], y->ne[1], y->ne[3]);
    }
    if (q->ne[0] != k->ne[0] || q->ne[1] != k->ne[1] || k->ne[1] != v->ne[1] || q->ne[3] != k->ne[3] ||
        k->ne[3] != v->ne[3] || k->ne[2] != v->ne[2])
        throw OpError("fused_attention: Q " + ne_str(q) + ", K " + ne_str(k) + ", V " + ne_str(v) + " do not match");
    for (ggml_tensor** side : {&q, &k}) {  // scales the graph computes are multiplied in
        ggml_tensor* s = side == &q ? q_scale : k_scale;
        if (!s) continue;
        if (s->type != GGML_TYPE_F32) s = ggml_cast(ctx, s, GGML_TYPE_F32);
        *side = ggml_mul(ctx, cont(ctx, *side), s);
    }
    if (mask) {  // [Tk, Tq, H, B], each dim full or 1
        const int64_t want[4] = {k->ne[2], q->ne[2], q->ne[1], q->ne[3]};
        for (int d = 0; d < 4; d++)
            if (mask->ne[d] != want[d] && mask->ne[d] != 1)
                throw OpError("fused_attention: mask " + ne_str(mask) + " does not broadcast to the scores [" +
                              std::to_string(want[0]) + ", " + std::to_string(want[1]) + ", " +
                              std::to_string(want[2]) + ", " + std::to_string(want[3]) + "]");
        if (mask->type != GGML_TYPE_F32) mask = ggml_cast(ctx, mask, GGML_TYPE_F32);
        if (mask->ne[0] != want[0])  // one value for every key
            mask = ggml_repeat(ctx, mask, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, want[0], mask->ne[1], mask->ne[2],
                                                             mask->ne[3]));
        mask = cont(ctx, mask);
    }
    if (ctx.cpu && getenv("ONNX2GGML_GGML_ATTENTION") == nullptr)
        return attention_kernel(ctx, cont(ctx, q), cont(ctx, k), cont(ctx, v), p.scale, mask, p.zero_masked_rows);
    ggml_tensor* open_rows = nullptr;  // [1, Tq or 1, ...]: 1 where a query has a key the mask leaves open
    if (mask && p.zero_masked_rows) {  // -inf held finite keeps such rows finite, then they are multiplied by 0
        open_rows = ggml_step(ctx, ggml_sum_rows(ctx, ggml_step(ctx, ggml_scale_bias(ctx, mask, 1.0f, 1e30f))));
        mask = ggml_clamp(ctx, mask, ctx.fast ? -65504.0f : -1e30f, FLT_MAX);  // fast mode's flash mask is F16
    }
    // Flash attention reads the heads through their strides (as llama.cpp's KV-cache views): no copies of Q, K, V.
    ggml_tensor* qp = ggml_permute(ctx, q, 0, 2, 1, 3), *kp = ggml_permute(ctx, k, 0, 2, 1, 3);  // [D, T, H, B]
    if (ggml_tensor* y = flash_attention(ctx, qp, kp, ggml_permute(ctx, v, 0, 2, 1, 3), mask, p.scale))
        return open_rows ? ggml_mul(ctx, y, open_rows) : y;
    q = ggml_cont(ctx, qp);
    k = ggml_cont(ctx, kp);
    ggml_tensor* vt = ggml_cont(ctx, ggml_permute(ctx, v, 1, 2, 0, 3));      // [Tk, Dv, H, B]
    // The score matrix [Tk, Tq, H, B] is computed in query chunks of at most 16 MiB (less where the buffer type's
    // own limit is under twice that): a backend refuses a tensor larger than its storage-buffer range (lavapipe:
    // 128 MiB), which ggml does not expose, and the scheduler would then send the whole product back to the CPU.
    // 16 rather than 64 MiB: the full-size SD 1.5 UNet step's buffer 98.1 -> 71.6 MB, the same time (CPU portable).
    const int64_t budget = int64_t(std::min<size_t>(ctx.max_alloc ? ctx.max_alloc / 2 : SIZE_MAX, size_t(16) << 20));
    const int64_t Tq = q->ne[1], row = k->ne[1] * q->ne[2] * q->ne[3] * int64_t(sizeof(float));
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(Tq, budget / std::max<int64_t>(row, 1)));
    std::vector<ggml_tensor*> outs;
    for (int64_t t0 = 0; t0 < std::max<int64_t>(Tq, 1); t0 += chunk) {  // once when Tq is 0
        const int64_t n = std::min(chunk, Tq - t0);
        ggml_tensor* qc = n == Tq ? q : ggml_cont(ctx, ggml_view_4d(ctx, q, q->ne[0], n, q->ne[2], q->ne[3], q->nb[1],
                                                                     q->nb[2], q->nb[3], size_t(t0) * q->nb[1]));
        ggml_tensor* kq = mul_mat(ctx, k, qc);  // [Tk, n, H, B]
        if (mask) {
            ggml_tensor* mc = mask->ne[1] == 1 || n == Tq ? mask
                              : ggml_view_4d(ctx, mask, mask->ne[0], n, mask->ne[2], mask->ne[3], mask->nb[1],
                                             mask->nb[2], mask->nb[3], size_t(t0) * mask->nb[1]);
            kq = ggml_soft_max(ctx, ggml_add(ctx, ggml_scale(ctx, kq, p.scale), mc));
        } else {
            kq = ggml_soft_max_ext(ctx, kq, nullptr, p.scale, 0.0f);
        }
        outs.push_back(mul_mat(ctx, vt, kq));  // [Dv, n, H, B]
    }
    ggml_tensor* out = concat_pairwise(ctx, outs, 1);
    return open_rows ? ggml_mul(ctx, out, open_rows) : out;  // [Dv, Tq, H, B] = ONNX [B, H, Tq, Dv]
}

ggml_tensor* fused_attention_scaled(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v,
                                    const HostTensor& q_scale, const HostTensor& k_scale, ggml_tensor* mask,
                                    FusedAttentionParams p) {
    if (q_scale.numel() != 1 || k_scale.numel() != 1)
        throw OpError("fused_attention: a Q or K scale with more than one value");
    p.scale *= float(q_scale.f64(0)) * float(k_scale.f64(0));
    return fused_attention(ctx, q, k, v, nullptr, nullptr, mask, p);
}

// ---- Attention-23 ----
namespace {

// Q, K, V as [head size, length, heads, B], K and V after the past ones.
struct Heads {
    ggml_tensor *q, *k, *v;
    int64_t S, T, P, D;
};

// A 3-D [B, len, H * Dh] input as [Dh, len, H, B].
ggml_tensor* split_heads(Ctx& ctx, ggml_tensor* x, int64_t H) {
    if (H <= 0 || x->ne[0] % H) throw OpError("attention: hidden size " + std::to_string(x->ne[0]) +
                                               " is not divisible by " + std::to_string(H) + " heads");
    x = ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0] / H, H, x->ne[1], x->ne[2]);
    return ggml_cont(ctx, ggml_permute(ctx, x, 0, 2, 1, 3));
}

ggml_tensor* with_past(Ctx& ctx, ggml_tensor* past, ggml_tensor* cur) {
    if (!past) return cur;
    if (past->ne[0] != cur->ne[0] || past->ne[2] != cur->ne[2] || past->ne[3] != cur->ne[3])
        throw OpError("attention: past " + ne_str(past) + " does not match " + ne_str(cur));
    return ggml_concat(ctx, cont(ctx, past), cont(ctx, cur), 1);
}

Heads heads(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* past_key, ggml_tensor* past_value,
            const AttentionParams& p) {
    Heads h;
    if (p.q_heads > 0) {
        h.q = split_heads(ctx, q, p.q_heads);
        h.k = split_heads(ctx, k, p.kv_heads);
        h.v = v ? split_heads(ctx, v, p.kv_heads) : nullptr;
    } else {
        h.q = q, h.k = k, h.v = v;
    }
    if (h.v && h.k->ne[1] != h.v->ne[1]) throw OpError("attention: K and V sequence lengths differ");
    // (found by tests/fuzz: V of another batch reached ggml's mul_mat assert)
    if (h.v && (h.k->ne[2] != h.v->ne[2] || h.k->ne[3] != h.v->ne[3]))
        throw OpError("attention: K " + ne_str(h.k) + " and V " + ne_str(h.v) + " differ in heads or batch");
    if (h.k->ne[0] != h.q->ne[0]) throw OpError("attention: Q and K head sizes differ");
    if (h.q->ne[2] % h.k->ne[2]) throw OpError("attention: q heads must be a multiple of kv heads");
    if (h.q->ne[3] != h.k->ne[3]) throw OpError("attention: Q and K batches differ");
    if ((past_key == nullptr) != (past_value == nullptr) && h.v)
        throw OpError("attention: past_key and past_value must be given together");
    h.S = h.q->ne[1];
    h.D = h.q->ne[0];
    h.P = past_key ? past_key->ne[1] : 0;
    h.k = with_past(ctx, past_key, h.k);
    if (h.v) h.v = with_past(ctx, past_value, h.v);
    h.T = h.k->ne[1];
    return h;
}

ggml_tensor* minus_inf_where(Ctx& ctx, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                             const std::vector<bool>& masked) {
    std::vector<float> c(masked.size());
    for (size_t i = 0; i < c.size(); i++) c[i] = masked[i] ? -INFINITY : 0.0f;
    const int64_t ne[4] = {n0, n1, n2, n3};
    return ctx.constant_f32(ne, c);
}

// The scores [T, S, Hq, B]: after scale and softcap (qk0), after the masks (qk).
void scores(Ctx& ctx, const Heads& h, ggml_tensor* mask, const Ints& nonpad, const AttentionParams& p,
            ggml_tensor*& qk0, ggml_tensor*& qk) {
    const float scale = p.scale != 0.0f ? p.scale : float(1.0 / std::sqrt(double(h.D)));
    qk = device_mul_mat(ctx, cont(ctx, h.k), cont(ctx, h.q));  // kv head i / (Hq / Hkv)
    qk = ggml_scale(ctx, qk, scale);
    if (p.softcap > 0) qk = ggml_scale(ctx, ggml_tanh(ctx, ggml_scale(ctx, qk, 1.0f / p.softcap)), p.softcap);
    qk0 = qk;
    const int64_t S = h.S, T = h.T, P = h.P, B = h.q->ne[3];
    auto add_bias = [&](ggml_tensor* m) {
        int64_t ne[4];
        broadcast_ne(m, qk, ne);
        if (!(ne[0] == qk->ne[0] && ne[1] == qk->ne[1] && ne[2] == qk->ne[2] && ne[3] == qk->ne[3]))
            throw OpError("attention: mask " + ne_str(m) + " does not broadcast to the scores " + ne_str(qk));
        qk = ggml_add(ctx, qk, m);
    };
    if (mask) {
        ggml_tensor* m = mask->type == GGML_TYPE_F32 ? mask : ggml_cast(ctx, mask, GGML_TYPE_F32);
        if (p.bool_mask) {
            const int64_t one[4] = {1, 1, 1, 1};
            m = custom_where(ctx, m, ctx.constant_f32(one, {0.0f}), ctx.constant_f32(one, {-INFINITY}));
        }
        if (m->ne[0] > T) throw OpError("attention: attn_mask is longer than the total sequence");
        if (m->ne[0] < T) {  // padded with -inf (false)
            const int64_t pad = T - m->ne[0];
            std::vector<bool> all(size_t(pad * m->ne[1] * m->ne[2] * m->ne[3]), true);
            m = ggml_concat(ctx, cont(ctx, m), minus_inf_where(ctx, pad, m->ne[1], m->ne[2], m->ne[3], all), 0);
        }
        add_bias(m);
    }
    if (p.causal) {
        std::vector<bool> c(size_t(S * T), false);
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = P; j < T; j++) c[size_t(i * T + j)] = j - P > i;
        add_bias(minus_inf_where(ctx, T, S, 1, 1, c));
    }
    if (!nonpad.empty()) {
        if (int64_t(nonpad.size()) != B) throw OpError("attention: nonpad_kv_seqlen must have batch_size elements");
        std::vector<bool> c(size_t(B * T), false);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < T; j++) c[size_t(b * T + j)] = j >= nonpad[size_t(b)];
        add_bias(minus_inf_where(ctx, T, 1, 1, B, c));
    }
}

}  // namespace

ggml_tensor* attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* mask,
                       ggml_tensor* past_key, ggml_tensor* past_value, const Ints& nonpad_kv_seqlen,
                       const AttentionParams& p) {
    // The plain form (one KV head per query head, an additive mask or none, nothing cached, no softcap or causal
    // mask) runs on the fused kernel: no score matrix in memory.
    if (!past_key && !past_value && nonpad_kv_seqlen.empty() && p.softcap == 0.0f && !p.causal && !p.bool_mask &&
        p.q_heads == p.kv_heads && (!mask || ggml_n_dims(mask) <= 4)) {
        ggml_tensor *hq = q, *hk = k, *hv = v;  // as [D, H, T, B]
        if (p.q_heads > 0) {
            auto split = [&](ggml_tensor* x) {
                return ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0] / p.q_heads, p.q_heads, x->ne[1], x->ne[2]);
            };
            if (q->ne[0] % p.q_heads == 0 && k->ne[0] % p.q_heads == 0 && v->ne[0] % p.q_heads == 0)
                hq = split(q), hk = split(k), hv = split(v);
            else hq = nullptr;
        } else {
            hq = ggml_permute(ctx, q, 0, 2, 1, 3), hk = ggml_permute(ctx, k, 0, 2, 1, 3);
            hv = ggml_permute(ctx, v, 0, 2, 1, 3);
        }
        auto fits = [&](int d, int64_t n) { return !mask || mask->ne[d] == n || mask->ne[d] == 1; };
        if (hq && hq->ne[1] == hk->ne[1] && fits(0, hk->ne[2]) && fits(1, hq->ne[2]) && fits(2, hq->ne[1]) &&
            fits(3, hq->ne[3])) {
            FusedAttentionParams fp;
            fp.scale = p.scale != 0.0f ? p.scale : float(1.0 / std::sqrt(double(hq->ne[0])));
            ggml_tensor* y = fused_attention(ctx, hq, hk, hv, nullptr, nullptr, mask, fp);  // [Dv, S, H, B]
            if (p.q_heads == 0) return y;
            y = ggml_cont(ctx, ggml_permute(ctx, y, 0, 2, 1, 3));  // [Dv, H, S, B]
            return ggml_reshape_3d(ctx, y, y->ne[0] * y->ne[1], y->ne[2], y->ne[3]);
        }
    }
    const Heads h = heads(ctx, q, k, v, past_key, past_value, p);
    ggml_tensor *qk0, *qk;
    scores(ctx, h, mask, nonpad_kv_seqlen, p, qk0, qk);
    ggml_tensor* pr = ggml_soft_max(ctx, cont(ctx, qk));
    ggml_tensor* vt = ggml_cont(ctx, ggml_transpose(ctx, cont(ctx, h.v)));  // [T, Dv, Hkv, B]
    ggml_tensor* y = device_mul_mat(ctx, vt, pr);                             // [Dv, S, Hq, B]
    if (p.q_heads > 0) {
        y = ggml_cont(ctx, ggml_permute(ctx, y, 0, 2, 1, 3));  // [Dv, Hq, S, B]
        y = ggml_reshape_3d(ctx, y, y->ne[0] * y->ne[1], y->ne[2], y->ne[3]);
    }
    return y;
}

ggml_tensor* attention_grouped(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, const AttentionParams& p) {
    auto heads_first = [&](ggml_tensor* x) { return ggml_permute(ctx, x, 0, 2, 1, 3); };
    return attention(ctx, heads_first(q), heads_first(k), heads_first(v), nullptr, nullptr, nullptr, {}, p);
}

ggml_tensor* attention_present(Ctx& ctx, ggml_tensor* past, ggml_tensor* cur, const AttentionParams& p) {
    if (p.q_heads > 0) cur = split_heads(ctx, cur, p.kv_heads);
    return cont(ctx, with_past(ctx, past, cur));
}

ggml_tensor* attention_scores(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* mask, ggml_tensor* past_key,
                              const Ints& nonpad_kv_seqlen, const AttentionParams& p) {
    const Heads h = heads(ctx, q, k, nullptr, past_key, nullptr, p);
    ggml_tensor *qk0, *qk;
    scores(ctx, h, mask, nonpad_kv_seqlen, p, qk0, qk);
    if (p.qk_output == 3) return ggml_soft_max(ctx, cont(ctx, qk));
    return p.qk_output == 2 ? qk : qk0;
}

// ---- LinearAttention ----
namespace {
struct LinDims {
    int64_t B, T, Dk, Dv;
};
LinDims lin_dims(const ggml_tensor* q, const ggml_tensor* v, const LinearAttentionParams& p) {
    if (p.q_heads <= 0 || p.kv_heads <= 0 || p.q_heads % p.kv_heads)
        throw OpError("linear_attention: " + std::to_string(p.q_heads) + " q heads, " + std::to_string(p.kv_heads) +
                      " kv heads");
    if (q->ne[0] % p.q_heads || v->ne[0] % p.kv_heads)
        throw OpError("linear_attention: hidden sizes are not divisible by the head counts");
    return {q->ne[2], q->ne[1], q->ne[0] / p.q_heads, v->ne[0] / p.kv_heads};
}
}  // namespace

ggml_tensor* linear_attention(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, ggml_tensor* past_state,
                              ggml_tensor* decay, ggml_tensor* beta, const LinearAttentionParams& p) {
    const LinDims d = lin_dims(q, v, p);
    const int64_t Hkv = p.kv_heads;
    if (k->ne[1] != d.T || v->ne[1] != d.T || k->ne[2] != d.B || v->ne[2] != d.B)
        throw OpError("linear_attention: query, key and value batch/length differ");
    if (k->ne[0] != Hkv * d.Dk) throw OpError("linear_attention: key hidden size must be kv heads * query head size");
    if (p.rule < 0 || p.rule > 3) throw OpError("linear_attention: rule " + std::to_string(p.rule) + " (0 to 3)");
    const bool gating = p.rule == 1 || p.rule == 3, delta = p.rule >= 2;
    if (gating != (decay != nullptr) || delta != (beta != nullptr))
        throw OpError("linear_attention: decay is needed exactly by gated rules, beta by delta rules");
    const float scale = p.scale != 0.0f ? p.scale : float(1.0 / std::sqrt(double(d.Dk)));
    LinAttnParams lp{d.B, d.T, p.q_heads, Hkv, d.Dk, d.Dv, scale, gating, delta, -1, -1, -1, false, false};
    std::vector<ggml_tensor*> args = {f32_cont(ctx, q), f32_cont(ctx, k), f32_cont(ctx, v)};
    if (past_state) {
        if (!(past_state->ne[0] == d.Dv && past_state->ne[1] == d.Dk && past_state->ne[2] == Hkv &&
              past_state->ne[3] == d.B))
            throw OpError("linear_attention: past_state must have shape (B, kv_num_heads, d_k, d_v)");
        lp.i_state = int(args.size());
        args.push_back(f32_cont(ctx, past_state));
    }
    if (decay) {
        if (decay->ne[1] != d.T || decay->ne[2] != d.B || (decay->ne[0] != Hkv && decay->ne[0] != Hkv * d.Dk))
            throw OpError("linear_attention: decay must have shape (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k)");
        lp.decay_per_dim = decay->ne[0] == Hkv * d.Dk;  // with d_k = 1 both layouts coincide
        lp.i_decay = int(args.size());
        args.push_back(f32_cont(ctx, decay));
    }
    if (beta) {
        if (beta->ne[1] != d.T || beta->ne[2] != d.B || (beta->ne[0] != Hkv && beta->ne[0] != 1))
            throw OpError("linear_attention: beta must have shape (B, T, kv_num_heads) or (B, T, 1)");
        lp.beta_per_head = beta->ne[0] == Hkv;
        lp.i_beta = int(args.size());
        args.push_back(f32_cont(ctx, beta));
    }
    ggml_tensor* all = linear_attention_kernel(ctx, args, lp);
    const int64_t n_out = d.B * d.T * p.q_heads * d.Dv;
    return ggml_reshape_3d(ctx, ggml_view_1d(ctx, all, n_out, 0), p.q_heads * d.Dv, d.T, d.B);
}

ggml_tensor* linear_attention_state(Ctx& ctx, ggml_tensor* y, const LinearAttentionParams& p) {
    ggml_tensor* all = y->view_src;
    if (!all || all->op != GGML_OP_CUSTOM || !all->src[0] || !all->src[2])
        throw OpError("linear_attention_state: y is not a linear_attention result");
    const LinDims d = lin_dims(all->src[0], all->src[2], p);
    const int64_t n_out = d.B * d.T * p.q_heads * d.Dv, n_st = d.B * p.kv_heads * d.Dk * d.Dv;
    ggml_tensor* s = ggml_view_1d(ctx, all, n_st, size_t(n_out) * sizeof(float));
    return ggml_reshape_4d(ctx, s, d.Dv, d.Dk, p.kv_heads, d.B);
}

// ---- RotaryEmbedding ----
ggml_tensor* rotary_embedding(Ctx& ctx, ggml_tensor* x, ggml_tensor* cos_cache, ggml_tensor* sin_cache,
                              ggml_tensor* position_ids, const RotaryEmbeddingParams& p) {
    RopeParams rp{};
    rp.interleaved = p.interleaved;
    if (p.heads <= 0) {  // [B, H, S, D]
        rp.heads_first = true;
        rp.D = x->ne[0], rp.S = x->ne[1], rp.H = x->ne[2], rp.B = x->ne[3];
    } else {  // [B, S, H * D]
        if (x->ne[0] % p.heads) throw OpError("rotary_embedding: hidden size is not divisible by the heads");
        rp.D = x->ne[0] / p.heads, rp.H = p.heads, rp.S = x->ne[1], rp.B = x->ne[2];
    }
    rp.rd = p.rotary_dim != 0 ? p.rotary_dim : rp.D;
    if (rp.rd < 0 || rp.rd > rp.D || rp.rd % 2)
        throw OpError("rotary_embedding: rotary_dim must be even and at most the head size");
    if (!same_ne(cos_cache, sin_cache)) throw OpError("rotary_embedding: cos_cache and sin_cache shapes differ");
    if (cos_cache->ne[0] != rp.rd / 2) throw OpError("rotary_embedding: cache last dimension must be rotary_dim / 2");
    std::vector<ggml_tensor*> args = {f32_cont(ctx, x), f32_cont(ctx, cos_cache), f32_cont(ctx, sin_cache)};
    rp.has_pos = position_ids != nullptr;
    if (position_ids) {
        rp.max_pos = cos_cache->ne[1];
        args.push_back(cont(ctx, position_ids));
    } else if (!(cos_cache->ne[1] == rp.S && cos_cache->ne[2] == rp.B))
        throw OpError("rotary_embedding: without position_ids the caches must be (batch, sequence, rotary_dim / 2)");
    return rotary_kernel(ctx, args, rp);
}

}  // namespace o2g
