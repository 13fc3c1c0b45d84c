// More ops: GridSample, AffineGrid, MaxUnpool, Col2Im.
//
// Most float work runs as ggml custom CPU kernels over contiguous data; the kernels read ONNX shapes from their
// parameters, so they work for any rank (rank > 4 tensors are folded by shape_to_ne, which keeps row-major order).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

struct Span { int64_t b, e; };
Span split(int64_t n, int ith, int nth) {
    int64_t per = (n + nth - 1) / std::max(nth, 1);
    int64_t b = std::min(n, per * ith);
    return {b, std::min(n, b + per)};
}

const float* fp(const ggml_tensor* t) { return static_cast<const float*>(t->data); }
const int32_t* ip(const ggml_tensor* t) { return static_cast<const int32_t*>(t->data); }
float* fp(ggml_tensor* t) { return static_cast<float*>(t->data); }
int32_t* ip(ggml_tensor* t) { return static_cast<int32_t*>(t->data); }

ggml_tensor* as_f32(Lower& L, ggml_tensor* x) {
    x = L.cont(x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    return x;
}

// A custom kernel producing ONNX shape `os`; arguments are made contiguous.
ggml_tensor* kcall(Lower& L, ggml_type type, const Shape& os, std::vector<ggml_tensor*> args, ggml_custom_op_t fn,
                   void* ud, int ntasks = GGML_N_TASKS_MAX) {
    for (auto& a : args) a = L.cont(a);
    int64_t ne[4];
    shape_to_ne(os, ne);
    if (shape_numel(os) == 0) L.error("empty output; ggml cannot hold it");
    return ggml_custom_4d(L.ctx, type, ne[0], ne[1], ne[2], ne[3], args.data(), int(args.size()), fn, ntasks, ud);
}

std::vector<int64_t> ints_or(const Node& n, const char* name, size_t len, int64_t def) {
    auto v = n.get_ints(name);
    if (v.empty()) v.assign(len, def);
    return v;
}

// ---------------------------------------------------------------------------------------------------------
// Scatter: out = 0; out[off[k]] = x[k] (or += when add); off[k] < 0 skips.
struct ScatterP { bool add; };
void scatter_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    bool add = static_cast<const ScatterP*>(ud)->add;
    const ggml_tensor *x = dst->src[0], *o = dst->src[1];
    int64_t n = ggml_nelements(x);
    std::memset(dst->data, 0, ggml_nbytes(dst));
    for (int64_t k = 0; k < n; k++) {
        int32_t v = ip(o)[k];
        if (v < 0) continue;
        if (dst->type == GGML_TYPE_F32) fp(dst)[v] = add ? fp(dst)[v] + fp(x)[k] : fp(x)[k];
        else ip(dst)[v] = add ? ip(dst)[v] + ip(x)[k] : ip(x)[k];
    }
}

void scatter_out(Lower& L, int in, const Shape& os, const std::vector<int64_t>& offs, bool add) {
    DType dt = L.dtype(in);
    if (L.b.host_mode) {
        const HostTensor& x = L.h(in);
        HostTensor r = HostTensor::alloc(x.dtype, os);
        bool f = dtype_is_float(x.dtype);
        for (size_t k = 0; k < offs.size(); k++) {
            int64_t v = offs[k];
            if (v < 0) continue;
            if (f) r.set_f64(v, (add ? r.f64(v) : 0.0) + x.f64(int64_t(k)));
            else r.set_i64(v, (add ? r.i64(v) : 0) + x.i64(int64_t(k)));
        }
        L.out_host(0, r);
        return;
    }
    HostTensor oh = HostTensor::alloc(DType::INT32, {int64_t(offs.size())});
    for (size_t k = 0; k < offs.size(); k++) oh.set_i64(int64_t(k), offs[k]);
    ggml_tensor* x = L.cont(L.t(in));
    ggml_tensor* y = kcall(L, x->type, os, {x, L.constant(oh)}, scatter_kernel, keep_params(ScatterP{add}), 1);
    L.out_shape(0, y, dt, os);
}

// ---------------------------------------------------------------------------------------------------------
// GridSample
enum class GsMode { Linear, Nearest, Cubic };
enum class GsPad { Zeros, Border, Reflection };
struct GridP {
    GsMode mode;
    GsPad pad;
    bool align;
    int64_t N, C;
    Shape in_sp, out_sp;
};

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

void grid_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const GridP& p = *static_cast<const GridP*>(ud);
    const float* X = fp(dst->src[0]);
    const float* G = fp(dst->src[1]);
    float* Y = fp(dst);
    int k = int(p.in_sp.size());
    int64_t in_n = shape_numel(p.in_sp), out_n = shape_numel(p.out_sp);
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
    Span s = split(p.N * p.C * out_n, ith, nth);
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

