#!/usr/bin/env bash
# Cross-builds the CLI for 64-bit ARM Linux (ggml from .deps/ggml as static libraries, no native flags) into build-arm64/,
# then runs the op and model tests with that binary under QEMU user-mode emulation (all of them: about 3.5 minutes
# on 2 cores); the onnxruntime references run natively. Needs g++-aarch64-linux-gnu and qemu-user (docs/platforms.md).
#   scripts/cross_arm64.sh [--build-only | --test-only] [extra CMake arguments]
# Environment: ARM64_MARCH (default armv8.2-a+fp16+dotprod; armv8-a for a Raspberry Pi 4), JOBS (default nproc),
# ARM64_OP_FILTER / ARM64_MODEL_FILTER (the test subset, regexes as tests/op_tests.py and model_tests.py take).
set -euo pipefail
cd "$(dirname "$0")/.."
B=build-arm64 MODE=all
case "${1:-}" in --build-only | --test-only) MODE=${1#--}; shift ;; esac
MARCH=${ARM64_MARCH:-armv8.2-a+fp16+dotprod}
SYSROOT=/usr/aarch64-linux-gnu
# qemu-user's emulator with the cross compiler's sysroot (qemu-user-static's does the same, and is taken if it is the
# one installed).
QEMU=$(command -v qemu-aarch64 || command -v qemu-aarch64-static || true)
export ONNX2GGML_CLI_WRAPPER="${QEMU:-qemu-aarch64} -L $SYSROOT"
for tool in aarch64-linux-gnu-g++ "${QEMU:-qemu-aarch64}"; do
  command -v $tool >/dev/null || { echo "$tool not found: apt-get install g++-aarch64-linux-gnu qemu-user" >&2; exit 2; }
done

if [ "$MODE" != test-only ]; then
  EXTRA=()
  if command -v ccache >/dev/null; then  # objects shared with other build folders and worktrees
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$PWD")}"
    EXTRA+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # One -march for ggml and our kernels alike: ONNX2GGML_NATIVE=OFF leaves the kernels at the global flags.
  cmake -S . -B "$B" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_SOURCE_DIR="$PWD/.deps/ggml" \
    -DCMAKE_C_FLAGS="-march=$MARCH" -DCMAKE_CXX_FLAGS="-march=$MARCH" \
    -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH="$MARCH" -DGGML_OPENMP=ON \
    -DONNX2GGML_NATIVE=OFF -DONNX2GGML_TESTS=OFF -DONNX2GGML_UNITY=ON "${EXTRA[@]}" "$@" >/dev/null
  cmake --build "$B" -j"${JOBS:-$(nproc)}" --target onnx2ggml_cli
  ! command -v file >/dev/null || file "$B/onnx2ggml" | cut -d, -f1-2
fi
[ "$MODE" = build-only ] && exit 0

PY=.venv/bin/python
$ONNX2GGML_CLI_WRAPPER "$B/onnx2ggml" info examples/small_cnn.onnx >/dev/null  # the binary starts at all
status=0
t0=$SECONDS
$PY tests/op_tests.py --cli "$B/onnx2ggml" -j "${JOBS:-$(nproc)}" -q --timeout 300 \
  --filter "${ARM64_OP_FILTER:-.*}" || status=1
echo "op tests under qemu: $((SECONDS - t0)) s"
t0=$SECONDS
$PY tests/model_tests.py --cli "$B/onnx2ggml" --threads 2 --timeout 900 \
  --filter "${ARM64_MODEL_FILTER:-.}" || status=1
echo "model tests under qemu: $((SECONDS - t0)) s"
exit $status
