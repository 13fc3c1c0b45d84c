// Op library: com.microsoft NhwcConv, an NHWC convolution lowered onto conv() (see onnx2ggml/ops/conv.h).
#include "onnx2ggml/ops.h"

namespace o2g {

ggml_tensor* nhwc_conv_weight(Ctx& ctx, ggml_tensor* w) {
    // w [C/g, kW, kH, M] -> [kW, kH, C/g, M]; a constant weight once, at load time, so conv()'s fast paths (which
    // need a constant weight) still apply.
    const int64_t ne[4] = {w->ne[1], w->ne[2], w->ne[0], w->ne[3]};
    if (ctx.weights && ctx.weights->is_weight(w)) {
        return ctx.weights->derived(w, "nchw", GGML_TYPE_F32, ne, [ne](const float* src, float* dst) {
            const int64_t kW = ne[0], kH = ne[1], Cg = ne[2], M = ne[3];
            for (int64_t m = 0; m < M; m++)
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t y = 0; y < kH; y++)
                        for (int64_t xx = 0; xx < kW; xx++)
                            dst[((m * Cg + c) * kH + y) * kW + xx] = src[((m * kH + y) * kW + xx) * Cg + c];
        });
    }
    return ggml_cont(ctx, ggml_permute(ctx, cont(ctx, w), 2, 0, 1, 3));
}

ggml_tensor* nhwc_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p) {
    if (p.dims != 2) throw OpError("nhwc_conv: only 2-D NHWC convolutions are supported");
    ggml_tensor* k = nhwc_conv_weight(ctx, w);
    // x [C, W, H, N] -> [W, H, C, N], and the result [OW, OH, M, N] -> [M, OW, OH, N]: two copies (an NHWC kernel
    // would avoid them), the first left out after another NHWC op (GroupNorm, NhwcConv).
    return nchw_to_nhwc(ctx, conv(ctx, nhwc_to_nchw(ctx, x), k, bias, p));
}

}  // namespace o2g
