// Op library: resampling (see include/onnx2ggml/ops/resize.h).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/grid_sample.h"
#include "lib/host_util.h"
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

// Source taps of one output index along one dim: T indices (-1: the extrapolation value) and weights.
struct Taps {
    int T;
    std::vector<int64_t> idx;
    std::vector<double> wts;
    bool any_extrap = false;
};

Taps taps(const ResizeParams& p, int64_t in, int64_t on, double sc, double rs, double re) {
    Taps r;
    r.T = p.mode == 0 ? 1 : p.mode == 1 ? 2 : 4;
    const int T = r.T;
    // A hostile size can ask for a table far past memory (std::length_error escaped; found by tests/fuzz).
    onnx2ggml::check_host_size({on, int64_t(T)}, sizeof(int64_t) + sizeof(double), "resize: the interpolation table");
    r.idx.resize(size_t(on * T));
    r.wts.resize(size_t(on * T));
    for (int64_t o = 0; o < on; o++) {
        double c;
        // float arithmetic, as the reference implementations use, so ties round the same way
        const float sf = float(sc);
        switch (p.coord) {
            case 0: c = double((float(o) + 0.5f) / sf - 0.5f); break;
            case 1: c = on > 1 ? double((float(o) + 0.5f) / sf - 0.5f) : 0.0; break;
            case 2: c = on == 1 ? 0.0 : double(o) * double(in - 1) / double(on - 1); break;
            case 3: c = double(float(o) / sf); break;
            case 4: c = double((float(o) + 0.5f) / sf); break;
            case 5: {
                const double adj = double(on) / (sc * double(in));
                const double center = double(in) / 2.0, off = center * (1 - adj);
                c = off + (double(o) + 0.5) / sc - 0.5;
                break;
            }
            case 6:
                c = on > 1 ? rs * double(in - 1) + double(o) * (re - rs) * double(in - 1) / double(on - 1)
                           : 0.5 * (rs + re) * double(in - 1);
                if (c < 0 || c > double(in - 1)) {
                    for (int t = 0; t < T; t++) {
                        r.idx[size_t(o * T + t)] = -1;
                        r.wts[size_t(o * T + t)] = t == 0 ? 1.0 : 0.0;
                    }
                    r.any_extrap = true;
                    continue;
                }
                break;
            default: throw OpError("resize: coordinate transformation " + std::to_string(p.coord) + " (0 to 6)");
        }
        if (p.mode == 0) {
            double n;
            if (p.nearest == 1) n = std::floor(c + 0.5);
            else if (p.nearest == 2) n = std::floor(c);
            else if (p.nearest == 3) n = std::ceil(c);
            else n = (c - std::floor(c) == 0.5) ? std::floor(c) : std::round(c);  // round_prefer_floor
            r.idx[size_t(o)] = std::clamp<int64_t>(int64_t(n), 0, in - 1);
            r.wts[size_t(o)] = 1.0;
        } else if (p.mode == 1) {
            const double cc = std::clamp(c, 0.0, double(in - 1));
            const int64_t i0 = int64_t(std::floor(cc)), i1 = std::min(i0 + 1, in - 1);
            const double f = cc - double(i0);
            r.idx[size_t(o * 2)] = i0;
            r.idx[size_t(o * 2 + 1)] = i1;
            r.wts[size_t(o * 2)] = 1 - f;
            r.wts[size_t(o * 2 + 1)] = f;
        } else {
            const int64_t i0 = int64_t(std::floor(c));
            const double f = c - double(i0), A = p.cubic_a;
            auto k = [A](double t) {
                t = std::fabs(t);
                if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
                if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
                return 0.0;
            };
            double cw[4], sum = 0;
            for (int t = 0; t < 4; t++) {
                const int64_t src = i0 - 1 + t;
                cw[t] = k(f + 1 - t);
                if (p.exclude_outside && (src < 0 || src >= in)) cw[t] = 0;
                sum += cw[t];
                r.idx[size_t(o * 4 + t)] = std::clamp<int64_t>(src, 0, in - 1);
            }
            for (int t = 0; t < 4; t++) r.wts[size_t(o * 4 + t)] = p.exclude_outside ? cw[t] / sum : cw[t];
        }
    }
    return r;
}

