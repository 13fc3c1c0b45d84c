// Data movement ops: Transpose (1-23), Concat (1-23), Split (1-18), Slice (1-13), Expand (8-13), Tile (6-13),
// Pad (1-23), CenterCropPad (18), ReverseSequence (10), DepthToSpace / SpaceToDepth (1-13).
#include <algorithm>

#include "lib/index_maps.h"
#include "ops/host.h"
#include "runtime/builder.h"

namespace onnx2ggml {

// ---- Transpose ----
static std::vector<int64_t> transpose_perm(Lower& L) {
    int r = L.rank(0);
    std::vector<int64_t> perm = L.node.get_ints("perm");
    if (perm.empty())
        for (int i = r - 1; i >= 0; i--) perm.push_back(i);
    if (int(perm.size()) != r) L.error("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
    for (auto& p : perm) p = norm_axis(L, p, r);
    return perm;
}
void lower_Transpose(Lower& L) {
    int r = L.rank(0);
    auto perm = transpose_perm(L);
    if (r > 4) {
        ggml_tensor* y = O2G_CALL(L, o2g::transpose_nd, L.t(0), L.shape_sym(0), o2g::TransposeNdParams{perm});
        return O2G_OUT_SHAPE(L, 0, y, L.dtype(0), o2g::transpose_shape, L.shape_sym(0), perm);
    }
    ggml_tensor* y = O2G_CALL(L, o2g::transpose, L.t(0), o2g::TransposeParams{o2g::ggml_perm(perm)});
    L.out(0, y, L.dtype(0), r);
}
void host_Transpose(Lower& L) { O2G_HOST(L, 0, o2g::host_transpose, L.hv(0), transpose_perm(L)); }

// ---- Concat ----
void lower_Concat(Lower& L) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    o2g::ConcatParams p{gdim(r, axis)};
    ggml_tensor* acc = nullptr;
    Shape os = L.shape(0);
    os[size_t(axis)] = 0;
    for (int i = 0; i < L.n_in(); i++) {
        if (!L.has(i) || shape_numel(L.shape(i)) == 0) continue;
        // Checked here, not assumed: a hostile model's inputs may disagree (found by tests/fuzz).
        if (L.rank(i) != r) L.error("Concat inputs have ranks " + std::to_string(r) + " and " + std::to_string(L.rank(i)));
        if (L.dtype(i) != L.dtype(0))
            L.error(std::string("Concat inputs have element types ") + dtype_name(L.dtype(0)) + " and " +
                    dtype_name(L.dtype(i)));
        for (int d = 0; d < r; d++)
            if (d != axis && L.shape(i)[size_t(d)] != L.shape(0)[size_t(d)])
                L.error("Concat inputs differ in dim " + std::to_string(d) + " off the axis");
        os[size_t(axis)] += L.shape(i)[size_t(axis)];
        if (!acc) acc = L.t(i);
        else if (r > 4) acc = O2G_CALL(L, o2g::concat_nd, acc, L.t(i), L.shape_sym(i), o2g::ConcatNdParams{axis});
        else acc = O2G_CALL(L, o2g::concat, acc, L.t(i), p);
    }
    if (!acc) L.error("Concat of empty tensors is not supported on the device");
    if (r > 4 && L.n_in() == 2 && shape_numel(L.shape(0)) && shape_numel(L.shape(1)))  // a shape statement in code
        return O2G_OUT_SHAPE(L, 0, acc, L.dtype(0), o2g::concat_shape, L.shape_sym(0), L.shape_sym(1), int64_t(axis));
    L.out_shape(0, acc, L.dtype(0), os);
}
void host_Concat(Lower& L) {
    std::vector<HostArg> xs;
    for (int i = 0; i < L.n_in(); i++)
        if (L.has(i)) xs.push_back(L.hv(i));
    O2G_HOST(L, 0, o2g::host_concat, xs, L.node.get_int("axis", 0));
}

// ---- Split ----
// The sizes (empty: `parts` equal chunks) come from the 'split' attribute before 13 and from input 1 since; the
// number of equal chunks is the number of outputs, or num_outputs from 18.
static Sym split_attr(Lower& L) { return Sym{L.node.get_ints("split"), nullptr}; }
static Sym split_input(Lower& L) { return L.has(1) ? L.sym(1) : Sym{}; }
static int split_parts(Lower& L, const Sym& split, bool num_outputs) {
    if (!split.v.empty()) return int(split.v.size());
    const int outs = int(L.node.outputs.size());
    return num_outputs && L.node.has("num_outputs") ? int(L.node.get_int("num_outputs", outs)) : outs;
}
// The sizes given, or `parts` equal chunks of the axis (the last one shorter), as ONNX Split takes them.
static std::vector<int64_t> split_sizes(Lower& L, const Sym& given, int parts, int axis) {
    std::vector<int64_t> split = given.v;
    if (size_t(axis) >= L.shape(0).size()) L.error("splits a tensor of rank " + std::to_string(L.shape(0).size()));
    const int64_t A = L.shape(0)[size_t(axis)];
    if (split.empty()) {
        if (parts < 1) L.error("splits into " + std::to_string(parts) + " parts");
        const int64_t chunk = (A + parts - 1) / parts;
        for (int i = 0; i < parts; i++) split.push_back(std::max<int64_t>(0, std::min(chunk, A - chunk * i)));
        return split;
    }
    // Sizes from the file: each in [0, A] and summing to A (so no slice reads past the input).
    int64_t sum = 0;
    for (int64_t v : split) {
        if (v < 0 || v > A) L.error("split size " + std::to_string(v) + " for an axis of " + std::to_string(A));
        sum += v;
        if (sum > A) break;
    }
    if (sum != A) L.error("split sizes sum past or short of the axis's " + std::to_string(A));
    return split;
}
static void split_out(Lower& L, const Sym& sizes, bool num_outputs) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    const int parts = split_parts(L, sizes, num_outputs);
    const std::vector<int64_t> split = split_sizes(L, sizes, parts, axis);  // checks the sizes in the file
    if (r > 4) {  // each part a Slice of the folded tensor
        int64_t off = 0;
        for (size_t i = 0; i < split.size() && i < L.outs.size(); i++) {
            Shape os = L.shape(0);
            os[size_t(axis)] = split[i];
            const Sym first{{off}, nullptr}, end{{off + split[i]}, nullptr}, ax{{axis}, nullptr};
            ggml_tensor* y = O2G_CALL(L, o2g::slice_nd, L.t(0), L.shape_sym(0), first, end, ax, Sym{});
            L.out_shape(int(i), y, L.dtype(0), os);
            off += split[i];
        }
        return;
    }
    for (int i = 0; i < parts && i < int(L.outs.size()); i++) {
        o2g::SplitParams p{gdim(r, axis), i, parts};
        L.out(i, O2G_CALL(L, o2g::split, L.t(0), sizes, p), L.dtype(0), r);
    }
}
static void split_host(Lower& L, const Sym& given, bool num_outputs) {
    int r = L.rank(0);
    int axis = norm_axis(L, L.node.get_int("axis", 0), r);
    std::vector<int64_t> split = split_sizes(L, given, split_parts(L, given, num_outputs), axis);
    for (size_t i = 0; i < split.size() && i < L.outs.size(); i++)
        O2G_HOST(L, int(i), o2g::host_split, L.hv(0), given,
                 o2g::HostSplitParams{axis, int(i), given.v.empty() ? int(split.size()) : int(given.v.size())});
}
void lower_Split_1(Lower& L) { split_out(L, split_attr(L), false); }
void lower_Split_13(Lower& L) { split_out(L, split_input(L), false); }
void lower_Split(Lower& L) { split_out(L, split_input(L), true); }
void host_Split_1(Lower& L) { split_host(L, split_attr(L), false); }
void host_Split_13(Lower& L) { split_host(L, split_input(L), false); }
void host_Split(Lower& L) { split_host(L, split_input(L), true); }

