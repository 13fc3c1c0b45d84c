// Op library: normalizations (see include/onnx2ggml/ops/normalization.h).
#include <string>

#include "kernels/custom.h"
#include "kernels/normalization.h"
#include "lib/portable.h"
#include "onnx2ggml/ops.h"

namespace o2g {

namespace {

bool is_weight_of(Ctx& ctx, const ggml_tensor* w) { return ctx.weights && ctx.weights->is_weight(w); }

// A per-channel vector shaped to broadcast over x: its elements along ggml dim `dim`.
ggml_tensor* along(Ctx& ctx, ggml_tensor* v, int dim) {
    int64_t ne[4] = {1, 1, 1, 1};
    ne[dim] = ggml_nelements(v);
    return reshape_ne(ctx, v, ne);
}

void check_norm_dim(int dim, const char* what) {
    if (dim < 0 || dim > 3) throw OpError(std::string(what) + ": dim " + std::to_string(dim) + " is not a ggml dim");
}

// x's dims below, at and above `dim`: [S, C, N].
void split_at(const ggml_tensor* x, int dim, int64_t& S, int64_t& C, int64_t& N) {
    S = 1, N = 1, C = x->ne[dim];
    for (int d = 0; d < dim; d++) S *= x->ne[d];
    for (int d = dim + 1; d < 4; d++) N *= x->ne[d];
}

// x as rows of its innermost `dims` dims: [inner, rest].
ggml_tensor* rows(Ctx& ctx, ggml_tensor* x, int dims) {
    if (dims < 1 || dims > 4) throw OpError("normalized dims " + std::to_string(dims) + " (1 to 4)");
    int64_t inner = 1;
    for (int d = 0; d < dims; d++) inner *= x->ne[d];
    return ggml_reshape_2d(ctx, cont(ctx, x), inner, ggml_nelements(x) / (inner ? inner : 1));
}

// ggml_cont(ggml_permute(x)) moving the `front` dims (ascending) to dims 0.., the rest after them in order; the
// inverse when `back`. x itself when nothing moves.
ggml_tensor* gather_dims(Ctx& ctx, ggml_tensor* x, const bool front[4], bool back) {
    int order[4], n = 0;
    for (int d = 0; d < 4; d++)
        if (front[d]) order[n++] = d;
    for (int d = 0; d < 4; d++)
        if (!front[d]) order[n++] = d;
    bool id = true;
    for (int i = 0; i < 4; i++) id &= order[i] == i;
    if (id) return x;
    int g[4];  // ggml_permute: input dim k goes to output dim g[k]
    for (int i = 0; i < 4; i++) {
        if (back) g[i] = order[i];
        else g[order[i]] = i;
    }
    return ggml_cont(ctx, ggml_permute(ctx, cont(ctx, x), g[0], g[1], g[2], g[3]));
}

}  // namespace

ggml_tensor* batch_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, ggml_tensor* mean,
                        ggml_tensor* var, const BatchNormParams& p) {
    check_norm_dim(p.channel_dim, "batch_norm");
    // ne[3] may fold N*C (a rank-5 input): the C-element vectors along it then tile over N.
    const int64_t C = p.channel_dim == 3 ? ggml_nelements(scale) : x->ne[p.channel_dim];
    if (C < 1 || x->ne[p.channel_dim] % C)
        throw OpError("batch_norm: " + std::to_string(C) + " channels do not divide ne[" +
                      std::to_string(p.channel_dim) + "] = " + std::to_string(x->ne[p.channel_dim]));
    for (ggml_tensor* v : {scale, bias, mean, var})
        if (ggml_nelements(v) != C)
            throw OpError("batch_norm: " + std::to_string(ggml_nelements(v)) + " parameters for " +
                          std::to_string(C) + " channels");
    const int cd = p.channel_dim;
    if (is_weight_of(ctx, scale) && is_weight_of(ctx, bias) && is_weight_of(ctx, mean) && is_weight_of(ctx, var)) {
        ggml_tensor* a = ggml_div(ctx, scale, ggml_sqrt(ctx, ggml_scale_bias(ctx, var, 1.0f, p.eps)));
        ggml_tensor* c = ggml_sub(ctx, bias, ggml_mul(ctx, mean, a));
        return add(ctx, mul(ctx, x, along(ctx, a, cd)), along(ctx, c, cd));  // per-channel passes (math.cpp)
    }
    ggml_tensor* inv = ggml_sqrt(ctx, ggml_scale_bias(ctx, var, 1.0f, p.eps));
    ggml_tensor* xn = ggml_div(ctx, ggml_sub(ctx, x, along(ctx, mean, cd)), along(ctx, inv, cd));
    return add(ctx, mul(ctx, xn, along(ctx, scale, cd)), along(ctx, bias, cd));
}

