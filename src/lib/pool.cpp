// Op library: pooling (see include/onnx2ggml/ops/pool.h).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/custom.h"
#include "kernels/max_pool.h"
#include "kernels/window.h"
#include "lib/window.h"

namespace o2g {

namespace {

// Window sizes in ggml order (W, H, D); axes past the pooled dims are size 1 with a unit window. pend: padding
// at the end that the last window reaches (negative: a crop).
struct Win3 {
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
    int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0}, pend[3] = {0, 0, 0};
};

// 0 inside the input, -inf in its padding, over the padded extent P.
ggml_tensor* max_pad_mask(Ctx& ctx, const Win3& w, const int64_t P[3]) {
    std::vector<float> m(size_t(P[0] * P[1] * P[2]));
    for (int64_t z = 0; z < P[2]; z++)
        for (int64_t y = 0; y < P[1]; y++)
            for (int64_t xx = 0; xx < P[0]; xx++) {
                const int64_t iz = z - w.pb[2], iy = y - w.pb[1], ix = xx - w.pb[0];
                const bool inside = iz >= 0 && iz < w.in[2] && iy >= 0 && iy < w.in[1] && ix >= 0 && ix < w.in[0];
                m[size_t((z * P[1] + y) * P[0] + xx)] = inside ? 0.0f : -INFINITY;
            }
    const int64_t ne[4] = {P[0], P[1], P[2], 1};
    return ctx.constant_f32(ne, m);
}

// The pool divided by the full window; this rescales each output by the ONNX divisor (taps in the counted range).
ggml_tensor* avg_rescale(Ctx& ctx, const Win3& w, bool count_include_pad) {
    auto count = [&](int64_t o, int i) {
        const int64_t lo = count_include_pad ? -w.pb[i] : 0, hi = count_include_pad ? w.in[i] + w.pe[i] : w.in[i];
        int64_t c = 0;
        for (int64_t t = 0; t < w.k[i]; t++) {
            const int64_t pos = o * w.s[i] - w.pb[i] + t * w.d[i];
            c += pos >= lo && pos < hi;
        }
        return c;
    };
    const int64_t KK = w.k[0] * w.k[1] * w.k[2];
    std::vector<float> m(size_t(w.out[0] * w.out[1] * w.out[2]));
    for (int64_t z = 0; z < w.out[2]; z++)
        for (int64_t yy = 0; yy < w.out[1]; yy++)
            for (int64_t xx = 0; xx < w.out[0]; xx++) {
                const int64_t c = count(z, 2) * count(yy, 1) * count(xx, 0);
                m[size_t((z * w.out[1] + yy) * w.out[0] + xx)] = float(double(KK) / double(std::max<int64_t>(c, 1)));
            }
    const int64_t ne[4] = {w.out[0], w.out[1], w.out[2], 1};
    return ctx.constant_f32(ne, m);
}

// 3-D or dilated pooling, which ggml's pools cannot do: the (padded) input as [W, H, D, B] (1-D and 2-D inputs with
// size-1 dims added, N*C in B); undilated windows pooled one plane then one axis at a time, dilated ones gathered by
// an F32 ggml_im2col_3d and each reduced by a ggml pool over its row.
ggml_tensor* pool_im2col(Ctx& ctx, ggml_tensor* x, const PoolParams& p, bool is_max) {
    const WindowGeometry g =
        conv_geometry(spatial_sizes(x, p.dims), p.kernel, p.auto_pad, p.pads, p.strides, p.dilations, p.ceil_mode);
    const int64_t ne_in[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    int64_t B = 1;
    for (int i = p.dims; i < 4; i++) B *= x->ne[i];
    Win3 w;
    for (int i = 0; i < p.dims; i++) {
        const size_t a = size_t(p.dims - 1 - i);
        w.in[i] = g.in[a], w.out[i] = g.out[a], w.k[i] = g.kernel[a], w.s[i] = g.strides[a], w.d[i] = g.dilations[a];
        w.pb[i] = g.pad_begin[a], w.pe[i] = g.pad_end[a];
        w.pend[i] = (w.out[i] - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - w.in[i] - w.pb[i];  // negative: a crop
    }
    const int64_t *in = w.in, *out = w.out, *k = w.k, *s = w.s, *d = w.d, *pb = w.pb, *pend = w.pend;
    x = ggml_reshape_4d(ctx, f32_cont(ctx, x), in[0], in[1], in[2], B);
    int64_t P[3];
    bool padded = false;
    for (int i = 0; i < 3; i++) {
        padded = padded || pb[i] || pend[i] > 0;
        P[i] = in[i] + pb[i] + std::max<int64_t>(0, pend[i]);
    }
    if (padded || pend[0] || pend[1] || pend[2]) {
        int64_t crop[3];
        for (int i = 0; i < 3; i++) crop[i] = std::min<int64_t>(0, pend[i]);
        x = ggml_pad_ext(ctx, x, int(pb[0]), int(std::max<int64_t>(0, pend[0])), int(pb[1]),
                         int(std::max<int64_t>(0, pend[1])), int(pb[2]), int(std::max<int64_t>(0, pend[2])), 0, 0);
        if (crop[0] || crop[1] || crop[2]) {  // windows never reach the cropped end
            for (int i = 0; i < 3; i++) P[i] += crop[i];
            x = ggml_cont(ctx, ggml_view_4d(ctx, x, P[0], P[1], P[2], B, x->nb[1], x->nb[2], x->nb[3], 0));
        }
    }
    if (is_max && padded) x = ggml_add(ctx, x, max_pad_mask(ctx, w, P));  // padding must never win a max
    const ggml_op_pool op = is_max ? GGML_OP_POOL_MAX : GGML_OP_POOL_AVG;
    const int64_t KK = k[0] * k[1] * k[2];
    ggml_tensor* y;
    if (d[0] == 1 && d[1] == 1 && d[2] == 1) {
        // Undilated: separable, a 2-D pool over (W, H), then a pool along D moved to dim 0 (an im2col would copy
        // every value KK times).
        y = ggml_pool_2d(ctx, ggml_reshape_3d(ctx, cont(ctx, x), P[0], P[1], P[2] * B), op, int(k[0]), int(k[1]),
                         int(s[0]), int(s[1]), 0, 0);  // [OW, OH, PD*B]
        if (k[2] > 1 || s[2] > 1) {
            y = ggml_cont(ctx, ggml_permute(ctx, ggml_reshape_3d(ctx, y, out[0] * out[1], P[2], B), 1, 0, 2, 3));
            y = ggml_pool_2d(ctx, y, op, int(k[2]), 1, int(s[2]), 1, 0, 0);  // [OD, OW*OH, B]
            y = ggml_cont(ctx, ggml_permute(ctx, y, 1, 0, 2, 3));
        }
    } else {
        // im2col reads only the kernel's shape from its first argument
        const int64_t kne[4] = {k[0], k[1], k[2], 1};
        ggml_tensor* shape = ctx.constant_f32(kne, std::vector<float>(size_t(KK), 0.0f));
        ggml_tensor* col = ggml_im2col_3d(ctx, shape, x, 1, int(s[0]), int(s[1]), int(s[2]), 0, 0, 0, int(d[0]),
                                          int(d[1]), int(d[2]), GGML_TYPE_F32);  // [KK, OW, OH, OD*B]
        y = ggml_pool_2d(ctx, ggml_reshape_2d(ctx, col, KK, out[0] * out[1] * out[2] * B), op, int(KK), 1, int(KK), 1,
                         0, 0);  // [1, OW*OH*OD*B]
    }
    y = ggml_reshape_4d(ctx, y, out[0], out[1], out[2], B);
    if (!is_max && padded) y = ggml_mul(ctx, y, avg_rescale(ctx, w, p.count_include_pad));
    // back to the input's layout: the pooled dims, then the kept ones
    int64_t ne[4] = {ne_in[0], ne_in[1], ne_in[2], ne_in[3]};
    for (int i = 0; i < p.dims; i++) ne[i] = out[i];
    return ggml_reshape_4d(ctx, y, ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* pool(Ctx& ctx, ggml_tensor* x, const PoolParams& p, bool is_max) {
    if (p.dims < 1 || p.dims > 3)
        throw OpError("only 1-D to 3-D pooling is supported, not " + std::to_string(p.dims) + "-D");
    // ggml's pools assert (ending the process) on an empty batch or channel dim.
    if (ggml_nelements(x) == 0) throw OpError("pooling of an empty tensor (a dim is 0) is not supported");
    bool dilated = false;
    for (int64_t d : p.dilations) dilated = dilated || d != 1;
    if (p.dims == 3 || dilated) return pool_im2col(ctx, x, p, is_max);
    WindowGeometry g =
        conv_geometry(spatial_sizes(x, p.dims), p.kernel, p.auto_pad, p.pads, p.strides, p.dilations, p.ceil_mode);
    Ints k = g.kernel, s = g.strides, pb = g.pad_begin, pe = g.pad_end, out = g.out, in_sp = g.in;
    // The physical end padding that makes ggml's valid pooling produce the ONNX output size (negative: a crop).
    Ints pend(out.size());
    for (size_t i = 0; i < out.size(); i++) pend[i] = (out[i] - 1) * s[i] + k[i] - in_sp[i] - pb[i];
    if (p.dims == 1) {  // [L, C, N] -> [L, 1, C, N]
        x = ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0], 1, x->ne[1], x->ne[2]);
        for (Ints* v : {&k, &s, &out, &in_sp}) v->insert(v->begin(), 1);
        for (Ints* v : {&pb, &pe, &pend}) v->insert(v->begin(), 0);
    }
    const int64_t W = in_sp[1], H = in_sp[0];
    if (is_max && ctx.cpu && x->type == GGML_TYPE_F32) {  // our kernel skips padded taps: no pad, mask or copy
        ggml_tensor* y = max_pool2d_kernel(ctx, x, MaxPoolGeom{k[1], k[0], s[1], s[0], pb[1], pb[0], out[1], out[0]});
        if (p.dims == 1) y = ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]);
        return y;
    }
    const bool padded = pb[0] || pb[1] || pend[0] || pend[1];
    if (padded) {
        x = pad_crop_2d(ctx, x, pb[1], pend[1], pb[0], pend[0]);
        if (is_max) {  // padding must never win a max
            const int64_t PW = W + pb[1] + pend[1], PH = H + pb[0] + pend[0];
            std::vector<float> m(size_t(PH * PW));
            for (int64_t y = 0; y < PH; y++)
                for (int64_t xx = 0; xx < PW; xx++) {
                    int64_t iy = y - pb[0], ix = xx - pb[1];
                    m[size_t(y * PW + xx)] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? 0.0f : -INFINITY;
                }
            const int64_t ne[4] = {PW, PH, 1, 1};
            x = ggml_add(ctx, x, ctx.constant_f32(ne, m));
        }
    }
    ggml_tensor* y = ggml_pool_2d(ctx, cont(ctx, x), is_max ? GGML_OP_POOL_MAX : GGML_OP_POOL_AVG, int(k[1]),
                                  int(k[0]), int(s[1]), int(s[0]), 0, 0);
    if (!is_max && padded) {
        // ggml divides by the full window; rescale by the ONNX divisor per output position.
        const int64_t OH = out[0], OW = out[1];
        std::vector<float> m(size_t(OH * OW));
        auto count = [&](int64_t o, size_t a, int64_t n) {
            int64_t st = o * s[a] - pb[a], en = st + k[a];
            int64_t lo = p.count_include_pad ? -pb[a] : 0, hi = p.count_include_pad ? n + pe[a] : n;
            return std::max<int64_t>(0, std::min(en, hi) - std::max(st, lo));
        };
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                int64_t c = count(oy, 0, H) * count(ox, 1, W);
                m[size_t(oy * OW + ox)] = float(double(k[0] * k[1]) / double(std::max<int64_t>(c, 1)));
            }
        const int64_t ne[4] = {OW, OH, 1, 1};
        y = ggml_mul(ctx, y, ctx.constant_f32(ne, m));
    }
    if (p.dims == 1) y = ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    return y;
}

