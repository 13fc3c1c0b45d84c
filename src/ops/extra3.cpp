// Recent ops: LinearAttention (27), CausalConvWithState (27), NonMaxSuppression (10, host), TensorScatter (24),
// RoiAlign (10/16/22).
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

// ---- LinearAttention: one work item per (batch, kv head) runs the whole recurrence ----
struct LinAttnParams {
    int64_t B, T, Hq, Hkv, Dk, Dv;
    float scale;
    bool gating, delta;
    int i_state, i_decay, i_beta;  // src slots, -1 when absent
    bool decay_per_dim;            // decay last dim Hkv*Dk (else Hkv)
    bool beta_per_head;            // beta last dim Hkv (else 1)
};

void linattn_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const LinAttnParams& p = *static_cast<const LinAttnParams*>(ud);
    const float* q = static_cast<const float*>(dst->src[0]->data);
    const float* k = static_cast<const float*>(dst->src[1]->data);
    const float* v = static_cast<const float*>(dst->src[2]->data);
    const float* s0 = p.i_state >= 0 ? static_cast<const float*>(dst->src[p.i_state]->data) : nullptr;
    const float* g = p.i_decay >= 0 ? static_cast<const float*>(dst->src[p.i_decay]->data) : nullptr;
    const float* be = p.i_beta >= 0 ? static_cast<const float*>(dst->src[p.i_beta]->data) : nullptr;
    float* out = static_cast<float*>(dst->data);                  // [B, T, Hq, Dv]
    float* st_out = out + p.B * p.T * p.Hq * p.Dv;                // [B, Hkv, Dk, Dv]
    const int64_t G = p.Hq / p.Hkv, Dk = p.Dk, Dv = p.Dv;
    std::vector<float> S(static_cast<size_t>(Dk * Dv)), vt(static_cast<size_t>(Dv)), ef(static_cast<size_t>(Dk));
    for (int64_t item = ith; item < p.B * p.Hkv; item += nth) {
        int64_t b = item / p.Hkv, h = item % p.Hkv;
        if (s0) std::memcpy(S.data(), s0 + item * Dk * Dv, size_t(Dk * Dv) * sizeof(float));
        else std::fill(S.begin(), S.end(), 0.f);
        for (int64_t t = 0; t < p.T; t++) {
            int64_t bt = b * p.T + t;
            const float* kt = k + (bt * p.Hkv + h) * Dk;
            const float* vv = v + (bt * p.Hkv + h) * Dv;
            if (p.gating) {
                if (p.decay_per_dim) {
                    const float* gt = g + (bt * p.Hkv + h) * Dk;
                    for (int64_t d = 0; d < Dk; d++) ef[size_t(d)] = std::exp(gt[d]);
                } else std::fill(ef.begin(), ef.end(), std::exp(g[bt * p.Hkv + h]));
                for (int64_t d = 0; d < Dk; d++)
                    for (int64_t m = 0; m < Dv; m++) S[size_t(d * Dv + m)] *= ef[size_t(d)];
            }
            std::copy(vv, vv + Dv, vt.begin());
            if (p.delta) {
                float bt_ = be[p.beta_per_head ? bt * p.Hkv + h : bt];
                for (int64_t m = 0; m < Dv; m++) {
                    float r = 0;
                    for (int64_t d = 0; d < Dk; d++) r += S[size_t(d * Dv + m)] * kt[d];
                    vt[size_t(m)] = bt_ * (vt[size_t(m)] - r);
                }
            }
            for (int64_t d = 0; d < Dk; d++)
                for (int64_t m = 0; m < Dv; m++) S[size_t(d * Dv + m)] += kt[d] * vt[size_t(m)];
            for (int64_t hq = h * G; hq < (h + 1) * G; hq++) {
                const float* qt = q + (bt * p.Hq + hq) * Dk;
                float* o = out + (bt * p.Hq + hq) * Dv;
                for (int64_t m = 0; m < Dv; m++) {
                    float acc = 0;
                    for (int64_t d = 0; d < Dk; d++) acc += qt[d] * S[size_t(d * Dv + m)];
                    o[m] = p.scale * acc;
                }
            }
        }
        std::memcpy(st_out + item * Dk * Dv, S.data(), size_t(Dk * Dv) * sizeof(float));
    }
}

