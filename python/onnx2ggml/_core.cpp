// The Python module's C++ side: opens sessions (file or bytes), describes graph inputs/outputs, runs with the GIL
// released. Tensors cross as flat byte arrays plus a dtype code and a shape; the numpy views are made in session.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "ggml-backend.h"
#include "onnx2ggml/ir.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/program.h"

namespace nb = nanobind;
using namespace onnx2ggml;

namespace {

using Bytes = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// (name, dtype code, dims: int or str or None, has_shape, is_tensor)
nb::list describe(const std::vector<ValueInfo>& infos) {
    nb::list out;
    for (const ValueInfo& vi : infos) {
        nb::list dims;
        for (const Dim& d : vi.dims) {
            if (d.known()) dims.append(nb::int_(d.value));
            else if (!d.param.empty()) dims.append(nb::str(d.param.c_str()));
            else dims.append(nb::none());
        }
        out.append(nb::make_tuple(vi.name, int(vi.dtype), dims, vi.has_shape, vi.is_tensor));
    }
    return out;
}

class PySession {
public:
    PySession(nb::object model, int threads, const std::string& device, const std::string& weights,
              const std::string& precision, bool portable, const std::vector<std::pair<std::string, float>>& lora,
              bool quiet, size_t max_memory, bool progress,
              const std::vector<std::pair<std::string, std::string>>& embeddings, const std::string& embedding_set,
              int tile_size, int tile_overlap, size_t device_memory) {
        SessionOptions o;
        o.tiling.size = tile_size;
        o.tiling.overlap = tile_overlap;
        o.max_memory = max_memory;
        o.device_memory = device_memory;
        o.progress = progress;
        o.threads = threads;
        o.device = device;
        o.weights = weights;
        o.precision = precision;
        o.portable = portable;
        o.quiet = quiet;
        for (auto& [path, scale] : lora) o.lora.push_back({path, scale});
        for (auto& [path, token] : embeddings) o.embeddings.push_back({path, token});
        o.embedding_set = embedding_set;
        if (nb::isinstance<nb::bytes>(model)) {
            nb::bytes b = nb::cast<nb::bytes>(model);
            auto keep = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(b.data()),
                                                               static_cast<const uint8_t*>(b.data()) + b.size());
            nb::gil_scoped_release release;
            with_context("opening <bytes>", [&] {
                auto m = parse_model(keep->data(), keep->size(), "<bytes>", ".", keep);
                session_ = Session::open(m, o);
            });
        } else {
            name_ = nb::cast<std::string>(model);
            nb::gil_scoped_release release;
            with_context("opening " + name_, [&] { session_ = Session::open(name_, o); });
        }
    }

    nb::list inputs() const { return describe(session_->model().graph.inputs); }
    nb::list outputs() const { return describe(session_->model().graph.outputs); }
    std::string device() const { return session_->device(); }

    // feeds: name -> (dtype code, shape, bytes). Returns one (dtype code, shape, bytes) per graph output; the bytes
    // array owns the session's output buffer (no copy).
    nb::list run(const std::vector<std::tuple<std::string, int, std::vector<int64_t>, Bytes>>& feeds) {
        std::map<std::string, Tensor> inputs;
        for (auto& [name, dtype, shape, bytes] : feeds) {
            Tensor t;
            t.dtype = DType(dtype);
            t.shape = shape;
            t.data.assign(bytes.data(), bytes.data() + bytes.size());
            if (!inputs.emplace(name, std::move(t)).second) throw std::runtime_error("input '" + name + "' given twice");
        }
        std::vector<Tensor> outs;
        {
            nb::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(stats_mu_);  // Python threads may run this session at once
            with_context("running " + name_, [&] { outs = session_->run(inputs); });
            stats_ = session_->stats();
        }
        nb::list result;
        for (Tensor& t : outs) {
            auto* owned = new std::vector<uint8_t>(std::move(t.data));
            nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
            size_t n = owned->size();
            nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>> bytes(owned->data(), {n}, owner);
            result.append(nb::make_tuple(int(t.dtype), t.shape, bytes));
        }
        return result;
    }

