// Op library, Signal processing: DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix.
// Included by onnx2ggml/ops.h; see its conventions.
//
// Signals are F32 with a last ONNX dim (ggml dim 0) of 1 (real) or 2 (complex); the transforms are direct sums
// in double, as ggml custom CPU kernels.
#pragma once

namespace o2g {

struct DFTParams {
    int axis = 1;  // ggml dim transformed (not 0, the complex dim)
    bool inverse = false, onesided = false;
    void fields(FieldWriter& f) const {
        f("axis", axis);
        f("inverse", inverse);
        f("onesided", onesided);
    }
};
// DFT of x along p.axis, zero-padded or cut to dft_length (empty: the axis' size, or 2 * (size - 1) for an
// inverse onesided transform). Complex output [2, ...] (onesided: n/2+1 bins); inverse onesided gives real [1, ...].
ggml_tensor* dft(Ctx& ctx, ggml_tensor* x, const Ints& dft_length, const DFTParams& p);

struct STFTParams {
    bool onesided = true;
    void fields(FieldWriter& f) const { f("onesided", onesided); }
};
// STFT of signal [1 or 2, length, batch] with hop frame_step, window [frame_length] (may be null) and
// frame_length (empty: the window's length, else the signal's) -> [2, bins, frames, batch].
ggml_tensor* stft(Ctx& ctx, ggml_tensor* signal, const Ints& frame_step, ggml_tensor* window, const Ints& frame_length,
                  const STFTParams& p);

struct WindowParams {
    bool periodic = true;
    void fields(FieldWriter& f) const { f("periodic", periodic); }
};
// Hann, Hamming and Blackman windows of `size` points, F32 [size].
ggml_tensor* hann_window(Ctx& ctx, const Ints& size, const WindowParams& p);
ggml_tensor* hamming_window(Ctx& ctx, const Ints& size, const WindowParams& p);
ggml_tensor* blackman_window(Ctx& ctx, const Ints& size, const WindowParams& p);

struct MelWeightMatrixParams {
    float lower_edge_hertz = 0, upper_edge_hertz = 0;
    void fields(FieldWriter& f) const {
        f("lower_edge_hertz", lower_edge_hertz);
        f("upper_edge_hertz", upper_edge_hertz);
    }
};
// MelWeightMatrix: triangular mel filters, F32 [num_mel_bins, dft_length / 2 + 1].
ggml_tensor* mel_weight_matrix(Ctx& ctx, const Ints& num_mel_bins, const Ints& dft_length, const Ints& sample_rate,
                               const MelWeightMatrixParams& p);

}  // namespace o2g
