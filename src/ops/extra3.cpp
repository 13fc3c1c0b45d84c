// Recent and remaining ops: CausalConvWithState (27), NonMaxSuppression (10, host), TensorScatter (24), RoiAlign
// (10/16/22), BitCast (26, host), CumProd (26), Hann/Hamming/BlackmanWindow (17), Unique (11, host),
// ReverseSequence (10), CenterCropPad (18), Det, LpPool, RNN, GRU, LSTM, DeformConv (19/22, 2-D),
// MelWeightMatrix (17).
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

// ---- CausalConvWithState (27): depthwise causal conv1d over [past_state | input] ----
void lower_CausalConvWithState(Lower& L) {
    if (L.rank(0) != 3 || L.rank(1) != 3) L.error("input and weight must be 3-D");
    const Shape &xs = L.shape(0), &ws = L.shape(1);
    int64_t B = xs[0], C = xs[1], Len = xs[2], K = ws[2];
    if (ws[0] != C || ws[1] != 1 || K < 1) L.error("weight must have shape (channels, 1, k)");
    std::string act = L.node.get_string("activation", "none");
    if (act != "none" && act != "silu" && act != "swish") L.error("unknown activation '" + act + "'");
    DType dt = L.dtype(0);
    ggml_tensor* x = f32_cont(L, L.t(0));  // [Len, C, B]
    ggml_tensor* padded = x;
    if (K > 1) {
        ggml_tensor* pad;
        if (L.has(3)) {
            if (L.shape(3) != Shape{B, C, K - 1}) L.error("past_state must have shape (batch, channels, k - 1)");
            pad = f32_cont(L, L.t(3));
        } else pad = L.constant(HostTensor::alloc(DType::FLOAT, {B, C, K - 1}));
        padded = ggml_concat(L.ctx, pad, x, 0);  // [K - 1 + Len, C, B]
    } else if (L.has(3) && shape_numel(L.shape(3)) != 0) L.error("past_state must be empty when k = 1");
    ggml_tensor* w = ggml_reshape_2d(L.ctx, f32_cont(L, L.t(1)), K, C);
    ggml_tensor* y = ggml_ssm_conv(L.ctx, padded, w);  // [C, Len, B]
    if (L.has(2)) {
        if (L.shape(2) != Shape{C}) L.error("bias must have shape (channels)");
        y = ggml_add(L.ctx, y, f32_cont(L, L.t(2)));
    }
    if (act != "none") y = ggml_silu(L.ctx, y);
    y = ggml_cont(L.ctx, ggml_permute(L.ctx, y, 1, 0, 2, 3));  // [Len, C, B]
    L.out(0, y, dt, 3);
    if (!wanted(L, 1)) return;
    if (K == 1) return L.out_host(1, HostTensor::alloc(dt, {B, C, 0}));
    ggml_tensor* st = ggml_view_3d(L.ctx, padded, K - 1, C, B, padded->nb[1], padded->nb[2],
                                   size_t(Len) * padded->nb[0]);
    L.out(1, ggml_cont(L.ctx, st), dt, 3);
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

// ---- TensorScatter (24): rows of the cache replaced by rows of the update at per-batch write indices ----
void lower_TensorScatter(Lower& L) {
    const Shape &cs = L.shape(0), &us = L.shape(1);
    int r = int(cs.size());
    if (r < 2) L.error("past_cache must have rank >= 2");
    if (int(us.size()) != r) L.error("update must have the rank of past_cache");
    int axis = norm_axis(L, L.node.get_int("axis", -2), r);
    if (axis == 0) L.error("axis must not be the batch axis");
    for (int i = 0; i < r; i++)
        if (i != axis ? us[size_t(i)] != cs[size_t(i)] : us[size_t(i)] > cs[size_t(i)])
            L.error("update shape " + shape_str(us) + " does not fit past_cache shape " + shape_str(cs));
    std::string mode = L.node.get_string("mode", "linear");
    if (mode != "linear" && mode != "circular") L.error("unknown mode '" + mode + "'");
    int64_t B = cs[0], M = cs[size_t(axis)], S = us[size_t(axis)], prefix = 1, inner = 1;
    for (int i = 0; i < axis; i++) prefix *= cs[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= cs[size_t(i)];
    std::vector<int64_t> wi(size_t(B), 0);
    if (L.has(2)) {
        wi = L.ints(2);
        if (int64_t(wi.size()) != B) L.error("write_indices must have batch_size elements");
    }
    // Output row i comes from row map[i] of [cache rows; update rows].
    std::vector<int64_t> map(size_t(prefix * M));
    std::iota(map.begin(), map.end(), 0);
    int64_t per_batch = prefix / std::max<int64_t>(1, B);
    for (int64_t pi = 0; pi < prefix; pi++) {
        int64_t w = wi[size_t(pi / per_batch)];
        for (int64_t s = 0; s < S; s++) {
            int64_t idx = w + s;
            if (mode == "circular") idx = ((idx % M) + M) % M;
            else if (idx < 0 || idx >= M)
                L.error("write index " + std::to_string(idx) + " out of range [0, " + std::to_string(M) + ")");
            map[size_t(pi * M + idx)] = prefix * M + pi * S + s;
        }
    }
    if (L.b.host_mode) {
        const HostTensor &c = L.h(0), &u = L.h(1);
        HostTensor o = HostTensor::alloc(c.dtype, cs);
        size_t row = size_t(inner) * dtype_size(c.dtype), ncr = size_t(prefix * M);
        for (size_t i = 0; i < map.size(); i++) {
            size_t m = size_t(map[i]);
            const uint8_t* src = m < ncr ? c.data + m * row : u.data + (m - ncr) * row;
            if (row) std::memcpy(o.mut() + i * row, src, row);
        }
        return L.out_host(0, o);
    }
    if (S == 0) return L.pass(0, 0);
    ggml_tensor* c = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), inner, prefix * M);
    ggml_tensor* u = L.cont(L.t(1));
    if (u->type != c->type) u = ggml_cast(L.ctx, u, c->type);
    u = ggml_reshape_2d(L.ctx, u, inner, prefix * S);
    HostTensor ih = HostTensor::alloc(DType::INT32, {int64_t(map.size())});
    for (size_t i = 0; i < map.size(); i++) ih.set_i64(int64_t(i), map[i]);
    ggml_tensor* y = ggml_get_rows(L.ctx, ggml_concat(L.ctx, c, u, 1), L.constant(ih));
    L.out(0, reshape_to(L, y, cs), L.dtype(0), r);
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

// ======== further ops: BitCast, CumProd, window functions, Unique, ReverseSequence, CenterCropPad, LRN, Det,
// RotaryEmbedding, LpPool ========
namespace onnx2ggml {

namespace {

// Output = rows of input 0 (viewed as [rows, inner]) picked by `rows` (-1: a zero row), as ONNX shape `os`.
void gather_blocks(Lower& L, const std::vector<int64_t>& rows, int64_t inner, const Shape& os) {
    if (shape_numel(os) == 0) L.error("the output would be empty, which ggml cannot hold");
    if (L.b.host_mode) {
        const HostTensor& x = L.h(0);
        HostTensor o = HostTensor::alloc(x.dtype, os);
        size_t row = size_t(inner) * dtype_size(x.dtype);
        for (size_t i = 0; i < rows.size(); i++)
            if (rows[i] >= 0) std::memcpy(o.mut() + i * row, x.data + size_t(rows[i]) * row, row);
        return L.out_host(0, o);
    }
    int64_t n = shape_numel(L.shape(0)) / std::max<int64_t>(1, inner);
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), inner, n);
    bool zero = std::find(rows.begin(), rows.end(), int64_t(-1)) != rows.end();
    if (zero) {
        DType zt = x->type == GGML_TYPE_I32 ? DType::INT32 : DType::FLOAT;
        x = ggml_concat(L.ctx, x, L.constant(HostTensor::alloc(zt, {1, inner})), 1);
    }
    HostTensor ih = HostTensor::alloc(DType::INT32, {int64_t(rows.size())});
    for (size_t i = 0; i < rows.size(); i++) ih.set_i64(int64_t(i), rows[i] < 0 ? n : rows[i]);
    ggml_tensor* y = ggml_get_rows(L.ctx, x, L.constant(ih));
    L.out_shape(0, reshape_to(L, y, os), L.dtype(0), os);
}

// ---- CumProd kernel over [outer, A, inner] ----
struct CumParams { int64_t outer, A, inner; bool excl, rev; };

void cumprod_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const CumParams& p = *static_cast<const CumParams*>(ud);
    const ggml_tensor* a = dst->src[0];
    bool is_int = a->type == GGML_TYPE_I32;
    for (int64_t line = ith; line < p.outer * p.inner; line += nth) {
        int64_t o = line / p.inner, j = line % p.inner;
        double acc = 1;
        int64_t iacc = 1;
        for (int64_t t = 0; t < p.A; t++) {
            int64_t e = (o * p.A + (p.rev ? p.A - 1 - t : t)) * p.inner + j;
            if (is_int) {
                int32_t v = static_cast<const int32_t*>(a->data)[e];
                if (p.excl) static_cast<int32_t*>(dst->data)[e] = int32_t(iacc);
                iacc = int64_t(uint64_t(iacc) * uint64_t(int64_t(v)));
                if (!p.excl) static_cast<int32_t*>(dst->data)[e] = int32_t(iacc);
            } else {
                float v = static_cast<const float*>(a->data)[e];
                if (p.excl) static_cast<float*>(dst->data)[e] = float(acc);
                acc *= v;
                if (!p.excl) static_cast<float*>(dst->data)[e] = float(acc);
            }
        }
    }
}