    nb::dict stats() const {
        RunStats s;
        {
            nb::gil_scoped_release release;
            std::lock_guard<std::mutex> lock(stats_mu_);
            s = stats_;
        }
        nb::dict d;
        d["nodes"] = s.nodes;
        d["ggml_nodes"] = s.ggml_nodes;
        d["host_nodes"] = s.host_nodes;
        d["host_float_nodes"] = s.host_float_nodes;
        d["cache_hit"] = s.cache_hit;
        d["build_ms"] = s.build_ms;
        d["compute_ms"] = s.compute_ms;
        d["tiles"] = s.tiles;
        d["compute_buffer_mb"] = s.compute_buffer_mb;
        d["weights_mb"] = s.weights_mb;
        d["unshared_mb"] = s.unshared_mb;
        d["gflop"] = s.gflop;
        d["splits"] = s.splits;
        d["transformed_weight_bytes"] = s.transformed_weight_bytes;
        d["unread_weight_bytes"] = s.unread_weight_bytes;
        d["device_weight_bytes"] = s.device_weight_bytes;
        d["host_weight_bytes"] = s.host_weight_bytes;
        d["copied_weight_bytes"] = s.copied_weight_bytes;
        d["segments"] = s.segments;
        d["carried_bytes"] = s.carried_bytes;
        nb::dict ops;
        for (auto& [op, n] : s.ggml_ops) ops[op.c_str()] = n;
        d["ggml_ops"] = ops;
        return d;
    }

private:
    std::unique_ptr<Session> session_;
    mutable std::mutex stats_mu_;
    RunStats stats_;  // of the last run from any Python thread, copied under stats_mu_
    std::string name_ = "<bytes>";

    // A bare MemoryError says nothing of which model or step: give it both. The size checks should fire first.
    template <typename F>
    static void with_context(const std::string& what, F&& f) {
        try {
            f();
        } catch (const std::bad_alloc&) {
            throw std::runtime_error(what + ": out of memory (std::bad_alloc); a size check is missing, please report it");
        } catch (const std::length_error& e) {
            throw std::runtime_error(what + ": a size too large for memory (std::length_error: " + e.what() + ")");
        }
    }
};

// ggml device names (CPU, CUDA0, Vulkan0, ...) with their type: "cpu", "gpu" or "accel".
std::vector<std::pair<std::string, std::string>> devices() {
    o2g::load_backends();
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t d = ggml_backend_dev_get(i);
        auto type = ggml_backend_dev_type(d);
        const char* kind = type == GGML_BACKEND_DEVICE_TYPE_CPU ? "cpu" : type == GGML_BACKEND_DEVICE_TYPE_GPU ? "gpu" : "accel";
        out.emplace_back(ggml_backend_dev_name(d), kind);
    }
    return out;
}

}  // namespace

NB_MODULE(_core, m) {
    m.doc() = "onnx2ggml's C++ runtime (use onnx2ggml.InferenceSession)";
    install_sigbus_guard();  // a weights file truncated while mapped: one error line and exit 1, not a crash
    nb::exception<std::runtime_error>(m, "Error", PyExc_RuntimeError);
    nb::class_<PySession>(m, "Session")
        .def(nb::init<nb::object, int, const std::string&, const std::string&, const std::string&,
                      bool, const std::vector<std::pair<std::string, float>>&, bool, size_t, bool,
                      const std::vector<std::pair<std::string, std::string>>&, const std::string&, int, int, size_t>(),
             nb::arg("model"), nb::arg("threads"), nb::arg("device"), nb::arg("weights"), nb::arg("precision"), nb::arg("portable"),
             nb::arg("lora"), nb::arg("quiet"), nb::arg("max_memory") = 0, nb::arg("progress") = false,
             nb::arg("embeddings") = std::vector<std::pair<std::string, std::string>>{},
             nb::arg("embedding_set") = std::string(), nb::arg("tile_size") = 0, nb::arg("tile_overlap") = -1,
             nb::arg("device_memory") = 0)
        .def("inputs", &PySession::inputs)
        .def("outputs", &PySession::outputs)
        .def("device", &PySession::device)
        .def("run", &PySession::run)
        .def("stats", &PySession::stats);
    m.def("devices", &devices);
    m.def("add_rpc_servers", &o2g::add_rpc_servers);  // Error (a std::runtime_error) becomes onnx2ggml.Error
    m.def("embedding_tokens", [](const std::string& path, const std::string& token, int64_t width,
                                 const std::string& set) { return onnx2ggml::embedding_tokens({path, token}, width, set); });
}
