// CPU kernels of the signal ops: direct DFT sums in double, windows and mel filters (ggml custom ops).
#pragma once
#include "onnx2ggml/ops.h"

namespace o2g {

// DFT along A of src 0 [outer, A, inner, cin] (row-major; cin 1 real or 2 complex) -> [outer, out_len, inner, cout].
struct DftKernelParams {
    int64_t outer, A, inner, cin, n, out_len, cout;
    bool inverse, onesided;
};
void dft_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// STFT of src 0 [B, Lsig, cin] with window src 1 [flen] (when has_win) -> [B, frames, bins, 2].
struct StftKernelParams { int64_t B, Lsig, cin, frames, step, flen, bins; bool has_win; };
void stft_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

enum class WindowKind { Hann, Hamming, Blackman };
struct WindowKernelParams { WindowKind k; int64_t n; double denom; };
void window_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

// Mel filters -> [dft / 2 + 1, bins] (row-major).
struct MelKernelParams { int64_t bins, dft, rate; double lo, hi; };
void mel_kernel(ggml_tensor* dst, int ith, int nth, void* ud);

}  // namespace o2g
