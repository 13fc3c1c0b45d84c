// Internal ops produced by fusion passes (src/passes): one lowering each, like any ONNX op.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ops/custom.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

struct GroupNormParams {
    int64_t groups;
    float eps;
};

// x [S, C, N] contiguous, gamma/beta [C]: one work item per (group, image). Mean and variance are accumulated in
// double over two read passes (as ggml_group_norm does); the third pass writes the normalized, scaled output.
void group_norm_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const GroupNormParams& p = *static_cast<const GroupNormParams*>(ud);
    const ggml_tensor* xt = dst->src[0];
    const float* gamma = static_cast<const float*>(dst->src[1]->data);
    const float* beta = static_cast<const float*>(dst->src[2]->data);
    const int64_t S = xt->ne[0] * xt->ne[1], C = xt->ne[2], N = xt->ne[3], cg = C / p.groups;
    const int64_t items = N * p.groups, per = (items + nth - 1) / nth;
    const int64_t i0 = std::min(items, per * ith), i1 = std::min(items, i0 + per);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t n = it / p.groups, grp = it % p.groups;
        const size_t off = size_t((n * C + grp * cg) * S), len = size_t(cg * S);
        const float* x = static_cast<const float*>(xt->data) + off;
        float* y = static_cast<float*>(dst->data) + off;
        double sum = 0;
        for (size_t b = 0; b < len; b += 4096) {  // float partial sums over short blocks, vectorizable
            float part = 0;
            for (size_t i = b, e = std::min(len, b + 4096); i < e; i++) part += x[i];
            sum += part;
        }
        const float mean = float(sum / double(len));
        double sq = 0;
        for (size_t b = 0; b < len; b += 4096) {
            float part = 0;
            for (size_t i = b, e = std::min(len, b + 4096); i < e; i++) {
                const float d = x[i] - mean;
                part += d * d;
            }
            sq += part;
        }
        const float rstd = float(1.0 / std::sqrt(sq / double(len) + double(p.eps)));
        for (int64_t c = 0; c < cg; c++) {
            const float a = rstd * gamma[grp * cg + c], b = beta[grp * cg + c] - mean * a;
            const float* xc = x + c * S;
            float* yc = y + c * S;
            for (int64_t i = 0; i < S; i++) yc[i] = xc[i] * a + b;
        }
    }
}

ggml_tensor* f32_vector(Lower& L, int i, int64_t n) {
    ggml_tensor* t = L.t(i);
    if (t->type != GGML_TYPE_F32) t = ggml_cast(L.ctx, t, GGML_TYPE_F32);
    return ggml_reshape_1d(L.ctx, L.cont(t), n);
}

}  // namespace

// onnx2ggml.GroupNorm(x [N, C, H, W], gamma [C,1,1], beta [C,1,1]; num_groups, epsilon, silu): fuse_group_norm.
void lower_GroupNormFused(Lower& L) {
    const Shape& xs = L.shape(0);
    const int64_t G = L.node.get_int("num_groups", 1);
    const float eps = L.node.get_float("epsilon", 1e-5f);
    const bool silu = L.node.get_int("silu", 0) != 0;
    if (xs.size() != 4) L.error("fused GroupNorm expects a rank-4 input (the pass matched a [C,1,1] affine)");
    const int64_t C = xs[1];
    if (G <= 0 || C % G || shape_numel(L.shape(1)) != C || shape_numel(L.shape(2)) != C)
        L.error("fused GroupNorm: groups or affine do not match the channels");
    ggml_tensor* x = L.cont(L.t(0));  // ggml [W, H, C, N]
    ggml_tensor* gamma = f32_vector(L, 1, C);
    ggml_tensor* beta = f32_vector(L, 2, C);
    ggml_tensor* y;
    if (L.b.weights.native_cpu) {
        ggml_tensor* args[3] = {x, gamma, beta};
        y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 3, group_norm_kernel,
                           GGML_N_TASKS_MAX, keep_params(GroupNormParams{G, eps}));
        L.b.kernel[y] = "group_norm";
        if (silu) y = ggml_silu_inplace(L.ctx, y);  // ggml's vectorized exp
    } else {  // other backends: ggml's own kernels
        y = ggml_group_norm(L.ctx, x, int(G), eps);
        y = ggml_mul(L.ctx, y, ggml_reshape_4d(L.ctx, gamma, 1, 1, C, 1));
        y = ggml_add(L.ctx, y, ggml_reshape_4d(L.ctx, beta, 1, 1, C, 1));
        if (silu) y = ggml_silu(L.ctx, y);
    }
    L.out(0, y, L.dtype(0), 4);
}

}  // namespace onnx2ggml

