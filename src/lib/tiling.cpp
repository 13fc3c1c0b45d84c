// Tiled execution of fully-convolutional image models: tile placement, cutting, and linear-feather blending.
#include "onnx2ggml/tiling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include "common/error.h"
#include "ggml.h"
#include "onnx2ggml/dtype.h"

namespace onnx2ggml {
namespace {

[[noreturn]] void tile_error(const std::string& msg) { throw Error("tiling: " + msg); }

std::string dims(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

// The input to cut: the named one, or the only 4-D one.
std::string tiled_input(const std::map<std::string, Tensor>& inputs, const std::string& name) {
    if (!name.empty()) {
        auto it = inputs.find(name);
        if (it == inputs.end()) tile_error("no input named '" + name + "'");
        if (it->second.shape.size() != 4) tile_error("input '" + name + "' is " + dims(it->second.shape) + ", not 4-D");
        return name;
    }
    std::string found;
    for (auto& [n, t] : inputs) {
        if (t.shape.size() != 4) continue;
        if (!found.empty()) tile_error("inputs '" + found + "' and '" + n + "' are both 4-D: name the one to cut");
        found = n;
    }
    if (found.empty()) tile_error("needs a 4-D input [N, C, H, W]; the model was given none");
    return found;
}

// Rows y0.. and columns x0.. of a [N, C, H, W] tensor, th x tw of them.
Tensor cut(const Tensor& t, int64_t y0, int64_t x0, int64_t th, int64_t tw) {
    const size_t es = dtype_size(t.dtype);
    const int64_t planes = t.shape[0] * t.shape[1], H = t.shape[2], W = t.shape[3];
    Tensor r;
    r.dtype = t.dtype;
    r.shape = {t.shape[0], t.shape[1], th, tw};
    r.data.resize(size_t(planes * th * tw) * es);
    for (int64_t p = 0; p < planes; p++)
        for (int64_t y = 0; y < th; y++)
            memcpy(&r.data[size_t((p * th + y) * tw) * es], &t.data[size_t((p * H + y0 + y) * W + x0) * es],
                   size_t(tw) * es);
    return r;
}

float load(const Tensor& t, int64_t i) {
    if (t.dtype == DType::FLOAT16) return ggml_fp16_to_fp32(t.as<ggml_fp16_t>()[i]);
    return t.as<float>()[i];
}

// One output being put together: its scale (up/down) and float sums of weighted tiles and of weights.
struct Stitch {
    int64_t up = 1, down = 1;
    DType dtype = DType::FLOAT;
    std::vector<int64_t> shape;  // the whole output's
    std::vector<float> acc, wsum;
};

// The scale of an output from the first tile's: a whole factor or its inverse, the same on both axes.
Stitch plan_output(const Tensor& o, size_t idx, const std::vector<int64_t>& in_shape, int64_t th, int64_t tw) {
    const std::string what = "output " + std::to_string(idx) + " of a " + std::to_string(th) + "x" +
                             std::to_string(tw) + " tile is " + dims(o.shape);
    if (o.shape.size() != 4 || o.shape[0] != in_shape[0]) tile_error(what + ": tiling needs [N, C, H, W] outputs");
    if (o.dtype != DType::FLOAT && o.dtype != DType::FLOAT16) tile_error(what + " of " + dtype_name(o.dtype) + ", not float");
    Stitch s;
    s.dtype = o.dtype;
    const int64_t oh = o.shape[2], ow = o.shape[3];
    if (oh >= th && oh % th == 0) s.up = oh / th;
    else if (oh > 0 && th % oh == 0) s.down = th / oh;
    else tile_error(what + ": not a whole scale of the tile (the model must be fully convolutional)");
    if (ow * s.down != tw * s.up) tile_error(what + ": height and width scale differently");
    s.shape = {o.shape[0], o.shape[1], in_shape[2] * s.up / s.down, in_shape[3] * s.up / s.down};
    s.acc.assign(size_t(s.shape[0] * s.shape[1] * s.shape[2] * s.shape[3]), 0.f);
    s.wsum.assign(size_t(s.shape[2] * s.shape[3]), 0.f);
    return s;
}

// Feathering weights along one axis of a tile's output: a linear ramp of `ramp` elements at each side that meets
// another tile, 1 elsewhere (and at the image's border, so every element has a positive weight sum).
std::vector<float> ramp_weights(int64_t start, int64_t len, int64_t total, int64_t ramp) {
    std::vector<float> w(size_t(len), 1.f);
    if (ramp <= 0) return w;
    for (int64_t i = 0; i < len; i++) {
        if (start > 0) w[size_t(i)] = std::min(w[size_t(i)], (float(i) + 0.5f) / float(ramp));
        if (start + len < total) w[size_t(i)] = std::min(w[size_t(i)], (float(len - i) - 0.5f) / float(ramp));
    }
    return w;
}

void accumulate(Stitch& s, const Tensor& o, int64_t y0, int64_t x0, int64_t overlap) {
    const int64_t oy = y0 * s.up / s.down, ox = x0 * s.up / s.down, ramp = overlap * s.up / s.down;
    const int64_t th = o.shape[2], tw = o.shape[3], H = s.shape[2], W = s.shape[3];
    const std::vector<float> wy = ramp_weights(oy, th, H, ramp), wx = ramp_weights(ox, tw, W, ramp);
    const int64_t planes = s.shape[0] * s.shape[1];
    for (int64_t p = 0; p < planes; p++)
        for (int64_t y = 0; y < th; y++) {
            float* dst = &s.acc[size_t((p * H + oy + y) * W + ox)];
            const int64_t src = (p * th + y) * tw;
            for (int64_t x = 0; x < tw; x++) dst[x] += wy[size_t(y)] * wx[size_t(x)] * load(o, src + x);
        }
    for (int64_t y = 0; y < th; y++)
        for (int64_t x = 0; x < tw; x++) s.wsum[size_t((oy + y) * W + ox + x)] += wy[size_t(y)] * wx[size_t(x)];
}

Tensor finish(const Stitch& s) {
    Tensor r;
    r.dtype = s.dtype;
    r.shape = s.shape;
    const size_t hw = s.wsum.size(), n = s.acc.size();
    r.data.resize(n * dtype_size(s.dtype));
    for (size_t i = 0; i < n; i++) {
        const float v = s.acc[i] / s.wsum[i % hw];
        if (s.dtype == DType::FLOAT16) r.as<ggml_fp16_t>()[i] = ggml_fp32_to_fp16(v);
        else r.as<float>()[i] = v;
    }
    return r;
}

}  // namespace

std::vector<int64_t> tile_starts(int64_t dim, int64_t tile, int64_t overlap, int64_t align) {
    if (dim <= tile) return {0};
    const int64_t stride = tile - overlap;
    const int64_t n = (dim - overlap + stride - 1) / stride;  // the fewest with (n-1)*stride + tile >= dim
    std::vector<int64_t> starts;
    for (int64_t k = 0; k < n; k++) {
        const double exact = double(k) * double(dim - tile) / double(n - 1);
        int64_t s = k == n - 1 ? dim - tile : int64_t(std::llround(exact / double(align))) * align;
        if (starts.empty() || s > starts.back()) starts.push_back(s);
    }
    return starts;
}

std::vector<Tensor> run_tiled(const RunFn& run, const std::map<std::string, Tensor>& inputs, const TileOptions& opts,
                              TileReport* report) {
    const std::string name = tiled_input(inputs, opts.input);
    const Tensor& x = inputs.at(name);
    const int64_t H = x.shape[2], W = x.shape[3];
    const int overlap = opts.overlap < 0 ? opts.size / 4 : opts.overlap;
    if (opts.size < 1 || overlap >= opts.size)
        tile_error("tile size " + std::to_string(opts.size) + " and overlap " + std::to_string(overlap) +
                   ": need size >= 1 and 0 <= overlap < size");
    const int64_t th = std::min<int64_t>(opts.size, H), tw = std::min<int64_t>(opts.size, W);
    if (report) *report = TileReport{1, 1, 1, H, W};
    if (th == H && tw == W) return run(inputs);  // one tile: the untiled run

    std::map<std::string, Tensor> feeds;
    for (auto& [n, t] : inputs)
        if (n != name) feeds[n] = t;
    feeds[name] = cut(x, 0, 0, th, tw);
    std::vector<Tensor> first = run(feeds);
    std::vector<Stitch> outs;
    int64_t align = 1;
    for (size_t i = 0; i < first.size(); i++) {
        outs.push_back(plan_output(first[i], i, x.shape, th, tw));
        align = std::max(align, outs.back().down);
    }
    for (auto& s : outs)
        if (align % s.down) tile_error("outputs shrink the input by scales that do not divide each other");
    if ((H - th) % align || (W - tw) % align || (H > th && th % align) || (W > tw && tw % align))
        tile_error("input '" + name + "' " + dims(x.shape) + " with " + std::to_string(th) + "x" +
                   std::to_string(tw) + " tiles: the model shrinks by " + std::to_string(align) +
                   ", so sizes must be multiples of it");
    const std::vector<int64_t> ys = tile_starts(H, th, overlap, align), xs = tile_starts(W, tw, overlap, align);
    for (int64_t y0 : ys)
        for (int64_t x0 : xs) {
            std::vector<Tensor> got;
            if (y0 || x0) {
                feeds[name] = cut(x, y0, x0, th, tw);
                got = run(feeds);
            }
            const std::vector<Tensor>& o = (y0 || x0) ? got : first;
            for (size_t i = 0; i < outs.size(); i++) {
                if (o[i].shape != first[i].shape)
                    tile_error("output " + std::to_string(i) + " changed shape between tiles");
                accumulate(outs[i], o[i], y0, x0, overlap);
            }
        }
    if (report) *report = TileReport{int(ys.size() * xs.size()), int(ys.size()), int(xs.size()), th, tw};
    std::vector<Tensor> result;
    for (auto& s : outs) result.push_back(finish(s));
    return result;
}

}  // namespace onnx2ggml
