// Op library, Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin, Softmax,
// LogSoftmax, Hardmax.
// Included by onnx2ggml/ops.h; see its conventions. Functions marked "CPU kernel" run as ggml custom ops, so only
// on the CPU backend.
#pragma once

namespace o2g {

struct ReduceParams {
    int rank = 4;          // the input's ONNX rank, which `axes` count from (at most 4)
    bool keepdims = true;  // false: reduced dims are dropped and the others move down
    void fields(FieldWriter& f) const { f("rank", rank); f("keepdims", keepdims); }
};
// Reductions over `axes`, ONNX axes as a model gives them (negative ones count from the end; empty: all axes):
// sum and mean with ggml; the others are CPU kernels (accumulating in double).
ggml_tensor* reduce_sum(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_mean(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_max(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_min(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_prod(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_l1(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_l2(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_log_sum(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_log_sum_exp(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);
ggml_tensor* reduce_sum_square(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p);

struct ArgParams {
    int axis = 0;                    // ggml dim
    bool keepdims = true;
    bool select_last_index = false;  // ties: the last index instead of the first
    void fields(FieldWriter& f) const {
        f("axis", axis);
        f("keepdims", keepdims);
        f("select_last_index", select_last_index);
    }
};
// Index (I32) of the largest/smallest value along `axis` (CPU kernel).
ggml_tensor* argmax(Ctx& ctx, ggml_tensor* x, const ArgParams& p);
ggml_tensor* argmin(Ctx& ctx, ggml_tensor* x, const ArgParams& p);

struct SoftmaxParams {
    int axis = 0;          // ggml dim
    bool flatten = false;  // opset < 13: over ggml dims 0..axis taken together (the input coerced to 2-D)
    void fields(FieldWriter& f) const { f("axis", axis); f("flatten", flatten); }
};
// Softmax along `axis` (ggml_soft_max; other axes are moved innermost and back).
ggml_tensor* softmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p);
// x - log(sum(exp(x))) along `axis`, in double (CPU kernel).
ggml_tensor* log_softmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p);
// 1 at the first largest value along `axis`, 0 elsewhere (CPU kernel).
ggml_tensor* hardmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p);

}  // namespace o2g
