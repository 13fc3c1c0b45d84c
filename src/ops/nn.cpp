// Neural-network ops: Conv, ConvTranspose, pools, normalizations, Softmax, MatMul, Gemm, Einsum, Resize.
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


HostTensor transpose_last2(const HostTensor& w) {
    Shape s = w.shape;
    size_t r = s.size();
    int64_t R = s[r - 2], C = s[r - 1], B = w.numel() / std::max<int64_t>(1, R * C);
    Shape os = s;
    std::swap(os[r - 2], os[r - 1]);
    HostTensor out = HostTensor::alloc(DType::FLOAT, os);
    auto f = w.to_f32();
    float* o = reinterpret_cast<float*>(out.mut());
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) o[b * R * C + j * R + i] = f[size_t(b * R * C + i * C + j)];
    return out;
}

HostTensor identity(const HostTensor& w) { return w; }

// Storage type of a constant matrix-product weight: --weights, where ggml's CPU kernels take that row length.
ggml_type matmul_type(Lower& L, const Val& w) {
    ggml_type t = L.b.weights.matmul_type;
    int64_t K = w.rank() >= 2 ? w.shape[w.shape.size() - 2] : 0;  // the shared dim, ne0 once transposed
    if (t == GGML_TYPE_F32 || w.dtype != DType::FLOAT || K % 32 != 0) return GGML_TYPE_F32;
    return t;
}

// B^T for B = input i of ONNX shape [..., K, N]: ggml tensor with ne [K, N, ...].
ggml_tensor* transposed_rhs(Lower& L, int i) {
    Val& v = L.in(i);
    if (v.is_weight && v.host && v.rank() >= 2) return cached_weight(L, i, "#T", transpose_last2, matmul_type(L, v));
    return ggml_cont(L.ctx, ggml_transpose(L.ctx, L.t(i)));
}

