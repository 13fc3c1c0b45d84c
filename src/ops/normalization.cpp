// Normalization ops: BatchNormalization (1-15, rank 1-5), InstanceNormalization (1-22), GroupNormalization (18, 21),
// LayerNormalization (17; 1, the contrib form onnxruntime registers in the ONNX domain), RMSNormalization (23),
// LpNormalization (1-22), MeanVarianceNormalization (9, 13), LRN (1, 13), SimplifiedLayerNormalization (1, in the
// ONNX and com.microsoft domains), com.microsoft GroupNorm, SkipGroupNorm, SkipLayerNormalization,
// SkipSimplifiedLayerNormalization and BiasAdd (1), and onnx2ggml.GroupNorm (fuse_group_norm),
// onnx2ggml.LayerNorm and onnx2ggml.RMSNorm (fuse_layer_norm).
#include "ops/op.h"

namespace onnx2ggml {

namespace {

void check_rank(Lower& L, int r) {
    if (r > 4) L.error("rank " + std::to_string(r) + " input; normalizations take at most 4 dims");
}

// Mean and inverse standard deviation outputs are float for half-precision inputs (stash_type 1, as onnxruntime).
DType stats_dtype(Lower& L) {
    DType t = L.dtype(0);
    return t == DType::FLOAT16 || t == DType::BFLOAT16 ? DType::FLOAT : t;
}

}  // namespace

void lower_BatchNormalization(Lower& L) {
    if (L.node.get_int("training_mode", 0) != 0) L.error("training_mode=1 is not supported");
    const int r = L.rank(0);
    if (r != 5) check_rank(L, r);  // rank 5 folds N*C into ne[3], which the per-channel vectors tile
    o2g::BatchNormParams p;
    p.eps = L.node.get_float("epsilon", 1e-5f);
    p.channel_dim = r >= 2 ? r - 2 : 1;  // rank 1: one channel (a size-1 ggml dim)
    ggml_tensor* y = O2G_CALL(L, o2g::batch_norm, L.t(0), L.t(1), L.t(2), L.t(3), L.t(4), p);
    if (r == 5) return L.out_shape(0, y, L.dtype(0), L.shape(0));
    L.out(0, y, L.dtype(0), r);
}

void lower_InstanceNormalization(Lower& L) {
    const int r = L.rank(0);
    check_rank(L, r);
    if (r < 2) L.error("input must have rank >= 2");
    o2g::InstanceNormParams p;
    p.eps = L.node.get_float("epsilon", 1e-5f);
    p.channel_dim = r - 2;
    L.out(0, O2G_CALL(L, o2g::instance_norm, L.t(0), L.t(1), L.t(2), p), L.dtype(0), r);
}

// GroupNormalization-18 has scale and bias per group, -21 per channel; o2g::group_norm takes either.
void lower_GroupNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    check_rank(L, r);
    if (r < 2) L.error("input must have rank >= 2");
    o2g::GroupNormParams p;
    p.groups = L.node.get_int("num_groups", 1);
    p.eps = L.node.get_float("epsilon", 1e-5f);
    p.channel_dim = r - 2;
    if (p.groups <= 0 || xs[1] % p.groups) L.error("num_groups must divide the channels");
    L.out(0, O2G_CALL(L, o2g::group_norm, L.t(0), L.t(1), L.t(2), p), L.dtype(0), r);
}

// onnx2ggml.GroupNorm(x [N, C, ...], scale, bias; num_groups, epsilon, silu): fuse_group_norm. Scale and bias hold
// one value per channel ([C,1,1] affine, GroupNormalization-21) or per group (GroupNormalization-18, no affine).
void lower_GroupNormFused(Lower& L) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    o2g::GroupNormParams p;
    p.groups = L.node.get_int("num_groups", 1);
    p.eps = L.node.get_float("epsilon", 1e-5f);
    p.silu = L.node.get_int("silu", 0) != 0;
    p.channel_dim = r - 2;
    if (r < 3 || r > 4) L.error("fused GroupNorm expects a rank-3 or rank-4 input");
    const int64_t C = xs[1];
    auto fits = [&](int i) { return shape_numel(L.shape(i)) == C || shape_numel(L.shape(i)) == p.groups; };
    if (p.groups <= 0 || C % p.groups || !fits(1) || !fits(2))
        L.error("fused GroupNorm: groups or affine do not match the channels");
    L.out(0, O2G_CALL(L, o2g::group_norm, L.t(0), L.t(1), L.t(2), p), L.dtype(0), r);
}

