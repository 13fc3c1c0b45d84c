// onnx2ggml public API: load an ONNX model and run it on a ggml backend.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx2ggml/dtype.h"
#include "onnx2ggml/embedding.h"
#include "onnx2ggml/lora.h"
#include "onnx2ggml/tensor.h"
#include "onnx2ggml/tiling.h"

namespace onnx2ggml {

struct Model;

struct SessionOptions {
    int threads = 0;          // 0: all cores
    std::string device;       // ggml device name (e.g. "CPU", "CUDA0"); empty: best available
    // ggml RPC servers, "HOST:PORT[,HOST:PORT...]", whose devices (RPC0, RPC1, ...) join the registry before `device`
    // is looked up (docs/backends.md).
    std::string rpc;
    bool quiet = false;       // do not print the device on open
    bool profile = false;     // time every ggml node (slower: one synchronisation per node)
    // Storage of constant MatMul/Gemm and convolution weights: "f32" (exact), or "f16", "bf16", "q8_0" (less
    // memory, less exact: ggml then also rounds the activations they multiply; faster only where the CPU has dot
    // products for the type; docs/performance.md). "": f32, but f16 with precision "fast" off the CPU.
    std::string weights;
    // What the backend may round: "exact" keeps f32 everywhere (on Vulkan: no f16 inside matrix shaders; the same
    // 1e-4 bars as the CPU), "fast" lets it use f16 where it is faster. The CPU computes in f32 either way.
    std::string precision = "exact";
    // Use ggml-op compositions instead of our CPU kernels even on the CPU: the path other backends take, so it can
    // be tested here.
    bool portable = false;
    // LoRA files merged into the weights when the session opens (see onnx2ggml/lora.h).
    std::vector<LoraFile> lora;
    // Textual-inversion embeddings whose rows are appended to a CLIP text encoder's token-embedding table when the
    // session opens, in order (see onnx2ggml/embedding.h); the tokenizer gives their tokens the same ids.
    std::vector<EmbeddingFile> embeddings;
    // Which set of an SDXL embedding file to use where both fit the encoder's width: "clip_l", "clip_g" ("": the first).
    std::string embedding_set;
    // A weights GGUF (from `onnx2ggml import-weights` or `compile`) whose tensors replace the initializers of the
    // same names when the session opens (before any LoRA is merged).
    std::string weights_file;
    // Bytes a graph's compute buffer plus its host tensors may take; larger graphs are refused, naming their
    // largest tensor, before anything is allocated. 0: the machine's memory (RAM, or the cgroup limit if smaller).
    size_t max_memory = 0;
    // Bytes the session may keep on a GPU: each graph's compute buffer first, then as many weights as fit; the
    // other weights stay in host memory and are copied to the device as the nodes reading them run (the same device
    // computes every node, so results equal the unlimited run's). A graph whose compute buffer alone does not fit
    // runs in consecutive segments that do (RunStats::segments). 0: no cap. Refused on the CPU device
    // (docs/backends.md).
    size_t device_memory = 0;
    // A progress line on stderr while a model of 1 GB or more reads and converts its weights, even when stderr is not
    // a terminal (on a terminal it is shown anyway).
    bool progress = false;
    // Tiled runs of a fully-convolutional image model (onnx2ggml/tiling.h): with tiling.size > 0, run() cuts the
    // 4-D input into overlapping tiles that share one graph, so memory is one tile's (`--vae-tiling`).
    TileOptions tiling;
};

// Where the scheduler put a graph's nodes: per backend, its nodes, the nodes that compute (views and reshapes
// aside), and the bytes copied into it from other backends per run.
struct BackendShare {
    std::string backend;
    int nodes = 0, compute_nodes = 0;
    double copy_mb = 0;
    size_t buffer_bytes = 0;  // this backend's compute buffer (device_memory caps the device's)
};

// One timed ggml node; `value` is the ONNX value it computes (intermediates carry ".k").
struct ProfileEntry {
    std::string value;
    std::string ggml_op;
    double ms = 0;
};

struct RunStats {
    int nodes = 0;            // ONNX nodes that ran (after dead-code removal)
    int ggml_nodes = 0;       // lowered to ggml
    int host_nodes = 0;       // evaluated on the host (shape, integer and boolean work)
    int host_float_nodes = 0; // float math that had to run on the host
    bool cache_hit = false;   // graph reused from an earlier run with the same shapes
    double build_ms = 0, compute_ms = 0;  // a tiled run's: summed over its tiles
    int tiles = 0;            // tiles of a tiled run (SessionOptions::tiling), 0 when untiled
    int ggml_graph_nodes = 0;
    std::map<std::string, int> ggml_ops;  // ggml graph nodes per op (GROUP_NORM, SOFT_MAX, ...): shows fusions
    double compute_buffer_mb = 0;  // intermediates as allocated by ggml-alloc (memory reused, ops in place)
    double unshared_mb = 0;        // the same intermediates if none shared memory
    double weights_mb = 0;         // weights this run's graph reads, transformed forms in place of their originals
    double gflop = 0;              // dense conv/matmul/attention work per run (direct-convolution count)
                                   // (a tiled run's: all tiles')
    int splits = 0;                          // graph pieces the scheduler runs one after another
    std::vector<BackendShare> backends;      // main device first
    // Weight bytes transformed or copied to the device while building this run's graph (0 on a cache hit, and
    // for a new shape once the session has prepared its weights: they are kept per session).
    size_t transformed_weight_bytes = 0;
    // Bytes of transformed weight forms (packed panels, pointwise forms) held by the session that this run's graph
    // does not read: forms made for a kernel the graph did not choose (0 when the conv plan is one decision).
    size_t unread_weight_bytes = 0;
    // With SessionOptions::device_memory: weight bytes kept on the device, weight bytes held in host memory, and
    // the bytes of host weights copied to the device per run (0 without the option).
    size_t device_weight_bytes = 0, host_weight_bytes = 0, copied_weight_bytes = 0;
    // With SessionOptions::device_memory, a graph whose compute buffer alone does not fit runs in `segments` (0: in
    // one piece); `carried_bytes` are read back to host memory after one segment and set into a later one, per run.
    int segments = 0;
    size_t carried_bytes = 0;
};

// Threads: Session::open may be called from several threads at once, and distinct sessions run on distinct
// threads independently (each has its own backends, graphs and buffers; a Model may be shared between them).
// One session's run() may also be called from several threads: the calls are serialised, one at a time.
// stats() and profile() describe the session's last finished run: read them from the thread that ran it, while
// no other thread runs that session. Returned Tensors belong to the caller.
class Session {
public:
    static std::unique_ptr<Session> open(const std::string& model_path, const SessionOptions& opts = {});
    // Runs a model built in memory (as programs generated by `onnx2ggml compile` do).
    static std::unique_ptr<Session> open(std::shared_ptr<Model> model, const SessionOptions& opts = {});
    virtual ~Session() = default;

    virtual const Model& model() const = 0;
    // Runs the model; inputs by name. Returns outputs in graph-output order.
    virtual std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
    virtual const RunStats& stats() const = 0;
    virtual std::string device() const = 0;
    // Per-node timings of the last run (empty unless SessionOptions::profile).
    virtual const std::vector<ProfileEntry>& profile() const = 0;
};

// Weights are mapped from their files: a file truncated or rewritten in place while a session uses it turns the
// next read of a lost page into SIGBUS. This installs a process-wide SIGBUS handler that reports such a fault as
// one line, "onnx2ggml: error: FILE: the file shrank while it was mapped ...", and exits with status 1; a SIGBUS
// outside our mappings goes to the handler that was there before. The library never installs it by itself (signal
// handlers belong to the program): the CLI and the Python package do, an embedding program may. On Windows it is a
// vectored exception handler for the same fault (EXCEPTION_IN_PAGE_ERROR, or a read access violation under wine).
void install_sigbus_guard();

}  // namespace onnx2ggml