// a: ONNX [..., M, K] (ggml [K, M, ...]); bt: ggml [K, N, ...] -> ONNX [..., M, N].
ggml_tensor* matmul_core(Lower& L, ggml_tensor* a, const Shape& as, ggml_tensor* bt, const Shape& bs_t) {
    // Batch dims: ggml_mul_mat broadcasts bt over a when a's batch is a multiple of bt's.
    bool ok = a->ne[2] % bt->ne[2] == 0 && a->ne[3] % bt->ne[3] == 0;
    if (!ok) {
        int64_t ne2 = std::max(a->ne[2], bt->ne[2]), ne3 = std::max(a->ne[3], bt->ne[3]);
        a = ggml_repeat_4d(L.ctx, a, a->ne[0], a->ne[1], ne2, ne3);
        if (bt->ne[2] != ne2 || bt->ne[3] != ne3) bt = ggml_repeat_4d(L.ctx, bt, bt->ne[0], bt->ne[1], ne2, ne3);
    }
    (void)as;
    (void)bs_t;
    return mul_mat(L, bt, L.cont(a));
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

// Rows of src (contiguous) copied into the wider rows of dst, zero-filled: a memcpy per row (ggml_pad is an
// element-by-element loop).
static void pad_rows_kernel(ggml_tensor* dst, int ith, int nth, void*) {
    const ggml_tensor* src = dst->src[0];
    const int64_t n = src->ne[0], m = dst->ne[0], rows = ggml_nrows(dst);
    const int64_t per = (rows + nth - 1) / nth, r0 = std::min(rows, per * ith), r1 = std::min(rows, r0 + per);
    for (int64_t r = r0; r < r1; r++) {
        float* d = static_cast<float*>(dst->data) + r * m;
        std::memcpy(d, static_cast<const float*>(src->data) + r * n, sizeof(float) * size_t(n));
        std::memset(d + n, 0, sizeof(float) * size_t(m - n));
    }
}

static ggml_tensor* pad_rows(Lower& L, ggml_tensor* x, int64_t pad) {
    x = L.cont(x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(L.ctx, GGML_TYPE_F32, x->ne[0] + pad, x->ne[1], x->ne[2], x->ne[3], args, 1,
                                    pad_rows_kernel, GGML_N_TASKS_MAX, nullptr);
    L.b.kernel[y] = "pad_rows";
    return y;
}

ggml_tensor* mul_mat(Lower& L, ggml_tensor* a, ggml_tensor* b) {
    const int64_t K = a->ne[0], pad = (16 - K % 16) % 16;
    // Worth a copy of both operands when the product is large (attention with 40-wide heads, K = 77 tokens).
    if (pad && L.b.weights.native_cpu && a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32 && K >= 16 &&
        a->ne[1] >= 16 && b->ne[1] >= 16) {
        a = pad_rows(L, a, pad);
        b = pad_rows(L, b, pad);
    }
    return ggml_mul_mat(L.ctx, a, b);
}

ggml_tensor* cached_weight(Lower& L, int i, const std::string& suffix, HostTensor (*fn)(const HostTensor&),
                           ggml_type type) {
    Val& v = L.in(i);
    std::string key = v.name + suffix + (type == GGML_TYPE_F32 ? "" : std::string("#") + ggml_type_name(type));
    auto it = L.b.weights.tensors.find(key);
    if (it != L.b.weights.tensors.end()) return it->second;
    HostTensor h = fn(*v.host);
    ggml_tensor* t = L.b.weights.get(key, h, type);
    // The original is only read for this transform: give its mapped pages back (re-read if needed later).
    if (v.host->mapped) drop_pages(v.host->data, v.host->nbytes);
    return t;
}

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

// ---- Normalizations ----
// Per-channel parameter p of length C reshaped to broadcast over ONNX [N, C, spatial...].
static ggml_tensor* channel_param(Lower& L, ggml_tensor* p, int64_t C, int rank) {
    Shape s = {C};
    for (int i = 2; i < rank; i++) s.push_back(1);
    return reshape_to(L, p, s);
}

void lower_BatchNormalization(Lower& L) {
    if (L.node.get_int("training_mode", 0) != 0) L.error("training_mode=1 is not supported");
    int r = L.rank(0);
    int64_t C = r > 1 ? L.shape(0)[1] : 1;
    float eps = L.node.get_float("epsilon", 1e-5f);
    bool consts = L.in(1).host && L.in(2).host && L.in(3).host && L.in(4).host;
    ggml_tensor* y;
    if (consts) {  // fold into one scale and shift per channel
        auto sc = L.h(1).to_f64(), b = L.h(2).to_f64(), m = L.h(3).to_f64(), v = L.h(4).to_f64();
        HostTensor a = HostTensor::alloc(DType::FLOAT, {C}), c = HostTensor::alloc(DType::FLOAT, {C});
        for (int64_t i = 0; i < C; i++) {
            double k = sc[size_t(i)] / std::sqrt(v[size_t(i)] + double(eps));
            a.set_f64(i, k);
            c.set_f64(i, b[size_t(i)] - m[size_t(i)] * k);
        }
        y = ggml_add(L.ctx, ggml_mul(L.ctx, L.t(0), channel_param(L, L.constant(a), C, r)),
                     channel_param(L, L.constant(c), C, r));
    } else {
        ggml_tensor* inv = ggml_sqrt(L.ctx, ggml_scale_bias(L.ctx, L.t(4), 1.0f, eps));
        ggml_tensor* xn = ggml_div(L.ctx, ggml_sub(L.ctx, L.t(0), channel_param(L, L.t(3), C, r)),
                                   channel_param(L, inv, C, r));
        y = ggml_add(L.ctx, ggml_mul(L.ctx, xn, channel_param(L, L.t(1), C, r)), channel_param(L, L.t(2), C, r));
    }
    L.out(0, y, L.dtype(0), r);
}

void lower_InstanceNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t N = xs[0], C = xs[1], S = shape_numel(xs) / std::max<int64_t>(1, N * C);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = ggml_reshape_3d(L.ctx, L.cont(L.t(0)), S, C, N);
    ggml_tensor* y = ggml_norm(L.ctx, x, eps);
    y = ggml_mul(L.ctx, y, ggml_reshape_3d(L.ctx, L.t(1), 1, C, 1));
    y = ggml_add(L.ctx, y, ggml_reshape_3d(L.ctx, L.t(2), 1, C, 1));
    L.out(0, reshape_to(L, y, xs), L.dtype(0), r);
}

void lower_GroupNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int64_t N = xs[0], C = xs[1], S = shape_numel(xs) / std::max<int64_t>(1, N * C);
    int64_t G = L.node.get_int("num_groups", 1);
    float eps = L.node.get_float("epsilon", 1e-5f);
    if (G <= 0 || C % G) L.error("num_groups must divide the channels");
    // Normalize each group as one row: [S*C/G, G*N].
    ggml_tensor* x = ggml_reshape_2d(L.ctx, L.cont(L.t(0)), S * (C / G), G * N);
    ggml_tensor* y = ggml_reshape_3d(L.ctx, ggml_norm(L.ctx, x, eps), S, C, N);
    ggml_tensor *sc, *bi;
    if (L.opset >= 21 || shape_numel(L.shape(1)) == C) {
        sc = L.t(1);
        bi = L.t(2);
    } else {  // opset 18: one scale per group, expanded to channels
        auto expand = [&](int i) {
            auto v = L.h(i).to_f64();
            std::vector<double> e;
            for (int64_t c = 0; c < C; c++) e.push_back(v[size_t(c / (C / G))]);
            return L.constant(HostTensor::from_f64(DType::FLOAT, {C}, e));
        };
        sc = expand(1);
        bi = expand(2);
    }
    y = ggml_add(L.ctx, ggml_mul(L.ctx, y, ggml_reshape_3d(L.ctx, sc, 1, C, 1)), ggml_reshape_3d(L.ctx, bi, 1, C, 1));
    L.out(0, reshape_to(L, y, xs), L.dtype(0), r);
}

