// Ops not yet moved to their family file.
// Float math runs in ggml: ggml ops where they fit, else ggml custom CPU kernels over contiguous F32 data.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

bool wanted(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }

ggml_tensor* f32_cont(Lower& L, ggml_tensor* x) {
    x = L.cont(x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    return x;
}

// ---- RoiAlign: one work item per (roi, channel) ----
struct RoiParams {
    int64_t oh, ow, sampling;
    float spatial_scale;
    bool half_pixel, max_mode;
};

struct Sample { int64_t p[4]; float w[4]; };

// Sampling points and bilinear weights of one RoI, in float like the reference implementations (the grid size
// for sampling_ratio = 0 depends on the exact float RoI size).
void roi_samples(const RoiParams& p, const float* roi, int64_t H, int64_t W, std::vector<Sample>& out,
                 int64_t& gh, int64_t& gw) {
    float off = p.half_pixel ? 0.5f : 0.0f;
    float x0 = roi[0] * p.spatial_scale - off, y0 = roi[1] * p.spatial_scale - off;
    float x1 = roi[2] * p.spatial_scale - off, y1 = roi[3] * p.spatial_scale - off;
    float rw = x1 - x0, rh = y1 - y0;
    if (!p.half_pixel) {  // malformed RoIs are forced to 1x1
        rw = std::max(rw, 1.0f);
        rh = std::max(rh, 1.0f);
    }
    float bh = rh / float(p.oh), bw = rw / float(p.ow);
    gh = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rh / float(p.oh)));
    gw = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rw / float(p.ow)));
    out.clear();
    for (int64_t ph = 0; ph < p.oh; ph++)
        for (int64_t pw = 0; pw < p.ow; pw++)
            for (int64_t iy = 0; iy < gh; iy++) {
                float yy = y0 + float(ph) * bh + float(iy + 0.5f) * bh / float(gh);
                for (int64_t ix = 0; ix < gw; ix++) {
                    float x = x0 + float(pw) * bw + float(ix + 0.5f) * bw / float(gw), y = yy;
                    Sample s{};
                    if (y < -1.0f || y > float(H) || x < -1.0f || x > float(W)) {
                        out.push_back(s);
                        continue;
                    }
                    y = std::max(y, 0.0f);
                    x = std::max(x, 0.0f);
                    int64_t ylo = int64_t(y), xlo = int64_t(x), yhi, xhi;
                    if (ylo >= H - 1) {
                        yhi = ylo = H - 1;
                        y = float(ylo);
                    } else yhi = ylo + 1;
                    if (xlo >= W - 1) {
                        xhi = xlo = W - 1;
                        x = float(xlo);
                    } else xhi = xlo + 1;
                    float ly = y - float(ylo), lx = x - float(xlo), hy = 1.0f - ly, hx = 1.0f - lx;
                    s.p[0] = ylo * W + xlo;
                    s.p[1] = ylo * W + xhi;
                    s.p[2] = yhi * W + xlo;
                    s.p[3] = yhi * W + xhi;
                    s.w[0] = hy * hx;
                    s.w[1] = hy * lx;
                    s.w[2] = ly * hx;
                    s.w[3] = ly * lx;
                    out.push_back(s);
                }
            }
}

