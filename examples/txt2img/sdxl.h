// SDXL text-to-image with four ONNX models (two CLIP text encoders, UNet, VAE decoder), as diffusers'
// StableDiffusionXLPipeline runs it with DDIM: context = [encoder 1, encoder 2] penultimate hidden states side by
// side, pooled text_embeds from encoder 2, time ids (original size, crop 0 0, target size), classifier-free
// guidance, VAE scaling factor 0.13025.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "onnx2ggml/embedding.h"
#include "onnx2ggml/tiling.h"

namespace txt2img {

struct SdxlOptions {
    std::string text_encoder, text_encoder_2, unet, vae_decoder;
    // Token ids per encoder, [bos, ..., eos] or already padded to 77. Encoder 2 takes encoder 1's ids where its own
    // are empty: SDXL's two tokenizers share the BPE and differ only in padding (pad, pad_2). Without negative ids
    // the negative embeddings are zeros (diffusers' force_zeros_for_empty_prompt).
    std::vector<int64_t> ids, ids_2, negative_ids, negative_ids_2;
    int64_t eos = 49407, pad = 49407, pad_2 = 0;  // CLIP-L pads with <|endoftext|>, CLIP-G with "!"
    int steps = 20, width = 1024, height = 1024, threads = 0;
    unsigned seed = 42;
    float guidance = 5.0f;
    std::string init_latent, save_latent, out = "txt2img.png";
    bool progress = false;  // the progress line even when stderr is not a terminal
    // Textual inversion: CLIP-L's vectors (clip_l, or any set of its width) to encoder 1, CLIP-G's to encoder 2.
    std::vector<onnx2ggml::EmbeddingFile> embeddings;
    onnx2ggml::TileOptions vae_tiling;  // the VAE decode in tiles (size 0: whole)
};

// Runs the pipeline and writes the PNG (and the final latent); throws std::runtime_error with context.
void sdxl_txt2img(const SdxlOptions& o);

}  // namespace txt2img
