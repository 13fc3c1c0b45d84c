// onnx2ggml public API: load an ONNX model and run it on a ggml backend.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx2ggml/dtype.h"

namespace onnx2ggml {

struct Model;

// A dense host tensor in ONNX (row-major) order.
struct Tensor {
    DType dtype = DType::FLOAT;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;

    int64_t numel() const;
    template <typename T> T* as() { return reinterpret_cast<T*>(data.data()); }
    template <typename T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
};

struct SessionOptions {
    int threads = 0;          // 0: all cores
    std::string device;       // ggml device name (e.g. "CPU", "CUDA0"); empty: best available
    bool quiet = false;       // do not print the device on open
};

struct RunStats {
    int nodes = 0;            // ONNX nodes that ran (after dead-code removal)
    int ggml_nodes = 0;       // lowered to ggml
    int host_nodes = 0;       // evaluated on the host (shape, integer and boolean work)
    int host_float_nodes = 0; // float math that had to run on the host
    bool cache_hit = false;   // graph reused from an earlier run with the same shapes
    double build_ms = 0, compute_ms = 0;
    int ggml_graph_nodes = 0;
};

class Session {
public:
    static std::unique_ptr<Session> open(const std::string& model_path, const SessionOptions& opts = {});
    virtual ~Session() = default;

    virtual const Model& model() const = 0;
    // Runs the model; inputs by name. Returns outputs in graph-output order.
    virtual std::vector<Tensor> run(const std::map<std::string, Tensor>& inputs) = 0;
    virtual const RunStats& stats() const = 0;
    virtual std::string device() const = 0;
};

}  // namespace onnx2ggml
