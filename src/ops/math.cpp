// Elementwise math ONNX ops, opsets 1-23: Add/Sub/Mul/Div/Pow/Mod, Sum/Mean/Max/Min, unary math (Exp, Log, Sqrt,
// Erf, trigonometry, Round, Sign, ...), Clip, IsNaN/IsInf, comparisons, logic, bitwise (host), Where, Identity.
#include <cmath>
#include <cstring>

#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

namespace {

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

// Before opset 7, B broadcasts into A only with broadcast=1, its dims matched against A's from `axis` (default: A's
// trailing dims, which numpy broadcasting already does). The size-1 dims B needs after it to match numpy's rules.
int64_t legacy_trailing(Lower& L) {
    if (L.n_in() != 2 || !L.node.get_int("broadcast", 0) || !L.node.has("axis")) return 0;
    const int ra = L.rank(0), rb = L.rank(1);
    int64_t axis = L.node.get_int("axis", 0);
    if (axis < 0) axis += ra;
    if (axis < 0 || axis + rb > ra)
        L.error("axis " + std::to_string(L.node.get_int("axis", 0)) + " does not place B (rank " + std::to_string(rb) +
                ") inside A (rank " + std::to_string(ra) + ")");
    for (int i = 0; i < rb; i++)
        if (L.shape(1)[size_t(i)] != 1 && L.shape(1)[size_t(i)] != L.shape(0)[size_t(axis + i)])
            L.error("B's shape does not match A's from axis " + std::to_string(axis));
    return ra - axis - rb;
}

// A legacy binary op: B given its trailing 1s (o2g::unsqueeze), then the op as from opset 7.
void legacy_binary(Lower& L, BinFn fn, const char* name, DType dt) {
    const int64_t t = legacy_trailing(L);
    if (!t) {
        L.out_shape(0, L.call(name, fn, L.t(0), L.t(1)), dt, checked_bshape(L));
        return;
    }
    const int rb = L.rank(1);
    o2g::Ints axes;
    for (int64_t i = 0; i < t; i++) axes.push_back(rb + i);
    ggml_tensor* b = O2G_CALL(L, o2g::unsqueeze, L.t(1), axes, o2g::UnsqueezeParams{rb});
    Shape bs = L.shape(1);
    bs.insert(bs.end(), size_t(t), 1);
    Shape out = broadcast_shapes(L, L.shape(0), bs);
    if (!folded_compatible(L.shape(0), out) || !folded_compatible(bs, out))
        L.error("broadcast across folded dims (rank > 4)");
    L.out_shape(0, L.call(name, fn, L.t(0), b), dt, out);
}

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

// Host evaluation of every elementwise row: o2g::host_map over all inputs.
static void host_fn(Lower& L, int fn, DType out) {
    static const HostTensor absent = HostTensor::alloc(DType::FLOAT, {0});  // an omitted optional input
    std::vector<HostArg> xs;
    for (int i = 0; i < L.n_in(); i++) xs.push_back(L.has(i) ? L.hv(i) : HostArg{&absent, nullptr});
    O2G_HOST(L, 0, o2g::host_map, xs, o2g::HostMapParams{fn, out});
}
void host_Add(Lower& L) { host_fn(L, o2g::HOST_ADD, L.dtype(0)); }
void host_Sub(Lower& L) { host_fn(L, o2g::HOST_SUB, L.dtype(0)); }
void host_Mul(Lower& L) { host_fn(L, o2g::HOST_MUL, L.dtype(0)); }
void host_Div(Lower& L) { host_fn(L, o2g::HOST_DIV, L.dtype(0)); }
void host_Pow(Lower& L) { host_fn(L, o2g::HOST_POW, L.dtype(0)); }  // the type follows the base

// ---- opsets 1-6: the broadcast and axis attributes (Add, Sub, Mul, Div; Pow and comparisons/logic at opset 1) ----
#define O2G_LEGACY(NAME, FN, HOST_FN, DT)                                                          \
    void lower_##NAME##_1(Lower& L) { legacy_binary(L, FN, #FN, DT); }                              \
    void host_##NAME##_1(Lower& L) {                                                               \
        O2G_HOST(L, 0, o2g::host_map, std::vector<HostArg>{L.hv(0), L.hv(1)},                       \
                 o2g::HostMapParams{HOST_FN, DT, legacy_trailing(L)});                              \
    }
