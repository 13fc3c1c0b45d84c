// Op library: convolutions (see include/onnx2ggml/ops/conv.h; their window geometry is in conv_geometry.cpp).
#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/conv_pointwise.h"
#include "kernels/conv_direct.h"
#include "kernels/gemm.h"
#include "kernels/window.h"
#include "kernels/depthwise.h"
#include "kernels/winograd.h"
#include "lib/conv_plan.h"
#include "lib/portable.h"
#include "lib/window.h"

namespace o2g {


// ---- shared layout helpers ----

ggml_tensor* pad_crop_2d(Ctx& ctx, ggml_tensor* x, int64_t wb, int64_t we, int64_t hb, int64_t he) {
    if (wb < 0 || we < 0 || hb < 0 || he < 0) {
        int64_t cwb = std::max<int64_t>(0, -wb), cwe = std::max<int64_t>(0, -we);
        int64_t chb = std::max<int64_t>(0, -hb), che = std::max<int64_t>(0, -he);
        x = cont(ctx, x);
        x = ggml_view_4d(ctx, x, x->ne[0] - cwb - cwe, x->ne[1] - chb - che, x->ne[2], x->ne[3], x->nb[1], x->nb[2],
                         x->nb[3], size_t(cwb) * x->nb[0] + size_t(chb) * x->nb[1]);
        x = ggml_cont(ctx, x);
    }
    int lw = int(std::max<int64_t>(0, wb)), rw = int(std::max<int64_t>(0, we));
    int lh = int(std::max<int64_t>(0, hb)), rh = int(std::max<int64_t>(0, he));
    if (lw || rw || lh || rh) x = ggml_pad_ext(ctx, x, lw, rw, lh, rh, 0, 0, 0, 0);
    return x;
}

namespace {

// Dense 2-D convolution through an F32 im2col (ggml_conv_2d's F16 im2col loses fp32 parity).
// ggml_im2col reads only its kernel argument's sizes: a view of x with those sizes stands in for it. Where the product
// takes a derived form of a constant kernel (packed, reduced precision), the original weight is then not in the
// graph (not uploaded to a device, not counted in its weights); and a kernel kept in host memory (device_memory) is
// copied to the device once, for the product, not twice.
ggml_tensor* im2col(Ctx& ctx, ggml_tensor* k, ggml_tensor* x, int sw, int sh, int pw, int ph, int dw, int dh,
                    ggml_type type = GGML_TYPE_F32) {
    // A band of rows of a larger input is read in place where the device's im2col takes strides.
    const bool strided = x->type == GGML_TYPE_F32 && !ggml_is_contiguous(x) && x->nb[0] == sizeof(float) &&
                         x->nb[1] == size_t(x->ne[0]) * sizeof(float);
    if (!strided) x = cont(ctx, x);
    // A view of x with the kernel's sizes; x smaller than one output channel's kernel (the UNet's 2x2 levels at a
    // 16x16 latent): an unread leaf of those sizes in the compute buffer where k is a weight (else that weight would
    // be uploaded beside its derived form), or that slice of k.
    const bool x_fits = x->type == GGML_TYPE_F32 && ggml_nelements(x) >= k->ne[0] * k->ne[1] * k->ne[2];
    ggml_tensor* sizes = x_fits ? ggml_view_3d(ctx, x, k->ne[0], k->ne[1], k->ne[2], size_t(k->ne[0]) * sizeof(float),
                                               size_t(k->ne[0] * k->ne[1]) * sizeof(float), 0)
                         : ctx.weights && ctx.weights->is_weight(k)
                             ? ggml_new_tensor_3d(ctx, GGML_TYPE_F32, k->ne[0], k->ne[1], k->ne[2])
                             : ggml_view_3d(ctx, k, k->ne[0], k->ne[1], k->ne[2], k->nb[1], k->nb[2], 0);
    ggml_tensor* col = ggml_im2col(ctx, sizes, x, sw, sh, pw, ph, dw, dh, true, type);  // [CKK, OW, OH, N]
    return strided && ctx.supports && !ctx.supports(col) ? im2col(ctx, k, ggml_cont(ctx, x), sw, sh, pw, ph, dw, dh, type)
                                                         : col;
}

// A bias and an activation a product kernel may apply while writing; `done` says it did both.
struct Epilogue {
    ggml_tensor* bias = nullptr;  // F32 [M]
    ConvClamp act;
    bool done = false;
};

ggml_tensor* conv2d_f32(Ctx& ctx, ggml_tensor* k, ggml_tensor* x, int sw, int sh, int pw, int ph, int dw, int dh,
                        Epilogue* ep = nullptr);

// Off the CPU, a convolution's columns are made in bands of output rows, one after the other, where all of them would
// hold more than a quarter of what its input and output hold (and more than 16 MiB): the compute buffer then holds one
// band's (a 256x256 SD VAE decoder's 256 -> 128 conv needs 604 MB at once; stable-diffusion.cpp holds it in F16, 302
// MB). Measured on the CPU's portable path: the SD 1.5 UNet (32x32 latent, batch 1) 42.9 -> 23.7 MB and the VAE
// decoder (256x256) 230.5 -> 160 MB of compute buffer (sd.cpp's leanest: 26.5 and 176 MB) for 2-5 % of the VAE's time.
constexpr int64_t IM2COL_BAND_MIN_BYTES = 16ll << 20;
// Where Ctx::direct_conv is set (Vulkan), a conv whose columns pass this is ggml_conv_2d_direct instead, which needs
// no columns: the full-size SD 1.5 VAE decoder on lavapipe took 126 s against 136 s, 224 against 277.5 MB of compute
// buffer, 477 against 1256 graph nodes. Not on the CPU's portable path (4.6 against 3.7 s) nor on CUDA, whose F32
// direct kernel has no tensor-core form (ggml-cuda/conv2d.cu takes its implicit GEMM for F16 kernels only).
constexpr int64_t DIRECT_CONV_COLUMN_BYTES = 64ll << 20;
// At most this many bands: each adds nodes, so a large image's graph stays small (a 1024x1024 VAE decode's bands
// grow to 300 MB rather than to 150 bands per conv and 12k graph nodes).
constexpr int64_t IM2COL_MAX_BANDS = 32;


// The convolution in bands of `band` output rows, each band's input rows (with their halo, and the padding of
// the first and last) convolved on their own. The bands are written into one output as they are made (ggml_set in
// place), so the buffer holds the output once and one band's columns; concatenated, the parts and the result were
// alive together (a 256x256 VAE decoder: 230 against 176 MB for stable-diffusion.cpp's direct convolutions).
ggml_tensor* conv2d_banded(Ctx& ctx, ggml_tensor* k, ggml_tensor* x, int sw, int sh, int pw, int ph, int dw, int dh,
                           int64_t OH, int64_t band) {
    x = cont(ctx, x);
    const int64_t H = x->ne[1];
    std::vector<ggml_tensor*> parts;
    ggml_tensor* out = nullptr;
    bool in_place = true;
    for (int64_t r0 = 0; r0 < OH; r0 += band) {
        const int64_t r1 = std::min(OH, r0 + band);
        const int64_t i0 = r0 * sh - ph, i1 = (r1 - 1) * sh - ph + dh * (k->ne[1] - 1) + 1;  // rows [i0, i1)
        const int64_t a = std::max<int64_t>(i0, 0), b = std::min(i1, H);
        ggml_tensor* xb = ggml_view_4d(ctx, x, x->ne[0], b - a, x->ne[2], x->ne[3], x->nb[1], x->nb[2], x->nb[3],
                                       size_t(a) * x->nb[1]);
        if (a > i0 || i1 > b) xb = ggml_pad_ext(ctx, xb, 0, 0, int(a - i0), int(i1 - b), 0, 0, 0, 0);
        ggml_tensor* y = conv2d_f32(ctx, k, xb, sw, sh, pw, 0, dw, dh);  // [OW, r1 - r0, M, N]
        parts.push_back(y);
        if (!out) {
            out = ggml_pad_ext(ctx, y, 0, 0, 0, int(OH - r1), 0, 0, 0, 0);  // the whole output, band 0 in place
            in_place = ggml_nbytes(out) <= size_t(INT32_MAX);  // ggml_set's offsets are 32-bit
        } else if (in_place) {
            ggml_tensor* o = ggml_set_inplace(ctx, out, y, out->nb[1], out->nb[2], out->nb[3], size_t(r0) * out->nb[1]);
            in_place = !ctx.supports || ctx.supports(o);
            out = o;
        }
    }
    return in_place ? out : concat_pairwise(ctx, parts, 1);  // (concatenated where a device has no ggml_set)
}

ggml_tensor* conv2d_f32(Ctx& ctx, ggml_tensor* k, ggml_tensor* x, int sw, int sh, int pw, int ph, int dw, int dh,
                        Epilogue* ep) {
    int64_t M = k->ne[3], CKK = k->ne[0] * k->ne[1] * k->ne[2];
    const int64_t OW = (x->ne[0] + 2 * pw - dw * (k->ne[0] - 1) - 1) / sw + 1;
    const int64_t OH = (x->ne[1] + 2 * ph - dh * (k->ne[1] - 1) - 1) / sh + 1;
    const bool constant_k = ctx.weights && ctx.weights->is_weight(k);
    const ggml_type wt = constant_k ? product_weight_type(ctx, k, CKK) : GGML_TYPE_F32;
    // Off the CPU an F16 weight multiplies F16 columns (as stable-diffusion.cpp's): half the column buffer.
    const ggml_type col_type = !ctx.cpu && wt == GGML_TYPE_F16 ? GGML_TYPE_F16 : GGML_TYPE_F32;
    if (!ctx.cpu && (k->ne[0] > 1 || k->ne[1] > 1)) {
        const int64_t row_bytes = CKK * OW * x->ne[3] * int64_t(ggml_type_size(col_type));
        // (Smaller where the device's largest tensor is: a device_memory budget sets that, Session.)
        const int64_t cap = ctx.max_alloc ? int64_t(ctx.max_alloc / 2) : INT64_MAX;
        if (OH > 1 && row_bytes * OH > std::min(DIRECT_CONV_COLUMN_BYTES, cap) && ctx.direct_conv) {
            // (An F16 kernel here is not taken: lavapipe was still compiling that shader after 17 minutes.)
            ggml_tensor* y = ggml_conv_2d_direct(ctx, cont(ctx, k), cont(ctx, x), sw, sh, pw, ph, dw, dh);
            if (!ctx.supports || ctx.supports(y)) return y;
        }
        const int64_t io_bytes = int64_t(ggml_nbytes(x)) + OW * OH * M * x->ne[3] * int64_t(sizeof(float));
        const int64_t band_bytes = std::min(std::max(IM2COL_BAND_MIN_BYTES, io_bytes / 4), cap);
        const int64_t band = std::max<int64_t>(1, band_bytes / std::max<int64_t>(row_bytes, 1));
        if (OH > 1 && band < OH && ph <= dh * (k->ne[1] - 1)) {  // (each band then reads a row of x)
            const int64_t bands = std::min((OH + band - 1) / band, IM2COL_MAX_BANDS);  // bands of equal height
            return conv2d_banded(ctx, k, x, sw, sh, pw, ph, dw, dh, OH, (OH + bands - 1) / bands);
        }
    }
    if (wt == GGML_TYPE_F32 && k->ne[0] == 1 && k->ne[1] == 1 && sw == 1 && sh == 1 && pw == 0 && ph == 0 &&
        x->ne[3] == 1) {
        // 1x1 conv, batch 1: a plain matrix product over channels; one transpose instead of im2col + permute.
        int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2];
        ggml_tensor* xt = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, cont(ctx, x), W * H, C)));
        return ggml_reshape_4d(ctx, mul_mat(ctx, xt, ggml_reshape_2d(ctx, cont(ctx, k), CKK, M)), W, H, M, 1);
    }
    if (wt != GGML_TYPE_F32 || ctx.kernel_first) {
        // The kernel first (ggml takes reduced types as src0), then the product [M, OW*OH, N] is transposed back.
        // Off the CPU, lavapipe: 1.3-1.5x faster than the columns first for the SD UNet's 3x3 convs at 2x2 to 32x32
        // pixels (F32), and as fast with F16 columns as with F32 (half their buffer).
        const int64_t rows[4] = {CKK, M, 1, 1};
        ggml_tensor* kr = wt == GGML_TYPE_F32 ? ggml_reshape_2d(ctx, cont(ctx, k), CKK, M)
                                              : weight_as(ctx, k, "conv_rows", wt, rows);
        ggml_tensor* col = im2col(ctx, k, x, sw, sh, pw, ph, dw, dh, col_type);
        ggml_tensor* yt = device_mul_mat(ctx, kr, ggml_reshape_2d(ctx, col, CKK, col->ne[1] * col->ne[2] * col->ne[3]));
        yt = ggml_reshape_3d(ctx, yt, M, col->ne[1] * col->ne[2], col->ne[3]);
        yt = ctx.cpu ? transpose_blocked(ctx, yt) : ggml_cont(ctx, ggml_permute(ctx, yt, 1, 0, 2, 3));
        return ggml_reshape_4d(ctx, yt, col->ne[1], col->ne[2], M, col->ne[3]);
    }
    ggml_tensor* k2 = ggml_reshape_2d(ctx, cont(ctx, k), CKK, M);  // [CKK, M]
    const bool gemm = ctx.cpu && constant_k && k->type == GGML_TYPE_F32 && gemm_available() &&
                      gemm_wanted(OW * OH * x->ne[3], CKK, M);
    ggml_tensor* col = im2col(ctx, k, x, sw, sh, pw, ph, dw, dh);
    ggml_tensor* col2 = ggml_reshape_2d(ctx, col, col->ne[0], col->ne[1] * col->ne[2] * col->ne[3]);
    if (gemm) {
        // Our packed-weight kernel (~10 % faster than ggml's sgemm on ResNet-18, SqueezeNet and MobileNetV2, equal on
        // the UNet's 8x8 layers), its product stored transposed, [OW*OH, M] per image: NCHW, no transpose pass.
        ggml_tensor* col3 = ggml_reshape_3d(ctx, col, col->ne[0], col->ne[1] * col->ne[2], col->ne[3]);
        ggml_tensor* yt = gemm_const_rows(ctx, col3, k, M, ep ? ep->bias : nullptr, true,
                                          ep ? ep->act : ConvClamp{});
        if (ep) ep->done = true;
        return ggml_reshape_4d(ctx, yt, col->ne[1], col->ne[2], M, col->ne[3]);
    }
    if (ctx.cpu && col2->ne[1] % 4 != 0 && M % 4 == 0) {
        // The CPU sgemm takes the first operand's rows 4 at a time; with OW*OH*N not a multiple of 4 (7x7 and 13x13
        // outputs) ggml falls back to one dot product per element. Weight first, then a (small) transpose back.
        ggml_tensor* yt = ggml_reshape_3d(ctx, mul_mat(ctx, k2, col2), M, col->ne[1] * col->ne[2], col->ne[3]);
        yt = transpose_blocked(ctx, yt);  // [OW*OH, M, N]
        return ggml_reshape_4d(ctx, yt, col->ne[1], col->ne[2], M, col->ne[3]);
    }
    ggml_tensor* y = mul_mat(ctx, col2, k2);
    if (col->ne[3] == 1) return ggml_reshape_4d(ctx, y, col->ne[1], col->ne[2], M, 1);  // batch 1: already [OW, OH, M]
    y = ggml_reshape_4d(ctx, y, col->ne[1], col->ne[2], col->ne[3], M);  // [OW, OH, N, M]
    return ggml_cont(ctx, ggml_permute(ctx, y, 0, 1, 3, 2));
}

