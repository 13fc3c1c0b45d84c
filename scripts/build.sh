#!/usr/bin/env bash
# Configures and builds onnx2ggml (Release, native CPU flags) into build/ against the ggml package that
# scripts/setup.sh installs, then installs the op library into build/install (what generated programs use).
# Extra arguments go to CMake. To build ggml from source with other backends instead:
#   scripts/build.sh -DGGML_SOURCE_DIR=$PWD/.deps/ggml -DGGML_CUDA=ON
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/.deps/ggml-install" "$@" >/dev/null
cmake --build build -j"$(nproc)"
cmake --install build --prefix "$PWD/build/install" >/dev/null
