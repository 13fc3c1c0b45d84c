// Reduction ONNX ops, opsets 1-23: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax/ArgMin,
// Softmax, LogSoftmax, Hardmax.
#include <algorithm>

#include "kernels/custom.h"
#include "ops/host.h"
#include "ops/op.h"

namespace onnx2ggml {

using o2g::ReduceK;

namespace {

struct ReduceSpec { std::vector<bool> red; bool keep; bool noop; };

// The axes: the attribute, or input 1 from opset 13 (ReduceSum) or 18 (the others); compile writes the input as
// an expression when it can.
// An axes input with no elements is known from its shape alone (noop_with_empty_axes decides on it).
Sym axes_input(Lower& L) { return L.has(1) && shape_numel(L.shape(1)) != 0 ? L.sym(1) : Sym{}; }

ReduceSpec reduce_spec(Lower& L, const std::vector<int64_t>& axes) {
    int r = L.rank(0);
    ReduceSpec s;
    s.keep = L.node.get_int("keepdims", 1) != 0;
    s.noop = axes.empty() && L.node.get_int("noop_with_empty_axes", 0) != 0;
    s.red.assign(size_t(r), axes.empty());
    for (auto a : axes) {
        int n = norm_axis(L, a, r);
        if (r > 0) s.red[size_t(n)] = true;  // a scalar's axis 0 names nothing to reduce
    }
    return s;
}

Shape reduced_shape(const Shape& in, const ReduceSpec& s) {
    Shape o;
    for (size_t i = 0; i < in.size(); i++) {
        if (!s.red[i]) o.push_back(in[i]);
        else if (s.keep) o.push_back(1);
    }
    return o;
}

ReduceK kind_of(const std::string& op) {
    if (op == "ReduceSum") return ReduceK::Sum;
    if (op == "ReduceMean") return ReduceK::Mean;
    if (op == "ReduceMax") return ReduceK::Max;
    if (op == "ReduceMin") return ReduceK::Min;
    if (op == "ReduceProd") return ReduceK::Prod;
    if (op == "ReduceL1") return ReduceK::L1;
    if (op == "ReduceL2") return ReduceK::L2;
    if (op == "ReduceLogSum") return ReduceK::LogSum;
    if (op == "ReduceLogSumExp") return ReduceK::LogSumExp;
    return ReduceK::SumSquare;
}

using ReduceFn = ggml_tensor* (*)(o2g::Ctx&, ggml_tensor*, const o2g::Ints&, const o2g::ReduceParams&);

// The op-library function of a Reduce* op, and its name for the recorder.
ReduceFn reduce_fn(ReduceK k, const char*& name) {
    switch (k) {
        case ReduceK::Sum: name = "o2g::reduce_sum"; return o2g::reduce_sum;
        case ReduceK::Mean: name = "o2g::reduce_mean"; return o2g::reduce_mean;
        case ReduceK::Max: name = "o2g::reduce_max"; return o2g::reduce_max;
        case ReduceK::Min: name = "o2g::reduce_min"; return o2g::reduce_min;
        case ReduceK::Prod: name = "o2g::reduce_prod"; return o2g::reduce_prod;
        case ReduceK::L1: name = "o2g::reduce_l1"; return o2g::reduce_l1;
        case ReduceK::L2: name = "o2g::reduce_l2"; return o2g::reduce_l2;
        case ReduceK::LogSum: name = "o2g::reduce_log_sum"; return o2g::reduce_log_sum;
        case ReduceK::LogSumExp: name = "o2g::reduce_log_sum_exp"; return o2g::reduce_log_sum_exp;
        default: name = "o2g::reduce_sum_square"; return o2g::reduce_sum_square;
    }
}

// The ONNX axis along which the softmax family works, as params. Before opset 13 the input is coerced to 2-D at
// `axis` (default 1) and the softmax runs over everything from it; from 13 it runs along `axis` (default -1).
o2g::SoftmaxParams softmax_params(Lower& L, bool coerce_2d) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", coerce_2d ? 1 : -1), r);
    o2g::SoftmaxParams p;
    p.axis = gdim(r, axis);
    p.flatten = coerce_2d;
    if (r > 4) {  // folded dims: only the innermost three, or all of them when flattening from axis 0
        if (p.flatten && axis == 0) p.axis = 3;
        else if (p.axis > 2 || (!p.flatten && p.axis != 0)) L.error("axis " + std::to_string(axis) + " of a rank-" +
                                                                    std::to_string(r) + " input (ggml holds 4 dims)");
    }
    return p;
}

// Output of a rank > 4 reduction (computed with keepdims, so contiguous) reshaped to the ONNX shape's folded ne.
void out_folded(Lower& L, ggml_tensor* y, DType dt, const Shape& os) {
    int64_t ne[4];
    shape_to_ne(os, ne);
    if (!(y->ne[0] == ne[0] && y->ne[1] == ne[1] && y->ne[2] == ne[2] && y->ne[3] == ne[3]))
        y = O2G_CALL(L, ggml_reshape_4d, y, ne[0], ne[1], ne[2], ne[3]);
    L.out_shape(0, y, dt, os);
}

o2g::HostReduceParams host_reduce_params(Lower& L) {
    static const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                                "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};  // HostReduce order
    o2g::HostReduceParams p;
    for (int k = 0; k < 10; k++)
        if (L.node.op_type == ops[k]) p.kind = k;
    p.keepdims = L.node.get_int("keepdims", 1) != 0;
    p.noop_with_empty_axes = L.node.get_int("noop_with_empty_axes", 0) != 0;
    return p;
}

}  // namespace

