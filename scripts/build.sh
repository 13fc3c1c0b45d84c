#!/usr/bin/env bash
# Configures and builds onnx2ggml (Release, native CPU flags) into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$(nproc)"
