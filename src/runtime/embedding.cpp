// Textual inversion on ONNX text encoders (src/runtime/embedding.h): table tracing and the appended rows.
#include "runtime/embedding.h"

#include <cstdio>
#include <map>

#include "common/error.h"
#include "lora/embedding.h"
#include "onnx2ggml/host_tensor.h"
#include "runtime/builder.h"
#include "runtime/lora.h"

namespace onnx2ggml {

namespace {

bool is_graph_input(const Graph& g, const std::string& name) {
    for (const ValueInfo& vi : g.inputs)
        if (vi.name == name) return true;
    return false;
}

}  // namespace

std::string token_embedding_table(const Model& m) {
    const Graph& g = m.graph;
    std::map<std::string, const Node*> producer;
    for (const Node& n : g.nodes)
        for (const std::string& o : n.outputs) producer[o] = &n;
    // Back through the ops exporters put between a value and its source (casts, reshapes of the ids).
    auto source = [&](std::string v) {
        for (int step = 0; step < 8 && !g.initializers.count(v) && !is_graph_input(g, v); step++) {
            auto p = producer.find(v);
            if (p == producer.end() || p->second->inputs.empty()) break;
            const std::string& op = p->second->op_type;
            if (op != "Cast" && op != "Identity" && op != "Reshape" && op != "Flatten" && op != "Unsqueeze" &&
                op != "Squeeze" && op != "View")
                break;
            v = p->second->inputs[0];
        }
        return v;
    };
    std::string table, from;
    for (const Node& n : g.nodes) {
        if (!n.domain.empty() || n.op_type != "Gather" || n.inputs.size() < 2 || n.get_int("axis", 0) != 0) continue;
        std::string ids = source(n.inputs[1]), w = source(n.inputs[0]);
        auto init = g.initializers.find(w);
        if (!is_graph_input(g, ids) || init == g.initializers.end() || init->second->dims.size() != 2) continue;
        // Several candidates: the one read by input_ids wins, else the first.
        if (table.empty() || (ids == "input_ids" && from != "input_ids")) table = w, from = ids;
    }
    return table;
}

void apply_embeddings(Model& m, const std::vector<EmbeddingFile>& files, const std::string& prefer, bool quiet) {
    if (files.empty()) return;
    std::string table = token_embedding_table(m);
    O2G_CHECK(!table.empty(), m.path, ": --embedding ", files[0].path,
              ": no token-embedding table found (a Gather of a [vocab, width] weight by a graph input such as "
              "input_ids); only text encoders take embeddings");
    const TensorData& td = *m.graph.initializers.at(table);
    const int64_t vocab = td.dims[0], width = td.dims[1];
    std::vector<float> rows = initializer_host(td).to_f32();
    int64_t added = 0;
    const std::vector<float> more =
        o2g::embedding_rows(files, width, prefer, [&](const o2g::Embedding& e, const o2g::EmbeddingVectors& v) {
            added += v.count;
            if (!quiet)
                fprintf(stderr, "embedding %s: '%s' (%lld vector%s of %lld) -> ids %lld..%lld of %s\n", e.path.c_str(),
                        e.token.c_str(), (long long)v.count, v.count == 1 ? "" : "s", (long long)width,
                        (long long)(vocab + added - v.count), (long long)(vocab + added - 1), table.c_str());
        });
    rows.insert(rows.end(), more.begin(), more.end());
    set_initializer(m, table, rows, {vocab + added, width});
}

}  // namespace onnx2ggml
