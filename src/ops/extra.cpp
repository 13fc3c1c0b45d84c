// Further ops: RMSNormalization, Attention, TopK, OneHot,
// NonZero, Compress, GatherND, ScatterND, ScatterElements, Hardmax, LpNormalization, MeanVarianceNormalization,
// Shrink, Swish.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {


bool want(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }

// Device permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Lower& L, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(L.ctx, ggml_permute(L.ctx, L.cont(x), g[0], g[1], g[2], g[3]));
}

// Perm moving `axis` last, and its inverse.
void axis_last_perm(int r, int axis, std::vector<int>& perm, std::vector<int>& inv) {
    perm.clear();
    for (int i = 0; i < r; i++)
        if (i != axis) perm.push_back(i);
    perm.push_back(axis);
    inv.assign(size_t(r), 0);
    for (int i = 0; i < r; i++) inv[size_t(perm[size_t(i)])] = i;
}

Shape permuted(const Shape& s, const std::vector<int>& perm) {
    Shape o;
    for (int p : perm) o.push_back(s[size_t(p)]);
    return o;
}

// ---- row kernels (one ggml row = ne0 elements) ----
enum class RowK { Hardmax, L1Norm, L2Norm, TopKValues, TopKIndices };
struct RowParams { RowK k; int64_t K; bool largest; };

void row_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RowParams& p = *static_cast<const RowParams*>(ud);
    const ggml_tensor* a = dst->src[0];
    int64_t n = a->ne[0], rows = ggml_nrows(a);
    int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    std::vector<int64_t> idx;
    for (int64_t r = r0; r < r1; r++) {
        const float* x = static_cast<const float*>(a->data) + r * n;
        switch (p.k) {
            case RowK::Hardmax: {
                float* y = static_cast<float*>(dst->data) + r * n;
                int64_t best = 0;
                for (int64_t i = 1; i < n; i++)
                    if (x[i] > x[best]) best = i;
                for (int64_t i = 0; i < n; i++) y[i] = i == best ? 1.f : 0.f;
                break;
            }
            case RowK::L1Norm: case RowK::L2Norm: {
                float* y = static_cast<float*>(dst->data) + r * n;
                double s = 0;
                for (int64_t i = 0; i < n; i++) s += p.k == RowK::L1Norm ? std::fabs(double(x[i])) : double(x[i]) * x[i];
                if (p.k == RowK::L2Norm) s = std::sqrt(s);
                for (int64_t i = 0; i < n; i++) y[i] = s == 0 ? 0.f : float(double(x[i]) / s);
                break;
            }
            case RowK::TopKValues: case RowK::TopKIndices: {
                idx.resize(size_t(n));
                std::iota(idx.begin(), idx.end(), 0);
                auto cmp = [&](int64_t i, int64_t j) {
                    float a1 = x[i], b1 = x[j];
                    if (a1 != b1) return p.largest ? a1 > b1 : a1 < b1;
                    return i < j;
                };
                std::partial_sort(idx.begin(), idx.begin() + p.K, idx.end(), cmp);
                if (p.k == RowK::TopKValues) {
                    float* y = static_cast<float*>(dst->data) + r * p.K;
                    for (int64_t i = 0; i < p.K; i++) y[i] = x[idx[size_t(i)]];
                } else {
                    int32_t* y = static_cast<int32_t*>(dst->data) + r * p.K;
                    for (int64_t i = 0; i < p.K; i++) y[i] = int32_t(idx[size_t(i)]);
                }
                break;
            }
        }
    }
}

