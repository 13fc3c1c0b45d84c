// 1x1 convolution on NCHW (see conv_pointwise.h): Y[M, P] = W[M, C] X[C, P] per image, P = H*W. The weight is
// packed once into panels of MR output channels ([C][MR] each) so the micro-kernel broadcasts MR weights and streams
// NR contiguous pixels of each input channel row: MR x NR accumulators stay in registers (6 x 16, 8 x 32 on AVX-512).
#include "kernels/isa.h"
#include "kernels/conv_pointwise.h"

#include <algorithm>
#include <cstring>

#include "kernels/custom.h"
#include "kernels/vec8.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

#if defined(__AVX512F__)
// 8 x 32 (16 zmm accumulators): per input channel 2 loads and 8 broadcasts feed 16 FMAs. The ymm 6 x 16 tile ran at
// half the width of the machine (MobileNetV2's pointwise convs: 69 % of its time).
typedef float vw __attribute__((vector_size(64)));
constexpr int MR = 8;   // output channels per panel
constexpr int NR = 32;  // pixels per micro-tile (two 16-float vectors)
#else
typedef v8 vw;
constexpr int MR = 6;   // output channels per panel
constexpr int NR = 16;  // pixels per micro-tile (two 8-float vectors)
#endif
constexpr int L = int(sizeof(vw) / sizeof(float)), NV = NR / L;
constexpr int NB = 4;   // micro-tiles per block: a weight panel is reused from L1 across them

inline vw loadw(const float* p) {
    vw v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

struct PwParams {
    int64_t C, M, P, N;
    ConvClamp act;
};

// acc[i][0..NR) = sum_c wp[c*MR + i] * x[c*ldx + 0..NR)
inline void micro(const float* x, int64_t ldx, const float* wp, int64_t C, float out[MR][NR]) {
    vw acc[MR][NV] = {};
    for (int64_t c = 0; c < C; c++) {
        vw xv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) xv[v] = loadw(x + c * ldx + v * L);
        const float* w = wp + c * MR;
#pragma GCC unroll 16
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[i][v] += w[i] * xv[v];
    }
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) std::memcpy(out[i] + v * L, &acc[i][v], sizeof(vw));
}

void pointwise_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const PwParams& p = *static_cast<const PwParams*>(ud);
    const float* X = static_cast<const float*>(dst->src[0]->data);
    const float* Wp = static_cast<const float*>(dst->src[1]->data);  // [M/MR][C][MR], zero-padded
    const float* B = dst->src[2] ? static_cast<const float*>(dst->src[2]->data) : nullptr;
    float* Y = static_cast<float*>(dst->data);
    const int64_t mb_n = (p.M + MR - 1) / MR, tiles = (p.P + NR - 1) / NR, blocks = (tiles + NB - 1) / NB;
    // Work items: (image, pixel block, panel); a thread's consecutive items share the pixel block.
    const WorkSpan s = work_span(p.N * blocks * mb_n, ith, nth);
    // The current pixel block packed as [C][NB*NR] (zero-padded past P): contiguous rows instead of C rows P apart
    // (pages apart for large images), shared by every panel of the block.
    constexpr int64_t BW = NB * NR;
    std::vector<float> xb(size_t(p.C * BW));
    int64_t packed = -1;
    float acc[MR][NR];
    const vw lo = vw{} + p.act.lo, hi = vw{} + p.act.hi;
    for (int64_t it = s.b; it < s.e; it++) {
        const int64_t mb = it % mb_n, nblk = it / mb_n, blk = nblk % blocks, n = nblk / blocks;
        const int64_t pb = blk * BW, bcols = std::min<int64_t>(BW, p.P - pb);
        if (packed != nblk) {
            const float* xn = X + n * p.C * p.P + pb;
            if (bcols == BW)  // constant-size copies: inlined vector moves, not rep movs
                for (int64_t c = 0; c < p.C; c++) std::memcpy(xb.data() + c * BW, xn + c * p.P, BW * sizeof(float));
            else
                for (int64_t c = 0; c < p.C; c++) {
                    std::memcpy(xb.data() + c * BW, xn + c * p.P, size_t(bcols) * sizeof(float));
                    std::fill(xb.data() + c * BW + bcols, xb.data() + (c + 1) * BW, 0.f);
                }
            packed = nblk;
        }
        float* yn = Y + n * p.M * p.P;
        const float* wp = Wp + mb * p.C * MR;
        const int64_t rows = std::min<int64_t>(MR, p.M - mb * MR);
        for (int64_t t = 0; t * NR < bcols; t++) {
            const int64_t p0 = pb + t * NR, cols = std::min<int64_t>(NR, bcols - t * NR);
            micro(xb.data() + t * NR, BW, wp, p.C, acc);
            for (int64_t i = 0; i < rows; i++) {
                const int64_t m = mb * MR + i;
                const float b = B ? B[m] : 0.f;
                // bias, then the clamp as selects (a NaN compares false and stays)
                float* y = yn + m * p.P + p0;
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                    vw o = loadw(acc[i] + v * L) + b;
                    o = o < lo ? lo : o;
                    o = o > hi ? hi : o;
                    std::memcpy(cols == NR ? y + v * L : acc[i] + v * L, &o, sizeof o);
                }
                if (cols < NR) std::memcpy(y, acc[i], size_t(cols) * sizeof(float));
            }
        }
    }
}

