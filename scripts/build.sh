#!/usr/bin/env bash
# Configures and builds onnx2ggml (Release, native CPU flags) into build/ against the ggml package that
# scripts/setup.sh installs, then installs the op library into build/install (what generated programs use).
# Extra arguments go to CMake. To build ggml from source with other backends instead:
#   scripts/build.sh -DGGML_SOURCE_DIR=$PWD/.deps/ggml -DGGML_CUDA=ON
# scripts/build.sh --vulkan builds build-vulkan/ against the Vulkan ggml of `scripts/setup.sh --with-vulkan`.
set -euo pipefail
cd "$(dirname "$0")/.."
B=build GGML="$PWD/.deps/ggml-install" EXTRA=()
if [ "${1:-}" = "--vulkan" ]; then
  shift
  B=build-vulkan GGML="$PWD/.deps/ggml-vulkan-install"
  EXTRA=(-DVulkan_INCLUDE_DIR="$PWD/.deps/vulkan/usr/include"
         -DVulkan_LIBRARY="$(ldconfig -p | awk '/libvulkan.so.1 / && !p {p=$NF} END {print p}')")
  GGML="$GGML;$PWD/.deps/vulkan/usr"
fi
# ccache (when installed) shares objects between build folders and git worktrees of this repository.
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$PWD")}"
  EXTRA+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$GGML" "${EXTRA[@]}" "$@" >/dev/null
cmake --build "$B" -j"$(nproc)"
cmake --install "$B" --prefix "$PWD/$B/install" >/dev/null