// 2-D convolution of x [W,H,C,N] with kernel [kW,kH,C/g,M] (stride/dilation per axis, symmetric padding).
ggml_tensor* conv2d_core(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, int64_t group, int sw, int sh, int dw, int dh,
                         int pw, int ph, Epilogue* ep = nullptr) {
    int64_t C = x->ne[2], M = k->ne[3];
    if (group == 1) return conv2d_f32(ctx, k, x, sw, sh, pw, ph, dw, dh, ep);
    if (group == C && M == C && k->ne[2] == 1) return ggml_conv_2d_dw_direct(ctx, k, x, sw, sh, pw, ph, dw, dh);
    int64_t cg = C / group, mg = M / group;
    ggml_tensor* out = nullptr;
    for (int64_t g = 0; g < group; g++) {
        ggml_tensor* xv = ggml_cont(ctx, ggml_view_4d(ctx, x, x->ne[0], x->ne[1], cg, x->ne[3], x->nb[1], x->nb[2],
                                                      x->nb[3], size_t(g * cg) * x->nb[2]));
        ggml_tensor* kv = ggml_view_4d(ctx, k, k->ne[0], k->ne[1], k->ne[2], mg, k->nb[1], k->nb[2], k->nb[3],
                                       size_t(g * mg) * k->nb[3]);
        ggml_tensor* y = conv2d_f32(ctx, ggml_cont(ctx, kv), xv, sw, sh, pw, ph, dw, dh);
        out = out ? ggml_concat(ctx, out, y, 2) : y;
    }
    return out;
}

