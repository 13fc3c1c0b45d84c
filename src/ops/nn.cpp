// Neural-network ops: Conv, ConvTranspose, pools, Softmax.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "ops/custom.h"
#include "ops/host.h"
#include "ops/winograd.h"
#include "runtime/builder.h"

namespace onnx2ggml {

namespace {

// Device permute with ONNX perm semantics (output axis i = input axis perm[i]).
ggml_tensor* permute_onnx(Lower& L, ggml_tensor* x, int r, const std::vector<int>& perm) {
    bool id = true;
    for (int i = 0; i < r; i++) id &= perm[size_t(i)] == i;
    if (id) return x;
    int g[4] = {0, 1, 2, 3};
    for (int i = 0; i < r; i++) g[r - 1 - perm[size_t(i)]] = r - 1 - i;
    return ggml_cont(L.ctx, ggml_permute(L.ctx, x, g[0], g[1], g[2], g[3]));
}


std::vector<int64_t> ints_or(const Node& n, const char* name, size_t len, int64_t def) {
    auto v = n.get_ints(name);
    if (v.empty()) v.assign(len, def);
    return v;
}

// Begin/end pads per spatial axis from pads or auto_pad.
void conv_pads(Lower& L, const Shape& in_sp, const std::vector<int64_t>& k, const std::vector<int64_t>& s,
               const std::vector<int64_t>& d, std::vector<int64_t>& pb, std::vector<int64_t>& pe) {
    size_t n = in_sp.size();
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    pb.assign(n, 0);
    pe.assign(n, 0);
    if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
        for (size_t i = 0; i < n; i++) {
            int64_t out = (in_sp[i] + s[i] - 1) / s[i];
            int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in_sp[i]);
            pb[i] = ap == "SAME_UPPER" ? total / 2 : total - total / 2;
            pe[i] = total - pb[i];
        }
    } else if (ap == "NOTSET") {
        auto pads = L.node.get_ints("pads");
        if (!pads.empty()) {
            if (pads.size() != 2 * n) L.error("pads has wrong length");
            for (size_t i = 0; i < n; i++) {
                pb[i] = pads[i];
                pe[i] = pads[i + n];
            }
        }
    }
}

// Pads (positive) or crops (negative) the two spatial ggml dims 0 (W) and 1 (H).
ggml_tensor* pad_crop_2d(Lower& L, ggml_tensor* x, int64_t wb, int64_t we, int64_t hb, int64_t he) {
    if (wb < 0 || we < 0 || hb < 0 || he < 0) {
        int64_t cwb = std::max<int64_t>(0, -wb), cwe = std::max<int64_t>(0, -we);
        int64_t chb = std::max<int64_t>(0, -hb), che = std::max<int64_t>(0, -he);
        x = L.cont(x);
        x = ggml_view_4d(L.ctx, x, x->ne[0] - cwb - cwe, x->ne[1] - chb - che, x->ne[2], x->ne[3], x->nb[1], x->nb[2],
                         x->nb[3], size_t(cwb) * x->nb[0] + size_t(chb) * x->nb[1]);
        x = ggml_cont(L.ctx, x);
    }
    int lw = int(std::max<int64_t>(0, wb)), rw = int(std::max<int64_t>(0, we));
    int lh = int(std::max<int64_t>(0, hb)), rh = int(std::max<int64_t>(0, he));
    if (lw || rw || lh || rh) x = ggml_pad_ext(L.ctx, x, lw, rw, lh, rh, 0, 0, 0, 0);
    return x;
}

