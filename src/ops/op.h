// The op-lowering interface: one function per ONNX op, registered in one table (ops/registry.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ggml.h"
#include "ir/ir.h"
#include "onnx2ggml/ops.h"
#include "ops/tensor.h"

namespace onnx2ggml {

class Builder;
struct Lower;

// Host integers an op needs to build its graph (Reshape's shape, Slice's starts), with the value they came
// from, so that `compile` can write them as expressions of the input dims rather than as numbers.
struct Sym {
    o2g::Ints v;
    const Val* src = nullptr;  // null: a literal the table row made from attributes
    bool shape = false;        // v is src's shape, not its data (Lower::shape_sym)
};

// A host value as an argument of an op-library host function (see onnx2ggml/ops/host.h), with the value it
// came from, so that `compile` can write it as the program's variable for that value.
struct HostArg {
    const HostTensor* h = nullptr;
    const Val* src = nullptr;  // null: a literal the table row made
};

// Watches a graph build and writes it down as C++ (src/emit). Null in `run`.
class Recorder {
public:
    virtual ~Recorder() = default;
    virtual std::string tensor_text(const ggml_tensor* t) = 0;  // "" when the tensor has no C++ name
    virtual std::string ints_text(const Sym& s) = 0;            // "" when not expressible
    virtual void call(ggml_tensor* result, const std::string& text) = 0;
    virtual std::string host_text(const HostArg& a) = 0;  // "" when not expressible
    // Output `out` of the current node is the host function call `text`.
    virtual void host_call(int out, const std::string& text) = 0;
    // A host value (weight, constant, shape arithmetic) became tensor t.
    virtual void bind(const Val& v, ggml_tensor* t) = 0;
    // Tensor t's ONNX shape (rank > 4, which ne folds) is the op-library shape function call `text`.
    virtual void shape_call(const ggml_tensor* t, const std::string& text) = 0;
    // Params field `field` of the next call holds value v's data (kind 'f': one float, 'F': a float vector).
    // 'a': an ONNX axis of a rank-`rank` tensor, as a ggml dim.
    virtual void param_field(const Val& v, const std::string& field, char kind, int rank = 0) = 0;
    // Whether params field `field` of the next call waits for a param_field value (so is written even at its default).
    virtual bool wants_field(const std::string& field) = 0;
    // A control-flow lowering bound value `from` under the new name `to` (a subgraph input, a loop counter).
    virtual void alias(const std::string& to, const Val& from) = 0;
    // The lowering took value v's tensor t (through Lower::t).
    virtual void use(const Val& v, ggml_tensor* t) = 0;
    // The lowering read value v's host data directly (not through Lower::sym).
    virtual void host_read(const Val& v) = 0;
    // An If on value v: "" when v is a constant of the program, else the C++ condition the program tests. The lowering
    // then builds both branches, each followed by branch_end (k = 1: then, 0: else) with its outputs.
    virtual std::string branch_cond(const Val& v) = 0;
    virtual void branch_end(int k, const std::vector<Val>& outs) = 0;
    // A Loop whose trip count or condition is not a constant of the program: loop_begin returns true, and the
    // lowering records iteration 0 (with `counter` and `carried` swapped for the stand-ins loop_begin makes) up to
    // loop_end, then builds the other iterations unrecorded. False: the loop is unrolled as usual.
    virtual bool loop_begin(const Val* trip, const Val* cond, std::vector<Val>& carried, Val& counter) = 0;
    virtual void loop_end(const Val& cond_out, const std::vector<Val>& carried_out, const std::vector<Val>& scans) = 0;
    // Around each node: its lowering ran on the host or built ggml tensors.
    virtual void node_begin(const Node& n, bool on_host) = 0;
    virtual void node_end(Lower& L, bool on_host) = 0;
};

// C++ text of call arguments, for the recorder.
std::string arg_text(Recorder& r, ggml_tensor* t);
std::string arg_text(Recorder& r, const Sym& s);
std::string arg_text(Recorder& r, const o2g::Ints& v);
std::string arg_text(Recorder& r, int64_t v);
inline std::string arg_text(Recorder& r, int v) { return arg_text(r, int64_t(v)); }
std::string arg_text(Recorder& r, float v);
inline std::string arg_text(Recorder& r, double v) { return arg_text(r, float(v)); }
std::string arg_text(Recorder& r, bool v);
std::string arg_text(Recorder& r, ggml_type t);
std::string arg_text(Recorder& r, ggml_op_pool p);
std::string arg_text(Recorder& r, const HostArg& a);
std::string arg_text(Recorder& r, const std::vector<HostArg>& a);
std::string arg_text(Recorder& r, DType t);
// A params struct as a designated initializer of the fields that differ from a default-constructed one ("{}" when
// none), plus those the recorder fills from values (Recorder::param_field).
std::string params_text(Recorder& r, const o2g::FieldWriter& w, const o2g::FieldWriter& defaults);
template <typename P>
auto arg_text(Recorder& r, const P& p) -> decltype(p.fields(std::declval<o2g::FieldWriter&>()), std::string()) {
    o2g::FieldWriter w, d;
    p.fields(w);
    const P defaults{};
    defaults.fields(d);
    return params_text(r, w, d);
}
inline const HostTensor& call_arg(const HostArg& a) { return *a.h; }
inline const HostTensor& call_arg(HostArg& a) { return *a.h; }
inline const HostTensor& call_arg(HostArg&& a) { return *a.h; }
std::vector<HostTensor> call_arg(const std::vector<HostArg>& a);
inline std::vector<HostTensor> call_arg(std::vector<HostArg>& a) { return call_arg(std::as_const(a)); }
inline std::vector<HostTensor> call_arg(std::vector<HostArg>&& a) { return call_arg(std::as_const(a)); }
inline const o2g::Ints& call_arg(const Sym& s) { return s.v; }
inline const o2g::Ints& call_arg(Sym& s) { return s.v; }
inline const o2g::Ints& call_arg(Sym&& s) { return s.v; }
template <typename A>
A&& call_arg(A&& a) { return std::forward<A>(a); }

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

