// Op library, Signal processing: DFT, STFT, Hann/Hamming/Blackman windows, MelWeightMatrix.
// Included by onnx2ggml/ops.h; see its conventions.
#pragma once

namespace o2g {

}  // namespace o2g