namespace onnx2ggml {

namespace {

// A scalar scale input: folded into the softmax when known at build time, else multiplied on the device.
bool host_scalar(Lower& L, int i, float& v) {
    if (!L.has(i)) {
        v = 1.f;
        return true;
    }
    Val& s = L.in(i);
    if (!s.host || s.host->numel() != 1) return false;
    v = float(s.host->f64(0));
    return true;
}

// The vector helpers below are internal to this file, so the ABI note GCC gives without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// 16 floats as one vector (GCC/Clang vector extension: one AVX-512 register, two AVX ones, four SSE ones).
typedef float v16 __attribute__((vector_size(64), aligned(4)));
typedef int32_t i16v __attribute__((vector_size(64), aligned(4)));
inline v16 load16(const float* p) {
    v16 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store16(float* p, v16 v) { std::memcpy(p, &v, sizeof v); }

// exp(x) for x <= 0 (softmax after subtracting the row max), 16 at a time: 2^k * p(r), r = x - k ln2 in
// [-ln2/2, ln2/2], degree-7 Taylor polynomial (relative error below 1e-7); exp(x < -87) = 0.
inline v16 exp16(v16 x) {
    const v16 lo = x < -87.0f ? v16{} - 87.0f : x;
    const v16 y = lo * 1.44269504f + 0.5f;
    v16 k = __builtin_convertvector(__builtin_convertvector(y, i16v), v16);
    k = k + __builtin_convertvector(k > y, v16);  // floor: truncation rounds negatives up; true is -1
    const v16 r = (lo - k * 0.693145752f) - k * 1.42860677e-6f;
    v16 p = r * (1.f / 5040) + 1.f / 720;
    p = p * r + 1.f / 120;
    p = p * r + 1.f / 24;
    p = p * r + 1.f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.f;
    p = p * r + 1.f;
    const i16v bits = (__builtin_convertvector(k, i16v) + 127) << 23;
    v16 two_k;
    std::memcpy(&two_k, &bits, sizeof bits);
    return x < -87.0f ? v16{} : p * two_k;
}

struct AttnParams {
    float scale;
};

// O rows r0..r0+NR of P V over value columns c0..c0+16*NJ (P rows in sc with stride Sp, V panel with stride Dvp).
template <int NR, int NJ>
void pv_block(const float* sc, int64_t Sp, const float* vp, int64_t Dvp, int64_t S, int64_t c0, v16 (&out)[4][4]) {
    v16 acc[NR][NJ] = {};
    for (int64_t s = 0; s < S; s++) {
        v16 v[NJ];
        for (int j = 0; j < NJ; j++) v[j] = load16(vp + s * Dvp + c0 + 16 * j);
        for (int r = 0; r < NR; r++) {
            const float p = sc[r * Sp + s];
            for (int j = 0; j < NJ; j++) acc[r][j] += p * v[j];
        }
    }
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < NJ; j++) out[r][j] = acc[r][j];
}

template <int NR>
void pv(const float* sc, int64_t Sp, const float* vp, int64_t Dvp, int64_t S, int64_t c0, int nj, v16 (&out)[4][4]) {
    switch (nj) {
        case 4: return pv_block<NR, 4>(sc, Sp, vp, Dvp, S, c0, out);
        case 3: return pv_block<NR, 3>(sc, Sp, vp, Dvp, S, c0, out);
        case 2: return pv_block<NR, 2>(sc, Sp, vp, Dvp, S, c0, out);
        default: return pv_block<NR, 1>(sc, Sp, vp, Dvp, S, c0, out);
    }
}

// Fused attention for the CPU. Q [B,T,H,D], K [B,S,H,D], V [B,S,H,Dv] (ggml [D,H,T,B] ...) -> O [B,H,T,Dv].
// Each work item is one (batch, head, block of 64 queries): K^T and V are copied once into 16-padded local
// panels, then per 8 queries the scores (broadcast-FMA, so a 40-wide head runs at full speed where ggml's
// dot-product sgemm does not), the softmax and P V stay in cache; the T x S score matrix is never written out.
void attention_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const float scale = static_cast<const AttnParams*>(ud)->scale;
    const ggml_tensor *qt = dst->src[0], *kt = dst->src[1], *vt = dst->src[2];
    const int64_t D = qt->ne[0], H = qt->ne[1], T = qt->ne[2], B = qt->ne[3];
    const int64_t S = kt->ne[2], Dv = vt->ne[0];
    const int64_t Sp = (S + 15) / 16 * 16, Dvp = (Dv + 15) / 16 * 16;
    constexpr int64_t QB = 64, R = 8;
    const int64_t nqb = (T + QB - 1) / QB, items = B * H * nqb, per = (items + nth - 1) / nth;
    const int64_t i0 = std::min(items, per * ith), i1 = std::min(items, i0 + per);
    std::vector<float> kT(size_t(D * Sp)), vp(size_t(S * Dvp)), sc(size_t(R * Sp));
    int64_t cached = -1;  // (b, h) whose panels are loaded
    const float* Q = static_cast<const float*>(qt->data);
    const float* K = static_cast<const float*>(kt->data);
    const float* V = static_cast<const float*>(vt->data);
    float* O = static_cast<float*>(dst->data);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t qb = it % nqb, bh = it / nqb, h = bh % H, b = bh / H;
        if (bh != cached) {
            std::fill(kT.begin(), kT.end(), 0.f);
            std::fill(vp.begin(), vp.end(), 0.f);
            for (int64_t s = 0; s < S; s++) {
                const float* kr = K + ((b * S + s) * H + h) * D;
                for (int64_t d = 0; d < D; d++) kT[size_t(d * Sp + s)] = kr[d];
                std::memcpy(&vp[size_t(s * Dvp)], V + ((b * S + s) * H + h) * Dv, sizeof(float) * size_t(Dv));
            }
            cached = bh;
        }
        for (int64_t t0 = qb * QB; t0 < std::min(T, qb * QB + QB); t0 += R) {
            const int64_t nr = std::min(R, T - t0);
            const float* qrow[R];
            for (int64_t r = 0; r < R; r++) qrow[r] = Q + ((b * T + t0 + std::min(r, nr - 1)) * H + h) * D;
            // scores = scale * Q K^T: 8 rows x 16 keys per step, one broadcast FMA per row and key vector
            for (int64_t s0 = 0; s0 < Sp; s0 += 16) {
                v16 acc[R] = {};
                for (int64_t d = 0; d < D; d++) {
                    const v16 kv = load16(&kT[size_t(d * Sp + s0)]);
                    for (int64_t r = 0; r < R; r++) acc[r] += qrow[r][d] * kv;
                }
                for (int64_t r = 0; r < R; r++) store16(&sc[size_t(r * Sp + s0)], acc[r] * scale);
            }
            // softmax over the S real keys of each row (padding keys get probability 0)
            for (int64_t r = 0; r < nr; r++) {
                float* row = &sc[size_t(r * Sp)];
                for (int64_t s = S; s < Sp; s++) row[s] = -INFINITY;
                v16 m = load16(row);
                for (int64_t s0 = 16; s0 < Sp; s0 += 16) {
                    const v16 x = load16(row + s0);
                    m = x > m ? x : m;
                }
                float mx = m[0];
                for (int l = 1; l < 16; l++) mx = std::max(mx, m[l]);
                v16 sum = {};
                for (int64_t s0 = 0; s0 < Sp; s0 += 16) {
                    const v16 e = exp16(load16(row + s0) - mx);
                    store16(row + s0, e);
                    sum += e;
                }
                double total = 0;
                for (int l = 0; l < 16; l++) total += double(sum[l]);
                const float inv = float(1.0 / total);
                for (int64_t s0 = 0; s0 < Sp; s0 += 16) store16(row + s0, load16(row + s0) * inv);
            }
            // O = P V, 4 rows x 64 value columns per pass
            for (int64_t r0 = 0; r0 < nr; r0 += 4) {
                const int64_t rn = std::min<int64_t>(4, nr - r0);
                for (int64_t c0 = 0; c0 < Dvp; c0 += 64) {
                    const int nj = int(std::min<int64_t>(64, Dvp - c0) / 16);
                    v16 out[4][4];
                    const float* p = &sc[size_t(r0 * Sp)];
                    if (rn == 4) pv<4>(p, Sp, vp.data(), Dvp, S, c0, nj, out);
                    else if (rn == 3) pv<3>(p, Sp, vp.data(), Dvp, S, c0, nj, out);
                    else if (rn == 2) pv<2>(p, Sp, vp.data(), Dvp, S, c0, nj, out);
                    else pv<1>(p, Sp, vp.data(), Dvp, S, c0, nj, out);
                    for (int64_t r = 0; r < rn; r++) {
                        float* orow = O + ((b * H + h) * T + t0 + r0 + r) * Dv;
                        for (int j = 0; j < nj; j++)
                            for (int l = 0; l < 16 && c0 + 16 * j + l < Dv; l++) orow[c0 + 16 * j + l] = out[r][j][l];
                    }
                }
            }
        }
    }
}

}  // namespace

