// Op library: matrix products (see include/onnx2ggml/ops/matmul.h).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/pad_rows.h"
#include "onnx2ggml/ops.h"

namespace o2g {

ggml_type product_weight_type(const Ctx& ctx, const ggml_tensor* w, int64_t K) {
    if (ctx.matmul_type == GGML_TYPE_F32 || w->type != GGML_TYPE_F32 || K % 32 != 0) return GGML_TYPE_F32;
    return ctx.matmul_type;
}

ggml_tensor* weight_as(Ctx& ctx, const ggml_tensor* w, const char* kind, ggml_type type, const int64_t ne[4]) {
    return ctx.weights->derived(w, kind, type, ne, [n = ggml_nelements(w)](const float* src, float* dst) {
        std::copy(src, src + n, dst);
    });
}

ggml_type panel_weight_type(const Ctx& ctx, const ggml_tensor* w) {
    return ctx.weights && ctx.weights->source_type(w) == GGML_TYPE_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
}

namespace {

bool is_weight(Ctx& ctx, const ggml_tensor* w) { return ctx.weights && ctx.weights->is_weight(w); }

// B^T for B of ONNX shape [..., K, N] (ggml [N, K, ...]): ggml [K, N, ...]; a constant weight is transposed once.
ggml_tensor* transposed_rhs(Ctx& ctx, ggml_tensor* b) {
    if (!is_weight(ctx, b)) return ggml_cont(ctx, ggml_transpose(ctx, b));
    const int64_t N = b->ne[0], K = b->ne[1], batch = b->ne[2] * b->ne[3];
    const int64_t ne[4] = {K, N, b->ne[2], b->ne[3]};
    return ctx.weights->derived(b, "T", product_weight_type(ctx, b, K), ne, [=](const float* src, float* dst) {
        // In 64x64 blocks: element by element, every write of a large weight missed the cache (seconds for a UNet).
        constexpr int64_t B = 64;
        for (int64_t bb = 0; bb < batch; bb++)
            for (int64_t i0 = 0; i0 < K; i0 += B)
                for (int64_t j0 = 0; j0 < N; j0 += B)
                    for (int64_t j = j0; j < std::min(N, j0 + B); j++)
                        for (int64_t i = i0; i < std::min(K, i0 + B); i++)
                            dst[bb * K * N + j * K + i] = src[bb * K * N + i * N + j];
    });
}

// Whether A [K, M...] times constant 2-D weight w (shared dim K, N columns) takes our packed-panel CPU kernel
// (kernels/gemm.h) instead of ggml's MUL_MAT: F32 weights kept at F32, shapes where it measured faster.
bool use_gemm(Ctx& ctx, const ggml_tensor* a, const ggml_tensor* w, int64_t K, int64_t N) {
    return ctx.cpu && ctx.matmul_type == GGML_TYPE_F32 && is_weight(ctx, w) && w->type == GGML_TYPE_F32 &&
           a->type == GGML_TYPE_F32 && w->ne[2] == 1 && w->ne[3] == 1 && gemm_available() &&
           gemm_wanted(ggml_nrows(a), K, N);
}
}  // namespace

ggml_tensor* mul_mat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    const int64_t K = a->ne[0], pad = (16 - K % 16) % 16;
    // Worth a copy of both operands when the product is large (attention with 40-wide heads, K = 77 tokens).
    if (pad && ctx.cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && K >= 16 && a->ne[1] >= 16 &&
        b->ne[1] >= 16) {
        a = pad_rows(ctx, a, pad);
        b = pad_rows(ctx, b, pad);
    }
    return device_mul_mat(ctx, a, b);
}

ggml_tensor* device_mul_mat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    // ggml divides by a's batch dims to broadcast them (fuzz: an Einsum over an empty head dim, a division by zero).
    for (int d = 2; d < 4; d++)
        if (a->ne[d] == 0 || b->ne[d] % a->ne[d])
            throw OpError("a product of batch dims " + std::to_string(a->ne[d]) + " and " + std::to_string(b->ne[d]) +
                          ": ggml broadcasts only a non-empty first operand's batch dims into the second's");
    // Exact mode off the CPU: CUDA's mmf kernel takes F32 products whose second operand has 4 to 16 columns (a
    // conv with 4 to 16 output channels, a short sequence) in TF32, whatever NVIDIA_TF32_OVERRIDE says. The
    // operands swapped give the product transposed, which cuBLAS computes in F32; the copy back is small.
    if (!ctx.cpu && !ctx.fast && a->type == GGML_TYPE_F32 && b->ne[1] >= 4 && b->ne[1] <= 16 && a->ne[1] > 16 &&
        a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3])
        return ggml_cont(ctx, ggml_transpose(ctx, ggml_mul_mat(ctx, b, a)));
    return ggml_mul_mat(ctx, a, b);
}