// A bias must hold one value per output channel (found by tests/fuzz: ggml_add asserted on a mismatch).
void check_bias(const ggml_tensor* bias, int64_t M, const char* op) {
    if (bias && ggml_nelements(bias) != M)
        throw OpError(std::string(op) + ": bias has " + std::to_string(ggml_nelements(bias)) + " values for " +
                      std::to_string(M) + " output channels");
}

// Group, channel and kernel checks shared by Conv (w [k..., C/group, M]) and ConvTranspose (w [k..., M/group, C]);
// returns the kernel (ONNX order).
Ints check_conv(const ggml_tensor* x, const ggml_tensor* w, int dims, int64_t group, const Ints& kernel,
                bool transpose) {
    const char* op = transpose ? "transposed convolution" : "convolution";
    if (dims != 1 && dims != 2)
        throw OpError(std::string("only 1-D to 3-D ") + op + " is supported, not " + std::to_string(dims) + "-D");
    const int64_t C = x->ne[dims], wa = w->ne[dims], wb = w->ne[dims + 1];
    const bool ok = group >= 1 && C % group == 0 && (transpose ? wb == C : wa * group == C && wb % group == 0);
    if (!ok)
        throw OpError(std::string(op) + " with group " + std::to_string(group) + ": " + std::to_string(C) +
                      " input channels do not match the weight's channels " + std::to_string(wb) + " x " +
                      std::to_string(wa));
    Ints wk = spatial_sizes(w, dims);
    if (!kernel.empty() && kernel != wk)
        throw OpError("kernel_shape " + ints_literal(kernel) + " does not match the weight's " + ints_literal(wk));
    return wk;
}

}  // namespace

