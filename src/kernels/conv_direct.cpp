// Direct convolution kernel for few input channels per group (see conv_direct.h): depthwise convs, and dense
// stems such as 3 -> 32 channels. Padded row r of a plane is stored as `sw` phases, phase q holding r[q],
// r[q + sw], ...: tap kx of output column ox then reads phase kx % sw at ox + kx / sw, contiguous in ox.
#include "kernels/isa.h"
#include "kernels/conv_direct.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/custom.h"
#include "kernels/vec8.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

struct DwcParams {
    int64_t sw, sh, pw, ph;
    ConvClamp act;
};

#if defined(__AVX512F__)
typedef float vw __attribute__((vector_size(64)));
#else
typedef v8 vw;
#endif
constexpr int VL = int(sizeof(vw) / sizeof(float)), VN = 16 / VL;  // a 16-column step in VN vectors

// Output channels per item of a dense conv: 8 ymm accumulators, or 16 zmm on AVX-512 (8 were too few to hide the
// FMA latency: ResNet-18's 7x7 stem ran at 47 % of peak).
constexpr int64_t MB = VN == 1 ? 16 : 4;

struct Rows {
    const float* buf;
    const int64_t* off;
    int64_t T, OH, OW, OW8, rstride;
    v8 lo, hi;
};

// Every output row of `NM` channels (kernels k + j * T, biases b[j], planes y[j]), 16 columns at a time: each
// tap's two input loads feed all NM channels' accumulators.
template <int NM>
void direct_rows(const Rows& r, const float* k, const float* b, float* const* y) {
    const vw lo = vw{} + r.lo[0], hi = vw{} + r.hi[0];
    for (int64_t oy = 0; oy < r.OH; oy++) {
        for (int64_t ox = 0; ox < r.OW8; ox += 16) {
            vw a[NM][VN];
#pragma GCC unroll 16
            for (int j = 0; j < NM; j++)
#pragma GCC unroll 2
                for (int v = 0; v < VN; v++) a[j][v] = vw{} + b[j];
            const float* base = r.buf + oy * r.rstride + ox;
            for (int64_t t = 0; t < r.T; t++) {
                vw x[VN];
#pragma GCC unroll 2
                for (int v = 0; v < VN; v++) std::memcpy(&x[v], base + r.off[t] + v * VL, sizeof(vw));
#pragma GCC unroll 16
                for (int j = 0; j < NM; j++)
#pragma GCC unroll 2
                    for (int v = 0; v < VN; v++) a[j][v] += k[j * r.T + t] * x[v];
            }
#pragma GCC unroll 16
            for (int j = 0; j < NM; j++) {
                // clamp as selects (a NaN compares false and stays), then one store of the valid columns
                alignas(64) float out[16];
#pragma GCC unroll 2
                for (int v = 0; v < VN; v++) {
                    vw o = a[j][v] < lo ? lo : a[j][v];
                    o = o > hi ? hi : o;
                    std::memcpy(out + v * VL, &o, sizeof o);
                }
                float* yo = y[j] + oy * r.OW + ox;
                if (r.OW - ox >= 16) std::memcpy(yo, out, sizeof out);  // constant size: no rep movs
                else
                    for (int64_t c = 0; c < r.OW - ox; c++) yo[c] = out[c];
            }
        }
    }
}

// A depthwise 3x3 conv (one channel: taps k[9], bias b, plane y), R output rows at a time: each input row of a
// 16-column step is loaded once for the R rows whose taps read it (stride SH), and the step is one zmm on AVX-512.
// (One row at a time loaded every input twice or thrice and ran at 8-16 % of peak.) col[kx]: tap kx's column
// offset in a padded row (its phase).
template <int R, int SH>
void dw3_rows(const Rows& r, int64_t oy0, const int64_t* col, const float* k, float b, float* y) {
    const vw lo = vw{} + r.lo[0], hi = vw{} + r.hi[0];
    for (int64_t ox = 0; ox < r.OW8; ox += 16) {
        vw a[R][VN];
#pragma GCC unroll 8
        for (int j = 0; j < R; j++)
#pragma GCC unroll 2
            for (int v = 0; v < VN; v++) a[j][v] = vw{} + b;
        const float* base = r.buf + oy0 * r.rstride + ox;
        const int64_t RW = r.rstride / SH;
#pragma GCC unroll 16
        for (int ir = 0; ir < (R - 1) * SH + 3; ir++)
#pragma GCC unroll 3
            for (int kx = 0; kx < 3; kx++) {
                vw x[VN];
#pragma GCC unroll 2
                for (int v = 0; v < VN; v++) std::memcpy(&x[v], base + ir * RW + col[kx] + v * VL, sizeof(vw));
#pragma GCC unroll 8
                for (int j = 0; j < R; j++) {
                    const int ky = ir - j * SH;
                    if (ky >= 0 && ky < 3)
#pragma GCC unroll 2
                        for (int v = 0; v < VN; v++) a[j][v] += k[ky * 3 + kx] * x[v];
                }
            }
#pragma GCC unroll 8
        for (int j = 0; j < R; j++) {
            alignas(64) float out[16];
#pragma GCC unroll 2
            for (int v = 0; v < VN; v++) {  // clamp as selects (a NaN compares false and stays)
                vw o = a[j][v] < lo ? lo : a[j][v];
                o = o > hi ? hi : o;
                std::memcpy(out + v * VL, &o, sizeof o);
            }
            float* yo = y + (oy0 + j) * r.OW + ox;
            if (r.OW - ox >= 16) std::memcpy(yo, out, sizeof out);  // constant size: no rep movs
            else
                for (int64_t c = 0; c < r.OW - ox; c++) yo[c] = out[c];
        }
    }
}