O2G_LEGACY(Add, o2g::add, o2g::HOST_ADD, L.dtype(0))
O2G_LEGACY(Sub, o2g::sub, o2g::HOST_SUB, L.dtype(0))
O2G_LEGACY(Mul, o2g::mul, o2g::HOST_MUL, L.dtype(0))
O2G_LEGACY(Div, o2g::div, o2g::HOST_DIV, L.dtype(0))
O2G_LEGACY(Pow, o2g::pow, o2g::HOST_POW, L.dtype(0))
O2G_LEGACY(Equal, o2g::equal, o2g::HOST_EQUAL, DType::BOOL)
O2G_LEGACY(Less, o2g::less, o2g::HOST_LESS, DType::BOOL)
O2G_LEGACY(Greater, o2g::greater, o2g::HOST_GREATER, DType::BOOL)
O2G_LEGACY(And, o2g::logical_and, o2g::HOST_AND, DType::BOOL)
O2G_LEGACY(Or, o2g::logical_or, o2g::HOST_OR, DType::BOOL)
O2G_LEGACY(Xor, o2g::logical_xor, o2g::HOST_XOR, DType::BOOL)
#undef O2G_LEGACY

void lower_Mod(Lower& L) {
    Shape out = checked_bshape(L);
    o2g::ModParams p;
    p.fmod = L.node.get_int("fmod", 0) != 0;
    L.out_shape(0, O2G_CALL(L, o2g::mod, L.t(0), L.t(1), p), L.dtype(0), out);
}
void host_Mod(Lower& L) { host_fn(L, L.node.get_int("fmod", 0) ? o2g::HOST_FMOD : o2g::HOST_MOD, L.dtype(0)); }

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

void host_Sum(Lower& L) { host_fn(L, o2g::HOST_SUM, L.dtype(0)); }
void host_Max(Lower& L) { host_fn(L, o2g::HOST_MAX, L.dtype(0)); }
void host_Min(Lower& L) { host_fn(L, o2g::HOST_MIN, L.dtype(0)); }
void host_Mean(Lower& L) { host_fn(L, o2g::HOST_MEAN, L.dtype(0)); }

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
O2G_UNARY(Sin, o2g::sin)
O2G_UNARY(Cos, o2g::cos)
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
// onnx2ggml.ScaleBias (fuse_scalar_affine): scalar constants of rank r widen a lower-rank x to rank r.
void lower_ScaleBias(Lower& L) {
    Shape s = L.shape(0);
    while (int64_t(s.size()) < L.node.get_int("rank", 0)) s.insert(s.begin(), 1);
    o2g::ScaleBiasParams p{L.node.get_float("scale", 1.0f), L.node.get_float("bias", 0.0f)};
    L.out_shape(0, O2G_CALL(L, o2g::scale_bias, L.t(0), p), L.dtype(0), s);
}

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
void lower_Clip_6(Lower& L) {
    out_same(L, O2G_CALL(L, o2g::clip, L.t(0), o2g::ClipParams{L.node.get_float("min", -INFINITY),
                                                                 L.node.get_float("max", INFINITY)}));
}
void lower_Clip(Lower& L) {
    o2g::ClipParams p;
    // Bounds known when the graph is built are the clamp's parameters; bounds computed from the input on the
    // device (a dB floor, max(x) - 80) clamp through broadcasting max and min.
    ggml_tensor* lo = L.has(1) && !L.in(1).host ? L.t(1) : nullptr;
    ggml_tensor* hi = L.has(2) && !L.in(2).host ? L.t(2) : nullptr;
    if (L.has(1) && !lo) p.min = L.param_float(1, "min");
    if (L.has(2) && !hi) p.max = L.param_float(2, "max");
    ggml_tensor* y = O2G_CALL(L, o2g::clip, L.t(0), p);
    if (lo) y = O2G_CALL(L, o2g::maximum, y, lo);
    if (hi) y = O2G_CALL(L, o2g::minimum, y, hi);
    out_same(L, y);
}
void host_Clip_6(Lower& L) {
    const HostTensor lo = HostTensor::from_f64(DType::FLOAT, {}, {L.node.get_float("min", -INFINITY)}),
                     hi = HostTensor::from_f64(DType::FLOAT, {}, {L.node.get_float("max", INFINITY)});
    O2G_HOST(L, 0, o2g::host_map, std::vector<HostArg>{L.hv(0), {&lo, nullptr}, {&hi, nullptr}},
             o2g::HostMapParams{o2g::HOST_CLIP, L.dtype(0)});
}
void host_Clip(Lower& L) { host_fn(L, o2g::HOST_CLIP, L.dtype(0)); }

