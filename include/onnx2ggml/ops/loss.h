// Op library, Losses: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
// Included by onnx2ggml/ops.h; see its conventions.
//
// Targets are host integers (the loss is a masked sum built from them); SoftmaxCrossEntropyLoss is
// negative_log_likelihood_loss of softmax_cross_entropy_log_prob.
#pragma once

namespace o2g {

struct NegativeLogLikelihoodLossParams {
    int class_dim = 0;  // ggml dim of the classes (ONNX axis 1); the batch is the dim above, the rest below
    int reduction = 1;  // 0 none, 1 mean, 2 sum
    bool has_ignore_index = false;
    int64_t ignore_index = 0;
    std::vector<float> weight{};   // per class; empty: all 1
    bool ignored_in_mean = false;  // the mean divides by every target, ignored ones too (onnx.reference's NLL
                                   // with ignore_index -1 and no weight; onnxruntime leaves them out)
    void fields(FieldWriter& f) const {
        f("class_dim", class_dim);
        f("reduction", reduction);
        f("has_ignore_index", has_ignore_index);
        f("ignore_index", ignore_index);
        f("weight", weight);
        f("ignored_in_mean", ignored_in_mean);
    }
};
// Loss of log-probabilities `input` [d..., C, N] at `target` (N * prod(d) class indices): [d..., N] for
// reduction none, else a scalar.
ggml_tensor* negative_log_likelihood_loss(Ctx& ctx, ggml_tensor* input, const Ints& target,
                                          const NegativeLogLikelihoodLossParams& p);
// Log-softmax of scores over the classes at ggml dim class_dim (scores' shape).
ggml_tensor* softmax_cross_entropy_log_prob(Ctx& ctx, ggml_tensor* scores, int class_dim);

}  // namespace o2g