template <int SH>
void dw3_plane(const Rows& r, const int64_t* col, const float* k, float b, float* y) {
    constexpr int R = 4;
    int64_t oy = 0;
    for (; oy + R <= r.OH; oy += R) dw3_rows<R, SH>(r, oy, col, k, b, y);
    for (; oy < r.OH; oy++) dw3_rows<1, SH>(r, oy, col, k, b, y);
}

// Long: the thread's channel split, the 3x3 fast path and the general window share their locals.
void direct_clamp_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DwcParams& p = *static_cast<const DwcParams*>(ud);
    const ggml_tensor *xt = dst->src[0], *kt = dst->src[1], *bt = dst->src[2];
    const int64_t W = xt->ne[0], H = xt->ne[1], C = xt->ne[2], KW = kt->ne[0], KH = kt->ne[1], CIN = kt->ne[2];
    const int64_t OW = dst->ne[0], OH = dst->ne[1], M = dst->ne[2];
    const int64_t MG = M / (C / CIN);  // output channels per group
    const int64_t OW8 = (OW + 15) / 16 * 16;                 // columns computed (the rest dropped at the store)
    const int64_t L = OW8 + (KW - 1) / p.sw + 1;             // phase length: every read stays inside
    const int64_t RW = L * p.sw;                             // a padded row's length
    const int64_t PH = std::max(H + p.ph, (OH - 1) * p.sh + KH);  // padded rows
    // The group's CIN input planes, one after another. Zeroed once: every plane writes the same interior
    // positions, so the padding stays zero.
    std::vector<float> buf(size_t(CIN * PH * RW), 0.f);
    const int64_t T = CIN * KH * KW;
    std::vector<int64_t> off(static_cast<size_t>(T));  // tap (ci, ky, kx)'s offset from its output column's first tap
    for (int64_t ci = 0; ci < CIN; ci++)
        for (int64_t ky = 0; ky < KH; ky++)
            for (int64_t kx = 0; kx < KW; kx++)
                off[size_t((ci * KH + ky) * KW + kx)] = ci * PH * RW + ky * RW + (kx % p.sw) * L + kx / p.sw;
    int64_t packed = -1;  // the (image, group) whose planes buf holds
    const bool dw3 = CIN == 1 && MG == 1 && KW == 3 && KH == 3 && (p.sh == 1 || p.sh == 2);
    // A 3x3 tap's column part (dw3_rows); a kernel of one or two taps has fewer (fuzz: read past `off`).
    const int64_t col[3] = {dw3 ? off[0] : 0, dw3 ? off[1] : 0, dw3 ? off[2] : 0};
    // The stride split, worked out once (divisions per row cost more than the copies of a 14x14 plane): columns
    // [0, done) go 16 at a time (stride 2); phase q's remaining columns start at phase_ix[q], stored from
    // phase_dst[q] in a padded row.
    const int64_t done = p.sw == 2 ? W / 16 * 16 : 0;
    std::vector<int64_t> phase_ix(static_cast<size_t>(p.sw)), phase_dst(static_cast<size_t>(p.sw));
    for (int64_t q = 0; q < p.sw; q++) {
        int64_t ix0 = ((q - p.pw) % p.sw + p.sw) % p.sw;
        if (done > ix0) ix0 += (done - ix0 + p.sw - 1) / p.sw * p.sw;  // the first of this phase past `done`
        phase_ix[size_t(q)] = ix0;
        phase_dst[size_t(q)] = q * L + (ix0 + p.pw) / p.sw;
    }
    const v8 lo = v8{} + p.act.lo, hi = v8{} + p.act.hi;
    // One group (a dense conv): MB output channels per item share each input load; else one channel per item.
    const int64_t step = C == CIN ? MB : 1, mblocks = (M + step - 1) / step;
    const WorkSpan s = work_span(dst->ne[3] * mblocks, ith, nth);
    for (int64_t it = s.b; it < s.e; it++) {
        const int64_t n = it / mblocks, m0 = it % mblocks * step, mb = std::min(step, M - m0), grp = m0 / MG;
        const float* k = static_cast<const float*>(kt->data) + m0 * T;
        const bool pack = packed != n * C + grp;  // consecutive planes of one image and group share buf
        for (int64_t ci = 0; pack && ci < CIN; ci++)
        for (int64_t iy = 0; iy < H; iy++) {
            const float* x = static_cast<const float*>(xt->data) + (n * C + grp * CIN + ci) * H * W;
            float* row = buf.data() + ci * PH * RW + (iy + p.ph) * RW;
            const float* src = x + iy * W;
            if (p.sw == 1) {
                if (W > 16) std::memcpy(row + p.pw, src, size_t(W) * sizeof(float));
                else for (int64_t ix = 0; ix < W; ix++) row[p.pw + ix] = src[ix];  // no libc call for 7x7 planes
                continue;
            }
            if (p.sw == 2) {  // 16 columns at a time: the even ones to one phase, the odd ones to the other
                float* de = row + (p.pw % 2) * L + p.pw / 2;
                float* dodd = row + ((p.pw + 1) % 2) * L + (p.pw + 1) / 2;
                for (int64_t c0 = 0; c0 < done; c0 += 16) {
                    const v8 a = load8(src + c0), b = load8(src + c0 + 8);
                    const v8 e = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
                    const v8 o = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
                    std::memcpy(de + c0 / 2, &e, sizeof e);
                    std::memcpy(dodd + c0 / 2, &o, sizeof o);
                }
            }
            for (int64_t q = 0; q < p.sw; q++) {  // what is left of phase q: padded columns q, q + sw, ...
                float* d = row + phase_dst[size_t(q)];
                for (int64_t ix = phase_ix[size_t(q)]; ix < W; ix += p.sw) *d++ = src[ix];
            }
        }
        packed = n * C + grp;
        const Rows r{buf.data(), off.data(), T, OH, OW, OW8, p.sh * RW, lo, hi};
        float bj[MB] = {};
        float* yj[MB];
        for (int64_t j = 0; j < mb; j++) {
            bj[j] = bt ? static_cast<const float*>(bt->data)[m0 + j] : 0.f;
            yj[j] = static_cast<float*>(dst->data) + (n * M + m0 + j) * OH * OW;
        }
        if (dw3) {
            (p.sh == 1 ? dw3_plane<1> : dw3_plane<2>)(r, col, k, bj[0], yj[0]);
        } else if (mb == MB) {
            direct_rows<MB>(r, k, bj, yj);
        } else {
            for (int64_t j = 0; j < mb; j++) direct_rows<1>(r, k + j * T, bj + j, yj + j);
        }
    }
}

}  // namespace

ggml_tensor* conv2d_direct_clamp(Ctx& ctx, ggml_tensor* x, ggml_tensor* k, ggml_tensor* bias, int sw, int sh, int pw,
                                 int ph, ConvClamp act) {
    x = cont(ctx, x);
    k = cont(ctx, k);
    const int64_t OW = (x->ne[0] + 2 * pw - k->ne[0]) / sw + 1, OH = (x->ne[1] + 2 * ph - k->ne[1]) / sh + 1;
    ggml_tensor* args[3] = {x, k, bias};
    if (k->ne[2] < 1 || x->ne[2] % k->ne[2] != 0 || k->ne[3] % (x->ne[2] / k->ne[2]) != 0)
        throw OpError("conv2d_direct_clamp: channels do not split into groups");
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, OW, OH, k->ne[3], x->ne[3], args, bias ? 3 : 2,
                                    direct_clamp_kernel, GGML_N_TASKS_MAX,
                                    keep_params(DwcParams{sw, sh, pw, ph, act}));
    ctx.label(y, k->ne[2] == 1 ? "depthwise" : "conv_direct");
    return y;
}

O2G_ISA_END
}  // namespace o2g
