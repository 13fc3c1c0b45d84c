// Neural-network ops: normalizations, Softmax, MatMul, Gemm, Einsum, Resize.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "ops/custom.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

// A constant weight (input i) transformed once on the host and cached on the device under its name + suffix,
// stored as `type` (F32, or the reduced precision of --weights for matrix-product weights).
ggml_tensor* cached_weight(Lower& L, int i, const std::string& suffix, HostTensor (*fn)(const HostTensor&),
                           ggml_type type = GGML_TYPE_F32);

namespace {

// Device permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Lower& L, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(L.ctx, ggml_permute(L.ctx, x, g[0], g[1], g[2], g[3]));
}


HostTensor transpose_last2(const HostTensor& w) {
    Shape s = w.shape;
    size_t r = s.size();
    int64_t R = s[r - 2], C = s[r - 1], B = w.numel() / std::max<int64_t>(1, R * C);
    Shape os = s;
    std::swap(os[r - 2], os[r - 1]);
    HostTensor out = HostTensor::alloc(DType::FLOAT, os);
    auto f = w.to_f32();
    float* o = reinterpret_cast<float*>(out.mut());
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) o[b * R * C + j * R + i] = f[size_t(b * R * C + i * C + j)];
    return out;
}

HostTensor identity(const HostTensor& w) { return w; }

// Storage type of a constant matrix-product weight: --weights, where ggml's CPU kernels take that row length.
ggml_type matmul_type(Lower& L, const Val& w) {
    ggml_type t = L.b.weights.matmul_type;
    int64_t K = w.rank() >= 2 ? w.shape[w.shape.size() - 2] : 0;  // the shared dim, ne0 once transposed
    if (t == GGML_TYPE_F32 || w.dtype != DType::FLOAT || K % 32 != 0) return GGML_TYPE_F32;
    return t;
}

// B^T for B = input i of ONNX shape [..., K, N]: ggml tensor with ne [K, N, ...].
ggml_tensor* transposed_rhs(Lower& L, int i) {
    Val& v = L.in(i);
    if (v.is_weight && v.host && v.rank() >= 2) return cached_weight(L, i, "#T", transpose_last2, matmul_type(L, v));
    return ggml_cont(L.ctx, ggml_transpose(L.ctx, L.t(i)));
}

// a: ONNX [..., M, K] (ggml [K, M, ...]); bt: ggml [K, N, ...] -> ONNX [..., M, N].
ggml_tensor* matmul_core(Lower& L, ggml_tensor* a, const Shape& as, ggml_tensor* bt, const Shape& bs_t) {
    // Batch dims: ggml_mul_mat broadcasts bt over a when a's batch is a multiple of bt's.
    bool ok = a->ne[2] % bt->ne[2] == 0 && a->ne[3] % bt->ne[3] == 0;
    if (!ok) {
        int64_t ne2 = std::max(a->ne[2], bt->ne[2]), ne3 = std::max(a->ne[3], bt->ne[3]);
        a = ggml_repeat_4d(L.ctx, a, a->ne[0], a->ne[1], ne2, ne3);
        if (bt->ne[2] != ne2 || bt->ne[3] != ne3) bt = ggml_repeat_4d(L.ctx, bt, bt->ne[0], bt->ne[1], ne2, ne3);
    }
    (void)as;
    (void)bs_t;
    return mul_mat(L, bt, L.cont(a));
}

}  // namespace

// Rows of src (contiguous) copied into the wider rows of dst, zero-filled: a memcpy per row (ggml_pad is an
// element-by-element loop).
static void pad_rows_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* src = dst->src[0];
    const int64_t n = src->ne[0], m = dst->ne[0], rows = ggml_nrows(dst);
    const int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        float* d = static_cast<float*>(dst->data) + r * m;
        std::memcpy(d, static_cast<const float*>(src->data) + r * n, sizeof(float) * size_t(n));
        std::memset(d + n, 0, sizeof(float) * size_t(m - n));
    }
}

