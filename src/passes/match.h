// Pattern-matching helpers shared by fusion passes: producers, use counts and constants of the live graph.
#pragma once
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "onnx2ggml/host_tensor.h"
#include "passes/pipeline.h"

namespace onnx2ggml {

// Float element types a pattern's constants may have: fp16 converters write eps, scales, gamma and beta as
// FLOAT16 (BFLOAT16 likewise), and the fused op computes in f32 on their exact widened values.
inline bool float_dtype(DType t) { return t == DType::FLOAT || t == DType::FLOAT16 || t == DType::BFLOAT16; }

struct GraphIndex {
    const Model& m;
    GraphPlan& plan;
    std::map<std::string, int> uses, producer;

    GraphIndex(const Model& m, GraphPlan& p) : m(m), plan(p) {
        for (int idx : plan.live_nodes) count_uses(plan.node(m, idx));
        for (auto& o : m.graph.outputs) uses[o.name]++;
        for (int idx : plan.live_nodes)
            for (auto& o : plan.node(m, idx).outputs) producer[o] = idx;
    }
    // Uses by live nodes (as rewritten by earlier passes), including names read inside subgraphs.
    void count_uses(const Node& n) {
        for (auto& i : n.inputs) uses[i]++;
        for (auto& a : n.attrs)
            if (a.g)
                for (const Node& s : a.g->nodes) count_uses(s);
    }
    // The single live consumer of `v` with op type `op`, or -1.
    int only_consumer(const std::string& v, const char* op) {
        if (uses[v] != 1) return -1;
        for (int idx : plan.live_nodes) {
            const Node& n = plan.node(m, idx);
            for (auto& i : n.inputs)
                if (i == v) return n.op_type == op && n.domain.empty() ? idx : -1;
        }
        return -1;
    }
    // The single live consumer of `v`, whatever its op, or -1.
    int single_consumer(const std::string& v) {
        if (uses[v] != 1) return -1;
        for (int idx : plan.live_nodes)
            for (auto& i : plan.node(m, idx).inputs)
                if (i == v) return idx;
        return -1;
    }
    // Producer of v if it is `op` (default domain) and v has no other use; -1 otherwise.
    int sole(const std::string& v, const char* op) {
        auto it = producer.find(v);
        if (it == producer.end() || uses[v] != 1) return -1;
        const Node& n = plan.node(m, it->second);
        return n.op_type == op && n.domain.empty() ? it->second : -1;
    }
    const Node* producer_of(const std::string& v, const char* op) {
        auto it = producer.find(v);
        if (it == producer.end()) return nullptr;
        const Node& n = plan.node(m, it->second);
        return n.op_type == op && n.domain.empty() ? &n : nullptr;
    }
    // v, or the value it copies through Identity nodes (exporters share equal initializers that way).
    std::string through_identity(std::string v) {
        for (int hops = 0; hops < 8; hops++) {
            const Node* id = producer_of(v, "Identity");
            if (!id || id->inputs.empty()) break;
            v = id->inputs[0];
        }
        return v;
    }
    // An initializer, whether or not its data is loaded, through Identity nodes; null otherwise.
    const TensorData* initializer(const std::string& name) {
        auto it = m.graph.initializers.find(through_identity(name));
        return it != m.graph.initializers.end() ? it->second.get() : nullptr;
    }
    // Whether node idx is a Cast to a float type: an fp16 file keeps some ops in f32 between Casts (op_block_list).
    // Where a pattern reads past one, the ops around it take float constants, so its input is float too, and the
    // fused op computing in f32 on the f16 values loses nothing but the rounding onnxruntime would add.
    bool float_cast(int idx) {
        const Node& n = plan.node(m, idx);
        return n.op_type == "Cast" && n.domain.empty() && float_dtype(DType(int32_t(n.get_int("to", 0))));
    }
    // v's source through single-use float Casts, which go to `casts`.
    std::string before_casts(std::string v, std::vector<int>& casts) {
        for (int hops = 0; hops < 4; hops++) {
            int c = sole(v, "Cast");
            if (c < 0 || !float_cast(c)) break;
            casts.push_back(c);
            v = plan.node(m, c).inputs[0];
        }
        return v;
    }
    // The single consumer of v with op type `op`, past single-use float Casts (added to `casts`); -1 if none. v
    // becomes the value that consumer reads.
    int consumer_past_casts(std::string& v, const char* op, std::vector<int>& casts) {
        std::vector<int> seen;
        const std::string from = v;
        for (int hops = 0; hops < 4; hops++) {
            int n = single_consumer(v);
            if (n < 0) break;
            const Node& c = plan.node(m, n);
            if (c.op_type == op && c.domain.empty()) {
                casts.insert(casts.end(), seen.begin(), seen.end());
                return n;
            }
            if (!float_cast(n)) break;
            seen.push_back(n);
            v = c.outputs[0];
        }
        v = from;
        return -1;
    }
    // Constant data: an initializer or the output of a Constant node, through Identity nodes.
    const TensorData* constant(std::string v) {
        v = through_identity(v);
        auto it = m.graph.initializers.find(v);
        if (it != m.graph.initializers.end()) return it->second->data || it->second->nbytes == 0 ? it->second.get() : nullptr;
        const Node* cast = producer_of(v, "Cast");
        if (cast && cast->get_int("to", 0) == int64_t(DType::FLOAT) && !cast->inputs.empty()) {
            // an fp16 file's constant widened for an op kept in f32 (exact): its f16 (or bf16) data
            const TensorData* t = constant(cast->inputs[0]);
            return t && float_dtype(t->dtype) ? t : nullptr;
        }
        const Node* c = producer_of(v, "Constant");
        if (!c) return nullptr;
        const Attribute* a = c->attr("value");
        return a && a->type == AttrType::TENSOR && a->t && a->t->data ? a->t.get() : nullptr;
    }
};

// Attributes of the internal nodes passes create.
// The other operand of binary node n, v being one of its inputs.
inline const std::string& other(const Node& n, const std::string& v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }

inline Attribute int_attr(const std::string& name, int64_t v) {
    Attribute a;
    a.type = AttrType::INT;
    a.name = name;
    a.i = v;
    return a;
}
inline Attribute float_attr(const std::string& name, float v) {
    Attribute a;
    a.type = AttrType::FLOAT;
    a.name = name;
    a.f = v;
    return a;
}

// Element i of a float constant (float_dtype) as f32, decoded as every host value is (HostTensor::f64, which
// also reads raw_data at any alignment inside the protobuf).
inline float float_at(const TensorData& t, int64_t i) {
    HostTensor h;
    h.dtype = t.dtype;
    h.data = t.data;
    h.nbytes = t.nbytes;
    return float(h.f64(i));
}

// The relative distance at which a constant of type t stands for a wanted real value (sqrt 2, 0.044715): f32
// as before, or half a step of the narrower type (its rounding of that value).
inline double rounding_of(DType t) {
    return t == DType::FLOAT16 ? 0.5 / 1024 : t == DType::BFLOAT16 ? 0.5 / 128 : 1e-6;
}

// A constant float scalar (any shape with one element, f32, f16 or bf16); false if `v` is not one. `type`, if
// given, receives its element type.
inline bool scalar_constant(GraphIndex& g, const std::string& v, float& out, DType* type = nullptr) {
    const TensorData* t = g.constant(v);
    if (!t || !float_dtype(t->dtype) || t->numel() != 1) return false;
    out = float_at(*t, 0);
    if (type) *type = t->dtype;
    return true;
}

}  // namespace onnx2ggml
