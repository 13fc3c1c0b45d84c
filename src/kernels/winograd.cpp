// CPU convolution kernels. Winograd F(m x m, 3 x 3): input transform, the 36 (or 16) small products (the gemm
// micro-kernel, the weight's forms made as they go) and output transform are custom kernels; with a reduced-precision
// weight the products are one batched ggml_mul_mat by stored forms. Compared with an F32 im2col this does
// 2.25x (m = 2) or 4x (m = 4) fewer multiply-adds and moves 4x / 2.25x the input instead of 9x. Depthwise: one
// Built once per x86-64 level (kernels/isa.h).
#include "kernels/isa.h"
#include "kernels/winograd.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/custom.h"
#include "kernels/gemm.h"
#include "kernels/vec8.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

// Transform matrices (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks"): y = A^T[(G g G^T) .* (B^T d B)]A.
template <int M> struct Mat;
template <> struct Mat<2> {
    static constexpr int A = 4;
    static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
    static constexpr double G[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
    static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};
template <> struct Mat<4> {
    static constexpr int A = 6;
    static constexpr float BT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                       {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
    static constexpr double G[6][3] = {{1.0 / 4, 0, 0},
                                       {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                       {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                       {0, 0, 1}};
    static constexpr float AT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

constexpr int LANES = 16;  // channels (input transform) or tiles (output transform) handled together

struct Params {
    int pw, ph;
    int64_t W, H, C, N, OW, OH, TW, TH;
    // The batched product is M [M_out, T, A*A] (reduced-precision weight first: ggml takes it as src0) instead
    // of Mt [T, M_out, A*A].
    bool co_fastest = false;
    bool blocked = false;  // co_fastest as 16-channel blocks: M [16, T, M_out/16, A*A] (product_kernel)
    ConvClamp act;  // a fused clamp (ReLU, ReLU6) on the outputs
    int64_t CO = 0;      // output channels
    int64_t vs = 0, ms = 0;  // floats from one of the A*A slices of V, and of blocked M, to the next
};

// Floats from one A*A slice to the next, padded (the blocked path, whose kernels are the only readers) to an odd
// number of cache lines: slices a multiple of 4 KB apart put the transforms' 36 streams in one L1 and L2 set.
int64_t slice_stride(int64_t floats, bool pad) {
    const int64_t lines = (floats + 15) / 16;
    return pad ? (lines | 1) * 16 : floats;
}

// x [W, H, C, N] -> V [C, T, A*A], T = N*TH*TW tiles; each work item is one tile row and 16 channels.
template <int M>
void input_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    using K = Mat<M>;
    constexpr int A = K::A;
    const Params& p = *static_cast<const Params*>(ud);
    const ggml_tensor* xt = dst->src[0];
    const float* x = static_cast<const float*>(xt->data);
    float* v = static_cast<float*>(dst->data);
    const int64_t CB = (p.C + LANES - 1) / LANES;
    const int64_t items = p.N * p.TH * CB, per = (items + nth - 1) / nth;
    const int64_t i0 = std::min(items, per * ith), i1 = std::min(items, i0 + per);
    alignas(64) float d[A][A][LANES], t[A][A][LANES];
    // The tile row's A input rows of 16 channels, zero-padded, copied first with the channels interleaved
    // ([row][column][16]): a tile's inputs are then 36 vector loads. Gathered tile by tile from 16 planes a whole
    // image apart (one L1 set at 32 x 32, one L2 set at 128 x 128), they thrashed the caches.
    const int64_t BW = p.TW * M + 2;  // every tile's A columns, from column -pw
    thread_local std::vector<float> rows;
    rows.resize(size_t(A * BW * LANES));
    for (int64_t it = i0; it < i1; it++) {
        const int64_t cb = it % CB, row = it / CB, ty = row % p.TH, n = row / p.TH;
        const int64_t c0 = cb * LANES, nc = std::min<int64_t>(LANES, p.C - c0);
        const int64_t y0 = ty * M - p.ph, lo = std::min<int64_t>(BW, p.pw), hi = std::min<int64_t>(BW, p.pw + p.W);
        for (int i = 0; i < A; i++) {
            float* r = &rows[size_t(i * BW * LANES)];
            const int64_t yy = y0 + i;
            if (yy < 0 || yy >= p.H) {
                std::fill(r, r + BW * LANES, 0.f);
                continue;
            }
            std::fill(r, r + lo * LANES, 0.f);
            std::fill(r + hi * LANES, r + BW * LANES, 0.f);
            for (int64_t l = 0; l < LANES; l++) {
                if (l >= nc) {
                    for (int64_t col = lo; col < hi; col++) r[col * LANES + l] = 0.f;
                    continue;
                }
                const float* src = x + size_t(((n * p.C) + c0 + l) * p.H + yy) * size_t(p.W) - lo;
                for (int64_t col = lo; col < hi; col++) r[col * LANES + l] = src[col];
            }
        }
        for (int64_t tx = 0; tx < p.TW; tx++) {
            for (int i = 0; i < A; i++)
                for (int j = 0; j < A; j++)
                    std::memcpy(d[i][j], &rows[size_t(((i * BW) + tx * M + j) * LANES)], sizeof d[i][j]);
            // t = B^T d, then v = t B, 16 channels per vector. Loops unrolled so the zero coefficients fold away
            // (else GCC tests them at run time and leaves parts scalar).
            #pragma GCC unroll 6
            for (int a = 0; a < A; a++)
                #pragma GCC unroll 6
                for (int j = 0; j < A; j++) {
                    float acc[LANES] = {};
                    #pragma GCC unroll 6
                    for (int i = 0; i < A; i++) {
                        const float c = K::BT[a][i];
                        if (c == 0) continue;
                        for (int l = 0; l < LANES; l++) acc[l] += c * d[i][j][l];
                    }
                    std::memcpy(t[a][j], acc, sizeof acc);
                }
            const int64_t tile = (n * p.TH + ty) * p.TW + tx;
            #pragma GCC unroll 6
            for (int a = 0; a < A; a++)
                #pragma GCC unroll 6
                for (int b = 0; b < A; b++) {
                    float acc[LANES] = {};
                    #pragma GCC unroll 6
                    for (int j = 0; j < A; j++) {
                        const float c = K::BT[b][j];
                        if (c == 0) continue;
                        for (int l = 0; l < LANES; l++) acc[l] += c * t[a][j][l];
                    }
                    float* o = v + size_t(a * A + b) * size_t(p.vs) + size_t(tile) * size_t(p.C) + size_t(c0);
                    if (nc == LANES) std::memcpy(o, acc, sizeof acc);  // fixed size: two/four vector stores
                    else
                        for (int64_t l = 0; l < nc; l++) o[l] = acc[l];
                }
        }
    }
}

// One output transform over LANES tiles or channels: r = A^T s A + b0 (s: A x A inputs, r: M x M outputs).
template <int M>
inline void output_tile(const float (&s)[Mat<M>::A][Mat<M>::A][LANES], const float (&b0)[LANES],
                        float (&r)[M][M][LANES]) {
    using K = Mat<M>;
    constexpr int A = K::A;
    alignas(64) float t[M][A][LANES];
    #pragma GCC unroll 6
    for (int i = 0; i < M; i++)
        #pragma GCC unroll 6
        for (int b = 0; b < A; b++) {
            float acc[LANES] = {};
            #pragma GCC unroll 6
            for (int a = 0; a < A; a++) {
                const float c = K::AT[i][a];
                if (c == 0) continue;
                for (int l = 0; l < LANES; l++) acc[l] += c * s[a][b][l];
            }
            std::memcpy(t[i][b], acc, sizeof acc);
        }
    #pragma GCC unroll 6
    for (int i = 0; i < M; i++)
        #pragma GCC unroll 6
        for (int j = 0; j < M; j++) {
            float acc[LANES];
            for (int l = 0; l < LANES; l++) acc[l] = b0[l];
            #pragma GCC unroll 6
            for (int b = 0; b < A; b++) {
                const float c = K::AT[j][b];
                if (c == 0) continue;
                for (int l = 0; l < LANES; l++) acc[l] += c * t[i][b][l];
            }
            std::memcpy(r[i][j], acc, sizeof acc);
        }
}

// Mt [T, M_out, A*A] (+ bias [M_out]) -> y [OW, OH, M_out, N]; each work item is one output channel and tile row,
// 16 tiles per vector.
template <int M>
void output_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    using K = Mat<M>;
    constexpr int A = K::A;
    const Params& p = *static_cast<const Params*>(ud);
    const ggml_tensor* mt = dst->src[0];
    const ggml_tensor* bias = dst->src[1];
    const float* mm = static_cast<const float*>(mt->data);
    float* y = static_cast<float*>(dst->data);
    const int64_t T = p.N * p.TH * p.TW, CO = dst->ne[2];
    const int64_t items = p.N * CO * p.TH, per = (items + nth - 1) / nth;
    const int64_t i0 = std::min(items, per * ith), i1 = std::min(items, i0 + per);
    alignas(64) float s[A][A][LANES], r[M][M][LANES], b0[LANES];
    for (int64_t it = i0; it < i1; it++) {
        const int64_t ty = it % p.TH, co = (it / p.TH) % CO, n = it / p.TH / CO;
        std::fill(b0, b0 + LANES, bias ? static_cast<const float*>(bias->data)[co] : 0.f);
        float* plane = y + size_t((n * CO + co) * p.OH) * size_t(p.OW);
        for (int64_t tx0 = 0; tx0 < p.TW; tx0 += LANES) {
            const int64_t nt = std::min<int64_t>(LANES, p.TW - tx0);
            const int64_t tile0 = (n * p.TH + ty) * p.TW + tx0;
            for (int a = 0; a < A; a++)
                for (int b = 0; b < A; b++) {
                    const float* src = mm + (size_t(a * A + b) * size_t(CO) + size_t(co)) * size_t(T) + size_t(tile0);
                    // a loop, not memcpy: GCC makes a variable-length memcpy `rep movs`, slow for 32-64 bytes
                    for (int64_t l = 0; l < LANES; l++) s[a][b][l] = l < nt ? src[l] : 0.f;
                }
            output_tile<M>(s, b0, r);
                if (p.act.active()) p.act.apply(&r[0][0][0], M * M * LANES);  // after the transform: inside, 4x slower
            for (int i = 0; i < M; i++) {
                const int64_t oy = ty * M + i;
                if (oy >= p.OH) break;
                float* orow = plane + oy * p.OW;
                for (int64_t l = 0; l < nt; l++) {
                    const int64_t ox = (tx0 + l) * M;
                    for (int j = 0; j < M && ox + j < p.OW; j++) orow[ox + j] = r[i][j][l];
                }
            }
        }
    }
}

// M [M_out, T, A*A] (the product with the weight first) (+ bias [M_out]) -> y [OW, OH, M_out, N]; each work item is
// one tile row; per tile, 16 output channels at a time are the vector lanes, so each of the A*A inputs is 16
// contiguous floats and the A*A input streams run sequentially. (Lanes over tiles read with stride M_out and
// thrashed L1: 3x slower on SqueezeNet.)
template <int M>
void output_kernel_co(ggml_tensor* dst, int ith, int nth, void* ud) {
    using K = Mat<M>;
    constexpr int A = K::A;
    const Params& p = *static_cast<const Params*>(ud);
    const ggml_tensor* bias = dst->src[1];
    const float* mm = static_cast<const float*>(dst->src[0]->data);
    float* y = static_cast<float*>(dst->data);
    const int64_t T = p.N * p.TH * p.TW, CO = dst->ne[2], CB = (CO + LANES - 1) / LANES;
    const WorkSpan w = work_span(p.N * p.TH, ith, nth);
    alignas(64) float s[A][A][LANES], r[M][M][LANES], b0[LANES];
    const int64_t RW = p.TW * M;  // a staged output row: whole tiles
    thread_local std::vector<float> row;
    row.resize(size_t(LANES * M * RW));
    for (int64_t it = w.b; it < w.e; it++)
        for (int64_t cb = 0; cb < CB; cb++)  // then the tiles: 16 channels' output rows are written in order
            for (int64_t tx = 0; tx < p.TW; tx++) {
                const int64_t ty = it % p.TH, n = it / p.TH;
                const int64_t co0 = cb * LANES, nc = std::min<int64_t>(LANES, CO - co0);
                for (int64_t l = 0; l < LANES; l++)
                    b0[l] = bias && l < nc ? static_cast<const float*>(bias->data)[co0 + l] : 0.f;
                const int64_t tile = (n * p.TH + ty) * p.TW + tx;
                for (int a = 0; a < A; a++)
                    for (int b = 0; b < A; b++) {
                        const size_t ab = size_t(a * A + b);
                        const float* src = p.blocked ? mm + ab * size_t(p.ms) + (size_t(cb) * size_t(T) + size_t(tile)) * LANES
                                                     : mm + (ab * size_t(T) + size_t(tile)) * size_t(CO) + size_t(co0);
                        // 36 streams, more than the hardware prefetcher follows (half this kernel's time waited on
                        // these loads)
                        if (p.blocked) __builtin_prefetch(src + 8 * LANES);
                        if (nc == LANES) std::memcpy(s[a][b], src, sizeof s[a][b]);
                        else
                            for (int64_t l = 0; l < LANES; l++) s[a][b][l] = l < nc ? src[l] : 0.f;
                    }
                output_tile<M>(s, b0, r);
                if (p.act.active()) p.act.apply(&r[0][0][0], M * M * LANES);  // after the transform: inside, 4x slower
                for (int64_t l = 0; l < LANES; l++)
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < M; j++) row[size_t((l * M + i) * RW + tx * M + j)] = r[i][j][l];
                if (tx + 1 < p.TW) continue;
                // The tile row's 16 channels x M output rows, each written whole: scattered as M-float pieces of 16
                // planes, a whole image apart (one L1 set at 32 x 32), they thrashed L1.
                for (int64_t l = 0; l < nc; l++) {
                    float* plane = y + size_t((n * CO + co0 + l) * p.OH) * size_t(p.OW);
                    for (int i = 0; i < M && ty * M + i < p.OH; i++)
                        std::memcpy(plane + (ty * M + i) * p.OW, &row[size_t((l * M + i) * RW)], size_t(p.OW) * sizeof(float));
                }
            }
}

// One input channel's forms for 16 output channels (lanes; zero past n): u[a][b][l] = (G g_l G^T)[a][b], computed in
// double and rounded once. k: the first of the 16 kernels [9], `stride` floats apart.
template <int M>
inline void forms16(const float* k, int64_t stride, int64_t n, float u[][LANES]) {
    using K = Mat<M>;
    constexpr int A = K::A;
    double kk[9][LANES], gk[A][3][LANES];  // the kernels, then G g
    for (int l = 0; l < LANES; l++)
        for (int j = 0; j < 9; j++) kk[j][l] = l < n ? k[size_t(l * stride + j)] : 0.0;
    #pragma GCC unroll 6
    for (int a = 0; a < A; a++)
        #pragma GCC unroll 3
        for (int j = 0; j < 3; j++)
            for (int l = 0; l < LANES; l++)
                gk[a][j][l] = K::G[a][0] * kk[j][l] + K::G[a][1] * kk[3 + j][l] + K::G[a][2] * kk[6 + j][l];
    #pragma GCC unroll 6
    for (int a = 0; a < A; a++)
        #pragma GCC unroll 6
        for (int b = 0; b < A; b++)
            for (int l = 0; l < LANES; l++)
                u[a * A + b][l] = float(gk[a][0][l] * K::G[b][0] + gk[a][1][l] * K::G[b][1] + gk[a][2][l] * K::G[b][2]);
}

// Stored forms (a reduced-precision weight; ONNX2GGML_WINOGRAD_FORMS=stored): g: weight [CO, CI, 3, 3] -> o: U
// [A*A, CO, CI] (ggml [CI, CO, A*A]) or, packed, the gemm kernel's panels [A*A, CO/16, CI, 16] (kernels/gemm.h;
// zero past CO). Each store is a whole contiguous run: 16 input channels of one output channel, or, packed, one
// 64-byte panel line of 16 output channels (forms made in input-channel lanes were 4-byte stores 64 bytes apart).
template <int M>
void transform_weights(const float* g, float* o, int64_t CO, int64_t CI, bool packed) {
    constexpr int AA = Mat<M>::A * Mat<M>::A;
    const int64_t np = (CO + 15) / 16;
    auto rows = [&](int64_t co0, int64_t co1) {  // U order: lanes are input channels
        float u[AA][LANES];
        for (int64_t co = co0; co < co1; co++)
            for (int64_t ci0 = 0; ci0 < CI; ci0 += LANES) {
                const int64_t n = std::min<int64_t>(LANES, CI - ci0);
                forms16<M>(g + size_t((co * CI + ci0) * 9), 9, n, u);
                for (int ab = 0; ab < AA; ab++)
                    std::memcpy(o + (size_t(ab) * size_t(CO) + size_t(co)) * size_t(CI) + size_t(ci0), u[ab],
                                size_t(n) * sizeof(float));
            }
    };
    auto panels = [&](int64_t p0, int64_t p1) {  // packed: lanes are output channels
        float u[AA][LANES];
        for (int64_t pb = p0; pb < p1; pb++)
            for (int64_t ci = 0; ci < CI; ci++) {
                forms16<M>(g + size_t((pb * 16 * CI + ci) * 9), CI * 9, std::min<int64_t>(16, CO - pb * 16), u);
                for (int ab = 0; ab < AA; ab++)
                    std::memcpy(o + ((size_t(ab) * size_t(np) + size_t(pb)) * size_t(CI) + size_t(ci)) * 16, u[ab],
                                sizeof u[ab]);
            }
    };
    static_assert(LANES == 16, "a panel line is 16 output channels");
    // Large weights (UNet) take seconds: split output channels (or panels) over the machine's threads.
    const int64_t items = packed ? np : CO;
    const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(items, int64_t(std::thread::hardware_concurrency())));
    auto part = [&](int64_t i0, int64_t i1) { packed ? panels(i0, i1) : rows(i0, i1); };
    if (nt == 1 || CO * CI < 65536) {
        part(0, items);
        return;
    }
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < nt; t++) pool.emplace_back(part, items * t / nt, items * (t + 1) / nt);
    for (auto& th : pool) th.join();
}

