// txt2img: Stable Diffusion 1.5 text-to-image with three ONNX models run by the onnx2ggml library.
// Classifier-free guidance with the DDIM scheduler (eta = 0), configured like SD 1.5's diffusers pipeline.
//
//   txt2img --text-encoder te.onnx --unet unet.onnx --vae-decoder vae.onnx --prompt "a red fox in the snow"
//           [--negative-prompt TEXT] [--vocab bpe_simple_vocab_16e6.txt.gz]
//           [--tokens ids.npy] [--uncond-tokens ids.npy] [--bos N] [--eos N] [--pad N]   (CLIP's 49406/49407/49407 by default)
//           [--seed 42] [--steps 20] [--guidance 7.5] [--width 512] [--height 512] [--threads N]
//           [--init-latent x.npy] [--save-latent out.npy] [-o image.png]
//
// --prompt goes through onnx2ggml's CLIP BPE tokenizer (the ids of transformers' CLIPTokenizer, which diffusers
// uses), padded to 77 with --pad; the negative prompt defaults to "". The merges file is the one scripts/setup.sh
// fetches into .deps/clip/ (found from the source tree or the executable), or --vocab, or $ONNX2GGML_CLIP_VOCAB.
// --tokens instead reads ready-made ids (bos, ids, eos) from a .npy file.
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "onnx2ggml/clip_tokenizer.h"
#include "onnx2ggml/ir.h"
#include "onnx2ggml/npy.h"
#include "onnx2ggml/onnx2ggml.h"

using onnx2ggml::DType;
using onnx2ggml::Session;
using onnx2ggml::Tensor;

