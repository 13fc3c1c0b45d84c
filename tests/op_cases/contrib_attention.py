"""com.microsoft attention cases: MultiHeadAttention (separate, BNSH, packed KV and packed QKV inputs; bias, key
padding masks, attention_bias, unidirectional) and Attention (packed weights, mask_index forms).

onnxruntime's CPU provider is the reference where it runs the form. It has no packed QKV or packed KV (and crashes
on an Attention without bias): those cases give the reference a model that unpacks (or adds a zero bias) with
standard ONNX ops first, then runs the form it has."""

import functools

import numpy as np
from onnx import helper, numpy_helper

from op_case import R, V, W, case

MS = "com.microsoft"


def _copy(model):
    m = type(model)()
    m.CopyFrom(model)
    return m


def _unpack(index, parts, model):
    m = _copy(model)
    node = m.graph.node[0]
    src = node.input[index]
    names = [f"{src}_part{i}" for i in range(parts)]
    m.graph.initializer.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), "flat_shape"))
    pre = [helper.make_node("Split", [src], [n + "_5d" for n in names], axis=3)]
    pre += [helper.make_node("Reshape", [n + "_5d", "flat_shape"], [n]) for n in names]
    ins = list(node.input) + [""] * max(0, index + parts - len(node.input))
    ins[index:index + parts] = names
    del node.input[:]
    node.input.extend(ins)
    nodes = pre + list(m.graph.node)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


def unpacked(index, parts):
    """ref_model: node input `index` [B, L, N, parts, H] becomes `parts` inputs [B, L, N * H] from that index on."""
    return functools.partial(_unpack, index, parts)


def zero_bias(model):
    """ref_model: the same Attention with an explicit zero bias (onnxruntime's CPU kernel needs one)."""
    m = _copy(model)
    node = m.graph.node[0]
    width = [i for i in m.graph.initializer if i.name == node.input[1]][0].dims[1]
    m.graph.initializer.append(numpy_helper.from_array(np.zeros(width, np.float32), "zero_bias"))
    ins = list(node.input) + [""] * max(0, 3 - len(node.input))
    ins[2] = "zero_bias"
    del node.input[:]
    node.input.extend(ins)
    return m


def mask01(*shape, seed):
    """A 0/1 int32 key padding mask in which every row keeps its first key."""
    m = (np.random.default_rng(seed).random(shape) < 0.6).astype(np.int32)
    m[..., 0] = 1
    return V(m)


# MultiHeadAttention: B 2, S 3, T 5, 2 heads of 8.
q, k, v = R(2, 3, 16), R(2, 5, 16), R(2, 5, 16)
case("MultiHeadAttention", q, k, v, num_heads=2, domain=MS)
case("MultiHeadAttention", q, k, v, W(48), num_heads=2, domain=MS)
case("MultiHeadAttention", q, k, R(2, 5, 12), W(44), num_heads=2, scale=0.3, domain=MS)  # Dv != D
# Key and value in BNSH [B, N, T, H]: projected already, the bias reaches Q only.
case("MultiHeadAttention", q, R(2, 2, 5, 8), R(2, 2, 5, 8), W(48), num_heads=2, domain=MS)
# Key padding masks: valid lengths [B], 0/1 [B, T] (with mask_filter_value), [B, S, T].
case("MultiHeadAttention", q, k, v, None, V(np.array([3, 5], np.int32)), num_heads=2, domain=MS)
case("MultiHeadAttention", q, k, v, W(48), mask01(2, 5, seed=1), num_heads=2, mask_filter_value=-30.0, domain=MS)
case("MultiHeadAttention", q, k, v, None, mask01(2, 3, 5, seed=2), num_heads=2, domain=MS)
# attention_bias, alone and with a mask and a scale.
case("MultiHeadAttention", q, k, v, None, None, R(1, 2, 3, 5), num_heads=2, domain=MS)
case("MultiHeadAttention", q, k, v, W(48), mask01(2, 5, seed=3), R(2, 1, 3, 5), num_heads=2, scale=0.2, domain=MS)
# unidirectional (self-attention).
qs = R(2, 4, 16)
case("MultiHeadAttention", qs, R(2, 4, 16), R(2, 4, 16), num_heads=2, unidirectional=1, domain=MS)
case("MultiHeadAttention", qs, R(2, 4, 16), R(2, 4, 16), W(48), mask01(2, 4, seed=4), R(1, 2, 4, 4), num_heads=2,
     unidirectional=1, domain=MS)