// ---- Conv ----

namespace {

// The fused activation where no kernel applied it.
ggml_tensor* apply_clamp(Ctx& ctx, ggml_tensor* y, const ConvParams& p) {
    if (!p.clamp) return y;
    if (p.clamp_min == 0 && p.clamp_max == INFINITY) return ggml_relu(ctx, y);
    return ggml_clamp(ctx, y, p.clamp_min, p.clamp_max);
}

}  // namespace

ConvAlgo conv_algorithm(const ConvCase& c) {
    const bool dense2d = c.dims == 2 && c.group == 1, unit_dil = c.dH == 1 && c.dW == 1;
    if (!c.cpu) return ConvAlgo::Im2col;
    // 1x1 stride-1 unpadded with a constant weight: our NCHW kernel, bias and activation in its epilogue.
    if (dense2d && c.kH == 1 && c.kW == 1 && c.sH == 1 && c.sW == 1 && c.unpadded && c.constant_w && c.f32_input &&
        c.f32_product)
        return ConvAlgo::Pointwise;
    const bool depthwise = c.dims == 2 && c.group == c.C && c.M == c.group && unit_dil;
    // A dense conv with few input channels (a stem: 3 -> 32 channels, 3x3/2; ResNet's 3 -> 64, 7x7/2, 147 taps:
    // 3.4 -> 1.6 ms against im2col; the VAE encoder's 3 -> 128, 3x3/1): the direct kernel, no im2col, and no
    // Winograd either (its products would have a shared dim of 3: the VAE encoder's conv_in took 44.8 ms that way).
    const bool small_dense = dense2d && c.C <= 4 && c.C * c.kH * c.kW <= 160 && unit_dil && c.f32_input && c.f32_product;
    if ((depthwise && c.f32_input) || small_dense) return ConvAlgo::Direct;
    if (depthwise) return ConvAlgo::Depthwise;
    // 3x3 stride-1 convolutions with a constant weight: Winograd (fewer multiply-adds).
    if (dense2d && c.kH == 3 && c.kW == 3 && c.sH == 1 && c.sW == 1 && unit_dil && c.constant_w) return ConvAlgo::Winograd;
    return ConvAlgo::Im2col;
}

