// remove_dead_nodes: keep only nodes that some graph output depends on.
#include <set>

#include "passes/pipeline.h"

namespace onnx2ggml {

// Names a subgraph reads, including values of the enclosing graph it captures.
static void subgraph_reads(const Graph& g, std::set<std::string>& out) {
    for (const Node& n : g.nodes) {
        for (const auto& i : n.inputs)
            if (!i.empty()) out.insert(i);
        for (const auto& a : n.attrs)
            if (a.g) subgraph_reads(*a.g, out);
    }
    for (const auto& o : g.outputs) out.insert(o.name);
}

void remove_dead_nodes(const Model& m, GraphPlan& plan) {
    std::set<std::string> needed;
    for (const auto& o : m.graph.outputs) needed.insert(o.name);
    std::vector<int> live;
    for (auto it = plan.live_nodes.rbegin(); it != plan.live_nodes.rend(); ++it) {
        const Node& n = plan.node(m, *it);
        bool used = false;
        for (const auto& o : n.outputs)
            if (!o.empty() && needed.count(o)) used = true;
        if (!used) continue;
        live.push_back(*it);
        for (const auto& i : n.inputs)
            if (!i.empty()) needed.insert(i);
        for (const auto& a : n.attrs)
            if (a.g) subgraph_reads(*a.g, needed);
    }
    plan.live_nodes.assign(live.rbegin(), live.rend());
}

}  // namespace onnx2ggml