// Axis and epsilon of LayerNormalization and SimplifiedLayerNormalization: their params and the normalized shape.
static o2g::LayerNormParams layer_norm_params(Lower& L, Shape& ns) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    check_rank(L, r);
    const int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    o2g::LayerNormParams p;
    p.dims = r - axis;
    p.eps = L.node.get_float("epsilon", 1e-5f);
    ns.assign(xs.begin() + axis, xs.end());
    return p;
}

void lower_LayerNormalization(Lower& L) {
    const int r = L.rank(0);
    Shape ns;
    const o2g::LayerNormParams p = layer_norm_params(L, ns);
    for (int i = 1; i <= 2; i++)
        if (L.has(i) && broadcast_shapes(L, ns, L.shape(i)) != ns)
            L.error("scale/bias do not broadcast to the normalized shape");
    ggml_tensor* y = O2G_CALL(L, o2g::layer_norm, L.t(0), L.t(1), L.has(2) ? L.t(2) : nullptr, p);
    L.out(0, y, L.dtype(1), r);  // the scale's type (the contrib form lets it differ from X's)
    // Mean and InvStdDev, shaped like X with the normalized dims set to 1
    if (wanted_out(L, 1)) L.out(1, O2G_CALL(L, o2g::layer_norm_mean, L.t(0), p), stats_dtype(L), r);
    if (wanted_out(L, 2)) L.out(2, O2G_CALL(L, o2g::layer_norm_inv_std_dev, L.t(0), p), stats_dtype(L), r);
}

// SimplifiedLayerNormalization (RMSNorm, onnxruntime's): X / sqrt(mean(X^2) + eps) * scale over axes axis..-1.
void lower_SimplifiedLayerNormalization(Lower& L) {
    const int r = L.rank(0);
    Shape ns;
    const o2g::LayerNormParams p = layer_norm_params(L, ns);
    if (broadcast_shapes(L, ns, L.shape(1)) != ns) L.error("scale does not broadcast to the normalized shape");
    L.out(0, O2G_CALL(L, o2g::rms_norm, L.t(0), L.t(1), p), L.dtype(1), r);
    if (wanted_out(L, 1)) L.out(1, O2G_CALL(L, o2g::rms_norm_inv_std_dev, L.t(0), p), stats_dtype(L), r);
}

// com.microsoft SkipLayerNormalization (input, skip, gamma, beta?, bias?) and SkipSimplifiedLayerNormalization
// (input, skip, gamma, bias?): s = input + skip + bias, normalized over the last axis. Outputs: the result, mean
// (LayerNorm only), inv_std_var, and s. skip is the input's shape or broadcasts to it ([1, S, H], [S, H]).
void lower_skip_norm(Lower& L, bool rms) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    if (r < 2 || r > 4) L.error("input must have rank 2 or 3");
    const int64_t H = xs.back();
    const int bias_at = rms ? 3 : 4;
    for (int i : {2, rms ? 2 : 3, bias_at})
        if (L.has(i) && (L.rank(i) != 1 || L.shape(i)[0] != H))
            L.error("gamma, beta and bias must be 1-D with the hidden size " + std::to_string(H));
    if (broadcast_shapes(L, xs, L.shape(1)) != xs) L.error("skip does not broadcast to the input");
    ggml_tensor* s = O2G_CALL(L, o2g::skip_add, L.t(0), L.t(1), L.has(bias_at) ? L.t(bias_at) : nullptr,
                              o2g::SkipAddParams{});
    o2g::LayerNormParams p;
    p.eps = L.node.get_float("epsilon", 1e-12f);
    if (rms) {
        if (wanted_out(L, 1)) L.error("the mean output is not defined for SkipSimplifiedLayerNormalization");
        L.out(0, O2G_CALL(L, o2g::rms_norm, s, L.t(2), p), L.dtype(0), r);
        if (wanted_out(L, 2)) L.out(2, O2G_CALL(L, o2g::rms_norm_inv_std_dev, s, p), DType::FLOAT, r);
    } else {
        ggml_tensor* beta = L.has(3) ? L.t(3) : nullptr;
        L.out(0, O2G_CALL(L, o2g::layer_norm, s, L.t(2), beta, p), L.dtype(0), r);
        if (wanted_out(L, 1)) L.out(1, O2G_CALL(L, o2g::layer_norm_mean, s, p), DType::FLOAT, r);
        if (wanted_out(L, 2)) L.out(2, O2G_CALL(L, o2g::layer_norm_inv_std_dev, s, p), DType::FLOAT, r);
    }
    if (wanted_out(L, 3)) L.out(3, s, L.dtype(0), r);
}
void lower_SkipLayerNormalization(Lower& L) { lower_skip_norm(L, false); }
void lower_SkipSimplifiedLayerNormalization(Lower& L) { lower_skip_norm(L, true); }

