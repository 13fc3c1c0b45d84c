#!/usr/bin/env bash
# Cross-builds the onnx2ggml CLI for Windows x86-64 (ggml included, one static .exe) with Debian's mingw-w64 into
# build-windows/, then runs the op, model and malformed-input tests with the .exe under wine (docs/platforms.md).
#   scripts/cross_windows.sh               build, then every op, model and malformed-input test under wine
#   scripts/cross_windows.sh --build-only  build only
# Needs: apt install g++-mingw-w64-x86-64-posix gcc-mingw-w64-x86-64-posix wine64; scripts/setup.sh (ggml sources
# in .deps/ggml, the test venv). Extra CMake arguments go in CROSS_CMAKE_ARGS. JOBS sets the build's -j (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE="${1:-ci}"
B=build-windows
EXTRA=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$PWD")}"
  EXTRA+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
# ggml from source, portable: AVX2/FMA/F16C, no -march=native (the .exe must run on other machines), no OpenMP
# (ggml's own thread pool; no libgomp DLL to ship). _WIN32_WINNT=0x0601 for ggml's C files only: Debian's mingw
# headers lack THREAD_POWER_THROTTLING_STATE, which ggml-cpu.c uses from 0x0602 on (it only opts threads out of
# Windows 11's power throttling). Our own kernels are built for x86-64-v2, v3 and v4 and picked at run time.
# shellcheck disable=SC2086
cmake -S . -B "$B" -DCMAKE_TOOLCHAIN_FILE=cmake/mingw-w64-x86_64.cmake -DCMAKE_BUILD_TYPE=Release \
  -DGGML_SOURCE_DIR="$PWD/.deps/ggml" -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
  -DGGML_OPENMP=OFF -DCMAKE_C_FLAGS="-D_WIN32_WINNT=0x0601" \
  -DONNX2GGML_TESTS=OFF -DONNX2GGML_UNITY=ON "${EXTRA[@]}" ${CROSS_CMAKE_ARGS:-} >/dev/null
cmake --build "$B" -j"${JOBS:-2}" --target onnx2ggml_cli
EXE="$PWD/$B/onnx2ggml.exe"
echo "built $EXE"
[ "$MODE" = "--build-only" ] && exit 0

# A wine prefix of our own (the first start makes it, ~10 s; 700 MB, removed at the end), and no wine debug
# chatter in the tests' stderr.
OWN_PREFIX=0
[ -n "${WINEPREFIX:-}" ] || { OWN_PREFIX=1; WINEPREFIX=$(mktemp -d /tmp/onnx2ggml-wine.XXXXXX); }
export WINEPREFIX WINEDEBUG=-all ONNX2GGML_CLI_WRAPPER="${ONNX2GGML_CLI_WRAPPER:-wine}"
export LANG="${LANG:-C.UTF-8}"  # wine turns argv into UTF-16 by the locale: non-ASCII paths need UTF-8
# A wineserver (and wine's helper processes) started by a test's run would inherit that run's stdout and stderr
# pipes, and the driver would wait for their EOF until the server exits: 3 s per run, or a timeout while other runs
# keep it alive. So one is started here first, detached, staying 30 s after the last run.
wineserver -p30 </dev/null >/dev/null 2>&1
wine "$EXE" ops </dev/null >/dev/null 2>&1
PY=.venv/bin/python
# Every op test, every model test with the external-data models (.onnx and data file) regenerated under a
# non-ASCII folder (UTF-8 paths through the wide-character Windows APIs), and the hostile inputs. About a minute.
DATA="$PWD/$B/模型-ü"
rc=0  # every suite runs; the exit status says whether any failed
$PY tests/op_tests.py --cli "$EXE" -j 2 -q || rc=1
$PY tests/model_tests.py --cli "$EXE" --threads 2 --data-dir "$DATA" || rc=1
$PY tests/malformed_tests.py --cli "$EXE" || rc=1
[ $OWN_PREFIX = 0 ] || { wineserver -k 2>/dev/null || true; rm -rf "$WINEPREFIX"; }
exit $rc