void host_Neg(Lower& L) { host_fn(L, o2g::HOST_NEG, L.dtype(0)); }
void host_Abs(Lower& L) { host_fn(L, o2g::HOST_ABS, L.dtype(0)); }
void host_Sign(Lower& L) { host_fn(L, o2g::HOST_SIGN, L.dtype(0)); }
void host_Floor(Lower& L) { host_fn(L, o2g::HOST_FLOOR, L.dtype(0)); }
void host_Ceil(Lower& L) { host_fn(L, o2g::HOST_CEIL, L.dtype(0)); }
void host_Round(Lower& L) { host_fn(L, o2g::HOST_ROUND, L.dtype(0)); }
void host_Sqrt(Lower& L) { host_fn(L, o2g::HOST_SQRT, L.dtype(0)); }
void host_Reciprocal(Lower& L) { host_fn(L, o2g::HOST_RECIPROCAL, L.dtype(0)); }
void host_Exp(Lower& L) { host_fn(L, o2g::HOST_EXP, L.dtype(0)); }
void host_Log(Lower& L) { host_fn(L, o2g::HOST_LOG, L.dtype(0)); }
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

void host_Equal(Lower& L) { host_fn(L, o2g::HOST_EQUAL, DType::BOOL); }
void host_Less(Lower& L) { host_fn(L, o2g::HOST_LESS, DType::BOOL); }
void host_LessOrEqual(Lower& L) { host_fn(L, o2g::HOST_LESS_OR_EQUAL, DType::BOOL); }
void host_Greater(Lower& L) { host_fn(L, o2g::HOST_GREATER, DType::BOOL); }
void host_GreaterOrEqual(Lower& L) { host_fn(L, o2g::HOST_GREATER_OR_EQUAL, DType::BOOL); }
void host_And(Lower& L) { host_fn(L, o2g::HOST_AND, DType::BOOL); }
void host_Or(Lower& L) { host_fn(L, o2g::HOST_OR, DType::BOOL); }
void host_Xor(Lower& L) { host_fn(L, o2g::HOST_XOR, DType::BOOL); }
void host_Not(Lower& L) { host_fn(L, o2g::HOST_NOT, DType::BOOL); }
void host_BitShift(Lower& L) {
    bool right = L.node.get_string("direction", "") == "RIGHT";
    host_fn(L, right ? o2g::HOST_BITSHIFT_RIGHT : o2g::HOST_BITSHIFT_LEFT, L.dtype(0));
}
void host_BitwiseAnd(Lower& L) { host_fn(L, o2g::HOST_BITWISE_AND, L.dtype(0)); }
void host_BitwiseOr(Lower& L) { host_fn(L, o2g::HOST_BITWISE_OR, L.dtype(0)); }
void host_BitwiseXor(Lower& L) { host_fn(L, o2g::HOST_BITWISE_XOR, L.dtype(0)); }
void host_BitwiseNot(Lower& L) { host_fn(L, o2g::HOST_BITWISE_NOT, L.dtype(0)); }

// ---- Where: selection, exact on the device ----
void lower_Where(Lower& L) {
    Shape out = checked_bshape(L);
    L.out_shape(0, O2G_CALL(L, o2g::where, L.t(0), L.t(1), L.t(2)), L.dtype(1), out);
}
void host_Where(Lower& L) { O2G_HOST(L, 0, o2g::host_where, L.hv(0), L.hv(1), L.hv(2)); }

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

