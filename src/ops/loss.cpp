// Loss ONNX ops: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss (12, 13, 22).
#include "ops/fold.h"
#include "ops/host.h"

namespace onnx2ggml {

namespace {

// Params for input 0 [N, C, d...] with target input 1 and weight input 2; x is input 0 as the library takes it
// (rank > 4 viewed as [N, C, D]).
o2g::NegativeLogLikelihoodLossParams loss_params(Lower& L, bool nll, ggml_tensor*& x) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t N = xs[0], C = xs[1], D = dims_prod(xs, 2, xs.size());
    if (shape_numel(L.shape(1)) != N * D) L.error("target shape does not match the input");
    o2g::NegativeLogLikelihoodLossParams p;
    std::string red = L.node.get_string("reduction", "mean");
    if (red == "none") p.reduction = 0;
    else if (red == "mean") p.reduction = 1;
    else if (red == "sum") p.reduction = 2;
    else L.error("unknown reduction '" + red + "'");
    p.has_ignore_index = L.node.has("ignore_index");
    p.ignore_index = L.node.get_int("ignore_index", 0);
    if (L.has(2)) {
        p.weight = L.param_floats(2, "weight");
        if (int64_t(p.weight.size()) != C) L.error("weight must have C elements");
    }
    // The ONNX reference's NLL divides the mean by every target when ignore_index is -1 and there is no weight.
    p.ignored_in_mean = nll && !L.has(2) && p.has_ignore_index && p.ignore_index == -1;
    p.class_dim = r > 4 ? 1 : r - 2;
    x = L.t(0);
    if (r > 4) x = reshape_ne(L, x, {N, C, D});
    return p;
}

void out_loss(Lower& L, ggml_tensor* y, const o2g::NegativeLogLikelihoodLossParams& p) {
    if (p.reduction == 0) {
        const Shape& ts = L.shape(1);
        L.out_shape(0, reshape_ne(L, y, ts), L.dtype(0), ts);
    } else {
        L.out(0, y, L.dtype(0), 0);
    }
}

}  // namespace

void lower_NegativeLogLikelihoodLoss(Lower& L) {
    ggml_tensor* x;
    auto p = loss_params(L, true, x);
    const Sym target = L.sym(1);
    out_loss(L, O2G_CALL(L, o2g::negative_log_likelihood_loss, x, target, p), p);
}

void lower_SoftmaxCrossEntropyLoss(Lower& L) {
    ggml_tensor* x;
    auto p = loss_params(L, false, x);
    const Sym target = L.sym(1);
    ggml_tensor* lp = O2G_CALL(L, o2g::softmax_cross_entropy_log_prob, x, p.class_dim);
    out_loss(L, O2G_CALL(L, o2g::negative_log_likelihood_loss, lp, target, p), p);
    if (wanted_out(L, 1)) L.out_shape(1, reshape_ne(L, lp, L.shape(0)), L.dtype(0), L.shape(0));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& loss_ops() {
    static const std::vector<OpDef> t = {
        {.op = "NegativeLogLikelihoodLoss", .since = 12, .accepts = "in=2..3 out=1 r0>=2",
         .ggml = lower_NegativeLogLikelihoodLoss, .host_inputs = {1,2}, .math = true},
        {.op = "SoftmaxCrossEntropyLoss", .since = 12, .accepts = "in=2..3 out=1..2 r0>=2",
         .ggml = lower_SoftmaxCrossEntropyLoss, .host_inputs = {1,2}, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