void roialign_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RoiParams& p = *static_cast<const RoiParams*>(ud);
    const ggml_tensor *X = dst->src[0], *R = dst->src[1], *BI = dst->src[2];
    int64_t W = X->ne[0], H = X->ne[1], C = X->ne[2], N = X->ne[3], nroi = dst->ne[3];
    const float* xd = static_cast<const float*>(X->data);
    const float* rd = static_cast<const float*>(R->data);
    float* y = static_cast<float*>(dst->data);
    std::vector<Sample> smp;
    int64_t cur = -1, gh = 0, gw = 0;
    int64_t total = nroi * C, per = (total + nth - 1) / nth, i0 = std::min(total, per * ith),
            i1 = std::min(total, i0 + per);
    for (int64_t item = i0; item < i1; item++) {
        int64_t r = item / C, c = item % C;
        if (r != cur) {
            roi_samples(p, rd + r * R->ne[0], H, W, smp, gh, gw);
            cur = r;
        }
        int64_t bi = BI->type == GGML_TYPE_I32 ? int64_t(static_cast<const int32_t*>(BI->data)[r])
                                               : int64_t(static_cast<const float*>(BI->data)[r]);
        float* o = y + item * p.oh * p.ow;
        if (bi < 0 || bi >= N) {
            std::fill(o, o + p.oh * p.ow, NAN);
            continue;
        }
        const float* img = xd + (bi * C + c) * H * W;
        int64_t count = std::max<int64_t>(gh * gw, 1);
        size_t si = 0;
        for (int64_t cell = 0; cell < p.oh * p.ow; cell++) {
            float acc = 0;
            bool first = true;
            for (int64_t g = 0; g < gh * gw; g++, si++) {
                const Sample& s = smp[si];
                if (p.max_mode) {  // the reference takes the largest weighted corner, not the interpolated value
                    float v = std::max({s.w[0] * img[s.p[0]], s.w[1] * img[s.p[1]], s.w[2] * img[s.p[2]],
                                        s.w[3] * img[s.p[3]]});
                    acc = first ? v : std::max(acc, v);
                    first = false;
                } else
                    acc += s.w[0] * img[s.p[0]] + s.w[1] * img[s.p[1]] + s.w[2] * img[s.p[2]] + s.w[3] * img[s.p[3]];
            }
            o[cell] = p.max_mode ? acc : acc / float(count);
        }
    }
}

}  // namespace

}

// ---- NonMaxSuppression (10, host: the output length depends on the values) ----
void host_NonMaxSuppression(Lower& L) {
    const HostTensor& boxes = L.h(0);
    const HostTensor& scores = L.h(1);
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4) L.error("boxes must have shape (batch, boxes, 4)");
    if (scores.shape.size() != 3 || scores.shape[0] != boxes.shape[0] || scores.shape[2] != boxes.shape[1])
        L.error("scores must have shape (batch, classes, boxes)");
    int64_t NB = boxes.shape[0], NBox = boxes.shape[1], NC = scores.shape[1];
    int64_t max_out = 0;
    float iou_th = 0, score_th = 0;
    bool has_score = false;
    if (L.has(2) && L.h(2).numel() > 0) max_out = std::max<int64_t>(L.h(2).i64(0), 0);
    if (L.has(3) && L.h(3).numel() > 0) iou_th = float(L.h(3).f64(0));
    if (L.has(4) && L.h(4).numel() > 0) {
        score_th = float(L.h(4).f64(0));
        has_score = true;
    }
    int64_t cpb = L.node.get_int("center_point_box", 0);
    if (cpb != 0 && cpb != 1) L.error("center_point_box must be 0 or 1");
    auto bx = boxes.to_f32(), sc = scores.to_f32();
    // Box edges as (xmin, xmax, ymin, ymax), computed in float like the reference.
    auto edges = [&](int64_t b, int64_t i, float e[4]) {
        const float* v = bx.data() + (b * NBox + i) * 4;
        if (cpb == 0) {
            e[0] = std::min(v[1], v[3]);
            e[1] = std::max(v[1], v[3]);
            e[2] = std::min(v[0], v[2]);
            e[3] = std::max(v[0], v[2]);
        } else {
            float hw = v[2] / 2, hh = v[3] / 2;
            e[0] = v[0] - hw;
            e[1] = v[0] + hw;
            e[2] = v[1] - hh;
            e[3] = v[1] + hh;
        }
    };
    auto suppress = [&](int64_t b, int64_t i, int64_t j) {
        float a[4], c[4];
        edges(b, i, a);
        edges(b, j, c);
        float ix0 = std::max(a[0], c[0]), ix1 = std::min(a[1], c[1]);
        if (ix1 <= ix0) return false;
        float iy0 = std::max(a[2], c[2]), iy1 = std::min(a[3], c[3]);
        if (iy1 <= iy0) return false;
        float inter = (ix1 - ix0) * (iy1 - iy0);
        if (inter <= 0) return false;
        float a1 = (a[1] - a[0]) * (a[3] - a[2]), a2 = (c[1] - c[0]) * (c[3] - c[2]);
        float uni = a1 + a2 - inter;
        if (a1 <= 0 || a2 <= 0 || uni <= 0) return false;
        return inter / uni > iou_th;
    };
    std::vector<int64_t> out;
    std::vector<int64_t> cand, sel;
    for (int64_t b = 0; b < NB; b++)
        for (int64_t c = 0; c < NC; c++) {
            const float* s = sc.data() + (b * NC + c) * NBox;
            cand.clear();
            for (int64_t i = 0; i < NBox; i++)
                if (!has_score || s[i] > score_th) cand.push_back(i);
            std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
            sel.clear();
            for (int64_t i : cand) {
                if (int64_t(sel.size()) >= max_out) break;
                bool keep = true;
                for (int64_t j : sel)
                    if (suppress(b, i, j)) {
                        keep = false;
                        break;
                    }
                if (!keep) continue;
                sel.push_back(i);
                out.insert(out.end(), {b, c, i});
            }
        }
    L.out_host(0, HostTensor::from_i64(DType::INT64, {int64_t(out.size() / 3), 3}, out));
}