ggml_tensor* rows_op(Lower& L, ggml_tensor* x, RowK k, int64_t K = 0, bool largest = true) {
    x = L.cont(x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(L.ctx, x, GGML_TYPE_F32);
    ggml_tensor* args[1] = {x};
    bool topk = k == RowK::TopKValues || k == RowK::TopKIndices;
    return ggml_custom_4d(L.ctx, k == RowK::TopKIndices ? GGML_TYPE_I32 : GGML_TYPE_F32, topk ? K : x->ne[0],
                          x->ne[1], x->ne[2], x->ne[3], args, 1, row_kernel, GGML_N_TASKS_MAX,
                          keep_params(RowParams{k, K, largest}));
}

// Applies a row kernel along ONNX `axis` (moved innermost and back).
ggml_tensor* along_axis(Lower& L, ggml_tensor* x, const Shape& xs, int axis, RowK k, int64_t K = 0,
                        bool largest = true) {
    int r = int(xs.size());
    std::vector<int> perm, inv;
    axis_last_perm(r, axis, perm, inv);
    ggml_tensor* y = rows_op(L, permute_onnx(L, x, r, perm), k, K, largest);
    return permute_onnx(L, y, r, inv);
}

// ---- elementwise kernel ----
struct ShrinkParams { float lambd, bias; };
void shrink_kernel(ggml_tensor* dst, const ggml_tensor* a, int ith, int nth, void* ud) {
    const ShrinkParams& p = *static_cast<const ShrinkParams*>(ud);
    int64_t n = ggml_nelements(dst), per = (n + nth - 1) / nth, b = std::min(n, per * ith), e = std::min(n, b + per);
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t i = b; i < e; i++) y[i] = x[i] < -p.lambd ? x[i] + p.bias : x[i] > p.lambd ? x[i] - p.bias : 0.f;
}

// ---- scatter: out = data; out[off[k]] = reduce(out[off[k]], upd[k]) in order ----
enum class Red { None, Add, Mul, Max, Min };
Red parse_red(Lower& L) {
    std::string s = L.node.get_string("reduction", "none");
    if (s == "none") return Red::None;
    if (s == "add") return Red::Add;
    if (s == "mul") return Red::Mul;
    if (s == "max") return Red::Max;
    if (s == "min") return Red::Min;
    L.error("unknown reduction '" + s + "'");
}
template <typename T>
T reduce(Red r, T a, T b) {
    switch (r) {
        case Red::None: return b;
        case Red::Add: return a + b;
        case Red::Mul: return a * b;
        case Red::Max: return std::max(a, b);
        case Red::Min: return std::min(a, b);
    }
    return b;
}
struct ScatterParams { Red r; };
void scatter_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    Red r = static_cast<const ScatterParams*>(ud)->r;
    const ggml_tensor *d = dst->src[0], *u = dst->src[1], *o = dst->src[2];
    int64_t n = ggml_nelements(d), m = ggml_nelements(u);
    std::memcpy(dst->data, d->data, size_t(n) * 4);
    const int32_t* off = static_cast<const int32_t*>(o->data);
    if (dst->type == GGML_TYPE_F32) {
        float* y = static_cast<float*>(dst->data);
        const float* v = static_cast<const float*>(u->data);
        for (int64_t k = 0; k < m; k++) y[off[k]] = reduce(r, y[off[k]], v[k]);
    } else {
        int32_t* y = static_cast<int32_t*>(dst->data);
        const int32_t* v = static_cast<const int32_t*>(u->data);
        for (int64_t k = 0; k < m; k++) y[off[k]] = reduce(r, y[off[k]], v[k]);
    }
}

void scatter_out(Lower& L, const std::vector<int64_t>& offs) {
    Red red = parse_red(L);
    const Shape& ds = L.shape(0);
    if (L.b.host_mode) {
        const HostTensor& d = L.h(0);
        const HostTensor& u = L.h(2);
        HostTensor o = HostTensor::alloc(d.dtype, d.shape);
        if (o.nbytes) std::memcpy(o.mut(), d.data, o.nbytes);
        bool f = dtype_is_float(d.dtype);
        for (size_t k = 0; k < offs.size(); k++) {
            if (f) o.set_f64(offs[k], reduce(red, o.f64(offs[k]), u.f64(int64_t(k))));
            else o.set_i64(offs[k], reduce(red, o.i64(offs[k]), u.i64(int64_t(k))));
        }
        L.out_host(0, o);
        return;
    }
    HostTensor oh = HostTensor::alloc(DType::INT32, {int64_t(offs.size())});
    for (size_t k = 0; k < offs.size(); k++) oh.set_i64(int64_t(k), offs[k]);
    ggml_tensor* d = L.cont(L.t(0));
    ggml_tensor* u = L.cont(L.t(2));
    if (u->type != d->type) u = ggml_cast(L.ctx, u, d->type);
    if (ggml_nelements(u) != int64_t(offs.size())) L.error("updates do not match the indices");
    ggml_tensor* args[3] = {d, u, L.constant(oh)};
    ggml_tensor* y = ggml_custom_4d(L.ctx, d->type, d->ne[0], d->ne[1], d->ne[2], d->ne[3], args, 3, scatter_kernel, 1,
                                    keep_params(ScatterParams{red}));
    L.out(0, y, L.dtype(0), int(ds.size()));
}

