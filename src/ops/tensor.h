// Host tensors (shape and integer work done at bind time) and runtime values.
#pragma once
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "onnx2ggml/host_tensor.h"

struct ggml_tensor;

namespace onnx2ggml {

// A value during graph build: on the device (ggml tensor), on the host, or both.
struct Val {
    DType dtype = DType::UNDEFINED;
    Shape shape;
    ggml_tensor* t = nullptr;               // F32 for float/bool, I32 for integers
    std::shared_ptr<HostTensor> host;       // set when the data is known at build time
    bool is_weight = false;                 // initializer: uploaded once and cached
    std::string name;
    std::set<int> input_deps;               // graph inputs whose data this host value depends on
    std::shared_ptr<std::vector<Val>> seq;  // a sequence (SplitToSequence ...): its items; dtype is theirs
    bool present() const { return dtype != DType::UNDEFINED; }
    int rank() const { return int(shape.size()); }
};

}  // namespace onnx2ggml
