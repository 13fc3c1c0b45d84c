// Further ops: RMSNormalization, Attention, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, Hardmax,
// LpNormalization, MeanVarianceNormalization, Shrink, Swish.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {


bool want(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }

// Device permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Lower& L, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(L.ctx, ggml_permute(L.ctx, L.cont(x), g[0], g[1], g[2], g[3]));
}

// Perm moving `axis` last, and its inverse.
void axis_last_perm(int r, int axis, std::vector<int>& perm, std::vector<int>& inv) {
    perm.clear();
    for (int i = 0; i < r; i++)
        if (i != axis) perm.push_back(i);
    perm.push_back(axis);
    inv.assign(size_t(r), 0);
    for (int i = 0; i < r; i++) inv[size_t(perm[size_t(i)])] = i;
}

Shape permuted(const Shape& s, const std::vector<int>& perm) {
    Shape o;
    for (int p : perm) o.push_back(s[size_t(p)]);
    return o;
}

// ---- row kernels (one ggml row = ne0 elements) ----
enum class RowK { Hardmax, L1Norm, L2Norm, TopKValues, TopKIndices };
struct RowParams { RowK k; int64_t K; bool largest; };

void row_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RowParams& p = *static_cast<const RowParams*>(ud);
    const ggml_tensor* a = dst->src[0];
    int64_t n = a->ne[0], rows = ggml_nrows(a);
    int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    std::vector<int64_t> idx;
    for (int64_t r = r0; r < r1; r++) {
        const float* x = static_cast<const float*>(a->data) + r * n;
        switch (p.k) {
            case RowK::Hardmax: {
                float* y = static_cast<float*>(dst->data) + r * n;
                int64_t best = 0;
                for (int64_t i = 1; i < n; i++)
                    if (x[i] > x[best]) best = i;
                for (int64_t i = 0; i < n; i++) y[i] = i == best ? 1.f : 0.f;
                break;
            }
            case RowK::L1Norm: case RowK::L2Norm: {
                float* y = static_cast<float*>(dst->data) + r * n;
                double s = 0;
                for (int64_t i = 0; i < n; i++) s += p.k == RowK::L1Norm ? std::fabs(double(x[i])) : double(x[i]) * x[i];
                if (p.k == RowK::L2Norm) s = std::sqrt(s);
                for (int64_t i = 0; i < n; i++) y[i] = s == 0 ? 0.f : float(double(x[i]) / s);
                break;
            }
            case RowK::TopKValues: case RowK::TopKIndices: {
                idx.resize(size_t(n));
                std::iota(idx.begin(), idx.end(), 0);
                auto cmp = [&](int64_t i, int64_t j) {
                    float a1 = x[i], b1 = x[j];
                    if (a1 != b1) return p.largest ? a1 > b1 : a1 < b1;
                    return i < j;
                };
                std::partial_sort(idx.begin(), idx.begin() + p.K, idx.end(), cmp);
                if (p.k == RowK::TopKValues) {
                    float* y = static_cast<float*>(dst->data) + r * p.K;
                    for (int64_t i = 0; i < p.K; i++) y[i] = x[idx[size_t(i)]];
                } else {
                    int32_t* y = static_cast<int32_t*>(dst->data) + r * p.K;
                    for (int64_t i = 0; i < p.K; i++) y[i] = int32_t(idx[size_t(i)]);
                }
                break;
            }
        }
    }
}

ggml_tensor* rows_op(Lower& L, ggml_tensor* x, RowK k, int64_t K = 0, bool largest = true) {
    x = L.cont(x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    ggml_tensor* args[1] = {x};
    bool topk = k == RowK::TopKValues || k == RowK::TopKIndices;
    return ggml_custom_4d(L.ctx, k == RowK::TopKIndices ? GGML_TYPE_I32 : GGML_TYPE_F32, topk ? K : x->ne[0],
                          x->ne[1], x->ne[2], x->ne[3], args, 1, row_kernel, GGML_N_TASKS_MAX,
                          keep_params(RowParams{k, K, largest}));
}

// Applies a row kernel along ONNX `axis` (moved innermost and back).
ggml_tensor* along_axis(Lower& L, ggml_tensor* x, const Shape& xs, int axis, RowK k, int64_t K = 0,
                        bool largest = true) {
    int r = int(xs.size());
    std::vector<int> perm, inv;
    axis_last_perm(r, axis, perm, inv);
    ggml_tensor* y = rows_op(L, permute_onnx(L, x, r, perm), k, K, largest);
    return permute_onnx(L, y, r, inv);
}

}