ggml_tensor* matmul(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const MatMulParams& p) {
    const int64_t K = a->ne[0];
    if ((p.b_vector ? b->ne[0] : b->ne[1]) != K)
        throw OpError("matmul: A has " + std::to_string(K) + " columns, B " +
                      std::to_string(p.b_vector ? b->ne[0] : b->ne[1]) + " rows");
    ggml_tensor* bt;
    if (!p.b_vector && use_gemm(ctx, a, b, K, b->ne[0])) bt = nullptr;
    else bt = p.b_vector ? ggml_reshape_2d(ctx, cont(ctx, b), K, 1) : transposed_rhs(ctx, b);
    if (!bt) {  // B: ONNX [K, N]; the result is [N, M, batch of A]
        ggml_tensor* y = gemm_const(ctx, a, b, false, nullptr);
        const int64_t ne[4] = {y->ne[0], p.a_vector ? y->ne[2] : y->ne[1], p.a_vector ? y->ne[3] : y->ne[2],
                               p.a_vector ? 1 : y->ne[3]};
        return reshape_ne(ctx, y, ne);
    }
    int64_t batch[4] = {1, 1, 1, 1};  // broadcast of the batch dims (ggml dims 2 and 3)
    {
        const int64_t na[4] = {1, 1, a->ne[2], a->ne[3]}, nb[4] = {1, 1, bt->ne[2], bt->ne[3]};
        broadcast_ne(na, nb, batch);
    }
    // ggml_mul_mat broadcasts its first operand over the second's batch when that is a multiple of it.
    ggml_tensor* ar = a;
    if (a->ne[2] % bt->ne[2] != 0 || a->ne[3] % bt->ne[3] != 0) {
        const int64_t ne2 = std::max(a->ne[2], bt->ne[2]), ne3 = std::max(a->ne[3], bt->ne[3]);
        ar = ggml_repeat_4d(ctx, a, a->ne[0], a->ne[1], ne2, ne3);
        if (bt->ne[2] != ne2 || bt->ne[3] != ne3) bt = ggml_repeat_4d(ctx, bt, bt->ne[0], bt->ne[1], ne2, ne3);
    }
    ggml_tensor* y = mul_mat(ctx, bt, cont(ctx, ar));  // [N, M, batch]
    if (y->ne[2] != batch[2] || y->ne[3] != batch[3]) {  // A had the smaller batch
        ar = ggml_repeat_4d(ctx, cont(ctx, a), a->ne[0], a->ne[1], batch[2], batch[3]);
        y = mul_mat(ctx, bt, ar);
    }
    // 1-D operands: their dim leaves the result.
    int64_t ne[4] = {y->ne[0], y->ne[1], y->ne[2], y->ne[3]};
    std::vector<int64_t> keep;
    for (int d = 0; d < 4; d++)
        if (!((d == 0 && p.b_vector) || (d == 1 && p.a_vector))) keep.push_back(ne[d]);
    for (int d = 0; d < 4; d++) ne[d] = d < int(keep.size()) ? keep[size_t(d)] : 1;
    return reshape_ne(ctx, y, ne);
}