ggml_tensor* conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvParams& p) {
    // No exporter writes one; ggml's im2col and products cannot hold it (fuzz: a Conv of an empty input by itself).
    if (ggml_nelements(x) == 0 || ggml_nelements(w) == 0)
        throw OpError("convolution of an empty " + std::string(ggml_nelements(x) == 0 ? "input" : "weight"));
    if (p.dims == 3) return apply_clamp(ctx, conv3d(ctx, x, w, bias, p), p);
    const int d1 = p.dims;
    Ints kernel = check_conv(x, w, d1, p.group, p.kernel, false);
    check_bias(bias, w->ne[d1 + 1], "convolution");
    WindowGeometry g = conv_geometry(spatial_sizes(x, d1), kernel, p.auto_pad, p.pads, p.strides, p.dilations);
    Ints pb = g.pad_begin, pe = g.pad_end, s = g.strides, dil = g.dilations;
    ggml_tensor* k = w;
    if (d1 == 1) {  // [L, C, N] -> [L, 1, C, N]
        x = ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0], 1, x->ne[1], x->ne[2]);
        k = ggml_reshape_4d(ctx, cont(ctx, w), w->ne[0], 1, w->ne[1], w->ne[2]);
        for (Ints* v : {&pb, &pe}) v->insert(v->begin(), 0);
        for (Ints* v : {&s, &dil}) v->insert(v->begin(), 1);
    }
    // ONNX spatial order is (H, W); ggml dim 0 is W.
    int64_t wb = pb[1], we = pe[1], hb = pb[0], he = pe[0];
    int pw = 0, ph = 0;
    if (wb == we && hb == he) {
        pw = int(wb);
        ph = int(hb);
    } else x = pad_crop_2d(ctx, x, wb, we, hb, he);
    ConvCase cc;
    cc.dims = d1;
    cc.group = p.group;
    cc.C = x->ne[2];
    cc.M = k->ne[3];
    cc.kH = k->ne[1], cc.kW = k->ne[0], cc.sH = s[0], cc.sW = s[1], cc.dH = dil[0], cc.dW = dil[1];
    cc.unpadded = wb == 0 && we == 0 && hb == 0 && he == 0;
    cc.constant_w = ctx.weights && ctx.weights->is_weight(w);
    cc.cpu = ctx.cpu && ggml_nelements(x) > 0;
    cc.f32_input = x->type == GGML_TYPE_F32;
    cc.f32_product = product_weight_type(ctx, w, x->ne[2]) == GGML_TYPE_F32;
    const ConvAlgo algo = conv_algorithm(cc);
    int wino = algo == ConvAlgo::Winograd ? winograd_tile((x->ne[0] + 2 * pw - 2) * (x->ne[1] + 2 * ph - 2)) : 0;
    // A reduced-precision weight also rounds the transformed input; F(4,3)'s transforms magnify that error about
    // 20x (f16: 8e-3 of the range against 5e-4 for F(2,3) on random data), so those products use F(2,3).
    if (wino == 4 && product_weight_type(ctx, w, k->ne[2]) != GGML_TYPE_F32) wino = 2;
    // Our CPU kernels add the bias and apply the activation (ReLU, ReLU6) while writing the output.
    const ConvClamp act = p.clamp ? ConvClamp{p.clamp_min, p.clamp_max} : ConvClamp{};
    auto f32_bias = [&]() -> ggml_tensor* {
        if (!bias) return nullptr;
        ggml_tensor* b = bias->type != GGML_TYPE_F32 ? ggml_cast(ctx, bias, GGML_TYPE_F32) : bias;
        return cont(ctx, b);
    };
    ggml_tensor* y;
    if (algo == ConvAlgo::Pointwise) return conv2d_pointwise(ctx, x, k, f32_bias(), act);
    if (algo == ConvAlgo::Direct) {
        if (k->type != GGML_TYPE_F32) k = ggml_cast(ctx, k, GGML_TYPE_F32);
        return conv2d_direct_clamp(ctx, x, k, f32_bias(), int(s[1]), int(s[0]), pw, ph, act);
    }
    if (algo == ConvAlgo::Depthwise) {  // ggml_conv_2d_dw_direct is the slowest part of MobileNet-style models
        if (k->type != GGML_TYPE_F32) k = ggml_cast(ctx, k, GGML_TYPE_F32);
        y = conv2d_depthwise(ctx, x, k, f32_bias(), int(s[1]), int(s[0]), pw, ph);
    } else if (wino) {  // d1 == 2: the bias and the activation applied in the output transform
        return conv2d_winograd(ctx, wino, x, w, f32_bias(), pw, ph, act);
    } else {
        Epilogue ep;  // the gemm kernel adds the bias and applies the activation, where it takes the product
        if (bias && bias->type == GGML_TYPE_F32 && ggml_nelements(bias) == k->ne[3]) ep.bias = cont(ctx, bias);
        const bool fused_act = p.clamp && (!bias || ep.bias);  // the kernel's clamp follows its bias: both or none
        if (fused_act) ep.act = act;
        y = conv2d_core(ctx, x, k, p.group, int(s[1]), int(s[0]), int(dil[1]), int(dil[0]), pw, ph,
                        ep.bias || fused_act ? &ep : nullptr);
        if (bias && !ep.done) y = add(ctx, y, ggml_reshape_4d(ctx, bias, 1, 1, ggml_nelements(bias), 1));
        if (ep.done && fused_act) {
            return d1 == 1 ? ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]) : y;
        }
    }
    if (d1 == 1) y = ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    return apply_clamp(ctx, y, p);
}