static ggml_tensor* pad_rows(Lower& L, ggml_tensor* x, int64_t pad) {
    x = L.cont(x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, x->ne[0] + pad, x->ne[1], x->ne[2], x->ne[3], args, 1,
                                    pad_rows_kernel, GGML_N_TASKS_MAX, nullptr);
    L.b.kernel[y] = "pad_rows";
    return y;
}

ggml_tensor* mul_mat(Lower& L, ggml_tensor* a, ggml_tensor* b) {
    const int64_t K = a->ne[0], pad = (16 - K % 16) % 16;
    // Worth a copy of both operands when the product is large (attention with 40-wide heads, K = 77 tokens).
    if (pad && L.b.weights.native_cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && K >= 16 &&
        a->ne[1] >= 16 && b->ne[1] >= 16) {
        a = pad_rows(L, a, pad);
        b = pad_rows(L, b, pad);
    }
    return ggml_mul_mat(L.ctx, a, b);
}

ggml_tensor* cached_weight(Lower& L, int i, const std::string& suffix, HostTensor (*fn)(const HostTensor&),
                           ggml_type type) {
    Val& v = L.in(i);
    std::string key = v.name + suffix + (type == GGML_TYPE_F32 ? "" : std::string("#") + ggml_type_name(type));
    auto it = L.b.weights.tensors.find(key);
    if (it != L.b.weights.tensors.end()) return it->second;
    HostTensor h = fn(*v.host);
    ggml_tensor* t = L.b.weights.get(key, h, type);
    // The original is only read for this transform: give its mapped pages back (re-read if needed later).
    if (v.host->mapped) drop_pages(v.host->data, v.host->nbytes);
    return t;
}

// ---- Normalizations ----
// Per-channel parameter p of length C reshaped to broadcast over ONNX [N, C, spatial...].
static ggml_tensor* channel_param(Lower& L, ggml_tensor* p, int64_t C, int rank) {
    Shape s = {C};
    for (int i = 2; i < rank; i++) s.push_back(1);
    return reshape_to(L, p, s);
}

void lower_BatchNormalization(Lower& L) {
    if (L.node.get_int("training_mode", 0) != 0) L.error("training_mode=1 is not supported");
    int r = L.rank(0);
    int64_t C = r > 1 ? L.shape(0)[1] : 1;
    float eps = L.node.get_float("epsilon", 1e-5f);
    bool consts = L.in(1).host && L.in(2).host && L.in(3).host && L.in(4).host;
    ggml_tensor* y;
    if (consts) {  // fold into one scale and shift per channel
        auto sc = L.h(1).to_f64(), b = L.h(2).to_f64(), m = L.h(3).to_f64(), v = L.h(4).to_f64();
        HostTensor a = HostTensor::alloc(DType::FLOAT, {C}), c = HostTensor::alloc(DType::FLOAT, {C});
        for (int64_t i = 0; i < C; i++) {
            double k = sc[size_t(i)] / std::sqrt(v[size_t(i)] + double(eps));
            a.set_f64(i, k);
            c.set_f64(i, b[size_t(i)] - m[size_t(i)] * k);
        }
        y = ggml_add(L.ctx, ggml_mul(L.ctx, L.t(0), channel_param(L, L.constant(a), C, r)),
                     channel_param(L, L.constant(c), C, r));
    } else {
        ggml_tensor* inv = ggml_sqrt(L.ctx, ggml_scale_bias(L.ctx, L.t(4), 1.0f, eps));
        ggml_tensor* xn = ggml_div(L.ctx, ggml_sub(L.ctx, L.t(0), channel_param(L, L.t(3), C, r)),
                                   channel_param(L, inv, C, r));
        y = ggml_add(L.ctx, ggml_mul(L.ctx, xn, channel_param(L, L.t(1), C, r)), channel_param(L, L.t(2), C, r));
    }
    L.out(0, y, L.dtype(0), r);
}