// ---- RoiAlign (10; coordinate_transformation_mode from 16) ----
void lower_RoiAlign(Lower& L) {
    if (L.rank(0) != 4) L.error("X must be 4-D (N, C, H, W)");
    const Shape &rs = L.shape(1), &bs = L.shape(2);
    if (rs.size() != 2 || rs[1] != 4) L.error("rois must have shape (num_rois, 4)");
    if (bs.size() != 1 || bs[0] != rs[0]) L.error("batch_indices must have shape (num_rois)");
    RoiParams p{};
    p.oh = L.node.get_int("output_height", 1);
    p.ow = L.node.get_int("output_width", 1);
    p.sampling = L.node.get_int("sampling_ratio", 0);
    p.spatial_scale = L.node.get_float("spatial_scale", 1.0f);
    if (p.oh < 1 || p.ow < 1) L.error("output_height and output_width must be positive");
    if (p.sampling < 0) L.error("sampling_ratio must be >= 0");
    std::string ctm = L.node.get_string("coordinate_transformation_mode",
                                        L.opset >= 16 ? "half_pixel" : "output_half_pixel");
    if (ctm != "half_pixel" && ctm != "output_half_pixel") L.error("unknown coordinate_transformation_mode '" + ctm + "'");
    p.half_pixel = ctm == "half_pixel";
    std::string mode = L.node.get_string("mode", "avg");
    if (mode != "avg" && mode != "max") L.error("unknown mode '" + mode + "'");
    p.max_mode = mode == "max";
    const Shape& xs = L.shape(0);
    if (rs[0] == 0) L.error("no RoIs: the output would be empty, which ggml cannot hold");
    if (const HostTensor* bi = L.in(2).host.get())  // checked when known; the kernel fills bad RoIs with NaN
        for (int64_t i = 0; i < bi->numel(); i++)
            if (bi->i64(i) < 0 || bi->i64(i) >= xs[0]) L.error("batch index " + std::to_string(bi->i64(i)) + " out of range");
    ggml_tensor* args[3] = {f32_cont(L, L.t(0)), f32_cont(L, L.t(1)), L.cont(L.t(2))};
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, p.ow, p.oh, xs[1], rs[0], args, 3, roialign_kernel,
                                    GGML_N_TASKS_MAX, keep_params(p));
    L.out(0, y, L.dtype(0), 4);
}

}  // namespace onnx2ggml

namespace onnx2ggml {

namespace {

// ---- window functions ----
enum class WinK { Hann, Hamming, Blackman };
struct WinParams { WinK k; int64_t n; double denom; };

void window_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    const WinParams& p = *static_cast<const WinParams*>(ud);
    float* y = static_cast<float*>(dst->data);
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < p.n; i++) {
        double n = double(i), v;
        switch (p.k) {
            case WinK::Hann: v = std::sin(n * pi / p.denom), v = v * v; break;
            case WinK::Hamming: v = 25.0 / 46.0 - std::cos(n * pi * 2 / p.denom) * (1 - 25.0 / 46.0); break;
            default: v = std::cos(n * (pi * 2) / p.denom) * -0.5 + std::cos(n * (pi * 4) / p.denom) * 0.08 + 0.42;
        }
        y[i] = float(v);
    }
}

