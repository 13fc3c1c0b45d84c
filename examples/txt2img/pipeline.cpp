// Parts the txt2img pipelines share: token ids, DDIM, guidance, the initial latent, VAE decoding, PNG.
#include "pipeline.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "onnx2ggml/npy.h"

namespace txt2img {

Tensor make(DType t, std::vector<int64_t> shape) {
    Tensor x;
    x.dtype = t;
    x.shape = std::move(shape);
    x.data.assign(size_t(x.numel()) * (t == DType::INT64 ? 8 : 4), 0);
    return x;
}

std::vector<int64_t> read_ids(const std::string& path) {
    Tensor t = onnx2ggml::read_npy(path);
    std::vector<int64_t> v;
    for (int64_t i = 0; i < t.numel(); i++) {
        if (t.dtype == DType::INT64) v.push_back(t.as<int64_t>()[i]);
        else if (t.dtype == DType::INT32) v.push_back(t.as<int32_t>()[i]);
        else throw std::runtime_error(path + ": token ids must be int32 or int64");
    }
    return v;
}

std::vector<int64_t> pad_ids(const std::vector<int64_t>& ids, int64_t eos, int64_t pad) {
    if (ids.empty()) throw std::runtime_error("empty token ids");
    size_t end = size_t(std::find(ids.begin(), ids.end(), eos) - ids.begin());
    std::vector<int64_t> out(ids.begin(), ids.begin() + std::min(end, ids.size()));
    if (out.size() > kSeqLen - 1) out.resize(kSeqLen - 1);
    out.push_back(eos);
    out.resize(kSeqLen, pad);
    return out;
}

Ddim::Ddim(int steps) {
    double a = std::sqrt(0.00085), b = std::sqrt(0.012), prod = 1;
    for (int i = 0; i < 1000; i++) {
        double beta = std::pow(a + (b - a) * i / 999.0, 2);
        prod *= 1 - beta;
        alphas_cumprod.push_back(prod);
    }
    step_ratio = 1000 / steps;
    for (int i = steps - 1; i >= 0; i--) timesteps.push_back(i * step_ratio + 1);
}

void Ddim::step(std::vector<float>& x, const std::vector<float>& eps, int t) const {
    int prev = t - step_ratio;
    double at = alphas_cumprod[size_t(t)], ap = prev >= 0 ? alphas_cumprod[size_t(prev)] : alphas_cumprod[0];
    for (size_t i = 0; i < x.size(); i++) {
        double x0 = (x[i] - std::sqrt(1 - at) * eps[i]) / std::sqrt(at);
        x[i] = float(std::sqrt(ap) * x0 + std::sqrt(1 - ap) * eps[i]);
    }
}

Tensor timestep_tensor(const onnx2ggml::ValueInfo& in, int t, int64_t batch) {
    DType dt = in.dtype == DType::UNDEFINED ? DType::FLOAT : in.dtype;
    Tensor ts = make(dt, in.has_shape && in.dims.empty() ? std::vector<int64_t>{} : std::vector<int64_t>{batch});
    for (int64_t j = 0; j < ts.numel(); j++) {
        if (dt == DType::INT64) ts.as<int64_t>()[j] = t;
        else ts.as<float>()[j] = float(t);
    }
    return ts;
}

std::vector<float> initial_latent(const std::string& path, unsigned seed, int64_t lh, int64_t lw) {
    int64_t n = 4 * lh * lw;
    std::vector<float> x(static_cast<size_t>(n));
    if (!path.empty()) {
        Tensor t = onnx2ggml::read_npy(path);
        if (t.numel() != n || t.dtype != DType::FLOAT) throw std::runtime_error("--init-latent must be float32 [1,4,H/8,W/8]");
        std::memcpy(x.data(), t.data.data(), size_t(n) * 4);
    } else {
        std::mt19937 rng(seed);
        std::normal_distribution<float> nd;
        for (auto& v : x) v = nd(rng);
    }
    return x;
}

std::vector<float> guide(const Tensor& eps, float guidance) {
    int64_t n = eps.numel() / 2;
    const float* e = eps.as<float>();
    std::vector<float> guided(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; j++) guided[size_t(j)] = e[j] + guidance * (e[n + j] - e[j]);
    return guided;
}

void save_latent_npy(const std::string& path, const std::vector<float>& x, int64_t lh, int64_t lw) {
    Tensor lt = make(DType::FLOAT, {1, 4, lh, lw});
    std::memcpy(lt.data.data(), x.data(), x.size() * 4);
    onnx2ggml::write_npy(path, lt);
}

void decode_to_png(Session& vae, const std::vector<float>& x, float scaling_factor, int64_t lh, int64_t lw,
                   const std::string& path, int steps) {
    Tensor lat = make(DType::FLOAT, {1, 4, lh, lw});
    for (size_t j = 0; j < x.size(); j++) lat.as<float>()[j] = x[j] / scaling_factor;
    Tensor img = vae.run({{vae.model().graph.inputs[0].name, lat}})[0];  // [1, 3, H, W]
    int64_t H = img.shape[2], W = img.shape[3];
    std::vector<uint8_t> rgb(size_t(H * W * 3));
    for (int64_t c = 0; c < 3; c++)
        for (int64_t p = 0; p < H * W; p++) {
            float v = std::min(1.0f, std::max(0.0f, img.as<float>()[c * H * W + p] / 2 + 0.5f));
            rgb[size_t(p * 3 + c)] = uint8_t(std::lround(v * 255));
        }
    write_png(path, rgb, int(W), int(H));
    printf("wrote %s (%lldx%lld), %d steps\n", path.c_str(), (long long)W, (long long)H, steps);
}

void write_png(const std::string& path, const std::vector<uint8_t>& rgb, int w, int h) {
    std::vector<uint8_t> raw;
    for (int y = 0; y < h; y++) {
        raw.push_back(0);  // filter: none
        raw.insert(raw.end(), rgb.begin() + size_t(y) * w * 3, rgb.begin() + size_t(y + 1) * w * 3);
    }
    uLongf zlen = compressBound(uLong(raw.size()));
    std::vector<uint8_t> z(zlen);
    if (compress2(z.data(), &zlen, raw.data(), uLong(raw.size()), 6) != Z_OK) throw std::runtime_error("zlib failed");
    z.resize(zlen);
    std::ofstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + path);
    auto be32 = [&](uint32_t v) { uint8_t b[4] = {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)}; f.write((char*)b, 4); };
    auto chunk = [&](const char* type, const std::vector<uint8_t>& d) {
        be32(uint32_t(d.size()));
        std::vector<uint8_t> td(type, type + 4);
        td.insert(td.end(), d.begin(), d.end());
        f.write((const char*)td.data(), std::streamsize(td.size()));
        be32(uint32_t(crc32(0, td.data(), uInt(td.size()))));
    };
    f.write("\x89PNG\r\n\x1a\n", 8);
    std::vector<uint8_t> ihdr = {uint8_t(w >> 24), uint8_t(w >> 16), uint8_t(w >> 8), uint8_t(w),
                                 uint8_t(h >> 24), uint8_t(h >> 16), uint8_t(h >> 8), uint8_t(h), 8, 2, 0, 0, 0};
    chunk("IHDR", ihdr);
    chunk("IDAT", z);
    chunk("IEND", {});
}

Progress::Progress(int total, bool force) : total_(total), on_(force || isatty(fileno(stderr))) {
    t0_ = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void Progress::step() {
    done_++;
    if (!on_) return;
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    const double rate = done_ / std::max(now - t0_, 1e-9);
    const int width = 30, filled = total_ > 0 ? width * done_ / total_ : width;
    fprintf(stderr, "\rstep %d/%d [%s%s] %.2f steps/s", done_, total_, std::string(size_t(filled), '=').c_str(),
            std::string(size_t(width - filled), ' ').c_str(), rate);
    if (done_ >= total_) fputc('\n', stderr);
    fflush(stderr);
}

}  // namespace txt2img
