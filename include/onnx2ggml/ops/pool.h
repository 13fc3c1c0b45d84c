// Op library, Pooling: MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, LpPool, GlobalLpPool.
// Included by onnx2ggml/ops.h; see its conventions. Window attributes are in ONNX order, as in conv.h, and the
// geometry is conv.h's conv_geometry.
#pragma once
#include "onnx2ggml/ops/conv.h"  // AutoPad, conv_geometry

namespace o2g {

struct PoolParams {
    int dims = 2;  // spatial dims: 1, 2 or 3 (3-D: x folded to [W, H, D, N*C])
    int auto_pad = AUTO_PAD_NOTSET;
    Ints kernel{};   // kernel_shape (required)
    Ints pads{};     // empty: 0
    Ints strides{};  // empty: 1
    Ints dilations{};  // empty: 1
    bool ceil_mode = false;
    bool count_include_pad = false;  // AveragePool: padding counts in the divisor
    void fields(FieldWriter& f) const {
        f("dims", dims);
        auto_pad_field(f, auto_pad);
        f("kernel", kernel);
        f("pads", pads);
        f("strides", strides);
        f("dilations", dilations);
        f("ceil_mode", ceil_mode);
        f("count_include_pad", count_include_pad);
    }
};
// MaxPool / AveragePool: x [W, H, C, N] (1-D: [L, C, N]; 3-D: [W, H, D, N*C]) -> [OW, OH, C, N]. ggml's valid
// pooling over the padded input; padding never wins a max, and averages are rescaled to ONNX's divisor. 3-D and
// dilated windows, which ggml's pools lack, are gathered by an F32 ggml_im2col_3d and each reduced by a ggml pool.
ggml_tensor* max_pool(Ctx& ctx, ggml_tensor* x, const PoolParams& p);
ggml_tensor* avg_pool(Ctx& ctx, ggml_tensor* x, const PoolParams& p);

// GlobalAveragePool / GlobalMaxPool over the `dims` innermost ggml dims: x [W, H, C, N] (dims 2) -> [1, 1, C, N].
ggml_tensor* global_avg_pool(Ctx& ctx, ggml_tensor* x, int dims);
ggml_tensor* global_max_pool(Ctx& ctx, ggml_tensor* x, int dims);

struct LpPoolParams {
    int dims = 2;  // spatial dims: 1, 2 or 3 (3-D: x folded to [W, H, D, N*C])
    int auto_pad = AUTO_PAD_NOTSET;
    Ints kernel{};   // kernel_shape (required)
    Ints pads{};     // empty: 0
    Ints strides{};  // empty: 1
    Ints dilations{};  // empty: 1
    bool ceil_mode = false;
    float p = 2;
    void fields(FieldWriter& f) const {
        f("dims", dims);
        auto_pad_field(f, auto_pad);
        f("kernel", kernel);
        f("pads", pads);
        f("strides", strides);
        f("dilations", dilations);
        f("ceil_mode", ceil_mode);
        f("p", p);
    }
};
// LpPool: (sum over the window of |x|^p)^(1/p), padding excluded; x's `dims` innermost ggml dims pooled, the
// others kept. A CPU kernel (the only one).
ggml_tensor* lp_pool(Ctx& ctx, ggml_tensor* x, const LpPoolParams& p);

struct GlobalLpPoolParams {
    int dims = 2;  // spatial dims: 1, 2 or 3 (3-D: x folded to [W, H, D, N*C])
    float p = 2;
    void fields(FieldWriter& f) const {
        f("dims", dims);
        f("p", p);
    }
};
// GlobalLpPool: (sum of |x|^p over the `dims` innermost ggml dims)^(1/p): x [W, H, C, N] (dims 2) -> [1, 1, C, N].
// ggml ops only (p = 1 and 2 exact; other p through exp and log).
ggml_tensor* global_lp_pool(Ctx& ctx, ggml_tensor* x, const GlobalLpPoolParams& p);

}  // namespace o2g