void lower_window(Lower& L, WinK k) {
    const HostTensor& sz = L.h(0);
    if (sz.numel() != 1) L.error("size must be a scalar");
    int64_t n = sz.i64(0);
    if (n <= 0) L.error("size must be positive (an empty window cannot be held by ggml)");
    DType dt = DType(L.node.get_int("output_datatype", 1));
    if (!dtype_is_float(dt)) L.error("only float output_datatype is supported");
    bool periodic = L.node.get_int("periodic", 1) != 0;
    WinParams p{k, n, double(periodic ? n : n - 1)};
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, n, 1, 1, 1, nullptr, 0, window_kernel, 1, keep_params(p));
    L.out(0, y, dt, 1);
}

// ---- Det of [M, M] blocks ----
void det_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* a = dst->src[0];
    int64_t M = a->ne[0], nb = ggml_nelements(dst);
    const float* x = static_cast<const float*>(a->data);
    std::vector<double> m(static_cast<size_t>(M * M));
    for (int64_t b = ith; b < nb; b += nth) {
        for (int64_t i = 0; i < M * M; i++) m[size_t(i)] = x[b * M * M + i];
        double det = 1;
        for (int64_t c = 0; c < M && det != 0; c++) {
            int64_t piv = c;
            for (int64_t r = c + 1; r < M; r++)
                if (std::fabs(m[size_t(r * M + c)]) > std::fabs(m[size_t(piv * M + c)])) piv = r;
            if (m[size_t(piv * M + c)] == 0) {
                det = 0;
                break;
            }
            if (piv != c) {
                for (int64_t k = 0; k < M; k++) std::swap(m[size_t(c * M + k)], m[size_t(piv * M + k)]);
                det = -det;
            }
            double d = m[size_t(c * M + c)];
            det *= d;
            for (int64_t r = c + 1; r < M; r++) {
                double f = m[size_t(r * M + c)] / d;
                for (int64_t k = c; k < M; k++) m[size_t(r * M + k)] -= f * m[size_t(c * M + k)];
            }
        }
        static_cast<float*>(dst->data)[b] = float(det);
    }
}

    }
}

}  // namespace

// ---- HannWindow, HammingWindow, BlackmanWindow (17) ----
void lower_HannWindow(Lower& L) { lower_window(L, WinK::Hann); }
void lower_HammingWindow(Lower& L) { lower_window(L, WinK::Hamming); }
void lower_BlackmanWindow(Lower& L) { lower_window(L, WinK::Blackman); }

}

// ---- Det (11) ----
void lower_Det(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 2 || xs[size_t(r - 1)] != xs[size_t(r - 2)]) L.error("input must be [..., M, M]");
    int64_t M = xs.back();
    if (M == 0) L.error("empty matrices are not supported");
    Shape os(xs.begin(), xs.end() - 2);
    int64_t nb = shape_numel(os);
    if (nb == 0) L.error("the output would be empty, which ggml cannot hold");
    ggml_tensor* x = ggml_reshape_2d(L.ctx, f32_cont(L, L.t(0)), M, M * nb);
    ggml_tensor* args[1] = {x};
    ggml_tensor* d = ggml_custom_4d(L.ctx, GGML_TYPE_F32, nb, 1, 1, 1, args, 1, det_kernel, GGML_N_TASKS_MAX, nullptr);
    L.out_shape(0, reshape_to(L, d, os), L.dtype(0), os);
}

}

}  // namespace onnx2ggml