// onnx2ggml.Attention(Q, K, V [B, T, H, D], sq, sk) -> [B, H, Tq, Dv]: fuse_attention.
void lower_AttentionFused(Lower& L) {
    const Shape &qs = L.shape(0), &ks = L.shape(1), &vs = L.shape(2);
    if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || qs[0] != ks[0] || ks[0] != vs[0] || qs[2] != ks[2] ||
        ks[2] != vs[2] || qs[3] != ks[3] || ks[1] != vs[1])
        L.error("fused attention: Q, K, V shapes do not match");
    float scale = 1.f, f;
    ggml_tensor* q = L.t(0);  // ggml [D, H, Tq, B]
    ggml_tensor* k = L.t(1);
    for (int i : {3, 4}) {
        if (host_scalar(L, i, f)) {
            scale *= f;
        } else {
            ggml_tensor*& side = i == 3 ? q : k;
            ggml_tensor* s = L.t(i);
            if (s->type != GGML_TYPE_F32) s = ggml_cast(L.ctx, s, GGML_TYPE_F32);
            side = ggml_mul(L.ctx, L.cont(side), s);
        }
    }
    if (L.b.weights.native_cpu && getenv("ONNX2GGML_GGML_ATTENTION") == nullptr) {
        ggml_tensor* args[3] = {L.cont(q), L.cont(k), L.cont(L.t(2))};
        ggml_tensor* o = ggml_custom_4d(L.ctx, GGML_TYPE_F32, vs[3], qs[1], qs[2], qs[0], args, 3, attention_kernel,
                                        GGML_N_TASKS_MAX, keep_params(AttnParams{scale}));
        L.b.kernel[o] = "attention";
        return L.out(0, o, L.dtype(0), 4);
    }
    q = ggml_cont(L.ctx, ggml_permute(L.ctx, q, 0, 2, 1, 3));                    // [D, Tq, H, B]
    k = ggml_cont(L.ctx, ggml_permute(L.ctx, k, 0, 2, 1, 3));                    // [D, Tk, H, B]
    ggml_tensor* vt = ggml_cont(L.ctx, ggml_permute(L.ctx, L.t(2), 1, 2, 0, 3));  // [Tk, Dv, H, B]
    ggml_tensor* kq = mul_mat(L, k, q);                                          // [Tk, Tq, H, B]
    kq = ggml_soft_max_ext(L.ctx, kq, nullptr, scale, 0.0f);
    L.out(0, mul_mat(L, vt, kq), L.dtype(0), 4);  // [Dv, Tq, H, B] = ONNX [B, H, Tq, Dv]
}

}  // namespace onnx2ggml
