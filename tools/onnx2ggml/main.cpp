// onnx2ggml CLI: run and inspect ONNX models on ggml.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <new>
#include <stdexcept>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/platform.h"
#include "emit/emit.h"
#include "ir/ir.h"
#include "onnx2ggml/npy.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/program.h"
#include "onnx/mapped_files.h"
#include "ops/op.h"
#include "passes/pipeline.h"
#include "runtime/unsupported.h"

using namespace onnx2ggml;

namespace onnx2ggml {
int cmd_tokenize(const std::vector<std::string>& args);  // tokenize.cpp
int cmd_import_weights(const std::vector<std::string>& args, const char* usage);  // import_weights.cpp
}

namespace {

const char* kUsage =
    "usage:\n"
    "  onnx2ggml run MODEL.onnx --input [NAME=]FILE.npy ... --output-dir DIR [--threads N] [--device NAME]\n"
    "                [--rpc HOST:PORT[,HOST:PORT...]]   (ggml RPC servers: devices RPC0, RPC1, ...)\n"
    "                [--stats FILE.json] [--profile] [--weights f32|f16|bf16|q8_0]\n"
    "                [--precision exact|fast] [--portable] [--lora FILE.safetensors[:SCALE] ...]\n"
    "                [--embedding FILE[:TOKEN] ...] [--embedding-set clip_l|clip_g]   (textual inversion)\n"
    "                [--weights-file FILE.gguf] [--max-memory BYTES|512M|8G] [--progress]\n"
    "                [--vae-tiling] [--tile-size N] [--tile-overlap N]   (overlapping tiles of the 4-D input, one\n"
    "                 graph for all: memory of one tile; N in input elements, default 64 and size/4)\n"
    "                [--device-memory SIZE]   (cap on a GPU: weights that do not fit stay in host memory)\n"
    "                [--then --input ... --output-dir DIR2 [--stats FILE2.json]]...   (more runs, same session)\n"
    "  onnx2ggml bench MODEL.onnx --input [NAME=]FILE.npy ... [--threads N] [--runs K] [--warmup W] [--device NAME]\n"
    "                [--rpc HOST:PORT[,HOST:PORT...]]\n"
    "                [--new-shape [NAME=]FILE.npy ...]   (then times a graph build for these inputs' shapes)\n"
    "                [--profile] [--weights f32|f16|bf16|q8_0] [--precision exact|fast] [--portable]\n"
    "                [--lora FILE.safetensors[:SCALE] ...] [--weights-file FILE.gguf] [--max-memory SIZE]\n"
    "                [--progress] [--peak GFLOPS]   (with --profile: warns below 25% of this peak)\n"
    "                [--stats FILE.json]   (the first run's, as run writes them)\n"
    "                [--vae-tiling] [--tile-size N] [--tile-overlap N]\n"
    "                [--device-memory SIZE]\n"
    "  (a model of 1 GB or more shows its loading on a terminal; --progress shows it anyway)\n"
    "  onnx2ggml info MODEL.onnx\n"
    "  onnx2ggml compile MODEL.onnx -o DIR [--name NAME] [--example [NAME=]FILE.npy ...]\n"
    "  onnx2ggml import-weights MODEL.onnx CHECKPOINT.safetensors -o WEIGHTS.gguf\n"
    "                [--part auto|unet|vae|text_encoder|diffusers] [--allow-partial]\n"
    "  onnx2ggml ops [--by-domain]                     (every supported op type, one per line; contrib ops as\n"
    "                                                   domain:Op; --by-domain: grouped under each domain)\n"
    "  onnx2ggml tokenize [--vocab FILE] [--pad ID] [--length N] [--no-special] TEXT   (CLIP BPE token ids)\n"
    "                [--embedding FILE[:TOKEN] ...] [--width N] [--embedding-set clip_l|clip_g]\n"
    "                (textual-inversion tokens, ids from 49408; --width: the encoder's, for SDXL files)\n";

std::string sanitize(const std::string& name) {
    std::string s = name;
    for (char& c : s)
        if (!(isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    return s;
}

std::string dims_str(const ValueInfo& vi) {
    if (!vi.has_shape) return "(unknown shape)";
    std::string s = "[";
    for (size_t i = 0; i < vi.dims.size(); i++) {
        const Dim& d = vi.dims[i];
        s += (i ? ", " : "") + (d.known() ? std::to_string(d.value) : d.param.empty() ? "?" : d.param);
    }
    return s + "]";
}

// Fusions that fired, the model's own fused-kind ops, and nodes of fusible kinds left as they are.
void print_fusions(const Model& m, const GraphPlan& plan) {
    const FusionReport r = fusion_report(m, plan);
    auto line = [](const char* title, const std::map<std::string, int>& counts) {
        printf("%s:", title);
        if (counts.empty()) printf(" none");
        for (auto& [op, c] : counts) printf(" %s x%d", op.c_str(), c);
        printf("\n");
    };
    line("fusions", r.fused);
    if (!r.native.empty()) line("fused-kind ops in the model", r.native);
    printf("left unfused:");
    if (r.unfused.empty()) printf(" none");
    for (auto& [op, c] : r.unfused) printf("\n  %-22s x%d  (%s)", op.c_str(), c, fusion_note(op).c_str());
    printf("\n");
}

// {"A": 1, "B": 2}: op names are plain identifiers (and "+").
std::string json_counts(const std::map<std::string, int>& counts) {
    std::string s = "{";
    for (auto& [op, c] : counts) s += (s.size() > 1 ? ", \"" : "\"") + op + "\": " + std::to_string(c);
    return s + "}";
}

int cmd_info(const std::vector<std::string>& args) {
    if (args.size() != 1) throw Error(std::string("info takes one model path\n") + kUsage);
    auto m = load_model(args[0]);
    printf("model: %s\n", m->path.c_str());
    printf("ir_version: %lld, producer: %s %s\n", (long long)m->ir_version, m->producer_name.c_str(),
           m->producer_version.c_str());
    printf("opsets:");
    for (auto& [d, v] : m->opsets) printf(" %s=%lld", d.empty() ? "ai.onnx" : d.c_str(), (long long)v);
    printf("\ninputs:\n");
    for (auto& vi : m->graph.inputs) printf("  %s: %s %s\n", vi.name.c_str(), dtype_name(vi.dtype), dims_str(vi).c_str());
    printf("outputs:\n");
    for (auto& vi : m->graph.outputs) printf("  %s: %s %s\n", vi.name.c_str(), dtype_name(vi.dtype), dims_str(vi).c_str());
    printf("initializers: %zu\n", m->graph.initializers.size());
    // Node counts grouped by domain (ai.onnx first, then contrib domains such as com.microsoft).
    std::map<std::string, std::map<std::string, int>> counts;
    for (auto& n : m->graph.nodes) counts[n.domain == "ai.onnx" ? "" : n.domain][n.op_type]++;
    printf("nodes: %zu\n", m->graph.nodes.size());
    for (auto& [dom, ops] : counts) {
        int total = 0;
        for (auto& [op, c] : ops) total += c;
        printf("  %s: %d\n", dom.empty() ? "ai.onnx" : dom.c_str(), total);
        for (auto& [op, c] : ops) printf("    %-30s %d\n", op.c_str(), c);
    }
    auto uns = find_unsupported(*m);
    std::string ulist;
    std::set<std::string> useen;
    for (auto& u : uns) {
        ulist += "\n  " + (u.domain.empty() ? "" : u.domain + ".") + u.op_type + " (node '" + u.node_name + "', opset " +
                 std::to_string(u.opset) + ")";
        useen.insert(u.op_type);
    }
    printf("unsupported: %zu%s\n", uns.size(), ulist.c_str());
    // Host evaluation: ops with no ggml lowering, and shape subgraphs that must be known before the run.
    GraphPlan plan = plan_graph(*m);
    std::map<std::string, int> host;
    for (int idx : plan.live_nodes) {
        const Node& n = plan.node(*m, idx);
        const OpDef* d = find_op(n.domain, n.op_type, m->opset(n.domain));
        if (!d) continue;
        bool cone = false;
        for (auto& o : n.outputs) cone |= plan.need_host.count(o) > 0;
        if (!d->ggml || d->shape_only || cone) host[n.op_type]++;
    }
    printf("host-evaluated (shape/integer work):");
    if (host.empty()) printf(" none");
    for (auto& [op, c] : host) printf(" %s x%d", op.c_str(), c);
    printf("\n");
    print_fusions(*m, plan);
    return 0;
}

// The registered ops, one a line ("domain:Op" for contrib domains); --by-domain groups them under a header per
// domain with a count.
int cmd_ops(const std::vector<std::string>& args) {
    bool grouped = false;
    for (const auto& a : args) {
        if (a != "--by-domain") throw Error("unknown option " + a + "\n" + kUsage);
        grouped = true;
    }
    std::map<std::string, std::vector<std::string>> by_domain;
    for (const auto& op : registered_ops()) {
        if (!grouped) printf("%s\n", op.c_str());
        auto colon = op.find(':');
        if (colon == std::string::npos) by_domain["ai.onnx"].push_back(op);
        else by_domain[op.substr(0, colon)].push_back(op.substr(colon + 1));
    }
    if (!grouped) return 0;
    for (auto& [dom, ops] : by_domain) {
        printf("%s (%zu):\n", dom.c_str(), ops.size());
        for (auto& op : ops) printf("  %s\n", op.c_str());
    }
    return 0;
}

// Time per ONNX node and per ggml op from the last profiled run, largest first.
void print_profile(const Session& s) {
    const Graph& g = s.model().graph;
    std::map<std::string, const Node*> producer;
    for (const Node& n : g.nodes)
        for (auto& o : n.outputs) producer[o] = &n;
    std::map<std::string, double> by_node, by_op, by_pair;
    std::map<std::string, std::string> label;
    double total = 0;
    for (auto& e : s.profile()) {
        std::string v = e.value.substr(0, e.value.find(" ("));  // ggml appends " (view)" etc.
        auto dot = v.rfind('.');
        if (!producer.count(v) && dot != std::string::npos) v = v.substr(0, dot);
        auto it = producer.find(v);
        std::string key = it != producer.end() ? it->second->op_type + " '" + it->second->name + "'" : "(" + v + ")";
        by_node[key] += e.ms;
        by_op[e.ggml_op] += e.ms;
        by_pair[(it != producer.end() ? it->second->op_type : std::string("(other)")) + " -> " + e.ggml_op] += e.ms;
        total += e.ms;
    }
    auto print = [&](const char* title, const std::map<std::string, double>& m, size_t limit) {
        std::vector<std::pair<double, std::string>> v;
        for (auto& [k, ms] : m) v.emplace_back(ms, k);
        std::sort(v.rbegin(), v.rend());
        printf("%s (total %.2f ms):\n", title, total);
        for (size_t i = 0; i < v.size() && i < limit; i++)
            printf("  %9.3f ms %5.1f%%  %s\n", v[i].first, total > 0 ? 100 * v[i].first / total : 0.0, v[i].second.c_str());
    };
    // ONNX2GGML_PROFILE_NODES=N lists N nodes (scripts/flux_width.py sums them per block).
    const char* nodes = getenv("ONNX2GGML_PROFILE_NODES");
    print("time per ONNX node", by_node, nodes ? size_t(std::max(0L, atol(nodes))) : 25);
    print("time per ggml op", by_op, 40);
    print("time per ONNX op type -> ggml op", by_pair, 25);  // which nodes an op's time comes from
}

// ggml ops that read and write each element once: ggml's own, our broadcasting arithmetic ("CUSTOM:add_bcast"
// ...), and the MAP_CUSTOM unary/binary/where kernels (LRN is the one MAP_CUSTOM1 that is not, and rare).
bool is_elementwise(const std::string& op) {
    static const std::set<std::string> ops = {
        "ADD", "ADD1", "SUB", "MUL", "DIV", "SQR", "SQRT", "LOG", "SIN", "COS", "SCALE", "CLAMP", "LEAKY_RELU",
        "ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK", "SILU", "HARDSWISH",
        "HARDSIGMOID", "EXP", "EXPM1", "SOFTPLUS", "GELU_ERF", "XIELU", "FLOOR", "CEIL", "ROUND", "TRUNC",
        "REGLU", "GEGLU", "SWIGLU", "GEGLU_ERF", "GEGLU_QUICK", "MAP_CUSTOM1", "MAP_CUSTOM2", "MAP_CUSTOM3",
        "CUSTOM:gelu_erf", "CUSTOM:hard_swish"};
    const std::string bcast = "_bcast";
    return ops.count(op) || (op.rfind("CUSTOM:", 0) == 0 && op.size() > bcast.size() &&
                             op.compare(op.size() - bcast.size(), bcast.size(), bcast) == 0);
}

// The cliff detector: one line after the profile. A model far below the machine's peak whose time goes to
// elementwise passes, to broadcasts materialized by REPEAT or to CONT copies is most likely missing a fusion or a
// broadcast path rather than short of compute. ms is the run time the GFLOP/s are taken at; peak 0 = unknown.
void print_verdict(const Session& s, double gflop, double ms, double peak) {
    double total = 0, elem = 0, repeat = 0, cont = 0;
    for (auto& e : s.profile()) {
        total += e.ms;
        if (is_elementwise(e.ggml_op)) elem += e.ms;
        else if (e.ggml_op == "REPEAT") repeat += e.ms;
        else if (e.ggml_op == "CONT") cont += e.ms;
    }
    if (total <= 0) return;
    const double pct_e = 100 * elem / total, pct_r = 100 * repeat / total, pct_c = 100 * cont / total;
    const double gfs = ms > 0 ? gflop / (ms / 1e3) : 0, cliff = pct_e + pct_r + pct_c;
    printf("verdict: elementwise %.1f%%, REPEAT %.1f%%, CONT %.1f%% of the profiled time; %.1f GFLOP/s", pct_e, pct_r,
           pct_c, gfs);
    if (peak <= 0) {
        printf(", peak unknown (--peak GFLOPS or ONNX2GGML_PEAK_GFLOPS, from scripts/peak_flops.sh)\n");
        return;
    }
    printf(" = %.1f%% of peak %.0f", 100 * gfs / peak, peak);
    if (gfs < 0.25 * peak && cliff >= 50)
        printf("; WARNING: below 25%% of peak while elementwise/REPEAT/CONT take %.0f%% of the time: a fusion or a "
               "broadcast path is likely missing (compare with onnxruntime: scripts/bench.py)", cliff);
    printf("\n");
}

// The machine's fp32 peak in GFLOP/s from ONNX2GGML_PEAK_GFLOPS (0: unknown).
double env_peak() {
    const char* p = getenv("ONNX2GGML_PEAK_GFLOPS");
    return p ? std::atof(p) : 0;
}


std::map<std::string, Tensor> read_inputs(const Graph& g, const std::string& model,
                                          const std::vector<std::pair<std::string, std::string>>& inputs) {
    std::map<std::string, Tensor> feeds;
    size_t positional = 0;
    for (auto& [name, file] : inputs) {
        std::string n = name;
        if (n.empty()) {
            if (positional >= g.inputs.size())
                throw Error(model + ": more inputs given than the model has (" + std::to_string(g.inputs.size()) + ")");
            n = g.inputs[positional++].name;
        }
        DType want = DType::UNDEFINED;
        for (auto& vi : g.inputs)
            if (vi.name == n) want = vi.dtype;
        if (feeds.count(n)) throw Error("input '" + n + "' given twice");
        feeds[n] = read_npy(file, want);
    }
    return feeds;
}

// "--input NAME=FILE" or "--input FILE" (positional).
void add_input(std::vector<std::pair<std::string, std::string>>& inputs, const std::string& v) {
    auto eq = v.find('=');
    if (eq == std::string::npos) inputs.emplace_back("", v);
    else inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
}

// Options run and bench share. Defaults come from ONNX2GGML_DEVICE, ONNX2GGML_PRECISION and ONNX2GGML_PORTABLE, so
// a whole test suite can be pointed at another device unchanged.
SessionOptions default_options() {
    SessionOptions o;
    if (const char* d = getenv("ONNX2GGML_DEVICE")) o.device = d;
    if (const char* r = getenv("ONNX2GGML_RPC")) o.rpc = r;
    if (const char* p = getenv("ONNX2GGML_PRECISION")) o.precision = p;
    if (const char* p = getenv("ONNX2GGML_PORTABLE")) o.portable = std::string(p) == "1";
    return o;
}


// A whole number from `lo` up (tile sizes and overlaps).
int parse_count(const std::string& opt, const std::string& v, long lo) {
    char* end = nullptr;
    long x = strtol(v.c_str(), &end, 10);
    if (v.empty() || *end || x < lo || x > (1L << 20))
        throw Error(opt + " takes a whole number >= " + std::to_string(lo) + ", not '" + v + "'");
    return int(x);
}

template <typename Next>
bool session_option(const std::string& a, Next next, SessionOptions& opts) {
    if (a == "--threads" || a == "-t") opts.threads = std::atoi(next().c_str());
    else if (a == "--device") opts.device = next();
    else if (a == "--rpc") opts.rpc = next();
    else if (a == "--profile") opts.profile = true;
    else if (a == "--weights") opts.weights = next();
    else if (a == "--precision") opts.precision = next();
    else if (a == "--portable") opts.portable = true;
    else if (a == "--lora") opts.lora.push_back(parse_lora_arg(next()));
    else if (a == "--embedding") opts.embeddings.push_back(parse_embedding_arg(next()));
    else if (a == "--embedding-set") opts.embedding_set = next();
    else if (a == "--weights-file") opts.weights_file = next();
    else if (a == "--progress") opts.progress = true;
    else if (a == "--max-memory") opts.max_memory = o2g::parse_bytes(a, next());
    else if (a == "--vae-tiling") opts.tiling.size = opts.tiling.size ? opts.tiling.size : kVaeTileSize;
    else if (a == "--tile-size") opts.tiling.size = parse_count(a, next(), 1);
    else if (a == "--tile-overlap") opts.tiling.overlap = parse_count(a, next(), 0);  // with --vae-tiling/--tile-size
    else if (a == "--device-memory") opts.device_memory = o2g::parse_bytes(a, next());
    else return false;
    return true;
}

// --stats FILE.json: a run's figures, its ggml ops and the plan's fusions.
void write_stats(const std::string& stats_path, const Session& session, const RunStats& s) {
    std::ofstream f(platform::fs_path(stats_path));
    f << "{\"nodes\": " << s.nodes << ", \"ggml_nodes\": " << s.ggml_nodes << ", \"host_nodes\": " << s.host_nodes
      << ", \"host_float_nodes\": " << s.host_float_nodes << ", \"ggml_graph_nodes\": " << s.ggml_graph_nodes
      << ", \"build_ms\": " << s.build_ms << ", \"compute_ms\": " << s.compute_ms
      << ", \"compute_buffer_mb\": " << s.compute_buffer_mb << ", \"weights_mb\": " << s.weights_mb
      << ", \"cache_hit\": " << (s.cache_hit ? "true" : "false") << ", \"tiles\": " << s.tiles
      << ", \"transformed_weight_bytes\": " << s.transformed_weight_bytes
      << ", \"unread_weight_bytes\": " << s.unread_weight_bytes
      << ", \"device_weight_bytes\": " << s.device_weight_bytes << ", \"host_weight_bytes\": "
      << s.host_weight_bytes << ", \"copied_weight_bytes\": " << s.copied_weight_bytes << ", \"segments\": " << s.segments
      << ", \"carried_bytes\": " << s.carried_bytes << ", \"cpu_code\": \""
      << o2g::cpu_code_description() << "\", \"ggml_ops\": {";
    const char* sep = "";
    for (auto& [op, n] : s.ggml_ops) {
        f << sep << "\"" << op << "\": " << n;  // ggml op names are plain identifiers
        sep = ", ";
    }
    f << "}, \"splits\": " << s.splits << ", \"backends\": {";
    sep = "";
    for (auto& b : s.backends) {  // ggml backend names are plain identifiers
        f << sep << "\"" << b.backend << "\": {\"nodes\": " << b.nodes << ", \"compute_nodes\": " << b.compute_nodes
          << ", \"copy_mb\": " << b.copy_mb
          << ", \"buffer_bytes\": " << b.buffer_bytes << "}";
        sep = ", ";
    }
    const FusionReport fr = fusion_report(session.model(), plan_graph(session.model()));
    f << "}, \"fusions\": " << json_counts(fr.fused) << ", \"native_fused_kinds\": " << json_counts(fr.native)
      << ", \"unfused\": " << json_counts(fr.unfused) << "}\n";
}

int cmd_bench(const std::vector<std::string>& args) {
    std::string model;
    std::vector<std::pair<std::string, std::string>> inputs, new_inputs;
    SessionOptions opts = default_options();
    int runs = 10, warmup = 2;
    double peak = env_peak();
    std::string stats_path;  // the first run's
    for (size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error("option " + a + " needs a value\n" + kUsage);
            return args[++i];
        };
        if (a == "--input" || a == "-i") add_input(inputs, next());
        else if (a == "--new-shape") add_input(new_inputs, next());
        else if (session_option(a, next, opts)) {}
        else if (a == "--runs") runs = std::max(1, std::atoi(next().c_str()));
        else if (a == "--warmup") warmup = std::max(0, std::atoi(next().c_str()));
        else if (a == "--peak") peak = std::atof(next().c_str());
        else if (a == "--stats") stats_path = next();
        else if (!a.empty() && a[0] == '-') throw Error("unknown option " + a + "\n" + kUsage);
        else if (model.empty()) model = a;
        else throw Error("unexpected argument " + a + "\n" + kUsage);
    }
    if (model.empty()) throw Error(std::string("bench needs MODEL\n") + kUsage);
    auto t0 = std::chrono::steady_clock::now();
    auto session = Session::open(model, opts);
    double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    auto feeds = read_inputs(session->model().graph, model, inputs);
    session->run(feeds);  // first run builds the graph and uploads weights
    const RunStats first = session->stats();
    if (!stats_path.empty()) write_stats(stats_path, *session, first);
    for (int i = 0; i < warmup; i++) session->run(feeds);
    std::vector<double> times;
    for (int i = 0; i < runs; i++) {
        auto a = std::chrono::steady_clock::now();
        session->run(feeds);
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double median = sorted[sorted.size() / 2];
    if (sorted.size() % 2 == 0) median = 0.5 * (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]);
    printf("model: %s\ndevice: %s\ncpu code: %s\n", model.c_str(), session->device().c_str(),
           o2g::cpu_code_description().c_str());
    printf("load: %.1f ms, graph build: %.1f ms, first run compute: %.1f ms\n", load_ms, first.build_ms, first.compute_ms);
    if (!new_inputs.empty()) {  // what a user pays on changing resolution in an open session
        auto other = read_inputs(session->model().graph, model, new_inputs);
        session->run(other);
        const RunStats& s = session->stats();
        printf("new shape: graph build %.1f ms, first run compute %.1f ms, weights transformed %.1f MB\n", s.build_ms,
               s.compute_ms, double(s.transformed_weight_bytes) / 1048576.0);
        printf("first shape: weights transformed %.1f MB\n", double(first.transformed_weight_bytes) / 1048576.0);
    }
    printf("nodes: %d (%d ggml, %d host), ggml graph nodes: %d\n", first.nodes, first.ggml_nodes, first.host_nodes,
           first.ggml_graph_nodes);
    printf("runs: %d (after %d warm-up)\n", runs, warmup);
    printf("memory: weights %.1f MB, compute buffer %.1f MB (%.1f MB of intermediates without reuse)\n",
           first.weights_mb, first.compute_buffer_mb, first.unshared_mb);
    if (opts.device_memory)
        printf("device memory: budget %.1f MB, weights on the device %.1f MB, in host memory %.1f MB, copied per run "
               "%.1f MB\n", double(opts.device_memory) / 1048576.0, double(first.device_weight_bytes) / 1048576.0,
               double(first.host_weight_bytes) / 1048576.0, double(first.copied_weight_bytes) / 1048576.0);
    if (first.segments)
        printf("segments: %d (%.1f MB carried through host memory per run)\n", first.segments,
               double(first.carried_bytes) / 1048576.0);
    printf("work: %.2f GFLOP per run (dense conv/matmul/attention), %.1f GFLOP/s at the median\n", first.gflop,
           first.gflop / (median / 1e3));
    printf("peak RSS: %.1f MB\n", double(platform::peak_resident_bytes()) / (1024.0 * 1024.0));
    if (first.tiles) printf("tiles: %d per run (compute buffer: one tile's)\n", first.tiles);
    if (opts.profile) {
        print_profile(*session);
        print_verdict(*session, first.gflop, median, peak);
    }
    printf("median_ms=%.3f min_ms=%.3f\n", median, sorted.front());
    return 0;
}

int cmd_compile(const std::vector<std::string>& args) {
    std::string model;
    CompileOptions o;
    std::vector<std::pair<std::string, std::string>> examples;
    for (size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error("option " + a + " needs a value\n" + kUsage);
            return args[++i];
        };
        if (a == "-o" || a == "--output-dir") o.out_dir = next();
        else if (a == "--name") o.name = next();
        else if (a == "--example") add_input(examples, next());
        else if (!a.empty() && a[0] == '-') throw Error("unknown option " + a + "\n" + kUsage);
        else if (model.empty()) model = a;
        else throw Error("unexpected argument " + a + "\n" + kUsage);
    }
    if (model.empty() || o.out_dir.empty()) throw Error(std::string("compile needs MODEL and -o DIR\n") + kUsage);
    auto m = load_model(model);
    check_supported(*m);
    o.examples = read_inputs(m->graph, model, examples);
    std::string name = compile_model(*m, o);
    printf("wrote %s/{%s.h, %s.cpp, main.cpp, CMakeLists.txt, %s.gguf}\n", o.out_dir.c_str(), name.c_str(), name.c_str(),
           name.c_str());
    printf("build: cmake -S %s -B %s/build && cmake --build %s/build   ->  %s/build/%s\n", o.out_dir.c_str(),
           o.out_dir.c_str(), o.out_dir.c_str(), o.out_dir.c_str(), name.c_str());
    return 0;
}

int cmd_run(const std::vector<std::string>& args) {
    std::string model;
    // One run per group; `--then` starts the next, in the same session (graph cache and weights shared).
    struct RunArgs {
        std::vector<std::pair<std::string, std::string>> inputs;
        std::string out_dir, stats_path;
    };
    std::vector<RunArgs> runs(1);
    SessionOptions opts = default_options();
    for (size_t i = 0; i < args.size(); i++) {
        const std::string& a = args[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= args.size()) throw Error("option " + a + " needs a value\n" + kUsage);
            return args[++i];
        };
        if (a == "--input" || a == "-i") add_input(runs.back().inputs, next());
        else if (a == "--output-dir" || a == "-o") runs.back().out_dir = next();
        else if (session_option(a, next, opts)) {}
        else if (a == "--stats") runs.back().stats_path = next();
        else if (a == "--then") runs.emplace_back();
        else if (!a.empty() && a[0] == '-') throw Error("unknown option " + a + "\n" + kUsage);
        else if (model.empty()) model = a;
        else throw Error("unexpected argument " + a + "\n" + kUsage);
    }
    if (model.empty()) throw Error(std::string("run needs MODEL and --output-dir\n") + kUsage);
    for (const RunArgs& r : runs)
        if (r.out_dir.empty()) throw Error(std::string("run needs MODEL and --output-dir\n") + kUsage);
    auto session = Session::open(model, opts);
    const Graph& g = session->model().graph;
    for (const RunArgs& r : runs) {
        const std::string& out_dir = r.out_dir;
        const std::string& stats_path = r.stats_path;
        auto feeds = read_inputs(session->model().graph, model, r.inputs);
        auto outs = session->run(feeds);
        const std::filesystem::path dir = platform::fs_path(out_dir);
        std::error_code ec;
        if (!std::filesystem::exists(dir, ec)) {
            if (!std::filesystem::create_directory(dir, ec)) throw Error("cannot create output directory '" + out_dir + "'");
        } else if (!std::filesystem::is_directory(dir, ec)) throw Error("'" + out_dir + "' is not a directory");
        std::set<std::string> used;
        for (size_t i = 0; i < outs.size(); i++) {
            std::string base = sanitize(g.outputs[i].name), f = base;
            for (int k = 1; used.count(f); k++) f = base + "_" + std::to_string(k);
            used.insert(f);
            std::string path = out_dir + "/" + f + ".npy";
            write_npy(path, outs[i]);
            printf("%s: %s %s -> %s\n", g.outputs[i].name.c_str(), dtype_name(outs[i].dtype), shape_str(outs[i].shape).c_str(),
                   path.c_str());
        }
        const RunStats& s = session->stats();
        if (opts.profile) {
            print_profile(*session);
            print_verdict(*session, s.gflop, s.compute_ms, env_peak());
        }
        if (!stats_path.empty()) write_stats(stats_path, *session, s);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> argv8 = platform::utf8_args(argc, argv);  // file names as UTF-8 everywhere
    if (argv8.size() < 2) {
        fputs(kUsage, stderr);
        return 2;
    }
    std::string cmd = argv8[1];
    std::vector<std::string> args(argv8.begin() + 2, argv8.end());
    install_sigbus_guard();  // a weights file truncated while mapped: an error naming it, not a crash
    // What the command was working on, for the out-of-memory errors that carry no context of their own.
    std::string subject = cmd;
    for (const auto& a : args)
        if (!a.empty() && a[0] != '-') {
            subject = cmd + " " + a;
            break;
        }
    try {
        if (cmd == "run") return cmd_run(args);
        if (cmd == "info") return cmd_info(args);
        if (cmd == "compile") return cmd_compile(args);
        if (cmd == "ops") return cmd_ops(args);
        if (cmd == "bench") return cmd_bench(args);
        if (cmd == "tokenize") return cmd_tokenize(args);
        if (cmd == "import-weights") return cmd_import_weights(args, kUsage);
        if (cmd == "--help" || cmd == "-h" || cmd == "help") {
            fputs(kUsage, stdout);
            return 0;
        }
        fprintf(stderr, "onnx2ggml: error: unknown command '%s'\n%s", cmd.c_str(), kUsage);
        return 2;
    } catch (const std::bad_alloc&) {
        fprintf(stderr, "onnx2ggml: error: %s: out of memory (std::bad_alloc); a size check is missing, "
                "please report it\n", subject.c_str());
        return 1;
    } catch (const std::length_error& e) {
        fprintf(stderr, "onnx2ggml: error: %s: a size too large for memory (std::length_error: %s); a size check "
                "is missing, please report it\n", subject.c_str(), e.what());
        return 1;
    } catch (const std::exception& e) {
        fprintf(stderr, "onnx2ggml: error: %s\n", e.what());
        return 1;
    }
}