// A [1, n] F32 constant from doubles.
ggml_tensor* row_constant(Ctx& ctx, const std::vector<double>& v) {
    const int64_t ne[4] = {1, int64_t(v.size()), 1, 1};
    return ctx.constant_f32(ne, std::vector<float>(v.begin(), v.end()));
}

// Resizes ggml dim d of x (sizes cur) to `on` by gathering each tap along d and blending: sum_t w_t * x[idx_t],
// with the extrapolation value where a tap falls outside (tf_crop_and_resize).
ggml_tensor* blend_taps(Ctx& ctx, ggml_tensor* x, const int64_t cur[4], int d, int64_t on, const Taps& tp,
                        float extrapolation) {
    const int64_t in = cur[d];
    const int T = tp.T;
    // Gather each tap along dim d and blend: sum_t w_t * x[idx_t]
    int64_t inner = 1, outer = 1;
    for (int i = 0; i < d; i++) inner *= cur[i];
    for (int i = d + 1; i < 4; i++) outer *= cur[i];
    ggml_tensor* acc = nullptr;
    for (int t = 0; t < T; t++) {
        std::vector<int32_t> ti(size_t(outer * on));
        std::vector<double> tw(static_cast<size_t>(on));
        bool unit = true;
        for (int64_t o = 0; o < on; o++) {
            tw[size_t(o)] = tp.wts[size_t(o * T + t)];
            unit &= tw[size_t(o)] == 1.0;
        }
        for (int64_t oo = 0; oo < outer; oo++)
            for (int64_t o = 0; o < on; o++)
                ti[size_t(oo * on + o)] = int32_t(std::max<int64_t>(0, tp.idx[size_t(o * T + t)]));
        ggml_tensor* xr = ggml_reshape_3d(ctx, cont(ctx, x), inner, in, outer);
        const int64_t ine[4] = {on, outer, 1, 1};
        ggml_tensor* idx = ctx.constant(GGML_TYPE_I32, ine, ti.data(), ti.size() * sizeof(int32_t));
        ggml_tensor* g = ggml_get_rows(ctx, xr, idx);  // [inner, on, outer]
        if (!unit) g = ggml_mul(ctx, g, row_constant(ctx, tw));
        acc = acc ? ggml_add(ctx, acc, g) : g;
    }
    if (tp.any_extrap) {
        std::vector<double> mask(static_cast<size_t>(on)), fill(static_cast<size_t>(on));
        for (int64_t o = 0; o < on; o++) {
            const bool ex = tp.idx[size_t(o * T)] < 0;
            mask[size_t(o)] = ex ? 0.0 : 1.0;
            fill[size_t(o)] = ex ? double(extrapolation) : 0.0;
        }
        acc = ggml_mul(ctx, acc, row_constant(ctx, mask));
        acc = ggml_add(ctx, acc, row_constant(ctx, fill));
    }
    return acc;
}

}  // namespace

