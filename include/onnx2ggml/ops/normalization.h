// Op library, Normalization: BatchNormalization, InstanceNormalization, GroupNormalization and the fused
// GroupNorm(+SiLU), LayerNormalization, RMSNormalization, LpNormalization, MeanVarianceNormalization, LRN, and the
// residual sum of com.microsoft's Skip* normalizations and BiasAdd.
// Included by onnx2ggml/ops.h; see its conventions. Functions marked "CPU kernel" run as ggml custom ops, so only
// on the CPU backend.
#pragma once

namespace o2g {

struct BatchNormParams {
    float eps = 1e-5f;
    int channel_dim = 2;  // ggml dim of the channels (ONNX axis 1); 3 may hold N*C (a rank-5 input, folded)
    void fields(FieldWriter& f) const { f("eps", eps); f("channel_dim", channel_dim); }
};
// Inference batch norm per channel. With constant weights (the usual case) as x * a + c, a = scale / sqrt(var + eps)
// and c = bias - mean * a computed on the C-element vectors, so x is read once; otherwise as
// (x - mean) / sqrt(var + eps) * scale + bias.
ggml_tensor* batch_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, ggml_tensor* mean,
                        ggml_tensor* var, const BatchNormParams& p);

struct InstanceNormParams {
    float eps = 1e-5f;
    int channel_dim = 2;  // ggml dim of the channels; the dims below it are normalized together
    void fields(FieldWriter& f) const { f("eps", eps); f("channel_dim", channel_dim); }
};
// Normalizes each (image, channel) over its spatial dims, then scale and bias per channel.
ggml_tensor* instance_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias,
                           const InstanceNormParams& p);

struct GroupNormParams {
    int64_t groups = 32;
    float eps = 1e-5f;
    bool silu = false;    // SiLU of the result (the fused GroupNorm+SiLU of diffusion models)
    int channel_dim = 2;  // ggml dim of the channels; the dims below it are normalized together
    // x is [C, W, H, N] (ONNX NHWC, com.microsoft GroupNorm's default); channel_dim is then ignored.
    bool channels_last = false;
    void fields(FieldWriter& f) const {
        f("groups", groups);
        f("eps", eps);
        f("silu", silu);
        f("channel_dim", channel_dim);
        if (channels_last) f("channels_last", channels_last);
    }
};
// Normalizes each group of C/groups channels of each image, then scale and bias per channel (scale and bias
// with `groups` elements are per group, as GroupNormalization-18 has them). The CPU kernel accumulates in double
// and writes x * a + b in one pass; elsewhere ggml_group_norm. channels_last: x is permuted to [W, H, C, N] and the
// result back (nhwc_to_nchw, nchw_to_nhwc: a copy each, unless x is another NHWC op's copy).
ggml_tensor* group_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, const GroupNormParams& p);

struct LayerNormParams {
    int dims = 1;  // the innermost ggml dims normalized together (ONNX: axes axis .. rank-1)
    float eps = 1e-5f;
    void fields(FieldWriter& f) const { f("dims", dims); f("eps", eps); }
};
// (x - mean) / sqrt(var + eps) over the normalized dims, times scale plus bias (either may be null); scale
// and bias broadcast to x.
ggml_tensor* layer_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, const LayerNormParams& p);
// LayerNormalization's second and third outputs: the mean and 1 / sqrt(var + eps), shaped like x with the
// normalized dims set to 1.
ggml_tensor* layer_norm_mean(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p);
ggml_tensor* layer_norm_inv_std_dev(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p);

// x / sqrt(mean(x^2) + eps) over the normalized dims, times scale (broadcast to x).
ggml_tensor* rms_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, const LayerNormParams& p);
// 1 / sqrt(mean(x^2) + eps) over the normalized dims, shaped like x with those dims set to 1
// (SimplifiedLayerNormalization's inv_std_var).
ggml_tensor* rms_norm_inv_std_dev(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p);

struct SkipAddParams {
    int channel_dim = 0;  // ggml dim of x's channels, along which bias lies
    bool skip_nc = false;  // skip is ONNX [N, C] (ne [C, N]): one value per image and channel of a 4-D x
    void fields(FieldWriter& f) const { f("channel_dim", channel_dim); f("skip_nc", skip_nc); }
};
// x + skip + bias, the residual sum of SkipLayerNormalization, SkipGroupNorm and BiasAdd: skip broadcasts to x
// (or, skip_nc, holds one value per image and channel), bias (null: none) one value per channel.
ggml_tensor* skip_add(Ctx& ctx, ggml_tensor* x, ggml_tensor* skip, ggml_tensor* bias, const SkipAddParams& p);

struct LpNormParams {
    int dim = 0;  // ggml dim normalized along
    int p = 2;    // 1 or 2
    void fields(FieldWriter& f) const { f("dim", dim); f("p", p); }
};
// x / ||x||_p along one dim (0 where the norm is 0; CPU kernel).
ggml_tensor* lp_norm(Ctx& ctx, ggml_tensor* x, const LpNormParams& p);

struct MeanVarianceNormParams {
    Ints dims = {0, 1, 3};  // ggml dims normalized together (ONNX default axes {0, 2, 3} of a 4-D tensor)
    void fields(FieldWriter& f) const { f("dims", dims); }
};
// (x - mean) / sqrt(var + 1e-9) over the given dims.
ggml_tensor* mean_variance_norm(Ctx& ctx, ggml_tensor* x, const MeanVarianceNormParams& p);

struct LrnParams {
    int64_t size = 1;
    float alpha = 1e-4f;
    float beta = 0.75f;
    float bias = 1.0f;
    void fields(FieldWriter& f) const {
        f("size", size);
        f("alpha", alpha);
        f("beta", beta);
        f("bias", bias);
    }
};
// Local response normalization across the channels of x [W, H, C, N] (CPU kernel).
ggml_tensor* lrn(Ctx& ctx, ggml_tensor* x, const LrnParams& p);

}  // namespace o2g
