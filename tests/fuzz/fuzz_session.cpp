// libFuzzer harness: structure-aware mutations of small valid models (model_mutator.cpp), then
// Session::open and one run on small random inputs. onnx2ggml::Error is the expected rejection; any other
// exception escaping, a crash, a leak, a ggml abort or a sanitizer report is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "common/error.h"
#include "fuzz_common.h"
#include "ir/ir.h"
#include "model_mutator.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/program.h"
#include "ggml.h"

using namespace onnx2ggml;

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
    // Mostly structured mutations; now and then plain byte mutations, which also reach the wire format.
    if (seed % 8 != 0) {
        std::string m(reinterpret_cast<const char*>(data), size);
        if (fuzz::mutate_model(m, seed) && m.size() <= max_size) {
            std::memcpy(data, m.data(), m.size());
            return m.size();
        }
    }
    return LLVMFuzzerMutate(data, size, max_size);
}

namespace {

constexpr int64_t kMaxInputElements = 1 << 16;
constexpr size_t kMaxWeightBytes = size_t(64) << 20;

// Small random inputs for the graph's inputs; false when a declared size is beyond the harness's limits.
bool make_inputs(const Model& m, std::mt19937& rng, std::map<std::string, Tensor>& feeds) {
    for (const ValueInfo& vi : m.graph.inputs) {
        if (!vi.is_tensor || !dtype_supported(vi.dtype) || dtype_size(vi.dtype) == 0) return false;
        Tensor t;
        t.dtype = vi.dtype;
        int64_t n = 1;
        for (const Dim& d : vi.dims) {
            int64_t v = d.known() ? d.value : 1 + int64_t(rng() % 3);
            if (v > kMaxInputElements) return false;
            t.shape.push_back(v);
            n *= v;
            if (n > kMaxInputElements) return false;
        }
        t.data.resize(size_t(n) * dtype_size(vi.dtype));
        if (vi.dtype == DType::FLOAT) {
            std::uniform_real_distribution<float> u(-2.f, 2.f);
            for (int64_t i = 0; i < n; i++) t.as<float>()[i] = u(rng);
        } else if (vi.dtype == DType::INT64) {
            for (int64_t i = 0; i < n; i++) t.as<int64_t>()[i] = int64_t(rng() % 4);  // valid as small indices
        } else {
            for (auto& b : t.data) b = uint8_t(rng() % 2);
        }
        feeds[vi.name] = std::move(t);
    }
    return true;
}

}  // namespace

// A ggml abort ends the process with _exit(3) in the library, which libFuzzer does not see as a crash and so
// keeps no input for: here it aborts, so the input is saved like any other finding.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    o2g::load_backends();  // installs the library's hook first (once), so ours below replaces it
    ggml_set_abort_callback([](const char* msg) {
        fprintf(stderr, "fuzz_session: ggml abort: %s\n", msg ? msg : "");
        abort();
    });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        auto model = parse_model(data, size, fuzz::scratch_dir() + "/fuzz.onnx", fuzz::scratch_dir(), nullptr);
        size_t weights = 0;
        for (const auto& [name, t] : model->graph.initializers) weights += t->nbytes;
        if (weights > kMaxWeightBytes) return -1;  // too large to fuzz quickly; not added to the corpus
        std::mt19937 rng{uint32_t(size)};
        std::map<std::string, Tensor> feeds;
        bool runnable = make_inputs(*model, rng, feeds);
        SessionOptions opts;
        opts.threads = 1;
        opts.quiet = true;
        opts.device = "CPU";
        auto s = Session::open(model, opts);
        if (runnable) s->run(feeds);
    } catch (const Error&) {
    } catch (const std::bad_alloc&) {
        fuzz::on_bad_alloc();
    }
    return 0;
}