ggml_tensor* resize(Ctx& ctx, ggml_tensor* x, const Ints& sizes, const ResizeParams& p) {
    if (p.mode < 0 || p.mode > 2) throw OpError("resize: mode " + std::to_string(p.mode) + " (0 to 2)");
    const size_t n = p.dims.size();
    if (!sizes.empty() ? sizes.size() != n : p.scales.size() != n)
        throw OpError("resize: " + std::to_string(sizes.empty() ? p.scales.size() : sizes.size()) +
                      " scales/sizes for " + std::to_string(n) + " dims");
    if (!p.roi.empty() && p.roi.size() != 2 * n)
        throw OpError("resize: roi has " + std::to_string(p.roi.size()) + " values for " + std::to_string(n) + " dims");
    double scales[4] = {1, 1, 1, 1}, rs[4] = {0, 0, 0, 0}, re[4] = {1, 1, 1, 1};
    int64_t os[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    bool listed[4] = {false, false, false, false};
    for (size_t j = 0; j < n; j++) {
        const int64_t d = p.dims[j];
        if (d < 0 || d > 3) throw OpError("resize: dim " + std::to_string(d) + " is not a ggml dim");
        listed[d] = true;
        if (!p.roi.empty()) {
            rs[d] = p.roi[j];
            re[d] = p.roi[j + n];
        }
    }
    if (!sizes.empty() && p.aspect != 0) {  // one scale for every listed dim
        double sc = p.aspect == 1 ? 1e300 : 0;
        for (size_t j = 0; j < n; j++) {
            const double v = double(sizes[j]) / double(x->ne[p.dims[j]]);
            sc = p.aspect == 1 ? std::min(sc, v) : std::max(sc, v);
        }
        for (size_t j = 0; j < n; j++) {
            const int64_t d = p.dims[j];
            scales[d] = sc;
            os[d] = int64_t(std::nearbyint(double(x->ne[d]) * sc));
        }
    } else if (!sizes.empty()) {
        for (size_t j = 0; j < n; j++) {
            const int64_t d = p.dims[j];
            os[d] = sizes[j];
            scales[d] = double(sizes[j]) / double(x->ne[d]);
        }
    } else {
        for (size_t j = 0; j < n; j++) {
            const int64_t d = p.dims[j];
            scales[d] = double(p.scales[j]);
            const double o = std::floor(double(x->ne[d]) * double(p.scales[j]));
            // A hostile scale (NaN, inf, 1e30) must not reach the int64 conversion (UB; found by tests/fuzz).
            if (!(std::fabs(o) <= 1e12)) throw OpError("resize: scale " + std::to_string(p.scales[j]) + " out of range");
            os[d] = int64_t(o);
        }
    }
    int64_t cur[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    for (int d = 3; d >= 0; d--) {  // ONNX axis order: outermost first
        if (!listed[d] || (os[d] == cur[d] && scales[d] == 1.0 && p.coord != 6)) continue;
        const int64_t in = cur[d], on = os[d];
        if (on < 0) throw OpError("resize: output size " + std::to_string(on) + " along dim " + std::to_string(d));
        // Nothing to interpolate from: an empty axis cannot grow (the tap table would index past it).
        if (in == 0 && on > 0)
            throw OpError("resize: dim " + std::to_string(d) + " is empty and cannot be resized to " + std::to_string(on));
        const Taps tp = taps(p, in, on, scales[d], rs[d], re[d]);
        const int T = tp.T;
        int64_t ns[4] = {cur[0], cur[1], cur[2], cur[3]};
        ns[d] = on;
        // Integer nearest upscaling (SD's 2x Upsample) is ggml's own nearest interpolation.
        bool integer_nearest = T == 1 && !tp.any_extrap && in > 0 && on % in == 0;
        for (int64_t o = 0; integer_nearest && o < on; o++) integer_nearest = tp.idx[size_t(o)] == o / (on / in);
        if (integer_nearest) {
            x = ggml_interpolate(ctx, cont(ctx, x), ns[0], ns[1], ns[2], ns[3], GGML_SCALE_MODE_NEAREST);
            for (int i = 0; i < 4; i++) cur[i] = ns[i];
            continue;
        }
        x = reshape_ne(ctx, blend_taps(ctx, x, cur, d, on, tp, p.extrapolation), ns);
        for (int i = 0; i < 4; i++) cur[i] = ns[i];
    }
    return x;
}

ggml_tensor* grid_sample(Ctx& ctx, ggml_tensor* x, ggml_tensor* grid, const GridSampleParams& p) {
    const int k = p.spatial;
    if (k < 1 || k > 3) throw OpError("grid_sample: " + std::to_string(k) + " spatial dims (1 to 3)");
    if (grid->ne[0] != k)
        throw OpError("grid_sample: grid's last dim is " + std::to_string(grid->ne[0]) + ", not " + std::to_string(k));
    GridP g;
    g.mode = p.mode == 1 ? GsMode::Nearest : p.mode == 2 ? GsMode::Cubic : GsMode::Linear;
    g.pad = p.padding == 1 ? GsPad::Border : p.padding == 2 ? GsPad::Reflection : GsPad::Zeros;
    g.align = p.align_corners;
    // ONNX x [N, C, in...] is ggml [in reversed, C, N]; grid [N, out..., k] is [k, out reversed, N]. With three
    // spatial dims ggml folds N into C (x) and into the first output dim (grid).
    for (int i = k - 1; i >= 0; i--) g.in_sp.push_back(x->ne[i]);
    for (int i = k; i >= 1; i--) g.out_sp.push_back(grid->ne[i]);
    if (k < 3) {
        g.C = x->ne[k];
        g.N = x->ne[k + 1];
        if (grid->ne[k + 1] != g.N) throw OpError("grid_sample: grid and input batch differ");
    } else {
        g.N = p.batch;
        if (g.N <= 0 || x->ne[3] % g.N || grid->ne[3] % g.N) throw OpError("grid_sample: batch does not divide");
        g.C = x->ne[3] / g.N;
        g.out_sp[0] = grid->ne[3] / g.N;
    }
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < k; i++) ne[i] = g.out_sp[size_t(k - 1 - i)];
    if (k < 3) {
        ne[k] = g.C;
        ne[k + 1] = g.N;
    } else ne[3] = g.C * g.N;
    return grid_sample_kernel(ctx, f32_cont(ctx, x), f32_cont(ctx, grid), g, ne);
}

ggml_tensor* affine_grid(Ctx& ctx, ggml_tensor* theta, const Ints& size, const AffineGridParams& p) {
    if (size.size() != 4 && size.size() != 5)
        throw OpError("affine_grid: size has " + std::to_string(size.size()) + " elements (4 or 5)");
    const int k = int(size.size()) - 2;
    const int64_t N = size[0];
    if (theta->ne[0] != k + 1 || theta->ne[1] != k || theta->ne[2] != N || theta->ne[3] != 1)
        throw OpError("affine_grid: theta is not [N, " + std::to_string(k) + ", " + std::to_string(k + 1) + "]");
    const std::vector<int64_t> sp(size.begin() + 2, size.end());
    // Checked before any tensor is made: the output [N, spatial..., k] must fit in memory.
    Shape os = {N};
    os.insert(os.end(), sp.begin(), sp.end());
    os.push_back(k);
    onnx2ggml::check_host_size(os, sizeof(float), "affine_grid: the grid");
    int64_t P = 1;
    for (int64_t d : sp) P *= d;
    // Homogeneous base grid [k+1, W, H(, D)]: (x, y[, z], 1), x along the last spatial dim. It is made on the
    // device from one coordinate row per axis, so a large grid costs no host table (a 12M-point grid took
    // seconds and 141 MB on the host).
    auto coord = [&](int64_t i, int64_t d) {
        if (p.align_corners) return d == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(d - 1);
        const double step = 2.0 / double(d);
        return -1.0 + step / 2 + step * double(i);
    };
    int64_t full[4] = {1, 1, 1, 1};
    for (int i = 0; i < k; i++) full[i + 1] = sp[size_t(k - 1 - i)];
    ggml_tensor* bg = nullptr;
    for (int i = 0; i <= k; i++) {
        int64_t ne[4] = {1, 1, 1, 1};
        std::vector<float> v(1, 1.0f);  // the homogeneous 1
        if (i < k) {
            const int64_t d = full[i + 1];
            ne[i + 1] = std::max<int64_t>(d, 1);  // an empty axis: one value, repeated to none
            v.resize(size_t(ne[i + 1]));
            for (int64_t j = 0; j < d; j++) v[size_t(j)] = float(coord(j, d));
        }
        ggml_tensor* c = ggml_repeat_4d(ctx, ctx.constant_f32(ne, v), 1, full[1], full[2], full[3]);
        bg = bg ? ggml_concat(ctx, bg, c, 0) : c;
    }
    bg = ggml_repeat_4d(ctx, ggml_reshape_3d(ctx, bg, k + 1, P, 1), k + 1, P, N, 1);
    ggml_tensor* y = device_mul_mat(ctx, f32_cont(ctx, theta), bg);  // [k, P, N]
    // ONNX [N, spatial..., k]; rank 5 folds N into the first spatial dim.
    int64_t ne[4] = {k, 1, 1, 1};
    for (int i = 0; i < k; i++) ne[std::min(i + 1, 3)] *= sp[size_t(k - 1 - i)];
    ne[std::min(k + 1, 3)] *= N;
    return reshape_ne(ctx, y, ne);
}

}  // namespace o2g