HostTensor host_gather_flat(const HostTensor& src, const Shape& out, const std::vector<int64_t>& map) {
    HostTensor r = HostTensor::alloc(src.dtype, out);
    size_t es = dtype_size(src.dtype);
    for (size_t k = 0; k < map.size(); k++) std::memcpy(r.mut() + k * es, src.data + size_t(map[k]) * es, es);
    return r;
}

// Gathers rows of `inner` elements from input 0 (viewed as [rows, inner]) into ONNX shape `os`.
void gather_rows_out(Lower& L, const std::vector<int64_t>& rows, int64_t inner, const Shape& os) {
    if (L.b.host_mode) {
        std::vector<int64_t> map;
        map.reserve(rows.size() * size_t(inner));
        for (int64_t r : rows)
            for (int64_t i = 0; i < inner; i++) map.push_back(r * inner + i);
        L.out_host(0, host_gather_flat(L.h(0), os, map));
        return;
    }
    HostTensor ih = HostTensor::alloc(DType::INT32, {int64_t(rows.size())});
    for (size_t k = 0; k < rows.size(); k++) ih.set_i64(int64_t(k), rows[k]);
    int64_t total = shape_numel(L.shape(0));
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), inner, inner ? total / inner : 0);
    ggml_tensor* y = ggml_get_rows(L.ctx, x, L.constant(ih));
    L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
}

}  // namespace

// ---- RMSNormalization (23) ----
void lower_RMSNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = rows_from_axis(L, L.t(0), xs, axis);
    ggml_tensor* y = reshape_to(L, ggml_rms_norm(L.ctx, x, eps), xs);
    if (broadcast_shapes(L, xs, L.shape(1)) != xs) L.error("scale does not broadcast to the input");
    y = ggml_mul(L.ctx, y, L.t(1));
    L.out(0, y, L.dtype(0), r);
}

