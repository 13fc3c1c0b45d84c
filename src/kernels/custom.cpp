// Exact elementwise and row kernels ggml lacks (erf, pow, comparisons, select, arg-reductions), as ggml custom ops.
#include "kernels/custom.h"

#include <cmath>
#include <deque>
#include <mutex>

namespace o2g {

namespace {

struct UnaryParams { UnaryK k; float p0, p1; };
struct BinaryParams { BinaryK k; };


float apply_unary(UnaryK k, float x, float p0, float p1) {
    switch (k) {
        case UnaryK::Erf: return std::erf(x);
        case UnaryK::Tan: return std::tan(x);
        case UnaryK::Asin: return std::asin(x);
        case UnaryK::Acos: return std::acos(x);
        case UnaryK::Atan: return std::atan(x);
        case UnaryK::Sinh: return std::sinh(x);
        case UnaryK::Cosh: return std::cosh(x);
        case UnaryK::Asinh: return std::asinh(x);
        case UnaryK::Acosh: return std::acosh(x);
        case UnaryK::Atanh: return std::atanh(x);
        case UnaryK::Reciprocal: return 1.0f / x;
        case UnaryK::RoundEven: return std::nearbyint(x);
        case UnaryK::IsNaN: return std::isnan(x) ? 1.f : 0.f;
        case UnaryK::IsInfPos: return std::isinf(x) && x > 0 ? 1.f : 0.f;
        case UnaryK::IsInfNeg: return std::isinf(x) && x < 0 ? 1.f : 0.f;
        case UnaryK::IsInf: return std::isinf(x) ? 1.f : 0.f;
        case UnaryK::Not: return x == 0 ? 1.f : 0.f;
        case UnaryK::Sign: return x > 0 ? 1.f : x < 0 ? -1.f : 0.f;
        case UnaryK::Softsign: return x / (1.0f + std::fabs(x));
        case UnaryK::Mish: return float(double(x) * std::tanh(std::log1p(std::exp(double(x)))));
        case UnaryK::Selu: return x > 0 ? p1 * x : p1 * (p0 * std::exp(x) - p0);
        case UnaryK::Celu: return std::max(0.f, x) + std::min(0.f, p0 * std::expm1(x / p0));
        case UnaryK::ThresholdedRelu: return x > p0 ? x : 0.f;
        case UnaryK::EluA: return x >= 0 ? x : p0 * std::expm1(x);
        case UnaryK::Softplus: return float(std::log1p(std::exp(double(x))));
        case UnaryK::PowScalar: return std::pow(x, p0);
        case UnaryK::Shrink: return x < -p0 ? x + p1 : x > p0 ? x - p1 : 0.f;
    }
    return x;
}

float apply_binary(BinaryK k, float a, float b) {
    switch (k) {
        case BinaryK::Pow: return std::pow(a, b);
        case BinaryK::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
        case BinaryK::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
        case BinaryK::Equal: return a == b;
        case BinaryK::Less: return a < b;
        case BinaryK::LessEq: return a <= b;
        case BinaryK::Greater: return a > b;
        case BinaryK::GreaterEq: return a >= b;
        case BinaryK::And: return (a != 0) && (b != 0);
        case BinaryK::Or: return (a != 0) || (b != 0);
        case BinaryK::Xor: return (a != 0) != (b != 0);
        case BinaryK::Fmod: return std::fmod(a, b);
        case BinaryK::Mod: {
            float r = std::fmod(a, b);
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
            return r;
        }
    }
    return a;
}

void range(const ggml_tensor* dst, int ith, int nth, int64_t& b, int64_t& e) {
    int64_t n = ggml_nelements(dst);
    int64_t per = (n + nth - 1) / nth;
    b = std::min(n, per * ith);
    e = std::min(n, b + per);
}

void unary_kernel(ggml_tensor* dst, const ggml_tensor* a, int ith, int nth, void* ud) {
    auto* p = static_cast<const UnaryParams*>(ud);
    int64_t b, e;
    range(dst, ith, nth, b, e);
    const float* x = static_cast<const float*>(a->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t i = b; i < e; i++) y[i] = apply_unary(p->k, x[i], p->p0, p->p1);
}

void binary_kernel(ggml_tensor* dst, const ggml_tensor* a, const ggml_tensor* bb, int ith, int nth, void* ud) {
    auto* p = static_cast<const BinaryParams*>(ud);
    int64_t b, e;
    range(dst, ith, nth, b, e);
    const float* x = static_cast<const float*>(a->data);
    const float* z = static_cast<const float*>(bb->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t i = b; i < e; i++) y[i] = apply_binary(p->k, x[i], z[i]);
}

void where_kernel(ggml_tensor* dst, const ggml_tensor* c, const ggml_tensor* a, const ggml_tensor* bb, int ith,
                  int nth, void*) {
    int64_t b, e;
    range(dst, ith, nth, b, e);
    const float* cc = static_cast<const float*>(c->data);
    const float* x = static_cast<const float*>(a->data);
    const float* z = static_cast<const float*>(bb->data);
    float* y = static_cast<float*>(dst->data);
    for (int64_t i = b; i < e; i++) y[i] = cc[i] != 0 ? x[i] : z[i];
}

struct RowParams { ReduceK k; };

void rows_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    ReduceK k = static_cast<const RowParams*>(ud)->k;
    const ggml_tensor* a = dst->src[0];
    int64_t n = a->ne[0], rows = ggml_nrows(a);
    int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        const float* x = static_cast<const float*>(a->data) + r * n;
        if (k == ReduceK::LogSoftmax) {
            float* y = static_cast<float*>(dst->data) + r * n;
            double m = -INFINITY, s = 0;
            for (int64_t i = 0; i < n; i++) m = std::max(m, double(x[i]));
            for (int64_t i = 0; i < n; i++) s += std::exp(double(x[i]) - m);
            double ls = std::log(s) + m;
            for (int64_t i = 0; i < n; i++) y[i] = float(double(x[i]) - ls);
            continue;
        }
        if (k == ReduceK::Hardmax) {
            float* y = static_cast<float*>(dst->data) + r * n;
            int64_t best = 0;
            for (int64_t i = 1; i < n; i++)
                if (x[i] > x[best]) best = i;
            for (int64_t i = 0; i < n; i++) y[i] = i == best ? 1.f : 0.f;
            continue;
        }
        double acc = 0;
        int64_t best = 0;
        switch (k) {
            case ReduceK::Max: acc = -INFINITY; for (int64_t i = 0; i < n; i++) acc = std::max(acc, double(x[i])); break;
            case ReduceK::Min: acc = INFINITY; for (int64_t i = 0; i < n; i++) acc = std::min(acc, double(x[i])); break;
            case ReduceK::Prod: acc = 1; for (int64_t i = 0; i < n; i++) acc *= x[i]; break;
            case ReduceK::L1: for (int64_t i = 0; i < n; i++) acc += std::fabs(double(x[i])); break;
            case ReduceK::L2: for (int64_t i = 0; i < n; i++) acc += double(x[i]) * x[i]; acc = std::sqrt(acc); break;
            case ReduceK::SumSquare: for (int64_t i = 0; i < n; i++) acc += double(x[i]) * x[i]; break;
            case ReduceK::LogSum: for (int64_t i = 0; i < n; i++) acc += x[i]; acc = std::log(acc); break;
            case ReduceK::LogSumExp: {
                double m = -INFINITY;
                for (int64_t i = 0; i < n; i++) m = std::max(m, double(x[i]));
                for (int64_t i = 0; i < n; i++) acc += std::exp(double(x[i]) - m);
                acc = std::isinf(m) ? m : std::log(acc) + m;
                break;
            }
            case ReduceK::ArgMax: case ReduceK::ArgMaxLast: case ReduceK::ArgMin: case ReduceK::ArgMinLast: {
                bool mx = k == ReduceK::ArgMax || k == ReduceK::ArgMaxLast;
                bool last = k == ReduceK::ArgMaxLast || k == ReduceK::ArgMinLast;
                for (int64_t i = 1; i < n; i++) {
                    bool better = mx ? (last ? x[i] >= x[best] : x[i] > x[best]) : (last ? x[i] <= x[best] : x[i] < x[best]);
                    if (better) best = i;
                }
                break;
            }
            case ReduceK::Mean: for (int64_t i = 0; i < n; i++) acc += x[i]; acc /= double(n); break;
            default: for (int64_t i = 0; i < n; i++) acc += x[i]; break;
        }
        if (dst->type == GGML_TYPE_I32) static_cast<int32_t*>(dst->data)[r] = int32_t(best);
        else static_cast<float*>(dst->data)[r] = float(acc);
    }
}

}  // namespace

