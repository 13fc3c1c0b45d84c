// Depthwise convolution kernel: one (image, channel) plane per work item. Built once per x86-64 level
// (kernels/isa.h).
#include "kernels/isa.h"
#include "kernels/depthwise.h"

#include <algorithm>
#include <vector>

#include "kernels/custom.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

struct DwParams {
    int sw, sh, pw, ph;
};

// Depthwise convolution, one (image, channel) plane per work item: x [W, H, C, N], k [kW, kH, 1, C], bias [C]
// (optional) -> y [OW, OH, C, N]. Interior output columns run a branch-free loop the compiler vectorizes.
void depthwise_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DwParams& p = *static_cast<const DwParams*>(ud);
    const ggml_tensor *xt = dst->src[0], *kt = dst->src[1], *bt = dst->src[2];
    const int64_t W = xt->ne[0], H = xt->ne[1], C = xt->ne[2], KW = kt->ne[0], KH = kt->ne[1];
    const int64_t OW = dst->ne[0], OH = dst->ne[1], planes = C * dst->ne[3];
    const int64_t per = (planes + nth - 1) / nth, i0 = std::min(planes, per * ith), i1 = std::min(planes, i0 + per);
    // Output columns whose taps are all inside the row: [xa, xb).
    int64_t xa = 0, xb = OW;
    while (xa < OW && xa * p.sw - p.pw < 0) xa++;
    while (xb > xa && (xb - 1) * p.sw - p.pw + KW > W) xb--;
    std::vector<float> acc(static_cast<size_t>(OW));
    for (int64_t pl = i0; pl < i1; pl++) {
        const int64_t c = pl % C;
        const float* x = static_cast<const float*>(xt->data) + size_t(pl * H * W);
        const float* k = static_cast<const float*>(kt->data) + size_t(c * KH * KW);
        float* y = static_cast<float*>(dst->data) + size_t(pl * OH * OW);
        const float b = bt ? static_cast<const float*>(bt->data)[c] : 0.f;
        for (int64_t oy = 0; oy < OH; oy++) {
            std::fill(acc.begin(), acc.end(), b);
            for (int64_t ky = 0; ky < KH; ky++) {
                const int64_t iy = oy * p.sh - p.ph + ky;
                if (iy < 0 || iy >= H) continue;
                const float* row = x + iy * W;
                for (int64_t kx = 0; kx < KW; kx++) {
                    const float w = k[ky * KW + kx];
                    const float* src = row + kx - p.pw;
                    if (p.sw == 1)
                        for (int64_t ox = xa; ox < xb; ox++) acc[size_t(ox)] += w * src[ox];
                    else
                        for (int64_t ox = xa; ox < xb; ox++) acc[size_t(ox)] += w * src[ox * p.sw];
                    for (int64_t ox = 0; ox < OW; ox++) {  // edge columns
                        if (ox == xa) ox = std::max(xb, xa);
                        if (ox >= OW) break;
                        const int64_t ix = ox * p.sw - p.pw + kx;
                        if (ix >= 0 && ix < W) acc[size_t(ox)] += w * row[ix];
                    }
                }
            }
            std::copy(acc.begin(), acc.end(), y + oy * OW);
        }
    }
}

}  // namespace

ggml_tensor* conv2d_depthwise(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh, int pw,
                              int ph) {
    x = cont(ctx, x);
    k = cont(ctx, k);
    const int64_t OW = (x->ne[0] + 2 * pw - k->ne[0]) / sw + 1, OH = (x->ne[1] + 2 * ph - k->ne[1]) / sh + 1;
    ggml_tensor* args[3] = {x, k, bias};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, OW, OH, x->ne[2], x->ne[3], args, bias ? 3 : 2,
                                    depthwise_kernel, GGML_N_TASKS_MAX, keep_params(DwParams{sw, sh, pw, ph}));
    ctx.label(y, "depthwise");
    return y;
}

O2G_ISA_END
}  // namespace o2g
