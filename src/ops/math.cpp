// Elementwise math ONNX ops, opsets 1-23: Add/Sub/Mul/Div/Pow/Mod, Sum/Mean/Max/Min, unary math (Exp, Log, Sqrt,
// Erf, trigonometry, Round, Sign, ...), Clip, IsNaN/IsInf, comparisons, logic, bitwise (host), Where, Identity.
#include <cmath>
#include <cstring>

#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

namespace {

void out_same(Lower& L, ggml_tensor* y, int like = 0) { L.out_shape(0, y, L.dtype(like), L.shape(like)); }

// The broadcast shape of every input. Rank > 4 shapes are folded into ggml's four dims; the check keeps
// broadcasting within what folding allows.
Shape checked_bshape(Lower& L) {
    Shape out = L.shape(0);
    for (int i = 1; i < L.n_in(); i++) out = broadcast_shapes(L, out, L.shape(i));
    for (int i = 0; i < L.n_in(); i++)
        if (!folded_compatible(L.shape(i), out)) L.error("broadcast across folded dims (rank > 4)");
    return out;
}

using BinFn = ggml_tensor* (*)(o2g::Ctx&, ggml_tensor*, ggml_tensor*);

}  // namespace

// ---- binary arithmetic ----
void lower_Add(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::add, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Sub(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::sub, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Mul(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::mul, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }
void lower_Div(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::div, L.t(0), L.t(1)), L.dtype(0), checked_bshape(L)); }

void lower_Pow(Lower& L) {
    Shape out = checked_bshape(L);
    // A constant scalar exponent picks ggml_sqr/ggml_sqrt where it can.
    if (L.in(1).host && L.in(1).host->numel() == 1 && out == L.shape(0))
        return out_same(L, O2G_CALL(L, o2g::pow_scalar, L.t(0), float(L.h(1).f64(0))));
    L.out_shape(0, O2G_CALL(L, o2g::pow, L.t(0), L.t(1)), L.dtype(0), out);
}

