// Fused attention CPU kernel (onnx2ggml.Attention from fuse_attention): scores, softmax and P V per block of
// queries without writing the score matrix.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "kernels/isa.h"
#include "kernels/attention.h"
#include "kernels/custom.h"
#include "kernels/vexp.h"

namespace o2g {
O2G_ISA_BEGIN

namespace {

// The vector helpers below are internal to this file, so the ABI note GCC gives without AVX-512 does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
// Vector width and register tiles per ISA, so that accumulators + operands fit the register file: AVX-512 has
// 32 16-float registers; AVX2 (and SSE/NEON) builds use 8-float vectors (one ymm) and tiles for 16 registers.
// O2G_WIDE16 selects the AVX-512 tiles with generic vectors, so that configuration is tested on AVX2 machines.
#if defined(__AVX512F__) || defined(O2G_WIDE16)
constexpr int W = 16;           // floats per vector
constexpr int64_t R = 8;        // queries per block (score rows)
constexpr int SR = 8, SJ = 1;   // score tile: SR rows x SJ vectors of keys (8 accumulators)
constexpr int PR = 4, PJ = 4;   // P V tile: PR rows x PJ vectors of value columns (16 accumulators)
#else
constexpr int W = 8;
constexpr int64_t R = 8;
constexpr int SR = 4, SJ = 2;   // 8 accumulators + 2 key vectors + 1 broadcast
constexpr int PR = 4, PJ = 3;   // 12 accumulators + 3 value vectors + 1 broadcast
#endif
constexpr int64_t KS = W * SJ;  // keys per score step; S is padded to a multiple of 16 (= KS on both ISAs)
static_assert(16 % KS == 0 && R % SR == 0, "score tile must divide the padding and the query block");
// W floats as one vector (GCC/Clang vector extension).
typedef float vf __attribute__((vector_size(4 * W), aligned(4)));
typedef int32_t vi __attribute__((vector_size(4 * W), aligned(4)));
#if !defined(__AVX512F__) && !defined(O2G_WIDE16) && defined(__AVX__)
// GCC expands a 32-byte memcpy as two 16-byte moves through the stack (znver tuning), and the 32-byte reload
// then misses store forwarding: that alone made the AVX2 kernel several times slower. Plain unaligned loads.
inline vf loadv(const float* p) { return (vf)_mm256_loadu_ps(p); }
inline void storev(float* p, vf v) { _mm256_storeu_ps(p, (__m256)v); }
#else
inline vf loadv(const float* p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void storev(float* p, vf v) { std::memcpy(p, &v, sizeof v); }
#endif

// exp(x) for x <= 0 (softmax after subtracting the row max), W at a time.
inline vf expv(vf x) { return exp_nonpos<vf, vi>(x); }

struct AttnParams {
    float scale;
    bool zero_masked_rows;
};

// O rows r0..r0+NR of P V over value columns c0..c0+W*NJ (P rows in sc with stride Sp, V panel with stride Dvp).
template <int NR, int NJ>
void pv_block(const float* sc, int64_t Sp, const float* vp, int64_t Dvp, int64_t S, int64_t c0, vf (&out)[PR][PJ]) {
    vf acc[NR][NJ] = {};
    for (int64_t s = 0; s < S; s++) {
        vf v[NJ];
        for (int j = 0; j < NJ; j++) v[j] = loadv(vp + s * Dvp + c0 + W * j);
        for (int r = 0; r < NR; r++) {
            const float p = sc[r * Sp + s];
            for (int j = 0; j < NJ; j++) acc[r][j] += p * v[j];
        }
    }
    for (int r = 0; r < NR; r++)
        for (int j = 0; j < NJ; j++) out[r][j] = acc[r][j];
}

template <int NR>
void pv(const float* sc, int64_t Sp, const float* vp, int64_t Dvp, int64_t S, int64_t c0, int nj, vf (&out)[PR][PJ]) {
    static_assert(PJ <= 4, "");
    switch (nj) {
        case 4: if constexpr (PJ >= 4) return pv_block<NR, 4>(sc, Sp, vp, Dvp, S, c0, out); [[fallthrough]];
        case 3: if constexpr (PJ >= 3) return pv_block<NR, 3>(sc, Sp, vp, Dvp, S, c0, out); [[fallthrough]];
        case 2: return pv_block<NR, 2>(sc, Sp, vp, Dvp, S, c0, out);
        default: return pv_block<NR, 1>(sc, Sp, vp, Dvp, S, c0, out);
    }
}

// Fused attention for the CPU. Q [B,T,H,D], K [B,S,H,D], V [B,S,H,Dv] (ggml [D,H,T,B] ...) -> O [B,H,T,Dv].
// Each work item is one (batch, head, block of 64 queries): K^T and V are copied once into 16-padded local
// panels (K^T as [S/16][D][16]: one key block's D x 16 values are contiguous, not Sp apart, which on AVX2 made
// the score loop 1.3x faster), then per R queries the scores (broadcast-FMA, so a 40-wide head runs at full
// speed where ggml's dot-product sgemm does not), the softmax and P V stay in cache; the T x S score matrix is
// never written out.
// Long: one thread's pass keeps its panels, running max and sums in locals the inner loops share.
void attention_compute(ggml_tensor* dst, int ith, int nth, void* ud) {
    const float scale = static_cast<const AttnParams*>(ud)->scale;
    const bool zero_rows = static_cast<const AttnParams*>(ud)->zero_masked_rows;
    const ggml_tensor *qt = dst->src[0], *kt = dst->src[1], *vt = dst->src[2], *mt = dst->src[3];
    const int64_t D = qt->ne[0], H = qt->ne[1], T = qt->ne[2], B = qt->ne[3];
    const int64_t S = kt->ne[2], Dv = vt->ne[0];
    const int64_t Sp = (S + 15) / 16 * 16, Dvp = (Dv + 15) / 16 * 16;
    constexpr int64_t QB = 64;
    const int64_t nqb = (T + QB - 1) / QB, items = B * H * nqb, per = (items + nth - 1) / nth;
    const int64_t i0 = std::min(items, per * ith), i1 = std::min(items, i0 + per);
    std::vector<float> kT(size_t(D * Sp)), vp(size_t(S * Dvp)), sc(size_t(R * Sp));
    int64_t cached = -1;  // (b, h) whose panels are loaded
    const float* Q = static_cast<const float*>(qt->data);
    const float* K = static_cast<const float*>(kt->data);
    const float* V = static_cast<const float*>(vt->data);
    float* O = static_cast<float*>(dst->data);
    for (int64_t it = i0; it < i1; it++) {
        const int64_t qb = it % nqb, bh = it / nqb, h = bh % H, b = bh / H;
        if (bh != cached) {
            std::fill(kT.begin(), kT.end(), 0.f);
            std::fill(vp.begin(), vp.end(), 0.f);
            for (int64_t s = 0; s < S; s++) {
                const float* kr = K + ((b * S + s) * H + h) * D;
                for (int64_t d = 0; d < D; d++) kT[size_t((s / 16 * D + d) * 16 + s % 16)] = kr[d];
                std::memcpy(&vp[size_t(s * Dvp)], V + ((b * S + s) * H + h) * Dv, sizeof(float) * size_t(Dv));
            }
            cached = bh;
        }
        for (int64_t t0 = qb * QB; t0 < std::min(T, qb * QB + QB); t0 += R) {
            const int64_t nr = std::min(R, T - t0);
            const float* qrow[R];
            for (int64_t r = 0; r < R; r++) qrow[r] = Q + ((b * T + t0 + std::min(r, nr - 1)) * H + h) * D;
            // Keys past the last one a row's mask leaves open get probability exactly 0 (exp below -87 is 0), so
            // the scores, softmax and P V stop there: a causal mask (the text encoder's) halves the work. Masked
            // means -inf or the dtype's minimum (what exporters write); a row masked everywhere keeps all its keys,
            // or with zero_rows none (its probabilities, then its output, are 0).
            int64_t end[R], emax = 0;
            const float* mrow[R] = {};
            for (int64_t r = 0; r < nr; r++) {
                end[r] = S;
                if (mt) {
                    const int64_t mT = mt->ne[1], mH = mt->ne[2], mB = mt->ne[3];
                    mrow[r] = static_cast<const float*>(mt->data) +
                              (((mB == 1 ? 0 : b) * mH + (mH == 1 ? 0 : h)) * mT + (mT == 1 ? 0 : t0 + r)) * S;
                    int64_t e = S;
                    while (e > 0 && mrow[r][e - 1] <= -1e30f) e--;
                    if (e > 0 || zero_rows) end[r] = e;
                }
                emax = std::max(emax, end[r]);
            }
            // scores = scale * Q K^T: SR rows x KS keys per step, one broadcast FMA per row and key vector
            for (int64_t rg = 0; rg < nr; rg += SR) {
                int64_t ge = 0;
                for (int64_t r = rg; r < std::min(nr, rg + SR); r++) ge = std::max(ge, end[r]);
                for (int64_t s0 = 0; s0 < ge; s0 += KS) {
                    const float* kb = &kT[size_t(s0 / 16 * D * 16 + s0 % 16)];
                    vf acc[SR][SJ] = {};
                    for (int64_t d = 0; d < D; d++) {
                        vf kv[SJ];
                        for (int j = 0; j < SJ; j++) kv[j] = loadv(kb + d * 16 + W * j);
                        for (int r = 0; r < SR; r++) {
                            const float q = qrow[rg + r][d];
                            for (int j = 0; j < SJ; j++) acc[r][j] += q * kv[j];
                        }
                    }
                    for (int r = 0; r < SR; r++)
                        for (int j = 0; j < SJ; j++) storev(&sc[size_t((rg + r) * Sp + s0 + W * j)], acc[r][j] * scale);
                }
            }
            // softmax over each row's first end[r] keys (the additive mask added first); the rest, up to emax
            // (what P V reads), are 0
            for (int64_t r = 0; r < nr; r++) {
                float* row = &sc[size_t(r * Sp)];
                const int64_t E = end[r], EW = (E + W - 1) / W * W;
                if (mrow[r])
                    for (int64_t s = 0; s < E; s++) row[s] += mrow[r][s];
                for (int64_t s = E; s < EW; s++) row[s] = -INFINITY;
                vf m = loadv(row);
                for (int64_t s0 = W; s0 < EW; s0 += W) {
                    const vf x = loadv(row + s0);
                    m = x > m ? x : m;
                }
                float mx = m[0];
                for (int l = 1; l < W; l++) mx = std::max(mx, m[l]);
                vf sum = {};
                for (int64_t s0 = 0; s0 < EW; s0 += W) {
                    const vf e = expv(loadv(row + s0) - mx);
                    storev(row + s0, e);
                    sum += e;
                }
                double total = 0;
                for (int l = 0; l < W; l++) total += double(sum[l]);
                const float inv = float(1.0 / total);
                for (int64_t s0 = 0; s0 < EW; s0 += W) storev(row + s0, loadv(row + s0) * inv);
                for (int64_t s = EW; s < emax; s++) row[s] = 0.f;
            }
            // O = P V, PR rows x W*PJ value columns per pass
            for (int64_t r0 = 0; r0 < nr; r0 += PR) {
                const int64_t rn = std::min<int64_t>(PR, nr - r0);
                for (int64_t c0 = 0; c0 < Dvp; c0 += W * PJ) {
                    const int nj = int(std::min<int64_t>(W * PJ, Dvp - c0) / W);
                    alignas(64) vf out[PR][PJ];  // clang-14 moved whole vectors in and out with aligned moves (a fuzzer SEGV)
                    const float* p = &sc[size_t(r0 * Sp)];
                    if (rn == 4) pv<4>(p, Sp, vp.data(), Dvp, emax, c0, nj, out);
                    else if (rn == 3) pv<3>(p, Sp, vp.data(), Dvp, emax, c0, nj, out);
                    else if (rn == 2) pv<2>(p, Sp, vp.data(), Dvp, emax, c0, nj, out);
                    else pv<1>(p, Sp, vp.data(), Dvp, emax, c0, nj, out);
                    for (int64_t r = 0; r < rn; r++) {
                        float* orow = O + ((b * H + h) * T + t0 + r0 + r) * Dv;
                        for (int j = 0; j < nj; j++)
                            for (int l = 0; l < W && c0 + W * j + l < Dv; l++) orow[c0 + W * j + l] = out[r][j][l];
                    }
                }
            }
        }
    }
}

}  // namespace

ggml_tensor* attention_kernel(Ctx& ctx, ggml_tensor* q, ggml_tensor* k, ggml_tensor* v, float scale,
                              ggml_tensor* mask, bool zero_masked_rows) {
    ggml_tensor* args[4] = {q, k, v, mask};
    ggml_tensor* o = ggml_custom_4d(ctx, GGML_TYPE_F32, v->ne[0], q->ne[2], q->ne[1], q->ne[3], args, mask ? 4 : 3,
                                    attention_compute, GGML_N_TASKS_MAX,
                                    keep_params(AttnParams{scale, zero_masked_rows}));
    ctx.label(o, "attention");
    return o;
}

O2G_ISA_END
}  // namespace o2g
