// Stand-ins for our CPU kernels (kernels/custom.cpp) made of ggml ops that every backend has (CUDA, Vulkan,
// Metal, ...), so a graph off the CPU never has to come back to it for erf, pow, a comparison or a select.
// Used when Ctx::cpu is false: on a non-CPU device, or on the CPU with SessionOptions::portable (which is how the
// CPU test suite checks these paths). A kernel with no stand-in here stays a CPU custom op; the scheduler then
// runs it on the CPU and `--stats` and the fallback warning show it.
#include "lib/portable.h"

#include <cfloat>
#include <cmath>
#include <vector>

namespace o2g {

namespace {

ggml_tensor* scalar(Ctx& ctx, float v) {
    const int64_t ne[4] = {1, 1, 1, 1};
    return ctx.constant_f32(ne, {v});
}
// 1 - x, and 1 / x (a repeated constant, not x * 0 + 1, so that x = inf gives 0 rather than NaN).
ggml_tensor* one_minus(Ctx& ctx, ggml_tensor* x) { return ggml_scale_bias(ctx, x, -1.0f, 1.0f); }
ggml_tensor* recip(Ctx& ctx, ggml_tensor* x) { return ggml_div(ctx, ggml_repeat(ctx, scalar(ctx, 1.0f), x), x); }
// relu(x) + alpha * expm1(min(x, 0)): ELU's two halves without a select.
ggml_tensor* elu_alpha(Ctx& ctx, ggml_tensor* x, float alpha) {
    ggml_tensor* neg = ggml_neg(ctx, ggml_relu(ctx, ggml_neg(ctx, x)));
    return ggml_add(ctx, ggml_relu(ctx, x), ggml_scale(ctx, ggml_expm1(ctx, neg), alpha));
}

// erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7); |x| is clamped where erf is already +-1 in f32.
ggml_tensor* erf_poly(Ctx& ctx, ggml_tensor* x) {
    x = ggml_clamp(ctx, x, -10.0f, 10.0f);
    ggml_tensor* ax = ggml_abs(ctx, x);
    ggml_tensor* t = recip(ctx, ggml_scale_bias(ctx, ax, 0.3275911f, 1.0f));
    const float a[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    ggml_tensor* p = ggml_scale_bias(ctx, t, a[4], a[3]);  // Horner: ((((a5 t + a4) t + a3) t + a2) t + a1) t
    for (int i = 2; i >= 0; i--) p = ggml_scale_bias(ctx, ggml_mul(ctx, p, t), 1.0f, a[i]);
    p = ggml_mul(ctx, p, t);
    ggml_tensor* e = ggml_exp(ctx, ggml_neg(ctx, ggml_sqr(ctx, x)));
    return ggml_mul(ctx, ggml_sgn(ctx, x), one_minus(ctx, ggml_mul(ctx, p, e)));
}

// a^b = exp(b ln|a|), negated where a < 0 and b is odd. (A negative base with a fractional exponent, NaN in C,
// is not NaN here.)
ggml_tensor* pow_general(Ctx& ctx, ggml_tensor* a, ggml_tensor* b) {
    ggml_tensor* r = ggml_exp(ctx, ggml_mul(ctx, b, ggml_log(ctx, ggml_abs(ctx, a))));
    ggml_tensor* half = ggml_scale(ctx, b, 0.5f);
    ggml_tensor* odd = ggml_scale(ctx, ggml_sub(ctx, half, ggml_floor(ctx, half)), 2.0f);  // 1 for odd integers
    ggml_tensor* flip = ggml_mul(ctx, ggml_step(ctx, ggml_neg(ctx, a)), odd);
    return ggml_mul(ctx, r, ggml_scale_bias(ctx, flip, -2.0f, 1.0f));
}

}  // namespace

ggml_tensor* portable_pow_scalar(Ctx& ctx, ggml_tensor* x, float e) {
    x = f32_cont(ctx, x);
    if (e == 0.0f) return ggml_repeat(ctx, scalar(ctx, 1.0f), x);
    if (e == 0.5f) return ggml_sqrt(ctx, x);
    if (e == -0.5f) return recip(ctx, ggml_sqrt(ctx, x));
    float n = std::fabs(e);
    if (n == std::floor(n) && n <= 16) {  // by squaring: exact as the CPU's powf for small integer powers
        ggml_tensor* r = nullptr;
        ggml_tensor* sq = x;
        for (int k = int(n); k > 0; k >>= 1) {
            if (k & 1) r = r ? ggml_mul(ctx, r, sq) : sq;
            if (k > 1) sq = ggml_sqr(ctx, sq);
        }
        return e < 0 ? recip(ctx, r) : r;
    }
    return pow_general(ctx, x, ggml_repeat(ctx, scalar(ctx, e), x));
}

ggml_tensor* portable_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0, float p1) {
    x = f32_cont(ctx, x);
    switch (k) {
        case UnaryK::Erf: return erf_poly(ctx, x);
        case UnaryK::Reciprocal: return recip(ctx, x);
        case UnaryK::Sign: return ggml_sgn(ctx, x);
        case UnaryK::Not: return one_minus(ctx, ggml_step(ctx, ggml_abs(ctx, x)));
        case UnaryK::Softsign: return ggml_div(ctx, x, ggml_scale_bias(ctx, ggml_abs(ctx, x), 1.0f, 1.0f));
        case UnaryK::Softplus: return ggml_softplus(ctx, x);
        case UnaryK::Mish: return ggml_mul(ctx, x, ggml_tanh(ctx, ggml_softplus(ctx, x)));
        case UnaryK::EluA: return elu_alpha(ctx, x, p0);
        case UnaryK::Selu: return ggml_scale(ctx, elu_alpha(ctx, x, p0), p1);
        case UnaryK::Celu:  // max(0, x) + min(0, a * expm1(x / a))
            return ggml_sub(ctx, ggml_relu(ctx, x),
                            ggml_relu(ctx, ggml_neg(ctx, ggml_scale(ctx, ggml_expm1(ctx, ggml_scale(ctx, x, 1.0f / p0)), p0))));
        case UnaryK::ThresholdedRelu: return ggml_mul(ctx, x, ggml_step(ctx, ggml_scale_bias(ctx, x, 1.0f, -p0)));
        case UnaryK::Shrink:  // x - bias above lambd, x + bias below -lambd, else 0
            return ggml_add(ctx, ggml_mul(ctx, ggml_step(ctx, ggml_scale_bias(ctx, x, 1.0f, -p0)), ggml_scale_bias(ctx, x, 1.0f, -p1)),
                            ggml_mul(ctx, ggml_step(ctx, ggml_scale_bias(ctx, x, -1.0f, -p0)), ggml_scale_bias(ctx, x, 1.0f, p1)));
        case UnaryK::PowScalar: return portable_pow_scalar(ctx, x, p0);
        case UnaryK::Tan: return ggml_div(ctx, o2g::sin(ctx, x), o2g::cos(ctx, x));
        default: return nullptr;  // no composition that matches the CPU kernel closely enough
    }
}

ggml_tensor* portable_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b) {
    // An exact select, inf and NaN included (c * a + (1 - c) * b is not): both sides as one column of 2n rows,
    // and get_rows picks row i + n * c[i].
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    broadcast_ne(c->ne, ne, ne);
    const int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
    if (n == 0 || n >= (int64_t(1) << 24)) return nullptr;  // row numbers must be exact in f32
    ggml_tensor* cf = ggml_reshape_1d(ctx, full_f32(ctx, c, ne), n);
    ggml_tensor* table = ggml_concat(ctx, ggml_reshape_2d(ctx, full_f32(ctx, b, ne), 1, n),
                                     ggml_reshape_2d(ctx, full_f32(ctx, a, ne), 1, n), 1);  // [1, 2n]
    std::vector<float> iota(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) iota[size_t(i)] = float(i);
    const int64_t ne1[4] = {n, 1, 1, 1};
    ggml_tensor* pick = ggml_add(ctx, ctx.constant_f32(ne1, iota), ggml_scale(ctx, ggml_step(ctx, ggml_abs(ctx, cf)), float(n)));
    ggml_tensor* rows = ggml_get_rows(ctx, table, ggml_cast(ctx, pick, GGML_TYPE_I32));  // [1, n]
    return ggml_reshape_4d(ctx, rows, ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* portable_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    ggml_tensor* fa = full_f32(ctx, a, ne);
    ggml_tensor* fb = full_f32(ctx, b, ne);
    // a - b is 0 exactly when a == b (inf - inf is NaN, and step(NaN) is 0, so inf == inf holds too).
    auto gt = [&] { return ggml_step(ctx, ggml_sub(ctx, fa, fb)); };
    auto lt = [&] { return ggml_step(ctx, ggml_sub(ctx, fb, fa)); };
    auto truth = [&](ggml_tensor* x) { return ggml_step(ctx, ggml_abs(ctx, x)); };
    switch (k) {
        case BinaryK::Greater: return gt();
        case BinaryK::Less: return lt();
        case BinaryK::GreaterEq: return one_minus(ctx, lt());
        case BinaryK::LessEq: return one_minus(ctx, gt());
        case BinaryK::Equal: return one_minus(ctx, ggml_add(ctx, gt(), lt()));
        case BinaryK::And: return ggml_mul(ctx, truth(fa), truth(fb));
        case BinaryK::Or: return truth(ggml_add(ctx, truth(fa), truth(fb)));
        case BinaryK::Xor: return ggml_abs(ctx, ggml_sub(ctx, truth(fa), truth(fb)));
        case BinaryK::Max: return portable_where(ctx, gt(), fa, fb);
        case BinaryK::Min: return portable_where(ctx, lt(), fa, fb);
        case BinaryK::Pow: return pow_general(ctx, fa, fb);
        default: return nullptr;
    }
}

ggml_tensor* custom_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0, float p1) {
    ggml_tensor* r = ctx.cpu ? nullptr : portable_unary(ctx, x, k, p0, p1);
    return r ? r : cpu_unary(ctx, x, k, p0, p1);
}