// ======== recurrent ops: RNN, GRU, LSTM ========
namespace onnx2ggml {

namespace {

enum class Act { Sigmoid, Tanh, Relu, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign,
                 Softplus };
struct ActFn { Act k; float a, b; };

float act(const ActFn& f, float x) {
    switch (f.k) {
        case Act::Sigmoid: return 1.0f / (1.0f + std::exp(-x));
        case Act::Tanh: return std::tanh(x);
        case Act::Relu: return std::max(0.0f, x);
        case Act::Affine: return f.a * x + f.b;
        case Act::LeakyRelu: return x >= 0 ? x : f.a * x;
        case Act::ThresholdedRelu: return x >= f.a ? x : 0.0f;
        case Act::ScaledTanh: return f.a * std::tanh(f.b * x);
        case Act::HardSigmoid: return std::min(std::max(f.a * x + f.b, 0.0f), 1.0f);
        case Act::Elu: return x >= 0 ? x : f.a * (std::exp(x) - 1.0f);
        case Act::Softsign: return x / (1.0f + std::fabs(x));
        case Act::Softplus: return std::log1p(std::exp(x));
    }
    return x;
}

enum class Cell { RNN, GRU, LSTM };

struct RnnParams {
    Cell cell;
    int64_t S, B, H, D, G;  // sequence, batch, hidden, directions, gates
    bool layout1, reverse_only, lbr, input_forget;
    float clip;  // <= 0: none
    ActFn f[2][3];
    int i_r, i_b, i_len, i_h0, i_c0, i_p;  // src slots (-1 absent); src 0 is X*W^T
};

void rnn_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RnnParams& p = *static_cast<const RnnParams*>(ud);
    const int64_t S = p.S, B = p.B, H = p.H, D = p.D, GH = p.G * H;
    auto src = [&](int i) { return i >= 0 ? static_cast<const float*>(dst->src[i]->data) : nullptr; };
    const float* xw = src(0);  // [D][rows][GH], rows = s*B+b (layout 0) or b*S+s (layout 1)
    const float *R = src(p.i_r), *Bi = src(p.i_b), *h0 = src(p.i_h0), *c0 = src(p.i_c0), *P = src(p.i_p);
    const ggml_tensor* lt = p.i_len >= 0 ? dst->src[p.i_len] : nullptr;
    float* Y = static_cast<float*>(dst->data);
    float* Yh = Y + S * D * B * H;
    float* Yc = Yh + D * B * H;
    std::vector<float> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), g(static_cast<size_t>(GH)),
        rh(static_cast<size_t>(H)), tmp(static_cast<size_t>(H));
    auto clip = [&](float v) { return p.clip > 0 ? std::min(std::max(v, -p.clip), p.clip) : v; };
    for (int64_t item = ith; item < D * B; item += nth) {
        int64_t d = item / B, b = item % B;
        bool rev = p.reverse_only || d == 1;
        int64_t len = S;
        if (lt) len = lt->type == GGML_TYPE_I32 ? int64_t(static_cast<const int32_t*>(lt->data)[b])
                                                : int64_t(static_cast<const float*>(lt->data)[b]);
        len = std::min(std::max<int64_t>(len, 0), S);
        // state index [d][b] (layout 0) or [b][d] (layout 1)
        int64_t st = p.layout1 ? (b * D + d) * H : (d * B + b) * H;
        for (int64_t k = 0; k < H; k++) {
            h[size_t(k)] = h0 ? h0[st + k] : 0.f;
            c[size_t(k)] = c0 ? c0[st + k] : 0.f;
        }
        const float* Rd = R + d * GH * H;
        const float* Wb = Bi ? Bi + d * 2 * GH : nullptr;
        const float* Rb = Bi ? Wb + GH : nullptr;
        const float* Pd = P ? P + d * 3 * H : nullptr;
        const ActFn* f = p.f[d];
        auto yat = [&](int64_t s) { return Y + (p.layout1 ? ((b * S + s) * D + d) * H : ((s * D + d) * B + b) * H); };
        for (int64_t s = len; s < S; s++) std::fill(yat(s), yat(s) + H, 0.f);
        for (int64_t step = 0; step < len; step++) {
            int64_t s = rev ? len - 1 - step : step;
            const float* x = xw + (d * S * B + (p.layout1 ? b * S + s : s * B + b)) * GH;
            for (int64_t j = 0; j < GH; j++) {
                float v = x[j] + (Wb ? Wb[j] : 0.f);
                bool gru_h = p.cell == Cell::GRU && j >= 2 * H;  // GRU's hidden gate handles R itself
                if (!gru_h) {
                    const float* r = Rd + j * H;
                    float acc = 0;
                    for (int64_t k = 0; k < H; k++) acc += r[k] * h[size_t(k)];
                    v += acc + (Rb ? Rb[j] : 0.f);
                }
                g[size_t(j)] = v;
            }
            if (p.cell == Cell::RNN) {
                for (int64_t k = 0; k < H; k++) h[size_t(k)] = act(f[0], clip(g[size_t(k)]));
            } else if (p.cell == Cell::GRU) {
                float *z = g.data(), *r = g.data() + H, *hh = g.data() + 2 * H;
                for (int64_t k = 0; k < H; k++) {
                    z[k] = act(f[0], clip(z[k]));
                    r[k] = act(f[0], clip(r[k]));
                }
                const float* Rh = Rd + 2 * H * H;
                for (int64_t j = 0; j < H; j++) {
                    float acc = 0;
                    if (p.lbr) {
                        for (int64_t k = 0; k < H; k++) acc += Rh[j * H + k] * h[size_t(k)];
                        acc = r[j] * (acc + (Rb ? Rb[2 * H + j] : 0.f));
                    } else {
                        for (int64_t k = 0; k < H; k++) acc += Rh[j * H + k] * r[k] * h[size_t(k)];
                        acc += Rb ? Rb[2 * H + j] : 0.f;
                    }
                    tmp[size_t(j)] = act(f[1], clip(hh[j] + acc));
                }
                for (int64_t k = 0; k < H; k++) h[size_t(k)] = (1 - z[k]) * tmp[size_t(k)] + z[k] * h[size_t(k)];
            } else {  // LSTM, gates i o f c
                float *gi = g.data(), *go = g.data() + H, *gf = g.data() + 2 * H, *gc = g.data() + 3 * H;
                for (int64_t k = 0; k < H; k++) {
                    float ci = c[size_t(k)];
                    float i = act(f[0], clip(gi[k] + (Pd ? Pd[k] * ci : 0.f)));
                    float fg = p.input_forget ? 1.0f - i : act(f[0], clip(gf[k] + (Pd ? Pd[2 * H + k] * ci : 0.f)));
                    float cc = act(f[1], clip(gc[k]));
                    float C = fg * ci + i * cc;
                    float o = act(f[0], clip(go[k] + (Pd ? Pd[H + k] * C : 0.f)));
                    c[size_t(k)] = C;
                    h[size_t(k)] = o * act(f[2], C);
                }
            }
            std::copy(h.begin(), h.end(), yat(s));
        }
        std::copy(h.begin(), h.end(), Yh + st);
        std::copy(c.begin(), c.end(), Yc + st);
    }
}

