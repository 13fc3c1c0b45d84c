// CPU matrix product with a constant f32 weight: Y[M, N] = X[M, K] W[K, N] (+ bias). W is packed once per session
// into 16-column panels [N/16][K][16] (zero-padded). The micro-kernel keeps an MR x 16 PW block of Y in registers
// (PW panels side by side: 2 on AVX-512) and, per k, loads one row of each panel and broadcasts one X value per row
// into FMAs: no horizontal sums (ggml's F32 tiles end every output with one) and no padding of X. K is blocked so
// the panels' slices stay in cache while the row blocks of X pass over them; threads split (row block, panel
// group) pairs. Panels of a weight that came as f16 stay f16 and are widened as they load (F16C): the products are
// those of the f32-widened weight, from half the memory. Built per x86-64 level (cmake/cpu_dispatch.cmake); on
// AArch64 with NEON intrinsics (baseline ARMv8-A, any -march).
#include "kernels/isa.h"
#include "kernels/gemm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "ggml.h"
#include "kernels/custom.h"
#include "kernels/vec8.h"
#include "kernels/vexp.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

constexpr int NR = 16;       // panel width (columns)
typedef int32_t v8i __attribute__((vector_size(32)));  // exp_nonpos's integer lanes (the epilogue's sigmoid)

struct Params {
    int64_t K, N, NP;
    int64_t B = 1;  // independent products (Winograd's A*A): x [K, M, B], panels [16, K, NP, B], y [N, M, B]
    bool transposed = false;              // y [M, N, B] (M fastest) instead of [N, M, B]
    bool shared = false;                  // one weight for all B products (a convolution's images)
    ConvClamp act;                        // transposed only: a fused clamp (ReLU, ReLU6) on the finished sums
    float swish = 0;                      // not transposed: GemmEpilogue
    bool residual = false;                // not transposed: src[3] is added (GemmEpilogue)
};

// GemmEpilogue on a finished block C[rows, nv] (row stride ldc) and the residual's same block (or null).
void epilogue(float* c, int64_t ldc, int rows, int nv, const float* res, float alpha) {
    for (int r = 0; r < rows; r++) {
        float* y = c + r * ldc;
        if (alpha != 0) {  // y sigmoid(a y), sigmoid from exp(-|a y|) (never overflows)
            int j = 0;
            for (; j + 8 <= nv; j += 8) {
                const v8 v = load8(y + j), z = v * alpha, az = z < 0 ? -z : z;
                const v8 t = exp_nonpos<v8, v8i>(-az), d = 1.0f / (1.0f + t), s = z >= 0 ? d : t * d;
                const v8 o = v * s;
                std::memcpy(y + j, &o, sizeof o);
            }
            for (; j < nv; j++) {
                const float z = y[j] * alpha, t = std::exp(-std::fabs(z)), d = 1.0f / (1.0f + t);
                y[j] *= z >= 0 ? d : t * d;
            }
        }
        if (res)
            for (int j = 0; j < nv; j++) y[j] += res[r * ldc + j];
    }
}

