// Op library: CausalConvWithState (27), a depthwise causal 1-D convolution carrying its last k - 1 inputs as state
// (see include/onnx2ggml/ops/conv.h).
#include <string>
#include <vector>

#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

// [past | x] along time: [k - 1 + L, C, N] (x itself when k = 1).
ggml_tensor* causal_input(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* past) {
    const int64_t L = x->ne[0], C = x->ne[1], N = x->ne[2], K = w->ne[0];
    if (x->ne[3] != 1 || w->ne[1] != 1 || w->ne[2] != C || w->ne[3] != 1)
        throw OpError("weight must have ne [k, 1, " + std::to_string(C) + "] for input ne [" + std::to_string(L) +
                      ", " + std::to_string(C) + ", " + std::to_string(N) + "]");
    // (fuzz: an empty weight made the zero state's size negative)
    if (K < 1 || ggml_nelements(x) == 0) throw OpError("an empty input or weight");
    x = f32_cont(ctx, x);
    if (K == 1) {
        if (past && ggml_nelements(past) != 0) throw OpError("past_state must be empty when k = 1");
        return x;
    }
    ggml_tensor* pad;
    if (past) {
        if (past->ne[0] != K - 1 || past->ne[1] != C || past->ne[2] != N || past->ne[3] != 1)
            throw OpError("past_state must have ne [" + std::to_string(K - 1) + ", " + std::to_string(C) + ", " +
                          std::to_string(N) + "] (k - 1, channels, batch)");
        pad = f32_cont(ctx, past);
    } else {
        const int64_t ne[4] = {K - 1, C, N, 1};
        pad = ctx.constant_f32(ne, std::vector<float>(size_t((K - 1) * C * N), 0.0f));
    }
    return ggml_concat(ctx, pad, x, 0);
}

}  // namespace

ggml_tensor* causal_conv_with_state(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ggml_tensor* past,
                                    const CausalConvParams& p) {
    const int64_t K = w->ne[0], C = x->ne[1];
    ggml_tensor* padded = causal_input(ctx, x, w, past);
    ggml_tensor* wt = ggml_reshape_2d(ctx, f32_cont(ctx, w), K, C);
    ggml_tensor* y = ggml_ssm_conv(ctx, padded, wt);  // [C, L, N]
    if (bias) {
        if (ggml_nelements(bias) != C)
            throw OpError("bias has " + std::to_string(ggml_nelements(bias)) + " values for " + std::to_string(C) +
                          " channels");
        y = ggml_add(ctx, y, f32_cont(ctx, bias));
    }
    if (p.silu) y = ggml_silu(ctx, y);
    return ggml_cont(ctx, ggml_permute(ctx, y, 1, 0, 2, 3));  // [L, C, N]
}

ggml_tensor* causal_conv_state(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* past) {
    const int64_t K = w->ne[0], L = x->ne[0], C = x->ne[1], N = x->ne[2];
    if (K < 2) throw OpError("the state of a k = 1 causal convolution is empty, which ggml cannot hold");
    ggml_tensor* padded = causal_input(ctx, x, w, past);
    ggml_tensor* st = ggml_view_3d(ctx, padded, K - 1, C, N, padded->nb[1], padded->nb[2], size_t(L) * padded->nb[0]);
    return ggml_cont(ctx, st);
}

}  // namespace o2g
