#!/usr/bin/env bash
# Builds everything and runs the bundled example model, comparing with the stored onnxruntime output.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
out=$(mktemp -d)
build/onnx2ggml info examples/small_cnn.onnx
build/onnx2ggml run examples/small_cnn.onnx --input image=examples/small_cnn_input.npy --output-dir "$out" --threads 2
.venv/bin/python - "$out/probs.npy" examples/small_cnn_ref.npy <<'PY'
import sys, numpy as np
got, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
err = float(np.abs(got.astype(np.float64) - ref).max())
rel = err / float(np.abs(ref).max())
np.set_printoptions(precision=6, suppress=True)
print("probs (onnx2ggml):  ", got.ravel())
print("probs (onnxruntime):", ref.ravel())
print(f"max abs error {err:.3e}, max relative error {rel:.3e} (bar 1e-4)")
sys.exit(0 if rel <= 1e-4 else 1)
PY
