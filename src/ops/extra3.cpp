// Recent and remaining ops: LinearAttention (27), CausalConvWithState (27), TensorScatter (24), BitCast (26, host),
// CumProd (26), Unique (11, host), ReverseSequence (10), CenterCropPad (18), LRN, RotaryEmbedding (23), LpPool,
// DeformConv (19/22, 2-D).
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

}  // namespace onnx2ggml

// ======== further ops: BitCast, CumProd, Unique, ReverseSequence, CenterCropPad, LRN, RotaryEmbedding, LpPool ========
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

// ---- LRN over channels of [W, H, C, N] ----
struct LrnParams { float alpha, beta, bias; int64_t size; };

void lrn_kernel(ggml_tensor* dst, const ggml_tensor* a, int ith, int nth, void* ud) {
    const LrnParams& p = *static_cast<const LrnParams*>(ud);
    int64_t HW = a->ne[0] * a->ne[1], C = a->ne[2], N = a->ne[3];
    int64_t c1 = (p.size - 1) / 2, c2 = (p.size - 1 + 1) / 2 + 1;  // floor((size-1)/2), ceil((size-1)/2) + 1
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t row = ith; row < N * C; row += nth) {
        int64_t n = row / C, c = row % C;
        int64_t b = std::max<int64_t>(0, c - c1), e = std::min<int64_t>(C, c + c2);
        for (int64_t i = 0; i < HW; i++) {
            double s = 0;
            for (int64_t cc = b; cc < e; cc++) {
                double v = x[(n * C + cc) * HW + i];
                s += v * v;
            }
            y[row * HW + i] = float(double(x[row * HW + i]) / std::pow(double(p.bias) + double(p.alpha) / double(p.size) * s, double(p.beta)));
        }
    }
}

// ---- RotaryEmbedding ----
struct RopeParams { int64_t B, S, H, D, rd, max_pos; bool heads_first, interleaved, has_pos; };

void rope_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
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

// ---- LRN (1) ----
void lower_LRN(Lower& L) {
    if (L.rank(0) != 4) L.error("LRN supports 4-D input (N, C, H, W)");
    LrnParams p{L.node.get_float("alpha", 1e-4f), L.node.get_float("beta", 0.75f), L.node.get_float("bias", 1.0f),
                L.node.get_int("size", 0)};
    if (p.size < 1) L.error("size must be positive");
    ggml_tensor* x = f32_cont(L, L.t(0));
    L.out(0, ggml_map_custom1(L.ctx, x, lrn_kernel, GGML_N_TASKS_MAX, keep_params(p)), L.dtype(0), 4);
}

// ---- RotaryEmbedding (23) ----
void lower_RotaryEmbedding(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    RopeParams p{};
    p.interleaved = L.node.get_int("interleaved", 0) != 0;
    if (r == 4) {
        p.heads_first = true;
        p.B = xs[0], p.H = xs[1], p.S = xs[2], p.D = xs[3];
    } else if (r == 3) {
        int64_t nh = L.node.get_int("num_heads", 0);
        if (nh <= 0) L.error("3-D input needs num_heads");
        if (xs[2] % nh) L.error("hidden size is not divisible by num_heads");
        p.B = xs[0], p.S = xs[1], p.H = nh, p.D = xs[2] / nh;
    } else L.error("input must be 3-D or 4-D");
    p.rd = L.node.get_int("rotary_embedding_dim", 0);
    if (p.rd == 0) p.rd = p.D;
    if (p.rd < 0 || p.rd > p.D || p.rd % 2) L.error("rotary_embedding_dim must be even and at most the head size");
    const Shape &cs = L.shape(1), &ss = L.shape(2);
    if (cs != ss) L.error("cos_cache and sin_cache shapes differ");
    if (cs.empty() || cs.back() != p.rd / 2) L.error("cache last dimension must be rotary_embedding_dim / 2");
    std::vector<ggml_tensor*> args = {f32_cont(L, L.t(0)), f32_cont(L, L.t(1)), f32_cont(L, L.t(2))};
    p.has_pos = L.has(3);
    if (p.has_pos) {
        if (cs.size() != 2) L.error("with position_ids the caches must be 2-D (max_position, rotary_dim / 2)");
        if (L.shape(3) != Shape{p.B, p.S}) L.error("position_ids must have shape (batch, sequence)");
        p.max_pos = cs[0];
        if (const HostTensor* ph = L.in(3).host.get())
            for (int64_t i = 0; i < ph->numel(); i++)
                if (ph->i64(i) < 0 || ph->i64(i) >= p.max_pos) L.error("position id out of range of the caches");
        args.push_back(L.cont(L.t(3)));
    } else if (cs != Shape{p.B, p.S, p.rd / 2}) L.error("without position_ids the caches must be (batch, sequence, rotary_dim / 2)");
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, args[0]->ne[0], args[0]->ne[1], args[0]->ne[2],
                                    args[0]->ne[3], args.data(), int(args.size()), rope_kernel, GGML_N_TASKS_MAX,
                                    keep_params(p));
    L.out(0, y, L.dtype(0), r);
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

// ======== DeformConv (19/22, 2-D) ========
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

}  // namespace onnx2ggml
