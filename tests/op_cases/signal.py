"""Signal processing: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix."""

from op_case import K, R, W, case

i64 = "int64"

# DFT (17: axis attribute; 20: axis input): real and complex input, inverse, onesided, dft_length, rank 5.
case("DFT", R(2, 8, 1))
case("DFT", R(3, 6, 2), inverse=1)
case("DFT", R(2, 5, 3, 1), axis=2, onesided=1)
case("DFT", R(2, 8, 2), K(10, i64), axis=1)  # zero-padded to 10
case("DFT", R(2, 8, 2), K(6, i64), axis=1)   # cut to 6
case("DFT", R(2, 5, 2), None, K(1, i64), inverse=1, onesided=1, opset=20)  # irfft: 8 real points
case("DFT", R(3, 2, 4, 1), None, K(-3, i64), opset=20)
case("DFT", R(4, 2, 3, 2, 2), axis=0, tol=2e-5)  # rank 5, axis among the folded dims
case("DFT", R(2, 4, 3, 2, 1), axis=1, tol=2e-5)
case("DFT", R(2, 8, 1), None, opset=20)  # no axis input: axis -2
# STFT (17): frames of a real signal with a window, without one, and two-sided (onnxruntime 1.2x returns garbage
# for complex signals, so none is checked here).
case("STFT", R(2, 64, 1), K(16, i64), W(32), K(32, i64))
case("STFT", R(1, 40, 1), K(8, i64), None, K(16, i64))
case("STFT", R(1, 40, 1), K(10, i64), W(16), None, onesided=0)
# Windows (17)
for _op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
    case(_op, K(10, i64))
    case(_op, K(7, "int32"), periodic=0)
    case(_op, K(12, i64), output_datatype=11)  # double
# MelWeightMatrix (17)
case("MelWeightMatrix", K(8, i64), K(64, i64), K(8000, i64), K(0.0), K(4000.0))
case("MelWeightMatrix", K(5, "int32"), K(33, "int32"), K(16000, "int32"), K(100.0), K(7000.0))
