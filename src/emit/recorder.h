// The compile recorder: watches one graph build (at probe shapes) and writes it down as a ggml program.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ops/op.h"
#include "runtime/builder.h"

namespace onnx2ggml {

// How a host value is known when the program builds its graph.
struct HostExpr {
    enum Kind { Const, Sym, Var, Data, Bad } kind = Const;
    std::vector<std::string> e;  // Sym: one C++ expression per element (flat); Var: the HostTensor variable
    std::string why;             // Bad/Data: why it cannot be written down
};

// How a value no node output or graph input named is known (weights and constants a lowering added: Const).
HostExpr::Kind unnamed_kind(const Val& v);

// One tensor the GGUF file holds.
struct GgufEntry {
    std::string key;    // ONNX value name
    std::string field;  // member of the generated Weights struct
    ggml_type type;
    int64_t ne[4];
    std::vector<uint8_t> bytes;
};

class ProgramRecorder : public Recorder {
public:
    ProgramRecorder(const Model& m, Builder& b);

    // Recorder
    std::string tensor_text(const ggml_tensor* t) override;
    std::string ints_text(const Sym& s) override;
    void call(ggml_tensor* result, const std::string& text) override;
    std::string host_text(const HostArg& a) override;
    void host_call(int out, const std::string& text) override;
    void bind(const Val& v, ggml_tensor* t) override;
    void shape_call(const ggml_tensor* t, const std::string& text) override;
    void use(const Val& v, ggml_tensor* t) override;
    void alias(const std::string& to, const Val& from) override;
    void param_field(const Val& v, const std::string& field, char kind, int rank) override;
    bool wants_field(const std::string& field) override;
    void host_read(const Val& v) override;
    std::string branch_cond(const Val& v) override;
    void branch_end(int k, const std::vector<Val>& outs) override;
    bool loop_begin(const Val* trip, const Val* cond, std::vector<Val>& carried, Val& counter) override;
    void loop_end(const Val& cond_out, const std::vector<Val>& carried_out, const std::vector<Val>& scans) override;
    void node_begin(const Node& n, bool on_host) override;
    void node_end(Lower& L, bool on_host) override;

    // After the build: graph outputs.
    void finish();

    std::vector<std::string> prologue;                   // input tensors and named dims
    std::vector<std::string> node_code;                  // one block per live node (may be empty)
    std::vector<std::string> epilogue;                   // out[i] = ... or hout[i] = ...
    std::set<int> host_inputs;                           // graph inputs whose data the build reads (hin[i])
    std::vector<std::vector<int64_t>> node_shape;         // per node: rank, then ne of its first device output
    std::vector<DType> out_dtypes;                       // graph outputs as the program returns them
    std::vector<int> out_ranks;
    std::vector<std::string> failures;                   // "node (op): reason"
    bool shape_literals = false;                         // a rank > 4 shape was written as numbers
    std::vector<GgufEntry> weights;
    std::map<std::string, std::string> val_var;          // ONNX value -> C++ expression of its tensor

private:
    std::string ident(const std::string& value);
    std::string host_literal(const HostTensor& h);  // "" when too large
    std::string var_text(const HostExpr& h);          // a Var's variable, noting graph inputs it reads
    void classify_host_outputs(Lower& L);
    HostExpr shape_expr(Lower& L);
    void check_direct_reads(const Node& n, bool device);
    void restore_enclosing(const std::string& code);
    HostExpr eval_sym(Lower& L, const std::vector<const HostExpr*>& in, std::string& why);
    std::vector<std::string> host_elems(Lower& L, int i, bool& ok);
    void fail_node(const std::string& why);
    std::string scalar_text(const Val& v, bool& constant);  // a host scalar's C++ expression; constant: its literal
    std::string control_code(const Node& n, std::vector<std::string>& out_vars);  // src/emit/control_flow.cpp

    const Model& m_;
    Builder& b_;
    std::set<std::string> idents_;
    std::map<std::string, size_t> host_weight_entry_;  // weight -> its entry, added for a host read
    std::string host_weight_text(const Val& v, const HostTensor& h);  // "" when it stays a literal
    std::map<std::string, HostExpr> host_;              // by value name
    std::map<const HostTensor*, HostExpr> host_by_ptr_;  // ... and by data (values a subgraph renames)
    std::map<const ggml_tensor*, std::string> tensor_var_;  // every named tensor's C++ expression
    std::map<const ggml_tensor*, std::string> shape_var_;   // ... and the Ints variable of its rank > 4 ONNX shape
    std::map<const ggml_tensor*, std::string> local_;   // this node's tensors -> C++ names
    std::map<std::string, int> input_index_;            // graph input name -> index
    std::map<std::string, std::string> dim_names_;      // "input:axis" -> named dim variable
    const Node* node_ = nullptr;
    int node_idx_ = 0;
    std::vector<std::pair<ggml_tensor*, std::string>> calls_;  // this node's calls in order
    std::string node_fail_;
    std::vector<std::string> pre_;                       // statements this node needs before its calls
    std::vector<std::string> direct_reads_;              // non-constant host values the lowering read itself
    std::set<std::string> passed_;                       // ... and those it passed to an op-library call
    bool node_on_host_ = false;
    std::map<int, std::string> host_calls_;              // this node's host function calls by output
    std::vector<std::string> host_stmts_;                // ... written as statements
    std::vector<std::pair<std::string, std::string>> fields_;  // params fields the next call takes from values
    std::vector<std::string> field_vals_;                // ... and the values they come from
    std::string nested_code_;                            // code of the nodes a control-flow node ran (unrolled)
    struct Branch { std::string code; std::vector<std::string> outs; };
    std::string branch_cond_;                            // an If the program decides: its condition, and
    Branch branch_[2];                                   // ... its else (0) and then (1) code and outputs
    struct LoopRec {
        bool on = false;
        std::string iter, cond, trip;         // the counter, condition and trip count variables
        std::string head, body, tail;         // code before the for, inside it, after it
        std::vector<std::string> carried, scans;  // variables of the loop-carried values and scan outputs
        std::vector<bool> carried_host, scan_host;
    };
    LoopRec loop_;                                       // a Loop the program runs
    struct Saved;                                        // the enclosing node's state while a body node records
    std::vector<std::shared_ptr<Saved>> saved_;
};

}  // namespace onnx2ggml