// Each plane of the `dims` innermost dims reduced to one value, the outer dims kept.
ggml_tensor* global_pool(Ctx& ctx, ggml_tensor* x, int dims, bool is_max) {
    if (dims < 1 || dims > 3) throw OpError("global pooling over " + std::to_string(dims) + " dims is not supported");
    int64_t S = 1, R = 1, ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        if (i < dims) S *= x->ne[i];
        else R *= (ne[i] = x->ne[i]);
    }
    ggml_tensor* x2 = ggml_reshape_2d(ctx, cont(ctx, x), S, R);
    ggml_tensor* y = is_max                                ? custom_rows(ctx, x2, ReduceK::Max)  // [1, R]
                     : ctx.cpu && x2->type == GGML_TYPE_F32 ? mean_rows_kernel(ctx, x2)
                                                            : ggml_mean(ctx, x2);
    return ggml_reshape_4d(ctx, y, ne[0], ne[1], ne[2], ne[3]);
}

}  // namespace

ggml_tensor* max_pool(Ctx& ctx, ggml_tensor* x, const PoolParams& p) { return pool(ctx, x, p, true); }
ggml_tensor* avg_pool(Ctx& ctx, ggml_tensor* x, const PoolParams& p) { return pool(ctx, x, p, false); }

ggml_tensor* global_avg_pool(Ctx& ctx, ggml_tensor* x, int dims) { return global_pool(ctx, x, dims, false); }
ggml_tensor* global_max_pool(Ctx& ctx, ggml_tensor* x, int dims) { return global_pool(ctx, x, dims, true); }

