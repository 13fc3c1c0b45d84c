// LinearAttention CPU kernel: the recurrent state update and read-out, one work item per (batch, kv head).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/attention.h"
#include "kernels/custom.h"

namespace o2g {

namespace {

void linattn_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const LinAttnParams& p = *static_cast<const LinAttnParams*>(ud);
    const float* q = static_cast<const float*>(dst->src[0]->data);
    const float* k = static_cast<const float*>(dst->src[1]->data);
    const float* v = static_cast<const float*>(dst->src[2]->data);
    const float* s0 = p.i_state >= 0 ? static_cast<const float*>(dst->src[p.i_state]->data) : nullptr;
    const float* g = p.i_decay >= 0 ? static_cast<const float*>(dst->src[p.i_decay]->data) : nullptr;
    const float* be = p.i_beta >= 0 ? static_cast<const float*>(dst->src[p.i_beta]->data) : nullptr;
    float* out = static_cast<float*>(dst->data);                  // [B, T, Hq, Dv]
    float* st_out = out + p.B * p.T * p.Hq * p.Dv;                // [B, Hkv, Dk, Dv]
    const int64_t G = p.Hq / p.Hkv, Dk = p.Dk, Dv = p.Dv;
    std::vector<float> S(static_cast<size_t>(Dk * Dv)), vt(static_cast<size_t>(Dv)), ef(static_cast<size_t>(Dk));
    for (int64_t item = ith; item < p.B * p.Hkv; item += nth) {
        int64_t b = item / p.Hkv, h = item % p.Hkv;
        if (s0) std::memcpy(S.data(), s0 + item * Dk * Dv, size_t(Dk * Dv) * sizeof(float));
        else std::fill(S.begin(), S.end(), 0.f);
        for (int64_t t = 0; t < p.T; t++) {
            int64_t bt = b * p.T + t;
            const float* kt = k + (bt * p.Hkv + h) * Dk;
            const float* vv = v + (bt * p.Hkv + h) * Dv;
            if (p.gating) {
                if (p.decay_per_dim) {
                    const float* gt = g + (bt * p.Hkv + h) * Dk;
                    for (int64_t d = 0; d < Dk; d++) ef[size_t(d)] = std::exp(gt[d]);
                } else std::fill(ef.begin(), ef.end(), std::exp(g[bt * p.Hkv + h]));
                for (int64_t d = 0; d < Dk; d++)
                    for (int64_t m = 0; m < Dv; m++) S[size_t(d * Dv + m)] *= ef[size_t(d)];
            }
            std::copy(vv, vv + Dv, vt.begin());
            if (p.delta) {
                float bt_ = be[p.beta_per_head ? bt * p.Hkv + h : bt];
                for (int64_t m = 0; m < Dv; m++) {
                    float r = 0;
                    for (int64_t d = 0; d < Dk; d++) r += S[size_t(d * Dv + m)] * kt[d];
                    vt[size_t(m)] = bt_ * (vt[size_t(m)] - r);
                }
            }
            for (int64_t d = 0; d < Dk; d++)
                for (int64_t m = 0; m < Dv; m++) S[size_t(d * Dv + m)] += kt[d] * vt[size_t(m)];
            for (int64_t hq = h * G; hq < (h + 1) * G; hq++) {
                const float* qt = q + (bt * p.Hq + hq) * Dk;
                float* o = out + (bt * p.Hq + hq) * Dv;
                for (int64_t m = 0; m < Dv; m++) {
                    float acc = 0;
                    for (int64_t d = 0; d < Dk; d++) acc += qt[d] * S[size_t(d * Dv + m)];
                    o[m] = p.scale * acc;
                }
            }
        }
        std::memcpy(st_out + item * Dk * Dv, S.data(), size_t(Dk * Dv) * sizeof(float));
    }
}

}  // namespace

ggml_tensor* linear_attention_kernel(Ctx& ctx, const std::vector<ggml_tensor*>& args, const LinAttnParams& p) {
    const int64_t n_out = p.B * p.T * p.Hq * p.Dv, n_st = p.B * p.Hkv * p.Dk * p.Dv;
    std::vector<ggml_tensor*> a = args;
    return ggml_custom_4d(ctx, GGML_TYPE_F32, n_out + n_st, 1, 1, 1, a.data(), int(a.size()), linattn_compute,
                          GGML_N_TASKS_MAX, keep_params(p));
}

}  // namespace o2g