void lower_LayerNormalization(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    int axis = norm_axis(L, L.node.get_int("axis", -1), r);
    float eps = L.node.get_float("epsilon", 1e-5f);
    ggml_tensor* x = rows_from_axis(L, L.t(0), xs, axis);
    ggml_tensor* y = reshape_to(L, ggml_norm(L.ctx, x, eps), xs);
    Shape ns(xs.begin() + axis, xs.end());
    auto param = [&](int i) {
        Shape ps = L.shape(i);
        ggml_tensor* p = L.t(i);
        Shape bs = broadcast_shapes(L, ns, ps);
        if (bs != ns) L.error("scale/bias do not broadcast to the normalized shape");
        return p;
    };
    y = ggml_mul(L.ctx, y, param(1));
    if (L.has(2)) y = ggml_add(L.ctx, y, param(2));
    L.out(0, y, L.dtype(0), r);
    bool want_stats = false;
    for (size_t i = 1; i < L.node.outputs.size(); i++) want_stats |= !L.node.outputs[i].empty();
    if (want_stats) {  // Mean and InvStdDev, shaped like X with the normalized dims set to 1
        Shape ss(xs.begin(), xs.begin() + axis);
        for (int i = axis; i < r; i++) ss.push_back(1);
        ggml_tensor* mean = ggml_mean(L.ctx, x);
        ggml_tensor* d = ggml_sub(L.ctx, x, mean);
        ggml_tensor* var = ggml_mean(L.ctx, ggml_sqr(L.ctx, d));
        ggml_tensor* inv = custom_unary(L, ggml_sqrt(L.ctx, ggml_scale_bias(L.ctx, var, 1.0f, eps)), UnaryK::Reciprocal);
        if (L.outs.size() > 1) L.out(1, reshape_to(L, mean, ss), L.dtype(0), r);
        if (L.outs.size() > 2) L.out(2, reshape_to(L, inv, ss), L.dtype(0), r);
    }
}

