// Sliding-window CPU kernels (see window.h).
#include "kernels/window.h"

#include <algorithm>
#include <cmath>

#include "kernels/custom.h"

namespace o2g {

namespace {

void lppool_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ggml_tensor* a = dst->src[0];
    const LpKernelParams& q = *static_cast<const LpKernelParams*>(ud);
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    int64_t isz = q.in[0] * q.in[1] * q.in[2], osz = q.out[0] * q.out[1] * q.out[2];
    int64_t total = q.outer * osz, per = (total + nth - 1) / nth, b0 = std::min(total, per * ith),
            b1 = std::min(total, b0 + per);
    for (int64_t e = b0; e < b1; e++) {
        int64_t o = e / osz, r = e % osz;
        int64_t o2 = r % q.out[2], o1 = (r / q.out[2]) % q.out[1], o0 = r / (q.out[2] * q.out[1]);
        const float* xo = x + o * isz;
        double acc = 0;
        for (int64_t k0 = 0; k0 < q.k[0]; k0++) {
            int64_t i0 = o0 * q.s[0] - q.pb[0] + k0 * q.d[0];
            if (i0 < 0 || i0 >= q.in[0]) continue;
            for (int64_t k1 = 0; k1 < q.k[1]; k1++) {
                int64_t i1 = o1 * q.s[1] - q.pb[1] + k1 * q.d[1];
                if (i1 < 0 || i1 >= q.in[1]) continue;
                for (int64_t k2 = 0; k2 < q.k[2]; k2++) {
                    int64_t i2 = o2 * q.s[2] - q.pb[2] + k2 * q.d[2];
                    if (i2 < 0 || i2 >= q.in[2]) continue;
                    double v = std::fabs(double(xo[(i0 * q.in[1] + i1) * q.in[2] + i2]));
                    acc += q.p == 2 ? v * v : std::pow(v, q.p);
                }
            }
        }
        y[e] = float(q.p == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / q.p));
    }
}

void dcn_cols_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DeformParams& p = *static_cast<const DeformParams*>(ud);
    const float* X = static_cast<const float*>(dst->src[0]->data);
    const float* off = static_cast<const float*>(dst->src[1]->data);
    const float* msk = p.mask ? static_cast<const float*>(dst->src[2]->data) : nullptr;
    float* cols = static_cast<float*>(dst->data);
    int64_t P = p.oh * p.ow, KK = p.kh * p.kw, icg = p.ic / p.g, K = icg * KK, icpo = p.ic / p.offg;
    for (int64_t item = ith; item < p.n * p.ic; item += nth) {
        int64_t b = item / p.ic, c = item % p.ic, grp = c / icg, cl = c % icg, og = c / icpo;
        const float* img = X + (b * p.ic + c) * p.ih * p.iw;
        float* out = cols + (b * p.g + grp) * P * K;
        for (int64_t ki = 0; ki < p.kh; ki++)
            for (int64_t kj = 0; kj < p.kw; kj++) {
                int64_t kk = ki * p.kw + kj, oc_ch = (og * KK + kk) * 2;
                const float* offh = off + (b * p.offg * KK * 2 + oc_ch) * P;
                const float* offw = offh + P;
                const float* m = msk ? msk + (b * p.offg * KK + og * KK + kk) * P : nullptr;
                int64_t k = cl * KK + kk;
                for (int64_t i = 0; i < p.oh; i++)
                    for (int64_t j = 0; j < p.ow; j++) {
                        int64_t pp = i * p.ow + j;
                        double y = double(i * p.sh - p.ph + ki * p.dh) + offh[pp];
                        double x = double(j * p.sw - p.pw + kj * p.dw) + offw[pp];
                        double y0 = std::floor(y), x0 = std::floor(x), ly = y - y0, lx = x - x0, v = 0;
                        int64_t yi = int64_t(y0), xi = int64_t(x0);
                        auto at = [&](int64_t yy, int64_t xx) {
                            return yy >= 0 && yy < p.ih && xx >= 0 && xx < p.iw ? double(img[yy * p.iw + xx]) : 0.0;
                        };
                        if (std::isfinite(y) && std::isfinite(x))
                            v = (1 - ly) * ((1 - lx) * at(yi, xi) + lx * at(yi, xi + 1)) +
                                ly * ((1 - lx) * at(yi + 1, xi) + lx * at(yi + 1, xi + 1));
                        if (m) v *= m[pp];
                        out[pp * K + k] = float(v);
                    }
            }
    }
}

}  // namespace

ggml_tensor* lp_pool_kernel(Ctx& ctx, ggml_tensor* x, const LpKernelParams& q, const int64_t ne[4]) {
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3], args, 1, lppool_kernel,
                                    GGML_N_TASKS_MAX, keep_params(q));
    ctx.label(y, "lp_pool");
    return y;
}

ggml_tensor* deform_cols_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* offset, ggml_tensor* mask,
                                const DeformParams& p) {
    ggml_tensor* args[3] = {x, offset, mask};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, (p.ic / p.g) * p.kh * p.kw, p.oh * p.ow, p.g, p.n, args,
                                    mask ? 3 : 2, dcn_cols_kernel, GGML_N_TASKS_MAX, keep_params(p));
    ctx.label(y, "deform_im2col");
    return y;
}

}  // namespace o2g