    // Host integers of input i for an op-library call (see Sym).
    Sym sym(int i);
    // Input i's host values read into params field `field` of the next O2G_CALL; compile writes that field as the
    // program's value, so that a value fed as an input stays data (Clip's bounds, a loss's class weights).
    std::vector<float> param_floats(int i, const char* field);
    float param_float(int i, const char* field);
    // Input i's single value as an ONNX axis of a rank-`rank` tensor, returned (and written) as a ggml dim.
    int param_axis(int i, const char* field, int rank);
    // Input i's ONNX shape for an op-library call, written by `compile` as an expression of the value it belongs to.
    Sym shape_sym(int i) { return Sym{shape(i), &in(i), true}; }
    o2g::Ctx& octx();
    Recorder* rec();

    // Calls an op-library function (first parameter o2g::Ctx&) or a ggml function (ggml_context*) and, when
    // `compile` records the build, writes the same call down. Use through O2G_CALL.
    template <typename... P, typename... A>
    ggml_tensor* call(const char* name, ggml_tensor* (*fn)(o2g::Ctx&, P...), A&&... a) {
        ggml_tensor* r = fn(octx(), call_arg(a)...);
        if (Recorder* rc = rec()) record(*rc, name, r, {arg_text(*rc, a)...});
        return r;
    }
    template <typename... P, typename... A>
    ggml_tensor* call(const char* name, ggml_tensor* (*fn)(ggml_context*, P...), A&&... a) {
        ggml_tensor* r = fn(ctx, call_arg(a)...);
        if (Recorder* rc = rec()) record(*rc, name, r, {arg_text(*rc, a)...});
        return r;
    }
    void record(Recorder& r, const char* name, ggml_tensor* result, const std::vector<std::string>& args);

    // Output i from tensor t, of ONNX rank > 4 with the shape an op-library shape function computes (from the
    // input's shape and the op's arguments), recorded like call(): a compiled program's shape then follows input
    // data (Unsqueeze's axes). Use O2G_OUT_SHAPE.
    template <typename... P, typename... A>
    void out_shape_call(int i, ggml_tensor* t, DType dt, const char* name, o2g::Ints (*fn)(P...), A&&... a) {
        out_shape(i, t, dt, fn(call_arg(a)...));
        if (Recorder* rc = rec()) {
            std::vector<std::string> args = {arg_text(*rc, a)...};
            std::string text = std::string(name) + "(";
            for (size_t k = 0; k < args.size(); k++) {
                if (args[k].empty()) return;  // the recorder has failed the node
                text += (k ? ", " : "") + args[k];
            }
            rc->shape_call(t, text + ")");
        }
    }