void host_arith(Lower& L, char op) {
    L.out_host(0, host_map(
        L, L.dtype(0), {0, 1},
        [op](const double* v) {
            switch (op) {
                case '+': return v[0] + v[1];
                case '-': return v[0] - v[1];
                case '*': return v[0] * v[1];
                case '/': return v[0] / v[1];
                default: return std::pow(v[0], v[1]);
            }
        },
        [op](const int64_t* v) -> int64_t {
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
}
void host_Add(Lower& L) { host_arith(L, '+'); }
void host_Sub(Lower& L) { host_arith(L, '-'); }
void host_Mul(Lower& L) { host_arith(L, '*'); }
void host_Div(Lower& L) { host_arith(L, '/'); }
void host_Pow(Lower& L) {
    // Pow's output type follows the base, even with a float exponent.
    L.out_host(0, host_map(L, L.dtype(0), {0, 1}, [](const double* v) { return std::pow(v[0], v[1]); }, nullptr));
}

void lower_Mod(Lower& L) {
    Shape out = checked_bshape(L);
    o2g::ModParams p;
    p.fmod = L.node.get_int("fmod", 0) != 0;
    L.out_shape(0, O2G_CALL(L, o2g::mod, L.t(0), L.t(1), p), L.dtype(0), out);
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

// ---- variadic: a chain of binary calls, left to right ----
static ggml_tensor* chain(Lower& L, BinFn fn, const char* name) {
    ggml_tensor* acc = L.t(0);
    for (int i = 1; i < L.n_in(); i++) acc = L.call(name, fn, acc, L.t(i));
    return acc;
}
void lower_Sum(Lower& L) {
    Shape out = checked_bshape(L);
    L.out_shape(0, chain(L, o2g::add, "o2g::add"), L.dtype(0), out);
}
void lower_Mean(Lower& L) {
    Shape out = checked_bshape(L);
    ggml_tensor* y = chain(L, o2g::add, "o2g::add");
    L.out_shape(0, O2G_CALL(L, ggml_scale, y, 1.0f / float(L.n_in())), L.dtype(0), out);
}
void lower_Max(Lower& L) {
    Shape out = checked_bshape(L);
    L.out_shape(0, chain(L, o2g::maximum, "o2g::maximum"), L.dtype(0), out);
}
void lower_Min(Lower& L) {
    Shape out = checked_bshape(L);
    L.out_shape(0, chain(L, o2g::minimum, "o2g::minimum"), L.dtype(0), out);
}

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
#define O2G_UNARY(NAME, FN) \
    void lower_##NAME(Lower& L) { out_same(L, O2G_CALL(L, FN, L.t(0))); }
O2G_UNARY(Exp, ggml_exp)
O2G_UNARY(Log, ggml_log)
O2G_UNARY(Sqrt, ggml_sqrt)
O2G_UNARY(Abs, ggml_abs)
O2G_UNARY(Neg, ggml_neg)
O2G_UNARY(Floor, ggml_floor)
O2G_UNARY(Ceil, ggml_ceil)
O2G_UNARY(Sin, ggml_sin)
O2G_UNARY(Cos, ggml_cos)
O2G_UNARY(Erf, o2g::erf)
O2G_UNARY(Tan, o2g::tan)
O2G_UNARY(Asin, o2g::asin)
O2G_UNARY(Acos, o2g::acos)
O2G_UNARY(Atan, o2g::atan)
O2G_UNARY(Sinh, o2g::sinh)
O2G_UNARY(Cosh, o2g::cosh)
O2G_UNARY(Asinh, o2g::asinh)
O2G_UNARY(Acosh, o2g::acosh)
O2G_UNARY(Atanh, o2g::atanh)
O2G_UNARY(Reciprocal, o2g::reciprocal)
O2G_UNARY(Round, o2g::round)
O2G_UNARY(Sign, o2g::sign)
#undef O2G_UNARY
void lower_Identity(Lower& L) { out_same(L, L.t(0)); }

void lower_IsNaN(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::is_nan, L.t(0)), DType::BOOL, L.shape(0)); }
void lower_IsInf(Lower& L) {
    o2g::IsInfParams p;
    p.detect_positive = L.node.get_int("detect_positive", 1) != 0;
    p.detect_negative = L.node.get_int("detect_negative", 1) != 0;
    L.out_shape(0, O2G_CALL(L, o2g::is_inf, L.t(0), p), DType::BOOL, L.shape(0));
}
void lower_Not(Lower& L) { L.out_shape(0, O2G_CALL(L, o2g::logical_not, L.t(0)), DType::BOOL, L.shape(0)); }

// Clip before opset 11 takes its bounds as attributes; from 11 as inputs.
static void clip(Lower& L, float lo, float hi) {
    if (lo > hi) lo = hi;  // the spec: every value becomes max when min > max
    out_same(L, O2G_CALL(L, ggml_clamp, L.t(0), lo, hi));
}
void lower_Clip_6(Lower& L) { clip(L, L.node.get_float("min", -INFINITY), L.node.get_float("max", INFINITY)); }
void lower_Clip(Lower& L) {
    clip(L, L.has(1) ? float(L.h(1).f64(0)) : -INFINITY, L.has(2) ? float(L.h(2).f64(0)) : INFINITY);
}
static void host_clip(Lower& L, bool attributes) {
    double lo = -INFINITY, hi = INFINITY;
    bool is_int = !dtype_is_float(L.dtype(0));
    if (is_int) {
        lo = -9.3e18;
        hi = 9.3e18;
    }
    if (attributes) {
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
void host_Clip_6(Lower& L) { host_clip(L, true); }
void host_Clip(Lower& L) { host_clip(L, false); }

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
void host_Reciprocal(Lower& L) { host_unary(L, [](double x) { return 1.0 / x; }, nullptr); }
void host_Exp(Lower& L) { host_unary(L, [](double x) { return std::exp(x); }, nullptr); }
void host_Log(Lower& L) { host_unary(L, [](double x) { return std::log(x); }, nullptr); }
void host_Identity(Lower& L) { L.pass(0, 0); }

// ---- comparisons and logic: bool outputs ----
#define O2G_CMP(NAME, FN) \
    void lower_##NAME(Lower& L) { L.out_shape(0, O2G_CALL(L, FN, L.t(0), L.t(1)), DType::BOOL, checked_bshape(L)); }
O2G_CMP(Equal, o2g::equal)
O2G_CMP(Less, o2g::less)
O2G_CMP(LessOrEqual, o2g::less_or_equal)
O2G_CMP(Greater, o2g::greater)
O2G_CMP(GreaterOrEqual, o2g::greater_or_equal)
O2G_CMP(And, o2g::logical_and)
O2G_CMP(Or, o2g::logical_or)
O2G_CMP(Xor, o2g::logical_xor)
#undef O2G_CMP

// Comparison or logic op `op` (0 ==, 1 <, 2 <=, 3 >, 4 >=, 5 and, 6 or, 7 xor) on two values of one type.
template <typename T>
static T compare(int op, T a, T b) {
    switch (op) {
        case 0: return a == b;
        case 1: return a < b;
        case 2: return a <= b;
        case 3: return a > b;
        case 4: return a >= b;
        case 5: return a != 0 && b != 0;
        case 6: return a != 0 || b != 0;
        default: return (a != 0) != (b != 0);
    }
}

static void host_cmp(Lower& L, int op) {
    L.out_host(0, host_map(L, DType::BOOL, {0, 1}, [op](const double* v) { return compare(op, v[0], v[1]); },
                           [op](const int64_t* v) { return compare(op, v[0], v[1]); }));
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

// ---- Where: selection, exact on the device ----
void lower_Where(Lower& L) {
    Shape out = checked_bshape(L);
    L.out_shape(0, O2G_CALL(L, o2g::where, L.t(0), L.t(1), L.t(2)), L.dtype(1), out);
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

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& math_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Add", .since = 1, .ggml = lower_Add, .host = host_Add, .math = true},
        {.op = "Sub", .since = 1, .ggml = lower_Sub, .host = host_Sub, .math = true},
        {.op = "Mul", .since = 1, .ggml = lower_Mul, .host = host_Mul, .math = true},
        {.op = "Div", .since = 1, .ggml = lower_Div, .host = host_Div, .math = true},
        {.op = "Pow", .since = 1, .ggml = lower_Pow, .host = host_Pow, .math = true},
        {.op = "Mod", .since = 10, .ggml = lower_Mod, .host = host_Mod, .math = true},
        {.op = "Sum", .since = 1, .ggml = lower_Sum, .host = host_Sum, .math = true},
        {.op = "Mean", .since = 1, .ggml = lower_Mean, .host = host_Mean, .math = true},
        {.op = "Max", .since = 1, .ggml = lower_Max, .host = host_Max, .math = true},
        {.op = "Min", .since = 1, .ggml = lower_Min, .host = host_Min, .math = true},
        {.op = "Exp", .since = 1, .ggml = lower_Exp, .host = host_Exp, .math = true},
        {.op = "Log", .since = 1, .ggml = lower_Log, .host = host_Log, .math = true},
        {.op = "Sqrt", .since = 1, .ggml = lower_Sqrt, .host = host_Sqrt, .math = true},
        {.op = "Abs", .since = 1, .ggml = lower_Abs, .host = host_Abs, .math = true},
        {.op = "Neg", .since = 1, .ggml = lower_Neg, .host = host_Neg, .math = true},
        {.op = "Floor", .since = 1, .ggml = lower_Floor, .host = host_Floor, .math = true},
        {.op = "Ceil", .since = 1, .ggml = lower_Ceil, .host = host_Ceil, .math = true},
        {.op = "Sin", .since = 7, .ggml = lower_Sin, .math = true},
        {.op = "Cos", .since = 7, .ggml = lower_Cos, .math = true},
        {.op = "Tan", .since = 7, .ggml = lower_Tan, .math = true},
        {.op = "Asin", .since = 7, .ggml = lower_Asin, .math = true},
        {.op = "Acos", .since = 7, .ggml = lower_Acos, .math = true},
        {.op = "Atan", .since = 7, .ggml = lower_Atan, .math = true},
        {.op = "Sinh", .since = 9, .ggml = lower_Sinh, .math = true},
        {.op = "Cosh", .since = 9, .ggml = lower_Cosh, .math = true},
        {.op = "Asinh", .since = 9, .ggml = lower_Asinh, .math = true},
        {.op = "Acosh", .since = 9, .ggml = lower_Acosh, .math = true},
        {.op = "Atanh", .since = 9, .ggml = lower_Atanh, .math = true},
        {.op = "Erf", .since = 9, .ggml = lower_Erf, .math = true},
        {.op = "Reciprocal", .since = 1, .ggml = lower_Reciprocal, .host = host_Reciprocal, .math = true},
        {.op = "Round", .since = 11, .ggml = lower_Round, .host = host_Round, .math = true},
        {.op = "Sign", .since = 9, .ggml = lower_Sign, .host = host_Sign, .math = true},
        {.op = "Clip", .since = 1, .ggml = lower_Clip_6, .host = host_Clip_6, .math = true},
        {.op = "Clip", .since = 11, .ggml = lower_Clip, .host = host_Clip, .host_inputs = {1,2}, .math = true},
        {.op = "Identity", .since = 1, .ggml = lower_Identity, .host = host_Identity},
        {.op = "IsNaN", .since = 9, .ggml = lower_IsNaN},
        {.op = "IsInf", .since = 10, .ggml = lower_IsInf},
        {.op = "Not", .since = 1, .ggml = lower_Not, .host = host_Not},
        {.op = "Equal", .since = 1, .ggml = lower_Equal, .host = host_Equal},
        {.op = "Less", .since = 1, .ggml = lower_Less, .host = host_Less},
        {.op = "LessOrEqual", .since = 12, .ggml = lower_LessOrEqual, .host = host_LessOrEqual},
        {.op = "Greater", .since = 1, .ggml = lower_Greater, .host = host_Greater},
        {.op = "GreaterOrEqual", .since = 12, .ggml = lower_GreaterOrEqual, .host = host_GreaterOrEqual},
        {.op = "And", .since = 1, .ggml = lower_And, .host = host_And},
        {.op = "Or", .since = 1, .ggml = lower_Or, .host = host_Or},
        {.op = "Xor", .since = 1, .ggml = lower_Xor, .host = host_Xor},
        {.op = "BitShift", .since = 11, .host = host_BitShift},
        {.op = "BitwiseAnd", .since = 18, .host = host_BitwiseAnd},
        {.op = "BitwiseOr", .since = 18, .host = host_BitwiseOr},
        {.op = "BitwiseXor", .since = 18, .host = host_BitwiseXor},
        {.op = "BitwiseNot", .since = 18, .host = host_BitwiseNot},
        {.op = "Where", .since = 9, .ggml = lower_Where, .host = host_Where},
    };
    return t;
}

}  // namespace onnx2ggml
