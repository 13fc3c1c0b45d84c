// Ops not yet moved to their family file.
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

}

}  // namespace onnx2ggml
