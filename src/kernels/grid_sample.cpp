// GridSample CPU kernel: one output value per work element, coordinates and weights in double.
#include <algorithm>
#include <cmath>

#include "kernels/custom.h"
#include "kernels/grid_sample.h"

namespace o2g {

namespace {


float* fp(ggml_tensor* t) { return static_cast<float*>(t->data); }

int64_t numel(const Ints& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}


double gs_reflect(double x, double lo, double hi) {
    double rng = hi - lo;
    if (x < lo) {
        double dx = lo - x;
        int64_t n = int64_t(dx / rng);
        double r = dx - double(n) * rng;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t n = int64_t(dx / rng);
        double r = dx - double(n) * rng;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

void cubic_coeffs(double t, double c[4]) {
    const double A = -0.75;
    t = std::fabs(t);
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    c[0] = ((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A;
    c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
    c[2] = ((A + 2) * t2 - (A + 3)) * t2 * t2 + 1;
    c[3] = ((A * t3 - 5 * A) * t3 + 8 * A) * t3 - 4 * A;
}

// Long: the three sampling modes share one loop over output points and its padding rules.
void grid_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const GridP& p = *static_cast<const GridP*>(ud);
    const float* X = fp(dst->src[0]);
    const float* G = fp(dst->src[1]);
    float* Y = fp(dst);
    int k = int(p.in_sp.size());
    int64_t in_n = numel(p.in_sp), out_n = numel(p.out_sp);
    double lo[3], hi[3];
    for (int i = 0; i < k; i++) {
        double d = double(p.in_sp[size_t(i)]);
        lo[i] = p.align ? 0.0 : -0.5;
        hi[i] = p.align ? d - 1 : d - 0.5;
    }
    // Pixel index along dim i after the padding rule; -1 means zero.
    auto pix = [&](int i, int64_t idx) -> int64_t {
        int64_t d = p.in_sp[size_t(i)];
        switch (p.pad) {
            case GsPad::Zeros: return idx >= 0 && idx < d ? idx : -1;
            case GsPad::Border: return std::clamp<int64_t>(idx, 0, d - 1);
            case GsPad::Reflection: {
                int64_t r = int64_t(gs_reflect(double(idx), lo[i], hi[i]));
                return std::clamp<int64_t>(r, 0, d - 1);
            }
        }
        return -1;
    };
    WorkSpan s = work_span(p.N * p.C * out_n, ith, nth);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t o = e % out_n, nc = e / out_n, n = nc / p.C;
        const float* g = G + (n * out_n + o) * k;
        const float* x = X + nc * in_n;
        double c[3];
        for (int i = 0; i < k; i++) {
            double v = g[k - 1 - i], d = double(p.in_sp[size_t(i)]);
            c[i] = p.align ? (v + 1) / 2.0 * (d - 1) : ((v + 1) * d - 1) / 2.0;
            c[i] = double(float(c[i]));  // the reference keeps coordinates in float32
            if (p.mode == GsMode::Nearest) c[i] = std::nearbyint(c[i]);
            if (c[i] < lo[i] || c[i] > hi[i]) {
                if (p.pad == GsPad::Border) c[i] = std::clamp(c[i], 0.0, d - 1);
                else if (p.pad == GsPad::Reflection) c[i] = gs_reflect(c[i], lo[i], hi[i]);
            }
        }
        double out = 0;
        if (p.mode == GsMode::Nearest) {
            int64_t off = 0;
            bool zero = false;
            for (int i = 0; i < k; i++) {
                int64_t id = pix(i, int64_t(c[i]));
                if (id < 0) zero = true;
                off = off * p.in_sp[size_t(i)] + std::max<int64_t>(id, 0);
            }
            out = zero ? 0.0 : x[off];
        } else {
            int taps = p.mode == GsMode::Linear ? 2 : 4;
            int64_t base[3];
            double w[3][4];
            for (int i = 0; i < k; i++) {
                double f = std::floor(c[i]);
                double t = c[i] - f;
                if (p.mode == GsMode::Linear) {
                    base[i] = int64_t(f);
                    w[i][0] = 1 - t;
                    w[i][1] = t;
                } else {
                    base[i] = int64_t(f) - 1;
                    cubic_coeffs(t, w[i]);
                }
            }
            int64_t total = 1;
            for (int i = 0; i < k; i++) total *= taps;
            for (int64_t tap = 0; tap < total; tap++) {
                int64_t rem = tap, off = 0;
                double wt = 1;
                bool zero = false;
                int js[3];
                for (int i = k - 1; i >= 0; i--) {
                    js[i] = int(rem % taps);
                    rem /= taps;
                    wt *= w[i][js[i]];
                }
                for (int i = 0; i < k; i++) {
                    int64_t id = pix(i, base[i] + js[i]);
                    if (id < 0) zero = true;
                    off = off * p.in_sp[size_t(i)] + std::max<int64_t>(id, 0);
                }
                if (!zero) out += wt * x[off];
            }
        }
        Y[e] = float(out);
    }
}

}  // namespace

ggml_tensor* grid_sample_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* grid, const GridP& p, const int64_t ne[4]) {
    ggml_tensor* args[2] = {x, grid};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3], args, 2, grid_compute, GGML_N_TASKS_MAX,
                          keep_params(p));
}

}  // namespace o2g
