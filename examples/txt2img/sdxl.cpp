// SDXL text-to-image: both text encoders, the concatenated context, pooled embeddings and time ids, the UNet loop.
#include "sdxl.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "pipeline.h"

namespace txt2img {
namespace {

size_t input_index(const Session& s, const std::string& name) {
    const auto& ins = s.model().graph.inputs;
    std::string all;
    for (size_t i = 0; i < ins.size(); i++) {
        if (ins[i].name == name) return i;
        all += (i ? ", " : "") + ins[i].name;
    }
    throw std::runtime_error(s.model().path + ": the SDXL UNet needs an input named " + name + " (it has: " + all + ")");
}

// The output of rank `rank`, preferring the one named `want` (a model may give last and penultimate hidden states).
const Tensor& pick_output(const Session& s, const std::vector<Tensor>& outs, const std::string& want, size_t rank) {
    const auto& names = s.model().graph.outputs;
    for (size_t i = 0; i < outs.size(); i++)
        if (names[i].name == want && outs[i].shape.size() == rank) return outs[i];
    for (size_t i = 0; i < outs.size(); i++)
        if (outs[i].shape.size() == rank) return outs[i];
    throw std::runtime_error(s.model().path + ": no rank-" + std::to_string(rank) + " output (wanted " + want + ")");
}

Tensor id_batch(const std::vector<std::vector<int64_t>>& rows) {
    Tensor ids = make(DType::INT64, {int64_t(rows.size()), kSeqLen});
    for (size_t r = 0; r < rows.size(); r++) std::memcpy(ids.as<int64_t>() + r * kSeqLen, rows[r].data(), kSeqLen * 8);
    return ids;
}

std::vector<Tensor> run_encoder(Session& te, const std::vector<std::vector<int64_t>>& rows) {
    return te.run({{te.model().graph.inputs[0].name, id_batch(rows)}});
}

// Fails early, with the names, when the UNet declares a width the encoders do not give.
void check_width(const Session& unet, size_t input, size_t axis, int64_t got, const char* what) {
    const auto& in = unet.model().graph.inputs[input];
    if (in.has_shape && in.dims.size() > axis && in.dims[axis].known() && in.dims[axis].value != got)
        throw std::runtime_error(unet.model().path + ": input " + in.name + " wants width " +
                                 std::to_string(in.dims[axis].value) + " but the text encoders give " + what + " " +
                                 std::to_string(got));
}

}  // namespace

void sdxl_txt2img(const SdxlOptions& o) {
    if (o.text_encoder.empty() || o.text_encoder_2.empty() || o.unet.empty() || o.vae_decoder.empty())
        throw std::runtime_error("SDXL needs --text-encoder, --text-encoder-2, --unet and --vae-decoder");
    if (o.ids.empty() && o.ids_2.empty()) throw std::runtime_error("SDXL needs the prompt's token ids");
    if (o.steps < 1 || o.steps > 1000 || o.width % 8 || o.height % 8 || o.width <= 0 || o.height <= 0)
        throw std::runtime_error("steps must be 1..1000 and the size a positive multiple of 8");
    onnx2ggml::SessionOptions opts;
    opts.threads = o.threads;
    opts.progress = o.progress;  // a UNet of 1 GB or more shows its loading too
    opts.embeddings = o.embeddings;
    opts.embedding_set = "clip_l";
    auto te1 = Session::open(o.text_encoder, opts);
    opts.quiet = true;
    opts.embedding_set = "clip_g";
    auto te2 = Session::open(o.text_encoder_2, opts);
    opts.embeddings.clear();
    auto unet = Session::open(o.unet, opts);
    opts.tiling = o.vae_tiling;
    auto vae = Session::open(o.vae_decoder, opts);

    // 1. text embeddings. Encoder rows: [negative, prompt] with a negative prompt, else [prompt].
    bool negative = !o.negative_ids.empty() || !o.negative_ids_2.empty();
    auto padded = [&](const std::vector<int64_t>& own, const std::vector<int64_t>& other, int64_t pad) {
        return pad_ids(own.empty() ? other : own, o.eos, pad);
    };
    std::vector<std::vector<int64_t>> rows_1, rows_2;
    if (negative) {
        rows_1.push_back(padded(o.negative_ids, o.negative_ids_2, o.pad));
        rows_2.push_back(padded(o.negative_ids_2, o.negative_ids, o.pad_2));
    }
    rows_1.push_back(padded(o.ids, o.ids_2, o.pad));
    rows_2.push_back(padded(o.ids_2, o.ids, o.pad_2));
    std::vector<Tensor> out_1 = run_encoder(*te1, rows_1), out_2 = run_encoder(*te2, rows_2);
    const Tensor& h1 = pick_output(*te1, out_1, "penultimate_hidden_state", 3);  // [rows, 77, D1]
    const Tensor& h2 = pick_output(*te2, out_2, "penultimate_hidden_state", 3);  // [rows, 77, D2]
    const Tensor& pooled = pick_output(*te2, out_2, "text_embeds", 2);           // [rows, P]
    if (h1.shape[1] != kSeqLen || h2.shape[1] != kSeqLen) throw std::runtime_error("text encoders must keep 77 tokens");
    int64_t d1 = h1.shape[2], d2 = h2.shape[2], dp = pooled.shape[1];

    // context [2, 77, D1+D2] and pooled [2, P]; row 0 is unconditional: zeros without a negative prompt
    Tensor ctx = make(DType::FLOAT, {2, kSeqLen, d1 + d2}), pool = make(DType::FLOAT, {2, dp});
    for (size_t r = 0; r < rows_1.size(); r++) {
        size_t b = negative ? r : 1;
        for (int64_t s = 0; s < kSeqLen; s++) {
            float* dst = ctx.as<float>() + (b * kSeqLen + size_t(s)) * size_t(d1 + d2);
            std::memcpy(dst, h1.as<float>() + (r * kSeqLen + size_t(s)) * size_t(d1), size_t(d1) * 4);
            std::memcpy(dst + d1, h2.as<float>() + (r * kSeqLen + size_t(s)) * size_t(d2), size_t(d2) * 4);
        }
        std::memcpy(pool.as<float>() + b * size_t(dp), pooled.as<float>() + r * size_t(dp), size_t(dp) * 4);
    }

    // 2. UNet inputs that stay fixed: time ids (original size, crop top-left, target size; height first)
    size_t i_sample = input_index(*unet, "sample"), i_t = input_index(*unet, "timestep");
    size_t i_ctx = input_index(*unet, "encoder_hidden_states"), i_pool = input_index(*unet, "text_embeds");
    size_t i_ids = input_index(*unet, "time_ids");
    check_width(*unet, i_ctx, 2, d1 + d2, "context");
    check_width(*unet, i_pool, 1, dp, "pooled text_embeds");
    const auto& un_in = unet->model().graph.inputs;
    DType ids_dt = un_in[i_ids].dtype == DType::INT64 ? DType::INT64 : DType::FLOAT;
    Tensor time_ids = make(ids_dt, {2, 6});
    const int64_t tid[6] = {o.height, o.width, 0, 0, o.height, o.width};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 6; k++) {
            if (ids_dt == DType::INT64) time_ids.as<int64_t>()[r * 6 + k] = tid[k];
            else time_ids.as<float>()[r * 6 + k] = float(tid[k]);
        }

