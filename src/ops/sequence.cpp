// Sequence ops inside a graph: SplitToSequence (11), SequenceAt, SequenceConstruct, SequenceEmpty, SequenceLength,
// SequenceInsert, SequenceErase (11) and ConcatFromSequence (11). A sequence is a list of values made when the graph
// is built, from Slice, Squeeze, Unsqueeze and Concat nodes (torch.export writes `unbind` this way). Sequences do not
// cross the graph's boundary: its inputs and outputs are tensors.
#include "ops/synth.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

std::vector<Val>& seq_in(Lower& L, int i) {
    Val& v = L.in(i);
    if (!v.seq) L.error("input '" + v.name + "' is not a sequence");
    return *v.seq;
}

void out_seq(Lower& L, std::vector<Val> items, DType empty_type) {
    Val& o = L.outs[0];
    o.dtype = items.empty() ? empty_type : items[0].dtype;
    o.seq = std::make_shared<std::vector<Val>>(std::move(items));
}

// A position input: negative counts from the end; an insert may also take n (the end).
int64_t position(Lower& L, int i, int64_t n, bool insert) {
    int64_t p = L.h(i).i64(0), q = p < 0 ? p + n : p;
    if (q < 0 || q > n - (insert ? 0 : 1))
        L.error("position " + std::to_string(p) + " out of range for a sequence of " + std::to_string(n));
    return q;
}

// Squeeze or Unsqueeze of one axis, with the axes as an attribute before opset 13 and as an input from it.
Val axis_node(Lower& L, const char* op, const std::string& x, int64_t axis) {
    if (L.opset >= 13)
        return synth(L, op, {x, L.b.add_const(HostTensor::from_i64(DType::INT64, {1}, {axis}), "axes")}, {});
    Attribute a;
    a.name = "axes";
    a.type = AttrType::INTS;
    a.ints = {axis};
    return synth(L, op, {x}, {a});
}

}  // namespace

void lower_SequenceConstruct(Lower& L) {
    std::vector<Val> items;
    for (int i = 0; i < L.n_in(); i++) items.push_back(L.in(i));
    out_seq(L, std::move(items), DType::FLOAT);
}

void lower_SequenceEmpty(Lower& L) { out_seq(L, {}, DType(L.node.get_int("dtype", int64_t(DType::FLOAT)))); }

void lower_SequenceLength(Lower& L) {
    L.out_host(0, HostTensor::from_i64(DType::INT64, {}, {int64_t(seq_in(L, 0).size())}));
}

void lower_SequenceAt(Lower& L) {
    const auto& s = seq_in(L, 0);
    L.outs[0] = s[size_t(position(L, 1, int64_t(s.size()), false))];
    L.outs[0].input_deps.clear();
}

void lower_SequenceInsert(Lower& L) {
    std::vector<Val> s = seq_in(L, 0);
    int64_t p = L.has(2) ? position(L, 2, int64_t(s.size()), true) : int64_t(s.size());
    s.insert(s.begin() + p, L.in(1));
    out_seq(L, std::move(s), L.dtype(1));
}

void lower_SequenceErase(Lower& L) {
    std::vector<Val> s = seq_in(L, 0);
    if (s.empty()) L.error("erase from an empty sequence");
    int64_t p = L.has(1) ? position(L, 1, int64_t(s.size()), false) : int64_t(s.size()) - 1;
    s.erase(s.begin() + p);
    out_seq(L, std::move(s), L.dtype(0));
}

// Parts of x along `axis`: size-1 slices (squeezed unless keepdims) without `split`, else chunks of a scalar
// `split` or the sizes it lists.
void lower_SplitToSequence(Lower& L) {
    int r = L.rank(0);
    int64_t axis = norm_axis(L, L.node.get_int("axis", 0), r), A = L.shape(0)[size_t(axis)];
    bool squeeze = !L.has(1) && L.node.get_int("keepdims", 1) == 0;
    std::vector<int64_t> sizes;
    if (!L.has(1)) {
        sizes.assign(size_t(A), 1);
    } else if (L.rank(1) == 0) {
        int64_t chunk = L.h(1).i64(0);
        if (chunk <= 0) L.error("split must be positive");
        for (int64_t off = 0; off < A; off += chunk) sizes.push_back(std::min(chunk, A - off));
    } else {
        sizes = L.h(1).to_i64();
    }
    const std::string& x = L.node.inputs[0];
    std::string axes = L.b.add_const(HostTensor::from_i64(DType::INT64, {1}, {axis}), "axes");
    std::vector<Val> items;
    int64_t off = 0;
    for (int64_t n : sizes) {
        if (n < 0 || off + n > A) L.error("split sizes do not fit a dim of " + std::to_string(A));
        std::string b = L.b.add_const(HostTensor::from_i64(DType::INT64, {1}, {off}), "starts");
        std::string e = L.b.add_const(HostTensor::from_i64(DType::INT64, {1}, {off + n}), "ends");
        Val y = synth(L, "Slice", {x, b, e, axes}, {});
        if (squeeze) y = axis_node(L, "Squeeze", bind(L, y, "item"), axis);
        items.push_back(y);
        off += n;
    }
    if (off != A) L.error("split sizes add up to " + std::to_string(off) + ", not " + std::to_string(A));
    out_seq(L, std::move(items), L.dtype(0));
}

// The items joined along `axis`, or stacked along a new one (new_axis = 1).
void lower_ConcatFromSequence(Lower& L) {
    const auto& s = seq_in(L, 0);
    if (s.empty()) L.error("concat of an empty sequence");
    bool stack = L.node.get_int("new_axis", 0) != 0;
    int r = s[0].rank() + (stack ? 1 : 0);
    int64_t axis = norm_axis(L, L.node.get_int("axis", 0), r);
    std::vector<std::string> parts;
    for (const Val& v : s) {
        std::string name = bind(L, v, "item");
        if (stack) name = bind(L, axis_node(L, "Unsqueeze", name, axis), "item");
        parts.push_back(name);
    }
    L.outs[0] = parts.size() == 1 ? L.b.vals[parts[0]] : synth(L, "Concat", parts, {int_attr("axis", axis)});
    L.outs[0].input_deps.clear();
}

const std::vector<OpDef>& sequence_ops() {
    static const std::vector<OpDef> t = {
        {.op = "SequenceConstruct", .since = 11, .accepts = "in=1.. out=1",
         .host = lower_SequenceConstruct, .control = true},
        {.op = "SequenceEmpty", .since = 11, .accepts = "in=0 out=1", .host = lower_SequenceEmpty, .control = true},
        {.op = "SequenceLength", .since = 11, .accepts = "in=1 out=1", .host = lower_SequenceLength, .control = true},
        {.op = "SequenceAt", .since = 11, .accepts = "in=2 out=1",
         .host = lower_SequenceAt, .host_inputs = {1}, .control = true},
        {.op = "SequenceInsert", .since = 11, .accepts = "in=2..3 out=1",
         .host = lower_SequenceInsert, .host_inputs = {2}, .control = true},
        {.op = "SequenceErase", .since = 11, .accepts = "in=1..2 out=1",
         .host = lower_SequenceErase, .host_inputs = {1}, .control = true},
        {.op = "SplitToSequence", .since = 11, .accepts = "in=1..2 out=1 r0>=1 @axis:i~r0",
         .host = lower_SplitToSequence, .host_inputs = {1}, .control = true},
        {.op = "ConcatFromSequence", .since = 11, .accepts = "in=1 out=1",
         .host = lower_ConcatFromSequence, .control = true},
    };
    return t;
}

}  // namespace onnx2ggml
