// Graphs as tools write them, made regular once after loading: nodes sorted into topological order (the fp16
// converter appends its Casts after their consumers; onnxruntime sorts, so must we), one producer per name, and
// float `Constant` nodes turned into initializers, so that every pass and all weight preparation (packing,
// Winograd forms, BatchNorm folding) see paddle2onnx's and tf2onnx's Constant-node weights as the weights they are.
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "common/error.h"
#include "onnx/tidy_graph.h"

namespace onnx2ggml {

namespace {

// Names a node reads, its subgraphs' reads from the enclosing scope included.
void reads(const Node& n, std::vector<std::string>& out) {
    for (auto& i : n.inputs)
        if (!i.empty()) out.push_back(i);
    for (auto& a : n.attrs)
        if (a.g)
            for (const Node& s : a.g->nodes) reads(s, out);
}

// A node on a cycle among the unsorted nodes `left` (each has a producer in `left` for one of its reads).
const Node& node_on_cycle(const Graph& g, const std::vector<std::vector<int>>& deps, const std::vector<bool>& done) {
    int at = 0;
    while (done[size_t(at)]) at++;
    std::vector<bool> seen(g.nodes.size(), false);
    while (!seen[size_t(at)]) {
        seen[size_t(at)] = true;
        for (int d : deps[size_t(at)])
            if (!done[size_t(d)]) {
                at = d;
                break;
            }
    }
    return g.nodes[size_t(at)];
}

void sort_nodes(const std::string& path, Graph& g) {
    const size_t n = g.nodes.size();
    std::map<std::string, int> producer;
    for (size_t i = 0; i < n; i++)
        for (auto& o : g.nodes[i].outputs) {
            if (o.empty()) continue;
            auto [it, fresh] = producer.emplace(o, int(i));
            O2G_CHECK(fresh, path, ": value '", o, "' is produced twice, by ", g.nodes[size_t(it->second)].describe(),
                      " and by ", g.nodes[i].describe());
            O2G_CHECK(!g.initializers.count(o), path, ": ", g.nodes[i].describe(), " writes '", o,
                      "', which is also an initializer");
        }
    std::vector<std::vector<int>> deps(n), users(n);
    std::vector<int> waiting(n, 0);
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        std::vector<std::string> names;
        reads(g.nodes[i], names);
        std::set<int> ds;
        for (auto& name : names) {
            auto it = producer.find(name);
            if (it != producer.end() && it->second != int(i)) ds.insert(it->second);
            else if (it != producer.end()) {
                // A node reading its own output is a cycle of one.
                fail(path, ": the graph has a cycle through ", g.nodes[i].describe());
            }
        }
        for (int d : ds) {
            deps[i].push_back(d);
            users[size_t(d)].push_back(int(i));
            if (d > int(i)) sorted = false;
        }
        waiting[i] = int(ds.size());
    }
    if (sorted) return;
    // Kahn's algorithm, taking the earliest ready node first: a sorted graph keeps its order.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; i++)
        if (!waiting[i]) ready.push(int(i));
    std::vector<int> order;
    std::vector<bool> done(n, false);
    while (!ready.empty()) {
        int i = ready.top();
        ready.pop();
        order.push_back(i);
        done[size_t(i)] = true;
        for (int u : users[size_t(i)])
            if (--waiting[size_t(u)] == 0) ready.push(u);
    }
    if (order.size() != n)
        fail(path, ": the graph has a cycle through ", node_on_cycle(g, deps, done).describe());
    std::vector<Node> nodes;
    nodes.reserve(n);
    for (int i : order) nodes.push_back(std::move(g.nodes[size_t(i)]));
    g.nodes = std::move(nodes);
}

bool float_type(DType t) { return t == DType::FLOAT || t == DType::FLOAT16 || t == DType::BFLOAT16; }

// Float Constant nodes of the top-level graph become initializers (not graph outputs: those stay nodes).
void constants_to_initializers(Graph& g) {
    std::set<std::string> outputs, inputs;
    for (auto& o : g.outputs) outputs.insert(o.name);
    for (auto& i : g.inputs) inputs.insert(i.name);
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    for (Node& n : g.nodes) {
        const Attribute* a = n.op_type == "Constant" && n.domain.empty() && n.outputs.size() == 1 ? n.attr("value")
                                                                                                : nullptr;
        const std::string& out = n.outputs.empty() ? std::string() : n.outputs[0];
        if (a && a->type == AttrType::TENSOR && a->t && float_type(a->t->dtype) && (a->t->data || !a->t->nbytes) &&
            n.attrs.size() == 1 && !out.empty() && !outputs.count(out) && !inputs.count(out) &&
            !g.initializers.count(out)) {
            auto t = std::make_shared<TensorData>(*a->t);
            t->name = out;
            t->from_constant = true;
            g.initializers[out] = std::move(t);
            continue;
        }
        kept.push_back(std::move(n));
    }
    g.nodes = std::move(kept);
}

void tidy(const std::string& path, Graph& g, int depth) {
    for (Node& n : g.nodes)
        for (Attribute& a : n.attrs)
            if (a.g) tidy(path, *a.g, depth + 1);
    sort_nodes(path, g);
    if (depth == 0) constants_to_initializers(g);
}

}  // namespace

void tidy_graph(Model& m) { tidy(m.path, m.graph, 0); }

}  // namespace onnx2ggml