namespace {

constexpr int kSeqLen = 77;

// CLIP's start, end and padding tokens (SD 1.5's tokenizer pads with the end token).
struct Special {
    int64_t bos = 49406, eos = 49407, pad = 49407;
};

Tensor make(DType t, std::vector<int64_t> shape) {
    Tensor x;
    x.dtype = t;
    x.shape = std::move(shape);
    x.data.assign(size_t(x.numel()) * (t == DType::INT64 ? 8 : 4), 0);
    return x;
}

// Token ids for [unconditional, prompt], each padded to 77. The unconditional row defaults to the
// empty prompt: start, end, padding.
Tensor token_batch(const std::vector<int64_t>& uncond, const std::vector<int64_t>& prompt, const Special& sp) {
    Tensor ids = make(DType::INT64, {2, kSeqLen});
    auto* p = ids.as<int64_t>();
    for (int i = 0; i < 2 * kSeqLen; i++) p[i] = sp.pad;
    std::vector<int64_t> u = uncond.empty() ? std::vector<int64_t>{sp.bos, sp.eos} : uncond;
    for (size_t i = 0; i < std::min<size_t>(u.size(), kSeqLen); i++) p[i] = u[i];
    for (size_t i = 0; i < std::min<size_t>(prompt.size(), kSeqLen); i++) p[kSeqLen + i] = prompt[i];
    return ids;
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

// DDIM schedule as in diffusers for SD 1.5: scaled_linear betas 0.00085..0.012 over 1000 steps,
// "leading" spacing with steps_offset 1, set_alpha_to_one = false, epsilon prediction.
struct Ddim {
    std::vector<double> alphas_cumprod;
    std::vector<int> timesteps;
    int step_ratio;
    explicit Ddim(int steps) {
        double a = std::sqrt(0.00085), b = std::sqrt(0.012), prod = 1;
        for (int i = 0; i < 1000; i++) {
            double beta = std::pow(a + (b - a) * i / 999.0, 2);
            prod *= 1 - beta;
            alphas_cumprod.push_back(prod);
        }
        step_ratio = 1000 / steps;
        for (int i = steps - 1; i >= 0; i--) timesteps.push_back(i * step_ratio + 1);
    }
    // x <- x_{t-1} from x_t and the predicted noise
    void step(std::vector<float>& x, const std::vector<float>& eps, int t) const {
        int prev = t - step_ratio;
        double at = alphas_cumprod[size_t(t)], ap = prev >= 0 ? alphas_cumprod[size_t(prev)] : alphas_cumprod[0];
        for (size_t i = 0; i < x.size(); i++) {
            double x0 = (x[i] - std::sqrt(1 - at) * eps[i]) / std::sqrt(at);
            x[i] = float(std::sqrt(ap) * x0 + std::sqrt(1 - ap) * eps[i]);
        }
    }
};

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

int input_index(const Session& s, DType want, int fallback) {
    const auto& ins = s.model().graph.inputs;
    for (size_t i = 0; i < ins.size(); i++)
        if (ins[i].dtype == want) return int(i);
    return fallback;
}

}  // namespace

int main(int argc, char** argv) {
    std::string te_path, unet_path, vae_path, tokens_path, uncond_path, out = "txt2img.png", init_latent, save_latent;
    std::string prompt_text, negative_text, vocab_path;
    bool have_prompt = false;
    Special sp;
    int steps = 20, width = 512, height = 512, threads = 0;
    unsigned seed = 42;
    float guidance = 7.5f;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
            return argv[++i];
        };
        if (a == "--text-encoder") te_path = next();
        else if (a == "--unet") unet_path = next();
        else if (a == "--vae-decoder") vae_path = next();
        else if (a == "--tokens") tokens_path = next();
        else if (a == "--uncond-tokens") uncond_path = next();
        else if (a == "--prompt") prompt_text = next(), have_prompt = true;
        else if (a == "--negative-prompt") negative_text = next();
        else if (a == "--vocab") vocab_path = next();
        else if (a == "--bos") sp.bos = std::stoll(next());
        else if (a == "--eos") sp.eos = std::stoll(next());
        else if (a == "--pad") sp.pad = std::stoll(next());
        else if (a == "--seed") seed = unsigned(std::stoul(next()));
        else if (a == "--steps") steps = std::stoi(next());
        else if (a == "--guidance") guidance = std::stof(next());
        else if (a == "--width") width = std::stoi(next());
        else if (a == "--height") height = std::stoi(next());
        else if (a == "--threads") threads = std::stoi(next());
        else if (a == "--init-latent") init_latent = next();
        else if (a == "--save-latent") save_latent = next();
        else if (a == "-o" || a == "--output") out = next();
        else {
            fprintf(stderr, "usage: txt2img --text-encoder TE.onnx --unet UNET.onnx --vae-decoder VAE.onnx (--prompt TEXT | --tokens IDS.npy)\n"
                            "               [--negative-prompt TEXT] [--vocab BPE.txt.gz]\n"
                            "               [--uncond-tokens IDS.npy] [--bos N] [--eos N] [--pad N]\n"
                            "               [--seed N] [--steps N] [--guidance G] [--width W] [--height H] [--threads N]\n"
                            "               [--init-latent X.npy] [--save-latent OUT.npy] [-o IMAGE.png]\n");
            return 2;
        }
    }
    try {
        if (te_path.empty() || unet_path.empty() || vae_path.empty() || tokens_path.empty() == !have_prompt)
            throw std::runtime_error("--text-encoder, --unet, --vae-decoder and one of --prompt or --tokens are required");
        if (steps < 1 || steps > 1000 || width % 8 || height % 8 || width <= 0 || height <= 0)
            throw std::runtime_error("steps must be 1..1000 and the size a positive multiple of 8");
        onnx2ggml::SessionOptions opts;
        opts.threads = threads;
        auto te = Session::open(te_path, opts);
        opts.quiet = true;
        auto unet = Session::open(unet_path, opts);
        auto vae = Session::open(vae_path, opts);

        // 1. text embeddings for [uncond, prompt]
        std::vector<int64_t> prompt, uncond;
        if (have_prompt) {
            if (vocab_path.empty()) vocab_path = onnx2ggml::default_clip_vocab_path();
            if (vocab_path.empty())
                throw std::runtime_error("no CLIP vocabulary: run scripts/setup.sh, or pass --vocab or set ONNX2GGML_CLIP_VOCAB");
            onnx2ggml::ClipTokenizer tok(vocab_path);
            prompt = tok.tokenize(prompt_text, sp.pad, kSeqLen);
            uncond = tok.tokenize(negative_text, sp.pad, kSeqLen);
        } else {
            prompt = read_ids(tokens_path);
        }
        if (!uncond_path.empty()) uncond = read_ids(uncond_path);
        const auto& te_in = te->model().graph.inputs;
        Tensor ctx = te->run({{te_in[0].name, token_batch(uncond, prompt, sp)}})[0];  // [2, 77, D]

        // 2. latent noise
        int64_t lh = height / 8, lw = width / 8, n = 4 * lh * lw;
        std::vector<float> x(static_cast<size_t>(n));
        if (!init_latent.empty()) {
            Tensor t = onnx2ggml::read_npy(init_latent);
            if (t.numel() != n || t.dtype != DType::FLOAT) throw std::runtime_error("--init-latent must be float32 [1,4,H/8,W/8]");
            std::memcpy(x.data(), t.data.data(), size_t(n) * 4);
        } else {
            std::mt19937 rng(seed);
            std::normal_distribution<float> nd;
            for (auto& v : x) v = nd(rng);
        }

        // 3. denoising loop with classifier-free guidance (batch 2: uncond, cond)
        Ddim sched(steps);
        const auto& un_in = unet->model().graph.inputs;
        int i_sample = 0, i_t = 1, i_ctx = 2;
        for (size_t k = 0; k < un_in.size(); k++) {
            const std::string& nm = un_in[k].name;
            if (nm.find("time") != std::string::npos) i_t = int(k);
            else if (nm.find("hidden") != std::string::npos || nm.find("context") != std::string::npos) i_ctx = int(k);
            else if (nm.find("sample") != std::string::npos || nm.find("latent") != std::string::npos) i_sample = int(k);
        }
        DType tdt = un_in[size_t(i_t)].dtype == DType::UNDEFINED ? DType::FLOAT : un_in[size_t(i_t)].dtype;
        for (int t : sched.timesteps) {
            Tensor s = make(DType::FLOAT, {2, 4, lh, lw});
            std::memcpy(s.data.data(), x.data(), size_t(n) * 4);
            std::memcpy(s.data.data() + size_t(n) * 4, x.data(), size_t(n) * 4);
            Tensor ts = make(tdt, un_in[size_t(i_t)].has_shape && un_in[size_t(i_t)].dims.empty() ? std::vector<int64_t>{}
                                                                                                     : std::vector<int64_t>{2});
            for (int64_t j = 0; j < ts.numel(); j++) {
                if (tdt == DType::INT64) ts.as<int64_t>()[j] = t;
                else ts.as<float>()[j] = float(t);
            }
            Tensor eps = unet->run({{un_in[size_t(i_sample)].name, s}, {un_in[size_t(i_t)].name, ts},
                                    {un_in[size_t(i_ctx)].name, ctx}})[0];
            const float* e = eps.as<float>();
            std::vector<float> guided(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; j++) guided[size_t(j)] = e[j] + guidance * (e[n + j] - e[j]);
            sched.step(x, guided, t);
            fprintf(stderr, "step t=%d done\n", t);
        }
        if (!save_latent.empty()) {
            Tensor lt = make(DType::FLOAT, {1, 4, lh, lw});
            std::memcpy(lt.data.data(), x.data(), size_t(n) * 4);
            onnx2ggml::write_npy(save_latent, lt);
        }

        // 4. decode and write the PNG
        Tensor lat = make(DType::FLOAT, {1, 4, lh, lw});
        for (int64_t j = 0; j < n; j++) lat.as<float>()[j] = x[size_t(j)] / 0.18215f;
        Tensor img = vae->run({{vae->model().graph.inputs[0].name, lat}})[0];  // [1, 3, H, W]
        int64_t H = img.shape[2], W = img.shape[3];
        std::vector<uint8_t> rgb(size_t(H * W * 3));
        for (int64_t c = 0; c < 3; c++)
            for (int64_t p = 0; p < H * W; p++) {
                float v = std::min(1.0f, std::max(0.0f, img.as<float>()[c * H * W + p] / 2 + 0.5f));
                rgb[size_t(p * 3 + c)] = uint8_t(std::lround(v * 255));
            }
        write_png(out, rgb, int(W), int(H));
        printf("wrote %s (%lldx%lld), %d steps\n", out.c_str(), (long long)W, (long long)H, steps);
        return 0;
    } catch (const std::exception& e) {
        fprintf(stderr, "txt2img: error: %s\n", e.what());
        return 1;
    }
}
