// Op library, host functions: the integer, boolean and shape work of a model, computed on the CPU when the graph
// is built (position ids from Range, causal masks, ArgMax over token ids, shapes read from input data).
// Included by onnx2ggml/ops.h. Unlike the ggml functions, these take and return HostTensors in ONNX order
// (row-major, ONNX axes, negative axes allowed), because their results become graph sizes, indices and
// constants rather than device tensors. Integer math is int64 (wrapping), float math double. Bad arguments
// (an index out of range, a reshape that does not fit) raise OpError.
#pragma once
#include "onnx2ggml/host_tensor.h"

namespace o2g {

// ---- elementwise, numpy broadcasting ----
enum HostFn {
    HOST_ADD, HOST_SUB, HOST_MUL, HOST_DIV, HOST_POW, HOST_MOD, HOST_FMOD, HOST_SUM, HOST_MAX, HOST_MIN, HOST_MEAN,
    HOST_EQUAL, HOST_LESS, HOST_LESS_OR_EQUAL, HOST_GREATER, HOST_GREATER_OR_EQUAL, HOST_AND, HOST_OR, HOST_XOR,
    HOST_NOT, HOST_NEG, HOST_ABS, HOST_SIGN, HOST_FLOOR, HOST_CEIL, HOST_ROUND, HOST_SQRT, HOST_RECIPROCAL, HOST_EXP,
    HOST_LOG, HOST_RELU, HOST_BITSHIFT_LEFT, HOST_BITSHIFT_RIGHT, HOST_BITWISE_AND, HOST_BITWISE_OR, HOST_BITWISE_XOR,
    HOST_BITWISE_NOT, HOST_CLIP,
};
struct HostMapParams {
    int fn = HOST_ADD;   // HostFn
    DType out = DType::INT64;  // result type (BOOL for comparisons and logic)
    int64_t b_trailing = 0;    // opset <= 6 axis broadcasting: size-1 dims appended to input 1's shape
    void fields(FieldWriter& f) const;
};
// fn over the inputs, broadcast together (one input for unary fns, any number for SUM/MAX/MIN/MEAN). CLIP takes
// x, then optional lo and hi (empty tensors when absent).
HostTensor host_map(const std::vector<HostTensor>& xs, const HostMapParams& p);
// ONNX Where: c ? a : b, broadcast.
HostTensor host_where(const HostTensor& c, const HostTensor& a, const HostTensor& b);
// ONNX Cast. `saturate` and `e8m0_round` (onnx2ggml::E8M0Round) only matter for the narrow float targets.
HostTensor host_cast(const HostTensor& x, DType to, bool saturate = true, int64_t e8m0_round = 0);
// ONNX QuantizeLinear to a narrow float (the zero point's type): x / scale + zero point, rounded to nearest even
// and saturated (or not) by Cast's rules. Per tensor, per `axis` (normalized), or in blocks of `block` along it.
HostTensor host_quantize_narrow(const HostTensor& x, const HostTensor& scale, const HostTensor& zero_point,
                                int64_t axis, int64_t block, bool saturate);
// ONNX BitCast: the same bytes read as another type of the same width.
HostTensor host_bitcast(const HostTensor& x, DType to);

// ---- generators ----
// ONNX EyeLike: ones on diagonal k of a rank-2 tensor of the given shape.
HostTensor host_eye_like(const Ints& shape, DType type, int64_t k);
// ONNX Range over scalar start, limit, delta (float types accumulate as the reference does).
HostTensor host_range(const HostTensor& start, const HostTensor& limit, const HostTensor& delta);
// A tensor of the given shape filled with value's single element (its type), or float zeros if value is empty.
HostTensor host_constant_of_shape(const Ints& shape, const HostTensor& value);

// ---- shape and movement ----
struct HostReshapeParams {
    bool allowzero = false;
    void fields(FieldWriter& f) const { f("allowzero", allowzero); }
};
// ONNX Reshape target of a tensor of shape `in` (0 copies a dim unless allowzero, one -1 is inferred).
Shape reshape_target(const Shape& in, const Ints& spec, bool allowzero);
HostTensor host_reshape(const HostTensor& x, const Ints& shape, const HostReshapeParams& p);
HostTensor host_flatten(const HostTensor& x, int64_t axis);
HostTensor host_squeeze(const HostTensor& x, const Ints& axes);  // empty axes: every dim of size 1
HostTensor host_unsqueeze(const HostTensor& x, const Ints& axes);
HostTensor host_transpose(const HostTensor& x, const Ints& perm);  // empty perm: reversed dims
HostTensor host_concat(const std::vector<HostTensor>& xs, int64_t axis);
// ONNX Slice; empty axes: 0..n-1, empty steps: 1.
HostTensor host_slice(const HostTensor& x, const Ints& starts, const Ints& ends, const Ints& axes, const Ints& steps);
// The same Slice of a tensor known only by its shape and type (a device tensor), where the result is empty (ggml
// cannot hold it); OpError if it is not.
HostTensor host_slice_empty(const Ints& shape, DType type, const Ints& starts, const Ints& ends, const Ints& axes,
                            const Ints& steps);
HostTensor host_expand(const HostTensor& x, const Ints& shape);
struct HostSplitParams {
    int64_t axis = 0;
    int index = 0;  // which part this call returns
    int parts = 1;  // equal parts (the last one smaller) when sizes are empty
    void fields(FieldWriter& f) const { f("axis", axis); f("index", index); f("parts", parts); }
};
// Part `index` of ONNX Split along `axis` with the given sizes.
HostTensor host_split(const HostTensor& x, const Ints& sizes, const HostSplitParams& p);
HostTensor host_tile(const HostTensor& x, const Ints& repeats);
// Items joined along a new axis 0 (a Loop's scan output on the host).
HostTensor host_stack(const std::vector<HostTensor>& items);
// ONNX Pad (mode: PadMode) along `axes` (empty: every axis); value: one element, or empty for 0.
HostTensor host_pad(const HostTensor& x, const Ints& pads, const Ints& axes, const HostTensor& value, int mode);

// ---- indexing ----
HostTensor host_gather(const HostTensor& x, const HostTensor& indices, int64_t axis);
struct HostTriluParams {
    bool upper = true;
    void fields(FieldWriter& f) const { f("upper", upper); }
};
HostTensor host_trilu(const HostTensor& x, const Ints& k, const HostTriluParams& p);  // k: empty or one value
struct HostCumParams {
    bool exclusive = false, reverse = false, product = false;
    void fields(FieldWriter& f) const { f("exclusive", exclusive); f("reverse", reverse); f("product", product); }
};
HostTensor host_cum(const HostTensor& x, const Ints& axis, const HostCumParams& p);  // axis: one value

// ---- reductions ----
enum HostReduce {
    HOST_REDUCE_SUM, HOST_REDUCE_MEAN, HOST_REDUCE_MAX, HOST_REDUCE_MIN, HOST_REDUCE_PROD, HOST_REDUCE_L1,
    HOST_REDUCE_L2, HOST_REDUCE_LOG_SUM, HOST_REDUCE_LOG_SUM_EXP, HOST_REDUCE_SUM_SQUARE,
};
struct HostReduceParams {
    int kind = HOST_REDUCE_SUM;  // HostReduce
    bool keepdims = true;
    bool noop_with_empty_axes = false;  // empty axes: identity instead of reducing every dim
    void fields(FieldWriter& f) const { f("kind", kind); f("keepdims", keepdims); f("noop_with_empty_axes", noop_with_empty_axes); }
};
HostTensor host_reduce(const HostTensor& x, const Ints& axes, const HostReduceParams& p);
// The same reduction of an empty tensor known only by its shape and type: the reduction's identity at each output
// (0 for sums, 1 for products, -inf for max and log-sums, NaN for a float mean); OpError if shape is not empty.
HostTensor host_reduce_empty(const Ints& shape, DType type, const Ints& axes, const HostReduceParams& p);
struct HostArgParams {
    int64_t axis = 0;
    bool keepdims = true, select_last_index = false, is_max = true;
    void fields(FieldWriter& f) const {
        f("axis", axis); f("keepdims", keepdims); f("select_last_index", select_last_index); f("is_max", is_max);
    }
};
HostTensor host_arg(const HostTensor& x, const HostArgParams& p);  // ArgMax / ArgMin, INT64 indices

// ---- selection ----
// Ops whose output sizes depend on the values; a multi-output op takes the output it returns as a params field.
struct HostTopKParams {
    int64_t axis = -1;
    bool largest = true;
    bool indices = false;  // return the INT64 indices instead of the values
    void fields(FieldWriter& f) const { f("axis", axis); f("largest", largest); f("indices", indices); }
};
// ONNX TopK with k (one value) along axis; ties keep the lower index first.
HostTensor host_topk(const HostTensor& x, const Ints& k, const HostTopKParams& p);
// ONNX OneHot: values (two elements: off, on) along a new dim of size depth (one value) at axis; a negative
// index counts from depth.
HostTensor host_one_hot(const HostTensor& indices, const HostTensor& depth, const HostTensor& values, int64_t axis);
// ONNX NonZero: INT64 (rank, n) coordinates of the nonzero elements, row-major order.
HostTensor host_nonzero(const HostTensor& x);
enum HostUniqueOutput { HOST_UNIQUE_Y, HOST_UNIQUE_INDICES, HOST_UNIQUE_INVERSE, HOST_UNIQUE_COUNTS };
struct HostUniqueParams {
    bool has_axis = false;  // false: x flattened
    int64_t axis = 0;
    bool sorted = true;  // false: in order of first occurrence
    int output = HOST_UNIQUE_Y;  // HostUniqueOutput: which ONNX output this call returns
    void fields(FieldWriter& f) const { f("has_axis", has_axis); f("axis", axis); f("sorted", sorted); f("output", output); }
};
HostTensor host_unique(const HostTensor& x, const HostUniqueParams& p);  // ONNX Unique
struct HostNmsParams {
    bool center_point_box = false;  // boxes as (x_center, y_center, w, h) instead of corners
    void fields(FieldWriter& f) const { f("center_point_box", center_point_box); }
};
// ONNX NonMaxSuppression: INT64 (n, 3) rows of (batch, class, box). The limits are empty (the default) or one value.
HostTensor host_non_max_suppression(const HostTensor& boxes, const HostTensor& scores, const HostTensor& max_per_class,
                                    const HostTensor& iou_threshold, const HostTensor& score_threshold,
                                    const HostNmsParams& p);
HostTensor host_gather_nd(const HostTensor& x, const HostTensor& indices, int64_t batch_dims);  // ONNX GatherND

// ---- between host and device ----
// A host value as a constant device tensor of `type` (uploaded after allocation).
ggml_tensor* host_constant(Ctx& ctx, const HostTensor& h, ggml_type type);
// A float weight read back from its F32 tensor (compiled programs: a weight the graph reads on the host).
HostTensor host_weight(const ggml_tensor* t, const Shape& s);
// "o2g::DType::INT64": a type as generated code spells it.
std::string dtype_literal(DType t);
// A host literal in generated code.
HostTensor host_ints(DType t, const Shape& s, const Ints& v);
HostTensor host_floats(DType t, const Shape& s, const std::vector<double>& v);
// One-value literals, as generated code writes scalar constants: host_i64(0), host_f32(-3.4e38), host_f32(x, {1}).
inline HostTensor host_i64(int64_t v, const Shape& s = {}) { return host_ints(DType::INT64, s, {v}); }
inline HostTensor host_f32(double v, const Shape& s = {}) { return host_floats(DType::FLOAT, s, {v}); }

}  // namespace o2g