// com.microsoft GroupNorm (X, gamma, beta) and SkipGroupNorm (X, gamma, beta, skip, bias?; second output
// s = X + skip + bias, which is normalized). X is NHWC when channels_last (the default), NCHW otherwise; skip is
// X's shape, [N, 1, 1, C] ([N, C, 1, 1] in NCHW) or [N, C].
void lower_GroupNormContrib(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() != 4) L.error("X must have rank 4");
    o2g::GroupNormParams p;
    p.channels_last = L.node.get_int("channels_last", 1) != 0;
    p.groups = L.node.get_int("groups", 0);
    p.eps = L.node.get_float("epsilon", 1e-5f);
    const int64_t act = L.node.get_int("activation", 0);
    if (act != 0 && act != 1) L.error("activation must be 0 (none) or 1 (SiLU), not " + std::to_string(act));
    p.silu = act == 1;
    const int64_t C = p.channels_last ? xs[3] : xs[1];
    if (p.groups <= 0 || C % p.groups) L.error("groups must divide the " + std::to_string(C) + " channels");
    if (shape_numel(L.shape(1)) != C || shape_numel(L.shape(2)) != C) L.error("gamma and beta must have C values");
    ggml_tensor* x = L.t(0);
    if (L.node.op_type == "SkipGroupNorm") {
        const int sr = L.rank(3);
        if (sr != 2 && sr != 4) L.error("skip must have rank 4 or 2 ([N, C])");
        if (sr == 2 && L.shape(3) != Shape{xs[0], C}) L.error("a 2-D skip must be [N, C]");
        if (L.has(4) && shape_numel(L.shape(4)) != C) L.error("bias must have C values");
        // NHWC in and out, computed in NCHW: an NHWC input that is a layout copy (NhwcConv's output, a Transpose)
        // is then read in place, and so are these outputs by the next NhwcConv or Transpose (o2g::permute_cont).
        ggml_tensor* skip = L.t(3);
        if (p.channels_last) {
            x = O2G_CALL(L, o2g::nhwc_to_nchw, x);
            if (sr == 4) skip = O2G_CALL(L, o2g::nhwc_to_nchw, skip);
        }
        o2g::SkipAddParams sp;
        sp.channel_dim = 2;
        sp.skip_nc = sr == 2;
        x = O2G_CALL(L, o2g::skip_add, x, skip, L.has(4) ? L.t(4) : nullptr, sp);
        const bool last = p.channels_last;
        auto nhwc = [&L, last](ggml_tensor* t) { return last ? O2G_CALL(L, o2g::nchw_to_nhwc, t) : t; };
        if (wanted_out(L, 1)) L.out(1, nhwc(x), L.dtype(0), 4);
        p.channels_last = false;
        p.channel_dim = 2;
        L.out(0, nhwc(O2G_CALL(L, o2g::group_norm, x, L.t(1), L.t(2), p)), L.dtype(0), 4);
        return;
    }
    L.out(0, O2G_CALL(L, o2g::group_norm, x, L.t(1), L.t(2), p), L.dtype(0), 4);
}

// com.microsoft BiasAdd: X [N, S, C] + bias [C] + skip [N, S, C].
void lower_BiasAdd(Lower& L) {
    const Shape& xs = L.shape(0);
    if (xs.size() != 3 || L.rank(1) != 1 || L.shape(1)[0] != xs[2] || L.shape(2) != xs)
        L.error("expects X [N, S, C], bias [C] and skip [N, S, C]");
    L.out(0, O2G_CALL(L, o2g::skip_add, L.t(0), L.t(2), L.t(1), o2g::SkipAddParams{}), L.dtype(0), 3);
}

void lower_RMSNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    const int r = int(xs.size());
    check_rank(L, r);
    o2g::LayerNormParams p;
    p.dims = r - norm_axis(L, L.node.get_int("axis", -1), r);
    p.eps = L.node.get_float("epsilon", 1e-5f);
    if (broadcast_shapes(L, xs, L.shape(1)) != xs) L.error("scale does not broadcast to the input");
    L.out(0, O2G_CALL(L, o2g::rms_norm, L.t(0), L.t(1), p), L.dtype(0), r);
}

void lower_LpNormalization(Lower& L) {
    const int r = L.rank(0);
    check_rank(L, r);
    o2g::LpNormParams p;
    p.dim = gdim(r, norm_axis(L, L.node.get_int("axis", -1), r));
    p.p = int(L.node.get_int("p", 2));
    if (p.p != 1 && p.p != 2) L.error("p must be 1 or 2");
    L.out(0, O2G_CALL(L, o2g::lp_norm, L.t(0), p), L.dtype(0), r);
}