ggml_tensor* matmul_bias(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* bias, ggml_tensor* residual,
                         const MatMulParams& p) {
    const int64_t N = p.b_vector ? 1 : b->ne[0];
    if (ggml_nelements(bias) != N)
        throw OpError("matmul_bias: bias of " + std::to_string(ggml_nelements(bias)) + " values for " +
                      std::to_string(N) + " columns");
    if (bias->type != GGML_TYPE_F32) bias = ggml_cast(ctx, bias, GGML_TYPE_F32);
    bias = ggml_reshape_1d(ctx, cont(ctx, bias), N);
    if (!p.b_vector && a->ne[0] == b->ne[1] && use_gemm(ctx, a, b, a->ne[0], N)) {
        // The residual joins the kernel's epilogue when it is the product's own shape: [N, M, batch of A].
        const bool fused = residual && !p.a_vector && residual->type == GGML_TYPE_F32 && residual->ne[0] == N &&
                           residual->ne[1] == a->ne[1] && residual->ne[2] == a->ne[2] && residual->ne[3] == a->ne[3];
        GemmEpilogue ep{p.swish_alpha, fused ? cont(ctx, residual) : nullptr};
        ggml_tensor* y = gemm_const(ctx, a, b, false, bias, ep);  // [N, M, batch of A]
        const int64_t ne[4] = {y->ne[0], p.a_vector ? y->ne[2] : y->ne[1], p.a_vector ? y->ne[3] : y->ne[2],
                               p.a_vector ? 1 : y->ne[3]};
        y = reshape_ne(ctx, y, ne);
        return residual && !fused ? add(ctx, y, residual) : y;
    }
    ggml_tensor* y = ggml_add(ctx, matmul(ctx, a, b, p), bias);
    if (p.swish_alpha != 0) y = swish(ctx, y, SwishParams{p.swish_alpha});
    return residual ? add(ctx, y, residual) : y;
}

ggml_tensor* gemm(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, ggml_tensor* c, const GemmParams& p) {
    if (p.trans_a) a = ggml_cont(ctx, ggml_transpose(ctx, a));
    const int64_t Kb = p.trans_b ? b->ne[0] : b->ne[1], N = p.trans_b ? b->ne[1] : b->ne[0];
    if (Kb != a->ne[0])
        throw OpError("gemm: A has " + std::to_string(a->ne[0]) + " columns, B " + std::to_string(Kb) + " rows");
    ggml_tensor* y;  // [N, M]
    if (use_gemm(ctx, a, b, Kb, N)) {
        // A bias row [N] is added by the kernel itself.
        const bool row_bias = c && p.alpha == 1.0f && p.beta == 1.0f && c->type == GGML_TYPE_F32 && c->ne[0] == N &&
                              ggml_nelements(c) == N;
        y = gemm_const(ctx, a, b, p.trans_b, row_bias ? cont(ctx, c) : nullptr);
        if (row_bias) return y;
    } else {
        ggml_tensor* bt;  // ggml [K, N]
        if (!p.trans_b) bt = transposed_rhs(ctx, b);
        else if (is_weight(ctx, b) && product_weight_type(ctx, b, b->ne[0]) != GGML_TYPE_F32)  // kept at reduced precision
            bt = weight_as(ctx, b, "rows", product_weight_type(ctx, b, b->ne[0]), b->ne);
        else bt = b;
        y = mul_mat(ctx, bt, cont(ctx, a));
    }
    if (p.alpha != 1.0f) y = ggml_scale(ctx, y, p.alpha);
    if (c && p.beta != 0.0f) {
        int64_t ne[4];
        broadcast_ne(y, c, ne);
        if (ne[0] != y->ne[0] || ne[1] != y->ne[1] || ne[2] != y->ne[2] || ne[3] != y->ne[3])
            throw OpError("gemm: C does not broadcast to the output");
        if (p.beta != 1.0f) c = ggml_scale(ctx, c, p.beta);
        y = ggml_add(ctx, y, c);
    }
    return y;
}

// ---- Einsum ----
namespace {

// An operand: its tensor, subscripts and ONNX shape.
struct Term {
    ggml_tensor* x;
    std::string t;
    std::vector<int64_t> s;
};

void shape_ne(const std::vector<int64_t>& s, int64_t ne[4]) {
    for (int i = 0; i < 4; i++) ne[i] = 1;
    const int r = int(s.size());
    for (int a = 0; a < r; a++) ne[r - 1 - a] = s[size_t(a)];
}

// Permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Ctx& ctx, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(ctx, ggml_permute(ctx, x, g[0], g[1], g[2], g[3]));
}

ggml_tensor* reshape_shape(Ctx& ctx, ggml_tensor* x, const std::vector<int64_t>& s) {
    int64_t ne[4];
    shape_ne(s, ne);
    return reshape_ne(ctx, x, ne);
}

// Sums the term over its subscripts not in `keep`.
void sum_out(Ctx& ctx, Term& u, const std::string& keep) {
    for (int i = int(u.t.size()) - 1; i >= 0; i--) {
        if (keep.find(u.t[size_t(i)]) != std::string::npos) continue;
        const int r = int(u.t.size());
        std::vector<int> perm;
        for (int j = 0; j < r; j++)
            if (j != i) perm.push_back(j);
        perm.push_back(i);
        u.x = ggml_sum_rows(ctx, permute_onnx(ctx, u.x, r, perm));
        std::vector<int64_t> ns;
        for (int j = 0; j < r; j++)
            if (j != i) ns.push_back(u.s[size_t(j)]);
        u.x = reshape_shape(ctx, u.x, ns);
        u.s = ns;
        u.t.erase(size_t(i), 1);
    }
}