// ---- Slice ----
// Before opset 10 starts, ends and axes are attributes (no steps); from 10 they are inputs 1-4, which reach the op
// library as given (compile keeps them data).
struct SliceArgs { Sym starts, ends, axes, steps; };
static SliceArgs slice_attrs(Lower& L) {
    SliceArgs a;
    a.starts.v = L.node.get_ints("starts");
    a.ends.v = L.node.get_ints("ends");
    a.axes.v = L.node.get_ints("axes");
    return a;
}
static SliceArgs slice_inputs(Lower& L) {
    SliceArgs a;
    a.starts = L.sym(1);
    a.ends = L.sym(2);
    if (L.has(3)) a.axes = L.sym(3);
    if (L.has(4)) a.steps = L.sym(4);
    return a;
}
// Output shape: default axes, lengths and steps checked.
static Shape slice_shape(Lower& L, const SliceArgs& a) {
    std::vector<int64_t> axes = a.axes.v;
    if (axes.empty())
        for (size_t i = 0; i < a.starts.v.size(); i++) axes.push_back(int64_t(i));
    size_t n = a.starts.v.size();
    if (a.ends.v.size() != n || axes.size() != n || (!a.steps.v.empty() && a.steps.v.size() != n))
        L.error("starts, ends, axes and steps differ in length");
    Shape os = L.shape(0);
    for (size_t i = 0; i < n; i++) {
        size_t ax = size_t(norm_axis(L, axes[i], L.rank(0)));
        int64_t st = a.steps.v.empty() ? 1 : a.steps.v[i], first, count;
        if (st == 0) L.error("slice step is 0");
        o2g::slice_range(os[ax], a.starts.v[i], a.ends.v[i], st, first, count);
        os[ax] = count;
    }
    return os;
}
static void slice_out(Lower& L, const SliceArgs& a) {
    Shape os = slice_shape(L, a);
    int r = L.rank(0);
    bool data = false;
    for (int i = 1; i < L.n_in(); i++) data |= L.has(i) && !L.in(i).input_deps.empty();
    // Empty at bounds the graph fixes: made on the host, from the input's shape. Empty at bounds from input data: the
    // op library's empty tensor, so that the call (and a compiled program) is the same whatever the data.
    if (shape_numel(os) == 0 && !data)
        return O2G_HOST(L, 0, o2g::host_slice_empty, L.shape_sym(0), L.dtype(0), a.starts, a.ends, a.axes, a.steps);
    if (r > 4) {
        ggml_tensor* y = O2G_CALL(L, o2g::slice_nd, L.t(0), L.shape_sym(0), a.starts, a.ends, a.axes, a.steps);
        return O2G_OUT_SHAPE(L, 0, y, L.dtype(0), o2g::slice_shape, L.shape_sym(0), a.starts, a.ends, a.axes, a.steps);
    }
    L.out(0, O2G_CALL(L, o2g::slice, L.t(0), a.starts, a.ends, a.axes, a.steps, o2g::SliceParams{r}), L.dtype(0), r);
}
static void slice_host(Lower& L, const SliceArgs& a) {
    O2G_HOST(L, 0, o2g::host_slice, L.hv(0), a.starts, a.ends, a.axes, a.steps);
}
void lower_Slice_1(Lower& L) { slice_out(L, slice_attrs(L)); }
void lower_Slice(Lower& L) { slice_out(L, slice_inputs(L)); }
void host_Slice_1(Lower& L) { slice_host(L, slice_attrs(L)); }
void host_Slice(Lower& L) { slice_host(L, slice_inputs(L)); }