// ---------------------------------------------------------------------------------------------------------
}  // namespace

// ============================================ lowerings ====================================================

// ---- GridSample (16, 20, 22) ----
void lower_GridSample(Lower& L) {
    const Shape& xs = L.shape(0);
    const Shape& gs = L.shape(1);
    int k = int(xs.size()) - 2;
    if (k < 1 || k > 3) L.error("only 1 to 3 spatial dimensions are supported");
    if (int(gs.size()) != k + 2 || gs[0] != xs[0] || gs.back() != k)
        L.error("grid shape " + shape_str(gs) + " does not match input " + shape_str(xs));
    if (L.opset < 20 && k != 2) L.error("GridSample before opset 20 takes 4-D input");
    GridP p;
    std::string mode = L.node.get_string("mode", L.opset >= 20 ? "linear" : "bilinear");
    if (mode == "bilinear" || mode == "linear") p.mode = GsMode::Linear;
    else if (mode == "nearest") p.mode = GsMode::Nearest;
    else if (mode == "bicubic" || mode == "cubic") p.mode = GsMode::Cubic;
    else L.error("unknown mode '" + mode + "'");
    std::string pad = L.node.get_string("padding_mode", "zeros");
    if (pad == "zeros") p.pad = GsPad::Zeros;
    else if (pad == "border") p.pad = GsPad::Border;
    else if (pad == "reflection") p.pad = GsPad::Reflection;
    else L.error("unknown padding_mode '" + pad + "'");
    p.align = L.node.get_int("align_corners", 0) != 0;
    p.N = xs[0];
    p.C = xs[1];
    p.in_sp.assign(xs.begin() + 2, xs.end());
    p.out_sp.assign(gs.begin() + 1, gs.end() - 1);
    Shape os = {xs[0], xs[1]};
    os.insert(os.end(), p.out_sp.begin(), p.out_sp.end());
    ggml_tensor* y = kcall(L, GGML_TYPE_F32, os, {as_f32(L, L.t(0)), as_f32(L, L.t(1))}, grid_kernel, keep_params(p));
    L.out_shape(0, y, L.dtype(0), os);
}

// ---- AffineGrid (20) ----
void lower_AffineGrid(Lower& L) {
    const Shape& ts = L.shape(0);
    auto size = L.ints(1);
    bool align = L.node.get_int("align_corners", 0) != 0;
    if (size.size() != 4 && size.size() != 5) L.error("size must have 4 or 5 elements");
    int k = int(size.size()) - 2;
    int64_t N = size[0];
    if (ts.size() != 3 || ts[0] != N || ts[1] != k || ts[2] != k + 1) L.error("theta must be [N, " + std::to_string(k) + ", " + std::to_string(k + 1) + "]");
    Shape sp(size.begin() + 2, size.end());
    int64_t P = shape_numel(sp);
    // Homogeneous base grid [P, k+1]: (x, y[, z], 1) with x along the last spatial dim.
    HostTensor base = HostTensor::alloc(DType::FLOAT, {P, int64_t(k + 1)});
    auto coord = [&](int64_t i, int64_t d) {
        if (align) return d == 1 ? -1.0 : -1.0 + 2.0 * double(i) / double(d - 1);
        double step = 2.0 / double(d);
        return -1.0 + step / 2 + step * double(i);
    };
    for (int64_t q = 0; q < P; q++) {
        int64_t rem = q;
        for (int i = k - 1; i >= 0; i--) {
            int64_t d = sp[size_t(i)], c = rem % d;
            rem /= d;
            base.set_f64(q * (k + 1) + (k - 1 - i), coord(c, d));
        }
        base.set_f64(q * (k + 1) + k, 1.0);
    }
    ggml_tensor* th = as_f32(L, L.t(0));                  // ggml [k+1, k, N]
    ggml_tensor* bg = L.constant(base);                   // ggml [k+1, P]
    bg = ggml_repeat(L.ctx, ggml_reshape_3d(L.ctx, bg, k + 1, P, 1), ggml_new_tensor_3d(L.ctx, GGML_TYPE_F32, k + 1, P, N));
    ggml_tensor* y = ggml_mul_mat(L.ctx, th, bg);          // [k, P, N]
    Shape os = {N};
    os.insert(os.end(), sp.begin(), sp.end());
    os.push_back(k);
    L.out_shape(0, reshape_to(L, y, os), L.dtype(0), os);
}