// [N, C, d...] (ggml [D, C, N]) -> ggml [C, D, N].
ggml_tensor* classes_inner(Lower& L, ggml_tensor* x, const Shape& xs) {
    int64_t N = xs[0], C = xs[1], D = shape_numel(xs) / std::max<int64_t>(1, N * C);
    x = ggml_reshape_3d(L.ctx, L.cont(x), D, C, N);
    return ggml_cont(L.ctx, ggml_permute(L.ctx, x, 1, 0, 2, 3));
}

// Loss from per-class values `lp` (ggml [C, D, N], = input or log-probabilities); inputs 1 (target), 2 (weight).
void nll_core(Lower& L, ggml_tensor* lp, const Shape& xs, bool nll_quirk) {
    if (xs.size() < 2) L.error("input must have rank >= 2");
    int64_t N = xs[0], C = xs[1], D = shape_numel(xs) / std::max<int64_t>(1, N * C);
    const HostTensor& tg = L.h(1);
    if (tg.numel() != N * D) L.error("target shape does not match the input");
    std::vector<double> w;
    if (L.has(2)) {
        w = L.h(2).to_f64();
        if (int64_t(w.size()) != C) L.error("weight must have C elements");
    }
    bool has_ii = L.node.has("ignore_index");
    int64_t ii = L.node.get_int("ignore_index", 0);
    std::string red = L.node.get_string("reduction", "mean");
    HostTensor m = HostTensor::alloc(DType::FLOAT, {N, D, C});
    float* mp = reinterpret_cast<float*>(m.mut());
    double denom = 0;
    for (int64_t k = 0; k < N * D; k++) {
        int64_t t = tg.i64(k);
        if (has_ii && t == ii) continue;
        if (t < 0 || t >= C) L.error("target " + std::to_string(t) + " out of range [0, " + std::to_string(C) + ")");
        double wt = w.empty() ? 1.0 : w[size_t(t)];
        mp[k * C + t] = float(-wt);
        denom += wt;
    }
    if (w.empty() && (!has_ii || (nll_quirk && ii == -1))) denom = double(N * D);
    ggml_tensor* l = ggml_sum_rows(L.ctx, ggml_mul(L.ctx, lp, L.constant(m)));  // [1, D, N]
    DType dt = L.dtype(0);
    if (red == "none") {
        Shape ts = tg.shape;
        L.out(0, reshape_to(L, l, ts), dt, int(ts.size()));
    } else if (red == "sum" || red == "mean") {
        ggml_tensor* s = ggml_sum(L.ctx, l);
        if (red == "mean") s = ggml_scale(L.ctx, s, float(1.0 / denom));
        L.out(0, s, dt, 0);
    } else L.error("unknown reduction '" + red + "'");
}

}  // namespace

// ---- RMSNormalization (23) ----
void lower_RMSNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = rows_from_axis(L, L.t(0), xs, axis);
    ggml_tensor* y = reshape_to(L, ggml_rms_norm(L.ctx, x, eps), xs);
    if (broadcast_shapes(L, xs, L.shape(1)) != xs) L.error("scale does not broadcast to the input");
    y = ggml_mul(L.ctx, y, L.t(1));
    L.out(0, y, L.dtype(0), r);
}

