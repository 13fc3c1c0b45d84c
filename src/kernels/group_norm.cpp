// Group normalization CPU kernel (GroupNormalization and the fused GroupNorm+SiLU of diffusion models).
#include <algorithm>
#include <cmath>

#include "kernels/isa.h"
#include "kernels/custom.h"
#include "kernels/normalization.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

struct GroupNormKParams {
    int64_t groups;
    float eps;
};

// Sum of x[0, n) (SQ: of (x - m)^2) as float partial sums in 16 interleaved lanes over blocks of 4096 values,
// blocks and lanes added in double. One running float sum would be a serial chain of adds the compiler may not
// reorder (4 cycles a value); 16 independent lanes vectorize.
template <bool SQ>
double block_sum(const float* x, size_t n, float m) {
    double total = 0;
    for (size_t b = 0; b < n; b += 4096) {
        const size_t e = std::min(n, b + 4096);
        float acc[16] = {};
        size_t i = b;
        for (; i + 16 <= e; i += 16)
            for (int l = 0; l < 16; l++) {
                const float d = x[i + l] - m;
                acc[l] += SQ ? d * d : d;
            }
        for (; i < e; i++) {
            const float d = x[i] - m;
            total += SQ ? d * d : d;
        }
        for (int l = 0; l < 16; l++) total += double(acc[l]);
    }
    return total;
}

// x [S, C, N] contiguous, gamma/beta [C]: one work item per (group, image). Mean and variance are accumulated in
// double over two read passes (as ggml_group_norm does); the third pass writes the normalized, scaled output.
void group_norm_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const GroupNormKParams& p = *static_cast<const GroupNormKParams*>(ud);
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
        const float mean = float(block_sum<false>(x, len, 0.f) / double(len));
        const double sq = block_sum<true>(x, len, mean);
        const float rstd = float(1.0 / std::sqrt(sq / double(len) + double(p.eps)));
        for (int64_t c = 0; c < cg; c++) {
            const float a = rstd * gamma[grp * cg + c], b = beta[grp * cg + c] - mean * a;
            const float* xc = x + c * S;
            float* yc = y + c * S;
            for (int64_t i = 0; i < S; i++) yc[i] = xc[i] * a + b;
        }
    }
}

}  // namespace

ggml_tensor* group_norm_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* gamma, ggml_tensor* beta, int64_t groups,
                               float eps) {
    ggml_tensor* args[3] = {x, gamma, beta};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 3,
                                    group_norm_compute, GGML_N_TASKS_MAX, keep_params(GroupNormKParams{groups, eps}));
    ctx.label(y, "group_norm");
    return y;
}

O2G_ISA_END
}  // namespace o2g