// ---- MaxUnpool (11) ----
void lower_MaxUnpool(Lower& L) {
    const Shape& xs = L.shape(0);
    const HostTensor& ind = L.h(1);
    if (xs.size() < 3) L.error("input must have rank >= 3");
    size_t n = xs.size() - 2;
    auto k = L.node.get_ints("kernel_shape");
    if (k.size() != n) L.error("kernel_shape has wrong length");
    auto s = ints_or(L.node, "strides", n, 1);
    auto pads = L.node.get_ints("pads");
    Shape os = {xs[0], xs[1]};
    for (size_t i = 0; i < n; i++) {
        int64_t pb = pads.empty() ? 0 : pads[i], pe = pads.empty() ? 0 : pads[i + n];
        os.push_back((xs[i + 2] - 1) * s[i] - pb - pe + k[i]);
    }
    Shape inferred = os;  // indices address this shape; output_shape pads it at the end of each dim
    if (L.has(2)) {
        auto o = L.ints(2);
        if (o.size() != xs.size()) L.error("output_shape has wrong length");
        os.assign(o.begin(), o.end());
        for (size_t i = 0; i < os.size(); i++)
            if (os[i] < inferred[i]) L.error("output_shape is smaller than the unpooled shape");
    }
    if (ind.numel() != shape_numel(xs)) L.error("indices must match the input's shape");
    int64_t total = shape_numel(inferred);
    auto ost = strides_of(os);
    std::vector<int64_t> offs(static_cast<size_t>(ind.numel()));
    for (int64_t i = 0; i < ind.numel(); i++) {
        int64_t v = ind.i64(i);
        if (v < 0 || v >= total) L.error("index out of range of the output");
        int64_t off = 0;
        for (size_t a = inferred.size(); a-- > 0;) {
            off += (v % inferred[a]) * ost[a];
            v /= inferred[a];
        }
        offs[size_t(i)] = off;
    }
    scatter_out(L, 0, os, offs, false);
}

// ---- Col2Im (18) ----
void lower_Col2Im(Lower& L) {
    const Shape& xs = L.shape(0);
    auto img = L.ints(1), blk = L.ints(2);
    size_t n = img.size();
    if (xs.size() != 3 || blk.size() != n || n == 0) L.error("input must be [N, C*prod(block), L] with matching shapes");
    auto d = ints_or(L.node, "dilations", n, 1), s = ints_or(L.node, "strides", n, 1);
    auto pads = L.node.get_ints("pads");
    if (pads.empty()) pads.assign(2 * n, 0);
    if (d.size() != n || s.size() != n || pads.size() != 2 * n) L.error("attribute lengths do not match");
    int64_t kb = 1;
    for (int64_t b : blk) kb *= b;
    if (xs[1] % kb) L.error("channel dim is not divisible by prod(block_shape)");
    int64_t N = xs[0], C = xs[1] / kb, Lc = xs[2];
    Shape nb(n);
    int64_t ltot = 1;
    for (size_t i = 0; i < n; i++) {
        nb[i] = (img[i] + pads[i] + pads[i + n] - d[i] * (blk[i] - 1) - 1) / s[i] + 1;
        ltot *= nb[i];
    }
    if (ltot != Lc) L.error("L does not match the number of blocks");
    Shape os = {N, C};
    os.insert(os.end(), img.begin(), img.end());
    int64_t in_img = 1;
    for (int64_t v : img) in_img *= v;
    std::vector<int64_t> offs(size_t(shape_numel(xs)));
    std::vector<int64_t> bc(n), lc(n);
    for (int64_t nn = 0; nn < N; nn++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t kk = 0; kk < kb; kk++) {
                int64_t rem = kk;
                for (size_t i = n; i-- > 0;) {
                    bc[i] = rem % blk[i];
                    rem /= blk[i];
                }
                for (int64_t l = 0; l < Lc; l++) {
                    int64_t r2 = l, off = 0;
                    bool ok = true;
                    for (size_t i = n; i-- > 0;) {
                        lc[i] = r2 % nb[i];
                        r2 /= nb[i];
                    }
                    for (size_t i = 0; i < n; i++) {
                        int64_t pos = lc[i] * s[i] - pads[i] + bc[i] * d[i];
                        if (pos < 0 || pos >= img[i]) ok = false;
                        off = off * img[i] + pos;
                    }
                    int64_t src = (nn * C * kb + c * kb + kk) * Lc + l;
                    offs[size_t(src)] = ok ? (nn * C + c) * in_img + off : -1;
                }
            }
    scatter_out(L, 0, os, offs, true);
}

}  // namespace onnx2ggml
