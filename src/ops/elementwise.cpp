// Elementwise ONNX ops (unary math, activations, binary arithmetic, comparisons, logic), opsets 1-23.
#include <cmath>
#include <cstring>

#include "ops/custom.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

using GFn2 = ggml_tensor* (*)(ggml_context*, ggml_tensor*, ggml_tensor*);


void out_same(Lower& L, ggml_tensor* y, int like = 0) { L.out_shape(0, y, L.dtype(like), L.shape(like)); }

Shape bshape(Lower& L) { return broadcast_shapes(L, L.shape(0), L.shape(1)); }

}  // namespace

// ---- binary arithmetic ----
// Rank > 4 shapes are folded into ggml's four dims; the check keeps broadcasting within what folding allows.
static Shape checked_bshape(Lower& L) {
    Shape out = bshape(L);
    if (!folded_compatible(L.shape(0), out) || !folded_compatible(L.shape(1), out))
        L.error("broadcast across folded dims (rank > 4)");
    return out;
}
void lower_Add(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::add, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Sub(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::sub, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Mul(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::mul, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Div(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::div, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }

void lower_Pow(Lower& L) {
    Shape out = bshape(L);
    if (L.has(1) && L.in(1).host && L.in(1).host->numel() == 1 && out == L.shape(0)) {
        double e = L.in(1).host->f64(0);
        ggml_tensor* x = L.t(0);
        if (e == 1) return out_same(L, x);
        if (e == 2) return out_same(L, ggml_sqr(L.ctx, x));
        if (e == 0.5) return out_same(L, ggml_sqrt(L.ctx, x));
        return out_same(L, custom_unary(L, x, UnaryK::PowScalar, float(e)));
    }
    L.out(0, custom_binary(L, L.t(0), L.shape(0), L.t(1), L.shape(1), out, BinaryK::Pow), L.dtype(0), int(out.size()));
}

void host_arith(Lower& L, char op) {
    DType dt = L.dtype(0);
    L.out_host(0, host_map(
        L, dt, {0, 1},
        [op](const double* v) {
            switch (op) {
                case '+': return v[0] + v[1];
                case '-': return v[0] - v[1];
                case '*': return v[0] * v[1];
                case '/': return v[0] / v[1];
                default: return std::pow(v[0], v[1]);
            }
        },
        [op, dt](const int64_t* v) -> int64_t {
            switch (op) {
                case '+': return int64_t(uint64_t(v[0]) + uint64_t(v[1]));
                case '-': return int64_t(uint64_t(v[0]) - uint64_t(v[1]));
                case '*': return int64_t(uint64_t(v[0]) * uint64_t(v[1]));
                case '/': {
                    if (v[1] == 0) return 0;
                    if (v[1] == -1) return int64_t(0 - uint64_t(v[0]));
                    return v[0] / v[1];
                }
                default: {
                    int64_t r = 1, b = v[0];
                    for (int64_t e = v[1]; e > 0; e--) r *= b;
                    return v[1] < 0 ? (b == 1 ? 1 : 0) : r;
                }
            }
        }));
    (void)dt;
}
void host_Add(Lower& L) { host_arith(L, '+'); }
void host_Sub(Lower& L) { host_arith(L, '-'); }
void host_Mul(Lower& L) { host_arith(L, '*'); }
void host_Div(Lower& L) { host_arith(L, '/'); }
void host_Pow(Lower& L) {
    // Pow's output type follows the base, even with a float exponent.
    DType dt = L.dtype(0);
    L.out_host(0, host_map(L, dt, {0, 1}, [](const double* v) { return std::pow(v[0], v[1]); }, nullptr));
}

void lower_Mod(Lower& L) {
    Shape out = bshape(L);
    bool f = L.node.get_int("fmod", 0) != 0;
    L.out(0, custom_binary(L, L.t(0), L.shape(0), L.t(1), L.shape(1), out, f ? BinaryK::Fmod : BinaryK::Mod),
          L.dtype(0), int(out.size()));
}
void host_Mod(Lower& L) {
    bool f = L.node.get_int("fmod", 0) != 0;
    L.out_host(0, host_map(
        L, L.dtype(0), {0, 1},
        [f](const double* v) {
            double r = std::fmod(v[0], v[1]);
            if (!f && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
            return r;
        },
        [f](const int64_t* v) -> int64_t {
            if (v[1] == 0) return 0;
            int64_t r = v[0] % v[1];
            if (!f && r != 0 && ((r < 0) != (v[1] < 0))) r += v[1];
            return r;
        }));
}

// ---- variadic ----
static void variadic(Lower& L, GFn2 fn, BinaryK k, bool mean) {
    Shape out = L.shape(0);
    for (int i = 1; i < L.n_in(); i++) out = broadcast_shapes(L, out, L.shape(i));
    ggml_tensor* acc = broadcast_to(L, L.t(0), L.shape(0), out);
    Shape acc_shape = out;
    for (int i = 1; i < L.n_in(); i++) {
        if (fn) acc = fn(L.ctx, acc, L.t(i));
        else acc = custom_binary(L, acc, acc_shape, L.t(i), L.shape(i), out, k);
    }
    if (mean) acc = ggml_scale(L.ctx, acc, 1.0f / float(L.n_in()));
    L.out(0, acc, L.dtype(0), int(out.size()));
}
void lower_Sum(Lower& L) { variadic(L, ggml_add, BinaryK::Max, false); }
void lower_Mean(Lower& L) { variadic(L, ggml_add, BinaryK::Max, true); }
void lower_Max(Lower& L) { variadic(L, nullptr, BinaryK::Max, false); }
void lower_Min(Lower& L) { variadic(L, nullptr, BinaryK::Min, false); }

static void host_variadic(Lower& L, int kind) {
    std::vector<int> ins;
    for (int i = 0; i < L.n_in(); i++) ins.push_back(i);
    size_t n = ins.size();
    L.out_host(0, host_map(
        L, L.dtype(0), ins,
        [kind, n](const double* v) {
            double r = v[0];
            for (size_t i = 1; i < n; i++) {
                if (kind == 0 || kind == 3) r += v[i];
                else if (kind == 1) r = (std::isnan(r) || std::isnan(v[i])) ? NAN : std::max(r, v[i]);
                else r = (std::isnan(r) || std::isnan(v[i])) ? NAN : std::min(r, v[i]);
            }
            return kind == 3 ? r / double(n) : r;
        },
        [kind, n](const int64_t* v) {
            int64_t r = v[0];
            for (size_t i = 1; i < n; i++) r = kind == 0 ? r + v[i] : kind == 1 ? std::max(r, v[i]) : std::min(r, v[i]);
            return r;
        }));
}
void host_Sum(Lower& L) { host_variadic(L, 0); }
void host_Max(Lower& L) { host_variadic(L, 1); }
void host_Min(Lower& L) { host_variadic(L, 2); }
void host_Mean(Lower& L) { host_variadic(L, 3); }

// ---- unary math ----
#define O2G_UNARY(NAME, EXPR)                 \
    void lower_##NAME(Lower& L) {             \
        ggml_tensor* x = L.t(0);              \
        ggml_context* ctx = L.ctx;            \
        (void)ctx;                            \
        out_same(L, EXPR);                    \
    }
O2G_UNARY(Relu, ggml_relu(ctx, x))
O2G_UNARY(Sigmoid, ggml_sigmoid(ctx, x))
O2G_UNARY(SiLU, ggml_silu(ctx, x))
O2G_UNARY(Tanh, ggml_tanh(ctx, x))
O2G_UNARY(Exp, ggml_exp(ctx, x))
O2G_UNARY(Log, ggml_log(ctx, x))
O2G_UNARY(Sqrt, ggml_sqrt(ctx, x))
O2G_UNARY(Abs, ggml_abs(ctx, x))
O2G_UNARY(Neg, ggml_neg(ctx, x))
O2G_UNARY(Floor, ggml_floor(ctx, x))
O2G_UNARY(Ceil, ggml_ceil(ctx, x))
O2G_UNARY(Sin, ggml_sin(ctx, x))
O2G_UNARY(Cos, ggml_cos(ctx, x))
O2G_UNARY(Erf, custom_unary(L, x, UnaryK::Erf))
O2G_UNARY(Tan, custom_unary(L, x, UnaryK::Tan))
O2G_UNARY(Asin, custom_unary(L, x, UnaryK::Asin))
O2G_UNARY(Acos, custom_unary(L, x, UnaryK::Acos))
O2G_UNARY(Atan, custom_unary(L, x, UnaryK::Atan))
O2G_UNARY(Sinh, custom_unary(L, x, UnaryK::Sinh))
O2G_UNARY(Cosh, custom_unary(L, x, UnaryK::Cosh))
O2G_UNARY(Asinh, custom_unary(L, x, UnaryK::Asinh))
O2G_UNARY(Acosh, custom_unary(L, x, UnaryK::Acosh))
O2G_UNARY(Atanh, custom_unary(L, x, UnaryK::Atanh))
O2G_UNARY(Reciprocal, custom_unary(L, x, UnaryK::Reciprocal))
O2G_UNARY(Round, custom_unary(L, x, UnaryK::RoundEven))
O2G_UNARY(Sign, custom_unary(L, x, UnaryK::Sign))
O2G_UNARY(Softsign, custom_unary(L, x, UnaryK::Softsign))
O2G_UNARY(Softplus, custom_unary(L, x, UnaryK::Softplus))
O2G_UNARY(Mish, custom_unary(L, x, UnaryK::Mish))
O2G_UNARY(HardSwish, ggml_hardswish(ctx, x))
O2G_UNARY(Identity, x)
#undef O2G_UNARY

void lower_IsNaN(Lower& L) { L.out_shape(0, custom_unary(L, L.t(0), UnaryK::IsNaN), DType::BOOL, L.shape(0)); }
void lower_IsInf(Lower& L) {
    bool pos = L.node.get_int("detect_positive", 1) != 0, neg = L.node.get_int("detect_negative", 1) != 0;
    UnaryK k = pos && neg ? UnaryK::IsInf : pos ? UnaryK::IsInfPos : UnaryK::IsInfNeg;
    ggml_tensor* y = (pos || neg) ? custom_unary(L, L.t(0), k) : ggml_scale(L.ctx, L.t(0), 0.0f);
    L.out_shape(0, y, DType::BOOL, L.shape(0));
}
void lower_Not(Lower& L) { L.out_shape(0, custom_unary(L, L.t(0), UnaryK::Not), DType::BOOL, L.shape(0)); }

void lower_LeakyRelu(Lower& L) {
    out_same(L, ggml_leaky_relu(L.ctx, L.t(0), L.node.get_float("alpha", 0.01f), false));
}
void lower_Elu(Lower& L) { out_same(L, custom_unary(L, L.t(0), UnaryK::EluA, L.node.get_float("alpha", 1.0f))); }
void lower_Selu(Lower& L) {
    out_same(L, custom_unary(L, L.t(0), UnaryK::Selu, L.node.get_float("alpha", 1.67326319217681884765625f),
                             L.node.get_float("gamma", 1.05070102214813232421875f)));
}
void lower_Celu(Lower& L) { out_same(L, custom_unary(L, L.t(0), UnaryK::Celu, L.node.get_float("alpha", 1.0f))); }
void lower_ThresholdedRelu(Lower& L) {
    out_same(L, custom_unary(L, L.t(0), UnaryK::ThresholdedRelu, L.node.get_float("alpha", 1.0f)));
}
void lower_HardSigmoid(Lower& L) {
    ggml_tensor* y = ggml_scale_bias(L.ctx, L.t(0), L.node.get_float("alpha", 0.2f), L.node.get_float("beta", 0.5f));
    out_same(L, ggml_clamp(L.ctx, y, 0.0f, 1.0f));
}
void lower_PRelu(Lower& L) {
    // relu(x) - slope * relu(-x), with slope broadcast to x
    Shape out = bshape(L);
    ggml_tensor* x = broadcast_to(L, L.t(0), L.shape(0), out);
    ggml_tensor* neg = ggml_relu(L.ctx, ggml_neg(L.ctx, x));
    ggml_tensor* y = ggml_sub(L.ctx, ggml_relu(L.ctx, x), ggml_mul(L.ctx, neg, L.t(1)));
    L.out(0, y, L.dtype(0), int(out.size()));
}
void lower_Gelu(Lower& L) {
    ggml_tensor* x = L.t(0);
    if (L.node.get_string("approximate", "none") == "tanh") {
        // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), composed in f32 (ggml_gelu uses an f16 table)
        ggml_tensor* x3 = ggml_mul(L.ctx, ggml_sqr(L.ctx, x), x);
        ggml_tensor* in = ggml_scale(L.ctx, ggml_add(L.ctx, x, ggml_scale(L.ctx, x3, 0.044715f)), 0.7978845608028654f);
        ggml_tensor* t = ggml_scale_bias(L.ctx, ggml_tanh(L.ctx, in), 0.5f, 0.5f);
        return out_same(L, ggml_mul(L.ctx, x, t));
    }
    out_same(L, ggml_gelu_erf(L.ctx, x));
}

void lower_Clip(Lower& L) {
    float lo = -INFINITY, hi = INFINITY;
    if (L.opset < 11) {
        lo = L.node.get_float("min", -INFINITY);
        hi = L.node.get_float("max", INFINITY);
    } else {
        if (L.has(1)) lo = float(L.h(1).f64(0));
        if (L.has(2)) hi = float(L.h(2).f64(0));
    }
    if (lo > hi) lo = hi;  // the spec: every value becomes max when min > max
    out_same(L, ggml_clamp(L.ctx, L.t(0), lo, hi));
}
void host_Clip(Lower& L) {
    double lo = -INFINITY, hi = INFINITY;
    bool is_int = !dtype_is_float(L.dtype(0));
    if (is_int) {
        lo = -9.3e18;
        hi = 9.3e18;
    }
    if (L.opset < 11) {
        lo = L.node.get_float("min", float(lo));
        hi = L.node.get_float("max", float(hi));
    } else {
        if (L.has(1)) lo = L.h(1).f64(0);
        if (L.has(2)) hi = L.h(2).f64(0);
    }
    int64_t ilo = L.has(1) ? L.h(1).i64(0) : INT64_MIN, ihi = L.has(2) ? L.h(2).i64(0) : INT64_MAX;
    if (lo > hi) lo = hi;
    if (ilo > ihi) ilo = ihi;
    L.out_host(0, host_map(
        L, L.dtype(0), {0},
        [lo, hi](const double* v) { return std::isnan(v[0]) ? v[0] : std::min(hi, std::max(lo, v[0])); },
        [ilo, ihi](const int64_t* v) { return std::min(ihi, std::max(ilo, v[0])); }));
}

// Host versions of simple unary ops used by shape arithmetic (e.g. Cast->Mul->Floor on sizes).
static void host_unary(Lower& L, double (*f)(double), int64_t (*fi)(int64_t)) {
    std::function<int64_t(const int64_t*)> g;
    if (fi) g = [fi](const int64_t* v) { return fi(v[0]); };
    L.out_host(0, host_map(L, L.dtype(0), {0}, [f](const double* v) { return f(v[0]); }, g));
}
void host_Neg(Lower& L) { host_unary(L, [](double x) { return -x; }, [](int64_t x) { return -x; }); }
void host_Abs(Lower& L) { host_unary(L, [](double x) { return std::fabs(x); }, [](int64_t x) { return x < 0 ? -x : x; }); }
void host_Sign(Lower& L) {
    host_unary(L, [](double x) { return double((x > 0) - (x < 0)); }, [](int64_t x) { return int64_t((x > 0) - (x < 0)); });
}
void host_Floor(Lower& L) { host_unary(L, [](double x) { return std::floor(x); }, nullptr); }
void host_Ceil(Lower& L) { host_unary(L, [](double x) { return std::ceil(x); }, nullptr); }
void host_Round(Lower& L) { host_unary(L, [](double x) { return std::nearbyint(x); }, nullptr); }
void host_Sqrt(Lower& L) { host_unary(L, [](double x) { return std::sqrt(x); }, nullptr); }
void host_Relu(Lower& L) { host_unary(L, [](double x) { return x > 0 ? x : 0.0; }, [](int64_t x) { return x > 0 ? x : 0; }); }
void host_Reciprocal(Lower& L) { host_unary(L, [](double x) { return 1.0 / x; }, nullptr); }
void host_Exp(Lower& L) { host_unary(L, [](double x) { return std::exp(x); }, nullptr); }
void host_Log(Lower& L) { host_unary(L, [](double x) { return std::log(x); }, nullptr); }
void host_Identity(Lower& L) { L.pass(0, 0); }

// ---- comparisons and logic: bool outputs ----
static void lower_cmp(Lower& L, BinaryK k) {
    Shape out = bshape(L);
    L.out(0, custom_binary(L, L.t(0), L.shape(0), L.t(1), L.shape(1), out, k), DType::BOOL, int(out.size()));
}
void lower_Equal(Lower& L) { lower_cmp(L, BinaryK::Equal); }
void lower_Less(Lower& L) { lower_cmp(L, BinaryK::Less); }
void lower_LessOrEqual(Lower& L) { lower_cmp(L, BinaryK::LessEq); }
void lower_Greater(Lower& L) { lower_cmp(L, BinaryK::Greater); }
void lower_GreaterOrEqual(Lower& L) { lower_cmp(L, BinaryK::GreaterEq); }
void lower_And(Lower& L) { lower_cmp(L, BinaryK::And); }
void lower_Or(Lower& L) { lower_cmp(L, BinaryK::Or); }
void lower_Xor(Lower& L) { lower_cmp(L, BinaryK::Xor); }

static void host_cmp(Lower& L, int op) {
    auto cf = [op](const double* v) -> double {
        switch (op) {
            case 0: return v[0] == v[1];
            case 1: return v[0] < v[1];
            case 2: return v[0] <= v[1];
            case 3: return v[0] > v[1];
            case 4: return v[0] >= v[1];
            case 5: return v[0] != 0 && v[1] != 0;
            case 6: return v[0] != 0 || v[1] != 0;
            default: return (v[0] != 0) != (v[1] != 0);
        }
    };
    auto ci = [op](const int64_t* v) -> int64_t {
        switch (op) {
            case 0: return v[0] == v[1];
            case 1: return v[0] < v[1];
            case 2: return v[0] <= v[1];
            case 3: return v[0] > v[1];
            case 4: return v[0] >= v[1];
            case 5: return v[0] != 0 && v[1] != 0;
            case 6: return v[0] != 0 || v[1] != 0;
            default: return (v[0] != 0) != (v[1] != 0);
        }
    };
    L.out_host(0, host_map(L, DType::BOOL, {0, 1}, cf, ci));
}
void host_Equal(Lower& L) { host_cmp(L, 0); }
void host_Less(Lower& L) { host_cmp(L, 1); }
void host_LessOrEqual(Lower& L) { host_cmp(L, 2); }
void host_Greater(Lower& L) { host_cmp(L, 3); }
void host_GreaterOrEqual(Lower& L) { host_cmp(L, 4); }
void host_And(Lower& L) { host_cmp(L, 5); }
void host_Or(Lower& L) { host_cmp(L, 6); }
void host_Xor(Lower& L) { host_cmp(L, 7); }
void host_Not(Lower& L) {
    L.out_host(0, host_map(L, DType::BOOL, {0}, nullptr, [](const int64_t* v) -> int64_t { return v[0] == 0; }));
}
void host_BitShift(Lower& L) {
    bool right = L.node.get_string("direction", "") == "RIGHT";
    DType dt = L.dtype(0);
    int bits = int(dtype_size(dt)) * 8;
    L.out_host(0, host_map(L, dt, {0, 1}, nullptr, [right, bits](const int64_t* v) -> int64_t {
        uint64_t x = uint64_t(v[0]);
        if (bits < 64) x &= (uint64_t(1) << bits) - 1;
        if (v[1] >= bits) return 0;
        return int64_t(right ? x >> v[1] : x << v[1]);
    }));
}
static void host_bitwise(Lower& L, int op) {
    L.out_host(0, host_map(L, L.dtype(0), {0, 1}, nullptr, [op](const int64_t* v) -> int64_t {
        return op == 0 ? (v[0] & v[1]) : op == 1 ? (v[0] | v[1]) : (v[0] ^ v[1]);
    }));
}
void host_BitwiseAnd(Lower& L) { host_bitwise(L, 0); }
void host_BitwiseOr(Lower& L) { host_bitwise(L, 1); }
void host_BitwiseXor(Lower& L) { host_bitwise(L, 2); }
void host_BitwiseNot(Lower& L) {
    L.out_host(0, host_map(L, L.dtype(0), {0}, nullptr, [](const int64_t* v) -> int64_t { return ~v[0]; }));
}

// ---- Where: selection (bool work), device select is exact ----
void lower_Where(Lower& L) {
    Shape out = broadcast_shapes(L, broadcast_shapes(L, L.shape(0), L.shape(1)), L.shape(2));
    ggml_tensor* y = custom_where(L, L.t(0), L.shape(0), L.t(1), L.shape(1), L.t(2), L.shape(2), out);
    L.out(0, y, L.dtype(1), int(out.size()));
}
void host_Where(Lower& L) {
    Shape out = broadcast_shapes(L, broadcast_shapes(L, L.shape(0), L.shape(1)), L.shape(2));
    auto ic = broadcast_index(L.shape(0), out), ia = broadcast_index(L.shape(1), out),
         ib = broadcast_index(L.shape(2), out);
    const HostTensor &c = L.h(0), &a = L.h(1), &b = L.h(2);
    HostTensor r = HostTensor::alloc(L.dtype(1), out);
    size_t es = dtype_size(r.dtype);
    for (int64_t k = 0; k < r.numel(); k++) {
        bool sel = c.i64(ic[size_t(k)]) != 0;
        const HostTensor& s = sel ? a : b;
        int64_t j = sel ? ia[size_t(k)] : ib[size_t(k)];
        std::memcpy(r.mut() + size_t(k) * es, s.data + size_t(j) * es, es);
    }
    L.out_host(0, std::move(r));
}

}  // namespace onnx2ggml
