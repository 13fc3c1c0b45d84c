// Op library: signal processing (see include/onnx2ggml/ops/signal.h).
#include <string>
#include <vector>

#include "kernels/custom.h"
#include "kernels/signal.h"

namespace o2g {

namespace {

// The one element of a host scalar, checked positive.
int64_t positive(const Ints& v, const char* what) {
    if (v.size() != 1 || v[0] <= 0) throw OpError(std::string(what) + " must be a positive scalar");
    return v[0];
}

ggml_tensor* window(Ctx& ctx, WindowKind k, const Ints& size, bool periodic) {
    if (size.size() != 1) throw OpError("size must be a scalar");
    int64_t n = size[0];
    if (n <= 0) throw OpError("size " + std::to_string(n) + " must be positive (an empty window cannot be held by ggml)");
    constexpr int64_t kMaxWindow = int64_t(1) << 24;  // 16M samples: beyond any real frame, and seconds of sin()
    if (n > kMaxWindow) throw OpError("size " + std::to_string(n) + " is over the " + std::to_string(kMaxWindow) + " samples a window may have");
    WindowKernelParams p{k, n, double(periodic ? n : n - 1)};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, n, 1, 1, 1, nullptr, 0, window_kernel, 1, keep_params(p));
}

}  // namespace

ggml_tensor* dft(Ctx& ctx, ggml_tensor* x, const Ints& dft_length, const DFTParams& p) {
    x = f32_cont(ctx, x);
    int g = p.axis;
    if (g < 1 || g > 3) throw OpError("axis " + std::to_string(g) + " must be a ggml dim from 1 to 3 (dim 0 is complex)");
    if (x->ne[0] != 1 && x->ne[0] != 2) throw OpError("ne[0] = " + std::to_string(x->ne[0]) + " must be 1 (real) or 2 (complex)");
    DftKernelParams k{};
    k.inverse = p.inverse;
    k.onesided = p.onesided;
    k.cin = x->ne[0];
    k.inner = 1;
    for (int i = 1; i < g; i++) k.inner *= x->ne[i];
    k.A = x->ne[g];
    k.outer = 1;
    for (int i = g + 1; i < 4; i++) k.outer *= x->ne[i];
    k.n = !dft_length.empty() ? positive(dft_length, "dft_length") : p.inverse && p.onesided ? 2 * (k.A - 1) : k.A;
    if (k.n <= 0) throw OpError("dft length " + std::to_string(k.n) + " must be positive");
    // Beyond any real signal, and its output size would overflow (found by tests/fuzz: ggml asserted).
    if (k.n > (int64_t(1) << 24)) throw OpError("dft length " + std::to_string(k.n) + " is above 2^24");
    if (p.inverse && p.onesided) {
        k.out_len = k.n;
        k.cout = 1;
    } else {
        k.out_len = p.onesided ? k.n / 2 + 1 : k.n;
        k.cout = 2;
    }
    int64_t ne[4] = {k.cout, x->ne[1], x->ne[2], x->ne[3]};
    ne[g] = k.out_len;
    ggml_tensor* args[1] = {x};
    return ggml_custom_4d(ctx, GGML_TYPE_F32, ne[0], ne[1], ne[2], ne[3], args, 1, dft_kernel, GGML_N_TASKS_MAX,
                          keep_params(k));
}

ggml_tensor* stft(Ctx& ctx, ggml_tensor* signal, const Ints& frame_step, ggml_tensor* window, const Ints& frame_length,
                  const STFTParams& p) {
    signal = f32_cont(ctx, signal);
    StftKernelParams k{};
    k.cin = signal->ne[0];
    k.Lsig = signal->ne[1];
    k.B = signal->ne[2];
    if ((k.cin != 1 && k.cin != 2) || signal->ne[3] != 1) throw OpError("signal must be [1 or 2, length, batch]");
    k.step = positive(frame_step, "frame_step");
    k.has_win = window != nullptr;
    if (!frame_length.empty()) k.flen = positive(frame_length, "frame_length");
    else k.flen = window ? window->ne[0] : k.Lsig;
    if (window && (ggml_nelements(window) != k.flen || window->ne[0] != k.flen))
        throw OpError("window must have frame_length (" + std::to_string(k.flen) + ") elements");
    if (k.flen > k.Lsig) throw OpError("frame_length " + std::to_string(k.flen) + " exceeds the signal length " + std::to_string(k.Lsig));
    if (p.onesided && k.cin == 2) throw OpError("onesided output needs a real signal");
    k.frames = 1 + (k.Lsig - k.flen) / k.step;
    k.bins = p.onesided ? k.flen / 2 + 1 : k.flen;
    std::vector<ggml_tensor*> args = {signal};
    if (window) args.push_back(f32_cont(ctx, window));
    return ggml_custom_4d(ctx, GGML_TYPE_F32, 2, k.bins, k.frames, k.B, args.data(), int(args.size()), stft_kernel,
                          GGML_N_TASKS_MAX, keep_params(k));
}

ggml_tensor* hann_window(Ctx& ctx, const Ints& size, const WindowParams& p) {
    return window(ctx, WindowKind::Hann, size, p.periodic);
}
ggml_tensor* hamming_window(Ctx& ctx, const Ints& size, const WindowParams& p) {
    return window(ctx, WindowKind::Hamming, size, p.periodic);
}
ggml_tensor* blackman_window(Ctx& ctx, const Ints& size, const WindowParams& p) {
    return window(ctx, WindowKind::Blackman, size, p.periodic);
}

ggml_tensor* mel_weight_matrix(Ctx& ctx, const Ints& num_mel_bins, const Ints& dft_length, const Ints& sample_rate,
                               const MelWeightMatrixParams& p) {
    if (num_mel_bins.size() != 1 || dft_length.size() != 1 || sample_rate.size() != 1)
        throw OpError("num_mel_bins, dft_length and sample_rate must be scalars");
    MelKernelParams k{num_mel_bins[0], dft_length[0], sample_rate[0], double(p.lower_edge_hertz),
                      double(p.upper_edge_hertz)};
    if (k.bins < 1 || k.dft < 1 || k.rate < 1) throw OpError("num_mel_bins, dft_length and sample_rate must be positive");
    return ggml_custom_4d(ctx, GGML_TYPE_F32, k.bins, k.dft / 2 + 1, 1, 1, nullptr, 0, mel_kernel, 1, keep_params(k));
}

}  // namespace o2g