// ---- Expand, Tile ----
// Output shapes from the model's data: an element count past int64 would trip a GGML_ASSERT (the size check against
// max_memory comes later, on the built graph).
static void check_numel(Lower& L, const Shape& os) {
    int64_t n = 1;
    for (int64_t d : os)
        if (__builtin_mul_overflow(n, d, &n)) L.error("output " + shape_str(os) + " has more than 2^63 elements");
}
void lower_Expand(Lower& L) {
    const Sym given = L.sym(1);
    Shape os = broadcast_shapes(L, L.shape(0), given.v);
    check_numel(L, os);
    const Sym full{os, nullptr};  // folded dims (rank > 4): the op library needs every output dim spelled out
    if (os.size() > 4 && !folded_compatible(L.shape(0), os))
        L.error("broadcast of " + shape_str(L.shape(0)) + " to " + shape_str(os) + " across folded dims (rank > 4)");
    // A target that already names every output dim is passed as given, so compile keeps it symbolic.
    const Sym& shape = os.size() > 4 && os != given.v ? full : given;
    L.out_shape(0, O2G_CALL(L, o2g::expand, L.t(0), shape, o2g::ExpandParams{L.rank(0)}), L.dtype(0), os);
}
void host_Expand(Lower& L) { O2G_HOST(L, 0, o2g::host_expand, L.hv(0), L.sym(1)); }
static Shape tile_shape(Lower& L, const std::vector<int64_t>& rep) {
    Shape os = L.shape(0);
    if (rep.size() != os.size()) L.error("repeats has " + std::to_string(rep.size()) + " entries for rank " + std::to_string(os.size()));
    for (size_t i = 0; i < os.size(); i++)
        if (rep[i] < 0 || __builtin_mul_overflow(os[i], rep[i], &os[i]))
            L.error("repeats " + shape_str(rep) + " of a " + shape_str(L.shape(0)) + " input: negative or over 64 bits");
    check_numel(L, os);
    return os;
}
void lower_Tile(Lower& L) {
    const Sym rep = L.sym(1);
    Shape os = tile_shape(L, rep.v);
    L.out(0, O2G_CALL(L, o2g::tile, L.t(0), rep), L.dtype(0), int(os.size()));
}
void host_Tile(Lower& L) { O2G_HOST(L, 0, o2g::host_tile, L.hv(0), L.sym(1)); }