// Winograd's A*A products M[ab] [T, CO] = V[ab] [T, CI] x U[ab] [CI, CO], the forms U made in the product, block
// by block, from the weight's taps: no stored form (F(4,3)'s are 4x the weight, F(2,3)'s 1.8x: the UNet held 440 MB
// more than its weights, the VAE decoder 3x its weights) and none to make when a new shape changes a conv's tile.
// The taps are the im2col product's panels (gemm_row_panels), so a weight has one prepared copy whatever the path.
// Making forms is about 2 % of the multiply-adds; the products run as fast as from stored forms (the VAE decoder's
// faster: M is written in 16-channel blocks, whole rows of the micro-kernel).
#if defined(__AVX512F__)
// AVX-512 (12 x 32 tiles, measured on Zen 5): 128 channels x 288 tiles x 4 panels (K blocks of 48-512, rows of
// 96-384, 2-8 panels measured; 96 channels did as well before forms were cheap, 2-3 % worse since).
constexpr int64_t FUSED_K = 128;     // input channels per block of forms
constexpr int64_t FUSED_ROWS = 288;  // tiles per row block
constexpr int64_t FUSED_PANELS = 4;  // 16-channel panels per work item, at most
// Forms made at once by a work item, at most (bytes; per thread, in L3): the VAE's 512 channels in one group.
constexpr int64_t FUSED_FORMS = 6 << 20;
#else
constexpr int64_t FUSED_K = 128;     // input channels per block of forms
constexpr int64_t FUSED_ROWS = 192;  // tiles per row block
constexpr int64_t FUSED_PANELS = 8;  // 16-channel panels per work item, at most: their F(4,3) forms (2.3 MB) stay in L3
constexpr int64_t FUSED_FORMS = 0;   // one block at a time (the grouping measured 3-5 % slower on the UNet's)
#endif