void lower_InstanceNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t N = xs[0], C = xs[1], S = shape_numel(xs) / std::max<int64_t>(1, N * C);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = ggml_reshape_3d(L.ctx, L.cont(L.t(0)), S, C, N);
    ggml_tensor* y = ggml_norm(L.ctx, x, eps);
    y = ggml_mul(L.ctx, y, ggml_reshape_3d(L.ctx, L.t(1), 1, C, 1));
    y = ggml_add(L.ctx, y, ggml_reshape_3d(L.ctx, L.t(2), 1, C, 1));
    L.out(0, reshape_to(L, y, xs), L.dtype(0), r);
}

void lower_GroupNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t N = xs[0], C = xs[1], S = shape_numel(xs) / std::max<int64_t>(1, N * C);
    int64_t G = L.node.get_int("num_groups", 1);
    float eps = L.node.get_float("epsilon", 1e-5f);
    if (G <= 0 || C % G) L.error("num_groups must divide the channels");
    // Normalize each group as one row: [S*C/G, G*N].
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), S * (C / G), G * N);
    ggml_tensor* y = ggml_reshape_3d(L.ctx, ggml_norm(L.ctx, x, eps), S, C, N);
    ggml_tensor *sc, *bi;
    if (L.opset >= 21 || shape_numel(L.shape(1)) == C) {
        sc = L.t(1);
        bi = L.t(2);
    } else {  // opset 18: one scale per group, expanded to channels
        auto expand = [&](int i) {
            auto v = L.h(i).to_f64();
            std::vector<double> e;
            for (int64_t c = 0; c < C; c++) e.push_back(v[size_t(c / (C / G))]);
            return L.constant(HostTensor::from_f64(DType::FLOAT, {C}, e));
        };
        sc = expand(1);
        bi = expand(2);
    }
    y = ggml_add(L.ctx, ggml_mul(L.ctx, y, ggml_reshape_3d(L.ctx, sc, 1, C, 1)), ggml_reshape_3d(L.ctx, bi, 1, C, 1));
    L.out(0, reshape_to(L, y, xs), L.dtype(0), r);
}

void lower_LayerNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = rows_from_axis(L, L.t(0), xs, axis);
    ggml_tensor* y = reshape_to(L, ggml_norm(L.ctx, x, eps), xs);
    Shape ns(xs.begin() + axis, xs.end());
    auto param = [&](int i) {
        Shape ps = L.shape(i);
        ggml_tensor* p = L.t(i);
        Shape bs = broadcast_shapes(L, ns, ps);
        if (bs != ns) L.error("scale/bias do not broadcast to the normalized shape");
        return p;
    };
    y = ggml_mul(L.ctx, y, param(1));
    if (L.has(2)) y = ggml_add(L.ctx, y, param(2));
    L.out(0, y, L.dtype(0), r);
    bool want_stats = false;
    for (size_t i = 1; i < L.node.outputs.size(); i++) want_stats |= !L.node.outputs[i].empty();
    if (want_stats) {  // Mean and InvStdDev, shaped like X with the normalized dims set to 1
        Shape ss(xs.begin(), xs.begin() + axis);
        for (int i = axis; i < r; i++) ss.push_back(1);
        ggml_tensor* mean = ggml_mean(L.ctx, x);
        ggml_tensor* d = ggml_sub(L.ctx, x, mean);
        ggml_tensor* var = ggml_mean(L.ctx, ggml_sqr(L.ctx, d));
        ggml_tensor* inv = custom_unary(L, ggml_sqrt(L.ctx, ggml_scale_bias(L.ctx, var, 1.0f, eps)), UnaryK::Reciprocal);
        if (L.outs.size() > 1) L.out(1, reshape_to(L, mean, ss), L.dtype(0), r);
        if (L.outs.size() > 2) L.out(2, reshape_to(L, inv, ss), L.dtype(0), r);
    }
}