// ---- Attention (23) ----
void lower_Attention(Lower& L) {
    int r = L.rank(0);
    if ((r != 3 && r != 4) || L.rank(1) != r || L.rank(2) != r) L.error("Q, K and V must all be 3-D or all 4-D");
    Shape qs = L.shape(0), ks = L.shape(1), vs = L.shape(2);
    int64_t B = qs[0], Hq, Hkv, S, D, Dk, Dv;
    ggml_tensor *q = L.t(0), *k = L.t(1), *v = L.t(2);
    if (r == 3) {
        Hq = L.node.get_int("q_num_heads", 0);
        Hkv = L.node.get_int("kv_num_heads", 0);
        if (Hq <= 0 || Hkv <= 0) L.error("3-D inputs need q_num_heads and kv_num_heads");
        if (qs[2] % Hq || ks[2] % Hkv || vs[2] % Hkv) L.error("hidden sizes are not divisible by the head counts");
        S = qs[1];
        D = qs[2] / Hq;
        Dk = ks[2] / Hkv;
        Dv = vs[2] / Hkv;
        auto heads = [&](ggml_tensor* x, int64_t len, int64_t H, int64_t Dh) {
            x = ggml_reshape_4d(L.ctx, L.cont(x), Dh, H, len, B);
            return ggml_cont(L.ctx, ggml_permute(L.ctx, x, 0, 2, 1, 3));  // [Dh, len, H, B]
        };
        q = heads(q, S, Hq, D);
        k = heads(k, ks[1], Hkv, Dk);
        v = heads(v, vs[1], Hkv, Dv);
        if (ks[1] != vs[1]) L.error("K and V sequence lengths differ");
    } else {
        Hq = qs[1];
        S = qs[2];
        D = qs[3];
        Hkv = ks[1];
        Dk = ks[3];
        Dv = vs[3];
        if (vs[1] != Hkv || vs[2] != ks[2]) L.error("K and V shapes do not match");
        if (L.node.has("q_num_heads") && L.node.get_int("q_num_heads", 0) != Hq) L.error("q_num_heads != Q heads");
    }
    if (Dk != D) L.error("Q and K head sizes differ");
    if (Hq % Hkv) L.error("q heads must be a multiple of kv heads");
    if (L.has(4) != L.has(5)) L.error("past_key and past_value must be given together");
    int64_t P = 0;
    if (L.has(4)) {
        const Shape& pk = L.shape(4);
        const Shape& pv = L.shape(5);
        if (pk.size() != 4 || pv.size() != 4 || pk[0] != B || pk[1] != Hkv || pk[3] != D || pv[1] != Hkv ||
            pv[2] != pk[2] || pv[3] != Dv)
            L.error("past_key/past_value shapes do not match");
        P = pk[2];
        k = ggml_concat(L.ctx, L.cont(L.t(4)), L.cont(k), 1);
        v = ggml_concat(L.ctx, L.cont(L.t(5)), L.cont(v), 1);
    }
    int64_t T = k->ne[1];
    float scale = L.node.has("scale") ? L.node.get_float("scale", 1.0f) : float(1.0 / std::sqrt(double(D)));
    float softcap = L.node.get_float("softcap", 0.0f);
    int64_t mode = L.node.get_int("qk_matmul_output_mode", 0);
    if (mode < 0 || mode > 3) L.error("unknown qk_matmul_output_mode");

    ggml_tensor* qk = ggml_mul_mat(L.ctx, L.cont(k), L.cont(q));  // [T, S, Hq, B]; kv head i/(Hq/Hkv)
    qk = ggml_scale(L.ctx, qk, scale);
    if (softcap > 0) qk = ggml_scale(L.ctx, ggml_tanh(L.ctx, ggml_scale(L.ctx, qk, 1.0f / softcap)), softcap);
    ggml_tensor* qk0 = qk;

    Shape full = {B, Hq, S, T};
    auto add_bias = [&](ggml_tensor* m, const Shape& ms) {
        if (broadcast_shapes(L, ms, full) != full) L.error("attn_mask does not broadcast to [B, heads, S, T]");
        qk = ggml_add(L.ctx, qk, m);
    };
    if (L.has(3)) {
        Shape ms = L.shape(3);
        if (ms.empty() || ms.size() > 4) L.error("attn_mask must have rank 1..4");
        ggml_tensor* m = L.t(3);
        if (m->type != GGML_TYPE_F32) m = ggml_cast(L.ctx, m, GGML_TYPE_F32);
        if (L.dtype(3) == DType::BOOL) {
            HostTensor z = HostTensor::from_f64(DType::FLOAT, {}, {0.0});
            HostTensor ni = HostTensor::from_f64(DType::FLOAT, {}, {-INFINITY});
            m = custom_where(L, m, ms, L.constant(z), {}, L.constant(ni), {}, ms);
        }
        if (ms.back() > T) L.error("attn_mask is longer than the total sequence");
        if (ms.back() < T) {  // padded with -inf (false)
            Shape ps = ms;
            ps.back() = T - ms.back();
            HostTensor pad = HostTensor::alloc(DType::FLOAT, ps);
            for (int64_t i = 0; i < pad.numel(); i++) pad.set_f64(i, -INFINITY);
            m = ggml_concat(L.ctx, L.cont(m), L.constant(pad), 0);
            ms.back() = T;
        }
        add_bias(m, ms);
    }
    if (L.node.get_int("is_causal", 0)) {
        HostTensor c = HostTensor::alloc(DType::FLOAT, {S, T});
        for (int64_t i = 0; i < S; i++)
            for (int64_t j = P; j < T; j++)
                if (j - P > i) c.set_f64(i * T + j, -INFINITY);
        add_bias(L.constant(c), {S, T});
    }
    if (L.has(6)) {  // nonpad_kv_seqlen
        auto lens = L.ints(6);
        if (int64_t(lens.size()) != B) L.error("nonpad_kv_seqlen must have batch_size elements");
        HostTensor c = HostTensor::alloc(DType::FLOAT, {B, 1, 1, T});
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < T; j++)
                if (j >= lens[size_t(b)]) c.set_f64(b * T + j, -INFINITY);
        add_bias(L.constant(c), {B, 1, 1, T});
    }
    ggml_tensor* qkb = qk;
    ggml_tensor* p = ggml_soft_max(L.ctx, L.cont(qk));
    ggml_tensor* vt = ggml_cont(L.ctx, ggml_transpose(L.ctx, L.cont(v)));  // [T, Dv, Hkv, B]
    ggml_tensor* y = ggml_mul_mat(L.ctx, vt, p);                           // [Dv, S, Hq, B]
    DType dt = L.dtype(0);
    if (r == 3) {
        y = ggml_cont(L.ctx, ggml_permute(L.ctx, y, 0, 2, 1, 3));  // [Dv, Hq, S, B]
        y = ggml_reshape_3d(L.ctx, y, Dv * Hq, S, B);
    }
    L.out(0, y, dt, r);
    if (want(L, 1)) L.out(1, L.cont(k), dt, 4);
    if (want(L, 2)) L.out(2, L.cont(v), dt, 4);
    if (want(L, 3)) L.out(3, mode == 3 ? p : mode == 2 ? qkb : qk0, dt, 4);
}

