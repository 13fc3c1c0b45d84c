// CPU kernel of RNN, GRU and LSTM (see kernels/recurrent.h).
#include "kernels/recurrent.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace o2g {

namespace {

float act(const ActFn& f, float x) {
    switch (f.k) {
        case kActSigmoid: return 1.0f / (1.0f + std::exp(-x));
        case kActTanh: return std::tanh(x);
        case kActRelu: return std::max(0.0f, x);
        case kActAffine: return f.a * x + f.b;
        case kActLeakyRelu: return x >= 0 ? x : f.a * x;
        case kActThresholdedRelu: return x >= f.a ? x : 0.0f;
        case kActScaledTanh: return f.a * std::tanh(f.b * x);
        case kActHardSigmoid: return std::min(std::max(f.a * x + f.b, 0.0f), 1.0f);
        case kActElu: return x >= 0 ? x : f.a * (std::exp(x) - 1.0f);
        case kActSoftsign: return x / (1.0f + std::fabs(x));
        case kActSoftplus: return std::log1p(std::exp(x));
    }
    return x;
}

}  // namespace

// Long: one time step of RNN, GRU and LSTM cells over shared gate buffers, in order.
void recurrent_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const RecurrentKernelParams& p = *static_cast<const RecurrentKernelParams*>(ud);
    const int64_t S = p.S, B = p.B, H = p.H, D = p.D, GH = p.G * H;
    auto src = [&](int i) { return i >= 0 ? static_cast<const float*>(dst->src[i]->data) : nullptr; };
    const float* xw = src(0);  // [D][rows][GH], rows = s*B+b (layout 0) or b*S+s (layout 1)
    const float *R = src(p.i_r), *Bi = src(p.i_b), *h0 = src(p.i_h0), *c0 = src(p.i_c0), *P = src(p.i_p);
    const ggml_tensor* lt = p.i_len >= 0 ? dst->src[p.i_len] : nullptr;
    float* Y = static_cast<float*>(dst->data);
    std::vector<float> h(static_cast<size_t>(H)), c(static_cast<size_t>(H)), g(static_cast<size_t>(GH)),
        rh(static_cast<size_t>(H)), tmp(static_cast<size_t>(H));
    auto clip = [&](float v) { return p.clip > 0 ? std::min(std::max(v, -p.clip), p.clip) : v; };
    for (int64_t item = ith; item < D * B; item += nth) {
        int64_t d = item / B, b = item % B;
        bool rev = p.reverse_only || d == 1;
        int64_t len = S;
        if (lt) len = lt->type == GGML_TYPE_I32 ? int64_t(static_cast<const int32_t*>(lt->data)[b])
                                                : int64_t(static_cast<const float*>(lt->data)[b]);
        len = std::min(std::max<int64_t>(len, 0), S);
        // initial state index [d][b] (layout 0) or [b][d] (layout 1)
        int64_t st = p.layout1 ? (b * D + d) * H : (d * B + b) * H;
        for (int64_t k = 0; k < H; k++) {
            h[size_t(k)] = h0 ? h0[st + k] : 0.f;
            c[size_t(k)] = c0 ? c0[st + k] : 0.f;
        }
        const float* Rd = R + d * GH * H;
        const float* Wb = Bi ? Bi + d * 2 * GH : nullptr;
        const float* Rb = Bi ? Wb + GH : nullptr;
        const float* Pd = P ? P + d * 3 * H : nullptr;
        const ActFn* f = p.f[d];
        // step s of Y; Y_h and Y_c follow as steps S and S+1
        auto yat = [&](int64_t s) {
            return Y + (p.layout1 ? ((b * (S + 2) + s) * D + d) * H : ((s * D + d) * B + b) * H);
        };
        for (int64_t s = len; s < S; s++) std::fill(yat(s), yat(s) + H, 0.f);
        for (int64_t step = 0; step < len; step++) {
            int64_t s = rev ? len - 1 - step : step;
            const float* x = xw + (d * S * B + (p.layout1 ? b * S + s : s * B + b)) * GH;
            for (int64_t j = 0; j < GH; j++) {
                float v = x[j] + (Wb ? Wb[j] : 0.f);
                bool gru_h = p.cell == Cell::GRU && j >= 2 * H;  // GRU's hidden gate handles R itself
                if (!gru_h) {
                    const float* r = Rd + j * H;
                    float acc = 0;
                    for (int64_t k = 0; k < H; k++) acc += r[k] * h[size_t(k)];
                    v += acc + (Rb ? Rb[j] : 0.f);
                }
                g[size_t(j)] = v;
            }
            if (p.cell == Cell::RNN) {
                for (int64_t k = 0; k < H; k++) h[size_t(k)] = act(f[0], clip(g[size_t(k)]));
            } else if (p.cell == Cell::GRU) {
                float *z = g.data(), *r = g.data() + H, *hh = g.data() + 2 * H;
                for (int64_t k = 0; k < H; k++) {
                    z[k] = act(f[0], clip(z[k]));
                    r[k] = act(f[0], clip(r[k]));
                }
                const float* Rh = Rd + 2 * H * H;
                for (int64_t j = 0; j < H; j++) {
                    float acc = 0;
                    if (p.lbr) {
                        for (int64_t k = 0; k < H; k++) acc += Rh[j * H + k] * h[size_t(k)];
                        acc = r[j] * (acc + (Rb ? Rb[2 * H + j] : 0.f));
                    } else {
                        for (int64_t k = 0; k < H; k++) acc += Rh[j * H + k] * r[k] * h[size_t(k)];
                        acc += Rb ? Rb[2 * H + j] : 0.f;
                    }
                    tmp[size_t(j)] = act(f[1], clip(hh[j] + acc));
                }
                for (int64_t k = 0; k < H; k++) h[size_t(k)] = (1 - z[k]) * tmp[size_t(k)] + z[k] * h[size_t(k)];
            } else {  // LSTM, gates i o f c
                float *gi = g.data(), *go = g.data() + H, *gf = g.data() + 2 * H, *gc = g.data() + 3 * H;
                for (int64_t k = 0; k < H; k++) {
                    float ci = c[size_t(k)];
                    float i = act(f[0], clip(gi[k] + (Pd ? Pd[k] * ci : 0.f)));
                    float fg = p.input_forget ? 1.0f - i : act(f[0], clip(gf[k] + (Pd ? Pd[2 * H + k] * ci : 0.f)));
                    float cc = act(f[1], clip(gc[k]));
                    float C = fg * ci + i * cc;
                    float o = act(f[0], clip(go[k] + (Pd ? Pd[H + k] * C : 0.f)));
                    c[size_t(k)] = C;
                    h[size_t(k)] = o * act(f[2], C);
                }
            }
            std::copy(h.begin(), h.end(), yat(s));
        }
        std::copy(h.begin(), h.end(), yat(S));
        std::copy(c.begin(), c.end(), yat(S + 1));
    }
}

}  // namespace o2g
