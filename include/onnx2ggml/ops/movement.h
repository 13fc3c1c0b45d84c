// Op library, Tensor movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile,
// Pad, Cast, DepthToSpace, SpaceToDepth, CenterCropPad, ReverseSequence.
// Included by onnx2ggml/ops.h; see its conventions. "rank" fields are the input's ONNX rank (ne alone cannot tell
// trailing size-1 dims apart); ONNX-ordered Ints arguments (shapes, starts, pads) are read as the ONNX op reads them.
#pragma once

namespace o2g {

// ---- reshapes (no data moves unless x is not contiguous) ----

struct ReshapeParams {
    int rank = 0;            // x's ONNX rank
    bool allowzero = false;  // a 0 in `shape` is a size-0 dim rather than "copy the input's dim"
    void fields(FieldWriter& f) const { f("rank", rank); f("allowzero", allowzero); }
};
// x reshaped to ONNX `shape`: 0 copies the input's dim at the same position (unless allowzero), -1 is inferred.
// Shapes of rank > 4 fold their outer dims into ne[3].
ggml_tensor* reshape(Ctx& ctx, ggml_tensor* x, const Ints& shape, const ReshapeParams& p);
// The same for an x of ONNX shape `in`, which also resolves a 0 that copies a folded dim (rank > 4); the output's
// ONNX shape is reshape_target(in, shape, p.allowzero). Compiled code passes `in` as a shape statement.
ggml_tensor* reshape_as(Ctx& ctx, ggml_tensor* x, const Ints& in, const Ints& shape, const ReshapeParams& p);

struct FlattenParams {
    int rank = 0;  // x's ONNX rank (<= 4)
    int dim = 1;   // ggml dims [0, dim) form the inner output dim (ONNX axis a: dim = rank - a)
    void fields(FieldWriter& f) const { f("rank", rank); f("dim", dim); }
};
// x as a 2-D tensor [prod(ne[0..dim)), prod(ne[dim..])].
ggml_tensor* flatten(Ctx& ctx, ggml_tensor* x, const FlattenParams& p);

struct SqueezeParams {
    int rank = 0;  // x's ONNX rank (<= 4)
    void fields(FieldWriter& f) const { f("rank", rank); }
};
// x without its ONNX `axes` (negative: from the end), each of size 1; empty axes: every size-1 dim.
ggml_tensor* squeeze(Ctx& ctx, ggml_tensor* x, const Ints& axes, const SqueezeParams& p);
// The ONNX shape of that result for an input of ONNX shape `shape`, and the squeeze of an x of that shape (any
// rank up to 6; ranks > 4 folded as in ReshapeParams).
Ints squeeze_shape(const Ints& shape, const Ints& axes);
ggml_tensor* squeeze_as(Ctx& ctx, ggml_tensor* x, const Ints& shape, const Ints& axes);

struct UnsqueezeParams {
    int rank = 0;  // x's ONNX rank (<= 4)
    void fields(FieldWriter& f) const { f("rank", rank); }
};
// x with new size-1 dims at ONNX `axes` of the output (negative: from the end of the output's rank); an output
// rank > 4 folds its outer dims into ne[3].
ggml_tensor* unsqueeze(Ctx& ctx, ggml_tensor* x, const Ints& axes, const UnsqueezeParams& p);
// The ONNX shape of that result for an input of ONNX shape `shape` (what ne cannot tell at rank > 4).
Ints unsqueeze_shape(const Ints& shape, const Ints& axes);

// ---- layout changes ----

struct TransposeParams {
    Ints perm{};  // output ggml dim d is input ggml dim perm[d]; dims past perm.size() stay (see ggml_perm)
    void fields(FieldWriter& f) const { f("perm", perm); }
};
// ggml dims for an ONNX perm (output axis i = input axis perm[i]) of rank perm.size() <= 4.
Ints ggml_perm(const Ints& onnx_perm);
// x permuted and made contiguous; x itself (made contiguous) for the identity. Any family may use it:
// o2g::transpose(ctx, x, {o2g::ggml_perm({0, 2, 1, 3})}).
ggml_tensor* transpose(Ctx& ctx, ggml_tensor* x, const TransposeParams& p);

struct TransposeNdParams {
    Ints perm{};  // ONNX perm: output axis i is input axis perm[i]
    void fields(FieldWriter& f) const { f("perm", perm); }
};
// ONNX Transpose of any rank up to 6 (dims of size > 1) of a tensor of ONNX shape `shape` (rank > 4: folded, see
// ReshapeParams). Dims that stay adjacent move together; the rest takes the fewest 4-dim ggml permutes.
ggml_tensor* transpose_nd(Ctx& ctx, ggml_tensor* x, const Ints& shape, const TransposeNdParams& p);
// The ONNX shape of that result (what ne cannot tell at rank > 4).
Ints transpose_shape(const Ints& shape, const Ints& perm);

struct ConcatParams {
    int axis = 0;  // ggml dim
    void fields(FieldWriter& f) const { f("axis", axis); }
};
// a and b joined along `axis` (Concat of n inputs is n - 1 calls).
ggml_tensor* concat(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const ConcatParams& p);
struct StackParams {
    int rank = 0;  // ONNX rank of each item (< 4)
    void fields(FieldWriter& f) const { f("rank", rank); }
};
// Items joined along a new leading ONNX axis: a Loop's scan output, gathered by a loop in generated code.
ggml_tensor* stack(Ctx& ctx, const std::vector<ggml_tensor*>& items, const StackParams& p);

struct ConcatNdParams {
    int axis = 0;  // ONNX axis (non-negative)
    void fields(FieldWriter& f) const { f("axis", axis); }
};
// a and b joined along `axis`, for any rank (rank > 4: folded); `shape` is either input's ONNX shape (only its
// dims outside the axis are read).
ggml_tensor* concat_nd(Ctx& ctx, ggml_tensor* a, ggml_tensor* b, const Ints& shape, const ConcatNdParams& p);
// The ONNX shape of a and b (ONNX shapes) joined along ONNX `axis`.
Ints concat_shape(const Ints& a, const Ints& b, int64_t axis);

struct SplitParams {
    int axis = 0;          // ggml dim
    int index = 0;         // which part this call returns
    int num_outputs = 1;   // parts when `split` is empty: equal chunks of ceil(n / num_outputs), the last smaller
    void fields(FieldWriter& f) const { f("axis", axis); f("index", index); f("num_outputs", num_outputs); }
};
// Part `index` of x cut along `axis` into pieces of sizes `split` (or equal chunks), contiguous.
ggml_tensor* split(Ctx& ctx, ggml_tensor* x, const Ints& split, const SplitParams& p);

struct SliceParams {
    int rank = 0;  // x's ONNX rank (<= 4), which `axes` count from
    void fields(FieldWriter& f) const { f("rank", rank); }
};
// ONNX Slice: starts/ends wrap when negative and clamp to the dim; ONNX `axes` (negative ones count from the end)
// empty means 0..n-1, steps empty means all 1. Step 1 is a view made contiguous, other steps a row gather. An empty
// result (bounds from input data) is a tensor with a 0 in ne and nothing to compute; as a graph output it is empty.
ggml_tensor* slice(Ctx& ctx, ggml_tensor* x, const Ints& starts, const Ints& ends, const Ints& axes, const Ints& steps,
                   const SliceParams& p);
// ONNX Slice of a tensor of ONNX shape `shape` of any rank (rank > 4: folded), one axis at a time; arguments as
// for slice.
ggml_tensor* slice_nd(Ctx& ctx, ggml_tensor* x, const Ints& shape, const Ints& starts, const Ints& ends, const Ints& axes,
                      const Ints& steps);
// The ONNX shape of that result (what ne cannot tell at rank > 4).
Ints slice_shape(const Ints& shape, const Ints& starts, const Ints& ends, const Ints& axes, const Ints& steps);
// First index and element count that a Slice of (start, end, step) takes from a dim of size n.
void slice_range(int64_t n, int64_t start, int64_t end, int64_t step, int64_t& first, int64_t& count);

struct ExpandParams {
    int rank = 0;  // x's ONNX rank
    void fields(FieldWriter& f) const { f("rank", rank); }
};
// x broadcast (numpy rules) with ONNX `shape`.
ggml_tensor* expand(Ctx& ctx, ggml_tensor* x, const Ints& shape, const ExpandParams& p);

// x repeated repeats[a] times along each ONNX axis a (repeats.size() is x's rank).
ggml_tensor* tile(Ctx& ctx, ggml_tensor* x, const Ints& repeats);

enum PadMode { PAD_CONSTANT = 0, PAD_REFLECT = 1, PAD_EDGE = 2, PAD_WRAP = 3 };
struct PadParams {
    int mode = PAD_CONSTANT;  // PadMode
    float value = 0;          // PAD_CONSTANT fill
    int rank = 0;             // x's ONNX rank (<= 4), which `axes` count from
    void fields(FieldWriter& f) const {
        f.enum_field("mode", mode, {"PAD_CONSTANT", "PAD_REFLECT", "PAD_EDGE", "PAD_WRAP"});
        f("value", value);
        f("rank", rank);
    }
};
// ONNX Pad: pads = [begin of each axis..., end of each axis...] for ONNX `axes` (negative ones count from the end;
// empty: every axis); negative pads crop.
ggml_tensor* pad(Ctx& ctx, ggml_tensor* x, const Ints& pads, const Ints& axes, const PadParams& p);

struct CenterCropPadParams {
    int rank = 0;  // x's ONNX rank (<= 4)
    Ints axes{};   // ggml dims `shape` refers to, in order
    void fields(FieldWriter& f) const { f("rank", rank); f("axes", axes); }
};
// Each axis in p.axes center-cropped or zero-padded to shape[i].
ggml_tensor* center_crop_pad(Ctx& ctx, ggml_tensor* x, const Ints& shape, const CenterCropPadParams& p);

struct ReverseSequenceParams {
    int rank = 0;         // x's ONNX rank (2..4)
    bool batch_major = false;  // ONNX batch_axis 0, time_axis 1 (else time_axis 0, batch_axis 1)
    void fields(FieldWriter& f) const { f("rank", rank); f("batch_major", batch_major); }
};
// The first lens[b] steps of each batch entry b reversed in time.
ggml_tensor* reverse_sequence(Ctx& ctx, ggml_tensor* x, const Ints& lens, const ReverseSequenceParams& p);

// ---- element types ----

enum CastTo { CAST_FLOAT = 0, CAST_INT = 1, CAST_BOOL = 2, CAST_FLOAT16 = 3, CAST_BFLOAT16 = 4 };
struct CastParams {
    int to = CAST_FLOAT;  // CastTo: F32; I32 (truncating); F32 0/1; F32 rounded through F16 or BF16
    void fields(FieldWriter& f) const {
        f.enum_field("to", to, {"CAST_FLOAT", "CAST_INT", "CAST_BOOL", "CAST_FLOAT16", "CAST_BFLOAT16"});
    }
};
// x (F32 or I32) converted; returns x when nothing changes (F32 to CAST_FLOAT, I32 to CAST_INT). Integer x to any
// float kind is a plain conversion to F32. Any family may use it: o2g::cast(ctx, x, {o2g::CAST_FLOAT}).
ggml_tensor* cast(Ctx& ctx, ggml_tensor* x, const CastParams& p);

// ---- block rearrangements (4-D NCHW) ----

struct DepthToSpaceParams {
    int64_t blocksize = 1;
    bool crd = false;  // mode CRD (else DCR)
    void fields(FieldWriter& f) const { f("blocksize", blocksize); f("crd", crd); }
};
ggml_tensor* depth_to_space(Ctx& ctx, ggml_tensor* x, const DepthToSpaceParams& p);

struct SpaceToDepthParams {
    int64_t blocksize = 1;
    bool crd = false;  // mode CRD (opset 28; else DCR)
    void fields(FieldWriter& f) const { f("blocksize", blocksize); f("crd", crd); }
};
ggml_tensor* space_to_depth(Ctx& ctx, ggml_tensor* x, const SpaceToDepthParams& p);

}  // namespace o2g