// ---- Hardmax, LpNormalization, MeanVarianceNormalization, Shrink ----
void lower_Hardmax(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", L.opset >= 13 ? -1 : 1), r);
    if (L.opset < 13) {  // coerced to 2-D at axis
        ggml_tensor* v = rows_from_axis(L, L.t(0), xs, axis);
        return L.out(0, reshape_to(L, rows_op(L, v, RowK::Hardmax), xs), L.dtype(0), r);
    }
    L.out(0, along_axis(L, L.t(0), xs, axis, RowK::Hardmax), L.dtype(0), r);
}

void lower_LpNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    int64_t p = L.node.get_int("p", 2);
    if (p != 1 && p != 2) L.error("p must be 1 or 2");
    L.out(0, along_axis(L, L.t(0), xs, axis, p == 1 ? RowK::L1Norm : RowK::L2Norm), L.dtype(0), r);
}

void lower_MeanVarianceNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    std::vector<int64_t> axes = L.node.get_ints("axes", {0, 2, 3});
    std::vector<bool> red(size_t(r), false);
    for (int64_t a : axes) red[size_t(norm_axis(L, a, r))] = true;
    std::vector<int> perm, inv(static_cast<size_t>(r));
    for (int i = 0; i < r; i++)
        if (!red[size_t(i)]) perm.push_back(i);
    int64_t inner = 1;
    for (int i = 0; i < r; i++)
        if (red[size_t(i)]) {
            perm.push_back(i);
            inner *= xs[size_t(i)];
        }
    for (int i = 0; i < r; i++) inv[size_t(perm[size_t(i)])] = i;
    Shape ps = permuted(xs, perm);
    ggml_tensor* x = permute_onnx(L, L.t(0), r, perm);
    x = ggml_reshape_2d(L.ctx, L.cont(x), inner, shape_numel(xs) / std::max<int64_t>(1, inner));
    ggml_tensor* y = reshape_to(L, ggml_norm(L.ctx, x, 1e-9f), ps);
    L.out(0, permute_onnx(L, y, r, inv), L.dtype(0), r);
}

void lower_Shrink(Lower& L) {
    ShrinkParams p{L.node.get_float("lambd", 0.5f), L.node.get_float("bias", 0.0f)};
    ggml_tensor* x = L.cont(L.t(0));
    if (x->type != GGML_TYPE_F32) L.error("Shrink on the device needs float input");
    L.out(0, ggml_map_custom1(L.ctx, x, shrink_kernel, GGML_N_TASKS_MAX, keep_params(p)), L.dtype(0), L.rank(0));
}

void host_Shrink(Lower& L) {
    double lambd = L.node.get_float("lambd", 0.5f), bias = L.node.get_float("bias", 0.0f);
    const HostTensor& x = L.h(0);
    HostTensor o = HostTensor::alloc(x.dtype, x.shape);
    for (int64_t i = 0; i < x.numel(); i++) {
        double v = x.f64(i);
        o.set_f64(i, v < -lambd ? v + bias : v > lambd ? v - bias : 0.0);
    }
    L.out_host(0, o);
}

// ---- TopK ----
static void topk_params(Lower& L, int& axis, int64_t& K, bool& largest) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    axis = norm_axis(L, L.node.get_int("axis", -1), r);
    if (L.opset >= 10) {
        auto kv = L.ints(1);
        if (kv.size() != 1) L.error("K must hold one value");
        K = kv[0];
    } else K = L.node.get_int("k", 0);
    largest = L.node.get_int("largest", 1) != 0;
    if (K < 0 || K > xs[size_t(axis)]) L.error("K out of range");
}

void lower_TopK(Lower& L) {
    int axis;
    int64_t K;
    bool largest;
    topk_params(L, axis, K, largest);
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (K == 0) L.error("K = 0 gives an empty output, which ggml cannot hold");
    if (!dtype_is_float(L.dtype(0))) L.error("TopK of integer data computed on the device is not supported");
    ggml_tensor* x = L.t(0);
    L.out(0, along_axis(L, x, xs, axis, RowK::TopKValues, K, largest), L.dtype(0), r);
    if (want(L, 1)) L.out(1, along_axis(L, x, xs, axis, RowK::TopKIndices, K, largest), DType::INT64, r);
}

