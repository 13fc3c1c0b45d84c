// Internal ops produced by fusion passes (src/passes): one lowering each, like any ONNX op.
#include <algorithm>
#include <cmath>

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
    q = ggml_cont(L.ctx, ggml_permute(L.ctx, q, 0, 2, 1, 3));                    // [D, Tq, H, B]
    k = ggml_cont(L.ctx, ggml_permute(L.ctx, k, 0, 2, 1, 3));                    // [D, Tk, H, B]
    ggml_tensor* vt = ggml_cont(L.ctx, ggml_permute(L.ctx, L.t(2), 1, 2, 0, 3));  // [Tk, Dv, H, B]
    ggml_tensor* kq = mul_mat(L, k, q);                                          // [Tk, Tq, H, B]
    kq = ggml_soft_max_ext(L.ctx, kq, nullptr, scale, 0.0f);
    L.out(0, mul_mat(L, vt, kq), L.dtype(0), 4);  // [Dv, Tq, H, B] = ONNX [B, H, Tq, Dv]
}

}  // namespace onnx2ggml