Act parse_act(Lower& L, const std::string& s) {
    std::string l;
    for (char ch : s) l += char(std::tolower(static_cast<unsigned char>(ch)));
    if (l == "sigmoid") return Act::Sigmoid;
    if (l == "tanh") return Act::Tanh;
    if (l == "relu") return Act::Relu;
    if (l == "affine") return Act::Affine;
    if (l == "leakyrelu") return Act::LeakyRelu;
    if (l == "thresholdedrelu") return Act::ThresholdedRelu;
    if (l == "scaledtanh") return Act::ScaledTanh;
    if (l == "hardsigmoid") return Act::HardSigmoid;
    if (l == "elu") return Act::Elu;
    if (l == "softsign") return Act::Softsign;
    if (l == "softplus") return Act::Softplus;
    L.error("unsupported activation '" + s + "'");
}

void lower_recurrent(Lower& L, Cell cell) {
    RnnParams p{};
    p.cell = cell;
    p.G = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
    int n_act = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
    std::string dir = L.node.get_string("direction", "forward");
    if (dir != "forward" && dir != "reverse" && dir != "bidirectional") L.error("unknown direction '" + dir + "'");
    p.D = dir == "bidirectional" ? 2 : 1;
    p.reverse_only = dir == "reverse";
    p.layout1 = L.node.get_int("layout", 0) != 0;
    p.lbr = L.node.get_int("linear_before_reset", 0) != 0;
    p.input_forget = L.node.get_int("input_forget", 0) != 0;
    p.clip = L.node.has("clip") ? L.node.get_float("clip", 0.f) : 0.f;
    if (L.node.has("clip") && p.clip <= 0) L.error("clip must be positive");
    const Shape &xs = L.shape(0), &ws = L.shape(1), &rs = L.shape(2);
    if (xs.size() != 3) L.error("X must be 3-D");
    p.S = p.layout1 ? xs[1] : xs[0];
    p.B = p.layout1 ? xs[0] : xs[1];
    int64_t I = xs[2];
    p.H = L.node.get_int("hidden_size", rs.size() == 3 ? rs[2] : 0);
    int64_t GH = p.G * p.H;
    if (ws != Shape{p.D, GH, I}) L.error("W must have shape (num_directions, " + std::to_string(p.G) + " * hidden_size, input_size)");
    if (rs != Shape{p.D, GH, p.H}) L.error("R must have shape (num_directions, " + std::to_string(p.G) + " * hidden_size, hidden_size)");
    if (p.S == 0 || p.B == 0 || p.H == 0) L.error("empty sequence, batch or hidden size");
    // activations, with alpha/beta consumed in order by the functions that take them
    std::vector<std::string> names;
    if (const Attribute* a = L.node.attr("activations")) names = a->strings;
    auto alphas = L.node.get_floats("activation_alpha"), betas = L.node.get_floats("activation_beta");
    size_t ia = 0, ib = 0;
    for (int64_t d = 0; d < p.D; d++)
        for (int k = 0; k < n_act; k++) {
            size_t idx = size_t(d * n_act + k);
            Act a;
            if (idx < names.size()) a = parse_act(L, names[idx]);
            else if (!names.empty() && names.size() == size_t(n_act)) a = parse_act(L, names[size_t(k)]);
            else if (!names.empty()) L.error("activations has the wrong length");
            else a = cell == Cell::RNN || k > 0 ? Act::Tanh : Act::Sigmoid;
            float da = 0, db = 0;
            bool na = false, nb = false;
            switch (a) {
                case Act::Affine: da = 1, db = 0, na = nb = true; break;
                case Act::LeakyRelu: da = 0.01f, na = true; break;
                case Act::ThresholdedRelu: da = 1.0f, na = true; break;
                case Act::ScaledTanh: da = 1.0f, db = 1.0f, na = nb = true; break;
                case Act::HardSigmoid: da = 0.2f, db = 0.5f, na = nb = true; break;
                case Act::Elu: da = 1.0f, na = true; break;
                default: break;
            }
            if (na && ia < alphas.size()) da = alphas[ia++];
            if (nb && ib < betas.size()) db = betas[ib++];
            p.f[d][k] = ActFn{a, da, db};
        }
    // X * W^T for every step and direction on the device: [GH, rows, D].
    ggml_tensor* x2 = ggml_reshape_3d(L.ctx, f32_cont(L, L.t(0)), I, p.S * p.B, 1);
    if (p.D > 1) x2 = ggml_repeat_4d(L.ctx, x2, I, p.S * p.B, p.D, 1);
    ggml_tensor* xw = ggml_mul_mat(L.ctx, ggml_reshape_3d(L.ctx, f32_cont(L, L.t(1)), I, GH, p.D), x2);
    std::vector<ggml_tensor*> args = {xw, f32_cont(L, L.t(2))};
    p.i_r = 1;
    p.i_b = p.i_len = p.i_h0 = p.i_c0 = p.i_p = -1;
    auto opt = [&](int i, const Shape& want, const char* what) {
        if (!L.has(i)) return -1;
        if (L.shape(i) != want) L.error(std::string(what) + " must have shape " + shape_str(want));
        args.push_back(i == 4 ? L.cont(L.t(i)) : f32_cont(L, L.t(i)));
        return int(args.size()) - 1;
    };
    Shape state = p.layout1 ? Shape{p.B, p.D, p.H} : Shape{p.D, p.B, p.H};
    p.i_b = opt(3, {p.D, 2 * GH}, "B");
    p.i_len = opt(4, {p.B}, "sequence_lens");
    p.i_h0 = opt(5, state, "initial_h");
    if (cell == Cell::LSTM) {
        p.i_c0 = opt(6, state, "initial_c");
        p.i_p = opt(7, {p.D, 3 * p.H}, "P");
    }
    if (const Val* lv = L.has(4) ? &L.in(4) : nullptr)
        if (lv->host)
            for (int64_t i = 0; i < lv->host->numel(); i++)
                if (lv->host->i64(i) < 0 || lv->host->i64(i) > p.S) L.error("sequence_lens value out of range");
    int64_t ny = p.S * p.D * p.B * p.H, ns = p.D * p.B * p.H;
    ggml_tensor* all = ggml_custom_4d(L.ctx, GGML_TYPE_F32, ny + 2 * ns, 1, 1, 1, args.data(), int(args.size()),
                                      rnn_kernel, GGML_N_TASKS_MAX, keep_params(p));
    DType dt = L.dtype(0);
    Shape ys = p.layout1 ? Shape{p.B, p.S, p.D, p.H} : Shape{p.S, p.D, p.B, p.H};
    if (wanted(L, 0)) L.out(0, ggml_reshape_4d(L.ctx, ggml_view_1d(L.ctx, all, ny, 0), ys[3], ys[2], ys[1], ys[0]), dt, 4);
    for (int o = 1; o <= (cell == Cell::LSTM ? 2 : 1); o++)
        if (wanted(L, size_t(o)))
            L.out(o, ggml_reshape_3d(L.ctx, ggml_view_1d(L.ctx, all, ns, size_t(ny + (o - 1) * ns) * sizeof(float)),
                                     state[2], state[1], state[0]),
                  dt, 3);
}

}  // namespace