// tile<R, P>: C[R, 16 P] = start (16 P floats, for every row) or C itself, plus X[R, kc] (row stride ldx) times P
// panel slices w[kc][16] (the next one ws floats on); C's rows have stride ldc, its P 16-column blocks stride cs.
#if defined(__AVX512F__)
using Vec = __m512;
// 12 x 32 (two panels): 24 zmm accumulators, 2 panel rows, broadcasts from memory. Per k, 14 loads feed 24 FMAs
// (12 x 16 needed 13 for 12, the loads the limit: 70-77 % of peak on Zen 5, measured).
constexpr int MR = 12, PW = 2;
// Shared-dim and row blocks: the [MC, KC] slice of X (288 KiB) stays in L2 across panels. 8-10 % faster than
// 256 x 96 (measured on Zen 5, 1 MiB L2): fewer passes over the accumulators, fewer row-block switches.
constexpr int64_t KC = 384, MC = 192;
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vbroadcast(const float* p) { return _mm512_set1_ps(*p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
// The zero-masked form: GCC 12 warns of the unmasked one's undefined pass-through.
inline Vec vload(const ggml_fp16_t* p) {
    return _mm512_maskz_cvtph_ps(__mmask16(0xFFFF), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#elif defined(O2G_WIDE16) || (defined(__SSE2__) && !(defined(__AVX__) && defined(__FMA__)))
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(O2G_WIDE16)
// The AVX-512 tile shape with generic 16-float vectors, so that configuration is tested on AVX2 machines.
constexpr int VBYTES = 64, MR = 12, PW = 2;
constexpr int64_t KC = 384, MC = 192;
#else
// x86-64 without AVX2/FMA (the x86-64-v2 build): 16 xmm registers, so 2 rows x 16 columns is 8 accumulators + 4
// for the panel row + 1 broadcast; a multiply and an add (no FMA).
constexpr int VBYTES = 16, MR = 2, PW = 1;
constexpr int64_t KC = 256, MC = 96;
#endif
typedef float Vec __attribute__((vector_size(VBYTES), aligned(4)));
inline Vec vload(const float* p) { Vec v; std::memcpy(&v, p, sizeof v); return v; }
inline void vstore(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }
inline Vec vbroadcast(const float* p) { return Vec{} + *p; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
inline Vec vload(const ggml_fp16_t* p) {
    Vec v;
    for (int i = 0; i < VBYTES / 4; i++) v[i] = ggml_fp16_to_fp32(p[i]);
    return v;
}
#elif defined(__AVX__) && defined(__FMA__)
using Vec = __m256;
constexpr int MR = 6, PW = 1;  // 12 ymm accumulators + 2 for the panel row + 1 broadcast
constexpr int64_t KC = 256;    // shared-dim block: the panel slice (16 KiB) stays in L1
constexpr int64_t MC = 96;     // row block: its [MC, KC] slice of X (96 KiB) stays in L2 across panels
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vbroadcast(const float* p) { return _mm256_broadcast_ss(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#if defined(__F16C__)
inline Vec vload(const ggml_fp16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
#else
inline Vec vload(const ggml_fp16_t* p) {
    alignas(32) float f[8];
    for (int i = 0; i < 8; i++) f[i] = ggml_fp16_to_fp32(p[i]);
    return _mm256_load_ps(f);
}
#endif
#elif defined(__ARM_NEON)
// AArch64: 32 4-float registers, so 6 rows x 16 columns is 24 accumulators + 4 for the panel row + 1 broadcast.
// Blocks as on AVX2 (tuned there, not on an ARM machine: only checked for correctness under QEMU).
using Vec = float32x4_t;
constexpr int MR = 6, PW = 1;
constexpr int64_t KC = 256, MC = 96;
inline Vec vload(const float* p) { return vld1q_f32(p); }
inline void vstore(float* p, Vec v) { vst1q_f32(p, v); }
inline Vec vbroadcast(const float* p) { return vld1q_dup_f32(p); }
inline Vec vfma(Vec a, Vec b, Vec c) { return vfmaq_f32(c, a, b); }
inline Vec vload(const ggml_fp16_t* p) { return vcvt_f32_f16(vld1_f16(reinterpret_cast<const float16_t*>(p))); }
#endif

#if defined(__AVX512F__) || defined(O2G_WIDE16) || (defined(__AVX__) && defined(__FMA__)) || defined(__ARM_NEON) || \
    defined(__SSE2__)
template <int R, int P, typename T>
void tile(const float* x, int64_t ldx, const T* w, int64_t ws, int64_t kc, float* c, int64_t ldc, int64_t cs,
          const float* start) {
    constexpr int L = int(sizeof(Vec) / sizeof(float)), NV = NR / L;
    Vec acc[R][P][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < P; q++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                acc[r][q][v] = vload(start ? start + q * NR + L * v : c + q * cs + r * ldc + L * v);
    // Fully unrolled over rows and vectors so the accumulators live in registers (3x faster than leaving it to
    // the compiler, measured).
#pragma GCC unroll 2
    for (int64_t k = 0; k < kc; k++) {
        Vec wv[P][NV];
#pragma GCC unroll 4
        for (int q = 0; q < P; q++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) wv[q][v] = vload(w + q * ws + k * NR + L * v);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            const Vec xb = vbroadcast(x + r * ldx + k);
#pragma GCC unroll 4
            for (int q = 0; q < P; q++)
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) acc[r][q][v] = vfma(xb, wv[q][v], acc[r][q][v]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < P; q++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) vstore(c + q * cs + r * ldc + L * v, acc[r][q][v]);
}
constexpr bool VECTOR = true;
#else
constexpr int MR = 4, PW = 1;  // portable fallback (never chosen by gemm_wanted; kept so the file builds anywhere)
constexpr int64_t KC = 256, MC = 96;
inline float wval(float v) { return v; }
inline float wval(ggml_fp16_t v) { return ggml_fp16_to_fp32(v); }
template <int R, int P, typename T>
void tile(const float* x, int64_t ldx, const T* w, int64_t ws, int64_t kc, float* c, int64_t ldc, int64_t cs,
          const float* start) {
    float acc[R][NR];
    for (int r = 0; r < R; r++)
        for (int j = 0; j < NR; j++) acc[r][j] = start ? start[j] : c[r * ldc + j];
    for (int64_t k = 0; k < kc; k++)
        for (int r = 0; r < R; r++)
            for (int j = 0; j < NR; j++) acc[r][j] += x[r * ldx + k] * wval(w[k * NR + j]);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < NR; j++) c[r * ldc + j] = acc[r][j];
}
constexpr bool VECTOR = false;
#endif

// A tile whose last panel has only nv < 16 real columns, or whose C is stored transposed (tr: C[r, j] at
// c[j * ldc + r]), goes through a 16 P-wide buffer; cs: C's stride between 16-column blocks when not.
template <int R, int P, typename T>
void tile_cols(const float* x, int64_t ldx, const T* w, int64_t ws, int64_t kc, float* c, int64_t ldc,
               int64_t cs, int nv, const float* start, bool tr, const ConvClamp* clamp) {
    if (nv == NR && !tr) return tile<R, P, T>(x, ldx, w, ws, kc, c, ldc, cs, start);
    constexpr int W = P * NR;
    alignas(64) float t[R][W] = {};
    const int n = (P - 1) * NR + nv;  // real columns
    auto at = [&](int r, int j) -> float& { return tr ? c[j * ldc + r] : c[j / NR * cs + r * ldc + j % NR]; };
    if (!start)
        for (int r = 0; r < R; r++)
            for (int j = 0; j < n; j++) t[r][j] = at(r, j);
    tile<R, P, T>(x, ldx, w, ws, kc, &t[0][0], W, NR, start);
    if (clamp) clamp->apply(&t[0][0], R * W);  // given on the last block of the shared dim only
    for (int r = 0; r < R; r++)
        for (int j = 0; j < n; j++) at(r, j) = t[r][j];
}

template <typename T>
using TileFn = void (*)(const float*, int64_t, const T*, int64_t, int64_t, float*, int64_t, int64_t, int,
                        const float*, bool, const ConvClamp*);
template <int P, typename T, int... I>
constexpr std::array<TileFn<T>, sizeof...(I)> tile_table(std::integer_sequence<int, I...>) {
    return {&tile_cols<I + 1, P, T>...};
}
// TILES<T>[P - 1][R - 1]: R rows, P panels (P = PW, or 1 for a last odd panel), panels of element type T.
template <typename T>
const std::array<TileFn<T>, MR> TILES[2] = {tile_table<1, T>(std::make_integer_sequence<int, MR>{}),
                                            tile_table<PW, T>(std::make_integer_sequence<int, MR>{})};

// Rows [0, rows) of P panels (P <= PW) at w (stride ws), C blocks at c (stride cs); nv: the last panel's columns.
inline void panel_rows(const float* x, int64_t ldx, const float* w, int64_t ws, int64_t kc, float* c, int64_t ldc,
                       int64_t cs, int64_t rows, int P, int nv, const float* start, bool tr, const ConvClamp* clamp,
                       bool prefetch = false) {
    for (int64_t r0 = 0; r0 < rows; r0 += MR) {
        const int R = int(std::min<int64_t>(MR, rows - r0));
        if (prefetch)  // the next tile's rows of X, while this one computes
            for (int64_t r = r0 + MR; r < std::min(rows, r0 + 2 * MR); r++)
                for (int64_t k = 0; k < kc; k += 16) __builtin_prefetch(x + r * ldx + k, 0, 3);
        TILES<float>[P - 1][size_t(R - 1)](x + r0 * ldx, ldx, w, ws, kc, tr ? c + r0 : c + r0 * ldc, ldc, cs, nv, start,
                                    tr, clamp);
    }
}

// A transposed product (C[r, j] at c[j * ldc + r]) over several K blocks accumulates its R x 16 PW tile in `acc`
// (normal layout) and writes it transposed once, after the last block (`last`): gathering C back through the
// tile's buffer on every block cost 10-15 % of the UNet's 8x8 im2col products (30 blocks of K).
template <typename T>
void tile_staged(TileFn<T> fn, const float* x, int64_t ldx, const T* wp, int64_t ws, int64_t kc, float* acc, int R,
                 const float* start, bool last, float* c, int64_t ldc, int cols, const ConvClamp* clamp) {
    constexpr int W = PW * NR;
    fn(x, ldx, wp, ws, kc, acc, W, NR, NR, start, false, nullptr);  // zero-padded columns: computed, never read
    if (!last) return;
    if (clamp) clamp->apply(acc, R * W);
    for (int j = 0; j < cols; j++)
        for (int r = 0; r < R; r++) c[j * ldc + r] = acc[r * W + j];
}

// dst [N, M...] = src[0] [K, M...] x panels src[1] [16, K, NP] of T (+ src[2] [N]); with p.B > 1, B such products.
template <typename T>
void gemm_run(ggml_tensor* dst, int ith, int nth, const Params& p) {
    const float* x0 = static_cast<const float*>(dst->src[0]->data);
    const T* w0 = static_cast<const T*>(dst->src[1]->data);
    const float* bias = dst->src[2] ? static_cast<const float*>(dst->src[2]->data) : nullptr;
    float* y0 = static_cast<float*>(dst->data);
    const int64_t K = p.K, N = p.N, NP = p.NP, M = p.transposed ? dst->ne[0] : ggml_nrows(dst) / p.B, MB = (M + MC - 1) / MC;
    // Row blocks of equal size (a multiple of MR): threads split the items by count, and with one short block
    // (M = 128: 96 + 32 rows) one thread had three times the other's work.
    const int64_t mc = ((M + MB - 1) / MB + MR - 1) / MR * MR;
    const ConvClamp* clamp = p.act.active() ? &p.act : nullptr;
    const float* res0 = p.residual ? static_cast<const float*>(dst->src[3]->data) : nullptr;
    const bool epi = p.residual || p.swish != 0;
    const int64_t G = (NP + PW - 1) / PW;  // groups of PW panels, one register tile wide
    const WorkSpan s = work_span(p.B * MB * G, ith, nth);
    for (int64_t q = s.b / G; q < p.B * MB && q * G < s.e; q++) {  // q: (product, row block)
        const int64_t g0 = std::max(s.b, q * G) - q * G, g1 = std::min(s.e, (q + 1) * G) - q * G;
        const int64_t b = q / MB, mb = q % MB, m0 = std::min(M, mb * mc), m1 = std::min(M, m0 + mc);
        const float* x = x0 + b * M * K;
        const T* w = p.shared ? w0 : w0 + b * NP * K * NR;
        float* y = y0 + b * M * N;
        thread_local std::vector<float> stage;  // tile_staged's tiles: [group][row][16 PW]
        const bool staged = p.transposed && K > KC;
        if (staged) stage.resize(size_t((g1 - g0) * mc * PW * NR));
        for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += KC) {
            const int64_t kc = std::min(KC, K - k0);
            for (int64_t g = g0; g < g1; g++) {
                const int64_t pi = g * PW, n0 = pi * NR, cols = std::min<int64_t>(PW * NR, N - n0);
                const int np = int(std::min<int64_t>(PW, NP - pi)), nv = int(cols - (np - 1) * NR);
                alignas(64) float start[PW * NR] = {};
                if (bias) std::copy(bias + n0, bias + n0 + cols, start);
                const T* wp = w + (pi * K + k0) * NR;
                // The weight streams from memory once per run (the text encoder's 492 MB): each tile asks for its
                // share of the slice this thread multiplies next, so the slice is in cache when its tiles start.
                int64_t next_p = 0, next_k = 0, next_kc = 0, next_np = 0;
                if (g + 1 < g1) next_p = pi + PW, next_k = k0, next_kc = kc;
                else if (k0 + KC < K) next_p = g0 * PW, next_k = k0 + KC, next_kc = std::min(KC, K - k0 - KC);
                if (next_kc) next_np = std::min<int64_t>(PW, NP - next_p);
                const int64_t next_len = next_np * next_kc * NR, tiles = (m1 - m0 + MR - 1) / MR;
                const int64_t share = (next_len + tiles * 16 - 1) / (tiles * 16) * 16;
                int64_t pf = 0;
                for (int64_t r0 = m0; r0 < m1; r0 += MR) {
                    const int R = int(std::min<int64_t>(MR, m1 - r0));
                    for (const int64_t e = std::min(next_len, pf + share); pf < e; pf += 16)
                        __builtin_prefetch(w + ((next_p + pf / (next_kc * NR)) * K + next_k) * NR + pf % (next_kc * NR),
                                           0, 2);
                    const TileFn<T> fn = TILES<T>[np - 1][size_t(R - 1)];
                    if (staged)
                        tile_staged(fn, x + r0 * K + k0, K, wp, K * NR, kc,
                                    &stage[size_t(((g - g0) * mc + r0 - m0) * PW * NR)], R, k0 == 0 ? start : nullptr,
                                    k0 + kc >= K, y + n0 * M + r0, M, int(cols), clamp);
                    else if (p.transposed)
                        fn(x + r0 * K + k0, K, wp, K * NR, kc, y + n0 * M + r0, M, NR, nv, k0 == 0 ? start : nullptr,
                           true, k0 + kc >= K ? clamp : nullptr);
                    else {
                        fn(x + r0 * K + k0, K, wp, K * NR, kc, y + r0 * N + n0, N, NR, nv, k0 == 0 ? start : nullptr,
                           false, nullptr);
                        if (epi && k0 + kc >= K)
                            epilogue(y + r0 * N + n0, N, R, int(cols),
                                     res0 ? res0 + b * M * N + r0 * N + n0 : nullptr, p.swish);
                    }
                }
            }
        }
    }
}

void gemm_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const Params& p = *static_cast<const Params*>(ud);
    if (dst->src[1]->type == GGML_TYPE_F16) gemm_run<ggml_fp16_t>(dst, ith, nth, p);
    else gemm_run<float>(dst, ith, nth, p);
}

// src: W in ggml order, ONNX [K, N] (src[k * N + n]) or, when nk, ONNX [N, K] (src[n * K + k]). Loops run along
// the source rows.
void pack(const float* src, float* dst, int64_t K, int64_t N, bool nk) {
    const int64_t NP = (N + NR - 1) / NR;
    for (int64_t pi = 0; pi < NP; pi++) {
        float* d = dst + pi * K * NR;
        const int nv = int(std::min<int64_t>(NR, N - pi * NR));
        if (nk) {
            for (int j = 0; j < NR; j++)
                for (int64_t k = 0; k < K; k++) d[k * NR + j] = j < nv ? src[(pi * NR + j) * K + k] : 0.f;
        } else {
            for (int64_t k = 0; k < K; k++)
                for (int j = 0; j < NR; j++) d[k * NR + j] = j < nv ? src[k * N + pi * NR + j] : 0.f;
        }
    }
}

}  // namespace

bool gemm_available() { return VECTOR; }

GemmTile gemm_tile() { return {MR, PW}; }

bool gemm_panel_rows(const float* x, int64_t ldx, const float* panel, int64_t ps, int64_t panels, int64_t kc,
                     float* c, int64_t ldc, int64_t cs, int64_t rows, int nv, bool first) {
    static_assert(GEMM_PANEL == NR, "one panel width");
    if (!VECTOR) return false;
    alignas(64) static const float zero[PW * NR] = {};
    for (int64_t p0 = 0; p0 < panels; p0 += PW) {
        const int np = int(std::min<int64_t>(PW, panels - p0));
        panel_rows(x, ldx, panel + p0 * ps, ps, kc, c + p0 * cs, ldc, cs, rows, np, p0 + np < panels ? NR : nv,
                   first ? zero : nullptr, false, nullptr, p0 == 0);
    }
    return true;
}

bool gemm_wanted(int64_t M, int64_t K, int64_t N) {
    static const int forced = [] {
        const char* e = getenv("ONNX2GGML_GEMM");
        return e ? atoi(e) : -1;
    }();
    if (!VECTOR || forced == 0 || M < 1 || K < 1 || N < 1) return false;
    if (forced == 1) return true;
    // 1.3-1.7x ggml single-threaded for M >= 8 at every K, N measured, even at M = 2. Every M takes it, so that a
    // weight has one packed form whatever the shape, made once when the session opens.
    return true;
}

namespace {
ggml_tensor* panels(Ctx& ctx, ggml_tensor* w, int64_t K, int64_t N, bool w_nk, const char* kind) {
    const int64_t ne[4] = {NR, K, (N + NR - 1) / NR, 1};
    return ctx.weights->derived(w, kind, panel_weight_type(ctx, w), ne,
                                [=](const float* src, float* dst) { pack(src, dst, K, N, w_nk); });
}

ggml_tensor* gemm_packed(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, int64_t K, int64_t N, bool w_nk, const char* kind,
                         ggml_tensor* bias, bool transposed = false, ConvClamp act = {}, const GemmEpilogue& ep = {}) {
    const int64_t NP = (N + NR - 1) / NR;
    ggml_tensor* wp = panels(ctx, w, K, N, w_nk, kind);
    x = cont(ctx, x);
    ggml_tensor* args[4] = {x, wp, bias, ep.residual};
    ggml_tensor* y;
    if (transposed) {  // [M, N, b2] per b2, written in place of a transpose pass
        if (x->ne[3] != 1) throw OpError("gemm: a transposed product of a 4-D operand");
        y = ggml_custom_4d(ctx, GGML_TYPE_F32, x->ne[1], N, x->ne[2], 1, args, bias ? 3 : 2, gemm_kernel,
                           GGML_N_TASKS_MAX, keep_params(Params{K, N, NP, x->ne[2], true, true, act}));
    } else {
        if (ep.residual && (ep.residual->type != GGML_TYPE_F32 || !ggml_is_contiguous(ep.residual) ||
                            ep.residual->ne[0] != N || ep.residual->ne[1] != x->ne[1] ||
                            ep.residual->ne[2] != x->ne[2] || ep.residual->ne[3] != x->ne[3]))
            throw OpError("gemm: the residual is not a contiguous F32 of the product's shape");
        y = ggml_custom_4d(ctx, GGML_TYPE_F32, N, x->ne[1], x->ne[2], x->ne[3], args, ep.residual ? 4 : bias ? 3 : 2,
                           gemm_kernel, GGML_N_TASKS_MAX,
                           keep_params(Params{K, N, NP, 1, false, false, {}, ep.swish, ep.residual != nullptr}));
    }
    ctx.label(y, "gemm");
    return y;
}
}  // namespace

ggml_tensor* gemm_const(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, bool w_nk, ggml_tensor* bias,
                        const GemmEpilogue& ep) {
    const int64_t K = w_nk ? w->ne[0] : w->ne[1], N = w_nk ? w->ne[1] : w->ne[0];
    return gemm_packed(ctx, x, w, K, N, w_nk, w_nk ? "gemm16t" : "gemm16", bias, false, {}, ep);
}

ggml_tensor* gemm_const_rows(Ctx& ctx, ggml_tensor* x, ggml_tensor* w, int64_t N, ggml_tensor* bias,
                             bool transposed, ConvClamp act) {
    if (!transposed && act.active()) throw OpError("gemm: a clamp needs transposed");
    return gemm_packed(ctx, x, w, ggml_nelements(w) / N, N, true, "gemm16rows", bias, transposed, act);
}

ggml_tensor* gemm_row_panels(Ctx& ctx, ggml_tensor* w, int64_t N) {
    return panels(ctx, w, ggml_nelements(w) / N, N, true, "gemm16rows");  // gemm_const_rows' key: one copy
}

ggml_tensor* gemm_batched(Ctx& ctx, ggml_tensor* x, ggml_tensor* panels, int64_t N, bool transposed) {
    const int64_t K = x->ne[0], B = x->ne[2];
    x = cont(ctx, x);
    ggml_tensor* args[2] = {x, panels};
    ggml_tensor* y = ggml_custom_4d(ctx, GGML_TYPE_F32, transposed ? x->ne[1] : N, transposed ? N : x->ne[1], B, 1,
                                    args, 2, gemm_kernel, GGML_N_TASKS_MAX,
                                    keep_params(Params{K, N, (N + NR - 1) / NR, B, transposed, false, {}}));
    ctx.label(y, "gemm");
    return y;
}

O2G_ISA_END
}  // namespace o2g
