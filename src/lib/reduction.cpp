// Op library: reductions, arg-reductions, softmax family and cumulative sum (see include/onnx2ggml/ops/reduction.h).
#include "kernels/custom.h"
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

void check_reduce_dim(int64_t d, const char* what) {
    if (d < 0 || d > 3) throw OpError(std::string(what) + " " + std::to_string(d) + " is not a ggml dim (0..3)");
}

// The ggml dim of ONNX axis `a` of a rank-`rank` tensor (negative: from the end).
int ggml_dim(int64_t a, int rank) {
    if (rank < 0 || rank > 4) throw OpError("rank " + std::to_string(rank) + " (ggml holds at most 4 dims)");
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= (rank > 0 ? rank : 1))
        throw OpError("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    return rank > 0 ? rank - 1 - int(n) : 0;
}

// Which ggml dims ONNX `axes` name (empty: all).
void reduced_dims(const Ints& axes, int rank, bool red[4]) {
    for (int i = 0; i < 4; i++) red[i] = axes.empty();
    for (int64_t a : axes) red[ggml_dim(a, rank)] = true;
}

// Moves the reduced dims innermost (keeping their order, then the others') and flattens them into ggml rows:
// [R, K] for R reduced and K kept elements.
ggml_tensor* to_rows(Ctx& ctx, ggml_tensor* x, const bool red[4]) {
    int order[4], n = 0;
    for (int i = 0; i < 4; i++)
        if (red[i]) order[n++] = i;
    int64_t R = 1;
    for (int i = 0; i < n; i++) R *= x->ne[order[i]];
    for (int i = 0; i < 4; i++)
        if (!red[i]) order[n++] = i;
    bool id = true;
    for (int i = 0; i < 4; i++) id &= order[i] == i;
    if (!id) {
        int g[4];
        for (int i = 0; i < 4; i++) g[order[i]] = i;
        x = ggml_cont(ctx, ggml_permute(ctx, x, g[0], g[1], g[2], g[3]));
    }
    return ggml_reshape_2d(ctx, cont(ctx, x), R, ggml_nelements(x) / (R ? R : 1));
}

// y ([1, K]) reshaped to x's ne with the reduced dims made 1 (keepdims) or dropped.
ggml_tensor* from_rows(Ctx& ctx, ggml_tensor* y, const ggml_tensor* x, const bool red[4], bool keepdims) {
    int64_t ne[4] = {1, 1, 1, 1};
    for (int i = 0, j = 0; i < 4; i++) {
        if (!red[i]) ne[keepdims ? i : j++] = x->ne[i];
    }
    if (y->ne[0] == ne[0] && y->ne[1] == ne[1] && y->ne[2] == ne[2] && y->ne[3] == ne[3]) return y;
    return ggml_reshape_4d(ctx, cont(ctx, y), ne[0], ne[1], ne[2], ne[3]);
}

ggml_tensor* reduce(Ctx& ctx, ggml_tensor* x, ReduceK k, const Ints& axes, const ReduceParams& p) {
    bool red[4];
    reduced_dims(axes, p.rank, red);
    ggml_tensor* rows = to_rows(ctx, x, red);
    ggml_tensor* y = k == ReduceK::Sum ? ggml_sum_rows(ctx, rows) : k == ReduceK::Mean ? ggml_mean(ctx, rows)
                                                                                      : custom_rows(ctx, rows, k);
    return from_rows(ctx, y, x, red, p.keepdims);
}

ggml_tensor* arg(Ctx& ctx, ggml_tensor* x, bool is_max, const ArgParams& p) {
    check_reduce_dim(p.axis, "axis");
    bool red[4] = {false, false, false, false};
    red[p.axis] = true;
    bool last = p.select_last_index;
    ReduceK k = is_max ? (last ? ReduceK::ArgMaxLast : ReduceK::ArgMax) : (last ? ReduceK::ArgMinLast : ReduceK::ArgMin);
    return from_rows(ctx, custom_rows(ctx, to_rows(ctx, x, red), k), x, red, p.keepdims);
}

