#include "runtime/load_progress.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/platform.h"

namespace onnx2ggml {

namespace {

volatile unsigned page_sum;  // where the page reads go, so the compiler keeps them

double seconds_now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

std::string base_name(const std::string& path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool load_progress_wanted(const Model& m, bool force) {
    size_t total = 0;
    for (const auto& [name, t] : m.graph.initializers) total += t->nbytes;
    return total >= kLoadProgressBytes && (force || platform::stderr_is_terminal());
}

void read_weights_with_progress(const Model& m) {
    size_t total = 0;
    for (const auto& [name, t] : m.graph.initializers)
        if (t->mapped) total += t->nbytes;
    LoadProgress progress("reading " + base_name(m.path), total, true);
    const size_t page = platform::page_size(), piece = size_t(16) << 20;
    unsigned sum = 0;
    for (const auto& [name, t] : m.graph.initializers) {
        if (!t->mapped) continue;
        for (size_t off = 0; off < t->nbytes; off += piece) {
            size_t end = std::min(t->nbytes, off + piece);
            for (size_t i = off; i < end; i += page) sum += static_cast<const volatile uint8_t*>(t->data)[i];
            progress.add(end - off);
        }
    }
    page_sum = sum;
}

LoadProgress::LoadProgress(std::string what, size_t total, bool on)
    : what_(std::move(what)), total_(total), on_(on && total > 0), t0_(seconds_now()) {
    if (on_) draw(t0_);
}

LoadProgress::~LoadProgress() {
    if (!on_) return;
    if (drawn_ != done_) draw(seconds_now());
    std::fputc('\n', stderr);
}

void LoadProgress::add(size_t bytes) {
    done_ += bytes;
    if (!on_) return;
    double now = seconds_now();
    if (now - last_ >= 0.1) draw(now);
}

void LoadProgress::draw(double now) {
    last_ = now;
    drawn_ = done_;
    double mb = double(done_) / 1048576.0, dt = now - t0_;
    std::fprintf(stderr, "\r%s: %.0f / %.0f MB (%3.0f%%)", what_.c_str(), mb, double(total_) / 1048576.0,
                 100.0 * double(done_) / double(total_));
    if (dt > 0.2) std::fprintf(stderr, ", %.0f MB/s  ", mb / dt);  // spaces: cover a longer earlier figure
    std::fflush(stderr);
}

}  // namespace onnx2ggml
