// txt2img: Stable Diffusion text-to-image with ONNX models run by the onnx2ggml library: SD 1.5 (three models) or
// SDXL (four: --text-encoder-2 selects it; the pipeline is in sdxl.cpp). Classifier-free guidance with the DDIM
// scheduler (eta = 0), configured like diffusers' StableDiffusionPipeline / StableDiffusionXLPipeline.
//
//   txt2img --text-encoder te.onnx --unet unet.onnx --vae-decoder vae.onnx --prompt "a red fox in the snow"
//           [--negative-prompt TEXT] [--vocab bpe_simple_vocab_16e6.txt.gz]
//           [--tokens ids.npy] [--uncond-tokens ids.npy] [--bos N] [--eos N] [--pad N]   (CLIP's 49406/49407/49407 by default)
//           [--seed 42] [--steps 20] [--guidance 7.5] [--width 512] [--height 512] [--threads N]
//           [--init-latent x.npy] [--save-latent out.npy] [--progress] [-o image.png]
//           [--embedding FILE[:TOKEN] ...]   (textual inversion: the tokenizer and text encoder(s) gain the tokens)
// A progress line with steps per second is drawn on a terminal only; --progress draws it anyway.
//
// --prompt goes through onnx2ggml's CLIP BPE tokenizer (the ids of transformers' CLIPTokenizer, which diffusers
// uses), padded to 77 with --pad; the negative prompt defaults to "". The merges file is the one scripts/setup.sh
// fetches into .deps/clip/ (found from the source tree or the executable), or --vocab, or $ONNX2GGML_CLIP_VOCAB.
// --tokens instead reads ready-made ids (bos, ids, eos) from a .npy file.
// SDXL: --text-encoder (CLIP-L, penultimate hidden state) and --text-encoder-2 (CLIP-G: penultimate hidden state
// and text_embeds), a UNet with inputs sample, timestep, encoder_hidden_states, text_embeds, time_ids, and SDXL's
// VAE decoder (scaling factor 0.13025); --guidance 5 and 1024x1024 by default.
//   txt2img --text-encoder te.onnx --text-encoder-2 te2.onnx --unet unet.onnx --vae-decoder vae.onnx --tokens ids.npy
//           [--tokens-2 ids.npy] [--uncond-tokens ids.npy [--uncond-tokens-2 ids.npy]] [--pad-2 N] ...
// --prompt works as for SD 1.5. The ids may come padded or as [bos, ..., eos]; each encoder's row is padded with its
// own pad token (--pad for encoder 1, --pad-2 for encoder 2: 0, "!", as SDXL's second tokenizer). --tokens-2 defaults
// to --tokens. Without --negative-prompt or --uncond-tokens the unconditional embeddings are zeros (diffusers'
// force_zeros_for_empty_prompt).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "onnx2ggml/clip_tokenizer.h"
#include "onnx2ggml/ir.h"
#include "onnx2ggml/onnx2ggml.h"
#include "pipeline.h"
#include "sdxl.h"

using onnx2ggml::DType;
using onnx2ggml::Session;
using onnx2ggml::Tensor;
using namespace txt2img;

namespace {

// CLIP's start, end and padding tokens (SD 1.5's tokenizer pads with the end token).
struct Special {
    int64_t bos = 49406, eos = 49407, pad = 49407;
};

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

// Token ids from a file, none for an empty path. A tokenizer takes the place of this (prompt text -> ids).
std::vector<int64_t> ids_from(const std::string& path) { return path.empty() ? std::vector<int64_t>{} : read_ids(path); }

}  // namespace