void cum_params(Lower& L, CumParams& p, int& r) {
    const Shape& xs = L.shape(0);
    r = int(xs.size());
    if (r == 0) L.error("input must have rank >= 1");
    const HostTensor& ax = L.h(1);
    if (ax.numel() != 1) L.error("axis must hold one value");
    int axis = norm_axis(L, ax.i64(0), r);
    p.outer = p.inner = 1;
    p.A = xs[size_t(axis)];
    for (int i = 0; i < axis; i++) p.outer *= xs[size_t(i)];
    for (int i = axis + 1; i < r; i++) p.inner *= xs[size_t(i)];
    p.excl = L.node.get_int("exclusive", 0) != 0;
    p.rev = L.node.get_int("reverse", 0) != 0;
}

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

// ---- LpPool over up to 3 spatial dims ----
struct LpParams { int64_t outer, in[3], out[3], k[3], s[3], d[3], pb[3]; double p; };

void lppool_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ggml_tensor* a = dst->src[0];
    const LpParams& q = *static_cast<const LpParams*>(ud);
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

}  // namespace

// ---- BitCast (26, host) ----
void host_BitCast(Lower& L) {
    const HostTensor& x = L.h(0);
    DType to = DType(L.node.get_int("to", 0));
    if (!dtype_supported(to) || dtype_size(to) == 0) L.error("unsupported target type");
    if (dtype_size(to) != dtype_size(x.dtype)) L.error("BitCast needs input and output types of the same width");
    HostTensor o = x;
    o.dtype = to;
    L.out_host(0, o);
}