// Dense 2-D convolution through an F32 im2col (ggml_conv_2d's F16 im2col loses fp32 parity).
ggml_tensor* conv2d_f32(Lower& L, ggml_tensor* k, ggml_tensor* x, int sw, int sh, int pw, int ph, int dw, int dh) {
    int64_t M = k->ne[3];
    ggml_tensor* k2 = ggml_reshape_2d(L.ctx, L.cont(k), k->ne[0] * k->ne[1] * k->ne[2], M);  // [CKK, M]
    if (k->ne[0] == 1 && k->ne[1] == 1 && sw == 1 && sh == 1 && pw == 0 && ph == 0 && x->ne[3] == 1) {
        // 1x1 conv, batch 1: a plain matrix product over channels; one transpose instead of im2col + permute.
        int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2];
        ggml_tensor* xt = ggml_cont(L.ctx, ggml_transpose(L.ctx, ggml_reshape_2d(L.ctx, L.cont(x), W * H, C)));
        return ggml_reshape_4d(L.ctx, mul_mat(L, xt, k2), W, H, M, 1);  // [W*H, M]
    }
    ggml_tensor* col = ggml_im2col(L.ctx, k, L.cont(x), sw, sh, pw, ph, dw, dh, true, GGML_TYPE_F32);  // [CKK, OW, OH, N]
    ggml_tensor* y = mul_mat(L, ggml_reshape_2d(L.ctx, col, col->ne[0], col->ne[1] * col->ne[2] * col->ne[3]), k2);
    if (col->ne[3] == 1) return ggml_reshape_4d(L.ctx, y, col->ne[1], col->ne[2], M, 1);  // batch 1: already [OW, OH, M]
    y = ggml_reshape_4d(L.ctx, y, col->ne[1], col->ne[2], col->ne[3], M);  // [OW, OH, N, M]
    return ggml_cont(L.ctx, ggml_permute(L.ctx, y, 0, 1, 3, 2));
}

// 2-D convolution of x [W,H,C,N] with kernel [kW,kH,C/g,M] (stride/dilation per axis, no padding).
ggml_tensor* conv2d_core(Lower& L, ggml_tensor* x, ggml_tensor* k, int64_t group, int sw, int sh, int dw, int dh,
                         int pw, int ph) {
    int64_t C = x->ne[2], M = k->ne[3];
    if (group == 1) return conv2d_f32(L, k, x, sw, sh, pw, ph, dw, dh);
    if (group == C && M == C && k->ne[2] == 1)
        return ggml_conv_2d_dw_direct(L.ctx, k, x, sw, sh, pw, ph, dw, dh);
    int64_t cg = C / group, mg = M / group;
    ggml_tensor* out = nullptr;
    for (int64_t g = 0; g < group; g++) {
        ggml_tensor* xv = ggml_cont(L.ctx, ggml_view_4d(L.ctx, x, x->ne[0], x->ne[1], cg, x->ne[3], x->nb[1], x->nb[2],
                                                        x->nb[3], size_t(g * cg) * x->nb[2]));
        ggml_tensor* kv = ggml_view_4d(L.ctx, k, k->ne[0], k->ne[1], k->ne[2], mg, k->nb[1], k->nb[2], k->nb[3],
                                       size_t(g * mg) * k->nb[3]);
        ggml_tensor* y = conv2d_f32(L, ggml_cont(L.ctx, kv), xv, sw, sh, pw, ph, dw, dh);
        out = out ? ggml_concat(L.ctx, out, y, 2) : y;
    }
    return out;
}

HostTensor flip_for_conv_transpose(const HostTensor& w, int64_t group) {
    // ConvTranspose weight [Cin, Cout/g, kH, kW] -> Conv weight [Cout, Cin/g, kH, kW], spatially flipped.
    int64_t Cin = w.shape[0], Cog = w.shape[1], kH = w.shape[2], kW = w.shape[3];
    int64_t Cig = Cin / group;
    HostTensor out = HostTensor::alloc(DType::FLOAT, {Cog * group, Cig, kH, kW});
    auto f = w.to_f32();
    float* o = reinterpret_cast<float*>(out.mut());
    for (int64_t g = 0; g < group; g++)
        for (int64_t oc = 0; oc < Cog; oc++)
            for (int64_t ic = 0; ic < Cig; ic++)
                for (int64_t y = 0; y < kH; y++)
                    for (int64_t x = 0; x < kW; x++)
                        o[(((g * Cog + oc) * Cig + ic) * kH + y) * kW + x] =
                            f[size_t((((g * Cig + ic) * Cog + oc) * kH + (kH - 1 - y)) * kW + (kW - 1 - x))];
    return out;
}