// ---- Attention (23) ----
void lower_Attention(Lower& L) {
    int r = L.rank(0);
    if ((r != 3 && r != 4) || L.rank(1) != r || L.rank(2) != r) L.error("Q, K and V must all be 3-D or all 4-D");
    Shape qs = L.shape(0), ks = L.shape(1), vs = L.shape(2);
    int64_t B = qs[0], Hq, Hkv, S, D, Dk, Dv;
    ggml_tensor *q = L.t(0), *k = L.t(1), *v = L.t(2);
    if (r == 3) {
        Hq = L.node.get_int("q_num_heads", 0);
        Hkv = L.node.get_int("kv_num_heads", 0);
        if (Hq <= 0 || Hkv <= 0) L.error("3-D inputs need q_num_heads and kv_num_heads");
        if (qs[2] % Hq || ks[2] % Hkv || vs[2] % Hkv) L.error("hidden sizes are not divisible by the head counts");
        S = qs[1];
        D = qs[2] / Hq;
        Dk = ks[2] / Hkv;
        Dv = vs[2] / Hkv;
        auto heads = [&](ggml_tensor* x, int64_t len, int64_t H, int64_t Dh) {
            x = ggml_reshape_4d(L.ctx, L.cont(x), Dh, H, len, B);
            return ggml_cont(L.ctx, ggml_permute(L.ctx, x, 0, 2, 1, 3));  // [Dh, len, H, B]
        };
        q = heads(q, S, Hq, D);
        k = heads(k, ks[1], Hkv, Dk);
        v = heads(v, vs[1], Hkv, Dv);
        if (ks[1] != vs[1]) L.error("K and V sequence lengths differ");
    } else {
        Hq = qs[1];
        S = qs[2];
        D = qs[3];
        Hkv = ks[1];
        Dk = ks[3];
        Dv = vs[3];
        if (vs[1] != Hkv || vs[2] != ks[2]) L.error("K and V shapes do not match");
        if (L.node.has("q_num_heads") && L.node.get_int("q_num_heads", 0) != Hq) L.error("q_num_heads != Q heads");
    }
    if (Dk != D) L.error("Q and K head sizes differ");
    if (Hq % Hkv) L.error("q heads must be a multiple of kv heads");
    if (L.has(4) != L.has(5)) L.error("past_key and past_value must be given together");
    int64_t P = 0;
    if (L.has(4)) {
        const Shape& pk = L.shape(4);
        const Shape& pv = L.shape(5);
        if (pk.size() != 4 || pv.size() != 4 || pk[0] != B || pk[1] != Hkv || pk[3] != D || pv[1] != Hkv ||
            pv[2] != pk[2] || pv[3] != Dv)
            L.error("past_key/past_value shapes do not match");
        P = pk[2];
        k = ggml_concat(L.ctx, L.cont(L.t(4)), L.cont(k), 1);
        v = ggml_concat(L.ctx, L.cont(L.t(5)), L.cont(v), 1);
    }
    int64_t T = k->ne[1];
    float scale = L.node.has("scale") ? L.node.get_float("scale", 1.0f) : float(1.0 / std::sqrt(double(D)));
    float softcap = L.node.get_float("softcap", 0.0f);
    int64_t mode = L.node.get_int("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) L.error("unknown qk_matmul_output_mode");

    ggml_tensor* qk = ggml_mul_mat(L.ctx, L.cont(k), L.cont(q));  // [T, S, Hq, B]; kv head i/(Hq/Hkv)
    qk = ggml_scale(L.ctx, qk, scale);
    if (softcap > 0) qk = ggml_scale(L.ctx, ggml_tanh(L.ctx, ggml_scale(L.ctx, qk, 1.0f / softcap)), softcap);
    ggml_tensor* qk0 = qk;

    Shape full = {B, Hq, S, T};
    auto add_bias = [&](ggml_tensor* m, const Shape& ms) {
        if (broadcast_shapes(L, ms, full) != full) L.error("attn_mask does not broadcast to [B, heads, S, T]");
        qk = ggml_add(L.ctx, qk, m);
    };
    if (L.has(3)) {
        Shape ms = L.shape(3);
        if (ms.empty() || ms.size() > 4) L.error("attn_mask must have rank 1..4");
        ggml_tensor* m = L.t(3);
        if (m->type != GGML_TYPE_F32) m = ggml_cast(L.ctx, m, GGML_TYPE_F32);
        if (L.dtype(3) == DType::BOOL) {
            HostTensor z = HostTensor::from_f64(DType::FLOAT, {}, {0.0});
            HostTensor ni = HostTensor::from_f64(DType::FLOAT, {}, {-INFINITY});
            m = custom_where(L, m, ms, L.constant(z), {}, L.constant(ni), {}, ms);
        }
        if (ms.back() > T) L.error("attn_mask is longer than the total sequence");
        if (ms.back() < T) {  // padded with -inf (false)
            Shape ps = ms;
            ps.back() = T - ms.back();
            HostTensor pad = HostTensor::alloc(DType::FLOAT, ps);
            for (int64_t i = 0; i < pad.numel(); i++) pad.set_f64(i, -INFINITY);
            m = ggml_concat(L.ctx, L.cont(m), L.constant(pad), 0);
            ms.back() = T;
        }
        add_bias(m, ms);
    }
    if (L.node.get_int("is_causal", 0)) {
        HostTensor c = HostTensor::alloc(DType::FLOAT, {S, T});
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = P; j < T; j++)
                if (j - P > i) c.set_f64(i * T + j, -INFINITY);
        add_bias(L.constant(c), {S, T});
    }
    if (L.has(6)) {  // nonpad_kv_seqlen
        auto lens = L.ints(6);
        if (int64_t(lens.size()) != B) L.error("nonpad_kv_seqlen must have batch_size elements");
        HostTensor c = HostTensor::alloc(DType::FLOAT, {B, 1, 1, T});
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < T; j++)
                if (j >= lens[size_t(b)]) c.set_f64(b * T + j, -INFINITY);
        add_bias(L.constant(c), {B, 1, 1, T});
    }
    ggml_tensor* qkb = qk;
    ggml_tensor* p = ggml_soft_max(L.ctx, L.cont(qk));
    ggml_tensor* vt = ggml_cont(L.ctx, ggml_transpose(L.ctx, L.cont(v)));  // [T, Dv, Hkv, B]
    ggml_tensor* y = ggml_mul_mat(L.ctx, vt, p);                           // [Dv, S, Hq, B]
    DType dt = L.dtype(0);
    if (r == 3) {
        y = ggml_cont(L.ctx, ggml_permute(L.ctx, y, 0, 2, 1, 3));  // [Dv, Hq, S, B]
        y = ggml_reshape_3d(L.ctx, y, Dv * Hq, S, B);
    }
    L.out(0, y, dt, r);
    if (want(L, 1)) L.out(1, L.cont(k), dt, 4);
    if (want(L, 2)) L.out(2, L.cont(v), dt, 4);
    if (want(L, 3)) L.out(3, mode == 3 ? p : mode == 2 ? qkb : qk0, dt, 4);
}

