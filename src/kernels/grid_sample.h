// GridSample CPU kernel (ggml custom op), for the op library's grid_sample (src/lib/resize.cpp).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

enum class GsMode { Linear, Nearest, Cubic };
enum class GsPad { Zeros, Border, Reflection };
struct GridP {
    GsMode mode;
    GsPad pad;
    bool align;
    int64_t N, C;
    Ints in_sp, out_sp;  // ONNX order
};
// x [N, C, in_sp...] and grid [N, out_sp..., k] (contiguous F32, any folding) -> [N, C, out_sp...] with ggml ne `ne`.
ggml_tensor* grid_sample_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* grid, const GridP& p, const int64_t ne[4]);

}  // namespace o2g