// Inserts (s-1) zeros between elements along ggml dim 0 (W) or 1 (H).
ggml_tensor* dilate_input(Lower& L, ggml_tensor* x, int dim, int64_t s) {
    if (s == 1) return x;
    x = L.cont(x);
    int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], N = x->ne[3];
    if (dim == 0) {
        ggml_tensor* y = ggml_reshape_4d(L.ctx, x, 1, W, H, C * N);
        y = ggml_pad_ext(L.ctx, y, 0, int(s - 1), 0, 0, 0, 0, 0, 0);
        y = ggml_reshape_4d(L.ctx, ggml_cont(L.ctx, y), s * W, H, C, N);
        y = ggml_view_4d(L.ctx, y, (W - 1) * s + 1, H, C, N, y->nb[1], y->nb[2], y->nb[3], 0);
        return ggml_cont(L.ctx, y);
    }
    ggml_tensor* y = ggml_reshape_4d(L.ctx, x, W, 1, H, C * N);
    y = ggml_pad_ext(L.ctx, y, 0, 0, 0, int(s - 1), 0, 0, 0, 0);
    y = ggml_reshape_4d(L.ctx, ggml_cont(L.ctx, y), W, s * H, C, N);
    y = ggml_view_4d(L.ctx, y, W, (H - 1) * s + 1, C, N, y->nb[1], y->nb[2], y->nb[3], 0);
    return ggml_cont(L.ctx, y);
}

}  // namespace