// ---- Pad ----
// Pads and value are attributes before opset 11 ('paddings' in opset 1), inputs 1 and 2 from 11; input 3 (axes)
// from 18 limits them to some axes. Pads, value and axes reach the op library as given, so compile keeps them data.
struct PadArgs { Sym pads, axes; o2g::PadParams p; HostTensor value_attr; HostArg value; };
static PadArgs pad_attrs(Lower& L, const char* pads) {
    PadArgs a;
    a.pads.v = L.node.get_ints(pads);
    a.p.value = L.node.get_float("value", 0.0f);
    a.value_attr = HostTensor::from_f64(DType::FLOAT, {}, {a.p.value});
    return a;
}
static PadArgs pad_inputs(Lower& L, bool axes_input) {
    PadArgs a;
    a.pads = L.sym(1);
    a.value_attr = HostTensor::alloc(DType::FLOAT, {0});  // no value: 0
    a.p.value = L.has(2) ? L.param_float(2, "value") : 0.0f;
    if (L.has(2)) a.value = L.hv(2);
    if (axes_input && L.has(3)) a.axes = L.sym(3);
    return a;
}
// Mode and rank.
static PadArgs pad_check(Lower& L, PadArgs a) {
    std::string mode = L.node.get_string("mode", "constant");
    if (mode == "constant") a.p.mode = o2g::PAD_CONSTANT;
    else if (mode == "reflect") a.p.mode = o2g::PAD_REFLECT;
    else if (mode == "edge") a.p.mode = o2g::PAD_EDGE;
    else if (mode == "wrap") a.p.mode = o2g::PAD_WRAP;
    else L.error("unknown mode '" + mode + "'");
    a.p.rank = L.rank(0);
    return a;
}
static void pad_out(Lower& L, const PadArgs& given) {
    const PadArgs a = pad_check(L, given);
    if (a.p.rank > 4) L.error("rank > 4 Pad is not supported on the device");
    L.out(0, O2G_CALL(L, o2g::pad, L.t(0), a.pads, a.axes, a.p), L.dtype(0), a.p.rank);
}
static void pad_host(Lower& L, const PadArgs& given) {
    const PadArgs a = pad_check(L, given);
    const HostArg value = a.value.h ? a.value : HostArg{&a.value_attr, nullptr};
    O2G_HOST(L, 0, o2g::host_pad, L.hv(0), a.pads, a.axes, value, a.p.mode);
}
void lower_Pad_1(Lower& L) { pad_out(L, pad_attrs(L, "paddings")); }
void lower_Pad_2(Lower& L) { pad_out(L, pad_attrs(L, "pads")); }
void lower_Pad_11(Lower& L) { pad_out(L, pad_inputs(L, false)); }
void lower_Pad(Lower& L) { pad_out(L, pad_inputs(L, true)); }
void host_Pad_1(Lower& L) { pad_host(L, pad_attrs(L, "paddings")); }
void host_Pad_2(Lower& L) { pad_host(L, pad_attrs(L, "pads")); }
void host_Pad_11(Lower& L) { pad_host(L, pad_inputs(L, false)); }
void host_Pad(Lower& L) { pad_host(L, pad_inputs(L, true)); }