// ---- CumProd (26) ----
void lower_CumProd(Lower& L) {
    CumParams p;
    int r;
    cum_params(L, p, r);
    bool is_int = dtype_is_integer(L.dtype(0));
    ggml_tensor* x = is_int ? L.b.tensor(L.in(0)) : L.t(0);
    x = L.cont(x);
    if (!is_int && x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(L.ctx, x->type, x->ne[0], x->ne[1], x->ne[2], x->ne[3], args, 1, cumprod_kernel,
                                    GGML_N_TASKS_MAX, keep_params(p));
    L.out_shape(0, y, L.dtype(0), L.shape(0));
}

void host_CumProd(Lower& L) {
    CumParams p;
    int r;
    cum_params(L, p, r);
    const HostTensor& x = L.h(0);
    HostTensor out = HostTensor::alloc(x.dtype, x.shape);
    bool is_int = !dtype_is_float(x.dtype);
    for (int64_t o = 0; o < p.outer; o++)
        for (int64_t j = 0; j < p.inner; j++) {
            double acc = 1;
            int64_t iacc = 1;
            for (int64_t t = 0; t < p.A; t++) {
                int64_t e = (o * p.A + (p.rev ? p.A - 1 - t : t)) * p.inner + j;
                if (p.excl) is_int ? out.set_i64(e, iacc) : out.set_f64(e, acc);
                acc *= x.f64(e);
                iacc = int64_t(uint64_t(iacc) * uint64_t(x.i64(e)));
                if (!p.excl) is_int ? out.set_i64(e, iacc) : out.set_f64(e, acc);
            }
        }
    L.out_host(0, std::move(out));
}

// ---- HannWindow, HammingWindow, BlackmanWindow (17) ----
void lower_HannWindow(Lower& L) { lower_window(L, WinK::Hann); }
void lower_HammingWindow(Lower& L) { lower_window(L, WinK::Hamming); }
void lower_BlackmanWindow(Lower& L) { lower_window(L, WinK::Blackman); }

// ---- Unique (11, host: the output length depends on the values) ----
void host_Unique(Lower& L) {
    const HostTensor& x = L.h(0);
    bool sorted = L.node.get_int("sorted", 1) != 0;
    Shape xs = x.shape;
    int r = int(xs.size());
    bool has_axis = L.node.has("axis");
    int axis = has_axis ? norm_axis(L, L.node.get_int("axis", 0), r) : 0;
    // Slices along the axis (or single elements), each compared as a sequence of values.
    int64_t outer = 1, A, inner = 1;
    if (has_axis) {
        A = xs[size_t(axis)];
        for (int i = 0; i < axis; i++) outer *= xs[size_t(i)];
        for (int i = axis + 1; i < r; i++) inner *= xs[size_t(i)];
    } else A = x.numel();
    bool f = dtype_is_float(x.dtype);
    auto elem = [&](int64_t sl, int64_t k) {  // k-th element of slice sl
        int64_t o = k / inner, in = k % inner;
        return (o * A + sl) * inner + in;
    };
    int64_t len = outer * inner;
    auto cmp = [&](int64_t a, int64_t b) {  // -1, 0, 1
        for (int64_t k = 0; k < len; k++) {
            int64_t ea = elem(a, k), eb = elem(b, k);
            if (f) {
                double va = x.f64(ea), vb = x.f64(eb);
                if (va != vb) return va < vb ? -1 : 1;
            } else {
                int64_t va = x.i64(ea), vb = x.i64(eb);
                if (va != vb) return va < vb ? -1 : 1;
            }
        }
        return 0;
    };
    std::vector<int64_t> order(static_cast<size_t>(A));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
    std::vector<int64_t> first, counts, inverse(static_cast<size_t>(A));
    for (size_t i = 0; i < order.size(); i++) {
        if (i == 0 || cmp(order[i - 1], order[i]) != 0) {
            first.push_back(order[i]);
            counts.push_back(0);
        }
        counts.back()++;
        inverse[size_t(order[i])] = int64_t(first.size()) - 1;
    }
    int64_t U = int64_t(first.size());
    std::vector<int64_t> pos(static_cast<size_t>(U));  // output position of each unique value
    std::iota(pos.begin(), pos.end(), 0);
    if (!sorted) {
        std::vector<int64_t> by_first(static_cast<size_t>(U));
        std::iota(by_first.begin(), by_first.end(), 0);
        std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
        for (int64_t i = 0; i < U; i++) pos[size_t(by_first[size_t(i)])] = i;
    }
    std::vector<int64_t> idx_out(static_cast<size_t>(U)), cnt_out(static_cast<size_t>(U)), inv_out(static_cast<size_t>(A));
    for (int64_t u = 0; u < U; u++) {
        idx_out[size_t(pos[size_t(u)])] = first[size_t(u)];
        cnt_out[size_t(pos[size_t(u)])] = counts[size_t(u)];
    }
    for (int64_t i = 0; i < A; i++) inv_out[size_t(i)] = pos[size_t(inverse[size_t(i)])];
    Shape ys = has_axis ? xs : Shape{U};
    if (has_axis) ys[size_t(axis)] = U;
    HostTensor y = HostTensor::alloc(x.dtype, ys);
    size_t es = dtype_size(x.dtype);
    for (int64_t u = 0; u < U; u++)
        for (int64_t k = 0; k < len; k++) {
            int64_t o = k / inner, in = k % inner;
            int64_t dst = (o * U + u) * inner + in;
            std::memcpy(y.mut() + size_t(dst) * es, x.data + size_t(elem(idx_out[size_t(u)], k)) * es, es);
        }
    L.out_host(0, y);
    if (wanted(L, 1)) L.out_host(1, HostTensor::from_i64(DType::INT64, {U}, idx_out));
    if (wanted(L, 2)) L.out_host(2, HostTensor::from_i64(DType::INT64, {A}, inv_out));
    if (wanted(L, 3)) L.out_host(3, HostTensor::from_i64(DType::INT64, {U}, cnt_out));
}

// ---- ReverseSequence (10) ----
void lower_ReverseSequence(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 2) L.error("input must have rank >= 2");
    int ba = norm_axis(L, L.node.get_int("batch_axis", 1), r), ta = norm_axis(L, L.node.get_int("time_axis", 0), r);
    if (ba == ta || ba > 1 || ta > 1) L.error("batch_axis and time_axis must be 0 and 1 in some order");
    auto lens = L.ints(1);
    if (int64_t(lens.size()) != xs[size_t(ba)]) L.error("sequence_lens must have batch_size elements");
    int64_t T = xs[size_t(ta)], inner = 1;
    for (int i = 2; i < r; i++) inner *= xs[size_t(i)];
    for (int64_t l : lens)
        if (l < 0 || l > T) L.error("sequence length " + std::to_string(l) + " out of range [0, " + std::to_string(T) + "]");
    std::vector<int64_t> rows(static_cast<size_t>(xs[0] * xs[1]));
    for (int64_t i = 0; i < xs[0]; i++)
        for (int64_t j = 0; j < xs[1]; j++) {
            int64_t b = ba == 0 ? i : j, t = ba == 0 ? j : i, l = lens[size_t(b)];
            int64_t st = t < l ? l - 1 - t : t;
            rows[size_t(i * xs[1] + j)] = ba == 0 ? b * xs[1] + st : st * xs[1] + b;
        }
    gather_blocks(L, rows, inner, xs);
}

