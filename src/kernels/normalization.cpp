// Normalization CPU kernels: L1/L2 row normalization (LpNormalization) and LRN.
#include <algorithm>
#include <cmath>

#include "kernels/custom.h"
#include "kernels/normalization.h"

namespace o2g {

namespace {

void lp_rows_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const int p = *static_cast<const int*>(ud);
    const ggml_tensor* a = dst->src[0];
    const int64_t n = a->ne[0], rows = ggml_nrows(a);
    const int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        const float* x = static_cast<const float*>(a->data) + r * n;
        float* y = static_cast<float*>(dst->data) + r * n;
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += p == 1 ? std::fabs(double(x[i])) : double(x[i]) * x[i];
        if (p == 2) s = std::sqrt(s);
        for (int64_t i = 0; i < n; i++) y[i] = s == 0 ? 0.f : float(double(x[i]) / s);
    }
}

void lrn_compute(ggml_tensor* dst, const ggml_tensor* a, int ith, int nth, void* ud) {
    const LrnParams& p = *static_cast<const LrnParams*>(ud);
    int64_t HW = a->ne[0] * a->ne[1], C = a->ne[2], N = a->ne[3];
    int64_t c1 = (p.size - 1) / 2, c2 = (p.size - 1 + 1) / 2 + 1;  // floor((size-1)/2), ceil((size-1)/2) + 1
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t row = ith; row < N * C; row += nth) {
        int64_t n = row / C, c = row % C;
        int64_t b = std::max<int64_t>(0, c - c1), e = std::min<int64_t>(C, c + c2);
        for (int64_t i = 0; i < HW; i++) {
            double s = 0;
            for (int64_t cc = b; cc < e; cc++) {
                double v = x[(n * C + cc) * HW + i];
                s += v * v;
            }
            y[row * HW + i] = float(double(x[row * HW + i]) /
                                    std::pow(double(p.bias) + double(p.alpha) / double(p.size) * s, double(p.beta)));
        }
    }
}

}  // namespace

ggml_tensor* lp_norm_rows(Ctx& ctx, ggml_tensor* x, int p) {
    ggml_tensor* args[1] = {x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1, lp_rows_compute,
                          GGML_N_TASKS_MAX, keep_params(p));
}

ggml_tensor* lrn_kernel(Ctx& ctx, ggml_tensor* x, const LrnParams& p) {
    return ggml_map_custom1(ctx, x, lrn_compute, GGML_N_TASKS_MAX, keep_params(p));
}

}  // namespace o2g