# Packed QKV [B, S, N, 3, H] (Olive's and Amuse's Stable Diffusion self-attention) and packed KV [B, T, N, 2, H]
# (their cross-attention): the reference runs the separate form.
case("MultiHeadAttention", R(2, 4, 2, 3, 8), num_heads=2, ref_model=unpacked(0, 3), domain=MS)
case("MultiHeadAttention", R(2, 4, 2, 3, 8), None, None, W(48), None, R(1, 2, 4, 4), num_heads=2, unidirectional=1,
     ref_model=unpacked(0, 3), domain=MS)
case("MultiHeadAttention", q, R(2, 5, 2, 2, 8), num_heads=2, ref_model=unpacked(1, 2), domain=MS)
case("MultiHeadAttention", q, R(2, 5, 2, 2, 8), None, W(48), mask01(2, 5, seed=5), num_heads=2, scale=0.5,
     ref_model=unpacked(1, 2), domain=MS)

# Attention: input [2, 4, 6], weights [6, 3 * 16], 2 heads; mask_index as lengths [B], ends and starts [2B],
# 0/1 [B, T] and [B, S, T].
x, w, b = R(2, 4, 6), W(6, 48), W(48)
case("Attention", x, w, b, num_heads=2, domain=MS)
case("Attention", x, w, b, V(np.array([2, 4], np.int32)), num_heads=2, domain=MS)
case("Attention", x, w, b, V(np.array([3, 4, 0, 1], np.int32)), num_heads=2, domain=MS)
case("Attention", x, w, b, mask01(2, 4, seed=6), num_heads=2, mask_filter_value=-50.0, domain=MS)
case("Attention", x, w, b, mask01(2, 4, 4, seed=7), num_heads=2, domain=MS)
case("Attention", x, w, b, mask01(2, 4, seed=8), None, R(2, 2, 4, 4), num_heads=2, unidirectional=1, scale=0.3,
     domain=MS)
case("Attention", x, W(6, 44), W(44), num_heads=2, qkv_hidden_sizes=[16, 16, 12], domain=MS)
case("Attention", x, w, num_heads=2, ref_model=zero_bias, domain=MS)

# RotaryEmbedding(input, position_ids, cos_cache, sin_cache): 3-D with the head size from the caches, interleaved,
# num_heads given, one position offset, 4-D, and partial rotation.
pos = V(np.array([[0, 3, 5], [2, 2, 7]], np.int64))
case("RotaryEmbedding", R(2, 3, 16), pos, W(10, 4), W(10, 4), domain=MS)
case("RotaryEmbedding", R(2, 3, 16), pos, W(10, 4), W(10, 4), interleaved=1, domain=MS)
case("RotaryEmbedding", R(2, 3, 16), pos, W(10, 4), W(10, 4), num_heads=2, domain=MS)
case("RotaryEmbedding", R(2, 3, 16), V(np.array([4], np.int64)), W(10, 4), W(10, 4), domain=MS)
case("RotaryEmbedding", R(2, 2, 3, 8), pos, W(10, 4), W(10, 4), interleaved=1, domain=MS)
case("RotaryEmbedding", R(2, 3, 16), pos, W(10, 2), W(10, 2), num_heads=2, rotary_embedding_dim=4, domain=MS)
case("RotaryEmbedding", R(2, 2, 3, 8), pos, W(10, 2), W(10, 2), num_heads=2, rotary_embedding_dim=4, interleaved=1,
     domain=MS)


