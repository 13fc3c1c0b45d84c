// Exact elementwise and row kernels ggml lacks (erf, pow, comparisons, select, arg-reductions). They run as ggml
// custom ops, so only on the CPU backend.
#pragma once
#include <deque>
#include <mutex>

#include "onnx2ggml/ops.h"

namespace o2g {

// Thread ith's share [b, e) of n work items split evenly over nth threads (a ggml custom op's ith/nth).
struct WorkSpan { int64_t b, e; };
inline WorkSpan work_span(int64_t n, int ith, int nth) {
    int64_t per = (n + nth - 1) / (nth > 1 ? nth : 1);
    int64_t b = per * ith < n ? per * ith : n;
    return {b, b + per < n ? b + per : n};
}

// Custom-kernel parameters must outlive the graph; they are few and small, so they live for the process.
template <typename T>
T* keep_params(const T& v) {
    static std::mutex mu;
    static std::deque<T> store;
    std::lock_guard<std::mutex> lock(mu);
    store.push_back(v);
    return &store.back();
}

enum class UnaryK { Erf, Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh, Reciprocal, RoundEven,
                    IsNaN, IsInfPos, IsInfNeg, IsInf, Not, Sign, Softsign, Mish, Selu, Celu, ThresholdedRelu,
                    EluA, Softplus, PowScalar, Shrink };
enum class BinaryK { Pow, Max, Min, Equal, Less, LessEq, Greater, GreaterEq, And, Or, Xor, Mod, Fmod };
enum class ReduceK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare, ArgMax, ArgMin,
                     ArgMaxLast, ArgMinLast, LogSoftmax, Hardmax };

// Reduces each ggml row (ne0) to one value: [1, ne1, ne2, ne3] (I32 for Arg*). LogSoftmax and Hardmax keep the
// shape.
ggml_tensor* custom_rows(Ctx& ctx, ggml_tensor* x, ReduceK k);
// Elementwise ops as our CPU kernels (lib/portable.h's custom_unary/binary/where choose them or ggml ops). Operands
// broadcast to each other first (numpy rules in ggml dims).
ggml_tensor* cpu_unary(Ctx& ctx, ggml_tensor* x, UnaryK k, float p0 = 0, float p1 = 0);
ggml_tensor* cpu_binary(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, BinaryK k);
ggml_tensor* cpu_where(Ctx& ctx, ggml_tensor* c, ggml_tensor* a, ggml_tensor* b);

}  // namespace o2g