// ---- ConvTranspose ----

namespace {

// ConvTranspose weight [Cin, Cog, kH, kW] -> Conv weight [Cog*group, Cin/group, kH, kW], every tap reversed (a
// 3-D kernel passes kD*kH as kH: reversing the flattened taps flips every axis).
void flip_for_conv_transpose(const float* f, float* o, int64_t Cin, int64_t Cog, int64_t kH, int64_t kW,
                             int64_t group) {
    const int64_t Cig = Cin / group;
    for (int64_t g = 0; g < group; g++)
        for (int64_t oc = 0; oc < Cog; oc++)
            for (int64_t ic = 0; ic < Cig; ic++)
                for (int64_t y = 0; y < kH; y++)
                    for (int64_t x = 0; x < kW; x++)
                        o[(((g * Cog + oc) * Cig + ic) * kH + y) * kW + x] =
                            f[size_t((((g * Cig + ic) * Cog + oc) * kH + (kH - 1 - y)) * kW + (kW - 1 - x))];
}

// The same in the graph, for a weight computed at run time: kernel taps reversed by get_rows, then the channel
// blocks of each group swapped by a permute.
ggml_tensor* flip_in_graph(Ctx& ctx, ggml_tensor* w, int64_t Cin, int64_t Cog, int64_t kH, int64_t kW,
                           int64_t group) {
    const int64_t KK = kH * kW, Cig = Cin / group;
    ggml_tensor* t = ggml_cont(ctx, ggml_transpose(ctx, ggml_reshape_2d(ctx, f32_cont(ctx, w), KK, Cog * Cin)));
    if (KK > 1) {
        Ints rev(static_cast<size_t>(KK));
        for (int64_t i = 0; i < KK; i++) rev[size_t(i)] = KK - 1 - i;
        t = ggml_get_rows(ctx, t, ctx.ints_tensor(rev, GGML_TYPE_I32));  // [Cog*Cin, KK], taps reversed
    }
    t = ggml_reshape_4d(ctx, t, Cog, Cig, group, KK);
    t = ggml_cont(ctx, ggml_permute(ctx, t, 2, 1, 3, 0));  // [KK, Cig, Cog, group]
    return ggml_reshape_4d(ctx, t, kW, kH, Cig, Cog * group);
}

// The flipped weight [kW, kH, Cin/group, Cog*group]: once on the host for a constant weight, in the graph otherwise.
ggml_tensor* flipped_weight(Ctx& ctx, ggml_tensor* w, int64_t Cin, int64_t Cog, int64_t kH, int64_t kW,
                            int64_t group) {
    if (!ctx.weights || !ctx.weights->is_weight(w)) return flip_in_graph(ctx, w, Cin, Cog, kH, kW, group);
    const int64_t kne[4] = {kW, kH, Cin / group, Cog * group};
    return ctx.weights->derived(w, "convT", GGML_TYPE_F32, kne, [=](const float* src, float* dst) {
        flip_for_conv_transpose(src, dst, Cin, Cog, kH, kW, group);
    });
}

// Inserts s - 1 zeros between the elements of ggml dim `dim` (0-2) of a 4-D x: x read as [inner, 1, n, outer] and
// padded to [inner, s, n, outer]. Along dim 0 it is read as [1, n, ...] and padded in dim 0 instead: ggml's CPU pad
// shares out the rows of its dim 1 among threads, n of them rather than s.
ggml_tensor* dilate_dim(Ctx& ctx, ggml_tensor* x, int dim, int64_t s) {
    if (s == 1) return x;
    x = cont(ctx, x);
    int64_t ne[4] = {x->ne[0], x->ne[1], x->ne[2], x->ne[3]};
    const int64_t n = ne[dim];
    ggml_tensor* y;
    if (dim == 0) {
        y = ggml_pad_ext(ctx, ggml_reshape_4d(ctx, x, 1, n, ne[1], ne[2] * ne[3]), 0, int(s - 1), 0, 0, 0, 0, 0, 0);
    } else {
        int64_t inner = 1, outer = 1;
        for (int i = 0; i < dim; i++) inner *= ne[i];
        for (int i = dim + 1; i < 4; i++) outer *= ne[i];
        y = ggml_pad_ext(ctx, ggml_reshape_4d(ctx, x, inner, 1, n, outer), 0, 0, 0, int(s - 1), 0, 0, 0, 0);
    }
    ne[dim] = n * s;
    y = ggml_reshape_4d(ctx, ggml_cont(ctx, y), ne[0], ne[1], ne[2], ne[3]);
    ne[dim] = (n - 1) * s + 1;
    return ggml_cont(ctx, ggml_view_4d(ctx, y, ne[0], ne[1], ne[2], ne[3], y->nb[1], y->nb[2], y->nb[3], 0));
}

// Stride equal to the kernel and nothing cropped or added: the outputs of input pixels do not overlap, so the
// transposed convolution is one 1x1 product to kH*kW*M channels, whose blocks are then moved to their sub-pixels
// (two permutes), instead of a dilated, padded input and an im2col product of kH*kW times the work.
ggml_tensor* conv_transpose_subpixel(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, int64_t kW, int64_t kH) {
    const int64_t Cin = x->ne[2], Cog = w->ne[2], Mo = Cog * kH * kW, W = x->ne[0], H = x->ne[1], N = x->ne[3];
    const int64_t kne[4] = {1, 1, Cin, Mo};
    // ONNX [Cin, Cog, kH, kW] read as [Cin, Mo] and transposed: the 1x1 weight [Mo, Cin], Mo = (o, a, b).
    ggml_tensor* k = ctx.weights->derived(w, "convT_subpixel", GGML_TYPE_F32, kne, [=](const float* src, float* dst) {
        for (int64_t c = 0; c < Cin; c++)
            for (int64_t m = 0; m < Mo; m++) dst[m * Cin + c] = src[c * Mo + m];
    });
    ggml_tensor* z = conv2d_core(ctx, cont(ctx, x), k, 1, 1, 1, 1, 1, 0, 0);  // [W, H, (b, a, o), N]
    z = ggml_reshape_4d(ctx, z, W, H, kW, kH * Cog * N);
    z = ggml_cont(ctx, ggml_permute(ctx, z, 1, 2, 0, 3));  // [b, W, H, (a, o, n)]
    z = ggml_reshape_4d(ctx, z, kW * W, H, kH, Cog * N);
    z = ggml_cont(ctx, ggml_permute(ctx, z, 0, 2, 1, 3));  // [(b, W), a, H, (o, n)]
    return ggml_reshape_4d(ctx, z, kW * W, kH * H, Cog, N);
}

bool all_equal(const Ints& v, int64_t x) {
    for (int64_t e : v)
        if (e != x) return false;
    return true;
}

// A transposed convolution's channels, checked: Cin input channels, Cog output channels per group; and its kernel
// (ONNX order).
struct ConvTransposeShape {
    int64_t Cin, Cog;
    Ints kernel;
};

ConvTransposeShape check_conv_transpose(const ggml_tensor* x, const ggml_tensor* w, const ggml_tensor* bias,
                                        const ConvTransposeParams& p) {
    if (p.dims != 3) {
        Ints kernel = check_conv(x, w, p.dims, p.group, p.kernel, true);
        check_bias(bias, w->ne[p.dims] * p.group, "transposed convolution");
        return {x->ne[p.dims], w->ne[p.dims], kernel};
    }
    // (3-D: the bias is checked where it is added.)
    return {check_conv_transpose3d(x, w, p), p.out_channels / p.group, spatial_sizes(w, 3)};
}

}  // namespace

