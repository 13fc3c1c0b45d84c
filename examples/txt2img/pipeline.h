// Parts the txt2img pipelines share (SD 1.5 in txt2img.cpp, SDXL in sdxl.cpp): token ids, the DDIM scheduler,
// classifier-free guidance, the initial latent, VAE decoding and the PNG writer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnx2ggml/ir.h"
#include "onnx2ggml/onnx2ggml.h"

namespace txt2img {

using onnx2ggml::DType;
using onnx2ggml::Session;
using onnx2ggml::Tensor;

constexpr int kSeqLen = 77;  // CLIP's context length

Tensor make(DType t, std::vector<int64_t> shape);

// Token ids from an int32/int64 .npy (any shape, read flat).
std::vector<int64_t> read_ids(const std::string& path);

// One prompt's ids ([bos, ..., eos], padded or not) as CLIPTokenizer(padding="max_length", truncation=True) gives
// them: everything after the first `eos` becomes `pad`, and a longer prompt is cut to 77 ending in `eos`.
std::vector<int64_t> pad_ids(const std::vector<int64_t>& ids, int64_t eos, int64_t pad);

// DDIM as diffusers configures it for SD 1.5 and SDXL: scaled_linear betas 0.00085..0.012 over 1000 steps,
// "leading" spacing with steps_offset 1, set_alpha_to_one = false, epsilon prediction, eta = 0.
struct Ddim {
    std::vector<double> alphas_cumprod;
    std::vector<int> timesteps;
    int step_ratio;
    explicit Ddim(int steps);
    // x <- x_{t-1} from x_t and the predicted noise
    void step(std::vector<float>& x, const std::vector<float>& eps, int t) const;
};

// A timestep for `batch` rows in the dtype and rank the UNet declares (a scalar where it declares one).
Tensor timestep_tensor(const onnx2ggml::ValueInfo& in, int t, int64_t batch);

// The [1, 4, lh, lw] starting latent: from `path` (float32 .npy) if given, else N(0, 1) from mt19937(seed).
std::vector<float> initial_latent(const std::string& path, unsigned seed, int64_t lh, int64_t lw);

// Classifier-free guidance over a UNet output [2, ...] (rows: unconditional, conditional).
std::vector<float> guide(const Tensor& eps, float guidance);

// [1, 4, lh, lw] float32 .npy
void save_latent_npy(const std::string& path, const std::vector<float>& x, int64_t lh, int64_t lw);

// Decodes latent / scaling_factor with the VAE and writes an RGB PNG; prints what it wrote.
void decode_to_png(Session& vae, const std::vector<float>& x, float scaling_factor, int64_t lh, int64_t lw,
                   const std::string& path, int steps);

void write_png(const std::string& path, const std::vector<uint8_t>& rgb, int w, int h);

// The denoising steps as one progress line with steps per second, redrawn in place. Only on a terminal (stderr),
// unless forced (--progress); a log or a pipe gets nothing.
class Progress {
public:
    Progress(int total, bool force);
    void step();  // after each step
private:
    int total_, done_ = 0;
    bool on_;
    double t0_;
};

}  // namespace txt2img