void lower_RNN(Lower& L) { lower_recurrent(L, Cell::RNN); }
void lower_GRU(Lower& L) { lower_recurrent(L, Cell::GRU); }
void lower_LSTM(Lower& L) { lower_recurrent(L, Cell::LSTM); }

}  // namespace onnx2ggml

// ======== MelWeightMatrix (17) ========
namespace onnx2ggml {

namespace {

struct MelParams { int64_t bins, dft, rate; double lo, hi; };

void mel_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    const MelParams& p = *static_cast<const MelParams*>(ud);
    int64_t nspec = p.dft / 2 + 1;
    float* y = static_cast<float*>(dst->data);
    std::fill(y, y + nspec * p.bins, 0.0f);
    double lo_mel = 2595 * std::log10(1 + p.lo / 700), hi_mel = 2595 * std::log10(1 + p.hi / 700);
    double step = (hi_mel - lo_mel) / double(p.bins + 2);
    std::vector<int64_t> fb(static_cast<size_t>(p.bins + 2));
    for (int64_t i = 0; i < p.bins + 2; i++) {
        double hz = 700 * (std::pow(10.0, (double(i) * step + lo_mel) / 2595) - 1);
        fb[size_t(i)] = int64_t(std::floor(double(p.dft + 1) * hz / double(p.rate)));
    }
    auto set = [&](int64_t j, int64_t i, double v) {
        if (j >= 0 && j < nspec) y[j * p.bins + i] = float(v);
    };
    for (int64_t i = 0; i < p.bins; i++) {
        int64_t l = fb[size_t(i)], c = fb[size_t(i + 1)], h = fb[size_t(i + 2)];
        if (c == l) set(c, i, 1);
        else
            for (int64_t j = l; j <= c; j++) set(j, i, double(j - l) / double(c - l));
        for (int64_t j = c; j < h; j++) set(j, i, double(h - j) / double(h - c));
    }
}

}  // namespace

void lower_MelWeightMatrix(Lower& L) {
    auto scalar = [&](int i) {
        const HostTensor& h = L.h(i);
        if (h.numel() != 1) L.error("input " + std::to_string(i) + " must be a scalar");
        return h;
    };
    MelParams p{scalar(0).i64(0), scalar(1).i64(0), scalar(2).i64(0), scalar(3).f64(0), scalar(4).f64(0)};
    if (p.bins < 1 || p.dft < 1 || p.rate < 1) L.error("num_mel_bins, dft_length and sample_rate must be positive");
    DType dt = DType(L.node.get_int("output_datatype", 1));
    if (!dtype_is_float(dt)) L.error("only float output_datatype is supported");
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, p.bins, p.dft / 2 + 1, 1, 1, nullptr, 0, mel_kernel, 1,
                                    keep_params(p));
    L.out(0, y, dt, 2);
}

}  // namespace onnx2ggml