// One path for 1-D to 3-D: the input dilated by the strides and padded (or cropped) per axis, then a stride-1
// convolution with the flipped weight, the 2-D or the 3-D one.
ggml_tensor* conv_transpose(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, const ConvTransposeParams& p) {
    const int dims = p.dims;
    const ConvTransposeShape sh = check_conv_transpose(x, w, bias, p);
    const Ints& kernel = sh.kernel;
    const int64_t Cin = sh.Cin, Cog = sh.Cog, group = p.group, M = Cog * group;
    WindowGeometry g = conv_transpose_geometry(spatial_sizes(x, dims), kernel, p.auto_pad, p.pads, p.strides,
                                               p.dilations, p.output_padding, p.output_shape);
    // An empty spatial input would leave only the bias over the output, a form no exporter writes; the strided
    // paths below cannot place it (found by tests/fuzz: a negative view size).
    for (int64_t n : g.in)
        if (n == 0) throw OpError("transposed convolution of an empty spatial input " + ints_literal(g.in));
    const int64_t kW = kernel.back(), kH = dims == 2 ? kernel[0] : 1;
    const bool subpixel = dims == 2 && group == 1 && p.output_shape.empty() && p.auto_pad == AUTO_PAD_NOTSET &&
                          g.strides[0] == kH && g.strides[1] == kW && all_equal(g.dilations, 1) &&
                          all_equal(g.pad_begin, 0) && all_equal(g.pad_end, 0) && all_equal(p.output_padding, 0) &&
                          w->type == GGML_TYPE_F32 && ctx.weights && ctx.weights->is_weight(w);
    if (subpixel) {
        ggml_tensor* y = conv_transpose_subpixel(ctx, x, w, kW, kH);
        return bias ? add(ctx, y, ggml_reshape_4d(ctx, bias, 1, 1, ggml_nelements(bias), 1)) : y;
    }
    int64_t taps = 1;  // kH, or kD*kH: the flip reverses them all at once
    for (size_t a = 0; a + 1 < kernel.size(); a++) taps *= kernel[a];
    ggml_tensor* k = flipped_weight(ctx, w, Cin, Cog, taps, kW, group);
    if (dims == 3) k = ggml_reshape_4d(ctx, cont(ctx, k), kW, kernel[1], kernel[0], Cin / group * M);
    if (dims == 1) x = ggml_reshape_4d(ctx, cont(ctx, x), x->ne[0], 1, x->ne[1], x->ne[2]);  // [L, 1, C, N]
    const Ints op = p.output_padding.empty() ? Ints(size_t(dims), 0) : p.output_padding;
    int d[3] = {1, 1, 1};
    int64_t b[3] = {0, 0, 0}, e[3] = {0, 0, 0};  // padded (positive) or cropped (negative), ggml order
    for (int i = 0; i < dims; i++) {  // ggml dim i is ONNX spatial axis dims - 1 - i
        const size_t a = size_t(dims - 1 - i);
        x = dilate_dim(ctx, x, i, g.strides[a]);
        d[i] = int(g.dilations[a]);
        b[i] = g.dilations[a] * (kernel[a] - 1) - g.pad_begin[a];
        e[i] = g.dilations[a] * (kernel[a] - 1) - g.pad_end[a] + op[a];
    }
    if (dims == 3) {
        const int s[3] = {1, 1, 1}, pd[3] = {0, 0, 0};
        x = pad_crop_3d(ctx, x, b, e);
        return conv3d_bias(ctx, conv3d_core(ctx, x, k, x->ne[3] / Cin, Cin, M, group, s, pd, d), bias, M);
    }
    x = pad_crop_2d(ctx, x, b[0], e[0], b[1], e[1]);
    ggml_tensor* y = conv2d_core(ctx, x, k, group, 1, 1, d[0], d[1], 0, 0);
    if (bias) y = add(ctx, y, ggml_reshape_4d(ctx, bias, 1, 1, ggml_nelements(bias), 1));
    if (dims == 1) y = ggml_reshape_3d(ctx, y, y->ne[0], y->ne[2], y->ne[3]);
    return y;
}

