#!/usr/bin/env bash
# CUDA compile check (not part of CI): compiles a generated project against ggml built with GGML_CUDA=ON
# for one GPU architecture and reports how long it took and whether it linked. Nothing is run on a GPU.
# Usage: scripts/cuda_compile_check.sh [ARCH]   (default 90, Hopper)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
command -v nvcc >/dev/null || { echo "nvcc not found"; exit 1; }
scripts/build.sh >/dev/null
dir=build-cuda-check
rm -rf "$dir" && mkdir -p "$dir"
build/onnx2ggml compile tests/models/vae_decoder_like.onnx -o "$dir/project"
start=$(date +%s)
cmake -S "$dir/project" -B "$dir/project/build" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$dir/configure.log" 2>&1
if cmake --build "$dir/project/build" -j"$(nproc)" >"$dir/build.log" 2>&1; then result=linked; else result=FAILED; fi
end=$(date +%s)
echo "nvcc: $(nvcc --version | tail -1)"
echo "CUDA compile check (sm_$arch): $result in $((end - start)) s; log: $dir/build.log"
ls -la "$dir/project/build/vae_decoder_like" 2>/dev/null || true
[ "$result" = linked ]