void transpose_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const ggml_tensor* xt = dst->src[0];
    const int64_t A = xt->ne[0], B = xt->ne[1], N = xt->ne[2], T = 32;
    const int64_t bb = (B + T - 1) / T;
    const WorkSpan s = work_span(N * bb, ith, nth);  // items: (image, block of T source rows)
    for (int64_t it = s.b; it < s.e; it++) {
        const int64_t n = it / bb, b0 = (it % bb) * T, b1 = std::min(B, b0 + T);
        const float* x = static_cast<const float*>(xt->data) + n * A * B;
        float* y = static_cast<float*>(dst->data) + n * A * B;
        for (int64_t a0 = 0; a0 < A; a0 += T)
            for (int64_t b = b0; b < b1; b++)
                for (int64_t a = a0; a < std::min(A, a0 + T); a++) y[a * B + b] = x[b * A + a];
    }
}

}  // namespace

ggml_tensor* transpose_blocked(Ctx& ctx, ggml_tensor* x) {
    x = cont(ctx, x);
    ggml_tensor* args[1] = {x};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[1], x->ne[0], x->ne[2], 1, args, 1, transpose_kernel,
                                    GGML_N_TASKS_MAX, nullptr);
    ctx.label(y, "transpose");
    return y;
}

ggml_tensor* conv2d_pointwise(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, ConvClamp act) {
    x = cont(ctx, x);
    if (x->type != GGML_TYPE_F32) x = ggml_cast(ctx, x, GGML_TYPE_F32);
    const int64_t C = w->ne[2], M = w->ne[3], mb_n = (M + MR - 1) / MR;
    const int64_t pne[4] = {MR, C, mb_n, 1};
    ggml_tensor* wp = ctx.weights->derived(w, MR == 6 ? "pointwise6" : "pointwise8", GGML_TYPE_F32, pne, [C, M, mb_n](const float* src, float* dst) {
        std::fill(dst, dst + mb_n * C * MR, 0.f);
        for (int64_t m = 0; m < M; m++)
            for (int64_t c = 0; c < C; c++) dst[((m / MR) * C + c) * MR + m % MR] = src[m * C + c];
    });
    PwParams p{C, M, x->ne[0] * x->ne[1], x->ne[3], act};
    ggml_tensor* args[3] = {x, wp, bias};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[0], x->ne[1], M, x->ne[3], args, bias ? 3 : 2,
                                    pointwise_kernel, GGML_N_TASKS_MAX, keep_params(p));
    ctx.label(y, "conv_pointwise");
    return y;
}

O2G_ISA_END
}  // namespace o2g