static void reduce_out(Lower& L, const Sym& axes) {
    ReduceSpec s = reduce_spec(L, axes.v);
    const Shape& in = L.shape(0);
    if (s.noop) {  // identity; a float device tensor goes through L.t so that compile sees it
        if (L.in(0).t && L.in(0).t->type == GGML_TYPE_F32) return L.out_shape(0, L.t(0), L.dtype(0), in);
        return L.pass(0, 0);
    }
    // An empty input has no data for ggml to hold, and the result does not depend on any: the reduction's identity
    // at each output, from the input's shape.
    if (shape_numel(in) == 0)
        return O2G_HOST(L, 0, o2g::host_reduce_empty, L.shape_sym(0), L.dtype(0), axes, host_reduce_params(L));
    ReduceK k = kind_of(L.node.op_type);
    Shape os = reduced_shape(in, s);
    int r = int(in.size());
    const char* name;
    ReduceFn fn = reduce_fn(k, name);
    o2g::ReduceParams p;
    p.keepdims = s.keep;
    if (r <= 4) {
        p.rank = r;
        return L.out(0, L.call(name, fn, L.t(0), axes, p), L.dtype(0), int(os.size()));
    }
    // Rank > 4 (folded dims): the reduced axes must be all, or within ggml's three unfolded dims, here given as
    // axes of the rank-4 folded tensor (a literal, so compile must see the axes read).
    if (axes.src) (void)L.ints(1);
    Sym folded;  // empty: all
    bool all = std::all_of(s.red.begin(), s.red.end(), [](bool b) { return b; }), inner = true;
    for (int a = 0; a < r; a++) inner &= !s.red[size_t(a)] || gdim(r, a) <= 2;
    if (!all && !inner) {
        // Reduced axes among the folded ones: move them last, then reduce [kept, reduced] along its last axis.
        std::vector<int64_t> perm;
        Shape moved;
        int64_t kept = 1, red = 1;
        for (int pass = 0; pass < 2; pass++)
            for (int a = 0; a < r; a++)
                if (s.red[size_t(a)] == (pass == 1)) {
                    perm.push_back(a);
                    (pass ? red : kept) *= in[size_t(a)];
                }
        ggml_tensor* x = O2G_CALL(L, o2g::transpose_nd, L.t(0), L.shape_sym(0), o2g::TransposeNdParams{perm});
        x = O2G_CALL(L, o2g::reshape, x, Sym{{kept, red}, nullptr}, o2g::ReshapeParams{r, false});
        p.rank = 2;
        p.keepdims = false;
        const Sym last{{1}, nullptr};
        ggml_tensor* y = L.call(name, fn, x, last, p);
        return out_folded(L, y, L.dtype(0), os);
    }
    if (!all)
        for (int a = r - 1; a >= 0; a--)
            if (s.red[size_t(a)]) folded.v.push_back(3 - gdim(r, a));
    p.rank = 4;
    p.keepdims = true;
    const Sym& fx = folded;
    out_folded(L, L.call(name, fn, L.t(0), fx, p), L.dtype(0), os);
}

