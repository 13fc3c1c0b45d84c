// CPU kernels of the signal ops (see kernels/signal.h).
#include "kernels/signal.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/custom.h"

namespace o2g {

void dft_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const DftKernelParams& p = *static_cast<const DftKernelParams*>(ud);
    const float* x = static_cast<const float*>(dst->src[0]->data);
    float* y = static_cast<float*>(dst->data);
    WorkSpan s = work_span(p.outer * p.inner, ith, nth);
    const double two_pi = 2.0 * M_PI;
    // The terms that can be non-zero: the input's A values (and, for irfft, their mirror images); a dft_length
    // past A pads with zeros, which the sums skip (a fuzzed dft_length of 20000 on 8 values took seconds), and only
    // these terms' values are kept (16 M-bin vectors per element took most of a fuzzed run's time under ASan).
    const bool irfft = p.inverse && p.onesided;
    const int64_t nb = p.n / 2 + 1;
    std::vector<int64_t> terms;
    for (int64_t t = 0; t < std::min(p.A, irfft ? nb : p.n); t++) terms.push_back(t);
    if (irfft)
        for (int64_t t = std::max(nb, p.n - p.A + 1); t < p.n; t++) terms.push_back(t);
    std::vector<double> re(terms.size()), im(terms.size());
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t o = e / p.inner, in = e % p.inner;
        auto xin = [&](int64_t a, int comp) -> double {
            if (a >= p.A) return 0.0;
            if (comp >= p.cin) return 0.0;
            return x[((o * p.A + a) * p.inner + in) * p.cin + comp];
        };
        for (size_t j = 0; j < terms.size(); j++) {
            const int64_t t = terms[j];
            if (irfft && t >= nb) {  // irfft: Hermitian extension of the first n/2+1 bins
                re[j] = xin(p.n - t, 0);
                im[j] = -xin(p.n - t, 1);
            } else {
                re[j] = xin(t, 0);
                im[j] = irfft && (t == 0 || (p.n % 2 == 0 && t == p.n / 2)) ? 0.0 : xin(t, 1);
            }
        }
        const double sign = p.inverse ? 1.0 : -1.0;
        // Each term's twiddle for bin k+1 is its twiddle for bin k turned by its step angle; computed exactly
        // (cos, sin) every STEP bins, so the rotations add at most STEP roundings (a fuzzed 16 M-bin DFT of 8
        // values took 2.9 s with two trig calls per term and bin, over 10 s under ASan).
        constexpr int64_t STEP = 64;
        for (int64_t k0 = 0; k0 < p.out_len; k0 += STEP) {
            const int64_t k1 = std::min(p.out_len, k0 + STEP);
            double sr[STEP] = {}, si[STEP] = {};
            for (size_t j = 0; j < terms.size(); j++) {
                const int64_t t = terms[j];
                const double a0 = sign * two_pi * double((k0 * t) % p.n) / double(p.n);
                const double step = sign * two_pi * double(t % p.n) / double(p.n);
                const double dc = std::cos(step), ds = std::sin(step), r = re[j], i = im[j];
                double c = std::cos(a0), sn = std::sin(a0);
                for (int64_t k = k0; k < k1; k++) {
                    sr[k - k0] += r * c - i * sn;
                    si[k - k0] += r * sn + i * c;
                    const double nc = c * dc - sn * ds;
                    sn = c * ds + sn * dc;
                    c = nc;
                }
            }
            for (int64_t k = k0; k < k1; k++) {
                float* d = y + ((o * p.out_len + k) * p.inner + in) * p.cout;
                d[0] = float(p.inverse ? sr[k - k0] / double(p.n) : sr[k - k0]);
                if (p.cout == 2) d[1] = float(p.inverse ? si[k - k0] / double(p.n) : si[k - k0]);
            }
        }
    }
}