// ggml's norms assert a non-negative epsilon (a fuzzer finding: a mutated InstanceNormalization aborted).
static float checked_eps(float eps, const char* op) {
    if (!(eps >= 0.0f)) throw OpError(std::string(op) + ": epsilon " + std::to_string(eps) + " is not >= 0");
    return eps;
}

ggml_tensor* instance_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias,
                           const InstanceNormParams& p) {
    check_norm_dim(p.channel_dim, "instance_norm");
    int64_t S, C, N;
    split_at(x, p.channel_dim, S, C, N);
    if (ggml_nelements(scale) != C || ggml_nelements(bias) != C)
        throw OpError("instance_norm: scale/bias do not have " + std::to_string(C) + " elements");
    ggml_tensor* y = ggml_norm(ctx, ggml_reshape_3d(ctx, cont(ctx, x), S, C, N), checked_eps(p.eps, "instance_norm"));
    y = mul(ctx, y, ggml_reshape_3d(ctx, cont(ctx, scale), 1, C, 1));
    y = add(ctx, y, ggml_reshape_3d(ctx, cont(ctx, bias), 1, C, 1));
    return reshape_ne(ctx, y, x->ne);
}

ggml_tensor* group_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, const GroupNormParams& p) {
    if (p.channels_last) {  // [C, W, H, N] -> [W, H, C, N], normalized, and back
        GroupNormParams q = p;
        q.channels_last = false;
        q.channel_dim = 2;
        return nchw_to_nhwc(ctx, group_norm(ctx, nhwc_to_nchw(ctx, x), scale, bias, q));
    }
    check_norm_dim(p.channel_dim, "group_norm");
    int64_t S, C, N;
    split_at(x, p.channel_dim, S, C, N);
    const int64_t G = p.groups;
    if (G <= 0 || C % G)
        throw OpError("group_norm: " + std::to_string(G) + " groups do not divide " + std::to_string(C) + " channels");
    // Per-channel F32 vectors; per-group ones (GroupNormalization-18) are expanded to the channels.
    auto per_channel = [&](ggml_tensor* v) {
        v = f32_cont(ctx, v);
        const int64_t n = ggml_nelements(v);
        if (n == C) return ggml_reshape_1d(ctx, v, C);
        if (n != G) throw OpError("group_norm: " + std::to_string(n) + " scale/bias values for " +
                                  std::to_string(C) + " channels in " + std::to_string(G) + " groups");
        v = ggml_repeat_4d(ctx, ggml_reshape_2d(ctx, v, 1, G), C / G, G, 1, 1);
        return ggml_reshape_1d(ctx, v, C);
    };
    ggml_tensor* gamma = per_channel(scale);
    ggml_tensor* beta = per_channel(bias);
    ggml_tensor* xc = cont(ctx, x);
    if (p.channel_dim != 2) xc = ggml_reshape_4d(ctx, xc, S, 1, C, N);  // channels at dim 2: [W, H, C, N]
    ggml_tensor* y;
    if (ctx.cpu) {
        y = group_norm_kernel(ctx, xc, gamma, beta, G, p.eps);
        if (p.silu) y = ggml_silu_inplace(ctx, y);  // ggml's vectorized exp
    } else {  // other backends: ggml's own kernels
        y = ggml_group_norm(ctx, xc, int(G), checked_eps(p.eps, "group_norm"));
        y = ggml_mul(ctx, y, ggml_reshape_4d(ctx, gamma, 1, 1, C, 1));
        y = ggml_add(ctx, y, ggml_reshape_4d(ctx, beta, 1, 1, C, 1));
        if (p.silu) y = ggml_silu(ctx, y);
    }
    return reshape_ne(ctx, y, x->ne);
}

ggml_tensor* layer_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, ggml_tensor* bias, const LayerNormParams& p) {
    ggml_tensor* y = reshape_ne(ctx, ggml_norm(ctx, rows(ctx, x, p.dims), checked_eps(p.eps, "layer_norm")), x->ne);
    if (scale) y = ggml_mul(ctx, y, scale);
    if (bias) y = ggml_add(ctx, y, bias);
    return y;
}

namespace {
// Shape of x with its normalized dims set to 1.
void stats_ne(const ggml_tensor* x, int dims, int64_t ne[4]) {
    for (int d = 0; d < 4; d++) ne[d] = d < dims ? 1 : x->ne[d];
}
}  // namespace

ggml_tensor* layer_norm_mean(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p) {
    int64_t ne[4];
    stats_ne(x, p.dims, ne);
    return reshape_ne(ctx, ggml_mean(ctx, rows(ctx, x, p.dims)), ne);
}