ggml_tensor* custom_rows(Ctx& ctx, ggml_tensor* x, ReduceK k) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    bool arg = k == ReduceK::ArgMax || k == ReduceK::ArgMin || k == ReduceK::ArgMaxLast || k == ReduceK::ArgMinLast;
    int64_t ne0 = k == ReduceK::LogSoftmax || k == ReduceK::Hardmax ? x->ne[0] : 1;
    return ggml_custom_4d(ctx, arg ? GGML_TYPE_I32 : GGML_TYPE_F32, ne0, x->ne[1], x->ne[2], x->ne[3], args, 1,
                          rows_kernel, GGML_N_TASKS_MAX, keep_params(RowParams{k}));
}

ggml_tensor* cpu_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0, float p1) {
    return ggml_map_custom1(ctx, cont(ctx, x), unary_kernel, GGML_N_TASKS_MAX, keep_params(UnaryParams{k, p0, p1}));
}

ggml_tensor* cpu_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    return ggml_map_custom2(ctx, full_f32(ctx, a, ne), full_f32(ctx, b, ne), binary_kernel, GGML_N_TASKS_MAX,
                            keep_params(BinaryParams{k}));
}

ggml_tensor* cpu_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b) {
    int64_t ne[4];
    broadcast_ne(a, b, ne);
    broadcast_ne(c->ne, ne, ne);
    return ggml_map_custom3(ctx, full_f32(ctx, c, ne), full_f32(ctx, a, ne), full_f32(ctx, b, ne), where_kernel,
                            GGML_N_TASKS_MAX, nullptr);
}

}  // namespace o2g
