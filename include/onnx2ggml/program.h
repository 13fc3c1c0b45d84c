// What a program written by `onnx2ggml compile` runs on: device choice, GGUF weights, and a graph cache per
// input shape. The generated NAME.cpp supplies the graph-building function; this does the rest.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/embedding.h"
#include "onnx2ggml/lora.h"
#include "onnx2ggml/ops.h"
#include "onnx2ggml/tensor.h"

namespace onnx2ggml {
struct DeviceBudget;
}

namespace o2g {

using onnx2ggml::DType;
using onnx2ggml::Tensor;

// The device a session or program runs on, with the CPU beside it where the device is not the CPU.
struct Backends {
    ggml_backend_t main = nullptr;   // the chosen device
    ggml_backend_t accel = nullptr;  // a CPU accelerator (BLAS) used before the CPU, if any
    ggml_backend_t cpu = nullptr;    // the CPU, when `main` is another device
    std::string description;         // "CPU (AMD EPYC ...)" as printed
    std::string precision = "exact";  // SessionOptions::precision
    int threads = 0;
    bool is_cpu() const;
    // Storage of constant product weights (MatMul, Gemm, conv) where the user chose none: F16 in fast mode off the
    // CPU (half the device memory and bytes read; stable-diffusion.cpp keeps its convs' weights so), else F32.
    ggml_type product_weights() const;
    std::vector<ggml_backend_t> in_priority_order() const;
    ~Backends();
};
// The CPU code in use: our kernels' x86-64 level and ggml's CPU features, e.g.
// "kernels x86-64-v4 (AVX-512); ggml AVX2 AVX512 FMA F16C" (ONNX2GGML_CPU picks a lower kernel level).
std::string cpu_code_description();
// ggml's set_n_threads of the backend's registry, where it has one.
void set_backend_threads(ggml_backend_t backend, int n);
// What an op-library context knows of the device it builds for, set in one place for sessions and compiled
// programs: which nodes it computes (ggml_backend_supports_op), whether its flash attention keeps F32 K, V and
// accumulation so exact mode may use it (the CPU and Vulkan, measured within 2e-6 of the chunked products; CUDA rounds
// K and V to F16, 4e-4 off on an H100; others and RPC devices, whose remote backend is not known, are not measured),
// and whether it takes large convolutions directly rather than through banded im2col (Vulkan: src/lib/conv.cpp).
void set_device(Ctx& ctx, ggml_backend_t backend);
// ggml's backend registry and abort hook, set up once per process; safe to call from several threads.
void load_backends();
// Opens a ggml device by name ("" picks the first GPU, else the CPU) and prints which one unless quiet.
// Never falls back silently: an unknown name is an error listing the devices there are. precision: exact|fast.
std::unique_ptr<Backends> open_backends(const std::string& device, int threads, bool quiet,
                                        const std::string& precision = "exact");
// "512M", "8G", "1.5GiB", "4096" as bytes (binary K/M/G/T suffixes); an error naming option `opt` otherwise.
size_t parse_bytes(const std::string& opt, const std::string& v);
// Adds the devices of ggml RPC servers, "HOST:PORT[,HOST:PORT...]", to ggml's registry (RPC0, RPC1, ... in order);
// each server once per process. A server that is unreachable or speaks another protocol version is an error
// naming it ("" does nothing).
void add_rpc_servers(const std::string& list);
// A device of ggml's RPC backend (another process or machine runs its graphs).
bool is_rpc_device(ggml_backend_dev_t dev);
// A scheduler for `graph` on the backends `bk` (in priority order), sized to the tensors the graph holds: ggml's
// scheduler reserves room for one split per node of the size it is given (tensor structs for 60 copies each), so the
// graph's capacity would mean hundreds of MB of address space for a one-node model and gigabytes for a UNet.
ggml_backend_sched_t new_scheduler(std::vector<ggml_backend_t> bk, ggml_cgraph* graph);
// Before allocation: graph inputs and uploaded constants live on the device, not in CPU memory; on an RPC device,
// nodes of our CPU kernels stay on the CPU.
void place_inputs_on_main(ggml_backend_sched_t sched, ggml_cgraph* graph, const Backends& b);
// A leaf, or a node that only reinterprets its source (reshape, view, permute, transpose): it computes nothing.
bool is_view_op(const ggml_tensor* t);
// After allocation: nodes and copied bytes per backend, and the number of splits.
std::vector<onnx2ggml::BackendShare> placement(ggml_backend_sched_t sched, ggml_cgraph* graph, const Backends& b,
                                                int& splits);
// Off the CPU, a warning naming the ggml ops the scheduler sent back to the CPU (never a silent fallback).
void warn_fallback(const std::vector<onnx2ggml::BackendShare>& shares, ggml_backend_sched_t sched,
                   ggml_cgraph* graph, const Backends& b);

// Weights and constants from an onnx2ggml GGUF file, looked up by ONNX name; on the device once a graph reads them.
class WeightFile : public WeightStore {
public:
    // LoRA files are merged into the weights the file's LoRA table names (written by `onnx2ggml compile`);
    // embeddings' rows are appended to the token table it names (`embedding_set`: as SessionOptions').
    WeightFile(const std::string& path, ggml_backend_t backend, bool native_cpu,
               const std::vector<onnx2ggml::LoraFile>& lora = {},
               const std::vector<onnx2ggml::EmbeddingFile>& embeddings = {}, const std::string& embedding_set = "");
    ~WeightFile() override;
    ggml_tensor* get(const std::string& name) const;  // error naming the file and the tensor if missing
    // Puts on the device, in one buffer, the weights `g` reads as stored that are not there yet (a graph is built
    // before its weights are uploaded: one read only in derived forms never is).
    void upload(ggml_cgraph* g);
    double device_mb() const;  // weights and derived forms on the device
    // Weights and derived forms go to host memory (`host`), for a device-memory budget that moves those that fit
    // (lib/device_budget.h); buffers() are the ones this store owns, the budget's included.
    void keep_in_host(ggml_backend_buffer_type_t host);
    std::vector<ggml_backend_buffer_t>& buffers();
    const void* stored_bytes(const ggml_tensor* w) const;  // weight w's bytes as stored (LoRA merged), or null
    bool is_weight(const ggml_tensor* w) override;
    ggml_tensor* derived(const ggml_tensor* w, const std::string& kind, ggml_type type, const int64_t ne[4],
                         const std::function<void(const float*, float*)>& make) override;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// One graph input or output: ONNX name, element type and rank.
struct IoInfo {
    const char* name;
    DType dtype;
    int rank;
    bool host = false;  // input: its data is read when the graph is built (shapes, indices), so it keys the cache
};

// Builds the graph for the given inputs (ggml tensors shaped like this run's inputs, and every input's data on the
// host) and fills `outputs`, or `host_outputs` for outputs computed on the host.
// Names a result in a compiled program's build (its `cb`), and has the graph built again in a larger context when
// the one being built in is close to full (Program::run does; elsewhere it only names).
ggml_tensor* named(ggml_tensor* t, const char* name);

using BuildFn = void (*)(Ctx& ctx, const void* weights, ggml_tensor* const* inputs, const HostTensor* host_inputs,
                         ggml_tensor** outputs, HostTensor* host_outputs);

class Program {
public:
    Program(const char* name, std::vector<IoInfo> inputs, std::vector<IoInfo> outputs, const std::string& weights_path,
            const std::string& device, int threads, const std::string& precision = "exact",
            const std::vector<onnx2ggml::LoraFile>& lora = {},
            const std::vector<onnx2ggml::EmbeddingFile>& embeddings = {}, const std::string& embedding_set = "");
    ~Program();
    WeightFile& weights() { return *weights_; }
    const std::vector<IoInfo>& inputs() const { return inputs_; }
    const std::vector<IoInfo>& outputs() const { return outputs_; }
    // Runs at the inputs' shapes; the graph is built once per shape signature (and data of the `host` inputs) and
    // kept. Calls from several threads are serialised.
    std::vector<Tensor> run(const std::vector<const Tensor*>& inputs, BuildFn build, const void* weights);
    // The same with inputs by name; an unknown or missing name is an error.
    std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs, BuildFn build, const void* weights);
    double last_build_ms() const { return build_ms_; }
    // Caps what the program keeps on a GPU (SessionOptions::device_memory): weights that do not fit stay in host
    // memory and are copied in as the nodes reading them run; a graph whose compute buffer alone does not fit runs
    // in segments. Before the first run.
    void set_device_memory(size_t bytes);

private:
    struct Graph;
    std::string shape_key(const std::vector<const Tensor*>& inputs) const;
    std::unique_ptr<Graph> build_graph(const std::vector<const Tensor*>& inputs, BuildFn build, const void* weights);
    std::unique_ptr<Graph> build_in(const std::vector<const Tensor*>& inputs, const std::vector<HostTensor>& hin,
                                    BuildFn build, const void* weights, size_t max_nodes);
    void allocate_graph(Graph& g, size_t max_nodes);
    Tensor read_output(const Graph& g, size_t i) const;
    std::string name_;
    std::vector<IoInfo> inputs_, outputs_;
    std::unique_ptr<Backends> backends_;
    std::unique_ptr<WeightFile> weights_;
    std::unique_ptr<onnx2ggml::DeviceBudget> budget_;  // set_device_memory
    size_t max_alloc_ = 0;  // the largest tensor a graph makes (0: the device's), smaller when a budget needs it
    std::map<std::string, std::unique_ptr<Graph>> cache_;
    double build_ms_ = 0;
    std::mutex run_mu_;  // run() shares the cache and its buffers
};

}  // namespace o2g
