// Progress on stderr while a big model's weights are read or converted: the wait is long (seconds to minutes for
// gigabytes), and a silent one looks like a hang.
#pragma once
#include <cstddef>
#include <string>

#include "onnx2ggml/ir.h"

namespace onnx2ggml {

// Models whose initializers reach this get a progress line.
constexpr size_t kLoadProgressBytes = size_t(1) << 30;

// True when `m` is big enough and stderr is a terminal, or when forced (SessionOptions::progress).
bool load_progress_wanted(const Model& m, bool force);

// Reads every mapped weight page once, showing progress, so the first run does not wait on the disk unseen.
void read_weights_with_progress(const Model& m);

// One line, redrawn in place at most ten times a second, ended when the work is done.
class LoadProgress {
public:
    LoadProgress(std::string what, size_t total, bool on);
    ~LoadProgress();
    void add(size_t bytes);

private:
    std::string what_;
    size_t total_, done_ = 0, drawn_ = 0;
    bool on_;
    double t0_, last_ = 0;
    void draw(double now);
};

}  // namespace onnx2ggml
