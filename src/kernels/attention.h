// Attention CPU kernels (ggml custom ops), for the op library's CPU paths (src/lib/attention.cpp).
#pragma once
#include "kernels/isa.h"
#include <vector>

#include "onnx2ggml/ops.h"

namespace o2g {

O2G_ISA_BEGIN
// softmax(scale * Q K^T + mask) V: Q [D, H, Tq, B], K [D, H, Tk, B], V [Dv, H, Tk, B] (contiguous F32) ->
// [Dv, Tq, H, B]. mask (may be null): F32 [Tk, Tq or 1, H or 1, B or 1], contiguous. zero_masked_rows: a query
// whose keys the mask all holds at -1e30 or below gives 0 (else it attends to every key).
ggml_tensor* attention_kernel(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, float scale,
                              ggml_tensor* mask = nullptr, bool zero_masked_rows = false);
O2G_ISA_END

struct LinAttnParams {
    int64_t B, T, Hq, Hkv, Dk, Dv;
    float scale;
    bool gating, delta;
    int i_state, i_decay, i_beta;  // src slots, -1 when absent
    bool decay_per_dim;            // decay last dim Hkv*Dk (else Hkv)
    bool beta_per_head;            // beta last dim Hkv (else 1)
};
// args: q, k, v, then the present ones of past state, decay, beta (contiguous F32). Result: the output
// [B, T, Hq, Dv] followed by the final state [B, Hkv, Dk, Dv], in one 1-D tensor.
ggml_tensor* linear_attention_kernel(Ctx& ctx, const std::vector<ggml_tensor*>& args, const LinAttnParams& p);

struct RopeParams {
    int64_t B, S, H, D, rd, max_pos;
    bool heads_first, interleaved, has_pos;
};
// args: x, cos cache, sin cache[, position ids] (contiguous; x and caches F32). Result shaped like x.
ggml_tensor* rotary_kernel(Ctx& ctx, const std::vector<ggml_tensor*>& args, const RopeParams& p);

}  // namespace o2g