ggml_tensor* lp_pool(Ctx& ctx, ggml_tensor* x, const LpPoolParams& p) {
    if (p.dims < 1 || p.dims > 3)
        throw OpError("only 1-D to 3-D pooling is supported, not " + std::to_string(p.dims) + "-D");
    if (!(p.p > 0)) throw OpError("p must be positive, not " + float_literal(p.p));
    WindowGeometry g =
        conv_geometry(spatial_sizes(x, p.dims), p.kernel, p.auto_pad, p.pads, p.strides, p.dilations, p.ceil_mode);
    LpKernelParams q{};
    q.p = double(p.p);
    q.outer = 1;
    for (int i = p.dims; i < 4; i++) q.outer *= x->ne[i];
    for (int i = 0; i < 3; i++) q.in[i] = q.out[i] = q.k[i] = q.s[i] = q.d[i] = 1;
    const int base = 3 - p.dims;
    int64_t ne[4];
    for (int i = 0; i < 4; i++) ne[i] = x->ne[i];
    for (int i = 0; i < p.dims; i++) {
        const size_t a = size_t(i);
        q.in[base + i] = g.in[a], q.out[base + i] = g.out[a], q.k[base + i] = g.kernel[a];
        q.s[base + i] = g.strides[a], q.d[base + i] = g.dilations[a], q.pb[base + i] = g.pad_begin[a];
        ne[p.dims - 1 - i] = g.out[a];
    }
    return lp_pool_kernel(ctx, f32_cont(ctx, x), q, ne);
}