typedef float v16 __attribute__((vector_size(64)));  // one zmm on AVX-512, two ymm on AVX2

// (Results through references: a 64-byte vector by value is an ABI warning below AVX-512.)
template <typename T>
inline void load16(v16& r, const T* p) {
    const v8 lo = load8(p), hi = load8(p + 8);
    r = __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// r = g[0] x0 + g[1] x1 + g[2] x2, the zero coefficients skipped (constants once unrolled; a third of G's entries).
inline void row3(v16& r, const double (&g)[3], const v16& x0, const v16& x1, const v16& x2) {
    const v16* x[3] = {&x0, &x1, &x2};
    bool any = false;
    #pragma GCC unroll 3
    for (int i = 0; i < 3; i++)
        if (g[i] != 0) {
            r = any ? r + float(g[i]) * *x[i] : float(g[i]) * *x[i];
            any = true;
        }
}

// The forms of one input channel for a panel's 16 output channels (taps: 9 x 16, f32 or f16: made in f32 either
// way, so f16 taps give the forms of their f32-widened weight), into u[ab * ld + lane]. 16 lanes at once and no
// multiply by G's zeros: 27 against 44 ns a call as two 8-lane halves with every multiply (Zen 5).
template <int M, typename T>
inline void forms_lanes(const T* taps, float* u, int64_t ld) {
    using K = Mat<M>;
    constexpr int A = K::A;
    static_assert(LANES == GEMM_PANEL, "one lane per panel column");
    v16 kk[9], gk[A][3];
    for (int j = 0; j < 9; j++) load16(kk[j], taps + j * 16);
    #pragma GCC unroll 6
    for (int a = 0; a < A; a++)
        #pragma GCC unroll 3
        for (int j = 0; j < 3; j++) row3(gk[a][j], K::G[a], kk[j], kk[3 + j], kk[6 + j]);
    #pragma GCC unroll 6
    for (int a = 0; a < A; a++)
        #pragma GCC unroll 6
        for (int b = 0; b < A; b++) {
            v16 r;
            row3(r, K::G[b], gk[a][0], gk[a][1], gk[a][2]);
            std::memcpy(u + (a * A + b) * ld, &r, sizeof r);
        }
}

// src0 V [CI, T] x A*A (slices p.vs apart), src1 the weight's taps [16, CI*9, CO/16] (gemm_row_panels) -> M [16, T,
// CO/16] x A*A (slices p.ms apart).
// A work item is a block of rows and a run of panels. It makes those panels' forms for a group of input-channel
// blocks (all of them up to FUSED_FORMS), then runs each product over the group's blocks: the product's output
// block stays in L2 across the blocks (one block at a time wrote each output block back to L3 once per block: the
// VAE's products 5-10 % slower). The first pass over each slice of V prefetches the next tile's rows
// (gemm_panel_rows).
template <int M, typename WT>
void product_run(ggml_tensor* dst, int ith, int nth, void* ud) {
    constexpr int AA = Mat<M>::A * Mat<M>::A;
    const float* v = static_cast<const float*>(dst->src[0]->data);
    const WT* taps = static_cast<const WT*>(dst->src[1]->data);
    float* y = static_cast<float*>(dst->data);
    const Params& p = *static_cast<const Params*>(ud);
    const int64_t CI = p.C, T = p.N * p.TH * p.TW, CO = p.CO, NP = (CO + GEMM_PANEL - 1) / GEMM_PANEL;
    const GemmTile gt = gemm_tile();  // row blocks and panel runs in whole register tiles
    const int64_t MB = (T + FUSED_ROWS - 1) / FUSED_ROWS, mc = ((T + MB - 1) / MB + gt.rows - 1) / gt.rows * gt.rows;
    // Few row blocks (the UNet's 32x32 layers: one): more panel runs, so that each thread has two items.
    int64_t runs = std::max((NP + FUSED_PANELS - 1) / FUSED_PANELS, (2 * nth + MB - 1) / MB);
    if (MB < 2 * nth) runs = (runs + nth - 1) / nth * nth;  // whole rounds of items (5 items on 2 threads: 3 + 2)
    runs = std::min(NP, runs);
    int64_t per = std::min(NP, ((NP + runs - 1) / runs + gt.panels - 1) / gt.panels * gt.panels);
    // Rounding to whole tiles can leave an odd count of items (a 64x64 image's 20 panels: 5 runs of 4): shorter
    // runs until the threads get equal shares (10 runs of 2), as the single row block cannot be split instead.
    while (MB < 2 * nth && per > gt.panels && ((NP + per - 1) / per * MB) % nth) per -= gt.panels;
    runs = (NP + per - 1) / per;
    // A form slice (one ab, 16 channels, a block of inputs) is FUSED_K lines, and one line more apart: at 6 or 8 KB
    // apart forms_lanes' 36 stores fell in two L1 sets (5x slower; making forms took 20 % of the UNet's products).
    const int64_t SLICE = FUSED_K * GEMM_PANEL + GEMM_PANEL, KB = (CI + FUSED_K - 1) / FUSED_K;
    // Blocks of input channels whose forms are made together: all of them up to FUSED_FORMS bytes.
    const int64_t KG = std::max<int64_t>(1, std::min(KB, FUSED_FORMS / int64_t(per * AA * SLICE * sizeof(float))));
    std::vector<float> forms(size_t(KG * per * AA * SLICE));  // [KG][per][AA][SLICE]
    // With all of a run's forms made at once, a thread takes a run's row blocks one after the other and makes its
    // forms once.
    const bool keep = KG == KB;
    int64_t made = -1;  // the run whose forms are in `forms`
    const WorkSpan s = work_span(MB * runs, ith, nth);
    for (int64_t it = s.b; it < s.e; it++) {
        const int64_t mb = keep ? it % MB : it / runs, run = keep ? it / MB : it % runs;
        const int64_t p0 = run * per, p1 = std::min(NP, p0 + per);
        const int64_t m0 = std::min(T, mb * mc), rows = std::min(T, m0 + mc) - m0;
        for (int64_t g0 = 0; g0 < KB; g0 += KG) {
            const int64_t g1 = std::min(KB, g0 + KG);
            for (int64_t kb = g0; kb < g1 && !(keep && made == run); kb++) {
                const int64_t k0 = kb * FUSED_K, kc = std::min(FUSED_K, CI - k0);
                for (int64_t pi = p0; pi < p1; pi++) {
                    const WT* t = taps + (pi * CI + k0) * 9 * GEMM_PANEL;
                    float* f = &forms[size_t(((kb - g0) * per + pi - p0) * AA * SLICE)];
                    for (int64_t k = 0; k < kc; k++) forms_lanes<M, WT>(t + k * 9 * GEMM_PANEL, f + k * GEMM_PANEL, SLICE);
                }
            }
            made = run;
            for (int ab = 0; ab < AA; ab++)
                for (int64_t kb = g0; kb < g1; kb++) {  // in order: the same sums as one pass over CI
                    const int64_t k0 = kb * FUSED_K, kc = std::min(FUSED_K, CI - k0);
                    const float* f = &forms[size_t(((kb - g0) * per * AA + ab) * SLICE)];
                    gemm_panel_rows(v + ab * p.vs + m0 * CI + k0, CI, f, AA * SLICE, p1 - p0, kc,
                                    y + ab * p.ms + (p0 * T + m0) * GEMM_PANEL, GEMM_PANEL, T * GEMM_PANEL, rows,
                                    int(std::min<int64_t>(GEMM_PANEL, CO - (p1 - 1) * GEMM_PANEL)), k0 == 0);
                }
        }
    }
}

template <int M>
void product_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    if (dst->src[1]->type == GGML_TYPE_F16) product_run<M, ggml_fp16_t>(dst, ith, nth, ud);
    else product_run<M, float>(dst, ith, nth, ud);
}