// ---- Conv (1-D and 2-D) ----
void lower_Conv(Lower& L) {
    const Shape& xs = L.shape(0);
    const Shape& ws = L.shape(1);
    int sp = int(xs.size()) - 2;
    if (sp != 1 && sp != 2) L.error("only 1-D and 2-D convolutions are supported");
    auto kshape = L.node.get_ints("kernel_shape");
    if (kshape.empty()) kshape.assign(ws.begin() + 2, ws.end());
    auto strides = ints_or(L.node, "strides", size_t(sp), 1), dil = ints_or(L.node, "dilations", size_t(sp), 1);
    int64_t group = L.node.get_int("group", 1);
    std::vector<int64_t> pb, pe;
    conv_pads(L, Shape(xs.begin() + 2, xs.end()), kshape, strides, dil, pb, pe);
    ggml_tensor* x = L.t(0);
    ggml_tensor* k = L.t(1);
    if (sp == 1) {  // [N,C,L] -> ggml [L,1,C,N]
        x = ggml_reshape_4d(L.ctx, L.cont(x), xs[2], 1, xs[1], xs[0]);
        k = ggml_reshape_4d(L.ctx, L.cont(k), ws[2], 1, ws[1], ws[0]);
        pb.push_back(0);
        pe.push_back(0);
        strides.push_back(1);
        dil.push_back(1);
        std::swap(pb[0], pb[1]);
        std::swap(pe[0], pe[1]);
        std::swap(strides[0], strides[1]);
        std::swap(dil[0], dil[1]);
    }
    // ONNX spatial order is (H, W); ggml dim 0 is W.
    int64_t wb = pb[1], we = pe[1], hb = pb[0], he = pe[0];
    int pw = 0, ph = 0;
    if (wb == we && hb == he) {
        pw = int(wb);
        ph = int(hb);
    } else x = pad_crop_2d(L, x, wb, we, hb, he);
    // 3x3 stride-1 convolutions with a constant weight take the Winograd path on the CPU (fewer multiply-adds).
    int wino = sp == 2 && group == 1 && ws.size() == 4 && ws[2] == 3 && ws[3] == 3 && strides[0] == 1 &&
                       strides[1] == 1 && dil[0] == 1 && dil[1] == 1 && L.in(1).is_weight && L.in(1).host &&
                       L.dtype(0) == DType::FLOAT && L.b.weights.native_cpu
                   ? winograd_tile(xs[0] * (x->ne[0] + 2 * pw - 2) * (x->ne[1] + 2 * ph - 2))
                   : 0;
    ggml_tensor* y;
    const bool depthwise = sp == 2 && ws.size() == 4 && group == xs[1] && ws[0] == group && ws[1] == 1 &&
                           dil[0] == 1 && dil[1] == 1 && L.dtype(0) == DType::FLOAT && L.b.weights.native_cpu &&
                           ggml_nelements(x) > 0;
    // Our CPU kernels add the bias while writing the output.
    auto f32_bias = [&]() -> ggml_tensor* {
        if (!L.has(2)) return nullptr;
        ggml_tensor* bias = L.t(2);
        if (bias->type != GGML_TYPE_F32) bias = ggml_cast(L.ctx, bias, GGML_TYPE_F32);
        return L.cont(bias);
    };
    if (depthwise) {  // ggml_conv_2d_dw_direct is the slowest part of MobileNet-style models
        if (k->type != GGML_TYPE_F32) k = ggml_cast(L.ctx, k, GGML_TYPE_F32);
        y = conv2d_depthwise(L, x, k, f32_bias(), int(strides[1]), int(strides[0]), pw, ph);
    } else if (wino) {
        y = conv2d_winograd(L, wino, x, 1, f32_bias(), pw, ph);
    } else {
        y = conv2d_core(L, x, k, group, int(strides[1]), int(strides[0]), int(dil[1]), int(dil[0]), pw, ph);
        if (L.has(2)) y = ggml_add(L.ctx, y, ggml_reshape_4d(L.ctx, L.t(2), 1, 1, shape_numel(L.shape(2)), 1));
    }
    if (sp == 1) y = ggml_reshape_3d(L.ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    L.out(0, y, L.dtype(0), int(xs.size()));
}

void lower_ConvTranspose(Lower& L) {
    const Shape& xs = L.shape(0);
    const Shape& ws = L.shape(1);
    int sp = int(xs.size()) - 2;
    if (sp != 1 && sp != 2) L.error("only 1-D and 2-D transposed convolutions are supported");
    Val& wv = L.in(1);
    if (!wv.host) L.error("the weight must be a constant");
    int64_t group = L.node.get_int("group", 1);
    auto kshape = L.node.get_ints("kernel_shape");
    if (kshape.empty()) kshape.assign(ws.begin() + 2, ws.end());
    auto s = ints_or(L.node, "strides", size_t(sp), 1), d = ints_or(L.node, "dilations", size_t(sp), 1);
    auto op = ints_or(L.node, "output_padding", size_t(sp), 0);
    std::vector<int64_t> pb(size_t(sp), 0), pe(size_t(sp), 0);
    auto pads = L.node.get_ints("pads");
    auto out_shape = L.node.get_ints("output_shape");
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    for (int i = 0; i < sp; i++) {
        int64_t in = xs[size_t(2 + i)];
        int64_t full = s[size_t(i)] * (in - 1) + op[size_t(i)] + (kshape[size_t(i)] - 1) * d[size_t(i)] + 1;
        if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
            int64_t target = !out_shape.empty() ? out_shape[out_shape.size() - size_t(sp) + size_t(i)] : in * s[size_t(i)];
            int64_t total = full - target;
            if (ap == "SAME_LOWER") {
                pb[size_t(i)] = total - total / 2;
                pe[size_t(i)] = total / 2;
            } else {
                pb[size_t(i)] = total / 2;
                pe[size_t(i)] = total - total / 2;
            }
        } else if (!pads.empty()) {
            pb[size_t(i)] = pads[size_t(i)];
            pe[size_t(i)] = pads[size_t(i + sp)];
        }
    }
    // 1-D: treat as H=1.
    HostTensor w = *wv.host;
    if (sp == 1) w = w.reshaped({ws[0], ws[1], 1, ws[2]});
    HostTensor wf = flip_for_conv_transpose(w, group);
    ggml_tensor* k = L.b.weights.get(wv.name + "#convT", wf, GGML_TYPE_F32);
    ggml_tensor* x = L.t(0);
    int64_t sW = s.back(), dW = d.back(), kW = kshape.back(), pbW = pb.back(), peW = pe.back(), opW = op.back();
    int64_t sH = sp == 2 ? s[0] : 1, dH = sp == 2 ? d[0] : 1, kH = sp == 2 ? kshape[0] : 1;
    int64_t pbH = sp == 2 ? pb[0] : 0, peH = sp == 2 ? pe[0] : 0, opH = sp == 2 ? op[0] : 0;
    if (sp == 1) x = ggml_reshape_4d(L.ctx, L.cont(x), xs[2], 1, xs[1], xs[0]);
    x = dilate_input(L, x, 0, sW);
    x = dilate_input(L, x, 1, sH);
    x = pad_crop_2d(L, x, dW * (kW - 1) - pbW, dW * (kW - 1) - peW + opW, dH * (kH - 1) - pbH, dH * (kH - 1) - peH + opH);
    ggml_tensor* y = conv2d_core(L, x, k, group, 1, 1, int(dW), int(dH), 0, 0);
    if (L.has(2)) y = ggml_add(L.ctx, y, ggml_reshape_4d(L.ctx, L.t(2), 1, 1, shape_numel(L.shape(2)), 1));
    if (sp == 1) y = ggml_reshape_3d(L.ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    L.out(0, y, L.dtype(0), int(xs.size()));
}

// ---- Pools ----
static void lower_pool(Lower& L, bool is_max) {
    const Shape& xs = L.shape(0);
    int sp = int(xs.size()) - 2;
    if (sp != 1 && sp != 2) L.error("only 1-D and 2-D pooling is supported");
    if (L.node.outputs.size() > 1 && !L.node.outputs[1].empty()) L.error("MaxPool Indices output is not supported");
    auto k = L.node.get_ints("kernel_shape");
    if (int(k.size()) != sp) L.error("kernel_shape has wrong length");
    auto s = ints_or(L.node, "strides", size_t(sp), 1), d = ints_or(L.node, "dilations", size_t(sp), 1);
    for (auto v : d)
        if (v != 1) L.error("pooling dilations are not supported");
    bool ceil_mode = L.node.get_int("ceil_mode", 0) != 0;
    bool include_pad = L.node.get_int("count_include_pad", 0) != 0;
    std::vector<int64_t> pb, pe;
    Shape in_sp(xs.begin() + 2, xs.end());
    conv_pads(L, in_sp, k, s, d, pb, pe);
    std::string ap = L.node.get_string("auto_pad", "NOTSET");
    // Output size per axis, then the physical padding that makes ggml's valid pooling produce it.
    std::vector<int64_t> out(static_cast<size_t>(sp)), pend(static_cast<size_t>(sp));
    for (int i = 0; i < sp; i++) {
        int64_t span = in_sp[size_t(i)] + pb[size_t(i)] + pe[size_t(i)] - k[size_t(i)];
        int64_t o;
        if (ap == "SAME_UPPER" || ap == "SAME_LOWER") o = (in_sp[size_t(i)] + s[size_t(i)] - 1) / s[size_t(i)];
        else if (ap == "VALID") o = (in_sp[size_t(i)] - k[size_t(i)]) / s[size_t(i)] + 1;
        else {
            o = (ceil_mode ? (span + s[size_t(i)] - 1) / s[size_t(i)] : span / s[size_t(i)]) + 1;
            if (ceil_mode && (o - 1) * s[size_t(i)] >= in_sp[size_t(i)] + pb[size_t(i)]) o--;
        }
        out[size_t(i)] = o;
        pend[size_t(i)] = (o - 1) * s[size_t(i)] + k[size_t(i)] - in_sp[size_t(i)] - pb[size_t(i)];
    }
    ggml_tensor* x = L.t(0);
    if (sp == 1) {
        x = ggml_reshape_4d(L.ctx, L.cont(x), xs[2], 1, xs[1], xs[0]);
        k.insert(k.begin(), 1);
        s.insert(s.begin(), 1);
        pb.insert(pb.begin(), 0);
        pe.insert(pe.begin(), 0);
        pend.insert(pend.begin(), 0);
        out.insert(out.begin(), 1);
        in_sp.insert(in_sp.begin(), 1);
    }
    int64_t W = in_sp[1], H = in_sp[0];
    bool padded = pb[0] || pb[1] || pend[0] || pend[1];
    if (padded) {
        x = pad_crop_2d(L, x, pb[1], pend[1], pb[0], pend[0]);
        if (is_max) {  // padding must never win a max
            int64_t PW = W + pb[1] + pend[1], PH = H + pb[0] + pend[0];
            HostTensor m = HostTensor::alloc(DType::FLOAT, {PH, PW});
            float* mp = reinterpret_cast<float*>(m.mut());
            for (int64_t y = 0; y < PH; y++)
                for (int64_t xx = 0; xx < PW; xx++) {
                    int64_t iy = y - pb[0], ix = xx - pb[1];
                    mp[y * PW + xx] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? 0.0f : -INFINITY;
                }
            x = ggml_add(L.ctx, x, L.constant(m));
        }
    }
    ggml_tensor* y = ggml_pool_2d(L.ctx, L.cont(x), is_max ? GGML_OP_POOL_MAX : GGML_OP_POOL_AVG, int(k[1]),
                                  int(k[0]), int(s[1]), int(s[0]), 0, 0);
    if (!is_max && padded) {
        // ggml divides by the full window; rescale by the ONNX divisor per output position.
        int64_t OH = out[0], OW = out[1];
        HostTensor m = HostTensor::alloc(DType::FLOAT, {OH, OW});
        float* mp = reinterpret_cast<float*>(m.mut());
        for (int64_t oy = 0; oy < OH; oy++)
            for (int64_t ox = 0; ox < OW; ox++) {
                auto count = [&](int64_t o, int a, int64_t n) {
                    int64_t st = o * s[size_t(a)] - pb[size_t(a)], en = st + k[size_t(a)];
                    int64_t lo = include_pad ? -pb[size_t(a)] : 0, hi = include_pad ? n + pe[size_t(a)] : n;
                    return std::max<int64_t>(0, std::min(en, hi) - std::max(st, lo));
                };
                int64_t c = count(oy, 0, H) * count(ox, 1, W);
                mp[oy * OW + ox] = float(double(k[0] * k[1]) / double(std::max<int64_t>(c, 1)));
            }
        y = ggml_mul(L.ctx, y, L.constant(m));
    }
    if (sp == 1) y = ggml_reshape_3d(L.ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    L.out(0, y, L.dtype(0), int(xs.size()));
}
void lower_MaxPool(Lower& L) { lower_pool(L, true); }
void lower_AveragePool(Lower& L) { lower_pool(L, false); }

static void global_pool(Lower& L, bool is_max) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    if (r < 3 || r > 4) L.error("expects rank 3 or 4");
    int64_t N = xs[0], C = xs[1], S = shape_numel(xs) / std::max<int64_t>(1, N * C);
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), S, C * N);
    ggml_tensor* y = is_max ? custom_rows(L, x, ReduceK::Max) : ggml_mean(L.ctx, x);
    Shape os = {N, C};
    for (int i = 2; i < r; i++) os.push_back(1);
    L.out(0, reshape_to(L, y, os), L.dtype(0), r);
}
void lower_GlobalAveragePool(Lower& L) { global_pool(L, false); }
void lower_GlobalMaxPool(Lower& L) { global_pool(L, true); }