ggml_tensor* custom_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k) {
    ggml_tensor* r = ctx.cpu ? nullptr : portable_binary(ctx, a, b, k);
    return r ? r : cpu_binary(ctx, a, b, k);
}

ggml_tensor* custom_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b) {
    ggml_tensor* r = ctx.cpu ? nullptr : portable_where(ctx, c, a, b);
    return r ? r : cpu_where(ctx, c, a, b);
}

namespace {
// F32 rows of contiguous floats, each nb[1] after the last across every dim (how ggml's GLU kernels walk them).
bool even_rows(const ggml_tensor* t) {
    if (t->type != GGML_TYPE_F32 || t->nb[0] != sizeof(float)) return false;
    size_t next = t->nb[1] * size_t(t->ne[1]);
    for (int d = 2; d < 4; d++) {
        if (t->ne[d] > 1 && t->nb[d] != next) return false;
        next *= size_t(t->ne[d]);
    }
    return true;
}
// A copy made only for contiguity is not needed by a kernel that reads even rows: its source is read instead.
ggml_tensor* uncopied(ggml_tensor* t) {
    return t->op == GGML_OP_CONT && ggml_are_same_shape(t, t->src[0]) && even_rows(t->src[0]) ? t->src[0] : t;
}
}  // namespace

ggml_tensor* ggml_gelu_erf_input(ggml_tensor* y) {
    return y->op == GGML_OP_UNARY && ggml_get_unary_op(y) == GGML_UNARY_OP_GELU_ERF ? y->src[0] : nullptr;
}

// The SD UNet's feed-forward: the halves of its 10 MB product were copied (5 + 5 MB) beside it, then gelu and
// mul made 5 MB more; the split GLU makes only its 5 MB result.
ggml_tensor* portable_mul_gelu(Ctx& ctx, ggml_tensor* x, ggml_tensor* g) {
    x = uncopied(x), g = uncopied(g);
    if (!even_rows(x) || !even_rows(g) || !ggml_are_same_shape(x, g)) return nullptr;
    ggml_tensor* y = ggml_geglu_erf_split(ctx, g, x);
    return !ctx.supports || ctx.supports(y) ? y : nullptr;
}

ggml_tensor* concat_pairwise(Ctx& ctx, std::vector<ggml_tensor*> parts, int dim) {
    while (parts.size() > 1) {
        std::vector<ggml_tensor*> next;
        for (size_t i = 0; i + 1 < parts.size(); i += 2) next.push_back(ggml_concat(ctx, parts[i], parts[i + 1], dim));
        if (parts.size() % 2) next.push_back(parts.back());
        parts = std::move(next);
    }
    return parts[0];
}

}  // namespace o2g