void lower_MeanVarianceNormalization(Lower& L) {
    const int r = L.rank(0);
    check_rank(L, r);
    o2g::MeanVarianceNormParams p;
    p.dims.clear();
    std::vector<bool> seen(size_t(r), false);
    for (int64_t a : L.node.get_ints("axes", {0, 2, 3})) {
        const int ax = norm_axis(L, a, r);
        if (!seen[size_t(ax)]) p.dims.push_back(gdim(r, ax));
        seen[size_t(ax)] = true;
    }
    L.out(0, O2G_CALL(L, o2g::mean_variance_norm, L.t(0), p), L.dtype(0), r);
}

void lower_LRN(Lower& L) {
    o2g::LrnParams p;
    p.alpha = L.node.get_float("alpha", 1e-4f);
    p.beta = L.node.get_float("beta", 0.75f);
    p.bias = L.node.get_float("bias", 1.0f);
    p.size = L.node.get_int("size", 0);
    L.out(0, O2G_CALL(L, o2g::lrn, L.t(0), p), L.dtype(0), 4);
}

// ---- the table: one row per ONNX op (and opset range) this file lowers ----

const std::vector<OpDef>& normalization_ops() {
    static const std::vector<OpDef> t = {
        {.op = "onnx2ggml.GroupNorm", .since = 1, .ggml = lower_GroupNormFused, .math = true},  // fuse_group_norm
        {.op = "onnx2ggml.LayerNorm", .since = 1, .ggml = lower_LayerNormalization, .math = true},  // fuse_layer_norm
        {.op = "onnx2ggml.RMSNorm", .since = 1, .ggml = lower_RMSNormalization, .math = true},      // fuse_layer_norm
        {.op = "RMSNormalization", .since = 23, .accepts = "in=2 out=1 r0>=1 @axis:i~r0 @epsilon:f>=0",
         .ggml = lower_RMSNormalization, .math = true},
        {.op = "LpNormalization", .since = 1, .accepts = "in=1 out=1 @axis:i~r0",
         .ggml = lower_LpNormalization, .math = true},
        {.op = "MeanVarianceNormalization", .since = 9, .accepts = "in=1 out=1 @axes:is~r0",
         .ggml = lower_MeanVarianceNormalization, .math = true},
        {.op = "LRN", .since = 1, .accepts = "in=1 out=1 r0=4 @size:i>=1", .ggml = lower_LRN, .math = true},
        {.op = "BatchNormalization", .since = 1, .accepts = "in=5 out=1..5 @epsilon:f>=0",
         .ggml = lower_BatchNormalization, .math = true},
        {.op = "InstanceNormalization", .since = 1, .accepts = "in=3 out=1 r0>=3 @epsilon:f>=0",
         .ggml = lower_InstanceNormalization, .math = true},
        {.op = "GroupNormalization", .since = 18, .accepts = "in=3 out=1 r0>=2 @num_groups:i>=1 @epsilon:f>=0",
         .ggml = lower_GroupNormalization, .math = true},
        {.op = "LayerNormalization", .since = 17, .accepts = "in=2..3 out=1..3 r0>=1 @axis:i~r0 @epsilon:f>=0",
         .ggml = lower_LayerNormalization, .math = true},
        // onnxruntime's contrib ops, some of them registered in the ONNX domain
        {.op = "LayerNormalization", .since = 1, .accepts = "r0>=1 @axis:i~r0 @epsilon:f>=0",
         .ggml = lower_LayerNormalization, .math = true},
        {.op = "SimplifiedLayerNormalization", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_SimplifiedLayerNormalization, .math = true},
        {.op = "SimplifiedLayerNormalization", .domain = "com.microsoft", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_SimplifiedLayerNormalization, .math = true},
        {.op = "SkipLayerNormalization", .domain = "com.microsoft", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_SkipLayerNormalization,
         .math = true},
        {.op = "SkipSimplifiedLayerNormalization", .domain = "com.microsoft", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_SkipSimplifiedLayerNormalization, .math = true},
        {.op = "GroupNorm", .domain = "com.microsoft", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_GroupNormContrib, .math = true},
        {.op = "SkipGroupNorm", .domain = "com.microsoft", .since = 1, .accepts = "@epsilon:f>=0",
         .ggml = lower_GroupNormContrib, .math = true},
        {.op = "BiasAdd", .domain = "com.microsoft", .since = 1, .ggml = lower_BiasAdd, .math = true},
    };
    return t;
}

}  // namespace onnx2ggml