// Long: the table, one row per op.
const std::vector<OpDef>& math_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Add", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Add_1, .host = host_Add_1, .math = true},
        {.op = "Add", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Add, .host = host_Add, .math = true},
        {.op = "Sub", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Sub_1, .host = host_Sub_1, .math = true},
        {.op = "Sub", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Sub, .host = host_Sub, .math = true},
        {.op = "Mul", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Mul_1, .host = host_Mul_1, .math = true},
        {.op = "Mul", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Mul, .host = host_Mul, .math = true},
        {.op = "Div", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Div_1, .host = host_Div_1, .math = true},
        {.op = "Div", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Div, .host = host_Div, .math = true},
        {.op = "Pow", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Pow_1, .host = host_Pow_1, .math = true},
        {.op = "Pow", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Pow, .host = host_Pow, .math = true},
        {.op = "Mod", .since = 10, .accepts = "in=2 out=1", .ggml = lower_Mod, .host = host_Mod, .math = true},
        {.op = "Sum", .since = 1, .accepts = "in=1.. out=1", .ggml = lower_Sum, .host = host_Sum, .math = true},
        {.op = "Mean", .since = 1, .accepts = "in=1.. out=1", .ggml = lower_Mean, .host = host_Mean, .math = true},
        {.op = "Max", .since = 1, .accepts = "in=1.. out=1", .ggml = lower_Max, .host = host_Max, .math = true},
        {.op = "Min", .since = 1, .accepts = "in=1.. out=1", .ggml = lower_Min, .host = host_Min, .math = true},
        {.op = "Exp", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Exp, .host = host_Exp, .math = true},
        {.op = "Log", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Log, .host = host_Log, .math = true},
        {.op = "Sqrt", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Sqrt, .host = host_Sqrt, .math = true},
        {.op = "Abs", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Abs, .host = host_Abs, .math = true},
        {.op = "Neg", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Neg, .host = host_Neg, .math = true},
        {.op = "Floor", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Floor, .host = host_Floor, .math = true},
        {.op = "Ceil", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Ceil, .host = host_Ceil, .math = true},
        {.op = "Sin", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Sin, .math = true},
        {.op = "Cos", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Cos, .math = true},
        {.op = "Tan", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Tan, .math = true},
        {.op = "Asin", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Asin, .math = true},
        {.op = "Acos", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Acos, .math = true},
        {.op = "Atan", .since = 7, .accepts = "in=1 out=1", .ggml = lower_Atan, .math = true},
        {.op = "Sinh", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Sinh, .math = true},
        {.op = "Cosh", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Cosh, .math = true},
        {.op = "Asinh", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Asinh, .math = true},
        {.op = "Acosh", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Acosh, .math = true},
        {.op = "Atanh", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Atanh, .math = true},
        {.op = "Erf", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Erf, .math = true},
        {.op = "Reciprocal", .since = 1, .accepts = "in=1 out=1",
         .ggml = lower_Reciprocal, .host = host_Reciprocal, .math = true},
        {.op = "Round", .since = 11, .accepts = "in=1 out=1", .ggml = lower_Round, .host = host_Round, .math = true},
        {.op = "Sign", .since = 9, .accepts = "in=1 out=1", .ggml = lower_Sign, .host = host_Sign, .math = true},
        {.op = "Clip", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Clip_6, .host = host_Clip_6, .math = true},
        {.op = "Clip", .since = 11, .accepts = "in=1..3 out=1", .ggml = lower_Clip, .host = host_Clip, .math = true},
        {.op = "onnx2ggml.ScaleBias", .since = 1, .ggml = lower_ScaleBias, .math = true},  // fuse_scalar_affine
        {.op = "Identity", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Identity, .host = host_Identity},
        {.op = "IsNaN", .since = 9, .accepts = "in=1 out=1", .ggml = lower_IsNaN},
        {.op = "IsInf", .since = 10, .accepts = "in=1 out=1 t0=float", .ggml = lower_IsInf},
        {.op = "Not", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Not, .host = host_Not},
        {.op = "Equal", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Equal_1, .host = host_Equal_1},
        {.op = "Equal", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Equal, .host = host_Equal},
        {.op = "Less", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Less_1, .host = host_Less_1},
        {.op = "Less", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Less, .host = host_Less},
        {.op = "LessOrEqual", .since = 12, .accepts = "in=2 out=1",
         .ggml = lower_LessOrEqual, .host = host_LessOrEqual},
        {.op = "Greater", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Greater_1, .host = host_Greater_1},
        {.op = "Greater", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Greater, .host = host_Greater},
        {.op = "GreaterOrEqual", .since = 12, .accepts = "in=2 out=1",
         .ggml = lower_GreaterOrEqual, .host = host_GreaterOrEqual},
        {.op = "And", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_And_1, .host = host_And_1},
        {.op = "And", .since = 7, .accepts = "in=2 out=1", .ggml = lower_And, .host = host_And},
        {.op = "Or", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Or_1, .host = host_Or_1},
        {.op = "Or", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Or, .host = host_Or},
        {.op = "Xor", .since = 1, .accepts = "in=2 out=1 @axis:i~r0 @broadcast:i",
         .ggml = lower_Xor_1, .host = host_Xor_1},
        {.op = "Xor", .since = 7, .accepts = "in=2 out=1", .ggml = lower_Xor, .host = host_Xor},
        {.op = "BitShift", .since = 11, .accepts = "in=2 out=1", .host = host_BitShift},
        {.op = "BitwiseAnd", .since = 18, .accepts = "in=2 out=1", .host = host_BitwiseAnd},
        {.op = "BitwiseOr", .since = 18, .accepts = "in=2 out=1", .host = host_BitwiseOr},
        {.op = "BitwiseXor", .since = 18, .accepts = "in=2 out=1", .host = host_BitwiseXor},
        {.op = "BitwiseNot", .since = 18, .accepts = "in=1 out=1", .host = host_BitwiseNot},
        {.op = "Where", .since = 9, .accepts = "in=3 out=1", .ggml = lower_Where, .host = host_Where},
    };
    return t;
}

}  // namespace onnx2ggml
