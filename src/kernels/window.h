// Sliding-window CPU kernels ggml lacks, as ggml custom ops: LpPool and DeformConv's deformed im2col.
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// Up to 3 spatial axes, outermost first; unused leading axes have size 1.
struct LpKernelParams {
    int64_t outer, in[3], out[3], k[3], s[3], d[3], pb[3];
    double p;
};
// x: F32, contiguous, `outer` planes of in[0]*in[1]*in[2] -> F32 tensor of ne `ne` holding the pooled planes.
ggml_tensor* lp_pool_kernel(Ctx& ctx, ggml_tensor* x, const LpKernelParams& q, const int64_t ne[4]);

struct DeformParams {
    int64_t n, ic, ih, iw, kh, kw, sh, sw, dh, dw, ph, pw, oh, ow, g, offg;
    bool mask;
};
// Deformable im2col: x [iw, ih, ic, n], offset [ow, oh, offg*kh*kw*2, n], mask (or null) [ow, oh, offg*kh*kw, n],
// all F32 and contiguous -> cols [ic/g*kh*kw, oh*ow, g, n], each sample bilinear (zero outside) times the mask.
ggml_tensor* deform_cols_kernel(Ctx& ctx, ggml_tensor* x, ggml_tensor* offset, ggml_tensor* mask,
                                const DeformParams& p);

}  // namespace o2g
