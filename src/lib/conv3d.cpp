// Op library: 3-D Conv, and the 3-D core of ConvTranspose (see include/onnx2ggml/ops/conv.h; src/lib/conv.cpp).
// Rank-5 tensors arrive folded as [W, H, D, N*C]; ggml_conv_3d's F16 im2col would lose fp32 parity, so the im2col
// here is F32.
#include <algorithm>
#include <string>

#include "lib/window.h"

namespace o2g {

ggml_tensor* pad_crop_3d(Ctx& ctx, ggml_tensor* x, const int64_t b[3], const int64_t e[3]) {
    int64_t cb[3], ce[3];
    bool crop = false;
    for (int i = 0; i < 3; i++) {
        cb[i] = std::max<int64_t>(0, -b[i]), ce[i] = std::max<int64_t>(0, -e[i]);
        crop = crop || cb[i] || ce[i];
    }
    if (crop) {
        x = cont(ctx, x);
        x = ggml_cont(ctx, ggml_view_4d(ctx, x, x->ne[0] - cb[0] - ce[0], x->ne[1] - cb[1] - ce[1],
                                        x->ne[2] - cb[2] - ce[2], x->ne[3], x->nb[1], x->nb[2], x->nb[3],
                                        size_t(cb[0]) * x->nb[0] + size_t(cb[1]) * x->nb[1] +
                                            size_t(cb[2]) * x->nb[2]));
    }
    int p[6];
    bool pad = false;
    for (int i = 0; i < 3; i++) {
        p[2 * i] = int(std::max<int64_t>(0, b[i])), p[2 * i + 1] = int(std::max<int64_t>(0, e[i]));
        pad = pad || p[2 * i] || p[2 * i + 1];
    }
    if (pad) x = ggml_pad_ext(ctx, cont(ctx, x), p[0], p[1], p[2], p[3], p[4], p[5], 0, 0);
    return x;
}

// One im2col and one product per group, each on its slice of the channels (declared in lib/window.h).
ggml_tensor* conv3d_core(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, int64_t N, int64_t C, int64_t M, int64_t group,
                         const int s[3], const int pd[3], const int d[3]) {
    x = f32_cont(ctx, x);
    k = f32_cont(ctx, k);
    const int64_t cg = C / group, mg = M / group;
    const int64_t KK = k->ne[0] * k->ne[1] * k->ne[2], S = x->ne[0] * x->ne[1] * x->ne[2];
    ggml_tensor* k2 = ggml_reshape_2d(ctx, k, KK * cg, M);  // [KK*C/g, M]
    ggml_tensor* x3 = ggml_reshape_3d(ctx, x, S, C, N);
    ggml_tensor* out = nullptr;
    for (int64_t g = 0; g < group; g++) {
        ggml_tensor* xg = x;
        ggml_tensor* kg = k2;
        if (group > 1) {
            xg = ggml_cont(ctx, ggml_view_3d(ctx, x3, S, cg, N, x3->nb[1], x3->nb[2], size_t(g * cg) * x3->nb[1]));
            xg = ggml_reshape_4d(ctx, xg, x->ne[0], x->ne[1], x->ne[2], cg * N);
            kg = ggml_view_2d(ctx, k2, KK * cg, mg, k2->nb[1], size_t(g * mg) * k2->nb[1]);
        }
        // im2col reads only the kernel's shape from its first argument
        ggml_tensor* shape = ggml_view_4d(ctx, k, k->ne[0], k->ne[1], k->ne[2], cg * mg, k->nb[1], k->nb[2],
                                          k->nb[3], 0);
        ggml_tensor* col = ggml_im2col_3d(ctx, shape, xg, cg, s[0], s[1], s[2], pd[0], pd[1], pd[2], d[0], d[1], d[2],
                                          GGML_TYPE_F32);  // [KK*C/g, OW, OH, OD*N]
        const int64_t OW = col->ne[1], OH = col->ne[2], OD = col->ne[3] / N;
        ggml_tensor* y = mul_mat(ctx, ggml_reshape_2d(ctx, col, col->ne[0], OW * OH * OD * N), kg);  // [P, M/g]
        y = ggml_reshape_4d(ctx, y, OW * OH * OD, N, mg, 1);
        y = ggml_cont(ctx, ggml_permute(ctx, y, 0, 2, 1, 3));  // [OW*OH*OD, M/g, N]
        out = out ? ggml_concat(ctx, out, y, 1) : y;
        if (g + 1 == group) out = ggml_reshape_4d(ctx, out, OW, OH, OD, M * N);
    }
    return out;
}

int64_t check_conv_transpose3d(const ggml_tensor* x, const ggml_tensor* w, const ConvTransposeParams& p) {
    // Rank 5 arrives folded as [W, H, D, N*C]: out_channels says M, the weight's ne[3] (C*M/group) then C.
    const int64_t M = p.out_channels, group = p.group;
    if (M < 1 || group < 1 || M % group || w->ne[3] % (M / group))
        throw OpError("3-D transposed convolution: out_channels " + std::to_string(M) + " and group " +
                      std::to_string(group) + " do not match the weight's " + std::to_string(w->ne[3]) + " kernels");
    const int64_t Cog = M / group, C = w->ne[3] / Cog;
    if (C % group || x->ne[3] % C)
        throw OpError("3-D transposed convolution: the input's N*C " + std::to_string(x->ne[3]) +
                      " does not match " + std::to_string(C) + " channels in " + std::to_string(group) + " groups");
    const Ints wk = spatial_sizes(w, 3);
    if (!p.kernel.empty() && p.kernel != wk)
        throw OpError("kernel_shape " + ints_literal(p.kernel) + " does not match the weight's " + ints_literal(wk));
    return C;
}

ggml_tensor* conv3d_bias(Ctx& ctx, ggml_tensor* y, ggml_tensor* bias, int64_t M) {
    if (!bias) return y;
    if (ggml_nelements(bias) != M)
        throw OpError("bias has " + std::to_string(ggml_nelements(bias)) + " values for " + std::to_string(M) +
                      " output channels");
    return add(ctx, y, ggml_reshape_4d(ctx, f32_cont(ctx, bias), 1, 1, 1, M));  // tiles over N in ne[3]
}

ggml_tensor* conv3d(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p) {
    const int64_t M = p.out_channels, group = p.group;
    if (M < 1 || group < 1 || M % group || w->ne[3] % M)
        throw OpError("3-D convolution: out_channels " + std::to_string(M) + " and group " + std::to_string(group) +
                      " do not match the weight's " + std::to_string(w->ne[3]) + " kernels");
    const int64_t C = w->ne[3] / M * group;
    if (x->ne[3] % C)
        throw OpError("3-D convolution: the input's N*C " + std::to_string(x->ne[3]) + " is not a multiple of " +
                      std::to_string(C) + " channels");
    const Ints wk = spatial_sizes(w, 3);
    if (!p.kernel.empty() && p.kernel != wk)
        throw OpError("kernel_shape " + ints_literal(p.kernel) + " does not match the weight's " + ints_literal(wk));
    WindowGeometry g = conv_geometry(spatial_sizes(x, 3), wk, p.auto_pad, p.pads, p.strides, p.dilations);
    int s[3], d[3], pd[3] = {0, 0, 0};
    int64_t pb[3], pe[3];
    bool symmetric = true;
    for (int i = 0; i < 3; i++) {  // ggml dim i is ONNX spatial axis 2 - i
        const size_t a = size_t(2 - i);
        s[i] = int(g.strides[a]), d[i] = int(g.dilations[a]), pb[i] = g.pad_begin[a], pe[i] = g.pad_end[a];
        symmetric = symmetric && pb[i] == pe[i];
    }
    if (symmetric)
        for (int i = 0; i < 3; i++) pd[i] = int(pb[i]);
    else
        x = pad_crop_3d(ctx, x, pb, pe);
    ggml_tensor* y = conv3d_core(ctx, x, w, x->ne[3] / C, C, M, group, s, pd, d);
    return conv3d_bias(ctx, y, bias, M);
}

}  // namespace o2g
