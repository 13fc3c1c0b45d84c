// The op-lowering interface: one function per ONNX op, registered in one table (ops/registry.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ggml.h"
#include "ir/ir.h"
#include "ops/tensor.h"

namespace onnx2ggml {

class Builder;

// What a lowering function sees: the node, its inputs, and where to put its outputs.
struct Lower {
    Builder& b;
    ggml_context* ctx;
    const Node& node;
    int64_t opset;
    std::vector<Val*> ins;   // nullptr for omitted optional inputs
    std::vector<Val> outs;

    int n_in() const { return int(ins.size()); }
    bool has(int i) const { return i < n_in() && ins[size_t(i)] && ins[size_t(i)]->present(); }
    Val& in(int i);
    const Shape& shape(int i) { return in(i).shape; }
    int rank(int i) { return in(i).rank(); }
    DType dtype(int i) { return in(i).dtype; }

    // Input i as a ggml tensor (host data is uploaded as a constant).
    ggml_tensor* t(int i);
    // Input i's data on the host; a clear error if it is only known on the device.
    const HostTensor& h(int i);
    std::vector<int64_t> ints(int i) { return h(i).to_i64(); }

    // Output i from a ggml tensor of ONNX rank `rank`; the ONNX shape is read back from ne.
    void out(int i, ggml_tensor* t, DType dtype, int rank);
    void out(int i, ggml_tensor* t, int rank) { out(i, t, DType::FLOAT, rank); }
    void out_host(int i, HostTensor h);
    // Output i with an explicit ONNX shape (needed for rank > 4, where dims are folded).
    void out_shape(int i, ggml_tensor* t, DType dtype, const Shape& s);
    // Forwards input j unchanged to output i.
    void pass(int i, int j);

    // Messages carry node, op type and opset.
    [[noreturn]] void error(const std::string& what) const;
    std::string where() const;

    // A host-computed constant (index table, mask) as a ggml tensor.
    ggml_tensor* constant(const HostTensor& h);

    // ggml context helpers
    ggml_tensor* cont(ggml_tensor* x);
};

using LowerFn = void (*)(Lower&);

struct OpDef {
    const char* op_type;
    int since;              // first opset this implementation covers
    LowerFn ggml;           // builds ggml tensors; may be null
    LowerFn host;           // evaluates on the host; may be null
    std::vector<int> host_inputs;  // inputs that must be known on the host (shapes, axes, ...)
    bool math;              // computes new float values (vs. moving data)
    bool shape_only = false;  // reads only its input's shape (Shape, Size)
    bool control = false;     // drives subgraphs (If, Loop, Scan); its body nodes run one by one
};

// The newest implementation not above `opset`; null if none.
const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset);
// Every op type in the table (for docs and `info`).
std::vector<std::string> registered_ops();

// --- layout helpers: ONNX axis a of rank r is ggml dim r-1-a ---
inline int gdim(int rank, int axis) { return rank - 1 - axis; }
int norm_axis(const Lower& L, int64_t axis, int rank);
// ggml ne[4] for an ONNX shape of rank <= 4.
void shape_to_ne(const Lower& L, const Shape& s, int64_t ne[4]);
void shape_to_ne(const Shape& s, int64_t ne[4]);
// Whether `from` broadcasts to `to` by ggml's tiling once rank > 4 dims are folded.
bool folded_compatible(const Shape& from, const Shape& to);
Shape ne_to_shape(const ggml_tensor* t, int rank);
// Numpy-style broadcast of two shapes.
Shape broadcast_shapes(const Lower& L, const Shape& a, const Shape& b);
// Repeats x (ONNX shape `from`) up to shape `to`; returns x when nothing to do.
ggml_tensor* broadcast_to(Lower& L, ggml_tensor* x, const Shape& from, const Shape& to);
// Flattens x (ONNX shape s) to 2-D rows: ggml [prod(s[axis:]), prod(s[:axis])].
ggml_tensor* rows_from_axis(Lower& L, ggml_tensor* x, const Shape& s, int axis);
// ggml_mul_mat(a, b); on the CPU the shared dim (ne0) is zero-padded to a multiple of 16 when it is not one,
// because ggml's fast F32 sgemm (llamafile) needs it and the fallback is several times slower.
ggml_tensor* mul_mat(Lower& L, ggml_tensor* a, ggml_tensor* b);
// Reshapes x to ONNX shape s (x made contiguous if needed).
ggml_tensor* reshape_to(Lower& L, ggml_tensor* x, const Shape& s);

}  // namespace onnx2ggml