// ---- MatMul, Gemm ----
void lower_MatMul(Lower& L) {
    Shape as = L.shape(0), bs = L.shape(1);
    if (as.size() > 4 || bs.size() > 4) L.error("MatMul of rank > 4 is not supported");
    ggml_tensor* a = L.t(0);
    bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as = {1, as[0]};
    ggml_tensor* bt;
    if (b1) {
        bt = ggml_reshape_2d(L.ctx, L.cont(L.t(1)), bs[0], 1);
        bs = {bs[0], 1};
    } else bt = transposed_rhs(L, 1);
    // Output batch = broadcast of the batch dims.
    Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    Shape batch = broadcast_shapes(L, ab, bb);
    Shape os = batch;
    os.push_back(as[as.size() - 2]);
    os.push_back(bs[bs.size() - 1]);
    if (os.size() > 4) L.error("MatMul result of rank > 4 is not supported");
    // Align a to rank of os (leading ones are free in ggml order).
    ggml_tensor* y = matmul_core(L, a, as, bt, bs);
    int64_t ne[4];
    shape_to_ne(L, os, ne);
    if (y->ne[2] != ne[2] || y->ne[3] != ne[3]) {  // a had smaller batch than b
        ggml_tensor* ar = ggml_repeat_4d(L.ctx, L.cont(a), a->ne[0], a->ne[1], ne[2], ne[3]);
        y = mul_mat(L, bt, ar);
    }
    Shape fs = os;
    if (a1) fs.erase(fs.end() - 2);
    if (b1) fs.erase(fs.end() - 1);
    L.out(0, reshape_to(L, y, fs), L.dtype(0), int(fs.size()));
}

void lower_Gemm(Lower& L) {
    bool ta = L.node.get_int("transA", 0) != 0, tb = L.node.get_int("transB", 0) != 0;
    float alpha = L.node.get_float("alpha", 1.0f), beta = L.node.get_float("beta", 1.0f);
    ggml_tensor* a = L.t(0);
    if (ta) a = ggml_cont(L.ctx, ggml_transpose(L.ctx, a));
    ggml_tensor* bt;  // ggml [K, N]
    if (!tb) bt = transposed_rhs(L, 1);
    else if (L.in(1).is_weight && L.in(1).host && L.rank(1) == 2 && L.b.weights.matmul_type != GGML_TYPE_F32 &&
             L.in(1).dtype == DType::FLOAT && L.shape(1)[1] % 32 == 0)
        bt = cached_weight(L, 1, "", identity, L.b.weights.matmul_type);
    else bt = L.t(1);
    ggml_tensor* y = mul_mat(L, bt, L.cont(a));    // [N, M]
    if (alpha != 1.0f) y = ggml_scale(L.ctx, y, alpha);
    if (L.has(2) && beta != 0.0f) {
        Shape ys = {y->ne[1], y->ne[0]};
        Shape bsh = broadcast_shapes(L, ys, L.shape(2));
        if (bsh != ys) L.error("C does not broadcast to the output");
        ggml_tensor* c = L.t(2);
        if (beta != 1.0f) c = ggml_scale(L.ctx, c, beta);
        y = ggml_add(L.ctx, y, c);
    }
    L.out(0, y, L.dtype(0), 2);
}

