// Tiled execution of a fully-convolutional image model (a VAE decoder or encoder, an upscaler): its 4-D input
// [N, C, H, W] is cut into overlapping tiles of one shape, every tile runs through the same graph (so memory is
// bounded by one tile's compute buffer), and each 4-D output is put back together with linear feathering over the
// overlaps. The output scale (8 for an SD VAE decoder, 1/8 for its encoder) comes from the first tile's output.
// Attention and GroupNorm see one tile, not the whole image: the result differs from an untiled run (most near
// the seams); tests/tiling_test.py and docs/performance.md measure by how much.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "onnx2ggml/tensor.h"

namespace onnx2ggml {

struct TileOptions {
    int size = 0;       // tile side in input elements (latents for a VAE decoder); 0: no tiling
    int overlap = -1;   // overlap of neighbouring tiles in input elements (the blend ramp's length); -1: size / 4
    std::string input;  // the input to cut; "": the only 4-D input (others are passed to every tile unchanged)
};

// `--vae-tiling`'s tile size, in latents: 512x512-pixel tiles for an SD VAE decoder, overlap 16 (128 pixels of
// blend), as diffusers' AutoencoderKL tiling for SD 1.5. Smaller tiles take less memory but differ more from an
// untiled decode (docs/performance.md).
constexpr int kVaeTileSize = 64;

// What a tiled run did.
struct TileReport {
    int tiles = 0;                  // runs (1: the input fitted in one tile)
    int rows = 0, cols = 0;         // tiles down and across
    int64_t tile_h = 0, tile_w = 0; // every tile's input height and width
};

using RunFn = std::function<std::vector<Tensor>(const std::map<std::string, Tensor>&)>;

// Runs `run` once per tile and stitches the outputs; every output must be 4-D [N, C', H*s, W*s] with a whole
// scale s or 1/s. Errors (one line) name the input, the sizes and what was expected.
std::vector<Tensor> run_tiled(const RunFn& run, const std::map<std::string, Tensor>& inputs, const TileOptions& opts,
                              TileReport* report = nullptr);

// Where tiles of `tile` elements start along an axis of `dim` (> tile): the fewest tiles that overlap by at least
// `overlap`, spread evenly, starts on multiples of `align`; the last ends at `dim`.
std::vector<int64_t> tile_starts(int64_t dim, int64_t tile, int64_t overlap, int64_t align);

}  // namespace onnx2ggml
