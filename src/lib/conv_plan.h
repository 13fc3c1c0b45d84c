// The one place that chooses a 2-D convolution's algorithm on the CPU, and so the weight form it reads: o2g::conv
// asks it when building a graph, and the session's weight preparation asks it at load to make only forms a kernel
// will read.
#pragma once
#include <cstdint>

namespace o2g {

enum class ConvAlgo {
    Pointwise,  // 1x1, stride 1, unpadded: the pointwise kernel's own weight form
    Direct,     // few input channels (a stem), or depthwise: the weight as it is
    Depthwise,  // depthwise on a non-f32 input: ggml's layout, the weight as it is
    Winograd,   // 3x3 stride 1: gemm panels (the tile is chosen per image size; too small falls back to im2col)
    Im2col,     // the rest: gemm panels (or ggml's product where our gemm does not apply)
};

// What decides the algorithm: all known from the node's attributes and weight, none from the image size.
struct ConvCase {
    int dims = 2;              // spatial dims
    int64_t group = 1, C = 0, M = 0;  // input channels (all groups), output channels
    int64_t kH = 1, kW = 1, sH = 1, sW = 1, dH = 1, dW = 1;
    bool unpadded = true;      // no padding on any side
    bool constant_w = false;   // the weight is an initializer (derived forms can be made once)
    bool cpu = false;          // our CPU kernels apply (ctx.cpu)
    bool f32_input = true;
    bool f32_product = true;   // the product keeps f32 weights (no --weights f16/bf16/q8_0 form)
};

ConvAlgo conv_algorithm(const ConvCase& c);

// Whether that algorithm multiplies by packed gemm panels (what prepare_weights makes at load): Winograd, and im2col
// of a dense (one-group) weight.
inline bool conv_reads_panels(const ConvCase& c, ConvAlgo a) {
    return a == ConvAlgo::Winograd || (a == ConvAlgo::Im2col && c.group == 1);
}

}  // namespace o2g