    // Input i's host data as an argument of a host function (see HostArg).
    HostArg hv(int i);
    // Output o from an op-library host function (onnx2ggml/ops/host.h), recorded like call(). Use O2G_HOST.
    template <typename... P, typename... A>
    void host_out(int o, const char* name, HostTensor (*fn)(P...), A&&... a) {
        out_host(o, fn(call_arg(a)...));
        if (Recorder* rc = rec()) {
            std::vector<std::string> args = {arg_text(*rc, a)...};
            std::string text = std::string(name) + "(";
            for (size_t k = 0; k < args.size(); k++) {
                if (args[k].empty()) return rc->host_call(o, "");
                text += (k ? ", " : "") + args[k];
            }
            rc->host_call(o, text + ")");
        }
    }
    bool reading_sym_ = false;
};

// Whether output i is wanted.
inline bool wanted_out(const Lower& L, size_t i) { return L.node.outputs.size() > i && !L.node.outputs[i].empty(); }

// Output 0 as y with input `like`'s type and shape (elementwise ops).
inline void out_same(Lower& L, ggml_tensor* y, int like = 0) { L.out_shape(0, y, L.dtype(like), L.shape(like)); }

// An `axes` attribute as a Sym (Squeeze, Unsqueeze and the reductions before their axes became an input).
inline Sym axes_attr(Lower& L) { return Sym{L.node.get_ints("axes"), nullptr}; }

// O2G_CALL(L, o2g::conv2d, x, w, b, params): one op-library or ggml call, run and (in compile) recorded.
#define O2G_CALL(L, fn, ...) (L).call(#fn, fn, __VA_ARGS__)
// O2G_HOST(L, 0, o2g::host_range, L.hv(0), L.hv(1), L.hv(2)): output 0 from a host function, recorded.
#define O2G_HOST(L, o, fn, ...) (L).host_out(o, #fn, fn, __VA_ARGS__)
// O2G_OUT_SHAPE(L, 0, y, dtype, o2g::unsqueeze_shape, L.shape_sym(0), axes): output 0 of rank > 4, its shape recorded.
#define O2G_OUT_SHAPE(L, o, t, dt, fn, ...) (L).out_shape_call(o, t, dt, #fn, fn, __VA_ARGS__)

using LowerFn = void (*)(Lower&);

// One row of the op table, with named fields: {.op = "Conv", .since = 1, .ggml = lower_Conv, .math = true}.
struct OpDef {
    const char* op = "";
    const char* domain = "";       // "" is ai.onnx; contrib ops name theirs ("com.microsoft")
    int since = 1;                 // first opset this row covers; the newest row not above the model's opset wins
    const char* accepts = "";      // what a node must be: counts, ranks, dtypes, attributes (see ops/accepts.cpp)
    LowerFn ggml = nullptr;        // builds ggml tensors through the op library
    LowerFn host = nullptr;        // evaluates on the host (shape, integer and boolean work)
    std::vector<int> host_inputs;  // inputs that must be known on the host (shapes, axes, ...)
    std::vector<int> build_time_inputs;  // inputs worth knowing on the host when they can be (a fused scale)
    bool math = false;             // computes new float values (vs. moving data)
    bool shape_only = false;       // reads only its input's shape (Shape, Size)
    bool control = false;          // drives subgraphs (If, Loop, Scan); its body nodes run one by one
    double (*flops)(Lower&) = nullptr;  // dense multiply-adds x 2 per run (share-of-peak figures); null: not counted
};

// Throws a one-line error (node, input or attribute, rule) when the node breaks its row's `accepts` spec.
void check_accepts(const Lower& L, const OpDef& d);
// Its input and output counts alone, before the graph passes read the node (ops without a row pass).
void check_counts(const Model& m, const Node& n);
// The newest implementation not above `opset`; null if none.
const OpDef* find_op(const std::string& domain, const std::string& op_type, int64_t opset);
// Every op type in the table (for docs and `info`), contrib ops as "domain:op".
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

}  // namespace onnx2ggml