// ---- Softmax family ----
static void softmax_like(Lower& L, int kind) {  // 0 softmax, 1 log-softmax, 2 hardmax(unsupported)
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t def = L.opset >= 13 ? -1 : 1;
    int axis = norm_axis(L, L.node.get_int("axis", def), r);
    ggml_tensor* x = L.t(0);
    auto apply = [&](ggml_tensor* v) {
        return kind == 0 ? ggml_soft_max(L.ctx, L.cont(v)) : custom_rows(L, v, ReduceK::LogSoftmax);
    };
    if (L.opset < 13) {  // coerced to 2-D at axis
        ggml_tensor* v = rows_from_axis(L, x, xs, axis);
        return L.out(0, reshape_to(L, apply(v), xs), L.dtype(0), r);
    }
    if (axis == r - 1) return L.out(0, apply(x), L.dtype(0), r);
    std::vector<int> perm;
    for (int i = 0; i < r; i++)
        if (i != axis) perm.push_back(i);
    perm.push_back(axis);
    std::vector<int> inv(static_cast<size_t>(r));
    for (int i = 0; i < r; i++) inv[size_t(perm[size_t(i)])] = i;
    ggml_tensor* y = apply(permute_onnx(L, x, r, perm));
    L.out(0, permute_onnx(L, y, r, inv), L.dtype(0), r);
}
void lower_Softmax(Lower& L) { softmax_like(L, 0); }
void lower_LogSoftmax(Lower& L) { softmax_like(L, 1); }

}  // namespace onnx2ggml