// ---- DeformConv ----

ggml_tensor* deform_conv(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* offset, ggml_tensor* bias,
                         ggml_tensor* mask, const DeformConvParams& p) {
    DeformParams d{};
    d.n = x->ne[3], d.ic = x->ne[2], d.ih = x->ne[1], d.iw = x->ne[0];
    const int64_t oc = w->ne[3];
    d.g = p.group;
    d.offg = p.offset_group;
    Ints wk = spatial_sizes(w, 2);
    if (!p.kernel.empty() && p.kernel != wk)
        throw OpError("kernel_shape " + ints_literal(p.kernel) + " does not match the weight's " + ints_literal(wk));
    if (d.g < 1 || d.offg < 1 || d.ic % d.g || oc % d.g || w->ne[2] * d.g != d.ic || d.ic % d.offg)
        throw OpError("channels (input " + std::to_string(d.ic) + ", weight " + std::to_string(w->ne[2]) + " in, " +
                      std::to_string(oc) + " out) do not match group " + std::to_string(d.g) + " / offset_group " +
                      std::to_string(d.offg));
    WindowGeometry g = conv_geometry({d.ih, d.iw}, wk, AUTO_PAD_NOTSET, p.pads, p.strides, p.dilations);
    d.kh = wk[0], d.kw = wk[1], d.sh = g.strides[0], d.sw = g.strides[1], d.dh = g.dilations[0], d.dw = g.dilations[1];
    d.ph = g.pad_begin[0], d.pw = g.pad_begin[1], d.oh = g.out[0], d.ow = g.out[1];
    const int64_t KK = d.kh * d.kw;
    auto expect = [&](const ggml_tensor* t, int64_t c, const char* what) {
        if (t->ne[0] != d.ow || t->ne[1] != d.oh || t->ne[2] != c || t->ne[3] != d.n)
            throw OpError(std::string(what) + " must have ne [" + std::to_string(d.ow) + ", " + std::to_string(d.oh) +
                          ", " + std::to_string(c) + ", " + std::to_string(d.n) + "], not [" +
                          std::to_string(t->ne[0]) + ", " + std::to_string(t->ne[1]) + ", " +
                          std::to_string(t->ne[2]) + ", " + std::to_string(t->ne[3]) + "]");
    };
    expect(offset, d.offg * KK * 2, "offset");
    if (mask) expect(mask, d.offg * KK, "mask");
    if (bias && ggml_nelements(bias) != oc)
        throw OpError("bias has " + std::to_string(ggml_nelements(bias)) + " values for " + std::to_string(oc) +
                      " output channels");
    d.mask = mask != nullptr;
    x = f32_cont(ctx, x);
    offset = f32_cont(ctx, offset);
    if (mask) mask = f32_cont(ctx, mask);
    const int64_t K = (d.ic / d.g) * KK, ocg = oc / d.g;
    ggml_tensor* cols = deform_cols_kernel(ctx, x, offset, mask, d);  // [K, P, g, n]
    ggml_tensor* wt = ggml_reshape_4d(ctx, f32_cont(ctx, w), K, ocg, d.g, 1);
    ggml_tensor* y = device_mul_mat(ctx, wt, cols);               // [ocg, P, g, n]
    y = ggml_cont(ctx, ggml_permute(ctx, y, 1, 0, 2, 3));       // [P, ocg, g, n]
    y = ggml_reshape_4d(ctx, y, d.ow, d.oh, oc, d.n);
    if (bias) y = add(ctx, y, ggml_reshape_4d(ctx, f32_cont(ctx, bias), 1, 1, oc, 1));
    return y;
}

}  // namespace o2g
