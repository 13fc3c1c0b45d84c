// SessionOptions::device_memory, when a graph's compute buffer alone exceeds the budget: the graph runs as
// consecutive segments that share one compute buffer (stable-diffusion.cpp's --max-vram). A tensor one segment makes
// and a later one reads is read back to host memory after its segment and set into a leaf of the reader's graph.
// Every node still computes on the same device, in the same order, so results equal the unsegmented run's.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "ggml-backend.h"
#include "onnx2ggml/onnx2ggml.h"
#include "onnx2ggml/program.h"

namespace onnx2ggml {

class Segments {
public:
    using NewSched = std::function<ggml_backend_sched_t()>;
    using Place = std::function<void(ggml_backend_sched_t, ggml_cgraph*)>;  // the budget's node placement

    // Cuts `g` (its nodes' sources are rewired for good) into the fewest consecutive segments, at most 64, whose
    // largest compute buffer on the device fits `room`; nullptr, and `g` untouched, when none does. Graph leaves
    // that are not weights (inputs, constants) move into one device buffer of their own, shared by the segments.
    static std::unique_ptr<Segments> plan(ggml_cgraph* g, const o2g::Backends& b, size_t room, const NewSched& fresh,
                                          const Place& place);
    ~Segments();

    // The largest segment's device compute buffer, measured on a fresh scheduler (after weights moved).
    size_t measure();
    // Allocates each segment once on `sched`: where the nodes went (summed over segments; the device's buffer is
    // the largest segment's) and the bytes of host weights the scheduler copies in per run.
    std::vector<BackendShare> lay_out(ggml_backend_sched_t sched, int& splits, size_t& copied, bool warn);
    // One run: each segment allocated, its leaves set, computed, and what later segments read saved.
    void compute(ggml_backend_sched_t sched);
    // A graph output a segment before the last one made (saved after it ran): copies it to `dst`.
    bool read(const ggml_tensor* t, void* dst, size_t bytes) const;

    int count() const { return int(segs_.size()); }
    size_t measured() const { return measured_; }  // measure() of the cut plan() kept
    size_t leaf_bytes() const;     // the device buffer of the shared leaves
    size_t carried_bytes() const;  // read back to host memory and set again, per run

private:
    struct Seg {
        ggml_cgraph* graph = nullptr;
        std::vector<std::pair<ggml_tensor*, ggml_tensor*>> loads;  // (leaf here, the tensor it stands for)
        std::vector<ggml_tensor*> saves;                             // read by later segments, or graph outputs
        std::vector<std::pair<ggml_tensor*, std::vector<ggml_tensor*>>> srcs;  // as cut (the scheduler rewires)
    };
    Segments(const o2g::Backends& b, const NewSched& fresh, const Place& place) : b_(b), fresh_(fresh), place_(place) {}
    bool cut(ggml_cgraph* g, const std::vector<int>& bounds);
    void undo();
    void restore(Seg& s) const;

    const o2g::Backends& b_;
    NewSched fresh_;
    Place place_;
    ggml_context* ctx_ = nullptr;   // leaves and views standing for earlier segments' tensors
    ggml_context* gctx_ = nullptr;  // the segments' graphs
    std::vector<Seg> segs_;
    std::map<const ggml_tensor*, std::vector<uint8_t>> held_;  // saved tensors, in host memory
    // How the graph was before the cut (for undo): sources, view sources and flags.
    std::vector<std::pair<ggml_tensor*, std::vector<ggml_tensor*>>> was_srcs_;
    std::vector<std::pair<ggml_tensor*, std::pair<ggml_tensor*, int32_t>>> was_view_;
    ggml_backend_buffer_t leaves_ = nullptr;
    size_t measured_ = 0;
};

}  // namespace onnx2ggml