// ---- MatMul, Gemm ----
void lower_MatMul(Lower& L) {
    Shape as = L.shape(0), bs = L.shape(1);
    if (as.size() > 4 || bs.size() > 4) L.error("MatMul of rank > 4 is not supported");
    ggml_tensor* a = L.t(0);
    bool a1 = as.size() == 1, b1 = bs.size() == 1;
    if (a1) as = {1, as[0]};
    ggml_tensor* bt;
    if (b1) {
        bt = ggml_reshape_2d(L.ctx, L.cont(L.t(1)), bs[0], 1);
        bs = {bs[0], 1};
    } else bt = transposed_rhs(L, 1);
    // Output batch = broadcast of the batch dims.
    Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    Shape batch = broadcast_shapes(L, ab, bb);
    Shape os = batch;
    os.push_back(as[as.size() - 2]);
    os.push_back(bs[bs.size() - 1]);
    if (os.size() > 4) L.error("MatMul result of rank > 4 is not supported");
    // Align a to rank of os (leading ones are free in ggml order).
    ggml_tensor* y = matmul_core(L, a, as, bt, bs);
    int64_t ne[4];
    shape_to_ne(L, os, ne);
    if (y->ne[2] != ne[2] || y->ne[3] != ne[3]) {  // a had smaller batch than b
        ggml_tensor* ar = ggml_repeat_4d(L.ctx, L.cont(a), a->ne[0], a->ne[1], ne[2], ne[3]);
        y = mul_mat(L, bt, ar);
    }
    Shape fs = os;
    if (a1) fs.erase(fs.end() - 2);
    if (b1) fs.erase(fs.end() - 1);
    L.out(0, reshape_to(L, y, fs), L.dtype(0), int(fs.size()));
}

void lower_Gemm(Lower& L) {
    bool ta = L.node.get_int("transA", 0) != 0, tb = L.node.get_int("transB", 0) != 0;
    float alpha = L.node.get_float("alpha", 1.0f), beta = L.node.get_float("beta", 1.0f);
    ggml_tensor* a = L.t(0);
    if (ta) a = ggml_cont(L.ctx, ggml_transpose(L.ctx, a));
    ggml_tensor* bt;  // ggml [K, N]
    if (!tb) bt = transposed_rhs(L, 1);
    else if (L.in(1).is_weight && L.in(1).host && L.rank(1) == 2 && L.b.weights.matmul_type != GGML_TYPE_F32 &&
             L.in(1).dtype == DType::FLOAT && L.shape(1)[1] % 32 == 0)
        bt = cached_weight(L, 1, "", identity, L.b.weights.matmul_type);
    else bt = L.t(1);
    ggml_tensor* y = mul_mat(L, bt, L.cont(a));    // [N, M]
    if (alpha != 1.0f) y = ggml_scale(L.ctx, y, alpha);
    if (L.has(2) && beta != 0.0f) {
        Shape ys = {y->ne[1], y->ne[0]};
        Shape bsh = broadcast_shapes(L, ys, L.shape(2));
        if (bsh != ys) L.error("C does not broadcast to the output");
        ggml_tensor* c = L.t(2);
        if (beta != 1.0f) c = ggml_scale(L.ctx, c, beta);
        y = ggml_add(L.ctx, y, c);
    }
    L.out(0, y, L.dtype(0), 2);
}