// ---- Einsum: two-operand contractions and single-operand permutes/sums ----
namespace {
struct Term { std::string s; };
void parse_einsum(Lower& L, std::vector<std::string>& ins, std::string& out) {
    std::string eq;
    for (char c : L.node.get_string("equation", ""))
        if (c != ' ') eq += c;
    auto arrow = eq.find("->");
    std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    size_t p = 0;
    while (true) {
        auto q = lhs.find(',', p);
        ins.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
    }
    for (auto& t : ins)
        if (t.find('.') != std::string::npos) L.error("ellipsis in Einsum is not supported");
    if (arrow != std::string::npos) out = eq.substr(arrow + 2);
    else {
        std::map<char, int> cnt;
        for (auto& t : ins)
            for (char c : t) cnt[c]++;
        for (auto& [c, n] : cnt)
            if (n == 1) out += c;
    }
}
// Sums x over letters of `t` not in `keep`; returns new term.
ggml_tensor* sum_out(Lower& L, ggml_tensor* x, std::string& t, Shape& s, const std::string& keep) {
    for (int i = int(t.size()) - 1; i >= 0; i--) {
        if (keep.find(t[size_t(i)]) != std::string::npos) continue;
        int r = int(t.size());
        std::vector<int> perm;
        for (int j = 0; j < r; j++)
            if (j != i) perm.push_back(j);
        perm.push_back(i);
        x = permute_onnx(L, x, r, perm);
        x = ggml_sum_rows(L.ctx, x);
        Shape ns;
        for (int j = 0; j < r; j++)
            if (j != i) ns.push_back(s[size_t(j)]);
        x = reshape_to(L, x, ns);
        s = ns;
        t.erase(size_t(i), 1);
    }
    return x;
}
}  // namespace

void lower_Einsum(Lower& L) {
    std::vector<std::string> ins;
    std::string out;
    parse_einsum(L, ins, out);
    if (int(ins.size()) != L.n_in() || ins.size() > 2) L.error("Einsum with more than two operands is not supported");
    std::vector<ggml_tensor*> xs;
    std::vector<Shape> ss;
    for (int i = 0; i < L.n_in(); i++) {
        if (int(ins[size_t(i)].size()) != L.rank(i)) L.error("equation does not match input rank");
        for (size_t a = 0; a < ins[size_t(i)].size(); a++)
            for (size_t b = a + 1; b < ins[size_t(i)].size(); b++)
                if (ins[size_t(i)][a] == ins[size_t(i)][b]) L.error("repeated index (diagonal) is not supported");
        xs.push_back(L.t(i));
        ss.push_back(L.shape(i));
    }
    std::map<char, int64_t> dim;
    for (size_t i = 0; i < ins.size(); i++)
        for (size_t a = 0; a < ins[i].size(); a++) dim[ins[i][a]] = ss[i][a];
    ggml_tensor* y;
    std::string t;
    Shape s;
    if (ins.size() == 1) {
        t = ins[0];
        s = ss[0];
        y = sum_out(L, xs[0], t, s, out);
    } else {
        std::string ta = ins[0], tb = ins[1];
        Shape sa = ss[0], sb = ss[1];
        // letters only in one operand and not in the output are summed first
        ggml_tensor* a = sum_out(L, xs[0], ta, sa, out + tb);
        ggml_tensor* b = sum_out(L, xs[1], tb, sb, out + ta);
        std::string batch, fa, fb, k;
        for (char c : ta) {
            bool inb = tb.find(c) != std::string::npos, ino = out.find(c) != std::string::npos;
            if (inb && ino) batch += c;
            else if (inb) k += c;
            else fa += c;
        }
        for (char c : tb)
            if (ta.find(c) == std::string::npos) fb += c;
        auto prod = [&](const std::string& str) {
            int64_t p = 1;
            for (char c : str) p *= dim[c];
            return p;
        };
        auto arrange = [&](ggml_tensor* x, const std::string& from, const std::string& order) {
            std::vector<int> perm;
            for (char c : order) perm.push_back(int(from.find(c)));
            return permute_onnx(L, x, int(from.size()), perm);
        };
        int64_t B = prod(batch), M = prod(fa), N = prod(fb), K = prod(k);
        if (batch.size() + fa.size() + k.size() > 4 || batch.size() + fb.size() + k.size() > 4)
            L.error("Einsum operand of rank > 4 is not supported");
        a = ggml_reshape_3d(L.ctx, L.cont(arrange(a, ta, batch + fa + k)), K, M, B);
        b = ggml_reshape_3d(L.ctx, L.cont(arrange(b, tb, batch + fb + k)), K, N, B);
        y = mul_mat(L, b, a);  // [N, M, B] = ONNX [B, M, N]
        t = batch + fa + fb;
        for (char c : t) s.push_back(dim[c]);
        if (s.size() > 4) L.error("Einsum intermediate of rank > 4 is not supported");
        y = reshape_to(L, y, s);
        y = sum_out(L, y, t, s, out);
    }
    std::vector<int> perm;
    for (char c : out) {
        auto p = t.find(c);
        if (p == std::string::npos) L.error("output index not found in inputs");
        perm.push_back(int(p));
    }
    if (!out.empty()) y = permute_onnx(L, y, int(out.size()), perm);
    Shape os;
    for (char c : out) os.push_back(dim[c]);
    L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
}