// ---- RoiAlign: one work item per (roi, channel) ----
struct RoiParams {
    int64_t oh, ow, sampling;
    float spatial_scale;
    bool half_pixel, max_mode;
};

struct Sample { int64_t p[4]; double w[4]; };

void roi_samples(const RoiParams& p, const float* roi, int64_t H, int64_t W, std::vector<Sample>& out,
                 int64_t& gh, int64_t& gw) {
    double off = p.half_pixel ? 0.5 : 0.0;
    double x0 = double(roi[0]) * p.spatial_scale - off, y0 = double(roi[1]) * p.spatial_scale - off;
    double x1 = double(roi[2]) * p.spatial_scale - off, y1 = double(roi[3]) * p.spatial_scale - off;
    double rw = x1 - x0, rh = y1 - y0;
    if (!p.half_pixel) {  // malformed RoIs are forced to 1x1
        rw = std::max(rw, 1.0);
        rh = std::max(rh, 1.0);
    }
    double bh = rh / double(p.oh), bw = rw / double(p.ow);
    gh = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rh / double(p.oh)));
    gw = p.sampling > 0 ? p.sampling : int64_t(std::ceil(rw / double(p.ow)));
    out.clear();
    for (int64_t ph = 0; ph < p.oh; ph++)
        for (int64_t pw = 0; pw < p.ow; pw++)
            for (int64_t iy = 0; iy < gh; iy++) {
                double yy = y0 + double(ph) * bh + (double(iy) + 0.5) * bh / double(gh);
                for (int64_t ix = 0; ix < gw; ix++) {
                    double x = x0 + double(pw) * bw + (double(ix) + 0.5) * bw / double(gw), y = yy;
                    Sample s{};
                    if (y < -1.0 || y > double(H) || x < -1.0 || x > double(W)) {
                        out.push_back(s);
                        continue;
                    }
                    y = std::max(y, 0.0);
                    x = std::max(x, 0.0);
                    int64_t ylo = int64_t(y), xlo = int64_t(x), yhi, xhi;
                    if (ylo >= H - 1) {
                        yhi = ylo = H - 1;
                        y = double(ylo);
                    } else yhi = ylo + 1;
                    if (xlo >= W - 1) {
                        xhi = xlo = W - 1;
                        x = double(xlo);
                    } else xhi = xlo + 1;
                    double ly = y - double(ylo), lx = x - double(xlo), hy = 1 - ly, hx = 1 - lx;
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
            double acc = 0;
            bool first = true;
            for (int64_t g = 0; g < gh * gw; g++, si++) {
                const Sample& s = smp[si];
                if (p.max_mode) {
                    double v = std::max({s.w[0] * img[s.p[0]], s.w[1] * img[s.p[1]], s.w[2] * img[s.p[2]],
                                         s.w[3] * img[s.p[3]]});
                    acc = first ? v : std::max(acc, v);
                    first = false;
                } else
                    acc += s.w[0] * img[s.p[0]] + s.w[1] * img[s.p[1]] + s.w[2] * img[s.p[2]] + s.w[3] * img[s.p[3]];
            }
            o[cell] = float(p.max_mode ? acc : acc / double(count));
        }
    }
}

}  // namespace