// ---- Einsum: two-operand contractions and single-operand permutes/sums ----
namespace {
struct Term { std::string s; };
void parse_einsum(Lower& L, std::vector<std::string>& ins, std::string& out) {
    std::string eq;
    for (char c : L.node.get_string("equation", ""))
        if (c != ' ') eq += c;
    auto arrow = eq.find("->");
    std::string lhs = arrow == std::string::npos ? eq : eq.substr(0, arrow);
    size_t p = 0;
    while (true) {
        auto q = lhs.find(',', p);
        ins.push_back(lhs.substr(p, q == std::string::npos ? std::string::npos : q - p));
        if (q == std::string::npos) break;
        p = q + 1;
    }
    for (auto& t : ins)
        if (t.find('.') != std::string::npos) L.error("ellipsis in Einsum is not supported");
    if (arrow != std::string::npos) out = eq.substr(arrow + 2);
    else {
        std::map<char, int> cnt;
        for (auto& t : ins)
            for (char c : t) cnt[c]++;
        for (auto& [c, n] : cnt)
            if (n == 1) out += c;
    }
}
// Sums x over letters of `t` not in `keep`; returns new term.
ggml_tensor* sum_out(Lower& L, ggml_tensor* x, std::string& t, Shape& s, const std::string& keep) {
    for (int i = int(t.size()) - 1; i >= 0; i--) {
        if (keep.find(t[size_t(i)]) != std::string::npos) continue;
        int r = int(t.size());
        std::vector<int> perm;
        for (int j = 0; j < r; j++)
            if (j != i) perm.push_back(j);
        perm.push_back(i);
        x = permute_onnx(L, x, r, perm);
        x = ggml_sum_rows(L.ctx, x);
        Shape ns;
        for (int j = 0; j < r; j++)
            if (j != i) ns.push_back(s[size_t(j)]);
        x = reshape_to(L, x, ns);
        s = ns;
        t.erase(size_t(i), 1);
    }
    return x;
}
}  // namespace

void lower_Einsum(Lower& L) {
    std::vector<std::string> ins;
    std::string out;
    parse_einsum(L, ins, out);
    if (int(ins.size()) != L.n_in() || ins.size() > 2) L.error("Einsum with more than two operands is not supported");
    std::vector<ggml_tensor*> xs;
    std::vector<Shape> ss;
    for (int i = 0; i < L.n_in(); i++) {
        if (int(ins[size_t(i)].size()) != L.rank(i)) L.error("equation does not match input rank");
        for (size_t a = 0; a < ins[size_t(i)].size(); a++)
            for (size_t b = a + 1; b < ins[size_t(i)].size(); b++)
                if (ins[size_t(i)][a] == ins[size_t(i)][b]) L.error("repeated index (diagonal) is not supported");
        xs.push_back(L.t(i));
        ss.push_back(L.shape(i));
    }
    std::map<char, int64_t> dim;
    for (size_t i = 0; i < ins.size(); i++)
        for (size_t a = 0; a < ins[i].size(); a++) dim[ins[i][a]] = ss[i][a];
    ggml_tensor* y;
    std::string t;
    Shape s;
    if (ins.size() == 1) {
        t = ins[0];
        s = ss[0];
        y = sum_out(L, xs[0], t, s, out);
    } else {
        std::string ta = ins[0], tb = ins[1];
        Shape sa = ss[0], sb = ss[1];
        // letters only in one operand and not in the output are summed first
        ggml_tensor* a = sum_out(L, xs[0], ta, sa, out + tb);
        ggml_tensor* b = sum_out(L, xs[1], tb, sb, out + ta);
        std::string batch, fa, fb, k;
        for (char c : ta) {
            bool inb = tb.find(c) != std::string::npos, ino = out.find(c) != std::string::npos;
            if (inb && ino) batch += c;
            else if (inb) k += c;
            else fa += c;
        }
        for (char c : tb)
            if (ta.find(c) == std::string::npos) fb += c;
        auto prod = [&](const std::string& str) {
            int64_t p = 1;
            for (char c : str) p *= dim[c];
            return p;
        };
        auto arrange = [&](ggml_tensor* x, const std::string& from, const std::string& order) {
            std::vector<int> perm;
            for (char c : order) perm.push_back(int(from.find(c)));
            return permute_onnx(L, x, int(from.size()), perm);
        };
        int64_t B = prod(batch), M = prod(fa), N = prod(fb), K = prod(k);
        if (batch.size() + fa.size() + k.size() > 4 || batch.size() + fb.size() + k.size() > 4)
            L.error("Einsum operand of rank > 4 is not supported");
        a = ggml_reshape_3d(L.ctx, L.cont(arrange(a, ta, batch + fa + k)), K, M, B);
        b = ggml_reshape_3d(L.ctx, L.cont(arrange(b, tb, batch + fb + k)), K, N, B);
        y = mul_mat(L, b, a);  // [N, M, B] = ONNX [B, M, N]
        t = batch + fa + fb;
        for (char c : t) s.push_back(dim[c]);
        if (s.size() > 4) L.error("Einsum intermediate of rank > 4 is not supported");
        y = reshape_to(L, y, s);
        y = sum_out(L, y, t, s, out);
    }
    std::vector<int> perm;
    for (char c : out) {
        auto p = t.find(c);
        if (p == std::string::npos) L.error("output index not found in inputs");
        perm.push_back(int(p));
    }
    if (!out.empty()) y = permute_onnx(L, y, int(out.size()), perm);
    Shape os;
    for (char c : out) os.push_back(dim[c]);
    L.out(0, reshape_to(L, y, os), L.dtype(0), int(os.size()));
}