// ---- Resize / Upsample: separable gathers with host-computed taps (exact for every mode) ----
void lower_Resize(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    std::string mode = L.node.get_string("mode", "nearest");
    std::string ctm = L.node.get_string("coordinate_transformation_mode", L.opset < 11 ? "asymmetric" : "half_pixel");
    // Upsample and Resize-10 index nearest neighbours by flooring.
    bool legacy = L.node.op_type == "Upsample" || L.opset < 11;
    std::string nm = L.node.get_string("nearest_mode", legacy ? "floor" : "round_prefer_floor");
    float cubic_a = L.node.get_float("cubic_coeff_a", -0.75f);
    bool exclude_outside = L.node.get_int("exclude_outside", 0) != 0;
    float extrap = L.node.get_float("extrapolation_value", 0.0f);
    if (L.node.get_int("antialias", 0) != 0) L.error("antialias is not supported");
    std::vector<double> scales(size_t(r), 1.0);
    Shape os = xs;
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    for (auto& a : axes) a = norm_axis(L, a, r);
    std::vector<double> roi;
    if (L.node.op_type == "Upsample" || L.opset < 10) {
        std::vector<double> sc;
        if (L.opset < 9) for (float f : L.node.get_floats("scales")) sc.push_back(f);
        else sc = L.h(1).to_f64();
        for (int i = 0; i < r; i++) {
            scales[size_t(i)] = sc[size_t(i)];
            os[size_t(i)] = int64_t(std::floor(double(xs[size_t(i)]) * sc[size_t(i)]));
        }
        if (mode == "bilinear") mode = "linear";
    } else {
        int si = L.opset >= 11 ? 2 : 1, zi = 3;
        if (L.opset >= 11 && L.has(1)) roi = L.h(1).to_f64();
        bool has_scales = L.has(si) && L.h(si).numel() > 0;
        bool has_sizes = L.opset >= 11 && L.has(zi) && L.h(zi).numel() > 0;
        if (has_sizes) {
            auto sz = L.ints(zi);
            std::string policy = L.node.get_string("keep_aspect_ratio_policy", "stretch");
            if (policy == "stretch") {
                for (size_t j = 0; j < axes.size(); j++) {
                    int a = int(axes[j]);
                    os[size_t(a)] = sz[j];
                    scales[size_t(a)] = double(sz[j]) / double(xs[size_t(a)]);
                }
            } else {
                double sc = policy == "not_larger" ? 1e300 : 0;
                for (size_t j = 0; j < axes.size(); j++) {
                    double v = double(sz[j]) / double(xs[size_t(axes[j])]);
                    sc = policy == "not_larger" ? std::min(sc, v) : std::max(sc, v);
                }
                for (size_t j = 0; j < axes.size(); j++) {
                    int a = int(axes[j]);
                    scales[size_t(a)] = sc;
                    os[size_t(a)] = int64_t(std::nearbyint(double(xs[size_t(a)]) * sc));
                }
            }
        } else if (has_scales) {
            auto sc = L.h(si).to_f64();
            for (size_t j = 0; j < axes.size(); j++) {
                int a = int(axes[j]);
                scales[size_t(a)] = sc[j];
                os[size_t(a)] = int64_t(std::floor(double(xs[size_t(a)]) * sc[j]));
            }
        } else L.error("Resize needs scales or sizes");
    }
    // roi per axis (tf_crop_and_resize)
    std::vector<double> rs(size_t(r), 0.0), re(size_t(r), 1.0);
    if (roi.size() == 2 * axes.size())
        for (size_t j = 0; j < axes.size(); j++) {
            rs[size_t(axes[j])] = roi[j];
            re[size_t(axes[j])] = roi[j + axes.size()];
        }
    ggml_tensor* x = L.t(0);
    Shape cur = xs;
    for (int a = 0; a < r; a++) {
        if (os[size_t(a)] == xs[size_t(a)] && scales[size_t(a)] == 1.0 && ctm != "tf_crop_and_resize") continue;
        int64_t in = xs[size_t(a)], on = os[size_t(a)];
        double sc = scales[size_t(a)];
        // taps: for each output index, source indices and weights (-1 index = extrapolation value)
        int T = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
        std::vector<int64_t> idx(size_t(on * T));
        std::vector<double> wts(size_t(on * T));
        bool any_extrap = false;
        for (int64_t o = 0; o < on; o++) {
            double c;
            // float arithmetic, as the reference implementations use, so ties round the same way
            float sf = float(sc);
            if (ctm == "half_pixel") c = double((float(o) + 0.5f) / sf - 0.5f);
            else if (ctm == "pytorch_half_pixel") c = on > 1 ? double((float(o) + 0.5f) / sf - 0.5f) : 0.0;
            else if (ctm == "align_corners") c = on == 1 ? 0.0 : double(o) * double(in - 1) / double(on - 1);
            else if (ctm == "asymmetric") c = double(float(o) / sf);
            else if (ctm == "tf_half_pixel_for_nn") c = double((float(o) + 0.5f) / sf);
            else if (ctm == "half_pixel_symmetric") {
                double adj = double(on) / (sc * double(in));
                double center = double(in) / 2.0, off = center * (1 - adj);
                c = off + (double(o) + 0.5) / sc - 0.5;
            } else if (ctm == "tf_crop_and_resize") {
                double st = rs[size_t(a)], en = re[size_t(a)];
                c = on > 1 ? st * double(in - 1) + double(o) * (en - st) * double(in - 1) / double(on - 1)
                           : 0.5 * (st + en) * double(in - 1);
                if (c < 0 || c > double(in - 1)) {
                    for (int t = 0; t < T; t++) {
                        idx[size_t(o * T + t)] = -1;
                        wts[size_t(o * T + t)] = t == 0 ? 1.0 : 0.0;
                    }
                    any_extrap = true;
                    continue;
                }
            } else L.error("coordinate_transformation_mode '" + ctm + "' is not supported");
            if (mode == "nearest") {
                double n;
                if (nm == "round_prefer_ceil") n = std::floor(c + 0.5);
                else if (nm == "floor") n = std::floor(c);
                else if (nm == "ceil") n = std::ceil(c);
                else n = (c - std::floor(c) == 0.5) ? std::floor(c) : std::round(c);  // round_prefer_floor
                idx[size_t(o)] = std::clamp<int64_t>(int64_t(n), 0, in - 1);
                wts[size_t(o)] = 1.0;
            } else if (mode == "linear") {
                double cc = std::clamp(c, 0.0, double(in - 1));
                int64_t i0 = int64_t(std::floor(cc)), i1 = std::min(i0 + 1, in - 1);
                double f = cc - double(i0);
                idx[size_t(o * 2)] = i0;
                idx[size_t(o * 2 + 1)] = i1;
                wts[size_t(o * 2)] = 1 - f;
                wts[size_t(o * 2 + 1)] = f;
            } else if (mode == "cubic") {
                int64_t i0 = int64_t(std::floor(c));
                double f = c - double(i0);
                double cw[4];
                double A = cubic_a;
                auto k = [A](double t) {
                    t = std::fabs(t);
                    if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
                    if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
                    return 0.0;
                };
                double sum = 0;
                for (int t = 0; t < 4; t++) {
                    int64_t src = i0 - 1 + t;
                    cw[t] = k(f + 1 - t);
                    if (exclude_outside && (src < 0 || src >= in)) cw[t] = 0;
                    sum += cw[t];
                    idx[size_t(o * 4 + t)] = std::clamp<int64_t>(src, 0, in - 1);
                }
                for (int t = 0; t < 4; t++) wts[size_t(o * 4 + t)] = exclude_outside ? cw[t] / sum : cw[t];
            } else L.error("mode '" + mode + "' is not supported");
        }
        Shape ns = cur;
        ns[size_t(a)] = on;
        // Fast path: integer nearest upscaling (SD's 2x Upsample) is ggml's own nearest interpolation.
        bool integer_nearest = T == 1 && !any_extrap && r <= 4 && on % in == 0;
        for (int64_t o = 0; integer_nearest && o < on; o++) integer_nearest = idx[size_t(o)] == o / (on / in);
        if (integer_nearest) {
            int64_t ne[4];
            shape_to_ne(L, ns, ne);
            x = ggml_interpolate(L.ctx, L.cont(x), ne[0], ne[1], ne[2], ne[3], GGML_SCALE_MODE_NEAREST);
            cur = ns;
            continue;
        }
        // Gather each tap and blend: sum_t w_t * x[idx_t]
        ggml_tensor* acc = nullptr;
        for (int t = 0; t < T; t++) {
            std::vector<int64_t> ti(static_cast<size_t>(on));
            Shape wsh(size_t(r - a), 1);
            wsh[0] = on;
            std::vector<double> tw(static_cast<size_t>(on));
            bool unit = true;
            for (int64_t o = 0; o < on; o++) {
                ti[size_t(o)] = std::max<int64_t>(0, idx[size_t(o * T + t)]);
                tw[size_t(o)] = wts[size_t(o * T + t)];
                unit &= tw[size_t(o)] == 1.0;
            }
            // gather along axis a
            int64_t outer = 1, inner = 1;
            for (int i = 0; i < a; i++) outer *= cur[size_t(i)];
            for (int i = a + 1; i < r; i++) inner *= cur[size_t(i)];
            ggml_tensor* xr = ggml_reshape_3d(L.ctx, L.cont(x), inner, in, outer);
            HostTensor ih = HostTensor::alloc(DType::INT32, {outer, on});
            for (int64_t oo = 0; oo < outer; oo++)
                for (int64_t j = 0; j < on; j++) ih.set_i64(oo * on + j, ti[size_t(j)]);
            ggml_tensor* g = ggml_get_rows(L.ctx, xr, L.constant(ih));  // [inner, on, outer]
            if (!unit) {
                HostTensor wt = HostTensor::from_f64(DType::FLOAT, {on, 1}, tw);  // ggml [1, on]
                g = ggml_mul(L.ctx, g, L.constant(wt));
            }
            acc = acc ? ggml_add(L.ctx, acc, g) : g;
        }
        if (any_extrap) {
            std::vector<double> mask(static_cast<size_t>(on)), fill(static_cast<size_t>(on));
            for (int64_t o = 0; o < on; o++) {
                bool ex = idx[size_t(o * T)] < 0;
                mask[size_t(o)] = ex ? 0.0 : 1.0;
                fill[size_t(o)] = ex ? double(extrap) : 0.0;
            }
            acc = ggml_mul(L.ctx, acc, L.constant(HostTensor::from_f64(DType::FLOAT, {on, 1}, mask)));
            acc = ggml_add(L.ctx, acc, L.constant(HostTensor::from_f64(DType::FLOAT, {on, 1}, fill)));
        }
        x = reshape_to(L, acc, ns);
        cur = ns;
    }
    L.out(0, x, L.dtype(0), r);
}

}  // namespace onnx2ggml
