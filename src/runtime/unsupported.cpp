#include "runtime/unsupported.h"

#include "common/error.h"
#include "ops/op.h"

namespace onnx2ggml {

static void scan_graph(const Model& m, const Graph& g, std::vector<UnsupportedOp>& r) {
    for (const Node& n : g.nodes) {
        int64_t opset = m.opset(n.domain);
        if (!find_op(n.domain, n.op_type, opset)) r.push_back({n.op_type, n.domain, n.name, opset});
        for (const auto& a : n.attrs)
            if (a.g) scan_graph(m, *a.g, r);  // subgraph bodies run too
    }
}

std::vector<UnsupportedOp> find_unsupported(const Model& m) {
    std::vector<UnsupportedOp> r;
    scan_graph(m, m.graph, r);
    return r;
}

void check_supported(const Model& m) {
    auto u = find_unsupported(m);
    if (u.empty()) return;
    std::string msg = m.path + ": " + std::to_string(u.size()) + " unsupported op" + (u.size() > 1 ? "s" : "") + ":";
    for (auto& o : u)
        msg += "\n  " + (o.domain.empty() ? "" : o.domain + ".") + o.op_type + " (node '" + o.node_name + "', opset " +
               std::to_string(o.opset) + ")";
    throw Error(msg);
}

}  // namespace onnx2ggml
