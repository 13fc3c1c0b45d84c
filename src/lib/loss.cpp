// Op library: losses (see include/onnx2ggml/ops/loss.h).
#include <string>
#include <vector>

#include "kernels/custom.h"

namespace o2g {

namespace {

struct Classes { int64_t D, C, N; };

Classes classes_of(const ggml_tensor* x, int cd) {
    if (cd < 0 || cd > 2) throw OpError("class_dim " + std::to_string(cd) + " must be 0, 1 or 2 (the batch is the dim above)");
    Classes c{1, x->ne[cd], x->ne[cd + 1]};
    for (int i = 0; i < cd; i++) c.D *= x->ne[i];
    for (int i = cd + 2; i < 4; i++)
        if (x->ne[i] != 1) throw OpError("ne[" + std::to_string(i) + "] = " + std::to_string(x->ne[i]) + " above the batch dim");
    return c;
}

// [d..., C, N] -> [C, D, N].
ggml_tensor* classes_inner(Ctx& ctx, ggml_tensor* x, const Classes& c) {
    x = ggml_reshape_3d(ctx, cont(ctx, x), c.D, c.C, c.N);
    return ggml_cont(ctx, ggml_permute(ctx, x, 1, 0, 2, 3));
}

}  // namespace

ggml_tensor* negative_log_likelihood_loss(Ctx& ctx, ggml_tensor* input, const Ints& target,
                                          const NegativeLogLikelihoodLossParams& p) {
    Classes c = classes_of(input, p.class_dim);
    if (int64_t(target.size()) != c.N * c.D)
        throw OpError("target has " + std::to_string(int64_t(target.size())) + " elements, not " + std::to_string(c.N * c.D));
    if (!p.weight.empty() && int64_t(p.weight.size()) != c.C) throw OpError("weight must have " + std::to_string(c.C) + " elements");
    if (p.reduction < 0 || p.reduction > 2) throw OpError("reduction " + std::to_string(p.reduction) + " is not 0, 1 or 2");
    // The loss is sum(input * mask): the mask holds -weight[t] at each target t.
    std::vector<float> m(size_t(c.N * c.D * c.C), 0.0f);
    double denom = 0;
    for (int64_t k = 0; k < c.N * c.D; k++) {
        int64_t t = target[size_t(k)];
        if (p.has_ignore_index && t == p.ignore_index) continue;
        if (t < 0 || t >= c.C) throw OpError("target " + std::to_string(t) + " out of range [0, " + std::to_string(c.C) + ")");
        double wt = p.weight.empty() ? 1.0 : double(p.weight[size_t(t)]);
        m[size_t(k * c.C + t)] = float(-wt);
        denom += wt;
    }
    if (p.ignored_in_mean) denom = double(c.N * c.D);
    const int64_t mne[4] = {c.C, c.D, c.N, 1};
    ggml_tensor* lp = classes_inner(ctx, input, c);
    ggml_tensor* l = ggml_sum_rows(ctx, ggml_mul(ctx, lp, ctx.constant_f32(mne, m)));  // [1, D, N]
    if (p.reduction == 0) {
        int64_t ne[4] = {1, 1, 1, 1};  // input's ne without the class dim
        for (int i = 0, j = 0; i < 4; i++)
            if (i != p.class_dim) ne[j++] = input->ne[i];
        if (l->ne[0] == ne[0] && l->ne[1] == ne[1] && l->ne[2] == ne[2] && l->ne[3] == ne[3]) return l;
        return ggml_reshape_4d(ctx, l, ne[0], ne[1], ne[2], ne[3]);
    }
    ggml_tensor* s = ggml_sum(ctx, l);
    return p.reduction == 1 ? ggml_scale(ctx, s, float(1.0 / denom)) : s;
}

ggml_tensor* softmax_cross_entropy_log_prob(Ctx& ctx, ggml_tensor* scores, int class_dim) {
    Classes c = classes_of(scores, class_dim);
    ggml_tensor* lp = custom_rows(ctx, classes_inner(ctx, scores, c), ReduceK::LogSoftmax);  // [C, D, N]
    ggml_tensor* back = ggml_cont(ctx, ggml_permute(ctx, lp, 1, 0, 2, 3));                   // [D, C, N]
    if (same_ne(back, scores)) return back;
    return ggml_reshape_4d(ctx, back, scores->ne[0], scores->ne[1], scores->ne[2], scores->ne[3]);
}

}  // namespace o2g