// ---- CenterCropPad (18) ----
void lower_CenterCropPad(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    auto sh = L.ints(1);
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    if (sh.size() != axes.size()) L.error("shape must have one entry per axis");
    Shape os = xs;
    std::vector<int64_t> off(static_cast<size_t>(r), 0);  // input index = output index + off
    for (size_t i = 0; i < axes.size(); i++) {
        int a = norm_axis(L, axes[i], r);
        int64_t dim = xs[size_t(a)], want = sh[i];
        if (want < 0) L.error("negative target shape");
        os[size_t(a)] = want;
        off[size_t(a)] = want <= dim ? (dim - want) / 2 : -((want - dim) / 2);
    }
    int last = -1;
    for (int i = 0; i < r; i++)
        if (os[size_t(i)] != xs[size_t(i)] || off[size_t(i)] != 0) last = i;
    if (last < 0) return L.pass(0, 0);
    int64_t inner = 1, nrows = 1;
    for (int i = last + 1; i < r; i++) inner *= xs[size_t(i)];
    for (int i = 0; i <= last; i++) nrows *= os[size_t(i)];
    std::vector<int64_t> rows(static_cast<size_t>(nrows));
    for (int64_t k = 0; k < nrows; k++) {
        int64_t rem = k, src = 0, mul = 1;
        bool ok = true;
        for (int i = last; i >= 0; i--) {
            int64_t c = rem % os[size_t(i)] + off[size_t(i)];
            rem /= os[size_t(i)];
            if (c < 0 || c >= xs[size_t(i)]) ok = false;
            src += c * mul;
            mul *= xs[size_t(i)];
        }
        rows[size_t(k)] = ok ? src : -1;
    }
    gather_blocks(L, rows, inner, os);
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

// ---- LpPool (11/18/22) ----
void lower_LpPool(Lower& L) {
    const Shape& xs = L.shape(0);
    int sp = int(xs.size()) - 2;
    if (sp < 1 || sp > 3) L.error("only 1-D to 3-D pooling is supported");
    auto k = L.node.get_ints("kernel_shape");
    if (int(k.size()) != sp) L.error("kernel_shape has wrong length");
    auto s = L.node.get_ints("strides"), d = L.node.get_ints("dilations");
    if (s.empty()) s.assign(size_t(sp), 1);
    if (d.empty()) d.assign(size_t(sp), 1);
    if (int(s.size()) != sp || int(d.size()) != sp) L.error("strides/dilations have wrong length");
    bool ceil_mode = L.node.get_int("ceil_mode", 0) != 0;
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    auto pads = L.node.get_ints("pads");
    if (ap == "NOTSET" && !pads.empty() && int(pads.size()) != 2 * sp) L.error("pads has wrong length");
    LpParams q{};
    q.p = L.opset >= 2 ? double(L.node.get_int("p", 2)) : double(L.node.get_float("p", 2.0f));
    if (q.p <= 0) L.error("p must be positive");
    q.outer = xs[0] * xs[1];
    Shape os = {xs[0], xs[1]};
    for (int i = 0; i < 3; i++) q.in[i] = q.out[i] = q.k[i] = q.s[i] = q.d[i] = 1;
    int base = 3 - sp;
    for (int i = 0; i < sp; i++) {
        int64_t in = xs[size_t(i + 2)], kk = k[size_t(i)], st = s[size_t(i)], dl = d[size_t(i)];
        if (kk < 1 || st < 1 || dl < 1) L.error("kernel_shape, strides and dilations must be positive");
        int64_t dk = (kk - 1) * dl + 1, o, pb = 0;
        if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
            o = (in + st - 1) / st;
            int64_t total = std::max<int64_t>(0, (o - 1) * st + dk - in);
            pb = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
        } else if (ap == "VALID") {
            o = (in - dk) / st + 1;
        } else if (ap == "NOTSET") {
            int64_t pe = 0;
            if (!pads.empty()) pb = pads[size_t(i)], pe = pads[size_t(i + sp)];
            int64_t span = in + pb + pe - dk;
            o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
            if (ceil_mode && (o - 1) * st >= in + pb) o--;
        } else L.error("unknown auto_pad '" + ap + "'");
        if (o < 1) L.error("the output would be empty, which ggml cannot hold");
        q.in[base + i] = in, q.out[base + i] = o, q.k[base + i] = kk, q.s[base + i] = st, q.d[base + i] = dl;
        q.pb[base + i] = pb;
        os.push_back(o);
    }
    ggml_tensor* x = f32_cont(L, L.t(0));
    ggml_tensor* args[1] = {x};
    ggml_tensor* out = ggml_custom_4d(L.ctx, GGML_TYPE_F32, shape_numel(os), 1, 1, 1, args, 1, lppool_kernel,
                                      GGML_N_TASKS_MAX, keep_params(q));
    L.out_shape(0, reshape_to(L, out, os), L.dtype(0), os);
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

// ======== DeformConv (19/22, 2-D), MelWeightMatrix (17) ========
namespace onnx2ggml {

namespace {

// Deformable im2col: cols [K = icg*kh*kw, P = oh*ow, group, n], each sample bilinear (zeros outside) times mask.
struct DcnParams { int64_t n, ic, ih, iw, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, g, offg; bool mask; };

void dcn_cols_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DcnParams& p = *static_cast<const DcnParams*>(ud);
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

void lower_DeformConv(Lower& L) {
    const Shape &xs = L.shape(0), &ws = L.shape(1), &os = L.shape(2);
    if (xs.size() != 4 || ws.size() != 4 || os.size() != 4) L.error("only 2-D DeformConv is supported");
    DcnParams p{};
    p.n = xs[0], p.ic = xs[1], p.ih = xs[2], p.iw = xs[3];
    int64_t oc = ws[0];
    p.g = L.node.get_int("group", 1);
    p.offg = L.node.get_int("offset_group", 1);
    auto k = L.node.get_ints("kernel_shape", {ws[2], ws[3]});
    auto s = L.node.get_ints("strides", {1, 1}), d = L.node.get_ints("dilations", {1, 1});
    auto pads = L.node.get_ints("pads", {0, 0, 0, 0});
    if (k.size() != 2 || s.size() != 2 || d.size() != 2 || pads.size() != 4) L.error("attributes must be for 2 spatial dims");
    if (k[0] != ws[2] || k[1] != ws[3]) L.error("kernel_shape does not match W");
    p.kh = k[0], p.kw = k[1], p.sh = s[0], p.sw = s[1], p.dh = d[0], p.dw = d[1], p.ph = pads[0], p.pw = pads[1];
    if (p.g < 1 || p.offg < 1 || p.ic % p.g || oc % p.g || ws[1] * p.g != p.ic || p.ic % p.offg)
        L.error("channels do not match group / offset_group");
    if (p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1) L.error("strides and dilations must be positive");
    p.oh = (p.ih + pads[0] + pads[2] - ((p.kh - 1) * p.dh + 1)) / p.sh + 1;
    p.ow = (p.iw + pads[1] + pads[3] - ((p.kw - 1) * p.dw + 1)) / p.sw + 1;
    if (p.oh < 1 || p.ow < 1) L.error("the output would be empty");
    int64_t KK = p.kh * p.kw;
    if (os != Shape{p.n, p.offg * KK * 2, p.oh, p.ow}) L.error("offset must have shape " + shape_str({p.n, p.offg * KK * 2, p.oh, p.ow}));
    std::vector<ggml_tensor*> args = {f32_cont(L, L.t(0)), f32_cont(L, L.t(2))};
    if (L.has(4)) {
        if (L.shape(4) != Shape{p.n, p.offg * KK, p.oh, p.ow}) L.error("mask must have shape " + shape_str({p.n, p.offg * KK, p.oh, p.ow}));
        p.mask = true;
        args.push_back(f32_cont(L, L.t(4)));
    }
    int64_t K = (p.ic / p.g) * KK, P = p.oh * p.ow, ocg = oc / p.g;
    ggml_tensor* cols = ggml_custom_4d(L.ctx, GGML_TYPE_F32, K, P, p.g, p.n, args.data(), int(args.size()),
                                       dcn_cols_kernel, GGML_N_TASKS_MAX, keep_params(p));
    ggml_tensor* w = ggml_reshape_4d(L.ctx, f32_cont(L, L.t(1)), K, ocg, p.g, 1);
    ggml_tensor* y = ggml_mul_mat(L.ctx, w, cols);                            // [ocg, P, g, n]
    y = ggml_cont(L.ctx, ggml_permute(L.ctx, y, 1, 0, 2, 3));                 // [P, ocg, g, n]
    y = ggml_reshape_4d(L.ctx, y, p.ow, p.oh, oc, p.n);
    if (L.has(3)) {
        if (L.shape(3) != Shape{oc}) L.error("B must have shape (out_channels)");
        y = ggml_add(L.ctx, y, ggml_reshape_4d(L.ctx, f32_cont(L, L.t(3)), 1, 1, oc, 1));
    }
    L.out(0, y, L.dtype(0), 4);
}

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