int main(int argc, char** argv) {
    std::string te_path, unet_path, vae_path, tokens_path, uncond_path, out = "txt2img.png", init_latent, save_latent;
    std::string prompt_text, negative_text, vocab_path;
    bool have_prompt = false, have_negative_text = false, force_progress = false;
    std::string te2_path, tokens2_path, uncond2_path;  // SDXL
    std::vector<onnx2ggml::EmbeddingFile> embeddings;
    Special sp;
    int64_t pad_2 = 0;
    int steps = 20, threads = 0;
    onnx2ggml::TileOptions vae_tiling;  // --vae-tiling: the decode in overlapping tiles, memory of one tile
    std::optional<int> width, height;  // size and guidance: per model family unless given
    unsigned seed = 42;
    std::optional<float> guidance;
    std::string opt;  // the option being read: a bad number names it (std::stoi's own error names only itself)
    auto at_least = [](int lo, int v) { return v >= lo ? v : throw std::out_of_range("below its least value"); };
    try {
        for (int i = 1; i < argc; i++) {
            std::string a = argv[i];
            opt = a;
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
            else if (a == "--negative-prompt") negative_text = next(), have_negative_text = true;
            else if (a == "--vocab") vocab_path = next();
            else if (a == "--text-encoder-2") te2_path = next();
            else if (a == "--tokens-2") tokens2_path = next();
            else if (a == "--uncond-tokens-2") uncond2_path = next();
            else if (a == "--pad-2") pad_2 = std::stoll(next());
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
            else if (a == "--progress") force_progress = true;
            else if (a == "--vae-tiling") vae_tiling.size = vae_tiling.size ? vae_tiling.size : onnx2ggml::kVaeTileSize;
            else if (a == "--tile-size") vae_tiling.size = at_least(1, std::stoi(next()));
            else if (a == "--tile-overlap") vae_tiling.overlap = at_least(0, std::stoi(next()));
            else if (a == "--embedding") embeddings.push_back(onnx2ggml::parse_embedding_arg(next()));
            else if (a == "-o" || a == "--output") out = next();
            else {
                fprintf(stderr, "usage: txt2img --text-encoder TE.onnx --unet UNET.onnx --vae-decoder VAE.onnx (--prompt TEXT | --tokens IDS.npy)\n"
                                "               [--negative-prompt TEXT] [--vocab BPE.txt.gz]\n"
                                "               [--uncond-tokens IDS.npy] [--bos N] [--eos N] [--pad N]\n"
                                "               [--seed N] [--steps N] [--guidance G] [--width W] [--height H] [--threads N]\n"
                                "               [--init-latent X.npy] [--save-latent OUT.npy] [--progress] [-o IMAGE.png]\n"
                                "               [--embedding FILE[:TOKEN] ...]   (textual inversion)\n"
                                "               [--vae-tiling] [--tile-size N] [--tile-overlap N]   (decode in tiles of N latents)\n"
                                "       SDXL: add --text-encoder-2 TE2.onnx [--tokens-2 IDS.npy] [--uncond-tokens-2 IDS.npy]\n"
                                "               [--pad-2 N]   (SDXL's VAE; 1024x1024 and guidance 5 by default)\n");
                return 2;
            }
        }
    } catch (const std::exception& e) {
        fprintf(stderr, "txt2img: error: %s: %s\n", opt.c_str(),
                dynamic_cast<const std::logic_error*>(&e) ? "not a number in range" : e.what());
        return 2;
    }
    try {
        // Token ids: from --prompt through the CLIP tokenizer, or from --tokens files.
        std::vector<int64_t> prompt, uncond;
        bool have_negative = !uncond_path.empty();
        if (have_prompt) {
            if (vocab_path.empty()) vocab_path = onnx2ggml::default_clip_vocab_path();
            if (vocab_path.empty())
                throw std::runtime_error("no CLIP vocabulary: run scripts/setup.sh, or pass --vocab or set ONNX2GGML_CLIP_VOCAB");
            onnx2ggml::ClipTokenizer tok(vocab_path);
            // SDXL's tokenizers agree on the ids; CLIP-L's set counts the vectors.
            tok.add_embeddings(embeddings, 0, te2_path.empty() ? "" : "clip_l");
            prompt = tok.tokenize(prompt_text, sp.pad, kSeqLen);
            if (have_negative_text || te2_path.empty()) uncond = tok.tokenize(negative_text, sp.pad, kSeqLen);
            have_negative |= have_negative_text;
        } else if (!tokens_path.empty()) {
            prompt = read_ids(tokens_path);
        }
        if (!uncond_path.empty()) uncond = read_ids(uncond_path);
        if (te_path.empty() || unet_path.empty() || vae_path.empty() || tokens_path.empty() == !have_prompt)
            throw std::runtime_error("--text-encoder, --unet, --vae-decoder and one of --prompt or --tokens are required");
        if (!te2_path.empty()) {
            SdxlOptions o;
            o.text_encoder = te_path, o.text_encoder_2 = te2_path, o.unet = unet_path, o.vae_decoder = vae_path;
            // Encoder 2 gets encoder 1's ids re-padded with its own pad token unless files are given for it.
            o.ids = prompt, o.ids_2 = ids_from(tokens2_path);
            o.negative_ids = have_negative ? uncond : std::vector<int64_t>{}, o.negative_ids_2 = ids_from(uncond2_path);
            o.eos = sp.eos, o.pad = sp.pad, o.pad_2 = pad_2;
            o.steps = steps, o.threads = threads, o.seed = seed;
            o.width = width.value_or(1024), o.height = height.value_or(1024), o.guidance = guidance.value_or(5.0f);
            o.init_latent = init_latent, o.save_latent = save_latent, o.out = out, o.progress = force_progress;
            o.embeddings = embeddings;
            o.vae_tiling = vae_tiling;
            sdxl_txt2img(o);
            return 0;
        }
        const int W = width.value_or(512), H = height.value_or(512);
        const float g = guidance.value_or(7.5f);
        if (steps < 1 || steps > 1000 || W % 8 || H % 8 || W <= 0 || H <= 0)
            throw std::runtime_error("steps must be 1..1000 and the size a positive multiple of 8");
        onnx2ggml::SessionOptions opts;
        opts.threads = threads;
        opts.progress = force_progress;  // a UNet of 1 GB or more shows its loading too
        opts.embeddings = embeddings;
        auto te = Session::open(te_path, opts);
        opts.quiet = true;
        opts.embeddings.clear();
        auto unet = Session::open(unet_path, opts);
        opts.tiling = vae_tiling;
        auto vae = Session::open(vae_path, opts);

        // 1. text embeddings for [uncond, prompt]
        const auto& te_in = te->model().graph.inputs;
        Tensor ctx = te->run({{te_in[0].name, token_batch(uncond, prompt, sp)}})[0];  // [2, 77, D]

        // 2. latent noise
        int64_t lh = H / 8, lw = W / 8, n = 4 * lh * lw;
        std::vector<float> x = initial_latent(init_latent, seed, lh, lw);

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
        Progress progress(steps, force_progress);
        for (int t : sched.timesteps) {
            Tensor s = make(DType::FLOAT, {2, 4, lh, lw});
            std::memcpy(s.data.data(), x.data(), size_t(n) * 4);
            std::memcpy(s.data.data() + size_t(n) * 4, x.data(), size_t(n) * 4);
            Tensor eps = unet->run({{un_in[size_t(i_sample)].name, s},
                                    {un_in[size_t(i_t)].name, timestep_tensor(un_in[size_t(i_t)], t, 2)},
                                    {un_in[size_t(i_ctx)].name, ctx}})[0];
            sched.step(x, guide(eps, g), t);
            progress.step();
        }
        if (!save_latent.empty()) save_latent_npy(save_latent, x, lh, lw);

        // 4. decode and write the PNG
        decode_to_png(*vae, x, 0.18215f, lh, lw, out, steps);
        return 0;
    } catch (const std::exception& e) {
        fprintf(stderr, "txt2img: error: %s\n", e.what());
        return 1;
    }
}