// ---- losses ----
void lower_NegativeLogLikelihoodLoss(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() < 2) L.error("input must have rank >= 2");
    nll_core(L, classes_inner(L, L.t(0), xs), xs, true);
}

void lower_SoftmaxCrossEntropyLoss(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() < 2) L.error("scores must have rank >= 2");
    ggml_tensor* lp = custom_rows(L, classes_inner(L, L.t(0), xs), ReduceK::LogSoftmax);  // [C, D, N]
    nll_core(L, lp, xs, false);
    if (want(L, 1)) {
        int64_t N = xs[0], C = xs[1], D = shape_numel(xs) / std::max<int64_t>(1, N * C);
        ggml_tensor* back = ggml_cont(L.ctx, ggml_permute(L.ctx, lp, 1, 0, 2, 3));  // [D, C, N]
        (void)D;
        L.out(1, reshape_to(L, back, xs), L.dtype(0), int(xs.size()));
    }
}

// ---- LpNormalization, MeanVarianceNormalization ----
void lower_LpNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    int64_t p = L.node.get_int("p", 2);
    if (p != 1 && p != 2) L.error("p must be 1 or 2");
    L.out(0, along_axis(L, L.t(0), xs, axis, p == 1 ? RowK::L1Norm : RowK::L2Norm), L.dtype(0), r);
}

void lower_MeanVarianceNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    std::vector<int64_t> axes = L.node.get_ints("axes", {0, 2, 3});
    std::vector<bool> red(size_t(r), false);
    for (int64_t a : axes) red[size_t(norm_axis(L, a, r))] = true;
    std::vector<int> perm, inv(static_cast<size_t>(r));
    for (int i = 0; i < r; i++)
        if (!red[size_t(i)]) perm.push_back(i);
    int64_t inner = 1;
    for (int i = 0; i < r; i++)
        if (red[size_t(i)]) {
            perm.push_back(i);
            inner *= xs[size_t(i)];
        }
    for (int i = 0; i < r; i++) inv[size_t(perm[size_t(i)])] = i;
    Shape ps = permuted(xs, perm);
    ggml_tensor* x = permute_onnx(L, L.t(0), r, perm);
    x = ggml_reshape_2d(L.ctx, L.cont(x), inner, shape_numel(xs) / std::max<int64_t>(1, inner));
    ggml_tensor* y = reshape_to(L, ggml_norm(L.ctx, x, 1e-9f), ps);
    L.out(0, permute_onnx(L, y, r, inv), L.dtype(0), r);
}

}

}  // namespace onnx2ggml