    // 3. denoising loop with classifier-free guidance (batch 2: unconditional, conditional)
    int64_t lh = o.height / 8, lw = o.width / 8, n = 4 * lh * lw;
    std::vector<float> x = initial_latent(o.init_latent, o.seed, lh, lw);
    Ddim sched(o.steps);
    Progress progress(o.steps, o.progress);
    for (int t : sched.timesteps) {
        Tensor s = make(DType::FLOAT, {2, 4, lh, lw});
        std::memcpy(s.data.data(), x.data(), size_t(n) * 4);
        std::memcpy(s.data.data() + size_t(n) * 4, x.data(), size_t(n) * 4);
        Tensor eps = unet->run({{un_in[i_sample].name, s}, {un_in[i_t].name, timestep_tensor(un_in[i_t], t, 2)},
                                {un_in[i_ctx].name, ctx}, {un_in[i_pool].name, pool},
                                {un_in[i_ids].name, time_ids}})[0];
        sched.step(x, guide(eps, o.guidance), t);
        progress.step();
    }
    if (!o.save_latent.empty()) save_latent_npy(o.save_latent, x, lh, lw);

    // 4. decode (SDXL's VAE scaling factor) and write the PNG
    decode_to_png(*vae, x, 0.13025f, lh, lw, o.out, o.steps);
}

}  // namespace txt2img