ggml_tensor* global_lp_pool(Ctx& ctx, ggml_tensor* x, const GlobalLpPoolParams& p) {
    if (p.dims < 1 || p.dims > 3)
        throw OpError("global pooling over " + std::to_string(p.dims) + " dims is not supported");
    if (!(p.p > 0)) throw OpError("p must be positive, not " + float_literal(p.p));
    if (ggml_nelements(x) == 0) throw OpError("pooling of an empty tensor (a dim is 0) is not supported");
    int64_t S = 1, R = 1, ne[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        if (i < p.dims) S *= x->ne[i];
        else R *= (ne[i] = x->ne[i]);
    }
    ggml_tensor* a = ggml_abs(ctx, ggml_reshape_2d(ctx, f32_cont(ctx, x), S, R));
    // |x|^p as exp(p log|x|) (ggml has no pow); log(0) = -inf then gives 0^p = 0.
    ggml_tensor* xp = p.p == 1   ? a
                      : p.p == 2 ? ggml_sqr(ctx, a)
                                 : ggml_exp(ctx, ggml_scale(ctx, ggml_log(ctx, a), p.p));
    ggml_tensor* s = ggml_sum_rows(ctx, xp);  // [1, R]
    ggml_tensor* y = p.p == 1   ? s
                     : p.p == 2 ? ggml_sqrt(ctx, s)
                                : ggml_exp(ctx, ggml_scale(ctx, ggml_log(ctx, s), 1.0f / p.p));
    return ggml_reshape_4d(ctx, y, ne[0], ne[1], ne[2], ne[3]);
}

}  // namespace o2g