def _rpb_standard(model):
    """ref_model: RelativePositionBias written in standard ONNX ops (onnxruntime's CPU provider has no kernel):
    T5's bucket of each key - query distance, in float as onnxruntime's kernel computes it, then a Gather from the
    table, whose data is [heads][buckets]."""
    m = _copy(model)
    node = m.graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    table = [i for i in m.graph.initializer if i.name == node.input[0]][0]
    nb, nh = table.dims
    bidir, dist = attrs.get("is_bidirectional", 0), attrs["max_distance"]
    nbh = nb // 2 if bidir else nb
    exact = nbh // 2
    consts = {"c0": 0, "c1": 1, "cnb": nbh, "cexact": exact, "clast": nbh - 1, "shape_hb": [nh, nb]}
    for name, val in consts.items():
        m.graph.initializer.append(numpy_helper.from_array(np.array(val, np.int64), name))
    for name, val in {"fexact": exact, "flogmax": np.log(np.float32(dist / exact)), "fspan": nbh - exact}.items():
        m.graph.initializer.append(numpy_helper.from_array(np.array(val, np.float32), name))
    m.graph.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "ax0"))
    m.graph.initializer.append(numpy_helper.from_array(np.array([1], np.int64), "ax1"))
    n = helper.make_node
    nodes = [
        n("Squeeze", [node.input[1], "ax0"], ["qlen"]), n("Squeeze", [node.input[2], "ax0"], ["klen"]),
        n("Range", ["c0", "qlen", "c1"], ["qi"]), n("Range", ["c0", "klen", "c1"], ["kj"]),
        n("Unsqueeze", ["kj", "ax0"], ["kj2"]), n("Unsqueeze", ["qi", "ax1"], ["qi2"]),
        n("Sub", ["kj2", "qi2"], ["rel"]),
    ]
    if bidir:
        nodes += [n("Greater", ["rel", "c0"], ["pos"]), n("Cast", ["pos"], ["posi"], to=7),
                  n("Mul", ["posi", "cnb"], ["base"]), n("Abs", ["rel"], ["rp"])]
    else:
        nodes += [n("Min", ["rel", "c0"], ["relneg"]), n("Neg", ["relneg"], ["rp"]), n("Mul", ["rp", "c0"], ["base"])]
    nodes += [
        n("Cast", ["rp"], ["rpf"], to=1), n("Div", ["rpf", "fexact"], ["ratio"]), n("Log", ["ratio"], ["lg"]),
        n("Div", ["lg", "flogmax"], ["frac"]), n("Mul", ["frac", "fspan"], ["scaled"]),
        n("Cast", ["scaled"], ["scaledi"], to=7), n("Add", ["scaledi", "cexact"], ["large0"]),
        n("Min", ["large0", "clast"], ["large"]), n("Less", ["rp", "cexact"], ["small"]),
        n("Where", ["small", "rp", "large"], ["off"]), n("Add", ["base", "off"], ["bucket"]),
        n("Reshape", [node.input[0], "shape_hb"], ["table_hb"]), n("Gather", ["table_hb", "bucket"], ["g"], axis=1),
        n("Unsqueeze", ["g", "ax0"], [node.output[0]]),
    ]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m


# RelativePositionBias (T5): bidirectional (encoder) and not (decoder, query shorter than the keys). Distances are
# kept off bucket boundaries, where float logs of two libraries could round to different sides.
case("RelativePositionBias", W(8, 3), V(np.array([7], np.int64)), V(np.array([7], np.int64)), max_distance=10,
     is_bidirectional=1, ref_model=_rpb_standard, domain=MS)
case("RelativePositionBias", W(8, 2), V(np.array([4], np.int64)), V(np.array([7], np.int64)), max_distance=10,
     ref_model=_rpb_standard, domain=MS)

# MatMulNBits: 4-bit blocks of 32 (default zero point 8), with packed uint8 or float zero points and a bias, a K
# that ends in a partial block, and 8 bits.
qb = dict(dtype="uint8", lo=0, hi=256)
case("MatMulNBits", R(3, 64), W(24, 2, 16, **qb), W(48, lo=0.01, hi=0.1), K=64, N=24, bits=4, block_size=32,
     domain=MS)
case("MatMulNBits", R(2, 3, 64), W(24, 2, 16, **qb), W(24, 2, lo=0.01, hi=0.1), W(24, **qb), None, W(24), K=64,
     N=24, bits=4, block_size=32, domain=MS)
case("MatMulNBits", R(3, 40), W(24, 3, 8, **qb), W(72, lo=-0.1, hi=0.1), W(24, 3, lo=0, hi=15), K=40, N=24,
     bits=4, block_size=16, domain=MS)
case("MatMulNBits", R(3, 40), W(24, 3, 16, **qb), W(72, lo=0.001, hi=0.01), W(72, **qb), K=40, N=24, bits=8,
     block_size=16, domain=MS)