void stft_kernel(ggml_tensor* dst, int ith, int nth, void* ud) {
    const StftKernelParams& p = *static_cast<const StftKernelParams*>(ud);
    const float* x = static_cast<const float*>(dst->src[0]->data);
    const float* w = p.has_win ? static_cast<const float*>(dst->src[1]->data) : nullptr;
    float* y = static_cast<float*>(dst->data);
    WorkSpan s = work_span(p.B * p.frames, ith, nth);
    for (int64_t e = s.b; e < s.e; e++) {
        int64_t b = e / p.frames, f = e % p.frames;
        for (int64_t k = 0; k < p.bins; k++) {
            double sr = 0, si = 0;
            for (int64_t t = 0; t < p.flen; t++) {
                int64_t pos = f * p.step + t;
                if (pos >= p.Lsig) break;
                double wt = w ? double(w[t]) : 1.0;
                double xr = x[(b * p.Lsig + pos) * p.cin] * wt;
                double xi = p.cin == 2 ? x[(b * p.Lsig + pos) * p.cin + 1] * wt : 0.0;
                double ang = -2.0 * M_PI * double((k * t) % p.flen) / double(p.flen);
                double c = std::cos(ang), sn = std::sin(ang);
                sr += xr * c - xi * sn;
                si += xr * sn + xi * c;
            }
            float* d = y + ((b * p.frames + f) * p.bins + k) * 2;
            d[0] = float(sr);
            d[1] = float(si);
        }
    }
}

void window_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    const WindowKernelParams& p = *static_cast<const WindowKernelParams*>(ud);
    float* y = static_cast<float*>(dst->data);
    const double pi = 3.14159265358979323846;
    for (int64_t i = 0; i < p.n; i++) {
        double n = double(i), v;
        switch (p.k) {
            case WindowKind::Hann: v = std::sin(n * pi / p.denom), v = v * v; break;
            case WindowKind::Hamming: v = 25.0 / 46.0 - std::cos(n * pi * 2 / p.denom) * (1 - 25.0 / 46.0); break;
            default: v = std::cos(n * (pi * 2) / p.denom) * -0.5 + std::cos(n * (pi * 4) / p.denom) * 0.08 + 0.42;
        }
        y[i] = float(v);
    }
}

void mel_kernel(ggml_tensor* dst, int ith, int, void* ud) {
    if (ith != 0) return;
    const MelKernelParams& p = *static_cast<const MelKernelParams*>(ud);
    int64_t nspec = p.dft / 2 + 1;
    float* y = static_cast<float*>(dst->data);
    std::fill(y, y + nspec * p.bins, 0.0f);
    double lo_mel = 2595 * std::log10(1 + p.lo / 700), hi_mel = 2595 * std::log10(1 + p.hi / 700);
    double step = (hi_mel - lo_mel) / double(p.bins + 2);
    std::vector<int64_t> fb(static_cast<size_t>(p.bins + 2));
    for (int64_t i = 0; i < p.bins + 2; i++) {
        double hz = 700 * (std::pow(10.0, (double(i) * step + lo_mel) / 2595) - 1);
        // Clamped before the cast: a NaN or huge edge or rate from a file would be UB (found by tests/fuzz).
        const double b = std::floor(double(p.dft + 1) * hz / double(p.rate));
        fb[size_t(i)] = std::isfinite(b) ? int64_t(std::clamp(b, -1.0, double(nspec) + 1.0)) : -1;
    }
    auto set = [&](int64_t j, int64_t i, double v) {
        if (j >= 0 && j < nspec) y[j * p.bins + i] = float(v);
    };
    for (int64_t i = 0; i < p.bins; i++) {
        int64_t l = fb[size_t(i)], c = fb[size_t(i + 1)], h = fb[size_t(i + 2)];
        if (c == l) set(c, i, 1);
        else
            for (int64_t j = l; j <= c; j++) set(j, i, double(j - l) / double(c - l));
        for (int64_t j = c; j < h; j++) set(j, i, double(h - j) / double(h - c));
    }
}

}  // namespace o2g
