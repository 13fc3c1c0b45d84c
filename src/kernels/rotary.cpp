// RotaryEmbedding CPU kernel: rotates value pairs of each head by cached cos/sin rows.
#include <algorithm>
#include <cmath>

#include "kernels/attention.h"
#include "kernels/custom.h"

namespace o2g {

namespace {

void rope_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RopeParams& p = *static_cast<const RopeParams*>(ud);
    const float* x = static_cast<const float*>(dst->src[0]->data);
    const float* cc = static_cast<const float*>(dst->src[1]->data);
    const float* sc = static_cast<const float*>(dst->src[2]->data);
    const ggml_tensor* pt = p.has_pos ? dst->src[3] : nullptr;
    float* y = static_cast<float*>(dst->data);
    int64_t half = p.rd / 2;
    for (int64_t v = ith; v < p.B * p.S * p.H; v += nth) {
        int64_t b = v / (p.S * p.H), s = (v / p.H) % p.S, h = v % p.H;
        int64_t off = (p.heads_first ? (b * p.H + h) * p.S + s : (b * p.S + s) * p.H + h) * p.D;
        int64_t row = b * p.S + s;  // cache row without position ids
        if (pt) {
            int64_t bs = b * p.S + s;
            row = pt->type == GGML_TYPE_I32 ? int64_t(static_cast<const int32_t*>(pt->data)[bs])
                                            : int64_t(static_cast<const float*>(pt->data)[bs]);
            if (row < 0 || row >= p.max_pos) {
                std::fill(y + off, y + off + p.D, NAN);
                continue;
            }
        }
        const float *c = cc + row * half, *sn = sc + row * half, *xi = x + off;
        float* yo = y + off;
        for (int64_t i = 0; i < half; i++) {
            int64_t i1 = p.interleaved ? 2 * i : i, i2 = p.interleaved ? 2 * i + 1 : i + half;
            float x1 = xi[i1], x2 = xi[i2];
            yo[i1] = c[i] * x1 - sn[i] * x2;
            yo[i2] = sn[i] * x1 + c[i] * x2;
        }
        for (int64_t i = p.rd; i < p.D; i++) yo[i] = xi[i];
    }
}

}  // namespace

ggml_tensor* rotary_kernel(Ctx& ctx, const std::vector<ggml_tensor*>& args, const RopeParams& p) {
    std::vector<ggml_tensor*> a = args;
    return ggml_custom_4d(ctx, GGML_TYPE_F32, a[0]->ne[0], a[0]->ne[1], a[0]->ne[2], a[0]->ne[3], a.data(),
                          int(a.size()), rope_compute, GGML_N_TASKS_MAX, keep_params(p));
}

}  // namespace o2g