// ---- CenterCropPad (18), ReverseSequence (10): row gathers (index maps shared with the op library) ----
void lower_CenterCropPad(Lower& L) {
    int r = L.rank(0);
    const Sym sh = L.sym(1);
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    o2g::CenterCropPadParams p{r, {}};
    for (auto& a : axes) {
        a = norm_axis(L, a, r);
        p.axes.push_back(gdim(r, int(a)));
    }
    o2g::RowMap m = o2g::center_crop_pad_rows(L.shape(0), sh.v, axes);
    if (shape_numel(m.os) == 0) L.error("the output would be empty, which ggml cannot hold");
    if (L.b.host_mode)
        return m.rows.empty() ? L.pass(0, 0) : L.out_host(0, host_take_rows(L.h(0), m.inner, m.rows, m.os));
    if (r > 4) L.error("rank > 4 CenterCropPad is not supported on the device");
    // Always the op-library call (x itself when nothing moves), so compiled code does not depend on `shape`.
    L.out_shape(0, O2G_CALL(L, o2g::center_crop_pad, L.t(0), sh, p), L.dtype(0), m.os);
}

void lower_ReverseSequence(Lower& L) {
    int r = L.rank(0);
    int ba = norm_axis(L, L.node.get_int("batch_axis", 1), r), ta = norm_axis(L, L.node.get_int("time_axis", 0), r);
    if (ba == ta || ba > 1 || ta > 1) L.error("batch_axis and time_axis must be 0 and 1 in some order");
    const Sym lens = L.sym(1);
    o2g::RowMap m = o2g::reverse_sequence_rows(L.shape(0), lens.v, ba == 0);
    if (shape_numel(m.os) == 0) L.error("the output would be empty, which ggml cannot hold");
    if (L.b.host_mode) return L.out_host(0, host_take_rows(L.h(0), m.inner, m.rows, m.os));
    if (r > 4) L.error("rank > 4 ReverseSequence is not supported on the device");
    L.out(0, O2G_CALL(L, o2g::reverse_sequence, L.t(0), lens, o2g::ReverseSequenceParams{r, ba == 0}), L.dtype(0), r);
}

