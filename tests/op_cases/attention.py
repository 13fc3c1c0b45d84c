"""Attention cases: Attention-23 (4-D and 3-D, masks, grouped KV heads, past and present, scores output),
RotaryEmbedding-23, LinearAttention-27."""

import numpy as np

from op_case import R, V, W, case

q, k, v = R(2, 3, 4, 8), R(2, 3, 6, 8), R(2, 3, 6, 8)
case("Attention", q, k, v, opset=23)
case("Attention", q, k, v, is_causal=1, opset=23)
case("Attention", q, k, v, R(4, 6), scale=0.2, opset=23)  # float mask
mask = V(np.array([[1, 1, 0, 1, 1, 0]] * 4, dtype=bool))
case("Attention", q, k, v, mask, opset=23)
# softcap without a mask: with one, onnxruntime 1.23 adds the mask before the softcap, the spec after it
case("Attention", q, k, v, softcap=3.0, opset=23)
case("Attention", q, k, v, R(4, 3), opset=23)  # mask shorter than the keys: padded with -inf
case("Attention", R(2, 4, 4, 8), R(2, 2, 6, 8), R(2, 2, 6, 5), opset=23)  # grouped KV heads, Dv != D
# 3-D: heads packed in the last dim.
case("Attention", R(2, 4, 24), R(2, 6, 24), R(2, 6, 24), q_num_heads=3, kv_num_heads=3, opset=23)
case("Attention", R(2, 4, 24), R(2, 6, 8), R(2, 6, 8), q_num_heads=3, kv_num_heads=1, is_causal=1, opset=23)
# past_key / past_value and the present outputs, then the scores output at each stage.
past = [R(2, 3, 2, 8), R(2, 3, 2, 8)]
case("Attention", q, k, v, None, *past, outputs=3, opset=23)
case("Attention", R(2, 4, 24), R(2, 6, 24), R(2, 6, 24), None, *past, q_num_heads=3, kv_num_heads=3, is_causal=1,
     outputs=3, opset=23)
for mode in (0, 2, 3):
    case("Attention", q, k, v, R(4, 8), *past, qk_matmul_output_mode=mode, outputs=4, opset=23)
# mode 1 without a mask: onnxruntime 1.23 gives the masked scores, the node tests (onnx.reference) the unmasked ones
case("Attention", q, k, v, None, *past, qk_matmul_output_mode=1, outputs=4, opset=23)

# RotaryEmbedding: 4-D [B, H, S, D] with per-batch caches, 3-D with position ids, interleaved, partial.
case("RotaryEmbedding", R(2, 3, 4, 8), R(2, 4, 4), R(2, 4, 4), opset=23)
pos = V(np.array([[0, 3, 5, 1], [2, 2, 7, 9]], dtype=np.int64))
case("RotaryEmbedding", R(2, 4, 24), W(10, 4), W(10, 4), pos, num_heads=3, opset=23)
case("RotaryEmbedding", R(2, 3, 4, 8), W(10, 4), W(10, 4), pos, interleaved=1, opset=23)
case("RotaryEmbedding", R(2, 3, 4, 8), W(10, 2), W(10, 2), pos, rotary_embedding_dim=4, opset=23)

# LinearAttention: each update rule, grouped heads, past state (reference: onnx.reference, which wants both outputs).
lq, lk, lv = R(2, 5, 8), R(2, 5, 8), R(2, 5, 6)
case("LinearAttention", lq, lk, lv, q_num_heads=2, kv_num_heads=2, update_rule="linear", outputs=2, opset=27)
case("LinearAttention", lq, lk, lv, None, R(2, 5, 2, lo=-1, hi=0), q_num_heads=2, kv_num_heads=2,
     update_rule="gated", outputs=2, opset=27)
case("LinearAttention", lq, lk, lv, R(2, 2, 4, 3), None, R(2, 5, 2, lo=0, hi=1), q_num_heads=2, kv_num_heads=2,
     update_rule="delta", outputs=2, opset=27)
case("LinearAttention", R(2, 5, 16), lk, lv, None, R(2, 5, 8, lo=-1, hi=0), R(2, 5, 1, lo=0, hi=1), q_num_heads=4,
     kv_num_heads=2, scale=0.3, outputs=2, opset=27)
