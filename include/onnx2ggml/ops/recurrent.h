// Op library, Recurrent networks: RNN, GRU, LSTM.
// Included by onnx2ggml/ops.h; see its conventions.
//
// X * W^T for every step runs as one ggml matrix product; the recurrence runs as a ggml custom CPU kernel, one
// work item per (direction, batch), and writes every output into one tensor that recurrent_output takes apart.
#pragma once

namespace o2g {

// Activation functions (values of RecurrentParams::activations).
enum RecurrentAct : int { kActSigmoid, kActTanh, kActRelu, kActAffine, kActLeakyRelu, kActThresholdedRelu,
                          kActScaledTanh, kActHardSigmoid, kActElu, kActSoftsign, kActSoftplus };

struct RecurrentParams {
    int direction = 0;  // 0 forward, 1 reverse, 2 bidirectional
    int layout = 0;     // 0: X [S, B, I] ggml [I, B, S]; 1: X [B, S, I] ggml [I, S, B] (and states likewise)
    float clip = 0;     // <= 0: none
    // Per direction, the cell's functions in ONNX order (RNN 1, GRU 2, LSTM 3), with their alpha and beta.
    Ints activations{};
    std::vector<float> activation_alpha{}, activation_beta{};
    bool linear_before_reset = false;  // GRU
    bool input_forget = false;         // LSTM
    void fields(FieldWriter& f) const {
        f("direction", direction);
        f("layout", layout);
        f("clip", clip);
        f("activations", activations);
        f("activation_alpha", activation_alpha);
        f("activation_beta", activation_beta);
        f("linear_before_reset", linear_before_reset);
        f("input_forget", input_forget);
    }
};
// Each takes X, W [I, G*H, D], R [H, G*H, D] (G gates, D directions) and the optional (null) inputs: B [2*G*H, D],
// sequence_lens [B], initial_h (and for LSTM initial_c) like Y_h, P [3*H, D]. The result holds all outputs; take
// them with recurrent_output.
ggml_tensor* rnn(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b, ggml_tensor* sequence_lens,
                 ggml_tensor* initial_h, const RecurrentParams& p);
ggml_tensor* gru(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b, ggml_tensor* sequence_lens,
                 ggml_tensor* initial_h, const RecurrentParams& p);
ggml_tensor* lstm(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* r, ggml_tensor* b,
                  ggml_tensor* sequence_lens, ggml_tensor* initial_h, ggml_tensor* initial_c, ggml_tensor* peepholes,
                  const RecurrentParams& p);
// Output `output` (0 Y, 1 Y_h, 2 Y_c) of an rnn/gru/lstm result made with this layout: Y [H, B, D, S] (layout 0)
// or [H, D, S, B] (layout 1); Y_h and Y_c [H, B, D] or [H, D, B].
ggml_tensor* recurrent_output(Ctx& ctx, ggml_tensor* all, int output, int layout);

}  // namespace o2g