std::string letters(const Ints& v) {
    std::string s;
    for (int64_t c : v) {
        if (c <= 0 || c > 127) throw OpError("einsum: subscript code " + std::to_string(c) + " is not a letter");
        s += char(c);
    }
    return s;
}

Term term(ggml_tensor* x, const Ints& sub) {
    Term u{x, letters(sub), {}};
    const int r = int(u.t.size());
    if (r > 4) throw OpError("einsum: operand of rank " + std::to_string(r) + " (at most 4)");
    for (int a = 0; a < r; a++) u.s.push_back(x->ne[r - 1 - a]);
    for (int a = r; a < 4; a++)
        if (x->ne[a] != 1) throw OpError("einsum: operand has more dims than its " + std::to_string(r) + " subscripts");
    return u;
}

}  // namespace

ggml_tensor* einsum(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const EinsumParams& p) {
    const std::string out = letters(p.out);
    std::vector<Term> ins = {term(a, p.a)};
    if (b) ins.push_back(term(b, p.b));
    std::map<char, int64_t> dim;
    for (const Term& u : ins)
        for (size_t i = 0; i < u.t.size(); i++) {
            auto it = dim.find(u.t[i]);
            if (it != dim.end() && it->second != u.s[i])
                throw OpError(std::string("einsum: subscript '") + u.t[i] + "' has sizes " +
                              std::to_string(it->second) + " and " + std::to_string(u.s[i]));
            dim[u.t[i]] = u.s[i];
        }
    Term y;
    if (ins.size() == 1) {
        y = ins[0];
        sum_out(ctx, y, out);
    } else {
        Term ta = ins[0], tb = ins[1];
        // subscripts only in one operand and not in the output are summed first
        sum_out(ctx, ta, out + tb.t);
        sum_out(ctx, tb, out + ta.t);
        std::string batch, fa, fb, k;
        for (char c : ta.t) {
            const bool inb = tb.t.find(c) != std::string::npos, ino = out.find(c) != std::string::npos;
            if (inb && ino) batch += c;
            else if (inb) k += c;
            else fa += c;
        }
        for (char c : tb.t)
            if (ta.t.find(c) == std::string::npos) fb += c;
        auto prod = [&](const std::string& str) {
            int64_t n = 1;
            for (char c : str) n *= dim[c];
            return n;
        };
        auto arrange = [&](const Term& u, const std::string& order) {
            std::vector<int> perm;
            for (char c : order) perm.push_back(int(u.t.find(c)));
            return permute_onnx(ctx, u.x, int(u.t.size()), perm);
        };
        if (batch.size() + fa.size() + k.size() > 4 || batch.size() + fb.size() + k.size() > 4)
            throw OpError("einsum: operand of rank > 4");
        const int64_t B = prod(batch), M = prod(fa), N = prod(fb), K = prod(k);
        ggml_tensor* am = ggml_reshape_3d(ctx, cont(ctx, arrange(ta, batch + fa + k)), K, M, B);
        ggml_tensor* bm = ggml_reshape_3d(ctx, cont(ctx, arrange(tb, batch + fb + k)), K, N, B);
        y.x = mul_mat(ctx, bm, am);  // [N, M, B] = ONNX [B, M, N]
        y.t = batch + fa + fb;
        for (char c : y.t) y.s.push_back(dim[c]);
        if (y.s.size() > 4) throw OpError("einsum: intermediate of rank > 4");
        y.x = reshape_shape(ctx, y.x, y.s);
        sum_out(ctx, y, out);
    }
    std::vector<int> perm;
    for (char c : out) {
        auto pos = y.t.find(c);
        if (pos == std::string::npos) throw OpError(std::string("einsum: output subscript '") + c + "' is not an input's");
        perm.push_back(int(pos));
    }
    ggml_tensor* r = y.x;
    if (!out.empty()) r = permute_onnx(ctx, r, int(out.size()), perm);
    std::vector<int64_t> os;
    for (char c : out) os.push_back(dim[c]);
    return reshape_shape(ctx, r, os);
}

}  // namespace o2g