ggml_tensor* layer_norm_inv_std_dev(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p) {
    ggml_tensor* xr = rows(ctx, x, p.dims);
    ggml_tensor* d = ggml_sub(ctx, xr, ggml_mean(ctx, xr));
    ggml_tensor* var = ggml_mean(ctx, ggml_sqr(ctx, d));
    ggml_tensor* inv = custom_unary(ctx, ggml_sqrt(ctx, ggml_scale_bias(ctx, var, 1.0f, p.eps)), UnaryK::Reciprocal);
    int64_t ne[4];
    stats_ne(x, p.dims, ne);
    return reshape_ne(ctx, inv, ne);
}

ggml_tensor* rms_norm(Ctx& ctx, ggml_tensor* x, ggml_tensor* scale, const LayerNormParams& p) {
    ggml_tensor* y = reshape_ne(ctx, ggml_rms_norm(ctx, rows(ctx, x, p.dims), checked_eps(p.eps, "rms_norm")), x->ne);
    return ggml_mul(ctx, y, scale);
}

ggml_tensor* rms_norm_inv_std_dev(Ctx& ctx, ggml_tensor* x, const LayerNormParams& p) {
    ggml_tensor* ms = ggml_mean(ctx, ggml_sqr(ctx, rows(ctx, x, p.dims)));
    ggml_tensor* inv = custom_unary(ctx, ggml_sqrt(ctx, ggml_scale_bias(ctx, ms, 1.0f, p.eps)), UnaryK::Reciprocal);
    int64_t ne[4];
    stats_ne(x, p.dims, ne);
    return reshape_ne(ctx, inv, ne);
}

ggml_tensor* skip_add(Ctx& ctx, ggml_tensor* x, ggml_tensor* skip, ggml_tensor* bias, const SkipAddParams& p) {
    check_norm_dim(p.channel_dim, "skip_add");
    const int64_t C = x->ne[p.channel_dim];
    if (p.skip_nc) {  // [C, N] -> C along channel_dim, N along dim 3
        if (ggml_nelements(skip) != C * x->ne[3] || p.channel_dim == 3)
            throw OpError("skip_add: a per-image, per-channel skip needs " + std::to_string(C * x->ne[3]) +
                          " values, not " + std::to_string(ggml_nelements(skip)));
        int64_t ne[4] = {1, 1, 1, x->ne[3]};
        ne[p.channel_dim] = C;
        skip = reshape_ne(ctx, cont(ctx, skip), ne);
    }
    if (!ggml_can_repeat(skip, x)) throw OpError("skip_add: skip does not broadcast to the input");
    ggml_tensor* y = ggml_add(ctx, x, skip);
    if (!bias) return y;
    if (ggml_nelements(bias) != C)
        throw OpError("skip_add: bias has " + std::to_string(ggml_nelements(bias)) + " values for " +
                      std::to_string(C) + " channels");
    return ggml_add(ctx, y, along(ctx, cont(ctx, bias), p.channel_dim));
}

ggml_tensor* lp_norm(Ctx& ctx, ggml_tensor* x, const LpNormParams& p) {
    check_norm_dim(p.dim, "lp_norm");
    if (p.p != 1 && p.p != 2) throw OpError("lp_norm: p = " + std::to_string(p.p) + " (1 or 2)");
    bool front[4] = {false, false, false, false};
    front[p.dim] = true;
    ggml_tensor* y = lp_norm_rows(ctx, f32_cont(ctx, gather_dims(ctx, x, front, false)), p.p);
    return gather_dims(ctx, y, front, true);
}

ggml_tensor* mean_variance_norm(Ctx& ctx, ggml_tensor* x, const MeanVarianceNormParams& p) {
    bool front[4] = {false, false, false, false};
    for (int64_t d : p.dims) {
        check_norm_dim(int(d), "mean_variance_norm");
        front[d] = true;
    }
    ggml_tensor* xp = gather_dims(ctx, x, front, false);  // the normalized dims innermost
    int64_t inner = 1;
    for (int d = 0; d < 4; d++)
        if (front[d]) inner *= x->ne[d];
    ggml_tensor* y = ggml_reshape_2d(ctx, cont(ctx, xp), inner, ggml_nelements(x) / (inner ? inner : 1));
    y = reshape_ne(ctx, ggml_norm(ctx, y, 1e-9f), xp->ne);
    return gather_dims(ctx, y, front, true);
}

ggml_tensor* lrn(Ctx& ctx, ggml_tensor* x, const LrnParams& p) {
    if (p.size < 1) throw OpError("lrn: size " + std::to_string(p.size) + " (at least 1)");
    return lrn_kernel(ctx, f32_cont(ctx, x), p);
}

}  // namespace o2g