void host_TopK(Lower& L) {
    int axis;
    int64_t K;
    bool largest;
    topk_params(L, axis, K, largest);
    const HostTensor& x = L.h(0);
    Shape os = x.shape;
    int64_t A = os[size_t(axis)];
    os[size_t(axis)] = K;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= x.shape[size_t(i)];
    for (size_t i = size_t(axis) + 1; i < x.shape.size(); i++) inner *= x.shape[i];
    std::vector<int64_t> map, ids;
    std::vector<int64_t> idx(static_cast<size_t>(A));
    bool f = dtype_is_float(x.dtype);
    // Output order: [outer, K, inner].
    map.assign(size_t(outer * K * inner), 0);
    ids.assign(map.size(), 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            std::iota(idx.begin(), idx.end(), 0);
            auto at = [&](int64_t a) { return (o * A + a) * inner + in; };
            std::stable_sort(idx.begin(), idx.end(), [&](int64_t i, int64_t j) {
                if (f) {
                    double a1 = x.f64(at(i)), b1 = x.f64(at(j));
                    return largest ? a1 > b1 : a1 < b1;
                }
                int64_t a1 = x.i64(at(i)), b1 = x.i64(at(j));
                return largest ? a1 > b1 : a1 < b1;
            });
            for (int64_t kk = 0; kk < K; kk++) {
                size_t dst = size_t((o * K + kk) * inner + in);
                map[dst] = at(idx[size_t(kk)]);
                ids[dst] = idx[size_t(kk)];
            }
        }
    L.out_host(0, host_gather_flat(x, os, map));
    if (want(L, 1)) L.out_host(1, HostTensor::from_i64(DType::INT64, os, ids));
}

// ---- OneHot, NonZero (host) ----
void host_OneHot(Lower& L) {
    const HostTensor& ind = L.h(0);
    auto dv = L.h(1).to_f64();
    if (dv.size() != 1) L.error("depth must hold one value");
    int64_t depth = int64_t(dv[0]);
    const HostTensor& vals = L.h(2);
    if (vals.numel() != 2) L.error("values must hold two elements");
    int r = int(ind.shape.size()) + 1;
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    Shape os = ind.shape;
    os.insert(os.begin() + axis, depth);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= ind.shape[size_t(i)];
    for (size_t i = size_t(axis); i < ind.shape.size(); i++) inner *= ind.shape[i];
    std::vector<int64_t> map(size_t(outer * depth * inner), 0);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            int64_t v = int64_t(ind.f64(o * inner + in));
            if (v < 0) v += depth;
            for (int64_t d = 0; d < depth; d++) map[size_t((o * depth + d) * inner + in)] = d == v ? 1 : 0;
        }
    L.out_host(0, host_gather_flat(vals, os, map));
}

void host_NonZero(Lower& L) {
    const HostTensor& x = L.h(0);
    int r = int(x.shape.size());
    auto st = strides_of(x.shape);
    std::vector<int64_t> nz;
    bool f = dtype_is_float(x.dtype);
    for (int64_t i = 0; i < x.numel(); i++)
        if (f ? x.f64(i) != 0 : x.i64(i) != 0) nz.push_back(i);
    int64_t n = int64_t(nz.size());
    int rr = std::max(r, 0);
    std::vector<int64_t> out(size_t(rr * n));
    for (int64_t k = 0; k < n; k++) {
        int64_t rem = nz[size_t(k)];
        for (int d = 0; d < r; d++) {
            out[size_t(d * n + k)] = rem / st[size_t(d)];
            rem %= st[size_t(d)];
        }
    }
    L.out_host(0, HostTensor::from_i64(DType::INT64, {int64_t(rr), n}, out));
}

// ---- Compress ----
void lower_Compress(Lower& L) {
    const Shape& xs = L.shape(0);
    const HostTensor& c = L.h(1);
    std::vector<int64_t> sel;
    if (!L.node.has("axis")) {
        int64_t n = std::min(c.numel(), shape_numel(xs));
        for (int64_t i = 0; i < n; i++)
            if (c.i64(i)) sel.push_back(i);
        return gather_rows_out(L, sel, 1, {int64_t(sel.size())});
    }
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    int64_t A = xs[size_t(axis)], outer = 1, inner = 1;
    for (int i = 0; i < axis; i++) outer *= xs[size_t(i)];
    for (int i = axis + 1; i < r; i++) inner *= xs[size_t(i)];
    std::vector<int64_t> keep_idx;
    for (int64_t i = 0; i < std::min(c.numel(), A); i++)
        if (c.i64(i)) keep_idx.push_back(i);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j : keep_idx) sel.push_back(o * A + j);
    Shape os = xs;
    os[size_t(axis)] = int64_t(keep_idx.size());
    gather_rows_out(L, sel, inner, os);
}

