// 2-D max pooling (see max_pool.h): one (image, channel) plane per work item. Each output row first takes the
// max of its kernel rows (contiguous: vectorized), then of the column taps in that one row, the interior columns
// without bounds checks, 8 at a time for strides 1 and 2. `v > m ? v : m` everywhere: a NaN input never wins, in
// either order. Global average pooling (mean_rows): each plane summed in vector lanes.
#include "kernels/isa.h"
#include "kernels/max_pool.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/custom.h"
#include "kernels/vec8.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

constexpr int64_t SLACK = 16;  // -inf columns after a row's maxima: the 8-wide loads may read past its end

// Interior output columns [xa, xb) of one row from the row maxima m, 8 at a time where the stride is 1 or 2;
// returns the first column not written.
int64_t max_cols8(const MaxPoolGeom& g, const float* m, float* yo, int64_t xa, int64_t xb) {
    if (g.sw != 1 && g.sw != 2) return xa;
    int64_t ox = xa;
    for (; ox + 8 <= xb; ox += 8) {
        const float* t = m + ox * g.sw - g.pw;
        v8 a = v8{} - INFINITY;
        for (int64_t kx = 0; kx < g.kw; kx++) {
            v8 v = load8(t + kx);
            if (g.sw == 2) v = __builtin_shufflevector(v, load8(t + kx + 8), 0, 2, 4, 6, 8, 10, 12, 14);
            a = v > a ? v : a;
        }
        std::memcpy(yo + ox, &a, sizeof a);
    }
    return ox;
}

void max_pool_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const MaxPoolGeom& g = *static_cast<const MaxPoolGeom*>(ud);
    const ggml_tensor* xt = dst->src[0];
    const int64_t W = xt->ne[0], H = xt->ne[1], planes = xt->ne[2] * xt->ne[3];
    // Output columns whose taps all lie inside the row: [xa, xb).
    int64_t xa = 0, xb = g.ow;
    while (xa < g.ow && xa * g.sw - g.pw < 0) xa++;
    while (xb > xa && (xb - 1) * g.sw - g.pw + g.kw > W) xb--;
    std::vector<float> vm(static_cast<size_t>(W + SLACK), -INFINITY);  // the max of the kernel rows, per column
    const WorkSpan s = work_span(planes, ith, nth);
    for (int64_t pl = s.b; pl < s.e; pl++) {
        const float* x = static_cast<const float*>(xt->data) + pl * W * H;
        float* y = static_cast<float*>(dst->data) + pl * g.ow * g.oh;
        for (int64_t oy = 0; oy < g.oh; oy++) {
            float* m = vm.data();
            std::fill(m, m + W, -INFINITY);
            for (int64_t ky = 0; ky < g.kh; ky++) {
                const int64_t iy = oy * g.sh - g.ph + ky;
                if (iy < 0 || iy >= H) continue;
                const float* row = x + iy * W;
                for (int64_t ix = 0; ix < W; ix++) m[ix] = row[ix] > m[ix] ? row[ix] : m[ix];
            }
            float* yo = y + oy * g.ow;
            for (int64_t ox = max_cols8(g, m, yo, xa, xb); ox < xb; ox++) {
                const float* t = m + ox * g.sw - g.pw;
                float a = -INFINITY;
                for (int64_t kx = 0; kx < g.kw; kx++) a = t[kx] > a ? t[kx] : a;
                yo[ox] = a;
            }
            for (int64_t ox = 0; ox < g.ow; ox++) {  // edge columns
                if (ox == xa) ox = std::max(xb, xa);
                if (ox >= g.ow) break;
                float a = -INFINITY;
                for (int64_t kx = 0; kx < g.kw; kx++) {
                    const int64_t ix = ox * g.sw - g.pw + kx;
                    if (ix >= 0 && ix < W && m[ix] > a) a = m[ix];
                }
                yo[ox] = a;
            }
        }
    }
}

void mean_rows(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* xt = dst->src[0];
    const int64_t S = xt->ne[0];
    const WorkSpan s = work_span(ggml_nrows(xt), ith, nth);
    for (int64_t r = s.b; r < s.e; r++) {
        const float* x = static_cast<const float*>(xt->data) + r * S;
        v8 a = {}, b = {};
        int64_t i = 0;
        for (; i + 16 <= S; i += 16) a += load8(x + i), b += load8(x + i + 8);
        a += b;
        float t = 0;
        for (int j = 0; j < 8; j++) t += a[j];
        for (; i < S; i++) t += x[i];
        static_cast<float*>(dst->data)[r] = t / float(S);
    }
}

}  // namespace

ggml_tensor* mean_rows_kernel(Ctx& ctx, ggml_tensor* x) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, 1, x->ne[1], x->ne[2], x->ne[3], args, 1, mean_rows,
                                    GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "mean_rows");
    return y;
}

ggml_tensor* max_pool2d_kernel(Ctx& ctx, ggml_tensor* x, const MaxPoolGeom& g) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, g.ow, g.oh, x->ne[2], x->ne[3], args, 1, max_pool_kernel,
                                    GGML_N_TASKS_MAX, keep_params(g));
    ctx.label(y, "max_pool");
    return y;
}

O2G_ISA_END
}  // namespace o2g