static void reduce_host(Lower& L, const Sym& axes) {
    O2G_HOST(L, 0, o2g::host_reduce, L.hv(0), axes, host_reduce_params(L));
}
void lower_Reduce_1(Lower& L) { reduce_out(L, axes_attr(L)); }
void lower_Reduce(Lower& L) { reduce_out(L, axes_input(L)); }
void host_Reduce_1(Lower& L) { reduce_host(L, axes_attr(L)); }
void host_Reduce(Lower& L) { reduce_host(L, axes_input(L)); }

static void arg_common(Lower& L, bool is_max, bool host) {
    const Shape& in = L.shape(0);
    int r = int(in.size());
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    if (r > 0 && in[size_t(axis)] == 0) L.error("arg-reduction over an empty axis (it has no index to return)");
    bool keep = L.node.get_int("keepdims", 1) != 0, last = L.node.get_int("select_last_index", 0) != 0;
    Shape os;
    for (int i = 0; i < r; i++)
        if (i != axis) os.push_back(in[size_t(i)]);
        else if (keep) os.push_back(1);
    if (!host) {
        o2g::ArgParams p;
        p.axis = gdim(r, axis);
        p.keepdims = keep || r > 4;
        p.select_last_index = last;
        if (r > 4 && p.axis > 2) L.error("arg-reduction over folded dims (rank > 4)");
        ggml_tensor* y = is_max ? O2G_CALL(L, o2g::argmax, L.t(0), p) : O2G_CALL(L, o2g::argmin, L.t(0), p);
        if (r > 4) return out_folded(L, y, DType::INT64, os);
        return L.out(0, y, DType::INT64, int(os.size()));
    }
    O2G_HOST(L, 0, o2g::host_arg, L.hv(0), o2g::HostArgParams{axis, keep, last, is_max});
}
void lower_ArgMax(Lower& L) { arg_common(L, true, false); }
void lower_ArgMin(Lower& L) { arg_common(L, false, false); }
void host_ArgMax(Lower& L) { arg_common(L, true, true); }
void host_ArgMin(Lower& L) { arg_common(L, false, true); }

// ---- Softmax family ----
void lower_Softmax_1(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::softmax, L.t(0), softmax_params(L, true)), L.dtype(0), L.shape(0));
}
void lower_Softmax(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::softmax, L.t(0), softmax_params(L, false)), L.dtype(0), L.shape(0));
}
void lower_LogSoftmax_1(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::log_softmax, L.t(0), softmax_params(L, true)), L.dtype(0), L.shape(0));
}
void lower_LogSoftmax(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::log_softmax, L.t(0), softmax_params(L, false)), L.dtype(0), L.shape(0));
}
void lower_Hardmax_1(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::hardmax, L.t(0), softmax_params(L, true)), L.dtype(0), L.shape(0));
}
void lower_Hardmax(Lower& L) {
    L.out_shape(0, O2G_CALL(L, o2g::hardmax, L.t(0), softmax_params(L, false)), L.dtype(0), L.shape(0));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& reduction_ops() {
    static const std::vector<OpDef> t = {
        {.op = "Hardmax", .since = 1, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_Hardmax_1, .math = true},
        {.op = "Hardmax", .since = 13, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_Hardmax, .math = true},
        {.op = "Softmax", .since = 1, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_Softmax_1, .math = true},
        {.op = "Softmax", .since = 13, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_Softmax, .math = true},
        {.op = "LogSoftmax", .since = 1, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_LogSoftmax_1, .math = true},
        {.op = "LogSoftmax", .since = 13, .accepts = "in=1 out=1 @axis:i~r0", .ggml = lower_LogSoftmax, .math = true},
        {.op = "ReduceSum", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceSum", .since = 13, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMean", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceMean", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMax", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceMax", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceMin", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceMin", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceProd", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceProd", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceL1", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceL1", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceL2", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceL2", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceLogSum", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceLogSum", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceLogSumExp", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceLogSumExp", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ReduceSumSquare", .since = 1, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_Reduce_1, .host = host_Reduce_1, .math = true},
        {.op = "ReduceSumSquare", .since = 18, .accepts = "in=1..2 out=1",
         .ggml = lower_Reduce, .host = host_Reduce, .host_inputs = {1}, .math = true},
        {.op = "ArgMax", .since = 1, .accepts = "in=1 out=1 r0>=1 @axis:i~r0",
         .ggml = lower_ArgMax, .host = host_ArgMax},
        {.op = "ArgMin", .since = 1, .accepts = "in=1 out=1 r0>=1 @axis:i~r0",
         .ggml = lower_ArgMin, .host = host_ArgMin},
    };
    return t;
}

}  // namespace onnx2ggml
