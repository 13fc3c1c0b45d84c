// Op library, Attention: fused attention (fuse_attention), Attention-23, LinearAttention, RotaryEmbedding.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