// ggml_permute arguments moving dim `axis` to 0 (the others keep their order), and back.
void to_front(int axis, int g[4]) {
    for (int i = 0; i < 4; i++) g[i] = i < axis ? i + 1 : i;
    g[axis] = 0;
}
void from_front(int axis, int g[4]) {
    for (int i = 0; i < 4; i++) g[i] = i == 0 ? axis : i <= axis ? i - 1 : i;
}

using RowFn = ggml_tensor* (*)(Ctx&, ggml_tensor*);

// Applies a row function (along ggml dim 0) along `axis`, or over dims 0..axis together when flattening.
ggml_tensor* along(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p, RowFn fn) {
    check_reduce_dim(p.axis, "axis");
    if (p.flatten) {
        int64_t inner = 1;
        for (int i = 0; i <= p.axis; i++) inner *= x->ne[i];
        ggml_tensor* v = ggml_reshape_2d(ctx, cont(ctx, x), inner, ggml_nelements(x) / (inner ? inner : 1));
        ggml_tensor* y = fn(ctx, v);
        if (same_ne(y, x)) return y;
        return ggml_reshape_4d(ctx, cont(ctx, y), x->ne[0], x->ne[1], x->ne[2], x->ne[3]);
    }
    if (p.axis == 0) return fn(ctx, x);
    int g[4], gi[4];
    to_front(p.axis, g);
    from_front(p.axis, gi);
    ggml_tensor* y = fn(ctx, ggml_cont(ctx, ggml_permute(ctx, x, g[0], g[1], g[2], g[3])));
    return ggml_cont(ctx, ggml_permute(ctx, y, gi[0], gi[1], gi[2], gi[3]));
}

ggml_tensor* softmax_rows(Ctx& ctx, ggml_tensor* x) { return ggml_soft_max(ctx, cont(ctx, x)); }
ggml_tensor* log_softmax_rows(Ctx& ctx, ggml_tensor* x) { return custom_rows(ctx, x, ReduceK::LogSoftmax); }
ggml_tensor* hardmax_rows(Ctx& ctx, ggml_tensor* x) {
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, cont(ctx, x), GGML_TYPE_F32);
    return custom_rows(ctx, x, ReduceK::Hardmax);
}

}  // namespace

ggml_tensor* reduce_sum(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::Sum, axes, p);
}
ggml_tensor* reduce_mean(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::Mean, axes, p);
}
ggml_tensor* reduce_max(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::Max, axes, p);
}
ggml_tensor* reduce_min(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::Min, axes, p);
}
ggml_tensor* reduce_prod(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::Prod, axes, p);
}
ggml_tensor* reduce_l1(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::L1, axes, p);
}
ggml_tensor* reduce_l2(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::L2, axes, p);
}
ggml_tensor* reduce_log_sum(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::LogSum, axes, p);
}
ggml_tensor* reduce_log_sum_exp(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::LogSumExp, axes, p);
}
ggml_tensor* reduce_sum_square(Ctx& ctx, ggml_tensor* x, const Ints& axes, const ReduceParams& p) {
    return reduce(ctx, x, ReduceK::SumSquare, axes, p);
}

ggml_tensor* argmax(Ctx& ctx, ggml_tensor* x, const ArgParams& p) { return arg(ctx, x, true, p); }
ggml_tensor* argmin(Ctx& ctx, ggml_tensor* x, const ArgParams& p) { return arg(ctx, x, false, p); }

ggml_tensor* softmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p) { return along(ctx, x, p, softmax_rows); }
ggml_tensor* log_softmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p) {
    return along(ctx, x, p, log_softmax_rows);
}
ggml_tensor* hardmax(Ctx& ctx, ggml_tensor* x, const SoftmaxParams& p) { return along(ctx, x, p, hardmax_rows); }

}  // namespace o2g