bool fused_forms() {
    static const bool on = [] {
        const char* e = getenv("ONNX2GGML_WINOGRAD_FORMS");  // "stored": forms made once and kept (measurements)
        return !(e && std::string(e) == "stored");
    }();
    return on;
}

template <int M>
ggml_tensor* build(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, int pw, int ph, ConvClamp act) {
    constexpr int A = Mat<M>::A;
    x = cont(ctx, x);
    Params p{};
    p.act = act;
    p.pw = pw;
    p.ph = ph;
    p.W = x->ne[0];
    p.H = x->ne[1];
    p.C = x->ne[2];
    p.N = x->ne[3];
    p.OW = p.W + 2 * pw - 2;
    p.OH = p.H + 2 * ph - 2;
    p.TW = (p.OW + M - 1) / M;
    p.TH = (p.OH + M - 1) / M;
    const int64_t CO = w->ne[3], CI = w->ne[2];
    const ggml_type ut = product_weight_type(ctx, w, CI);  // --weights f16|bf16|q8_0 reaches the products too
    const int64_t T = p.N * p.TH * p.TW;
    // F32: the A*A products by our gemm micro-kernel (1.6x ggml's MUL_MAT on the UNet's, measured) with the forms
    // made in the product (product_kernel); ONNX2GGML_WINOGRAD_FORMS=stored: from stored forms (gemm_batched),
    // written transposed [T, CO, A*A] for the output transform's tile lanes.
    const bool packed = ut == GGML_TYPE_F32 && gemm_available() && gemm_wanted(T, CI, CO);
    const bool fused = packed && fused_forms();
    p.co_fastest = ut != GGML_TYPE_F32 || fused;
    p.blocked = fused;
    p.CO = CO;
    p.vs = slice_stride(CI * T, fused);
    p.ms = slice_stride((CO + GEMM_PANEL - 1) / GEMM_PANEL * GEMM_PANEL * T, fused);
    const Params* pp = keep_params(p);
    ggml_tensor* args[1] = {x};
    // Blocked: V as A*A padded slices (only our product reads it); else [CI, T, A*A] for ggml's products.
    ggml_tensor* v = fused ? ggml_custom_4d(ctx, GGML_TYPE_F32, p.vs, A * A, 1, 1, args, 1, input_kernel<M>,
                                            GGML_N_TASKS_MAX, const_cast<Params*>(pp))
                           : ggml_custom_4d(ctx, GGML_TYPE_F32, p.C, T, A * A, 1, args, 1, input_kernel<M>,
                                            GGML_N_TASKS_MAX, const_cast<Params*>(pp));
    ggml_format_name(v, "%s#wino_in", ggml_get_name(w));
    ctx.label(v, M == 2 ? "winograd2_input" : "winograd4_input");
    ggml_tensor* mt;
    if (fused) {
        ggml_tensor* fargs[2] = {v, gemm_row_panels(ctx, w, CO)};
        mt = ggml_custom_4d(ctx, GGML_TYPE_F32, p.ms, A * A, 1, 1, fargs, 2, product_kernel<M>, GGML_N_TASKS_MAX,
                            const_cast<Params*>(pp));
        ggml_format_name(mt, "%s#wino_prod", ggml_get_name(w));
        ctx.label(mt, M == 2 ? "winograd2_product" : "winograd4_product");
    } else {
        const int64_t une[4] = {CI, CO, A * A, 1}, pne[4] = {16, CI, (CO + 15) / 16, A * A};
        const char* kind = packed ? (M == 2 ? "wino2p" : "wino4p") : (M == 2 ? "wino2" : "wino4");
        ggml_tensor* u = ctx.weights->derived(w, kind, ut, packed ? pne : une,
                                              [CO, CI, packed](const float* src, float* dst) {
                                                  transform_weights<M>(src, dst, CO, CI, packed);
                                              });
        mt = packed           ? gemm_batched(ctx, v, u, CO, true)  // [T, CO, A*A]
             : p.co_fastest ? ggml_mul_mat(ctx, u, v)              // [CO, T, A*A]
                            : mul_mat(ctx, v, u);                  // [T, CO, A*A]
    }
    ggml_tensor* oargs[2] = {mt, bias};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, p.OW, p.OH, CO, p.N, oargs, bias ? 2 : 1,
                                    p.co_fastest ? output_kernel_co<M> : output_kernel<M>,
                                    GGML_N_TASKS_MAX, const_cast<Params*>(pp));
    ctx.label(y, M == 2 ? "winograd2_output" : "winograd4_output");
    return y;
}

}  // namespace