// ---- GatherND ----
void lower_GatherND(Lower& L) {
    const Shape& ds = L.shape(0);
    const HostTensor& ih = L.h(1);
    const Shape& is = ih.shape;
    int64_t b = L.node.get_int("batch_dims", 0);
    if (is.empty()) L.error("indices must have rank >= 1");
    int64_t last = is.back();
    if (b < 0 || b + last > int64_t(ds.size())) L.error("indices' last dimension is too large");
    int64_t batch = 1, inner = 1;
    for (int64_t i = 0; i < b; i++) batch *= ds[size_t(i)];
    for (size_t i = size_t(b + last); i < ds.size(); i++) inner *= ds[i];
    int64_t per_batch_rows = 1;
    for (int64_t i = b; i < b + last; i++) per_batch_rows *= ds[size_t(i)];
    int64_t nsl = ih.numel() / std::max<int64_t>(1, last);  // slices in total
    int64_t per_batch = nsl / std::max<int64_t>(1, batch);
    std::vector<int64_t> rows(static_cast<size_t>(nsl));
    for (int64_t s = 0; s < nsl; s++) {
        int64_t row = 0;
        for (int64_t j = 0; j < last; j++) {
            int64_t dim = ds[size_t(b + j)], v = ih.i64(s * last + j);
            if (v < 0) v += dim;
            if (v < 0 || v >= dim) L.error("GatherND index out of range");
            row = row * dim + v;
        }
        rows[size_t(s)] = (s / std::max<int64_t>(1, per_batch)) * per_batch_rows + row;
    }
    Shape os(is.begin(), is.end() - 1);
    for (size_t i = size_t(b + last); i < ds.size(); i++) os.push_back(ds[i]);
    gather_rows_out(L, rows, inner, os);
}

// ---- ScatterND, ScatterElements ----
void lower_ScatterND(Lower& L) {
    const Shape& ds = L.shape(0);
    const HostTensor& ih = L.h(1);
    const Shape& is = ih.shape;
    if (is.empty()) L.error("indices must have rank >= 1");
    int64_t last = is.back();
    if (last > int64_t(ds.size())) L.error("indices' last dimension is too large");
    int64_t inner = 1;
    for (size_t i = size_t(last); i < ds.size(); i++) inner *= ds[i];
    int64_t nsl = ih.numel() / std::max<int64_t>(1, last);
    if (shape_numel(L.shape(2)) != nsl * inner) L.error("updates shape does not match");
    auto st = strides_of(ds);
    std::vector<int64_t> offs;
    offs.reserve(size_t(nsl * inner));
    for (int64_t s = 0; s < nsl; s++) {
        int64_t base = 0;
        for (int64_t j = 0; j < last; j++) {
            int64_t dim = ds[size_t(j)], v = ih.i64(s * last + j);
            if (v < 0) v += dim;
            if (v < 0 || v >= dim) L.error("ScatterND index out of range");
            base += v * st[size_t(j)];
        }
        for (int64_t i = 0; i < inner; i++) offs.push_back(base + i);
    }
    scatter_out(L, offs);
}

void lower_ScatterElements(Lower& L) {
    const Shape& ds = L.shape(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), int(ds.size()));
    auto offs = element_offsets(L, ds, L.h(1), axis);
    scatter_out(L, offs);
}

}  // namespace onnx2ggml

namespace onnx2ggml {

// ---- Swish (24): x * sigmoid(alpha * x) ----
void lower_Swish(Lower& L) {
    float alpha = L.node.get_float("alpha", 1.0f);
    ggml_tensor* x = L.t(0);
    ggml_tensor* y = ggml_mul(L.ctx, x, ggml_sigmoid(L.ctx, alpha == 1.0f ? x : ggml_scale(L.ctx, x, alpha)));
    L.out(0, y, L.dtype(0), L.rank(0));
}

}  // namespace onnx2ggml