// ---- DepthToSpace / SpaceToDepth ----
void lower_DepthToSpace(Lower& L) {
    int64_t b = L.node.get_int("blocksize", 1);
    bool crd = L.node.get_string("mode", "DCR") == "CRD";
    ggml_tensor* y;
    if (L.node.op_type == "DepthToSpace") y = O2G_CALL(L, o2g::depth_to_space, L.t(0), o2g::DepthToSpaceParams{b, crd});
    else y = O2G_CALL(L, o2g::space_to_depth, L.t(0), o2g::SpaceToDepthParams{b, crd});
    L.out(0, y, L.dtype(0), 4);
}
void host_DepthToSpace(Lower& L) {
    bool d2s = L.node.op_type == "DepthToSpace", crd = L.node.get_string("mode", "DCR") == "CRD";
    o2g::RowMap m = o2g::depth_to_space_map(L.shape(0), L.node.get_int("blocksize", 1), crd, d2s);
    L.out_host(0, host_gather_flat(L.h(0), m.os, m.rows));
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& movement_ops() {
    static const std::vector<OpDef> t = {
        {.op = "ReverseSequence", .since = 10, .accepts = "in=2 out=1 r0>=2",
         .ggml = lower_ReverseSequence, .host = lower_ReverseSequence, .host_inputs = {1}},
        {.op = "CenterCropPad", .since = 18, .accepts = "in=2 out=1",
         .ggml = lower_CenterCropPad, .host = lower_CenterCropPad, .host_inputs = {1}},
        {.op = "Transpose", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Transpose, .host = host_Transpose},
        {.op = "Concat", .since = 1, .accepts = "in=1.. out=1 r*>=1 @axis:i~r0",
         .ggml = lower_Concat, .host = host_Concat},
        {.op = "Split", .since = 1, .accepts = "in=1..2 out=1.. r0>=1 @axis:i~r0",
         .ggml = lower_Split_1, .host = host_Split_1},
        {.op = "Split", .since = 13, .accepts = "in=1..2 out=1.. r0>=1 @axis:i~r0",
         .ggml = lower_Split_13, .host = host_Split_13, .host_inputs = {1}},
        {.op = "Split", .since = 18, .accepts = "in=1..2 out=1.. r0>=1 @axis:i~r0",
         .ggml = lower_Split, .host = host_Split, .host_inputs = {1}},
        {.op = "Slice", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Slice_1, .host = host_Slice_1},
        {.op = "Slice", .since = 10, .accepts = "in=3..5 out=1",
         .ggml = lower_Slice, .host = host_Slice, .host_inputs = {1,2,3,4}},
        {.op = "Expand", .since = 8, .accepts = "in=2 out=1 t1=int",
         .ggml = lower_Expand, .host = host_Expand, .host_inputs = {1}},
        {.op = "Tile", .since = 6, .accepts = "in=2 out=1 t1=int",
         .ggml = lower_Tile, .host = host_Tile, .host_inputs = {1}},
        {.op = "Pad", .since = 1, .accepts = "in=1 out=1", .ggml = lower_Pad_1, .host = host_Pad_1},
        {.op = "Pad", .since = 2, .accepts = "in=1 out=1", .ggml = lower_Pad_2, .host = host_Pad_2},
        {.op = "Pad", .since = 11, .accepts = "in=2..3 out=1",
         .ggml = lower_Pad_11, .host = host_Pad_11, .host_inputs = {1,2}},
        {.op = "Pad", .since = 18, .accepts = "in=2..4 out=1",
         .ggml = lower_Pad, .host = host_Pad, .host_inputs = {1,2,3}},
        {.op = "DepthToSpace", .since = 1, .accepts = "in=1 out=1 r0=4 @blocksize:i=1..65536",
         .ggml = lower_DepthToSpace, .host = host_DepthToSpace},
        {.op = "SpaceToDepth", .since = 1, .accepts = "in=1 out=1 r0=4 @blocksize:i=1..65536",
         .ggml = lower_DepthToSpace, .host = host_DepthToSpace},
    };
    return t;
}

}  // namespace onnx2ggml