// ---- Resize / Upsample: separable gathers with host-computed taps (exact for every mode) ----
void lower_Resize(Lower& L) {
    const Shape& xs = L.shape(0);
    int r = int(xs.size());
    std::string mode = L.node.get_string("mode", "nearest");
    std::string ctm = L.node.get_string("coordinate_transformation_mode", L.opset < 11 ? "asymmetric" : "half_pixel");
    // Upsample and Resize-10 index nearest neighbours by flooring.
    bool legacy = L.node.op_type == "Upsample" || L.opset < 11;
    std::string nm = L.node.get_string("nearest_mode", legacy ? "floor" : "round_prefer_floor");
    float cubic_a = L.node.get_float("cubic_coeff_a", -0.75f);
    bool exclude_outside = L.node.get_int("exclude_outside", 0) != 0;
    float extrap = L.node.get_float("extrapolation_value", 0.0f);
    if (L.node.get_int("antialias", 0) != 0) L.error("antialias is not supported");
    std::vector<double> scales(size_t(r), 1.0);
    Shape os = xs;
    std::vector<int64_t> axes = L.node.get_ints("axes");
    if (axes.empty())
        for (int i = 0; i < r; i++) axes.push_back(i);
    for (auto& a : axes) a = norm_axis(L, a, r);
    std::vector<double> roi;
    if (L.node.op_type == "Upsample" || L.opset < 10) {
        std::vector<double> sc;
        if (L.opset < 9) for (float f : L.node.get_floats("scales")) sc.push_back(f);
        else sc = L.h(1).to_f64();
        for (int i = 0; i < r; i++) {
            scales[size_t(i)] = sc[size_t(i)];
            os[size_t(i)] = int64_t(std::floor(double(xs[size_t(i)]) * sc[size_t(i)]));
        }
        if (mode == "bilinear") mode = "linear";
    } else {
        int si = L.opset >= 11 ? 2 : 1, zi = 3;
        if (L.opset >= 11 && L.has(1)) roi = L.h(1).to_f64();
        bool has_scales = L.has(si) && L.h(si).numel() > 0;
        bool has_sizes = L.opset >= 11 && L.has(zi) && L.h(zi).numel() > 0;
        if (has_sizes) {
            auto sz = L.ints(zi);
            std::string policy = L.node.get_string("keep_aspect_ratio_policy", "stretch");
            if (policy == "stretch") {
                for (size_t j = 0; j < axes.size(); j++) {
                    int a = int(axes[j]);
                    os[size_t(a)] = sz[j];
                    scales[size_t(a)] = double(sz[j]) / double(xs[size_t(a)]);
                }
            } else {
                double sc = policy == "not_larger" ? 1e300 : 0;
                for (size_t j = 0; j < axes.size(); j++) {
                    double v = double(sz[j]) / double(xs[size_t(axes[j])]);
                    sc = policy == "not_larger" ? std::min(sc, v) : std::max(sc, v);
                }
                for (size_t j = 0; j < axes.size(); j++) {
                    int a = int(axes[j]);
                    scales[size_t(a)] = sc;
                    os[size_t(a)] = int64_t(std::nearbyint(double(xs[size_t(a)]) * sc));
                }
            }
        } else if (has_scales) {
            auto sc = L.h(si).to_f64();
            for (size_t j = 0; j < axes.size(); j++) {
                int a = int(axes[j]);
                scales[size_t(a)] = sc[j];
                os[size_t(a)] = int64_t(std::floor(double(xs[size_t(a)]) * sc[j]));
            }
        } else L.error("Resize needs scales or sizes");
    }
    // roi per axis (tf_crop_and_resize)
    std::vector<double> rs(size_t(r), 0.0), re(size_t(r), 1.0);
    if (roi.size() == 2 * axes.size())
        for (size_t j = 0; j < axes.size(); j++) {
            rs[size_t(axes[j])] = roi[j];
            re[size_t(axes[j])] = roi[j + axes.size()];
        }
    ggml_tensor* x = L.t(0);
    Shape cur = xs;
    for (int a = 0; a < r; a++) {
        if (os[size_t(a)] == xs[size_t(a)] && scales[size_t(a)] == 1.0 && ctm != "tf_crop_and_resize") continue;
        int64_t in = xs[size_t(a)], on = os[size_t(a)];
        double sc = scales[size_t(a)];
        // taps: for each output index, source indices and weights (-1 index = extrapolation value)
        int T = mode == "nearest" ? 1 : mode == "linear" ? 2 : 4;
        std::vector<int64_t> idx(size_t(on * T));
        std::vector<double> wts(size_t(on * T));
        bool any_extrap = false;
        for (int64_t o = 0; o < on; o++) {
            double c;
            // float arithmetic, as the reference implementations use, so ties round the same way
            float sf = float(sc);
            if (ctm == "half_pixel") c = double((float(o) + 0.5f) / sf - 0.5f);
            else if (ctm == "pytorch_half_pixel") c = on > 1 ? double((float(o) + 0.5f) / sf - 0.5f) : 0.0;
            else if (ctm == "align_corners") c = on == 1 ? 0.0 : double(o) * double(in - 1) / double(on - 1);
            else if (ctm == "asymmetric") c = double(float(o) / sf);
            else if (ctm == "tf_half_pixel_for_nn") c = double((float(o) + 0.5f) / sf);
            else if (ctm == "half_pixel_symmetric") {
                double adj = double(on) / (sc * double(in));
                double center = double(in) / 2.0, off = center * (1 - adj);
                c = off + (double(o) + 0.5) / sc - 0.5;
            } else if (ctm == "tf_crop_and_resize") {
                double st = rs[size_t(a)], en = re[size_t(a)];
                c = on > 1 ? st * double(in - 1) + double(o) * (en - st) * double(in - 1) / double(on - 1)
                           : 0.5 * (st + en) * double(in - 1);
                if (c < 0 || c > double(in - 1)) {
                    for (int t = 0; t < T; t++) {
                        idx[size_t(o * T + t)] = -1;
                        wts[size_t(o * T + t)] = t == 0 ? 1.0 : 0.0;
                    }
                    any_extrap = true;
                    continue;
                }
            } else L.error("coordinate_transformation_mode '" + ctm + "' is not supported");
            if (mode == "nearest") {
                double n;
                if (nm == "round_prefer_ceil") n = std::floor(c + 0.5);
                else if (nm == "floor") n = std::floor(c);
                else if (nm == "ceil") n = std::ceil(c);
                else n = (c - std::floor(c) == 0.5) ? std::floor(c) : std::round(c);  // round_prefer_floor
                idx[size_t(o)] = std::clamp<int64_t>(int64_t(n), 0, in - 1);
                wts[size_t(o)] = 1.0;
            } else if (mode == "linear") {
                double cc = std::clamp(c, 0.0, double(in - 1));
                int64_t i0 = int64_t(std::floor(cc)), i1 = std::min(i0 + 1, in - 1);
                double f = cc - double(i0);
                idx[size_t(o * 2)] = i0;
                idx[size_t(o * 2 + 1)] = i1;
                wts[size_t(o * 2)] = 1 - f;
                wts[size_t(o * 2 + 1)] = f;
            } else if (mode == "cubic") {
                int64_t i0 = int64_t(std::floor(c));
                double f = c - double(i0);
                double cw[4];
                double A = cubic_a;
                auto k = [A](double t) {
                    t = std::fabs(t);
                    if (t <= 1) return ((A + 2) * t - (A + 3)) * t * t + 1;
                    if (t < 2) return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A;
                    return 0.0;
                };
                double sum = 0;
                for (int t = 0; t < 4; t++) {
                    int64_t src = i0 - 1 + t;
                    cw[t] = k(f + 1 - t);
                    if (exclude_outside && (src < 0 || src >= in)) cw[t] = 0;
                    sum += cw[t];
                    idx[size_t(o * 4 + t)] = std::clamp<int64_t>(src, 0, in - 1);
                }
                for (int t = 0; t < 4; t++) wts[size_t(o * 4 + t)] = exclude_outside ? cw[t] / sum : cw[t];
            } else L.error("mode '" + mode + "' is not supported");
        }
        Shape ns = cur;
        ns[size_t(a)] = on;
        // Fast path: integer nearest upscaling (SD's 2x Upsample) is ggml's own nearest interpolation.
        bool integer_nearest = T == 1 && !any_extrap && r <= 4 && on % in == 0;
        for (int64_t o = 0; integer_nearest && o < on; o++) integer_nearest = idx[size_t(o)] == o / (on / in);
        if (integer_nearest) {
            int64_t ne[4];
            shape_to_ne(L, ns, ne);
            x = ggml_interpolate(L.ctx, L.cont(x), ne[0], ne[1], ne[2], ne[3], GGML_SCALE_MODE_NEAREST);
            cur = ns;
            continue;
        }
        // Gather each tap and blend: sum_t w_t * x[idx_t]
        ggml_tensor* acc = nullptr;
        for (int t = 0; t < T; t++) {
            std::vector<int64_t> ti(static_cast<size_t>(on));
            Shape wsh(size_t(r - a), 1);
            wsh[0] = on;
            std::vector<double> tw(static_cast<size_t>(on));
            bool unit = true;
            for (int64_t o = 0; o < on; o++) {
                ti[size_t(o)] = std::max<int64_t>(0, idx[size_t(o * T + t)]);
                tw[size_t(o)] = wts[size_t(o * T + t)];
                unit &= tw[size_t(o)] == 1.0;
            }
            // gather along axis a
            int64_t outer = 1, inner = 1;
            for (int i = 0; i < a; i++) outer *= cur[size_t(i)];
            for (int i = a + 1; i < r; i++) inner *= cur[size_t(i)];
            ggml_tensor* xr = ggml_reshape_3d(L.ctx, L.cont(x), inner, in, outer);
            HostTensor ih = HostTensor::alloc(DType::INT32, {outer, on});
            for (int64_t oo = 0; oo < outer; oo++)
                for (int64_t j = 0; j < on; j++) ih.set_i64(oo * on + j, ti[size_t(j)]);
            ggml_tensor* g = ggml_get_rows(L.ctx, xr, L.constant(ih));  // [inner, on, outer]
            if (!unit) {
                HostTensor wt = HostTensor::from_f64(DType::FLOAT, {on, 1}, tw);  // ggml [1, on]
                g = ggml_mul(L.ctx, g, L.constant(wt));
            }
            acc = acc ? ggml_add(L.ctx, acc, g) : g;
        }
        if (any_extrap) {
            std::vector<double> mask(static_cast<size_t>(on)), fill(static_cast<size_t>(on));
            for (int64_t o = 0; o < on; o++) {
                bool ex = idx[size_t(o * T)] < 0;
                mask[size_t(o)] = ex ? 0.0 : 1.0;
                fill[size_t(o)] = ex ? double(extrap) : 0.0;
            }
            acc = ggml_mul(L.ctx, acc, L.constant(HostTensor::from_f64(DType::FLOAT, {on, 1}, mask)));
            acc = ggml_add(L.ctx, acc, L.constant(HostTensor::from_f64(DType::FLOAT, {on, 1}, fill)));
        }
        x = reshape_to(L, acc, ns);
        cur = ns;
    }
    L.out(0, x, L.dtype(0), r);
}

}  // namespace onnx2ggml