int winograd_tile(int64_t image_pixels) {
    static const int forced = [] {
        const char* e = getenv("ONNX2GGML_WINOGRAD");
        return e ? atoi(e) : -1;
    }();
    if (forced == 0 || forced == 2 || forced == 4) return forced;
    // The transformed weight is 4x (m = 4) or 1.8x (m = 2) the original: worth it only where many output pixels
    // share it. Deep, narrow layers (UNet at 8x8) keep im2col and their original weights. F(4,3) from 32x32: on the
    // SD VAE's 512-channel 32x32 layers it runs 2-3 % faster than F(2,3), and a 32 -> 48 latent then needs no new
    // forms (F(2,3) -> F(4,3) there made 360 MB of them while the new shape's graph built: 330 ms).
    if (image_pixels >= 1024) return 4;
    // 13x13 and up: SqueezeNet 1.1 12 % faster on AVX-512 (its 13x13 fire modules); 14x14: ResNet-18 13 % faster.
    if (image_pixels >= 169) return 2;
    return 0;
}

ggml_tensor* conv2d_winograd(Ctx& ctx, int m, ggml_tensor* x, ggml_tensor* w, ggml_tensor* bias, int pw, int ph,
                             ConvClamp act) {
    return m == 2 ? build<2>(ctx, x, w, bias, pw, ph, act) : build<4>(ctx, x, w, bias, pw, ph, act);
}

O2G_ISA_END
}  // namespace o2g