// ---- LinearAttention (27) ----
void lower_LinearAttention(Lower& L) {
    for (int i = 0; i < 3; i++)
        if (L.rank(i) != 3) L.error("query, key and value must be 3-D (batch, length, heads * head_size)");
    const Shape &qs = L.shape(0), &ks = L.shape(1), &vs = L.shape(2);
    int64_t Hq = L.node.get_int("q_num_heads", 0), Hkv = L.node.get_int("kv_num_heads", 0);
    if (Hq <= 0 || Hkv <= 0) L.error("q_num_heads and kv_num_heads must be given and positive");
    if (Hq % Hkv) L.error("q_num_heads must be a multiple of kv_num_heads");
    int64_t B = qs[0], T = qs[1];
    if (ks[0] != B || vs[0] != B || ks[1] != T || vs[1] != T) L.error("query, key and value batch/length differ");
    if (qs[2] % Hq || vs[2] % Hkv) L.error("hidden sizes are not divisible by the head counts");
    int64_t Dk = qs[2] / Hq, Dv = vs[2] / Hkv;
    if (ks[2] != Hkv * Dk) L.error("key hidden size must be kv_num_heads * query head size");
    std::string rule = L.node.get_string("update_rule", "gated_delta");
    bool gating, delta;
    if (rule == "linear") gating = false, delta = false;
    else if (rule == "gated") gating = true, delta = false;
    else if (rule == "delta") gating = false, delta = true;
    else if (rule == "gated_delta") gating = true, delta = true;
    else L.error("unknown update_rule '" + rule + "'");
    if (gating != L.has(4)) L.error("update_rule '" + rule + (gating ? "' needs" : "' takes no") + " decay input");
    if (delta != L.has(5)) L.error("update_rule '" + rule + (delta ? "' needs" : "' takes no") + " beta input");
    float scale = L.node.get_float("scale", 0.0f);
    if (scale == 0.0f) scale = float(1.0 / std::sqrt(double(Dk)));

    LinAttnParams p{B, T, Hq, Hkv, Dk, Dv, scale, gating, delta, -1, -1, -1, false, false};
    std::vector<ggml_tensor*> args = {f32_cont(L, L.t(0)), f32_cont(L, L.t(1)), f32_cont(L, L.t(2))};
    DType sdt = L.dtype(0);
    if (L.has(3)) {
        if (L.shape(3) != Shape{B, Hkv, Dk, Dv}) L.error("past_state must have shape (B, kv_num_heads, d_k, d_v)");
        p.i_state = int(args.size());
        args.push_back(f32_cont(L, L.t(3)));
        sdt = L.dtype(3);
    }
    if (gating) {
        const Shape& ds = L.shape(4);
        if (ds.size() != 3 || ds[0] != B || ds[1] != T || (ds[2] != Hkv && ds[2] != Hkv * Dk))
            L.error("decay must have shape (B, T, kv_num_heads) or (B, T, kv_num_heads * d_k)");
        p.decay_per_dim = ds[2] == Hkv * Dk;  // with d_k = 1 both layouts coincide
        p.i_decay = int(args.size());
        args.push_back(f32_cont(L, L.t(4)));
    }
    if (delta) {
        const Shape& bs = L.shape(5);
        if (bs.size() != 3 || bs[0] != B || bs[1] != T || (bs[2] != Hkv && bs[2] != 1))
            L.error("beta must have shape (B, T, kv_num_heads) or (B, T, 1)");
        p.beta_per_head = bs[2] == Hkv;
        p.i_beta = int(args.size());
        args.push_back(f32_cont(L, L.t(5)));
    }
    int64_t n_out = B * T * Hq * Dv, n_st = B * Hkv * Dk * Dv;
    ggml_tensor* all = ggml_custom_4d(L.ctx, GGML_TYPE_F32, n_out + n_st, 1, 1, 1, args.data(), int(args.size()),
                                      linattn_kernel, GGML_N_TASKS_MAX, keep_params(p));
    ggml_tensor* y = ggml_reshape_3d(L.ctx, ggml_view_1d(L.ctx, all, n_out, 0), Hq * Dv, T, B);
    L.out(0, y, L.dtype(0), 3);
    if (wanted(L, 1)) {
        ggml_tensor* s = ggml_view_1d(L.ctx, all, n_st, size_t(n_out) * sizeof(float));
        L.out(1, ggml_reshape_4d(L.ctx, s, Dv, Dk, Hkv, B), sdt, 4);
    }
}

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
